//! GPU host check of the zero-copy inputs (issue 4): real H.264 clips decoded by `nvh264dec`
//! into CUDA memory (no caps filter: the element's pad templates make the decoder choose CUDA
//! memory) against the same clips decoded into system memory, plus `cudaupload` on one pad and
//! system memory on the other. Prints, per case, both runs' fps side by side, the input paths
//! the summary reports and whether every metric of every frame is bit-identical.
//!
//! `cargo run --release --example cuda_inputs -- <clips dir> <reference pairs dir>`
//! (`scripts/gpu-host.sh` runs it with `CHECKS=zerocopy`). Exits 1 when a case differs or fails.

use std::path::Path;
use std::time::{Duration, Instant};

use gst::prelude::*;
use gstvmafcompare::vmafcompare::{
    FrameMessage, SummaryMessage, FRAME_MESSAGE_NAME, SUMMARY_MESSAGE_NAME,
};

/// What one run produced.
struct Run {
    frames: Vec<FrameMessage>,
    /// When each frame message arrived.
    arrivals: Vec<Instant>,
    summary: Option<SummaryMessage>,
    seconds: f64,
    error: Option<String>,
}

impl Run {
    /// Frames over the whole run, start-up (decoder and CUDA initialisation) included.
    fn fps(&self) -> f64 {
        self.frames.len() as f64 / self.seconds.max(1e-9)
    }

    /// Frames per second between the first and the last frame message (steady state).
    fn steady_fps(&self) -> f64 {
        match (self.arrivals.first(), self.arrivals.last()) {
            (Some(a), Some(b)) if self.arrivals.len() > 1 => {
                (self.arrivals.len() - 1) as f64 / (*b - *a).as_secs_f64().max(1e-9)
            }
            _ => 0.0,
        }
    }

    fn paths(&self) -> String {
        self.summary
            .as_ref()
            .map(|s| format!("{} / {}", s.reference_input, s.distorted_input))
            .unwrap_or_else(|| "-".into())
    }
}

/// Runs `desc` (containing `vmafcompare name=cmp`) from PLAYING to EOS.
fn run(desc: &str) -> Run {
    run_with(desc, |_| {})
}

/// [`run`], calling `prepare` on the pipeline before it starts.
fn run_with(desc: &str, prepare: impl Fn(&gst::Pipeline)) -> Run {
    let mut out = Run {
        frames: Vec::new(),
        arrivals: Vec::new(),
        summary: None,
        seconds: 0.0,
        error: None,
    };
    let pipeline = match gst::parse::launch(desc) {
        Ok(p) => p,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    if let Some(p) = pipeline.downcast_ref::<gst::Pipeline>() {
        prepare(p);
    }
    let Some(bus) = pipeline.bus() else {
        out.error = Some("no bus".into());
        return out;
    };
    let start = Instant::now();
    if pipeline.set_state(gst::State::Playing).is_err() {
        out.error = Some("cannot start".into());
    }
    while out.error.is_none() {
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_seconds(120)) else {
            out.error = Some("timeout".into());
            break;
        };
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                out.error = Some(format!("{} ({:?})", e.error(), e.debug()))
            }
            gst::MessageView::Element(e) => {
                if let Some(s) = e.structure() {
                    if s.name() == FRAME_MESSAGE_NAME {
                        if let Ok(f) = FrameMessage::try_from(s) {
                            out.frames.push(f);
                            out.arrivals.push(Instant::now());
                        }
                    } else if s.name() == SUMMARY_MESSAGE_NAME {
                        out.summary = SummaryMessage::try_from(s).ok();
                    }
                }
            }
            _ => {}
        }
    }
    out.seconds = start.elapsed().as_secs_f64();
    let _ = pipeline.set_state(gst::State::Null);
    out
}

/// Whether every metric of every frame has the same bits in both runs.
fn identical(a: &Run, b: &Run) -> bool {
    a.frames.len() == b.frames.len()
        && !a.frames.is_empty()
        && a.frames.iter().zip(&b.frames).all(|(x, y)| {
            x.metrics.len() == y.metrics.len()
                && x.metrics
                    .iter()
                    .zip(&y.metrics)
                    .all(|((n1, v1), (n2, v2))| n1 == n2 && v1.to_bits() == v2.to_bits())
        })
}

fn decode(clip: &Path, filter: &str, pad: &str) -> String {
    format!(
        "filesrc location=\"{}\" ! qtdemux ! h264parse ! nvh264dec {filter} ! cmp.{pad}",
        clip.display()
    )
}

fn raw(path: &Path, w: u32, h: u32, format: &str, upload: bool, pad: &str) -> String {
    format!(
        "filesrc location=\"{}\" ! rawvideoparse width={w} height={h} format={format} framerate=25/1 {} ! cmp.{pad}",
        path.display(),
        if upload {
            "! cudaupload ! video/x-raw(memory:CUDAMemory)"
        } else {
            ""
        }
    )
}

const ELEMENT: &str = "vmafcompare name=cmp backend=cuda ! fakesink";
const ELEMENT_CPU: &str = "vmafcompare name=cmp backend=cpu ! fakesink";

