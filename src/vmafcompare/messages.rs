//! Typed forms of what the element posts and attaches: the frame message and the per-frame
//! `GstCustomMeta` (`vmafcompare-frame`), the summary (`vmafcompare-summary`), the frame offset
//! found by auto-alignment (`vmafcompare-offset`), the alerts (`vmafcompare-alert`) and the
//! window statistics carried by every frame message and meta.

use gst::glib;

pub use crate::engine::window::WindowStats;

/// Name of the element message posted for every scored frame.
pub const FRAME_MESSAGE_NAME: &str = "vmafcompare-frame";
/// Name of the element message posted once at end of stream.
pub const SUMMARY_MESSAGE_NAME: &str = "vmafcompare-summary";
/// Name of the `GstCustomMeta` attached to every scored output buffer. Its structure holds the
/// same fields as the frame message. Read it from C with
/// `gst_buffer_get_custom_meta(buf, "VmafCompareMeta")` and `gst_custom_meta_get_structure()`.
pub const META_NAME: &str = "VmafCompareMeta";

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

impl From<&FrameMessage> for gst::Structure {
    fn from(m: &FrameMessage) -> Self {
        m.to_structure()
    }
}

impl From<&SummaryMessage> for gst::Structure {
    fn from(m: &SummaryMessage) -> Self {
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

/// One scored frame, as carried by the frame message and the buffer meta.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameMessage {
    /// Frame index from the start of the stream (libvmaf's `frameNum`).
    pub index: u64,
    /// Presentation timestamp of the distorted buffer.
    pub pts: Option<gst::ClockTime>,
    /// Running time of the distorted buffer.
    pub running_time: Option<gst::ClockTime>,
    /// Duration of the distorted buffer.
    pub duration: Option<gst::ClockTime>,
    /// VMAF score (0..100 for the built-in models).
    pub vmaf: f64,
    /// Every metric under libvmaf's name (`integer_vif_scale0`, `integer_adm2`, ...,
    /// `vmaf`), in log order.
    pub metrics: Vec<(String, f64)>,
    /// Frame pairs left unscored so far because scoring could not keep up with a live
    /// pipeline (`on-full=skip`), counted up to this frame; 0 otherwise.
    pub skipped: u64,
    /// VMAF statistics of the sliding window ending with this frame (`window-size` /
    /// `window-duration`); `None` when read from a structure without them.
    pub window: Option<WindowStats>,
    /// Ladder mode: the distorted pad of the rendition scored (`distorted`, `distorted_1`);
    /// `None` for a pair.
    pub pad: Option<String>,
    /// Ladder mode: the rendition's label (its pad's `label` property, else the pad's name).
    pub label: Option<String>,
}

const NON_METRIC_FIELDS: &[&str] = &[
    "index",
    "pts",
    "running-time",
    "duration",
    "skipped",
    "window-frames",
    "window-mean",
    "window-min",
    "window-harmonic-mean",
    "pad",
    "label",
];

impl FrameMessage {
    /// The value of metric `name`.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }

    /// Builds the structure (name [`FRAME_MESSAGE_NAME`]) used for messages and meta.
    pub fn to_structure(&self) -> gst::Structure {
        let mut s = gst::Structure::builder(FRAME_MESSAGE_NAME)
            .field("index", self.index)
            .field("pts", self.pts)
            .field("running-time", self.running_time)
            .field("duration", self.duration)
            .field("skipped", self.skipped)
            .build();
        if let Some(w) = &self.window {
            set_window(&mut s, w);
        }
        if let Some(p) = &self.pad {
            s.set("pad", p.as_str());
        }
        if let Some(l) = &self.label {
            s.set("label", l.as_str());
        }
        // Metrics last, `vmaf` at the very end (scripts match `vmaf=...;`).
        for (name, v) in &self.metrics {
            s.set(name.as_str(), *v);
        }
        s
    }
}

impl TryFrom<&gst::StructureRef> for FrameMessage {
    type Error = glib::BoolError;

