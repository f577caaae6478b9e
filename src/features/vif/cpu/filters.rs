//! VIF's fixed-point filter passes: the fused vertical and horizontal passes of the
//! statistic (means, second moments, per-pixel information terms) and of the subsampling
//! between scales, in column blocks whose sums stay in registers.

use super::common::*;
#[cfg(target_arch = "x86_64")]
use super::simd::{self, Wide};

/// Filter sums of one column block: the means of both planes and the second moments, the
/// latter as sums over the low (`*_lo`) and high (`*_hi`) 16-bit halves of the products
/// (with `NARROW` only `*_lo`, holding the whole 32-bit sum). Every sum is taken modulo
/// 2^32 and its exact value fits 32 bits because the taps sum to 65536, so the order of
/// accumulation and the folding of symmetric taps do not change any bit.
pub(super) struct Sums<const L: usize> {
    m1: [u32; L],
    m2: [u32; L],
    xx_lo: [u32; L],
    xx_hi: [u32; L],
    yy_lo: [u32; L],
    yy_hi: [u32; L],
    xy_lo: [u32; L],
    xy_hi: [u32; L],
}

impl<const L: usize> Sums<L> {
    const ZERO: Self = Self {
        m1: [0; L],
        m2: [0; L],
        xx_lo: [0; L],
        xx_hi: [0; L],
        yy_lo: [0; L],
        yy_hi: [0; L],
        xy_lo: [0; L],
        xy_hi: [0; L],
    };
}

/// Adds `f * (x_a + x_b)` to `acc` for each lane, a pair of symmetric taps (`x_b = 0` for the
/// centre tap).
#[inline(always)]
pub(super) fn add_pair<const L: usize>(acc: &mut [u32; L], f: u32, a: &[u32; L], b: &[u32; L]) {
    for l in 0..L {
        acc[l] = acc[l].wrapping_add(f.wrapping_mul(a[l].wrapping_add(b[l])));
    }
}

/// Adds `f * (lo16(a) + lo16(b))` to `lo` and `f * (hi16(a) + hi16(b))` to `hi`.
#[inline(always)]
pub(super) fn add_pair_split<const L: usize>(
    lo: &mut [u32; L],
    hi: &mut [u32; L],
    f: u32,
    a: &[u32; L],
    b: &[u32; L],
) {
    for l in 0..L {
        lo[l] = lo[l].wrapping_add(f.wrapping_mul((a[l] & 0xffff) + (b[l] & 0xffff)));
        hi[l] = hi[l].wrapping_add(f.wrapping_mul((a[l] >> 16) + (b[l] >> 16)));
    }
}

/// Lane-wise `a * b` of 16-bit samples: the 16-bit (wrapping) product with `NARROW`, else
/// the full 32-bit product.
#[inline(always)]
pub(super) fn products<const L: usize, const NARROW: bool>(a: &[u16; L], b: &[u16; L]) -> [u32; L] {
    let mut p = [0u32; L];
    for l in 0..L {
        p[l] = if NARROW {
            u32::from(a[l].wrapping_mul(b[l]))
        } else {
            u32::from(a[l]) * u32::from(b[l])
        };
    }
    p
}

#[inline(always)]
pub(super) fn widen<const L: usize>(a: &[u16; L]) -> [u32; L] {
    let mut p = [0u32; L];
    for l in 0..L {
        p[l] = u32::from(a[l]);
    }
    p
}

