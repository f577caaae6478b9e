//! CPU backend speed beside libvmaf's (issue 20): frames per second of the whole VMAF
//! (VIF + ADM + motion + model, optionally `--features psnr,float_ssim,float_ms_ssim`, or
//! a VMAF v1 model with `--model vmaf_v1.0.16_3d0h`: CAMBI, SpEED chroma and the rest) at
//! 1920x1080 and 3840x2160, 8 and 10 bits, with 1, 2 and all threads, on the same raw
//! content for both: Netflix's src01 frames (576x324, luma and chroma, from
//! ../shared/vmaf-reference or `--data`) scaled up.
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
//! cpu_bench --model vmaf_v1.0.16_3d0h --sizes 1080p             # VMAF v1
//! cpu_bench --ladder --sizes 1080p --threads 1,2                # a ladder (issue 30)
//! ```
//!
//! `--ladder`: one reference against five renditions (at 1, 2/3, 1/2, 2/5 and 1/3 of the
//! scoring size: 1920x1080, 1280x720, 960x540, 768x432, 640x360 at 1080p), made from the
//! distorted frames by the crate's bicubic scaler and scaled back up (bicubic, luma and
//! chroma) by the backend: reference frames per second of one ladder backend
//! (`CpuBackend::for_ladder`, the reference's work once per frame) beside five pair backends
//! run one after the other on the same threads, and their ratio. No libvmaf column.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;

#[path = "bench_data/mod.rs"]
mod bench_data;
use bench_data::{try_pair_chroma, try_pair_planes, ChromaPlanes, Planes};
use gstvmafcompare::cpu::{threads_per_core, CpuPool};
use gstvmafcompare::engine::scale::cpu::{scale_plane, Scratch};
use gstvmafcompare::engine::scale::{LadderScaling, ScaleMethod, Siting, StreamScaler};
use gstvmafcompare::engine::CpuBackend;
use gstvmafcompare::engine::{
    ChromaPair, FeatureSet, FrameChroma, FrameSet, Geometry, LumaInput, LumaPlane, NamedModel,
    RenditionFrame, ScorePlan, Scorer,
};

#[derive(Parser)]
#[command(about = "Prints the CPU backend's fps beside libvmaf's at equal thread counts")]
struct Args {
    /// Frame pairs per row (0: 16 per thread of the row, at least 24).
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
    /// Built-in model for both (libvmaf's name, e.g. vmaf_v1.0.16_3d0h).
    #[arg(long, default_value = "vmaf_v0.6.1")]
    model: String,
    /// Runs of each measurement; the fastest is reported (a shared machine's other load
    /// only ever slows a run down).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Do not run libvmaf (a machine without ffmpeg, e.g. the GPU host).
    #[arg(long)]
    no_libvmaf: bool,
    /// One reference against five renditions: a ladder backend beside five pair backends
    /// (see the module docs).
    #[arg(long)]
    ladder: bool,
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

/// Raw 4:2:0 file of `n` frames cycling through the luma `planes` and their `chroma`.
fn write_yuv(path: &Path, planes: &Planes, chroma: &ChromaPlanes, bpc: u32, n: usize) {
    use std::io::Write;
    let file = std::fs::File::create(path).expect("create temp yuv");
    let mut out = std::io::BufWriter::new(file);
    for i in 0..n {
        let p = &planes[i % planes.len()];
        let [u, v] = &chroma[i % chroma.len()];
        for &s in p.iter().chain(u).chain(v) {
            if bpc > 8 {
                out.write_all(&s.to_le_bytes()).expect("write");
            } else {
                out.write_all(&[s as u8]).expect("write");
            }
        }
    }
    out.flush().expect("flush");
}

struct Content<'a> {
    refs: &'a Planes,
    diss: &'a Planes,
    ref_chroma: &'a ChromaPlanes,
    dis_chroma: &'a ChromaPlanes,
    w: usize,
    h: usize,
    bpc: u32,
}

/// A packed chroma plane of `cw` x `ch` samples.
fn chroma_plane(p: &[u16], cw: usize, ch: usize, bpc: u32) -> LumaPlane<'_> {
    LumaPlane::packed(p, cw, ch, bpc).expect("chroma plane")
}

