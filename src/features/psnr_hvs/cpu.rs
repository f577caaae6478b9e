//! The CPU half of PSNR-HVS: libvmaf's `calc_psnrhvs` on one plane, operation for operation
//! in the same precision and order (single-precision statistics, the integer DCT, the masking
//! and the running single-precision sum over the blocks in raster order), so its scores are
//! libvmaf's own.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/third_party/xiph/psnr_hvs.c.

use super::params::{blocks, fdct8, plane_score, Tables, STEP};
use crate::video::frame::LumaPlane;

/// `1 / 63 * 64` as libvmaf's `float` constant: the unbiased variance factor of 64 samples.
pub(super) const VAR64: f32 = 1.0 / 63.0 * 64.0;
/// `1 / 15 * 16` as libvmaf's `float` constant: the unbiased variance factor of 16 samples.
pub(super) const VAR16: f32 = 1.0 / 15.0 * 16.0;

/// Blocks scored side by side, one per SIMD lane (the arithmetic of each lane is the scalar
/// arithmetic of one block, in the same order).
const LANES: usize = 8;

/// The quadrant (0..4) of sample `k` of an 8x8 block: `(row >= 4) + 2 * (column >= 4)`.
#[inline(always)]
const fn quadrant(k: usize) -> usize {
    (k >> 5) + 2 * ((k >> 2) & 1)
}

/// `N` blocks' activity: the sum of each block's four 4x4 quadrants' variances over the whole
/// block's variance (both unbiased, in `f32`, summed in raster order), 0 for a flat block. It
/// scales the block's masking energy. `v[k][lane]`: sample `k` (raster order) of each block.
#[inline(always)]
fn activity<const N: usize>(v: &[[i32; N]; 64]) -> [f32; N] {
    // Integer sums are exact, as libvmaf's float sums of at most 64 12-bit samples are.
    let mut total = [0i32; N];
    let mut quad = [[0i32; N]; 4];
    for (k, x) in v.iter().enumerate() {
        let q = &mut quad[quadrant(k)];
        for l in 0..N {
            total[l] += x[l];
            q[l] += x[l];
        }
    }
    let mean = total.map(|t| t as f32 / 64.0);
    let means = quad.map(|q| q.map(|s| s as f32 / 16.0));
    let mut var = [0.0f32; N];
    let mut vars = [[0.0f32; N]; 4];
    for (k, x) in v.iter().enumerate() {
        let q = quadrant(k);
        for l in 0..N {
            let x = x[l] as f32;
            let a = x - mean[l];
            var[l] += a * a;
            let b = x - means[q][l];
            vars[q][l] += b * b;
        }
    }
    std::array::from_fn(|l| {
        let var = var[l] * VAR64;
        let sum = vars[0][l] * VAR16 + vars[1][l] * VAR16 + vars[2][l] * VAR16 + vars[3][l] * VAR16;
        if var > 0.0 {
            sum / var
        } else {
            var
        }
    })
}

/// The 8x8 integer DCT ([`super::fdct8x8`]) of `N` blocks in place: down each column, then
/// along each row.
#[inline(always)]
fn dct<const N: usize>(v: &mut [[i32; N]; 64]) {
    for c in 0..8 {
        let col = fdct8(std::array::from_fn(|k| v[8 * k + c]));
        for (k, x) in col.into_iter().enumerate() {
            v[8 * k + c] = x;
        }
    }
    for r in 0..8 {
        let row = fdct8(std::array::from_fn(|k| v[8 * r + k]));
        v[8 * r..8 * r + 8].copy_from_slice(&row);
    }
}

/// `N` blocks' masking threshold scales: `sqrt(sum of the AC coefficients' squares times their
/// masking weights * activity) / 32`, the sum in `f32` in raster order. (libvmaf takes the
/// root in `f64` of the `f32` product and rounds it to `f32`: the correctly rounded `f32`
/// root, which `f32::sqrt` is.)
#[inline(always)]
fn masking<const N: usize>(c: &[[i32; N]; 64], t: &Tables, activity: [f32; N]) -> [f32; N] {
    let mut m = [0.0f32; N];
    // mask[0] is 0: the DC term adds nothing, as libvmaf's loop skipping it.
    for (x, &w) in c.iter().zip(&t.mask) {
        for l in 0..N {
            m[l] += x[l].wrapping_mul(x[l]) as f32 * w;
        }
    }
    std::array::from_fn(|l| (m[l] * activity[l]).sqrt() / 32.0)
}

