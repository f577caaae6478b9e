//! The CUDA backend's one enqueue of a frame set (the reference and its renditions, a pair
//! being the set of one) into a slot: placement, the instances' kernels, the read-back.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream, CudaViewMut};
use smallvec::SmallVec;

use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::plane::{ChromaDev, DevPlane};
use crate::cuda::staging::run_beside;
use crate::engine::frame_set::{FrameChroma, FrameSet, RenditionFrame};
use crate::features::DevFrame;
use crate::video::frame::LumaInput;

use super::cuda::CudaBackend;
use super::cuda_place::{
    internal, place_in, scale_chroma, scale_luma_in, GpuScaler, Placed, PlacedRendition,
    RenditionParts,
};
use super::cuda_slots::{
    with_views, LaunchJob, Occupant, OnCompute, Side, SideSlot, StreamBufs, SLOTS,
};

/// A set's per-rendition lists, on the stack up to four renditions: a pair's frames
/// allocate nothing on the host (tests/gpu_lessons.rs).
type Few<T> = SmallVec<[T; 4]>;

/// One rendition of a set as placed for the kernels: its slot, whether it computes the full
/// features this time, its luma (and chroma, with the reference's) at the scoring size.
struct OnDevice {
    rendition: usize,
    full: bool,
    plane: DevPlane,
    chroma: Option<ChromaDev>,
}

/// The frames an instance's kernels read, as [`DevFrame`]s of the set's placed renditions,
/// with each one's rendition slot (the chunk of the instance's words it writes).
struct Frames<'a> {
    /// Every placed rendition (an instance reading earlier frames runs on each).
    placed: Few<(usize, DevFrame<'a>)>,
    /// The renditions computing the full features (every other instance runs on these).
    full: Few<DevFrame<'a>>,
    full_slots: Few<usize>,
    /// The reference alone (distorted = reference, no chroma): what a reference-only
    /// instance (motion) reads, once per set.
    reference: DevFrame<'a>,
}

