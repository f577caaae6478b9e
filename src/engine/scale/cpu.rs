//! The CPU half of scaling: a plane of packed `u16` samples through a [`PlaneScaler`], with
//! swscale's integer arithmetic (see the parent module), a colour range conversion fused
//! between the two passes. The CUDA half (`kernels/scale.cu`) computes the same values.

use super::{h_shift, v_shift, FilterBank, PlaneScaler};
use crate::video::frame::LumaPlane;

/// The scaler's working memory, kept by its owner so that nothing is allocated per frame
/// once warmed up: the 15-bit intermediate (`dst_w * src_h`) and one row of sums.
#[derive(Debug, Default, Clone)]
pub struct Scratch {
    tmp: Vec<i16>,
    acc: Vec<i32>,
}

/// Scales `src` (right-aligned samples of `src.bpc` bits, the scaler's source size) into
/// `out`, packed `dst_w * dst_h` samples of the same depth, converting their range on the
/// intermediate when the scaler says so ([`PlaneScaler::range`]).
///
/// Returns `false` (and leaves `out` untouched) when the plane's size is not the scaler's
/// source size or `bpc` is outside `8..=14` (swscale's 15-bit intermediate path; the element
/// advertises up to 12 bits).
pub fn scale_plane(
    scaler: &PlaneScaler,
    src: &LumaPlane,
    scratch: &mut Scratch,
    out: &mut Vec<u16>,
) -> bool {
    let (sw, sh) = scaler.src();
    let (dw, dh) = scaler.dst();
    if src.width != sw || src.height != sh || !(8..=14).contains(&src.bpc) {
        return false;
    }
    let bpc = src.bpc;
    let Ok(range) = scaler.range_map(bpc) else {
        return false;
    };
    let Scratch { tmp, acc } = scratch;
    tmp.resize(dw * sh, 0);
    acc.resize(dw, 0);
    out.resize(dw * dh, 0);
    let hs = h_shift(bpc);
    let h = &scaler.h;
    for (y, trow) in tmp.chunks_exact_mut(dw).enumerate() {
        let row = src.row(y);
        match h.taps {
            4 => h_row::<4>(row, h, trow, hs),
            8 => h_row::<8>(row, h, trow, hs),
            _ => h_row_any(row, h, trow, hs),
        }
        if let Some(m) = range {
            trow.iter_mut().for_each(|t| *t = m.apply(*t));
        }
    }
    let vs = v_shift(bpc);
    let round: i32 = 1 << (vs - 1);
    let max: i32 = (1 << bpc) - 1;
    let v = &scaler.v;
    for (y, orow) in out.chunks_exact_mut(dw).enumerate() {
        acc.iter_mut().for_each(|a| *a = round);
        let p = v.pos[y] as usize;
        let n = v.live_taps(y);
        for (j, c) in v.taps_of(y)[..n].iter().enumerate() {
            let c = i32::from(*c);
            let trow = &tmp[(p + j) * dw..(p + j + 1) * dw];
            for (a, t) in acc.iter_mut().zip(trow) {
                *a += i32::from(*t) * c;
            }
        }
        for (o, a) in orow.iter_mut().zip(acc.iter()) {
            *o = (*a >> vs).clamp(0, max) as u16;
        }
    }
    true
}

/// One row of the horizontal pass for filters of `T` taps (the common bicubic sizes: the
/// compiler unrolls the taps); outputs whose taps reach past the row take the general path.
#[inline]
fn h_row<const T: usize>(row: &[u16], h: &FilterBank, out: &mut [i16], hs: u32) {
    for (x, (t, c)) in out.iter_mut().zip(h.coeffs.chunks_exact(T)).enumerate() {
        let p = h.pos[x] as usize;
        let val = match row.get(p..p + T) {
            Some(s) => {
                let mut v = 0i32;
                for k in 0..T {
                    v += i32::from(s[k]) * i32::from(c[k]);
                }
                v
            }
            None => h_sum(row, h, x),
        };
        *t = (val >> hs).min(32767) as i16;
    }
}

/// One row of the horizontal pass for any filter size.
fn h_row_any(row: &[u16], h: &FilterBank, out: &mut [i16], hs: u32) {
    for (x, t) in out.iter_mut().enumerate() {
        *t = (h_sum(row, h, x) >> hs).min(32767) as i16;
    }
}

/// Output `x`'s sum of taps times samples (the taps inside the row; those past it are zero).
#[inline]
fn h_sum(row: &[u16], h: &FilterBank, x: usize) -> i32 {
    let p = h.pos[x] as usize;
    let n = h.live_taps(x);
    row[p..p + n]
        .iter()
        .zip(h.taps_of(x))
        .map(|(s, c)| i32::from(*s) * i32::from(*c))
        .sum()
}
