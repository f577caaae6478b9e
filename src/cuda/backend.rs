//! [`CudaBackend`]: VIF, ADM and motion of a stream of frame pairs on one GPU, with up to three
//! frames in flight (host staging, upload, kernels and read-back of different frames overlap).

use std::collections::VecDeque;
use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};

use super::context::GpuDevice;
use super::error::{CudaError, DriverResultExt};
use super::motion::MotionGpu;
use super::vif::VifGpu;
use crate::cpu::adm::AdmConfig;
use crate::cpu::vif::VifConfig;
use crate::engine::frame::{FeatureError, LumaPlane};
use crate::engine::scorer::{Backend, EngineError, RawFeatures};

#[cfg(has_adm_gpu)]
use super::adm::AdmGpu;
#[cfg(not(has_adm_gpu))]
use crate::cpu::adm::{Adm, AdmScores};

/// Frames in flight, each in its own slot.
const SLOTS: usize = 3;
/// Result words of one frame: VIF, then motion, then ADM.
const VIF_AT: usize = 0;
const MOTION_AT: usize = VIF_AT + VifGpu::RESULT_WORDS;
const ADM_AT: usize = MOTION_AT + MotionGpu::RESULT_WORDS;
#[cfg(has_adm_gpu)]
const RESULT_WORDS: usize = ADM_AT + AdmGpu::RESULT_WORDS;
#[cfg(not(has_adm_gpu))]
const RESULT_WORDS: usize = ADM_AT;

/// ADM on the GPU when this build has the kernels' host side, else on the CPU inside the
/// backend (synchronously at submit).
#[cfg(has_adm_gpu)]
type AdmPart = AdmGpu;
#[cfg(not(has_adm_gpu))]
type AdmPart = Adm;

/// Everything one frame in flight owns.
struct Slot {
    /// Pinned staging of the packed luma planes (`width * height` samples each).
    host_ref: PinnedHostSlice<u16>,
    host_dis: PinnedHostSlice<u16>,
    /// Device copies of the planes. The reference also serves the next frame's motion.
    dev_ref: CudaSlice<u16>,
    dev_dis: CudaSlice<u16>,
    /// Result words on the device and their pinned read-back.
    dev_out: CudaSlice<u64>,
    host_out: PinnedHostSlice<u64>,
    /// Recorded on the upload stream after the planes' copies.
    uploaded: CudaEvent,
    /// Recorded on the compute stream after the kernels and the read-back.
    done: CudaEvent,
    full: bool,
    has_motion: bool,
    /// ADM computed on the CPU at submit (builds without the GPU ADM).
    #[cfg(not(has_adm_gpu))]
    cpu_adm: AdmScores,
}

impl Slot {
    fn new(dev: &GpuDevice, compute: &Arc<CudaStream>, pixels: usize) -> Result<Self, CudaError> {
        let ctx = dev.context();
        let plane_bytes = pixels * 2;
        // SAFETY: the staging is written in full (every row) before each upload, and the
        // results are only read after a read-back into them has completed.
        let host_ref = unsafe { ctx.alloc_pinned_with_flags::<u16>(pixels, 0) }
            .allocating("cuMemHostAlloc(reference staging)", plane_bytes)?;
        let host_dis = unsafe { ctx.alloc_pinned_with_flags::<u16>(pixels, 0) }
            .allocating("cuMemHostAlloc(distorted staging)", plane_bytes)?;
        let host_out = unsafe { ctx.alloc_pinned_with_flags::<u64>(RESULT_WORDS, 0) }
            .allocating("cuMemHostAlloc(results)", RESULT_WORDS * 8)?;
        let dev_ref = compute
            .alloc_zeros::<u16>(pixels)
            .allocating("cuMemAlloc(reference plane)", plane_bytes)?;
        let dev_dis = compute
            .alloc_zeros::<u16>(pixels)
            .allocating("cuMemAlloc(distorted plane)", plane_bytes)?;
        let dev_out = compute
            .alloc_zeros::<u64>(RESULT_WORDS)
            .allocating("cuMemAlloc(results)", RESULT_WORDS * 8)?;
        let flags = Some(CUevent_flags::CU_EVENT_DISABLE_TIMING);
        let uploaded = ctx.new_event(flags).during("cuEventCreate(uploaded)")?;
        let done = ctx.new_event(flags).during("cuEventCreate(done)")?;
        Ok(Self {
            host_ref,
            host_dis,
            dev_ref,
            dev_dis,
            dev_out,
            host_out,
            uploaded,
            done,
            full: false,
            has_motion: false,
            #[cfg(not(has_adm_gpu))]
            cpu_adm: AdmScores::default(),
        })
    }
}

