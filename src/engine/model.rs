//! VMAF models in libvmaf's JSON format: feature normalisation, nu-SVR with an RBF kernel,
//! score transform and clipping.
//!
//! Source of the format and arithmetic: Netflix/vmaf v3.2.0, libvmaf/src/read_json_model.c
//! (parsing), libvmaf/src/predict.c (normalise, predict, denormalise, transform, clip) and
//! libvmaf/src/svm.cpp (libsvm's `svm_predict_values` and RBF `k_function`).

use std::path::Path;

use serde::Deserialize;

use std::sync::Arc;

use crate::engine::model_svm::{parse_libsvm, piecewise_linear};
use crate::features::{Feature, Instance, OptionValue, Options, REGISTRY};

/// Built-in models: name, JSON text. The parameters are Netflix's published VMAF models
/// (libvmaf 3.2.0's `model/*.json`, BSD-2-Clause-Patent, see `src/engine/models/LICENSE`).
pub const BUILTIN_MODELS: &[(&str, &str)] = &[
    ("vmaf_v0.6.1", include_str!("models/vmaf_v0.6.1.json")),
    ("vmaf_v0.6.1neg", include_str!("models/vmaf_v0.6.1neg.json")),
    ("vmaf_4k_v0.6.1", include_str!("models/vmaf_4k_v0.6.1.json")),
    (
        "vmaf_4k_v0.6.1neg",
        include_str!("models/vmaf_4k_v0.6.1neg.json"),
    ),
    // A bootstrap collection: model "0" and 20 bootstrap members (see `NamedModel`).
    ("vmaf_b_v0.6.3", include_str!("models/vmaf_b_v0.6.3.json")),
    // VMAF v1 (libvmaf 3.2.0, model/vmaf_v1.0.16/ and model/vmaf_v1.0.16_hfr/): CAMBI,
    // SpEED chroma, ADM with the Barten CSF, motion clipped at 18; `<v>d<h>h` is the viewing
    // distance in display heights, `_2160` the 4K display, `_hfr_` the five-frame motion.
    (
        "vmaf_v1.0.16_3d0h",
        include_str!("models/vmaf_v1.0.16_3d0h.json"),
    ),
    (
        "vmaf_v1.0.16_5d0h",
        include_str!("models/vmaf_v1.0.16_5d0h.json"),
    ),
    (
        "vmaf_v1.0.16_1d5h_2160",
        include_str!("models/vmaf_v1.0.16_1d5h_2160.json"),
    ),
    (
        "vmaf_v1.0.16_3d0h_2160",
        include_str!("models/vmaf_v1.0.16_3d0h_2160.json"),
    ),
    (
        "vmaf_v1.0.16_hfr_3d0h",
        include_str!("models/vmaf_v1.0.16_hfr_3d0h.json"),
    ),
    (
        "vmaf_v1.0.16_hfr_5d0h",
        include_str!("models/vmaf_v1.0.16_hfr_5d0h.json"),
    ),
    (
        "vmaf_v1.0.16_hfr_1d5h_2160",
        include_str!("models/vmaf_v1.0.16_hfr_1d5h_2160.json"),
    ),
    (
        "vmaf_v1.0.16_hfr_3d0h_2160",
        include_str!("models/vmaf_v1.0.16_hfr_3d0h_2160.json"),
    ),
];

/// Built-in float models (libvmaf 3.2.0 builds these in too): name, and the integer built-in
/// they are made from. libvmaf's `model/vmaf_float_*.json` have exactly the parameters of the
/// integer models they pair with (checked value for value against libvmaf 3.2.0's files, and
/// by `tests/model.rs` against `../shared/models/vmaf_float_v0.6.1.json`); only the feature
/// names differ: `VMAF_feature_*` (libvmaf's float extractors `float_vif`, `float_adm`,
/// `float_motion`) where the integer models say `VMAF_integer_feature_*`. [`Model::load`]
/// makes them by that renaming.
pub const FLOAT_BUILTIN_MODELS: &[(&str, &str)] = &[
    ("vmaf_float_v0.6.1", "vmaf_v0.6.1"),
    ("vmaf_float_v0.6.1neg", "vmaf_v0.6.1neg"),
    ("vmaf_float_4k_v0.6.1", "vmaf_4k_v0.6.1"),
    // A bootstrap collection, as vmaf_b_v0.6.3.
    ("vmaf_float_b_v0.6.3", "vmaf_b_v0.6.3"),
];

