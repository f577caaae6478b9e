//! The CPU half of CAMBI: the reference the CUDA half is tested against, and the CPU
//! fallback.
//!
//! Source of the algorithm: Netflix/vmaf v3.2.0, libvmaf/src/feature/cambi.c
//! (`cambi_preprocessing`, `get_spatial_mask`, `decimate`, `filter_mode`,
//! `calculate_c_values`, `spatial_pooling`, `cambi_score`). The c-values use libvmaf's
//! sliding per-column histograms; the pooling sums the top-k c-values exactly (see
//! [`super::score_from_sums`]).

use super::params::{CambiConfig, Params, CONTRAST_WEIGHTS, MASK_FILTER};
use super::{score_from_sums, FEATURE, FIXED_ONE, NUM_SCALES};
use crate::video::frame::{FeatureError, LumaPlane};

/// CAMBI's CPU scratch for one geometry.
pub struct Cambi {
    p: Params,
    /// The preprocessed 10-bit image at the encode size, then each scale's image (packed,
    /// row pitch = the scale's width).
    img: Vec<u16>,
    /// The next scale's image (ping-pong with `img`).
    next: Vec<u16>,
    /// Spatial mask at the encode size (0 / 1), then decimated per scale like the image.
    mask: Vec<u8>,
    /// The mask's next scale.
    mask_next: Vec<u8>,
    /// Zero-derivative flags at the encode size.
    deriv: Vec<u8>,
    /// Sliding histograms: `band_size` rows of one counter per column.
    hist: Vec<u16>,
    /// The c-values of one scale, in units of 2^-24.
    cvals: Vec<u64>,
}

/// The value of three that occurs at least twice, else the smallest (libvmaf's `mode3`).
#[inline]
pub fn mode3(a: u16, b: u16, c: u16) -> u16 {
    if a == b || a == c {
        a
    } else if b == c {
        b
    } else {
        a.min(b).min(c)
    }
}

/// One pixel's c-value from its window's histogram counts, libvmaf's `c_value_pixel` (float
/// arithmetic in libvmaf's order). `v`: the pixel's 10-bit value; `count(k)`: masked pixels of
/// value `v + k` in its window for `k` in `-num_diffs..=num_diffs` (0 outside the band).
#[inline]
pub fn c_value(p: &Params, v: u16, count: impl Fn(i32) -> u16) -> f32 {
    let nd = p.num_diffs;
    let value = i32::from(v) + nd as i32;
    let p0 = i32::from(count(0));
    let mut c = 0.0f32;
    for (d, &weight) in CONTRAST_WEIGHTS.iter().enumerate().take(nd) {
        let step = d as i32 + 1;
        if value <= i32::from(p.tvi[d]) && value + step > i32::from(p.vlt_luma) {
            let (p1, p2) = (i32::from(count(step)), i32::from(count(-step)));
            let pm = if p1 > p2 { p1 } else { p2 };
            let val = (weight * p0 * pm) as f32 * p.lut[(pm + p0) as usize];
            if val > c {
                c = val;
            }
        }
    }
    c
}

/// Sum of the `k` largest of `vals` (destroys their order); exact, wrapping never reached
/// (at most 2^23 values below 2^38).
pub fn topk_sum(vals: &mut [u64], k: usize) -> u64 {
    let k = k.min(vals.len());
    let nonzero = vals.iter().filter(|&&v| v != 0).count();
    if nonzero <= k {
        return vals.iter().sum();
    }
    if k == 0 {
        return 0;
    }
    let (top, kth, _) = vals.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
    top.iter().sum::<u64>() + *kth
}

