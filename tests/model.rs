//! Model loading: built-ins parse, bad files are refused with what is wrong.
use gstvmafcompare::engine::model::*;

#[test]
fn builtins_load() {
    for (name, _) in BUILTIN_MODELS {
        let m = Model::load(name).expect("built-in model parses");
        // v0: VIF at four scales, ADM, motion; v1: CAMBI, SpEED chroma, ADM3, motion3.
        let want = if name.starts_with("vmaf_v1.") { 4 } else { 6 };
        assert_eq!(m.features.len(), want, "{name}");
        assert!(m.support_vectors() > 50, "{name}: {}", m.support_vectors());
    }
    let neg = Model::load("vmaf_v0.6.1neg").unwrap();
    assert_eq!(neg.option("vif_enhn_gain_limit"), Some(1.0));
    assert_eq!(neg.option("adm_enhn_gain_limit"), Some(1.0));
}

/// The float built-ins are the integer ones renamed to libvmaf's float feature names: the
/// derived vmaf_float_v0.6.1 equals, value for value, the published
/// `../shared/models/vmaf_float_v0.6.1.json`, and vmaf_4k_v0.6.1neg is the published file.
#[test]
fn float_builtins_are_the_published_models() {
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/models");
    let read = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(shared.join(format!("{name}.json")))
            .unwrap_or_else(|e| panic!("../shared/models/{name}.json: {e}"));
        serde_json::from_str(&text).expect("published model JSON")
    };
    let derived: serde_json::Value =
        serde_json::from_str(&builtin_text("vmaf_float_v0.6.1").expect("float built-in"))
            .expect("derived JSON");
    assert_eq!(derived, read("vmaf_float_v0.6.1"));
    let neg: serde_json::Value =
        serde_json::from_str(&builtin_text("vmaf_4k_v0.6.1neg").expect("built-in")).unwrap();
    assert_eq!(neg, read("vmaf_4k_v0.6.1neg"));
    for (name, from) in FLOAT_BUILTIN_MODELS {
        let text = builtin_text(name).expect("float built-in");
        assert!(!text.contains("VMAF_integer_feature"), "{name}");
        assert_eq!(
            text.replace("VMAF_feature", "VMAF_integer_feature"),
            builtin_text(from).expect("integer built-in"),
            "{name}"
        );
        assert!(is_builtin(name));
    }
}

#[test]
fn rejects_bad_models() {
    assert!(matches!(
        Model::load("/nonexistent/model.json"),
        Err(ModelError::Unreadable { .. })
    ));
    assert!(Model::from_json("t", "{").is_err());
    assert!(Model::from_json("t", "{\"model_dict\": 3}").is_err());
    let good = BUILTIN_MODELS[0].1;
    let bad = good.replace("VMAF_integer_feature_adm2_score", "VMAF_feature_foo_score");
    let err = Model::from_json("t", &bad).unwrap_err().to_string();
    assert!(err.contains("VMAF_feature_foo_score"), "{err}");
    let truncated = &good[..good.len() / 2];
    assert!(Model::from_json("t", truncated).is_err());
}

// ---- Hostile model files (issue 5 item 6): each is refused with what is wrong, never a panic.

use proptest::prelude::*;

const GOOD: &str = BUILTIN_MODELS[0].1;

/// The error text of `from_json("t", text)`, which must be an error naming the origin.
fn refused(text: &str) -> String {
    match Model::from_json("t", text) {
        Ok(_) => panic!("accepted: {}", &text[..text.len().min(300)]),
        Err(e) => {
            let e = e.to_string();
            assert!(e.starts_with("invalid VMAF model 't': "), "{e}");
            e
        }
    }
}

/// The built-in model with `model_dict[key]` set to `value` (JSON text).
fn with_field(key: &str, value: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(GOOD).unwrap();
    v["model_dict"][key] = serde_json::from_str(value).unwrap();
    v.to_string()
}

/// The built-in model with its libsvm text edited by `f`.
fn with_svm(f: impl Fn(&str) -> String) -> String {
    let mut v: serde_json::Value = serde_json::from_str(GOOD).unwrap();
    let svm = v["model_dict"]["model"].as_str().unwrap().to_owned();
    v["model_dict"]["model"] = serde_json::Value::String(f(&svm));
    v.to_string()
}

