//! CAMBI, libvmaf's `cambi` extractor: the Contrast Aware Multiscale Banding Index of the
//! distorted luma (`Cambi_feature_cambi_score`, logged as `cambi` plus libvmaf's option
//! suffix, e.g. `cambi_hrs_1080_cmxv_17_vlt_0.06` for the VMAF v1 models).
//!
//! Source of the algorithm and every constant: Netflix/vmaf v3.2.0,
//! libvmaf/src/feature/cambi.c, cambi.h and luminance_tools.c. No-reference mode only
//! (`full_ref` is refused).
//!
//! The steps, per frame (shapes for a 1920x1080 input with the v1 options):
//! 1. preprocessing: nearest-neighbour resize to the encode size (`enc_width` x
//!    `enc_height`, the input's size by default), conversion to 10 bits, and a 2x2
//!    anti-dithering average when the encode depth is below 10 bits;
//! 2. spatial mask at the encode size: a pixel is kept when more than `mask_index` of the 7x7
//!    pixels around it equal their right and lower neighbours;
//! 3. five scales (halving each time, rounding up; with `cambi_high_res_speedup` once more
//!    before the first): decimation of the image and the mask, a 3x3 mode filter, per-pixel
//!    c-values from the histogram of the `window` x `window` masked pixels around each pixel,
//!    and the mean of the largest `topk` share of the c-values;
//! 4. the score: the scales' means weighted 16, 8, 4, 2, 1, divided by the window's pixel
//!    count, clipped to `cambi_max_val`.
//!
//! - `params.rs`: the options ([`CambiConfig`]) and everything fixed per geometry
//!   ([`params::Params`]: sizes, window, thresholds, look-up tables);
//! - `cpu/`: the CPU half ([`cpu::Cambi`]), the reference of the CUDA half, with direct
//!   (window-by-window) forms of its steps for its tests;
//! - `cuda.rs`: the CUDA host half ([`cuda::CambiGpu`]) of `kernels/cambi.cu`.
//!
//! Both halves compute each scale's top-k sum of c-values exactly, as an integer in units of
//! 2^-24 (every c-value is 0 or a float of at least 0.5, hence a multiple of 2^-24), and
//! share [`score_from_sums`], so the GPU's scores are bit-identical to the CPU's.

pub mod cpu;
pub mod cuda;
pub mod params;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Section,
};
use super::options::Options;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;
use params::FEATURE;
pub use params::{score_from_sums, FIXED_ONE, NUM_SCALES, SCALE_WEIGHTS};

pub use params::{CambiConfig, Eotf};

/// The registry entry of CAMBI.
#[derive(Debug)]
pub struct CambiFeature;

/// [`CambiFeature`], as [`super::REGISTRY`] lists it.
pub static CAMBI: CambiFeature = CambiFeature;

impl Feature for CambiFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    /// libvmaf's logs list CAMBI after the VMAF features of the v1 models' first set.
    fn section(&self) -> Section {
        Section::Core
    }

    fn accepts(&self, key: &str) -> bool {
        params::OPTION_NAMES.contains(&key)
    }

    fn model_output(&self, model_name: &str) -> Option<String> {
        (model_name == "Cambi_feature_cambi_score").then(|| FEATURE.to_owned())
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        Ok(Arc::new(CambiInstance {
            cfg: CambiConfig::from_options(options)?,
        }))
    }
}

/// CAMBI with one set of options.
#[derive(Debug, Clone, PartialEq)]
pub struct CambiInstance {
    /// The options.
    pub cfg: CambiConfig,
}

impl Instance for CambiInstance {
    fn feature(&self) -> &'static dyn Feature {
        &CAMBI
    }

    fn key(&self) -> String {
        self.cfg.suffix()
    }

    fn outputs(&self) -> Vec<String> {
        vec![format!("{FEATURE}{}", self.key())]
    }

    /// libvmaf refuses frames whose encode size is below 216 on both sides, and windows
    /// (after their adjustment to the size) over 65 samples.
    fn check(&self, g: &Geometry) -> Result<(), FeatureError> {
        FeatureError::check_new(FEATURE, g.triple(), (1, 1))?;
        params::Params::new(&self.cfg, g.width, g.height, g.bpc).map(|_| ())
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        self.check(g)?;
        Ok(Box::new(cpu::Cambi::new(
            &self.cfg, g.width, g.height, g.bpc,
        )?))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        Ok(Box::new(cuda::CambiGpu::new(
            dev, stream, &self.cfg, g.width, g.height, g.bpc,
        )?))
    }
}

impl CpuExtractor for cpu::Cambi {
    /// The distorted luma's score.
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let score = self.score(f.distorted)?;
        if let Some(o) = out.first_mut() {
            *o = score;
        }
        Ok(())
    }
}

impl CudaExtractor for cuda::CambiGpu {
    fn result_words(&self) -> usize {
        cuda::CambiGpu::RESULT_WORDS
    }

    fn side_stream(&self) -> bool {
        true
    }

    fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        cuda::CambiGpu::enqueue(self, stream, f.distorted, out)
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        if let Some(o) = out.first_mut() {
            *o = self.score(words);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::OptionValue;

    fn v1() -> CambiConfig {
        let mut o = Options::new();
        o.set("cambi_high_res_speedup", OptionValue::Number(1080.0));
        o.set("cambi_vis_lum_threshold", OptionValue::Number(0.06));
        o.set("cambi_max_val", OptionValue::Number(17.0));
        CambiConfig::from_options(&o).unwrap()
    }

    #[test]
    fn suffix_is_libvmafs() {
        assert_eq!(v1().suffix(), "_hrs_1080_cmxv_17_vlt_0.06");
        assert_eq!(CambiConfig::default().suffix(), "");
        let mut o = Options::new();
        o.set("cambi_high_res_speedup", OptionValue::Number(1080.0));
        o.set("cambi_vis_lum_threshold", OptionValue::Number(0.06));
        o.set("cambi_max_val", OptionValue::Number(17.0));
        o.set("enc_width", OptionValue::Number(1280.0));
        o.set("enc_height", OptionValue::Number(720.0));
        o.set("enc_bitdepth", OptionValue::Number(8.0));
        let c = CambiConfig::from_options(&o).unwrap();
        assert_eq!(
            c.suffix(),
            "_hrs_1080_cmxv_17_vlt_0.06_encbd_8_ench_720_encw_1280"
        );
    }

    #[test]
    fn model_mapping() {
        assert_eq!(
            CAMBI.model_output("Cambi_feature_cambi_score").as_deref(),
            Some("cambi")
        );
        assert!(CAMBI.accepts("cambi_max_val") && !CAMBI.accepts("motion_max_val"));
        let mut o = Options::new();
        o.set("full_ref", OptionValue::Bool(true));
        assert!(CAMBI.configure(&o, false).is_err());
    }

    #[test]
    fn sums_to_score() {
        let s = score_from_sums(&[1 << 24; 5], &[1; 5], 289, 1000.0);
        assert!((s - 31.0 / 289.0).abs() < 1e-15);
    }
}
