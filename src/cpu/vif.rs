//! Integer VIF (visual information fidelity) feature extractor, bit-exact with the integer
//! path of Netflix/vmaf v3.2.0 (`libvmaf/src/feature/integer_vif.c`, whose x86 AVX2 variant
//! `x86/vif_avx2.c` performs the same integer arithmetic).
//!
//! The luma planes are analysed at four scales. At every scale a separable low-pass filter
//! (17, 9, 5 and 3 taps, 16-bit fixed point, mirrored borders) gives local means, variances and
//! the covariance of reference and distorted samples; the per-pixel information terms are
//! summed in fixed point through a 2048-step log2 table. Between scales the planes are
//! low-pass filtered with the next scale's filter and decimated by two in each direction.
//!
//! Everything is integer arithmetic except the per-pixel gain `g` (double precision, as in
//! libvmaf) and the final per-scale numerator/denominator, which libvmaf stores as `float`;
//! this module rounds them to `f32` at the same points so the scores are identical.

use crate::engine::frame::{FeatureError, LumaPlane};

/// Name reported in [`FeatureError`]s.
const FEATURE: &str = "vif";

/// Smallest plane width, in samples, that [`Vif`] accepts.
///
/// The planes are halved (rounding down) three times, so scale 3 is `width / 8` wide and
/// is filtered with a 3-tap kernel; mirroring one sample at each border needs at least two
/// samples there, hence `width / 8 >= 2`. The wider kernels of the finer scales (17 taps at
/// scale 0 needs `>= 9`, 9 taps at scale 1 needs `width / 2 >= 5`, 5 taps at scale 2 needs
/// `width / 4 >= 3`) are then satisfied too.
pub const MIN_WIDTH: usize = 16;
/// Smallest plane height, in rows, that [`Vif`] accepts (same reasoning as [`MIN_WIDTH`]).
pub const MIN_HEIGHT: usize = 16;

/// libvmaf's `DEFAULT_VIF_ENHN_GAIN_LIMIT`.
const DEFAULT_ENHN_GAIN_LIMIT: f64 = 100.0;

/// Options of libvmaf's integer VIF that VMAF models set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VifConfig {
    /// libvmaf option `vif_enhn_gain_limit` (alias `egl`): upper bound of the gain `g` that
    /// the distorted signal may show over the reference. libvmaf accepts `1.0..=100.0`;
    /// `1.0` disables enhancement gain (used by `vmaf_v0.6.1neg`), the default is `100.0`.
    /// Values are used as given (no clamping); `NaN` behaves like "no limit".
    pub enhn_gain_limit: f64,
}

impl Default for VifConfig {
    /// `enhn_gain_limit = 100.0` (libvmaf `DEFAULT_VIF_ENHN_GAIN_LIMIT`).
    fn default() -> Self {
        Self {
            enhn_gain_limit: DEFAULT_ENHN_GAIN_LIMIT,
        }
    }
}

/// Per-frame output of [`Vif::compute`]; index `i` is scale `i` (0 = full resolution,
/// 3 = one eighth).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VifScores {
    /// Numerator per scale (libvmaf `integer_vif_num_scale{i}`), a sum over the scale's
    /// pixels of information terms in bits; computed in `f64` and rounded to `f32` as
    /// libvmaf stores it, widened back to `f64` here. Non-negative for valid input.
    pub num: [f64; 4],
    /// Denominator per scale (libvmaf `integer_vif_den_scale{i}`), rounded to `f32` like
    /// `num`. Every pixel contributes at least 1, so it is at least the scale's pixel count and
    /// never 0.
    pub den: [f64; 4],
    /// `integer_vif_scale{i}` (`VMAF_integer_feature_vif_scale{i}_score`): the `f32`
    /// quotient `num / den` exactly as libvmaf computes it (a `float` division, no special
    /// case since `den > 0`), widened to `f64`. Typically in `0.0..=1.0`; above 1 when the
    /// distorted frame enhances the reference (bounded through `enhn_gain_limit`).
    pub scale: [f64; 4],
}

/// 1-D filter taps per scale (Q16, each sums to 65536), libvmaf `vif_filter1d_table`.
const FILTER0: [u16; 17] = [
    489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784, 7455, 6547, 5274, 3896, 2640, 1640, 935,
    489,
];
const FILTER1: [u16; 9] = [1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244];
const FILTER2: [u16; 5] = [3571, 16004, 26386, 16004, 3571];
const FILTER3: [u16; 3] = [10904, 43728, 10904];

/// Left/right margin of the padded row buffers (largest half filter width).
const PAD: usize = 8;
/// Column block processed with accumulators kept in registers.
const BLOCK: usize = 8;
/// `sigma_nsq` of libvmaf: the noise variance 2.0 in Q16.
const SIGMA_NSQ: i32 = 65536 << 1;

