//! Issue 5 item 6, bad input and hostile properties: odd and extreme sizes, GAP buffers,
//! missing timestamps, differing frame rates, flushing seeks, caps renegotiation on one pad, a
//! live pad that never receives data, EOS on one pad, absurd property values. Each case has
//! the outcome the README's "Bad input and faults" section documents: a clear error, or scores
//! equal to the CPU engine run directly on the same frames. Every wait is bounded, so a hang
//! fails the test instead of blocking CI.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use gst::prelude::*;
use gst_video::prelude::*;
use gst_video::VideoFormat;
use gstvmafcompare::engine::CpuBackend;
use gstvmafcompare::engine::{LumaPlane, Model, Scorer};
use gstvmafcompare::vmafcompare::frame_meta;

/// Every bounded wait of these tests.
const BOUND: Duration = Duration::from_secs(60);

type Metrics = Vec<(String, f64)>;

/// Deterministic luma content of frame `t`: a gradient with texture that moves with `t`.
fn luma(w: usize, h: usize, t: usize, bpc: u32) -> Vec<u16> {
    let max = (1u32 << bpc) - 1;
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let base = (x * 5 + y * 3 + t * 7) % 200;
            let tex = (((x + 2 * t) * (y + 1) * 2_654_435_761usize) >> 7) % 40;
            let v8 = (base + tex) as u32;
            out.push(((v8 << (bpc - 8)) | (v8 >> (16 - bpc).min(8))).min(max) as u16);
        }
    }
    out
}

/// The distorted version of a plane: a horizontal 3-tap blur plus a fixed dither.
fn distort(l: &[u16], w: usize, bpc: u32) -> Vec<u16> {
    let max = (1i64 << bpc) - 1;
    l.iter()
        .enumerate()
        .map(|(i, &v)| {
            let x = i % w;
            let a = if x > 0 { l[i - 1] } else { v } as i64;
            let b = if x + 1 < w { l[i + 1] } else { v } as i64;
            let d = ((i * 7919) % 5) as i64 - 2;
            ((a + 2 * v as i64 + b) / 4 + (d << (bpc - 8))).clamp(0, max) as u16
        })
        .collect()
}

fn info(format: VideoFormat, w: u32, h: u32, fps: i32) -> gst_video::VideoInfo {
    init();
    gst_video::VideoInfo::builder(format, w, h)
        .fps(gst::Fraction::new(fps, 1))
        .build()
        .unwrap()
}

/// A buffer of `info` holding `luma` (right-aligned samples of the format's depth) and
/// mid-grey chroma.
fn buffer(
    info: &gst_video::VideoInfo,
    luma: &[u16],
    pts: Option<gst::ClockTime>,
    duration: Option<gst::ClockTime>,
) -> gst::Buffer {
    let mut buf = gst::Buffer::with_size(info.size()).unwrap();
    {
        let b = buf.get_mut().unwrap();
        b.set_pts(pts);
        b.set_duration(duration);
    }
    let finfo = info.format_info();
    let (w, h) = (info.width() as usize, info.height() as usize);
    let wide = finfo.bits() > 8;
    let shift = finfo.shift()[0];
    let mid = (1u16 << (finfo.depth()[0] - 1)) << shift;
    let mut frame = gst_video::VideoFrame::from_buffer_writable(buf, info).unwrap();
    for p in 0..frame.n_planes() {
        let data = frame.plane_data_mut(p).unwrap();
        if wide {
            for c in data.chunks_exact_mut(2) {
                c.copy_from_slice(&mid.to_le_bytes());
            }
        } else {
            data.fill(128);
        }
    }
    let stride = frame.plane_stride()[0] as usize;
    let (pstride, poffset) = (
        finfo.pixel_stride()[0] as usize,
        finfo.poffset()[0] as usize,
    );
    let data = frame.plane_data_mut(0).unwrap();
    for y in 0..h {
        for x in 0..w {
            let v = luma[y * w + x];
            let i = y * stride + poffset + x * pstride;
            if wide {
                data[i..i + 2].copy_from_slice(&(v << shift).to_le_bytes());
            } else {
                data[i] = v as u8;
            }
        }
    }
    frame.into_buffer()
}

fn ms(v: u64) -> Option<gst::ClockTime> {
    Some(gst::ClockTime::from_mseconds(v))
}

/// An empty GAP buffer, as the aggregator makes from a GAP event.
fn gap(pts: Option<gst::ClockTime>, duration: Option<gst::ClockTime>) -> gst::Buffer {
    let mut b = gst::Buffer::new();
    {
        let b = b.get_mut().unwrap();
        b.set_pts(pts);
        b.set_duration(duration);
        b.set_flags(gst::BufferFlags::GAP | gst::BufferFlags::DROPPABLE);
    }
    b
}

