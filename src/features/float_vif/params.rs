//! What float_vif's definition and its two halves share: the registry name and scales, its options
//! (FloatVifConfig and the statistic's parameters), the Gaussian kernels and the statistic itself.

use super::prescale;
use crate::features::options::{fmt_g, OptionValue, Options};

/// The registry name (libvmaf's extractor name).
pub const FEATURE: &str = "float_vif";

/// Number of scales.
pub const SCALES: usize = 4;

/// Largest filter libvmaf builds (`float filter[128]` in `compute_vif`); kernel scales up to
/// 4 stay below it (69 taps).
pub const MAX_TAPS: usize = 128;

/// The kernel scales libvmaf accepts (`valid_kernelscales` in vif_tools.h, as `float`s); a
/// value within 1e-3 of one of them is valid.
const KERNELSCALES: [f32; 21] = [
    1.0,
    1.0 / 2.0,
    3.0 / 2.0,
    2.0,
    2.0 / 3.0,
    24.0 / 10.0,
    360.0 / 97.0,
    4.0 / 3.0,
    3.5 / 3.0,
    3.75 / 3.0,
    4.25 / 3.0,
    5.0 / 3.0,
    3.0,
    1.0 / 2.25,
    1.4746,
    1.54,
    1.6,
    1.06667,
    0.711111,
    0.740740,
    1.111111,
];

/// Whether option `name`'s `value` is one of libvmaf's kernel scales ([`KERNELSCALES`]; VIF
/// and the speed metrics share the table).
///
/// Errors: a text naming the option and its value.
pub(crate) fn check_kernelscale(name: &str, value: f64) -> Result<(), String> {
    if KERNELSCALES.iter().any(|k| (value as f32 - k).abs() < 1e-3) {
        return Ok(());
    }
    Err(format!(
        "option '{name}' = {value} is not one of libvmaf's kernel scales"
    ))
}

/// Option names (libvmaf's, `float_vif.c`'s table) with their aliases in the output suffix,
/// in alphabetical order of the names (the order of the suffix).
const OPTIONS: [(&str, &str); 9] = [
    ("vif_enhn_gain_limit", "egl"),
    ("vif_kernelscale", "ks"),
    ("vif_prescale", "ps"),
    ("vif_prescale_method", "pm"),
    ("vif_scale1_min_val", "s1miv"),
    ("vif_scale2_min_val", "s2miv"),
    ("vif_scale3_min_val", "s3miv"),
    ("vif_sigma_nsq", "snsq"),
    ("vif_skip_scale0", "ssclz"),
];

/// The prescale methods libvmaf names (`vif_prescale_method`).
const PRESCALE_METHODS: [&str; 4] = ["nearest", "bilinear", "bicubic", "lanczos4"];

/// The options of a `float_vif` instance; [`Default`] gives libvmaf's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct FloatVifConfig {
    /// `vif_enhn_gain_limit` (`egl`), 1..=100, default 100: upper bound of the gain `g`.
    pub enhn_gain_limit: f64,
    /// `vif_kernelscale` (`ks`), one of libvmaf's 21 valid scales in 0.1..=4, default 1:
    /// multiplies the Gaussians' length and deviation.
    pub kernelscale: f64,
    /// `vif_prescale` (`ps`), 0.1..=4, default 1: the planes are rescaled to
    /// `(int)(size * prescale + 0.5)` before VIF (CPU only).
    pub prescale: f64,
    /// `vif_prescale_method` (`pm`), default `nearest`.
    pub prescale_method: String,
    /// `vif_scale1_min_val` .. `vif_scale3_min_val` (`s1miv`..), 0..=1, default 0: lower
    /// clip of `vif_scale1..3`.
    pub min_val: [f64; 3],
    /// `vif_sigma_nsq` (`snsq`), 0..=5, default 2: the neural noise variance.
    pub sigma_nsq: f64,
    /// `vif_skip_scale0` (`ssclz`), default false: scale 0 is not computed, `vif_scale0`
    /// is 0.
    pub skip_scale0: bool,
}

