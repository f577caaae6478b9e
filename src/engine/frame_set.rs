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

/// A pair's chroma, as [`FrameSet::into_pair`] finds it on both sides.
pub enum PairChroma<'a> {
    /// Neither side has chroma (GRAY8, or no metric reads it).
    None,
    /// Packed planes on both sides.
    Packed(ChromaPair<'a>),
    /// Buffer components on both sides.
    Components(ChromaInput<'a>),
    /// Chroma on one side only, or in two forms: refused by every backend.
    Mismatched,
}

/// The set of one rendition taken apart: what a backend's pair kernels take.
pub struct PairFrame<'a> {
    /// Reference luma.
    pub reference: LumaInput<'a>,
    /// The rendition's luma.
    pub distorted: LumaInput<'a>,
    /// Both sides' chroma.
    pub chroma: PairChroma<'a>,
    /// Whether the features other than the reference-only ones are computed.
    pub full: bool,
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
    /// The pair this set holds (one rendition, whatever its slot), or `None` when it holds
    /// another number of renditions.
    pub fn into_pair(self) -> Option<PairFrame<'a>> {
        let mut renditions = self.renditions.into_iter();
        let (Some(d), None) = (renditions.next(), renditions.next()) else {
            return None;
        };
        let chroma = match (self.reference_chroma, d.chroma) {
            (None, None) => PairChroma::None,
            (Some(FrameChroma::Packed(r)), Some(FrameChroma::Packed(c))) => {
                PairChroma::Packed(ChromaPair {
                    reference: r,
                    distorted: c,
                })
            }
            (Some(FrameChroma::Components(r)), Some(FrameChroma::Components(c))) => {
                PairChroma::Components(ChromaInput {
                    reference: r,
                    distorted: c,
                })
            }
            _ => PairChroma::Mismatched,
        };
        Some(PairFrame {
            reference: self.reference,
            distorted: d.luma,
            chroma,
            full: d.full,
        })
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
