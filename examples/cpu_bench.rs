//! CPU backend speed beside libvmaf's (issue 20): frames per second of the whole VMAF
//! (VIF + ADM + motion + model, optionally `--features psnr,float_ssim,float_ms_ssim`) at
//! 1920x1080 and 3840x2160, 8 and 10 bits, with 1, 2 and all threads, on the same raw
//! content for both: Netflix's src01 frames (576x324, from ../shared/vmaf-reference or
//! `--data`) scaled up.
//!
//! Ours: the element's CPU backend (`CpuBackend` on a pool of N threads, as `threads=N`)
//! through the scorer, frames already in memory. libvmaf: the ffmpeg of the pip package
//! imageio-ffmpeg (libvmaf 3.2.0) with `n_threads=N`, reading the same frames from raw
//! files; its fps is `frames / (wall time - the wall time of the same ffmpeg command
//! without libvmaf)`, so file reading and start-up are not counted against it. Each
//! timing is the fastest of `--repeat` runs.
//!
//! ```text
//! cargo run --release --example cpu_bench                      # side by side, here
//! cpu_bench --no-libvmaf --threads 1,4,16 --data DIR           # ours only (no ffmpeg)
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;

#[path = "bench_data/mod.rs"]
mod bench_data;
use bench_data::{try_pair_planes, Planes};
use gstvmafcompare::cpu::{threads_per_core, CpuPool};
use gstvmafcompare::engine::CpuBackend;
use gstvmafcompare::engine::{
    ChromaPair, FeatureSet, Geometry, LumaInput, LumaPlane, NamedModel, ScorePlan, Scorer,
};

#[derive(Parser)]
#[command(about = "Prints the CPU backend's fps beside libvmaf's at equal thread counts")]
struct Args {
    /// Frame pairs per row (0: at least 24 at 1080p and 8 at 2160p, and 4 / 2 per thread).
    #[arg(long, default_value_t = 0)]
    frames: usize,
    /// Frame sizes: 1080p, 2160p, or WxH.
    #[arg(long, value_delimiter = ',', default_value = "1080p,2160p")]
    sizes: Vec<String>,
    /// Bit depths (8, 10).
    #[arg(long, value_delimiter = ',', default_value = "8,10")]
    depths: Vec<u32>,
    /// Thread counts; `all` = one per core.
    #[arg(long, value_delimiter = ',', default_value = "1,2,all")]
    threads: Vec<String>,
    /// Extra metrics for both (e.g. psnr,float_ssim,float_ms_ssim).
    #[arg(long, default_value = "")]
    features: String,
    /// Runs of each measurement; the fastest is reported (a shared machine's other load
    /// only ever slows a run down).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Do not run libvmaf (a machine without ffmpeg, e.g. the GPU host).
    #[arg(long)]
    no_libvmaf: bool,
    /// Folder with src01_{ref,dis}_576x324_420p{8,10}_3f.yuv.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vmaf-reference"))]
    data: PathBuf,
}

fn size(s: &str) -> (usize, usize) {
    match s {
        "1080p" => (1920, 1080),
        "2160p" => (3840, 2160),
        "576p" | "576x324" => (576, 324),
        other => {
            let (w, h) = other
                .split_once('x')
                .unwrap_or_else(|| panic!("size {other}: 1080p, 2160p or WxH"));
            (w.parse().expect("width"), h.parse().expect("height"))
        }
    }
}

fn threads(s: &str) -> usize {
    match s {
        "all" => threads_per_core(),
        n => n.parse().expect("thread count or 'all'"),
    }
}

/// Mid-grey chroma of a `w` x `h` 4:2:0 frame at `bpc` bits (what the raw files carry).
fn grey(w: usize, h: usize, bpc: u32) -> Vec<u16> {
    vec![1u16 << (bpc - 1); w.div_ceil(2) * h.div_ceil(2)]
}

/// Raw 4:2:0 file of `n` frames cycling through `planes`, chroma mid-grey.
fn write_yuv(path: &Path, planes: &Planes, w: usize, h: usize, bpc: u32, n: usize) {
    use std::io::Write;
    let file = std::fs::File::create(path).expect("create temp yuv");
    let mut out = std::io::BufWriter::new(file);
    let chroma = grey(w, h, bpc);
    for i in 0..n {
        let p = &planes[i % planes.len()];
        for &v in p.iter().chain(&chroma).chain(&chroma) {
            if bpc > 8 {
                out.write_all(&v.to_le_bytes()).expect("write");
            } else {
                out.write_all(&[v as u8]).expect("write");
            }
        }
    }
    out.flush().expect("flush");
}

struct Content<'a> {
    refs: &'a Planes,
    diss: &'a Planes,
    w: usize,
    h: usize,
    bpc: u32,
}

