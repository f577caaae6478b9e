//! libvmaf's `float_moment` extractor (luma only, no options): the first and second moments
//! (mean and mean square) of each frame's samples on libvmaf's 8-bit float scale
//! (`x / 2^(bpc - 8)`), log keys `float_moment_ref1st`, `float_moment_dis1st`,
//! `float_moment_ref2nd`, `float_moment_dis2nd`.
//!
//! libvmaf sums `f32` samples and their `f32` squares in `f64`; both halves sum the same
//! values as integers ([`crate::features::float_psnr::PlaneSums`], the CPU's
//! [`crate::features::float_psnr::cpu::moments`] and the GPU's
//! [`crate::features::float_psnr::cuda::PlaneSumsGpu`], kernel `kernels/float_psnr.cu`), so
//! the scores equal libvmaf's arithmetic bit for bit on both.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_moment.c, moment.c,
//! picture_copy.c.

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Section,
};
use super::float_psnr::cuda::PlaneSumsGpu;
use super::float_psnr::{cpu, FloatDepth, PlaneSums};
use super::options::Options;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;

/// The registry name.
const FEATURE: &str = "float_moment";

/// libvmaf's log keys, in its order.
pub const OUTPUTS: [&str; 4] = [
    "float_moment_ref1st",
    "float_moment_dis1st",
    "float_moment_ref2nd",
    "float_moment_dis2nd",
];

/// The four moments ([`OUTPUTS`] order) from a frame pair's sums over `pixels` samples: the
/// means of the samples (in `[0, peak]`) and of their squares, on the 8-bit scale.
pub fn moments_from_sums(s: &PlaneSums, pixels: usize, d: &FloatDepth) -> [f64; 4] {
    let n = pixels.max(1) as f64;
    let (s1, s2) = (f64::from(d.scaler), d.scaler2());
    [
        s.reference as f64 / s1 / n,
        s.distorted as f64 / s1 / n,
        s.reference2 as f64 / s2 / n,
        s.distorted2 as f64 / s2 / n,
    ]
}

/// The registry entry of `float_moment`.
#[derive(Debug)]
pub struct FloatMomentFeature;

/// [`FloatMomentFeature`], as [`super::REGISTRY`] lists it.
pub static FLOAT_MOMENT: FloatMomentFeature = FloatMomentFeature;

impl Feature for FloatMomentFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    /// A model names its outputs as logged (`float_moment_ref1st`, ...). libvmaf 3.2.0
    /// resolves none of them (its extractor declares `float_moment`, a name it never logs).
    fn model_output(&self, model_name: &str) -> Option<String> {
        OUTPUTS.contains(&model_name).then(|| model_name.to_owned())
    }

    fn section(&self) -> Section {
        Section::Trailing
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        options.only(&[])?;
        Ok(Arc::new(FloatMomentInstance))
    }
}

/// `float_moment` with libvmaf's (only) configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatMomentInstance;

impl Instance for FloatMomentInstance {
    fn feature(&self) -> &'static dyn Feature {
        &FLOAT_MOMENT
    }

    fn key(&self) -> String {
        String::new()
    }

    fn outputs(&self) -> Vec<String> {
        OUTPUTS.iter().map(|n| (*n).to_owned()).collect()
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        self.check(g)?;
        Ok(Box::new(FloatMomentCpu {
            geometry: g.triple(),
            depth: FloatDepth::new(FEATURE, g)?,
        }))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        _stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        let depth = FloatDepth::new(FEATURE, g)?;
        Ok(Box::new(FloatMomentCuda {
            gpu: PlaneSumsGpu::new(dev, FEATURE, g.width, g.height, g.bpc)?,
            pixels: g.width * g.height,
            depth,
        }))
    }
}

struct FloatMomentCpu {
    geometry: (usize, usize, u32),
    depth: FloatDepth,
}

impl CpuExtractor for FloatMomentCpu {
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        FeatureError::check_plane(FEATURE, self.geometry, f.reference)?;
        FeatureError::check_plane(FEATURE, self.geometry, f.distorted)?;
        let (reference, reference2) = cpu::moments(f.reference);
        let (distorted, distorted2) = cpu::moments(f.distorted);
        let sums = PlaneSums {
            error: 0,
            reference,
            distorted,
            reference2,
            distorted2,
        };
        let (w, h, _) = self.geometry;
        let v = moments_from_sums(&sums, w * h, &self.depth);
        out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
        Ok(())
    }
}

struct FloatMomentCuda {
    gpu: PlaneSumsGpu,
    pixels: usize,
    depth: FloatDepth,
}

impl CudaExtractor for FloatMomentCuda {
    fn result_words(&self) -> usize {
        PlaneSumsGpu::RESULT_WORDS
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
        let v = moments_from_sums(&PlaneSumsGpu::sums(words), self.pixels, &self.depth);
        out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
    }
}
