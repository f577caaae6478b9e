// CAMBI (banding index) of one luma plane: preprocessing to 10 bits at the encode size,
// spatial mask, five scales of decimation + 3x3 mode filter, per-pixel c-values from the
// window's histogram, and each scale's exact sum of its top-k c-values.
//
// Integer everywhere except the c-value itself, which is computed in float exactly as the
// CPU half does ((float)(weight * p0 * p) * lut[p + p0], no contraction possible), so the
// c-values, and the integer top-k sums (units of 2^-24), are bit-identical to the CPU's.
//
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/cambi.c; host side and oracle:
// src/features/cambi/{cuda,cpu}.rs.

#include "common.cuh"

using namespace vmafcmp;

namespace cambi_detail {

constexpr int NUM_SCALES = 5;
constexpr int MASK_R = 3;        // 7x7 spatial-mask window
constexpr int MAX_PAD = 32;      // c-value window of at most 65 samples
constexpr int SENTINEL = 0xFFFF; // neighbour outside the band, the mask or the frame
constexpr int CENTER = 4;        // histogram bin of the centre value (differences -4..4)

// Per-geometry constants (host: `CambiConst` in src/features/cambi/cuda.rs, same layout).
struct Const {
    int32_t enc_w, enc_h;
    int32_t bpc;
    int32_t anti_dither;
    int32_t use_map;
    uint32_t mask_index;
    int32_t pad;
    int32_t num_diffs;
    int32_t band_base, band_size;
    int32_t vlt_luma;
    int32_t tvi[4];
    int32_t weight[4];
};

// Where each scale's c-values lie in the pooled buffer, and how many are pooled.
struct Segs {
    uint32_t offset[NUM_SCALES];
    uint32_t n[NUM_SCALES];
    uint32_t k[NUM_SCALES];
};

// Radix-select digits over a c-value's float bits: 12, 12 and 8 bits.
__device__ __forceinline__ int digit_shift(int level) { return level == 0 ? 20 : (level == 1 ? 8 : 0); }
__device__ __forceinline__ int digit_bins(int level) { return level == 2 ? 256 : 4096; }
__device__ __forceinline__ int hist_offset(int level) { return level == 0 ? 0 : (level == 1 ? 4096 : 8192); }
constexpr int HIST_PER_SCALE = 4096 + 4096 + 256;

__device__ __forceinline__ uint32_t to_10bit(uint32_t v, int bpc) {
    if (bpc <= 10) return v << (10 - bpc);
    const int sh = bpc - 10;
    return (v + (1u << (sh - 1))) >> sh;
}

__device__ __forceinline__ uint16_t mode3(uint16_t a, uint16_t b, uint16_t c) {
    if (a == b || a == c) return a;
    if (b == c) return b;
    return min(min(a, b), c);
}

}  // namespace cambi_detail

using namespace cambi_detail;

// Nearest-neighbour resize to the encode size (`xmap`, `ymap` when `use_map`), 10 bits, and
// the 2x2 anti-dithering average (when `anti_dither`). One thread per encode pixel; grid
// ceil(enc_w / 32) x ceil(enc_h / 8) of 32 x 8.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
cambi_preprocess(const Plane in, const Const c, const uint32_t *__restrict__ xmap,
                 const uint32_t *__restrict__ ymap, uint16_t *__restrict__ out) {
    const int x = blockIdx.x * BLOCK_X + threadIdx.x;
    const int y = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (x >= c.enc_w || y >= c.enc_h) return;
    auto conv = [&](int xx, int yy) -> uint32_t {
        const int sx = c.use_map ? (int)xmap[xx] : xx;
        const int sy = c.use_map ? (int)ymap[yy] : yy;
        return to_10bit(sample(in, sx, sy), c.bpc);
    };
    uint32_t v = conv(x, y);
    if (c.anti_dither) {
        const bool last_col = x + 1 == c.enc_w;
        const bool last_row = y + 1 == c.enc_h;
        if (!last_row && !last_col) {
            v = (v + conv(x + 1, y) + conv(x, y + 1) + conv(x + 1, y + 1)) >> 2;
        } else if (!last_row) {
            v = (v + conv(x, y + 1)) >> 1;
        } else if (!last_col) {
            v = (v + conv(x + 1, y)) >> 1;
        }
    }
    out[(int64_t)y * c.enc_w + x] = (uint16_t)v;
}

