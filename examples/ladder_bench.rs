//! The ladder benchmark (issue 30): one reference against several renditions, scored by one
//! `vmafcompare` in ladder mode (`distorted`, `distorted_1`, ...) beside the same ladder
//! scored by one element per rendition behind a `tee` of the reference, in one process, on
//! the same frames, one after the other. Prints one markdown table: per input memory and
//! model, the reference frames per second of each way (whole run: PLAYING to EOS), the ratio,
//! and whether every rendition's pooled scores are identical both ways, and each way's busiest
//! thread (its CPU time over the run's wall time: 100% is a thread that never waited, e.g. a
//! ladder element's one streaming thread saturated) beside the process's CPU in cores.
//!
//! `cargo run --release --example ladder_bench -- [--backend cuda] [--memory system,cuda]
//! [--models vmaf_v0.6.1,vmaf_v1.0.16_3d0h] [--frames 600] [--threads 0]
//! [--reference 1920x1080] [--renditions 1920x1080,1280x720,960x540,768x432,640x360]`
//! (`scripts/gpu-host.sh` runs it with `CHECKS=ladder`).
//!
//! Content: Netflix's src01 576x324 pair (three frames, `../shared/vmaf-reference`), scaled
//! bilinearly to the reference's and each rendition's size, 8-bit I420, pre-built as
//! `gst::Buffer`s (CUDA memory: uploaded once by `cudaupload` in the element's context before
//! timing) and pushed again and again (shallow copies with fresh timestamps) by one thread per
//! `appsrc`. Nothing is decoded while timing.

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use cudarc::driver::CudaContext;
use gst::prelude::*;
use gstvmafcompare::cuda::gst_cuda;
use gstvmafcompare::vmafcompare::{SummaryMessage, SUMMARY_MESSAGE_NAME};

#[path = "bench_data/mod.rs"]
mod bench_data;

type BoxError = Box<dyn Error + Send + Sync>;

/// Frame duration of the pushed streams (30 fps timestamps; nothing syncs to them).
const FRAME_NS: u64 = 33_333_333;

#[derive(Parser)]
#[command(
    about = "Prints the speed of a ladder in one vmafcompare against one element per rendition"
)]
struct Args {
    /// `backend` of the elements.
    #[arg(long, default_value = "cuda")]
    backend: String,
    /// Input memory: `system`, `cuda` (comma-separated).
    #[arg(long, default_value = "system,cuda")]
    memory: String,
    /// Models (comma-separated), one table row each per memory.
    #[arg(long, default_value = "vmaf_v0.6.1,vmaf_v1.0.16_3d0h")]
    models: String,
    /// Reference frames pushed per run.
    #[arg(long, default_value_t = 600)]
    frames: u64,
    /// `threads` of each element (CPU backend; 0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: u32,
    /// Reference size.
    #[arg(long, default_value = "1920x1080")]
    reference: String,
    /// Rendition sizes (comma-separated).
    #[arg(long, default_value = "1920x1080,1280x720,960x540,768x432,640x360")]
    renditions: String,
    /// Which ways to run (comma-separated: `ladder`, `separate`); one alone leaves the other's
    /// cells empty and the scores unchecked (for a profiler).
    #[arg(long, default_value = "ladder,separate")]
    ways: String,
    /// Folder of Netflix's src01 files.
    #[arg(long)]
    data: Option<PathBuf>,
}

fn size(s: &str) -> Result<(usize, usize), BoxError> {
    let (w, h) = s
        .split_once('x')
        .ok_or_else(|| format!("size {s}: not WxH"))?;
    Ok((w.trim().parse()?, h.trim().parse()?))
}

