//! Turns frame sets (a reference frame and the renditions paired with it; a pair is the set
//! of one) into per-frame scores: drives a backend, hands each rendition's values to its
//! [`Track`] (index, motion runs, models, pooling), and keeps every rendition's frames in order.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::engine::backend::api::Backend;
use crate::engine::error::EngineError;
use crate::engine::frame_set::{FrameChroma, FrameSet, SetFeatures};
use crate::engine::model::Model;
use crate::engine::plan::{PlanError, ScorePlan};
use crate::engine::pool::Pool;
use crate::engine::track::{Scored, Track};
use crate::video::frame::{ChromaInput, ChromaPair, LumaInput, LumaPlane};

/// A frame set whose features are not collected yet.
struct Queued<T> {
    /// The renditions submitted: slot, (tag, unpaired tags queued behind it), whether full.
    renditions: Vec<(usize, (T, Vec<T>), bool)>,
    /// Renditions that had a frame in the previous set but not in this one: their run ends
    /// (their pending frames complete) once this set is collected.
    ended: Vec<usize>,
}

/// One rendition's frame of a set that was in flight when its backend failed
/// ([`Scorer::fail_over`]).
pub struct LostFrame<T> {
    /// The rendition's slot.
    pub rendition: usize,
    /// The frame's tag, to be pushed again.
    pub tag: T,
    /// Tags without a frame queued behind it ([`Scorer::push_unpaired`]), to leave after it.
    pub unpaired: Vec<T>,
}

/// A frame set that was in flight when its backend failed: its renditions' frames in
/// submission order.
pub type LostSet<T> = Vec<LostFrame<T>>;

/// Scores frame sets on one backend with [`Backend::renditions`] slots, one [`Track`] per
/// rendition.
///
/// A rendition without a frame in a set (a gap, a stall, a pad that ended) ends its run: its
/// pending frames complete (the last one's `motion2` from its own motion, as at the end of a
/// stream) and its next frame starts a new run (motion 0, as after a live pipeline's skipped
/// frames), so it holds back neither the other renditions nor its own output. Its frame index
/// counts only its own frames, as a separate pair's would. A pair (one slot) never misses its
/// rendition: a set is only made for a reference frame with a partner.
pub struct Scorer<T> {
    backend: Box<dyn Backend>,
    plan: ScorePlan,
    tracks: Vec<Track<T>>,
    subsample: u64,
    queue: VecDeque<Queued<T>>,
    /// Per rendition: frames submitted and not yet collected.
    in_flight: Vec<u64>,
    /// Per rendition: whether it had a frame in the last submitted set.
    present: Vec<bool>,
    /// Per rendition: its next accepted frame starts a new run.
    restart: Vec<bool>,
}

impl<T> Scorer<T> {
    /// A pair scorer with one plain model named `vmaf`; `subsample` >= 1: VIF, ADM and VMAF
    /// are computed for every `subsample`-th frame (motion for every frame), as libvmaf's
    /// `--subsample`.
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

    /// A scorer for `backend`'s rendition slots, each scored with every model and metric of
    /// `plan` (the plan `backend` was made for); `subsample` as in [`Scorer::new`], counted
    /// per rendition.
    pub fn with_plan(backend: Box<dyn Backend>, plan: ScorePlan, subsample: u32) -> Self {
        let n = backend.renditions().max(1);
        Self {
            tracks: (0..n).map(|_| Track::new(plan.clone())).collect(),
            backend,
            plan,
            subsample: u64::from(subsample.max(1)),
            queue: VecDeque::new(),
            in_flight: vec![0; n],
            present: vec![false; n],
            restart: vec![false; n],
        }
    }

