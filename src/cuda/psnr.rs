//! Host side of `kernels/psnr.cu` (issue 8, in progress).
