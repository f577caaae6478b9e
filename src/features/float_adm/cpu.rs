//! The CPU half of `float_adm`: libvmaf's `compute_adm` in `f32`, every stage in libvmaf's
//! order of operations (the per-row and per-frame float sums in its sequence, its mixed
//! `f32`/`f64` products, its reciprocal division on x86), so that it computes libvmaf's
//! values rather than an approximation of them (every output of every frame tested agrees
//! with libvmaf's log to its 6 printed decimals).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/adm.c and adm_tools.c.

use super::super::adm::Region;
use super::super::float_vif::cpu::to_float;
use super::params::{
    cos_1deg_sq, finish, pool, DB2_HI, DB2_LO, MIN_SIZE, ONE_BY_15, ONE_BY_30, SCALES,
};
use super::FloatAdmConfig;
use crate::video::frame::{FeatureError, LumaPlane};

/// Name used in [`FeatureError`]s.
const FEATURE: &str = "float_adm";

/// `n / d` as libvmaf computes it on x86 (`DIVS` with `ADM_OPT_RECIP_DIVISION`): `n` times the
/// approximate reciprocal of `d` refined by one Newton step. Elsewhere (libvmaf without SSE2)
/// a plain division.
#[inline(always)]
fn divs(n: f32, d: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_cvtss_f32, _mm_rcp_ss, _mm_set_ss};
        // SAFETY: SSE is part of the x86_64 baseline.
        let xi = unsafe { _mm_cvtss_f32(_mm_rcp_ss(_mm_set_ss(d))) };
        n * (xi + xi * (1.0 - d * xi))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        n / d
    }
}

/// The four taps' source indices of each output of a DWT along a side of `n` samples (libvmaf's
/// `dwt2_src_indices_filt`): `2i - 1 .. 2i + 2`, -1 mirrored to 1 and `n + k` to `n - 1 - k`.
fn dwt_indices(n: usize) -> Vec<[usize; 4]> {
    let n = n as i64;
    (0..(n + 1) / 2)
        .map(|i| {
            let m = |k: i64| {
                let x = 2 * i - 1 + k;
                let x = if x < 0 { -x } else { x };
                (if x >= n { 2 * n - x - 1 } else { x }).clamp(0, n - 1) as usize
            };
            [m(0), m(1), m(2), m(3)]
        })
        .collect()
}

/// `((0 + f0 s0) + f1 s1) + f2 s2) + f3 s3` in `f32`, libvmaf's filter sum.
#[inline(always)]
fn taps(f: &[f32; 4], s0: f32, s1: f32, s2: f32, s3: f32) -> f32 {
    let mut a = f[0] * s0;
    a += f[1] * s1;
    a += f[2] * s2;
    a += f[3] * s3;
    a
}

/// The four bands of one DWT level, row-major, `width` coefficients a row.
#[derive(Default)]
struct Bands {
    a: Vec<f32>,
    h: Vec<f32>,
    v: Vec<f32>,
    d: Vec<f32>,
}

impl Bands {
    fn new(n: usize) -> Self {
        Self {
            a: vec![0.0; n],
            h: vec![0.0; n],
            v: vec![0.0; n],
            d: vec![0.0; n],
        }
    }
}

/// The horizontal half of a DWT level: `out[j]` is filter `f` over columns `ix[j]` of a row
/// given as its even (`e`) and odd (`o`) columns. Outputs whose four columns lie inside the
/// row (all but the first and the last one or two) are read straight from `e` and `o` in a
/// loop without branches or bounds checks; the others through their mirrored indices.
fn hpass(e: &[f32], o: &[f32], ix: &[[usize; 4]], f: &[f32; 4], out: &mut [f32]) {
    let col = |c: usize| {
        if c.is_multiple_of(2) {
            e[c / 2]
        } else {
            o[c / 2]
        }
    };
    let general = |x: &[usize; 4]| taps(f, col(x[0]), col(x[1]), col(x[2]), col(x[3]));
    let w = e.len() + o.len();
    // Output j reads columns 2j - 1 ..= 2j + 2: inside the row for 1 <= j < (w - 1) / 2.
    let j1 = ((w.saturating_sub(1)) / 2).clamp(1, out.len().max(1));
    if let (Some(first), Some(x)) = (out.first_mut(), ix.first()) {
        *first = general(x);
    }
    let n = j1 - 1;
    if n > 0 {
        let (o0, e1, o1, e2) = (&o[..n], &e[1..][..n], &o[1..][..n], &e[2..][..n]);
        let mid = &mut out[1..][..n];
        for k in 0..n {
            mid[k] = taps(f, o0[k], e1[k], o1[k], e2[k]);
        }
    }
    for (y, x) in out.iter_mut().zip(ix).skip(j1) {
        *y = general(x);
    }
}