/// `N` block pairs' 64 squared weighted errors each (`out[k][lane]`, raster order):
/// reference `s`, distorted `d` as [`activity`] takes them; `s` and `d` are transformed in
/// place.
#[inline(always)]
fn block_terms<const N: usize>(
    s: &mut [[i32; N]; 64],
    d: &mut [[i32; N]; 64],
    t: &Tables,
    out: &mut [[f32; N]; 64],
) {
    let (sa, da) = (activity(s), activity(d));
    dct(s);
    dct(d);
    let (ms, md) = (masking(s, t, sa), masking(d, t, da));
    let m: [f32; N] = std::array::from_fn(|l| if md[l] > ms[l] { md[l] } else { ms[l] });
    for k in 0..64 {
        for l in 0..N {
            let err = s[k][l].wrapping_sub(d[k][l]).wrapping_abs() as f32;
            // The DC's divisor is +inf: its threshold is 0 and its error is kept whole.
            let thr = m[l] / t.divisor[k];
            let e = if err < thr { 0.0 } else { err - thr };
            let w = e * t.csf[k];
            out[k][l] = w * w;
        }
    }
}

/// One row of 8x8 blocks (top row `y`, `nx` blocks) of two planes: calls `f` with each
/// block's terms, left to right; [`LANES`] blocks at a time.
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
fn block_row(
    reference: &LumaPlane,
    distorted: &LumaPlane,
    y: usize,
    nx: usize,
    t: &Tables,
    f: &mut dyn FnMut(&[f32; 64]),
) {
    let mut s = [[0i32; LANES]; 64];
    let mut d = [[0i32; LANES]; 64];
    let mut out = [[0.0f32; LANES]; 64];
    let mut terms = [0.0f32; 64];
    for bx0 in (0..nx).step_by(LANES) {
        let n = LANES.min(nx - bx0);
        for i in 0..8 {
            let (rr, dr) = (reference.row(y + i), distorted.row(y + i));
            for l in 0..LANES {
                // Lanes past the row's end repeat its last block (their terms are dropped).
                let x = STEP * (bx0 + l.min(n - 1));
                for j in 0..8 {
                    s[8 * i + j][l] = i32::from(rr[x + j]);
                    d[8 * i + j][l] = i32::from(dr[x + j]);
                }
            }
        }
        block_terms(&mut s, &mut d, t, &mut out);
        for l in 0..n {
            for (x, o) in terms.iter_mut().zip(&out) {
                *x = o[l];
            }
            f(&terms);
        }
    }
}

/// Calls `f` with the 64 squared weighted errors (raster order) of every 8x8 block pair of the
/// top-left `w` x `h` of two planes (at most their size), blocks in raster order; returns the
/// number of blocks. [`plane`] adds them into one running `f32`.
pub fn for_blocks(
    reference: &LumaPlane,
    distorted: &LumaPlane,
    (w, h): (usize, usize),
    t: &Tables,
    mut f: impl FnMut(&[f32; 64]),
) -> usize {
    let (nx, ny) = (blocks(w), blocks(h));
    for by in 0..ny {
        block_row(reference, distorted, by * STEP, nx, t, &mut f);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::XorShift;

    /// Eight blocks side by side give each block's terms as one block alone, bit for bit, and
    /// the in-place DCT is [`super::super::fdct8x8`].
    #[test]
    fn lanes_equal_single_blocks() {
        let mut rng = XorShift(0xdead_beef_1234_5678);
        let t = Tables::new(1);
        for bits in [8u32, 10, 12] {
            let mask = (1u64 << bits) - 1;
            let mut s = [[0i32; LANES]; 64];
            let mut d = [[0i32; LANES]; 64];
            for k in 0..64 {
                for l in 0..LANES {
                    s[k][l] = (rng.next_u64() & mask) as i32;
                    // Lane 3 flat, lane 5 undistorted.
                    if l == 3 {
                        s[k][l] = 77;
                    }
                    let noise = (rng.next_u64() % 9) as i32 - 4;
                    d[k][l] = if l == 5 {
                        s[k][l]
                    } else {
                        (s[k][l] + noise).max(0)
                    };
                }
            }
            let mut out = [[0.0f32; LANES]; 64];
            let (mut s8, mut d8) = (s, d);
            block_terms(&mut s8, &mut d8, &t, &mut out);
            for l in 0..LANES {
                let mut s1: [[i32; 1]; 64] = std::array::from_fn(|k| [s[k][l]]);
                let mut d1: [[i32; 1]; 64] = std::array::from_fn(|k| [d[k][l]]);
                let plain: [i32; 64] = std::array::from_fn(|k| s[k][l]);
                let mut one = [[0.0f32; 1]; 64];
                block_terms(&mut s1, &mut d1, &t, &mut one);
                let dct = super::super::fdct8x8(&plain);
                for k in 0..64 {
                    assert_eq!(one[k][0].to_bits(), out[k][l].to_bits(), "lane {l} k {k}");
                    assert_eq!(s1[k][0], dct[k]);
                }
            }
            assert!(out.iter().all(|o| o[5] == 0.0));
        }
    }
}