    fn try_from(s: &gst::StructureRef) -> Result<Self, Self::Error> {
        let index = s
            .get::<u64>("index")
            .map_err(|e| glib::bool_error!("vmafcompare frame message without index: {e}"))?;
        let time = |f: &str| s.get::<Option<gst::ClockTime>>(f).ok().flatten();
        let metrics: Vec<(String, f64)> = s
            .iter()
            .filter(|(name, _)| !NON_METRIC_FIELDS.contains(&name.as_str()))
            .filter_map(|(name, v)| v.get::<f64>().ok().map(|v| (name.to_string(), v)))
            .collect();
        let vmaf = metrics
            .iter()
            .find(|(n, _)| n == "vmaf")
            .map(|(_, v)| *v)
            .ok_or_else(|| glib::bool_error!("vmafcompare frame message without vmaf"))?;
        Ok(Self {
            index,
            pts: time("pts"),
            running_time: time("running-time"),
            duration: time("duration"),
            vmaf,
            metrics,
            skipped: s.get::<u64>("skipped").unwrap_or(0),
            window: get_window(s),
            pad: s.get::<String>("pad").ok(),
            label: s.get::<String>("label").ok(),
        })
    }
}

/// Pooled statistics of one metric in the summary message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PooledMetric {
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// libvmaf's harmonic mean, `n / sum(1 / (x + 1)) - 1`.
    pub harmonic_mean: f64,
    /// 1st percentile of the per-frame values (the "1% low"), by libvmaf's percentile
    /// definition (linear interpolation at rank `p * (n - 1) / 100`); exact up to 65,536
    /// frames, a t-digest estimate past that (`crate::engine::pool`). NaN when absent.
    pub percentile_1: f64,
    /// 5th percentile (the "5% low"), as `percentile_1`.
    pub percentile_5: f64,
    /// 10th percentile (the "10% low"), as `percentile_1`.
    pub percentile_10: f64,
}

/// The end-of-stream summary.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryMessage {
    /// Frames scored (subsampled-out frames are not counted).
    pub frames: u64,
    /// Reference frames that found no distorted partner.
    pub unpaired_reference: u64,
    /// Distorted frames that found no reference partner.
    pub unpaired_distorted: u64,
    /// Reference frames whose running time repeated or went backwards (an upstream fault,
    /// reported once by a warning naming the pad; such frames are usually unpaired too).
    pub out_of_order_reference: u64,
    /// The same for the distorted frames (a ladder's: the rendition's pad).
    pub out_of_order_distorted: u64,
    /// Backend that computed the scores (`"cpu"`, `"cuda"`).
    pub backend: String,
    /// Model name or path.
    pub model: String,
    /// How the reference frames reached the backend: the [`InputPath`] names taken, joined by
    /// `+` when they changed during the stream (e.g. `cuda`, `system`, `dmabuf-readback`);
    /// empty when no frame was scored.
    pub reference_input: String,
    /// The same for the distorted frames.
    pub distorted_input: String,
    /// Pooled statistics per metric, libvmaf names, log order.
    pub metrics: Vec<(String, PooledMetric)>,
    /// Frame pairs left unscored because scoring could not keep up with a live pipeline
    /// (`on-full=skip`).
    pub skipped: u64,
    /// Width and height the frames were scored at (the reference's, or `score-width` x
    /// `score-height`); 0 when no frame was scored.
    pub scored_width: u32,
    /// See `scored_width`.
    pub scored_height: u32,
    /// How the reference reached the scored size: `none` (already at it) or
    /// `METHOD WxH->WxH` (e.g. `bicubic 3840x2160->1920x1080`), joined by `+` when it changed
    /// during the stream.
    pub reference_scaling: String,
    /// The same for the distorted stream (e.g. `bicubic 1280x720->1920x1080`).
    pub distorted_scaling: String,
    /// The reference's colour range from its caps: `limited` or `full` (joined by `+` when
    /// it changed during the stream).
    pub reference_range: String,
    /// The distorted stream's (a ladder's: the rendition's) colour range.
    pub distorted_range: String,
    /// What was converted to score both in one range, as FFmpeg does before libvmaf: `none`,
    /// or e.g. `distorted full->limited (FFmpeg converts yuvj, ...)`, `reference
    /// limited->full (...)`.
    pub range_conversion: String,
    /// Scored frames whose buffer had to leave (live pipelines, to stay within the reported
    /// latency) before its score was ready: its message and log line carry the score, the
    /// buffer has no meta.
    pub late: u64,
    /// Ladder mode: the rendition's distorted pad (one summary per rendition); `None` for a
    /// pair.
    pub pad: Option<String>,
    /// Ladder mode: the rendition's label (its pad's `label` property, else the pad's name).
    pub label: Option<String>,
}