/// An I420 frame of `luma` (chroma: the luma decimated by two).
fn frame_buffer(luma: &[u16], w: usize, h: usize) -> gst::Buffer {
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let decimated: Vec<u8> = (0..ch)
        .flat_map(|y| (0..cw).map(move |x| (x, y)))
        .map(|(x, y)| luma.get(2 * y * w + 2 * x).copied().unwrap_or(0) as u8)
        .collect();
    let mut bytes: Vec<u8> = luma.iter().map(|&v| v as u8).collect();
    bytes.extend_from_slice(&decimated);
    bytes.extend_from_slice(&decimated);
    gst::Buffer::from_mut_slice(bytes)
}

fn caps((w, h): (usize, usize), cuda: bool) -> gst::Caps {
    let mut c = gst_video::VideoCapsBuilder::new()
        .format(gst_video::VideoFormat::I420)
        .width(w as i32)
        .height(h as i32)
        .framerate(gst::Fraction::new(30, 1))
        .build();
    if cuda {
        c.make_mut()
            .set_features_simple(Some(gst::CapsFeatures::new([
                gst_cuda::CAPS_FEATURE_CUDA_MEMORY,
            ])));
    }
    c
}

/// One stream's frames and caps.
struct Stream {
    buffers: Vec<gst::Buffer>,
    caps: gst::Caps,
}

/// Uploads `host` to CUDA memory of `ctx` (`appsrc ! cudaupload ! appsink` with the shared
/// context), keeping the pipeline alive in `keep`.
fn upload(
    host: &Stream,
    context: &gst::Context,
    keep: &mut Vec<gst::Pipeline>,
) -> Result<Stream, BoxError> {
    let pipeline = gst::parse::launch(
        "appsrc name=src format=time ! cudaupload ! video/x-raw(memory:CUDAMemory) ! \
         appsink name=sink sync=false",
    )?
    .downcast::<gst::Pipeline>()
    .map_err(|_| "not a pipeline")?;
    keep.push(pipeline.clone());
    pipeline.set_context(context);
    let src = pipeline
        .by_name("src")
        .and_then(|e| e.downcast::<gst_app::AppSrc>().ok())
        .ok_or("no appsrc")?;
    let sink = pipeline
        .by_name("sink")
        .and_then(|e| e.downcast::<gst_app::AppSink>().ok())
        .ok_or("no appsink")?;
    src.set_caps(Some(&host.caps));
    pipeline.set_state(gst::State::Playing)?;
    for (i, b) in host.buffers.iter().enumerate() {
        let mut b = b.copy();
        b.make_mut()
            .set_pts(gst::ClockTime::from_nseconds(i as u64 * FRAME_NS));
        src.push_buffer(b)?;
    }
    let _ = src.end_of_stream();
    let mut buffers = Vec::new();
    while buffers.len() < host.buffers.len() {
        let s = sink
            .try_pull_sample(gst::ClockTime::from_seconds(30))
            .ok_or("cudaupload: no sample")?;
        buffers.push(s.buffer_owned().ok_or("no buffer")?);
    }
    let caps = caps_of(&host.caps, true);
    Ok(Stream { buffers, caps })
}

fn caps_of(c: &gst::Caps, cuda: bool) -> gst::Caps {
    let s = c.structure(0).expect("caps structure");
    let w = s.get::<i32>("width").unwrap_or(0) as usize;
    let h = s.get::<i32>("height").unwrap_or(0) as usize;
    caps((w, h), cuda)
}

fn appsrc(caps: &gst::Caps) -> gst_app::AppSrc {
    gst_app::AppSrc::builder()
        .caps(caps)
        .format(gst::Format::Time)
        .block(true)
        .max_buffers(4)
        .max_bytes(0)
        .build()
}

/// CPU seconds (user + system) each thread of this process has used so far, by thread id,
/// with the thread's name, from `/proc/self/task/*/stat` (fields 14 and 15, in clock ticks).
/// Empty where `/proc` cannot be read.
fn thread_cpu() -> std::collections::HashMap<u32, (String, f64)> {
    // SAFETY: sysconf only reads a configuration value.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut out = std::collections::HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "tid (name) state ...": the name may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_owned();
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // After the name: [0] state (field 3), so utime (14) is [11] and stime (15) [12].
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        out.insert(tid, (name, (ticks(11) + ticks(12)) / tick));
    }
    out
}