/// Integer VIF extractor for one frame geometry; holds every scratch buffer so that
/// [`Vif::compute`] does not allocate.
pub struct Vif {
    width: usize,
    height: usize,
    bpc: u32,
    /// `log2_table[i] = round(log2f(i) * 2048)` for `i` in `32767..=65535`, 0 below.
    log2_table: Box<[u16; 65536]>,
    /// Decimated reference/distorted planes of scales 1..=3, packed (`stride == width`).
    scaled_ref: [Vec<u16>; 3],
    scaled_dis: [Vec<u16>; 3],
    /// Vertically filtered rows, `PAD` samples of mirrored margin on both sides.
    row: RowBuffers,
}

/// Row scratch shared by the statistic and the subsampling passes: vertically filtered
/// means and second moments of one row.
struct RowBuffers {
    mu1: Vec<u16>,
    mu2: Vec<u16>,
    ref_sq: Vec<u32>,
    dis_sq: Vec<u32>,
    ref_dis: Vec<u32>,
}

/// One luma plane as the filters see it.
#[derive(Clone, Copy)]
struct Image<'a> {
    data: &'a [u16],
    stride: usize,
    width: usize,
    height: usize,
}

impl<'a> Image<'a> {
    /// Row `y` mirrored into the image (`-1 -> 1`, `h -> h - 2`), exactly `width` long.
    #[inline]
    fn mirrored_row(&self, y: isize) -> &'a [u16] {
        let last = self.height.saturating_sub(1) as isize;
        let y = if y < 0 {
            -y
        } else if y > last {
            2 * last - y
        } else {
            y
        };
        let y = y.clamp(0, last) as usize;
        let start = y * self.stride;
        self.data.get(start..start + self.width).unwrap_or(&[])
    }
}

/// Fixed-point accumulators of one scale (libvmaf's `accum_*`).
#[derive(Default, Clone, Copy)]
struct Accum {
    num_log: i64,
    den_log: i64,
    num_non_log: i64,
    den_non_log: i64,
}

impl Vif {
    /// Sizes all scratch for `width x height` planes of `bpc` bits per sample.
    ///
    /// # Errors
    /// [`FeatureError::FrameTooSmall`] when `width < MIN_WIDTH` or `height < MIN_HEIGHT`.
    /// A `bpc` outside `8..=16` is rejected as [`FeatureError::WrongGeometry`] (no plane
    /// can match it).
    pub fn new(width: usize, height: usize, bpc: u32) -> Result<Self, FeatureError> {
        FeatureError::check_new(FEATURE, (width, height, bpc), (MIN_WIDTH, MIN_HEIGHT))?;
        let mut log2_table = Box::new([0u16; 65536]);
        for (i, v) in log2_table.iter_mut().enumerate().skip(32767) {
            // libvmaf: (uint16_t)round(log2f((float)i) * 2048). log2f is correctly rounded
            // here on glibc; rounding the double log2 to float reproduces it for all i.
            let l = (i as f64).log2() as f32 * 2048.0f32;
            *v = f64::from(l).round() as u16;
        }
        let scaled = |s: u32| vec![0u16; (width >> s) * (height >> s)];
        let row_len = width + 2 * PAD;
        Ok(Self {
            width,
            height,
            bpc,
            log2_table,
            scaled_ref: [scaled(1), scaled(2), scaled(3)],
            scaled_dis: [scaled(1), scaled(2), scaled(3)],
            row: RowBuffers {
                mu1: vec![0; row_len],
                mu2: vec![0; row_len],
                ref_sq: vec![0; row_len],
                dis_sq: vec![0; row_len],
                ref_dis: vec![0; row_len],
            },
        })
    }

