//! What CAMBI's definition and its two halves share: its options ([`CambiConfig`]), what is
//! fixed once the frame size is known ([`Params`]: encode size, window, spatial-mask threshold,
//! visibility thresholds and the look-up tables both halves use), the registry name, the scales
//! and the score from the halves' sums.
//!
//! Source of every rule and constant: Netflix/vmaf v3.2.0, libvmaf/src/feature/cambi.c
//! (`options`, `init`, `get_tvi_for_diff`, `get_vlt_luma`, `adjust_window_size`,
//! `get_mask_index`, the `decimate_generic_*` resizers), cambi.h (`reciprocal_lut`),
//! luminance_tools.c (EOTFs, limited range) and feature_name.c (the option suffix).

use crate::features::{fmt_g, OptionValue, Options};
use crate::video::frame::FeatureError;

/// Every option name of libvmaf's `cambi` extractor; [`CambiConfig::from_options`] refuses
/// `src_width`, `src_height`, `heatmaps_path` and a true `full_ref` (full-reference mode and
/// heat maps are not implemented).
pub const OPTION_NAMES: &[&str] = &[
    "cambi_max_val",
    "enc_width",
    "enc_height",
    "enc_bitdepth",
    "src_width",
    "src_height",
    "window_size",
    "topk",
    "cambi_topk",
    "tvi_threshold",
    "cambi_vis_lum_threshold",
    "max_log_contrast",
    "heatmaps_path",
    "full_ref",
    "eotf",
    "cambi_eotf",
    "cambi_high_res_speedup",
];

/// Smallest encode side: libvmaf refuses a frame whose encode width and height are both below
/// it (`CAMBI_MIN_WIDTH_HEIGHT`).
pub const MIN_SIDE: usize = 216;

/// Side of the spatial mask's square (`MASK_FILTER_SIZE`).
pub const MASK_FILTER: usize = 7;

/// Entries of the reciprocal table (`CAMBI_RECIPROCAL_LUT_SIZE`); the window's pixel count
/// must stay below it.
pub const LUT_SIZE: usize = 4226;

/// Most luma-level differences the CUDA kernel handles (`1 << max_log_contrast`, option at
/// most 2).
pub const MAX_DIFFS: usize = 4;

/// Suprathreshold contrast weight of each luma difference (`g_contrast_weights`, first
/// [`MAX_DIFFS`]).
pub const CONTRAST_WEIGHTS: [i32; MAX_DIFFS] = [1, 2, 3, 4];

/// The electro-optical transfer function of the visibility thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eotf {
    /// ITU-R BT.1886 (libvmaf's default `"bt1886"`): gamma 2.4, 300 cd/m^2 white,
    /// 0.01 cd/m^2 black.
    Bt1886,
    /// SMPTE ST 2084 (`"pq"`).
    Pq,
}

impl Eotf {
    fn parse(key: &str, v: Option<&OptionValue>) -> Result<Self, String> {
        match v {
            None => Ok(Self::Bt1886),
            Some(OptionValue::Text(t)) if t == "bt1886" => Ok(Self::Bt1886),
            Some(OptionValue::Text(t)) if t == "pq" => Ok(Self::Pq),
            Some(_) => Err(format!("option '{key}' must be \"bt1886\" or \"pq\"")),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Bt1886 => "bt1886",
            Self::Pq => "pq",
        }
    }

    /// Luminance in cd/m^2 of the normalised signal `v` (in [0, 1]).
    pub fn luminance(self, v: f64) -> f64 {
        match self {
            Self::Bt1886 => {
                let (gamma, lw, lb) = (2.4f64, 300.0f64, 0.01f64);
                let a = (lw.powf(1.0 / gamma) - lb.powf(1.0 / gamma)).powf(gamma);
                let b = lb.powf(1.0 / gamma) / (lw.powf(1.0 / gamma) - lb.powf(1.0 / gamma));
                a * (v + b).max(0.0).powf(gamma)
            }
            Self::Pq => {
                let (m1, m2) = (0.1593017578125f64, 78.84375f64);
                let (c1, c2, c3) = (0.8359375f64, 18.8515625f64, 18.6875f64);
                let num = (v.powf(1.0 / m2) - c1).max(0.0);
                let den = c2 - c3 * v.powf(1.0 / m2);
                10000.0 * (num / den).powf(1.0 / m1)
            }
        }
    }
}

