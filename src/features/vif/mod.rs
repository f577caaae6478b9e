//! Integer VIF (visual information fidelity) at four scales, libvmaf's `vif` extractor
//! (`integer_vif_scale0..3`), bit-exact with Netflix/vmaf v3.2.0,
//! libvmaf/src/feature/integer_vif.c.
//!
//! - `cpu.rs`: the CPU half ([`cpu::Vif`]), the reference;
//! - `cuda.rs`: the CUDA host half ([`cuda::VifGpu`]) of `kernels/vif.cu`.

pub mod cpu;
pub mod cuda;
mod params;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    gain_suffix, indexed, CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame,
    Instance, Section,
};
use super::options::Options;
use crate::cuda::{CudaError, DevPlane, GpuDevice};
use crate::video::frame::FeatureError;
pub use params::{VifConfig, VifScores, MIN_HEIGHT, MIN_WIDTH};
use params::{DEFAULT_ENHN_GAIN_LIMIT, FEATURE};

/// The registry entry of VIF.
#[derive(Debug)]
pub struct VifFeature;

/// [`VifFeature`], as [`super::REGISTRY`] lists it.
pub static VIF: VifFeature = VifFeature;

impl Feature for VifFeature {
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
        indexed(model_name, "VMAF_integer_feature_vif_scale", 4)
            .map(|i| format!("integer_vif_scale{i}"))
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        options.only(&["vif_enhn_gain_limit"])?;
        let enhn_gain_limit =
            options.number("vif_enhn_gain_limit", DEFAULT_ENHN_GAIN_LIMIT, 1.0..=100.0)?;
        Ok(Arc::new(VifInstance {
            cfg: VifConfig { enhn_gain_limit },
        }))
    }
}

/// VIF with one option set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VifInstance {
    /// The options.
    pub cfg: VifConfig,
}

impl Instance for VifInstance {
    fn feature(&self) -> &'static dyn Feature {
        &VIF
    }

    fn key(&self) -> String {
        gain_suffix(self.cfg.enhn_gain_limit)
    }

    fn outputs(&self) -> Vec<String> {
        let suffix = self.key();
        (0..4)
            .map(|i| format!("integer_vif_scale{i}{suffix}"))
            .collect()
    }

    fn min_size(&self) -> (usize, usize) {
        (MIN_WIDTH, MIN_HEIGHT)
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        Ok(Box::new(VifCpu {
            vif: cpu::Vif::new(g.width, g.height, g.bpc)?,
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
        Ok(Box::new(VifCuda {
            gpu: cuda::VifGpu::new(dev, stream, g.width, g.height, g.bpc)?,
            cfg: self.cfg,
        }))
    }
}

struct VifCpu {
    vif: cpu::Vif,
    cfg: VifConfig,
}

impl CpuExtractor for VifCpu {
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let s = self.vif.compute(f.reference, f.distorted, &self.cfg)?;
        out.iter_mut().zip(s.scale).for_each(|(o, v)| *o = v);
        Ok(())
    }

    /// The reference's decimated planes once for all frames ([`cpu::Vif::compute_ladder`]).
    fn extract_ladder(
        &mut self,
        frames: &[HostFrame],
        outs: &mut [&mut [f64]],
    ) -> Result<(), FeatureError> {
        let Some((reference, distorted)) = super::api::ladder_lumas(frames) else {
            return Ok(());
        };
        let scores = self.vif.compute_ladder(reference, &distorted, &self.cfg)?;
        for (s, out) in scores.iter().zip(outs.iter_mut()) {
            out.iter_mut().zip(s.scale).for_each(|(o, v)| *o = v);
        }
        Ok(())
    }
}

struct VifCuda {
    gpu: cuda::VifGpu,
    cfg: VifConfig,
}

impl CudaExtractor for VifCuda {
    fn result_words(&self) -> usize {
        cuda::VifGpu::RESULT_WORDS
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

    /// Every rendition's planes of scales 1..=3 (up to [`cuda::LADDER_MAX`] at once, about
    /// 1.4 MB each at 1080p) for the batched launches.
    fn prepare_ladder(
        &mut self,
        stream: &Arc<CudaStream>,
        renditions: usize,
    ) -> Result<(), CudaError> {
        if renditions > 1 {
            self.gpu.prepare_renditions(stream, renditions)?;
        }
        Ok(())
    }

    /// The reference's tile statistics (up to [`cuda::LADDER_MAX`] frames per launch) and
    /// pyramid once for all frames, every frame's scales 1..=3 in one launch per scale and
    /// step ([`cuda::VifGpu::enqueue_ladder_batched`]; `outs` arrive zeroed, the trait's
    /// contract); without prepared planes, one frame after the other
    /// ([`cuda::VifGpu::enqueue_ladder`]).
    fn enqueue_ladder(
        &mut self,
        stream: &Arc<CudaStream>,
        frames: &[DevFrame],
        outs: &mut [CudaViewMut<u64>],
    ) -> Result<(), CudaError> {
        let Some(first) = frames.first() else {
            return Ok(());
        };
        let distorted: Vec<DevPlane> = frames.iter().map(|f| f.distorted).collect();
        if self.gpu.has_renditions() {
            self.gpu
                .enqueue_ladder_batched(stream, first.reference, &distorted, &self.cfg, outs)
        } else {
            self.gpu
                .enqueue_ladder(stream, first.reference, &distorted, &self.cfg, outs)
        }
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        let s = self.gpu.scores(words, &self.cfg);
        out.iter_mut().zip(s.scale).for_each(|(o, v)| *o = v);
    }
}