/// The GPU feature backend for one geometry: VIF and motion (and ADM once its kernels are in
/// the build; until then ADM runs on the CPU inside this backend), bit-identical to
/// [`crate::cpu::CpuBackend`].
///
/// Owns an upload stream and a compute stream (synchronised with events), [`SLOTS`] frame
/// slots with pinned staging, device planes and results, all allocated in [`CudaBackend::new`]:
/// `submit` and `collect` allocate nothing. Dropping it synchronises both streams before
/// anything is freed.
pub struct CudaBackend {
    // Declared first so that, after `Drop::drop` synchronised, the slots go before the rest.
    slots: Vec<Slot>,
    vif: VifGpu,
    motion: MotionGpu,
    adm: AdmPart,
    upload: Arc<CudaStream>,
    compute: Arc<CudaStream>,
    vif_cfg: VifConfig,
    adm_cfg: AdmConfig,
    width: usize,
    height: usize,
    bpc: u32,
    /// Oldest uncollected slot and the number of frames in flight.
    head: usize,
    in_flight: usize,
    /// Frames submitted since creation or reset (motion needs a previous one).
    submitted: u64,
    /// Finished frames taken out of their slot early (a submit with every slot busy).
    ready: VecDeque<RawFeatures>,
    /// A failure of `reset` (which cannot return one), reported by the next call.
    deferred: Option<CudaError>,
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
        let vif_gpu = VifGpu::new(dev, &compute, width, height, bpc)?;
        let motion = MotionGpu::new(dev, &compute, width, height, bpc)?;
        #[cfg(has_adm_gpu)]
        let adm_part = {
            let module = dev.modules().adm.as_ref().ok_or(CudaError::Driver {
                call: "cuModuleLoadData(adm)",
                code: "adm.ptx is missing from this build".to_owned(),
            })?;
            AdmGpu::new(module, &compute, width, height, bpc)?
        };
        #[cfg(not(has_adm_gpu))]
        let adm_part = Adm::new(width, height, bpc)?;
        let mut slots = Vec::with_capacity(SLOTS);
        for _ in 0..SLOTS {
            slots.push(Slot::new(dev, &compute, width * height)?);
        }
        // Allocations are stream-ordered on `compute`: finish them before `upload` writes.
        compute
            .synchronize()
            .during("cuStreamSynchronize(backend init)")?;
        Ok(Self {
            slots,
            vif: vif_gpu,
            motion,
            adm: adm_part,
            upload,
            compute,
            vif_cfg: vif,
            adm_cfg: adm,
            width,
            height,
            bpc,
            head: 0,
            in_flight: 0,
            submitted: 0,
            ready: VecDeque::with_capacity(SLOTS),
            deferred: None,
        })
    }

    /// Checks a plane against the backend's geometry (and that its data holds it).
    fn check(&self, p: &LumaPlane) -> Result<(), FeatureError> {
        let fits = p.stride >= p.width
            && p.height >= 1
            && (p.height - 1)
                .checked_mul(p.stride)
                .and_then(|n| n.checked_add(p.width))
                .is_some_and(|n| n <= p.data.len());
        if p.width != self.width || p.height != self.height || p.bpc != self.bpc || !fits {
            return Err(FeatureError::WrongGeometry {
                feature: "vmaf",
                expected_width: self.width,
                expected_height: self.height,
                expected_bpc: self.bpc,
                width: p.width,
                height: p.height,
                bpc: p.bpc,
            });
        }
        Ok(())
    }

    /// Copies the valid samples of `p`'s rows into `dst` (packed).
    fn stage(p: &LumaPlane, dst: &mut [u16]) {
        let w = p.width;
        for (y, out) in dst.chunks_exact_mut(w).take(p.height).enumerate() {
            let start = y * p.stride;
            if let Some(src) = p.data.get(start..start + w) {
                out.copy_from_slice(src);
            }
        }
    }

    /// Enqueues one frame into slot `s`.
    fn enqueue(
        &mut self,
        s: usize,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        full: bool,
    ) -> Result<(), CudaError> {
        self.compute
            .context()
            .bind_to_thread()
            .during("cuCtxSetCurrent")?;
        let has_motion = self.submitted > 0;
        let prev = (s + SLOTS - 1) % SLOTS;
        let before_prev = (s + SLOTS - 2) % SLOTS;
        // Host staging: waits for this buffer's previous upload (long done in steady state).
        {
            let slot = &mut self.slots[s];
            Self::stage(
                reference,
                slot.host_ref
                    .as_mut_slice()
                    .during("cuEventSynchronize(staging)")?,
            );
            Self::stage(
                distorted,
                slot.host_dis
                    .as_mut_slice()
                    .during("cuEventSynchronize(staging)")?,
            );
        }
        // The slot's reference plane was last read by the motion kernel of the frame after
        // its previous occupant, i.e. the frame submitted two before this one.
        if self.submitted >= 2 {
            self.upload
                .wait(&self.slots[before_prev].done)
                .during("cuStreamWaitEvent(upload)")?;
        }
        {
            let slot = &mut self.slots[s];
            self.upload
                .memcpy_htod(&slot.host_ref, &mut slot.dev_ref)
                .during("cuMemcpyHtoDAsync(reference)")?;
            self.upload
                .memcpy_htod(&slot.host_dis, &mut slot.dev_dis)
                .during("cuMemcpyHtoDAsync(distorted)")?;
            slot.uploaded
                .record(&self.upload)
                .during("cuEventRecord(uploaded)")?;
            self.compute
                .wait(&slot.uploaded)
                .during("cuStreamWaitEvent(compute)")?;
        }

        // Motion against the previous frame's reference plane (still in its slot).
        if has_motion {
            let (prev_slot, cur) = pair(&mut self.slots, prev, s);
            let mut out = cur
                .dev_out
                .slice_mut(MOTION_AT..MOTION_AT + MotionGpu::RESULT_WORDS);
            self.motion.enqueue(
                &self.compute,
                &prev_slot.dev_ref.as_view(),
                &cur.dev_ref.as_view(),
                &mut out,
            )?;
        }
        if full {
            let slot = &mut self.slots[s];
            let mut out = slot
                .dev_out
                .slice_mut(VIF_AT..VIF_AT + VifGpu::RESULT_WORDS);
            self.vif.enqueue(
                &self.compute,
                &slot.dev_ref.as_view(),
                &slot.dev_dis.as_view(),
                &self.vif_cfg,
                &mut out,
            )?;
            #[cfg(has_adm_gpu)]
            {
                let mut out = slot
                    .dev_out
                    .slice_mut(ADM_AT..ADM_AT + AdmGpu::RESULT_WORDS);
                self.adm.enqueue(
                    &self.compute,
                    &slot.dev_ref.as_view(),
                    &slot.dev_dis.as_view(),
                    &self.adm_cfg,
                    &mut out,
                )?;
            }
        }
        {
            let slot = &mut self.slots[s];
            self.compute
                .memcpy_dtoh(&slot.dev_out, &mut slot.host_out)
                .during("cuMemcpyDtoHAsync(results)")?;
            slot.done
                .record(&self.compute)
                .during("cuEventRecord(done)")?;
            slot.full = full;
            slot.has_motion = has_motion;
        }
        // CPU ADM (builds without the GPU ADM) overlaps the kernels just enqueued.
        #[cfg(not(has_adm_gpu))]
        if full {
            let scores = self.adm.compute(reference, distorted, &self.adm_cfg)?;
            self.slots[s].cpu_adm = scores;
        }
        Ok(())
    }

    /// Takes the oldest frame's features out of its slot, waiting for it if `wait`.
    fn finish_oldest(&mut self, wait: bool) -> Result<Option<RawFeatures>, CudaError> {
        if self.in_flight == 0 {
            return Ok(None);
        }
        let slot = &self.slots[self.head];
        if wait {
            slot.done.synchronize().during("cuEventSynchronize(done)")?;
        } else if !slot.done.try_is_complete().during("cuEventQuery(done)")? {
            return Ok(None);
        }
        let words = slot
            .host_out
            .as_slice()
            .during("cuEventSynchronize(results)")?;
        let mut raw = RawFeatures::default();
        if slot.has_motion {
            raw.motion_sad = self.motion.score(words.get(MOTION_AT..).unwrap_or(&[]));
        }
        if slot.full {
            raw.vif = self
                .vif
                .scores(words.get(VIF_AT..MOTION_AT).unwrap_or(&[]), &self.vif_cfg);
            #[cfg(has_adm_gpu)]
            {
                raw.adm = self.adm.scores(
                    words.get(ADM_AT..RESULT_WORDS).unwrap_or(&[]),
                    &self.adm_cfg,
                );
            }
            #[cfg(not(has_adm_gpu))]
            {
                raw.adm = slot.cpu_adm;
            }
        }
        self.head = (self.head + 1) % SLOTS;
        self.in_flight -= 1;
        Ok(Some(raw))
    }

    fn sync_all(&self) -> Result<(), CudaError> {
        self.upload
            .synchronize()
            .during("cuStreamSynchronize(upload)")?;
        self.compute
            .synchronize()
            .during("cuStreamSynchronize(compute)")
    }
}

