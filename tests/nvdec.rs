//! `vmafnvdec`, the NVDEC decoder of this plugin (src/nvdec).
//!
//! Everywhere: its documentation (properties, caps) and what happens without NVDEC: a clear
//! error naming the missing library and the software decoders to use, and decodebin moving
//! on to the next decoder when the element is ranked first.
//!
//! On a GPU host (ignored elsewhere, see build.rs; `VMAFCOMPARE_REQUIRE_GPU` turns a missing
//! NVDEC into a failure; clips from `$VMAF_GPU_CLIPS`, made by scripts/gpu-stage.sh): every decoded frame
//! equal to what GStreamer's nvh264dec / nvh265dec decode (H.264 1080p 8-bit, HEVC main10),
//! and `vmafcompare` scoring vmafnvdec's CUDA memory exactly as nvh264dec's.
//!
//! Run: `cargo test --release --test nvdec -- --nocapture` (GPU host: `--include-ignored`).

mod common;

use std::time::Duration;

use gst::glib;
use gst::prelude::*;
use gst_video::prelude::*;

/// Whether NVDEC can be used here; `false` (after saying why) on machines without it, unless
/// `VMAFCOMPARE_REQUIRE_GPU` is set.
fn nvdec_usable() -> bool {
    common::init();
    let lib = gstvmafcompare::nvdec::sys::library();
    if let Err(e) = &lib {
        assert!(
            std::env::var_os("VMAFCOMPARE_REQUIRE_GPU").is_none(),
            "VMAFCOMPARE_REQUIRE_GPU is set but NVDEC is missing: {e}"
        );
    }
    lib.is_ok() && common::gpu_device().is_some()
}

#[test]
fn the_element_documents_its_properties_and_caps() {
    common::init();
    let f = gst::ElementFactory::find("vmafnvdec").expect("vmafnvdec is registered");
    assert!(f.metadata("klass").unwrap_or_default().contains("Decoder"));
    let e = f.create().build().expect("vmafnvdec");
    for (name, default, max) in [("device-id", 0u32, u32::MAX), ("max-display-delay", 4, 16)] {
        let p = e.find_property(name).expect(name);
        assert!(
            p.blurb().is_some_and(|b| b.len() > 40),
            "{name} has a real description"
        );
        let p = p.downcast::<glib::ParamSpecUInt>().expect("uint");
        assert_eq!((p.default_value(), p.maximum()), (default, max), "{name}");
    }
    let sink = e.static_pad("sink").unwrap().pad_template_caps();
    let caps = |s: &str| s.parse::<gst::Caps>().unwrap();
    assert!(sink.can_intersect(&caps(
        "video/x-h264, stream-format=byte-stream, alignment=au, chroma-format=4:2:0, bit-depth-luma=(uint)8"
    )));
    assert!(sink.can_intersect(&caps(
        "video/x-h265, stream-format=byte-stream, alignment=au, chroma-format=4:2:0, bit-depth-luma=(uint)10"
    )));
    // What NVDEC cannot decode is left to other decoders.
    for other in [
        "video/x-h264, stream-format=byte-stream, alignment=au, chroma-format=4:4:4",
        "video/x-h264, stream-format=byte-stream, alignment=au, bit-depth-luma=(uint)10",
        "video/x-h264, stream-format=avc, alignment=au",
        "video/x-h265, stream-format=byte-stream, alignment=au, chroma-format=4:2:2",
    ] {
        assert!(
            !sink.can_intersect(&caps(other)),
            "{other} must not be accepted"
        );
    }
    let src = e.static_pad("src").unwrap().pad_template_caps();
    for fmt in ["NV12", "P010_10LE", "P012_LE"] {
        for feature in ["(memory:CUDAMemory)", ""] {
            let c = caps(&format!("video/x-raw{feature}, format={fmt}"));
            assert!(src.can_intersect(&c), "src offers {c}");
        }
    }
}

