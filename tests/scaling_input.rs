//! The element with streams of other sizes (issue "Renditions of any size", items 2 and 5):
//! the scores of a scaled rendition equal the CPU engine scoring the frames that
//! `engine::scale` makes (the scaler itself is checked against FFmpeg's in
//! tests/scale_swscale.rs, the whole path against ffmpeg + libvmaf in tests/scaling.rs); a
//! distorted stream larger than the reference is scaled down; a size change mid-stream
//! scales the new size without losing a frame; another frame rate or display aspect ratio
//! is scored with a warning that says so; a scoring size below the metrics' minimum and
//! `scale-method=none` are errors that say what to change.

mod common;

use common::*;
use gst::prelude::*;
use gst_video::VideoFormat;
use gstvmafcompare::engine::scale::cpu::{scale_plane, Scratch};
use gstvmafcompare::engine::scale::{ScaleMethod, StreamScaler};
use gstvmafcompare::engine::{CpuBackend, LumaPlane, Model, Scorer};

/// Per frame: the reference's and the distorted stream's size.
type Sizes = ((usize, usize), (usize, usize));

/// A moving, textured 8-bit picture (`t`: frame number).
fn picture(w: usize, h: usize, t: usize) -> Vec<u16> {
    let mut v = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let fx = (x as f64 + 3.0 * t as f64) / w as f64;
            let fy = y as f64 / h as f64;
            let s = 128.0
                + 60.0 * (fx * 23.0).sin() * (fy * 17.0).cos()
                + 30.0 * ((x * 7 + y * 13 + t * 5) % 31) as f64 / 31.0;
            v.push(s.clamp(0.0, 255.0) as u16);
        }
    }
    v
}

fn info(w: u32, h: u32) -> gst_video::VideoInfo {
    gst_video::VideoInfo::builder(VideoFormat::Gray8, w, h)
        .fps(gst::Fraction::new(25, 1))
        .build()
        .unwrap()
}

fn buffer(info: &gst_video::VideoInfo, luma: &[u16], i: u64) -> gst::Buffer {
    let (w, h) = (info.width() as usize, info.height() as usize);
    let stride = info.stride()[0] as usize;
    let mut data = vec![0u8; info.size()];
    for y in 0..h {
        for x in 0..w {
            data[y * stride + x] = luma[y * w + x] as u8;
        }
    }
    let mut b = gst::Buffer::from_mut_slice(data);
    let bm = b.get_mut().unwrap();
    bm.set_pts(gst::ClockTime::from_mseconds(40 * i));
    bm.set_duration(gst::ClockTime::from_mseconds(40));
    b
}

