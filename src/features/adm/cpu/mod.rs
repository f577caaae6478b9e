//! Integer ADM (Additive Distortion Measure / Detail Loss Metric) feature extractor.
//!
//! A re-implementation of the fixed-point ADM of Netflix/vmaf v3.2.0,
//! `libvmaf/src/feature/integer_adm.c`, producing the values libvmaf reports as
//! `integer_adm2`, `integer_aim`, `integer_adm3` and `integer_adm_scale0..3`, bit for bit.
//!
//! Pipeline per frame pair, for each of the four scales:
//! 1. a 2-D Daubechies-2 DWT of reference and distorted (scale 0 from the luma samples,
//!    scales 1..3 from the previous scale's approximation band),
//! 2. decoupling of the distorted detail bands into a restored part (`r`) and an additive
//!    impairment part (`a`),
//! 3. the denominator from the reference detail bands,
//! 4. a contrast-sensitivity weighting (CSF) of one part and the contrast-masking (CM) sum of the
//!    other, once for the DLM numerator (`r` masked by `a`) and once for AIM (`a` masked by `r`).
//!
//! libvmaf keeps scale 0 in 16-bit integers and scales 1..3 in 32-bit integers with different
//! rounding constants; here every band is stored as `i32` and the 16-bit stores of scale 0 are
//! reproduced by explicit wrapping to `i16`. The stages are shared functions parameterised by a
//! `const S0: bool` (scale-0 precision) and the scale index.
//!
//! The hot stages (DWT, decouple, denominator, CSF, CM) are compiled several times through
//! `multiversion` (AVX-512, AVX2+FMA, SSE4.1, generic) and picked at run time; the code is plain
//! Rust written so that the compiler vectorises it, with no fused multiply-add (Rust never
//! contracts `a * b + c`). The decouple step runs its integer arithmetic in exact `f64` lanes
//! (see `bands::restore_f64`; rows of very large coefficients sum the angle test in `i64`).
//! Decoupling, CSF and CM go through each scale in strips of rows (`CM_STRIP`), so that each
//! reads the previous one's output from the cache; the CSF output is one strip long.
//!
//! The arithmetic is that of libvmaf's portable C functions (bit-identical results, checked
//! against a build of them). libvmaf's x86 AVX2 variants give the same results on ordinary
//! content, but differ in corner cases: they do not wrap the scale-0 CM centre tap and CSF output
//! to 16 bits (saturating or not truncating instead), and they convert the scale-0 h-band CM
//! accumulator to `f32` directly (identical below 2^53).

use super::config::{AdmConfig, Csf};
use super::params::*;
use crate::video::frame::{FeatureError, LumaPlane};

/// Integer ADM extractor for one frame geometry; holds all scratch memory.
///
/// Source: Netflix/vmaf v3.2.0, `libvmaf/src/feature/integer_adm.c` (`integer_compute_adm`).
pub struct Adm {
    width: usize,
    height: usize,
    bpc: u32,
    /// `dims[s]` = (width, height) of the DWT input at scale `s`; `dims[s + 1]` its bands.
    dims: [(usize, usize); 5],
    /// `f32` value of cos(1 degree)^2 as libvmaf computes it.
    cos_1deg_sq: f32,
    /// Vertical-pass rows (low and high), one sample of mirror padding left, two right.
    tmp_lo: Vec<i32>,
    tmp_hi: Vec<i32>,
    /// Approximation band, ping-pong between scales: `[ref, dis]` x 2.
    band_a: [[Vec<i32>; 2]; 2],
    /// Detail bands `[h, v, d]` of reference and distorted.
    ref_hvd: [Vec<i32>; 3],
    dis_hvd: [Vec<i32>; 3],
    /// Decoupled restored (`r`) and additive (`a`) detail.
    dec_r: [Vec<i32>; 3],
    dec_a: [Vec<i32>; 3],
    /// CSF-weighted bands and their 1/30-filtered magnitudes: one strip of rows
    /// (`CM_STRIP + 2` rows of the widest band).
    csf_dst: [Vec<i32>; 3],
    csf_flt: [Vec<i32>; 3],
    /// Masking threshold of one CM row.
    thr: Vec<i32>,
    /// Odd/even tap split of one DWT row (two halves).
    deint: Vec<i32>,
    /// [`Adm::compute_ladder`]'s reference detail bands `[h, v, d]` of each scale (made on
    /// its first call).
    ref_scales: Vec<[Vec<i32>; 3]>,
}

