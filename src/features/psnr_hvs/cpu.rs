//! The CPU half of PSNR-HVS: libvmaf's `calc_psnrhvs` on one plane, operation for operation
//! in the same precision and order (single-precision statistics, the integer DCT, the masking
//! and the running single-precision sum over the blocks in raster order), so its scores are
//! libvmaf's own.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/third_party/xiph/psnr_hvs.c.

use super::{blocks, fdct8x8, plane_score, Tables, STEP};
use crate::video::frame::LumaPlane;

/// `1 / 63 * 64` and `1 / 15 * 16` as libvmaf's `float` constants: the unbiased variance
/// factors of 64 and 16 samples.
pub(super) const VAR64: f32 = 1.0 / 63.0 * 64.0;
pub(super) const VAR16: f32 = 1.0 / 15.0 * 16.0;

/// The quadrant (0..4) of sample `k` of an 8x8 block: `(row >= 4) + 2 * (column >= 4)`.
#[inline(always)]
const fn quadrant(k: usize) -> usize {
    (k >> 5) + 2 * ((k >> 2) & 1)
}

/// A block's activity: the sum of its four 4x4 quadrants' variances over the whole block's
/// variance (both unbiased, in `f32`, summed in raster order), 0 for a flat block. It scales
/// the block's masking energy.
#[inline(always)]
fn activity(v: &[i32; 64]) -> f32 {
    // Integer sums are exact, as libvmaf's float sums of at most 64 12-bit samples are.
    let mut total = 0i32;
    let mut quad = [0i32; 4];
    for (k, &x) in v.iter().enumerate() {
        total += x;
        quad[quadrant(k)] += x;
    }
    let mean = total as f32 / 64.0;
    let means = quad.map(|q| q as f32 / 16.0);
    let mut var = 0.0f32;
    let mut vars = [0.0f32; 4];
    for (k, &x) in v.iter().enumerate() {
        let x = x as f32;
        let a = x - mean;
        var += a * a;
        let q = quadrant(k);
        let b = x - means[q];
        vars[q] += b * b;
    }
    let var = var * VAR64;
    let vars = vars.map(|s| s * VAR16);
    if var > 0.0 {
        (vars[0] + vars[1] + vars[2] + vars[3]) / var
    } else {
        var
    }
}

/// A block's masking threshold scale: `sqrt(sum of the AC coefficients' squares times their
/// masking weights * activity) / 32`, the sum in `f32` in raster order.
#[inline(always)]
fn masking(c: &[i32; 64], t: &Tables, activity: f32) -> f32 {
    let mut m = 0.0f32;
    // mask[0] is 0: the DC term adds nothing, as libvmaf's loop skipping it.
    for k in 0..64 {
        m += c[k].wrapping_mul(c[k]) as f32 * t.mask[k];
    }
    ((f64::from(m * activity)).sqrt() / 32.0) as f32
}

/// One block pair's 64 squared weighted errors in raster order: reference `s`, distorted `d`
/// (row-major samples).
#[inline(always)]
fn block(s: &[i32; 64], d: &[i32; 64], t: &Tables) -> [f32; 64] {
    let (sa, da) = (activity(s), activity(d));
    let (cs, cd) = (fdct8x8(s), fdct8x8(d));
    let m = masking(&cs, t, sa).max(masking(&cd, t, da));
    let mut terms = [0.0f32; 64];
    for k in 0..64 {
        let err = cs[k].wrapping_sub(cd[k]).wrapping_abs() as f32;
        // The DC's divisor is +inf: its threshold is 0 and its error is kept whole.
        let thr = m / t.divisor[k];
        let e = if err < thr { 0.0 } else { err - thr };
        let w = e * t.csf[k];
        terms[k] = w * w;
    }
    terms
}

/// Calls `f` with the 64 squared weighted errors (raster order) of every 8x8 block pair of the
/// top-left `w` x `h` of two planes (at most their size), blocks in raster order; returns the
/// number of blocks. [`plane`] adds them into one running `f32`.
#[inline(always)]
pub fn for_blocks(
    reference: &LumaPlane,
    distorted: &LumaPlane,
    (w, h): (usize, usize),
    t: &Tables,
    mut f: impl FnMut(&[f32; 64]),
) -> usize {
    let (nx, ny) = (blocks(w), blocks(h));
    let mut s = [0i32; 64];
    let mut d = [0i32; 64];
    for by in 0..ny {
        let y = by * STEP;
        for bx in 0..nx {
            let x = bx * STEP;
            for i in 0..8 {
                let (rr, dr) = (
                    &reference.row(y + i)[x..x + 8],
                    &distorted.row(y + i)[x..x + 8],
                );
                for j in 0..8 {
                    s[8 * i + j] = i32::from(rr[j]);
                    d[8 * i + j] = i32::from(dr[j]);
                }
            }
            f(&block(&s, &d, t));
        }
    }
    nx * ny
}

/// The size read of two planes: `size` clamped to both.
fn clamp(reference: &LumaPlane, distorted: &LumaPlane, size: (usize, usize)) -> (usize, usize) {
    (
        size.0.min(reference.width).min(distorted.width),
        size.1.min(reference.height).min(distorted.height),
    )
}

/// The sum [`plane`] takes the score of, in another order and precision: each block's 64
/// terms added in `f64` (raster order), the blocks' sums added in `f64` in raster order; and
/// the number of blocks. The GPU half sums this way but for the order of the blocks' sums,
/// so its sums equal this one's to within `f64` rounding (its tests compare the two).
pub fn plane_sum_f64(
    reference: &LumaPlane,
    distorted: &LumaPlane,
    size: (usize, usize),
    t: &Tables,
) -> (f64, usize) {
    let mut sum = 0.0f64;
    let n = for_blocks(
        reference,
        distorted,
        clamp(reference, distorted, size),
        t,
        |terms| {
            let mut b = 0.0f64;
            for &x in terms {
                b += f64::from(x);
            }
            sum += b;
        },
    );
    (sum, n)
}

/// libvmaf's score of one plane pair ([`plane_score`]: >= 0, 0 for identical planes, NaN
/// when `size` holds no 8x8 block) with the weights `t`. `size`: the part of the planes read
/// (their top-left `width` x `height`; clamped to both planes' own size). Sample values are
/// the planes' own, at `reference.bpc` bits (at most 12 for libvmaf's arithmetic).
pub fn plane(
    reference: &LumaPlane,
    distorted: &LumaPlane,
    size: (usize, usize),
    t: &Tables,
) -> f64 {
    // libvmaf's running f32 sum over every term of the plane, in raster order.
    let mut sum = 0.0f32;
    let n = for_blocks(
        reference,
        distorted,
        clamp(reference, distorted, size),
        t,
        |terms| {
            for &x in terms {
                sum += x;
            }
        },
    );
    plane_score(sum, n, reference.bpc)
}
