//! The project's benchmark (issue 6): one command that prints, per size (576x324, 1920x1080,
//! 3840x2160) and bit depth (I420, I420_10LE), the element's speed, device memory and latency,
//! then the 10-bit / 8-bit cost and the aggregate speed of several elements in one process.
//!
//! `cargo run --release --example vmaf_bench -- [--backends cuda,cpu] [--seconds 3]`
//! (`scripts/gpu-host.sh` runs it with `CHECKS=bench` or `CHECKS=perf`). Without a GPU the
//! `backend=cuda` cells read `n/a (no GPU)` and the CPU cells are still measured.
//!
//! Content: Netflix's src01 576x324 pair (three frames, from `../shared/vmaf-reference`),
//! bilinearly scaled for the larger sizes, pre-built as `gst::Buffer`s before any timing and
//! pushed again and again (shallow copies with fresh timestamps) through two `appsrc`, one per
//! pad, into `vmafcompare ! fakesink sync=false`. Nothing is decoded while timing.
//!
//! What each column measures:
//! - `system fps`: `backend=cuda`, frames in system memory; steady state, i.e. frame messages
//!   counted from the first to the last one posted while input streams (the few messages the
//!   element posts together at end of stream are left out), for about `--seconds`.
//! - `cuda fps`, `cuda input`: the same with the frames in CUDA memory. A pre-roll pipeline
//!   `appsrc ! cudaupload ! appsink`, given a `gst.cuda.context` that wraps the device's
//!   primary context (the one the element computes in), makes them once before timing. The
//!   input path is the summary message's `reference-input` / `distorted-input`: `cuda` is the
//!   in-place path; anything else (`cuda-peer-copy`) means the zero-copy path was not taken.
//! - `device MiB`: `cuMemGetInfo` free memory before the system-memory pipeline goes to
//!   PLAYING minus the least free memory seen while it runs (sampled by the bus loop at least
//!   every 20 ms and at end of stream): the element's modules, planes and scratch. A warm-up
//!   run first takes the driver's one-time per-context allocations out of the figure; the
//!   CUDA context itself (held by this program) is not counted. Other processes on the GPU
//!   disturb it.
//! - `p50 ms`, `p99 ms`, `paced fps`, `lag`: a separate system-memory `backend=cuda` run that
//!   pushes one pair every `1 / paced fps` seconds (`--pace` times the `system fps`, default
//!   half, so no queue builds up) and times, per frame, from just before its reference buffer
//!   is pushed into its `appsrc` to the moment the element posts its `vmafcompare-frame`
//!   message (taken in a synchronous bus handler, on the posting thread). The first 10 frames
//!   and the frames completed at end of stream are left out. `lag` is the median number of
//!   later pairs already pushed when a frame's message is posted: a frame's motion2 needs the
//!   next frame, so every backend lags at least one pair; the CUDA backend collects a frame's
//!   results when a later pair arrives, so at a steady pace its latency is about
//!   `lag / paced fps` plus the work, not the work alone.
//! - `cpu fps`: `backend=cpu` with the element's default `threads=0` (one thread per core),
//!   system memory, steady state, about `--cpu-seconds`.
//! - `scores`: whether every metric of the first frames is bit-identical across the runs of
//!   the row (system, CUDA memory, paced, CPU): `= cpu` when the CPU run is among them.
//! - The cost table: `fps(8-bit) / fps(10-bit)` per size and path (the goal is at most 1.5).
//! - The streams table: 1, 2 and 4 pipelines in this process, each with its own element, run
//!   at once (1920x1080, 8 bits, system memory); aggregate fps is the sum of each pipeline's
//!   steady rate over the time in which all of them were scoring.
//!
//! Renditions (`--renditions 1280x720,960x540`, none by default): after each cell whose size
//! is larger than a rendition, a row `WxH <- RxS` in which the reference pad carries the
//! cell's frames and the distorted pad frames of the rendition's size (the same src01
//! content, scaled from 576x324 to the rendition's size as the cells are to theirs, with caps
//! of that size), so the element scales the distorted stream to the reference's size
//! (`scale-method`, `--scale-method`, default bicubic; on `backend=cuda` on the GPU, from CUDA
//! memory in place) before scoring. Such a row measures `system fps` (median of `--repeat`),
//! `cuda fps` and `cuda input` (both pads pre-uploaded by `cudaupload`, each at its own size),
//! `device MiB` and `cpu fps` as above; no paced latency run (`-`). Every run of the row must
//! report the summary's `distorted-scaling` `METHOD RxS->WxH` (e.g. `bicubic
//! 1280x720->1920x1080`) and `reference-scaling` `none`, else its cell is an error; `scores`
//! compares the row's runs as above, so `= cpu` also says the GPU scaled every sample as the
//! CPU did.
//! - The scaling cost table: per reference size, rendition, depth and path (system memory,
//!   CUDA memory, CPU), the extra time per pair the scaling costs, `(fps(same-size row) /
//!   fps(rendition row) - 1) * 100` %: negative when the rendition pair is faster (e.g. less
//!   to upload). The goal on the GPU is at most 10% at 1080p; GPU cells above it say so.
//!
//! `--profile 1920x1080x8 --frames 20` instead scores 20 pairs of that size with
//! `backend=cuda` and exits, for a profiler (`ncu`) to watch the kernels.
//!
//! Exits 1 when a measurement fails, scores differ, or (with `VMAFCOMPARE_REQUIRE_GPU` set) no
//! GPU is usable.

use std::error::Error;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use cudarc::driver::CudaContext;
use gst::prelude::*;
use gstvmafcompare::cuda::gst_cuda;
use gstvmafcompare::vmafcompare::{
    FrameMessage, SummaryMessage, FRAME_MESSAGE_NAME, SUMMARY_MESSAGE_NAME,
};

#[path = "bench_data/mod.rs"]
mod bench_data;
#[path = "vmaf_bench_ladder/mod.rs"]
mod ladder_bench;

/// Errors of this program: any error type, with a text.
type BoxError = Box<dyn Error + Send + Sync>;

/// Frame messages kept whole (with every metric) per run, for the bit-identity check.
const KEEP: u64 = 24;
/// Messages the element may post together at end of stream (the CUDA backend's frames in
/// flight); left out of the steady-state rates.
const EOS_TAIL: usize = 3;
/// Frames left out at the start of the paced run (backend set-up, first uploads).
const LATENCY_WARMUP: u64 = 10;
/// Frame duration of the pushed streams (30 fps timestamps; nothing syncs to them).
const FRAME_NS: u64 = 33_333_333;
/// Buffers each `appsrc` queues before `push_buffer` blocks.
const QUEUE: u64 = 4;

#[derive(Parser)]
#[command(about = "Prints vmafcompare's speed, memory and latency tables (issue 6)")]
struct Args {
    /// Backends to measure, comma-separated (`cuda`, `cpu`).
    #[arg(long, default_value = "cuda,cpu")]
    backends: String,
    /// Frame sizes, comma-separated `WxH`.
    #[arg(long, default_value = "576x324,1920x1080,3840x2160")]
    sizes: String,
    /// Bit depths, comma-separated (8: I420, 10: I420_10LE).
    #[arg(long, default_value = "8,10")]
    depths: String,
    /// Numbers of concurrent elements for the streams table, comma-separated (empty: none).
    #[arg(long, default_value = "1,2,4")]
    streams: String,
    /// Seconds of steady state per `backend=cuda` throughput run.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// System-memory runs per cell (each a fresh pipeline); the table shows their median fps
    /// and the range. The GPU host is a virtual machine whose host-side copy speed changes from
    /// one pipeline to the next (issue 6, docs/perf/NOTES.md).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    repeat: u32,
    /// Seconds of steady state per `backend=cpu` run.
    #[arg(long, default_value_t = 3.0)]
    cpu_seconds: f64,
    /// Seconds of the paced latency run (at least 100 frames).
    #[arg(long, default_value_t = 2.0)]
    latency_seconds: f64,
    /// Pace of the latency run as a fraction of the measured system-memory fps.
    #[arg(long, default_value_t = 0.5)]
    pace: f64,
    /// Pace of the latency run in frames per second (overrides `--pace`), e.g. 30 or 60 for
    /// the latency of a live stream.
    #[arg(long)]
    pace_fps: Option<f64>,
    /// Reference data folder (../shared/vmaf-reference).
    #[arg(long, env = "VMAF_REFERENCE_DIR", default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vmaf-reference"))]
    data: PathBuf,
    /// Only score `--frames` pairs of this `WxHxBITS` with `backend=cuda` (for a profiler).
    #[arg(long)]
    profile: Option<String>,
    /// Measure the cost of the extra metrics instead (issue 8): `backend=cuda` fps for VMAF
    /// alone, with each of these `features` sets and with all of them, at `--sizes` and
    /// `--depths`, from system memory (median of `--repeat`) and from CUDA memory.
    #[arg(long, num_args = 0..=1, default_missing_value = "psnr;float_ssim;float_ms_ssim;ssimulacra2;psnr,float_ssim,float_ms_ssim,ssimulacra2")]
    extras: Option<String>,
    /// Several GPUs (issue 21) instead: the streams of `--streams` at 1920x1080 8-bit, from
    /// system and from CUDA memory, all on the first device of `--devices`, then spread over
    /// all of them by hand (element `i` on device `i mod len`), then with `device-id=-1` on
    /// every element (each picks; CUDA frames are those of the device it picked, so list every
    /// GPU of the host), and one element on the second device fed CUDA memory of the first
    /// (peer-to-peer copy).
    #[arg(long)]
    multi_gpu: bool,
    /// CUDA devices for `--multi-gpu`, comma-separated.
    #[arg(long, default_value = "0,1", value_delimiter = ',')]
    devices: Vec<usize>,
    /// Pairs scored by `--profile`.
    #[arg(long, default_value_t = 20)]
    frames: u64,
    /// The element's `model` list for every run (e.g. `vmaf_v1.0.16_3d0h` for VMAF v1).
    #[arg(long, default_value = "vmaf_v0.6.1")]
    model: String,
    /// Rendition sizes, comma-separated `WxH` (empty: none): after each cell of a larger
    /// size, a row with distorted frames of this size (scaled by the element to the cell's
    /// size) and the scaling cost table. Main table only (not `--extras`, `--multi-gpu`).
    #[arg(long, default_value = "")]
    renditions: String,
    /// The element's `scale-method` for every run (bicubic, bilinear, lanczos); the rendition
    /// rows check that the summary names it.
    #[arg(long, default_value = "bicubic")]
    scale_method: String,
    /// Measure the CUDA ladder backend instead (issue 30, `examples/vmaf_bench_ladder/`): a
    /// 1920x1080 8-bit reference against five renditions in one ladder backend, against five
    /// pair backends on five threads and one after the other, from CUDA and system memory,
    /// for each model of `--ladder-models`.
    #[arg(long)]
    ladder: bool,
    /// Models of `--ladder`, comma-separated.
    #[arg(
        long,
        default_value = "vmaf_v0.6.1,vmaf_v1.0.16_3d0h",
        value_delimiter = ','
    )]
    ladder_models: Vec<String>,
    /// Reference frames timed per `--ladder` run.
    #[arg(long, default_value_t = 600)]
    ladder_frames: usize,
    /// Which `--ladder` runs to time, comma-separated: `ladder`, `unshared`, `threads`,
    /// `turn` (the table's columns, in that order; the others print `-`).
    #[arg(
        long,
        default_value = "ladder,unshared,threads,turn",
        value_delimiter = ','
    )]
    ladder_runs: Vec<String>,
    /// Input memory of `--ladder`, comma-separated: `cuda`, `system`.
    #[arg(long, default_value = "cuda,system", value_delimiter = ',')]
    ladder_memory: Vec<String>,
    /// Frames each `--ladder` run scores before its timing starts (fewer for a profiler).
    #[arg(long, default_value_t = 30)]
    ladder_warm: usize,
}

