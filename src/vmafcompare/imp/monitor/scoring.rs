//! Live monitoring, the scoring queue: pairs handed to the scoring thread (or skipped when it
//! is full), scored frames collected and released in order, draining at end of stream.

use std::sync::Arc;
use std::time::Duration;

use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;

use super::super::live_state::{FALLBACK_FRAME, MAX_SLOTS};
use super::super::util::{lock, CAT};
use super::super::VmafCompare;
use super::{attach_meta, own_latency};
use crate::vmafcompare::live::{Job, Progress, ScoringQueue};
use crate::vmafcompare::slots::{Due, Released};
use crate::vmafcompare::OnFull;

impl VmafCompare {
    /// What a live scoring queue does when full (`on-full`), and the time a frame set may
    /// wait in it (the element's own latency).
    pub(in crate::vmafcompare::imp) fn live_budget(&self) -> (OnFull, Duration) {
        let stream = lock(&self.monitor.stream);
        let frame = stream.frame.unwrap_or(FALLBACK_FRAME);
        let own = own_latency(frame, stream.settings.queue_size);
        (
            stream.settings.on_full,
            Duration::from_nanos(own.nseconds()),
        )
    }

    /// The scoring queue when the pipeline is live (started at the first frame set).
    pub(in crate::vmafcompare::imp) fn live_queue_for_sets(
        &self,
    ) -> Result<Option<Arc<ScoringQueue>>, gst::FlowError> {
        let (live, capacity, slow) = {
            let mut stream = lock(&self.monitor.stream);
            let live = match stream.live {
                Some(l) => l,
                None => {
                    let l = self.obj().latency().is_some();
                    stream.live = Some(l);
                    l
                }
            };
            (live, stream.settings.queue_size as usize, stream.slow)
        };
        if !live {
            return Ok(None);
        }
        if let Some(q) = self.monitor.queue() {
            return Ok(Some(q));
        }
        let weak = self.obj().downgrade();
        let run = move |job: Job| -> Result<Progress, gst::FlowError> {
            let Some(obj) = weak.upgrade() else {
                return Err(gst::FlowError::Flushing);
            };
            let imp = obj.imp();
            match job {
                Job::Set {
                    slot,
                    reference,
                    partners,
                } => {
                    if let Some(d) = slow {
                        std::thread::sleep(d);
                    }
                    imp.score_set(slot, reference, partners)?;
                }
                Job::Gap { pairs } => imp.skip_pairs(pairs)?,
                Job::Poll => imp.poll_scored()?,
            }
            Ok(imp.scorer_progress())
        };
        let queue = match ScoringQueue::start(capacity, MAX_SLOTS.max(4 * (capacity + 1)), run) {
            Ok(q) => Arc::new(q),
            Err(e) => {
                gst::element_imp_error!(
                    self,
                    gst::ResourceError::Failed,
                    ("cannot start the scoring thread: {}", e)
                );
                return Err(gst::FlowError::Error);
            }
        };
        gst::info!(
            CAT,
            imp = self,
            "live pipeline: scoring on its own thread, queue of {capacity} frame sets"
        );
        *lock(&self.monitor.queue) = Some(queue.clone());
        Ok(Some(queue))
    }

    /// The scoring queue, when scoring runs on its own thread.
    pub(in crate::vmafcompare::imp) fn live_queue(&self) -> Option<Arc<ScoringQueue>> {
        self.monitor.queue()
    }

    /// Scoring thread, nothing queued: emits the frames the backend finished meanwhile
    /// (several frames in flight: the CPU on its pool, the GPU).
    pub(super) fn poll_scored(&self) -> Result<(), gst::FlowError> {
        let done = {
            let mut state = lock(&self.state);
            state.scorer.as_mut().map(|s| s.poll()).transpose()
        };
        let done = done.map_err(|e| self.engine_failed(e))?.unwrap_or_default();
        self.emit_all(done).map(|_| ())
    }

    /// What the scorer holds in flight, for the scoring queue's capacity and pace.
    pub(super) fn scorer_progress(&self) -> Progress {
        let state = lock(&self.state);
        match state.scorer.as_ref() {
            Some(s) => Progress {
                in_flight: s.in_flight(),
                parallel: s.parallelism(),
            },
            None => Progress::IDLE,
        }
    }

    /// Scoring thread: `pairs` pairs were skipped; complete the frame before the gap and
    /// restart motion.
    pub(super) fn skip_pairs(&self, pairs: u64) -> Result<(), gst::FlowError> {
        let done = {
            let mut state = lock(&self.state);
            state.scorer.as_mut().map(|s| s.skip(pairs)).transpose()
        };
        let done = done.map_err(|e| self.engine_failed(e))?.unwrap_or_default();
        self.emit_all(done).map(|_| ())
    }

    /// Pushes released output buffers, attaching their scores as meta.
    pub(in crate::vmafcompare::imp) fn push_released(
        &self,
        released: Vec<Released>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut ret = Ok(gst::FlowSuccess::Ok);
        for (mut buffer, metas) in released {
            for s in &metas {
                if let Err(e) = attach_meta(&mut buffer, s) {
                    gst::warning!(CAT, imp = self, "cannot attach scores meta: {e}");
                }
            }
            ret = self.finish_output(buffer);
            if ret.is_err() {
                break;
            }
        }
        ret
    }

    /// Live pipelines: pushes the output buffers that may leave now (`all`: every one, at
    /// end of stream), and returns a scoring thread's error.
    pub(in crate::vmafcompare::imp) fn live_release(
        &self,
        all: bool,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let Some(q) = self.monitor.queue() else {
            return Ok(gst::FlowSuccess::Ok);
        };
        if all {
            q.drain(|| self.cancelled())?;
        }
        // Buffers leave at their deadline: running time + latency, when a synchronised
        // sink renders them, so pushing never waits on the clock. With on-full=block every
        // buffer waits for its scores instead (the pipeline falls behind, as asked).
        let obj = self.obj();
        let block = lock(&self.monitor.stream).settings.on_full == OnFull::Block;
        let due = match (obj.current_running_time(), obj.latency()) {
            (Some(now), Some(latency)) if !block => Due::Until(now.checked_sub(latency)),
            _ => Due::WhenReady,
        };
        let released = q.take_due(due, all);
        self.push_released(released)?;
        match q.error() {
            Some(e) => Err(e),
            None => Ok(gst::FlowSuccess::Ok),
        }
    }

    /// Live pipelines: waits until the scoring thread has scored everything queued.
    pub(in crate::vmafcompare::imp) fn live_drain(&self) -> Result<(), gst::FlowError> {
        match self.monitor.queue() {
            Some(q) => q.drain(|| self.cancelled()),
            None => Ok(()),
        }
    }
}