impl Adm {
    /// Sizes all scratch for `width` x `height` luma planes of `bpc` bits (8..=16).
    ///
    /// Errors: [`FeatureError::FrameTooSmall`] below [`MIN_WIDTH`] x [`MIN_HEIGHT`];
    /// [`FeatureError::WrongGeometry`] for a `bpc` outside `8..=16`.
    pub fn new(width: usize, height: usize, bpc: u32) -> Result<Self, FeatureError> {
        FeatureError::check_new(FEATURE, (width, height, bpc), (MIN_WIDTH, MIN_HEIGHT))?;
        let mut dims = [(width, height); 5];
        for s in 1..5 {
            let (w, h) = dims[s - 1];
            dims[s] = (w.div_ceil(2), h.div_ceil(2));
        }
        let band_len = dims[1].0 * dims[1].1;
        let c = (1.0f64 * std::f64::consts::PI / 180.0).cos();
        let cos_1deg_sq = (c * c) as f32;
        let band = || vec![0i32; band_len];
        let hvd = || [band(), band(), band()];
        let strip = || std::array::from_fn(|_| vec![0i32; (CM_STRIP + 2) * dims[1].0]);
        Ok(Self {
            width,
            height,
            bpc,
            dims,
            cos_1deg_sq,
            tmp_lo: vec![0; width + 3],
            tmp_hi: vec![0; width + 3],
            band_a: [[band(), band()], [band(), band()]],
            ref_hvd: hvd(),
            dis_hvd: hvd(),
            dec_r: hvd(),
            dec_a: hvd(),
            csf_dst: strip(),
            csf_flt: strip(),
            thr: vec![0; dims[1].0],
            deint: vec![0; 2 * (dims[1].0 + 1)],
            ref_scales: Vec::new(),
        })
    }

    /// Computes the ADM scores of one frame pair.
    ///
    /// Both planes must have the width, height and `bpc` given to [`Adm::new`] (else
    /// [`FeatureError::WrongGeometry`]; also returned for a plane whose `data`/`stride` cannot
    /// hold its geometry). Samples are right-aligned `bpc`-bit values; 8-bit planes give the
    /// results libvmaf gives for the same `uint8` video. A `cfg` that
    /// [`AdmConfig::validate`] refuses gives NaN scores.
    pub fn compute(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        cfg: &AdmConfig,
    ) -> Result<AdmScores, FeatureError> {
        for p in [reference, distorted] {
            FeatureError::check_plane(FEATURE, (self.width, self.height, self.bpc), p)?;
        }

        let Some(csf) = cfg.csf() else {
            let nan = f64::NAN;
            return Ok(AdmScores {
                adm2: nan,
                aim: nan,
                adm3: nan,
                scale: [nan; 4],
                num: nan,
                den: nan,
            });
        };
        let mut per_scale = [(0.0f32, 0.0f32, 0.0f32); 4];
        for (scale, slot) in per_scale.iter_mut().enumerate() {
            self.dwt_scale(scale, reference, distorted);
            let (w, h) = self.dims[scale + 1];
            let (n, d, a) = if scale == 0 {
                self.score_scale::<true>(scale, w, h, cfg, &csf)
            } else {
                self.score_scale::<false>(scale, w, h, cfg, &csf)
            };
            *slot = (n, d, a);
        }

        Ok(finish_scores(self.width, self.height, per_scale, cfg))
    }

    /// Runs the DWT of scale `scale` for reference and distorted.
    fn dwt_scale(&mut self, scale: usize, reference: &LumaPlane, distorted: &LumaPlane) {
        let mut hvd = std::mem::take(&mut self.ref_hvd);
        self.dwt_side(scale, reference, 0, &mut hvd);
        self.ref_hvd = hvd;
        let mut hvd = std::mem::take(&mut self.dis_hvd);
        self.dwt_side(scale, distorted, 1, &mut hvd);
        self.dis_hvd = hvd;
    }

