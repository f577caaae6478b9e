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

use ssimulacra2::{Blur, LinearRgb, Ssimulacra2Error, Xyb};

use super::params::{FEATURE, MIN_HEIGHT, MIN_WIDTH};
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
    /// A ladder's reference half of every scale ([`Ssimulacra2::score_ladder`]).
    ladder: Vec<RefScale>,
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

impl Ssimulacra2 {
    /// [`Ssimulacra2::score`] of several distorted frames against one reference (a ladder):
    /// the reference's linear RGB, its pyramid, XYB planes and their blurs (the mean and the
    /// blurred square) are made once, then each distorted frame's and the terms of the pair.
    /// `distorted[i]` with `chroma[i]` (each frame's `reference` chroma the same planes);
    /// one score per frame, in order, equal bit for bit to [`Ssimulacra2::score`]'s: the
    /// crate's metric core (rust-av `ssimulacra2` 0.5.1, `compute_frame_ssimulacra2`) split
    /// into its reference and distorted halves with the same `f32` and `f64` operations in
    /// the same order, calling the crate's own XYB conversion and blur.
    ///
    /// Errors: as [`Ssimulacra2::score`] (a frame whose chroma is given while the first
    /// frame's is not, or the other way round, is scored alone by it).
    pub fn score_ladder(
        &mut self,
        reference: &LumaPlane,
        distorted: &[&LumaPlane],
        chroma: &[Option<&ChromaPair>],
        conv: &YuvToRgb,
    ) -> Result<Vec<f64>, FeatureError> {
        let (w, h, bpc) = (reference.width, reference.height, reference.bpc);
        FeatureError::check_new(FEATURE, (w, h, bpc), (MIN_WIDTH, MIN_HEIGHT))?;
        FeatureError::check_plane(FEATURE, (w, h, bpc), reference)?;
        let first = chroma.first().copied().flatten();
        for (i, d) in distorted.iter().enumerate() {
            FeatureError::check_plane(FEATURE, (w, h, bpc), d)?;
            if let Some(c) = chroma.get(i).copied().flatten() {
                let plane = &c.reference[0];
                let geometry = (plane.width.max(1), plane.height.max(1), bpc);
                for p in c.reference.iter().chain(&c.distorted) {
                    FeatureError::check_plane(FEATURE, geometry, p)?;
                }
            }
        }
        let wrong = || FeatureError::wrong_size(FEATURE, (w, h, bpc), (w, h));
        to_linear_rgb(
            reference,
            first.map(|c| [&c.reference[0], &c.reference[1]]),
            conv,
            &mut self.reference,
        );
        let mut ladder = std::mem::take(&mut self.ladder);
        ladder.clear();
        let lin = std::mem::take(&mut self.reference);
        for_each_scale(lin, w, h, |w, h, xyb| {
            let mut blur = Blur::new(w, h);
            let mu = blur.blur(&xyb);
            let sq = blur.blur(&multiply(&xyb, &xyb));
            ladder.push(RefScale {
                width: w,
                height: h,
                xyb,
                mu,
                sq,
            });
            Ok(())
        })
        .map_err(|()| wrong())?;
        let mut out = Vec::with_capacity(distorted.len());
        for (i, d) in distorted.iter().enumerate() {
            let c = chroma.get(i).copied().flatten();
            if c.is_some() != first.is_some() {
                out.push(self.score(reference, d, c, conv)?);
                continue;
            }
            to_linear_rgb(
                d,
                c.map(|c| [&c.distorted[0], &c.distorted[1]]),
                conv,
                &mut self.distorted,
            );
            let lin = std::mem::take(&mut self.distorted);
            let mut scales = Vec::with_capacity(ladder.len());
            let mut refs = ladder.iter();
            for_each_scale(lin, w, h, |w, h, img2| {
                let r = refs
                    .next()
                    .filter(|r| (r.width, r.height) == (w, h))
                    .ok_or(())?;
                // The crate's order: sigma2_sq, sigma12, then mu2 (the blurs are
                // independent, each output a function of its input alone).
                let mut blur = Blur::new(w, h);
                let sigma2_sq = blur.blur(&multiply(&img2, &img2));
                let sigma12 = blur.blur(&multiply(&r.xyb, &img2));
                let mu2 = blur.blur(&img2);
                let avg_ssim = ssim_map(w, h, &r.mu, &mu2, &r.sq, &sigma2_sq, &sigma12);
                let avg_edgediff = edge_diff_map(w, h, &r.xyb, &r.mu, &img2, &mu2);
                scales.push((avg_ssim, avg_edgediff));
                Ok(())
            })
            .map_err(|()| wrong())?;
            if scales.len() != ladder.len() {
                return Err(wrong());
            }
            out.push(msssim_score(&scales));
        }
        self.ladder = ladder;
        Ok(out)
    }
}

