//! The `model` list: several VMAF models scored on the same features in one pass, each
//! with libvmaf's options (`enable_transform`, `name`), and bootstrap models with their
//! confidence interval.
//!
//! Sources: Netflix/vmaf v3.2.0, libvmaf/tools/cli_parse.c (the `--model` option syntax:
//! `version=`, `path=`, `name=`, `enable_transform`), libvmaf/src/read_json_model.c
//! (`VMAF_MODEL_FLAG_ENABLE_TRANSFORM`, model collections and their member names
//! `<name>_0001`, ...) and libvmaf/src/predict.c (`vmaf_bootstrap_predict_score_at_index`:
//! bagging score, standard deviation and 95% interval).

use std::path::Path;

use crate::engine::model::{Model, ModelError};

/// Largest number of entries in the `model` list.
pub const MAX_MODELS: usize = 8;

/// One entry of the `model` list, before loading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// Built-in model name or path of a libvmaf JSON model (or model collection).
    pub source: String,
    /// Name of its score in messages and logs (`name=`); `None`: the default (see
    /// [`NamedModel::load_list`]).
    pub name: Option<String>,
    /// libvmaf's `enable_transform`: apply the model's `score_transform` even when the
    /// model file does not enable it (`vmaf_v0.6.1` with it is libvmaf's "phone" model).
    pub enable_transform: bool,
    /// Feature options set on the model (`FEATURE.OPTION=VALUE`, libvmaf's feature
    /// overload): `(feature, option, value)`, e.g. `("cambi", "enc_width", "1280")`.
    pub overrides: Vec<(String, String, String)>,
}

impl ModelSpec {
    /// Parses the `model` property: entries separated by `,`; each entry is
    /// `SOURCE[:OPTION]...` where SOURCE is a built-in name or a path, and OPTION is
    /// `enable_transform` (or `enable_transform=true|false`), `name=NAME`, as in libvmaf's
    /// `--model` `version=NAME` / `path=PATH` in place of SOURCE, or a feature option of the
    /// model, `FEATURE.OPTION=VALUE` (libvmaf's per-model feature overload, e.g.
    /// `cambi.enc_width=1280`). Spaces around entries and options are ignored. Example:
    /// `vmaf_v0.6.1,vmaf_v0.6.1:enable_transform:name=vmaf_phone,vmaf_b_v0.6.3:name=vmaf_b`,
    /// `vmaf_v1.0.16_3d0h:cambi.enc_width=1280:cambi.enc_height=720`.
    ///
    /// A list without any entry (`""`, `" , "`) is one entry whose source is the text itself
    /// (loading it then fails naming it).
    ///
    /// Errors: [`ModelError::Invalid`] for more than [`MAX_MODELS`] entries,
    /// an entry without a source, an unknown option or a bad value.
    pub fn parse_list(list: &str) -> Result<Vec<ModelSpec>, ModelError> {
        let invalid = |reason: String| ModelError::Invalid {
            origin: list.to_owned(),
            reason,
        };
        let mut specs = Vec::new();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let mut source = None;
            let mut name = None;
            let mut enable_transform = false;
            let mut overrides = Vec::new();
            for (i, part) in entry.split(':').map(str::trim).enumerate() {
                let (key, value) = match part.split_once('=') {
                    Some((k, v)) => (k.trim(), Some(v.trim())),
                    None => (part, None),
                };
                match (key, value) {
                    ("version" | "path", Some(v)) if !v.is_empty() => source = Some(v.to_owned()),
                    ("name", Some(v)) if !v.is_empty() => name = Some(v.to_owned()),
                    ("enable_transform", None | Some("true" | "1")) => enable_transform = true,
                    ("enable_transform", Some("false" | "0")) => enable_transform = false,
                    (k, Some(v)) if k.contains('.') && !v.is_empty() => {
                        let (feature, option) = k.split_once('.').unwrap_or((k, ""));
                        if feature.is_empty() || option.is_empty() {
                            return Err(invalid(format!(
                                "'{part}' in model entry '{entry}': a feature option is \
                                 FEATURE.OPTION=VALUE"
                            )));
                        }
                        overrides.push((feature.to_owned(), option.to_owned(), v.to_owned()));
                    }
                    (_, None) if i == 0 && !part.is_empty() => source = Some(part.to_owned()),
                    _ => {
                        return Err(invalid(format!(
                            "'{part}' in model entry '{entry}' is not an option \
                             (enable_transform, name=NAME, version=NAME, path=PATH, \
                             FEATURE.OPTION=VALUE)"
                        )))
                    }
                }
            }
            let source =
                source.ok_or_else(|| invalid(format!("model entry '{entry}' names no model")))?;
            specs.push(ModelSpec {
                source,
                name,
                enable_transform,
                overrides,
            });
        }
        if specs.is_empty() {
            // Nothing but separators or spaces: taken as one path, so that loading names it
            // (`cannot read model file ''`), as for a single model before model lists.
            specs.push(ModelSpec {
                source: list.to_owned(),
                name: None,
                enable_transform: false,
                overrides: Vec::new(),
            });
        }
        if specs.len() > MAX_MODELS {
            return Err(invalid(format!(
                "{} models; at most {MAX_MODELS} are scored at once",
                specs.len()
            )));
        }
        Ok(specs)
    }
}

