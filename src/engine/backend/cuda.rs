//! [`CudaBackend`]: VIF, ADM and motion of a stream of frame pairs on one GPU, and the extra
//! metrics on streams of their own, with up to three frames in flight (host staging, upload,
//! kernels and read-back of different frames overlap).
//!
//! Input planes reach the kernels in one of three ways, all described by a [`DevPlane`]:
//! - host rows (system memory, a read-back DMABuf): the valid rows are copied into the slot's
//!   pinned staging in the buffer's own sample layout (1 byte per 8-bit sample) and uploaded;
//! - device memory of this backend's context (GStreamer CUDA memory, an imported DMABuf):
//!   read where it lies, no copy; the buffer is held until the kernels reading it are done;
//! - device memory of another context or device: one pitched peer-to-peer copy into the slot.

use std::collections::VecDeque;
use std::sync::Arc;

use cudarc::driver::CudaStream;

use crate::cuda::context::GpuDevice;
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::fault::Counted;
use crate::engine::backend::api::Backend;
use crate::engine::error::EngineError;
use crate::engine::frame_set::{FrameChroma, FrameSet, SetFeatures};
use crate::engine::scale::Scaling;
use crate::features::adm::AdmConfig;
use crate::features::vif::VifConfig;
use crate::features::{vmaf_layout, Geometry, Layout, RawFeatures};
use crate::video::frame::{FeatureError, LumaInput};

use super::cuda_place::{engine_err, sample_bytes, GpuScaler};
use super::cuda_slots::{Hold, OnCompute, Side, Slot, SLOTS};

/// The GPU feature backend for one geometry: every instance of a [`Layout`] through its CUDA
/// half, bit-identical to [`super::CpuBackend`] where the arithmetic is integer.
///
/// Owns an upload stream (copies, chroma unpacking), a compute stream (the instances on it,
/// e.g. motion, VIF, ADM, and their read-back) and a stream per instance that asks for one
/// (`Side`), synchronised with events,
/// `SLOTS` (3) frame slots with pinned staging, device planes and results, all allocated in
/// [`CudaBackend::new`]: `submit` and `collect` allocate nothing on the device (the hold
/// queue's few entries aside). Dropping it synchronises every stream before anything is freed
/// or released.
pub struct CudaBackend {
    // Declared first so that, after `Drop::drop` synchronised, the slots go before the rest.
    pub(super) slots: Vec<Slot>,
    /// The instances on the compute stream, in layout order.
    pub(super) on_compute: Vec<OnCompute>,
    /// The layout computed.
    pub(super) layout: Arc<Layout>,
    pub(super) upload: Arc<CudaStream>,
    pub(super) compute: Arc<CudaStream>,
    /// One stream per instance that asks for its own (a ladder's: per instance and
    /// rendition).
    pub(super) sides: Vec<Side>,
    /// A ladder's compute lanes, one per instance of `on_compute` (in that order): the
    /// instances run beside each other (VIF's wide grids beside ADM's and motion's small
    /// ones), joined on the compute stream before the read-back. Empty for a pair.
    pub(super) lanes: Vec<Arc<CudaStream>>,
    pub(super) bpc: u32,
    /// This backend's `CUcontext`: device planes of another context are copied.
    pub(super) context: usize,
    /// Oldest uncollected slot and the number of frames in flight.
    pub(super) head: usize,
    pub(super) in_flight: usize,
    /// Frames submitted since creation or reset (motion needs a previous one).
    pub(super) submitted: u64,
    /// Finished sets taken out of their slot early (a submit with every slot busy).
    pub(super) ready: VecDeque<SetFeatures>,
    /// Rendition slots of a ladder backend; 0 for a pair backend.
    pub(super) ladder: usize,
    /// A ladder's instances share their reference-only work across the renditions
    /// ([`crate::features::CudaExtractor::enqueue_ladder`]); off: each rendition's kernels
    /// are enqueued as a pair's ([`CudaBackend::with_shared_reference`]).
    pub(super) share_reference: bool,
    /// Input buffers still read by kernels in flight, in release order.
    pub(super) holds: VecDeque<Hold>,
    /// A failure of `reset` (which cannot return one), reported by the next call.
    pub(super) deferred: Option<CudaError>,
    /// Bytes copied to the device for input planes since creation (uploads and peer copies).
    pub(super) bytes_copied: u64,
    /// Each stream's scaler to the scoring size ([0]: reference, [1 + k]: distorted stream
    /// `k`, the pair's one or a ladder's renditions; `None` for a stream at it), run on the
    /// upload stream.
    pub(super) scalers: Vec<Option<GpuScaler>>,
    /// The luma size each stream arrives at (indexed as `scalers`).
    pub(super) input_sizes: Vec<(usize, usize)>,
    /// The scoring chroma size (when a metric reads chroma).
    pub(super) chroma_size: Option<(usize, usize)>,
    /// The streams, for [`crate::cuda::fault::live`].
    pub(super) _counted: Vec<Counted>,
}

