// Integer ADM (Additive Distortion Measure / Detail Loss Metric) on the GPU.
//
// Bit-exact to the CPU reference src/features/adm/cpu/, itself bit-exact to Netflix/vmaf v3.2.0,
// libvmaf/src/feature/integer_adm.c. Every value computed here is an integer (or an exact
// comparison of doubles in the decouple angle test), and the only reductions are wrapping
// 64-bit integer sums, so the order of work does not change any bit. The floating-point
// finish (cube roots, normalisation, the sums over bands and scales) runs on the host in the
// CPU's order (src/features/adm/cuda.rs).
//
// Per frame and scale s (0..3) the host enqueues:
//   adm_dwt_s0 / _s1 / _s23      one level of the Daubechies-2 DWT of reference and distorted
//                                (blockIdx.z = 0 reference, 1 distorted), one thread per
//                                output coefficient, writing the A, H, V, D bands.
//   adm_decouple_s0 / _s123      per coefficient of the extended region: decouple into the
//                                restored (r) and additive (a) parts, the CSF of both, and the
//                                per-pixel sums (over the 3 bands) of the 1/30-filtered CSF
//                                magnitude (F) and of the 1/15 centre term (C) for both passes
//                                (DLM: masker a; AIM: masker r).
//   adm_cm_s0 / _s123            one block per row of the scored region: the masking threshold
//                                (3x3 box of F without its centre, plus C), the cubed masked
//                                sums of DLM and AIM and the denominator's cubed reference sum,
//                                each reduced per row, rounded-shifted as libvmaf does per row,
//                                and atomically added to 9 u64 words of this scale.
//
// Band storage: scale 0 keeps its approximation, detail, restored and additive bands in int16
// (every value stored there is already wrapped to 16 bits, as libvmaf stores it), scales 1..3
// in int32; the masking sums F and C are int32 at every scale. Row stride = band width. Multi-band
// arrays hold [h, v, d] (or F_dlm, C_dlm, F_aim, C_aim) one after the other, `band_len` elements
// of the scale's type apart: the host passes S at scale 0 and S / 2 at scales 1..3 (S = scale-0
// band size rounded up to even), so one buffer of 2S bytes per band serves every scale.
//
// Parameter table (int64, ADM_PARAMS per scale, filled once by the host; see src/features/adm/cuda.rs):
#define P_W 0          // band width at this scale (DWT output)
#define P_H 1          // band height
#define P_IN_W 2       // DWT input width
#define P_IN_H 3       // DWT input height
#define P_EXT_TOP 4    // extended region (decouple, CSF)
#define P_EXT_BOTTOM 5
#define P_EXT_LEFT 6
#define P_EXT_RIGHT 7
#define P_TOP 8        // scored region (CM, denominator)
#define P_BOTTOM 9
#define P_LEFT 10
#define P_RIGHT 11
#define P_IRF 12       // 12..14: fixed-point CSF factor of bands h, v, d
#define P_SUB 15       // 15..17: CM threshold shift per band (scale 0)
#define P_SQ 18        // 18..20: CM square shift per band
#define P_CUB 21       // 21..23: CM cube shift per band
#define P_SHIFT_INNER 24
#define P_DEN_SHIFT_SQ 25   // scales 1..3
#define P_DEN_SHIFT_CUB 26  // scales 1..3
#define P_DEN_SHIFT_ROW 27  // per-row shift of the denominator sum
#define P_SCALE 28
#define P_BPC 29
#define ADM_PARAMS 32

#include <stdint.h>

#include "common.cuh"

using vmafcmp::Plane;
using vmafcmp::sample;

#define ADM_ROW_THREADS 256

__device__ __forceinline__ int32_t wrap16(int32_t x) { return (int32_t)(int16_t)x; }

// Storage type of the bands at scale 0 (S0) and at scales 1..3.
template <bool S0>
struct Band {
    typedef int32_t T;
};
template <>
struct Band<true> {
    typedef int16_t T;
};

// Two's-complement wrapping helpers (signed overflow is undefined in C++).
__device__ __forceinline__ int32_t wadd32(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}
__device__ __forceinline__ int32_t wsub32(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a - (uint32_t)b);
}
__device__ __forceinline__ int32_t wabs32(int32_t a) {
    return (int32_t)(a < 0 ? 0u - (uint32_t)a : (uint32_t)a);
}
__device__ __forceinline__ int64_t wmul64(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a * (uint64_t)b);
}
__device__ __forceinline__ int64_t wadd64(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a + (uint64_t)b);
}
__device__ __forceinline__ uint64_t round_add(int64_t shift) {
    return shift == 0 ? 0ull : (1ull << (shift - 1));
}

