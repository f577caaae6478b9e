//! Soak: runs a live scoring pipeline for a long time and prints, at intervals, the process's
//! resident memory, the GPU's free memory (with `--backend cuda`), the frames scored and
//! skipped, and the drift between each frame's index and its timestamp (index x frame
//! duration against running time since the first frame: any lost or duplicated frame
//! accounting shows up as a drift of whole frames).
//!
//! Two live `videotestsrc` (the moving `ball` pattern; the distorted one through JPEG at
//! quality 30, or with `--distortion scale` scaled down 4x and back up, which needs only the
//! base plugins) feed `vmafcompare`, whose output goes to a `fakesink` that syncs to the
//! clock, as a monitoring pipeline would. At the end it sends EOS and prints the summary.
//!
//! ```sh
//! cargo run --release --example soak -- --duration 3600 --interval 300           # CPU
//! cargo run --release --example soak -- --backend cuda --width 1920 --height 1080 \
//!     --distortion scale --duration 3600 --interval 60                           # GPU
//! ```
//! Exits 1 when a frame drifted by half a frame or more, no frame was scored, or the
//! pipeline failed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use gst::prelude::*;
use gstvmafcompare::vmafcompare::{
    FrameMessage, SummaryMessage, FRAME_MESSAGE_NAME, SUMMARY_MESSAGE_NAME,
};

#[derive(Parser)]
#[command(about = "Runs a live vmafcompare pipeline for a long time, printing memory and drift")]
struct Args {
    /// Seconds to run.
    #[arg(long, default_value_t = 3600)]
    duration: u64,
    /// Seconds between two report lines.
    #[arg(long, default_value_t = 60)]
    interval: u64,
    /// vmafcompare backend: cpu, cuda or auto.
    #[arg(long, default_value = "cpu")]
    backend: String,
    /// CUDA device ordinal (device-id; -1: the element picks one).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    device_id: i32,
    /// Frame width.
    #[arg(long, default_value_t = 320)]
    width: u32,
    /// Frame height.
    #[arg(long, default_value_t = 240)]
    height: u32,
    /// Frames per second.
    #[arg(long, default_value_t = 25)]
    fps: u32,
    /// vmafcompare queue-size.
    #[arg(long, default_value_t = 3)]
    queue_size: u32,
    /// How the distorted stream is made: `jpeg` (jpegenc quality 30, gst-plugins-good) or
    /// `scale` (down 4x and back up, videoconvertscale only).
    #[arg(long, default_value = "jpeg")]
    distortion: String,
}

