//! Frames whose timestamp repeats or goes backwards on a pad (issue 48): counted in the
//! summary (`out-of-order-reference` / `out-of-order-distorted`), reported once per pad by a
//! warning that names the pad and both timestamps, for a pair and for a ladder's rendition,
//! and otherwise paired by running time as before (the counts of scored and unpaired frames
//! below follow from the half-frame pairing rule).

mod common;

use std::time::Duration;

use gst::prelude::*;
use gst_video::VideoFormat;

const W: u32 = 64;
const H: u32 = 64;

/// An I420 frame whose luma is a gradient moved by `t` (so frames differ and VMAF is real).
fn frame(t: u64, pts_ms: u64) -> gst::Buffer {
    let (w, h) = (W as usize, H as usize);
    let mut data = vec![128u8; w * h * 3 / 2];
    for y in 0..h {
        for x in 0..w {
            data[y * w + x] = ((x * 3 + y * 2 + t as usize * 5) % 220 + 16) as u8;
        }
    }
    let mut b = gst::Buffer::from_mut_slice(data);
    let m = b.get_mut().unwrap();
    m.set_pts(gst::ClockTime::from_mseconds(pts_ms));
    m.set_duration(gst::ClockTime::from_mseconds(40));
    b
}

/// Scores reference frames at 0, 40, ... 280 ms against distorted frames at `distorted` ms
/// (each frame's picture is that of its index), on pad `pad` (`distorted` or a request pad).
fn run(pad: &str, distorted: &[u64]) -> common::RunOutput {
    run_with_stats(pad, distorted).0
}

/// [`run`], plus the element's `stats` property once it holds `frames` scored frames (or
/// after 20 s), read before the pipeline stops.
fn run_with_stats(pad: &str, distorted: &[u64]) -> (common::RunOutput, gst::Structure) {
    let running = common::start(&format!(
        "vmafcompare name=cmp backend=cpu ! fakesink sync=false \
         appsrc name=r format=time ! cmp.reference appsrc name=d format=time ! cmp.{pad}"
    ));
    let src = |n: &str| {
        running
            .pipeline
            .by_name(n)
            .unwrap()
            .downcast::<gst_app::AppSrc>()
            .unwrap()
    };
    let (r, d) = (src("r"), src("d"));
    let caps = gst_video::VideoInfo::builder(VideoFormat::I420, W, H)
        .fps(gst::Fraction::new(25, 1))
        .build()
        .unwrap()
        .to_caps()
        .unwrap();
    r.set_caps(Some(&caps));
    d.set_caps(Some(&caps));
    for i in 0..8u64 {
        let _ = r.push_buffer(frame(i, i * 40));
    }
    for (i, &t) in distorted.iter().enumerate() {
        let _ = d.push_buffer(frame(i as u64, t));
    }
    let _ = r.end_of_stream();
    let _ = d.end_of_stream();
    let cmp = running.pipeline.by_name("cmp").unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let stats = loop {
        let stats: gst::Structure = cmp.property("stats");
        let settled = stats.get::<u64>("frames").unwrap() == 7
            && stats.get::<u64>("unpaired-reference").unwrap() == 1;
        if settled || std::time::Instant::now() > deadline {
            break stats;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (running.finish(Duration::from_secs(60)), stats)
}

#[test]
fn repeated_and_backward_timestamps_are_counted_and_reported_once() {
    // 80 repeats, then 120 comes after 160.
    let distorted = [0, 40, 80, 80, 160, 120, 200, 240, 280];
    for pad in ["distorted", "distorted_1"] {
        let (out, stats) = run_with_stats(pad, &distorted);
        assert!(out.errors.is_empty(), "{pad}: {:?}", out.errors);
        let s = out.summary.as_ref().expect("summary");
        // The `stats` property (what `vmafcompare monitor` polls) holds the summary's counts
        // while the pipeline still runs.
        let stat = |n: &str| stats.get::<u64>(n).unwrap();
        assert_eq!(stats.name(), "vmafcompare-stats");
        assert_eq!(
            [
                stat("frames"),
                stat("unpaired-reference"),
                stat("unpaired-distorted"),
                stat("out-of-order-reference"),
                stat("out-of-order-distorted"),
                stat("skipped"),
                stat("late"),
            ],
            [
                s.frames,
                s.unpaired_reference,
                s.unpaired_distorted,
                s.out_of_order_reference,
                s.out_of_order_distorted,
                s.skipped,
                s.late
            ],
            "{pad}: stats {stats}"
        );
        assert_eq!(
            (s.out_of_order_reference, s.out_of_order_distorted),
            (0, 2),
            "{pad}: the repeat and the step back"
        );
        // 0 40 80 160 200 240 280 pair; reference 120 and distorted 80' and 120 do not.
        assert_eq!(s.frames, 7, "{pad}: pairs scored");
        assert_eq!(
            (s.unpaired_reference, s.unpaired_distorted),
            (1, 2),
            "{pad}: unpaired"
        );
        let reports: Vec<_> = out
            .warnings
            .iter()
            .filter(|w| w.contains("running time"))
            .collect();
        assert_eq!(
            reports.len(),
            1,
            "{pad}: one warning per pad: {:?}",
            out.warnings
        );
        assert!(
            reports[0].starts_with(pad)
                && reports[0]
                    .contains("0:00:00.080000000 repeats the previous frame's 0:00:00.080000000"),
            "{pad}: {}",
            reports[0]
        );
    }
}

#[test]
fn ordered_streams_report_nothing() {
    let distorted: Vec<u64> = (0..8).map(|i| i * 40).collect();
    let out = run("distorted", &distorted);
    let s = out.summary.as_ref().expect("summary");
    assert_eq!((s.out_of_order_reference, s.out_of_order_distorted), (0, 0));
    assert_eq!(s.frames, 8);
    assert!(
        !out.warnings.iter().any(|w| w.contains("running time")),
        "{:?}",
        out.warnings
    );
}
