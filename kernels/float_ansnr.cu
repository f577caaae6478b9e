// libvmaf's float ANSNR: both frames as f32 on the 8-bit scale minus 128, the reference
// through a 3x3 filter, the distorted frame through a 5x5 one (borders mirrored: -1 -> 1,
// n -> n - 1), then sig = sum of the squared filtered reference and noise = sum of the squared
// differences, in f32. Every operation is libvmaf's, in its order and rounded as it is (no
// fused multiply-adds: __fmul_rn / __fadd_rn), and each row is summed left to right, the rows
// top to bottom, so the sums equal the CPU's bit for bit.
//
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/ansnr.c, ansnr_tools.c; host side and
// oracle: src/features/float_ansnr/{cuda,cpu}.rs.

#include "common.cuh"

using namespace vmafcmp;

namespace float_ansnr_detail {

// The filters as libvmaf's tables: k / 16 and k / 571 in double, rounded to float.
__constant__ float REF_FILTER[9] = {
    (float)(1.0 / 16.0), (float)(2.0 / 16.0), (float)(1.0 / 16.0),
    (float)(2.0 / 16.0), (float)(4.0 / 16.0), (float)(2.0 / 16.0),
    (float)(1.0 / 16.0), (float)(2.0 / 16.0), (float)(1.0 / 16.0),
};
__constant__ float DIS_FILTER[25] = {
    (float)(2.0 / 571.0),  (float)(7.0 / 571.0),  (float)(12.0 / 571.0),
    (float)(7.0 / 571.0),  (float)(2.0 / 571.0),  (float)(7.0 / 571.0),
    (float)(31.0 / 571.0), (float)(52.0 / 571.0), (float)(31.0 / 571.0),
    (float)(7.0 / 571.0),  (float)(12.0 / 571.0), (float)(52.0 / 571.0),
    (float)(127.0 / 571.0), (float)(52.0 / 571.0), (float)(12.0 / 571.0),
    (float)(7.0 / 571.0),  (float)(31.0 / 571.0), (float)(52.0 / 571.0),
    (float)(31.0 / 571.0), (float)(7.0 / 571.0),  (float)(2.0 / 571.0),
    (float)(7.0 / 571.0),  (float)(12.0 / 571.0), (float)(7.0 / 571.0),
    (float)(2.0 / 571.0),
};

__device__ __forceinline__ int mirror(int i, int n) {
    const int m = i < 0 ? -i : (i >= n ? 2 * n - i - 1 : i);
    return m < 0 ? 0 : (m > n - 1 ? n - 1 : m);
}

// Sample (x, y) as libvmaf's float: x / scaler - 128 (both exact).
__device__ __forceinline__ float value(const Plane &p, int x, int y, float inv_scaler) {
    return __fadd_rn(__fmul_rn((float)sample(p, x, y), inv_scaler), -128.0f);
}

// The N x N filter `f` at (x, y), libvmaf's order: each filter row's taps from 0, left to
// right; the rows' sums from 0, top to bottom.
template <int N>
__device__ __forceinline__ float filter(const Plane &p, const float *f, int x, int y, int w,
                                        int h, float inv_scaler) {
    float acc = 0.0f;
#pragma unroll
    for (int fi = 0; fi < N; ++fi) {
        const int yy = mirror(y - N / 2 + fi, h);
        float inner = 0.0f;
#pragma unroll
        for (int fj = 0; fj < N; ++fj) {
            const int xx = mirror(x - N / 2 + fj, w);
            inner = __fadd_rn(inner, __fmul_rn(f[fi * N + fj], value(p, xx, yy, inv_scaler)));
        }
        acc = __fadd_rn(acc, inner);
    }
    return acc;
}

}  // namespace float_ansnr_detail

using namespace float_ansnr_detail;

// Row sums of one frame: block b takes rows 8b .. 8b + 7 (threadIdx.y), 32 columns at a time
// (threadIdx.x): each thread computes its pixel's squared filtered reference and squared
// difference, then one thread per row adds the 32 of its row in column order to the row's
// running sums. Writes `rows[y]` (sig) and `rows[height + y]` (noise) as f32.
// Launch: grid 1 x ceil(h / 8), blocks of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
ansnr_rows(const Plane reference, const Plane distorted, int32_t width, int32_t height,
           float inv_scaler, float *__restrict__ rows) {
    __shared__ float sig_terms[BLOCK_Y][BLOCK_X];
    __shared__ float noise_terms[BLOCK_Y][BLOCK_X];
    const int y = blockIdx.y * BLOCK_Y + threadIdx.y;
    float sig = 0.0f;
    float noise = 0.0f;
    for (int x0 = 0; x0 < width; x0 += BLOCK_X) {
        const int x = x0 + threadIdx.x;
        if (y < height && x < width) {
            const float r = filter<3>(reference, REF_FILTER, x, y, width, height, inv_scaler);
            const float d = filter<5>(distorted, DIS_FILTER, x, y, width, height, inv_scaler);
            const float e = __fsub_rn(r, d);
            sig_terms[threadIdx.y][threadIdx.x] = __fmul_rn(r, r);
            noise_terms[threadIdx.y][threadIdx.x] = __fmul_rn(e, e);
        }
        __syncthreads();
        if (threadIdx.x == 0 && y < height) {
            const int n = min(BLOCK_X, width - x0);
            for (int k = 0; k < n; ++k) {
                sig = __fadd_rn(sig, sig_terms[threadIdx.y][k]);
                noise = __fadd_rn(noise, noise_terms[threadIdx.y][k]);
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0 && y < height) {
        rows[y] = sig;
        rows[height + y] = noise;
    }
}

// out[0] = sig, out[1] = noise (f32 bits in the low half of each word): the row sums added
// top to bottom from 0. Launch: one block of 32 threads (threads 0 and 1 work).
extern "C" __global__ void ansnr_total(const float *__restrict__ rows, int32_t height,
                                       unsigned long long *__restrict__ out) {
    const int t = threadIdx.x;
    if (t < 2) {
        float s = 0.0f;
        for (int y = 0; y < height; ++y) {
            s = __fadd_rn(s, rows[t * height + y]);
        }
        out[t] = (unsigned long long)__float_as_uint(s);
    }
}
