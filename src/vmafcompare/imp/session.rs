//! The session of one stream ([`Session`]): the reference's caps and the renditions scored
//! against it (a pair: one rendition), the scorer and what it was made for, the output slots;
//! and what goes with each rendition's frame through the scorer ([`Tag`]).

use std::collections::BTreeSet;
use std::time::Instant;

use super::caps::{FrameFormat, PadVideo};
use super::rendition::Rendition;
use crate::engine::log::LogError;
use crate::engine::scale::range::RangeConversion;
use crate::engine::scale::Scaling;
use crate::engine::{EngineError, Pool, Scorer};
use crate::vmafcompare::slots::Slots;
use crate::vmafcompare::InputPath;

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
        let pool = track.map_or_else(
            || Pool::new(Vec::<String>::new().into()),
            |t| t.pool().clone(),
        );
        let pushed = track.map_or(0, |t| t.frames_pushed());
        let fps = self
            .started
            .map_or(0.0, |t| pushed as f64 / t.elapsed().as_secs_f64().max(1e-9));
        Some(log.finish(&pool, fps, w, h))
    }

    /// The next output slot's id (frame sets and unscored buffers, in stream order).
    pub(super) fn take_slot(&mut self) -> u64 {
        self.next_slot += 1;
        self.next_slot - 1
    }
}
