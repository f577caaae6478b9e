// Integer VIF (visual information fidelity): per-scale statistic and the low-pass + decimate
// step between scales, bit-exact to libvmaf's integer path.
//
// The statistic kernels add four 64-bit integer sums per scale (num_log, den_log,
// num_non_log, den_non_log, in that order) to `acc[0..4)`; integer sums do not depend on the
// order of the additions, and the host combines them into libvmaf's float numerator and
// denominator exactly as the CPU does (src/features/vif/cuda.rs). The per-pixel gain uses double
// precision with explicitly rounded operations (no fused multiply-add), as libvmaf's C does.
//
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_vif.c (vif_statistic_8/16,
// vif_subsample_rd_8/16, log2_32/log2_64); oracle: src/features/vif/cpu/.

#include "common.cuh"

using namespace vmafcmp;

namespace vif_detail {

constexpr int TW = 32;  // output columns per block
constexpr int TH = 16;  // output rows per block
// Blocks of a statistic kernel resident per SM, asked of the compiler (at most 51 registers a
// thread): the 8-bit scale 0 of a ladder took 60 and ran 4 blocks per SM, instruction-bound.
constexpr int STAT_MIN_BLOCKS = 5;

__constant__ uint16_t VIF_FILTER0[17] = {489,  935,  1640, 2640, 3896, 5274, 6547, 7455, 7784,
                                         7455, 6547, 5274, 3896, 2640, 1640, 935,  489};
__constant__ uint16_t VIF_FILTER1[9] = {1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244};
__constant__ uint16_t VIF_FILTER2[5] = {3571, 16004, 26386, 16004, 3571};
__constant__ uint16_t VIF_FILTER3[3] = {10904, 43728, 10904};

template <int SCALE>
struct Filter;
template <>
struct Filter<0> {
    static constexpr int LEN = 17;
    __device__ static __forceinline__ uint32_t tap(int k) { return VIF_FILTER0[k]; }
};
template <>
struct Filter<1> {
    static constexpr int LEN = 9;
    __device__ static __forceinline__ uint32_t tap(int k) { return VIF_FILTER1[k]; }
};
template <>
struct Filter<2> {
    static constexpr int LEN = 5;
    __device__ static __forceinline__ uint32_t tap(int k) { return VIF_FILTER2[k]; }
};
template <>
struct Filter<3> {
    static constexpr int LEN = 3;
    __device__ static __forceinline__ uint32_t tap(int k) { return VIF_FILTER3[k]; }
};

// libvmaf's sigma_nsq: noise variance 2.0 in Q16.
constexpr int32_t SIGMA_NSQ = 65536 << 1;

// log2 of x >= 2^15 in Q11 from the top 16 bits (libvmaf log2_32).
__device__ __forceinline__ int32_t log2_32(const uint16_t *__restrict__ tab, uint32_t x) {
    const int k = 16 - __clz(x);
    const uint32_t idx = (k >= 0 && k < 32) ? (x >> k) : 0u;
    return (int32_t)__ldg(tab + (uint16_t)idx) + 2048 * k;
}

// log2 of x >= 2^17 in Q11 (libvmaf log2_64).
__device__ __forceinline__ int64_t log2_64(const uint16_t *__restrict__ tab, uint64_t x) {
    const int k = 48 - __clzll(x);
    const uint64_t idx = (k >= 0 && k < 64) ? (x >> k) : 0ull;
    return (int64_t)__ldg(tab + (uint16_t)idx) + 2048 * (int64_t)k;
}

struct Accum {
    int64_t num_log = 0;
    int64_t den_log = 0;
    int64_t num_non_log = 0;
    int64_t den_non_log = 0;
};

// The per-pixel information terms (body of libvmaf's statistic loop).
__device__ __forceinline__ void pixel(int32_t sigma1_sq, int32_t sigma2_sq, int32_t sigma12,
                                      Accum &acc, const uint16_t *__restrict__ tab,
                                      double limit) {
    if (sigma1_sq >= SIGMA_NSQ) {
        const uint32_t t = (uint32_t)SIGMA_NSQ + (uint32_t)sigma1_sq;
        acc.den_log += (int64_t)(log2_32(tab, t) - 2048 * 17);
        if (sigma12 > 0 && sigma2_sq > 0) {
            const double eps = 65536.0 * 1.0e-10;
            double g = __ddiv_rn((double)sigma12, __dadd_rn((double)sigma1_sq, eps));
            // Truncating, saturating conversion (NaN -> 0), as Rust's `as i32`.
            int32_t sv_sq =
                __double2int_rz(__dsub_rn((double)sigma2_sq, __dmul_rn(g, (double)sigma12)));
            sv_sq = sv_sq < 0 ? 0 : sv_sq;
            g = g < limit ? g : limit;
            const uint32_t numer1 = (uint32_t)sv_sq + (uint32_t)SIGMA_NSQ;
            const int64_t gg = __double2ll_rz(__dmul_rn(__dmul_rn(g, g), (double)sigma1_sq));
            const uint64_t numer1_tmp = (uint64_t)gg + (uint64_t)numer1;
            acc.num_log += log2_64(tab, numer1_tmp) - log2_64(tab, (uint64_t)numer1);
        }
    } else {
        acc.num_non_log += sigma2_sq;
        acc.den_non_log += 1;
    }
}

// The type stat_tile sums vertical second moments in (see there).
template <bool NARROW>
struct MomentOf {
    using T = uint64_t;
};
template <>
struct MomentOf<true> {
    using T = uint32_t;
};

// Up to LADDER_MAX distorted planes (a ladder's renditions) and each one's 4 output words.
constexpr int LADDER_MAX = 8;
struct LadderPlanes {
    Plane p[LADDER_MAX];
};
struct LadderAccs {
    unsigned long long *p[LADDER_MAX];
};

// The distorted planes stat_tile scores against one reference: a pair's one plane ...
struct OneDistorted {
    const Plane &dis;
    unsigned long long *acc;
    __device__ __forceinline__ int count() const { return 1; }
    __device__ __forceinline__ const Plane &plane(int) const { return dis; }
    __device__ __forceinline__ unsigned long long *out(int) const { return acc; }
};
// ... or a ladder's `n` (at most LADDER_MAX), plane d's sums into acc.p[d].
struct ManyDistorted {
    const LadderPlanes &dis;
    const LadderAccs &acc;
    int32_t n;
    __device__ __forceinline__ int count() const { return n < LADDER_MAX ? n : LADDER_MAX; }
    __device__ __forceinline__ const Plane &plane(int d) const { return dis.p[d]; }
    __device__ __forceinline__ unsigned long long *out(int d) const { return acc.p[d]; }
};

// Loads the IH x IW input tile whose top-left sample is (sx0, sy0) of `p` (w x h) into `s`,
// borders reflected; a tile inside the plane skips the reflection.
template <int IH, int IW>
__device__ __forceinline__ void load_tile(uint16_t (&s)[IH][IW], const Plane &p, int sx0,
                                          int sy0, int32_t w, int32_t h) {
    const bool inside = sx0 >= 0 && sy0 >= 0 && sx0 + IW <= w && sy0 + IH <= h;
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
    for (int i = tid; i < IH * IW; i += BLOCK_THREADS) {
        const int r = i / IW;
        const int c = i % IW;
        const int y = inside ? sy0 + r : reflect(sy0 + r, h);
        const int x = inside ? sx0 + c : reflect(sx0 + c, w);
        s[r][c] = (uint16_t)sample(p, x, y);
    }
}

// One scale's statistic over a TW x TH output tile of `ref` against every plane of `dis`
// (OneDistorted: a pair; ManyDistorted: a ladder's renditions): the reference's tile is
// loaded and filtered once (vertical and horizontal means and second moments), each
// distorted plane's after it, and each plane's 4 sums go to its own output. NARROW: 8-bit
// scale 0 (means rounded with 128 >> 8, second moments of 16-bit products summed in 32 bits,
// unshifted; the samples are below 256: 8-bit planes are masked to their depth and the
// scaler clamps to it, so a product of two fits 16 bits). Sums that libvmaf keeps in 64 bits
// are 64-bit multiply-adds here. Bit for bit libvmaf's vif_statistic_8/16 for each pair: the
// same integer operations on the same samples, in an order that integer sums do not see.
template <int SCALE, bool NARROW, class Dis>
__device__ __forceinline__ void stat_tile(const Plane &ref, const Dis &dis, int32_t w, int32_t h,
                                          const uint16_t *__restrict__ tab, double limit,
                                          uint32_t mu_round, uint32_t mu_shift,
                                          uint64_t sq_round, uint32_t sq_shift) {
    using F = Filter<SCALE>;
    constexpr int LEN = F::LEN;
    constexpr int HALF = LEN / 2;
    constexpr int IW = TW + 2 * HALF;
    constexpr int IH = TH + 2 * HALF;
    constexpr int PER = (TH * TW + BLOCK_THREADS - 1) / BLOCK_THREADS;
    // The vertical second moments: summed in 32 bits (NARROW, unshifted: its callers pass
    // sq_round = sq_shift = 0) or, as libvmaf's 16-bit path, in 64 bits.
    using Moment = typename MomentOf<NARROW>::T;
    __shared__ uint16_t s_ref[IH][IW];
    __shared__ uint16_t s_dis[IH][IW];
    __shared__ uint16_t s_mu1[TH][IW];
    __shared__ uint16_t s_mu2[TH][IW];
    __shared__ uint32_t s_xx[TH][IW];
    __shared__ uint32_t s_yy[TH][IW];
    __shared__ uint32_t s_xy[TH][IW];
    __shared__ uint64_t scratch[(BLOCK_THREADS / 32) * 4];

    const int x0 = blockIdx.x * TW;
    const int y0 = blockIdx.y * TH;
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;

    load_tile<IH, IW>(s_ref, ref, x0 - HALF, y0 - HALF, w, h);
    __syncthreads();
    // The reference's vertical pass: TH rows x IW columns.
    for (int i = tid; i < TH * IW; i += BLOCK_THREADS) {
        const int r = i / IW;
        const int c = i % IW;
        uint32_t m1 = 0;
        Moment xx = 0;
#pragma unroll
        for (int k = 0; k < LEN; ++k) {
            const uint32_t f = F::tap(k);
            const uint32_t a = s_ref[r + k][c];
            m1 += f * a;
            xx += (Moment)f * (a * a);
        }
        s_mu1[r][c] = (uint16_t)((m1 + mu_round) >> mu_shift);
        s_xx[r][c] = (uint32_t)((xx + (Moment)sq_round) >> sq_shift);
    }
    __syncthreads();
    // The reference's horizontal pass, kept per output in registers.
    uint32_t hm1[PER], hxx[PER];
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        hm1[j] = 0;
        hxx[j] = 0;
        const int i = tid + j * BLOCK_THREADS;
        if (i >= TH * TW) {
            continue;
        }
        const int r = i / TW;
        const int c = i % TW;
        uint32_t m1 = 0;
        uint64_t xx = 0;
#pragma unroll
        for (int k = 0; k < LEN; ++k) {
            const uint32_t f = F::tap(k);
            m1 += f * (uint32_t)s_mu1[r][c + k];
            xx += (uint64_t)f * s_xx[r][c + k];
        }
        hm1[j] = m1;
        hxx[j] = (uint32_t)((xx + 32768u) >> 16);
    }

    for (int d = 0; d < dis.count(); ++d) {
        __syncthreads();
        load_tile<IH, IW>(s_dis, dis.plane(d), x0 - HALF, y0 - HALF, w, h);
        __syncthreads();
        for (int i = tid; i < TH * IW; i += BLOCK_THREADS) {
            const int r = i / IW;
            const int c = i % IW;
            uint32_t m2 = 0;
            Moment yy = 0, xy = 0;
#pragma unroll
            for (int k = 0; k < LEN; ++k) {
                const uint32_t f = F::tap(k);
                const uint32_t a = s_ref[r + k][c];
                const uint32_t b = s_dis[r + k][c];
                m2 += f * b;
                yy += (Moment)f * (b * b);
                xy += (Moment)f * (a * b);
            }
            s_mu2[r][c] = (uint16_t)((m2 + mu_round) >> mu_shift);
            s_yy[r][c] = (uint32_t)((yy + (Moment)sq_round) >> sq_shift);
            s_xy[r][c] = (uint32_t)((xy + (Moment)sq_round) >> sq_shift);
        }
        __syncthreads();
        // Horizontal pass and the per-pixel terms: TH x TW outputs.
        Accum acc;
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int i = tid + j * BLOCK_THREADS;
            if (i >= TH * TW) {
                continue;
            }
            const int r = i / TW;
            const int c = i % TW;
            if (x0 + c >= w || y0 + r >= h) {
                continue;
            }
            uint32_t m2 = 0;
            uint64_t yy64 = 0, xy64 = 0;
#pragma unroll
            for (int k = 0; k < LEN; ++k) {
                const uint32_t f = F::tap(k);
                m2 += f * (uint32_t)s_mu2[r][c + k];
                yy64 += (uint64_t)f * s_yy[r][c + k];
                xy64 += (uint64_t)f * s_xy[r][c + k];
            }
            const uint32_t xx = hxx[j];
            const uint32_t yy = (uint32_t)((yy64 + 32768u) >> 16);
            const uint32_t xy = (uint32_t)((xy64 + 32768u) >> 16);
            const uint64_t a = hm1[j], b = m2;
            const uint32_t mu1_sq = (uint32_t)((a * a + (1ull << 31)) >> 32);
            const uint32_t mu2_sq = (uint32_t)((b * b + (1ull << 31)) >> 32);
            const uint32_t mu1_mu2 = (uint32_t)((a * b + (1ull << 31)) >> 32);
            const int32_t sigma1_sq = (int32_t)(xx - mu1_sq);
            int32_t sigma2_sq = (int32_t)(yy - mu2_sq);
            sigma2_sq = sigma2_sq < 0 ? 0 : sigma2_sq;
            const int32_t sigma12 = (int32_t)(xy - mu1_mu2);
            pixel(sigma1_sq, sigma2_sq, sigma12, acc, tab, limit);
        }
        uint64_t v[4] = {(uint64_t)acc.num_log, (uint64_t)acc.den_log,
                         (uint64_t)acc.num_non_log, (uint64_t)acc.den_non_log};
        block_add_u64<4>(v, scratch, dis.out(d));
    }
}

