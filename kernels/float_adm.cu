// Float ADM (libvmaf's float_adm) on the GPU, in single precision.
//
// Follows the CPU half src/features/float_adm/cpu.rs (itself libvmaf 3.2.0's
// libvmaf/src/feature/adm.c and adm_tools.c in libvmaf's f32 order): the DWT is computed with
// round-to-nearest intrinsics in the same order (bit for bit with the CPU), the decoupling
// divides exactly where libvmaf's x86 build uses a refined reciprocal, the masking
// thresholds add the centre term in f32 (libvmaf in f64), and the sums over a row are tree
// reductions instead of libvmaf's left-to-right loop; the per-scale sums over the rows run in
// row order. Expected difference from the CPU half: a few 1e-7 on every output.
//
// Per frame and scale s (0..3) the host enqueues:
//   float_adm_dwt_s0 / _s123   one thread per coefficient of the scale's bands: the db2 DWT
//                              of reference and distorted, the approximation bands (next
//                              scale's input), and inside the extended region the decoupling
//                              and CSF (restored r, additive a), inside
//                              the scored region the denominator terms |rf * ref|^p.
//   float_adm_cm               one block per row of the scored region: the masking threshold
//                              of each coefficient from its 3x3 neighbourhood, the masked DLM
//                              and AIM terms, and the row's sums of the 9 values (den h v d,
//                              dlm h v d, aim h v d) into `rows`.
// then once float_adm_finish: per scale and value the sum over the rows in row order, as f32
// bits in the 36 result words; the host pools and combines them (src/features/float_adm/).
//
// Plane storage: every band plane of a scale is its bands' width x height, row pitch = width,
// `plane_len` floats apart in the multi-plane buffer `bands`:
//   0..2 r (h, v, d), 3..5 a (both CSF-weighted), 6..8 denominator terms. The masking's
// neighbour weights |x|/30 are recomputed from r and a where read (the same f32 product
// libvmaf stores), which halves what the first kernel writes.

#include <stdint.h>

#include "common.cuh"

using vmafcmp::Plane;
using vmafcmp::sample;

// Integer parameters per scale (int64): geometry and regions.
#define Q_IN_W 0
#define Q_IN_H 1
#define Q_W 2
#define Q_H 3
#define Q_EXT 4  // top, bottom, left, right
#define Q_REG 8  // top, bottom, left, right
#define Q_LO_ONLY 12
#define Q_CUBE 13
#define Q_BYPASS 14
#define Q_ROWS_AT 15  // first row slot of this scale in `rows`
#define INT_PARAMS 16
// Float parameters per scale.
#define F_RF 0  // 0..2: CSF factor of h, v, d
#define F_GAIN 3
#define F_COS_SQ 4
#define F_P 5
#define F_SCALE_IN 6  // 1 / 2^(bpc - 8) (scale 0)
#define FLOAT_PARAMS 8

#define CM_THREADS 256
#define ROW_VALUES 9

// The db2 analysis filters (libvmaf's dwt2_db2_coeffs_lo_s / _hi_s).
#define DB2_L0 0.482962913144690f
#define DB2_L1 0.836516303737469f
#define DB2_L2 0.224143868041857f
#define DB2_L3 -0.129409522550921f

// libvmaf's filter sum ((f0 s0 + f1 s1) + f2 s2) + f3 s3, without contraction.
__device__ __forceinline__ float taps(float f0, float f1, float f2, float f3, float s0, float s1,
                                      float s2, float s3) {
    float a = __fmul_rn(f0, s0);
    a = __fadd_rn(a, __fmul_rn(f1, s1));
    a = __fadd_rn(a, __fmul_rn(f2, s2));
    return __fadd_rn(a, __fmul_rn(f3, s3));
}

// Low pass: (L0, L1, L2, L3); high pass: (L3, -L2, L1, -L0).
__device__ __forceinline__ float taps_lo(float s0, float s1, float s2, float s3) {
    return taps(DB2_L0, DB2_L1, DB2_L2, DB2_L3, s0, s1, s2, s3);
}

