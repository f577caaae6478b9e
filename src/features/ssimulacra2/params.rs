//! What SSIMULACRA2's definition and its two halves share: the registry name and the smallest
//! plane it reads.

/// Name reported in [`FeatureError`]s.
pub const FEATURE: &str = "ssimulacra2";

/// Smallest frame width the metric accepts, in luma samples (the crate's limit).
pub const MIN_WIDTH: usize = 8;

/// Smallest frame height the metric accepts, in rows.
pub const MIN_HEIGHT: usize = 8;