// DWT tap index k (-1 ..= n+1) of a line of n (>= 3) samples: -1 reads 1, n + m reads n - 1 - m.
__device__ __forceinline__ int dwt_mirror(int k, int n) {
    return k < 0 ? -k : (k >= n ? 2 * n - k - 1 : k);
}

// Daubechies-2 analysis filters in Q15.
#define LO0 15826
#define LO1 27411
#define LO2 7345
#define LO3 (-4240)
#define HI0 (-4240)
#define HI1 (-7345)
#define HI2 27411
#define HI3 (-15826)
#define LO_SUM 46342

// ---------------------------------------------------------------------------------------------
// DWT
// ---------------------------------------------------------------------------------------------

// Scale 0: input planes (see Plane) of `bpc` bits, int32 wrapping arithmetic, 16-bit stores.
// One output coefficient (this thread's) of `src` into `a` and `hvd`.
__device__ __forceinline__ void dwt_s0_body(const Plane src, int16_t* __restrict__ a,
                                            int16_t* __restrict__ hvd, int64_t band_len,
                                            const int64_t* __restrict__ params) {
    const int64_t* p = params;  // scale 0
    const int ow = (int)p[P_W], oh = (int)p[P_H];
    const int w = (int)p[P_IN_W], h = (int)p[P_IN_H];
    const int bpc = (int)p[P_BPC];
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= oh || j >= ow) return;

    const uint32_t add = 1u << (bpc - 1);
    const uint32_t offset = (uint32_t)LO_SUM * add;
    int rows[4], cols[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        rows[k] = dwt_mirror(2 * i - 1 + k, h);
        cols[k] = dwt_mirror(2 * j - 1 + k, w);
    }
    int32_t vl[4], vh[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int32_t s0 = (int32_t)sample(src, cols[k], rows[0]);
        const int32_t s1 = (int32_t)sample(src, cols[k], rows[1]);
        const int32_t s2 = (int32_t)sample(src, cols[k], rows[2]);
        const int32_t s3 = (int32_t)sample(src, cols[k], rows[3]);
        const uint32_t sl = (uint32_t)(LO0 * s0) + (uint32_t)(LO1 * s1) + (uint32_t)(LO2 * s2) +
                            (uint32_t)(LO3 * s3) - offset;
        const uint32_t sh = (uint32_t)(HI0 * s0) + (uint32_t)(HI1 * s1) + (uint32_t)(HI2 * s2) +
                            (uint32_t)(HI3 * s3);
        vl[k] = wrap16((int32_t)(sl + add) >> bpc);
        vh[k] = wrap16((int32_t)(sh + add) >> bpc);
    }
    // |sums| < 2^31: no overflow in the horizontal pass.
    const int32_t al = LO0 * vl[0] + LO1 * vl[1] + LO2 * vl[2] + LO3 * vl[3];
    const int32_t ah = HI0 * vl[0] + HI1 * vl[1] + HI2 * vl[2] + HI3 * vl[3];
    const int32_t hl = LO0 * vh[0] + LO1 * vh[1] + LO2 * vh[2] + LO3 * vh[3];
    const int32_t hh = HI0 * vh[0] + HI1 * vh[1] + HI2 * vh[2] + HI3 * vh[3];
    const int64_t o = (int64_t)i * ow + j;
    a[o] = (int16_t)((al + 32768) >> 16);
    hvd[o] = (int16_t)((hl + 32768) >> 16);                 // h: vertical high, horizontal low
    hvd[band_len + o] = (int16_t)((ah + 32768) >> 16);      // v: vertical low, horizontal high
    hvd[2 * band_len + o] = (int16_t)((hh + 32768) >> 16);  // d
}

extern "C" __global__ void adm_dwt_s0(const Plane ref, const Plane dis,
                                      int16_t* __restrict__ a_ref, int16_t* __restrict__ a_dis,
                                      int16_t* __restrict__ hvd_ref, int16_t* __restrict__ hvd_dis,
                                      int64_t band_len, const int64_t* __restrict__ params) {
    // A copy, not a reference: a reference to a kernel parameter puts both on the stack
    // (64 bytes of local memory per thread, reserved for every resident thread).
    const Plane src = blockIdx.z == 0 ? ref : dis;
    dwt_s0_body(src, blockIdx.z == 0 ? a_ref : a_dis, blockIdx.z == 0 ? hvd_ref : hvd_dis,
                band_len, params);
}

