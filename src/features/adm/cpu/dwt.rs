//! ADM's 2-D Daubechies-2 DWT (`adm_dwt2_8/16`, `adm_dwt2_s123`): scale 0 from the luma
//! samples, scales 1..3 from the previous approximation band.

use super::bands::low_i32;
use super::consts::*;
use crate::video::frame::LumaPlane;

/// Row access to a DWT input.
pub(super) trait DwtSource {
    type T: Copy;
    fn row(&self, y: usize, w: usize) -> &[Self::T];
}

pub(super) struct PlaneRows<'p, 'a>(pub(super) &'p LumaPlane<'a>);
impl DwtSource for PlaneRows<'_, '_> {
    type T = u16;
    #[inline]
    fn row(&self, y: usize, w: usize) -> &[u16] {
        let start = y * self.0.stride;
        self.0.data.get(start..start + w).unwrap_or(&[])
    }
}

pub(super) struct BandRows<'b>(pub(super) &'b [i32], pub(super) usize);
impl DwtSource for BandRows<'_> {
    type T = i32;
    #[inline]
    fn row(&self, y: usize, w: usize) -> &[i32] {
        let start = y * self.1;
        self.0.get(start..start + w).unwrap_or(&[])
    }
}

/// Vertical 4-tap pass of one output row into `lo`/`hi` (each exactly `w` long).
pub(super) trait VerticalPass: Copy {
    fn vertical(rows: [&[Self]; 4], lo: &mut [i32], hi: &mut [i32], param: u32);
}

impl VerticalPass for u16 {
    /// Scale 0: `i32` arithmetic (wrapping as C does), the low-pass output re-centred by
    /// `FILTER_LO_SUM * 2^(bpc-1)`, both rounded by `bpc` bits and stored as `int16_t`.
    #[inline]
    fn vertical(rows: [&[u16]; 4], lo: &mut [i32], hi: &mut [i32], bpc: u32) {
        let add = 1i32 << (bpc - 1);
        let offset = FILTER_LO_SUM.wrapping_mul(add);
        let [r0, r1, r2, r3] = rows;
        let it = lo
            .iter_mut()
            .zip(hi.iter_mut())
            .zip(r0.iter().zip(r1))
            .zip(r2.iter().zip(r3));
        for (((l, hh), (&a, &b)), (&c, &d)) in it {
            let (a, b, c, d) = (a as i32, b as i32, c as i32, d as i32);
            let sl = (FILTER_LO[0] * a)
                .wrapping_add(FILTER_LO[1] * b)
                .wrapping_add(FILTER_LO[2] * c)
                .wrapping_add(FILTER_LO[3] * d)
                .wrapping_sub(offset);
            let sh = (FILTER_HI[0] * a)
                .wrapping_add(FILTER_HI[1] * b)
                .wrapping_add(FILTER_HI[2] * c)
                .wrapping_add(FILTER_HI[3] * d);
            *l = wrap16(sl.wrapping_add(add) >> bpc);
            *hh = wrap16(sh.wrapping_add(add) >> bpc);
        }
    }
}

impl VerticalPass for i32 {
    /// Scales 1..3: libvmaf's `int64_t` sums (no rounding at scale 1, 16-bit rounding shift at 2
    /// and 3), taken in `f64` lanes, where they are exact (see [`shifted_sum_f64`]).
    #[inline]
    fn vertical(rows: [&[i32]; 4], lo: &mut [i32], hi: &mut [i32], scale: u32) {
        let (add, shift) = if scale == 1 { (0, 0) } else { (32768, 16) };
        let [r0, r1, r2, r3] = rows;
        let it = lo
            .iter_mut()
            .zip(hi.iter_mut())
            .zip(r0.iter().zip(r1))
            .zip(r2.iter().zip(r3));
        for (((l, hh), (&a, &b)), (&c, &d)) in it {
            let x = [a, b, c, d];
            *l = shifted_sum_f64(&FILTER_LO, x, add, shift);
            *hh = shifted_sum_f64(&FILTER_HI, x, add, shift);
        }
    }
}

/// `((sum_k taps[k] * x[k] + add) >> shift) as i32` of libvmaf's `int64_t` arithmetic, in `f64`:
/// every product is below 2^46 in magnitude (taps below 2^15, samples `i32`) and every partial
/// sum below 2^48, so the sums are exact; the shift is a power-of-two scaling and `floor`, and
/// the final truncation to 32 bits is [`low_i32`].
/// Unlike `i64` multiplications (three micro-operations per AVX-512 lane group, none before
/// AVX-512), `f64` ones vectorise on every target.
#[inline(always)]
pub(super) fn shifted_sum_f64(taps: &[i32; 4], x: [i32; 4], add: i32, shift: u32) -> i32 {
    let t = |k: usize| f64::from(taps[k]) * f64::from(x[k]);
    let s = t(0) + t(1) + t(2) + t(3) + f64::from(add);
    let q = (s * f64::from_bits(((1023 - shift as u64) & 0x7ff) << 52)).floor();
    low_i32(q)
}

