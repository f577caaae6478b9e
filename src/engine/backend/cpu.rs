//! The CPU backend: libvmaf's integer feature extractors in plain Rust, bit-exact. It runs
//! where no GPU is usable and is the oracle the GPU backend is tested against.
//!
//! Without a pool ([`CpuBackend::new`]) a frame set is scored in the calling thread during
//! [`Backend::submit_set`]. With one ([`CpuBackend::with_pool`], the element's `threads`
//! property) sets are copied and scored in parallel on the pool's threads, several in
//! flight, and collected in submission order; each set's motion reads the previous
//! submitted reference, so every value is the same as on one thread.
//!
//! One path scores any number of renditions ([`CpuBackend::scaled`],
//! [`crate::engine::frame_set`]): the reference is converted (and scaled) once, motion is
//! computed once and copied to every rendition, and every other instance runs over the
//! renditions ([`CpuExtractor::extract_ladder`], sharing its reference-only work; a set of
//! one rendition through [`CpuExtractor::extract`]). On a pool a set of one unscaled
//! rendition (a pair) is split per feature instance, any other set is one job.
//!
//! [`CpuExtractor::extract_ladder`]: crate::features::CpuExtractor::extract_ladder
//! [`CpuExtractor::extract`]: crate::features::CpuExtractor::extract

use std::collections::VecDeque;
use std::sync::Arc;

use super::cpu_frame::{
    keep_reference, stream_planes, Extractors, FramePlan, RenditionPlanes, SetBuffers, SetPlanes,
};
use super::cpu_parallel::{self as parallel, RenditionInput, StreamInput};
pub use crate::cpu::{threads_per_core, CpuPool, PoolError};
use crate::engine::backend::api::Backend;
use crate::engine::error::EngineError;
use crate::engine::frame_set::{FrameChroma, FrameSet, SetFeatures};
use crate::engine::model::Model;
use crate::engine::plan::{PlanError, ScorePlan};
use crate::engine::scale::{InputScaling, Scaling};
use crate::features::adm::AdmConfig;
use crate::features::vif::VifConfig;
use crate::features::{vmaf_layout, Geometry, Layout, RawFeatures};
use crate::video::colour::YuvToRgb;
use crate::video::frame::{ChromaPair, FeatureError, LumaInput, LumaPlane};

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
    /// The previous distorted plane at the scoring size, kept when an instance reads it
    /// (`speed_temporal`, one rendition; valid with `kept >= 1`).
    prev_dis: Vec<u16>,
    /// References kept since the run started (capped at 2).
    kept: u8,
    /// The submitting thread's planes: every stream's on the calling thread, on a pool the
    /// streams scaled before the set is handed over.
    buffers: SetBuffers,
    /// Sets scored on the calling thread, not collected yet.
    done: VecDeque<SetFeatures>,
    /// Sets in flight on a pool ([`CpuBackend::with_pool`]).
    parallel: Option<parallel::Parallel>,
    /// The streams scaled to the scoring size; its renditions are the backend's slots.
    scaling: Scaling,
}

impl CpuBackend {
    /// Sizes every instance's CPU half for frame pairs of `geometry` (one rendition, no
    /// stream scaled): [`CpuBackend::scaled`] with [`Scaling::unscaled_pair`].
    ///
    /// Errors: the first instance's geometry error ([`FeatureError::FrameTooSmall`] below its
    /// minimum, e.g. 33x33 for ADM, 176x176 for `float_ms_ssim`; [`FeatureError::WrongGeometry`]
    /// for a `bpc` outside `8..=16`).
    pub fn new(layout: &Arc<Layout>, geometry: Geometry) -> Result<Self, FeatureError> {
        Self::scaled(layout, geometry, Scaling::unscaled_pair())
    }

