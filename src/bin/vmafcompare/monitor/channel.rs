//! One channel of `vmafcompare monitor`: its pipeline (the reference decoded once and teed to
//! one `vmafcompare` element per rendition, each rendition decoded on its own branch), and
//! the thread that runs it: bus messages to metrics and events, inputs up or down, stalls,
//! restarts with backoff, and a clean stop.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gst::prelude::*;
use gstvmafcompare::vmafcompare::{AlertMessage, FrameMessage, OffsetMessage};

use super::config::{Channel, Rendition};
use super::events::Events;
use super::metrics::{self, Metrics};

/// What the channels share: the metrics, the events file, and which channels have scored.
pub struct Shared {
    pub metrics: Metrics,
    pub events: Option<Events>,
    /// Channel name -> it has scored a frame since it was (re)configured (`/readyz`).
    pub scored: Mutex<HashMap<String, bool>>,
    /// When the process started: input times are kept as ms since then.
    pub epoch: Instant,
    /// How long a stopping channel may take to drain (`[server] stop-timeout`).
    pub stop_timeout: Duration,
}

/// A running channel: its thread and its stop flag.
pub struct Handle {
    pub config: Channel,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Handle {
    /// Starts the channel's thread. Errors: the system refused a thread, as text.
    pub fn start(config: Channel, shared: Arc<Shared>) -> Result<Self, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (config.clone(), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name(format!("channel-{}", config.name))
            .spawn(move || supervise(&c, &shared, &s))
            .map_err(|e| format!("channel \"{}\": cannot start its thread: {e}", config.name))?;
        Ok(Self {
            config,
            stop,
            thread: Some(thread),
        })
    }

    /// Asks the channel to stop (EOS, then NULL within its stop timeout); returns at once.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Waits for the thread to end.
    pub fn join(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Why one run of the pipeline ended.
enum End {
    /// The monitor stopped it (SIGTERM, SIGINT, or a reload that changed or removed it).
    Stopped,
    /// It failed: restart after the backoff. `reason` is the metric label (`error`, `eos`,
    /// `stall`), `detail` the log text.
    Failed {
        reason: &'static str,
        detail: String,
    },
}

/// Longest idle wait between checks of the stop flag, the inputs and the stats.
const TICK: Duration = Duration::from_millis(200);
/// A run that lasted this long resets the backoff to its first step.
const HEALTHY_RUN: Duration = Duration::from_secs(60);

/// The channel's thread: runs the pipeline until stopped, restarting it after each failure
/// with a doubling backoff.
fn supervise(config: &Channel, shared: &Shared, stop: &AtomicBool) {
    let sup = &config.supervision;
    let mut backoff = sup.restart_backoff;
    let up = metrics::ChannelLabel {
        channel: config.name.clone(),
    };
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        let end = run(config, shared, stop);
        shared.metrics.channel_up.get_or_create(&up).set(0);
        let End::Failed { reason, detail } = end else {
            break;
        };
        if started.elapsed() >= HEALTHY_RUN {
            backoff = sup.restart_backoff;
        }
        shared
            .metrics
            .restarts
            .get_or_create(&metrics::Restart {
                channel: config.name.clone(),
                reason: reason.to_owned(),
            })
            .inc();
        eprintln!(
            "vmafcompare monitor: channel \"{}\": {detail}; restarting in {:.1} s ({reason})",
            config.name,
            backoff.as_secs_f64()
        );
        let until = Instant::now() + backoff;
        while Instant::now() < until && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(TICK.min(until.saturating_duration_since(Instant::now())));
        }
        backoff = (backoff * 2).min(sup.restart_backoff_max);
    }
}

/// What an input's probe records: when its last frame came, and when each recent frame came
/// by PTS (the frame messages carry the distorted buffer's PTS: the scoring latency).
#[derive(Default)]
struct Input {
    /// ms since [`Shared::epoch`] of the last frame, 0: none yet.
    last_ms: AtomicU64,
    /// (PTS ns, arrival) of the last [`RECENT`] frames.
    recent: Mutex<std::collections::VecDeque<(u64, Instant)>>,
}

/// Frames whose arrival is remembered per input (seconds of video at any frame rate that a
/// live scoring queue holds).
const RECENT: usize = 512;

impl Input {
    fn arrived(&self, pts: Option<gst::ClockTime>, epoch: Instant) {
        let ms = u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms.max(1), Ordering::Relaxed);
        if let Some(pts) = pts {
            let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            if recent.len() == RECENT {
                recent.pop_front();
            }
            recent.push_back((pts.nseconds(), Instant::now()));
        }
    }

    /// When the frame of `pts` came in (forgetting it and the frames before it).
    fn arrival_of(&self, pts: gst::ClockTime) -> Option<Instant> {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let k = recent.iter().position(|(p, _)| *p == pts.nseconds())?;
        let at = recent[k].1;
        recent.drain(..=k);
        Some(at)
    }
}

