//! The sink pads: which pads carry the renditions (a pair's `distorted` pad, a ladder's
//! request pads), the renditions made from them at READY->PAUSED, and their caps events
//! (format, size limits, colour range, frame duration). A pair is the ladder of one: what
//! differs is data (`Session::ladder`: which buffer leaves on the src pad, whether messages,
//! summaries and logs name the rendition).

use gst::prelude::*;
use gst::subclass::prelude::*;

use super::caps::{PadVideo, MAX_DIMENSION};
use super::prepared::Prepared;
use super::rendition::Rendition;
use super::util::{joined, lock, CAT};
use super::{range, VmafCompare};
use crate::vmafcompare::{VmafRenditionPad, VmafScaleMethod};

impl VmafCompare {
    /// The distorted pads that carry a ladder's renditions, in slot order: `distorted` when
    /// linked, then the request pads in the order they were made. Empty without request pads
    /// (a pair).
    fn ladder_pads(&self) -> Vec<VmafRenditionPad> {
        let obj = self.obj();
        let requested: Vec<VmafRenditionPad> = obj
            .sink_pads()
            .into_iter()
            .filter(|p| p.name().starts_with("distorted_"))
            .filter_map(|p| p.downcast::<VmafRenditionPad>().ok())
            .collect();
        if requested.is_empty() {
            return Vec::new();
        }
        let mut pads = Vec::with_capacity(requested.len() + 1);
        if self.distorted_pad.is_linked() {
            if let Ok(p) = self.distorted_pad.clone().downcast::<VmafRenditionPad>() {
                pads.push(p);
            }
        }
        pads.extend(requested);
        pads
    }

    /// Whether the element scores a ladder (request pads were made before READY->PAUSED).
    pub(super) fn is_ladder(&self) -> bool {
        lock(&self.state).ladder
    }

    /// READY->PAUSED: the renditions (a ladder's when request pads exist, else the pair's
    /// `distorted` pad) with their logs opened: a ladder's one per rendition, named after it.
    /// Returns them and whether they form a ladder.
    pub(super) fn start_renditions(&self) -> Result<(Vec<Rendition>, bool), gst::ErrorMessage> {
        let pads = self.ladder_pads();
        if pads.is_empty() {
            let pad = self
                .distorted_pad
                .clone()
                .downcast::<VmafRenditionPad>()
                .map_err(|_| {
                    gst::error_msg!(gst::CoreError::Pad, ["distorted pad of another type"])
                })?;
            let log = lock(&self.settings).open_log(None)?;
            return Ok((vec![Rendition::new(pad, log)], false));
        }
        let mut renditions = Vec::with_capacity(pads.len());
        for pad in pads {
            let mut log = lock(&self.settings).open_log(Some(&pad.label_or_name()))?;
            let r = Rendition::new(pad, None);
            if let Some(l) = log.as_mut() {
                l.note("pad", r.name.clone());
                if !r.label.is_empty() {
                    l.note("rendition", r.label.clone());
                }
            }
            renditions.push(Rendition { log, ..r });
        }
        gst::info!(
            CAT,
            imp = self,
            "ladder of {} renditions: {}",
            renditions.len(),
            joined(renditions.iter().map(|r| r.name.as_str()))
        );
        Ok((renditions, true))
    }

    /// The renditions' pads for live monitoring, with their `(name, label)` in a ladder.
    pub(super) fn live_pads(&self) -> Vec<(gst_base::AggregatorPad, Option<(String, String)>)> {
        let state = lock(&self.state);
        state
            .renditions
            .iter()
            .map(|r| {
                let names = state.ladder.then(|| (r.name.clone(), r.label_or_name()));
                (r.agg_pad().clone(), names)
            })
            .collect()
    }

    /// Rendition `k`'s pad name (for messages).
    pub(super) fn rendition_name(&self, k: usize) -> String {
        lock(&self.state)
            .renditions
            .get(k)
            .map_or_else(|| format!("rendition {k}"), |r| r.name.clone())
    }

    /// After READY->PAUSED in a ladder: an unlinked `distorted` pad carries no rendition; it
    /// is ended at once so that the aggregator does not wait for it.
    pub(super) fn end_unlinked_distorted(&self) {
        if self.is_ladder() && !self.distorted_pad.is_linked() {
            lock(&self.state).distorted_unused = true;
            let _ = self
                .distorted_pad
                .send_event(gst::event::StreamStart::new("vmafcompare-unused-distorted"));
            let _ = self.distorted_pad.send_event(gst::event::Eos::new());
        }
    }

    /// A caps event on a rendition's pad: records its video and returns its frame duration
    /// (from the caps' frame rate), `Ok(None)` without one. `Err(())` when the caps were
    /// refused (an error was posted).
    pub(super) fn rendition_caps(
        &self,
        pad: &gst_base::AggregatorPad,
        video: &PadVideo,
    ) -> Result<Option<gst::ClockTime>, ()> {
        let mut state = lock(&self.state);
        if state.distorted_unused && pad == &self.distorted_pad {
            drop(state);
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                (
                    "the distorted pad was linked after the pipeline started: in a ladder, an \
                     unlinked distorted pad is left out at READY->PAUSED"
                ),
                ["Link sources that link late (decodebin, uridecodebin) to request pads distorted_1, distorted_2, ... or link the distorted pad before starting."]
            );
            return Err(());
        }
        if let Some(r) = state.renditions.iter_mut().find(|r| r.agg_pad() == pad) {
            r.video = Some(video.clone());
        }
        let fps = video.info.fps();
        if fps.numer() > 0 && fps.denom() > 0 {
            // One frame is held back until the next arrives (motion2 needs it).
            return Ok(Some(
                gst::ClockTime::SECOND
                    .mul_div_floor(fps.denom() as u64, fps.numer() as u64)
                    .unwrap_or(gst::ClockTime::ZERO),
            ));
        }
        Ok(None)
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
