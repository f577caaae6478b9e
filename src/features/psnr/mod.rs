//! libvmaf's integer PSNR, the `psnr` extractor (`psnr_y`, `psnr_cb`, `psnr_cr`) with its
//! default options (chroma on, no MSE, no APSNR, full high-bit-depth peak, no `min_sse`).
//!
//! Source of the arithmetic: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_psnr.c.
//!
//! This is the example that README's "Adding a metric" walks through: this file is the
//! definition (its registry entry, output names, what it reads), `params.rs` what it and both
//! halves share (the name, the arithmetic), `cpu.rs` the CPU half, `cuda.rs` the CUDA host
//! half of `kernels/psnr.cu`, and one line in [`super::REGISTRY`] makes the engine compute
//! it. The halves import `params.rs`, never this file, which imports them.

pub mod cpu;
pub mod cuda;
mod params;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Needs, Section,
};
use super::options::Options;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;
use params::FEATURE;
pub use params::{libvmaf_chroma_size, peak, psnr_from_sse, psnr_max};

/// The registry entry of PSNR.
#[derive(Debug)]
pub struct PsnrFeature;

/// [`PsnrFeature`], as [`super::REGISTRY`] lists it.
pub static PSNR: PsnrFeature = PsnrFeature;

impl Feature for PsnrFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    /// libvmaf's logs list `psnr_y`, `psnr_cb`, `psnr_cr` before VMAF's features.
    fn section(&self) -> Section {
        Section::Leading
    }

    fn reads_chroma(&self) -> bool {
        true
    }

    fn configure(&self, options: &Options, chroma: bool) -> Result<Arc<dyn Instance>, String> {
        options.only(&[])?;
        Ok(Arc::new(PsnrInstance { chroma }))
    }
}

/// PSNR of luma, and of both chroma planes when the frames have them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PsnrInstance {
    /// `psnr_cb` / `psnr_cr` are reported (the formats have chroma).
    pub chroma: bool,
}

impl Instance for PsnrInstance {
    fn feature(&self) -> &'static dyn Feature {
        &PSNR
    }

    fn key(&self) -> String {
        String::new()
    }

    fn needs(&self) -> Needs {
        Needs {
            chroma: self.chroma,
            previous: false,
            ..Needs::default()
        }
    }

    fn outputs(&self) -> Vec<String> {
        let names: &[&str] = if self.chroma {
            &["psnr_y", "psnr_cb", "psnr_cr"]
        } else {
            &["psnr_y"]
        };
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        self.check(g)?;
        Ok(Box::new(PsnrCpu {
            luma: (g.width, g.height),
        }))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        Ok(Box::new(PsnrCuda {
            gpu: cuda::PsnrGpu::new(dev, stream, g.width, g.height, g.bpc)?,
            chroma: g.chroma.filter(|_| self.chroma),
        }))
    }
}

/// The CPU half: no scratch, only the luma size (for libvmaf's chroma crop).
struct PsnrCpu {
    luma: (usize, usize),
}

impl CpuExtractor for PsnrCpu {
    /// `psnr_y`, then `psnr_cb` and `psnr_cr` when the frame's chroma is given (0 without).
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let mut v = [cpu::psnr(f.reference, f.distorted), 0.0, 0.0];
        if let Some(c) = f.chroma {
            for (i, slot) in v[1..].iter_mut().enumerate() {
                let (r, d) = (&c.reference[i], &c.distorted[i]);
                FeatureError::check_plane(FEATURE, (r.width, r.height, r.bpc), d)?;
                // libvmaf leaves out the last column/row of odd-sized subsampled planes.
                *slot = cpu::chroma_psnr(self.luma, r, d);
            }
        }
        out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
        Ok(())
    }
}

/// The CUDA half, its stream beside VMAF's.
struct PsnrCuda {
    gpu: cuda::PsnrGpu,
    chroma: Option<(usize, usize)>,
}

impl CudaExtractor for PsnrCuda {
    fn result_words(&self) -> usize {
        cuda::PsnrGpu::RESULT_WORDS
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
        self.gpu
            .enqueue(stream, f.reference, f.distorted, f.chroma, out)
    }

    fn read(&self, words: &[u64], chroma: bool, out: &mut [f64]) {
        let v = self.gpu.scores(words, self.chroma.filter(|_| chroma));
        out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
    }
}
