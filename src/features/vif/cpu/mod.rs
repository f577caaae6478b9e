//! Integer VIF (visual information fidelity) feature extractor, bit-exact with the integer
//! path of Netflix/vmaf v3.2.0 (`libvmaf/src/feature/integer_vif.c`, whose x86 AVX2 variant
//! `x86/vif_avx2.c` performs the same integer arithmetic).
//!
//! The luma planes are analysed at four scales. At every scale a separable low-pass filter
//! (17, 9, 5 and 3 taps, 16-bit fixed point, mirrored borders) gives local means, variances and
//! the covariance of reference and distorted samples; the per-pixel information terms are
//! summed in fixed point through a 2048-step log2 table. Between scales the planes are
//! low-pass filtered with the next scale's filter and decimated by two in each direction.
//!
//! Everything is integer arithmetic except the per-pixel gain `g` (double precision, as in
//! libvmaf) and the final per-scale numerator/denominator, which libvmaf stores as `float`;
//! this module rounds them to `f32` at the same points so the scores are identical.

use super::params::{VifConfig, VifScores, FEATURE, MIN_HEIGHT, MIN_WIDTH};
use crate::video::frame::{FeatureError, LumaPlane};

/// Integer VIF extractor for one frame geometry; holds every scratch buffer so that
/// [`Vif::compute`] does not allocate.
pub struct Vif {
    width: usize,
    height: usize,
    bpc: u32,
    /// `log2_table[i] = round(log2f(i) * 2048)` for `i` in `32767..=65535`, 0 below.
    log2_table: Box<[u16; 65536]>,
    /// Decimated reference/distorted planes of scales 1..=3, packed (`stride == width`).
    scaled_ref: [Vec<u16>; 3],
    scaled_dis: [Vec<u16>; 3],
    /// A ladder's distorted planes of scales 1..=3, one set per rendition (grown on first
    /// use to the most renditions seen).
    ladder_dis: Vec<[Vec<u16>; 3]>,
    /// Vertically filtered rows, `PAD` samples of mirrored margin on both sides.
    row: RowBuffers,
    /// The AVX2 horizontal pass's scratch, when the CPU has AVX2 and FMA.
    wide: Option<Wide>,
}

impl Vif {
    /// Sizes all scratch for `width x height` planes of `bpc` bits per sample.
    ///
    /// # Errors
    /// [`FeatureError::FrameTooSmall`] when `width < MIN_WIDTH` or `height < MIN_HEIGHT`.
    /// A `bpc` outside `8..=16` is rejected as [`FeatureError::WrongGeometry`] (no plane
    /// can match it).
    pub fn new(width: usize, height: usize, bpc: u32) -> Result<Self, FeatureError> {
        FeatureError::check_new(FEATURE, (width, height, bpc), (MIN_WIDTH, MIN_HEIGHT))?;
        let mut log2_table = Box::new([0u16; 65536]);
        for (i, v) in log2_table.iter_mut().enumerate().skip(32767) {
            // libvmaf: (uint16_t)round(log2f((float)i) * 2048). log2f is correctly rounded
            // here on glibc; rounding the double log2 to float reproduces it for all i.
            let l = (i as f64).log2() as f32 * 2048.0f32;
            *v = f64::from(l).round() as u16;
        }
        let scaled = |s: u32| vec![0u16; (width >> s) * (height >> s)];
        let row_len = width + 2 * PAD;
        #[cfg(target_arch = "x86_64")]
        let wide = Wide::detect(width);
        #[cfg(not(target_arch = "x86_64"))]
        let wide = None;
        Ok(Self {
            width,
            height,
            bpc,
            log2_table,
            scaled_ref: [scaled(1), scaled(2), scaled(3)],
            scaled_dis: [scaled(1), scaled(2), scaled(3)],
            ladder_dis: Vec::new(),
            row: RowBuffers {
                mu1: vec![0; row_len],
                mu2: vec![0; row_len],
                ref_sq: vec![0; row_len],
                dis_sq: vec![0; row_len],
                ref_dis: vec![0; row_len],
                ref_m1: vec![0; width],
                ref_s1: vec![0; width],
            },
            wide,
        })
    }

