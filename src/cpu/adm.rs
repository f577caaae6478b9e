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
//! (see [`restore_f64`]), falling back to the scalar integer form for rows of very large
//! coefficients.
//!
//! The arithmetic is that of libvmaf's portable C functions (bit-identical results, checked
//! against a build of them). libvmaf's x86 AVX2 variants give the same results on ordinary
//! content, but differ in corner cases: they do not wrap the scale-0 CM centre tap and CSF output
//! to 16 bits (saturating or not truncating instead), and they convert the scale-0 h-band CM
//! accumulator to `f32` directly (identical below 2^53).

use crate::engine::frame::{FeatureError, LumaPlane};

/// Name used in [`FeatureError`]s.
const FEATURE: &str = "adm";

/// Smallest accepted plane width in samples.
///
/// The four DWT levels read 4-tap windows whose mirrored indices libvmaf only builds correctly
/// when every DWT input is at least 5 samples wide, i.e. `ceil(width / 8) >= 5`. That makes the
/// coarsest band 3 samples wide and keeps every rounding shift of the CM and denominator stages
/// positive (scale 0 needs `ceil(width / 2) > 16`).
pub const MIN_WIDTH: usize = 33;
/// Smallest accepted plane height in rows (same reasoning as [`MIN_WIDTH`]).
pub const MIN_HEIGHT: usize = 33;

/// libvmaf's `DEFAULT_ADM_ENHN_GAIN_LIMIT`.
const DEFAULT_ENHN_GAIN_LIMIT: f64 = 100.0;
/// libvmaf's `DEFAULT_ADM_NOISE_WEIGHT`.
pub(crate) const NOISE_WEIGHT: f64 = 0.03125;
/// Default `adm_dlm_weight` (weight of DLM against AIM in `adm3`).
pub(crate) const DLM_WEIGHT: f64 = 0.5;
/// Default `adm_min_val` (lower clip of `adm3`).
pub(crate) const MIN_VAL: f64 = 0.0;
/// libvmaf's `ADM_BORDER_FACTOR`.
pub(crate) const BORDER_FACTOR: f64 = 0.1;
/// Default `adm_norm_view_dist`.
pub(crate) const NORM_VIEW_DIST: f64 = 3.0;
/// Default `adm_ref_display_height`.
pub(crate) const REF_DISPLAY_HEIGHT: f64 = 1080.0;

/// Daubechies-2 analysis filters in Q15 (`dwt2_db2_coeffs_lo/hi`).
const FILTER_LO: [i32; 4] = [15826, 27411, 7345, -4240];
const FILTER_HI: [i32; 4] = [-4240, -7345, 27411, -15826];
/// Sum of `FILTER_LO` (the high-pass filter sums to 0).
const FILTER_LO_SUM: i32 = 46342;

/// 1/15 in Q12 (scale 0) and Q32 (scales 1..3).
const ONE_BY_15: i32 = 8738;
const I4_ONE_BY_15: i64 = 286_331_153;
/// 1/30 in Q17 (scale 0) and Q32 (scales 1..3).
const FIX_ONE_BY_30: i32 = 4369;
const I4_FIX_ONE_BY_30: i64 = 143_165_577;
/// libvmaf stores `1u << 31` in an `int32_t` as the rounding term of the Q32 products, so it
/// actually subtracts 2^31 before the shift.
const I4_FLT_ROUND: i64 = i32::MIN as i64;

/// Scale-0 CSF factors in Q21/Q21/Q23 for the default viewing distance and display height.
const S0_RFACTOR: [i32; 3] = [36453, 36453, 49417];

/// Options of libvmaf's integer ADM that VMAF models set (others fixed at libvmaf's defaults:
/// Watson CSF, viewing distance 3.0 x 1080 rows, noise weight 0.03125, DLM weight 0.5,
/// minimum value 0.0, scale 0 and AIM computed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdmConfig {
    /// `adm_enhn_gain_limit`: how far the restored detail may exceed the reference detail
    /// where the distorted image enhances it (>= 1.0; 1.0 disables enhancement gain).
    /// libvmaf's default is 100.0; `vmaf_v0.6.1neg` uses 1.0.
    pub enhn_gain_limit: f64,
}

impl Default for AdmConfig {
    /// libvmaf's default, `DEFAULT_ADM_ENHN_GAIN_LIMIT` (100.0).
    fn default() -> Self {
        Self {
            enhn_gain_limit: DEFAULT_ENHN_GAIN_LIMIT,
        }
    }
}