/// Fused vertical pass of the statistic for columns `j..j + L` into the row buffers at
/// `PAD + j`: means `(sum_k filt[k] * x + mu_round) >> mu_shift` truncated to 16 bits, and the
/// second moments `sum_k filt[k] * a * b`, with `NARROW` unshifted (8-bit samples, 16-bit
/// products), else libvmaf's 64-bit sum rounded and shifted by `s = sq_shift <= 16`, built
/// from the 16-bit halves as `(hi << (16 - s)) + ((lo + sq_round) >> s)` (exact modulo 2^32).
/// `PART`: all five rows ([`BOTH`]), the reference's `mu1` and `ref_sq` ([`REF`], `rd`
/// unread) or the other three ([`DIS`]).
#[inline(always)]
pub(super) fn v_stat_block<const N: usize, const L: usize, const NARROW: bool, const PART: u8>(
    rr: &[&[u16]; N],
    rd: &[&[u16]; N],
    filt: &[u16; N],
    j: usize,
    rnd: (u32, u32, u32, u32),
    row: &mut RowBuffers,
) {
    let (mu_round, mu_shift, sq_round, sq_shift) = rnd;
    let (with_ref, with_dis) = (PART != DIS, PART != REF);
    let mut s = Sums::<L>::ZERO;
    let zero = [0u32; L];
    let half = N / 2;
    for k in 0..=half {
        let m = N - 1 - k;
        let (Some(&f), Some(ra), Some(rb), Some(da), Some(db)) = (
            filt.get(k),
            rr.get(k).and_then(|r| chunk::<u16, L>(r, j)),
            rr.get(m).and_then(|r| chunk::<u16, L>(r, j)),
            rd.get(k).and_then(|r| chunk::<u16, L>(r, j)),
            rd.get(m).and_then(|r| chunk::<u16, L>(r, j)),
        ) else {
            continue;
        };
        let f = u32::from(f);
        let (xa, xb, ya, yb) = (widen(ra), widen(rb), widen(da), widen(db));
        let (pxa, pya, pca) = (
            products::<L, NARROW>(ra, ra),
            products::<L, NARROW>(da, da),
            products::<L, NARROW>(ra, da),
        );
        if k == half {
            if with_ref {
                add_pair(&mut s.m1, f, &xa, &zero);
            }
            if with_dis {
                add_pair(&mut s.m2, f, &ya, &zero);
            }
            if NARROW {
                if with_ref {
                    add_pair(&mut s.xx_lo, f, &pxa, &zero);
                }
                if with_dis {
                    add_pair(&mut s.yy_lo, f, &pya, &zero);
                    add_pair(&mut s.xy_lo, f, &pca, &zero);
                }
            } else {
                if with_ref {
                    add_pair_split(&mut s.xx_lo, &mut s.xx_hi, f, &pxa, &zero);
                }
                if with_dis {
                    add_pair_split(&mut s.yy_lo, &mut s.yy_hi, f, &pya, &zero);
                    add_pair_split(&mut s.xy_lo, &mut s.xy_hi, f, &pca, &zero);
                }
            }
            continue;
        }
        let (pxb, pyb, pcb) = (
            products::<L, NARROW>(rb, rb),
            products::<L, NARROW>(db, db),
            products::<L, NARROW>(rb, db),
        );
        if with_ref {
            add_pair(&mut s.m1, f, &xa, &xb);
        }
        if with_dis {
            add_pair(&mut s.m2, f, &ya, &yb);
        }
        if NARROW {
            if with_ref {
                add_pair(&mut s.xx_lo, f, &pxa, &pxb);
            }
            if with_dis {
                add_pair(&mut s.yy_lo, f, &pya, &pyb);
                add_pair(&mut s.xy_lo, f, &pca, &pcb);
            }
        } else {
            if with_ref {
                add_pair_split(&mut s.xx_lo, &mut s.xx_hi, f, &pxa, &pxb);
            }
            if with_dis {
                add_pair_split(&mut s.yy_lo, &mut s.yy_hi, f, &pya, &pyb);
                add_pair_split(&mut s.xy_lo, &mut s.xy_hi, f, &pca, &pcb);
            }
        }
    }
    let at = PAD + j;
    if with_ref {
        store_means(&s.m1, &mut row.mu1, at, mu_round, mu_shift);
        store_moment::<L, NARROW>(&s.xx_lo, &s.xx_hi, &mut row.ref_sq, at, sq_round, sq_shift);
    }
    if with_dis {
        store_means(&s.m2, &mut row.mu2, at, mu_round, mu_shift);
        store_moment::<L, NARROW>(&s.yy_lo, &s.yy_hi, &mut row.dis_sq, at, sq_round, sq_shift);
        store_moment::<L, NARROW>(&s.xy_lo, &s.xy_hi, &mut row.ref_dis, at, sq_round, sq_shift);
    }
}

/// [`v_stat_block`]'s means: `(src + mu_round) >> mu_shift` truncated to 16 bits at `out[at..]`.
#[inline(always)]
fn store_means<const L: usize>(src: &[u32; L], out: &mut [u16], at: usize, round: u32, shift: u32) {
    if let Some(o) = chunk_mut::<u16, L>(out, at) {
        for l in 0..L {
            o[l] = (src[l].wrapping_add(round) >> shift) as u16;
        }
    }
}