#[test]
fn without_nvdec_the_error_says_what_to_do() {
    if nvdec_usable() {
        eprintln!("skipped: NVDEC is usable here");
        return;
    }
    let clip = common::bigbuckbunny();
    let out = common::run(
        &format!("filesrc location=\"{clip}\" ! qtdemux ! h264parse ! vmafnvdec ! fakesink"),
        Duration::from_secs(30),
    );
    let text = out.errors.join("\n");
    assert!(
        text.contains("libnvcuvid.so.1") && text.contains("avdec_h264"),
        "error names the missing library and the fallback: {text}"
    );
}

#[test]
fn decodebin_moves_on_when_nvdec_is_missing() {
    if nvdec_usable() {
        eprintln!("skipped: NVDEC is usable here");
        return;
    }
    let f = gst::ElementFactory::find("vmafnvdec").unwrap();
    // SAFETY: any integer is a rank; MAX is what the vmafcompare command gives it.
    f.set_rank(unsafe { glib::translate::from_glib(i32::MAX) });
    let clip = common::bigbuckbunny();
    let branch = |pad: &str| {
        format!(
            "filesrc location=\"{clip}\" ! decodebin ! video/x-raw ! identity eos-after=10 ! \
             videoconvert ! video/x-raw,format=I420 ! c.{pad}"
        )
    };
    let out = common::run(
        &format!(
            "vmafcompare name=c ! fakesink {} {}",
            branch("reference"),
            branch("distorted")
        ),
        Duration::from_secs(120),
    );
    f.set_rank(gst::Rank::NONE);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    // The clip scored against itself through the fallback decoder: identical frames.
    assert!(!out.frames.is_empty());
    for m in &out.frames {
        let vif0 = m
            .metrics
            .iter()
            .find(|(k, _)| k == "integer_vif_scale0")
            .unwrap()
            .1;
        assert!(vif0 > 0.99999, "frame {} VIF scale 0 {vif0}", m.index);
    }
}

/// The clips folder of the GPU host.
fn clips() -> std::path::PathBuf {
    std::path::PathBuf::from(std::env::var_os("VMAF_GPU_CLIPS").expect(
        "VMAF_GPU_CLIPS must name the folder scripts/gpu-stage.sh made (ref_1080p.mp4, \
         ref_main10.hevc)",
    ))
}