/// CAMBI's options, libvmaf's defaults in [`Default`].
#[derive(Debug, Clone, PartialEq)]
pub struct CambiConfig {
    /// `cambi_max_val` (`cmxv`): scores are clipped to it; 0..=1000, default 1000.
    pub max_val: f64,
    /// `enc_width` (`encw`): the encode width, 180..=7680; 0 (default): the input's.
    pub enc_width: u32,
    /// `enc_height` (`ench`): the encode height, 150..=7680; 0 (default): the input's.
    pub enc_height: u32,
    /// `enc_bitdepth` (`encbd`): the encode depth, 6..=16; 0 (default): the input's.
    pub enc_bitdepth: u32,
    /// `window_size` (`ws`): the c-value window at 4K, 15..=127, default 65.
    pub window_size: u32,
    /// `topk`: share of the c-values pooled, 0.0001..=1, default 0.6 (wins over
    /// `cambi_topk` when not at its default).
    pub topk: f64,
    /// `cambi_topk` (`ctpk`): as `topk`.
    pub cambi_topk: f64,
    /// `tvi_threshold` (`tvit`): visibility threshold of a luminance step, relative to the
    /// luminance, 0.0001..=1, default 0.019.
    pub tvi_threshold: f64,
    /// `cambi_vis_lum_threshold` (`vlt`): luminance (cd/m^2) below which banding is not
    /// visible, 0..=300, default 0.
    pub vis_lum_threshold: f64,
    /// `max_log_contrast` (`mlc`): log2 of the largest luma step considered, 0..=2 here
    /// (libvmaf: 0..=5), default 2.
    pub max_log_contrast: u32,
    /// `eotf`: default BT.1886.
    pub eotf: Eotf,
    /// `cambi_eotf` (`ceot`): wins over `eotf` when not at its default.
    pub cambi_eotf: Eotf,
    /// `cambi_high_res_speedup` (`hrs`): 1080, 1440 or 2160 halves the frame once more
    /// before the first scale when the encode has at least that many pixels (1920x1080,
    /// 2560x1440, 3840x2160); other values (default 0) never do.
    pub high_res_speedup: u32,
}

impl Default for CambiConfig {
    fn default() -> Self {
        Self {
            max_val: 1000.0,
            enc_width: 0,
            enc_height: 0,
            enc_bitdepth: 0,
            window_size: 65,
            topk: 0.6,
            cambi_topk: 0.6,
            tvi_threshold: 0.019,
            vis_lum_threshold: 0.0,
            max_log_contrast: 2,
            eotf: Eotf::Bt1886,
            cambi_eotf: Eotf::Bt1886,
            high_res_speedup: 0,
        }
    }
}

/// An integer option within `range` (`default` when absent).
fn int(o: &Options, key: &str, default: u32, range: (u32, u32)) -> Result<u32, String> {
    let v = o.number(
        key,
        f64::from(default),
        f64::from(range.0)..=f64::from(range.1),
    )?;
    if o.0.contains_key(key) && v.fract() != 0.0 {
        return Err(format!("option '{key}' = {v} must be an integer"));
    }
    Ok(v as u32)
}

impl CambiConfig {
    /// Reads libvmaf's option names (see [`OPTION_NAMES`]).
    ///
    /// Errors: a text naming an option outside its range, not a number where one is needed,
    /// an unknown EOTF, `max_log_contrast` above 2, or an unsupported option (`full_ref`
    /// true, `src_width`, `src_height`, `heatmaps_path`).
    pub fn from_options(o: &Options) -> Result<Self, String> {
        o.only(OPTION_NAMES)?;
        for key in ["src_width", "src_height", "heatmaps_path"] {
            if o.0.contains_key(key) {
                return Err(format!(
                    "cambi option '{key}' is not supported (full-reference mode and heat maps \
                     are not implemented)"
                ));
            }
        }
        match o.0.get("full_ref") {
            None | Some(OptionValue::Bool(false)) => {}
            Some(_) => {
                return Err("cambi option 'full_ref' is not supported (only the \
                            no-reference score is implemented)"
                    .into())
            }
        }
        let d = Self::default();
        let enc = |key, range| -> Result<u32, String> {
            match o.0.get(key) {
                None => Ok(0),
                Some(_) => int(o, key, 0, range),
            }
        };
        let cfg = Self {
            max_val: o.number("cambi_max_val", d.max_val, 0.0..=1000.0)?,
            enc_width: enc("enc_width", (180, 7680))?,
            enc_height: enc("enc_height", (150, 7680))?,
            enc_bitdepth: enc("enc_bitdepth", (6, 16))?,
            window_size: int(o, "window_size", d.window_size, (15, 127))?,
            topk: o.number("topk", d.topk, 0.0001..=1.0)?,
            cambi_topk: o.number("cambi_topk", d.cambi_topk, 0.0001..=1.0)?,
            tvi_threshold: o.number("tvi_threshold", d.tvi_threshold, 0.0001..=1.0)?,
            vis_lum_threshold: o.number("cambi_vis_lum_threshold", 0.0, 0.0..=300.0)?,
            max_log_contrast: int(o, "max_log_contrast", d.max_log_contrast, (0, 5))?,
            eotf: Eotf::parse("eotf", o.0.get("eotf"))?,
            cambi_eotf: Eotf::parse("cambi_eotf", o.0.get("cambi_eotf"))?,
            high_res_speedup: int(o, "cambi_high_res_speedup", 0, (0, 2160))?,
        };
        if cfg.max_log_contrast > 2 {
            return Err(format!(
                "option 'max_log_contrast' = {} is not supported (0..2 here)",
                cfg.max_log_contrast
            ));
        }
        Ok(cfg)
    }