/// [`v_stat_block`]'s second moments at `out[at..]`: `lo` with `NARROW`, else
/// `(hi << (16 - sq_shift)) + ((lo + sq_round) >> sq_shift)`.
#[inline(always)]
fn store_moment<const L: usize, const NARROW: bool>(
    lo: &[u32; L],
    hi: &[u32; L],
    out: &mut [u32],
    at: usize,
    sq_round: u32,
    sq_shift: u32,
) {
    let up = 16u32.saturating_sub(sq_shift);
    if let Some(o) = chunk_mut::<u32, L>(out, at) {
        for l in 0..L {
            o[l] = if NARROW {
                lo[l]
            } else {
                (hi[l].wrapping_shl(up)).wrapping_add(lo[l].wrapping_add(sq_round) >> sq_shift)
            };
        }
    }
}

/// Fused horizontal pass of the statistic for output columns `j..j + L` (means in Q32 and
/// the moments rounded as libvmaf, `hi + ((lo + 32768) >> 16)` of the 64-bit sum), followed
/// by the variances/covariance and the per-pixel information terms. `PART`: [`BOTH`] planes
/// (a pair), the reference's mean and variance only ([`REF`]: stored in `ref_m1` / `ref_s1`
/// at `j`, nothing added to `acc`) or the rest ([`DIS`]: the reference's read from there).
#[inline(always)]
pub(super) fn h_stat_block<const N: usize, const L: usize, const PART: u8>(
    row: &mut RowBuffers,
    filt: &[u16; N],
    j: usize,
    acc: &mut Accum,
    table: &[u16; 65536],
    limit: f64,
) {
    let (with_ref, with_dis) = (PART != DIS, PART != REF);
    let half = N / 2;
    let base = PAD + j - half;
    let span = base..base + N - 1 + L;
    let RowBuffers {
        mu1,
        mu2,
        ref_sq,
        dis_sq,
        ref_dis,
        ref_m1,
        ref_s1,
    } = row;
    let (Some(mu1), Some(mu2), Some(xx), Some(yy), Some(xy)) = (
        mu1.get(span.clone()),
        mu2.get(span.clone()),
        ref_sq.get(span.clone()),
        dis_sq.get(span.clone()),
        ref_dis.get(span),
    ) else {
        return;
    };
    let mut s = Sums::<L>::ZERO;
    let zero = [0u32; L];
    for k in 0..=half {
        let m = N - 1 - k;
        let (Some(&f), Some(a1), Some(b1), Some(a2), Some(b2)) = (
            filt.get(k),
            chunk::<u16, L>(mu1, k),
            chunk::<u16, L>(mu1, m),
            chunk::<u16, L>(mu2, k),
            chunk::<u16, L>(mu2, m),
        ) else {
            continue;
        };
        let (Some(xa), Some(xb), Some(ya), Some(yb), Some(ca), Some(cb)) = (
            chunk::<u32, L>(xx, k),
            chunk::<u32, L>(xx, m),
            chunk::<u32, L>(yy, k),
            chunk::<u32, L>(yy, m),
            chunk::<u32, L>(xy, k),
            chunk::<u32, L>(xy, m),
        ) else {
            continue;
        };
        let f = u32::from(f);
        if k == half {
            if with_ref {
                add_pair(&mut s.m1, f, &widen(a1), &zero);
            }
            if with_dis {
                add_pair(&mut s.m2, f, &widen(a2), &zero);
            }
            if with_ref {
                add_pair_split(&mut s.xx_lo, &mut s.xx_hi, f, xa, &zero);
            }
            if with_dis {
                add_pair_split(&mut s.yy_lo, &mut s.yy_hi, f, ya, &zero);
                add_pair_split(&mut s.xy_lo, &mut s.xy_hi, f, ca, &zero);
            }
        } else {
            if with_ref {
                add_pair(&mut s.m1, f, &widen(a1), &widen(b1));
            }
            if with_dis {
                add_pair(&mut s.m2, f, &widen(a2), &widen(b2));
            }
            if with_ref {
                add_pair_split(&mut s.xx_lo, &mut s.xx_hi, f, xa, xb);
            }
            if with_dis {
                add_pair_split(&mut s.yy_lo, &mut s.yy_hi, f, ya, yb);
                add_pair_split(&mut s.xy_lo, &mut s.xy_hi, f, ca, cb);
            }
        }
    }
    let mut s1 = [0i32; L];
    let mut s2 = [0i32; L];
    let mut s12 = [0i32; L];
    if PART == BOTH {
        for l in 0..L {
            let xx = s.xx_hi[l].wrapping_add(s.xx_lo[l].wrapping_add(32768) >> 16);
            let yy = s.yy_hi[l].wrapping_add(s.yy_lo[l].wrapping_add(32768) >> 16);
            let xy = s.xy_hi[l].wrapping_add(s.xy_lo[l].wrapping_add(32768) >> 16);
            let (m1, m2) = (u64::from(s.m1[l]), u64::from(s.m2[l]));
            let mu1_sq = ((m1 * m1).wrapping_add(1 << 31) >> 32) as u32;
            let mu2_sq = ((m2 * m2).wrapping_add(1 << 31) >> 32) as u32;
            let mu1_mu2 = ((m1 * m2).wrapping_add(1 << 31) >> 32) as u32;
            s1[l] = xx.wrapping_sub(mu1_sq) as i32;
            s2[l] = (yy.wrapping_sub(mu2_sq) as i32).max(0);
            s12[l] = xy.wrapping_sub(mu1_mu2) as i32;
        }
    } else if PART == REF {
        let (Some(om), Some(os)) = (
            chunk_mut::<u32, L>(ref_m1, j),
            chunk_mut::<i32, L>(ref_s1, j),
        ) else {
            return;
        };
        for l in 0..L {
            let xx = s.xx_hi[l].wrapping_add(s.xx_lo[l].wrapping_add(32768) >> 16);
            let m1 = u64::from(s.m1[l]);
            let mu1_sq = ((m1 * m1).wrapping_add(1 << 31) >> 32) as u32;
            om[l] = s.m1[l];
            os[l] = xx.wrapping_sub(mu1_sq) as i32;
        }
        return;
    } else {
        let (Some(rm), Some(rs)) = (chunk::<u32, L>(ref_m1, j), chunk::<i32, L>(ref_s1, j)) else {
            return;
        };
        for l in 0..L {
            let yy = s.yy_hi[l].wrapping_add(s.yy_lo[l].wrapping_add(32768) >> 16);
            let xy = s.xy_hi[l].wrapping_add(s.xy_lo[l].wrapping_add(32768) >> 16);
            let (m1, m2) = (u64::from(rm[l]), u64::from(s.m2[l]));
            let mu2_sq = ((m2 * m2).wrapping_add(1 << 31) >> 32) as u32;
            let mu1_mu2 = ((m1 * m2).wrapping_add(1 << 31) >> 32) as u32;
            s1[l] = rs[l];
            s2[l] = (yy.wrapping_sub(mu2_sq) as i32).max(0);
            s12[l] = xy.wrapping_sub(mu1_mu2) as i32;
        }
    }
    pixels_block(&s1, &s2, &s12, acc, table, limit);
}