#[test]
fn hostile_models_are_refused_with_the_reason() {
    let huge = |n: usize, item: &str| format!("[{}]", vec![item; n].join(","));
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "not a libvmaf model JSON"),
        ("null".into(), "not a libvmaf model JSON"),
        ("[]".into(), "not a libvmaf model JSON"),
        ("NaN".into(), "not a libvmaf model JSON"),
        (
            with_field(
                "feature_names",
                &huge(100_000, "\"VMAF_integer_feature_adm2_score\""),
            ),
            "100000 features; expected 1 to 64",
        ),
        (
            with_field("feature_names", "[]"),
            "0 features; expected 1 to 64",
        ),
        (
            with_field("feature_names", "[1, 2]"),
            "not a libvmaf model JSON",
        ),
        (
            with_field("feature_names", "\"adm2\""),
            "not a libvmaf model JSON",
        ),
        (
            with_field("slopes", &huge(1_000_000, "1.5")),
            "slopes and intercepts must have 7 entries",
        ),
        (
            GOOD.replacen("0.012020766332648465", "1e400", 1),
            "number out of range",
        ),
        (with_field("slopes", "[\"1\"]"), "not a libvmaf model JSON"),
        (with_field("intercepts", "{}"), "not a libvmaf model JSON"),
        (with_field("model_type", "42"), "not a libvmaf model JSON"),
        (
            with_field("model_type", "\"RANDOMFOREST\""),
            "model_type 'RANDOMFOREST'",
        ),
        (
            with_field("norm_type", "\"clip_0to1\""),
            "norm_type 'clip_0to1'",
        ),
        (
            with_field("score_clip", "[100, 0]"),
            "score_clip [100, 0] is empty",
        ),
        (with_field("score_clip", "[0]"), "not a libvmaf model JSON"),
        (
            with_field(
                "score_transform",
                "{\"enabled\": true, \"knots\": [[0, 0], [0, 100]]}",
            ),
            "knots must have strictly increasing x",
        ),
        (
            with_field("feature_opts_dicts", "[{}]"),
            "feature_opts_dicts has 1 entries for 6 features",
        ),
        (
            with_field(
                "feature_opts_dicts",
                "[{\"adm_enhn_gain_limit\": 1e9}, {}, {}, {}, {}, {}]",
            ),
            "outside 1..100",
        ),
        (
            with_field(
                "feature_opts_dicts",
                "[{\"adm_enhn_gain_limit\": \"1\"}, {}, {}, {}, {}, {}]",
            ),
            "must be a finite number",
        ),
        (with_field("model", "7"), "not a libvmaf model JSON"),
        (
            with_svm(|s| s.replace("gamma 0.04", "gamma nan")),
            "no finite gamma",
        ),
        (
            with_svm(|s| s.replace("gamma 0.04", "gamma inf")),
            "no finite gamma",
        ),
        (
            with_svm(|s| s.replace("rho -1.33133", "rho NaN")),
            "no finite rho",
        ),
        (
            with_svm(|s| s.replace("total_sv 211", "total_sv 2000000")),
            "total_sv 2000000 is outside",
        ),
        (
            with_svm(|s| s.replace("total_sv 211", "total_sv 0")),
            "total_sv 0 is outside",
        ),
        (
            with_svm(|s| s.replace("total_sv 211", "total_sv 1")),
            "more support vectors than total_sv 1",
        ),
        (
            with_svm(|s| s.replace("total_sv 211", "total_sv 212")),
            "211 support vectors for total_sv 212",
        ),
        (
            with_svm(|s| s.replace("kernel_type rbf", "kernel_type linear")),
            "kernel_type",
        ),
        (
            with_svm(|s| s.replacen("1:0.65734273", "1:nan", 1)),
            "value 'nan' is not a finite number",
        ),
        (
            with_svm(|s| s.replacen("1:0.65734273", "7:0.5", 1)),
            "index '7' outside 1..6",
        ),
        (
            with_svm(|s| s.replacen("1:0.65734273", "1=0.5", 1)),
            "is not index:value",
        ),
        (
            with_svm(|s| s.replacen("-4 1:", "inf 1:", 1)),
            "bad coefficient",
        ),
        (
            with_svm(|s| s.split("SV\n").next().unwrap().to_owned()),
            "0 support vectors",
        ),
        (
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
            "not a libvmaf model JSON",
        ),
    ];
    for (text, want) in &cases {
        let e = refused(text);
        assert!(e.contains(want), "want '{want}' in: {e}");
    }
}