// Low-pass with the filter of SCALE and keep every second row and column: a TW x TH tile of
// the `w / 2` x `h / 2` output planes; TWO: both planes, else `ref` alone (a ladder's
// reference pyramid, or one rendition's; `dis` and `out_dis` unused).
template <int SCALE, bool TWO>
__device__ __forceinline__ void subsample_tile(const Plane &ref, const Plane &dis, int32_t w,
                                               int32_t h, uint32_t round, uint32_t shift,
                                               uint16_t *__restrict__ out_ref,
                                               uint16_t *__restrict__ out_dis) {
    using F = Filter<SCALE>;
    constexpr int LEN = F::LEN;
    constexpr int HALF = LEN / 2;
    constexpr int IW = 2 * TW - 1 + 2 * HALF;
    constexpr int IH = 2 * TH - 1 + 2 * HALF;
    __shared__ uint16_t s_ref[IH][IW];
    __shared__ uint16_t s_dis[IH][IW];
    __shared__ uint16_t s_mu1[TH][IW];
    __shared__ uint16_t s_mu2[TH][IW];

    const int w2 = w / 2;
    const int h2 = h / 2;
    const int x0 = blockIdx.x * TW;
    const int y0 = blockIdx.y * TH;
    const int sx0 = 2 * x0 - HALF;
    const int sy0 = 2 * y0 - HALF;
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;

    load_tile<IH, IW>(s_ref, ref, sx0, sy0, w, h);
    if (TWO) {
        load_tile<IH, IW>(s_dis, dis, sx0, sy0, w, h);
    }
    __syncthreads();
    for (int i = tid; i < TH * IW; i += BLOCK_THREADS) {
        const int r = i / IW;
        const int c = i % IW;
        uint32_t m1 = 0, m2 = 0;
#pragma unroll
        for (int k = 0; k < LEN; ++k) {
            const uint32_t f = F::tap(k);
            m1 += f * (uint32_t)s_ref[2 * r + k][c];
            if (TWO) {
                m2 += f * (uint32_t)s_dis[2 * r + k][c];
            }
        }
        s_mu1[r][c] = (uint16_t)((m1 + round) >> shift);
        if (TWO) {
            s_mu2[r][c] = (uint16_t)((m2 + round) >> shift);
        }
    }
    __syncthreads();
    for (int i = tid; i < TH * TW; i += BLOCK_THREADS) {
        const int r = i / TW;
        const int c = i % TW;
        if (x0 + c >= w2 || y0 + r >= h2) {
            continue;
        }
        uint32_t m1 = 0, m2 = 0;
#pragma unroll
        for (int k = 0; k < LEN; ++k) {
            const uint32_t f = F::tap(k);
            m1 += f * (uint32_t)s_mu1[r][2 * c + k];
            if (TWO) {
                m2 += f * (uint32_t)s_mu2[r][2 * c + k];
            }
        }
        const int64_t o = (int64_t)(y0 + r) * w2 + (x0 + c);
        out_ref[o] = (uint16_t)((m1 + 32768u) >> 16);
        if (TWO) {
            out_dis[o] = (uint16_t)((m2 + 32768u) >> 16);
        }
    }
}

}  // namespace vif_detail

