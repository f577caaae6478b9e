//! Host side of `kernels/ssim.cu` (issue 8, in progress).
