//! Live monitoring in the element (issue 7): its properties, the scoring thread of live
//! pipelines ([`crate::vmafcompare::live`]), the distorted-stream delay and auto-alignment
//! ([`crate::engine::align`]), the sliding window and alerts ([`crate::engine::window`]), and
//! the latency these add. `imp.rs` calls in here at a few delimited points.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_video::prelude::*;

use super::{lock, VmafCompare, CAT};
use crate::engine::align::{Aligner, Thumb};
use crate::engine::window::{Alert, AlertChange, Window, WindowSpan, MAX_WINDOW_FRAMES};
use crate::vmafcompare::live::{Due, Job, OnFull, Progress, Released, ScoringQueue};
use crate::vmafcompare::{AlertMessage, FrameMessage, OffsetMessage, META_NAME};

const DEFAULT_QUEUE_SIZE: u32 = 3;
const MAX_QUEUE_SIZE: u32 = 256;
const DEFAULT_ALIGN_MAX_OFFSET: u32 = 15;
const MAX_ALIGN_MAX_OFFSET: u32 = 1000;
const DEFAULT_ALIGN_DURATION: u64 = 1_000_000_000;
const MAX_ALIGN_DURATION: u64 = 60_000_000_000;
/// Most frames auto-alignment compares (and holds, per stream, with the search range).
const MAX_ALIGN_FRAMES: u64 = 3000;
const DEFAULT_WINDOW_SIZE: u32 = 25;
const DEFAULT_ALERT_HYSTERESIS: f64 = 5.0;
/// Largest `|distorted-delay|`: one hour, in ns.
const MAX_DELAY: i64 = 3_600_000_000_000;
/// Frame duration assumed when the caps carry no frame rate (25 fps).
const FALLBACK_FRAME: gst::ClockTime = gst::ClockTime::from_mseconds(40);
/// Output buffers a live element keeps at most when deadlines do not come (no clock).
const MAX_SLOTS: usize = 64;
/// Test-only: `<element name>=<ms>[,...]` makes that element's scoring thread sleep this
/// long before each pair (a scorer too slow for a live pipeline, without a slow machine).
pub(crate) const TEST_SLOW_ENV: &str = "VMAFCOMPARE_TEST_SCORE_DELAY";

/// The properties of this module (values behind [`Monitor::settings`]).
#[derive(Debug, Clone)]
pub(super) struct MonitorSettings {
    queue_size: u32,
    on_full: OnFull,
    distorted_delay: i64,
    auto_align: bool,
    align_max_offset: u32,
    align_duration: u64,
    window_size: u32,
    window_duration: u64,
    alert_threshold: f64,
    alert_hysteresis: f64,
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

/// A buffer taken from a pad before it could be paired (auto-alignment).
struct Held {
    buffer: gst::Buffer,
    running_time: Option<gst::ClockTime>,
}

/// Per-stream state, reset at READY->PAUSED.
#[derive(Default)]
struct Stream {
    settings: MonitorSettings,
    /// Distorted frame duration (from its caps).
    frame: Option<gst::ClockTime>,
    /// Effective delay of the distorted stream, ns.
    delay: i64,
    /// Collecting the first frames for auto-alignment.
    aligner: Option<Aligner>,
    /// Buffers collected by the aligner, to pair before the pads' own: [reference, distorted].
    held: [VecDeque<Held>; 2],
    window: Option<Window>,
    alert: Option<Alert>,
    /// Decided at the first pair: upstream is live (scoring thread in use).
    live: Option<bool>,
    /// Test hook: extra time per scored pair on the scoring thread.
    slow: Option<Duration>,
}

/// Live-monitoring state of one element.
#[derive(Default)]
pub(super) struct Monitor {
    settings: Mutex<MonitorSettings>,
    stream: Mutex<Stream>,
    queue: Mutex<Option<Arc<ScoringQueue>>>,
    flushing: AtomicBool,
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

