//! The CPU backend: libvmaf's integer feature extractors in plain Rust, bit-exact. It runs
//! where no GPU is usable and is the oracle the GPU backend is tested against.
//!
//! Without a pool ([`CpuBackend::new`]) a frame is scored in the calling thread during
//! [`Backend::submit_frame`]. With one ([`CpuBackend::with_pool`], the element's `threads`
//! property) frames are copied and scored in parallel on the pool's threads, several in
//! flight, and collected in submission order; each frame's motion reads the previous
//! submitted reference, so every value is the same as on one thread.

use std::collections::VecDeque;
use std::sync::Arc;

use rayon::prelude::*;

use super::cpu_parallel as parallel;
pub use crate::cpu::{threads_per_core, CpuPool, PoolError};
use crate::engine::model::Model;
use crate::engine::scale::cpu::{scale_plane, Scratch};
use crate::engine::scale::{InputScaling, LadderScaling, PlaneScaler};
use crate::engine::scorer::{Backend, EngineError, PlanError, ScorePlan};
use crate::features::adm::AdmConfig;
use crate::features::vif::VifConfig;
use crate::features::{vmaf_layout, CpuExtractor, Geometry, HostFrame, Layout, RawFeatures};
use crate::video::colour::YuvToRgb;
use crate::video::frame::{ChromaPair, FeatureError, LumaInput, LumaPlane};

/// What every frame of one backend is scored with: the geometry and the layout's instances.
#[derive(Debug, Clone)]
pub(crate) struct FramePlan {
    pub(crate) geometry: Geometry,
    layout: Arc<Layout>,
}

/// Every instance's CPU half (scratch sized for one geometry): one set per thread scoring a
/// frame.
pub(crate) struct Extractors {
    list: Vec<Box<dyn CpuExtractor>>,
    /// A worker's scaled distorted planes (luma, Cb, Cr) and the scaler's scratch, when the
    /// distorted stream is scaled on the pool ([`CpuBackend::with_scaling`]).
    pub(crate) scaled: Scaled,
}

impl Extractors {
    pub(crate) fn new(plan: &FramePlan) -> Result<Self, FeatureError> {
        let list = plan
            .layout
            .instances()
            .iter()
            .map(|i| i.cpu(&plan.geometry))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            list,
            scaled: Scaled::default(),
        })
    }

    /// One frame pair's values: the instances that read the previous frame on every frame
    /// (0 without `prev`), the others when `full`. With `split` (on a pool thread only: rayon
    /// runs in the current thread's pool) the instances run in parallel; they share nothing,
    /// so the values do not depend on it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn extract(
        &mut self,
        plan: &FramePlan,
        prev: Option<&LumaPlane>,
        prev2: Option<&LumaPlane>,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        chroma: Option<&ChromaPair>,
        full: bool,
        split: bool,
    ) -> Result<RawFeatures, EngineError> {
        let geometry = plan.geometry.triple();
        FeatureError::check_plane("vmaf", geometry, reference)?;
        FeatureError::check_plane("vmaf", geometry, distorted)?;
        let frame = HostFrame {
            reference,
            distorted,
            previous: prev,
            previous2: prev2,
            chroma,
        };
        let mut raw = RawFeatures::new(&plan.layout);
        let layout = &plan.layout;
        // Each instance's own slice of the values.
        let mut jobs: Vec<(&mut Box<dyn CpuExtractor>, &mut [f64])> =
            Vec::with_capacity(self.list.len());
        let mut rest = raw.values_mut();
        for (i, (ex, inst)) in self.list.iter_mut().zip(layout.instances()).enumerate() {
            let (out, tail) = std::mem::take(&mut rest).split_at_mut(layout.span(i).len());
            rest = tail;
            if full || inst.needs().previous {
                jobs.push((ex, out));
            }
        }
        let run = |(ex, out): (&mut Box<dyn CpuExtractor>, &mut [f64])| ex.extract(&frame, out);
        if split {
            jobs.into_par_iter().try_for_each(run)?;
        } else {
            jobs.into_iter().try_for_each(run)?;
        }
        Ok(raw)
    }
}