    /// libvmaf's option suffix of the output name: `_<alias>_<value>` for each option that
    /// differs from its default, in alphabetical order of the option names (feature_name.c
    /// sorts its dictionary), integers as `%d`, numbers as `%g`, e.g.
    /// `_hrs_1080_cmxv_17_vlt_0.06`.
    pub fn suffix(&self) -> String {
        let d = Self::default();
        let mut parts: Vec<(&str, &str, String)> = Vec::new();
        let mut num = |name, alias, v: f64, dv: f64| {
            if v != dv {
                parts.push((name, alias, fmt_g(v)));
            }
        };
        num("cambi_max_val", "cmxv", self.max_val, d.max_val);
        num("topk", "topk", self.topk, d.topk);
        num("cambi_topk", "ctpk", self.cambi_topk, d.cambi_topk);
        num("tvi_threshold", "tvit", self.tvi_threshold, d.tvi_threshold);
        num(
            "cambi_vis_lum_threshold",
            "vlt",
            self.vis_lum_threshold,
            d.vis_lum_threshold,
        );
        let ints = [
            ("enc_width", "encw", self.enc_width, d.enc_width),
            ("enc_height", "ench", self.enc_height, d.enc_height),
            ("enc_bitdepth", "encbd", self.enc_bitdepth, d.enc_bitdepth),
            ("window_size", "ws", self.window_size, d.window_size),
            (
                "max_log_contrast",
                "mlc",
                self.max_log_contrast,
                d.max_log_contrast,
            ),
            (
                "cambi_high_res_speedup",
                "hrs",
                self.high_res_speedup,
                d.high_res_speedup,
            ),
        ];
        for (name, alias, v, dv) in ints {
            if v != dv {
                parts.push((name, alias, v.to_string()));
            }
        }
        if self.eotf != d.eotf {
            parts.push(("eotf", "eotf", self.eotf.name().into()));
        }
        if self.cambi_eotf != d.cambi_eotf {
            parts.push(("cambi_eotf", "ceot", self.cambi_eotf.name().into()));
        }
        parts.sort_by(|a, b| a.0.cmp(b.0));
        parts
            .iter()
            .map(|(_, alias, v)| format!("_{alias}_{v}"))
            .collect()
    }

    /// The pooled share of c-values: `topk` when set, else `cambi_topk`.
    pub fn effective_topk(&self) -> f64 {
        if self.topk != 0.6 {
            self.topk
        } else {
            self.cambi_topk
        }
    }

    /// The EOTF: `cambi_eotf` when set, else `eotf`.
    pub fn effective_eotf(&self) -> Eotf {
        if self.cambi_eotf != Eotf::Bt1886 {
            self.cambi_eotf
        } else {
            self.eotf
        }
    }
}

/// 10-bit limited range: black and white code values.
const FOOT: i32 = 64;
const HEAD: i32 = 940;

/// Luminance of 10-bit code value `sample` (clipped to the limited range).
fn luminance(sample: i32, eotf: Eotf) -> f64 {
    let c = sample.clamp(FOOT, HEAD);
    eotf.luminance(f64::from(c - FOOT) / f64::from(HEAD - FOOT))
}

