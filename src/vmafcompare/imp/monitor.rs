//! Live monitoring in the element (issue 7): its properties, the scoring thread of live
//! pipelines ([`crate::vmafcompare::live`]), the distorted-stream delay and auto-alignment
//! ([`crate::engine::align`]), the sliding window and alerts ([`crate::engine::window`]), and
//! the latency these add. `imp.rs` calls in here at a few delimited points.

use std::sync::atomic::Ordering;
use std::time::Duration;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;

use super::util::lock;
use super::VmafCompare;

mod align;
mod inputs;
mod scoring;

use super::live_state::{
    align_frames, RenditionLive, Stream, DEFAULT_ALERT_HYSTERESIS, DEFAULT_ALIGN_DURATION,
    DEFAULT_ALIGN_MAX_OFFSET, DEFAULT_QUEUE_SIZE, DEFAULT_WINDOW_SIZE, FALLBACK_FRAME,
    MAX_ALIGN_DURATION, MAX_ALIGN_MAX_OFFSET, MAX_DELAY, MAX_QUEUE_SIZE, TEST_SLOW_ENV,
};
use crate::engine::align::Aligner;
use crate::engine::window::{
    Alert, AlertChange, Window, WindowSpan, WindowStats, MAX_WINDOW_FRAMES,
};
use crate::vmafcompare::live::OnFull;
use crate::vmafcompare::{AlertMessage, FrameMessage, META_NAME};