/// libvmaf's `log2_32`: log2 of `x >= 2^15` in Q11 (2048 per octave) from the top 16 bits.
#[inline(always)]
pub(super) fn log2_32(table: &[u16; 65536], x: u32) -> i32 {
    let k = 16i32 - x.leading_zeros() as i32;
    let idx = x.checked_shr(k as u32).unwrap_or(0) as u16;
    i32::from(table[usize::from(idx)]) + 2048 * k
}

/// libvmaf's `log2_64`: as [`log2_32`] for `x >= 2^17`.
#[inline(always)]
pub(super) fn log2_64(table: &[u16; 65536], x: u64) -> i64 {
    let k = 48i32 - x.leading_zeros() as i32;
    let idx = x.checked_shr(k as u32).unwrap_or(0) as u16;
    i64::from(table[usize::from(idx)]) + 2048 * i64::from(k)
}

/// Per-pixel information terms of `L` pixels (the body of libvmaf's statistic loops).
///
/// The double-precision gain and the two log arguments are first computed for every lane
/// (branch-free, so it vectorises); the table look-ups and sums then only use the lanes
/// whose conditions hold, so the result is the same as evaluating them per pixel.
#[inline(always)]
pub(super) fn pixels_block<const L: usize>(
    s1: &[i32; L],
    s2: &[i32; L],
    s12: &[i32; L],
    acc: &mut Accum,
    table: &[u16; 65536],
    limit: f64,
) {
    const EPS: f64 = 65536.0 * 1.0e-10;
    let mut numer1 = [0u32; L];
    let mut numer1_tmp = [0u64; L];
    for l in 0..L {
        let (sigma1_sq, sigma2_sq, sigma12) =
            (f64::from(s1[l]), f64::from(s2[l]), f64::from(s12[l]));
        let g = sigma12 / (sigma1_sq + EPS);
        // C converts the double to int32_t (truncation); out-of-range results are
        // negative there and here, and both clamp to 0.
        let sv_sq = ((sigma2_sq - g * sigma12) as i32).max(0);
        let g = if g < limit { g } else { limit };
        let n1 = (sv_sq as u32).wrapping_add(SIGMA_NSQ as u32);
        numer1[l] = n1;
        numer1_tmp[l] = ((g * g * sigma1_sq) as i64).wrapping_add(i64::from(n1)) as u64;
    }
    let (mut num_log, mut den_log, mut num_non_log, mut den_non_log) = (0i64, 0i64, 0i64, 0i64);
    for l in 0..L {
        let (sigma1_sq, sigma2_sq, sigma12) = (s1[l], s2[l], s12[l]);
        let is_log = sigma1_sq >= SIGMA_NSQ;
        let gain = is_log & (sigma12 > 0) & (sigma2_sq > 0);
        let t = (SIGMA_NSQ as u32).wrapping_add(sigma1_sq as u32);
        let d = i64::from(log2_32(table, t) - 2048 * 17);
        let n = log2_64(table, numer1_tmp[l]) - log2_64(table, u64::from(numer1[l]));
        den_log += if is_log { d } else { 0 };
        num_log += if gain { n } else { 0 };
        num_non_log += if is_log { 0 } else { i64::from(sigma2_sq) };
        den_non_log += i64::from(!is_log);
    }
    acc.num_log += num_log;
    acc.den_log += den_log;
    acc.num_non_log += num_non_log;
    acc.den_non_log += den_non_log;
}

