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
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream, DevicePtr, PinnedHostSlice};

use super::adm::AdmGpu;
use super::chroma::{peer_copy, ChromaGpu, ChromaStaging};
use super::context::GpuDevice;
use super::error::{CudaError, DriverResultExt};
use super::fault::{Counted, Handle};
use super::memory::{alloc_zeroed, DeviceAlloc};
use super::motion::MotionGpu;
use super::plane::{ChromaDev, DevPlane};
use super::psnr::PsnrGpu;
use super::ssim::SsimGpu;
use super::ssimulacra2::Ssimulacra2Gpu;
use super::vif::VifGpu;
use crate::cpu::adm::AdmConfig;
use crate::cpu::vif::VifConfig;
use crate::engine::colour::YuvToRgb;
use crate::engine::features::FeatureSet;
use crate::engine::frame::{
    ChromaInput, DeviceLuma, FeatureError, HostLuma, LumaInput, LumaPlane, SampleLayout,
};
use crate::engine::scorer::{Backend, EngineError, RawFeatures, MAX_OPTION_SETS};

/// Frames in flight, each in its own slot.
const SLOTS: usize = 3;

/// What a [`CudaBackend`] computes besides motion: VIF and ADM under each option set of the
/// models (the first set fills `RawFeatures::vif`/`adm`, the others `vif_more`/`adm_more`),
/// and the extra metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuPlan {
    /// VIF option sets, 1 to [`MAX_OPTION_SETS`].
    pub vif: Vec<VifConfig>,
    /// ADM option sets, 1 to [`MAX_OPTION_SETS`].
    pub adm: Vec<AdmConfig>,
    /// Extra metrics.
    pub features: FeatureSet,
    /// Chroma plane size of the frames, `None` for grey formats (or when no metric reads
    /// chroma).
    pub chroma: Option<(usize, usize)>,
    /// SSIMULACRA2's YUV -> RGB conversion.
    pub colour: YuvToRgb,
}

impl GpuPlan {
    /// VIF, ADM and motion under one option set, nothing else.
    pub fn single(vif: VifConfig, adm: AdmConfig) -> Self {
        Self {
            vif: vec![vif],
            adm: vec![adm],
            features: FeatureSet::default(),
            chroma: None,
            colour: YuvToRgb::default(),
        }
    }
}

/// Where VIF's, ADM's and motion's words lie in a frame's result words on the compute stream
/// (each extra metric has words of its own on its side stream: [`SideSlot`]).
#[derive(Debug, Clone, Copy, Default)]
struct Layout {
    /// Start of VIF's words under option set `i` (`vif[i]`), likewise ADM.
    vif: [usize; MAX_OPTION_SETS],
    adm: [usize; MAX_OPTION_SETS],
    motion: usize,
    total: usize,
}

impl Layout {
    fn new(vif_sets: usize, adm_sets: usize) -> Self {
        let mut l = Layout::default();
        let mut at = 0;
        for i in 0..vif_sets {
            l.vif[i] = at;
            at += VifGpu::RESULT_WORDS;
        }
        l.motion = at;
        at += MotionGpu::RESULT_WORDS;
        for i in 0..adm_sets {
            l.adm[i] = at;
            at += AdmGpu::RESULT_WORDS;
        }
        l.total = at;
        l
    }
}

/// The GPU part of an extra metric a [`GpuPlan`] asks for (float_ssim and float_ms_ssim share
/// one: they share their kernels).
enum Extra {
    Psnr(PsnrGpu),
    /// Boxed, as SSIMULACRA2: several times PSNR's size (kernel handles, job tables).
    Ssim(Box<SsimGpu>),
    Ssimulacra2(Box<Ssimulacra2Gpu>),
}

impl Extra {
    /// The metric's result words per frame.
    fn words(&self) -> usize {
        match self {
            Extra::Psnr(_) => PsnrGpu::RESULT_WORDS,
            Extra::Ssim(_) => SsimGpu::RESULT_WORDS,
            Extra::Ssimulacra2(_) => Ssimulacra2Gpu::RESULT_WORDS,
        }
    }
}

/// One extra metric and its stream. Its kernels are latency-bound recursions and reductions
/// (or, for SSIM, conversion-bound filters) that leave most of the GPU idle: on streams of
/// their own they run beside VIF and ADM, beside each other and beside the next frame's
/// VMAF instead of queueing behind them. A metric's scratch is one set, used in frame order
/// on its stream.
struct Side {
    extra: Extra,
    stream: Arc<CudaStream>,
}

