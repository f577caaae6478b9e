//! Ladders: one reference stream scored against several renditions (an encoding ladder),
//! the reference's work done once per reference frame.
//!
//! A ladder backend ([`Backend::ladder_size`] > 0: `CpuBackend::for_ladder`,
//! `CudaBackend::new_ladder`) takes one reference frame with the frames of the renditions
//! that have one at that time ([`LadderFrame`]). It places (uploads) the reference once,
//! computes the instances that read the reference alone ([`crate::features::Needs::reference_only`],
//! motion) once and gives their values to every rendition, and lets every other instance share
//! its reference-only work across the renditions ([`crate::features::CpuExtractor::extract_ladder`],
//! [`crate::features::CudaExtractor::enqueue_ladder`]). Each rendition's values equal, bit for
//! bit, what a pair backend gives for that rendition's pair.
//!
//! [`LadderScorer`] turns those values into each rendition's scores: one [`Scorer`] per
//! rendition (its frame index, motion post-processing, models, pooling), fed with what the
//! backend computed.

use std::collections::VecDeque;

use crate::engine::scorer::{Backend, EngineError, ScorePlan, Scored, Scorer};
use crate::features::RawFeatures;
use crate::video::frame::{ComponentInput, LumaInput, LumaPlane};

/// One frame's chroma (Cb `[0]`, Cr `[1]`) as a backend takes it: packed planes at the
/// stream's own chroma size (the CPU backend) or the buffer's own components (the CUDA
/// backend, [`Backend::reads_components`]).
#[derive(Debug, Clone, Copy)]
pub enum FrameChroma<'a> {
    /// Packed `u16` planes at the scoring depth.
    Packed([LumaPlane<'a>; 2]),
    /// The buffer's components, unpacked by the backend.
    Components([ComponentInput<'a>; 2]),
}

/// One rendition's frame in a [`LadderFrame`].
pub struct RenditionFrame<'a> {
    /// The rendition's slot, `0..ladder_size` (its scaler and buffers in the backend).
    pub rendition: usize,
    /// Its luma at the rendition's own size (the backend scales it to the scoring size).
    pub luma: LumaInput<'a>,
    /// Its chroma, when a metric reads chroma and the format has it.
    pub chroma: Option<FrameChroma<'a>>,
    /// Whether the features other than the reference-only ones are computed (subsampling,
    /// counted per rendition).
    pub full: bool,
}

/// One reference frame and the renditions' frames paired with it.
pub struct LadderFrame<'a> {
    /// Reference luma (at the scoring size, or at the size the reference scaler takes).
    pub reference: LumaInput<'a>,
    /// Reference chroma, when a metric reads chroma and the format has it.
    pub reference_chroma: Option<FrameChroma<'a>>,
    /// The renditions that have a frame at this time, each at most once, in slot order.
    /// May be empty (the reference frame then only advances the reference-only instances'
    /// history, e.g. motion's previous frame).
    pub renditions: Vec<RenditionFrame<'a>>,
}

/// What a ladder backend computed for one [`LadderFrame`]: each submitted rendition's slot
/// and raw values, in submission order.
pub type LadderFeatures = Vec<(usize, RawFeatures)>;

/// A ladder frame whose features are not collected yet.
struct QueuedLadder<T> {
    /// The renditions submitted: slot, tag, whether full.
    renditions: Vec<(usize, T, bool)>,
    /// Renditions that had a frame in the previous ladder frame but not in this one: their
    /// run ends (their pending frames complete) once this frame is collected.
    ended: Vec<usize>,
}

/// Scores a ladder: one backend with [`Backend::ladder_size`] rendition slots, one
/// [`Scorer`] per rendition (frame index, motion post-processing, models, pooling).
///
/// A rendition without a frame at some reference time (a gap, a stall, a pad that ended)
/// ends its run: its pending frames complete (the last one's `motion2` from its own motion,
/// as at the end of a stream) and its next frame starts a new run (motion 0, as after a live
/// pipeline's skipped frames), so it holds back neither the other renditions nor its own
/// output. Its frame index counts only its scored pairs, as a separate element's would.
pub struct LadderScorer<T> {
    backend: Box<dyn Backend>,
    plan: ScorePlan,
    renditions: Vec<Scorer<T>>,
    subsample: u64,
    queue: VecDeque<QueuedLadder<T>>,
    /// Per rendition: frames submitted and not yet collected.
    in_flight: Vec<u64>,
    /// Per rendition: whether it had a frame in the last submitted ladder frame.
    present: Vec<bool>,
    /// Per rendition: its next accepted frame starts a new run.
    restart: Vec<bool>,
}

/// The per-rendition scorers' backend: they are fed values the ladder backend computed
/// ([`Scorer::accept_computed`]) and never submit.
struct Fed;

impl Backend for Fed {
    fn name(&self) -> &'static str {
        "ladder"
    }
    fn submit_input(
        &mut self,
        _reference: LumaInput<'_>,
        _distorted: LumaInput<'_>,
        _full: bool,
    ) -> Result<(), EngineError> {
        Err(EngineError::Backend {
            backend: "ladder",
            message: "internal: a rendition's scorer takes computed values only".into(),
        })
    }
    fn collect(&mut self, _wait: bool) -> Result<Option<RawFeatures>, EngineError> {
        Ok(None)
    }
    fn reset(&mut self) {}
}

