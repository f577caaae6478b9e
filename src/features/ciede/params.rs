//! What ciede's definition and its two halves share: the registry and output names, which chroma
//! samples it reads, and the colour arithmetic (YUV -> linear RGB -> Lab, CIEDE2000).

use crate::features::api::Geometry;
use crate::video::frame::FeatureError;

/// The registry name.
pub(super) const FEATURE: &str = "ciede";

/// libvmaf's log key.
pub const OUTPUT: &str = "ciede2000";

/// libvmaf's alignment of picture rows, in samples.
const ROW_ALIGN: usize = 32;

/// Checks that `bpc` is a depth libvmaf's float and colour extractors take (8, 10, 12, 16),
/// as [`crate::features::float_psnr::FloatDepth::new`] does for the float ones.
///
/// Errors: [`FeatureError::WrongGeometry`] naming the depth (reported against 8 bits).
pub fn check_depth(feature: &'static str, g: &Geometry) -> Result<(), FeatureError> {
    crate::features::float_psnr::FloatDepth::new(feature, g).map(|_| ())
}

/// The chroma subsampling of a frame, from its luma and chroma plane sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subsampling {
    /// 4:4:4: chroma planes of the luma's size.
    Full,
    /// 4:2:0: both sides halved.
    Both,
    /// 4:2:2: the width halved.
    Horizontal,
}

/// Where libvmaf's `ciede` reads the chroma of each pixel: libvmaf's own chroma buffers
/// (sizes rounded down, rows padded to 32 samples with zeros, Cr right after Cb) and its
/// upsampling (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChromaRead {
    /// The frame's subsampling.
    pub mode: Subsampling,
    /// Samples per chroma row libvmaf keeps: `w >> 1` when subsampled horizontally.
    pub width: usize,
    /// Chroma rows libvmaf keeps: `h >> 1` for 4:2:0.
    pub height: usize,
    /// Samples from one row of libvmaf's chroma buffer to the next (`width` rounded up to
    /// 32).
    pub stride: usize,
}

impl ChromaRead {
    /// The reading of `luma` (width, height) frames whose chroma planes are `chroma`
    /// (GStreamer's sizes, rounded up).
    ///
    /// Errors: [`FeatureError::WrongGeometry`] for a chroma size that is not 4:2:0, 4:2:2 or
    /// 4:4:4 of the luma (4:1:1, 4:1:0: libvmaf has no such formats).
    pub fn new(
        (w, h): (usize, usize),
        (cw, ch): (usize, usize),
        bpc: u32,
    ) -> Result<Self, FeatureError> {
        let mode = if (cw, ch) == (w, h) {
            Subsampling::Full
        } else if (cw, ch) == (w.div_ceil(2), h.div_ceil(2)) {
            Subsampling::Both
        } else if (cw, ch) == (w.div_ceil(2), h) {
            Subsampling::Horizontal
        } else {
            return Err(FeatureError::wrong_size(
                FEATURE,
                (w.div_ceil(2), h.div_ceil(2), bpc),
                (cw, ch),
            ));
        };
        let width = if mode == Subsampling::Full { w } else { w >> 1 };
        let height = if mode == Subsampling::Both { h >> 1 } else { h };
        Ok(Self {
            mode,
            width,
            height,
            stride: width.div_ceil(ROW_ALIGN) * ROW_ALIGN,
        })
    }

    /// The sample chroma plane `plane` (0: Cb, 1: Cr) gives pixel (`x`, `y`):
    /// `Some((plane, row, column))` in the frame's planes, or `None` where libvmaf reads its
    /// zero padding (or past its buffer).
    #[inline]
    pub fn source(&self, plane: usize, x: usize, y: usize) -> Option<(usize, usize, usize)> {
        if self.mode == Subsampling::Full {
            return Some((plane, y, x));
        }
        let q = if self.mode == Subsampling::Both {
            x >> 1
        } else {
            x
        };
        let row = (y >> 1) + q / self.stride.max(1);
        let col = q % self.stride.max(1);
        if col >= self.width {
            return None;
        }
        // Cr's buffer follows Cb's: a row past Cb's last is one of Cr's.
        let (plane, row) = if row >= self.height {
            (plane + 1, row - self.height)
        } else {
            (plane, row)
        };
        (plane < 2 && row < self.height).then_some((plane, row, col))
    }
}

/// One CIELAB colour, as libvmaf keeps it (`f32`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Lab {
    /// Lightness L*, 0..100 for in-gamut colours.
    pub l: f32,
    /// a* (green to red).
    pub a: f32,
    /// b* (blue to yellow).
    pub b: f32,
}

