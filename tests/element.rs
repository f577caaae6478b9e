//! Element behaviour: pads, meta, messages, logs, formats, and the bad-input cases of the
//! issue (size mismatch, early EOS, tiny frames, bad model, unwritable log, missing backend).

mod common;

use common::*;
use gstvmafcompare::vmafcompare::frame_meta;

fn pair(i: usize) -> RefPair {
    reference_pairs().remove(i)
}

fn pipeline(props: &str, p: &RefPair, ref_extra: &str, dis_extra: &str) -> String {
    let branch = |path: &std::path::Path, extra: &str, pad: &str| {
        raw_branch(path, p.width, p.height, p.format, pad)
            .replace(" ! cmp.", &format!("{extra} ! cmp."))
    };
    format!(
        "vmafcompare name=cmp backend=cpu {props} ! appsink name=out sync=false {} {}",
        branch(&p.reference, ref_extra, "reference"),
        branch(&p.distorted, dis_extra, "distorted")
    )
}

/// Rewrites an I420_10LE file as P010_10LE (MSB-aligned samples, interleaved chroma).
fn write_p010(src: &std::path::Path, dst: &std::path::Path, w: usize, h: usize) {
    let data = std::fs::read(src).unwrap();
    let s: Vec<u16> = data
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let frame = w * h + 2 * cw * ch;
    let mut out = Vec::with_capacity(data.len());
    for f in s.chunks_exact(frame) {
        let (y, uv) = f.split_at(w * h);
        let (u, v) = uv.split_at(cw * ch);
        for &x in y {
            out.extend_from_slice(&(x << 6).to_le_bytes());
        }
        for (a, b) in u.iter().zip(v) {
            out.extend_from_slice(&(a << 6).to_le_bytes());
            out.extend_from_slice(&(b << 6).to_le_bytes());
        }
    }
    std::fs::write(dst, out).unwrap();
}

/// Synthetic 8-bit I420 frame: a gradient with a moving pattern.
fn frame(w: usize, h: usize, t: usize) -> gst::Buffer {
    let y_len = w * h;
    let c_len = w.div_ceil(2) * h.div_ceil(2);
    let mut data = vec![128u8; y_len + 2 * c_len];
    for y in 0..h {
        for x in 0..w {
            data[y * w + x] = ((x * 3 + y * 2 + t * 5) % 256) as u8 ^ ((x * y) % 7) as u8;
        }
    }
    let mut buf = gst::Buffer::from_mut_slice(data);
    {
        let b = buf.get_mut().unwrap();
        b.set_pts(gst::ClockTime::from_mseconds(40 * t as u64));
        b.set_duration(gst::ClockTime::from_mseconds(40));
    }
    buf
}

#[test]
fn harness_identical_frames_give_perfect_features() {
    init();
    let element = gst::ElementFactory::make("vmafcompare")
        .property_from_str("backend", "cpu")
        .build()
        .unwrap();
    let mut h_ref = gst_check::Harness::with_element(&element, Some("reference"), Some("src"));
    let mut h_dis = gst_check::Harness::with_element(&element, Some("distorted"), None);
    // A harness reports itself live by default; live pipelines score on the scoring thread,
    // where the fourth of four pairs pushed at once finds the queue (queue-size 3) full and
    // is skipped (tests/live.rs). This test is about the scores: not live.
    h_ref.set_live(false);
    h_dis.set_live(false);
    let caps = gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, 96, 64)
        .fps(gst::Fraction::new(25, 1))
        .build()
        .unwrap()
        .to_caps()
        .unwrap();
    h_ref.set_src_caps(caps.clone());
    h_dis.set_src_caps(caps);
    let n = 4;
    for t in 0..n {
        h_ref.push(frame(96, 64, t)).unwrap();
        h_dis.push(frame(96, 64, t)).unwrap();
    }
    h_ref.push_event(gst::event::Eos::new());
    h_dis.push_event(gst::event::Eos::new());
    for t in 0..n {
        let out = h_ref.pull().expect("output buffer");
        assert_eq!(
            out.pts(),
            Some(gst::ClockTime::from_mseconds(40 * t as u64)),
            "frame order and timestamps kept"
        );
        let m = frame_meta(&out).expect("scores meta");
        assert_eq!(m.index, t as u64);
        // libvmaf's VIF of identical planes is 1 up to its log2 table's precision.
        for s in 0..4 {
            let v = m.get(&format!("integer_vif_scale{s}")).unwrap();
            assert!((v - 1.0).abs() < 1e-6, "vif scale {s} {v}");
        }
        // libvmaf's integer ADM of identical planes is 1 up to its fixed-point rounding.
        let adm2 = m.get("integer_adm2").unwrap();
        assert!((adm2 - 1.0).abs() < 1e-5, "adm2 {adm2}");
        assert!(m.vmaf > 90.0 && m.vmaf <= 100.0, "vmaf {}", m.vmaf);
        if t == 0 {
            assert_eq!(m.get("integer_motion2"), Some(0.0));
        } else {
            assert!(
                m.get("integer_motion2").unwrap() > 0.0,
                "moving pattern has motion"
            );
        }
    }
}

