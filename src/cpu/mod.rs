//! The CPU backend: libvmaf's integer feature extractors in plain Rust, bit-exact. It runs
//! where no GPU is usable and is the oracle the GPU backend is tested against.

pub mod adm;
pub mod motion;
pub mod psnr;
pub mod ssim;
pub mod ssimulacra2;
pub mod vif;

use std::collections::VecDeque;

use crate::engine::colour::YuvToRgb;
use crate::engine::features::FeatureSet;
use crate::engine::frame::{ChromaPair, FeatureError, LumaInput, LumaPlane};
use crate::engine::scorer::{Backend, EngineError, RawFeatures, MAX_OPTION_SETS};

/// Smallest luma plane every extractor accepts: the largest of the VIF, ADM and motion minima.
pub const MIN_WIDTH: usize = max(max(vif::MIN_WIDTH, adm::MIN_WIDTH), motion::MIN_WIDTH);
/// Smallest luma plane height every extractor accepts.
pub const MIN_HEIGHT: usize = max(max(vif::MIN_HEIGHT, adm::MIN_HEIGHT), motion::MIN_HEIGHT);

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

/// VIF + ADM + motion on the CPU, one thread, for one geometry, and the extra metrics of a
/// [`FeatureSet`] (PSNR, float SSIM, float MS-SSIM, SSIMULACRA2). Keeps a copy of the previous
/// reference plane for motion.
pub struct CpuBackend {
    vif: vif::Vif,
    adm: adm::Adm,
    motion: motion::Motion,
    /// VIF options, one computation each per frame (the first fills `RawFeatures::vif`).
    vif_cfgs: Vec<vif::VifConfig>,
    /// ADM options, likewise.
    adm_cfgs: Vec<adm::AdmConfig>,
    features: FeatureSet,
    ssim: ssim::Ssim,
    ssimulacra2: ssimulacra2::Ssimulacra2,
    /// The YUV -> RGB conversion SSIMULACRA2 uses.
    colour: YuvToRgb,
    prev_ref: Vec<u16>,
    has_prev: bool,
    /// Packed copies of host rows in another layout (8-bit, P010, shifted depth).
    scratch_ref: Vec<u16>,
    scratch_dis: Vec<u16>,
    done: VecDeque<RawFeatures>,
    width: usize,
    height: usize,
    bpc: u32,
}

impl CpuBackend {
    /// Sizes every extractor for `width` x `height` luma at `bpc` bits.
    ///
    /// Errors: [`FeatureError::FrameTooSmall`] below [`MIN_WIDTH`] x [`MIN_HEIGHT`].
    pub fn new(
        width: usize,
        height: usize,
        bpc: u32,
        vif_cfg: vif::VifConfig,
        adm_cfg: adm::AdmConfig,
    ) -> Result<Self, FeatureError> {
        Self::with_features(
            width,
            height,
            bpc,
            &[vif_cfg],
            &[adm_cfg],
            FeatureSet::default(),
        )
    }

    /// Like [`CpuBackend::new`], with VIF computed once per entry of `vif_cfgs` and ADM once
    /// per entry of `adm_cfgs` (each 1 to [`MAX_OPTION_SETS`] entries; the first fills
    /// `RawFeatures::vif` / `adm`, the others `vif_more` / `adm_more` in order), and the
    /// extra metrics of `features`.
    ///
    /// Errors: [`FeatureError::FrameTooSmall`] below [`MIN_WIDTH`] x [`MIN_HEIGHT`], or below
    /// 176x176 when `features` holds `float_ms_ssim` (libvmaf's limit, see
    /// [`ssim::ms_ssim_fits`]); [`FeatureError::WrongGeometry`] for a `bpc` outside `8..=16`
    /// or an empty or too long option list (reported as a geometry the backend cannot take).
    pub fn with_features(
        width: usize,
        height: usize,
        bpc: u32,
        vif_cfgs: &[vif::VifConfig],
        adm_cfgs: &[adm::AdmConfig],
        features: FeatureSet,
    ) -> Result<Self, FeatureError> {
        FeatureError::check_new("vmaf", (width, height, bpc), (MIN_WIDTH, MIN_HEIGHT))?;
        if features.float_ms_ssim && !ssim::ms_ssim_fits(width, height) {
            return Err(ssim::ms_ssim_too_small(width, height));
        }
        let sets_ok = |n: usize| (1..=MAX_OPTION_SETS).contains(&n);
        if !sets_ok(vif_cfgs.len()) || !sets_ok(adm_cfgs.len()) {
            return Err(FeatureError::wrong_size(
                "vmaf",
                (width, height, bpc),
                (width, height),
            ));
        }
        Ok(Self {
            vif: vif::Vif::new(width, height, bpc)?,
            adm: adm::Adm::new(width, height, bpc)?,
            motion: motion::Motion::new(width, height, bpc)?,
            vif_cfgs: vif_cfgs.to_vec(),
            adm_cfgs: adm_cfgs.to_vec(),
            features,
            ssim: ssim::Ssim::new(),
            ssimulacra2: ssimulacra2::Ssimulacra2::new(),
            colour: YuvToRgb::default(),
            prev_ref: vec![0; width * height],
            has_prev: false,
            scratch_ref: Vec::new(),
            scratch_dis: Vec::new(),
            done: VecDeque::with_capacity(2),
            width,
            height,
            bpc,
        })
    }

