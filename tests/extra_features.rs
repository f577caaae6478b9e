//! The `features` property (issue 8): libvmaf's integer PSNR, float SSIM and float MS-SSIM on
//! the CPU backend, per frame against libvmaf 3.2.0's own logs of Netflix's reference pairs
//! (../shared/vmaf-reference, made with `--feature psnr --feature float_ssim --feature
//! float_ms_ssim`), in the frame message, the meta, the summary and the log; MS-SSIM's
//! minimum frame size; GRAY8 and mismatched chroma subsampling. Where a CUDA GPU is usable
//! (the GPU host; `VMAFCOMPARE_REQUIRE_GPU=1` makes its absence a failure) the same checks run
//! on `backend=cuda` too.
//!
//! `cargo test --release --test extra_features -- --nocapture` prints the largest deviation
//! per metric.

mod common;

use common::*;

/// Tolerance of issue 8 against libvmaf 3.2.0.
const TOL: f64 = 1e-4;

fn score(p: &RefPair, features: &str, backend: &str, log: Option<&std::path::Path>) -> RunOutput {
    let log_prop = log
        .map(|l| format!(" results-location=\"{}\"", l.display()))
        .unwrap_or_default();
    let desc = format!(
        "vmafcompare name=cmp backend={backend} features=\"{features}\"{log_prop} ! appsink name=out sync=false {} {}",
        raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
        raw_branch(&p.distorted, p.width, p.height, p.format, "distorted"),
    );
    run(&desc, LONG)
}

/// Every frame of the two pairs that MS-SSIM accepts (576x324, 8 and 10 bits) and of the
/// 160x90 pair without MS-SSIM: psnr_y/cb/cr, float_ssim (and float_ms_ssim) within 1e-4 of
/// libvmaf 3.2.0 in the message, the meta and the log; the pooled mean in the summary
/// equals the mean of the per-frame values; VMAF is unchanged by the extra features.
/// The backends to check: the CPU, and the GPU where one is usable.
fn backends() -> Vec<&'static str> {
    let p = &reference_pairs()[2];
    let probe = score(p, "", "cuda", None);
    match probe.errors.first() {
        None => vec!["cpu", "cuda"],
        Some(why) => {
            assert!(
                std::env::var_os("VMAFCOMPARE_REQUIRE_GPU").is_none(),
                "VMAFCOMPARE_REQUIRE_GPU is set but backend=cuda failed: {why}"
            );
            eprintln!("backend=cuda not checked here: {why}");
            vec!["cpu"]
        }
    }
}

fn psnr_ssim_ms_ssim_match_libvmaf_3_2_0_on(backend: &'static str) {
    let mut table = vec!["| backend | pair | metric | frames | max abs deviation |".to_owned()];

    for p in reference_pairs() {
        let with_ms = p.width >= 176 && p.height >= 176;
        let mut metrics = vec!["psnr_y", "psnr_cb", "psnr_cr", "float_ssim"];
        let mut features = "psnr,float_ssim".to_owned();
        if with_ms {
            metrics.push("float_ms_ssim");
            features.push_str(",float_ms_ssim");
        }
        let expected = libvmaf_frames(&p.json);
        let log = temp_path(&format!("extra_{}x{}_{}.json", p.width, p.height, p.format));
        let out = score(&p, &features, backend, Some(&log));
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert_eq!(
            out.summary.as_ref().map(|s| s.backend.as_str()),
            Some(backend)
        );
        assert_eq!(out.frames.len(), p.frames);
        assert_eq!(out.metas.len(), p.frames);
        let logged = libvmaf_frames(&log);
        assert_eq!(logged.len(), p.frames);
        let tag = format!("src01 {}x{} {}", p.width, p.height, p.format);
        for name in &metrics {
            let mut dmax = 0.0f64;
            let mut sum = 0.0;
            for (i, theirs) in expected.iter().enumerate() {
                let t = theirs[*name]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{name} in libvmaf's log"));
                let o = out.frames[i]
                    .get(name)
                    .unwrap_or_else(|| panic!("{name} in the frame message"));
                assert_eq!(out.metas[i].get(name), Some(o), "{name}: meta = message");
                let l = logged[i][*name].as_f64().expect("in our log");
                assert!((l - o).abs() <= 5e-7, "{name}: log {l} vs message {o}");
                let d = (o - t).abs();
                assert!(d <= TOL, "{tag} frame {i}: {name} {o} vs libvmaf {t}");
                dmax = dmax.max(d);
                sum += o;
            }
            let pooled = out
                .summary
                .as_ref()
                .and_then(|s| s.get(name))
                .expect("pooled");
            assert!((pooled.mean - sum / p.frames as f64).abs() < 1e-9);
            table.push(format!(
                "| {backend} | {tag} | {name} | {} | {dmax:.2e} |",
                p.frames
            ));
        }
        for (i, theirs) in expected.iter().enumerate() {
            let v = theirs["vmaf"].as_f64().unwrap();
            assert!((out.frames[i].vmaf - v).abs() <= TOL, "vmaf unchanged");
        }
        // libvmaf's order: psnr first, float_ssim after the VIF scales, vmaf last.
        let names: Vec<&str> = out.frames[0]
            .metrics
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(&names[..3], &["psnr_y", "psnr_cb", "psnr_cr"]);
        assert_eq!(names.last(), Some(&"vmaf"));
    }

    eprintln!("\n{}\n", table.join("\n"));
}

