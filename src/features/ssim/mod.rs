//! libvmaf's float SSIM and MS-SSIM, the `float_ssim` and `float_ms_ssim` extractors (luma,
//! default options: no dB conversion, no l/c/s outputs).
//!
//! Sources: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_ssim.c, float_ms_ssim.c, ssim.c,
//! ms_ssim.c and iqa/. This file holds the two registry entries, `params.rs` what it and both
//! halves share (window, filters, constants, the combination of scales); `cpu.rs` is the CPU half
//! ([`cpu::Ssim`]), `cuda.rs` the CUDA host half ([`cuda::SsimGpu`]) of `kernels/ssim.cu`.

pub mod cpu;
pub mod cuda;
mod params;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Section,
};
use super::options::Options;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;
pub use params::{
    box_tap, decimated, float_ssim_scale, ms_ssim_combine, ms_ssim_fits, ms_ssim_too_small,
    ssim_constants, GAUSS_LEN, MS_SSIM_MIN_SIZE, MS_SSIM_SCALES,
};

/// The registry entry of `float_ssim` (`ms == false`) or `float_ms_ssim` (`ms == true`).
#[derive(Debug)]
pub struct SsimFeature {
    ms: bool,
}

/// `float_ssim`, as [`super::REGISTRY`] lists it.
pub static FLOAT_SSIM: SsimFeature = SsimFeature { ms: false };
/// `float_ms_ssim`, as [`super::REGISTRY`] lists it.
pub static FLOAT_MS_SSIM: SsimFeature = SsimFeature { ms: true };

impl SsimFeature {
    fn name(ms: bool) -> &'static str {
        if ms {
            "float_ms_ssim"
        } else {
            "float_ssim"
        }
    }
}

impl Feature for SsimFeature {
    fn name(&self) -> &'static str {
        Self::name(self.ms)
    }

    fn section(&self) -> Section {
        Section::Trailing
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        options.only(&[])?;
        Ok(Arc::new(SsimInstance::new(self.ms)))
    }
}

/// `float_ssim`, `float_ms_ssim` or both: asked for together they are one instance, as the
/// two share their kernels (the float conversion and the Gaussian statistics of scale 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SsimInstance {
    /// Computes `float_ssim`.
    pub ssim: bool,
    /// Computes `float_ms_ssim`.
    pub ms: bool,
}

impl SsimInstance {
    fn new(ms: bool) -> Self {
        Self { ssim: !ms, ms }
    }
}

impl Instance for SsimInstance {
    /// `float_ssim` when it computes it (also for both), else `float_ms_ssim`.
    fn feature(&self) -> &'static dyn Feature {
        if self.ssim {
            &FLOAT_SSIM
        } else {
            &FLOAT_MS_SSIM
        }
    }

    fn key(&self) -> String {
        String::new()
    }

    fn absorb(&self, other: &dyn Instance) -> Option<Arc<dyn Instance>> {
        let name = other.feature().name();
        let ms = name == FLOAT_MS_SSIM.name();
        if !ms && name != FLOAT_SSIM.name() {
            return None;
        }
        Some(Arc::new(Self {
            ssim: self.ssim || !ms,
            ms: self.ms || ms,
        }))
    }

    fn outputs(&self) -> Vec<String> {
        [(self.ssim, false), (self.ms, true)]
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, ms)| SsimFeature::name(ms).to_owned())
            .collect()
    }

    /// MS-SSIM: 176x176 (libvmaf's limit, [`MS_SSIM_MIN_SIZE`]); SSIM: its 11x11 window.
    fn min_size(&self) -> (usize, usize) {
        if self.ms {
            (MS_SSIM_MIN_SIZE, MS_SSIM_MIN_SIZE)
        } else {
            (GAUSS_LEN, GAUSS_LEN)
        }
    }

    /// MS-SSIM needs 176x176 (libvmaf's limit, [`ms_ssim_fits`]); SSIM its 11x11 window.
    fn check(&self, g: &Geometry) -> Result<(), FeatureError> {
        FeatureError::check_new(self.feature().name(), g.triple(), (1, 1))?;
        if self.ms && !ms_ssim_fits(g.width, g.height) {
            return Err(ms_ssim_too_small(g.width, g.height));
        }
        if self.ssim {
            float_ssim_scale(g.width, g.height)?;
        }
        Ok(())
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        self.check(g)?;
        Ok(Box::new(SsimCpu {
            ssim: cpu::Ssim::new(),
            which: *self,
        }))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        let gpu = cuda::SsimGpu::new(dev, stream, g.width, g.height, g.bpc, self.ssim, self.ms)?;
        Ok(Box::new(SsimCuda {
            gpu: Box::new(gpu),
            which: *self,
        }))
    }
}

struct SsimCpu {
    ssim: cpu::Ssim,
    which: SsimInstance,
}

impl CpuExtractor for SsimCpu {
    /// `float_ssim` then `float_ms_ssim`, each when computed.
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let mut slots = out.iter_mut();
        if self.which.ssim {
            let v = self.ssim.float_ssim(f.reference, f.distorted)?;
            if let Some(o) = slots.next() {
                *o = v;
            }
        }
        if self.which.ms {
            let v = self.ssim.float_ms_ssim(f.reference, f.distorted)?;
            if let Some(o) = slots.next() {
                *o = v;
            }
        }
        Ok(())
    }

    /// The reference's filtered mean and square (of every MS-SSIM scale) once for all
    /// frames ([`cpu::Ssim::float_ssim_ladder`], [`cpu::Ssim::float_ms_ssim_ladder`]).
    fn extract_ladder(
        &mut self,
        frames: &[HostFrame],
        outs: &mut [&mut [f64]],
    ) -> Result<(), FeatureError> {
        let Some((reference, distorted)) = super::api::ladder_lumas(frames) else {
            return Ok(());
        };
        let ssim = if self.which.ssim {
            self.ssim.float_ssim_ladder(reference, &distorted)?
        } else {
            Vec::new()
        };
        let ms = if self.which.ms {
            self.ssim.float_ms_ssim_ladder(reference, &distorted)?
        } else {
            Vec::new()
        };
        for (i, out) in outs.iter_mut().enumerate() {
            let values = [ssim.get(i), ms.get(i)];
            for (o, &v) in out.iter_mut().zip(values.into_iter().flatten()) {
                *o = v;
            }
        }
        Ok(())
    }
}

/// The CUDA half, on a stream of its own (its kernels are conversion-bound filters).
struct SsimCuda {
    gpu: Box<cuda::SsimGpu>,
    which: SsimInstance,
}

impl CudaExtractor for SsimCuda {
    fn result_words(&self) -> usize {
        cuda::SsimGpu::RESULT_WORDS
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
        self.gpu.enqueue(stream, f.reference, f.distorted, out)
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        let (ssim, ms) = self.gpu.scores(words);
        let values = [(self.which.ssim, ssim), (self.which.ms, ms)];
        let computed = values.into_iter().filter(|(on, _)| *on).map(|(_, v)| v);
        out.iter_mut().zip(computed).for_each(|(o, v)| *o = v);
    }
}
