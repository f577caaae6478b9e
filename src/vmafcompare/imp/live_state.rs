//! Live monitoring's state (issue 7, per rendition since issue 45): the live-monitoring
//! settings ([`MonitorSettings`]), each rendition's delay, alignment, held buffers, window and
//! alerts ([`RenditionLive`]), the scoring queue of a live pipeline ([`Monitor`]) and the
//! inputs they are about ([`Input`]). The behaviour is in [`super::monitor`].

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gst::glib;
use gst::prelude::*;

use super::util::lock;
use crate::engine::align::Aligner;
use crate::engine::window::{Alert, Window, WindowStats};
use crate::vmafcompare::live::{OnFull, ScoringQueue};

pub(in crate::vmafcompare::imp) const DEFAULT_QUEUE_SIZE: u32 = 3;
pub(in crate::vmafcompare::imp) const MAX_QUEUE_SIZE: u32 = 256;
pub(in crate::vmafcompare::imp) const DEFAULT_ALIGN_MAX_OFFSET: u32 = 15;
pub(in crate::vmafcompare::imp) const MAX_ALIGN_MAX_OFFSET: u32 = 1000;
pub(in crate::vmafcompare::imp) const DEFAULT_ALIGN_DURATION: u64 = 1_000_000_000;
pub(in crate::vmafcompare::imp) const MAX_ALIGN_DURATION: u64 = 60_000_000_000;
/// Most frames auto-alignment compares (and holds, per stream, with the search range).
pub(in crate::vmafcompare::imp) const MAX_ALIGN_FRAMES: u64 = 3000;
pub(in crate::vmafcompare::imp) const DEFAULT_WINDOW_SIZE: u32 = 25;
pub(in crate::vmafcompare::imp) const DEFAULT_ALERT_HYSTERESIS: f64 = 5.0;
/// Largest `|distorted-delay|`: one hour, in ns.
pub(in crate::vmafcompare::imp) const MAX_DELAY: i64 = 3_600_000_000_000;
/// Frame duration assumed when the caps carry no frame rate (25 fps).
pub(in crate::vmafcompare::imp) const FALLBACK_FRAME: gst::ClockTime =
    gst::ClockTime::from_mseconds(40);
/// Output buffers a live element keeps at most when deadlines do not come (no clock).
pub(in crate::vmafcompare::imp) const MAX_SLOTS: usize = 64;
/// Test-only: `<element name>=<ms>[,...]` makes that element's scoring thread sleep this
/// long before each pair (a scorer too slow for a live pipeline, without a slow machine).
pub(crate) const TEST_SLOW_ENV: &str = "VMAFCOMPARE_TEST_SCORE_DELAY";

/// The properties of this module (values behind [`Monitor::settings`]).
#[derive(Debug, Clone)]
pub(super) struct MonitorSettings {
    pub(super) queue_size: u32,
    pub(super) on_full: OnFull,
    pub(super) distorted_delay: i64,
    pub(super) auto_align: bool,
    pub(super) align_max_offset: u32,
    pub(super) align_duration: u64,
    pub(super) window_size: u32,
    pub(super) window_duration: u64,
    pub(super) alert_threshold: f64,
    pub(super) alert_hysteresis: f64,
}

impl Default for MonitorSettings {
    fn default() -> Self {
        Self {
            queue_size: DEFAULT_QUEUE_SIZE,
            on_full: OnFull::Skip,
            distorted_delay: 0,
            auto_align: false,
            align_max_offset: DEFAULT_ALIGN_MAX_OFFSET,
            align_duration: DEFAULT_ALIGN_DURATION,
            window_size: DEFAULT_WINDOW_SIZE,
            window_duration: 0,
            alert_threshold: 0.0,
            alert_hysteresis: DEFAULT_ALERT_HYSTERESIS,
        }
    }
}

/// One input of the element: the reference, or the rendition in slot `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::vmafcompare::imp) enum Input {
    Reference,
    Rendition(usize),
}

/// Frames auto-alignment compares: `duration` of frames of `frame` each, 1..=MAX_ALIGN_FRAMES.
pub(in crate::vmafcompare::imp) fn align_frames(duration: u64, frame: gst::ClockTime) -> usize {
    (duration / frame.nseconds().max(1)).clamp(1, MAX_ALIGN_FRAMES) as usize
}

/// A buffer taken from a pad before it could be paired (auto-alignment).
pub(super) struct Held {
    pub(super) buffer: gst::Buffer,
    pub(super) running_time: Option<gst::ClockTime>,
}

