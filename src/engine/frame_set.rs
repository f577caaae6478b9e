//! What a backend scores at once: one reference frame and the frames of the renditions paired
//! with it (a pair is the set of one rendition), and what comes back for it.

use crate::features::RawFeatures;
use crate::video::frame::{ComponentInput, LumaInput, LumaPlane};

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
    pub renditions: Vec<RenditionFrame<'a>>,
}

impl<'a> FrameSet<'a> {
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
            renditions: vec![RenditionFrame {
                rendition: 0,
                luma: distorted,
                chroma,
                full,
            }],
        }
    }
}

/// What a backend computed for one [`FrameSet`]: each submitted rendition's slot and raw
/// values, in submission order.
pub type SetFeatures = Vec<(usize, RawFeatures)>;