/// The bootstrap statistics of one frame (libvmaf's `VmafModelCollectionScore.bootstrap`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapScore {
    /// `<name>_bagging`: mean of the members' untransformed, unclipped scores, then
    /// transformed (when enabled) and clipped with the first member's settings.
    pub bagging: f64,
    /// `<name>_stddev`: population standard deviation of those scores, times the slope of
    /// the transform + clip at the mean (central difference over +-0.01).
    pub stddev: f64,
    /// `<name>_ci_p95_lo`: 2.5th percentile (linear interpolation between sorted scores,
    /// `p = 2.5 * (n - 1) / 100`), transformed and clipped.
    pub ci_p95_lo: f64,
    /// `<name>_ci_p95_hi`: 97.5th percentile, likewise.
    pub ci_p95_hi: f64,
}

/// A loaded `model` list entry: its score's name, the model, and for a bootstrap model
/// collection its members.
#[derive(Debug, Clone)]
pub struct NamedModel {
    /// Name of the model's score (`vmaf` for the first entry).
    pub name: String,
    /// The model (a collection's model `"0"`).
    pub model: Model,
    /// Bootstrap members (`"1"`..`"N"` of a collection), empty for a plain model.
    pub bootstrap: Vec<Model>,
}

impl NamedModel {
    /// Loads one entry, naming its score `name`; `enable_transform` turns every model's
    /// transform on (as libvmaf's flag does, for models whose file has a `score_transform`).
    ///
    /// Errors: as [`Model::load_collection`].
    pub fn load(spec: &ModelSpec, name: String) -> Result<Self, ModelError> {
        let (mut model, mut bootstrap) = Model::load_collection(&spec.source)?;
        if let Some(m) = bootstrap.iter().find(|m| !m.reads_same(&model)) {
            return Err(ModelError::Invalid {
                origin: m.origin.clone(),
                reason: "a bootstrap member must use the features and options of model \"0\""
                    .into(),
            });
        }
        for (feature, option, value) in &spec.overrides {
            for m in std::iter::once(&mut model).chain(bootstrap.iter_mut()) {
                m.overload(feature, option, value)?;
            }
        }
        if spec.enable_transform {
            for m in std::iter::once(&mut model).chain(bootstrap.iter_mut()) {
                m.transform.enabled = true;
            }
        }
        Ok(Self {
            name,
            model,
            bootstrap,
        })
    }

    /// Parses and loads the `model` property (see [`ModelSpec::parse_list`]). The first
    /// entry's score is always named `vmaf` (it drives the frame message's `vmaf`, windows
    /// and alerts; a `name=` on it is refused); the others take their `name=`, else the
    /// built-in name or the file stem (`vmaf_v0.6.1neg`, `my_model` for
    /// `/models/my_model.json`).
    ///
    /// Errors: as [`ModelSpec::parse_list`] and [`NamedModel::load`]; [`ModelError::Invalid`]
    /// when two entries get the same name, a name collides with another metric's
    /// (`<name>_bagging`, ...), or the first entry has a `name=`.
    pub fn load_list(list: &str) -> Result<Vec<NamedModel>, ModelError> {
        let specs = ModelSpec::parse_list(list)?;
        let invalid = |reason: String| ModelError::Invalid {
            origin: list.to_owned(),
            reason,
        };
        let mut out: Vec<NamedModel> = Vec::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            let name = match (i, &spec.name) {
                (0, None) => "vmaf".to_owned(),
                (0, Some(n)) => {
                    return Err(invalid(format!(
                        "the first model's score is always named 'vmaf'; name=\"{n}\" \
                         can only be given to the models after it"
                    )))
                }
                (_, Some(n)) => n.clone(),
                (_, None) => default_name(&spec.source),
            };
            let loaded = Self::load(spec, name)?;
            let clash = out.iter().any(|m| {
                m.score_names()
                    .iter()
                    .any(|n| loaded.score_names().contains(n))
            });
            if clash {
                return Err(invalid(format!(
                    "two models would both write '{}': give one a different name=",
                    loaded.name
                )));
            }
            out.push(loaded);
        }
        Ok(out)
    }

    /// Names of this entry's per-frame values: for a bootstrap model `<name>_0001` ..
    /// `<name>_NNNN` (each member's own score), `<name>_bagging`, `<name>_stddev`,
    /// `<name>_ci_p95_lo`, `<name>_ci_p95_hi`, then `<name>` (model "0"'s score); for a
    /// plain model just `<name>`.
    pub fn score_names(&self) -> Vec<String> {
        let n = &self.name;
        let mut names: Vec<String> = (1..=self.bootstrap.len())
            .map(|i| format!("{n}_{i:04}"))
            .collect();
        if !self.bootstrap.is_empty() {
            for suffix in ["bagging", "stddev", "ci_p95_lo", "ci_p95_hi"] {
                names.push(format!("{n}_{suffix}"));
            }
        }
        names.push(n.clone());
        names
    }

    /// The entry's per-frame values in [`NamedModel::score_names`] order, from raw feature
    /// values in the model's feature order (all members of a collection share it).
    pub fn predict(&self, features: &[f64]) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.bootstrap.len() + 5);
        out.extend(self.bootstrap.iter().map(|m| m.predict(features)));
        if let Some(b) = self.bootstrap_score(features) {
            out.extend([b.bagging, b.stddev, b.ci_p95_lo, b.ci_p95_hi]);
        }
        out.push(self.model.predict(features));
        out
    }

    /// The bootstrap statistics of one frame; `None` for a plain model.
    pub fn bootstrap_score(&self, features: &[f64]) -> Option<BootstrapScore> {
        let first = self.bootstrap.first()?;
        let mut scores: Vec<f64> = self
            .bootstrap
            .iter()
            .map(|m| m.predict_raw(features))
            .collect();
        Some(bootstrap_statistics(first, &mut scores))
    }
}