using namespace vif_detail;

// Statistic of scale 0 for 8-bit planes. `ref`, `dis`: `w * h` planes (see Plane); `tab`: the
// 65536-entry log2 table; `acc`: 4 words to add num_log, den_log, num_non_log, den_non_log to.
// Grid: ceil(w / 32) x ceil(h / 16) blocks of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, STAT_MIN_BLOCKS)
vif_stat0_narrow(const Plane ref, const Plane dis, int32_t w, int32_t h,
                 const uint16_t *tab, double limit, unsigned long long *acc) {
    stat_tile<0, true>(ref, OneDistorted{dis, acc}, w, h, tab, limit, 128u, 8u, 0ull, 0u);
}

// Statistic of scale 0..3 with 64-bit second moments rounded by `sq_round >> sq_shift` and
// means by `mu_round >> mu_shift` (scale 0 above 8 bits; every scale >= 1). Same layout as
// vif_stat0_narrow.
#define VIF_STAT_WIDE(S)                                                                      \
    extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, STAT_MIN_BLOCKS) vif_stat##S(                 \
        const Plane ref, const Plane dis, int32_t w, int32_t h, const uint16_t *tab,         \
        double limit, uint32_t mu_round, uint32_t mu_shift, unsigned long long sq_round,     \
        uint32_t sq_shift, unsigned long long *acc) {                                        \
        stat_tile<S, false>(ref, OneDistorted{dis, acc}, w, h, tab, limit, mu_round,         \
                            mu_shift, sq_round, sq_shift);                                   \
    }