// Scales 1..3: approximation band of the previous scale (int16 at scale 1, int32 after), int64
// arithmetic, int32 output.
template <typename Src>
__device__ __forceinline__ void dwt_s123_body(const Src* __restrict__ src_ref,
                                              const Src* __restrict__ src_dis,
                                              int32_t* __restrict__ a_ref,
                                              int32_t* __restrict__ a_dis,
                                              int32_t* __restrict__ hvd_ref,
                                              int32_t* __restrict__ hvd_dis, int64_t band_len,
                                              const int64_t* __restrict__ p) {
    const int ow = (int)p[P_W], oh = (int)p[P_H];
    const int w = (int)p[P_IN_W], h = (int)p[P_IN_H];
    const int scale = (int)p[P_SCALE];
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= oh || j >= ow) return;
    const Src* src = blockIdx.z == 0 ? src_ref : src_dis;
    int32_t* a = blockIdx.z == 0 ? a_ref : a_dis;
    int32_t* hvd = blockIdx.z == 0 ? hvd_ref : hvd_dis;

    const int64_t vadd = scale == 1 ? 0 : 32768;
    const int vshift = scale == 1 ? 0 : 16;
    const int64_t hadd = scale == 2 ? 32768 : 16384;
    const int hshift = scale == 2 ? 16 : 15;
    int rows[4], cols[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        rows[k] = dwt_mirror(2 * i - 1 + k, h);
        cols[k] = dwt_mirror(2 * j - 1 + k, w);
    }
    int64_t vl[4], vh[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int64_t s0 = src[(int64_t)rows[0] * w + cols[k]];
        const int64_t s1 = src[(int64_t)rows[1] * w + cols[k]];
        const int64_t s2 = src[(int64_t)rows[2] * w + cols[k]];
        const int64_t s3 = src[(int64_t)rows[3] * w + cols[k]];
        const int64_t sl = LO0 * s0 + LO1 * s1 + LO2 * s2 + LO3 * s3;
        const int64_t sh = HI0 * s0 + HI1 * s1 + HI2 * s2 + HI3 * s3;
        vl[k] = (int32_t)((sl + vadd) >> vshift);
        vh[k] = (int32_t)((sh + vadd) >> vshift);
    }
    const int64_t al = LO0 * vl[0] + LO1 * vl[1] + LO2 * vl[2] + LO3 * vl[3];
    const int64_t ah = HI0 * vl[0] + HI1 * vl[1] + HI2 * vl[2] + HI3 * vl[3];
    const int64_t hl = LO0 * vh[0] + LO1 * vh[1] + LO2 * vh[2] + LO3 * vh[3];
    const int64_t hh = HI0 * vh[0] + HI1 * vh[1] + HI2 * vh[2] + HI3 * vh[3];
    const int64_t o = (int64_t)i * ow + j;
    a[o] = (int32_t)((al + hadd) >> hshift);
    hvd[o] = (int32_t)((hl + hadd) >> hshift);
    hvd[band_len + o] = (int32_t)((ah + hadd) >> hshift);
    hvd[2 * band_len + o] = (int32_t)((hh + hadd) >> hshift);
}

// Scale 1 reads the int16 approximation band of scale 0.
extern "C" __global__ void adm_dwt_s1(const int16_t* __restrict__ src_ref,
                                      const int16_t* __restrict__ src_dis,
                                      int32_t* __restrict__ a_ref, int32_t* __restrict__ a_dis,
                                      int32_t* __restrict__ hvd_ref, int32_t* __restrict__ hvd_dis,
                                      int64_t band_len, const int64_t* __restrict__ p) {
    dwt_s123_body<int16_t>(src_ref, src_dis, a_ref, a_dis, hvd_ref, hvd_dis, band_len, p);
}

// Scales 2 and 3 read the int32 approximation band of the scale before.
extern "C" __global__ void adm_dwt_s23(const int32_t* __restrict__ src_ref,
                                       const int32_t* __restrict__ src_dis,
                                       int32_t* __restrict__ a_ref, int32_t* __restrict__ a_dis,
                                       int32_t* __restrict__ hvd_ref,
                                       int32_t* __restrict__ hvd_dis, int64_t band_len,
                                       const int64_t* __restrict__ p) {
    dwt_s123_body<int32_t>(src_ref, src_dis, a_ref, a_dis, hvd_ref, hvd_dis, band_len, p);
}

// ---------------------------------------------------------------------------------------------
// Decouple + CSF
// ---------------------------------------------------------------------------------------------

// libvmaf's div_lookup: 2^30 / x truncated, sign of x, 0 at x == 0; x in -32768..=32768.
__device__ __forceinline__ int64_t div_lookup(int32_t x) {
    if (x == 0) return 0;
    const int32_t ax = x < 0 ? -x : x;
    const int32_t r = (int32_t)((1u << 30) / (uint32_t)ax);
    return x < 0 ? -r : r;
}

