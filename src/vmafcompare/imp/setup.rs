//! Setting up at state changes: loading the models and the features at NULL->READY (into
//! [`Prepared`]), the GPU and the pipeline's shared CUDA context (`gst.cuda.context`), and the
//! CPU pool.

use super::*;

/// Where the pipeline's CUDA context came from ([`VmafCompare::find_cuda_context`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ContextOrigin {
    /// Set on the element (by the application, or a bin answering a need-context message).
    Pipeline,
    /// A peer of a sink pad answered a context query.
    Upstream,
    /// The src pad's peer answered.
    Downstream,
}

impl std::fmt::Display for ContextOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ContextOrigin::Pipeline => "pipeline's",
            ContextOrigin::Upstream => "upstream",
            ContextOrigin::Downstream => "downstream",
        })
    }
}

/// Marks the `GstCudaContext`s a vmafcompare element offers to the pipeline (its own primary
/// context, wrapped) from those of the elements that make frames.
const OFFER_KEY: &str = "vmafcompare-offer";

/// Whether `ctx` is a context a vmafcompare element offered (see [`OFFER_KEY`]).
fn is_offer(ctx: &gst::Object) -> bool {
    // SAFETY: only the presence is read, never the value.
    unsafe { ctx.data::<bool>(OFFER_KEY).is_some() }
}