impl Side {
    /// Enqueues one frame's metric on the side stream into `out`, and the read-back of its
    /// words.
    fn enqueue(
        &mut self,
        out: &mut SideSlot,
        (r, d): (DevPlane, DevPlane),
        chroma: Option<&ChromaDev>,
    ) -> Result<(), CudaError> {
        let stream = &self.stream;
        let mut words = out.dev_out.slice_mut(0..self.extra.words());
        match &mut self.extra {
            Extra::Psnr(p) => p.enqueue(stream, r, d, chroma, &mut words)?,
            Extra::Ssim(p) => p.enqueue(stream, r, d, &mut words)?,
            Extra::Ssimulacra2(p) => p.enqueue(stream, r, d, chroma, &mut words)?,
        }
        stream
            .memcpy_dtoh(&*out.dev_out, &mut out.host_out)
            .during("cuMemcpyDtoHAsync(extra results)")
    }
}

/// A slot's share of one side stream: the metric's result words on the device, their pinned
/// read-back, and the event recorded on the side stream after the read-back (on every frame,
/// also those that compute no features, so that waiting for a slot's event covers every
/// earlier frame of that stream).
struct SideSlot {
    dev_out: DeviceAlloc<u64>,
    host_out: PinnedHostSlice<u64>,
    done: CudaEvent,
    _counted: Counted,
}

impl SideSlot {
    fn new(dev: &GpuDevice, compute: &Arc<CudaStream>, words: usize) -> Result<Self, CudaError> {
        // SAFETY: the results are only read after a read-back into them has completed.
        let host_out = unsafe { dev.context().alloc_pinned_with_flags::<u64>(words, 0) }
            .allocating("cuMemHostAlloc(extra results)", words * 8)?;
        let dev_out = alloc_zeroed::<u64>(compute, words, "cuMemAlloc(extra results)")?;
        let done = dev
            .context()
            .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .during("cuEventCreate(extra done)")?;
        Ok(Self {
            dev_out,
            host_out,
            done,
            _counted: Counted::new(Handle::Event),
        })
    }
}

/// Everything one frame in flight owns.
struct Slot {
    /// Pinned staging of host rows, packed, up to 2 bytes per sample.
    host_ref: PinnedHostSlice<u8>,
    host_dis: PinnedHostSlice<u8>,
    /// Device copies of uploaded or peer-copied planes.
    dev_ref: DeviceAlloc<u8>,
    dev_dis: DeviceAlloc<u8>,
    /// Chroma staging of the reference and distorted frame, and the packed planes the upload
    /// stream unpacks them into (when a metric reads chroma).
    chroma: Option<[ChromaStaging; 2]>,
    unpacked: Option<ChromaGpu>,
    /// Whether this frame's chroma was placed (its metrics then read it).
    has_chroma: bool,
    /// Where this frame's reference plane is (the next frame's motion reads it too).
    ref_plane: DevPlane,
    /// Result words on the device and their pinned read-back.
    dev_out: DeviceAlloc<u64>,
    host_out: PinnedHostSlice<u64>,
    /// Recorded on the upload stream after the planes' copies.
    uploaded: CudaEvent,
    /// Recorded on the compute stream after the kernels and the read-back.
    done: CudaEvent,
    /// One per side stream, in the order of [`CudaBackend::sides`].
    sides: Vec<SideSlot>,
    /// Frame number (since creation or reset) of the occupant.
    index: u64,
    full: bool,
    has_motion: bool,
    /// The two events, for [`super::fault::live`].
    _counted: [Counted; 2],
}

