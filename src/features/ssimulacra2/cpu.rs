//! SSIMULACRA2 on the CPU: our YUV -> linear RGB conversion ([`crate::engine::colour`]'s
//! specification, shared with the GPU kernel) followed by the metric core of the rust-av
//! `ssimulacra2` crate 0.5.1, a port of Cloudinary's SSIMULACRA2 (libjxl
//! `tools/ssimulacra2.cc`).
//!
//! The crate's own YUV route (`yuvxyb`) is not used: it converts differently from the
//! specification (BT.1886 power 2.4 instead of the BT.709 inverse OETF, a slightly different
//! sRGB curve, Y'CbCr clamped before the matrix instead of R'G'B' after it), and the GPU kernel
//! must agree with the CPU within 1e-4 on the score.
//!
//! Conditioning: the metric core works in f32 and takes variances as `blur(x^2) - blur(x)^2`
//! against a constant of 0.0009, with weights up to 225 on coarse-scale SSIM means. On src01
//! 576x324 a one-ulp change of every linear RGB value moves the score by 5e-4 to 3e-3, and
//! evaluating the conversion in f64 (rounded once to f32) moves it by 1.1e-4, with fused
//! multiply-adds in f32 by 1e-3. Two implementations agree to 1e-4 only when their linear RGB
//! is bit-identical and their metric cores perform the same f32 operations.

use ssimulacra2::{LinearRgb, Ssimulacra2Error};

use super::{FEATURE, MIN_HEIGHT, MIN_WIDTH};
use crate::video::colour::{Transfer, YuvToRgb};
use crate::video::frame::{ChromaPair, FeatureError, LumaPlane};

/// The per-frame constants of the conversion (step 2 and 3 of [`crate::engine::colour`]).
#[derive(Debug, Clone, Copy)]
struct Coeffs {
    /// Luma: `y' = (Y - y_off) / y_range`.
    y_off: f32,
    y_range: f32,
    /// Chroma: `c' = (C - c_off) / c_range`.
    c_off: f32,
    c_range: f32,
    kr: f32,
    kb: f32,
    /// `2 (1 - Kr)`.
    r_cr: f32,
    /// `2 (1 - Kb)`.
    b_cb: f32,
    /// `1 - Kr - Kb`.
    g_div: f32,
    transfer: Transfer,
}

impl Coeffs {
    /// `bpc` outside `8..=16` is clamped into it (callers validate the depth first).
    fn new(conv: &YuvToRgb, bpc: u32) -> Self {
        let bpc = bpc.clamp(8, 16);
        // Every constant below is an integer below 2^17: exact in f32.
        let s = (1u32 << (bpc - 8)) as f32;
        let max = ((1u32 << bpc) - 1) as f32;
        let (y_off, y_range, c_off, c_range) = if conv.full_range {
            (0.0, max, (1u32 << (bpc - 1)) as f32, max)
        } else {
            (16.0 * s, 219.0 * s, 128.0 * s, 224.0 * s)
        };
        let (kr, kb) = conv.matrix.kr_kb();
        Self {
            y_off,
            y_range,
            c_off,
            c_range,
            kr,
            kb,
            r_cr: 2.0 * (1.0 - kr),
            b_cb: 2.0 * (1.0 - kb),
            g_div: 1.0 - kr - kb,
            transfer: conv.transfer,
        }
    }

    /// Step 2 for a chroma sample.
    #[inline]
    fn chroma(&self, c: u16) -> f32 {
        (f32::from(c) - self.c_off) / self.c_range
    }

    /// Steps 2 (luma), 3 and 4 for one pixel with normalised chroma `cb`, `cr`.
    #[inline]
    fn pixel(&self, y: u16, cb: f32, cr: f32) -> [f32; 3] {
        let y = (f32::from(y) - self.y_off) / self.y_range;
        let r = y + self.r_cr * cr;
        let b = y + self.b_cb * cb;
        let g = (y - self.kr * r - self.kb * b) / self.g_div;
        [r, g, b].map(|c| linearise(c.clamp(0.0, 1.0), self.transfer))
    }
}