/// A ladder's reference half of one SSIMULACRA2 scale: its positive XYB planes, their blur
/// (`mu1`) and the blur of their squares (`sigma1_sq`).
#[derive(Debug)]
struct RefScale {
    width: usize,
    height: usize,
    xyb: [Vec<f32>; 3],
    mu: [Vec<f32>; 3],
    sq: [Vec<f32>; 3],
}

// The rest of this file down to the tests is the metric core of the rust-av `ssimulacra2`
// crate 0.5.1 (`src/lib.rs`, BSD-2-Clause), whose functions are private there, restated for
// the ladder: the same operations in the same order, so that its scores equal the crate's
// bit for bit (tested against `compute_frame_ssimulacra2`).

/// Scales of the crate's loop.
const NUM_SCALES: usize = 6;

/// The crate's scale loop over one linear RGB frame of `w` x `h`: for every scale it scores
/// (it stops before a scale whose previous scale is below 8x8), the frame halved as the crate
/// halves it (scale > 0), converted by the crate to XYB and made positive, as three planes,
/// passed to `each` with its size. `Err(())` when a frame's size does not match its data.
fn for_each_scale(
    mut lin: Vec<[f32; 3]>,
    mut w: usize,
    mut h: usize,
    mut each: impl FnMut(usize, usize, [Vec<f32>; 3]) -> Result<(), ()>,
) -> Result<(), ()> {
    for scale in 0..NUM_SCALES {
        if w < 8 || h < 8 {
            break;
        }
        if scale > 0 {
            (lin, w, h) = downscale_by_2(&lin, w, h);
        }
        let xyb = Xyb::from(LinearRgb::new(lin.clone(), w, h).map_err(|_| ())?);
        each(w, h, positive_planes(&xyb))?;
    }
    Ok(())
}

/// The crate's `make_positive_xyb` then `xyb_to_planar`.
fn positive_planes(xyb: &Xyb) -> [Vec<f32>; 3] {
    let n = xyb.data().len();
    let mut out = [vec![0.0f32; n], vec![0.0f32; n], vec![0.0f32; n]];
    let [o0, o1, o2] = &mut out;
    for (((&[x, y, b], o0), o1), o2) in xyb.data().iter().zip(o0).zip(o1).zip(o2) {
        *o2 = (b - y) + 0.55;
        *o0 = x.mul_add(14.0, 0.42);
        *o1 = y + 0.01;
    }
    out
}

/// The crate's `image_multiply`: plane-wise products.
fn multiply(a: &[Vec<f32>; 3], b: &[Vec<f32>; 3]) -> [Vec<f32>; 3] {
    std::array::from_fn(|c| a[c].iter().zip(&b[c]).map(|(&p, &q)| p * q).collect())
}

/// The crate's `downscale_by_2`: 2x2 box averages, the last row and column repeated.
fn downscale_by_2(src: &[[f32; 3]], w: usize, h: usize) -> (Vec<[f32; 3]>, usize, usize) {
    const SCALE: usize = 2;
    let (ow, oh) = (w.div_ceil(SCALE), h.div_ceil(SCALE));
    let mut out = vec![[0.0f32; 3]; ow * oh];
    let normalize = 1f32 / (SCALE * SCALE) as f32;
    for oy in 0..oh {
        for ox in 0..ow {
            for c in 0..3 {
                let mut sum = 0f32;
                for iy in 0..SCALE {
                    for ix in 0..SCALE {
                        let x = (ox * SCALE + ix).min(w - 1);
                        let y = (oy * SCALE + iy).min(h - 1);
                        sum += src.get(y * w + x).map_or(0.0, |p| p[c]);
                    }
                }
                if let Some(o) = out.get_mut(oy * ow + ox) {
                    o[c] = sum * normalize;
                }
            }
        }
    }
    (out, ow, oh)
}

