//! libvmaf's float PSNR, the `float_psnr` extractor (luma only, log key `float_psnr`, no
//! options), and what libvmaf's simple float extractors share: how they read samples of each
//! depth ([`FloatDepth`]) and the plane sums of `float_psnr` and `float_moment`
//! ([`PlaneSums`], kernel `kernels/float_psnr.cu`, used by both).
//!
//! libvmaf copies each luma sample to `f32` on an 8-bit scale (`x / 2^(bpc - 8)`:
//! `picture_copy`), sums the squared differences in `f64` and reports
//! `min(10 * log10(peak^2 / max(mse, 1e-10)), psnr_max)` with `peak` and `psnr_max` on that
//! scale (255 / 60 dB at 8 bits, 255.75 / 72 at 10, 255.9375 / 84 at 12, 255.99609375 / 108
//! at 16). Every squared difference is an `f32`-rounded integer over a power of two and the
//! `f64` sum of them is exact, so both halves sum integers ([`PlaneSums`]) and give the same
//! bits as libvmaf's arithmetic (up to sums above 2^53 units, far beyond 8K).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_psnr.c, psnr.c, picture_copy.c.

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
pub use params::{psnr_from_sums, square, FloatDepth, PlaneSums};

/// The registry name and log key.
const FEATURE: &str = "float_psnr";

/// The registry entry of `float_psnr`.
#[derive(Debug)]
pub struct FloatPsnrFeature;

/// [`FloatPsnrFeature`], as [`super::REGISTRY`] lists it.
pub static FLOAT_PSNR: FloatPsnrFeature = FloatPsnrFeature;

impl Feature for FloatPsnrFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    /// A model names it `float_psnr` (libvmaf's provided feature).
    fn model_output(&self, model_name: &str) -> Option<String> {
        (model_name == FEATURE).then(|| FEATURE.to_owned())
    }

    fn section(&self) -> Section {
        Section::Trailing
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        options.only(&[])?;
        Ok(Arc::new(FloatPsnrInstance))
    }
}

/// `float_psnr` with libvmaf's (only) configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatPsnrInstance;

impl Instance for FloatPsnrInstance {
    fn feature(&self) -> &'static dyn Feature {
        &FLOAT_PSNR
    }

    fn key(&self) -> String {
        String::new()
    }

    fn outputs(&self) -> Vec<String> {
        vec![FEATURE.to_owned()]
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        self.check(g)?;
        let depth = FloatDepth::new(FEATURE, g)?;
        Ok(Box::new(FloatPsnrCpu {
            geometry: g.triple(),
            depth,
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
        Ok(Box::new(FloatPsnrCuda {
            gpu: cuda::PlaneSumsGpu::new(dev, FEATURE, g.width, g.height, g.bpc)?,
            pixels: g.width * g.height,
            depth,
        }))
    }
}

struct FloatPsnrCpu {
    geometry: (usize, usize, u32),
    depth: FloatDepth,
}

impl CpuExtractor for FloatPsnrCpu {
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        FeatureError::check_plane(FEATURE, self.geometry, f.reference)?;
        FeatureError::check_plane(FEATURE, self.geometry, f.distorted)?;
        let error = cpu::error_sum(f.reference, f.distorted);
        let (w, h, _) = self.geometry;
        if let Some(o) = out.first_mut() {
            *o = psnr_from_sums(error, w * h, &self.depth);
        }
        Ok(())
    }
}

struct FloatPsnrCuda {
    gpu: cuda::PlaneSumsGpu,
    pixels: usize,
    depth: FloatDepth,
}

impl CudaExtractor for FloatPsnrCuda {
    fn result_words(&self) -> usize {
        cuda::PlaneSumsGpu::RESULT_WORDS
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
        let sums = cuda::PlaneSumsGpu::sums(words);
        if let Some(o) = out.first_mut() {
            *o = psnr_from_sums(sums.error, self.pixels, &self.depth);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squares_round_like_f32_products() {
        for a in [0u32, 1, 255, 4095, 4097, 40000, 65535] {
            let x = a as f32 / 256.0;
            let libvmaf = f64::from(x * x);
            assert_eq!(square(a) as f64 / 65536.0, libvmaf, "{a}");
        }
    }

    #[test]
    fn identical_frames_give_psnr_max() {
        let g = Geometry::luma(8, 8, 10);
        let d = FloatDepth::new(FEATURE, &g).unwrap();
        assert_eq!(psnr_from_sums(0, 64, &d), 72.0);
        assert!(FloatDepth::new(FEATURE, &Geometry::luma(8, 8, 9)).is_err());
    }
}
