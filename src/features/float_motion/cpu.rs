//! The CPU half of float motion: both reference frames blurred in `f32` (libvmaf's tap
//! order, no fused multiply-add, mirrored borders), then the mean absolute difference with
//! libvmaf's `f32` row and frame accumulators, so the score is bit-identical to libvmaf's.
//!
//! libvmaf keeps the previous frame's blurred plane. Frames are scored in parallel here, so an
//! extractor need not have seen the previous frame: it keeps the last reference it blurred
//! (its samples and its blurred plane) and reuses the blur when the next pair's previous
//! plane holds the same samples (every frame on one thread), else blurs both planes.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_motion.c (`extract`),
//! motion.c (`vmaf_image_sad_c`), common/convolution_avx.c (`convolution_f32_avx_s`).

use super::super::float_vif::cpu::{filter_plane, to_float};
use super::super::float_vif::prescale;
use super::params::{FEATURE, MIN_SIZE};
use crate::video::frame::{FeatureError, LumaPlane};

/// Float motion of one geometry: the float and blurred planes, allocated once.
pub struct FloatMotion {
    width: usize,
    height: usize,
    bpc: u32,
    filter: Option<Vec<f32>>,
    level: Vec<f32>,
    prev: Vec<f32>,
    cur: Vec<f32>,
    pad: Vec<f32>,
    /// The samples of the last `cur` plane (packed) and its blurred plane; `cached` says
    /// whether they hold one.
    last_samples: Vec<u16>,
    last_blur: Vec<f32>,
    cached: bool,
    /// `motion_add_scale1`: the halved planes (empty without it).
    half: [Vec<f32>; 2],
}

impl FloatMotion {
    /// Scratch for `width` x `height` planes of `bpc` bits, blurred with `filter` (`None`:
    /// not blurred, `motion_filter_size` 1).
    ///
    /// Errors: [`FeatureError::FrameTooSmall`] below 3x3.
    pub fn new(
        width: usize,
        height: usize,
        bpc: u32,
        filter: Option<Vec<f32>>,
    ) -> Result<Self, FeatureError> {
        FeatureError::check_new(FEATURE, (width, height, bpc), (MIN_SIZE, MIN_SIZE))?;
        let n = width * height;
        Ok(Self {
            width,
            height,
            bpc,
            filter,
            level: vec![0.0; n],
            prev: vec![0.0; n],
            cur: vec![0.0; n],
            pad: vec![0.0; width + 4],
            last_samples: vec![0; n],
            last_blur: vec![0.0; n],
            cached: false,
            half: [Vec::new(), Vec::new()],
        })
    }

    /// With `on`, the score adds the mean absolute difference of the blurred planes halved
    /// (`(int)(size * 0.5 + 0.5)`) with libvmaf's bilinear interpolation
    /// (`motion_add_scale1`).
    pub fn with_scale1(mut self, on: bool) -> Self {
        let n = if on {
            prescale::scaled(self.width, 0.5) * prescale::scaled(self.height, 0.5)
        } else {
            0
        };
        self.half = [vec![0.0; n], vec![0.0; n]];
        self
    }

    /// The mean over the plane of `|blur(prev) - blur(cur)|` (libvmaf's `float` motion
    /// score before the fps weight and clip).
    ///
    /// Errors: [`FeatureError::WrongGeometry`] for planes of another geometry.
    pub fn sad(&mut self, prev: &LumaPlane, cur: &LumaPlane) -> Result<f32, FeatureError> {
        let geo = (self.width, self.height, self.bpc);
        for p in [prev, cur] {
            FeatureError::check_plane(FEATURE, geo, p)?;
        }
        let (w, h) = (self.width, self.height);
        let reuse = self.cached
            && self
                .last_samples
                .chunks_exact(w)
                .enumerate()
                .all(|(y, row)| row == prev.row(y));
        if reuse {
            std::mem::swap(&mut self.prev, &mut self.last_blur);
        } else {
            self.blur(prev, true);
        }
        self.blur(cur, false);
        let mut sad = mean_abs_diff(&self.prev, &self.cur, w, h);
        if !self.half[0].is_empty() {
            let half = (prescale::scaled(w, 0.5), prescale::scaled(h, 0.5));
            let bilinear = prescale::Method::Bilinear;
            let [hp, hc] = &mut self.half;
            prescale::scale(bilinear, &self.prev, (w, h), hp, half);
            prescale::scale(bilinear, &self.cur, (w, h), hc, half);
            sad += mean_abs_diff(hp, hc, half.0, half.1);
        }
        for (y, row) in self.last_samples.chunks_exact_mut(w).enumerate() {
            row.copy_from_slice(cur.row(y));
        }
        std::mem::swap(&mut self.cur, &mut self.last_blur);
        self.cached = true;
        Ok(sad)
    }

    /// `plane` as float levels, blurred, into `prev` (`into_prev`) or `cur`.
    fn blur(&mut self, plane: &LumaPlane, into_prev: bool) {
        let (w, h) = (self.width, self.height);
        let out = if into_prev {
            &mut self.prev
        } else {
            &mut self.cur
        };
        match &self.filter {
            None => to_float(plane, out),
            Some(f) => {
                to_float(plane, &mut self.level);
                filter_plane(f, &self.level, w, h, &mut self.pad, out);
            }
        }
    }
}