    /// The backend for frame sets of `scaling.renditions.len()` rendition slots
    /// ([`Backend::renditions`]; 1: a pair): each rendition scaled by its scaler (if any) to
    /// `geometry`'s size, the reference by `scaling.reference` (if any), luma and, when a
    /// metric reads chroma, the chroma planes (FFmpeg swscale's arithmetic,
    /// [`crate::engine::scale`]); a scaled stream's planes are submitted at the scaler's
    /// source size. On a pool ([`CpuBackend::with_pool`]) a rendition's scaling runs on the
    /// worker that scores the set; a scaled reference's on the submitting thread, since the
    /// next set's motion reads it (so does a pair's scaled rendition when the reference is
    /// scaled or an instance reads the previous distorted frame).
    ///
    /// Chroma comes as [`FrameChroma::Packed`] planes at the streams' own chroma sizes, or
    /// as buffer components (packed here, or by the worker with
    /// [`Backend::reads_components`]). Without renditions it scores the reference only
    /// (motion's history; [`crate::engine::Scorer`] refuses such a backend).
    ///
    /// Errors: as [`CpuBackend::new`]; [`FeatureError::Unsupported`] for more than one
    /// rendition with a layout that has an instance reading the previous distorted frame
    /// (`speed_temporal`: its history could not be shared by the renditions).
    pub fn scaled(
        layout: &Arc<Layout>,
        geometry: Geometry,
        scaling: impl Into<Scaling>,
    ) -> Result<Self, FeatureError> {
        let scaling = scaling.into();
        if let (Some(i), true) = (
            layout.previous_distorted_reader(),
            scaling.renditions.len() > 1,
        ) {
            return Err(FeatureError::Unsupported {
                feature: i.feature().name(),
                reason: "reads the previous distorted frame, which a ladder does not keep: \
                         not scored in a ladder"
                    .to_owned(),
            });
        }
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
            prev_dis: Vec::new(),
            kept: 0,
            buffers: SetBuffers::default(),
            done: VecDeque::with_capacity(2),
            parallel: None,
            scaling,
        })
    }

    /// A ladder backend: [`CpuBackend::scaled`] (kept for its callers; any number of
    /// renditions).
    ///
    /// Errors: as [`CpuBackend::scaled`].
    pub fn for_ladder(
        layout: &Arc<Layout>,
        geometry: Geometry,
        scaling: Scaling,
    ) -> Result<Self, FeatureError> {
        Self::scaled(layout, geometry, scaling)
    }

    /// Scales a pair's streams as `scaling` names them (one rendition; see
    /// [`CpuBackend::scaled`], which takes any number).
    pub fn with_scaling(mut self, scaling: InputScaling) -> Self {
        self.scaling = scaling.into();
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

    /// Scores the frames submitted through [`Backend`] on `pool`: each submission hands the
    /// pair to a worker with its planes, copied, or, for host rows with a
    /// [`Hold`](crate::video::frame::Hold), kept mapped and converted by the worker
    /// ([`Backend::defers_host_rows`]; chroma then comes as buffer components,
    /// [`Backend::reads_components`]), so that the submitting (streaming) thread does no
    /// per-pixel work; up to `2 * pool.threads() + 1` frames are in flight
    /// ([`Backend::max_in_flight`]) and [`Backend::collect_set`] returns them in submission order. A frame's motion reads the
    /// previous submitted reference, so every value equals the one-thread result. The
    /// backend keeps `pool` alive; its threads stop when the last holder drops it.
    ///
    /// The backend's own extractors go to the first worker; each further worker that scores
    /// a frame makes its own the first time (their scratch, measured at 8 bits: about 45 MB at
    /// 1920x1080, 170 MB at 3840x2160), and each frame in flight holds its planes: a copy, or
    /// the held buffer until a worker has converted it.
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

    fn max_in_flight(&self) -> usize {
        self.parallel.as_ref().map_or(1, |p| p.in_flight())
    }

    fn reads_components(&self) -> bool {
        // On a pool, an unscaled pair: the workers convert chroma from the buffers' layouts.
        self.parallel.is_some() && self.scaling.renditions.len() == 1 && self.scaling.is_identity()
    }

    fn defers_host_rows(&self) -> bool {
        self.parallel.is_some()
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

    fn renditions(&self) -> usize {
        self.scaling.renditions.len().max(1)
    }

    fn submit_set(&mut self, set: FrameSet<'_>) -> Result<(), EngineError> {
        set.check_slots(self.scaling.renditions.len())
            .map_err(|message| EngineError::Backend {
                backend: "cpu",
                message,
            })?;
        if self.parallel.is_some() {
            return self.submit_pool(set);
        }
        let features = self.extract_here(set)?;
        self.done.push_back(features);
        Ok(())
    }

    fn collect_set(&mut self, wait: bool) -> Result<Option<SetFeatures>, EngineError> {
        match self.parallel.as_mut() {
            Some(p) => p.collect(wait),
            None => Ok(self.done.pop_front()),
        }
    }
}

impl CpuBackend {
    /// [`Backend::submit_set`] on the calling thread: every stream converted and scaled
    /// into the backend's buffers (the reference once), then every instance.
    fn extract_here(&mut self, set: FrameSet<'_>) -> Result<SetFeatures, EngineError> {
        let mut buffers = std::mem::take(&mut self.buffers);
        let result = (|| {
            let plan = &self.plan;
            let (ref_bufs, bufs, scratch) = buffers.split(set.renditions.len());
            let (reference, reference_chroma) = stream_planes(
                plan,
                &set.reference,
                set.reference_chroma,
                self.scaling.reference.as_deref(),
                ref_bufs,
                scratch,
            )?;
            let mut renditions = Vec::with_capacity(set.renditions.len());
            for (r, b) in set.renditions.iter().zip(bufs.iter_mut()) {
                let scaler = self.scaling.rendition(r.rendition).map(|s| &**s);
                let (luma, chroma) = stream_planes(plan, &r.luma, r.chroma, scaler, b, scratch)?;
                renditions.push(RenditionPlanes {
                    rendition: r.rendition,
                    luma,
                    chroma,
                    full: r.full,
                });
            }
            self.extract_planes(reference, reference_chroma, renditions)
        })();
        self.buffers = buffers;
        result
    }

    /// One set's values from its planes at the scoring size, on the calling thread, against
    /// the previous references this backend keeps (and the previous distorted plane, with
    /// one rendition); then keeps this set's.
    fn extract_planes(
        &mut self,
        reference: LumaPlane<'_>,
        reference_chroma: Option<[LumaPlane<'_>; 2]>,
        renditions: Vec<RenditionPlanes<'_>>,
    ) -> Result<SetFeatures, EngineError> {
        let plan = &self.plan;
        let ex = match &mut self.ex {
            Some(ex) => ex,
            None => self.ex.insert(Extractors::new(plan)?),
        };
        let (w, h, bpc) = plan.geometry.triple();
        let keeps_distorted = plan.keeps_distorted();
        // Kept after the set (whose planes borrow the kept buffers) is gone.
        let distorted = match renditions.as_slice() {
            [r] if keeps_distorted => Some(r.luma),
            _ => None,
        };
        let set = SetPlanes {
            prev: (self.kept >= 1)
                .then(|| LumaPlane::packed(&self.prev_ref, w, h, bpc))
                .flatten(),
            prev2: (self.kept >= 2)
                .then(|| LumaPlane::packed(&self.prev2_ref, w, h, bpc))
                .flatten(),
            prev_dis: (keeps_distorted && self.kept >= 1)
                .then(|| LumaPlane::packed(&self.prev_dis, w, h, bpc))
                .flatten(),
            reference,
            reference_chroma,
            renditions,
        };
        let features = ex.extract_set(plan, &set, false)?;
        drop(set);
        // The previous reference becomes the one two back; this one the previous.
        std::mem::swap(&mut self.prev_ref, &mut self.prev2_ref);
        keep_reference(&mut self.prev_ref, &reference, w, h);
        if let Some(d) = distorted {
            keep_reference(&mut self.prev_dis, &d, w, h);
        }
        self.kept = (self.kept + 1).min(2);
        Ok(features)
    }

    /// [`Backend::submit_set`] on a pool: the reference converted and scaled here when it
    /// is scaled (the next set's motion reads it), so is a pair's scaled rendition then or
    /// when an instance reads the previous distorted frame; every other rendition is copied
    /// and scaled by the worker.
    fn submit_pool(&mut self, set: FrameSet<'_>) -> Result<(), EngineError> {
        let Some(p) = self.parallel.as_mut() else {
            return Err(EngineError::Backend {
                backend: "cpu",
                message: "internal: no pool".into(),
            });
        };
        let plan = &self.plan;
        let scaling = &self.scaling;
        let scale_here = scaling.renditions.len() == 1
            && (scaling.reference.is_some() || plan.keeps_distorted());
        let mut buffers = std::mem::take(&mut self.buffers);
        let result = (|| {
            let (ref_bufs, bufs, scratch) = buffers.split(set.renditions.len());
            // Planes scaled here, handed over as packed planes.
            let mut here = Vec::new();
            let reference = match scaling.reference.as_deref() {
                Some(s) => {
                    let (l, c) = stream_planes(
                        plan,
                        &set.reference,
                        set.reference_chroma,
                        Some(s),
                        ref_bufs,
                        scratch,
                    )?;
                    Some((LumaInput::Packed(l), c.map(FrameChroma::Packed)))
                }
                None => None,
            };
            for (r, b) in set.renditions.iter().zip(bufs.iter_mut()) {
                let s = scaling.rendition(r.rendition).filter(|_| scale_here);
                here.push(match s {
                    Some(s) => {
                        let (l, c) = stream_planes(plan, &r.luma, r.chroma, Some(s), b, scratch)?;
                        Some((LumaInput::Packed(l), c.map(FrameChroma::Packed)))
                    }
                    None => None,
                });
            }
            let reference = match &reference {
                Some((l, c)) => StreamInput {
                    luma: l,
                    chroma: *c,
                },
                None => StreamInput {
                    luma: &set.reference,
                    chroma: set.reference_chroma,
                },
            };
            let renditions: Vec<RenditionInput> = set
                .renditions
                .iter()
                .zip(&here)
                .map(|(r, h)| match h {
                    Some((l, c)) => RenditionInput {
                        rendition: r.rendition,
                        stream: StreamInput {
                            luma: l,
                            chroma: *c,
                        },
                        full: r.full,
                        scale: None,
                    },
                    None => RenditionInput {
                        rendition: r.rendition,
                        stream: StreamInput {
                            luma: &r.luma,
                            chroma: r.chroma,
                        },
                        full: r.full,
                        scale: scaling.rendition(r.rendition).cloned(),
                    },
                })
                .collect();
            p.submit_set(plan, reference, &renditions)
        })();
        self.buffers = buffers;
        result
    }
}

impl CpuBackend {
    /// Computes one frame pair's features at once, on the calling thread (the motion history
    /// is this method's own, apart from frames submitted through [`Backend`] to a pool).
    /// The planes are at the scoring size (not scaled).
    ///
    /// Errors: [`EngineError::Feature`] for planes of another geometry, an extractor's error.
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
        let rendition = RenditionPlanes {
            rendition: 0,
            luma: *distorted,
            chroma: chroma.map(|c| c.distorted),
            full,
        };
        let features =
            self.extract_planes(*reference, chroma.map(|c| c.reference), vec![rendition])?;
        features
            .into_iter()
            .next()
            .map(|(_, raw)| raw)
            .ok_or_else(|| EngineError::Backend {
                backend: "cpu",
                message: "internal: a pair without its values".into(),
            })
    }
}