impl CudaBackend {
    /// Enqueues one set into slot `s` (checked by [`CudaBackend::check_set`]):
    /// - the reference's luma placed and scaled once, its chroma unpacked once when a
    ///   rendition with full features brings chroma;
    /// - each rendition with full features (a pair's on every frame) placed into its own
    ///   planes and scaled, its chroma unpacked when it computes full features;
    /// - the reference-only instances (motion) once, every other instance once over those
    ///   renditions (one [`crate::features::CudaExtractor::enqueue_ladder`] call over
    ///   several);
    /// - the read-back of the slot's words, and the slot's occupants that
    ///   [`CudaBackend::finish_oldest`] reads.
    ///
    /// How the work is spread is the one choice by size. A pair (one rendition) stages its
    /// two planes in turn, each banded across the staging pool, and runs its instances in
    /// layout order on the compute stream, each writing its own words: the pair strategy,
    /// fastest for one rendition. A ladder stages every plane by a job of its own beside the
    /// others and launches each instance on its own lane beside the others
    /// ([`run_beside`]), its words zeroed first (the ladder kernels add to them).
    pub(super) fn enqueue(&mut self, s: usize, set: FrameSet<'_>) -> Result<(), CudaError> {
        let index = self.start_frame(s)?;
        let has_motion = index > 0;
        let prev = (s + SLOTS - 1) % SLOTS;
        // An instance reading earlier distorted frames (a pair's only) reads this frame's
        // distorted plane at the next frame.
        let keeps_distorted = self.layout.previous_distorted_reader().is_some();
        let (ref_plane, computed) = self.place_set(s, set, index, keeps_distorted)?;
        let slot = &mut self.slots[s];
        if !self.lanes.is_empty() {
            // Every result word of the set zeroed at once: the instances' ladder kernels add
            // to them (`CudaExtractor::enqueue_ladder`'s contract).
            self.upload
                .memset_zeros(&mut *slot.dev_out)
                .during("cuMemsetD8Async(ladder results)")?;
        }
        slot.uploaded
            .record(&self.upload)
            .during("cuEventRecord(uploaded)")?;
        self.compute
            .wait(&slot.uploaded)
            .during("cuStreamWaitEvent(compute)")?;
        // Instances reading the previous frame's reference (or distorted) plane read the
        // previous slot's, still valid: its slot and hold outlive this frame's kernels.
        let previous = has_motion.then_some(self.slots[prev].ref_plane);
        let previous_distorted =
            (has_motion && keeps_distorted).then_some(self.slots[prev].dis_plane);
        let frame = |r| dev_frame(r, ref_plane, previous, previous_distorted);
        let frames = Frames {
            placed: computed.iter().map(|r| (r.rendition, frame(r))).collect(),
            full: computed.iter().filter(|r| r.full).map(frame).collect(),
            full_slots: computed
                .iter()
                .filter(|r| r.full)
                .map(|r| r.rendition)
                .collect(),
            reference: DevFrame {
                reference: ref_plane,
                distorted: ref_plane,
                previous,
                previous_distorted: None,
                chroma: None,
            },
        };
        self.launch(s, &frames)?;
        let slot = &mut self.slots[s];
        for done in &slot.lane_done {
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
        slot.dis_plane = computed.first().map(|r| r.plane).unwrap_or_default();
        slot.index = index;
        slot.full = !frames.full.is_empty();
        slot.has_motion = has_motion;
        Ok(())
    }

    /// Places the set's planes into slot `s` for frame `index` (the first half of
    /// [`CudaBackend::enqueue`]; `keeps_distorted`: a rendition's plane is read again at the
    /// next frame, so held one frame longer) and records its occupants: returns the
    /// reference's luma at the scoring size and the renditions placed, in the set's order.
    fn place_set(
        &mut self,
        s: usize,
        set: FrameSet<'_>,
        index: u64,
        keeps_distorted: bool,
    ) -> Result<(DevPlane, Few<OnDevice>), CudaError> {
        let FrameSet {
            reference,
            reference_chroma,
            renditions,
        } = set;
        let beside = !self.lanes.is_empty();
        // A ladder places only its renditions with full features this time; a pair its
        // distorted plane on every frame (it always has: tests/gpu_lessons.rs counts those
        // bytes), as `speed_temporal` needs.
        let place_all = !beside || keeps_distorted;
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
                return Err(internal("a slot without reference chroma"));
            };
            let Some(staging) = r.chroma.as_mut() else {
                return Err(internal("a slot without reference chroma staging"));
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
        let to = Target {
            upload: &self.upload,
            context: self.context,
            bpc: self.bpc,
            index,
            chroma_size: self.chroma_size.unwrap_or_default(),
            ref_chroma: ref_cplanes,
        };
        let slot = &mut self.slots[s];
        slot.occupants.clear();
        let (Some((ref_bufs, rend_bufs)), Some((ref_scaler, rend_scalers))) = (
            slot.streams.split_first_mut(),
            self.scalers.split_first_mut(),
        ) else {
            return Err(internal("a slot without reference buffers"));
        };
        let mut parts: Few<Option<RenditionParts<'_>>> = rend_bufs
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
        // What each rendition to place needs: its parts and its frame, with where its
        // result goes (`results[i]` belongs to `renditions[i]`, as `slot.occupants[i]`).
        let mut results: Few<Option<PlacedRendition>> = renditions.iter().map(|_| None).collect();
        let release_after = if keeps_distorted { index + 1 } else { index };
        let mut work: Few<Placing<'_, '_>> = Few::new();
        for (r, out) in renditions.into_iter().zip(results.iter_mut()) {
            slot.occupants.push(Occupant {
                rendition: r.rendition,
                full: r.full,
                has_chroma: false,
            });
            if !r.full && !place_all {
                continue;
            }
            let Some(part) = parts.get_mut(r.rendition).and_then(Option::take) else {
                return Err(internal("a rendition without its buffers"));
            };
            work.push((part, r, out));
        }
        // The reference (read again by the next frame's motion: held one frame longer) and
        // each rendition, each by a job that touches only its stream's buffers, scaler and
        // chroma unpacking; their copies and kernels all go to the upload stream, each job's
        // in its own order. A pair runs them in turn on this thread (each plane's rows are
        // staged in bands across the staging pool; nothing is allocated per frame). A
        // ladder runs them beside each other: one thread staging every plane's rows in turn
        // made a ladder from system memory slower than separate elements, which each stage
        // their own (issue 30). (The reference's chroma, above, comes first: it shares its
        // unpacking with rendition 0's.)
        let placed_ref = if beside {
            let to = &to;
            let mut ref_result = None;
            let mut jobs: Vec<LaunchJob<'_>> = Vec::with_capacity(work.len() + 1);
            let out = &mut ref_result;
            jobs.push(Box::new(move || {
                *out = Some(place_reference(ref_bufs, ref_scaler, reference, to)?);
                Ok(())
            }));
            for (part, r, out) in work {
                jobs.push(Box::new(move || {
                    *out = Some(place_rendition(part, r, release_after, to)?);
                    Ok(())
                }));
            }
            run_beside(jobs)?;
            ref_result.ok_or_else(|| internal("the set's reference was not placed"))?
        } else {
            let placed = place_reference(ref_bufs, ref_scaler, reference, &to)?;
            for (part, r, out) in work {
                *out = Some(place_rendition(part, r, release_after, &to)?);
            }
            placed
        };
        self.bytes_copied += placed_ref.bytes;
        self.holds.extend(placed_ref.hold);
        let mut computed = Few::new();
        for (result, occupant) in results.into_iter().zip(slot.occupants.iter_mut()) {
            let Some(PlacedRendition { placed, chroma }) = result else {
                continue;
            };
            self.bytes_copied += placed.bytes;
            self.holds.extend(placed.hold);
            occupant.has_chroma = chroma.is_some();
            computed.push(OnDevice {
                rendition: occupant.rendition,
                full: occupant.full,
                plane: placed.plane,
                chroma,
            });
        }
        Ok((placed_ref.plane, computed))
    }

    /// Enqueues every instance's kernels of slot `s` over `frames` (the second half of
    /// [`CudaBackend::enqueue`]): for a pair, each instance in layout order on the compute
    /// stream, each side stream's instance on its own stream; for a ladder, each instance on
    /// its lane (waiting for the uploads, recording its lane's event) and each side stream,
    /// by jobs beside each other. A side stream's instance runs on its rendition's frame
    /// when that computes full features.
    fn launch(&mut self, s: usize, frames: &Frames<'_>) -> Result<(), CudaError> {
        let n = self.ladder.max(1);
        let slot = &mut self.slots[s];
        let uploaded = &slot.uploaded;
        if self.lanes.is_empty() {
            for c in &mut self.on_compute {
                let w = c.ex.result_words();
                let words = slot
                    .dev_out
                    .try_slice_mut(c.at * n..(c.at + w) * n)
                    .ok_or_else(|| internal("an instance's words outside the slot's"))?;
                launch_instance(c, &self.compute, words, frames, false)?;
            }
            for (side, out) in self.sides.iter_mut().zip(slot.sides.iter_mut()) {
                launch_side(side, out, frames, uploaded)?;
            }
            return Ok(());
        }
        let share = self.share_reference;
        let (lanes, lane_done) = (&self.lanes, &slot.lane_done);
        // Each instance's words for all renditions, disjoint ranges of the slot's words.
        let ranges: Vec<(usize, usize)> = self
            .on_compute
            .iter()
            .map(|c| (c.at * n, c.ex.result_words() * n))
            .collect();
        // Launching is what limits a ladder on one thread (about 8 µs of CPU per kernel on
        // the H200 host, 100+ kernels per frame with vmaf_v0.6.1, where five elements launch
        // on five threads): each instance's lane and each side stream is enqueued by a job
        // of its own, beside the others. Every job only touches its own extractor, stream,
        // event and words.
        with_views(
            slot.dev_out.slice_mut(..),
            &ranges,
            |views| -> Result<(), CudaError> {
                let mut jobs: Vec<LaunchJob<'_>> = Vec::with_capacity(views.len() + 8);
                for ((j, c), words) in self.on_compute.iter_mut().enumerate().zip(views) {
                    let (Some(lane), Some(done)) = (lanes.get(j), lane_done.get(j)) else {
                        return Err(internal("an instance without its lane"));
                    };
                    jobs.push(Box::new(move || {
                        // On its lane, after the uploads; its scratch is used in frame order.
                        lane.wait(uploaded).during("cuStreamWaitEvent(lane)")?;
                        launch_instance(c, lane, words, frames, share)?;
                        done.record(lane).during("cuEventRecord(lane done)")
                    }));
                }
                for (side, out) in self.sides.iter_mut().zip(slot.sides.iter_mut()) {
                    jobs.push(Box::new(move || launch_side(side, out, frames, uploaded)));
                }
                run_beside(jobs)
            },
        )
    }
}

/// A rendition to place: its share of the slot, its frame, and where its result goes.
type Placing<'s, 'f> = (
    RenditionParts<'s>,
    RenditionFrame<'f>,
    &'s mut Option<PlacedRendition>,
);

/// What every placement job of a set shares: the upload stream, the backend's `CUcontext`
/// and bits per sample, the frame's number, the scoring chroma size and the reference's
/// chroma planes (when placed).
struct Target<'a> {
    upload: &'a Arc<CudaStream>,
    context: usize,
    bpc: u32,
    index: u64,
    chroma_size: (usize, usize),
    ref_chroma: Option<[DevPlane; 2]>,
}