/// Per-frame output, each exactly the value libvmaf writes under the name in the comment.
///
/// `adm2`, `adm3` and the scale scores are in `[0, ~1]` (values slightly above 1 occur with
/// enhancement), `aim` is `>= 0`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AdmScores {
    /// `integer_adm2` (`VMAF_integer_feature_adm2_score`): sum of numerators / sum of
    /// denominators over the four scales; 1.0 when the denominator is (nearly) zero.
    pub adm2: f64,
    /// `integer_aim`: sum of AIM numerators / sum of denominators (0.0 where libvmaf leaves it
    /// undefined, i.e. a zero denominator).
    pub aim: f64,
    /// `integer_adm3`: `max(0.5 * adm2 + 0.5 * (1 - aim), 0)`.
    pub adm3: f64,
    /// `integer_adm_scale0..3`: per-scale numerator / denominator.
    pub scale: [f64; 4],
    /// `integer_adm_num` (debug output): numerator sum after the small-value cut-off.
    pub num: f64,
    /// `integer_adm_den` (debug output): denominator sum after the small-value cut-off.
    pub den: f64,
}

/// Integer ADM extractor for one frame geometry; holds all scratch memory.
///
/// Source: Netflix/vmaf v3.2.0, `libvmaf/src/feature/integer_adm.c` (`integer_compute_adm`).
pub struct Adm {
    width: usize,
    height: usize,
    bpc: u32,
    /// `dims[s]` = (width, height) of the DWT input at scale `s`; `dims[s + 1]` its bands.
    dims: [(usize, usize); 5],
    /// `div_lookup[32768 + i] = 2^30 / i` (truncated), `i` in `-32768..=32768`, `i != 0`.
    div_lookup: Vec<i32>,
    /// `f32` value of cos(1 degree)^2 as libvmaf computes it.
    cos_1deg_sq: f32,
    /// CSF factors (`1 / dwt_quant_step`) for bands h/v and d, per scale.
    rfactor: [[f32; 3]; 4],
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
    /// CSF-weighted bands and their 1/30-filtered magnitudes.
    csf_dst: [Vec<i32>; 3],
    csf_flt: [Vec<i32>; 3],
    /// Masking threshold of one CM row.
    thr: Vec<i32>,
    /// Odd/even tap split of one DWT row (two halves).
    deint: Vec<i32>,
}

/// Rectangle `[top, bottom) x [left, right)` of a band.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Region {
    pub(crate) top: usize,
    pub(crate) bottom: usize,
    pub(crate) left: usize,
    pub(crate) right: usize,
}

impl Region {
    /// The region scored by CM and the denominator (`ADM_BORDER_FACTOR` cropped).
    pub(crate) fn scored(w: usize, h: usize) -> Self {
        let left = (w as f64 * BORDER_FACTOR - 0.5) as i64;
        let top = (h as f64 * BORDER_FACTOR - 0.5) as i64;
        let left = left.clamp(0, w as i64) as usize;
        let top = top.clamp(0, h as i64) as usize;
        Self {
            top,
            bottom: h.saturating_sub(top).max(top),
            left,
            right: w.saturating_sub(left).max(left),
        }
    }

    /// The scored region grown by one filter tap (decouple and CSF outputs).
    pub(crate) fn extended(w: usize, h: usize) -> Self {
        let left = (w as f64 * BORDER_FACTOR - 0.5 - 1.0) as i64;
        let top = (h as f64 * BORDER_FACTOR - 0.5 - 1.0) as i64;
        let right = (w as i64 - left + 2).clamp(0, w as i64) as usize;
        let bottom = (h as i64 - top + 2).clamp(0, h as i64) as usize;
        let left = left.clamp(0, right as i64) as usize;
        let top = top.clamp(0, bottom as i64) as usize;
        Self {
            top,
            bottom,
            left,
            right,
        }
    }

    pub(crate) fn width(&self) -> usize {
        self.right - self.left
    }

    pub(crate) fn height(&self) -> usize {
        self.bottom - self.top
    }

    pub(crate) fn area(&self) -> i64 {
        (self.height() * self.width()) as i64
    }
}

#[inline(always)]
fn wrap16(x: i32) -> i32 {
    x as i16 as i32
}

