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
const FILTERS: [&[u16]; 4] = [&FILTER0, &FILTER1, &FILTER2, &FILTER3];

/// Left/right margin of the padded row buffers (largest half filter width).
const PAD: usize = 8;
/// Column block processed with accumulators kept in registers.
const BLOCK: usize = 16;
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

/// Row scratch shared by the statistic and the subsampling passes.
struct RowBuffers {
    mu1: Vec<u16>,
    mu2: Vec<u16>,
    ref_sq: Vec<u32>,
    dis_sq: Vec<u32>,
    ref_dis: Vec<u32>,
    /// Horizontally filtered sums of one row (`width` long): means (Q32) and the rounded
    /// second moments.
    h_mu1: Vec<u32>,
    h_mu2: Vec<u32>,
    h_xx: Vec<u32>,
    h_yy: Vec<u32>,
    h_xy: Vec<u32>,
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
        if width < MIN_WIDTH || height < MIN_HEIGHT {
            return Err(FeatureError::FrameTooSmall {
                feature: FEATURE,
                width,
                height,
                min_width: MIN_WIDTH,
                min_height: MIN_HEIGHT,
            });
        }
        if !(8..=16).contains(&bpc) {
            return Err(FeatureError::WrongGeometry {
                feature: FEATURE,
                expected_width: width,
                expected_height: height,
                expected_bpc: 8,
                width,
                height,
                bpc,
            });
        }
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
                h_mu1: vec![0; width],
                h_mu2: vec![0; width],
                h_xx: vec![0; width],
                h_yy: vec![0; width],
                h_xy: vec![0; width],
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
        let fits = p.stride >= p.width
            && p.height >= 1
            && (p.height - 1)
                .checked_mul(p.stride)
                .and_then(|n| n.checked_add(p.width))
                .is_some_and(|n| n <= p.data.len());
        if p.width != self.width || p.height != self.height || p.bpc != self.bpc || !fits {
            return Err(FeatureError::WrongGeometry {
                feature: FEATURE,
                expected_width: self.width,
                expected_height: self.height,
                expected_bpc: self.bpc,
                width: p.width,
                height: p.height,
                bpc: p.bpc,
            });
        }
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
    /// Everything else: second moments summed in 64 bits, then rounded and shifted.
    Wide {
        mu_round: u32,
        mu_shift: u32,
        sq_round: u64,
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
}

/// Tap rows for output row `i`: mirrored rows `i - half ..= i + half`.
#[inline]
fn gather_rows<'a>(img: Image<'a>, center: usize, filt_len: usize) -> [&'a [u16]; 17] {
    let mut rows: [&[u16]; 17] = [&[]; 17];
    let half = (filt_len / 2) as isize;
    for (k, r) in rows.iter_mut().take(filt_len).enumerate() {
        *r = img.mirrored_row(center as isize - half + k as isize);
    }
    rows
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

/// Vertical means: `out[PAD + j] = (sum_k filt[k] * rows[k][j] + round) >> shift` for
/// columns `j..j + L`, truncated to 16 bits as libvmaf stores them.
#[inline(always)]
fn v_mean<const L: usize>(
    rows: &[&[u16]],
    filt: &[u16],
    j: usize,
    round: u32,
    shift: u32,
    out: &mut [u16],
) {
    let mut acc = [0u32; L];
    for (&f, row) in filt.iter().zip(rows) {
        if let Some(x) = chunk::<u16, L>(row, j) {
            let f = u32::from(f);
            for l in 0..L {
                acc[l] = acc[l].wrapping_add(f * u32::from(x[l]));
            }
        }
    }
    if let Some(o) = chunk_mut::<u16, L>(out, PAD + j) {
        for l in 0..L {
            o[l] = (acc[l].wrapping_add(round) >> shift) as u16;
        }
    }
}

/// Vertical second moment of 8-bit samples (products fit 16 bits, sums fit 32 bits, no
/// rounding): `out[PAD + j] = sum_k filt[k] * a[k][j] * b[k][j]`.
#[inline(always)]
fn v_moment_narrow<const L: usize>(
    ra: &[&[u16]],
    rb: &[&[u16]],
    filt: &[u16],
    j: usize,
    out: &mut [u32],
) {
    let mut acc = [0u32; L];
    for ((&f, a), b) in filt.iter().zip(ra).zip(rb) {
        if let (Some(a), Some(b)) = (chunk::<u16, L>(a, j), chunk::<u16, L>(b, j)) {
            let f = u32::from(f);
            for l in 0..L {
                acc[l] = acc[l].wrapping_add(f * u32::from(a[l].wrapping_mul(b[l])));
            }
        }
    }
    if let Some(o) = chunk_mut::<u32, L>(out, PAD + j) {
        *o = acc;
    }
}

/// Vertical second moment with libvmaf's 64-bit sum, rounded and shifted:
/// `out[PAD + j] = (sum_k filt[k] * a[k][j] * b[k][j] + round) >> shift` (truncated to 32
/// bits). The 64-bit sum is assembled from 32-bit sums over the low and high halves of
/// the 32-bit products; neither overflows because the taps sum to 65536.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn v_moment_wide<const L: usize>(
    ra: &[&[u16]],
    rb: &[&[u16]],
    filt: &[u16],
    j: usize,
    round: u64,
    shift: u32,
    out: &mut [u32],
) {
    let mut lo = [0u32; L];
    let mut hi = [0u32; L];
    for ((&f, a), b) in filt.iter().zip(ra).zip(rb) {
        if let (Some(a), Some(b)) = (chunk::<u16, L>(a, j), chunk::<u16, L>(b, j)) {
            let f = u32::from(f);
            for l in 0..L {
                let p = u32::from(a[l]) * u32::from(b[l]);
                lo[l] = lo[l].wrapping_add(f * (p & 0xffff));
                hi[l] = hi[l].wrapping_add(f * (p >> 16));
            }
        }
    }
    if let Some(o) = chunk_mut::<u32, L>(out, PAD + j) {
        for l in 0..L {
            let sum = (u64::from(hi[l]) << 16) + u64::from(lo[l]);
            o[l] = (sum.wrapping_add(round) >> shift) as u32;
        }
    }
}