/// Row scratch of a DWT level: the vertical pass's low and high rows, each also split into
/// its even and odd columns.
struct DwtRows {
    lo: Vec<f32>,
    hi: Vec<f32>,
    lo_e: Vec<f32>,
    lo_o: Vec<f32>,
    hi_e: Vec<f32>,
    hi_o: Vec<f32>,
}

impl DwtRows {
    fn new(w: usize) -> Self {
        Self {
            lo: vec![0.0; w],
            hi: vec![0.0; w],
            lo_e: vec![0.0; w.div_ceil(2)],
            lo_o: vec![0.0; w / 2],
            hi_e: vec![0.0; w.div_ceil(2)],
            hi_o: vec![0.0; w / 2],
        }
    }
}

/// Splits `x` into its even and odd entries.
fn deinterleave(x: &[f32], e: &mut [f32], o: &mut [f32]) {
    for (k, v) in e.iter_mut().enumerate() {
        *v = x[2 * k];
    }
    for (k, v) in o.iter_mut().enumerate() {
        *v = x[2 * k + 1];
    }
}

/// One DWT level of the `w` x `h` plane `src` (row pitch `w`) into `out` (`(w + 1) / 2`
/// a row); only the approximation band when `lo_only` (`adm_dwt2_lo_s`). `ix`, `iy`: the
/// tap indices ([`dwt_indices`]); `t`: row scratch for at least `w` samples.
fn dwt(
    src: &[f32],
    w: usize,
    iy: &[[usize; 4]],
    ix: &[[usize; 4]],
    out: &mut Bands,
    t: &mut DwtRows,
    lo_only: bool,
) {
    let bw = ix.len();
    let (ne, no) = (w.div_ceil(2), w / 2);
    for (i, y) in iy.iter().enumerate() {
        let [r0, r1, r2, r3] = y.map(|r| &src[r * w..r * w + w]);
        let (lo, hi) = (&mut t.lo[..w], &mut t.hi[..w]);
        for j in 0..w {
            let (s0, s1, s2, s3) = (r0[j], r1[j], r2[j], r3[j]);
            lo[j] = taps(&DB2_LO, s0, s1, s2, s3);
            hi[j] = taps(&DB2_HI, s0, s1, s2, s3);
        }
        let (lo_e, lo_o) = (&mut t.lo_e[..ne], &mut t.lo_o[..no]);
        deinterleave(lo, lo_e, lo_o);
        let row = i * bw..(i + 1) * bw;
        hpass(lo_e, lo_o, ix, &DB2_LO, &mut out.a[row.clone()]);
        if lo_only {
            continue;
        }
        hpass(lo_e, lo_o, ix, &DB2_HI, &mut out.v[row.clone()]);
        let (hi_e, hi_o) = (&mut t.hi_e[..ne], &mut t.hi_o[..no]);
        deinterleave(hi, hi_e, hi_o);
        hpass(hi_e, hi_o, ix, &DB2_LO, &mut out.h[row.clone()]);
        hpass(hi_e, hi_o, ix, &DB2_HI, &mut out.d[row]);
    }
}

/// Restored part of one band's coefficient (`adm_decouple_s`): the distorted `t` projected on
/// the reference `o` (`k = clamp(t / o, 0, 1)`, `k * o`), replaced by `t` bounded by `gain`
/// times the projection where the (h, v) angles agree within 1 degree (`angle`).
#[inline(always)]
fn restore(o: f32, t: f32, angle: bool, gain: f64) -> f32 {
    let k = divs(t, o + 1e-30);
    let k = k.clamp(0.0, 1.0);
    let r = k * o;
    if angle && r > 0.0 {
        (f64::from(r) * gain).min(f64::from(t)) as f32
    } else if angle && r < 0.0 {
        (f64::from(r) * gain).max(f64::from(t)) as f32
    } else {
        r
    }
}

