//! Several models in one pass (issue 8): `model=a,b` gives each model the scores of a run
//! with that model alone; libvmaf's `enable_transform` (the phone model) and the bootstrap
//! model `vmaf_b_v0.6.3` with its confidence interval, checked against libvmaf's formulas
//! (libvmaf/src/predict.c, `transform()` and `vmaf_bootstrap_predict_score_at_index`).

mod common;

use common::*;
use gstvmafcompare::engine::Model;
use gstvmafcompare::vmafcompare::FrameMessage;

fn score(p: &RefPair, model: &str) -> RunOutput {
    let desc = format!(
        "vmafcompare name=cmp backend=cpu model=\"{model}\" ! appsink name=out sync=false {} {}",
        raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
        raw_branch(&p.distorted, p.width, p.height, p.format, "distorted"),
    );
    let out = run(&desc, LONG);
    assert!(out.errors.is_empty(), "{model}: {:?}", out.errors);
    assert_eq!(out.frames.len(), p.frames, "{model}");
    out
}

fn get(f: &FrameMessage, name: &str) -> f64 {
    f.get(name)
        .unwrap_or_else(|| panic!("{name} missing from {:?}", f.metrics))
}

/// `vmaf_v0.6.1,vmaf_v0.6.1neg`: the first model's score is `vmaf`, the second's
/// `vmaf_v0.6.1neg`; each equals, bit for bit, the score of a run with that model alone, and
/// so do the features of each model's option set (`integer_adm2` and `integer_adm2_egl_1`).
#[test]
fn two_models_score_as_each_alone() {
    for p in reference_pairs().iter().take(2) {
        let both = score(p, "vmaf_v0.6.1,vmaf_v0.6.1neg");
        let first = score(p, "vmaf_v0.6.1");
        let neg = score(p, "vmaf_v0.6.1neg");
        for i in 0..p.frames {
            let (b, f, n) = (&both.frames[i], &first.frames[i], &neg.frames[i]);
            assert_eq!(b.vmaf, f.vmaf, "frame {i}: vmaf");
            assert_eq!(get(b, "vmaf_v0.6.1neg"), n.vmaf, "frame {i}: neg model");
            assert_ne!(b.vmaf, get(b, "vmaf_v0.6.1neg"));
            for (name, v) in f.metrics.iter().chain(&n.metrics) {
                if name != "vmaf" {
                    assert_eq!(get(b, name), *v, "frame {i}: {name}");
                }
            }
            assert_eq!(b.metrics.last().map(|(n, _)| n.as_str()), Some("vmaf"));
        }
        let s = both.summary.expect("summary");
        assert!(s.get("vmaf_v0.6.1neg").is_some(), "pooled for every model");
    }
}