impl Default for FloatVifConfig {
    fn default() -> Self {
        Self {
            enhn_gain_limit: 100.0,
            kernelscale: 1.0,
            prescale: 1.0,
            prescale_method: "nearest".to_owned(),
            min_val: [0.0; 3],
            sigma_nsq: 2.0,
            skip_scale0: false,
        }
    }
}

/// The constants of the per-pixel statistic, as `vif_statistic_s` derives them.
#[derive(Debug, Clone, Copy)]
pub struct StatParams {
    /// `(float) vif_enhn_gain_limit`.
    pub egl: f32,
    /// `vif_sigma_nsq`, a `double` in libvmaf's expressions.
    pub sigma_nsq: f64,
    /// `powf(sigma_nsq, 2) / (255 * 255)` stored as `float`.
    pub sigma_max_inv: f32,
}

impl FloatVifConfig {
    /// Reads `options` (libvmaf's names, see [`OPTIONS`]).
    ///
    /// Errors: an unknown option, a value outside libvmaf's range, a kernel scale libvmaf
    /// does not accept or an unknown prescale method.
    pub fn from_options(o: &Options) -> Result<Self, String> {
        let names: Vec<&str> = OPTIONS.iter().map(|(n, _)| *n).collect();
        o.only(&names)?;
        let d = Self::default();
        let kernelscale = o.number("vif_kernelscale", d.kernelscale, 0.1..=4.0)?;
        check_kernelscale("vif_kernelscale", kernelscale)?;
        let prescale = o.number("vif_prescale", d.prescale, 0.1..=4.0)?;
        let prescale_method = match o.0.get("vif_prescale_method") {
            None => d.prescale_method.clone(),
            Some(OptionValue::Text(t)) if PRESCALE_METHODS.contains(&t.as_str()) => t.clone(),
            Some(_) => {
                return Err(format!(
                    "option 'vif_prescale_method' must be one of {}",
                    PRESCALE_METHODS.join(", ")
                ))
            }
        };
        Ok(Self {
            enhn_gain_limit: o.number("vif_enhn_gain_limit", d.enhn_gain_limit, 1.0..=100.0)?,
            kernelscale,
            prescale,
            prescale_method,
            min_val: [
                o.number("vif_scale1_min_val", 0.0, 0.0..=1.0)?,
                o.number("vif_scale2_min_val", 0.0, 0.0..=1.0)?,
                o.number("vif_scale3_min_val", 0.0, 0.0..=1.0)?,
            ],
            sigma_nsq: o.number("vif_sigma_nsq", d.sigma_nsq, 0.0..=5.0)?,
            skip_scale0: o.flag("vif_skip_scale0", d.skip_scale0)?,
        })
    }

    /// libvmaf's option suffix of the output names: `_<alias>_<value>` (`_<alias>` for a
    /// set boolean) for each option not at its default, in alphabetical order of the option
    /// names, numbers as C's `%g` (`_egl_1` for `vmaf_float_v0.6.1neg`-style options).
    pub fn key(&self) -> String {
        let d = Self::default();
        let mut s = String::new();
        let num = |v: f64, dv: f64| (v != dv).then(|| fmt_g(v));
        for (name, alias) in OPTIONS {
            let value: Option<Option<String>> = match name {
                "vif_enhn_gain_limit" => num(self.enhn_gain_limit, d.enhn_gain_limit).map(Some),
                "vif_kernelscale" => num(self.kernelscale, d.kernelscale).map(Some),
                "vif_prescale" => num(self.prescale, d.prescale).map(Some),
                "vif_prescale_method" => (self.prescale_method != d.prescale_method)
                    .then(|| Some(self.prescale_method.clone())),
                "vif_scale1_min_val" => num(self.min_val[0], 0.0).map(Some),
                "vif_scale2_min_val" => num(self.min_val[1], 0.0).map(Some),
                "vif_scale3_min_val" => num(self.min_val[2], 0.0).map(Some),
                "vif_sigma_nsq" => num(self.sigma_nsq, d.sigma_nsq).map(Some),
                "vif_skip_scale0" => self.skip_scale0.then_some(None),
                _ => None,
            };
            match value {
                Some(Some(v)) => s.push_str(&format!("_{alias}_{v}")),
                Some(None) => s.push_str(&format!("_{alias}")),
                None => {}
            }
        }
        s
    }