/// The device `element` is bound to, if it is a CUDA element that takes only one: its
/// readable `cuda-device-id` (a `guint` on nvcodec's decoders, a `gint` with -1 = any on its
/// filters such as `cudaupload`) or `vmafnvdec`'s `device-id`, with the property's name.
fn bound_device(element: &gst::Element) -> Option<(usize, &'static str)> {
    let property = if element.factory().is_some_and(|f| f.name() == "vmafnvdec") {
        "device-id"
    } else {
        "cuda-device-id"
    };
    let spec = element.find_property(property)?;
    if !spec.flags().contains(glib::ParamFlags::READABLE) {
        return None;
    }
    let v = element.property_value(property);
    let ordinal = v
        .get::<u32>()
        .ok()
        .map(|d| d as usize)
        .or_else(|| v.get::<i32>().ok().and_then(|d| usize::try_from(d).ok()))?;
    Some((ordinal, property))
}

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
            backend => match self.open_gpu(settings.device_id) {
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
            self.share_cuda_context(dev, settings.device_id < 0);
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

    /// NULL->READY with a GPU: finds the pipeline's `gst.cuda.context` of `dev`'s device
    /// ([`Self::find_cuda_context`]; skipped when `looked`, as `device-id=-1` did already) or,
    /// when there is none, offers one wrapping this element's primary context, so that CUDA
    /// decoders and `cudaupload` allocate in the context the kernels run in (zero copy).
    /// Without `libgstcuda-1.0` there is nothing to share and CUDA memory cannot reach us.
    pub(super) fn share_cuda_context(&self, dev: &GpuDevice, looked: bool) {
        let Some(lib) = gst_cuda::library() else {
            gst::debug!(
                CAT,
                imp = self,
                "GStreamer CUDA library not available ({}): system memory and DMABuf only",
                gst_cuda::load_error().unwrap_or("unknown reason")
            );
            return;
        };
        if !lib.load_driver() {
            gst::debug!(CAT, imp = self, "gst_cuda_load_library failed");
            return;
        }
        let device_id = dev.ordinal() as i32;
        if !looked {
            if let Some(origin) = self.find_cuda_context(device_id) {
                gst::debug!(CAT, imp = self, "CUDA context: the {origin} one");
                return;
            }
        }
        if lock(&self.cuda_context).is_some() {
            return;
        }
        let obj = self.obj();
        let ctx = dev.context();
        let Some(wrapped) = lib.wrap_context(ctx.cu_ctx() as usize, ctx.cu_device(), ctx.clone())
        else {
            gst::warning!(CAT, imp = self, "cannot wrap the CUDA context for sharing");
            return;
        };
        let Some(context) = lib.new_context(&wrapped) else {
            return;
        };
        // SAFETY: the key is ours and only ever holds a `bool` (read by `is_offer`).
        unsafe { wrapped.set_data(OFFER_KEY, true) };
        *lock(&self.cuda_context) = Some(wrapped);
        gst::debug!(
            CAT,
            imp = self,
            "sharing the element's CUDA context (device {device_id})"
        );
        let _ = obj.post_message(
            gst::message::HaveContext::builder(context)
                .src(&*obj)
                .build(),
        );
    }

    /// Looks for the pipeline's `gst.cuda.context` of device `device_id` (-1: any) and keeps
    /// it as the element's shared context: the one set on the element already, else a
    /// neighbour's answer to a context query (upstream first), else the application's or a
    /// bin's answer to a need-context message. Returns where it came from, `None` when there
    /// is none (or no `libgstcuda-1.0`).
    pub(super) fn find_cuda_context(&self, device_id: i32) -> Option<ContextOrigin> {
        let lib = gst_cuda::library().filter(|l| l.load_driver())?;
        if lock(&self.cuda_context).is_some() {
            return Some(ContextOrigin::Pipeline);
        }
        let obj = self.obj();
        let element = obj.upcast_ref::<gst::Element>().clone();
        let pads = obj
            .sink_pads()
            .into_iter()
            .map(|p| (p, ContextOrigin::Upstream))
            .chain([(
                obj.src_pad().upcast_ref::<gst::Pad>().clone(),
                ContextOrigin::Downstream,
            )]);
        for (pad, origin) in pads {
            let mut q = gst::query::Context::new(CONTEXT_TYPE);
            if pad.peer_query(&mut q) {
                if let Some(c) = q.context_owned() {
                    let mut slot = None;
                    lib.handle_set_context(&element, &c, device_id, &mut slot);
                    if slot.is_some() {
                        gst::debug!(CAT, imp = self, "CUDA context from {}'s peer", pad.name());
                        *lock(&self.cuda_context) = slot;
                        return Some(origin);
                    }
                }
            }
        }
        // The application or a bin may answer synchronously through set_context().
        let _ = obj.post_message(
            gst::message::NeedContext::builder(CONTEXT_TYPE)
                .src(&*obj)
                .build(),
        );
        if lock(&self.cuda_context).is_some() {
            gst::debug!(CAT, imp = self, "CUDA context from the application or bin");
            return Some(ContextOrigin::Pipeline);
        }
        None
    }

    /// NULL->READY: opens the GPU `device_id` names or, for -1, the one
    /// [`Self::pick_device`] chooses. The claim counts this element on the device while
    /// [`Prepared`] holds it.
    fn open_gpu(&self, device_id: i32) -> Result<(GpuDevice, DeviceClaim), crate::cuda::CudaError> {
        let claim = match usize::try_from(device_id) {
            Ok(ordinal) => DeviceClaim::new(ordinal),
            Err(_) => self.pick_device()?,
        };
        let dev = GpuDevice::open(claim.ordinal())?;
        Ok((dev, claim))
    }

    /// `device-id=-1`: the device of the pipeline's CUDA context when one is known (kept as
    /// the element's shared context, so zero copy still works), else the device a CUDA
    /// element upstream is bound to, else the least-loaded GPU
    /// ([`pick::claim_least_loaded`]). Logs the choice and why at info level.
    ///
    /// A context that another vmafcompare element only offered (the bin keeps every
    /// have-context and hands it to the next element that asks) says nothing about where the
    /// frames are: it is set aside, else every element of a pipeline would follow the first
    /// one's GPU; it is shared again when the pick lands on its device.
    ///
    /// Errors: no driver or no device (from counting the devices).
    fn pick_device(&self) -> Result<DeviceClaim, crate::cuda::CudaError> {
        let mut offer = None;
        if let Some(origin) = self.find_cuda_context(AUTO_DEVICE_ID) {
            let ctx = lock(&self.cuda_context).take();
            let ordinal = gst_cuda::library()
                .zip(ctx.as_ref())
                .and_then(|(lib, c)| lib.context_device(c));
            match (ordinal, ctx) {
                (Some(ordinal), Some(ctx))
                    if origin == ContextOrigin::Pipeline && is_offer(&ctx) =>
                {
                    gst::debug!(
                        CAT,
                        imp = self,
                        "the pipeline's CUDA context (device {ordinal}) is another vmafcompare's \
                         offer: not a reason to pick its device"
                    );
                    offer = Some((ordinal, ctx));
                }
                (Some(ordinal), Some(ctx)) => {
                    gst::info!(
                        CAT,
                        imp = self,
                        "device-id=-1: CUDA device {ordinal} (the {origin} CUDA context's device)"
                    );
                    *lock(&self.cuda_context) = Some(ctx);
                    return Ok(DeviceClaim::new(ordinal));
                }
                _ => gst::debug!(
                    CAT,
                    imp = self,
                    "the {origin} CUDA context does not tell its device: not used"
                ),
            }
        }
        let claim = if let Some((ordinal, name, property)) = self.upstream_bound_device() {
            gst::info!(
                CAT,
                imp = self,
                "device-id=-1: CUDA device {ordinal} (upstream {name} is bound to it: \
                 {property}={ordinal})"
            );
            DeviceClaim::new(ordinal)
        } else {
            let (claim, choice) = pick::claim_least_loaded()?;
            for note in &choice.notes {
                gst::debug!(CAT, imp = self, "device-id=-1: {note}");
            }
            gst::info!(
                CAT,
                imp = self,
                "device-id=-1: CUDA device {} ({choice})",
                claim.ordinal()
            );
            claim
        };
        if let Some((ordinal, ctx)) = offer.filter(|(o, _)| *o == claim.ordinal()) {
            gst::debug!(
                CAT,
                imp = self,
                "sharing the offered context of device {ordinal}"
            );
            *lock(&self.cuda_context) = Some(ctx);
        }
        Ok(claim)
    }

    /// The device a CUDA element upstream of a sink pad is bound to, when the pipeline has no
    /// CUDA context yet (elements start sinks first, so at this element's NULL->READY its
    /// upstream has none): the first element up each sink pad's chain, through elements with
    /// one sink pad and into bins, whose `cuda-device-id` (nvcodec's decoders and filters;
    /// -1 = any is not bound) or, for `vmafnvdec`, `device-id` is a device. It will only
    /// take a context of that device, so scoring there keeps its frames in place.
    /// Returns (ordinal, element name, property).
    fn upstream_bound_device(&self) -> Option<(usize, String, &'static str)> {
        // Enough for a decoder behind a parser, queues and converters.
        const MAX_HOPS: usize = 16;
        for pad in self.obj().sink_pads() {
            let mut next = pad.peer();
            for _ in 0..MAX_HOPS {
                let Some(mut peer) = next.take() else {
                    break;
                };
                // Into a bin through its ghost pad, out of one through the ghost pad's
                // internal (proxy) pad.
                while let Some(target) = peer
                    .downcast_ref::<gst::GhostPad>()
                    .and_then(|g| g.target())
                {
                    peer = target;
                }
                if let Some(ghost) = peer
                    .parent()
                    .and_then(|p| p.downcast::<gst::GhostPad>().ok())
                {
                    next = ghost.peer();
                    continue;
                }
                let Some(element) = peer.parent_element() else {
                    break;
                };
                if let Some((ordinal, property)) = bound_device(&element) {
                    return Some((ordinal, element.name().to_string(), property));
                }
                let sinks = element.sink_pads();
                if sinks.len() != 1 {
                    break;
                }
                next = sinks[0].peer();
            }
        }
        None
    }

    /// The CUDA ordinal of the device the element opened (`active-device-id`), -1 when none
    /// is open.
    pub(super) fn active_device_id(&self) -> i32 {
        lock(&self.prepared)
            .as_ref()
            .and_then(|p| p.gpu.as_ref())
            .map_or(-1, |g| i32::try_from(g.ordinal()).unwrap_or(i32::MAX))
    }

    /// Answers a `gst.cuda.context` query with the shared context.
    pub(super) fn answer_context_query(&self, query: &mut gst::QueryRef) -> bool {
        let gst::QueryViewMut::Context(q) = query.view_mut() else {
            return false;
        };
        if q.context_type() != CONTEXT_TYPE {
            return false;
        }
        let (Some(lib), Some(ctx)) = (gst_cuda::library(), lock(&self.cuda_context).clone()) else {
            return false;
        };
        let element = self.obj().upcast_ref::<gst::Element>().clone();
        lib.handle_context_query(&element, query, &ctx)
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
