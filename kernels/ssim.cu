// Float SSIM and MS-SSIM (libvmaf's float_ssim and float_ms_ssim, IQA's code) on the luma
// plane. The filters (the 11-tap Gaussian window, MS-SSIM's 9x9 low-pass, float_ssim's box)
// run in the CPU path's tap order, each tap a single-precision FMA into a float sum. libvmaf
// (and src/features/ssim/cpu.rs) rounds each product to float and adds in double; widening every product
// to double bound these kernels (16 conversions per clock per SM, about 100 us per 1080p
// frame). The scores stay within 3.1e-6 of that arithmetic: measured with the CPU path switched
// to these FMA sums, on src01 (<= 1.2e-7), flat frames, bars, noise, a checkerboard and a
// banded ramp at 1080p, 8 and 10 bits. The per-pixel SSIM terms repeat the CPU path's float /
// double mix operation for operation, with every rounding explicit (__fmul_rn, __dadd_rn, ...)
// so that nvcc fuses nothing there.
//
// Only the frame means differ in the order of their additions: each block sums its pixels in a
// fixed tree and writes the sums to scratch, and `ssim_reduce` adds the blocks' sums in a
// fixed order, so the result has the same bits on every run (no float atomics).
//
// Pipeline per frame (host side: src/features/ssim/cuda.rs):
//   ssim_decimate  MS-SSIM's 9x9 low-pass + halving (one launch per scale 1..4), and
//                  float_ssim's box down-scaling (in the scale-1 launch);
//   ssim_stats     the five Gaussian-window statistics and the SSIM terms of every scale
//                  (one launch for all scales), per-block sums of l*c*s, l, c, s;
//   ssim_reduce    the frame sums of each scale.
//
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_ssim.c, float_ms_ssim.c, ssim.c,
// ms_ssim.c, iqa/ (ssim_tools.c, convolve.c, decimate.c); oracle: src/features/ssim/cpu.rs.

#include "common.cuh"

using namespace vmafcmp;

