//! Integer motion: the sum of absolute blurred differences between consecutive reference
//! frames, and its libvmaf 3.x post-processing into `integer_motion2` / `integer_motion3`.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_motion.c
//! (`motion_score_pipeline_8/16`, `extract`, `flush`) and integer_motion.h (the filter).

use super::params::{MIN_HEIGHT, MIN_WIDTH, MOTION_MAX_VAL};
use crate::video::frame::{FeatureError, LumaPlane};

/// The 5-tap Gaussian blur of libvmaf's integer motion, Q16 (sums to 65536).
const FILTER: [i64; 5] = [3571, 16004, 26386, 16004, 3571];
const RADIUS: usize = 2;

/// Reflects `idx` into `0..size` without repeating the edge sample (libvmaf's `mirror`).
#[inline]
fn mirror(idx: isize, size: usize) -> usize {
    let size = size as isize;
    let r = if idx < 0 {
        -idx
    } else if idx >= size {
        2 * size - idx - 2
    } else {
        idx
    };
    r as usize
}

/// Motion SAD extractor with its row scratch sized once.
#[derive(Debug)]
pub struct Motion {
    width: usize,
    height: usize,
    bpc: u32,
    y_row: Vec<i32>,
}

impl Motion {
    /// Sizes the scratch for `width` x `height` planes at `bpc` bits.
    ///
    /// Errors: [`FeatureError::FrameTooSmall`] below [`MIN_WIDTH`] x [`MIN_HEIGHT`].
    pub fn new(width: usize, height: usize, bpc: u32) -> Result<Self, FeatureError> {
        FeatureError::check_new("motion", (width, height, bpc), (MIN_WIDTH, MIN_HEIGHT))?;
        Ok(Self {
            width,
            height,
            bpc,
            y_row: vec![0; width],
        })
    }

    /// Sum over the frame of |blur(prev - cur)|, blur being the 5-tap filter applied
    /// vertically (rounded to Q8 for 8-bit, Q(bpc) otherwise) then horizontally (Q16),
    /// with mirrored borders. Bit-exact to libvmaf's `motion_score_pipeline_8/16`.
    ///
    /// Errors: [`FeatureError::WrongGeometry`] when a plane differs from `new()`'s geometry.
    pub fn sad(&mut self, prev: &LumaPlane, cur: &LumaPlane) -> Result<u64, FeatureError> {
        for p in [prev, cur] {
            FeatureError::check_plane("motion", (self.width, self.height, self.bpc), p)?;
        }
        let (w, h) = (self.width, self.height);
        let (round, shift) = if self.bpc == 8 {
            (1i64 << 7, 8)
        } else {
            (1i64 << (self.bpc - 1), self.bpc)
        };
        let y_row = &mut self.y_row[..w];
        let mut sad: u64 = 0;
        for i in 0..h {
            let rows: [(&[u16], &[u16]); 5] = std::array::from_fn(|k| {
                let r = mirror(i as isize - RADIUS as isize + k as isize, h);
                (prev.row(r), cur.row(r))
            });
            let any = if self.bpc <= NARROW_MAX_BPC {
                vertical_i32(&rows, round as i32, shift, y_row)
            } else {
                vertical_i64(&rows, round, shift, y_row)
            };
            if any == 0 {
                continue;
            }
            let mut row_sad: u32 = 0;
            let interior_end = w.saturating_sub(RADIUS).max(RADIUS);
            for j in (0..RADIUS.min(w)).chain(interior_end..w) {
                row_sad = row_sad.wrapping_add(x_conv(j, y_row));
            }
            let interior = y_row.get(..interior_end + RADIUS).unwrap_or(&[]);
            row_sad = row_sad.wrapping_add(horizontal_interior(interior));
            sad += u64::from(row_sad);
        }
        Ok(sad)
    }

    /// The per-frame motion score libvmaf logs as `VMAF_integer_feature_motion_sad_score`:
    /// `min(sad / 256 / (w * h), 10000)`.
    pub fn score(&self, sad: u64) -> f64 {
        let pixels = (self.width as u32).wrapping_mul(self.height as u32);
        let s = sad as f64 / 256.0 / f64::from(pixels);
        s.min(MOTION_MAX_VAL)
    }
}