/// The thread that used the most CPU between two [`thread_cpu`] snapshots, over `wall`
/// seconds: "name NN%" (100% = one core all the time), with the process's total in cores.
fn busiest(
    before: &std::collections::HashMap<u32, (String, f64)>,
    after: &std::collections::HashMap<u32, (String, f64)>,
    wall: f64,
) -> String {
    let used = after
        .iter()
        .map(|(tid, (name, cpu))| (name, cpu - before.get(tid).map(|(_, c)| *c).unwrap_or(0.0)));
    let total: f64 = used.clone().map(|(_, c)| c).sum();
    match used.max_by(|a, b| a.1.total_cmp(&b.1)) {
        Some((name, c)) if wall > 0.0 => format!(
            "{name} {:.0}% (all {:.1} cores)",
            100.0 * c / wall,
            total / wall
        ),
        _ => "n/a".to_owned(),
    }
}

/// What one run gave.
struct Outcome {
    fps: f64,
    /// The busiest thread's share of the run ([`busiest`]).
    busiest: String,
    /// Pooled VMAF mean per rendition, in rendition order.
    pooled: Vec<Vec<(String, f64)>>,
}

/// One run: the reference and the renditions pushed `frames` times, through one ladder
/// element (`ladder`) or one element per rendition behind a tee.
fn run(
    args: &Args,
    model: &str,
    streams: &[Stream],
    ladder: bool,
    context: Option<&gst::Context>,
) -> Result<Outcome, BoxError> {
    let pipeline = gst::Pipeline::new();
    if let Some(c) = context {
        pipeline.set_context(c);
    }
    let n = streams.len() - 1;
    let srcs: Vec<gst_app::AppSrc> = streams.iter().map(|s| appsrc(&s.caps)).collect();
    for s in &srcs {
        pipeline.add(s)?;
    }
    let make = |name: &str| -> Result<gst::Element, BoxError> {
        let e = gst::ElementFactory::make("vmafcompare")
            .name(name)
            .property_from_str("backend", &args.backend)
            .property("model", model)
            .property("threads", args.threads)
            .property("frame-message", false)
            .build()?;
        Ok(e)
    };
    let sink = |p: &gst::Pipeline, from: &gst::Element| -> Result<(), BoxError> {
        // No preroll wait: a sink that prerolled would stop its element while the tee still
        // has to fill the elements whose first output needs several frames in flight (a
        // CPU pool of N threads holds N + 1), and the pipeline would never reach PLAYING.
        let s = gst::ElementFactory::make("fakesink")
            .property("sync", false)
            .property("async", false)
            .build()?;
        p.add(&s)?;
        from.link(&s)?;
        Ok(())
    };
    if ladder {
        let cmp = make("cmp")?;
        pipeline.add(&cmp)?;
        srcs[0]
            .static_pad("src")
            .unwrap()
            .link(&cmp.static_pad("reference").unwrap())?;
        srcs[1]
            .static_pad("src")
            .unwrap()
            .link(&cmp.static_pad("distorted").unwrap())?;
        for (k, s) in srcs.iter().enumerate().skip(2) {
            let pad = cmp
                .request_pad_simple(&format!("distorted_{}", k - 1))
                .ok_or("no request pad")?;
            s.static_pad("src").unwrap().link(&pad)?;
        }
        sink(&pipeline, &cmp)?;
    } else {
        let tee = gst::ElementFactory::make("tee").build()?;
        pipeline.add(&tee)?;
        srcs[0].link(&tee)?;
        for k in 0..n {
            let q = gst::ElementFactory::make("queue")
                .property("max-size-buffers", 8u32)
                .build()?;
            let cmp = make(&format!("cmp{k}"))?;
            pipeline.add_many([&q, &cmp])?;
            tee.link(&q)?;
            q.static_pad("src")
                .unwrap()
                .link(&cmp.static_pad("reference").unwrap())?;
            srcs[k + 1]
                .static_pad("src")
                .unwrap()
                .link(&cmp.static_pad("distorted").unwrap())?;
            sink(&pipeline, &cmp)?;
        }
    }
    let bus = pipeline.bus().ok_or("no bus")?;
    let cpu_before = thread_cpu();
    pipeline.set_state(gst::State::Playing)?;
    let start = Instant::now();
    let frames = args.frames;
    let feeders: Vec<_> = srcs
        .iter()
        .zip(streams)
        .map(|(src, s)| {
            let src = src.clone();
            let buffers = s.buffers.clone();
            std::thread::spawn(move || {
                for i in 0..frames {
                    let mut b = buffers[(i as usize) % buffers.len()].copy();
                    {
                        let b = b.make_mut();
                        b.set_pts(gst::ClockTime::from_nseconds(i * FRAME_NS));
                        b.set_duration(gst::ClockTime::from_nseconds(FRAME_NS));
                    }
                    if src.push_buffer(b).is_err() {
                        break;
                    }
                }
                let _ = src.end_of_stream();
            })
        })
        .collect();
    let mut pooled: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    let result = loop {
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_seconds(600)) else {
            break Err::<f64, BoxError>("no end of stream within 600 s".into());
        };
        match msg.view() {
            gst::MessageView::Eos(_) => break Ok(start.elapsed().as_secs_f64()),
            gst::MessageView::Error(e) => {
                break Err(format!("{} ({:?})", e.error(), e.debug()).into())
            }
            gst::MessageView::Element(e) => {
                if let Some(s) = e.structure().filter(|s| s.name() == SUMMARY_MESSAGE_NAME) {
                    let summary = SummaryMessage::try_from(s)?;
                    let who = summary.pad.clone().unwrap_or_else(|| {
                        msg.src().map(|o| o.name().to_string()).unwrap_or_default()
                    });
                    let values = summary
                        .metrics
                        .iter()
                        .map(|(n, p)| (n.clone(), p.mean))
                        .collect();
                    pooled.push((who, values));
                }
            }
            _ => {}
        }
    };
    // Before NULL: the element's threads end there.
    let cpu_after = thread_cpu();
    let _ = pipeline.set_state(gst::State::Null);
    for f in feeders {
        let _ = f.join();
    }
    let wall = result?;
    let fps = frames as f64 / wall;
    let busiest = busiest(&cpu_before, &cpu_after, wall);
    // Rendition order: ladder pads `distorted`, `distorted_1`, ...; separate `cmp0`, `cmp1`...
    let key = |name: &str| -> usize {
        if name == "distorted" {
            0
        } else if let Some(k) = name.strip_prefix("distorted_") {
            k.parse().unwrap_or(99)
        } else {
            name.trim_start_matches("cmp").parse().unwrap_or(99)
        }
    };
    pooled.sort_by_key(|(n, _)| key(n));
    Ok(Outcome {
        fps,
        busiest,
        pooled: pooled.into_iter().map(|(_, v)| v).collect(),
    })
}

