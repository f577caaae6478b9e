//! Accuracy against libvmaf 3.2.0: every frame of Netflix's reference pairs in
//! ../shared/vmaf-reference, through the element, compared with libvmaf's own per-frame log;
//! and the values Netflix's test suite asserts (golden.md).
//!
//! Prints the accuracy table with `cargo test --release --test accuracy -- --nocapture`.

mod common;

use common::*;

/// Metrics that come from libvmaf's integer extractors (exact arithmetic) and the model.
const INTEGER_FEATURES: &[&str] = &[
    "integer_adm2",
    "integer_aim",
    "integer_adm3",
    "integer_adm_scale0",
    "integer_adm_scale1",
    "integer_adm_scale2",
    "integer_adm_scale3",
    "VMAF_integer_feature_motion_sad_score",
    "integer_vif_scale0",
    "integer_vif_scale1",
    "integer_vif_scale2",
    "integer_vif_scale3",
    "integer_motion2",
    "integer_motion3",
];

fn score_pair(p: &RefPair, log: Option<&std::path::Path>) -> RunOutput {
    let log_prop = log
        .map(|l| format!(" results-location=\"{}\"", l.display()))
        .unwrap_or_default();
    let desc = format!(
        "vmafcompare name=cmp backend=cpu{log_prop} ! appsink name=out sync=false {} {}",
        raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
        raw_branch(&p.distorted, p.width, p.height, p.format, "distorted"),
    );
    run(&desc, LONG)
}

#[test]
fn every_frame_matches_libvmaf_3_2_0() {
    let mut table = vec![
        "| pair | frames | max abs dVMAF | max abs dfeature (integer) |".to_owned(),
        "| --- | --- | --- | --- |".to_owned(),
    ];
    for p in reference_pairs() {
        let expected = libvmaf_frames(&p.json);
        let log = temp_path(&format!("{}x{}_{}.json", p.width, p.height, p.format));
        let out = score_pair(&p, Some(&log));
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert_eq!(out.frames.len(), p.frames, "frames scored");
        assert_eq!(expected.len(), p.frames);
        assert_eq!(
            out.metas.len(),
            p.frames,
            "every output buffer carries its scores"
        );
        let (mut dvmaf, mut dfeat) = (0.0f64, 0.0f64);
        for (i, (ours, theirs)) in out.frames.iter().zip(&expected).enumerate() {
            assert_eq!(ours.index, i as u64);
            assert_eq!(&out.metas[i], ours, "meta equals message");
            let v = theirs["vmaf"].as_f64().unwrap();
            let d = (ours.vmaf - v).abs();
            assert!(
                d <= 1e-4,
                "{}x{} {} frame {i}: vmaf {} vs libvmaf {v}",
                p.width,
                p.height,
                p.format,
                ours.vmaf
            );
            dvmaf = dvmaf.max(d);
            for name in INTEGER_FEATURES {
                let t = theirs[*name]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{name} in libvmaf log"));
                let o = ours
                    .get(name)
                    .unwrap_or_else(|| panic!("{name} in our message"));
                let d = (o - t).abs();
                assert!(
                    d <= 1e-6,
                    "{}x{} {} frame {i}: {name} {o} vs libvmaf {t}",
                    p.width,
                    p.height,
                    p.format
                );
                dfeat = dfeat.max(d);
            }
        }
        // The log file holds the same numbers, in libvmaf's layout.
        let logged = libvmaf_frames(&log);
        assert_eq!(logged.len(), p.frames);
        for (ours, theirs) in logged.iter().zip(&expected) {
            for name in INTEGER_FEATURES.iter().chain(&["vmaf"]) {
                let (o, t) = (
                    ours[*name].as_f64().unwrap(),
                    theirs[*name].as_f64().unwrap(),
                );
                assert!((o - t).abs() <= 1e-4, "{name}: log {o} vs libvmaf {t}");
            }
        }
        let log_json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
        let pooled = &log_json["pooled_metrics"]["vmaf"];
        let summary = out.summary.expect("summary message");
        assert_eq!(summary.frames, p.frames as u64);
        let vm = summary.get("vmaf").unwrap();
        assert!((pooled["mean"].as_f64().unwrap() - vm.mean).abs() < 1e-6);
        // The lows: the 1st, 5th and 10th percentiles of the frames' VMAF, interpolated
        // between ranks as libvmaf's percentile() does, in the summary and in the log.
        let mut sorted: Vec<f64> = out.frames.iter().map(|f| f.vmaf).collect();
        sorted.sort_by(f64::total_cmp);
        for (key, got, q) in [
            ("percentile_1", vm.percentile_1, 1.0),
            ("percentile_5", vm.percentile_5, 5.0),
            ("percentile_10", vm.percentile_10, 10.0),
        ] {
            let r = q / 100.0 * (sorted.len() - 1) as f64;
            let (lo, hi) = (sorted[r.floor() as usize], sorted[r.ceil() as usize]);
            let want = lo + (hi - lo) * (r - r.floor());
            assert!((got - want).abs() < 1e-9, "{key}: summary {got} vs {want}");
            let logged = pooled[key]
                .as_f64()
                .unwrap_or_else(|| panic!("{key} in the log"));
            assert!(
                (logged - want).abs() < 1e-6,
                "{key}: log {logged} vs {want}"
            );
            assert!(
                vm.min <= got && got <= vm.mean.max(vm.max),
                "{key} within the range"
            );
        }
        table.push(format!(
            "| src01 {}x{} {} | {} | {:.2e} | {:.2e} |",
            p.width, p.height, p.format, p.frames, dvmaf, dfeat
        ));
    }
    eprintln!("\n{}\n", table.join("\n"));
}

fn places(a: f64, b: f64, places: i32) -> bool {
    ((a - b) * 10f64.powi(places)).round() == 0.0
}

#[test]
fn golden_values_from_netflix_tests() {
    let pairs = reference_pairs();
    // (pair, [(metric, pooled mean, decimal places that must agree)])
    type Golden = &'static [(&'static str, f64, i32)];
    let cases: [(usize, Golden); 2] = [
        (
            1, // 576x324 10-bit, 3 frames: vmafexec_test.py
            &[
                ("vmaf", 82.56422466666668, 4),
                ("integer_vif_scale0", 0.4330893333333334, 4),
                ("integer_motion2", 2.8095493333333335, 4),
                ("integer_adm2", 0.9517763333333334, 4),
            ],
        ),
        (
            0, // 160x90 8-bit, 48 frames: quality_runner_test.py
            &[
                ("vmaf", 92.52095888042386, 2),
                ("integer_vif_scale0", 0.6895391472210215, 4),
                ("integer_motion2", 1.3577417291666667, 4),
                ("integer_adm2", 0.9807496975664337, 4),
            ],
        ),
    ];
    for (i, expected) in cases {
        let out = score_pair(&pairs[i], None);
        let summary = out.summary.expect("summary");
        for (name, value, p) in expected {
            let mean = summary.get(name).unwrap().mean;
            assert!(
                places(mean, *value, *p),
                "{name}: {mean} vs golden {value} (places={p})"
            );
        }
    }
}

#[test]
fn eight_bit_copy_of_ten_bit_pair_scores_the_same() {
    let pairs = reference_pairs();
    let ten = score_pair(&pairs[1], None);
    let eight = score_pair(&pairs[2], None);
    for (a, b) in ten.frames.iter().zip(&eight.frames) {
        assert!((a.vmaf - b.vmaf).abs() < 1e-4, "{} vs {}", a.vmaf, b.vmaf);
    }
}
