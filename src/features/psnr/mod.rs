//! libvmaf's integer PSNR, the `psnr` extractor (`psnr_y`, `psnr_cb`, `psnr_cr`) with its
//! default options (chroma on, no MSE, no APSNR, full high-bit-depth peak, no `min_sse`).
//!
//! Source of the arithmetic: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_psnr.c.
//!
//! This is the example that README's "Adding a metric" walks through: this file is the
//! definition (its registry entry, output names, what it reads, and the arithmetic both
//! halves share), `cpu.rs` the CPU half, `cuda.rs` the CUDA host half of `kernels/psnr.cu`,
//! and one line in [`super::REGISTRY`] makes the engine compute it.

pub mod cpu;
pub mod cuda;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Needs, Section,
};
use super::options::Options;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;

/// The registry name.
const FEATURE: &str = "psnr";

/// PSNR cap in dB at `bpc` bits: libvmaf's `psnr_max = 6 * bpc + 12` (60 dB at 8 bits,
/// 72 dB at 10 bits).
pub fn psnr_max(bpc: u32) -> f64 {
    f64::from(6 * bpc + 12)
}

/// Peak sample value at `bpc` bits: 255 at 8 bits (libvmaf's 8-bit path hard-codes it),
/// `(1 << bpc) - 1` above.
pub fn peak(bpc: u32) -> f64 {
    f64::from((1u32 << bpc.clamp(8, 16)) - 1)
}

/// The part of a chroma plane that libvmaf's PSNR reads: for a `luma` (width, height) frame
/// whose chroma planes are `chroma` (width, height), each subsampled dimension is the luma's
/// halved and rounded *down* (libvmaf sizes its chroma planes `w >> ss_hor`, `h >> ss_ver`),
/// where GStreamer's planes round up. They differ only for odd sizes: 575x323 4:2:0 has
/// 288x162 chroma samples and libvmaf's `psnr_cb` / `psnr_cr` read the top-left 287x161.
/// Dimensions that are not subsampled are kept. Source: Netflix/vmaf v3.2.0,
/// libvmaf/src/picture.c (vmaf_picture_alloc) and libvmaf/src/feature/integer_psnr.c.
pub fn libvmaf_chroma_size(luma: (usize, usize), chroma: (usize, usize)) -> (usize, usize) {
    let side = |l: usize, c: usize| if c < l { (l >> 1).min(c) } else { c };
    (side(luma.0, chroma.0), side(luma.1, chroma.1))
}

/// PSNR in dB from a plane's sum of squared errors ([`cpu::sse`]) over `pixels` samples
/// (`width * height` of the plane; 0 counts as 1) at `bpc` bits:
/// `min(10 * log10(peak^2 / max(sse / pixels, 1e-16)), 6 * bpc + 12)`, in
/// `[0, 6 * bpc + 12]`. [`cpu::psnr`] and the GPU path ([`cuda::PsnrGpu`]) share it, so equal
/// sums give bit-identical scores.
pub fn psnr_from_sse(sse: u64, pixels: usize, bpc: u32) -> f64 {
    let n = pixels.max(1) as f64;
    let mse = sse as f64 / n;
    let p = peak(bpc);
    (10.0 * (p * p / mse.max(1e-16)).log10()).min(psnr_max(bpc))
}

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
