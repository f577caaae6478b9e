//! One rendition's scoring: its frame index, runs (motion history), libvmaf 3.x's late outputs
//! (motion2/motion3 need the frames after), the models and pooling, fed the raw values a
//! backend computed.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::engine::plan::{FrameScores, ScorePlan};
use crate::engine::pool::Pool;
use crate::features::{RawFeatures, Window, MAX_AHEAD, MAX_BEHIND};

/// One frame leaving the scorer, in input order per rendition, with the caller's tag.
#[derive(Debug)]
pub struct Scored<T> {
    /// Frame index in its rendition (libvmaf's `frameNum`).
    pub index: u64,
    /// What the caller attached when it pushed the frame (e.g. the distorted buffer).
    pub tag: T,
    /// Scores, or `None` for frames that subsampling skips.
    pub scores: Option<FrameScores>,
}

/// A frame with features, waiting for the next frames' (its late outputs read them).
struct Pending<T> {
    index: u64,
    tag: T,
    raw: RawFeatures,
    full: bool,
    first: bool,
    /// Position in its run (0: `first`).
    position: u64,
    /// Tags without a frame (unpaired buffers) that arrived after this frame and leave
    /// right after it.
    trailing: Vec<T>,
}

/// Scores one rendition: each frame's raw values in, its metrics and models out once the
/// frames its late outputs read are in, in order; pooled statistics of every scored frame.
///
/// A run is a stretch of consecutive frames (the stream's start, or after a gap: skipped
/// frames, a frame set without this rendition, a backend switch). The first frame of a run
/// has no motion history: its reference-only values (motion SAD) are 0 and the late outputs
/// of a run's last frame are computed from the frames before it, as libvmaf does at the end
/// of a stream.
pub struct Track<T> {
    plan: ScorePlan,
    names: Arc<[String]>,
    next_index: u64,
    /// Frames with features, waiting for the next frames' (at most `ahead` of them, fewer
    /// only at the end of a run).
    pending: VecDeque<Pending<T>>,
    /// The raw values of the last completed frames of the current run, newest last (at most
    /// `behind`).
    history: VecDeque<RawFeatures>,
    /// Frames after / before one that the plan's late outputs read
    /// ([`crate::features::Instance::window`]).
    ahead: usize,
    behind: usize,
    /// The run position of the next frame.
    next_position: u64,
    pool: Pool,
    /// The next frame starts a new run.
    restart: bool,
}

impl<T> Track<T> {
    /// A track for every model and metric of `plan`.
    pub fn new(plan: ScorePlan) -> Self {
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
            plan,
            pool: Pool::new(names.clone()),
            names,
            next_index: 0,
            pending: VecDeque::with_capacity(ahead + 1),
            history: VecDeque::with_capacity(behind + 1),
            ahead,
            behind,
            next_position: 0,
            restart: false,
        }
    }

    /// Metric names in log order.
    pub fn names(&self) -> &Arc<[String]> {
        &self.names
    }

    /// Pooled statistics of the frames scored so far.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Frames accepted so far, skipped ones counted (the next frame's index).
    pub fn frames_pushed(&self) -> u64 {
        self.next_index
    }

    /// One frame's raw values (`full`: VIF, ADM... computed, else only the reference-only
    /// instances); `restart`: it starts a new run. Its reference-only values that read frames
    /// before it in the run, which a new run has not seen, are set to 0, as a backend reset
    /// gives them. Returns the frames it completes, in order.
    pub fn accept(
        &mut self,
        mut raw: RawFeatures,
        (tag, trailing): (T, Vec<T>),
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
        let mut done = Vec::new();
        if first {
            // A new run: the frames of the last one have nothing more to wait for.
            done.extend(self.take_pending());
        }
        self.pending.push_back(Pending {
            index,
            tag,
            raw,
            full,
            first,
            position,
            trailing,
        });
        while self.pending.len() > self.ahead {
            done.extend(self.complete_front());
        }
        done
    }

    /// A tag without a frame (e.g. a distorted buffer whose reference never came), to leave
    /// in order after the frames before it: kept behind the newest pending frame, or given
    /// back at once (`index` = the next frame's, no scores) when none is pending.
    pub fn push_unpaired(&mut self, tag: T) -> Option<Scored<T>> {
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

    /// Ends the current run: completes every pending frame (the last one's late outputs from
    /// the frames before it, as at the end of a stream); the next frame starts a new run.
    /// Indices and pooling continue.
    pub fn end_run(&mut self) -> Vec<Scored<T>> {
        let done = self.take_pending();
        self.restart = true;
        done
    }

    /// Completes every pending frame (the last one's late outputs from the frames before it)
    /// without ending the run: the next frame continues it (its position counts on), as
    /// after a backend switch at a caps change.
    pub fn complete_pending(&mut self) -> Vec<Scored<T>> {
        self.take_pending()
    }

    /// Leaves out `frames` frames (a live pipeline whose scoring fell behind): ends the run
    /// and advances the index by `frames`, so indices keep counting every frame.
    pub fn skip(&mut self, frames: u64) -> Vec<Scored<T>> {
        let done = self.end_run();
        self.next_index += frames;
        done
    }

    /// Drops any pending frame and restarts indices, motion history and pooling.
    pub fn reset(&mut self) {
        self.pending.clear();
        self.history.clear();
        self.next_position = 0;
        self.next_index = 0;
        self.restart = false;
        self.pool = Pool::new(self.names.clone());
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
        // Kept for the frames after it only when an instance reads frames behind.
        let kept = (self.behind > 0).then(|| p.raw.clone());
        let mut out = Vec::with_capacity(1 + trailing.len());
        out.push(self.complete(p));
        if let Some(raw) = kept {
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
