//! A pair as a frame set of one rendition: conveniences over [`Backend::submit_set`] and
//! [`Backend::collect_set`] for callers that score one distorted stream (tests, benches).

use crate::engine::backend::api::Backend;
use crate::engine::error::EngineError;
use crate::engine::frame_set::{FrameChroma, FrameSet};
use crate::features::RawFeatures;
use crate::video::frame::{ChromaInput, ChromaPair, LumaInput, LumaPlane};

/// Pair submissions on any [`Backend`] (its rendition slot 0).
pub trait PairInput: Backend {
    /// Submits the pair `reference`, `distorted` (see [`Backend::submit_set`]).
    ///
    /// Errors: as [`Backend::submit_set`].
    fn submit_input(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        full: bool,
    ) -> Result<(), EngineError> {
        self.submit_set(FrameSet::pair(reference, distorted, None, full))
    }
    /// [`PairInput::submit_input`] with packed `u16` planes.
    ///
    /// Errors: as [`Backend::submit_set`].
    fn submit(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        full: bool,
    ) -> Result<(), EngineError> {
        self.submit_input(
            LumaInput::Packed(*reference),
            LumaInput::Packed(*distorted),
            full,
        )
    }
    /// [`PairInput::submit_input`] with packed chroma planes (`psnr_cb`, SSIMULACRA2...).
    ///
    /// Errors: as [`Backend::submit_set`].
    fn submit_frame(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaPair<'_>>,
        full: bool,
    ) -> Result<(), EngineError> {
        let chroma = chroma.map(FrameChroma::packed_pair);
        self.submit_set(FrameSet::pair(reference, distorted, chroma, full))
    }
    /// [`PairInput::submit_input`] with the chroma components in the buffers' own layouts
    /// (for a backend with [`Backend::reads_components`]).
    ///
    /// Errors: as [`Backend::submit_set`].
    fn submit_components(
        &mut self,
        reference: LumaInput<'_>,
        distorted: LumaInput<'_>,
        chroma: Option<ChromaInput<'_>>,
        full: bool,
    ) -> Result<(), EngineError> {
        let chroma = chroma.map(FrameChroma::component_pair);
        self.submit_set(FrameSet::pair(reference, distorted, chroma, full))
    }
    /// The oldest pair's values (see [`Backend::collect_set`]).
    ///
    /// Errors: as [`Backend::collect_set`].
    fn collect(&mut self, wait: bool) -> Result<Option<RawFeatures>, EngineError> {
        Ok(self
            .collect_set(wait)?
            .and_then(|set| set.into_iter().next().map(|(_, raw)| raw)))
    }
}

impl<B: Backend + ?Sized> PairInput for B {}
