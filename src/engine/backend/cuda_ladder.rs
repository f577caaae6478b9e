//! The CUDA backend's frame sets of several renditions: the reference placed once, the
//! reference-only instances run once, each rendition's lanes, and their read-back.

use cudarc::driver::CudaViewMut;

use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::plane::{ChromaDev, DevPlane};
use crate::cuda::staging::run_beside;
use crate::engine::frame_set::{FrameChroma, FrameSet};
use crate::features::DevFrame;

use super::cuda::CudaBackend;
use super::cuda_place::{
    internal, place_in, scale_chroma, scale_luma_in, Placed, PlacedRendition, RenditionParts,
};
use super::cuda_slots::{with_views, LaunchJob, Occupant, SLOTS};

impl CudaBackend {
    /// Enqueues one ladder frame into slot `s` (checked by [`CudaBackend::check_set`]):
    /// the reference placed and scaled once, its chroma unpacked once; each rendition with
    /// full features placed into its own planes, scaled, its chroma unpacked; the
    /// reference-only instances once, every other instance once over those renditions.
    pub(super) fn enqueue_ladder(
        &mut self,
        s: usize,
        frame: FrameSet<'_>,
    ) -> Result<(), CudaError> {
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
}