    /// Scores `distorted` against `reference` at the four VIF scales.
    ///
    /// Both planes must have the width, height and `bpc` given to [`Vif::new`]; samples must
    /// be below `1 << bpc` (larger values give unspecified scores, never a panic). For
    /// `bpc == 8` the result equals libvmaf's for 8-bit (`uint8_t`) pictures.
    ///
    /// # Errors
    /// [`FeatureError::WrongGeometry`] when a plane's width, height or `bpc` differs from
    /// `new()`'s, or its `data`/`stride` cannot hold that geometry.
    pub fn compute(
        &mut self,
        reference: &LumaPlane,
        distorted: &LumaPlane,
        cfg: &VifConfig,
    ) -> Result<VifScores, FeatureError> {
        let ref_img = self.check(reference)?;
        let dis_img = self.check(distorted)?;
        let bpc = self.bpc;
        let limit = cfg.enhn_gain_limit;
        let Self {
            log2_table,
            scaled_ref,
            scaled_dis,
            row,
            ..
        } = self;
        let log2_table: &[u16; 65536] = log2_table;

        let mut scores = VifScores::default();
        let [r1, r2, r3] = scaled_ref;
        let [d1, d2, d3] = scaled_dis;

        // Scale 0 statistic straight from the input planes.
        let (num, den) = if bpc == 8 {
            statistic(ref_img, dis_img, 0, VpShift::Narrow, row, log2_table, limit)
        } else {
            let sq = 2 * (bpc - 8);
            let vp = VpShift::Wide {
                mu_round: 1 << (bpc - 1),
                mu_shift: bpc,
                sq_round: 1 << (sq - 1),
                sq_shift: sq,
            };
            statistic(ref_img, dis_img, 0, vp, row, log2_table, limit)
        };
        set_scale(&mut scores, 0, num, den);

        // Scale 1..=3: subsample the previous scale, then the statistic.
        let s1 = subsample(ref_img, dis_img, 1, 1 << (bpc - 1), bpc, row, r1, d1);
        let (num, den) = statistic(s1.0, s1.1, 1, VpShift::SCALED, row, log2_table, limit);
        set_scale(&mut scores, 1, num, den);
        let s2 = subsample(s1.0, s1.1, 2, 32768, 16, row, r2, d2);
        let (num, den) = statistic(s2.0, s2.1, 2, VpShift::SCALED, row, log2_table, limit);
        set_scale(&mut scores, 2, num, den);
        let s3 = subsample(s2.0, s2.1, 3, 32768, 16, row, r3, d3);
        let (num, den) = statistic(s3.0, s3.1, 3, VpShift::SCALED, row, log2_table, limit);
        set_scale(&mut scores, 3, num, den);
        Ok(scores)
    }

    /// Validates one plane against the extractor's geometry.
    fn check<'a>(&self, p: &LumaPlane<'a>) -> Result<Image<'a>, FeatureError> {
        FeatureError::check_plane(FEATURE, (self.width, self.height, self.bpc), p)?;
        Ok(Image {
            data: p.data,
            stride: p.stride,
            width: p.width,
            height: p.height,
        })
    }
}

/// Stores one scale's `float` numerator/denominator and their `float` quotient.
fn set_scale(scores: &mut VifScores, s: usize, num: f32, den: f32) {
    if let (Some(n), Some(d), Some(q)) = (
        scores.num.get_mut(s),
        scores.den.get_mut(s),
        scores.scale.get_mut(s),
    ) {
        *n = f64::from(num);
        *d = f64::from(den);
        *q = f64::from(num / den);
    }
}

/// Rounding of the vertical pass of the statistic.
#[derive(Clone, Copy)]
enum VpShift {
    /// 8-bit scale 0: means `(sum + 128) >> 8`, second moments unshifted (sums fit `u32`).
    Narrow,
    /// Everything else: second moments summed in 64 bits, then rounded and shifted
    /// (`sq_shift <= 16`, `sq_round = 1 << (sq_shift - 1)`).
    Wide {
        mu_round: u32,
        mu_shift: u32,
        sq_round: u32,
        sq_shift: u32,
    },
}

impl VpShift {
    const SCALED: Self = Self::Wide {
        mu_round: 32768,
        mu_shift: 16,
        sq_round: 32768,
        sq_shift: 16,
    };

    /// `(mu_round, mu_shift, sq_round, sq_shift)`; the `sq_*` pair is unused for `Narrow`.
    fn params(self) -> (u32, u32, u32, u32) {
        match self {
            Self::Narrow => (128, 8, 0, 0),
            Self::Wide {
                mu_round,
                mu_shift,
                sq_round,
                sq_shift,
            } => (mu_round, mu_shift, sq_round, sq_shift),
        }
    }
}

/// Tap rows for output row `center`: mirrored rows `center - N / 2 ..= center + N / 2`.
#[inline(always)]
fn gather_rows<'a, const N: usize>(img: Image<'a>, center: usize) -> [&'a [u16]; N] {
    let half = (N / 2) as isize;
    core::array::from_fn(|k| img.mirrored_row(center as isize - half + k as isize))
}

/// Mirrors `half` samples around both ends of `buf[PAD..PAD + w]` (`-f -> f`,
/// `w - 1 + f -> w - 1 - f`), libvmaf's `PADDING_SQ_DATA`.
#[inline]
fn mirror_pad<T: Copy>(buf: &mut [T], w: usize, half: usize) {
    for f in 1..=half {
        if let Some(&v) = buf.get(PAD + f) {
            if let Some(d) = buf.get_mut(PAD - f) {
                *d = v;
            }
        }
        if let Some(&v) = buf.get(PAD + w - 1 - f) {
            if let Some(d) = buf.get_mut(PAD + w - 1 + f) {
                *d = v;
            }
        }
    }
}

/// Fixed-size view `s[at..at + N]`.
#[inline(always)]
fn chunk<T, const N: usize>(s: &[T], at: usize) -> Option<&[T; N]> {
    s.get(at..).and_then(|t| t.first_chunk::<N>())
}

