//! libvmaf's float VIF and float motion (`features=float_vif,float_motion`) on the CPU
//! backend against libvmaf 3.2.0 (the oracle: the ffmpeg of the pip package imageio-ffmpeg),
//! per frame and per key (`vif_scale0..3`, `motion`, `motion2`, `motion3`) within 1e-4, on
//! Netflix's src01 pairs (576x324 at 8 and 10 bits, 160x90 8-bit over 48 frames) and on
//! copies the oracle's ffmpeg makes of them: 12-bit 4:2:0, 8-bit 4:2:2, 10-bit 4:4:4 and an
//! odd-sized 575x323 crop. The values are read from the element's log, so the names and the
//! log path are covered too.
//!
//! A model file with non-default options of both features (key suffixes included) is
//! checked against libvmaf with the same file. Where a CUDA GPU is usable (`gpu_tests`; the
//! GPU host runs it with `--include-ignored`), `backend=cuda` is checked against
//! `backend=cpu` on all of it.
//!
//! `cargo test --release --test float_vif -- --nocapture` prints the largest deviation per
//! key and format.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// Tolerance against libvmaf 3.2.0.
const TOL: f64 = 1e-4;

const KEYS: [&str; 7] = [
    "vif_scale0",
    "vif_scale1",
    "vif_scale2",
    "vif_scale3",
    "motion",
    "motion2",
    "motion3",
];

/// One content: a reference and a distorted raw file of one ffmpeg pixel format.
struct Content {
    tag: String,
    w: usize,
    h: usize,
    /// ffmpeg's pixel format.
    pix_fmt: &'static str,
    reference: PathBuf,
    distorted: PathBuf,
}

/// A `rawvideoparse` branch for a tightly packed planar file (ffmpeg's rawvideo layout).
fn branch(c: &Content, path: &Path, pad: &str) -> String {
    packed_raw_branch(path, c.w, c.h, c.pix_fmt, pad)
}

/// `src` (a raw file of `from` at `w` x `h`) converted by the oracle's ffmpeg with `vf` and
/// `pix_fmt`, made once per test process.
fn convert(src: &Path, from: &str, (w, h): (usize, usize), vf: &str, pix_fmt: &str) -> PathBuf {
    let name = format!(
        "fvif_{}_{}_{}.yuv",
        src.file_stem().and_then(|s| s.to_str()).unwrap_or("x"),
        vf.replace([':', '=', ','], "_"),
        pix_fmt
    );
    made(&name, |out| {
        let size = format!("{w}x{h}");
        let out = out.to_string_lossy();
        let mut args = vec!["-f", "rawvideo", "-pix_fmt", from, "-s", &size, "-i"];
        let src = src.to_string_lossy();
        args.push(&src);
        if !vf.is_empty() {
            args.extend(["-vf", vf]);
        }
        args.extend(["-pix_fmt", pix_fmt, "-f", "rawvideo", &out]);
        ffmpeg(&args);
    })
}

/// The contents: the src01 pairs as they are, and the converted copies.
fn contents() -> Vec<Content> {
    let pairs = reference_pairs();
    let mut out = Vec::new();
    for p in &pairs {
        let pix_fmt = if p.format == "I420" {
            "yuv420p"
        } else {
            "yuv420p10le"
        };
        out.push(Content {
            tag: format!("src01 {}x{} {pix_fmt}", p.width, p.height),
            w: p.width as usize,
            h: p.height as usize,
            pix_fmt,
            reference: p.reference.clone(),
            distorted: p.distorted.clone(),
        });
    }
    let p8 = &pairs[2];
    let p10 = &pairs[1];
    let size = (576, 324);
    for (src, from, vf, pix_fmt, (w, h)) in [
        (p10, "yuv420p10le", "", "yuv420p12le", size),
        (p8, "yuv420p", "", "yuv422p", size),
        (p10, "yuv420p10le", "", "yuv444p10le", size),
        (
            p8,
            "yuv420p",
            "format=yuv444p,crop=575:323:0:0",
            "yuv444p",
            (575, 323),
        ),
    ] {
        out.push(Content {
            tag: format!("src01 {w}x{h} {pix_fmt}"),
            w,
            h,
            pix_fmt,
            reference: convert(&src.reference, from, size, vf, pix_fmt),
            distorted: convert(&src.distorted, from, size, vf, pix_fmt),
        });
    }
    let (cr, cd) = carphone_pair();
    let decode = |src: &str, name: &str| {
        made(name, |out| {
            let out = out.to_string_lossy();
            ffmpeg(&[
                "-i",
                src,
                "-frames:v",
                "30",
                "-pix_fmt",
                "yuv420p",
                "-f",
                "rawvideo",
                &out,
            ]);
        })
    };
    out.push(Content {
        tag: "carphone 176x144 yuv420p".to_owned(),
        w: 176,
        h: 144,
        pix_fmt: "yuv420p",
        reference: decode(&cr, "fvif_carphone_ref.yuv"),
        distorted: decode(&cd, "fvif_carphone_dis.yuv"),
    });
    out
}

