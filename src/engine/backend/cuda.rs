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

use cudarc::driver::{CudaStream, DevicePtr, PinnedHostSlice};

use crate::cuda::chroma::peer_copy;
use crate::cuda::context::GpuDevice;
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::fault::{Counted, Handle};
use crate::cuda::plane::DevPlane;
use crate::cuda::staging::{in_bands, stage_rows};
use crate::engine::scale::cuda::CudaPlaneScaler;
use crate::engine::scale::{InputScaling, LadderScaling};
use crate::engine::scorer::{Backend, EngineError};
use crate::features::adm::AdmConfig;
use crate::features::vif::VifConfig;
use crate::features::{vmaf_layout, DevFrame, Geometry, Layout, RawFeatures};
use crate::video::frame::{
    ChromaInput, DeviceLuma, FeatureError, HostLuma, LumaInput, LumaPlane, SampleLayout,
};

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
    slots: Vec<Slot>,
    /// The instances on the compute stream, in layout order.
    on_compute: Vec<OnCompute>,
    /// The layout computed.
    layout: Arc<Layout>,
    upload: Arc<CudaStream>,
    compute: Arc<CudaStream>,
    /// One stream per instance that asks for its own.
    sides: Vec<Side>,
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
    /// Input buffers still read by kernels in flight, in release order.
    holds: VecDeque<Hold>,
    /// A failure of `reset` (which cannot return one), reported by the next call.
    deferred: Option<CudaError>,
    /// Bytes copied to the device for input planes since creation (uploads and peer copies).
    bytes_copied: u64,
    /// Each stream's scaler to the scoring size ([0]: reference, [1]: distorted; `None` for
    /// a stream at it), run on the upload stream.
    scalers: [Option<GpuScaler>; 2],
    /// The luma size each stream arrives at.
    input_sizes: [(usize, usize); 2],
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
        layout.check(&geometry)?;
        let (width, height, bpc) = geometry.triple();
        dev.context().bind_to_thread().during("cuCtxSetCurrent")?;
        let upload = dev.new_stream()?;
        let compute = dev.new_stream()?;
        let chroma_size = geometry.chroma.filter(|_| layout.reads_chroma());
        let input_sizes = scaling.input_sizes((width, height));
        let chroma_inputs = scaling.chroma_sizes(chroma_size);
        let mut scalers: [Option<GpuScaler>; 2] = [None, None];
        for (i, s) in [&scaling.reference, &scaling.distorted]
            .into_iter()
            .enumerate()
        {
            let Some(s) = s else { continue };
            if s.luma.dst() != (width, height) {
                let (w, h) = s.luma.dst();
                return Err(CudaError::Geometry(FeatureError::wrong_size(
                    "scale",
                    (width, height, bpc),
                    (w, h),
                )));
            }
            let chroma = match (s.chroma.as_ref(), chroma_size) {
                (Some(c), Some(_)) => Some(CudaPlaneScaler::new(dev, &compute, c, bpc)?),
                _ => None,
            };
            scalers[i] = Some(GpuScaler {
                luma: CudaPlaneScaler::new(dev, &compute, &s.luma, bpc)?,
                chroma,
            });
        }
        let scaled_sizes = scalers.each_ref().map(|s| {
            s.as_ref().map(|s| {
                (
                    s.luma.output_len(),
                    s.chroma.as_ref().map(|c| c.output_len()),
                )
            })
        });
        let mut on_compute = Vec::new();
        let mut sides = Vec::new();
        let mut total = 0;
        for (i, inst) in layout.instances().iter().enumerate() {
            let ex = inst.cuda(dev, &compute, &geometry)?;
            if ex.side_stream() {
                let stream = if ex.high_priority() {
                    dev.new_priority_stream()?
                } else {
                    dev.new_stream()?
                };
                sides.push(Side {
                    inst: i,
                    ex,
                    stream,
                });
            } else {
                let at = total;
                total += ex.result_words();
                on_compute.push(OnCompute {
                    inst: i,
                    ex,
                    at,
                    previous: inst.needs().previous,
                });
            }
        }
        let side_words: Vec<usize> = sides.iter().map(|s| s.ex.result_words()).collect();
        let mut slots = Vec::with_capacity(SLOTS);
        for _ in 0..SLOTS {
            let bytes = |(w, h): (usize, usize)| w * h * sample_bytes(bpc);
            let chroma = match (chroma_inputs, chroma_size) {
                ([Some(r), Some(d)], Some(_)) => Some(([r, d], sample_bytes(bpc))),
                _ => None,
            };
            slots.push(Slot::new(
                dev,
                &compute,
                [bytes(input_sizes[0]), bytes(input_sizes[1])],
                total.max(1),
                chroma,
                &side_words,
                scaled_sizes,
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
                .take(2 + sides.len())
                .collect(),
            upload,
            compute,
            sides,
            bpc,
            context: dev.context().cu_ctx() as usize,
            head: 0,
            in_flight: 0,
            submitted: 0,
            ready: VecDeque::with_capacity(SLOTS),
            holds: VecDeque::with_capacity(2 * SLOTS + 2),
            deferred: None,
            bytes_copied: 0,
            scalers,
            input_sizes,
            chroma_size,
        })
    }

    /// A ladder backend ([`crate::engine::ladder`]): one reference against
    /// `scaling.renditions.len()` rendition slots, each rendition placed at its own size and
    /// scaled by its scaler (if any) to `geometry`'s size; every buffer allocated here.
    ///
    /// Errors: as [`CudaBackend::new_scaled`].
    pub fn new_ladder(
        dev: &GpuDevice,
        layout: &Arc<Layout>,
        geometry: Geometry,
        scaling: LadderScaling,
    ) -> Result<Self, CudaError> {
        // Filled in by the ladder change of the CUDA backend.
        let _ = (dev, layout, geometry, scaling);
        Err(CudaError::Driver {
            call: "new_ladder",
            code: "not implemented yet".into(),
        })
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

    /// Checks a plane's size against the size stream `side` (0: reference, 1: distorted)
    /// arrives at: the backend's geometry, or its scaler's source size.
    fn check(&self, input: &LumaInput, side: usize) -> Result<(), FeatureError> {
        let (width, height) = input.size();
        let (ew, eh) = self.input_sizes[side];
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
        let s = staging.slot;
        let slot = &mut self.slots[s];
        let (host, dev) = if staging.reference {
            (&mut slot.host_ref, &mut slot.dev_ref)
        } else {
            (&mut slot.host_dis, &mut slot.dev_dis)
        };
        let dev_ptr = dev.device_ptr(&self.upload).0;
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
            // SAFETY: `dev` holds width * height * sample_bytes >= bytes bytes (`check`); the pinned source lives
            // in the slot until the upload is complete (the slot is reused only after its
            // frame was collected, which implies the upload event passed).
            unsafe {
                cudarc::driver::result::memcpy_htod_async(dev_ptr, src, self.upload.cu_stream())
            }
            .during("cuMemcpyHtoDAsync(luma)")
        };
        match input {
            LumaInput::Packed(p) => {
                let dst = host.as_mut_slice().during("cuEventSynchronize(staging)")?;
                let bytes = sample_bytes(self.bpc);
                let n = Self::stage_packed(&p, dst, bytes);
                upload(n, host)?;
                self.bytes_copied += n as u64;
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
                Ok(DevPlane::new(dev_ptr, bytes * p.width, layout))
            }
            LumaInput::Host(h) => {
                let dst = host.as_mut_slice().during("cuEventSynchronize(staging)")?;
                let n = Self::stage_host(&h, dst);
                upload(n, host)?;
                self.bytes_copied += n as u64;
                Ok(DevPlane::new(dev_ptr, h.width * h.layout.bytes, h.layout))
            }
            LumaInput::Device(d) => {
                let DeviceLuma {
                    ptr,
                    pitch,
                    width,
                    height,
                    layout,
                    context,
                    hold,
                } = d;
                let row = width * layout.bytes;
                let aligned = layout.bytes == 1 || (ptr % 2 == 0 && pitch % 2 == 0);
                if context == self.context && aligned && pitch >= row {
                    self.holds.push_back(Hold {
                        release_after,
                        _keep: hold,
                    });
                    return Ok(DevPlane::new(ptr, pitch, layout));
                }
                // Another context (or device): one pitched copy of the valid rows. The
                // destination holds width * height * sample_bytes >= row * height bytes
                // (`check`); `hold` keeps the source alive until this frame is collected.
                peer_copy(
                    (ptr, context, pitch),
                    (dev_ptr, self.context, row),
                    (row, height),
                    &self.upload,
                )?;
                self.bytes_copied += (row * height) as u64;
                self.holds.push_back(Hold {
                    release_after: staging.index,
                    _keep: hold,
                });
                Ok(DevPlane::new(dev_ptr, row, layout))
            }
        }
    }

    /// Stream `side`'s luma plane at the scoring size: `plane` itself, or (for a scaled
    /// stream) the slot's scaled plane, written by the scaler's kernels on the upload stream.
    fn scale_luma(
        &mut self,
        s: usize,
        side: usize,
        plane: DevPlane,
    ) -> Result<DevPlane, CudaError> {
        let (Some(scaler), Some(out)) = (
            self.scalers[side].as_mut(),
            self.slots[s].scaled[side].as_mut(),
        ) else {
            return Ok(plane);
        };
        let n = scaler.luma.output_len();
        scaler
            .luma
            .enqueue(&self.upload, &plane, &mut out.slice_mut(0..n))
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
        // The first CUDA step of each frame (tests/gpu_faults.rs counts init steps up to it).
        self.compute
            .context()
            .bind_to_thread()
            .during("cuCtxSetCurrent(frame)")?;
        let index = self.submitted;
        let has_motion = index > 0;
        let prev = (s + SLOTS - 1) % SLOTS;
        let before_prev = (s + SLOTS - 2) % SLOTS;
        // The slot's device planes were last read by the motion kernel of the frame after
        // its previous occupant, i.e. the frame submitted two before this one; its planes
        // (and unpacked chroma) by its previous occupant's extra metrics, which the side
        // streams ran before that frame's events.
        if index >= 2 {
            let bp = &self.slots[before_prev];
            self.upload
                .wait(&bp.done)
                .during("cuStreamWaitEvent(upload)")?;
            for side in &bp.sides {
                self.upload
                    .wait(&side.done)
                    .during("cuStreamWaitEvent(upload, side)")?;
            }
        }
        // The reference is read again by the next frame's motion: held one frame longer.
        let ref_plane = self.place(
            reference,
            Staging {
                slot: s,
                reference: true,
                index,
            },
            index + 1,
        )?;
        let dis_plane = self.place(
            distorted,
            Staging {
                slot: s,
                reference: false,
                index,
            },
            index,
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
            if let (Some(c), Some([r, d]), Some(gpu), true) = (
                chroma.as_ref(),
                slot.chroma.as_mut(),
                slot.unpacked.as_mut(),
                full,
            ) {
                let (pr, nr) = gpu.place(r, &c.reference, 0, self.context, &self.upload)?;
                let (pd, nd) = gpu.place(d, &c.distorted, 1, self.context, &self.upload)?;
                self.bytes_copied += (nr + nd) as u64;
                let mut unpacked = gpu.unpack(&self.upload, &pr, &pd)?;
                // A scaled stream's chroma goes through its chroma scaler into the slot.
                for (side, scaler) in self.scalers.iter_mut().enumerate() {
                    let (Some(sc), Some(outs)) = (
                        scaler.as_mut().and_then(|g| g.chroma.as_mut()),
                        slot.scaled_chroma[side].as_mut(),
                    ) else {
                        continue;
                    };
                    let planes = if side == 0 {
                        &mut unpacked.reference
                    } else {
                        &mut unpacked.distorted
                    };
                    for (plane, out) in planes.iter_mut().zip(outs.iter_mut()) {
                        let n = sc.output_len();
                        *plane = sc.enqueue(&self.upload, plane, &mut out.slice_mut(0..n))?;
                    }
                }
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
            slot.index = index;
            slot.full = full;
            slot.has_motion = has_motion;
        }
        Ok(())
    }

    /// Takes the oldest frame's features out of its slot, waiting for it if `wait`.
    fn finish_oldest(&mut self, wait: bool) -> Result<Option<RawFeatures>, CudaError> {
        if self.in_flight == 0 {
            return Ok(None);
        }
        let slot = &self.slots[self.head];
        let events = std::iter::once(&slot.done).chain(slot.sides.iter().map(|s| &s.done));
        for event in events {
            if wait {
                event.synchronize().during("cuEventSynchronize(done)")?;
            } else if !event.try_is_complete().during("cuEventQuery(done)")? {
                return Ok(None);
            }
        }
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
        self.head = (self.head + 1) % SLOTS;
        self.in_flight -= 1;
        // Its kernels are done: release the inputs nothing in flight reads any more.
        while self.holds.front().is_some_and(|h| h.release_after <= index) {
            self.holds.pop_front();
        }
        Ok(Some(raw))
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
        Ok(())
    }
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
    reference: bool,
    /// The frame's number: a copied plane's hold goes when this frame is collected.
    index: u64,
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn submit_input(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        full: bool,
    ) -> Result<(), EngineError> {
        self.submit_components(reference, distorted, None, full)
    }

    fn submit_components(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaInput<'_>>,
        full: bool,
    ) -> Result<(), EngineError> {
        if let Some(e) = self.deferred.take() {
            return Err(engine_err(e));
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

    fn reads_device(&self) -> bool {
        true
    }

    fn reads_components(&self) -> bool {
        true
    }

    fn collect(&mut self, wait: bool) -> Result<Option<RawFeatures>, EngineError> {
        if let Some(e) = self.deferred.take() {
            return Err(engine_err(e));
        }
        if let Some(raw) = self.ready.pop_front() {
            return Ok(Some(raw));
        }
        self.finish_oldest(wait).map_err(engine_err)
    }

    fn max_in_flight(&self) -> usize {
        SLOTS
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