    /// The DWT of scale `scale` of one stream (`side` 0: reference, 1: distorted), its
    /// detail bands into `hvd`: scale 0 from `plane`, the others from the stream's
    /// approximation band of the scale before (`plane` unused).
    fn dwt_side(&mut self, scale: usize, plane: &LumaPlane, side: usize, hvd: &mut [Vec<i32>; 3]) {
        let (w, h) = self.dims[scale];
        let [a_even, a_odd] = &mut self.band_a;
        let (src_a, dst_a) = if scale.is_multiple_of(2) {
            (&*a_odd, a_even)
        } else {
            (&*a_even, a_odd)
        };
        let (Some(src), Some(dst)) = (src_a.get(side), dst_a.get_mut(side)) else {
            return;
        };
        let (lo, hi) = (&mut self.tmp_lo[..w + 3], &mut self.tmp_hi[..w + 3]);
        if scale == 0 {
            let shift = self.bpc;
            dwt2::<true, _>(
                &PlaneRows(plane),
                w,
                h,
                shift,
                lo,
                hi,
                dst,
                hvd,
                &mut self.deint,
            );
        } else {
            let s = scale as u32;
            dwt2::<false, _>(
                &BandRows(src, w),
                w,
                h,
                s,
                lo,
                hi,
                dst,
                hvd,
                &mut self.deint,
            );
        }
    }

    /// [`Adm::compute`] of several distorted planes against one reference: the reference's
    /// DWT and the denominator of every scale are computed once (kept in scratch made on the
    /// first call), then each distorted plane's DWT and its decoupling, CSF and CM. Returns
    /// each plane's scores, in order, equal bit for bit to [`Adm::compute`]'s for that pair.
    ///
    /// Errors: as [`Adm::compute`].
    pub fn compute_ladder(
        &mut self,
        reference: &LumaPlane,
        distorted: &[&LumaPlane],
        cfg: &AdmConfig,
    ) -> Result<Vec<AdmScores>, FeatureError> {
        for p in std::iter::once(&reference).chain(distorted) {
            FeatureError::check_plane(FEATURE, (self.width, self.height, self.bpc), p)?;
        }
        let Some(csf) = cfg.csf() else {
            let nan = f64::NAN;
            let scores = AdmScores {
                adm2: nan,
                aim: nan,
                adm3: nan,
                scale: [nan; 4],
                num: nan,
                den: nan,
            };
            return Ok(vec![scores; distorted.len()]);
        };
        // The reference's detail bands of every scale, and each scale's denominator.
        let mut bands = std::mem::take(&mut self.ref_scales);
        if bands.is_empty() {
            bands = (1..5)
                .map(|s| {
                    let (w, h) = self.dims[s];
                    std::array::from_fn(|_| vec![0i32; w * h])
                })
                .collect();
        }
        let mut den = [0.0f32; 4];
        for (scale, (hvd, d)) in bands.iter_mut().zip(den.iter_mut()).enumerate() {
            self.dwt_side(scale, reference, 0, hvd);
            let (w, h) = self.dims[scale + 1];
            let reg = Region::scored(w, h);
            let rf = csf.rf.get(scale).copied().unwrap_or_default();
            *d = if scale == 0 {
                csf_den::<true>(hvd, w, reg, scale, rf, cfg.noise_weight)
            } else {
                csf_den::<false>(hvd, w, reg, scale, rf, cfg.noise_weight)
            };
        }
        let mut out = Vec::with_capacity(distorted.len());
        let mut dis = std::mem::take(&mut self.dis_hvd);
        for d in distorted {
            let mut per_scale = [(0.0f32, 0.0f32, 0.0f32); 4];
            for (scale, slot) in per_scale.iter_mut().enumerate() {
                self.dwt_side(scale, d, 1, &mut dis);
                let (w, h) = self.dims[scale + 1];
                let (Some(r), Some(&den)) = (bands.get(scale), den.get(scale)) else {
                    continue;
                };
                *slot = if scale == 0 {
                    self.score_bands::<true>(r, &dis, Some(den), scale, w, h, cfg, &csf)
                } else {
                    self.score_bands::<false>(r, &dis, Some(den), scale, w, h, cfg, &csf)
                };
            }
            out.push(finish_scores(self.width, self.height, per_scale, cfg));
        }
        self.dis_hvd = dis;
        self.ref_scales = bands;
        Ok(out)
    }