#[inline(always)]
fn chunk_mut<T, const N: usize>(s: &mut [T], at: usize) -> Option<&mut [T; N]> {
    s.get_mut(at..).and_then(|t| t.first_chunk_mut::<N>())
}

/// Runs `$body` for blocks of [`BLOCK`] columns starting at `$j` with the const `$l` set
/// to `BLOCK`, then for each remaining column with `$l` set to 1.
macro_rules! blocked {
    ($w:expr, |$j:ident, $l:ident| $body:expr) => {{
        let w: usize = $w;
        let full = w / BLOCK * BLOCK;
        for $j in (0..full).step_by(BLOCK) {
            const $l: usize = BLOCK;
            $body;
        }
        for $j in full..w {
            const $l: usize = 1;
            $body;
        }
    }};
}

/// Filter sums of one column block: the means of both planes and the second moments, the
/// latter as sums over the low (`*_lo`) and high (`*_hi`) 16-bit halves of the products
/// (with `NARROW` only `*_lo`, holding the whole 32-bit sum). Every sum is taken modulo
/// 2^32 and its exact value fits 32 bits because the taps sum to 65536, so the order of
/// accumulation and the folding of symmetric taps do not change any bit.
struct Sums<const L: usize> {
    m1: [u32; L],
    m2: [u32; L],
    xx_lo: [u32; L],
    xx_hi: [u32; L],
    yy_lo: [u32; L],
    yy_hi: [u32; L],
    xy_lo: [u32; L],
    xy_hi: [u32; L],
}

impl<const L: usize> Sums<L> {
    const ZERO: Self = Self {
        m1: [0; L],
        m2: [0; L],
        xx_lo: [0; L],
        xx_hi: [0; L],
        yy_lo: [0; L],
        yy_hi: [0; L],
        xy_lo: [0; L],
        xy_hi: [0; L],
    };
}

/// Adds `f * (x_a + x_b)` to `acc` for each lane, a pair of symmetric taps (`x_b = 0` for the
/// centre tap).
#[inline(always)]
fn add_pair<const L: usize>(acc: &mut [u32; L], f: u32, a: &[u32; L], b: &[u32; L]) {
    for l in 0..L {
        acc[l] = acc[l].wrapping_add(f.wrapping_mul(a[l].wrapping_add(b[l])));
    }
}

/// Adds `f * (lo16(a) + lo16(b))` to `lo` and `f * (hi16(a) + hi16(b))` to `hi`.
#[inline(always)]
fn add_pair_split<const L: usize>(
    lo: &mut [u32; L],
    hi: &mut [u32; L],
    f: u32,
    a: &[u32; L],
    b: &[u32; L],
) {
    for l in 0..L {
        lo[l] = lo[l].wrapping_add(f.wrapping_mul((a[l] & 0xffff) + (b[l] & 0xffff)));
        hi[l] = hi[l].wrapping_add(f.wrapping_mul((a[l] >> 16) + (b[l] >> 16)));
    }
}

/// Lane-wise `a * b` of 16-bit samples: the 16-bit (wrapping) product with `NARROW`, else
/// the full 32-bit product.
#[inline(always)]
fn products<const L: usize, const NARROW: bool>(a: &[u16; L], b: &[u16; L]) -> [u32; L] {
    let mut p = [0u32; L];
    for l in 0..L {
        p[l] = if NARROW {
            u32::from(a[l].wrapping_mul(b[l]))
        } else {
            u32::from(a[l]) * u32::from(b[l])
        };
    }
    p
}

#[inline(always)]
fn widen<const L: usize>(a: &[u16; L]) -> [u32; L] {
    let mut p = [0u32; L];
    for l in 0..L {
        p[l] = u32::from(a[l]);
    }
    p
}