impl Slot {
    /// `plane_bytes`: one plane at the backend's sample size (1 byte up to 8 bits, else 2).
    fn new(
        dev: &GpuDevice,
        compute: &Arc<CudaStream>,
        plane_bytes: usize,
        result_words: usize,
        chroma: Option<((usize, usize), usize)>,
        side_words: &[usize],
    ) -> Result<Self, CudaError> {
        let ctx = dev.context();
        // SAFETY: the staging is written (the rows uploaded) before each upload, and the
        // results are only read after a read-back into them has completed.
        let host_ref = unsafe { ctx.alloc_pinned_with_flags::<u8>(plane_bytes, 0) }
            .allocating("cuMemHostAlloc(reference staging)", plane_bytes)?;
        let host_dis = unsafe { ctx.alloc_pinned_with_flags::<u8>(plane_bytes, 0) }
            .allocating("cuMemHostAlloc(distorted staging)", plane_bytes)?;
        let host_out = unsafe { ctx.alloc_pinned_with_flags::<u64>(result_words, 0) }
            .allocating("cuMemHostAlloc(results)", result_words * 8)?;
        let dev_ref = alloc_zeroed::<u8>(compute, plane_bytes, "cuMemAlloc(reference plane)")?;
        let dev_dis = alloc_zeroed::<u8>(compute, plane_bytes, "cuMemAlloc(distorted plane)")?;
        let dev_out = alloc_zeroed::<u64>(compute, result_words, "cuMemAlloc(results)")?;
        let (chroma, unpacked) = match chroma {
            Some((size, bytes)) => (
                Some([
                    ChromaStaging::new(dev, compute, size, bytes)?,
                    ChromaStaging::new(dev, compute, size, bytes)?,
                ]),
                Some(ChromaGpu::new(dev, compute, size)?),
            ),
            None => (None, None),
        };
        let flags = Some(CUevent_flags::CU_EVENT_DISABLE_TIMING);
        let uploaded = ctx.new_event(flags).during("cuEventCreate(uploaded)")?;
        let done = ctx.new_event(flags).during("cuEventCreate(done)")?;
        let sides = side_words
            .iter()
            .map(|&words| SideSlot::new(dev, compute, words))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            host_ref,
            host_dis,
            dev_ref,
            dev_dis,
            chroma,
            unpacked,
            has_chroma: false,
            ref_plane: DevPlane::default(),
            dev_out,
            host_out,
            uploaded,
            done,
            sides,
            index: 0,
            full: false,
            has_motion: false,
            _counted: [Counted::new(Handle::Event), Counted::new(Handle::Event)],
        })
    }
}

/// Something that keeps an input plane's device memory valid (a mapped GStreamer buffer, an
/// imported DMABuf), dropped once frame `release_after` has been collected.
struct Hold {
    release_after: u64,
    _keep: Box<dyn Send>,
}

/// The GPU feature backend for one geometry: VIF, ADM and motion, bit-identical to
/// [`crate::cpu::CpuBackend`].
///
/// Owns an upload stream (copies, chroma unpacking), a compute stream (motion, VIF, ADM and
/// their read-back) and a side stream per extra metric ([`Side`]), synchronised with events,
/// [`SLOTS`] frame slots with pinned staging, device planes and results, all allocated in
/// [`CudaBackend::new`]: `submit` and `collect` allocate nothing on the device (the hold
/// queue's few entries aside). Dropping it synchronises every stream before anything is freed
/// or released.
pub struct CudaBackend {
    // Declared first so that, after `Drop::drop` synchronised, the slots go before the rest.
    slots: Vec<Slot>,
    vif: VifGpu,
    motion: MotionGpu,
    adm: AdmGpu,
    /// The chroma plane size, when a metric reads chroma.
    chroma_size: Option<(usize, usize)>,
    upload: Arc<CudaStream>,
    compute: Arc<CudaStream>,
    /// One stream per extra metric asked for.
    sides: Vec<Side>,
    /// VIF and ADM option sets (the first fills `RawFeatures::vif`/`adm`).
    vif_cfgs: Vec<VifConfig>,
    adm_cfgs: Vec<AdmConfig>,
    features: FeatureSet,
    layout: Layout,
    width: usize,
    height: usize,
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
    /// The streams, for [`super::fault::live`].
    _counted: Vec<Counted>,
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
    /// Sizes every buffer for `width` x `height` luma planes of `bpc` bits on `dev`.
    ///
    /// Errors: [`CudaError::Geometry`] below [`crate::cpu::MIN_WIDTH`] x
    /// [`crate::cpu::MIN_HEIGHT`] or with `bpc` outside `8..=16`; [`CudaError::OutOfMemory`]
    /// and [`CudaError::Driver`] from the allocations, stream and event creation. A failure
    /// drops whatever was made before it.
    pub fn new(
        dev: &GpuDevice,
        width: usize,
        height: usize,
        bpc: u32,
        vif: VifConfig,
        adm: AdmConfig,
    ) -> Result<Self, CudaError> {
        Self::with_plan(dev, width, height, bpc, &GpuPlan::single(vif, adm))
    }

