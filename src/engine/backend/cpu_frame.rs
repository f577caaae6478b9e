//! What every frame set of a CPU backend is scored with, on the calling thread or a pool
//! worker: the frame plan, every instance's CPU half with its scratch, the planes brought to
//! the scoring size, and the one extraction over a set's renditions.

use std::sync::Arc;

use rayon::prelude::*;

use crate::engine::error::EngineError;
use crate::engine::frame_set::{FrameChroma, SetFeatures};
use crate::engine::scale::cpu::{scale_plane, Scratch};
use crate::engine::scale::{PlaneScaler, StreamScaler};
use crate::features::{CpuExtractor, Geometry, HostFrame, Layout, Needs, RawFeatures};
use crate::video::frame::{ChromaPair, ComponentInput, FeatureError, LumaInput, LumaPlane};

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
/// frame set.
pub(crate) struct Extractors {
    list: Vec<Box<dyn CpuExtractor>>,
    /// A pool worker's planes of the renditions it scales (by position in the set) and the
    /// scaler's scratch.
    pub(crate) buffers: SetBuffers,
}

/// One stream's planes: host rows converted, chroma components packed, then the luma and
/// chroma scaled to the scoring size. Each is used only when needed and reused set after set.
#[derive(Default)]
pub(crate) struct StreamBuffers {
    pub(crate) host: Vec<u16>,
    pub(crate) luma: Vec<u16>,
    pub(crate) chroma_in: [Vec<u16>; 2],
    pub(crate) chroma: [Vec<u16>; 2],
}

/// The planes of a frame set's streams (the reference's, each rendition's by position in
/// the set, grown on first use) and the scaler's scratch.
#[derive(Default)]
pub(crate) struct SetBuffers {
    pub(crate) reference: StreamBuffers,
    pub(crate) renditions: Vec<StreamBuffers>,
    pub(crate) scratch: Scratch,
}

impl SetBuffers {
    /// The rendition buffers grown to `n`, beside the reference's and the scratch.
    pub(crate) fn split(
        &mut self,
        n: usize,
    ) -> (&mut StreamBuffers, &mut [StreamBuffers], &mut Scratch) {
        if self.renditions.len() < n {
            self.renditions.resize_with(n, StreamBuffers::default);
        }
        (&mut self.reference, &mut self.renditions, &mut self.scratch)
    }
}

/// One rendition's planes at the scoring size, as [`Extractors::extract_set`] reads them.
pub(crate) struct RenditionPlanes<'a> {
    /// The rendition's slot.
    pub(crate) rendition: usize,
    pub(crate) luma: LumaPlane<'a>,
    /// Its Cb and Cr (only used with the reference's).
    pub(crate) chroma: Option<[LumaPlane<'a>; 2]>,
    pub(crate) full: bool,
}

/// A frame set's planes at the scoring size: the earlier reference frames motion reads, the
/// previous distorted frame (`speed_temporal`, a backend of one rendition only), the
/// reference and its chroma, and the renditions.
pub(crate) struct SetPlanes<'a> {
    pub(crate) prev: Option<LumaPlane<'a>>,
    pub(crate) prev2: Option<LumaPlane<'a>>,
    pub(crate) prev_dis: Option<LumaPlane<'a>>,
    pub(crate) reference: LumaPlane<'a>,
    pub(crate) reference_chroma: Option<[LumaPlane<'a>; 2]>,
    pub(crate) renditions: Vec<RenditionPlanes<'a>>,
}

impl<'a> SetPlanes<'a> {
    /// Checks every luma plane against the plan's geometry.
    pub(crate) fn check(&self, plan: &FramePlan) -> Result<(), FeatureError> {
        let geometry = plan.geometry.triple();
        FeatureError::check_plane("vmaf", geometry, &self.reference)?;
        for r in &self.renditions {
            FeatureError::check_plane("vmaf", geometry, &r.luma)?;
        }
        Ok(())
    }

    /// Each rendition's chroma beside the reference's (`None` unless both have chroma).
    pub(crate) fn chroma(&self) -> Vec<Option<ChromaPair<'a>>> {
        self.renditions
            .iter()
            .map(|r| match (self.reference_chroma, r.chroma) {
                (Some(reference), Some(distorted)) => Some(ChromaPair {
                    reference,
                    distorted,
                }),
                _ => None,
            })
            .collect()
    }

    /// Each rendition's frame as the extractors read it, with its chroma from `chroma`
    /// ([`SetPlanes::chroma`]).
    pub(crate) fn frames<'f>(
        &'f self,
        chroma: &'f [Option<ChromaPair<'a>>],
    ) -> Vec<HostFrame<'f, 'a>> {
        self.renditions
            .iter()
            .zip(chroma)
            .map(|(r, c)| HostFrame {
                reference: &self.reference,
                distorted: &r.luma,
                previous: self.prev.as_ref(),
                previous2: self.prev2.as_ref(),
                previous_distorted: self.prev_dis.as_ref(),
                chroma: c.as_ref(),
            })
            .collect()
    }

    /// Whether an instance with `needs` runs on this set: one that reads the previous
    /// frame on every set, the others when a rendition computes its full features.
    pub(crate) fn runs(&self, needs: Needs) -> bool {
        needs.previous || self.renditions.iter().any(|r| r.full)
    }
}

