//! ADM's per-band stages: decoupling into restored and additive parts, the denominator,
//! the CSF weighting and contrast masking (`adm_decouple*`, `adm_csf*`, `adm_cm*`).

use super::super::params::{ceil_u32, cm_shifts, den_finish, Region};
use super::consts::*;

/// Shared inputs of [`decouple`].
pub(super) struct DecoupleCtx {
    pub(super) cos_1deg_sq: f32,
    pub(super) gain: f64,
}

/// `k = clamp(t / o, 0, 1)` in Q15 via the reciprocal table (`adm_decouple` /
/// `adm_decouple_s123`), branch-free: libvmaf's integer arithmetic, the reference that
/// [`restore_f64`] is tested against.
#[cfg(test)]
#[inline(always)]
pub(super) fn ratio<const S0: bool>(lut: &[i32; 65537], o: i32, t: i32) -> i64 {
    let k = if S0 {
        let r = lut[(wrap16(o) + 32768) as usize] as i64;
        ((r * t as i64 + 16384) >> 15) as i32 as i64
    } else {
        let abs = o.unsigned_abs();
        let big = abs >= 32768;
        // For |o| >= 2^15 libvmaf rounds |o| to its 15 leading bits (`get_best15_from32`).
        let shift = if big {
            17u32.wrapping_sub(abs.leading_zeros()) & 31
        } else {
            0
        };
        let round = if big {
            1u32 << (shift.wrapping_sub(1) & 31)
        } else {
            0
        };
        let msb = (abs.wrapping_add(round) >> shift).min(32768);
        let r = lut[(msb + 32768) as usize] as i64;
        let prod = r * t as i64;
        let prod = if o < 0 { prod.wrapping_neg() } else { prod };
        (prod + (1i64 << (14 + shift))) >> (15 + shift)
    };
    let k = if o == 0 { 32768 } else { k };
    k.clamp(0, 32768)
}

/// Restored part of distorted coefficient `t` given reference `o` (one orientation).
///
/// libvmaf applies the gain limit in `f64` (`MIN(rst * gain, t)` then truncation); with
/// `INT_GAIN` the gain is an integer in `1..=2^20`, for which the same value is computed exactly
/// in `i64` (`gain_i`). libvmaf's integer arithmetic, the reference that
/// [`decouple_row_f64`] is tested against.
#[cfg(test)]
#[inline(always)]
pub(super) fn restore<const S0: bool, const INT_GAIN: bool>(
    lut: &[i32; 65537],
    o: i32,
    t: i32,
    angle_flag: bool,
    gain: f64,
    gain_i: i64,
) -> i32 {
    let k = ratio::<S0>(lut, o, t);
    let rst = ((k * o as i64 + 16384) >> 15) as i32;
    // libvmaf tests the sign of (k / 32768.0f) * (o / 64.0f); it is that of o when k > 0.
    let enh = if INT_GAIN {
        let scaled = rst as i64 * gain_i;
        let t = t as i64;
        (if o > 0 { scaled.min(t) } else { scaled.max(t) }) as i32
    } else {
        let scaled = rst as f64 * gain;
        let tf = t as f64;
        let lo = if scaled < tf { scaled } else { tf };
        let hi = if scaled > tf { scaled } else { tf };
        (if o > 0 { lo } else { hi }) as i32
    };
    if angle_flag & (k > 0) & (o != 0) {
        enh
    } else {
        rst
    }
}

/// Largest magnitude (exclusive) of the h/v coefficients for which [`decouple_row_f64`] is exact:
/// products stay below 2^52 and the sums of two below 2^53.
pub(super) const F64_EXACT_LIMIT: i32 = 1 << 26;

/// Whether every h/v coefficient of a row is below [`F64_EXACT_LIMIT`] in magnitude.
#[inline(always)]
pub(super) fn row_fits_f64(oh: &[i32], ov: &[i32], th: &[i32], tv: &[i32]) -> bool {
    let m = |s: &[i32]| s.iter().fold(0u32, |m, &x| m.max(x.unsigned_abs()));
    m(oh).max(m(ov)).max(m(th)).max(m(tv)) < F64_EXACT_LIMIT as u32
}