/// Every instance of a [`Layout`] on the CPU for one geometry, through their CPU halves: on
/// the calling thread, or on a [`CpuPool`] with several frames in flight
/// ([`CpuBackend::with_pool`]). Keeps the previous reference plane for the instances that read
/// it (motion).
pub struct CpuBackend {
    plan: Arc<FramePlan>,
    /// The calling thread's extractors (`None` once given to the pool, made again if
    /// [`CpuBackend::extract`] is called then).
    ex: Option<Extractors>,
    /// The previous reference and the one before it (the five-frame motion), packed.
    prev_ref: Vec<u16>,
    prev2_ref: Vec<u16>,
    /// References kept since the run started (capped at 2).
    kept: u8,
    /// Packed copies of host rows in another layout (8-bit, P010, shifted depth).
    scratch_ref: Vec<u16>,
    scratch_dis: Vec<u16>,
    done: VecDeque<RawFeatures>,
    /// Frames in flight on a pool ([`CpuBackend::with_pool`]).
    parallel: Option<parallel::Parallel>,
    /// The streams scaled to the scoring size, and where their scaled planes go.
    scaling: InputScaling,
    scaled: Scaled,
}

/// Scaled planes (reference / distorted luma, then their Cb and Cr) and the scaler's
/// scratch, reused frame after frame.
#[derive(Default)]
pub(crate) struct Scaled {
    pub(crate) luma: [Vec<u16>; 2],
    pub(crate) chroma: [[Vec<u16>; 2]; 2],
    pub(crate) scratch: Scratch,
}

/// `plane` through `scaler` into `out`, as a plane of the scaler's output size; `plane` as it
/// is without a scaler.
pub(crate) fn scale_into<'a>(
    scaler: Option<&PlaneScaler>,
    plane: LumaPlane<'a>,
    scratch: &mut Scratch,
    out: &'a mut Vec<u16>,
) -> Result<LumaPlane<'a>, EngineError> {
    let Some(s) = scaler else {
        return Ok(plane);
    };
    let (dw, dh) = s.dst();
    let wrong = || {
        EngineError::from(FeatureError::wrong_size(
            "scale",
            (s.src().0, s.src().1, plane.bpc),
            (plane.width, plane.height),
        ))
    };
    if !scale_plane(s, &plane, scratch, out) {
        return Err(wrong());
    }
    LumaPlane::packed(out, dw, dh, plane.bpc).ok_or_else(wrong)
}

impl CpuBackend {
    /// Sizes every instance's CPU half for frames of `geometry`.
    ///
    /// Errors: the first instance's geometry error ([`FeatureError::FrameTooSmall`] below its
    /// minimum, e.g. 33x33 for ADM, 176x176 for `float_ms_ssim`; [`FeatureError::WrongGeometry`]
    /// for a `bpc` outside `8..=16`).
    pub fn new(layout: &Arc<Layout>, geometry: Geometry) -> Result<Self, FeatureError> {
        layout.check(&geometry)?;
        let plan = FramePlan {
            geometry,
            layout: layout.clone(),
        };
        Ok(Self {
            ex: Some(Extractors::new(&plan)?),
            prev_ref: vec![0; plan.geometry.width * plan.geometry.height],
            plan: Arc::new(plan),
            prev2_ref: Vec::new(),
            kept: 0,
            scratch_ref: Vec::new(),
            scratch_dis: Vec::new(),
            done: VecDeque::with_capacity(2),
            parallel: None,
            scaling: InputScaling::default(),
            scaled: Scaled::default(),
        })
    }