/// Horizontal filter of a padded 16-bit row: `out[j] = sum_k filt[k] * src[PAD + j - half + k]`.
#[inline(always)]
fn h_sum16<const L: usize>(src: &[u16], filt: &[u16], j: usize, out: &mut [u32]) {
    let mut acc = [0u32; L];
    let start = PAD + j - filt.len() / 2;
    for (k, &f) in filt.iter().enumerate() {
        if let Some(x) = chunk::<u16, L>(src, start + k) {
            let f = u32::from(f);
            for l in 0..L {
                acc[l] = acc[l].wrapping_add(f * u32::from(x[l]));
            }
        }
    }
    if let Some(o) = chunk_mut::<u32, L>(out, j) {
        *o = acc;
    }
}

/// Horizontal filter of a padded 32-bit moment row with libvmaf's 64-bit sum and Q16
/// rounding: `out[j] = (sum_k filt[k] * src[PAD + j - half + k] + 32768) >> 16` (truncated
/// to 32 bits), computed as `hi + ((lo + 32768) >> 16)` from sums over the 16-bit halves.
#[inline(always)]
fn h_moment<const L: usize>(src: &[u32], filt: &[u16], j: usize, out: &mut [u32]) {
    let mut lo = [0u32; L];
    let mut hi = [0u32; L];
    let start = PAD + j - filt.len() / 2;
    for (k, &f) in filt.iter().enumerate() {
        if let Some(x) = chunk::<u32, L>(src, start + k) {
            let f = u32::from(f);
            for l in 0..L {
                lo[l] = lo[l].wrapping_add(f * (x[l] & 0xffff));
                hi[l] = hi[l].wrapping_add(f * (x[l] >> 16));
            }
        }
    }
    if let Some(o) = chunk_mut::<u32, L>(out, j) {
        for l in 0..L {
            o[l] = hi[l].wrapping_add(lo[l].wrapping_add(32768) >> 16);
        }
    }
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

/// Per-pixel information terms (the body of libvmaf's statistic loops).
#[inline(always)]
fn pixel(
    sigma1_sq: i32,
    sigma2_sq: i32,
    sigma12: i32,
    acc: &mut Accum,
    table: &[u16; 65536],
    limit: f64,
) {
    if sigma1_sq >= SIGMA_NSQ {
        let t = (SIGMA_NSQ as u32).wrapping_add(sigma1_sq as u32);
        acc.den_log += i64::from(log2_32(table, t) - 2048 * 17);
        if sigma12 > 0 && sigma2_sq > 0 {
            const EPS: f64 = 65536.0 * 1.0e-10;
            let mut g = f64::from(sigma12) / (f64::from(sigma1_sq) + EPS);
            // C converts the double to int32_t (truncation); out-of-range results are
            // negative there and here, and both clamp to 0.
            let sv_sq = ((f64::from(sigma2_sq) - g * f64::from(sigma12)) as i32).max(0);
            g = if g < limit { g } else { limit };
            let numer1 = (sv_sq as u32).wrapping_add(SIGMA_NSQ as u32);
            let numer1_tmp =
                ((g * g * f64::from(sigma1_sq)) as i64).wrapping_add(i64::from(numer1));
            acc.num_log += log2_64(table, numer1_tmp as u64) - log2_64(table, u64::from(numer1));
        }
    } else {
        acc.num_non_log += i64::from(sigma2_sq);
        acc.den_non_log += 1;
    }
}

/// Vertical pass of the statistic for one row into the padded row buffers.
#[inline(never)]
fn vertical_stat_row(
    rows_r: &[&[u16]],
    rows_d: &[&[u16]],
    filt: &[u16],
    w: usize,
    vp: VpShift,
    row: &mut RowBuffers,
) {
    let (mu_round, mu_shift) = match vp {
        VpShift::Narrow => (128, 8),
        VpShift::Wide {
            mu_round, mu_shift, ..
        } => (mu_round, mu_shift),
    };
    blocked!(w, |j, L| v_mean::<L>(
        rows_r,
        filt,
        j,
        mu_round,
        mu_shift,
        &mut row.mu1
    ));
    blocked!(w, |j, L| v_mean::<L>(
        rows_d,
        filt,
        j,
        mu_round,
        mu_shift,
        &mut row.mu2
    ));
    let pairs: [(&[&[u16]], &[&[u16]], &mut Vec<u32>); 3] = [
        (rows_r, rows_r, &mut row.ref_sq),
        (rows_d, rows_d, &mut row.dis_sq),
        (rows_r, rows_d, &mut row.ref_dis),
    ];
    for (a, b, out) in pairs {
        match vp {
            VpShift::Narrow => blocked!(w, |j, L| v_moment_narrow::<L>(a, b, filt, j, out)),
            VpShift::Wide {
                sq_round, sq_shift, ..
            } => blocked!(w, |j, L| v_moment_wide::<L>(
                a, b, filt, j, sq_round, sq_shift, out
            )),
        }
    }
}

/// Horizontal pass of the statistic for one row plus the per-pixel terms.
#[inline(never)]
fn horizontal_stat_row(
    row: &mut RowBuffers,
    filt: &[u16],
    w: usize,
    acc: &mut Accum,
    log2_table: &[u16; 65536],
    limit: f64,
) {
    let RowBuffers {
        mu1,
        mu2,
        ref_sq,
        dis_sq,
        ref_dis,
        h_mu1,
        h_mu2,
        h_xx,
        h_yy,
        h_xy,
        ..
    } = row;
    blocked!(w, |j, L| h_sum16::<L>(mu1, filt, j, h_mu1));
    blocked!(w, |j, L| h_sum16::<L>(mu2, filt, j, h_mu2));
    blocked!(w, |j, L| h_moment::<L>(ref_sq, filt, j, h_xx));
    blocked!(w, |j, L| h_moment::<L>(dis_sq, filt, j, h_yy));
    blocked!(w, |j, L| h_moment::<L>(ref_dis, filt, j, h_xy));
    pixels_row(h_mu1, h_mu2, h_xx, h_yy, h_xy, w, acc, log2_table, limit);
}

/// Per-pixel terms of one row from the filtered means and moments.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn pixels_row(
    h_mu1: &[u32],
    h_mu2: &[u32],
    h_xx: &[u32],
    h_yy: &[u32],
    h_xy: &[u32],
    w: usize,
    acc: &mut Accum,
    log2_table: &[u16; 65536],
    limit: f64,
) {
    let it = h_mu1
        .iter()
        .zip(h_mu2.iter())
        .zip(h_xx.iter().zip(h_yy.iter()).zip(h_xy.iter()))
        .take(w);
    for ((&m1, &m2), ((&xx, &yy), &xy)) in it {
        let (m1, m2) = (u64::from(m1), u64::from(m2));
        let mu1_sq = ((m1 * m1).wrapping_add(1 << 31) >> 32) as u32;
        let mu2_sq = ((m2 * m2).wrapping_add(1 << 31) >> 32) as u32;
        let mu1_mu2 = ((m1 * m2).wrapping_add(1 << 31) >> 32) as u32;
        let sigma1_sq = xx.wrapping_sub(mu1_sq) as i32;
        let sigma2_sq = (yy.wrapping_sub(mu2_sq) as i32).max(0);
        let sigma12 = xy.wrapping_sub(mu1_mu2) as i32;
        pixel(sigma1_sq, sigma2_sq, sigma12, acc, log2_table, limit);
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
    let filt = FILTERS.get(scale).copied().unwrap_or(&FILTER3);
    let half = filt.len() / 2;
    let w = r.width.min(d.width);
    let h = r.height.min(d.height);
    let mut acc = Accum::default();
    for i in 0..h {
        let rows_r = gather_rows(r, i, filt.len());
        let rows_d = gather_rows(d, i, filt.len());
        let (rows_r, rows_d) = (&rows_r[..filt.len()], &rows_d[..filt.len()]);
        vertical_stat_row(rows_r, rows_d, filt, w, vp, row);
        mirror_pad(&mut row.mu1, w, half);
        mirror_pad(&mut row.mu2, w, half);
        mirror_pad(&mut row.ref_sq, w, half);
        mirror_pad(&mut row.dis_sq, w, half);
        mirror_pad(&mut row.ref_dis, w, half);
        horizontal_stat_row(row, filt, w, &mut acc, log2_table, limit);
    }
    let num = acc.num_log as f64 / 2048.0
        + (acc.den_non_log as f64 - (acc.num_non_log as f64 / 16384.0) / 65025.0);
    let den = acc.den_log as f64 / 2048.0 + acc.den_non_log as f64;
    (num as f32, den as f32)
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
    let filt = FILTERS.get(next_scale).copied().unwrap_or(&FILTER3);
    let half = filt.len() / 2;
    let w = r.width.min(d.width);
    let h = r.height.min(d.height);
    let (w2, h2) = (w / 2, h / 2);
    let rows_out = out_r
        .chunks_exact_mut(w2.max(1))
        .zip(out_d.chunks_exact_mut(w2.max(1)));
    for (i2, (or, od)) in (0..h2).zip(rows_out) {
        let rows_r = gather_rows(r, 2 * i2, filt.len());
        let rows_d = gather_rows(d, 2 * i2, filt.len());
        let (rows_r, rows_d) = (&rows_r[..filt.len()], &rows_d[..filt.len()]);
        let RowBuffers {
            mu1,
            mu2,
            h_mu1,
            h_mu2,
            ..
        } = &mut *row;
        blocked!(w, |j, L| v_mean::<L>(rows_r, filt, j, round, shift, mu1));
        blocked!(w, |j, L| v_mean::<L>(rows_d, filt, j, round, shift, mu2));
        mirror_pad(mu1, w, half);
        mirror_pad(mu2, w, half);
        blocked!(w, |j, L| h_sum16::<L>(mu1, filt, j, h_mu1));
        blocked!(w, |j, L| h_sum16::<L>(mu2, filt, j, h_mu2));
        for (o, &s) in or.iter_mut().zip(h_mu1.iter().step_by(2)) {
            *o = (s.wrapping_add(32768) >> 16) as u16;
        }
        for (o, &s) in od.iter_mut().zip(h_mu2.iter().step_by(2)) {
            *o = (s.wrapping_add(32768) >> 16) as u16;
        }
    }
    let img = |data: &'o [u16]| Image {
        data,
        stride: w2,
        width: w2,
        height: h2,
    };
    (img(out_r), img(out_d))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vmaf-reference");

    /// Luma planes of every frame of a raw I420 / I420_10LE file.
    fn read_luma(path: &str, w: usize, h: usize, bpc: u32) -> Vec<Vec<u16>> {
        let bytes = std::fs::read(path).expect("read yuv");
        let bps = if bpc > 8 { 2 } else { 1 };
        let chroma = w.div_ceil(2) * h.div_ceil(2);
        let frame = (w * h + 2 * chroma) * bps;
        assert_eq!(bytes.len() % frame, 0);
        bytes
            .chunks_exact(frame)
            .map(|f| {
                let y = &f[..w * h * bps];
                if bps == 1 {
                    y.iter().map(|&b| u16::from(b)).collect()
                } else {
                    y.chunks_exact(2)
                        .map(|c| u16::from_le_bytes([c[0], c[1]]))
                        .collect()
                }
            })
            .collect()
    }

    fn json_scales(path: &str) -> Vec<[f64; 4]> {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        v["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let m = &f["metrics"];
                std::array::from_fn(|i| m[format!("integer_vif_scale{i}")].as_f64().unwrap())
            })
            .collect()
    }

    /// Returns per-frame scores and the max |diff| against the JSON.
    fn run_pair(
        size: &str,
        fmt: &str,
        n: usize,
        w: usize,
        h: usize,
        bpc: u32,
    ) -> (Vec<VifScores>, f64) {
        let r = read_luma(&format!("{DIR}/src01_ref_{size}_{fmt}_{n}f.yuv"), w, h, bpc);
        let d = read_luma(&format!("{DIR}/src01_dis_{size}_{fmt}_{n}f.yuv"), w, h, bpc);
        let expected = json_scales(&format!("{DIR}/libvmaf-3.2.0_src01_{size}_{fmt}_{n}f.json"));
        assert_eq!(r.len(), n);
        assert_eq!(expected.len(), n);
        let mut vif = Vif::new(w, h, bpc).unwrap();
        let cfg = VifConfig::default();
        let mut max_diff = 0.0f64;
        let mut out = Vec::new();
        for (fi, ((rf, df), exp)) in r.iter().zip(&d).zip(&expected).enumerate() {
            let rp = LumaPlane::packed(rf, w, h, bpc).unwrap();
            let dp = LumaPlane::packed(df, w, h, bpc).unwrap();
            let s = vif.compute(&rp, &dp, &cfg).unwrap();
            for i in 0..4 {
                let diff = (s.scale[i] - exp[i]).abs();
                max_diff = max_diff.max(diff);
                assert!(
                    diff <= 1e-6,
                    "{size} {fmt} frame {fi} scale {i}: ours {} libvmaf {}",
                    s.scale[i],
                    exp[i]
                );
            }
            out.push(s);
        }
        eprintln!("{size} {fmt}: max |diff| = {max_diff:e}");
        (out, max_diff)
    }

    fn mean0(s: &[VifScores]) -> f64 {
        s.iter().map(|x| x.scale[0]).sum::<f64>() / s.len() as f64
    }

    #[test]
    fn matches_libvmaf_160x90_8bit() {
        let (s, _) = run_pair("160x90", "420p8", 48, 160, 90, 8);
        // golden.md: quality_runner_test.py:1291, places=4.
        assert!(
            (mean0(&s) - 0.6895391472210215).abs() < 5e-5,
            "{}",
            mean0(&s)
        );
    }

    #[test]
    fn matches_libvmaf_576x324_10bit() {
        let (s, _) = run_pair("576x324", "420p10", 3, 576, 324, 10);
        // golden.md: vmafexec_test.py:429, places=4.
        assert!(
            (mean0(&s) - 0.4330893333333334).abs() < 5e-5,
            "{}",
            mean0(&s)
        );
    }

    #[test]
    fn matches_libvmaf_576x324_8bit() {
        let (s8, _) = run_pair("576x324", "420p8", 3, 576, 324, 8);
        assert!(
            (mean0(&s8) - 0.4330893333333334).abs() < 5e-5,
            "{}",
            mean0(&s8)
        );
    }

    #[test]
    fn sizes_around_minimum() {
        let cfg = VifConfig::default();
        for bpc in [8u32, 10] {
            let max = (1u32 << bpc) - 1;
            for h in 1..=40usize {
                for w in 1..=40usize {
                    let mut seed = (w * 131 + h * 7) as u32;
                    let mut next = || {
                        seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
                        ((seed >> 8) % (max + 1)) as u16
                    };
                    let r: Vec<u16> = (0..w * h).map(|_| next()).collect();
                    let d: Vec<u16> = r.iter().map(|&x| x / 2 + next() / 4).collect();
                    let made = Vif::new(w, h, bpc);
                    if w < MIN_WIDTH || h < MIN_HEIGHT {
                        assert!(
                            matches!(made, Err(FeatureError::FrameTooSmall { .. })),
                            "{w}x{h}"
                        );
                        continue;
                    }
                    let mut vif = made.unwrap();
                    let rp = LumaPlane::packed(&r, w, h, bpc).unwrap();
                    let dp = LumaPlane::packed(&d, w, h, bpc).unwrap();
                    let s = vif.compute(&rp, &dp, &cfg).unwrap();
                    for i in 0..4 {
                        assert!(
                            s.scale[i].is_finite() && s.num[i].is_finite() && s.den[i] > 0.0,
                            "{w}x{h} {s:?}"
                        );
                    }
                    // Identical planes: VIF is 1 at every scale, up to the fixed-point
                    // rounding of libvmaf's arithmetic.
                    let same = vif.compute(&rp, &rp, &cfg).unwrap();
                    for i in 0..4 {
                        assert!((same.scale[i] - 1.0).abs() < 1e-4, "{w}x{h} {same:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn wrong_geometry_is_rejected() {
        let mut vif = Vif::new(32, 32, 10).unwrap();
        let a = vec![0u16; 32 * 32];
        let good = LumaPlane::packed(&a, 32, 32, 10).unwrap();
        let bad_bpc = LumaPlane::packed(&a, 32, 32, 8).unwrap();
        let bad_w = LumaPlane::packed(&a, 31, 32, 10).unwrap();
        let cfg = VifConfig::default();
        assert!(matches!(
            vif.compute(&good, &bad_bpc, &cfg),
            Err(FeatureError::WrongGeometry { .. })
        ));
        assert!(matches!(
            vif.compute(&bad_w, &good, &cfg),
            Err(FeatureError::WrongGeometry { .. })
        ));
        let short = LumaPlane {
            data: &a[..100],
            width: 32,
            height: 32,
            stride: 32,
            bpc: 10,
        };
        assert!(matches!(
            vif.compute(&short, &good, &cfg),
            Err(FeatureError::WrongGeometry { .. })
        ));
        assert!(vif.compute(&good, &good, &cfg).is_ok());
    }

    #[test]
    fn strided_planes_match_packed() {
        let (w, h, stride) = (50usize, 37usize, 64usize);
        let mut seed = 12345u32;
        let mut next = || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            ((seed >> 10) & 1023) as u16
        };
        let r: Vec<u16> = (0..w * h).map(|_| next()).collect();
        let d: Vec<u16> = r.iter().map(|&x| (x + next() / 8).min(1023)).collect();
        let pad = |p: &[u16]| {
            let mut v = vec![999u16; stride * h];
            for y in 0..h {
                v[y * stride..y * stride + w].copy_from_slice(&p[y * w..(y + 1) * w]);
            }
            v
        };
        let (rs, ds) = (pad(&r), pad(&d));
        let mut vif = Vif::new(w, h, 10).unwrap();
        let cfg = VifConfig::default();
        let a = vif
            .compute(
                &LumaPlane::packed(&r, w, h, 10).unwrap(),
                &LumaPlane::packed(&d, w, h, 10).unwrap(),
                &cfg,
            )
            .unwrap();
        let b = vif
            .compute(
                &LumaPlane::new(&rs, w, h, stride, 10).unwrap(),
                &LumaPlane::new(&ds, w, h, stride, 10).unwrap(),
                &cfg,
            )
            .unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn gain_limit_one_never_exceeds_default() {
        let w = 160;
        let h = 90;
        let r = read_luma(&format!("{DIR}/src01_ref_160x90_420p8_48f.yuv"), w, h, 8);
        let d = read_luma(&format!("{DIR}/src01_dis_160x90_420p8_48f.yuv"), w, h, 8);
        let mut vif = Vif::new(w, h, 8).unwrap();
        let lim = VifConfig {
            enhn_gain_limit: 1.0,
        };
        let def = VifConfig::default();
        for (rf, df) in r.iter().zip(&d).take(8) {
            let rp = LumaPlane::packed(rf, w, h, 8).unwrap();
            let dp = LumaPlane::packed(df, w, h, 8).unwrap();
            let a = vif.compute(&rp, &dp, &def).unwrap();
            let b = vif.compute(&rp, &dp, &lim).unwrap();
            for i in 0..4 {
                assert!(b.scale[i] <= a.scale[i], "{a:?} {b:?}");
                assert_eq!(a.den[i], b.den[i]);
            }
        }
        // Enhancement: the distorted plane is a contrast-stretched reference, so g > 1 and
        // the limit must lower the score.
        let rf = &r[0];
        let enh: Vec<u16> = rf
            .iter()
            .map(|&x| ((i32::from(x) - 128) * 3 / 2 + 128).clamp(0, 255) as u16)
            .collect();
        let rp = LumaPlane::packed(rf, w, h, 8).unwrap();
        let ep = LumaPlane::packed(&enh, w, h, 8).unwrap();
        let a = vif.compute(&rp, &ep, &def).unwrap();
        let b = vif.compute(&rp, &ep, &lim).unwrap();
        for i in 0..4 {
            assert!(b.scale[i] <= a.scale[i], "{a:?} {b:?}");
            if a.scale[i] > 1.0 {
                assert!(b.scale[i] < a.scale[i], "{a:?} {b:?}");
            }
        }
        assert!(a.scale[3] > 1.0, "{a:?}");
        // No enhancement (identical planes: g == 1 up to rounding): equal.
        let a = vif.compute(&rp, &rp, &def).unwrap();
        let b = vif.compute(&rp, &rp, &lim).unwrap();
        assert_eq!(a, b);
    }
}