/// The JSON text of built-in model `name` ([`BUILTIN_MODELS`] or [`FLOAT_BUILTIN_MODELS`]).
pub fn builtin_text(name: &str) -> Option<String> {
    let integer = |n: &str| {
        BUILTIN_MODELS
            .iter()
            .find(|(b, _)| *b == n)
            .map(|(_, t)| *t)
    };
    if let Some(text) = integer(name) {
        return Some(text.to_owned());
    }
    let (_, from) = FLOAT_BUILTIN_MODELS.iter().find(|(f, _)| *f == name)?;
    integer(from).map(|t| t.replace("VMAF_integer_feature", "VMAF_feature"))
}

/// Whether `name` is a built-in model name.
pub fn is_builtin(name: &str) -> bool {
    BUILTIN_MODELS.iter().any(|(n, _)| *n == name)
        || FLOAT_BUILTIN_MODELS.iter().any(|(n, _)| *n == name)
}

/// The default model, as in libvmaf.
pub const DEFAULT_MODEL: &str = "vmaf_v0.6.1";

/// Largest model file read (the published models are about 20 KiB); guards against a
/// `model` property naming a device such as `/dev/zero`.
pub const MAX_MODEL_FILE_BYTES: u64 = 64 << 20;

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// `model` is neither a built-in name nor a readable file.
    #[error("cannot read model file '{path}': {source} (built-in models: {builtins})")]
    Unreadable {
        /// The path given.
        path: String,
        /// The I/O error.
        source: std::io::Error,
        /// Comma-separated list of built-in names.
        builtins: String,
    },
    /// The JSON does not have libvmaf's model layout or holds values out of range.
    #[error("invalid VMAF model '{origin}': {reason}")]
    Invalid {
        /// Built-in name or path.
        origin: String,
        /// What is wrong.
        reason: String,
    },
}

/// A feature the model consumes: the registered feature that computes it and which of its
/// outputs (libvmaf's unsuffixed name, e.g. `integer_vif_scale0` for the model's
/// `VMAF_integer_feature_vif_scale0_score`).
#[derive(Debug, Clone)]
pub struct ModelInput {
    /// The feature computing it.
    pub feature: &'static dyn Feature,
    /// Its output name, without the option suffix.
    pub output: String,
}

impl ModelInput {
    /// The registered feature that computes `name` (a model's `feature_names` entry).
    fn from_libvmaf_name(name: &str) -> Option<Self> {
        REGISTRY.iter().find_map(|f| {
            f.model_output(name).map(|output| Self {
                feature: *f,
                output,
            })
        })
    }
}

