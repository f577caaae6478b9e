//! The CPU half of SpEED chroma, in libvmaf's `float` / `double` arithmetic and operation
//! order (see the module docs of [`super`]).
//!
//! libvmaf filters the whole (rescaled) plane with the anti-aliasing Gaussian and then keeps
//! every 16th sample of every 16th row; this half computes only the kept samples, with the
//! same sums in the same order (the separable filter's vertical pass at the 9 columns each
//! kept sample's horizontal pass reads), so the decimated plane is bit-identical at a 256th
//! of the work.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/speed.c (`filter_and_downscale`,
//! `est_params`, `get_speed_score`), libvmaf/src/feature/vif_tools.c (`vif_filter1d_s`,
//! `vif_dec16_s`, the nearest and bilinear `vif_scale_frame_s`),
//! libvmaf/src/feature/common/convolution_avx.c (the same filter sums, mirrored edges).

use super::linalg;
use super::params::{
    antialias_filter, combine, local_mean_filter, Dims, Prescale, SpeedConfig, BLOCK, EIGEN_EPS, N,
    SCALES,
};
use crate::video::frame::LumaPlane;

/// `log2(2 pi e)`, the entropy of a unit Gaussian's offset (libvmaf's `log2(2 * M_PI * M_E)`).
pub fn log2_2pie() -> f64 {
    (2.0 * std::f64::consts::PI * std::f64::consts::E).log2()
}

/// Mirrors `i` into `0..n` without repeating the edge (-1 -> 1, n -> n - 2), as libvmaf's
/// filters do.
#[inline]
pub fn mirror(i: i64, n: usize) -> usize {
    let n = n as i64;
    let r = if i < 0 {
        -i
    } else if i >= n {
        2 * n - i - 2
    } else {
        i
    };
    r.clamp(0, n - 1) as usize
}

/// Where a rescaled row or column reads the source: libvmaf's bilinear tables
/// (`vif_scale_frame_bilinear_precompute_columns_s`) or the nearest sample (`i1 == i2`,
/// `frac == 0`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tap {
    /// First source index.
    pub i1: u32,
    /// Second source index.
    pub i2: u32,
    /// Weight of the second one.
    pub frac: f32,
}

/// The taps of `dst` rescaled positions reading a `src`-long source, in libvmaf's
/// arithmetic (the position in `double`, stored as `float`; nearest: `(int)(i * ratio)`).
/// Without rescaling, the identity (clamped to the source).
pub fn taps(src: usize, dst: usize, cfg: &SpeedConfig) -> Vec<Tap> {
    let ratio = src as f32 / dst as f32;
    (0..dst)
        .map(|i| {
            if !cfg.rescales() {
                let k = i.min(src - 1) as u32;
                return Tap {
                    i1: k,
                    i2: k,
                    frac: 0.0,
                };
            }
            match cfg.method {
                Prescale::Nearest => {
                    let k = ((i as f32 * ratio) as usize).min(src - 1) as u32;
                    Tap {
                        i1: k,
                        i2: k,
                        frac: 0.0,
                    }
                }
                Prescale::Bilinear => {
                    let pos = ((i as f64 + 0.5) * f64::from(ratio) - 0.5) as f32;
                    let right = (src - 1) as f32;
                    let mirror = |v: f32| {
                        if v < 0.0 {
                            -v
                        } else if v > right {
                            2.0 * right - v
                        } else {
                            v
                        }
                    };
                    let i1 = mirror(f64::from(pos).floor() as f32) as i32;
                    let i2 = mirror(f64::from(pos).ceil() as f32) as i32;
                    Tap {
                        i1: i1.clamp(0, src as i32 - 1) as u32,
                        i2: i2.clamp(0, src as i32 - 1) as u32,
                        frac: pos - i1 as f32,
                    }
                }
            }
        })
        .collect()
}

/// A plane's sample as libvmaf's float buffer holds it: `sample / 2^(bpc - 8) - 128`
/// (`picture_copy` with offset -128).
#[inline]
fn level(p: &LumaPlane, x: usize, y: usize, inv: f32) -> f32 {
    f32::from(p.data[y * p.stride + x]) * inv + -128.0
}

