//! What float_psnr's definition, its two halves and the other float metrics share: the sample
//! depth libvmaf's float extractors scale by, the exact squares and plane sums, and the dB formula.

use crate::features::api::Geometry;
use crate::video::frame::FeatureError;

/// How libvmaf's float extractors read samples of one depth, and their PSNR constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatDepth {
    /// Bits per sample (8, 10, 12 or 16).
    pub bpc: u32,
    /// `2^(bpc - 8)`: libvmaf divides each sample by it (`picture_copy`).
    pub scaler: f32,
    /// The peak on the 8-bit scale: 255, 255.75, 255.9375, 255.99609375.
    pub peak: f64,
    /// The PSNR cap in dB: 60, 72, 84, 108.
    pub psnr_max: f64,
}

impl FloatDepth {
    /// libvmaf's table for `bpc`.
    ///
    /// Errors: [`FeatureError::WrongGeometry`] naming the depth for one other than 8, 10,
    /// 12 or 16 bits (libvmaf's float extractors refuse them).
    pub fn new(feature: &'static str, g: &Geometry) -> Result<Self, FeatureError> {
        let (peak, psnr_max) = match g.bpc {
            8 => (255.0, 60.0),
            10 => (255.75, 72.0),
            12 => (255.9375, 84.0),
            16 => (255.99609375, 108.0),
            _ => {
                return Err(FeatureError::WrongGeometry {
                    feature,
                    expected_width: g.width,
                    expected_height: g.height,
                    expected_bpc: 8,
                    width: g.width,
                    height: g.height,
                    bpc: g.bpc,
                })
            }
        };
        Ok(Self {
            bpc: g.bpc,
            scaler: (1u32 << (g.bpc - 8)) as f32,
            peak,
            psnr_max,
        })
    }

    /// `scaler^2` as `f64`: the divisor of a sum of squared samples.
    pub fn scaler2(&self) -> f64 {
        f64::from(self.scaler) * f64::from(self.scaler)
    }
}

/// A square as libvmaf's float extractors have it, times `scaler^2`: `(a / s)^2` in `f32` is
/// the `f32` rounding of `a^2`, over `s^2` (exact above 24 bits only at 16 bits per sample).
#[inline]
pub fn square(a: u32) -> u64 {
    let sq = u64::from(a) * u64::from(a);
    (sq as f32) as u64
}

/// Integer sums over one frame pair's luma, in units of `1 / scaler` (`sum`) and
/// `1 / scaler^2` (squares, each rounded as [`square`]); what `float_psnr` and
/// `float_moment` are made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlaneSums {
    /// Sum of squared differences.
    pub error: u64,
    /// Sum of the reference samples.
    pub reference: u64,
    /// Sum of the distorted samples.
    pub distorted: u64,
    /// Sum of the squared reference samples.
    pub reference2: u64,
    /// Sum of the squared distorted samples.
    pub distorted2: u64,
}

/// `float_psnr` from the sum of squared differences `error` (units of `1 / scaler^2`) over
/// `pixels` samples: `min(10 * log10(peak^2 / max(mse, 1e-10)), psnr_max)`, in
/// `[0, psnr_max]`.
pub fn psnr_from_sums(error: u64, pixels: usize, d: &FloatDepth) -> f64 {
    let mse = error as f64 / d.scaler2() / pixels.max(1) as f64;
    (10.0 * (d.peak * d.peak / mse.max(1e-10)).log10()).min(d.psnr_max)
}
