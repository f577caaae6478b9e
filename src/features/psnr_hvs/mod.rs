//! libvmaf's PSNR-HVS, the `psnr_hvs` extractor (`psnr_hvs_y`, `psnr_hvs_cb`, `psnr_hvs_cr`,
//! `psnr_hvs`): Xiph's (Daala's) PSNR-HVS-M, a PSNR of 8x8 integer-DCT coefficients weighted by
//! a contrast sensitivity function, with the errors below each block's contrast masking
//! threshold left out. libvmaf's extractor has no options.
//!
//! Per plane (Y, and Cb, Cr at libvmaf's chroma size, [`libvmaf_chroma_size`]): 8x8 blocks
//! every [`STEP`] samples in both directions (neighbouring blocks share a row / column;
//! samples right of and below the last whole block are not read), each block's integer DCT
//! ([`fdct8x8`]), and the sum of the squared weighted, masked coefficient errors, accumulated
//! in single precision as libvmaf does. The plane's score is that sum over
//! `64 * blocks * (2^bpc - 1)^2` ([`plane_score`]) and its dB value `-10 log10(score)`
//! ([`db`]); `psnr_hvs` is the dB value of `0.8 * Y + 0.1 * (Cb + Cr)` of the plane scores
//! ([`combined`]). Identical planes give `+inf` (libvmaf's logs write `null`, and so do ours).
//!
//! What libvmaf refuses is refused here too, at caps, with [`FeatureError::Unsupported`]: grey
//! frames (YUV400) and more than 12 bits per sample. libvmaf takes planes smaller than one 8x8
//! block and reports NaN for them; here a frame whose luma or (libvmaf-sized) chroma planes
//! hold no whole block is refused with [`FeatureError::FrameTooSmall`] (16x16 luma for 4:2:0,
//! 16x8 for 4:2:2, 8x8 for 4:4:4).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/third_party/xiph/psnr_hvs.c (the
//! extractor and its wrapper are that one file), after Xiph.Org's Daala `tools/dump_psnrhvs.c`.

pub mod cpu;
pub mod cuda;
mod params;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Needs, Section,
};
use super::options::Options;
use super::psnr::libvmaf_chroma_size;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;
pub use params::{
    blocks, combined, db, fdct8, fdct8x8, outputs, plane_score, Tables, CSF_CB, CSF_CR, CSF_Y,
    MAX_BPC, STEP,
};
use params::{FEATURE, OUTPUTS};

/// The registry entry of PSNR-HVS.
#[derive(Debug)]
pub struct PsnrHvsFeature;

/// [`PsnrHvsFeature`], as [`super::REGISTRY`] lists it.
pub static PSNR_HVS: PsnrHvsFeature = PsnrHvsFeature;

impl Feature for PsnrHvsFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    /// After VMAF's features, where libvmaf's logs put extra extractors.
    fn section(&self) -> Section {
        Section::Trailing
    }

    fn reads_chroma(&self) -> bool {
        true
    }

    /// libvmaf's `psnr_hvs` has no options. Grey frames (`chroma` false) are accepted here
    /// and refused by [`Instance::check`], with the frame geometry at hand.
    fn configure(&self, options: &Options, chroma: bool) -> Result<Arc<dyn Instance>, String> {
        options.only(&[])?;
        Ok(Arc::new(PsnrHvsInstance { chroma }))
    }
}

/// PSNR-HVS of the three planes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PsnrHvsInstance {
    /// The frames have chroma planes (without them the instance refuses every geometry).
    pub chroma: bool,
}

impl PsnrHvsInstance {
    /// The (width, height) of the three planes libvmaf reads for `g`: the luma, and the
    /// chroma at [`libvmaf_chroma_size`].
    fn planes(g: &Geometry) -> Option<[(usize, usize); 3]> {
        let c = libvmaf_chroma_size((g.width, g.height), g.chroma?);
        Some([(g.width, g.height), c, c])
    }
}

