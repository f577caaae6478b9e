//! Finds the frame offset between the reference and the distorted stream from their content:
//! the offset that maximises the mean luma PSNR over the first frames (auto-alignment).
//!
//! Each frame is reduced to a thumbnail (mean of `f`x`f` luma blocks, `f` chosen so the
//! thumbnail is at most [`THUMB_MAX_WIDTH`] samples wide; small video is used at full size),
//! scaled to 8 bits. For every offset `k` in `-max_offset..=max_offset`, the same number `n`
//! of pairs is compared: reference frame `i` with distorted frame `i + k` (`k > 0`: the
//! distorted stream is late by `k` frames), `i` in `0..n` for `k >= 0`, reference frame
//! `i - k` with distorted frame `i` for `k < 0`. A pair's PSNR is libvmaf's
//! `10 log10(255^2 / mse)`, capped at 60 dB (libvmaf's `psnr_max` for 8 bits); the offset
//! with the highest mean wins, ties going to the smallest `|k|` (then `k > 0`).
//!
//! Streams of different sizes (a rendition against its reference) give thumbnails of
//! different sizes; before the search the larger stream's are reduced to the smaller's size by
//! box means over proportional cells ([`Thumb::resized`]), so the same picture compares as
//! the same picture.

/// Widest thumbnail used for the comparison, in samples.
pub const THUMB_MAX_WIDTH: usize = 480;
/// PSNR of identical thumbnails (libvmaf's cap for 8-bit PSNR), dB.
pub const PSNR_MAX: f64 = 60.0;

/// A reduced luma plane: block means, 8-bit scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Thumb {
    width: usize,
    height: usize,
    data: Vec<f32>,
}

impl Thumb {
    /// Block factor for a plane `width` samples wide: 1 up to [`THUMB_MAX_WIDTH`].
    pub fn factor(width: usize) -> usize {
        width.div_ceil(THUMB_MAX_WIDTH).max(1)
    }

    /// Reduces a `width` x `height` plane read through `sample(x, y)` (right-aligned
    /// samples of `bpc` bits, `8..=16`) to `f`x`f` block means (`f` = [`Thumb::factor`]),
    /// dropping the partial blocks at the right and bottom edges. `None` for an empty plane.
    pub fn from_fn(
        width: usize,
        height: usize,
        bpc: u32,
        mut sample: impl FnMut(usize, usize) -> u16,
    ) -> Option<Self> {
        let f = Self::factor(width);
        let (tw, th) = (width / f, height / f);
        if tw == 0 || th == 0 {
            return None;
        }
        let scale = 1.0 / ((f * f) as f64 * f64::from(1u32 << bpc.clamp(8, 16).saturating_sub(8)));
        let mut data = vec![0f32; tw * th];
        let mut row_sums = vec![0u64; tw];
        for ty in 0..th {
            row_sums.iter_mut().for_each(|s| *s = 0);
            for y in ty * f..(ty + 1) * f {
                for (tx, sum) in row_sums.iter_mut().enumerate() {
                    for x in tx * f..(tx + 1) * f {
                        *sum += u64::from(sample(x, y));
                    }
                }
            }
            for (d, &s) in data[ty * tw..(ty + 1) * tw].iter_mut().zip(&row_sums) {
                *d = (s as f64 * scale) as f32;
            }
        }
        Some(Self {
            width: tw,
            height: th,
            data,
        })
    }

    /// Thumbnail size (width, height).
    pub fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// This thumbnail reduced (or, for a larger target, enlarged by repetition) to `width` x
    /// `height`: each target sample is the mean of the source samples in its proportional
    /// cell, `[x * w / width, max((x + 1) * w / width, that + 1))` and the same down.
    pub fn resized(&self, width: usize, height: usize) -> Thumb {
        let (w, h) = (self.width, self.height);
        let span = |i: usize, n: usize, of: usize| {
            let a = (i * of / n).min(of.saturating_sub(1));
            (a, ((i + 1) * of / n).max(a + 1).min(of))
        };
        let mut data = Vec::with_capacity(width * height);
        for ty in 0..height {
            let (y0, y1) = span(ty, height, h);
            for tx in 0..width {
                let (x0, x1) = span(tx, width, w);
                let mut sum = 0f64;
                for y in y0..y1 {
                    sum += self.data[y * w + x0..y * w + x1]
                        .iter()
                        .map(|&v| f64::from(v))
                        .sum::<f64>();
                }
                data.push((sum / ((y1 - y0) * (x1 - x0)) as f64) as f32);
            }
        }
        Thumb {
            width,
            height,
            data,
        }
    }