fn main() {
    let mut args = std::env::args().skip(1);
    let clips = args.next().unwrap_or_else(|| ".gpu/clips".into());
    let refs = args.next().unwrap_or_else(|| ".gpu/ref".into());
    let init = gst::init()
        .map_err(|e| e.to_string())
        .and_then(|_| gstvmafcompare::plugin_register_static().map_err(|e| e.to_string()));
    if let Err(e) = init {
        eprintln!("cannot initialise GStreamer: {e}");
        std::process::exit(1);
    }
    let mut ok = true;
    let mut rows = Vec::new();
    // Warm-up: CUDA, NVDEC and the plugin's first use in this process are not measured.
    let warm = Path::new(&clips).join("ref_360p.mp4");
    let _ = run(&format!(
        "{} {} {ELEMENT}",
        decode(&warm, "", "reference"),
        decode(&warm, "", "distorted")
    ));
    // (a) nvh264dec on both pads: CUDA memory (negotiated without a caps filter) vs the same
    // decoder forced to system memory.
    for res in ["1080p", "2160p"] {
        let (r, d) = (
            Path::new(&clips).join(format!("ref_{res}.mp4")),
            Path::new(&clips).join(format!("dist_{res}.mp4")),
        );
        if !r.is_file() || !d.is_file() {
            println!("skipping {res}: {} or {} missing", r.display(), d.display());
            continue;
        }
        let sys = run(&format!(
            "{} {} {ELEMENT}",
            decode(&r, "! video/x-raw", "reference"),
            decode(&d, "! video/x-raw", "distorted")
        ));
        let cuda = run(&format!(
            "{} {} {ELEMENT}",
            decode(&r, "", "reference"),
            decode(&d, "", "distorted")
        ));
        rows.push((format!("nvh264dec {res}"), sys, cuda));
    }
    // Decoders in a CUDA context of their own (set by the application before start): the
    // element copies each luma plane peer-to-peer into its context.
    let (r, d) = (
        Path::new(&clips).join("ref_1080p.mp4"),
        Path::new(&clips).join("dist_1080p.mp4"),
    );
    let own = gstvmafcompare::cuda::gst_cuda::library()
        .filter(|l| l.load_driver())
        .and_then(|l| l.new_owned_context(0).and_then(|c| l.new_context(&c)));
    match own {
        Some(context) if r.is_file() => {
            let sys = run(&format!(
                "{} {} {ELEMENT}",
                decode(&r, "! video/x-raw", "reference"),
                decode(&d, "! video/x-raw", "distorted")
            ));
            let peer = run_with(
                &format!(
                    "{} {} {ELEMENT}",
                    decode(&r, "", "reference"),
                    decode(&d, "", "distorted")
                ),
                |p| {
                    for e in p.iterate_elements().into_iter().flatten() {
                        if e.factory().is_some_and(|f| f.name() == "nvh264dec") {
                            e.set_context(&context);
                        }
                    }
                },
            );
            rows.push((
                "nvh264dec 1080p, decoders in another context".into(),
                sys,
                peer,
            ));
        }
        _ => println!("skipping the peer-copy case: no GStreamer CUDA context could be made"),
    }
    // CUDA memory into the CPU backend: GStreamer downloads it when the element maps it.
    let (r, d) = (
        Path::new(&clips).join("ref_360p.mp4"),
        Path::new(&clips).join("dist_360p.mp4"),
    );
    let gpu = run(&format!(
        "{} {} {ELEMENT}",
        decode(&r, "", "reference"),
        decode(&d, "", "distorted")
    ));
    let cpu = run(&format!(
        "{} {} {ELEMENT_CPU}",
        decode(&r, "", "reference"),
        decode(&d, "", "distorted")
    ));
    rows.push((
        "nvh264dec 360p: backend=cuda (1st) vs backend=cpu (2nd)".into(),
        gpu,
        cpu,
    ));
    // (b) cudaupload on the reference pad only, against both pads in system memory.
    let pairs = [
        (160, 90, "420p8", 48, "i420"),
        (576, 324, "420p10", 3, "i420-10le"),
    ];
    for (w, h, tag, n, format) in pairs {
        let r = Path::new(&refs).join(format!("src01_ref_{w}x{h}_{tag}_{n}f.yuv"));
        let d = Path::new(&refs).join(format!("src01_dis_{w}x{h}_{tag}_{n}f.yuv"));
        let sys = run(&format!(
            "{} {} {ELEMENT}",
            raw(&r, w, h, format, false, "reference"),
            raw(&d, w, h, format, false, "distorted")
        ));
        let mixed = run(&format!(
            "{} {} {ELEMENT}",
            raw(&r, w, h, format, true, "reference"),
            raw(&d, w, h, format, false, "distorted")
        ));
        rows.push((
            format!("cudaupload ref + system dis, {w}x{h} {tag}"),
            sys,
            mixed,
        ));
    }
    println!("fps: steady state (first to last frame message), whole run (start-up included) in brackets");
    println!("| case | frames | 1st run fps (system memory) | 2nd run fps (CUDA input) | paths of the 1st run (ref / dis) | paths of the 2nd run | pooled VMAF | bit-identical |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (name, sys, cuda) in &rows {
        for (which, r) in [("system", sys), ("cuda", cuda)] {
            if let Some(e) = &r.error {
                println!("{name} ({which} run) failed: {e}");
                ok = false;
            }
        }
        let same = identical(sys, cuda);
        ok &= same;
        let vmaf = cuda
            .summary
            .as_ref()
            .and_then(|s| s.get("vmaf"))
            .map(|p| format!("{:.6}", p.mean))
            .unwrap_or_else(|| "-".into());
        println!(
            "| {name} | {} | {:.1} ({:.1}) | {:.1} ({:.1}) | {} | {} | {vmaf} | {} |",
            cuda.frames.len(),
            sys.steady_fps(),
            sys.fps(),
            cuda.steady_fps(),
            cuda.fps(),
            sys.paths(),
            cuda.paths(),
            if same { "yes" } else { "NO" }
        );
    }
    // Let the last pipeline's buffers go before the process exits.
    std::thread::sleep(Duration::from_millis(10));
    std::process::exit(i32::from(!ok));
}
