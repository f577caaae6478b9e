//! What NULL->READY loads and READY->NULL drops ([`Prepared`]): the models, the features, the
//! GPU and the CPU pool, and the smallest frame they take.

use std::sync::Arc;

use crate::cpu::CpuPool;
use crate::cuda::{DeviceClaim, GpuDevice};
use crate::engine::{FeatureSet, NamedModel};

/// Loaded at NULL->READY, dropped at READY->NULL: the model and, for the CUDA backend, the
/// device with its context and kernel modules.
pub(super) struct Prepared {
    /// The `model` list (the first one's score is `vmaf`).
    pub(super) models: Arc<[NamedModel]>,
    /// The `features` property, parsed.
    pub(super) features: FeatureSet,
    pub(super) gpu: Option<Arc<GpuDevice>>,
    /// Counts this element on `gpu`'s device while it holds it (what `device-id=-1` compares).
    pub(super) _claim: Option<DeviceClaim>,
    /// The CPU backend's threads (`threads` property), `None` for one thread (scoring in the
    /// streaming or live scoring thread) and with `backend=cuda`; joined when dropped.
    pub(super) cpu_pool: Option<Arc<CpuPool>>,
}

/// The smallest (width, height) VMAF's filters take, and each extra feature's by name.
pub(super) type Minimums = ((usize, usize), Vec<(&'static str, (usize, usize))>);

impl Prepared {
    /// The smallest frame the models' features accept (VMAF's filters: the largest of their
    /// minimums), and each extra feature's own minimum.
    pub(super) fn minimums(&self) -> Minimums {
        let mut vmaf = (1, 1);
        for m in self.models.iter() {
            for i in m.model.instances(false).unwrap_or_default() {
                let (w, h) = i.min_size();
                vmaf = (vmaf.0.max(w), vmaf.1.max(h));
            }
        }
        let extras = self
            .features
            .iter()
            .filter_map(|f| {
                let i = f.configure(&crate::features::Options::new(), false).ok()?;
                Some((f.name(), i.min_size()))
            })
            .collect();
        (vmaf, extras)
    }
}
