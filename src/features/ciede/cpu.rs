//! The CPU half of `ciede`: libvmaf's per-pixel CIELAB conversion and CIEDE2000 with its
//! rounding points, summed in `f64` in raster order as libvmaf does.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/ciede.c.

use super::params::{
    ciede2000, lab, lab_of_linear, linear_blue, linear_green, linear_red, score_from_sum,
    ChromaRead, Lab, FEATURE,
};
use crate::features::api::HostFrame;
use crate::video::frame::{FeatureError, LumaPlane};

use std::sync::{Arc, OnceLock};

/// Linear-light red by `Y << bpc | Cr` and blue by `Y << bpc | Cb` at 8 or 10 bits: the same
/// `f64` values [`super::lab`] computes (each depends on two samples only), so two of the
/// three transfer curves per colour are a table read. 2 x 512 KiB at 8 bits, 2 x 8 MiB at
/// 10, made once per process on first use and shared by every extractor.
struct Tables {
    bpc: u32,
    red: Vec<f64>,
    blue: Vec<f64>,
}

impl Tables {
    /// The tables of `bpc` bits (8 or 10), `None` at other depths.
    fn shared(bpc: u32) -> Option<Arc<Tables>> {
        static EIGHT: OnceLock<Arc<Tables>> = OnceLock::new();
        static TEN: OnceLock<Arc<Tables>> = OnceLock::new();
        let cell = match bpc {
            8 => &EIGHT,
            10 => &TEN,
            _ => return None,
        };
        let table = |f: fn(f64, f64, u32) -> f64| -> Vec<f64> {
            let mask = (1usize << bpc) - 1;
            (0..1usize << (2 * bpc))
                .map(|i| f((i >> bpc) as f64, (i & mask) as f64, bpc))
                .collect()
        };
        let tables = cell.get_or_init(|| {
            Arc::new(Tables {
                bpc,
                red: table(linear_red),
                blue: table(linear_blue),
            })
        });
        Some(tables.clone())
    }
}

/// `ciede` for one geometry: the column map of libvmaf's chroma reading and one row of
/// upsampled chroma per plane and frame (allocated once).
pub struct Ciede {
    width: usize,
    height: usize,
    bpc: u32,
    read: ChromaRead,
    /// For each column: the chroma rows to add to `y / 2` and the column libvmaf reads, or
    /// `u32::MAX` for its zero padding (subsampled formats only).
    columns: Vec<(u32, u32)>,
    /// Upsampled rows: reference Cb, Cr, distorted Cb, Cr (`width` samples each).
    rows: Vec<f32>,
    /// The red and blue tables at 8 and 10 bits.
    tables: Option<Arc<Tables>>,
}

impl Ciede {
    /// The extractor for `width` x `height` frames of `bpc` bits whose chroma libvmaf reads
    /// as `read` says.
    pub fn new(width: usize, height: usize, bpc: u32, read: ChromaRead) -> Self {
        let stride = read.stride.max(1);
        let columns = (0..width)
            .map(|x| {
                let q = if read.mode == super::Subsampling::Both {
                    x >> 1
                } else {
                    x
                };
                let col = q % stride;
                let col = if col < read.width {
                    col as u32
                } else {
                    u32::MAX
                };
                ((q / stride) as u32, col)
            })
            .collect();
        Self {
            width,
            height,
            bpc,
            read,
            columns,
            rows: vec![0.0; 4 * width],
            tables: Tables::shared(bpc),
        }
    }

    /// [`super::lab`] of samples `y`, `u`, `v`, red and blue from the tables when there are
    /// tables.
    #[inline]
    fn lab(&self, y: u16, u: f32, v: f32) -> Lab {
        let (yf, uf, vf) = (f64::from(y), f64::from(u), f64::from(v));
        let Some(t) = self.tables.as_deref() else {
            return lab(yf, uf, vf, self.bpc);
        };
        let top = ((1u32 << t.bpc) - 1) as f32;
        if f32::from(y) > top || !(0.0..=top).contains(&u) || !(0.0..=top).contains(&v) {
            return lab(yf, uf, vf, self.bpc);
        }
        let (yi, ui, vi) = (usize::from(y) << t.bpc, u as usize, v as usize);
        lab_of_linear(
            t.red[yi | vi],
            linear_green(yf, uf, vf, t.bpc),
            t.blue[yi | ui],
        )
    }

