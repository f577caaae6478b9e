//! `float_adm`'s options (libvmaf's `adm_*` parameters of the float extractor), their option
//! suffix, and the contrast-sensitivity (CSF) factors they select per scale.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_adm.c (option table),
//! adm_options.h (defaults, `ADM_CSF_MODE`), adm_tools.h (`dwt_quant_step`),
//! adm_csf_tools.h (`adm_native_csf`), barten_csf_tools.h (`barten_csf`) and feature_name.c
//! (the suffix rule).

use std::f64::consts::PI;

use super::super::adm::dwt_quant_step;
use crate::features::{fmt_g, suffix, Options, SuffixPart};

/// libvmaf's `DEFAULT_ADM_CSF_LUMINANCE_LEVEL` (cd/m2), the luminance Barten's CSF is
/// evaluated at (not an option).
const LUMINANCE_LEVEL: f64 = 100.0;

/// `adm_csf_mode` values with their own CSF (libvmaf's `enum ADM_CSF_MODE` of
/// adm_options.h); every other value in `0..=9` is Watson's.
const CSF_BARTEN: i64 = 1;
const CSF_ADM: i64 = 2;

/// Options of libvmaf's float ADM (`float_adm`), with libvmaf's defaults and ranges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatAdmConfig {
    /// `adm_enhn_gain_limit` (alias `egl`), `1..=100`, default 100 (1 disables enhancement).
    pub enhn_gain_limit: f64,
    /// `adm_norm_view_dist` (`nvd`): viewing distance in display heights, `0.75..=24`,
    /// default 3.
    pub norm_view_dist: f64,
    /// `adm_noise_weight` (`nw`), `0..=1500`, default 0.03125.
    pub noise_weight: f64,
    /// `adm_csf_scale` (`scf`): Barten CSF gain of bands h and v, `0..=50`, default 1.
    pub csf_scale: f64,
    /// `adm_csf_diag_scale` (`scfd`): Barten CSF gain of band d, `0..=50`, default 1.
    pub csf_diag_scale: f64,
    /// `adm_ref_display_height` (`rdf`): display height in rows, `1..=4320`, default 1080.
    pub ref_display_height: i64,
    /// `adm_csf_mode` (`csf`), `0..=9`, default 0: 1 Barten's CSF, 2 the DLM paper's CSF,
    /// any other value Watson's DWT quantisation thresholds.
    pub csf_mode: i64,
    /// `adm_bypass_cm` (`bcm`), 0 or 1, default 0: 1 skips contrast masking.
    pub bypass_cm: i64,
    /// `adm_adm3_apply_hm` (`aah`), default false: `adm3` is the harmonic mean of `adm2` and
    /// `aim` instead of their weighted sum.
    pub adm3_apply_hm: bool,
    /// `adm_p_norm` (`apn`): exponent of the band pooling, `1..=20`, default 3.
    pub p_norm: f64,
    /// `adm_dlm_weight` (`dlmw`), `0..=1`, default 0.5.
    pub dlm_weight: f64,
    /// `adm_min_val` (`min`): lower clip of `adm3`, `0..=1`, default 0.
    pub min_val: f64,
    /// `adm_f1s0..3` (`f1s0..3`): CSF factor of bands h and v per scale replacing the
    /// model's, `-1..=10`; negative (the default, -1) keeps the model's.
    pub f1: [f64; 4],
    /// `adm_f2s0..3` (`f2s0..3`): the same for band d.
    pub f2: [f64; 4],
    /// `adm_skip_aim_scale` (`sasc`): a scale (`0..=3`) left out of `aim`; -1 (the default)
    /// none.
    pub skip_aim_scale: i64,
    /// `adm_skip_scale0` (`ssz`), default false: scale 0 is only decomposed, its numerator 0
    /// and denominator 1e-10.
    pub skip_scale0: bool,
}

impl Default for FloatAdmConfig {
    /// libvmaf's defaults (what `vmaf_float_v0.6.1` uses).
    fn default() -> Self {
        Self {
            enhn_gain_limit: 100.0,
            norm_view_dist: 3.0,
            noise_weight: 0.03125,
            csf_scale: 1.0,
            csf_diag_scale: 1.0,
            ref_display_height: 1080,
            csf_mode: 0,
            bypass_cm: 0,
            adm3_apply_hm: false,
            p_norm: 3.0,
            dlm_weight: 0.5,
            min_val: 0.0,
            f1: [-1.0; 4],
            f2: [-1.0; 4],
            skip_aim_scale: -1,
            skip_scale0: false,
        }
    }
}