impl<T> LadderScorer<T> {
    /// A scorer for `backend`'s rendition slots, each scored with every model and metric of
    /// `plan` (the plan `backend` was made for); `subsample` as in [`Scorer::new`], counted per
    /// rendition.
    ///
    /// Errors: [`EngineError::Backend`] when `backend` is not a ladder backend.
    pub fn new(
        backend: Box<dyn Backend>,
        plan: ScorePlan,
        subsample: u32,
    ) -> Result<Self, EngineError> {
        let n = backend.ladder_size();
        if n == 0 {
            return Err(EngineError::Backend {
                backend: backend.name(),
                message: "internal: not a ladder backend".into(),
            });
        }
        let renditions = (0..n)
            .map(|_| Scorer::with_plan(Box::new(Fed), plan.clone(), subsample))
            .collect();
        Ok(Self {
            backend,
            plan,
            renditions,
            subsample: u64::from(subsample.max(1)),
            queue: VecDeque::new(),
            in_flight: vec![0; n],
            present: vec![false; n],
            restart: vec![false; n],
        })
    }

    /// Rendition slots.
    pub fn len(&self) -> usize {
        self.renditions.len()
    }

    /// Whether there are no rendition slots (never: [`LadderScorer::new`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.renditions.is_empty()
    }

    /// What each rendition is scored with.
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

    /// Whether the backend takes chroma as [`FrameChroma::Components`].
    pub fn reads_components(&self) -> bool {
        self.backend.reads_components()
    }

    /// Whether host rows are best given with a [`Hold`](crate::video::frame::Hold)
    /// (see [`Backend::defers_host_rows`]).
    pub fn defers_host_rows(&self) -> bool {
        self.backend.defers_host_rows()
    }

    /// Rendition `k`'s scorer (names, pooling, frames pushed); `None` outside the slots.
    pub fn rendition(&self, k: usize) -> Option<&Scorer<T>> {
        self.renditions.get(k)
    }

    /// Whether rendition `k`'s next frame is full (not left out by subsampling).
    pub fn next_full(&self, k: usize) -> bool {
        let pushed = self
            .renditions
            .get(k)
            .map_or(0, |s| s.frames_pushed() + self.in_flight[k]);
        pushed.is_multiple_of(self.subsample)
    }

    /// Scores one reference frame against the renditions in `frame` (their `full` flags
    /// from [`LadderScorer::next_full`]), `tags[i]` going with `frame.renditions[i]`.
    /// Returns the frames completed by it, each with its rendition slot, in order per
    /// rendition (frames complete when the next frame's features are in, as in
    /// [`Scorer::push`]).
    ///
    /// Errors: the backend's; [`EngineError::Backend`] for a rendition slot outside the
    /// backend's or given twice, or `tags` of another length.
    pub fn push(
        &mut self,
        frame: LadderFrame<'_>,
        tags: Vec<T>,
    ) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        let n = self.renditions.len();
        let mut seen = vec![false; n];
        if tags.len() != frame.renditions.len() {
            return Err(self.internal("one tag per rendition frame"));
        }
        for r in &frame.renditions {
            match seen.get_mut(r.rendition) {
                Some(s) if !*s => *s = true,
                _ => return Err(self.internal("rendition slot outside the ladder or repeated")),
            }
        }
        let fulls: Vec<(usize, bool)> = frame
            .renditions
            .iter()
            .map(|r| (r.rendition, r.full))
            .collect();
        self.backend.submit_ladder(frame)?;
        let ended = (0..n).filter(|&k| self.present[k] && !seen[k]).collect();
        for (k, s) in seen.iter().enumerate() {
            self.present[k] = *s;
        }
        let renditions = fulls
            .into_iter()
            .zip(tags)
            .map(|((k, full), tag)| {
                self.in_flight[k] += 1;
                (k, tag, full)
            })
            .collect();
        self.queue.push_back(QueuedLadder { renditions, ended });
        let mut done = Vec::new();
        loop {
            if self.queue.is_empty() {
                break;
            }
            let must_wait = self.queue.len() > self.backend.max_in_flight().max(1) - 1;
            match self.backend.collect_ladder(must_wait)? {
                Some(features) => self.accept(features, &mut done)?,
                None if must_wait => return Err(self.lost()),
                None => break,
            }
        }
        Ok(done)
    }

    fn internal(&self, what: &str) -> EngineError {
        EngineError::Backend {
            backend: self.backend.name(),
            message: format!("internal: {what}"),
        }
    }

    fn lost(&self) -> EngineError {
        EngineError::Backend {
            backend: self.backend.name(),
            message: "a submitted frame was lost".into(),
        }
    }

    /// One collected ladder frame: each rendition's values into its scorer.
    fn accept(
        &mut self,
        features: LadderFeatures,
        done: &mut Vec<(usize, Scored<T>)>,
    ) -> Result<(), EngineError> {
        let Some(q) = self.queue.pop_front() else {
            return Err(self.internal("features without a submitted frame"));
        };
        for k in q.ended {
            if let Some(s) = self.renditions.get_mut(k) {
                done.extend(s.end_run().into_iter().map(|x| (k, x)));
                self.restart[k] = true;
            }
        }
        if features.len() != q.renditions.len() {
            return Err(self.internal("the backend returned another number of renditions"));
        }
        for ((k, tag, full), (fk, raw)) in q.renditions.into_iter().zip(features) {
            if k != fk {
                return Err(self.internal("the backend returned renditions out of order"));
            }
            self.in_flight[k] = self.in_flight[k].saturating_sub(1);
            let restart = std::mem::take(&mut self.restart[k]);
            if let Some(s) = self.renditions.get_mut(k) {
                done.extend(
                    s.accept_computed(raw, tag, full, restart)
                        .into_iter()
                        .map(|x| (k, x)),
                );
            }
        }
        Ok(())
    }

    /// Collects the ladder frames the backend has finished, without pushing.
    ///
    /// Errors: a backend failure of a collected frame.
    pub fn poll(&mut self) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        let mut done = Vec::new();
        while !self.queue.is_empty() {
            match self.backend.collect_ladder(false)? {
                Some(f) => self.accept(f, &mut done)?,
                None => break,
            }
        }
        Ok(done)
    }

    /// Ladder frames submitted whose features are not collected yet.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    /// Waits for every submitted ladder frame; frames whose late outputs wait for a next
    /// frame stay pending (see [`Scorer::settle`]).
    ///
    /// Errors: the backend's, or a lost frame.
    pub fn settle(&mut self) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        let mut done = Vec::new();
        while !self.queue.is_empty() {
            match self.backend.collect_ladder(true)? {
                Some(f) => self.accept(f, &mut done)?,
                None => return Err(self.lost()),
            }
        }
        Ok(done)
    }

    /// Completes every frame of every rendition (end of stream, or before a new backend).
    ///
    /// Errors: as [`LadderScorer::settle`].
    pub fn finish(&mut self) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        let mut done = self.settle()?;
        for (k, s) in self.renditions.iter_mut().enumerate() {
            done.extend(s.end_run().into_iter().map(|x| (k, x)));
        }
        Ok(done)
    }

    /// Completes rendition `k`'s frames (its pad ended or was released) after waiting for
    /// every ladder frame in flight; the other renditions' frames stay pending.
    ///
    /// Errors: as [`LadderScorer::settle`].
    pub fn finish_rendition(&mut self, k: usize) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        let mut done = self.settle()?;
        if let Some(s) = self.renditions.get_mut(k) {
            done.extend(s.end_run().into_iter().map(|x| (k, x)));
            self.restart[k] = true;
            self.present[k] = false;
        }
        Ok(done)
    }

    /// Replaces the backend (new geometry, a rendition's caps changed): completes every frame
    /// first; indices and pooling continue, and every rendition starts a new run.
    ///
    /// Errors: as [`LadderScorer::finish`], and [`EngineError::Backend`] when `backend` has
    /// another number of rendition slots.
    pub fn replace_backend(
        &mut self,
        backend: Box<dyn Backend>,
    ) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        if backend.ladder_size() != self.renditions.len() {
            return Err(self.internal("a ladder backend of another size"));
        }
        let done = self.finish();
        self.backend = backend;
        self.restart.iter_mut().for_each(|r| *r = true);
        self.present.iter_mut().for_each(|p| *p = false);
        done
    }

    /// Drops every frame in flight or pending and restarts indices, motion and pooling of
    /// every rendition (a flushing seek).
    pub fn reset(&mut self) {
        self.queue.clear();
        self.backend.reset();
        for s in &mut self.renditions {
            s.reset();
        }
        self.in_flight.iter_mut().for_each(|n| *n = 0);
        self.present.iter_mut().for_each(|p| *p = false);
        self.restart.iter_mut().for_each(|r| *r = false);
    }
}