/// Step 4 of [`crate::engine::colour`]: non-linear `c` in `[0, 1]` to linear light.
#[inline]
fn linearise(c: f32, transfer: Transfer) -> f32 {
    match transfer {
        Transfer::Srgb => {
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        }
        Transfer::Bt709 => {
            if c < 0.081 {
                c / 4.5
            } else {
                ((c + 0.099) / 1.099).powf(1.0 / 0.45)
            }
        }
    }
}

/// Row `y` of `p` (`width` samples), or an empty slice where `data` does not hold it.
#[inline]
fn row<'a>(p: &LumaPlane<'a>, y: usize) -> &'a [u16] {
    let start = y.saturating_mul(p.stride);
    p.data
        .get(start..start.saturating_add(p.width))
        .unwrap_or(&[])
}

/// Converts one YUV frame to linear RGB as [`crate::engine::colour`] specifies, in `f32`:
/// nearest chroma sample `(x * cw / w, y * ch / h)`, range normalisation at `luma.bpc` bits,
/// `conv`'s matrix, R'G'B' clamped to `[0, 1]`, `conv`'s transfer.
///
/// - `luma`: the Y plane, `w` x `h` samples at `luma.bpc` bits (`8..=16`; other depths are
///   treated as the nearest of 8 and 16).
/// - `chroma`: `[Cb, Cr]` planes of any size (`cw` x `ch`, 4:2:0 is `ceil(w / 2)` x
///   `ceil(h / 2)`) with samples at the same depth as `luma`; `None` for a grey frame
///   (`cb' = cr' = 0`, so R' = B' = Y' and G' = Y' up to rounding).
/// - `out`: cleared and filled with `w * h` pixels `[R, G, B]`, row-major, linear light in
///   `[0, 1]` (1 = the nominal peak white of the range). Its allocation is reused.
///
/// Never panics: samples that a plane's `data` does not hold (a plane whose public fields are
/// inconsistent, an empty chroma plane) read as 0. [`Ssimulacra2::score`] refuses such planes.
pub fn to_linear_rgb(
    luma: &LumaPlane,
    chroma: Option<[&LumaPlane; 2]>,
    conv: &YuvToRgb,
    out: &mut Vec<[f32; 3]>,
) {
    let (w, h) = (luma.width, luma.height);
    let k = Coeffs::new(conv, luma.bpc);
    out.clear();
    out.reserve(w.saturating_mul(h));
    let sample = |row: &[u16], x: usize| row.get(x).copied().unwrap_or(0);
    for y in 0..h {
        let luma_row = row(luma, y);
        match chroma {
            None => out.extend((0..w).map(|x| k.pixel(sample(luma_row, x), 0.0, 0.0))),
            Some([cb, cr]) => {
                let cb_row = row(cb, y * cb.height / h);
                let cr_row = row(cr, y * cr.height / h);
                out.extend((0..w).map(|x| {
                    let cb_v = k.chroma(sample(cb_row, x * cb.width / w));
                    let cr_v = k.chroma(sample(cr_row, x * cr.width / w));
                    k.pixel(sample(luma_row, x), cb_v, cr_v)
                }));
            }
        }
    }
}

/// SSIMULACRA2 of frame pairs, one thread.
///
/// Source: Cloudinary's SSIMULACRA2 (libjxl `tools/ssimulacra2.cc`) as ported by the rust-av
/// `ssimulacra2` crate 0.5.1 (`compute_frame_ssimulacra2` on linear RGB: XYB, six scales,
/// SSIM and edge-difference maps, the published weights); the YUV -> linear RGB conversion is
/// ours ([`to_linear_rgb`], specified in [`crate::engine::colour`]).
///
/// Holds the two linear RGB frames as staging buffers. The crate takes its inputs by value, so
/// the buffers are handed over on each [`Ssimulacra2::score`] and allocated again for the next
/// frame (keeping a copy would cost a copy per frame and `24 * w * h` bytes between frames).
#[derive(Debug, Default)]
pub struct Ssimulacra2 {
    reference: Vec<[f32; 3]>,
    distorted: Vec<[f32; 3]>,
}

