//! Direct, unoptimised forms of CAMBI's CPU steps, for the tests of [`super::Cambi`]: each
//! pixel's spatial mask and c-value counted from its whole window, and the anti-dithering
//! as libvmaf writes it, sample by sample in place. Same definitions as libvmaf v3.2.0
//! (libvmaf/src/feature/cambi.c): `anti_dithering_filter`, `get_spatial_mask`,
//! `calculate_c_values`.

use super::super::params::{Params, MASK_FILTER};
use super::c_value;
use crate::features::cambi::FIXED_ONE;

/// In-place 2x2 average, row-major order (each sample reads its right and lower neighbours
/// before they change).
pub(super) fn anti_dither(img: &mut [u16], w: usize, h: usize) {
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            let (right, down) = (x + 1 < w, y + 1 < h);
            let v = |j: usize| u32::from(img[j]);
            img[i] = match (right, down) {
                (true, true) => ((v(i) + v(i + 1) + v(i + w) + v(i + w + 1)) >> 2) as u16,
                (false, true) => ((v(i) + v(i + w)) >> 1) as u16,
                (true, false) => ((v(i) + v(i + 1)) >> 1) as u16,
                (false, false) => img[i],
            };
        }
    }
}

/// The spatial mask: each pixel's 7x7 window (clipped to the frame) counted pixel by pixel.
pub(super) fn spatial_mask(img: &[u16], w: usize, h: usize, thr: u32) -> Vec<u8> {
    let flat = |x: usize, y: usize| -> bool {
        let v = img[y * w + x];
        (x + 1 == w || img[y * w + x + 1] == v) && (y + 1 == h || img[(y + 1) * w + x] == v)
    };
    let r = MASK_FILTER / 2;
    let mut mask = vec![0u8; w * h];
    for y in 0..h {
        for x in 0..w {
            let mut n = 0u32;
            for yy in y.saturating_sub(r)..(y + r + 1).min(h) {
                for xx in x.saturating_sub(r)..(x + r + 1).min(w) {
                    n += u32::from(flat(xx, yy));
                }
            }
            mask[y * w + x] = u8::from(n > thr);
        }
    }
    mask
}

/// Each pixel's c-value in units of 2^-24: its window (clipped to the frame) counted pixel
/// by pixel for the values `v + k`.
pub(super) fn c_values(p: &Params, img: &[u16], mask: &[u8], w: usize, h: usize) -> Vec<u64> {
    let pad = p.window / 2;
    let mut out = vec![0u64; w * h];
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            if mask[i] == 0 {
                continue;
            }
            let v = img[i];
            let count = |k: i32| -> u16 {
                let want = i32::from(v) + k;
                let mut n = 0;
                for yy in y.saturating_sub(pad)..(y + pad + 1).min(h) {
                    for xx in x.saturating_sub(pad)..(x + pad + 1).min(w) {
                        let j = yy * w + xx;
                        n += u16::from(mask[j] != 0 && i32::from(img[j]) == want);
                    }
                }
                n
            };
            out[i] = (c_value(p, v, count) * FIXED_ONE) as u64;
        }
    }
    out
}
