//! Float VIF (visual information fidelity) at four scales, libvmaf's `float_vif` extractor
//! (`vif_scale0..3`, the model names `VMAF_feature_vif_scale0_score`..`3`, read by
//! `vmaf_float_v0.6.1`), in libvmaf's single-precision arithmetic and order of operations.
//!
//! Per scale: the luma planes as floats (`sample / 2^(bpc - 8) - 128`), from scale 1 on
//! low-passed with that scale's Gaussian and decimated by 2; the Gaussian means, variances
//! and covariance of both planes (separable filters, mirrored borders); per pixel the gain
//! `g` and the noise `sv^2` of the distortion channel, and `num = log2(1 + g^2 sigma1^2 /
//! (sv^2 + sigma_nsq))`, `den = log2(1 + sigma1^2 / sigma_nsq)` (libvmaf's polynomial log2),
//! summed over the plane in `f32`; `vif_scale{s} = num / den`.
//!
//! - `cpu.rs`: the CPU half ([`cpu::FloatVif`]), bit-identical sums to libvmaf's C code;
//! - `cuda.rs`: the CUDA host half of `kernels/float_vif.cu`.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_vif.c (options, outputs),
//! vif.c (`compute_vif`), vif_tools.c (filters, statistic, `log2f_approx`), vif_options.h.

pub mod cpu;
pub mod cuda;
pub(crate) mod params;
pub mod prescale;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    indexed, CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Section,
};
use super::options::Options;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;
pub use params::{
    log2f_approx, statistic, FloatVifConfig, Scales, StatParams, FEATURE, MAX_TAPS, SCALES,
};

/// The registry entry of `float_vif`.
#[derive(Debug)]
pub struct FloatVifFeature;

/// [`FloatVifFeature`], as [`super::REGISTRY`] lists it.
pub static FLOAT_VIF: FloatVifFeature = FloatVifFeature;

impl Feature for FloatVifFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    fn section(&self) -> Section {
        Section::Core
    }

    fn accepts(&self, key: &str) -> bool {
        key.starts_with("vif_")
    }

    fn model_output(&self, model_name: &str) -> Option<String> {
        indexed(model_name, "VMAF_feature_vif_scale", SCALES).map(|i| format!("vif_scale{i}"))
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        Ok(Arc::new(FloatVifInstance {
            cfg: FloatVifConfig::from_options(options)?,
        }))
    }
}

/// `float_vif` with one option set.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FloatVifInstance {
    /// The options.
    pub cfg: FloatVifConfig,
}

impl Instance for FloatVifInstance {
    fn feature(&self) -> &'static dyn Feature {
        &FLOAT_VIF
    }

    fn key(&self) -> String {
        self.cfg.key()
    }

    /// `vif_scale0` .. `vif_scale3` (libvmaf's `debug` outputs, off by default, are not
    /// produced).
    fn outputs(&self) -> Vec<String> {
        let key = self.key();
        (0..SCALES).map(|i| format!("vif_scale{i}{key}")).collect()
    }

    fn min_size(&self) -> (usize, usize) {
        self.cfg.min_size()
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        Ok(Box::new(FloatVifCpu {
            vif: cpu::FloatVif::new(g.width, g.height, g.bpc, self.cfg.clone())?,
            cfg: self.cfg.clone(),
        }))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        Ok(Box::new(FloatVifCuda {
            gpu: cuda::FloatVifGpu::new(dev, stream, g.width, g.height, g.bpc, &self.cfg)?,
            cfg: self.cfg.clone(),
        }))
    }
}

struct FloatVifCpu {
    vif: cpu::FloatVif,
    cfg: FloatVifConfig,
}

impl CpuExtractor for FloatVifCpu {
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let s = self.vif.compute(f.reference, f.distorted)?;
        out.iter_mut()
            .zip(self.cfg.scores(&s))
            .for_each(|(o, v)| *o = v);
        Ok(())
    }
}

struct FloatVifCuda {
    gpu: cuda::FloatVifGpu,
    cfg: FloatVifConfig,
}

impl CudaExtractor for FloatVifCuda {
    fn result_words(&self) -> usize {
        cuda::FloatVifGpu::RESULT_WORDS
    }

    fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        self.gpu.enqueue(stream, f.reference, f.distorted, out)
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        let s = cuda::FloatVifGpu::sums(words);
        out.iter_mut()
            .zip(self.cfg.scores(&s))
            .for_each(|(o, v)| *o = v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::options::OptionValue;

    #[test]
    fn filters_and_sizes_are_libvmafs() {
        let c = FloatVifConfig::default();
        let lens: Vec<usize> = (0..SCALES).map(|s| c.filter_len(s)).collect();
        assert_eq!(lens, [17, 9, 5, 3]);
        assert_eq!(c.min_size(), (16, 16));
        for s in 0..SCALES {
            let f = c.filter(s);
            let sum: f32 = f.iter().sum();
            assert!((sum - 1.0).abs() < 1e-6);
            assert_eq!(f[0], f[f.len() - 1]);
        }
        // Scale 3: 3 taps of deviation 0.6, 1 / (1 + 2 exp(-1 / 0.72)) in the middle.
        let f3 = c.filter(3);
        assert!((f3[1] - 0.66718).abs() < 1e-4, "{f3:?}");
    }

    #[test]
    fn float_model_names_map_to_the_outputs() {
        let find = |name: &str| {
            crate::features::REGISTRY
                .iter()
                .find_map(|f| f.model_output(name).map(|o| (f.name(), o)))
        };
        for i in 0..SCALES {
            let want = (FEATURE, format!("vif_scale{i}"));
            assert_eq!(
                find(&format!("VMAF_feature_vif_scale{i}_score")),
                Some(want)
            );
        }
        let motion2 = find("VMAF_feature_motion2_score");
        assert_eq!(motion2, Some(("float_motion", "motion2".to_owned())));
        assert_eq!(
            find("VMAF_integer_feature_vif_scale0_score"),
            Some(("vif", "integer_vif_scale0".to_owned()))
        );
    }

    #[test]
    fn small_planes_are_refused() {
        let inst = FloatVifInstance::default();
        let e = inst
            .cpu(&Geometry::luma(15, 32, 8))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("float_vif needs frames of at least 16x16 luma samples, got 15x32")
        );
        assert!(inst.cpu(&Geometry::luma(16, 16, 12)).is_ok());
    }

    #[test]
    fn log2_approximation_is_close_to_log2() {
        for x in [1.0f32, 1.5, 2.0, 3.7, 100.0, 1e-3] {
            assert!((log2f_approx(x) - x.log2()).abs() < 1e-4, "{x}");
        }
        assert_eq!(log2f_approx(0.0), f32::NEG_INFINITY);
        assert!(log2f_approx(-1.0).is_nan());
    }

    #[test]
    fn option_suffixes_are_libvmafs() {
        let mut o = Options::new();
        o.set("vif_enhn_gain_limit", OptionValue::Number(1.0));
        o.set("vif_skip_scale0", OptionValue::Bool(true));
        o.set("vif_kernelscale", OptionValue::Number(0.5));
        let c = FloatVifConfig::from_options(&o).unwrap();
        assert_eq!(c.key(), "_egl_1_ks_0.5_ssclz");
        assert_eq!(FloatVifConfig::default().key(), "");
        let mut bad = Options::new();
        bad.set("vif_kernelscale", OptionValue::Number(0.9));
        assert!(FloatVifConfig::from_options(&bad).is_err());
    }
}
