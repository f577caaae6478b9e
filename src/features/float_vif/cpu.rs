//! The CPU half of float VIF, and the float plane helpers float motion shares: samples to
//! libvmaf's float levels, separable filters with mirrored borders, all in `f32` with the
//! tap sums in libvmaf's order (tap 0 first, a multiply then an add, never fused), so the
//! filtered planes are bit-identical to libvmaf's (its AVX and C convolutions compute the
//! same sums).
//!
//! Unlike libvmaf, which filters whole planes five times per scale into full-size buffers,
//! this half streams rows: the five vertical sums of an output row (means, squares and the
//! cross product) in one pass over the source rows, their horizontal sums, the statistic,
//! then the next row; between scales only the kept (even) rows and columns of the low-passed
//! planes are computed. Same values, far less memory traffic.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/vif.c (`compute_vif`),
//! libvmaf/src/feature/vif_tools.c (`vif_filter1d_s`, `vif_filter1d_sq_s`,
//! `vif_filter1d_xy_s`, `vif_dec2_s`, `vif_statistic_s`), libvmaf/src/feature/common/
//! convolution_avx.c and convolution_internal.h (the same sums, mirrored edges),
//! libvmaf/src/feature/picture_copy.c (samples to floats).

use super::params::{statistic, FloatVifConfig, Scales, StatParams, SCALES};
use super::prescale;
use crate::video::frame::{FeatureError, LumaPlane};

/// `1 / 2^(bpc - 8)`: libvmaf divides 10-, 12- and 16-bit samples by 4, 16 and 256
/// (`picture_copy`); a power of two, so the product is the same float as the quotient.
/// Other depths (9, 11, 13..15 bits, which libvmaf's `picture_copy` reads as 8-bit data)
/// are brought to the 8-bit range the same way.
pub fn sample_scale(bpc: u32) -> f32 {
    1.0 / (1u32 << (bpc.clamp(8, 16) - 8)) as f32
}

/// `p` as libvmaf's float plane: `sample / 2^(bpc - 8) - 128`, packed `width * height`
/// into `out` (resized).
pub fn to_float(p: &LumaPlane, out: &mut Vec<f32>) {
    let (w, h) = (p.width, p.height);
    out.resize(w * h, 0.0);
    let scale = sample_scale(p.bpc);
    for (y, dst) in out.chunks_exact_mut(w).take(h).enumerate() {
        level_row(p.row(y), scale, dst);
    }
}

#[multiversion::multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
fn level_row(src: &[u16], scale: f32, dst: &mut [f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = f32::from(s) * scale - 128.0;
    }
}

/// Reflects `i` into `0..n` without repeating the edge sample (-1 -> 1, n -> n - 2), as
/// libvmaf's float filters do; clamped for indices further out (never reached for planes of
/// at least a filter radius plus one).
#[inline]
pub fn mirror(i: isize, n: usize) -> usize {
    let n = n as isize;
    let r = if i < 0 {
        -i
    } else if i >= n {
        2 * n - i - 2
    } else {
        i
    };
    r.clamp(0, n - 1) as usize
}

/// Writes the mirrored borders of a padded row: `pad` holds `r` samples, the row's `w`
/// samples, then `r` samples; the outer ones become the row's reflections.
#[inline]
fn fill_pads(pad: &mut [f32], r: usize, w: usize) {
    for k in 1..=r {
        pad[r - k] = pad[r + mirror(-(k as isize), w)];
        pad[r + w - 1 + k] = pad[r + mirror((w - 1 + k) as isize, w)];
    }
}

/// `out[j] += f * row[j]`.
#[inline(always)]
fn axpy(out: &mut [f32], f: f32, row: &[f32]) {
    for (o, &x) in out.iter_mut().zip(row) {
        *o += f * x;
    }
}

/// Horizontal pass over a padded row: `out[j] = sum_k f[k] * pad[j + k]` in tap order.
#[multiversion::multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
pub fn horizontal(f: &[f32], pad: &[f32], out: &mut [f32]) {
    let w = out.len();
    out.fill(0.0);
    for (k, &fk) in f.iter().enumerate() {
        axpy(out, fk, &pad[k..k + w]);
    }
}

