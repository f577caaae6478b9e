//! What speed_chroma's definition, its two halves and speed_temporal share: the registry name, the
//! block and scale constants, the options (SpeedConfig, Prescale), the plane sizes and filters and
//! the arithmetic that combines the scores.

use crate::features::float_vif::params::check_kernelscale;
use crate::features::options::{fmt_g, OptionValue, Options};

/// The registry name (libvmaf's extractor name).
pub const FEATURE: &str = "speed_chroma";

/// Side of the blocks the Gaussian scale mixture is fitted on (libvmaf's
/// `DEFAULT_BLOCK_SIZE`).
pub const BLOCK: usize = 5;

/// Samples per block, the size of the covariance matrix (25).
pub const N: usize = BLOCK * BLOCK;

/// Decimation steps: the plane is decimated by `2^SCALES` = 16 (libvmaf's `NUM_SCALES`).
pub const SCALES: u32 = 4;

/// Eigenvalues below this make the covariance matrix singular; also the Givens and
/// subdiagonal thresholds (libvmaf's `EIGENVALUE_EPS`).
pub const EIGEN_EPS: f64 = 1e-6;

/// Most QR steps of the eigenvalue iteration (libvmaf's `EIGENVALUE_MAX_ITERS`).
pub const EIGEN_MAX_ITERS: usize = 500;

/// The option names, libvmaf's (`speed_chroma`'s option table), with their aliases in the
/// output suffix, in alphabetical order of the names (the order of the suffix).
pub(super) const OPTIONS: [(&str, &str); 7] = [
    ("speed_kernelscale", "ks"),
    ("speed_max_val", "mxv"),
    ("speed_nn_floor", "nnf"),
    ("speed_prescale", "ps"),
    ("speed_prescale_method", "psm"),
    ("speed_sigma_nn", "snn"),
    ("speed_weight_var_mode", "wvm"),
];

/// How the plane is rescaled by `speed_prescale` (libvmaf's `speed_prescale_method`;
/// `bicubic` and `lanczos4` are not implemented and refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prescale {
    /// Nearest sample (libvmaf's default).
    Nearest,
    /// Bilinear, mirrored at the edges.
    Bilinear,
}

/// The options of a `speed_chroma` instance; defaults are libvmaf's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedConfig {
    /// Scale of the Gaussian kernels (`speed_kernelscale`, 1.0; one of libvmaf's valid
    /// kernel scales).
    pub kernelscale: f64,
    /// Rescaling factor of the plane before filtering (`speed_prescale`, 1.0, 0.1..=4).
    pub prescale: f64,
    /// Rescaling method (`speed_prescale_method`, `nearest`).
    pub method: Prescale,
    /// Neural noise floor, fraction of `sigma_nn` (`speed_nn_floor`, 0.0, 0..=1).
    pub nn_floor: f64,
    /// Standard deviation of the neural noise (`speed_sigma_nn`, 0.29, 0.1..=2).
    pub sigma_nn: f64,
    /// Variance weighting of the distorted entropy (`speed_weight_var_mode`, 0, 0..=6).
    pub weight_var_mode: u32,
    /// Upper clip of the scores (`speed_max_val`, 1000, 0..=1000).
    pub max_val: f64,
}

impl Default for SpeedConfig {
    fn default() -> Self {
        Self {
            kernelscale: 1.0,
            prescale: 1.0,
            method: Prescale::Nearest,
            nn_floor: 0.0,
            sigma_nn: 0.29,
            weight_var_mode: 0,
            max_val: 1000.0,
        }
    }
}

impl SpeedConfig {
    /// Reads `options` (libvmaf names, see [`OPTIONS`]).
    ///
    /// Errors: a text naming an unknown option, a value outside libvmaf's range, a kernel
    /// scale libvmaf does not accept or an unsupported prescale method.
    pub fn from_options(options: &Options) -> Result<Self, String> {
        let names: Vec<&str> = OPTIONS.iter().map(|(n, _)| *n).collect();
        options.only(&names)?;
        Self::read(options)
    }