    /// Rendition slots (1: a pair).
    pub fn renditions(&self) -> usize {
        self.tracks.len()
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

    /// Rendition `k`'s track (names, pooling, frames pushed); `None` outside the slots.
    pub fn track(&self, k: usize) -> Option<&Track<T>> {
        self.tracks.get(k)
    }

    /// Metric names in log order.
    pub fn names(&self) -> &Arc<[String]> {
        self.tracks[0].names()
    }

    /// Pooled statistics of rendition 0 (a pair's).
    pub fn pool(&self) -> &Pool {
        self.tracks[0].pool()
    }

    /// Frames pushed to rendition 0 (a pair's), skipped ones counted.
    pub fn frames_pushed(&self) -> u64 {
        self.pushed(0)
    }

    /// Frames pushed to rendition `k`, those in flight and skipped ones counted.
    fn pushed(&self, k: usize) -> u64 {
        self.tracks
            .get(k)
            .map_or(0, |s| s.frames_pushed() + self.in_flight[k])
    }

    /// Whether rendition `k`'s next frame is full (not left out by subsampling).
    pub fn next_full(&self, k: usize) -> bool {
        self.pushed(k).is_multiple_of(self.subsample)
    }

    /// Scores one frame set (the renditions' `full` flags from [`Scorer::next_full`]),
    /// `tags[i]` going with `set.renditions[i]`. Returns the frames completed by it, each with
    /// its rendition slot, in order per rendition (a frame is complete when the frames its
    /// late outputs read are in: `motion2` needs the next frame).
    ///
    /// Errors: the backend's; [`EngineError::Backend`] for a rendition slot outside the
    /// backend's or given twice, or `tags` of another length.
    pub fn push_set(
        &mut self,
        set: FrameSet<'_>,
        tags: Vec<T>,
    ) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        let n = self.tracks.len();
        let mut seen = vec![false; n];
        if tags.len() != set.renditions.len() {
            return Err(self.internal("one tag per rendition frame"));
        }
        for r in &set.renditions {
            match seen.get_mut(r.rendition) {
                Some(s) if !*s => *s = true,
                _ => return Err(self.internal("rendition slot outside the set or repeated")),
            }
        }
        let fulls: Vec<(usize, bool)> = set
            .renditions
            .iter()
            .map(|r| (r.rendition, r.full))
            .collect();
        self.backend.submit_set(set)?;
        let ended = (0..n).filter(|&k| self.present[k] && !seen[k]).collect();
        self.present = seen;
        let renditions = fulls
            .into_iter()
            .zip(tags)
            .map(|((k, full), tag)| {
                self.in_flight[k] += 1;
                (k, (tag, Vec::new()), full)
            })
            .collect();
        self.queue.push_back(Queued { renditions, ended });
        let mut done = Vec::new();
        while !self.queue.is_empty() {
            let must_wait = self.queue.len() > self.backend.max_in_flight().max(1) - 1;
            match self.backend.collect_set(must_wait)? {
                Some(features) => self.accept(features, &mut done)?,
                None if must_wait => return Err(self.lost()),
                None => break,
            }
        }
        Ok(done)
    }

    /// Scores the next pair (rendition 0): packed planes, no chroma. See
    /// [`Scorer::push_set`]; returns rendition 0's completed frames.
    ///
    /// Errors: as [`Scorer::push_set`].
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

    /// [`Scorer::push`] with planes in any [`LumaInput`] form the backend accepts.
    ///
    /// Errors: as [`Scorer::push_set`].
    pub fn push_input(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        tag: T,
    ) -> Result<Vec<Scored<T>>, EngineError> {
        self.push_pair(reference, distorted, None, tag)
    }

    /// [`Scorer::push_input`] with packed chroma planes.
    ///
    /// Errors: as [`Scorer::push_set`].
    pub fn push_frame(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaPair<'_>>,
        tag: T,
    ) -> Result<Vec<Scored<T>>, EngineError> {
        self.push_pair(
            reference,
            distorted,
            chroma.map(FrameChroma::packed_pair),
            tag,
        )
    }

    /// [`Scorer::push_input`] with the chroma components in their buffers' layouts (for a
    /// backend with [`Backend::reads_components`]).
    ///
    /// Errors: as [`Scorer::push_set`].
    pub fn push_components(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaInput<'_>>,
        tag: T,
    ) -> Result<Vec<Scored<T>>, EngineError> {
        self.push_pair(
            reference,
            distorted,
            chroma.map(FrameChroma::component_pair),
            tag,
        )
    }

