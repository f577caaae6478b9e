//! libvmaf's integer PSNR (`psnr_y`, `psnr_cb`, `psnr_cr`) with its default options
//! (chroma on, no MSE, no APSNR, full high-bit-depth peak, no `min_sse`).
//!
//! Source of the arithmetic: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_psnr.c.

use super::params::{libvmaf_chroma_size, psnr_from_sse};
use crate::video::frame::LumaPlane;

/// Sum of squared differences of two planes of the same size, accumulated as libvmaf does:
/// at 8 bits a row's sum in a wrapping 32-bit word (it cannot wrap below 66052 samples a row)
/// added to a 64-bit total; above 8 bits every square added to the 64-bit total.
///
/// `reference`, `distorted`: planes of equal `width` x `height`; only the first `width`
/// samples of each of the first `height` rows are read.
pub fn sse(reference: &LumaPlane, distorted: &LumaPlane) -> u64 {
    let (w, h) = (
        reference.width.min(distorted.width),
        reference.height.min(distorted.height),
    );
    let mut total = 0u64;
    for y in 0..h {
        let (r, d) = (&reference.row(y)[..w], &distorted.row(y)[..w]);
        if reference.bpc <= 8 {
            let mut row = 0u32;
            for (&a, &b) in r.iter().zip(d) {
                let e = i32::from(a) - i32::from(b);
                row = row.wrapping_add((e * e) as u32);
            }
            total = total.wrapping_add(u64::from(row));
        } else {
            for (&a, &b) in r.iter().zip(d) {
                let e = u64::from(a.abs_diff(b));
                total = total.wrapping_add(e * e);
            }
        }
    }
    total
}

/// PSNR in dB of one plane pair at `bpc` bits (the planes' own `bpc`):
/// `min(10 * log10(peak^2 / max(mse, 1e-16)), 6 * bpc + 12)` with `mse = sse / (w * h)`.
/// Returns a value in `[0, 6 * bpc + 12]`; planes of different sizes are compared over their
/// common part (callers check sizes first).
pub fn psnr(reference: &LumaPlane, distorted: &LumaPlane) -> f64 {
    psnr_from_sse(
        sse(reference, distorted),
        reference.width * reference.height,
        reference.bpc,
    )
}

/// PSNR in dB of one chroma plane pair of a frame whose luma is `luma` (width, height), as
/// libvmaf's `psnr_cb` / `psnr_cr`: over [`libvmaf_chroma_size`] of the planes (their
/// top-left part; all of them unless a subsampled dimension is odd). Range as [`psnr`].
pub fn chroma_psnr(luma: (usize, usize), reference: &LumaPlane, distorted: &LumaPlane) -> f64 {
    let (width, height) = libvmaf_chroma_size(luma, (reference.width, reference.height));
    let (r, d) = (
        LumaPlane {
            width: width.min(reference.width),
            height: height.min(reference.height),
            ..*reference
        },
        LumaPlane {
            width: width.min(distorted.width),
            height: height.min(distorted.height),
            ..*distorted
        },
    );
    psnr(&r, &d)
}
