//! What VIF's definition and its two halves share: the registry name, the smallest plane, its
//! options (VifConfig) and the scores.

/// Name reported in [`FeatureError`]s.
pub(super) const FEATURE: &str = "vif";

/// Smallest plane width, in samples, that [`cpu::Vif`] accepts.
///
/// The planes are halved (rounding down) three times, so scale 3 is `width / 8` wide and
/// is filtered with a 3-tap kernel; mirroring one sample at each border needs at least two
/// samples there, hence `width / 8 >= 2`. The wider kernels of the finer scales (17 taps at
/// scale 0 needs `>= 9`, 9 taps at scale 1 needs `width / 2 >= 5`, 5 taps at scale 2 needs
/// `width / 4 >= 3`) are then satisfied too.
pub const MIN_WIDTH: usize = 16;

/// Smallest plane height, in rows, that [`cpu::Vif`] accepts (same reasoning as [`MIN_WIDTH`]).
pub const MIN_HEIGHT: usize = 16;

/// libvmaf's `DEFAULT_VIF_ENHN_GAIN_LIMIT`.
pub(super) const DEFAULT_ENHN_GAIN_LIMIT: f64 = 100.0;

/// Options of libvmaf's integer VIF that VMAF models set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VifConfig {
    /// libvmaf option `vif_enhn_gain_limit` (alias `egl`): upper bound of the gain `g` that
    /// the distorted signal may show over the reference. libvmaf accepts `1.0..=100.0`;
    /// `1.0` disables enhancement gain (used by `vmaf_v0.6.1neg`), the default is `100.0`.
    /// Values are used as given (no clamping); `NaN` behaves like "no limit".
    pub enhn_gain_limit: f64,
}

impl Default for VifConfig {
    /// `enhn_gain_limit = 100.0` (libvmaf `DEFAULT_VIF_ENHN_GAIN_LIMIT`).
    fn default() -> Self {
        Self {
            enhn_gain_limit: DEFAULT_ENHN_GAIN_LIMIT,
        }
    }
}

/// Per-frame output of [`cpu::Vif::compute`]; index `i` is scale `i` (0 = full resolution,
/// 3 = one eighth).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VifScores {
    /// Numerator per scale (libvmaf `integer_vif_num_scale{i}`), a sum over the scale's
    /// pixels of information terms in bits; computed in `f64` and rounded to `f32` as
    /// libvmaf stores it, widened back to `f64` here. Non-negative for valid input.
    pub num: [f64; 4],
    /// Denominator per scale (libvmaf `integer_vif_den_scale{i}`), rounded to `f32` like
    /// `num`. Every pixel contributes at least 1, so it is at least the scale's pixel count and
    /// never 0.
    pub den: [f64; 4],
    /// `integer_vif_scale{i}` (`VMAF_integer_feature_vif_scale{i}_score`): the `f32`
    /// quotient `num / den` exactly as libvmaf computes it (a `float` division, no special
    /// case since `den > 0`), widened to `f64`. Typically in `0.0..=1.0`; above 1 when the
    /// distorted frame enhances the reference (bounded through `enhn_gain_limit`).
    pub scale: [f64; 4],
}