    /// [`Adm::score_bands`] of the bands in `ref_hvd` / `dis_hvd`.
    fn score_scale<const S0: bool>(
        &mut self,
        scale: usize,
        w: usize,
        h: usize,
        cfg: &AdmConfig,
        csf_w: &Csf,
    ) -> (f32, f32, f32) {
        let r = std::mem::take(&mut self.ref_hvd);
        let d = std::mem::take(&mut self.dis_hvd);
        let out = self.score_bands::<S0>(&r, &d, None, scale, w, h, cfg, csf_w);
        self.ref_hvd = r;
        self.dis_hvd = d;
        out
    }

    /// Decouple, denominator, CSF and CM of one scale whose bands (`ref_hvd`, `dis_hvd`)
    /// are `w` x `h`; `den`: the denominator when already known (it reads the reference
    /// only). Returns (DLM numerator, denominator, AIM numerator), each as libvmaf's `f32`.
    #[allow(clippy::too_many_arguments)]
    fn score_bands<const S0: bool>(
        &mut self,
        ref_hvd: &[Vec<i32>; 3],
        dis_hvd: &[Vec<i32>; 3],
        den: Option<f32>,
        scale: usize,
        w: usize,
        h: usize,
        cfg: &AdmConfig,
        csf_w: &Csf,
    ) -> (f32, f32, f32) {
        let gain = cfg.enhn_gain_limit;
        let n = w * h;
        let ext = Region::extended(w, h);
        let reg = Region::scored(w, h);
        let rf = csf_w.rf.get(scale).copied().unwrap_or_default();
        let irf = csf_w.irf(scale);
        let den =
            den.unwrap_or_else(|| csf_den::<S0>(ref_hvd, w, reg, scale, rf, cfg.noise_weight));

        // Decouple, then CSF and CM of both passes, in strips of rows, so that each stage
        // reads the previous one's rows from the cache.
        let ctx = DecoupleCtx {
            cos_1deg_sq: self.cos_1deg_sq,
            gain,
        };
        let mut accum = [[0i64; 3]; 2];
        // Decoupled rows so far; CM's rows need their neighbours (row 1 for row 0, mirrored),
        // all within `ext`.
        let mut decoupled = ext.top;
        for top in (reg.top..reg.bottom).step_by(CM_STRIP) {
            let bottom = (top + CM_STRIP).min(reg.bottom);
            let base = top.saturating_sub(1);
            let need = (bottom + 1).max(2).min(ext.bottom);
            if need > decoupled {
                let rows = Region {
                    top: decoupled,
                    bottom: need,
                    ..ext
                };
                decouple::<S0>(
                    &ctx,
                    ref_hvd,
                    dis_hvd,
                    &mut self.dec_r,
                    &mut self.dec_a,
                    w,
                    rows,
                );
                decoupled = need;
            }
            let strip = Region {
                top: base,
                bottom: need,
                ..ext
            };
            for (pass, acc) in accum.iter_mut().enumerate() {
                // pass 0: DLM (r masked by CSF(a)); pass 1: AIM (a masked by CSF(r)).
                let (masker, masked) = if pass == 0 {
                    (&self.dec_a, &self.dec_r)
                } else {
                    (&self.dec_r, &self.dec_a)
                };
                // The strip's CSF rows `base..need`, row `base` first in the buffers.
                for t in 0..3 {
                    csf::<S0>(
                        &masker[t][..n],
                        &mut self.csf_dst[t],
                        &mut self.csf_flt[t],
                        w,
                        strip,
                        base,
                        t,
                        irf[t],
                    );
                }
                cm::<S0>(
                    masked,
                    &self.csf_dst,
                    &self.csf_flt,
                    base,
                    &mut self.thr[..w],
                    w,
                    h,
                    reg,
                    top..bottom,
                    irf,
                    acc,
                );
            }
        }
        let out = [
            cm_score::<S0>(accum[0], w, h, reg, scale, cfg.noise_weight),
            cm_score::<S0>(accum[1], w, h, reg, scale, 0.0),
        ];

        (out[0], den, out[1])
    }
}

mod bands;
mod consts;
mod dwt;

use bands::*;
use consts::*;
use dwt::*;
