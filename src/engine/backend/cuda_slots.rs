//! What the CUDA backend keeps per frame in flight ([`Slot`]: staging, device planes, result
//! words, events) and per instance ([`OnCompute`], [`Side`]).

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream, PinnedHostSlice};

use crate::cuda::chroma::{ChromaGpu, ChromaStaging};
use crate::cuda::context::GpuDevice;
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::fault::{Counted, Handle};
use crate::cuda::memory::{alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::DevPlane;
use crate::features::{CudaExtractor, DevFrame};

/// Frames in flight, each in its own slot.
pub(super) const SLOTS: usize = 3;

/// An instance's CUDA half on the compute stream, and where its words lie in a frame's
/// result words.
pub(super) struct OnCompute {
    /// The instance's index in the layout.
    pub(super) inst: usize,
    pub(super) ex: Box<dyn CudaExtractor>,
    /// Start of its words.
    pub(super) at: usize,
    /// Runs on every frame that has a previous one (motion), not only full ones.
    pub(super) previous: bool,
}

/// An instance's CUDA half on a stream of its own ([`CudaExtractor::side_stream`]): its
/// kernels leave most of the GPU idle (latency-bound recursions and reductions, or
/// conversion-bound filters), so beside VIF and ADM, beside each other and beside the next
/// frame's VMAF they do not queue behind them. Its scratch is one set, used in frame order on
/// its stream.
pub(super) struct Side {
    pub(super) inst: usize,
    pub(super) ex: Box<dyn CudaExtractor>,
    pub(super) stream: Arc<CudaStream>,
}

impl Side {
    /// Enqueues one frame's kernels on the side stream into `out`, and the read-back of its
    /// words.
    pub(super) fn enqueue(
        &mut self,
        out: &mut SideSlot,
        frame: &DevFrame,
    ) -> Result<(), CudaError> {
        let stream = &self.stream;
        let mut words = out.dev_out.slice_mut(0..self.ex.result_words());
        self.ex.enqueue(stream, frame, &mut words)?;
        stream
            .memcpy_dtoh(&*out.dev_out, &mut out.host_out)
            .during("cuMemcpyDtoHAsync(extra results)")
    }
}

/// A slot's share of one side stream: the metric's result words on the device, their pinned
/// read-back, and the event recorded on the side stream after the read-back (on every frame,
/// also those that compute no features, so that waiting for a slot's event covers every
/// earlier frame of that stream).
pub(super) struct SideSlot {
    pub(super) dev_out: DeviceAlloc<u64>,
    pub(super) host_out: PinnedHostSlice<u64>,
    pub(super) done: CudaEvent,
    pub(super) _counted: Counted,
}

impl SideSlot {
    pub(super) fn new(
        dev: &GpuDevice,
        compute: &Arc<CudaStream>,
        words: usize,
    ) -> Result<Self, CudaError> {
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
pub(super) struct Slot {
    /// Pinned staging of host rows, packed, up to 2 bytes per sample.
    pub(super) host_ref: PinnedHostSlice<u8>,
    pub(super) host_dis: PinnedHostSlice<u8>,
    /// Device copies of uploaded or peer-copied planes.
    pub(super) dev_ref: DeviceAlloc<u8>,
    pub(super) dev_dis: DeviceAlloc<u8>,
    /// Chroma staging of the reference and distorted frame, and the packed planes the upload
    /// stream unpacks them into (when a metric reads chroma).
    pub(super) chroma: Option<[ChromaStaging; 2]>,
    pub(super) unpacked: Option<ChromaGpu>,
    /// Whether this frame's chroma was placed (its metrics then read it).
    pub(super) has_chroma: bool,
    /// The scaled luma of a stream scaled to the scoring size ([0]: reference, [1]:
    /// distorted), and its scaled Cb and Cr.
    pub(super) scaled: [Option<DeviceAlloc<u16>>; 2],
    pub(super) scaled_chroma: [Option<[DeviceAlloc<u16>; 2]>; 2],
    /// Where this frame's reference plane is (the next frame's motion reads it too).
    pub(super) ref_plane: DevPlane,
    /// Result words on the device and their pinned read-back.
    pub(super) dev_out: DeviceAlloc<u64>,
    pub(super) host_out: PinnedHostSlice<u64>,
    /// Recorded on the upload stream after the planes' copies.
    pub(super) uploaded: CudaEvent,
    /// Recorded on the compute stream after the kernels and the read-back.
    pub(super) done: CudaEvent,
    /// One per side stream, in the order of [`CudaBackend::sides`].
    pub(super) sides: Vec<SideSlot>,
    /// Frame number (since creation or reset) of the occupant.
    pub(super) index: u64,
    pub(super) full: bool,
    pub(super) has_motion: bool,
    /// The two events, for [`super::fault::live`].
    pub(super) _counted: [Counted; 2],
}

impl Slot {
    /// `plane_bytes`: one input plane of the reference and of the distorted stream at the
    /// backend's sample size (1 byte up to 8 bits, else 2), at each stream's input size;
    /// `chroma`: each stream's input chroma size and the sample size; `scaled`: the samples of
    /// a scaled stream's luma and chroma outputs (`None` for a stream at the scoring size).
    pub(super) fn new(
        dev: &GpuDevice,
        compute: &Arc<CudaStream>,
        plane_bytes: [usize; 2],
        result_words: usize,
        chroma: Option<([(usize, usize); 2], usize)>,
        side_words: &[usize],
        scaled: [Option<(usize, Option<usize>)>; 2],
    ) -> Result<Self, CudaError> {
        let ctx = dev.context();
        // SAFETY: the staging is written (the rows uploaded) before each upload, and the
        // results are only read after a read-back into them has completed.
        let host_ref = unsafe { ctx.alloc_pinned_with_flags::<u8>(plane_bytes[0], 0) }
            .allocating("cuMemHostAlloc(reference staging)", plane_bytes[0])?;
        let host_dis = unsafe { ctx.alloc_pinned_with_flags::<u8>(plane_bytes[1], 0) }
            .allocating("cuMemHostAlloc(distorted staging)", plane_bytes[1])?;
        let host_out = unsafe { ctx.alloc_pinned_with_flags::<u64>(result_words, 0) }
            .allocating("cuMemHostAlloc(results)", result_words * 8)?;
        let dev_ref = alloc_zeroed::<u8>(compute, plane_bytes[0], "cuMemAlloc(reference plane)")?;
        let dev_dis = alloc_zeroed::<u8>(compute, plane_bytes[1], "cuMemAlloc(distorted plane)")?;
        let dev_out = alloc_zeroed::<u64>(compute, result_words, "cuMemAlloc(results)")?;
        let (chroma, unpacked) = match chroma {
            Some((sizes, bytes)) => (
                Some([
                    ChromaStaging::new(dev, compute, sizes[0], bytes)?,
                    ChromaStaging::new(dev, compute, sizes[1], bytes)?,
                ]),
                Some(ChromaGpu::new(dev, compute, sizes)?),
            ),
            None => (None, None),
        };
        let mut scaled_luma = [None, None];
        let mut scaled_chroma = [None, None];
        for (i, s) in scaled.iter().enumerate() {
            if let Some((luma, chroma)) = *s {
                scaled_luma[i] = Some(alloc_zeroed::<u16>(
                    compute,
                    luma,
                    "cuMemAlloc(scaled plane)",
                )?);
                if let Some(n) = chroma {
                    scaled_chroma[i] = Some([
                        alloc_zeroed::<u16>(compute, n, "cuMemAlloc(scaled chroma)")?,
                        alloc_zeroed::<u16>(compute, n, "cuMemAlloc(scaled chroma)")?,
                    ]);
                }
            }
        }
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
            scaled: scaled_luma,
            scaled_chroma,
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
pub(super) struct Hold {
    pub(super) release_after: u64,
    pub(super) _keep: Box<dyn Send>,
}
