//! libvmaf's float SSIM and MS-SSIM (`float_ssim`, `float_ms_ssim`) on the luma plane, with
//! their default options (no dB conversion, no l/c/s outputs).
//!
//! libvmaf computes both with its bundled IQA code in single precision with double
//! accumulators; this follows the same order of operations so that scores agree to far below
//! 1e-4: samples become floats divided by `2^(bpc - 8)`; an 11-tap Gaussian window
//! (sigma 1.5) is applied separably over the "valid" region only (the output is 10 samples
//! smaller in each direction); SSIM's constants are those of an 8-bit range (K1 = 0.01,
//! K2 = 0.03, L = 255, C3 = C2 / 2); the structure term uses `sqrt(var_ref * var_dis)`, as
//! libvmaf's variant does. `float_ssim` first averages `scale x scale` blocks when the
//! frame is at least 384 samples on its short side (`scale = round(min(w, h) / 256)`).
//! MS-SSIM runs SSIM at five scales, each halved with a 9x9 biorthogonal (9/7) low-pass
//! filter and mirrored edges, and combines per-scale means of luminance, contrast and
//! structure with Wang's exponents.
//!
//! Sources: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_ssim.c, float_ms_ssim.c, ssim.c,
//! ms_ssim.c and iqa/ (ssim_tools.c, convolve.c with `IQA_CONVOLVE_1D`, decimate.c,
//! math_utils.c).

use super::params::*;
use crate::video::frame::{FeatureError, LumaPlane};

/// A float image, row-major, `w` x `h`, no padding.
#[derive(Default, Clone)]
struct Image {
    data: Vec<f32>,
    w: usize,
    h: usize,
}

impl Image {
    fn resize(&mut self, w: usize, h: usize) {
        self.w = w;
        self.h = h;
        self.data.resize(w * h, 0.0);
    }
}

/// Mirrors a coordinate into `0..n` as IQA's symmetric boundary does (`-1 -> 0`,
/// `n -> n - 1`), clamped for coordinates more than one period away.
#[inline]
fn mirror(i: isize, n: usize) -> usize {
    let n = n as isize;
    let m = if i < 0 {
        -1 - i
    } else if i >= n {
        2 * n - i - 1
    } else {
        i
    };
    m.clamp(0, n - 1) as usize
}

/// Reusable buffers for SSIM and MS-SSIM of one geometry (no allocation per frame once
/// warmed up).
#[derive(Default)]
pub struct Ssim {
    reference: Image,
    distorted: Image,
    /// `float_ssim`'s down-scaled plane before it replaces the full-size one.
    small: Image,
    /// MS-SSIM pyramids (scale 0 is the input).
    ref_scales: Vec<Image>,
    dis_scales: Vec<Image>,
    /// SSIM work planes: means, squares and their filtered forms.
    mu_ref: Vec<f32>,
    mu_dis: Vec<f32>,
    sq_ref: Vec<f32>,
    sq_dis: Vec<f32>,
    cross: Vec<f32>,
    cache: Vec<f32>,
    /// A full-size product plane before filtering.
    full: Vec<f32>,
    /// A ladder's reference half of each MS-SSIM scale (made on first ladder use).
    ms_ref: Vec<RefHalf>,
}

/// The reference's half of one SSIM scale: its Gaussian-filtered plane and square.
#[derive(Default)]
struct RefHalf {
    mu: Vec<f32>,
    sq: Vec<f32>,
}

/// Scratch of the distorted half of one SSIM scale.
struct DisWork<'a> {
    mu: &'a mut Vec<f32>,
    sq: &'a mut Vec<f32>,
    cross: &'a mut Vec<f32>,
    cache: &'a mut Vec<f32>,
    full: &'a mut Vec<f32>,
}

/// Means of luminance, contrast and structure, and their product's mean (SSIM), of one scale.
#[derive(Debug, Clone, Copy)]
struct Lcs {
    ssim: f32,
    l: f32,
    c: f32,
    s: f32,
}