    /// A ladder backend ([`crate::engine::ladder`]): one reference against
    /// `scaling.renditions.len()` rendition slots, each rendition scaled by its scaler (if any)
    /// to `geometry`'s size; on a pool ([`CpuBackend::with_pool`]) ladder frames are scored in
    /// parallel, one ladder frame per worker.
    ///
    /// Errors: as [`CpuBackend::new`].
    pub fn for_ladder(
        layout: &Arc<Layout>,
        geometry: Geometry,
        scaling: LadderScaling,
    ) -> Result<Self, FeatureError> {
        // Filled in by the ladder change of the CPU backend.
        let _ = (layout, geometry, scaling);
        Err(FeatureError::wrong_size("ladder", (0, 0, 8), (0, 0)))
    }

    /// Scales the streams `scaling` names to the scoring size (the backend's geometry) before
    /// any feature reads them: their planes are then submitted at the scaler's source size,
    /// luma and, when a metric reads chroma, the chroma planes (FFmpeg swscale's arithmetic,
    /// [`crate::engine::scale`]). On a pool, a scaled distorted stream is scaled by the
    /// worker that scores the frame; a scaled reference (a fixed scoring size) on the
    /// submitting thread, since the next frame's motion reads it.
    pub fn with_scaling(mut self, scaling: InputScaling) -> Self {
        self.scaling = scaling;
        self
    }

    /// The features of one model (each with the model's options), luma only, for `width` x
    /// `height` planes of `bpc` bits.
    ///
    /// Errors: [`EngineError::Plan`] for a model whose options its features refuse,
    /// [`EngineError::Feature`] as [`CpuBackend::new`].
    pub fn for_model(
        model: &Model,
        width: usize,
        height: usize,
        bpc: u32,
    ) -> Result<Self, EngineError> {
        let plan = ScorePlan::single(model)?;
        Ok(Self::new(
            plan.layout(),
            Geometry::luma(width, height, bpc),
        )?)
    }

    /// VMAF v0's features (ADM, motion, VIF) with the options `vif` and `adm`, luma only.
    ///
    /// Errors: as [`CpuBackend::new`].
    pub fn vmaf(
        width: usize,
        height: usize,
        bpc: u32,
        vif: VifConfig,
        adm: AdmConfig,
    ) -> Result<Self, EngineError> {
        let layout = vmaf_layout(vif, adm).map_err(PlanError::from)?;
        Ok(Self::new(&layout, Geometry::luma(width, height, bpc))?)
    }

    /// The layout this backend computes.
    pub fn layout(&self) -> &Arc<Layout> {
        &self.plan.layout
    }

    /// The YUV -> RGB conversion SSIMULACRA2 uses (from the caps' colorimetry), replacing the
    /// geometry's; only SSIMULACRA2 reads it.
    ///
    /// Errors: as [`CpuBackend::new`] (the extractors are made again).
    pub fn with_colour(mut self, conv: YuvToRgb) -> Result<Self, FeatureError> {
        let plan = Arc::make_mut(&mut self.plan);
        plan.geometry.colour = conv;
        if self.ex.is_some() {
            self.ex = Some(Extractors::new(&self.plan)?);
        }
        Ok(self)
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
        if !self.scaling.is_identity() {
            return self.submit_scaled(reference, distorted, chroma, full);
        }
        self.submit_unscaled(reference, distorted, chroma, full)
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
        self.kept = 0;
        self.done.clear();
        if let Some(p) = self.parallel.as_mut() {
            p.reset();
        }
    }
}

