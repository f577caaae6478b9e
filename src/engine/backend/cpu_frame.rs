//! What every frame of a CPU backend is scored with, on the calling thread or a pool worker:
//! the frame plan, every instance's CPU half with its scratch, and the planes brought to the
//! scoring size.

use std::sync::Arc;

use rayon::prelude::*;

use crate::engine::error::EngineError;
use crate::engine::frame_set::{FrameChroma, SetFeatures};
use crate::engine::scale::cpu::{scale_plane, Scratch};
use crate::engine::scale::PlaneScaler;
use crate::features::{CpuExtractor, Geometry, HostFrame, Layout, RawFeatures};
use crate::video::frame::{ChromaPair, FeatureError, LumaInput, LumaPlane};

/// What every frame of one backend is scored with: the geometry and the layout's instances.
#[derive(Debug, Clone)]
pub(crate) struct FramePlan {
    pub(crate) geometry: Geometry,
    pub(crate) layout: Arc<Layout>,
}

impl FramePlan {
    /// Whether an instance reads the previous distorted frame (`speed_temporal`), which the
    /// backend then keeps.
    pub(crate) fn keeps_distorted(&self) -> bool {
        self.layout.previous_distorted_reader().is_some()
    }
}

/// Every instance's CPU half (scratch sized for one geometry): one set per thread scoring a
/// frame.
pub(crate) struct Extractors {
    list: Vec<Box<dyn CpuExtractor>>,
    /// A worker's scaled distorted planes (luma, Cb, Cr) and the scaler's scratch, when the
    /// distorted stream is scaled on the pool ([`CpuBackend::with_scaling`]).
    pub(crate) scaled: Scaled,
    /// A ladder's renditions' planes, one set per rendition of a ladder frame (by position
    /// in the frame), grown on first use.
    pub(crate) ladder: Vec<RenditionBuffers>,
}

/// One rendition's planes in a ladder frame: host rows converted, then scaled luma and
/// chroma.
#[derive(Default)]
pub(crate) struct RenditionBuffers {
    pub(crate) host: Vec<u16>,
    pub(crate) luma: Vec<u16>,
    pub(crate) chroma: [Vec<u16>; 2],
}

/// One rendition's planes at the scoring size, as [`Extractors::extract_ladder`] reads them.
pub(crate) struct LadderPlanes<'a> {
    /// The rendition's slot.
    pub(crate) rendition: usize,
    pub(crate) luma: LumaPlane<'a>,
    /// Its Cb and Cr (only used with the reference's).
    pub(crate) chroma: Option<[LumaPlane<'a>; 2]>,
    pub(crate) full: bool,
}