impl Instance for PsnrHvsInstance {
    fn feature(&self) -> &'static dyn Feature {
        &PSNR_HVS
    }

    fn key(&self) -> String {
        String::new()
    }

    fn needs(&self) -> Needs {
        Needs {
            chroma: self.chroma,
            ..Needs::default()
        }
    }

    fn outputs(&self) -> Vec<String> {
        OUTPUTS.iter().map(|n| (*n).to_owned()).collect()
    }

    /// 8x8, one block; [`Instance::check`] also asks the chroma planes to hold one (16x16
    /// luma for 4:2:0).
    fn min_size(&self) -> (usize, usize) {
        (8, 8)
    }

    /// Errors: [`FeatureError::Unsupported`] for grey frames or more than [`MAX_BPC`] bits
    /// (libvmaf refuses both); [`FeatureError::FrameTooSmall`] when the luma or chroma planes
    /// hold no whole 8x8 block (libvmaf would report NaN), naming the luma size needed.
    fn check(&self, g: &Geometry) -> Result<(), FeatureError> {
        FeatureError::check_new(FEATURE, g.triple(), self.min_size())?;
        let planes =
            Self::planes(g)
                .filter(|_| self.chroma)
                .ok_or_else(|| FeatureError::Unsupported {
                    feature: FEATURE,
                    reason: "needs frames with chroma planes (libvmaf 3.2.0 refuses grey, YUV400, \
                         frames)"
                        .to_owned(),
                })?;
        if g.bpc > MAX_BPC {
            return Err(FeatureError::Unsupported {
                feature: FEATURE,
                reason: format!(
                    "takes at most {MAX_BPC} bits per sample (libvmaf 3.2.0 refuses more), got {}",
                    g.bpc
                ),
            });
        }
        let (cw, ch) = planes[1];
        if cw < 8 || ch < 8 {
            // One chroma block needs 8 samples, i.e. 16 luma samples where subsampled.
            let need = |luma: usize, chroma: usize| if chroma < luma { 16 } else { 8 };
            return Err(FeatureError::FrameTooSmall {
                feature: FEATURE,
                width: g.width,
                height: g.height,
                min_width: need(g.width, cw),
                min_height: need(g.height, ch),
            });
        }
        Ok(())
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        self.check(g)?;
        let planes = Self::planes(g).unwrap_or_default();
        Ok(Box::new(PsnrHvsCpu {
            planes,
            bpc: g.bpc,
            tables: [Tables::new(0), Tables::new(1), Tables::new(2)],
        }))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        let planes = Self::planes(g).unwrap_or_default();
        Ok(Box::new(PsnrHvsCuda {
            gpu: cuda::PsnrHvsGpu::new(dev, stream, planes, g.bpc)?,
        }))
    }
}

/// The CPU half: the planes' sizes and weights.
struct PsnrHvsCpu {
    planes: [(usize, usize); 3],
    bpc: u32,
    tables: [Tables; 3],
}

impl CpuExtractor for PsnrHvsCpu {
    /// Errors: [`FeatureError::WrongGeometry`] for planes other than the geometry's (chroma
    /// missing included).
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let (w, h) = self.planes[0];
        FeatureError::check_plane(FEATURE, (w, h, self.bpc), f.reference)?;
        FeatureError::check_plane(FEATURE, (w, h, self.bpc), f.distorted)?;
        let chroma = f
            .chroma
            .ok_or_else(|| FeatureError::wrong_size(FEATURE, (w, h, self.bpc), (0, 0)))?;
        let mut score = [0.0; 3];
        score[0] = cpu::plane(f.reference, f.distorted, (w, h), &self.tables[0]);
        for i in 0..2 {
            let (r, d) = (&chroma.reference[i], &chroma.distorted[i]);
            FeatureError::check_plane(FEATURE, (r.width, r.height, self.bpc), d)?;
            let (cw, ch) = self.planes[1 + i];
            if r.width < cw || r.height < ch {
                return Err(FeatureError::wrong_size(
                    FEATURE,
                    (cw, ch, self.bpc),
                    (r.width, r.height),
                ));
            }
            score[1 + i] = cpu::plane(r, d, (cw, ch), &self.tables[1 + i]);
        }
        out.iter_mut().zip(outputs(score)).for_each(|(o, x)| *o = x);
        Ok(())
    }
}

/// The CUDA half: one launch for the three planes' blocks, one for the sums.
struct PsnrHvsCuda {
    gpu: cuda::PsnrHvsGpu,
}

impl CudaExtractor for PsnrHvsCuda {
    fn result_words(&self) -> usize {
        cuda::PsnrHvsGpu::RESULT_WORDS
    }

    fn side_stream(&self) -> bool {
        true
    }

    /// Errors: [`CudaError::Geometry`] without the frame's chroma, or from the launches.
    fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        self.gpu
            .enqueue(stream, f.reference, f.distorted, f.chroma, out)
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        let v = outputs(self.gpu.scores(words));
        out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::XorShift;
    use crate::video::frame::LumaPlane;