/// Fused vertical pass of the statistic for columns `j..j + L` into the row buffers at
/// `PAD + j`: means `(sum_k filt[k] * x + mu_round) >> mu_shift` truncated to 16 bits, and the
/// second moments `sum_k filt[k] * a * b`, with `NARROW` unshifted (8-bit samples, 16-bit
/// products), else libvmaf's 64-bit sum rounded and shifted by `s = sq_shift <= 16`, built
/// from the 16-bit halves as `(hi << (16 - s)) + ((lo + sq_round) >> s)` (exact modulo 2^32).
#[inline(always)]
fn v_stat_block<const N: usize, const L: usize, const NARROW: bool>(
    rr: &[&[u16]; N],
    rd: &[&[u16]; N],
    filt: &[u16; N],
    j: usize,
    rnd: (u32, u32, u32, u32),
    row: &mut RowBuffers,
) {
    let (mu_round, mu_shift, sq_round, sq_shift) = rnd;
    let mut s = Sums::<L>::ZERO;
    let zero = [0u32; L];
    let half = N / 2;
    for k in 0..=half {
        let m = N - 1 - k;
        let (Some(&f), Some(ra), Some(rb), Some(da), Some(db)) = (
            filt.get(k),
            rr.get(k).and_then(|r| chunk::<u16, L>(r, j)),
            rr.get(m).and_then(|r| chunk::<u16, L>(r, j)),
            rd.get(k).and_then(|r| chunk::<u16, L>(r, j)),
            rd.get(m).and_then(|r| chunk::<u16, L>(r, j)),
        ) else {
            continue;
        };
        let f = u32::from(f);
        let (xa, xb, ya, yb) = (widen(ra), widen(rb), widen(da), widen(db));
        let (pxa, pya, pca) = (
            products::<L, NARROW>(ra, ra),
            products::<L, NARROW>(da, da),
            products::<L, NARROW>(ra, da),
        );
        if k == half {
            add_pair(&mut s.m1, f, &xa, &zero);
            add_pair(&mut s.m2, f, &ya, &zero);
            if NARROW {
                add_pair(&mut s.xx_lo, f, &pxa, &zero);
                add_pair(&mut s.yy_lo, f, &pya, &zero);
                add_pair(&mut s.xy_lo, f, &pca, &zero);
            } else {
                add_pair_split(&mut s.xx_lo, &mut s.xx_hi, f, &pxa, &zero);
                add_pair_split(&mut s.yy_lo, &mut s.yy_hi, f, &pya, &zero);
                add_pair_split(&mut s.xy_lo, &mut s.xy_hi, f, &pca, &zero);
            }
            continue;
        }
        let (pxb, pyb, pcb) = (
            products::<L, NARROW>(rb, rb),
            products::<L, NARROW>(db, db),
            products::<L, NARROW>(rb, db),
        );
        add_pair(&mut s.m1, f, &xa, &xb);
        add_pair(&mut s.m2, f, &ya, &yb);
        if NARROW {
            add_pair(&mut s.xx_lo, f, &pxa, &pxb);
            add_pair(&mut s.yy_lo, f, &pya, &pyb);
            add_pair(&mut s.xy_lo, f, &pca, &pcb);
        } else {
            add_pair_split(&mut s.xx_lo, &mut s.xx_hi, f, &pxa, &pxb);
            add_pair_split(&mut s.yy_lo, &mut s.yy_hi, f, &pya, &pyb);
            add_pair_split(&mut s.xy_lo, &mut s.xy_hi, f, &pca, &pcb);
        }
    }
    let at = PAD + j;
    for (src, out) in [(&s.m1, &mut row.mu1), (&s.m2, &mut row.mu2)] {
        if let Some(o) = chunk_mut::<u16, L>(out, at) {
            for l in 0..L {
                o[l] = (src[l].wrapping_add(mu_round) >> mu_shift) as u16;
            }
        }
    }
    let up = 16u32.saturating_sub(sq_shift);
    for (lo, hi, out) in [
        (&s.xx_lo, &s.xx_hi, &mut row.ref_sq),
        (&s.yy_lo, &s.yy_hi, &mut row.dis_sq),
        (&s.xy_lo, &s.xy_hi, &mut row.ref_dis),
    ] {
        if let Some(o) = chunk_mut::<u32, L>(out, at) {
            for l in 0..L {
                o[l] = if NARROW {
                    lo[l]
                } else {
                    (hi[l].wrapping_shl(up)).wrapping_add(lo[l].wrapping_add(sq_round) >> sq_shift)
                };
            }
        }
    }
}

