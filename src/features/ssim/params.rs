//! What float_ssim's and float_ms_ssim's definition and their two halves share: the Gaussian and
//! low-pass taps, the MS-SSIM scales and weights, the sizes each accepts and the arithmetic of the
//! constants and the combined score.

use crate::video::frame::FeatureError;

/// The 11-tap Gaussian window (sigma 1.5), by distance from the centre (0..=5).
pub(super) const GAUSS: [f32; 6] = [0.266012, 0.213006, 0.109361, 0.036001, 0.007599, 0.001028];

/// Window length: the smallest side SSIM accepts at any scale.
pub const GAUSS_LEN: usize = 11;

/// MS-SSIM's 9x9 low-pass filter, `LPF[|dy|][|dx|]` (symmetric in both directions).
pub(super) const LPF: [[f32; 5]; 5] = [
    [0.363505, 0.160885, -0.047149, -0.010146, 0.016114],
    [0.160885, 0.071207, -0.020867, -0.004490, 0.007132],
    [-0.047149, -0.020867, 0.006115, 0.001316, -0.002090],
    [-0.010146, -0.004490, 0.001316, 0.000283, -0.000450],
    [0.016114, 0.007132, -0.002090, -0.000450, 0.000714],
];

/// Number of MS-SSIM scales.
pub const MS_SSIM_SCALES: usize = 5;

/// Exponents of luminance, contrast and structure at each scale (Wang et al.).
const MS_ALPHA: [f32; 5] = [0.0, 0.0, 0.0, 0.0, 0.1333];

const MS_BETA: [f32; 5] = [0.0448, 0.2856, 0.3001, 0.2363, 0.1333];

/// Smallest frame `float_ms_ssim` accepts: libvmaf refuses a frame when any of its five
/// scales (the size halved, rounding down, four times) is narrower or lower than the
/// 11-sample Gaussian window, i.e. below 176x176.
pub const MS_SSIM_MIN_SIZE: usize = GAUSS_LEN << (MS_SSIM_SCALES - 1);

/// Whether `float_ms_ssim` accepts a `width` x `height` frame (libvmaf's check in
/// `compute_ms_ssim`).
pub fn ms_ssim_fits(width: usize, height: usize) -> bool {
    (0..MS_SSIM_SCALES).all(|i| (width >> i) >= GAUSS_LEN && (height >> i) >= GAUSS_LEN)
}

/// `float_ssim`'s down-scaling factor for a `width` x `height` frame (1: none; see
/// [`cpu::Ssim::float_ssim`]), or the error `float_ssim` gives for that geometry:
/// [`FeatureError::FrameTooSmall`] when a side is below 11 samples, before or after the
/// down-scaling. The GPU path (`crate::cuda::ssim`) checks with it too.
pub fn float_ssim_scale(width: usize, height: usize) -> Result<usize, FeatureError> {
    if width < GAUSS_LEN || height < GAUSS_LEN {
        return Err(FeatureError::FrameTooSmall {
            feature: "float_ssim",
            width,
            height,
            min_width: GAUSS_LEN,
            min_height: GAUSS_LEN,
        });
    }
    let scale = auto_scale(width, height);
    if scale > 1 && (decimated(width, scale) < GAUSS_LEN || decimated(height, scale) < GAUSS_LEN) {
        return Err(FeatureError::FrameTooSmall {
            feature: "float_ssim",
            width,
            height,
            min_width: GAUSS_LEN * scale,
            min_height: GAUSS_LEN * scale,
        });
    }
    Ok(scale)
}

/// SSIM's constants `(C1, C2, C3)` in `f32` as IQA computes them for an 8-bit range:
/// `C1 = (0.01 * 255)^2`, `C2 = (0.03 * 255)^2`, `C3 = C2 / 2`.
pub fn ssim_constants() -> (f32, f32, f32) {
    let k1 = 0.01f32 * 255.0;
    let k2 = 0.03f32 * 255.0;
    let c1 = k1 * k1;
    let c2 = k2 * k2;
    (c1, c2, c2 / 2.0)
}

/// The weight of each tap of `float_ssim`'s `scale x scale` box filter: `1 / scale^2` in `f32`.
pub fn box_tap(scale: usize) -> f32 {
    1.0f32 / (scale * scale) as f32
}

/// MS-SSIM from the per-scale means `[l, c, s]` (each the `f32` mean over that scale's valid
/// region, scale 0 first): the product over scales of `l^alpha * c^beta * s^beta` in `f64`
/// with Wang's exponents (IQA's `iqa_ms_ssim` with default arguments).
pub fn ms_ssim_combine(means: &[[f32; 3]; MS_SSIM_SCALES]) -> f64 {
    let mut msssim = 1.0f64;
    for (i, &[l, c, s]) in means.iter().enumerate() {
        let term = f64::from(l).powf(f64::from(MS_ALPHA[i]))
            * f64::from(c).powf(f64::from(MS_BETA[i]))
            * f64::from(s).powf(f64::from(MS_BETA[i]));
        msssim *= term;
    }
    msssim
}

/// The error `float_ms_ssim` gives for a frame below [`MS_SSIM_MIN_SIZE`].
pub fn ms_ssim_too_small(width: usize, height: usize) -> FeatureError {
    FeatureError::FrameTooSmall {
        feature: "float_ms_ssim",
        width,
        height,
        min_width: MS_SSIM_MIN_SIZE,
        min_height: MS_SSIM_MIN_SIZE,
    }
}

/// Size after IQA's decimation by `factor`: `n / factor + (n & 1)` (MS-SSIM's halving and
/// `float_ssim`'s down-scaling).
pub fn decimated(n: usize, factor: usize) -> usize {
    n / factor + (n & 1)
}

/// `float_ssim`'s automatic down-scaling factor: `max(1, round(min(w, h) / 256))` with
/// IQA's rounding (halves away from zero).
pub(super) fn auto_scale(w: usize, h: usize) -> usize {
    let a = w.min(h) as f32 / 256.0;
    let t = a.trunc();
    let r = if f64::from(a - t) >= 0.5 { t + 1.0 } else { t };
    (r as usize).max(1)
}
