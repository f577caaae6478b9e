//! Raw YUV frames for the scaler tests (tests/scale_swscale.rs, tests/range.rs): plane sizes,
//! reading a frame of an ffmpeg `-f rawvideo` file, and scaling its three planes with the
//! CPU scaler.

use gstvmafcompare::engine::scale::cpu::{scale_plane, Scratch};
use gstvmafcompare::engine::scale::StreamScaler;
use gstvmafcompare::video::frame::LumaPlane;

/// Planes of one frame: (width, height) of each of the 3 planes for `sub` (0: 4:4:4, 1: 4:2:0).
pub fn planes((w, h): (usize, usize), sub: u32) -> [(usize, usize); 3] {
    let c = (w.div_ceil(1 << sub), h.div_ceil(1 << sub));
    [(w, h), c, c]
}

/// Frame `frame`'s three planes from raw bytes (`wide`: 16-bit little-endian samples).
pub fn read_frame(
    bytes: &[u8],
    sizes: &[(usize, usize); 3],
    wide: bool,
    frame: usize,
) -> Vec<Vec<u16>> {
    let bps = if wide { 2 } else { 1 };
    let total: usize = sizes.iter().map(|(w, h)| w * h * bps).sum();
    let mut at = frame * total;
    sizes
        .iter()
        .map(|(w, h)| {
            let n = w * h;
            let plane: Vec<u16> = (0..n)
                .map(|i| {
                    if wide {
                        u16::from_le_bytes([bytes[at + 2 * i], bytes[at + 2 * i + 1]])
                    } else {
                        u16::from(bytes[at + i])
                    }
                })
                .collect();
            at += n * bps;
            plane
        })
        .collect()
}

/// Plane `p` (0: luma) of `input` (planes of `sizes`, `bpc` bits) through `scaler`'s luma or
/// chroma scaler, into `out`.
pub fn scale_one_plane(
    scaler: &StreamScaler,
    input: &[Vec<u16>],
    sizes: &[(usize, usize); 3],
    bpc: u32,
    p: usize,
    scratch: &mut Scratch,
    out: &mut Vec<u16>,
) {
    let ps = if p == 0 {
        &scaler.luma
    } else {
        scaler.chroma.as_ref().expect("a chroma scaler")
    };
    let plane = LumaPlane::packed(&input[p], sizes[p].0, sizes[p].1, bpc).expect("plane");
    assert!(
        scale_plane(ps, &plane, scratch, out),
        "the scaler refused plane {p}"
    );
}
