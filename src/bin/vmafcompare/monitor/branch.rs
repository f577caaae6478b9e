//! A rendition's branch of a channel's pipeline: its `uridecodebin3`, the `vmafcompare`
//! element scoring it against the teed reference, their queues and sink; made when the
//! channel starts and made again on its own (the others playing on) when its input errors,
//! stalls or comes back and must be aligned again. Also what the pads' probes record of each
//! input (when its frames came).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gst::prelude::*;

use super::config::{Channel, Rendition};
use super::metrics;

/// What an input's probe records: when its last frame came, and when each recent frame came
/// by PTS (the frame messages carry the distorted buffer's PTS: the scoring latency).
#[derive(Default)]
pub struct Input {
    /// ms since the monitor's start (`Shared::epoch`) of the last frame, 0: none yet.
    pub last_ms: AtomicU64,
    /// (PTS ns, arrival) of the last [`RECENT`] frames.
    recent: Mutex<std::collections::VecDeque<(u64, Instant)>>,
}

/// Frames whose arrival is remembered per input (seconds of video at any frame rate that a
/// live scoring queue holds).
const RECENT: usize = 512;

impl Input {
    pub fn arrived(&self, pts: Option<gst::ClockTime>, epoch: Instant) {
        let ms = u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms.max(1), Ordering::Relaxed);
        if let Some(pts) = pts {
            let mut recent = lock(&self.recent);
            if recent.len() == RECENT {
                recent.pop_front();
            }
            recent.push_back((pts.nseconds(), Instant::now()));
        }
    }

    /// When the frame of `pts` came in (forgetting it and the frames before it).
    pub fn arrival_of(&self, pts: gst::ClockTime) -> Option<Instant> {
        let mut recent = lock(&self.recent);
        let k = recent.iter().position(|(p, _)| *p == pts.nseconds())?;
        let at = recent[k].1;
        recent.drain(..=k);
        Some(at)
    }
}

/// An input's record, shared with its pad probe.
pub type Arrival = Arc<Input>;

/// A rendition's branch as the channel's thread watches it.
pub struct Branch {
    pub rendition: Rendition,
    pub labels: metrics::Rendition,
    /// Its `vmafcompare` element.
    pub element: gst::Element,
    /// Its own source, whose errors end only this branch.
    pub source: gst::Element,
    pub arrival: Arrival,
    /// When its input last came up (or the branch was made).
    pub up_since: Instant,
    pub was_up: bool,
    /// Its input has delivered frames since the branch was made.
    pub ever_up: bool,
    pub last_scored: Option<Instant>,
    /// The window mean is below the alert threshold (the element's last alert).
    pub below: bool,
    /// The element's counters already added to the metrics (skipped, late, unpaired ref/dis).
    pub counted: [u64; 4],
    /// Torn down after a failure: made again at this time.
    pub retry_at: Option<Instant>,
    /// The wait before the next remake after a failure (doubling).
    pub backoff: Duration,
    /// Every element of the branch (in the pipeline), the tee's pad feeding it, and the
    /// fakesinks its source's other streams went to.
    parts: Vec<gst::Element>,
    tee_pad: Option<gst::Pad>,
    extra: Arc<Mutex<Vec<gst::Element>>>,
}

