//! How SSIMULACRA2 turns a YUV frame into linear RGB: the caps' colorimetry (matrix, range,
//! transfer) reduced to the few numbers the CPU and GPU conversions both use.
//!
//! The conversion, per pixel `(x, y)` of a `w` x `h` frame at `bpc` bits, in `f32`, each
//! operation rounded as written (no fused multiply-add) and `powf` as glibc 2.36 computes it:
//! SSIMULACRA2 amplifies one ulp of difference in its input into up to 1e-3 of score, so the
//! CPU ([`crate::features::ssimulacra2`]) and the GPU (`kernels/ssimulacra2.cu`, which repeats
//! glibc's `powf` steps) produce bit-identical linear RGB:
//! 1. Samples: `Y = luma(x, y)`, `Cb = cb(x * cw / w, y * ch / h)`, `Cr` likewise (nearest
//!    chroma sample, integer division; `cw` x `ch` is the chroma plane size). Frames without
//!    chroma (GRAY8) take `cb' = cr' = 0` in step 2 (R = G = B).
//! 2. Normalised, with `s = 2^(bpc - 8)`: limited range `y' = (Y - 16 s) / (219 s)`,
//!    `cb' = (Cb - 128 s) / (224 s)`; full range `y' = Y / (2^bpc - 1)`,
//!    `cb' = (Cb - 2^(bpc - 1)) / (2^bpc - 1)`; `cr'` as `cb'`.
//! 3. Non-linear RGB: `r' = y' + 2 (1 - Kr) cr'`, `b' = y' + 2 (1 - Kb) cb'`,
//!    `g' = (y' - Kr r' - Kb b') / (1 - Kr - Kb)`, each clamped to `[0, 1]`.
//! 4. Linear: [`Transfer::Srgb`]: `c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055)^2.4`;
//!    [`Transfer::Bt709`]: `c < 0.081 ? c / 4.5 : ((c + 0.099) / 1.099)^(1 / 0.45)`.
//!
//! Matrix constants: ITU-R BT.601 (Kr 0.299, Kb 0.114), BT.709 (0.2126, 0.0722), BT.2020
//! (0.2627, 0.0593), FCC (0.30, 0.11), SMPTE 240M (0.212, 0.087). Transfer: sRGB for the
//! caps' `srgb`, the BT.709 inverse OETF otherwise (BT.601, BT.709 and BT.2020 share it; PQ and
//! HLG content is converted as BT.709, which the log says).

use std::fmt;

/// The YUV -> R'G'B' matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Matrix {
    /// ITU-R BT.601.
    Bt601,
    /// ITU-R BT.709 (the default when the caps say nothing).
    #[default]
    Bt709,
    /// ITU-R BT.2020 non-constant luminance.
    Bt2020,
    /// FCC Title 47.
    Fcc,
    /// SMPTE 240M.
    Smpte240m,
}

impl Matrix {
    /// `(Kr, Kb)` of the matrix.
    pub fn kr_kb(self) -> (f32, f32) {
        match self {
            Matrix::Bt601 => (0.299, 0.114),
            Matrix::Bt709 => (0.2126, 0.0722),
            Matrix::Bt2020 => (0.2627, 0.0593),
            Matrix::Fcc => (0.30, 0.11),
            Matrix::Smpte240m => (0.212, 0.087),
        }
    }

    /// Name for logs (GStreamer's colorimetry names).
    pub fn name(self) -> &'static str {
        match self {
            Matrix::Bt601 => "bt601",
            Matrix::Bt709 => "bt709",
            Matrix::Bt2020 => "bt2020",
            Matrix::Fcc => "fcc",
            Matrix::Smpte240m => "smpte240m",
        }
    }
}

/// The R'G'B' -> linear RGB transfer function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transfer {
    /// IEC 61966-2-1 sRGB.
    Srgb,
    /// The inverse of the ITU-R BT.709 OETF (also BT.601's and BT.2020's).
    #[default]
    Bt709,
}

impl Transfer {
    /// Name for logs.
    pub fn name(self) -> &'static str {
        match self {
            Transfer::Srgb => "srgb",
            Transfer::Bt709 => "bt709",
        }
    }
}

/// Everything the YUV -> linear RGB conversion of the module docs needs besides the samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct YuvToRgb {
    /// YUV -> R'G'B' matrix.
    pub matrix: Matrix,
    /// `true`: full range (0..2^bpc-1); `false`: limited (16..235 scaled to the depth).
    pub full_range: bool,
    /// R'G'B' -> linear.
    pub transfer: Transfer,
    /// Where the matrix and range came from when the caps did not say (the defaults used):
    /// `false` when taken from the caps.
    pub defaulted: bool,
}

impl fmt::Display for YuvToRgb {
    /// `matrix bt709, limited range, transfer bt709` (plus ` (defaults: the caps give no
    /// colorimetry)` when defaulted).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "matrix {}, {} range, transfer {}",
            self.matrix.name(),
            if self.full_range { "full" } else { "limited" },
            self.transfer.name()
        )?;
        if self.defaulted {
            f.write_str(" (defaults: the caps give no colorimetry)")?;
        }
        Ok(())
    }
}