/// `--model`, for every pipeline [`run`] builds.
static MODEL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
/// `--scale-method`, for every pipeline [`run`] builds.
static SCALE_METHOD: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// One table cell: a number, or why there is none.
#[derive(Clone, Debug)]
enum Val {
    /// A measured value.
    Num(f64),
    /// Not measured (no GPU, backend not selected, element missing): the reason.
    Na(String),
    /// The measurement failed: the error. The program exits 1.
    Failed(String),
    /// Not measured for this kind of row (the rendition rows' latency): `-`.
    Skip,
}

impl Val {
    /// The cell text, `decimals` digits after the point.
    fn show(&self, decimals: usize) -> String {
        match self {
            Val::Num(v) => format!("{v:.decimals$}"),
            Val::Na(why) => format!("n/a ({why})"),
            Val::Failed(e) => format!("error: {}", cell_text(e)),
            Val::Skip => "-".into(),
        }
    }

    /// The number, if measured.
    fn num(&self) -> Option<f64> {
        match self {
            Val::Num(v) => Some(*v),
            _ => None,
        }
    }

    /// Whether the measurement failed.
    fn failed(&self) -> bool {
        matches!(self, Val::Failed(_))
    }
}

/// `text` fit for a markdown cell: one line, no `|`, at most 160 characters.
fn cell_text(text: &str) -> String {
    let one: String = text
        .chars()
        .map(|c| match c {
            '|' => '/',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect();
    match one.char_indices().nth(160) {
        Some((i, _)) => format!("{}...", &one[..i]),
        None => one,
    }
}

/// A frame size and bit depth.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cell {
    /// Luma width in samples.
    width: usize,
    /// Luma height in rows.
    height: usize,
    /// Bits per sample: 8 or 10.
    bpc: u32,
}

impl Cell {
    /// The GStreamer format of this depth.
    fn format(self) -> gst_video::VideoFormat {
        if self.bpc > 8 {
            gst_video::VideoFormat::I42010le
        } else {
            gst_video::VideoFormat::I420
        }
    }

    /// Caps of these frames in system memory, or in CUDA memory when `cuda`.
    fn caps(self, cuda: bool) -> gst::Caps {
        let b = gst_video::VideoCapsBuilder::new()
            .format(self.format())
            .width(self.width as i32)
            .height(self.height as i32)
            .framerate(gst::Fraction::new(30, 1));
        if cuda {
            b.features([gst_cuda::CAPS_FEATURE_CUDA_MEMORY]).build()
        } else {
            b.build()
        }
    }

    /// `576x324 8-bit`, for progress lines.
    fn label(self) -> String {
        format!("{}x{} {}-bit", self.width, self.height, self.bpc)
    }
}

/// Parses `WxH`.
fn parse_size(s: &str) -> Result<(usize, usize), BoxError> {
    let (w, h) = s
        .trim()
        .split_once('x')
        .ok_or_else(|| format!("size '{s}' is not WxH"))?;
    Ok((w.parse()?, h.parse()?))
}

/// Parses `WxHxBITS` (e.g. `1920x1080x8`).
fn parse_cell(s: &str) -> Result<Cell, BoxError> {
    let (size, bits) = s
        .trim()
        .rsplit_once('x')
        .ok_or_else(|| format!("'{s}' is not WxHxBITS"))?;
    let (width, height) = parse_size(size)?;
    let bpc = bits.parse()?;
    if bpc != 8 && bpc != 10 {
        return Err(format!("depth {bpc}: 8 or 10").into());
    }
    Ok(Cell { width, height, bpc })
}

/// A comma-separated list of numbers (empty items skipped).
fn parse_list<T: std::str::FromStr>(s: &str) -> Result<Vec<T>, BoxError>
where
    T::Err: Error + Send + Sync + 'static,
{
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        out.push(item.parse()?);
    }
    Ok(out)
}

/// The input frames of one configuration: reference and distorted buffers (same count, at
/// least one) and their caps.
struct Frames {
    /// Reference frames, pushed in turn.
    refs: Vec<gst::Buffer>,
    /// Distorted frames, `diss[i]` paired with `refs[i]`.
    diss: Vec<gst::Buffer>,
    /// Caps of the reference `appsrc`.
    caps: gst::Caps,
    /// Caps of the distorted `appsrc`: `caps`, or another size in a rendition row.
    dis_caps: gst::Caps,
}

/// A full 4:2:0 frame (the luma plane, neutral chroma) as a GStreamer buffer in system memory.
/// An I420 (or I420_10LE) frame of `luma`; its Cb and Cr planes are the luma decimated by
/// two (real picture content, so that the metrics reading chroma do real work).
fn frame_buffer(luma: &[u16], w: usize, h: usize, bpc: u32) -> gst::Buffer {
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let decimated: Vec<u16> = (0..ch)
        .flat_map(|y| (0..cw).map(move |x| (x, y)))
        .map(|(x, y)| luma.get(2 * y * w + 2 * x).copied().unwrap_or(0))
        .collect();
    let mut bytes = Vec::with_capacity((w * h + 2 * cw * ch) * 2);
    for &v in luma.iter().chain(&decimated).chain(&decimated) {
        if bpc > 8 {
            bytes.extend_from_slice(&v.to_le_bytes());
        } else {
            bytes.push(v as u8);
        }
    }
    gst::Buffer::from_mut_slice(bytes)
}

/// The src01 pair at `cell`'s size and depth, in system memory.
fn host_frames(data: &std::path::Path, cell: Cell) -> Result<Frames, BoxError> {
    pair_frames(data, cell, cell)
}

/// The src01 pair in system memory: the reference at `cell`'s size and depth, the distorted
/// at `dis`'s (a rendition row; `cell` itself for a same-size pair), each scaled from
/// 576x324 by [`bench_data::upscale`] when its size differs.
fn pair_frames(data: &std::path::Path, cell: Cell, dis: Cell) -> Result<Frames, BoxError> {
    let (r, mut d) = bench_data::try_pair_planes(data, cell.width, cell.height, cell.bpc)?;
    if dis != cell {
        d = bench_data::try_pair_planes(data, dis.width, dis.height, dis.bpc)?.1;
    }
    if r.is_empty() || r.len() != d.len() {
        return Err("reference data: no frames".into());
    }
    let make = |planes: &[Vec<u16>], c: Cell| {
        planes
            .iter()
            .map(|p| frame_buffer(p, c.width, c.height, c.bpc))
            .collect()
    };
    Ok(Frames {
        refs: make(&r, cell),
        diss: make(&d, dis),
        caps: cell.caps(false),
        dis_caps: dis.caps(false),
    })
}

/// The GPU as this program sees it: the primary context of device 0 (the one the element
/// computes in), held for the whole run.
struct Gpu {
    /// The retained primary context (released when this is dropped).
    ctx: Arc<CudaContext>,
    /// Device name as the driver reports it.
    name: String,
    /// Device memory in bytes.
    total: usize,
}

impl Gpu {
    /// Opens device 0 ([`Gpu::open_device`]).
    fn open() -> Result<Gpu, String> {
        Self::open_device(0)
    }

