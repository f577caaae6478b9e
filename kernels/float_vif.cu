// Float VIF: libvmaf's `float_vif` per scale. Every per-pixel value (the float levels, the
// separable Gaussian sums in tap order, the statistic with its float/double mix, the
// polynomial log2) is computed with explicitly rounded operations (no contraction into FMAs),
// so it is the CPU half's value bit for bit; only the frame sums differ: per block in double,
// blocks added in a fixed order, where libvmaf adds float row sums.
//
// Per frame: fvif_stats at scale 0, then per scale 1..3 fvif_decimate (low-pass with that
// scale's filter, keep even rows and columns) and fvif_stats, then fvif_reduce.
//
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/vif.c, vif_tools.c; host side and oracle:
// src/features/float_vif/{cuda,cpu}.rs.

#include "common.cuh"

using namespace vmafcmp;

namespace fvif {

constexpr int TW = 32;     // output columns per block
constexpr int TH = 16;     // output rows per block (2 per thread)
constexpr int RMAX = 8;    // largest filter radius (17 taps)
constexpr int MAXTAPS = 2 * RMAX + 1;

// Where a kernel reads a plane (48 bytes): the input plane when `img` is null (levels
// `sample * scale - 128`), else a packed `w`-wide float image.
struct Src {
    Plane plane;
    const float *img;
    float scale;
    uint32_t pad;
};

// The filter taps (17 at most) and their count.
struct Taps {
    float f[MAXTAPS];
    int32_t n;
};

// The statistic's constants (see StatParams in src/features/float_vif/mod.rs).
struct Stat {
    double sigma_nsq;
    float egl;
    float sigma_max_inv;
};

__device__ __forceinline__ float level(const Src &s, int w, int x, int y) {
    if (s.img) {
        return s.img[(int64_t)y * w + x];
    }
    return __fadd_rn(__fmul_rn((float)sample(s.plane, x, y), s.scale), -128.0f);
}

__device__ __forceinline__ float log2f_approx(float x) {
    if (x == 0.0f) {
        return -__int_as_float(0x7f800000);
    }
    if (x < 0.0f) {
        return __int_as_float(0x7fc00000);
    }
    const uint32_t u = __float_as_uint(x);
    const uint32_t exponent = (u & 0x7F800000u) >> 23;
    const float remain = __uint_as_float((u & 0x007FFFFFu) | 0x3F800000u);
    const float t = __fsub_rn(remain, 1.0f);
    // The decimal constants rounded to double, then to float, as C's initialiser does.
    const float poly[9] = {(float)-0.012671635276421, (float)0.064841182402670,
                           (float)-0.157048836463065, (float)0.257167726303123,
                           (float)-0.353800560300520, (float)0.480131410397451,
                           (float)-0.721314327952201, (float)1.442694803896991, 0.0f};
    float v = 0.0f;
#pragma unroll
    for (int i = 0; i < 9; ++i) {
        v = __fadd_rn(__fmul_rn(v, t), poly[i]);
    }
    return __fadd_rn((float)((int32_t)exponent - 127), v);
}

// One pixel of vif_statistic_s: num and den.
__device__ __forceinline__ void statistic(float mu1, float mu2, float xx, float yy, float xy,
                                          const Stat &p, float &num, float &den) {
    const float eps = 1.0e-10f;
    float s1 = __fsub_rn(xx, __fmul_rn(mu1, mu1));
    float s2 = __fsub_rn(yy, __fmul_rn(mu2, mu2));
    const float s12 = __fsub_rn(xy, __fmul_rn(mu1, mu2));
    s1 = s1 > 0.0f ? s1 : 0.0f;
    s2 = s2 > 0.0f ? s2 : 0.0f;
    float g = __fdiv_rn(s12, __fadd_rn(s1, eps));
    float sv = __fsub_rn(s2, __fmul_rn(g, s12));
    if (s1 < eps) {
        g = 0.0f;
        sv = s2;
        s1 = 0.0f;
    }
    if (s2 < eps) {
        g = 0.0f;
        sv = 0.0f;
    }
    if (g < 0.0f) {
        sv = s2;
        g = 0.0f;
    }
    sv = sv > eps ? sv : eps;
    g = g < p.egl ? g : p.egl;
    const float ggs = __fmul_rn(__fmul_rn(g, g), s1);
    num = log2f_approx(__double2float_rn(
        __dadd_rn(1.0, __ddiv_rn((double)ggs, __dadd_rn((double)sv, p.sigma_nsq)))));
    den = log2f_approx(__double2float_rn(__dadd_rn(1.0, __ddiv_rn((double)s1, p.sigma_nsq))));
    if (s12 < 0.0f) {
        num = 0.0f;
    }
    if ((double)s1 < p.sigma_nsq) {
        num = __fsub_rn(1.0f, __fmul_rn(s2, p.sigma_max_inv));
        den = 1.0f;
    }
}

}  // namespace fvif

using namespace fvif;