    /// Taps of scale `s`'s Gaussian (`vif_get_filter_size`): `max(odd ceiling of
    /// (2^(4 - s) + 1) * kernelscale, 3)`; 17, 9, 5, 3 at kernel scale 1.
    pub fn filter_len(&self, s: usize) -> usize {
        let n = ((1u32 << (4 - s)) + 1) as f32 * self.kernelscale as f32;
        let c = f64::from(n).ceil() as i64;
        let odd = if c % 2 == 0 { c + 1 } else { c };
        (odd.max(3) as usize).min(MAX_TAPS - 1)
    }

    /// Scale `s`'s normalised Gaussian (`vif_get_filter`): [`FloatVifConfig::filter_len`]
    /// taps, deviation `len / 5`, in libvmaf's arithmetic (`get_1d_gaussian_kernel`: the
    /// exponent in `double`, taps and their sum in `float`).
    pub fn filter(&self, s: usize) -> Vec<f32> {
        let size = self.filter_len(s);
        let sd = f64::from(size as f32 / 5.0);
        let k = (size as i32 - 1) / 2;
        let mut out: Vec<f32> = (0..size as i32)
            .map(|i| {
                let x = f64::from((i - k) as f32);
                let num = (-0.5 * x / sd * x / sd).exp() as f32;
                let den = (1.0 / (sd * (2.0 * std::f64::consts::PI).sqrt())) as f32;
                num / den
            })
            .collect();
        let mut sum = 0.0f32;
        for &v in &out {
            sum += v;
        }
        for v in &mut out {
            *v /= sum;
        }
        out
    }

    /// The smallest plane the four scales are defined on, after the prescale: every
    /// scale's plane (the size halved, rounding down, `s` times) must be larger than its
    /// filter's radius, or the mirrored borders would read outside it (16x16 at kernel
    /// scale 1).
    pub fn min_scaled_size(&self) -> usize {
        (0..SCALES)
            .map(|s| (self.filter_len(s) / 2 + 1) << s)
            .max()
            .unwrap_or(1)
    }

    /// The smallest input plane: [`FloatVifConfig::min_scaled_size`] after the prescale.
    pub fn min_size(&self) -> (usize, usize) {
        let m = self.min_scaled_size();
        let n = (1..=m * 64)
            .find(|&n| prescale::scaled(n, self.prescale) >= m)
            .unwrap_or(m);
        (n, n)
    }

    /// The planes' size after the prescale.
    pub fn scaled_size(&self, width: usize, height: usize) -> (usize, usize) {
        (
            prescale::scaled(width, self.prescale),
            prescale::scaled(height, self.prescale),
        )
    }

    /// The prescale method.
    pub fn method(&self) -> prescale::Method {
        prescale::Method::from_name(&self.prescale_method).unwrap_or(prescale::Method::Nearest)
    }

    /// The statistic's constants.
    pub fn stat_params(&self) -> StatParams {
        let s = self.sigma_nsq as f32;
        StatParams {
            egl: self.enhn_gain_limit as f32,
            sigma_nsq: self.sigma_nsq,
            sigma_max_inv: (f64::from(s * s) / (255.0 * 255.0)) as f32,
        }
    }