/// Scores of `pairs` (reference, distorted planes) by the CPU engine, without GStreamer.
fn direct(pairs: &[(Vec<u16>, Vec<u16>)], w: usize, h: usize, bpc: u32) -> Vec<Metrics> {
    let model = Arc::new(Model::load("vmaf_v0.6.1").unwrap());
    let backend = CpuBackend::for_model(&model, w, h, bpc).unwrap();
    let mut scorer = Scorer::new(Box::new(backend), model, 1).unwrap();
    let mut done = Vec::new();
    for (i, (r, d)) in pairs.iter().enumerate() {
        let rp = LumaPlane::packed(r, w, h, bpc).unwrap();
        let dp = LumaPlane::packed(d, w, h, bpc).unwrap();
        done.extend(scorer.push(&rp, &dp, i).unwrap());
    }
    done.extend(scorer.finish().unwrap().into_iter().map(|(_, s)| s));
    done.into_iter()
        .map(|s| {
            s.scores
                .expect("every frame scored")
                .iter()
                .map(|(n, v)| (n.to_owned(), v))
                .collect()
        })
        .collect()
}

fn assert_scores(out: &RunOutput, want: &[Metrics], what: &str) {
    assert_eq!(out.frames.len(), want.len(), "{what}: frames scored");
    for (i, (f, w)) in out.frames.iter().zip(want).enumerate() {
        assert_eq!(f.index, i as u64, "{what}");
        assert_eq!(&f.metrics, w, "{what}: frame {i}");
    }
}

/// Two `appsrc`s (`r`, `d`) into `vmafcompare backend=cpu {props}` into `appsink name=out`,
/// already PLAYING.
struct Feed {
    run: Running,
    r: gst_app::AppSrc,
    d: gst_app::AppSrc,
}

impl Feed {
    fn new(props: &str) -> Self {
        let run = start(&format!(
            "vmafcompare name=cmp backend=cpu {props} ! appsink name=out sync=false \
             appsrc name=r format=time ! cmp.reference appsrc name=d format=time ! cmp.distorted"
        ));
        let get = |n: &str| {
            run.pipeline
                .by_name(n)
                .unwrap()
                .downcast::<gst_app::AppSrc>()
                .unwrap()
        };
        let (r, d) = (get("r"), get("d"));
        Feed { run, r, d }
    }

    fn caps(&self, r: &gst_video::VideoInfo, d: &gst_video::VideoInfo) {
        self.r.set_caps(Some(&r.to_caps().unwrap()));
        self.d.set_caps(Some(&d.to_caps().unwrap()));
    }

    fn push(&self, r: Option<gst::Buffer>, d: Option<gst::Buffer>) {
        if let Some(r) = r {
            let _ = self.r.push_buffer(r);
        }
        if let Some(d) = d {
            let _ = self.d.push_buffer(d);
        }
    }

    fn finish(self) -> RunOutput {
        let _ = self.r.end_of_stream();
        let _ = self.d.end_of_stream();
        self.run.finish(BOUND)
    }
}

/// `n` frame pairs of `info`, frame i at `i * 40` ms.
fn frames(info: &gst_video::VideoInfo, n: usize) -> Vec<(Vec<u16>, Vec<u16>)> {
    let (w, h) = (info.width() as usize, info.height() as usize);
    let bpc = info.format_info().depth()[0];
    (0..n)
        .map(|t| {
            let r = luma(w, h, t, bpc);
            let d = distort(&r, w, bpc);
            (r, d)
        })
        .collect()
}

#[test]
fn odd_sizes_score_as_the_cpu_engine_directly() {
    for (format, w, h) in [
        (VideoFormat::I420, 33, 33),
        (VideoFormat::I420, 35, 37),
        (VideoFormat::Nv12, 161, 91),
        (VideoFormat::I42010le, 37, 41),
        (VideoFormat::Gray8, 97, 33),
        (VideoFormat::Y44412le, 33, 97),
    ] {
        let vi = info(format, w, h, 25);
        let pairs = frames(&vi, 4);
        let feed = Feed::new("");
        feed.caps(&vi, &vi);
        for (i, (r, d)) in pairs.iter().enumerate() {
            let t = ms(40 * i as u64);
            feed.push(
                Some(buffer(&vi, r, t, ms(40))),
                Some(buffer(&vi, d, t, ms(40))),
            );
        }
        let out = feed.finish();
        let what = format!("{w}x{h} {format:?}");
        assert!(out.errors.is_empty(), "{what}: {:?}", out.errors);
        let bpc = vi.format_info().depth()[0];
        assert_scores(&out, &direct(&pairs, w as usize, h as usize, bpc), &what);
        assert_eq!(out.metas.len(), 4, "{what}: meta on every buffer");
    }
}