impl Branch {
    /// Makes rendition `r`'s branch in `pipeline` and links it to `tee`: its elements are
    /// added, linked, brought to the pipeline's state, and only then fed from the tee (so a
    /// playing tee never pushes into an element that is not ready). Errors: a missing element
    /// or a refused property or link, as text.
    pub fn add(
        pipeline: &gst::Pipeline,
        tee: &gst::Element,
        config: &Channel,
        r: &Rendition,
        epoch: Instant,
        backoff: Duration,
    ) -> Result<Self, String> {
        let cmp = make("vmafcompare", &format!("score-{}", r.label))?;
        configure(&cmp, config, r)?;
        let ref_queue = make("queue", &format!("reference-queue-{}", r.label))?;
        let dist_queue = make("queue", &format!("distorted-queue-{}", r.label))?;
        for q in [&ref_queue, &dist_queue] {
            // Frames, not bytes: a 2160p frame is 12 MB; the element's live deadline drains them.
            q.set_property("max-size-bytes", 0u32);
            q.set_property("max-size-time", 0u64);
            q.set_property("max-size-buffers", 2 * config.scoring.queue_size + 8);
        }
        let source = make("uridecodebin3", &format!("source-{}", r.label))?;
        source.set_property("uri", &r.uri);
        let sink = make("fakesink", &format!("sink-{}", r.label))?;
        sink.set_property("sync", true);
        sink.set_property("async", false);
        let parts = vec![sink, cmp, ref_queue, dist_queue, source];
        pipeline
            .add_many(&parts)
            .map_err(|e| format!("cannot assemble the pipeline: {e}"))?;
        let [sink, cmp, ref_queue, dist_queue, source] = [0, 1, 2, 3, 4].map(|i| &parts[i]);
        let linked = ref_queue
            .link_pads(Some("src"), cmp, Some("reference"))
            .and_then(|()| dist_queue.link_pads(Some("src"), cmp, Some("distorted")))
            .and_then(|()| cmp.link(sink));
        linked.map_err(|e| format!("cannot link rendition \"{}\": {e}", r.label))?;
        let arrival = Arrival::default();
        let extra = Arc::default();
        link_video(
            source,
            pipeline,
            dist_queue.static_pad("sink"),
            &arrival,
            &extra,
            epoch,
        );
        for e in &parts {
            e.sync_state_with_parent()
                .map_err(|_| format!("rendition \"{}\": {} cannot start", r.label, e.name()))?;
        }
        let tee_pad = tee
            .request_pad_simple("src_%u")
            .ok_or_else(|| "the tee gives no pad".to_owned())?;
        let queue_sink = ref_queue
            .static_pad("sink")
            .ok_or_else(|| "a queue without a sink pad".to_owned())?;
        tee_pad
            .link(&queue_sink)
            .map_err(|e| format!("cannot link rendition \"{}\": {e}", r.label))?;
        Ok(Self {
            labels: metrics::Rendition::new(&config.name, &r.label),
            rendition: r.clone(),
            element: cmp.clone(),
            source: source.clone(),
            arrival,
            up_since: Instant::now(),
            was_up: false,
            ever_up: false,
            last_scored: None,
            below: false,
            counted: [0; 4],
            retry_at: None,
            backoff,
            tee_pad: Some(tee_pad),
            extra,
            parts,
        })
    }

    /// Takes the branch out of the running pipeline: the tee stops feeding it (its pad
    /// released), and its elements go to NULL (the element's GPU state released) and leave
    /// the pipeline. The other branches play on.
    pub fn remove(&mut self, pipeline: &gst::Pipeline, tee: &gst::Element) {
        if let Some(pad) = self.tee_pad.take() {
            if let Some(peer) = pad.peer() {
                let _ = pad.unlink(&peer);
            }
            tee.release_request_pad(&pad);
        }
        let extra: Vec<gst::Element> = std::mem::take(&mut *lock(&self.extra));
        for e in self.parts.iter().chain(&extra) {
            let _ = e.set_state(gst::State::Null);
        }
        for e in self.parts.drain(..).chain(extra) {
            let _ = pipeline.remove(&e);
        }
    }

    /// Schedules the branch to be made again after its backoff, then doubles the backoff (up
    /// to `max`); returns the wait scheduled.
    pub fn retry_later(&mut self, max: Duration) -> Duration {
        let wait = self.backoff;
        self.retry_at = Some(Instant::now() + wait);
        self.backoff = (wait * 2).min(max);
        wait
    }