    /// Opens CUDA device `device`. Errors: a text saying why no GPU is usable (no driver
    /// library, no such device, a failing driver call).
    fn open_device(device: usize) -> Result<Gpu, String> {
        // SAFETY: only tries to dlopen libcuda; no driver function is called. It must come
        // first: cudarc panics on the first driver call when the library is absent.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("no GPU".into());
        }
        let ctx = CudaContext::new(device).map_err(|e| format!("no GPU {device}: {e}"))?;
        let name = ctx.name().unwrap_or_else(|_| "unknown CUDA device".into());
        let total = ctx.mem_get_info().map(|(_, t)| t).unwrap_or(0);
        Ok(Gpu { ctx, name, total })
    }

    /// Free device memory in bytes (`cuMemGetInfo`), if the driver answers.
    fn free(&self) -> Option<usize> {
        self.ctx.mem_get_info().ok().map(|(f, _)| f)
    }
}

/// How a run feeds its pairs.
#[derive(Clone, Copy, Debug)]
enum Feed {
    /// As fast as the element takes them, until `seconds` after the first frame message (and
    /// at least `min_frames` messages).
    Until { seconds: f64, min_frames: usize },
    /// Exactly this many pairs, as fast as the element takes them.
    Count(u64),
    /// `frames` pairs, one every `1 / fps` seconds.
    Paced { fps: f64, frames: u64 },
}

/// One pipeline run to set up.
struct RunSpec<'a> {
    /// `backend` property value.
    backend: &'a str,
    /// What to push.
    frames: &'a Frames,
    /// How to push it.
    feed: Feed,
    /// Device memory is sampled on this GPU, when given.
    probe: Option<&'a Gpu>,
    /// Runs started together wait here before building their pipelines.
    start: Option<&'a Barrier>,
    /// `features` property value (extra metrics; empty: VMAF alone).
    features: &'a str,
    /// `device-id` property value (-1: the element picks).
    device: i32,
    /// CUDA frames by device ordinal, for `device: -1` with CUDA memory: the frames of the
    /// device the element opened (its `active-device-id` at READY) replace `frames`, as with a
    /// producer that takes the element's context (`cudaupload`). Empty: `frames`.
    follow: &'a [(usize, &'a Frames)],
}

/// What the synchronous bus handler collects on the posting thread.
#[derive(Default)]
struct Collected {
    /// `(index, when posted)` of every frame message, in posting order.
    arrivals: Vec<(u64, Instant)>,
    /// The frame messages of indices below [`KEEP`].
    first: Vec<FrameMessage>,
}

/// What one run produced.
struct Outcome {
    /// `(index, when posted)` of every frame message, in posting order.
    arrivals: Vec<(u64, Instant)>,
    /// The frame messages of indices below [`KEEP`].
    first: Vec<FrameMessage>,
    /// Pairs pushed.
    pushed: u64,
    /// Paced runs: when each pair's reference was pushed.
    pushes: Vec<Instant>,
    /// The summary message posted at end of stream.
    summary: Option<SummaryMessage>,
    /// Device memory taken while the pipeline ran (bytes), with a probe.
    device_bytes: Option<usize>,
    /// The element's `active-device-id` once started (-1: no GPU).
    device: i32,
}

impl Outcome {
    /// Messages posted while input streamed: all but the last [`EOS_TAIL`] (when more than
    /// a few were posted).
    fn steady(&self) -> &[(u64, Instant)] {
        let n = self.arrivals.len();
        let tail = if n > EOS_TAIL + 2 { EOS_TAIL } else { 0 };
        &self.arrivals[..n - tail]
    }

    /// Steady-state frames per second.
    fn fps(&self) -> Result<f64, String> {
        rate(self.steady().iter().map(|a| a.1))
    }

    /// `reference-input / distorted-input` of the summary (one name when both agree).
    fn paths(&self) -> String {
        match &self.summary {
            Some(s) if s.reference_input == s.distorted_input => s.reference_input.clone(),
            Some(s) => format!("{} / {}", s.reference_input, s.distorted_input),
            None => "no summary".into(),
        }
    }

    /// A copy holding only the kept frame messages (what [`same_scores`] compares).
    fn clone_first(&self) -> Outcome {
        Outcome {
            arrivals: self.arrivals.clone(),
            first: self.first.clone(),
            pushed: self.pushed,
            pushes: Vec::new(),
            summary: None,
            device_bytes: None,
            device: self.device,
        }
    }

    /// Frames scored: the summary's count, else the messages seen.
    fn scored(&self) -> u64 {
        self.summary
            .as_ref()
            .map_or(self.arrivals.len() as u64, |s| s.frames)
    }
}

/// Frames per second of the instants `times` (in order): intervals over elapsed time.
fn rate(times: impl Iterator<Item = Instant>) -> Result<f64, String> {
    let mut first = None;
    let mut last = None;
    let mut n = 0usize;
    for t in times {
        first.get_or_insert(t);
        last = Some(t);
        n += 1;
    }
    match (first, last) {
        (Some(a), Some(b)) if n >= 2 && b > a => Ok((n - 1) as f64 / (b - a).as_secs_f64()),
        _ => Err(format!("{n} frame messages: too few for a rate")),
    }
}

/// Pushes a shallow copy of `buffer` (memory shared) as pair `i`.
fn push(src: &gst_app::AppSrc, buffer: &gst::Buffer, i: u64) -> bool {
    let mut b = buffer.copy();
    {
        let b = b.make_mut();
        b.set_pts(gst::ClockTime::from_nseconds(i * FRAME_NS));
        b.set_duration(gst::ClockTime::from_nseconds(FRAME_NS));
    }
    src.push_buffer(b).is_ok()
}

/// The feeder thread: pushes pairs as `feed` says until done or `stop`, then ends both
/// streams. Returns the pairs pushed and, for a paced feed, when each was pushed.
fn feed_pairs(
    (rsrc, dsrc): (gst_app::AppSrc, gst_app::AppSrc),
    (refs, diss): (Vec<gst::Buffer>, Vec<gst::Buffer>),
    feed: Feed,
    stop: &AtomicBool,
) -> (u64, Vec<Instant>) {
    let limit = match feed {
        Feed::Until { .. } => u64::MAX,
        Feed::Count(n) => n,
        Feed::Paced { frames, .. } => frames,
    };
    let mut pushes = Vec::new();
    let start = Instant::now();
    let mut i = 0u64;
    while i < limit && !stop.load(Ordering::Relaxed) {
        if let Feed::Paced { fps, .. } = feed {
            let due = start + Duration::from_secs_f64(i as f64 / fps);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            pushes.push(Instant::now());
        }
        let k = (i % refs.len() as u64) as usize;
        if !push(&rsrc, &refs[k], i) || !push(&dsrc, &diss[k], i) {
            break;
        }
        i += 1;
    }
    let _ = rsrc.end_of_stream();
    let _ = dsrc.end_of_stream();
    (i, pushes)
}

/// `appsrc` (time format, blocking when [`QUEUE`] buffers wait) with `caps`.
fn appsrc(caps: &gst::Caps) -> gst_app::AppSrc {
    gst_app::AppSrc::builder()
        .caps(caps)
        .format(gst::Format::Time)
        .block(true)
        .max_buffers(QUEUE)
        .max_bytes(0)
        .build()
}

/// Runs `appsrc ! cmp.reference, appsrc ! cmp.distorted, vmafcompare backend=... ! fakesink`
/// from PLAYING to EOS as `spec` says.
///
/// Errors: the pipeline could not be built or started, the element posted an error (its text
/// and debug text), or no end of stream came in time.
fn run(spec: &RunSpec<'_>) -> Result<Outcome, BoxError> {
    if let Some(b) = spec.start {
        b.wait();
    }
    let f = spec.frames;
    if f.refs.is_empty() || f.refs.len() != f.diss.len() {
        return Err("no frames to push".into());
    }
    let pipeline = gst::Pipeline::new();
    let (rsrc, dsrc) = (appsrc(&f.caps), appsrc(&f.dis_caps));
    let cmp = gst::ElementFactory::make("vmafcompare")
        .property_from_str("backend", spec.backend)
        .property_from_str(
            "scale-method",
            SCALE_METHOD.get().map_or("bicubic", String::as_str),
        )
        .property("model", MODEL.get().map_or("vmaf_v0.6.1", String::as_str))
        .property("features", spec.features)
        .property("device-id", spec.device)
        .property("frame-message", true)
        .build()?;
    let sink = gst::ElementFactory::make("fakesink")
        .property("sync", false)
        .property("enable-last-sample", false)
        .build()?;
    pipeline.add_many([rsrc.upcast_ref(), dsrc.upcast_ref(), &cmp, &sink])?;
    rsrc.link_pads(Some("src"), &cmp, Some("reference"))?;
    dsrc.link_pads(Some("src"), &cmp, Some("distorted"))?;
    cmp.link(&sink)?;
    let bus = pipeline.bus().ok_or("pipeline without a bus")?;
    // CUDA frames that follow the element's device: it is opened (for device-id=-1: picked)
    // at NULL->READY. Otherwise READY comes with PLAYING, after the device memory probe.
    let f = if spec.follow.is_empty() {
        f
    } else {
        if let Err(e) = pipeline.set_state(gst::State::Ready) {
            let why = first_error(&bus).unwrap_or_else(|| e.to_string());
            let _ = pipeline.set_state(gst::State::Null);
            return Err(why.into());
        }
        let device = cmp.property::<i32>("active-device-id");
        match spec
            .follow
            .iter()
            .find(|(d, _)| i32::try_from(*d) == Ok(device))
        {
            Some((_, frames)) => *frames,
            None => {
                let _ = pipeline.set_state(gst::State::Null);
                return Err(format!(
                    "the element opened device {device}: no CUDA frames there (list every GPU \
                     in --devices)"
                )
                .into());
            }
        }
    };
    let collected = Arc::new(Mutex::new(Collected {
        arrivals: Vec::with_capacity(1 << 16),
        first: Vec::new(),
    }));
    {
        let collected = collected.clone();
        bus.set_sync_handler(move |_, msg| {
            let gst::MessageView::Element(e) = msg.view() else {
                return gst::BusSyncReply::Pass;
            };
            let Some(s) = e.structure().filter(|s| s.name() == FRAME_MESSAGE_NAME) else {
                return gst::BusSyncReply::Pass;
            };
            let now = Instant::now();
            if let (Ok(index), Ok(mut c)) = (s.get::<u64>("index"), collected.lock()) {
                c.arrivals.push((index, now));
                if index < KEEP {
                    if let Ok(m) = FrameMessage::try_from(s) {
                        c.first.push(m);
                    }
                }
            }
            gst::BusSyncReply::Drop
        });
    }
    let free_before = spec.probe.and_then(Gpu::free);
    let stop = Arc::new(AtomicBool::new(false));
    let mut device = -1;
    let result = match pipeline.set_state(gst::State::Playing) {
        Ok(_) => {
            device = cmp.property::<i32>("active-device-id");
            let feeder = {
                let (srcs, bufs) = (
                    (rsrc.clone(), dsrc.clone()),
                    (f.refs.clone(), f.diss.clone()),
                );
                let (feed, stop) = (spec.feed, stop.clone());
                std::thread::spawn(move || feed_pairs(srcs, bufs, feed, &stop))
            };
            let watched = watch(&bus, spec, &collected, &stop, free_before);
            stop.store(true, Ordering::Relaxed);
            // Unblocks a feeder waiting in push_buffer (its pushes then fail).
            let _ = pipeline.set_state(gst::State::Null);
            let fed = feeder.join().map_err(|_| "feeder thread panicked");
            watched.and_then(|w| Ok((w, fed?)))
        }
        Err(e) => Err(first_error(&bus).unwrap_or_else(|| e.to_string())),
    };
    let _ = pipeline.set_state(gst::State::Null);
    bus.unset_sync_handler();
    let ((summary, min_free), (pushed, pushes)) = result?;
    let c = std::mem::take(&mut *collected.lock().map_err(|_| "collector poisoned")?);
    Ok(Outcome {
        arrivals: c.arrivals,
        first: c.first,
        pushed,
        pushes,
        summary,
        device_bytes: free_before.zip(min_free).map(|(b, m)| b.saturating_sub(m)),
        device,
    })
}