type Arrival = Arc<Input>;

/// A rendition's branch as the thread watches it.
struct Branch {
    rendition: Rendition,
    labels: metrics::Rendition,
    element: gst::Element,
    arrival: Arrival,
    /// When its input last came up (or the run started).
    up_since: Instant,
    was_up: bool,
    last_scored: Option<Instant>,
    below: bool,
    /// The element's counters already added to the metrics (skipped, late, unpaired ref/dis).
    counted: [u64; 4],
}

/// The channel's pipeline, built (NULL state).
pub struct Built {
    pub pipeline: gst::Pipeline,
    reference_arrival: Arrival,
    branches: Vec<Branch>,
}

/// Builds the channel's pipeline: `uridecodebin3` of the reference -> `tee` -> per rendition
/// `queue` -> `vmafcompare.reference`, and `uridecodebin3` of the rendition -> `queue` ->
/// `vmafcompare.distorted`, `vmafcompare` -> `fakesink`. Streams other than the first video
/// one of each input go to a `fakesink`. Errors: a missing element or a refused property,
/// as text.
pub fn build(config: &Channel, epoch: Instant) -> Result<Built, String> {
    let pipeline = gst::Pipeline::with_name(&format!("channel-{}", config.name));
    let tee = make("tee", "reference-tee")?;
    tee.set_property("allow-not-linked", true);
    let reference = make("uridecodebin3", "reference-source")?;
    reference.set_property("uri", &config.reference);
    pipeline
        .add_many([&reference, &tee])
        .map_err(|e| format!("cannot assemble the pipeline: {e}"))?;
    let reference_arrival = Arrival::default();
    link_video(
        &reference,
        &pipeline,
        tee.static_pad("sink"),
        &reference_arrival,
        epoch,
    );
    let mut branches = Vec::new();
    for (k, r) in config.renditions.iter().enumerate() {
        let cmp = make("vmafcompare", &format!("score-{}", r.label))?;
        configure(&cmp, config, r)?;
        let ref_queue = make("queue", &format!("reference-queue-{k}"))?;
        let dist_queue = make("queue", &format!("distorted-queue-{k}"))?;
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
        pipeline
            .add_many([&cmp, &ref_queue, &dist_queue, &source, &sink])
            .map_err(|e| format!("cannot assemble the pipeline: {e}"))?;
        let linked = tee
            .link_pads(Some("src_%u"), &ref_queue, Some("sink"))
            .and_then(|()| ref_queue.link_pads(Some("src"), &cmp, Some("reference")))
            .and_then(|()| dist_queue.link_pads(Some("src"), &cmp, Some("distorted")))
            .and_then(|()| cmp.link(&sink));
        linked.map_err(|e| format!("cannot link rendition \"{}\": {e}", r.label))?;
        let arrival = Arrival::default();
        link_video(
            &source,
            &pipeline,
            dist_queue.static_pad("sink"),
            &arrival,
            epoch,
        );
        branches.push(Branch {
            labels: metrics::Rendition::new(&config.name, &r.label),
            rendition: r.clone(),
            element: cmp,
            arrival,
            up_since: Instant::now(),
            was_up: false,
            last_scored: None,
            below: false,
            counted: [0; 4],
        });
    }
    Ok(Built {
        pipeline,
        reference_arrival,
        branches,
    })
}

/// An element of `factory` named `name`. Errors: the factory is not installed, naming the
/// package that has it.
fn make(factory: &str, name: &str) -> Result<gst::Element, String> {
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
    let props: [(&str, Result<gst::glib::Value, String>); 14] = [
        ("backend", from_str("backend", &s.backend)),
        ("on-full", from_str("on-full", &s.on_full)),
        ("model", Ok(s.model.to_value())),
        ("features", Ok(s.features.to_value())),
        ("device-id", Ok(s.device_id.to_value())),
        ("threads", Ok(s.threads.to_value())),
        ("queue-size", Ok(s.queue_size.to_value())),
        ("align-max-offset", Ok(s.align_max_offset.to_value())),
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
fn link_video(
    decodebin: &gst::Element,
    pipeline: &gst::Pipeline,
    target: Option<gst::Pad>,
    arrival: &Arrival,
    epoch: Instant,
) {
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
            let _ = sink.sync_state_with_parent();
            if let Some(sinkpad) = sink.static_pad("sink") {
                let _ = pad.link(&sinkpad);
            }
        }
    });
}