impl Cambi {
    /// Scratch for `width` x `height` frames of `bpc` bits with options `cfg`.
    ///
    /// Errors: as [`Params::new`].
    pub fn new(
        cfg: &CambiConfig,
        width: usize,
        height: usize,
        bpc: u32,
    ) -> Result<Self, FeatureError> {
        FeatureError::check_new(FEATURE, (width, height, bpc), (1, 1))?;
        let p = Params::new(cfg, width, height, bpc)?;
        let n = p.enc.0 * p.enc.1;
        let (s0w, s0h) = p.scales[0];
        Ok(Self {
            img: vec![0; n],
            next: vec![0; s0w * s0h],
            mask: vec![0; n],
            mask_next: vec![0; s0w * s0h],
            deriv: vec![0; n],
            hist: vec![0; usize::from(p.band_size) * p.enc.0],
            cvals: vec![0; s0w * s0h],
            p,
        })
    }

    /// The resolved parameters.
    pub fn params(&self) -> &Params {
        &self.p
    }

    /// The CAMBI score of `plane` (the distorted luma, of the geometry given to
    /// [`Cambi::new`]), in `[0, cambi_max_val]`.
    ///
    /// Errors: a plane of another geometry.
    pub fn score(&mut self, plane: &LumaPlane) -> Result<f64, FeatureError> {
        FeatureError::check_plane(FEATURE, self.p.input, plane)?;
        let sums = self.scale_sums(plane);
        Ok(score_from_sums(
            &sums,
            &self.p.topk_counts(),
            self.p.window_pixels(),
            self.p.max_val,
        ))
    }

    /// Each scale's top-k sum of c-values in units of 2^-24 (what the CUDA half reads back).
    /// `plane` must have the geometry given to [`Cambi::new`] (checked by [`Cambi::score`]).
    pub fn scale_sums(&mut self, plane: &LumaPlane) -> [u64; NUM_SCALES] {
        self.preprocess(plane);
        self.spatial_mask();
        let (mut w, mut h) = self.p.enc;
        let mut sums = [0u64; NUM_SCALES];
        for (s, sum) in sums.iter_mut().enumerate() {
            let (sw, sh) = self.p.scales[s];
            if (sw, sh) != (w, h) {
                decimate(&self.img, w, &mut self.next, sw, sh);
                decimate(&self.mask, w, &mut self.mask_next, sw, sh);
                std::mem::swap(&mut self.img, &mut self.next);
                std::mem::swap(&mut self.mask, &mut self.mask_next);
                (w, h) = (sw, sh);
            }
            filter_mode(&mut self.img[..w * h], w, h, &mut self.next);
            self.c_values(w, h);
            *sum = topk_sum(&mut self.cvals[..w * h], self.p.topk_count(s));
        }
        // Keep the large buffers where they belong for the next frame.
        if self.img.len() < self.next.len() {
            std::mem::swap(&mut self.img, &mut self.next);
            std::mem::swap(&mut self.mask, &mut self.mask_next);
        }
        sums
    }

    /// Resize to the encode size, 10 bits, anti-dithering (`cambi_preprocessing`).
    fn preprocess(&mut self, plane: &LumaPlane) {
        let (ew, eh) = self.p.enc;
        let p = &self.p;
        match &p.maps {
            None => {
                for (y, dst) in self.img.chunks_exact_mut(ew).enumerate().take(eh) {
                    for (d, &s) in dst.iter_mut().zip(plane.row(y)) {
                        *d = p.to_10bit(s);
                    }
                }
            }
            Some((xs, ys)) => {
                for (dst, &sy) in self.img.chunks_exact_mut(ew).zip(ys) {
                    let row = plane.row(sy as usize);
                    for (d, &sx) in dst.iter_mut().zip(xs) {
                        *d = p.to_10bit(row[sx as usize]);
                    }
                }
            }
        }
        if p.anti_dither {
            anti_dither(&mut self.img, ew, eh);
        }
    }