#[test]
fn sizes_outside_the_limits_are_refused_at_caps() {
    for (w, h, want) in [
        (
            1,
            1,
            "1x1 is smaller than the 33x33 minimum that VMAF's filters need",
        ),
        (32, 33, "32x33 is smaller than the 33x33 minimum"),
        (33, 32, "33x32 is smaller than the 33x33 minimum"),
        (16385, 64, "16385x64 is larger than the 16384x16384 maximum"),
        (
            64,
            100_000,
            "64x100000 is larger than the 16384x16384 maximum",
        ),
    ] {
        let vi = info(VideoFormat::Gray8, w, h, 25);
        let feed = Feed::new("");
        feed.caps(&vi, &vi);
        // Caps go out before the first buffer; a tiny buffer is enough to send them.
        feed.push(Some(gst::Buffer::with_size(16).unwrap()), None);
        feed.push(None, Some(gst::Buffer::with_size(16).unwrap()));
        let out = feed.finish();
        assert!(out.frames.is_empty());
        assert!(!out.errors.iter().any(|e| e == "timeout"), "{w}x{h} hangs");
        let first = out.error_details.first().expect("an error");
        assert!(first.matches(gst::CoreError::Negotiation), "{first:?}");
        assert!(
            out.errors[0].contains("pad: ") && out.errors[0].contains(want),
            "{w}x{h}: {:?}",
            out.errors
        );
    }
}