/// Horizontal pass at even columns only: `out[j] = sum_k f[k] * pad[2j + k]`.
fn horizontal_even(f: &[f32], pad: &[f32], out: &mut [f32]) {
    for (j, o) in out.iter_mut().enumerate() {
        let mut acc = 0.0f32;
        for (k, &fk) in f.iter().enumerate() {
            acc += fk * pad[2 * j + k];
        }
        *o = acc;
    }
}

/// Vertical pass of output row `i` of the `w` x `h` plane `src`: `out[j] = sum_k f[k] *
/// src[mirror(i - r + k)][j]`.
#[multiversion::multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
pub fn vertical(f: &[f32], src: &[f32], w: usize, h: usize, i: usize, out: &mut [f32]) {
    let r = f.len() / 2;
    let out = &mut out[..w];
    out.fill(0.0);
    for (k, &fk) in f.iter().enumerate() {
        let y = mirror(i as isize - r as isize + k as isize, h);
        axpy(out, fk, &src[y * w..y * w + w]);
    }
}

/// The separable filter `f` over the `w` x `h` plane `src` into `dst` (libvmaf's
/// `convolution_f32_c_s` / `vif_filter1d_s`); `pad` is scratch.
pub fn filter_plane(
    f: &[f32],
    src: &[f32],
    w: usize,
    h: usize,
    pad: &mut Vec<f32>,
    dst: &mut [f32],
) {
    let r = f.len() / 2;
    pad.resize(w + 2 * r, 0.0);
    for i in 0..h {
        vertical(f, src, w, h, i, &mut pad[r..r + w]);
        fill_pads(pad, r, w);
        horizontal(f, pad, &mut dst[i * w..i * w + w]);
    }
}

/// The five vertical sums of one output row: the means of the reference and distorted
/// planes, their squares and their product, `f[k] * (a * b)` per tap as libvmaf does.
#[multiversion::multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
fn vertical5(
    f: &[f32],
    (a, b): (&[f32], &[f32]),
    w: usize,
    h: usize,
    i: usize,
    out: [&mut [f32]; 5],
) {
    let r = f.len() / 2;
    let [m1, m2, xx, yy, xy] = out;
    let (m1, m2, xx, yy, xy) = (
        &mut m1[..w],
        &mut m2[..w],
        &mut xx[..w],
        &mut yy[..w],
        &mut xy[..w],
    );
    for o in [&mut *m1, &mut *m2, &mut *xx, &mut *yy, &mut *xy] {
        o.fill(0.0);
    }
    for (k, &fk) in f.iter().enumerate() {
        let y = mirror(i as isize - r as isize + k as isize, h);
        let ra = &a[y * w..y * w + w];
        let rb = &b[y * w..y * w + w];
        for j in 0..w {
            let (x, z) = (ra[j], rb[j]);
            m1[j] += fk * x;
            m2[j] += fk * z;
            xx[j] += fk * (x * x);
            yy[j] += fk * (z * z);
            xy[j] += fk * (x * z);
        }
    }
}

/// The statistic of one row into `num` and `den` (per pixel), vectorised; the caller sums
/// them in libvmaf's order.
#[multiversion::multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
fn statistic_row(h: [&[f32]; 5], p: &StatParams, num: &mut [f32], den: &mut [f32]) {
    let [m1, m2, xx, yy, xy] = h;
    let n = num.len();
    let (m1, m2, xx, yy, xy, den) = (
        &m1[..n],
        &m2[..n],
        &xx[..n],
        &yy[..n],
        &xy[..n],
        &mut den[..n],
    );
    for j in 0..n {
        let (a, b) = statistic(m1[j], m2[j], xx[j], yy[j], xy[j], p);
        num[j] = a;
        den[j] = b;
    }
}