/// The reference's luma placed into its buffers and scaled to the scoring size, held until
/// the next frame is collected (its motion reads this plane too).
fn place_reference(
    bufs: &mut StreamBufs,
    scaler: &mut Option<GpuScaler>,
    reference: LumaInput<'_>,
    to: &Target<'_>,
) -> Result<Placed, CudaError> {
    let mut placed = place_in(
        bufs,
        reference,
        (to.upload, to.context, to.bpc),
        to.index,
        to.index + 1,
    )?;
    placed.plane = scale_luma_in(bufs, scaler, to.upload, placed.plane)?;
    Ok(placed)
}

/// Rendition `r` placed into its parts: its luma scaled to the scoring size (held until
/// frame `release_after` is collected), and, when it computes full features and brings
/// chroma while the reference's was placed, its chroma unpacked and scaled beside the
/// reference's.
fn place_rendition(
    part: RenditionParts<'_>,
    r: RenditionFrame<'_>,
    release_after: u64,
    to: &Target<'_>,
) -> Result<PlacedRendition, CudaError> {
    let RenditionParts {
        bufs,
        scaler,
        unpacked,
    } = part;
    let ctx = (to.upload, to.context, to.bpc);
    let mut placed = place_in(bufs, r.luma, ctx, to.index, release_after)?;
    placed.plane = scale_luma_in(bufs, scaler, to.upload, placed.plane)?;
    let chroma = match (r.full, r.chroma.as_ref(), to.ref_chroma) {
        (true, Some(FrameChroma::Components(c)), Some(reference)) => Some((c, reference)),
        _ => None,
    };
    let mut cdev = None;
    if let (Some((c, reference)), Some(gpu)) = (chroma, unpacked) {
        let Some(staging) = bufs.chroma.as_mut() else {
            return Err(internal("a slot without rendition chroma staging"));
        };
        let (pd, nd) = gpu.place(staging, c, 1, to.context, to.upload)?;
        placed.bytes += nd as u64;
        let mut planes = gpu.unpack_one(to.upload, 1, &pd)?;
        scale_chroma(scaler, &mut bufs.scaled_chroma, to.upload, &mut planes)?;
        cdev = Some(ChromaDev {
            reference,
            distorted: planes,
            width: to.chroma_size.0,
            height: to.chroma_size.1,
        });
    }
    Ok(PlacedRendition {
        placed,
        chroma: cdev,
    })
}