/// `2^e` for `e` in `-1022..=1023`, built from the exponent bits.
#[inline(always)]
pub(super) fn pow2(e: i64) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// Restored coefficient of one orientation, evaluated in `f64` lanes (vectorisable).
///
/// Gives exactly the result of libvmaf's integer arithmetic (`restore`, kept for the tests):
/// the reciprocal `2^30 / msb` (`msb <= 2^15`) is truncated from a correctly rounded `f64`
/// quotient, which cannot cross an integer; all other products and sums are integers below
/// 2^53, hence exact, except `r * t` when `|r * t| >= 2^53`, where both the exact and the
/// rounded ratio lie far outside the clamp range `[0, 2^15]`. Power-of-two scalings followed
/// by `floor` are the arithmetic shifts.
#[inline(always)]
pub(super) fn restore_f64<const S0: bool>(o: i32, t: i32, angle_flag: bool, gain: f64) -> i32 {
    let of = o as f64;
    let tf = t as f64;
    let a = of.abs();
    // Scales 1..3 round |o| >= 2^15 to its 15 leading bits: shift = bit length - 15.
    let shift = if S0 {
        0
    } else {
        (((a.to_bits() >> 52) as i64) - 1023 - 14).max(0)
    };
    let down = pow2(-shift);
    let msb = (a * down + 0.5).floor();
    let r = (1073741824.0 / msb).trunc();
    let prod = if o < 0 { -(r * tf) } else { r * tf };
    let k = ((prod + pow2(14 + shift)) * pow2(-15 - shift)).floor();
    let k = if o == 0 { 32768.0 } else { k };
    let k = k.clamp(0.0, 32768.0);
    let rst = ((k * of + 16384.0) * (1.0 / 32768.0)).floor();
    let scaled = rst * gain;
    let lo = if scaled < tf { scaled } else { tf };
    let hi = if scaled > tf { scaled } else { tf };
    let enh = if o > 0 { lo } else { hi };
    let v = if angle_flag & (k > 0.0) & (o != 0) {
        enh
    } else {
        rst
    };
    trunc_to_i32(v)
}

/// `v as i32` for `|v| <= 2^31` (here `v` is `rst`, within `o`'s range, or lies between
/// `rst * gain` and `t`, within `t`'s), without the saturating conversion, which the compiler
/// cannot vectorise (see [`low_i32`]).
#[inline(always)]
fn trunc_to_i32(v: f64) -> i32 {
    low_i32(v.trunc())
}

/// The low 32 bits, as `i32`, of an integer `v` held in an `f64` (`|v| < 2^51`): adding
/// `1.5 * 2^52` leaves it in the low mantissa bits (two's complement below the 2^51 bit).
/// Vectorises where `as i32` (saturating) does not.
#[inline(always)]
pub(super) fn low_i32(v: f64) -> i32 {
    (v + 6755399441055744.0).to_bits() as u32 as i32
}