/// `(&slots[a], &mut slots[b])` for `a != b`.
fn pair(slots: &mut [Slot], a: usize, b: usize) -> (&Slot, &mut Slot) {
    if a < b {
        let (lo, hi) = slots.split_at_mut(b);
        (&lo[a], &mut hi[0])
    } else {
        let (lo, hi) = slots.split_at_mut(a);
        (&hi[0], &mut lo[b])
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn submit(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        full: bool,
    ) -> Result<(), EngineError> {
        if let Some(e) = self.deferred.take() {
            return Err(engine_err(e));
        }
        self.check(reference)?;
        self.check(distorted)?;
        if self.in_flight == SLOTS {
            // Every slot busy (a caller that does not collect): finish the oldest.
            if let Some(raw) = self.finish_oldest(true).map_err(engine_err)? {
                self.ready.push_back(raw);
            }
        }
        let s = (self.head + self.in_flight) % SLOTS;
        self.enqueue(s, reference, distorted, full)
            .map_err(engine_err)?;
        self.in_flight += 1;
        self.submitted += 1;
        Ok(())
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
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        // Nothing may be freed while a copy or kernel still uses it: wait for both streams,
        // free the slots, and wait again for the stream-ordered frees.
        let _ = self.sync_all();
        self.slots.clear();
        let _ = self.sync_all();
    }
}
