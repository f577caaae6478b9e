//! Pads, caps and negotiation: what each sink pad carries ([`PadVideo`]), what the two pads
//! together allow ([`FrameFormat`]: chroma, colour), the size checks at caps time, and the
//! layout of the formats' samples and components.

use crate::engine::scale::range::{ColourRange, StreamRange};
use crate::engine::{FeatureSet, YuvToRgb};

/// Raw formats both sink pads accept: 4:2:0, 4:2:2, 4:4:4, planar and semi-planar, 8 to 12 bits.
pub(super) const FORMATS: &[gst_video::VideoFormat] = &[
    gst_video::VideoFormat::I420,
    gst_video::VideoFormat::Yv12,
    gst_video::VideoFormat::Nv12,
    gst_video::VideoFormat::Nv21,
    gst_video::VideoFormat::Y42b,
    gst_video::VideoFormat::Y444,
    gst_video::VideoFormat::Nv16,
    gst_video::VideoFormat::Nv24,
    gst_video::VideoFormat::Gray8,
    gst_video::VideoFormat::I42010le,
    gst_video::VideoFormat::I42210le,
    gst_video::VideoFormat::Y44410le,
    gst_video::VideoFormat::P01010le,
    gst_video::VideoFormat::I42012le,
    gst_video::VideoFormat::I42212le,
    gst_video::VideoFormat::Y44412le,
    gst_video::VideoFormat::P012Le,
];

/// Largest width and height accepted (16K video is 15360x8640): bounds the memory the
/// extractors allocate for one geometry, so absurd caps are refused instead of exhausting it.
pub(super) const MAX_DIMENSION: u32 = 16384;

/// Geometry of a pad's negotiated video: luma size, bit depth, where luma samples lie, and its
/// colour range as FFmpeg's negotiation would see it.
#[derive(Debug, Clone)]
pub(super) struct PadVideo {
    pub(super) info: gst_video::VideoInfo,
    pub(super) depth: u32,
    /// The caps' range; whether FFmpeg decodes it as `yuvj` ([`range::stream_range`], set at
    /// caps time from the pad's upstream).
    pub(super) range: StreamRange,
}

impl PadVideo {
    pub(super) fn from_caps(caps: &gst::CapsRef) -> Result<Self, String> {
        let info = gst_video::VideoInfo::from_caps(caps)
            .map_err(|e| format!("caps {caps} are not raw video: {e}"))?;
        if !FORMATS.contains(&info.format()) {
            return Err(format!(
                "format {} is not supported",
                info.format().to_str()
            ));
        }
        let depth = info.format_info().depth()[0];
        let range = StreamRange {
            range: caps_range(caps, &info),
            ..StreamRange::default()
        };
        Ok(Self { info, depth, range })
    }

    pub(super) fn size(&self) -> (u32, u32) {
        (self.info.width(), self.info.height())
    }
}

/// A stream's range as the caps' colorimetry gives it: full for `GST_VIDEO_COLOR_RANGE_0_255`,
/// limited otherwise (an unknown range is scored as limited, as FFmpeg scores `unknown`).
///
/// The `colorimetry` string is read as such first: decoders state only the range when the
/// stream's VUI gives no matrix (`1:0:0:0` from an x264 `-color_range pc` file, as
/// `avdec_h264` and `nvh264dec` put it), and `VideoInfo::from_caps` then replaces the whole
/// colorimetry with its default, BT.601 limited range (GStreamer 1.22 video-info.c), which
/// would score a full-range stream as limited.
pub(super) fn caps_range(caps: &gst::CapsRef, info: &gst_video::VideoInfo) -> ColourRange {
    let stated = caps
        .structure(0)
        .and_then(|s| s.get::<&str>("colorimetry").ok())
        .and_then(|c| c.parse::<gst_video::VideoColorimetry>().ok())
        .map(|c| c.range());
    match stated.unwrap_or_else(|| info.colorimetry().range()) {
        gst_video::VideoColorRange::Range0_255 => ColourRange::Full,
        _ => ColourRange::Limited,
    }
}

/// Bytes of one sample of an advertised format: 1 up to 8 bits, else a 2-byte word.
pub(super) fn sample_bytes(finfo: &gst_video::VideoFormatInfo) -> usize {
    if finfo.bits() > 8 {
        2
    } else {
        1
    }
}

/// Byte offset of component `c`'s first sample within a pixel of its plane.
///
/// Not `finfo.poffset()[c]`: GStreamer's format table states it in bytes for 8-bit formats
/// (NV12's Cr: 1) but GStreamer 1.22 gives P010_10LE's and P012_LE's Cr a `poffset` of 1 too,
/// although their samples are 2 bytes wide (later versions say 2). Read as bytes, that 1 makes
/// Cr's samples straddle the Cb and Cr words, off by tens of dB. What every version of the
/// table gets right is the *order* of the components in an interleaved plane (NV21 puts Cr
/// first), and every sample of an advertised format is `bytes` wide with no gaps (2-byte words
/// for more than 8 bits), so the component's offset is its rank among the plane's components
/// in `poffset` order times the sample width. For planar formats the rank is 0.
pub(super) fn component_offset(finfo: &gst_video::VideoFormatInfo, c: usize) -> usize {
    let plane = finfo.plane()[c];
    let key = |k: usize| (finfo.poffset()[k], k);
    let rank = (0..finfo.n_components() as usize)
        .filter(|&k| k != c && finfo.plane()[k] == plane && key(k) < key(c))
        .count();
    rank * sample_bytes(finfo)
}

