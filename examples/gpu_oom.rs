//! Out of GPU memory for real (issue 5, item 3): a hog takes almost all free device memory
//! (`cuMemAlloc` until less than `--leave-mib` is free), then `vmafcompare` starts on
//! Netflix's 576x324 reference pair:
//! - `backend=cuda` must post an error saying "out of GPU memory" (never abort);
//! - `backend=auto` must finish on the CPU with exactly the CPU backend's scores;
//! - once the hog has freed its memory, `backend=cuda` must succeed with those scores.
//!
//! The hog is this process (`--hog self`) or a second process (`--hog child`, the case that
//! aborts libvmaf, Netflix/vmaf #1420). Prints one table row per hog and exits 1 on a
//! failed expectation.
//!
//! `cargo run --release --example gpu_oom -- --hog self --hog child`

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};

use clap::Parser;
use cudarc::driver::result;
use gst::prelude::*;
use gstvmafcompare::cuda::GpuDevice;
use gstvmafcompare::vmafcompare::{FrameMessage, FRAME_MESSAGE_NAME};

#[derive(Parser)]
#[command(about = "vmafcompare when another user holds almost all GPU memory")]
struct Args {
    /// Who holds the memory: `self` (this process) or `child` (another process). Repeatable.
    #[arg(long, default_values_t = ["self".to_owned(), "child".to_owned()])]
    hog: Vec<String>,
    /// Device memory (MiB) the hog leaves free.
    #[arg(long, default_value_t = 4)]
    leave_mib: usize,
    /// Internal: be the hog process (allocate, print the free MiB, wait for stdin to close).
    #[arg(long, hide = true)]
    be_hog: bool,
    /// Reference data folder (../shared/vmaf-reference).
    #[arg(long, env = "VMAF_REFERENCE_DIR", default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vmaf-reference"))]
    data: std::path::PathBuf,
}

/// Device memory taken with plain `cuMemAlloc`, freed on drop.
struct Hog {
    dev: GpuDevice,
    ptrs: Vec<u64>,
}

impl Hog {
    /// Allocates until less than `leave` bytes are free; returns the hog and the free bytes.
    fn take(leave: usize) -> Result<(Self, usize), String> {
        let dev = GpuDevice::open(0).map_err(|e| e.to_string())?;
        dev.context()
            .bind_to_thread()
            .map_err(|e| format!("cuCtxSetCurrent: {e:?}"))?;
        let mut hog = Hog {
            dev,
            ptrs: Vec::new(),
        };
        let free = |h: &Hog| h.dev.mem_get_info().map(|(f, _)| f).unwrap_or(0);
        let mut chunk = 1usize << 30;
        while chunk >= 1 << 20 {
            if free(&hog) < leave {
                break;
            }
            // SAFETY: a plain allocation, freed in Drop with the context bound.
            match unsafe { result::malloc_sync(chunk) } {
                Ok(p) => hog.ptrs.push(p),
                Err(_) => chunk /= 2,
            }
        }
        let f = free(&hog);
        Ok((hog, f))
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.dev.context().bind_to_thread();
        for p in self.ptrs.drain(..) {
            // SAFETY: allocated by malloc_sync in this context, freed once.
            let _ = unsafe { result::free_sync(p) };
        }
    }
}

/// Per-frame scores (bit patterns), errors and warnings of one run.
struct Run {
    scores: Vec<Vec<u64>>,
    errors: Vec<String>,
    warnings: Vec<String>,
    backend: String,
}

