//! libvmaf's float ADM (Additive Distortion Measure / Detail Loss Metric), the `float_adm`
//! extractor: `adm2`, `aim`, `adm3`, `adm_scale0..3` (what `vmaf_float_v0.6.1` reads as
//! `VMAF_feature_adm2_score`), in single precision with libvmaf's order of operations.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_adm.c, adm.c (`compute_adm`),
//! adm_tools.c / adm_tools.h (the Daubechies-2 DWT, decoupling, CSF, contrast masking) and
//! adm_options.h. The algorithm is the integer ADM's (`super::adm`) in `f32`: samples become
//! `sample / 2^(bpc - 8) - 128`, four levels of a db2 DWT with mirrored borders, the detail
//! bands split into a restored and an additive part, both weighted by the CSF, the restored
//! part masked by the additive one (DLM numerator, `adm2`) and the reverse (AIM numerator,
//! `aim`), each pooled as the p-norm (cube root of summed cubes) over the centre of the band.
//!
//! `config.rs` holds the options ([`FloatAdmConfig`]) and the CSF factors; `cpu.rs` the CPU
//! half ([`cpu::FloatAdm`], the reference); `cuda.rs` the CUDA host half
//! ([`cuda::FloatAdmGpu`]) of `kernels/float_adm.cu`.

mod config;
pub mod cpu;
pub mod cuda;
mod params;

pub use config::FloatAdmConfig;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    indexed, CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Section,
};
use super::options::Options;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;
use params::FEATURE;
pub use params::{MIN_SIZE, SCALES};

/// The registry entry of `float_adm`.
#[derive(Debug)]
pub struct FloatAdmFeature;

/// [`FloatAdmFeature`], as [`super::REGISTRY`] lists it.
pub static FLOAT_ADM: FloatAdmFeature = FloatAdmFeature;

impl Feature for FloatAdmFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    fn section(&self) -> Section {
        Section::Core
    }

    fn accepts(&self, key: &str) -> bool {
        key.starts_with("adm_")
    }

    /// The float VMAF models' names: `VMAF_feature_adm2_score` is `adm2`, and likewise
    /// `aim`, `adm3` and `adm_scale0..3`.
    fn model_output(&self, model_name: &str) -> Option<String> {
        match model_name {
            "VMAF_feature_adm2_score" => Some("adm2".into()),
            "VMAF_feature_aim_score" => Some("aim".into()),
            "VMAF_feature_adm3_score" => Some("adm3".into()),
            _ => indexed(model_name, "VMAF_feature_adm_scale", SCALES)
                .map(|i| format!("adm_scale{i}")),
        }
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        Ok(Arc::new(FloatAdmInstance {
            cfg: FloatAdmConfig::from_options(options)?,
        }))
    }
}

/// `float_adm` with one option set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatAdmInstance {
    /// The options.
    pub cfg: FloatAdmConfig,
}

impl Instance for FloatAdmInstance {
    fn feature(&self) -> &'static dyn Feature {
        &FLOAT_ADM
    }

    fn key(&self) -> String {
        self.cfg.key()
    }

    fn outputs(&self) -> Vec<String> {
        let suffix = self.key();
        ["adm2", "aim", "adm3"]
            .into_iter()
            .map(|b| format!("{b}{suffix}"))
            .chain((0..SCALES).map(|i| format!("adm_scale{i}{suffix}")))
            .collect()
    }

    fn min_size(&self) -> (usize, usize) {
        (MIN_SIZE, MIN_SIZE)
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        self.check(g)?;
        Ok(Box::new(FloatAdmCpu {
            adm: cpu::FloatAdm::new(g.width, g.height, g.bpc)?,
            cfg: self.cfg,
        }))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        let module = dev.modules().get("float_adm")?;
        Ok(Box::new(FloatAdmCuda {
            gpu: cuda::FloatAdmGpu::new(module, stream, g.width, g.height, g.bpc, &self.cfg)?,
        }))
    }
}

struct FloatAdmCpu {
    adm: cpu::FloatAdm,
    cfg: FloatAdmConfig,
}

impl CpuExtractor for FloatAdmCpu {
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let v = self.adm.compute(f.reference, f.distorted, &self.cfg)?;
        out.iter_mut().zip(v).for_each(|(o, v)| *o = v);
        Ok(())
    }

    /// The reference's DWT and denominators once for all frames
    /// ([`cpu::FloatAdm::compute_ladder`]).
    fn extract_ladder(
        &mut self,
        frames: &[HostFrame],
        outs: &mut [&mut [f64]],
    ) -> Result<(), FeatureError> {
        let Some((reference, distorted)) = super::api::ladder_lumas(frames) else {
            return Ok(());
        };
        let scores = self.adm.compute_ladder(reference, &distorted, &self.cfg)?;
        for (v, out) in scores.iter().zip(outs.iter_mut()) {
            out.iter_mut().zip(v).for_each(|(o, v)| *o = *v);
        }
        Ok(())
    }
}

struct FloatAdmCuda {
    gpu: cuda::FloatAdmGpu,
}

impl CudaExtractor for FloatAdmCuda {
    fn result_words(&self) -> usize {
        cuda::FloatAdmGpu::RESULT_WORDS
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
        let v = self.gpu.scores(words);
        out.iter_mut().zip(v).for_each(|(o, v)| *o = v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            FLOAT_ADM.model_output("VMAF_feature_adm2_score").as_deref(),
            Some("adm2")
        );
        assert_eq!(
            FLOAT_ADM
                .model_output("VMAF_feature_adm_scale3_score")
                .as_deref(),
            Some("adm_scale3")
        );
        assert!(FLOAT_ADM
            .model_output("VMAF_integer_feature_adm2_score")
            .is_none());
        let i = FLOAT_ADM.configure(&Options::new(), false).unwrap();
        assert_eq!(
            i.outputs(),
            [
                "adm2",
                "aim",
                "adm3",
                "adm_scale0",
                "adm_scale1",
                "adm_scale2",
                "adm_scale3"
            ]
        );
    }
}