/// One output row of the statistic's `PART` (see [`BOTH`]) from its tap rows `rr` / `rd`:
/// the vertical pass into `row`, the mirrored margins of the rows it wrote, and the
/// horizontal pass, adding the row's terms to `acc` (nothing with [`REF`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn stat_row<const N: usize, const NARROW: bool, const PART: u8>(
    rr: &[&[u16]; N],
    rd: &[&[u16]; N],
    filt: &[u16; N],
    w: usize,
    rnd: (u32, u32, u32, u32),
    row: &mut RowBuffers,
    wide: Option<&mut Wide>,
    table: &[u16; 65536],
    limit: f64,
    acc: &mut Accum,
) {
    let half = N / 2;
    let done = match wide.as_deref() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `wide` exists only with the kernel the CPU runs (`Wide::detect`).
        Some(wide) => unsafe {
            simd::v_stat_row::<N, NARROW, PART>(wide, rr, rd, filt, w, rnd, row)
        },
        _ => 0,
    };
    blocked!(done, w, |j, L| v_stat_block::<N, L, NARROW, PART>(
        rr, rd, filt, j, rnd, row
    ));
    if PART != DIS {
        mirror_pad(&mut row.mu1, w, half);
        mirror_pad(&mut row.ref_sq, w, half);
    }
    if PART != REF {
        mirror_pad(&mut row.mu2, w, half);
        mirror_pad(&mut row.dis_sq, w, half);
        mirror_pad(&mut row.ref_dis, w, half);
    }
    let done = match wide {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `wide` exists only with the kernel the CPU runs (`Wide::detect`).
        Some(wide) => unsafe { simd::h_stat_row::<N, PART>(row, wide, filt, w, table, limit, acc) },
        _ => 0,
    };
    blocked!(done, w, |j, L| h_stat_block::<N, L, PART>(
        row, filt, j, acc, table, limit
    ));
}

/// Statistic sums of one scale with the `N`-tap filter `filt`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn stat_scale<const N: usize, const NARROW: bool>(
    r: Image,
    d: Image,
    filt: &[u16; N],
    vp: VpShift,
    row: &mut RowBuffers,
    mut wide: Option<&mut Wide>,
    table: &[u16; 65536],
    limit: f64,
) -> Accum {
    let rnd = vp.params();
    let w = r.width.min(d.width);
    let h = r.height.min(d.height);
    let mut acc = Accum::default();
    for i in 0..h {
        let rr = gather_rows::<N>(r, i);
        let rd = gather_rows::<N>(d, i);
        stat_row::<N, NARROW, BOTH>(
            &rr,
            &rd,
            filt,
            w,
            rnd,
            row,
            wide.as_deref_mut(),
            table,
            limit,
            &mut acc,
        );
    }
    acc
}