// k = clamp(t / o, 0, 1) in Q15.
template <bool S0>
__device__ __forceinline__ int64_t ratio(int32_t o, int32_t t) {
    int64_t k;
    if (S0) {
        const int64_t r = div_lookup(wrap16(o));
        k = (int64_t)(int32_t)((r * (int64_t)t + 16384) >> 15);
    } else {
        const uint32_t abs = o < 0 ? 0u - (uint32_t)o : (uint32_t)o;
        const bool big = abs >= 32768u;
        const uint32_t shift = big ? ((17u - (uint32_t)__clz((int)abs)) & 31u) : 0u;
        const uint32_t round = big ? (1u << ((shift - 1u) & 31u)) : 0u;
        uint32_t msb = (abs + round) >> shift;
        msb = msb < 32768u ? msb : 32768u;
        const int64_t r = div_lookup((int32_t)msb);
        int64_t prod = r * (int64_t)t;
        if (o < 0) prod = (int64_t)(0ull - (uint64_t)prod);
        k = (prod + (1ll << (14 + shift))) >> (15 + shift);
    }
    if (o == 0) k = 32768;
    return k < 0 ? 0 : (k > 32768 ? 32768 : k);
}

// Rust's saturating f64 -> i32 cast (NaN -> 0).
__device__ __forceinline__ int32_t sat_i32(double v) {
    if (!(v == v)) return 0;
    if (v >= 2147483647.0) return 2147483647;
    if (v <= -2147483648.0) return (-2147483647 - 1);
    return (int32_t)v;
}

template <bool S0>
__device__ __forceinline__ int32_t restore(int32_t o, int32_t t, bool angle_flag, int int_gain,
                                           double gain, int64_t gain_i) {
    const int64_t k = ratio<S0>(o, t);
    const int32_t rst = (int32_t)((k * (int64_t)o + 16384) >> 15);
    int32_t enh;
    if (int_gain) {
        const int64_t scaled = (int64_t)rst * gain_i;
        const int64_t tt = t;
        enh = (int32_t)(o > 0 ? (scaled < tt ? scaled : tt) : (scaled > tt ? scaled : tt));
    } else {
        const double scaled = __dmul_rn((double)rst, gain);
        const double tf = (double)t;
        const double lo = scaled < tf ? scaled : tf;
        const double hi = scaled > tf ? scaled : tf;
        enh = sat_i32(o > 0 ? lo : hi);
    }
    return (angle_flag && k > 0 && o != 0) ? enh : rst;
}

// CSF of one coefficient of band t: writes the 1/30-filtered magnitude and the 1/15 centre term.
template <bool S0>
__device__ __forceinline__ void csf(int32_t x, int t, int64_t irf, int32_t& flt, int32_t& ctr) {
    if (S0) {
        const int32_t add = t == 2 ? 65535 : 16384;
        const int shift = t == 2 ? 17 : 15;
        const int32_t v = wrap16(((int32_t)irf * x + add) >> shift);
        const int32_t av = v < 0 ? -v : v;
        flt = wrap16((4369 * av + 2048) >> 12);
        ctr = wrap16((8738 * av + 2048) >> 12);
    } else {
        const int32_t v = (int32_t)(wadd64(wmul64(irf, (int64_t)x), 1ll << 27) >> 28);
        const int64_t av = (int64_t)wabs32(v);
        flt = (int32_t)((143165577ll * av + (int64_t)INT32_MIN) >> 32);
        ctr = (int32_t)((286331153ll * av + (int64_t)INT32_MIN) >> 32);
    }
}