/// Whether a step of `diff` code values above `sample` is visible.
fn tvi_condition(sample: i32, diff: i32, thr: f64, eotf: Eotf) -> bool {
    let mean = luminance(sample, eotf);
    let stepped = luminance(sample + diff, eotf);
    stepped - mean > thr * mean
}

/// -1: too small, 0: right, 1: too big.
fn tvi_bisect(sample: i32, diff: i32, thr: f64, eotf: Eotf) -> i32 {
    if !tvi_condition(sample, diff, thr, eotf) {
        1
    } else if tvi_condition(sample + 1, diff, thr, eotf) {
        -1
    } else {
        0
    }
}

/// The largest 10-bit code value at which a step of `diff` is still visible
/// (`get_tvi_for_diff`).
fn tvi_for_diff(diff: i32, thr: f64, eotf: Eotf) -> i32 {
    let (mut foot, mut head) = (FOOT, HEAD - diff - 1);
    match tvi_bisect(foot, diff, thr, eotf) {
        1 => return 0,
        0 => return foot,
        _ => {}
    }
    match tvi_bisect(head, diff, thr, eotf) {
        -1 => return 1023,
        0 => return head,
        _ => {}
    }
    loop {
        let mid = foot + (head - foot) / 2;
        match tvi_bisect(mid, diff, thr, eotf) {
            1 => head = mid,
            -1 => foot = mid,
            _ => return mid,
        }
    }
}

/// The smallest 10-bit code value whose luminance reaches `thr` cd/m^2, 0 when black already
/// does (`get_vlt_luma`).
fn vlt_luma(thr: f64, eotf: Eotf) -> u16 {
    let mut sample = FOOT;
    while luminance(sample, eotf) < thr {
        sample += 1;
    }
    if sample == FOOT {
        0
    } else {
        sample as u16
    }
}

/// libvmaf's reciprocal table: entry `i` is `1/i` as the `%.9g` decimal of the double
/// `1.0 / i` read back as a float (which is not always the float nearest to `1/i`), entry 0
/// is 0.
pub fn reciprocal_lut() -> Vec<f32> {
    let mut lut = Vec::with_capacity(LUT_SIZE);
    lut.push(0.0f32);
    for i in 1..LUT_SIZE {
        let text = format!("{:.8e}", 1.0f64 / i as f64);
        lut.push(text.parse::<f32>().unwrap_or(1.0 / i as f32));
    }
    lut
}

/// Nearest-neighbour source index of each of `out` destination samples from `inp` source
/// samples, libvmaf's float stepping (`decimate_generic_*`): the position starts at
/// `ratio / 2 - 0.5` and advances by `ratio` in float; the index is `(int)(pos + 0.5)`.
fn nearest_map(inp: usize, out: usize) -> Vec<u32> {
    let ratio = inp as f32 / out as f32;
    let mut pos = (f64::from(ratio / 2.0) - 0.5) as f32;
    (0..out)
        .map(|_| {
            let i = (f64::from(pos) + 0.5) as i32;
            pos += ratio;
            i.clamp(0, inp as i32 - 1) as u32
        })
        .collect()
}

/// Everything fixed for one input geometry and option set.
#[derive(Debug, Clone)]
pub struct Params {
    /// Input luma size and depth.
    pub input: (usize, usize, u32),
    /// The encode size the score is computed at (the input's unless the options ask for a
    /// smaller one).
    pub enc: (usize, usize),
    /// Nearest-neighbour source column / row of each encode column / row; `None` when the
    /// encode size is the input's.
    pub maps: Option<(Vec<u32>, Vec<u32>)>,
    /// Whether the 2x2 anti-dithering average runs (encode depth below 10 bits).
    pub anti_dither: bool,
    /// Whether the high-resolution speed-up halves the frame before the first scale.
    pub speedup: bool,
    /// Size of each scale's image.
    pub scales: [(usize, usize); NUM_SCALES],
    /// Side of the c-value window (odd), adjusted to the encode size.
    pub window: usize,
    /// Spatial mask: a pixel is kept when more than this many of its 7x7 neighbours have a
    /// zero derivative.
    pub mask_index: u32,
    /// Luma differences considered: `1 << max_log_contrast` (1, 2 or 4).
    pub num_diffs: usize,
    /// Per difference `d + 1`: the largest 10-bit value at which it is visible, plus
    /// `num_diffs` (libvmaf's `tvi_for_diff`).
    pub tvi: [u16; MAX_DIFFS],
    /// Visibility luma threshold (10-bit code value; 0: none).
    pub vlt_luma: u16,
    /// The band of 10-bit values that can matter: `band_base .. band_base + band_size`.
    pub band_base: u16,
    /// See `band_base`.
    pub band_size: u16,
    /// Pooled share of the c-values.
    pub topk: f64,
    /// Score clip.
    pub max_val: f64,
    /// `1/i` table ([`reciprocal_lut`]).
    pub lut: Vec<f32>,
}

