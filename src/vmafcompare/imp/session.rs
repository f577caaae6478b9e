//! The session of one stream ([`Session`]): the reference's caps and the renditions scored
//! against it (a pair: one rendition), the scorer and what it was made for, the output slots;
//! and what goes with each rendition's frame through the scorer ([`Tag`]).

use std::collections::BTreeSet;
use std::time::Instant;

use super::caps::{FrameFormat, PadVideo};
use super::order::TimestampOrder;
use super::rendition::Rendition;
use super::util::joined;
use crate::engine::log::LogError;
use crate::engine::scale::range::RangeConversion;
use crate::engine::scale::Scaling;
use crate::engine::{EngineError, FrameScores, Pool, Scorer};
use crate::vmafcompare::slots::Slots;
use crate::vmafcompare::{InputPath, PooledMetric, SummaryMessage};

/// What goes with each rendition's frame through the scorer.
#[derive(Clone)]
pub(super) struct Tag {
    /// The output slot (frame set) it belongs to.
    pub(super) slot: u64,
    /// The reference buffer and the rendition's, to be mapped and scored again on the CPU
    /// should the GPU fail with the frame in flight (only while that may happen: a GPU
    /// backend under `backend=auto`).
    pub(super) retry: Option<(gst::Buffer, gst::Buffer)>,
    /// The rendition buffer's timestamps (its frame message's).
    pub(super) pts: Option<gst::ClockTime>,
    pub(super) running_time: Option<gst::ClockTime>,
    pub(super) duration: Option<gst::ClockTime>,
}

/// Why a frame set could not be pushed.
pub(super) enum PairError {
    /// Mapping or reading a buffer failed.
    Map(String),
    /// The backend failed.
    Engine(EngineError),
}

/// A closed rendition ([`Session::close_rendition`]): its summary, its pad's name, and how
/// closing its log went (`None` without a log).
pub(super) struct ClosedRendition {
    pub(super) summary: SummaryMessage,
    pub(super) name: String,
    pub(super) log: Option<Result<(), LogError>>,
}

/// The summary's pooled statistics of every metric of `pool`, log order.
fn pooled_metrics(pool: &Pool) -> Vec<(String, PooledMetric)> {
    pool.pooled()
        .into_iter()
        .map(|(n, p)| {
            (
                n.to_owned(),
                PooledMetric {
                    min: p.min,
                    max: p.max,
                    mean: p.mean,
                    harmonic_mean: p.harmonic_mean,
                    percentile_1: p.percentile_1,
                    percentile_5: p.percentile_5,
                    percentile_10: p.percentile_10,
                },
            )
        })
        .collect()
}

/// One stream's session, created at READY->PAUSED and dropped at PAUSED->READY: the reference
/// and the renditions scored against it (a pair: one), the scorer, and the output slots.
#[derive(Default)]
pub(super) struct Session {
    pub(super) reference: Option<PadVideo>,
    /// One per rendition slot, in slot order.
    pub(super) renditions: Vec<Rendition>,
    /// A ladder (request pads): the src pad carries the reference buffers, each with one meta
    /// per rendition; messages, summaries and logs name the rendition. A pair: the src pad
    /// carries the distorted buffers.
    pub(super) ladder: bool,
    pub(super) scorer: Option<Scorer<Tag>>,
    /// `(width, height, bpc)` of the scored frames.
    pub(super) geometry: Option<(u32, u32, u32)>,
    /// The reference's and the renditions' sizes the backend was made for.
    pub(super) sizes: Vec<(u32, u32)>,
    /// The range conversions (reference's, each rendition's) the backend was made for: a
    /// caps change of range alone makes it again, as a change of size does.
    pub(super) conversions: Vec<[Option<RangeConversion>; 2]>,
    /// The scalers the backend was made with (a CPU backend taking over from a failed GPU
    /// gets them too).
    pub(super) scaling: Scaling,
    /// The frames' format the backend was made for.
    pub(super) frame: Option<FrameFormat>,
    pub(super) reference_scaled: BTreeSet<String>,
    pub(super) reference_paths: BTreeSet<InputPath>,
    /// The reference's packed Cb/Cr (CPU backend).
    pub(super) reference_chroma: [Vec<u16>; 2],
    /// The driver refused to import a DMABuf: read DMABufs back from now on.
    pub(super) dmabuf_refused: bool,
    /// Output buffers waiting for their scores (not live; a live pipeline's wait in the
    /// scoring queue).
    pub(super) out: Slots,
    pub(super) next_slot: u64,
    pub(super) started: Option<Instant>,
    pub(super) finished: bool,
    /// The always `distorted` pad was unlinked at READY->PAUSED in a ladder and was ended: it
    /// carries no rendition.
    pub(super) distorted_unused: bool,
}

