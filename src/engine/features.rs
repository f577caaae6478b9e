//! Metrics computed beside VMAF's own features (the `features` property): libvmaf's integer
//! PSNR, float SSIM and float MS-SSIM, and SSIMULACRA2.
//!
//! Names are libvmaf 3.2.0's (`psnr_y`, `psnr_cb`, `psnr_cr`, `float_ssim`, `float_ms_ssim`;
//! `ssimulacra2` for the one libvmaf 3.2.0 does not have).

use std::fmt;

/// Why a `features` list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown feature '{name}' in the features list (known: {known})")]
pub struct FeatureListError {
    /// The entry that is not a known feature.
    pub name: String,
    /// Comma-separated known names.
    pub known: String,
}

/// One extra metric the `features` property can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExtraFeature {
    /// libvmaf's integer PSNR (`psnr_y`, `psnr_cb`, `psnr_cr`), libvmaf/src/feature/integer_psnr.c.
    Psnr,
    /// libvmaf's `float_ssim` (luma), libvmaf/src/feature/float_ssim.c.
    FloatSsim,
    /// libvmaf's `float_ms_ssim` (luma, five scales), libvmaf/src/feature/float_ms_ssim.c.
    FloatMsSsim,
    /// SSIMULACRA2 on the frames converted to RGB with the caps' colorimetry.
    Ssimulacra2,
}

impl ExtraFeature {
    /// Every extra feature, in the order the log lists them.
    pub const ALL: [ExtraFeature; 4] = [
        ExtraFeature::Psnr,
        ExtraFeature::FloatSsim,
        ExtraFeature::FloatMsSsim,
        ExtraFeature::Ssimulacra2,
    ];

    /// The name the `features` property takes (libvmaf's extractor name).
    pub fn name(self) -> &'static str {
        match self {
            ExtraFeature::Psnr => "psnr",
            ExtraFeature::FloatSsim => "float_ssim",
            ExtraFeature::FloatMsSsim => "float_ms_ssim",
            ExtraFeature::Ssimulacra2 => "ssimulacra2",
        }
    }
}

/// The set of extra metrics asked for. Empty by default (VMAF's features only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct FeatureSet {
    /// `psnr_y`, `psnr_cb`, `psnr_cr`.
    pub psnr: bool,
    /// `float_ssim`.
    pub float_ssim: bool,
    /// `float_ms_ssim`.
    pub float_ms_ssim: bool,
    /// `ssimulacra2`.
    pub ssimulacra2: bool,
}

impl FeatureSet {
    /// Parses a comma-separated list (`"psnr,float_ssim"`); spaces around names and empty
    /// entries are ignored, names are case-sensitive, repeats are allowed.
    ///
    /// Errors: [`FeatureListError`] naming the first unknown entry.
    pub fn parse(list: &str) -> Result<Self, FeatureListError> {
        let mut set = Self::default();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let f = ExtraFeature::ALL
                .into_iter()
                .find(|f| f.name() == entry)
                .ok_or_else(|| FeatureListError {
                    name: entry.to_owned(),
                    known: ExtraFeature::ALL.map(ExtraFeature::name).join(", "),
                })?;
            set.insert(f);
        }
        Ok(set)
    }

    /// Adds `f`.
    pub fn insert(&mut self, f: ExtraFeature) {
        match f {
            ExtraFeature::Psnr => self.psnr = true,
            ExtraFeature::FloatSsim => self.float_ssim = true,
            ExtraFeature::FloatMsSsim => self.float_ms_ssim = true,
            ExtraFeature::Ssimulacra2 => self.ssimulacra2 = true,
        }
    }

    /// Whether `f` is in the set.
    pub fn contains(&self, f: ExtraFeature) -> bool {
        match f {
            ExtraFeature::Psnr => self.psnr,
            ExtraFeature::FloatSsim => self.float_ssim,
            ExtraFeature::FloatMsSsim => self.float_ms_ssim,
            ExtraFeature::Ssimulacra2 => self.ssimulacra2,
        }
    }

    /// Whether nothing beyond VMAF's features is asked for.
    pub fn is_empty(&self) -> bool {
        !(self.psnr || self.float_ssim || self.float_ms_ssim || self.ssimulacra2)
    }

    /// The features in the set, in log order.
    pub fn iter(&self) -> impl Iterator<Item = ExtraFeature> + '_ {
        ExtraFeature::ALL.into_iter().filter(|f| self.contains(*f))
    }

    /// Whether any feature in the set reads the chroma planes (PSNR's `psnr_cb`/`psnr_cr`,
    /// SSIMULACRA2's RGB conversion).
    pub fn reads_chroma(&self) -> bool {
        self.psnr || self.ssimulacra2
    }
}

impl fmt::Display for FeatureSet {
    /// The canonical comma-separated list (`psnr,float_ssim`), empty for the empty set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.iter().map(ExtraFeature::name).collect();
        f.write_str(&names.join(","))
    }
}

/// One frame pair's extra metric values, as the CPU backend computes them. A value is
/// meaningful only when its feature is in the [`FeatureSet`] the backend was made with
/// (otherwise it is 0).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ExtraScores {
    /// `psnr_y`, `psnr_cb`, `psnr_cr` in dB, each in `[0, 6 * bpc + 12]` (60 dB at 8 bits).
    /// `psnr_cb`/`psnr_cr` are 0 for formats without chroma (GRAY8).
    pub psnr: [f64; 3],
    /// `float_ssim`, in [-1, 1] (1 for identical frames).
    pub float_ssim: f64,
    /// `float_ms_ssim`, in [0, 1] for natural content (1 for identical frames).
    pub float_ms_ssim: f64,
    /// `ssimulacra2`: 100 for identical frames, lower is worse (can be negative).
    pub ssimulacra2: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        let s = FeatureSet::parse(" float_ssim, psnr,,psnr ").unwrap();
        assert!(s.psnr && s.float_ssim && !s.float_ms_ssim);
        assert_eq!(s.to_string(), "psnr,float_ssim");
        assert!(FeatureSet::parse("").unwrap().is_empty());
        let e = FeatureSet::parse("psnr,ssim").unwrap_err();
        assert_eq!(e.name, "ssim");
    }
}