/// `1 / 2^(bpc - 8)`: multiplying by it is dividing by the power of two, exactly.
fn inverse_scale(bpc: u32) -> f32 {
    1.0 / (1u32 << bpc.saturating_sub(8)) as f32
}

/// The float plane SpEED filters, sample by sample: what libvmaf's float frame buffer
/// holds before `filter_and_downscale`.
pub trait Samples {
    /// Width of the plane.
    fn width(&self) -> usize;
    /// Rows of the plane.
    fn height(&self) -> usize;
    /// Sample (x, y), `x < width`, `y < height`.
    fn at(&self, x: usize, y: usize) -> f32;
    /// Samples `x..x + out.len()` of row `y` (within the plane) into `out`.
    fn row(&self, y: usize, x: usize, out: &mut [f32]) {
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.at(x + i, y);
        }
    }
}

/// A plane as libvmaf's float buffer holds it ([`level`]): SpEED chroma's input.
#[derive(Clone, Copy)]
pub struct Levels<'p, 'a> {
    plane: &'p LumaPlane<'a>,
    inv: f32,
}

impl<'p, 'a> Levels<'p, 'a> {
    /// `plane`'s samples, scaled by its own depth.
    pub fn new(plane: &'p LumaPlane<'a>) -> Self {
        Self::with_depth(plane, plane.bpc)
    }

    /// `plane`'s samples scaled as `bpc`-bit ones (libvmaf copies the distorted frame of
    /// `speed_temporal` with the reference's depth).
    pub fn with_depth(plane: &'p LumaPlane<'a>, bpc: u32) -> Self {
        Self {
            plane,
            inv: inverse_scale(bpc),
        }
    }
}

impl Samples for Levels<'_, '_> {
    fn width(&self) -> usize {
        self.plane.width
    }
    fn height(&self) -> usize {
        self.plane.height
    }
    #[inline]
    fn at(&self, x: usize, y: usize) -> f32 {
        level(self.plane, x, y, self.inv)
    }
    #[inline]
    fn row(&self, y: usize, x: usize, out: &mut [f32]) {
        let p = self.plane;
        let src = &p.data[y * p.stride + x..][..out.len()];
        for (o, &s) in out.iter_mut().zip(src) {
            *o = f32::from(s) * self.inv + -128.0;
        }
    }
}

/// The difference of two planes' levels, `a - b` in `float` (libvmaf's `subtract_image` of
/// two float frame buffers): `speed_temporal`'s input, the previous frame less the current.
/// Both planes have the size of `a`.
#[derive(Clone, Copy)]
pub struct Difference<'p, 'a> {
    /// The minuend.
    pub a: Levels<'p, 'a>,
    /// The subtrahend.
    pub b: Levels<'p, 'a>,
}

impl Samples for Difference<'_, '_> {
    fn width(&self) -> usize {
        self.a.width().min(self.b.width())
    }
    fn height(&self) -> usize {
        self.a.height().min(self.b.height())
    }
    #[inline]
    fn at(&self, x: usize, y: usize) -> f32 {
        self.a.at(x, y) - self.b.at(x, y)
    }
    #[inline]
    fn row(&self, y: usize, x: usize, out: &mut [f32]) {
        let (a, b) = (self.a.plane, self.b.plane);
        let n = out.len();
        let sa = &a.data[y * a.stride + x..][..n];
        let sb = &b.data[y * b.stride + x..][..n];
        for ((o, &u), &v) in out.iter_mut().zip(sa).zip(sb) {
            *o = (f32::from(u) * self.a.inv + -128.0) - (f32::from(v) * self.b.inv + -128.0);
        }
    }
}

