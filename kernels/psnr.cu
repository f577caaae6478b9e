// Integer PSNR: the sum of squared errors of each plane (Y, Cb, Cr), accumulated as libvmaf
// does. At 8 bits a row's sum is kept modulo 2^32 (libvmaf's uint32_t row accumulator) and
// the rows are added in 64 bits; above 8 bits every square is added in 64 bits. Both are
// integer sums modulo a power of two, so the result does not depend on the order of the
// additions. The host turns each sum into dB (crate::cpu::psnr::psnr_from_sse).
//
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_psnr.c; host side and oracle:
// src/features/psnr/{cuda,cpu}.rs.

#include "common.cuh"

using namespace vmafcmp;

namespace psnr_detail {

// The planes of one frame pair: [0] luma, [1] Cb, [2] Cr; `width[i]` x `height[i]` samples.
// Host side: `PsnrPlanes` in src/features/psnr/cuda.rs (same layout, 216 bytes).
struct PsnrPlanes {
    Plane reference[3];
    Plane distorted[3];
    int32_t width[3];
    int32_t height[3];
};
static_assert(sizeof(PsnrPlanes) == 216, "PsnrPlanes layout");

}  // namespace psnr_detail

using namespace psnr_detail;

// Per-block sums of squared errors: block (bx, p) of plane p sums rows bx * 8 .. bx * 8 + 7
// (warp `threadIdx.y` owns one row, its lanes stride along it) and writes the block's sum to
// `partial[p * gridDim.x + bx]` (every block writes its word, so no zeroing is needed).
// Launch: grid ceil(max rows / 8) x planes (1 or 3), blocks of 32 x 8 threads.
// `narrow` != 0: 8-bit arithmetic (per-row sum modulo 2^32).
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
psnr_sse_rows(const __grid_constant__ PsnrPlanes planes, int32_t narrow,
              unsigned long long *__restrict__ partial) {
    __shared__ uint64_t warp_sums[BLOCK_Y];
    const int p = blockIdx.y;
    const int w = planes.width[p];
    const int h = planes.height[p];
    const int y = blockIdx.x * BLOCK_Y + threadIdx.y;
    uint64_t s = 0;
    // `y < h` is the same for the whole warp, as the shuffles need.
    if (y < h) {
        const Plane r = planes.reference[p];
        const Plane d = planes.distorted[p];
        if (narrow) {
            uint32_t row = 0;
            for (int x = threadIdx.x; x < w; x += BLOCK_X) {
                const uint32_t e = sample(r, x, y) - sample(d, x, y);
                row += e * e;  // (a - b)^2 modulo 2^32, as libvmaf's int32 product
            }
            s = warp_sum_u32(row);
        } else {
            for (int x = threadIdx.x; x < w; x += BLOCK_X) {
                const uint32_t a = sample(r, x, y);
                const uint32_t b = sample(d, x, y);
                const uint64_t e = a > b ? a - b : b - a;
                s += e * e;
            }
            s = warp_sum_u64(s);
        }
    }
    if (threadIdx.x == 0) {
        warp_sums[threadIdx.y] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        uint64_t t = 0;
#pragma unroll
        for (int i = 0; i < BLOCK_Y; ++i) {
            t += warp_sums[i];
        }
        partial[p * gridDim.x + blockIdx.x] = t;
    }
}

// `out[p]` = sum of the `blocks` partial sums of plane p for p < `planes`, 0 for the other
// planes up to 3 (all three words are written every frame).
// Launch: one block of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
psnr_sse_total(const unsigned long long *__restrict__ partial, int32_t blocks, int32_t planes,
               unsigned long long *__restrict__ out) {
    __shared__ uint64_t scratch[3 * (BLOCK_THREADS / 32)];
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
    uint64_t v[3];
#pragma unroll
    for (int p = 0; p < 3; ++p) {
        uint64_t s = 0;
        if (p < planes) {
            for (int i = tid; i < blocks; i += BLOCK_THREADS) {
                s += partial[p * blocks + i];
            }
        }
        v[p] = warp_sum_u64(s);
    }
    if ((tid & 31) == 0) {
#pragma unroll
        for (int p = 0; p < 3; ++p) {
            scratch[(tid >> 5) * 3 + p] = v[p];
        }
    }
    __syncthreads();
    if (tid < 3) {
        uint64_t t = 0;
        for (int wi = 0; wi < BLOCK_THREADS / 32; ++wi) {
            t += scratch[wi * 3 + tid];
        }
        out[tid] = t;
    }
}
