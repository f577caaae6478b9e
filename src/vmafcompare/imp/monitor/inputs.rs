//! Live monitoring, the pads' input: peeking and popping buffers by side, end of stream, which
//! side is unpaired, and how long a partner may be waited for.

use super::*;

impl VmafCompare {
    pub(super) fn pad(&self, side: usize) -> &gst_base::AggregatorPad {
        if side == 0 {
            &self.reference_pad
        } else {
            &self.distorted_pad
        }
    }

    /// The next buffer of a stream (0 reference, 1 distorted) with its running time: held
    /// ones first, then the pad's.
    pub(in crate::vmafcompare::imp) fn peek_input(
        &self,
        side: usize,
    ) -> Option<(gst::Buffer, Option<gst::ClockTime>)> {
        if let Some(h) = lock(&self.monitor.stream).held[side].front() {
            return Some((h.buffer.clone(), h.running_time));
        }
        let pad = self.pad(side);
        let b = pad.peek_buffer()?;
        let rt = Self::running_time(pad, &b);
        Some((b, rt))
    }

    /// Takes the next buffer of a stream (see [`VmafCompare::peek_input`]).
    pub(in crate::vmafcompare::imp) fn pop_input(&self, side: usize) -> Option<gst::Buffer> {
        if let Some(h) = lock(&self.monitor.stream).held[side].pop_front() {
            return Some(h.buffer);
        }
        self.pad(side).pop_buffer()
    }

    /// A stream has ended and nothing of it is held.
    pub(in crate::vmafcompare::imp) fn input_eos(&self, side: usize) -> bool {
        lock(&self.monitor.stream).held[side].is_empty() && self.pad(side).is_eos()
    }

    /// Whether `rrt` and the delayed `drt` are more than `half` apart: `Some(true)` when the
    /// reference is the earlier one, `Some(false)` the distorted, `None` when they pair.
    pub(in crate::vmafcompare::imp) fn unpaired_side(
        &self,
        rrt: gst::ClockTime,
        drt: gst::ClockTime,
        half: gst::ClockTime,
    ) -> Option<bool> {
        let delay = i128::from(lock(&self.monitor.stream).delay);
        let (r, d, half) = (ns(rrt), ns(drt) - delay, ns(half));
        if r + half < d {
            Some(true)
        } else if d + half < r {
            Some(false)
        } else {
            None
        }
    }

    /// Running time, on the distorted stream's time line, of the buffer waiting on the pad of
    /// `side` (0 reference, 1 distorted) for a partner: the reference's is shifted by the
    /// distorted delay, since its partner is the distorted frame that much later. `None`
    /// without a buffer or running time, or while buffers held by auto-alignment come first
    /// on that side.
    pub(super) fn waiting_since(&self, side: usize) -> Option<gst::ClockTime> {
        let delay = {
            let stream = lock(&self.monitor.stream);
            if !stream.held[side].is_empty() {
                return None;
            }
            if side == 0 {
                stream.delay
            } else {
                0
            }
        };
        let pad = self.pad(side);
        let rt = pad
            .peek_buffer()
            .and_then(|b| Self::running_time(pad, &b))?;
        let t = (ns(rt) + i128::from(delay)).clamp(0, i128::from(u64::MAX));
        Some(clock_time(t as u64))
    }

    /// Whether the next buffer of `side`, waiting alone, stops waiting for its partner
    /// (reference: dropped; distorted: passed on unscored; both counted as unpaired). Only
    /// on an aggregator timeout, and then, in a live pipeline with a clock, only when that
    /// buffer's own deadline has passed: its running time (see `waiting_since`) plus the
    /// latency, by when a partner still on time would have arrived. A timeout for an output
    /// deadline leaves a waiting buffer alone. Never with `on-full=block` (every frame waits
    /// for its partner) nor for buffers held by auto-alignment.
    pub(in crate::vmafcompare::imp) fn partner_overdue(&self, side: usize, timeout: bool) -> bool {
        if !timeout {
            return false;
        }
        {
            let stream = lock(&self.monitor.stream);
            if stream.settings.on_full == OnFull::Block || !stream.held[side].is_empty() {
                return false;
            }
        }
        let obj = self.obj();
        match (
            self.waiting_since(side),
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
    /// [`VmafCompare::partner_overdue`]). `None` (wait for data) with `on-full=block`, where
    /// buffers wait for their scores and partners, not for a deadline (waking up at a
    /// deadline that has passed would only spin), and while auto-alignment collects frames.
    pub(in crate::vmafcompare::imp) fn live_next_time(&self) -> Option<gst::ClockTime> {
        {
            let stream = lock(&self.monitor.stream);
            if stream.settings.on_full == OnFull::Block || stream.aligner.is_some() {
                return None;
            }
        }
        let output = self.monitor.queue().and_then(|q| q.next_time());
        [output, self.waiting_since(0), self.waiting_since(1)]
            .into_iter()
            .flatten()
            .min()
    }
}