/// Resident set size of this process, bytes (Linux `/proc/self/status`).
fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// What the bus told so far.
#[derive(Default)]
struct Seen {
    frames: u64,
    first: Option<(u64, u64)>,
    last_index: u64,
    skipped: u64,
    max_drift: i64,
    interval_drift: i64,
    max_lag: u64,
    window_mean: f64,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("soak failed: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    gst::init().map_err(|e| e.to_string())?;
    gstvmafcompare::plugin_register_static().map_err(|e| e.to_string())?;
    let caps = format!(
        "video/x-raw,format=I420,width={},height={},framerate={}/1",
        args.width, args.height, args.fps
    );
    let distort = match args.distortion.as_str() {
        "jpeg" => "jpegenc quality=30 ! jpegdec ! videoconvert".to_owned(),
        "scale" => format!(
            "videoscale method=bilinear ! video/x-raw,width={},height={} ! videoscale method=bilinear",
            (args.width / 4).max(1),
            (args.height / 4).max(1)
        ),
        other => return Err(format!("--distortion {other}: jpeg or scale")),
    };
    let desc = format!(
        "vmafcompare name=cmp backend={backend} device-id={dev} queue-size={q} window-size={fps} \
           ! fakesink name=sink sync=true \
         videotestsrc is-live=true pattern=ball ! {caps} ! cmp.reference \
         videotestsrc is-live=true pattern=ball ! {caps} ! {distort} ! {caps} ! cmp.distorted",
        backend = args.backend,
        dev = args.device_id,
        q = args.queue_size,
        fps = args.fps,
    );
    let pipeline = gst::parse::launch(&desc)
        .map_err(|e| e.to_string())?
        .downcast::<gst::Pipeline>()
        .map_err(|_| "not a pipeline")?;
    let (outputs, with_meta) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    if let Some(pad) = pipeline.by_name("sink").and_then(|s| s.static_pad("sink")) {
        let (o, m) = (outputs.clone(), with_meta.clone());
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            if let Some(b) = info.buffer() {
                o.fetch_add(1, Ordering::Relaxed);
                if gstvmafcompare::vmafcompare::frame_meta(b).is_some() {
                    m.fetch_add(1, Ordering::Relaxed);
                }
            }
            gst::PadProbeReturn::Ok
        });
    }
    let bus = pipeline.bus().ok_or("no bus")?;
    pipeline
        .set_state(gst::State::Playing)
        .map_err(|e| format!("cannot start: {e}"))?;
    // The device the element opened at NULL->READY (with device-id=-1, the one it picked),
    // for its free memory.
    let active = pipeline
        .by_name("cmp")
        .map_or(-1, |c| c.property::<i32>("active-device-id"));
    let gpu = usize::try_from(active)
        .ok()
        .and_then(|d| gstvmafcompare::cuda::GpuDevice::open(d).ok());
    let gpu_free = || {
        gpu.as_ref()
            .and_then(|d| d.mem_get_info().ok())
            .map(|(free, _)| free as u64)
    };
    let frame_ns = 1_000_000_000u64;
    let start = Instant::now();
    let rss0 = rss().unwrap_or(0);
    let gpu0 = gpu_free();
    println!(
        "soak: {}x{} @ {} fps, backend {}, {} s; RSS at start {:.1} MiB{}",
        args.width,
        args.height,
        args.fps,
        args.backend,
        args.duration,
        mib(rss0),
        gpu0.map_or(String::new(), |f| format!(", GPU free {:.1} MiB", mib(f)))
    );
    println!(
        "| t (s) | frames scored | last index | skipped | outputs (with meta) | RSS (MiB) | GPU free (MiB) | max |drift| (ns) | max score lag (ms) | window VMAF |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut seen = Seen::default();
    let mut rss_after_warmup = None;
    let mut next_report = Duration::from_secs(args.interval.max(1));
    let end = Duration::from_secs(args.duration);
    let mut summary = None;
    let mut eos_sent = false;
    loop {
        let msg = bus.timed_pop(gst::ClockTime::from_mseconds(100));
        if let Some(msg) = msg {
            match msg.view() {
                gst::MessageView::Error(e) => {
                    return Err(format!("{} ({:?})", e.error(), e.debug()));
                }
                gst::MessageView::Eos(_) => break,
                gst::MessageView::Element(e) => match e.structure() {
                    Some(s) if s.name() == FRAME_MESSAGE_NAME => {
                        let Ok(f) = FrameMessage::try_from(s) else {
                            continue;
                        };
                        let Some(rt) = f.running_time else { continue };
                        let (i0, rt0) = *seen.first.get_or_insert((f.index, rt.nseconds()));
                        // Expected running time: frames since the first, times the frame
                        // duration (as videotestsrc computes timestamps).
                        let since = u128::from(f.index - i0) * u128::from(frame_ns);
                        let expect = rt0 + (since / u128::from(args.fps)) as u64;
                        let drift = rt.nseconds() as i64 - expect as i64;
                        seen.max_drift = seen.max_drift.max(drift.abs());
                        seen.interval_drift = seen.interval_drift.max(drift.abs());
                        if let Some(now) = pipeline.current_running_time() {
                            seen.max_lag = seen
                                .max_lag
                                .max(now.nseconds().saturating_sub(rt.nseconds()));
                        }
                        seen.frames += 1;
                        seen.last_index = f.index;
                        seen.skipped = f.skipped;
                        seen.window_mean = f.window.map_or(f64::NAN, |w| w.mean);
                    }
                    Some(s) if s.name() == SUMMARY_MESSAGE_NAME => {
                        summary = SummaryMessage::try_from(s).ok();
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        let elapsed = start.elapsed();
        if elapsed >= Duration::from_secs(10) && rss_after_warmup.is_none() {
            rss_after_warmup = rss();
        }
        if elapsed >= next_report {
            next_report += Duration::from_secs(args.interval.max(1));
            println!(
                "| {} | {} | {} | {} | {} ({}) | {:.1} | {} | {} | {:.1} | {:.3} |",
                elapsed.as_secs(),
                seen.frames,
                seen.last_index,
                seen.skipped,
                outputs.load(Ordering::Relaxed),
                with_meta.load(Ordering::Relaxed),
                mib(rss().unwrap_or(0)),
                gpu_free().map_or("-".to_owned(), |f| format!("{:.1}", mib(f))),
                seen.interval_drift,
                seen.max_lag as f64 / 1e6,
                seen.window_mean
            );
            seen.interval_drift = 0;
            seen.max_lag = 0;
        }
        if elapsed >= end && !eos_sent {
            pipeline.send_event(gst::event::Eos::new());
            eos_sent = true;
        }
        if eos_sent && elapsed >= end + Duration::from_secs(60) {
            return Err("no EOS within 60 s after sending it".into());
        }
    }
    let _ = pipeline.set_state(gst::State::Null);
    let rss1 = rss().unwrap_or(0);
    let warm = rss_after_warmup.unwrap_or(rss0);
    println!(
        "RSS: start {:.1} MiB, after 10 s {:.1} MiB, end {:.1} MiB (growth since 10 s: {:+.1} MiB)",
        mib(rss0),
        mib(warm),
        mib(rss1),
        mib(rss1) - mib(warm)
    );
    if let (Some(a), Some(b)) = (gpu0, gpu_free()) {
        println!(
            "GPU free: start {:.1} MiB, end {:.1} MiB (lost {:.3} MiB)",
            mib(a),
            mib(b),
            mib(a.saturating_sub(b))
        );
    }
    println!(
        "frames scored {} (last index {}), outputs {} ({} with meta), max |index x frame - running time| {} ns",
        seen.frames,
        seen.last_index,
        outputs.load(Ordering::Relaxed),
        with_meta.load(Ordering::Relaxed),
        seen.max_drift
    );
    match &summary {
        Some(s) => println!(
            "summary: {} frames, skipped {}, late {}, unpaired {}/{}, VMAF mean {:.3}, backend {}",
            s.frames,
            s.skipped,
            s.late,
            s.unpaired_reference,
            s.unpaired_distorted,
            s.get("vmaf").map_or(f64::NAN, |p| p.mean),
            s.backend
        ),
        None => println!("no summary"),
    }
    let half = frame_ns / u64::from(args.fps) / 2;
    if seen.frames == 0 || seen.max_drift as u64 >= half || summary.is_none() {
        return Err("drift of half a frame or more, no frame scored, or no summary".into());
    }
    Ok(())
}