/// Source index for a DWT tap at position `k` (`-1..=n+1`) of a line of `n` samples.
#[inline]
fn dwt_mirror(k: isize, n: usize) -> usize {
    if k < 0 {
        k.unsigned_abs()
    } else if k as usize >= n {
        (2 * n).saturating_sub(k as usize + 1)
    } else {
        k as usize
    }
}

/// `dwt_quant_step` of the Watson model for the luma channel, evaluated in libvmaf's mixture of
/// `f32` and `f64`.
pub(crate) fn dwt_quant_step(lambda: usize, theta: usize) -> f32 {
    const A: f32 = 0.495;
    const K: f32 = 0.466;
    const F0: f32 = 0.401;
    const G: [f32; 4] = [1.501, 1.0, 0.534, 1.0];
    const AMP: [[f32; 4]; 4] = [
        [0.62171, 0.67234, 0.72709, 0.67234],
        [0.34537, 0.41317, 0.49428, 0.41317],
        [0.18004, 0.22727, 0.28688, 0.22727],
        [0.091401, 0.11792, 0.15214, 0.11792],
    ];
    let g = G.get(theta).copied().unwrap_or(1.0);
    let amp = AMP
        .get(lambda)
        .and_then(|r| r.get(theta))
        .copied()
        .unwrap_or(1.0);
    let r = (NORM_VIEW_DIST * REF_DISPLAY_HEIGHT * std::f64::consts::PI / 180.0) as f32;
    let temp = (2.0f64.powf((lambda + 1) as f64) * F0 as f64 * g as f64 / r as f64).log10() as f32;
    (2.0 * A as f64 * 10.0f64.powf((K * temp * temp) as f64) / amp as f64) as f32
}

/// `(uint32_t)pow(2, shift - 1)` for the shifts libvmaf uses (0 for a zero shift).
#[inline]
fn round_add(shift: u32) -> u64 {
    if shift == 0 {
        0
    } else {
        1u64 << (shift - 1).min(63)
    }
}

