//! The element's settings behind its mutex ([`Settings`]): their defaults and ranges.

use crate::engine::model::DEFAULT_MODEL;
use crate::vmafcompare::{ResultsFormat, VmafBackend, VmafScaleMethod};

pub(super) const DEFAULT_SUBSAMPLE: u32 = 1;

pub(super) const DEFAULT_DEVICE_ID: i32 = 0;

/// `device-id`: the element chooses the device at NULL->READY.
pub(super) const AUTO_DEVICE_ID: i32 = -1;

pub(super) const MAX_SUBSAMPLE: u32 = 1_000_000;

/// `threads`: 0, one CPU scoring thread per core.
pub(super) const DEFAULT_THREADS: u32 = 0;

/// Largest `threads` accepted.
pub(super) const MAX_THREADS: u32 = 1024;

#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) model: String,
    /// The `features` property as set (parsed at NULL->READY).
    pub(super) features: String,
    pub(super) backend: VmafBackend,
    pub(super) subsample: u32,
    pub(super) results_location: Option<String>,
    pub(super) results_format: ResultsFormat,
    pub(super) frame_message: bool,
    /// CUDA ordinal, or [`AUTO_DEVICE_ID`].
    pub(super) device_id: i32,
    /// CPU scoring threads (0: one per core).
    pub(super) threads: u32,
    /// How a stream of another size is scaled (`none`: refused).
    pub(super) scale_method: VmafScaleMethod,
    /// Fixed scoring size (0: the reference's width / height).
    pub(super) score_width: u32,
    pub(super) score_height: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            model: DEFAULT_MODEL.to_owned(),
            features: String::new(),
            backend: VmafBackend::Auto,
            subsample: DEFAULT_SUBSAMPLE,
            results_location: None,
            results_format: ResultsFormat::Json,
            frame_message: true,
            device_id: DEFAULT_DEVICE_ID,
            threads: DEFAULT_THREADS,
            scale_method: VmafScaleMethod::Bicubic,
            score_width: 0,
            score_height: 0,
        }
    }
}