    /// [`SpeedConfig::from_options`] without refusing other options (the caller has checked
    /// them): each of [`OPTIONS`] read with its range, absent ones at their defaults
    /// (`speed_temporal` shares all of them but `speed_weight_var_mode`).
    ///
    /// Errors: as [`SpeedConfig::from_options`].
    pub fn read(options: &Options) -> Result<Self, String> {
        let d = Self::default();
        let kernelscale = options.number("speed_kernelscale", d.kernelscale, 0.1..=4.0)?;
        check_kernelscale("speed_kernelscale", kernelscale)?;
        let method = match options.0.get("speed_prescale_method") {
            None => d.method,
            Some(OptionValue::Text(s)) if s == "nearest" => Prescale::Nearest,
            Some(OptionValue::Text(s)) if s == "bilinear" => Prescale::Bilinear,
            Some(OptionValue::Text(s)) if s == "bicubic" || s == "lanczos4" => {
                return Err(format!(
                    "option 'speed_prescale_method' = '{s}' is not supported (nearest, bilinear)"
                ))
            }
            Some(_) => {
                return Err(
                    "option 'speed_prescale_method' must be 'nearest' or 'bilinear'".to_owned(),
                )
            }
        };
        let wvm = options.number("speed_weight_var_mode", 0.0, 0.0..=6.0)?;
        if wvm.fract() != 0.0 {
            return Err(format!(
                "option 'speed_weight_var_mode' = {wvm} must be an integer"
            ));
        }
        Ok(Self {
            kernelscale,
            prescale: options.number("speed_prescale", d.prescale, 0.1..=4.0)?,
            method,
            nn_floor: options.number("speed_nn_floor", d.nn_floor, 0.0..=1.0)?,
            sigma_nn: options.number("speed_sigma_nn", d.sigma_nn, 0.1..=2.0)?,
            weight_var_mode: wvm as u32,
            max_val: options.number("speed_max_val", d.max_val, 0.0..=1000.0)?,
        })
    }

    /// libvmaf's option suffix: `_<alias>_<value>` for each option not at its default, in
    /// alphabetical order of the option names, numbers as C's `%g`
    /// (`_mxv_45_nnf_0.1_snn_0.19_wvm_5` for the v1 models). Source: Netflix/vmaf v3.2.0,
    /// libvmaf/src/feature/feature_name.c.
    pub fn key(&self) -> String {
        let d = Self::default();
        let mut s = String::new();
        for (name, alias) in OPTIONS {
            let value = match name {
                "speed_kernelscale" if self.kernelscale != d.kernelscale => fmt_g(self.kernelscale),
                "speed_max_val" if self.max_val != d.max_val => fmt_g(self.max_val),
                "speed_nn_floor" if self.nn_floor != d.nn_floor => fmt_g(self.nn_floor),
                "speed_prescale" if self.prescale != d.prescale => fmt_g(self.prescale),
                "speed_prescale_method" if self.method != d.method => match self.method {
                    Prescale::Nearest => "nearest".to_owned(),
                    Prescale::Bilinear => "bilinear".to_owned(),
                },
                "speed_sigma_nn" if self.sigma_nn != d.sigma_nn => fmt_g(self.sigma_nn),
                "speed_weight_var_mode" if self.weight_var_mode != d.weight_var_mode => {
                    self.weight_var_mode.to_string()
                }
                _ => continue,
            };
            s.push_str(&format!("_{alias}_{value}"));
        }
        s
    }

    /// Whether libvmaf rescales the plane (`speed_prescale` not within 1e-3 of 1).
    pub fn rescales(&self) -> bool {
        (self.prescale - 1.0).abs() >= 1e-3
    }
}

