//! `vmafcompare monitor --config FILE`: the live monitoring service (README, "Monitoring").
//! One pipeline per channel of the config, each on its own thread ([`channel`]), a branch per
//! rendition ([`branch`]); their scores
//! as Prometheus metrics ([`metrics`]) on an HTTP endpoint ([`http`]) and optionally as JSON
//! lines ([`events`]); SIGTERM/SIGINT stop every channel cleanly, SIGHUP reloads the config
//! ([`config`]), touching only the channels whose entry changed.

mod branch;
mod channel;
mod config;
mod events;
mod http;
mod metrics;

use std::collections::HashMap;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::Parser;
use gst::prelude::*;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use channel::{Handle, Shared};
use config::Config;

/// Exit status of a bad config or bad options.
const EXIT_USAGE: u8 = 2;
/// Exit status when the service cannot start (address in use, events file, GStreamer).
const EXIT_START: u8 = 1;

/// Options of `vmafcompare monitor`.
#[derive(Parser, Debug)]
#[command(
    name = "vmafcompare monitor",
    about = "Scores live channels (a reference and its renditions each) and serves the scores to Prometheus",
    long_about = "Scores live channels and serves the scores to Prometheus.\n\n\
        Each channel of the config is a reference and one or more renditions (URIs that \
        uridecodebin3 opens: srt://, udp://, rtsp://, http:// HLS, files), each rendition scored \
        against the reference by a vmafcompare element with its live features (scoring queue, \
        auto-align, windows, alerts). Metrics at http://LISTEN/metrics, liveness at /healthz, \
        readiness at /readyz. A channel that fails, ends or stalls is restarted with backoff. \
        SIGTERM/SIGINT stop cleanly; SIGHUP reloads the config. README, section Monitoring, \
        documents the config keys and the metrics.",
    after_help = "Exit status: 0 after a clean stop, 1 when the service cannot start, 2 for a bad \
        config or bad options."
)]
struct Args {
    /// The channels' config (TOML; README, Monitoring)
    #[arg(long, value_name = "FILE")]
    config: PathBuf,

    /// Validate the config, build each channel's elements once, and exit
    #[arg(long)]
    check: bool,

    /// Address of /metrics, /healthz and /readyz (overrides [server] listen)
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<SocketAddr>,

    /// Append every scored frame as a JSON line to this file (overrides [server] events)
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
}

