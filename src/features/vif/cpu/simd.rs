//! AVX2 + FMA horizontal pass and per-pixel terms of VIF's statistic (x86-64 only, picked at
//! run time when the CPU has both; [`super::filters::h_stat_block`] is the portable version
//! and the reference this one is tested against, bit for bit).
//!
//! The portable pass sums the second moments in 32-bit halves because each sum is a 48-bit
//! integer. Here every filter sum is taken in `f64` instead: all operands and every partial
//! sum are integers below 2^53 (samples below 2^32, taps below 2^16 summing to 2^16, so
//! each sum stays below 2^48), so each `f64` addition, multiplication and fused
//! multiply-add is exact and the results equal the integer sums bit for bit. Four pixels are
//! done at once with one fused multiply-add per symmetric tap pair, instead of the portable
//! pass's four 32-bit multiplications and eight other operations.
//!
//! The per-pixel information terms then follow libvmaf's arithmetic (Netflix/vmaf v3.2.0,
//! `libvmaf/src/feature/integer_vif.c`, `vif_statistic_8`/`_16`): the gain `g` and the two
//! log arguments in `f64` with the same operations in the same order as the scalar C (no
//! contraction into fused operations there), and the fixed-point `log2` from the table of
//! 2048 steps per octave: for an integer `x >= 2^15` held exactly in an
//! `f64`, the top 16 bits `x >> k` of libvmaf's `log2_32`/`log2_64` are the implicit one and
//! the top 15 mantissa bits, and `k = e - 15` for the binary exponent `e`.

use std::arch::x86_64::*;

use super::{Accum, RowBuffers, PAD, SIGMA_NSQ};

/// Samples converted to `f64` for the horizontal pass: one row per filtered quantity, with
/// the same `PAD` margins as [`RowBuffers`].
pub(super) struct Wide {
    mu1: Vec<f64>,
    mu2: Vec<f64>,
    xx: Vec<f64>,
    yy: Vec<f64>,
    xy: Vec<f64>,
    /// `log2_table[32768 + i]` for `i` in `0..32768` (the only half the statistic reads),
    /// widened to `i32` for the gather.
    table: Box<[i32]>,
}

impl Wide {
    /// Scratch for rows of `width` samples, or `None` when the CPU lacks AVX2 or FMA.
    pub(super) fn detect(width: usize, log2_table: &[u16; 65536]) -> Option<Self> {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            return None;
        }
        let len = width + 2 * PAD;
        let table = log2_table
            .get(32768..)
            .unwrap_or(&[])
            .iter()
            .map(|&v| i32::from(v))
            .collect();
        Some(Self {
            mu1: vec![0.0; len],
            mu2: vec![0.0; len],
            xx: vec![0.0; len],
            yy: vec![0.0; len],
            xy: vec![0.0; len],
            table,
        })
    }
}

const INV16: f64 = 1.0 / 65536.0;
const INV32: f64 = 1.0 / 4294967296.0;
const TWO31: f64 = 2147483648.0;
const TWO32: f64 = 4294967296.0;
/// `2^52`: adding it to an integer in `[0, 2^52)` leaves the integer in the low mantissa bits.
const TWO52: f64 = 4503599627370496.0;

/// Horizontal pass and information terms of one row of the statistic: columns `0..w / 4 * 4`
/// are added to `acc`; returns that count (the caller does the rest with the portable pass).
/// Returns 0 and adds nothing when `wide` or `row` is shorter than `w + 2 * PAD` samples
/// (never with buffers made for `w`).
///
/// `row` holds the vertical pass's output with mirrored margins, as
/// [`super::filters::h_stat_block`] reads it; the sums equal that function's for every
/// input, including sample values outside `bpc` (the 32-bit wrap of libvmaf's unsigned
/// differences is reproduced).
#[target_feature(enable = "avx2,fma")]
pub(super) fn h_stat_row<const N: usize>(
    row: &RowBuffers,
    wide: &mut Wide,
    filt: &[u16; N],
    w: usize,
    limit: f64,
    acc: &mut Accum,
) -> usize {
    let len = w + 2 * PAD;
    let Wide {
        mu1,
        mu2,
        xx,
        yy,
        xy,
        table,
    } = wide;
    if N / 2 > PAD
        || table.len() != 32768
        || [mu1.len(), mu2.len(), xx.len(), yy.len(), xy.len()]
            .iter()
            .chain(&[row.mu1.len(), row.mu2.len()])
            .chain(&[row.ref_sq.len(), row.dis_sq.len(), row.ref_dis.len()])
            .any(|&l| l < len)
    {
        return 0;
    }
    // Conversions: vectorised by the compiler (u16/u32 to f64 are exact).
    for (d, &s) in mu1.iter_mut().zip(&row.mu1).take(len) {
        *d = f64::from(s);
    }
    for (d, &s) in mu2.iter_mut().zip(&row.mu2).take(len) {
        *d = f64::from(s);
    }
    for (d, &s) in xx.iter_mut().zip(&row.ref_sq).take(len) {
        *d = f64::from(s);
    }
    for (d, &s) in yy.iter_mut().zip(&row.dis_sq).take(len) {
        *d = f64::from(s);
    }
    for (d, &s) in xy.iter_mut().zip(&row.ref_dis).take(len) {
        *d = f64::from(s);
    }
    let taps: [f64; N] = core::array::from_fn(|k| f64::from(filt[k]));
    let half = N / 2;
    let mut terms = Terms::new(limit);
    let done = w / 4 * 4;
    for j in (0..done).step_by(4) {
        let base = PAD + j - half;
        // SAFETY: base + N - 1 + 4 <= PAD + (done - 4) + half + 4 <= w + 2 * PAD = len
        // (half <= PAD, checked above), and every row is at least `len` long.
        let (m1, m2, sxx, syy, sxy) = unsafe {
            (
                filter4(mu1, base, &taps),
                filter4(mu2, base, &taps),
                filter4(xx, base, &taps),
                filter4(yy, base, &taps),
                filter4(xy, base, &taps),
            )
        };
        terms.add(table, m1, m2, sxx, syy, sxy);
    }
    terms.finish(acc);
    done
}