impl Ssim {
    /// Empty buffers; they grow to the frame size on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// libvmaf's `float_ssim` of two luma planes of the same size and depth.
    ///
    /// Returns the mean SSIM in [-1, 1] (1 for identical planes). Errors:
    /// [`FeatureError::FrameTooSmall`] when a side is below 11 samples after the automatic
    /// down-scaling (the window must fit at least once).
    pub fn float_ssim(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
    ) -> Result<f64, FeatureError> {
        let scale = float_ssim_scale(reference.width, reference.height)?;
        to_float(reference, &mut self.reference);
        to_float(distorted, &mut self.distorted);
        if scale > 1 {
            box_decimate(&self.reference, scale, &mut self.small);
            std::mem::swap(&mut self.reference, &mut self.small);
            box_decimate(&self.distorted, scale, &mut self.small);
            std::mem::swap(&mut self.distorted, &mut self.small);
        }
        let (r, d) = (
            std::mem::take(&mut self.reference),
            std::mem::take(&mut self.distorted),
        );
        let lcs = self.ssim_scale(&r, &d);
        self.reference = r;
        self.distorted = d;
        Ok(f64::from(lcs.ssim))
    }

    /// libvmaf's `float_ms_ssim` (Wang's MS-SSIM, five scales) of two luma planes of the
    /// same size and depth.
    ///
    /// Returns a value in [0, 1] for natural content (1 for identical planes; NaN only when a
    /// scale's mean contrast or structure is negative, as in libvmaf). Errors:
    /// [`FeatureError::FrameTooSmall`] below 176x176 (see [`ms_ssim_fits`]).
    pub fn float_ms_ssim(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
    ) -> Result<f64, FeatureError> {
        let (w, h) = (reference.width, reference.height);
        if !ms_ssim_fits(w, h) {
            return Err(ms_ssim_too_small(w, h));
        }
        let mut refs = std::mem::take(&mut self.ref_scales);
        let mut diss = std::mem::take(&mut self.dis_scales);
        refs.resize_with(MS_SSIM_SCALES, Image::default);
        diss.resize_with(MS_SSIM_SCALES, Image::default);
        to_float(reference, &mut refs[0]);
        to_float(distorted, &mut diss[0]);
        for i in 1..MS_SSIM_SCALES {
            let (done, rest) = refs.split_at_mut(i);
            lpf_decimate(&done[i - 1], &mut rest[0]);
            let (done, rest) = diss.split_at_mut(i);
            lpf_decimate(&done[i - 1], &mut rest[0]);
        }
        let mut means = [[0.0f32; 3]; MS_SSIM_SCALES];
        for (i, m) in means.iter_mut().enumerate() {
            let lcs = self.ssim_scale(&refs[i], &diss[i]);
            *m = [lcs.l, lcs.c, lcs.s];
        }
        self.ref_scales = refs;
        self.dis_scales = diss;
        Ok(ms_ssim_combine(&means))
    }

    /// SSIM of one scale with the Gaussian window over the valid region (IQA's `_iqa_ssim`
    /// with default arguments). Both images have the same size, at least 11x11.
    fn ssim_scale(&mut self, r: &Image, d: &Image) -> Lcs {
        let Self {
            mu_ref,
            mu_dis,
            sq_ref,
            sq_dis,
            cross,
            cache,
            full,
            ..
        } = self;
        let mut half = RefHalf {
            mu: std::mem::take(mu_ref),
            sq: std::mem::take(sq_ref),
        };
        ref_half(r, &mut half, cache, full);
        let work = DisWork {
            mu: mu_dis,
            sq: sq_dis,
            cross,
            cache,
            full,
        };
        let lcs = dis_half(r, d, &half, work);
        (*mu_ref, *sq_ref) = (half.mu, half.sq);
        lcs
    }