    /// Whether the element is this branch's (a message's source).
    pub fn owns(&self, object: &gst::Object) -> bool {
        object == self.element.upcast_ref::<gst::Object>()
            || object.has_as_ancestor(&self.source)
            || object == self.source.upcast_ref::<gst::Object>()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An element of `factory` named `name`. Errors: the factory is not installed, naming the
/// package that has it.
pub fn make(factory: &str, name: &str) -> Result<gst::Element, String> {
    gst::ElementFactory::make(factory)
        .name(name)
        .build()
        .map_err(|_| {
            let package = match factory {
                "uridecodebin3" | "tee" | "queue" | "fakesink" => {
                    "gstreamer1.0-plugins-base / core"
                }
                _ => "the vmafcompare plugin",
            };
            format!("GStreamer element {factory} is missing (install {package})")
        })
}

/// Sets the element's properties from the channel's scoring keys and the rendition's own.
fn configure(cmp: &gst::Element, config: &Channel, r: &Rendition) -> Result<(), String> {
    let s = &config.scoring;
    // Enums from their nicks (the config checked them), the rest typed; a value the element
    // would refuse (type or range) is an error here instead of a GLib critical.
    let from_str = |name: &str, value: &str| -> Result<gst::glib::Value, String> {
        let pspec = cmp
            .find_property(name)
            .ok_or_else(|| format!("the element has no property {name}"))?;
        let class = gst::glib::EnumClass::with_type(pspec.value_type())
            .ok_or_else(|| format!("{name} is not an enum"))?;
        class
            .to_value_by_nick(value)
            .ok_or_else(|| format!("{name}: unknown value \"{value}\""))
    };
    let props: [(&str, Result<gst::glib::Value, String>); 15] = [
        ("backend", from_str("backend", &s.backend)),
        ("on-full", from_str("on-full", &s.on_full)),
        ("model", Ok(s.model.to_value())),
        ("features", Ok(s.features.to_value())),
        ("device-id", Ok(s.device_id.to_value())),
        ("threads", Ok(s.threads.to_value())),
        ("queue-size", Ok(s.queue_size.to_value())),
        ("align-max-offset", Ok(s.align_max_offset.to_value())),
        ("align-duration", Ok(s.align_duration_ns.to_value())),
        ("window-size", Ok(s.window_size.to_value())),
        ("window-duration", Ok(s.window_duration_ns.to_value())),
        ("auto-align", Ok(r.auto_align.to_value())),
        ("distorted-delay", Ok(r.distorted_delay_ns.to_value())),
        ("alert-threshold", Ok(r.alert_threshold.to_value())),
        ("alert-hysteresis", Ok(r.alert_hysteresis.to_value())),
    ];
    for (name, value) in props {
        let refused = |why: String| format!("rendition \"{}\": {why}", r.label);
        let value = value.map_err(refused)?;
        let valid = cmp
            .find_property(name)
            .is_some_and(|p| p.value_type() == value.type_() && in_range(&p, &value));
        if !valid {
            return Err(refused(format!("{name}: value out of the element's range")));
        }
        cmp.set_property_from_value(name, &value);
    }
    if let Some(location) = &s.results_location {
        let path = location.replace("%c", &config.name).replace("%s", &r.label);
        cmp.set_property("results-location", path);
    }
    Ok(())
}

/// Whether a numeric `value` lies in the range `pspec` declares (other types: true).
fn in_range(pspec: &gst::glib::ParamSpec, value: &gst::glib::Value) -> bool {
    use gst::glib::{
        ParamSpecDouble, ParamSpecInt, ParamSpecInt64, ParamSpecUInt, ParamSpecUInt64,
    };
    macro_rules! check {
        ($spec:ty, $t:ty) => {
            if let (Some(p), Ok(v)) = (pspec.downcast_ref::<$spec>(), value.get::<$t>()) {
                return (p.minimum()..=p.maximum()).contains(&v);
            }
        };
    }
    check!(ParamSpecInt, i32);
    check!(ParamSpecUInt, u32);
    check!(ParamSpecInt64, i64);
    check!(ParamSpecUInt64, u64);
    check!(ParamSpecDouble, f64);
    true
}

/// Links the first video stream `decodebin` exposes to `target` (recording each buffer's
/// arrival), and every other stream (audio, a second video) to a fakesink of its own.
pub fn link_video(
    decodebin: &gst::Element,
    pipeline: &gst::Pipeline,
    target: Option<gst::Pad>,
    arrival: &Arrival,
    extra: &Arc<Mutex<Vec<gst::Element>>>,
    epoch: Instant,
) {
    let extra = Arc::clone(extra);
    let pipeline = pipeline.downgrade();
    let arrival = Arc::clone(arrival);
    decodebin.connect_pad_added(move |_, pad| {
        let video = pad
            .stream()
            .map(|s| s.stream_type().contains(gst::StreamType::VIDEO))
            .unwrap_or_else(|| {
                pad.current_caps()
                    .and_then(|c| c.structure(0).map(|s| s.name().starts_with("video/")))
                    .unwrap_or(false)
            });
        if let Some(target) = target.as_ref().filter(|t| video && !t.is_linked()) {
            let arrival = Arc::clone(&arrival);
            pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
                let pts = info.buffer().and_then(|b| b.pts());
                arrival.arrived(pts, epoch);
                gst::PadProbeReturn::Ok
            });
            if pad.link(target).is_ok() {
                return;
            }
        }
        let Some(pipeline) = pipeline.upgrade() else {
            return;
        };
        let Ok(sink) = gst::ElementFactory::make("fakesink")
            .property("sync", false)
            .property("async", false)
            .build()
        else {
            return;
        };
        if pipeline.add(&sink).is_ok() {
            lock(&extra).push(sink.clone());
            let _ = sink.sync_state_with_parent();
            if let Some(sinkpad) = sink.static_pad("sink") {
                let _ = pad.link(&sinkpad);
            }
        }
    });
}