/// One row of [`decouple`] in `f64` lanes; every slice has the same length.
///
/// The angle test's dot product and squared magnitudes are rounded once to `f32` from their
/// exact values, as libvmaf does from `int64_t`: with `WIDE` they are summed in `i64` (exact for
/// any `i32` coefficients); without, in `f64`, exact when the h/v coefficients are below
/// [`F64_EXACT_LIMIT`] (always at scale 0, whose bands are 16-bit), and cheaper without
/// AVX-512's 64-bit multiplications and conversions. Everything else is exact for any `i32`
/// (see [`restore_f64`]).
#[inline(always)]
pub(super) fn decouple_row_f64<const S0: bool, const WIDE: bool>(
    o: [&[i32]; 3],
    t: [&[i32]; 3],
    r: [&mut [i32]; 3],
    a: [&mut [i32]; 3],
    cos_sq: f64,
    gain: f64,
) {
    let [oh, ov, od] = o;
    let [th, tv, td] = t;
    let [rh, rv, rd] = r;
    let [ah, av, ad] = a;
    let n = oh.len();
    let (Some(ov), Some(od), Some(th), Some(tv), Some(td)) = (
        ov.get(..n),
        od.get(..n),
        th.get(..n),
        tv.get(..n),
        td.get(..n),
    ) else {
        return;
    };
    let (Some(rh), Some(rv), Some(rd), Some(ah), Some(av), Some(ad)) = (
        rh.get_mut(..n),
        rv.get_mut(..n),
        rd.get_mut(..n),
        ah.get_mut(..n),
        av.get_mut(..n),
        ad.get_mut(..n),
    ) else {
        return;
    };
    for j in 0..n {
        let (o_h, o_v, o_d) = (oh[j], ov[j], od[j]);
        let (t_h, t_v, t_d) = (th[j], tv[j], td[j]);
        let (ot_dp, o_mag_sq, t_mag_sq) = if WIDE {
            let (io_h, io_v, it_h, it_v) = (o_h as i64, o_v as i64, t_h as i64, t_v as i64);
            (
                (io_h * it_h + io_v * it_v) as f32,
                (io_h * io_h + io_v * io_v) as f32,
                (it_h * it_h + it_v * it_v) as f32,
            )
        } else {
            let (fo_h, fo_v, ft_h, ft_v) = (o_h as f64, o_v as f64, t_h as f64, t_v as f64);
            (
                (fo_h * ft_h + fo_v * ft_v) as f32,
                (fo_h * fo_h + fo_v * fo_v) as f32,
                (ft_h * ft_h + ft_v * ft_v) as f32,
            )
        };
        let dp = ot_dp as f64 / 4096.0;
        let angle_flag = (dp >= 0.0)
            & (dp * dp >= cos_sq * (o_mag_sq as f64 / 4096.0) * (t_mag_sq as f64 / 4096.0));
        let r_h = restore_f64::<S0>(o_h, t_h, angle_flag, gain);
        let r_v = restore_f64::<S0>(o_v, t_v, angle_flag, gain);
        let r_d = restore_f64::<S0>(o_d, t_d, angle_flag, gain);
        if S0 {
            rh[j] = wrap16(r_h);
            rv[j] = wrap16(r_v);
            rd[j] = wrap16(r_d);
            ah[j] = wrap16(t_h.wrapping_sub(wrap16(r_h)));
            av[j] = wrap16(t_v.wrapping_sub(wrap16(r_v)));
            ad[j] = wrap16(t_d.wrapping_sub(wrap16(r_d)));
        } else {
            rh[j] = r_h;
            rv[j] = r_v;
            rd[j] = r_d;
            ah[j] = t_h.wrapping_sub(r_h);
            av[j] = t_v.wrapping_sub(r_v);
            ad[j] = t_d.wrapping_sub(r_d);
        }
    }
}

/// Splits the distorted detail bands into restored (`rst = k * ref`, `k = clamp(dis/ref, 0, 1)`,
/// with enhancement allowed up to the gain limit where ref and dis point within 1 degree) and
/// additive (`dis - rst`) parts over `reg` (`adm_decouple` at scale 0, `adm_decouple_s123`
/// otherwise). Bands are `[h, v, d]` with row stride `w`.
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
pub(super) fn decouple<const S0: bool>(
    ctx: &DecoupleCtx,
    refb: &[Vec<i32>; 3],
    disb: &[Vec<i32>; 3],
    rst: &mut [Vec<i32>; 3],
    add: &mut [Vec<i32>; 3],
    w: usize,
    reg: Region,
) {
    let len = reg.right - reg.left;
    let cos_sq = ctx.cos_1deg_sq as f64;
    let gain = ctx.gain;
    let [oh_b, ov_b, od_b] = refb;
    let [th_b, tv_b, td_b] = disb;
    let [rh_b, rv_b, rd_b] = rst;
    let [ah_b, av_b, ad_b] = add;
    for i in reg.top..reg.bottom {
        let s = i * w + reg.left;
        let r = s..s + len;
        let (Some(oh), Some(ov), Some(od), Some(th), Some(tv), Some(td)) = (
            oh_b.get(r.clone()),
            ov_b.get(r.clone()),
            od_b.get(r.clone()),
            th_b.get(r.clone()),
            tv_b.get(r.clone()),
            td_b.get(r.clone()),
        ) else {
            return;
        };
        let (Some(rh), Some(rv), Some(rd), Some(ah), Some(av), Some(ad)) = (
            rh_b.get_mut(r.clone()),
            rv_b.get_mut(r.clone()),
            rd_b.get_mut(r.clone()),
            ah_b.get_mut(r.clone()),
            av_b.get_mut(r.clone()),
            ad_b.get_mut(r),
        ) else {
            return;
        };
        let (o, t, r, a) = ([oh, ov, od], [th, tv, td], [rh, rv, rd], [ah, av, ad]);
        if S0 || row_fits_f64(oh, ov, th, tv) {
            decouple_row_f64::<S0, false>(o, t, r, a, cos_sq, gain);
        } else {
            decouple_row_f64::<S0, true>(o, t, r, a, cos_sq, gain);
        }
    }
}