/// sRGB-like decoding to linear light, libvmaf's (linear below 10/255).
#[inline]
pub(super) fn linear(c: f64) -> f64 {
    if c > 10.0 / 255.0 {
        ((c + 0.055) * (1.0 / 1.055)).powf(2.4)
    } else {
        c * (1.0 / 12.92)
    }
}

/// CIELAB's companding `f(t)`, rounded to `f32` as libvmaf's helper returns it.
#[inline]
fn lab_f(t: f64) -> f32 {
    const KAPPA: f64 = 24389.0 / 27.0;
    const EPSILON: f64 = 216.0 / 24389.0;
    if t > EPSILON {
        t.powf(1.0 / 3.0) as f32
    } else {
        ((KAPPA * t + 16.0) * (1.0 / 116.0)) as f32
    }
}

/// The normalised components of one Y'CbCr sample triple of `bpc` bits, libvmaf's limited
/// range: `(Y' , Cb, Cr)` with `Y' = (y - 16 s) / (219 s)`, `C = (c - 128 s) / (224 s)`,
/// `s = 2^(bpc - 8)`.
#[inline]
fn normalise(y: f64, u: f64, v: f64, bpc: u32) -> (f64, f64, f64) {
    let scale = f64::from(1u32 << (bpc.clamp(8, 16) - 8));
    (
        (y - 16.0 * scale) * (1.0 / (219.0 * scale)),
        (u - 128.0 * scale) * (1.0 / (224.0 * scale)),
        (v - 128.0 * scale) * (1.0 / (224.0 * scale)),
    )
}

/// Linear-light red of samples `y`, `v` (`Cr`) at `bpc` bits: libvmaf's matrix row and curve.
/// It depends on (Y, Cr) alone, so the CPU half tabulates it at 8 bits ([`cpu`]).
#[inline]
pub fn linear_red(y: f64, v: f64, bpc: u32) -> f64 {
    let (y, _, v) = normalise(y, 128.0 * f64::from(1u32 << (bpc.clamp(8, 16) - 8)), v, bpc);
    linear(y + 1.28033 * v)
}

/// Linear-light blue of samples `y`, `u` (`Cb`) at `bpc` bits, as [`linear_red`].
#[inline]
pub fn linear_blue(y: f64, u: f64, bpc: u32) -> f64 {
    let (y, u, _) = normalise(y, u, 128.0 * f64::from(1u32 << (bpc.clamp(8, 16) - 8)), bpc);
    linear(y + 2.12798 * u)
}

/// Linear-light green of samples `y`, `u`, `v` at `bpc` bits, as [`linear_red`].
#[inline]
pub fn linear_green(y: f64, u: f64, v: f64, bpc: u32) -> f64 {
    let (y, u, v) = normalise(y, u, v, bpc);
    linear(y - 0.21482 * u - 0.38059 * v)
}

/// The CIELAB colour of linear-light sRGB `r`, `g`, `b` (D65), rounded as libvmaf's
/// `get_lab_color` rounds it.
#[inline]
pub fn lab_of_linear(r: f64, g: f64, b: f64) -> Lab {
    let x = r * 0.4124564390896921 + g * 0.357576077643909 + b * 0.18043748326639894;
    let yy = r * 0.21267285140562248 + g * 0.715152155287818 + b * 0.07217499330655958;
    let z = r * 0.019333895582329317 + g * 0.119192025881303 + b * 0.9503040785363677;
    let fx = f64::from(lab_f(x * (1.0 / 0.95047)));
    let fy = f64::from(lab_f(yy));
    let fz = f64::from(lab_f(z * (1.0 / 1.08883)));
    Lab {
        l: (116.0 * fy - 16.0) as f32,
        a: (500.0 * (fx - fy)) as f32,
        b: (200.0 * (fy - fz)) as f32,
    }
}

/// The CIELAB colour of one Y'CbCr sample triple of `bpc` bits, libvmaf's `get_lab_color`
/// (limited range, libvmaf's "BT.709" matrix, sRGB curve, D65; see the module docs).
/// `y`, `u`, `v`: sample values (`0..2^bpc`).
pub fn lab(y: f64, u: f64, v: f64, bpc: u32) -> Lab {
    lab_of_linear(
        linear_red(y, v, bpc),
        linear_green(y, u, v, bpc),
        linear_blue(y, u, bpc),
    )
}

const PI: f64 = std::f64::consts::PI;