    /// Scores `distorted` against `reference` at the four VIF scales.
    ///
    /// Both planes must have the width, height and `bpc` given to [`Vif::new`]; samples must
    /// be below `1 << bpc` (larger values give unspecified scores, never a panic). For
    /// `bpc == 8` the result equals libvmaf's for 8-bit (`uint8_t`) pictures.
    ///
    /// # Errors
    /// [`FeatureError::WrongGeometry`] when a plane's width, height or `bpc` differs from
    /// `new()`'s, or its `data`/`stride` cannot hold that geometry.
    pub fn compute(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        cfg: &VifConfig,
    ) -> Result<VifScores, FeatureError> {
        let ref_img = self.check(reference)?;
        let dis_img = self.check(distorted)?;
        let bpc = self.bpc;
        let limit = cfg.enhn_gain_limit;
        let Self {
            log2_table,
            scaled_ref,
            scaled_dis,
            row,
            wide,
            ..
        } = self;
        let log2_table: &[u16; 65536] = log2_table;

        let mut scores = VifScores::default();
        let [r1, r2, r3] = scaled_ref;
        let [d1, d2, d3] = scaled_dis;

        // Scale 0 statistic straight from the input planes.
        let (num, den) = if bpc == 8 {
            statistic(
                ref_img,
                dis_img,
                0,
                VpShift::Narrow,
                row,
                wide.as_mut(),
                log2_table,
                limit,
            )
        } else {
            let sq = 2 * (bpc - 8);
            let vp = VpShift::Wide {
                mu_round: 1 << (bpc - 1),
                mu_shift: bpc,
                sq_round: 1 << (sq - 1),
                sq_shift: sq,
            };
            statistic(
                ref_img,
                dis_img,
                0,
                vp,
                row,
                wide.as_mut(),
                log2_table,
                limit,
            )
        };
        set_scale(&mut scores, 0, num, den);

        // Scale 1..=3: subsample the previous scale, then the statistic.
        let mut scaled =
            |s: usize, (r, d): (Image, Image), row: &mut RowBuffers, wide: Option<&mut Wide>| {
                let (num, den) = statistic(r, d, s, VpShift::SCALED, row, wide, log2_table, limit);
                set_scale(&mut scores, s, num, den);
            };
        let s1 = subsample(
            ref_img,
            dis_img,
            1,
            1 << (bpc - 1),
            bpc,
            row,
            wide.as_mut(),
            r1,
            d1,
        );
        scaled(1, s1, row, wide.as_mut());
        let s2 = subsample(s1.0, s1.1, 2, 32768, 16, row, wide.as_mut(), r2, d2);
        scaled(2, s2, row, wide.as_mut());
        let s3 = subsample(s2.0, s2.1, 3, 32768, 16, row, wide.as_mut(), r3, d3);
        scaled(3, s3, row, wide.as_mut());
        Ok(scores)
    }

