//! Integer ADM (Additive Distortion Measure / Detail Loss Metric), libvmaf's `adm` extractor
//! (`integer_adm2`, `integer_aim`, `integer_adm3`, `integer_adm_scale0..3`), bit-exact with
//! Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_adm.c.
//!
//! `params.rs` holds what this file and both halves share: the scored regions and the
//! floating-point finish.
//! `config.rs` holds the options (VMAF v0's and v1's: [`AdmConfig`]) and the CSF weights they
//! select; `cpu/` is the CPU half ([`cpu::Adm`], the reference); `cuda.rs` the CUDA host half
//! ([`cuda::AdmGpu`]) of `kernels/adm.cu`.

mod config;
pub mod cpu;
pub mod cuda;
mod params;

pub(crate) use config::dwt_quant_step;
pub use config::{AdmConfig, CsfMode};

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    indexed, CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Section,
};
use super::options::Options;
use crate::cuda::{CudaError, DevPlane, GpuDevice};
use crate::video::frame::FeatureError;
pub(crate) use params::Region;
use params::FEATURE;
pub use params::{AdmScores, MIN_HEIGHT, MIN_WIDTH};

/// Distorted frames given to one [`cuda::AdmGpu::enqueue_ladder`] call (a ladder of more
/// runs the reference's DWT once per group of this many).
const LADDER_GROUP: usize = 16;

/// The registry entry of ADM.
#[derive(Debug)]
pub struct AdmFeature;

/// [`AdmFeature`], as [`super::REGISTRY`] lists it.
pub static ADM: AdmFeature = AdmFeature;

impl Feature for AdmFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    fn section(&self) -> Section {
        Section::Core
    }

    fn accepts(&self, key: &str) -> bool {
        key.starts_with("adm_")
    }

    fn model_output(&self, model_name: &str) -> Option<String> {
        match model_name {
            "VMAF_integer_feature_adm2_score" => Some("integer_adm2".into()),
            "VMAF_integer_feature_adm3_score" => Some("integer_adm3".into()),
            "VMAF_integer_feature_aim_score" => Some("integer_aim".into()),
            _ => indexed(model_name, "VMAF_integer_feature_adm_scale", 4)
                .map(|i| format!("integer_adm_scale{i}")),
        }
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        Ok(Arc::new(AdmInstance {
            cfg: AdmConfig::from_options(options)?,
        }))
    }
}

/// ADM with one option set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdmInstance {
    /// The options.
    pub cfg: AdmConfig,
}

impl Instance for AdmInstance {
    fn feature(&self) -> &'static dyn Feature {
        &ADM
    }

    fn key(&self) -> String {
        self.cfg.key()
    }

    fn outputs(&self) -> Vec<String> {
        let suffix = self.key();
        ["integer_adm2", "integer_aim", "integer_adm3"]
            .into_iter()
            .map(|b| format!("{b}{suffix}"))
            .chain((0..4).map(|i| format!("integer_adm_scale{i}{suffix}")))
            .collect()
    }

    fn min_size(&self) -> (usize, usize) {
        (MIN_WIDTH, MIN_HEIGHT)
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        Ok(Box::new(AdmCpu {
            adm: cpu::Adm::new(g.width, g.height, g.bpc)?,
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
        let module = dev.modules().get("adm")?;
        Ok(Box::new(AdmCuda {
            gpu: cuda::AdmGpu::new(module, stream, g.width, g.height, g.bpc, &self.cfg)?,
            cfg: self.cfg,
        }))
    }
}

/// `integer_adm2`, `integer_aim`, `integer_adm3`, `integer_adm_scale0..3` into `out`.
fn write_scores(s: &AdmScores, out: &mut [f64]) {
    let values = [s.adm2, s.aim, s.adm3].into_iter().chain(s.scale);
    out.iter_mut().zip(values).for_each(|(o, v)| *o = v);
}

struct AdmCpu {
    adm: cpu::Adm,
    cfg: AdmConfig,
}

impl CpuExtractor for AdmCpu {
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        write_scores(&self.adm.compute(f.reference, f.distorted, &self.cfg)?, out);
        Ok(())
    }

    /// The reference's DWT and denominators once for all frames ([`cpu::Adm::compute_ladder`]).
    fn extract_ladder(
        &mut self,
        frames: &[HostFrame],
        outs: &mut [&mut [f64]],
    ) -> Result<(), FeatureError> {
        let Some((reference, distorted)) = super::api::ladder_lumas(frames) else {
            return Ok(());
        };
        let scores = self.adm.compute_ladder(reference, &distorted, &self.cfg)?;
        for (s, out) in scores.iter().zip(outs.iter_mut()) {
            write_scores(s, out);
        }
        Ok(())
    }
}

struct AdmCuda {
    gpu: cuda::AdmGpu,
    cfg: AdmConfig,
}

impl CudaExtractor for AdmCuda {
    fn result_words(&self) -> usize {
        cuda::AdmGpu::RESULT_WORDS
    }

    /// The reference's bands of every scale, and the distorted scratch of every rendition (up
    /// to [`cuda::LADDER_MAX`] at once; about 20 MB each at 1080p, as a pair's) for the
    /// batched launches.
    fn prepare_ladder(
        &mut self,
        stream: &Arc<CudaStream>,
        renditions: usize,
    ) -> Result<(), CudaError> {
        self.gpu.prepare_ladder(stream)?;
        if renditions > 1 {
            self.gpu.prepare_renditions(stream, renditions)?;
        }
        Ok(())
    }

    fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        self.gpu
            .enqueue(stream, f.reference, f.distorted, &self.cfg, out)
    }

    /// The reference's DWT once for all frames ([`cuda::AdmGpu::enqueue_reference`]), then
    /// every frame's DWT, decoupling and masking in one launch per step for all of them
    /// ([`cuda::AdmGpu::enqueue_renditions`]; `outs` arrive zeroed, the trait's contract);
    /// without prepared scratch (a backend that did not call `prepare_ladder`), one frame
    /// after the other ([`cuda::AdmGpu::enqueue_ladder`]).
    fn enqueue_ladder(
        &mut self,
        stream: &Arc<CudaStream>,
        frames: &[DevFrame],
        outs: &mut [CudaViewMut<u64>],
    ) -> Result<(), CudaError> {
        let Some(first) = frames.first() else {
            return Ok(());
        };
        if !self.gpu.has_renditions() {
            return super::api::for_ladder_groups::<{ LADDER_GROUP }>(
                frames,
                outs,
                |reference, distorted, outs| {
                    self.gpu
                        .enqueue_ladder(stream, reference, distorted, &self.cfg, outs)
                },
            );
        }
        let ref_hvd = self.gpu.enqueue_reference(stream, first.reference)?;
        let distorted: Vec<DevPlane> = frames.iter().map(|f| f.distorted).collect();
        self.gpu
            .enqueue_renditions(stream, &ref_hvd, &distorted, &self.cfg, outs)
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        write_scores(&self.gpu.scores(words, &self.cfg), out);
    }
}
