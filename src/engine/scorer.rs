//! Turns frame pairs into per-frame VMAF scores: runs a backend's feature extractors, applies
//! libvmaf 3.x's motion post-processing (which needs the next frame, so each frame's scores
//! are complete when the following pair arrives or at [`Scorer::finish`]) and the model.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::engine::ladder::{LadderFeatures, LadderFrame};
use crate::engine::model::Model;
use crate::engine::model_set::NamedModel;
use crate::engine::pool::Pool;
use crate::features::{FeatureSet, Instance, Layout, LayoutError, Window, MAX_AHEAD, MAX_BEHIND};
pub use crate::features::{RawFeatures, MAX_OPTION_SETS};
use crate::video::frame::{ChromaInput, ChromaPair, FeatureError, LumaInput, LumaPlane};

/// Why a frame pair could not be scored.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A feature extractor refused the frames.
    #[error(transparent)]
    Feature(#[from] FeatureError),
    /// The models and features cannot be planned (options, limits).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The backend failed (device fault, out of memory, ...).
    #[error("{backend} backend: {message}")]
    Backend {
        /// Backend name.
        backend: &'static str,
        /// What failed.
        message: String,
    },
}

/// A feature backend: the CPU reference implementation or the GPU.
///
/// Work is submitted frame by frame and collected in submission order, so a backend may keep
/// several frames in flight (upload, kernels and readback of different frames overlapping).
pub trait Backend: Send {
    /// Short name for logs and messages (`"cpu"`, `"cuda"`).
    fn name(&self) -> &'static str;
    /// Starts the motion SAD score against the previous submitted reference (0 for the first
    /// frame after creation or [`Backend::reset`]) and, when `full`, VIF and ADM. Host planes
    /// are read only during the call; a [`LumaInput::Device`] plane's `hold` is kept until
    /// the kernels reading it have finished. May block while [`Backend::max_in_flight`]
    /// frames are in flight.
    ///
    /// Errors: [`EngineError::Feature`] for planes of another geometry, or a
    /// [`LumaInput::Device`] plane given to a backend without [`Backend::reads_device`];
    /// [`EngineError::Backend`] for device faults.
    fn submit_input(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        full: bool,
    ) -> Result<(), EngineError>;
    /// [`Backend::submit_input`] with packed `u16` planes.
    fn submit(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        full: bool,
    ) -> Result<(), EngineError> {
        self.submit_input(
            LumaInput::Packed(*reference),
            LumaInput::Packed(*distorted),
            full,
        )
    }
    /// [`Backend::submit_input`] with the frames' chroma planes, for the extra metrics that
    /// read them (`psnr_cb`, `psnr_cr`). Backends without extra metrics ignore `chroma`.
    ///
    /// Errors: as [`Backend::submit_input`].
    fn submit_frame(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaPair<'_>>,
        full: bool,
    ) -> Result<(), EngineError> {
        let _ = chroma;
        self.submit_input(reference, distorted, full)
    }
    /// [`Backend::submit_input`] with the frames' chroma components in their buffers' own
    /// layouts (host rows or device memory), for a backend that unpacks them itself (see
    /// [`Backend::reads_components`]). `None`: the frames have no chroma (GRAY8) or no metric
    /// reads it.
    ///
    /// Errors: as [`Backend::submit_input`]; the default refuses `Some` chroma with
    /// [`EngineError::Backend`] (such backends take [`Backend::submit_frame`]).
    fn submit_components(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaInput<'_>>,
        full: bool,
    ) -> Result<(), EngineError> {
        if chroma.is_some() {
            return Err(EngineError::Backend {
                backend: self.name(),
                message: "this backend takes packed chroma planes, not buffer components".into(),
            });
        }
        self.submit_input(reference, distorted, full)
    }
    /// Whether chroma goes through [`Backend::submit_components`] (the CUDA backend: unpacked
    /// on the GPU) rather than packed on the host for [`Backend::submit_frame`].
    fn reads_components(&self) -> bool {
        false
    }
    /// Whether [`LumaInput::Device`] planes are accepted (the GPU backend).
    fn reads_device(&self) -> bool {
        false
    }
    /// Whether the backend keeps host rows that carry a [`Hold`](crate::video::frame::Hold)
    /// past the submission and reads them later (the CPU backend on a pool, whose workers
    /// convert them), so that the caller should map frames with one. Without a hold, rows
    /// are copied before the submission returns.
    fn defers_host_rows(&self) -> bool {
        false
    }
    /// Features of the oldest submitted frame not yet collected. `wait == false`: `None` when
    /// that frame is not finished yet; `wait == true`: blocks until it is. `None` as well when
    /// nothing is in flight.
    fn collect(&mut self, wait: bool) -> Result<Option<RawFeatures>, EngineError>;
    /// Frames the scorer lets be in flight before it waits for the oldest.
    fn max_in_flight(&self) -> usize {
        1
    }
    /// Frames scored at the same time, for estimating when a frame handed over now will be
    /// done (a live pipeline's skip decision): the CPU backend's threads; 1 for a backend
    /// whose frames in flight go through one pipeline in turn (the default).
    fn parallel(&self) -> usize {
        1
    }
    /// Drops in-flight work and forgets the previous reference frame (after a flush or
    /// discontinuity).
    fn reset(&mut self);
    /// Rendition slots of a ladder backend (`CpuBackend::for_ladder`,
    /// `CudaBackend::new_ladder`); 0 (the default) for a pair backend, which takes
    /// [`Backend::submit_frame`] / [`Backend::submit_components`] only.
    fn ladder_size(&self) -> usize {
        0
    }
    /// Starts one reference frame against the renditions that have a frame at its time
    /// ([`crate::engine::ladder`]): the reference placed once, the reference-only instances
    /// (motion, against the previous submitted reference frame) computed once, every other
    /// instance on each rendition whose `full` is set. Renditions arrive at their own sizes and
    /// are scaled to the scoring size first. Collected with [`Backend::collect_ladder`], in
    /// submission order; [`Backend::max_in_flight`] counts ladder frames.
    ///
    /// Errors: as [`Backend::submit_input`]; the default (a pair backend) refuses with
    /// [`EngineError::Backend`].
    fn submit_ladder(&mut self, frame: LadderFrame<'_>) -> Result<(), EngineError> {
        let _ = frame;
        Err(EngineError::Backend {
            backend: self.name(),
            message: "internal: not a ladder backend".into(),
        })
    }
    /// The values of the oldest submitted ladder frame not yet collected: each submitted
    /// rendition's slot and raw values, in submission order (reference-only instances' values
    /// the same in every rendition; 0 for instances a rendition did not compute). `wait` as in
    /// [`Backend::collect`].
    ///
    /// Errors: as [`Backend::collect`]; the default refuses with [`EngineError::Backend`].
    fn collect_ladder(&mut self, wait: bool) -> Result<Option<LadderFeatures>, EngineError> {
        let _ = wait;
        Err(EngineError::Backend {
            backend: self.name(),
            message: "internal: not a ladder backend".into(),
        })
    }
}

