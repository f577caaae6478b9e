//! What the CUDA backend keeps per frame in flight ([`Slot`]: staging, device planes, result
//! words, events) and per instance ([`OnCompute`], [`Side`]).

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream, CudaViewMut, PinnedHostSlice};

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
    /// Reads the reference alone (motion): a ladder enqueues it once per frame, into the
    /// first rendition's words, and reads those back for every rendition.
    pub(super) reference_only: bool,
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
    /// The rendition slot it scores: side streams are one per instance and rendition (each
    /// with its own extractor and scratch), so that a ladder's renditions' latency-bound
    /// chains run beside each other as separate backends' would.
    pub(super) rendition: usize,
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

/// One instance's or side stream's share of a ladder frame's launches, run beside the
/// others ([`crate::cuda::staging::run_beside`]).
pub(super) type LaunchJob<'s> = Box<dyn FnOnce() -> Result<(), CudaError> + Send + 's>;

/// Calls `f` with one view of `words` per range of `ranges` (`(start, len)` in words,
/// ascending and disjoint), in that order: the instances' words of a ladder slot, handed to
/// jobs that run at once. Returns what `f` returns.
///
/// Errors: [`CudaError::Driver`] when a range lies outside `words` or before the previous
/// one's end (an internal mistake); `f` is then not called.
pub(super) fn with_views<R>(
    words: CudaViewMut<'_, u64>,
    ranges: &[(usize, usize)],
    f: impl for<'v> FnOnce(Vec<CudaViewMut<'v, u64>>) -> Result<R, CudaError>,
) -> Result<R, CudaError> {
    carve(words, 0, ranges, Vec::with_capacity(ranges.len()), f)
}

