//! Sliding-window statistics of the per-frame VMAF score, and the alert state machine that
//! watches them (live monitoring).
//!
//! The window holds the most recent scored frames, either a fixed number of them or those
//! whose running time lies within a fixed duration of the newest. Statistics are recomputed
//! from the held values on every frame (no running sums), so they do not drift over days.
//! The harmonic mean is libvmaf's pooling formula, `n / sum(1 / (x + 1)) - 1`.

use std::collections::VecDeque;

/// Most frames a window holds, whatever its span (a duration window at a very high frame
/// rate, or frames without timestamps, are capped here).
pub const MAX_WINDOW_FRAMES: usize = 100_000;

/// How far back a window reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSpan {
    /// The last `n` scored frames (`1..=MAX_WINDOW_FRAMES`).
    Frames(usize),
    /// Frames whose running time is within this many nanoseconds of the newest frame's
    /// (`newest - t < duration`). Frames without a running time fall back to
    /// [`MAX_WINDOW_FRAMES`].
    Duration(u64),
}

/// Statistics of the scores in the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowStats {
    /// Frames in the window (>= 1).
    pub frames: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest score.
    pub min: f64,
    /// libvmaf's harmonic mean, `n / sum(1 / (x + 1)) - 1`.
    pub harmonic_mean: f64,
}

/// The most recent scores and their statistics.
#[derive(Debug, Clone)]
pub struct Window {
    span: WindowSpan,
    /// (running time in ns if known, score), oldest first.
    entries: VecDeque<(Option<u64>, f64)>,
}

impl Window {
    /// An empty window. `Frames(0)` is taken as `Frames(1)`.
    pub fn new(span: WindowSpan) -> Self {
        let span = match span {
            WindowSpan::Frames(n) => WindowSpan::Frames(n.clamp(1, MAX_WINDOW_FRAMES)),
            d => d,
        };
        Self {
            span,
            entries: VecDeque::new(),
        }
    }

    /// The span this window was made with.
    pub fn span(&self) -> WindowSpan {
        self.span
    }

    /// Adds the score of the newest frame (`time`: its running time in ns, if known) and
    /// returns the statistics of the window that now ends with it.
    pub fn push(&mut self, time: Option<u64>, score: f64) -> WindowStats {
        self.entries.push_back((time, score));
        let cap = match self.span {
            WindowSpan::Frames(n) => n,
            WindowSpan::Duration(_) => MAX_WINDOW_FRAMES,
        };
        while self.entries.len() > cap {
            self.entries.pop_front();
        }
        if let (WindowSpan::Duration(d), Some(now)) = (self.span, time) {
            while let Some(&(Some(t), _)) = self.entries.front() {
                // Frames older than the span, or from a previous stream (time went back).
                if now.saturating_sub(t) >= d || t > now {
                    self.entries.pop_front();
                } else {
                    break;
                }
            }
        }
        self.stats()
    }

    /// Statistics of the frames held (the newest is always held after a push).
    fn stats(&self) -> WindowStats {
        let n = self.entries.len().max(1) as f64;
        let (mut sum, mut inv, mut min) = (0.0, 0.0, f64::INFINITY);
        for &(_, v) in &self.entries {
            sum += v;
            inv += 1.0 / (v + 1.0);
            min = min.min(v);
        }
        WindowStats {
            frames: self.entries.len() as u64,
            mean: sum / n,
            min,
            harmonic_mean: n / inv - 1.0,
        }
    }

    /// Forgets every frame (new stream).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

/// A change of the alert state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertChange {
    /// The window mean fell below the threshold.
    Below,
    /// The window mean came back to at least threshold + hysteresis.
    Recovered,
}

/// Watches the window mean against a threshold, with hysteresis: one [`AlertChange::Below`]
/// when the mean drops under `threshold`, then nothing until it reaches
/// `threshold + hysteresis`, which gives one [`AlertChange::Recovered`].
#[derive(Debug, Clone)]
pub struct Alert {
    threshold: f64,
    hysteresis: f64,
    below: bool,
}

impl Alert {
    /// `threshold` in score units (VMAF 0..100); `<= 0` (or NaN) never alerts. `hysteresis`
    /// >= 0 score units (negative or NaN is taken as 0).
    pub fn new(threshold: f64, hysteresis: f64) -> Self {
        Self {
            threshold,
            hysteresis: if hysteresis.is_nan() {
                0.0
            } else {
                hysteresis.max(0.0)
            },
            below: false,
        }
    }

    /// Whether alerts are on (`threshold > 0`).
    pub fn enabled(&self) -> bool {
        self.threshold > 0.0
    }

    /// Whether the last update left the alert raised.
    pub fn is_below(&self) -> bool {
        self.below
    }

    /// Threshold, score units.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// Hysteresis, score units.
    pub fn hysteresis(&self) -> f64 {
        self.hysteresis
    }

    /// Changes threshold and hysteresis (as [`Alert::new`]) keeping the state; switching
    /// alerts off clears it.
    pub fn set_limits(&mut self, threshold: f64, hysteresis: f64) {
        let below = self.below;
        *self = Self::new(threshold, hysteresis);
        self.below = below && self.enabled();
    }

    /// Feeds the newest window mean; returns the state change it causes, if any.
    pub fn update(&mut self, mean: f64) -> Option<AlertChange> {
        if !self.enabled() || mean.is_nan() {
            return None;
        }
        if !self.below && mean < self.threshold {
            self.below = true;
            Some(AlertChange::Below)
        } else if self.below && mean >= self.threshold + self.hysteresis {
            self.below = false;
            Some(AlertChange::Recovered)
        } else {
            None
        }
    }

    /// Back to the not-alerting state (new stream).
    pub fn reset(&mut self) {
        self.below = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_window_keeps_the_last_n() {
        let mut w = Window::new(WindowSpan::Frames(3));
        for v in [10.0, 20.0, 30.0] {
            w.push(None, v);
        }
        let s = w.push(None, 60.0);
        assert_eq!(s.frames, 3);
        assert_eq!(s.mean, (20.0 + 30.0 + 60.0) / 3.0);
        assert_eq!(s.min, 20.0);
        let h = 3.0 / (1.0 / 21.0 + 1.0 / 31.0 + 1.0 / 61.0) - 1.0;
        assert_eq!(s.harmonic_mean, h);
    }

    #[test]
    fn duration_window_keeps_frames_within_the_span() {
        let ms = 1_000_000u64;
        let mut w = Window::new(WindowSpan::Duration(100 * ms));
        for i in 0..10u64 {
            w.push(Some(i * 40 * ms), i as f64);
        }
        // Newest at 360 ms: 280 and 320 ms are within 100 ms, 240 ms is not.
        let s = w.push(Some(400 * ms), 10.0);
        assert_eq!(s.frames, 3);
        assert_eq!(s.min, 8.0);
        // Time going back (a new segment) restarts the window.
        let s = w.push(Some(0), 5.0);
        assert_eq!((s.frames, s.mean), (1, 5.0));
    }

    #[test]
    fn alert_fires_once_and_recovers_with_hysteresis() {
        let mut a = Alert::new(50.0, 5.0);
        let means = [60.0, 49.0, 40.0, 51.0, 54.9, 55.0, 56.0, 49.9];
        let changes: Vec<_> = means.iter().map(|&m| a.update(m)).collect();
        use AlertChange::*;
        assert_eq!(
            changes,
            [
                None,
                Some(Below),
                None,
                None,
                None,
                Some(Recovered),
                None,
                Some(Below)
            ]
        );
        let mut off = Alert::new(0.0, 5.0);
        assert_eq!(off.update(-1.0), None);
    }
}
