//! libvmaf's `float_ansnr` extractor (luma only, no options): anti-noise SNR, log keys
//! `float_ansnr` and `float_anpsnr`.
//!
//! Both frames are read as `f32` on libvmaf's 8-bit scale minus 128 (`x / 2^(bpc - 8) - 128`),
//! the reference is smoothed by a 3x3 binomial filter ([`ref_filter`]), the distorted frame by
//! a 5x5 one ([`dis_filter`]), both mirrored at the borders as libvmaf does (`-1 -> 1` at the
//! start, `n -> n - 1` at the end). With `sig` the sum of the squared smoothed reference and
//! `noise` the sum of the squared differences of the smoothed frames (both `f32`, summed row by
//! row): `float_ansnr = 10 * log10(sig / noise)` (`psnr_max` when `noise` is 0) and
//! `float_anpsnr = min(10 * log10(peak^2 * w * h / max(noise, 1e-10)), psnr_max)`, with `peak`
//! and `psnr_max` of [`FloatDepth`].
//!
//! Both halves do libvmaf's `f32` operations in its order (no fused multiply-adds, taps added
//! row by row, each row's sums sequential, the rows' sums sequential), so they agree with each
//! other bit for bit and with libvmaf's log at its 6 decimals.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_ansnr.c, ansnr.c, ansnr_tools.c,
//! ansnr_options.h (2-D filters, mirrored borders, no normalisation), picture_copy.c.

pub mod cpu;
pub mod cuda;
mod params;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Section,
};
use super::float_psnr::FloatDepth;
use super::options::Options;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;
use params::FEATURE;
pub use params::{dis_filter, mirror, ref_filter, scores, MIN_SIZE, OUTPUTS};

/// The registry entry of `float_ansnr`.
#[derive(Debug)]
pub struct FloatAnsnrFeature;

/// [`FloatAnsnrFeature`], as [`super::REGISTRY`] lists it.
pub static FLOAT_ANSNR: FloatAnsnrFeature = FloatAnsnrFeature;

impl Feature for FloatAnsnrFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    /// A model names its outputs as logged (libvmaf resolves only `float_ansnr`, its
    /// provided feature; `float_anpsnr` is accepted here too).
    fn model_output(&self, model_name: &str) -> Option<String> {
        OUTPUTS.contains(&model_name).then(|| model_name.to_owned())
    }

    fn section(&self) -> Section {
        Section::Trailing
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        options.only(&[])?;
        Ok(Arc::new(FloatAnsnrInstance))
    }
}

/// `float_ansnr` with libvmaf's (only) configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatAnsnrInstance;

impl Instance for FloatAnsnrInstance {
    fn feature(&self) -> &'static dyn Feature {
        &FLOAT_ANSNR
    }

    fn key(&self) -> String {
        String::new()
    }

    fn outputs(&self) -> Vec<String> {
        OUTPUTS.iter().map(|n| (*n).to_owned()).collect()
    }

    fn min_size(&self) -> (usize, usize) {
        (MIN_SIZE, MIN_SIZE)
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        self.check(g)?;
        let depth = FloatDepth::new(FEATURE, g)?;
        Ok(Box::new(AnsnrCpu {
            ansnr: cpu::Ansnr::new(g.width, g.height, depth),
            depth,
        }))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        let depth = FloatDepth::new(FEATURE, g)?;
        Ok(Box::new(AnsnrCuda {
            gpu: cuda::AnsnrGpu::new(dev, stream, g.width, g.height, depth)?,
            pixels: g.width * g.height,
            depth,
        }))
    }
}

struct AnsnrCpu {
    ansnr: cpu::Ansnr,
    depth: FloatDepth,
}

impl CpuExtractor for AnsnrCpu {
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let (sig, noise) = self.ansnr.sums(f.reference, f.distorted)?;
        let v = scores(
            sig,
            noise,
            f.reference.width * f.reference.height,
            &self.depth,
        );
        out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
        Ok(())
    }
}

struct AnsnrCuda {
    gpu: cuda::AnsnrGpu,
    pixels: usize,
    depth: FloatDepth,
}

impl CudaExtractor for AnsnrCuda {
    fn result_words(&self) -> usize {
        cuda::AnsnrGpu::RESULT_WORDS
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
        let (sig, noise) = cuda::AnsnrGpu::sums(words);
        let v = scores(sig, noise, self.pixels, &self.depth);
        out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_is_libvmafs() {
        assert_eq!(mirror(-2, 5), 2);
        assert_eq!(mirror(-1, 5), 1);
        assert_eq!(mirror(5, 5), 4);
        assert_eq!(mirror(6, 5), 3);
        assert_eq!(mirror(3, 5), 3);
    }

    #[test]
    fn refuses_frames_below_3x3_and_odd_depths() {
        let i = FloatAnsnrInstance;
        let e = i.cpu(&Geometry::luma(2, 5, 8)).err().expect("2x5 refused");
        assert!(
            matches!(e, FeatureError::FrameTooSmall { min_width: 3, .. }),
            "{e}"
        );
        assert!(i.cpu(&Geometry::luma(3, 3, 12)).is_ok());
        assert!(i.cpu(&Geometry::luma(3, 3, 14)).is_err());
    }

    #[test]
    fn filters_sum_to_one() {
        let s: f32 = ref_filter().iter().sum();
        assert_eq!(s, 1.0);
        let s: f64 = dis_filter().iter().map(|&x| f64::from(x)).sum();
        assert!((s - 1.0).abs() < 1e-6);
    }
}