/// Denominator of one scale from the reference detail bands `[h, v, d]` (`adm_csf_den_scale`
/// at scale 0, `adm_csf_den_s123` otherwise): per band the cube root of the CSF-weighted sum of
/// cubed magnitudes over `reg`, plus the noise floor term. Returns the `f32` sum of the three.
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
pub(super) fn csf_den<const S0: bool>(
    refb: &[Vec<i32>; 3],
    w: usize,
    reg: Region,
    scale: usize,
    rf: [f32; 3],
    noise_weight: f64,
) -> f32 {
    let len = reg.right - reg.left;
    let rows = reg.bottom - reg.top;
    let area = reg.area();
    let mut accum = [0u64; 3];
    if S0 {
        let shift = ((area as f64).log2() - 20.0).ceil().max(0.0) as u32;
        let add = round_add(shift);
        for (band, acc) in refb.iter().zip(accum.iter_mut()) {
            for i in reg.top..reg.bottom {
                let s = i * w + reg.left;
                let row = band.get(s..s + len).unwrap_or(&[]);
                let inner = row.iter().fold(0u64, |sum, &x| {
                    let a = wrap16(x).unsigned_abs() as u64;
                    sum.wrapping_add(a * a * a)
                });
                *acc = acc.wrapping_add(inner.wrapping_add(add) >> shift);
            }
        }
    } else {
        let shift_sq = [31u32, 30, 31]
            .get(scale.wrapping_sub(1))
            .copied()
            .unwrap_or(31);
        let add_sq = 1u64 << shift_sq;
        let shift_cub = ceil_u32((len as f64).log2());
        let add_cub = round_add(shift_cub);
        let shift_acc = ceil_u32((rows as f64).log2());
        let add_acc = round_add(shift_acc);
        for (band, acc) in refb.iter().zip(accum.iter_mut()) {
            for i in reg.top..reg.bottom {
                let s = i * w + reg.left;
                let row = band.get(s..s + len).unwrap_or(&[]);
                let inner = row.iter().fold(0u64, |sum, &x| {
                    let a = x.unsigned_abs() as u64;
                    let sq = (a * a).wrapping_add(add_sq) >> shift_sq;
                    sum.wrapping_add(sq.wrapping_mul(a).wrapping_add(add_cub) >> shift_cub)
                });
                *acc = acc.wrapping_add(inner.wrapping_add(add_acc) >> shift_acc);
            }
        }
        let conv = [32u32, 27, 23]
            .get(scale.wrapping_sub(1))
            .copied()
            .unwrap_or(23);
        let e = conv.wrapping_sub(shift_acc).wrapping_sub(shift_cub);
        return den_finish(accum, 2.0f64.powf(e as f64), rf, area, noise_weight);
    }
    let shift = ((area as f64).log2() - 20.0).ceil().max(0.0) as i32;
    den_finish(
        accum,
        2.0f64.powf((18 - shift) as f64),
        rf,
        area,
        noise_weight,
    )
}

/// Row `i` of [`csf`]'s `src` over `reg`'s columns, and the same columns of the strip row
/// `i - base` of `dst` and `flt`; `None` when a row lies outside its buffer.
#[inline]
fn csf_row<'a>(
    src: &'a [i32],
    dst: &'a mut [i32],
    flt: &'a mut [i32],
    w: usize,
    reg: Region,
    base: usize,
    i: usize,
) -> Option<(&'a [i32], &'a mut [i32], &'a mut [i32])> {
    let len = reg.right - reg.left;
    let r = i.checked_mul(w)? + reg.left;
    let o = i.checked_sub(base)?.checked_mul(w)? + reg.left;
    Some((
        src.get(r..r + len)?,
        dst.get_mut(o..o + len)?,
        flt.get_mut(o..o + len)?,
    ))
}