/// libvmaf's per-frame log of `features` for a content.
fn oracle(c: &Content, features: &str) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let log = temp_path(&format!(
        "fvif_oracle_{}_{}.json",
        c.tag.replace(' ', "_"),
        features.replace('|', "_")
    ));
    let size = format!("{}x{}", c.w, c.h);
    let filter = format!(
        "[0:v][1:v]libvmaf=log_fmt=json:log_path={}:feature={features}",
        log.display()
    );
    let status = Command::new(oracle_ffmpeg())
        .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
        .args(["-f", "rawvideo", "-pix_fmt", c.pix_fmt, "-s", &size, "-i"])
        .arg(&c.distorted)
        .args(["-f", "rawvideo", "-pix_fmt", c.pix_fmt, "-s", &size, "-i"])
        .arg(&c.reference)
        .args(["-lavfi", &filter, "-f", "null", "-"])
        .status()
        .expect("run the oracle ffmpeg");
    assert!(status.success(), "libvmaf failed on {}", c.tag);
    libvmaf_frames(&log)
}

/// The element's per-frame values for a content, `backend=cpu features=<features>`: from the
/// frame messages (full precision), each checked against the element's log (6 decimals).
fn ours(c: &Content, features: &str) -> Vec<std::collections::BTreeMap<String, f64>> {
    let log = temp_path(&format!("fvif_ours_{}.json", c.tag.replace(' ', "_")));
    let desc = format!(
        "vmafcompare name=cmp backend=cpu features={features} results-location=\"{}\" ! \
         fakesink {} {}",
        log.display(),
        branch(c, &c.reference, "reference"),
        branch(c, &c.distorted, "distorted"),
    );
    let out = run(&desc, LONG);
    assert!(out.errors.is_empty(), "{}: {:?}", c.tag, out.errors);
    let logged = libvmaf_frames(&log);
    assert_eq!(logged.len(), out.frames.len(), "{}: log frames", c.tag);
    out.frames
        .iter()
        .zip(&logged)
        .map(|(f, l)| {
            KEYS.iter()
                .map(|&k| {
                    let v = f
                        .get(k)
                        .unwrap_or_else(|| panic!("{}: {k} in the frame message", c.tag));
                    let in_log = l[k].as_f64().expect("in our log");
                    assert!(
                        (in_log - v).abs() <= 5e-7,
                        "{k}: log {in_log} vs message {v}"
                    );
                    (k.to_owned(), v)
                })
                .collect()
        })
        .collect()
}

/// Every key of every frame within 1e-4 of libvmaf 3.2.0, on every content.
#[test]
fn float_vif_and_float_motion_match_libvmaf_3_2_0() {
    let mut table = vec!["| content | frames | key | max abs deviation |".to_owned()];
    let mut worst = 0.0f64;
    for c in contents() {
        let theirs = oracle(&c, "name=float_vif|name=float_motion");
        let mine = ours(&c, "float_vif,float_motion");
        assert_eq!(theirs.len(), mine.len(), "{}: frame count", c.tag);
        for key in KEYS {
            let mut dmax = 0.0f64;
            for (i, (t, o)) in theirs.iter().zip(&mine).enumerate() {
                let t = t[key]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{key} in libvmaf's log"));
                let o = o[key];
                let d = (o - t).abs();
                assert!(d <= TOL, "{} frame {i}: {key} {o} vs libvmaf {t}", c.tag);
                dmax = dmax.max(d);
            }
            worst = worst.max(dmax);
            table.push(format!(
                "| {} | {} | {key} | {dmax:.2e} |",
                c.tag,
                mine.len()
            ));
        }
    }
    eprintln!("\n{}\n\nlargest: {worst:.2e}\n", table.join("\n"));
}

