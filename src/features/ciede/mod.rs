//! libvmaf's CIEDE2000 colour difference, the `ciede` extractor (log key `ciede2000`, no
//! options): every pixel of both frames is taken from Y'CbCr to CIELAB, the CIEDE2000
//! difference of each pixel pair is averaged over the frame and reported as
//! `45 - 20 * log10(mean)` (higher is better; identical frames give +infinity, which the
//! JSON log writes as `null`, as libvmaf's does).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/ciede.c (itself a port of av-metrics'
//! CIEDE2000), and libvmaf/src/picture.c for the chroma buffers it reads.
//!
//! # What libvmaf assumes, and so do we
//! libvmaf never looks at the stream's colorimetry; neither does this extractor (the caps'
//! `colorimetry` is ignored on purpose, so that the scores equal libvmaf's):
//! - **Range and matrix**: limited ("TV") range at every depth, `Y' = (Y - 16 s) / (219 s)`,
//!   `Cb, Cr = (C - 128 s) / (224 s)` with `s = 2^(bpc - 8)`; then
//!   `R = Y' + 1.28033 Cr`, `G = Y' - 0.21482 Cb - 0.38059 Cr`, `B = Y' + 2.12798 Cb`.
//!   libvmaf calls it BT.709; these are the coefficients of BT.709's analogue Y'UV (U, V
//!   scaled to +-0.436 / +-0.615), applied to Cb/Cr scaled to +-0.5, so colours come out
//!   less saturated than a BT.709 Y'CbCr decode (`R = Y' + 1.5748 Cr`) would give. A
//!   full-range, BT.601 or BT.2020 stream is decoded the same way (its caps are not read).
//! - **Transfer and white**: the sRGB curve (with a linear segment below 10/255 instead of
//!   sRGB's 0.04045) to linear light, sRGB/BT.709 primaries to XYZ, D65 white, CIELAB.
//! - **Chroma upsampling** (libvmaf's `scale_chroma_planes`), emulated here exactly
//!   ([`ChromaRead`]): libvmaf copies a frame's chroma into planes of `w >> 1` (4:2:0,
//!   4:2:2) by `h >> 1` (4:2:0) samples whose rows are `ceil(w' / 32) * 32` samples apart,
//!   zero-padded. 4:2:0 is nearest-neighbour: pixel (x, y) takes chroma sample
//!   (x / 2, y / 2). 4:2:2 is read as if it were 4:2:0 turned sideways: row `y / 2` and
//!   column `x` of that padded buffer, so the right half of a picture reads the padding and
//!   the next chroma rows (libvmaf 3.2.0 swaps its two subsampling flags there). For an odd
//!   width the last column reads padding (0); for an odd 4:2:0 height the last row's Cb
//!   reads the first Cr row and its Cr reads past the end of libvmaf's buffer: undefined
//!   there (libvmaf 3.2.0's scores of such frames vary from run to run, by up to ~0.1 on
//!   src01 575x323), taken as 0 here. 4:4:4 is read as is.
//! - **Depths**: 8, 10, 12 and 16 bits (libvmaf refuses others); grey (4:0:0) is refused.
//!
//! Arithmetic: libvmaf converts to CIELAB in `f64`, keeps L*, a*, b* in `f32`, computes
//! CIEDE2000 in `f32` with `f64` library calls and sums in `f64`; the CPU half ([`cpu`])
//! does the same operations in the same order. The CUDA half (`kernels/ciede.cu`) computes
//! each pixel in `f32` with fast intrinsics and sums the per-block `f64` partials in a fixed
//! order. Its score is expected within 1e-5 of the CPU's (an `f32` model of the kernel's
//! arithmetic, without the intrinsics, gave 1e-6 on src01); tests/gpu_ciede.rs asserts 1e-4.

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
pub use params::{
    check_depth, ciede2000, lab, lab_of_linear, linear_blue, linear_green, linear_red,
    score_from_sum, ChromaRead, Lab, Subsampling, OUTPUT,
};

/// The registry entry of `ciede`.
#[derive(Debug)]
pub struct CiedeFeature;

/// [`CiedeFeature`], as [`super::REGISTRY`] lists it.
pub static CIEDE: CiedeFeature = CiedeFeature;

