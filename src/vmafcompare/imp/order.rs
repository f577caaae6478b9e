//! Timestamp order per sink pad: frames whose running time repeats or goes backwards are
//! counted for the summary and reported once per pad, so a broken upstream (a decoder that
//! stamps reordered frames wrongly, a demuxer fault) shows up as a message instead of as a
//! quietly shorter score.

use std::collections::HashMap;

use gst::ClockTime;

/// What one pad has seen.
#[derive(Debug, Clone, Copy, Default)]
struct PadOrder {
    last: Option<ClockTime>,
    out_of_order: u64,
}

/// The first out-of-order frame of a pad: what the warning says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfOrder {
    /// The pad's name (`reference`, `distorted`, `distorted_1`, ...).
    pub pad: String,
    /// Running time of the frame before it.
    pub previous: ClockTime,
    /// Its running time (equal to or earlier than `previous`).
    pub running_time: ClockTime,
}

impl OutOfOrder {
    /// The warning's text: the pad, both timestamps, and what it means.
    pub fn message(&self) -> String {
        let what = if self.running_time == self.previous {
            "repeats"
        } else {
            "goes backwards from"
        };
        format!(
            "{}: a frame's running time {} {what} the previous frame's {}: the upstream \
             decoder or demuxer stamps frames out of order; such frames cannot be paired by \
             time and are counted in the summary (out-of-order-*)",
            self.pad, self.running_time, self.previous
        )
    }
}

/// Per-pad order of running times, from READY->PAUSED (or a flush) on.
#[derive(Debug, Default)]
pub struct TimestampOrder {
    pads: HashMap<String, PadOrder>,
}

impl TimestampOrder {
    /// Records a frame of `pad` at `running_time`. Returns the report to post when this is
    /// the pad's first frame out of order (later ones are only counted).
    pub fn observe(&mut self, pad: &str, running_time: ClockTime) -> Option<OutOfOrder> {
        let entry = match self.pads.get_mut(pad) {
            Some(e) => e,
            None => self.pads.entry(pad.to_owned()).or_default(),
        };
        let report = match entry.last {
            Some(previous) if running_time <= previous => {
                entry.out_of_order += 1;
                (entry.out_of_order == 1).then(|| OutOfOrder {
                    pad: pad.to_owned(),
                    previous,
                    running_time,
                })
            }
            _ => None,
        };
        // The latest time seen: a frame that goes backwards does not lower the bar, so the
        // frames after it, in order again, are not counted.
        entry.last = Some(entry.last.map_or(running_time, |l| l.max(running_time)));
        report
    }

    /// Frames of `pad` that came out of order since the start or the last flush.
    pub fn count(&self, pad: &str) -> u64 {
        self.pads.get(pad).map_or(0, |p| p.out_of_order)
    }

    /// Frames of every pad that came out of order since the start or the last flush.
    pub fn total(&self) -> u64 {
        self.pads.values().map(|p| p.out_of_order).sum()
    }

    /// A flush or a new stream: counts and last times start again.
    pub fn reset(&mut self) {
        self.pads.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_and_regressions_are_counted_once_reported() {
        let ms = ClockTime::from_mseconds;
        let mut o = TimestampOrder::default();
        assert_eq!(o.observe("distorted", ms(100)), None);
        assert_eq!(o.observe("distorted", ms(300)), None);
        let first = o
            .observe("distorted", ms(300))
            .expect("a repeat is reported");
        assert_eq!((first.previous, first.running_time), (ms(300), ms(300)));
        assert!(first.message().contains("repeats"));
        assert_eq!(
            o.observe("distorted", ms(200)),
            None,
            "reported once per pad"
        );
        assert_eq!(o.observe("distorted", ms(350)), None);
        assert_eq!(o.count("distorted"), 2);
        assert_eq!(o.count("reference"), 0);
        o.reset();
        assert_eq!(o.count("distorted"), 0);
    }
}
