//! The CPU half of CAMBI: the reference the CUDA half is tested against, and the CPU
//! fallback.
//!
//! Source of the algorithm: Netflix/vmaf v3.2.0, libvmaf/src/feature/cambi.c
//! (`cambi_preprocessing`, `get_spatial_mask`, `decimate`, `filter_mode`,
//! `calculate_c_values`, `spatial_pooling`, `cambi_score`). The c-values use libvmaf's
//! sliding per-column histograms; the pooling sums the top-k c-values exactly (see
//! [`super::score_from_sums`]).
//!
//! Written for the compiler's vectoriser: the anti-dithering row by row into a scratch
//! line, the spatial mask as `u8` sliding sums over a ring of derivative rows, the
//! histograms padded so that every window update has one length. `reference.rs` holds the
//! direct forms the unit tests compare every scale's sum with.

use super::params::{score_from_sums, FEATURE, FIXED_ONE, NUM_SCALES};
use super::params::{CambiConfig, Params, CONTRAST_WEIGHTS, MASK_FILTER};
use crate::video::frame::{FeatureError, LumaPlane};

#[cfg(test)]
mod reference;

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
    /// Zero-derivative flags of the last `MASK_FILTER + 1` rows at the encode size (row `y`
    /// in slot `y % (MASK_FILTER + 1)`).
    deriv: Vec<u8>,
    /// The spatial mask's column sums (each at most `MASK_FILTER`) and their horizontal
    /// window sums: two rows of the encode width.
    col: Vec<u8>,
    /// One row of the encode width (the anti-dithering's output row).
    line: Vec<u16>,
    /// Each pixel's band index at one scale (its 10-bit value minus `band_base`), or
    /// [`NO_BAND`] where it is masked out or outside the band.
    bins: Vec<u16>,
    /// Sliding histograms: one row of counters per band value plus `num_diffs` zero rows
    /// above and below, each row `window - 1` counters longer than the scale's width (the
    /// window's half on both sides) so that every window update has the same length.
    hist: Vec<u16>,
    /// The c-values of one scale, in units of 2^-24.
    cvals: Vec<u64>,
}

/// [`Cambi::bins`] of a pixel that has no c-value: masked out or outside the band of
/// values that can matter (the band is at most 1024 wide).
const NO_BAND: u16 = u16::MAX;

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
#[inline(always)]
pub fn c_value(p: &Params, v: u16, count: impl Fn(i32) -> u16) -> f32 {
    let nd = p.num_diffs;
    let value = i32::from(v) + nd as i32;
    let p0 = i32::from(count(0));
    let mut c = 0.0f32;
    for (d, &weight) in CONTRAST_WEIGHTS.iter().enumerate().take(nd) {
        let step = d as i32 + 1;
        if difference_counts(p, value, d) {
            let (p1, p2) = (i32::from(count(step)), i32::from(count(-step)));
            let val = contrast(p, weight, p0, p1.max(p2));
            if val > c {
                c = val;
            }
        }
    }
    c
}

/// Whether difference `d` (a step of `d + 1` codes) counts for a pixel of 10-bit value
/// `value - num_diffs`: the step is visible there (`tvi`) and reaches above the visibility
/// threshold (`vlt_luma`).
#[inline(always)]
fn difference_counts(p: &Params, value: i32, d: usize) -> bool {
    value <= i32::from(p.tvi[d]) && value + d as i32 + 1 > i32::from(p.vlt_luma)
}

