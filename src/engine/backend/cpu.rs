//! The CPU backend: libvmaf's integer feature extractors in plain Rust, bit-exact. It runs
//! where no GPU is usable and is the oracle the GPU backend is tested against.
//!
//! Without a pool ([`CpuBackend::new`]) a frame is scored in the calling thread during
//! [`Backend::submit_set`]. With one ([`CpuBackend::with_pool`], the element's `threads`
//! property) frames are copied and scored in parallel on the pool's threads, several in
//! flight, and collected in submission order; each frame's motion reads the previous
//! submitted reference, so every value is the same as on one thread.
//!
//! A ladder backend ([`CpuBackend::for_ladder`], [`crate::engine::frame_set`]) scores one
//! reference frame against several renditions per submission: the reference is converted
//! (and scaled) once, motion is computed once and copied to every rendition, and every other
//! instance runs [`CpuExtractor::extract_ladder`] over the renditions, sharing its
//! reference-only work. On a pool one ladder frame is one job.

use std::collections::VecDeque;
use std::sync::Arc;

use super::cpu_frame::{
    device_refused, host_plane, keep_reference, packed_chroma, rendition_planes, scale_into,
    Extractors, FramePlan, RenditionBuffers, Scaled,
};
use super::cpu_parallel as parallel;
pub use crate::cpu::{threads_per_core, CpuPool, PoolError};
use crate::engine::backend::api::Backend;
use crate::engine::error::EngineError;
use crate::engine::frame_set::{FrameSet, PairChroma, SetFeatures};
use crate::engine::model::Model;
use crate::engine::plan::{PlanError, ScorePlan};
use crate::engine::scale::cpu::Scratch;
use crate::engine::scale::{InputScaling, LadderScaling};
use crate::features::adm::AdmConfig;
use crate::features::vif::VifConfig;
use crate::features::{vmaf_layout, Geometry, Layout, RawFeatures};
use crate::video::colour::YuvToRgb;
use crate::video::frame::{
    ChromaInput, ChromaPair, ComponentInput, FeatureError, LumaInput, LumaPlane,
};

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
    /// (`speed_temporal`; valid with `kept >= 1`).
    prev_dis: Vec<u16>,
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
    /// A ladder backend's scalers ([`CpuBackend::for_ladder`]); `None` for a pair backend.
    ladder: Option<Arc<LadderScaling>>,
    /// Ladder frames scored on the calling thread, not collected yet.
    done_ladder: VecDeque<SetFeatures>,
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
            prev_dis: Vec::new(),
            kept: 0,
            scratch_ref: Vec::new(),
            scratch_dis: Vec::new(),
            done: VecDeque::with_capacity(2),
            parallel: None,
            scaling: InputScaling::default(),
            scaled: Scaled::default(),
            ladder: None,
            done_ladder: VecDeque::new(),
        })
    }

    /// A ladder backend ([`crate::engine::frame_set`]): one reference against
    /// `scaling.renditions.len()` rendition slots ([`Backend::renditions`]), each rendition
    /// scaled by its scaler (if any) to `geometry`'s size, the reference by
    /// `scaling.reference` (if any); on a pool ([`CpuBackend::with_pool`]) ladder frames are
    /// scored in parallel, one ladder frame per worker job, several in flight.
    ///
    /// A set of one rendition (a pair) is scored as any other set;
    /// [`CpuBackend::with_scaling`] does not apply to it. Chroma is taken as
    /// [`FrameChroma::Packed`] planes at the streams' own chroma sizes. Without renditions
    /// ([`Backend::renditions`] 0) it scores nothing ([`crate::engine::Scorer`] refuses
    /// it).
    ///
    /// Errors: as [`CpuBackend::new`]; [`FeatureError::Unsupported`] for a layout with an
    /// instance that reads the previous distorted frame (`speed_temporal`: its history could
    /// not be shared by the renditions).
    pub fn for_ladder(
        layout: &Arc<Layout>,
        geometry: Geometry,
        scaling: LadderScaling,
    ) -> Result<Self, FeatureError> {
        if let Some(i) = layout.previous_distorted_reader() {
            return Err(FeatureError::Unsupported {
                feature: i.feature().name(),
                reason: "reads the previous distorted frame, which a ladder does not keep: \
                         not scored in a ladder"
                    .to_owned(),
            });
        }
        let mut backend = Self::new(layout, geometry)?;
        backend.ladder = Some(Arc::new(scaling));
        Ok(backend)
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
        // On a pool, unscaled pairs: the workers convert chroma from the buffers' layouts.
        self.parallel.is_some() && self.ladder.is_none() && self.scaling.is_identity()
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
        self.done_ladder.clear();
        if let Some(p) = self.parallel.as_mut() {
            p.reset();
        }
    }
    fn renditions(&self) -> usize {
        self.ladder
            .as_ref()
            .map_or(1, |l| l.renditions.len().max(1))
    }

    fn submit_set(&mut self, set: FrameSet<'_>) -> Result<(), EngineError> {
        if self.ladder.is_some() {
            return self.ladder_submit(set);
        }
        let Some(pair) = set.into_pair() else {
            return Err(EngineError::Backend {
                backend: "cpu",
                message: "internal: a pair backend takes one rendition per frame set".into(),
            });
        };
        let (r, d, full) = (pair.reference, pair.distorted, pair.full);
        match pair.chroma {
            PairChroma::None => self.pair_frame(r, d, None, full),
            PairChroma::Packed(c) => self.pair_frame(r, d, Some(c), full),
            PairChroma::Components(c) => self.pair_components(r, d, Some(c), full),
            PairChroma::Mismatched => Err(EngineError::Backend {
                backend: "cpu",
                message: "chroma on one side of the pair only, or in two forms".into(),
            }),
        }
    }

    fn collect_set(&mut self, wait: bool) -> Result<Option<SetFeatures>, EngineError> {
        if self.ladder.is_some() {
            return self.ladder_collect(wait);
        }
        Ok(self.pair_collect(wait)?.map(|raw| vec![(0, raw)]))
    }
}

