//! Real content in libvmaf's pixel formats (8/10/12 bits; 4:2:0, 4:2:2, 4:4:4; an odd-sized
//! crop) made once by the oracle's ffmpeg from Netflix's src01 pairs, scored by
//! `vmafcompare` (raw files through `rawvideoparse`, tightly packed as ffmpeg writes them) and
//! by libvmaf 3.2.0 (the ffmpeg of imageio-ffmpeg) with the same extractors; used by
//! tests/ciede.rs and tests/float_simple.rs.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;

/// One content: real frames at one geometry and pixel format, as raw files.
pub struct Content {
    pub tag: String,
    pub width: usize,
    pub height: usize,
    /// ffmpeg's pixel format (`yuv420p10le`).
    pub pix_fmt: &'static str,
    pub reference: PathBuf,
    pub distorted: PathBuf,
    pub frames: usize,
}

/// The contents, from src01 576x324 8-bit (3 frames): 4:2:0, 4:2:2 and 4:4:4 at 8 bits; at
/// 10 and 12 bits (4:2:0 10-bit, 4:2:2 10-bit, 4:2:0 12-bit, 4:4:4 12-bit) a bicubic resize
/// of a crop of it, so that the low bits carry content (the 10-bit src01 file is the 8-bit
/// one shifted up); and odd sizes (575x324 4:2:0 8-bit, 575x323 4:2:2 10-bit and 4:4:4
/// 12-bit).
pub fn contents() -> Vec<Content> {
    let pairs = reference_pairs();
    let p = pairs
        .iter()
        .find(|p| p.width == 576 && p.format == "I420")
        .expect("src01 576x324 8-bit pair");
    // (pixel format, size, resized to a higher depth)
    let cases: &[(&str, (usize, usize), bool)] = &[
        ("yuv420p", (576, 324), false),
        ("yuv422p", (576, 324), false),
        ("yuv444p", (576, 324), false),
        ("yuv420p10le", (576, 324), true),
        ("yuv422p10le", (576, 324), true),
        ("yuv420p12le", (576, 324), true),
        ("yuv444p12le", (576, 324), true),
        // An odd 4:2:0 height makes libvmaf's ciede read past its chroma buffer on the last
        // row (its scores then vary from run to run): odd width only there.
        ("yuv420p", (575, 324), false),
        ("yuv422p10le", (575, 323), true),
        ("yuv444p12le", (575, 323), true),
    ];
    let mut out = Vec::new();
    for &(pix_fmt, (w, h), resize) in cases {
        let tag = format!("{w}x{h} {pix_fmt}");
        let filter = if resize {
            format!("crop=570:320:3:2,scale={w}:{h}:flags=bicubic,format={pix_fmt}")
        } else if (w, h) != (576, 324) {
            // ffmpeg's crop rounds odd sizes of subsampled formats down to even: crop at
            // 4:4:4, then subsample (chroma sizes round up).
            format!("format=yuv444p,crop={w}:{h}:0:0,format={pix_fmt}")
        } else {
            format!("format={pix_fmt}")
        };
        let make = |src: &Path, which: &str| {
            made(&format!("src01_{which}_{w}x{h}_{pix_fmt}.yuv"), |dst| {
                ffmpeg(&[
                    "-f",
                    "rawvideo",
                    "-pix_fmt",
                    "yuv420p",
                    "-s",
                    "576x324",
                    "-i",
                    &src.display().to_string(),
                    "-vf",
                    &filter,
                    "-f",
                    "rawvideo",
                    &dst.display().to_string(),
                ]);
            })
        };
        out.push(Content {
            tag,
            width: w,
            height: h,
            pix_fmt,
            reference: make(&p.reference, "ref"),
            distorted: make(&p.distorted, "dis"),
            frames: p.frames,
        });
    }
    out
}

/// A `rawvideoparse` branch reading `path` (ffmpeg's tightly packed layout) into pad `pad`.
fn branch(c: &Content, path: &Path, pad: &str) -> String {
    packed_raw_branch(path, c.width, c.height, c.pix_fmt, pad)
}

