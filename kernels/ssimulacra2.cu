// Placeholder: replaced by the ssimulacra2 kernels (issue 8).
#include "common.cuh"

extern "C" __global__ void ssimulacra2_placeholder() {}