    /// [`Vif::compute`] of several distorted planes against one reference. At each scale,
    /// row by row, the reference's half of the statistic (its filtered mean and variance)
    /// is computed once and each distorted plane's half (its mean and variance, the
    /// covariance and the information terms) reads it; the reference's decimated planes
    /// are made once too. Returns each plane's scores, in order, equal bit for bit to
    /// [`Vif::compute`]'s for that pair: every value is made by the same arithmetic, and
    /// each plane's sums are accumulated in the same order.
    ///
    /// Errors: as [`Vif::compute`].
    pub fn compute_ladder(
        &mut self,
        reference: &LumaPlane,
        distorted: &[&LumaPlane],
        cfg: &VifConfig,
    ) -> Result<Vec<VifScores>, FeatureError> {
        let ref_img = self.check(reference)?;
        let dis_imgs = distorted
            .iter()
            .map(|d| self.check(d))
            .collect::<Result<Vec<_>, _>>()?;
        let (width, height, bpc) = (self.width, self.height, self.bpc);
        let limit = cfg.enhn_gain_limit;
        let Self {
            log2_table,
            scaled_ref,
            ladder_dis,
            row,
            wide,
            ..
        } = self;
        let log2_table: &[u16; 65536] = log2_table;
        let scaled = |s: u32| vec![0u16; (width >> s) * (height >> s)];
        while ladder_dis.len() < dis_imgs.len() {
            ladder_dis.push([scaled(1), scaled(2), scaled(3)]);
        }
        let vp0 = if bpc == 8 {
            VpShift::Narrow
        } else {
            let sq = 2 * (bpc - 8);
            VpShift::Wide {
                mu_round: 1 << (bpc - 1),
                mu_shift: bpc,
                sq_round: 1 << (sq - 1),
                sq_shift: sq,
            }
        };
        let mut out = vec![VifScores::default(); dis_imgs.len()];
        let mut score =
            |s: usize, r: Image, ds: &[Image], row: &mut RowBuffers, wide: Option<&mut Wide>| {
                let vp = if s == 0 { vp0 } else { VpShift::SCALED };
                let sums = statistic_ladder(r, ds, s, vp, row, wide, log2_table, limit);
                for (scores, (num, den)) in out.iter_mut().zip(sums) {
                    set_scale(scores, s, num, den);
                }
            };
        score(0, ref_img, &dis_imgs, row, wide.as_mut());
        // Each rendition's pyramid in its own buffers, the reference's once.
        let (mut out1, mut out2, mut out3) = (Vec::new(), Vec::new(), Vec::new());
        for [a, b, c] in ladder_dis.iter_mut() {
            out1.push(a.as_mut_slice());
            out2.push(b.as_mut_slice());
            out3.push(c.as_mut_slice());
        }
        let [r1, r2, r3] = scaled_ref;
        let levels = [(1, 1 << (bpc - 1), bpc), (2, 32768, 16), (3, 32768, 16)];
        let mut r = ref_img;
        let mut ds = dis_imgs;
        for ((next, round, shift), (r_out, d_outs)) in
            levels.into_iter().zip([(r1, out1), (r2, out2), (r3, out3)])
        {
            r = subsample_one(r, next, round, shift, row, wide.as_mut(), r_out);
            let mut next_ds = Vec::with_capacity(ds.len());
            for (d, d_out) in ds.iter().zip(d_outs) {
                next_ds.push(subsample_one(
                    *d,
                    next,
                    round,
                    shift,
                    row,
                    wide.as_mut(),
                    d_out,
                ));
            }
            ds = next_ds;
            score(next, r, &ds, row, wide.as_mut());
        }
        Ok(out)
    }

    /// Validates one plane against the extractor's geometry.
    fn check<'a>(&self, p: &LumaPlane<'a>) -> Result<Image<'a>, FeatureError> {
        FeatureError::check_plane(FEATURE, (self.width, self.height, self.bpc), p)?;
        Ok(Image {
            data: p.data,
            stride: p.stride,
            width: p.width,
            height: p.height,
        })
    }
}

/// Stores one scale's `float` numerator/denominator and their `float` quotient.
fn set_scale(scores: &mut VifScores, s: usize, num: f32, den: f32) {
    if let (Some(n), Some(d), Some(q)) = (
        scores.num.get_mut(s),
        scores.den.get_mut(s),
        scores.scale.get_mut(s),
    ) {
        *n = f64::from(num);
        *d = f64::from(den);
        *q = f64::from(num / den);
    }
}

/// Runs `$body` over the columns `$from..$w`: for blocks of [`BLOCK`] columns starting at
/// `$j` with the const `$l` set to `BLOCK`, then for each remaining column with `$l` set
/// to 1. (`$from`: the columns a SIMD kernel has done, 0 without one.)
macro_rules! blocked {
    ($from:expr, $w:expr, |$j:ident, $l:ident| $body:expr) => {{
        let (from, w): (usize, usize) = ($from, $w);
        let full = from + w.saturating_sub(from) / BLOCK * BLOCK;
        for $j in (from..full).step_by(BLOCK) {
            const $l: usize = BLOCK;
            $body;
        }
        for $j in full..w {
            const $l: usize = 1;
            $body;
        }
    }};
}

mod common;
mod filters;
#[cfg(target_arch = "x86_64")]
mod simd;

use common::*;
use filters::*;
#[cfg(target_arch = "x86_64")]
use simd::Wide;