/// Horizontal 4-tap pass with step 2 over a padded row (`pad[k + 1]` = tap `k`, `k` in
/// `-1..=w+1`). Writes low-pass and high-pass outputs (each `out_lo.len()` long). The padded row
/// is first split into odd taps (`sa[j]` = tap `2j - 1`) and even taps (`sb[j]` = tap `2j`) so
/// that the filter runs over contiguous slices.
#[inline]
pub(super) fn horizontal<const S0: bool>(
    pad: &[i32],
    out_lo: &mut [i32],
    out_hi: &mut [i32],
    scale: u32,
    sa: &mut [i32],
    sb: &mut [i32],
) {
    let n = out_lo.len().min(out_hi.len());
    let (Some(sa), Some(sb)) = (sa.get_mut(..n + 1), sb.get_mut(..n + 1)) else {
        return;
    };
    for ((a, b), pr) in sa.iter_mut().zip(sb.iter_mut()).zip(pad.chunks_exact(2)) {
        *a = pr[0];
        *b = pr[1];
    }
    let (a0, a1, b0, b1) = (&sa[..n], &sa[1..], &sb[..n], &sb[1..]);
    let taps = a0.iter().zip(b0).zip(a1.iter().zip(b1));
    let outs = out_lo.iter_mut().zip(out_hi.iter_mut());
    if S0 {
        for (((&a, &b), (&c, &d)), (ol, oh)) in taps.zip(outs) {
            let sl = FILTER_LO[0] * a + FILTER_LO[1] * b + FILTER_LO[2] * c + FILTER_LO[3] * d;
            let sh = FILTER_HI[0] * a + FILTER_HI[1] * b + FILTER_HI[2] * c + FILTER_HI[3] * d;
            *ol = wrap16(sl.wrapping_add(32768) >> 16);
            *oh = wrap16(sh.wrapping_add(32768) >> 16);
        }
    } else {
        let (add, shift) = match scale {
            2 => (32768, 16u32),
            _ => (16384, 15u32),
        };
        for (((&a, &b), (&c, &d)), (ol, oh)) in taps.zip(outs) {
            let x = [a, b, c, d];
            *ol = shifted_sum_f64(&FILTER_LO, x, add, shift);
            *oh = shifted_sum_f64(&FILTER_HI, x, add, shift);
        }
    }
}

/// One level of libvmaf's 2-D DWT (`adm_dwt2_8/16`, `adm_dwt2_s123_combined`) of a `w` x `h`
/// input into four `ceil(w/2)` x `ceil(h/2)` bands (row stride `ceil(w/2)`).
///
/// Taps outside the input are mirrored as libvmaf does: index -1 reads 1, index `n + m` reads
/// `n - 1 - m`. `param` is `bpc` at scale 0 and the scale index otherwise.
#[allow(clippy::too_many_arguments)]
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
pub(super) fn dwt2<const S0: bool, S: DwtSource>(
    src: &S,
    w: usize,
    h: usize,
    param: u32,
    tmp_lo: &mut [i32],
    tmp_hi: &mut [i32],
    band_a: &mut [i32],
    hvd: &mut [Vec<i32>; 3],
    deint: &mut [i32],
) where
    S::T: VerticalPass,
{
    let ow = w.div_ceil(2);
    let oh = h.div_ceil(2);
    let [band_h, band_v, band_d] = hvd;
    let out = band_a
        .chunks_exact_mut(ow)
        .zip(band_v.chunks_exact_mut(ow))
        .zip(band_h.chunks_exact_mut(ow).zip(band_d.chunks_exact_mut(ow)))
        .take(oh);
    for (i, ((a, v), (hh, d))) in out.enumerate() {
        let k = 2 * i as isize;
        let rows = [
            src.row(dwt_mirror(k - 1, h), w),
            src.row(dwt_mirror(k, h), w),
            src.row(dwt_mirror(k + 1, h), w),
            src.row(dwt_mirror(k + 2, h), w),
        ];
        <S::T as VerticalPass>::vertical(
            rows,
            tmp_lo.get_mut(1..w + 1).unwrap_or(&mut []),
            tmp_hi.get_mut(1..w + 1).unwrap_or(&mut []),
            param,
        );
        for pad in [&mut *tmp_lo, &mut *tmp_hi] {
            // pad[0] = tap -1 = sample 1; pad[w + 1] = tap w = sample w-1; pad[w + 2] = sample w-2.
            if let (Some(&s1), Some(&sl), Some(&sl2)) =
                (pad.get(2), pad.get(w), pad.get(w.wrapping_sub(1)))
            {
                if let Some(p) = pad.get_mut(0) {
                    *p = s1;
                }
                if let Some(p) = pad.get_mut(w + 1) {
                    *p = sl;
                }
                if let Some(p) = pad.get_mut(w + 2) {
                    *p = sl2;
                }
            }
        }
        let (sa, sb) = deint.split_at_mut(deint.len() / 2);
        horizontal::<S0>(tmp_lo, a, v, param, sa, sb);
        horizontal::<S0>(tmp_hi, hh, d, param, sa, sb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`shifted_sum_f64`] equals libvmaf's `int64_t` arithmetic on every magnitude of `i32`.
    #[test]
    fn f64_sums_equal_i64() {
        let mut rng = crate::features::XorShift(0x2545_f491_4f6c_dd1d);
        let edges = [i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX];
        for round in 0..200_000 {
            let bits = 1 + (round % 32) as u32;
            let x: [i32; 4] = core::array::from_fn(|_| {
                if round % 7 == 0 {
                    edges[(rng.next_u64() % 6) as usize]
                } else {
                    ((rng.next_u64() as i64) >> (64 - bits)) as i32
                }
            });
            for (taps, (add, shift)) in [FILTER_LO, FILTER_HI]
                .iter()
                .flat_map(|t| [(0, 0u32), (32768, 16), (16384, 15)].map(|r| (t, r)))
            {
                let s: i64 = taps.iter().zip(x).map(|(&f, v)| f as i64 * v as i64).sum();
                let want = ((s + add as i64) >> shift) as i32;
                assert_eq!(
                    shifted_sum_f64(taps, x, add, shift),
                    want,
                    "{x:?} {add} {shift}"
                );
            }
        }
    }
}