impl CpuBackend {
    fn pair_frame(
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

    fn pair_collect(&mut self, wait: bool) -> Result<Option<RawFeatures>, EngineError> {
        match self.parallel.as_mut() {
            Some(p) => p.collect(wait),
            None => Ok(self.done.pop_front()),
        }
    }

    fn pair_components(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaInput<'_>>,
        full: bool,
    ) -> Result<(), EngineError> {
        if self.reads_components() {
            if let Some(p) = self.parallel.as_mut() {
                return p.submit_components(
                    &self.plan,
                    &reference,
                    &distorted,
                    chroma.as_ref(),
                    full,
                );
            }
        }
        // Otherwise chroma is packed here, as the element packs it for submit_frame.
        let Some(c) = chroma else {
            return self.pair_frame(reference, distorted, None, full);
        };
        let mut packed: [[Vec<u16>; 2]; 2] = Default::default();
        let mut sizes = [(0, 0); 2];
        for (k, comps) in [&c.reference, &c.distorted].into_iter().enumerate() {
            for (comp, out) in comps.iter().zip(packed[k].iter_mut()) {
                let ComponentInput::Host(h) = comp else {
                    return Err(device_refused());
                };
                h.to_packed(out);
                sizes[k] = (h.width, h.height);
            }
        }
        let bpc = self.plan.geometry.bpc;
        fn plane(
            v: &[u16],
            (w, h): (usize, usize),
            bpc: u32,
        ) -> Result<LumaPlane<'_>, EngineError> {
            LumaPlane::packed(v, w, h, bpc).ok_or_else(|| EngineError::Backend {
                backend: "cpu",
                message: "internal: a chroma plane smaller than its size".into(),
            })
        }
        let pair = ChromaPair {
            reference: [
                plane(&packed[0][0], sizes[0], bpc)?,
                plane(&packed[0][1], sizes[0], bpc)?,
            ],
            distorted: [
                plane(&packed[1][0], sizes[1], bpc)?,
                plane(&packed[1][1], sizes[1], bpc)?,
            ],
        };
        self.pair_frame(reference, distorted, Some(pair), full)
    }

