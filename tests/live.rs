//! Live monitoring (issue 7): a live pipeline whose scoring is too slow skips frames and
//! keeps its output on time; the latency it reports; the distorted-stream delay found by
//! auto-alignment on real content; sliding windows and alerts; the typed messages.
//!
//! The slow scorer is the test hook `VMAFCOMPARE_TEST_SCORE_DELAY=<element name>=<ms>`: the
//! named element's scoring thread sleeps that long before each pair.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Once};

use common::*;
use gst::prelude::*;
use gst_video::prelude::*;
use gstvmafcompare::vmafcompare::{
    frame_meta, AlertMessage, FrameMessage, OffsetMessage, SummaryMessage, WindowStats,
    ALERT_MESSAGE_NAME, FRAME_MESSAGE_NAME, OFFSET_MESSAGE_NAME, SUMMARY_MESSAGE_NAME,
};

/// Per pair, on the scoring thread of the elements named here.
const SLOW_MS: u64 = 100;

fn slow_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::env::set_var(
            "VMAFCOMPARE_TEST_SCORE_DELAY",
            format!("slowskip={SLOW_MS},slowblock={SLOW_MS}"),
        )
    });
}

/// Everything a run posted and output.
#[derive(Default, Debug)]
struct Out {
    frames: Vec<FrameMessage>,
    summary: Option<SummaryMessage>,
    offsets: Vec<OffsetMessage>,
    alerts: Vec<AlertMessage>,
    errors: Vec<String>,
    /// (pts, carries scores) of each buffer reaching `appsink name=out`, in order.
    outputs: Vec<(Option<gst::ClockTime>, bool)>,
    /// The scores meta of those that carry one.
    metas: Vec<FrameMessage>,
    /// Largest (clock running time at the sink - buffer running time), ns: how long after
    /// its capture time the sink got a buffer (the pipeline latency, when on time).
    max_lag: i128,
}