__device__ __forceinline__ float taps_hi(float s0, float s1, float s2, float s3) {
    return taps(DB2_L3, -DB2_L2, DB2_L1, -DB2_L0, s0, s1, s2, s3);
}

// Source index of tap k (0..3) of output i along a side of n: 2i - 1 + k, -1 -> 1, n + m ->
// n - 1 - m.
__device__ __forceinline__ int tap_index(int i, int k, int n) {
    int x = 2 * i - 1 + k;
    x = x < 0 ? -x : x;
    x = x >= n ? 2 * n - x - 1 : x;
    return x < 0 ? 0 : (x > n - 1 ? n - 1 : x);
}

struct Src0 {
    Plane p;
    float scale;
    __device__ __forceinline__ float at(int x, int y) const {
        return __fsub_rn(__fmul_rn((float)sample(p, x, y), scale), 128.0f);
    }
};

struct SrcBand {
    const float *p;
    int w;
    __device__ __forceinline__ float at(int x, int y) const { return p[(int64_t)y * w + x]; }
};

// The four bands (a, h, v, d) of coefficient (i, j) of `src` (`in_w` x `in_h`).
template <typename S>
__device__ __forceinline__ void dwt_at(const S &src, int i, int j, int in_w, int in_h,
                                       float &a, float &h, float &v, float &d) {
    int y[4], x[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        y[k] = tap_index(i, k, in_h);
        x[k] = tap_index(j, k, in_w);
    }
    float lo[4], hi[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
        float s0 = src.at(x[c], y[0]), s1 = src.at(x[c], y[1]);
        float s2 = src.at(x[c], y[2]), s3 = src.at(x[c], y[3]);
        lo[c] = taps_lo(s0, s1, s2, s3);
        hi[c] = taps_hi(s0, s1, s2, s3);
    }
    a = taps_lo(lo[0], lo[1], lo[2], lo[3]);
    v = taps_hi(lo[0], lo[1], lo[2], lo[3]);
    h = taps_lo(hi[0], hi[1], hi[2], hi[3]);
    d = taps_hi(hi[0], hi[1], hi[2], hi[3]);
}

// Restored part of one coefficient (libvmaf's adm_decouple_s).
__device__ __forceinline__ float restore(float o, float t, bool angle, float gain) {
    float k = t / __fadd_rn(o, 1e-30f);
    k = k < 0.0f ? 0.0f : (k > 1.0f ? 1.0f : k);
    float r = __fmul_rn(k, o);
    if (angle && r > 0.0f) {
        r = fminf(__fmul_rn(r, gain), t);
    } else if (angle && r < 0.0f) {
        r = fmaxf(__fmul_rn(r, gain), t);
    }
    return r;
}

__device__ __forceinline__ float pnorm(float x, bool cube, float p) {
    return cube ? __fmul_rn(__fmul_rn(x, x), x) : powf(x, p);
}