namespace ssim_detail {

// The 11-tap Gaussian window (sigma 1.5), tap k at distance |k - 5| from the centre.
__constant__ float GAUSS[11] = {0.001028f, 0.007599f, 0.036001f, 0.109361f,
                                0.213006f, 0.266012f, 0.213006f, 0.109361f,
                                0.036001f, 0.007599f, 0.001028f};
constexpr int GL = 11;

// MS-SSIM's 9x9 low-pass filter by |dy|, |dx| (0..4).
__constant__ float LPF[5][5] = {
    {0.363505f, 0.160885f, -0.047149f, -0.010146f, 0.016114f},
    {0.160885f, 0.071207f, -0.020867f, -0.004490f, 0.007132f},
    {-0.047149f, -0.020867f, 0.006115f, 0.001316f, -0.002090f},
    {-0.010146f, -0.004490f, 0.001316f, 0.000283f, -0.000450f},
    {0.016114f, 0.007132f, -0.002090f, -0.000450f, 0.000714f},
};
constexpr int LPF_LEN = 9;

// Where an image comes from: the input plane (`img == nullptr`; samples scaled by `scale`,
// 2^-(bpc - 8), to floats on an 8-bit scale) or a packed float image of the pyramid.
// Host side: `Src` in src/features/ssim/cuda.rs (48 bytes).
struct Src {
    Plane plane;
    const float *img;
    float scale;
    uint32_t pad;
};
static_assert(sizeof(Src) == 48, "Src layout");

// Sample (x, y) of a `w`-wide source as a float (in-range coordinates only).
__device__ __forceinline__ float load(const Src &s, int w, int x, int y) {
    if (s.img != nullptr) {
        return s.img[(int64_t)y * w + x];
    }
    return __fmul_rn((float)sample(s.plane, x, y), s.scale);
}

// IQA's symmetric boundary: -1 -> 0, n -> n - 1; clamped beyond one period.
__device__ __forceinline__ int mirror(int i, int n) {
    int m = i < 0 ? -1 - i : (i >= n ? 2 * n - i - 1 : i);
    return m < 0 ? 0 : (m > n - 1 ? n - 1 : m);
}

// ---------------------------------------------------------------------------------------
// Decimation.

// Output tile of ssim_decimate: 32 columns x 16 rows, 2 rows per thread of a 32 x 8 block.
constexpr int DTW = 32;
constexpr int DTH = 16;
// Input footprint of an LPF tile (factor 2, 9 taps): 71 x 39 samples, stored with even and
// odd columns apart (36 + 35) so that the lanes of a warp read consecutive words.
constexpr int LIW = 2 * (DTW - 1) + LPF_LEN;  // 71
constexpr int LIH = 2 * (DTH - 1) + LPF_LEN;  // 39
constexpr int LHALF = (LIW + 1) / 2;          // 36

// One decimation: both images of `src` (`sw` x `sh`) into `dst_*` (`dw` x `dh`, packed).
// kind 0: MS-SSIM's 9x9 LPF, factor 2. kind 1: box of `factor` x `factor` taps, each `tap`.
struct DecJob {
    Src ref;
    Src dis;
    float *dst_ref;
    float *dst_dis;
    int32_t sw, sh, dw, dh;
    int32_t kind, factor;
    float tap;
    int32_t tiles_x;
    int32_t first_block;
    int32_t pad;
};
static_assert(sizeof(DecJob) == 152, "DecJob layout");

constexpr int MAX_DEC_JOBS = 2;
// Host side: `DecJobs` in src/features/ssim/cuda.rs (312 bytes).
struct DecJobs {
    DecJob job[MAX_DEC_JOBS];
    int32_t count;
    int32_t pad;
};
static_assert(sizeof(DecJobs) == 312, "DecJobs layout");

// ---------------------------------------------------------------------------------------
// SSIM statistics.

// Output tile of ssim_stats: 32 x 32 valid-region pixels, 4 rows per thread of a 32 x 8 block.
constexpr int STW = 32;
constexpr int STH = 32;
constexpr int SIW = STW + GL - 1;  // 42
constexpr int SIH = STH + GL - 1;  // 42

// One SSIM evaluation: the valid region of `w` x `h` images, (w - 10) x (h - 10) pixels, in
// tiles_x x ceil((h - 10) / 32) blocks starting at flattened block `first_block`.
struct SsimEval {
    Src ref;
    Src dis;
    int32_t w, h;
    int32_t tiles_x;
    int32_t first_block;
};
static_assert(sizeof(SsimEval) == 112, "SsimEval layout");

constexpr int MAX_EVALS = 6;
// Host side: `SsimJobs` in src/features/ssim/cuda.rs (688 bytes).
struct SsimJobs {
    SsimEval eval[MAX_EVALS];
    int32_t count;
    float c1, c2, c3;
};
static_assert(sizeof(SsimJobs) == 688, "SsimJobs layout");

// Per output slot of ssim_reduce: the range of block sums it adds (blocks == 0: zeros).
// Host side: `Slots` in src/features/ssim/cuda.rs (48 bytes).
struct Slots {
    int32_t first_block[MAX_EVALS];
    int32_t blocks[MAX_EVALS];
};
static_assert(sizeof(Slots) == 48, "Slots layout");

// One filter tap: acc + x * k as a single-precision FMA. libvmaf rounds each product to float
// and adds in double; widening every product was the kernels' bottleneck (16 conversions per
// clock per SM), and this order keeps float_ssim and float_ms_ssim within 3.1e-6 of that
// arithmetic (see the header).
__device__ __forceinline__ float tap(float acc, float x, float k) { return fmaf(x, k, acc); }

// Sums of the four SSIM terms of one pixel (IQA's ssim map with libvmaf's defaults), from the
// filtered means, squares and cross product, exactly as src/features/ssim/cpu.rs's ssim_scale.
__device__ __forceinline__ void ssim_pixel(float m1, float m2, float sq1, float sq2, float x12,
                                           float c1, float c2, float c3, double (&acc)[4]) {
    const float var1 = fmaxf(__fsub_rn(sq1, __fmul_rn(m1, m1)), 0.0f);
    const float var2 = fmaxf(__fsub_rn(sq2, __fmul_rn(m2, m2)), 0.0f);
    float cov = __fsub_rn(x12, __fmul_rn(m1, m2));
    const float sd12 = __double2float_rn(__dsqrt_rn((double)__fmul_rn(var1, var2)));
    const double l_num = __dadd_rn(__dmul_rn(__dmul_rn(2.0, (double)m1), (double)m2), (double)c1);
    const float l_den = __fadd_rn(__fadd_rn(__fmul_rn(m1, m1), __fmul_rn(m2, m2)), c1);
    const double l = __ddiv_rn(l_num, (double)l_den);
    const double c_num = __dadd_rn(__dmul_rn(2.0, (double)sd12), (double)c2);
    const float c_den = __fadd_rn(__fadd_rn(var1, var2), c2);
    const double c = __ddiv_rn(c_num, (double)c_den);
    if (cov < 0.0f && sd12 <= 0.0f) {
        cov = 0.0f;
    }
    const double s = (double)__fdiv_rn(__fadd_rn(cov, c3), __fadd_rn(sd12, c3));
    acc[0] = __dadd_rn(acc[0], __dmul_rn(__dmul_rn(l, c), s));
    acc[1] = __dadd_rn(acc[1], l);
    acc[2] = __dadd_rn(acc[2], c);
    acc[3] = __dadd_rn(acc[3], s);
}

// Sum over the block of N doubles per thread, in a fixed order (shuffle tree in each warp,
// then the warps in order); thread 0 gets the result. Every thread must call it.
template <int N>
__device__ __forceinline__ void block_sum_f64(double (&v)[N], double (*scratch)[N]) {
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
#pragma unroll
    for (int k = 0; k < N; ++k) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            v[k] = __dadd_rn(v[k], __shfl_down_sync(0xffffffffu, v[k], off));
        }
    }
    if ((tid & 31) == 0) {
#pragma unroll
        for (int k = 0; k < N; ++k) {
            scratch[tid >> 5][k] = v[k];
        }
    }
    __syncthreads();
    if (tid == 0) {
        const int warps = (blockDim.x * blockDim.y) >> 5;
#pragma unroll
        for (int k = 0; k < N; ++k) {
            double t = scratch[0][k];
            for (int w = 1; w < warps; ++w) {
                t = __dadd_rn(t, scratch[w][k]);
            }
            v[k] = t;
        }
    }
}

}  // namespace ssim_detail