impl Extractors {
    pub(crate) fn new(plan: &FramePlan) -> Result<Self, FeatureError> {
        let list = plan
            .layout
            .instances()
            .iter()
            .map(|i| i.cpu(&plan.geometry))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            list,
            scaled: Scaled::default(),
            ladder: Vec::new(),
        })
    }

    /// One ladder frame's values, one [`RawFeatures`] per rendition of `renditions` (in its
    /// order, with its slot): the reference-only instances (motion) computed once against
    /// `prev` / `prev2` and copied into every rendition; the other instances that read the
    /// previous frame on every rendition; the rest on the renditions that are `full` (0 on
    /// the others), through [`CpuExtractor::extract_ladder`]. A rendition's chroma is read
    /// only with the reference's. `split` as in [`Extractors::extract`]: the instances then
    /// run in parallel.
    ///
    /// Errors: planes of another geometry, an extractor's error.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn extract_ladder(
        &mut self,
        plan: &FramePlan,
        prev: Option<&LumaPlane>,
        prev2: Option<&LumaPlane>,
        reference: &LumaPlane,
        reference_chroma: Option<&[LumaPlane; 2]>,
        renditions: &[LadderPlanes],
        split: bool,
    ) -> Result<SetFeatures, EngineError> {
        let geometry = plan.geometry.triple();
        FeatureError::check_plane("vmaf", geometry, reference)?;
        for r in renditions {
            FeatureError::check_plane("vmaf", geometry, &r.luma)?;
        }
        let layout = &plan.layout;
        let mut raws: Vec<RawFeatures> = renditions
            .iter()
            .map(|_| RawFeatures::new(layout))
            .collect();
        let chroma: Vec<Option<ChromaPair>> = renditions
            .iter()
            .map(|r| match (reference_chroma, r.chroma) {
                (Some(rc), Some(dc)) => Some(ChromaPair {
                    reference: *rc,
                    distorted: dc,
                }),
                _ => None,
            })
            .collect();
        let frames: Vec<HostFrame> = renditions
            .iter()
            .zip(&chroma)
            .map(|(r, c)| HostFrame {
                reference,
                distorted: &r.luma,
                previous: prev,
                previous2: prev2,
                previous_distorted: None,
                chroma: c.as_ref(),
            })
            .collect();
        // Per instance: each rendition's slice of its values.
        let n = layout.instances().len();
        let mut outs: Vec<Vec<&mut [f64]>> = (0..n)
            .map(|_| Vec::with_capacity(renditions.len()))
            .collect();
        for raw in &mut raws {
            let mut rest = raw.values_mut();
            for (i, slot) in outs.iter_mut().enumerate() {
                let (out, tail) = std::mem::take(&mut rest).split_at_mut(layout.span(i).len());
                rest = tail;
                slot.push(out);
            }
        }
        let frames = &frames;
        let jobs: Vec<_> = self
            .list
            .iter_mut()
            .zip(layout.instances())
            .zip(outs)
            .filter(|_| !renditions.is_empty())
            .map(|((ex, inst), outs)| (ex, inst.needs(), outs))
            .collect();
        let run = |(ex, needs, mut outs): (
            &mut Box<dyn CpuExtractor>,
            crate::features::Needs,
            Vec<&mut [f64]>,
        )|
         -> Result<(), FeatureError> {
            if needs.reference_only {
                // Reads the reference frames only: once, copied to every rendition.
                let Some((first, rest)) = outs.split_first_mut() else {
                    return Ok(());
                };
                if let Some(f) = frames.first() {
                    ex.extract(f, first)?;
                }
                for o in rest {
                    o.copy_from_slice(first);
                }
                return Ok(());
            }
            let (sel, mut sel_outs): (Vec<HostFrame>, Vec<&mut [f64]>) = frames
                .iter()
                .zip(outs)
                .zip(renditions)
                .filter(|(_, r)| r.full || needs.previous)
                .map(|((f, o), _)| (*f, o))
                .unzip();
            if sel.is_empty() {
                return Ok(());
            }
            ex.extract_ladder(&sel, &mut sel_outs)
        };
        if split {
            jobs.into_par_iter().try_for_each(run)?;
        } else {
            jobs.into_iter().try_for_each(run)?;
        }
        Ok(renditions.iter().map(|r| r.rendition).zip(raws).collect())
    }

    /// One frame pair's values: the instances that read the previous frame on every frame
    /// (0 without `prev`), the others when `full`. With `split` (on a pool thread only: rayon
    /// runs in the current thread's pool) the instances run in parallel; they share nothing,
    /// so the values do not depend on it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn extract(
        &mut self,
        plan: &FramePlan,
        prev: Option<&LumaPlane>,
        prev2: Option<&LumaPlane>,
        prev_dis: Option<&LumaPlane>,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        chroma: Option<&ChromaPair>,
        full: bool,
        split: bool,
    ) -> Result<RawFeatures, EngineError> {
        let geometry = plan.geometry.triple();
        FeatureError::check_plane("vmaf", geometry, reference)?;
        FeatureError::check_plane("vmaf", geometry, distorted)?;
        let frame = HostFrame {
            reference,
            distorted,
            previous: prev,
            previous2: prev2,
            previous_distorted: prev_dis,
            chroma,
        };
        let mut raw = RawFeatures::new(&plan.layout);
        let layout = &plan.layout;
        // Each instance's own slice of the values.
        let mut jobs: Vec<(&mut Box<dyn CpuExtractor>, &mut [f64])> =
            Vec::with_capacity(self.list.len());
        let mut rest = raw.values_mut();
        for (i, (ex, inst)) in self.list.iter_mut().zip(layout.instances()).enumerate() {
            let (out, tail) = std::mem::take(&mut rest).split_at_mut(layout.span(i).len());
            rest = tail;
            if full || inst.needs().previous {
                jobs.push((ex, out));
            }
        }
        let run = |(ex, out): (&mut Box<dyn CpuExtractor>, &mut [f64])| ex.extract(&frame, out);
        if split {
            jobs.into_par_iter().try_for_each(run)?;
        } else {
            jobs.into_iter().try_for_each(run)?;
        }
        Ok(raw)
    }
}