/// The first error message waiting on `bus`, as text.
fn first_error(bus: &gst::Bus) -> Option<String> {
    let msg = bus.pop_filtered(&[gst::MessageType::Error])?;
    match msg.view() {
        gst::MessageView::Error(e) => Some(error_text(e)),
        _ => None,
    }
}

/// An error message's text and debug text.
fn error_text(e: &gst::message::Error) -> String {
    match e.debug() {
        Some(d) => format!("{} ({d})", e.error()),
        None => e.error().to_string(),
    }
}

/// The bus loop of a running pipeline: wakes at least every 20 ms to sample device memory and
/// to end an [`Feed::Until`] feed; returns at EOS with the summary and the least free memory
/// seen. Errors: the element's error message, or a timeout.
fn watch(
    bus: &gst::Bus,
    spec: &RunSpec<'_>,
    collected: &Mutex<Collected>,
    stop: &AtomicBool,
    free_before: Option<usize>,
) -> Result<(Option<SummaryMessage>, Option<usize>), String> {
    let limit = match spec.feed {
        Feed::Until { seconds, .. } => 120.0 + 3.0 * seconds,
        Feed::Count(n) => 120.0 + n as f64,
        Feed::Paced { fps, frames } => 120.0 + 2.0 * frames as f64 / fps,
    };
    let deadline = Instant::now() + Duration::from_secs_f64(limit);
    let mut summary = None;
    let mut min_free = free_before;
    loop {
        if Instant::now() > deadline {
            return Err(format!("no end of stream within {limit:.0} s"));
        }
        let msg = bus.timed_pop(gst::ClockTime::from_mseconds(20));
        if let Some(free) = spec.probe.and_then(Gpu::free) {
            min_free = Some(min_free.map_or(free, |m| m.min(free)));
        }
        if let Feed::Until {
            seconds,
            min_frames,
        } = spec.feed
        {
            let (n, first) = match collected.lock() {
                Ok(c) => (c.arrivals.len(), c.arrivals.first().map(|a| a.1)),
                Err(_) => return Err("collector poisoned".into()),
            };
            if first.is_some_and(|t| t.elapsed().as_secs_f64() >= seconds) && n >= min_frames {
                stop.store(true, Ordering::Relaxed);
            }
        }
        let Some(msg) = msg else { continue };
        match msg.view() {
            gst::MessageView::Eos(_) => return Ok((summary, min_free)),
            gst::MessageView::Error(e) => return Err(error_text(e)),
            gst::MessageView::Element(e) => {
                if let Some(s) = e.structure().filter(|s| s.name() == SUMMARY_MESSAGE_NAME) {
                    summary = SummaryMessage::try_from(s).ok();
                }
            }
            _ => {}
        }
    }
}

/// Whether the runs `a` and `b` gave bit-identical metrics for the frames both kept, except
/// each run's last frame (its motion2 has no next frame). `None` when fewer than two frames
/// can be compared.
fn same_scores(a: &Outcome, b: &Outcome) -> Option<bool> {
    let n = KEEP
        .min(a.scored().saturating_sub(1))
        .min(b.scored().saturating_sub(1)) as usize;
    if n < 2 || a.first.len() < n || b.first.len() < n {
        return None;
    }
    Some(a.first[..n].iter().zip(&b.first[..n]).all(|(x, y)| {
        x.index == y.index
            && x.metrics.len() == y.metrics.len()
            && x.metrics
                .iter()
                .zip(&y.metrics)
                .all(|((n1, v1), (n2, v2))| n1 == n2 && v1.to_bits() == v2.to_bits())
    }))
}

