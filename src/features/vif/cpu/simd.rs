//! SIMD kernels of VIF's statistic and subsampling (x86-64 only): an AVX-512 F+BW build
//! (8 pixels a step in the horizontal pass, 32 columns in the vertical ones) and an AVX2 +
//! FMA build (4 and 16) of one kernel written over vector operations ([`Isa::detect`] picks
//! the widest the CPU runs). The portable passes in [`super::filters`] are the reference
//! both builds are tested against, bit for bit; each `unsafe` block states why it is sound.
//!
//! - Vertical passes (statistic and subsampling): every filtered quantity is a 16-bit value
//!   (a sample, or the low or high half of a product of two), summed with the 16-bit signed
//!   multiply-add of interleaved symmetric tap pairs after an offset of -2^15; the offsets
//!   add up to -2^31 (the taps sum to 2^16), added back at the end, so each sum is exact
//!   modulo 2^32 as in the portable pass (libvmaf's AVX2 code also multiplies 16-bit halves).
//! - Horizontal pass of the statistic: the portable pass sums the second moments in 32-bit
//!   halves because each sum is a 48-bit integer. Here every filter sum is taken in `f64`:
//!   all operands and every partial sum are integers below 2^53 (values below 2^32, taps
//!   below 2^16 summing to 2^16), so each addition, multiplication and fused multiply-add is
//!   exact, with one fused multiply-add per symmetric tap pair.
//! - Information terms: libvmaf's arithmetic (Netflix/vmaf v3.2.0,
//!   `libvmaf/src/feature/integer_vif.c`, `vif_statistic_8`/`_16`): the gain `g` and the two
//!   log arguments in `f64` with the same operations in the same order as the scalar C (no
//!   contraction into fused operations there), and the fixed-point `log2` from the table of
//!   2048 steps per octave, read with gathers: for an integer `x >= 2^15` held exactly in an
//!   `f64`, the top 16 bits `x >> k` of libvmaf's `log2_32`/`log2_64` are the implicit one and
//!   the top 15 mantissa bits, and `k = e - 15` for the binary exponent `e`. The gathers read
//!   32-bit words of the `u16` table itself (64 KiB, no wider copy) and keep the upper half.
//!   The means' Q32 products and the moments' rounding run in 64-bit integer lanes
//!   (unsigned 32 x 32 -> 64 multiplies), on the integers' low bits taken from the `f64`
//!   sums by adding 2^52; the wrapped differences go back to `f64` through `i32`.

use std::arch::x86_64::*;

use super::common::{Accum, RowBuffers, DIS, PAD, REF, SIGMA_NSQ};

/// Which kernel [`h_stat_row`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Isa {
    /// AVX2 + FMA, 4 pixels per step.
    Avx2,
    /// AVX-512 F and BW, 8 pixels per step.
    Avx512,
}

impl Isa {
    /// The widest kernel this CPU runs, `None` without AVX2 + FMA. The environment
    /// variable `VMAFCOMPARE_SIMD` caps it: `avx2` (never AVX-512) or `portable` (no
    /// kernel), for comparisons; the scores are the same whichever runs.
    pub(super) fn detect() -> Option<Self> {
        let cap = std::env::var("VMAFCOMPARE_SIMD").unwrap_or_default();
        if cap.eq_ignore_ascii_case("portable") {
            None
        } else if Self::Avx512.runs_here() && !cap.eq_ignore_ascii_case("avx2") {
            Some(Self::Avx512)
        } else if Self::Avx2.runs_here() {
            Some(Self::Avx2)
        } else {
            None
        }
    }

    /// Whether this CPU has the kernel's instruction sets.
    pub(super) fn runs_here(self) -> bool {
        match self {
            Self::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            Self::Avx512 => {
                is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")
            }
        }
    }
}

/// Samples converted for the horizontal pass: one row per filtered quantity in `f64`, and the
/// means also offset into `i16` for the multiply-adds, with the same `PAD` margins as
/// [`RowBuffers`].
pub(super) struct Wide {
    isa: Isa,
    mu1: Vec<f64>,
    mu2: Vec<f64>,
    /// The means offset into `i16` (`v ^ 0x8000`) for the 16-bit multiply-adds, one sample
    /// longer than the other rows (see `means16`).
    mu1s: Vec<u16>,
    mu2s: Vec<u16>,
    xx: Vec<f64>,
    yy: Vec<f64>,
    xy: Vec<f64>,
    /// One row of the subsampling's horizontal filter at full resolution.
    full: Vec<u16>,
}

impl Wide {
    /// Scratch for rows of `width` samples, or `None` when the CPU lacks AVX2 + FMA.
    pub(super) fn detect(width: usize) -> Option<Self> {
        Isa::detect().map(|isa| Self::with_isa(isa, width))
    }

    /// Scratch for the kernel `isa`, which the caller has checked the CPU runs.
    pub(super) fn with_isa(isa: Isa, width: usize) -> Self {
        let len = width + 2 * PAD;
        Self {
            isa,
            mu1: vec![0.0; len],
            mu2: vec![0.0; len],
            mu1s: vec![0; len + 1],
            mu2s: vec![0; len + 1],
            xx: vec![0.0; len],
            yy: vec![0.0; len],
            xy: vec![0.0; len],
            full: vec![0; width],
        }
    }
}

/// Columns per chunk of the horizontal pass: 5 rows of `CHUNK + 16` `f64` (about 11 KiB).
const CHUNK: usize = 256;
/// Most tap pairs of the 16-bit mean filter (17 taps at scale 0).
const MAX_PAIRS: usize = 9;
/// `2^52`: adding it to an integer in `[0, 2^52)` leaves the integer in the low mantissa bits.
const TWO52: f64 = 4503599627370496.0;

/// Horizontal pass and information terms of one row of the statistic: the columns
/// `0..w / group * group` (groups of 16 columns with AVX2, 32 with AVX-512) are added to
/// `acc`; returns that count (the caller does the rest with the portable pass). Returns 0
/// and adds nothing when `wide` or `row` is shorter than `w + 2 * PAD` samples (never with
/// buffers made for `w`). `table` is libvmaf's `log2` table (`log2_table[i]` for `i` in
/// `32768..65536` is read).
///
/// `row` holds the vertical pass's output with mirrored margins, as
/// [`super::filters::h_stat_block`] reads it; the sums equal that function's for every
/// input, including sample values outside `bpc` (the 32-bit wrap of libvmaf's unsigned
/// differences is reproduced).
///
/// `PART` as [`super::filters::h_stat_block`]'s: with [`REF`] the reference's mean and
/// variance of the columns done are stored in `row.ref_m1` / `row.ref_s1` (nothing added to
/// `acc`), with [`DIS`] read from there.
///
/// # Safety
/// The CPU runs `wide`'s kernel (true when `wide` comes from [`Wide::detect`]).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn h_stat_row<const N: usize, const PART: u8>(
    row: &mut RowBuffers,
    wide: &mut Wide,
    filt: &[u16; N],
    w: usize,
    table: &[u16; 65536],
    limit: f64,
    acc: &mut Accum,
) -> usize {
    let len = w + 2 * PAD;
    if N / 2 > PAD
        || wide.mu1s.len() <= len
        || wide.mu2s.len() <= len
        || row.shortest() < len
        || row.ref_m1.len().min(row.ref_s1.len()) < w
        || [&wide.mu1, &wide.mu2, &wide.xx, &wide.yy, &wide.xy]
            .iter()
            .any(|r| r.len() < len)
    {
        return 0;
    }
    // SAFETY: the caller guarantees the CPU runs the kernel; the lengths are checked above.
    unsafe {
        match wide.isa {
            Isa::Avx2 => avx2::row::<N, PART>(row, wide, filt, w, table, limit, acc),
            Isa::Avx512 => avx512::row::<N, PART>(row, wide, filt, w, table, limit, acc),
        }
    }
}

