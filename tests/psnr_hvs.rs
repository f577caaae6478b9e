//! `features=psnr_hvs` on the CPU backend against libvmaf 3.2.0 (the ffmpeg of the pip package
//! imageio-ffmpeg): `psnr_hvs_y`, `psnr_hvs_cb`, `psnr_hvs_cr` and `psnr_hvs`, every frame
//! within 1e-4 dB, on Netflix's src01 pairs (576x324 8- and 10-bit 4:2:0, 160x90 8-bit) and
//! on formats the oracle's ffmpeg makes from them: 12-bit 4:2:0, 4:2:2 and 4:4:4 at 8, 10 and
//! 12 bits, and 575x323 crops (odd sizes, whose subsampled chroma libvmaf rounds down).
//! Each pair goes through `vmafcompare backend=cpu features=psnr_hvs` (names, message, meta
//! and log), and the log is compared with the message. Also: identical frames give +inf
//! (`null` in the log, as libvmaf's), grey frames are refused.
//!
//! `cargo test --release --test psnr_hvs -- --nocapture` prints the largest deviation per
//! key and format.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Issue 31's tolerance against libvmaf 3.2.0, in dB.
const TOL: f64 = 1e-4;

const KEYS: [&str; 4] = ["psnr_hvs_y", "psnr_hvs_cb", "psnr_hvs_cr", "psnr_hvs"];

/// A reference / distorted pair of raw files as ffmpeg writes them (planes tightly packed).
struct Pair {
    tag: String,
    reference: PathBuf,
    distorted: PathBuf,
    w: usize,
    h: usize,
    /// ffmpeg's pixel format (`yuv422p10le`).
    pix_fmt: &'static str,
    frames: usize,
}

impl Pair {
    /// A `rawvideoparse` branch into pad `pad` reading `path` in ffmpeg's packed layout.
    fn branch(&self, path: &Path, pad: &str) -> String {
        packed_raw_branch(path, self.w, self.h, self.pix_fmt, pad)
    }
}

/// The oracle's ffmpeg converting the raw `src` (`w`x`h`, `from`) to `to`, cropped to
/// `crop` (or, larger than `src`, scaled to it with bicubic), written to the temporary file
/// `name` (made once per test process).
fn convert(
    src: &Path,
    (w, h): (usize, usize),
    from: &str,
    to: &str,
    crop: (usize, usize),
    name: &str,
) -> PathBuf {
    made(name, |out| {
        ffmpeg(&[
            "-f".to_owned(),
            "rawvideo".to_owned(),
            "-pix_fmt".to_owned(),
            from.to_owned(),
            "-s".to_owned(),
            format!("{w}x{h}"),
            "-i".to_owned(),
            src.display().to_string(),
            "-vf".to_owned(),
            if crop.0 > w {
                format!("scale={}:{}:flags=bicubic", crop.0, crop.1)
            } else {
                format!("crop={}:{}:0:0:exact=1", crop.0, crop.1)
            },
            "-pix_fmt".to_owned(),
            to.to_owned(),
            "-f".to_owned(),
            "rawvideo".to_owned(),
            out.display().to_string(),
        ])
    })
}

/// The pairs: Netflix's three as they are, and the others made from the 576x324 ones.
fn pairs() -> Vec<Pair> {
    let refs = reference_pairs();
    let mut out = Vec::new();
    for p in &refs {
        out.push(Pair {
            tag: format!("src01 {}x{} {}", p.width, p.height, p.format),
            reference: p.reference.clone(),
            distorted: p.distorted.clone(),
            w: p.width as usize,
            h: p.height as usize,
            pix_fmt: if p.format == "I420" {
                "yuv420p"
            } else {
                "yuv420p10le"
            },
            frames: p.frames,
        });
    }
    let (p10, p8) = (&refs[1], &refs[2]);
    let made_from = [
        (p8, "yuv420p", "yuv422p", (576, 324)),
        (p8, "yuv420p", "yuv444p", (576, 324)),
        (p10, "yuv420p10le", "yuv422p10le", (576, 324)),
        (p10, "yuv420p10le", "yuv444p10le", (576, 324)),
        (p10, "yuv420p10le", "yuv420p12le", (576, 324)),
        (p10, "yuv420p10le", "yuv422p12le", (576, 324)),
        (p10, "yuv420p10le", "yuv444p12le", (576, 324)),
        (p8, "yuv420p", "yuv420p", (575, 323)),
        (p10, "yuv420p10le", "yuv422p10le", (575, 323)),
        (p10, "yuv420p10le", "yuv444p12le", (573, 321)),
        // Where libvmaf's running float sum over a plane strays ~2e-3 dB from the exact sum.
        (p8, "yuv420p", "yuv420p", (1920, 1080)),
    ];
    for (src, from, to, (w, h)) in made_from {
        let name = |side: &str| format!("psnr_hvs_{side}_{w}x{h}_{to}.yuv");
        let size = (src.width as usize, src.height as usize);
        out.push(Pair {
            tag: format!("src01 {w}x{h} {to}"),
            reference: convert(&src.reference, size, from, to, (w, h), &name("ref")),
            distorted: convert(&src.distorted, size, from, to, (w, h), &name("dis")),
            w,
            h,
            pix_fmt: to,
            frames: src.frames,
        });
    }
    out
}

