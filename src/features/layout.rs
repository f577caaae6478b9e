//! [`Layout`]: the instances a stream computes, in log order, and where each one's values lie
//! in a frame's [`RawFeatures`].

use std::ops::Range;
use std::sync::Arc;

use super::api::{Geometry, Instance, Section};
use super::registry::registry_index;
use crate::video::frame::FeatureError;

/// Most values one frame's extractors produce (every instance's outputs together). The
/// built-in models with every metric of the registry on need about 50.
pub const RAW_CAPACITY: usize = 128;

/// Largest number of instances (option sets) of one feature in one layout (e.g.
/// `vmaf_v0.6.1` and `vmaf_v0.6.1neg`: two VIF and two ADM instances).
pub const MAX_OPTION_SETS: usize = 4;

/// Why a layout could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// More values per frame than [`RAW_CAPACITY`].
    #[error("the models and features together have {0} values per frame; at most {RAW_CAPACITY} are supported")]
    TooManyValues(usize),
    /// More option sets of one feature than [`MAX_OPTION_SETS`].
    #[error("the models use {count} option sets of '{feature}'; at most {MAX_OPTION_SETS} are supported")]
    TooManyOptionSets {
        /// The feature.
        feature: &'static str,
        /// How many option sets were asked for.
        count: usize,
    },
}

/// The feature instances of a stream, in log order (see [`Section`]), with each one's span of
/// a frame's raw values.
#[derive(Debug)]
pub struct Layout {
    instances: Vec<Arc<dyn Instance>>,
    spans: Vec<Range<usize>>,
    names: Vec<String>,
}

impl Layout {
    /// Orders `instances` (distinct, in any order; first-seen order decides which option set
    /// of a feature is its first) for the log: [`Section::Leading`], the first option set of
    /// each [`Section::Core`] feature, their further sets, [`Section::Trailing`]; registry
    /// order within each.
    ///
    /// Errors: [`LayoutError`] beyond [`RAW_CAPACITY`] values or [`MAX_OPTION_SETS`] sets.
    pub fn new(instances: Vec<Arc<dyn Instance>>) -> Result<Arc<Self>, LayoutError> {
        // (log group, registry index, option set) of each instance.
        type Keyed = ((u8, usize, usize), Arc<dyn Instance>);
        let mut keyed: Vec<Keyed> = Vec::new();
        let mut sets: Vec<(&'static str, usize)> = Vec::new();
        for inst in instances {
            let f = inst.feature();
            let set = match sets.iter_mut().find(|(n, _)| *n == f.name()) {
                Some((_, n)) => {
                    *n += 1;
                    *n - 1
                }
                None => {
                    sets.push((f.name(), 1));
                    0
                }
            };
            if set >= MAX_OPTION_SETS {
                return Err(LayoutError::TooManyOptionSets {
                    feature: f.name(),
                    count: set + 1,
                });
            }
            let group = match (f.section(), set) {
                (Section::Leading, _) => 0,
                (Section::Core, 0) => 1,
                (Section::Core, _) => 2,
                (Section::Trailing, _) => 3,
            };
            keyed.push(((group, registry_index(f), set), inst));
        }
        keyed.sort_by_key(|(k, _)| *k);
        let mut spans = Vec::with_capacity(keyed.len());
        let mut names = Vec::new();
        for (_, inst) in &keyed {
            let outputs = inst.outputs();
            spans.push(names.len()..names.len() + outputs.len());
            names.extend(outputs);
        }
        if names.len() > RAW_CAPACITY {
            return Err(LayoutError::TooManyValues(names.len()));
        }
        Ok(Arc::new(Self {
            instances: keyed.into_iter().map(|(_, i)| i).collect(),
            spans,
            names,
        }))
    }

    /// The instances, in log order.
    pub fn instances(&self) -> &[Arc<dyn Instance>] {
        &self.instances
    }

    /// Instance `i`'s span of a frame's raw values.
    pub fn span(&self, i: usize) -> Range<usize> {
        self.spans.get(i).cloned().unwrap_or(0..0)
    }

    /// Names of the raw values, in order ([`Instance::outputs`] of each instance).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The index of the raw value `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Whether an instance reads chroma.
    pub fn reads_chroma(&self) -> bool {
        self.instances.iter().any(|i| i.needs().chroma)
    }

    /// The first instance that reads the previous distorted frame ([`Needs::previous`]
    /// without [`Needs::reference_only`], `speed_temporal`), if any: the backends then keep
    /// that frame.
    ///
    /// [`Needs::previous`]: super::Needs::previous
    /// [`Needs::reference_only`]: super::Needs::reference_only
    pub fn previous_distorted_reader(&self) -> Option<&Arc<dyn Instance>> {
        self.instances.iter().find(|i| {
            let n = i.needs();
            n.previous && !n.reference_only
        })
    }

    /// Whether the feature named `name` is computed (by an instance of its own, or by one
    /// that absorbed it, see [`Instance::absorb`]).
    pub fn has(&self, name: &str) -> bool {
        self.instances
            .iter()
            .any(|i| i.feature().name() == name || i.outputs().iter().any(|o| o == name))
    }

    /// Checks `geometry` against every instance.
    ///
    /// Errors: the first instance's refusal.
    pub fn check(&self, geometry: &Geometry) -> Result<(), FeatureError> {
        FeatureError::check_new(
            "vmaf",
            geometry.triple(),
            (1, 1), // each instance checks its own minimum below
        )?;
        self.instances.iter().try_for_each(|i| i.check(geometry))
    }
}

/// One frame pair's raw values, as a backend computes them: the [`Layout`]'s values in its
/// order (a value of an instance that this frame did not compute, e.g. a subsampled frame's
/// VIF, is 0).
#[derive(Clone)]
pub struct RawFeatures {
    layout: Arc<Layout>,
    values: [f64; RAW_CAPACITY],
}

impl RawFeatures {
    /// All zero.
    pub fn new(layout: &Arc<Layout>) -> Self {
        Self {
            layout: layout.clone(),
            values: [0.0; RAW_CAPACITY],
        }
    }

    /// The layout.
    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// The values, in layout order.
    pub fn values(&self) -> &[f64] {
        &self.values[..self.layout.names.len()]
    }

    /// The values, writable.
    pub fn values_mut(&mut self) -> &mut [f64] {
        let n = self.layout.names.len();
        &mut self.values[..n]
    }

    /// Instance `i`'s values.
    pub fn of(&self, i: usize) -> &[f64] {
        self.values.get(self.layout.span(i)).unwrap_or(&[])
    }

    /// Instance `i`'s values, writable.
    pub fn of_mut(&mut self, i: usize) -> &mut [f64] {
        let span = self.layout.span(i);
        self.values.get_mut(span).unwrap_or(&mut [])
    }

    /// The value named `name` (e.g. `integer_vif_scale0`), if the layout has it.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.layout.index(name).map(|i| self.values[i])
    }

    /// Sets the value named `name`; `false` if the layout has no such value.
    pub fn set(&mut self, name: &str, v: f64) -> bool {
        match self.layout.index(name) {
            Some(i) => {
                self.values[i] = v;
                true
            }
            None => false,
        }
    }
}

impl std::fmt::Debug for RawFeatures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.layout.names.iter().zip(self.values()))
            .finish()
    }
}

impl PartialEq for RawFeatures {
    fn eq(&self, other: &Self) -> bool {
        self.layout.names == other.layout.names && self.values() == other.values()
    }
}
