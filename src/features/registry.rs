//! The feature registry: [`REGISTRY`], every metric the element computes in computing and log
//! order (libvmaf's `VmafFeatureExtractor` table), looked up by name ([`find`]), and the
//! `features` property's list of them ([`FeatureSet`]).

use std::fmt;

use super::api::Feature;
use super::{
    adm, cambi, ciede, float_adm, float_ansnr, float_moment, float_motion, float_psnr, float_vif,
    motion, psnr, psnr_hvs, speed, speed_temporal, ssim, ssimulacra2, vif,
};

/// Every feature, in the order the engine computes them and lists their outputs in a log
/// (with [`Feature::section`]). Adding a metric: its folder, and one line here.
pub static REGISTRY: &[&dyn Feature] = &[
    &psnr::PSNR,
    &cambi::CAMBI,
    &speed::SPEED_CHROMA,
    &adm::ADM,
    &motion::MOTION,
    &vif::VIF,
    &float_adm::FLOAT_ADM,
    &float_motion::FLOAT_MOTION,
    &float_vif::FLOAT_VIF,
    &ssim::FLOAT_SSIM,
    &ssim::FLOAT_MS_SSIM,
    &ssimulacra2::SSIMULACRA2,
    &speed_temporal::SPEED_TEMPORAL,
    &psnr_hvs::PSNR_HVS,
    &ciede::CIEDE,
    &float_psnr::FLOAT_PSNR,
    &float_ansnr::FLOAT_ANSNR,
    &float_moment::FLOAT_MOMENT,
];

/// The registered feature named `name` (libvmaf's extractor name, e.g. `"psnr"`).
pub fn find(name: &str) -> Option<&'static dyn Feature> {
    REGISTRY.iter().copied().find(|f| f.name() == name)
}

/// The position of `feature` in [`REGISTRY`] (its computing and log order).
pub fn registry_index(feature: &dyn Feature) -> usize {
    REGISTRY
        .iter()
        .position(|f| f.name() == feature.name())
        .unwrap_or(REGISTRY.len())
}

/// A `features` property list: registered features asked for besides the models' own.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct FeatureSet {
    names: Vec<&'static str>,
}

/// Why a `features` list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown feature '{name}' in the features list (known: {known})")]
pub struct FeatureListError {
    /// The entry that is not a registered feature.
    pub name: String,
    /// Comma-separated registered names.
    pub known: String,
}

impl FeatureSet {
    /// Parses a comma-separated list (`"psnr,float_ssim"`) of [`REGISTRY`] names; spaces
    /// around names and empty entries are ignored, names are case-sensitive, repeats are
    /// allowed.
    ///
    /// Errors: [`FeatureListError`] naming the first unknown entry.
    pub fn parse(list: &str) -> Result<Self, FeatureListError> {
        let mut set = Self::default();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let f = find(entry).ok_or_else(|| FeatureListError {
                name: entry.to_owned(),
                known: REGISTRY
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
            set.insert(f);
        }
        Ok(set)
    }

    /// Adds `f`.
    pub fn insert(&mut self, f: &'static dyn Feature) {
        if !self.names.contains(&f.name()) {
            self.names.push(f.name());
        }
    }

    /// Whether the feature named `name` is in the set.
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(&name)
    }

    /// Whether nothing beyond the models' features is asked for.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Whether a feature of the set reads chroma ([`Feature::reads_chroma`]).
    pub fn reads_chroma(&self) -> bool {
        self.iter().any(|f| f.reads_chroma())
    }

    /// The features in the set, in [`REGISTRY`] order.
    pub fn iter(&self) -> impl Iterator<Item = &'static dyn Feature> + '_ {
        REGISTRY
            .iter()
            .copied()
            .filter(|f| self.names.contains(&f.name()))
    }
}

impl fmt::Display for FeatureSet {
    /// The canonical comma-separated list in registry order (`psnr,float_ssim`), empty for
    /// the empty set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.iter().map(|x| x.name()).collect();
        f.write_str(&names.join(","))
    }
}

impl fmt::Debug for FeatureSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FeatureSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        let s = FeatureSet::parse(" float_ssim, psnr,,psnr ").unwrap();
        assert!(s.contains("psnr") && s.contains("float_ssim") && !s.contains("float_ms_ssim"));
        assert_eq!(s.to_string(), "psnr,float_ssim");
        assert!(FeatureSet::parse("").unwrap().is_empty());
        let e = FeatureSet::parse("psnr,ssim").unwrap_err();
        assert_eq!(e.name, "ssim");
    }

    #[test]
    fn registry_names_are_unique() {
        for (i, f) in REGISTRY.iter().enumerate() {
            assert_eq!(find(f.name()).map(registry_index), Some(i));
        }
    }
}
