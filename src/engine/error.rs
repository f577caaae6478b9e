//! Why scoring failed: the engine's one error type, shared by the scorer and the backends.

use crate::engine::plan::PlanError;
use crate::video::frame::FeatureError;

/// Why a frame set (the reference and its renditions) could not be scored.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A feature extractor refused the frames.
    #[error(transparent)]
    Feature(#[from] FeatureError),
    /// The models and features cannot be planned (options, limits).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The backend failed (device fault, out of memory, ...).
    #[error("{backend} backend: {message}")]
    Backend {
        /// Backend name.
        backend: &'static str,
        /// What failed.
        message: String,
    },
}