    fn ladder_submit(&mut self, frame: FrameSet<'_>) -> Result<(), EngineError> {
        let Some(scaling) = self.ladder.clone() else {
            return Err(EngineError::Backend {
                backend: "cpu",
                message: "internal: not a ladder backend".into(),
            });
        };
        for r in &frame.renditions {
            if r.rendition >= scaling.renditions.len() {
                return Err(EngineError::Backend {
                    backend: "cpu",
                    message: format!(
                        "internal: rendition slot {} of a ladder of {}",
                        r.rendition,
                        scaling.renditions.len()
                    ),
                });
            }
        }
        if self.parallel.is_some() {
            return self.submit_ladder_pool(frame, &scaling);
        }
        let features = self.extract_ladder_here(frame, &scaling)?;
        self.done_ladder.push_back(features);
        Ok(())
    }

    fn ladder_collect(&mut self, wait: bool) -> Result<Option<SetFeatures>, EngineError> {
        match self.parallel.as_mut() {
            Some(p) => p.collect_ladder(wait),
            None => Ok(self.done_ladder.pop_front()),
        }
    }
}

impl CpuBackend {
    /// The reference of a ladder frame and its chroma, converted (into `host`) and scaled by
    /// the reference's scaler into `luma_r`, `c0`, `c1` (as they are without one).
    #[allow(clippy::too_many_arguments)]
    fn ladder_reference<'s>(
        plan: &FramePlan,
        scaling: &LadderScaling,
        reference: &'s LumaInput<'_>,
        chroma: Option<[LumaPlane<'s>; 2]>,
        host: &'s mut Vec<u16>,
        [luma_r, c0, c1]: [&'s mut Vec<u16>; 3],
        scratch: &mut Scratch,
    ) -> Result<(LumaPlane<'s>, Option<[LumaPlane<'s>; 2]>), EngineError> {
        let rs = scaling.reference.as_deref();
        let r = host_plane(plan, reference, host)?;
        let r = scale_into(rs.map(|s| &s.luma), r, scratch, luma_r)?;
        let rc = rs.and_then(|s| s.chroma.as_ref());
        let chroma = match chroma {
            Some([p0, p1]) => Some([
                scale_into(rc, p0, scratch, c0)?,
                scale_into(rc, p1, scratch, c1)?,
            ]),
            None => None,
        };
        Ok((r, chroma))
    }

    /// [`Backend::submit_set`] on the calling thread: the reference converted and scaled
    /// once, each rendition into its buffers, then every instance.
    fn extract_ladder_here(
        &mut self,
        frame: FrameSet<'_>,
        scaling: &LadderScaling,
    ) -> Result<SetFeatures, EngineError> {
        let plan = &self.plan;
        let ex = match &mut self.ex {
            Some(ex) => ex,
            None => self.ex.insert(Extractors::new(plan)?),
        };
        let mut buffers = std::mem::take(&mut ex.ladder);
        let mut scaled = std::mem::take(&mut self.scaled);
        let mut host_ref = std::mem::take(&mut self.scratch_ref);
        let (w, h, bpc) = plan.geometry.triple();
        let result = (|| {
            let ref_chroma = packed_chroma(frame.reference_chroma)?;
            let Scaled {
                luma: [luma_r, _],
                chroma: [[c0, c1], _],
                scratch,
            } = &mut scaled;
            let (r, rc) = Self::ladder_reference(
                plan,
                scaling,
                &frame.reference,
                ref_chroma,
                &mut host_ref,
                [luma_r, c0, c1],
                scratch,
            )?;
            if buffers.len() < frame.renditions.len() {
                buffers.resize_with(frame.renditions.len(), RenditionBuffers::default);
            }
            let mut planes = Vec::with_capacity(frame.renditions.len());
            for (f, b) in frame.renditions.iter().zip(buffers.iter_mut()) {
                let s = scaling.renditions.get(f.rendition).cloned().flatten();
                planes.push(rendition_planes(plan, f, s.as_deref(), b, scratch)?);
            }
            let prev = (self.kept >= 1)
                .then(|| LumaPlane::packed(&self.prev_ref, w, h, bpc))
                .flatten();
            let prev2 = (self.kept >= 2)
                .then(|| LumaPlane::packed(&self.prev2_ref, w, h, bpc))
                .flatten();
            let features = ex.extract_ladder(
                plan,
                prev.as_ref(),
                prev2.as_ref(),
                &r,
                rc.as_ref(),
                &planes,
                false,
            )?;
            // The previous reference becomes the one two back; this one the previous.
            std::mem::swap(&mut self.prev_ref, &mut self.prev2_ref);
            keep_reference(&mut self.prev_ref, &r, w, h);
            self.kept = (self.kept + 1).min(2);
            Ok(features)
        })();
        ex.ladder = buffers;
        self.scaled = scaled;
        self.scratch_ref = host_ref;
        result
    }

