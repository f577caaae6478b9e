//! Benchmark content shared by the examples: Netflix's src01 frames from
//! ../shared/vmaf-reference, scaled up for larger sizes.
#![allow(dead_code)]

use std::path::Path;

/// Luma planes of several frames, each `width * height` samples.
pub type Planes = Vec<Vec<u16>>;

/// The two chroma planes (Cb, Cr) of several 4:2:0 frames, each `ceil(w/2) * ceil(h/2)`.
pub type ChromaPlanes = Vec<[Vec<u16>; 2]>;

/// Luma planes of `n` frames of a raw 4:2:0 file at `bpc` bits. Panics when the file cannot
/// be read or is too short (see [`try_read_luma`]).
pub fn read_luma(path: &Path, w: usize, h: usize, bpc: u32, n: usize) -> Planes {
    try_read_luma(path, w, h, bpc, n).unwrap_or_else(|e| panic!("{e}"))
}

/// Luma planes of `n` frames of a raw 4:2:0 file at `bpc` bits.
///
/// Errors: a text naming the file when it cannot be read or holds fewer than `n` frames.
pub fn try_read_luma(
    path: &Path,
    w: usize,
    h: usize,
    bpc: u32,
    n: usize,
) -> Result<Planes, String> {
    let frames = read_frames(path, w, h, bpc, n)?;
    Ok(frames.into_iter().map(|[y, _, _]| y).collect())
}

/// Chroma planes (Cb, Cr) of `n` frames of a raw 4:2:0 file at `bpc` bits.
///
/// Errors: as [`try_read_luma`].
pub fn try_read_chroma(
    path: &Path,
    w: usize,
    h: usize,
    bpc: u32,
    n: usize,
) -> Result<ChromaPlanes, String> {
    let frames = read_frames(path, w, h, bpc, n)?;
    Ok(frames.into_iter().map(|[_, u, v]| [u, v]).collect())
}

/// The Y, Cb and Cr planes of `n` frames of a raw 4:2:0 file (little-endian 16-bit samples
/// above 8 bits).
fn read_frames(
    path: &Path,
    w: usize,
    h: usize,
    bpc: u32,
    n: usize,
) -> Result<Vec<[Vec<u16>; 3]>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bps = if bpc > 8 { 2 } else { 1 };
    let (luma, chroma) = (w * h * bps, w.div_ceil(2) * h.div_ceil(2) * bps);
    let frame = luma + 2 * chroma;
    if bytes.len() < n * frame {
        return Err(format!(
            "{}: {} bytes, {n} frames of {w}x{h} at {bpc} bits need {}",
            path.display(),
            bytes.len(),
            n * frame
        ));
    }
    let samples = |b: &[u8]| -> Vec<u16> {
        if bps == 1 {
            b.iter().map(|&v| u16::from(v)).collect()
        } else {
            b.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        }
    };
    Ok(bytes
        .chunks_exact(frame)
        .take(n)
        .map(|f| {
            let (y, uv) = f.split_at(luma);
            let (u, v) = uv.split_at(chroma);
            [samples(y), samples(u), samples(v)]
        })
        .collect())
}

/// Bilinear upscale of a plane (content for the 1080p rows).
pub fn upscale(src: &[u16], sw: usize, sh: usize, dw: usize, dh: usize) -> Vec<u16> {
    let mut out = vec![0u16; dw * dh];
    for y in 0..dh {
        let fy = (y as f64 + 0.5) * sh as f64 / dh as f64 - 0.5;
        let y0 = fy.floor().clamp(0.0, (sh - 1) as f64) as usize;
        let y1 = (y0 + 1).min(sh - 1);
        let ty = (fy - y0 as f64).clamp(0.0, 1.0);
        for x in 0..dw {
            let fx = (x as f64 + 0.5) * sw as f64 / dw as f64 - 0.5;
            let x0 = fx.floor().clamp(0.0, (sw - 1) as f64) as usize;
            let x1 = (x0 + 1).min(sw - 1);
            let tx = (fx - x0 as f64).clamp(0.0, 1.0);
            let p = |yy: usize, xx: usize| f64::from(src[yy * sw + xx]);
            let v = (1.0 - ty) * ((1.0 - tx) * p(y0, x0) + tx * p(y0, x1))
                + ty * ((1.0 - tx) * p(y1, x0) + tx * p(y1, x1));
            out[y * dw + x] = v.round() as u16;
        }
    }
    out
}

/// Three reference and three distorted luma planes of `w` x `h` at `bpc` (8 or 10) bits,
/// from the 576x324 src01 pair in `data`, scaled when the size differs. Panics when the
/// files are missing (see [`try_pair_planes`]).
pub fn pair_planes(data: &std::path::Path, w: usize, h: usize, bpc: u32) -> (Planes, Planes) {
    try_pair_planes(data, w, h, bpc).unwrap_or_else(|e| panic!("{e}"))
}

/// [`pair_planes`]. Errors: a text naming the missing or short file.
pub fn try_pair_planes(
    data: &Path,
    w: usize,
    h: usize,
    bpc: u32,
) -> Result<(Planes, Planes), String> {
    let tag = if bpc > 8 { "420p10" } else { "420p8" };
    let load = |kind: &str| -> Result<Planes, String> {
        let p = data.join(format!("src01_{kind}_576x324_{tag}_3f.yuv"));
        let planes = try_read_luma(&p, 576, 324, bpc, 3)?;
        Ok(if (w, h) == (576, 324) {
            planes
        } else {
            planes.iter().map(|p| upscale(p, 576, 324, w, h)).collect()
        })
    };
    Ok((load("ref")?, load("dis")?))
}

/// The chroma of [`pair_planes`]'s frames: reference and distorted Cb/Cr of a `w` x `h`
/// 4:2:0 frame, scaled from src01's 288x162 planes.
///
/// Errors: a text naming the missing or short file.
pub fn try_pair_chroma(
    data: &Path,
    w: usize,
    h: usize,
    bpc: u32,
) -> Result<(ChromaPlanes, ChromaPlanes), String> {
    let tag = if bpc > 8 { "420p10" } else { "420p8" };
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let load = |kind: &str| -> Result<ChromaPlanes, String> {
        let p = data.join(format!("src01_{kind}_576x324_{tag}_3f.yuv"));
        let planes = try_read_chroma(&p, 576, 324, bpc, 3)?;
        Ok(planes
            .iter()
            .map(|[u, v]| {
                if (cw, ch) == (288, 162) {
                    [u.clone(), v.clone()]
                } else {
                    [upscale(u, 288, 162, cw, ch), upscale(v, 288, 162, cw, ch)]
                }
            })
            .collect())
    };
    Ok((load("ref")?, load("dis")?))
}