VIF_STAT_WIDE(0)
VIF_STAT_WIDE(1)
VIF_STAT_WIDE(2)
VIF_STAT_WIDE(3)

// Subsampling into scale S (filter of scale S): `w * h` planes in, packed `(w / 2) * (h / 2)`
// 16-bit planes out.
// Vertical rounding `round >> shift`. Grid: ceil((w / 2) / 32) x ceil((h / 2) / 16) blocks of
// 32 x 8 threads.
#define VIF_SUB(S)                                                                            \
    extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) vif_sub##S(                  \
        const Plane ref, const Plane dis, int32_t w, int32_t h, uint32_t round,              \
        uint32_t shift, uint16_t *out_ref, uint16_t *out_dis) {                              \
        subsample_tile<S, true>(ref, dis, w, h, round, shift, out_ref, out_dis);             \
    }
VIF_SUB(1)
VIF_SUB(2)
VIF_SUB(3)

// One plane's subsampling into scale S (a ladder: the reference's pyramid once, then each
// rendition's): as vif_subS for `src` alone.
#define VIF_SUB_ONE(S)                                                                        \
    extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) vif_sub##S##_one(            \
        const Plane src, int32_t w, int32_t h, uint32_t round, uint32_t shift,               \
        uint16_t *out) {                                                                     \
        subsample_tile<S, false>(src, src, w, h, round, shift, out, out);                    \
    }