/// The option keys [`FloatAdmConfig::from_options`] reads.
pub(crate) const KEYS: [&str; 22] = [
    "adm_enhn_gain_limit",
    "adm_norm_view_dist",
    "adm_noise_weight",
    "adm_csf_scale",
    "adm_csf_diag_scale",
    "adm_ref_display_height",
    "adm_csf_mode",
    "adm_bypass_cm",
    "adm_adm3_apply_hm",
    "adm_p_norm",
    "adm_dlm_weight",
    "adm_min_val",
    "adm_f1s0",
    "adm_f1s1",
    "adm_f1s2",
    "adm_f1s3",
    "adm_f2s0",
    "adm_f2s1",
    "adm_f2s2",
    "adm_f2s3",
    "adm_skip_aim_scale",
    "adm_skip_scale0",
];

/// The integer under `key` within `range`, `default` when absent.
fn integer(
    options: &Options,
    key: &str,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
) -> Result<i64, String> {
    if !options.0.contains_key(key) {
        return Ok(default);
    }
    let v = options.number(
        key,
        default as f64,
        *range.start() as f64..=*range.end() as f64,
    )?;
    if v.fract() != 0.0 {
        return Err(format!("option '{key}' = {v} must be an integer"));
    }
    Ok(v as i64)
}

impl FloatAdmConfig {
    /// Reads the `adm_*` options of libvmaf's `float_adm` with libvmaf's ranges (listed on
    /// the fields).
    ///
    /// Errors: a text naming the option, for an unknown key (libvmaf's `debug`, which is not
    /// a feature parameter, included), a value outside its range or of the wrong type.
    pub fn from_options(options: &Options) -> Result<Self, String> {
        options.only(&KEYS)?;
        let d = Self::default();
        let num = |key: &str, default: f64, lo: f64, hi: f64| options.number(key, default, lo..=hi);
        let mut f1 = d.f1;
        let mut f2 = d.f2;
        for s in 0..4 {
            f1[s] = num(&format!("adm_f1s{s}"), -1.0, -1.0, 10.0)?;
            f2[s] = num(&format!("adm_f2s{s}"), -1.0, -1.0, 10.0)?;
        }
        Ok(Self {
            enhn_gain_limit: num("adm_enhn_gain_limit", d.enhn_gain_limit, 1.0, 100.0)?,
            norm_view_dist: num("adm_norm_view_dist", d.norm_view_dist, 0.75, 24.0)?,
            noise_weight: num("adm_noise_weight", d.noise_weight, 0.0, 1500.0)?,
            csf_scale: num("adm_csf_scale", d.csf_scale, 0.0, 50.0)?,
            csf_diag_scale: num("adm_csf_diag_scale", d.csf_diag_scale, 0.0, 50.0)?,
            ref_display_height: integer(options, "adm_ref_display_height", 1080, 1..=4320)?,
            csf_mode: integer(options, "adm_csf_mode", 0, 0..=9)?,
            bypass_cm: integer(options, "adm_bypass_cm", 0, 0..=1)?,
            adm3_apply_hm: options.flag("adm_adm3_apply_hm", false)?,
            p_norm: num("adm_p_norm", d.p_norm, 1.0, 20.0)?,
            dlm_weight: num("adm_dlm_weight", d.dlm_weight, 0.0, 1.0)?,
            min_val: num("adm_min_val", d.min_val, 0.0, 1.0)?,
            f1,
            f2,
            skip_aim_scale: integer(options, "adm_skip_aim_scale", -1, 0..=3)?,
            skip_scale0: options.flag("adm_skip_scale0", false)?,
        })
    }