    fn push_pair(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<[FrameChroma<'_>; 2]>,
        tag: T,
    ) -> Result<Vec<Scored<T>>, EngineError> {
        let full = self.next_full(0);
        let set = FrameSet::pair(reference, distorted, chroma, full);
        Ok(Self::slot0(self.push_set(set, vec![tag])?))
    }

    fn slot0(done: Vec<(usize, Scored<T>)>) -> Vec<Scored<T>> {
        done.into_iter().map(|(_, s)| s).collect()
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

    /// One collected set: each rendition's values into its track.
    fn accept(
        &mut self,
        features: SetFeatures,
        done: &mut Vec<(usize, Scored<T>)>,
    ) -> Result<(), EngineError> {
        let Some(q) = self.queue.pop_front() else {
            return Err(self.internal("features without a submitted frame"));
        };
        for k in q.ended {
            if let Some(s) = self.tracks.get_mut(k) {
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
            if let Some(s) = self.tracks.get_mut(k) {
                done.extend(
                    s.accept(raw, tag, full, restart)
                        .into_iter()
                        .map(|x| (k, x)),
                );
            }
        }
        Ok(())
    }

    /// Queues a tag of rendition `k` that has no frame to score (e.g. a distorted buffer whose
    /// reference never came) so that it leaves in order, after that rendition's frames
    /// pushed before it. Returned at once (with `index` = that rendition's next frame's, no
    /// scores) when nothing of `k` is waiting.
    pub fn push_unpaired(&mut self, k: usize, tag: T) -> Option<Scored<T>> {
        let queued = self
            .queue
            .iter_mut()
            .rev()
            .find_map(|q| q.renditions.iter_mut().find(|(r, _, _)| *r == k));
        if let Some((_, (_, trailing), _)) = queued {
            trailing.push(tag);
            return None;
        }
        match self.tracks.get_mut(k) {
            Some(t) => t.push_unpaired(tag),
            None => Some(Scored {
                index: 0,
                tag,
                scores: None,
            }),
        }
    }

    /// Collects the sets the backend has finished, without pushing (a live pipeline's scoring
    /// thread, idle while sets are in flight).
    ///
    /// Errors: a backend failure of a collected set.
    pub fn poll(&mut self) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        let mut done = Vec::new();
        while !self.queue.is_empty() {
            match self.backend.collect_set(false)? {
                Some(f) => self.accept(f, &mut done)?,
                None => break,
            }
        }
        Ok(done)
    }

    /// Sets submitted whose features are not collected yet.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    /// Sets the backend scores at the same time ([`Backend::parallel`]).
    pub fn parallelism(&self) -> usize {
        self.backend.parallel().max(1)
    }

    /// Waits for every submitted set; frames whose late outputs wait for a next frame stay
    /// pending (unlike [`Scorer::finish`]). Used before an error ends the stream, so that
    /// the frames scored before it still reach the application.
    ///
    /// Errors: the backend's, or a lost frame.
    pub fn settle(&mut self) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        let mut done = Vec::new();
        while !self.queue.is_empty() {
            match self.backend.collect_set(true)? {
                Some(f) => self.accept(f, &mut done)?,
                None => return Err(self.lost()),
            }
        }
        Ok(done)
    }

    /// Completes every frame of every rendition (end of stream, or before a new backend).
    /// Motion history is kept; [`Scorer::reset`] starts a new stream.
    ///
    /// Errors: as [`Scorer::settle`].
    pub fn finish(&mut self) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        let mut done = self.settle()?;
        for (k, s) in self.tracks.iter_mut().enumerate() {
            done.extend(s.end_run().into_iter().map(|x| (k, x)));
        }
        Ok(done)
    }