/// Why a [`ScorePlan`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A model's options do not configure its feature.
    #[error("model '{model}': {reason}")]
    Options {
        /// The model's name.
        model: String,
        /// What is wrong.
        reason: String,
    },
    /// Too many values or option sets.
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// What a scorer computes and reports: the models (the first one's score is `vmaf`), the
/// extra metrics of the `features` property, and the feature instances both need, asked of
/// the registry ([`crate::features::REGISTRY`]).
#[derive(Debug, Clone)]
pub struct ScorePlan {
    /// The `model` list, loaded; at least one.
    pub models: Arc<[NamedModel]>,
    /// Extra metrics (`features` property).
    pub features: FeatureSet,
    /// The frames have chroma planes (`psnr_cb` / `psnr_cr` are reported, SSIMULACRA2 reads
    /// colour).
    pub chroma: bool,
    layout: Arc<Layout>,
    /// Per model: the index in [`ScorePlan::names`] of each of its features, in model order.
    model_inputs: Vec<Vec<usize>>,
    /// Per instance of the layout: how many late outputs it has (they follow the raw values
    /// in `names`, instance after instance).
    late: Vec<usize>,
    names: Vec<String>,
}

impl ScorePlan {
    /// The instances the models (each with its own options) and `features` need, deduplicated
    /// by feature and options, in log order; `chroma`: the frames have chroma planes.
    ///
    /// Errors: [`PlanError`] for options a feature refuses, or too many option sets / values.
    pub fn new(
        models: Arc<[NamedModel]>,
        features: FeatureSet,
        chroma: bool,
    ) -> Result<Self, PlanError> {
        let mut instances: Vec<Arc<dyn Instance>> = Vec::new();
        // An instance already there with the same feature and options computes it; one that
        // can absorb it computes both (Instance::absorb); else it is added.
        let mut add = |inst: Arc<dyn Instance>| -> String {
            let key = inst.key();
            let known = instances
                .iter()
                .any(|i| i.feature().name() == inst.feature().name() && i.key() == key);
            if !known {
                match instances
                    .iter_mut()
                    .find_map(|i| i.absorb(&*inst).map(|m| (i, m)))
                {
                    Some((slot, merged)) => *slot = merged,
                    None => instances.push(inst),
                }
            }
            key
        };
        // Per model: (unsuffixed output, key) of each input.
        let mut resolved: Vec<Vec<String>> = Vec::with_capacity(models.len());
        for m in models.iter() {
            let by_feature = m
                .model
                .instances(chroma)
                .map_err(|reason| PlanError::Options {
                    model: m.name.clone(),
                    reason,
                })?;
            let mut names = Vec::with_capacity(m.model.features.len());
            for input in &m.model.features {
                let key = by_feature
                    .iter()
                    .find(|i| i.feature().name() == input.feature.name())
                    .map(|i| add(i.clone()))
                    .unwrap_or_default();
                names.push(format!("{}{key}", input.output));
            }
            resolved.push(names);
        }
        for f in features.iter() {
            let inst = f
                .configure(&crate::features::Options::new(), chroma)
                .map_err(|reason| PlanError::Options {
                    model: f.name().to_owned(),
                    reason,
                })?;
            add(inst);
        }
        let layout = Layout::new(instances)?;
        let mut names: Vec<String> = layout.names().to_vec();
        let mut late = Vec::with_capacity(layout.instances().len());
        for inst in layout.instances() {
            let outs = inst.late_outputs();
            late.push(outs.len());
            names.extend(outs);
        }
        let model_inputs = resolved
            .iter()
            .map(|inputs| {
                inputs
                    .iter()
                    .map(|n| names.iter().position(|x| x == n).unwrap_or(usize::MAX))
                    .collect()
            })
            .collect();
        for m in models.iter().skip(1).chain(models.first()) {
            names.extend(m.score_names());
        }
        Ok(Self {
            models,
            features,
            chroma,
            layout,
            model_inputs,
            late,
            names,
        })
    }