// Spatial mask at the encode size: 1 where more than `mask_index` of the 7x7 pixels around
// (zero outside the frame) equal their right and lower neighbours (the last column / row
// count as equal). Tile of 32 x 8 outputs per block.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
cambi_mask(const uint16_t *__restrict__ img, const Const c, uint8_t *__restrict__ mask) {
    constexpr int DW = BLOCK_X + 2 * MASK_R, DH = BLOCK_Y + 2 * MASK_R;
    constexpr int IW = DW + 1, IH = DH + 1;
    __shared__ uint16_t tile[IH][IW];
    __shared__ uint8_t deriv[DH][DW];
    const int w = c.enc_w, h = c.enc_h;
    const int x0 = blockIdx.x * BLOCK_X - MASK_R;
    const int y0 = blockIdx.y * BLOCK_Y - MASK_R;
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
    for (int i = tid; i < IW * IH; i += BLOCK_THREADS) {
        const int r = i / IW, q = i % IW;
        const int gx = x0 + q, gy = y0 + r;
        tile[r][q] = (gx >= 0 && gx < w && gy >= 0 && gy < h) ? img[(int64_t)gy * w + gx] : 0;
    }
    __syncthreads();
    for (int i = tid; i < DW * DH; i += BLOCK_THREADS) {
        const int r = i / DW, q = i % DW;
        const int gx = x0 + q, gy = y0 + r;
        uint8_t d = 0;
        if (gx >= 0 && gx < w && gy >= 0 && gy < h) {
            const uint16_t v = tile[r][q];
            const bool hz = gx == w - 1 || v == tile[r][q + 1];
            const bool vt = gy == h - 1 || v == tile[r + 1][q];
            d = hz && vt;
        }
        deriv[r][q] = d;
    }
    __syncthreads();
    const int x = blockIdx.x * BLOCK_X + threadIdx.x;
    const int y = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (x >= w || y >= h) return;
    uint32_t sum = 0;
#pragma unroll
    for (int dy = 0; dy < 2 * MASK_R + 1; ++dy) {
#pragma unroll
        for (int dx = 0; dx < 2 * MASK_R + 1; ++dx) {
            sum += deriv[threadIdx.y + dy][threadIdx.x + dx];
        }
    }
    mask[(int64_t)y * w + x] = sum > c.mask_index;
}

// One scale's image: `src` (row pitch `src_w`) taken every `step` samples (2: decimation,
// 1: none), then the 3x3 mode filter (rows 1..h-2: vertical mode of horizontal modes, the
// first and last column copied horizontally; rows 0 and h-1 unchanged). Grid over w x h.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
cambi_mode(const uint16_t *__restrict__ src, int32_t src_w, int32_t step, int32_t w, int32_t h,
           uint16_t *__restrict__ dst) {
    const int x = blockIdx.x * BLOCK_X + threadIdx.x;
    const int y = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (x >= w || y >= h) return;
    auto at = [&](int xx, int yy) -> uint16_t {
        return src[(int64_t)yy * step * src_w + (int64_t)xx * step];
    };
    uint16_t v;
    if (y == 0 || y == h - 1) {
        v = at(x, y);
    } else {
        uint16_t hm[3];
#pragma unroll
        for (int k = 0; k < 3; ++k) {
            const int yy = y - 1 + k;
            hm[k] = (x == 0 || x == w - 1) ? at(x, yy) : mode3(at(x - 1, yy), at(x, yy), at(x + 1, yy));
        }
        v = mode3(hm[0], hm[1], hm[2]);
    }
    dst[(int64_t)y * w + x] = v;
}