/// Our fps: `n` pairs through the scorer on `threads` threads.
fn ours(c: &Content, model: &str, features: &FeatureSet, threads: usize, n: usize) -> f64 {
    let models: Arc<[NamedModel]> = NamedModel::load_list(model).expect("model").into();
    let plan = ScorePlan::new(models, features.clone(), true).expect("plan");
    let geometry = Geometry {
        chroma: Some((c.w.div_ceil(2), c.h.div_ceil(2))),
        ..Geometry::luma(c.w, c.h, c.bpc)
    };
    let mut backend = CpuBackend::new(plan.layout(), geometry).expect("backend");
    if threads > 1 {
        backend = backend.with_pool(Arc::new(CpuPool::new(threads).expect("pool")));
    }
    let mut scorer: Scorer<()> = Scorer::with_plan(Box::new(backend), plan, 1);
    let (cw, ch) = (c.w.div_ceil(2), c.h.div_ceil(2));
    let start = Instant::now();
    for i in 0..n {
        let r = LumaPlane::packed(&c.refs[i % c.refs.len()], c.w, c.h, c.bpc).expect("plane");
        let d = LumaPlane::packed(&c.diss[i % c.diss.len()], c.w, c.h, c.bpc).expect("plane");
        let [ru, rv] = &c.ref_chroma[i % c.ref_chroma.len()];
        let [du, dv] = &c.dis_chroma[i % c.dis_chroma.len()];
        let chroma = ChromaPair {
            reference: [
                chroma_plane(ru, cw, ch, c.bpc),
                chroma_plane(rv, cw, ch, c.bpc),
            ],
            distorted: [
                chroma_plane(du, cw, ch, c.bpc),
                chroma_plane(dv, cw, ch, c.bpc),
            ],
        };
        scorer
            .push_frame(LumaInput::Packed(r), LumaInput::Packed(d), Some(chroma), ())
            .expect("score");
    }
    scorer.finish().expect("finish");
    n as f64 / start.elapsed().as_secs_f64()
}

/// One rendition of the ladder bench: its size, its frames (luma, Cb, Cr at that size) and
/// its scaler back to the scoring size (`None` at the scoring size).
struct Rung {
    size: (usize, usize),
    luma: Planes,
    chroma: ChromaPlanes,
    up: Option<Arc<StreamScaler>>,
}

/// 4:2:0 chroma siting as the element's default (centred).
const SITING: Siting = Siting {
    h_sub: 1,
    v_sub: 1,
    h_pos: None,
    v_pos: None,
    chroma: true,
};

fn chroma_size((w, h): (usize, usize)) -> (usize, usize) {
    (w.div_ceil(2), h.div_ceil(2))
}

/// A bicubic scaler of luma and 4:2:0 chroma from `src` to `dst`.
fn scaler(src: (usize, usize), dst: (usize, usize)) -> StreamScaler {
    StreamScaler::new(
        ScaleMethod::Bicubic,
        src,
        dst,
        Some((chroma_size(src), chroma_size(dst), SITING)),
    )
    .expect("scaler")
}

/// The five rungs of the ladder at scoring size `c.w` x `c.h`: the distorted frames scaled
/// down (bicubic) to each.
fn rungs(c: &Content) -> Vec<Rung> {
    let full = (c.w, c.h);
    [(1, 1), (2, 3), (1, 2), (2, 5), (1, 3)]
        .iter()
        .map(|&(num, den)| {
            // Even sizes, as encoders make them.
            let size = (c.w * num / den / 2 * 2, c.h * num / den / 2 * 2);
            if size == full {
                return Rung {
                    size,
                    luma: c.diss.clone(),
                    chroma: c.dis_chroma.clone(),
                    up: None,
                };
            }
            let down = scaler(full, size);
            let mut scratch = Scratch::default();
            let mut scale = |s: &gstvmafcompare::engine::scale::PlaneScaler, p: &[u16], w, h| {
                let mut out = Vec::new();
                let plane = LumaPlane::packed(p, w, h, c.bpc).expect("plane");
                assert!(scale_plane(s, &plane, &mut scratch, &mut out), "scale");
                out
            };
            let (cw, ch) = chroma_size(full);
            let cs = down.chroma.as_ref().expect("chroma scaler");
            Rung {
                size,
                luma: c
                    .diss
                    .iter()
                    .map(|p| scale(&down.luma, p, c.w, c.h))
                    .collect(),
                chroma: c
                    .dis_chroma
                    .iter()
                    .map(|[u, v]| [scale(cs, u, cw, ch), scale(cs, v, cw, ch)])
                    .collect(),
                up: Some(Arc::new(scaler(size, full))),
            }
        })
        .collect()
}