// One thread per coefficient of the extended region. Writes dec_r[3], dec_a[3] (bands h, v, d,
// `band_len` apart) and fc[4] = {F_dlm, C_dlm, F_aim, C_aim}.
template <bool S0>
__device__ __forceinline__ void decouple_body(const typename Band<S0>::T* __restrict__ hvd_ref,
                                              const typename Band<S0>::T* __restrict__ hvd_dis,
                                              typename Band<S0>::T* __restrict__ dec_r,
                                              typename Band<S0>::T* __restrict__ dec_a,
                                              int32_t* __restrict__ fc, int64_t band_len,
                                              const int64_t* __restrict__ p, double cos_sq,
                                              double gain, int64_t gain_i, int int_gain) {
    const int w = (int)p[P_W];
    const int i = (int)p[P_EXT_TOP] + (int)(blockIdx.y * blockDim.y + threadIdx.y);
    const int j = (int)p[P_EXT_LEFT] + (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= (int)p[P_EXT_BOTTOM] || j >= (int)p[P_EXT_RIGHT]) return;
    const int64_t idx = (int64_t)i * w + j;
    int32_t o[3], t[3];
#pragma unroll
    for (int b = 0; b < 3; b++) {
        o[b] = hvd_ref[b * band_len + idx];
        t[b] = hvd_dis[b * band_len + idx];
    }
    const int64_t ot_dp = wadd64((int64_t)o[0] * t[0], (int64_t)o[1] * t[1]);
    const int64_t o_mag_sq = wadd64((int64_t)o[0] * o[0], (int64_t)o[1] * o[1]);
    const int64_t t_mag_sq = wadd64((int64_t)t[0] * t[0], (int64_t)t[1] * t[1]);
    const double dp = (double)__ll2float_rn(ot_dp) / 4096.0;
    const double om = (double)__ll2float_rn(o_mag_sq) / 4096.0;
    const double tm = (double)__ll2float_rn(t_mag_sq) / 4096.0;
    const bool angle_flag = dp >= 0.0 && __dmul_rn(dp, dp) >= __dmul_rn(__dmul_rn(cos_sq, om), tm);

    int32_t f_dlm = 0, c_dlm = 0, f_aim = 0, c_aim = 0;
#pragma unroll
    for (int b = 0; b < 3; b++) {
        int32_t r = restore<S0>(o[b], t[b], angle_flag, int_gain, gain, gain_i);
        int32_t a;
        if (S0) {
            r = wrap16(r);
            a = wrap16(wsub32(t[b], r));
        } else {
            a = wsub32(t[b], r);
        }
        dec_r[b * band_len + idx] = (typename Band<S0>::T)r;  // exact: S0 values are wrapped
        dec_a[b * band_len + idx] = (typename Band<S0>::T)a;
        const int64_t irf = p[P_IRF + b];
        int32_t flt, ctr;
        csf<S0>(a, b, irf, flt, ctr);  // DLM: the additive part masks
        f_dlm = wadd32(f_dlm, flt);
        c_dlm = wadd32(c_dlm, ctr);
        csf<S0>(r, b, irf, flt, ctr);  // AIM: the restored part masks
        f_aim = wadd32(f_aim, flt);
        c_aim = wadd32(c_aim, ctr);
    }
    fc[idx] = f_dlm;
    fc[band_len + idx] = c_dlm;
    fc[2 * band_len + idx] = f_aim;
    fc[3 * band_len + idx] = c_aim;
}

extern "C" __global__ void adm_decouple_s0(const int16_t* __restrict__ hvd_ref,
                                           const int16_t* __restrict__ hvd_dis,
                                           int16_t* __restrict__ dec_r,
                                           int16_t* __restrict__ dec_a, int32_t* __restrict__ fc,
                                           int64_t band_len, const int64_t* __restrict__ p,
                                           double cos_sq, double gain, int64_t gain_i,
                                           int32_t int_gain) {
    decouple_body<true>(hvd_ref, hvd_dis, dec_r, dec_a, fc, band_len, p, cos_sq, gain, gain_i,
                        int_gain);
}

extern "C" __global__ void adm_decouple_s123(const int32_t* __restrict__ hvd_ref,
                                             const int32_t* __restrict__ hvd_dis,
                                             int32_t* __restrict__ dec_r,
                                             int32_t* __restrict__ dec_a,
                                             int32_t* __restrict__ fc, int64_t band_len,
                                             const int64_t* __restrict__ p, double cos_sq,
                                             double gain, int64_t gain_i, int32_t int_gain) {
    decouple_body<false>(hvd_ref, hvd_dis, dec_r, dec_a, fc, band_len, p, cos_sq, gain, gain_i,
                         int_gain);
}

// ---------------------------------------------------------------------------------------------
// Contrast masking and denominator: one block per scored row
// ---------------------------------------------------------------------------------------------

// Masking threshold at (i, j) from F (8 neighbours, mirrored as libvmaf: row -1 reads 1, row h
// reads h - 1, same for columns) and the centre term C.
__device__ __forceinline__ int32_t threshold(const int32_t* __restrict__ f,
                                             const int32_t* __restrict__ c, int w, int iu, int i,
                                             int id, int jm, int j, int jp) {
    const int64_t ru = (int64_t)iu * w, rc = (int64_t)i * w, rd = (int64_t)id * w;
    int32_t s = f[ru + jm];
    s = wadd32(s, f[ru + j]);
    s = wadd32(s, f[ru + jp]);
    s = wadd32(s, f[rc + jm]);
    s = wadd32(s, c[rc + j]);
    s = wadd32(s, f[rc + jp]);
    s = wadd32(s, f[rd + jm]);
    s = wadd32(s, f[rd + j]);
    s = wadd32(s, f[rd + jp]);
    return s;
}

// Cubed, threshold-reduced CSF value of a masked coefficient x.
template <bool S0>
__device__ __forceinline__ int64_t cm_term(int32_t x, int32_t thr, int64_t irf, int sub, int sq,
                                           int cub) {
    int32_t v;
    if (S0) {
        v = wsub32(wabs32((int32_t)irf * x), (int32_t)((uint32_t)thr << sub));
    } else {
        v = (int32_t)(wadd64(wmul64(x, irf), 1ll << 27) >> 28);
        v = wsub32(wabs32(v), thr);
    }
    v = v > 0 ? v : 0;
    const int64_t add_sq = 1ll << (sq - 1);
    const int32_t v_sq = (int32_t)(((int64_t)v * v + add_sq) >> sq);
    return ((int64_t)v_sq * v + (int64_t)round_add(cub)) >> cub;
}