/// CSF weighting of one band over `reg` (`adm_csf` / `i4_adm_csf`): `dst = rf * src` and
/// `flt = |dst| / 30`, each rounded as libvmaf does. `irf`: band `t`'s fixed-point factor
/// ([`Csf::irf`]: Q21/Q21/Q23 at scale 0, Q32 otherwise). `src` holds the whole band; `dst`
/// and `flt` hold a strip of it from row `base` (`<= reg.top`) on, with the same row stride.
#[allow(clippy::too_many_arguments)]
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
pub(super) fn csf<const S0: bool>(
    src: &[i32],
    dst: &mut [i32],
    flt: &mut [i32],
    w: usize,
    reg: Region,
    base: usize,
    t: usize,
    irf: i64,
) {
    if S0 {
        let irf = irf as i32;
        let (add, shift) = if t == 2 {
            (65535i32, 17u32)
        } else {
            (16384, 15)
        };
        for i in reg.top..reg.bottom {
            let Some((s, d, f)) = csf_row(src, dst, flt, w, reg, base, i) else {
                return;
            };
            for ((&x, d), f) in s.iter().zip(d.iter_mut()).zip(f.iter_mut()) {
                let v = wrap16((irf * x).wrapping_add(add) >> shift);
                *d = v;
                *f = wrap16((FIX_ONE_BY_30 * v.abs() + 2048) >> 12);
            }
        }
    } else {
        for i in reg.top..reg.bottom {
            let Some((s, d, f)) = csf_row(src, dst, flt, w, reg, base, i) else {
                return;
            };
            for ((&x, d), f) in s.iter().zip(d.iter_mut()).zip(f.iter_mut()) {
                let v = ((irf * x as i64 + (1 << 27)) >> 28) as i32;
                *d = v;
                *f = ((I4_FIX_ONE_BY_30 * v.wrapping_abs() as i64 + I4_FLT_ROUND) >> 32) as i32;
            }
        }
    }
}

/// Row `y` (width `w`) of a band with row stride `w`; empty if out of range.
#[inline]
pub(super) fn band_row(b: &[i32], y: usize, w: usize) -> &[i32] {
    y.checked_mul(w)
        .and_then(|start| b.get(start..start.checked_add(w)?))
        .unwrap_or(&[])
}

/// 3x3 neighbourhood sum of `flt` around column `j` plus the centre term of `dst`, for the rows
/// `up`, `cur`, `dn`; `jm`/`jp` are the (mirrored) neighbour columns.
#[inline(always)]
pub(super) fn thr9<const S0: bool>(
    up: &[i32],
    cur: &[i32],
    dn: &[i32],
    c: &[i32],
    jm: usize,
    j: usize,
    jp: usize,
) -> i32 {
    let at = |s: &[i32], k: usize| s.get(k).copied().unwrap_or(0);
    let centre = centre_term::<S0>(at(c, j));
    at(up, jm)
        .wrapping_add(at(up, j))
        .wrapping_add(at(up, jp))
        .wrapping_add(at(cur, jm))
        .wrapping_add(centre)
        .wrapping_add(at(cur, jp))
        .wrapping_add(at(dn, jm))
        .wrapping_add(at(dn, j))
        .wrapping_add(at(dn, jp))
}

/// The centre tap of the masking threshold: `|x| / 15` rounded (Q12 at scale 0, Q32 with
/// libvmaf's negative rounding term otherwise).
#[inline(always)]
pub(super) fn centre_term<const S0: bool>(x: i32) -> i32 {
    if S0 {
        wrap16((ONE_BY_15 * x.abs() + 2048) >> 12)
    } else {
        ((I4_ONE_BY_15 * x.wrapping_abs() as i64 + I4_FLT_ROUND) >> 32) as i32
    }
}