/// The vertical pass of the statistic (as [`super::filters::v_stat_block`], bit for bit) for
/// the columns `0..w / lanes * lanes` (16 with AVX2, 32 with AVX-512) of one output row, from
/// its `N` tap rows `rr` / `rd`; returns that count (the caller does the rest). `NARROW`:
/// 8-bit samples at scale 0 (16-bit products, unshifted sums). Returns 0 and writes
/// nothing when a row or buffer is too short for `w`. `PART` as
/// [`super::filters::v_stat_block`]'s.
///
/// The sums are taken with the 16-bit signed multiply-add of interleaved tap pairs
/// (libvmaf's AVX2 code multiplies 16-bit halves too): every quantity is a 16-bit value
/// (a sample, or the low or high half of a product), so each filter sum is exact modulo
/// 2^32 as in the portable pass.
///
/// # Safety
/// The CPU runs `wide`'s kernel (true when `wide` comes from [`Wide::detect`]).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn v_stat_row<const N: usize, const NARROW: bool, const PART: u8>(
    wide: &Wide,
    rr: &[&[u16]; N],
    rd: &[&[u16]; N],
    filt: &[u16; N],
    w: usize,
    rnd: (u32, u32, u32, u32),
    row: &mut RowBuffers,
) -> usize {
    if N / 2 > PAD || rr.iter().chain(rd).any(|r| r.len() < w) || row.shortest() < PAD + w {
        return 0;
    }
    // SAFETY: the caller guarantees the CPU runs the kernel; the lengths are checked above.
    unsafe {
        match wide.isa {
            Isa::Avx2 => avx2::vertical::<N, NARROW, PART>(rr, rd, filt, w, rnd, row),
            Isa::Avx512 => avx512::vertical::<N, NARROW, PART>(rr, rd, filt, w, rnd, row),
        }
    }
}

/// Vertical means `(sum_k filt[k] * rows[k][j] + round) >> shift` (16-bit) of the
/// subsampling, as [`super::filters::v_mean_block`], for the columns `0..done` of one row
/// into `out[PAD..]`; returns `done` (0 when a row or `out` is too short).
///
/// # Safety
/// The CPU runs the kernel of `wide` (true for a [`Wide`] from [`Wide::detect`]).
pub(super) unsafe fn v_mean_row<const N: usize>(
    wide: &Wide,
    rows: &[&[u16]; N],
    filt: &[u16; N],
    w: usize,
    round: u32,
    shift: u32,
    out: &mut [u16],
) -> usize {
    if N / 2 > PAD || rows.iter().any(|r| r.len() < w) || out.len() < PAD + w {
        return 0;
    }
    // SAFETY: the caller guarantees the CPU runs the kernel; the lengths are checked above.
    unsafe {
        match wide.isa {
            Isa::Avx2 => avx2::v_means::<N>(rows, filt, w, round, shift, out),
            Isa::Avx512 => avx512::v_means::<N>(rows, filt, w, round, shift, out),
        }
    }
}

/// Horizontal filter and decimation of the subsampling, as
/// [`super::filters::h_decimate_block`]: the padded row `src` filtered at the columns
/// `0..done`, whose even columns `c` go to `out[c / 2]`; returns `done` (0 when `src`, or
/// the scratch row made for the frame width, is too short: never for the frame's scales).
///
/// # Safety
/// As [`v_mean_row`].
pub(super) unsafe fn h_decimate_row<const N: usize>(
    wide: &mut Wide,
    src: &[u16],
    filt: &[u16; N],
    w: usize,
    out: &mut [u16],
) -> usize {
    if N / 2 > PAD || src.len() < w + 2 * PAD || wide.full.len() < w {
        return 0;
    }
    // SAFETY: the caller guarantees the CPU runs the kernel; the lengths are checked above.
    unsafe {
        match wide.isa {
            Isa::Avx2 => avx2::h_decimate::<N>(src, filt, w, &mut wide.full, out),
            Isa::Avx512 => avx512::h_decimate::<N>(src, filt, w, &mut wide.full, out),
        }
    }
}

