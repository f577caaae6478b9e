//! Device picking and CUDA context sharing ([`CudaSharing`]): which GPU `device-id` opens (-1:
//! the pipeline context's, an upstream CUDA element's, else the least loaded) and the
//! pipeline's `gst.cuda.context` the element keeps, takes from its neighbours and offers.

use std::sync::Mutex;

use gst::glib;
use gst::prelude::*;

use super::settings::AUTO_DEVICE_ID;
use super::util::{lock, CAT};
use crate::cuda::gst_cuda::{self, CONTEXT_TYPE};
use crate::cuda::{pick, CudaError, DeviceClaim, GpuDevice};

/// Where the pipeline's CUDA context came from ([`CudaSharing::find`]).
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

/// The device a CUDA element upstream of a sink pad of `element` is bound to, when the
/// pipeline has no CUDA context yet (elements start sinks first, so at the element's
/// NULL->READY its upstream has none): the first element up each sink pad's chain, through
/// elements with one sink pad and into bins, whose `cuda-device-id` (nvcodec's decoders and
/// filters; -1 = any is not bound) or, for `vmafnvdec`, `device-id` is a device. It will only
/// take a context of that device, so scoring there keeps its frames in place.
/// Returns (ordinal, element name, property).
fn upstream_bound_device(element: &gst::Element) -> Option<(usize, String, &'static str)> {
    // Enough for a decoder behind a parser, queues and converters.
    const MAX_HOPS: usize = 16;
    for pad in element.sink_pads() {
        let mut next = pad.peer();
        for _ in 0..MAX_HOPS {
            let Some(mut peer) = next.take() else {
                break;
            };
            // Into a bin through its ghost pad, out of one through the ghost pad's internal
            // (proxy) pad.
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
            let Some(upstream) = peer.parent_element() else {
                break;
            };
            if let Some((ordinal, property)) = bound_device(&upstream) {
                return Some((ordinal, upstream.name().to_string(), property));
            }
            let sinks = upstream.sink_pads();
            if sinks.len() != 1 {
                break;
            }
            next = sinks[0].peer();
        }
    }
    None
}

/// The pipeline's `GstCudaContext` as the element holds it, from NULL->READY (found or
/// offered) to READY->NULL ([`Self::clear`]), and the choice of GPU that goes with it. Every
/// method takes the element as a plain `gst::Element`: its pads are where neighbours are
/// asked, and it is the source of the messages and the logs.
#[derive(Default)]
pub(super) struct CudaSharing {
    /// The shared context: the pipeline's when one was offered, else one wrapping the
    /// element's own (primary) context.
    context: Mutex<Option<gst::Object>>,
}

impl CudaSharing {
    /// READY->NULL: the shared context is let go.
    pub(super) fn clear(&self) {
        *lock(&self.context) = None;
    }

    /// `set_context` with a `gst.cuda.context`: kept when it is of device `device_id` (-1:
    /// any). Without `libgstcuda-1.0` there is nothing to keep.
    pub(super) fn set_context(
        &self,
        element: &gst::Element,
        context: &gst::Context,
        device_id: i32,
    ) {
        if context.context_type() != CONTEXT_TYPE {
            return;
        }
        if let Some(lib) = gst_cuda::library() {
            let mut slot = lock(&self.context).take();
            lib.handle_set_context(element, context, device_id, &mut slot);
            *lock(&self.context) = slot;
        }
    }

    /// Answers a `gst.cuda.context` query with the shared context; `false` for any other
    /// query or when none is shared.
    pub(super) fn answer_query(&self, element: &gst::Element, query: &mut gst::QueryRef) -> bool {
        let gst::QueryViewMut::Context(q) = query.view_mut() else {
            return false;
        };
        if q.context_type() != CONTEXT_TYPE {
            return false;
        }
        let (Some(lib), Some(ctx)) = (gst_cuda::library(), lock(&self.context).clone()) else {
            return false;
        };
        lib.handle_context_query(element, query, &ctx)
    }

    /// NULL->READY: opens the GPU `device_id` names or, for -1, the one
    /// [`Self::pick_device`] chooses. The claim counts the element on the device while it
    /// holds it.
    ///
    /// Errors: no driver, no such device, or the device refused a context.
    pub(super) fn open_gpu(
        &self,
        element: &gst::Element,
        device_id: i32,
    ) -> Result<(GpuDevice, DeviceClaim), CudaError> {
        let claim = match usize::try_from(device_id) {
            Ok(ordinal) => DeviceClaim::new(ordinal),
            Err(_) => self.pick_device(element)?,
        };
        let dev = GpuDevice::open(claim.ordinal())?;
        Ok((dev, claim))
    }

    /// NULL->READY with a GPU: finds the pipeline's `gst.cuda.context` of `dev`'s device
    /// ([`Self::find`]; skipped when `looked`, as `device-id=-1` did already) or, when there
    /// is none, offers one wrapping the element's primary context (a have-context message),
    /// so that CUDA decoders and `cudaupload` allocate in the context the kernels run in
    /// (zero copy). Without `libgstcuda-1.0` there is nothing to share and CUDA memory cannot
    /// reach the element.
    pub(super) fn share(&self, element: &gst::Element, dev: &GpuDevice, looked: bool) {
        let Some(lib) = gst_cuda::library() else {
            gst::debug!(
                CAT,
                obj = element,
                "GStreamer CUDA library not available ({}): system memory and DMABuf only",
                gst_cuda::load_error().unwrap_or("unknown reason")
            );
            return;
        };
        if !lib.load_driver() {
            gst::debug!(CAT, obj = element, "gst_cuda_load_library failed");
            return;
        }
        let device_id = dev.ordinal() as i32;
        if !looked {
            if let Some(origin) = self.find(element, device_id) {
                gst::debug!(CAT, obj = element, "CUDA context: the {origin} one");
                return;
            }
        }
        if lock(&self.context).is_some() {
            return;
        }
        let ctx = dev.context();
        let Some(wrapped) = lib.wrap_context(ctx.cu_ctx() as usize, ctx.cu_device(), ctx.clone())
        else {
            gst::warning!(
                CAT,
                obj = element,
                "cannot wrap the CUDA context for sharing"
            );
            return;
        };
        let Some(context) = lib.new_context(&wrapped) else {
            return;
        };
        // SAFETY: the key is ours and only ever holds a `bool` (read by `is_offer`).
        unsafe { wrapped.set_data(OFFER_KEY, true) };
        *lock(&self.context) = Some(wrapped);
        gst::debug!(
            CAT,
            obj = element,
            "sharing the element's CUDA context (device {device_id})"
        );
        let _ = element.post_message(
            gst::message::HaveContext::builder(context)
                .src(element)
                .build(),
        );
    }