template <bool S0>
__device__ __forceinline__ uint64_t den_term(int32_t x, int shift_sq, int shift_cub) {
    if (S0) {
        const uint64_t a = (uint64_t)wabs32(wrap16(x));
        return a * a * a;
    } else {
        const uint64_t a = (uint64_t)(x < 0 ? 0u - (uint32_t)x : (uint32_t)x);
        const uint64_t sq = (a * a + (1ull << shift_sq)) >> shift_sq;
        return (sq * a + round_add(shift_cub)) >> shift_cub;
    }
}

// A ladder's renditions in one launch (see "A ladder's renditions, batched" below).
#define ADM_LADDER_MAX 8

struct AdmLadderPlanes {
    Plane p[ADM_LADDER_MAX];
};
struct AdmLadderAccs {
    unsigned long long* p[ADM_LADDER_MAX];
};

// acc: 9 u64 words of this scale: [den h, v, d, dlm h, v, d, aim h, v, d]. The denominator
// reads the reference alone: DEN = 1 adds it to `acc` (a pair), 0 leaves it out, 2 adds it to
// the words of each of the `n` renditions `all->p[z]` (a ladder computes it once, in block
// z = 0, for all of them: the same wrapping sums, so the same bits).
template <bool S0, int DEN>
__device__ __forceinline__ void cm_body(const typename Band<S0>::T* __restrict__ hvd_ref,
                                        const typename Band<S0>::T* __restrict__ dec_r,
                                        const typename Band<S0>::T* __restrict__ dec_a,
                                        const int32_t* __restrict__ fc, int64_t band_len,
                                        const int64_t* __restrict__ p,
                                        unsigned long long* __restrict__ acc,
                                        const AdmLadderAccs* all, int n) {
    const int w = (int)p[P_W], h = (int)p[P_H];
    const int i = (int)p[P_TOP] + (int)blockIdx.x;
    const int left = (int)p[P_LEFT], right = (int)p[P_RIGHT];
    const int iu = i == 0 ? 1 : i - 1;
    const int id = i + 1 >= h ? h - 1 : i + 1;
    const int64_t irf0 = p[P_IRF], irf1 = p[P_IRF + 1], irf2 = p[P_IRF + 2];
    const int sub0 = (int)p[P_SUB], sub1 = (int)p[P_SUB + 1], sub2 = (int)p[P_SUB + 2];
    const int sq0 = (int)p[P_SQ], sq1 = (int)p[P_SQ + 1], sq2 = (int)p[P_SQ + 2];
    const int cub0 = (int)p[P_CUB], cub1 = (int)p[P_CUB + 1], cub2 = (int)p[P_CUB + 2];
    const int dsq = (int)p[P_DEN_SHIFT_SQ], dcub = (int)p[P_DEN_SHIFT_CUB];

    uint64_t s[9];
#pragma unroll
    for (int k = 0; k < 9; k++) s[k] = 0;
    const int32_t* f_dlm = fc;
    const int32_t* c_dlm = fc + band_len;
    const int32_t* f_aim = fc + 2 * band_len;
    const int32_t* c_aim = fc + 3 * band_len;
    for (int j = left + (int)threadIdx.x; j < right; j += blockDim.x) {
        const int jm = j == 0 ? 1 : j - 1;
        const int jp = j + 1 >= w ? w - 1 : j + 1;
        const int64_t idx = (int64_t)i * w + j;
        if (DEN != 0) {
            s[0] += den_term<S0>(hvd_ref[idx], dsq, dcub);
            s[1] += den_term<S0>(hvd_ref[band_len + idx], dsq, dcub);
            s[2] += den_term<S0>(hvd_ref[2 * band_len + idx], dsq, dcub);
        }
        const int32_t thr_dlm = threshold(f_dlm, c_dlm, w, iu, i, id, jm, j, jp);
        const int32_t thr_aim = threshold(f_aim, c_aim, w, iu, i, id, jm, j, jp);
        s[3] += (uint64_t)cm_term<S0>(dec_r[idx], thr_dlm, irf0, sub0, sq0, cub0);
        s[4] += (uint64_t)cm_term<S0>(dec_r[band_len + idx], thr_dlm, irf1, sub1, sq1, cub1);
        s[5] += (uint64_t)cm_term<S0>(dec_r[2 * band_len + idx], thr_dlm, irf2, sub2, sq2, cub2);
        s[6] += (uint64_t)cm_term<S0>(dec_a[idx], thr_aim, irf0, sub0, sq0, cub0);
        s[7] += (uint64_t)cm_term<S0>(dec_a[band_len + idx], thr_aim, irf1, sub1, sq1, cub1);
        s[8] += (uint64_t)cm_term<S0>(dec_a[2 * band_len + idx], thr_aim, irf2, sub2, sq2, cub2);
    }
    // Wrapping u64 sums: any order gives the same bits.
    __shared__ uint64_t part[ADM_ROW_THREADS / 32][9];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < 9; k++) {
        uint64_t v = s[k];
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0) part[warp][k] = v;
    }
    __syncthreads();
    if (threadIdx.x < 9) {
        const int k = threadIdx.x;
        uint64_t v = 0;
        for (int wi = 0; wi < (int)(blockDim.x >> 5); wi++) v += part[wi][k];
        if (k < 3) {
            const int sh = (int)p[P_DEN_SHIFT_ROW];
            const uint64_t row = (v + round_add(sh)) >> sh;
            if (DEN == 1) {
                atomicAdd(acc + k, (unsigned long long)row);
            } else if (DEN == 2) {
                for (int z = 0; z < n && z < ADM_LADDER_MAX; z++) {
                    atomicAdd(all->p[z] + k, (unsigned long long)row);
                }
            }
        } else {
            const int sh = (int)p[P_SHIFT_INNER];
            const uint64_t row = (uint64_t)((int64_t)(v + round_add(sh)) >> sh);
            atomicAdd(acc + k, (unsigned long long)row);
        }
    }
}

