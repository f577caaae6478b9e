//! What float_adm's definition and its two halves share: the registry name, the scales and
//! smallest plane, the wavelet taps and the arithmetic that pools and finishes the scores.

use super::config::FloatAdmConfig;

/// The registry name.
pub(super) const FEATURE: &str = "float_adm";

/// Number of DWT levels (scales).
pub const SCALES: usize = 4;

/// Smallest accepted plane side in samples. The contrast masking of every scale reads the
/// neighbours of a band's edge mirrored (row -1 is row 1), so the coarsest band (the side
/// halved, rounding up, four times) must be at least 2 wide: below that libvmaf reads outside
/// its buffers.
pub const MIN_SIZE: usize = 17;

/// libvmaf's `FLOAT_ONE_BY_30` (a `double` literal), the weight of a neighbour in the masking
/// threshold.
pub(crate) const ONE_BY_30: f64 = 0.0333333351;

/// libvmaf's `FLOAT_ONE_BY_15`, the weight of the centre in the masking threshold.
pub(crate) const ONE_BY_15: f64 = 0.0666666701;

/// The db2 analysis low-pass filter (`dwt2_db2_coeffs_lo_s`; libvmaf's literals as written).
#[allow(clippy::excessive_precision)]
pub(crate) const DB2_LO: [f32; 4] = [
    0.482962913144690,
    0.836516303737469,
    0.224143868041857,
    -0.129409522550921,
];

/// The db2 analysis high-pass filter (`dwt2_db2_coeffs_hi_s`).
#[allow(clippy::excessive_precision)]
pub(crate) const DB2_HI: [f32; 4] = [
    -0.129409522550921,
    -0.224143868041857,
    0.836516303737469,
    -0.482962913144690,
];

/// `cos(1 degree)^2` as libvmaf's `f32` (the decoupling's angle test).
pub(crate) fn cos_1deg_sq() -> f32 {
    let c = (std::f64::consts::PI / 180.0).cos();
    (c * c) as f32
}

/// The per-band noise floor `(area * weight)^(1/p)` libvmaf adds to each band's pooled value
/// (`get_noise_constant`), in `f32`.
pub(crate) fn noise_constant(area: usize, weight: f64, p_norm: f64) -> f32 {
    ((area as f64 * weight) as f32).powf((1.0 / p_norm) as f32)
}

/// One scale's pooled value from the band sums `accum` (h, v, d) over a scored region of
/// `area` coefficients: `sum over bands of accum^(1/p) + noise` in `f32`, libvmaf's order.
pub(crate) fn pool(accum: [f32; 3], area: usize, weight: f64, p_norm: f64) -> f32 {
    let e = (1.0 / p_norm) as f32;
    let noise = noise_constant(area, weight, p_norm);
    let v = accum.map(|a| a.powf(e) + noise);
    v[0] + v[1] + v[2]
}

/// `adm2`, `aim`, `adm3`, `adm_scale0..3` of a `width` x `height` frame from each scale's
/// (numerator, denominator, AIM numerator), libvmaf's `compute_adm` tail and `extract`: sums
/// in `f64`, values below `1e-10 * area / 1920x1080` cut to 0, `adm2 = num / den` (1 when
/// `den` is 0, `aim` then 0), `aim = min(aim_num / aim_den, 1)` without the scale
/// `adm_skip_aim_scale`, `adm3` the weighted (or harmonic) mix clipped below at
/// `adm_min_val`, and each scale's ratio. Shared by both halves.
pub(crate) fn finish(
    width: usize,
    height: usize,
    per_scale: &[(f32, f32, f32); SCALES],
    cfg: &FloatAdmConfig,
) -> [f64; 7] {
    let limit = 1e-10 * (width * height) as f64 / (1920.0 * 1080.0);
    let (mut num, mut den, mut aim_num, mut aim_den) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (s, &(n, d, a)) in per_scale.iter().enumerate() {
        num += f64::from(n);
        den += f64::from(d);
        if cfg.skip_aim_scale != s as i64 {
            aim_den += f64::from(d);
            aim_num += f64::from(a);
        }
    }
    let num = if num < limit { 0.0 } else { num };
    let den = if den < limit { 0.0 } else { den };
    let (adm2, aim) = if den == 0.0 {
        (1.0, 0.0)
    } else {
        (num / den, (aim_num / aim_den).min(1.0))
    };
    let adm3 = if cfg.adm3_apply_hm {
        2.0 * adm2 * aim / (adm2 + aim)
    } else {
        adm2 * cfg.dlm_weight + (1.0 - aim) * (1.0 - cfg.dlm_weight)
    };
    let adm3 = if adm3 > cfg.min_val {
        adm3
    } else {
        cfg.min_val
    };
    let mut out = [adm2, aim, adm3, 0.0, 0.0, 0.0, 0.0];
    for (o, &(n, d, _)) in out[3..].iter_mut().zip(per_scale) {
        *o = f64::from(n) / f64::from(d);
    }
    out
}