/// Runs `vmafcompare monitor ARGS...` (`args` starts with `monitor`); returns the exit status.
pub fn main(args: impl Iterator<Item = OsString>) -> ExitCode {
    let args = match Args::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE));
        }
    };
    let mut config = match config::load(&args.config) {
        Ok(c) => c,
        Err(lines) => return refuse(&lines),
    };
    if let Some(listen) = args.listen {
        config.server.listen = listen;
    }
    if let Some(events) = &args.events {
        config.server.events = Some(events.clone());
    }
    if let Err(e) = start_gstreamer(&config) {
        return fail(&e);
    }
    if args.check {
        return check(&args, &config);
    }
    match serve(&args, config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// Prints each config problem on its own line; exit status 2.
fn refuse(lines: &[String]) -> ExitCode {
    for line in lines {
        eprintln!("vmafcompare monitor: {line}");
    }
    ExitCode::from(EXIT_USAGE)
}

fn fail(message: &str) -> ExitCode {
    eprintln!("vmafcompare monitor: {message}");
    ExitCode::from(EXIT_START)
}

/// GStreamer with the plugin registered, and NVDEC decoders preferred unless every channel
/// scores on the CPU.
fn start_gstreamer(config: &Config) -> Result<(), String> {
    let gpu = config.channels.iter().any(|c| c.scoring.backend != "cpu");
    if gpu {
        crate::decoders::prefer_nvdec();
    }
    gst::init().map_err(|e| format!("cannot initialise GStreamer: {e}"))?;
    gstvmafcompare::plugin_register_static()
        .map_err(|e| format!("cannot register the vmafcompare plugin: {e}"))?;
    if gpu {
        crate::decoders::rank_own_decoder();
    }
    Ok(())
}

/// `--check`: every channel's pipeline is built and brought to READY (which loads the models
/// and features, and opens the GPU for `backend=cuda`), then to NULL.
fn check(args: &Args, config: &Config) -> ExitCode {
    let epoch = Instant::now();
    let mut problems = Vec::new();
    for (i, c) in config.channels.iter().enumerate() {
        let entry = format!(
            "{}: channel \"{}\" (entry {})",
            args.config.display(),
            c.name,
            i + 1
        );
        match channel::build(c, epoch) {
            Err(e) => problems.push(format!("{entry}: {e}")),
            Ok(built) => {
                if built.pipeline.set_state(gst::State::Ready).is_err() {
                    let why = built
                        .pipeline
                        .bus()
                        .and_then(|b| b.pop_filtered(&[gst::MessageType::Error]))
                        .and_then(|m| match m.view() {
                            gst::MessageView::Error(e) => Some(e.error().to_string()),
                            _ => None,
                        })
                        .unwrap_or_else(|| "cannot be started".into());
                    problems.push(format!("{entry}: {why}"));
                }
                let _ = built.pipeline.set_state(gst::State::Null);
            }
        }
    }
    if !problems.is_empty() {
        return refuse(&problems);
    }
    let renditions: usize = config.channels.iter().map(|c| c.renditions.len()).sum();
    println!(
        "config OK: {} channels, {renditions} renditions",
        config.channels.len()
    );
    ExitCode::SUCCESS
}

/// What `/metrics` and `/readyz` read.
struct Served {
    shared: Arc<Shared>,
    gpu: Mutex<Option<nvml_wrapper::Nvml>>,
}

impl http::Source for Served {
    fn metrics(&self) -> String {
        self.gpu_memory();
        self.shared.metrics.encode()
    }

    fn not_ready(&self) -> Option<String> {
        let scored = self.shared.scored();
        let waiting: Vec<&str> = scored
            .iter()
            .filter(|(_, s)| !**s)
            .map(|(c, _)| c.as_str())
            .collect();
        (!waiting.is_empty()).then(|| format!("no frame scored yet by: {}", waiting.join(", ")))
    }
}

impl Served {
    /// Sets `vmafcompare_gpu_memory_bytes` per device from NVML: the memory of this process's
    /// compute contexts (nothing where NVML or a driver is missing).
    fn gpu_memory(&self) {
        let nvml = self.gpu.lock().unwrap_or_else(|e| e.into_inner());
        let Some(nvml) = nvml.as_ref() else {
            return;
        };
        let pid = std::process::id();
        let count = nvml.device_count().unwrap_or(0);
        for i in 0..count {
            let Ok(device) = nvml.device_by_index(i) else {
                continue;
            };
            let bytes: u64 = device
                .running_compute_processes()
                .unwrap_or_default()
                .iter()
                .filter(|p| p.pid == pid)
                .map(|p| match p.used_gpu_memory {
                    nvml_wrapper::enums::device::UsedGpuMemory::Used(b) => b,
                    nvml_wrapper::enums::device::UsedGpuMemory::Unavailable => 0,
                })
                .sum();
            let label = metrics::Device {
                device: i.to_string(),
            };
            self.shared
                .metrics
                .gpu_memory
                .get_or_create(&label)
                .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
    }
}

/// Runs the service until SIGTERM/SIGINT. Errors: the endpoint or the events file cannot be
/// opened, the signals cannot be caught, as text.
fn serve(args: &Args, config: Config) -> Result<(), String> {
    let events = match &config.server.events {
        Some(path) => Some(events::Events::open(path)?),
        None => None,
    };
    let shared = Arc::new(Shared {
        metrics: metrics::Metrics::new(),
        events,
        scored: Mutex::default(),
        epoch: Instant::now(),
        stop_timeout: config.server.stop_timeout,
    });
    let served = Arc::new(Served {
        shared: Arc::clone(&shared),
        gpu: Mutex::new(nvml_wrapper::Nvml::init().ok()),
    });
    let mut endpoint = http::Endpoint::start(config.server.listen, served)?;
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .map_err(|e| format!("cannot catch signals: {e}"))?;
    eprintln!(
        "vmafcompare monitor: {} channels, metrics at http://{}/metrics",
        config.channels.len(),
        config.server.listen
    );
    let mut running: HashMap<String, Handle> = HashMap::new();
    apply(&config, &shared, &mut running);
    let mut current = config;
    for signal in signals.forever() {
        if signal != SIGHUP {
            break;
        }
        match config::load(&args.config) {
            Err(lines) => {
                for line in lines {
                    eprintln!("vmafcompare monitor: {line}");
                }
                eprintln!("vmafcompare monitor: reload refused, the running config is kept");
            }
            Ok(new) => {
                if new.server != current.server {
                    eprintln!(
                        "vmafcompare monitor: [server] changes take effect at the next start"
                    );
                }
                apply(&new, &shared, &mut running);
                current = new;
            }
        }
    }
    eprintln!("vmafcompare monitor: stopping {} channels", running.len());
    for handle in running.values() {
        handle.request_stop();
    }
    for handle in running.values_mut() {
        handle.join();
    }
    endpoint.stop();
    Ok(())
}

/// Makes the running channels those of `config`: stops the removed and changed ones (in
/// parallel, then joins them), starts the new and changed ones, leaves the others alone.
fn apply(config: &Config, shared: &Arc<Shared>, running: &mut HashMap<String, Handle>) {
    let wanted: HashMap<&str, &config::Channel> = config
        .channels
        .iter()
        .map(|c| (c.name.as_str(), c))
        .collect();
    let going: Vec<String> = running
        .iter()
        .filter(|(name, h)| wanted.get(name.as_str()) != Some(&&h.config))
        .map(|(name, _)| name.clone())
        .collect();
    for name in &going {
        if let Some(h) = running.get(name) {
            h.request_stop();
        }
    }
    for name in &going {
        if let Some(mut h) = running.remove(name) {
            h.join();
            if !wanted.contains_key(name.as_str()) {
                let labels: Vec<String> = h
                    .config
                    .renditions
                    .iter()
                    .map(|r| r.label.clone())
                    .collect();
                shared.metrics.forget(name, &labels);
                shared.scored().remove(name);
                eprintln!("vmafcompare monitor: channel \"{name}\" removed");
            }
        }
    }
    for c in &config.channels {
        if running.contains_key(&c.name) {
            continue;
        }
        shared.scored().insert(c.name.clone(), false);
        match Handle::start(c.clone(), Arc::clone(shared)) {
            Ok(h) => {
                running.insert(c.name.clone(), h);
            }
            Err(e) => eprintln!("vmafcompare monitor: {e}"),
        }
    }
}