/// libvmaf's `vmaf_image_sad_c` (without the scale-1 term): per row an `f32` sum of
/// `|a - b|` from the left, the rows' sums added in order, divided by `w * h` in `f32`.
/// Eight rows are summed side by side (eight independent chains of the same additions, so
/// the same bits, without waiting on each addition in turn).
pub fn mean_abs_diff(a: &[f32], b: &[f32], w: usize, h: usize) -> f32 {
    const ROWS: usize = 8;
    let mut acc = 0.0f32;
    let (a, b) = (&a[..w * h], &b[..w * h]);
    let mut blocks_a = a.chunks_exact(w * ROWS);
    let mut blocks_b = b.chunks_exact(w * ROWS);
    for (ba, bb) in (&mut blocks_a).zip(&mut blocks_b) {
        let mut lines = [0.0f32; ROWS];
        for j in 0..w {
            for (r, line) in lines.iter_mut().enumerate() {
                *line += (ba[r * w + j] - bb[r * w + j]).abs();
            }
        }
        for line in lines {
            acc += line;
        }
    }
    for (ra, rb) in blocks_a
        .remainder()
        .chunks_exact(w)
        .zip(blocks_b.remainder().chunks_exact(w))
    {
        let mut line = 0.0f32;
        for (&x, &y) in ra.iter().zip(rb) {
            line += (x - y).abs();
        }
        acc += line;
    }
    acc / (w * h) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blur written directly from libvmaf's edge formula.
    fn naive_blur(src: &[f32], w: usize, h: usize, f: &[f32]) -> Vec<f32> {
        let r = f.len() / 2;
        let m = |i: isize, n: usize| -> usize {
            let n = n as isize;
            (if i < 0 {
                -i
            } else if i >= n {
                n - (i - n + 2)
            } else {
                i
            }) as usize
        };
        let mut tmp = vec![0.0f32; w * h];
        for i in 0..h {
            for j in 0..w {
                let mut acc = 0.0f32;
                for (k, &fk) in f.iter().enumerate() {
                    acc += fk * src[m(i as isize - r as isize + k as isize, h) * w + j];
                }
                tmp[i * w + j] = acc;
            }
        }
        let mut out = vec![0.0f32; w * h];
        for i in 0..h {
            for j in 0..w {
                let mut acc = 0.0f32;
                for (k, &fk) in f.iter().enumerate() {
                    acc += fk * tmp[i * w + m(j as isize - r as isize + k as isize, w)];
                }
                out[i * w + j] = acc;
            }
        }
        out
    }

    #[test]
    fn reused_blur_gives_the_same_scores() {
        let (w, h) = (23, 11);
        let frames: Vec<Vec<u16>> = (0..5u16)
            .map(|t| {
                (0..(w * h) as u16)
                    .map(|i| (i * 7 + t * 13) % 256)
                    .collect()
            })
            .collect();
        let plane = |i: usize| LumaPlane::packed(&frames[i], w, h, 8).expect("plane");
        let filter = super::super::FloatMotionOptions::default().filter();
        let mut seq = FloatMotion::new(w, h, 8, filter.clone()).expect("new");
        for i in 1..frames.len() {
            let mut fresh = FloatMotion::new(w, h, 8, filter.clone()).expect("new");
            let want = fresh.sad(&plane(i - 1), &plane(i)).expect("sad");
            assert_eq!(
                seq.sad(&plane(i - 1), &plane(i)).expect("sad"),
                want,
                "frame {i}"
            );
        }
        // Out of order: the cache does not match and is not used.
        let mut fresh = FloatMotion::new(w, h, 8, filter).expect("new");
        let want = fresh.sad(&plane(0), &plane(2)).expect("sad");
        assert_eq!(seq.sad(&plane(0), &plane(2)).expect("sad"), want);
    }

    #[test]
    fn interleaved_sum_equals_row_by_row() {
        let mut seed = 3u32;
        for (w, h) in [(3, 3), (5, 8), (7, 17), (64, 9)] {
            let mut next = || {
                seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
                (seed >> 8) as f32 / 65536.0 - 128.0
            };
            let a: Vec<f32> = (0..w * h).map(|_| next()).collect();
            let b: Vec<f32> = (0..w * h).map(|_| next()).collect();
            let mut acc = 0.0f32;
            for i in 0..h {
                let mut line = 0.0f32;
                for j in 0..w {
                    line += (a[i * w + j] - b[i * w + j]).abs();
                }
                acc += line;
            }
            let want = acc / (w * h) as f32;
            assert_eq!(
                mean_abs_diff(&a, &b, w, h).to_bits(),
                want.to_bits(),
                "{w}x{h}"
            );
        }
    }

    #[test]
    fn blur_equals_the_direct_formula() {
        let f = super::super::FloatMotionOptions::default()
            .filter()
            .unwrap_or_default();
        let mut seed = 7u32;
        for (w, h) in [(3, 3), (4, 7), (17, 5), (33, 9)] {
            let src: Vec<f32> = (0..w * h)
                .map(|_| {
                    seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
                    (seed >> 24) as f32 - 128.0
                })
                .collect();
            let mut pad = Vec::new();
            let mut out = vec![0.0; w * h];
            filter_plane(&f, &src, w, h, &mut pad, &mut out);
            assert_eq!(out, naive_blur(&src, w, h, &f), "{w}x{h}");
        }
    }
}