/// Fused horizontal pass of the statistic for output columns `j..j + L` (means in Q32 and
/// the moments rounded as libvmaf, `hi + ((lo + 32768) >> 16)` of the 64-bit sum), followed
/// by the variances/covariance and the per-pixel information terms.
#[inline(always)]
fn h_stat_block<const N: usize, const L: usize>(
    row: &RowBuffers,
    filt: &[u16; N],
    j: usize,
    acc: &mut Accum,
    table: &[u16; 65536],
    limit: f64,
) {
    let half = N / 2;
    let base = PAD + j - half;
    let span = base..base + N - 1 + L;
    let (Some(mu1), Some(mu2), Some(xx), Some(yy), Some(xy)) = (
        row.mu1.get(span.clone()),
        row.mu2.get(span.clone()),
        row.ref_sq.get(span.clone()),
        row.dis_sq.get(span.clone()),
        row.ref_dis.get(span),
    ) else {
        return;
    };
    let mut s = Sums::<L>::ZERO;
    let zero = [0u32; L];
    for k in 0..=half {
        let m = N - 1 - k;
        let (Some(&f), Some(a1), Some(b1), Some(a2), Some(b2)) = (
            filt.get(k),
            chunk::<u16, L>(mu1, k),
            chunk::<u16, L>(mu1, m),
            chunk::<u16, L>(mu2, k),
            chunk::<u16, L>(mu2, m),
        ) else {
            continue;
        };
        let (Some(xa), Some(xb), Some(ya), Some(yb), Some(ca), Some(cb)) = (
            chunk::<u32, L>(xx, k),
            chunk::<u32, L>(xx, m),
            chunk::<u32, L>(yy, k),
            chunk::<u32, L>(yy, m),
            chunk::<u32, L>(xy, k),
            chunk::<u32, L>(xy, m),
        ) else {
            continue;
        };
        let f = u32::from(f);
        if k == half {
            add_pair(&mut s.m1, f, &widen(a1), &zero);
            add_pair(&mut s.m2, f, &widen(a2), &zero);
            add_pair_split(&mut s.xx_lo, &mut s.xx_hi, f, xa, &zero);
            add_pair_split(&mut s.yy_lo, &mut s.yy_hi, f, ya, &zero);
            add_pair_split(&mut s.xy_lo, &mut s.xy_hi, f, ca, &zero);
        } else {
            add_pair(&mut s.m1, f, &widen(a1), &widen(b1));
            add_pair(&mut s.m2, f, &widen(a2), &widen(b2));
            add_pair_split(&mut s.xx_lo, &mut s.xx_hi, f, xa, xb);
            add_pair_split(&mut s.yy_lo, &mut s.yy_hi, f, ya, yb);
            add_pair_split(&mut s.xy_lo, &mut s.xy_hi, f, ca, cb);
        }
    }
    let mut s1 = [0i32; L];
    let mut s2 = [0i32; L];
    let mut s12 = [0i32; L];
    for l in 0..L {
        let xx = s.xx_hi[l].wrapping_add(s.xx_lo[l].wrapping_add(32768) >> 16);
        let yy = s.yy_hi[l].wrapping_add(s.yy_lo[l].wrapping_add(32768) >> 16);
        let xy = s.xy_hi[l].wrapping_add(s.xy_lo[l].wrapping_add(32768) >> 16);
        let (m1, m2) = (u64::from(s.m1[l]), u64::from(s.m2[l]));
        let mu1_sq = ((m1 * m1).wrapping_add(1 << 31) >> 32) as u32;
        let mu2_sq = ((m2 * m2).wrapping_add(1 << 31) >> 32) as u32;
        let mu1_mu2 = ((m1 * m2).wrapping_add(1 << 31) >> 32) as u32;
        s1[l] = xx.wrapping_sub(mu1_sq) as i32;
        s2[l] = (yy.wrapping_sub(mu2_sq) as i32).max(0);
        s12[l] = xy.wrapping_sub(mu1_mu2) as i32;
    }
    pixels_block(&s1, &s2, &s12, acc, table, limit);
}

/// libvmaf's `log2_32`: log2 of `x >= 2^15` in Q11 (2048 per octave) from the top 16 bits.
#[inline(always)]
fn log2_32(table: &[u16; 65536], x: u32) -> i32 {
    let k = 16i32 - x.leading_zeros() as i32;
    let idx = x.checked_shr(k as u32).unwrap_or(0) as u16;
    i32::from(table[usize::from(idx)]) + 2048 * k
}

/// libvmaf's `log2_64`: as [`log2_32`] for `x >= 2^17`.
#[inline(always)]
fn log2_64(table: &[u16; 65536], x: u64) -> i64 {
    let k = 48i32 - x.leading_zeros() as i32;
    let idx = x.checked_shr(k as u32).unwrap_or(0) as u16;
    i64::from(table[usize::from(idx)]) + 2048 * i64::from(k)
}

/// Per-pixel information terms of `L` pixels (the body of libvmaf's statistic loops).
///
/// The double-precision gain and the two log arguments are first computed for every lane
/// (branch-free, so it vectorises); the table look-ups and sums then only use the lanes
/// whose conditions hold, so the result is the same as evaluating them per pixel.
#[inline(always)]
fn pixels_block<const L: usize>(
    s1: &[i32; L],
    s2: &[i32; L],
    s12: &[i32; L],
    acc: &mut Accum,
    table: &[u16; 65536],
    limit: f64,
) {
    const EPS: f64 = 65536.0 * 1.0e-10;
    let mut numer1 = [0u32; L];
    let mut numer1_tmp = [0u64; L];
    for l in 0..L {
        let (sigma1_sq, sigma2_sq, sigma12) =
            (f64::from(s1[l]), f64::from(s2[l]), f64::from(s12[l]));
        let g = sigma12 / (sigma1_sq + EPS);
        // C converts the double to int32_t (truncation); out-of-range results are
        // negative there and here, and both clamp to 0.
        let sv_sq = ((sigma2_sq - g * sigma12) as i32).max(0);
        let g = if g < limit { g } else { limit };
        let n1 = (sv_sq as u32).wrapping_add(SIGMA_NSQ as u32);
        numer1[l] = n1;
        numer1_tmp[l] = ((g * g * sigma1_sq) as i64).wrapping_add(i64::from(n1)) as u64;
    }
    let (mut num_log, mut den_log, mut num_non_log, mut den_non_log) = (0i64, 0i64, 0i64, 0i64);
    for l in 0..L {
        let (sigma1_sq, sigma2_sq, sigma12) = (s1[l], s2[l], s12[l]);
        let is_log = sigma1_sq >= SIGMA_NSQ;
        let gain = is_log & (sigma12 > 0) & (sigma2_sq > 0);
        let t = (SIGMA_NSQ as u32).wrapping_add(sigma1_sq as u32);
        let d = i64::from(log2_32(table, t) - 2048 * 17);
        let n = log2_64(table, numer1_tmp[l]) - log2_64(table, u64::from(numer1[l]));
        den_log += if is_log { d } else { 0 };
        num_log += if gain { n } else { 0 };
        num_non_log += if is_log { 0 } else { i64::from(sigma2_sq) };
        den_non_log += i64::from(!is_log);
    }
    acc.num_log += num_log;
    acc.den_log += den_log;
    acc.num_non_log += num_non_log;
    acc.den_non_log += den_non_log;
}