/// The kernel, written once over the vector operations of the module it expands in (`D`: `f64`
/// lanes, `I`: `i64` lanes, `M`: a lane mask, `LANES`, and the functions `add`, `fmadd`, ...).
macro_rules! kernel {
    ($features:literal) => {
        /// [`super::h_stat_row`] after its checks.
        ///
        /// # Safety
        /// The CPU has `$features`; every row of `wide` and `row` holds `w + 2 * PAD` samples
        /// (`wide.mu1s` and `wide.mu2s` one more, `row.ref_m1` and `row.ref_s1` at least `w`),
        /// and `N / 2 <= PAD`.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn row<const N: usize, const PART: u8>(
            row: &mut RowBuffers,
            wide: &mut Wide,
            filt: &[u16; N],
            w: usize,
            table: &[u16; 65536],
            limit: f64,
            acc: &mut Accum,
        ) -> usize {
            let (with_ref, with_dis) = (PART != DIS, PART != REF);
            let len = w + 2 * PAD;
            let Wide {
                mu1,
                mu2,
                mu1s,
                mu2s,
                xx,
                yy,
                xy,
                ..
            } = wide;
            let taps: [f64; N] = core::array::from_fn(|k| f64::from(filt[k]));
            let half = N / 2;
            let mut terms = Terms::new(limit);
            // The means by 16-bit multiply-adds when every tap is an `i16` (scales 0-2).
            let narrow = N <= 2 * MAX_PAIRS && filt.iter().all(|&t| t < 0x8000);
            let (pairs, bias) = tap_pairs(filt);
            let done = w / GROUP * GROUP;
            // Columns in chunks whose converted samples stay in the L1 cache between the
            // conversion and the filter's reads (whole rows made the filter wait on L2).
            let mut converted = 0;
            for j0 in (0..done).step_by(CHUNK) {
                let j1 = (j0 + CHUNK).min(done);
                // The last group reads up to index PAD + j1 + half - 1 (the 16-bit means'
                // odd columns one more, with a zero tap: see `means16`).
                let need = (PAD + j1 + half).min(len);
                let span = converted..need;
                // Conversions: vectorised by the compiler (u16/u32 to f64 are exact).
                if narrow {
                    if with_ref {
                        for (d, &s) in mu1s[span.clone()].iter_mut().zip(&row.mu1[span.clone()]) {
                            *d = s ^ 0x8000;
                        }
                    }
                    if with_dis {
                        for (d, &s) in mu2s[span.clone()].iter_mut().zip(&row.mu2[span.clone()]) {
                            *d = s ^ 0x8000;
                        }
                    }
                } else {
                    if with_ref {
                        for (d, &s) in mu1[span.clone()].iter_mut().zip(&row.mu1[span.clone()]) {
                            *d = f64::from(s);
                        }
                    }
                    if with_dis {
                        for (d, &s) in mu2[span.clone()].iter_mut().zip(&row.mu2[span.clone()]) {
                            *d = f64::from(s);
                        }
                    }
                }
                if with_ref {
                    for (d, &s) in xx[span.clone()].iter_mut().zip(&row.ref_sq[span.clone()]) {
                        *d = f64::from(s);
                    }
                }
                if with_dis {
                    for (d, &s) in yy[span.clone()].iter_mut().zip(&row.dis_sq[span.clone()]) {
                        *d = f64::from(s);
                    }
                    for (d, &s) in xy[span.clone()].iter_mut().zip(&row.ref_dis[span]) {
                        *d = f64::from(s);
                    }
                }
                converted = need;
                for g in (j0..j1).step_by(GROUP) {
                    let base = PAD + g - half;
                    // The group's means, `LANES` columns per entry (a plane's left at zero
                    // when `PART` leaves it out).
                    let mut m = [[splat_i(0); 4]; 2];
                    if narrow {
                        // SAFETY: the loads read base..=base + N + GROUP - 1 =
                        // PAD + g + GROUP + half <= PAD + done + PAD <= len, inside `mu1s`
                        // and `mu2s` (len + 1 long, checked by `h_stat_row`).
                        unsafe {
                            if with_ref {
                                m[0] = means16::<N>(mu1s, base, &pairs, bias);
                            }
                            if with_dis {
                                m[1] = means16::<N>(mu2s, base, &pairs, bias);
                            }
                        }
                    } else {
                        for s in 0..4 {
                            // SAFETY: as the moments' filters below.
                            unsafe {
                                if with_ref {
                                    m[0][s] = low_bits(filter(mu1, base + s * LANES, &taps));
                                }
                                if with_dis {
                                    m[1][s] = low_bits(filter(mu2, base + s * LANES, &taps));
                                }
                            }
                        }
                    }
                    for s in 0..4 {
                        let at = base + s * LANES;
                        // The reference's half of these columns in `row.ref_m1` / `ref_s1`.
                        let col = g + s * LANES;
                        if PART == REF {
                            // SAFETY: as below for `xx`; `ref_m1` and `ref_s1` hold
                            // `w >= col + LANES` values.
                            unsafe {
                                let s1 = sigma1_sq(m[0][s], filter(xx, at, &taps));
                                store_low32(row.ref_m1.as_mut_ptr().add(col), m[0][s]);
                                store_low32(row.ref_s1.as_mut_ptr().add(col).cast(), s1);
                            }
                            continue;
                        }
                        // SAFETY: at + N - 1 + LANES <= PAD + (done - LANES) + half + LANES
                        // <= w + 2 * PAD = len (half <= PAD), every row is `len` long, and
                        // indices below `need` are converted.
                        let (syy, sxy) = unsafe { (filter(yy, at, &taps), filter(xy, at, &taps)) };
                        if PART == DIS {
                            // SAFETY: `ref_m1` and `ref_s1` hold `w >= col + LANES` values.
                            let (u1, s1) = unsafe {
                                (
                                    load_u32(row.ref_m1.as_ptr().add(col)),
                                    load_i32_f64(row.ref_s1.as_ptr().add(col)),
                                )
                            };
                            terms.add_s1(table, u1, m[1][s], s1, syy, sxy);
                        } else {
                            // SAFETY: as above.
                            let sxx = unsafe { filter(xx, at, &taps) };
                            terms.add(table, m[0][s], m[1][s], sxx, syy, sxy);
                        }
                    }
                }
            }
            acc.num_log += hsum(terms.num_log);
            acc.den_log += hsum(terms.den_log);
            acc.num_non_log += hsum(terms.num_non_log);
            acc.den_non_log += hsum(terms.den_non_log);
            done
        }

        /// libvmaf's `sigma1_sq` (a `uint32_t` difference read as `int32_t`) in the low 32
        /// bits of each lane, from the mean `u1` (its low 32 bits) and the moment `sxx`
        /// (before the `>> 16`).
        #[target_feature(enable = $features)]
        #[inline]
        fn sigma1_sq(u1: I, sxx: D) -> I {
            sub_i(round16(sxx), mul_q32(u1, u1))
        }

        /// `(pairs, bias)` for [`means16`]: `pairs[m]` holds taps `2m` and `2m + 1` (0 past
        /// the last) as the two `i16` of each 32-bit lane, `bias` is `2^15 * sum(taps)`
        /// modulo 2^32. Meaningful when every tap is below 2^15 and `N <= 2 * MAX_PAIRS`.
        #[target_feature(enable = $features)]
        #[inline]
        fn tap_pairs<const N: usize>(filt: &[u16; N]) -> ([I; MAX_PAIRS], I) {
            let tap = |k: usize| u32::from(filt.get(k).copied().unwrap_or(0));
            let mut pairs = [splat_32(0); MAX_PAIRS];
            for (m, p) in pairs.iter_mut().enumerate() {
                *p = splat_32((tap(2 * m) | (tap(2 * m + 1) << 16)) as i32);
            }
            let sum = filt.iter().map(|&t| u32::from(t)).sum::<u32>();
            (pairs, splat_32(sum.wrapping_mul(0x8000) as i32))
        }

        /// The mean filter sums `sum_k taps[k] * (x[base + c + k] ^ 0x8000)` + `bias` (that
        /// is, of the original 16-bit means) for the `GROUP` columns `c`, exact modulo 2^32
        /// (they are below 2^32), as `LANES` unsigned 32-bit values in the low half of each
        /// 64-bit lane, four steps in column order.
        ///
        /// Each 32-bit lane of a load at `base + 2m` (even columns) or `base + 2m + 1` (odd
        /// columns) holds two neighbouring samples, multiplied by taps `2m`, `2m + 1` and
        /// added in one signed multiply-add; the even and odd sums are interleaved back.
        ///
        /// # Safety
        /// `base + N + GROUP - 1 < x.len()` when `N` is odd (the odd columns' last pair
        /// reads one sample past the window, with tap 0), `base + N + GROUP - 2` when even.
        #[target_feature(enable = $features)]
        #[inline]
        unsafe fn means16<const N: usize>(
            x: &[u16],
            base: usize,
            pairs: &[I; MAX_PAIRS],
            bias: I,
        ) -> [I; 4] {
            let (mut even, mut odd) = (bias, bias);
            // SAFETY: load m reads x[base + 2m (+ 1) ..][..LANES16] with
            // 2m + 1 <= N (m < (N + 1) / 2) and LANES16 = GROUP: inside `x` by the contract.
            unsafe {
                let p = x.as_ptr().add(base);
                for (m, &pair) in pairs.iter().enumerate().take(N.div_ceil(2)) {
                    even = add32(even, madd(load16(p.add(2 * m)), pair));
                    odd = add32(odd, madd(load16(p.add(2 * m + 1)), pair));
                }
            }
            let (lo, hi) = interleave32(even, odd);
            [widen_lo(lo), widen_hi(lo), widen_lo(hi), widen_hi(hi)]
        }

        /// `sum_k taps[k] * x[base + k + l]` for each lane `l`, symmetric taps folded.
        ///
        /// # Safety
        /// `base + N - 1 + LANES <= x.len()`.
        #[target_feature(enable = $features)]
        #[inline]
        unsafe fn filter<const N: usize>(x: &[f64], base: usize, taps: &[f64; N]) -> D {
            let half = N / 2;
            // SAFETY: every load reads x[base + k .. base + k + LANES] with k <= N - 1,
            // inside `x` by the caller's contract.
            unsafe {
                let p = x.as_ptr().add(base);
                let mut sum = mul(splat(taps[half]), load(p.add(half)));
                for (k, &tap) in taps.iter().enumerate().take(half) {
                    let pair = add(load(p.add(k)), load(p.add(N - 1 - k)));
                    sum = fmadd(splat(tap), pair, sum);
                }
                sum
            }
        }

        /// The low 32 bits of the integer `x` (`0 <= x < 2^52`) in the low half of each
        /// lane (the high half is not defined): `x` added to 2^52 leaves it in the low
        /// mantissa bits.
        #[target_feature(enable = $features)]
        #[inline]
        fn low_bits(x: D) -> I {
            bits(add(x, splat(TWO52)))
        }

        /// `(a * b + 2^31) >> 32` (the Q32 product of libvmaf's means) of the unsigned
        /// 32-bit low halves of `a` and `b`, exact in 64 bits (`(2^32 - 1)^2 + 2^31 < 2^64`).
        #[target_feature(enable = $features)]
        #[inline]
        fn mul_q32(a: I, b: I) -> I {
            shr32_64(add_i(mul_u32(a, b), splat_i(1 << 31)))
        }

        /// `(s + 32768) >> 16` of an integer `0 <= s < 2^52 - 2^15`, correct in its low 32
        /// bits (all that the wrapped differences read).
        #[target_feature(enable = $features)]
        #[inline]
        fn round16(s: D) -> I {
            shr16_64(bits(add(s, splat(TWO52 + 32768.0))))
        }

        /// libvmaf's fixed-point `log2` (`log2_32` / `log2_64`) of integers `x >= 2^15` held
        /// exactly in `f64`, plus `2048 * 1038` (which cancels in differences).
        #[target_feature(enable = $features)]
        #[inline]
        fn log2_biased(table: &[u16; 65536], x: D) -> I {
            let bits = bits(x);
            // 2048 * (e + 1023) from the biased exponent field.
            let octave = shl11(shr52(bits));
            // The entry is table[32768 + m] for the top 15 mantissa bits m: the upper half
            // of the 32-bit word at table[32767 + m].
            let index = add_i(and(shr37(bits), splat_i(0x7fff)), splat_i(32767));
            // SAFETY: every index is in 32767..=65534, so each 4-byte read lies inside the
            // table's 131072 bytes.
            let entries = unsafe { gather_u16_pair(table, index) };
            add_i(shr16_64(entries), octave)
        }

        /// The per-row accumulators of the information terms, `i64` lanes.
        struct Terms {
            limit: D,
            num_log: I,
            den_log: I,
            num_non_log: I,
            den_non_log: I,
        }

        impl Terms {
            #[target_feature(enable = $features)]
            #[inline]
            fn new(limit: f64) -> Self {
                Self {
                    limit: splat(limit),
                    num_log: splat_i(0),
                    den_log: splat_i(0),
                    num_non_log: splat_i(0),
                    den_non_log: splat_i(0),
                }
            }

            /// Adds the terms of one step of pixels from their filter sums: means `u1`, `u2`
            /// (Q16 samples times Q16 taps, below 2^32, in the low 32 bits of each lane) and
            /// second moments `sxx`, `syy`, `sxy` (before the `>> 16`).
            #[target_feature(enable = $features)]
            #[inline]
            fn add(&mut self, table: &[u16; 65536], u1: I, u2: I, sxx: D, syy: D, sxy: D) {
                let s1 = low32_f64(sigma1_sq(u1, sxx));
                self.add_s1(table, u1, u2, s1, syy, sxy);
            }

            /// [`Terms::add`] with the reference's `sigma1_sq` already made (`s1`: the low 32
            /// bits of [`sigma1_sq`] read as `i32`).
            #[target_feature(enable = $features)]
            #[inline]
            fn add_s1(&mut self, table: &[u16; 65536], u1: I, u2: I, s1: D, syy: D, sxy: D) {
                // The moments' integer forms: the differences are libvmaf's `uint32_t` ones
                // read as `int32_t`, so only their low 32 bits count.
                let zero = splat(0.0);
                let s2 = max(low32_f64(sub_i(round16(syy), mul_q32(u2, u2))), zero);
                let s12 = low32_f64(sub_i(round16(sxy), mul_q32(u1, u2)));

                let nsq = splat(f64::from(SIGMA_NSQ));
                let g = div(s12, add(s1, splat(65536.0 * 1.0e-10)));
                let sv_sq = max(trunc(sub(s2, mul(g, s12))), zero);
                // `g < limit ? g : limit` (MINPD returns its second operand for NaN).
                let g = min(g, self.limit);
                let numer1 = add(sv_sq, nsq);
                let numer1_tmp = add(trunc(mul(mul(g, g), s1)), numer1);

                let is_log = ge(s1, nsq);
                let gain = and_m(is_log, and_m(gt(s12, zero), gt(s2, zero)));

                let den = sub_i(
                    log2_biased(table, add(s1, nsq)),
                    splat_i(2048 * (1038 + 17)),
                );
                let num = sub_i(log2_biased(table, numer1_tmp), log2_biased(table, numer1));
                self.den_log = add_i(self.den_log, keep(is_log, den));
                self.num_log = add_i(self.num_log, keep(gain, num));
                // s2 is an integer in [0, 2^31): its bits after adding 2^52, less 2^52's,
                // are s2.
                let two52 = splat(TWO52);
                let s2_int = sub_i(bits(add(s2, two52)), bits(two52));
                self.num_non_log = add_i(self.num_non_log, keep_not(is_log, s2_int));
                self.den_non_log = add_i(self.den_non_log, keep_not(is_log, splat_i(1)));
            }
        }

        /// [`super::v_stat_row`] after its checks.
        ///
        /// # Safety
        /// The CPU has `$features`; every row of `rr` and `rd` holds at least `w` samples,
        /// every buffer of `row` at least `PAD + w`, and `N / 2 <= PAD`.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn vertical<const N: usize, const NARROW: bool, const PART: u8>(
            rr: &[&[u16]; N],
            rd: &[&[u16]; N],
            filt: &[u16; N],
            w: usize,
            rnd: (u32, u32, u32, u32),
            row: &mut RowBuffers,
        ) -> usize {
            let (mu_round, mu_shift, sq_round, sq_shift) = rnd;
            let taps = pair_taps(filt);
            let done = w / LANES16 * LANES16;
            let half = N / 2;
            let flip = splat_32(0x8000_8000u32 as i32);
            let bias = splat_32(i32::MIN);
            let up = 16u32.saturating_sub(sq_shift);
            for j in (0..done).step_by(LANES16) {
                // All quantities in one pass over the tap rows (each row loaded once): the
                // means of both planes and the second moments, whole 16-bit products with
                // `NARROW`, else their low and high halves. Each sum as in `fsum`.
                let mut acc = [(bias, bias); 8];
                for k in 0..=half {
                    let m = N - 1 - k;
                    // SAFETY: rows hold `w >= j + LANES16` samples.
                    let (xa, xb, ya, yb) = unsafe {
                        (
                            load16(rr[k].as_ptr().add(j)),
                            load16(rr[m].as_ptr().add(j)),
                            load16(rd[k].as_ptr().add(j)),
                            load16(rd[m].as_ptr().add(j)),
                        )
                    };
                    let tap = taps[k];
                    let mut fold = |q: usize, a: I, b: I| {
                        let (a, b) = (xor(a, flip), xor(b, flip));
                        acc[q].0 = add32(acc[q].0, madd(unpacklo16(a, b), tap));
                        acc[q].1 = add32(acc[q].1, madd(unpackhi16(a, b), tap));
                    };
                    // The centre row pairs with itself, its tap split in two halves.
                    let (xb, yb) = if k == half { (xa, ya) } else { (xb, yb) };
                    if PART != DIS {
                        fold(0, xa, xb);
                        fold(2, mullo16(xa, xa), mullo16(xb, xb));
                        if !NARROW {
                            fold(5, mulhi16(xa, xa), mulhi16(xb, xb));
                        }
                    }
                    if PART != REF {
                        fold(1, ya, yb);
                        fold(3, mullo16(ya, ya), mullo16(yb, yb));
                        fold(4, mullo16(xa, ya), mullo16(xb, yb));
                        if !NARROW {
                            fold(6, mulhi16(ya, ya), mulhi16(yb, yb));
                            fold(7, mulhi16(xa, ya), mulhi16(xb, yb));
                        }
                    }
                }
                let at = PAD + j;
                let means = |m: (I, I)| {
                    pack16(
                        round_shift(m.0, mu_round, mu_shift),
                        round_shift(m.1, mu_round, mu_shift),
                    )
                };
                // SAFETY (every store): `row`'s buffers hold `PAD + w` samples.
                unsafe {
                    if PART != DIS {
                        store16(row.mu1.as_mut_ptr().add(at), means(acc[0]));
                    }
                    if PART != REF {
                        store16(row.mu2.as_mut_ptr().add(at), means(acc[1]));
                    }
                }
                let outs = [&mut row.ref_sq, &mut row.dis_sq, &mut row.ref_dis];
                for (q, out) in outs.into_iter().enumerate() {
                    // The reference's moment (q = 0) or the other two, as `PART` asks.
                    if (q == 0 && PART == DIS) || (q > 0 && PART == REF) {
                        continue;
                    }
                    let (lo, hi) = if NARROW {
                        // 16-bit products (8-bit samples), summed unshifted.
                        acc[2 + q]
                    } else {
                        // libvmaf's rounded shift of the 64-bit sum, from the sums of the
                        // products' low and high halves, modulo 2^32.
                        let (lo, hi) = (acc[2 + q], acc[5 + q]);
                        (
                            add32(shl32(hi.0, up), round_shift(lo.0, sq_round, sq_shift)),
                            add32(shl32(hi.1, up), round_shift(lo.1, sq_round, sq_shift)),
                        )
                    };
                    // SAFETY: as above.
                    unsafe { store32(out.as_mut_ptr().add(at), lo, hi) };
                }
            }
            done
        }

        /// [`super::v_mean_row`] after its checks.
        ///
        /// # Safety
        /// The CPU has `$features`; every row of `rows` holds at least `w` samples and `out`
        /// at least `PAD + w`.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn v_means<const N: usize>(
            rows: &[&[u16]; N],
            filt: &[u16; N],
            w: usize,
            round: u32,
            shift: u32,
            out: &mut [u16],
        ) -> usize {
            let taps = pair_taps(filt);
            let done = w / LANES16 * LANES16;
            for j in (0..done).step_by(LANES16) {
                // SAFETY: rows hold `w >= j + LANES16` samples.
                let (lo, hi) = fsum(&taps, |k| unsafe { load16(rows[k].as_ptr().add(j)) });
                let m = pack16(round_shift(lo, round, shift), round_shift(hi, round, shift));
                // SAFETY: `out` holds `PAD + w` samples.
                unsafe { store16(out.as_mut_ptr().add(PAD + j), m) };
            }
            done
        }

        /// [`super::h_decimate_row`] after its checks.
        ///
        /// # Safety
        /// The CPU has `$features`; `src` holds `w + 2 * PAD` samples, `full` at least `w`,
        /// `N / 2 <= PAD`.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn h_decimate<const N: usize>(
            src: &[u16],
            filt: &[u16; N],
            w: usize,
            full: &mut [u16],
            out: &mut [u16],
        ) -> usize {
            let taps = pair_taps(filt);
            let half = N / 2;
            let done = w / LANES16 * LANES16;
            for j in (0..done).step_by(LANES16) {
                let base = PAD + j - half;
                // SAFETY: base + N - 1 + LANES16 <= PAD + w + half <= w + 2 * PAD.
                let (lo, hi) = fsum(&taps, |k| unsafe { load16(src.as_ptr().add(base + k)) });
                let m = pack16(round_shift(lo, 32768, 16), round_shift(hi, 32768, 16));
                // SAFETY: `full` holds `w >= j + LANES16` samples.
                unsafe { store16(full.as_mut_ptr().add(j), m) };
            }
            for (o, &v) in out.iter_mut().zip(full.iter().take(done).step_by(2)) {
                *o = v;
            }
            done
        }

        /// Tap pairs for the multiply-add of interleaved samples: `(f_k, f_k)` for the
        /// folded taps, and the centre tap split in two halves that fit `i16`.
        #[target_feature(enable = $features)]
        #[inline]
        fn pair_taps<const N: usize>(filt: &[u16; N]) -> [I; N] {
            let half = N / 2;
            core::array::from_fn(|k| {
                let f = i32::from(filt[k]);
                if k == half {
                    splat_32(((f - f / 2) << 16) | (f / 2))
                } else {
                    splat_32((f << 16) | f)
                }
            })
        }

        /// `sum_k taps[k] * q(k)` modulo 2^32 for `LANES16` columns of 16-bit quantities, as
        /// `i32` lanes in the interleaved order of `unpacklo16` / `unpackhi16`.
        ///
        /// Each quantity is offset by -2^15 into `i16` for the signed multiply-add (`q ^
        /// 0x8000`); the offsets add up to `-2^15 * 65536 = -2^31` since the taps sum to 2^16,
        /// which the final `+ 2^31` cancels modulo 2^32.
        #[target_feature(enable = $features)]
        #[inline]
        fn fsum<const N: usize>(taps: &[I; N], q: impl Fn(usize) -> I) -> (I, I) {
            let half = N / 2;
            let flip = splat_32(0x8000_8000u32 as i32);
            let (mut lo, mut hi) = (splat_32(i32::MIN), splat_32(i32::MIN));
            for k in 0..=half {
                let a = xor(q(k), flip);
                let b = if k == half {
                    a
                } else {
                    xor(q(N - 1 - k), flip)
                };
                lo = add32(lo, madd(unpacklo16(a, b), taps[k]));
                hi = add32(hi, madd(unpackhi16(a, b), taps[k]));
            }
            (lo, hi)
        }

        /// `(v + round) >> shift` of `u32` lanes (wrapping add).
        #[target_feature(enable = $features)]
        #[inline]
        fn round_shift(v: I, round: u32, shift: u32) -> I {
            shr32(add32(v, splat_32(round as i32)), shift)
        }

        /// Sum of the lanes.
        #[target_feature(enable = $features)]
        #[inline]
        fn hsum(v: I) -> i64 {
            let mut at = [0i64; LANES];
            store_i(&mut at, v);
            at.iter().fold(0i64, |a, &b| a.wrapping_add(b))
        }
    };
}