/// How one pad's frames reached the backend (field values `reference-input` and
/// `distorted-input` of the summary message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InputPath {
    /// `system`: system memory, mapped and its valid luma rows copied (to the CPU backend's
    /// planes, or through pinned staging to the GPU).
    System,
    /// `cuda`: GStreamer CUDA memory of the element's own context, read in place by the
    /// kernels (no copy).
    Cuda,
    /// `cuda-peer-copy`: CUDA memory of another context or device, copied peer-to-peer.
    CudaPeerCopy,
    /// `cuda-download`: CUDA memory mapped to system memory by GStreamer for the CPU backend.
    CudaDownload,
    /// `dmabuf-import`: a DMABuf imported into CUDA as external memory and read in place.
    DmabufImport,
    /// `dmabuf-readback`: a DMABuf mapped and its valid luma rows copied (the driver refused
    /// the import, or the CPU backend scores).
    DmabufReadback,
}

impl InputPath {
    /// The name used in the summary message and in logs.
    pub fn name(self) -> &'static str {
        match self {
            InputPath::System => "system",
            InputPath::Cuda => "cuda",
            InputPath::CudaPeerCopy => "cuda-peer-copy",
            InputPath::CudaDownload => "cuda-download",
            InputPath::DmabufImport => "dmabuf-import",
            InputPath::DmabufReadback => "dmabuf-readback",
        }
    }
}

const SUMMARY_FIELDS: &[&str] = &[
    "frames",
    "unpaired-reference",
    "unpaired-distorted",
    "out-of-order-reference",
    "out-of-order-distorted",
    "backend",
    "model",
    "reference-input",
    "distorted-input",
    "skipped",
    "late",
    "scored-width",
    "scored-height",
    "reference-scaling",
    "distorted-scaling",
    "reference-range",
    "distorted-range",
    "range-conversion",
    "pad",
    "label",
];

impl SummaryMessage {
    /// Pooled statistics of metric `name`.
    pub fn get(&self, name: &str) -> Option<PooledMetric> {
        self.metrics
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| *p)
    }

    /// Builds the structure (name [`SUMMARY_MESSAGE_NAME`]); each metric is a nested
    /// structure with `min`, `max`, `mean`, `harmonic_mean`, `percentile_1`, `percentile_5`
    /// and `percentile_10` (all `f64`).
    pub fn to_structure(&self) -> gst::Structure {
        let mut s = gst::Structure::builder(SUMMARY_MESSAGE_NAME)
            .field("frames", self.frames)
            .field("unpaired-reference", self.unpaired_reference)
            .field("unpaired-distorted", self.unpaired_distorted)
            .field("out-of-order-reference", self.out_of_order_reference)
            .field("out-of-order-distorted", self.out_of_order_distorted)
            .field("backend", &self.backend)
            .field("model", &self.model)
            .field("reference-input", &self.reference_input)
            .field("distorted-input", &self.distorted_input)
            .field("skipped", self.skipped)
            .field("late", self.late)
            .field("scored-width", self.scored_width)
            .field("scored-height", self.scored_height)
            .field("reference-scaling", &self.reference_scaling)
            .field("distorted-scaling", &self.distorted_scaling)
            .field("reference-range", &self.reference_range)
            .field("distorted-range", &self.distorted_range)
            .field("range-conversion", &self.range_conversion)
            .build();
        if let Some(p) = &self.pad {
            s.set("pad", p.as_str());
        }
        if let Some(l) = &self.label {
            s.set("label", l.as_str());
        }
        for (name, p) in &self.metrics {
            let pooled = gst::Structure::builder("pooled")
                .field("min", p.min)
                .field("max", p.max)
                .field("mean", p.mean)
                .field("harmonic_mean", p.harmonic_mean)
                .field("percentile_1", p.percentile_1)
                .field("percentile_5", p.percentile_5)
                .field("percentile_10", p.percentile_10)
                .build();
            s.set(name.as_str(), pooled);
        }
        s
    }
}

