// PSNR-HVS (libvmaf's `psnr_hvs`): per 8x8 block of each plane, taken every 7 samples across
// and down, the integer DCT of the reference and distorted blocks, their contrast masking and
// the squared CSF-weighted errors above the masking threshold. One thread per 8x8 block does
// the block's arithmetic exactly as the CPU half (src/features/psnr_hvs/cpu.rs) and libvmaf:
// the same 32-bit integer DCT, single-precision statistics in the same order, every float
// operation an explicit round-to-nearest intrinsic so that nothing is contracted into an FMA.
//
// The sum over a plane's terms: libvmaf keeps one running float over the plane (raster order),
// whose rounding moves 1080p scores by ~1.6e-3 dB from the exact sum. The GPU reproduces it:
// every term added to a float that starts from an estimate of libvmaf's running sum at the
// block's start (its increments then round to the same grid as libvmaf's), in two passes (the
// first starts from the exact prefix sums, the second from the first's float increments); only
// ties and terms within ~1e-6 of a binade change can round otherwise. All sums are in fixed
// orders (run to run identical).
//
// Launches per frame: psnr_hvs_blocks, psnr_hvs_emulate twice, psnr_hvs_total.
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/third_party/xiph/psnr_hvs.c; host side and
// oracle: src/features/psnr_hvs/{cuda,cpu}.rs.

#include "common.cuh"

using namespace vmafcmp;

namespace psnr_hvs_detail {

// Threads (8x8 blocks) per thread block of psnr_hvs_blocks.
constexpr int THREADS = 64;

// The planes of one frame pair, [0] Y, [1] Cb, [2] Cr, with each plane's 8x8 block grid
// (`nx` x `ny` blocks) and weights (row-major 8x8, index 8 * vertical + horizontal
// frequency): `csf`, `mask` (0 for the DC) and `divisor` (the mask, +inf for the DC).
// `var64` and `var16` are libvmaf's float constants 1/63.f*64 and 1/15.f*16.
// Host side: `HvsPlanes` in src/features/psnr_hvs/cuda.rs (same layout, 2528 bytes).
struct HvsPlanes {
    Plane reference[3];
    Plane distorted[3];
    int32_t nx[3];
    int32_t ny[3];
    float csf[3][64];
    float mask[3][64];
    float divisor[3][64];
    float var64;
    float var16;
};
static_assert(sizeof(HvsPlanes) == 2528, "HvsPlanes layout");

// Halves `a` rounding towards zero (Daala's OD_DCT_RSHIFT(a, 1)).
__device__ __forceinline__ int32_t half(int32_t a) {
    return (int32_t)(((uint32_t)a >> 31) + (uint32_t)a) >> 1;
}

// (a * m + 2^(s-1)) >> s in wrapping 32-bit arithmetic.
__device__ __forceinline__ int32_t lift(int32_t a, int32_t m, int s) {
    return (int32_t)((uint32_t)a * (uint32_t)m + (1u << (s - 1))) >> s;
}

// Daala's 8-point integer DCT of v[0], v[S], ..., v[7 S], in place (output k at v[k S]).
template <int S>
__device__ __forceinline__ void fdct8(int32_t *v) {
    int32_t t0 = v[0], t4 = v[S], t2 = v[2 * S], t6 = v[3 * S];
    int32_t t7 = v[4 * S], t3 = v[5 * S], t5 = v[6 * S], t1 = v[7 * S];
    t1 = t0 - t1;
    const int32_t t1h = half(t1);
    t0 -= t1h;
    t4 += t5;
    const int32_t t4h = half(t4);
    t5 -= t4h;
    t3 = t2 - t3;
    t2 -= half(t3);
    t6 += t7;
    const int32_t t6h = half(t6);
    t7 = t6h - t7;
    t0 += t6h;
    t6 = t0 - t6;
    t2 = t4h - t2;
    t4 = t2 - t4;
    t0 -= lift(t4, 13573, 15);
    t4 += lift(t0, 11585, 14);
    t0 -= lift(t4, 13573, 15);
    t6 -= lift(t2, 21895, 15);
    t2 += lift(t6, 15137, 14);
    t6 -= lift(t2, 21895, 15);
    t3 += lift(t5, 19195, 15);
    t5 += lift(t3, 11585, 14);
    t3 -= lift(t5, 7489, 13);
    t7 = half(t5) - t7;
    t5 -= t7;
    t3 = t1h - t3;
    t1 -= t3;
    t7 += lift(t1, 3227, 15);
    t1 -= lift(t7, 6393, 15);
    t7 += lift(t1, 3227, 15);
    t5 += lift(t3, 2485, 13);
    t3 -= lift(t5, 18205, 15);
    t5 += lift(t3, 2485, 13);
    v[0] = t0;
    v[S] = t1;
    v[2 * S] = t2;
    v[3 * S] = t3;
    v[4 * S] = t4;
    v[5 * S] = t5;
    v[6 * S] = t6;
    v[7 * S] = t7;
}

// The 8x8 DCT of a row-major block in place: columns first, then rows (libvmaf's order; its
// transposed intermediate is this in-place column result).
__device__ __forceinline__ void fdct8x8(int32_t (&v)[64]) {
#pragma unroll
    for (int c = 0; c < 8; ++c) {
        fdct8<8>(v + c);
    }
#pragma unroll
    for (int r = 0; r < 8; ++r) {
        fdct8<1>(v + 8 * r);
    }
}

// The quadrant (0..4) of sample k: (row >= 4) + 2 * (column >= 4).
__device__ __forceinline__ int quadrant(int k) { return (k >> 5) + 2 * ((k >> 2) & 1); }

// The block's activity: the quadrants' unbiased variances summed over the block's, 0 when
// flat (float, raster order, as libvmaf).
__device__ __forceinline__ float activity(const int32_t (&v)[64], float var64, float var16) {
    int32_t total = 0;
    int32_t quad[4] = {0, 0, 0, 0};
#pragma unroll
    for (int k = 0; k < 64; ++k) {
        total += v[k];
        quad[quadrant(k)] += v[k];
    }
    const float mean = __fdiv_rn(__int2float_rn(total), 64.f);
    float means[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        means[q] = __fdiv_rn(__int2float_rn(quad[q]), 16.f);
    }
    float var = 0.f;
    float vars[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int k = 0; k < 64; ++k) {
        const float x = __int2float_rn(v[k]);
        const float a = __fsub_rn(x, mean);
        var = __fadd_rn(var, __fmul_rn(a, a));
        const int q = quadrant(k);
        const float b = __fsub_rn(x, means[q]);
        vars[q] = __fadd_rn(vars[q], __fmul_rn(b, b));
    }
    var = __fmul_rn(var, var64);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        vars[q] = __fmul_rn(vars[q], var16);
    }
    if (var > 0.f) {
        var = __fdiv_rn(__fadd_rn(__fadd_rn(__fadd_rn(vars[0], vars[1]), vars[2]), vars[3]), var);
    }
    return var;
}