/// The AVX2 + FMA vector operations (4 lanes).
mod avx2 {
    use super::*;

    type D = __m256d;
    type I = __m256i;
    /// All-ones lanes for true.
    type M = __m256i;
    const LANES: usize = 4;
    /// Columns per group of the horizontal pass: one 16-bit load (four steps).
    const GROUP: usize = 4 * LANES;

    macro_rules! ops {
        ($($name:ident($($a:ident: $t:ty),*) -> $r:ty $body:block)*) => {$(
            #[target_feature(enable = "avx2,fma")]
            #[inline]
            fn $name($($a: $t),*) -> $r $body
        )*};
    }
    ops! {
        splat(x: f64) -> D { _mm256_set1_pd(x) }
        splat_i(x: i64) -> I { _mm256_set1_epi64x(x) }
        add(a: D, b: D) -> D { _mm256_add_pd(a, b) }
        sub(a: D, b: D) -> D { _mm256_sub_pd(a, b) }
        mul(a: D, b: D) -> D { _mm256_mul_pd(a, b) }
        div(a: D, b: D) -> D { _mm256_div_pd(a, b) }
        fmadd(a: D, b: D, c: D) -> D { _mm256_fmadd_pd(a, b, c) }
        trunc(x: D) -> D { _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x) }
        max(a: D, b: D) -> D { _mm256_max_pd(a, b) }
        min(a: D, b: D) -> D { _mm256_min_pd(a, b) }
        ge(a: D, b: D) -> M { _mm256_castpd_si256(_mm256_cmp_pd::<_CMP_GE_OQ>(a, b)) }
        gt(a: D, b: D) -> M { _mm256_castpd_si256(_mm256_cmp_pd::<_CMP_GT_OQ>(a, b)) }
        and_m(a: M, b: M) -> M { _mm256_and_si256(a, b) }
        keep(m: M, v: I) -> I { _mm256_and_si256(m, v) }
        keep_not(m: M, v: I) -> I { _mm256_andnot_si256(m, v) }
        bits(x: D) -> I { _mm256_castpd_si256(x) }
        and(a: I, b: I) -> I { _mm256_and_si256(a, b) }
        add_i(a: I, b: I) -> I { _mm256_add_epi64(a, b) }
        sub_i(a: I, b: I) -> I { _mm256_sub_epi64(a, b) }
        shr52(a: I) -> I { _mm256_srli_epi64::<52>(a) }
        shr37(a: I) -> I { _mm256_srli_epi64::<37>(a) }
        shl11(a: I) -> I { _mm256_slli_epi64::<11>(a) }
        shr16_64(a: I) -> I { _mm256_srli_epi64::<16>(a) }
        shr32_64(a: I) -> I { _mm256_srli_epi64::<32>(a) }
        mul_u32(a: I, b: I) -> I { _mm256_mul_epu32(a, b) }
        // `u32` lanes of the even (`e`) and odd (`o`) columns in column order: columns 0-7
        // and 8-15.
        interleave32(e: I, o: I) -> (I, I) {
            let (lo, hi) = (_mm256_unpacklo_epi32(e, o), _mm256_unpackhi_epi32(e, o));
            (_mm256_permute2x128_si256::<0x20>(lo, hi), _mm256_permute2x128_si256::<0x31>(lo, hi))
        }
        // The low / high four `u32` lanes zero-extended to 64 bits.
        widen_lo(a: I) -> I { _mm256_cvtepu32_epi64(_mm256_castsi256_si128(a)) }
        widen_hi(a: I) -> I { _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(a)) }
        // The low 32 bits of each lane as `i32`, converted to `f64`.
        low32_f64(a: I) -> D {
            let low = _mm256_permutevar8x32_epi32(a, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
            _mm256_cvtepi32_pd(_mm256_castsi256_si128(low))
        }
        splat_32(x: i32) -> I { _mm256_set1_epi32(x) }
        xor(a: I, b: I) -> I { _mm256_xor_si256(a, b) }
        mullo16(a: I, b: I) -> I { _mm256_mullo_epi16(a, b) }
        mulhi16(a: I, b: I) -> I { _mm256_mulhi_epu16(a, b) }
        unpacklo16(a: I, b: I) -> I { _mm256_unpacklo_epi16(a, b) }
        unpackhi16(a: I, b: I) -> I { _mm256_unpackhi_epi16(a, b) }
        madd(a: I, b: I) -> I { _mm256_madd_epi16(a, b) }
        add32(a: I, b: I) -> I { _mm256_add_epi32(a, b) }
        shr32(a: I, n: u32) -> I { _mm256_srl_epi32(a, _mm_cvtsi32_si128(n as i32)) }
        shl32(a: I, n: u32) -> I { _mm256_sll_epi32(a, _mm_cvtsi32_si128(n as i32)) }
        // Low 16 bits of each u32 lane, in column order (the in-lane pack undoes the
        // interleave of `unpacklo16` / `unpackhi16`).
        pack16(lo: I, hi: I) -> I {
            let mask = _mm256_set1_epi32(0xffff);
            _mm256_packus_epi32(_mm256_and_si256(lo, mask), _mm256_and_si256(hi, mask))
        }
        // SAFETY: a 256-bit unaligned store into an array of exactly 32 bytes.
        store_i(at: &mut [i64; LANES], v: I) -> () { unsafe { _mm256_storeu_si256(at.as_mut_ptr().cast(), v) } }
    }

    /// Four `f64` from `p`.
    ///
    /// # Safety
    /// `p..p + 4` is readable.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn load(p: *const f64) -> D {
        // SAFETY: the caller's contract.
        unsafe { _mm256_loadu_pd(p) }
    }

    /// `table[i] | table[i + 1] << 16` (the 4 bytes at `table[i]`, little-endian) for each
    /// lane's index `i`, zero-extended.
    ///
    /// # Safety
    /// Every index is in `0..table.len() - 1`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn gather_u16_pair(table: &[u16; 65536], index: I) -> I {
        // SAFETY: the caller's contract: each read of 4 bytes at byte offset 2 * i lies
        // inside the table (the gather reads unaligned words).
        unsafe {
            let words = _mm256_i64gather_epi32::<2>(table.as_ptr().cast(), index);
            _mm256_cvtepu32_epi64(words)
        }
    }

    /// Columns of `u16` per step of the vertical pass.
    const LANES16: usize = 16;
    // `means16` reads one group of columns per 16-bit load.
    const _: () = assert!(LANES16 == GROUP);

    /// # Safety
    /// `p..p + 16` is readable.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn load16(p: *const u16) -> I {
        // SAFETY: the caller's contract.
        unsafe { _mm256_loadu_si256(p.cast()) }
    }

    /// # Safety
    /// `p..p + 16` is writable.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn store16(p: *mut u16, v: I) {
        // SAFETY: the caller's contract.
        unsafe { _mm256_storeu_si256(p.cast(), v) }
    }

    /// Stores 16 `u32` lanes held interleaved (`lo`: columns 0-3 and 8-11, `hi`: 4-7 and
    /// 12-15) in column order.
    ///
    /// # Safety
    /// `p..p + 16` is writable.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn store32(p: *mut u32, lo: I, hi: I) {
        // SAFETY: the caller's contract.
        unsafe {
            _mm256_storeu_si256(p.cast(), _mm256_permute2x128_si256::<0x20>(lo, hi));
            _mm256_storeu_si256(p.add(8).cast(), _mm256_permute2x128_si256::<0x31>(lo, hi));
        }
    }

    /// Four `u32` from `p`, zero-extended to 64-bit lanes.
    ///
    /// # Safety
    /// `p..p + 4` is readable.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn load_u32(p: *const u32) -> I {
        // SAFETY: the caller's contract.
        unsafe { _mm256_cvtepu32_epi64(_mm_loadu_si128(p.cast())) }
    }

    /// Four `i32` from `p`, converted to `f64` (as `low32_f64` converts lanes).
    ///
    /// # Safety
    /// `p..p + 4` is readable.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn load_i32_f64(p: *const i32) -> D {
        // SAFETY: the caller's contract.
        unsafe { _mm256_cvtepi32_pd(_mm_loadu_si128(p.cast())) }
    }

    /// Stores the low 32 bits of each lane of `v` at `p..p + 4`.
    ///
    /// # Safety
    /// `p..p + 4` is writable.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn store_low32(p: *mut u32, v: I) {
        let low = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
        // SAFETY: the caller's contract.
        unsafe { _mm_storeu_si128(p.cast(), _mm256_castsi256_si128(low)) }
    }

    kernel!("avx2,fma");
}

