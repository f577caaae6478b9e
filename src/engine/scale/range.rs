//! Colour range (limited 16-235 / full 0-255): which stream FFmpeg converts before libvmaf
//! sees the frames ([`negotiate`]), and swscale's arithmetic for the conversion
//! ([`RangeMap`]), applied on the scaler's 15-bit intermediate by both halves of the scaler.
//!
//! Measured on the oracle (the ffmpeg 9.0.2 of pip imageio-ffmpeg, `-loglevel debug`, its
//! `auto_scale_N ... -> ...` lines) with x264, x265, libvpx and libaom files: libvmaf's two
//! inputs share one pixel-format list and one colour-range list, and the `yuvj` formats
//! (8-bit full range as the H.264 and HEVC decoders and MJPEG emit it) are not in it. The
//! graph merges the distorted input (the first) before the reference; an input that cannot
//! merge gets a `scale` (swscale, `flags=bicubic`, same size) converting it to what is left.

use std::fmt;

/// A stream's colour range (GStreamer's `GST_VIDEO_COLOR_RANGE_16_235` / `_0_255`, FFmpeg's
/// `tv` / `pc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ColourRange {
    /// Limited ("tv", MPEG): luma 16-235, chroma 16-240, scaled by `2^(bpc - 8)`.
    #[default]
    Limited,
    /// Full ("pc", JPEG): 0 to `2^bpc - 1`.
    Full,
}

impl ColourRange {
    /// `"limited"` or `"full"`, as the summary and the log write it.
    pub fn name(self) -> &'static str {
        match self {
            ColourRange::Limited => "limited",
            ColourRange::Full => "full",
        }
    }
}

impl fmt::Display for ColourRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What FFmpeg's format negotiation knows of one input of libvmaf: its range, whether its
/// decoder hands it over as a `yuvj` pixel format, and whether a `scale` filter sits in front
/// of libvmaf (the stream is scaled to the scoring size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamRange {
    /// The stream's range (from the caps' colorimetry).
    pub range: ColourRange,
    /// Whether FFmpeg would decode it to `yuvj420p` / `yuvj422p` / `yuvj444p`: 8-bit full
    /// range from the H.264 and HEVC decoders or MJPEG, and raw input (as `-pix_fmt
    /// yuvj420p` gives); VP9 and AV1 (libdav1d) emit `yuv420p` with range `pc` instead
    /// (FFmpeg 9.0.2, checked).
    pub yuvj: bool,
    /// Whether the stream is scaled (`scale=W:H:flags=bicubic` in front of libvmaf).
    pub scaled: bool,
}

impl StreamRange {
    /// Whether the stream leaves the range to the other input: a `yuvj` stream cannot merge
    /// with libvmaf's formats and a scaled stream's `scale` filter can output any, so either
    /// takes what the other input fixes.
    fn flexible(&self) -> bool {
        self.yuvj || self.scaled
    }
}

/// A conversion of one stream from one range to the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RangeConversion {
    /// The stream's range.
    pub from: ColourRange,
    /// The range it is scored in.
    pub to: ColourRange,
}

impl RangeConversion {
    /// `Some` when `from` and `to` differ.
    pub fn between(from: ColourRange, to: ColourRange) -> Option<Self> {
        (from != to).then_some(Self { from, to })
    }
}

impl fmt::Display for RangeConversion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}->{}", self.from, self.to)
    }
}

/// Which stream FFmpeg converts, and why: the outcome of [`negotiate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RangeDecision {
    /// The range both streams are scored in.
    pub target: ColourRange,
    /// The reference's conversion (`None`: scored as it is).
    pub reference: Option<RangeConversion>,
    /// The distorted stream's conversion.
    pub distorted: Option<RangeConversion>,
    /// FFmpeg's reason, short (empty without a conversion).
    pub why: &'static str,
}

impl RangeDecision {
    /// The summary's `range-conversion`: `none`, or e.g. `distorted full->limited (FFmpeg
    /// converts yuvj to libvmaf's formats in the reference's range)`.
    pub fn describe(&self) -> String {
        match (self.reference, self.distorted) {
            (None, None) => "none".to_owned(),
            (Some(r), None) => format!("reference {r} ({})", self.why),
            (None, Some(d)) => format!("distorted {d} ({})", self.why),
            (Some(r), Some(d)) => format!("reference {r}, distorted {d} ({})", self.why),
        }
    }
}