#[test]
fn size_mismatch_with_scale_method_none_is_a_negotiation_error_naming_both_sizes() {
    let out = run(
        "vmafcompare name=cmp backend=cpu scale-method=none ! fakesink \
         videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=160,height=90 ! cmp.reference \
         videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=176,height=144 ! cmp.distorted",
        LONG,
    );
    let err = out.errors.join("\n");
    assert!(err.contains("160x90") && err.contains("176x144"), "{err}");
    assert!(out.frames.is_empty());
}

#[test]
fn early_eos_on_one_pad_scores_the_pairs_and_warns() {
    let out = run(
        "vmafcompare name=cmp backend=cpu ! appsink name=out sync=false \
         videotestsrc num-buffers=10 pattern=ball ! video/x-raw,format=I420,width=160,height=90,framerate=25/1 ! cmp.reference \
         videotestsrc num-buffers=6 pattern=ball ! video/x-raw,format=I420,width=160,height=90,framerate=25/1 ! cmp.distorted",
        LONG,
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), 6);
    let s = out.summary.expect("summary");
    assert_eq!(
        (s.frames, s.unpaired_reference, s.unpaired_distorted),
        (6, 4, 0)
    );
    assert!(
        out.warnings.iter().any(|w| w.contains("4 reference")),
        "{:?}",
        out.warnings
    );
    // Identical content: VIF is 1 (up to libvmaf's log2 table) on every frame.
    for f in &out.frames {
        let v = f.get("integer_vif_scale0").unwrap();
        assert!((v - 1.0).abs() < 1e-6, "frame {} vif {v}", f.index);
    }
}

#[test]
fn frames_below_the_minimum_are_refused_with_the_minimum() {
    let out = run(
        "vmafcompare name=cmp backend=cpu ! fakesink \
         videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=8,height=8 ! cmp.reference \
         videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=8,height=8 ! cmp.distorted",
        LONG,
    );
    let err = out.errors.join("\n");
    let min = format!(
        "{}x{}",
        gstvmafcompare::features::adm::MIN_WIDTH,
        gstvmafcompare::features::adm::MIN_HEIGHT
    );
    assert!(err.contains("8x8") && err.contains(&min), "{err}");
}

fn start_error(props: &str) -> String {
    let out = run(
        &format!(
            "vmafcompare name=cmp {props} ! fakesink \
             videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=160,height=90 ! cmp.reference \
             videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=160,height=90 ! cmp.distorted"
        ),
        LONG,
    );
    assert!(out.frames.is_empty(), "no frame may be scored");
    out.errors.join("\n")
}

#[test]
fn unknown_model_name_fails_at_ready_naming_it() {
    let err = start_error("backend=cpu model=vmaf_v9");
    assert!(
        err.contains("vmaf_v9") && err.contains("vmaf_v0.6.1"),
        "{err}"
    );
}

#[test]
fn invalid_model_file_fails_naming_path_and_problem() {
    let path = temp_path("broken_model.json");
    std::fs::write(&path, "{\"model_dict\": {\"model_type\": \"LIBSVMNUSVR\"").unwrap();
    let err = start_error(&format!("backend=cpu model=\"{}\"", path.display()));
    assert!(
        err.contains(&path.display().to_string()) && err.contains("JSON"),
        "{err}"
    );
}

#[test]
fn unwritable_results_location_fails_before_the_first_frame() {
    let err = start_error("backend=cpu results-location=/nonexistent-dir/scores.json");
    assert!(err.contains("/nonexistent-dir/scores.json"), "{err}");
}

#[test]
#[cfg_attr(
    gpu_tests,
    ignore = "a GPU is usable here: tests/gpu.rs covers backend=cuda"
)]
fn cuda_backend_is_refused_with_a_clear_error() {
    if gpu_usable() {
        eprintln!("skipped: a GPU is usable here (tests/gpu.rs covers backend=cuda)");
        return;
    }
    let err = start_error("backend=cuda");
    assert!(
        err.to_lowercase().contains("cuda") && err.contains("backend=cpu"),
        "{err}"
    );
}

#[test]
fn auto_backend_warns_and_scores_on_cpu() {
    let out = run(
        "vmafcompare name=cmp backend=auto ! fakesink \
         videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=160,height=90 ! cmp.reference \
         videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=160,height=90 ! cmp.distorted",
        LONG,
    );
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), 3);
    if gpu_usable() {
        // A GPU host: auto takes the GPU, silently.
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        assert_eq!(out.summary.unwrap().backend, "cuda");
        return;
    }
    assert!(
        out.warnings.iter().any(|w| w.contains("CPU")),
        "{:?}",
        out.warnings
    );
    assert_eq!(out.summary.unwrap().backend, "cpu");
}

/// Whether the CUDA backend can run here (a GPU host), where the no-GPU expectations differ.
fn gpu_usable() -> bool {
    gstvmafcompare::cuda::GpuDevice::open(0).is_ok()
}