impl TryFrom<&gst::StructureRef> for SummaryMessage {
    type Error = glib::BoolError;

    fn try_from(s: &gst::StructureRef) -> Result<Self, Self::Error> {
        if s.name() != SUMMARY_MESSAGE_NAME {
            return Err(glib::bool_error!("not a {SUMMARY_MESSAGE_NAME} structure"));
        }
        let count = |f: &str| s.get::<u64>(f).unwrap_or(0);
        let text = |f: &str| s.get::<String>(f).unwrap_or_default();
        let metrics = s
            .iter()
            .filter(|(name, _)| !SUMMARY_FIELDS.contains(&name.as_str()))
            .filter_map(|(name, v)| {
                let p = v.get::<gst::Structure>().ok()?;
                let f = |k: &str| p.get::<f64>(k).ok();
                Some((
                    name.to_string(),
                    PooledMetric {
                        min: f("min")?,
                        max: f("max")?,
                        mean: f("mean")?,
                        harmonic_mean: f("harmonic_mean")?,
                        percentile_1: f("percentile_1").unwrap_or(f64::NAN),
                        percentile_5: f("percentile_5").unwrap_or(f64::NAN),
                        percentile_10: f("percentile_10").unwrap_or(f64::NAN),
                    },
                ))
            })
            .collect();
        Ok(Self {
            frames: count("frames"),
            unpaired_reference: count("unpaired-reference"),
            unpaired_distorted: count("unpaired-distorted"),
            out_of_order_reference: count("out-of-order-reference"),
            out_of_order_distorted: count("out-of-order-distorted"),
            backend: text("backend"),
            model: text("model"),
            reference_input: text("reference-input"),
            distorted_input: text("distorted-input"),
            metrics,
            skipped: count("skipped"),
            late: count("late"),
            scored_width: s.get::<u32>("scored-width").unwrap_or(0),
            scored_height: s.get::<u32>("scored-height").unwrap_or(0),
            reference_scaling: text("reference-scaling"),
            distorted_scaling: text("distorted-scaling"),
            reference_range: text("reference-range"),
            distorted_range: text("distorted-range"),
            range_conversion: text("range-conversion"),
            pad: s.get::<String>("pad").ok(),
            label: s.get::<String>("label").ok(),
        })
    }
}

/// Reads the scores attached to an output buffer by `vmafcompare`, if any (the first
/// rendition's in ladder mode; see [`frame_metas`]).
pub fn frame_meta(buffer: &gst::BufferRef) -> Option<FrameMessage> {
    let meta = gst::meta::CustomMeta::from_buffer(buffer, META_NAME).ok()?;
    FrameMessage::try_from(meta.structure()).ok()
}

/// Reads every score meta attached to an output buffer by `vmafcompare`: one for a pair; in
/// ladder mode (the src pad then carries the reference buffers) one per rendition that scored
/// the frame, each naming its rendition ([`FrameMessage::pad`], [`FrameMessage::label`]).
pub fn frame_metas(buffer: &gst::BufferRef) -> Vec<FrameMessage> {
    buffer
        .iter_meta::<gst::Meta>()
        .filter_map(|m| {
            let custom = m.try_as_custom_meta()?;
            let s = custom.structure();
            if s.name() != META_NAME {
                return None;
            }
            FrameMessage::try_from(s).ok()
        })
        .collect()
}
