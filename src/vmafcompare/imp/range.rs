//! Colour range at the element: each pad's range from its caps and what FFmpeg's negotiation
//! would make of its decoder (found by walking upstream to the first encoded caps), the
//! decision of which stream is converted ([`crate::engine::scale::range::negotiate`]), and
//! how it is reported (summary fields, log notes, one warning per converted stream).

use std::collections::BTreeSet;

use gst::prelude::*;

use super::caps::PadVideo;
use super::util::joined;
use crate::engine::scale::range::{negotiate, ColourRange, RangeDecision, StreamRange};
use crate::engine::LogWriter;

/// Pads walked upstream at most (decodebin's and parsebin's insides are a few elements).
const MAX_HOPS: usize = 64;

/// The media type of the first caps upstream of `sink` that are not raw video (the encoded
/// stream a decoder read: `video/x-h264`, `video/x-vp9`, `image/jpeg`, ...), walking peers,
/// elements' sink pads and ghost pads (into and out of bins such as decodebin); `None` when
/// the walk finds only raw video (`videotestsrc`, `appsrc`, `rawvideoparse`).
pub(super) fn upstream_codec(sink: &gst::Pad) -> Option<String> {
    let encoded = |pad: &gst::Pad| {
        let caps = pad.current_caps()?;
        let name = caps.structure(0)?.name().to_string();
        (!name.starts_with("video/x-raw")).then_some(name)
    };
    let mut cur = sink.peer()?;
    for _ in 0..MAX_HOPS {
        if let Some(ghost) = cur.downcast_ref::<gst::GhostPad>() {
            if ghost.direction() == gst::PadDirection::Src {
                cur = ghost.target()?;
                continue;
            }
        }
        if let Some(proxy) = cur.downcast_ref::<gst::ProxyPad>() {
            // The inner pad of a bin's sink ghost pad: continue outside the bin.
            if let Some(ghost) = proxy.internal() {
                if ghost.is::<gst::GhostPad>() && ghost.direction() == gst::PadDirection::Sink {
                    cur = ghost.peer()?;
                    continue;
                }
            }
        }
        if let Some(name) = encoded(&cur) {
            return Some(name);
        }
        let element = cur.parent_element()?;
        let sink = element.sink_pads().into_iter().next()?;
        if let Some(name) = encoded(&sink) {
            return Some(name);
        }
        cur = sink.peer()?;
    }
    None
}

/// Whether FFmpeg's decoder for `codec` emits 8-bit full range as a `yuvj` pixel format
/// (FFmpeg 9.0.2: H.264 `yuvj420p`/`yuvj444p`, HEVC `yuvj420p`, MJPEG), `None` meaning raw
/// input, taken as `-pix_fmt yuvj420p` gives it. VP9, AV1 (libdav1d) and others emit
/// `yuv420p` with range `pc`.
fn codec_emits_yuvj(codec: Option<&str>) -> bool {
    match codec {
        None => true,
        Some(c) => matches!(c, "video/x-h264" | "video/x-h265" | "image/jpeg"),
    }
}

/// What FFmpeg's negotiation would see of the stream on `pad` with `video`'s caps (its
/// `scaled` flag is set by [`decide`]); also returns the encoded caps found upstream.
pub(super) fn stream_range(pad: &gst::Pad, video: &PadVideo) -> (StreamRange, Option<String>) {
    let range = video.range.range;
    let codec = upstream_codec(pad);
    let yuvj = range == ColourRange::Full && video.depth == 8 && codec_emits_yuvj(codec.as_deref());
    (
        StreamRange {
            range,
            yuvj,
            scaled: false,
        },
        codec,
    )
}

/// The decision for `reference` and `distorted` scored at `size` (a stream of another size
/// goes through a `scale` filter, which takes any range).
pub(super) fn decide(
    reference: &PadVideo,
    distorted: &PadVideo,
    size: (u32, u32),
) -> RangeDecision {
    let of = |v: &PadVideo| StreamRange {
        scaled: v.size() != size,
        ..v.range
    };
    negotiate(of(distorted), of(reference))
}

/// Checks that a ladder's renditions want the one reference in one range: the reference is
/// placed (and converted) once for all of them. `Err` names the renditions that disagree.
pub(super) fn one_reference_range<R: RenditionName>(
    decisions: &[RangeDecision],
    renditions: &[R],
) -> Result<(), String> {
    let Some(first) = decisions.first() else {
        return Ok(());
    };
    match decisions
        .iter()
        .position(|d| d.reference != first.reference)
    {
        None => Ok(()),
        Some(k) => {
            let name = |i: usize| renditions.get(i).map_or("?", |r| r.rendition_name());
            let show = |d: &RangeDecision| {
                d.reference
                    .map_or("as it is".to_owned(), |c| format!("converted {c}"))
            };
            Err(format!(
                "{} needs the reference {} but {} needs it {} (FFmpeg scores each pair on its \
                 own; a ladder converts the reference once for all renditions)",
                name(0),
                show(first),
                name(k),
                show(&decisions[k])
            ))
        }
    }
}

/// A rendition's pad name, for [`one_reference_range`]'s message.
pub(super) trait RenditionName {
    /// The pad's name (`distorted`, `distorted_1`).
    fn rendition_name(&self) -> &str;
}

/// What the summary and the log say of one pair's ranges over the stream (a caps change may
/// add a second value, joined as the scaling reports are).
#[derive(Debug, Default, Clone)]
pub(super) struct RangeNotes {
    reference: BTreeSet<String>,
    distorted: BTreeSet<String>,
    conversion: BTreeSet<String>,
    /// Conversions already warned about (`pad: from->to`).
    warned: BTreeSet<String>,
}

impl RangeNotes {
    /// Records `d` for streams of ranges `(reference, distorted)`; returns the warnings not
    /// posted yet, one per converted stream (`pad` names the distorted pad; the reference's
    /// conversion is warned about only with `warn_reference`).
    pub(super) fn record(
        &mut self,
        d: &RangeDecision,
        (reference, distorted): (ColourRange, ColourRange),
        (pad, warn_reference): (&str, bool),
    ) -> Vec<String> {
        self.reference.insert(reference.name().to_owned());
        self.distorted.insert(distorted.name().to_owned());
        self.conversion.insert(d.describe());
        let mut warn = Vec::new();
        let shown = d.reference.filter(|_| warn_reference);
        for (name, c) in [("reference", shown), (pad, d.distorted)] {
            let Some(c) = c else { continue };
            if self.warned.insert(format!("{name}: {c}")) {
                warn.push(format!(
                    "{name} pad: {} range converted to {} before scoring, {} ({})",
                    c.from, c.to, "as FFmpeg does before libvmaf", d.why
                ));
            }
        }
        warn
    }

    /// The summary's `reference-range`, `distorted-range` and `range-conversion` (`limited`
    /// and `none` before any caps).
    pub(super) fn fields(&self) -> (String, String, String) {
        let or = |s: &BTreeSet<String>, default: &str| {
            if s.is_empty() {
                default.to_owned()
            } else {
                joined(s)
            }
        };
        (
            or(&self.reference, "limited"),
            or(&self.distorted, "limited"),
            or(&self.conversion, "none"),
        )
    }

    /// Writes the facts into `log` beside the scaling notes (`reference_range`,
    /// `distorted_range`, `range_conversion`), where libvmaf's log readers do not look.
    pub(super) fn note(&self, log: &mut LogWriter) {
        let (r, d, c) = self.fields();
        log.note("reference_range", r);
        log.note("distorted_range", d);
        log.note("range_conversion", c);
    }
}
