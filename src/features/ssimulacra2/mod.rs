//! SSIMULACRA2 of the frames converted to RGB with the caps' colorimetry (not in libvmaf
//! 3.2.0; the name is `ssimulacra2`). Cloudinary's metric (libjxl `tools/ssimulacra2.cc`).
//!
//! `cpu.rs` is the CPU half (our YUV -> linear RGB conversion and the rust-av `ssimulacra2`
//! crate's core), `cuda.rs` the CUDA host half of `kernels/ssimulacra2.cu`.

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
use crate::video::colour::YuvToRgb;
use crate::video::frame::FeatureError;
pub use params::{FEATURE, MIN_HEIGHT, MIN_WIDTH};

/// The registry entry of SSIMULACRA2.
#[derive(Debug)]
pub struct Ssimulacra2Feature;

/// [`Ssimulacra2Feature`], as [`super::REGISTRY`] lists it.
pub static SSIMULACRA2: Ssimulacra2Feature = Ssimulacra2Feature;

impl Feature for Ssimulacra2Feature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    fn section(&self) -> Section {
        Section::Trailing
    }

    fn reads_chroma(&self) -> bool {
        true
    }

    fn configure(&self, options: &Options, chroma: bool) -> Result<Arc<dyn Instance>, String> {
        options.only(&[])?;
        Ok(Arc::new(Ssimulacra2Instance { chroma }))
    }
}

/// SSIMULACRA2 of colour frames (`chroma`) or of grey ones (R = G = B from luma).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ssimulacra2Instance {
    /// The frames have chroma planes.
    pub chroma: bool,
}

impl Instance for Ssimulacra2Instance {
    fn feature(&self) -> &'static dyn Feature {
        &SSIMULACRA2
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
        vec![FEATURE.to_owned()]
    }

    fn min_size(&self) -> (usize, usize) {
        (MIN_WIDTH, MIN_HEIGHT)
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        self.check(g)?;
        Ok(Box::new(Ssimulacra2Cpu {
            s2: cpu::Ssimulacra2::new(),
            colour: g.colour,
        }))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        let chroma = g.chroma.filter(|_| self.chroma);
        let gpu =
            cuda::Ssimulacra2Gpu::new(dev, stream, g.width, g.height, g.bpc, chroma, g.colour)?;
        Ok(Box::new(Box::new(gpu)))
    }
}

struct Ssimulacra2Cpu {
    s2: cpu::Ssimulacra2,
    colour: YuvToRgb,
}

impl CpuExtractor for Ssimulacra2Cpu {
    /// Grey (R = G = B from luma) when the frame's chroma is not given.
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let v = self
            .s2
            .score(f.reference, f.distorted, f.chroma, &self.colour)?;
        if let Some(o) = out.first_mut() {
            *o = v;
        }
        Ok(())
    }

    /// The reference's linear RGB, XYB pyramid and blurs once for all frames
    /// ([`cpu::Ssimulacra2::score_ladder`]).
    fn extract_ladder(
        &mut self,
        frames: &[HostFrame],
        outs: &mut [&mut [f64]],
    ) -> Result<(), FeatureError> {
        let Some((reference, distorted)) = super::api::ladder_lumas(frames) else {
            return Ok(());
        };
        let chroma: Vec<_> = frames.iter().map(|f| f.chroma).collect();
        let scores = self
            .s2
            .score_ladder(reference, &distorted, &chroma, &self.colour)?;
        for (v, out) in scores.into_iter().zip(outs.iter_mut()) {
            if let Some(o) = out.first_mut() {
                *o = v;
            }
        }
        Ok(())
    }
}

impl CudaExtractor for Box<cuda::Ssimulacra2Gpu> {
    fn result_words(&self) -> usize {
        cuda::Ssimulacra2Gpu::RESULT_WORDS
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
        cuda::Ssimulacra2Gpu::enqueue(self, stream, f.reference, f.distorted, f.chroma, out)
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        if let Some(o) = out.first_mut() {
            *o = self.score(words);
        }
    }
}