/// The score transform of a model file (`p0 + p1 x + p2 x^2`, then `out_gte_in`: never below
/// the input), read from ../shared/models/vmaf_v0.6.1.json.
fn phone(x: f64) -> f64 {
    let path = reference_dir().join("../models/vmaf_v0.6.1.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("model file")).unwrap();
    let t = &v["model_dict"]["score_transform"];
    let p = |k: &str| t[k].as_f64().unwrap();
    assert_eq!(t["out_gte_in"], "true");
    let y = p("p0") + p("p1") * x + p("p2") * x * x;
    y.max(x)
}

/// `vmaf_v0.6.1:enable_transform` (libvmaf's phone model) beside the plain model: the
/// phone score is `clip(max(p0 + p1 x + p2 x^2, x), 0, 100)` of the plain model's
/// prediction `x` (the plain score equals `x` here since it is inside 0..100).
#[test]
fn phone_model_is_the_transformed_score() {
    let p = &reference_pairs()[0];
    let out = score(
        p,
        "vmaf_v0.6.1,vmaf_v0.6.1:enable_transform:name=vmaf_phone",
    );
    let mut dmax = 0.0f64;
    for f in &out.frames {
        let x = f.vmaf;
        assert!(x > 0.0 && x < 100.0, "unclipped: {x}");
        let expected = phone(x).clamp(0.0, 100.0);
        let d = (get(f, "vmaf_phone") - expected).abs();
        dmax = dmax.max(d);
        assert!(d < 1e-9, "{} vs {expected}", get(f, "vmaf_phone"));
        assert!(get(f, "vmaf_phone") > x);
    }
    eprintln!(
        "phone: max |dev| {dmax:.2e} over {} frames",
        out.frames.len()
    );
}

/// libvmaf's percentile: linear interpolation at `perc * (n - 1) / 100` of sorted scores.
fn percentile(sorted: &[f64], perc: f64) -> f64 {
    let p = perc * (sorted.len() - 1) as f64 / 100.0;
    let (l, r) = (p.floor(), p.ceil());
    if l == r {
        sorted[l as usize]
    } else {
        sorted[l as usize] * (r - p) + sorted[r as usize] * (p - l)
    }
}

/// `vmaf_b_v0.6.3`: model "0" is `vmaf`, the 20 members `vmaf_0001`..`vmaf_0020`; from the
/// members' scores (untransformed: the file does not enable the transform, and inside
/// 0..100, so clipping leaves them alone) the test derives libvmaf's bagging score (mean),
/// stddev (population, times the slope 1 of the identity transform + clip at the mean),
/// and the 2.5 / 97.5 percentiles, and compares them with `vmaf_bagging`, `vmaf_stddev`,
/// `vmaf_ci_p95_lo`, `vmaf_ci_p95_hi`.
#[test]
fn bootstrap_model_confidence_interval() {
    let p = &reference_pairs()[0];
    let out = score(p, "vmaf_b_v0.6.3");
    let mut dmax = 0.0f64;
    for f in &out.frames {
        let mut members: Vec<f64> = (1..=20).map(|i| get(f, &format!("vmaf_{i:04}"))).collect();
        assert!(f.get("vmaf_0021").is_none());
        assert!(members.iter().all(|&m| m > 0.0 && m < 100.0));
        let n = members.len() as f64;
        let mean = members.iter().sum::<f64>() / n;
        let sd = (members.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / n).sqrt();
        members.sort_by(f64::total_cmp);
        let expected = [
            ("vmaf_bagging", mean),
            ("vmaf_stddev", sd),
            ("vmaf_ci_p95_lo", percentile(&members, 2.5)),
            ("vmaf_ci_p95_hi", percentile(&members, 97.5)),
        ];
        for (name, e) in expected {
            let d = (get(f, name) - e).abs();
            dmax = dmax.max(d);
            assert!(d < 1e-9, "{name}: {} vs {e}", get(f, name));
        }
        assert!(get(f, "vmaf_ci_p95_lo") <= mean && mean <= get(f, "vmaf_ci_p95_hi"));
    }
    let s = out.summary.expect("summary");
    assert!(s.get("vmaf_bagging").is_some() && s.get("vmaf").is_some());
    eprintln!(
        "bootstrap: max |dev| {dmax:.2e} over {} frames",
        out.frames.len()
    );
}

/// `vmaf_b_v0.6.3:enable_transform`: the statistics are taken on the members' raw
/// (untransformed, unclipped) predictions, recomputed here through the engine API from the
/// frame's features, and then transformed: bagging = T(mean), interval = T(percentiles),
/// stddev = sd * (T(mean + 0.01) - T(mean - 0.01)) / 0.02, with T = clip(max(poly(x), x)).
/// On the 160x90 pair the transformed scores pass 100, so the clip makes the slope 0; on the
/// 576x324 pair (VMAF about 83) the slope is the polynomial's, between 0 and 1: both
/// branches of the stddev scaling are exercised.
#[test]
fn bootstrap_with_transform_follows_libvmaf_formulas() {
    let (_, members) = Model::load_collection("vmaf_b_v0.6.3").expect("built-in collection");
    assert_eq!(members.len(), 20);
    let t = |x: f64| phone(x).clamp(0.0, 100.0);
    let mut dmax = 0.0f64;
    let mut slopes = Vec::new();
    let pairs = reference_pairs();
    for p in pairs.iter().take(2) {
        let out = score(p, "vmaf_b_v0.6.3:enable_transform");
        for f in &out.frames {
            let feats: Vec<f64> = [
                "integer_adm2",
                "integer_motion2",
                "integer_vif_scale0",
                "integer_vif_scale1",
                "integer_vif_scale2",
                "integer_vif_scale3",
            ]
            .iter()
            .map(|n| get(f, n))
            .collect();
            let mut raw: Vec<f64> = members.iter().map(|m| m.predict_raw(&feats)).collect();
            let n = raw.len() as f64;
            let mean = raw.iter().sum::<f64>() / n;
            let sd = (raw.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / n).sqrt();
            raw.sort_by(f64::total_cmp);
            let slope = (t(mean + 0.01) - t(mean - 0.01)) / 0.02;
            let expected = [
                ("vmaf_bagging", t(mean)),
                ("vmaf_stddev", sd * slope),
                ("vmaf_ci_p95_lo", t(percentile(&raw, 2.5))),
                ("vmaf_ci_p95_hi", t(percentile(&raw, 97.5))),
            ];
            for (name, e) in expected {
                // The features in the message are the exact f64 values the scorer used.
                let d = (get(f, name) - e).abs();
                dmax = dmax.max(d);
                assert!(d < 1e-9, "{name}: {} vs {e}", get(f, name));
            }
            slopes.push(slope);
        }
    }
    assert!(slopes.contains(&0.0), "{slopes:?}");
    assert!(slopes.iter().any(|&s| s > 0.0 && s < 1.0), "{slopes:?}");
    let clipped = slopes.iter().filter(|&&s| s == 0.0).count();
    eprintln!(
        "bootstrap+transform: max |dev| {dmax:.2e}; slope 0 (clipped) on {clipped} of {} frames",
        slopes.len()
    );
}

/// Bad model lists are refused at NULL->READY with a message naming the problem.
#[test]
fn bad_model_lists_are_refused() {
    let p = &reference_pairs()[0];
    for (model, text) in [
        (
            "vmaf_v0.6.1,vmaf_v0.6.1neg,vmaf_v0.6.1neg",
            "would both write 'vmaf_v0.6.1neg'",
        ),
        ("vmaf_v0.6.1:name=x", "always named 'vmaf'"),
        ("vmaf_v0.6.1:phone", "is not an option"),
        (
            "vmaf_v0.6.1,nope_model",
            "cannot read model file 'nope_model'",
        ),
    ] {
        let desc = format!(
            "vmafcompare name=cmp backend=cpu model=\"{model}\" ! fakesink {} {}",
            raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
            raw_branch(&p.distorted, p.width, p.height, p.format, "distorted"),
        );
        let out = run(&desc, LONG);
        let all = out.errors.join("\n");
        assert!(all.contains(text), "{model}: {all}");
    }
}

/// Every model kind in one list on `backend=cuda` equals `backend=cpu` bit for bit (VIF and
/// ADM under both option sets, the bootstrap interval, the phone transform): the GPU computes
/// each option set's features once and shares motion and the upload. Skips (printing why)
/// without a usable GPU; `VMAFCOMPARE_REQUIRE_GPU=1` makes that a failure.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn model_lists_on_cuda_equal_cpu() {
    let list = "vmaf_v0.6.1,vmaf_v0.6.1neg,vmaf_b_v0.6.3,vmaf_v0.6.1:enable_transform:name=phone";
    for p in reference_pairs() {
        let desc = |backend: &str| {
            format!(
                "vmafcompare name=cmp backend={backend} model=\"{list}\" ! fakesink {} {}",
                raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
                raw_branch(&p.distorted, p.width, p.height, p.format, "distorted"),
            )
        };
        let gpu = run(&desc("cuda"), LONG);
        if let Some(why) = gpu.errors.first() {
            assert!(
                std::env::var_os("VMAFCOMPARE_REQUIRE_GPU").is_none(),
                "VMAFCOMPARE_REQUIRE_GPU is set but backend=cuda failed: {why}"
            );
            eprintln!("skipped: no usable GPU ({why})");
            return;
        }
        let cpu = run(&desc("cpu"), LONG);
        assert!(cpu.errors.is_empty(), "{:?}", cpu.errors);
        assert_eq!(
            gpu.summary.as_ref().map(|s| s.backend.as_str()),
            Some("cuda")
        );
        assert_eq!(cpu.frames.len(), p.frames);
        assert_eq!(gpu.frames.len(), p.frames);
        let mut compared = 0;
        for (c, g) in cpu.frames.iter().zip(&gpu.frames) {
            assert_eq!(c.metrics.len(), g.metrics.len());
            for ((cn, cv), (gn, gv)) in c.metrics.iter().zip(&g.metrics) {
                assert_eq!(cn, gn);
                assert_eq!(cv.to_bits(), gv.to_bits(), "frame {}: {cn}", c.index);
                compared += 1;
            }
        }
        eprintln!(
            "{}x{} {}: {compared} values, cuda = cpu bit for bit",
            p.width, p.height, p.format
        );
    }
}