/// A VMAF model reading float VIF and float motion with options: libvmaf's `vmaf_v0.6.1neg`
/// with its VIF and motion names swapped for the float ones and `vif` / `motion` as their
/// options, written once per test process as `name`.
fn options_model(name: &str, vif: serde_json::Value, motion: serde_json::Value) -> PathBuf {
    made(name, |out| {
        let models = reference_dir().join("../models/vmaf_v0.6.1neg.json");
        let text = std::fs::read_to_string(&models).expect("read vmaf_v0.6.1neg.json");
        let mut m: serde_json::Value = serde_json::from_str(&text).expect("model JSON");
        let md = &mut m["model_dict"];
        let names: Vec<serde_json::Value> = md["feature_names"]
            .as_array()
            .expect("feature_names")
            .iter()
            .map(|n| {
                let n = n.as_str().expect("name");
                n.replace("VMAF_integer_feature_vif", "VMAF_feature_vif")
                    .replace("VMAF_integer_feature_motion2", "VMAF_feature_motion2")
                    .into()
            })
            .collect();
        md["feature_names"] = names.into();
        md["feature_opts_dicts"] = serde_json::json!([
            {"adm_enhn_gain_limit": 1.0}, motion, vif, vif, vif, vif
        ]);
        std::fs::write(out, m.to_string()).expect("write the model");
    })
}

/// The option sets checked: (model file name, VIF options, motion options). The first:
/// VIF gain limit 1, kernel scale 0.5, sigma_nsq 1.5, scale-2 floor 0.95; motion fps weight
/// 2, blend factor 0.5, offset 3, the 3-tap filter. Then each prescale method at another
/// factor (CPU only), with the unfiltered motion plus its halved scale (CPU only), the
/// zeroed motion, the fps weight 0 and a clip with a blend.
fn option_models() -> Vec<PathBuf> {
    use serde_json::json;
    [
        (
            "fvif_opts_a.json",
            json!({"vif_enhn_gain_limit": 1.0, "vif_kernelscale": 0.5,
                   "vif_sigma_nsq": 1.5, "vif_scale2_min_val": 0.95}),
            json!({"motion_fps_weight": 2.0, "motion_blend_factor": 0.5,
                   "motion_blend_offset": 3.0, "motion_filter_size": 3}),
        ),
        (
            "fvif_opts_b.json",
            json!({"vif_prescale": 0.5, "vif_prescale_method": "bilinear"}),
            json!({"motion_filter_size": 1, "motion_add_scale1": true}),
        ),
        (
            "fvif_opts_c.json",
            json!({"vif_prescale": 1.5, "vif_prescale_method": "bicubic",
                   "vif_skip_scale0": true}),
            json!({"motion_force_zero": true}),
        ),
        (
            "fvif_opts_d.json",
            json!({"vif_prescale": 0.75, "vif_prescale_method": "lanczos4"}),
            json!({"motion_fps_weight": 0.0}),
        ),
        (
            "fvif_opts_e.json",
            json!({"vif_prescale": 2.0}),
            json!({"motion_max_val": 2.5, "motion_blend_factor": 0.25}),
        ),
    ]
    .into_iter()
    .map(|(name, vif, motion)| options_model(name, vif, motion))
    .collect()
}

