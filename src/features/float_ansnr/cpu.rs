//! The CPU half of `float_ansnr`: libvmaf's `f32` filters and sums in its order, the filter
//! taps vectorised across the pixels of a row (each pixel's own sum keeps libvmaf's order).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/ansnr.c, ansnr_tools.c (`ansnr_filter2d_s`,
//! `ansnr_mse_s`), picture_copy.c.

use super::params::{dis_filter, mirror, ref_filter, FEATURE};
use crate::features::float_psnr::FloatDepth;
use crate::video::frame::{FeatureError, LumaPlane};

/// Border samples on each side of the padded planes (the 5x5 filter's reach).
const PAD: usize = 2;

/// `float_ansnr`'s scratch for one geometry: both frames as padded `f32` planes and one
/// filtered row each (allocated once).
pub struct Ansnr {
    width: usize,
    height: usize,
    depth: FloatDepth,
    /// `(width + 4) x (height + 4)` samples, borders mirrored as libvmaf's filters read them.
    reference: Vec<f32>,
    distorted: Vec<f32>,
    /// Filtered rows and the filters' per-row partial sums.
    ref_row: Vec<f32>,
    dis_row: Vec<f32>,
    inner: Vec<f32>,
}

impl Ansnr {
    /// The scratch for `width` x `height` planes (at least 3 x 3) read as `depth` says.
    pub fn new(width: usize, height: usize, depth: FloatDepth) -> Self {
        let padded = (width + 2 * PAD) * (height + 2 * PAD);
        Self {
            width,
            height,
            depth,
            reference: vec![0.0; padded],
            distorted: vec![0.0; padded],
            ref_row: vec![0.0; width],
            dis_row: vec![0.0; width],
            inner: vec![0.0; width],
        }
    }

    /// `plane` as libvmaf's float samples (`x / scaler - 128`) into `out`, padded and
    /// mirrored.
    fn load(plane: &LumaPlane, scaler: f32, out: &mut [f32]) {
        let (w, h) = (plane.width, plane.height);
        let pw = w + 2 * PAD;
        for (py, dst) in out.chunks_exact_mut(pw).enumerate().take(h + 2 * PAD) {
            let src = plane.row(mirror(py as isize - PAD as isize, h));
            for (d, &s) in dst[PAD..PAD + w].iter_mut().zip(src) {
                *d = f32::from(s) / scaler + -128.0;
            }
            for k in 0..PAD {
                dst[PAD - 1 - k] = dst[PAD + mirror(-(k as isize) - 1, w)];
                dst[PAD + w + k] = dst[PAD + mirror((w + k) as isize, w)];
            }
        }
    }

    /// Row `y` of the `n`x`n` filter `f` over the padded plane `src` into `out`, libvmaf's
    /// order: the taps of each filter row summed left to right from 0, the rows' sums added
    /// top to bottom from 0.
    fn filter_row(&mut self, f: &[f32], n: usize, reference: bool, y: usize) {
        let (w, pw) = (self.width, self.width + 2 * PAD);
        let src = if reference {
            &self.reference
        } else {
            &self.distorted
        };
        let out = if reference {
            &mut self.ref_row
        } else {
            &mut self.dis_row
        };
        let inner = &mut self.inner;
        let off = PAD - n / 2;
        out.fill(0.0);
        for fi in 0..n {
            let row = &src[(y + off + fi) * pw..][..pw];
            inner.fill(0.0);
            for fj in 0..n {
                let c = f[fi * n + fj];
                let taps = &row[off + fj..off + fj + w];
                for (acc, &x) in inner.iter_mut().zip(taps) {
                    *acc += c * x;
                }
            }
            for (o, &i) in out.iter_mut().zip(inner.iter()) {
                *o += i;
            }
        }
    }

    /// libvmaf's `(sig, noise)` of a frame pair: the `f32` sums, row by row, of the squared
    /// filtered reference and of the squared differences of the filtered frames.
    ///
    /// Errors: [`FeatureError::WrongGeometry`] for planes of another geometry.
    pub fn sums(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
    ) -> Result<(f32, f32), FeatureError> {
        let g = (self.width, self.height, self.depth.bpc);
        FeatureError::check_plane(FEATURE, g, reference)?;
        FeatureError::check_plane(FEATURE, g, distorted)?;
        let scaler = self.depth.scaler;
        Self::load(reference, scaler, &mut self.reference);
        Self::load(distorted, scaler, &mut self.distorted);
        let (rf, df) = (ref_filter(), dis_filter());
        let (mut sig, mut noise) = (0.0f32, 0.0f32);
        for y in 0..self.height {
            self.filter_row(&rf, 3, true, y);
            self.filter_row(&df, 5, false, y);
            let (mut s, mut n) = (0.0f32, 0.0f32);
            for (&r, &d) in self.ref_row.iter().zip(&self.dis_row) {
                s += r * r;
                n += (r - d) * (r - d);
            }
            sig += s;
            noise += n;
        }
        Ok((sig, noise))
    }
}