impl CudaBackend {
    /// Sizes every buffer for frames of `geometry` on `dev` and makes every instance's CUDA
    /// half. Every buffer, the instances' scratch and the chroma staging included, is
    /// allocated here (once per caps).
    ///
    /// Errors: [`CudaError::Geometry`] for a geometry an instance refuses (below its minimum
    /// size, `bpc` outside `8..=16`); [`CudaError::OutOfMemory`] and [`CudaError::Driver`]
    /// from the allocations, stream and event creation. A failure drops whatever was made
    /// before it.
    pub fn new(
        dev: &GpuDevice,
        layout: &Arc<Layout>,
        geometry: Geometry,
    ) -> Result<Self, CudaError> {
        Self::new_scaled(dev, layout, geometry, Scaling::unscaled_pair())
    }

    /// The backend for frame sets of `scaling.renditions.len()` rendition slots (1: a pair),
    /// each stream scaled by its scaler (if any) to the scoring size (`geometry`) first:
    /// its planes are submitted at the scaler's source size, placed (read in place, uploaded
    /// or peer-copied) at that size and scaled by two kernels on the upload stream into a
    /// plane of the slot (FFmpeg swscale's arithmetic, bit for bit the CPU backend's:
    /// [`crate::engine::scale`]); chroma too when a metric reads it. Every buffer, the
    /// scalers' tables and planes included, is allocated here.
    ///
    /// One rendition runs the pair kernels on the compute stream. More make a ladder: per
    /// set the reference is placed (and scaled) once, its chroma unpacked once, the
    /// reference-only instances (motion) enqueued once, and every other instance given the
    /// renditions with full features in one
    /// [`crate::features::CudaExtractor::enqueue_ladder`] call, each instance on a lane of
    /// its own; each slot holds every rendition's staging, planes and result words.
    ///
    /// Errors: as [`CudaBackend::new`]; [`CudaError::Geometry`] for a scaler of another
    /// output size than `geometry`'s; [`CudaError::Driver`] for no rendition, or more than
    /// one with a layout that has an instance reading earlier frames of the distorted stream
    /// (its history could not be shared by the renditions).
    pub fn new_scaled(
        dev: &GpuDevice,
        layout: &Arc<Layout>,
        geometry: Geometry,
        scaling: impl Into<Scaling>,
    ) -> Result<Self, CudaError> {
        let scaling = scaling.into();
        let refuse = |code: &str| CudaError::Driver {
            call: "CudaBackend::new_scaled",
            code: code.to_owned(),
        };
        if scaling.renditions.is_empty() {
            return Err(refuse("a ladder of no rendition"));
        }
        if scaling.renditions.len() > 1 && layout.previous_distorted_reader().is_some() {
            return Err(refuse(
                "an instance reads earlier distorted frames: not scored in a ladder",
            ));
        }
        Self::build(dev, layout, geometry, &scaling)
    }

    /// A ladder backend: [`CudaBackend::new_scaled`] (kept for its callers; any number of
    /// renditions, one scored with the pair kernels).
    ///
    /// Errors: as [`CudaBackend::new_scaled`].
    pub fn new_ladder(
        dev: &GpuDevice,
        layout: &Arc<Layout>,
        geometry: Geometry,
        scaling: Scaling,
    ) -> Result<Self, CudaError> {
        Self::new_scaled(dev, layout, geometry, scaling)
    }

    /// A ladder whose instances other than the reference-only ones enqueue each rendition's
    /// kernels as a pair's (`share == false`: the reference placed once and motion once, but
    /// VIF's reference statistics and ADM's reference DWT per rendition), for measuring what
    /// their [`crate::features::CudaExtractor::enqueue_ladder`] saves; the values are the
    /// same. On by default.
    pub fn with_shared_reference(mut self, share: bool) -> Self {
        self.share_reference = share;
        self
    }

    /// VMAF v0's features (ADM, motion, VIF) with the options `vif` and `adm`, luma only.
    ///
    /// Errors: as [`CudaBackend::new`].
    pub fn vmaf(
        dev: &GpuDevice,
        width: usize,
        height: usize,
        bpc: u32,
        vif: VifConfig,
        adm: AdmConfig,
    ) -> Result<Self, CudaError> {
        let layout = vmaf_layout(vif, adm).map_err(|e| CudaError::Driver {
            call: "Layout::new",
            code: e.to_string(),
        })?;
        Self::new(dev, &layout, Geometry::luma(width, height, bpc))
    }

