//! Making a CUDA backend: streams, per-instance extractors and lanes, slots with their pinned
//! staging and device planes, scalers, all allocated up front.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::cuda::context::GpuDevice;
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::fault::{Counted, Handle};
use crate::engine::scale::cuda::CudaPlaneScaler;
use crate::engine::scale::{Scaling, StreamScaler};
use crate::features::{Geometry, Layout};

use super::cuda::CudaBackend;
use super::cuda_place::{sample_bytes, GpuScaler};
use super::cuda_slots::{OnCompute, Side, Slot, StreamSpec, SLOTS};

impl CudaBackend {
    /// The backend of [`CudaBackend::new_scaled`] (checked there): the reference's and
    /// each rendition's scaler (`None` for a stream at the scoring size); more than one
    /// rendition makes a ladder backend (lanes, a side stream per instance and rendition,
    /// the instances' ladder scratch), one a pair's.
    pub(super) fn build(
        dev: &GpuDevice,
        layout: &Arc<Layout>,
        geometry: Geometry,
        scaling: &Scaling,
    ) -> Result<Self, CudaError> {
        let (reference, distorted) = (scaling.reference.as_ref(), scaling.renditions.as_slice());
        let ladder = distorted.len() > 1;
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
                        rendition: k,
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
}
