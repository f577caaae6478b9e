//! The fixed-point constants and small helpers of the integer ADM's CPU stages, shared by the
//! extractor (`mod.rs`) and its DWT (`dwt.rs`) and band (`bands.rs`) stages.

/// Daubechies-2 analysis filters in Q15 (`dwt2_db2_coeffs_lo/hi`).
pub(super) const FILTER_LO: [i32; 4] = [15826, 27411, 7345, -4240];

pub(super) const FILTER_HI: [i32; 4] = [-4240, -7345, 27411, -15826];

/// Sum of `FILTER_LO` (the high-pass filter sums to 0).
pub(super) const FILTER_LO_SUM: i32 = 46342;

/// 1/15 in Q12 (scale 0) and Q32 (scales 1..3).
pub(super) const ONE_BY_15: i32 = 8738;

pub(super) const I4_ONE_BY_15: i64 = 286_331_153;

/// 1/30 in Q17 (scale 0) and Q32 (scales 1..3).
pub(super) const FIX_ONE_BY_30: i32 = 4369;

pub(super) const I4_FIX_ONE_BY_30: i64 = 143_165_577;

/// libvmaf stores `1u << 31` in an `int32_t` as the rounding term of the Q32 products, so it
/// actually subtracts 2^31 before the shift.
pub(super) const I4_FLT_ROUND: i64 = i32::MIN as i64;

#[inline(always)]
pub(super) fn wrap16(x: i32) -> i32 {
    x as i16 as i32
}

/// Source index for a DWT tap at position `k` (`-1..=n+1`) of a line of `n` samples.
#[inline]
pub(super) fn dwt_mirror(k: isize, n: usize) -> usize {
    if k < 0 {
        k.unsigned_abs()
    } else if k as usize >= n {
        (2 * n).saturating_sub(k as usize + 1)
    } else {
        k as usize
    }
}

/// `(uint32_t)pow(2, shift - 1)` for the shifts libvmaf uses (0 for a zero shift).
#[inline]
pub(super) fn round_add(shift: u32) -> u64 {
    if shift == 0 {
        0
    } else {
        1u64 << (shift - 1).min(63)
    }
}

/// Rows of decoupling, CSF and CM at a time: at 4K's scale 0 (1920-wide bands) a strip of
/// decoupled bands and CSF output is 3 bands x 4 arrays x 16 rows of `i32`, 1.5 MB, mostly
/// within L2 until the next stage reads it.
pub(super) const CM_STRIP: usize = 16;