    /// [`Ssim::float_ssim`] of several distorted planes against one reference (a ladder):
    /// the reference's conversion, down-scaling and filtered mean and square once, then each
    /// plane's. One value per plane, in order, each equal bit for bit to
    /// [`Ssim::float_ssim`]'s for that pair (the same operations on the same values).
    ///
    /// Errors: as [`Ssim::float_ssim`].
    pub fn float_ssim_ladder(
        &mut self,
        reference: &LumaPlane,
        distorted: &[&LumaPlane],
    ) -> Result<Vec<f64>, FeatureError> {
        let scale = float_ssim_scale(reference.width, reference.height)?;
        to_float(reference, &mut self.reference);
        if scale > 1 {
            box_decimate(&self.reference, scale, &mut self.small);
            std::mem::swap(&mut self.reference, &mut self.small);
        }
        let mut half = RefHalf {
            mu: std::mem::take(&mut self.mu_ref),
            sq: std::mem::take(&mut self.sq_ref),
        };
        ref_half(&self.reference, &mut half, &mut self.cache, &mut self.full);
        let mut out = Vec::with_capacity(distorted.len());
        for d in distorted {
            to_float(d, &mut self.distorted);
            if scale > 1 {
                box_decimate(&self.distorted, scale, &mut self.small);
                std::mem::swap(&mut self.distorted, &mut self.small);
            }
            let work = DisWork {
                mu: &mut self.mu_dis,
                sq: &mut self.sq_dis,
                cross: &mut self.cross,
                cache: &mut self.cache,
                full: &mut self.full,
            };
            out.push(f64::from(
                dis_half(&self.reference, &self.distorted, &half, work).ssim,
            ));
        }
        (self.mu_ref, self.sq_ref) = (half.mu, half.sq);
        Ok(out)
    }

    /// [`Ssim::float_ms_ssim`] of several distorted planes against one reference (a ladder):
    /// the reference's pyramid and each scale's filtered mean and square once, then each
    /// plane's pyramid and scales. One value per plane, in order, each equal bit for bit to
    /// [`Ssim::float_ms_ssim`]'s for that pair.
    ///
    /// Errors: as [`Ssim::float_ms_ssim`].
    pub fn float_ms_ssim_ladder(
        &mut self,
        reference: &LumaPlane,
        distorted: &[&LumaPlane],
    ) -> Result<Vec<f64>, FeatureError> {
        let (w, h) = (reference.width, reference.height);
        if !ms_ssim_fits(w, h) {
            return Err(ms_ssim_too_small(w, h));
        }
        let mut refs = std::mem::take(&mut self.ref_scales);
        let mut diss = std::mem::take(&mut self.dis_scales);
        let mut halves = std::mem::take(&mut self.ms_ref);
        refs.resize_with(MS_SSIM_SCALES, Image::default);
        diss.resize_with(MS_SSIM_SCALES, Image::default);
        halves.resize_with(MS_SSIM_SCALES, RefHalf::default);
        to_float(reference, &mut refs[0]);
        for i in 1..MS_SSIM_SCALES {
            let (done, rest) = refs.split_at_mut(i);
            lpf_decimate(&done[i - 1], &mut rest[0]);
        }
        for (r, half) in refs.iter().zip(halves.iter_mut()) {
            ref_half(r, half, &mut self.cache, &mut self.full);
        }
        let mut out = Vec::with_capacity(distorted.len());
        for d in distorted {
            to_float(d, &mut diss[0]);
            for i in 1..MS_SSIM_SCALES {
                let (done, rest) = diss.split_at_mut(i);
                lpf_decimate(&done[i - 1], &mut rest[0]);
            }
            let mut means = [[0.0f32; 3]; MS_SSIM_SCALES];
            for (i, m) in means.iter_mut().enumerate() {
                let work = DisWork {
                    mu: &mut self.mu_dis,
                    sq: &mut self.sq_dis,
                    cross: &mut self.cross,
                    cache: &mut self.cache,
                    full: &mut self.full,
                };
                let lcs = dis_half(&refs[i], &diss[i], &halves[i], work);
                *m = [lcs.l, lcs.c, lcs.s];
            }
            out.push(ms_ssim_combine(&means));
        }
        self.ref_scales = refs;
        self.dis_scales = diss;
        self.ms_ref = halves;
        Ok(out)
    }
}