/// One run: builds and plays the pipeline, watches it until it fails or is stopped, and
/// always leaves it in NULL (its GPU state released).
fn run(config: &Channel, shared: &Shared, stop: &AtomicBool) -> End {
    let mut built = match build(config, shared.epoch) {
        Ok(b) => b,
        Err(e) => {
            return End::Failed {
                reason: "error",
                detail: e,
            }
        }
    };
    let end = watch(config, shared, stop, &mut built);
    let _ = built.pipeline.set_state(gst::State::Null);
    end
}

/// Plays the pipeline and handles its bus until it ends; see [`run`].
fn watch(config: &Channel, shared: &Shared, stop: &AtomicBool, built: &mut Built) -> End {
    let Some(bus) = built.pipeline.bus() else {
        return failed("error", "the pipeline has no bus".into());
    };
    if built.pipeline.set_state(gst::State::Playing).is_err() {
        let why = first_error(&bus).unwrap_or_else(|| "cannot start the pipeline".into());
        return failed("error", why);
    }
    let started = Instant::now();
    let mut last_scored: Option<Instant> = None;
    let mut last_check = Instant::now();
    let by_name: HashMap<String, usize> = built
        .branches
        .iter()
        .enumerate()
        .map(|(k, b)| (b.element.name().to_string(), k))
        .collect();
    loop {
        if stop.load(Ordering::SeqCst) {
            drain(&built.pipeline, &bus, shared.stop_timeout);
            return End::Stopped;
        }
        if let Some(msg) = bus.timed_pop(gst::ClockTime::from_nseconds(TICK.as_nanos() as u64)) {
            use gst::MessageView;
            match msg.view() {
                MessageView::Element(e) => {
                    let k = msg
                        .src()
                        .and_then(|s| by_name.get(s.name().as_str()).copied());
                    if let (Some(k), Some(s)) = (k, e.structure()) {
                        if handle_element(shared, &mut built.branches[k], s) {
                            last_scored = Some(Instant::now());
                            mark_scored(shared, &config.name);
                        }
                    }
                }
                MessageView::Error(e) => {
                    let src = msg.src().map(|s| s.name().to_string()).unwrap_or_default();
                    return failed("error", format!("{src}: {}", e.error()));
                }
                MessageView::Eos(_) => return failed("eos", "the inputs ended".into()),
                MessageView::Warning(w) => {
                    let src = msg.src().map(|s| s.name().to_string()).unwrap_or_default();
                    eprintln!(
                        "vmafcompare monitor: channel \"{}\": warning from {src}: {}",
                        config.name,
                        w.error()
                    );
                }
                MessageView::StateChanged(s)
                    if msg.src() == Some(built.pipeline.upcast_ref())
                        && s.current() == gst::State::Playing =>
                {
                    let up = metrics::ChannelLabel {
                        channel: config.name.clone(),
                    };
                    shared.metrics.channel_up.get_or_create(&up).set(1);
                    for b in &built.branches {
                        let device: i32 = b.element.property("active-device-id");
                        shared
                            .metrics
                            .channel_device
                            .get_or_create(&b.labels)
                            .set(device.into());
                    }
                }
                _ => {}
            }
        }
        if last_check.elapsed() < TICK {
            continue;
        }
        last_check = Instant::now();
        check_inputs(config, shared, built);
        for b in &mut built.branches {
            count_stats(shared, b);
        }
        if let Some(end) = stalled(config, started, last_scored, &built.branches) {
            return end;
        }
    }
}

fn failed(reason: &'static str, detail: String) -> End {
    End::Failed { reason, detail }
}

/// The first error message waiting on the bus, as text.
fn first_error(bus: &gst::Bus) -> Option<String> {
    while let Some(msg) = bus.pop() {
        if let gst::MessageView::Error(e) = msg.view() {
            let src = msg.src().map(|s| s.name().to_string()).unwrap_or_default();
            return Some(format!("{src}: {}", e.error()));
        }
    }
    None
}

/// Records that `channel` scored a frame (for `/readyz`).
fn mark_scored(shared: &Shared, channel: &str) {
    let mut scored = shared.scored.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = scored.get_mut(channel).filter(|s| !**s) {
        *s = true;
    }
}