    /// One plain model, named `vmaf`, no extra metrics, no chroma.
    ///
    /// Errors: as [`ScorePlan::new`] (only for a model with options its features refuse).
    pub fn single(model: &Model) -> Result<Self, PlanError> {
        Self::for_model(model, FeatureSet::default(), false)
    }

    /// One plain model, named `vmaf`, with the extra metrics of `features`; `chroma` as in
    /// [`ScorePlan::new`].
    ///
    /// Errors: as [`ScorePlan::new`].
    pub fn for_model(model: &Model, features: FeatureSet, chroma: bool) -> Result<Self, PlanError> {
        let models: Arc<[NamedModel]> = vec![NamedModel {
            name: "vmaf".into(),
            model: model.clone(),
            bootstrap: Vec::new(),
        }]
        .into();
        Self::new(models, features, chroma)
    }

    /// The feature instances, in log order, and where their values lie in a frame's
    /// [`RawFeatures`]: what a backend is made for.
    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// Metric names in log order: the instances' outputs in [`Layout`] order (PSNR; ADM,
    /// motion SAD and VIF of the first option set; ADM and VIF of further sets, with libvmaf's
    /// option suffixes such as `_egl_1`; `float_ssim`, `float_ms_ssim`, `ssimulacra2`), their
    /// late outputs (`integer_motion2`, `integer_motion3`), the scores of models 2.. (see
    /// [`NamedModel::score_names`]), then the first model's, ending with `vmaf`.
    pub fn names(&self) -> Vec<String> {
        self.names.clone()
    }
}