/// libvmaf 3.2.0's per-frame values of `psnr_hvs` for `p` (distorted first, as the filter
/// takes them).
fn libvmaf(p: &Pair) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let log = temp_path(&format!("{}_libvmaf.json", p.tag.replace(' ', "_")));
    let input = |path: &Path| {
        vec![
            "-f".to_owned(),
            "rawvideo".to_owned(),
            "-pix_fmt".to_owned(),
            p.pix_fmt.to_owned(),
            "-s".to_owned(),
            format!("{}x{}", p.w, p.h),
            "-i".to_owned(),
            path.display().to_string(),
        ]
    };
    let mut args = input(&p.distorted);
    args.extend(input(&p.reference));
    args.extend([
        "-lavfi".to_owned(),
        format!(
            "[0:v][1:v]libvmaf=log_fmt=json:log_path={}:feature=name=psnr_hvs",
            log.display()
        ),
        "-f".to_owned(),
        "null".to_owned(),
        "-".to_owned(),
    ]);
    ffmpeg(&args);
    libvmaf_frames(&log)
}

/// Ours for `p`: the frame messages, the metas and the log.
fn ours(
    p: &Pair,
    reference: &Path,
    distorted: &Path,
) -> (RunOutput, Vec<serde_json::Map<String, serde_json::Value>>) {
    let log = temp_path(&format!("{}_ours.json", p.tag.replace(' ', "_")));
    let desc = format!(
        "vmafcompare name=cmp backend=cpu features=psnr_hvs results-location=\"{}\" ! appsink name=out sync=false {} {}",
        log.display(),
        p.branch(reference, "reference"),
        p.branch(distorted, "distorted"),
    );
    let out = run(&desc, LONG);
    assert!(out.errors.is_empty(), "{}: {:?}", p.tag, out.errors);
    let logged = libvmaf_frames(&log);
    (out, logged)
}

#[test]
fn psnr_hvs_matches_libvmaf_3_2_0() {
    let mut table =
        vec!["| content | frames | psnr_hvs_y | psnr_hvs_cb | psnr_hvs_cr | psnr_hvs |".to_owned()];
    let mut worst = 0.0f64;
    for p in pairs() {
        let theirs = libvmaf(&p);
        let (out, logged) = ours(&p, &p.reference, &p.distorted);
        assert_eq!(theirs.len(), p.frames, "{}: libvmaf's frames", p.tag);
        assert_eq!(out.frames.len(), p.frames, "{}: our frames", p.tag);
        assert_eq!(out.metas.len(), p.frames);
        assert_eq!(logged.len(), p.frames);
        let mut row = format!("| {} | {} |", p.tag, p.frames);
        for key in KEYS {
            let mut dmax = 0.0f64;
            for (i, t) in theirs.iter().enumerate() {
                let t = t[key]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{}: {key} in libvmaf's log", p.tag));
                let o = out.frames[i]
                    .get(key)
                    .unwrap_or_else(|| panic!("{}: {key} in the frame message", p.tag));
                assert_eq!(out.metas[i].get(key), Some(o), "{key}: meta = message");
                let l = logged[i][key].as_f64().expect("in our log");
                assert!((l - o).abs() <= 5e-7, "{key}: log {l} vs message {o}");
                let d = (o - t).abs();
                assert!(d <= TOL, "{} frame {i}: {key} {o} vs libvmaf {t}", p.tag);
                dmax = dmax.max(d);
            }
            worst = worst.max(dmax);
            row.push_str(&format!(" {dmax:.1e} |"));
        }
        table.push(row);
        // After VMAF's features, in libvmaf's order.
        let names: Vec<&str> = out.frames[0]
            .metrics
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        let at = names
            .iter()
            .position(|n| *n == "psnr_hvs_y")
            .expect("psnr_hvs_y");
        assert_eq!(&names[at..at + 4], &KEYS);
    }
    eprintln!("\nmax |ours - libvmaf 3.2.0| per frame, dB (libvmaf's log has 6 decimals):\n{}\nworst {worst:.1e}\n", table.join("\n"));
}

/// A frame against itself: every key is +inf (libvmaf's score is 0), which the log writes as
/// `null`, as libvmaf's does.
#[test]
fn identical_frames_give_infinity() {
    let refs = reference_pairs();
    let p = &refs[0];
    let pair = Pair {
        tag: "src01 160x90 identical".to_owned(),
        reference: p.reference.clone(),
        distorted: p.reference.clone(),
        w: 160,
        h: 90,
        pix_fmt: "yuv420p",
        frames: p.frames,
    };
    let (out, logged) = ours(&pair, &pair.reference, &pair.distorted);
    assert_eq!(out.frames.len(), p.frames);
    for key in KEYS {
        assert_eq!(out.frames[0].get(key), Some(f64::INFINITY), "{key}");
        assert!(logged[0][key].is_null(), "{key} is null in the log");
    }
}

/// Grey frames: libvmaf's psnr_hvs refuses YUV400; so does the element, with an error naming
/// the feature and why.
#[test]
fn grey_frames_are_refused() {
    let p = &reference_pairs()[0];
    let branch = |path: &Path, pad: &str| {
        format!(
            "filesrc location=\"{}\" ! rawvideoparse width=160 height=90 format=gray8 framerate=25/1 frame-size={} ! cmp.{pad}",
            path.display(),
            160 * 90 * 3 / 2
        )
    };
    let desc = format!(
        "vmafcompare name=cmp backend=cpu features=psnr_hvs ! appsink name=out sync=false {} {}",
        branch(&p.reference, "reference"),
        branch(&p.distorted, "distorted"),
    );
    let out = run(&desc, LONG);
    assert!(out.frames.is_empty());
    let text = out.errors.join("\n");
    assert!(
        text.contains("psnr_hvs: needs frames with chroma planes"),
        "{text}"
    );
}
