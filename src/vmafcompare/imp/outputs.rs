//! Outputs: each scored frame's buffer with its meta, the per-frame and summary messages, and
//! the libvmaf-layout log (`results-location`).

use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;

use super::session::{ClosedRendition, Tag};
use super::util::{is_gap, lock, CAT};
use super::VmafCompare;
use crate::engine::{EngineError, FrameScores, Scored};
use crate::vmafcompare::FrameMessage;

impl VmafCompare {
    /// The `stats` property: the summary's counters so far (see its blurb). Takes each lock
    /// alone (the scoring queue's, the state, the order log), so it never waits on one while
    /// holding another.
    pub(super) fn stats(&self) -> gst::Structure {
        let (skipped, late) = self.monitor_counts();
        let (frames, unpaired_reference, unpaired_distorted) = lock(&self.state).counts();
        let (order_reference, order_distorted) = {
            let o = lock(&self.order);
            (o.count("reference"), o.total() - o.count("reference"))
        };
        gst::Structure::builder("vmafcompare-stats")
            .field("frames", frames)
            .field("skipped", skipped)
            .field("late", late)
            .field("unpaired-reference", unpaired_reference)
            .field("unpaired-distorted", unpaired_distorted)
            .field("out-of-order-reference", order_reference)
            .field("out-of-order-distorted", order_distorted)
            .build()
    }

    /// Posts a scoring failure as an element error.
    pub(super) fn engine_failed(&self, e: EngineError) -> gst::FlowError {
        gst::element_imp_error!(self, gst::StreamError::Failed, ("Scoring failed: {}", e));
        gst::FlowError::Error
    }

    /// Posts, logs and completes each scored rendition frame, as the scorer returns them
    /// (each with its rendition's slot): its frame message (with its rendition's window
    /// statistics, and in a ladder its `pad` and `label`), an alert when its window crossed
    /// the threshold, its log line; its scores go to its output slot as a meta. Then the
    /// output buffers whose renditions are all complete leave, in order (in a live pipeline
    /// the scoring queue releases them).
    pub(super) fn emit_all(
        &self,
        items: Vec<(usize, Scored<Tag>)>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        if items.is_empty() {
            return self.release_slots();
        }
        let post = lock(&self.settings).frame_message;
        let live = self.live_queue();
        let obj = self.obj();
        for (k, item) in items {
            let Scored { tag, scores, .. } = item;
            let Tag {
                slot,
                pts,
                running_time,
                duration,
                retry,
            } = tag;
            // The slot's buffer is now the only reference the element holds: attaching the
            // meta does not copy the frame.
            drop(retry);
            let mut structure = None;
            if let Some(scores) = scores {
                let names = {
                    let state = lock(&self.state);
                    match state.renditions.get(k) {
                        Some(r) if state.ladder => (Some(r.name.clone()), Some(r.label_or_name())),
                        _ => (None, None),
                    }
                };
                let mut msg = FrameMessage {
                    pad: names.0,
                    label: names.1,
                    ..Self::frame_message(&scores, (pts, running_time, duration))
                };
                let alert = self.monitor_frame(k, &mut msg);
                let s = msg.to_structure();
                self.write_log(k, &scores)?;
                if post {
                    let m = gst::message::Element::builder(s.clone()).src(&*obj).build();
                    let _ = obj.post_message(m);
                }
                if let Some(alert) = alert {
                    let m = gst::message::Element::builder(alert).src(&*obj).build();
                    let _ = obj.post_message(m);
                }
                structure = Some(s);
            }
            match live.as_ref() {
                Some(q) => q.complete(slot, structure),
                None => {
                    lock(&self.state).out.complete(slot, structure);
                }
            }
        }
        self.release_slots()
    }

    /// Not live: pushes, in order, the output buffers whose renditions' scores are all in.
    pub(super) fn release_slots(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        if self.live_queue().is_some() {
            return Ok(gst::FlowSuccess::Ok);
        }
        let ready = lock(&self.state).out.front_ready();
        self.push_released(ready)
    }

