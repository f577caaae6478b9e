//! The `features` property (issue 8): libvmaf's integer PSNR, float SSIM and float MS-SSIM on
//! the CPU backend, per frame against libvmaf 3.2.0's own logs of Netflix's reference pairs
//! (../shared/vmaf-reference, made with `--feature psnr --feature float_ssim --feature
//! float_ms_ssim`), in the frame message, the meta, the summary and the log; MS-SSIM's
//! minimum frame size; the CUDA backend's refusal.
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
#[test]
fn psnr_ssim_ms_ssim_match_libvmaf_3_2_0() {
    let mut table = vec!["| pair | metric | frames | max abs deviation |".to_owned()];
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
        let out = score(&p, &features, "cpu", Some(&log));
        assert!(out.errors.is_empty(), "{:?}", out.errors);
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
            table.push(format!("| {tag} | {name} | {} | {dmax:.2e} |", p.frames));
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

/// The CUDA backend cannot compute the extra metrics yet: backend=cuda is refused at
/// NULL->READY with a message saying they need backend=cpu; backend=auto scores them on the
/// CPU with a warning.
#[test]
fn cuda_backend_refuses_extra_features() {
    let p = &reference_pairs()[2];
    let out = score(p, "psnr", "cuda", None);
    assert!(out.frames.is_empty());
    let text = out.errors.join("\n");
    assert!(
        text.contains(
            "backend=cuda cannot compute features=psnr yet: that needs backend=cpu for now"
        ),
        "{text}"
    );
    let auto = score(p, "psnr", "auto", None);
    assert!(auto.errors.is_empty(), "{:?}", auto.errors);
    assert_eq!(auto.frames.len(), p.frames);
    assert!(auto.frames[0].get("psnr_y").is_some());
    assert!(
        auto.warnings
            .iter()
            .any(|w| w.contains("features=psnr needs the CPU backend for now")),
        "{:?}",
        auto.warnings
    );
    assert_eq!(auto.summary.expect("summary").backend, "cpu");
}

/// An unknown name in `features` is an error at NULL->READY naming it and the known ones.
#[test]
fn unknown_feature_is_refused() {
    let p = &reference_pairs()[0];
    let out = score(p, "psnr,vif_hd", "cpu", None);
    let text = out.errors.join("\n");
    assert!(text.contains("unknown feature 'vif_hd'"), "{text}");
    assert!(text.contains("psnr, float_ssim, float_ms_ssim"), "{text}");
}