// Per-pixel c-values of one w x h scale (`img`; the mask is the encode-size `mask` sampled
// every 2^mshift samples), as float bits into `cv` (row-major, w * h). A block counts, for
// each of its 32 x 8 pixels, the masked in-band pixels of each value v-4..v+4 in the
// (2 pad + 1)^2 window around it, from a shared tile of the window's samples.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
cambi_cvalues(const uint16_t *__restrict__ img, int32_t w, int32_t h,
              const uint8_t *__restrict__ mask, int32_t mshift, const Const c,
              const float *__restrict__ lut, uint32_t *__restrict__ cv) {
    __shared__ uint16_t tile[(BLOCK_Y + 2 * MAX_PAD) * (BLOCK_X + 2 * MAX_PAD)];
    const int pad = c.pad;
    const int tw = BLOCK_X + 2 * pad, th = BLOCK_Y + 2 * pad;
    const int x0 = blockIdx.x * BLOCK_X - pad;
    const int y0 = blockIdx.y * BLOCK_Y - pad;
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
    const int64_t mw = c.enc_w;
    auto keyed = [&](int gx, int gy) -> uint32_t {
        if (gx < 0 || gx >= w || gy < 0 || gy >= h) return SENTINEL;
        if (!mask[((int64_t)gy << mshift) * mw + ((int64_t)gx << mshift)]) return SENTINEL;
        const uint32_t v = img[(int64_t)gy * w + gx];
        return (uint32_t)((int)v - c.band_base) < (uint32_t)c.band_size ? v : SENTINEL;
    };
    for (int i = tid; i < tw * th; i += BLOCK_THREADS) {
        const int r = i / tw, q = i % tw;
        tile[i] = (uint16_t)keyed(x0 + q, y0 + r);
    }
    __syncthreads();
    const int x = blockIdx.x * BLOCK_X + threadIdx.x;
    const int y = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (x >= w || y >= h) return;
    const int centre = tile[(threadIdx.y + pad) * tw + threadIdx.x + pad];
    float cval = 0.0f;
    if (centre != SENTINEL) {
        // Bins v-4..v+4 as 16-bit lanes: a0 bins 0..3, a1 bins 4..7, a2 bin 8.
        uint64_t a0 = 0, a1 = 0, a2 = 0;
        const int win = 2 * pad + 1;
        for (int dy = 0; dy < win; ++dy) {
            const uint16_t *row = tile + (threadIdx.y + dy) * tw + threadIdx.x;
            for (int dx = 0; dx < win; ++dx) {
                const uint32_t k = (uint32_t)((int)row[dx] - centre + CENTER);
                if (k <= 2 * CENTER) {
                    const uint64_t inc = 1ull << ((k & 3) << 4);
                    if (k < 4) {
                        a0 += inc;
                    } else if (k < 8) {
                        a1 += inc;
                    } else {
                        a2 += inc;
                    }
                }
            }
        }
        auto count = [&](int k) -> int {
            const uint64_t a = k < 4 ? a0 : (k < 8 ? a1 : a2);
            return (int)((a >> ((k & 3) << 4)) & 0xFFFF);
        };
        const int value = centre + c.num_diffs;
        const int p0 = count(CENTER);
        for (int d = 0; d < c.num_diffs; ++d) {
            const int stepd = d + 1;
            if (value <= c.tvi[d] && value + stepd > c.vlt_luma) {
                const int p1 = count(CENTER + stepd), p2 = count(CENTER - stepd);
                const int pm = p1 > p2 ? p1 : p2;
                const float val = __fmul_rn(__int2float_rn(c.weight[d] * p0 * pm), lut[pm + p0]);
                if (val > cval) cval = val;
            }
        }
    }
    cv[(int64_t)y * w + x] = __float_as_uint(cval);
}

