//! The one scoring flow, for a pair and a ladder alike (a pair is the ladder of one): per
//! reference frame, each rendition's frame at its running time is found (earlier ones are
//! unpaired; a rendition that has none by the frame's deadline goes without it), the frame set
//! is scored (in the streaming thread, or through the live scoring queue), a GPU failure
//! under `backend=auto` hands the sets in flight to the CPU, and the end of the stream
//! completes everything.

use std::time::Instant;

use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;

use super::live_state::Input;
use super::pairing::{half_frame, pairing, Pairing};
use super::session::{PairError, Session, Tag};
use super::util::{is_gap, lock, CAT};
use super::VmafCompare;
use crate::engine::{EngineError, Scored};
use crate::vmafcompare::{VmafBackend, VmafScaleMethod};

impl VmafCompare {
    pub(super) fn running_time(
        pad: &gst_base::AggregatorPad,
        buffer: &gst::Buffer,
    ) -> Option<gst::ClockTime> {
        let segment = pad.segment();
        let segment = segment.downcast_ref::<gst::ClockTime>()?;
        segment.to_running_time(buffer.pts()?)
    }

    /// `aggregate()`: the next reference buffer with, per rendition, its buffer at the
    /// reference's running time (shifted by the rendition's delay), scored as one frame set.
    pub(super) fn aggregate_sets(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        // Live pipelines: frames the scoring thread finished leave first, in order.
        self.live_release(false)?;
        if self.aligning() {
            return self.align_step();
        }
        // Renditions whose pad was released are left out.
        let (n, active): (usize, Vec<usize>) = {
            let state = lock(&self.state);
            let active = state
                .renditions
                .iter()
                .enumerate()
                .filter(|(_, r)| !r.done)
                .map(|(k, _)| k)
                .collect();
            (state.renditions.len(), active)
        };
        let Some((reference, rrt)) = self.peek_input(Input::Reference) else {
            return self.without_reference(&active, timeout);
        };
        let mut partners: Vec<Option<gst::Buffer>> = vec![None; n];
        // Renditions without a frame at this time that have not ended (stalled).
        let mut missing = vec![false; n];
        for &k in &active {
            loop {
                let Some((d, drt)) = self.peek_input(Input::Rendition(k)) else {
                    if self.input_eos(Input::Rendition(k)) {
                        break;
                    }
                    // Only a timeout gives a frame up: the other pads are looked at then.
                    let others = timeout
                        && active
                            .iter()
                            .any(|&j| j != k && self.peek_input(Input::Rendition(j)).is_some());
                    if self.partner_overdue(Input::Reference, k, timeout, others) {
                        missing[k] = true;
                        break;
                    }
                    // Wait for this rendition (non-live pipelines always wait).
                    return Ok(gst::FlowSuccess::Ok);
                };
                if let (Some(r), Some(dt), Some(half)) =
                    (rrt, drt, half_frame(d.duration(), reference.duration()))
                {
                    match pairing(r, dt, self.rendition_delay(k), half) {
                        Pairing::RenditionEarly => {
                            gst::debug!(CAT, imp = self, "rendition {k} at {dt} has no partner");
                            if let Some(d) = self.pop_input(Input::Rendition(k)) {
                                self.unpaired_frame(k, d)?;
                            }
                            continue;
                        }
                        Pairing::ReferenceEarly => {
                            missing[k] = true;
                            break;
                        }
                        Pairing::Partners => {}
                    }
                }
                partners[k] = Some(d);
                break;
            }
        }
        let Some(reference) = self.pop_input(Input::Reference) else {
            return Ok(gst::FlowSuccess::Ok);
        };
        let reference_gap = is_gap(&reference);
        let ladder = self.is_ladder();
        let mut taken: Vec<Option<gst::Buffer>> = vec![None; n];
        let mut alerts = Vec::new();
        for &k in &active {
            let b = match partners[k].take() {
                Some(_) => self.pop_input(Input::Rendition(k)),
                None => None,
            };
            match b {
                Some(b) if !reference_gap && !is_gap(&b) => {
                    let index = {
                        let mut state = lock(&self.state);
                        let r = &mut state.renditions[k];
                        r.frames_in += 1;
                        r.frames_in - 1
                    };
                    let rt = self
                        .input_pad(Input::Rendition(k))
                        .and_then(|p| Self::running_time(&p, &b));
                    alerts.extend(self.monitor_stalled(k, false, (index, b.pts(), rt)));
                    taken[k] = Some(b);
                }
                Some(b) => {
                    // No picture on one side: nothing to score; the other side is unpaired.
                    if !reference_gap {
                        self.count_unpaired(k, true);
                    }
                    self.unpaired_frame(k, b)?;
                }
                None if reference_gap => {}
                None => {
                    self.count_unpaired(k, true);
                    // A ladder's rendition that has not ended but has no frame here stalled
                    // (a pair's missing frames are its unpaired count, as before).
                    if missing[k] && ladder {
                        let index = lock(&self.state).renditions[k].frames_in;
                        let at = rrt.map(|t| self.on_rendition_line(t, k));
                        alerts.extend(self.monitor_stalled(k, true, (index, reference.pts(), at)));
                    }
                }
            }
        }
        let obj = self.obj();
        for a in alerts {
            let _ = obj.post_message(gst::message::Element::builder(a).src(&*obj).build());
        }
        self.score_or_queue(reference, taken)
    }

