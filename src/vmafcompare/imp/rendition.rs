//! The renditions scored against the reference: a pair's one (the `distorted` pad) or a
//! ladder's (the always `distorted` pad when linked, and the request pads `distorted_%u`), each
//! with its pad, caps, counts, log and what its frames went through. A pair is the ladder of
//! one: what differs is data ([`State::ladder`]: which buffer leaves on the src pad, whether
//! messages, summaries and logs name the rendition).

use super::*;
use crate::vmafcompare::VmafRenditionPad;

/// One rendition: its pad and what it produced.
pub(super) struct Rendition {
    pub(super) pad: VmafRenditionPad,
    /// The pad's name (`distorted`, `distorted_1`).
    pub(super) name: String,
    /// Its `label` property at READY->PAUSED (may be empty).
    pub(super) label: String,
    pub(super) video: Option<PadVideo>,
    pub(super) paths: BTreeSet<InputPath>,
    pub(super) scaled: BTreeSet<String>,
    /// Its colour range against the reference's, and what was converted.
    pub(super) ranges: range::RangeNotes,
    pub(super) log: Option<LogWriter>,
    pub(super) unpaired_reference: u64,
    pub(super) unpaired_distorted: u64,
    /// Frames of it handed to the scorer (the index its next frame gets, without skips).
    pub(super) frames_in: u64,
    /// Its summary was posted (pad released, or the stream ended).
    pub(super) done: bool,
    /// Packed Cb/Cr for the CPU backend.
    pub(super) chroma: [Vec<u16>; 2],
}

impl Rendition {
    fn new(pad: VmafRenditionPad, log: Option<LogWriter>) -> Self {
        Self {
            name: pad.name().to_string(),
            label: pad.label(),
            pad,
            video: None,
            paths: BTreeSet::new(),
            scaled: BTreeSet::new(),
            ranges: range::RangeNotes::default(),
            log,
            unpaired_reference: 0,
            unpaired_distorted: 0,
            frames_in: 0,
            done: false,
            chroma: [Vec::new(), Vec::new()],
        }
    }

    /// Its label, or its pad's name when the label is empty.
    pub(super) fn label_or_name(&self) -> String {
        if self.label.is_empty() {
            self.name.clone()
        } else {
            self.label.clone()
        }
    }

    /// Its pad as an aggregator pad.
    pub(super) fn agg_pad(&self) -> &gst_base::AggregatorPad {
        self.pad.upcast_ref::<gst_base::AggregatorPad>()
    }
}

impl range::RenditionName for Rendition {
    fn rendition_name(&self) -> &str {
        &self.name
    }
}

/// `results-location` for one rendition: `%s` replaced by its label (or pad name), else the
/// name inserted before the extension (`scores.json` -> `scores-720p.json`).
pub(super) fn rendition_location(location: &str, name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if location.contains("%s") {
        return location.replace("%s", &safe);
    }
    let path = std::path::Path::new(location);
    match (path.file_stem(), path.extension()) {
        (Some(stem), Some(ext)) => path
            .with_file_name(format!(
                "{}-{safe}.{}",
                stem.to_string_lossy(),
                ext.to_string_lossy()
            ))
            .to_string_lossy()
            .into_owned(),
        _ => format!("{location}-{safe}"),
    }
}

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
            return Ok((vec![Rendition::new(pad, self.open_log()?)], false));
        }
        let mut renditions = Vec::with_capacity(pads.len());
        for pad in pads {
            let mut log = self.open_log_named(Some(&pad.label_or_name()))?;
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