using namespace ssim_detail;

// MS-SSIM's 9x9 low-pass filter with halving (IQA's _iqa_decimate, mirrored edges) and
// float_ssim's box down-scaling, for up to two jobs in one launch: block b belongs to the
// last job whose first_block <= b and computes a 32 x 16 output tile of both images.
// Output (x, y) = sum over ky, kx (row-major) of in(x * f + kx - half, y * f + ky - half) *
// tap(ky, kx), a float FMA per tap in that order.
// Launch: grid = the jobs' tiles (ceil(dw / 32) x ceil(dh / 16) each) flattened in x, blocks
// of 32 x 8 threads; static shared memory 22.5 KB (LPF tiles).
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
ssim_decimate(const __grid_constant__ DecJobs jobs) {
    __shared__ float tile_r[2][LIH][LHALF];
    __shared__ float tile_d[2][LIH][LHALF];
    const int b = blockIdx.x;
    int j = 0;
    for (int i = 1; i < jobs.count; ++i) {
        if (b >= jobs.job[i].first_block) {
            j = i;
        }
    }
    const DecJob &job = jobs.job[j];
    const int t = b - job.first_block;
    const int x0 = (t % job.tiles_x) * DTW;
    const int y0 = (t / job.tiles_x) * DTH;
    const int sw = job.sw, sh = job.sh, dw = job.dw, dh = job.dh;
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
    const int x = x0 + threadIdx.x;
    const Src src_r = job.ref;
    const Src src_d = job.dis;

    if (job.kind == 0) {
        // Input tile: columns 2 * x0 - 4 .., rows 2 * y0 - 4 .., mirrored into the image.
        for (int i = tid; i < LIH * LIW; i += BLOCK_THREADS) {
            const int r = i / LIW;
            const int c = i - r * LIW;
            const int gy = mirror(2 * y0 - 4 + r, sh);
            const int gx = mirror(2 * x0 - 4 + c, sw);
            tile_r[c & 1][r][c >> 1] = load(src_r, sw, gx, gy);
            tile_d[c & 1][r][c >> 1] = load(src_d, sw, gx, gy);
        }
        __syncthreads();
        if (x >= dw) {
            return;
        }
#pragma unroll 1
        for (int rr = 0; rr < DTH / BLOCK_Y; ++rr) {
            const int ly = threadIdx.y + rr * BLOCK_Y;
            const int y = y0 + ly;
            if (y >= dh) {
                break;
            }
            float sr = 0.0f, sd = 0.0f;
#pragma unroll
            for (int ky = 0; ky < LPF_LEN; ++ky) {
                const int row = 2 * ly + ky;
                const int ay = ky < 4 ? 4 - ky : ky - 4;
#pragma unroll
                for (int kx = 0; kx < LPF_LEN; ++kx) {
                    const int ax = kx < 4 ? 4 - kx : kx - 4;
                    const float k = LPF[ay][ax];
                    const int col = threadIdx.x + (kx >> 1);
                    sr = tap(sr, tile_r[kx & 1][row][col], k);
                    sd = tap(sd, tile_d[kx & 1][row][col], k);
                }
            }
            job.dst_ref[(int64_t)y * dw + x] = sr;
            job.dst_dis[(int64_t)y * dw + x] = sd;
        }
    } else {
        // Box: windows do not overlap (stride = taps), so read straight from the source.
        if (x >= dw) {
            return;
        }
        const int f = job.factor;
        const int half = f / 2;
        const int last = half - ((f & 1) == 0 ? 1 : 0);
        const float box = job.tap;
#pragma unroll 1
        for (int rr = 0; rr < DTH / BLOCK_Y; ++rr) {
            const int y = y0 + threadIdx.y + rr * BLOCK_Y;
            if (y >= dh) {
                break;
            }
            float sr = 0.0f, sd = 0.0f;
            for (int v = -half; v <= last; ++v) {
                const int gy = mirror(y * f + v, sh);
                for (int u = -half; u <= last; ++u) {
                    const int gx = mirror(x * f + u, sw);
                    sr = tap(sr, load(src_r, sw, gx, gy), box);
                    sd = tap(sd, load(src_d, sw, gx, gy), box);
                }
            }
            job.dst_ref[(int64_t)y * dw + x] = sr;
            job.dst_dis[(int64_t)y * dw + x] = sd;
        }
    }
}