    /// Pushes one output buffer: a GAP without a picture (the aggregator's form of a GAP
    /// event) leaves as a GAP event, in order: downstream elements cannot map an empty video
    /// buffer.
    pub(super) fn finish_output(
        &self,
        buffer: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        if is_gap(&buffer) && buffer.size() == 0 {
            if let Some(pts) = buffer.pts() {
                let gap = gst::event::Gap::builder(pts)
                    .duration(buffer.duration())
                    .build();
                let _ = self.obj().src_pad().push_event(gap);
            }
            return Ok(gst::FlowSuccess::Ok);
        }
        self.obj().finish_buffer(buffer)
    }

    /// The frame message of `scores` for a distorted buffer at `(pts, running time,
    /// duration)`.
    pub(super) fn frame_message(
        scores: &FrameScores,
        (pts, running_time, duration): (
            Option<gst::ClockTime>,
            Option<gst::ClockTime>,
            Option<gst::ClockTime>,
        ),
    ) -> FrameMessage {
        FrameMessage {
            index: scores.index,
            pts,
            running_time,
            duration,
            vmaf: scores.vmaf(),
            metrics: scores.iter().map(|(n, v)| (n.to_owned(), v)).collect(),
            skipped: 0,
            window: None,
            pad: None,
            label: None,
        }
    }

    /// Writes rendition `k`'s frame to its log; a write error ends the stream.
    pub(super) fn write_log(&self, k: usize, scores: &FrameScores) -> Result<(), gst::FlowError> {
        let written = lock(&self.state).write_log(k, scores);
        written.map_err(|e| {
            gst::element_imp_error!(self, gst::ResourceError::Write, ("{}", e));
            gst::FlowError::Error
        })
    }

    /// Posts rendition `k`'s summary (once: at the end of the stream, or when its pad is
    /// released) and closes its log; warns when frames had no partner.
    pub(super) fn post_summary(&self, k: usize) {
        let model = lock(&self.settings).model.clone();
        let counts = self.monitor_counts();
        let end = {
            let mut state = lock(&self.state);
            let order = lock(&self.order);
            state.close_rendition(k, &model, counts, &order)
        };
        let Some(ClosedRendition {
            summary,
            name,
            log: log_result,
        }) = end
        else {
            return;
        };
        let (frames, ladder) = (summary.frames, summary.pad.is_some());
        if let Some(Err(e)) = log_result {
            gst::element_imp_error!(self, gst::ResourceError::Write, ("{}", e));
        }
        let unpaired = summary.unpaired_reference + summary.unpaired_distorted;
        if unpaired > 0 && ladder {
            gst::element_imp_warning!(
                self,
                gst::StreamError::Failed,
                (
                    "{}: {} reference and {} distorted frames had no partner and were not scored",
                    name,
                    summary.unpaired_reference,
                    summary.unpaired_distorted
                ),
                ["The rendition ended early, stalled, or its timestamps do not line up with the reference's; {} pairs were scored.", frames]
            );
        } else if unpaired > 0 {
            gst::element_imp_warning!(
                self,
                gst::StreamError::Failed,
                (
                    "{} reference and {} distorted frames had no partner and were not scored",
                    summary.unpaired_reference,
                    summary.unpaired_distorted
                ),
                ["One input ended early or their timestamps do not line up; {} pairs were scored.", frames]
            );
        }
        if let Some(vmaf) = summary.get("vmaf") {
            gst::info!(
                CAT,
                imp = self,
                "{name}: {frames} frames, VMAF mean {:.6} harmonic {:.6}",
                vmaf.mean,
                vmaf.harmonic_mean
            );
        }
        let obj = self.obj();
        let _ = obj.post_message(
            gst::message::Element::builder(summary.to_structure())
                .src(&*obj)
                .build(),
        );
    }

    /// PAUSED->READY before the end: each open log gets its pooled section and is closed.
    ///
    /// Errors: a log could not be written (the first such).
    pub(super) fn close_logs(&self) -> Result<(), gst::ErrorMessage> {
        let closed = lock(&self.state).close_logs();
        closed.map_err(|e| gst::error_msg!(gst::ResourceError::Write, ("{}", e)))
    }
}