/// `(uint32_t)ceil(x)` for the non-negative log values used as shifts.
#[inline]
pub(crate) fn ceil_u32(x: f64) -> u32 {
    x.ceil().max(0.0) as u32
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
        let mut div_lookup = vec![0i32; 65537];
        for i in 1..=32768i32 {
            let recip = (1i32 << 30) / i;
            div_lookup[(32768 + i) as usize] = recip;
            div_lookup[(32768 - i) as usize] = -recip;
        }
        let c = (1.0f64 * std::f64::consts::PI / 180.0).cos();
        let cos_1deg_sq = (c * c) as f32;
        let mut rfactor = [[0.0f32; 3]; 4];
        for (lambda, rf) in rfactor.iter_mut().enumerate() {
            let f1 = 1.0f32 / dwt_quant_step(lambda, 1);
            let f2 = 1.0f32 / dwt_quant_step(lambda, 2);
            *rf = [f1, f1, f2];
        }
        let band = || vec![0i32; band_len];
        let hvd = || [band(), band(), band()];
        Ok(Self {
            width,
            height,
            bpc,
            dims,
            div_lookup,
            cos_1deg_sq,
            rfactor,
            tmp_lo: vec![0; width + 3],
            tmp_hi: vec![0; width + 3],
            band_a: [[band(), band()], [band(), band()]],
            ref_hvd: hvd(),
            dis_hvd: hvd(),
            dec_r: hvd(),
            dec_a: hvd(),
            csf_dst: hvd(),
            csf_flt: hvd(),
            thr: vec![0; dims[1].0],
            deint: vec![0; 2 * (dims[1].0 + 1)],
        })
    }

    /// Computes the ADM scores of one frame pair.
    ///
    /// Both planes must have the width, height and `bpc` given to [`Adm::new`] (else
    /// [`FeatureError::WrongGeometry`]; also returned for a plane whose `data`/`stride` cannot
    /// hold its geometry). Samples are right-aligned `bpc`-bit values; 8-bit planes give the
    /// results libvmaf gives for the same `uint8` video.
    pub fn compute(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        cfg: &AdmConfig,
    ) -> Result<AdmScores, FeatureError> {
        for p in [reference, distorted] {
            FeatureError::check_plane(FEATURE, (self.width, self.height, self.bpc), p)?;
        }

        let mut per_scale = [(0.0f32, 0.0f32, 0.0f32); 4];
        for (scale, slot) in per_scale.iter_mut().enumerate() {
            self.dwt_scale(scale, reference, distorted);
            let (w, h) = self.dims[scale + 1];
            let (n, d, a) = if scale == 0 {
                self.score_scale::<true>(scale, w, h, cfg.enhn_gain_limit)
            } else {
                self.score_scale::<false>(scale, w, h, cfg.enhn_gain_limit)
            };
            *slot = (n, d, a);
        }

        Ok(finish_scores(self.width, self.height, per_scale))
    }

    /// Runs the DWT of scale `scale` for reference and distorted.
    fn dwt_scale(&mut self, scale: usize, reference: &LumaPlane, distorted: &LumaPlane) {
        let (w, h) = self.dims[scale];
        let [a_even, a_odd] = &mut self.band_a;
        let (src_a, dst_a) = if scale.is_multiple_of(2) {
            (&*a_odd, a_even)
        } else {
            (&*a_even, a_odd)
        };
        let [src_ref, src_dis] = src_a;
        let [dst_ref, dst_dis] = dst_a;
        let tmp = (&mut self.tmp_lo[..w + 3], &mut self.tmp_hi[..w + 3]);
        if scale == 0 {
            let shift = self.bpc;
            dwt2::<true, _>(
                &PlaneRows(reference),
                w,
                h,
                shift,
                tmp.0,
                tmp.1,
                dst_ref,
                &mut self.ref_hvd,
                &mut self.deint,
            );
            let tmp = (&mut self.tmp_lo[..w + 3], &mut self.tmp_hi[..w + 3]);
            dwt2::<true, _>(
                &PlaneRows(distorted),
                w,
                h,
                shift,
                tmp.0,
                tmp.1,
                dst_dis,
                &mut self.dis_hvd,
                &mut self.deint,
            );
        } else {
            let s = scale as u32;
            dwt2::<false, _>(
                &BandRows(src_ref, w),
                w,
                h,
                s,
                tmp.0,
                tmp.1,
                dst_ref,
                &mut self.ref_hvd,
                &mut self.deint,
            );
            let tmp = (&mut self.tmp_lo[..w + 3], &mut self.tmp_hi[..w + 3]);
            dwt2::<false, _>(
                &BandRows(src_dis, w),
                w,
                h,
                s,
                tmp.0,
                tmp.1,
                dst_dis,
                &mut self.dis_hvd,
                &mut self.deint,
            );
        }
    }

    /// Decouple, denominator, CSF and CM of one scale whose bands are `w` x `h`.
    /// Returns (DLM numerator, denominator, AIM numerator), each as libvmaf's `f32`.
    fn score_scale<const S0: bool>(
        &mut self,
        scale: usize,
        w: usize,
        h: usize,
        gain: f64,
    ) -> (f32, f32, f32) {
        let n = w * h;
        let ext = Region::extended(w, h);
        let reg = Region::scored(w, h);
        {
            let ctx = DecoupleCtx {
                lookup: &self.div_lookup,
                cos_1deg_sq: self.cos_1deg_sq,
                gain,
            };
            let (r, d) = (&self.ref_hvd, &self.dis_hvd);
            if gain.fract() == 0.0 && (1.0..=1048576.0).contains(&gain) {
                decouple::<S0, true>(&ctx, r, d, &mut self.dec_r, &mut self.dec_a, w, ext);
            } else {
                decouple::<S0, false>(&ctx, r, d, &mut self.dec_r, &mut self.dec_a, w, ext);
            }
        }
        let rf = self.rfactor[scale];
        let den = csf_den::<S0>(&self.ref_hvd, w, reg, scale, rf);

        let mut out = [0.0f32; 2];
        for (pass, o) in out.iter_mut().enumerate() {
            // pass 0: DLM (r masked by CSF(a)); pass 1: AIM (a masked by CSF(r)).
            let (masker, masked, nw) = if pass == 0 {
                (&self.dec_a, &self.dec_r, NOISE_WEIGHT)
            } else {
                (&self.dec_r, &self.dec_a, 0.0)
            };
            for t in 0..3 {
                csf::<S0>(
                    &masker[t][..n],
                    &mut self.csf_dst[t][..n],
                    &mut self.csf_flt[t][..n],
                    w,
                    ext,
                    t,
                    rf[t],
                );
            }
            *o = cm::<S0>(
                masked,
                &self.csf_dst,
                &self.csf_flt,
                &mut self.thr[..w],
                w,
                h,
                reg,
                scale,
                rf,
                nw,
            );
        }

        (out[0], den, out[1])
    }
}