    /// No reference buffer waits: when the reference ended, what the renditions still carry
    /// is unpaired and the stream ends once they end too; in a live pipeline a rendition's
    /// buffer waiting alone past its deadline is unpaired.
    fn without_reference(
        &self,
        active: &[usize],
        timeout: bool,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        if self.input_eos(Input::Reference) {
            for &k in active {
                while let Some(b) = self.pop_input(Input::Rendition(k)) {
                    self.unpaired_frame(k, b)?;
                }
            }
            if active.iter().all(|&k| self.input_eos(Input::Rendition(k))) {
                return self.finish_stream();
            }
            return Ok(gst::FlowSuccess::Ok);
        }
        for &k in active {
            let waiting = self.peek_input(Input::Rendition(k)).is_some();
            if waiting && self.partner_overdue(Input::Rendition(k), k, timeout, false) {
                if let Some(b) = self.pop_input(Input::Rendition(k)) {
                    self.unpaired_frame(k, b)?;
                }
            }
        }
        Ok(gst::FlowSuccess::Ok)
    }

    /// Counts an unpaired frame of rendition `k`: its reference's (`true`: the reference
    /// frame had no partner in it) or its own.
    fn count_unpaired(&self, k: usize, reference: bool) {
        let mut state = lock(&self.state);
        if let Some(r) = state.renditions.get_mut(k) {
            if reference {
                r.unpaired_reference += 1;
            } else {
                r.unpaired_distorted += 1;
            }
        }
    }

    /// Rendition `k`'s buffer without a partner: counted (unless a gap) and, for a pair,
    /// whose src pad carries the distorted buffers, passed on unscored in order; a ladder's
    /// is dropped.
    fn unpaired_frame(
        &self,
        k: usize,
        buffer: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        if !is_gap(&buffer) {
            self.count_unpaired(k, false);
        }
        if self.is_ladder() {
            return Ok(gst::FlowSuccess::Ok);
        }
        let running_time = Self::running_time(&self.distorted_pad, &buffer);
        self.pass_unscored(buffer, running_time)
    }

    /// An output buffer that leaves unscored, in order.
    fn pass_unscored(
        &self,
        buffer: gst::Buffer,
        running_time: Option<gst::ClockTime>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let slot = lock(&self.state).take_slot();
        if let Some(q) = self.live_queue() {
            q.pass(slot, buffer, running_time);
            return Ok(self.live_release(false).unwrap_or_else(|e| {
                gst::debug!(CAT, imp = self, "releasing after an unpaired frame: {e:?}");
                gst::FlowSuccess::Ok
            }));
        }
        lock(&self.state).out.push(slot, buffer, running_time, 0);
        self.release_slots()
    }

    /// Scores one frame set: in the streaming thread, or in a live pipeline through the
    /// scoring queue (skipping or blocking when it is full). The output buffer is the
    /// reference's in a ladder, the distorted one in a pair (a reference frame without
    /// partner is then dropped).
    fn score_or_queue(
        &self,
        reference: gst::Buffer,
        partners: Vec<Option<gst::Buffer>>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let present = partners.iter().filter(|p| p.is_some()).count();
        let ladder = self.is_ladder();
        let (output, pad) = match (ladder, partners.first().cloned().flatten()) {
            (true, _) => (reference.clone(), &self.reference_pad),
            (false, Some(d)) => (d, &self.distorted_pad),
            (false, None) => {
                gst::debug!(CAT, imp = self, "reference frame without partner, dropped");
                return Ok(gst::FlowSuccess::Ok);
            }
        };
        let running_time = Self::running_time(pad, &output);
        if present == 0 {
            // No rendition has this reference frame: it leaves unscored, in order.
            return self.pass_unscored(output, running_time);
        }
        let slot = lock(&self.state).take_slot();
        let Some(queue) = self.live_queue_for_sets()? else {
            lock(&self.state)
                .out
                .push(slot, output, running_time, present);
            return self.score_set(slot, reference, partners);
        };
        let (on_full, budget) = self.live_budget();
        queue.offer(
            (slot, reference, partners),
            output,
            running_time,
            on_full,
            Some(budget),
            || self.cancelled(),
            |r| self.push_released(r),
        )?;
        self.live_release(false)
    }