/// Hue angle in `[0, 2 pi)` of (`a`, `b`) (0 for the origin), in `f32`.
#[inline]
fn hue(b: f32, a: f32) -> f32 {
    if b == 0.0 && a == 0.0 {
        return 0.0;
    }
    let h = f64::from(b).atan2(f64::from(a)) as f32;
    if h < 0.0 {
        (f64::from(h) + 2.0 * PI) as f32
    } else {
        h
    }
}

/// CIEDE2000 difference between `c1` and `c2` with libvmaf's weights (kL = 0.65, kC = 1,
/// kH = 4), in `f32` with `f64` library calls and the rounding points of libvmaf's
/// `ciede2000`. Returns a non-negative difference (0 for equal colours).
pub fn ciede2000(c1: Lab, c2: Lab) -> f32 {
    const KL: f32 = 0.65;
    const KC: f32 = 1.0;
    const KH: f32 = 4.0;
    let sq = |x: f32| f64::from(x) * f64::from(x);
    let pow25_7 = 25f64.powi(7);
    let dl = c2.l - c1.l;
    let l_bar = (c1.l + c2.l) / 2.0;
    let ch1 = (sq(c1.a) + sq(c1.b)).sqrt() as f32;
    let ch2 = (sq(c2.a) + sq(c2.b)).sqrt() as f32;
    let c_bar = (ch1 + ch2) / 2.0;
    let c7 = f64::from(c_bar).powf(7.0);
    let g = 1.0 - (c7 / (c7 + pow25_7)).sqrt();
    let a1 = (f64::from(c1.a) + f64::from(c1.a / 2.0) * g) as f32;
    let a2 = (f64::from(c2.a) + f64::from(c2.a / 2.0) * g) as f32;
    let cp1 = (sq(a1) + sq(c1.b)).sqrt() as f32;
    let cp2 = (sq(a2) + sq(c2.b)).sqrt() as f32;
    let cp_bar = (cp1 + cp2) / 2.0;
    let dcp = cp2 - cp1;
    let l50 = sq(l_bar - 50.0);
    let s_l = (1.0 + (0.015 * l50) / (20.0 + l50).sqrt()) as f32;
    let s_c = (1.0 + 0.045 * f64::from(cp_bar)) as f32;
    let h1 = hue(c1.b, a1);
    let h2 = hue(c2.b, a2);
    let dh = if ch1 == 0.0 || ch2 == 0.0 {
        0.0
    } else if f64::from((h1 - h2).abs()) <= PI {
        h2 - h1
    } else if h2 <= h1 {
        (f64::from(h2 - h1) + 2.0 * PI) as f32
    } else {
        (f64::from(h2 - h1) - 2.0 * PI) as f32
    };
    let dhp = (2.0 * f64::from(cp1 * cp2).sqrt() * (f64::from(dh) / 2.0).sin()) as f32;
    let hp_bar = if f64::from((h1 - h2).abs()) > PI {
        ((f64::from(h1 + h2) + 2.0 * PI) / 2.0) as f32
    } else {
        (f64::from(h1 + h2) / 2.0) as f32
    };
    let hb = f64::from(hp_bar);
    let t = (1.0 - 0.17 * (hb - PI / 6.0).cos()
        + 0.24 * (2.0 * hb).cos()
        + 0.32 * (3.0 * hb + PI / 30.0).cos()
        - 0.20 * (4.0 * hb - 7.0 * PI / 20.0).cos()) as f32;
    let s_h = (1.0 + 0.015 * f64::from(cp_bar) * f64::from(t)) as f32;
    let r_t = {
        let deg = (hb * (180.0 / PI)) as f32;
        let d = ((f64::from(deg) - 275.0) * (1.0 / 25.0)) as f32;
        let cp7 = cp_bar.powf(7.0);
        let ratio = cp7 / (cp7 + 25f32.powf(7.0));
        let angle = (60.0 * f64::from(-(d * d)).exp()) as f32;
        let rad = (f64::from(angle) * (PI / 180.0)) as f32;
        (-2.0 * f64::from(ratio).sqrt() * f64::from(rad).sin()) as f32
    };
    let lightness = dl / (KL * s_l);
    let chroma = dcp / (KC * s_c);
    let hue_term = dhp / (KH * s_h);
    (sq(lightness) + sq(chroma) + sq(hue_term) + f64::from(r_t * chroma * hue_term)).sqrt() as f32
}

/// The score from the sum of the per-pixel differences over `pixels` pixels:
/// `45 - 20 * log10(sum / pixels)` (+infinity for identical frames).
pub fn score_from_sum(sum: f64, pixels: usize) -> f64 {
    45.0 - 20.0 * (sum / pixels.max(1) as f64).log10()
}
