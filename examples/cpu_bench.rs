//! CPU backend speed: frames per second of the whole VMAF (VIF + ADM + motion + model) on one
//! thread, at 576x324 and 1920x1080, 8 and 10 bits, on real content (Netflix's src01 frames
//! from ../shared/vmaf-reference, scaled up for 1080p). With `--libvmaf`, also times libvmaf
//! 3.2.0 itself (single thread) through the ffmpeg of the pip package imageio-ffmpeg.
//!
//! `cargo run --release --example cpu_bench -- --libvmaf`

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;

#[path = "bench_data/mod.rs"]
mod bench_data;
use bench_data::{read_luma, upscale};
use gstvmafcompare::cpu::CpuBackend;
use gstvmafcompare::engine::{LumaPlane, Model, Scorer};

#[derive(Parser)]
#[command(about = "Prints the CPU backend's fps table")]
struct Args {
    /// Frame pairs to score per configuration.
    #[arg(long, default_value_t = 12)]
    frames: usize,
    /// Also time libvmaf (ffmpeg from `pip install imageio-ffmpeg`), n_threads=1.
    #[arg(long)]
    libvmaf: bool,
    /// Reference data folder.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vmaf-reference"))]
    data: PathBuf,
}

fn write_yuv(path: &PathBuf, planes: &[Vec<u16>], w: usize, h: usize, bpc: u32, n: usize) {
    let mut bytes = Vec::new();
    let chroma = 2 * w.div_ceil(2) * h.div_ceil(2);
    for i in 0..n {
        let p = &planes[i % planes.len()];
        let mid = 1u16 << (bpc - 1);
        for &v in p.iter().chain(std::iter::repeat_n(&mid, chroma)) {
            if bpc > 8 {
                bytes.extend_from_slice(&v.to_le_bytes());
            } else {
                bytes.push(v as u8);
            }
        }
    }
    std::fs::write(path, bytes).expect("write temp yuv");
}

fn ours(refs: &[Vec<u16>], diss: &[Vec<u16>], w: usize, h: usize, bpc: u32, n: usize) -> f64 {
    let model = Arc::new(Model::load("vmaf_v0.6.1").expect("model"));
    let backend = CpuBackend::new(w, h, bpc, model.vif, model.adm).expect("backend");
    let mut scorer: Scorer<()> = Scorer::new(Box::new(backend), model, 1);
    let start = Instant::now();
    for i in 0..n {
        let r = LumaPlane::packed(&refs[i % refs.len()], w, h, bpc).unwrap();
        let d = LumaPlane::packed(&diss[i % diss.len()], w, h, bpc).unwrap();
        scorer.push(&r, &d, ()).expect("score");
    }
    scorer.finish().expect("finish");
    n as f64 / start.elapsed().as_secs_f64()
}

fn libvmaf(
    refs: &[Vec<u16>],
    diss: &[Vec<u16>],
    w: usize,
    h: usize,
    bpc: u32,
    n: usize,
) -> Option<f64> {
    let ff = Command::new("python3")
        .args([
            "-c",
            "import imageio_ffmpeg as f; print(f.get_ffmpeg_exe())",
        ])
        .output()
        .ok()?;
    let ff = String::from_utf8(ff.stdout).ok()?.trim().to_owned();
    if ff.is_empty() {
        return None;
    }
    let dir = std::env::temp_dir();
    let (rp, dp, log) = (
        dir.join("bench_ref.yuv"),
        dir.join("bench_dis.yuv"),
        dir.join("bench_libvmaf.json"),
    );
    write_yuv(&rp, refs, w, h, bpc, n);
    write_yuv(&dp, diss, w, h, bpc, n);
    let pix = if bpc > 8 { "yuv420p10le" } else { "yuv420p" };
    let size = format!("{w}x{h}");
    let raw = |p: &PathBuf| {
        vec![
            "-f".to_owned(),
            "rawvideo".into(),
            "-pix_fmt".into(),
            pix.into(),
            "-s".into(),
            size.clone(),
            "-i".into(),
            p.display().to_string(),
        ]
    };
    let status = Command::new(&ff)
        .args(["-hide_banner", "-loglevel", "error"])
        .args(raw(&dp))
        .args(raw(&rp))
        .arg("-lavfi")
        .arg(format!(
            "[0:v][1:v]libvmaf=n_threads=1:log_fmt=json:log_path={}",
            log.display()
        ))
        .args(["-f", "null", "-"])
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&log).ok()?).ok()?;
    v["fps"].as_f64()
}

fn main() {
    let args = Args::parse();
    let mut rows = Vec::new();
    for (bpc, tag) in [(8u32, "420p8"), (10, "420p10")] {
        let rp = args.data.join(format!("src01_ref_576x324_{tag}_3f.yuv"));
        let dp = args.data.join(format!("src01_dis_576x324_{tag}_3f.yuv"));
        let refs = read_luma(&rp, 576, 324, bpc, 3);
        let diss = read_luma(&dp, 576, 324, bpc, 3);
        for (w, h) in [(576usize, 324usize), (1920, 1080)] {
            let (r, d): (Vec<_>, Vec<_>) = if w == 576 {
                (refs.clone(), diss.clone())
            } else {
                (
                    refs.iter().map(|p| upscale(p, 576, 324, w, h)).collect(),
                    diss.iter().map(|p| upscale(p, 576, 324, w, h)).collect(),
                )
            };
            let n = if w == 576 {
                args.frames * 4
            } else {
                args.frames
            };
            let fps = ours(&r, &d, w, h, bpc, n);
            let lib = if args.libvmaf {
                libvmaf(&r, &d, w, h, bpc, n)
            } else {
                None
            };
            rows.push((w, h, bpc, n, fps, lib));
        }
    }
    println!("| size | bits | frames | vmafcompare CPU fps (1 thread) | libvmaf 3.2.0 fps (n_threads=1) | ratio |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (w, h, bpc, n, fps, lib) in rows {
        let (l, r) = match lib {
            Some(l) => (format!("{l:.1}"), format!("{:.2}x", l / fps)),
            None => ("-".into(), "-".into()),
        };
        println!("| {w}x{h} | {bpc} | {n} | {fps:.1} | {l} | {r} |");
    }
}