/// The ranges FFmpeg + libvmaf score a pair in, given what its negotiation sees of the
/// distorted stream and the reference (measured on ffmpeg 9.0.2, see the module docs):
/// - the distorted stream neither `yuvj` nor scaled: it merges first, so the target is its
///   range, and a reference of the other range is converted (8-bit `yuv420p` tv against
///   `yuvj420p` pc: the reference to tv; 10-bit pc against 10-bit tv: the reference
///   tv->pc; 10-bit tv against pc: the reference pc->tv);
/// - the distorted stream `yuvj` or scaled, the reference neither: the distorted stream is
///   converted to the reference's range (`yuvj420p` pc against `yuv420p` tv: to tv; against
///   10-bit tv: to `yuv420p10le` tv in one pass; 10-bit pc scaled by
///   `scale=W:H:flags=bicubic` against 10-bit tv: the `scale` outputs tv, and tv against pc:
///   pc);
/// - both `yuvj` or scaled: the distorted stream's range (both `yuvj420p` pc: `yuv420p` pc,
///   samples unchanged; a scaled tv stream against `yuvj420p` pc: the reference to tv).
pub fn negotiate(distorted: StreamRange, reference: StreamRange) -> RangeDecision {
    let (target, why) = if distorted.flexible() && !reference.flexible() {
        let why = if distorted.yuvj {
            "FFmpeg converts yuvj, 8-bit full range, to libvmaf's formats in the reference's range"
        } else {
            "FFmpeg's scale filter outputs the reference's range for libvmaf"
        };
        (reference.range, why)
    } else {
        (
            distorted.range,
            "FFmpeg converts the reference to the distorted stream's range for libvmaf",
        )
    };
    let reference = RangeConversion::between(reference.range, target);
    let distorted = RangeConversion::between(distorted.range, target);
    RangeDecision {
        target,
        reference,
        distorted,
        why: if reference.is_some() || distorted.is_some() {
            why
        } else {
            ""
        },
    }
}

/// One plane's range conversion at one depth, as swscale applies it to each horizontally
/// filtered row of the 15-bit intermediate (before the vertical pass):
/// `v' = (v * coeff + offset) >> 14`, and, towards full range, `min(v', 32767)`.
///
/// Constants as FFmpeg 9.0.2 derives them (libswscale/swscale.c `solve_range_convert`,
/// `init_range_convert_constants`; applied by `lumRangeToJpeg_c`, `lumRangeFromJpeg_c`,
/// `chrRangeToJpeg_c`, `chrRangeFromJpeg_c` from libswscale/hscale.c) for an output of `bpc`
/// bits (8 to 14), with the intermediate holding samples scaled by `2^(15 - bpc)`:
/// `coeff = ceil(floor((dst_range << (14 + s)) / src_range) / 2^s)` (`s = 15 - bpc`), and
/// `offset = (dst_max << (14 + s)) - (src_max << s) * coeff + 2^13`, where limited range is
/// `16..235` (luma) / `16..240` (chroma) times `2^(bpc - 8)` and full range `0..2^bpc - 1`.
/// The rounding term `2^13` is not in the FFmpeg tree's source we read; the 9.0.2 binary's
/// output needs it: every 8- and 10-bit value, luma and chroma, both directions, equals the
/// oracle's only with it (tests/range.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeMap {
    /// Multiplier (fits 16 bits).
    pub coeff: i32,
    /// Offset, rounding included.
    pub offset: i32,
    /// Whether the result is clipped at 32767 (towards full range).
    pub clip: bool,
}

impl RangeMap {
    /// The map of `conv` for a luma (`chroma == false`) or chroma plane scored at `bpc` bits;
    /// `None` for a `bpc` outside `8..=14` (the 15-bit intermediate path).
    pub fn new(conv: RangeConversion, chroma: bool, bpc: u32) -> Option<Self> {
        if !(8..=14).contains(&bpc) {
            return None;
        }
        let s = 15 - bpc;
        let total = 14 + s;
        let min = 16i64 << (bpc - 8);
        let max = if chroma { 240i64 } else { 235 } << (bpc - 8);
        let full = (1i64 << bpc) - 1;
        let to_full = conv.to == ColourRange::Full;
        let (src_min, src_max, dst_min, dst_max) = if to_full {
            (min, max, 0, full)
        } else {
            (0, full, min, max)
        };
        let q = ((dst_max - dst_min) << total) / (src_max - src_min);
        let coeff = -((-q) >> s);
        let offset = (dst_max << total) - (src_max << s) * coeff + (1 << 13);
        Some(Self {
            coeff: i32::try_from(coeff).ok()?,
            offset: i32::try_from(offset).ok()?,
            clip: to_full,
        })
    }