/// `f32` of `w * |x|` computed in `f64` (libvmaf multiplies its `double` weight constants by
/// a `float`).
#[inline(always)]
fn weighted_abs(w: f64, x: f32) -> f32 {
    (w * f64::from(x.abs())) as f32
}

/// The CSF-weighted parts of one scale for the masking: per band (h, v, d) the restored part
/// `r`, the additive part `a`, and their neighbour weights `|x| / 30`.
#[derive(Default)]
struct Csf {
    r: [Vec<f32>; 3],
    a: [Vec<f32>; 3],
    fr: [Vec<f32>; 3],
    fa: [Vec<f32>; 3],
}

/// One band's threshold term at column `j` of a row: the 8 neighbours' weights `f` (rows
/// `up`, `mid`, `dn`; columns `jm`, `jp`, mirrored at the edges) and the centre's `|c| / 15`,
/// summed in libvmaf's order (the centre added in `f64`).
#[inline(always)]
fn band_thr(up: [f32; 3], mid: [f32; 2], dn: [f32; 3], c: f32) -> f32 {
    let mut s = up[0];
    s += up[1];
    s += up[2];
    s += mid[0];
    s = (f64::from(s) + ONE_BY_15 * f64::from(c.abs())) as f32;
    s += mid[1];
    s += dn[0];
    s += dn[1];
    s += dn[2];
    s
}

/// Adds one band's threshold terms ([`band_thr`]) of columns `left..right` of a `w`-wide row
/// to `thr` (one per column): `f` the weights of rows `up`, `mid`, `dn`, `c` the masker's row.
/// Columns 0 and `w - 1` mirror their outer neighbour; the others run in a loop without
/// branches or bounds checks.
fn add_band_thr(
    thr: &mut [f32],
    (up, mid, dn): (&[f32], &[f32], &[f32]),
    c: &[f32],
    left: usize,
    right: usize,
    w: usize,
) {
    let at = |j: usize| {
        let jm = if j == 0 { 1 } else { j - 1 };
        let jp = if j + 1 == w { w - 1 } else { j + 1 };
        band_thr(
            [up[jm], up[j], up[jp]],
            [mid[jm], mid[jp]],
            [dn[jm], dn[j], dn[jp]],
            c[j],
        )
    };
    let j0 = left.max(1);
    let j1 = right.min(w - 1).max(j0);
    if left < j0 {
        thr[0] += at(0);
    }
    let n = j1 - j0;
    let out = &mut thr[j0 - left..j0 - left + n];
    let (u0, u1, u2) = (&up[j0 - 1..][..n], &up[j0..][..n], &up[j0 + 1..][..n]);
    let (m0, m2) = (&mid[j0 - 1..][..n], &mid[j0 + 1..][..n]);
    let (d0, d1, d2) = (&dn[j0 - 1..][..n], &dn[j0..][..n], &dn[j0 + 1..][..n]);
    let cc = &c[j0..][..n];
    for k in 0..n {
        out[k] += band_thr(
            [u0[k], u1[k], u2[k]],
            [m0[k], m2[k]],
            [d0[k], d1[k], d2[k]],
            cc[k],
        );
    }
    if right > j1 {
        for j in j1..right {
            thr[j - left] += at(j);
        }
    }
}

/// The masking stage's scratch: the CSF-weighted parts of the current scale and row buffers.
struct Masking {
    csf: Csf,
    /// Row scratch: thresholds (DLM, AIM) and masked values.
    thr: [Vec<f32>; 2],
    x: Vec<f32>,
}