/// The options of `all` that `feature` accepts.
fn options_for(all: &Options, feature: &dyn Feature) -> Options {
    Options(
        all.0
            .iter()
            .filter(|(k, _)| feature.accepts(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// Optional polynomial + rectification transform of the predicted score (libvmaf
/// `score_transform`). Applied only when `enabled`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreTransform {
    /// Whether the transform runs (libvmaf: the JSON's `enabled`, or the enable-transform flag).
    pub enabled: bool,
    /// Polynomial coefficients p0 + p1*x + p2*x^2; `None` terms are absent.
    pub p: [Option<f64>; 3],
    /// Piecewise-linear knots `(x, y)`, applied after the polynomial.
    pub knots: Option<Vec<(f64, f64)>>,
    /// Output never above the input.
    pub out_lte_in: bool,
    /// Output never below the input.
    pub out_gte_in: bool,
}

/// libvmaf's chroma-from-luma correction of the VMAF v1 models: where the SpEED chroma
/// feature is exactly 0 (no chroma difference at all, e.g. grey content), it is replaced by
/// `c * (1 - adm3)` before the SVM, `c` being the model's `chroma_correction_parameter` (120).
/// Both values pass through the model's normalisation as libvmaf does (denormalised from the
/// normalised value, the corrected value normalised again).
/// Source: Netflix/vmaf v3.2.0, libvmaf/src/predict.c (`post_process_feature_from_another`)
/// and libvmaf/src/read_json_model.c.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ChromaCorrection {
    /// `chroma_correction_parameter`.
    parameter: f64,
    /// Model feature index of the guiding feature (its name contains `adm3`).
    guiding: usize,
    /// Model feature index of the corrected feature (its name contains `speed_chroma`).
    guided: usize,
}

/// [`ChromaCorrection`] on the features `x` as normalised with `norm` (per feature (slope,
/// intercept); `None`: no normalisation).
fn correct_chroma(c: ChromaCorrection, norm: Option<&[(f64, f64)]>, x: &mut [f64]) {
    let line = |i: usize| norm.and_then(|n| n.get(i).copied());
    let denormalise = |i: usize| -> f64 {
        let v = x.get(i).copied().unwrap_or(0.0);
        line(i).map_or(v, |(slope, intercept)| (v - intercept) / slope)
    };
    let (guiding, guided) = (denormalise(c.guiding), denormalise(c.guided));
    if guided != 0.0 {
        return;
    }
    let corrected = -c.parameter * guiding + c.parameter;
    let normalised = line(c.guided).map_or(corrected, |(slope, intercept)| {
        slope * corrected + intercept
    });
    if let Some(slot) = x.get_mut(c.guided) {
        *slot = normalised;
    }
}

/// A loaded VMAF nu-SVR model.
#[derive(Debug, Clone)]
pub struct Model {
    /// Built-in name or file path it came from.
    pub origin: String,
    /// Features in model order.
    pub features: Vec<ModelInput>,
    /// The options of the model's `feature_opts_dicts`, all features' together (each key
    /// belongs to the one feature that [accepts](Feature::accepts) it).
    pub options: Options,
    linear_rescale: bool,
    /// Per feature (slope, intercept).
    feature_norm: Vec<(f64, f64)>,
    /// Output (slope, intercept).
    out_norm: (f64, f64),
    clip: Option<(f64, f64)>,
    /// Score transform.
    pub transform: ScoreTransform,
    /// The v1 models' chroma correction (`chroma_correction_parameter`, see
    /// [`ChromaCorrection`]).
    chroma_correction: Option<ChromaCorrection>,
    gamma: f64,
    rho: f64,
    /// Dense support vectors, `features.len()` values each.
    sv: Vec<f64>,
    sv_coef: Vec<f64>,
}

#[derive(Deserialize)]
struct ModelFile {
    model_dict: ModelDict,
}

#[derive(Deserialize)]
struct ModelDict {
    model_type: String,
    #[serde(default)]
    norm_type: Option<String>,
    #[serde(default)]
    score_clip: Option<[f64; 2]>,
    #[serde(default)]
    score_transform: Option<TransformJson>,
    feature_names: Vec<String>,
    #[serde(default)]
    chroma_correction_parameter: Option<f64>,
    #[serde(default)]
    feature_opts_dicts: Option<Vec<serde_json::Map<String, serde_json::Value>>>,
    #[serde(default)]
    slopes: Vec<f64>,
    #[serde(default)]
    intercepts: Vec<f64>,
    model: String,
}

#[derive(Deserialize)]
struct TransformJson {
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    p0: Option<f64>,
    #[serde(default)]
    p1: Option<f64>,
    #[serde(default)]
    p2: Option<f64>,
    #[serde(default)]
    knots: Option<Vec<[f64; 2]>>,
    #[serde(default)]
    out_lte_in: Option<String>,
    #[serde(default)]
    out_gte_in: Option<String>,
}

impl Model {
    /// Loads `spec`: a built-in model name (see [`BUILTIN_MODELS`], [`FLOAT_BUILTIN_MODELS`])
    /// or a path to a libvmaf JSON model file.
    ///
    /// Errors: [`ModelError::Unreadable`] when it is no built-in name and the file cannot be
    /// read, is not a regular file (a directory, a FIFO or a device such as `/dev/zero`, which
    /// would block or never end) or is larger than [`MAX_MODEL_FILE_BYTES`];
    /// [`ModelError::Invalid`] when the content is not a usable model.
    pub fn load(spec: &str) -> Result<Self, ModelError> {
        let (origin, text) = model_text(spec)?;
        Self::from_json(&origin, &text)
    }

    /// Loads `spec` (as [`Model::load`]) with its bootstrap members: for a libvmaf model
    /// collection (a JSON object keyed `"0"`, `"1"`, ..., as `vmaf_b_v0.6.3`), model `"0"`
    /// and the members `"1"` to `"N"` (consecutive keys, at most 256, model type
    /// `BOOTSTRAP_LIBSVMNUSVR`), as libvmaf's `vmaf_model_collection_load` reads them; for a
    /// plain model, the model and no members.
    ///
    /// Errors: as [`Model::load`], naming the member (`file.json#3`) that is invalid.
    pub fn load_collection(spec: &str) -> Result<(Self, Vec<Self>), ModelError> {
        let (origin, text) = model_text(spec)?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| ModelError::Invalid {
                origin: origin.clone(),
                reason: format!("not a libvmaf model JSON: {e}"),
            })?;
        if !is_collection(&value) {
            return Ok((Self::from_value(&origin, value)?, Vec::new()));
        }
        let main = Self::from_value(&origin, value["0"].clone())?;
        let mut members = Vec::new();
        for i in 1..=MAX_BOOTSTRAP_MEMBERS {
            let Some(m) = value.get(i.to_string()) else {
                break;
            };
            members.push(Self::from_value(&format!("{origin}#{i}"), m.clone())?);
        }
        Ok((main, members))
    }

    /// Parses a model from libvmaf JSON text; `origin` names it in errors. For a model
    /// collection (see [`Model::load_collection`]) this is its model `"0"`.
    pub fn from_json(origin: &str, text: &str) -> Result<Self, ModelError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| ModelError::Invalid {
                origin: origin.to_owned(),
                reason: format!("not a libvmaf model JSON: {e}"),
            })?;
        if is_collection(&value) {
            return Self::from_value(origin, value["0"].clone());
        }
        Self::from_value(origin, value)
    }

    fn from_value(origin: &str, value: serde_json::Value) -> Result<Self, ModelError> {
        let invalid = |reason: String| ModelError::Invalid {
            origin: origin.to_owned(),
            reason,
        };
        let file: ModelFile = serde_json::from_value(value)
            .map_err(|e| invalid(format!("not a libvmaf model JSON: {e}")))?;
        let d = file.model_dict;
        if d.model_type != "LIBSVMNUSVR" && d.model_type != "BOOTSTRAP_LIBSVMNUSVR" {
            return Err(invalid(format!(
                "model_type '{}' is not supported (only LIBSVMNUSVR and BOOTSTRAP_LIBSVMNUSVR)",
                d.model_type
            )));
        }
        let n = d.feature_names.len();
        if n == 0 || n > 64 {
            return Err(invalid(format!("{n} features; expected 1 to 64")));
        }
        let features = d
            .feature_names
            .iter()
            .map(|name| {
                ModelInput::from_libvmaf_name(name).ok_or_else(|| {
                    invalid(format!(
                        "feature '{name}' is not computed by vmafcompare (it computes the features of: {})",
                        REGISTRY.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;

        let linear_rescale = match d.norm_type.as_deref() {
            None | Some("none") => false,
            Some("linear_rescale") => true,
            Some(other) => return Err(invalid(format!("norm_type '{other}' is not supported"))),
        };
        let (feature_norm, out_norm) = if linear_rescale {
            if d.slopes.len() != n + 1 || d.intercepts.len() != n + 1 {
                return Err(invalid(format!(
                    "slopes and intercepts must have {} entries (one per feature plus the output), got {} and {}",
                    n + 1,
                    d.slopes.len(),
                    d.intercepts.len()
                )));
            }
            if d.slopes[0] == 0.0 {
                return Err(invalid("the output slope (slopes[0]) is zero".into()));
            }
            let per: Vec<_> = (0..n)
                .map(|i| (d.slopes[i + 1], d.intercepts[i + 1]))
                .collect();
            (per, (d.slopes[0], d.intercepts[0]))
        } else {
            (vec![(1.0, 0.0); n], (1.0, 0.0))
        };

        let mut options = Options::new();
        if let Some(opts) = &d.feature_opts_dicts {
            if opts.len() != n {
                return Err(invalid(format!(
                    "feature_opts_dicts has {} entries for {n} features",
                    opts.len()
                )));
            }
            for map in opts {
                for (key, value) in map {
                    let v = OptionValue::from_json(key, value).map_err(&invalid)?;
                    if !REGISTRY.iter().any(|f| f.accepts(key)) {
                        return Err(invalid(format!("feature option '{key}' is not supported")));
                    }
                    options.set(key, v);
                }
            }
        }
        // Every feature the model uses must take its options.
        for input in &features {
            input
                .feature
                .configure(&options_for(&options, input.feature), true)
                .map_err(&invalid)?;
        }

        let clip = match d.score_clip {
            Some([lo, hi]) if lo <= hi => Some((lo, hi)),
            Some([lo, hi]) => return Err(invalid(format!("score_clip [{lo}, {hi}] is empty"))),
            None => None,
        };
        let transform = match d.score_transform {
            None => ScoreTransform::default(),
            Some(t)
                if t.knots
                    .as_ref()
                    .is_some_and(|k| k.windows(2).any(|w| w[1][0] <= w[0][0])) =>
            {
                return Err(invalid(
                    "score_transform knots must have strictly increasing x".into(),
                ))
            }
            Some(t) => ScoreTransform {
                enabled: t.enabled.unwrap_or(false),
                p: [t.p0, t.p1, t.p2],
                knots: t
                    .knots
                    .map(|k| k.into_iter().map(|[x, y]| (x, y)).collect()),
                out_lte_in: t.out_lte_in.as_deref() == Some("true"),
                out_gte_in: t.out_gte_in.as_deref() == Some("true"),
            },
        };

        let chroma_correction = match d.chroma_correction_parameter {
            None => None,
            Some(c) if !c.is_finite() => {
                return Err(invalid(
                    "chroma_correction_parameter must be a finite number".into(),
                ))
            }
            // libvmaf skips the correction for a zero parameter.
            Some(0.0) => None,
            Some(parameter) => {
                let only = |part: &str| -> Result<usize, ModelError> {
                    let mut hits = d
                        .feature_names
                        .iter()
                        .enumerate()
                        .filter(|(_, name)| name.contains(part));
                    match (hits.next(), hits.next()) {
                        (Some((i, _)), None) => Ok(i),
                        _ => Err(invalid(format!(
                            "chroma_correction_parameter needs exactly one feature whose name \
                             contains '{part}'"
                        ))),
                    }
                };
                Some(ChromaCorrection {
                    parameter,
                    guiding: only("adm3")?,
                    guided: only("speed_chroma")?,
                })
            }
        };

        let svm = parse_libsvm(&d.model, n).map_err(invalid)?;
        let all_finite = feature_norm
            .iter()
            .all(|(a, b)| a.is_finite() && b.is_finite())
            && out_norm.0.is_finite()
            && out_norm.1.is_finite();
        if !all_finite {
            return Err(invalid("slopes and intercepts must be finite".into()));
        }
        Ok(Self {
            origin: origin.to_owned(),
            features,
            options,
            linear_rescale,
            feature_norm,
            out_norm,
            clip,
            transform,
            chroma_correction,
            gamma: svm.gamma,
            rho: svm.rho,
            sv: svm.sv,
            sv_coef: svm.coef,
        })
    }

    /// The feature instances the model reads, each configured with the model's options for
    /// it; `chroma`: the frames have chroma planes. One per distinct feature, in model order.
    ///
    /// Errors: the text of an option a feature refuses (not for a loaded model, whose
    /// options were checked at load).
    pub fn instances(&self, chroma: bool) -> Result<Vec<Arc<dyn Instance>>, String> {
        let mut out: Vec<Arc<dyn Instance>> = Vec::new();
        for input in &self.features {
            if out
                .iter()
                .any(|i| i.feature().name() == input.feature.name())
            {
                continue;
            }
            out.push(
                input
                    .feature
                    .configure(&options_for(&self.options, input.feature), chroma)?,
            );
        }
        Ok(out)
    }

    /// Sets the option `option` of the model's feature `feature` (libvmaf's
    /// `vmaf_model_feature_overload`, the `model` property's `FEATURE.OPTION=VALUE`): `value`
    /// is read as `true`/`false`, a number, or else text.
    ///
    /// Errors: [`ModelError::Invalid`] when `feature` is not a feature the model reads, the
    /// feature has no such option, or refuses the value.
    pub fn overload(&mut self, feature: &str, option: &str, value: &str) -> Result<(), ModelError> {
        let invalid = |reason: String| ModelError::Invalid {
            origin: self.origin.clone(),
            reason,
        };
        let Some(f) = self
            .features
            .iter()
            .map(|i| i.feature)
            .find(|f| f.name() == feature)
        else {
            let read: Vec<_> = self.features.iter().map(|i| i.feature.name()).collect();
            return Err(invalid(format!(
                "'{feature}.{option}': the model reads no feature '{feature}' (it reads: {})",
                read.join(", ")
            )));
        };
        if !f.accepts(option) {
            return Err(invalid(format!(
                "'{feature}.{option}': '{option}' is not an option of {feature}"
            )));
        }
        let v = match value {
            "true" => OptionValue::Bool(true),
            "false" => OptionValue::Bool(false),
            _ => match value.parse::<f64>() {
                Ok(x) if x.is_finite() => OptionValue::Number(x),
                _ => OptionValue::Text(value.to_owned()),
            },
        };
        let mut options = self.options.clone();
        options.set(option, v);
        f.configure(&options_for(&options, f), true)
            .map_err(|e| invalid(format!("'{feature}.{option}={value}': {e}")))?;
        self.options = options;
        Ok(())
    }

    /// The number the model sets for option `key` (e.g. `vif_enhn_gain_limit`), if any.
    pub fn option(&self, key: &str) -> Option<f64> {
        match self.options.0.get(key) {
            Some(OptionValue::Number(v)) => Some(*v),
            _ => None,
        }
    }

    /// Whether `other` reads the same features (same outputs, same options), as the members
    /// of a bootstrap collection must.
    pub fn reads_same(&self, other: &Model) -> bool {
        self.options == other.options
            && self.features.len() == other.features.len()
            && self
                .features
                .iter()
                .zip(&other.features)
                .all(|(a, b)| a.feature.name() == b.feature.name() && a.output == b.output)
    }

    /// Number of support vectors.
    pub fn support_vectors(&self) -> usize {
        self.sv_coef.len()
    }

    /// Predicts the VMAF score from raw feature values given in [`Model::features`] order.
    ///
    /// Normalises each feature (`slope * x + intercept`), evaluates
    /// `sum_i coef_i * exp(-gamma * |x - sv_i|^2) - rho` in support-vector order as libsvm does,
    /// denormalises (`(y - intercept) / slope`), applies the transform when enabled and clips.
    /// Output in the model's clip range (0..100 for the built-in models).
    pub fn predict(&self, raw: &[f64]) -> f64 {
        self.transform_and_clip(self.predict_raw(raw))
    }

    /// [`Model::predict`] without the transform and the clip: the denormalised SVM output
    /// (what libvmaf's bootstrap statistics are computed on, `VMAF_MODEL_FLAG_DISABLE_CLIP |
    /// VMAF_MODEL_FLAG_DISABLE_TRANSFORM`). Unbounded.
    pub fn predict_raw(&self, raw: &[f64]) -> f64 {
        let n = self.features.len();
        let mut x = [0.0f64; 64];
        for (i, (&v, &(slope, intercept))) in raw.iter().zip(&self.feature_norm).take(n).enumerate()
        {
            x[i] = if self.linear_rescale {
                slope * v + intercept
            } else {
                v
            };
        }
        if let Some(c) = self.chroma_correction {
            self.correct_chroma(c, &mut x[..n]);
        }
        let x = &x[..n];
        let mut sum = 0.0f64;
        for (coef, sv) in self.sv_coef.iter().zip(self.sv.chunks_exact(n)) {
            let mut d2 = 0.0f64;
            for (a, b) in x.iter().zip(sv) {
                let d = a - b;
                d2 += d * d;
            }
            sum += coef * (-self.gamma * d2).exp();
        }
        sum -= self.rho;
        if self.linear_rescale {
            (sum - self.out_norm.1) / self.out_norm.0
        } else {
            sum
        }
    }

    /// [`ChromaCorrection`] on the normalised features `x`.
    fn correct_chroma(&self, c: ChromaCorrection, x: &mut [f64]) {
        let norm = self.linear_rescale.then_some(&self.feature_norm[..]);
        correct_chroma(c, norm, x);
    }

    /// The score transform (when [`ScoreTransform::enabled`]) then the clip, as libvmaf's
    /// `transform()` and `clip()` in libvmaf/src/predict.c.
    pub fn transform_and_clip(&self, y: f64) -> f64 {
        let mut y = self.apply_transform(y);
        if let Some((lo, hi)) = self.clip {
            y = if y < lo { lo } else { y };
            y = if y > hi { hi } else { y };
        }
        y
    }

    fn apply_transform(&self, y_in: f64) -> f64 {
        let t = &self.transform;
        if !t.enabled {
            return y_in;
        }
        let mut y = if t.p.iter().any(Option::is_some) {
            let mut out = 0.0;
            if let Some(p0) = t.p[0] {
                out += p0;
            }
            if let Some(p1) = t.p[1] {
                out += p1 * y_in;
            }
            if let Some(p2) = t.p[2] {
                out += p2 * y_in * y_in;
            }
            out
        } else {
            y_in
        };
        if let Some(knots) = &t.knots {
            y = piecewise_linear(y, knots);
        }
        if t.out_lte_in && y > y_in {
            y = y_in;
        }
        if t.out_gte_in && y < y_in {
            y = y_in;
        }
        y
    }
}

/// Largest number of bootstrap members read from a model collection.
pub const MAX_BOOTSTRAP_MEMBERS: usize = 256;

/// A libvmaf model collection: an object without `model_dict` whose key `"0"` holds a model.
fn is_collection(value: &serde_json::Value) -> bool {
    value.get("model_dict").is_none() && value.get("0").is_some_and(|v| v.is_object())
}

/// The origin name and JSON text of a built-in model name or a model file path.
fn model_text(spec: &str) -> Result<(String, String), ModelError> {
    if let Some(text) = builtin_text(spec) {
        return Ok((spec.to_owned(), text));
    }
    let text = read_model_file(Path::new(spec)).map_err(|source| ModelError::Unreadable {
        path: spec.to_owned(),
        source,
        builtins: builtin_names(),
    })?;
    Ok((spec.to_owned(), text))
}

/// Reads a model file: a regular file (checked before opening, so a FIFO cannot block) of at
/// most [`MAX_MODEL_FILE_BYTES`], as UTF-8 text.
fn read_model_file(path: &Path) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    let not_regular = || Error::new(ErrorKind::InvalidInput, "not a regular file");
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    let mut text = String::new();
    file.take(MAX_MODEL_FILE_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_MODEL_FILE_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("larger than {MAX_MODEL_FILE_BYTES} bytes"),
        ));
    }
    Ok(text)
}

/// Comma-separated built-in model names, for messages.
pub fn builtin_names() -> String {
    BUILTIN_MODELS
        .iter()
        .chain(FLOAT_BUILTIN_MODELS)
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::{correct_chroma, piecewise_linear, ChromaCorrection};

    #[test]
    fn chroma_correction_replaces_a_zero_speed_chroma() {
        // vmaf_v1.0.16_3d0h's (slope, intercept) of adm3 and speed_chroma_uv, its parameter.
        let norm = [
            (0.07265168094288038, -0.00016348141788834398),
            (4.044462665497729, -3.0226057825839794),
        ];
        let c = ChromaCorrection {
            parameter: 120.0,
            guiding: 1,
            guided: 0,
        };
        let adm3 = 0.95;
        let mut x = [norm[0].1, norm[1].0 * adm3 + norm[1].1];
        correct_chroma(c, Some(&norm), &mut x);
        let want = norm[0].0 * (120.0 * (1.0 - adm3)) + norm[0].1;
        assert!((x[0] - want).abs() < 1e-9, "{} vs {want}", x[0]);
        // A non-zero chroma feature is kept.
        let mut y = [norm[0].0 * 2.5 + norm[0].1, x[1]];
        let before = y;
        correct_chroma(c, Some(&norm), &mut y);
        assert_eq!(y, before);
    }

    #[test]
    fn piecewise_extrapolates_end_segments() {
        let k = [(0.0, 0.0), (50.0, 60.0), (100.0, 100.0)];
        assert_eq!(piecewise_linear(25.0, &k), 30.0);
        assert_eq!(piecewise_linear(75.0, &k), 80.0);
        assert_eq!(piecewise_linear(110.0, &k), 108.0);
    }
}
