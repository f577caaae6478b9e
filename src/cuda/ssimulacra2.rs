//! Host side of `kernels/ssimulacra2.cu` (issue 8, in progress).
