//! The CPU backend: libvmaf's integer feature extractors in plain Rust, bit-exact. It runs
//! where no GPU is usable and is the oracle the GPU backend is tested against.
//!
//! Without a pool ([`CpuBackend::new`]) a frame is scored in the calling thread during
//! [`Backend::submit_frame`]. With one ([`CpuBackend::with_pool`], the element's `threads`
//! property) frames are copied and scored in parallel on the pool's threads, several in
//! flight, and collected in submission order; each frame's motion reads the previous
//! submitted reference, so every value is the same as on one thread.

pub mod adm;
pub mod motion;
mod parallel;
pub mod pool;
pub mod psnr;
pub mod ssim;
pub mod ssimulacra2;
pub mod vif;

use std::collections::VecDeque;
use std::sync::Arc;

pub use pool::{threads_per_core, CpuPool, PoolError};

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

/// What every frame of one backend is scored with: geometry, option sets, extra metrics.
#[derive(Debug, Clone)]
pub(crate) struct FramePlan {
    width: usize,
    height: usize,
    bpc: u32,
    /// VIF options, one computation each per frame (the first fills `RawFeatures::vif`).
    vif_cfgs: Vec<vif::VifConfig>,
    /// ADM options, likewise.
    adm_cfgs: Vec<adm::AdmConfig>,
    features: FeatureSet,
    /// The YUV -> RGB conversion SSIMULACRA2 uses.
    colour: YuvToRgb,
}

impl FramePlan {
    fn geometry(&self) -> (usize, usize, u32) {
        (self.width, self.height, self.bpc)
    }
}

/// The extractors' state (scratch sized for one geometry): one per thread scoring a frame.
pub(crate) struct Extractors {
    vif: vif::Vif,
    adm: adm::Adm,
    motion: motion::Motion,
    ssim: ssim::Ssim,
    ssimulacra2: ssimulacra2::Ssimulacra2,
}

impl Extractors {
    fn new(plan: &FramePlan) -> Result<Self, FeatureError> {
        let (w, h, bpc) = plan.geometry();
        Ok(Self {
            vif: vif::Vif::new(w, h, bpc)?,
            adm: adm::Adm::new(w, h, bpc)?,
            motion: motion::Motion::new(w, h, bpc)?,
            ssim: ssim::Ssim::new(),
            ssimulacra2: ssimulacra2::Ssimulacra2::new(),
        })
    }

    /// One frame pair's features: motion SAD against `prev` (0 without), and when `full`
    /// VIF, ADM and the extra metrics. With `split` (on a pool thread only: `rayon::join`
    /// runs in the current thread's pool) VIF runs beside ADM, motion and the extras; the
    /// parts share nothing, so the values do not depend on it.
    #[allow(clippy::too_many_arguments)]
    fn extract(
        &mut self,
        plan: &FramePlan,
        prev: Option<&LumaPlane>,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        chroma: Option<&ChromaPair>,
        full: bool,
        split: bool,
    ) -> Result<RawFeatures, EngineError> {
        let geometry = plan.geometry();
        FeatureError::check_plane("vmaf", geometry, reference)?;
        FeatureError::check_plane("vmaf", geometry, distorted)?;
        let Self {
            vif,
            adm,
            motion,
            ssim,
            ssimulacra2,
        } = self;
        let mut vif_part = move || -> Result<[vif::VifScores; MAX_OPTION_SETS], EngineError> {
            let mut out = [vif::VifScores::default(); MAX_OPTION_SETS];
            if full {
                for (slot, cfg) in out.iter_mut().zip(&plan.vif_cfgs) {
                    *slot = vif.compute(reference, distorted, cfg)?;
                }
            }
            Ok(out)
        };
        let mut rest = move || -> Result<RawFeatures, EngineError> {
            let mut raw = RawFeatures::default();
            if let Some(prev) = prev {
                let sad = motion.sad(prev, reference)?;
                raw.motion_sad = motion.score(sad);
            }
            if full {
                for (i, cfg) in plan.adm_cfgs.iter().enumerate() {
                    let scores = adm.compute(reference, distorted, cfg)?;
                    match i.checked_sub(1) {
                        None => raw.adm = scores,
                        Some(k) => raw.adm_more[k] = scores,
                    }
                }
                extra(
                    plan,
                    ssim,
                    ssimulacra2,
                    reference,
                    distorted,
                    chroma,
                    &mut raw,
                )?;
            }
            Ok(raw)
        };
        let (vifs, raw) = if split {
            rayon::join(vif_part, rest)
        } else {
            (vif_part(), rest())
        };
        let (vifs, mut raw) = (vifs?, raw?);
        raw.vif = vifs[0];
        for (k, v) in vifs[1..plan.vif_cfgs.len()].iter().enumerate() {
            raw.vif_more[k] = *v;
        }
        Ok(raw)
    }
}

