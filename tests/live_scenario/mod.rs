//! The live ladder scenario of tests/live_ladder.rs (CPU) and tests/gpu_live_ladder.rs
//! (CUDA): its content, feeds, pipeline, run and checks (see tests/live_ladder.rs for what it
//! is and the bar it sets).

#[path = "../common/mod.rs"]
pub(crate) mod common;

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use gst::prelude::*;
use gstvmafcompare::vmafcompare::{
    FrameMessage, OffsetMessage, SummaryMessage, WindowStats, ALERT_MESSAGE_NAME,
    FRAME_MESSAGE_NAME, OFFSET_MESSAGE_NAME, SUMMARY_MESSAGE_NAME,
};

/// Frame duration: 25 fps.
pub const FRAME_NS: u64 = 40_000_000;
/// Reference frames.
pub const FRAMES: usize = 100;
/// Frames `late` trails the reference by (200 ms at 25 fps: round(0.2 s x 25)).
pub const LEAD: usize = 5;
/// Reference frames `stall` never sends (1 s).
pub const GAP: Range<usize> = 50..75;
/// Reference size.
pub const REFERENCE: (usize, usize) = (640, 360);
/// `window-size`.
pub const WINDOW: usize = 5;
/// `alert-hysteresis`.
pub const HYSTERESIS: f64 = 1.0;
/// `align-max-offset`.
pub const MAX_OFFSET: usize = 8;
/// How long a live run may take (5 s of video; the rest is slack for a slow machine).
pub const LIVE_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Steady,
    Late,
    Stall,
}

/// One rendition of the ladder: what it does, its pad, label (also its `appsrc`'s name),
/// size and libx264 bitrate.
#[derive(Clone, Copy, Debug)]
pub struct Rendition {
    pub role: Role,
    pub pad: &'static str,
    pub label: &'static str,
    pub size: (usize, usize),
    pub kbps: u32,
}

pub const RENDITIONS: [Rendition; 3] = [
    Rendition {
        role: Role::Steady,
        pad: "distorted_1",
        label: "steady",
        size: (320, 180),
        kbps: 120,
    },
    Rendition {
        role: Role::Late,
        pad: "distorted_2",
        label: "late",
        size: (384, 216),
        kbps: 200,
    },
    Rendition {
        role: Role::Stall,
        pad: "distorted_3",
        label: "stall",
        size: (480, 270),
        kbps: 300,
    },
];

pub fn rendition(role: Role) -> &'static Rendition {
    RENDITIONS.iter().find(|r| r.role == role).expect("role")
}

/// Bytes of one packed 8-bit 4:2:0 frame.
pub fn frame_bytes((w, h): (usize, usize)) -> usize {
    w * h + 2 * w.div_ceil(2) * h.div_ceil(2)
}

/// The oracle's ffmpeg reading the first `LEAD + FRAMES` frames of the clip with `vf`
/// applied, writing `out` (raw unless `codec` args are given).
fn ffmpeg_source(vf: &str, codec: &[&str], out: &Path) {
    let src = bigbuckbunny();
    let n = (LEAD + FRAMES).to_string();
    let mut args: Vec<&str> = vec!["-i", &src, "-an", "-frames:v", &n, "-vf", vf];
    args.extend_from_slice(&["-pix_fmt", "yuv420p"]);
    if codec.is_empty() {
        args.extend_from_slice(&["-f", "rawvideo"]);
    } else {
        args.extend_from_slice(codec);
    }
    args.push(out.to_str().expect("utf-8 path"));
    ffmpeg(&args);
}

fn scale_filter((w, h): (usize, usize)) -> String {
    format!("scale={w}:{h}:flags=lanczos+accurate_rnd+full_chroma_int")
}