// Histogram of one radix digit (`level` 0, 1, 2) of the c-values of each scale (grid.y)
// whose higher digits equal the scale's selected prefix (`state[2 s]`), added to `hist`.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
cambi_hist(const uint32_t *__restrict__ cv, const Segs segs, int32_t level,
           const uint32_t *__restrict__ state, uint32_t *__restrict__ hist) {
    __shared__ uint32_t local[4096];
    const int s = blockIdx.y;
    const int tid = threadIdx.x;
    const int bins = digit_bins(level), shift = digit_shift(level);
    const int hi_shift = level == 0 ? 32 : digit_shift(level - 1);
    const uint32_t prefix = state[2 * s];
    for (int i = tid; i < bins; i += blockDim.x) local[i] = 0;
    __syncthreads();
    const uint32_t n = segs.n[s];
    const uint32_t *seg = cv + segs.offset[s];
    const uint32_t stride = gridDim.x * blockDim.x;
    // Uniform trip count per block, so every lane reaches the ballot.
    for (uint32_t base = blockIdx.x * blockDim.x; base < n; base += stride) {
        const uint32_t i = base + tid;
        const bool in = i < n;
        const uint32_t e = in ? seg[i] : 0;
        const bool match = in && (hi_shift == 32 || (e >> hi_shift) == prefix);
        const uint32_t bin = (e >> shift) & (uint32_t)(bins - 1);
        // Zeros dominate: one atomic per warp for them.
        const bool zero = match && e == 0;
        const uint32_t zeros = __popc(__ballot_sync(0xffffffffu, zero));
        if (match && !zero) atomicAdd(&local[bin], 1u);
        if ((tid & 31) == 0 && zeros) atomicAdd(&local[0], zeros);
    }
    __syncthreads();
    uint32_t *out = hist + s * HIST_PER_SCALE + hist_offset(level);
    for (int i = tid; i < bins; i += blockDim.x) {
        if (local[i]) atomicAdd(&out[i], local[i]);
    }
}

// Picks, per scale (one block of 256 threads each), the digit at `level` of the k-th largest
// c-value: the bin b where the count above b is below the remaining k and the count from b
// up reaches it. Updates `state[2 s]` (prefix) and `state[2 s + 1]` (remaining k).
extern "C" __global__ void __launch_bounds__(256)
cambi_select(const Segs segs, int32_t level, const uint32_t *__restrict__ hist,
             uint32_t *__restrict__ state) {
    __shared__ uint32_t part[256];
    const int s = blockIdx.x;
    const int tid = threadIdx.x;
    const int bins = digit_bins(level);
    const int per = bins / 256;  // 16 or 1 bins per thread, thread 0 owns the top bins
    const uint32_t *h = hist + s * HIST_PER_SCALE + hist_offset(level);
    const uint32_t krem = level == 0 ? segs.k[s] : state[2 * s + 1];
    const uint32_t prefix = level == 0 ? 0 : state[2 * s];
    const int top = bins - 1 - tid * per;
    uint32_t mine = 0;
    for (int j = 0; j < per; ++j) mine += h[top - j];
    part[tid] = mine;
    __syncthreads();
    if (tid == 0) {
        uint32_t above = 0;
        int t = 0;
        for (; t < 255 && above + part[t] < krem; ++t) above += part[t];
        int b = bins - 1 - t * per;
        for (int j = 0; j < per - 1 && above + h[b] < krem; ++j, --b) above += h[b];
        const int bits = level == 2 ? 8 : 12;
        state[2 * s] = (prefix << bits) | (uint32_t)b;
        state[2 * s + 1] = krem - above;
    }
}

// Sum (units of 2^-24) of each scale's c-values strictly above the selected value
// (`state[2 s]`, float bits), added to `acc[s]`. Grid.y: scales.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
cambi_sum(const uint32_t *__restrict__ cv, const Segs segs, const uint32_t *__restrict__ state,
          unsigned long long *__restrict__ acc) {
    __shared__ uint64_t scratch[BLOCK_THREADS / 32];
    const int s = blockIdx.y;
    const uint32_t thr = state[2 * s];
    const uint32_t n = segs.n[s];
    const uint32_t *seg = cv + segs.offset[s];
    uint64_t v[1] = {0};
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const uint32_t e = seg[i];
        if (e > thr) v[0] += (uint64_t)(__uint_as_float(e) * 16777216.0f);
    }
    block_add_u64<1>(v, scratch, acc + s);
}

// out[s] = acc[s] + (remaining k) * (selected value), the scale's exact top-k sum.
extern "C" __global__ void cambi_finish(const uint32_t *__restrict__ state,
                                        const unsigned long long *__restrict__ acc,
                                        unsigned long long *__restrict__ out) {
    const int s = threadIdx.x;
    if (s >= NUM_SCALES) return;
    const uint64_t t = (uint64_t)(__uint_as_float(state[2 * s]) * 16777216.0f);
    out[s] = acc[s] + (uint64_t)state[2 * s + 1] * t;
}