/// The crate's `ssim_map`: per plane, the means of `1 - SSIM'` and of its fourth power
/// (the latter as its fourth root).
fn ssim_map(
    width: usize,
    height: usize,
    m1: &[Vec<f32>; 3],
    m2: &[Vec<f32>; 3],
    s11: &[Vec<f32>; 3],
    s22: &[Vec<f32>; 3],
    s12: &[Vec<f32>; 3],
) -> [f64; 6] {
    const C2: f32 = 0.0009f32;
    let one_per_pixels = 1.0f64 / (width * height) as f64;
    let mut averages = [0f64; 6];
    for c in 0..3 {
        let mut sum1 = [0.0f64; 2];
        let pixels = m1[c]
            .iter()
            .zip(&m2[c])
            .zip(s11[c].iter().zip(&s22[c]).zip(&s12[c]));
        for ((&mu1, &mu2), ((&s11, &s22), &s12)) in pixels {
            let mu11 = mu1 * mu1;
            let mu22 = mu2 * mu2;
            let mu12 = mu1 * mu2;
            let mu_diff = mu1 - mu2;
            let num_m = mu_diff.mul_add(-mu_diff, 1.0f32);
            let num_s = 2f32.mul_add(s12 - mu12, C2);
            let denom_s = (s11 - mu11) + (s22 - mu22) + C2;
            let d = (1.0f64 - f64::from((num_m * num_s) / denom_s)).max(0.0);
            sum1[0] += d;
            sum1[1] += d.powi(4);
        }
        averages[c * 2] = one_per_pixels * sum1[0];
        averages[c * 2 + 1] = (one_per_pixels * sum1[1]).sqrt().sqrt();
    }
    averages
}

/// The crate's `edge_diff_map`: per plane, the means (and fourth-power means, as fourth
/// roots) of artifacts (edges only in the distorted frame) and detail lost (only in the
/// reference).
fn edge_diff_map(
    width: usize,
    height: usize,
    img1: &[Vec<f32>; 3],
    mu1: &[Vec<f32>; 3],
    img2: &[Vec<f32>; 3],
    mu2: &[Vec<f32>; 3],
) -> [f64; 12] {
    let one_per_pixels = 1.0f64 / (width * height) as f64;
    let mut averages = [0f64; 12];
    for c in 0..3 {
        let mut sum1 = [0.0f64; 4];
        let pixels = img1[c].iter().zip(&img2[c]).zip(mu1[c].iter().zip(&mu2[c]));
        for ((&p1, &p2), (&m1, &m2)) in pixels {
            let d1: f64 =
                (1.0 + f64::from((p2 - m2).abs())) / (1.0 + f64::from((p1 - m1).abs())) - 1.0;
            let artifact = d1.max(0.0);
            sum1[0] += artifact;
            sum1[1] += artifact.powi(4);
            let detail_lost = (-d1).max(0.0);
            sum1[2] += detail_lost;
            sum1[3] += detail_lost.powi(4);
        }
        averages[c * 4] = one_per_pixels * sum1[0];
        averages[c * 4 + 1] = (one_per_pixels * sum1[1]).sqrt().sqrt();
        averages[c * 4 + 2] = one_per_pixels * sum1[2];
        averages[c * 4 + 3] = (one_per_pixels * sum1[3]).sqrt().sqrt();
    }
    averages
}

/// The crate's weights of the 108 sub-scores (`Msssim::score`).
const WEIGHT: [f64; 108] = [
    0.0,
    0.000_737_660_670_740_658_6,
    0.0,
    0.0,
    0.000_779_348_168_286_730_9,
    0.0,
    0.0,
    0.000_437_115_573_010_737_9,
    0.0,
    1.104_172_642_665_734_6,
    0.000_662_848_341_292_71,
    0.000_152_316_327_837_187_52,
    0.0,
    0.001_640_643_745_659_975_4,
    0.0,
    1.842_245_552_053_929_8,
    11.441_172_603_757_666,
    0.0,
    0.000_798_910_943_601_516_3,
    0.000_176_816_438_078_653,
    0.0,
    1.878_759_497_954_638_7,
    10.949_069_906_051_42,
    0.0,
    0.000_728_934_699_150_807_2,
    0.967_793_708_062_683_3,
    0.0,
    0.000_140_034_242_854_358_84,
    0.998_176_697_785_496_7,
    0.000_319_497_559_344_350_53,
    0.000_455_099_211_379_206_3,
    0.0,
    0.0,
    0.001_364_876_616_324_339_8,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    7.466_890_328_078_848,
    0.0,
    17.445_833_984_131_262,
    0.000_623_560_163_404_146_6,
    0.0,
    0.0,
    6.683_678_146_179_332,
    0.000_377_244_079_796_112_96,
    1.027_889_937_768_264,
    225.205_153_008_492_74,
    0.0,
    0.0,
    19.213_238_186_143_016,
    0.001_140_152_458_661_836_1,
    0.001_237_755_635_509_985,
    176.393_175_984_506_94,
    0.0,
    0.0,
    24.433_009_998_704_76,
    0.285_208_026_121_177_57,
    0.000_448_543_692_383_340_8,
    0.0,
    0.0,
    0.0,
    34.779_063_444_837_72,
    44.835_625_328_877_896,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.000_868_055_657_329_169_8,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.000_531_319_187_435_874_7,
    0.0,
    0.000_165_338_141_613_791_12,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.000_417_917_180_325_133_6,
    0.001_729_082_823_472_283_3,
    0.0,
    0.002_082_700_584_663_643_7,
    0.0,
    0.0,
    8.826_982_764_996_862,
    23.192_433_439_989_26,
    0.0,
    95.108_049_881_108_6,
    0.986_397_803_440_068_2,
    0.983_438_279_246_535_3,
    0.001_228_640_504_827_849_3,
    171.266_725_589_730_7,
    0.980_785_887_243_537_9,
    0.0,
    0.0,
    0.0,
    0.000_513_006_458_899_067_9,
    0.0,
    0.000_108_540_578_584_115_37,
];