    /// Completes rendition `k`'s frames (its pad ended or was released) after waiting for
    /// every set in flight; the other renditions' frames stay pending.
    ///
    /// Errors: as [`Scorer::settle`].
    pub fn finish_rendition(&mut self, k: usize) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        let mut done = self.settle()?;
        if let Some(s) = self.tracks.get_mut(k) {
            done.extend(s.end_run().into_iter().map(|x| (k, x)));
            self.restart[k] = true;
            self.present[k] = false;
        }
        Ok(done)
    }

    /// Leaves out `frames` frame sets (a live pipeline whose scoring fell behind): completes
    /// every frame (the last one before the gap takes its own motion as its `motion2`, as at
    /// end of stream), forgets the motion history and advances every rendition's index by
    /// `frames`, so the next frame is scored as the first of a new stream would be (`motion2`
    /// 0, motion SAD 0) and indices keep counting every frame. Pooling continues.
    ///
    /// Errors: as [`Scorer::settle`].
    pub fn skip(&mut self, frames: u64) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        let mut done = self.settle()?;
        for (k, s) in self.tracks.iter_mut().enumerate() {
            done.extend(s.skip(frames).into_iter().map(|x| (k, x)));
        }
        self.backend.reset();
        self.present.iter_mut().for_each(|p| *p = false);
        Ok(done)
    }

    /// Replaces the backend (new geometry, a rendition's caps changed): completes every
    /// frame first (each rendition's last one from the frames before it); indices, runs and
    /// pooling continue, the new backend starting without a previous reference frame (motion
    /// SAD 0 for the next frame).
    ///
    /// Errors: as [`Scorer::settle`], and [`EngineError::Backend`] when `backend` has
    /// another number of rendition slots.
    pub fn replace_backend(
        &mut self,
        backend: Box<dyn Backend>,
    ) -> Result<Vec<(usize, Scored<T>)>, EngineError> {
        if backend.renditions() != self.tracks.len() {
            return Err(self.internal("a backend of another number of renditions"));
        }
        let settled = self.settle();
        self.backend = backend;
        let mut done = settled?;
        for (k, s) in self.tracks.iter_mut().enumerate() {
            done.extend(s.complete_pending().into_iter().map(|x| (k, x)));
        }
        Ok(done)
    }

    /// Switches to `backend` after the current one failed: the frames whose features are in
    /// are completed (each rendition's last one takes its own motion as its `motion2`, as at
    /// end of stream) and the sets still in flight are returned, oldest first, to be pushed
    /// again on the new backend, which starts a new run for every rendition. Indices and
    /// pooling continue.
    #[allow(clippy::type_complexity)]
    pub fn fail_over(
        &mut self,
        backend: Box<dyn Backend>,
    ) -> (Vec<(usize, Scored<T>)>, Vec<LostSet<T>>) {
        let lost: Vec<LostSet<T>> = self
            .queue
            .drain(..)
            .map(|q| {
                q.renditions
                    .into_iter()
                    .map(|(rendition, (tag, unpaired), _)| LostFrame {
                        rendition,
                        tag,
                        unpaired,
                    })
                    .collect()
            })
            .collect();
        let mut done = Vec::new();
        for (k, s) in self.tracks.iter_mut().enumerate() {
            done.extend(s.end_run().into_iter().map(|x| (k, x)));
        }
        self.in_flight.iter_mut().for_each(|n| *n = 0);
        self.restart.iter_mut().for_each(|r| *r = true);
        self.present.iter_mut().for_each(|p| *p = false);
        self.backend = backend;
        (done, lost)
    }

    /// Drops every set in flight or pending and restarts indices, motion and pooling of
    /// every rendition (a flushing seek).
    pub fn reset(&mut self) {
        self.queue.clear();
        self.backend.reset();
        for s in &mut self.tracks {
            s.reset();
        }
        self.in_flight.iter_mut().for_each(|n| *n = 0);
        self.present.iter_mut().for_each(|p| *p = false);
        self.restart.iter_mut().for_each(|r| *r = false);
    }
}
