//! What float_motion's definition and its two halves share: the registry name and the smallest
//! plane it reads.

/// The registry name (libvmaf's extractor name).
pub const FEATURE: &str = "float_motion";

/// Smallest plane the mirrored 5-tap blur is defined on.
pub const MIN_SIZE: usize = 3;