#[test]
fn psnr_ssim_ms_ssim_match_libvmaf_3_2_0_cpu() {
    psnr_ssim_ms_ssim_match_libvmaf_3_2_0_on("cpu");
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn psnr_ssim_ms_ssim_match_libvmaf_3_2_0_cuda() {
    psnr_ssim_ms_ssim_match_libvmaf_3_2_0_on("cuda");
}

/// libvmaf refuses MS-SSIM below 176x176 (its fifth scale must hold the 11x11 window); so
/// does the element, at caps, with an error naming the size and the minimum. 160x90 is the
/// pair whose libvmaf log has no float_ms_ssim.
#[test]
fn ms_ssim_refuses_frames_below_176x176() {
    let p = &reference_pairs()[0];
    assert!(!libvmaf_frames(&p.json)[0].contains_key("float_ms_ssim"));
    let out = score(p, "float_ms_ssim", "cpu", None);
    assert!(out.frames.is_empty());
    let text = out.errors.join("\n");
    assert!(
        text.contains("160x90 is smaller than the 176x176 minimum of float_ms_ssim"),
        "{text}"
    );
    assert!(
        out.error_details
            .iter()
            .any(|e| e.matches(gst::CoreError::Negotiation)),
        "{:?}",
        out.error_details
    );
}

/// A branch that reads only the luma of an I420 file as GRAY8 frames.
fn gray_branch(p: &RefPair, path: &std::path::Path, pad: &str) -> String {
    format!(
        "filesrc location=\"{}\" ! rawvideoparse width={} height={} format=gray8 \
         frame-size={} framerate=25/1 ! cmp.{pad}",
        path.display(),
        p.width,
        p.height,
        p.width * p.height * 3 / 2
    )
}

/// GRAY8 on both pads: psnr_y and float_ssim equal those of the same luma read as I420
/// (bit for bit: the metrics read luma only), psnr_cb/psnr_cr are absent, and ssimulacra2
/// is scored as grey (R = G = B) on every backend, the backends within 1e-4 of each other.
#[test]
fn gray8_frames_score_luma_metrics_and_grey_ssimulacra2() {
    let p = &reference_pairs()[2];
    let mut s2 = Vec::new();
    for backend in backends() {
        let desc = format!(
            "vmafcompare name=cmp backend={backend} features=psnr,float_ssim,ssimulacra2 ! \
             fakesink {} {}",
            gray_branch(p, &p.reference, "reference"),
            gray_branch(p, &p.distorted, "distorted"),
        );
        let gray = run(&desc, LONG);
        assert!(gray.errors.is_empty(), "{backend}: {:?}", gray.errors);
        let yuv = score(p, "psnr,float_ssim", backend, None);
        assert_eq!(gray.frames.len(), p.frames);
        for (g, y) in gray.frames.iter().zip(&yuv.frames) {
            assert_eq!(g.get("psnr_y"), y.get("psnr_y"), "{backend}");
            assert_eq!(g.get("float_ssim"), y.get("float_ssim"), "{backend}");
            assert_eq!(g.vmaf, y.vmaf, "{backend}");
            assert!(g.get("psnr_cb").is_none() && g.get("psnr_cr").is_none());
        }
        let v: Vec<f64> = gray
            .frames
            .iter()
            .map(|f| f.get("ssimulacra2").expect("ssimulacra2"))
            .collect();
        eprintln!("{backend}: GRAY8 ssimulacra2 {v:?}");
        assert!(v.iter().all(|x| x.is_finite() && *x < 100.0));
        s2.push(v);
    }
    if let [cpu, gpu] = &s2[..] {
        for (c, g) in cpu.iter().zip(gpu) {
            assert!(
                (c - g).abs() <= TOL,
                "GRAY8 ssimulacra2 cpu {c} vs cuda {g}"
            );
        }
    }
}

/// Reference I420 against distorted Y444 (the same pictures, chroma upsampled): metrics that
/// compare chroma refuse at caps with a message naming both formats and what to do; luma
/// metrics work and equal the I420/I420 run's.
#[test]
fn mismatched_chroma_subsampling() {
    let p = &reference_pairs()[2];
    let dist_444 = |features: &str| {
        format!(
            "vmafcompare name=cmp backend=cpu features={features} ! fakesink {} \
             filesrc location=\"{}\" ! rawvideoparse width={} height={} format=i420 \
             framerate=25/1 ! videoconvert ! video/x-raw,format=Y444 ! cmp.distorted",
            raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
            p.distorted.display(),
            p.width,
            p.height,
        )
    };
    for features in ["psnr", "ssimulacra2", "psnr,ssimulacra2"] {
        let out = run(&dist_444(features), LONG);
        assert!(out.frames.is_empty(), "{features}");
        let text = out.errors.join("\n");
        assert!(
            text.contains("differ in chroma subsampling")
                && text.contains(
                    "reference is I420 (chroma 288x162), distorted is Y444 (chroma 576x324)"
                ),
            "{features}: {text}"
        );
        assert!(
            out.error_details
                .iter()
                .any(|e| e.matches(gst::CoreError::Negotiation)),
            "{:?}",
            out.error_details
        );
    }
    let luma = run(&dist_444("float_ssim"), LONG);
    assert!(luma.errors.is_empty(), "{:?}", luma.errors);
    let same = score(p, "float_ssim", "cpu", None);
    assert_eq!(luma.frames.len(), p.frames);
    for (a, b) in luma.frames.iter().zip(&same.frames) {
        assert_eq!(a.get("float_ssim"), b.get("float_ssim"));
        assert_eq!(a.vmaf, b.vmaf);
    }
}

/// An unknown name in `features` is an error at NULL->READY naming it and the known ones.
#[test]
fn unknown_feature_is_refused() {
    let p = &reference_pairs()[0];
    let out = score(p, "psnr,vif_hd", "cpu", None);
    let text = out.errors.join("\n");
    assert!(text.contains("unknown feature 'vif_hd'"), "{text}");
    assert!(
        text.contains(
            "psnr, cambi, speed_chroma, adm, motion, vif, float_adm, float_motion, float_vif, \
             float_ssim, float_ms_ssim"
        ),
        "{text}"
    );
}

/// The log says how SSIMULACRA2 converted YUV to RGB: the reference caps' colorimetry, here
/// GStreamer's default for 576x324 YUV without a `colorimetry` field (BT.601, limited range),
/// as a top-level JSON key and an XML `<fyi>` attribute.
#[test]
fn log_names_the_ssimulacra2_colorimetry() {
    let p = &reference_pairs()[2];
    let json = temp_path("s2_colour.json");
    let out = score(p, "ssimulacra2", "cpu", Some(&json));
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("log")).expect("json");
    assert_eq!(
        v["ssimulacra2_yuv_to_rgb"],
        "matrix bt601, limited range, transfer bt709"
    );
    assert!(v["frames"][0]["metrics"]["ssimulacra2"].is_number());
    let xml = temp_path("s2_colour.xml");
    let desc = format!(
        "vmafcompare name=cmp backend=cpu features=ssimulacra2 results-location=\"{}\" \
         results-format=xml ! fakesink {} {}",
        xml.display(),
        raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
        raw_branch(&p.distorted, p.width, p.height, p.format, "distorted"),
    );
    let out = run(&desc, LONG);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let text = std::fs::read_to_string(&xml).expect("xml log");
    assert!(
        text.contains("ssimulacra2_yuv_to_rgb=\"matrix bt601, limited range, transfer bt709\""),
        "{text}"
    );
}