    /// The four outputs from the sums: `vif_scale0 = num / den` (0 with `skip_scale0`),
    /// `vif_scale1..3 = max(num / den, min_val)`, in `f64` as libvmaf divides the sums.
    pub fn scores(&self, s: &Scales) -> [f64; SCALES] {
        std::array::from_fn(|i| {
            let v = s.num[i] / s.den[i];
            match i {
                0 if self.skip_scale0 => 0.0,
                0 => v,
                _ => {
                    let m = self.min_val[i - 1];
                    if v > m {
                        v
                    } else {
                        m
                    }
                }
            }
        })
    }
}

/// libvmaf's per-scale sums (`scores[]` of `compute_vif`): `f32` values widened.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scales {
    /// `vif_num_scale{s}`.
    pub num: [f64; SCALES],
    /// `vif_den_scale{s}`.
    pub den: [f64; SCALES],
}

/// The coefficients of libvmaf's polynomial for `log2(1 + x)` on `[0, 1)` (`log2_poly_s`),
/// highest power first; the decimal constants rounded to `double`, then to `float`, as C's
/// initialiser does.
const LOG2_POLY: [f64; 9] = [
    -0.012671635276421,
    0.064841182402670,
    -0.157048836463065,
    0.257167726303123,
    -0.353800560300520,
    0.480131410397451,
    -0.721314327952201,
    1.442694803896991,
    0.0,
];

/// libvmaf's fast `log2f` (`log2f_approx`, `VIF_OPT_FAST_LOG2`): the exponent plus a
/// degree-8 polynomial of the mantissa, Horner's rule in `f32`. `-inf` for 0, NaN below 0.
#[inline(always)]
pub fn log2f_approx(x: f32) -> f32 {
    if x == 0.0 {
        return f32::NEG_INFINITY;
    }
    if x < 0.0 {
        return f32::NAN;
    }
    let u = x.to_bits();
    let exponent = (u & 0x7F80_0000) >> 23;
    let remain = f32::from_bits((u & 0x007F_FFFF) | 0x3F80_0000);
    let t = remain - 1.0;
    let mut v = 0.0f32;
    for c in LOG2_POLY {
        v = v * t + c as f32;
    }
    (exponent as i32 - 127) as f32 + v
}

/// `vif_statistic_s` for one pixel ("matching_matlab" mode): `(num, den)` from the filtered
/// means `mu1`, `mu2`, the filtered squares `xx`, `yy` and product `xy`, every step in
/// libvmaf's types (`float`, with the divisions by `sv^2 + sigma_nsq` and `sigma_nsq` in
/// `double`).
#[inline(always)]
pub fn statistic(mu1: f32, mu2: f32, xx: f32, yy: f32, xy: f32, p: &StatParams) -> (f32, f32) {
    const EPS: f32 = 1.0e-10;
    let mut s1 = xx - mu1 * mu1;
    let mut s2 = yy - mu2 * mu2;
    let s12 = xy - mu1 * mu2;
    s1 = if s1 > 0.0 { s1 } else { 0.0 };
    s2 = if s2 > 0.0 { s2 } else { 0.0 };
    let mut g = s12 / (s1 + EPS);
    let mut sv = s2 - g * s12;
    if s1 < EPS {
        g = 0.0;
        sv = s2;
        s1 = 0.0;
    }
    if s2 < EPS {
        g = 0.0;
        sv = 0.0;
    }
    if g < 0.0 {
        sv = s2;
        g = 0.0;
    }
    sv = if sv > EPS { sv } else { EPS };
    g = if g < p.egl { g } else { p.egl };
    let mut num =
        log2f_approx((1.0 + f64::from(g * g * s1) / (f64::from(sv) + p.sigma_nsq)) as f32);
    let mut den = log2f_approx((1.0 + f64::from(s1) / p.sigma_nsq) as f32);
    if s12 < 0.0 {
        num = 0.0;
    }
    if f64::from(s1) < p.sigma_nsq {
        num = 1.0 - s2 * p.sigma_max_inv;
        den = 1.0;
    }
    (num, den)
}