VIF_SUB_ONE(1)
VIF_SUB_ONE(2)
VIF_SUB_ONE(3)

// vif_stat0_narrow (8-bit) for a ladder: `n` (<= LADDER_MAX) distorted planes, sums into
// `acc.p[d]`. Grid as vif_stat0_narrow.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, STAT_MIN_BLOCKS)
vif_stat0_narrow_ladder(const Plane ref, const LadderPlanes dis, int32_t n, int32_t w, int32_t h,
                        const uint16_t *tab, double limit, const LadderAccs acc) {
    stat_tile<0, true>(ref, ManyDistorted{dis, acc, n}, w, h, tab, limit, 128u, 8u, 0ull, 0u);
}

// vif_stat0 (above 8 bits) for a ladder, as vif_stat0_narrow_ladder.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, STAT_MIN_BLOCKS)
vif_stat0_ladder(const Plane ref, const LadderPlanes dis, int32_t n, int32_t w, int32_t h,
                 const uint16_t *tab, double limit, uint32_t mu_round, uint32_t mu_shift,
                 unsigned long long sq_round, uint32_t sq_shift, const LadderAccs acc) {
    stat_tile<0, false>(ref, ManyDistorted{dis, acc, n}, w, h, tab, limit, mu_round, mu_shift,
                        sq_round, sq_shift);
}