impl Masking {
    /// Decoupling and CSF over the extended region of this scale's `bw` x `bh` bands `o`
    /// (reference) and `t` (distorted).
    fn decouple_csf(
        &mut self,
        o: &Bands,
        t: &Bands,
        (bw, bh): (usize, usize),
        rf: [f32; 3],
        gain: f64,
    ) {
        let ext = Region::extended(bw, bh);
        let cos_sq = cos_1deg_sq();
        let c = &mut self.csf;
        for i in ext.top..ext.bottom {
            for j in ext.left..ext.right {
                let k = i * bw + j;
                let (oh, ov, od) = (o.h[k], o.v[k], o.d[k]);
                let (th, tv, td) = (t.h[k], t.v[k], t.d[k]);
                let ot_dp = oh * th + ov * tv;
                let o_mag_sq = oh * oh + ov * ov;
                let t_mag_sq = th * th + tv * tv;
                let angle = ot_dp >= 0.0 && ot_dp * ot_dp >= cos_sq * o_mag_sq * t_mag_sq;
                let r = [
                    restore(oh, th, angle, gain),
                    restore(ov, tv, angle, gain),
                    restore(od, td, angle, gain),
                ];
                let a = [th - r[0], tv - r[1], td - r[2]];
                for b in 0..3 {
                    let cr = rf[b] * r[b];
                    let ca = rf[b] * a[b];
                    c.r[b][k] = cr;
                    c.a[b][k] = ca;
                    c.fr[b][k] = weighted_abs(ONE_BY_30, cr);
                    c.fa[b][k] = weighted_abs(ONE_BY_30, ca);
                }
            }
        }
    }

    /// The masked sums (`adm_cm_s`) of the scored region: DLM (the restored part masked by
    /// the additive one) and AIM (the additive part masked by the restored one).
    fn cm(&mut self, (bw, bh): (usize, usize), cfg: &FloatAdmConfig) -> (f32, f32) {
        let reg = Region::scored(bw, bh);
        let cube = cfg.p_norm == 3.0;
        let p = cfg.p_norm as f32;
        let bypass = cfg.bypass_cm != 0;
        let c = &self.csf;
        let mut dlm = [0.0f32; 3];
        let mut aim = [0.0f32; 3];
        let n = reg.width();
        for i in reg.top..reg.bottom {
            let up = if i == 0 { 1 } else { i - 1 };
            let dn = if i + 1 == bh { bh - 1 } else { i + 1 };
            // Thresholds: DLM's from the additive part, AIM's from the restored part.
            for (thr, (f, ctr)) in self.thr.iter_mut().zip([(&c.fa, &c.a), (&c.fr, &c.r)]) {
                let thr = &mut thr[..n];
                thr.fill(0.0);
                if bypass {
                    continue;
                }
                for b in 0..3 {
                    let row = |r: usize| &f[b][r * bw..r * bw + bw];
                    add_band_thr(
                        thr,
                        (row(up), row(i), row(dn)),
                        &ctr[b][i * bw..i * bw + bw],
                        reg.left,
                        reg.right,
                        bw,
                    );
                }
            }
            // Masked values, each band's row summed in order.
            for (acc, (src, thr)) in [&mut dlm, &mut aim]
                .into_iter()
                .zip([(&c.r, &self.thr[0]), (&c.a, &self.thr[1])])
            {
                for b in 0..3 {
                    let row = &src[b][i * bw + reg.left..i * bw + reg.right];
                    let x = &mut self.x[..n];
                    for ((x, &v), &t) in x.iter_mut().zip(row).zip(thr.iter()) {
                        let m = v.abs() - t;
                        let m = if m < 0.0 { 0.0 } else { m };
                        *x = if cube { m * m * m } else { m.powf(p) };
                    }
                    let mut inner = 0.0f32;
                    for &v in x.iter() {
                        inner += v;
                    }
                    acc[b] += inner;
                }
            }
        }
        let area = reg.area() as usize;
        (
            pool(dlm, area, cfg.noise_weight, cfg.p_norm),
            pool(aim, area, 0.0, cfg.p_norm),
        )
    }
}