/// The reference's half of one SSIM scale: `r` and its square through the Gaussian window.
fn ref_half(r: &Image, half: &mut RefHalf, cache: &mut Vec<f32>, full: &mut Vec<f32>) {
    let (w, h) = (r.w, r.h);
    gauss_valid(&r.data, w, h, &mut half.mu, cache);
    full.clear();
    full.extend(r.data.iter().map(|&a| a * a));
    gauss_valid(full, w, h, &mut half.sq, cache);
}

/// The rest of one SSIM scale ([`Ssim::ssim_scale`]) given the reference's half `rh` of `r`:
/// `d`'s filtered mean and square and the filtered product, then the per-pixel terms and
/// their means.
fn dis_half(r: &Image, d: &Image, rh: &RefHalf, work: DisWork) -> Lcs {
    let (w, h) = (r.w, r.h);
    let (c1, c2, c3) = ssim_constants();
    let (dw, dh) = (w + 1 - GAUSS_LEN, h + 1 - GAUSS_LEN);
    let n = dw * dh;
    let DisWork {
        mu: mu_dis,
        sq: sq_dis,
        cross,
        cache,
        full,
    } = work;
    let (mu_ref, sq_ref) = (&rh.mu, &rh.sq);
    gauss_valid(&d.data, w, h, mu_dis, cache);
    full.clear();
    full.extend(d.data.iter().map(|&a| a * a));
    gauss_valid(full, w, h, sq_dis, cache);
    full.clear();
    full.extend(r.data.iter().zip(&d.data).map(|(&a, &b)| a * b));
    gauss_valid(full, w, h, cross, cache);
    let (mut sum, mut l_sum, mut c_sum, mut s_sum) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for i in 0..n {
        let (m1, m2) = (mu_ref[i], mu_dis[i]);
        let var1 = (sq_ref[i] - m1 * m1).max(0.0);
        let var2 = (sq_dis[i] - m2 * m2).max(0.0);
        let cov = cross[i] - m1 * m2;
        let sd12 = f64::from(var1 * var2).sqrt() as f32;
        let l = (2.0 * f64::from(m1) * f64::from(m2) + f64::from(c1))
            / f64::from(m1 * m1 + m2 * m2 + c1);
        let c = (2.0 * f64::from(sd12) + f64::from(c2)) / f64::from(var1 + var2 + c2);
        // Flat, identical regions: rounding can make the covariance slightly negative
        // while the deviations are 0; libvmaf then takes the structure term as 1.
        let cov = if cov < 0.0 && sd12 <= 0.0 { 0.0 } else { cov };
        let s = f64::from((cov + c3) / (sd12 + c3));
        sum += l * c * s;
        l_sum += l;
        c_sum += c;
        s_sum += s;
    }
    let nf = n as f64;
    Lcs {
        ssim: (sum / nf) as f32,
        l: (l_sum / nf) as f32,
        c: (c_sum / nf) as f32,
        s: (s_sum / nf) as f32,
    }
}

/// Samples as floats on an 8-bit scale: `sample / 2^(bpc - 8)` (libvmaf's `picture_copy`).
fn to_float(p: &LumaPlane, out: &mut Image) {
    out.resize(p.width, p.height);
    let div = (1u32 << p.bpc.saturating_sub(8)) as f32;
    for (y, dst) in out.data.chunks_exact_mut(p.width).enumerate() {
        if p.bpc <= 8 {
            for (d, &s) in dst.iter_mut().zip(p.row(y)) {
                *d = f32::from(s);
            }
        } else {
            for (d, &s) in dst.iter_mut().zip(p.row(y)) {
                *d = f32::from(s) / div;
            }
        }
    }
}

/// Output columns per block of the filters below: each block keeps its `f64` sums on the
/// stack, so the columns' sums advance side by side (vectorised) instead of one chain each.
const BLOCK: usize = 64;