/// Row access to a DWT input.
trait DwtSource {
    type T: Copy;
    fn row(&self, y: usize, w: usize) -> &[Self::T];
}

struct PlaneRows<'p, 'a>(&'p LumaPlane<'a>);
impl DwtSource for PlaneRows<'_, '_> {
    type T = u16;
    #[inline]
    fn row(&self, y: usize, w: usize) -> &[u16] {
        let start = y * self.0.stride;
        self.0.data.get(start..start + w).unwrap_or(&[])
    }
}

struct BandRows<'b>(&'b [i32], usize);
impl DwtSource for BandRows<'_> {
    type T = i32;
    #[inline]
    fn row(&self, y: usize, w: usize) -> &[i32] {
        let start = y * self.1;
        self.0.get(start..start + w).unwrap_or(&[])
    }
}

/// Vertical 4-tap pass of one output row into `lo`/`hi` (each exactly `w` long).
trait VerticalPass: Copy {
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
    /// Scales 1..3: `i64` arithmetic; no rounding at scale 1, 16-bit rounding shift at 2 and 3.
    #[inline]
    fn vertical(rows: [&[i32]; 4], lo: &mut [i32], hi: &mut [i32], scale: u32) {
        let (add, shift) = if scale == 1 {
            (0i64, 0u32)
        } else {
            (32768i64, 16u32)
        };
        let [r0, r1, r2, r3] = rows;
        let it = lo
            .iter_mut()
            .zip(hi.iter_mut())
            .zip(r0.iter().zip(r1))
            .zip(r2.iter().zip(r3));
        for (((l, hh), (&a, &b)), (&c, &d)) in it {
            let (a, b, c, d) = (a as i64, b as i64, c as i64, d as i64);
            let sl = FILTER_LO[0] as i64 * a
                + FILTER_LO[1] as i64 * b
                + FILTER_LO[2] as i64 * c
                + FILTER_LO[3] as i64 * d;
            let sh = FILTER_HI[0] as i64 * a
                + FILTER_HI[1] as i64 * b
                + FILTER_HI[2] as i64 * c
                + FILTER_HI[3] as i64 * d;
            *l = ((sl + add) >> shift) as i32;
            *hh = ((sh + add) >> shift) as i32;
        }
    }
}

