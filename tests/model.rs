//! Model loading: built-ins parse, bad files are refused with what is wrong.
use gstvmafcompare::engine::model::*;

#[test]
fn builtins_load() {
    for (name, _) in BUILTIN_MODELS {
        let m = Model::load(name).expect("built-in model parses");
        assert_eq!(m.features.len(), 6);
        assert!(m.support_vectors() > 200);
    }
    let neg = Model::load("vmaf_v0.6.1neg").unwrap();
    assert_eq!(neg.vif.enhn_gain_limit, 1.0);
    assert_eq!(neg.adm.enhn_gain_limit, 1.0);
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