/// libvmaf's bootstrap statistics of the members' raw scores (`scores` is sorted in place),
/// transformed and clipped with `first`'s settings.
fn bootstrap_statistics(first: &Model, scores: &mut [f64]) -> BootstrapScore {
    let n = scores.len() as f64;
    let mean = scores.iter().sum::<f64>() / n;
    let ssd: f64 = scores.iter().map(|s| (s - mean).powi(2)).sum();
    let stddev = (ssd / n).sqrt();
    scores.sort_by(f64::total_cmp);
    let delta = 0.01;
    let slope = (first.transform_and_clip(mean + delta) - first.transform_and_clip(mean - delta))
        / (2.0 * delta);
    BootstrapScore {
        bagging: first.transform_and_clip(mean),
        stddev: stddev * slope,
        ci_p95_lo: first.transform_and_clip(percentile(scores, 2.5)),
        ci_p95_hi: first.transform_and_clip(percentile(scores, 97.5)),
    }
}

pub use crate::engine::pool::percentile;

/// Default score name of a non-first entry: the built-in name, or the file stem of a path.
fn default_name(source: &str) -> String {
    if crate::engine::model::is_builtin(source) {
        return source.to_owned();
    }
    Path::new(source)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or(source)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_options_of_a_model() {
        let l = ModelSpec::parse_list(
            "vmaf_v0.6.1:motion.motion_max_val=18:motion.motion_five_frame_window=true:name=x",
        )
        .unwrap();
        assert_eq!(
            l[0].overrides,
            vec![
                ("motion".into(), "motion_max_val".into(), "18".into()),
                (
                    "motion".into(),
                    "motion_five_frame_window".into(),
                    "true".into()
                ),
            ]
        );
        let m = NamedModel::load(&l[0], "x".into()).unwrap();
        assert_eq!(m.model.option("motion_max_val"), Some(18.0));
        // A feature the model does not read, an option its feature does not have, a bad value.
        for bad in [
            "vmaf_v0.6.1:psnr.x=1",
            "vmaf_v0.6.1:motion.vif_enhn_gain_limit=1",
            "vmaf_v0.6.1:motion.motion_max_val=-3",
            "vmaf_v0.6.1:.x=1",
        ] {
            let spec = ModelSpec::parse_list(bad).and_then(|l| NamedModel::load(&l[0], "x".into()));
            assert!(spec.is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn parses_libvmaf_style_entries() {
        let l = ModelSpec::parse_list(
            "vmaf_v0.6.1, version=vmaf_v0.6.1:enable_transform:name=phone,/a/b.json",
        )
        .unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!(l[1].source, "vmaf_v0.6.1");
        assert!(l[1].enable_transform);
        assert_eq!(l[1].name.as_deref(), Some("phone"));
        assert_eq!(default_name(&l[2].source), "b");
        assert!(ModelSpec::parse_list("vmaf_v0.6.1:bogus").is_err());
        assert_eq!(ModelSpec::parse_list("").unwrap()[0].source, "");
    }

    #[test]
    fn percentile_interpolates() {
        let s = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&s, 50.0), 3.0);
        assert!((percentile(&s, 2.5) - 1.1).abs() < 1e-12);
    }
}