/// The SpEED state for one plane size and option set: filters, rescaling taps and scratch.
pub struct Speed {
    dims: Dims,
    cfg: SpeedConfig,
    antialias: Vec<f32>,
    local: Vec<f32>,
    cols: Vec<Tap>,
    rows: Vec<Tap>,
    /// Decimated plane, `op_width * op_height`.
    plane: Vec<f32>,
    /// Filter pass scratch, same size.
    tmp: Vec<f32>,
    /// The 25 centred windows of the covariance, `N * sub_width * sub_height`, as `f64`.
    centred: Vec<f64>,
    /// Independent term and solution, `N * blocks`.
    y: Vec<f32>,
    x: Vec<f32>,
}

/// Entropies and variances of one plane's blocks (`blocks` each), and whether its
/// covariance matrix was singular.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    /// Entropy per block.
    pub entropies: Vec<f32>,
    /// Variance per block.
    pub variances: Vec<f32>,
    /// The covariance matrix could not be inverted (the variances are then 0).
    pub singular: bool,
}

impl Speed {
    /// State for planes of `dims` (at least one block, see [`super::SpeedInstance::dims`]).
    pub fn new(dims: Dims, cfg: SpeedConfig) -> Self {
        let (ow, oh) = (dims.op_width, dims.op_height);
        let sub = dims.sub_width() * dims.sub_height();
        Self {
            dims,
            cfg,
            antialias: antialias_filter(cfg.kernelscale),
            local: local_mean_filter(cfg.kernelscale),
            cols: taps(dims.width, dims.scaled_width, &cfg),
            rows: taps(dims.height, dims.scaled_height, &cfg),
            plane: vec![0.0; ow * oh],
            tmp: vec![0.0; ow * oh],
            centred: vec![0.0; N * sub],
            y: vec![0.0; N * dims.blocks()],
            x: vec![0.0; N * dims.blocks()],
        }
    }

    /// The sizes.
    pub fn dims(&self) -> Dims {
        self.dims
    }

    /// `[u, v, uv]` scores of `planes` (`[[ref_u, dis_u], [ref_v, dis_v]]`, each at least
    /// `dims.width` x `dims.height`, read from the top left), clipped to `speed_max_val`.
    pub fn scores(&mut self, planes: &[[LumaPlane; 2]; 2]) -> [f64; 3] {
        let u = self.plane_score(&planes[0][0], &planes[0][1]);
        let v = self.plane_score(&planes[1][0], &planes[1][1]);
        combine(u, v, self.cfg.max_val)
    }

    /// One plane's score and whether a covariance was singular (libvmaf's
    /// `speed_extract_score`): 0 when exactly one of the two was.
    pub fn plane_score(&mut self, reference: &LumaPlane, distorted: &LumaPlane) -> (f32, bool) {
        let r = self.params(reference);
        self.score_against(&r, distorted)
    }

    /// [`Speed::scores`] of several distorted frames' planes (`[Cb, Cr]` each) against one
    /// reference's: the reference planes' parameters computed once. Each frame's scores
    /// equal [`Speed::scores`]'s for that pair, bit for bit.
    pub fn scores_ladder(
        &mut self,
        reference: &[LumaPlane; 2],
        distorted: &[[LumaPlane; 2]],
    ) -> Vec<[f64; 3]> {
        let r = [self.params(&reference[0]), self.params(&reference[1])];
        distorted
            .iter()
            .map(|d| {
                let u = self.score_against(&r[0], &d[0]);
                let v = self.score_against(&r[1], &d[1]);
                combine(u, v, self.cfg.max_val)
            })
            .collect()
    }

    /// [`Speed::plane_score`] with the reference plane's parameters `r` already computed.
    fn score_against(&mut self, r: &Params, distorted: &LumaPlane) -> (f32, bool) {
        let d = self.params(distorted);
        self.pair_score(r, &d)
    }

    /// [`Speed::plane_score`] of any two float planes (libvmaf's `speed_extract_score` on
    /// two float frame buffers, `speed_temporal`'s frame differences), unclipped.
    pub fn samples_score<R: Samples, D: Samples>(
        &mut self,
        reference: &R,
        distorted: &D,
    ) -> (f32, bool) {
        let r = self.params_of(reference);
        let d = self.params_of(distorted);
        self.pair_score(&r, &d)
    }