/// One frame's scores: `values[i]` is the metric `names[i]` (libvmaf names, `vmaf` last;
/// see [`ScorePlan::names`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FrameScores {
    /// Frame index from the start of the stream (libvmaf's `frameNum`).
    pub index: u64,
    /// Metric names, shared by all frames of a stream.
    pub names: Arc<[String]>,
    /// Values, same order as `names`.
    pub values: Vec<f64>,
}

impl FrameScores {
    /// The VMAF score, in the model's clip range (0..100 for the built-in models).
    pub fn vmaf(&self) -> f64 {
        self.values.last().copied().unwrap_or(f64::NAN)
    }

    /// The value of metric `name`, if this stream has it.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| self.values[i])
    }

    /// `(name, value)` pairs in log order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.names
            .iter()
            .map(String::as_str)
            .zip(self.values.iter().copied())
    }
}

/// One frame leaving the scorer, in input order, with the caller's tag.
#[derive(Debug)]
pub struct Scored<T> {
    /// Frame index.
    pub index: u64,
    /// What the caller attached in [`Scorer::push`] (e.g. the distorted buffer).
    pub tag: T,
    /// Scores, or `None` for frames that subsampling skips.
    pub scores: Option<FrameScores>,
}

/// A submitted frame whose features are not collected yet.
struct Queued<T> {
    index: u64,
    tag: T,
    full: bool,
    /// First frame of a run (stream start, or after [`Scorer::skip`]): no motion history.
    first: bool,
    /// Position in its run (0: `first`).
    position: u64,
    /// Unpaired tags that arrived after this frame and leave right after it.
    trailing: Vec<T>,
}

/// A frame with features, waiting for the next frame's motion SAD.
struct Pending<T> {
    index: u64,
    tag: T,
    raw: RawFeatures,
    full: bool,
    first: bool,
    /// Position in its run (0: `first`).
    position: u64,
    trailing: Vec<T>,
}

/// Scores a stream of frame pairs with the models of a [`ScorePlan`] on one backend.
pub struct Scorer<T> {
    backend: Box<dyn Backend>,
    plan: ScorePlan,
    subsample: u64,
    names: Arc<[String]>,
    next_index: u64,
    queue: VecDeque<Queued<T>>,
    /// Frames with features, waiting for the next frames' (at most `ahead` of them, fewer
    /// only at the end of a run).
    pending: VecDeque<Pending<T>>,
    /// The raw values of the last completed frames of the current run, newest last (at most
    /// `behind`).
    history: VecDeque<RawFeatures>,
    /// Frames after / before one that the plan's late outputs read ([`Instance::window`]).
    ahead: usize,
    behind: usize,
    /// The run position of the next pushed frame.
    next_position: u64,
    pool: Pool,
    /// The next pushed frame starts a new run (set by [`Scorer::skip`]).
    restart: bool,
}

impl<T> Scorer<T> {
    /// `subsample` >= 1: VIF, ADM and VMAF are computed for every `subsample`-th frame
    /// (motion for every frame), as libvmaf's `--subsample`.
    ///
    /// Errors: as [`ScorePlan::single`].
    pub fn new(
        backend: Box<dyn Backend>,
        model: Arc<Model>,
        subsample: u32,
    ) -> Result<Self, PlanError> {
        Ok(Self::with_plan(
            backend,
            ScorePlan::single(&model)?,
            subsample,
        ))
    }