#[test]
fn frames_of_8k_score_as_the_cpu_engine_directly() {
    // 8192x4320 on the CPU takes about a second a frame: two frames.
    let vi = info(VideoFormat::Gray8, 8192, 4320, 25);
    let pairs = frames(&vi, 2);
    let feed = Feed::new("");
    feed.caps(&vi, &vi);
    for (i, (r, d)) in pairs.iter().enumerate() {
        let t = ms(40 * i as u64);
        feed.push(
            Some(buffer(&vi, r, t, ms(40))),
            Some(buffer(&vi, d, t, ms(40))),
        );
    }
    let started = Instant::now();
    let out = feed.finish();
    eprintln!(
        "8192x4320, 2 frames: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_scores(&out, &direct(&pairs, 8192, 4320, 8), "8192x4320");
}

#[test]
fn bits_above_the_depth_are_ignored() {
    // I420_10LE and I420_12LE keep samples in 16-bit words; a hostile stream may set the high
    // bits. They are not part of the sample: scores equal those of the in-range planes. (They
    // used to reach the extractors: garbage scores, and a non-finite ADM for some planes, which
    // fuzz/cpu_extract found.)
    for (format, bpc) in [(VideoFormat::I42010le, 10u32), (VideoFormat::I42012le, 12)] {
        let vi = info(format, 64, 48, 25);
        let pairs = frames(&vi, 3);
        let dirty = |p: &[u16], seed: usize| -> Vec<u16> {
            p.iter()
                .enumerate()
                .map(|(i, &v)| v | ((((i * 7 + seed) % 64) as u16) << bpc))
                .collect()
        };
        // The GPU masks in its sample loader: checked too where a GPU is usable.
        let gpu = gstvmafcompare::cuda::GpuDevice::open(0).is_ok();
        for props in ["", "backend=cuda"].into_iter().take(1 + usize::from(gpu)) {
            let feed = Feed::new(props);
            feed.caps(&vi, &vi);
            for (i, (r, d)) in pairs.iter().enumerate() {
                let t = ms(40 * i as u64);
                feed.push(
                    Some(buffer(&vi, &dirty(r, 1), t, ms(40))),
                    Some(buffer(&vi, &dirty(d, 2), t, ms(40))),
                );
            }
            let out = feed.finish();
            assert!(out.errors.is_empty(), "{:?}", out.errors);
            assert_scores(
                &out,
                &direct(&pairs, 64, 48, bpc),
                &format!("{format:?} {props}"),
            );
        }
    }
}

#[test]
fn truncated_buffer_is_a_decode_error_naming_the_pad() {
    let vi = info(VideoFormat::I420, 64, 48, 25);
    let pairs = frames(&vi, 2);
    let feed = Feed::new("");
    feed.caps(&vi, &vi);
    feed.push(
        Some(buffer(&vi, &pairs[0].0, ms(0), ms(40))),
        Some(buffer(&vi, &pairs[0].1, ms(0), ms(40))),
    );
    let mut short = gst::Buffer::with_size(100).unwrap();
    short.get_mut().unwrap().set_pts(ms(40));
    feed.push(Some(buffer(&vi, &pairs[1].0, ms(40), ms(40))), Some(short));
    let out = feed.finish();
    let e = out.error_details.first().expect("an error");
    assert!(e.matches(gst::StreamError::Decode), "{e:?}");
    assert!(
        out.errors[0].starts_with("distorted: cannot map buffer"),
        "{:?}",
        out.errors
    );
}

#[test]
fn gap_buffers_and_events_are_not_scored() {
    // Reference frame 2 and distorted frame 4 are GAPs (empty buffers, as the aggregator
    // makes from GAP events); the other pairs are scored as if the gaps were not there.
    let vi = info(VideoFormat::I420, 64, 48, 25);
    let pairs = frames(&vi, 6);
    let feed = Feed::new("");
    feed.caps(&vi, &vi);
    for (i, (r, d)) in pairs.iter().enumerate() {
        let t = ms(40 * i as u64);
        let rb = if i == 2 {
            gap(t, ms(40))
        } else {
            buffer(&vi, r, t, ms(40))
        };
        let db = if i == 4 {
            gap(t, ms(40))
        } else {
            buffer(&vi, d, t, ms(40))
        };
        feed.push(Some(rb), Some(db));
    }
    let out = feed.finish();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let kept: Vec<_> = [0, 1, 3, 5].iter().map(|&i| pairs[i].clone()).collect();
    assert_scores(&out, &direct(&kept, 64, 48, 8), "gaps");
    let s = out.summary.expect("summary");
    assert_eq!(
        (s.frames, s.unpaired_reference, s.unpaired_distorted),
        (4, 1, 1)
    );
    // The distorted GAP leaves as a GAP event, every other distorted buffer as a buffer.
    assert_eq!(out.buffers_out, 5);

    // A GAP event on the reference pad (sent through appsrc, in order) has the same effect.
    let feed = Feed::new("");
    feed.caps(&vi, &vi);
    for (i, (r, d)) in pairs.iter().take(4).enumerate() {
        let t = ms(40 * i as u64);
        if i == 1 {
            let ev = gst::event::Gap::builder(gst::ClockTime::from_mseconds(40))
                .duration(ms(40))
                .build();
            assert!(feed.r.send_event(ev), "appsrc takes the GAP event");
        } else {
            feed.push(Some(buffer(&vi, r, t, ms(40))), None);
        }
        feed.push(None, Some(buffer(&vi, d, t, ms(40))));
    }
    let out = feed.finish();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let kept: Vec<_> = [0, 2, 3].iter().map(|&i| pairs[i].clone()).collect();
    assert_scores(&out, &direct(&kept, 64, 48, 8), "gap event");
    let s = out.summary.expect("summary");
    assert_eq!((s.frames, s.unpaired_distorted), (3, 1));
    assert_eq!(out.buffers_out, 4);
}

#[test]
fn buffers_without_timestamps_pair_in_arrival_order() {
    let vi = info(VideoFormat::I420, 64, 48, 25);
    let pairs = frames(&vi, 5);
    let want = direct(&pairs, 64, 48, 8);
    // Neither pad timestamped; then only the reference.
    for ref_pts in [false, true] {
        let feed = Feed::new("");
        feed.caps(&vi, &vi);
        for (i, (r, d)) in pairs.iter().enumerate() {
            let t = ref_pts.then(|| gst::ClockTime::from_mseconds(40 * i as u64));
            let dur = ref_pts.then(|| gst::ClockTime::from_mseconds(40));
            feed.push(
                Some(buffer(&vi, r, t, dur)),
                Some(buffer(&vi, d, None, None)),
            );
        }
        let out = feed.finish();
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert_scores(&out, &want, "no timestamps");
        assert!(out
            .frames
            .iter()
            .all(|f| f.pts.is_none() && f.running_time.is_none()));
        assert_eq!(out.summary.unwrap().unpaired_reference, 0);
    }
}

#[test]
fn timestamps_at_the_top_of_the_clock_range_do_not_overflow() {
    // pts + duration passes the clock's range (gst::ClockTime addition panics there in debug
    // builds and wraps in release): no error, no frame dropped, scores as the engine directly.
    let vi = info(VideoFormat::I420, 64, 48, 25);
    let pairs = frames(&vi, 5);
    let want = direct(&pairs, 64, 48, 8);
    let base = gst::ClockTime::MAX - gst::ClockTime::from_seconds(1);
    let feed = Feed::new("");
    feed.caps(&vi, &vi);
    for (i, (r, d)) in pairs.iter().enumerate() {
        let t = Some(base + gst::ClockTime::from_mseconds(40 * i as u64));
        let dur = Some(gst::ClockTime::from_seconds(10));
        feed.push(Some(buffer(&vi, r, t, dur)), Some(buffer(&vi, d, t, dur)));
    }
    let out = feed.finish();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_scores(&out, &want, "pts near ClockTime::MAX");
}

#[test]
fn differing_frame_rates_pair_each_frame_with_the_nearest() {
    let vi50 = info(VideoFormat::I420, 64, 48, 50);
    let vi25 = info(VideoFormat::I420, 64, 48, 25);
    let content: Vec<Vec<u16>> = (0..20).map(|t| luma(64, 48, t, 8)).collect();

    // Reference at 50 fps, distorted at 25 fps: distorted frame j shows reference frame 2j.
    let feed = Feed::new("");
    feed.caps(&vi50, &vi25);
    for (k, c) in content.iter().enumerate() {
        feed.push(Some(buffer(&vi50, c, ms(20 * k as u64), ms(20))), None);
        if k % 2 == 0 {
            let d = distort(c, 64, 8);
            feed.push(None, Some(buffer(&vi25, &d, ms(20 * k as u64), ms(40))));
        }
    }
    let out = feed.finish();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let want: Vec<_> = (0..10)
        .map(|j| (content[2 * j].clone(), distort(&content[2 * j], 64, 8)))
        .collect();
    assert_scores(&out, &direct(&want, 64, 48, 8), "ref 50 fps, dis 25 fps");
    let s = out.summary.unwrap();
    assert_eq!(
        (s.frames, s.unpaired_reference, s.unpaired_distorted),
        (10, 10, 0)
    );

    // Reference at 25 fps, distorted at 50 fps: every other distorted frame passes unscored.
    let feed = Feed::new("");
    feed.caps(&vi25, &vi50);
    for (k, c) in content.iter().enumerate() {
        if k % 2 == 0 {
            feed.push(Some(buffer(&vi25, c, ms(20 * k as u64), ms(40))), None);
        }
        let d = distort(c, 64, 8);
        feed.push(None, Some(buffer(&vi50, &d, ms(20 * k as u64), ms(20))));
    }
    let out = feed.finish();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_scores(&out, &direct(&want, 64, 48, 8), "ref 25 fps, dis 50 fps");
    let s = out.summary.unwrap();
    assert_eq!(
        (s.frames, s.unpaired_reference, s.unpaired_distorted),
        (10, 0, 10)
    );
    assert_eq!(out.buffers_out, 20);
}

/// Writes frames `from..` of a raw I420 file to a new temporary file.
fn tail_of(
    path: &std::path::Path,
    frame_bytes: usize,
    from: usize,
    name: &str,
) -> std::path::PathBuf {
    let data = std::fs::read(path).unwrap();
    let out = temp_path(name);
    std::fs::write(&out, &data[from * frame_bytes..]).unwrap();
    out
}

#[test]
fn flushing_seek_restarts_scoring_as_a_fresh_run_from_there() {
    let p = reference_pairs().remove(0); // 160x90, 48 frames, 25 fps
    let (seek_to, before) = (20usize, 10usize);
    let log = temp_path("seek.json");
    let desc = format!(
        "vmafcompare name=cmp backend=cpu results-location=\"{}\" ! \
         appsink name=pull sync=false max-buffers=1 drop=false {} {}",
        log.display(),
        raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
        raw_branch(&p.distorted, p.width, p.height, p.format, "distorted")
    );
    let running = start(&desc);
    let pipeline = running.pipeline.clone();
    let sink = pipeline
        .by_name("pull")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    let pull = || sink.try_pull_sample(gst::ClockTime::from_seconds(BOUND.as_secs()));
    // The sink holds one buffer and blocks, so the element is mid-stream here.
    for _ in 0..before {
        assert!(pull().is_some(), "no sample before the seek");
    }
    assert!(pipeline
        .seek_simple(
            gst::SeekFlags::FLUSH | gst::SeekFlags::ACCURATE,
            gst::ClockTime::from_mseconds(40 * seek_to as u64),
        )
        .is_ok());
    let mut after = Vec::new();
    let deadline = Instant::now() + BOUND;
    while let Some(sample) = pull() {
        assert!(Instant::now() < deadline, "seek run does not end");
        if let Some(m) = sample.buffer().and_then(frame_meta) {
            after.push(m);
        }
    }
    assert!(sink.is_eos(), "the pull loop ended without EOS");
    let out = running.finish(BOUND);
    assert!(out.errors.is_empty(), "{:?}", out.errors);

    // A fresh run over the frames from the seek target on.
    let fb = 160 * 90 * 3 / 2;
    let (r, d) = (
        tail_of(&p.reference, fb, seek_to, "seek_ref.yuv"),
        tail_of(&p.distorted, fb, seek_to, "seek_dis.yuv"),
    );
    let fresh = run(
        &format!(
            "vmafcompare name=cmp backend=cpu ! fakesink {} {}",
            raw_branch(&r, 160, 90, "I420", "reference"),
            raw_branch(&d, 160, 90, "I420", "distorted")
        ),
        BOUND,
    );
    assert!(fresh.errors.is_empty(), "{:?}", fresh.errors);
    assert_eq!(fresh.frames.len(), 48 - seek_to);
    assert_eq!(after.len(), fresh.frames.len(), "frames after the seek");
    for (a, f) in after.iter().zip(&fresh.frames) {
        assert_eq!(a.index, f.index);
        assert_eq!(
            a.pts,
            ms(40 * (seek_to as u64 + f.index)),
            "timestamps are the stream's"
        );
        assert_eq!(a.metrics, f.metrics, "frame {}", f.index);
    }
    // The summary and the log restarted with the seek: they hold the same frames.
    let s = out.summary.expect("summary");
    assert_eq!(s.frames, fresh.frames.len() as u64);
    assert_eq!(s.get("vmaf"), fresh.summary.unwrap().get("vmaf"));
    let logged = libvmaf_frames(&log);
    assert_eq!(logged.len(), fresh.frames.len());
}

#[test]
fn caps_renegotiation_on_one_pad() {
    let a = info(VideoFormat::I420, 64, 48, 25);
    let a_nv12 = info(VideoFormat::Nv12, 64, 48, 25);
    let b = info(VideoFormat::I420, 96, 64, 25);
    let pa = frames(&a, 6);
    let pb = frames(&b, 3);

    // Format change on the reference pad only (same luma): scoring goes on unchanged.
    let feed = Feed::new("");
    feed.caps(&a, &a);
    for (i, (r, d)) in pa.iter().enumerate() {
        if i == 3 {
            feed.r.set_caps(Some(&a_nv12.to_caps().unwrap()));
        }
        let vi = if i >= 3 { &a_nv12 } else { &a };
        let t = ms(40 * i as u64);
        feed.push(
            Some(buffer(vi, r, t, ms(40))),
            Some(buffer(&a, d, t, ms(40))),
        );
    }
    let out = feed.finish();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_scores(&out, &direct(&pa, 64, 48, 8), "I420 -> NV12 on one pad");

    // Size change on the reference pad only, with scale-method=none: an error naming both
    // sizes once the first mismatched pair is made; the frames completed before it were
    // scored. (With the default bicubic the distorted stream is scaled instead:
    // tests/scaling_input.rs.)
    let feed = Feed::new("scale-method=none");
    feed.caps(&a, &a);
    for (i, (ra, da)) in pa.iter().take(5).enumerate() {
        let t = ms(40 * i as u64);
        if i == 3 {
            feed.r.set_caps(Some(&b.to_caps().unwrap()));
        }
        let r = if i >= 3 {
            buffer(&b, &pb[0].0, t, ms(40))
        } else {
            buffer(&a, ra, t, ms(40))
        };
        feed.push(Some(r), Some(buffer(&a, da, t, ms(40))));
    }
    let out = feed.finish();
    let e = out.error_details.first().expect("an error");
    assert!(e.matches(gst::CoreError::Negotiation), "{e:?}");
    assert!(
        out.errors[0].contains("reference is 96x64 but distorted is 64x48"),
        "{:?}",
        out.errors
    );
    assert_eq!(out.frames.len(), 2);

    // Size change on both pads: the run goes on at the new size. Frames of each size score
    // as a separate run of that size, except integer_motion3 of the first new-size frame
    // (libvmaf gives frame 0 the next frame's motion; here the index goes on).
    let feed = Feed::new("");
    feed.caps(&a, &a);
    for i in 0..6 {
        let t = ms(40 * i as u64);
        if i == 3 {
            feed.caps(&b, &b);
        }
        let (vi, (r, d)) = if i >= 3 {
            (&b, &pb[i - 3])
        } else {
            (&a, &pa[i])
        };
        feed.push(
            Some(buffer(vi, r, t, ms(40))),
            Some(buffer(vi, d, t, ms(40))),
        );
    }
    let out = feed.finish();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), 6);
    let (wa, wb) = (direct(&pa[..3], 64, 48, 8), direct(&pb, 96, 64, 8));
    for (i, f) in out.frames.iter().enumerate() {
        assert_eq!(f.index, i as u64);
        let want = if i < 3 { &wa[i] } else { &wb[i - 3] };
        for ((name, v), (_, w)) in f.metrics.iter().zip(want) {
            if i == 3 && name == "integer_motion3" {
                assert_eq!(*v, 0.0);
            } else {
                assert_eq!(v, w, "frame {i} {name}");
            }
        }
    }
}

