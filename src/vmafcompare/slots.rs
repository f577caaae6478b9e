//! Output slots: the buffers that leave on the src pad, in stream order, each waiting for the
//! scores of the renditions scored with it (a pair's distorted buffer: one; a ladder's
//! reference buffer: one per rendition that had a frame at its time; an unpaired or skipped
//! buffer: none). Used as is by the streaming thread (non-live) and inside the live scoring
//! queue ([`crate::vmafcompare::live::ScoringQueue`]), so that both release buffers the same
//! way.

use std::collections::VecDeque;

/// A released output buffer and the scores structures to attach to it as metas (one per
/// rendition that scored it, in rendition order of completion; none when unscored).
pub(crate) type Released = (gst::Buffer, Vec<gst::Structure>);

/// Which output slots are due ([`Slots::take_due`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// No clock (or no latency): completed slots leave at once.
    WhenReady,
    /// Slots whose running time is at or before this leave, scored or not; `None`: none
    /// yet (the pipeline has not run for one latency).
    Until(Option<gst::ClockTime>),
}

/// One output buffer waiting for `remaining` renditions' scores.
struct Slot {
    /// The frame set it belongs to (unique while the stream runs).
    id: u64,
    buffer: gst::Buffer,
    running_time: Option<gst::ClockTime>,
    /// Renditions whose scores are still to come.
    remaining: usize,
    metas: Vec<gst::Structure>,
}

/// The ordered output slots of one stream.
#[derive(Default)]
pub(crate) struct Slots {
    slots: VecDeque<Slot>,
}

impl Slots {
    /// Adds the output buffer of frame set `id`, complete once `remaining` renditions'
    /// scores came in ([`Slots::complete`]); `remaining` 0: it may leave at once, unscored.
    pub(crate) fn push(
        &mut self,
        id: u64,
        buffer: gst::Buffer,
        running_time: Option<gst::ClockTime>,
        remaining: usize,
    ) {
        self.slots.push_back(Slot {
            id,
            buffer,
            running_time,
            remaining,
            metas: Vec::new(),
        });
    }

    /// One rendition of frame set `id` is done, with `scores` to attach (`None`: unscored).
    /// Returns `false` when the slot already left (its deadline came first).
    pub(crate) fn complete(&mut self, id: u64, scores: Option<gst::Structure>) -> bool {
        match self.slots.iter_mut().find(|s| s.id == id) {
            Some(slot) => {
                slot.remaining = slot.remaining.saturating_sub(1);
                slot.metas.extend(scores);
                true
            }
            None => false,
        }
    }

    /// The completed slots at the front, in order.
    pub(crate) fn front_ready(&mut self) -> Vec<Released> {
        let mut out = Vec::new();
        while self.slots.front().is_some_and(|s| s.remaining == 0) {
            out.extend(self.slots.pop_front().map(Self::released));
        }
        out
    }

    fn released(slot: Slot) -> Released {
        (slot.buffer, slot.metas)
    }

    /// Running time of the oldest slot.
    pub(crate) fn next_time(&self) -> Option<gst::ClockTime> {
        self.slots.front().and_then(|s| s.running_time)
    }

    /// Slots that leave now, in order: with [`Due::Until`] those whose running time is at or
    /// before it, scored or not; with [`Due::WhenReady`], or for a slot without running time,
    /// those completed. Beyond `max_slots` the oldest leave anyway; with `all` every slot.
    pub(crate) fn take_due(&mut self, due: Due, all: bool, max_slots: usize) -> Vec<Released> {
        let mut out = Vec::new();
        while let Some(front) = self.slots.front() {
            let ready = front.remaining == 0;
            let leave = all
                || self.slots.len() > max_slots
                || match (front.running_time, due) {
                    (Some(rt), Due::Until(until)) => until.is_some_and(|u| rt <= u),
                    _ => ready,
                };
            if !leave {
                break;
            }
            out.extend(self.slots.pop_front().map(Self::released));
        }
        out
    }

    /// Every slot, in order, complete or not (end of stream).
    pub(crate) fn take_all(&mut self) -> Vec<Released> {
        self.slots.drain(..).map(Self::released).collect()
    }

    pub(crate) fn clear(&mut self) {
        self.slots.clear();
    }
}
