//! One channel of `vmafcompare monitor`: its pipeline (the reference decoded once and teed to
//! one `vmafcompare` element per rendition, each rendition decoded on its own branch), and
//! the thread that runs it: bus messages to metrics and events, inputs up or down, stalls,
//! restarts with backoff, and a clean stop.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gst::prelude::*;
use gstvmafcompare::vmafcompare::{AlertMessage, FrameMessage, OffsetMessage};

use super::branch::{self, Arrival, Branch};
use super::config::Channel;
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

impl Shared {
    /// The channels' "has scored" flags (a poisoned lock is taken over: they stay valid).
    pub fn scored(&self) -> std::sync::MutexGuard<'_, HashMap<String, bool>> {
        self.scored.lock().unwrap_or_else(|e| e.into_inner())
    }
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

/// The channel's pipeline, built (NULL state).
pub struct Built {
    pub pipeline: gst::Pipeline,
    tee: gst::Element,
    reference_arrival: Arrival,
    branches: Vec<Branch>,
}

/// Builds the channel's pipeline: `uridecodebin3` of the reference -> `tee` -> one
/// [`Branch`] per rendition (its `uridecodebin3`, queues, `vmafcompare`, `fakesink`).
/// Streams other than the first video one of each input go to a `fakesink`. Errors: a
/// missing element or a refused property, as text.
pub fn build(config: &Channel, epoch: Instant) -> Result<Built, String> {
    let pipeline = gst::Pipeline::with_name(&format!("channel-{}", config.name));
    let tee = branch::make("tee", "reference-tee")?;
    tee.set_property("allow-not-linked", true);
    let reference = branch::make("uridecodebin3", "reference-source")?;
    reference.set_property("uri", &config.reference);
    pipeline
        .add_many([&reference, &tee])
        .map_err(|e| format!("cannot assemble the pipeline: {e}"))?;
    let reference_arrival = Arrival::default();
    branch::link_video(
        &reference,
        &pipeline,
        tee.static_pad("sink"),
        &reference_arrival,
        &Arc::default(),
        epoch,
    );
    let backoff = config.supervision.restart_backoff;
    let branches = config
        .renditions
        .iter()
        .map(|r| Branch::add(&pipeline, &tee, config, r, epoch, backoff))
        .collect::<Result<_, _>>()?;
    Ok(Built {
        pipeline,
        tee,
        reference_arrival,
        branches,
    })
}