#[test]
fn model_files_that_are_not_regular_files_are_refused() {
    // /dev/zero would never end, a FIFO would block, a directory is no file.
    let dir = std::env::temp_dir();
    let fifo = dir.join(format!("vmafcompare-model-fifo-{}", std::process::id()));
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let mut paths = vec![
        "/dev/zero".to_owned(),
        dir.display().to_string(),
        String::new(),
    ];
    if made {
        paths.push(fifo.display().to_string());
    }
    for path in &paths {
        let e = Model::load(path).expect_err(path);
        assert!(matches!(e, ModelError::Unreadable { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("cannot read model file '{path}': ")),
            "{text}"
        );
        if !path.is_empty() {
            assert!(text.contains("not a regular file"), "{text}");
        }
    }
    let _ = std::fs::remove_file(&fifo);

    // A file above the size limit is refused before it is parsed.
    let big = dir.join(format!("vmafcompare-model-big-{}.json", std::process::id()));
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(MAX_MODEL_FILE_BYTES + 1).unwrap();
    let text = Model::load(&big.display().to_string())
        .expect_err("too big")
        .to_string();
    assert!(text.contains("larger than"), "{text}");
    let _ = std::fs::remove_file(&big);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    /// Every strict prefix of a model (ending before its closing brace) is refused.
    #[test]
    fn truncated_models_are_refused(cut in 0usize..GOOD.trim_end().len()) {
        if GOOD.is_char_boundary(cut) {
            refused(&GOOD[..cut]);
        }
    }

    /// A model with bytes replaced, inserted or deleted anywhere parses or is refused with a
    /// reason; what parses predicts without panicking.
    #[test]
    fn mutated_models_never_panic(
        edits in prop::collection::vec(
            (0usize..GOOD.len(), 0u8..3, prop::sample::select(
                b"{}[]\":,.-+eE0123456789 \nnaNifSVx".to_vec())),
            1..8,
        ),
        features in prop::collection::vec(-2.0f64..2.0, 6),
    ) {
        let mut bytes = GOOD.as_bytes().to_vec();
        for (at, op, b) in edits {
            let at = at.min(bytes.len().saturating_sub(1));
            match op {
                0 => bytes[at] = b,
                1 => bytes.insert(at, b),
                _ => { bytes.remove(at); }
            }
        }
        let Ok(text) = String::from_utf8(bytes) else { return Ok(()) };
        match Model::from_json("t", &text) {
            Ok(m) => {
                let n = m.features.len();
                let _ = m.predict(&features[..n.min(6)]);
            }
            Err(e) => prop_assert!(e.to_string().starts_with("invalid VMAF model 't': ")),
        }
    }

    /// Any JSON value in place of any field of `model_dict` is accepted or refused with a
    /// reason, never a panic.
    #[test]
    fn any_value_in_any_field_never_panics(
        key in prop::sample::select(vec![
            "model_type", "norm_type", "score_clip", "score_transform", "feature_names",
            "feature_opts_dicts", "slopes", "intercepts", "model", "feature_dict", "extra",
        ]),
        value in prop::sample::select(vec![
            "null", "true", "0", "-1", "1e308", "-1e308", "\"\"", "\"x\"", "[]", "[null]",
            "[1, 2]", "[[1, 2], [0, 1]]", "{}", "{\"enabled\": true, \"p0\": 1e308, \"p2\": 1e308}",
            "{\"enabled\": true, \"knots\": [[0, 0]]}", "[{}, {}, {}, {}, {}, {}]",
            "[\"VMAF_integer_feature_motion2_score\"]",
        ]),
    ) {
        match Model::from_json("t", &with_field(key, value)) {
            Ok(m) => { let _ = m.predict(&[0.5; 6]); }
            Err(e) => prop_assert!(e.to_string().starts_with("invalid VMAF model 't': ")),
        }
    }

    /// The built-in models map any feature vector in the features' natural range into the
    /// clip range 0..100.
    #[test]
    fn builtin_predictions_stay_in_range(
        which in 0usize..3,
        features in prop::collection::vec(0.0f64..1.5, 6),
        motion in 0.0f64..50.0,
    ) {
        let m = Model::load(BUILTIN_MODELS[which].0).unwrap();
        let mut x = features;
        x[1] = motion;
        let y = m.predict(&x);
        prop_assert!((0.0..=100.0).contains(&y), "{y}");
    }
}