/// Nearest-rank percentile `p` (0..1) of sorted `v`.
fn percentile(v: &[f64], p: f64) -> f64 {
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Latency of a paced run: `(p50 ms, p99 ms, median lag in pairs)`.
fn latency(o: &Outcome) -> Result<(f64, f64, f64), String> {
    let end = o.pushed.saturating_sub(EOS_TAIL as u64);
    let mut ms = Vec::new();
    let mut lags = Vec::new();
    for &(index, posted) in &o.arrivals {
        if index < LATENCY_WARMUP || index >= end {
            continue;
        }
        let Some(pushed) = o.pushes.get(index as usize) else {
            continue;
        };
        ms.push(posted.saturating_duration_since(*pushed).as_secs_f64() * 1e3);
        let before = o.pushes.partition_point(|p| *p <= posted) as f64;
        lags.push(before - 1.0 - index as f64);
    }
    if ms.len() < 10 {
        return Err(format!("{} frames timed: too few", ms.len()));
    }
    ms.sort_by(f64::total_cmp);
    lags.sort_by(f64::total_cmp);
    Ok((
        percentile(&ms, 0.5),
        percentile(&ms, 0.99),
        percentile(&lags, 0.5),
    ))
}

/// Frames in CUDA memory made by `cudaupload`, and the pre-roll pipelines that made them
/// (kept in PLAYING, so their buffer pools stay active, until this is dropped).
struct CudaFrames {
    /// The buffers (one `GstCudaMemory` each) and their `memory:CUDAMemory` caps.
    frames: Frames,
    /// The `cudaupload` pipelines, set to NULL on drop after the buffers are released.
    pipelines: Vec<gst::Pipeline>,
}

impl Drop for CudaFrames {
    fn drop(&mut self) {
        self.frames.refs.clear();
        self.frames.diss.clear();
        for p in &self.pipelines {
            let _ = p.set_state(gst::State::Null);
        }
    }
}

/// `caps` with the `memory:CUDAMemory` feature.
fn cuda_caps(caps: &gst::Caps) -> gst::Caps {
    let mut c = caps.copy();
    c.make_mut()
        .set_features_simple(Some(gst::CapsFeatures::new([
            gst_cuda::CAPS_FEATURE_CUDA_MEMORY,
        ])));
    c
}

/// Uploads `host` once to CUDA memory of `gpu`'s primary context through
/// `appsrc ! cudaupload ! video/x-raw(memory:CUDAMemory) ! appsink`, one pipeline per pad,
/// each with that pad's caps (the distorted frames of a rendition row keep their size).
///
/// Errors: `Ok(Err(reason))` when CUDA memory cannot be made here (no `cudaupload`, no
/// `libgstcuda-1.0`); `Err` when the upload failed.
fn upload(gpu: &Gpu, host: &Frames) -> Result<Result<CudaFrames, String>, BoxError> {
    if gst::ElementFactory::find("cudaupload").is_none() {
        return Ok(Err("no cudaupload element".into()));
    }
    let Some(lib) = gst_cuda::library() else {
        let why = gst_cuda::load_error().unwrap_or("libgstcuda-1.0 not loaded");
        return Ok(Err(why.to_owned()));
    };
    if !lib.load_driver() {
        return Ok(Err("gst_cuda_load_library failed".into()));
    }
    let ctx = &gpu.ctx;
    let wrapped = lib
        .wrap_context(ctx.cu_ctx() as usize, ctx.cu_device(), ctx.clone())
        .ok_or("gst_cuda_context_new_wrapped failed")?;
    let context = lib
        .new_context(&wrapped)
        .ok_or("gst_context_new_cuda_context failed")?;
    let mut out = CudaFrames {
        frames: Frames {
            refs: Vec::new(),
            diss: Vec::new(),
            caps: cuda_caps(&host.caps),
            dis_caps: cuda_caps(&host.dis_caps),
        },
        pipelines: Vec::new(),
    };
    for (i, (list, caps)) in [(&host.refs, &host.caps), (&host.diss, &host.dis_caps)]
        .into_iter()
        .enumerate()
    {
        let pipeline = gst::parse::launch(
            "appsrc name=src format=time ! cudaupload \
             ! video/x-raw(memory:CUDAMemory) ! appsink name=sink sync=false",
        )?
        .downcast::<gst::Pipeline>()
        .map_err(|_| "not a pipeline")?;
        out.pipelines.push(pipeline.clone());
        // Before NULL->READY: cudaupload takes this context instead of making its own.
        pipeline.set_context(&context);
        let src = pipeline
            .by_name("src")
            .and_then(|e| e.downcast::<gst_app::AppSrc>().ok())
            .ok_or("no appsrc")?;
        let sink = pipeline
            .by_name("sink")
            .and_then(|e| e.downcast::<gst_app::AppSink>().ok())
            .ok_or("no appsink")?;
        src.set_caps(Some(caps));
        pipeline.set_state(gst::State::Playing).map_err(|e| {
            pipeline
                .bus()
                .and_then(|b| first_error(&b))
                .unwrap_or_else(|| e.to_string())
        })?;
        for (k, b) in list.iter().enumerate() {
            if !push(&src, b, k as u64) {
                return Err("cudaupload pipeline refused a buffer".into());
            }
        }
        let _ = src.end_of_stream();
        let mut got = Vec::new();
        while got.len() < list.len() {
            let sample = sink
                .try_pull_sample(gst::ClockTime::from_seconds(30))
                .ok_or("cudaupload pipeline: no sample within 30 s")?;
            let buffer = sample.buffer_owned().ok_or("sample without a buffer")?;
            let cuda = buffer.n_memory() == 1 && lib.is_cuda_memory(buffer.peek_memory(0));
            if !cuda {
                return Err("cudaupload gave a buffer that is not CUDA memory".into());
            }
            got.push(buffer);
        }
        if i == 0 {
            out.frames.refs = got;
        } else {
            out.frames.diss = got;
        }
    }
    Ok(Ok(out))
}

/// One row of the main table.
struct Row {
    /// Size and depth.
    cell: Cell,
    /// A rendition row: the distorted frames' size (scaled by the element to `cell`'s).
    rendition: Option<(usize, usize)>,
    /// `backend=cuda` fps, system memory: the median of `--repeat` runs.
    system: Val,
    /// Lowest and highest system-memory fps of those runs.
    system_range: String,
    /// `backend=cuda` fps, CUDA memory.
    cuda: Val,
    /// Input path of the CUDA-memory run, as the summary reports it.
    cuda_input: String,
    /// Device memory of the system-memory run, MiB.
    device_mib: Val,
    /// Median latency of the paced run, ms.
    p50: Val,
    /// 99th-percentile latency of the paced run, ms.
    p99: Val,
    /// Pace of the latency run, fps.
    paced: Val,
    /// Median pairs pushed after a frame before its message.
    lag: Val,
    /// `backend=cpu` fps.
    cpu: Val,
    /// `yes`, `= cpu`, `NO`, or `-` (nothing to compare).
    scores: String,
}

impl Row {
    /// A row whose every cell is `v`.
    fn all(cell: Cell, v: Val) -> Row {
        Row {
            cell,
            rendition: None,
            system: v.clone(),
            system_range: "-".into(),
            cuda: v.clone(),
            cuda_input: "-".into(),
            device_mib: v.clone(),
            p50: v.clone(),
            p99: v.clone(),
            paced: v.clone(),
            lag: v.clone(),
            cpu: v,
            scores: "-".into(),
        }
    }

    /// The size column: `1920x1080`, or `1920x1080 <- 1280x720` for a rendition row.
    fn size(&self) -> String {
        let (w, h) = (self.cell.width, self.cell.height);
        match self.rendition {
            Some((rw, rh)) => format!("{w}x{h} <- {rw}x{rh}"),
            None => format!("{w}x{h}"),
        }
    }

    /// Whether a cell failed or scores differ.
    fn failed(&self) -> bool {
        [
            &self.system,
            &self.cuda,
            &self.device_mib,
            &self.p50,
            &self.p99,
            &self.paced,
            &self.lag,
            &self.cpu,
        ]
        .iter()
        .any(|v| v.failed())
            || self.scores.starts_with("NO")
    }
}

/// One row of the streams table.
struct AggRow<'a> {
    /// `cuda` or `cpu`.
    backend: &'a str,
    /// Elements run at once.
    elements: usize,
    /// Aggregate steady fps.
    fps: Val,
    /// Whether every element scored as the first: `identical`, `NO (...)`, `-`.
    scores: String,
}

/// A failed run as a cell (also printed in full on stderr).
fn failed(what: &str, e: impl std::fmt::Display) -> Val {
    eprintln!("  {what} failed: {e}");
    Val::Failed(e.to_string())
}

/// Measures one size and depth: `gpu` is the usable GPU or why there is none. With
/// `rendition`, the distorted frames have that size (a rendition row: no paced run, and every
/// run's summary must name the scaling).
fn measure_cell(
    args: &Args,
    cell: Cell,
    rendition: Option<(usize, usize)>,
    gpu: Result<&Gpu, &str>,
    backends: &[String],
) -> Row {
    let dis = rendition.map_or(cell, |(width, height)| Cell {
        width,
        height,
        ..cell
    });
    let row_of = |v: Val| Row {
        rendition,
        ..Row::all(cell, v)
    };
    match rendition {
        Some(_) => eprintln!("{} <- {}: building frames", cell.label(), dis.label()),
        None => eprintln!("{}: building frames", cell.label()),
    }
    let host = match pair_frames(&args.data, cell, dis) {
        Ok(f) => f,
        Err(e) => return row_of(failed("reading the reference data", e)),
    };
    let wants = |b: &str| backends.iter().any(|x| x == b);
    let mut row = row_of(Val::Na("--backends".into()));
    let mut runs: Vec<(&str, Outcome)> = Vec::new();
    if wants("cuda") {
        match gpu {
            Err(why) => {
                let na = Val::Na(why.to_owned());
                row = Row {
                    cpu: row.cpu,
                    ..row_of(na)
                };
            }
            Ok(gpu) => measure_gpu(args, gpu, &host, &mut row, &mut runs),
        }
    }
    if rendition.is_some() {
        (row.p50, row.p99, row.paced, row.lag) = (Val::Skip, Val::Skip, Val::Skip, Val::Skip);
    }
    if wants("cpu") {
        let spec = RunSpec {
            backend: "cpu",
            frames: &host,
            feed: Feed::Until {
                seconds: args.cpu_seconds,
                min_frames: 8,
            },
            probe: None,
            start: None,
            features: "",
            device: 0,
            follow: &[],
        };
        row.cpu = match run(&spec) {
            Ok(o) => {
                let v = o.fps().map_or_else(|e| failed("cpu", e), Val::Num);
                eprintln!("  cpu: {} fps ({} frames)", v.show(1), o.scored());
                runs.push(("cpu", o));
                v
            }
            Err(e) => failed("cpu", e),
        };
    }
    if rendition.is_some() {
        let expected = format!(
            "{} {}x{}->{}x{}",
            SCALE_METHOD.get().map_or("bicubic", String::as_str),
            dis.width,
            dis.height,
            cell.width,
            cell.height
        );
        for (name, o) in &runs {
            if let Err(e) = check_scaling(o, &expected) {
                let cell = match *name {
                    "system" => &mut row.system,
                    "cuda" => &mut row.cuda,
                    _ => &mut row.cpu,
                };
                *cell = failed(&format!("{name} scaling"), e);
            }
        }
    }
    row.scores = compare(&runs);
    row
}

/// Whether the summary of `o` says the distorted stream was scaled as `expected` (`METHOD
/// WxH->WxH`) and the reference was not scaled. Errors: what the summary said instead.
fn check_scaling(o: &Outcome, expected: &str) -> Result<(), String> {
    let s = o.summary.as_ref().ok_or("no summary message")?;
    if s.distorted_scaling != expected || s.reference_scaling != "none" {
        return Err(format!(
            "summary distorted-scaling '{}', reference-scaling '{}'; expected '{expected}', 'none'",
            s.distorted_scaling, s.reference_scaling
        ));
    }
    Ok(())
}

