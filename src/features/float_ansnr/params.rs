//! What float_ansnr's definition and its two halves share: the registry and output names, the
//! smallest plane, the reference and distorted filters, the mirrored index and the dB scores.

use crate::features::float_psnr::FloatDepth;

/// The registry name.
pub(super) const FEATURE: &str = "float_ansnr";

/// libvmaf's log keys, in its order.
pub const OUTPUTS: [&str; 2] = ["float_ansnr", "float_anpsnr"];

/// The smallest frame: the 5x5 filter mirrors two samples in from each border.
pub const MIN_SIZE: usize = 3;

/// The reference's 3x3 filter, row-major: `[1 2 1; 2 4 2; 1 2 1] / 16`.
pub fn ref_filter() -> [f32; 9] {
    [1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0].map(|k: f64| (k / 16.0) as f32)
}

/// The distorted frame's 5x5 filter, row-major, `k / 571` rounded from `f64` to `f32` as
/// libvmaf's table is.
pub fn dis_filter() -> [f32; 25] {
    [
        2.0, 7.0, 12.0, 7.0, 2.0, //
        7.0, 31.0, 52.0, 31.0, 7.0, //
        12.0, 52.0, 127.0, 52.0, 12.0, //
        7.0, 31.0, 52.0, 31.0, 7.0, //
        2.0, 7.0, 12.0, 7.0, 2.0,
    ]
    .map(|k: f64| (k / 571.0) as f32)
}

/// libvmaf's border rule of the ANSNR filters: `i < 0 -> -i`, `i >= n -> 2n - i - 1`.
#[inline]
pub fn mirror(i: isize, n: usize) -> usize {
    let n = n as isize;
    let m = if i < 0 {
        -i
    } else if i >= n {
        2 * n - i - 1
    } else {
        i
    };
    m.clamp(0, n - 1) as usize
}

/// `[float_ansnr, float_anpsnr]` from the `f32` sums `sig` and `noise` of a `pixels`-sample
/// frame.
pub fn scores(sig: f32, noise: f32, pixels: usize, d: &FloatDepth) -> [f64; 2] {
    let ansnr = if noise == 0.0 {
        d.psnr_max
    } else {
        10.0 * f64::from(sig / noise).log10()
    };
    let anpsnr = (10.0 * (d.peak * d.peak * pixels as f64 / f64::from(noise).max(1e-10)).log10())
        .min(d.psnr_max);
    [ansnr, anpsnr]
}