impl Feature for CiedeFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    fn section(&self) -> Section {
        Section::Trailing
    }

    fn reads_chroma(&self) -> bool {
        true
    }

    /// A model names it `ciede2000` (libvmaf's provided feature).
    fn model_output(&self, model_name: &str) -> Option<String> {
        (model_name == OUTPUT).then(|| OUTPUT.to_owned())
    }

    /// No options (libvmaf's `ciede` has none). Errors: grey frames (`chroma == false`), which
    /// libvmaf refuses too.
    fn configure(&self, options: &Options, chroma: bool) -> Result<Arc<dyn Instance>, String> {
        options.only(&[])?;
        if !chroma {
            return Err(
                "ciede needs colour frames (Cb and Cr planes); grey (4:0:0) input has none"
                    .to_owned(),
            );
        }
        Ok(Arc::new(CiedeInstance))
    }
}

/// `ciede` with libvmaf's (only) configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CiedeInstance;

impl CiedeInstance {
    /// libvmaf's chroma reading for `g`.
    ///
    /// Errors: as [`Instance::check`], a depth other than 8, 10, 12 or 16 bits, no chroma, or
    /// a chroma size [`ChromaRead::new`] refuses.
    fn read(&self, g: &Geometry) -> Result<ChromaRead, FeatureError> {
        self.check(g)?;
        check_depth(FEATURE, g)?;
        let chroma = g
            .chroma
            .ok_or_else(|| FeatureError::wrong_size(FEATURE, g.triple(), (0, 0)))?;
        ChromaRead::new((g.width, g.height), chroma, g.bpc)
    }
}

impl Instance for CiedeInstance {
    fn feature(&self) -> &'static dyn Feature {
        &CIEDE
    }

    fn key(&self) -> String {
        String::new()
    }

    fn needs(&self) -> Needs {
        Needs {
            chroma: true,
            ..Needs::default()
        }
    }

    fn outputs(&self) -> Vec<String> {
        vec![OUTPUT.to_owned()]
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        let read = self.read(g)?;
        Ok(Box::new(cpu::Ciede::new(g.width, g.height, g.bpc, read)))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        let read = self.read(g)?;
        Ok(Box::new(cuda::CiedeGpu::new(
            dev, stream, g.width, g.height, g.bpc, read,
        )?))
    }
}

impl CpuExtractor for cpu::Ciede {
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let v = self.score(f)?;
        if let Some(o) = out.first_mut() {
            *o = v;
        }
        Ok(())
    }
}

impl CudaExtractor for cuda::CiedeGpu {
    fn result_words(&self) -> usize {
        cuda::CiedeGpu::RESULT_WORDS
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
        self.enqueue_frame(stream, f, out)
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        if let Some(o) = out.first_mut() {
            *o = self.score(words);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chroma_reading_follows_libvmaf_buffers() {
        // 4:2:0, 575x323: 287x161 kept, rows of 288.
        let r = ChromaRead::new((575, 323), (288, 162), 8).unwrap();
        assert_eq!((r.width, r.height, r.stride), (287, 161, 288));
        assert_eq!(r.source(0, 3, 5), Some((0, 2, 1)));
        assert_eq!(r.source(0, 574, 0), None); // padding column
        assert_eq!(r.source(0, 10, 322), Some((1, 0, 5))); // Cb's last row reads Cr's first
        assert_eq!(r.source(1, 10, 322), None); // past libvmaf's buffer
                                                // 4:2:2, 576x4: 288 per row, read as x on row y / 2.
        let r = ChromaRead::new((576, 4), (288, 4), 10).unwrap();
        assert_eq!((r.width, r.height, r.stride), (288, 4, 288));
        assert_eq!(r.source(0, 300, 3), Some((0, 2, 12)));
        // 4:4:4 reads in place.
        let r = ChromaRead::new((7, 5), (7, 5), 12).unwrap();
        assert_eq!(r.source(1, 6, 4), Some((1, 4, 6)));
        assert!(ChromaRead::new((8, 8), (2, 8), 8).is_err());
    }

    #[test]
    fn lab_of_white_grey_and_black() {
        let white = lab(235.0, 128.0, 128.0, 8);
        assert!((white.l - 100.0).abs() < 1e-3 && white.a.abs() < 1e-2 && white.b.abs() < 1e-2);
        let black = lab(64.0, 512.0, 512.0, 10);
        assert!(black.l.abs() < 1e-3);
        assert_eq!(ciede2000(white, white), 0.0);
        assert!(ciede2000(white, black) > 50.0);
    }
}