/// Contrast masking (`adm_cm` / `i4_adm_cm`) of the rows `rows` (within `reg`'s): adds to
/// `accum` (per band h, v, d) each row's sum of cubed CSF-weighted `masked` coefficients over
/// `reg`'s columns, reduced by the masking threshold from (`dst`, `flt`) and shifted as
/// libvmaf does per row; [`cm_score`] makes the numerator from the sums of all of `reg`'s rows.
/// `irf`: the bands' fixed-point CSF factors ([`Csf::irf`]). Rows and columns outside the
/// band read mirrored neighbours (-1 reads 1, `n` reads `n - 1`). `masked` holds the whole
/// bands; `dst` and `flt` a strip from row `base` on ([`csf`]'s output), which must include
/// the rows around `rows` (one above, one below, mirrored).
#[allow(clippy::too_many_arguments)]
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
pub(super) fn cm<const S0: bool>(
    masked: &[Vec<i32>; 3],
    dst: &[Vec<i32>; 3],
    flt: &[Vec<i32>; 3],
    base: usize,
    thr: &mut [i32],
    w: usize,
    h: usize,
    reg: Region,
    rows: std::ops::Range<usize>,
    irf: [i64; 3],
    accum: &mut [i64; 3],
) {
    let (sub, sq, cub, shift_inner) = cm_shifts(S0, w, h);
    let add_inner = round_add(shift_inner) as i64;
    let len = reg.right - reg.left;

    for i in rows.start.max(reg.top)..rows.end.min(reg.bottom) {
        let iu = if i == 0 { 1 } else { i - 1 };
        let id = if i + 1 >= h { h - 1 } else { i + 1 };
        // Masking threshold of this row, columns reg.left..reg.right.
        let thr = thr.get_mut(reg.left..reg.right).unwrap_or(&mut []);
        thr.fill(0);
        for t in 0..3 {
            let (up, cur, dn) = (
                band_row(&flt[t], iu.wrapping_sub(base), w),
                band_row(&flt[t], i.wrapping_sub(base), w),
                band_row(&flt[t], id.wrapping_sub(base), w),
            );
            let c = band_row(&dst[t], i.wrapping_sub(base), w);
            // Interior columns without mirroring.
            let j0 = reg.left.max(1);
            let j1 = reg.right.min(w - 1);
            if j1 > j0 {
                let n = j1 - j0;
                let (Some(u0), Some(u1), Some(u2)) = (
                    up.get(j0 - 1..j1 - 1),
                    up.get(j0..j1),
                    up.get(j0 + 1..j1 + 1),
                ) else {
                    return;
                };
                let (Some(c0), Some(c2)) = (cur.get(j0 - 1..j1 - 1), cur.get(j0 + 1..j1 + 1))
                else {
                    return;
                };
                let (Some(d0), Some(d1), Some(d2)) = (
                    dn.get(j0 - 1..j1 - 1),
                    dn.get(j0..j1),
                    dn.get(j0 + 1..j1 + 1),
                ) else {
                    return;
                };
                let Some(cc) = c.get(j0..j1) else {
                    return;
                };
                let Some(out) = thr.get_mut(j0 - reg.left..j0 - reg.left + n) else {
                    return;
                };
                for k in 0..n {
                    let s = u0[k]
                        .wrapping_add(u1[k])
                        .wrapping_add(u2[k])
                        .wrapping_add(c0[k])
                        .wrapping_add(centre_term::<S0>(cc[k]))
                        .wrapping_add(c2[k])
                        .wrapping_add(d0[k])
                        .wrapping_add(d1[k])
                        .wrapping_add(d2[k]);
                    out[k] = out[k].wrapping_add(s);
                }
            }
            // Border columns.
            if reg.left == 0 {
                if let Some(o) = thr.get_mut(0) {
                    *o = o.wrapping_add(thr9::<S0>(up, cur, dn, c, 1, 0, 1));
                }
            }
            if reg.right == w {
                if let Some(o) = thr.get_mut(w - 1 - reg.left) {
                    *o = o.wrapping_add(thr9::<S0>(up, cur, dn, c, w - 2, w - 1, w - 1));
                }
            }
        }
        let thr = &*thr;
        for b in 0..3 {
            let s = i * w + reg.left;
            let Some(src) = masked[b].get(s..s + len) else {
                return;
            };
            let (rfb, subb, sqb, cubb) = (irf[b], sub[b], sq[b], cub[b]);
            let add_sq = 1i64 << (sqb - 1);
            let add_cub = round_add(cubb) as i64;
            let inner: i64 = if S0 {
                src.iter().zip(thr.iter()).fold(0i64, |acc, (&x, &th)| {
                    let x = (x * rfb as i32)
                        .wrapping_abs()
                        .wrapping_sub(th.wrapping_shl(subb))
                        .max(0);
                    let x_sq = ((x as i64 * x as i64 + add_sq) >> sqb) as i32;
                    acc.wrapping_add((x_sq as i64 * x as i64 + add_cub) >> cubb)
                })
            } else {
                src.iter().zip(thr.iter()).fold(0i64, |acc, (&x, &th)| {
                    let x = ((x as i64 * rfb + (1 << 27)) >> 28) as i32;
                    let x = x.wrapping_abs().wrapping_sub(th).max(0);
                    let x_sq = ((x as i64 * x as i64 + add_sq) >> sqb) as i32;
                    acc.wrapping_add((x_sq as i64 * x as i64 + add_cub) >> cubb)
                })
            };
            accum[b] = accum[b].wrapping_add(inner.wrapping_add(add_inner) >> shift_inner);
        }
    }
}