    /// The YUV -> RGB conversion SSIMULACRA2 uses (from the caps' colorimetry); the default
    /// is [`YuvToRgb::default()`] (BT.709 matrix, limited range, BT.709 transfer). Only the
    /// `ssimulacra2` feature reads it.
    pub fn with_colour(mut self, conv: YuvToRgb) -> Self {
        self.colour = conv;
        self
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn submit_input(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        full: bool,
    ) -> Result<(), EngineError> {
        self.submit_frame(reference, distorted, None, full)
    }

    fn submit_frame(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaPair<'_>>,
        full: bool,
    ) -> Result<(), EngineError> {
        let raw = {
            let mut scratch_ref = std::mem::take(&mut self.scratch_ref);
            let mut scratch_dis = std::mem::take(&mut self.scratch_dis);
            let r = self.host_plane(&reference, &mut scratch_ref);
            let d = self.host_plane(&distorted, &mut scratch_dis);
            let raw = match (r, d) {
                (Ok(r), Ok(d)) => self.extract_frame(&r, &d, chroma.as_ref(), full),
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
            self.scratch_ref = scratch_ref;
            self.scratch_dis = scratch_dis;
            raw?
        };
        self.done.push_back(raw);
        Ok(())
    }

    fn collect(&mut self, _wait: bool) -> Result<Option<RawFeatures>, EngineError> {
        Ok(self.done.pop_front())
    }

    fn reset(&mut self) {
        self.has_prev = false;
        self.done.clear();
    }
}

impl CpuBackend {
    /// A `u16` view of `input`: packed planes as they are, host rows converted into
    /// `scratch`. Device planes are refused (the element maps them to host memory for this
    /// backend).
    fn host_plane<'s>(
        &self,
        input: &'s LumaInput<'_>,
        scratch: &'s mut Vec<u16>,
    ) -> Result<LumaPlane<'s>, EngineError> {
        let wrong =
            |size| FeatureError::wrong_size("vmaf", (self.width, self.height, self.bpc), size);
        match input {
            LumaInput::Packed(p) => Ok(*p),
            LumaInput::Host(h) => {
                h.to_packed(scratch);
                LumaPlane::packed(scratch, h.width, h.height, self.bpc)
                    .ok_or_else(|| wrong((h.width, h.height)).into())
            }
            LumaInput::Device(_) => Err(EngineError::Backend {
                backend: "cpu",
                message: "frames in GPU memory must be mapped to host memory for the CPU backend"
                    .into(),
            }),
        }
    }

    /// Computes one frame pair's features at once (the CPU path is synchronous).
    pub fn extract(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        full: bool,
    ) -> Result<RawFeatures, EngineError> {
        self.extract_frame(reference, distorted, None, full)
    }

    /// [`CpuBackend::extract`] with the chroma planes that `psnr_cb` / `psnr_cr` and
    /// `ssimulacra2` read (without them `psnr_cb` / `psnr_cr` stay 0 and SSIMULACRA2 scores
    /// the frames as grey).
    ///
    /// Errors: as [`CpuBackend::extract`], and [`FeatureError::WrongGeometry`] when the
    /// chroma planes of the two frames differ in size or depth (or, for `ssimulacra2`, the
    /// chroma depth differs from the luma depth).
    pub fn extract_frame(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        chroma: Option<&ChromaPair>,
        full: bool,
    ) -> Result<RawFeatures, EngineError> {
        let geometry = (self.width, self.height, self.bpc);
        FeatureError::check_plane("vmaf", geometry, reference)?;
        FeatureError::check_plane("vmaf", geometry, distorted)?;
        let mut raw = RawFeatures::default();
        if self.has_prev {
            if let Some(prev) = LumaPlane::packed(&self.prev_ref, self.width, self.height, self.bpc)
            {
                let sad = self.motion.sad(&prev, reference)?;
                raw.motion_sad = self.motion.score(sad);
            }
        }
        if full {
            for (i, cfg) in self.vif_cfgs.iter().enumerate() {
                let scores = self.vif.compute(reference, distorted, cfg)?;
                match i.checked_sub(1) {
                    None => raw.vif = scores,
                    Some(k) => raw.vif_more[k] = scores,
                }
            }
            for (i, cfg) in self.adm_cfgs.iter().enumerate() {
                let scores = self.adm.compute(reference, distorted, cfg)?;
                match i.checked_sub(1) {
                    None => raw.adm = scores,
                    Some(k) => raw.adm_more[k] = scores,
                }
            }
            self.extra(reference, distorted, chroma, &mut raw)?;
        }
        for y in 0..self.height {
            let dst = &mut self.prev_ref[y * self.width..(y + 1) * self.width];
            dst.copy_from_slice(reference.row(y));
        }
        self.has_prev = true;
        Ok(raw)
    }

    /// The metrics of the backend's [`FeatureSet`] for one frame pair.
    fn extra(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        chroma: Option<&ChromaPair>,
        raw: &mut RawFeatures,
    ) -> Result<(), EngineError> {
        let f = self.features;
        if f.psnr {
            raw.extra.psnr[0] = psnr::psnr(reference, distorted);
            if let Some(c) = chroma {
                for i in 0..2 {
                    let (r, d) = (&c.reference[i], &c.distorted[i]);
                    FeatureError::check_plane("psnr", (r.width, r.height, r.bpc), d)?;
                    // libvmaf leaves out the last column/row of odd-sized subsampled planes.
                    raw.extra.psnr[i + 1] =
                        psnr::chroma_psnr((reference.width, reference.height), r, d);
                }
            }
        }
        if f.float_ssim {
            raw.extra.float_ssim = self.ssim.float_ssim(reference, distorted)?;
        }
        if f.float_ms_ssim {
            raw.extra.float_ms_ssim = self.ssim.float_ms_ssim(reference, distorted)?;
        }
        if f.ssimulacra2 {
            raw.extra.ssimulacra2 =
                self.ssimulacra2
                    .score(reference, distorted, chroma, &self.colour)?;
        }
        Ok(())
    }
}