/// Separable 11-tap Gaussian over the valid region of a `w` x `h` image (IQA's 1-D
/// convolution): horizontal pass into `cache` (full height), vertical pass into `out`,
/// `(w - 10) x (h - 10)`. Products in f32, sums in f64 (each output's taps added in order,
/// from 0), results rounded to f32.
fn gauss_valid(img: &[f32], w: usize, h: usize, out: &mut Vec<f32>, cache: &mut Vec<f32>) {
    let half = GAUSS_LEN / 2;
    let (dw, dh) = (w + 1 - GAUSS_LEN, h + 1 - GAUSS_LEN);
    let taps: [f32; GAUSS_LEN] = std::array::from_fn(|i| GAUSS[i.abs_diff(half)]);
    cache.clear();
    cache.resize(dw * h, 0.0);
    for (row, dst) in img.chunks_exact(w).zip(cache.chunks_exact_mut(dw)) {
        filter_blocks(dst, |x0, n, acc| {
            for (k, &t) in taps.iter().enumerate() {
                let src = &row[x0 + k..x0 + k + n];
                acc.iter_mut()
                    .zip(src)
                    .for_each(|(a, &p)| *a += f64::from(p * t));
            }
        });
    }
    out.clear();
    out.resize(dw * dh, 0.0);
    let cache = &*cache;
    for (y, dst) in out.chunks_exact_mut(dw).enumerate() {
        filter_blocks(dst, |x0, n, acc| {
            for (k, &t) in taps.iter().enumerate() {
                let src = &cache[(y + k) * dw + x0..][..n];
                acc.iter_mut()
                    .zip(src)
                    .for_each(|(a, &p)| *a += f64::from(p * t));
            }
        });
    }
}

/// `dst` in blocks of [`BLOCK`] columns: `sums(x0, n, acc)` adds the block's `n` columns
/// from `x0` into `acc` (zeroed), which are then rounded into `dst`.
#[inline]
fn filter_blocks(dst: &mut [f32], mut sums: impl FnMut(usize, usize, &mut [f64])) {
    for (b, block) in dst.chunks_mut(BLOCK).enumerate() {
        let mut acc = [0.0f64; BLOCK];
        let acc = &mut acc[..block.len()];
        sums(b * BLOCK, block.len(), acc);
        block
            .iter_mut()
            .zip(acc.iter())
            .for_each(|(d, &a)| *d = a as f32);
    }
}

/// IQA's `_iqa_decimate` with a `taps x taps` kernel `k(dy, dx)` whose window spans
/// `-taps/2 ..= taps/2` (even `taps`: one less on the right), mirrored edges, products in
/// f32 and sums in f64 (row by row, each output's taps added in order from 0): output
/// pixel (x, y) is the filter at input (x * factor, y * factor).
fn decimate(
    src: &Image,
    factor: usize,
    taps: usize,
    k: impl Fn(usize, usize) -> f32,
    out: &mut Image,
) {
    let (sw, sh) = (decimated(src.w, factor), decimated(src.h, factor));
    out.resize(sw, sh);
    let half = (taps / 2) as isize;
    let last = half - isize::from(taps.is_multiple_of(2));
    // Output columns whose window lies inside the row (no mirroring).
    let lo = (half as usize).div_ceil(factor).min(sw);
    let hi = (src.w.saturating_sub(1 + last as usize) / factor + 1).clamp(lo, sw);
    for (y, dst) in out.data.chunks_exact_mut(sw).enumerate() {
        let cy = (y * factor) as isize;
        // Start of the source row of window row `v` (mirrored).
        let rows = || (-half..=last).map(|v| mirror(cy + v, src.h) * src.w);
        let edge = |x: usize| -> f32 {
            let cx = (x * factor) as isize;
            let mut sum = 0.0f64;
            for (ky, row) in rows().enumerate() {
                for (kx, u) in (-half..=last).enumerate() {
                    let px = src.data[row + mirror(cx + u, src.w)];
                    sum += f64::from(px * k(ky, kx));
                }
            }
            sum as f32
        };
        for x in (0..lo).chain(hi..sw) {
            dst[x] = edge(x);
        }
        filter_blocks(&mut dst[lo..hi], |x0, n, acc| {
            let cx = (lo + x0) * factor;
            for (ky, row) in rows().enumerate() {
                for (kx, u) in (-half..=last).enumerate() {
                    let tap = k(ky, kx);
                    let start = (row + cx).wrapping_add_signed(u);
                    let src = &src.data[start..start + (n - 1) * factor + 1];
                    acc.iter_mut()
                        .zip(src.iter().step_by(factor))
                        .for_each(|(a, &p)| *a += f64::from(p * tap));
                }
            }
        });
    }
}