/// One instance's values over a set's `frames` (each rendition's, in the set's order,
/// `full` its flags) into `outs` (one slice per rendition): a reference-only instance
/// (motion) once, on the first frame, its values copied to every rendition; another on the
/// renditions that are `full` (or all, when it reads the previous frame), a set of one
/// rendition through [`CpuExtractor::extract`] (the pair), more through
/// [`CpuExtractor::extract_ladder`] (the reference's work shared). Every caller checks
/// [`SetPlanes::runs`] first.
///
/// Errors: the extractor's.
pub(crate) fn extract_instance(
    ex: &mut dyn CpuExtractor,
    needs: Needs,
    frames: &[HostFrame],
    full: &[bool],
    outs: &mut [&mut [f64]],
) -> Result<(), FeatureError> {
    if needs.reference_only {
        // Reads the reference frames only: once, copied to every rendition.
        let (Some((first, rest)), Some(f)) = (outs.split_first_mut(), frames.first()) else {
            return Ok(());
        };
        ex.extract(f, first)?;
        for o in rest {
            o.copy_from_slice(first);
        }
        return Ok(());
    }
    if let ([f], [out]) = (frames, &mut *outs) {
        return ex.extract(f, out);
    }
    let (sel, mut sel_outs): (Vec<HostFrame>, Vec<&mut [f64]>) = frames
        .iter()
        .zip(outs.iter_mut())
        .zip(full)
        .filter(|(_, &full)| full || needs.previous)
        .map(|((f, o), _)| (*f, &mut **o))
        .unzip();
    if sel.is_empty() {
        return Ok(());
    }
    ex.extract_ladder(&sel, &mut sel_outs)
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
            buffers: SetBuffers::default(),
        })
    }

    /// One frame set's values, one [`RawFeatures`] per rendition of `set` (in its order,
    /// with its slot), each instance through [`extract_instance`] when
    /// [`SetPlanes::runs`] (0 otherwise, and on the renditions it skips). With `split` (on a
    /// pool thread only: rayon runs in the current thread's pool) the instances run in
    /// parallel; they share nothing, so the values do not depend on it.
    ///
    /// Errors: planes of another geometry, an extractor's error.
    pub(crate) fn extract_set(
        &mut self,
        plan: &FramePlan,
        set: &SetPlanes,
        split: bool,
    ) -> Result<SetFeatures, EngineError> {
        set.check(plan)?;
        let layout = &plan.layout;
        let renditions = &set.renditions;
        let mut raws: Vec<RawFeatures> = renditions
            .iter()
            .map(|_| RawFeatures::new(layout))
            .collect();
        let chroma = set.chroma();
        let frames = set.frames(&chroma);
        let full: Vec<bool> = renditions.iter().map(|r| r.full).collect();
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
        let (frames, full) = (&frames, &full);
        let jobs: Vec<_> = self
            .list
            .iter_mut()
            .zip(layout.instances())
            .zip(outs)
            .filter(|((_, inst), _)| !renditions.is_empty() && set.runs(inst.needs()))
            .map(|((ex, inst), outs)| (ex, inst.needs(), outs))
            .collect();
        let run = |(ex, needs, mut outs): (&mut Box<dyn CpuExtractor>, Needs, Vec<&mut [f64]>)| {
            extract_instance(ex.as_mut(), needs, frames, full, &mut outs)
        };
        if split {
            jobs.into_par_iter().try_for_each(run)?;
        } else {
            jobs.into_iter().try_for_each(run)?;
        }
        Ok(renditions.iter().map(|r| r.rendition).zip(raws).collect())
    }
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

/// One stream's luma and chroma at the scoring size: host rows converted into `b.host`,
/// chroma components packed into `b.chroma_in`, then each plane scaled by `scaler` (if any)
/// into `b.luma` / `b.chroma`; packed planes without a scaler as they are.
///
/// Errors: a device plane, planes of another size than the scaler's (or the geometry's).
pub(crate) fn stream_planes<'b>(
    plan: &FramePlan,
    luma: &'b LumaInput<'_>,
    chroma: Option<FrameChroma<'b>>,
    scaler: Option<&StreamScaler>,
    b: &'b mut StreamBuffers,
    scratch: &mut Scratch,
) -> Result<(LumaPlane<'b>, Option<[LumaPlane<'b>; 2]>), EngineError> {
    let StreamBuffers {
        host,
        luma: scaled,
        chroma_in: [i0, i1],
        chroma: [c0, c1],
    } = b;
    let l = host_plane(plan, luma, host)?;
    let l = scale_into(scaler.map(|s| &s.luma), l, scratch, scaled)?;
    let cs = scaler.and_then(|s| s.chroma.as_ref());
    let chroma = match chroma {
        None => None,
        Some(FrameChroma::Packed([p0, p1])) => Some([
            scale_into(cs, p0, scratch, c0)?,
            scale_into(cs, p1, scratch, c1)?,
        ]),
        Some(FrameChroma::Components([k0, k1])) => {
            let p0 = packed_component(plan, &k0, i0)?;
            let p1 = packed_component(plan, &k1, i1)?;
            Some([
                scale_into(cs, p0, scratch, c0)?,
                scale_into(cs, p1, scratch, c1)?,
            ])
        }
    };
    Ok((l, chroma))
}

/// A chroma component in its buffer's layout packed into `out`, at the geometry's depth.
fn packed_component<'o>(
    plan: &FramePlan,
    c: &ComponentInput<'_>,
    out: &'o mut Vec<u16>,
) -> Result<LumaPlane<'o>, EngineError> {
    let ComponentInput::Host(h) = c else {
        return Err(device_refused());
    };
    h.to_packed(out);
    LumaPlane::packed(out, h.width, h.height, plan.geometry.bpc).ok_or_else(|| {
        EngineError::Backend {
            backend: "cpu",
            message: "internal: a chroma plane smaller than its size".into(),
        }
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