    /// The layout this backend computes.
    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// Bytes copied to the device for input planes (luma and chroma, host uploads and
    /// peer-to-peer copies) since creation: the measure that copies move only the rows and
    /// bytes that carry samples (issue 8).
    pub fn bytes_copied(&self) -> u64 {
        self.bytes_copied
    }

    /// This backend's `CUcontext` (as an address), to compare with a device plane's.
    pub fn context(&self) -> usize {
        self.context
    }

    /// Checks a plane's size against the size stream `side` (0: reference, `1 + k`:
    /// distorted stream `k`) arrives at: the backend's geometry, or its scaler's source size.
    pub(super) fn check(&self, input: &LumaInput, side: usize) -> Result<(), FeatureError> {
        let (width, height) = input.size();
        let (ew, eh) = self.input_sizes.get(side).copied().unwrap_or_default();
        let packed_ok = match input {
            LumaInput::Packed(p) => {
                FeatureError::check_plane("vmaf", (ew, eh, self.bpc), p).is_ok()
            }
            _ => true,
        };
        // Host rows and copied device rows go through planes of the backend's sample size.
        let bytes_ok = match input {
            LumaInput::Host(h) => h.layout.bytes <= sample_bytes(self.bpc),
            LumaInput::Device(d) => d.layout.bytes <= sample_bytes(self.bpc),
            LumaInput::Packed(_) => true,
        };
        if width != ew || height != eh || !packed_ok || !bytes_ok {
            return Err(FeatureError::wrong_size(
                "vmaf",
                (ew, eh, self.bpc),
                (width, height),
            ));
        }
        Ok(())
    }

    /// The first CUDA steps of a frame going into slot `s` (the pair's and the ladder's):
    /// binds the context (tests/gpu_faults.rs counts init steps up to this bind) and makes the
    /// upload stream wait until the slot is free. The slot's device planes were last read by
    /// the motion kernel of the frame after its previous occupant, i.e. the frame submitted
    /// two before this one; its planes (and unpacked chroma) by its previous occupant's extra
    /// metrics, which the side streams ran before that frame's events. Returns the frame's
    /// number since creation or reset.
    pub(super) fn start_frame(&self, s: usize) -> Result<u64, CudaError> {
        self.compute
            .context()
            .bind_to_thread()
            .during("cuCtxSetCurrent(frame)")?;
        let index = self.submitted;
        if index >= 2 {
            let bp = &self.slots[(s + SLOTS - 2) % SLOTS];
            self.upload
                .wait(&bp.done)
                .during("cuStreamWaitEvent(upload)")?;
            for side in &bp.sides {
                self.upload
                    .wait(&side.done)
                    .during("cuStreamWaitEvent(upload, side)")?;
            }
        }
        Ok(index)
    }