    /// A scorer for every model and metric of `plan`. The backend must compute the plan's
    /// [`ScorePlan::layout`] (the CPU or CUDA backend made for it); `subsample` as in
    /// [`Scorer::new`].
    pub fn with_plan(backend: Box<dyn Backend>, plan: ScorePlan, subsample: u32) -> Self {
        let names: Arc<[String]> = plan.names().into();
        let (behind, ahead) = plan
            .layout()
            .instances()
            .iter()
            .filter(|i| !i.late_outputs().is_empty())
            .map(|i| i.window())
            .fold((0, 1), |(b, a), (wb, wa)| (b.max(wb), a.max(wa)));
        let (behind, ahead) = (behind.min(MAX_BEHIND), ahead.clamp(1, MAX_AHEAD));
        Self {
            backend,
            plan,
            subsample: u64::from(subsample.max(1)),
            pool: Pool::new(names.clone()),
            names,
            next_index: 0,
            queue: VecDeque::new(),
            pending: VecDeque::with_capacity(ahead + 1),
            history: VecDeque::with_capacity(behind + 1),
            ahead,
            behind,
            next_position: 0,
            restart: false,
        }
    }

    /// What this scorer computes.
    pub fn plan(&self) -> &ScorePlan {
        &self.plan
    }

    /// Backend name.
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Whether the backend reads [`LumaInput::Device`] planes in place.
    pub fn reads_device(&self) -> bool {
        self.backend.reads_device()
    }

    /// Whether host rows are best given with a [`Hold`](crate::video::frame::Hold)
    /// ([`Backend::defers_host_rows`]).
    pub fn defers_host_rows(&self) -> bool {
        self.backend.defers_host_rows()
    }

    /// Metric names in log order.
    pub fn names(&self) -> &Arc<[String]> {
        &self.names
    }

    /// Pooled statistics of the frames scored so far.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Number of frame pairs pushed.
    pub fn frames_pushed(&self) -> u64 {
        self.next_index
    }

    /// Scores the next pair. Returns the frames completed by it, in order (a frame is
    /// complete when the next frame's features are in, since its motion2 needs them), each
    /// followed by the unpaired tags queued behind it; empty while the pipeline fills.
    pub fn push(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        tag: T,
    ) -> Result<Vec<Scored<T>>, EngineError> {
        self.push_input(
            LumaInput::Packed(*reference),
            LumaInput::Packed(*distorted),
            tag,
        )
    }

    /// [`Scorer::push`] with planes in any [`LumaInput`] form the backend accepts
    /// ([`Scorer::reads_device`]).
    pub fn push_input(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        tag: T,
    ) -> Result<Vec<Scored<T>>, EngineError> {
        self.push_frame(reference, distorted, None, tag)
    }

    /// [`Scorer::push_input`] with the chroma planes `psnr_cb` / `psnr_cr` read (see
    /// [`Backend::submit_frame`]).
    pub fn push_frame(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaPair<'_>>,
        tag: T,
    ) -> Result<Vec<Scored<T>>, EngineError> {
        self.push_with(tag, |b, full| {
            b.submit_frame(reference, distorted, chroma, full)
        })
    }

    /// [`Scorer::push_input`] with the chroma components in their buffers' layouts (see
    /// [`Backend::submit_components`]; for backends with [`Backend::reads_components`]).
    pub fn push_components(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaInput<'_>>,
        tag: T,
    ) -> Result<Vec<Scored<T>>, EngineError> {
        self.push_with(tag, |b, full| {
            b.submit_components(reference, distorted, chroma, full)
        })
    }

    /// Whether the backend takes chroma as buffer components ([`Scorer::push_components`]).
    pub fn reads_components(&self) -> bool {
        self.backend.reads_components()
    }