    fn geometry(w: usize, h: usize, bpc: u32, chroma: Option<(usize, usize)>) -> Geometry {
        Geometry {
            chroma,
            ..Geometry::luma(w, h, bpc)
        }
    }

    /// The DCT is orthonormal to within rounding: a flat block's DC is 8 times its value and
    /// every other coefficient 0; the energy of a random block is kept to within 1%.
    #[test]
    fn dct_is_nearly_orthonormal() {
        let flat = fdct8x8(&[100; 64]);
        assert_eq!(flat[0], 800);
        assert!(flat[1..].iter().all(|&c| c == 0), "{flat:?}");
        let mut rng = XorShift(0x1234_5678_9abc_def1);
        for _ in 0..100 {
            let x: [i32; 64] = std::array::from_fn(|_| (rng.next_u64() % 4096) as i32);
            let y = fdct8x8(&x);
            let ex: f64 = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
            let ey: f64 = y.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
            assert!((ey / ex - 1.0).abs() < 0.01, "{ex} {ey}");
        }
    }

    #[test]
    fn block_counts_step_by_seven() {
        assert_eq!(blocks(7), 0);
        assert_eq!(blocks(8), 1);
        assert_eq!(blocks(14), 1);
        assert_eq!(blocks(15), 2);
        // 1920: corners 0, 7, ..., 1911 = 7 * 273 (the last block ends at 1918).
        assert_eq!(blocks(1920), 274);
    }

    /// Identical planes score 0 (+inf dB); a distorted one a finite positive score.
    #[test]
    fn identical_planes_score_zero() {
        let mut rng = XorShift(77);
        let (w, h) = (37, 29);
        let a: Vec<u16> = (0..w * h).map(|_| (rng.next_u64() % 1024) as u16).collect();
        let b: Vec<u16> = a.iter().map(|&v| v ^ 3).collect();
        let (pa, pb) = (
            LumaPlane::packed(&a, w, h, 10).unwrap(),
            LumaPlane::packed(&b, w, h, 10).unwrap(),
        );
        let t = Tables::new(0);
        assert_eq!(cpu::plane(&pa, &pa, (w, h), &t), 0.0);
        assert_eq!(db(0.0), f64::INFINITY);
        let s = cpu::plane(&pa, &pb, (w, h), &t);
        assert!(s > 0.0 && s.is_finite(), "{s}");
        let (exact, n) = cpu::plane_sum_f64(&pa, &pb, (w, h), &t);
        assert_eq!(n, blocks(w) * blocks(h));
        assert!((plane_score(exact as f32, n, 10) / s - 1.0).abs() < 1e-5);
    }

    /// What libvmaf refuses, and planes without a whole block.
    #[test]
    fn check_refuses_grey_deep_and_tiny_frames() {
        let i = PsnrHvsInstance { chroma: true };
        assert!(i.check(&geometry(16, 16, 8, Some((8, 8)))).is_ok());
        assert!(i.check(&geometry(8, 8, 12, Some((8, 8)))).is_ok());
        let e = i.check(&geometry(64, 64, 16, Some((32, 32)))).unwrap_err();
        assert!(matches!(e, FeatureError::Unsupported { .. }), "{e}");
        assert!(e.to_string().contains("at most 12 bits"), "{e}");
        let grey = PsnrHvsInstance { chroma: false };
        let e = grey.check(&geometry(64, 64, 8, None)).unwrap_err();
        assert!(e.to_string().contains("chroma planes"), "{e}");
        // 4:2:0 15x15: chroma 8x8 in GStreamer, 7x7 as libvmaf reads it.
        let e = i.check(&geometry(15, 15, 8, Some((8, 8)))).unwrap_err();
        assert_eq!(
            e,
            FeatureError::FrameTooSmall {
                feature: FEATURE,
                width: 15,
                height: 15,
                min_width: 16,
                min_height: 16,
            }
        );
        // 4:2:2 and 4:4:4.
        assert!(i.check(&geometry(16, 8, 8, Some((8, 8)))).is_ok());
        assert!(i.check(&geometry(8, 8, 8, Some((8, 8)))).is_ok());
        assert!(i.check(&geometry(7, 8, 8, Some((7, 8)))).is_err());
        assert!(i.cpu(&geometry(15, 15, 8, Some((8, 8)))).is_err());
    }

    #[test]
    fn no_options() {
        assert!(PSNR_HVS.configure(&Options::new(), true).is_ok());
        let mut o = Options::new();
        o.set("enable_chroma", super::super::OptionValue::Bool(false));
        assert!(PSNR_HVS.configure(&o, true).is_err());
    }
}