/// Largest depth whose vertical sums fit `i32`: |sum_k FILTER[k] * (p - c)| <=
/// 65536 * (2^bpc - 1) < 2^31 for bpc <= 15.
const NARROW_MAX_BPC: u32 = 15;

/// The taps as `i32` (the filter is symmetric: 0 = 4, 1 = 3).
const F0: i32 = FILTER[0] as i32;
const F1: i32 = FILTER[1] as i32;
const F2: i32 = FILTER[2] as i32;

/// Vertical pass of one output row, `bpc <= 15`: `y[j] = (sum_k FILTER[k] * (p_k[j] -
/// c_k[j]) + round) >> shift` over the five (mirrored) rows, exact in `i32` (see
/// [`NARROW_MAX_BPC`]). Returns the OR of the outputs (0: the row is all zero).
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
fn vertical_i32(rows: &[(&[u16], &[u16]); 5], round: i32, shift: u32, y: &mut [i32]) -> i32 {
    let n = y.len();
    let [(p0, c0), (p1, c1), (p2, c2), (p3, c3), (p4, c4)] = *rows;
    let (Some(p0), Some(p1), Some(p2), Some(p3), Some(p4)) = (
        p0.get(..n),
        p1.get(..n),
        p2.get(..n),
        p3.get(..n),
        p4.get(..n),
    ) else {
        return vertical_i64(rows, i64::from(round), shift, y);
    };
    let (Some(c0), Some(c1), Some(c2), Some(c3), Some(c4)) = (
        c0.get(..n),
        c1.get(..n),
        c2.get(..n),
        c3.get(..n),
        c4.get(..n),
    ) else {
        return vertical_i64(rows, i64::from(round), shift, y);
    };
    let mut any = 0i32;
    for j in 0..n {
        // Wrapping: exact for samples below 2^bpc; samples above it (unspecified scores)
        // must not panic where overflow checks are on.
        let d = |p: &[u16], c: &[u16]| i32::from(p[j]) - i32::from(c[j]);
        let acc = F0
            .wrapping_mul(d(p0, c0) + d(p4, c4))
            .wrapping_add(F1.wrapping_mul(d(p1, c1) + d(p3, c3)))
            .wrapping_add(F2.wrapping_mul(d(p2, c2)));
        let v = acc.wrapping_add(round) >> shift;
        y[j] = v;
        any |= v;
    }
    any
}

/// [`vertical_i32`] in `i64`, for any depth.
fn vertical_i64(rows: &[(&[u16], &[u16]); 5], round: i64, shift: u32, y: &mut [i32]) -> i32 {
    let mut any = 0i32;
    for (j, out) in y.iter_mut().enumerate() {
        let mut acc = 0i64;
        for (k, (p, c)) in rows.iter().enumerate() {
            acc += FILTER[k] * (i64::from(p[j]) - i64::from(c[j]));
        }
        *out = ((acc + round) >> shift) as i32;
        any |= *out;
    }
    any
}

/// |horizontal blur| at column `j` of a row of vertical outputs, mirrored borders, Q16
/// rounded (libvmaf's x pass).
fn x_conv(j: usize, y: &[i32]) -> u32 {
    let w = y.len();
    let mut acc = 0i64;
    for (k, f) in FILTER.iter().enumerate() {
        let col = mirror(j as isize - RADIUS as isize + k as isize, w);
        acc += f * i64::from(y[col]);
    }
    (((acc + (1 << 15)) >> 16) as i32).unsigned_abs()
}