/// Statistic sums of one scale with the `N`-tap filter `filt`.
#[inline(always)]
fn stat_scale<const N: usize, const NARROW: bool>(
    r: Image,
    d: Image,
    filt: &[u16; N],
    vp: VpShift,
    row: &mut RowBuffers,
    table: &[u16; 65536],
    limit: f64,
) -> Accum {
    let rnd = vp.params();
    let half = N / 2;
    let w = r.width.min(d.width);
    let h = r.height.min(d.height);
    let mut acc = Accum::default();
    for i in 0..h {
        let rr = gather_rows::<N>(r, i);
        let rd = gather_rows::<N>(d, i);
        blocked!(w, |j, L| v_stat_block::<N, L, NARROW>(
            &rr, &rd, filt, j, rnd, row
        ));
        mirror_pad(&mut row.mu1, w, half);
        mirror_pad(&mut row.mu2, w, half);
        mirror_pad(&mut row.ref_sq, w, half);
        mirror_pad(&mut row.dis_sq, w, half);
        mirror_pad(&mut row.ref_dis, w, half);
        blocked!(w, |j, L| h_stat_block::<N, L>(
            row, filt, j, &mut acc, table, limit
        ));
    }
    acc
}

/// Statistic sums of one scale, compiled for several x86-64 feature levels and picked at
/// run time. `VpShift::Narrow` is only used at scale 0.
#[multiversion::multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
fn stat_sums(
    r: Image,
    d: Image,
    scale: usize,
    vp: VpShift,
    row: &mut RowBuffers,
    table: &[u16; 65536],
    limit: f64,
) -> Accum {
    match (scale, vp) {
        (0, VpShift::Narrow) => stat_scale::<17, true>(r, d, &FILTER0, vp, row, table, limit),
        (0, _) => stat_scale::<17, false>(r, d, &FILTER0, vp, row, table, limit),
        (1, _) => stat_scale::<9, false>(r, d, &FILTER1, vp, row, table, limit),
        (2, _) => stat_scale::<5, false>(r, d, &FILTER2, vp, row, table, limit),
        _ => stat_scale::<3, false>(r, d, &FILTER3, vp, row, table, limit),
    }
}

/// VIF numerator and denominator (libvmaf `float`s) of one scale.
fn statistic(
    r: Image,
    d: Image,
    scale: usize,
    vp: VpShift,
    row: &mut RowBuffers,
    log2_table: &[u16; 65536],
    limit: f64,
) -> (f32, f32) {
    let acc = stat_sums(r, d, scale, vp, row, log2_table, limit);
    let num = acc.num_log as f64 / 2048.0
        + (acc.den_non_log as f64 - (acc.num_non_log as f64 / 16384.0) / 65025.0);
    let den = acc.den_log as f64 / 2048.0 + acc.den_non_log as f64;
    (num as f32, den as f32)
}

/// Vertical means `(sum_k filt[k] * rows[k][j] + round) >> shift` (16-bit) of columns
/// `j..j + L` into `out[PAD + j..]`, symmetric taps folded.
#[inline(always)]
fn v_mean_block<const N: usize, const L: usize>(
    rows: &[&[u16]; N],
    filt: &[u16; N],
    j: usize,
    round: u32,
    shift: u32,
    out: &mut [u16],
) {
    let mut m = [0u32; L];
    let zero = [0u32; L];
    let half = N / 2;
    for k in 0..=half {
        let (Some(&f), Some(a), Some(b)) = (
            filt.get(k),
            rows.get(k).and_then(|r| chunk::<u16, L>(r, j)),
            rows.get(N - 1 - k).and_then(|r| chunk::<u16, L>(r, j)),
        ) else {
            continue;
        };
        let f = u32::from(f);
        if k == half {
            add_pair(&mut m, f, &widen(a), &zero);
        } else {
            add_pair(&mut m, f, &widen(a), &widen(b));
        }
    }
    if let Some(o) = chunk_mut::<u16, L>(out, PAD + j) {
        for l in 0..L {
            o[l] = (m[l].wrapping_add(round) >> shift) as u16;
        }
    }
}