/// MS-SSIM's halving with the 9x9 low-pass filter.
fn lpf_decimate(src: &Image, out: &mut Image) {
    decimate(src, 2, 9, |ky, kx| LPF[ky.abs_diff(4)][kx.abs_diff(4)], out);
}

/// `float_ssim`'s down-scaling: a `scale x scale` box filter (each tap `1 / scale`^2).
fn box_decimate(src: &Image, scale: usize, out: &mut Image) {
    let tap = box_tap(scale);
    decimate(src, scale, scale, |_, _| tap, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_ssim_minimum_is_libvmafs() {
        assert!(ms_ssim_fits(176, 176));
        assert!(!ms_ssim_fits(175, 400));
        assert!(!ms_ssim_fits(160, 90));
        assert!(ms_ssim_fits(576, 324));
        assert_eq!(auto_scale(576, 324), 1);
        assert_eq!(auto_scale(1920, 1080), 4);
        assert_eq!(auto_scale(3840, 2160), 8);
    }

    /// The filters as IQA writes them, one output at a time (the form before the blocks).
    fn gauss_reference(img: &[f32], w: usize, h: usize) -> Vec<f32> {
        let half = GAUSS_LEN / 2;
        let (dw, dh) = (w + 1 - GAUSS_LEN, h + 1 - GAUSS_LEN);
        let taps: [f32; GAUSS_LEN] = std::array::from_fn(|i| GAUSS[i.abs_diff(half)]);
        let mut cache = vec![0.0f32; dw * h];
        for y in 0..h {
            for x in 0..dw {
                let mut sum = 0.0f64;
                for (k, &t) in taps.iter().enumerate() {
                    sum += f64::from(img[y * w + x + k] * t);
                }
                cache[y * dw + x] = sum as f32;
            }
        }
        let mut out = vec![0.0f32; dw * dh];
        for y in 0..dh {
            for x in 0..dw {
                let mut sum = 0.0f64;
                for (k, &t) in taps.iter().enumerate() {
                    sum += f64::from(cache[(y + k) * dw + x] * t);
                }
                out[y * dw + x] = sum as f32;
            }
        }
        out
    }

    fn decimate_reference(
        src: &Image,
        factor: usize,
        taps: usize,
        k: impl Fn(usize, usize) -> f32,
    ) -> Vec<f32> {
        let (sw, sh) = (decimated(src.w, factor), decimated(src.h, factor));
        let half = (taps / 2) as isize;
        let last = half - isize::from(taps.is_multiple_of(2));
        let mut out = vec![0.0f32; sw * sh];
        for y in 0..sh {
            for x in 0..sw {
                let (cx, cy) = ((x * factor) as isize, (y * factor) as isize);
                let mut sum = 0.0f64;
                for (ky, v) in (-half..=last).enumerate() {
                    let row = mirror(cy + v, src.h) * src.w;
                    for (kx, u) in (-half..=last).enumerate() {
                        let px = src.data[row + mirror(cx + u, src.w)];
                        sum += f64::from(px * k(ky, kx));
                    }
                }
                out[y * sw + x] = sum as f32;
            }
        }
        out
    }

    /// The blocked filters give every output bit for bit as the one-at-a-time forms, at
    /// sizes around the block and window widths, for MS-SSIM's 9x9 halving and SSIM's box
    /// decimations (even and odd factors).
    #[test]
    fn blocked_filters_equal_direct_forms() {
        let mut rng = crate::features::XorShift(0x2545_f491_4f6c_dd1d);
        for (w, h) in [(11, 11), (12, 30), (75, 19), (130, 41), (203, 67)] {
            let img = Image {
                data: (0..w * h)
                    .map(|_| (rng.next_u64() % 25600) as f32 / 100.0)
                    .collect(),
                w,
                h,
            };
            let (mut out, mut cache) = (Vec::new(), Vec::new());
            gauss_valid(&img.data, w, h, &mut out, &mut cache);
            assert_eq!(out, gauss_reference(&img.data, w, h), "gauss {w}x{h}");
            let lpf = |ky: usize, kx: usize| LPF[ky.abs_diff(4)][kx.abs_diff(4)];
            let mut d = Image::default();
            decimate(&img, 2, 9, lpf, &mut d);
            assert_eq!(d.data, decimate_reference(&img, 2, 9, lpf), "lpf {w}x{h}");
            for scale in [2, 3, 4] {
                let tap = box_tap(scale);
                decimate(&img, scale, scale, |_, _| tap, &mut d);
                let want = decimate_reference(&img, scale, scale, |_, _| tap);
                assert_eq!(d.data, want, "box {scale} {w}x{h}");
            }
        }
    }

    /// The ladder forms against the pair forms, bit for bit: several renditions (a near
    /// copy, a coarse copy, noise) of one reference, at a size without and one with
    /// `float_ssim`'s down-scaling, 8 and 10 bits, ladders of one and of three renditions.
    #[test]
    fn ladder_equals_pairs() {
        for (w, h, bpc) in [(180, 177, 8), (203, 190, 10), (400, 390, 8)] {
            let mut rng = crate::features::XorShift(0x9e37_79b9 + w as u64);
            let max = (1u64 << bpc) - 1;
            let r: Vec<u16> = (0..w * h)
                .map(|i| (((i % w) * 3 + (i / w) * 2) as u64 % (max + 1)) as u16)
                .collect();
            let ds: Vec<Vec<u16>> = (0..3)
                .map(|k| {
                    r.iter()
                        .enumerate()
                        .map(|(i, &v)| {
                            let n = rng.next_u64();
                            let v = match k {
                                0 => u64::from(v) + n % 5,
                                1 => u64::from(r[i - i % 2]),
                                _ => n,
                            };
                            (v % (max + 1)) as u16
                        })
                        .collect()
                })
                .collect();
            let rp = LumaPlane::packed(&r, w, h, bpc).unwrap();
            let dps: Vec<LumaPlane> = ds
                .iter()
                .map(|d| LumaPlane::packed(d, w, h, bpc).unwrap())
                .collect();
            let mut s = Ssim::new();
            let pairs: Vec<(f64, f64)> = dps
                .iter()
                .map(|d| {
                    (
                        s.float_ssim(&rp, d).unwrap(),
                        s.float_ms_ssim(&rp, d).unwrap(),
                    )
                })
                .collect();
            for n in [1, dps.len()] {
                let refs: Vec<&LumaPlane> = dps.iter().take(n).collect();
                let ssim = s.float_ssim_ladder(&rp, &refs).unwrap();
                let ms = s.float_ms_ssim_ladder(&rp, &refs).unwrap();
                assert_eq!(ssim.len(), n);
                assert_eq!(ms.len(), n);
                for (k, p) in pairs.iter().take(n).enumerate() {
                    let what = format!("{w}x{h} {bpc}-bit rendition {k} of {n}");
                    assert_eq!(ssim[k].to_bits(), p.0.to_bits(), "float_ssim {what}");
                    assert_eq!(ms[k].to_bits(), p.1.to_bits(), "float_ms_ssim {what}");
                }
            }
        }
    }

    #[test]
    fn identical_planes_score_one() {
        let (w, h) = (200, 180);
        let data: Vec<u16> = (0..w * h).map(|i| ((i * 37) % 251) as u16).collect();
        let p = LumaPlane::packed(&data, w, h, 8).unwrap();
        let mut s = Ssim::new();
        assert!((s.float_ssim(&p, &p).unwrap() - 1.0).abs() < 1e-6);
        assert!((s.float_ms_ssim(&p, &p).unwrap() - 1.0).abs() < 1e-6);
    }
}