template <typename S>
__device__ __forceinline__ void dwt_body(const S &ref, const S &dis, float *__restrict__ a_ref,
                                         float *__restrict__ a_dis, float *__restrict__ bands,
                                         int64_t plane_len, const int64_t *__restrict__ q,
                                         const float *__restrict__ f) {
    const int w = (int)q[Q_W], h = (int)q[Q_H];
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= h || j >= w) {
        return;
    }
    const int in_w = (int)q[Q_IN_W], in_h = (int)q[Q_IN_H];
    float ra, rh, rv, rd, ta, th, tv, td;
    dwt_at(ref, i, j, in_w, in_h, ra, rh, rv, rd);
    dwt_at(dis, i, j, in_w, in_h, ta, th, tv, td);
    const int64_t k = (int64_t)i * w + j;
    a_ref[k] = ra;
    a_dis[k] = ta;
    if (q[Q_LO_ONLY]) {
        return;
    }
    const float rf[3] = {f[F_RF], f[F_RF + 1], f[F_RF + 2]};
    if (i >= q[Q_REG] && i < q[Q_REG + 1] && j >= q[Q_REG + 2] && j < q[Q_REG + 3]) {
        const bool cube = q[Q_CUBE] != 0;
        const float p = f[F_P];
        const float o[3] = {rh, rv, rd};
#pragma unroll
        for (int b = 0; b < 3; ++b) {
            bands[(6 + b) * plane_len + k] = pnorm(fabsf(__fmul_rn(rf[b], o[b])), cube, p);
        }
    }
    if (i < q[Q_EXT] || i >= q[Q_EXT + 1] || j < q[Q_EXT + 2] || j >= q[Q_EXT + 3]) {
        return;
    }
    const float ot_dp = __fadd_rn(__fmul_rn(rh, th), __fmul_rn(rv, tv));
    const float o_mag = __fadd_rn(__fmul_rn(rh, rh), __fmul_rn(rv, rv));
    const float t_mag = __fadd_rn(__fmul_rn(th, th), __fmul_rn(tv, tv));
    const bool angle = ot_dp >= 0.0f &&
                       __fmul_rn(ot_dp, ot_dp) >= __fmul_rn(__fmul_rn(f[F_COS_SQ], o_mag), t_mag);
    const float gain = f[F_GAIN];
    const float o[3] = {rh, rv, rd};
    const float t[3] = {th, tv, td};
#pragma unroll
    for (int b = 0; b < 3; ++b) {
        const float r = restore(o[b], t[b], angle, gain);
        const float cr = __fmul_rn(rf[b], r);
        const float ca = __fmul_rn(rf[b], __fsub_rn(t[b], r));
        bands[b * plane_len + k] = cr;
        bands[(3 + b) * plane_len + k] = ca;
    }
}

extern "C" __global__ void float_adm_dwt_s0(const Plane ref, const Plane dis,
                                            float *__restrict__ a_ref, float *__restrict__ a_dis,
                                            float *__restrict__ bands, int64_t plane_len,
                                            const int64_t *__restrict__ q,
                                            const float *__restrict__ f) {
    const Src0 r{ref, f[F_SCALE_IN]};
    const Src0 d{dis, f[F_SCALE_IN]};
    dwt_body(r, d, a_ref, a_dis, bands, plane_len, q, f);
}

extern "C" __global__ void float_adm_dwt_s123(const float *__restrict__ src_ref,
                                              const float *__restrict__ src_dis,
                                              float *__restrict__ a_ref,
                                              float *__restrict__ a_dis,
                                              float *__restrict__ bands, int64_t plane_len,
                                              const int64_t *__restrict__ q,
                                              const float *__restrict__ f) {
    const int in_w = (int)q[Q_IN_W];
    const SrcBand r{src_ref, in_w};
    const SrcBand d{src_dis, in_w};
    dwt_body(r, d, a_ref, a_dis, bands, plane_len, q, f);
}

// Neighbour weight of a CSF-weighted coefficient in the masking threshold (|x| / 30).
__device__ __forceinline__ float wt(float x) { return __fmul_rn(0.0333333351f, fabsf(x)); }

// One band's threshold term of the masker plane `c`: the 8 neighbours' weights and the
// centre's |c| / 15, in libvmaf's order.
__device__ __forceinline__ float band_thr(const float *__restrict__ c, int w, int up, int i,
                                          int dn, int jm, int j, int jp) {
    const float *u = c + (int64_t)up * w, *m = c + (int64_t)i * w, *n = c + (int64_t)dn * w;
    float s = wt(u[jm]);
    s = __fadd_rn(s, wt(u[j]));
    s = __fadd_rn(s, wt(u[jp]));
    s = __fadd_rn(s, wt(m[jm]));
    s = __fadd_rn(s, __fmul_rn(0.0666666701f, fabsf(m[j])));
    s = __fadd_rn(s, wt(m[jp]));
    s = __fadd_rn(s, wt(n[jm]));
    s = __fadd_rn(s, wt(n[j]));
    return __fadd_rn(s, wt(n[jp]));
}

