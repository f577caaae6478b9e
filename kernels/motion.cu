// Integer motion: sum over the frame of |blur(prev - cur)|, the blur being libvmaf's 5-tap
// Q16 filter applied vertically (rounded to Q8 for 8-bit, Q(bpc) otherwise) then
// horizontally (Q16), mirrored borders. The sum is kept per row modulo 2^32 (libvmaf's
// uint32_t row accumulator), then over rows in 64 bits.
//
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_motion.c
// (motion_score_pipeline_8/16); host side and oracle: src/features/motion/{cuda,cpu}.rs.

#include "common.cuh"

using namespace vmafcmp;

namespace motion_detail {

constexpr int TW = 64;  // output columns per block (2 per thread)
constexpr int TH = 16;  // output rows per block (2 per thread)
constexpr int R = 2;    // filter radius

__constant__ int32_t MOTION_FILTER[5] = {3571, 16004, 26386, 16004, 3571};

}  // namespace motion_detail

using namespace motion_detail;

// Per-row sums of |blur(prev - cur)| added (modulo 2^32) to `row_sums[y]`.
// `prev`, `cur`: planes of `w * h` samples (see Plane). Grid: ceil(w / 64) x ceil(h / 16)
// blocks of 32 x 8 threads. `row_sums` (h words) must be zero before the launch.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
motion_rows(const Plane prev, const Plane cur, int32_t w, int32_t h, int32_t round,
            int32_t shift, uint32_t *__restrict__ row_sums) {
    __shared__ int32_t diff[TH + 2 * R][TW + 2 * R];
    __shared__ int32_t vert[TH][TW + 2 * R];
    const int x0 = blockIdx.x * TW;
    const int y0 = blockIdx.y * TH;
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;

    for (int i = tid; i < (TH + 2 * R) * (TW + 2 * R); i += BLOCK_THREADS) {
        const int r = i / (TW + 2 * R);
        const int c = i % (TW + 2 * R);
        const int gy = reflect(y0 - R + r, h);
        const int gx = reflect(x0 - R + c, w);
        diff[r][c] = (int32_t)sample(prev, gx, gy) - (int32_t)sample(cur, gx, gy);
    }
    __syncthreads();
    for (int i = tid; i < TH * (TW + 2 * R); i += BLOCK_THREADS) {
        const int r = i / (TW + 2 * R);
        const int c = i % (TW + 2 * R);
        int64_t acc = 0;
#pragma unroll
        for (int k = 0; k < 5; ++k) {
            acc += (int64_t)MOTION_FILTER[k] * diff[r + k][c];
        }
        vert[r][c] = (int32_t)((acc + round) >> shift);
    }
    __syncthreads();
    // Warp `threadIdx.y` owns rows threadIdx.y and threadIdx.y + 8 of the tile.
#pragma unroll
    for (int rr = 0; rr < TH / BLOCK_Y; ++rr) {
        const int r = threadIdx.y + rr * BLOCK_Y;
        const int gy = y0 + r;
        uint32_t s = 0;
#pragma unroll
        for (int cc = 0; cc < TW / BLOCK_X; ++cc) {
            const int c = threadIdx.x + cc * BLOCK_X;
            if (x0 + c < w) {
                int64_t acc = 0;
#pragma unroll
                for (int k = 0; k < 5; ++k) {
                    acc += (int64_t)MOTION_FILTER[k] * vert[r][c + k];
                }
                const int32_t v = (int32_t)((acc + (1 << 15)) >> 16);
                s += v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
            }
        }
        s = warp_sum_u32(s);
        if (threadIdx.x == 0 && gy < h) {
            atomicAdd(row_sums + gy, s);
        }
    }
}

// `out[0]` = sum over `h` rows of `row_sums`, in 64 bits. One block of 256 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
motion_total(const uint32_t *__restrict__ row_sums, int32_t h, unsigned long long *out) {
    __shared__ uint64_t scratch[BLOCK_THREADS / 32];
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    uint64_t s = 0;
    for (int y = tid; y < h; y += blockDim.x * blockDim.y) {
        s += row_sums[y];
    }
    s = warp_sum_u64(s);
    if ((tid & 31) == 0) {
        scratch[tid >> 5] = s;
    }
    __syncthreads();
    if (tid == 0) {
        uint64_t t = 0;
        for (int i = 0; i < (int)((blockDim.x * blockDim.y + 31) / 32); ++i) {
            t += scratch[i];
        }
        out[0] = t;
    }
}

// Copies the plane `src` (`w * h` samples, see Plane) into `dst` as packed 16-bit samples,
// the values every kernel reads from it: the reference history of the five-frame (HFR) motion,
// read two frames later as a plane of 2-byte samples with no shifts. Grid: ceil(w / 32) x
// ceil(h / 8) blocks of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
motion_keep(const Plane src, int32_t w, int32_t h, uint16_t *__restrict__ dst) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        dst[(int64_t)y * w + x] = (uint16_t)sample(src, x, y);
    }
}