#[test]
fn xml_and_csv_logs_follow_libvmaf_layout() {
    let p = pair(2);
    let base = run(&pipeline("", &p, "", ""), LONG);
    for (fmt, file) in [("xml", "scores.xml"), ("csv", "scores.csv")] {
        let path = temp_path(file);
        let out = run(
            &pipeline(
                &format!(
                    "results-format={fmt} results-location=\"{}\"",
                    path.display()
                ),
                &p,
                "",
                "",
            ),
            LONG,
        );
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        let text = std::fs::read_to_string(&path).unwrap();
        if fmt == "xml" {
            assert_eq!(text.matches("<frame ").count(), 3, "{text}");
            assert!(text.contains("<metric name=\"vmaf\""), "{text}");
            let want = format!("vmaf=\"{:.6}\"", base.frames[0].vmaf);
            assert!(text.contains(&want), "{want} in {text}");
        } else {
            let mut rdr = csv::ReaderBuilder::new()
                .flexible(true)
                .from_reader(text.as_bytes());
            let header = rdr.headers().unwrap().clone();
            assert_eq!(&header[0], "Frame");
            let vcol = header.iter().position(|h| h == "vmaf").unwrap();
            let rows: Vec<_> = rdr.records().map(|r| r.unwrap()).collect();
            assert_eq!(rows.len(), 3);
            for (row, f) in rows.iter().zip(&base.frames) {
                assert_eq!(
                    row[vcol].parse::<f64>().unwrap(),
                    format!("{:.6}", f.vmaf).parse::<f64>().unwrap()
                );
            }
        }
    }
}

#[test]
fn pads_may_differ_in_format_and_depth() {
    // NV12 vs I420 (same 8-bit luma) and P010 vs I420_10LE score exactly as the plain pair.
    let p8 = pair(2);
    let base8 = run(&pipeline("", &p8, "", ""), LONG);
    let nv12 = run(
        &pipeline("", &p8, " ! videoconvert ! video/x-raw,format=NV12", ""),
        LONG,
    );
    let p10 = pair(1);
    let base10 = run(&pipeline("", &p10, "", ""), LONG);
    // videoconvert rounds when it repacks 10-bit video, so the P010 file is made here,
    // losslessly: samples shifted up by 6, chroma interleaved.
    let p010_path = temp_path("dis_576x324_p010.yuv");
    write_p010(&p10.distorted, &p010_path, 576, 324);
    let p010_desc = format!(
        "vmafcompare name=cmp backend=cpu ! appsink name=out sync=false {} \
         filesrc location=\"{}\" ! rawvideoparse width=576 height=324 format=p010-10le framerate=25/1 ! cmp.distorted",
        raw_branch(&p10.reference, 576, 324, "I420_10LE", "reference"),
        p010_path.display()
    );
    let p010 = run(&p010_desc, LONG);
    for (a, b) in [(&base8, &nv12), (&base10, &p010)] {
        assert!(b.errors.is_empty(), "{:?}", b.errors);
        assert_eq!(a.frames.len(), 3);
        assert_eq!(a.frames.len(), b.frames.len());
        for (x, y) in a.frames.iter().zip(&b.frames) {
            assert_eq!(x.metrics, y.metrics);
        }
    }
    // An 8-bit reference against a 10-bit distorted is scored at 10 bits (the 8-bit samples
    // shifted up). These 8-bit frames are the 10-bit ones shifted down, so it equals the
    // 10-bit pair exactly.
    let desc = format!(
        "vmafcompare name=cmp backend=cpu ! fakesink {} {}",
        raw_branch(&p8.reference, 576, 324, "I420", "reference"),
        raw_branch(&p10.distorted, 576, 324, "I420_10LE", "distorted")
    );
    let mixed = run(&desc, LONG);
    assert!(mixed.errors.is_empty(), "{:?}", mixed.errors);
    for (x, y) in base10.frames.iter().zip(&mixed.frames) {
        assert_eq!(x.metrics, y.metrics);
    }
}

#[test]
fn subsample_scores_every_nth_frame_with_the_same_values() {
    let p = pair(0);
    let all = run(&pipeline("", &p, "", ""), LONG);
    let sub = run(&pipeline("subsample=3", &p, "", ""), LONG);
    assert_eq!(all.frames.len(), 48);
    assert_eq!(sub.frames.len(), 16);
    for f in &sub.frames {
        assert_eq!(f.index % 3, 0);
        assert_eq!(f.metrics, all.frames[f.index as usize].metrics);
    }
    assert_eq!(sub.buffers_out, 48, "every distorted buffer is passed on");
    assert_eq!(sub.summary.unwrap().frames, 16);
}

#[test]
fn frame_message_can_be_switched_off_but_meta_and_summary_remain() {
    let p = pair(2);
    let out = run(&pipeline("frame-message=false", &p, "", ""), LONG);
    assert!(out.frames.is_empty());
    assert_eq!(out.metas.len(), 3);
    assert_eq!(out.summary.unwrap().frames, 3);
}