fn score(args: &Args, backend: &str) -> Result<Run, String> {
    let f = |kind: &str| {
        args.data
            .join(format!("src01_{kind}_576x324_420p8_3f.yuv"))
            .display()
            .to_string()
    };
    let desc = format!(
        "filesrc location=\"{}\" ! rawvideoparse width=576 height=324 format=i420 framerate=25/1 ! cmp.reference \
         filesrc location=\"{}\" ! rawvideoparse width=576 height=324 format=i420 framerate=25/1 ! cmp.distorted \
         vmafcompare name=cmp backend={backend} ! fakesink",
        f("ref"),
        f("dis")
    );
    let pipeline = gst::parse::launch(&desc).map_err(|e| e.to_string())?;
    let mut run = Run {
        scores: Vec::new(),
        errors: Vec::new(),
        warnings: Vec::new(),
        backend: String::new(),
    };
    // A refused state change leaves its reason as an error message on the bus.
    let started = pipeline.set_state(gst::State::Playing).is_ok();
    let bus = pipeline.bus().ok_or("no bus")?;
    while let Some(m) = bus.timed_pop(gst::ClockTime::from_seconds(60)) {
        match m.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                run.errors.push(e.error().to_string());
                break;
            }
            gst::MessageView::Warning(w) => run.warnings.push(w.error().to_string()),
            gst::MessageView::Element(e) => {
                if let Some(s) = e.structure() {
                    if s.name() == FRAME_MESSAGE_NAME {
                        if let Ok(f) = FrameMessage::try_from(s) {
                            run.scores
                                .push(f.metrics.iter().map(|(_, v)| v.to_bits()).collect());
                        }
                    } else if let Ok(b) = s.get::<String>("backend") {
                        run.backend = b;
                    }
                }
            }
            _ => {}
        }
    }
    let _ = pipeline.set_state(gst::State::Null);
    if !started && run.errors.is_empty() {
        run.errors.push("the pipeline refused to start".to_owned());
    }
    Ok(run)
}

fn main() {
    let args = Args::parse();
    if args.be_hog {
        // Child: hold the memory until the parent closes stdin.
        match Hog::take(args.leave_mib << 20) {
            Ok((_hog, free)) => {
                println!("{}", free >> 20);
                let _ = std::io::stdout().flush();
                let mut line = String::new();
                let _ = std::io::stdin().lock().read_line(&mut line);
            }
            Err(e) => println!("error {e}"),
        }
        return;
    }
    std::process::exit(match run(&args) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("gpu_oom: {e}");
            1
        }
    });
}

fn run(args: &Args) -> Result<bool, String> {
    gst::init().map_err(|e| e.to_string())?;
    gstvmafcompare::plugin_register_static().map_err(|e| e.to_string())?;
    let cpu = score(args, "cpu")?;
    if !cpu.errors.is_empty() || cpu.scores.is_empty() {
        return Err(format!("backend=cpu failed: {:?}", cpu.errors));
    }
    println!(
        "| hog | free while hogged (MiB) | backend=cuda | backend=auto | after the hog freed: backend=cuda | verdict |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut all_ok = true;
    for who in &args.hog {
        let (hog_self, mut child, free_mib) = match who.as_str() {
            "self" => {
                let (h, f) = Hog::take(args.leave_mib << 20)?;
                (Some(h), None, f >> 20)
            }
            "child" => {
                let exe = std::env::current_exe().map_err(|e| e.to_string())?;
                let mut c = Command::new(exe)
                    .args(["--be-hog", "--leave-mib", &args.leave_mib.to_string()])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .map_err(|e| e.to_string())?;
                let mut line = String::new();
                if let Some(out) = c.stdout.as_mut() {
                    let _ = std::io::BufReader::new(out).read_line(&mut line);
                }
                let f = line.trim().parse::<usize>().map_err(|_| {
                    let _ = c.kill();
                    format!("hog process: {line:?}")
                })?;
                (None, Some(c), f)
            }
            other => return Err(format!("--hog {other}: use self or child")),
        };
        let cuda = score(args, "cuda")?;
        let auto = score(args, "auto")?;
        drop(hog_self);
        if let Some(c) = child.as_mut() {
            drop(c.stdin.take());
            let _ = c.wait();
        }
        let again = score(args, "cuda")?;
        let cuda_ok = cuda
            .errors
            .first()
            .is_some_and(|e| e.to_lowercase().contains("out of gpu memory"));
        let auto_ok = auto.errors.is_empty() && auto.scores == cpu.scores && auto.backend == "cpu";
        let again_ok =
            again.errors.is_empty() && again.scores == cpu.scores && again.backend == "cuda";
        let ok = cuda_ok && auto_ok && again_ok;
        all_ok &= ok;
        println!(
            "| {who} | {free_mib} | {} | {} | {} | {} |",
            cuda.errors.first().map_or("no error", String::as_str),
            if auto_ok {
                format!(
                    "CPU, {} frames, scores equal backend=cpu; warning: {}",
                    auto.scores.len(),
                    auto.warnings.first().map_or("none", String::as_str)
                )
            } else {
                format!("WRONG: {:?} {:?}", auto.errors, auto.backend)
            },
            if again_ok {
                format!("ok, {} frames, scores equal", again.scores.len())
            } else {
                format!("FAILED: {:?}", again.errors)
            },
            if ok { "ok" } else { "FAILED" }
        );
    }
    Ok(all_ok)
}