/// `sum_k taps[k] * x[base + k + l]` for lanes `l = 0..4`, symmetric taps folded.
///
/// # Safety
/// `base + N + 3 <= x.len()`.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn filter4<const N: usize>(x: &[f64], base: usize, taps: &[f64; N]) -> __m256d {
    let half = N / 2;
    // SAFETY: every load reads x[base + k .. base + k + 4] with k <= N - 1, inside `x` by
    // the caller's contract.
    unsafe {
        let p = x.as_ptr().add(base);
        let mut sum = _mm256_mul_pd(_mm256_set1_pd(taps[half]), _mm256_loadu_pd(p.add(half)));
        for (k, &tap) in taps.iter().enumerate().take(half) {
            let pair = _mm256_add_pd(_mm256_loadu_pd(p.add(k)), _mm256_loadu_pd(p.add(N - 1 - k)));
            sum = _mm256_fmadd_pd(_mm256_set1_pd(tap), pair, sum);
        }
        sum
    }
}

#[target_feature(enable = "avx2,fma")]
#[inline]
fn floor(x: __m256d) -> __m256d {
    _mm256_round_pd::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(x)
}

#[target_feature(enable = "avx2,fma")]
#[inline]
fn trunc(x: __m256d) -> __m256d {
    _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x)
}

/// `(hi, lo)` with `m = hi * 2^16 + lo`, `lo < 2^16`, for integers `0 <= m < 2^32`.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn split16(m: __m256d) -> (__m256d, __m256d) {
    let hi = floor(_mm256_mul_pd(m, _mm256_set1_pd(INV16)));
    (hi, _mm256_fnmadd_pd(hi, _mm256_set1_pd(65536.0), m))
}

/// `(a * b + 2^31) >> 32` of 32-bit `a = a1 * 2^16 + a0`, `b = b1 * 2^16 + b0` (the Q32
/// product of libvmaf's means), exact: every intermediate is an integer below 2^50.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn mul_q32(a: (__m256d, __m256d), b: (__m256d, __m256d)) -> __m256d {
    let (a1, a0) = a;
    let (b1, b0) = b;
    let high = _mm256_mul_pd(a1, b1);
    let mid = _mm256_fmadd_pd(a1, b0, _mm256_mul_pd(a0, b1));
    let low = _mm256_fmadd_pd(a0, b0, _mm256_set1_pd(TWO31));
    let r = _mm256_fmadd_pd(mid, _mm256_set1_pd(65536.0), low);
    _mm256_add_pd(high, floor(_mm256_mul_pd(r, _mm256_set1_pd(INV32))))
}

/// `d` wrapped into `[-2^31, 2^31)` modulo 2^32 (libvmaf's `uint32_t` difference read as
/// `int32_t`), for integers `|d| < 2^50`.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn wrap32(d: __m256d) -> __m256d {
    let q = floor(_mm256_mul_pd(
        _mm256_add_pd(d, _mm256_set1_pd(TWO31)),
        _mm256_set1_pd(INV32),
    ));
    _mm256_fnmadd_pd(q, _mm256_set1_pd(TWO32), d)
}

/// The per-row accumulators of the information terms, four `i64` lanes each.
struct Terms {
    limit: __m256d,
    num_log: __m256i,
    den_log: __m256i,
    num_non_log: __m256i,
    den_non_log: __m256i,
}

impl Terms {
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn new(limit: f64) -> Self {
        Self {
            limit: _mm256_set1_pd(limit),
            num_log: _mm256_setzero_si256(),
            den_log: _mm256_setzero_si256(),
            num_non_log: _mm256_setzero_si256(),
            den_non_log: _mm256_setzero_si256(),
        }
    }