    /// libvmaf's option suffix of the output names (`""`, `"_egl_1"`, `"_csf_2_nvd_5"`):
    /// for each option that differs from its default, in the order of the option names,
    /// `_<alias>_<value>` (`%g` for doubles, `%d` for integers) or `_<alias>` for a boolean.
    pub fn key(&self) -> String {
        let d = Self::default();
        let mut parts: Vec<SuffixPart> = Vec::new();
        let mut num = |name: &'static str, alias: &'static str, v: f64, dv: f64| {
            if v != dv {
                parts.push((name, alias, Some(fmt_g(v))));
            }
        };
        num(
            "adm_enhn_gain_limit",
            "egl",
            self.enhn_gain_limit,
            d.enhn_gain_limit,
        );
        num(
            "adm_norm_view_dist",
            "nvd",
            self.norm_view_dist,
            d.norm_view_dist,
        );
        num("adm_noise_weight", "nw", self.noise_weight, d.noise_weight);
        num("adm_csf_scale", "scf", self.csf_scale, d.csf_scale);
        num(
            "adm_csf_diag_scale",
            "scfd",
            self.csf_diag_scale,
            d.csf_diag_scale,
        );
        num(
            "adm_ref_display_height",
            "rdf",
            self.ref_display_height as f64,
            d.ref_display_height as f64,
        );
        num(
            "adm_csf_mode",
            "csf",
            self.csf_mode as f64,
            d.csf_mode as f64,
        );
        num(
            "adm_bypass_cm",
            "bcm",
            self.bypass_cm as f64,
            d.bypass_cm as f64,
        );
        num("adm_p_norm", "apn", self.p_norm, d.p_norm);
        num("adm_dlm_weight", "dlmw", self.dlm_weight, d.dlm_weight);
        num("adm_min_val", "min", self.min_val, d.min_val);
        const F1: [&str; 4] = ["adm_f1s0", "adm_f1s1", "adm_f1s2", "adm_f1s3"];
        const F2: [&str; 4] = ["adm_f2s0", "adm_f2s1", "adm_f2s2", "adm_f2s3"];
        for s in 0..4 {
            num(F1[s], &F1[s][4..], self.f1[s], -1.0);
            num(F2[s], &F2[s][4..], self.f2[s], -1.0);
        }
        num(
            "adm_skip_aim_scale",
            "sasc",
            self.skip_aim_scale as f64,
            d.skip_aim_scale as f64,
        );
        if self.adm3_apply_hm {
            parts.push(("adm_adm3_apply_hm", "aah", None));
        }
        if self.skip_scale0 {
            parts.push(("adm_skip_scale0", "ssz", None));
        }
        suffix(parts)
    }

    /// The CSF factors (`rfactor`) of bands h, v, d at `scale` (0..=3), in libvmaf's `f32`:
    /// the mode's CSF, then `adm_f1s<scale>` / `adm_f2s<scale>` where set.
    pub fn rfactor(&self, scale: usize) -> [f32; 3] {
        let (nvd, rdh) = (self.norm_view_dist, self.ref_display_height);
        let (mut f1, mut f2) = match self.csf_mode {
            CSF_BARTEN => (
                barten_csf(scale, nvd, rdh, LUMINANCE_LEVEL, self.csf_scale),
                barten_csf(scale, nvd, rdh, LUMINANCE_LEVEL, self.csf_diag_scale),
            ),
            CSF_ADM => (
                adm_native_csf(scale, nvd, rdh, false),
                adm_native_csf(scale, nvd, rdh, true),
            ),
            _ => {
                let rdh = u32::try_from(rdh).unwrap_or(1080);
                (
                    1.0f32 / dwt_quant_step(scale, 1, nvd, rdh),
                    1.0f32 / dwt_quant_step(scale, 2, nvd, rdh),
                )
            }
        };
        let s = scale.min(3);
        if self.f1[s] >= 0.0 {
            f1 = self.f1[s] as f32;
        }
        if self.f2[s] >= 0.0 {
            f2 = self.f2[s] as f32;
        }
        [f1, f1, f2]
    }
}

/// Display visual resolution in pixels per degree (`r`) and the nominal spatial frequency of
/// DWT level `lambda` (half of `r` at level 0), as libvmaf's `f32`.
fn spatial_frequency(lambda: usize, nvd: f64, rdh: i64) -> f32 {
    let r = (nvd * rdh as f64 * PI / 180.0) as f32;
    (f64::from(r) / 2.0f64.powi(lambda as i32 + 1)) as f32
}

/// The DLM paper's CSF (`adm_native_csf`) of level `lambda`, diagonal (45 degrees) or not.
fn adm_native_csf(lambda: usize, nvd: f64, rdh: i64, diagonal: bool) -> f32 {
    let mut sf = spatial_frequency(lambda, nvd, rdh);
    if diagonal {
        sf = (f64::from(sf) / 0.7) as f32;
    }
    let sf = f64::from(sf);
    ((0.31 + 0.69 * sf) * (-0.29 * sf).exp()) as f32
}