/// Per-frame values of `keys`: vmafcompare (`backend`, `features`), read from its log.
pub fn ours(
    c: &Content,
    features: &str,
    backend: &str,
    keys: &[&str],
) -> Result<Vec<BTreeMap<String, f64>>, String> {
    let log = temp_path(&format!(
        "ours_{backend}_{}_{}_{}x{}_{}.json",
        features.replace(',', "+"),
        c.pix_fmt,
        c.width,
        c.height,
        c.frames
    ));
    let desc = format!(
        "vmafcompare name=cmp backend={backend} features=\"{features}\" results-location=\"{}\" \
         ! fakesink {} {}",
        log.display(),
        branch(c, &c.reference, "reference"),
        branch(c, &c.distorted, "distorted"),
    );
    let out = run(&desc, LONG);
    if let Some(e) = out.errors.first() {
        return Err(e.clone());
    }
    assert_eq!(out.frames.len(), c.frames, "{}: frames scored", c.tag);
    Ok(pick(&libvmaf_frames(&log), keys, &c.tag))
}

/// Per-frame values of `keys`: libvmaf 3.2.0 (the oracle's ffmpeg) with `feature=name=..`
/// for each extractor of `features` (comma-separated).
pub fn libvmaf(c: &Content, features: &str, keys: &[&str]) -> Vec<BTreeMap<String, f64>> {
    let log = temp_path(&format!(
        "libvmaf_{}_{}_{}x{}.json",
        features.replace(',', "+"),
        c.pix_fmt,
        c.width,
        c.height
    ));
    let size = format!("{}x{}", c.width, c.height);
    let names: Vec<String> = features.split(',').map(|f| format!("name={f}")).collect();
    let input = |p: &Path| -> Vec<String> {
        ["-f", "rawvideo", "-pix_fmt", c.pix_fmt, "-s", &size, "-i"]
            .iter()
            .map(|s| (*s).to_owned())
            .chain([p.display().to_string()])
            .collect()
    };
    let mut args = input(&c.distorted);
    args.extend(input(&c.reference));
    args.extend([
        "-lavfi".to_owned(),
        format!(
            "[0:v][1:v]libvmaf=log_fmt=json:log_path={}:feature={}",
            log.display(),
            names.join("|")
        ),
        "-f".to_owned(),
        "null".to_owned(),
        "-".to_owned(),
    ]);
    ffmpeg(&args);
    pick(&libvmaf_frames(&log), keys, &c.tag)
}

fn pick(
    frames: &[serde_json::Map<String, serde_json::Value>],
    keys: &[&str],
    tag: &str,
) -> Vec<BTreeMap<String, f64>> {
    frames
        .iter()
        .map(|m| {
            keys.iter()
                .map(|k| {
                    let v = m
                        .get(*k)
                        .and_then(|v| v.as_f64())
                        .unwrap_or_else(|| panic!("{tag}: {k} missing or not a number"));
                    ((*k).to_owned(), v)
                })
                .collect()
        })
        .collect()
}

/// The largest absolute difference of each key over the frames of `a` and `b`.
pub fn max_diff(
    a: &[BTreeMap<String, f64>],
    b: &[BTreeMap<String, f64>],
    keys: &[&str],
) -> Vec<f64> {
    assert_eq!(a.len(), b.len(), "frame counts");
    keys.iter()
        .map(|k| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x[*k] - y[*k]).abs())
                .fold(0.0, f64::max)
        })
        .collect()
}

/// Scores every content with `features` on the CPU and libvmaf; prints the table of the
/// largest difference per key and content; asserts every key of every frame within `tol`.
pub fn against_libvmaf(features: &str, keys: &[&str], tol: f64) {
    let mut table = vec![format!("| content | {} |", keys.join(" | "))];
    let mut failures = Vec::new();
    for c in contents() {
        let theirs = libvmaf(&c, features, keys);
        let mine = ours(&c, features, "cpu", keys).unwrap_or_else(|e| panic!("{}: {e}", c.tag));
        let d = max_diff(&mine, &theirs, keys);
        table.push(format!(
            "| {} | {} |",
            c.tag,
            d.iter()
                .map(|x| format!("{x:.1e}"))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        for (k, x) in keys.iter().zip(&d) {
            if *x > tol {
                failures.push(format!(
                    "{}: {k} differs by {x:e} (ours {:?}, libvmaf {:?})",
                    c.tag,
                    mine.iter().map(|m| m[*k]).collect::<Vec<_>>(),
                    theirs.iter().map(|m| m[*k]).collect::<Vec<_>>()
                ));
            }
        }
    }
    eprintln!(
        "\n{features} against libvmaf 3.2.0 (max |difference| per frame):\n{}\n",
        table.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
