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

use cudarc::driver::{CudaStream, CudaViewMut, DevicePtr, PinnedHostSlice};

use crate::cuda::chroma::{peer_copy, ChromaGpu};
use crate::cuda::context::GpuDevice;
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::fault::{Counted, Handle};
use crate::cuda::memory::DeviceAlloc;
use crate::cuda::plane::{ChromaDev, DevPlane};
use crate::cuda::staging::{in_bands, run_beside, stage_rows};
use crate::engine::backend::api::Backend;
use crate::engine::error::EngineError;
use crate::engine::frame_set::{FrameChroma, FrameSet, SetFeatures};
use crate::engine::scale::cuda::CudaPlaneScaler;
use crate::engine::scale::{InputScaling, LadderScaling, StreamScaler};
use crate::features::adm::AdmConfig;
use crate::features::vif::VifConfig;
use crate::features::{vmaf_layout, DevFrame, Geometry, Layout, RawFeatures};
use crate::video::frame::{
    ChromaInput, DeviceLuma, FeatureError, HostLuma, LumaInput, LumaPlane, SampleLayout,
};

use super::cuda_slots::{
    with_views, Hold, LaunchJob, Occupant, OnCompute, Side, Slot, StreamBufs, StreamSpec, SLOTS,
};

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
    slots: Vec<Slot>,
    /// The instances on the compute stream, in layout order.
    on_compute: Vec<OnCompute>,
    /// The layout computed.
    layout: Arc<Layout>,
    upload: Arc<CudaStream>,
    compute: Arc<CudaStream>,
    /// One stream per instance that asks for its own (a ladder's: per instance and
    /// rendition).
    sides: Vec<Side>,
    /// A ladder's compute lanes, one per instance of `on_compute` (in that order): the
    /// instances run beside each other (VIF's wide grids beside ADM's and motion's small
    /// ones), joined on the compute stream before the read-back. Empty for a pair.
    lanes: Vec<Arc<CudaStream>>,
    bpc: u32,
    /// This backend's `CUcontext`: device planes of another context are copied.
    context: usize,
    /// Oldest uncollected slot and the number of frames in flight.
    head: usize,
    in_flight: usize,
    /// Frames submitted since creation or reset (motion needs a previous one).
    submitted: u64,
    /// Finished frames taken out of their slot early (a submit with every slot busy).
    ready: VecDeque<RawFeatures>,
    /// The same for a ladder backend's frames.
    ready_ladder: VecDeque<SetFeatures>,
    /// Rendition slots of a ladder backend; 0 for a pair backend.
    ladder: usize,
    /// A ladder's instances share their reference-only work across the renditions
    /// ([`crate::features::CudaExtractor::enqueue_ladder`]); off: each rendition's kernels
    /// are enqueued as a pair's ([`CudaBackend::with_shared_reference`]).
    share_reference: bool,
    /// Input buffers still read by kernels in flight, in release order.
    holds: VecDeque<Hold>,
    /// A failure of `reset` (which cannot return one), reported by the next call.
    deferred: Option<CudaError>,
    /// Bytes copied to the device for input planes since creation (uploads and peer copies).
    bytes_copied: u64,
    /// Each stream's scaler to the scoring size ([0]: reference, [1 + k]: distorted stream
    /// `k`, the pair's one or a ladder's renditions; `None` for a stream at it), run on the
    /// upload stream.
    scalers: Vec<Option<GpuScaler>>,
    /// The luma size each stream arrives at (indexed as `scalers`).
    input_sizes: Vec<(usize, usize)>,
    /// The scoring chroma size (when a metric reads chroma).
    chroma_size: Option<(usize, usize)>,
    /// The streams, for [`crate::cuda::fault::live`].
    _counted: Vec<Counted>,
}

/// One stream's scalers on the GPU: luma, and chroma when a metric reads it.
struct GpuScaler {
    luma: CudaPlaneScaler,
    chroma: Option<CudaPlaneScaler>,
}

impl GpuScaler {
    /// `s`'s luma scaler, and its chroma scaler when a metric reads chroma
    /// (`chroma_size`), for output planes of `geometry`.
    ///
    /// Errors: [`CudaError::Geometry`] for a scaler of another output size than
    /// `geometry`'s; as [`CudaPlaneScaler::new`].
    fn new(
        dev: &GpuDevice,
        compute: &Arc<CudaStream>,
        s: &StreamScaler,
        geometry: &Geometry,
        chroma_size: Option<(usize, usize)>,
    ) -> Result<Self, CudaError> {
        let (width, height, bpc) = geometry.triple();
        if s.luma.dst() != (width, height) {
            let (w, h) = s.luma.dst();
            return Err(CudaError::Geometry(FeatureError::wrong_size(
                "scale",
                (width, height, bpc),
                (w, h),
            )));
        }
        let chroma = match (s.chroma.as_ref(), chroma_size) {
            (Some(c), Some(_)) => Some(CudaPlaneScaler::new(dev, compute, c, bpc)?),
            _ => None,
        };
        Ok(Self {
            luma: CudaPlaneScaler::new(dev, compute, &s.luma, bpc)?,
            chroma,
        })
    }
}

/// An internal inconsistency of the backend's buffers (a bug, reported rather than a panic).
fn internal(what: &str) -> CudaError {
    CudaError::Driver {
        call: "CudaBackend",
        code: format!("internal: {what}"),
    }
}