/// The metrics of the plan's [`FeatureSet`] for one frame pair.
fn extra(
    plan: &FramePlan,
    ssim: &mut ssim::Ssim,
    s2: &mut ssimulacra2::Ssimulacra2,
    reference: &LumaPlane,
    distorted: &LumaPlane,
    chroma: Option<&ChromaPair>,
    raw: &mut RawFeatures,
) -> Result<(), EngineError> {
    let f = plan.features;
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
        raw.extra.float_ssim = ssim.float_ssim(reference, distorted)?;
    }
    if f.float_ms_ssim {
        raw.extra.float_ms_ssim = ssim.float_ms_ssim(reference, distorted)?;
    }
    if f.ssimulacra2 {
        raw.extra.ssimulacra2 = s2.score(reference, distorted, chroma, &plan.colour)?;
    }
    Ok(())
}

/// VIF + ADM + motion on the CPU for one geometry, and the extra metrics of a
/// [`FeatureSet`] (PSNR, float SSIM, float MS-SSIM, SSIMULACRA2): on the calling thread, or
/// on a [`CpuPool`] with several frames in flight ([`CpuBackend::with_pool`]). Keeps the
/// previous reference plane for motion.
pub struct CpuBackend {
    plan: Arc<FramePlan>,
    /// The calling thread's extractors (`None` once given to the pool, made again if
    /// [`CpuBackend::extract`] is called then).
    ex: Option<Extractors>,
    prev_ref: Vec<u16>,
    has_prev: bool,
    /// Packed copies of host rows in another layout (8-bit, P010, shifted depth).
    scratch_ref: Vec<u16>,
    scratch_dis: Vec<u16>,
    done: VecDeque<RawFeatures>,
    /// Frames in flight on a pool ([`CpuBackend::with_pool`]).
    parallel: Option<parallel::Parallel>,
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
        let plan = FramePlan {
            width,
            height,
            bpc,
            vif_cfgs: vif_cfgs.to_vec(),
            adm_cfgs: adm_cfgs.to_vec(),
            features,
            colour: YuvToRgb::default(),
        };
        Ok(Self {
            ex: Some(Extractors::new(&plan)?),
            plan: Arc::new(plan),
            prev_ref: vec![0; width * height],
            has_prev: false,
            scratch_ref: Vec::new(),
            scratch_dis: Vec::new(),
            done: VecDeque::with_capacity(2),
            parallel: None,
        })
    }

    /// The YUV -> RGB conversion SSIMULACRA2 uses (from the caps' colorimetry); the default
    /// is [`YuvToRgb::default()`] (BT.709 matrix, limited range, BT.709 transfer). Only the
    /// `ssimulacra2` feature reads it.
    pub fn with_colour(mut self, conv: YuvToRgb) -> Self {
        Arc::make_mut(&mut self.plan).colour = conv;
        self
    }

    /// Scores the frames submitted through [`Backend`] on `pool`: each submission copies the
    /// two luma planes (and the chroma planes, when given) and hands the pair to a worker;
    /// up to `pool.threads() + 1` frames are in flight ([`Backend::max_in_flight`]) and
    /// [`Backend::collect`] returns them in submission order. A frame's motion reads the
    /// previous submitted reference, so every value equals the one-thread result. The
    /// backend keeps `pool` alive; its threads stop when the last holder drops it.
    ///
    /// The backend's own extractors go to the first worker; each further worker that scores
    /// a frame makes its own the first time (their scratch, measured at 8 bits: about 45 MB at
    /// 1920x1080, 170 MB at 3840x2160), and each frame in flight holds a copy of its planes.
    pub fn with_pool(mut self, pool: Arc<CpuPool>) -> Self {
        let mut parallel = parallel::Parallel::new(pool);
        if let Some(ex) = self.ex.take() {
            parallel.give(ex);
        }
        self.parallel = Some(parallel);
        self
    }

    /// Threads scoring the frames: the pool's, or 1 (the calling thread).
    pub fn threads(&self) -> usize {
        self.parallel.as_ref().map_or(1, |p| p.threads())
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
        if let Some(p) = self.parallel.as_mut() {
            return p.submit(&self.plan, &reference, &distorted, chroma.as_ref(), full);
        }
        let raw = {
            let mut scratch_ref = std::mem::take(&mut self.scratch_ref);
            let mut scratch_dis = std::mem::take(&mut self.scratch_dis);
            let r = host_plane(&self.plan, &reference, &mut scratch_ref);
            let d = host_plane(&self.plan, &distorted, &mut scratch_dis);
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

    fn collect(&mut self, wait: bool) -> Result<Option<RawFeatures>, EngineError> {
        match self.parallel.as_mut() {
            Some(p) => p.collect(wait),
            None => Ok(self.done.pop_front()),
        }
    }

    fn max_in_flight(&self) -> usize {
        self.parallel.as_ref().map_or(1, |p| p.threads() + 1)
    }

    fn parallel(&self) -> usize {
        self.threads()
    }

    fn reset(&mut self) {
        self.has_prev = false;
        self.done.clear();
        if let Some(p) = self.parallel.as_mut() {
            p.reset();
        }
    }
}

/// A `u16` view of `input`: packed planes as they are, host rows converted into `scratch`.
/// Device planes are refused (the element maps them to host memory for this backend).
fn host_plane<'s>(
    plan: &FramePlan,
    input: &'s LumaInput<'_>,
    scratch: &'s mut Vec<u16>,
) -> Result<LumaPlane<'s>, EngineError> {
    let wrong = |size| FeatureError::wrong_size("vmaf", plan.geometry(), size);
    match input {
        LumaInput::Packed(p) => Ok(*p),
        LumaInput::Host(h) => {
            h.to_packed(scratch);
            LumaPlane::packed(scratch, h.width, h.height, plan.bpc)
                .ok_or_else(|| wrong((h.width, h.height)).into())
        }
        LumaInput::Device(_) => Err(device_refused()),
    }
}

fn device_refused() -> EngineError {
    EngineError::Backend {
        backend: "cpu",
        message: "frames in GPU memory must be mapped to host memory for the CPU backend".into(),
    }
}

impl CpuBackend {
    /// Computes one frame pair's features at once, on the calling thread (the motion history
    /// is this method's own, apart from frames submitted through [`Backend`] to a pool).
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
        let plan = &self.plan;
        let ex = match &mut self.ex {
            Some(ex) => ex,
            None => self.ex.insert(Extractors::new(plan)?),
        };
        let prev = if self.has_prev {
            LumaPlane::packed(&self.prev_ref, plan.width, plan.height, plan.bpc)
        } else {
            None
        };
        let raw = ex.extract(
            plan,
            prev.as_ref(),
            reference,
            distorted,
            chroma,
            full,
            false,
        )?;
        for y in 0..plan.height {
            let dst = &mut self.prev_ref[y * plan.width..(y + 1) * plan.width];
            dst.copy_from_slice(reference.row(y));
        }
        self.has_prev = true;
        Ok(raw)
    }
}
