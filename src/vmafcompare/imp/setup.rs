//! Setting up at state changes: loading the models and the features at NULL->READY (into
//! [`Prepared`]), opening the GPU ([`CudaSharing`] picks it and shares its context), and the
//! CPU pool.

use std::sync::Arc;

use gst::prelude::*;
use gst::subclass::prelude::*;

use super::prepared::Prepared;
use super::util::{lock, CAT};
use super::VmafCompare;
use crate::cpu::{self, CpuPool};
use crate::cuda::GpuDevice;
use crate::engine::{FeatureSet, NamedModel, ScorePlan};
use crate::vmafcompare::VmafBackend;

/// Scoring threads for the `threads` property's value: 0 means one per core.
pub(super) fn pool_threads(threads: u32) -> usize {
    match threads as usize {
        0 => cpu::threads_per_core(),
        n => n,
    }
}

impl VmafCompare {
    /// NULL->READY: load the model and choose the backend.
    pub(super) fn prepare(&self) -> Result<(), gst::StateChangeError> {
        let settings = lock(&self.settings).clone();
        let features = match FeatureSet::parse(&settings.features) {
            Ok(f) => f,
            Err(e) => {
                gst::element_imp_error!(
                    self,
                    gst::LibraryError::Settings,
                    ("Invalid features: {}", e)
                );
                return Err(gst::StateChangeError);
            }
        };
        let models: Arc<[NamedModel]> = match NamedModel::load_list(&settings.model) {
            Ok(m) => m.into(),
            Err(e) => {
                gst::element_imp_error!(
                    self,
                    gst::LibraryError::Settings,
                    ("Cannot load VMAF model: {}", e)
                );
                return Err(gst::StateChangeError);
            }
        };
        for m in models.iter() {
            gst::debug!(
                CAT,
                imp = self,
                "model {} loaded as '{}': {} features, {} support vectors, {} bootstrap members, transform {}",
                m.model.origin,
                m.name,
                m.model.features.len(),
                m.model.support_vectors(),
                m.bootstrap.len(),
                if m.model.transform.enabled { "on" } else { "off" }
            );
        }
        if let Err(e) = ScorePlan::new(models.clone(), features.clone(), true) {
            gst::element_imp_error!(
                self,
                gst::LibraryError::Settings,
                ("Cannot score these models and features together: {}", e)
            );
            return Err(gst::StateChangeError);
        }
        let (gpu, claim) = match settings.backend {
            VmafBackend::Cpu => (None, None),
            backend => match self
                .cuda
                .open_gpu(self.obj().upcast_ref(), settings.device_id)
            {
                Ok((dev, claim)) => {
                    gst::info!(
                        CAT,
                        imp = self,
                        "CUDA device {}: {}",
                        dev.ordinal(),
                        dev.name()
                    );
                    (Some(Arc::new(dev)), Some(claim))
                }
                Err(e) if backend == VmafBackend::Cuda => {
                    gst::element_imp_error!(
                        self,
                        gst::LibraryError::Init,
                        ("backend=cuda: no usable GPU: {}", e),
                        ["Use backend=cpu, or backend=auto to fall back to the CPU."]
                    );
                    return Err(gst::StateChangeError);
                }
                Err(e) => {
                    gst::element_imp_warning!(
                        self,
                        gst::LibraryError::Init,
                        ("No usable GPU ({}): scoring on the CPU", e),
                        ["Set backend=cpu to silence this warning."]
                    );
                    (None, None)
                }
            },
        };
        if let Some(dev) = gpu.as_deref() {
            // With device-id=-1 the pipeline's context was looked for already.
            self.cuda
                .share(self.obj().upcast_ref(), dev, settings.device_id < 0);
        }
        let cpu_pool = match settings.backend {
            VmafBackend::Cuda => None,
            _ => match self.cpu_pool(settings.threads) {
                Ok(pool) => pool,
                Err(e) => {
                    gst::element_imp_error!(
                        self,
                        gst::ResourceError::Failed,
                        ("{}", e),
                        ["Set a smaller threads value."]
                    );
                    return Err(gst::StateChangeError);
                }
            },
        };
        *lock(&self.prepared) = Some(Prepared {
            models,
            features,
            gpu,
            _claim: claim,
            cpu_pool,
        });
        Ok(())
    }

    /// The CUDA ordinal of the device the element opened (`active-device-id`), -1 when none
    /// is open.
    pub(super) fn active_device_id(&self) -> i32 {
        lock(&self.prepared)
            .as_ref()
            .and_then(|p| p.gpu.as_ref())
            .map_or(-1, |g| i32::try_from(g.ordinal()).unwrap_or(i32::MAX))
    }

    /// What NULL->READY loaded (the models, the features, the GPU), once the scoring size
    /// `(w, h)` is checked against the metrics' minimum. Errors (posted): a size below the
    /// minimum, or nothing loaded.
    #[allow(clippy::type_complexity)]
    pub(super) fn loaded_for(
        &self,
        (w, h): (u32, u32),
    ) -> Result<(Arc<[NamedModel]>, FeatureSet, Option<Arc<GpuDevice>>), gst::FlowError> {
        if let Err(e) = self.check_min_size("the scoring size", (w, h)) {
            self.post_error_message(e);
            return Err(gst::FlowError::NotNegotiated);
        }
        lock(&self.prepared)
            .as_ref()
            .map(|p| (p.models.clone(), p.features.clone(), p.gpu.clone()))
            .ok_or_else(|| {
                gst::element_imp_error!(self, gst::CoreError::StateChange, ("no model loaded"));
                gst::FlowError::Error
            })
    }

    /// The CPU scoring pool for the `threads` property: `None` for one thread.
    ///
    /// Errors: the system refused a thread.
    pub(super) fn cpu_pool(&self, threads: u32) -> Result<Option<Arc<CpuPool>>, cpu::PoolError> {
        let n = pool_threads(threads);
        if n <= 1 {
            return Ok(None);
        }
        let pool = CpuPool::new(n)?;
        gst::debug!(CAT, imp = self, "{n} CPU scoring threads");
        Ok(Some(Arc::new(pool)))
    }

    /// READY->PAUSED: a `threads` value changed in READY takes effect (the pool of
    /// NULL->READY is replaced).
    pub(super) fn refresh_cpu_pool(&self) -> Result<(), gst::ErrorMessage> {
        let (threads, backend) = {
            let s = lock(&self.settings);
            (s.threads, s.backend)
        };
        let want = pool_threads(threads);
        let have = lock(&self.prepared)
            .as_ref()
            .map(|p| p.cpu_pool.as_ref().map_or(1, |p| p.threads()));
        if backend == VmafBackend::Cuda || have.is_none_or(|h| h == want) {
            return Ok(());
        }
        let pool = self
            .cpu_pool(threads)
            .map_err(|e| gst::error_msg!(gst::ResourceError::Failed, ["{}", e]))?;
        if let Some(p) = lock(&self.prepared).as_mut() {
            p.cpu_pool = pool;
        }
        Ok(())
    }
}