    /// Submits one frame through `submit(backend, full)` and collects what is finished.
    fn push_with(
        &mut self,
        tag: T,
        submit: impl FnOnce(&mut dyn Backend, bool) -> Result<(), EngineError>,
    ) -> Result<Vec<Scored<T>>, EngineError> {
        let index = self.next_index;
        let full = index.is_multiple_of(self.subsample);
        submit(self.backend.as_mut(), full)?;
        self.next_index += 1;
        let first = index == 0 || std::mem::take(&mut self.restart);
        let position = if first { 0 } else { self.next_position };
        self.next_position = position + 1;
        self.queue.push_back(Queued {
            index,
            tag,
            full,
            first,
            position,
            trailing: Vec::new(),
        });
        let mut done = Vec::new();
        loop {
            let must_wait = self.queue.len() > self.backend.max_in_flight().max(1) - 1;
            if self.queue.is_empty() {
                break;
            }
            match self.backend.collect(must_wait)? {
                Some(raw) => self.accept(raw, &mut done),
                None if must_wait => {
                    return Err(EngineError::Backend {
                        backend: self.backend.name(),
                        message: "a submitted frame was lost".into(),
                    })
                }
                None => break,
            }
        }
        Ok(done)
    }

    /// A collected frame's features: joins the pending frames, completing the oldest once
    /// the frames its late outputs read are in.
    fn accept(&mut self, raw: RawFeatures, done: &mut Vec<Scored<T>>) {
        let Some(q) = self.queue.pop_front() else {
            return;
        };
        if q.first {
            // A new run: the frames of the last one have nothing more to wait for.
            done.extend(self.take_pending());
        }
        self.pending.push_back(Pending {
            index: q.index,
            tag: q.tag,
            raw,
            full: q.full,
            first: q.first,
            position: q.position,
            trailing: q.trailing,
        });
        while self.pending.len() > self.ahead {
            done.extend(self.complete_front());
        }
    }

    /// Frames submitted to the backend whose features are not collected yet (a backend
    /// with several frames in flight: the GPU, or the CPU on a pool).
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    /// Frames the backend scores at the same time ([`Backend::parallel`]).
    pub fn parallelism(&self) -> usize {
        self.backend.parallel().max(1)
    }

    /// Collects the frames the backend has finished since the last push, without pushing
    /// (a live pipeline's scoring thread, idle while frames are in flight). Returns the
    /// frames completed by them, as [`Scorer::push`] does.
    ///
    /// Errors: a backend failure of a collected frame.
    pub fn poll(&mut self) -> Result<Vec<Scored<T>>, EngineError> {
        let mut done = Vec::new();
        while !self.queue.is_empty() {
            match self.backend.collect(false)? {
                Some(raw) => self.accept(raw, &mut done),
                None => break,
            }
        }
        Ok(done)
    }

    /// Queues a tag that has no partner frame (e.g. a distorted buffer whose reference never
    /// came) so that it leaves in order, after the frames pushed before it. Returned at once
    /// (with `index` = frames pushed so far, no scores) when nothing is waiting.
    pub fn push_unpaired(&mut self, tag: T) -> Option<Scored<T>> {
        if let Some(q) = self.queue.back_mut() {
            q.trailing.push(tag);
            return None;
        }
        match self.pending.back_mut() {
            Some(p) => {
                p.trailing.push(tag);
                None
            }
            None => Some(Scored {
                index: self.next_index,
                tag,
                scores: None,
            }),
        }
    }

    /// Waits for every frame submitted to the backend (frames in flight on a CPU pool or a
    /// GPU) and returns the ones that are then complete: all but the last, whose `motion2`
    /// waits for the next pair, as a synchronous backend would have returned them. Unlike
    /// [`Scorer::finish`] the last frame stays pending. Used before an error ends the stream,
    /// so the frames scored before it still reach the application.
    ///
    /// Errors: the backend's, or [`EngineError::Backend`] when a submitted frame is lost.
    pub fn settle(&mut self) -> Result<Vec<Scored<T>>, EngineError> {
        let mut done = Vec::new();
        while !self.queue.is_empty() {
            match self.backend.collect(true)? {
                Some(raw) => self.accept(raw, &mut done),
                None => {
                    return Err(EngineError::Backend {
                        backend: self.backend.name(),
                        message: "a submitted frame was lost".into(),
                    })
                }
            }
        }
        Ok(done)
    }