/// The sizes libvmaf derives from a chroma plane of `width` x `height` and the prescale
/// (`speed_init_dimensions` in speed.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// The plane libvmaf reads.
    pub width: usize,
    /// Its rows.
    pub height: usize,
    /// After rescaling: `(int)(width * prescale + 0.5)`.
    pub scaled_width: usize,
    /// `(int)(height * prescale + 0.5)`.
    pub scaled_height: usize,
    /// After decimation by 16: `scaled_width >> 4`.
    pub op_width: usize,
    /// `scaled_height >> 4`.
    pub op_height: usize,
    /// Whole blocks across.
    pub blocks_x: usize,
    /// Whole blocks down.
    pub blocks_y: usize,
}

impl Dims {
    /// The sizes for a `width` x `height` plane.
    pub fn new(width: usize, height: usize, prescale: f64) -> Self {
        let scaled = |n: usize| (n as f64 * prescale + 0.5) as usize;
        let (sw, sh) = (scaled(width), scaled(height));
        let (ow, oh) = (sw >> SCALES, sh >> SCALES);
        Self {
            width,
            height,
            scaled_width: sw,
            scaled_height: sh,
            op_width: ow,
            op_height: oh,
            blocks_x: ow / BLOCK,
            blocks_y: oh / BLOCK,
        }
    }

    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.blocks_x * self.blocks_y
    }

    /// Width of the region each covariance is computed over (`truncated - 4`).
    pub fn sub_width(&self) -> usize {
        self.blocks_x * BLOCK - BLOCK + 1
    }

    /// Height of that region.
    pub fn sub_height(&self) -> usize {
        self.blocks_y * BLOCK - BLOCK + 1
    }
}

/// Size of libvmaf's Gaussian at `scale` (0..=4) for `kernelscale`:
/// `max(odd ceiling of (2^(4 - scale) + 1) * kernelscale, 3)` (`vif_get_filter_size`).
pub fn filter_size(scale: u32, kernelscale: f64) -> usize {
    let n = ((1u32 << (4 - scale)) + 1) as f32 * kernelscale as f32;
    let c = f64::from(n).ceil() as i64;
    let odd = if c % 2 == 0 { c + 1 } else { c };
    odd.max(3) as usize
}

/// A normalised 1-D Gaussian of `size` taps and deviation `stdev`, in libvmaf's arithmetic
/// (`get_1d_gaussian_kernel`: the pdf's exponent in `double`, taps and their sum in `float`).
fn gaussian(size: usize, stdev: f32) -> Vec<f32> {
    let k = (size as i32 - 1) / 2;
    let sd = f64::from(stdev);
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

/// The anti-aliasing filter applied before the decimation by 16: the size of the scale-1
/// filter, deviation `sqrt(4) * size / 5` (`speed_get_antialias_filter`).
pub fn antialias_filter(kernelscale: f64) -> Vec<f32> {
    let size = filter_size(1, kernelscale);
    gaussian(size, (2.0 * size as f64 / 5.0) as f32)
}

/// The local-mean filter of the decimated plane: the scale-4 filter, deviation `size / 5`
/// (`vif_get_filter(.., 4, ..)`; 3 taps at kernel scale 1).
pub fn local_mean_filter(kernelscale: f64) -> Vec<f32> {
    let size = filter_size(SCALES, kernelscale);
    gaussian(size, size as f32 / 5.0)
}

/// The part of the chroma planes libvmaf reads for a frame of `luma` size: subsampled
/// dimensions halved and rounded down (`init_chroma` in speed.c).
pub fn plane_size(luma: (usize, usize), chroma: (usize, usize)) -> (usize, usize) {
    crate::features::psnr::libvmaf_chroma_size(luma, chroma)
}

/// The per-plane scores (`u`, `v`) with their singular flags into the three outputs,
/// as libvmaf's `extract_chroma`: a plane whose reference or distorted covariance was
/// singular is left out of `uv`, and all three are clipped to `max_val`.
pub fn combine(u: (f32, bool), v: (f32, bool), max_val: f64) -> [f64; 3] {
    let uv = match (u.1, v.1) {
        (true, false) => v.0,
        (false, true) => u.0,
        _ => ((f64::from(u.0) + f64::from(v.0)) / 2.0) as f32,
    };
    [u.0, v.0, uv].map(|s| f64::from(s).min(max_val))
}