/// One difference's term of a c-value, in libvmaf's `f32` order: `weight * p0 * pm` (an exact
/// integer) times the reciprocal of `p0 + pm` from the table.
#[inline(always)]
fn contrast(p: &Params, weight: i32, p0: i32, pm: i32) -> f32 {
    (weight * p0 * pm) as f32 * p.lut[(pm + p0) as usize]
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
        let (ew, eh) = p.enc;
        let (s0w, s0h) = p.scales[0];
        let hist_rows = usize::from(p.band_size) + 2 * p.num_diffs;
        Ok(Self {
            img: vec![0; ew * eh],
            next: vec![0; s0w * s0h],
            mask: vec![0; ew * eh],
            mask_next: vec![0; s0w * s0h],
            deriv: vec![0; (MASK_FILTER + 1) * ew],
            col: vec![0; 2 * ew],
            line: vec![0; ew],
            bins: vec![0; s0w * s0h],
            hist: vec![0; hist_rows * (s0w + p.window - 1)],
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
        let img = &mut self.img[..ew * eh];
        match &p.maps {
            None => {
                for (y, dst) in img.chunks_exact_mut(ew).enumerate() {
                    to_10bit_row(plane.row(y), dst, p.input.2);
                }
            }
            Some((xs, ys)) => {
                for (dst, &sy) in img.chunks_exact_mut(ew).zip(ys) {
                    let row = plane.row(sy as usize);
                    for (d, &sx) in dst.iter_mut().zip(xs) {
                        *d = p.to_10bit(row[sx as usize]);
                    }
                }
            }
        }
        if p.anti_dither {
            anti_dither(img, ew, eh, &mut self.line);
        }
    }

    /// The spatial mask at the encode size (`get_spatial_mask`): 1 where more than
    /// `mask_index` of the 7x7 pixels around (zero outside the frame) equal their right and
    /// lower neighbours (the last column / row count as equal).
    ///
    /// Sliding column sums over a ring of zero-derivative rows, then each row's horizontal
    /// window sums; every count is at most 49, so all of it runs in `u8` lanes.
    fn spatial_mask(&mut self) {
        let (w, h) = self.p.enc;
        let r = MASK_FILTER / 2;
        let ring = MASK_FILTER + 1;
        let thr = self.p.mask_index;
        let img = &self.img[..w * h];
        let (col, sums) = self.col.split_at_mut(w);
        col.fill(0);
        // Column sums over rows -r..=r-1 (rows above 0 count 0) before the first output row.
        for y in 0..r.min(h) {
            let d = &mut self.deriv[(y % ring) * w..][..w];
            zero_derivative_row(img, w, h, y, d);
            add_row(col, d);
        }
        for y in 0..h {
            if y + r < h {
                let d = &mut self.deriv[((y + r) % ring) * w..][..w];
                zero_derivative_row(img, w, h, y + r, d);
                add_row(col, d);
            }
            if y > r {
                sub_row(col, &self.deriv[((y - r - 1) % ring) * w..][..w]);
            }
            let out = &mut self.mask[y * w..(y + 1) * w];
            window_sums(col, sums, r);
            threshold_row(sums, thr, out);
        }
    }

    /// Each pixel's c-value at one scale (`calculate_c_values`), in units of 2^-24, into
    /// `cvals[..w * h]`.
    ///
    /// libvmaf's sliding histograms: one counter per band value and column, holding how many
    /// masked pixels of that value lie in the column's window of rows; moving down a row adds
    /// the entering row's pixels to, and takes the leaving row's from, the `window` columns
    /// around each of them.
    fn c_values(&mut self, w: usize, h: usize) {
        let Self {
            p,
            img,
            mask,
            bins,
            hist,
            cvals,
            ..
        } = self;
        c_values(p, w, h, img, mask, bins, hist, cvals);
    }
}

/// [`Cambi::c_values`] on the scratch buffers, built for AVX-512, AVX2 and SSE4.1 (the widest
/// the CPU runs, picked at run time): the window updates are 16-counter steps, one 256-bit add
/// where AVX2 runs, and runs of [`RUN`] pixels of one band value take [`run_c_values`].
/// Integer steps and `f32` arithmetic in libvmaf's order (never contracted), so every build
/// gives the same values. Measured on 2160p content with `vmaf_v1.0.16_3d0h`'s CAMBI options
/// (the build machine, one thread, `scale_sums` timed alone): 27.6 -> 24.5 ms per frame, the
/// medians of 9 and 6 runs.
#[allow(clippy::too_many_arguments)]
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
fn c_values(
    p: &Params,
    w: usize,
    h: usize,
    img: &[u16],
    mask: &[u8],
    bins: &mut [u16],
    hist: &mut [u16],
    cvals: &mut [u64],
) {
    let pad = p.window / 2;
    let nd = p.num_diffs;
    let pitch = w + 2 * pad;
    let rows = usize::from(p.band_size) + 2 * nd;
    let hist = &mut hist[..rows * pitch];
    hist.fill(0);
    let bins = &mut bins[..w * h];
    band_bins(&img[..w * h], &mask[..w * h], p, bins);
    let img = &img[..w * h];
    let bins = &*bins;
    // Counter of band value `b` in column `x` (the window centred there starts at `x`).
    let window = |b: u16, x: usize| (usize::from(b) + nd) * pitch + x;
    for row in bins.chunks_exact(w).take(pad.min(h)) {
        for (x, &b) in row.iter().enumerate() {
            if b != NO_BAND {
                update_window(&mut hist[window(b, x)..][..p.window], 1);
            }
        }
    }
    for y in 0..h {
        let add_row = (y + pad < h).then(|| &bins[(y + pad) * w..][..w]);
        let sub_row = (y > pad).then(|| &bins[(y - pad - 1) * w..][..w]);
        for x in 0..w {
            let add = add_row.map_or(NO_BAND, |r| r[x]);
            let sub = sub_row.map_or(NO_BAND, |r| r[x]);
            if add == sub {
                continue;
            }
            if sub != NO_BAND {
                update_window(&mut hist[window(sub, x)..][..p.window], u16::MAX);
            }
            if add != NO_BAND {
                update_window(&mut hist[window(add, x)..][..p.window], 1);
            }
        }
        let out = &mut cvals[y * w..(y + 1) * w];
        let (brow, vrow) = (&bins[y * w..(y + 1) * w], &img[y * w..(y + 1) * w]);
        let mut x = 0;
        while x < w {
            let b = brow[x];
            if b == NO_BAND {
                out[x] = 0;
                x += 1;
                continue;
            }
            // The counter of the window centred on `x` for value `v + k`.
            let at = window(b, x) + pad;
            if x + RUN <= w && brow[x..x + RUN].iter().all(|&c| c == b) {
                run_c_values(p, vrow[x], hist, at, pitch, &mut out[x..x + RUN]);
                x += RUN;
                continue;
            }
            let count = |k: i32| hist[(at as isize + k as isize * pitch as isize) as usize];
            out[x] = (c_value(p, vrow[x], count) * FIXED_ONE) as u64;
            x += 1;
        }
    }
}

/// Pixels per run of [`run_c_values`].
const RUN: usize = 8;

/// [`c_value`] (in units of 2^-24) of `RUN` neighbouring pixels of one band value (so of one
/// 10-bit value `v`) into `out`: their counters are `RUN` neighbours in each histogram row
/// (`at`: the first pixel's counter of value `v`, `pitch`: the row length), and which of the
/// differences count depends on `v` alone, so the pixels are computed side by side with no
/// per-pixel branch. Same arithmetic in the same order as [`c_value`].
#[inline(always)]
fn run_c_values(p: &Params, v: u16, hist: &[u16], at: usize, pitch: usize, out: &mut [u64]) {
    let nd = p.num_diffs;
    let value = i32::from(v) + nd as i32;
    let mut p0 = [0i32; RUN];
    for (d, &s) in p0.iter_mut().zip(&hist[at..at + RUN]) {
        *d = i32::from(s);
    }
    let mut c = [0.0f32; RUN];
    for (d, &weight) in CONTRAST_WEIGHTS.iter().enumerate().take(nd) {
        if !difference_counts(p, value, d) {
            continue;
        }
        let step = d + 1;
        let up = &hist[at + step * pitch..][..RUN];
        let down = &hist[at - step * pitch..][..RUN];
        for l in 0..RUN {
            let val = contrast(p, weight, p0[l], i32::from(up[l].max(down[l])));
            if val > c[l] {
                c[l] = val;
            }
        }
    }
    for (o, &c) in out.iter_mut().zip(&c) {
        *o = (c * FIXED_ONE) as u64;
    }
}

/// `src` (samples of `bpc` bits) converted to 10 bits into `dst` ([`Params::to_10bit`]).
fn to_10bit_row(src: &[u16], dst: &mut [u16], bpc: u32) {
    if bpc <= 10 {
        let sh = 10 - bpc;
        dst.iter_mut().zip(src).for_each(|(d, &s)| *d = s << sh);
    } else {
        let sh = bpc - 10;
        let half = 1u32 << (sh - 1);
        dst.iter_mut()
            .zip(src)
            .for_each(|(d, &s)| *d = ((u32::from(s) + half) >> sh) as u16);
    }
}

/// Row `y`'s zero-derivative flags into `out` (`w` long): 1 where the pixel equals its right
/// and its lower neighbour, a missing neighbour counting as equal.
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
fn zero_derivative_row(img: &[u16], w: usize, h: usize, y: usize, out: &mut [u8]) {
    let row = &img[y * w..(y + 1) * w];
    let (last, inner) = match out.split_last_mut() {
        Some(split) => split,
        None => return,
    };
    if y + 1 < h {
        let below = &img[(y + 1) * w..(y + 2) * w];
        let pairs = row.iter().zip(&row[1..]).zip(below);
        for (o, ((&a, &right), &down)) in inner.iter_mut().zip(pairs) {
            *o = u8::from(a == right) & u8::from(a == down);
        }
        *last = u8::from(row[w - 1] == below[w - 1]);
    } else {
        for (o, (&a, &right)) in inner.iter_mut().zip(row.iter().zip(&row[1..])) {
            *o = u8::from(a == right);
        }
        *last = 1;
    }
}

/// `col += d`, lane by lane.
fn add_row(col: &mut [u8], d: &[u8]) {
    col.iter_mut().zip(d).for_each(|(c, &d)| *c += d);
}

/// `col -= d`, lane by lane.
fn sub_row(col: &mut [u8], d: &[u8]) {
    col.iter_mut().zip(d).for_each(|(c, &d)| *c -= d);
}

/// `sums[x]` = the sum of `col` over `x - r ..= x + r` (columns outside count 0).
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
fn window_sums(col: &[u8], sums: &mut [u8], r: usize) {
    let w = col.len();
    let edge = |x: usize| -> u8 { col[x.saturating_sub(r)..(x + r + 1).min(w)].iter().sum() };
    if w <= 2 * r {
        for (x, s) in sums.iter_mut().enumerate() {
            *s = edge(x);
        }
        return;
    }
    // Interior: `2r + 1` shifted copies of `col` added up.
    let n = w - 2 * r;
    let inner = &mut sums[r..w - r];
    inner.copy_from_slice(&col[..n]);
    for k in 1..=2 * r {
        inner
            .iter_mut()
            .zip(&col[k..k + n])
            .for_each(|(s, &c)| *s += c);
    }
    for x in (0..r).chain(w - r..w) {
        sums[x] = edge(x);
    }
}

/// `out[x]` = 1 where `sums[x] > thr`, else 0.
fn threshold_row(sums: &[u8], thr: u32, out: &mut [u8]) {
    // Sums are at most 49: a threshold above 255 is never passed.
    let thr = u8::try_from(thr).unwrap_or(u8::MAX);
    out.iter_mut()
        .zip(sums)
        .for_each(|(o, &s)| *o = u8::from(s > thr));
}

/// Each pixel's index in the band (`v - band_base`), or [`NO_BAND`] where the mask is 0 or
/// the value lies outside the band.
#[inline(always)]
fn band_bins(img: &[u16], mask: &[u8], p: &Params, bins: &mut [u16]) {
    let (base, size) = (p.band_base, p.band_size);
    for ((b, &v), &m) in bins.iter_mut().zip(img).zip(mask) {
        let off = v.wrapping_sub(base);
        *b = if m != 0 && off < size { off } else { NO_BAND };
    }
}

/// Adds `inc` (1, or `u16::MAX` for -1) to every counter of one window, wrapping (a counter
/// never leaves `0..=window^2`).
#[inline(always)]
fn update_window(cells: &mut [u16], inc: u16) {
    // Whole steps of 16 counters, then the rest: a window (15 to 127 counters, 33 at 1080p,
    // 65 at 4K) is too short for the vectoriser's unrolled loop, which left it to scalar adds.
    let mut steps = cells.chunks_exact_mut(16);
    for step in &mut steps {
        step.iter_mut().for_each(|c| *c = c.wrapping_add(inc));
    }
    for c in steps.into_remainder() {
        *c = c.wrapping_add(inc);
    }
}

/// Every other sample of every other row: `dst` (`dw` x `dh`) from `src` (row pitch `sw`).
fn decimate<T: Copy>(src: &[T], sw: usize, dst: &mut [T], dw: usize, dh: usize) {
    for (y, row) in dst.chunks_exact_mut(dw).take(dh).enumerate() {
        // Pairs of source samples, the first of each kept (no index checks in the loop).
        let pairs = src[2 * y * sw..].chunks(2);
        for (d, pair) in row.iter_mut().zip(pairs) {
            *d = pair[0];
        }
    }
}

/// libvmaf's 2x2 anti-dithering average, in place (`anti_dithering_filter`): each sample the
/// mean (rounded down) of itself and its right, lower and lower-right neighbours; the last
/// column and row average two samples, the last sample stays. Each row is computed into
/// `line` (at least `w` long) from the original samples, then copied back.
fn anti_dither(img: &mut [u16], w: usize, h: usize, line: &mut [u16]) {
    if w == 0 || h == 0 {
        return;
    }
    let line = &mut line[..w];
    for y in 0..h - 1 {
        let (top, rest) = img.split_at_mut((y + 1) * w);
        let row = &mut top[y * w..];
        let below = &rest[..w];
        let quads = row.iter().zip(&row[1..]).zip(below.iter().zip(&below[1..]));
        for (o, ((&a, &b), (&c, &d))) in line.iter_mut().zip(quads) {
            *o = (a + b + c + d) >> 2;
        }
        line[w - 1] = (row[w - 1] + below[w - 1]) >> 1;
        row.copy_from_slice(line);
    }
    let last = &mut img[(h - 1) * w..h * w];
    for x in 0..w - 1 {
        last[x] = (last[x] + last[x + 1]) >> 1;
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
    use crate::features::XorShift;

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

    /// Each scale's top-k sum from [`reference`]'s direct forms of the steps, sharing only
    /// the resize, decimation and mode filter with [`Cambi`].
    fn reference_sums(c: &Cambi, plane: &LumaPlane) -> [u64; NUM_SCALES] {
        let p = c.params();
        let (mut w, mut h) = p.enc;
        let mut img = vec![0u16; w * h];
        for y in 0..h {
            for x in 0..w {
                let (sx, sy) = match &p.maps {
                    None => (x, y),
                    Some((xs, ys)) => (xs[x] as usize, ys[y] as usize),
                };
                img[y * w + x] = p.to_10bit(plane.row(sy)[sx]);
            }
        }
        if p.anti_dither {
            reference::anti_dither(&mut img, w, h);
        }
        let mut mask = reference::spatial_mask(&img, w, h, p.mask_index);
        let mut sums = [0u64; NUM_SCALES];
        for (s, sum) in sums.iter_mut().enumerate() {
            let (sw, sh) = p.scales[s];
            if (sw, sh) != (w, h) {
                let (mut di, mut dm) = (vec![0u16; sw * sh], vec![0u8; sw * sh]);
                decimate(&img, w, &mut di, sw, sh);
                decimate(&mask, w, &mut dm, sw, sh);
                (img, mask, w, h) = (di, dm, sw, sh);
            }
            let mut scratch = vec![0u16; 3 * w];
            filter_mode(&mut img, w, h, &mut scratch);
            let mut cv = reference::c_values(p, &img, &mask, w, h);
            *sum = topk_sum(&mut cv, p.topk_count(s));
        }
        sums
    }

    /// Test frames of `w` x `h` at `bpc` bits: flat rectangles of random dark-to-mid values
    /// (where the spatial mask and the bands are), one-code steps, and sparse noise.
    fn banded_frame(rng: &mut XorShift, w: usize, h: usize, bpc: u32) -> Vec<u16> {
        let max = (1u32 << bpc) - 1;
        let scale = |v8: u32| ((v8 << bpc) >> 8).min(max) as u16;
        let mut f = vec![scale(40); w * h];
        for _ in 0..12 {
            let (x0, y0) = (rng.next_u64() as usize % w, rng.next_u64() as usize % h);
            let (rw, rh) = (
                1 + rng.next_u64() as usize % (w / 2 + 1),
                1 + rng.next_u64() as usize % (h / 2 + 1),
            );
            let base = 10 + (rng.next_u64() % 140) as u32;
            let ramp = rng.next_u64().is_multiple_of(2);
            for y in y0..(y0 + rh).min(h) {
                for x in x0..(x0 + rw).min(w) {
                    let step = if ramp { ((x - x0) / 9) as u32 } else { 0 };
                    f[y * w + x] = scale(base + step);
                }
            }
        }
        for v in f.iter_mut() {
            let r = rng.next_u64();
            if r.is_multiple_of(23) {
                *v = ((u32::from(*v) + (r >> 8) as u32 % 5).min(max)) as u16;
            } else if r.is_multiple_of(97) {
                *v = ((r >> 16) as u32 & max) as u16;
            }
        }
        f
    }

    /// The sliding sums, the ring of derivative rows, the fixed-length histogram windows and
    /// the row-wise anti-dithering give every scale's top-k sum of the direct forms, on
    /// frames whose sides cross the window and mask sizes, at every depth and with the
    /// options that change the geometry (encode size and depth, high-resolution speed-up,
    /// contrast range, an empty band).
    #[test]
    fn steps_match_their_direct_forms() {
        let v1 = CambiConfig {
            high_res_speedup: 1080,
            vis_lum_threshold: 0.06,
            max_val: 17.0,
            ..CambiConfig::default()
        };
        let cases: Vec<(CambiConfig, usize, usize, u32)> = vec![
            (CambiConfig::default(), 217, 61, 8),
            (CambiConfig::default(), 5, 230, 8),
            (CambiConfig::default(), 301, 223, 10),
            (
                CambiConfig {
                    max_log_contrast: 0,
                    ..CambiConfig::default()
                },
                256,
                217,
                8,
            ),
            (
                CambiConfig {
                    max_log_contrast: 1,
                    window_size: 127,
                    ..CambiConfig::default()
                },
                640,
                360,
                10,
            ),
            (
                CambiConfig {
                    enc_bitdepth: 8,
                    ..CambiConfig::default()
                },
                240,
                224,
                12,
            ),
            (
                CambiConfig {
                    enc_width: 250,
                    enc_height: 200,
                    ..CambiConfig::default()
                },
                333,
                250,
                16,
            ),
            (
                CambiConfig {
                    vis_lum_threshold: 300.0,
                    tvi_threshold: 0.0001,
                    ..CambiConfig::default()
                },
                230,
                220,
                8,
            ),
            (v1, 1920, 1080, 8),
        ];
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        for (cfg, w, h, bpc) in cases {
            let mut c = Cambi::new(&cfg, w, h, bpc).unwrap();
            for _ in 0..2 {
                let data = banded_frame(&mut rng, w, h, bpc);
                let plane = LumaPlane::packed(&data, w, h, bpc).unwrap();
                let want = reference_sums(&c, &plane);
                assert!(want.iter().any(|&s| s != 0) || cfg.vis_lum_threshold == 300.0);
                assert_eq!(c.scale_sums(&plane), want, "{w}x{h} {bpc}-bit {cfg:?}");
            }
        }
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