    /// Like [`CudaBackend::new`], computing everything `plan` asks for: VIF and ADM once per
    /// option set, and the extra metrics (PSNR, float SSIM, float MS-SSIM, SSIMULACRA2) on
    /// the GPU. Every buffer, the extra metrics' scratch and the chroma staging included, is
    /// allocated here (once per caps).
    ///
    /// Errors: as [`CudaBackend::new`]; [`CudaError::Geometry`] for an empty or too long
    /// option list, or a frame below MS-SSIM's minimum when `float_ms_ssim` is asked for.
    pub fn with_plan(
        dev: &GpuDevice,
        width: usize,
        height: usize,
        bpc: u32,
        plan: &GpuPlan,
    ) -> Result<Self, CudaError> {
        let sets_ok = |n: usize| (1..=MAX_OPTION_SETS).contains(&n);
        if !sets_ok(plan.vif.len()) || !sets_ok(plan.adm.len()) {
            return Err(
                FeatureError::wrong_size("vmaf", (width, height, bpc), (width, height)).into(),
            );
        }
        if plan.features.float_ms_ssim && !crate::cpu::ssim::ms_ssim_fits(width, height) {
            return Err(crate::cpu::ssim::ms_ssim_too_small(width, height).into());
        }
        if width < crate::cpu::MIN_WIDTH || height < crate::cpu::MIN_HEIGHT {
            return Err(FeatureError::FrameTooSmall {
                feature: "vmaf",
                width,
                height,
                min_width: crate::cpu::MIN_WIDTH,
                min_height: crate::cpu::MIN_HEIGHT,
            }
            .into());
        }
        if !(8..=16).contains(&bpc) {
            return Err(FeatureError::WrongGeometry {
                feature: "vmaf",
                expected_width: width,
                expected_height: height,
                expected_bpc: 8,
                width,
                height,
                bpc,
            }
            .into());
        }
        dev.context().bind_to_thread().during("cuCtxSetCurrent")?;
        let upload = dev.new_stream()?;
        let compute = dev.new_stream()?;
        let f = plan.features;
        let vif_gpu = VifGpu::new(dev, &compute, width, height, bpc)?;
        let motion = MotionGpu::new(dev, &compute, width, height, bpc)?;
        let adm_part = AdmGpu::new(&dev.modules().adm, &compute, width, height, bpc)?;
        let chroma_size = plan.chroma.filter(|_| f.reads_chroma());
        let mut extras = Vec::with_capacity(3);
        if f.psnr {
            extras.push(Extra::Psnr(PsnrGpu::new(
                dev, &compute, width, height, bpc,
            )?));
        }
        if f.float_ssim || f.float_ms_ssim {
            extras.push(Extra::Ssim(Box::new(SsimGpu::new(
                dev,
                &compute,
                width,
                height,
                bpc,
                f.float_ssim,
                f.float_ms_ssim,
            )?)));
        }
        if f.ssimulacra2 {
            extras.push(Extra::Ssimulacra2(Box::new(Ssimulacra2Gpu::new(
                dev,
                &compute,
                width,
                height,
                bpc,
                chroma_size,
                plan.colour,
            )?)));
        }
        let sides = extras
            .into_iter()
            .map(|extra| {
                Ok(Side {
                    extra,
                    stream: dev.new_stream()?,
                })
            })
            .collect::<Result<Vec<_>, CudaError>>()?;
        let side_words: Vec<usize> = sides.iter().map(|s| s.extra.words()).collect();
        let layout = Layout::new(plan.vif.len(), plan.adm.len());
        let mut slots = Vec::with_capacity(SLOTS);
        for _ in 0..SLOTS {
            slots.push(Slot::new(
                dev,
                &compute,
                width * height * sample_bytes(bpc),
                layout.total,
                chroma_size.map(|size| (size, sample_bytes(bpc))),
                &side_words,
            )?);
        }
        // Allocations are stream-ordered on `compute`: finish them before `upload` writes
        // and the side streams run.
        compute
            .synchronize()
            .during("cuStreamSynchronize(backend init)")?;
        Ok(Self {
            slots,
            vif: vif_gpu,
            motion,
            adm: adm_part,
            chroma_size,
            _counted: std::iter::repeat_with(|| Counted::new(Handle::Stream))
                .take(2 + sides.len())
                .collect(),
            upload,
            compute,
            sides,
            vif_cfgs: plan.vif.clone(),
            adm_cfgs: plan.adm.clone(),
            features: f,
            layout,
            width,
            height,
            bpc,
            context: dev.context().cu_ctx() as usize,
            head: 0,
            in_flight: 0,
            submitted: 0,
            ready: VecDeque::with_capacity(SLOTS),
            holds: VecDeque::with_capacity(2 * SLOTS + 2),
            deferred: None,
            bytes_copied: 0,
        })
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

    /// Checks a plane's size against the backend's geometry.
    fn check(&self, input: &LumaInput) -> Result<(), FeatureError> {
        let (width, height) = input.size();
        let packed_ok = match input {
            LumaInput::Packed(p) => {
                FeatureError::check_plane("vmaf", (self.width, self.height, self.bpc), p).is_ok()
            }
            _ => true,
        };
        // Host rows and copied device rows go through planes of the backend's sample size.
        let bytes_ok = match input {
            LumaInput::Host(h) => h.layout.bytes <= sample_bytes(self.bpc),
            LumaInput::Device(d) => d.layout.bytes <= sample_bytes(self.bpc),
            LumaInput::Packed(_) => true,
        };
        if width != self.width || height != self.height || !packed_ok || !bytes_ok {
            return Err(FeatureError::wrong_size(
                "vmaf",
                (self.width, self.height, self.bpc),
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
                let (pr, nr) = gpu.place(r, &c.reference, self.context, &self.upload)?;
                let (pd, nd) = gpu.place(d, &c.distorted, self.context, &self.upload)?;
                self.bytes_copied += (nr + nd) as u64;
                chroma_dev = Some(gpu.unpack(&self.upload, &pr, &pd)?);
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
        let l = self.layout;
        if has_motion {
            let prev_plane = self.slots[prev].ref_plane;
            let mut out = self.slots[s]
                .dev_out
                .slice_mut(l.motion..l.motion + MotionGpu::RESULT_WORDS);
            self.motion
                .enqueue(&self.compute, prev_plane, ref_plane, &mut out)?;
        }
        if full {
            let slot = &mut self.slots[s];
            for (i, cfg) in self.vif_cfgs.iter().enumerate() {
                let mut out = slot
                    .dev_out
                    .slice_mut(l.vif[i]..l.vif[i] + VifGpu::RESULT_WORDS);
                self.vif
                    .enqueue(&self.compute, ref_plane, dis_plane, cfg, &mut out)?;
            }
            for (i, cfg) in self.adm_cfgs.iter().enumerate() {
                let mut out = slot
                    .dev_out
                    .slice_mut(l.adm[i]..l.adm[i] + AdmGpu::RESULT_WORDS);
                self.adm
                    .enqueue(&self.compute, ref_plane, dis_plane, cfg, &mut out)?;
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
                    side.enqueue(out, (ref_plane, dis_plane), chroma_dev.as_ref())?;
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
        let mut raw = RawFeatures::default();
        let l = self.layout;
        let at = |start: usize, n: usize| words.get(start..start + n).unwrap_or(&[]);
        if slot.has_motion {
            raw.motion_sad = self.motion.score(at(l.motion, MotionGpu::RESULT_WORDS));
        }
        if slot.full {
            for (i, cfg) in self.vif_cfgs.iter().enumerate() {
                let v = self.vif.scores(at(l.vif[i], VifGpu::RESULT_WORDS), cfg);
                match i.checked_sub(1) {
                    None => raw.vif = v,
                    Some(k) => raw.vif_more[k] = v,
                }
            }
            for (i, cfg) in self.adm_cfgs.iter().enumerate() {
                let a = self.adm.scores(at(l.adm[i], AdmGpu::RESULT_WORDS), cfg);
                match i.checked_sub(1) {
                    None => raw.adm = a,
                    Some(k) => raw.adm_more[k] = a,
                }
            }
            let chroma = self.chroma_size.filter(|_| slot.has_chroma);
            for (side, out) in self.sides.iter().zip(&slot.sides) {
                let words = out
                    .host_out
                    .as_slice()
                    .during("cuEventSynchronize(extra results)")?;
                match &side.extra {
                    Extra::Psnr(p) => raw.extra.psnr = p.scores(words, chroma),
                    Extra::Ssim(p) => {
                        let (ssim, ms) = p.scores(words);
                        if self.features.float_ssim {
                            raw.extra.float_ssim = ssim;
                        }
                        if self.features.float_ms_ssim {
                            raw.extra.float_ms_ssim = ms;
                        }
                    }
                    Extra::Ssimulacra2(p) => raw.extra.ssimulacra2 = p.score(words),
                }
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

/// Bytes of staging one parallel task copies at least: below this a band costs more to hand
/// to a thread than to copy (a 576x324 8-bit plane stays on one thread).
const MIN_BAND_BYTES: usize = 64 * 1024;

/// Bands per plane for each thread of the staging pool: two, so that a slow thread delays
/// only half a share. With 512 KiB bands a 1080p plane had only 4 or 8 bands, which made the
/// 10-bit system-memory path 1.57x slower than 8-bit on the H100 while the GPU waited
/// (issue 6, docs/perf/NOTES.md).
const BANDS_PER_THREAD: usize = 2;

/// Most threads the staging copy uses. Each thread copies at a few GB/s, so the copy keeps
/// gaining up to the core count: on the 16-core GPU host, 8 threads took 2160p 10-bit from
/// about 1,050 down to about 750 fps (issue 6, docs/perf/NOTES.md).
const MAX_STAGING_THREADS: usize = 32;

/// The process-wide thread pool of the staging copies (all elements share it), made on first
/// use with `min(available_parallelism, MAX_STAGING_THREADS)` threads; `None` when it cannot
/// be made (the copies then run on the calling thread). A pool of its own keeps the copies
/// off an application's rayon global pool.
fn staging_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_STAGING_THREADS);
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("vmafcompare-stage-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Bytes per sample of the slots' planes: 1 up to 8 bits, else 2.
fn sample_bytes(bpc: u32) -> usize {
    if bpc > 8 {
        2
    } else {
        1
    }
}

/// Splits the first `rows * row` bytes of `dst` into bands of whole rows, about
/// [`BANDS_PER_THREAD`] per thread of [`staging_pool`] and at least [`MIN_BAND_BYTES`] each,
/// and runs `fill(first_row, band, row)` on each, in parallel. Returns
/// the bytes covered, or 0 (nothing done) when `dst` is shorter.
fn in_bands(
    dst: &mut [u8],
    row: usize,
    rows: usize,
    fill: impl Fn(usize, &mut [u8], usize) + Sync,
) -> usize {
    let total = row * rows;
    let Some(dst) = dst.get_mut(..total) else {
        return 0;
    };
    let pool = staging_pool();
    let threads = pool.map_or(1, |p| p.current_num_threads()).max(1);
    let band_bytes = (total / (threads * BANDS_PER_THREAD)).max(MIN_BAND_BYTES);
    let band = (band_bytes / row.max(1)).max(1);
    let chunk = row.max(1) * band;
    match pool {
        Some(p) if total > chunk => p.install(|| {
            dst.par_chunks_mut(chunk)
                .enumerate()
                .for_each(|(b, c)| fill(b * band, c, row))
        }),
        // One band, or no pool: on this thread.
        _ => dst
            .chunks_mut(chunk)
            .enumerate()
            .for_each(|(b, c)| fill(b * band, c, row)),
    }
    total
}

/// Copies the first `row` bytes of each of `rows` rows of `src` (`stride` bytes apart) into
/// `dst`, packed, in parallel bands ([`in_bands`]); one copy per band when the rows are
/// contiguous. Rows that `src` does not hold are left as they are. Returns the bytes covered,
/// or 0 (nothing done) when `dst` is shorter than `row * rows`.
pub(crate) fn stage_rows(
    src: &[u8],
    stride: usize,
    row: usize,
    rows: usize,
    dst: &mut [u8],
) -> usize {
    in_bands(dst, row, rows, |first, band, row| {
        if stride == row {
            let start = first * row;
            if let Some(s) = src.get(start..start + band.len()) {
                band.copy_from_slice(s);
            }
            return;
        }
        for (i, out) in band.chunks_exact_mut(row).enumerate() {
            let start = (first + i) * stride;
            if let Some(s) = src.get(start..start + row) {
                out.copy_from_slice(s);
            }
        }
    })
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
        self.check(&reference)?;
        self.check(&distorted)?;
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