/// What the backends need to know of the frames' format besides the luma geometry.
#[derive(Debug, Clone)]
pub(super) struct FrameFormat {
    /// Chroma plane size at the scoring size when both pads' formats have chroma of one
    /// subsampling.
    pub(super) chroma: Option<(usize, usize)>,
    /// Each pad's format name and chroma size (`None`: no chroma).
    pub(super) pads: [(String, Option<(usize, usize)>); 2],
    /// Each pad's chroma subsampling shifts (horizontal, vertical); `None`: no chroma.
    pub(super) subsampling: [Option<(u32, u32)>; 2],
    /// SSIMULACRA2's YUV -> RGB conversion, from the reference pad's colorimetry.
    pub(super) colour: YuvToRgb,
}

/// A format's chroma subsampling shifts (horizontal, vertical), `None` without chroma.
fn subsampling(v: &PadVideo) -> Option<(u32, u32)> {
    let f = v.info.format_info();
    (f.n_components() >= 3).then(|| (f.w_sub()[1], f.h_sub()[1]))
}

/// The chroma plane size of a `(w, h)` luma plane subsampled by `(hs, vs)` (rounded up).
pub(super) fn chroma_size((w, h): (usize, usize), (hs, vs): (u32, u32)) -> (usize, usize) {
    (w.div_ceil(1 << hs), h.div_ceil(1 << vs))
}

impl FrameFormat {
    /// The format of `reference` and `distorted` frames scored at `scoring` size.
    pub(super) fn of(reference: &PadVideo, distorted: &PadVideo, scoring: (usize, usize)) -> Self {
        let chroma_of = |v: &PadVideo| {
            let (w, h) = v.size();
            subsampling(v).map(|sub| chroma_size((w as usize, h as usize), sub))
        };
        let (rs, ds) = (subsampling(reference), subsampling(distorted));
        let name = |v: &PadVideo| v.info.format().to_str().to_string();
        Self {
            chroma: rs.filter(|_| rs == ds).map(|sub| chroma_size(scoring, sub)),
            pads: [
                (name(reference), chroma_of(reference)),
                (name(distorted), chroma_of(distorted)),
            ],
            subsampling: [rs, ds],
            colour: yuv_to_rgb(&reference.info),
        }
    }

    /// Why the metrics of `features` that read chroma cannot compare these pads' frames:
    /// chroma of different sizes (`psnr_cb`/`psnr_cr`, SSIMULACRA2), or colour against grey
    /// (SSIMULACRA2; PSNR then reports `psnr_y` only).
    pub(super) fn chroma_mismatch(&self, features: &FeatureSet) -> Option<String> {
        let [(rf, rc), (df, dc)] = &self.pads;
        let show = |c: &Option<(usize, usize)>| {
            c.map_or("no chroma".to_owned(), |(w, h)| format!("chroma {w}x{h}"))
        };
        let which = || {
            format!(
                "reference is {rf} ({}), distorted is {df} ({})",
                show(rc),
                show(dc)
            )
        };
        let [rsub, dsub] = self.subsampling;
        match (rc, dc) {
            (Some(_), Some(_)) if rsub != dsub && features.reads_chroma() => Some(format!(
                "{} compare chroma planes of one size, but the pads differ in chroma \
                 subsampling: {}",
                features
                    .iter()
                    .filter(|f| f.reads_chroma())
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(" and "),
                which()
            )),
            // PSNR then reports psnr_y only; a colour metric cannot score grey against colour.
            (Some(_), None) | (None, Some(_)) if features.contains("ssimulacra2") => Some(format!(
                "ssimulacra2 compares colour with colour or grey with grey: {}",
                which()
            )),
            _ => None,
        }
    }
}

/// SSIMULACRA2's YUV -> RGB conversion for frames of `info`'s colorimetry (see
/// [`crate::engine::colour`]): its matrix and range, sRGB transfer for `srgb` and BT.709's
/// otherwise; BT.709 limited range where the caps leave them unknown.
pub(super) fn yuv_to_rgb(info: &gst_video::VideoInfo) -> YuvToRgb {
    use crate::engine::colour::{Matrix, Transfer};
    use gst_video::{VideoColorMatrix as M, VideoColorRange as R, VideoTransferFunction as T};
    let c = info.colorimetry();
    let (matrix, known_matrix) = match c.matrix() {
        M::Bt601 => (Matrix::Bt601, true),
        M::Bt709 => (Matrix::Bt709, true),
        M::Bt2020 => (Matrix::Bt2020, true),
        M::Fcc => (Matrix::Fcc, true),
        M::Smpte240m => (Matrix::Smpte240m, true),
        _ => (Matrix::Bt709, false),
    };
    let (full_range, known_range) = match c.range() {
        R::Range0_255 => (true, true),
        R::Range16_235 => (false, true),
        _ => (false, false),
    };
    YuvToRgb {
        matrix,
        full_range,
        transfer: if c.transfer() == T::Srgb {
            Transfer::Srgb
        } else {
            Transfer::Bt709
        },
        defaulted: !(known_matrix && known_range),
    }
}