    /// One intermediate value converted (32-bit arithmetic, as swscale's: `|v| < 2^15` and
    /// `coeff < 2^15` keep it in range).
    #[inline]
    pub fn apply(&self, v: i16) -> i16 {
        let r = (i32::from(v) * self.coeff + self.offset) >> 14;
        if self.clip {
            r.min(32767) as i16
        } else {
            r as i16
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColourRange::{Full, Limited};

    fn s(range: ColourRange, yuvj: bool) -> StreamRange {
        StreamRange {
            range,
            yuvj,
            scaled: false,
        }
    }

    fn scaled(range: ColourRange) -> StreamRange {
        StreamRange {
            range,
            yuvj: false,
            scaled: true,
        }
    }

    fn conv(from: ColourRange, to: ColourRange) -> Option<RangeConversion> {
        RangeConversion::between(from, to)
    }

    /// Every combination of range, `yuvj` and scaling in each position, against what ffmpeg
    /// 9.0.2's negotiation did (see [`negotiate`]).
    #[test]
    fn negotiation_matches_ffmpeg() {
        // (distorted, reference) -> (target, reference converted, distorted converted)
        let cases = [
            // 8-bit yuvj420p pc dist + yuv420p tv ref: dist pc -> tv.
            (
                s(Full, true),
                s(Limited, false),
                Limited,
                None,
                conv(Full, Limited),
            ),
            // 8-bit yuv420p tv dist + yuvj420p pc ref: ref -> tv.
            (
                s(Limited, false),
                s(Full, true),
                Limited,
                conv(Full, Limited),
                None,
            ),
            // both yuvj420p pc: both yuv420p pc, samples unchanged.
            (s(Full, true), s(Full, true), Full, None, None),
            // 10-bit pc dist + 10-bit tv ref: ref tv -> pc.
            (
                s(Full, false),
                s(Limited, false),
                Full,
                conv(Limited, Full),
                None,
            ),
            // 10-bit tv dist + 10-bit pc ref: ref pc -> tv.
            (
                s(Limited, false),
                s(Full, false),
                Limited,
                conv(Full, Limited),
                None,
            ),
            // 10-bit pc both, limited both: nothing.
            (s(Full, false), s(Full, false), Full, None, None),
            (s(Limited, false), s(Limited, false), Limited, None, None),
            // VP9/AV1 full dist (yuv420p pc) + yuvj ref: the ref becomes yuv420p pc, a
            // format change with no range change.
            (s(Full, false), s(Full, true), Full, None, None),
            // yuvj full dist + 10-bit full ref: to yuv420p10le pc, no range change.
            (s(Full, true), s(Full, false), Full, None, None),
            // Scaled 10-bit pc dist + 10-bit tv ref: the scale outputs tv.
            (
                scaled(Full),
                s(Limited, false),
                Limited,
                None,
                conv(Full, Limited),
            ),
            // Scaled 10-bit tv dist + 10-bit pc ref: the scale outputs pc.
            (
                scaled(Limited),
                s(Full, false),
                Full,
                None,
                conv(Limited, Full),
            ),
            // Scaled yuvj420p pc (as yuv420p pc) dist + yuv420p tv ref: the scale outputs tv.
            (
                scaled(Full),
                s(Limited, false),
                Limited,
                None,
                conv(Full, Limited),
            ),
            // Scaled tv dist + yuvj420p pc ref: the ref is converted to tv.
            (
                scaled(Limited),
                s(Full, true),
                Limited,
                conv(Full, Limited),
                None,
            ),
        ];
        for (d, r, target, rc, dc) in cases {
            let got = negotiate(d, r);
            assert_eq!(
                (got.target, got.reference, got.distorted),
                (target, rc, dc),
                "{d:?} / {r:?}"
            );
            assert_eq!(got.why.is_empty(), rc.is_none() && dc.is_none());
        }
    }

    #[test]
    fn descriptions() {
        assert_eq!(negotiate(s(Full, false), s(Full, false)).describe(), "none");
        assert!(negotiate(s(Full, true), s(Limited, false))
            .describe()
            .starts_with("distorted full->limited (FFmpeg converts yuvj"));
        assert!(negotiate(s(Full, false), s(Limited, false))
            .describe()
            .starts_with("reference limited->full (FFmpeg"));
    }

    /// 8-bit constants against values computed by hand from the derivation.
    #[test]
    fn eight_bit_constants() {
        let luma_down = RangeMap::new(conv(Full, Limited).unwrap(), false, 8).unwrap();
        assert_eq!(
            (luma_down.coeff, luma_down.offset),
            (14071, 33553280 + 8192)
        );
        let chroma_up = RangeMap::new(conv(Limited, Full).unwrap(), true, 8).unwrap();
        assert_eq!(
            (chroma_up.coeff, chroma_up.offset),
            (18652, -38215680 + 8192)
        );
        assert!(RangeMap::new(conv(Limited, Full).unwrap(), true, 16).is_none());
        // Full-range chroma 128 stays 128 after the vertical pass's rounding.
        let v = chroma_up.apply(128 << 7);
        assert_eq!((i32::from(v) + 64) >> 7, 128);
    }
}