/// The denominator (`adm_csf_den_scale_s`): the pooled CSF-weighted reference bands `o` of
/// `bw` x `bh` over the scored region.
fn den(o: &Bands, (bw, bh): (usize, usize), rf: [f32; 3], cfg: &FloatAdmConfig) -> f32 {
    let reg = Region::scored(bw, bh);
    let cube = cfg.p_norm == 3.0;
    let p = cfg.p_norm as f32;
    let mut accum = [0.0f32; 3];
    for i in reg.top..reg.bottom {
        let row = i * bw + reg.left..i * bw + reg.right;
        for (b, band) in [&o.h, &o.v, &o.d].into_iter().enumerate() {
            let mut inner = 0.0f32;
            for &x in &band[row.clone()] {
                let v = (rf[b] * x).abs();
                inner += if cube { v * v * v } else { v.powf(p) };
            }
            accum[b] += inner;
        }
    }
    pool(accum, reg.area() as usize, cfg.noise_weight, cfg.p_norm)
}

/// The DWT pyramid's geometry and its row scratch.
struct Pyramid {
    /// Input of each scale: `dims[s]`; its bands are `dims[s + 1]`.
    dims: [(usize, usize); SCALES + 1],
    /// DWT tap indices per scale, rows and columns.
    iy: Vec<Vec<[usize; 4]>>,
    ix: Vec<Vec<[usize; 4]>>,
    rows: DwtRows,
}

impl Pyramid {
    /// Scale `s`'s DWT of `src` (the plane at scale 0, else the previous scale's `a`) into
    /// `out`; only the approximation band when `lo_only`.
    fn dwt(&mut self, s: usize, src: &[f32], out: &mut Bands, lo_only: bool) {
        dwt(
            src,
            self.dims[s].0,
            &self.iy[s],
            &self.ix[s],
            out,
            &mut self.rows,
            lo_only,
        );
    }

    /// Scale `s` of a ping-pong pair `bands` whose scale-0 input is `input`: writes
    /// `bands[s % 2]` from `input` or `bands[1 - s % 2].a`.
    fn dwt_pingpong(&mut self, s: usize, input: &[f32], bands: &mut [Bands; 2], lo_only: bool) {
        let [b0, b1] = bands;
        let (out, prev) = if s.is_multiple_of(2) {
            (b0, &*b1)
        } else {
            (b1, &*b0)
        };
        let src = if s == 0 { input } else { &prev.a[..] };
        self.dwt(s, src, out, lo_only);
    }
}

/// Float ADM for one frame geometry, with its scratch (libvmaf's `float_adm`).
pub struct FloatAdm {
    width: usize,
    height: usize,
    bpc: u32,
    pyramid: Pyramid,
    ref_in: Vec<f32>,
    dis_in: Vec<f32>,
    /// This scale's bands, and the previous scale's (whose `a` is this scale's input).
    ref_bands: [Bands; 2],
    dis_bands: [Bands; 2],
    masking: Masking,
    /// A ladder's reference bands of every scale (made on first ladder use).
    ladder: Vec<Bands>,
}

impl FloatAdm {
    /// Scratch for `width` x `height` planes of `bpc` bits: two float planes and 28 floats
    /// per scale-0 coefficient (a ladder adds about 5 more).
    ///
    /// Errors: [`FeatureError::FrameTooSmall`] below [`MIN_SIZE`] a side, `WrongGeometry`
    /// for a `bpc` outside `8..=16`.
    pub fn new(width: usize, height: usize, bpc: u32) -> Result<Self, FeatureError> {
        FeatureError::check_new(FEATURE, (width, height, bpc), (MIN_SIZE, MIN_SIZE))?;
        let mut dims = [(width, height); SCALES + 1];
        for s in 1..=SCALES {
            let (w, h) = dims[s - 1];
            dims[s] = (w.div_ceil(2), h.div_ceil(2));
        }
        let n = dims[1].0 * dims[1].1;
        let plane = || vec![0.0f32; n];
        Ok(Self {
            width,
            height,
            bpc,
            pyramid: Pyramid {
                dims,
                iy: (0..SCALES).map(|s| dwt_indices(dims[s].1)).collect(),
                ix: (0..SCALES).map(|s| dwt_indices(dims[s].0)).collect(),
                rows: DwtRows::new(width),
            },
            ref_in: vec![0.0; width * height],
            dis_in: vec![0.0; width * height],
            ref_bands: [Bands::new(n), Bands::new(n)],
            dis_bands: [Bands::new(n), Bands::new(n)],
            masking: Masking {
                csf: Csf {
                    r: [plane(), plane(), plane()],
                    a: [plane(), plane(), plane()],
                    fr: [plane(), plane(), plane()],
                    fa: [plane(), plane(), plane()],
                },
                thr: [vec![0.0; dims[1].0], vec![0.0; dims[1].0]],
                x: vec![0.0; dims[1].0],
            },
            ladder: Vec::new(),
        })
    }

