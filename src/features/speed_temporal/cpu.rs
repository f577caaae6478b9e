//! The CPU half of SpEED temporal: the frame differences as [`Difference`] planes through
//! SpEED's shared CPU pipeline ([`Speed`], libvmaf's `float` / `double` arithmetic and order).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/speed.c (`extract` of
//! `vmaf_fex_speed_temporal`, `subtract_image`, `speed_extract_score`).

use super::params::{TemporalConfig, FEATURE};
use crate::features::api::{CpuExtractor, HostFrame};
use crate::features::speed::cpu::{Difference, Levels, Speed};
use crate::features::speed::Dims;
use crate::video::frame::FeatureError;

/// SpEED's state for one luma size and option set, and the options.
pub struct TemporalCpu {
    speed: Speed,
    bpc: u32,
    use_ref_diff: bool,
}

impl TemporalCpu {
    /// State for luma planes of `dims` (at least one block, see
    /// [`super::SpeedTemporalInstance::dims`]) at `bpc` bits.
    pub fn new(dims: Dims, bpc: u32, cfg: TemporalConfig) -> Self {
        Self {
            speed: Speed::new(dims, cfg.speed),
            bpc,
            use_ref_diff: cfg.use_ref_diff,
        }
    }
}

impl CpuExtractor for TemporalCpu {
    /// `speed_temporal`: 0 on the first frame of a run (no previous frame), else the score
    /// of (previous reference - reference) against (previous distorted - distorted), or
    /// against (previous distorted - reference) with `speed_use_ref_diff`; not clipped.
    ///
    /// Errors: [`FeatureError::WrongGeometry`] for planes of another size or depth, or a
    /// previous reference without the previous distorted plane (a ladder, which does not
    /// keep it).
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let d = self.speed.dims();
        let geometry = (d.width, d.height, self.bpc);
        FeatureError::check_plane(FEATURE, geometry, f.reference)?;
        FeatureError::check_plane(FEATURE, geometry, f.distorted)?;
        let Some(prev_ref) = f.previous else {
            out.iter_mut().for_each(|o| *o = 0.0);
            return Ok(());
        };
        let Some(prev_dis) = f.previous_distorted else {
            return Err(FeatureError::wrong_size(FEATURE, geometry, (0, 0)));
        };
        FeatureError::check_plane(FEATURE, geometry, prev_ref)?;
        FeatureError::check_plane(FEATURE, geometry, prev_dis)?;
        // libvmaf copies both frames with the reference's depth.
        let level = |p| Levels::with_depth(p, self.bpc);
        let reference = Difference {
            a: level(prev_ref),
            b: level(f.reference),
        };
        let distorted = Difference {
            a: level(prev_dis),
            b: level(if self.use_ref_diff {
                f.reference
            } else {
                f.distorted
            }),
        };
        let (score, _) = self.speed.samples_score(&reference, &distorted);
        out.iter_mut().for_each(|o| *o = f64::from(score));
        Ok(())
    }
}