/// Float VIF of one geometry: the float planes of both frames and row scratch, allocated once.
pub struct FloatVif {
    width: usize,
    height: usize,
    /// The size after the prescale (the input size without one).
    scaled: (usize, usize),
    bpc: u32,
    cfg: FloatVifConfig,
    filters: [Vec<f32>; SCALES],
    /// The current scale's planes (scale 0: the frames as floats).
    a: Vec<f32>,
    b: Vec<f32>,
    /// The next scale's planes.
    na: Vec<f32>,
    nb: Vec<f32>,
    /// Five padded vertical rows, five horizontal rows, per-pixel num and den.
    pads: [Vec<f32>; 5],
    rows: [Vec<f32>; 5],
    num: Vec<f32>,
    den: Vec<f32>,
}

impl FloatVif {
    /// Scratch for `width` x `height` planes of `bpc` bits with the options `cfg`.
    ///
    /// Errors: [`FeatureError::FrameTooSmall`] below [`FloatVifConfig::min_size`].
    pub fn new(
        width: usize,
        height: usize,
        bpc: u32,
        cfg: FloatVifConfig,
    ) -> Result<Self, FeatureError> {
        FeatureError::check_new(super::FEATURE, (width, height, bpc), cfg.min_size())?;
        let scaled = cfg.scaled_size(width, height);
        let m = cfg.min_scaled_size();
        FeatureError::check_new(super::FEATURE, (scaled.0, scaled.1, bpc), (m, m))?;
        let filters = std::array::from_fn(|s| cfg.filter(s));
        let rmax = filters.iter().map(|f| f.len() / 2).max().unwrap_or(0);
        let n = (width * height).max(scaled.0 * scaled.1);
        let sw = scaled.0;
        Ok(Self {
            width,
            height,
            scaled,
            bpc,
            cfg,
            filters,
            a: vec![0.0; n],
            b: vec![0.0; n],
            na: vec![0.0; n],
            nb: vec![0.0; n],
            pads: std::array::from_fn(|_| vec![0.0; sw + 2 * rmax]),
            rows: std::array::from_fn(|_| vec![0.0; sw]),
            num: vec![0.0; sw],
            den: vec![0.0; sw],
        })
    }

    /// libvmaf's `num` and `den` of every scale (`f32` sums, as `vif_statistic_s` returns
    /// them) for the reference and distorted planes; scale 0 is left at (0, 0) with
    /// `vif_skip_scale0`.
    ///
    /// Errors: [`FeatureError::WrongGeometry`] for planes of another geometry.
    pub fn compute(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
    ) -> Result<Scales, FeatureError> {
        let geo = (self.width, self.height, self.bpc);
        for p in [reference, distorted] {
            FeatureError::check_plane(super::FEATURE, geo, p)?;
        }
        let source = (self.width, self.height);
        if self.scaled == source {
            to_float(reference, &mut self.a);
            to_float(distorted, &mut self.b);
        } else {
            let method = self.cfg.method();
            to_float(reference, &mut self.na);
            to_float(distorted, &mut self.nb);
            prescale::scale(method, &self.na, source, &mut self.a, self.scaled);
            prescale::scale(method, &self.nb, source, &mut self.b, self.scaled);
        }
        let params = self.cfg.stat_params();
        let mut out = Scales::default();
        let (mut w, mut h) = self.scaled;
        for s in 0..SCALES {
            if s > 0 {
                self.decimate(s, w, h);
                w /= 2;
                h /= 2;
                std::mem::swap(&mut self.a, &mut self.na);
                std::mem::swap(&mut self.b, &mut self.nb);
            }
            if s == 0 && self.cfg.skip_scale0 {
                continue;
            }
            let (num, den) = self.scale_stats(s, w, h, &params);
            out.num[s] = f64::from(num);
            out.den[s] = f64::from(den);
        }
        // Three swaps (one per scale after the first, SCALES even): put the full-size buffers
        // back where the next frame's levels go.
        const _: () = assert!(SCALES.is_multiple_of(2));
        std::mem::swap(&mut self.a, &mut self.na);
        std::mem::swap(&mut self.b, &mut self.nb);
        Ok(out)
    }

