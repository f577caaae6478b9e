//! Pads, caps and negotiation: what each sink pad carries ([`PadVideo`]), what the two pads
//! together allow ([`FrameFormat`]: chroma, colour), the size checks at caps time, and the
//! layout of the formats' samples and components.

use super::*;
use crate::engine::scale::range::StreamRange;

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
            range: range::caps_range(caps, &info),
            ..StreamRange::default()
        };
        Ok(Self { info, depth, range })
    }

    pub(super) fn size(&self) -> (u32, u32) {
        (self.info.width(), self.info.height())
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

impl VmafCompare {
    /// Checks `(w, h)` against the smallest frames VMAF's filters and the extra metrics
    /// accept; the error names `what` (a pad, or the scoring size) and what to change.
    pub(super) fn check_min_size(
        &self,
        what: &str,
        (w, h): (u32, u32),
    ) -> Result<(), gst::ErrorMessage> {
        let (vmaf_min, extra_mins) = lock(&self.prepared)
            .as_ref()
            .map(Prepared::minimums)
            .unwrap_or_default();
        if (w as usize) < vmaf_min.0 || (h as usize) < vmaf_min.1 {
            return Err(gst::error_msg!(
                gst::CoreError::Negotiation,
                (
                    "{}: {}x{} is smaller than the {}x{} minimum that VMAF's filters need",
                    what,
                    w,
                    h,
                    vmaf_min.0,
                    vmaf_min.1
                ),
                ["Score at a larger size (score-width / score-height, or a larger reference)."]
            ));
        }
        if let Some((name, (mw, mh))) = extra_mins
            .into_iter()
            .find(|(_, (mw, mh))| (w as usize) < *mw || (h as usize) < *mh)
        {
            return Err(gst::error_msg!(
                gst::CoreError::Negotiation,
                (
                    "{}: {}x{} is smaller than the {}x{} minimum of {}",
                    what,
                    w,
                    h,
                    mw,
                    mh,
                    name
                ),
                [
                    "libvmaf refuses such frames too (MS-SSIM's five scales each halve the frame \
                     and must still hold its 11x11 window). Remove {} from features.",
                    name
                ]
            ));
        }
        Ok(())
    }

    pub(super) fn other_pad(&self, pad: &gst_base::AggregatorPad) -> &'static str {
        if pad == &self.reference_pad {
            "distorted"
        } else {
            "reference"
        }
    }

    /// A caps event on a sink pad: check the format and that both pads agree on the size.
    pub(super) fn handle_caps(&self, pad: &gst_base::AggregatorPad, caps: &gst::CapsRef) -> bool {
        let mut video = match PadVideo::from_caps(caps) {
            Ok(v) => v,
            Err(e) => {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("{} pad: {}", pad.name(), e)
                );
                return false;
            }
        };
        let (stream, codec) = range::stream_range(pad.upcast_ref(), &video);
        gst::debug!(
            CAT,
            imp = self,
            "{} pad: {} range, upstream {}, {}",
            pad.name(),
            stream.range,
            codec.as_deref().unwrap_or("raw video"),
            if stream.yuvj {
                "yuvj to FFmpeg"
            } else {
                "not yuvj to FFmpeg"
            }
        );
        video.range = stream;
        let (w, h) = video.size();
        // A stream that will be scaled may be smaller than the metrics' minimum: the scoring
        // size is checked when the scorer is made (`ensure_scorer`). The reference is the
        // scoring size unless score-width / score-height say otherwise.
        let at_scoring_size = {
            let s = lock(&self.settings);
            s.scale_method == VmafScaleMethod::None
                || (pad == &self.reference_pad && s.score_width == 0 && s.score_height == 0)
        };
        if at_scoring_size {
            if let Err(e) = self.check_min_size(&format!("{} pad", pad.name()), (w, h)) {
                self.post_error_message(e);
                return false;
            }
        }
        if w > MAX_DIMENSION || h > MAX_DIMENSION {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                (
                    "{} pad: {}x{} is larger than the {}x{} maximum",
                    pad.name(),
                    w,
                    h,
                    MAX_DIMENSION,
                    MAX_DIMENSION
                )
            );
            return false;
        }
        // Sizes are compared when frames are paired (`ensure_scorer`), not here: a pad may
        // renegotiate before its first buffer (a source re-sending stale sticky caps on
        // restart), and both pads may switch size mid-stream one after the other.
        gst::debug!(
            CAT,
            imp = self,
            "{} caps {} (other pad: {})",
            pad.name(),
            caps,
            self.other_pad(pad)
        );
        if pad == &self.reference_pad {
            lock(&self.state).reference = Some(video);
            return true;
        }
        match self.rendition_caps(pad, &video) {
            Ok(Some(frame)) => self.monitor_caps(frame),
            Ok(None) => {}
            Err(()) => return true,
        }
        true
    }
}