    /// The score of two planes' parameters: 0 when exactly one covariance was singular.
    fn pair_score(&self, r: &Params, d: &Params) -> (f32, bool) {
        let score = if r.singular != d.singular {
            0.0
        } else {
            score(&self.dims, &self.cfg, r, d)
        };
        (score, r.singular || d.singular)
    }

    /// The decimated, mean-removed plane of `p` (`op_width * op_height`, row-major).
    pub fn downscale(&mut self, p: &LumaPlane) -> &[f32] {
        self.downscale_samples(&Levels::new(p))
    }

    /// [`Speed::downscale`] of any float plane `p` of at least `dims.width` x `dims.height`
    /// samples (read from the top left).
    pub fn downscale_samples<S: Samples>(&mut self, p: &S) -> &[f32] {
        let d = self.dims;
        let f = &self.antialias;
        let radius = (f.len() / 2) as i64;
        let (sw, sh) = (d.scaled_width, d.scaled_height);
        let direct = !self.cfg.rescales();
        let taps = f.len();
        let mut column = [0f32; 128];
        let mut samples = [0f32; 128];
        let (mut sy, mut sx) = ([0usize; 128], [0usize; 128]);
        // Columns whose taps all lie inside the plane, neither mirrored nor clamped.
        let inside = sw.min(p.width());
        for r in 0..d.op_height {
            let y0 = (r << SCALES) as i64;
            for (t, y) in sy[..taps].iter_mut().enumerate() {
                *y = mirror(y0 - radius + t as i64, sh);
            }
            for c in 0..d.op_width {
                let x0 = (c << SCALES) as i64;
                for (k, x) in sx[..taps].iter_mut().enumerate() {
                    *x = mirror(x0 - radius + k as i64, sw);
                }
                let left = x0 - radius;
                if direct && left >= 0 && left as usize + taps <= inside {
                    // The vertical pass of the taps columns a row at a time: each column's
                    // sum over the rows in the same order, so the same value, from
                    // contiguous samples.
                    let column = &mut column[..taps];
                    let row = &mut samples[..taps];
                    column.iter_mut().for_each(|c| *c = 0.0);
                    for (&w, &y) in f.iter().zip(&sy[..taps]) {
                        p.row(y.min(p.height() - 1), left as usize, row);
                        for (c, &v) in column.iter_mut().zip(row.iter()) {
                            *c += w * v;
                        }
                    }
                    let mut acc = 0f32;
                    for (&w, &v) in f.iter().zip(column.iter()) {
                        acc += w * v;
                    }
                    self.plane[r * d.op_width + c] = acc;
                    continue;
                }
                for (out, &x) in column[..taps].iter_mut().zip(&sx[..taps]) {
                    let mut acc = 0f32;
                    for (&w, &y) in f.iter().zip(&sy[..taps]) {
                        let v = if direct {
                            p.at(x.min(p.width() - 1), y.min(p.height() - 1))
                        } else {
                            self.scaled(p, x, y)
                        };
                        acc += w * v;
                    }
                    *out = acc;
                }
                let mut acc = 0f32;
                for (&w, &v) in f.iter().zip(&column[..taps]) {
                    acc += w * v;
                }
                self.plane[r * d.op_width + c] = acc;
            }
        }
        local_mean_subtract(
            &mut self.plane,
            &mut self.tmp,
            d.op_width,
            d.op_height,
            &self.local,
        );
        &self.plane
    }

    /// Sample (x, y) of the rescaled plane, as libvmaf's float buffer holds it.
    #[inline]
    fn scaled<S: Samples>(&self, p: &S, x: usize, y: usize) -> f32 {
        let (cx, ry) = (self.cols[x], self.rows[y]);
        if cx.frac == 0.0 && ry.frac == 0.0 && cx.i1 == cx.i2 && ry.i1 == ry.i2 {
            return p.at(cx.i1 as usize, ry.i1 as usize);
        }
        let (x1, x2, y1, y2) = (
            cx.i1 as usize,
            cx.i2 as usize,
            ry.i1 as usize,
            ry.i2 as usize,
        );
        let (dx, dy) = (cx.frac, ry.frac);
        (1.0 - dy) * (1.0 - dx) * p.at(x1, y1)
            + (1.0 - dy) * dx * p.at(x2, y1)
            + dy * (1.0 - dx) * p.at(x1, y2)
            + dy * dx * p.at(x2, y2)
    }

