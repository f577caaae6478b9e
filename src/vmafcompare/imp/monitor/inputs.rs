//! Live monitoring, the pads' input: peeking and popping buffers of the reference and of each
//! rendition (those auto-alignment holds first), end of stream, which side of a pair of
//! running times is unpaired, and how long a rendition's frame may be waited for.

use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;

use super::super::live_state::Input;
use super::super::util::lock;
use super::super::VmafCompare;
use super::{clock_time, ns};
use crate::vmafcompare::OnFull;

impl VmafCompare {
    /// The sink pad of `input` (`None`: no such rendition).
    pub(in crate::vmafcompare::imp) fn input_pad(
        &self,
        input: Input,
    ) -> Option<gst_base::AggregatorPad> {
        match input {
            Input::Reference => Some(self.reference_pad.clone()),
            Input::Rendition(k) => lock(&self.monitor.stream)
                .renditions
                .get(k)
                .and_then(|r| r.pad.clone()),
        }
    }

    /// The next buffer of `input` with its running time: held ones first, then the pad's.
    pub(in crate::vmafcompare::imp) fn peek_input(
        &self,
        input: Input,
    ) -> Option<(gst::Buffer, Option<gst::ClockTime>)> {
        {
            let stream = lock(&self.monitor.stream);
            let held = match input {
                Input::Reference => stream.held_reference.front(),
                Input::Rendition(k) => stream.renditions.get(k)?.held.front(),
            };
            if let Some(h) = held {
                return Some((h.buffer.clone(), h.running_time));
            }
        }
        let pad = self.input_pad(input)?;
        let b = pad.peek_buffer()?;
        let rt = Self::running_time(&pad, &b);
        Some((b, rt))
    }

    /// Takes the next buffer of `input` (see [`VmafCompare::peek_input`]).
    pub(in crate::vmafcompare::imp) fn pop_input(&self, input: Input) -> Option<gst::Buffer> {
        {
            let mut stream = lock(&self.monitor.stream);
            let held = match input {
                Input::Reference => stream.held_reference.pop_front(),
                Input::Rendition(k) => stream.renditions.get_mut(k)?.held.pop_front(),
            };
            if let Some(h) = held {
                return Some(h.buffer);
            }
        }
        self.input_pad(input)?.pop_buffer()
    }

    /// Whether nothing of `input` is held.
    fn nothing_held(&self, input: Input) -> bool {
        let stream = lock(&self.monitor.stream);
        match input {
            Input::Reference => stream.held_reference.is_empty(),
            Input::Rendition(k) => stream.renditions.get(k).is_none_or(|r| r.held.is_empty()),
        }
    }

    /// `input` has ended and nothing of it is held.
    pub(in crate::vmafcompare::imp) fn input_eos(&self, input: Input) -> bool {
        self.nothing_held(input) && self.input_pad(input).is_none_or(|p| p.is_eos())
    }

    /// The reference's running time `rrt` on rendition `k`'s time line (shifted by its delay,
    /// saturated at 0 and the clock's range): when the rendition's partner frame is due.
    pub(in crate::vmafcompare::imp) fn on_rendition_line(
        &self,
        rrt: gst::ClockTime,
        k: usize,
    ) -> gst::ClockTime {
        let t = (ns(rrt) + i128::from(self.rendition_delay(k))).clamp(0, i128::from(u64::MAX));
        clock_time(t as u64)
    }

    /// Rendition `k`'s delay against the reference, ns.
    pub(in crate::vmafcompare::imp) fn rendition_delay(&self, k: usize) -> i64 {
        lock(&self.monitor.stream)
            .renditions
            .get(k)
            .map_or(0, |r| r.delay)
    }

    /// Running time, on rendition `k`'s time line, of the buffer of `input` waiting for a
    /// partner: the reference's is shifted by the rendition's delay, since its partner is the
    /// frame that much later. `None` without a buffer or running time, or while buffers held
    /// by auto-alignment come first.
    fn waiting_since(&self, input: Input, k: usize) -> Option<gst::ClockTime> {
        if !self.nothing_held(input) {
            return None;
        }
        let pad = self.input_pad(input)?;
        let rt = pad
            .peek_buffer()
            .and_then(|b| Self::running_time(&pad, &b))?;
        Some(match input {
            Input::Reference => self.on_rendition_line(rt, k),
            Input::Rendition(_) => rt,
        })
    }

    /// Whether the next buffer of `input`, waiting for rendition `k`'s side (the reference
    /// for rendition `k`'s frame, or the rendition's frame for the reference), stops waiting
    /// (the reference frame goes on without that rendition; the rendition's frame is
    /// unpaired). Only on an aggregator timeout, and then, in a live pipeline with a clock,
    /// only when that buffer's own deadline has passed: its running time (on the rendition's
    /// time line) plus the latency, by when a partner still on time would have arrived. A
    /// timeout for an output deadline leaves a waiting buffer alone. Never for buffers held by
    /// auto-alignment. With `on-full=block` a frame waits for its partner, unless `others`
    /// (other renditions have frames waiting: a stalled rendition would hold them back).
    pub(in crate::vmafcompare::imp) fn partner_overdue(
        &self,
        input: Input,
        k: usize,
        timeout: bool,
        others: bool,
    ) -> bool {
        if !timeout {
            return false;
        }
        let block = lock(&self.monitor.stream).settings.on_full == OnFull::Block;
        if (block && !others) || !self.nothing_held(input) {
            return false;
        }
        let obj = self.obj();
        match (
            self.waiting_since(input, k),
            obj.current_running_time(),
            obj.latency(),
        ) {
            (Some(t), Some(now), Some(latency)) => t.saturating_add(latency) <= now,
            // No running time, clock or latency to compare: the timeout decides.
            _ => true,
        }
    }

    /// The aggregator's `next_time` in a live pipeline: the earliest of the running time of
    /// the oldest output buffer waiting in the scoring queue (it leaves at its deadline, this
    /// plus the latency) and that of a buffer waiting on a sink pad for its partner (see
    /// [`VmafCompare::partner_overdue`]). `None` (wait for data) while auto-alignment collects
    /// frames, and with `on-full=block` for a single rendition, where buffers wait for their
    /// scores and partners, not for a deadline (waking up at a deadline that has passed would
    /// only spin); a ladder's inputs keep their deadlines (a stalled rendition must not hold
    /// the others back).
    pub(in crate::vmafcompare::imp) fn live_next_time(&self) -> Option<gst::ClockTime> {
        let (n, block) = {
            let stream = lock(&self.monitor.stream);
            let block = stream.settings.on_full == OnFull::Block;
            if (block && stream.renditions.len() < 2) || stream.aligning() {
                return None;
            }
            (stream.renditions.len(), block)
        };
        // With `on-full=block` output buffers wait for their scores, not for a deadline.
        let output = match block {
            true => None,
            false => self.monitor.queue().and_then(|q| q.next_time()),
        };
        let mut times = vec![output];
        for k in 0..n {
            times.push(self.waiting_since(Input::Reference, k));
            times.push(self.waiting_since(Input::Rendition(k), k));
        }
        times.into_iter().flatten().min()
    }
}
