//! Pushing one frame set into the scorer: the reference buffer and each rendition's mapped
//! for the backend (in place on the GPU when it reads device memory, else in host memory),
//! their chroma packed (CPU backend) or in the buffers' own layouts (CUDA backend), the
//! paths taken recorded per pad, and one tag per rendition frame.

use gst::prelude::*;
use gst::subclass::prelude::*;

use super::mapping::MappedLuma;
use super::session::{PairError, Session, Tag};
use super::VmafCompare;
use crate::cuda::GpuDevice;
use crate::engine::{FrameChroma, FrameSet, LumaPlane, RenditionFrame, Scored, SetRenditions};

/// Packed chroma of the renditions of one set: slot, Cb/Cr, their size.
type PackedChroma = Vec<(usize, [Vec<u16>; 2], Option<(usize, usize)>)>;

fn plane(v: &[u16], s: Option<(usize, usize)>, bpc: u32) -> Option<LumaPlane<'_>> {
    let (w, h) = s?;
    LumaPlane::packed(v, w, h, bpc)
}

/// What the chroma of two streams looks like, for the error when they differ.
fn show_size(s: Option<(usize, usize)>) -> String {
    s.map_or("none (no chroma)".to_owned(), |(w, h)| format!("{w}x{h}"))
}

impl VmafCompare {
    /// Maps the reference and the partners of frame set `slot` (`partners[k]`: rendition `k`'s
    /// buffer, `None` when it has no frame in this set) and pushes them as one set. `gpu` is
    /// used only when the scorer's backend reads device memory. Returns the frames it
    /// completed.
    pub(super) fn push_set(
        &self,
        state: &mut Session,
        (slot, reference, partners): (u64, &gst::Buffer, &[Option<gst::Buffer>]),
        gpu: Option<&GpuDevice>,
    ) -> Result<Vec<(usize, Scored<Tag>)>, PairError> {
        let Some(rv) = state.reference.as_ref() else {
            return Err(PairError::Map("reference: no caps".into()));
        };
        let (bpc, reads_device, components, wants_chroma, defers) =
            match (state.geometry, state.scorer.as_ref()) {
                (Some((_, _, bpc)), Some(s)) => (
                    bpc,
                    s.reads_device(),
                    s.reads_components(),
                    s.plan().layout().reads_chroma(),
                    s.defers_host_rows(),
                ),
                _ => return Err(PairError::Map("internal: no scorer".into())),
            };
        // Frames are kept for a second try while a GPU failure would hand them to the CPU.
        let retry = self.can_fail_over(state);
        let gpu = gpu.filter(|_| reads_device);
        let ladder = state.ladder;
        // The caps are read in place (the mapping borrows them for the call only); the names
        // and pads are kept for the errors and tags below, where the renditions' scratch is
        // borrowed mutably.
        let names: Vec<(String, gst_base::AggregatorPad)> = state
            .renditions
            .iter()
            .map(|r| (r.name.clone(), r.agg_pad().clone()))
            .collect();
        // A pair's errors name the distorted pad as before ("distorted: ...").
        let label = |k: usize| -> String {
            match names.get(k) {
                Some((name, _)) if !ladder => name.clone(),
                Some((name, _)) => format!("rendition {name}"),
                None => format!("rendition {k}"),
            }
        };
        let element = self.obj();
        let element = element.upcast_ref::<gst::Element>();
        let (mut rm, rp) = MappedLuma::map(
            element,
            rv,
            reference,
            bpc,
            gpu,
            defers,
            &mut state.dmabuf_refused,
        )
        .map_err(|e| PairError::Map(format!("reference: {e}")))?;
        let mut mapped = Vec::with_capacity(partners.len());
        let mut paths = Vec::with_capacity(partners.len());
        for (k, p) in partners.iter().enumerate() {
            let Some(b) = p else { continue };
            let Some(v) = state.renditions.get(k).and_then(|r| r.video.as_ref()) else {
                return Err(PairError::Map(format!(
                    "{}: buffers arrived before caps",
                    label(k)
                )));
            };
            let (m, path) =
                MappedLuma::map(element, v, b, bpc, gpu, defers, &mut state.dmabuf_refused)
                    .map_err(|e| PairError::Map(format!("{}: {e}", label(k))))?;
            mapped.push((k, m, b));
            paths.push((k, path));
        }
        if state.reference_paths.insert(rp) {
            rm.report_path(element, "reference", rp, gpu);
        }
        for (k, path) in paths {
            let Some(r) = state.renditions.get_mut(k) else {
                continue;
            };
            if r.paths.insert(path) {
                let m = mapped.iter().find(|(j, _, _)| *j == k).map(|(_, m, _)| m);
                if let Some(m) = m {
                    m.report_path(element, &r.name, path, gpu);
                }
            }
        }
        // Packed chroma (CPU backend) lives in the renditions' scratch for the push.
        let mut ref_chroma = std::mem::take(&mut state.reference_chroma);
        let mut packed: PackedChroma = Vec::new();
        let mut ref_size = None;
        let result = (|| {
            if wants_chroma && !components {
                ref_size = rm
                    .pack_chroma(bpc, &mut ref_chroma)
                    .map_err(|e| PairError::Map(format!("reference: {e}")))?;
                for (k, m, _) in &mapped {
                    let mut c = std::mem::take(&mut state.renditions[*k].chroma);
                    let size = m.pack_chroma(bpc, &mut c);
                    let size = match size {
                        Ok(s) => s,
                        Err(e) => {
                            state.renditions[*k].chroma = c;
                            return Err(PairError::Map(format!("{}: {e}", label(*k))));
                        }
                    };
                    packed.push((*k, c, size));
                }
            }
            let (reference_luma, reference_chroma, ref_components) = if components {
                let (l, c) = rm
                    .inputs(bpc, wants_chroma)
                    .map_err(|e| PairError::Map(format!("reference: {e}")))?;
                let size = c.as_ref().map(|c| c[0].size());
                (l, c.map(FrameChroma::Components), size)
            } else {
                let l = rm
                    .input()
                    .map_err(|e| PairError::Map(format!("reference: {e}")))?;
                let c = match (
                    plane(&ref_chroma[0], ref_size, bpc),
                    plane(&ref_chroma[1], ref_size, bpc),
                ) {
                    (Some(a), Some(b)) => Some(FrameChroma::Packed([a, b])),
                    _ => None,
                };
                (l, c, ref_size)
            };
            let mut renditions = SetRenditions::with_capacity(mapped.len());
            let mut tags = Vec::with_capacity(mapped.len());
            let scorer = state.scorer.as_ref();
            let fulls: Vec<bool> = mapped
                .iter()
                .map(|(k, _, _)| scorer.is_some_and(|s| s.next_full(*k)))
                .collect();
            for ((k, m, b), full) in mapped.iter_mut().zip(fulls) {
                let (luma, chroma, size) = if components {
                    let (l, c) = m
                        .inputs(bpc, wants_chroma)
                        .map_err(|e| PairError::Map(format!("{}: {e}", label(*k))))?;
                    let size = c.as_ref().map(|c| c[0].size());
                    (l, c.map(FrameChroma::Components), size)
                } else {
                    let l = m
                        .input()
                        .map_err(|e| PairError::Map(format!("{}: {e}", label(*k))))?;
                    let found = packed.iter().find(|(pk, _, _)| pk == k);
                    let size = found.and_then(|(_, _, s)| *s);
                    let c = found.and_then(|(_, c, s)| {
                        Some(FrameChroma::Packed([
                            plane(&c[0], *s, bpc)?,
                            plane(&c[1], *s, bpc)?,
                        ]))
                    });
                    (l, c, size)
                };
                // The features that read chroma need it on every pad of the set.
                if wants_chroma && (size.is_some() != ref_components.is_some()) {
                    return Err(PairError::Map(format!(
                        "the metrics that read chroma need chroma planes of one size on both \
                         pads: reference chroma is {}, {} chroma is {}",
                        show_size(ref_components),
                        label(*k),
                        show_size(size)
                    )));
                }
                let pad = &names[*k].1;
                tags.push(Tag {
                    slot,
                    retry: retry.then(|| (reference.clone(), (*b).clone())),
                    pts: b.pts(),
                    running_time: Self::running_time(pad, b),
                    duration: b.duration(),
                });
                renditions.push(RenditionFrame {
                    rendition: *k,
                    luma,
                    chroma,
                    full,
                });
            }
            let set = FrameSet {
                reference: reference_luma,
                reference_chroma,
                renditions,
            };
            match state.scorer.as_mut() {
                Some(s) => s.push_set(set, tags).map_err(PairError::Engine),
                None => Err(PairError::Map("internal: no scorer".into())),
            }
        })();
        state.reference_chroma = ref_chroma;
        for (k, c, _) in packed {
            state.renditions[k].chroma = c;
        }
        result
    }
}
