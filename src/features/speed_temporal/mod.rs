//! libvmaf's SpEED temporal, the `speed_temporal` extractor (one output, `speed_temporal`):
//! SpEED's spatial entropic difference applied to the luma frame differences.
//!
//! For frame n >= 1 of a run, the reference difference is the previous reference luma less
//! this one, the distorted difference the previous distorted luma less this one (with
//! `speed_use_ref_diff`: the previous distorted luma less this frame's *reference* luma, as
//! libvmaf does), each as libvmaf's float frame buffers (`sample / 2^(bpc - 8) - 128`,
//! subtracted in `float`). Both go through SpEED chroma's pipeline unchanged
//! ([`super::speed`]: optional prescale, Gaussian low-pass and decimation by 16, local mean
//! removal, Gaussian scale mixture fit on 5x5 blocks), and the score is
//! `get_speed_score` with `speed_weight_var_mode` 0. Frame 0 of a run scores 0. Unlike
//! `speed_chroma`, libvmaf does not clip the value to `speed_max_val`: that option only
//! names the output.
//!
//! `cpu.rs` is the CPU half (the shared [`super::speed::cpu::Speed`] on
//! [`super::speed::cpu::Difference`] planes), `cuda.rs` the CUDA half (the shared
//! `kernels/speed.cu`, two problems of frame differences instead of four chroma planes).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/speed.c (`vmaf_fex_speed_temporal`,
//! `speed_extract_score`), libvmaf/src/feature/feature_name.c (the option suffix).

pub mod cpu;
pub mod cuda;
mod params;

use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::api::{CpuExtractor, CudaExtractor, Feature, Geometry, Instance, Needs, Section};
use super::options::Options;
use super::speed::Dims;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;
use params::OPTIONS;
pub use params::{TemporalConfig, FEATURE, MODEL_NAME};

/// The registry entry of SpEED temporal.
#[derive(Debug)]
pub struct SpeedTemporalFeature;

/// [`SpeedTemporalFeature`], as [`super::REGISTRY`] lists it.
pub static SPEED_TEMPORAL: SpeedTemporalFeature = SpeedTemporalFeature;

impl Feature for SpeedTemporalFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    /// No built-in model reads it: listed after VMAF's features, as libvmaf lists an extra
    /// extractor.
    fn section(&self) -> Section {
        Section::Trailing
    }

    fn accepts(&self, key: &str) -> bool {
        OPTIONS.iter().any(|(n, _)| *n == key)
    }

    fn model_output(&self, model_name: &str) -> Option<String> {
        (model_name == MODEL_NAME).then(|| FEATURE.to_owned())
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        Ok(Arc::new(SpeedTemporalInstance {
            cfg: TemporalConfig::from_options(options)?,
        }))
    }
}

/// SpEED temporal with its options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedTemporalInstance {
    /// The options.
    pub cfg: TemporalConfig,
}

impl SpeedTemporalInstance {
    /// The [`Dims`] of `g`'s luma plane.
    ///
    /// Errors: [`FeatureError::FrameTooSmall`] when fewer than 5x5 samples are left after
    /// rescaling and decimation by 16 (80x80 luma samples without a prescale; libvmaf logs
    /// "image too small" there and goes on with no block), [`FeatureError::WrongGeometry`]
    /// for a `bpc` outside `8..=16`.
    pub fn dims(&self, g: &Geometry) -> Result<Dims, FeatureError> {
        FeatureError::check_new(FEATURE, g.triple(), (1, 1))?;
        let d = Dims::new(g.width, g.height, self.cfg.speed.prescale);
        if d.blocks_x == 0 || d.blocks_y == 0 {
            let (min_width, min_height) = self.min_size();
            return Err(FeatureError::FrameTooSmall {
                feature: FEATURE,
                width: g.width,
                height: g.height,
                min_width,
                min_height,
            });
        }
        Ok(d)
    }
}

impl Instance for SpeedTemporalInstance {
    fn feature(&self) -> &'static dyn Feature {
        &SPEED_TEMPORAL
    }

    fn key(&self) -> String {
        self.cfg.key()
    }

    /// The previous reference and distorted luma, on every frame.
    fn needs(&self) -> Needs {
        Needs {
            chroma: false,
            previous: true,
            reference_only: false,
        }
    }

    fn outputs(&self) -> Vec<String> {
        vec![format!("{FEATURE}{}", self.key())]
    }

    /// The smallest plane that leaves one 5x5 block after the prescale's rounding and the
    /// decimation by 16 (80x80 at prescale 1).
    fn min_size(&self) -> (usize, usize) {
        let prescale = self.cfg.speed.prescale;
        let n = (1..=1usize << 20)
            .find(|&n| Dims::new(n, n, prescale).blocks_x > 0)
            .unwrap_or(usize::MAX);
        (n, n)
    }

    fn check(&self, g: &Geometry) -> Result<(), FeatureError> {
        self.dims(g).map(|_| ())
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        let dims = self.dims(g)?;
        Ok(Box::new(cpu::TemporalCpu::new(dims, g.bpc, self.cfg)))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        let dims = self.dims(g)?;
        Ok(Box::new(cuda::TemporalGpu::new(
            dev, stream, dims, g.bpc, self.cfg,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::OptionValue;

    #[test]
    fn keys_and_options() {
        assert_eq!(TemporalConfig::default().key(), "");
        let mut o = Options::new();
        o.set("speed_max_val", OptionValue::Number(45.0));
        o.set("speed_use_ref_diff", OptionValue::Bool(true));
        o.set("speed_sigma_nn", OptionValue::Number(0.19));
        o.set("speed_prescale", OptionValue::Number(0.5));
        o.set(
            "speed_prescale_method",
            OptionValue::Text("bilinear".into()),
        );
        let c = TemporalConfig::from_options(&o).unwrap();
        assert_eq!(c.key(), "_mxv_45_ps_0.5_psm_bilinear_snn_0.19_urd");
        let mut o = Options::new();
        o.set("speed_weight_var_mode", OptionValue::Number(1.0));
        assert!(TemporalConfig::from_options(&o).is_err());
        let mut o = Options::new();
        o.set("speed_use_ref_diff", OptionValue::Number(1.0));
        assert!(TemporalConfig::from_options(&o).is_err());
    }

    #[test]
    fn sizes() {
        let inst = SpeedTemporalInstance {
            cfg: TemporalConfig::default(),
        };
        assert_eq!(inst.min_size(), (80, 80));
        assert!(inst.check(&Geometry::luma(80, 80, 8)).is_ok());
        assert!(inst.check(&Geometry::luma(80, 79, 8)).is_err());
        assert_eq!(
            SPEED_TEMPORAL.model_output(MODEL_NAME).as_deref(),
            Some("speed_temporal")
        );
    }
}