/// A side stream's instance on its rendition's frame when that computes full features
/// (after the uploads), and its event on every frame: waiting for a slot's event covers
/// every earlier frame of that stream.
fn launch_side(
    side: &mut Side,
    out: &mut SideSlot,
    frames: &Frames<'_>,
    uploaded: &CudaEvent,
) -> Result<(), CudaError> {
    let frame = frames
        .full_slots
        .iter()
        .position(|&k| k == side.rendition)
        .and_then(|i| frames.full.get(i));
    if let Some(frame) = frame {
        side.stream
            .wait(uploaded)
            .during("cuStreamWaitEvent(side)")?;
        side.enqueue(out, frame)?;
    }
    out.done
        .record(&side.stream)
        .during("cuEventRecord(extra done)")
}

/// Rendition `r`'s frame for the kernels, with the set's reference and the previous frame's
/// planes.
fn dev_frame(
    r: &OnDevice,
    reference: DevPlane,
    previous: Option<DevPlane>,
    previous_distorted: Option<DevPlane>,
) -> DevFrame<'_> {
    DevFrame {
        reference,
        distorted: r.plane,
        previous,
        previous_distorted,
        chroma: r.chroma.as_ref(),
    }
}

/// Rendition slot `k`'s `w` words of an instance's `words`.
///
/// Errors: [`CudaError::Driver`] when they lie outside `words` (an internal mistake).
fn chunk<'v>(
    words: &'v mut CudaViewMut<'_, u64>,
    k: usize,
    w: usize,
) -> Result<CudaViewMut<'v, u64>, CudaError> {
    words
        .try_slice_mut(k * w..(k + 1) * w)
        .ok_or_else(|| internal("result words of a rendition slot"))
}