extern "C" __global__ void __launch_bounds__(CM_THREADS)
    float_adm_cm(const float *__restrict__ bands, int64_t plane_len,
                 const int64_t *__restrict__ q, const float *__restrict__ f,
                 float *__restrict__ rows) {
    __shared__ float scratch[ROW_VALUES * (CM_THREADS / 32)];
    const int w = (int)q[Q_W], h = (int)q[Q_H];
    const int i = (int)q[Q_REG] + blockIdx.x;
    const int left = (int)q[Q_REG + 2], right = (int)q[Q_REG + 3];
    const int up = i == 0 ? 1 : i - 1;
    const int dn = i + 1 == h ? h - 1 : i + 1;
    const bool cube = q[Q_CUBE] != 0, bypass = q[Q_BYPASS] != 0;
    const float p = f[F_P];
    float acc[ROW_VALUES];
#pragma unroll
    for (int v = 0; v < ROW_VALUES; ++v) {
        acc[v] = 0.0f;
    }
    for (int j = left + threadIdx.x; j < right; j += blockDim.x) {
        const int jm = j == 0 ? 1 : j - 1;
        const int jp = j + 1 == w ? w - 1 : j + 1;
        const int64_t k = (int64_t)i * w + j;
        float thr_dlm = 0.0f, thr_aim = 0.0f;
        if (!bypass) {
#pragma unroll
            for (int b = 0; b < 3; ++b) {
                thr_dlm = __fadd_rn(thr_dlm, band_thr(bands + (3 + b) * plane_len, w, up, i,
                                                      dn, jm, j, jp));
                thr_aim = __fadd_rn(thr_aim,
                                    band_thr(bands + b * plane_len, w, up, i, dn, jm, j, jp));
            }
        }
#pragma unroll
        for (int b = 0; b < 3; ++b) {
            acc[b] += bands[(6 + b) * plane_len + k];
            const float xr = fmaxf(__fsub_rn(fabsf(bands[b * plane_len + k]), thr_dlm), 0.0f);
            const float xa = fmaxf(__fsub_rn(fabsf(bands[(3 + b) * plane_len + k]), thr_aim), 0.0f);
            acc[3 + b] += pnorm(xr, cube, p);
            acc[6 + b] += pnorm(xa, cube, p);
        }
    }
    // Block sums in a fixed order: warp trees, then the warps in order.
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int v = 0; v < ROW_VALUES; ++v) {
        float s = acc[v];
        for (int off = 16; off > 0; off >>= 1) {
            s += __shfl_down_sync(0xffffffffu, s, off);
        }
        if (lane == 0) {
            scratch[warp * ROW_VALUES + v] = s;
        }
    }
    __syncthreads();
    if (threadIdx.x < ROW_VALUES) {
        const int warps = (blockDim.x + 31) >> 5;
        float s = 0.0f;
        for (int wi = 0; wi < warps; ++wi) {
            s += scratch[wi * ROW_VALUES + threadIdx.x];
        }
        rows[(q[Q_ROWS_AT] + blockIdx.x) * ROW_VALUES + threadIdx.x] = s;
    }
}

// Per scale and value, the sum over the scale's rows in row order (f32 bits in the low half
// of each of the 36 words). `counts[s]`: scored rows of scale s (0 for a skipped scale).
extern "C" __global__ void float_adm_finish(const float *__restrict__ rows,
                                            const int64_t *__restrict__ q,
                                            unsigned long long *__restrict__ out) {
    const int t = threadIdx.x;
    if (t >= 4 * ROW_VALUES) {
        return;
    }
    const int s = t / ROW_VALUES, v = t % ROW_VALUES;
    const int64_t *qs = q + s * INT_PARAMS;
    const int64_t n = qs[Q_LO_ONLY] ? 0 : qs[Q_REG + 1] - qs[Q_REG];
    const float *r = rows + qs[Q_ROWS_AT] * ROW_VALUES + v;
    float a = 0.0f;
    for (int64_t k = 0; k < n; ++k) {
        a += r[k * ROW_VALUES];
    }
    out[t] = (unsigned long long)__float_as_uint(a);
}