impl Params {
    /// Resolves `cfg` for `width` x `height` frames of `bpc` bits as libvmaf's `init` does.
    ///
    /// Errors: [`FeatureError::FrameTooSmall`] when the encode size is below [`MIN_SIDE`] on
    /// both sides; [`FeatureError::WrongGeometry`] when the window, adjusted to the size,
    /// reaches [`LUT_SIZE`] pixels (frames above about 4K with the default window).
    pub fn new(
        cfg: &CambiConfig,
        width: usize,
        height: usize,
        bpc: u32,
    ) -> Result<Self, FeatureError> {
        let (mut ew, mut eh) = (cfg.enc_width as usize, cfg.enc_height as usize);
        if ew == 0 || eh == 0 || ew > width || eh > height {
            (ew, eh) = (width, height);
        }
        if (ew < MIN_SIDE && eh < MIN_SIDE) || (width < MIN_SIDE && height < MIN_SIDE) {
            return Err(FeatureError::FrameTooSmall {
                feature: FEATURE,
                width: ew,
                height: eh,
                min_width: MIN_SIDE,
                min_height: 1,
            });
        }
        let enc_bitdepth = if cfg.enc_bitdepth == 0 {
            bpc
        } else {
            cfg.enc_bitdepth
        };
        let pixels = ew * eh;
        let speedup = match cfg.high_res_speedup {
            1080 => pixels >= 1920 * 1080,
            1440 => pixels >= 2560 * 1440,
            2160 => pixels >= 3840 * 2160,
            _ => false,
        };
        let adjust = |w: usize, h: usize| -> usize {
            let mut ws = ((cfg.window_size as usize * (w + h)) / 375) >> 4;
            if speedup {
                ws = (ws + 1) >> 1;
            }
            ws | 1
        };
        let window = adjust(ew, eh);
        let src_window = adjust(width, height);
        if window.max(src_window).pow(2) >= LUT_SIZE {
            return Err(FeatureError::WrongGeometry {
                feature: FEATURE,
                expected_width: 3840,
                expected_height: 2160,
                expected_bpc: bpc,
                width,
                height,
                bpc,
            });
        }
        let shifted = ((ew >> 6) * (eh >> 6)) as u32;
        let ceil_log2 = if shifted == 0 {
            0
        } else {
            32 - (shifted - 1).leading_zeros() as i32
        };
        let mask_index = ((MASK_FILTER * MASK_FILTER) as i32 + 3 * (ceil_log2 - 11) - 1) >> 1;
        let num_diffs = 1usize << cfg.max_log_contrast;
        let eotf = cfg.effective_eotf();
        let mut tvi = [0u16; MAX_DIFFS];
        for (d, t) in tvi.iter_mut().enumerate().take(num_diffs) {
            *t = (tvi_for_diff(d as i32 + 1, cfg.tvi_threshold, eotf) + num_diffs as i32) as u16;
        }
        let vlt_luma = vlt_luma(cfg.vis_lum_threshold, eotf);
        let lo = i32::from(vlt_luma) - 3 * num_diffs as i32 + 1;
        let band_base = lo.max(0) as u16;
        // Empty when the visibility threshold lies above every step's: no c-value then.
        let band_size = (tvi[num_diffs - 1] + 1).saturating_sub(band_base);
        let mut scales = [(0, 0); NUM_SCALES];
        let (mut sw, mut sh) = (ew, eh);
        for (s, slot) in scales.iter_mut().enumerate() {
            if s > 0 || speedup {
                (sw, sh) = ((sw + 1) >> 1, (sh + 1) >> 1);
            }
            *slot = (sw, sh);
        }
        let maps = ((ew, eh) != (width, height))
            .then(|| (nearest_map(width, ew), nearest_map(height, eh)));
        Ok(Self {
            input: (width, height, bpc),
            enc: (ew, eh),
            maps,
            anti_dither: enc_bitdepth < 10,
            speedup,
            scales,
            window,
            mask_index: mask_index.max(0) as u32,
            num_diffs,
            tvi,
            vlt_luma,
            band_base,
            band_size,
            topk: cfg.effective_topk(),
            max_val: cfg.max_val,
            lut: reciprocal_lut(),
        })
    }