/// The `backend=cuda` cells of `row`; each finished run goes to `runs`.
fn measure_gpu(
    args: &Args,
    gpu: &Gpu,
    host: &Frames,
    row: &mut Row,
    runs: &mut Vec<(&str, Outcome)>,
) {
    let until = Feed::Until {
        seconds: args.seconds,
        min_frames: 8,
    };
    let spec = RunSpec {
        backend: "cuda",
        frames: host,
        feed: until,
        probe: Some(gpu),
        start: None,
        features: "",
        device: 0,
        follow: &[],
    };
    let mut system_fps = None;
    // `--repeat` fresh pipelines; the median run (by fps) gives the row, the others the range.
    let mut done: Vec<(f64, Outcome)> = Vec::new();
    let mut error = None;
    for _ in 0..args.repeat {
        match run(&spec) {
            Ok(o) => match o.fps() {
                Ok(f) => {
                    eprintln!(
                        "  cuda, system memory: {f:.1} fps ({} frames, {})",
                        o.scored(),
                        o.paths()
                    );
                    done.push((f, o));
                }
                Err(e) => error = Some(e),
            },
            Err(e) => error = Some(e.to_string()),
        }
    }
    if done.len() < args.repeat as usize {
        let e = error.unwrap_or_else(|| "no run".into());
        row.system = failed("cuda, system memory", &e);
        row.device_mib = Val::Failed(e);
    } else {
        // `--repeat` is at least 1, so `done` is not empty here.
        done.sort_by(|a, b| a.0.total_cmp(&b.0));
        row.system_range = format!("{:.0}-{:.0}", done[0].0, done[done.len() - 1].0);
        let device = done.iter().filter_map(|(_, o)| o.device_bytes).max();
        let (f, o) = done.swap_remove(done.len() / 2);
        row.system = Val::Num(f);
        system_fps = Some(f);
        row.device_mib = match device {
            Some(b) => Val::Num(b as f64 / (1024.0 * 1024.0)),
            None => Val::Na("cuMemGetInfo failed".into()),
        };
        runs.push(("system", o));
    }
    // Latency, paced below the measured throughput (same-size rows only).
    let pace = args.pace_fps.or(system_fps.map(|f| f * args.pace));
    match pace.filter(|p| p.is_finite() && *p > 0.0) {
        _ if row.rendition.is_some() => {}
        None => {
            let na = Val::Na("no system fps to pace by".into());
            (row.p50, row.p99, row.paced, row.lag) = (na.clone(), na.clone(), na.clone(), na);
        }
        Some(fps) => {
            let frames = ((fps * args.latency_seconds) as u64).clamp(100, 20_000);
            row.paced = Val::Num(fps);
            let spec = RunSpec {
                backend: "cuda",
                frames: host,
                feed: Feed::Paced { fps, frames },
                probe: None,
                start: None,
                features: "",
                device: 0,
                follow: &[],
            };
            match run(&spec).map_err(|e| e.to_string()).and_then(|o| {
                let l = latency(&o)?;
                runs.push(("paced", o));
                Ok(l)
            }) {
                Ok((p50, p99, lag)) => {
                    (row.p50, row.p99, row.lag) = (Val::Num(p50), Val::Num(p99), Val::Num(lag));
                    eprintln!(
                        "  latency at {fps:.1} fps: p50 {p50:.2} ms, p99 {p99:.2} ms, lag {lag} pairs"
                    );
                }
                Err(e) => {
                    let v = failed("paced run", &e);
                    (row.p50, row.p99, row.lag) = (v.clone(), v.clone(), v);
                }
            }
        }
    }
    // CUDA memory, made once before timing.
    match upload(gpu, host) {
        Ok(Ok(cuda)) => {
            let spec = RunSpec {
                backend: "cuda",
                frames: &cuda.frames,
                feed: until,
                probe: None,
                start: None,
                features: "",
                device: 0,
                follow: &[],
            };
            match run(&spec) {
                Ok(o) => {
                    row.cuda = o.fps().map_or_else(|e| failed("cuda memory", e), Val::Num);
                    row.cuda_input = o.paths();
                    eprintln!(
                        "  cuda, CUDA memory: {} fps ({} frames, {})",
                        row.cuda.show(1),
                        o.scored(),
                        row.cuda_input
                    );
                    runs.push(("cuda", o));
                }
                Err(e) => row.cuda = failed("cuda, CUDA memory", e),
            }
        }
        Ok(Err(why)) => {
            eprintln!("  no CUDA memory run: {why}");
            row.cuda = Val::Na(why);
        }
        Err(e) => row.cuda = failed("cudaupload pre-roll", e),
    }
}

/// `--extras`: the cost of the extra metrics on `backend=cuda`. For each cell, VMAF alone
/// and each `;`-separated features set, from system memory (median of `--repeat` fresh
/// pipelines) and CUDA memory (one run), with the device memory taken; prints one table with
/// each set's fps as a fraction of VMAF alone. Returns whether every run succeeded.
fn extras(args: &Args, gpu: &Gpu, cells: &[Cell], sets: &str) -> Result<bool, BoxError> {
    let until = Feed::Until {
        seconds: args.seconds,
        min_frames: 8,
    };
    let mut lines = vec![
        "| size | bits | features | system fps | system range | CUDA-memory fps | system vs VMAF alone | CUDA memory vs VMAF alone | device MiB |".to_owned(),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |".to_owned(),
    ];
    let mut ok = true;
    for &cell in cells {
        let host = host_frames(&args.data, cell)?;
        let cuda = upload(gpu, &host)?;
        let mut base: Option<(f64, f64)> = None;
        for features in std::iter::once("").chain(sets.split(';').map(str::trim)) {
            let label = if features.is_empty() {
                "(VMAF alone)"
            } else {
                features
            };
            eprintln!("{} {label}", cell.label());
            let mut fps = Vec::new();
            let mut device = None;
            for _ in 0..args.repeat {
                let spec = RunSpec {
                    backend: "cuda",
                    frames: &host,
                    feed: until,
                    probe: Some(gpu),
                    start: None,
                    features,
                    device: 0,
                    follow: &[],
                };
                match run(&spec).map_err(|e| e.to_string()).and_then(|o| {
                    let f = o.fps()?;
                    Ok((f, o.device_bytes))
                }) {
                    Ok((f, d)) => {
                        fps.push(f);
                        device = device.max(d);
                    }
                    Err(e) => {
                        eprintln!("  system memory failed: {e}");
                        ok = false;
                    }
                }
            }
            fps.sort_by(f64::total_cmp);
            let system = fps.get(fps.len() / 2).copied();
            let range = match (fps.first(), fps.last()) {
                (Some(a), Some(b)) => format!("{a:.0}-{b:.0}"),
                _ => "-".into(),
            };
            let cuda_fps = match &cuda {
                Ok(c) => {
                    let spec = RunSpec {
                        backend: "cuda",
                        frames: &c.frames,
                        feed: until,
                        probe: None,
                        start: None,
                        features,
                        device: 0,
                        follow: &[],
                    };
                    match run(&spec).map_err(|e| e.to_string()).and_then(|o| o.fps()) {
                        Ok(f) => Some(f),
                        Err(e) => {
                            eprintln!("  CUDA memory failed: {e}");
                            ok = false;
                            None
                        }
                    }
                }
                Err(_) => None,
            };
            if features.is_empty() {
                base = system.zip(cuda_fps);
            }
            let show = |v: Option<f64>| v.map_or("-".to_owned(), |f| format!("{f:.0}"));
            let ratio = |v: Option<f64>, b: Option<f64>| match (v, b) {
                (Some(v), Some(b)) if b > 0.0 => format!("{:.2}", v / b),
                _ => "-".into(),
            };
            eprintln!(
                "  system {} fps, CUDA memory {} fps",
                show(system),
                show(cuda_fps)
            );
            lines.push(format!(
                "| {}x{} | {} | {label} | {} | {range} | {} | {} | {} | {} |",
                cell.width,
                cell.height,
                cell.bpc,
                show(system),
                show(cuda_fps),
                ratio(system, base.map(|b| b.0)),
                ratio(cuda_fps, base.map(|b| b.1)),
                device.map_or("-".to_owned(), |b| format!(
                    "{:.0}",
                    b as f64 / (1024.0 * 1024.0)
                )),
            ));
        }
    }
    println!(
        "\nExtra metrics on {} (backend=cuda, {} s per run):\n",
        gpu.name, args.seconds
    );
    for l in &lines {
        println!("{l}");
    }
    Ok(ok)
}

/// The `scores` cell: compares every run with the first (the CPU run first when there is one).
fn compare(runs: &[(&str, Outcome)]) -> String {
    let Some(base) = runs
        .iter()
        .find(|r| r.0 == "cpu")
        .or(runs.first())
        .map(|r| &r.1)
    else {
        return "-".into();
    };
    let mut compared = 0;
    let mut differ = Vec::new();
    for (name, o) in runs {
        if std::ptr::eq(o, base) {
            continue;
        }
        match same_scores(base, o) {
            Some(true) => compared += 1,
            Some(false) => differ.push(*name),
            None => {}
        }
    }
    let cpu = runs.iter().any(|r| r.0 == "cpu");
    if !differ.is_empty() {
        format!("NO ({} differ)", differ.join(", "))
    } else if compared == 0 {
        "-".into()
    } else if cpu {
        "= cpu".into()
    } else {
        "identical".into()
    }
}

/// Aggregate steady fps of `n` pipelines run at once on `backend`, each with its own element:
/// the sum of each one's rate over the time all of them were scoring; and the `scores` cell
/// comparing every element's scores with the first's (they must not mix).
fn aggregate(
    backend: &str,
    frames: &Frames,
    n: usize,
    seconds: f64,
) -> Result<(f64, String), String> {
    let jobs: Vec<Job<'_>> = (0..n).map(|_| (0, frames, &[][..])).collect();
    let (fps, outcomes) = aggregate_on(backend, &jobs, seconds)?;
    let names: Vec<String> = (1..=n).map(|i| format!("element {i}")).collect();
    let runs: Vec<(&str, Outcome)> = names.iter().map(String::as_str).zip(outcomes).collect();
    Ok((fps, compare(&runs)))
}

/// One pipeline of [`aggregate_on`]: `device-id`, frames, and the CUDA frames by device that
/// replace them for `device-id=-1` ([`RunSpec::follow`]).
type Job<'a> = (i32, &'a Frames, &'a [(usize, &'a Frames)]);