/// Our fps: `n` pairs through the scorer on `threads` threads.
fn ours(c: &Content, features: &FeatureSet, threads: usize, n: usize) -> f64 {
    let models: Arc<[NamedModel]> = NamedModel::load_list("vmaf_v0.6.1").expect("model").into();
    let plan = ScorePlan::new(models, features.clone(), true).expect("plan");
    let mut backend =
        CpuBackend::new(plan.layout(), Geometry::luma(c.w, c.h, c.bpc)).expect("backend");
    if threads > 1 {
        backend = backend.with_pool(Arc::new(CpuPool::new(threads).expect("pool")));
    }
    let mut scorer: Scorer<()> = Scorer::with_plan(Box::new(backend), plan, 1);
    let chroma = grey(c.w, c.h, c.bpc);
    let (cw, ch) = (c.w.div_ceil(2), c.h.div_ceil(2));
    let cp = LumaPlane::packed(&chroma, cw, ch, c.bpc).expect("chroma plane");
    let start = Instant::now();
    for i in 0..n {
        let r = LumaPlane::packed(&c.refs[i % c.refs.len()], c.w, c.h, c.bpc).expect("plane");
        let d = LumaPlane::packed(&c.diss[i % c.diss.len()], c.w, c.h, c.bpc).expect("plane");
        let chroma = ChromaPair {
            reference: [cp, cp],
            distorted: [cp, cp],
        };
        scorer
            .push_frame(LumaInput::Packed(r), LumaInput::Packed(d), Some(chroma), ())
            .expect("score");
    }
    scorer.finish().expect("finish");
    n as f64 / start.elapsed().as_secs_f64()
}

fn ffmpeg() -> Option<String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import imageio_ffmpeg as f; print(f.get_ffmpeg_exe())",
        ])
        .output()
        .ok()?;
    let ff = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!ff.is_empty()).then_some(ff)
}

/// Seconds of one ffmpeg run on the two raw files with `lavfi` (`None`: no filter).
fn ffmpeg_seconds(ff: &str, files: (&Path, &Path), c: &Content, lavfi: Option<&str>) -> f64 {
    let pix = if c.bpc > 8 { "yuv420p10le" } else { "yuv420p" };
    let size = format!("{}x{}", c.w, c.h);
    let mut cmd = Command::new(ff);
    cmd.args(["-hide_banner", "-loglevel", "error", "-nostdin"]);
    for f in [files.0, files.1] {
        cmd.args(["-f", "rawvideo", "-pix_fmt", pix, "-s", &size, "-i"])
            .arg(f);
    }
    match lavfi {
        Some(l) => cmd.arg("-lavfi").arg(l),
        None => cmd.args(["-map", "0:v", "-map", "1:v"]),
    };
    cmd.args(["-f", "null", "-"]);
    let start = Instant::now();
    let status = cmd.status().expect("run ffmpeg");
    assert!(status.success(), "ffmpeg failed: {cmd:?}");
    start.elapsed().as_secs_f64()
}

/// The shortest of `repeat` (at least 1) timings.
fn best(repeat: usize, mut secs: impl FnMut() -> f64) -> f64 {
    (0..repeat.max(1))
        .map(|_| secs())
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let args = Args::parse();
    let features = FeatureSet::parse(&args.features).expect("features");
    let ff = if args.no_libvmaf { None } else { ffmpeg() };
    if !args.no_libvmaf && ff.is_none() {
        eprintln!("no ffmpeg (pip install imageio-ffmpeg): ours only");
    }
    let mut counts: Vec<usize> = args.threads.iter().map(|t| threads(t)).collect();
    counts.dedup();
    let most = counts.iter().copied().max().unwrap_or(1);
    let dir = std::env::temp_dir().join(format!("cpu_bench_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let feature_opt = if args.features.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = args
            .features
            .split(',')
            .map(|f| format!("name={}", f.trim()))
            .collect();
        format!(":feature={}", names.join("|"))
    };
    println!(
        "CPU: {} cores; features: VMAF{}",
        threads_per_core(),
        if args.features.is_empty() {
            String::new()
        } else {
            format!(" + {}", args.features)
        }
    );
    println!("| size | bits | threads | frames | vmafcompare CPU fps | libvmaf 3.2.0 fps | ours / libvmaf |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for s in &args.sizes {
        let (w, h) = size(s);
        for &bpc in &args.depths {
            let (refs, diss) = match try_pair_planes(&args.data, w, h, bpc) {
                Ok(p) => p,
                Err(e) => panic!("{e} (--data: the folder holding the src01 576x324 pairs)"),
            };
            let c = Content {
                refs: &refs,
                diss: &diss,
                w,
                h,
                bpc,
            };
            let n = match args.frames {
                0 if w * h > 1920 * 1080 => (2 * most).max(8),
                0 => (4 * most).max(24),
                n => n,
            };
            let files = (dir.join("dis.yuv"), dir.join("ref.yuv"));
            let base = ff.as_deref().map(|ff| {
                write_yuv(&files.0, &diss, w, h, bpc, n);
                write_yuv(&files.1, &refs, w, h, bpc, n);
                best(args.repeat, || {
                    ffmpeg_seconds(ff, (&files.0, &files.1), &c, None)
                })
            });
            for &t in &counts {
                let fps = n as f64 / best(args.repeat, || n as f64 / ours(&c, &features, t, n));
                let lib = ff.as_deref().zip(base).map(|(ff, base)| {
                    let lavfi = format!("[0:v][1:v]libvmaf=n_threads={t}{feature_opt}");
                    let secs = best(args.repeat, || {
                        ffmpeg_seconds(ff, (&files.0, &files.1), &c, Some(&lavfi))
                    });
                    n as f64 / (secs - base).max(1e-6)
                });
                let (l, r) = match lib {
                    Some(l) => (format!("{l:.1}"), format!("{:.2}", fps / l)),
                    None => ("-".into(), "-".into()),
                };
                println!("| {w}x{h} | {bpc} | {t} | {n} | {fps:.1} | {l} | {r} |");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