impl Ssimulacra2 {
    /// An empty scorer (no allocation until the first frame).
    pub fn new() -> Self {
        Self::default()
    }

    /// The SSIMULACRA2 score of `distorted` against `reference`.
    ///
    /// - `reference`, `distorted`: luma planes of equal size (`w` x `h`, at least
    ///   [`MIN_WIDTH`] x [`MIN_HEIGHT`]) and depth (`bpc` in `8..=16`).
    /// - `chroma`: the Cb/Cr planes of both frames (any subsampling; each frame's two planes
    ///   and the two frames' planes of the same component must have equal sizes, at the luma
    ///   `bpc`); `None` scores the frames as grey (`cb' = cr' = 0`).
    /// - `conv`: the YUV -> RGB conversion (matrix, range, transfer) of the caps.
    ///
    /// Returns the score: 100 for identical frames, lower is worse; about 90 is visually
    /// lossless, 50 medium quality, and strong distortions go below 0 (no lower bound).
    ///
    /// Errors: [`FeatureError::FrameTooSmall`] (feature `"ssimulacra2"`) below 8x8;
    /// [`FeatureError::WrongGeometry`] for a `bpc` outside `8..=16`, planes that differ in
    /// size or depth, or planes whose `data`/`stride` do not hold their geometry.
    pub fn score(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        chroma: Option<&ChromaPair>,
        conv: &YuvToRgb,
    ) -> Result<f64, FeatureError> {
        let (w, h, bpc) = (reference.width, reference.height, reference.bpc);
        FeatureError::check_new(FEATURE, (w, h, bpc), (MIN_WIDTH, MIN_HEIGHT))?;
        FeatureError::check_plane(FEATURE, (w, h, bpc), reference)?;
        FeatureError::check_plane(FEATURE, (w, h, bpc), distorted)?;
        if let Some(c) = chroma {
            let first = &c.reference[0];
            let geometry = (first.width.max(1), first.height.max(1), bpc);
            for p in c.reference.iter().chain(&c.distorted) {
                FeatureError::check_plane(FEATURE, geometry, p)?;
            }
        }
        to_linear_rgb(
            reference,
            chroma.map(|c| [&c.reference[0], &c.reference[1]]),
            conv,
            &mut self.reference,
        );
        to_linear_rgb(
            distorted,
            chroma.map(|c| [&c.distorted[0], &c.distorted[1]]),
            conv,
            &mut self.distorted,
        );
        let wrong = || FeatureError::wrong_size(FEATURE, (w, h, bpc), (w, h));
        let a = LinearRgb::new(std::mem::take(&mut self.reference), w, h).map_err(|_| wrong())?;
        let b = LinearRgb::new(std::mem::take(&mut self.distorted), w, h).map_err(|_| wrong())?;
        ssimulacra2::compute_frame_ssimulacra2(a, b).map_err(|e| match e {
            Ssimulacra2Error::InvalidImageSize => FeatureError::FrameTooSmall {
                feature: FEATURE,
                width: w,
                height: h,
                min_width: MIN_WIDTH,
                min_height: MIN_HEIGHT,
            },
            Ssimulacra2Error::NonMatchingImageDimensions
            | Ssimulacra2Error::LinearRgbConversionFailed => wrong(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::colour::Matrix;

    /// Converts one pixel `(Y, Cb, Cr)` (chroma planes of 1x1).
    fn px(y: u16, cb: u16, cr: u16, bpc: u32, conv: YuvToRgb) -> [f32; 3] {
        let (ys, cbs, crs) = ([y], [cb], [cr]);
        let l = LumaPlane::packed(&ys, 1, 1, bpc).unwrap();
        let u = LumaPlane::packed(&cbs, 1, 1, bpc).unwrap();
        let v = LumaPlane::packed(&crs, 1, 1, bpc).unwrap();
        let mut out = Vec::new();
        to_linear_rgb(&l, Some([&u, &v]), &conv, &mut out);
        assert_eq!(out.len(), 1);
        out[0]
    }

    fn conv(matrix: Matrix, full_range: bool, transfer: Transfer) -> YuvToRgb {
        YuvToRgb {
            matrix,
            full_range,
            transfer,
            defaulted: false,
        }
    }

    fn assert_rgb(got: [f32; 3], want: [f64; 3], tol: f64) {
        for c in 0..3 {
            assert!(
                (f64::from(got[c]) - want[c]).abs() <= tol,
                "channel {c}: got {got:?}, want {want:?}"
            );
        }
    }

    const LIMITED_709: YuvToRgb = YuvToRgb {
        matrix: Matrix::Bt709,
        full_range: false,
        transfer: Transfer::Bt709,
        defaulted: false,
    };

    #[test]
    fn limited_8bit_black_and_white() {
        assert_eq!(px(16, 128, 128, 8, LIMITED_709), [0.0; 3]);
        assert_rgb(px(235, 128, 128, 8, LIMITED_709), [1.0; 3], 1e-6);
        // Below black and above white clamp.
        assert_eq!(px(0, 128, 128, 8, LIMITED_709), [0.0; 3]);
        assert_rgb(px(255, 128, 128, 8, LIMITED_709), [1.0; 3], 1e-6);
    }

    #[test]
    fn limited_10bit_black_mid_white() {
        assert_eq!(px(64, 512, 512, 10, LIMITED_709), [0.0; 3]);
        assert_rgb(px(940, 512, 512, 10, LIMITED_709), [1.0; 3], 1e-6);
        // y' = (502 - 64) / 876 = 0.5 -> ((0.5 + 0.099) / 1.099)^(1 / 0.45).
        assert_rgb(
            px(502, 512, 512, 10, LIMITED_709),
            [0.259_589_400_506; 3],
            1e-6,
        );
    }

    #[test]
    fn full_range_8bit() {
        let c = conv(Matrix::Bt709, true, Transfer::Bt709);
        assert_eq!(px(0, 128, 128, 8, c), [0.0; 3]);
        assert_rgb(px(255, 128, 128, 8, c), [1.0; 3], 1e-6);
        // y' = 128 / 255, cb' = cr' = 0.
        assert_rgb(px(128, 128, 128, 8, c), [0.261_481_506_933; 3], 1e-6);
        // BT.601 matrix, sRGB transfer, a colour (hand-computed in f64):
        // y' = 100/255, cb' = 22/255, cr' = -38/255 -> R'G'B' = (0.183231, 0.468887, 0.545035).
        let c = conv(Matrix::Bt601, true, Transfer::Srgb);
        assert_rgb(
            px(100, 150, 90, 8, c),
            [0.028_118_463_393, 0.186_365_000_429, 0.258_118_069_416],
            1e-6,
        );
    }

    #[test]
    fn bt709_limited_colour() {
        // y' = 47/219, cb' = -26/224, cr' = 112/224: R' = 1.002012 -> 1, B' = -0.000770 -> 0,
        // G' = 0.002292732 -> linear G'/4.5 = 0.000509496.
        assert_rgb(
            px(63, 102, 240, 8, LIMITED_709),
            [1.0, 0.000_509_495_921, 0.0],
            1e-6,
        );
        // BT.2020, 10-bit limited: R'G'B' = (0.921275, 0.512559, 0.376697).
        let c = conv(Matrix::Bt2020, false, Transfer::Bt709);
        assert_rgb(
            px(600, 400, 700, 10, c),
            [0.847_745_526_988, 0.271_839_678_284, 0.155_543_112_649],
            1e-6,
        );
    }

    #[test]
    fn transfer_curves() {
        let t = |c: f32, tr| f64::from(linearise(c, tr));
        // sRGB: linear segment up to and including 0.04045, power above.
        assert!((t(0.04045, Transfer::Srgb) - 0.003_130_805).abs() < 1e-8);
        assert!((t(0.04, Transfer::Srgb) - 0.003_095_975).abs() < 1e-8);
        assert!((t(0.5, Transfer::Srgb) - 0.214_041_140).abs() < 1e-7);
        assert_eq!(t(0.0, Transfer::Srgb), 0.0);
        assert!((t(1.0, Transfer::Srgb) - 1.0).abs() < 1e-7);
        // BT.709 inverse OETF: linear below 0.081, power from 0.081 on.
        assert!((t(0.08, Transfer::Bt709) - 0.017_777_778).abs() < 1e-8);
        assert!((t(0.081, Transfer::Bt709) - 0.017_945_023).abs() < 1e-8);
        assert!((t(0.5, Transfer::Bt709) - 0.259_589_401).abs() < 1e-7);
        assert!((t(1.0, Transfer::Bt709) - 1.0).abs() < 1e-7);
    }

    #[test]
    fn nearest_chroma_420_odd_width() {
        // 5x3 luma, 3x2 chroma: x -> x * 3 / 5 = 0 0 1 1 2, y -> y * 2 / 3 = 0 0 1.
        let c = conv(Matrix::Bt601, true, Transfer::Srgb);
        let y = [100u16; 15];
        let cb = [60u16, 90, 120, 150, 180, 210];
        let cr = [200u16, 170, 140, 110, 80, 50];
        let l = LumaPlane::packed(&y, 5, 3, 8).unwrap();
        let u = LumaPlane::packed(&cb, 3, 2, 8).unwrap();
        let v = LumaPlane::packed(&cr, 3, 2, 8).unwrap();
        let mut out = vec![[9.0; 3]; 40];
        to_linear_rgb(&l, Some([&u, &v]), &c, &mut out);
        assert_eq!(out.len(), 15);
        let cx = [0, 0, 1, 1, 2];
        let cy = [0, 0, 1];
        for yy in 0..3 {
            for xx in 0..5 {
                let i = cy[yy] * 3 + cx[xx];
                assert_eq!(
                    out[yy * 5 + xx],
                    px(100, cb[i], cr[i], 8, c),
                    "({xx}, {yy})"
                );
            }
        }
    }

    #[test]
    fn strided_planes_and_grey() {
        // A 3x2 luma plane with stride 4 (padding 999 must not be read).
        let y = [16u16, 126, 235, 999, 50, 180, 90, 999];
        let l = LumaPlane::new(&y, 3, 2, 4, 8).unwrap();
        let neutral = [128u16; 4];
        let n = LumaPlane::packed(&neutral, 2, 1, 8).unwrap();
        let (mut grey, mut with_chroma) = (Vec::new(), Vec::new());
        to_linear_rgb(&l, None, &LIMITED_709, &mut grey);
        to_linear_rgb(&l, Some([&n, &n]), &LIMITED_709, &mut with_chroma);
        assert_eq!(grey.len(), 6);
        // Neutral chroma normalises to exactly 0: the same as no chroma.
        assert_eq!(grey, with_chroma);
        let expected = [16u16, 126, 235, 50, 180, 90].map(|v| px(v, 128, 128, 8, LIMITED_709));
        assert_eq!(grey, expected);
        // R' = B' = Y' exactly; G' agrees up to rounding.
        for p in &grey {
            assert_eq!(p[0], p[2]);
            assert!((p[0] - p[1]).abs() < 1e-6, "{p:?}");
        }
    }

    #[test]
    fn inconsistent_planes_do_not_panic() {
        let y = [100u16; 4];
        let l = LumaPlane {
            data: &y,
            width: 3,
            height: 3,
            stride: 3,
            bpc: 8,
        };
        let empty = LumaPlane {
            data: &[],
            width: 0,
            height: 0,
            stride: 0,
            bpc: 8,
        };
        let mut out = Vec::new();
        to_linear_rgb(&l, Some([&empty, &empty]), &LIMITED_709, &mut out);
        assert_eq!(out.len(), 9);
        let mut s = Ssimulacra2::new();
        let chroma = ChromaPair {
            reference: [empty; 2],
            distorted: [empty; 2],
        };
        let big = vec![100u16; 64];
        let p = LumaPlane::packed(&big, 8, 8, 8).unwrap();
        assert!(matches!(
            s.score(&p, &p, Some(&chroma), &LIMITED_709),
            Err(FeatureError::WrongGeometry { .. })
        ));
    }

    /// A `w` x `h` test pattern at 8 bits: gradients and a few edges.
    fn pattern(w: usize, h: usize, seed: u16) -> Vec<u16> {
        (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as u16, (i / w) as u16);
                let edge = if (x / 5 + y / 7) % 2 == 0 { 40 } else { 0 };
                16 + (x * 3 + y * 2 + seed + edge) % 200
            })
            .collect()
    }

    #[test]
    fn identical_frames_score_100() {
        let (w, h) = (37usize, 29usize);
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let y = pattern(w, h, 0);
        let cb = pattern(cw, ch, 50);
        let cr = pattern(cw, ch, 90);
        let l = LumaPlane::packed(&y, w, h, 8).unwrap();
        let u = LumaPlane::packed(&cb, cw, ch, 8).unwrap();
        let v = LumaPlane::packed(&cr, cw, ch, 8).unwrap();
        let chroma = ChromaPair {
            reference: [u, v],
            distorted: [u, v],
        };
        let mut s = Ssimulacra2::new();
        for c in [Some(&chroma), None] {
            let score = s.score(&l, &l, c, &LIMITED_709).unwrap();
            assert!((score - 100.0).abs() < 1e-9, "{score}");
        }
        // A distorted frame scores below 100.
        let d = pattern(w, h, 3);
        let dl = LumaPlane::packed(&d, w, h, 8).unwrap();
        let score = s.score(&l, &dl, Some(&chroma), &LIMITED_709).unwrap();
        assert!(score < 100.0, "{score}");
        // The same pair again gives the same score (buffers re-filled, not appended to).
        let again = s.score(&l, &dl, Some(&chroma), &LIMITED_709).unwrap();
        assert_eq!(score, again);
    }

    #[test]
    fn errors() {
        let mut s = Ssimulacra2::new();
        let data = vec![100u16; 64];
        let small = LumaPlane::packed(&data, 7, 8, 8).unwrap();
        assert_eq!(
            s.score(&small, &small, None, &LIMITED_709),
            Err(FeatureError::FrameTooSmall {
                feature: "ssimulacra2",
                width: 7,
                height: 8,
                min_width: 8,
                min_height: 8,
            })
        );
        let short = LumaPlane::packed(&data, 8, 7, 8).unwrap();
        assert!(matches!(
            s.score(&short, &short, None, &LIMITED_709),
            Err(FeatureError::FrameTooSmall { .. })
        ));
        let a = LumaPlane::packed(&data, 8, 8, 8).unwrap();
        let b = LumaPlane::packed(&data, 8, 7, 8).unwrap();
        assert!(matches!(
            s.score(&a, &b, None, &LIMITED_709),
            Err(FeatureError::WrongGeometry { .. })
        ));
        let b10 = LumaPlane::packed(&data, 8, 8, 10).unwrap();
        assert!(matches!(
            s.score(&a, &b10, None, &LIMITED_709),
            Err(FeatureError::WrongGeometry { .. })
        ));
        let bad_bpc = LumaPlane { bpc: 20, ..a };
        assert!(matches!(
            s.score(&bad_bpc, &bad_bpc, None, &LIMITED_709),
            Err(FeatureError::WrongGeometry { .. })
        ));
        // Chroma: the two frames' planes differ, or chroma depth differs from luma depth.
        let c4 = vec![128u16; 16];
        let u = LumaPlane::packed(&c4, 4, 4, 8).unwrap();
        let u3 = LumaPlane::packed(&c4, 3, 4, 8).unwrap();
        let u10 = LumaPlane::packed(&c4, 4, 4, 10).unwrap();
        for (r, d) in [(u, u3), (u10, u10)] {
            let chroma = ChromaPair {
                reference: [r, r],
                distorted: [d, d],
            };
            assert!(matches!(
                s.score(&a, &a, Some(&chroma), &LIMITED_709),
                Err(FeatureError::WrongGeometry { .. })
            ));
        }
        // After errors the scorer still works.
        let ok = s.score(&a, &a, None, &LIMITED_709).unwrap();
        assert!((ok - 100.0).abs() < 1e-9);
    }
}