/// Barten's CSF as simplified in HDR-VDP-2 (`barten_csf`), at level `lambda`, luminance
/// `lum` (cd/m2) and gain `scale`. libvmaf's `f32` literals are kept as written.
#[allow(clippy::excessive_precision)]
fn barten_csf(lambda: usize, nvd: f64, rdh: i64, lum: f64, scale: f64) -> f32 {
    const ANCHORS: [f32; 6] = [0.002, 0.02, 0.2, 2.0, 20.0, 150.0];
    const PARAMS: [[f32; 5]; 6] = [
        [0.0160737, 0.991265, 3.74038, 0.50722, 4.46044],
        [0.383873, 0.800889, 3.54104, 0.682505, 4.94958],
        [0.929301, 0.476505, 4.37453, 0.750315, 5.28678],
        [1.29776, 0.405782, 4.40602, 0.935314, 5.61425],
        [1.49222, 0.334278, 3.79542, 1.07327, 6.4635],
        [1.46213, 0.394533, 2.7755, 1.16577, 7.45665],
    ];
    const SA: [f32; 4] = [30.162, 4.0627, 1.6596, 0.2712];
    const MTF_A: [f32; 4] = [
        0.424838596301290,
        0.572435103936480,
        0.000167576239164937,
        0.00255872352306433,
    ];
    const MTF_B: [f32; 4] = [0.028, 0.37, 37.0, 360.0];
    let sf = spatial_frequency(lambda, nvd, rdh);
    let lum_c = lum.clamp(f64::from(ANCHORS[0]), f64::from(ANCHORS[5]));
    let mut lo = 0;
    let mut hi = 0;
    for i in 0..5 {
        if lum_c >= f64::from(ANCHORS[i]) && lum_c <= f64::from(ANCHORS[i + 1]) {
            lo = i;
            hi = i + 1;
            break;
        }
    }
    let lp = f64::from(ANCHORS[lo]).log10() as f32;
    let rp = f64::from(ANCHORS[hi]).log10() as f32;
    let sp = lum_c.log10() as f32;
    let interp = |k: usize| {
        let (lv, rv) = (PARAMS[lo][k], PARAMS[hi][k]);
        lv + ((rv - lv) / (rp - lp)) * (sp - lp)
    };
    let (p0, p1, p2, p3) = (interp(1), interp(2), interp(3), interp(4));
    let a = (1.0 + f64::from(p0 * sf).powf(f64::from(p1))) as f32;
    let e = f64::from(sf / 7.0).powf(2.0);
    let b = (1.0 / (1.0 - (-e).exp()).powf(f64::from(p2))) as f32;
    let csf = (f64::from(p3) / f64::from(a * b).powf(0.5)) as f32;
    let mut mtf = 0.0f32;
    for i in 0..4 {
        mtf = (f64::from(mtf) + f64::from(MTF_A[i]) * f64::from(-MTF_B[i] * sf).exp()) as f32;
    }
    let lum_f = lum as f32;
    let rod_cone = (f64::from(SA[0])
        * (f64::from(SA[1] / lum_f).powf(f64::from(SA[2])) + 1.0).powf(-f64::from(SA[3])))
        as f32;
    (f64::from(csf * mtf * rod_cone) * scale) as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::OptionValue;

    #[test]
    fn suffix_follows_option_names() {
        let mut o = Options::new();
        o.set("adm_enhn_gain_limit", OptionValue::Number(1.0));
        o.set("adm_csf_mode", OptionValue::Number(2.0));
        o.set("adm_ref_display_height", OptionValue::Number(2160.0));
        o.set("adm_skip_scale0", OptionValue::Bool(true));
        o.set("adm_f1s2", OptionValue::Number(0.5));
        let c = FloatAdmConfig::from_options(&o).unwrap();
        assert_eq!(c.key(), "_csf_2_egl_1_f1s2_0.5_rdf_2160_ssz");
        assert_eq!(FloatAdmConfig::default().key(), "");
        assert_eq!(c.rfactor(2)[0], 0.5);
    }

    #[test]
    fn csf_modes_are_finite() {
        for mode in [0, 1, 2, 5] {
            let c = FloatAdmConfig {
                csf_mode: mode,
                ..FloatAdmConfig::default()
            };
            for s in 0..4 {
                let r = c.rfactor(s);
                assert!(
                    r.iter().all(|x| x.is_finite() && *x > 0.0),
                    "{mode} {s} {r:?}"
                );
            }
        }
    }
}
