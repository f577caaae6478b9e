//! The features: every metric the element computes, one folder each, listed by the registry
//! (`registry.rs`) in the spirit of libvmaf's `VmafFeatureExtractor` table (Netflix/vmaf v3.2.0,
//! libvmaf/src/feature/feature_extractor.c: one table of extractors, each with its options,
//! `init` / `extract` / `flush` / `close`).
//!
//! A metric is four things side by side in `src/features/<name>/`:
//! - `mod.rs`: its definition, a [`Feature`] (name, options, libvmaf output names, what it
//!   reads, the finish step across frames), importing both halves;
//! - `params.rs`: the name, options, constants and arithmetic the definition and both halves
//!   share; the halves import it, never `mod.rs`;
//! - `cpu.rs`: the CPU half, a [`CpuExtractor`] (the reference the GPU half is tested
//!   against, bit for bit where the arithmetic is integer);
//! - `cuda.rs`: the CUDA host half, a [`CudaExtractor`], driving its kernel in
//!   `kernels/<name>.cu`.
//!
//! [`REGISTRY`] (`registry.rs`) lists them. The engine asks it which features the models and
//! the `features` property need ([`FeatureSet`], [`Layout`]) and runs them through a backend
//! (`crate::engine::backend`); it never names a metric itself. Data flows one way: engine ->
//! features -> runtime (`crate::cpu`, `crate::cuda`) -> kernels.
//!
//! What the registry and the metrics share, the traits above and the frames the halves read
//! ([`HostFrame`], [`DevFrame`]), is in `api.rs`, which names no metric: the registry imports
//! the metrics, the metrics import `api.rs` and `options.rs`, never the registry or this file.
//!
//! `init` is [`Instance::cpu`] / [`Instance::cuda`] (sized once per geometry), `extract` is
//! [`CpuExtractor::extract`] / [`CudaExtractor::enqueue`] + [`CudaExtractor::read`], `flush` is
//! [`Instance::finish`] (values that need the next frame) and `close` is `Drop`.

pub mod adm;
pub mod cambi;
pub mod ciede;
pub mod float_adm;
pub mod float_ansnr;
pub mod float_moment;
pub mod float_motion;
pub mod float_psnr;
pub mod float_vif;
pub mod motion;
pub mod psnr;
pub mod psnr_hvs;
pub mod speed;
pub mod speed_temporal;
pub mod ssim;
pub mod ssimulacra2;
pub mod vif;

mod api;
mod layout;
mod options;
mod registry;

use std::sync::Arc;

pub use api::{
    for_ladder_groups, ladder_lumas, CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry,
    HostFrame, Instance, Needs, Section, Window, MAX_AHEAD, MAX_BEHIND,
};
pub use layout::{Layout, LayoutError, RawFeatures, MAX_OPTION_SETS, RAW_CAPACITY};
pub use options::{fmt_g, suffix, OptionValue, Options, SuffixPart};
pub use registry::{find, registry_index, FeatureListError, FeatureSet, REGISTRY};

/// The layout of VMAF v0's own features, ADM, motion and VIF, with the options `vif` and
/// `adm` (what `vmaf_v0.6.1` reads; `vmaf_v0.6.1neg` sets both gain limits to 1).
///
/// Errors: none in practice (three instances are within every limit of [`Layout::new`]).
pub fn vmaf_layout(vif: vif::VifConfig, adm: adm::AdmConfig) -> Result<Arc<Layout>, LayoutError> {
    let instances: Vec<Arc<dyn Instance>> = vec![
        Arc::new(adm::AdmInstance { cfg: adm }),
        Arc::new(motion::MotionInstance::default()),
        Arc::new(vif::VifInstance { cfg: vif }),
    ];
    Layout::new(instances)
}

/// Deterministic xorshift64 numbers (shifts 13, 7, 17) for the CPU halves' unit tests; the
/// state must not be 0.
#[cfg(test)]
pub(crate) struct XorShift(pub(crate) u64);

#[cfg(test)]
impl XorShift {
    /// The next number.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