    /// Fills `row` with chroma plane `plane` (0: Cb, 1: Cr) of `planes` as libvmaf reads it
    /// for pixel row `y`.
    fn upsample(&self, planes: &[LumaPlane; 2], plane: usize, y: usize, row: &mut [f32]) {
        let r = &self.read;
        if r.mode == super::Subsampling::Full {
            for (o, &s) in row.iter_mut().zip(planes[plane].row(y)) {
                *o = f32::from(s);
            }
            return;
        }
        for (o, &(dr, col)) in row.iter_mut().zip(&self.columns) {
            *o = 0.0;
            if col == u32::MAX {
                continue;
            }
            let mut p = plane;
            let mut rr = (y >> 1) + dr as usize;
            if rr >= r.height {
                p += 1;
                rr -= r.height;
            }
            if p < 2 && rr < r.height {
                *o = f32::from(planes[p].row(rr)[col as usize]);
            }
        }
    }

    /// `ciede2000` of one frame pair: `45 - 20 * log10(mean CIEDE2000)`, +infinity for
    /// identical frames.
    ///
    /// Errors: [`FeatureError::WrongGeometry`] for planes of another geometry or a frame
    /// without chroma.
    pub fn score(&mut self, f: &HostFrame) -> Result<f64, FeatureError> {
        let g = (self.width, self.height, self.bpc);
        FeatureError::check_plane(FEATURE, g, f.reference)?;
        FeatureError::check_plane(FEATURE, g, f.distorted)?;
        let c = f
            .chroma
            .ok_or_else(|| FeatureError::wrong_size(FEATURE, g, (0, 0)))?;
        let (cw, ch) = (c.reference[0].width, c.reference[0].height);
        for p in c.reference.iter().chain(&c.distorted) {
            FeatureError::check_plane(FEATURE, (cw, ch, self.bpc), p)?;
        }
        // The rows libvmaf reads must lie in the planes given.
        if self.read.width > cw || self.read.height > ch {
            return Err(FeatureError::wrong_size(
                FEATURE,
                (self.read.width, self.read.height, self.bpc),
                (cw, ch),
            ));
        }
        let w = self.width;
        let mut rows = std::mem::take(&mut self.rows);
        let mut sum = 0.0f64;
        for y in 0..self.height {
            {
                let (ru, rest) = rows.split_at_mut(w);
                let (rv, rest) = rest.split_at_mut(w);
                let (du, dv) = rest.split_at_mut(w);
                self.upsample(&c.reference, 0, y, ru);
                self.upsample(&c.reference, 1, y, rv);
                self.upsample(&c.distorted, 0, y, du);
                self.upsample(&c.distorted, 1, y, dv);
            }
            let (ry, dy) = (f.reference.row(y), f.distorted.row(y));
            for x in 0..w {
                let (ru, rv, du, dv) = (rows[x], rows[w + x], rows[2 * w + x], rows[3 * w + x]);
                if ry[x] == dy[x] && ru == du && rv == dv {
                    continue; // equal colours differ by exactly 0
                }
                let l1 = self.lab(ry[x], ru, rv);
                let l2 = self.lab(dy[x], du, dv);
                sum += f64::from(ciede2000(l1, l2));
            }
        }
        self.rows = rows;
        Ok(score_from_sum(sum, w * self.height))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::ciede::{ChromaRead, Subsampling};

    /// The 8- and 10-bit tables give every colour exactly `lab`'s bits.
    #[test]
    fn tables_equal_the_conversion() {
        for (bpc, step) in [(8u32, 1usize), (10, 4)] {
            let c = Ciede::new(
                8,
                8,
                bpc,
                ChromaRead {
                    mode: Subsampling::Full,
                    width: 8,
                    height: 8,
                    stride: 8,
                },
            );
            assert!(c.tables.is_some());
            let top = 1u16 << bpc;
            for y in (0..top).step_by(3 * step) {
                for u in (0..top).step_by(5 * step) {
                    for v in (0..top).step_by(7 * step + 1) {
                        let t = c.lab(y, f32::from(u), f32::from(v));
                        let l = lab(f64::from(y), f64::from(u), f64::from(v), bpc);
                        assert_eq!(
                            (t.l.to_bits(), t.a.to_bits(), t.b.to_bits()),
                            (l.l.to_bits(), l.a.to_bits(), l.b.to_bits()),
                            "{bpc} bits ({y}, {u}, {v})"
                        );
                    }
                }
            }
        }
    }
}