/// One rendition's live state: its delay and alignment, the buffers alignment took from its
/// pad, its window and alerts.
#[derive(Default)]
pub(super) struct RenditionLive {
    /// Its sink pad.
    pub(super) pad: Option<gst_base::AggregatorPad>,
    /// Its name and label for messages (`None`: a pair's, whose messages name no pad).
    pub(super) names: Option<(String, String)>,
    /// Effective delay of the rendition against the reference, ns.
    pub(super) delay: i64,
    /// Collecting the first frames for auto-alignment.
    pub(super) aligner: Option<Aligner>,
    /// Buffers collected by the aligner, to pair before the pad's own.
    pub(super) held: VecDeque<Held>,
    pub(super) window: Option<Window>,
    pub(super) alert: Option<Alert>,
    /// A reference frame went by without this rendition's frame (a `stalled` alert was
    /// posted); cleared at the next frame it has.
    pub(super) stalled: bool,
    /// The last window statistics of its scores (a stalled alert carries them).
    pub(super) last_window: Option<WindowStats>,
}

/// Per-stream state, reset at READY->PAUSED.
#[derive(Default)]
pub(super) struct Stream {
    pub(super) settings: MonitorSettings,
    /// Frame duration (from the renditions' caps).
    pub(super) frame: Option<gst::ClockTime>,
    /// Reference buffers collected by auto-alignment, to pair before the pad's own.
    pub(super) held_reference: VecDeque<Held>,
    /// One per rendition slot.
    pub(super) renditions: Vec<RenditionLive>,
    /// Decided at the first frame set: upstream is live (scoring thread in use).
    pub(super) live: Option<bool>,
    /// Test hook: extra time per scored frame set on the scoring thread.
    pub(super) slow: Option<Duration>,
}

impl Stream {
    pub(super) fn aligning(&self) -> bool {
        self.renditions.iter().any(|r| r.aligner.is_some())
    }
}

/// Live-monitoring state of one element.
#[derive(Default)]
pub(super) struct Monitor {
    pub(super) settings: Mutex<MonitorSettings>,
    pub(super) stream: Mutex<Stream>,
    pub(super) queue: Mutex<Option<Arc<ScoringQueue>>>,
    pub(super) flushing: AtomicBool,
}

impl Monitor {
    /// Sets one of this module's properties; `false` when `name` is not one of them.
    pub(super) fn set_property(&self, name: &str, value: &glib::Value) -> bool {
        let mut s = lock(&self.settings);
        match name {
            "queue-size" => s.queue_size = value.get().unwrap_or(DEFAULT_QUEUE_SIZE).max(1),
            "on-full" => s.on_full = value.get().unwrap_or_default(),
            "distorted-delay" => s.distorted_delay = value.get().unwrap_or(0),
            "auto-align" => s.auto_align = value.get().unwrap_or(false),
            "align-max-offset" => {
                s.align_max_offset = value.get().unwrap_or(DEFAULT_ALIGN_MAX_OFFSET)
            }
            "align-duration" => {
                s.align_duration = value.get().unwrap_or(DEFAULT_ALIGN_DURATION).max(1)
            }
            "window-size" => s.window_size = value.get().unwrap_or(DEFAULT_WINDOW_SIZE).max(1),
            "window-duration" => s.window_duration = value.get().unwrap_or(0),
            "alert-threshold" => s.alert_threshold = value.get().unwrap_or(0.0),
            "alert-hysteresis" => {
                s.alert_hysteresis = value.get().unwrap_or(DEFAULT_ALERT_HYSTERESIS)
            }
            _ => return false,
        }
        true
    }

    /// Value of one of this module's properties; `None` when `name` is not one of them.
    pub(super) fn property(&self, name: &str) -> Option<glib::Value> {
        let s = lock(&self.settings);
        Some(match name {
            "queue-size" => s.queue_size.to_value(),
            "on-full" => s.on_full.to_value(),
            "distorted-delay" => s.distorted_delay.to_value(),
            "auto-align" => s.auto_align.to_value(),
            "align-max-offset" => s.align_max_offset.to_value(),
            "align-duration" => s.align_duration.to_value(),
            "window-size" => s.window_size.to_value(),
            "window-duration" => s.window_duration.to_value(),
            "alert-threshold" => s.alert_threshold.to_value(),
            "alert-hysteresis" => s.alert_hysteresis.to_value(),
            _ => return None,
        })
    }

    pub(super) fn queue(&self) -> Option<Arc<ScoringQueue>> {
        lock(&self.queue).clone()
    }
}