/// [`stat_scale`] of several distorted planes `ds` against one reference `r` (a ladder), into
/// `accs` (one per plane, each equal to [`stat_scale`]'s for its pair): row by row, the
/// reference's mean and variance once ([`REF`]), then each plane's half ([`DIS`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn stat_scale_ladder<const N: usize, const NARROW: bool>(
    r: Image,
    ds: &[Image],
    filt: &[u16; N],
    vp: VpShift,
    row: &mut RowBuffers,
    mut wide: Option<&mut Wide>,
    table: &[u16; 65536],
    limit: f64,
    accs: &mut [Accum],
) {
    let rnd = vp.params();
    let w = ds.iter().fold(r.width, |w, d| w.min(d.width));
    let h = ds.iter().fold(r.height, |h, d| h.min(d.height));
    for i in 0..h {
        let rr = gather_rows::<N>(r, i);
        let mut unused = Accum::default();
        stat_row::<N, NARROW, REF>(
            &rr,
            &rr,
            filt,
            w,
            rnd,
            row,
            wide.as_deref_mut(),
            table,
            limit,
            &mut unused,
        );
        for (d, acc) in ds.iter().zip(accs.iter_mut()) {
            let rd = gather_rows::<N>(*d, i);
            stat_row::<N, NARROW, DIS>(
                &rr,
                &rd,
                filt,
                w,
                rnd,
                row,
                wide.as_deref_mut(),
                table,
                limit,
                acc,
            );
        }
    }
}

/// Statistic sums of one scale, compiled for several x86-64 feature levels and picked at
/// run time. `VpShift::Narrow` is only used at scale 0.
#[allow(clippy::too_many_arguments)]
#[multiversion::multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
pub(super) fn stat_sums(
    r: Image,
    d: Image,
    scale: usize,
    vp: VpShift,
    row: &mut RowBuffers,
    wide: Option<&mut Wide>,
    table: &[u16; 65536],
    limit: f64,
) -> Accum {
    match (scale, vp) {
        (0, VpShift::Narrow) => stat_scale::<17, true>(r, d, &FILTER0, vp, row, wide, table, limit),
        (0, _) => stat_scale::<17, false>(r, d, &FILTER0, vp, row, wide, table, limit),
        (1, _) => stat_scale::<9, false>(r, d, &FILTER1, vp, row, wide, table, limit),
        (2, _) => stat_scale::<5, false>(r, d, &FILTER2, vp, row, wide, table, limit),
        _ => stat_scale::<3, false>(r, d, &FILTER3, vp, row, wide, table, limit),
    }
}

/// [`stat_sums`] of a ladder ([`stat_scale_ladder`]), dispatched the same way.
#[allow(clippy::too_many_arguments)]
#[multiversion::multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
pub(super) fn stat_sums_ladder(
    r: Image,
    ds: &[Image],
    scale: usize,
    vp: VpShift,
    row: &mut RowBuffers,
    wide: Option<&mut Wide>,
    table: &[u16; 65536],
    limit: f64,
    accs: &mut [Accum],
) {
    let (t, l) = (table, limit);
    match (scale, vp) {
        (0, VpShift::Narrow) => {
            stat_scale_ladder::<17, true>(r, ds, &FILTER0, vp, row, wide, t, l, accs);
        }
        (0, _) => stat_scale_ladder::<17, false>(r, ds, &FILTER0, vp, row, wide, t, l, accs),
        (1, _) => stat_scale_ladder::<9, false>(r, ds, &FILTER1, vp, row, wide, t, l, accs),
        (2, _) => stat_scale_ladder::<5, false>(r, ds, &FILTER2, vp, row, wide, t, l, accs),
        _ => stat_scale_ladder::<3, false>(r, ds, &FILTER3, vp, row, wide, t, l, accs),
    }
}

/// libvmaf's `float` numerator and denominator of one scale from its sums.
fn num_den(acc: Accum) -> (f32, f32) {
    let num = acc.num_log as f64 / 2048.0
        + (acc.den_non_log as f64 - (acc.num_non_log as f64 / 16384.0) / 65025.0);
    let den = acc.den_log as f64 / 2048.0 + acc.den_non_log as f64;
    (num as f32, den as f32)
}

/// VIF numerator and denominator (libvmaf `float`s) of one scale.
#[allow(clippy::too_many_arguments)]
pub(super) fn statistic(
    r: Image,
    d: Image,
    scale: usize,
    vp: VpShift,
    row: &mut RowBuffers,
    wide: Option<&mut Wide>,
    log2_table: &[u16; 65536],
    limit: f64,
) -> (f32, f32) {
    num_den(stat_sums(r, d, scale, vp, row, wide, log2_table, limit))
}

/// [`statistic`] of each distorted plane of `ds` against the reference `r`, in order, the
/// reference's half computed once ([`stat_scale_ladder`]): one `(num, den)` per plane.
#[allow(clippy::too_many_arguments)]
pub(super) fn statistic_ladder(
    r: Image,
    ds: &[Image],
    scale: usize,
    vp: VpShift,
    row: &mut RowBuffers,
    wide: Option<&mut Wide>,
    log2_table: &[u16; 65536],
    limit: f64,
) -> Vec<(f32, f32)> {
    let mut accs = vec![Accum::default(); ds.len()];
    stat_sums_ladder(r, ds, scale, vp, row, wide, log2_table, limit, &mut accs);
    accs.into_iter().map(num_den).collect()
}

