//! libvmaf's integer PSNR (`psnr_y`, `psnr_cb`, `psnr_cr`) with its default options
//! (chroma on, no MSE, no APSNR, full high-bit-depth peak, no `min_sse`).
//!
//! Source of the arithmetic: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_psnr.c.

use crate::engine::frame::LumaPlane;

/// PSNR cap in dB at `bpc` bits: libvmaf's `psnr_max = 6 * bpc + 12` (60 dB at 8 bits,
/// 72 dB at 10 bits).
pub fn psnr_max(bpc: u32) -> f64 {
    f64::from(6 * bpc + 12)
}

/// Peak sample value at `bpc` bits: 255 at 8 bits (libvmaf's 8-bit path hard-codes it),
/// `(1 << bpc) - 1` above.
pub fn peak(bpc: u32) -> f64 {
    f64::from((1u32 << bpc.clamp(8, 16)) - 1)
}

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

/// The part of a chroma plane that libvmaf's PSNR reads: for a `luma` (width, height) frame
/// whose chroma planes are `chroma` (width, height), each subsampled dimension is the luma's
/// halved and rounded *down* (libvmaf sizes its chroma planes `w >> ss_hor`, `h >> ss_ver`),
/// where GStreamer's planes round up. They differ only for odd sizes: 575x323 4:2:0 has
/// 288x162 chroma samples and libvmaf's `psnr_cb` / `psnr_cr` read the top-left 287x161.
/// Dimensions that are not subsampled are kept. Source: Netflix/vmaf v3.2.0,
/// libvmaf/src/picture.c (vmaf_picture_alloc) and libvmaf/src/feature/integer_psnr.c.
pub fn libvmaf_chroma_size(luma: (usize, usize), chroma: (usize, usize)) -> (usize, usize) {
    let side = |l: usize, c: usize| if c < l { (l >> 1).min(c) } else { c };
    (side(luma.0, chroma.0), side(luma.1, chroma.1))
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

/// PSNR in dB from a plane's sum of squared errors ([`sse`]) over `pixels` samples
/// (`width * height` of the plane; 0 counts as 1) at `bpc` bits:
/// `min(10 * log10(peak^2 / max(sse / pixels, 1e-16)), 6 * bpc + 12)`, in
/// `[0, 6 * bpc + 12]`. [`psnr`] and the GPU path (`crate::cuda::psnr`) share it, so equal
/// sums give bit-identical scores.
pub fn psnr_from_sse(sse: u64, pixels: usize, bpc: u32) -> f64 {
    let n = pixels.max(1) as f64;
    let mse = sse as f64 / n;
    let p = peak(bpc);
    (10.0 * (p * p / mse.max(1e-16)).log10()).min(psnr_max(bpc))
}
