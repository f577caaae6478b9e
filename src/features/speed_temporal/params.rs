//! What speed_temporal's definition and its two halves share: the registry and model names, and
//! its options (TemporalConfig).

use crate::features::options::{fmt_g, suffix, Options};
use crate::features::speed::{Prescale, SpeedConfig};

/// The registry name (libvmaf's extractor name) and the output name.
pub const FEATURE: &str = "speed_temporal";

/// The model feature name libvmaf writes the score under (aliased to [`FEATURE`]).
pub const MODEL_NAME: &str = "Speed_temporal_feature_speed_temporal_score";

/// The option names, libvmaf's (`speed_temporal`'s option table), with their aliases in the
/// output suffix, in alphabetical order of the names (the order of the suffix).
pub(super) const OPTIONS: [(&str, &str); 7] = [
    ("speed_kernelscale", "ks"),
    ("speed_max_val", "mxv"),
    ("speed_nn_floor", "nnf"),
    ("speed_prescale", "ps"),
    ("speed_prescale_method", "psm"),
    ("speed_sigma_nn", "snn"),
    ("speed_use_ref_diff", "urd"),
];

/// The options of a `speed_temporal` instance; defaults are libvmaf's.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TemporalConfig {
    /// The SpEED options shared with `speed_chroma` (`speed_kernelscale` 1.0,
    /// `speed_prescale` 1.0 in 0.1..=4, `speed_prescale_method` `nearest` or `bilinear`,
    /// `speed_sigma_nn` 0.29 in 0.1..=2, `speed_nn_floor` 0 in 0..=1, `speed_max_val` 1000
    /// in 0..=1000, which only names the output); `weight_var_mode` is always 0.
    pub speed: SpeedConfig,
    /// `speed_use_ref_diff` (false): the distorted difference is the previous distorted
    /// frame less the current *reference* frame.
    pub use_ref_diff: bool,
}

impl TemporalConfig {
    /// Reads `options` (libvmaf names, see [`OPTIONS`]).
    ///
    /// Errors: a text naming an unknown option (`speed_weight_var_mode` included: libvmaf's
    /// `speed_temporal` has none), a value outside libvmaf's range, a kernel scale libvmaf
    /// does not accept or an unsupported prescale method (`bicubic`, `lanczos4`).
    pub fn from_options(options: &Options) -> Result<Self, String> {
        let names: Vec<&str> = OPTIONS.iter().map(|(n, _)| *n).collect();
        options.only(&names)?;
        let mut plain = options.clone();
        let use_ref_diff = options.flag("speed_use_ref_diff", false)?;
        plain.0.remove("speed_use_ref_diff");
        Ok(Self {
            speed: SpeedConfig::read(&plain)?,
            use_ref_diff,
        })
    }

    /// libvmaf's option suffix: `_<alias>_<value>` for each option not at its default (`_urd`
    /// for `speed_use_ref_diff`), in alphabetical order of the option names, numbers as C's
    /// `%g` (`_mxv_45_urd`). Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/feature_name.c.
    pub fn key(&self) -> String {
        let d = SpeedConfig::default();
        let s = &self.speed;
        let mut parts = Vec::new();
        if s.kernelscale != d.kernelscale {
            parts.push(("speed_kernelscale", "ks", Some(fmt_g(s.kernelscale))));
        }
        if s.max_val != d.max_val {
            parts.push(("speed_max_val", "mxv", Some(fmt_g(s.max_val))));
        }
        if s.nn_floor != d.nn_floor {
            parts.push(("speed_nn_floor", "nnf", Some(fmt_g(s.nn_floor))));
        }
        if s.prescale != d.prescale {
            parts.push(("speed_prescale", "ps", Some(fmt_g(s.prescale))));
        }
        if s.method != d.method {
            let m = match s.method {
                Prescale::Nearest => "nearest",
                Prescale::Bilinear => "bilinear",
            };
            parts.push(("speed_prescale_method", "psm", Some(m.to_owned())));
        }
        if s.sigma_nn != d.sigma_nn {
            parts.push(("speed_sigma_nn", "snn", Some(fmt_g(s.sigma_nn))));
        }
        if self.use_ref_diff {
            parts.push(("speed_use_ref_diff", "urd", None));
        }
        suffix(parts)
    }
}
