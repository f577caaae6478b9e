//! One rendition scored against the reference ([`Rendition`]): a pair's (the `distorted` pad)
//! or one of a ladder's (the always `distorted` pad when linked, and the request pads
//! `distorted_%u`), with its pad, caps, counts, log and what its frames went through.

use std::collections::BTreeSet;

use gst::prelude::*;

use super::caps::PadVideo;
use super::range;
use crate::engine::LogWriter;
use crate::vmafcompare::{InputPath, VmafRenditionPad};

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
    pub(super) fn new(pad: VmafRenditionPad, log: Option<LogWriter>) -> Self {
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