/// The options (and their key suffixes, `vif_scale0_egl_1_ks_0.5_s2miv_0.95_snsq_1.5`,
/// `motion2_mbf_0.5_mbo_3_mfs_3_mfw_2`, ...) through model files ([`option_models`]),
/// against libvmaf 3.2.0 with the same files: every key libvmaf logs (VMAF included) within
/// 1e-4.
#[test]
fn options_through_a_model_match_libvmaf_3_2_0() {
    let pairs = reference_pairs();
    let mut table = vec!["| content | key | max abs deviation |".to_owned()];
    let models = option_models();
    let mut runs = vec![(&models[0], &pairs[0]), (&models[0], &pairs[2])];
    runs.extend(models[1..].iter().map(|m| (m, &pairs[0])));
    let mut seen_first = false;
    for (model, p) in runs {
        let c = Content {
            tag: format!("src01 {}x{} options", p.width, p.height),
            w: p.width as usize,
            h: p.height as usize,
            pix_fmt: "yuv420p",
            reference: p.reference.clone(),
            distorted: p.distorted.clone(),
        };
        let stem = model.file_stem().and_then(|s| s.to_str()).unwrap_or("m");
        let log = temp_path(&format!("fvif_opts_oracle_{stem}_{}.json", c.w));
        let size = format!("{}x{}", c.w, c.h);
        let filter = format!(
            "[0:v][1:v]libvmaf=model=path={}:log_fmt=json:log_path={}",
            model.display(),
            log.display()
        );
        let status = Command::new(oracle_ffmpeg())
            .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
            .args(["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", &size, "-i"])
            .arg(&c.distorted)
            .args(["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", &size, "-i"])
            .arg(&c.reference)
            .args(["-lavfi", &filter, "-f", "null", "-"])
            .status()
            .expect("run the oracle ffmpeg");
        assert!(status.success(), "libvmaf failed with the options model");
        let theirs = libvmaf_frames(&log);
        let ours_log = temp_path(&format!("fvif_opts_ours_{stem}_{}.json", c.w));
        let desc = format!(
            "vmafcompare name=cmp backend=cpu model=\"{}\" results-location=\"{}\" ! fakesink {} {}",
            model.display(),
            ours_log.display(),
            branch(&c, &c.reference, "reference"),
            branch(&c, &c.distorted, "distorted"),
        );
        let out = run(&desc, LONG);
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert_eq!(out.frames.len(), theirs.len());
        let keys: Vec<String> = theirs[0].keys().cloned().collect();
        if !seen_first {
            assert!(keys
                .iter()
                .any(|k| k == "vif_scale0_egl_1_ks_0.5_s2miv_0.95_snsq_1.5"));
            assert!(keys
                .iter()
                .any(|k| k == "motion2_mbf_0.5_mbo_3_mfs_3_mfw_2"));
            seen_first = true;
        }
        for key in &keys {
            let mut dmax = 0.0f64;
            for (i, (t, o)) in theirs.iter().zip(&out.frames).enumerate() {
                let t = t[key].as_f64().expect("libvmaf value");
                let o = if key == "vmaf" {
                    o.vmaf
                } else {
                    o.get(key)
                        .unwrap_or_else(|| panic!("{key} in the frame message"))
                };
                let d = (o - t).abs();
                assert!(d <= TOL, "{} frame {i}: {key} {o} vs libvmaf {t}", c.tag);
                dmax = dmax.max(d);
            }
            if key.starts_with("vif_") || key.starts_with("motion") || key == "vmaf" {
                table.push(format!("| {} {stem} | {key} | {dmax:.2e} |", c.tag));
            }
        }
    }
    eprintln!("\n{}\n", table.join("\n"));
}

/// `backend=cuda` against `backend=cpu`: every key of every frame of every content (and of
/// the options model on the 576x324 pair) within 1e-5; prints the largest difference per
/// content.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn cuda_equals_cpu() {
    if gpu_device().is_none() {
        return;
    }
    let frames = |c: &Content, backend: &str, what: &str| {
        let desc = format!(
            "vmafcompare name=cmp backend={backend} {what} ! fakesink {} {}",
            branch(c, &c.reference, "reference"),
            branch(c, &c.distorted, "distorted"),
        );
        let out = run(&desc, LONG);
        assert!(
            out.errors.is_empty(),
            "{} {backend}: {:?}",
            c.tag,
            out.errors
        );
        assert_eq!(
            out.summary.as_ref().map(|s| s.backend.as_str()),
            Some(backend)
        );
        out.frames
    };
    let model = option_models().swap_remove(0);
    let with_model = format!("model=\"{}\"", model.display());
    let mut table = vec!["| content | frames | max abs cuda - cpu |".to_owned()];
    let mut worst = 0.0f64;
    for c in contents() {
        let mut runs = vec![("float_vif,float_motion", "features=float_vif,float_motion")];
        if c.w == 576 && c.pix_fmt == "yuv420p" {
            runs.push(("options model", with_model.as_str()));
        }
        for (label, what) in runs {
            let (cpu, gpu) = (frames(&c, "cpu", what), frames(&c, "cuda", what));
            assert_eq!(cpu.len(), gpu.len());
            let mut dmax = 0.0f64;
            for (i, (a, b)) in cpu.iter().zip(&gpu).enumerate() {
                for (k, v) in &a.metrics {
                    if !(k.starts_with("vif_") || k.starts_with("motion")) {
                        continue;
                    }
                    let g = b.get(k).unwrap_or_else(|| panic!("{k} on cuda"));
                    let d = (v - g).abs();
                    assert!(
                        d <= 1e-5,
                        "{} {label} frame {i}: {k} cpu {v} cuda {g}",
                        c.tag
                    );
                    dmax = dmax.max(d);
                }
            }
            worst = worst.max(dmax);
            table.push(format!(
                "| {} ({label}) | {} | {dmax:.2e} |",
                c.tag,
                cpu.len()
            ));
        }
    }
    eprintln!(
        "\n{}\n\nlargest cuda - cpu: {worst:.2e}\n",
        table.join("\n")
    );
}