    /// `adm2`, `aim`, `adm3`, `adm_scale0..3` of one frame pair with the options `cfg`
    /// (see [`super::finish`]); `adm2` and the scale ratios are in `[0, ~1]`, `aim` in
    /// `[0, 1]`.
    ///
    /// Errors: `WrongGeometry` for planes of another size or depth than [`FloatAdm::new`]'s.
    pub fn compute(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        cfg: &FloatAdmConfig,
    ) -> Result<[f64; 7], FeatureError> {
        let geometry = (self.width, self.height, self.bpc);
        FeatureError::check_plane(FEATURE, geometry, reference)?;
        FeatureError::check_plane(FEATURE, geometry, distorted)?;
        to_float(reference, &mut self.ref_in);
        to_float(distorted, &mut self.dis_in);
        let mut per_scale = [(0.0f32, 0.0f32, 0.0f32); SCALES];
        for (s, slot) in per_scale.iter_mut().enumerate() {
            let lo_only = s == 0 && cfg.skip_scale0;
            self.pyramid
                .dwt_pingpong(s, &self.ref_in, &mut self.ref_bands, lo_only);
            self.pyramid
                .dwt_pingpong(s, &self.dis_in, &mut self.dis_bands, lo_only);
            let r = &self.ref_bands[s % 2];
            let d = &self.dis_bands[s % 2];
            *slot = Self::scale(
                &mut self.masking,
                self.pyramid.dims[s + 1],
                s,
                r,
                d,
                None,
                cfg,
            );
        }
        Ok(finish(self.width, self.height, &per_scale, cfg))
    }

    /// [`FloatAdm::compute`] of one reference against several distorted planes (a ladder's
    /// renditions): the reference's DWT of every scale and its denominators once, then each
    /// distorted plane's DWT and masking. Each result is bit for bit `compute`'s.
    ///
    /// Errors: as [`FloatAdm::compute`].
    pub fn compute_ladder(
        &mut self,
        reference: &LumaPlane,
        distorted: &[&LumaPlane],
        cfg: &FloatAdmConfig,
    ) -> Result<Vec<[f64; 7]>, FeatureError> {
        let geometry = (self.width, self.height, self.bpc);
        FeatureError::check_plane(FEATURE, geometry, reference)?;
        for d in distorted {
            FeatureError::check_plane(FEATURE, geometry, d)?;
        }
        if self.ladder.is_empty() {
            let dims = self.pyramid.dims;
            self.ladder = (1..=SCALES)
                .map(|s| Bands::new(dims[s].0 * dims[s].1))
                .collect();
        }
        to_float(reference, &mut self.ref_in);
        let mut dens = [0.0f32; SCALES];
        for (s, den_s) in dens.iter_mut().enumerate() {
            let lo_only = s == 0 && cfg.skip_scale0;
            let (done, rest) = self.ladder.split_at_mut(s);
            let src = match done.last() {
                Some(prev) => &prev.a[..],
                None => &self.ref_in[..],
            };
            self.pyramid.dwt(s, src, &mut rest[0], lo_only);
            if !lo_only {
                *den_s = den(&rest[0], self.pyramid.dims[s + 1], cfg.rfactor(s), cfg);
            }
        }
        let mut out = Vec::with_capacity(distorted.len());
        for d in distorted {
            to_float(d, &mut self.dis_in);
            let mut per_scale = [(0.0f32, 0.0f32, 0.0f32); SCALES];
            for (s, slot) in per_scale.iter_mut().enumerate() {
                let lo_only = s == 0 && cfg.skip_scale0;
                self.pyramid
                    .dwt_pingpong(s, &self.dis_in, &mut self.dis_bands, lo_only);
                let (r, t) = (&self.ladder[s], &self.dis_bands[s % 2]);
                *slot = Self::scale(
                    &mut self.masking,
                    self.pyramid.dims[s + 1],
                    s,
                    r,
                    t,
                    Some(dens[s]),
                    cfg,
                );
            }
            out.push(finish(self.width, self.height, &per_scale, cfg));
        }
        Ok(out)
    }

