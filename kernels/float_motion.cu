// Float motion: libvmaf's `float_motion` score, the mean over the plane of
// |blur(prev) - blur(cur)|, both reference planes as float levels (`sample * scale - 128`)
// blurred with libvmaf's 5-tap (or 3-tap) filter, mirrored borders. Every per-pixel value is
// computed with explicitly rounded float operations in the CPU half's order (no FMAs), so it
// is the CPU's value bit for bit; the sum is taken per block in double and the blocks added
// in a fixed order (libvmaf adds float row sums).
//
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_motion.c, motion.c,
// common/convolution_avx.c; host side and oracle: src/features/float_motion/{cuda,cpu}.rs.

#include "common.cuh"

using namespace vmafcmp;

namespace fmotion {

constexpr int TW = 32;  // output columns per block
constexpr int TH = 16;  // output rows per block (2 per thread)
constexpr int RMAX = 2;

// The blur taps (1, 3 or 5; one tap of 1 leaves the plane unfiltered).
struct Taps {
    float f[5];
    int32_t n;
};

__device__ __forceinline__ float level(const Plane &p, float scale, int x, int y) {
    return __fadd_rn(__fmul_rn((float)sample(p, x, y), scale), -128.0f);
}

}  // namespace fmotion

using namespace fmotion;

// Per block, the sum over its pixels of |blur(prev) - blur(cur)| in double into
// `partial[block]`. Grid: ceil(w / 32) x ceil(h / 16) blocks of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
fmotion_sad(const Plane prev, const Plane cur, int32_t w, int32_t h, float scale,
            const Taps taps, double *__restrict__ partial) {
    constexpr int SW = TW + 2 * RMAX;
    constexpr int SH = TH + 2 * RMAX;
    __shared__ float sa[SH * SW];
    __shared__ float sb[SH * SW];
    __shared__ float va[TH * SW];
    __shared__ float vb[TH * SW];
    __shared__ double red[BLOCK_THREADS / 32];
    // The taps, padded to 8 with zeros: the compiler may read them three at a time
    // (compute-sanitizer saw a 12-byte read at tf[4] with five entries).
    __shared__ float tf[8];
    const int r = taps.n / 2;
    const int sw = TW + 2 * r;
    const int sh = TH + 2 * r;
    const int x0 = blockIdx.x * TW;
    const int y0 = blockIdx.y * TH;
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;

    if (tid < 8) {
        tf[tid] = (tid < taps.n && tid < 5) ? taps.f[tid] : 0.0f;
    }
    for (int i = tid; i < sh * sw; i += BLOCK_THREADS) {
        const int rr = i / sw;
        const int cc = i % sw;
        const int gy = reflect(y0 - r + rr, h);
        const int gx = reflect(x0 - r + cc, w);
        sa[i] = level(prev, scale, gx, gy);
        sb[i] = level(cur, scale, gx, gy);
    }
    __syncthreads();
    for (int i = tid; i < TH * sw; i += BLOCK_THREADS) {
        const int rr = i / sw;
        const int cc = i % sw;
        float a = 0.0f, b = 0.0f;
        for (int k = 0; k < taps.n; ++k) {
            a = __fadd_rn(a, __fmul_rn(tf[k], sa[(rr + k) * sw + cc]));
            b = __fadd_rn(b, __fmul_rn(tf[k], sb[(rr + k) * sw + cc]));
        }
        va[i] = a;
        vb[i] = b;
    }
    __syncthreads();
    double s = 0.0;
#pragma unroll
    for (int j = 0; j < TH / BLOCK_Y; ++j) {
        const int rr = threadIdx.y + j * BLOCK_Y;
        const int cc = threadIdx.x;
        if (x0 + cc < w && y0 + rr < h) {
            float a = 0.0f, b = 0.0f;
            for (int k = 0; k < taps.n; ++k) {
                a = __fadd_rn(a, __fmul_rn(tf[k], va[rr * sw + cc + k]));
                b = __fadd_rn(b, __fmul_rn(tf[k], vb[rr * sw + cc + k]));
            }
            s += (double)fabsf(__fsub_rn(a, b));
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        s += __shfl_down_sync(0xffffffffu, s, off);
    }
    if ((tid & 31) == 0) {
        red[tid >> 5] = s;
    }
    __syncthreads();
    if (tid == 0) {
        double t = 0.0;
        for (int i = 0; i < BLOCK_THREADS / 32; ++i) {
            t += red[i];
        }
        partial[blockIdx.y * gridDim.x + blockIdx.x] = t;
    }
}

// `out[0]` = the sum of the `blocks` partials in a fixed order, as double bits. One block of
// 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
fmotion_total(const double *__restrict__ partial, int32_t blocks,
              unsigned long long *__restrict__ out) {
    __shared__ double red[BLOCK_THREADS / 32];
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
    double v = 0.0;
    for (int b = tid; b < blocks; b += BLOCK_THREADS) {
        v += partial[b];
    }
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, off);
    }
    if ((tid & 31) == 0) {
        red[tid >> 5] = v;
    }
    __syncthreads();
    if (tid == 0) {
        double t = 0.0;
        for (int i = 0; i < BLOCK_THREADS / 32; ++i) {
            t += red[i];
        }
        out[0] = (unsigned long long)__double_as_longlong(t);
    }
}