    /// PSNR of `self` against `other` in dB (8-bit peak, capped at [`PSNR_MAX`]); 0 when
    /// the sizes differ.
    pub fn psnr(&self, other: &Thumb) -> f64 {
        if self.width != other.width || self.height != other.height || self.data.is_empty() {
            return 0.0;
        }
        let sse: f64 = self
            .data
            .iter()
            .zip(&other.data)
            .map(|(&a, &b)| {
                let d = f64::from(a) - f64::from(b);
                d * d
            })
            .sum();
        let mse = sse / self.data.len() as f64;
        if mse <= 0.0 {
            return PSNR_MAX;
        }
        (10.0 * (255.0 * 255.0 / mse).log10()).min(PSNR_MAX)
    }
}

/// The outcome of the search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Offset {
    /// Frames the distorted stream is late by (negative: the reference is late).
    pub frames: i64,
    /// Mean PSNR at that offset, dB.
    pub psnr: f64,
    /// Mean PSNR with no offset, dB (to judge how clear the choice was).
    pub psnr_zero: f64,
    /// Pairs compared at every offset.
    pub compared: usize,
    /// Largest `|offset|` searched (may be less than asked when a stream was short).
    pub searched: usize,
}

/// Collects thumbnails of the first frames of both streams and picks the offset.
#[derive(Debug, Clone)]
pub struct Aligner {
    max_offset: usize,
    frames: usize,
    reference: Vec<Thumb>,
    distorted: Vec<Thumb>,
}

impl Aligner {
    /// Compares `frames` (>= 1) pairs at each offset in `-max_offset..=max_offset`, so it
    /// needs `frames + max_offset` frames of each stream.
    pub fn new(frames: usize, max_offset: usize) -> Self {
        Self {
            max_offset,
            frames: frames.max(1),
            reference: Vec::new(),
            distorted: Vec::new(),
        }
    }

    /// Frames needed from each stream.
    pub fn needed(&self) -> usize {
        self.frames + self.max_offset
    }

    /// Adds the next reference frame (ignored once [`Aligner::needed`] are held).
    pub fn push_reference(&mut self, t: Thumb) {
        if self.reference.len() < self.needed() {
            self.reference.push(t);
        }
    }

    /// Adds the next distorted frame (ignored once [`Aligner::needed`] are held).
    pub fn push_distorted(&mut self, t: Thumb) {
        if self.distorted.len() < self.needed() {
            self.distorted.push(t);
        }
    }

    /// Forgets the frames collected (a flush before the offset was chosen).
    pub fn clear(&mut self) {
        self.reference.clear();
        self.distorted.clear();
    }

    /// Frames held: (reference, distorted).
    pub fn held(&self) -> (usize, usize) {
        (self.reference.len(), self.distorted.len())
    }

    /// Whether both streams have given what the search needs.
    pub fn is_full(&self) -> bool {
        self.reference.len() >= self.needed() && self.distorted.len() >= self.needed()
    }