/// The contrast-masking numerator of one scale from [`cm`]'s sums over all of `reg`'s rows:
/// per band the cube root of the sum (scaled back from fixed point), plus the noise floor term
/// `noise_weight * area`, summed over the bands as libvmaf's `f32`.
pub(super) fn cm_score<const S0: bool>(
    accum: [i64; 3],
    w: usize,
    h: usize,
    reg: Region,
    scale: usize,
    noise_weight: f64,
) -> f32 {
    let (_, _, cub, shift_inner) = cm_shifts(S0, w, h);
    let f_accum: [f32; 3] = if S0 {
        let e =
            |c: u32, base: u32| 2.0f64.powf(base.wrapping_sub(c).wrapping_sub(shift_inner) as f64);
        [
            (accum[0] as f64 / e(cub[0], 52)) as f32,
            (accum[1] as f64 / e(cub[1], 52)) as f32,
            (accum[2] as f64 / e(cub[2], 57)) as f32,
        ]
    } else {
        let base = [45u32, 39, 36]
            .get(scale.wrapping_sub(1))
            .copied()
            .unwrap_or(36);
        let fs = 2.0f64.powf(base.wrapping_sub(cub[0]).wrapping_sub(shift_inner) as f64) as f32;
        [
            accum[0] as f32 / fs,
            accum[1] as f32 / fs,
            accum[2] as f32 / fs,
        ]
    };
    let noise = ((reg.area() as f64 * noise_weight) as f32).powf(1.0f32 / 3.0);
    let n = f_accum.map(|a| a.powf(1.0f32 / 3.0) + noise);
    n[0] + n[1] + n[2]
}

#[cfg(test)]
mod tests {
    //! The `f64` decoupling against libvmaf's integer arithmetic ([`restore`] with the
    //! reciprocal table), on coefficients of every magnitude up to the `i32` range: the
    //! scales 1..3 bands reach 2^28 on real content, past [`F64_EXACT_LIMIT`].

    use super::*;

    /// libvmaf's `div_lookup`: `2^30 / i` truncated, at `32768 + i` for `i` in
    /// `-32768..=32768`, `i != 0`.
    fn div_lookup() -> Vec<i32> {
        let mut lut = vec![0i32; 65537];
        for i in 1..=32768i32 {
            let recip = (1i32 << 30) / i;
            lut[(32768 + i) as usize] = recip;
            lut[(32768 - i) as usize] = -recip;
        }
        lut
    }