fn engine_err(e: CudaError) -> EngineError {
    match e {
        CudaError::Geometry(f) => EngineError::Feature(f),
        other => EngineError::Backend {
            backend: "cuda",
            message: other.to_string(),
        },
    }
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
        Self::new_scaled(dev, layout, geometry, InputScaling::default())
    }

    /// [`CudaBackend::new`] for streams that `scaling` scales to the scoring size
    /// (`geometry`) first: their planes are submitted at the scaler's source size, placed
    /// (read in place, uploaded or peer-copied) at that size and scaled by two kernels on the
    /// upload stream into a plane of the slot (FFmpeg swscale's arithmetic, bit for bit the
    /// CPU backend's: [`crate::engine::scale`]); chroma too when a metric reads it. The
    /// scalers' tables and planes are allocated here with the rest.
    ///
    /// Errors: as [`CudaBackend::new`], and [`CudaError::Geometry`] for a scaler of another
    /// output size than `geometry`'s.
    pub fn new_scaled(
        dev: &GpuDevice,
        layout: &Arc<Layout>,
        geometry: Geometry,
        scaling: InputScaling,
    ) -> Result<Self, CudaError> {
        Self::build(
            dev,
            layout,
            geometry,
            scaling.reference.as_ref(),
            std::slice::from_ref(&scaling.distorted),
            false,
        )
    }

    /// A ladder backend ([`crate::engine::frame_set`]): one reference against
    /// `scaling.renditions.len()` rendition slots, each rendition placed at its own size and
    /// scaled by its scaler (if any) to `geometry`'s size; every buffer allocated here.
    ///
    /// Per ladder frame the reference is placed (and scaled) once, its chroma unpacked once,
    /// the reference-only instances (motion) enqueued once, and every other instance given
    /// the renditions with full features in one [`crate::features::CudaExtractor::enqueue_ladder`]
    /// call. Each slot holds every rendition's staging, planes and result words.
    ///
    /// Errors: as [`CudaBackend::new_scaled`]; [`CudaError::Driver`] for a ladder of no
    /// rendition, or a layout with an instance that reads earlier frames of the distorted
    /// stream (its history could not be shared by the renditions).
    pub fn new_ladder(
        dev: &GpuDevice,
        layout: &Arc<Layout>,
        geometry: Geometry,
        scaling: LadderScaling,
    ) -> Result<Self, CudaError> {
        let refuse = |code: &str| CudaError::Driver {
            call: "CudaBackend::new_ladder",
            code: code.to_owned(),
        };
        if scaling.renditions.is_empty() {
            return Err(refuse("a ladder of no rendition"));
        }
        if layout.instances().iter().any(|i| {
            let n = i.needs();
            n.previous && !n.reference_only
        }) {
            return Err(refuse(
                "an instance reads earlier distorted frames: not scored in a ladder",
            ));
        }
        Self::build(
            dev,
            layout,
            geometry,
            scaling.reference.as_ref(),
            &scaling.renditions,
            true,
        )
    }

    /// The pair's and the ladder's constructor: `reference`'s and each of `distorted`'s
    /// scaler (`None` for a stream at the scoring size); `ladder`: a ladder backend of
    /// `distorted.len()` renditions, else a pair (`distorted.len()` 1).
    fn build(
        dev: &GpuDevice,
        layout: &Arc<Layout>,
        geometry: Geometry,
        reference: Option<&Arc<StreamScaler>>,
        distorted: &[Option<Arc<StreamScaler>>],
        ladder: bool,
    ) -> Result<Self, CudaError> {
        layout.check(&geometry)?;
        let (width, height, bpc) = geometry.triple();
        dev.context().bind_to_thread().during("cuCtxSetCurrent")?;
        let upload = dev.new_stream()?;
        let compute = dev.new_stream()?;
        let chroma_size = geometry.chroma.filter(|_| layout.reads_chroma());
        let streams: Vec<Option<&Arc<StreamScaler>>> = std::iter::once(reference)
            .chain(distorted.iter().map(Option::as_ref))
            .collect();
        let mut scalers = Vec::with_capacity(streams.len());
        let mut input_sizes = Vec::with_capacity(streams.len());
        let mut specs = Vec::with_capacity(streams.len());
        for s in &streams {
            let input = s.map_or((width, height), |s| s.luma.src());
            let scaler = match s {
                Some(s) => Some(GpuScaler::new(dev, &compute, s, &geometry, chroma_size)?),
                None => None,
            };
            // A stream's chroma arrives at its chroma scaler's source size, else at the
            // scoring chroma size.
            let chroma_in = s
                .and_then(|s| s.chroma.as_ref())
                .map(|c| c.src())
                .or(chroma_size);
            specs.push(StreamSpec {
                plane_bytes: input.0 * input.1 * sample_bytes(bpc),
                chroma: chroma_size.and(chroma_in).map(|c| (c, sample_bytes(bpc))),
                scaled: scaler.as_ref().map(|g: &GpuScaler| {
                    (
                        g.luma.output_len(),
                        g.chroma.as_ref().map(CudaPlaneScaler::output_len),
                    )
                }),
            });
            scalers.push(scaler);
            input_sizes.push(input);
        }
        let mut on_compute = Vec::new();
        let mut sides = Vec::new();
        let mut total = 0;
        for (i, inst) in layout.instances().iter().enumerate() {
            let mut ex = inst.cuda(dev, &compute, &geometry)?;
            if ladder {
                // A ladder's own scratch (ADM's reference bands, the renditions' lanes), once
                // per caps as the rest.
                ex.prepare_ladder(&compute, distorted.len())?;
            }
            if ex.side_stream() {
                let high = ex.high_priority();
                let stream = |dev: &GpuDevice| {
                    if high {
                        dev.new_priority_stream()
                    } else {
                        dev.new_stream()
                    }
                };
                if ladder {
                    // One per rendition, each with its own extractor.
                    let mut ex = Some(ex);
                    for k in 0..distorted.len() {
                        let ex = match ex.take() {
                            Some(e) => e,
                            None => inst.cuda(dev, &compute, &geometry)?,
                        };
                        sides.push(Side {
                            inst: i,
                            ex,
                            stream: stream(dev)?,
                            rendition: Some(k),
                        });
                    }
                } else {
                    sides.push(Side {
                        inst: i,
                        ex,
                        stream: stream(dev)?,
                        rendition: None,
                    });
                }
            } else {
                let at = total;
                total += ex.result_words();
                on_compute.push(OnCompute {
                    inst: i,
                    ex,
                    at,
                    previous: inst.needs().previous,
                    reference_only: inst.needs().reference_only,
                });
            }
        }
        let side_words: Vec<usize> = sides.iter().map(|s| s.ex.result_words()).collect();
        let lanes = if ladder {
            on_compute
                .iter()
                .map(|_| dev.new_stream())
                .collect::<Result<Vec<_>, _>>()?
        } else {
            Vec::new()
        };
        let mut slots = Vec::with_capacity(SLOTS);
        for _ in 0..SLOTS {
            slots.push(Slot::new(
                dev,
                &compute,
                &specs,
                total.max(1),
                &side_words,
                lanes.len(),
            )?);
        }
        // Allocations are stream-ordered on `compute`: finish them before `upload` writes
        // and the side streams run.
        compute
            .synchronize()
            .during("cuStreamSynchronize(backend init)")?;
        Ok(Self {
            slots,
            on_compute,
            layout: layout.clone(),
            _counted: std::iter::repeat_with(|| Counted::new(Handle::Stream))
                .take(2 + sides.len() + lanes.len())
                .collect(),
            upload,
            compute,
            sides,
            lanes,
            bpc,
            context: dev.context().cu_ctx() as usize,
            head: 0,
            in_flight: 0,
            submitted: 0,
            ready: VecDeque::with_capacity(SLOTS),
            ready_ladder: VecDeque::with_capacity(SLOTS),
            ladder: if ladder { distorted.len() } else { 0 },
            share_reference: true,
            holds: VecDeque::with_capacity((1 + distorted.len()) * SLOTS + 2),
            deferred: None,
            bytes_copied: 0,
            scalers,
            input_sizes,
            chroma_size,
        })
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
    fn check(&self, input: &LumaInput, side: usize) -> Result<(), FeatureError> {
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

    /// Copies the valid samples of a packed `u16` plane's rows into `dst` (packed, `bytes`
    /// per sample: 2 little-endian, or 1 for planes of at most 8 bits, whose samples are below
    /// 256 by [`LumaPlane`]'s contract), in parallel bands of rows. Returns the bytes written.
    fn stage_packed(p: &LumaPlane, dst: &mut [u8], bytes: usize) -> usize {
        let w = p.width;
        in_bands(dst, bytes * w, p.height, |first, band, row| {
            for (i, out) in band.chunks_exact_mut(row).enumerate() {
                let start = (first + i) * p.stride;
                let Some(src) = p.data.get(start..start + w) else {
                    continue;
                };
                if bytes == 1 {
                    for (d, v) in out.iter_mut().zip(src) {
                        *d = *v as u8;
                    }
                } else {
                    for (d, v) in out.chunks_exact_mut(2).zip(src) {
                        d.copy_from_slice(&v.to_le_bytes());
                    }
                }
            }
        })
    }

    /// Copies the valid bytes of each row of `h` into `dst` (packed), in parallel bands of
    /// rows: one thread copies at ~6-10 GB/s, short of what the upload takes (issue 6's
    /// measurements). Returns the bytes written.
    fn stage_host(h: &HostLuma, dst: &mut [u8]) -> usize {
        stage_rows(h.data, h.stride, h.width * h.layout.bytes, h.height, dst)
    }

    /// Puts one input plane where the kernels can read it and returns its descriptor: host
    /// rows through `staging` into `dev`, device memory of this context in place (its hold
    /// kept until frame `release_after` is collected), other device memory copied into `dev`.
    fn place(
        &mut self,
        input: LumaInput<'_>,
        staging: Staging,
        release_after: u64,
    ) -> Result<DevPlane, CudaError> {
        let bufs = &mut self.slots[staging.slot].streams[staging.stream];
        let placed = place_in(
            bufs,
            input,
            (&self.upload, self.context, self.bpc),
            staging.index,
            release_after,
        )?;
        self.bytes_copied += placed.bytes;
        self.holds.extend(placed.hold);
        Ok(placed.plane)
    }

    /// Stream `side`'s luma plane at the scoring size: `plane` itself, or (for a scaled
    /// stream) the slot's scaled plane, written by the scaler's kernels on the upload stream.
    fn scale_luma(
        &mut self,
        s: usize,
        side: usize,
        plane: DevPlane,
    ) -> Result<DevPlane, CudaError> {
        scale_luma_in(
            &mut self.slots[s].streams[side],
            &mut self.scalers[side],
            &self.upload,
            plane,
        )
    }

    /// The first CUDA steps of a frame going into slot `s` (the pair's and the ladder's):
    /// binds the context (tests/gpu_faults.rs counts init steps up to this bind) and makes the
    /// upload stream wait until the slot is free. The slot's device planes were last read by
    /// the motion kernel of the frame after its previous occupant, i.e. the frame submitted
    /// two before this one; its planes (and unpacked chroma) by its previous occupant's extra
    /// metrics, which the side streams ran before that frame's events. Returns the frame's
    /// number since creation or reset.
    fn start_frame(&self, s: usize) -> Result<u64, CudaError> {
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

    /// Enqueues one frame into slot `s`.
    fn enqueue(
        &mut self,
        s: usize,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaInput<'_>>,
        full: bool,
    ) -> Result<(), CudaError> {
        let index = self.start_frame(s)?;
        let has_motion = index > 0;
        let prev = (s + SLOTS - 1) % SLOTS;
        // The reference is read again by the next frame's motion: held one frame longer.
        let ref_plane = self.place(
            reference,
            Staging {
                slot: s,
                stream: 0,
                index,
            },
            index + 1,
        )?;
        // So is the distorted one when an instance reads the previous distorted frame
        // (`speed_temporal`).
        let keeps_distorted = self.layout.previous_distorted_reader().is_some();
        let dis_plane = self.place(
            distorted,
            Staging {
                slot: s,
                stream: 1,
                index,
            },
            if keeps_distorted { index + 1 } else { index },
        )?;
        // A scaled stream's luma is scaled on the upload stream, where its plane was placed:
        // measured on an H200 (vmaf_bench --renditions, 1080p reference, CUDA memory), +3-8%
        // per pair there against +8-12% with the scaling on the compute stream ahead of the
        // features.
        let ref_plane = self.scale_luma(s, 0, ref_plane)?;
        let dis_plane = self.scale_luma(s, 1, dis_plane)?;
        // Chroma only where a metric reads it, and only on frames that compute features:
        // placed and unpacked into the slot's packed planes on the upload stream.
        let mut chroma_dev = None;
        {
            let slot = &mut self.slots[s];
            if let (Some(c), [r, d, ..], Some(gpu), true) = (
                chroma.as_ref(),
                slot.streams.as_mut_slice(),
                slot.unpacked.first_mut(),
                full,
            ) {
                let (Some(rs), Some(ds)) = (r.chroma.as_mut(), d.chroma.as_mut()) else {
                    return Err(CudaError::Driver {
                        call: "chroma staging",
                        code: "internal: a slot without chroma staging".to_owned(),
                    });
                };
                let (pr, nr) = gpu.place(rs, &c.reference, 0, self.context, &self.upload)?;
                let (pd, nd) = gpu.place(ds, &c.distorted, 1, self.context, &self.upload)?;
                self.bytes_copied += (nr + nd) as u64;
                let mut unpacked = gpu.unpack(&self.upload, &pr, &pd)?;
                // A scaled stream's chroma goes through its chroma scaler into the slot.
                scale_chroma(
                    &mut self.scalers[0],
                    &mut r.scaled_chroma,
                    &self.upload,
                    &mut unpacked.reference,
                )?;
                scale_chroma(
                    &mut self.scalers[1],
                    &mut d.scaled_chroma,
                    &self.upload,
                    &mut unpacked.distorted,
                )?;
                if let Some((w, h)) = self.chroma_size {
                    unpacked.width = w;
                    unpacked.height = h;
                }
                chroma_dev = Some(unpacked);
            }
            slot.has_chroma = chroma_dev.is_some();
            slot.uploaded
                .record(&self.upload)
                .during("cuEventRecord(uploaded)")?;
            self.compute
                .wait(&slot.uploaded)
                .during("cuStreamWaitEvent(compute)")?;
        }

        // Motion against the previous frame's reference plane (still valid: its slot and
        // hold outlive this frame's kernels).
        // Instances that read the previous frame's reference (still valid: its slot and hold
        // outlive this frame's kernels) on every frame after the first; the others on full
        // frames.
        let frame = DevFrame {
            reference: ref_plane,
            distorted: dis_plane,
            previous: has_motion.then_some(self.slots[prev].ref_plane),
            previous_distorted: (has_motion && keeps_distorted)
                .then_some(self.slots[prev].dis_plane),
            chroma: chroma_dev.as_ref(),
        };
        {
            let slot = &mut self.slots[s];
            for c in &mut self.on_compute {
                // Instances reading earlier frames see every frame, the first of a run too
                // (the five-frame motion keeps it); they write results from the second on.
                if c.previous || full {
                    let n = c.ex.result_words();
                    let mut out = slot.dev_out.slice_mut(c.at..c.at + n);
                    c.ex.enqueue(&self.compute, &frame, &mut out)?;
                }
            }
        }
        {
            let slot = &mut self.slots[s];
            self.compute
                .memcpy_dtoh(&*slot.dev_out, &mut slot.host_out)
                .during("cuMemcpyDtoHAsync(results)")?;
            slot.done
                .record(&self.compute)
                .during("cuEventRecord(done)")?;
            for (side, out) in self.sides.iter_mut().zip(slot.sides.iter_mut()) {
                if full {
                    side.stream
                        .wait(&slot.uploaded)
                        .during("cuStreamWaitEvent(side)")?;
                    side.enqueue(out, &frame)?;
                }
                out.done
                    .record(&side.stream)
                    .during("cuEventRecord(extra done)")?;
            }
            slot.ref_plane = ref_plane;
            slot.dis_plane = dis_plane;
            slot.index = index;
            slot.full = full;
            slot.has_motion = has_motion;
        }
        Ok(())
    }

    /// Enqueues one ladder frame into slot `s` (checked by [`Backend::submit_set`]):
    /// the reference placed and scaled once, its chroma unpacked once; each rendition with
    /// full features placed into its own planes, scaled, its chroma unpacked; the
    /// reference-only instances once, every other instance once over those renditions.
    fn enqueue_ladder(&mut self, s: usize, frame: FrameSet<'_>) -> Result<(), CudaError> {
        let index = self.start_frame(s)?;
        let has_motion = index > 0;
        let n = self.ladder;
        let prev = (s + SLOTS - 1) % SLOTS;
        let FrameSet {
            reference,
            reference_chroma,
            renditions,
        } = frame;
        let ref_chroma = match reference_chroma {
            Some(FrameChroma::Components(c)) => Some(c),
            _ => None,
        };
        // The reference's chroma, once, when a rendition with full features brings chroma.
        let wants_chroma = ref_chroma.is_some()
            && renditions.iter().any(|r| r.full && r.chroma.is_some())
            && !self.slots[s].unpacked.is_empty();
        let mut ref_cplanes = None;
        if let (Some(c), true) = (ref_chroma.as_ref(), wants_chroma) {
            let slot = &mut self.slots[s];
            let (Some(gpu), Some(r)) = (slot.unpacked.first_mut(), slot.streams.first_mut()) else {
                return Err(internal("a ladder slot without reference chroma"));
            };
            let Some(staging) = r.chroma.as_mut() else {
                return Err(internal("a ladder slot without reference chroma staging"));
            };
            let (pr, nr) = gpu.place(staging, c, 0, self.context, &self.upload)?;
            self.bytes_copied += nr as u64;
            let mut planes = gpu.unpack_one(&self.upload, 0, &pr)?;
            scale_chroma(
                &mut self.scalers[0],
                &mut r.scaled_chroma,
                &self.upload,
                &mut planes,
            )?;
            ref_cplanes = Some(planes);
        }
        // The reference's luma and the renditions with full features (placed, scaled, their
        // chroma unpacked), each by a job of its own beside the others (`run_beside`): one
        // thread staging every plane's rows in turn made a ladder from system memory slower
        // than separate elements, which each stage their own (issue 30). A job touches only
        // its stream's buffers, scalers and chroma unpacking; the copies and kernels of all
        // of them go to the upload stream, each job's in its own order. (The reference's
        // chroma, above, comes first: it shares its unpacking with rendition 0's.)
        let (context, bpc) = (self.context, self.bpc);
        let chroma_size = self.chroma_size.unwrap_or_default();
        let upload = &self.upload;
        let slot = &mut self.slots[s];
        slot.occupants.clear();
        let (Some((ref_bufs, rend_bufs)), Some((ref_scaler, rend_scalers))) = (
            slot.streams.split_first_mut(),
            self.scalers.split_first_mut(),
        ) else {
            return Err(internal("a ladder slot without reference buffers"));
        };
        let mut parts: Vec<Option<RenditionParts<'_>>> = rend_bufs
            .iter_mut()
            .zip(rend_scalers.iter_mut())
            .map(|(bufs, scaler)| {
                Some(RenditionParts {
                    bufs,
                    scaler,
                    unpacked: None,
                })
            })
            .collect();
        for (part, gpu) in parts.iter_mut().zip(slot.unpacked.iter_mut()) {
            if let Some(p) = part.as_mut() {
                p.unpacked = Some(gpu);
            }
        }
        let mut results: Vec<Option<PlacedRendition>> = renditions.iter().map(|_| None).collect();
        // `results[i]` belongs to `renditions[i]`, as `slot.occupants[i]`.
        let mut ref_result: Option<Placed> = None;
        let mut jobs: Vec<LaunchJob<'_>> = Vec::with_capacity(renditions.len() + 1);
        // The reference's luma, beside the renditions (its rows are the largest to stage; it
        // is read again by the next frame's motion, so held one frame longer).
        {
            let ref_out = &mut ref_result;
            jobs.push(Box::new(move || {
                let mut placed = place_in(
                    ref_bufs,
                    reference,
                    (upload, context, bpc),
                    index,
                    index + 1,
                )?;
                placed.plane = scale_luma_in(ref_bufs, ref_scaler, upload, placed.plane)?;
                *ref_out = Some(placed);
                Ok(())
            }));
        }
        for (r, result) in renditions.into_iter().zip(results.iter_mut()) {
            slot.occupants.push(Occupant {
                rendition: r.rendition,
                full: r.full,
                has_chroma: false,
            });
            if !r.full {
                continue;
            }
            let Some(part) = parts.get_mut(r.rendition).and_then(Option::take) else {
                return Err(internal("a ladder rendition without its buffers"));
            };
            jobs.push(Box::new(move || {
                let luma = r.luma;
                let chroma = match r.chroma.as_ref() {
                    Some(FrameChroma::Components(c)) => ref_cplanes.map(|reference| (c, reference)),
                    _ => None,
                };
                let RenditionParts {
                    bufs,
                    scaler,
                    unpacked,
                } = part;
                let mut placed = place_in(bufs, luma, (upload, context, bpc), index, index)?;
                placed.plane = scale_luma_in(bufs, scaler, upload, placed.plane)?;
                let mut cdev = None;
                if let (Some((c, reference)), Some(gpu)) = (chroma, unpacked) {
                    let Some(staging) = bufs.chroma.as_mut() else {
                        return Err(internal("a ladder slot without rendition chroma staging"));
                    };
                    let (pd, nd) = gpu.place(staging, c, 1, context, upload)?;
                    placed.bytes += nd as u64;
                    let mut planes = gpu.unpack_one(upload, 1, &pd)?;
                    scale_chroma(scaler, &mut bufs.scaled_chroma, upload, &mut planes)?;
                    cdev = Some(ChromaDev {
                        reference,
                        distorted: planes,
                        width: chroma_size.0,
                        height: chroma_size.1,
                    });
                }
                *result = Some(PlacedRendition {
                    placed,
                    chroma: cdev,
                });
                Ok(())
            }));
        }
        run_beside(jobs)?;
        let Some(placed_ref) = ref_result else {
            return Err(internal("the ladder's reference was not placed"));
        };
        self.bytes_copied += placed_ref.bytes;
        self.holds.extend(placed_ref.hold);
        let ref_plane = placed_ref.plane;
        let mut computed: Vec<(usize, DevPlane, Option<ChromaDev>)> =
            Vec::with_capacity(results.len());
        for (result, occupant) in results.into_iter().zip(slot.occupants.iter_mut()) {
            let Some(PlacedRendition { placed, chroma }) = result else {
                continue;
            };
            self.bytes_copied += placed.bytes;
            self.holds.extend(placed.hold);
            occupant.has_chroma = chroma.is_some();
            computed.push((occupant.rendition, placed.plane, chroma));
        }
        let slot = &mut self.slots[s];
        slot.has_chroma = ref_cplanes.is_some();
        // Every result word of the frame zeroed at once: the instances' ladder kernels add to
        // them (`CudaExtractor::enqueue_ladder`'s contract).
        self.upload
            .memset_zeros(&mut *slot.dev_out)
            .during("cuMemsetD8Async(ladder results)")?;
        slot.uploaded
            .record(&self.upload)
            .during("cuEventRecord(uploaded)")?;
        self.compute
            .wait(&slot.uploaded)
            .during("cuStreamWaitEvent(compute)")?;
        let previous = has_motion.then_some(self.slots[prev].ref_plane);
        let frames: Vec<DevFrame> = computed
            .iter()
            .map(|(_, plane, c)| DevFrame {
                reference: ref_plane,
                distorted: *plane,
                previous,
                previous_distorted: None,
                chroma: c.as_ref(),
            })
            .collect();
        let ks: Vec<usize> = computed.iter().map(|(k, _, _)| *k).collect();
        let share = self.share_reference;
        let slot = &mut self.slots[s];
        let (uploaded, lane_done) = (&slot.uploaded, &slot.lane_done);
        // Each instance's words for all renditions, disjoint ranges of the slot's words.
        let ranges: Vec<(usize, usize)> = self
            .on_compute
            .iter()
            .map(|c| (c.at * n, c.ex.result_words() * n))
            .collect();
        let (frames, ks) = (&frames, &ks);
        // Launching is what limits a ladder on one thread (about 8 µs of CPU per kernel on
        // the H200 host, 100+ kernels per frame with vmaf_v0.6.1, where five elements launch
        // on five threads): each instance's lane and each side stream is enqueued by a job of
        // its own, beside the others (`run_beside`). Every job only touches its own
        // extractor, stream, event and words, and waits for the uploads on its stream.
        with_views(
            slot.dev_out.slice_mut(..),
            &ranges,
            |views| -> Result<(), CudaError> {
                let mut jobs: Vec<LaunchJob<'_>> = Vec::with_capacity(views.len() + 8);
                for ((j, c), words) in self.on_compute.iter_mut().enumerate().zip(views) {
                    let w = c.ex.result_words();
                    let (Some(lane), Some(done)) = (self.lanes.get(j), lane_done.get(j)) else {
                        return Err(internal("a ladder instance without its lane"));
                    };
                    jobs.push(Box::new(move || {
                        // Each instance on its lane, after the uploads; its scratch is used
                        // in frame order there.
                        lane.wait(uploaded).during("cuStreamWaitEvent(lane)")?;
                        if c.reference_only {
                            // Once per ladder frame (every frame, as the pair's motion), into
                            // the first rendition's words; the distorted plane is not read.
                            let Some(mut out) = words.chunks_exact_mut(w).next() else {
                                return Err(internal("a ladder instance without words"));
                            };
                            let f = DevFrame {
                                reference: ref_plane,
                                distorted: ref_plane,
                                previous,
                                previous_distorted: None,
                                chroma: None,
                            };
                            c.ex.enqueue(lane, &f, &mut out)?;
                        } else if !frames.is_empty() {
                            let mut all: Vec<Option<CudaViewMut<u64>>> =
                                words.chunks_exact_mut(w).map(Some).collect();
                            let mut outs: Vec<CudaViewMut<u64>> = ks
                                .iter()
                                .filter_map(|&k| all.get_mut(k).and_then(Option::take))
                                .collect();
                            if outs.len() != ks.len() {
                                return Err(internal("ladder result words"));
                            }
                            if share {
                                c.ex.enqueue_ladder(lane, frames, &mut outs)?;
                            } else {
                                for (f, out) in frames.iter().zip(outs.iter_mut()) {
                                    c.ex.enqueue(lane, f, out)?;
                                }
                            }
                        }
                        done.record(lane).during("cuEventRecord(lane done)")
                    }));
                }
                for (side, out) in self.sides.iter_mut().zip(slot.sides.iter_mut()) {
                    // Its rendition's frame, when it computes features this time.
                    let frame = side
                        .rendition
                        .and_then(|k| ks.iter().position(|&x| x == k))
                        .and_then(|i| frames.get(i));
                    jobs.push(Box::new(move || {
                        if let Some(frame) = frame {
                            side.stream
                                .wait(uploaded)
                                .during("cuStreamWaitEvent(side)")?;
                            side.enqueue(out, frame)?;
                        }
                        out.done
                            .record(&side.stream)
                            .during("cuEventRecord(extra done)")
                    }));
                }
                run_beside(jobs)
            },
        )?;
        for done in lane_done {
            self.compute
                .wait(done)
                .during("cuStreamWaitEvent(compute, lane)")?;
        }
        self.compute
            .memcpy_dtoh(&*slot.dev_out, &mut slot.host_out)
            .during("cuMemcpyDtoHAsync(results)")?;
        slot.done
            .record(&self.compute)
            .during("cuEventRecord(done)")?;
        slot.ref_plane = ref_plane;
        slot.index = index;
        slot.full = !frames.is_empty();
        slot.has_motion = has_motion;
        Ok(())
    }

    /// Waits for (`wait`) or checks the oldest frame's events; whether it is done.
    fn oldest_done(&self, wait: bool) -> Result<bool, CudaError> {
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
    fn release_oldest(&mut self, index: u64) {
        self.head = (self.head + 1) % SLOTS;
        self.in_flight -= 1;
        while self.holds.front().is_some_and(|h| h.release_after <= index) {
            self.holds.pop_front();
        }
    }

    /// Takes the oldest frame's features out of its slot, waiting for it if `wait`.
    fn finish_oldest(&mut self, wait: bool) -> Result<Option<RawFeatures>, CudaError> {
        if self.in_flight == 0 || !self.oldest_done(wait)? {
            return Ok(None);
        }
        let slot = &self.slots[self.head];
        let words = slot
            .host_out
            .as_slice()
            .during("cuEventSynchronize(results)")?;
        let mut raw = RawFeatures::new(&self.layout);
        for c in &self.on_compute {
            let runs = if c.previous {
                slot.has_motion
            } else {
                slot.full
            };
            if runs {
                let n = c.ex.result_words();
                let w = words.get(c.at..c.at + n).unwrap_or(&[]);
                c.ex.read(w, slot.has_chroma, raw.of_mut(c.inst));
            }
        }
        if slot.full {
            for (side, out) in self.sides.iter().zip(&slot.sides) {
                let words = out
                    .host_out
                    .as_slice()
                    .during("cuEventSynchronize(extra results)")?;
                side.ex.read(words, slot.has_chroma, raw.of_mut(side.inst));
            }
        }
        let index = slot.index;
        self.release_oldest(index);
        Ok(Some(raw))
    }

    /// The oldest ladder frame's features, each submitted rendition's from its words (the
    /// reference-only instances' from the first rendition's), waiting for it if `wait`.
    fn finish_oldest_ladder(&mut self, wait: bool) -> Result<Option<SetFeatures>, CudaError> {
        if self.in_flight == 0 || !self.oldest_done(wait)? {
            return Ok(None);
        }
        let n = self.ladder;
        let slot = &self.slots[self.head];
        let words = slot
            .host_out
            .as_slice()
            .during("cuEventSynchronize(results)")?;
        let mut features = Vec::with_capacity(slot.occupants.len());
        for o in &slot.occupants {
            let mut raw = RawFeatures::new(&self.layout);
            for c in &self.on_compute {
                let w = c.ex.result_words();
                let (runs, chunk, chroma) = if c.reference_only {
                    (!c.previous || slot.has_motion, 0, false)
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
                for (side, out) in self.sides.iter().zip(&slot.sides) {
                    if side.rendition != Some(o.rendition) {
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

    fn sync_all(&self) -> Result<(), CudaError> {
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

/// One rendition's share of a ladder slot, handed to the job that places it: its staging and
/// device buffers, its scaler to the scoring size, its chroma unpacking.
struct RenditionParts<'a> {
    bufs: &'a mut StreamBufs,
    scaler: &'a mut Option<GpuScaler>,
    unpacked: Option<&'a mut ChromaGpu>,
}

/// What placing one rendition gave: its luma at the scoring size (with the bytes copied for
/// luma and chroma, and the buffer to hold), its chroma with the reference's.
struct PlacedRendition {
    placed: Placed,
    chroma: Option<ChromaDev>,
}

/// `plane` at the scoring size: itself, or (a stream with a scaler) the stream's scaled
/// plane in `bufs`, written by the scaler's kernels on `upload`.
fn scale_luma_in(
    bufs: &mut StreamBufs,
    scaler: &mut Option<GpuScaler>,
    upload: &Arc<CudaStream>,
    plane: DevPlane,
) -> Result<DevPlane, CudaError> {
    let (Some(scaler), Some(out)) = (scaler.as_mut(), bufs.scaled.as_mut()) else {
        return Ok(plane);
    };
    let n = scaler.luma.output_len();
    scaler
        .luma
        .enqueue(upload, &plane, &mut out.slice_mut(0..n))
}

/// What [`place_in`] gave: the plane's descriptor, the bytes copied to the device, and the
/// input buffer to keep until its frame is collected.
struct Placed {
    plane: DevPlane,
    bytes: u64,
    hold: Option<Hold>,
}

/// [`CudaBackend::place`] into one stream's buffers of a slot (`bufs`), with the backend's
/// upload stream, `CUcontext` and bits per sample (`ctx`): host rows through the pinned
/// staging into the device plane, device memory of this context in place (held until frame
/// `release_after` is collected), other device memory copied (held until frame `index`).
/// Free of the backend, so that a ladder's renditions can be placed beside each other.
fn place_in(
    bufs: &mut StreamBufs,
    input: LumaInput<'_>,
    (upload_stream, context, bpc): (&Arc<CudaStream>, usize, u32),
    index: u64,
    release_after: u64,
) -> Result<Placed, CudaError> {
    let (host, dev) = (&mut bufs.host, &mut bufs.dev);
    let dev_ptr = dev.device_ptr(upload_stream).0;
    let upload = |bytes: usize, host: &PinnedHostSlice<u8>| -> Result<(), CudaError> {
        let src = host
            .as_slice()
            .during("cuEventSynchronize(staging)")?
            .get(..bytes)
            // `ok_or_else`: the error text is made only on failure (an eager `ok_or` put
            // a 30-byte allocation in every upload; tests/gpu_lessons.rs found it).
            .ok_or_else(|| CudaError::Driver {
                call: "cuMemcpyHtoDAsync(luma)",
                code: "staging smaller than the plane".to_owned(),
            })?;
        // SAFETY: `dev` holds width * height * sample_bytes >= bytes bytes (`check`); the
        // pinned source lives in the slot until the upload is complete (the slot is reused
        // only after its frame was collected, which implies the upload event passed).
        unsafe {
            cudarc::driver::result::memcpy_htod_async(dev_ptr, src, upload_stream.cu_stream())
        }
        .during("cuMemcpyHtoDAsync(luma)")
    };
    let placed = |plane, bytes: usize, hold| Placed {
        plane,
        bytes: bytes as u64,
        hold,
    };
    match input {
        LumaInput::Packed(p) => {
            let dst = host.as_mut_slice().during("cuEventSynchronize(staging)")?;
            let bytes = sample_bytes(bpc);
            let n = CudaBackend::stage_packed(&p, dst, bytes);
            upload(n, host)?;
            let layout = if bytes == 1 {
                SampleLayout {
                    bytes: 1,
                    down: 0,
                    depth: 8,
                    up: 0,
                }
            } else {
                SampleLayout::RIGHT_ALIGNED_U16
            };
            Ok(placed(
                DevPlane::new(dev_ptr, bytes * p.width, layout),
                n,
                None,
            ))
        }
        LumaInput::Host(h) => {
            let dst = host.as_mut_slice().during("cuEventSynchronize(staging)")?;
            let n = CudaBackend::stage_host(&h, dst);
            upload(n, host)?;
            Ok(placed(
                DevPlane::new(dev_ptr, h.width * h.layout.bytes, h.layout),
                n,
                None,
            ))
        }
        LumaInput::Device(d) => {
            let DeviceLuma {
                ptr,
                pitch,
                width,
                height,
                layout,
                context: from,
                hold,
            } = d;
            let row = width * layout.bytes;
            let aligned = layout.bytes == 1 || (ptr % 2 == 0 && pitch % 2 == 0);
            if from == context && aligned && pitch >= row {
                let hold = Hold {
                    release_after,
                    _keep: hold,
                };
                return Ok(placed(DevPlane::new(ptr, pitch, layout), 0, Some(hold)));
            }
            // Another context (or device): one pitched copy of the valid rows. The
            // destination holds width * height * sample_bytes >= row * height bytes
            // (`check`); `hold` keeps the source alive until this frame is collected.
            peer_copy(
                (ptr, from, pitch),
                (dev_ptr, context, row),
                (row, height),
                upload_stream,
            )?;
            let hold = Hold {
                release_after: index,
                _keep: hold,
            };
            Ok(placed(
                DevPlane::new(dev_ptr, row, layout),
                row * height,
                Some(hold),
            ))
        }
    }
}

/// A scaled stream's chroma `planes` through its chroma scaler (if any) into `outs`, on
/// `upload`; `planes` then describe the scaled planes.
fn scale_chroma(
    scaler: &mut Option<GpuScaler>,
    outs: &mut Option<[DeviceAlloc<u16>; 2]>,
    upload: &CudaStream,
    planes: &mut [DevPlane; 2],
) -> Result<(), CudaError> {
    let (Some(sc), Some(outs)) = (
        scaler.as_mut().and_then(|g| g.chroma.as_mut()),
        outs.as_mut(),
    ) else {
        return Ok(());
    };
    for (plane, out) in planes.iter_mut().zip(outs.iter_mut()) {
        let n = sc.output_len();
        *plane = sc.enqueue(upload, plane, &mut out.slice_mut(0..n))?;
    }
    Ok(())
}

/// Bytes per sample of the slots' planes: 1 up to 8 bits, else 2.
fn sample_bytes(bpc: u32) -> usize {
    if bpc > 8 {
        2
    } else {
        1
    }
}

/// Which staging and device plane of which slot an input goes through.
#[derive(Clone, Copy)]
struct Staging {
    slot: usize,
    /// 0: the reference; `1 + k`: distorted stream `k`.
    stream: usize,
    /// The frame's number: a copied plane's hold goes when this frame is collected.
    index: u64,
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
        self.ready_ladder.clear();
        self.holds.clear();
    }

    fn submit_set(&mut self, set: FrameSet<'_>) -> Result<(), EngineError> {
        if self.ladder > 0 {
            return self.ladder_submit(set);
        }
        let FrameSet {
            reference,
            reference_chroma,
            renditions,
        } = set;
        let mut renditions = renditions.into_iter();
        let (Some(d), None) = (renditions.next(), renditions.next()) else {
            return Err(EngineError::Backend {
                backend: "cuda",
                message: "internal: a pair backend takes one rendition per frame set".into(),
            });
        };
        match (reference_chroma, d.chroma) {
            (None, None) => self.pair_components(reference, d.luma, None, d.full),
            (Some(FrameChroma::Components(r)), Some(FrameChroma::Components(c))) => self
                .pair_components(
                    reference,
                    d.luma,
                    Some(ChromaInput {
                        reference: r,
                        distorted: c,
                    }),
                    d.full,
                ),
            _ => Err(EngineError::Backend {
                backend: "cuda",
                message: "the CUDA backend takes chroma as the buffers' components on both \
                          sides of the pair (FrameChroma::Components)"
                    .into(),
            }),
        }
    }

    fn collect_set(&mut self, wait: bool) -> Result<Option<SetFeatures>, EngineError> {
        if self.ladder > 0 {
            return self.ladder_collect(wait);
        }
        Ok(self.pair_collect(wait)?.map(|raw| vec![(0, raw)]))
    }
}

impl CudaBackend {
    fn pair_components(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaInput<'_>>,
        full: bool,
    ) -> Result<(), EngineError> {
        if let Some(e) = self.deferred.take() {
            return Err(engine_err(e));
        }
        if self.ladder > 0 {
            return Err(EngineError::Backend {
                backend: "cuda",
                message: "internal: a ladder backend takes ladder frames only".into(),
            });
        }
        self.check(&reference, 0)?;
        self.check(&distorted, 1)?;
        if self.in_flight == SLOTS {
            // Every slot busy (a caller that does not collect): finish the oldest.
            if let Some(raw) = self.finish_oldest(true).map_err(engine_err)? {
                self.ready.push_back(raw);
            }
        }
        let s = (self.head + self.in_flight) % SLOTS;
        self.enqueue(s, reference, distorted, chroma, full)
            .map_err(engine_err)?;
        self.in_flight += 1;
        self.submitted += 1;
        Ok(())
    }

    fn pair_collect(&mut self, wait: bool) -> Result<Option<RawFeatures>, EngineError> {
        if let Some(e) = self.deferred.take() {
            return Err(engine_err(e));
        }
        if let Some(raw) = self.ready.pop_front() {
            return Ok(Some(raw));
        }
        if self.ladder > 0 {
            return Err(EngineError::Backend {
                backend: "cuda",
                message: "internal: a ladder backend's frames are collected as ladder frames"
                    .into(),
            });
        }
        self.finish_oldest(wait).map_err(engine_err)
    }

    fn ladder_submit(&mut self, frame: FrameSet<'_>) -> Result<(), EngineError> {
        if let Some(e) = self.deferred.take() {
            return Err(engine_err(e));
        }
        let refuse = |message: &str| EngineError::Backend {
            backend: "cuda",
            message: message.to_owned(),
        };
        if self.ladder == 0 {
            return Err(refuse("internal: not a ladder backend"));
        }
        self.check(&frame.reference, 0)?;
        let packed = |c: &Option<FrameChroma>| matches!(c, Some(FrameChroma::Packed(_)));
        if packed(&frame.reference_chroma) || frame.renditions.iter().any(|r| packed(&r.chroma)) {
            return Err(refuse(
                "the CUDA backend takes chroma as the buffers' components \
                 (FrameChroma::Components), not packed planes",
            ));
        }
        let mut seen = 0u64;
        for r in &frame.renditions {
            let k = r.rendition;
            if k >= self.ladder || (k < 64 && seen & (1 << k) != 0) {
                return Err(refuse(
                    "internal: rendition slot outside the ladder or repeated",
                ));
            }
            if k < 64 {
                seen |= 1 << k;
            }
            self.check(&r.luma, 1 + k)?;
        }
        if self.in_flight == SLOTS {
            // Every slot busy (a caller that does not collect): finish the oldest.
            if let Some(f) = self.finish_oldest_ladder(true).map_err(engine_err)? {
                self.ready_ladder.push_back(f);
            }
        }
        let s = (self.head + self.in_flight) % SLOTS;
        self.enqueue_ladder(s, frame).map_err(engine_err)?;
        self.in_flight += 1;
        self.submitted += 1;
        Ok(())
    }

    fn ladder_collect(&mut self, wait: bool) -> Result<Option<SetFeatures>, EngineError> {
        if let Some(e) = self.deferred.take() {
            return Err(engine_err(e));
        }
        if let Some(f) = self.ready_ladder.pop_front() {
            return Ok(Some(f));
        }
        self.finish_oldest_ladder(wait).map_err(engine_err)
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