impl CpuBackend {
    /// [`Backend::submit_frame`] of planes at the scoring size.
    fn submit_unscaled(
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

    /// [`Backend::submit_frame`] with the streams of [`CpuBackend::with_scaling`] scaled to
    /// the scoring size first (luma, and chroma when given).
    fn submit_scaled(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaPair<'_>>,
        full: bool,
    ) -> Result<(), EngineError> {
        // On a pool, a rendition is scaled by the worker that scores it (frames in parallel);
        // a scaled reference is scaled here, since the next frame's motion reads it.
        if let (Some(p), None, Some(d)) = (
            self.parallel.as_mut(),
            self.scaling.reference.as_ref(),
            self.scaling.distorted.as_ref(),
        ) {
            return p.submit_scaled(
                &self.plan,
                &reference,
                &distorted,
                chroma.as_ref(),
                full,
                Some(d),
            );
        }
        let mut scaled = std::mem::take(&mut self.scaled);
        let mut scratch_ref = std::mem::take(&mut self.scratch_ref);
        let mut scratch_dis = std::mem::take(&mut self.scratch_dis);
        let result = (|| {
            let Scaled {
                luma: [luma_r, luma_d],
                chroma: [chroma_r, chroma_d],
                scratch,
            } = &mut scaled;
            let r = host_plane(&self.plan, &reference, &mut scratch_ref)?;
            let d = host_plane(&self.plan, &distorted, &mut scratch_dis)?;
            let (rs, ds) = (
                self.scaling.reference.as_ref(),
                self.scaling.distorted.as_ref(),
            );
            let r = scale_into(rs.map(|s| &s.luma), r, scratch, luma_r)?;
            let d = scale_into(ds.map(|s| &s.luma), d, scratch, luma_d)?;
            let chroma = match chroma {
                Some(c) => {
                    let (rc, dc) = (
                        rs.and_then(|s| s.chroma.as_ref()),
                        ds.and_then(|s| s.chroma.as_ref()),
                    );
                    let [r0, r1] = chroma_r;
                    let [d0, d1] = chroma_d;
                    Some(ChromaPair {
                        reference: [
                            scale_into(rc, c.reference[0], scratch, r0)?,
                            scale_into(rc, c.reference[1], scratch, r1)?,
                        ],
                        distorted: [
                            scale_into(dc, c.distorted[0], scratch, d0)?,
                            scale_into(dc, c.distorted[1], scratch, d1)?,
                        ],
                    })
                }
                None => None,
            };
            self.submit_unscaled(LumaInput::Packed(r), LumaInput::Packed(d), chroma, full)
        })();
        self.scaled = scaled;
        self.scratch_ref = scratch_ref;
        self.scratch_dis = scratch_dis;
        result
    }
}

/// A `u16` view of `input`: packed planes as they are, host rows converted into `scratch`.
/// Device planes are refused (the element maps them to host memory for this backend).
fn host_plane<'s>(
    plan: &FramePlan,
    input: &'s LumaInput<'_>,
    scratch: &'s mut Vec<u16>,
) -> Result<LumaPlane<'s>, EngineError> {
    let wrong = |size| FeatureError::wrong_size("vmaf", plan.geometry.triple(), size);
    match input {
        LumaInput::Packed(p) => Ok(*p),
        LumaInput::Host(h) => {
            h.to_packed(scratch);
            LumaPlane::packed(scratch, h.width, h.height, plan.geometry.bpc)
                .ok_or_else(|| wrong((h.width, h.height)).into())
        }
        LumaInput::Device(_) => Err(device_refused()),
    }
}

pub(crate) fn device_refused() -> EngineError {
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
        let (w, h, bpc) = plan.geometry.triple();
        let prev = (self.kept >= 1)
            .then(|| LumaPlane::packed(&self.prev_ref, w, h, bpc))
            .flatten();
        let prev2 = (self.kept >= 2)
            .then(|| LumaPlane::packed(&self.prev2_ref, w, h, bpc))
            .flatten();
        let raw = ex.extract(
            plan,
            prev.as_ref(),
            prev2.as_ref(),
            reference,
            distorted,
            chroma,
            full,
            false,
        )?;
        // The previous reference becomes the one two back; this one the previous.
        std::mem::swap(&mut self.prev_ref, &mut self.prev2_ref);
        self.prev_ref.resize(w * h, 0);
        for y in 0..h {
            self.prev_ref[y * w..(y + 1) * w].copy_from_slice(&reference.row(y)[..w]);
        }
        self.kept = (self.kept + 1).min(2);
        Ok(raw)
    }
}