// SSIM terms of every evaluation (scale) in one launch: block b belongs to the last
// evaluation whose first_block <= b and covers a 32 x 32 tile of its valid region. It loads
// the 42 x 42 input footprint of both images, filters rows (five statistics: means, squares,
// cross product; 11 taps, a float FMA each), then columns the same way, evaluates each
// pixel's l, c, s and writes the block's sums of l*c*s, l, c, s to `partial[4 * b ..]` (every
// block writes, no zeroing needed).
// Launch: grid = the evaluations' tiles (ceil((w - 10) / 32) x ceil((h - 10) / 32) each)
// flattened in x, blocks of 32 x 8 threads; static shared memory 41.3 KB.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
ssim_stats(const __grid_constant__ SsimJobs jobs, double *__restrict__ partial) {
    __shared__ float in_r[SIH][SIW];
    __shared__ float in_d[SIH][SIW];
    __shared__ float rows[5][SIH][STW];
    __shared__ double red[BLOCK_THREADS / 32][4];
    const int b = blockIdx.x;
    int e = 0;
    for (int i = 1; i < jobs.count; ++i) {
        if (b >= jobs.eval[i].first_block) {
            e = i;
        }
    }
    const SsimEval &ev = jobs.eval[e];
    const int t = b - ev.first_block;
    const int x0 = (t % ev.tiles_x) * STW;
    const int y0 = (t / ev.tiles_x) * STH;
    const int w = ev.w, h = ev.h;
    const int dw = w - (GL - 1), dh = h - (GL - 1);
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;

    // Input footprint; samples past the image only feed pixels outside the valid region.
    const Src src_r = ev.ref;
    const Src src_d = ev.dis;
    for (int i = tid; i < SIH * SIW; i += BLOCK_THREADS) {
        const int r = i / SIW;
        const int c = i - r * SIW;
        const int gx = x0 + c, gy = y0 + r;
        float a = 0.0f, d = 0.0f;
        if (gx < w && gy < h) {
            a = load(src_r, w, gx, gy);
            d = load(src_d, w, gx, gy);
        }
        in_r[r][c] = a;
        in_d[r][c] = d;
    }
    __syncthreads();

    // Horizontal pass: warp i fills rows i, i + 8, ... of the 42 x 32 row-filtered tile.
    for (int i = tid; i < SIH * STW; i += BLOCK_THREADS) {
        const int r = i / STW;
        const int c = i - r * STW;
        float s[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        if (x0 + c < dw && y0 + r < h) {
#pragma unroll
            for (int k = 0; k < GL; ++k) {
                const float g = GAUSS[k];
                const float a = in_r[r][c + k];
                const float d = in_d[r][c + k];
                s[0] = tap(s[0], a, g);
                s[1] = tap(s[1], d, g);
                s[2] = tap(s[2], __fmul_rn(a, a), g);
                s[3] = tap(s[3], __fmul_rn(d, d), g);
                s[4] = tap(s[4], __fmul_rn(a, d), g);
            }
        }
#pragma unroll
        for (int q = 0; q < 5; ++q) {
            rows[q][r][c] = s[q];
        }
    }
    __syncthreads();

    // Vertical pass and the SSIM terms: thread (x, y) takes rows y, y + 8, y + 16, y + 24.
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    const int c = threadIdx.x;
    if (x0 + c < dw) {
#pragma unroll 1
        for (int rr = 0; rr < STH / BLOCK_Y; ++rr) {
            const int r = threadIdx.y + rr * BLOCK_Y;
            if (y0 + r >= dh) {
                break;
            }
            float s[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int k = 0; k < GL; ++k) {
                const float g = GAUSS[k];
#pragma unroll
                for (int q = 0; q < 5; ++q) {
                    s[q] = tap(s[q], rows[q][r + k][c], g);
                }
            }
            ssim_pixel(s[0], s[1], s[2], s[3], s[4], jobs.c1, jobs.c2, jobs.c3, acc);
        }
    }
    block_sum_f64<4>(acc, red);
    if (tid == 0) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            partial[4 * (int64_t)b + k] = acc[k];
        }
    }
}

// Frame sums: block s (one per output slot, 6 slots) adds the block sums
// `partial[4 * (first_block[s] + i) + k]`, i < blocks[s], k < 4, in a fixed order and writes
// them as double bits to `out[4 * s + k]` (zeros for a slot with no blocks).
// Launch: grid 6 x 1, blocks of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
ssim_reduce(const __grid_constant__ Slots slots, const double *__restrict__ partial,
            unsigned long long *__restrict__ out) {
    __shared__ double red[BLOCK_THREADS / 32][4];
    const int s = blockIdx.x;
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
    const int first = slots.first_block[s];
    const int n = slots.blocks[s];
    double v[4] = {0.0, 0.0, 0.0, 0.0};
    for (int i = tid; i < n; i += BLOCK_THREADS) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            v[k] = __dadd_rn(v[k], partial[4 * ((int64_t)first + i) + k]);
        }
    }
    block_sum_f64<4>(v, red);
    if (tid == 0) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            out[4 * s + k] = (unsigned long long)__double_as_longlong(v[k]);
        }
    }
}