/// Sum (wrapping, as libvmaf's `uint32_t`) of |horizontal blur| over every full window of
/// five samples of `y` (the interior columns).
///
/// libvmaf's 64-bit sum `acc = sum_k FILTER[k] * y_k` of outputs `|y| <= 2^17` is split
/// exactly into `i32` parts: with `y = 256 * hi + lo` (`hi = y >> 8`, `lo = y & 255`),
/// `A = sum f * hi` and `B = sum f * lo` are below 2^26 in magnitude, and
/// `(acc + 2^15) >> 16 = (A + ((B + 2^15) >> 8)) >> 8` (write `B + 2^15 = 256 q + r`,
/// `0 <= r < 256`: `acc + 2^15 = 256 (A + q) + r`, and `r` cannot carry past the next
/// 256 multiple). So the loop needs only 32-bit multiplies, which vectorise.
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512bw+avx512cd+avx512dq+avx512vl+avx2+fma",
    "x86_64+avx2+fma",
    "x86_64+sse4.1"
))]
fn horizontal_interior(y: &[i32]) -> u32 {
    let mut sad = 0u32;
    for win in y.windows(5) {
        let (hi, lo) = (|v: i32| v >> 8, |v: i32| v & 255);
        let a = F0 * (hi(win[0]) + hi(win[4])) + F1 * (hi(win[1]) + hi(win[3])) + F2 * hi(win[2]);
        let b = F0 * (lo(win[0]) + lo(win[4])) + F1 * (lo(win[1]) + lo(win[3])) + F2 * lo(win[2]);
        let v = (a + ((b + (1 << 15)) >> 8)) >> 8;
        sad = sad.wrapping_add(v.unsigned_abs());
    }
    sad
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(prev: &[u16], cur: &[u16], w: usize, h: usize, bpc: u32) -> u64 {
        let mut sad = 0u64;
        let mut y = vec![0i32; w];
        for i in 0..h {
            for j in 0..w {
                let mut acc = 0i64;
                for (k, f) in FILTER.iter().enumerate() {
                    let r = mirror(i as isize - 2 + k as isize, h);
                    acc += f * (prev[r * w + j] as i64 - cur[r * w + j] as i64);
                }
                y[j] = if bpc == 8 {
                    ((acc + 128) >> 8) as i32
                } else {
                    ((acc + (1 << (bpc - 1))) >> bpc) as i32
                };
            }
            let mut row = 0u32;
            for j in 0..w {
                let mut acc = 0i64;
                for (k, f) in FILTER.iter().enumerate() {
                    acc += f * y[mirror(j as isize - 2 + k as isize, w)] as i64;
                }
                row += (((acc + (1 << 15)) >> 16) as i32).unsigned_abs();
            }
            sad += row as u64;
        }
        sad
    }

    #[test]
    fn matches_direct_formula_on_all_small_sizes() -> Result<(), Box<dyn std::error::Error>> {
        let mut seed = 12345u32;
        let mut rnd = || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            seed >> 16
        };
        for bpc in [8u32, 10, 12, 15, 16] {
            for w in 3..20 {
                for h in 3..12 {
                    let n = w * h;
                    let a: Vec<u16> = (0..n).map(|_| (rnd() % (1 << bpc)) as u16).collect();
                    let b: Vec<u16> = (0..n).map(|_| (rnd() % (1 << bpc)) as u16).collect();
                    let mut m = Motion::new(w, h, bpc)?;
                    let pa = LumaPlane::packed(&a, w, h, bpc).ok_or("plane")?;
                    let pb = LumaPlane::packed(&b, w, h, bpc).ok_or("plane")?;
                    assert_eq!(m.sad(&pa, &pb)?, naive(&a, &b, w, h, bpc), "{w}x{h}@{bpc}");
                }
            }
        }
        // Extreme planes (all black against all white, and alternating) at every depth:
        // the largest sums the i32 paths must hold.
        for bpc in [8u32, 10, 12, 15, 16] {
            let (w, h) = (37, 9);
            let top = ((1u32 << bpc) - 1) as u16;
            let black = vec![0u16; w * h];
            let white = vec![top; w * h];
            let check: Vec<u16> = (0..w * h)
                .map(|i| if (i / w + i % w) % 2 == 0 { top } else { 0 })
                .collect();
            for (a, b) in [(&black, &white), (&white, &black), (&check, &black)] {
                let mut m = Motion::new(w, h, bpc)?;
                let pa = LumaPlane::packed(a, w, h, bpc).ok_or("plane")?;
                let pb = LumaPlane::packed(b, w, h, bpc).ok_or("plane")?;
                assert_eq!(m.sad(&pa, &pb)?, naive(a, b, w, h, bpc), "extreme @{bpc}");
            }
        }
        assert!(Motion::new(2, 10, 8).is_err());
        Ok(())
    }
}