    fn queue(&self) -> Option<Arc<ScoringQueue>> {
        lock(&self.queue).clone()
    }
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

/// Reduces the luma plane of `buffer` to an alignment thumbnail.
fn thumb(info: &gst_video::VideoInfo, depth: u32, buffer: &gst::Buffer) -> Result<Thumb, String> {
    let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer.as_ref(), info)
        .map_err(|e| format!("cannot map buffer: {e}"))?;
    let finfo = info.format_info();
    let (w, h) = (info.width() as usize, info.height() as usize);
    let stride = frame.plane_stride()[0] as usize;
    let data = frame
        .plane_data(0)
        .map_err(|e| format!("cannot read the luma plane: {e}"))?;
    let pstride = finfo.pixel_stride()[0] as usize;
    let poffset = finfo.poffset()[0] as usize;
    let shift = finfo.shift()[0];
    let wide = finfo.bits() > 8;
    if w == 0 || h == 0 {
        return Err("empty frame".into());
    }
    let needed = (h - 1) * stride + (w - 1) * pstride + poffset + if wide { 2 } else { 1 };
    if data.len() < needed {
        return Err(format!(
            "luma plane holds {} bytes, {needed} needed",
            data.len()
        ));
    }
    // Bits above the format's depth are not part of the sample (as in scoring).
    let mask = if depth >= 16 {
        u16::MAX
    } else {
        (1u16 << depth) - 1
    };
    Thumb::from_fn(w, h, depth, |x, y| {
        let i = y * stride + poffset + x * pstride;
        if wide {
            (u16::from_le_bytes([data[i], data[i + 1]]) >> shift) & mask
        } else {
            u16::from(data[i])
        }
    })
    .ok_or_else(|| "frame too small".to_owned())
}

/// Copies `scores` into a `VmafCompareMeta` on `buffer`.
fn attach_meta(buffer: &mut gst::Buffer, scores: &gst::Structure) -> Result<(), glib::BoolError> {
    let buf = buffer.make_mut();
    let mut meta = gst::meta::CustomMeta::add(buf, META_NAME)?;
    let s = meta.mut_structure();
    for (name, value) in scores.iter() {
        s.set_value(name, value.clone());
    }
    Ok(())
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

/// Frames auto-alignment compares: `duration` of frames of `frame` each, 1..=MAX_ALIGN_FRAMES.
fn align_frames(duration: u64, frame: gst::ClockTime) -> usize {
    (duration / frame.nseconds().max(1)).clamp(1, MAX_ALIGN_FRAMES) as usize
}

fn ns(t: gst::ClockTime) -> i128 {
    i128::from(t.nseconds())
}

impl VmafCompare {
    /// READY->PAUSED: a fresh stream with the current settings.
    pub(super) fn monitor_start(&self) {
        let settings = lock(&self.monitor.settings).clone();
        let span = if settings.window_duration > 0 {
            WindowSpan::Duration(settings.window_duration)
        } else {
            WindowSpan::Frames(settings.window_size as usize)
        };
        let mut stream = Stream {
            delay: settings.distorted_delay,
            window: Some(Window::new(span)),
            alert: Some(Alert::new(
                settings.alert_threshold,
                settings.alert_hysteresis,
            )),
            slow: test_slow(self.obj().name().as_str()),
            ..Stream::default()
        };
        if settings.auto_align {
            // Sized again from the distorted caps' frame rate when they have one.
            stream.aligner = Some(Aligner::new(
                align_frames(settings.align_duration, FALLBACK_FRAME),
                settings.align_max_offset as usize,
            ));
        }
        stream.settings = settings;
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
        stream.held = Default::default();
        stream.live = None;
    }

    /// Flush: queued work and held frames are dropped, windows and alerts restart.
    pub(super) fn monitor_flush(&self) {
        if let Some(q) = self.monitor.queue() {
            q.clear();
        }
        let mut stream = lock(&self.monitor.stream);
        stream.held = Default::default();
        // Still searching: start the search again with the frames after the flush.
        if let Some(a) = stream.aligner.as_mut() {
            a.clear();
        }
        if let Some(w) = stream.window.as_mut() {
            w.clear();
        }
        if let Some(a) = stream.alert.as_mut() {
            a.reset();
        }
        self.monitor.flushing.store(false, Ordering::SeqCst);
    }

    /// Flush-start on a sink pad: a streaming thread blocked by `on-full=block` gives up.
    pub(super) fn monitor_flush_start(&self) {
        self.monitor.flushing.store(true, Ordering::SeqCst);
    }

    fn cancelled(&self) -> bool {
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
        if let Some(a) = stream.aligner.as_mut() {
            if a.held() == (0, 0) {
                *a = Aligner::new(
                    align_frames(s.align_duration, frame),
                    s.align_max_offset as usize,
                );
            }
        }
        let latency = self.monitor_latency(&stream);
        drop(stream);
        self.obj().set_latency(latency, Some(latency));
    }

    fn monitor_latency(&self, stream: &Stream) -> gst::ClockTime {
        let frame = stream.frame.unwrap_or(FALLBACK_FRAME);
        let s = &stream.settings;
        let reference_late = if stream.aligner.is_some() {
            frame
                .nseconds()
                .saturating_mul(u64::from(s.align_max_offset))
        } else {
            stream.delay.min(0).unsigned_abs()
        };
        clock_time(
            own_latency(frame, s.queue_size)
                .nseconds()
                .saturating_add(reference_late),
        )
    }

    /// Whether the first frames are still being collected for auto-alignment.
    pub(super) fn aligning(&self) -> bool {
        lock(&self.monitor.stream).aligner.is_some()
    }

    /// Auto-alignment: takes the next buffer of each stream that still needs frames; once both
    /// have enough (or one ended), picks the offset, posts it and lets pairing start with the
    /// held buffers.
    pub(super) fn align_step(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        let videos = {
            let state = lock(&self.state);
            (
                state.reference.as_ref().map(|v| (v.info.clone(), v.depth)),
                state.distorted.as_ref().map(|v| (v.info.clone(), v.depth)),
            )
        };
        let mut ended = false;
        for (side, pad, video) in [
            (0usize, &self.reference_pad, &videos.0),
            (1, &self.distorted_pad, &videos.1),
        ] {
            let needs = {
                let stream = lock(&self.monitor.stream);
                let Some(a) = stream.aligner.as_ref() else {
                    return Ok(gst::FlowSuccess::Ok);
                };
                let held = if side == 0 { a.held().0 } else { a.held().1 };
                held < a.needed()
            };
            if !needs {
                continue;
            }
            let Some(buffer) = pad.pop_buffer() else {
                ended |= pad.is_eos();
                continue;
            };
            let Some((info, depth)) = video else {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("buffers arrived before caps")
                );
                return Err(gst::FlowError::NotNegotiated);
            };
            let t = match thumb(info, *depth, &buffer) {
                Ok(t) => t,
                Err(e) => {
                    gst::element_imp_error!(
                        self,
                        gst::StreamError::Decode,
                        ("auto-align: {} frame: {}", pad.name(), e)
                    );
                    return Err(gst::FlowError::Error);
                }
            };
            let running_time = Self::running_time(pad, &buffer);
            let mut stream = lock(&self.monitor.stream);
            if let Some(a) = stream.aligner.as_mut() {
                if side == 0 {
                    a.push_reference(t);
                } else {
                    a.push_distorted(t);
                }
            }
            stream.held[side].push_back(Held {
                buffer,
                running_time,
            });
        }
        let full = lock(&self.monitor.stream)
            .aligner
            .as_ref()
            .is_none_or(|a| a.is_full());
        if full || ended {
            self.align_decide();
        }
        Ok(gst::FlowSuccess::Ok)
    }

    /// Picks the offset from the collected frames, posts `vmafcompare-offset` and sets the
    /// delay: the median, over the compared pairs, of distorted minus reference running time
    /// (offset x frame duration when timestamps are missing).
    fn align_decide(&self) {
        let mut stream = lock(&self.monitor.stream);
        let Some(aligner) = stream.aligner.take() else {
            return;
        };
        let Some(offset) = aligner.decide() else {
            gst::warning!(CAT, imp = self, "auto-align: a stream gave no frame");
            return;
        };
        let k = offset.frames;
        let mut deltas: Vec<i128> = (0..offset.compared)
            .filter_map(|i| {
                let (r, d) = if k >= 0 {
                    (i, i + k as usize)
                } else {
                    (i + k.unsigned_abs() as usize, i)
                };
                let rt = stream.held[0].get(r)?.running_time?;
                let dt = stream.held[1].get(d)?.running_time?;
                Some(ns(dt) - ns(rt))
            })
            .collect();
        deltas.sort_unstable();
        let frame = stream.frame.unwrap_or(FALLBACK_FRAME);
        let delay = match deltas.get(deltas.len() / 2) {
            Some(&d) => d.clamp(-i128::from(MAX_DELAY), i128::from(MAX_DELAY)) as i64,
            None => k.saturating_mul(frame.nseconds() as i64),
        };
        stream.delay = delay;
        let latency = self.monitor_latency(&stream);
        drop(stream);
        let msg = OffsetMessage {
            offset_frames: k,
            delay,
            psnr: offset.psnr,
            psnr_zero: offset.psnr_zero,
            compared: offset.compared as u64,
            search_range: offset.searched as u64,
        };
        gst::info!(
            CAT,
            imp = self,
            "auto-align: distorted late by {k} frames ({delay} ns), PSNR {:.3} dB (unaligned {:.3} dB) over {} pairs",
            offset.psnr,
            offset.psnr_zero,
            offset.compared
        );
        let obj = self.obj();
        // The delay is known now: a late reference makes the distorted stream wait. Set
        // before the offset message goes out, so that whoever reads it sees the new latency.
        obj.set_latency(latency, Some(latency));
        let _ = obj.post_message(
            gst::message::Element::builder(gst::Structure::from(&msg))
                .src(&*obj)
                .build(),
        );
        let _ = obj.post_message(gst::message::Latency::builder().src(&*obj).build());
    }

    fn pad(&self, side: usize) -> &gst_base::AggregatorPad {
        if side == 0 {
            &self.reference_pad
        } else {
            &self.distorted_pad
        }
    }

    /// The next buffer of a stream (0 reference, 1 distorted) with its running time: held
    /// ones first, then the pad's.
    pub(super) fn peek_input(&self, side: usize) -> Option<(gst::Buffer, Option<gst::ClockTime>)> {
        if let Some(h) = lock(&self.monitor.stream).held[side].front() {
            return Some((h.buffer.clone(), h.running_time));
        }
        let pad = self.pad(side);
        let b = pad.peek_buffer()?;
        let rt = Self::running_time(pad, &b);
        Some((b, rt))
    }

    /// Takes the next buffer of a stream (see [`VmafCompare::peek_input`]).
    pub(super) fn pop_input(&self, side: usize) -> Option<gst::Buffer> {
        if let Some(h) = lock(&self.monitor.stream).held[side].pop_front() {
            return Some(h.buffer);
        }
        self.pad(side).pop_buffer()
    }

    /// A stream has ended and nothing of it is held.
    pub(super) fn input_eos(&self, side: usize) -> bool {
        lock(&self.monitor.stream).held[side].is_empty() && self.pad(side).is_eos()
    }

    /// Whether `rrt` and the delayed `drt` are more than `half` apart: `Some(true)` when the
    /// reference is the earlier one, `Some(false)` the distorted, `None` when they pair.
    pub(super) fn unpaired_side(
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

    /// Scores a pair: in the streaming thread, or in a live pipeline through the scoring
    /// queue (skipping or blocking when it is full).
    pub(super) fn score_or_queue(
        &self,
        reference: gst::Buffer,
        distorted: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let Some(queue) = self.live_queue_for_pair()? else {
            return self.score_pair(reference, distorted);
        };
        let (on_full, budget) = {
            let stream = lock(&self.monitor.stream);
            let frame = stream.frame.unwrap_or(FALLBACK_FRAME);
            let own = own_latency(frame, stream.settings.queue_size);
            (
                stream.settings.on_full,
                Duration::from_nanos(own.nseconds()),
            )
        };
        let running_time = Self::running_time(&self.distorted_pad, &distorted);
        queue.offer(
            reference,
            distorted,
            running_time,
            on_full,
            Some(budget),
            || self.cancelled(),
            |r| self.push_released(r),
        )?;
        self.live_release(false)
    }

    /// The scoring queue when the pipeline is live (started at the first pair).
    fn live_queue_for_pair(&self) -> Result<Option<Arc<ScoringQueue>>, gst::FlowError> {
        let (live, capacity, slow) = {
            let mut stream = lock(&self.monitor.stream);
            let live = match stream.live {
                Some(l) => l,
                None => {
                    let l = self.obj().latency().is_some();
                    stream.live = Some(l);
                    l
                }
            };
            (live, stream.settings.queue_size as usize, stream.slow)
        };
        if !live {
            return Ok(None);
        }
        if let Some(q) = self.monitor.queue() {
            return Ok(Some(q));
        }
        let weak = self.obj().downgrade();
        let run = move |job: Job| -> Result<Progress, gst::FlowError> {
            let Some(obj) = weak.upgrade() else {
                return Err(gst::FlowError::Flushing);
            };
            let imp = obj.imp();
            match job {
                Job::Pair {
                    reference,
                    distorted,
                } => {
                    if let Some(d) = slow {
                        std::thread::sleep(d);
                    }
                    imp.score_pair(reference, distorted)?;
                }
                Job::Gap { pairs } => imp.skip_pairs(pairs)?,
                Job::Poll => imp.poll_scored()?,
            }
            Ok(imp.scorer_progress())
        };
        let queue = match ScoringQueue::start(capacity, MAX_SLOTS.max(4 * (capacity + 1)), run) {
            Ok(q) => Arc::new(q),
            Err(e) => {
                gst::element_imp_error!(
                    self,
                    gst::ResourceError::Failed,
                    ("cannot start the scoring thread: {}", e)
                );
                return Err(gst::FlowError::Error);
            }
        };
        gst::info!(
            CAT,
            imp = self,
            "live pipeline: scoring on its own thread, queue of {capacity} pairs"
        );
        *lock(&self.monitor.queue) = Some(queue.clone());
        Ok(Some(queue))
    }

    /// The scoring queue, when scoring runs on its own thread.
    pub(super) fn live_queue(&self) -> Option<Arc<ScoringQueue>> {
        self.monitor.queue()
    }

    /// Scoring thread, nothing queued: emits the frames the backend finished meanwhile
    /// (several frames in flight: the CPU on its pool, the GPU).
    fn poll_scored(&self) -> Result<(), gst::FlowError> {
        let done = {
            let mut state = lock(&self.state);
            state.scorer.as_mut().map(|s| s.poll()).transpose()
        };
        let done = done.map_err(|e| self.engine_failed(e))?.unwrap_or_default();
        self.emit_all(done).map(|_| ())
    }

    /// What the scorer holds in flight, for the scoring queue's capacity and pace.
    fn scorer_progress(&self) -> Progress {
        let state = lock(&self.state);
        match state.scorer.as_ref() {
            Some(s) => Progress {
                in_flight: s.in_flight(),
                parallel: s.parallelism(),
            },
            None => Progress::IDLE,
        }
    }

    /// Scoring thread: `pairs` pairs were skipped; complete the frame before the gap and
    /// restart motion.
    fn skip_pairs(&self, pairs: u64) -> Result<(), gst::FlowError> {
        let done = {
            let mut state = lock(&self.state);
            state.scorer.as_mut().map(|s| s.skip(pairs)).transpose()
        };
        let done = done.map_err(|e| self.engine_failed(e))?.unwrap_or_default();
        self.emit_all(done).map(|_| ())
    }

    /// Pushes released output buffers, attaching their scores as meta.
    fn push_released(&self, released: Vec<Released>) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut ret = Ok(gst::FlowSuccess::Ok);
        for (mut buffer, scores) in released {
            if let Some(s) = scores {
                if let Err(e) = attach_meta(&mut buffer, &s) {
                    gst::warning!(CAT, imp = self, "cannot attach scores meta: {e}");
                }
            }
            ret = self.finish_output(buffer);
            if ret.is_err() {
                break;
            }
        }
        ret
    }

    /// Live pipelines: pushes the output buffers that may leave now (`all`: every one, at
    /// end of stream), and returns a scoring thread's error.
    pub(super) fn live_release(&self, all: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        let Some(q) = self.monitor.queue() else {
            return Ok(gst::FlowSuccess::Ok);
        };
        if all {
            q.drain(|| self.cancelled())?;
        }
        // Buffers leave at their deadline: running time + latency, when a synchronised
        // sink renders them, so pushing never waits on the clock. With on-full=block every
        // buffer waits for its scores instead (the pipeline falls behind, as asked).
        let obj = self.obj();
        let block = lock(&self.monitor.stream).settings.on_full == OnFull::Block;
        let due = match (obj.current_running_time(), obj.latency()) {
            (Some(now), Some(latency)) if !block => Due::Until(now.checked_sub(latency)),
            _ => Due::WhenReady,
        };
        let released = q.take_due(due, all);
        self.push_released(released)?;
        match q.error() {
            Some(e) => Err(e),
            None => Ok(gst::FlowSuccess::Ok),
        }
    }

    /// Live pipelines: waits until the scoring thread has scored everything queued.
    pub(super) fn live_drain(&self) -> Result<(), gst::FlowError> {
        match self.monitor.queue() {
            Some(q) => q.drain(|| self.cancelled()),
            None => Ok(()),
        }
    }

    /// Live pipelines: a distorted buffer without partner leaves in order, unscored.
    /// `Err(buffer)` when scoring runs in the streaming thread.
    pub(super) fn live_pass(&self, buffer: gst::Buffer) -> Result<gst::FlowSuccess, gst::Buffer> {
        let Some(q) = self.monitor.queue() else {
            return Err(buffer);
        };
        let running_time = Self::running_time(&self.distorted_pad, &buffer);
        q.pass(buffer, running_time);
        Ok(self.live_release(false).unwrap_or_else(|e| {
            gst::debug!(CAT, imp = self, "releasing after an unpaired frame: {e:?}");
            gst::FlowSuccess::Ok
        }))
    }

    /// Fills the live-monitoring fields of a scored frame's message (skips so far, window
    /// statistics) and returns the alert to post after it, if the state changed.
    pub(super) fn monitor_frame(&self, msg: &mut FrameMessage) -> Option<AlertMessage> {
        msg.skipped = self
            .monitor
            .queue()
            .map_or(0, |q| q.completer().skipped_in_order());
        let (threshold, hysteresis) = {
            let s = lock(&self.monitor.settings);
            (s.alert_threshold, s.alert_hysteresis)
        };
        let mut stream = lock(&self.monitor.stream);
        let stats = stream
            .window
            .as_mut()
            .map(|w| w.push(msg.running_time.map(|t| t.nseconds()), msg.vmaf))?;
        msg.window = Some(stats);
        let alert = stream.alert.as_mut()?;
        alert.set_limits(threshold, hysteresis);
        let change = alert.update(stats.mean)?;
        Some(AlertMessage {
            below: change == AlertChange::Below,
            index: msg.index,
            pts: msg.pts,
            running_time: msg.running_time,
            window: stats,
            threshold: alert.threshold(),
            hysteresis: alert.hysteresis(),
        })
    }

    /// The aggregator's `next_time` in a live pipeline: the earliest of the running time of
    /// the oldest output buffer waiting in the scoring queue (it leaves at its deadline, this
    /// plus the latency) and that of a buffer waiting on a sink pad for its partner (see
    /// [`VmafCompare::partner_overdue`]). `None` (wait for data) with `on-full=block`, where
    /// buffers wait for their scores and partners, not for a deadline (waking up at a
    /// deadline that has passed would only spin), and while auto-alignment collects frames.
    pub(super) fn live_next_time(&self) -> Option<gst::ClockTime> {
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

    /// Running time, on the distorted stream's time line, of the buffer waiting on the pad of
    /// `side` (0 reference, 1 distorted) for a partner: the reference's is shifted by the
    /// distorted delay, since its partner is the distorted frame that much later. `None`
    /// without a buffer or running time, or while buffers held by auto-alignment come first
    /// on that side.
    fn waiting_since(&self, side: usize) -> Option<gst::ClockTime> {
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
    pub(super) fn partner_overdue(&self, side: usize, timeout: bool) -> bool {
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

    /// Counts for the summary: (skipped, late).
    pub(super) fn monitor_counts(&self) -> (u64, u64) {
        self.monitor
            .queue()
            .map_or((0, 0), |q| (q.skipped(), q.late()))
    }
}