/// One run: builds and plays the pipeline, watches it until it fails or is stopped, and
/// always leaves it in NULL (its GPU state released).
fn run(config: &Channel, shared: &Shared, stop: &AtomicBool) -> End {
    let mut built = match build(config, shared.epoch) {
        Ok(b) => b,
        Err(e) => return failed("error", e),
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
    // `/readyz` learns of this run's first scored frame once, not at every frame.
    let mut ready = false;
    loop {
        if stop.load(Ordering::SeqCst) {
            drain(&built.pipeline, &bus, shared.stop_timeout);
            return End::Stopped;
        }
        if let Some(msg) = bus.timed_pop(gst::ClockTime::from_nseconds(TICK.as_nanos() as u64)) {
            use gst::MessageView;
            match msg.view() {
                MessageView::Element(e) => {
                    let k = msg.src().and_then(|s| {
                        built
                            .branches
                            .iter()
                            .position(|b| s == b.element.upcast_ref::<gst::Object>())
                    });
                    if let (Some(k), Some(s)) = (k, e.structure()) {
                        if handle_element(shared, &mut built.branches[k], s) {
                            last_scored = Some(Instant::now());
                            if !ready {
                                ready = true;
                                if let Some(flag) = shared.scored().get_mut(&config.name) {
                                    *flag = true;
                                }
                            }
                        }
                    }
                }
                MessageView::Error(e) => {
                    let src = msg.src().map(|s| s.name().to_string()).unwrap_or_default();
                    let detail = format!("{src}: {}", e.error());
                    // A rendition's own input failed: that branch alone is made again.
                    let k = msg
                        .src()
                        .and_then(|s| built.branches.iter().position(|b| b.owns(s)));
                    match k {
                        Some(k) => fail_branch(config, shared, built, k, "error", &detail),
                        None => return failed("error", detail),
                    }
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
                        report_device(shared, b);
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
        for b in built.branches.iter_mut().filter(|b| b.retry_at.is_none()) {
            count_stats(shared, b);
        }
        if let Some(end) = stalled(config, shared, started, last_scored, built) {
            return end;
        }
        remake_due(config, shared, built);
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
        // The window's alerts (`reason=vmaf`, or none from an older element); a ladder's
        // `reason=stalled` alerts are about its input, which `input_up` follows.
        if s.get::<&str>("reason").map_or(true, |r| r == "vmaf") {
            b.below = alert.below;
        }
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

/// Sets `input_up` of the reference and each rendition, and each rendition's `alert`. A
/// rendition with `auto-align` whose input comes back after being down is made again, so
/// that its offset is measured again (a restarted encoder rarely keeps its delay).
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
    let mut realign = Vec::new();
    for (k, b) in built.branches.iter_mut().enumerate() {
        let up = b.retry_at.is_none() && is_up(&b.arrival);
        if up && !b.was_up {
            b.up_since = Instant::now();
            if b.ever_up && b.rendition.auto_align {
                realign.push(k);
            }
            b.ever_up = true;
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
    for k in realign {
        remake(config, shared, built, k, "realign");
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

/// A stall: nothing scored for `stall-timeout` since the start or the last scored frame
/// restarts the channel; a rendition whose input is up that scored nothing for as long is
/// made again on its own.
fn stalled(
    config: &Channel,
    shared: &Shared,
    started: Instant,
    last_scored: Option<Instant>,
    built: &mut Built,
) -> Option<End> {
    let timeout = config.supervision.stall_timeout;
    if last_scored.unwrap_or(started).elapsed() > timeout {
        return Some(failed(
            "stall",
            format!("no frame scored for {:.1} s", timeout.as_secs_f64()),
        ));
    }
    let stuck: Vec<usize> = (0..built.branches.len())
        .filter(|&k| {
            let b = &built.branches[k];
            let since = [Some(started), Some(b.up_since), b.last_scored]
                .into_iter()
                .flatten()
                .max();
            b.retry_at.is_none() && b.was_up && since.is_some_and(|t| t.elapsed() > timeout)
        })
        .collect();
    for k in stuck {
        let detail = format!(
            "receives frames but scored none for {:.1} s",
            timeout.as_secs_f64()
        );
        fail_branch(config, shared, built, k, "stall", &detail);
    }
    None
}

/// A rendition's branch failed (`reason`: `error`, `stall`): it is taken out at once and made
/// again after its backoff (doubling up to `restart-backoff-max`); the others play on.
fn fail_branch(
    config: &Channel,
    shared: &Shared,
    built: &mut Built,
    k: usize,
    reason: &str,
    detail: &str,
) {
    let (pipeline, tee) = (&built.pipeline, &built.tee);
    let b = &mut built.branches[k];
    if b.retry_at.is_some() {
        return;
    }
    b.remove(pipeline, tee);
    let wait = b.retry_later(config.supervision.restart_backoff_max);
    eprintln!(
        "vmafcompare monitor: channel \"{}\": rendition \"{}\": {detail}; made again in {:.1} s ({reason})",
        config.name,
        b.rendition.label,
        wait.as_secs_f64()
    );
    count_remake(shared, b, reason);
}

/// Makes again the branches whose backoff has passed.
fn remake_due(config: &Channel, shared: &Shared, built: &mut Built) {
    let due: Vec<usize> = (0..built.branches.len())
        .filter(|&k| {
            built.branches[k]
                .retry_at
                .is_some_and(|t| Instant::now() >= t)
        })
        .collect();
    for k in due {
        remake(config, shared, built, k, "");
    }
}

/// Makes rendition `k`'s branch again in the playing pipeline (its old one taken out first);
/// `reason` non-empty is counted as a remake of its own (a failure's was counted when it
/// failed). A branch that cannot be made waits for its next backoff.
fn remake(config: &Channel, shared: &Shared, built: &mut Built, k: usize, reason: &str) {
    let (pipeline, tee) = (&built.pipeline, &built.tee);
    let old = &mut built.branches[k];
    old.remove(pipeline, tee);
    if !reason.is_empty() {
        eprintln!(
            "vmafcompare monitor: channel \"{}\": rendition \"{}\": input back, aligned again ({reason})",
            config.name, old.rendition.label
        );
        count_remake(shared, old, reason);
    }
    let (rendition, backoff) = (old.rendition.clone(), old.backoff);
    match Branch::add(pipeline, tee, config, &rendition, shared.epoch, backoff) {
        Ok(new) => {
            report_device(shared, &new);
            built.branches[k] = new;
        }
        Err(e) => {
            let wait = old.retry_later(config.supervision.restart_backoff_max);
            eprintln!(
                "vmafcompare monitor: channel \"{}\": rendition \"{}\": {e}; next try in {:.1} s",
                config.name,
                rendition.label,
                wait.as_secs_f64()
            );
        }
    }
}

/// Sets `vmafcompare_channel_device` from the element's `active-device-id`.
fn report_device(shared: &Shared, b: &Branch) {
    let device: i32 = b.element.property("active-device-id");
    shared
        .metrics
        .channel_device
        .get_or_create(&b.labels)
        .set(device.into());
}

fn count_remake(shared: &Shared, b: &Branch, reason: &str) {
    shared
        .metrics
        .rendition_restarts
        .get_or_create(&metrics::RenditionRestart {
            channel: b.labels.channel.clone(),
            rendition: b.labels.rendition.clone(),
            reason: reason.to_owned(),
        })
        .inc();
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