/// Parameter specs of the live-monitoring properties, appended to the element's.
pub(super) fn properties() -> Vec<glib::ParamSpec> {
    vec![
        glib::ParamSpecUInt::builder("queue-size")
            .nick("Scoring queue size")
            .blurb(
                "Live pipelines: frame pairs that may wait for (or be in) scoring on the \
                 element's scoring thread; when that many wait, or the scorer's pace would \
                 miss the latency, on-full decides. The element's latency is queue-size + 1 \
                 frames; each buffer leaves at its deadline, scored or not. Non-live \
                 pipelines score in the streaming thread",
            )
            .minimum(1)
            .maximum(MAX_QUEUE_SIZE)
            .default_value(DEFAULT_QUEUE_SIZE)
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder_with_default("on-full", OnFull::Skip)
            .nick("On full queue")
            .blurb(
                "Live pipelines, scoring queue full: skip (pass the frame on unscored, count it \
                 in 'skipped'; motion restarts after the gap) or block (wait, blocking upstream)",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecInt64::builder("distorted-delay")
            .nick("Distorted delay")
            .blurb(
                "Nanoseconds the distorted stream is late by: distorted running time t is paired \
                 with reference running time t - delay. Negative: the reference is late. \
                 Replaced by the measured delay when auto-align is on",
            )
            .minimum(-MAX_DELAY)
            .maximum(MAX_DELAY)
            .default_value(0)
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("auto-align")
            .nick("Auto-align")
            .blurb(
                "Find the frame offset between the streams at the start: the offset within \
                 +-align-max-offset frames that maximises the mean luma PSNR over align-duration, \
                 posted as 'vmafcompare-offset', then used for pairing. Holds the first \
                 align-duration + align-max-offset frames of each stream meanwhile",
            )
            .default_value(false)
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt::builder("align-max-offset")
            .nick("Alignment search range")
            .blurb("auto-align: largest offset searched, in frames, in both directions")
            .maximum(MAX_ALIGN_MAX_OFFSET)
            .default_value(DEFAULT_ALIGN_MAX_OFFSET)
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt64::builder("align-duration")
            .nick("Alignment duration")
            .blurb(
                "auto-align: nanoseconds of video compared at each offset (1 to 3000 frames; \
                 25 fps assumed when the distorted caps have no frame rate)",
            )
            .minimum(1)
            .maximum(MAX_ALIGN_DURATION)
            .default_value(DEFAULT_ALIGN_DURATION)
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt::builder("window-size")
            .nick("Window size")
            .blurb(
                "Scored frames in the sliding window whose VMAF mean, min and harmonic mean \
                 every frame message carries (window-frames, window-mean, ...)",
            )
            .minimum(1)
            .maximum(MAX_WINDOW_FRAMES as u32)
            .default_value(DEFAULT_WINDOW_SIZE)
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt64::builder("window-duration")
            .nick("Window duration")
            .blurb(
                "If not 0: the sliding window holds the scored frames of the last this many \
                 nanoseconds of running time instead of window-size frames",
            )
            .default_value(0)
            .mutable_ready()
            .build(),
        glib::ParamSpecDouble::builder("alert-threshold")
            .nick("Alert threshold")
            .blurb(
                "Post 'vmafcompare-alert' (below=true) when the window's mean VMAF falls below \
                 this, and again (below=false) when it is back at alert-threshold + \
                 alert-hysteresis. 0: no alerts",
            )
            .minimum(0.0)
            .maximum(1000.0)
            .default_value(0.0)
            .mutable_playing()
            .build(),
        glib::ParamSpecDouble::builder("alert-hysteresis")
            .nick("Alert hysteresis")
            .blurb("VMAF points above alert-threshold the window mean must reach to recover")
            .minimum(0.0)
            .maximum(1000.0)
            .default_value(DEFAULT_ALERT_HYSTERESIS)
            .mutable_playing()
            .build(),
    ]
}

/// `<name>=<ms>` entries of [`TEST_SLOW_ENV`] for the element called `name`.
fn test_slow(name: &str) -> Option<Duration> {
    let v = std::env::var(TEST_SLOW_ENV).ok()?;
    v.split(',').find_map(|e| {
        let (n, ms) = e.split_once('=')?;
        (n.trim() == name)
            .then(|| ms.trim().parse().ok().map(Duration::from_millis))
            .flatten()
    })
}

/// Copies `scores` into a `VmafCompareMeta` on `buffer`.
/// Attaches a `VmafCompareMeta` holding `scores`' fields to `buffer` (one more meta per call:
/// a ladder's reference buffer carries one per rendition).
pub(super) fn attach_meta(
    buffer: &mut gst::Buffer,
    scores: &gst::Structure,
) -> Result<(), glib::BoolError> {
    let buf = buffer.make_mut();
    let mut meta = gst::meta::CustomMeta::add(buf, META_NAME)?;
    let s = meta.mut_structure();
    for (name, value) in scores.iter() {
        s.set_value(name, value.clone());
    }
    Ok(())
}

/// An alert's structure: `msg`'s fields, `reason` (`vmaf`: the window mean crossed the
/// threshold; `stalled`: the rendition stopped or resumed sending frames) and, in a ladder,
/// the rendition's `pad` and `label`.
fn alert_structure(
    msg: &AlertMessage,
    reason: &str,
    names: Option<&(String, String)>,
) -> gst::Structure {
    let mut s = gst::Structure::from(msg);
    s.set("reason", reason);
    name_rendition(&mut s, names);
    s
}

/// Names a ladder's rendition (`pad`, `label`) in a live message; a pair's (`None`) names none.
fn name_rendition(s: &mut gst::StructureRef, names: Option<&(String, String)>) {
    if let Some((pad, label)) = names {
        s.set("pad", pad);
        s.set("label", label);
    }
}

/// The element's own latency in a live pipeline: one frame (motion needs the next frame)
/// plus `queue_size` frames of scoring queue.
fn own_latency(frame: gst::ClockTime, queue_size: u32) -> gst::ClockTime {
    clock_time(frame.nseconds().saturating_mul(u64::from(queue_size) + 1))
}

/// `ns` as a clock time, saturated at [`gst::ClockTime::MAX`]: `u64::MAX` is
/// `GST_CLOCK_TIME_NONE`, which `ClockTime::from_nseconds` refuses with a panic (extreme
/// frame durations times large property values saturate to it).
fn clock_time(ns: u64) -> gst::ClockTime {
    gst::ClockTime::from_nseconds(ns.min(gst::ClockTime::MAX.nseconds()))
}

fn ns(t: gst::ClockTime) -> i128 {
    i128::from(t.nseconds())
}

impl VmafCompare {
    /// READY->PAUSED: a fresh stream with the current settings, for renditions on `pads`
    /// (with their `(name, label)` for messages when they form a ladder).
    pub(super) fn monitor_start(
        &self,
        pads: Vec<(gst_base::AggregatorPad, Option<(String, String)>)>,
    ) {
        let settings = lock(&self.monitor.settings).clone();
        let span = if settings.window_duration > 0 {
            WindowSpan::Duration(settings.window_duration)
        } else {
            WindowSpan::Frames(settings.window_size as usize)
        };
        let renditions = pads
            .into_iter()
            .map(|(pad, names)| RenditionLive {
                pad: Some(pad),
                names,
                delay: settings.distorted_delay,
                // Sized again from the caps' frame rate when they have one.
                aligner: settings.auto_align.then(|| {
                    Aligner::new(
                        align_frames(settings.align_duration, FALLBACK_FRAME),
                        settings.align_max_offset as usize,
                    )
                }),
                window: Some(Window::new(span)),
                alert: Some(Alert::new(
                    settings.alert_threshold,
                    settings.alert_hysteresis,
                )),
                ..RenditionLive::default()
            })
            .collect();
        let stream = Stream {
            renditions,
            slow: test_slow(self.obj().name().as_str()),
            settings,
            ..Stream::default()
        };
        self.monitor_shutdown();
        self.monitor.flushing.store(false, Ordering::SeqCst);
        *lock(&self.monitor.stream) = stream;
    }

    /// PAUSED->READY (before the stream state goes): stops the scoring thread.
    pub(super) fn monitor_shutdown(&self) {
        let queue = self.monitor.queue();
        if let Some(q) = queue {
            q.shutdown();
        }
        *lock(&self.monitor.queue) = None;
        let mut stream = lock(&self.monitor.stream);
        stream.held_reference.clear();
        for r in &mut stream.renditions {
            r.held.clear();
        }
        stream.live = None;
    }

    /// Flush: queued work and held frames are dropped, windows and alerts restart.
    pub(super) fn monitor_flush(&self) {
        if let Some(q) = self.monitor.queue() {
            q.clear();
        }
        let mut stream = lock(&self.monitor.stream);
        stream.held_reference.clear();
        for r in &mut stream.renditions {
            r.held.clear();
            // Still searching: start the search again with the frames after the flush.
            if let Some(a) = r.aligner.as_mut() {
                a.clear();
            }
            if let Some(w) = r.window.as_mut() {
                w.clear();
            }
            if let Some(a) = r.alert.as_mut() {
                a.reset();
            }
            r.stalled = false;
            r.last_window = None;
        }
        self.monitor.flushing.store(false, Ordering::SeqCst);
    }

    /// Flush-start on a sink pad: a streaming thread blocked by `on-full=block` gives up.
    pub(super) fn monitor_flush_start(&self) {
        self.monitor.flushing.store(true, Ordering::SeqCst);
    }

    pub(in crate::vmafcompare::imp) fn cancelled(&self) -> bool {
        self.monitor.flushing.load(Ordering::SeqCst)
            || self
                .obj()
                .src_pad()
                .pad_flags()
                .contains(gst::PadFlags::FLUSHING)
    }

    /// The distorted pad's frame duration is known (caps): sizes the alignment and reports
    /// the latency: one frame (motion needs the next frame), plus `queue-size` frames (live
    /// scoring queue), plus the time the distorted stream waits when the reference is late
    /// (negative delay; with auto-align, up to `align-max-offset` frames).
    pub(super) fn monitor_caps(&self, frame: gst::ClockTime) {
        let mut stream = lock(&self.monitor.stream);
        stream.frame = Some(frame);
        let s = stream.settings.clone();
        for r in &mut stream.renditions {
            if let Some(a) = r.aligner.as_mut() {
                if a.held() == (0, 0) {
                    *a = Aligner::new(
                        align_frames(s.align_duration, frame),
                        s.align_max_offset as usize,
                    );
                }
            }
        }
        let latency = self.monitor_latency(&stream);
        drop(stream);
        self.obj().set_latency(latency, Some(latency));
    }

    fn monitor_latency(&self, stream: &Stream) -> gst::ClockTime {
        let frame = stream.frame.unwrap_or(FALLBACK_FRAME);
        let s = &stream.settings;
        // The most any rendition waits for a late reference.
        let reference_late = stream
            .renditions
            .iter()
            .map(|r| {
                if r.aligner.is_some() {
                    frame
                        .nseconds()
                        .saturating_mul(u64::from(s.align_max_offset))
                } else {
                    r.delay.min(0).unsigned_abs()
                }
            })
            .max()
            .unwrap_or(0);
        clock_time(
            own_latency(frame, s.queue_size)
                .nseconds()
                .saturating_add(reference_late),
        )
    }

    /// Fills the live-monitoring fields of rendition `k`'s scored frame message (skips so
    /// far, its window statistics) and returns the alert to post after it, if its state
    /// changed.
    pub(super) fn monitor_frame(&self, k: usize, msg: &mut FrameMessage) -> Option<gst::Structure> {
        msg.skipped = self
            .monitor
            .queue()
            .map_or(0, |q| q.completer().skipped_in_order());
        let (threshold, hysteresis) = {
            let s = lock(&self.monitor.settings);
            (s.alert_threshold, s.alert_hysteresis)
        };
        let mut stream = lock(&self.monitor.stream);
        let r = stream.renditions.get_mut(k)?;
        let stats = r
            .window
            .as_mut()
            .map(|w| w.push(msg.running_time.map(|t| t.nseconds()), msg.vmaf))?;
        msg.window = Some(stats);
        r.last_window = Some(stats);
        let alert = r.alert.as_mut()?;
        alert.set_limits(threshold, hysteresis);
        let change = alert.update(stats.mean)?;
        let msg = AlertMessage {
            below: change == AlertChange::Below,
            index: msg.index,
            pts: msg.pts,
            running_time: msg.running_time,
            window: stats,
            threshold: alert.threshold(),
            hysteresis: alert.hysteresis(),
        };
        Some(alert_structure(&msg, "vmaf", r.names.as_ref()))
    }

    /// Rendition `k` had no frame at a reference frame of running time `running_time` (shifted
    /// to its time line) although it has not ended (`true`), or has a frame again (`false`):
    /// the `stalled` alert to post when its state changed and alerts are on
    /// (`alert-threshold` > 0). `index`: the index of its next (or this) frame.
    pub(super) fn monitor_stalled(
        &self,
        k: usize,
        stalled: bool,
        (index, pts, running_time): (u64, Option<gst::ClockTime>, Option<gst::ClockTime>),
    ) -> Option<gst::Structure> {
        let (threshold, hysteresis) = {
            let s = lock(&self.monitor.settings);
            (s.alert_threshold, s.alert_hysteresis)
        };
        let mut stream = lock(&self.monitor.stream);
        let r = stream.renditions.get_mut(k)?;
        if r.stalled == stalled {
            return None;
        }
        r.stalled = stalled;
        if threshold <= 0.0 {
            return None;
        }
        let msg = AlertMessage {
            below: stalled,
            index,
            pts,
            running_time,
            window: r.last_window.unwrap_or(WindowStats {
                frames: 0,
                mean: 0.0,
                min: 0.0,
                harmonic_mean: 0.0,
            }),
            threshold,
            hysteresis,
        };
        Some(alert_structure(&msg, "stalled", r.names.as_ref()))
    }

    /// Counts for the summary: (skipped, late).
    pub(super) fn monitor_counts(&self) -> (u64, u64) {
        self.monitor
            .queue()
            .map_or((0, 0), |q| (q.skipped(), q.late()))
    }
}
