//! Typed forms of the live-monitoring messages: the frame offset found by auto-alignment
//! (`vmafcompare-offset`) and the window alerts (`vmafcompare-alert`), plus the window
//! statistics carried by every frame message and meta.

use gst::glib;

pub use crate::engine::window::WindowStats;

/// Name of the element message posted once auto-alignment has chosen the frame offset.
pub const OFFSET_MESSAGE_NAME: &str = "vmafcompare-offset";
/// Name of the element message posted when the window mean falls below `alert-threshold`,
/// and again when it recovers.
pub const ALERT_MESSAGE_NAME: &str = "vmafcompare-alert";

pub(crate) fn set_window(s: &mut gst::StructureRef, w: &WindowStats) {
    s.set("window-frames", w.frames);
    s.set("window-mean", w.mean);
    s.set("window-min", w.min);
    s.set("window-harmonic-mean", w.harmonic_mean);
}

pub(crate) fn get_window(s: &gst::StructureRef) -> Option<WindowStats> {
    Some(WindowStats {
        frames: s.get::<u64>("window-frames").ok()?,
        mean: s.get::<f64>("window-mean").ok()?,
        min: s.get::<f64>("window-min").ok()?,
        harmonic_mean: s.get::<f64>("window-harmonic-mean").ok()?,
    })
}

impl From<&super::FrameMessage> for gst::Structure {
    fn from(m: &super::FrameMessage) -> Self {
        m.to_structure()
    }
}

impl From<&super::SummaryMessage> for gst::Structure {
    fn from(m: &super::SummaryMessage) -> Self {
        m.to_structure()
    }
}

fn check_name(s: &gst::StructureRef, name: &str) -> Result<(), glib::BoolError> {
    if s.name() == name {
        Ok(())
    } else {
        Err(glib::bool_error!("not a {name} structure: {}", s.name()))
    }
}

/// The frame offset chosen by auto-alignment (`auto-align=true`), posted once per stream
/// before the first pair is scored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OffsetMessage {
    /// Frames the distorted stream is late by: distorted frame `i + offset_frames` is paired
    /// with reference frame `i`. Negative: the reference is late.
    pub offset_frames: i64,
    /// Time shift applied from then on, in ns: the distorted running time minus the
    /// reference running time of the matched frames (median over the compared frames).
    pub delay: i64,
    /// Mean luma PSNR at the chosen offset, dB (60 = identical).
    pub psnr: f64,
    /// Mean luma PSNR without any offset, dB.
    pub psnr_zero: f64,
    /// Frame pairs compared at each offset.
    pub compared: u64,
    /// Largest `|offset|` searched, frames (`align-max-offset`, less when a stream was short).
    pub search_range: u64,
}

impl From<&OffsetMessage> for gst::Structure {
    fn from(m: &OffsetMessage) -> Self {
        gst::Structure::builder(OFFSET_MESSAGE_NAME)
            .field("offset-frames", m.offset_frames)
            .field("delay", m.delay)
            .field("psnr", m.psnr)
            .field("psnr-zero", m.psnr_zero)
            .field("compared", m.compared)
            .field("search-range", m.search_range)
            .build()
    }
}

impl TryFrom<&gst::StructureRef> for OffsetMessage {
    type Error = glib::BoolError;

    fn try_from(s: &gst::StructureRef) -> Result<Self, Self::Error> {
        check_name(s, OFFSET_MESSAGE_NAME)?;
        let err = |f: &str, e: gst::structure::GetError<_>| {
            glib::bool_error!("{OFFSET_MESSAGE_NAME}: field {f}: {e}")
        };
        Ok(Self {
            offset_frames: s
                .get("offset-frames")
                .map_err(|e| err("offset-frames", e))?,
            delay: s.get("delay").map_err(|e| err("delay", e))?,
            psnr: s.get("psnr").map_err(|e| err("psnr", e))?,
            psnr_zero: s.get("psnr-zero").map_err(|e| err("psnr-zero", e))?,
            compared: s.get("compared").map_err(|e| err("compared", e))?,
            search_range: s.get("search-range").map_err(|e| err("search-range", e))?,
        })
    }
}

/// A change of the alert state: the window mean VMAF fell below `alert-threshold`
/// (`below == true`), or came back to `alert-threshold + alert-hysteresis` (`false`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlertMessage {
    /// `true`: quality fell below the threshold; `false`: it recovered.
    pub below: bool,
    /// Index of the frame whose score changed the state.
    pub index: u64,
    /// Presentation timestamp of that frame's distorted buffer.
    pub pts: Option<gst::ClockTime>,
    /// Running time of that frame's distorted buffer.
    pub running_time: Option<gst::ClockTime>,
    /// The window statistics that changed the state (the mean is compared).
    pub window: WindowStats,
    /// `alert-threshold`, VMAF units.
    pub threshold: f64,
    /// `alert-hysteresis`, VMAF units.
    pub hysteresis: f64,
}

impl From<&AlertMessage> for gst::Structure {
    fn from(m: &AlertMessage) -> Self {
        let mut s = gst::Structure::builder(ALERT_MESSAGE_NAME)
            .field("below", m.below)
            .field("index", m.index)
            .field("pts", m.pts)
            .field("running-time", m.running_time)
            .field("threshold", m.threshold)
            .field("hysteresis", m.hysteresis)
            .build();
        set_window(&mut s, &m.window);
        s
    }
}

impl TryFrom<&gst::StructureRef> for AlertMessage {
    type Error = glib::BoolError;

    fn try_from(s: &gst::StructureRef) -> Result<Self, Self::Error> {
        check_name(s, ALERT_MESSAGE_NAME)?;
        let time = |f: &str| s.get::<Option<gst::ClockTime>>(f).ok().flatten();
        Ok(Self {
            below: s
                .get("below")
                .map_err(|e| glib::bool_error!("{ALERT_MESSAGE_NAME}: field below: {e}"))?,
            index: s
                .get("index")
                .map_err(|e| glib::bool_error!("{ALERT_MESSAGE_NAME}: field index: {e}"))?,
            pts: time("pts"),
            running_time: time("running-time"),
            window: get_window(s)
                .ok_or_else(|| glib::bool_error!("{ALERT_MESSAGE_NAME}: window fields missing"))?,
            threshold: s.get("threshold").unwrap_or(0.0),
            hysteresis: s.get("hysteresis").unwrap_or(0.0),
        })
    }
}