    /// Picks the offset from what was collected (less than asked when a stream ended early:
    /// the range shrinks so that at least one pair is compared at each offset). `None` when
    /// a stream gave no frame.
    pub fn decide(&self) -> Option<Offset> {
        let avail = self.reference.len().min(self.distorted.len());
        if avail == 0 {
            return None;
        }
        let searched = self.max_offset.min(avail - 1);
        let n = self.frames.min(avail - searched);
        // Streams of different sizes: the larger's thumbnails reduced to the smaller's size.
        let (rs, ds) = (self.reference[0].size(), self.distorted[0].size());
        let fit = |thumbs: &[Thumb], to: (usize, usize)| -> Vec<Thumb> {
            thumbs
                .iter()
                .map(|t| {
                    if t.size() == to {
                        t.clone()
                    } else {
                        t.resized(to.0, to.1)
                    }
                })
                .collect()
        };
        let (reference, distorted) = if rs == ds {
            (self.reference.clone(), self.distorted.clone())
        } else if rs.0 * rs.1 > ds.0 * ds.1 {
            (fit(&self.reference, ds), self.distorted.clone())
        } else {
            (self.reference.clone(), fit(&self.distorted, rs))
        };
        let mean_psnr = |k: i64| -> f64 {
            let sum: f64 = (0..n)
                .map(|i| {
                    let (r, d) = if k >= 0 {
                        (i, i + k as usize)
                    } else {
                        (i + k.unsigned_abs() as usize, i)
                    };
                    reference[r].psnr(&distorted[d])
                })
                .sum();
            sum / n as f64
        };
        let psnr_zero = mean_psnr(0);
        let mut best = (0i64, psnr_zero);
        for m in 1..=searched as i64 {
            for k in [m, -m] {
                let p = mean_psnr(k);
                if p > best.1 {
                    best = (k, p);
                }
            }
        }
        Some(Offset {
            frames: best.0,
            psnr: best.1,
            psnr_zero,
            compared: n,
            searched,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thumb(seed: usize) -> Thumb {
        Thumb::from_fn(64, 48, 8, |x, y| {
            ((x * 7 + y * 13 + seed * 31) % 251) as u16
        })
        .unwrap()
    }

    #[test]
    fn finds_a_late_distorted_stream_and_a_late_reference() {
        for delay in [0i64, 3, -2] {
            let mut a = Aligner::new(10, 5);
            for i in 0..a.needed() {
                a.push_reference(thumb(i + 100));
                let src = i as i64 - delay;
                a.push_distorted(thumb(if src >= 0 { src as usize + 100 } else { 999 }));
            }
            let o = a.decide().unwrap();
            assert_eq!(o.frames, delay);
            assert_eq!(o.psnr, PSNR_MAX);
            assert_eq!(o.compared, 10);
        }
    }

    #[test]
    fn short_streams_shrink_the_search() {
        let mut a = Aligner::new(25, 10);
        for i in 0..4 {
            a.push_reference(thumb(i));
            a.push_distorted(thumb(i));
        }
        let o = a.decide().unwrap();
        assert_eq!((o.frames, o.searched, o.compared), (0, 3, 1));
        assert!(Aligner::new(5, 5).decide().is_none());
    }

    /// A 640-wide picture and the same picture at 480 (thumbnail factors 2 and 1: 320 and
    /// 480 wide) align at the right offset with a real PSNR, not 0.
    #[test]
    fn renditions_of_another_size_align() {
        let picture = |w: usize, h: usize, seed: usize| {
            Thumb::from_fn(w, h, 8, |x, y| {
                // A smooth pattern that moves with `seed`, sampled at the same relative place.
                let (u, v) = (x as f64 / w as f64, y as f64 / h as f64);
                (128.0 + 100.0 * ((u * 9.0 + seed as f64 * 0.7).sin() * (v * 7.0).cos())) as u16
            })
            .unwrap()
        };
        for delay in [0i64, 2, -3] {
            let mut a = Aligner::new(10, 5);
            for i in 0..a.needed() {
                a.push_reference(picture(640, 360, i + 100));
                let src = (i as i64 - delay).max(0) as usize + 100;
                a.push_distorted(picture(480, 270, src));
            }
            let o = a.decide().unwrap();
            assert_eq!(o.frames, delay);
            assert!(o.psnr > 35.0, "{o:?}");
        }
    }

    #[test]
    fn thumbs_average_blocks_at_8_bit_scale() {
        let w = THUMB_MAX_WIDTH * 2 + 1;
        let t = Thumb::from_fn(w, 5, 10, |x, _| if x % 2 == 0 { 400 } else { 0 }).unwrap();
        assert_eq!((t.width, t.height), (320, 1), "961 wide: 3x3 blocks");
        assert!(t.data.iter().all(|&v| v > 0.0 && v < 256.0));
    }
}