    /// libvmaf's fixed-point `log2` (`log2_32` / `log2_64`) of integers `x >= 2^15` held
    /// exactly in `f64`, plus `2048 * 1038` (which cancels in differences).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn log2_biased(table: &[i32], x: __m256d) -> __m256i {
        let bits = _mm256_castpd_si256(x);
        // 2048 * (e + 1023) for the biased exponent field.
        let octave = _mm256_slli_epi64::<11>(_mm256_srli_epi64::<52>(bits));
        let index = _mm256_and_si256(_mm256_srli_epi64::<37>(bits), _mm256_set1_epi64x(0x7fff));
        // Four scalar loads rather than a gather instruction: as fast on the build machine
        // (measured), and not slowed down on CPUs whose microcode mitigates "Gather Data
        // Sampling" (which makes gathers several times slower).
        let mut at = [0i64; 4];
        // SAFETY: `at` is 32 bytes, the size of one unaligned 256-bit store.
        unsafe { _mm256_storeu_si256(at.as_mut_ptr().cast(), index) };
        let entry = |l: usize| i64::from(table.get(at[l] as usize).copied().unwrap_or(0));
        let entries = _mm256_set_epi64x(entry(3), entry(2), entry(1), entry(0));
        _mm256_add_epi64(entries, octave)
    }

    /// Adds the terms of four pixels from their filter sums: means `m1`, `m2` (Q16 samples
    /// times Q16 taps) and second moments `sxx`, `syy`, `sxy` (before the `>> 16`).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn add(
        &mut self,
        table: &[i32],
        m1: __m256d,
        m2: __m256d,
        sxx: __m256d,
        syy: __m256d,
        sxy: __m256d,
    ) {
        let round16 = |s: __m256d| {
            floor(_mm256_mul_pd(
                _mm256_add_pd(s, _mm256_set1_pd(32768.0)),
                _mm256_set1_pd(INV16),
            ))
        };
        let (h1, h2) = (split16(m1), split16(m2));
        let zero = _mm256_setzero_pd();
        let s1 = wrap32(_mm256_sub_pd(round16(sxx), mul_q32(h1, h1)));
        let s2 = _mm256_max_pd(wrap32(_mm256_sub_pd(round16(syy), mul_q32(h2, h2))), zero);
        let s12 = wrap32(_mm256_sub_pd(round16(sxy), mul_q32(h1, h2)));

        let nsq = _mm256_set1_pd(f64::from(SIGMA_NSQ));
        let eps = _mm256_set1_pd(65536.0 * 1.0e-10);
        let g = _mm256_div_pd(s12, _mm256_add_pd(s1, eps));
        let sv_sq = _mm256_max_pd(trunc(_mm256_sub_pd(s2, _mm256_mul_pd(g, s12))), zero);
        // `g < limit ? g : limit` (MINPD returns its second operand for NaN).
        let g = _mm256_min_pd(g, self.limit);
        let numer1 = _mm256_add_pd(sv_sq, nsq);
        let numer1_tmp = _mm256_add_pd(trunc(_mm256_mul_pd(_mm256_mul_pd(g, g), s1)), numer1);

        let is_log = _mm256_cmp_pd::<_CMP_GE_OQ>(s1, nsq);
        let gain = _mm256_and_pd(
            is_log,
            _mm256_and_pd(
                _mm256_cmp_pd::<_CMP_GT_OQ>(s12, zero),
                _mm256_cmp_pd::<_CMP_GT_OQ>(s2, zero),
            ),
        );
        let (is_log, gain) = (_mm256_castpd_si256(is_log), _mm256_castpd_si256(gain));

        let den = _mm256_sub_epi64(
            Self::log2_biased(table, _mm256_add_pd(s1, nsq)),
            _mm256_set1_epi64x(2048 * (1038 + 17)),
        );
        let num = _mm256_sub_epi64(
            Self::log2_biased(table, numer1_tmp),
            Self::log2_biased(table, numer1),
        );
        self.den_log = _mm256_add_epi64(self.den_log, _mm256_and_si256(is_log, den));
        self.num_log = _mm256_add_epi64(self.num_log, _mm256_and_si256(gain, num));
        // s2 is an integer in [0, 2^31): its bits after adding 2^52, less 2^52's, are s2.
        let two52 = _mm256_set1_pd(TWO52);
        let s2_int = _mm256_sub_epi64(
            _mm256_castpd_si256(_mm256_add_pd(s2, two52)),
            _mm256_castpd_si256(two52),
        );
        self.num_non_log = _mm256_add_epi64(self.num_non_log, _mm256_andnot_si256(is_log, s2_int));
        // A true lane is all ones (-1).
        self.den_non_log = _mm256_sub_epi64(
            self.den_non_log,
            _mm256_andnot_si256(is_log, _mm256_set1_epi64x(-1)),
        );
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn finish(&self, acc: &mut Accum) {
        let lanes = |v: __m256i| -> i64 {
            let mut out = [0i64; 4];
            // SAFETY: `out` is 32 bytes, the size of one unaligned 256-bit store.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), v) };
            out.iter().fold(0i64, |a, &b| a.wrapping_add(b))
        };
        acc.num_log += lanes(self.num_log);
        acc.den_log += lanes(self.den_log);
        acc.num_non_log += lanes(self.num_non_log);
        acc.den_non_log += lanes(self.den_non_log);
    }
}