/// The AVX-512 F vector operations (8 lanes).
mod avx512 {
    use super::*;

    type D = __m512d;
    type I = __m512i;
    type M = __mmask8;
    const LANES: usize = 8;
    /// Columns per group of the horizontal pass: one 16-bit load (four steps).
    const GROUP: usize = 4 * LANES;

    macro_rules! ops {
        ($($name:ident($($a:ident: $t:ty),*) -> $r:ty $body:block)*) => {$(
            #[target_feature(enable = "avx512f,avx512bw")]
            #[inline]
            fn $name($($a: $t),*) -> $r $body
        )*};
    }
    ops! {
        splat(x: f64) -> D { _mm512_set1_pd(x) }
        splat_i(x: i64) -> I { _mm512_set1_epi64(x) }
        add(a: D, b: D) -> D { _mm512_add_pd(a, b) }
        sub(a: D, b: D) -> D { _mm512_sub_pd(a, b) }
        mul(a: D, b: D) -> D { _mm512_mul_pd(a, b) }
        div(a: D, b: D) -> D { _mm512_div_pd(a, b) }
        fmadd(a: D, b: D, c: D) -> D { _mm512_fmadd_pd(a, b, c) }
        trunc(x: D) -> D { _mm512_roundscale_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x) }
        // VMAXPD / VMINPD return the second operand for NaN, as the AVX2 forms.
        max(a: D, b: D) -> D { _mm512_max_pd(a, b) }
        min(a: D, b: D) -> D { _mm512_min_pd(a, b) }
        ge(a: D, b: D) -> M { _mm512_cmp_pd_mask::<_CMP_GE_OQ>(a, b) }
        gt(a: D, b: D) -> M { _mm512_cmp_pd_mask::<_CMP_GT_OQ>(a, b) }
        and_m(a: M, b: M) -> M { a & b }
        keep(m: M, v: I) -> I { _mm512_maskz_mov_epi64(m, v) }
        keep_not(m: M, v: I) -> I { _mm512_maskz_mov_epi64(!m, v) }
        bits(x: D) -> I { _mm512_castpd_si512(x) }
        and(a: I, b: I) -> I { _mm512_and_si512(a, b) }
        add_i(a: I, b: I) -> I { _mm512_add_epi64(a, b) }
        sub_i(a: I, b: I) -> I { _mm512_sub_epi64(a, b) }
        shr52(a: I) -> I { _mm512_srli_epi64::<52>(a) }
        shr37(a: I) -> I { _mm512_srli_epi64::<37>(a) }
        shl11(a: I) -> I { _mm512_slli_epi64::<11>(a) }
        shr16_64(a: I) -> I { _mm512_srli_epi64::<16>(a) }
        shr32_64(a: I) -> I { _mm512_srli_epi64::<32>(a) }
        mul_u32(a: I, b: I) -> I { _mm512_mul_epu32(a, b) }
        // `u32` lanes of the even (`e`) and odd (`o`) columns in column order: columns 0-15
        // and 16-31. Each 128-bit block k of the unpacks holds columns 8k..8k+3 (`lo`) and
        // 8k+4..8k+7 (`hi`); the 64-bit permutes put the blocks in order.
        interleave32(e: I, o: I) -> (I, I) {
            let (lo, hi) = (_mm512_unpacklo_epi32(e, o), _mm512_unpackhi_epi32(e, o));
            let first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
            let second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
            (_mm512_permutex2var_epi64(lo, first, hi), _mm512_permutex2var_epi64(lo, second, hi))
        }
        // The low / high eight `u32` lanes zero-extended to 64 bits.
        widen_lo(a: I) -> I { _mm512_cvtepu32_epi64(_mm512_castsi512_si256(a)) }
        widen_hi(a: I) -> I { _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(a)) }
        // The low 32 bits of each lane as `i32`, converted to `f64`.
        low32_f64(a: I) -> D { _mm512_cvtepi32_pd(_mm512_cvtepi64_epi32(a)) }
        splat_32(x: i32) -> I { _mm512_set1_epi32(x) }
        xor(a: I, b: I) -> I { _mm512_xor_si512(a, b) }
        mullo16(a: I, b: I) -> I { _mm512_mullo_epi16(a, b) }
        mulhi16(a: I, b: I) -> I { _mm512_mulhi_epu16(a, b) }
        unpacklo16(a: I, b: I) -> I { _mm512_unpacklo_epi16(a, b) }
        unpackhi16(a: I, b: I) -> I { _mm512_unpackhi_epi16(a, b) }
        madd(a: I, b: I) -> I { _mm512_madd_epi16(a, b) }
        add32(a: I, b: I) -> I { _mm512_add_epi32(a, b) }
        shr32(a: I, n: u32) -> I { _mm512_srl_epi32(a, _mm_cvtsi32_si128(n as i32)) }
        shl32(a: I, n: u32) -> I { _mm512_sll_epi32(a, _mm_cvtsi32_si128(n as i32)) }
        // Low 16 bits of each u32 lane, in column order (the in-lane pack undoes the
        // interleave of `unpacklo16` / `unpackhi16`).
        pack16(lo: I, hi: I) -> I {
            let mask = _mm512_set1_epi32(0xffff);
            _mm512_packus_epi32(_mm512_and_si512(lo, mask), _mm512_and_si512(hi, mask))
        }
        // SAFETY: a 512-bit unaligned store into an array of exactly 64 bytes.
        store_i(at: &mut [i64; LANES], v: I) -> () { unsafe { _mm512_storeu_si512(at.as_mut_ptr().cast(), v) } }
    }

    /// Eight `f64` from `p`.
    ///
    /// # Safety
    /// `p..p + 8` is readable.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    unsafe fn load(p: *const f64) -> D {
        // SAFETY: the caller's contract.
        unsafe { _mm512_loadu_pd(p) }
    }

    /// `table[i] | table[i + 1] << 16` (the 4 bytes at `table[i]`, little-endian) for each
    /// lane's index `i`, zero-extended.
    ///
    /// # Safety
    /// Every index is in `0..table.len() - 1`.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    unsafe fn gather_u16_pair(table: &[u16; 65536], index: I) -> I {
        // SAFETY: the caller's contract: each read of 4 bytes at byte offset 2 * i lies
        // inside the table (the gather reads unaligned words).
        unsafe {
            let words = _mm512_i64gather_epi32::<2>(index, table.as_ptr().cast());
            _mm512_cvtepu32_epi64(words)
        }
    }

    /// Columns of `u16` per step of the vertical pass.
    const LANES16: usize = 32;
    // `means16` reads one group of columns per 16-bit load.
    const _: () = assert!(LANES16 == GROUP);

    /// # Safety
    /// `p..p + 32` is readable.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    unsafe fn load16(p: *const u16) -> I {
        // SAFETY: the caller's contract.
        unsafe { _mm512_loadu_si512(p.cast()) }
    }

    /// # Safety
    /// `p..p + 32` is writable.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    unsafe fn store16(p: *mut u16, v: I) {
        // SAFETY: the caller's contract.
        unsafe { _mm512_storeu_si512(p.cast(), v) }
    }

    /// Stores 32 `u32` lanes held interleaved (`lo`: columns 0-3, 8-11, 16-19, 24-27 of
    /// the four 128-bit lanes, `hi`: 4-7, 12-15, ...) in column order.
    ///
    /// # Safety
    /// `p..p + 32` is writable.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    unsafe fn store32(p: *mut u32, lo: I, hi: I) {
        let first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
        let second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
        // SAFETY: the caller's contract.
        unsafe {
            _mm512_storeu_si512(p.cast(), _mm512_permutex2var_epi64(lo, first, hi));
            _mm512_storeu_si512(p.add(16).cast(), _mm512_permutex2var_epi64(lo, second, hi));
        }
    }

    /// Eight `u32` from `p`, zero-extended to 64-bit lanes.
    ///
    /// # Safety
    /// `p..p + 8` is readable.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    unsafe fn load_u32(p: *const u32) -> I {
        // SAFETY: the caller's contract.
        unsafe { _mm512_cvtepu32_epi64(_mm256_loadu_si256(p.cast())) }
    }

    /// Eight `i32` from `p`, converted to `f64` (as `low32_f64` converts lanes).
    ///
    /// # Safety
    /// `p..p + 8` is readable.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    unsafe fn load_i32_f64(p: *const i32) -> D {
        // SAFETY: the caller's contract.
        unsafe { _mm512_cvtepi32_pd(_mm256_loadu_si256(p.cast())) }
    }

    /// Stores the low 32 bits of each lane of `v` at `p..p + 8`.
    ///
    /// # Safety
    /// `p..p + 8` is writable.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    unsafe fn store_low32(p: *mut u32, v: I) {
        // SAFETY: the caller's contract.
        unsafe { _mm256_storeu_si256(p.cast(), _mm512_cvtepi64_epi32(v)) }
    }

    kernel!("avx512f,avx512bw");
}
