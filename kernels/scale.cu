// Scaling a plane to the scoring size with FFmpeg libswscale's integer arithmetic, as the CPU
// half does (crate::engine::scale::cpu::scale_plane): a horizontal pass into a 15-bit
// intermediate, then a vertical pass to `bpc`-bit samples. The filters (first source sample
// and fixed-point taps of each output sample, both axes) are designed on the host
// (crate::engine::scale::FilterBank) and uploaded once; both passes are integer sums in a
// fixed tap order, so the output equals the CPU's sample for sample. A colour range
// conversion (full <-> limited, issue 49) is applied to the intermediate between the two
// passes, as swscale's lumConvertRange / chrConvertRange do (crate::engine::scale::range).
//
// Source: FFmpeg libswscale/swscale.c hScale8To15_c / hScale16To15_c (horizontal) and
// libswscale/output.c yuv2planeX_8_c / yuv2planeX_10_c_template (vertical); host side and
// oracle: src/engine/scale/{cuda,cpu}.rs.

#include "common.cuh"

using namespace vmafcmp;

// Outputs per thread: the horizontal pass computes ROWS rows of one column (sharing the
// column's position and taps), the vertical pass COLS columns of one row (sharing the row's),
// so that the per-thread setup is paid once for several samples.
constexpr int ROWS = 4;
constexpr int COLS = 4;

namespace scale_detail {

// Adds sum_j sample(src, p + j, ys[r]) * c[j] for j < n to val[r], r < ROWS, with `src`'s
// sample width fixed to WIDE so that the loop holds no per-sample branch.
template <uint32_t WIDE>
__device__ __forceinline__ void h_sums(const Plane &src, int p, int n,
                                       const int16_t *__restrict__ c, const int (&ys)[ROWS],
                                       int32_t (&val)[ROWS]) {
    Plane s = src;
    s.wide = WIDE;
    for (int j = 0; j < n; ++j) {
        const int32_t cj = __ldg(c + j);
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            val[r] += (int32_t)sample(s, p + j, ys[r]) * cj;
        }
    }
}

}  // namespace scale_detail

using namespace scale_detail;

// Horizontal pass: `tmp[y * dst_w + x]` = min(sum_j sample(src, pos[x] + j, y) *
// coeff[x * taps + j] >> shift, 32767) as int16 (shift = bpc - 1), for j < min(taps, src_w -
// pos[x]) (the taps beyond the plane are zero by construction and are not read); then, when
// `range_mode` is 1 or 2, t = (t * range_coeff + range_offset) >> 14, clipped at 32767 when 2
// (towards full range), as crate::engine::scale::range::RangeMap::apply. `src` holds
// `src_w` x `src_h` samples at the scoring depth `bpc` (what `sample()` returns); `tmp` is
// packed, `dst_w` samples per row, `src_h` rows. Thread (x, y0) computes rows y0 + 8 r,
// r < ROWS.
// Launch: grid ceil(dst_w / 32) x ceil(src_h / (8 * ROWS)), blocks of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
scale_h(const __grid_constant__ Plane src, const int32_t *__restrict__ pos,
        const int16_t *__restrict__ coeff, int32_t taps, int32_t src_w, int32_t src_h,
        int32_t dst_w, int32_t shift, int32_t range_coeff, int32_t range_offset,
        int32_t range_mode, int16_t *__restrict__ tmp) {
    const int x = blockIdx.x * BLOCK_X + threadIdx.x;
    const int y0 = blockIdx.y * (BLOCK_Y * ROWS) + threadIdx.y;
    if (x >= dst_w || y0 >= src_h) {
        return;
    }
    const int p = __ldg(pos + x);
    const int n = min(taps, src_w - p);
    const int16_t *c = coeff + x * taps;  // < 2^16 outputs x 255 taps
    // Rows past the plane read its last row; their sums are not stored.
    int ys[ROWS];
    int32_t val[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        ys[r] = min(y0 + r * BLOCK_Y, src_h - 1);
        val[r] = 0;
    }
    if (src.wide) {
        h_sums<1>(src, p, n, c, ys, val);
    } else {
        h_sums<0>(src, p, n, c, ys, val);
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const int y = y0 + r * BLOCK_Y;
        if (y < src_h) {
            // hScale*To15_c: FFMIN(val >> sh, (1 << 15) - 1), stored as int16_t.
            int32_t t = (int16_t)min(val[r] >> shift, 32767);
            if (range_mode != 0) {
                t = (t * range_coeff + range_offset) >> 14;
                if (range_mode == 2) {
                    t = min(t, 32767);
                }
            }
            tmp[(int64_t)y * dst_w + x] = (int16_t)t;
        }
    }
}

// Vertical pass: `out[y * dst_w + x]` = clip((2^(26 - bpc) + sum_j tmp[(pos[y] + j) * dst_w
// + x] * coeff[y * taps + j]) >> (27 - bpc), 0, 2^bpc - 1) for j < min(taps, src_h -
// pos[y]). `tmp`: the horizontal pass's `dst_w` x `src_h` intermediate; `out`: packed u16,
// `dst_w` samples per row, `dst_h` rows. Thread (x0, y) computes columns x0 + 32 k, k < COLS.
// Launch: grid ceil(dst_w / (32 * COLS)) x ceil(dst_h / 8), blocks of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
scale_v(const int16_t *__restrict__ tmp, const int32_t *__restrict__ pos,
        const int16_t *__restrict__ coeff, int32_t taps, int32_t src_h, int32_t dst_w,
        int32_t dst_h, int32_t bpc, uint16_t *__restrict__ out) {
    const int x0 = blockIdx.x * (BLOCK_X * COLS) + threadIdx.x;
    const int y = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (x0 >= dst_w || y >= dst_h) {
        return;
    }
    const int p = __ldg(pos + y);
    const int n = min(taps, src_h - p);
    const int16_t *c = coeff + y * taps;  // < 2^16 outputs x 255 taps
    // Columns past the plane read its last column; their sums are not stored.
    int xs[COLS];
    int32_t acc[COLS];
#pragma unroll
    for (int k = 0; k < COLS; ++k) {
        xs[k] = min(x0 + k * BLOCK_X, dst_w - 1);
        // yuv2planeX: the rounding constant 1 << (shift - 1), shift = 27 - bpc (at 8 bits
        // the ordered dither is the flat 64, the same value).
        acc[k] = 1 << (26 - bpc);
    }
    // 32-bit offsets into `tmp` (the host keeps dst_w * src_h below 2^32).
    uint32_t row = (uint32_t)p * (uint32_t)dst_w;
    for (int j = 0; j < n; ++j) {
        const int32_t cj = __ldg(c + j);
#pragma unroll
        for (int k = 0; k < COLS; ++k) {
            acc[k] += (int32_t)__ldg(tmp + (row + (uint32_t)xs[k])) * cj;
        }
        row += (uint32_t)dst_w;
    }
    const int32_t max = (1 << bpc) - 1;
    uint16_t *o = out + (int64_t)y * dst_w;
#pragma unroll
    for (int k = 0; k < COLS; ++k) {
        const int x = x0 + k * BLOCK_X;
        if (x < dst_w) {
            const int32_t v = acc[k] >> (27 - bpc);
            o[x] = (uint16_t)(v < 0 ? 0 : (v > max ? max : v));
        }
    }
}