/// Scaled planes (reference / distorted luma, then their Cb and Cr) and the scaler's
/// scratch, reused frame after frame.
#[derive(Default)]
pub(crate) struct Scaled {
    pub(crate) luma: [Vec<u16>; 2],
    pub(crate) chroma: [[Vec<u16>; 2]; 2],
    pub(crate) scratch: Scratch,
}

/// `plane` through `scaler` into `out`, as a plane of the scaler's output size; `plane` as it
/// is without a scaler.
pub(crate) fn scale_into<'a>(
    scaler: Option<&PlaneScaler>,
    plane: LumaPlane<'a>,
    scratch: &mut Scratch,
    out: &'a mut Vec<u16>,
) -> Result<LumaPlane<'a>, EngineError> {
    let Some(s) = scaler else {
        return Ok(plane);
    };
    let (dw, dh) = s.dst();
    let wrong = || {
        EngineError::from(FeatureError::wrong_size(
            "scale",
            (s.src().0, s.src().1, plane.bpc),
            (plane.width, plane.height),
        ))
    };
    if !scale_plane(s, &plane, scratch, out) {
        return Err(wrong());
    }
    LumaPlane::packed(out, dw, dh, plane.bpc).ok_or_else(wrong)
}

pub(crate) fn device_refused() -> EngineError {
    EngineError::Backend {
        backend: "cpu",
        message: "frames in GPU memory must be mapped to host memory for the CPU backend".into(),
    }
}

/// The packed planes of a ladder frame's chroma; the CPU backend does not unpack buffer
/// components.
pub(super) fn packed_chroma<'a>(
    c: Option<FrameChroma<'a>>,
) -> Result<Option<[LumaPlane<'a>; 2]>, EngineError> {
    match c {
        None => Ok(None),
        Some(FrameChroma::Packed(p)) => Ok(Some(p)),
        Some(FrameChroma::Components(_)) => Err(EngineError::Backend {
            backend: "cpu",
            message: "the CPU backend takes packed chroma planes, not buffer components".into(),
        }),
    }
}

/// One rendition's luma (and chroma) converted into `b` and scaled by `scaler` (if any) to
/// the scoring size.
pub(crate) fn rendition_planes<'b>(
    plan: &FramePlan,
    f: &'b crate::engine::frame_set::RenditionFrame<'_>,
    scaler: Option<&crate::engine::scale::StreamScaler>,
    b: &'b mut RenditionBuffers,
    scratch: &mut Scratch,
) -> Result<LadderPlanes<'b>, EngineError> {
    let RenditionBuffers {
        host,
        luma,
        chroma: [c0, c1],
    } = b;
    let l = host_plane(plan, &f.luma, host)?;
    let l = scale_into(scaler.map(|s| &s.luma), l, scratch, luma)?;
    let cs = scaler.and_then(|s| s.chroma.as_ref());
    let chroma = match packed_chroma(f.chroma)? {
        Some([p0, p1]) => Some([
            scale_into(cs, p0, scratch, c0)?,
            scale_into(cs, p1, scratch, c1)?,
        ]),
        None => None,
    };
    Ok(LadderPlanes {
        rendition: f.rendition,
        luma: l,
        chroma,
        full: f.full,
    })
}

/// Copies `reference` (`w` x `h`; or a distorted plane) into `keep`, packed.
pub(super) fn keep_reference(keep: &mut Vec<u16>, reference: &LumaPlane, w: usize, h: usize) {
    keep.resize(w * h, 0);
    for y in 0..h.min(reference.height) {
        let row = reference.row(y);
        let n = w.min(row.len());
        keep[y * w..y * w + n].copy_from_slice(&row[..n]);
    }
}

/// A `u16` view of `input`: packed planes as they are, host rows converted into `scratch`.
/// Device planes are refused (the element maps them to host memory for this backend).
pub(super) fn host_plane<'s>(
    plan: &FramePlan,
    input: &'s LumaInput<'_>,
    scratch: &'s mut Vec<u16>,
) -> Result<LumaPlane<'s>, EngineError> {
    let wrong = |size| FeatureError::wrong_size("vmaf", plan.geometry.triple(), size);
    match input {
        LumaInput::Packed(p) => Ok(*p),
        LumaInput::Host(h) => {
            h.to_packed(scratch);
            LumaPlane::packed(scratch, h.width, h.height, plan.geometry.bpc)
                .ok_or_else(|| wrong((h.width, h.height)).into())
        }
        LumaInput::Device(_) => Err(device_refused()),
    }
}