    /// Low-passes the current `w` x `h` planes with scale `s`'s filter and keeps the even
    /// rows and columns (`vif_filter1d_s` then `vif_dec2_s`) into `na`, `nb`.
    fn decimate(&mut self, s: usize, w: usize, h: usize) {
        let f = &self.filters[s];
        let r = f.len() / 2;
        let (nw, nh) = (w / 2, h / 2);
        let [pa, pb, ..] = &mut self.pads;
        for i in 0..nh {
            for (src, pad, dst) in [
                (&self.a, &mut *pa, &mut self.na),
                (&self.b, &mut *pb, &mut self.nb),
            ] {
                vertical(f, &src[..w * h], w, h, 2 * i, &mut pad[r..r + w]);
                fill_pads(pad, r, w);
                horizontal_even(f, &pad[..w + 2 * r], &mut dst[i * nw..i * nw + nw]);
            }
        }
    }

    /// The statistic's sums over the current `w` x `h` planes at scale `s`: `(num, den)` as
    /// libvmaf's `f32` accumulators (per-row sums added row by row).
    fn scale_stats(&mut self, s: usize, w: usize, h: usize, p: &StatParams) -> (f32, f32) {
        let f = &self.filters[s];
        let r = f.len() / 2;
        let (a, b) = (&self.a[..w * h], &self.b[..w * h]);
        let mut acc_num = 0.0f32;
        let mut acc_den = 0.0f32;
        for i in 0..h {
            {
                let [p0, p1, p2, p3, p4] = &mut self.pads;
                vertical5(
                    f,
                    (a, b),
                    w,
                    h,
                    i,
                    [
                        &mut p0[r..r + w],
                        &mut p1[r..r + w],
                        &mut p2[r..r + w],
                        &mut p3[r..r + w],
                        &mut p4[r..r + w],
                    ],
                );
            }
            for (pad, row) in self.pads.iter_mut().zip(self.rows.iter_mut()) {
                fill_pads(pad, r, w);
                horizontal(f, &pad[..w + 2 * r], &mut row[..w]);
            }
            let [r0, r1, r2, r3, r4] = &self.rows;
            statistic_row(
                [&r0[..w], &r1[..w], &r2[..w], &r3[..w], &r4[..w]],
                p,
                &mut self.num[..w],
                &mut self.den[..w],
            );
            let mut row_num = 0.0f32;
            let mut row_den = 0.0f32;
            for (&n, &d) in self.num[..w].iter().zip(&self.den[..w]) {
                row_num += n;
                row_den += d;
            }
            acc_num += row_num;
            acc_den += row_den;
        }
        (acc_num, acc_den)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{statistic, FloatVifConfig, SCALES};
    use super::*;

    /// libvmaf's separable filter on whole planes, written from its edge formula: the
    /// vertical sums of `f(a, b)` per tap, then the horizontal sums.
    fn naive_filter(
        f: &[f32],
        (a, b): (&[f32], &[f32]),
        w: usize,
        h: usize,
        tap: impl Fn(f32, f32) -> f32,
    ) -> Vec<f32> {
        let r = f.len() as isize / 2;
        let m = |i: isize, n: usize| -> usize {
            let n = n as isize;
            (if i < 0 {
                -i
            } else if i >= n {
                2 * n - i - 2
            } else {
                i
            }) as usize
        };
        let mut tmp = vec![0.0f32; w * h];
        for i in 0..h {
            for j in 0..w {
                let mut acc = 0.0f32;
                for (k, &fk) in f.iter().enumerate() {
                    let y = m(i as isize - r + k as isize, h);
                    acc += fk * tap(a[y * w + j], b[y * w + j]);
                }
                tmp[i * w + j] = acc;
            }
        }
        let mut out = vec![0.0f32; w * h];
        for i in 0..h {
            for j in 0..w {
                let mut acc = 0.0f32;
                for (k, &fk) in f.iter().enumerate() {
                    acc += fk * tmp[i * w + m(j as isize - r + k as isize, w)];
                }
                out[i * w + j] = acc;
            }
        }
        out
    }

    /// `compute_vif` as libvmaf lays it out (whole filtered planes, `vif_dec2_s`).
    fn naive_vif(cfg: &FloatVifConfig, a: &[f32], b: &[f32], w: usize, h: usize) -> Scales {
        let p = cfg.stat_params();
        let (mut a, mut b, mut w, mut h) = (a.to_vec(), b.to_vec(), w, h);
        let mut out = Scales::default();
        for s in 0..SCALES {
            let f = cfg.filter(s);
            if s > 0 {
                let mu1 = naive_filter(&f, (&a, &b), w, h, |x, _| x);
                let mu2 = naive_filter(&f, (&a, &b), w, h, |_, z| z);
                let (nw, nh) = (w / 2, h / 2);
                let dec = |m: &[f32]| -> Vec<f32> {
                    (0..nh)
                        .flat_map(|i| (0..nw).map(move |j| (i, j)))
                        .map(|(i, j)| m[2 * i * w + 2 * j])
                        .collect()
                };
                a = dec(&mu1);
                b = dec(&mu2);
                w = nw;
                h = nh;
            }
            let mu1 = naive_filter(&f, (&a, &b), w, h, |x, _| x);
            let mu2 = naive_filter(&f, (&a, &b), w, h, |_, z| z);
            let xx = naive_filter(&f, (&a, &b), w, h, |x, _| x * x);
            let yy = naive_filter(&f, (&a, &b), w, h, |_, z| z * z);
            let xy = naive_filter(&f, (&a, &b), w, h, |x, z| x * z);
            let (mut num, mut den) = (0.0f32, 0.0f32);
            for i in 0..h {
                let (mut rn, mut rd) = (0.0f32, 0.0f32);
                for j in 0..w {
                    let k = i * w + j;
                    let (n, d) = statistic(mu1[k], mu2[k], xx[k], yy[k], xy[k], &p);
                    rn += n;
                    rd += d;
                }
                num += rn;
                den += rd;
            }
            out.num[s] = f64::from(num);
            out.den[s] = f64::from(den);
        }
        out
    }

    #[test]
    fn streamed_rows_equal_whole_planes() {
        let mut seed = 99u32;
        let mut next = |bpc: u32| {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            ((seed >> 8) % (1 << bpc)) as u16
        };
        let half = FloatVifConfig {
            kernelscale: 0.5,
            ..FloatVifConfig::default()
        };
        for cfg in [FloatVifConfig::default(), half] {
            for (w, h, bpc) in [(16, 16, 8), (17, 23, 10), (40, 33, 8), (31, 64, 12)] {
                let n = w * h;
                let r: Vec<u16> = (0..n).map(|_| next(bpc)).collect();
                // A distortion correlated with the reference: a gain and noise.
                let d: Vec<u16> = r
                    .iter()
                    .map(|&v| ((v as u32 * 7 / 8) as u16).saturating_add(next(bpc) % 16))
                    .map(|v| v.min(((1u32 << bpc) - 1) as u16))
                    .collect();
                let (pr, pd) = (
                    LumaPlane::packed(&r, w, h, bpc).expect("plane"),
                    LumaPlane::packed(&d, w, h, bpc).expect("plane"),
                );
                let mut v = FloatVif::new(w, h, bpc, cfg.clone()).expect("new");
                let got = v.compute(&pr, &pd).expect("compute");
                let again = v.compute(&pr, &pd).expect("compute");
                let (mut fa, mut fb) = (Vec::new(), Vec::new());
                to_float(&pr, &mut fa);
                to_float(&pd, &mut fb);
                let want = naive_vif(&cfg, &fa, &fb, w, h);
                assert_eq!(got, want, "{w}x{h}@{bpc} ks {}", cfg.kernelscale);
                assert_eq!(again, want, "second frame");
            }
        }
    }
}