/// A `vmafcompare` element's message: frames to the metrics and events, alerts and offsets
/// to their gauges. Returns whether it was a scored frame.
fn handle_element(shared: &Shared, b: &mut Branch, s: &gst::StructureRef) -> bool {
    let m = &shared.metrics;
    if let Ok(frame) = FrameMessage::try_from(s) {
        m.vmaf.get_or_create(&b.labels).set(frame.vmaf);
        if let Some(w) = frame.window {
            m.window_mean.get_or_create(&b.labels).set(w.mean);
            m.window_min.get_or_create(&b.labels).set(w.min);
        }
        for (name, value) in frame.metrics.iter().filter(|(n, _)| n != "vmaf") {
            let l = metrics::Named {
                channel: b.labels.channel.clone(),
                rendition: b.labels.rendition.clone(),
                metric: name.clone(),
            };
            m.set_metric(&l, *value);
        }
        m.scored.get_or_create(&b.labels).inc();
        if frame.vmaf.is_finite() {
            m.pool(&b.labels, frame.vmaf);
        }
        if let Some(at) = frame.pts.and_then(|pts| b.arrival.arrival_of(pts)) {
            let latency = at.elapsed().as_secs_f64();
            m.latency.get_or_create(&b.labels).observe(latency);
        }
        if let Some(events) = &shared.events {
            if let Err(e) = events.write(&b.labels.channel, &b.labels.rendition, &frame) {
                eprintln!("vmafcompare monitor: {e}");
            }
        }
        b.last_scored = Some(Instant::now());
        return true;
    }
    if let Ok(alert) = AlertMessage::try_from(s) {
        b.below = alert.below;
        return false;
    }
    if let Ok(offset) = OffsetMessage::try_from(s) {
        m.offset_frames
            .get_or_create(&b.labels)
            .set(offset.offset_frames);
        m.offset_seconds
            .get_or_create(&b.labels)
            .set(offset.delay as f64 / 1e9);
    }
    false
}

/// Sets `input_up` of the reference and each rendition, and each rendition's `alert`.
fn check_inputs(config: &Channel, shared: &Shared, built: &mut Built) {
    let now_ms = u64::try_from(shared.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
    let timeout = u64::try_from(config.supervision.input_timeout.as_millis()).unwrap_or(u64::MAX);
    let is_up = |a: &Arrival| {
        let t = a.last_ms.load(Ordering::Relaxed);
        t != 0 && now_ms.saturating_sub(t) <= timeout
    };
    let reference = metrics::Rendition::new(&config.name, "reference");
    let reference_up = is_up(&built.reference_arrival);
    shared
        .metrics
        .input_up
        .get_or_create(&reference)
        .set(reference_up.into());
    for b in &mut built.branches {
        let up = is_up(&b.arrival);
        if up && !b.was_up {
            b.up_since = Instant::now();
        }
        b.was_up = up;
        shared
            .metrics
            .input_up
            .get_or_create(&b.labels)
            .set(up.into());
        let alert = b.below || !up || !reference_up;
        shared
            .metrics
            .alert
            .get_or_create(&b.labels)
            .set(alert.into());
    }
}

/// Adds what the element counted since the last look (its `stats` property) to the counters.
fn count_stats(shared: &Shared, b: &mut Branch) {
    let stats: gst::Structure = b.element.property("stats");
    let get = |name: &str| stats.get::<u64>(name).unwrap_or(0);
    let now = [
        get("skipped"),
        get("late"),
        get("unpaired-reference"),
        get("unpaired-distorted"),
    ];
    let m = &shared.metrics;
    let delta = |k: usize| now[k].saturating_sub(b.counted[k]);
    m.skipped.get_or_create(&b.labels).inc_by(delta(0));
    m.late.get_or_create(&b.labels).inc_by(delta(1));
    for (k, input) in [(2, "reference"), (3, "distorted")] {
        let l = metrics::Input {
            channel: b.labels.channel.clone(),
            rendition: b.labels.rendition.clone(),
            input: input.to_owned(),
        };
        m.unpaired.get_or_create(&l).inc_by(delta(k));
    }
    b.counted = now;
}

/// A stall that restarts the channel: nothing scored for `stall-timeout` since the start or
/// the last scored frame, or a rendition whose input is up that scored nothing for as long.
fn stalled(
    config: &Channel,
    started: Instant,
    last_scored: Option<Instant>,
    branches: &[Branch],
) -> Option<End> {
    let timeout = config.supervision.stall_timeout;
    if last_scored.unwrap_or(started).elapsed() > timeout {
        return Some(failed(
            "stall",
            format!("no frame scored for {:.1} s", timeout.as_secs_f64()),
        ));
    }
    for b in branches.iter().filter(|b| b.was_up) {
        let since = [Some(started), Some(b.up_since), b.last_scored]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(started);
        if since.elapsed() > timeout {
            return Some(failed(
                "stall",
                format!(
                    "rendition \"{}\" receives frames but scored none for {:.1} s",
                    b.rendition.label,
                    timeout.as_secs_f64()
                ),
            ));
        }
    }
    None
}

/// Ends the pipeline cleanly: EOS into every source, then waits up to `timeout` for the
/// pipeline's EOS (each element writes its log and posts its summary on its way).
fn drain(pipeline: &gst::Pipeline, bus: &gst::Bus, timeout: Duration) {
    if !pipeline.send_event(gst::event::Eos::new()) {
        return;
    }
    let wait = gst::ClockTime::from_nseconds(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
    let _ = bus.timed_pop_filtered(wait, &[gst::MessageType::Eos, gst::MessageType::Error]);
}