#[cfg(all(test, target_arch = "x86_64"))]
mod simd_tests {
    //! The AVX2 horizontal pass against the portable one: equal accumulators, bit for bit,
    //! at every scale and sample width, on noise, flat areas, edges, full-scale and
    //! out-of-range samples, odd widths (the portable pass finishes the last columns).

    use super::*;

    /// A plane of `kind`: 0 noise, 1 smooth ramp with light noise, 2 flat, 3 blocks of
    /// extremes, 4 any 16-bit value (out of range below 16 bits).
    fn plane(w: usize, h: usize, bpc: u32, kind: u32, seed: u64) -> Vec<u16> {
        let mut rng = crate::features::XorShift(seed | 1);
        let max = (1u64 << bpc) - 1;
        (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as u64, (i / w) as u64);
                let r = rng.next_u64();
                let v = match kind {
                    0 => r % (max + 1),
                    1 => ((x * max / w as u64 + y) % (max + 1)).saturating_sub(r % 4),
                    2 => max / 3,
                    3 => {
                        if (x / 7 + y / 5) % 2 == 0 {
                            max
                        } else {
                            r % 2
                        }
                    }
                    _ => r & 0xffff,
                };
                v as u16
            })
            .collect()
    }

    fn image(data: &[u16], w: usize, h: usize) -> Image<'_> {
        Image {
            data,
            stride: w,
            width: w,
            height: h,
        }
    }

    #[test]
    fn avx2_pass_equals_portable() {
        let isas: Vec<simd::Isa> = [simd::Isa::Avx2, simd::Isa::Avx512]
            .into_iter()
            .filter(|isa| isa.runs_here())
            .collect();
        eprintln!("SIMD kernels tested: {isas:?}");
        let mut cases = 0;
        // Miri interprets every operation: one small size, two depths and two contents.
        let miri = cfg!(miri);
        let sizes: &[(usize, usize)] = if miri {
            &[(37, 17)]
        } else {
            &[(67, 29), (96, 40), (203, 37), (613, 19)]
        };
        let depths: &[u32] = if miri { &[8, 10] } else { &[8, 10, 12, 16] };
        let kinds: &[u32] = if miri { &[0, 4] } else { &[0, 1, 2, 3, 4] };
        for &(w, h) in sizes {
            for &bpc in depths {
                for &kind in kinds {
                    let mut vif = match Vif::new(w, h, bpc) {
                        Ok(v) => v,
                        Err(e) => panic!("{e}"),
                    };
                    let r = plane(w, h, bpc, kind, 7 + u64::from(kind));
                    // The distorted plane: another kind for contrast, or noise added.
                    let d = plane(w, h, bpc, (kind + 1) % 5, 1234 + u64::from(bpc));
                    let d: Vec<u16> = if kind % 2 == 0 {
                        r.iter()
                            .zip(&d)
                            .map(|(&a, &b)| a.wrapping_add(b % 9))
                            .collect()
                    } else {
                        d
                    };
                    let vp = if bpc == 8 {
                        VpShift::Narrow
                    } else {
                        let sq = 2 * (bpc - 8);
                        VpShift::Wide {
                            mu_round: 1 << (bpc - 1),
                            mu_shift: bpc,
                            sq_round: 1 << (sq - 1),
                            sq_shift: sq,
                        }
                    };
                    for (limit, &isa) in [100.0, 1.0]
                        .into_iter()
                        .flat_map(|l| isas.iter().map(move |i| (l, i)))
                    {
                        vif.wide = Some(Wide::with_isa(isa, w));
                        for scale in 0..4 {
                            let vp = if scale == 0 { vp } else { VpShift::SCALED };
                            let (ri, di) = (image(&r, w, h), image(&d, w, h));
                            let Vif {
                                log2_table,
                                row,
                                wide,
                                ..
                            } = &mut vif;
                            let fast =
                                stat_sums(ri, di, scale, vp, row, wide.as_mut(), log2_table, limit);
                            let slow = stat_sums(ri, di, scale, vp, row, None, log2_table, limit);
                            assert_eq!(
                                fast, slow,
                                "{isa:?} {w}x{h} bpc {bpc} kind {kind} scale {scale} limit {limit}"
                            );
                            cases += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(
            cases,
            sizes.len() * depths.len() * kinds.len() * 2 * 4 * isas.len()
        );
    }

    /// The kernels' subsampling against the portable one (every output sample) and the
    /// whole extractor's scores with and without them.
    #[test]
    fn simd_subsample_and_scores_equal_portable() {
        let mut cases = 0;
        for isa in [simd::Isa::Avx2, simd::Isa::Avx512] {
            let runs = isa.runs_here();
            if !runs {
                eprintln!("skipped {isa:?}: not on this CPU");
                continue;
            }
            let miri = cfg!(miri);
            let sizes: &[(usize, usize)] = if miri {
                &[(37, 17)]
            } else {
                &[(67, 29), (130, 41), (203, 37), (613, 19)]
            };
            let depths: &[u32] = if miri { &[10] } else { &[8, 10, 16] };
            let kinds: &[u32] = if miri { &[0] } else { &[0, 1, 2, 3, 4] };
            for &(w, h) in sizes {
                for &bpc in depths {
                    for &kind in kinds {
                        let r = plane(w, h, bpc, kind, 99 + u64::from(kind));
                        let d = plane(w, h, bpc, (kind + 2) % 5, 5 + u64::from(bpc));
                        let mut vif = match Vif::new(w, h, bpc) {
                            Ok(v) => v,
                            Err(e) => panic!("{e}"),
                        };
                        let mut wide = Wide::with_isa(isa, w);
                        let (w2, h2) = (w / 2, h / 2);
                        let (mut fr, mut fd) = (vec![0u16; w2 * h2], vec![0u16; w2 * h2]);
                        let (mut sr, mut sd) = (vec![1u16; w2 * h2], vec![1u16; w2 * h2]);
                        for next in 1..4usize {
                            let (round, shift) = if next == 1 {
                                (1 << (bpc - 1), bpc)
                            } else {
                                (32768, 16)
                            };
                            let (ri, di) = (image(&r, w, h), image(&d, w, h));
                            subsample(
                                ri,
                                di,
                                next,
                                round,
                                shift,
                                &mut vif.row,
                                Some(&mut wide),
                                &mut fr,
                                &mut fd,
                            );
                            subsample(
                                ri,
                                di,
                                next,
                                round,
                                shift,
                                &mut vif.row,
                                None,
                                &mut sr,
                                &mut sd,
                            );
                            assert_eq!(fr, sr, "{isa:?} {w}x{h} bpc {bpc} kind {kind} ref {next}");
                            assert_eq!(fd, sd, "{isa:?} {w}x{h} bpc {bpc} kind {kind} dis {next}");
                            cases += 1;
                        }
                        let lp = |data| LumaPlane {
                            data,
                            width: w,
                            height: h,
                            stride: w,
                            bpc,
                        };
                        let (rp, dp) = (lp(&r[..]), lp(&d[..]));
                        let cfg = VifConfig::default();
                        vif.wide = Some(Wide::with_isa(isa, w));
                        let fast = vif.compute(&rp, &dp, &cfg);
                        vif.wide = None;
                        let slow = vif.compute(&rp, &dp, &cfg);
                        match (fast, slow) {
                            (Ok(f), Ok(s)) => {
                                assert_eq!(f.num, s.num, "{isa:?} {w}x{h} {bpc} {kind}");
                                assert_eq!(f.den, s.den, "{isa:?} {w}x{h} {bpc} {kind}");
                            }
                            other => panic!("{other:?}"),
                        }
                    }
                }
            }
        }
        eprintln!("{cases} subsampling cases");
    }
}

#[cfg(test)]
mod ladder_tests {
    //! [`Vif::compute_ladder`] against [`Vif::compute`] of each pair, bit for bit, with the
    //! portable passes and every SIMD kernel this CPU runs: odd and even widths (the kernels
    //! leave the last columns to the portable passes), every sample width, renditions from
    //! near copies of the reference to unrelated noise, and ladders of one and of several
    //! renditions on the same extractor.

    use super::*;

    /// The reference: a ramp with blocks and noise, samples below `1 << bpc`.
    fn reference(w: usize, h: usize, bpc: u32, seed: u64) -> Vec<u16> {
        let mut rng = crate::features::XorShift(seed | 1);
        let max = (1u64 << bpc) - 1;
        (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as u64, (i / w) as u64);
                let base = (x * max / w as u64 + 3 * y) % (max + 1);
                let block = if (x / 9 + y / 7) % 3 == 0 { max / 4 } else { 0 };
                ((base + block + rng.next_u64() % 16).min(max)) as u16
            })
            .collect()
    }

    /// Rendition `k` of `r`: 0 light noise, 1 a coarse copy (pairs of samples averaged),
    /// 2 independent noise, 3 a flat plane.
    fn rendition(r: &[u16], w: usize, bpc: u32, k: usize, seed: u64) -> Vec<u16> {
        let mut rng = crate::features::XorShift(seed | 1);
        let max = (1u32 << bpc) - 1;
        (0..r.len())
            .map(|i| {
                let n = rng.next_u64() as u32;
                let v = match k {
                    0 => (u32::from(r[i]) + n % 7).min(max),
                    1 => {
                        let j = i - i % w % 2;
                        let b = r.get(j + 1).copied().unwrap_or(r[j]);
                        (u32::from(r[j]) + u32::from(b)) / 2
                    }
                    2 => n % (max + 1),
                    _ => max / 3,
                };
                v as u16
            })
            .collect()
    }

    /// The kernels to compare: `None` for the portable passes, then those this CPU runs.
    fn kernels(w: usize) -> Vec<(String, Option<Wide>)> {
        #[allow(unused_mut)]
        let mut k: Vec<(String, Option<Wide>)> = vec![("portable".into(), None)];
        #[cfg(target_arch = "x86_64")]
        for isa in [simd::Isa::Avx2, simd::Isa::Avx512] {
            if isa.runs_here() {
                k.push((format!("{isa:?}"), Some(Wide::with_isa(isa, w))));
            } else {
                eprintln!("skipped {isa:?}: not on this CPU");
            }
        }
        k
    }

    #[test]
    fn ladder_equals_pairs() {
        let miri = cfg!(miri);
        let sizes: &[(usize, usize)] = if miri {
            &[(37, 17)]
        } else {
            &[(67, 29), (130, 41), (203, 37), (96, 40)]
        };
        let depths: &[u32] = if miri { &[8, 10] } else { &[8, 10, 12, 16] };
        let mut cases = 0;
        for &(w, h) in sizes {
            for &bpc in depths {
                let r = reference(w, h, bpc, 11 + u64::from(bpc));
                let ds: Vec<Vec<u16>> = (0..4)
                    .map(|k| rendition(&r, w, bpc, k, 77 + k as u64))
                    .collect();
                let lp = |data| LumaPlane {
                    data,
                    width: w,
                    height: h,
                    stride: w,
                    bpc,
                };
                let rp = lp(&r[..]);
                let dps: Vec<LumaPlane> = ds.iter().map(|d| lp(&d[..])).collect();
                for limit in [100.0, 1.0] {
                    let cfg = VifConfig {
                        enhn_gain_limit: limit,
                    };
                    for (name, wide) in kernels(w) {
                        let mut vif = match Vif::new(w, h, bpc) {
                            Ok(v) => v,
                            Err(e) => panic!("{e}"),
                        };
                        vif.wide = wide;
                        let pairs: Vec<VifScores> = dps
                            .iter()
                            .map(|d| match vif.compute(&rp, d, &cfg) {
                                Ok(s) => s,
                                Err(e) => panic!("{e}"),
                            })
                            .collect();
                        // One rendition first, then all of them (the scratch grows).
                        for n in [1, dps.len()] {
                            let refs: Vec<&LumaPlane> = dps.iter().take(n).collect();
                            let ladder = match vif.compute_ladder(&rp, &refs, &cfg) {
                                Ok(s) => s,
                                Err(e) => panic!("{e}"),
                            };
                            assert_eq!(ladder.len(), n);
                            for (k, (l, p)) in ladder.iter().zip(&pairs).enumerate() {
                                let bits = |s: &VifScores| {
                                    [s.num, s.den, s.scale].map(|a| a.map(f64::to_bits))
                                };
                                assert_eq!(
                                    bits(l),
                                    bits(p),
                                    "{name} {w}x{h} bpc {bpc} limit {limit} rendition {k} of {n}"
                                );
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
        eprintln!("{cases} ladder renditions compared");
    }
}