    /// Entropies and variances of `p`'s blocks (libvmaf's `filter_and_downscale` and
    /// `est_params`).
    pub fn params(&mut self, p: &LumaPlane) -> Params {
        self.params_of(&Levels::new(p))
    }

    /// [`Speed::params`] of any float plane (see [`Speed::downscale_samples`]).
    pub fn params_of<S: Samples>(&mut self, p: &S) -> Params {
        self.downscale_samples(p);
        let d = self.dims;
        let k = covariance(&self.plane, d, &mut self.centred);
        let eig = linalg::eigenvalues(&k);
        let nb = d.blocks();
        for e in 0..N {
            let (si, sj) = (e / BLOCK, e % BLOCK);
            for by in 0..d.blocks_y {
                for bx in 0..d.blocks_x {
                    self.y[e * nb + by * d.blocks_x + bx] =
                        self.plane[(by * BLOCK + si) * d.op_width + bx * BLOCK + sj];
                }
            }
        }
        // libvmaf's test: no eigenvalue below the threshold (a NaN passes).
        let regular = !eig.iter().any(|&l| f64::from(l) < EIGEN_EPS);
        let solved = regular && linalg::solve(&k, &self.y, nb, &mut self.x);
        if !solved {
            self.x.iter_mut().for_each(|v| *v = 0.0);
        }
        finish_params(
            &eig,
            &self.x,
            &self.y,
            nb,
            self.cfg.sigma_nn as f32,
            !solved,
        )
    }
}

/// The separable local-mean filter of the decimated `plane` (`w` x `h`), subtracted from it
/// in place (libvmaf's scale-4 `vif_filter1d_s` and `subtract_image`).
pub fn local_mean_subtract(plane: &mut [f32], tmp: &mut [f32], w: usize, h: usize, f: &[f32]) {
    let radius = (f.len() / 2) as i64;
    for y in 0..h {
        for x in 0..w {
            let mut acc = 0f32;
            for (t, &c) in f.iter().enumerate() {
                acc += c * plane[mirror(y as i64 - radius + t as i64, h) * w + x];
            }
            tmp[y * w + x] = acc;
        }
    }
    for y in 0..h {
        let row = &tmp[y * w..(y + 1) * w];
        for x in 0..w {
            let mut acc = 0f32;
            for (t, &c) in f.iter().enumerate() {
                acc += c * row[mirror(x as i64 - radius + t as i64, w)];
            }
            plane[y * w + x] -= acc;
        }
    }
}

/// The 25x25 covariance matrix of the decimated `plane` (`op_width` wide): entry (p, q)
/// covers the two windows of `sub_width` x `sub_height` samples shifted by block offsets p
/// and q; means summed in `float` row by row, the centred products in `double`, the result
/// stored as `float` (libvmaf's `compute_covariance_matrix`). `centred`: scratch of
/// `N * sub_width * sub_height`.
pub fn covariance(plane: &[f32], d: Dims, centred: &mut [f64]) -> Box<[f32; N * N]> {
    let (sw, sh, w) = (d.sub_width(), d.sub_height(), d.op_width);
    let count = sw * sh;
    for e in 0..N {
        let (r0, c0) = (e / BLOCK, e % BLOCK);
        let mut sum = 0f32;
        for i in 0..sh {
            for &v in &plane[(r0 + i) * w + c0..][..sw] {
                sum += v;
            }
        }
        let mean = f64::from(sum / count as f32);
        let out = &mut centred[e * count..(e + 1) * count];
        for i in 0..sh {
            let src = &plane[(r0 + i) * w + c0..][..sw];
            for (o, &v) in out[i * sw..(i + 1) * sw].iter_mut().zip(src) {
                *o = f64::from(v) - mean;
            }
        }
    }
    let mut k = Box::new([0f32; N * N]);
    for p in 0..N {
        for q in 0..=p {
            let (a, b) = (
                &centred[p * count..][..count],
                &centred[q * count..][..count],
            );
            // Eight partial sums (libvmaf's own AVX kernels reorder the double sum too; the
            // difference is far below the float the result is stored as).
            let mut acc = [0f64; 8];
            let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
            let (ra, rb) = (ca.remainder(), cb.remainder());
            for (x, y) in ca.zip(cb) {
                for l in 0..8 {
                    acc[l] += x[l] * y[l];
                }
            }
            let mut tail = 0f64;
            for (x, y) in ra.iter().zip(rb) {
                tail += x * y;
            }
            let s = ((acc[0] + acc[1]) + (acc[2] + acc[3]))
                + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
                + tail;
            let v = (s / count as f64) as f32;
            k[p * N + q] = v;
            k[q * N + p] = v;
        }
    }
    k
}