/// Frames `range` of the raw file `src` (frames of `size`), written once to `name`.
fn slice(name: &str, src: &Path, size: (usize, usize), range: Range<usize>) -> PathBuf {
    made(name, |out| {
        let data = std::fs::read(src).unwrap_or_else(|e| panic!("read {}: {e}", src.display()));
        let n = frame_bytes(size);
        assert!(
            data.len() >= range.end * n,
            "{} has {} frames, {} needed",
            src.display(),
            data.len() / n,
            range.end
        );
        std::fs::write(out, &data[range.start * n..range.end * n]).expect("write slice");
    })
}

/// All `LEAD + FRAMES` source frames at the reference size, pristine.
fn source_file() -> PathBuf {
    let (w, h) = REFERENCE;
    made(&format!("live_ladder_src_{w}x{h}.yuv"), |out| {
        ffmpeg_source(&scale_filter(REFERENCE), &[], out)
    })
}

/// The reference: source frames `LEAD..LEAD + FRAMES`.
pub fn reference_file() -> PathBuf {
    let src = source_file();
    slice(
        "live_ladder_reference.yuv",
        &src,
        REFERENCE,
        LEAD..LEAD + FRAMES,
    )
}

/// All `LEAD + FRAMES` source frames of rendition `r`: scaled, libx264 at its bitrate,
/// decoded to raw.
pub fn rendition_file(r: &Rendition) -> PathBuf {
    let (w, h) = r.size;
    let name = format!("live_ladder_{w}x{h}_{}k", r.kbps);
    made(&format!("{name}.yuv"), |out| {
        let mkv = temp_path(&format!("{name}.mkv"));
        let kbps = format!("{}k", r.kbps);
        ffmpeg_source(
            &scale_filter(r.size),
            &["-c:v", "libx264", "-preset", "veryfast", "-b:v", &kbps],
            &mkv,
        );
        ffmpeg(&[
            "-i",
            mkv.to_str().unwrap(),
            "-pix_fmt",
            "yuv420p",
            "-f",
            "rawvideo",
            out.to_str().unwrap(),
        ]);
    })
}

/// Rendition `r`'s frames in step with the reference (source frames `LEAD..LEAD + FRAMES`):
/// what a non-live pair scores it against.
pub fn aligned_file(r: &Rendition) -> PathBuf {
    let src = rendition_file(r);
    slice(
        &format!("live_ladder_{}_aligned.yuv", r.label),
        &src,
        r.size,
        LEAD..LEAD + FRAMES,
    )
}

/// The frames of a raw file of `size`.
fn read_frames(path: &Path, size: (usize, usize)) -> Vec<Vec<u8>> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    data.chunks_exact(frame_bytes(size))
        .map(<[u8]>::to_vec)
        .collect()
}

/// The caps of a 25 fps I420 stream of `size`; asserts that GStreamer's default layout of
/// it is ffmpeg's packed one (no row padding at these sizes).
pub fn caps_of((w, h): (usize, usize)) -> gst::Caps {
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, w as u32, h as u32)
        .fps(gst::Fraction::new(25, 1))
        .build()
        .expect("video info");
    assert_eq!(info.size(), frame_bytes((w, h)), "{w}x{h}: padded layout");
    info.to_caps().expect("caps")
}

/// One live source's frames: `(frame number on the 25 fps clock, picture)`.
struct Feed {
    name: &'static str,
    caps: gst::Caps,
    frames: Vec<(usize, Vec<u8>)>,
}

/// The four feeds of the scenario (see the file's doc).
fn feeds() -> Vec<Feed> {
    init();
    let reference = read_frames(&reference_file(), REFERENCE);
    assert_eq!(reference.len(), FRAMES);
    let mut feeds = vec![Feed {
        name: "reference",
        caps: caps_of(REFERENCE),
        frames: reference.into_iter().enumerate().collect(),
    }];
    for r in &RENDITIONS {
        let all = read_frames(&rendition_file(r), r.size);
        assert_eq!(all.len(), LEAD + FRAMES, "{}", r.label);
        let frames: Vec<(usize, Vec<u8>)> = match r.role {
            // Source frame LEAD + i at reference frame i's time.
            Role::Steady => all.into_iter().skip(LEAD).enumerate().collect(),
            // Source frame j at time j: each picture LEAD frames after the reference's.
            Role::Late => all.into_iter().enumerate().collect(),
            Role::Stall => all
                .into_iter()
                .skip(LEAD)
                .enumerate()
                .filter(|(i, _)| !GAP.contains(i))
                .collect(),
        };
        feeds.push(Feed {
            name: r.label,
            caps: caps_of(r.size),
            frames,
        });
    }
    feeds
}

