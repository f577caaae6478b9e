//! The CPU halves of `float_psnr` and `float_moment`: integer sums over the luma planes that
//! equal libvmaf's `f32` samples and `f64` sums exactly (see [`super::square`]).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/psnr.c, moment.c, picture_copy.c.

use super::params::{square, PlaneSums};
use crate::video::frame::LumaPlane;

/// Whether squares of `bpc`-bit samples can exceed `f32`'s 24 bits (16 bits per sample).
fn rounds(bpc: u32) -> bool {
    bpc > 12
}

/// Sum of squared differences of two planes of equal size, each square rounded as libvmaf's
/// `f32` product ([`square`]); in units of `1 / scaler^2`.
pub fn error_sum(reference: &LumaPlane, distorted: &LumaPlane) -> u64 {
    let (w, h) = (
        reference.width.min(distorted.width),
        reference.height.min(distorted.height),
    );
    let round = rounds(reference.bpc);
    let mut total = 0u64;
    for y in 0..h {
        let (r, d) = (&reference.row(y)[..w], &distorted.row(y)[..w]);
        if round {
            for (&a, &b) in r.iter().zip(d) {
                total += square(u32::from(a.abs_diff(b)));
            }
        } else {
            // Below 2^24 every square is exact; 256 of them fit 32 bits.
            for (rc, dc) in r.chunks(256).zip(d.chunks(256)) {
                let mut part = 0u32;
                for (&a, &b) in rc.iter().zip(dc) {
                    let e = u32::from(a.abs_diff(b));
                    part += e * e;
                }
                total += u64::from(part);
            }
        }
    }
    total
}

/// Sum of the samples and of their squares (rounded as [`square`]) of one plane.
pub fn moments(plane: &LumaPlane) -> (u64, u64) {
    let round = rounds(plane.bpc);
    let (mut sum, mut sum2) = (0u64, 0u64);
    for y in 0..plane.height {
        let row = plane.row(y);
        let (mut s, mut s2) = (0u64, 0u64);
        if round {
            for &a in row {
                s += u64::from(a);
                s2 += square(u32::from(a));
            }
        } else {
            for &a in row {
                let a = u64::from(a);
                s += a;
                s2 += a * a;
            }
        }
        sum += s;
        sum2 += s2;
    }
    (sum, sum2)
}

/// Every [`PlaneSums`] of one frame pair (planes of equal size).
pub fn plane_sums(reference: &LumaPlane, distorted: &LumaPlane) -> PlaneSums {
    let (reference_sum, reference2) = moments(reference);
    let (distorted_sum, distorted2) = moments(distorted);
    PlaneSums {
        error: error_sum(reference, distorted),
        reference: reference_sum,
        distorted: distorted_sum,
        reference2,
        distorted2,
    }
}