/// Vertical means `(sum_k filt[k] * rows[k][j] + round) >> shift` (16-bit) of columns
/// `j..j + L` into `out[PAD + j..]`, symmetric taps folded.
#[inline(always)]
pub(super) fn v_mean_block<const N: usize, const L: usize>(
    rows: &[&[u16]; N],
    filt: &[u16; N],
    j: usize,
    round: u32,
    shift: u32,
    out: &mut [u16],
) {
    let mut m = [0u32; L];
    let zero = [0u32; L];
    let half = N / 2;
    for k in 0..=half {
        let (Some(&f), Some(a), Some(b)) = (
            filt.get(k),
            rows.get(k).and_then(|r| chunk::<u16, L>(r, j)),
            rows.get(N - 1 - k).and_then(|r| chunk::<u16, L>(r, j)),
        ) else {
            continue;
        };
        let f = u32::from(f);
        if k == half {
            add_pair(&mut m, f, &widen(a), &zero);
        } else {
            add_pair(&mut m, f, &widen(a), &widen(b));
        }
    }
    if let Some(o) = chunk_mut::<u16, L>(out, PAD + j) {
        for l in 0..L {
            o[l] = (m[l].wrapping_add(round) >> shift) as u16;
        }
    }
}

/// Horizontal filter of the padded row `src` for columns `j..j + L`, rounded to 16 bits
/// (`(sum + 32768) >> 16`); the even columns `c` go to `out[c / 2]`.
#[inline(always)]
pub(super) fn h_decimate_block<const N: usize, const L: usize>(
    src: &[u16],
    filt: &[u16; N],
    j: usize,
    out: &mut [u16],
) {
    let half = N / 2;
    let base = PAD + j - half;
    let Some(win) = src.get(base..base + N - 1 + L) else {
        return;
    };
    let mut m = [0u32; L];
    let zero = [0u32; L];
    for k in 0..=half {
        let (Some(&f), Some(a), Some(b)) = (
            filt.get(k),
            chunk::<u16, L>(win, k),
            chunk::<u16, L>(win, N - 1 - k),
        ) else {
            continue;
        };
        let f = u32::from(f);
        if k == half {
            add_pair(&mut m, f, &widen(a), &zero);
        } else {
            add_pair(&mut m, f, &widen(a), &widen(b));
        }
    }
    let first = j.div_ceil(2);
    let skip = j % 2;
    if let Some(o) = out.get_mut(first..) {
        for (o, &s) in o.iter_mut().zip(m.iter().skip(skip).step_by(2)) {
            *o = (s.wrapping_add(32768) >> 16) as u16;
        }
    }
}

/// Decimation of one scale with the `N`-tap filter (see [`subsample`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn subsample_scale<const N: usize>(
    r: Image,
    d: Image,
    filt: &[u16; N],
    round: u32,
    shift: u32,
    row: &mut RowBuffers,
    mut wide: Option<&mut Wide>,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    let half = N / 2;
    let w = r.width.min(d.width);
    let h = r.height.min(d.height);
    let (w2, h2) = (w / 2, h / 2);
    let rows_out = out_r
        .chunks_exact_mut(w2.max(1))
        .zip(out_d.chunks_exact_mut(w2.max(1)));
    for (i2, (or, od)) in (0..h2).zip(rows_out) {
        let rr = gather_rows::<N>(r, 2 * i2);
        let rd = gather_rows::<N>(d, 2 * i2);
        let RowBuffers { mu1, mu2, .. } = &mut *row;
        for (rows, mu) in [(&rr, &mut *mu1), (&rd, &mut *mu2)] {
            let done = match wide.as_deref() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `wide` exists only with the kernel the CPU runs (`Wide::detect`).
                Some(wide) => unsafe {
                    simd::v_mean_row::<N>(wide, rows, filt, w, round, shift, mu)
                },
                _ => 0,
            };
            blocked!(done, w, |j, L| v_mean_block::<N, L>(
                rows, filt, j, round, shift, mu
            ));
            mirror_pad(mu, w, half);
        }
        for (mu, out) in [(&*mu1, &mut *or), (&*mu2, &mut *od)] {
            let done = match wide.as_deref_mut() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: as above.
                Some(wide) => unsafe { simd::h_decimate_row::<N>(wide, mu, filt, w, out) },
                _ => 0,
            };
            blocked!(done, w, |j, L| h_decimate_block::<N, L>(mu, filt, j, out));
        }
    }
}