    /// Scores frame set `slot` (the streaming thread, or the live scoring thread): makes the
    /// scorer for the current caps, maps and pushes the set, fails over to the CPU when the
    /// GPU fails under `backend=auto`, and emits what completed.
    pub(super) fn score_set(
        &self,
        slot: u64,
        reference: gst::Buffer,
        partners: Vec<Option<gst::Buffer>>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut state = lock(&self.state);
        let refuse_sizes = lock(&self.settings).scale_method == VmafScaleMethod::None;
        let mismatch = refuse_sizes
            && state.reference.as_ref().is_some_and(|r| {
                state
                    .renditions
                    .iter()
                    .any(|x| x.video.as_ref().is_some_and(|v| v.size() != r.size()))
            });
        if mismatch {
            // The pads disagree: ensure_scorer ends the stream with an error. Frames still in
            // flight (CPU pool, GPU) are completed and sent first, as a synchronous backend
            // would have sent them before this set.
            let settled = state.scorer.as_mut().map(|s| s.settle());
            if let Some(Ok(done)) = settled {
                drop(state);
                let _ = self.emit_all(done);
                state = lock(&self.state);
            }
        }
        let switched = self.ensure_scorer(&mut state)?;
        let gpu = lock(&self.prepared).as_ref().and_then(|p| p.gpu.clone());
        let set = (slot, &reference, partners.as_slice());
        let mut failed_over = Vec::new();
        let result = match self.push_set(&mut state, set, gpu.as_deref()) {
            Err(PairError::Engine(e)) if self.can_fail_over(&state) => {
                match self.fail_over(&mut state, &e, slot) {
                    // This set was handed back with the others in flight: scored again there.
                    Some((done, true)) => {
                        failed_over = done;
                        Ok(Vec::new())
                    }
                    Some((done, false)) => {
                        failed_over = done;
                        self.push_set(&mut state, set, None)
                    }
                    None => Err(PairError::Engine(e)),
                }
            }
            other => other,
        };
        state.started.get_or_insert_with(Instant::now);
        drop(state);
        self.emit_all(switched)?;
        self.emit_all(failed_over)?;
        match result {
            Ok(done) => self.emit_all(done),
            Err(PairError::Map(e)) => {
                gst::element_imp_error!(self, gst::StreamError::Decode, ("{}", e));
                Err(gst::FlowError::Error)
            }
            Err(PairError::Engine(e)) => {
                gst::element_imp_error!(self, gst::StreamError::Failed, ("Scoring failed: {}", e));
                Err(gst::FlowError::Error)
            }
        }
    }

    /// Whether a failure of the scorer's backend is handed to the CPU: a GPU backend under
    /// `backend=auto`.
    pub(super) fn can_fail_over(&self, state: &Session) -> bool {
        state
            .scorer
            .as_ref()
            .is_some_and(|s| s.backend_name() != "cpu")
            && lock(&self.settings).backend == VmafBackend::Auto
    }