fn run_all(desc: &str) -> Out {
    init();
    let pipeline = gst::parse::launch(desc)
        .unwrap_or_else(|e| panic!("cannot build {desc}: {e}"))
        .downcast::<gst::Pipeline>()
        .expect("pipeline");
    let shared = Arc::new(Mutex::new(Out {
        max_lag: i128::MIN,
        ..Out::default()
    }));
    if let Some(sink) = pipeline.by_name("out") {
        let sink = sink.downcast::<gst_app::AppSink>().expect("appsink");
        let s = shared.clone();
        sink.set_callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |appsink| {
                    let sample = appsink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    let Some(buffer) = sample.buffer() else {
                        return Ok(gst::FlowSuccess::Ok);
                    };
                    let mut g = s.lock().unwrap();
                    let meta = frame_meta(buffer);
                    g.outputs.push((buffer.pts(), meta.is_some()));
                    g.metas.extend(meta);
                    let rt = sample
                        .segment()
                        .and_then(|seg| seg.downcast_ref::<gst::ClockTime>().cloned())
                        .and_then(|seg| seg.to_running_time(buffer.pts()?));
                    if let (Some(now), Some(rt)) = (appsink.current_running_time(), rt) {
                        let lag = now.nseconds() as i128 - rt.nseconds() as i128;
                        g.max_lag = g.max_lag.max(lag);
                    }
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        );
    }
    let bus = pipeline.bus().expect("bus");
    pipeline.set_state(gst::State::Playing).expect("playing");
    let deadline = std::time::Instant::now() + LONG;
    let mut out = Out::default();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "timeout running {desc}");
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_nseconds(left.as_nanos() as u64)) else {
            continue;
        };
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                out.errors.push(format!("{} ({:?})", e.error(), e.debug()));
                break;
            }
            gst::MessageView::Element(e) => {
                let Some(s) = e.structure() else { continue };
                match s.name().as_str() {
                    FRAME_MESSAGE_NAME => out.frames.push(FrameMessage::try_from(s).unwrap()),
                    SUMMARY_MESSAGE_NAME => {
                        out.summary = Some(SummaryMessage::try_from(s).unwrap())
                    }
                    OFFSET_MESSAGE_NAME => out.offsets.push(OffsetMessage::try_from(s).unwrap()),
                    ALERT_MESSAGE_NAME => out.alerts.push(AlertMessage::try_from(s).unwrap()),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let _ = pipeline.set_state(gst::State::Null);
    let g = shared.lock().unwrap();
    out.outputs = g.outputs.clone();
    out.metas = g.metas.clone();
    out.max_lag = g.max_lag;
    out
}

/// Two `videotestsrc` (the moving ball; the distorted one through JPEG at quality 30),
/// 160x120 at 25 fps, 50 frames, into `vmafcompare name=<name> <props>`.
fn ball_pipeline(name: &str, props: &str, live: bool) -> String {
    let caps = "video/x-raw,format=I420,width=160,height=120,framerate=25/1";
    format!(
        "vmafcompare name={name} backend=cpu {props} ! appsink name=out sync={live} \
         videotestsrc is-live={live} num-buffers=50 pattern=ball ! {caps} ! {name}.reference \
         videotestsrc is-live={live} num-buffers=50 pattern=ball ! {caps} ! jpegenc quality=30 \
           ! jpegdec ! videoconvert ! {caps} ! {name}.distorted"
    )
}

/// Metric `name` of a frame message, which must have it.
fn m(f: &FrameMessage, name: &str) -> f64 {
    f.get(name)
        .unwrap_or_else(|| panic!("frame {} has no {name}", f.index))
}

const SAD: &str = "VMAF_integer_feature_motion_sad_score";
/// Metrics that do not depend on the neighbouring frames.
fn spatial(f: &FrameMessage) -> Vec<(String, f64)> {
    f.metrics
        .iter()
        .filter(|(n, _)| !n.contains("motion") && n != "vmaf")
        .cloned()
        .collect()
}

#[test]
fn slow_scoring_in_a_live_pipeline_skips_frames_and_stays_on_time() {
    slow_hook();
    let reference = run_all(&ball_pipeline("fast", "", false));
    assert!(reference.errors.is_empty(), "{:?}", reference.errors);
    assert_eq!(reference.frames.len(), 50);
    let by_index = |i: u64| &reference.frames[i as usize];

    let out = run_all(&ball_pipeline(
        "slowskip",
        "queue-size=3 on-full=skip",
        true,
    ));
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let s = out.summary.as_ref().expect("summary");
    // Every distorted buffer leaves, in order, scored or not.
    assert_eq!(out.outputs.len(), 50);
    assert!(out.outputs.windows(2).all(|w| w[0].0 < w[1].0), "in order");
    assert_eq!((s.unpaired_reference, s.unpaired_distorted), (0, 0));
    // Scoring takes 100 ms a pair against 40 ms frames: most pairs are skipped, and
    // counted: in the summary and, up to each frame, in its message.
    assert!(s.skipped > 0 && s.frames > 0, "{s:?}");
    assert_eq!(s.frames + s.skipped, 50);
    assert_eq!(out.frames.len() as u64, s.frames);
    assert!(out.frames.windows(2).all(|w| w[0].skipped <= w[1].skipped));
    assert!(out
        .frames
        .iter()
        .all(|f| f.skipped <= s.skipped && f.skipped <= f.index));
    // A scored frame's buffer carries its scores unless its deadline came first (late).
    let with_meta = out.outputs.iter().filter(|o| o.1).count() as u64;
    assert_eq!(with_meta + s.late, s.frames);
    // Scores: what does not depend on neighbours equals the non-live run's; motion restarts
    // after each gap as a fresh libvmaf run would, and is exact between consecutive frames.
    let scored: std::collections::HashSet<u64> = out.frames.iter().map(|f| f.index).collect();
    for f in &out.frames {
        let r = by_index(f.index);
        assert_eq!(spatial(f), spatial(r), "frame {}", f.index);
        let first = f.index == 0 || !scored.contains(&(f.index - 1));
        let last = !scored.contains(&(f.index + 1)) && f.index < 49;
        if first {
            assert_eq!(
                (m(f, SAD), m(f, "integer_motion2")),
                (0.0, 0.0),
                "frame {}",
                f.index
            );
        } else {
            assert_eq!(m(f, SAD), m(r, SAD), "frame {}", f.index);
            let want = if last {
                m(r, SAD)
            } else {
                m(r, "integer_motion2")
            };
            assert_eq!(m(f, "integer_motion2"), want, "frame {}", f.index);
        }
        if !first && !last {
            assert_eq!(f.metrics, r.metrics, "frame {}", f.index);
        }
    }
    eprintln!(
        "\n| live, scoring {SLOW_MS} ms/pair at 25 fps, on-full=skip | {} scored, {} skipped, {} late | max lag at the sink {:.1} ms |\n",
        s.frames,
        s.skipped,
        s.late,
        out.max_lag as f64 / 1e6
    );
    // On time: the sink got every buffer at its deadline (the latency, ~0.2 s, after its
    // capture); the blocking run below, with the same scorer, lags by seconds.
    assert!(out.max_lag < 1_000_000_000, "{} ns", out.max_lag);

    // on-full=block: every frame is scored, exactly as the non-live run, but upstream waits
    // and the output falls behind by the scorer's backlog (50 x 100 ms for 2 s of video).
    let blocked = run_all(&ball_pipeline(
        "slowblock",
        "queue-size=3 on-full=block",
        true,
    ));
    assert!(blocked.errors.is_empty(), "{:?}", blocked.errors);
    let b = blocked.summary.as_ref().expect("summary");
    assert_eq!((b.frames, b.skipped, b.late), (50, 0, 0));
    for (x, y) in blocked.frames.iter().zip(&reference.frames) {
        assert_eq!(x.metrics, y.metrics, "frame {}", x.index);
    }
    eprintln!(
        "| live, on-full=block | 50 scored | max lag at the sink {:.1} ms |\n",
        blocked.max_lag as f64 / 1e6
    );
    assert!(blocked.max_lag > 1_500_000_000, "{} ns", blocked.max_lag);
}

/// The latency vmafcompare's src pad reports in a live pipeline, with `props`, once both
/// pads have caps (the frame rate is known) and, with `after_offset`, once auto-alignment
/// has posted its offset.
/// Pops `kind` messages from `bus` until one satisfies `done`, failing on an error message
/// or after 30 s without a message (`what` names the awaited message).
fn wait_for(
    bus: &gst::Bus,
    kind: gst::MessageType,
    what: &str,
    done: impl Fn(&gst::Message) -> bool,
) {
    loop {
        let msg = bus
            .timed_pop_filtered(
                gst::ClockTime::from_seconds(30),
                &[kind, gst::MessageType::Error],
            )
            .expect(what);
        assert_ne!(msg.type_(), gst::MessageType::Error, "{msg:?}");
        if done(&msg) {
            return;
        }
    }
}

fn live_latency(props: &str, after_offset: bool) -> (bool, gst::ClockTime) {
    init();
    let pipeline = gst::parse::launch(&format!(
        "vmafcompare name=cmp backend=cpu {props} ! fakesink \
         videotestsrc is-live=true ! video/x-raw,format=I420,width=64,height=48,framerate=25/1 ! cmp.reference \
         videotestsrc is-live=true ! video/x-raw,format=I420,width=64,height=48,framerate=25/1 ! cmp.distorted"
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let bus = pipeline.bus().unwrap();
    let cmp = pipeline.by_name("cmp").unwrap();
    // Both sources negotiated (each answers the latency query from then on) ...
    let has_caps = |pad: &str| cmp.static_pad(pad).and_then(|p| p.current_caps()).is_some();
    let start = std::time::Instant::now();
    while !(has_caps("reference") && has_caps("distorted")) {
        assert!(start.elapsed().as_secs() < 30, "no caps");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // ... and the element handled the distorted caps: the pads show caps as soon as the
    // events are queued, before the element has handled them; it sets its latency (posting
    // a latency message) when it handles the distorted caps.
    wait_for(
        &bus,
        gst::MessageType::Latency,
        "latency message from vmafcompare",
        |m| m.src() == Some(cmp.upcast_ref::<gst::Object>()),
    );
    if after_offset {
        wait_for(&bus, gst::MessageType::Element, "offset message", |m| {
            m.structure()
                .is_some_and(|s| s.name() == OFFSET_MESSAGE_NAME)
        });
    }
    let mut q = gst::query::Latency::new();
    assert!(cmp.static_pad("src").unwrap().query(&mut q));
    let (live, min, _max) = q.result();
    let _ = pipeline.set_state(gst::State::Null);
    (live, min)
}

#[test]
fn live_latency_counts_the_scoring_queue_and_the_late_reference() {
    let frame = gst::ClockTime::from_mseconds(40);
    let (live1, l1) = live_latency("queue-size=1", false);
    let (live5, l5) = live_latency("queue-size=5", false);
    assert!(live1 && live5);
    // One frame for motion plus queue-size frames, on top of the sources' own latency.
    assert_eq!(l5 - l1, frame * 4);
    // A reference 120 ms late makes the distorted stream wait as long.
    let (_, late) = live_latency("queue-size=1 distorted-delay=-120000000", false);
    assert_eq!(late - l1, gst::ClockTime::from_mseconds(120));
    // auto-align may find the reference late by up to align-max-offset frames, until it
    // has measured the delay (here none: the two sources are in step).
    let align = "queue-size=1 auto-align=true align-max-offset=3";
    let (_, searching) = live_latency(&format!("{align} align-duration=10000000000"), false);
    assert_eq!(searching - l1, frame * 3);
    // Once found, the measured delay is what the reference is late by: the two sources'
    // start skew (microseconds, more on a loaded machine; none when the reference started
    // first), well under the frame of an offset.
    let (_, found) = live_latency(&format!("{align} align-duration=200000000"), true);
    assert!(found >= l1 && found - l1 < frame / 2, "{found} vs {l1}");
}

/// Frames `range` of an I420 file of `w`x`h` frames, preceded by `freeze` copies of the
/// first of them (a stream that starts late, showing its first picture meanwhile).
fn write_frames(
    src: &Path,
    dst: &Path,
    w: usize,
    h: usize,
    range: std::ops::Range<usize>,
    freeze: usize,
) {
    let data = std::fs::read(src).unwrap();
    let size = w * h + 2 * w.div_ceil(2) * h.div_ceil(2);
    let frame = |i: usize| &data[i * size..(i + 1) * size];
    let mut out = Vec::new();
    for _ in 0..freeze {
        out.extend_from_slice(frame(range.start));
    }
    for i in range {
        out.extend_from_slice(frame(i));
    }
    std::fs::write(dst, out).unwrap();
}

fn raw_pair(reference: &Path, distorted: &Path, props: &str) -> String {
    format!(
        "vmafcompare name=cmp backend=cpu {props} ! appsink name=out sync=false {} {}",
        raw_branch(reference, 160, 90, "I420", "reference"),
        raw_branch(distorted, 160, 90, "I420", "distorted")
    )
}

#[test]
fn auto_align_finds_an_injected_delay_and_scores_the_aligned_pair() {
    // Netflix's src01 160x90 pair (48 frames of real content) with the distorted stream
    // made 5 frames late: it shows its first picture for 5 frames, then the sequence.
    let p = reference_pairs().remove(0);
    let k = 5usize;
    let n = p.frames - k;
    let path = |name: &str| -> PathBuf { temp_path(name) };
    let (ref_n, dis_n, dis_late, ref_late) = (
        path("align_ref.yuv"),
        path("align_dis.yuv"),
        path("align_dis_late.yuv"),
        path("align_ref_late.yuv"),
    );
    write_frames(&p.reference, &ref_n, 160, 90, 0..n, 0);
    write_frames(&p.distorted, &dis_n, 160, 90, 0..n, 0);
    write_frames(&p.distorted, &dis_late, 160, 90, 0..n, k);
    write_frames(&p.reference, &ref_late, 160, 90, 0..n, k);

    let aligned = run_all(&raw_pair(&ref_n, &dis_n, ""));
    assert!(aligned.errors.is_empty(), "{:?}", aligned.errors);
    assert_eq!(aligned.frames.len(), n);

    let props = "auto-align=true align-max-offset=10 align-duration=1000000000";
    let found = run_all(&raw_pair(&p.reference, &dis_late, props));
    assert!(found.errors.is_empty(), "{:?}", found.errors);
    let o = found.offsets.first().expect("vmafcompare-offset");
    eprintln!(
        "\n| auto-align, distorted {k} frames late | found {} frames, delay {} ms | PSNR {:.3} dB (unaligned {:.3} dB) over {} pairs, range +-{} |\n",
        o.offset_frames,
        o.delay / 1_000_000,
        o.psnr,
        o.psnr_zero,
        o.compared,
        o.search_range
    );
    assert_eq!(found.offsets.len(), 1);
    assert_eq!(o.offset_frames, k as i64);
    assert_eq!(o.delay, k as i64 * 40_000_000);
    assert_eq!((o.compared, o.search_range), (25, 10));
    assert!(o.psnr > o.psnr_zero);
    let s = found.summary.as_ref().unwrap();
    // The 5 frozen distorted frames and the last 5 reference frames have no partner.
    assert_eq!(
        (s.frames, s.unpaired_distorted, s.unpaired_reference),
        (n as u64, k as u64, k as u64)
    );
    assert_eq!(
        found.outputs.len(),
        p.frames,
        "every distorted buffer leaves"
    );
    for (x, y) in found.frames.iter().zip(&aligned.frames) {
        assert_eq!((x.index, &x.metrics), (y.index, &y.metrics));
    }
    assert_eq!(
        s.get("vmaf"),
        aligned.summary.as_ref().unwrap().get("vmaf"),
        "pooled scores equal the aligned pair's"
    );

    // The same delay given as a time.
    let fixed = run_all(&raw_pair(
        &p.reference,
        &dis_late,
        "distorted-delay=200000000",
    ));
    assert!(fixed.offsets.is_empty());
    for (x, y) in fixed.frames.iter().zip(&aligned.frames) {
        assert_eq!((x.index, &x.metrics), (y.index, &y.metrics));
    }
    assert_eq!(fixed.frames.len(), n);

    // A late reference: a negative offset.
    let neg = run_all(&raw_pair(&ref_late, &p.distorted, props));
    assert_eq!(
        neg.offsets.first().map(|o| o.offset_frames),
        Some(-(k as i64))
    );
    for (x, y) in neg.frames.iter().zip(&aligned.frames) {
        assert_eq!((x.index, &x.metrics), (y.index, &y.metrics));
    }
    assert_eq!(neg.frames.len(), n);

    // No delay: offset 0, the scores of the plain run.
    let zero = run_all(&raw_pair(&p.reference, &p.distorted, props));
    assert_eq!(
        zero.offsets.first().map(|o| (o.offset_frames, o.delay)),
        Some((0, 0))
    );
    assert_eq!(zero.frames.len(), p.frames);
}

/// Window statistics as the element computes them, from the frames' VMAF in order.
fn expected_window(vmaf: &[f64], end: usize, n: usize) -> WindowStats {
    let w = &vmaf[end.saturating_sub(n - 1)..=end];
    let k = w.len() as f64;
    WindowStats {
        frames: w.len() as u64,
        mean: w.iter().sum::<f64>() / k,
        min: w.iter().copied().fold(f64::INFINITY, f64::min),
        harmonic_mean: k / w.iter().map(|v| 1.0 / (v + 1.0)).sum::<f64>() - 1.0,
    }
}

#[test]
fn frame_messages_carry_window_stats_and_alerts_cross_with_hysteresis() {
    let p = reference_pairs().remove(0);
    let desc = |props: &str| {
        format!(
            "vmafcompare name=cmp backend=cpu {props} ! appsink name=out sync=false {} {}",
            raw_branch(&p.reference, 160, 90, "I420", "reference"),
            raw_branch(&p.distorted, 160, 90, "I420", "distorted")
        )
    };
    let plain = run_all(&desc("window-size=5"));
    let vmaf: Vec<f64> = plain.frames.iter().map(|f| f.vmaf).collect();
    assert_eq!(vmaf.len(), 48);
    for (i, f) in plain.frames.iter().enumerate() {
        assert_eq!(f.window, Some(expected_window(&vmaf, i, 5)), "frame {i}");
        assert_eq!(f.skipped, 0);
    }
    // The meta carries the same fields.
    assert_eq!(plain.metas, plain.frames);
    // A 200 ms window at 25 fps holds the same 5 frames.
    let timed = run_all(&desc("window-duration=200000000"));
    for (a, b) in timed.frames.iter().zip(&plain.frames) {
        assert_eq!(a.window, b.window);
    }
    // Alerts: a threshold in the middle of the window means, hysteresis 1 VMAF point.
    let mut means: Vec<f64> = plain
        .frames
        .iter()
        .map(|f| f.window.unwrap().mean)
        .collect();
    means.sort_by(f64::total_cmp);
    let threshold = means[means.len() / 2];
    let hysteresis = 1.0;
    let mut want = Vec::new();
    let mut below = false;
    for f in &plain.frames {
        let mean = f.window.unwrap().mean;
        if !below && mean < threshold {
            below = true;
            want.push((f.index, true));
        } else if below && mean >= threshold + hysteresis {
            below = false;
            want.push((f.index, false));
        }
    }
    let alerted = run_all(&desc(&format!(
        "window-size=5 alert-threshold={threshold} alert-hysteresis={hysteresis}"
    )));
    let got: Vec<(u64, bool)> = alerted.alerts.iter().map(|a| (a.index, a.below)).collect();
    eprintln!("\n| alerts at threshold {threshold:.3}, hysteresis {hysteresis} | {got:?} |\n");
    assert!(!want.is_empty());
    assert_eq!(got, want);
    for a in &alerted.alerts {
        let f = &plain.frames[a.index as usize];
        assert_eq!(
            (a.window, a.pts, a.threshold),
            (f.window.unwrap(), f.pts, threshold)
        );
    }
    // Without a threshold, no alert.
    assert!(plain.alerts.is_empty());
}

/// An I420 frame of `w`x`h` whose luma is a gradient moving with `t` (`noise`: a fixed
/// dither added, for the distorted stream), mid-grey chroma; no timestamps (appsrc's
/// do-timestamp gives them), 40 ms long.
fn i420(info: &gst_video::VideoInfo, t: usize, noise: bool) -> gst::Buffer {
    let mut buf = gst::Buffer::with_size(info.size()).unwrap();
    buf.get_mut()
        .unwrap()
        .set_duration(gst::ClockTime::from_mseconds(40));
    let mut frame = gst_video::VideoFrame::from_buffer_writable(buf, info).unwrap();
    for p in 1..frame.n_planes() {
        frame.plane_data_mut(p).unwrap().fill(128);
    }
    let (w, h) = (info.width() as usize, info.height() as usize);
    let stride = frame.plane_stride()[0] as usize;
    let luma = frame.plane_data_mut(0).unwrap();
    for y in 0..h {
        for x in 0..w {
            let v = (x * 5 + y * 3 + t * 7 + ((x * y) % 7) * 4) % 220;
            let d = if noise { (x * 7919 + y * 31) % 9 } else { 0 };
            luma[y * stride + x] = (v + d) as u8;
        }
    }
    frame.into_buffer()
}

#[test]
fn a_live_stream_that_stops_leaves_the_other_on_time_and_gaps_leave_as_events() {
    // Both pads live, scoring on the scoring thread (on-full=skip, the default). The
    // reference stops after 10 frames: each later distorted buffer waits for a partner until
    // its deadline (running time + latency), then leaves unscored, before any EOS, even
    // though the aggregator wakes up meanwhile for the scoring queue's own deadlines.
    // Distorted frame 4 is a GAP: it leaves as a GAP event (no empty buffer downstream) and
    // its reference counts as unpaired.
    // The aggregator's `latency` (1 s on top of the element's own 4 frames) keeps a busy
    // machine's scheduling stalls from unpairing the frames pushed together.
    init();
    let pipeline = gst::parse::launch(
        "vmafcompare name=cmp backend=cpu latency=1000000000 ! appsink name=out sync=false \
         appsrc name=r format=time is-live=true do-timestamp=true ! cmp.reference \
         appsrc name=d format=time is-live=true do-timestamp=true ! cmp.distorted",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    // (arrival, pts, carries scores, bytes) of each buffer at the sink.
    type Arrival = (std::time::Instant, Option<gst::ClockTime>, bool, usize);
    let arrivals: Arc<Mutex<Vec<Arrival>>> = Arc::default();
    let sink = pipeline
        .by_name("out")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    let a = arrivals.clone();
    sink.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |s| {
                let sample = s.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                if let Some(b) = sample.buffer() {
                    let at = std::time::Instant::now();
                    let scored = frame_meta(b).is_some();
                    a.lock().unwrap().push((at, b.pts(), scored, b.size()));
                }
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
    let src = |n: &str| {
        pipeline
            .by_name(n)
            .unwrap()
            .downcast::<gst_app::AppSrc>()
            .unwrap()
    };
    let (r, d) = (src("r"), src("d"));
    let vi = gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, 64, 48)
        .fps(gst::Fraction::new(25, 1))
        .build()
        .unwrap();
    let caps = vi.to_caps().unwrap();
    r.set_caps(Some(&caps));
    d.set_caps(Some(&caps));
    pipeline.set_state(gst::State::Playing).unwrap();
    let (paired, alone) = (10usize, 10usize);
    let mut pushed = Vec::new();
    for i in 0..paired + alone {
        if i < paired {
            let _ = r.push_buffer(i420(&vi, i, false));
        }
        let db = if i == 4 {
            let mut g = gst::Buffer::new();
            let b = g.get_mut().unwrap();
            b.set_duration(gst::ClockTime::from_mseconds(40));
            b.set_flags(gst::BufferFlags::GAP | gst::BufferFlags::DROPPABLE);
            g
        } else {
            i420(&vi, i, true)
        };
        pushed.push(std::time::Instant::now());
        let _ = d.push_buffer(db);
        std::thread::sleep(std::time::Duration::from_millis(40));
    }
    // Bounded wait for every non-GAP distorted buffer, before any EOS.
    let want = paired + alone - 1;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while arrivals.lock().unwrap().len() < want && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let got = arrivals.lock().unwrap().clone();
    assert_eq!(
        got.len(),
        want,
        "distorted buffers held back after the reference stopped"
    );
    assert!(got.windows(2).all(|w| w[0].1 < w[1].1), "in order");
    assert!(got.iter().all(|g| g.3 > 0), "an empty GAP buffer left");
    // The distorted buffers without a reference: unscored, and not before their deadline
    // (1 s, plus the element's own 4 frames: one for motion, queue-size 3).
    let own = std::time::Duration::from_millis(1160);
    for (i, (at, _, scored, _)) in got.iter().enumerate().skip(paired - 1) {
        let sent = pushed[i + 1];
        assert!(!scored, "buffer {} has scores without a reference", i + 1);
        let waited = at.duration_since(sent);
        assert!(
            waited + std::time::Duration::from_millis(15) >= own,
            "buffer {} left after {waited:?}, before the latency",
            i + 1
        );
    }
    let _ = r.end_of_stream();
    let _ = d.end_of_stream();
    let bus = pipeline.bus().unwrap();
    let mut frames = Vec::new();
    let mut summary = None;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(100)) else {
            continue;
        };
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => panic!("{}", e.error()),
            gst::MessageView::Element(e) => match e.structure() {
                Some(s) if s.name() == FRAME_MESSAGE_NAME => {
                    frames.push(FrameMessage::try_from(s).unwrap())
                }
                Some(s) if s.name() == SUMMARY_MESSAGE_NAME => {
                    summary = SummaryMessage::try_from(s).ok()
                }
                _ => {}
            },
            _ => {}
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    let s = summary.expect("summary at EOS");
    assert_eq!(
        (s.unpaired_reference, s.unpaired_distorted),
        (1, alone as u64),
        "{s:?}"
    );
    assert_eq!(s.frames + s.skipped, paired as u64 - 1, "{s:?}");
    assert_eq!(frames.len() as u64, s.frames);
    let with_meta = got.iter().filter(|g| g.2).count() as u64;
    assert_eq!(with_meta + s.late, s.frames, "{s:?}");
}

#[test]
fn extreme_frame_durations_and_live_properties_do_not_overflow_the_latency() {
    // One frame every 2^31 - 1 s, the largest queue and search range: the latency the
    // element computes from them saturates instead of overflowing (or panicking).
    let caps = "video/x-raw,format=I420,width=64,height=48,framerate=1/2147483647";
    let out = run_all(&format!(
        "vmafcompare name=cmp backend=cpu queue-size=256 auto-align=true \
           align-max-offset=1000 distorted-delay=-3600000000000 ! appsink name=out sync=false \
         videotestsrc num-buffers=3 ! {caps} ! cmp.reference \
         videotestsrc num-buffers=3 pattern=snow ! {caps} ! cmp.distorted"
    ));
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.outputs.len(), 3);
    assert!(out.summary.is_some());
}

#[test]
fn typed_messages_round_trip_through_structures() {
    init();
    let w = WindowStats {
        frames: 25,
        mean: 80.5,
        min: 60.25,
        harmonic_mean: 79.0,
    };
    let frame = FrameMessage {
        index: 7,
        pts: Some(gst::ClockTime::from_mseconds(280)),
        running_time: Some(gst::ClockTime::from_mseconds(280)),
        duration: Some(gst::ClockTime::from_mseconds(40)),
        vmaf: 81.0,
        metrics: vec![("integer_adm2".into(), 0.9), ("vmaf".into(), 81.0)],
        skipped: 3,
        window: Some(w),
        pad: Some("distorted_2".into()),
        label: Some("720p".into()),
    };
    let s = frame.to_structure();
    assert_eq!(FrameMessage::try_from(s.as_ref()).unwrap(), frame);
    assert!(s.to_string().ends_with("vmaf=(double)81;"), "{s}");
    let offset = OffsetMessage {
        offset_frames: -3,
        delay: -120_000_000,
        psnr: 41.5,
        psnr_zero: 20.0,
        compared: 25,
        search_range: 15,
    };
    assert_eq!(
        OffsetMessage::try_from(gst::Structure::from(&offset).as_ref()).unwrap(),
        offset
    );
    let alert = AlertMessage {
        below: true,
        index: 9,
        pts: None,
        running_time: Some(gst::ClockTime::from_seconds(1)),
        window: w,
        threshold: 70.0,
        hysteresis: 5.0,
    };
    assert_eq!(
        AlertMessage::try_from(gst::Structure::from(&alert).as_ref()).unwrap(),
        alert
    );
    assert!(AlertMessage::try_from(gst::Structure::from(&offset).as_ref()).is_err());
    let summary = SummaryMessage {
        frames: 10,
        unpaired_reference: 1,
        unpaired_distorted: 2,
        out_of_order_reference: 0,
        out_of_order_distorted: 3,
        backend: "cpu".into(),
        model: "vmaf_v0.6.1".into(),
        reference_input: "cuda".into(),
        distorted_input: "system+dmabuf-readback".into(),
        metrics: vec![],
        skipped: 4,
        late: 1,
        scored_width: 1920,
        scored_height: 1080,
        reference_scaling: "none".into(),
        distorted_scaling: "bicubic 1280x720->1920x1080".into(),
        reference_range: "limited".into(),
        distorted_range: "full".into(),
        range_conversion: "distorted full->limited (why)".into(),
        pad: Some("distorted_2".into()),
        label: Some("720p".into()),
    };
    assert_eq!(
        SummaryMessage::try_from(summary.to_structure().as_ref()).unwrap(),
        summary
    );
}

/// Issue 20: a live pipeline's scoring thread hands frames to the element's CPU pool, several
/// in flight. With on-full=block every frame is scored exactly as a non-live run on one
/// thread; the pairs in flight count in `queue-size`, so the latency is unchanged.
#[test]
fn live_scoring_on_a_pool_is_exact_and_keeps_the_latency() {
    let reference = run_all(&ball_pipeline("onethread", "threads=1", false));
    assert!(reference.errors.is_empty(), "{:?}", reference.errors);
    let pooled = run_all(&ball_pipeline(
        "pooled",
        "threads=3 queue-size=4 on-full=block",
        true,
    ));
    assert!(pooled.errors.is_empty(), "{:?}", pooled.errors);
    let s = pooled.summary.as_ref().expect("summary");
    assert_eq!((s.frames, s.skipped), (50, 0));
    assert_eq!(pooled.frames.len(), 50);
    for (x, y) in pooled.frames.iter().zip(&reference.frames) {
        assert_eq!((x.index, &x.metrics), (y.index, &y.metrics));
    }
    let (_, one) = live_latency("threads=1 queue-size=2", false);
    let (_, many) = live_latency("threads=4 queue-size=2", false);
    assert_eq!(one, many);
}