/// Horizontal filter of the padded row `src` for columns `j..j + L`, rounded to 16 bits
/// (`(sum + 32768) >> 16`); the even columns `c` go to `out[c / 2]`.
#[inline(always)]
fn h_decimate_block<const N: usize, const L: usize>(
    src: &[u16],
    filt: &[u16; N],
    j: usize,
    out: &mut [u16],
) {
    let half = N / 2;
    let base = PAD + j - half;
    let Some(win) = src.get(base..base + N - 1 + L) else {
        return;
    };
    let mut m = [0u32; L];
    let zero = [0u32; L];
    for k in 0..=half {
        let (Some(&f), Some(a), Some(b)) = (
            filt.get(k),
            chunk::<u16, L>(win, k),
            chunk::<u16, L>(win, N - 1 - k),
        ) else {
            continue;
        };
        let f = u32::from(f);
        if k == half {
            add_pair(&mut m, f, &widen(a), &zero);
        } else {
            add_pair(&mut m, f, &widen(a), &widen(b));
        }
    }
    let first = j.div_ceil(2);
    let skip = j % 2;
    if let Some(o) = out.get_mut(first..) {
        for (o, &s) in o.iter_mut().zip(m.iter().skip(skip).step_by(2)) {
            *o = (s.wrapping_add(32768) >> 16) as u16;
        }
    }
}

/// Decimation of one scale with the `N`-tap filter (see [`subsample`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn subsample_scale<const N: usize>(
    r: Image,
    d: Image,
    filt: &[u16; N],
    round: u32,
    shift: u32,
    row: &mut RowBuffers,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    let half = N / 2;
    let w = r.width.min(d.width);
    let h = r.height.min(d.height);
    let (w2, h2) = (w / 2, h / 2);
    let rows_out = out_r
        .chunks_exact_mut(w2.max(1))
        .zip(out_d.chunks_exact_mut(w2.max(1)));
    for (i2, (or, od)) in (0..h2).zip(rows_out) {
        let rr = gather_rows::<N>(r, 2 * i2);
        let rd = gather_rows::<N>(d, 2 * i2);
        let RowBuffers { mu1, mu2, .. } = &mut *row;
        blocked!(w, |j, L| v_mean_block::<N, L>(
            &rr, filt, j, round, shift, mu1
        ));
        blocked!(w, |j, L| v_mean_block::<N, L>(
            &rd, filt, j, round, shift, mu2
        ));
        mirror_pad(mu1, w, half);
        mirror_pad(mu2, w, half);
        blocked!(w, |j, L| h_decimate_block::<N, L>(mu1, filt, j, or));
        blocked!(w, |j, L| h_decimate_block::<N, L>(mu2, filt, j, od));
    }
}

/// [`subsample`]'s filtering, compiled for several x86-64 feature levels.
#[multiversion::multiversion(targets("x86_64+avx2+fma", "x86_64+sse4.1"))]
#[allow(clippy::too_many_arguments)]
fn subsample_planes(
    r: Image,
    d: Image,
    next_scale: usize,
    round: u32,
    shift: u32,
    row: &mut RowBuffers,
    out_r: &mut [u16],
    out_d: &mut [u16],
) {
    match next_scale {
        1 => subsample_scale::<9>(r, d, &FILTER1, round, shift, row, out_r, out_d),
        2 => subsample_scale::<5>(r, d, &FILTER2, round, shift, row, out_r, out_d),
        _ => subsample_scale::<3>(r, d, &FILTER3, round, shift, row, out_r, out_d),
    }
}

/// Low-pass filters `r`/`d` with the filter of `next_scale` and keeps every second row and
/// column (libvmaf `subsample_rd_*` + `decimate_and_pad`), writing packed planes into
/// `out_r`/`out_d`; returns them as images. `round`/`shift` are the vertical pass's
/// rounding (`1 << (bpc - 1)`, `bpc` from scale 0, else `32768`, `16`).
#[allow(clippy::too_many_arguments)]
fn subsample<'o>(
    r: Image,
    d: Image,
    next_scale: usize,
    round: u32,
    shift: u32,
    row: &mut RowBuffers,
    out_r: &'o mut [u16],
    out_d: &'o mut [u16],
) -> (Image<'o>, Image<'o>) {
    let w = r.width.min(d.width);
    let h = r.height.min(d.height);
    let (w2, h2) = (w / 2, h / 2);
    subsample_planes(r, d, next_scale, round, shift, row, out_r, out_d);
    let img = |data: &'o [u16]| Image {
        data,
        stride: w2,
        width: w2,
        height: h2,
    };
    (img(out_r), img(out_d))
}