    /// [`Backend::submit_set`] on a pool: the reference converted (and scaled, since the
    /// next frame's motion reads it) here, the renditions copied and scaled by the worker.
    fn submit_ladder_pool(
        &mut self,
        frame: FrameSet<'_>,
        scaling: &Arc<LadderScaling>,
    ) -> Result<(), EngineError> {
        let Some(p) = self.parallel.as_mut() else {
            return Err(EngineError::Backend {
                backend: "cpu",
                message: "internal: no pool".into(),
            });
        };
        let ref_chroma = packed_chroma(frame.reference_chroma)?;
        let mut renditions = Vec::with_capacity(frame.renditions.len());
        for r in &frame.renditions {
            renditions.push((r.rendition, &r.luma, packed_chroma(r.chroma)?, r.full));
        }
        if scaling.reference.is_none() {
            return p.submit_ladder(
                &self.plan,
                &frame.reference,
                ref_chroma,
                &renditions,
                scaling,
            );
        }
        let mut scaled = std::mem::take(&mut self.scaled);
        let mut host_ref = std::mem::take(&mut self.scratch_ref);
        let Scaled {
            luma: [luma_r, _],
            chroma: [[c0, c1], _],
            scratch,
        } = &mut scaled;
        let result = Self::ladder_reference(
            &self.plan,
            scaling,
            &frame.reference,
            ref_chroma,
            &mut host_ref,
            [luma_r, c0, c1],
            scratch,
        )
        .and_then(|(r, rc)| {
            p.submit_ladder(&self.plan, &LumaInput::Packed(r), rc, &renditions, scaling)
        });
        self.scaled = scaled;
        self.scratch_ref = host_ref;
        result
    }
}

impl CpuBackend {
    /// [`Backend::submit_set`] of planes at the scoring size.
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

    /// [`Backend::submit_set`] with the streams of [`CpuBackend::with_scaling`] scaled to
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
        // So is a scaled distorted stream whose previous frame an instance reads.
        let keeps_distorted = self.plan.keeps_distorted();
        if let (Some(p), None, Some(d), false) = (
            self.parallel.as_mut(),
            self.scaling.reference.as_ref(),
            self.scaling.distorted.as_ref(),
            keeps_distorted,
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
        let keeps_distorted = plan.keeps_distorted();
        let prev_dis = (keeps_distorted && self.kept >= 1)
            .then(|| LumaPlane::packed(&self.prev_dis, w, h, bpc))
            .flatten();
        let raw = ex.extract(
            plan,
            prev.as_ref(),
            prev2.as_ref(),
            prev_dis.as_ref(),
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
        if keeps_distorted {
            keep_reference(&mut self.prev_dis, distorted, w, h);
        }
        self.kept = (self.kept + 1).min(2);
        Ok(raw)
    }
}