    /// The GPU failed mid-stream (`e`, while frame set `current` was pushed): the stream goes
    /// on on the CPU, with the scalers and plan it had; the sets that were in flight on the GPU
    /// are mapped and scored again there, so no frame is lost. Returns what completed and
    /// whether `current` was among the sets in flight (the backend had taken it before it
    /// failed), or `None` when no CPU backend could be made (the caller reports `e`).
    #[allow(clippy::type_complexity)]
    fn fail_over(
        &self,
        state: &mut Session,
        e: &EngineError,
        current: u64,
    ) -> Option<(Vec<(usize, Scored<Tag>)>, bool)> {
        let plan = state.scorer.as_ref()?.plan().clone();
        let (frame, (w, h, bpc)) = (state.frame.clone()?, state.geometry?);
        let n = state.renditions.len();
        let cpu = self
            .cpu_backend_for(&plan, (w, h, bpc), &frame, state.scaling.clone())
            .ok()?;
        let (mut done, lost) = state.scorer.as_mut()?.fail_over(cpu);
        let frames: usize = lost.iter().map(Vec::len).sum();
        let handed_back = lost.iter().flatten().any(|f| f.tag.slot == current);
        gst::element_imp_warning!(
            self,
            gst::ResourceError::Failed,
            (
                "GPU scoring failed ({}): continuing on the CPU; the {} frames in flight are scored again on the CPU",
                e,
                frames
            )
        );
        for set in lost {
            // The set's reference and renditions, from its tags.
            let Some((reference, _)) = set.iter().find_map(|f| f.tag.retry.clone()) else {
                continue;
            };
            let slot = set.first().map_or(0, |f| f.tag.slot);
            let mut partners = vec![None; n];
            for f in &set {
                if let Some((_, b)) = &f.tag.retry {
                    if let Some(p) = partners.get_mut(f.rendition) {
                        *p = Some(b.clone());
                    }
                }
            }
            match self.push_set(state, (slot, &reference, &partners), None) {
                Ok(d) => done.extend(d),
                Err(PairError::Map(m)) => {
                    gst::warning!(CAT, imp = self, "cannot score a frame again: {m}");
                }
                Err(PairError::Engine(e)) => {
                    gst::warning!(CAT, imp = self, "cannot score a frame again: {e}");
                }
            }
        }
        Some((done, handed_back))
    }

    /// Both inputs are done: complete every frame, push every buffer, post each rendition's
    /// summary (those not posted yet) and close the logs.
    pub(super) fn finish_stream(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        {
            let mut state = lock(&self.state);
            if state.finished {
                return Err(gst::FlowError::Eos);
            }
            state.finished = true;
        }
        // Live pipelines: the scoring thread finishes what it was given first.
        self.live_drain()?;
        let tail = lock(&self.state)
            .scorer
            .as_mut()
            .map(|s| s.finish())
            .transpose();
        let tail = tail.map_err(|e| self.engine_failed(e))?.unwrap_or_default();
        self.emit_all(tail)?;
        self.live_release(true)?;
        // Whatever still waits (a frame whose scores never came) leaves as is.
        let rest = lock(&self.state).out.take_all();
        self.push_released(rest)?;
        let n = lock(&self.state).renditions.len();
        for k in 0..n {
            self.post_summary(k);
        }
        Err(gst::FlowError::Eos)
    }

    /// A flushing seek: every rendition restarts (indices, motion, pooling, unpaired
    /// counts), waiting output buffers are dropped and the logs are opened again.
    pub(super) fn restart_run(&self) -> Result<(), gst::FlowError> {
        let mut state = lock(&self.state);
        if let Some(s) = state.scorer.as_mut() {
            s.reset();
        }
        state.out.clear();
        state.finished = false;
        state.started = None;
        let ladder = state.ladder;
        let logs: Vec<(usize, Option<String>)> = state
            .renditions
            .iter()
            .enumerate()
            .filter(|(_, r)| r.log.is_some())
            .map(|(k, r)| (k, ladder.then(|| r.pad.label_or_name())))
            .collect();
        for r in &mut state.renditions {
            r.unpaired_distorted = 0;
            r.unpaired_reference = 0;
            r.frames_in = 0;
            r.done = false;
        }
        drop(state);
        for (k, name) in logs {
            // The settings' lock goes before the state's is taken or an error is posted.
            let opened = lock(&self.settings).open_log(name.as_deref());
            match opened {
                Ok(log) => {
                    if let Some(r) = lock(&self.state).renditions.get_mut(k) {
                        r.log = log;
                    }
                }
                Err(e) => {
                    self.post_error_message(e);
                    return Err(gst::FlowError::Error);
                }
            }
        }
        Ok(())
    }

    /// A rendition's pad is released while the element runs: its frames complete, its
    /// summary is posted and its log closed; the other renditions go on. Its slot stays (no
    /// frame comes for it any more).
    pub(super) fn end_rendition(&self, pad: &gst::Pad) {
        let k = {
            let state = lock(&self.state);
            match state
                .renditions
                .iter()
                .position(|r| r.pad.upcast_ref::<gst::Pad>() == pad)
            {
                Some(k) if state.ladder => k,
                _ => return,
            }
        };
        let done = lock(&self.state)
            .scorer
            .as_mut()
            .map(|s| s.finish_rendition(k))
            .transpose();
        match done {
            Ok(items) => {
                let _ = self.emit_all(items.unwrap_or_default());
            }
            Err(e) => {
                let _ = self.engine_failed(e);
            }
        }
        self.post_summary(k);
    }
}