/// The crate's `Msssim::score` of per-scale `(avg_ssim, avg_edgediff)`.
fn msssim_score(scales: &[([f64; 6], [f64; 12])]) -> f64 {
    let mut ssim = 0.0f64;
    let mut weights = WEIGHT.iter();
    let mut next = || weights.next().copied().unwrap_or(0.0);
    for c in 0..3 {
        for (avg_ssim, avg_edgediff) in scales {
            for n in 0..2 {
                ssim = next().mul_add(avg_ssim[c * 2 + n].abs(), ssim);
                ssim = next().mul_add(avg_edgediff[c * 4 + n].abs(), ssim);
                ssim = next().mul_add(avg_edgediff[c * 4 + n + 2].abs(), ssim);
            }
        }
    }
    ssim *= 0.956_238_261_683_484_4_f64;
    ssim = (6.248_496_625_763_138e-5 * ssim * ssim).mul_add(
        ssim,
        2.326_765_642_916_932f64.mul_add(ssim, -0.020_884_521_182_843_837 * ssim * ssim),
    );
    if ssim > 0.0f64 {
        ssim.powf(0.627_633_646_783_138_7)
            .mul_add(-10.0f64, 100.0f64)
    } else {
        100.0f64
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

    /// The ladder's restatement of the crate's core against the crate itself, bit for bit:
    /// sizes with six scales and with fewer (the loop's stop), odd sizes (the halving's
    /// repeated edge), 8 and 10 bits, with chroma and grey, ladders of one and of three.
    #[test]
    fn ladder_equals_pairs() {
        let yuv = conv(Matrix::Bt709, false, Transfer::Bt709);
        let sizes: [(usize, usize, u32); 4] = [(37, 29, 8), (15, 9, 10), (300, 260, 8), (8, 8, 8)];
        for (w, h, bpc) in sizes {
            let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
            let scale = |v: Vec<u16>| -> Vec<u16> { v.iter().map(|&x| x << (bpc - 8)).collect() };
            let y = scale(pattern(w, h, 0));
            let (cb, cr) = (scale(pattern(cw, ch, 50)), scale(pattern(cw, ch, 90)));
            let ds: Vec<[Vec<u16>; 3]> = (1..4u16)
                .map(|k| {
                    [
                        scale(pattern(w, h, k * 7)),
                        scale(pattern(cw, ch, 50 + k)),
                        scale(pattern(cw, ch, 90 - k)),
                    ]
                })
                .collect();
            let l = LumaPlane::packed(&y, w, h, bpc).unwrap();
            let u = LumaPlane::packed(&cb, cw, ch, bpc).unwrap();
            let v = LumaPlane::packed(&cr, cw, ch, bpc).unwrap();
            let planes: Vec<[LumaPlane; 3]> = ds
                .iter()
                .map(|[a, b, c]| {
                    [
                        LumaPlane::packed(a, w, h, bpc).unwrap(),
                        LumaPlane::packed(b, cw, ch, bpc).unwrap(),
                        LumaPlane::packed(c, cw, ch, bpc).unwrap(),
                    ]
                })
                .collect();
            let pairs: Vec<ChromaPair> = planes
                .iter()
                .map(|p| ChromaPair {
                    reference: [u, v],
                    distorted: [p[1], p[2]],
                })
                .collect();
            let mut s = Ssimulacra2::new();
            for with_chroma in [true, false] {
                let chroma: Vec<Option<&ChromaPair>> =
                    pairs.iter().map(|p| with_chroma.then_some(p)).collect();
                let want: Vec<f64> = planes
                    .iter()
                    .zip(&chroma)
                    .map(|(p, c)| s.score(&l, &p[0], *c, &yuv).unwrap())
                    .collect();
                for n in [1, planes.len()] {
                    let dis: Vec<&LumaPlane> = planes.iter().take(n).map(|p| &p[0]).collect();
                    let got = s.score_ladder(&l, &dis, &chroma[..n], &yuv).unwrap();
                    assert_eq!(got.len(), n);
                    for (k, (g, w0)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g.to_bits(),
                            w0.to_bits(),
                            "{w}x{h} {bpc}-bit chroma {with_chroma} rendition {k} of {n}: {g} vs {w0}"
                        );
                    }
                }
            }
        }
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