// fvif_stats's body for filters of N taps (N == 0: `taps.n` taps), on the kernel's shared
// arrays: compile-time tap counts unroll the filter loops.
template <int N>
__device__ __forceinline__ void stats_body(const Src &ref, const Src &dis, int32_t w, int32_t h,
                                           const Taps &taps, const Stat &st,
                                           double *__restrict__ partial, float *sa, float *sb,
                                           float (*v)[TH * (TW + 2 * RMAX)],
                                           double (*red)[BLOCK_THREADS / 32], float *tf) {
    const int n = N > 0 ? N : taps.n;
    const int r = n / 2;
    const int sw = TW + 2 * r;
    const int sh = TH + 2 * r;
    const int x0 = blockIdx.x * TW;
    const int y0 = blockIdx.y * TH;
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;

    if (tid < n) {
        tf[tid] = taps.f[tid];
    }
    for (int i = tid; i < sh * sw; i += BLOCK_THREADS) {
        const int rr = i / sw;
        const int cc = i % sw;
        const int gy = reflect(y0 - r + rr, h);
        const int gx = reflect(x0 - r + cc, w);
        sa[i] = level(ref, w, gx, gy);
        sb[i] = level(dis, w, gx, gy);
    }
    __syncthreads();
    for (int i = tid; i < TH * sw; i += BLOCK_THREADS) {
        const int rr = i / sw;
        const int cc = i % sw;
        float m1 = 0.0f, m2 = 0.0f, xx = 0.0f, yy = 0.0f, xy = 0.0f;
#pragma unroll
        for (int k = 0; k < n; ++k) {
            const float fk = tf[k];
            const float a = sa[(rr + k) * sw + cc];
            const float b = sb[(rr + k) * sw + cc];
            m1 = __fadd_rn(m1, __fmul_rn(fk, a));
            m2 = __fadd_rn(m2, __fmul_rn(fk, b));
            xx = __fadd_rn(xx, __fmul_rn(fk, __fmul_rn(a, a)));
            yy = __fadd_rn(yy, __fmul_rn(fk, __fmul_rn(b, b)));
            xy = __fadd_rn(xy, __fmul_rn(fk, __fmul_rn(a, b)));
        }
        v[0][i] = m1;
        v[1][i] = m2;
        v[2][i] = xx;
        v[3][i] = yy;
        v[4][i] = xy;
    }
    __syncthreads();
    double sn = 0.0, sd = 0.0;
#pragma unroll
    for (int j = 0; j < TH / BLOCK_Y; ++j) {
        const int rr = threadIdx.y + j * BLOCK_Y;
        const int cc = threadIdx.x;
        if (x0 + cc < w && y0 + rr < h) {
            float q[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int k = 0; k < n; ++k) {
                const float fk = tf[k];
#pragma unroll
                for (int c = 0; c < 5; ++c) {
                    q[c] = __fadd_rn(q[c], __fmul_rn(fk, v[c][rr * sw + cc + k]));
                }
            }
            float num, den;
            statistic(q[0], q[1], q[2], q[3], q[4], st, num, den);
            sn += (double)num;
            sd += (double)den;
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        sn += __shfl_down_sync(0xffffffffu, sn, off);
        sd += __shfl_down_sync(0xffffffffu, sd, off);
    }
    if ((tid & 31) == 0) {
        red[0][tid >> 5] = sn;
        red[1][tid >> 5] = sd;
    }
    __syncthreads();
    if (tid < 2) {
        double s = 0.0;
        for (int i = 0; i < BLOCK_THREADS / 32; ++i) {
            s += red[tid][i];
        }
        partial[2 * (blockIdx.y * gridDim.x + blockIdx.x) + tid] = s;
    }
}

// The statistic's sums over one scale: per block (num, den) in double into
// `partial[2 * block ..]`. `ref`, `dis`: the scale's `w` x `h` planes. Grid: ceil(w / 32) x
// ceil(h / 16) blocks of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
fvif_stats(const Src ref, const Src dis, int32_t w, int32_t h, const Taps taps, const Stat st,
           double *__restrict__ partial) {
    constexpr int SW = TW + 2 * RMAX;
    constexpr int SH = TH + 2 * RMAX;
    __shared__ float sa[SH * SW];
    __shared__ float sb[SH * SW];
    __shared__ float v[5][TH * SW];
    __shared__ double red[2][BLOCK_THREADS / 32];
    __shared__ float tf[MAXTAPS];
    switch (taps.n) {
    case 17:
        stats_body<17>(ref, dis, w, h, taps, st, partial, sa, sb, v, red, tf);
        break;
    case 9:
        stats_body<9>(ref, dis, w, h, taps, st, partial, sa, sb, v, red, tf);
        break;
    case 5:
        stats_body<5>(ref, dis, w, h, taps, st, partial, sa, sb, v, red, tf);
        break;
    case 3:
        stats_body<3>(ref, dis, w, h, taps, st, partial, sa, sb, v, red, tf);
        break;
    default:
        stats_body<0>(ref, dis, w, h, taps, st, partial, sa, sb, v, red, tf);
    }
}

// fvif_decimate's body for filters of N taps (N == 0: `taps.n` taps).
template <int N>
__device__ __forceinline__ void decimate_body(const Src &ref, const Src &dis, int32_t w,
                                              int32_t h, const Taps &taps,
                                              float *__restrict__ out_ref,
                                              float *__restrict__ out_dis, int32_t nw, int32_t nh,
                                              float *sa, float *sb, float *va, float *vb,
                                              float *tf) {
    const int n = N > 0 ? N : taps.n;
    const int r = n / 2;
    const int sw = 2 * TW + 2 * r;
    const int sh = 2 * TH + 2 * r;
    const int x0 = blockIdx.x * TW;
    const int y0 = blockIdx.y * TH;
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;

    if (tid < n) {
        tf[tid] = taps.f[tid];
    }
    for (int i = tid; i < sh * sw; i += BLOCK_THREADS) {
        const int rr = i / sw;
        const int cc = i % sw;
        const int gy = reflect(2 * y0 - r + rr, h);
        const int gx = reflect(2 * x0 - r + cc, w);
        sa[i] = level(ref, w, gx, gy);
        sb[i] = level(dis, w, gx, gy);
    }
    __syncthreads();
    for (int i = tid; i < TH * sw; i += BLOCK_THREADS) {
        const int rr = i / sw;
        const int cc = i % sw;
        float a = 0.0f, b = 0.0f;
#pragma unroll
        for (int k = 0; k < n; ++k) {
            const float fk = tf[k];
            a = __fadd_rn(a, __fmul_rn(fk, sa[(2 * rr + k) * sw + cc]));
            b = __fadd_rn(b, __fmul_rn(fk, sb[(2 * rr + k) * sw + cc]));
        }
        va[i] = a;
        vb[i] = b;
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < TH / BLOCK_Y; ++j) {
        const int rr = threadIdx.y + j * BLOCK_Y;
        const int cc = threadIdx.x;
        const int x = x0 + cc;
        const int y = y0 + rr;
        if (x < nw && y < nh) {
            float a = 0.0f, b = 0.0f;
#pragma unroll
            for (int k = 0; k < n; ++k) {
                const float fk = tf[k];
                a = __fadd_rn(a, __fmul_rn(fk, va[rr * sw + 2 * cc + k]));
                b = __fadd_rn(b, __fmul_rn(fk, vb[rr * sw + 2 * cc + k]));
            }
            out_ref[(int64_t)y * nw + x] = a;
            out_dis[(int64_t)y * nw + x] = b;
        }
    }
}

// The next scale: `ref`, `dis` (`w` x `h`) low-passed with `taps` at the even rows and
// columns, into the packed `nw` x `nh` images `out_ref`, `out_dis` (nw = w / 2, nh = h / 2).
// Grid: ceil(nw / 32) x ceil(nh / 16) blocks of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
fvif_decimate(const Src ref, const Src dis, int32_t w, int32_t h, const Taps taps,
              float *__restrict__ out_ref, float *__restrict__ out_dis, int32_t nw, int32_t nh) {
    constexpr int SW = 2 * TW + 2 * RMAX;
    constexpr int SH = 2 * TH + 2 * RMAX;
    __shared__ float sa[SH * SW];
    __shared__ float sb[SH * SW];
    __shared__ float va[TH * SW];
    __shared__ float vb[TH * SW];
    __shared__ float tf[MAXTAPS];
    switch (taps.n) {
    case 9:
        decimate_body<9>(ref, dis, w, h, taps, out_ref, out_dis, nw, nh, sa, sb, va, vb, tf);
        break;
    case 5:
        decimate_body<5>(ref, dis, w, h, taps, out_ref, out_dis, nw, nh, sa, sb, va, vb, tf);
        break;
    case 3:
        decimate_body<3>(ref, dis, w, h, taps, out_ref, out_dis, nw, nh, sa, sb, va, vb, tf);
        break;
    default:
        decimate_body<0>(ref, dis, w, h, taps, out_ref, out_dis, nw, nh, sa, sb, va, vb, tf);
    }
}

// The frame's sums: `out[2s]`, `out[2s + 1]` = the sums of scale `s`'s block partials
// (`blocks[s]` blocks from `first[s]`), in a fixed order, as double bits. One block of
// 32 x 8 threads.
struct Ranges {
    int32_t first[4];
    int32_t blocks[4];
};

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
fvif_reduce(const double *__restrict__ partial, const Ranges ranges,
            unsigned long long *__restrict__ out) {
    __shared__ double red[BLOCK_THREADS / 32];
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
    for (int q = 0; q < 8; ++q) {
        const int s = q / 2;
        double v = 0.0;
        for (int b = tid; b < ranges.blocks[s]; b += BLOCK_THREADS) {
            v += partial[2 * (ranges.first[s] + b) + (q & 1)];
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
            out[q] = (unsigned long long)__double_as_longlong(t);
        }
        __syncthreads();
    }
}