    /// Completes every frame (end of stream, or before a new geometry). Motion history is
    /// kept; call [`Scorer::reset`] to start a new stream.
    pub fn finish(&mut self) -> Result<Vec<Scored<T>>, EngineError> {
        let mut done = self.settle()?;
        done.extend(self.take_pending());
        Ok(done)
    }

    /// Leaves out `pairs` frame pairs (a live pipeline whose scoring fell behind): completes
    /// every frame (the last one before the gap takes its own motion as its `motion2`, as at
    /// end of stream), forgets the motion history and advances the frame index by `pairs`,
    /// so the next pushed frame is scored as the first frame of a new stream would be
    /// (`motion2` 0, motion SAD 0) and indices keep counting every pair. Pooling continues.
    pub fn skip(&mut self, pairs: u64) -> Result<Vec<Scored<T>>, EngineError> {
        let done = self.finish()?;
        self.backend.reset();
        self.next_index += pairs;
        self.restart = true;
        Ok(done)
    }

    /// Replaces the backend (new geometry or a fallback), completing every frame first.
    /// Indices and pooling continue.
    pub fn replace_backend(
        &mut self,
        backend: Box<dyn Backend>,
    ) -> Result<Vec<Scored<T>>, EngineError> {
        let done = self.finish();
        self.backend = backend;
        done
    }

    /// Switches to `backend` after the current one failed: the frame whose features are in
    /// is completed (its motion2 from its own motion, as at end of stream), frames still in
    /// flight leave unscored, in order, and the new backend starts without motion history.
    /// Returns those frames and how many of them lost their scores.
    pub fn fail_over(&mut self, backend: Box<dyn Backend>) -> (Vec<Scored<T>>, usize) {
        let mut done = self.take_pending();
        let lost = self.queue.len();
        for q in self.queue.drain(..) {
            done.push(Scored {
                index: q.index,
                tag: q.tag,
                scores: None,
            });
            done.extend(q.trailing.into_iter().map(|tag| Scored {
                index: q.index,
                tag,
                scores: None,
            }));
        }
        self.backend = backend;
        (done, lost)
    }

    /// Completes every pending frame (the end of a run).
    fn take_pending(&mut self) -> Vec<Scored<T>> {
        let mut out = Vec::new();
        while !self.pending.is_empty() {
            out.extend(self.complete_front());
        }
        out
    }

    /// Completes the oldest pending frame from the frames around it, then its trailing tags.
    fn complete_front(&mut self) -> Vec<Scored<T>> {
        let Some(mut p) = self.pending.pop_front() else {
            return Vec::new();
        };
        if p.first {
            self.history.clear();
        }
        let trailing = std::mem::take(&mut p.trailing);
        let index = p.index;
        let mut out = Vec::with_capacity(1 + trailing.len());
        let raw = p.raw.clone();
        out.push(self.complete(p));
        if self.behind > 0 {
            if self.history.len() == self.behind {
                self.history.pop_front();
            }
            self.history.push_back(raw);
        }
        out.extend(trailing.into_iter().map(|tag| Scored {
            index,
            tag,
            scores: None,
        }));
        out
    }

    /// A frame whose features a ladder backend computed ([`crate::engine::ladder`]): joins
    /// the pending frames as a pushed frame would; `restart`: it starts a new run (its
    /// reference-only values for the frames before it in the run, which a new run has not
    /// seen, are set to 0, as a backend reset would give them). Returns the frames it
    /// completes.
    pub(crate) fn accept_computed(
        &mut self,
        mut raw: RawFeatures,
        tag: T,
        full: bool,
        restart: bool,
    ) -> Vec<Scored<T>> {
        let index = self.next_index;
        self.next_index += 1;
        let first = index == 0 || std::mem::take(&mut self.restart) || restart;
        let position = if first { 0 } else { self.next_position };
        self.next_position = position + 1;
        let layout = self.plan.layout().clone();
        for (i, inst) in layout.instances().iter().enumerate() {
            // Motion reads the frame one back (two back with the five-frame window).
            let back = inst.window().0.max(1) as u64;
            if inst.needs().reference_only && position < back {
                raw.of_mut(i).iter_mut().for_each(|v| *v = 0.0);
            }
        }
        self.queue.push_back(Queued {
            index,
            tag,
            full,
            first,
            position,
            trailing: Vec::new(),
        });
        let mut done = Vec::new();
        self.accept(raw, &mut done);
        done
    }