/// Horizontal 4-tap pass with step 2 over a padded row (`pad[k + 1]` = tap `k`, `k` in
/// `-1..=w+1`). Writes low-pass and high-pass outputs (each `out_lo.len()` long). The padded row
/// is first split into odd taps (`sa[j]` = tap `2j - 1`) and even taps (`sb[j]` = tap `2j`) so
/// that the filter runs over contiguous slices.
#[inline]
fn horizontal<const S0: bool>(
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
            2 => (32768i64, 16u32),
            _ => (16384i64, 15u32),
        };
        for (((&a, &b), (&c, &d)), (ol, oh)) in taps.zip(outs) {
            let (a, b, c, d) = (a as i64, b as i64, c as i64, d as i64);
            let sl = FILTER_LO[0] as i64 * a
                + FILTER_LO[1] as i64 * b
                + FILTER_LO[2] as i64 * c
                + FILTER_LO[3] as i64 * d;
            let sh = FILTER_HI[0] as i64 * a
                + FILTER_HI[1] as i64 * b
                + FILTER_HI[2] as i64 * c
                + FILTER_HI[3] as i64 * d;
            *ol = ((sl + add) >> shift) as i32;
            *oh = ((sh + add) >> shift) as i32;
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
fn dwt2<const S0: bool, S: DwtSource>(
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

/// Shared inputs of [`decouple`].
struct DecoupleCtx<'a> {
    lookup: &'a [i32],
    cos_1deg_sq: f32,
    gain: f64,
}

/// `k = clamp(t / o, 0, 1)` in Q15 via the reciprocal table (`adm_decouple` /
/// `adm_decouple_s123`), branch-free.
#[inline(always)]
fn ratio<const S0: bool>(lut: &[i32; 65537], o: i32, t: i32) -> i64 {
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
/// in `i64` (`gain_i`).
#[inline(always)]
fn restore<const S0: bool, const INT_GAIN: bool>(
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
const F64_EXACT_LIMIT: i32 = 1 << 26;

/// Whether every h/v coefficient of a row is below [`F64_EXACT_LIMIT`] in magnitude.
#[inline(always)]
fn row_fits_f64(oh: &[i32], ov: &[i32], th: &[i32], tv: &[i32]) -> bool {
    let m = |s: &[i32]| s.iter().fold(0u32, |m, &x| m.max(x.unsigned_abs()));
    m(oh).max(m(ov)).max(m(th)).max(m(tv)) < F64_EXACT_LIMIT as u32
}

/// `2^e` for `e` in `-1022..=1023`, built from the exponent bits.
#[inline(always)]
fn pow2(e: i64) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// Restored coefficient of one orientation, evaluated in `f64` lanes (vectorisable).
///
/// Gives exactly [`restore`]'s result: the reciprocal `2^30 / msb` (`msb <= 2^15`) is truncated
/// from a correctly rounded `f64` quotient, which cannot cross an integer; all other products and
/// sums are integers below 2^53, hence exact, except `r * t` when `|r * t| >= 2^53`, where both the
/// exact and the rounded ratio lie far outside the clamp range `[0, 2^15]`. Power-of-two scalings
/// followed by `floor` are the arithmetic shifts.
#[inline(always)]
fn restore_f64<const S0: bool>(o: i32, t: i32, angle_flag: bool, gain: f64) -> i32 {
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
    (if angle_flag & (k > 0.0) & (o != 0) {
        enh
    } else {
        rst
    }) as i32
}

/// One row of [`decouple`] in `f64` lanes; every slice has the same length. Exact when the h/v
/// coefficients are below [`F64_EXACT_LIMIT`] (always true at scale 0, whose bands are 16-bit).
#[inline(always)]
fn decouple_row_f64<const S0: bool>(
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
        let (fo_h, fo_v, ft_h, ft_v) = (o_h as f64, o_v as f64, t_h as f64, t_v as f64);
        let ot_dp = fo_h * ft_h + fo_v * ft_v;
        let o_mag_sq = fo_h * fo_h + fo_v * fo_v;
        let t_mag_sq = ft_h * ft_h + ft_v * ft_v;
        let dp = ot_dp as f32 as f64 / 4096.0;
        let angle_flag = (dp >= 0.0)
            & (dp * dp
                >= cos_sq * (o_mag_sq as f32 as f64 / 4096.0) * (t_mag_sq as f32 as f64 / 4096.0));
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
fn decouple<const S0: bool, const INT_GAIN: bool>(
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
    let gain_i = gain as i64;
    let Some(lut) = ctx
        .lookup
        .get(..65537)
        .and_then(|l| <&[i32; 65537]>::try_from(l).ok())
    else {
        return;
    };
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
        if S0 || row_fits_f64(oh, ov, th, tv) {
            decouple_row_f64::<S0>(
                [oh, ov, od],
                [th, tv, td],
                [rh, rv, rd],
                [ah, av, ad],
                cos_sq,
                gain,
            );
            continue;
        }
        for j in 0..len {
            let (o_h, o_v, o_d) = (oh[j], ov[j], od[j]);
            let (t_h, t_v, t_d) = (th[j], tv[j], td[j]);
            let ot_dp = (o_h as i64 * t_h as i64).wrapping_add(o_v as i64 * t_v as i64);
            let o_mag_sq = (o_h as i64 * o_h as i64).wrapping_add(o_v as i64 * o_v as i64);
            let t_mag_sq = (t_h as i64 * t_h as i64).wrapping_add(t_v as i64 * t_v as i64);
            let dp = ot_dp as f32 as f64 / 4096.0;
            let angle_flag = dp >= 0.0
                && dp * dp
                    >= cos_sq
                        * (o_mag_sq as f32 as f64 / 4096.0)
                        * (t_mag_sq as f32 as f64 / 4096.0);
            let r_h = restore::<S0, INT_GAIN>(lut, o_h, t_h, angle_flag, gain, gain_i);
            let r_v = restore::<S0, INT_GAIN>(lut, o_v, t_v, angle_flag, gain, gain_i);
            let r_d = restore::<S0, INT_GAIN>(lut, o_d, t_d, angle_flag, gain, gain_i);
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
}

/// Denominator of one scale from the reference detail bands `[h, v, d]` (`adm_csf_den_scale`
/// at scale 0, `adm_csf_den_s123` otherwise): per band the cube root of the CSF-weighted sum of
/// cubed magnitudes over `reg`, plus the noise floor term. Returns the `f32` sum of the three.
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
fn csf_den<const S0: bool>(
    refb: &[Vec<i32>; 3],
    w: usize,
    reg: Region,
    scale: usize,
    rf: [f32; 3],
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
        return den_finish(accum, 2.0f64.powf(e as f64), rf, area);
    }
    let shift = ((area as f64).log2() - 20.0).ceil().max(0.0) as i32;
    den_finish(accum, 2.0f64.powf((18 - shift) as f64), rf, area)
}

/// Final floating-point part of the denominator, in libvmaf's precision.
pub(crate) fn den_finish(accum: [u64; 3], shift_csf: f64, rf: [f32; 3], area: i64) -> f32 {
    let powf_add = ((area as f64 * NOISE_WEIGHT) as f32).powf(1.0f32 / 3.0);
    let mut d = [0.0f32; 3];
    for ((out, &acc), &r) in d.iter_mut().zip(accum.iter()).zip(rf.iter()) {
        let csf = (acc as f64 / shift_csf) * (r as f64).powf(3.0);
        *out = (csf as f32).powf(1.0f32 / 3.0) + powf_add;
    }
    d[0] + d[1] + d[2]
}

/// Combines the four scales' (numerator, denominator, AIM numerator), as `f32`, into the
/// scores (libvmaf's `integer_compute_adm` tail): sums in `f64` in scale order, the
/// near-zero clamps, adm2 = num / den (1 when den is 0), aim, adm3 and the per-scale ratios.
/// Shared by the CPU extractor and the GPU host finish so both stay bit-identical.
pub(crate) fn finish_scores(
    width: usize,
    height: usize,
    per_scale: [(f32, f32, f32); 4],
) -> AdmScores {
    let mut num = 0.0f64;
    let mut den = 0.0f64;
    let mut aim_num = 0.0f64;
    for (n, d, a) in per_scale {
        num += n as f64;
        den += d as f64;
        aim_num += a as f64;
    }
    let numden_limit = 1e-10 * (width * height) as f64 / (1920.0 * 1080.0);
    let num = if num < numden_limit { 0.0 } else { num };
    let den = if den < numden_limit { 0.0 } else { den };
    let (adm2, aim) = if den == 0.0 {
        (1.0, 0.0)
    } else {
        (num / den, aim_num / den)
    };
    let adm3 = f64::max(
        adm2 * DLM_WEIGHT + (1.0 - aim) * (1.0 - DLM_WEIGHT),
        MIN_VAL,
    );
    let scale = per_scale.map(|(n, d, _)| n as f64 / d as f64);
    AdmScores {
        adm2,
        aim,
        adm3,
        scale,
        num,
        den,
    }
}

/// Fixed-point CSF factor of band `t` (h, v, d = 0, 1, 2): Q21/Q21/Q23 constants at scale 0,
/// `rf * 2^32` otherwise.
#[inline]
fn i_rfactor<const S0: bool>(t: usize, rf: f32) -> i64 {
    if S0 {
        S0_RFACTOR.get(t).copied().unwrap_or(0) as i64
    } else {
        (rf as f64 * 4294967296.0) as u32 as i64
    }
}

/// CSF weighting of one band over `reg` (`adm_csf` / `i4_adm_csf`): `dst = rf * src` and
/// `flt = |dst| / 30`, each rounded as libvmaf does.
#[allow(clippy::too_many_arguments)]
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
fn csf<const S0: bool>(
    src: &[i32],
    dst: &mut [i32],
    flt: &mut [i32],
    w: usize,
    reg: Region,
    t: usize,
    rf: f32,
) {
    let len = reg.right - reg.left;
    if S0 {
        let irf = i_rfactor::<true>(t, rf) as i32;
        let (add, shift) = if t == 2 {
            (65535i32, 17u32)
        } else {
            (16384, 15)
        };
        for i in reg.top..reg.bottom {
            let r = i * w + reg.left..i * w + reg.left + len;
            let (Some(s), Some(d), Some(f)) =
                (src.get(r.clone()), dst.get_mut(r.clone()), flt.get_mut(r))
            else {
                return;
            };
            for ((&x, d), f) in s.iter().zip(d.iter_mut()).zip(f.iter_mut()) {
                let v = wrap16((irf * x).wrapping_add(add) >> shift);
                *d = v;
                *f = wrap16((FIX_ONE_BY_30 * v.abs() + 2048) >> 12);
            }
        }
    } else {
        let irf = i_rfactor::<false>(t, rf);
        for i in reg.top..reg.bottom {
            let r = i * w + reg.left..i * w + reg.left + len;
            let (Some(s), Some(d), Some(f)) =
                (src.get(r.clone()), dst.get_mut(r.clone()), flt.get_mut(r))
            else {
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
fn band_row(b: &[i32], y: usize, w: usize) -> &[i32] {
    b.get(y * w..y * w + w).unwrap_or(&[])
}

/// 3x3 neighbourhood sum of `flt` around column `j` plus the centre term of `dst`, for the rows
/// `up`, `cur`, `dn`; `jm`/`jp` are the (mirrored) neighbour columns.
#[inline(always)]
fn thr9<const S0: bool>(
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
fn centre_term<const S0: bool>(x: i32) -> i32 {
    if S0 {
        wrap16((ONE_BY_15 * x.abs() + 2048) >> 12)
    } else {
        ((I4_ONE_BY_15 * x.wrapping_abs() as i64 + I4_FLT_ROUND) >> 32) as i32
    }
}

/// Contrast-masking numerator of one scale (`adm_cm` / `i4_adm_cm`): per band, the cube root of
/// the sum over `reg` of cubed CSF-weighted `masked` coefficients reduced by the masking
/// threshold from (`dst`, `flt`), plus the noise floor term `noise_weight * area`.
/// Rows and columns outside the band read mirrored neighbours (-1 reads 1, `n` reads `n - 1`).
#[allow(clippy::too_many_arguments)]
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
fn cm<const S0: bool>(
    masked: &[Vec<i32>; 3],
    dst: &[Vec<i32>; 3],
    flt: &[Vec<i32>; 3],
    thr: &mut [i32],
    w: usize,
    h: usize,
    reg: Region,
    scale: usize,
    rf: [f32; 3],
    noise_weight: f64,
) -> f32 {
    let log2w = (w as f64).log2();
    // Per band (h, v, d): subtract-shift, square shift and add, cube shift and add, x rfactor.
    let (sub, sq, cub): ([u32; 3], [u32; 3], [u32; 3]) = if S0 {
        let c_hv = ceil_u32(log2w - 4.0);
        let c_d = ceil_u32(log2w - 3.0);
        ([10, 10, 12], [29, 29, 30], [c_hv, c_hv, c_d])
    } else {
        let c = ceil_u32(log2w);
        ([0; 3], [30; 3], [c; 3])
    };
    let irf = [
        i_rfactor::<S0>(0, rf[0]),
        i_rfactor::<S0>(1, rf[1]),
        i_rfactor::<S0>(2, rf[2]),
    ];
    let shift_inner = ceil_u32((h as f64).log2());
    let add_inner = round_add(shift_inner) as i64;
    let len = reg.right - reg.left;
    let mut accum = [0i64; 3];

    for i in reg.top..reg.bottom {
        let iu = if i == 0 { 1 } else { i - 1 };
        let id = if i + 1 >= h { h - 1 } else { i + 1 };
        // Masking threshold of this row, columns reg.left..reg.right.
        let thr = thr.get_mut(reg.left..reg.right).unwrap_or(&mut []);
        thr.fill(0);
        for t in 0..3 {
            let (up, cur, dn) = (
                band_row(&flt[t], iu, w),
                band_row(&flt[t], i, w),
                band_row(&flt[t], id, w),
            );
            let c = band_row(&dst[t], i, w);
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
                    return 0.0;
                };
                let (Some(c0), Some(c2)) = (cur.get(j0 - 1..j1 - 1), cur.get(j0 + 1..j1 + 1))
                else {
                    return 0.0;
                };
                let (Some(d0), Some(d1), Some(d2)) = (
                    dn.get(j0 - 1..j1 - 1),
                    dn.get(j0..j1),
                    dn.get(j0 + 1..j1 + 1),
                ) else {
                    return 0.0;
                };
                let Some(cc) = c.get(j0..j1) else {
                    return 0.0;
                };
                let Some(out) = thr.get_mut(j0 - reg.left..j0 - reg.left + n) else {
                    return 0.0;
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
                return 0.0;
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