    /// The spatial mask at the encode size (`get_spatial_mask`): 1 where more than
    /// `mask_index` of the 7x7 pixels around (zero outside the frame) equal their right and
    /// lower neighbours (the last column / row count as equal).
    fn spatial_mask(&mut self) {
        let (w, h) = self.p.enc;
        let img = &self.img;
        for y in 0..h {
            let row = &img[y * w..(y + 1) * w];
            let below = (y + 1 < h).then(|| &img[(y + 1) * w..(y + 2) * w]);
            let out = &mut self.deriv[y * w..(y + 1) * w];
            for x in 0..w {
                let hz = x + 1 == w || row[x] == row[x + 1];
                let vt = below.is_none_or(|b| row[x] == b[x]);
                out[x] = u8::from(hz && vt);
            }
        }
        let r = MASK_FILTER / 2;
        let mut col = vec![0u32; w];
        let mut prefix = vec![0u32; w + 1];
        // Column sums over rows -r..=r-1 (rows above 0 count 0) before the first output row.
        for y in 0..r.min(h) {
            for (c, &d) in col.iter_mut().zip(&self.deriv[y * w..(y + 1) * w]) {
                *c += u32::from(d);
            }
        }
        let thr = self.p.mask_index;
        for y in 0..h {
            if y + r < h {
                let add = &self.deriv[(y + r) * w..(y + r + 1) * w];
                col.iter_mut()
                    .zip(add)
                    .for_each(|(c, &d)| *c += u32::from(d));
            }
            if y > r {
                let sub = &self.deriv[(y - r - 1) * w..(y - r) * w];
                col.iter_mut()
                    .zip(sub)
                    .for_each(|(c, &d)| *c -= u32::from(d));
            }
            for x in 0..w {
                prefix[x + 1] = prefix[x] + col[x];
            }
            let out = &mut self.mask[y * w..(y + 1) * w];
            for (x, m) in out.iter_mut().enumerate() {
                let sum = prefix[(x + r + 1).min(w)] - prefix[x.saturating_sub(r)];
                *m = u8::from(sum > thr);
            }
        }
    }

    /// Each pixel's c-value at one scale (`calculate_c_values`), in units of 2^-24, into
    /// `cvals[..w * h]`.
    fn c_values(&mut self, w: usize, h: usize) {
        let p = &self.p;
        let pad = p.window / 2;
        let (base, size) = (p.band_base, p.band_size);
        let hist = &mut self.hist[..usize::from(size) * w];
        hist.fill(0);
        let img = &self.img;
        let mask = &self.mask;
        let band = |y: usize, x: usize| -> Option<usize> {
            let i = y * w + x;
            let off = img[i].wrapping_sub(base);
            (mask[i] != 0 && off < size).then_some(usize::from(off))
        };
        let update = |hist: &mut [u16], row: usize, x: usize, inc: bool| {
            let (lo, hi) = (x.saturating_sub(pad), (x + pad + 1).min(w));
            let cells = &mut hist[row * w + lo..row * w + hi];
            if inc {
                cells.iter_mut().for_each(|c| *c += 1);
            } else {
                cells.iter_mut().for_each(|c| *c -= 1);
            }
        };
        for y in 0..pad.min(h) {
            for x in 0..w {
                if let Some(b) = band(y, x) {
                    update(hist, b, x, true);
                }
            }
        }
        for y in 0..h {
            let add_row = (y + pad < h).then_some(y + pad);
            let sub_row = (y > pad).then(|| y - pad - 1);
            for x in 0..w {
                let add = add_row.and_then(|r| band(r, x));
                let sub = sub_row.and_then(|r| band(r, x));
                if add.is_some() && add == sub {
                    continue;
                }
                if let Some(b) = sub {
                    update(hist, b, x, false);
                }
                if let Some(b) = add {
                    update(hist, b, x, true);
                }
            }
            let out = &mut self.cvals[y * w..(y + 1) * w];
            for (x, o) in out.iter_mut().enumerate() {
                *o = match band(y, x) {
                    None => 0,
                    Some(b) => {
                        let count = |k: i32| -> u16 {
                            let r = b as i32 + k;
                            if r < 0 || r >= i32::from(size) {
                                0
                            } else {
                                hist[r as usize * w + x]
                            }
                        };
                        (c_value(p, img[y * w + x], count) * FIXED_ONE) as u64
                    }
                };
            }
        }
    }
}