    /// (numerator, denominator, AIM numerator) of scale `s` (bands of `band` size) from its
    /// reference bands `r` and distorted bands `t`; `den_done`: the denominator when a ladder
    /// has computed it already.
    fn scale(
        masking: &mut Masking,
        band: (usize, usize),
        s: usize,
        r: &Bands,
        t: &Bands,
        den_done: Option<f32>,
        cfg: &FloatAdmConfig,
    ) -> (f32, f32, f32) {
        if s == 0 && cfg.skip_scale0 {
            return (0.0, 1e-10, 0.0);
        }
        let rf = cfg.rfactor(s);
        masking.decouple_csf(r, t, band, rf, cfg.enhn_gain_limit);
        let d = den_done.unwrap_or_else(|| den(r, band, rf, cfg));
        let (num, aim) = masking.cm(band, cfg);
        (num, d, aim)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_mirror() {
        assert_eq!(
            dwt_indices(5),
            vec![[1, 0, 1, 2], [1, 2, 3, 4], [3, 4, 4, 3]]
        );
        assert_eq!(dwt_indices(4), vec![[1, 0, 1, 2], [1, 2, 3, 3]]);
    }

    #[test]
    fn horizontal_pass_equals_index_tables() {
        let mut rng = crate::features::XorShift(0x9e37_79b9);
        for w in 3usize..=21 {
            let x: Vec<f32> = (0..w)
                .map(|_| (rng.next_u64() % 1000) as f32 / 7.0)
                .collect();
            let (mut e, mut o) = (vec![0.0; w.div_ceil(2)], vec![0.0; w / 2]);
            deinterleave(&x, &mut e, &mut o);
            let ix = dwt_indices(w);
            for f in [&DB2_LO, &DB2_HI] {
                let mut out = vec![0.0; ix.len()];
                hpass(&e, &o, &ix, f, &mut out);
                for (j, t) in ix.iter().enumerate() {
                    let want = taps(f, x[t[0]], x[t[1]], x[t[2]], x[t[3]]);
                    assert_eq!(out[j].to_bits(), want.to_bits(), "w {w} j {j}");
                }
            }
        }
    }

    #[test]
    fn identical_frames_score_one() {
        let (w, h) = (40, 36);
        let mut rng = crate::features::XorShift(0x1234_5678);
        let data: Vec<u16> = (0..w * h).map(|_| (rng.next_u64() % 256) as u16).collect();
        let p = LumaPlane::packed(&data, w, h, 8).unwrap();
        let mut adm = FloatAdm::new(w, h, 8).unwrap();
        let v = adm.compute(&p, &p, &FloatAdmConfig::default()).unwrap();
        assert!((v[0] - 1.0).abs() < 1e-6, "{v:?}");
        assert!(FloatAdm::new(16, 40, 8).is_err());
        // A ladder gives each rendition compute's bits, whatever the options.
        let others: Vec<Vec<u16>> = (0..3)
            .map(|k| {
                data.iter()
                    .map(|&x| (x + (rng.next_u64() % (4 * k + 1)) as u16).min(255))
                    .collect()
            })
            .collect();
        let planes: Vec<LumaPlane> = others
            .iter()
            .map(|d| LumaPlane::packed(d, w, h, 8).unwrap())
            .collect();
        let refs: Vec<&LumaPlane> = planes.iter().collect();
        for cfg in [
            FloatAdmConfig::default(),
            FloatAdmConfig {
                skip_scale0: true,
                p_norm: 2.0,
                ..FloatAdmConfig::default()
            },
        ] {
            let ladder = adm.compute_ladder(&p, &refs, &cfg).unwrap();
            for (d, l) in planes.iter().zip(&ladder) {
                let single = adm.compute(&p, d, &cfg).unwrap();
                assert_eq!(single.map(f64::to_bits), l.map(f64::to_bits));
            }
        }
        assert!(FloatAdm::new(MIN_SIZE, MIN_SIZE, 8).is_ok());
    }
}
