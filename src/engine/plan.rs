//! What a scorer computes: the models and extra metrics asked for, the feature instances they
//! need (asked of the registry), the metric names in log order, and one frame's scores.

use std::sync::Arc;

use crate::engine::model::Model;
use crate::engine::model_set::NamedModel;
use crate::features::{FeatureSet, Instance, Layout, LayoutError};

/// Why a [`ScorePlan`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A model's options do not configure its feature.
    #[error("model '{model}': {reason}")]
    Options {
        /// The model's name.
        model: String,
        /// What is wrong.
        reason: String,
    },
    /// Too many values or option sets.
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// What a scorer computes and reports: the models (the first one's score is `vmaf`), the
/// extra metrics of the `features` property, and the feature instances both need, asked of
/// the registry ([`crate::features::REGISTRY`]).
#[derive(Debug, Clone)]
pub struct ScorePlan {
    /// The `model` list, loaded; at least one.
    pub models: Arc<[NamedModel]>,
    /// Extra metrics (`features` property).
    pub features: FeatureSet,
    /// The frames have chroma planes (`psnr_cb` / `psnr_cr` are reported, SSIMULACRA2 reads
    /// colour).
    pub chroma: bool,
    layout: Arc<Layout>,
    /// Per model: the index in [`ScorePlan::names`] of each of its features, in model order.
    pub(crate) model_inputs: Vec<Vec<usize>>,
    /// Per instance of the layout: how many late outputs it has (they follow the raw values
    /// in `names`, instance after instance).
    pub(crate) late: Vec<usize>,
    names: Vec<String>,
}

impl ScorePlan {
    /// The instances the models (each with its own options) and `features` need, deduplicated
    /// by feature and options, in log order; `chroma`: the frames have chroma planes.
    ///
    /// Errors: [`PlanError`] for options a feature refuses, or too many option sets / values.
    pub fn new(
        models: Arc<[NamedModel]>,
        features: FeatureSet,
        chroma: bool,
    ) -> Result<Self, PlanError> {
        let mut instances: Vec<Arc<dyn Instance>> = Vec::new();
        // An instance already there with the same feature and options computes it; one that
        // can absorb it computes both (Instance::absorb); else it is added.
        let mut add = |inst: Arc<dyn Instance>| -> String {
            let key = inst.key();
            let known = instances
                .iter()
                .any(|i| i.feature().name() == inst.feature().name() && i.key() == key);
            if !known {
                match instances
                    .iter_mut()
                    .find_map(|i| i.absorb(&*inst).map(|m| (i, m)))
                {
                    Some((slot, merged)) => *slot = merged,
                    None => instances.push(inst),
                }
            }
            key
        };
        // Per model: (unsuffixed output, key) of each input.
        let mut resolved: Vec<Vec<String>> = Vec::with_capacity(models.len());
        for m in models.iter() {
            let by_feature = m
                .model
                .instances(chroma)
                .map_err(|reason| PlanError::Options {
                    model: m.name.clone(),
                    reason,
                })?;
            let mut names = Vec::with_capacity(m.model.features.len());
            for input in &m.model.features {
                let key = by_feature
                    .iter()
                    .find(|i| i.feature().name() == input.feature.name())
                    .map(|i| add(i.clone()))
                    .unwrap_or_default();
                names.push(format!("{}{key}", input.output));
            }
            resolved.push(names);
        }
        for f in features.iter() {
            let inst = f
                .configure(&crate::features::Options::new(), chroma)
                .map_err(|reason| PlanError::Options {
                    model: f.name().to_owned(),
                    reason,
                })?;
            add(inst);
        }
        let layout = Layout::new(instances)?;
        let mut names: Vec<String> = layout.names().to_vec();
        let mut late = Vec::with_capacity(layout.instances().len());
        for inst in layout.instances() {
            let outs = inst.late_outputs();
            late.push(outs.len());
            names.extend(outs);
        }
        let model_inputs = resolved
            .iter()
            .map(|inputs| {
                inputs
                    .iter()
                    .map(|n| names.iter().position(|x| x == n).unwrap_or(usize::MAX))
                    .collect()
            })
            .collect();
        for m in models.iter().skip(1).chain(models.first()) {
            names.extend(m.score_names());
        }
        Ok(Self {
            models,
            features,
            chroma,
            layout,
            model_inputs,
            late,
            names,
        })
    }

    /// One plain model, named `vmaf`, no extra metrics, no chroma.
    ///
    /// Errors: as [`ScorePlan::new`] (only for a model with options its features refuse).
    pub fn single(model: &Model) -> Result<Self, PlanError> {
        Self::for_model(model, FeatureSet::default(), false)
    }

    /// One plain model, named `vmaf`, with the extra metrics of `features`; `chroma` as in
    /// [`ScorePlan::new`].
    ///
    /// Errors: as [`ScorePlan::new`].
    pub fn for_model(model: &Model, features: FeatureSet, chroma: bool) -> Result<Self, PlanError> {
        let models: Arc<[NamedModel]> = vec![NamedModel {
            name: "vmaf".into(),
            model: model.clone(),
            bootstrap: Vec::new(),
        }]
        .into();
        Self::new(models, features, chroma)
    }

    /// The feature instances, in log order, and where their values lie in a frame's
    /// [`RawFeatures`]: what a backend is made for.
    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// Metric names in log order: the instances' outputs in [`Layout`] order (PSNR; ADM,
    /// motion SAD and VIF of the first option set; ADM and VIF of further sets, with libvmaf's
    /// option suffixes such as `_egl_1`; `float_ssim`, `float_ms_ssim`, `ssimulacra2`), their
    /// late outputs (`integer_motion2`, `integer_motion3`), the scores of models 2.. (see
    /// [`NamedModel::score_names`]), then the first model's, ending with `vmaf`.
    pub fn names(&self) -> Vec<String> {
        self.names.clone()
    }
}

/// One frame's scores: `values[i]` is the metric `names[i]` (libvmaf names, `vmaf` last;
/// see [`ScorePlan::names`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FrameScores {
    /// Frame index from the start of the stream (libvmaf's `frameNum`).
    pub index: u64,
    /// Metric names, shared by all frames of a stream.
    pub names: Arc<[String]>,
    /// Values, same order as `names`.
    pub values: Vec<f64>,
}

impl FrameScores {
    /// The VMAF score, in the model's clip range (0..100 for the built-in models).
    pub fn vmaf(&self) -> f64 {
        self.values.last().copied().unwrap_or(f64::NAN)
    }

    /// The value of metric `name`, if this stream has it.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| self.values[i])
    }

    /// `(name, value)` pairs in log order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.names
            .iter()
            .map(String::as_str)
            .zip(self.values.iter().copied())
    }
}