    /// Ends the current run: completes every pending frame (the last one's late outputs from
    /// the frames before it, as at the end of a stream); the next frame starts a new run.
    /// Indices and pooling continue.
    pub(crate) fn end_run(&mut self) -> Vec<Scored<T>> {
        let done = self.take_pending();
        self.restart = true;
        done
    }

    /// Drops any pending frame and restarts indices, motion history and pooling.
    pub fn reset(&mut self) {
        self.queue.clear();
        self.pending.clear();
        self.history.clear();
        self.next_position = 0;
        self.next_index = 0;
        self.restart = false;
        self.pool = Pool::new(self.names.clone());
        self.backend.reset();
    }

    fn complete(&mut self, p: Pending<T>) -> Scored<T> {
        let scores = p.full.then(|| {
            let values = self.values(&p.raw, p.position);
            let scores = FrameScores {
                index: p.index,
                names: self.names.clone(),
                values,
            };
            self.pool.add(&scores.values);
            scores
        });
        Scored {
            index: p.index,
            tag: p.tag,
            scores,
        }
    }
}

impl<T> Scorer<T> {
    /// One frame's values in [`ScorePlan::names`] order: its raw values, each instance's
    /// late outputs from the frames around it in its run (libvmaf's `flush`: the completed
    /// frames in `history`, the frames still pending after it), and the models' scores.
    fn values(&self, raw: &RawFeatures, position: u64) -> Vec<f64> {
        let plan = &self.plan;
        let layout = plan.layout();
        let mut values = Vec::with_capacity(self.names.len());
        values.extend_from_slice(raw.values());
        // The pending frames after this one in the same run.
        let ahead_n = self
            .pending
            .iter()
            .take(self.ahead)
            .take_while(|p| !p.first)
            .count();
        for (i, inst) in layout.instances().iter().enumerate() {
            let n = plan.late.get(i).copied().unwrap_or(0);
            if n == 0 {
                continue;
            }
            let start = values.len();
            values.resize(start + n, 0.0);
            let mut behind: [&[f64]; MAX_BEHIND] = [&[]; MAX_BEHIND];
            let mut nb = 0;
            let in_run = usize::try_from(position).unwrap_or(usize::MAX);
            for (slot, r) in behind
                .iter_mut()
                .zip(self.history.iter().rev().take(in_run))
            {
                *slot = r.of(i);
                nb += 1;
            }
            let mut ahead: [&[f64]; MAX_AHEAD] = [&[]; MAX_AHEAD];
            for (slot, p) in ahead.iter_mut().zip(self.pending.iter().take(ahead_n)) {
                *slot = p.raw.of(i);
            }
            let window = Window {
                position,
                current: raw.of(i),
                behind: &behind[..nb],
                ahead: &ahead[..ahead_n.min(MAX_AHEAD)],
            };
            inst.finish(&window, &mut values[start..]);
        }
        let order = (1..plan.models.len()).chain(std::iter::once(0));
        for k in order {
            let m = &plan.models[k];
            let mut features = [0.0f64; 64];
            let inputs = plan.model_inputs.get(k).map_or(&[][..], Vec::as_slice);
            for (slot, &at) in features.iter_mut().zip(inputs) {
                *slot = values.get(at).copied().unwrap_or(0.0);
            }
            values.extend(m.predict(&features[..m.model.features.len()]));
        }
        values
    }
}