/// Pipelines run at once, one per `jobs` entry: the aggregate steady fps (the sum of each
/// one's rate over the time all of them were scoring) and each run.
fn aggregate_on(
    backend: &str,
    jobs: &[Job<'_>],
    seconds: f64,
) -> Result<(f64, Vec<Outcome>), String> {
    let barrier = Barrier::new(jobs.len());
    let outcomes: Vec<Result<Outcome, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|&(device, frames, follow)| {
                let barrier = &barrier;
                s.spawn(move || {
                    let spec = RunSpec {
                        backend,
                        frames,
                        feed: Feed::Until {
                            seconds,
                            min_frames: 8,
                        },
                        probe: None,
                        start: Some(barrier),
                        features: "",
                        device,
                        follow,
                    };
                    run(&spec).map_err(|e| e.to_string())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("run thread panicked".into()))
            })
            .collect()
    });
    let outcomes = outcomes.into_iter().collect::<Result<Vec<_>, _>>()?;
    let steady: Vec<_> = outcomes.iter().map(Outcome::steady).collect();
    let start = steady.iter().filter_map(|s| s.first().map(|a| a.1)).max();
    let end = steady.iter().filter_map(|s| s.last().map(|a| a.1)).min();
    let (Some(start), Some(end)) = (start, end) else {
        return Err("a pipeline posted no frame message".into());
    };
    let mut total = 0.0;
    for s in steady {
        let inside = s.iter().map(|a| a.1).filter(|t| *t >= start && *t <= end);
        total += rate(inside).map_err(|e| format!("while all ran: {e}"))?;
    }
    Ok((total, outcomes))
}

/// How `--multi-gpu` puts its elements on the GPUs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// All on the first device of `--devices`.
    OneGpu,
    /// Element `i` on device `i mod len` (`device-id` set by hand).
    ByHand,
    /// `device-id=-1`: each element picks (fed CUDA memory of the device it picked).
    Auto,
}

impl Layout {
    fn describe(self) -> &'static str {
        match self {
            Layout::OneGpu => "one GPU",
            Layout::ByHand => "spread by device-id",
            Layout::Auto => "device-id=-1",
        }
    }
}

/// `--multi-gpu`: prints the several-GPU table (see [`Args::multi_gpu`]). Returns whether
/// every run succeeded with the scores of the first one-GPU run.
fn multi_gpu(args: &Args, streams: &[usize]) -> Result<bool, BoxError> {
    let cell = Cell {
        width: 1920,
        height: 1080,
        bpc: 8,
    };
    if args.devices.len() < 2 {
        return Err("--multi-gpu needs at least two --devices".into());
    }
    let gpus = args
        .devices
        .iter()
        .map(|&d| Gpu::open_device(d))
        .collect::<Result<Vec<_>, _>>()?;
    let host = host_frames(&args.data, cell)?;
    let mut cuda = Vec::new();
    for g in &gpus {
        cuda.push(upload(g, &host)?.map_err(|e| format!("CUDA memory: {e}"))?);
    }
    let mut ok = true;
    let mut base: Option<Outcome> = None;
    let mut lines = Vec::new();
    // CUDA frames of each listed device, for the auto rows: each element is fed those of the
    // device it picked.
    let follow: Vec<(usize, &Frames)> = args
        .devices
        .iter()
        .zip(&cuda)
        .map(|(&d, c)| (d, &c.frames))
        .collect();
    for memory in ["system", "cuda"] {
        for &n in streams {
            let mut one_gpu = None;
            for layout in [Layout::OneGpu, Layout::ByHand, Layout::Auto] {
                let jobs: Vec<Job<'_>> = (0..n)
                    .map(|i| {
                        let k = if layout == Layout::ByHand {
                            i % gpus.len()
                        } else {
                            0
                        };
                        let frames = if memory == "cuda" {
                            &cuda[k].frames
                        } else {
                            &host
                        };
                        match layout {
                            Layout::Auto if memory == "cuda" => (-1, frames, &follow[..]),
                            Layout::Auto => (-1, frames, &[][..]),
                            _ => (args.devices[k] as i32, frames, &[][..]),
                        }
                    })
                    .collect();
                eprintln!("{n} element(s), {}, {memory} memory", layout.describe());
                match aggregate_on("cuda", &jobs, args.seconds) {
                    Ok((fps, outcomes)) => {
                        let paths = outcomes.first().map(Outcome::paths).unwrap_or_default();
                        let picked: Vec<String> =
                            outcomes.iter().map(|o| o.device.to_string()).collect();
                        let used = outcomes
                            .iter()
                            .map(|o| o.device)
                            .collect::<std::collections::BTreeSet<_>>()
                            .len();
                        let device_id = match layout {
                            Layout::Auto => format!("-1 (picked {})", picked.join(",")),
                            _ => picked.join(","),
                        };
                        let scores = {
                            let base = base.get_or_insert_with(|| outcomes[0].clone_first());
                            let same = outcomes
                                .iter()
                                .all(|o| same_scores(base, o).unwrap_or(false));
                            ok &= same;
                            if same {
                                "identical"
                            } else {
                                "NO"
                            }
                        };
                        let vs = match (layout, one_gpu) {
                            (Layout::OneGpu, _) => {
                                one_gpu = Some(fps);
                                "1.00x".to_owned()
                            }
                            (_, Some(o)) if o > 0.0 => format!("{:.2}x", fps / o),
                            _ => "-".to_owned(),
                        };
                        lines.push(format!(
                            "| {memory} | {n} | {device_id} | {used} | {paths} | {fps:.1} | {vs} | {scores} |"
                        ));
                    }
                    Err(e) => {
                        ok = false;
                        lines.push(format!(
                            "| {memory} | {n} | {} | - | - | failed: {e} | - | - |",
                            layout.describe()
                        ));
                    }
                }
            }
        }
    }
    // CUDA memory of the first device scored by an element on the second.
    let (from, to) = (args.devices[0], args.devices[1]);
    let jobs = [(to as i32, &cuda[0].frames, &[][..])];
    eprintln!("CUDA memory of device {from} into device-id={to}");
    match aggregate_on("cuda", &jobs, args.seconds) {
        Ok((fps, outcomes)) => {
            let same = base
                .as_ref()
                .is_some_and(|b| same_scores(b, &outcomes[0]).unwrap_or(false));
            ok &= same;
            lines.push(format!(
                "| cuda of device {from} | 1 | {to} | 1 | {} | {fps:.1} | - | {} |",
                outcomes[0].paths(),
                if same { "identical" } else { "NO" }
            ));
        }
        Err(e) => {
            ok = false;
            lines.push(format!(
                "| cuda of device {from} | 1 | {to} | 1 | - | failed: {e} | - | - |"
            ));
        }
    }
    println!();
    for (d, g) in args.devices.iter().zip(&gpus) {
        println!("GPU {d}: {}", g.name);
    }
    println!();
    println!(
        "Several GPUs, 1920x1080 8-bit, one pipeline per element, each fed as fast as it scores"
    );
    println!();
    println!("| input | elements | device-id | GPUs | input path | aggregate fps | vs the same elements on one GPU | scores vs one GPU |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for l in lines {
        println!("{l}");
    }
    drop(cuda);
    Ok(ok)
}

/// `--profile`: scores `frames` pairs of `cell` on the GPU and prints one line.
fn profile(args: &Args, spec: &str) -> Result<(), BoxError> {
    let cell = parse_cell(spec)?;
    let host = host_frames(&args.data, cell)?;
    let o = run(&RunSpec {
        backend: "cuda",
        frames: &host,
        feed: Feed::Count(args.frames),
        probe: None,
        start: None,
        features: "",
        device: 0,
        follow: &[],
    })?;
    println!(
        "profile: {} scored {} of {} pairs, input {}, {:.1} fps",
        cell.label(),
        o.scored(),
        o.pushed,
        o.paths(),
        o.fps().unwrap_or(0.0)
    );
    if o.scored() == o.pushed && o.pushed > 0 {
        Ok(())
    } else {
        Err("not every pair was scored".into())
    }
}

fn main() {
    match bench() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("vmaf_bench: {e}");
            std::process::exit(1);
        }
    }
}