/// A `vmafcompare-offset` as posted: its rendition and values.
#[derive(Debug, Clone)]
pub struct Offset {
    pub pad: Option<String>,
    pub label: Option<String>,
    pub message: OffsetMessage,
}

/// A `vmafcompare-alert` as posted, read field by field (`pad`, `label` and `reason` are
/// the ladder's fields).
#[derive(Debug, Clone)]
pub struct Alert {
    pub pad: Option<String>,
    pub label: Option<String>,
    pub reason: Option<String>,
    pub below: Option<bool>,
    pub index: Option<u64>,
    /// `running-time` (ns) of the frame that changed the state.
    pub running_time: Option<u64>,
    /// The structure as text, for failure messages.
    pub text: String,
}

impl Alert {
    fn read(s: &gst::StructureRef) -> Self {
        Self {
            pad: s.get::<String>("pad").ok(),
            label: s.get::<String>("label").ok(),
            reason: s.get::<String>("reason").ok(),
            below: s.get::<bool>("below").ok(),
            index: s.get::<u64>("index").ok(),
            running_time: s
                .get::<Option<gst::ClockTime>>("running-time")
                .ok()
                .flatten()
                .map(gst::ClockTime::nseconds),
            text: s.to_string(),
        }
    }
}

/// What a live ladder run posted.
#[derive(Debug, Default)]
pub struct Live {
    pub frames: Vec<FrameMessage>,
    pub summaries: Vec<SummaryMessage>,
    pub offsets: Vec<Offset>,
    pub alerts: Vec<Alert>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    /// When each of `frames` was read off the bus, from PLAYING.
    pub frame_at: Vec<Duration>,
    /// When `stall`'s first frame after its gap was pushed, from PLAYING.
    pub resumed_at: Option<Duration>,
}

impl Live {
    /// Rendition `r`'s frame messages, in order.
    pub fn of(&self, r: &Rendition) -> Vec<&FrameMessage> {
        self.frames
            .iter()
            .filter(|f| f.pad.as_deref() == Some(r.pad))
            .collect()
    }

    pub fn summary(&self, r: &Rendition) -> &SummaryMessage {
        let mut s = self
            .summaries
            .iter()
            .filter(|s| s.pad.as_deref() == Some(r.pad));
        let first = s
            .next()
            .unwrap_or_else(|| panic!("no summary for {}: {:?}", r.pad, self.summaries));
        assert!(s.next().is_none(), "two summaries for {}", r.pad);
        first
    }
}

/// The live ladder's pipeline: four live `appsrc`s into one element scoring on `backend`.
/// The aggregator's `latency` gives 100 ms of slack on top of the element's own (a busy
/// machine's scheduling), well under the 1 s stall.
pub fn live_desc(backend: &str, threshold: f64) -> String {
    let mut desc = format!(
        "vmafcompare name=cmp backend={backend} latency=100000000 auto-align=true \
         align-max-offset={MAX_OFFSET} on-full=block window-size={WINDOW} \
         alert-threshold={threshold} alert-hysteresis={HYSTERESIS}"
    );
    for r in &RENDITIONS {
        desc += &format!(" {}::label={}", r.pad, r.label);
    }
    desc += " ! fakesink sync=false async=false \
             appsrc name=reference is-live=true format=time ! cmp.reference";
    for r in &RENDITIONS {
        desc += &format!(
            " appsrc name={} is-live=true format=time ! cmp.{}",
            r.label, r.pad
        );
    }
    desc
}