/// [`with_views`]' recursion: `words` starts at word `offset`; `done` holds the views cut so
/// far. Each step splits the next range off the rest, so that every view borrows from a
/// frame still on the stack when `f` runs.
fn carve<'a, R>(
    mut words: CudaViewMut<'a, u64>,
    offset: usize,
    ranges: &[(usize, usize)],
    done: Vec<CudaViewMut<'a, u64>>,
    f: impl for<'v> FnOnce(Vec<CudaViewMut<'v, u64>>) -> Result<R, CudaError>,
) -> Result<R, CudaError> {
    let Some((&(start, len), rest)) = ranges.split_first() else {
        return f(done);
    };
    let outside = || CudaError::Driver {
        call: "ladder result words",
        code: "internal: words outside the slot's".to_owned(),
    };
    let gap = start.checked_sub(offset).ok_or_else(outside)?;
    let (_, mut tail) = words.try_split_at_mut(gap).ok_or_else(outside)?;
    let (mine, after) = tail.try_split_at_mut(len).ok_or_else(outside)?;
    // Covariance: the views cut so far live at least as long as this frame's.
    let mut done: Vec<CudaViewMut<'_, u64>> = done;
    done.push(mine);
    carve(after, start + len, rest, done, f)
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

/// One stream's buffers in a slot (the reference's, or one distorted stream's): pinned
/// staging of host rows, the device plane they (or a peer copy) go to, the chroma staging,
/// and the scaled planes of a stream scaled to the scoring size.
pub(super) struct StreamBufs {
    /// Pinned staging of host rows, packed, up to 2 bytes per sample.
    pub(super) host: PinnedHostSlice<u8>,
    /// Device copy of an uploaded or peer-copied plane.
    pub(super) dev: DeviceAlloc<u8>,
    /// Chroma staging (when a metric reads chroma).
    pub(super) chroma: Option<ChromaStaging>,
    /// The scaled luma of a stream scaled to the scoring size, and its scaled Cb and Cr.
    pub(super) scaled: Option<DeviceAlloc<u16>>,
    pub(super) scaled_chroma: Option<[DeviceAlloc<u16>; 2]>,
}

/// What a [`StreamBufs`] is sized for.
#[derive(Clone, Copy)]
pub(super) struct StreamSpec {
    /// One input plane at the backend's sample size (1 byte up to 8 bits, else 2), at the
    /// stream's input size.
    pub(super) plane_bytes: usize,
    /// The stream's input chroma size and the sample size, when a metric reads chroma.
    pub(super) chroma: Option<((usize, usize), usize)>,
    /// The samples of a scaled stream's luma and chroma outputs (`None` for a stream at the
    /// scoring size).
    pub(super) scaled: Option<(usize, Option<usize>)>,
}

impl StreamBufs {
    fn new(
        dev: &GpuDevice,
        compute: &Arc<CudaStream>,
        spec: StreamSpec,
    ) -> Result<Self, CudaError> {
        let ctx = dev.context();
        // SAFETY: the staging is written (the rows uploaded) before each upload.
        let host = unsafe { ctx.alloc_pinned_with_flags::<u8>(spec.plane_bytes, 0) }
            .allocating("cuMemHostAlloc(plane staging)", spec.plane_bytes)?;
        let dev_plane = alloc_zeroed::<u8>(compute, spec.plane_bytes, "cuMemAlloc(input plane)")?;
        let chroma = spec
            .chroma
            .map(|(size, bytes)| ChromaStaging::new(dev, compute, size, bytes))
            .transpose()?;
        let (mut scaled, mut scaled_chroma) = (None, None);
        if let Some((luma, chroma)) = spec.scaled {
            scaled = Some(alloc_zeroed::<u16>(
                compute,
                luma,
                "cuMemAlloc(scaled plane)",
            )?);
            if let Some(n) = chroma {
                scaled_chroma = Some([
                    alloc_zeroed::<u16>(compute, n, "cuMemAlloc(scaled chroma)")?,
                    alloc_zeroed::<u16>(compute, n, "cuMemAlloc(scaled chroma)")?,
                ]);
            }
        }
        Ok(Self {
            host,
            dev: dev_plane,
            chroma,
            scaled,
            scaled_chroma,
        })
    }
}

/// A rendition's share of a frame set in a slot (a pair's one, or each of a ladder's): its
/// rendition slot, whether it computed the full features, whether its chroma was placed.
#[derive(Clone, Copy)]
pub(super) struct Occupant {
    pub(super) rendition: usize,
    pub(super) full: bool,
    pub(super) has_chroma: bool,
}

/// Everything one frame in flight owns.
pub(super) struct Slot {
    /// `[0]`: the reference's buffers; `[1 + k]`: distorted stream `k`'s (one for a pair,
    /// one per rendition for a ladder).
    pub(super) streams: Vec<StreamBufs>,
    /// Per distorted stream, the packed chroma planes the upload stream unpacks into (for
    /// the reference's chroma size and that stream's; a ladder unpacks the reference once,
    /// into the first).
    pub(super) unpacked: Vec<ChromaGpu>,
    /// Where this frame's reference plane is (the next frame's motion reads it too).
    pub(super) ref_plane: DevPlane,
    /// Where a pair frame's distorted plane (at the scoring size) is: the next frame's
    /// `speed_temporal` reads it too.
    pub(super) dis_plane: DevPlane,
    /// Result words on the device and their pinned read-back: per instance on the compute
    /// stream, its words for each distorted stream in turn.
    pub(super) dev_out: DeviceAlloc<u64>,
    pub(super) host_out: PinnedHostSlice<u64>,
    /// Recorded on the upload stream after the planes' copies.
    pub(super) uploaded: CudaEvent,
    /// Recorded on the compute stream after the kernels and the read-back.
    pub(super) done: CudaEvent,
    /// One per side stream, in the order of [`CudaBackend::sides`].
    pub(super) sides: Vec<SideSlot>,
    /// A ladder's: recorded on each compute lane after its instance's kernels (the compute
    /// stream waits for them all before the read-back).
    pub(super) lane_done: Vec<CudaEvent>,
    pub(super) _lane_counted: Vec<Counted>,
    /// Frame number (since creation or reset) of the occupant.
    pub(super) index: u64,
    /// Whether any rendition of the set computed the features other than the
    /// reference-only ones.
    pub(super) full: bool,
    pub(super) has_motion: bool,
    /// The renditions submitted, in submission order (capacity for all, made here).
    pub(super) occupants: Vec<Occupant>,
    /// The two events, for [`super::fault::live`].
    pub(super) _counted: [Counted; 2],
}

impl Slot {
    /// `streams`: the reference's buffers, then each distorted stream's; `result_words`:
    /// the words of the instances on the compute stream for one distorted stream (the slot
    /// holds as many per distorted stream); `chroma`: the reference's and each distorted
    /// stream's input chroma size; `side_words`: each side stream's words; `lanes`: a
    /// ladder's compute lanes (0 for a pair).
    pub(super) fn new(
        dev: &GpuDevice,
        compute: &Arc<CudaStream>,
        streams: &[StreamSpec],
        result_words: usize,
        side_words: &[usize],
        lanes: usize,
    ) -> Result<Self, CudaError> {
        let ctx = dev.context();
        let n = streams.len().saturating_sub(1).max(1);
        let words = result_words * n;
        // SAFETY: the results are only read after a read-back into them has completed.
        let host_out = unsafe { ctx.alloc_pinned_with_flags::<u64>(words, 0) }
            .allocating("cuMemHostAlloc(results)", words * 8)?;
        let dev_out = alloc_zeroed::<u64>(compute, words, "cuMemAlloc(results)")?;
        let bufs = streams
            .iter()
            .map(|&s| StreamBufs::new(dev, compute, s))
            .collect::<Result<Vec<_>, _>>()?;
        let mut unpacked = Vec::new();
        if let Some((r, _)) = streams.first().and_then(|s| s.chroma) {
            for d in streams.iter().skip(1) {
                if let Some((d, _)) = d.chroma {
                    unpacked.push(ChromaGpu::new(dev, compute, [r, d])?);
                }
            }
        }
        let flags = Some(CUevent_flags::CU_EVENT_DISABLE_TIMING);
        let uploaded = ctx.new_event(flags).during("cuEventCreate(uploaded)")?;
        let done = ctx.new_event(flags).during("cuEventCreate(done)")?;
        let sides = side_words
            .iter()
            .map(|&w| SideSlot::new(dev, compute, w))
            .collect::<Result<Vec<_>, _>>()?;
        let lane_done = (0..lanes)
            .map(|_| ctx.new_event(flags).during("cuEventCreate(lane done)"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            streams: bufs,
            unpacked,
            ref_plane: DevPlane::default(),
            dis_plane: DevPlane::default(),
            dev_out,
            host_out,
            uploaded,
            done,
            sides,
            _lane_counted: lane_done
                .iter()
                .map(|_| Counted::new(Handle::Event))
                .collect(),
            lane_done,
            index: 0,
            full: false,
            has_motion: false,
            occupants: Vec::with_capacity(n),
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