/// Every other sample of every other row: `dst` (`dw` x `dh`) from `src` (row pitch `sw`).
fn decimate<T: Copy>(src: &[T], sw: usize, dst: &mut [T], dw: usize, dh: usize) {
    for (y, row) in dst.chunks_exact_mut(dw).take(dh).enumerate() {
        let s = &src[2 * y * sw..];
        for (x, d) in row.iter_mut().enumerate() {
            *d = s[2 * x];
        }
    }
}

/// libvmaf's 2x2 anti-dithering average, in place (`anti_dithering_filter`): each sample the
/// mean (rounded down) of itself and its right, lower and lower-right neighbours; the last
/// column and row average two samples, the last sample stays.
fn anti_dither(img: &mut [u16], w: usize, h: usize) {
    for y in 0..h {
        let last_row = y + 1 == h;
        for x in 0..w {
            let i = y * w + x;
            let last_col = x + 1 == w;
            img[i] = match (last_row, last_col) {
                (false, false) => {
                    let s = u32::from(img[i])
                        + u32::from(img[i + 1])
                        + u32::from(img[i + w])
                        + u32::from(img[i + w + 1]);
                    (s >> 2) as u16
                }
                (false, true) => ((u32::from(img[i]) + u32::from(img[i + w])) >> 1) as u16,
                (true, false) => ((u32::from(img[i]) + u32::from(img[i + 1])) >> 1) as u16,
                (true, true) => img[i],
            };
        }
    }
}

/// libvmaf's 3x3 mode filter (`filter_mode`), in place on a `w` x `h` image: rows 1..h-1
/// become the vertical [`mode3`] of the horizontal `mode3` of the rows above, at and below
/// (the first and last column copied horizontally); the first and last rows stay. `scratch`
/// holds at least `3 * w` samples.
fn filter_mode(img: &mut [u16], w: usize, h: usize, scratch: &mut [u16]) {
    if h < 3 {
        return;
    }
    let (lines, _) = scratch.split_at_mut(3 * w);
    let horizontal = |src: &[u16], dst: &mut [u16]| {
        dst[0] = src[0];
        for x in 1..w.saturating_sub(1) {
            dst[x] = mode3(src[x - 1], src[x], src[x + 1]);
        }
        dst[w - 1] = src[w - 1];
    };
    for y in 0..h {
        let slot = y % 3;
        horizontal(
            &img[y * w..(y + 1) * w],
            &mut lines[slot * w..(slot + 1) * w],
        );
        if y > 1 {
            let dst = &mut img[(y - 1) * w..y * w];
            for (x, d) in dst.iter_mut().enumerate() {
                *d = mode3(lines[x], lines[w + x], lines[2 * w + x]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_of_three() {
        assert_eq!(mode3(1, 2, 1), 1);
        assert_eq!(mode3(2, 1, 1), 1);
        assert_eq!(mode3(3, 2, 1), 1);
        assert_eq!(mode3(5, 5, 5), 5);
    }

    #[test]
    fn topk_is_exact() {
        let mut v = vec![5, 0, 3, 9, 0, 7];
        assert_eq!(topk_sum(&mut v, 2), 16);
        let mut v = vec![5, 0, 3, 9, 0, 7];
        assert_eq!(topk_sum(&mut v, 5), 24);
    }

    #[test]
    fn flat_frame_scores_zero() {
        let cfg = CambiConfig::default();
        let mut c = Cambi::new(&cfg, 256, 256, 8).unwrap();
        let data = vec![100u16; 256 * 256];
        let plane = LumaPlane::packed(&data, 256, 256, 8).unwrap();
        assert_eq!(c.score(&plane).unwrap(), 0.0);
    }
}