/// One instance's kernels of a set on `stream` into `words` (its words for every rendition
/// slot, `result_words()` each): a reference-only instance once, into the first slot's words
/// (on every frame when it reads the previous one, else when a rendition computes full
/// features); an instance reading earlier frames on every placed rendition; any other on
/// the renditions with full features, in one
/// [`crate::features::CudaExtractor::enqueue_ladder`] call (`ladder`: a ladder's lanes
/// sharing the reference's work, into zeroed words), else one
/// [`crate::features::CudaExtractor::enqueue`] each.
fn launch_instance(
    c: &mut OnCompute,
    stream: &Arc<CudaStream>,
    mut words: CudaViewMut<'_, u64>,
    frames: &Frames<'_>,
    ladder: bool,
) -> Result<(), CudaError> {
    let w = c.ex.result_words();
    if c.reference_only {
        if !c.previous && frames.full.is_empty() {
            return Ok(());
        }
        return c
            .ex
            .enqueue(stream, &frames.reference, &mut chunk(&mut words, 0, w)?);
    }
    if c.previous {
        for (k, f) in &frames.placed {
            c.ex.enqueue(stream, f, &mut chunk(&mut words, *k, w)?)?;
        }
        return Ok(());
    }
    if !ladder || frames.full.is_empty() {
        for (&k, f) in frames.full_slots.iter().zip(&frames.full) {
            c.ex.enqueue(stream, f, &mut chunk(&mut words, k, w)?)?;
        }
        return Ok(());
    }
    // The ladder kernels take every rendition's words at once.
    let mut all: Few<Option<CudaViewMut<u64>>> = words.chunks_exact_mut(w).map(Some).collect();
    let mut outs = frames
        .full_slots
        .iter()
        .map(|&k| {
            all.get_mut(k)
                .and_then(Option::take)
                .ok_or_else(|| internal("result words of a rendition slot"))
        })
        .collect::<Result<Few<_>, _>>()?;
    c.ex.enqueue_ladder(stream, &frames.full, &mut outs)
}