/// [`subsample_scale`] of one plane: `img` filtered with the `N`-tap filter and decimated
/// into `out` (the same arithmetic; the row buffer `mu1` as scratch).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn subsample_one_scale<const N: usize>(
    img: Image,
    filt: &[u16; N],
    round: u32,
    shift: u32,
    row: &mut RowBuffers,
    mut wide: Option<&mut Wide>,
    out: &mut [u16],
) {
    let half = N / 2;
    let (w, h) = (img.width, img.height);
    let (w2, h2) = (w / 2, h / 2);
    for (i2, o) in (0..h2).zip(out.chunks_exact_mut(w2.max(1))) {
        let rows = gather_rows::<N>(img, 2 * i2);
        let mu = &mut row.mu1;
        let done = match wide.as_deref() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `wide` exists only with the kernel the CPU runs (`Wide::detect`).
            Some(wide) => unsafe { simd::v_mean_row::<N>(wide, &rows, filt, w, round, shift, mu) },
            _ => 0,
        };
        blocked!(done, w, |j, L| v_mean_block::<N, L>(
            &rows, filt, j, round, shift, mu
        ));
        mirror_pad(mu, w, half);
        let mu = &row.mu1;
        let done = match wide.as_deref_mut() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Some(wide) => unsafe { simd::h_decimate_row::<N>(wide, mu, filt, w, o) },
            _ => 0,
        };
        blocked!(done, w, |j, L| h_decimate_block::<N, L>(mu, filt, j, o));
    }
}

/// [`subsample`] of one plane (a ladder's reference, or one of its renditions): the same
/// values as the plane's half of [`subsample`], packed into `out`, returned as an image.
#[multiversion::multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
#[allow(clippy::too_many_arguments)]
pub(super) fn subsample_one<'o>(
    img: Image,
    next_scale: usize,
    round: u32,
    shift: u32,
    row: &mut RowBuffers,
    wide: Option<&mut Wide>,
    out: &'o mut [u16],
) -> Image<'o> {
    match next_scale {
        1 => subsample_one_scale::<9>(img, &FILTER1, round, shift, row, wide, out),
        2 => subsample_one_scale::<5>(img, &FILTER2, round, shift, row, wide, out),
        _ => subsample_one_scale::<3>(img, &FILTER3, round, shift, row, wide, out),
    }
    let (w2, h2) = (img.width / 2, img.height / 2);
    Image {
        data: out,
        stride: w2,
        width: w2,
        height: h2,
    }
}

/// [`subsample`]'s filtering, compiled for several x86-64 feature levels.
#[multiversion::multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
#[allow(clippy::too_many_arguments)]
pub(super) fn subsample_planes(
    r: Image,
    d: Image,
    next_scale: usize,
    round: u32,
    shift: u32,
    row: &mut RowBuffers,
    wide: Option<&mut Wide>,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    match next_scale {
        1 => subsample_scale::<9>(r, d, &FILTER1, round, shift, row, wide, out_r, out_d),
        2 => subsample_scale::<5>(r, d, &FILTER2, round, shift, row, wide, out_r, out_d),
        _ => subsample_scale::<3>(r, d, &FILTER3, round, shift, row, wide, out_r, out_d),
    }
}

/// Low-pass filters `r`/`d` with the filter of `next_scale` and keeps every second row and
/// column (libvmaf `subsample_rd_*` + `decimate_and_pad`), writing packed planes into
/// `out_r`/`out_d`; returns them as images. `round`/`shift` are the vertical pass's
/// rounding (`1 << (bpc - 1)`, `bpc` from scale 0, else `32768`, `16`).
#[allow(clippy::too_many_arguments)]
pub(super) fn subsample<'o>(
    r: Image,
    d: Image,
    next_scale: usize,
    round: u32,
    shift: u32,
    row: &mut RowBuffers,
    wide: Option<&mut Wide>,
    out_r: &'o mut [u16],
    out_d: &'o mut [u16],
) -> (Image<'o>, Image<'o>) {
    let w = r.width.min(d.width);
    let h = r.height.min(d.height);
    let (w2, h2) = (w / 2, h / 2);
    subsample_planes(r, d, next_scale, round, shift, row, wide, out_r, out_d);
    let img = |data: &'o [u16]| Image {
        data,
        stride: w2,
        width: w2,
        height: h2,
    };
    (img(out_r), img(out_d))
}