/// Steps 5 to 10 of libvmaf's `est_params`: each block's variance (the column sums of
/// `x .* y / 25`) and entropy (`sum over eigenvalues L of log2(L * var + sigma_nn) +
/// log2(2 pi e)`). `x`, `y`: `N * blocks`; `eig`: the covariance's eigenvalues.
pub fn finish_params(
    eig: &[f32; N],
    x: &[f32],
    y: &[f32],
    blocks: usize,
    sigma_nn: f32,
    singular: bool,
) -> Params {
    let c = log2_2pie();
    let mut variances = vec![0f32; blocks];
    for (b, var) in variances.iter_mut().enumerate() {
        let mut s = x[b] * y[b] / N as f32;
        for e in 1..N {
            s += x[e * blocks + b] * y[e * blocks + b] / N as f32;
        }
        *var = s;
    }
    let mut entropies = vec![0f32; blocks];
    for &l in eig {
        let l = if l < 0.0 { 0.0 } else { l };
        for (e, &s) in entropies.iter_mut().zip(&variances) {
            *e = (f64::from(*e) + (f64::from(l * s + sigma_nn).log2() + c)) as f32;
        }
    }
    Params {
        entropies,
        variances,
        singular,
    }
}

/// libvmaf's `get_speed_score`: the mean over blocks of
/// `|ent_ref * log2(1 + w_ref) - ent_dis * log2(1 + w_dis)|`, the weights per
/// `speed_weight_var_mode`; blocks where both entropies are below the noise floor's count 0.
pub fn score(d: &Dims, cfg: &SpeedConfig, r: &Params, s: &Params) -> f32 {
    let (snn, nnf) = (cfg.sigma_nn as f32, cfg.nn_floor as f32);
    let c = log2_2pie();
    let base = (N as f64 * (f64::from((1.0 + nnf) * snn).log2() + c)) as f32;
    // `1 + v` in float for a float `v`, in double for a double one, as libvmaf.
    let lf = |v: f32| f64::from(1.0 + v).log2();
    let lg = |v: f64| (1.0 + v).log2();
    let mut total = 0f32;
    for i in 0..d.blocks() {
        let (er, ed) = (r.entropies[i], s.entropies[i]);
        if er < base && ed < base {
            continue;
        }
        let (vr, vd) = (r.variances[i], s.variances[i]);
        let (ref_w, dis_w) = match cfg.weight_var_mode {
            0 => (lf(vr), lf(vd)),
            1 => (lf(vr), lf(vr)),
            2 => (lf(vd), lf(vd)),
            3 => {
                let m = f64::from(vr + vd) / 2.0;
                (lg(m), lg(m))
            }
            4 => (lf(vr), lg(f64::from(vr + vd) / 2.0)),
            5 => (lf(vr), lg(0.75 * f64::from(vr) + 0.25 * f64::from(vd))),
            _ => (lf(vr), lg(0.25 * f64::from(vr) + 0.75 * f64::from(vd))),
        };
        let sr = (f64::from(er) * ref_w) as f32;
        let sd = (f64::from(ed) * dis_w) as f32;
        total += (sr - sd).abs();
    }
    total / d.blocks() as f32
}