impl Session {
    /// Closes rendition `k`'s log, if open: its pooled section (its track's pool) and the
    /// scoring speed (its frames pushed since the first set); `None` without a log.
    pub(super) fn finish_log(&mut self, k: usize) -> Option<Result<(), LogError>> {
        let log = self.renditions.get_mut(k)?.log.take()?;
        let (w, h) = self.geometry.map_or((0, 0), |(w, h, _)| (w, h));
        let track = self.scorer.as_ref().and_then(|s| s.track(k));
        // The track's pool is read in place; an empty one stands in when nothing was scored.
        let empty;
        let pool = match track {
            Some(t) => t.pool(),
            None => {
                empty = Pool::new(Vec::<String>::new().into());
                &empty
            }
        };
        let pushed = track.map_or(0, |t| t.frames_pushed());
        let fps = self
            .started
            .map_or(0.0, |t| pushed as f64 / t.elapsed().as_secs_f64().max(1e-9));
        Some(log.finish(pool, fps, w, h))
    }

    /// The next output slot's id (frame sets and unscored buffers, in stream order).
    pub(super) fn take_slot(&mut self) -> u64 {
        self.next_slot += 1;
        self.next_slot - 1
    }

    /// Writes rendition `k`'s frame to its log (none open: nothing to do). A write error
    /// closes the log, so the error is reported once.
    ///
    /// Errors: the log could not be written.
    pub(super) fn write_log(&mut self, k: usize, scores: &FrameScores) -> Result<(), LogError> {
        let (w, h) = self.geometry.map_or((0, 0), |(w, h, _)| (w, h));
        let Some(r) = self.renditions.get_mut(k) else {
            return Ok(());
        };
        let Some(log) = r.log.as_mut() else {
            return Ok(());
        };
        log.write_frame(scores, w, h).inspect_err(|_| r.log = None)
    }

    /// PAUSED->READY before the end: each open log gets its pooled section and is closed.
    ///
    /// Errors: a log could not be written (the first such; the others are closed still).
    pub(super) fn close_logs(&mut self) -> Result<(), LogError> {
        let mut first = Ok(());
        for k in 0..self.renditions.len() {
            if let Some(Err(e)) = self.finish_log(k) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// Frames scored over every rendition, and the frames that had no partner (reference,
    /// distorted), for the `stats` property.
    pub(super) fn counts(&self) -> (u64, u64, u64) {
        let frames = (0..self.renditions.len())
            .filter_map(|k| self.scorer.as_ref()?.track(k))
            .map(|t| t.pool().count())
            .sum::<u64>();
        let (r, d) = self.renditions.iter().fold((0, 0), |(r, d), x| {
            (r + x.unpaired_reference, d + x.unpaired_distorted)
        });
        (frames, r, d)
    }

    /// Ends rendition `k` (once: at the end of the stream, or when its pad is released):
    /// closes its log and returns its summary, with the `model` property, the live counts
    /// `(skipped, late)` and the pads' out-of-order counts of `order`. `None` when it ended
    /// already or there is no rendition `k`.
    pub(super) fn close_rendition(
        &mut self,
        k: usize,
        model: &str,
        (skipped, late): (u64, u64),
        order: &TimestampOrder,
    ) -> Option<ClosedRendition> {
        match self.renditions.get_mut(k) {
            Some(r) if !r.done => r.done = true,
            _ => return None,
        }
        let track = self.scorer.as_ref().and_then(|s| s.track(k));
        let frames = track.map_or(0, |s| s.pool().count());
        let metrics = track.map(|s| pooled_metrics(s.pool())).unwrap_or_default();
        let backend = self
            .scorer
            .as_ref()
            .map_or("cpu", |s| s.backend_name())
            .to_owned();
        let log = self.finish_log(k);
        let r = &self.renditions[k];
        let (reference_range, distorted_range, range_conversion) = r.ranges.fields();
        let summary = SummaryMessage {
            frames,
            unpaired_reference: r.unpaired_reference,
            unpaired_distorted: r.unpaired_distorted,
            out_of_order_reference: order.count("reference"),
            out_of_order_distorted: order.count(&r.name),
            backend,
            model: model.to_owned(),
            reference_input: joined(self.reference_paths.iter().map(|p| p.name())),
            distorted_input: joined(r.paths.iter().map(|p| p.name())),
            metrics,
            skipped,
            late,
            scored_width: self.geometry.map_or(0, |(w, _, _)| w),
            scored_height: self.geometry.map_or(0, |(_, h, _)| h),
            reference_scaling: joined(&self.reference_scaled),
            distorted_scaling: joined(&r.scaled),
            reference_range,
            distorted_range,
            range_conversion,
            pad: self.ladder.then(|| r.name.clone()),
            label: self.ladder.then(|| r.label_or_name()),
        };
        Some(ClosedRendition {
            summary,
            name: r.name.clone(),
            log,
        })
    }
}