/// Sleeps until `pipeline`'s running time reaches `t` (or `stop`).
fn wait_until(pipeline: &gst::Pipeline, t: gst::ClockTime, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        match pipeline.current_running_time() {
            Some(now) if now >= t => return,
            Some(now) => std::thread::sleep(
                Duration::from_nanos((t - now).nseconds()).min(Duration::from_millis(20)),
            ),
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// Runs the live ladder on `backend`: pushes every feed in real time on the pipeline clock
/// (each stream's end of stream after its last frame) while reading the bus to EOS or
/// error. Latency messages are answered as an application does (`recalculate_latency`).
pub fn run_live(backend: &str, threshold: f64) -> Live {
    let feeds = feeds();
    let desc = live_desc(backend, threshold);
    let pipeline = gst::parse::launch(&desc)
        .unwrap_or_else(|e| panic!("cannot build {desc}: {e}"))
        .downcast::<gst::Pipeline>()
        .expect("pipeline");
    let srcs: Vec<gst_app::AppSrc> = feeds
        .iter()
        .map(|f| appsrc(&pipeline, f.name, &f.caps))
        .collect();
    let bus = pipeline.bus().expect("bus");
    pipeline
        .set_state(gst::State::Playing)
        .expect("the pipeline plays");
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let mut out = Live::default();
    std::thread::scope(|scope| {
        let pusher = scope.spawn(|| {
            let mut resumed = None;
            let ticks = feeds.iter().filter_map(|f| f.frames.last()).map(|l| l.0);
            let ticks = ticks.max().unwrap_or(0) + 1;
            let mut next = vec![0usize; feeds.len()];
            let mut feeds: Vec<Feed> = feeds;
            for tick in 0..ticks {
                let pts = gst::ClockTime::from_nseconds(tick as u64 * FRAME_NS);
                wait_until(&pipeline, pts, &stop);
                if stop.load(Ordering::SeqCst) {
                    return resumed;
                }
                for (k, (feed, src)) in feeds.iter_mut().zip(&srcs).enumerate() {
                    let Some((t, _)) = feed.frames.get(next[k]) else {
                        continue;
                    };
                    if *t != tick {
                        continue;
                    }
                    if feed.name == rendition(Role::Stall).label && tick == GAP.end {
                        resumed = Some(started.elapsed());
                    }
                    let picture = std::mem::take(&mut feed.frames[next[k]].1);
                    next[k] += 1;
                    let mut b = gst::Buffer::from_mut_slice(picture);
                    let m = b.get_mut().expect("writable");
                    m.set_pts(pts);
                    m.set_duration(gst::ClockTime::from_nseconds(FRAME_NS));
                    if src.push_buffer(b).is_err() {
                        return resumed;
                    }
                    if next[k] == feed.frames.len() {
                        let _ = src.end_of_stream();
                    }
                }
            }
            resumed
        });
        let deadline = Instant::now() + LIVE_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                out.errors.push("timeout".into());
                break;
            }
            let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(100)) else {
                continue;
            };
            match msg.view() {
                gst::MessageView::Eos(_) => break,
                gst::MessageView::Error(e) => {
                    out.errors.push(format!("{} ({:?})", e.error(), e.debug()));
                    break;
                }
                gst::MessageView::Warning(w) => {
                    out.warnings
                        .push(format!("{} ({:?})", w.error(), w.debug()))
                }
                gst::MessageView::Latency(_) => {
                    let _ = pipeline.recalculate_latency();
                }
                gst::MessageView::Element(e) => {
                    let Some(s) = e.structure() else { continue };
                    match s.name().as_str() {
                        FRAME_MESSAGE_NAME => {
                            out.frames
                                .push(FrameMessage::try_from(s).expect("frame message parses"));
                            out.frame_at.push(started.elapsed());
                        }
                        SUMMARY_MESSAGE_NAME => out
                            .summaries
                            .push(SummaryMessage::try_from(s).expect("summary parses")),
                        OFFSET_MESSAGE_NAME => out.offsets.push(Offset {
                            pad: s.get::<String>("pad").ok(),
                            label: s.get::<String>("label").ok(),
                            message: OffsetMessage::try_from(s).expect("offset message parses"),
                        }),
                        ALERT_MESSAGE_NAME => out.alerts.push(Alert::read(s)),
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        stop.store(true, Ordering::SeqCst);
        out.resumed_at = pusher.join().expect("pusher");
    });
    let _ = pipeline.set_state(gst::State::Null);
    out
}

/// The non-live pairs: the reference against each rendition's aligned frames, each scored
/// by its own element on the CPU; and the alert threshold: the median of `steady`'s window
/// means, so that its window crosses it.
pub struct Pairs {
    pub runs: Vec<(Role, RunOutput)>,
    pub threshold: f64,
}

impl Pairs {
    pub fn score() -> Self {
        init();
        let reference = reference_file();
        let (w, h) = REFERENCE;
        let runs: Vec<(Role, RunOutput)> = RENDITIONS
            .iter()
            .map(|r| {
                let (rw, rh) = r.size;
                let desc = format!(
                    "vmafcompare name=cmp backend=cpu window-size={WINDOW} ! fakesink {} {}",
                    packed_raw_branch(&reference, w, h, "yuv420p", "reference"),
                    packed_raw_branch(&aligned_file(r), rw, rh, "yuv420p", "distorted"),
                );
                let out = run(&desc, LONG);
                assert!(out.errors.is_empty(), "{desc}: {:?}", out.errors);
                assert_eq!(out.frames.len(), FRAMES, "pair {}", r.label);
                (r.role, out)
            })
            .collect();
        let steady = &runs[0].1;
        let mut means: Vec<f64> = steady
            .frames
            .iter()
            .map(|f| f.window.expect("window fields").mean)
            .collect();
        means.sort_by(f64::total_cmp);
        let threshold = means[means.len() / 2];
        Self { runs, threshold }
    }

    pub fn of(&self, role: Role) -> &[FrameMessage] {
        &self
            .runs
            .iter()
            .find(|(r, _)| *r == role)
            .expect("pair")
            .1
            .frames
    }
}

/// Window statistics over the last `WINDOW` values of `vmaf` ending at `end`.
pub fn expected_window(vmaf: &[f64], end: usize) -> WindowStats {
    let w = &vmaf[end.saturating_sub(WINDOW - 1)..=end];
    let k = w.len() as f64;
    WindowStats {
        frames: w.len() as u64,
        mean: w.iter().sum::<f64>() / k,
        min: w.iter().copied().fold(f64::INFINITY, f64::min),
        harmonic_mean: k / w.iter().map(|v| 1.0 / (v + 1.0)).sum::<f64>() - 1.0,
    }
}

/// The `(index, below)` alerts the window means of `frames` give at `threshold`.
pub fn expected_alerts(frames: &[&FrameMessage], threshold: f64) -> Vec<(u64, bool)> {
    let mut want = Vec::new();
    let mut below = false;
    for f in frames {
        let mean = f.window.expect("window fields").mean;
        if !below && mean < threshold {
            below = true;
            want.push((f.index, true));
        } else if below && mean >= threshold + HYSTERESIS {
            below = false;
            want.push((f.index, false));
        }
    }
    want
}

const SAD: &str = "VMAF_integer_feature_motion_sad_score";

fn metric(f: &FrameMessage, name: &str) -> f64 {
    f.get(name)
        .unwrap_or_else(|| panic!("frame {} has no {name}", f.index))
}

/// Metrics that do not depend on the neighbouring frames.
fn spatial(f: &FrameMessage) -> Vec<(String, f64)> {
    f.metrics
        .iter()
        .filter(|(n, _)| !n.contains("motion") && n != "vmaf")
        .cloned()
        .collect()
}

/// The reference frame that rendition `r`'s frame `f` was scored against, from its `pts`
/// (the rendition buffer's: `late`'s are `LEAD` frames after the reference's).
pub fn reference_frame(r: &Rendition, f: &FrameMessage) -> usize {
    let pts = f
        .pts
        .unwrap_or_else(|| panic!("{}: frame {} has no pts", r.label, f.index))
        .nseconds();
    assert_eq!(
        pts % FRAME_NS,
        0,
        "{}: frame {} at {pts} ns",
        r.label,
        f.index
    );
    let shift = if r.role == Role::Late { LEAD } else { 0 };
    let k = (pts / FRAME_NS) as usize;
    assert!(
        (shift..shift + FRAMES).contains(&k),
        "{}: frame {} at {pts} ns pairs with no reference frame",
        r.label,
        f.index
    );
    k - shift
}

/// Asserts that the live ladder's frames of `r` equal, bit for bit, the pair's at the same
/// reference frame; where the rendition missed reference frames, its motion restarts (the
/// last frame before a gap takes its own motion as `integer_motion2`, the first after it has
/// motion 0) and everything else is the pair's.
pub fn assert_scores(r: &Rendition, frames: &[&FrameMessage], pair: &[FrameMessage]) {
    let scored: BTreeSet<usize> = frames.iter().map(|f| reference_frame(r, f)).collect();
    for f in frames {
        let k = reference_frame(r, f);
        let p = &pair[k];
        let first = k == 0 || !scored.contains(&(k - 1));
        let last = !scored.contains(&(k + 1)) && k < FRAMES - 1;
        if !first && !last {
            assert_eq!(
                f.metrics, p.metrics,
                "{}: frame {} (reference frame {k}) differs from the non-live pair",
                r.label, f.index
            );
            continue;
        }
        assert_eq!(spatial(f), spatial(p), "{}: reference frame {k}", r.label);
        if first {
            assert_eq!(
                (metric(f, SAD), metric(f, "integer_motion2")),
                (0.0, 0.0),
                "{}: reference frame {k} starts a motion run",
                r.label
            );
        } else {
            assert_eq!(
                metric(f, SAD),
                metric(p, SAD),
                "{}: reference frame {k}",
                r.label
            );
            assert_eq!(
                metric(f, "integer_motion2"),
                metric(p, SAD),
                "{}: reference frame {k} ends a motion run",
                r.label
            );
        }
    }
}

/// Every check of the scenario on a live run scoring on `backend` (its summaries say so),
/// against the CPU pairs.
pub fn check(live: &Live, pairs: &Pairs, backend: &str) {
    let t = pairs.threshold;
    eprintln!(
        "\n| rendition | scored | unpaired ref/dist | skipped | offset (frames, ms) | \
         vmaf alerts (index, below) | stalled alerts (ms, below) | pooled VMAF |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for r in &RENDITIONS {
        let s = live
            .summaries
            .iter()
            .find(|s| s.pad.as_deref() == Some(r.pad));
        let o = live
            .offsets
            .iter()
            .find(|o| o.pad.as_deref() == Some(r.pad));
        let alerts = |reason: &str| -> Vec<(Option<u64>, Option<bool>)> {
            live.alerts
                .iter()
                .filter(|a| a.pad.as_deref() == Some(r.pad) && a.reason.as_deref() == Some(reason))
                .map(|a| match reason {
                    "stalled" => (a.running_time.map(|t| t / 1_000_000), a.below),
                    _ => (a.index, a.below),
                })
                .collect()
        };
        eprintln!(
            "| {} ({}, {}x{}) | {} | {:?} | {:?} | {:?} | {:?} | {:?} | {:?} |",
            r.label,
            r.pad,
            r.size.0,
            r.size.1,
            live.of(r).len(),
            s.map(|s| (s.unpaired_reference, s.unpaired_distorted)),
            s.map(|s| s.skipped),
            o.map(|o| (o.message.offset_frames, o.message.delay / 1_000_000)),
            alerts("vmaf"),
            alerts("stalled"),
            s.and_then(|s| s.get("vmaf")).map(|p| p.mean),
        );
    }
    eprintln!("(alert threshold {t:.3}, hysteresis {HYSTERESIS}, backend {backend})\n");
    assert!(live.errors.is_empty(), "errors: {:?}", live.errors);

    // One offset per rendition, naming it.
    assert_eq!(live.offsets.len(), RENDITIONS.len(), "{:?}", live.offsets);
    for r in &RENDITIONS {
        let o: Vec<&Offset> = live
            .offsets
            .iter()
            .filter(|o| o.pad.as_deref() == Some(r.pad))
            .collect();
        assert_eq!(o.len(), 1, "{}: offsets {:?}", r.label, live.offsets);
        let o = o[0];
        assert_eq!(o.label.as_deref(), Some(r.label), "{o:?}");
        let m = &o.message;
        let (frames, delay) = match r.role {
            Role::Late => (LEAD as i64, LEAD as i64 * FRAME_NS as i64),
            _ => (0, 0),
        };
        assert_eq!(m.offset_frames, frames, "{}: {m:?}", r.label);
        assert!(
            (m.delay - delay).abs() < FRAME_NS as i64,
            "{}: delay {} ns, {delay} expected within a frame",
            r.label,
            m.delay
        );
        if r.role == Role::Late {
            assert!(m.psnr > m.psnr_zero, "{m:?}");
        }
    }

    // One summary per rendition, naming it, from the backend asked for; nothing skipped.
    assert_eq!(
        live.summaries.len(),
        RENDITIONS.len(),
        "{:?}",
        live.summaries
    );
    for r in &RENDITIONS {
        let s = live.summary(r);
        assert_eq!(s.label.as_deref(), Some(r.label), "{s:?}");
        assert_eq!(s.backend, backend, "{}", r.label);
        assert_eq!(
            (s.skipped, s.late),
            (0, 0),
            "{}: on-full=block: {s:?}",
            r.label
        );
        let frames = live.of(r);
        assert_eq!(frames.len() as u64, s.frames, "{}: frame messages", r.label);
        assert!(
            frames.iter().all(|f| f.label.as_deref() == Some(r.label)),
            "{}: frame labels",
            r.label
        );
        assert!(
            frames.windows(2).all(|w| w[0].index < w[1].index),
            "{}: indices in order",
            r.label
        );
    }

    // Every alert names its rendition and says why.
    for a in &live.alerts {
        let r = RENDITIONS
            .iter()
            .find(|r| a.pad.as_deref() == Some(r.pad))
            .unwrap_or_else(|| panic!("an alert without a rendition's pad: {}", a.text));
        assert_eq!(a.label.as_deref(), Some(r.label), "{}", a.text);
        assert!(
            matches!(a.reason.as_deref(), Some("vmaf" | "stalled")),
            "reason: {}",
            a.text
        );
        assert!(a.below.is_some() && a.index.is_some(), "{}", a.text);
    }

    for r in &RENDITIONS {
        let frames = live.of(r);
        let s = live.summary(r);
        let indices: Vec<u64> = frames.iter().map(|f| f.index).collect();
        // The reference frames this rendition was scored at (from its buffers' times).
        let at: Vec<usize> = frames.iter().map(|f| reference_frame(r, f)).collect();
        let stalled: Vec<(Option<u64>, bool)> = live
            .alerts
            .iter()
            .filter(|a| a.pad.as_deref() == Some(r.pad) && a.reason.as_deref() == Some("stalled"))
            .map(|a| (a.running_time, a.below.unwrap()))
            .collect();
        match r.role {
            Role::Steady | Role::Late => {
                // Every reference frame scored, in order, none held back by the stalled
                // rendition.
                assert_eq!(
                    at,
                    (0..FRAMES).collect::<Vec<_>>(),
                    "{}: scored at every reference frame",
                    r.label
                );
                assert_eq!(
                    indices,
                    (0..FRAMES as u64).collect::<Vec<_>>(),
                    "{}: indices",
                    r.label
                );
                // late's first LEAD frames show pictures from before the reference's first.
                let lead = if r.role == Role::Late { LEAD as u64 } else { 0 };
                assert_eq!(
                    (s.frames, s.unpaired_reference, s.unpaired_distorted),
                    (FRAMES as u64, 0, lead),
                    "{}: {s:?}",
                    r.label
                );
                assert!(
                    stalled.is_empty(),
                    "{}: stalled alerts {stalled:?}",
                    r.label
                );
            }
            Role::Stall => {
                let missing: Vec<usize> = (0..FRAMES).filter(|k| !at.contains(k)).collect();
                let (first, end) = match (missing.first(), missing.last()) {
                    (Some(&a), Some(&b)) => (a, b + 1),
                    _ => panic!("stall: no reference frame missed"),
                };
                assert_eq!(
                    missing,
                    (first..end).collect::<Vec<_>>(),
                    "stall: one run of missed reference frames"
                );
                let near = |x: usize, to: usize| x.abs_diff(to) <= 2;
                assert!(
                    near(first, GAP.start) && near(end, GAP.end),
                    "stall: missed reference frames {first}..{end}, the gap is {GAP:?}"
                );
                assert_eq!(s.unpaired_reference, missing.len() as u64, "stall: {s:?}");
                assert_eq!(
                    s.frames + s.unpaired_reference,
                    FRAMES as u64,
                    "stall: {s:?}"
                );
                assert!(s.unpaired_distorted <= 2, "stall: {s:?}");
                // Stalled at the first missed reference frame, back at the first frame it
                // scores again (their running times: the rendition is in step).
                let rt = |k: usize| Some(k as u64 * FRAME_NS);
                assert_eq!(
                    stalled,
                    vec![(rt(first), true), (rt(end), false)],
                    "stall: (running-time, below) of its stalled alerts"
                );
            }
        }
        // Scores: the non-live pair's, bit for bit.
        assert_scores(r, &frames, pairs.of(r.role));
        // Windows: over this rendition's own scores.
        let vmaf: Vec<f64> = frames.iter().map(|f| f.vmaf).collect();
        for (i, f) in frames.iter().enumerate() {
            let got = f
                .window
                .unwrap_or_else(|| panic!("{}: frame {} has no window fields", r.label, f.index));
            let want = expected_window(&vmaf, i);
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
            assert!(
                got.frames == want.frames
                    && got.min == want.min
                    && close(got.mean, want.mean)
                    && close(got.harmonic_mean, want.harmonic_mean),
                "{}: frame {}: window {got:?}, {want:?} expected",
                r.label,
                f.index
            );
        }
        // Alerts: those of this rendition's own window means.
        let vmaf_alerts: Vec<(u64, bool)> = live
            .alerts
            .iter()
            .filter(|a| a.pad.as_deref() == Some(r.pad) && a.reason.as_deref() == Some("vmaf"))
            .map(|a| (a.index.unwrap(), a.below.unwrap()))
            .collect();
        assert_eq!(
            vmaf_alerts,
            expected_alerts(&frames, t),
            "{}: alerts of its window means",
            r.label
        );
        if r.role == Role::Steady {
            assert!(!vmaf_alerts.is_empty(), "steady crosses the threshold");
        }
    }

    // For the record: when steady's frame in the middle of the stall was posted, against
    // when the stalled rendition came back.
    let steady = rendition(Role::Steady);
    let mid = (GAP.start + GAP.end) as u64 / 2;
    let posted = live
        .frames
        .iter()
        .zip(&live.frame_at)
        .find(|(f, _)| f.pad.as_deref() == Some(steady.pad) && f.index == mid)
        .map(|(_, at)| *at);
    eprintln!(
        "steady's frame {mid} posted at {posted:?}; stall resumed at {:?}\n",
        live.resumed_at
    );
}