/// Frame `i` of rung `r`: luma and chroma planes at the rung's size.
fn rung_planes(r: &Rung, i: usize, bpc: u32) -> (LumaPlane<'_>, [LumaPlane<'_>; 2]) {
    let (w, h) = r.size;
    let (cw, ch) = chroma_size(r.size);
    let [u, v] = &r.chroma[i % r.chroma.len()];
    (
        LumaPlane::packed(&r.luma[i % r.luma.len()], w, h, bpc).expect("plane"),
        [chroma_plane(u, cw, ch, bpc), chroma_plane(v, cw, ch, bpc)],
    )
}

/// Seconds to score `n` reference frames against every rung: with one ladder backend
/// (`ladder`) or with one pair backend per rung, one after the other.
fn ladder_seconds(
    c: &Content,
    rungs: &[Rung],
    plan: &ScorePlan,
    threads: usize,
    n: usize,
    ladder: bool,
) -> f64 {
    let geometry = Geometry {
        chroma: Some(chroma_size((c.w, c.h))),
        ..Geometry::luma(c.w, c.h, c.bpc)
    };
    let pool = (threads > 1).then(|| Arc::new(CpuPool::new(threads).expect("pool")));
    let with_pool = |b: CpuBackend| match &pool {
        Some(p) => b.with_pool(p.clone()),
        None => b,
    };
    let (cw, ch) = chroma_size((c.w, c.h));
    let reference = |i: usize| {
        let [u, v] = &c.ref_chroma[i % c.ref_chroma.len()];
        (
            LumaPlane::packed(&c.refs[i % c.refs.len()], c.w, c.h, c.bpc).expect("plane"),
            [
                chroma_plane(u, cw, ch, c.bpc),
                chroma_plane(v, cw, ch, c.bpc),
            ],
        )
    };
    let start = Instant::now();
    if ladder {
        let scaling = LadderScaling {
            reference: None,
            renditions: rungs.iter().map(|r| r.up.clone()).collect(),
        };
        let backend = CpuBackend::for_ladder(plan.layout(), geometry, scaling).expect("backend");
        let mut scorer: Scorer<()> =
            Scorer::with_plan(Box::new(with_pool(backend)), plan.clone(), 1);
        for i in 0..n {
            let (r, rc) = reference(i);
            let renditions = rungs
                .iter()
                .enumerate()
                .map(|(k, g)| {
                    let (l, lc) = rung_planes(g, i, c.bpc);
                    RenditionFrame {
                        rendition: k,
                        luma: LumaInput::Packed(l),
                        chroma: Some(FrameChroma::Packed(lc)),
                        full: true,
                    }
                })
                .collect();
            let frame = FrameSet {
                reference: LumaInput::Packed(r),
                reference_chroma: Some(FrameChroma::Packed(rc)),
                renditions,
            };
            scorer
                .push_set(frame, vec![(); rungs.len()])
                .expect("score");
        }
        scorer.finish().expect("finish");
    } else {
        for g in rungs {
            let backend = CpuBackend::new(plan.layout(), geometry)
                .expect("backend")
                .with_scaling(gstvmafcompare::engine::scale::InputScaling {
                    reference: None,
                    distorted: g.up.clone(),
                });
            let mut scorer: Scorer<()> =
                Scorer::with_plan(Box::new(with_pool(backend)), plan.clone(), 1);
            for i in 0..n {
                let (r, rc) = reference(i);
                let (d, dc) = rung_planes(g, i, c.bpc);
                let chroma = ChromaPair {
                    reference: rc,
                    distorted: dc,
                };
                scorer
                    .push_frame(LumaInput::Packed(r), LumaInput::Packed(d), Some(chroma), ())
                    .expect("score");
            }
            scorer.finish().expect("finish");
        }
    }
    start.elapsed().as_secs_f64()
}

