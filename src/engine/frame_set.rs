//! What a backend scores at once: one reference frame and the frames of the renditions paired
//! with it (a pair is the set of one rendition), and what comes back for it.

use smallvec::{smallvec, SmallVec};

use crate::features::RawFeatures;
use crate::video::frame::{ChromaInput, ChromaPair, ComponentInput, LumaInput, LumaPlane};

/// One frame's chroma (Cb `[0]`, Cr `[1]`) as a backend takes it: packed planes at the
/// stream's own chroma size (the CPU backend) or the buffer's own components (the CUDA
/// backend, [`crate::engine::Backend::reads_components`]).
#[derive(Debug, Clone, Copy)]
pub enum FrameChroma<'a> {
    /// Packed `u16` planes at the scoring depth.
    Packed([LumaPlane<'a>; 2]),
    /// The buffer's components, unpacked by the backend.
    Components([ComponentInput<'a>; 2]),
}

impl<'a> FrameChroma<'a> {
    /// A pair's packed chroma as `[reference, distorted]`.
    pub fn packed_pair(c: ChromaPair<'a>) -> [Self; 2] {
        [Self::Packed(c.reference), Self::Packed(c.distorted)]
    }

    /// A pair's buffer components as `[reference, distorted]`.
    pub fn component_pair(c: ChromaInput<'a>) -> [Self; 2] {
        [Self::Components(c.reference), Self::Components(c.distorted)]
    }
}

/// One rendition's frame in a [`FrameSet`].
pub struct RenditionFrame<'a> {
    /// The rendition's slot, `0..renditions` (its scaler and buffers in the backend).
    pub rendition: usize,
    /// Its luma at the rendition's own size (the backend scales it to the scoring size).
    pub luma: LumaInput<'a>,
    /// Its chroma, when a metric reads chroma and the format has it.
    pub chroma: Option<FrameChroma<'a>>,
    /// Whether the features other than the reference-only ones are computed (subsampling,
    /// counted per rendition).
    pub full: bool,
}

/// One reference frame and the renditions' frames paired with it.
pub struct FrameSet<'a> {
    /// Reference luma (at the scoring size, or at the size the reference scaler takes).
    pub reference: LumaInput<'a>,
    /// Reference chroma, when a metric reads chroma and the format has it.
    pub reference_chroma: Option<FrameChroma<'a>>,
    /// The renditions that have a frame at this time, each at most once, in slot order.
    /// May be empty (the reference frame then only advances the reference-only instances'
    /// history, e.g. motion's previous frame).
    pub renditions: SetRenditions<'a>,
}

impl<'a> FrameSet<'a> {
    /// Checks the set against a backend of `slots` rendition slots (what every backend's
    /// `submit_set` checks first): each rendition's slot inside `0..slots` and taken once;
    /// for a pair backend (`slots == 1`), its one rendition, with chroma on both sides in one
    /// form (packed, or components) or on neither.
    ///
    /// Errors: what is wrong, as text for [`crate::engine::EngineError::Backend`].
    pub fn check_slots(&self, slots: usize) -> Result<(), String> {
        for (i, r) in self.renditions.iter().enumerate() {
            let k = r.rendition;
            if k >= slots {
                return Err(format!(
                    "internal: rendition slot {k} of a backend of {slots}"
                ));
            }
            if self.renditions[..i].iter().any(|p| p.rendition == k) {
                return Err(format!(
                    "internal: rendition slot {k} twice in one frame set"
                ));
            }
        }
        if slots != 1 {
            return Ok(());
        }
        let [r] = self.renditions.as_slice() else {
            return Err("internal: a pair backend takes one rendition per frame set".into());
        };
        let one_form = matches!(
            (&self.reference_chroma, &r.chroma),
            (None, None)
                | (Some(FrameChroma::Packed(_)), Some(FrameChroma::Packed(_)))
                | (
                    Some(FrameChroma::Components(_)),
                    Some(FrameChroma::Components(_))
                )
        );
        if !one_form {
            return Err("chroma on one side of the pair only, or in two forms".into());
        }
        Ok(())
    }

    /// A pair: the reference and one distorted frame in rendition slot 0.
    pub fn pair(
        reference: LumaInput<'a>,
        distorted: LumaInput<'a>,
        chroma: Option<[FrameChroma<'a>; 2]>,
        full: bool,
    ) -> Self {
        let (reference_chroma, chroma) = match chroma {
            Some([r, d]) => (Some(r), Some(d)),
            None => (None, None),
        };
        Self {
            reference,
            reference_chroma,
            renditions: smallvec![RenditionFrame {
                rendition: 0,
                luma: distorted,
                chroma,
                full,
            }],
        }
    }
}

/// A [`FrameSet`]'s renditions, inline up to four: a pair's set (and a small ladder's)
/// allocates nothing on the host (tests/gpu_lessons.rs counts the CUDA backend's per-frame
/// allocations). Made from a `Vec` with `.into()`, or collected.
pub type SetRenditions<'a> = SmallVec<[RenditionFrame<'a>; 4]>;

/// What a backend computed for one [`FrameSet`]: each submitted rendition's slot and raw
/// values, in submission order; a pair's inline (no allocation).
pub type SetFeatures = SmallVec<[(usize, RawFeatures); 1]>;
