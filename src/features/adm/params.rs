//! What ADM's definition and its two halves share: the registry name, the smallest plane and
//! border, the scores, the scored region of each scale and the arithmetic that finishes the
//! denominators and scores.

use super::config::AdmConfig;

/// Name used in [`FeatureError`]s.
pub(super) const FEATURE: &str = "adm";

/// Smallest accepted plane width in samples.
///
/// The four DWT levels read 4-tap windows whose mirrored indices libvmaf only builds correctly
/// when every DWT input is at least 5 samples wide, i.e. `ceil(width / 8) >= 5`. That makes the
/// coarsest band 3 samples wide and keeps every rounding shift of the CM and denominator stages
/// positive (scale 0 needs `ceil(width / 2) > 16`).
pub const MIN_WIDTH: usize = 33;

/// Smallest accepted plane height in rows (same reasoning as [`MIN_WIDTH`]).
pub const MIN_HEIGHT: usize = 33;

/// libvmaf's `ADM_BORDER_FACTOR`.
pub(crate) const BORDER_FACTOR: f64 = 0.1;

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
    /// `integer_adm3`: `max(w * adm2 + (1 - w) * (1 - aim), min)` with `w` =
    /// [`AdmConfig::dlm_weight`] and `min` = [`AdmConfig::min_val`] (0.5 and 0 by default).
    pub adm3: f64,
    /// `integer_adm_scale0..3`: per-scale numerator / denominator.
    pub scale: [f64; 4],
    /// `integer_adm_num` (debug output): numerator sum after the small-value cut-off.
    pub num: f64,
    /// `integer_adm_den` (debug output): denominator sum after the small-value cut-off.
    pub den: f64,
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

/// `(uint32_t)ceil(x)` for the non-negative log values used as shifts.
#[inline]
pub(crate) fn ceil_u32(x: f64) -> u32 {
    x.ceil().max(0.0) as u32
}

/// The contrast-masking shifts of `w` x `h` bands (`adm_cm` / `i4_adm_cm`, scale 0 when `s0`),
/// per band (h, v, d): the threshold's left shift, the square's and the cube's right shifts;
/// and the per-row sum's right shift. Shared by the CPU's CM and the CUDA host's constants.
pub(crate) fn cm_shifts(s0: bool, w: usize, h: usize) -> ([u32; 3], [u32; 3], [u32; 3], u32) {
    let log2w = (w as f64).log2();
    let (sub, sq, cub) = if s0 {
        let c_hv = ceil_u32(log2w - 4.0);
        let c_d = ceil_u32(log2w - 3.0);
        ([10, 10, 12], [29, 29, 30], [c_hv, c_hv, c_d])
    } else {
        let c = ceil_u32(log2w);
        ([0; 3], [30; 3], [c; 3])
    };
    (sub, sq, cub, ceil_u32((h as f64).log2()))
}

/// Final floating-point part of the denominator, in libvmaf's precision; `noise_weight` is
/// [`AdmConfig::noise_weight`].
pub(crate) fn den_finish(
    accum: [u64; 3],
    shift_csf: f64,
    rf: [f32; 3],
    area: i64,
    noise_weight: f64,
) -> f32 {
    let powf_add = ((area as f64 * noise_weight) as f32).powf(1.0f32 / 3.0);
    let mut d = [0.0f32; 3];
    for ((out, &acc), &r) in d.iter_mut().zip(accum.iter()).zip(rf.iter()) {
        let csf = (acc as f64 / shift_csf) * (r as f64).powf(3.0);
        *out = (csf as f32).powf(1.0f32 / 3.0) + powf_add;
    }
    d[0] + d[1] + d[2]
}

/// Combines the four scales' (numerator, denominator, AIM numerator), as `f32`, into the
/// scores (libvmaf's `integer_compute_adm` tail): sums in `f64` in scale order, the
/// near-zero clamps, adm2 = num / den (1 when den is 0), aim, adm3 (with `cfg`'s DLM weight
/// and minimum) and the per-scale ratios. Shared by the CPU extractor and the GPU host finish
/// so both stay bit-identical.
pub(crate) fn finish_scores(
    width: usize,
    height: usize,
    per_scale: [(f32, f32, f32); 4],
    cfg: &AdmConfig,
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
        adm2 * cfg.dlm_weight + (1.0 - aim) * (1.0 - cfg.dlm_weight),
        cfg.min_val,
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
