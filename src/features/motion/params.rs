//! What motion's definition and its two halves share: the smallest plane it reads and the
//! score's cap.

/// Smallest plane the mirrored 5-tap filter is defined on.
pub const MIN_WIDTH: usize = 3;

/// Smallest plane the mirrored 5-tap filter is defined on.
pub const MIN_HEIGHT: usize = 3;

/// libvmaf's default clip for motion scores (`DEFAULT_MOTION_MAX_VAL`).
pub const MOTION_MAX_VAL: f64 = 10000.0;
