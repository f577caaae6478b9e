//! The element against `ffmpeg ... libvmaf` for every combination of full and limited range in
//! each position, same size and scaled, 8 and 10 bits, 4:2:0 and 4:4:4: every frame's VMAF,
//! PSNR (Y, Cb, Cr), float SSIM and CIEDE2000 within 1e-4, and the summary's range fields.
//!
//! Raw input stands for a decoder's output: 8-bit full range is `yuvj` for FFmpeg (`-pix_fmt
//! yuvj420p`), as the element takes raw input without an encoded upstream.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::common::*;
use super::{ff_range, FRAMES};
use gstvmafcompare::engine::scale::range::ColourRange;
use gstvmafcompare::engine::scale::ScaleMethod;

/// The scoring size; a scaled distorted stream is `SMALL`.
const SIZE: (usize, usize) = (320, 180);
const SMALL: (usize, usize) = (214, 120);
const FEATURES: &str = "psnr|name=float_ssim|name=ciede";

/// The distorted clip: the reference's frames blurred (made once per process).
fn distorted(pix_fmt: &str, (w, h): (usize, usize)) -> PathBuf {
    made(&format!("range_dis_{pix_fmt}_{w}x{h}.yuv"), |p| {
        ffmpeg(&[
            "-i",
            &bigbuckbunny(),
            "-frames:v",
            &FRAMES.to_string(),
            "-vf",
            &format!("gblur=sigma=1.2,noise=alls=6:allf=t,scale={w}:{h}:flags=bicubic"),
            "-pix_fmt",
            pix_fmt,
            "-f",
            "rawvideo",
            &p.to_string_lossy(),
        ])
    })
}

/// One input of a case.
struct Input {
    path: PathBuf,
    size: (usize, usize),
    range: ColourRange,
}

impl Input {
    /// ffmpeg's input options (8-bit full range as `yuvj`).
    fn ffmpeg(&self, pix_fmt: &str) -> Vec<String> {
        let fmt = if self.range == ColourRange::Full && !pix_fmt.ends_with("10le") {
            pix_fmt.replace("yuv", "yuvj")
        } else {
            pix_fmt.to_owned()
        };
        vec![
            "-f".into(),
            "rawvideo".into(),
            "-pix_fmt".into(),
            fmt,
            "-s".into(),
            format!("{}x{}", self.size.0, self.size.1),
            "-color_range".into(),
            ff_range(self.range).into(),
            "-i".into(),
            self.path.to_string_lossy().into_owned(),
        ]
    }

    /// The element's branch into `cmp.<pad>`, with the range in the caps' colorimetry.
    fn branch(&self, pix_fmt: &str, pad: &str) -> String {
        let colorimetry = match self.range {
            ColourRange::Full => "1:3:5:1",
            ColourRange::Limited => "2:3:5:1",
        };
        packed_raw_branch(&self.path, self.size.0, self.size.1, pix_fmt, pad).replacen(
            "rawvideoparse ",
            &format!("rawvideoparse colorimetry={colorimetry} "),
            1,
        )
    }
}

/// Per-frame metrics of a libvmaf-layout JSON log.
fn frames_of(path: &std::path::Path) -> Vec<BTreeMap<String, f64>> {
    libvmaf_frames(path)
        .into_iter()
        .map(|m| {
            m.into_iter()
                .filter_map(|(k, v)| Some((k, v.as_f64()?)))
                .collect()
        })
        .collect()
}