/// SHA-256 of every decoded frame's visible samples (row by row, plane by plane, whatever
/// the strides), in output order.
fn frame_hashes(source: &str, decoder: &str) -> Vec<String> {
    decoded(source, decoder, None)
        .into_iter()
        .map(|(_, _, hash)| hash)
        .collect()
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_decoded_frames_equal_nvcodec() {
    if !nvdec_usable() {
        eprintln!("skipped: no NVDEC");
        return;
    }
    let dir = clips();
    for (source, nvcodec, frames) in [
        (
            format!(
                "filesrc location=\"{}\" ! qtdemux ! h264parse",
                dir.join("ref_1080p.mp4").display()
            ),
            "nvh264dec",
            120,
        ),
        (
            format!(
                "filesrc location=\"{}\" ! h265parse",
                dir.join("ref_main10.hevc").display()
            ),
            "nvh265dec",
            24,
        ),
    ] {
        let ours = frame_hashes(&source, "vmafnvdec");
        let theirs = frame_hashes(&source, nvcodec);
        eprintln!(
            "{nvcodec}: {} frames, vmafnvdec: {}",
            theirs.len(),
            ours.len()
        );
        assert_eq!(ours.len(), frames, "{source}");
        assert_eq!(
            ours, theirs,
            "vmafnvdec and {nvcodec} decode {source} alike"
        );
    }
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_scores_from_vmafnvdec_equal_nvh264dec() {
    if !nvdec_usable() {
        eprintln!("skipped: no NVDEC");
        return;
    }
    let dir = clips();
    let run = |dec: &str| {
        common::run(
            &format!(
                "vmafcompare name=c backend=cuda ! fakesink \
                 filesrc location=\"{}\" ! qtdemux ! h264parse ! {dec} ! c.reference \
                 filesrc location=\"{}\" ! qtdemux ! h264parse ! {dec} ! c.distorted",
                dir.join("ref_1080p.mp4").display(),
                dir.join("dist_1080p.mp4").display()
            ),
            Duration::from_secs(120),
        )
    };
    let (ours, theirs) = (run("vmafnvdec"), run("nvh264dec"));
    assert!(
        ours.errors.is_empty() && theirs.errors.is_empty(),
        "{:?} {:?}",
        ours.errors,
        theirs.errors
    );
    assert_eq!(ours.frames.len(), 120);
    let metrics = |o: &common::RunOutput| {
        o.frames
            .iter()
            .map(|f| f.metrics.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(metrics(&ours), metrics(&theirs), "per-frame metrics equal");
    let s = ours.summary.as_ref().expect("summary");
    assert_eq!(
        (s.reference_input.as_str(), s.distorted_input.as_str()),
        ("cuda", "cuda"),
        "vmafnvdec's CUDA memory is read in place"
    );
    let mean = |o: &common::RunOutput| {
        o.frames.iter().map(|f| f.vmaf).sum::<f64>() / o.frames.len() as f64
    };
    eprintln!(
        "mean VMAF: vmafnvdec {:.6}, nvh264dec {:.6}",
        mean(&ours),
        mean(&theirs)
    );
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_state_cycles_give_the_device_memory_back() {
    if !nvdec_usable() {
        eprintln!("skipped: no NVDEC");
        return;
    }
    // The test holds the primary context, so what a cycle allocates (decoder surfaces,
    // output pool, streams) must be back after each NULL.
    let dev = common::gpu_device().expect("GPU");
    let clip = clips().join("ref_1080p.mp4");
    let cycle = || {
        let out = common::run(
            &format!(
                "filesrc location=\"{}\" ! qtdemux ! h264parse ! vmafnvdec ! \
                 video/x-raw(memory:CUDAMemory) ! fakesink",
                clip.display()
            ),
            Duration::from_secs(60),
        );
        assert!(out.errors.is_empty(), "{:?}", out.errors);
    };
    cycle();
    let (free_after_one, _) = dev.mem_get_info().unwrap();
    for _ in 0..10 {
        cycle();
    }
    let (free_after_eleven, _) = dev.mem_get_info().unwrap();
    let lost = free_after_one.saturating_sub(free_after_eleven);
    eprintln!("device memory not returned after 10 more cycles: {lost} bytes");
    assert!(
        lost < 2 << 20,
        "{lost} bytes of device memory kept by 10 cycles"
    );
}

/// The B-frame clips of scripts/nvdec-clips.sh (issue 48), from `$VMAF_NVDEC_CLIPS`.
fn bframe_clips() -> std::path::PathBuf {
    std::path::PathBuf::from(
        std::env::var_os("VMAF_NVDEC_CLIPS")
            .expect("VMAF_NVDEC_CLIPS must name the folder scripts/nvdec-clips.sh made"),
    )
}

/// `filesrc ! demuxer ! parser` for a clip of scripts/nvdec-clips.sh, and its codec's
/// nvcodec decoder.
fn bframe_source(name: &str) -> (String, &'static str) {
    let path = bframe_clips().join(name);
    let hevc = name.contains("hevc");
    let demux = match name.rsplit('.').next() {
        Some("mp4") => "qtdemux ! ",
        Some("mkv") => "matroskademux ! ",
        Some("ts") => "tsdemux ! ",
        _ => "",
    };
    let parse = if hevc { "h265parse" } else { "h264parse" };
    (
        format!("filesrc location=\"{}\" ! {demux}{parse}", path.display()),
        if hevc { "nvh265dec" } else { "nvh264dec" },
    )
}

/// (PTS, duration, SHA-256 of the visible samples) of every output frame, in output order;
/// with `seek`, the pipeline is paused, seeked (flushing, accurate) to that time and played.
fn decoded(source: &str, decoder: &str, seek: Option<gst::ClockTime>) -> Vec<(u64, u64, String)> {
    use sha2::Digest;
    common::init();
    let desc = format!("{source} ! {decoder} ! video/x-raw ! appsink name=frames sync=false");
    let pipeline = gst::parse::launch(&desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    let sink = pipeline
        .by_name("frames")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    if let Some(t) = seek {
        pipeline.set_state(gst::State::Paused).expect("paused");
        let _ = pipeline.state(gst::ClockTime::from_seconds(10));
        pipeline
            .seek_simple(gst::SeekFlags::FLUSH | gst::SeekFlags::ACCURATE, t)
            .expect("seek");
        let _ = pipeline.state(gst::ClockTime::from_seconds(10));
    }
    pipeline.set_state(gst::State::Playing).expect("playing");
    let mut out = Vec::new();
    while let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(20)) {
        let info = gst_video::VideoInfo::from_caps(sample.caps().unwrap()).unwrap();
        let buffer = sample.buffer().unwrap();
        let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, &info).unwrap();
        let mut h = sha2::Sha256::new();
        let bytes = if info.format_info().bits() > 8 { 2 } else { 1 };
        for p in 0..frame.n_planes() {
            let (w, rows) = (
                info.comp_width(p as u8) as usize * bytes * if p == 1 { 2 } else { 1 },
                info.comp_height(p as u8) as usize,
            );
            let stride = frame.plane_stride()[p as usize] as usize;
            let data = frame.plane_data(p).unwrap();
            for r in 0..rows {
                h.update(&data[r * stride..r * stride + w]);
            }
        }
        out.push((
            buffer.pts().map_or(u64::MAX, |t| t.nseconds()),
            buffer.duration().map_or(u64::MAX, |t| t.nseconds()),
            format!("{:x}", h.finalize()),
        ));
        if sink.is_eos() {
            break;
        }
    }
    let _ = pipeline.set_state(gst::State::Null);
    out
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_bframe_files_keep_each_frames_timestamp() {
    if !nvdec_usable() {
        eprintln!("skipped: no NVDEC");
        return;
    }
    // Every container and stream shape of issue 48: each output frame carries its own
    // picture's PTS and duration, as nvcodec's decoders give them, and the same samples.
    for (name, frames) in [
        ("h264_b.mp4", 48),
        ("h264_b_noedit.mp4", 46),
        ("h264_b.mkv", 48),
        ("h264_b.ts", 48),
        ("h264_b.h264", 48),
        ("h264_opengop.mkv", 48),
        ("h264_vfr.mkv", 48),
        ("hevc8_b.mp4", 48),
        ("hevc10_b.mkv", 48),
        ("r640_hevc10.mkv", 48),
    ] {
        let (source, nvcodec) = bframe_source(name);
        let ours = decoded(&source, "vmafnvdec", None);
        let theirs = decoded(&source, nvcodec, None);
        eprintln!(
            "{name}: vmafnvdec {} frames, {nvcodec} {}",
            ours.len(),
            theirs.len()
        );
        assert_eq!(ours.len(), frames, "{name}: every frame, drained at EOS");
        assert_eq!(
            ours, theirs,
            "{name}: PTS, duration and samples as {nvcodec}"
        );
    }
    // A file that starts on a CRA: its leading pictures cannot be decoded and are left out.
    // nvh265dec (GStreamer 1.22) outputs the same 24 pictures but stamps two of them 0.350
    // s; avdec_h265 (build machine, scripts/nvdec-pts.py) gives 0.150, 0.200, ... 1.300 s,
    // each picture its own time: that is the reference here, and the samples are nvcodec's.
    let (source, nvcodec) = bframe_source("hevc8_cra_start.mp4");
    let (ours, theirs) = (
        decoded(&source, "vmafnvdec", None),
        decoded(&source, nvcodec, None),
    );
    eprintln!(
        "hevc8_cra_start.mp4: vmafnvdec {} frames, {nvcodec} {}",
        ours.len(),
        theirs.len()
    );
    let avdec: Vec<u64> = (0..24).map(|k| 150_000_000 + 50_000_000 * k).collect();
    assert_eq!(pts(&ours), avdec, "CRA start: avdec_h265's timestamps");
    assert_eq!(
        hashes(&ours),
        hashes(&theirs),
        "CRA start: nvcodec's pictures"
    );
}

fn pts(v: &[(u64, u64, String)]) -> Vec<u64> {
    v.iter().map(|f| f.0).collect()
}

fn hashes(v: &[(u64, u64, String)]) -> Vec<&str> {
    v.iter().map(|f| f.2.as_str()).collect()
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_a_seek_mid_stream_keeps_timestamps() {
    if !nvdec_usable() {
        eprintln!("skipped: no NVDEC");
        return;
    }
    // After a flushing seek to 1.2 s: the same pictures as nvcodec's, each with its own time
    // (20 fps: 50 ms apart, from the first frame shown on). H.264: nvh264dec's times too.
    // HEVC: the seek lands on a CRA whose leading pictures are dropped, and nvh265dec
    // (GStreamer 1.22) stamps one picture twice there, so only its pictures are compared.
    for name in ["h264_b.mp4", "hevc8_b.mp4"] {
        let (source, nvcodec) = bframe_source(name);
        let at = Some(gst::ClockTime::from_mseconds(1200));
        let ours = decoded(&source, "vmafnvdec", at);
        let theirs = decoded(&source, nvcodec, at);
        eprintln!(
            "{name} after a seek: vmafnvdec {} frames, {nvcodec} {}",
            ours.len(),
            theirs.len()
        );
        assert!(
            !ours.is_empty() && ours.len() < 48,
            "{name}: the seek took effect"
        );
        assert_eq!(
            hashes(&ours),
            hashes(&theirs),
            "{name}: pictures after the seek"
        );
        let first = pts(&ours)[0];
        let contiguous: Vec<u64> = (0..ours.len() as u64)
            .map(|k| first + 50_000_000 * k)
            .collect();
        assert_eq!(
            pts(&ours),
            contiguous,
            "{name}: one time per picture after the seek"
        );
        if name.starts_with("h264") {
            assert_eq!(ours, theirs, "{name}: as nvh264dec after a flushing seek");
        }
    }
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_bframe_renditions_score_as_the_oracle() {
    if !nvdec_usable() {
        eprintln!("skipped: no NVDEC");
        return;
    }
    // Each rendition (B-frames, MP4 and MKV, other sizes, 10-bit HEVC) decoded by vmafnvdec
    // and scored on the GPU, as a pair and all in one ladder: the oracle's frames and scores
    // (FFmpeg + libvmaf 3.2.0, scripts/nvdec-clips.sh's oracle_*.json).
    let renditions = [
        "h264_b.mp4",
        "h264_b.mkv",
        "r480_h264.mp4",
        "r320_h264.mkv",
        "r640_hevc10.mkv",
    ];
    let oracle = |name: &str| -> Vec<f64> {
        let file = bframe_clips().join(format!("oracle_{}.json", name.replace('.', "_")));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        v["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["metrics"]["vmaf"].as_f64().unwrap())
            .collect()
    };
    let (reference, _) = bframe_source("ref.mp4");
    let check = |name: &str, got: Vec<f64>| {
        let want = oracle(name);
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        eprintln!(
            "| {name} | {} / {} frames | largest |VMAF - oracle| {worst:.2e} |",
            got.len(),
            want.len()
        );
        assert_eq!(got.len(), want.len(), "{name}: frames scored");
        assert!(worst < 1e-4, "{name}: {worst} from the oracle");
    };
    for name in renditions {
        let (source, _) = bframe_source(name);
        let out = common::run(
            &format!(
                "vmafcompare name=c backend=cuda ! fakesink \
                 {reference} ! vmafnvdec ! c.reference {source} ! vmafnvdec ! c.distorted"
            ),
            Duration::from_secs(120),
        );
        assert!(out.errors.is_empty(), "{name}: {:?}", out.errors);
        check(name, out.frames.iter().map(|f| f.vmaf).collect());
    }
    // The ladder: the 8-bit renditions. (A ladder that mixes in the 10-bit one scores every
    // rendition at 10 bits, and a scaled 8-bit rendition then differs from its own pair's
    // 8-bit score, by 0.14 VMAF for r480 on the GPU host: a ladder depth question, not a
    // decoding one.)
    let renditions = &renditions[..4];
    let mut desc = String::from("vmafcompare name=c backend=cuda ! fakesink ");
    desc += &format!("{reference} ! vmafnvdec ! c.reference ");
    for (k, name) in renditions.iter().enumerate() {
        let (source, _) = bframe_source(name);
        desc += &format!("{source} ! vmafnvdec ! c.distorted_{} ", k + 1);
    }
    let out = common::run(&desc, Duration::from_secs(180));
    assert!(out.errors.is_empty(), "ladder: {:?}", out.errors);
    for (k, name) in renditions.iter().enumerate() {
        let pad = format!("distorted_{}", k + 1);
        check(
            name,
            out.frames
                .iter()
                .filter(|f| f.pad.as_deref() == Some(pad.as_str()))
                .map(|f| f.vmaf)
                .collect(),
        );
    }
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_the_command_scores_bframe_files_alike_on_both_backends() {
    if !nvdec_usable() {
        eprintln!("skipped: no NVDEC");
        return;
    }
    // `--backend cuda` decodes with vmafnvdec, `--backend cpu` with software decoders: the
    // same frames and the same per-frame VMAF, pairs (MP4, MKV) and a ladder in one pass.
    // The command: $VMAFCOMPARE_BIN on the GPU host (staged), else cargo's build of it.
    let bin = std::env::var_os("VMAFCOMPARE_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_vmafcompare").into());
    let dir = bframe_clips();
    let tmp = std::env::temp_dir().join(format!("nvdec-cli-{}", std::process::id()));
    let cases: [&[&str]; 3] = [
        &["h264_b.mp4"],
        &["h264_b.mkv"],
        &["h264_b.mp4", "r480_h264.mp4", "r320_h264.mkv"],
    ];
    for (i, files) in cases.iter().enumerate() {
        let mut logs = Vec::new();
        for backend in ["cuda", "cpu"] {
            let out_dir = tmp.join(format!("{i}-{backend}"));
            std::fs::create_dir_all(&out_dir).unwrap();
            let mut cmd = std::process::Command::new(&bin);
            cmd.arg("--backend")
                .arg(backend)
                .arg("--log")
                .arg(out_dir.join("s.json"));
            cmd.arg(dir.join("ref.mp4"));
            for f in files.iter() {
                cmd.arg(dir.join(f));
            }
            let out = cmd.output().expect("run vmafcompare");
            assert!(
                out.status.success(),
                "{files:?} --backend {backend}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let mut per_file = Vec::new();
            let mut names: Vec<_> = std::fs::read_dir(&out_dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            names.sort();
            for p in names {
                let v: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                let vmaf: Vec<f64> = v["frames"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["metrics"]["vmaf"].as_f64().unwrap())
                    .collect();
                per_file.push((p.file_name().unwrap().to_string_lossy().into_owned(), vmaf));
            }
            logs.push(per_file);
        }
        for ((name, cuda), (_, cpu)) in logs[0].iter().zip(&logs[1]) {
            let worst = cuda
                .iter()
                .zip(cpu)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            eprintln!(
                "| {files:?} | {name} | cuda {} / cpu {} frames | largest difference {worst:.2e} |",
                cuda.len(),
                cpu.len()
            );
            assert_eq!(cuda.len(), 48, "{name}: every frame scored");
            assert_eq!(cuda.len(), cpu.len(), "{name}: frames");
            assert!(worst < 1e-4, "{name}: per-frame VMAF");
        }
        assert_eq!(logs[0].len(), files.len(), "one log per file");
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