// sqrt(sum of the AC coefficients' squares times their masking weights * activity) / 32.
// (libvmaf takes the root in double of the float product: the same correctly rounded value.)
__device__ __forceinline__ float masking(const int32_t (&c)[64], const float *mask, float act) {
    float m = 0.f;
#pragma unroll
    for (int k = 0; k < 64; ++k) {
        const int32_t sq = (int32_t)((uint32_t)c[k] * (uint32_t)c[k]);
        m = __fadd_rn(m, __fmul_rn(__int2float_rn(sq), mask[k]));
    }
    return __fdiv_rn(__fsqrt_rn(__fmul_rn(m, act)), 32.f);
}

// Block (bx, by) of `p` (8 x 8 samples from (7 bx, 7 by)) into `v`.
__device__ __forceinline__ void load(int32_t (&v)[64], const Plane &p, int bx, int by) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            v[8 * i + j] = (int32_t)sample(p, 7 * bx + j, 7 * by + i);
        }
    }
}


// The sum of `v` over the thread block (THREADS threads), fixed order; thread 0 holds it.
__device__ __forceinline__ double block_sum(double v, double *scratch) {
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, off);
    }
    if ((threadIdx.x & 31) == 0) {
        scratch[threadIdx.x >> 5] = v;
    }
    __syncthreads();
    double t = 0.0;
    if (threadIdx.x == 0) {
#pragma unroll
        for (int w = 0; w < THREADS / 32; ++w) {
            t += scratch[w];
        }
    }
    return t;
}

}  // namespace psnr_hvs_detail

using namespace psnr_hvs_detail;