/// Runs one case; returns the failures and the pooled VMAF (ours, ffmpeg's).
fn case(pix_fmt: &str, dis: &Input, reference: &Input) -> (Vec<String>, (f64, f64), String) {
    let name = format!(
        "{pix_fmt}_{}_{}x{}_{}",
        dis.range, dis.size.0, dis.size.1, reference.range
    );
    let ff_log = temp_path(&format!("range_ff_{name}.json"));
    let graph = if dis.size != SIZE {
        format!(
            "[0:v]scale={}:{}:flags={}[d];[d][1:v]libvmaf=log_fmt=json:log_path={}:feature=name={FEATURES}",
            SIZE.0,
            SIZE.1,
            ScaleMethod::Bicubic.ffmpeg_flags(),
            ff_log.display()
        )
    } else {
        format!(
            "[0:v][1:v]libvmaf=log_fmt=json:log_path={}:feature=name={FEATURES}",
            ff_log.display()
        )
    };
    let mut args = dis.ffmpeg(pix_fmt);
    args.extend(reference.ffmpeg(pix_fmt));
    args.extend([
        "-lavfi".into(),
        graph,
        "-f".into(),
        "null".into(),
        "-".into(),
    ]);
    ffmpeg(&args);
    let our_log = temp_path(&format!("range_ours_{name}.json"));
    let out = run(
        &format!(
            "vmafcompare name=cmp backend=cpu threads=1 features=psnr,float_ssim,ciede \
             results-location=\"{}\" ! fakesink {} {}",
            our_log.display(),
            reference.branch(pix_fmt, "reference"),
            dis.branch(pix_fmt, "distorted"),
        ),
        Duration::from_secs(120),
    );
    let mut failures = Vec::new();
    if !out.errors.is_empty() {
        return (
            vec![format!("{name}: errors {:?}", out.errors)],
            (0.0, 0.0),
            String::new(),
        );
    }
    let (want, got) = (frames_of(&ff_log), frames_of(&our_log));
    if want.len() != FRAMES || got.len() != FRAMES {
        failures.push(format!(
            "{name}: frames {} ours, {} ffmpeg",
            got.len(),
            want.len()
        ));
    }
    for (f, (w, g)) in want.iter().zip(&got).enumerate() {
        for (k, wv) in w {
            match g.get(k) {
                None => failures.push(format!("{name}: frame {f}: {k} missing")),
                Some(gv) if (gv - wv).abs() > 1e-4 => {
                    failures.push(format!("{name}: frame {f}: {k} ours {gv} ffmpeg {wv}"))
                }
                _ => {}
            }
        }
    }
    let mean = |v: &[BTreeMap<String, f64>]| {
        v.iter().filter_map(|m| m.get("vmaf")).sum::<f64>() / v.len().max(1) as f64
    };
    let summary = out.summary.as_ref();
    let conversion = summary.map_or(String::new(), |s| s.range_conversion.clone());
    if let Some(s) = summary {
        if s.reference_range != reference.range.name() || s.distorted_range != dis.range.name() {
            failures.push(format!(
                "{name}: summary ranges {} / {}",
                s.reference_range, s.distorted_range
            ));
        }
    } else {
        failures.push(format!("{name}: no summary"));
    }
    let converted = conversion != "none";
    let warned = out.warnings.iter().any(|w| w.contains("range converted"));
    if converted != warned {
        failures.push(format!(
            "{name}: conversion {conversion:?} but warnings {:?}",
            out.warnings
        ));
    }
    (failures, (mean(&got), mean(&want)), conversion)
}

/// Every combination for one pixel format, same size and scaled.
fn all_combinations(pix_fmt: &str) {
    use ColourRange::{Full, Limited};
    let mut failures = Vec::new();
    let mut table = String::new();
    for size in [SIZE, SMALL] {
        for (d, r) in [
            (Full, Limited),
            (Limited, Full),
            (Full, Full),
            (Limited, Limited),
        ] {
            let dis = Input {
                path: distorted(pix_fmt, size),
                size,
                range: d,
            };
            let reference = Input {
                path: super::source(pix_fmt, SIZE),
                size: SIZE,
                range: r,
            };
            let (f, (ours, theirs), conv) = case(pix_fmt, &dis, &reference);
            table += &format!(
                "{pix_fmt} {d}{} / {r}: ours {ours:.4} ffmpeg {theirs:.4} ({conv})\n",
                if size == SIZE { "" } else { " (scaled)" }
            );
            failures.extend(f);
        }
    }
    eprintln!("{table}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ranges_8bit_420_match_ffmpeg_libvmaf() {
    init();
    all_combinations("yuv420p");
}

#[test]
fn ranges_8bit_444_match_ffmpeg_libvmaf() {
    init();
    all_combinations("yuv444p");
}

#[test]
fn ranges_10bit_420_match_ffmpeg_libvmaf() {
    init();
    all_combinations("yuv420p10le");
}

#[test]
fn ranges_10bit_444_match_ffmpeg_libvmaf() {
    init();
    all_combinations("yuv444p10le");
}