extern "C" __global__ void __launch_bounds__(ADM_ROW_THREADS)
    adm_cm_s0(const int16_t* __restrict__ hvd_ref, const int16_t* __restrict__ dec_r,
              const int16_t* __restrict__ dec_a, const int32_t* __restrict__ fc, int64_t band_len,
              const int64_t* __restrict__ p, unsigned long long* __restrict__ acc) {
    cm_body<true, 1>(hvd_ref, dec_r, dec_a, fc, band_len, p, acc, nullptr, 0);
}

extern "C" __global__ void __launch_bounds__(ADM_ROW_THREADS)
    adm_cm_s123(const int32_t* __restrict__ hvd_ref, const int32_t* __restrict__ dec_r,
                const int32_t* __restrict__ dec_a, const int32_t* __restrict__ fc,
                int64_t band_len, const int64_t* __restrict__ p,
                unsigned long long* __restrict__ acc) {
    cm_body<false, 1>(hvd_ref, dec_r, dec_a, fc, band_len, p, acc, nullptr, 0);
}

// ---------------------------------------------------------------------------------------------
// A ladder's renditions, batched
// ---------------------------------------------------------------------------------------------
// One launch per step for up to ADM_LADDER_MAX distorted frames of one ladder frame: block z
// works on rendition z, in its own scratch, `z * stride` elements (of the buffer's type) past
// each base pointer, with the same bodies as the pair kernels (so the same bits). The
// reference's bands are shared; its DWT runs through the pair kernels with grid z = 1.


// Scale 0 of each distorted plane `dis.p[z]` into `a + z * a_stride`, `hvd + z * hvd_stride`.
extern "C" __global__ void adm_dwt_s0_ladder(const AdmLadderPlanes dis, int16_t* __restrict__ a,
                                             int64_t a_stride, int16_t* __restrict__ hvd,
                                             int64_t hvd_stride, int64_t band_len,
                                             const int64_t* __restrict__ params) {
    const int z = blockIdx.z;
    const Plane src = dis.p[z];
    dwt_s0_body(src, a + z * a_stride, hvd + z * hvd_stride, band_len, params);
}

// Scales 1..3 of each rendition: source `src + z * src_stride` (the scale before's
// approximation band), outputs as adm_dwt_s0_ladder.
template <typename Src>
__device__ __forceinline__ void dwt_s123_ladder(const Src* src, int64_t src_stride, int32_t* a,
                                                int64_t a_stride, int32_t* hvd,
                                                int64_t hvd_stride, int64_t band_len,
                                                const int64_t* __restrict__ p) {
    const int64_t z = blockIdx.z;
    const Src* s = src + z * src_stride;
    int32_t* az = a + z * a_stride;
    int32_t* hz = hvd + z * hvd_stride;
    dwt_s123_body<Src>(s, s, az, az, hz, hz, band_len, p);
}

extern "C" __global__ void adm_dwt_s1_ladder(const int16_t* src, int64_t src_stride, int32_t* a,
                                             int64_t a_stride, int32_t* hvd, int64_t hvd_stride,
                                             int64_t band_len, const int64_t* __restrict__ p) {
    dwt_s123_ladder<int16_t>(src, src_stride, a, a_stride, hvd, hvd_stride, band_len, p);
}

