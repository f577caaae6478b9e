//! Element throughput fed from system memory: two `appsrc` push pre-decoded frames (real
//! content: Netflix's src01 576x324 pair, scaled up for 1080p and 2160p) into `vmafcompare`,
//! as fast as it takes them; prints frames per second for `backend=cuda` and `backend=cpu`.
//!
//! `cargo run --release --example gpu_bench -- [--backends cuda,cpu] [--data DIR]`

use std::time::Instant;

use clap::Parser;
use gst::prelude::*;

#[path = "bench_data/mod.rs"]
mod bench_data;

#[derive(Parser)]
#[command(about = "Prints vmafcompare's fps table per backend, size and bit depth")]
struct Args {
    /// Backends to measure, comma-separated.
    #[arg(long, default_value = "cuda,cpu")]
    backends: String,
    /// Reference data folder (../shared/vmaf-reference).
    #[arg(long, env = "VMAF_REFERENCE_DIR", default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vmaf-reference"))]
    data: std::path::PathBuf,
    /// Seconds to spend per configuration (at least a few frames are always scored).
    #[arg(long, default_value_t = 4.0)]
    seconds: f64,
}

/// A full 4:2:0 frame (neutral chroma) as a GStreamer buffer.
fn frame_buffer(luma: &[u16], w: usize, h: usize, bpc: u32) -> gst::Buffer {
    let chroma = 2 * w.div_ceil(2) * h.div_ceil(2);
    let mid = 1u16 << (bpc - 1);
    let mut bytes = Vec::with_capacity((w * h + chroma) * 2);
    for &v in luma.iter().chain(std::iter::repeat_n(&mid, chroma)) {
        if bpc > 8 {
            bytes.extend_from_slice(&v.to_le_bytes());
        } else {
            bytes.push(v as u8);
        }
    }
    gst::Buffer::from_mut_slice(bytes)
}

/// Scores `n` frame pairs; returns (frames scored, fps) or the error text.
fn measure(
    backend: &str,
    refs: &[gst::Buffer],
    diss: &[gst::Buffer],
    w: usize,
    h: usize,
    bpc: u32,
    n: usize,
) -> Result<(u64, f64), String> {
    let format = if bpc > 8 { "I420_10LE" } else { "I420" };
    let caps = format!("video/x-raw,format={format},width={w},height={h},framerate=30/1");
    let desc = format!(
        "appsrc name=r format=time caps=\"{caps}\" ! cmp.reference \
         appsrc name=d format=time caps=\"{caps}\" ! cmp.distorted \
         vmafcompare name=cmp backend={backend} frame-message=false ! fakesink sync=false"
    );
    let pipeline = gst::parse::launch(&desc)
        .map_err(|e| e.to_string())?
        .downcast::<gst::Pipeline>()
        .map_err(|_| "not a pipeline")?;
    let src = |name: &str| -> Result<gst_app::AppSrc, String> {
        pipeline
            .by_name(name)
            .and_then(|e| e.downcast::<gst_app::AppSrc>().ok())
            .ok_or_else(|| format!("no appsrc {name}"))
    };
    let (rsrc, dsrc) = (src("r")?, src("d")?);
    for s in [&rsrc, &dsrc] {
        s.set_max_bytes(0);
        s.set_property("block", true);
        s.set_property("max-buffers", 8u64);
    }
    pipeline
        .set_state(gst::State::Playing)
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let feed = |appsrc: gst_app::AppSrc, frames: Vec<gst::Buffer>| {
        std::thread::spawn(move || {
            for i in 0..n {
                let mut b = frames[i % frames.len()].copy();
                if let Some(b) = b.get_mut() {
                    b.set_pts(gst::ClockTime::from_nseconds(i as u64 * 33_333_333));
                    b.set_duration(gst::ClockTime::from_nseconds(33_333_333));
                }
                if appsrc.push_buffer(b).is_err() {
                    break;
                }
            }
            let _ = appsrc.end_of_stream();
        })
    };
    let t1 = feed(rsrc, refs.to_vec());
    let t2 = feed(dsrc, diss.to_vec());
    let bus = pipeline.bus().ok_or("no bus")?;
    let mut frames = 0;
    let mut err = None;
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(600)) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                err = Some(e.error().to_string());
                break;
            }
            gst::MessageView::Element(e) => {
                if let Some(s) = e.structure().filter(|s| s.name() == "vmafcompare-summary") {
                    frames = s.get::<u64>("frames").unwrap_or(0);
                }
            }
            _ => {}
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let _ = pipeline.set_state(gst::State::Null);
    let _ = t1.join();
    let _ = t2.join();
    match err {
        Some(e) => Err(e),
        None => Ok((frames, frames as f64 / secs)),
    }
}

fn main() {
    let args = Args::parse();
    let init = gst::init()
        .map_err(|e| e.to_string())
        .and_then(|_| gstvmafcompare::plugin_register_static().map_err(|e| e.to_string()));
    if let Err(e) = init {
        eprintln!("cannot initialise GStreamer: {e}");
        std::process::exit(1);
    }
    let mut rows = Vec::new();
    for (w, h) in [(576usize, 324usize), (1920, 1080), (3840, 2160)] {
        for bpc in [8u32, 10] {
            let (r, d) = bench_data::pair_planes(&args.data, w, h, bpc);
            let rb: Vec<_> = r.iter().map(|p| frame_buffer(p, w, h, bpc)).collect();
            let db: Vec<_> = d.iter().map(|p| frame_buffer(p, w, h, bpc)).collect();
            for backend in args.backends.split(',') {
                // A short run sizes the real one to about `seconds`.
                let probe = measure(backend, &rb, &db, w, h, bpc, 6);
                let row = probe.and_then(|(_, fps)| {
                    let n = ((fps * args.seconds) as usize).clamp(6, 20_000);
                    measure(backend, &rb, &db, w, h, bpc, n)
                });
                rows.push((w, h, bpc, backend.to_owned(), row));
            }
        }
    }
    println!("| size | bits | backend | frames | fps |");
    println!("| --- | --- | --- | --- | --- |");
    let mut failed = false;
    for (w, h, bpc, backend, row) in rows {
        match row {
            Ok((n, fps)) => println!("| {w}x{h} | {bpc} | {backend} | {n} | {fps:.1} |"),
            Err(e) => {
                failed = true;
                println!("| {w}x{h} | {bpc} | {backend} | - | error: {e} |");
            }
        }
    }
    std::process::exit(i32::from(failed));
}