    /// Waits for (`wait`) or checks the oldest frame's events; whether it is done.
    pub(super) fn oldest_done(&self, wait: bool) -> Result<bool, CudaError> {
        let slot = &self.slots[self.head];
        let events = std::iter::once(&slot.done).chain(slot.sides.iter().map(|s| &s.done));
        for event in events {
            if wait {
                event.synchronize().during("cuEventSynchronize(done)")?;
            } else if !event.try_is_complete().during("cuEventQuery(done)")? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Frees the oldest slot (frame `index`, read): the inputs nothing in flight reads any
    /// more are released.
    pub(super) fn release_oldest(&mut self, index: u64) {
        self.head = (self.head + 1) % SLOTS;
        self.in_flight -= 1;
        while self.holds.front().is_some_and(|h| h.release_after <= index) {
            self.holds.pop_front();
        }
    }

    /// The oldest set's features, each submitted rendition's from its words (a ladder's
    /// reference-only instances' from the first rendition's), waiting for it if `wait`.
    pub(super) fn finish_oldest(&mut self, wait: bool) -> Result<Option<SetFeatures>, CudaError> {
        if self.in_flight == 0 || !self.oldest_done(wait)? {
            return Ok(None);
        }
        let n = self.ladder.max(1);
        let slot = &self.slots[self.head];
        let words = slot
            .host_out
            .as_slice()
            .during("cuEventSynchronize(results)")?;
        let mut features = SetFeatures::with_capacity(slot.occupants.len());
        for o in &slot.occupants {
            let mut raw = RawFeatures::new(&self.layout);
            for c in &self.on_compute {
                let w = c.ex.result_words();
                // Reference-only instances ran once per set, into the first rendition's
                // words (on every frame after the first when they read the previous one,
                // else with the full features); other instances that read the previous
                // frame on every frame after the first, the rest on full ones.
                let (runs, chunk, chroma) = if c.reference_only {
                    (
                        if c.previous {
                            slot.has_motion
                        } else {
                            slot.full
                        },
                        0,
                        false,
                    )
                } else if c.previous {
                    (slot.has_motion, o.rendition, o.has_chroma)
                } else {
                    (o.full, o.rendition, o.has_chroma)
                };
                if runs {
                    let at = c.at * n + chunk * w;
                    let words = words.get(at..at + w).unwrap_or(&[]);
                    c.ex.read(words, chroma, raw.of_mut(c.inst));
                }
            }
            if o.full {
                // This rendition's side streams.
                for (side, out) in self.sides.iter().zip(&slot.sides) {
                    if side.rendition != o.rendition {
                        continue;
                    }
                    let words = out
                        .host_out
                        .as_slice()
                        .during("cuEventSynchronize(extra results)")?;
                    side.ex.read(words, o.has_chroma, raw.of_mut(side.inst));
                }
            }
            features.push((o.rendition, raw));
        }
        let index = slot.index;
        self.release_oldest(index);
        Ok(Some(features))
    }

    pub(super) fn sync_all(&self) -> Result<(), CudaError> {
        self.upload
            .synchronize()
            .during("cuStreamSynchronize(upload)")?;
        self.compute
            .synchronize()
            .during("cuStreamSynchronize(compute)")?;
        for side in &self.sides {
            side.stream
                .synchronize()
                .during("cuStreamSynchronize(side)")?;
        }
        for lane in &self.lanes {
            lane.synchronize().during("cuStreamSynchronize(lane)")?;
        }
        Ok(())
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn reads_device(&self) -> bool {
        true
    }

    fn reads_components(&self) -> bool {
        true
    }

    fn max_in_flight(&self) -> usize {
        SLOTS
    }

    fn renditions(&self) -> usize {
        self.ladder.max(1)
    }

    fn reset(&mut self) {
        if let Err(e) = self.sync_all() {
            self.deferred = Some(e);
        }
        self.head = 0;
        self.in_flight = 0;
        self.submitted = 0;
        self.ready.clear();
        self.holds.clear();
    }

    fn submit_set(&mut self, set: FrameSet<'_>) -> Result<(), EngineError> {
        if let Some(e) = self.deferred.take() {
            return Err(engine_err(e));
        }
        self.check_set(&set)?;
        if self.in_flight == SLOTS {
            // Every slot busy (a caller that does not collect): finish the oldest.
            if let Some(f) = self.finish_oldest(true).map_err(engine_err)? {
                self.ready.push_back(f);
            }
        }
        let s = (self.head + self.in_flight) % SLOTS;
        self.enqueue(s, set).map_err(engine_err)?;
        self.in_flight += 1;
        self.submitted += 1;
        Ok(())
    }

    fn collect_set(&mut self, wait: bool) -> Result<Option<SetFeatures>, EngineError> {
        if let Some(e) = self.deferred.take() {
            return Err(engine_err(e));
        }
        if let Some(f) = self.ready.pop_front() {
            return Ok(Some(f));
        }
        self.finish_oldest(wait).map_err(engine_err)
    }
}

impl CudaBackend {
    /// Checks a set before anything is enqueued: its rendition slots and a pair's chroma
    /// ([`FrameSet::check_slots`]), each plane's size against its stream's, chroma as buffer
    /// components.
    fn check_set(&self, set: &FrameSet<'_>) -> Result<(), EngineError> {
        let refuse = |message: &str| EngineError::Backend {
            backend: "cuda",
            message: message.to_owned(),
        };
        set.check_slots(self.renditions())
            .map_err(|message| refuse(&message))?;
        self.check(&set.reference, 0)?;
        let packed = |c: &Option<FrameChroma>| matches!(c, Some(FrameChroma::Packed(_)));
        if packed(&set.reference_chroma) || set.renditions.iter().any(|r| packed(&r.chroma)) {
            return Err(refuse(
                "the CUDA backend takes chroma as the buffers' components \
                 (FrameChroma::Components), not packed planes",
            ));
        }
        for r in &set.renditions {
            let k = r.rendition;
            self.check(&r.luma, 1 + k)?;
        }
        Ok(())
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        // Nothing may be freed while a copy or kernel still uses it: wait for every stream,
        // free the slots, and wait again for the stream-ordered frees.
        let _ = self.sync_all();
        self.holds.clear();
        self.slots.clear();
        let _ = self.sync_all();
    }
}