/// Feeds `frames` pairs of (reference size, distorted size) pictures through the element
/// (`props` added) and returns what it posted.
fn feed(props: &str, frames: &[Sizes]) -> RunOutput {
    let run = start(&format!(
        "vmafcompare name=cmp backend=cpu {props} ! fakesink \
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
    let mut last = [(0, 0); 2];
    for (i, &(rs, ds)) in frames.iter().enumerate() {
        for (k, (src, size)) in [(&r, rs), (&d, ds)].into_iter().enumerate() {
            let vi = info(size.0 as u32, size.1 as u32);
            if last[k] != size {
                src.set_caps(Some(&vi.to_caps().unwrap()));
                last[k] = size;
            }
            // The distorted picture: the reference's content, blurred by its own size.
            let pic = picture(size.0, size.1, i + k);
            let _ = src.push_buffer(buffer(&vi, &pic, i as u64));
        }
    }
    let _ = r.end_of_stream();
    let _ = d.end_of_stream();
    run.finish(LONG)
}

/// The VMAF the CPU engine gives the same pictures, the distorted ones scaled by
/// `engine::scale` (bicubic) to the reference size; a new scorer run at each size change.
fn direct(frames: &[Sizes]) -> Vec<f64> {
    let model = std::sync::Arc::new(Model::load("vmaf_v0.6.1").unwrap());
    let mut out = Vec::new();
    let mut start = 0;
    while start < frames.len() {
        let sizes = frames[start];
        let end = (start..frames.len())
            .find(|&i| frames[i] != sizes)
            .unwrap_or(frames.len());
        let ((rw, rh), (dw, dh)) = sizes;
        let backend = CpuBackend::for_model(&model, rw, rh, 8).unwrap();
        let mut scorer = Scorer::new(Box::new(backend), model.clone(), 1).unwrap();
        let scaler = StreamScaler::new(ScaleMethod::Bicubic, (dw, dh), (rw, rh), None).unwrap();
        let (mut scratch, mut scaled) = (Scratch::default(), Vec::new());
        let mut done = Vec::new();
        for i in start..end {
            let r = picture(rw, rh, i);
            let d = picture(dw, dh, i + 1);
            let dp = LumaPlane::packed(&d, dw, dh, 8).unwrap();
            let dp = if (dw, dh) == (rw, rh) {
                dp
            } else {
                assert!(scale_plane(&scaler.luma, &dp, &mut scratch, &mut scaled));
                LumaPlane::packed(&scaled, rw, rh, 8).unwrap()
            };
            let rp = LumaPlane::packed(&r, rw, rh, 8).unwrap();
            done.extend(scorer.push(&rp, &dp, i).unwrap());
        }
        done.extend(scorer.finish().unwrap().into_iter().map(|(_, s)| s));
        out.extend(done.iter().map(|s| s.scores.as_ref().unwrap().vmaf()));
        start = end;
    }
    out
}

fn assert_vmaf(out: &RunOutput, want: &[f64], what: &str) {
    assert!(out.errors.is_empty(), "{what}: {:?}", out.errors);
    assert_eq!(out.frames.len(), want.len(), "{what}: frames scored");
    for (i, (f, w)) in out.frames.iter().zip(want).enumerate() {
        assert_eq!(f.vmaf, *w, "{what}: frame {i}");
    }
}

#[test]
fn renditions_smaller_and_larger_than_the_reference_score_as_scaled_frames() {
    for (rs, ds) in [
        ((160, 96), (96, 54)),
        ((96, 64), (160, 90)),
        ((120, 68), (119, 67)),
    ] {
        let frames = vec![(rs, ds); 6];
        let out = feed("", &frames);
        assert_vmaf(&out, &direct(&frames), &format!("{ds:?} against {rs:?}"));
        let s = out.summary.expect("summary");
        assert_eq!(
            (s.scored_width, s.scored_height),
            (rs.0 as u32, rs.1 as u32)
        );
        assert_eq!(s.reference_scaling, "none");
        assert_eq!(
            s.distorted_scaling,
            format!("bicubic {}x{}->{}x{}", ds.0, ds.1, rs.0, rs.1)
        );
    }
}

#[test]
fn a_size_change_mid_stream_is_scaled_and_no_frame_is_lost() {
    // The distorted stream switches from 96x54 to 128x72 at frame 4 (an adaptive stream
    // changing rendition), then the reference too at frame 7.
    let mut frames = vec![((160, 90), (96, 54)); 4];
    frames.extend(vec![((160, 90), (128, 72)); 3]);
    frames.extend(vec![((128, 72), (128, 72)); 3]);
    let out = feed("", &frames);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), frames.len(), "every frame scored");
    let s = out.summary.expect("summary");
    assert_eq!(s.unpaired_reference + s.unpaired_distorted, 0);
    assert_eq!(
        s.distorted_scaling,
        "bicubic 128x72->160x90+bicubic 96x54->160x90+none"
    );
    // Frames well inside each run (not next to a switch, where motion spans two runs)
    // score as the engine does on that run alone.
    let want = direct(&frames);
    for i in [1, 2, 5, 8] {
        assert_eq!(out.frames[i].vmaf, want[i], "frame {i}");
    }
}

#[test]
fn scale_method_none_and_too_small_scoring_sizes_are_errors_saying_what_to_do() {
    let out = feed("scale-method=none", &[((160, 90), (96, 54)); 3]);
    let e = out.errors.join("\n");
    assert!(
        e.contains("reference is 160x90 but distorted is 96x54") && e.contains("scale-method"),
        "{e}"
    );
    assert!(out.frames.is_empty());

    let out = feed(
        "score-width=32 score-height=18",
        &[((160, 90), (96, 54)); 3],
    );
    let e = out.errors.join("\n");
    assert!(
        e.contains("the scoring size: 32x18 is smaller than the") && e.contains("minimum"),
        "{e}"
    );
    assert!(out.frames.is_empty());

    // A tiny rendition is fine: it is scaled up to the scoring size.
    let frames = vec![((160, 90), (16, 9)); 4];
    let out = feed("", &frames);
    assert_vmaf(&out, &direct(&frames), "16x9 rendition");
}

#[test]
fn fixed_scoring_size_scales_both_streams() {
    let out = feed(
        "score-width=128 score-height=72",
        &[((192, 108), (96, 54)); 4],
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), 4);
    let s = out.summary.expect("summary");
    assert_eq!((s.scored_width, s.scored_height), (128, 72));
    assert_eq!(s.reference_scaling, "bicubic 192x108->128x72");
    assert_eq!(s.distorted_scaling, "bicubic 96x54->128x72");
}

#[test]
fn other_frame_rate_or_aspect_ratio_is_scored_with_a_warning() {
    let out = run(
        "vmafcompare name=cmp backend=cpu ! fakesink \
         videotestsrc num-buffers=10 pattern=ball ! video/x-raw,format=I420,width=160,height=90,framerate=25/1 ! cmp.reference \
         videotestsrc num-buffers=10 pattern=ball ! video/x-raw,format=I420,width=96,height=54,framerate=50/1 ! cmp.distorted",
        LONG,
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert!(!out.frames.is_empty());
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("25/1 fps but distorted is 50/1 fps")),
        "{:?}",
        out.warnings
    );
    let out = run(
        "vmafcompare name=cmp backend=cpu ! fakesink \
         videotestsrc num-buffers=4 ! video/x-raw,format=I420,width=160,height=90,framerate=25/1 ! cmp.reference \
         videotestsrc num-buffers=4 ! video/x-raw,format=I420,width=96,height=72,framerate=25/1 ! cmp.distorted",
        LONG,
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), 4);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("display aspect ratios differ")),
        "{:?}",
        out.warnings
    );
}
