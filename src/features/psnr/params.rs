//! What PSNR's definition and its two halves share: the registry name, the chroma size libvmaf
//! reads and the formula from a sum of squared errors to dB.

/// The registry name.
pub(super) const FEATURE: &str = "psnr";

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

/// PSNR in dB from a plane's sum of squared errors ([`cpu::sse`]) over `pixels` samples
/// (`width * height` of the plane; 0 counts as 1) at `bpc` bits:
/// `min(10 * log10(peak^2 / max(sse / pixels, 1e-16)), 6 * bpc + 12)`, in
/// `[0, 6 * bpc + 12]`. [`cpu::psnr`] and the GPU path ([`cuda::PsnrGpu`]) share it, so equal
/// sums give bit-identical scores.
pub fn psnr_from_sse(sse: u64, pixels: usize, bpc: u32) -> f64 {
    let n = pixels.max(1) as f64;
    let mse = sse as f64 / n;
    let p = peak(bpc);
    (10.0 * (p * p / mse.max(1e-16)).log10()).min(psnr_max(bpc))
}