    /// Looks for the pipeline's `gst.cuda.context` of device `device_id` (-1: any) and keeps
    /// it as the shared context: the one set on the element already, else a neighbour's
    /// answer to a context query (upstream first, then the src pad's peer), else the
    /// application's or a bin's answer to a need-context message. Returns where it came
    /// from, `None` when there is none (or no `libgstcuda-1.0`).
    pub(super) fn find(&self, element: &gst::Element, device_id: i32) -> Option<ContextOrigin> {
        let lib = gst_cuda::library().filter(|l| l.load_driver())?;
        if lock(&self.context).is_some() {
            return Some(ContextOrigin::Pipeline);
        }
        let pads = element
            .sink_pads()
            .into_iter()
            .map(|p| (p, ContextOrigin::Upstream))
            .chain(
                element
                    .src_pads()
                    .into_iter()
                    .map(|p| (p, ContextOrigin::Downstream)),
            );
        for (pad, origin) in pads {
            let mut q = gst::query::Context::new(CONTEXT_TYPE);
            if pad.peer_query(&mut q) {
                if let Some(c) = q.context_owned() {
                    let mut slot = None;
                    lib.handle_set_context(element, &c, device_id, &mut slot);
                    if slot.is_some() {
                        gst::debug!(
                            CAT,
                            obj = element,
                            "CUDA context from {}'s peer",
                            pad.name()
                        );
                        *lock(&self.context) = slot;
                        return Some(origin);
                    }
                }
            }
        }
        // The application or a bin may answer synchronously through set_context().
        let _ = element.post_message(
            gst::message::NeedContext::builder(CONTEXT_TYPE)
                .src(element)
                .build(),
        );
        if lock(&self.context).is_some() {
            gst::debug!(
                CAT,
                obj = element,
                "CUDA context from the application or bin"
            );
            return Some(ContextOrigin::Pipeline);
        }
        None
    }

    /// `device-id=-1`: the device of the pipeline's CUDA context when one is known (kept as
    /// the shared context, so zero copy still works), else the device a CUDA element
    /// upstream is bound to, else the least-loaded GPU ([`pick::claim_least_loaded`]). Logs
    /// the choice and why at info level.
    ///
    /// A context that another vmafcompare element only offered (the bin keeps every
    /// have-context and hands it to the next element that asks) says nothing about where the
    /// frames are: it is set aside, else every element of a pipeline would follow the first
    /// one's GPU; it is shared again when the pick lands on its device.
    ///
    /// Errors: no driver or no device (from counting the devices).
    fn pick_device(&self, element: &gst::Element) -> Result<DeviceClaim, CudaError> {
        let mut offer = None;
        if let Some(origin) = self.find(element, AUTO_DEVICE_ID) {
            let ctx = lock(&self.context).take();
            let ordinal = gst_cuda::library()
                .zip(ctx.as_ref())
                .and_then(|(lib, c)| lib.context_device(c));
            match (ordinal, ctx) {
                (Some(ordinal), Some(ctx))
                    if origin == ContextOrigin::Pipeline && is_offer(&ctx) =>
                {
                    gst::debug!(
                        CAT,
                        obj = element,
                        "the pipeline's CUDA context (device {ordinal}) is another vmafcompare's \
                         offer: not a reason to pick its device"
                    );
                    offer = Some((ordinal, ctx));
                }
                (Some(ordinal), Some(ctx)) => {
                    gst::info!(
                        CAT,
                        obj = element,
                        "device-id=-1: CUDA device {ordinal} (the {origin} CUDA context's device)"
                    );
                    *lock(&self.context) = Some(ctx);
                    return Ok(DeviceClaim::new(ordinal));
                }
                _ => gst::debug!(
                    CAT,
                    obj = element,
                    "the {origin} CUDA context does not tell its device: not used"
                ),
            }
        }
        let claim = if let Some((ordinal, name, property)) = upstream_bound_device(element) {
            gst::info!(
                CAT,
                obj = element,
                "device-id=-1: CUDA device {ordinal} (upstream {name} is bound to it: \
                 {property}={ordinal})"
            );
            DeviceClaim::new(ordinal)
        } else {
            let (claim, choice) = pick::claim_least_loaded()?;
            for note in &choice.notes {
                gst::debug!(CAT, obj = element, "device-id=-1: {note}");
            }
            gst::info!(
                CAT,
                obj = element,
                "device-id=-1: CUDA device {} ({choice})",
                claim.ordinal()
            );
            claim
        };
        if let Some((ordinal, ctx)) = offer.filter(|(o, _)| *o == claim.ordinal()) {
            gst::debug!(
                CAT,
                obj = element,
                "sharing the offered context of device {ordinal}"
            );
            *lock(&self.context) = Some(ctx);
        }
        Ok(claim)
    }
}