#[test]
fn live_pad_without_data_times_out_after_the_latency() {
    // Live: the distorted pad gets frames, the reference pad nothing at all (not even caps).
    // Each distorted buffer must leave unscored once its running time plus the latency has
    // passed, instead of waiting for a partner forever.
    init();
    let latency = Duration::from_millis(200);
    let pipeline = gst::parse::launch(&format!(
        "vmafcompare name=cmp backend=cpu latency={} ! appsink name=live sync=false \
         appsrc name=r format=time is-live=true do-timestamp=true ! cmp.reference \
         appsrc name=d format=time is-live=true do-timestamp=true ! cmp.distorted",
        latency.as_nanos()
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let sink = pipeline
        .by_name("live")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    let a = arrivals.clone();
    sink.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |s| {
                let sample = s.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                let scored = sample.buffer().and_then(frame_meta).is_some();
                a.lock().unwrap().push((Instant::now(), scored));
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
    let vi = info(VideoFormat::I420, 64, 48, 25);
    d.set_caps(Some(&vi.to_caps().unwrap()));
    pipeline.set_state(gst::State::Playing).unwrap();
    let content = frames(&vi, 10);
    let mut pushed = Vec::new();
    for (_, dis) in &content {
        pushed.push(Instant::now());
        let _ = d.push_buffer(buffer(&vi, dis, None, ms(40)));
        std::thread::sleep(Duration::from_millis(40));
    }
    // Bounded wait for all of them, before any EOS.
    let deadline = Instant::now() + latency + Duration::from_secs(10);
    while arrivals.lock().unwrap().len() < content.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let got = arrivals.lock().unwrap().clone();
    assert_eq!(
        got.len(),
        content.len(),
        "distorted buffers held back without a reference: no live timeout"
    );
    for (i, ((at, scored), sent)) in got.iter().zip(&pushed).enumerate() {
        assert!(!scored, "buffer {i} has scores without a reference");
        let waited = at.duration_since(*sent);
        assert!(
            waited + Duration::from_millis(15) >= latency,
            "buffer {i} left after {waited:?}, before the {latency:?} latency"
        );
    }
    let _ = r.end_of_stream();
    let _ = d.end_of_stream();
    let bus = pipeline.bus().unwrap();
    let mut summary = None;
    let deadline = Instant::now() + BOUND;
    while Instant::now() < deadline {
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(100)) else {
            continue;
        };
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => panic!("{}", e.error()),
            gst::MessageView::Element(e) => {
                if let Some(s) = e.structure().filter(|s| s.name() == "vmafcompare-summary") {
                    summary = gstvmafcompare::vmafcompare::SummaryMessage::try_from(s).ok();
                }
            }
            _ => {}
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    let s = summary.expect("summary at EOS");
    assert_eq!(
        (s.frames, s.unpaired_reference, s.unpaired_distorted),
        (0, 0, 10)
    );
}

#[test]
fn eos_on_one_pad_scores_the_pairs_and_passes_the_rest() {
    let vi = info(VideoFormat::I420, 64, 48, 25);
    let pairs = frames(&vi, 8);
    // The reference ends after 4 frames; the distorted goes on to 8.
    let feed = Feed::new("");
    feed.caps(&vi, &vi);
    for (i, (r, d)) in pairs.iter().enumerate() {
        let t = ms(40 * i as u64);
        if i < 4 {
            feed.push(Some(buffer(&vi, r, t, ms(40))), None);
        } else if i == 4 {
            let _ = feed.r.end_of_stream();
        }
        feed.push(None, Some(buffer(&vi, d, t, ms(40))));
    }
    let out = feed.finish();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_scores(
        &out,
        &direct(&pairs[..4], 64, 48, 8),
        "reference ends early",
    );
    assert_eq!(out.buffers_out, 8);
    let s = out.summary.unwrap();
    assert_eq!(
        (s.frames, s.unpaired_reference, s.unpaired_distorted),
        (4, 0, 4)
    );
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("0 reference and 4 distorted frames had no partner")),
        "{:?}",
        out.warnings
    );

    // The distorted pad ends before any data (no caps either): references are counted.
    let feed = Feed::new("");
    feed.caps(&vi, &vi);
    let _ = feed.d.end_of_stream();
    for (i, (r, _)) in pairs.iter().take(5).enumerate() {
        feed.push(Some(buffer(&vi, r, ms(40 * i as u64), ms(40))), None);
    }
    let out = feed.finish();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let s = out.summary.expect("summary");
    assert_eq!(
        (s.frames, s.unpaired_reference, s.unpaired_distorted),
        (0, 5, 0)
    );
    assert_eq!(out.buffers_out, 0);
}

const SMALL: &str = "videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=I420,width=64,height=48 ! cmp.reference \
                     videotestsrc num-buffers=3 pattern=snow ! video/x-raw,format=I420,width=64,height=48 ! cmp.distorted";

fn small(props: &str) -> RunOutput {
    run(
        &format!("vmafcompare name=cmp {props} ! appsink name=out sync=false {SMALL}"),
        BOUND,
    )
}

#[test]
fn absurd_property_values_are_clamped_or_refused() {
    init();
    // Out of the ParamSpec range: GLib refuses the value (with a warning) and the default
    // stays. (Rust's set_property would panic in the caller; this is the C / gst-launch path.)
    for value in ["0", "4294967295", "-1"] {
        let p = gst::parse::launch(&format!(
            "vmafcompare name=cmp subsample={value} ! fakesink"
        ));
        if let Ok(p) = p {
            let cmp = p.downcast::<gst::Bin>().unwrap().by_name("cmp").unwrap();
            assert_eq!(cmp.property::<u32>("subsample"), 1, "subsample={value}");
        }
    }
    let cmp = gst::ElementFactory::make("vmafcompare").build().unwrap();
    let spec = cmp.find_property("subsample").unwrap();
    let spec = spec.downcast_ref::<gst::glib::ParamSpecUInt>().unwrap();
    assert_eq!((spec.minimum(), spec.maximum()), (1, 1_000_000));

    // The largest subsample scores frame 0 only and passes every buffer.
    let out = small("backend=cpu subsample=1000000");
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), 1);
    assert_eq!(out.buffers_out, 3);

    // device-id is ignored on the CPU; out of range, auto falls back and cuda refuses.
    let out = small("backend=cpu device-id=2147483647");
    assert!(
        out.errors.is_empty() && out.frames.len() == 3,
        "{:?}",
        out.errors
    );
    let out = small("backend=auto device-id=2147483647");
    assert!(
        out.errors.is_empty() && out.frames.len() == 3,
        "{:?}",
        out.errors
    );
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("scoring on the CPU")),
        "{:?}",
        out.warnings
    );
    let out = small("backend=cuda device-id=2147483647");
    assert!(out.start_failed && out.frames.is_empty());
    assert!(
        out.errors[0].starts_with("backend=cuda: no usable GPU"),
        "{:?}",
        out.errors
    );

    // Models and result paths that are no usable file: an error naming them before any frame.
    let long = format!("/tmp/{}.json", "x".repeat(300));
    let dir = std::env::temp_dir().display().to_string();
    for (props, want) in [
        (
            "model=\"\"".to_owned(),
            "cannot read model file ''".to_owned(),
        ),
        (
            "model=/dev/zero".to_owned(),
            "cannot read model file '/dev/zero': not a regular file".to_owned(),
        ),
        (
            format!("model=\"{dir}\""),
            format!("cannot read model file '{dir}': not a regular file"),
        ),
        (
            format!("results-location=\"{long}\""),
            "File name too long".to_owned(),
        ),
        (
            format!("results-location=\"{dir}\""),
            "Is a directory".to_owned(),
        ),
    ] {
        let started = Instant::now();
        let out = small(&format!("backend=cpu {props}"));
        assert!(started.elapsed() < BOUND, "{props} hangs");
        assert!(out.frames.is_empty(), "{props}");
        assert!(
            out.errors.first().is_some_and(|e| e.contains(&want)),
            "{props}: want '{want}' in {:?}",
            out.errors
        );
    }

    // A log that cannot be written (device full): a write error, not a crash.
    let out = small("backend=cpu results-location=/dev/full");
    let e = out.error_details.first().expect("an error");
    assert!(
        e.matches(gst::ResourceError::Write),
        "{e:?} {:?}",
        out.errors
    );
    assert!(out.errors[0].contains("/dev/full"), "{:?}", out.errors);
    assert!(
        out.errors[0].contains("No space left on device"),
        "{:?}",
        out.errors
    );
}