    /// Pixels of the c-value window (`window^2`), the score's normaliser.
    pub fn window_pixels(&self) -> u32 {
        (self.window * self.window) as u32
    }

    /// How many c-values scale `s` pools: `topk * n` truncated, within `1..=n`.
    pub fn topk_count(&self, s: usize) -> usize {
        let n = self.scales[s].0 * self.scales[s].1;
        ((self.topk * n as f64) as i64).clamp(1, n as i64) as usize
    }

    /// [`Params::topk_count`] of every scale.
    pub fn topk_counts(&self) -> [usize; NUM_SCALES] {
        std::array::from_fn(|s| self.topk_count(s))
    }

    /// Converts input sample `v` (of the input's depth) to 10 bits: shifted up below 10 bits,
    /// rounded down (half up) above.
    pub fn to_10bit(&self, v: u16) -> u16 {
        let bpc = self.input.2;
        if bpc <= 10 {
            v << (10 - bpc)
        } else {
            let sh = bpc - 10;
            ((u32::from(v) + (1 << (sh - 1))) >> sh) as u16
        }
    }
}

/// The registry name (libvmaf's extractor name).
pub(super) const FEATURE: &str = "cambi";

/// Number of scales.
pub const NUM_SCALES: usize = 5;

/// Weight of each scale's pooled c-value (libvmaf's `g_scale_weights`).
pub const SCALE_WEIGHTS: [i32; NUM_SCALES] = [16, 8, 4, 2, 1];

/// One c-value unit of the exact top-k sums: 2^-24.
pub const FIXED_ONE: f32 = 16_777_216.0;

/// The CAMBI score from each scale's top-k sum of c-values (`sums`, in units of 2^-24, see
/// [`FIXED_ONE`]) and its element count (`topk`, >= 1): the mean per scale, weighted by
/// [`SCALE_WEIGHTS`], over `window_pixels`, clipped to `max_val`. libvmaf sums the same floats
/// in `double`, which is exact while a scale's sum stays below 2^29 (always with the v1
/// options), so the scores are equal then. Shared by both halves.
pub fn score_from_sums(
    sums: &[u64; NUM_SCALES],
    topk: &[usize; NUM_SCALES],
    window_pixels: u32,
    max_val: f64,
) -> f64 {
    let mut score = 0.0f64;
    for s in 0..NUM_SCALES {
        let mean = (sums[s] as f64 / f64::from(FIXED_ONE)) / topk[s].max(1) as f64;
        score += mean * f64::from(SCALE_WEIGHTS[s]);
    }
    (score / f64::from(window_pixels)).min(max_val)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lut_matches_libvmafs_literals() {
        let lut = reciprocal_lut();
        // Entries where libvmaf's literal is not the float nearest to 1/i.
        let literal = |t: &str| t.parse::<f32>().unwrap();
        assert_eq!(lut[82], literal("0.012195122"));
        assert_eq!(lut[83], literal("0.0120481928"));
        assert_eq!(lut[504], literal("0.00198412698"));
        assert_ne!(lut[83], 1.0 / 83.0);
        assert_eq!(lut[2], 0.5);
        assert_eq!(lut[0], 0.0);
    }

    #[test]
    fn g_format() {
        assert_eq!(fmt_g(0.06), "0.06");
        assert_eq!(fmt_g(17.0), "17");
        assert_eq!(fmt_g(0.019), "0.019");
        assert_eq!(fmt_g(1e-5), "1e-05");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
    }

    #[test]
    fn v1_params_at_1080p() {
        let cfg = CambiConfig {
            high_res_speedup: 1080,
            vis_lum_threshold: 0.06,
            max_val: 17.0,
            ..CambiConfig::default()
        };
        let p = Params::new(&cfg, 1920, 1080, 10).unwrap();
        assert!(p.speedup);
        assert_eq!(p.window, 17);
        assert_eq!(p.mask_index, 21);
        assert_eq!(p.scales[0], (960, 540));
        assert_eq!(p.scales[4], (60, 34));
        let small = Params::new(&cfg, 1280, 720, 8).unwrap();
        assert!(!small.speedup && small.anti_dither);
        assert!(Params::new(&cfg, 160, 90, 8).is_err());
    }
}