fn main() {
    match bench() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("ladder_bench: {e}");
            std::process::exit(1);
        }
    }
}

fn bench() -> Result<bool, BoxError> {
    let args = Args::parse();
    gst::init()?;
    gstvmafcompare::plugin_register_static()?;
    let data = args.data.clone().unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/vmaf-reference")
    });
    let reference = size(&args.reference)?;
    let renditions: Vec<(usize, usize)> = args
        .renditions
        .split(',')
        .map(size)
        .collect::<Result<_, _>>()?;
    // Reference frames at the reference size, each rendition's at its own.
    let (r, _) = bench_data::try_pair_planes(&data, reference.0, reference.1, 8)?;
    let mut host = vec![Stream {
        buffers: r
            .iter()
            .map(|p| frame_buffer(p, reference.0, reference.1))
            .collect(),
        caps: caps(reference, false),
    }];
    for &(w, h) in &renditions {
        let (_, d) = bench_data::try_pair_planes(&data, w, h, 8)?;
        host.push(Stream {
            buffers: d.iter().map(|p| frame_buffer(p, w, h)).collect(),
            caps: caps((w, h), false),
        });
    }
    let mut keep = Vec::new();
    let mut ok = true;
    let sizes: Vec<String> = renditions.iter().map(|(w, h)| format!("{w}x{h}")).collect();
    println!(
        "\nLadder: {}x{} reference, {} renditions ({}), 8-bit I420, {} frames, backend={} threads={}\n",
        reference.0,
        reference.1,
        renditions.len(),
        sizes.join(", "),
        args.frames,
        args.backend,
        args.threads
    );
    println!("| memory | model | ladder ref fps | separate ref fps | ladder / separate | pairs/s (ladder) | scores | busiest thread: ladder | separate |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for memory in args.memory.split(',').map(str::trim) {
        let (streams, context, _ctx) = if memory == "cuda" {
            if !unsafe { cudarc::driver::sys::is_culib_present() } {
                println!("| cuda | - | n/a (no GPU) | | | | |");
                continue;
            }
            let ctx = CudaContext::new(0)?;
            let lib = gst_cuda::library().ok_or("libgstcuda-1.0 not loaded")?;
            if !lib.load_driver() {
                return Err("gst_cuda_load_library failed".into());
            }
            let wrapped = lib
                .wrap_context(ctx.cu_ctx() as usize, ctx.cu_device(), ctx.clone())
                .ok_or("gst_cuda_context_new_wrapped failed")?;
            let context = lib.new_context(&wrapped).ok_or("no GstContext")?;
            let streams = host
                .iter()
                .map(|s| upload(s, &context, &mut keep))
                .collect::<Result<Vec<_>, _>>()?;
            (streams, Some(context), Some((ctx, wrapped)))
        } else {
            let streams = host
                .iter()
                .map(|s| Stream {
                    buffers: s.buffers.clone(),
                    caps: s.caps.clone(),
                })
                .collect();
            (streams, None, None)
        };
        for model in args.models.split(',').map(str::trim) {
            let way = |w: &str| args.ways.split(',').any(|x| x.trim() == w);
            if !(way("ladder") && way("separate")) {
                let (name, ladder) = if way("ladder") {
                    ("ladder", true)
                } else {
                    ("separate", false)
                };
                let o = run(&args, model, &streams, ladder, context.as_ref())?;
                println!(
                    "| {memory} | {model} | {name} only: {:.1} | | | | | {} | |",
                    o.fps, o.busiest
                );
                continue;
            }
            let ladder = run(&args, model, &streams, true, context.as_ref());
            let separate = run(&args, model, &streams, false, context.as_ref());
            match (ladder, separate) {
                (Ok(l), Ok(s)) => {
                    let same = l.pooled == s.pooled && l.pooled.len() == renditions.len();
                    ok &= same;
                    println!(
                        "| {memory} | {model} | {:.1} | {:.1} | {:.2}x | {:.0} | {} | {} | {} |",
                        l.fps,
                        s.fps,
                        l.fps / s.fps,
                        l.fps * renditions.len() as f64,
                        if same { "identical" } else { "DIFFER" },
                        l.busiest,
                        s.busiest
                    );
                }
                (l, s) => {
                    ok = false;
                    let e = |r: Result<Outcome, BoxError>| match r {
                        Ok(o) => format!("{:.1}", o.fps),
                        Err(e) => format!("error: {e}"),
                    };
                    println!("| {memory} | {model} | {} | {} | | | | | |", e(l), e(s));
                }
            }
        }
        drop(streams);
    }
    for p in keep {
        let _ = p.set_state(gst::State::Null);
    }
    let _ = Duration::ZERO;
    Ok(ok)
}