// A ladder's renditions at scales 1..=3, batched: one launch per scale and step for up to
// LADDER_MAX distorted planes, block z on plane z (the same tile bodies as the pair kernels,
// so the same sums). Subsampling: `src.p[z]` (w x h) into `out.p[z]` ((w / 2) x (h / 2),
// packed); statistic: `ref` (the reference's plane of that scale) against `dis.p[z]`, its sums
// added to `acc.p[z]` (4 words).
struct LadderOuts {
    uint16_t *p[LADDER_MAX];
};

#define VIF_SUB_LADDER(S)                                                                     \
    extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) vif_sub##S##_ladder(         \
        const LadderPlanes src, int32_t w, int32_t h, uint32_t round, uint32_t shift,        \
        const LadderOuts out) {                                                              \
        const Plane p = src.p[blockIdx.z];                                                   \
        uint16_t *o = out.p[blockIdx.z];                                                     \
        subsample_tile<S, false>(p, p, w, h, round, shift, o, o);                            \
    }
VIF_SUB_LADDER(1)
VIF_SUB_LADDER(2)
VIF_SUB_LADDER(3)

#define VIF_STAT_LADDER(S)                                                                    \
    extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, STAT_MIN_BLOCKS) vif_stat##S##_ladder(        \
        const Plane ref, const LadderPlanes dis, int32_t w, int32_t h, const uint16_t *tab,  \
        double limit, uint32_t mu_round, uint32_t mu_shift, unsigned long long sq_round,     \
        uint32_t sq_shift, const LadderAccs acc) {                                           \
        const Plane d = dis.p[blockIdx.z];                                                   \
        stat_tile<S, false>(ref, OneDistorted{d, acc.p[blockIdx.z]}, w, h, tab, limit,       \
                            mu_round, mu_shift, sq_round, sq_shift);                         \
    }
VIF_STAT_LADDER(1)
VIF_STAT_LADDER(2)
VIF_STAT_LADDER(3)

// Scale 1's statistic of a ladder as vif_stat0_ladder: the reference's tile of scale 1 loaded
// and filtered once per block, each of `n` distorted planes' after it (at scales 2 and 3 the
// tiles are few, and vif_statS_ladder's grid z over the planes keeps the GPU busier; measured
// on an H200, a shared variant of them did not change a 5-rendition ladder's speed).
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, STAT_MIN_BLOCKS)
vif_stat1_shared(const Plane ref, const LadderPlanes dis, int32_t n, int32_t w, int32_t h,
                 const uint16_t *tab, double limit, uint32_t mu_round, uint32_t mu_shift,
                 unsigned long long sq_round, uint32_t sq_shift, const LadderAccs acc) {
    stat_tile<1, false>(ref, ManyDistorted{dis, acc, n}, w, h, tab, limit, mu_round, mu_shift,
                        sq_round, sq_shift);
}