/// Parses the arguments, measures and prints. Returns whether every measurement succeeded
/// and every score matched. Errors: bad arguments, GStreamer or the plugin not loading, a
/// required GPU missing, `--profile` failing.
fn bench() -> Result<bool, BoxError> {
    let args = Args::parse();
    gst::init()?;
    gstvmafcompare::plugin_register_static()?;
    let _ = MODEL.set(args.model.clone());
    let _ = SCALE_METHOD.set(args.scale_method.clone());
    if args.ladder {
        return ladder_bench::ladder(
            &args.ladder_models,
            args.ladder_frames,
            &args.ladder_runs,
            &args.ladder_memory,
            args.ladder_warm,
        )
        .map_err(|e| -> BoxError { e.to_string().into() });
    }
    println!("model: {}", args.model);
    if let Some(spec) = args.profile.as_deref() {
        return profile(&args, spec).map(|()| true);
    }
    let backends: Vec<String> = args
        .backends
        .split(',')
        .map(|b| b.trim().to_owned())
        .filter(|b| !b.is_empty())
        .collect();
    if let Some(b) = backends.iter().find(|b| *b != "cuda" && *b != "cpu") {
        return Err(format!("unknown backend '{b}': cuda or cpu").into());
    }
    let mut cells = Vec::new();
    for size in args.sizes.split(',').filter(|s| !s.trim().is_empty()) {
        let (width, height) = parse_size(size)?;
        for bpc in parse_list::<u32>(&args.depths)? {
            if bpc != 8 && bpc != 10 {
                return Err(format!("depth {bpc}: 8 or 10").into());
            }
            cells.push(Cell { width, height, bpc });
        }
    }
    let streams = parse_list::<usize>(&args.streams)?;
    let mut renditions = Vec::new();
    for size in args.renditions.split(',').filter(|s| !s.trim().is_empty()) {
        renditions.push(parse_size(size)?);
    }
    let wants_cuda = backends.iter().any(|b| b == "cuda");
    let gpu = if wants_cuda {
        Gpu::open()
    } else {
        Err("not selected".into())
    };
    if let (true, Err(why)) = (wants_cuda, &gpu) {
        if std::env::var_os("VMAFCOMPARE_REQUIRE_GPU").is_some() {
            return Err(
                format!("VMAFCOMPARE_REQUIRE_GPU is set but CUDA is unusable: {why}").into(),
            );
        }
    }
    if let Ok(g) = &gpu {
        // Warm-up: the driver's one-time allocations and the first module loads of this
        // process are not measured.
        eprintln!("warm-up on {}", g.name);
        let warm = host_frames(
            &args.data,
            Cell {
                width: 576,
                height: 324,
                bpc: 8,
            },
        )?;
        let spec = RunSpec {
            backend: "cuda",
            frames: &warm,
            feed: Feed::Count(60),
            probe: None,
            start: None,
            features: "",
            device: 0,
            follow: &[],
        };
        if let Err(e) = run(&spec) {
            eprintln!("warm-up failed: {e}");
        }
    }
    let gpu_ref = gpu.as_ref().map_err(String::as_str);
    if args.multi_gpu {
        return multi_gpu(&args, &streams);
    }
    if let Some(sets) = args.extras.as_deref() {
        let gpu = gpu_ref.map_err(|why| format!("--extras needs a GPU: {why}"))?;
        return extras(&args, gpu, &cells, sets);
    }
    let mut rows: Vec<Row> = Vec::new();
    for &c in &cells {
        rows.push(measure_cell(&args, c, None, gpu_ref, &backends));
        // Renditions smaller than the cell, scaled up to it by the element.
        for &(rw, rh) in &renditions {
            if rw <= c.width && rh <= c.height && (rw, rh) != (c.width, c.height) {
                rows.push(measure_cell(&args, c, Some((rw, rh)), gpu_ref, &backends));
            }
        }
    }
    // Several elements at once, 1080p 8-bit, system memory.
    let mut agg_rows = Vec::new();
    if !streams.is_empty() {
        let cell = Cell {
            width: 1920,
            height: 1080,
            bpc: 8,
        };
        match host_frames(&args.data, cell) {
            Err(e) => agg_rows.push(AggRow {
                backend: "-",
                elements: 0,
                fps: failed("reading the reference data", e),
                scores: "-".into(),
            }),
            Ok(frames) => {
                for b in &backends {
                    let seconds = if b == "cpu" {
                        args.cpu_seconds
                    } else {
                        args.seconds
                    };
                    for &n in &streams {
                        let (v, scores) = match (b.as_str(), &gpu_ref) {
                            ("cuda", Err(why)) => (Val::Na((*why).to_owned()), "-".into()),
                            _ => {
                                eprintln!("{n} x {b} at once, {}", cell.label());
                                match aggregate(b, &frames, n, seconds) {
                                    Ok((fps, scores)) => (Val::Num(fps), scores),
                                    Err(e) => (failed("streams", e), "-".into()),
                                }
                            }
                        };
                        agg_rows.push(AggRow {
                            backend: b.as_str(),
                            elements: n,
                            fps: v,
                            scores,
                        });
                    }
                }
            }
        }
    }
    print_tables(&args, gpu_ref, &rows, &agg_rows);
    Ok(!rows.iter().any(Row::failed)
        && !agg_rows
            .iter()
            .any(|r| r.fps.failed() || r.scores.starts_with("NO")))
}

/// Prints the GPU line, a legend and the three tables (markdown).
fn print_tables(args: &Args, gpu: Result<&Gpu, &str>, rows: &[Row], agg: &[AggRow<'_>]) {
    println!();
    match gpu {
        Ok(g) => println!(
            "GPU: {} (device 0, {:.0} MiB)",
            g.name,
            g.total as f64 / (1024.0 * 1024.0)
        ),
        Err(why) => println!("GPU: none usable ({why})"),
    }
    println!(
        "fps: steady state, frames pre-built in RAM ({} s per cuda run, {} s per cpu run; system \
         fps: median of {} runs, range lowest-highest); \
         latency: pair pushed -> frame message, paced at {}, first {LATENCY_WARMUP} frames \
         left out; lag: later pairs already pushed when the message is posted; device MiB: \
         cuMemGetInfo drop during the system-memory run",
        args.seconds,
        args.cpu_seconds,
        args.repeat,
        match args.pace_fps {
            Some(f) => format!("{f} fps"),
            None => format!("{} x system fps", args.pace),
        }
    );
    if rows.iter().any(|r| r.rendition.is_some()) {
        println!(
            "rendition rows (WxH <- RxS): distorted frames of RxS, scaled by the element \
             (scale-method={}) to the reference's WxH; summary's distorted-scaling checked; no \
             paced run",
            args.scale_method
        );
    }
    println!();
    println!("| size | bits | system fps | system range | cuda fps | cuda input | device MiB | p50 ms | p99 ms | paced fps | lag | cpu fps | scores |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.size(),
            r.cell.bpc,
            r.system.show(1),
            r.system_range,
            r.cuda.show(1),
            r.cuda_input,
            r.device_mib.show(1),
            r.p50.show(2),
            r.p99.show(2),
            r.paced.show(1),
            r.lag.show(0),
            r.cpu.show(1),
            r.scores
        );
    }
    println!();
    println!("10-bit cost: fps(8-bit) / fps(10-bit), goal at most 1.5");
    println!();
    println!("| size | system | cuda memory | cpu |");
    println!("| --- | --- | --- | --- |");
    let same_size = || rows.iter().filter(|r| r.rendition.is_none());
    let sizes: Vec<(usize, usize)> = same_size().fold(Vec::new(), |mut v, r| {
        if !v.contains(&(r.cell.width, r.cell.height)) {
            v.push((r.cell.width, r.cell.height));
        }
        v
    });
    for (w, h) in sizes {
        let at = |bpc: u32| {
            same_size().find(|r| (r.cell.width, r.cell.height, r.cell.bpc) == (w, h, bpc))
        };
        let ratio = |pick: fn(&Row) -> &Val| match (at(8).map(pick), at(10).map(pick)) {
            (Some(a), Some(b)) => match (a.num(), b.num()) {
                (Some(a), Some(b)) if b > 0.0 => {
                    let r = a / b;
                    format!("{r:.2}{}", if r > 1.5 { " (over 1.5)" } else { "" })
                }
                _ => "-".into(),
            },
            _ => "-".into(),
        };
        println!(
            "| {w}x{h} | {} | {} | {} |",
            ratio(|r| &r.system),
            ratio(|r| &r.cuda),
            ratio(|r| &r.cpu)
        );
    }
    print_scaling_cost(rows);
    if agg.is_empty() {
        return;
    }
    println!();
    println!(
        "Several elements in one process, each its own pipeline, 1920x1080 8-bit, system memory"
    );
    println!();
    println!("| backend | elements | aggregate fps | per element | vs one element | scores |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for r in agg {
        let one = agg
            .iter()
            .find(|o| o.backend == r.backend && o.elements == 1)
            .and_then(|o| o.fps.num());
        let n = r.elements.max(1) as f64;
        let (per, vs) = match (r.fps.num(), one) {
            (Some(a), Some(o)) if o > 0.0 => (format!("{:.1}", a / n), format!("{:.2}x", a / o)),
            (Some(a), None) => (format!("{:.1}", a / n), "-".into()),
            _ => ("-".into(), "-".into()),
        };
        println!(
            "| {} | {} | {} | {per} | {vs} | {} |",
            r.backend,
            r.elements,
            r.fps.show(1),
            r.scores
        );
    }
}

/// The scaling cost table: for each rendition row, the extra time per pair against the
/// same-size row of its reference size and depth, per path.
fn print_scaling_cost(rows: &[Row]) {
    if rows.iter().all(|r| r.rendition.is_none()) {
        return;
    }
    println!();
    println!(
        "Scaling cost: extra time per pair of a rendition against the same-size pair, \
         (fps(same size) / fps(rendition) - 1) * 100 %, negative: the rendition pair is faster; \
         goal on the GPU at most 10% at 1920x1080"
    );
    println!();
    println!("| reference | rendition | bits | system | cuda memory | cpu |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for r in rows {
        let Some((rw, rh)) = r.rendition else {
            continue;
        };
        let same = rows
            .iter()
            .find(|s| s.rendition.is_none() && s.cell == r.cell);
        let cost = |pick: fn(&Row) -> &Val, gpu: bool| {
            let Some(same) = same else {
                return "-".to_owned();
            };
            match (pick(same), pick(r)) {
                (Val::Na(why), _) | (_, Val::Na(why)) => format!("n/a ({why})"),
                (a, b) => match (a.num(), b.num()) {
                    (Some(a), Some(b)) if b > 0.0 => {
                        let pct = (a / b - 1.0) * 100.0;
                        let over = if gpu && pct > 10.0 { " (over 10%)" } else { "" };
                        format!("{pct:+.1}%{over}")
                    }
                    _ => "-".into(),
                },
            }
        };
        println!(
            "| {}x{} | {rw}x{rh} | {} | {} | {} | {} |",
            r.cell.width,
            r.cell.height,
            r.cell.bpc,
            cost(|r| &r.system, true),
            cost(|r| &r.cuda, true),
            cost(|r| &r.cpu, false)
        );
    }
}