// One thread per 8x8 block: thread t of thread block (j, p) takes 8x8 block b = j * THREADS + t
// of plane p (raster order, `nb` = gridDim.x * THREADS slots per plane; threads past the
// plane's blocks give zeros). It writes the block's 64 terms to `terms[(p * 64 + k) * nb + b]`,
// their double sum (k order) to `bsum[p * nb + b]`, and the thread block's sum of those to
// `tsum[p * gridDim.x + j]`.
// Launch: grid ceil(most blocks of a plane / THREADS) x 3, blocks of THREADS threads.
extern "C" __global__ void __launch_bounds__(THREADS)
psnr_hvs_blocks(const __grid_constant__ HvsPlanes P, float *__restrict__ terms,
                double *__restrict__ bsum, double *__restrict__ tsum) {
    __shared__ double scratch[THREADS / 32];
    const int p = blockIdx.y;
    const int nx = P.nx[p];
    const int nb = gridDim.x * THREADS;
    const int b = blockIdx.x * THREADS + threadIdx.x;
    float *out = terms + (size_t)p * 64 * nb + b;
    double acc = 0.0;
    if (b < nx * P.ny[p]) {
        const int bx = b % nx;
        const int by = b / nx;
        const float *csf = P.csf[p];
        const float *mask = P.mask[p];
        const float *divisor = P.divisor[p];
        int32_t s[64];
        int32_t d[64];
        load(s, P.reference[p], bx, by);
        const float sa = activity(s, P.var64, P.var16);
        fdct8x8(s);
        const float ms = masking(s, mask, sa);
        load(d, P.distorted[p], bx, by);
        const float da = activity(d, P.var64, P.var16);
        fdct8x8(d);
        const float md = masking(d, mask, da);
        const float m = md > ms ? md : ms;
#pragma unroll
        for (int k = 0; k < 64; ++k) {
            const int32_t diff = s[k] - d[k];
            const float err = __int2float_rn(diff < 0 ? -diff : diff);
            // The DC's divisor is +inf: threshold 0, its error kept whole.
            const float thr = __fdiv_rn(m, divisor[k]);
            const float e = err < thr ? 0.f : __fsub_rn(err, thr);
            const float w = __fmul_rn(e, csf[k]);
            const float term = __fmul_rn(w, w);
            out[(size_t)k * nb] = term;
            acc += (double)term;
        }
    } else {
#pragma unroll 8
        for (int k = 0; k < 64; ++k) {
            out[(size_t)k * nb] = 0.f;
        }
    }
    bsum[(size_t)p * nb + b] = acc;
    const double t = block_sum(acc, scratch);
    if (threadIdx.x == 0) {
        tsum[p * gridDim.x + blockIdx.x] = t;
    }
}

// One pass of libvmaf's running float sum: thread t of thread block (j, p) takes 8x8 block
// b = j * THREADS + t of plane p, estimates the running sum at its start as the prefix of
// `src` (per block, `src_sum` per thread block, as psnr_hvs_blocks lays them out) rounded to
// float, adds the block's 64 `terms` to it in float, and writes the float increment to
// `delta[p * nb + b]` (double, exact) and the thread block's sum of those to
// `delta_sum[p * gridDim.x + j]`.
// Launch: as psnr_hvs_blocks.
extern "C" __global__ void __launch_bounds__(THREADS)
psnr_hvs_emulate(const float *__restrict__ terms, const double *__restrict__ src,
                 const double *__restrict__ src_sum, double *__restrict__ delta,
                 double *__restrict__ delta_sum) {
    __shared__ double scratch[THREADS / 32];
    __shared__ double start[THREADS];
    const int p = blockIdx.y;
    const int nb = gridDim.x * THREADS;
    const int j = blockIdx.x;
    const int b = j * THREADS + threadIdx.x;
    // The thread blocks before this one, then this one's blocks before each thread's.
    double before = 0.0;
    for (int i = threadIdx.x; i < j; i += THREADS) {
        before += src_sum[p * gridDim.x + i];
    }
    start[threadIdx.x] = src[(size_t)p * nb + b];
    const double base = block_sum(before, scratch);
    if (threadIdx.x == 0) {
        double run = base;
        for (int i = 0; i < THREADS; ++i) {
            const double v = start[i];
            start[i] = run;
            run += v;
        }
    }
    __syncthreads();
    const float s0 = __double2float_rn(start[threadIdx.x]);
    float s = s0;
    const float *in = terms + (size_t)p * 64 * nb + b;
#pragma unroll 8
    for (int k = 0; k < 64; ++k) {
        s = __fadd_rn(s, __ldg(in + (size_t)k * nb));
    }
    const double inc = (double)s - (double)s0;
    delta[(size_t)p * nb + b] = inc;
    const double t = block_sum(inc, scratch);
    if (threadIdx.x == 0) {
        delta_sum[p * gridDim.x + j] = t;
    }
}

// `out[p]` = plane p's emulated float sum (the sum of its `delta_sum` words), `out[3 + p]` = its
// exact double sum (of its `tsum` words), p = 0..2, doubles, fixed order.
// Launch: one block of 256 threads.
extern "C" __global__ void __launch_bounds__(256)
psnr_hvs_total(const double *__restrict__ delta_sum, const double *__restrict__ tsum,
               int32_t blocks, double *__restrict__ out) {
    __shared__ double scratch[6][256 / 32];
    const int tid = threadIdx.x;
#pragma unroll
    for (int q = 0; q < 6; ++q) {
        const double *src = q < 3 ? delta_sum + q * blocks : tsum + (q - 3) * blocks;
        double s = 0.0;
        for (int i = tid; i < blocks; i += 256) {
            s += src[i];
        }
        for (int off = 16; off > 0; off >>= 1) {
            s += __shfl_down_sync(0xffffffffu, s, off);
        }
        if ((tid & 31) == 0) {
            scratch[q][tid >> 5] = s;
        }
    }
    __syncthreads();
    if (tid < 6) {
        double t = 0.0;
        for (int w = 0; w < 256 / 32; ++w) {
            t += scratch[tid][w];
        }
        out[tid] = t;
    }
}