/// The `--ladder` table: reference fps of a ladder backend and of five pair backends.
fn ladder_main(args: &Args, features: &FeatureSet, counts: &[usize], most: usize) {
    let models: Arc<[NamedModel]> = NamedModel::load_list(&args.model).expect("model").into();
    let plan = ScorePlan::new(models, features.clone(), true).expect("plan");
    println!(
        "CPU: {} cores; model {}; extra features: {}; one reference against 5 renditions",
        threads_per_core(),
        args.model,
        if args.features.is_empty() {
            "none"
        } else {
            &args.features
        }
    );
    println!(
        "| size | bits | threads | renditions | frames | ladder ref fps | 5 pair backends ref fps | ladder / pairs |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for s in &args.sizes {
        let (w, h) = size(s);
        for &bpc in &args.depths {
            let (refs, diss) =
                try_pair_planes(&args.data, w, h, bpc).unwrap_or_else(|e| panic!("{e}"));
            let (ref_chroma, dis_chroma) =
                try_pair_chroma(&args.data, w, h, bpc).unwrap_or_else(|e| panic!("{e}"));
            let c = Content {
                refs: &refs,
                diss: &diss,
                ref_chroma: &ref_chroma,
                dis_chroma: &dis_chroma,
                w,
                h,
                bpc,
            };
            let rungs = rungs(&c);
            let sizes: Vec<String> = rungs
                .iter()
                .map(|r| format!("{}x{}", r.size.0, r.size.1))
                .collect();
            let n = match args.frames {
                0 => (2 * most).max(12),
                n => n,
            };
            for &t in counts {
                let ladder = n as f64
                    / best(args.repeat, || {
                        ladder_seconds(&c, &rungs, &plan, t, n, true)
                    });
                let pairs = n as f64
                    / best(args.repeat, || {
                        ladder_seconds(&c, &rungs, &plan, t, n, false)
                    });
                println!(
                    "| {w}x{h} | {bpc} | {t} | {} | {n} | {ladder:.2} | {pairs:.2} | {:.2} |",
                    sizes.join(", "),
                    ladder / pairs
                );
            }
        }
    }
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
fn ffmpeg_seconds(
    ff: &str,
    files: (&Path, &Path),
    c: &Content,
    lavfi: Option<&str>,
    frames: usize,
) -> f64 {
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
    cmd.arg("-frames:v").arg(frames.to_string());
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
    if args.ladder {
        ladder_main(&args, &features, &counts, most);
        return;
    }
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
        "CPU: {} cores; model {}; extra features:{}",
        threads_per_core(),
        args.model,
        if args.features.is_empty() {
            " none".to_owned()
        } else {
            format!(" {}", args.features)
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
            let (ref_chroma, dis_chroma) = match try_pair_chroma(&args.data, w, h, bpc) {
                Ok(p) => p,
                Err(e) => panic!("{e}"),
            };
            let c = Content {
                refs: &refs,
                diss: &diss,
                ref_chroma: &ref_chroma,
                dis_chroma: &dis_chroma,
                w,
                h,
                bpc,
            };
            // Frames of the row at `t` threads: enough that start-up (ffmpeg's, and each
            // worker's first frame, its scratch made then) weighs little. With 4 per thread of
            // the largest count, 128 frames a row, a 32-core host's rows at 16 and 32 threads
            // were mostly that (1080p 8-bit `vmaf_v0.6.1`: 240.1 and 245.6 fps, where the
            // whole process reached 427.8 at 32 threads).
            let frames_at = |t: usize| match args.frames {
                0 => (16 * t).max(24),
                n => n,
            };
            let longest = counts.iter().map(|&t| frames_at(t)).max().unwrap_or(24);
            let files = (dir.join("dis.yuv"), dir.join("ref.yuv"));
            if ff.is_some() {
                write_yuv(&files.0, &diss, &dis_chroma, bpc, longest);
                write_yuv(&files.1, &refs, &ref_chroma, bpc, longest);
            }
            // ffmpeg without libvmaf, per frame count.
            let mut bases = std::collections::HashMap::new();
            for &t in &counts {
                let n = frames_at(t);
                let fps = n as f64
                    / best(args.repeat, || {
                        n as f64 / ours(&c, &args.model, &features, t, n)
                    });
                let lib = ff.as_deref().map(|ff| {
                    let base = *bases.entry(n).or_insert_with(|| {
                        best(args.repeat, || {
                            ffmpeg_seconds(ff, (&files.0, &files.1), &c, None, n)
                        })
                    });
                    let lavfi = format!(
                        "[0:v][1:v]libvmaf=model=version={}:n_threads={t}{feature_opt}",
                        args.model
                    );
                    let secs = best(args.repeat, || {
                        ffmpeg_seconds(ff, (&files.0, &files.1), &c, Some(&lavfi), n)
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