    /// The reference row: libvmaf's `adm_decouple_s123` per coefficient.
    fn reference_row(
        lut: &[i32; 65537],
        o: [&[i32]; 3],
        t: [&[i32]; 3],
        cos_sq: f64,
        gain: f64,
    ) -> ([Vec<i32>; 3], [Vec<i32>; 3]) {
        let int_gain = gain.fract() == 0.0 && (1.0..=1048576.0).contains(&gain);
        let n = o[0].len();
        let mut r: [Vec<i32>; 3] = Default::default();
        let mut a: [Vec<i32>; 3] = Default::default();
        for j in 0..n {
            let (o_h, o_v) = (o[0][j] as i64, o[1][j] as i64);
            let (t_h, t_v) = (t[0][j] as i64, t[1][j] as i64);
            let ot_dp = (o_h * t_h).wrapping_add(o_v * t_v);
            let o_mag_sq = (o_h * o_h).wrapping_add(o_v * o_v);
            let t_mag_sq = (t_h * t_h).wrapping_add(t_v * t_v);
            let dp = ot_dp as f32 as f64 / 4096.0;
            let angle = dp >= 0.0
                && dp * dp
                    >= cos_sq
                        * (o_mag_sq as f32 as f64 / 4096.0)
                        * (t_mag_sq as f32 as f64 / 4096.0);
            for b in 0..3 {
                let v = if int_gain {
                    restore::<false, true>(lut, o[b][j], t[b][j], angle, gain, gain as i64)
                } else {
                    restore::<false, false>(lut, o[b][j], t[b][j], angle, gain, gain as i64)
                };
                r[b].push(v);
                a[b].push(t[b][j].wrapping_sub(v));
            }
        }
        (r, a)
    }

    #[test]
    fn f64_rows_equal_libvmaf_integer_decoupling() {
        let lut_v = div_lookup();
        let Ok(lut) = <&[i32; 65537]>::try_from(&lut_v[..]) else {
            panic!("table size");
        };
        let c = (std::f64::consts::PI / 180.0).cos();
        let cos_sq = ((c * c) as f32) as f64;
        let mut rng = crate::features::XorShift(0x9e37_79b9_7f4a_7c15);
        let n = 4096;
        let mut rows = 0;
        for bits in [12u32, 20, 26, 27, 29, 31] {
            for gain in [100.0, 1.0, 2.5] {
                // Reference coefficients of `bits` bits; distorted ones near them (scaled,
                // rotated, sign-flipped) or unrelated, so every branch is taken.
                let mut val = |m: u32| {
                    let v = (rng.next_u64() >> (64 - m)) as i64 - (1i64 << (m - 1));
                    v.clamp(i32::MIN as i64 + 1, i32::MAX as i64) as i32
                };
                let o: [Vec<i32>; 3] =
                    core::array::from_fn(|_| (0..n).map(|_| val(bits)).collect());
                let t: [Vec<i32>; 3] = core::array::from_fn(|b| {
                    (0..n)
                        .map(|j| {
                            let x = o[b][j] as i64;
                            let v = match j % 6 {
                                0 => x / 2,
                                1 => x + x / 64,
                                2 => -x,
                                3 => x * 3 / 2,
                                4 => 0,
                                _ => (rng.next_u64() >> 40) as i64 - (1 << 23),
                            };
                            v.clamp(i32::MIN as i64 + 1, i32::MAX as i64) as i32
                        })
                        .collect()
                });
                let (rr, ra) = reference_row(
                    lut,
                    [&o[0], &o[1], &o[2]],
                    [&t[0], &t[1], &t[2]],
                    cos_sq,
                    gain,
                );
                for wide in [true, false] {
                    if !wide && bits > 26 {
                        continue;
                    }
                    let mut r: [Vec<i32>; 3] = core::array::from_fn(|_| vec![0; n]);
                    let mut a: [Vec<i32>; 3] = core::array::from_fn(|_| vec![0; n]);
                    {
                        let [r0, r1, r2] = &mut r;
                        let [a0, a1, a2] = &mut a;
                        let (o, t) = ([&o[0][..], &o[1], &o[2]], [&t[0][..], &t[1], &t[2]]);
                        let (rs, as_) = ([&mut r0[..], r1, r2], [&mut a0[..], a1, a2]);
                        if wide {
                            decouple_row_f64::<false, true>(o, t, rs, as_, cos_sq, gain);
                        } else {
                            decouple_row_f64::<false, false>(o, t, rs, as_, cos_sq, gain);
                        }
                    }
                    assert_eq!(
                        r, rr,
                        "restored, {bits}-bit coefficients, gain {gain}, wide {wide}"
                    );
                    assert_eq!(
                        a, ra,
                        "additive, {bits}-bit coefficients, gain {gain}, wide {wide}"
                    );
                    rows += 1;
                }
            }
        }
        assert_eq!(rows, 3 * 6 + 3 * 3);
    }
}