extern "C" __global__ void adm_dwt_s23_ladder(const int32_t* src, int64_t src_stride, int32_t* a,
                                              int64_t a_stride, int32_t* hvd, int64_t hvd_stride,
                                              int64_t band_len, const int64_t* __restrict__ p) {
    dwt_s123_ladder<int32_t>(src, src_stride, a, a_stride, hvd, hvd_stride, band_len, p);
}

// Decouple + CSF of each rendition: its detail bands, restored and additive parts
// `z * dis_stride` past `hvd_dis`, `dec_r`, `dec_a`, its masking sums `z * fc_stride` past `fc`.
template <bool S0>
__device__ __forceinline__ void decouple_ladder(const typename Band<S0>::T* hvd_ref,
                                                const typename Band<S0>::T* hvd_dis,
                                                typename Band<S0>::T* dec_r,
                                                typename Band<S0>::T* dec_a, int64_t dis_stride,
                                                int32_t* fc, int64_t fc_stride, int64_t band_len,
                                                const int64_t* p, double cos_sq, double gain,
                                                int64_t gain_i, int int_gain) {
    const int64_t z = blockIdx.z;
    decouple_body<S0>(hvd_ref, hvd_dis + z * dis_stride, dec_r + z * dis_stride,
                      dec_a + z * dis_stride, fc + z * fc_stride, band_len, p, cos_sq, gain,
                      gain_i, int_gain);
}

extern "C" __global__ void adm_decouple_s0_ladder(const int16_t* hvd_ref, const int16_t* hvd_dis,
                                                  int16_t* dec_r, int16_t* dec_a,
                                                  int64_t dis_stride, int32_t* fc,
                                                  int64_t fc_stride, int64_t band_len,
                                                  const int64_t* p, double cos_sq, double gain,
                                                  int64_t gain_i, int32_t int_gain) {
    decouple_ladder<true>(hvd_ref, hvd_dis, dec_r, dec_a, dis_stride, fc, fc_stride, band_len, p,
                          cos_sq, gain, gain_i, int_gain);
}

extern "C" __global__ void adm_decouple_s123_ladder(const int32_t* hvd_ref, const int32_t* hvd_dis,
                                                    int32_t* dec_r, int32_t* dec_a,
                                                    int64_t dis_stride, int32_t* fc,
                                                    int64_t fc_stride, int64_t band_len,
                                                    const int64_t* p, double cos_sq, double gain,
                                                    int64_t gain_i, int32_t int_gain) {
    decouple_ladder<false>(hvd_ref, hvd_dis, dec_r, dec_a, dis_stride, fc, fc_stride, band_len,
                           p, cos_sq, gain, gain_i, int_gain);
}

// Masking sums of each of `n` renditions (scratch as decouple_ladder) into its 9 words
// `acc.p[z]`; the reference's denominator once, by block z = 0, into every rendition's words.
template <bool S0>
__device__ __forceinline__ void cm_ladder(const typename Band<S0>::T* hvd_ref,
                                          const typename Band<S0>::T* dec_r,
                                          const typename Band<S0>::T* dec_a,
                                          int64_t dis_stride, const int32_t* fc,
                                          int64_t fc_stride, int64_t band_len, const int64_t* p,
                                          const AdmLadderAccs& acc, int n) {
    const int64_t z = blockIdx.z;
    if (z == 0) {
        cm_body<S0, 2>(hvd_ref, dec_r, dec_a, fc, band_len, p, acc.p[0], &acc, n);
    } else {
        cm_body<S0, 0>(hvd_ref, dec_r + z * dis_stride, dec_a + z * dis_stride,
                       fc + z * fc_stride, band_len, p, acc.p[z], &acc, n);
    }
}

extern "C" __global__ void __launch_bounds__(ADM_ROW_THREADS)
    adm_cm_s0_ladder(const int16_t* hvd_ref, const int16_t* dec_r, const int16_t* dec_a,
                     int64_t dis_stride, const int32_t* fc, int64_t fc_stride, int64_t band_len,
                     const int64_t* __restrict__ p, const AdmLadderAccs acc, int32_t n) {
    cm_ladder<true>(hvd_ref, dec_r, dec_a, dis_stride, fc, fc_stride, band_len, p, acc, n);
}

extern "C" __global__ void __launch_bounds__(ADM_ROW_THREADS)
    adm_cm_s123_ladder(const int32_t* hvd_ref, const int32_t* dec_r, const int32_t* dec_a,
                       int64_t dis_stride, const int32_t* fc, int64_t fc_stride,
                       int64_t band_len, const int64_t* __restrict__ p, const AdmLadderAccs acc,
                       int32_t n) {
    cm_ladder<false>(hvd_ref, dec_r, dec_a, dis_stride, fc, fc_stride, band_len, p, acc, n);
}
