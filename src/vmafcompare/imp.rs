//! `vmafcompare` subclass: pads, caps, properties, `aggregate()`, messages, meta and the
//! state changes that drive the engine's lifecycle.

use std::collections::BTreeSet;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::Instant;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;
use gst_video::prelude::*;

use super::{
    FrameMessage, InputPath, PooledMetric, ResultsFormat, SummaryMessage, VmafBackend, META_NAME,
};
use crate::cpu::{self, CpuPool};
use crate::cuda::context::PeerAccess;
use crate::cuda::gst_cuda::{self, CAPS_FEATURE_CUDA_MEMORY, CONTEXT_TYPE};
use crate::cuda::GpuDevice;
use crate::engine::{
    model::DEFAULT_MODEL, Backend, ChromaInput, ChromaPair, ComponentInput, DeviceComponent,
    DeviceLuma, EngineError, FeatureSet, FrameScores, HostComponent, HostLuma, LogFormat,
    LogWriter, LumaInput, LumaPlane, NamedModel, SampleLayout, ScorePlan, Scored, Scorer, YuvToRgb,
};
use crate::engine::{CpuBackend, CudaBackend, Geometry};

/// Live monitoring (issue 7): scoring thread, delay and auto-alignment, windows, alerts.
mod monitor;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "vmafcompare",
        gst::DebugColorFlags::empty(),
        Some("VMAF scoring of a distorted stream against its reference"),
    )
});

/// Raw formats both sink pads accept: 4:2:0, 4:2:2, 4:4:4, planar and semi-planar, 8 to 12 bits.
const FORMATS: &[gst_video::VideoFormat] = &[
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

const DEFAULT_SUBSAMPLE: u32 = 1;
const DEFAULT_DEVICE_ID: u32 = 0;
const MAX_SUBSAMPLE: u32 = 1_000_000;
/// `threads`: 0, one CPU scoring thread per core.
const DEFAULT_THREADS: u32 = 0;
/// Largest `threads` accepted.
const MAX_THREADS: u32 = 1024;
/// Largest width and height accepted (16K video is 15360x8640): bounds the memory the
/// extractors allocate for one geometry, so absurd caps are refused instead of exhausting it.
const MAX_DIMENSION: u32 = 16384;

#[derive(Debug, Clone)]
struct Settings {
    model: String,
    /// The `features` property as set (parsed at NULL->READY).
    features: String,
    backend: VmafBackend,
    subsample: u32,
    results_location: Option<String>,
    results_format: ResultsFormat,
    frame_message: bool,
    device_id: u32,
    /// CPU scoring threads (0: one per core).
    threads: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            model: DEFAULT_MODEL.to_owned(),
            features: String::new(),
            backend: VmafBackend::Auto,
            subsample: DEFAULT_SUBSAMPLE,
            results_location: None,
            results_format: ResultsFormat::Json,
            frame_message: true,
            device_id: DEFAULT_DEVICE_ID,
            threads: DEFAULT_THREADS,
        }
    }
}

/// What leaves with each distorted buffer.
#[derive(Clone)]
struct Tag {
    buffer: gst::Buffer,
    running_time: Option<gst::ClockTime>,
}

/// Geometry of a pad's negotiated video: luma size, bit depth, where luma samples lie.
#[derive(Debug, Clone)]
struct PadVideo {
    info: gst_video::VideoInfo,
    depth: u32,
}

impl PadVideo {
    fn from_caps(caps: &gst::CapsRef) -> Result<Self, String> {
        let info = gst_video::VideoInfo::from_caps(caps)
            .map_err(|e| format!("caps {caps} are not raw video: {e}"))?;
        if !FORMATS.contains(&info.format()) {
            return Err(format!(
                "format {} is not supported",
                info.format().to_str()
            ));
        }
        let depth = info.format_info().depth()[0];
        Ok(Self { info, depth })
    }

    fn size(&self) -> (u32, u32) {
        (self.info.width(), self.info.height())
    }
}

/// One pad's luma plane, mapped for the backend for the time of one submission.
// Lives on the stack for one call; boxing the mapped frame would allocate per frame.
#[allow(clippy::large_enum_variant)]
enum MappedLuma<'a> {
    /// Mapped in host memory until the submission returns.
    Host {
        frame: gst_video::VideoFrameRef<&'a gst::BufferRef>,
        layout: SampleLayout,
    },
    /// Device memory, moved into the backend by the submission (`None` afterwards), with
    /// the frame's chroma components in the same memory (`None` for grey formats).
    Device(Option<DeviceLuma>, Option<[DeviceComponent; 2]>),
}

/// `(CUdeviceptr, pitch)` of a frame's planes 0..3 in device memory (`(0, 0)` past the
/// format's planes).
type DevicePlanes = [(u64, usize); 3];

/// Bytes of one sample of an advertised format: 1 up to 8 bits, else a 2-byte word.
fn sample_bytes(finfo: &gst_video::VideoFormatInfo) -> usize {
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
fn component_offset(finfo: &gst_video::VideoFormatInfo, c: usize) -> usize {
    let plane = finfo.plane()[c];
    let key = |k: usize| (finfo.poffset()[k], k);
    let rank = (0..finfo.n_components() as usize)
        .filter(|&k| k != c && finfo.plane()[k] == plane && key(k) < key(c))
        .count();
    rank * sample_bytes(finfo)
}

/// Scoring threads for the `threads` property's value: 0 means one per core.
fn pool_threads(threads: u32) -> usize {
    match threads as usize {
        0 => cpu::threads_per_core(),
        n => n,
    }
}

/// Where chroma component `c` (1: Cb, 2: Cr) of a `w` x `h` frame of format `finfo` lies:
/// `(plane, (width, height), pixel_stride, offset, layout)` with samples raised to `bpc`;
/// `offset` is in bytes ([`component_offset`]).
fn component_geometry(
    finfo: &gst_video::VideoFormatInfo,
    (w, h): (u32, u32),
    c: usize,
    bpc: u32,
) -> (usize, (usize, usize), usize, usize, SampleLayout) {
    let bytes = sample_bytes(finfo);
    let depth = finfo.depth()[c];
    let layout = SampleLayout {
        bytes,
        down: finfo.shift()[c],
        depth,
        up: bpc.saturating_sub(depth),
    };
    (
        finfo.plane()[c] as usize,
        (
            finfo.scale_width(c as u8, w) as usize,
            finfo.scale_height(c as u8, h) as usize,
        ),
        finfo.pixel_stride()[c].max(0) as usize,
        component_offset(finfo, c),
        layout,
    )
}

/// The Cb and Cr components of a frame in device memory whose planes 1 and 2 start at
/// `planes` (`(ptr, pitch)`), or `None` for formats without chroma.
fn device_components(
    finfo: &gst_video::VideoFormatInfo,
    size: (u32, u32),
    bpc: u32,
    planes: [(u64, usize); 2],
    context: usize,
) -> Option<[DeviceComponent; 2]> {
    if finfo.n_components() < 3 {
        return None;
    }
    let comp = |c: usize| -> Option<DeviceComponent> {
        let (plane, (width, height), pixel_stride, offset, layout) =
            component_geometry(finfo, size, c, bpc);
        let (ptr, pitch) = *planes.get(plane.checked_sub(1)?)?;
        (ptr != 0 && pixel_stride >= layout.bytes).then_some(DeviceComponent {
            ptr,
            pitch,
            pixel_stride,
            offset,
            width,
            height,
            layout,
            context,
        })
    };
    Some([comp(1)?, comp(2)?])
}

impl MappedLuma<'_> {
    /// The backend's view of the plane.
    fn input(&mut self) -> Result<LumaInput<'_>, String> {
        match self {
            MappedLuma::Host { frame, layout } => host_luma(frame, *layout),
            MappedLuma::Device(d, _) => take_device(d),
        }
    }

    /// The backend's view of the luma plane and, when `chroma`, of the Cb and Cr components
    /// (`None` for formats without chroma).
    ///
    /// Errors: as [`MappedLuma::input`] and [`MappedLuma::components`].
    #[allow(clippy::type_complexity)]
    fn inputs(
        &mut self,
        bpc: u32,
        chroma: bool,
    ) -> Result<(LumaInput<'_>, Option<[ComponentInput<'_>; 2]>), String> {
        match self {
            MappedLuma::Host { frame, layout } => {
                let c = if chroma {
                    host_components(frame, bpc)?
                } else {
                    None
                };
                Ok((host_luma(frame, *layout)?, c))
            }
            MappedLuma::Device(d, c) => {
                let c = c.filter(|_| chroma).map(|c| c.map(ComponentInput::Device));
                Ok((take_device(d)?, c))
            }
        }
    }
}

/// The luma plane of a host-mapped frame.
fn host_luma<'b>(
    frame: &'b gst_video::VideoFrameRef<&gst::BufferRef>,
    layout: SampleLayout,
) -> Result<LumaInput<'b>, String> {
    let (w, h) = (frame.width() as usize, frame.height() as usize);
    let stride = frame.plane_stride()[0] as usize;
    let data = frame
        .plane_data(0)
        .map_err(|e| format!("cannot read the luma plane: {e}"))?;
    HostLuma::new(data, stride, w, h, layout)
        .map(LumaInput::Host)
        .ok_or_else(|| {
            format!(
                "luma plane holds {} bytes, fewer than {w}x{h} samples at stride {stride}",
                data.len()
            )
        })
}

/// Moves a device plane out of its mapping (once).
fn take_device(d: &mut Option<DeviceLuma>) -> Result<LumaInput<'static>, String> {
    d.take()
        .map(LumaInput::Device)
        .ok_or_else(|| "internal: device plane submitted twice".into())
}

/// The Cb and Cr components of a host-mapped frame at `bpc` bits (lower-depth streams
/// shifted up, as their luma); `Ok(None)` for formats without chroma (GRAY8).
///
/// Errors: a text when a component does not fit the mapped plane.
fn host_components<'b>(
    frame: &'b gst_video::VideoFrameRef<&gst::BufferRef>,
    bpc: u32,
) -> Result<Option<[ComponentInput<'b>; 2]>, String> {
    let finfo = frame.format_info();
    if finfo.n_components() < 3 {
        return Ok(None);
    }
    let comp = |c: usize| -> Result<ComponentInput<'b>, String> {
        let (plane, (cw, ch), pixel_stride, offset, layout) =
            component_geometry(&finfo, (frame.width(), frame.height()), c, bpc);
        let stride = frame.plane_stride().get(plane).copied().unwrap_or(0).max(0) as usize;
        let data = frame
            .plane_data(plane as u32)
            .map_err(|e| format!("cannot read chroma plane {plane}: {e}"))?;
        HostComponent::new(data, stride, pixel_stride, offset, (cw, ch), layout)
            .map(ComponentInput::Host)
            .ok_or_else(|| {
                format!(
                    "chroma plane {plane} holds {} bytes, fewer than {cw}x{ch} samples at stride {stride}",
                    data.len()
                )
            })
    };
    Ok(Some([comp(1)?, comp(2)?]))
}

impl MappedLuma<'_> {
    /// The Cb and Cr components of the frame at `bpc` bits, in host or device memory.
    /// `Ok(None)` for formats without chroma (GRAY8).
    ///
    /// Errors: a text when a component does not fit the mapped plane.
    fn components(&self, bpc: u32) -> Result<Option<[ComponentInput<'_>; 2]>, String> {
        match self {
            MappedLuma::Device(_, c) => Ok(c.map(|c| c.map(ComponentInput::Device))),
            MappedLuma::Host { frame, .. } => host_components(frame, bpc),
        }
    }

    /// Packs the Cb and Cr components of a host-mapped frame into `out` at `bpc` bits (for
    /// the CPU backend). Returns their size, or `None` when the format has no chroma.
    ///
    /// Errors: as [`MappedLuma::components`]; device memory (the CPU backend maps frames in
    /// host memory).
    fn pack_chroma(
        &self,
        bpc: u32,
        out: &mut [Vec<u16>; 2],
    ) -> Result<Option<(usize, usize)>, String> {
        let Some(comps) = self.components(bpc)? else {
            return Ok(None);
        };
        let mut size = (0, 0);
        for (comp, dst) in comps.iter().zip(out.iter_mut()) {
            let ComponentInput::Host(h) = comp else {
                return Err("internal: device chroma given to the CPU backend".into());
            };
            h.to_packed(dst);
            size = (h.width, h.height);
        }
        Ok(Some(size))
    }
}

/// What the backends need to know of the frames' format besides the luma geometry.
#[derive(Debug, Clone)]
struct FrameFormat {
    /// Chroma plane size when both pads' formats have chroma of one size.
    chroma: Option<(usize, usize)>,
    /// Each pad's format name and chroma size (`None`: no chroma).
    pads: [(String, Option<(usize, usize)>); 2],
    /// SSIMULACRA2's YUV -> RGB conversion, from the reference pad's colorimetry.
    colour: YuvToRgb,
}

impl FrameFormat {
    fn of(reference: &PadVideo, distorted: &PadVideo) -> Self {
        let chroma_of = |v: &PadVideo| {
            let f = v.info.format_info();
            (f.n_components() >= 3).then(|| {
                (
                    f.scale_width(1, v.info.width()) as usize,
                    f.scale_height(1, v.info.height()) as usize,
                )
            })
        };
        let (rc, dc) = (chroma_of(reference), chroma_of(distorted));
        let name = |v: &PadVideo| v.info.format().to_str().to_string();
        Self {
            chroma: rc.filter(|_| rc == dc),
            pads: [(name(reference), rc), (name(distorted), dc)],
            colour: yuv_to_rgb(&reference.info),
        }
    }

    /// Why the metrics of `features` that read chroma cannot compare these pads' frames:
    /// chroma of different sizes (`psnr_cb`/`psnr_cr`, SSIMULACRA2), or colour against grey
    /// (SSIMULACRA2; PSNR then reports `psnr_y` only).
    fn chroma_mismatch(&self, features: &FeatureSet) -> Option<String> {
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
        match (rc, dc) {
            (Some(a), Some(b)) if a != b && features.reads_chroma() => Some(format!(
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
fn yuv_to_rgb(info: &gst_video::VideoInfo) -> YuvToRgb {
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

/// Why a pair could not be pushed.
enum PairError {
    /// Mapping or reading a buffer failed.
    Map(String),
    /// The backend failed.
    Engine(EngineError),
}

/// Per-stream state, created at READY->PAUSED and dropped at PAUSED->READY.
#[derive(Default)]
struct State {
    reference: Option<PadVideo>,
    distorted: Option<PadVideo>,
    scorer: Option<Scorer<Tag>>,
    /// Geometry the scorer's backend was made for: (width, height, bpc).
    geometry: Option<(u32, u32, u32)>,
    log: Option<LogWriter>,
    /// How each pad's frames reached the backend ([0]: reference, [1]: distorted).
    paths: [BTreeSet<InputPath>; 2],
    /// The driver refused to import a DMABuf: read DMABufs back from now on.
    dmabuf_refused: bool,
    /// Packed Cb/Cr of the reference ([0]) and distorted ([1]) frame, for `psnr_cb`/`psnr_cr`.
    chroma: [[Vec<u16>; 2]; 2],
    unpaired_reference: u64,
    unpaired_distorted: u64,
    started: Option<Instant>,
    finished: bool,
}

/// Loaded at NULL->READY, dropped at READY->NULL: the model and, for the CUDA backend, the
/// device with its context and kernel modules.
struct Prepared {
    /// The `model` list (the first one's score is `vmaf`).
    models: Arc<[NamedModel]>,
    /// The `features` property, parsed.
    features: FeatureSet,
    gpu: Option<Arc<GpuDevice>>,
    /// The CPU backend's threads (`threads` property), `None` for one thread (scoring in the
    /// streaming or live scoring thread) and with `backend=cuda`; joined when dropped.
    cpu_pool: Option<Arc<CpuPool>>,
}

impl Prepared {
    /// The smallest frame the models' features accept (VMAF's filters: the largest of their
    /// minimums), and each extra feature's own minimum.
    fn minimums(&self) -> ((usize, usize), Vec<(&'static str, (usize, usize))>) {
        let mut vmaf = (1, 1);
        for m in self.models.iter() {
            for i in m.model.instances(false).unwrap_or_default() {
                let (w, h) = i.min_size();
                vmaf = (vmaf.0.max(w), vmaf.1.max(h));
            }
        }
        let extras = self
            .features
            .iter()
            .filter_map(|f| {
                let i = f.configure(&crate::features::Options::new(), false).ok()?;
                Some((f.name(), i.min_size()))
            })
            .collect();
        (vmaf, extras)
    }
}

pub struct VmafCompare {
    reference_pad: gst_base::AggregatorPad,
    distorted_pad: gst_base::AggregatorPad,
    settings: Mutex<Settings>,
    prepared: Mutex<Option<Prepared>>,
    state: Mutex<State>,
    monitor: monitor::Monitor,
    /// The `GstCudaContext` shared with CUDA neighbours (`gst.cuda.context`), from NULL->READY
    /// to READY->NULL: the pipeline's when one was offered, else one wrapping the element's
    /// own (primary) context.
    cuda_context: Mutex<Option<gst::Object>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A GAP buffer carries no picture to score (the aggregator turns GAP events into empty
/// buffers with this flag).
fn is_gap(buffer: &gst::BufferRef) -> bool {
    buffer.flags().contains(gst::BufferFlags::GAP)
}

#[glib::object_subclass]
impl ObjectSubclass for VmafCompare {
    const NAME: &'static str = "GstVmafCompare";
    type Type = super::VmafCompare;
    type ParentType = gst_base::Aggregator;

    fn with_class(klass: &Self::Class) -> Self {
        let make = |name: &str| {
            let templ = klass.pad_template(name);
            match templ {
                Some(templ) => gst::PadBuilder::<gst_base::AggregatorPad>::from_template(&templ)
                    .name(name)
                    .build(),
                None => gst::PadBuilder::<gst_base::AggregatorPad>::new(gst::PadDirection::Sink)
                    .name(name)
                    .build(),
            }
        };
        Self {
            reference_pad: make("reference"),
            distorted_pad: make("distorted"),
            settings: Mutex::new(Settings::default()),
            prepared: Mutex::new(None),
            state: Mutex::new(State::default()),
            monitor: monitor::Monitor::default(),
            cuda_context: Mutex::new(None),
        }
    }
}

impl ObjectImpl for VmafCompare {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecString::builder("model")
                    .nick("Model")
                    .blurb(
                        "VMAF model(s), comma-separated, scored on the same features in one pass: \
                         a built-in name (vmaf_v0.6.1, vmaf_v0.6.1neg, vmaf_4k_v0.6.1, \
                         vmaf_b_v0.6.3 with its bootstrap interval) or the path of a libvmaf \
                         JSON model, each optionally followed by libvmaf's options \
                         ':enable_transform' (the phone model) and ':name=NAME'. The first \
                         model's score is 'vmaf'; the others are named by name= or their \
                         model name. Loaded at NULL->READY",
                    )
                    .default_value(Some(DEFAULT_MODEL))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("features")
                    .nick("Features")
                    .blurb(
                        "Extra metrics beside VMAF, comma-separated: psnr (psnr_y, psnr_cb, \
                         psnr_cr: libvmaf's integer PSNR), float_ssim, float_ms_ssim \
                         (libvmaf's; frames of at least 176x176), ssimulacra2 (on RGB converted \
                         with the reference caps' colorimetry, named in the log). Reported in \
                         the frame message, the buffer meta, the summary and the log under \
                         these names; computed by the selected backend (GPU or CPU). Metrics \
                         that read chroma need the same chroma subsampling on both pads. \
                         Empty: VMAF's features only",
                    )
                    .default_value(Some(""))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("backend", VmafBackend::Auto)
                    .nick("Backend")
                    .blurb(
                        "Where features are computed: auto (CUDA if usable, else CPU with a warning), \
                         cpu, or cuda (error at NULL->READY if no GPU is usable)",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("subsample")
                    .nick("Subsample")
                    .blurb(
                        "Score every N-th frame (1 = every frame), as libvmaf's --subsample; \
                         motion is still computed on every frame",
                    )
                    .minimum(1)
                    .maximum(MAX_SUBSAMPLE)
                    .default_value(DEFAULT_SUBSAMPLE)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("results-location")
                    .nick("Results location")
                    .blurb(
                        "File to write the per-frame and pooled log to, in libvmaf's layout \
                         (see results-format); opened at READY->PAUSED. Unset: no file",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("results-format", ResultsFormat::Json)
                    .nick("Results format")
                    .blurb("Format of the results-location log: json, xml or csv (libvmaf layouts)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("device-id")
                    .nick("Device ID")
                    .blurb("CUDA device ordinal used by the cuda (and auto) backend")
                    .default_value(DEFAULT_DEVICE_ID)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("threads")
                    .nick("CPU threads")
                    .blurb(
                        "Threads of the CPU backend (backend=cpu, or auto without a usable GPU): \
                         0 = one per core (default), 1 = score in the streaming thread. Frames \
                         are scored in parallel on the element's own pool, started at \
                         NULL->READY (and again at READY->PAUSED when changed) and joined at \
                         READY->NULL; the scores are the same for any value",
                    )
                    .maximum(MAX_THREADS)
                    .default_value(DEFAULT_THREADS)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("frame-message")
                    .nick("Frame message")
                    .blurb(
                        "Post a 'vmafcompare-frame' element message for every scored frame \
                         (the summary 'vmafcompare-summary' is always posted at EOS)",
                    )
                    .default_value(true)
                    .mutable_playing()
                    .build(),
            ];
            props.extend(monitor::properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if self.monitor.set_property(pspec.name(), value) {
            return;
        }
        let mut s = lock(&self.settings);
        match pspec.name() {
            "model" => {
                s.model = value
                    .get::<Option<String>>()
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| DEFAULT_MODEL.to_owned())
            }
            "features" => {
                s.features = value
                    .get::<Option<String>>()
                    .ok()
                    .flatten()
                    .unwrap_or_default()
            }
            "backend" => s.backend = value.get().unwrap_or_default(),
            "subsample" => s.subsample = value.get::<u32>().unwrap_or(DEFAULT_SUBSAMPLE).max(1),
            "results-location" => {
                s.results_location = value
                    .get::<Option<String>>()
                    .ok()
                    .flatten()
                    .filter(|p| !p.is_empty())
            }
            "results-format" => s.results_format = value.get().unwrap_or_default(),
            "frame-message" => s.frame_message = value.get().unwrap_or(true),
            "device-id" => s.device_id = value.get().unwrap_or(DEFAULT_DEVICE_ID),
            "threads" => s.threads = value.get().unwrap_or(DEFAULT_THREADS),
            other => gst::warning!(CAT, imp = self, "unknown property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.monitor.property(pspec.name()) {
            return v;
        }
        let s = lock(&self.settings);
        match pspec.name() {
            "model" => s.model.to_value(),
            "features" => s.features.to_value(),
            "backend" => s.backend.to_value(),
            "subsample" => s.subsample.to_value(),
            "results-location" => s.results_location.to_value(),
            "results-format" => s.results_format.to_value(),
            "frame-message" => s.frame_message.to_value(),
            "device-id" => s.device_id.to_value(),
            "threads" => s.threads.to_value(),
            _ => glib::Value::from_type(pspec.value_type()),
        }
    }

    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        for pad in [&self.reference_pad, &self.distorted_pad] {
            if let Err(e) = obj.add_pad(pad) {
                gst::error!(CAT, imp = self, "cannot add pad {}: {e}", pad.name());
            }
        }
    }
}

impl GstObjectImpl for VmafCompare {}

impl ElementImpl for VmafCompare {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "VMAF compare",
                "Filter/Analyzer/Video",
                "Scores the distorted stream against the reference stream with VMAF (libvmaf's \
                 integer features and models), posting per-frame and summary messages and \
                 attaching the scores to each output buffer",
                "vmafcompare developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            // CUDA memory first (read in place), then DMABuf (imported or read back), then
            // system memory: `nvh264dec ! vmafcompare` negotiates CUDA memory unasked.
            let with = |feature: Option<&str>| {
                let b = gst_video::VideoCapsBuilder::new().format_list(FORMATS.iter().copied());
                match feature {
                    Some(f) => b.features([f]).build(),
                    None => b.build(),
                }
            };
            let mut caps = with(Some(CAPS_FEATURE_CUDA_MEMORY));
            {
                let c = caps.make_mut();
                c.append(with(Some(gst_allocators::CAPS_FEATURE_MEMORY_DMABUF)));
                c.append(with(None));
            }
            let mut out = Vec::new();
            for (name, dir) in [
                ("reference", gst::PadDirection::Sink),
                ("distorted", gst::PadDirection::Sink),
                ("src", gst::PadDirection::Src),
            ] {
                let templ = if dir == gst::PadDirection::Sink {
                    gst::PadTemplate::with_gtype(
                        name,
                        dir,
                        gst::PadPresence::Always,
                        &caps,
                        gst_base::AggregatorPad::static_type(),
                    )
                } else {
                    gst::PadTemplate::new(name, dir, gst::PadPresence::Always, &caps)
                };
                match templ {
                    Ok(t) => out.push(t),
                    Err(e) => gst::error!(CAT, "cannot make pad template {name}: {e}"),
                }
            }
            out
        });
        TEMPLATES.as_ref()
    }

    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        if transition == gst::StateChange::NullToReady {
            self.prepare()?;
        }
        let ret = self.parent_change_state(transition)?;
        if transition == gst::StateChange::ReadyToNull {
            *lock(&self.prepared) = None;
            *lock(&self.cuda_context) = None;
        }
        Ok(ret)
    }

    fn set_context(&self, context: &gst::Context) {
        if context.context_type() == CONTEXT_TYPE {
            if let Some(lib) = gst_cuda::library() {
                let device_id = lock(&self.settings).device_id as i32;
                let element = self.obj().upcast_ref::<gst::Element>().clone();
                let mut slot = lock(&self.cuda_context).take();
                lib.handle_set_context(&element, context, device_id, &mut slot);
                *lock(&self.cuda_context) = slot;
            }
        }
        self.parent_set_context(context)
    }
}

impl VmafCompare {
    /// NULL->READY: load the model and choose the backend.
    fn prepare(&self) -> Result<(), gst::StateChangeError> {
        let settings = lock(&self.settings).clone();
        let features = match FeatureSet::parse(&settings.features) {
            Ok(f) => f,
            Err(e) => {
                gst::element_imp_error!(
                    self,
                    gst::LibraryError::Settings,
                    ("Invalid features: {}", e)
                );
                return Err(gst::StateChangeError);
            }
        };
        let models: Arc<[NamedModel]> = match NamedModel::load_list(&settings.model) {
            Ok(m) => m.into(),
            Err(e) => {
                gst::element_imp_error!(
                    self,
                    gst::LibraryError::Settings,
                    ("Cannot load VMAF model: {}", e)
                );
                return Err(gst::StateChangeError);
            }
        };
        for m in models.iter() {
            gst::debug!(
                CAT,
                imp = self,
                "model {} loaded as '{}': {} features, {} support vectors, {} bootstrap members, transform {}",
                m.model.origin,
                m.name,
                m.model.features.len(),
                m.model.support_vectors(),
                m.bootstrap.len(),
                if m.model.transform.enabled { "on" } else { "off" }
            );
        }
        if let Err(e) = ScorePlan::new(models.clone(), features.clone(), true) {
            gst::element_imp_error!(
                self,
                gst::LibraryError::Settings,
                ("Cannot score these models and features together: {}", e)
            );
            return Err(gst::StateChangeError);
        }
        if let Err(e) = ScorePlan::new(models.clone(), features.clone(), true) {
            gst::element_imp_error!(
                self,
                gst::LibraryError::Settings,
                ("Cannot score these models and features together: {}", e)
            );
            return Err(gst::StateChangeError);
        }
        let gpu = match settings.backend {
            VmafBackend::Cpu => None,
            backend => match GpuDevice::open(settings.device_id as usize) {
                Ok(dev) => {
                    gst::info!(
                        CAT,
                        imp = self,
                        "CUDA device {}: {}",
                        settings.device_id,
                        dev.name()
                    );
                    Some(Arc::new(dev))
                }
                Err(e) if backend == VmafBackend::Cuda => {
                    gst::element_imp_error!(
                        self,
                        gst::LibraryError::Init,
                        ("backend=cuda: no usable GPU: {}", e),
                        ["Use backend=cpu, or backend=auto to fall back to the CPU."]
                    );
                    return Err(gst::StateChangeError);
                }
                Err(e) => {
                    gst::element_imp_warning!(
                        self,
                        gst::LibraryError::Init,
                        ("No usable GPU ({}): scoring on the CPU", e),
                        ["Set backend=cpu to silence this warning."]
                    );
                    None
                }
            },
        };
        if let Some(dev) = gpu.as_deref() {
            self.share_cuda_context(dev);
        }
        let cpu_pool = match settings.backend {
            VmafBackend::Cuda => None,
            _ => match self.cpu_pool(settings.threads) {
                Ok(pool) => pool,
                Err(e) => {
                    gst::element_imp_error!(
                        self,
                        gst::ResourceError::Failed,
                        ("{}", e),
                        ["Set a smaller threads value."]
                    );
                    return Err(gst::StateChangeError);
                }
            },
        };
        *lock(&self.prepared) = Some(Prepared {
            models,
            features,
            gpu,
            cpu_pool,
        });
        Ok(())
    }

    /// NULL->READY with a GPU: finds the pipeline's `gst.cuda.context` (neighbours' answers
    /// to a context query, then the application or bin through a need-context message) or,
    /// when there is none, offers one wrapping this element's primary context, so that CUDA
    /// decoders and `cudaupload` allocate in the context the kernels run in (zero copy).
    /// Without `libgstcuda-1.0` there is nothing to share and CUDA memory cannot reach us.
    fn share_cuda_context(&self, dev: &GpuDevice) {
        let Some(lib) = gst_cuda::library() else {
            gst::debug!(
                CAT,
                imp = self,
                "GStreamer CUDA library not available ({}): system memory and DMABuf only",
                gst_cuda::load_error().unwrap_or("unknown reason")
            );
            return;
        };
        if !lib.load_driver() {
            gst::debug!(CAT, imp = self, "gst_cuda_load_library failed");
            return;
        }
        if lock(&self.cuda_context).is_some() {
            return;
        }
        let obj = self.obj();
        let element = obj.upcast_ref::<gst::Element>().clone();
        let device_id = dev.ordinal() as i32;
        let pads = [
            obj.src_pad().upcast_ref::<gst::Pad>().clone(),
            self.reference_pad.clone().upcast(),
            self.distorted_pad.clone().upcast(),
        ];
        for pad in pads {
            let mut q = gst::query::Context::new(CONTEXT_TYPE);
            if pad.peer_query(&mut q) {
                if let Some(c) = q.context_owned() {
                    let mut slot = None;
                    lib.handle_set_context(&element, &c, device_id, &mut slot);
                    if slot.is_some() {
                        gst::debug!(CAT, imp = self, "CUDA context from {}'s peer", pad.name());
                        *lock(&self.cuda_context) = slot;
                        return;
                    }
                }
            }
        }
        // The application or a bin may answer synchronously through set_context().
        let _ = obj.post_message(
            gst::message::NeedContext::builder(CONTEXT_TYPE)
                .src(&*obj)
                .build(),
        );
        if lock(&self.cuda_context).is_some() {
            gst::debug!(CAT, imp = self, "CUDA context from the application or bin");
            return;
        }
        let ctx = dev.context();
        let Some(wrapped) = lib.wrap_context(ctx.cu_ctx() as usize, ctx.cu_device(), ctx.clone())
        else {
            gst::warning!(CAT, imp = self, "cannot wrap the CUDA context for sharing");
            return;
        };
        let Some(context) = lib.new_context(&wrapped) else {
            return;
        };
        *lock(&self.cuda_context) = Some(wrapped);
        gst::debug!(
            CAT,
            imp = self,
            "sharing the element's CUDA context (device {device_id})"
        );
        let _ = obj.post_message(
            gst::message::HaveContext::builder(context)
                .src(&*obj)
                .build(),
        );
    }

    /// Answers a `gst.cuda.context` query with the shared context.
    fn answer_context_query(&self, query: &mut gst::QueryRef) -> bool {
        let gst::QueryViewMut::Context(q) = query.view_mut() else {
            return false;
        };
        if q.context_type() != CONTEXT_TYPE {
            return false;
        }
        let (Some(lib), Some(ctx)) = (gst_cuda::library(), lock(&self.cuda_context).clone()) else {
            return false;
        };
        let element = self.obj().upcast_ref::<gst::Element>().clone();
        lib.handle_context_query(&element, query, &ctx)
    }

    fn other_pad(&self, pad: &gst_base::AggregatorPad) -> &'static str {
        if pad == &self.reference_pad {
            "distorted"
        } else {
            "reference"
        }
    }

    /// A caps event on a sink pad: check the format and that both pads agree on the size.
    fn handle_caps(&self, pad: &gst_base::AggregatorPad, caps: &gst::CapsRef) -> bool {
        let video = match PadVideo::from_caps(caps) {
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
        let (w, h) = video.size();
        let (vmaf_min, extra_mins) = lock(&self.prepared)
            .as_ref()
            .map(Prepared::minimums)
            .unwrap_or_default();
        if (w as usize) < vmaf_min.0 || (h as usize) < vmaf_min.1 {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                (
                    "{} pad: {}x{} is smaller than the {}x{} minimum that VMAF's filters need",
                    pad.name(),
                    w,
                    h,
                    vmaf_min.0,
                    vmaf_min.1
                )
            );
            return false;
        }
        if let Some((name, (mw, mh))) = extra_mins
            .into_iter()
            .find(|(_, (mw, mh))| (w as usize) < *mw || (h as usize) < *mh)
        {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                (
                    "{} pad: {}x{} is smaller than the {}x{} minimum of {}",
                    pad.name(),
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
            );
            return false;
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
        let mut state = lock(&self.state);
        gst::debug!(
            CAT,
            imp = self,
            "{} caps {} (other pad: {})",
            pad.name(),
            caps,
            self.other_pad(pad)
        );
        if pad == &self.reference_pad {
            state.reference = Some(video);
        } else {
            state.distorted = Some(video.clone());
            let fps = video.info.fps();
            if fps.numer() > 0 && fps.denom() > 0 {
                // One frame is held back until the next arrives (motion2 needs it).
                let frame = gst::ClockTime::SECOND
                    .mul_div_floor(fps.denom() as u64, fps.numer() as u64)
                    .unwrap_or(gst::ClockTime::ZERO);
                drop(state);
                self.monitor_caps(frame);
            }
        }
        true
    }

    fn running_time(pad: &gst_base::AggregatorPad, buffer: &gst::Buffer) -> Option<gst::ClockTime> {
        let segment = pad.segment();
        let segment = segment.downcast_ref::<gst::ClockTime>()?;
        segment.to_running_time(buffer.pts()?)
    }

    /// Maps the luma plane of `buffer` for the backend: in place on the GPU when it is CUDA
    /// memory (or an importable DMABuf) and the backend reads device memory, else mapped in
    /// host memory. Returns the mapping and the path taken; the first use of each path on a
    /// pad is logged at debug level.
    ///
    /// Errors: a text naming what failed (the map, the layout).
    fn map_luma<'a>(
        &self,
        video: &PadVideo,
        buffer: &'a gst::Buffer,
        bpc: u32,
        gpu: Option<&GpuDevice>,
        state: &mut State,
    ) -> Result<(MappedLuma<'a>, InputPath), String> {
        let finfo = video.info.format_info();
        let bytes = sample_bytes(&finfo);
        if finfo.pixel_stride()[0] as usize != bytes || finfo.poffset()[0] != 0 {
            return Err(format!(
                "format {} has interleaved luma, which is not supported",
                video.info.format().to_str()
            ));
        }
        let layout = SampleLayout {
            bytes,
            down: finfo.shift()[0],
            depth: video.depth,
            up: bpc.saturating_sub(video.depth),
        };
        let (w, h) = (video.info.width() as usize, video.info.height() as usize);
        let single = buffer.n_memory() == 1;
        let mem = (buffer.n_memory() > 0).then(|| buffer.peek_memory(0));
        let lib = gst_cuda::library();
        let is_cuda = matches!((lib, mem), (Some(l), Some(m)) if single && l.is_cuda_memory(m));
        let dmabuf = mem.and_then(|m| m.downcast_memory_ref::<gst_allocators::DmaBufMemory>());
        if let (Some(dev), Some(lib)) = (gpu, lib.filter(|_| is_cuda)) {
            let plane = lib.map_device(buffer).map_err(|e| e.to_string())?;
            let own = dev.context().cu_ctx() as usize;
            let path = if plane.context == own {
                InputPath::Cuda
            } else {
                InputPath::CudaPeerCopy
            };
            let chroma = device_components(
                &finfo,
                (w as u32, h as u32),
                bpc,
                plane.chroma_planes,
                plane.context,
            );
            let luma = DeviceLuma {
                ptr: plane.ptr,
                pitch: plane.pitch,
                width: w,
                height: h,
                layout,
                context: plane.context,
                hold: Box::new(plane.mapping),
            };
            return Ok((MappedLuma::Device(Some(luma), chroma), path));
        }
        if let (Some(dev), Some(dm)) = (gpu, dmabuf.filter(|_| single && !state.dmabuf_refused)) {
            match self.import_dmabuf(dev, dm, buffer, &video.info) {
                Ok((planes, hold)) => {
                    let context = dev.context().cu_ctx() as usize;
                    let chroma = device_components(
                        &finfo,
                        (w as u32, h as u32),
                        bpc,
                        [planes[1], planes[2]],
                        context,
                    );
                    let luma = DeviceLuma {
                        ptr: planes[0].0,
                        pitch: planes[0].1,
                        width: w,
                        height: h,
                        layout,
                        context,
                        hold,
                    };
                    return Ok((
                        MappedLuma::Device(Some(luma), chroma),
                        InputPath::DmabufImport,
                    ));
                }
                Err(e) => {
                    state.dmabuf_refused = true;
                    gst::info!(
                        CAT,
                        imp = self,
                        "DMABuf import refused ({e}): reading DMABuf frames back through host memory"
                    );
                }
            }
        }
        let frame =
            gst_video::VideoFrameRef::from_buffer_ref_readable(buffer.as_ref(), &video.info)
                .map_err(|e| format!("cannot map buffer: {e}"))?;
        let path = if is_cuda {
            InputPath::CudaDownload
        } else if dmabuf.is_some() {
            InputPath::DmabufReadback
        } else {
            InputPath::System
        };
        Ok((MappedLuma::Host { frame, layout }, path))
    }

    /// Imports the DMABuf of a single-memory `buffer` into the GPU's context and locates its
    /// planes. Returns `(device pointer, pitch)` of planes 0..3 (`(0, 0)` past the format's
    /// planes) and the hold.
    fn import_dmabuf(
        &self,
        dev: &GpuDevice,
        mem: &gst_allocators::DmaBufMemoryRef,
        buffer: &gst::Buffer,
        info: &gst_video::VideoInfo,
    ) -> Result<(DevicePlanes, Box<dyn Send>), String> {
        let fd = mem.fd();
        if fd < 0 {
            return Err("DMABuf memory without a file descriptor".into());
        }
        // SAFETY: the memory owns `fd` and outlives this call (the buffer holds it).
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        // A dma-buf's size is what lseek to its end reports.
        let size = {
            let dup = fd.try_clone_to_owned().map_err(|e| e.to_string())?;
            let mut file = std::fs::File::from(dup);
            std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).map_err(|e| e.to_string())?
        };
        let imported = dev.import_dmabuf(fd, size).map_err(|e| e.to_string())?;
        let (offsets, strides): (Vec<usize>, Vec<usize>) =
            match buffer.meta::<gst_video::VideoMeta>() {
                Some(m) => (
                    m.offset().to_vec(),
                    m.stride().iter().map(|s| (*s).max(0) as usize).collect(),
                ),
                None => (
                    info.offset().to_vec(),
                    info.stride().iter().map(|s| (*s).max(0) as usize).collect(),
                ),
            };
        let finfo = info.format_info();
        let mut planes = [(0u64, 0usize); 3];
        for (p, slot) in planes.iter_mut().enumerate().take(info.n_planes() as usize) {
            let (Some(&offset), Some(&stride)) = (offsets.get(p), strides.get(p)) else {
                continue;
            };
            // The plane's rows and the bytes of its last row that carry samples.
            let comps: Vec<usize> = (0..finfo.n_components() as usize)
                .filter(|&c| finfo.plane()[c] as usize == p)
                .collect();
            let Some(&c) = comps.first() else { continue };
            let rows = finfo.scale_height(c as u8, info.height()) as usize;
            let bytes = sample_bytes(&finfo);
            let row = comps
                .iter()
                .map(|&c| {
                    let w = finfo.scale_width(c as u8, info.width()) as usize;
                    let pixel_stride = finfo.pixel_stride()[c].max(1) as usize;
                    w.checked_sub(1).map_or(0, |last| {
                        component_offset(&finfo, c) + last * pixel_stride + bytes
                    })
                })
                .max()
                .unwrap_or(0);
            let start = mem.offset() + offset;
            let needed = stride
                .checked_mul(rows.saturating_sub(1))
                .and_then(|n| n.checked_add(start))
                .and_then(|n| n.checked_add(row))
                .unwrap_or(usize::MAX);
            if needed > imported.len() {
                return Err(format!(
                    "DMABuf of {} bytes, {needed} needed for plane {p}",
                    imported.len()
                ));
            }
            *slot = (imported.ptr() + start as u64, stride);
        }
        Ok((planes, Box::new((imported, buffer.clone()))))
    }

    /// Makes (or remakes, after a size change) the scorer for the negotiated geometry.
    /// Returns frames completed by a geometry switch.
    fn ensure_scorer(&self, state: &mut State) -> Result<Vec<Scored<Tag>>, gst::FlowError> {
        let (Some(r), Some(d)) = (state.reference.as_ref(), state.distorted.as_ref()) else {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("buffers arrived before caps")
            );
            return Err(gst::FlowError::NotNegotiated);
        };
        let (w, h) = d.size();
        if r.size() != (w, h) {
            let (rw, rh) = r.size();
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("reference is {}x{} but distorted is {}x{}: both pads must carry the same width and height", rw, rh, w, h),
                ["Scale one stream (e.g. videoscale) so both have the same size."]
            );
            return Err(gst::FlowError::NotNegotiated);
        }
        let bpc = r.depth.max(d.depth);
        if state.geometry == Some((w, h, bpc)) && state.scorer.is_some() {
            return Ok(Vec::new());
        }
        let Some((models, features, gpu)) = lock(&self.prepared)
            .as_ref()
            .map(|p| (p.models.clone(), p.features.clone(), p.gpu.clone()))
        else {
            gst::element_imp_error!(self, gst::CoreError::StateChange, ("no model loaded"));
            return Err(gst::FlowError::Error);
        };
        let has_chroma = |v: &PadVideo| v.info.format_info().n_components() >= 3;
        let plan = match state.scorer.as_ref() {
            Some(s) => s.plan().clone(),
            None => match ScorePlan::new(models, features, has_chroma(r) && has_chroma(d)) {
                Ok(plan) => plan,
                Err(e) => {
                    gst::element_imp_error!(self, gst::LibraryError::Settings, ("{}", e));
                    return Err(gst::FlowError::Error);
                }
            },
        };
        let frame = FrameFormat::of(r, d);
        if let Some(why) = frame.chroma_mismatch(&plan.features) {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("{}", why),
                [
                    "Convert one stream to the other's format (videoconvert), or leave psnr and \
                     ssimulacra2 out of features."
                ]
            );
            return Err(gst::FlowError::NotNegotiated);
        }
        if plan.layout().has("ssimulacra2") {
            if let Some(log) = state.log.as_mut() {
                log.note("ssimulacra2_yuv_to_rgb", frame.colour.to_string());
            }
        }
        let backend = self.make_backend(gpu.as_deref(), &plan, (w, h, bpc), &frame)?;
        state.geometry = Some((w, h, bpc));
        let done = match state.scorer.as_mut() {
            Some(s) => s
                .replace_backend(backend)
                .map_err(|e| self.engine_failed(e))?,
            None => {
                let subsample = lock(&self.settings).subsample;
                state.scorer = Some(Scorer::with_plan(backend, plan, subsample));
                Vec::new()
            }
        };
        Ok(done)
    }

    /// The backend for one geometry: the GPU when the element holds one (with
    /// `backend=auto`, a GPU failure falls back to the CPU with a warning), else the CPU.
    fn make_backend(
        &self,
        gpu: Option<&GpuDevice>,
        plan: &ScorePlan,
        (w, h, bpc): (u32, u32, u32),
        frame: &FrameFormat,
    ) -> Result<Box<dyn Backend>, gst::FlowError> {
        let geometry = Geometry {
            chroma: frame.chroma.filter(|_| plan.chroma),
            colour: frame.colour,
            ..Geometry::luma(w as usize, h as usize, bpc)
        };
        if plan.layout().has("ssimulacra2") {
            gst::info!(
                CAT,
                imp = self,
                "ssimulacra2: YUV -> RGB with {}",
                frame.colour
            );
        }
        if let Some(dev) = gpu {
            match CudaBackend::new(dev, plan.layout(), geometry) {
                Ok(b) => {
                    gst::info!(CAT, imp = self, "scoring {w}x{h} at {bpc} bits on the GPU");
                    return Ok(Box::new(b));
                }
                Err(e) if lock(&self.settings).backend == VmafBackend::Cuda => {
                    gst::element_imp_error!(
                        self,
                        gst::ResourceError::Failed,
                        ("CUDA backend: {}", e)
                    );
                    return Err(gst::FlowError::Error);
                }
                Err(e) => gst::element_imp_warning!(
                    self,
                    gst::ResourceError::Failed,
                    ("CUDA backend failed ({}): scoring on the CPU", e)
                ),
            }
        }
        match self.cpu_backend(plan, geometry) {
            Ok(b) => {
                gst::info!(CAT, imp = self, "scoring {w}x{h} at {bpc} bits on the CPU");
                Ok(Box::new(b))
            }
            Err(e) => {
                gst::element_imp_error!(self, gst::StreamError::Format, ("{}", e));
                Err(gst::FlowError::NotNegotiated)
            }
        }
    }

    /// The CPU backend computing everything `plan` asks for, on the element's pool when
    /// it has one.
    fn cpu_backend(
        &self,
        plan: &ScorePlan,
        geometry: Geometry,
    ) -> Result<CpuBackend, crate::engine::FeatureError> {
        let pool = lock(&self.prepared)
            .as_ref()
            .and_then(|p| p.cpu_pool.clone());
        let b = CpuBackend::new(plan.layout(), geometry)?;
        Ok(match pool {
            Some(pool) => b.with_pool(pool),
            None => b,
        })
    }

    /// The CPU scoring pool for the `threads` property: `None` for one thread.
    ///
    /// Errors: the system refused a thread.
    fn cpu_pool(&self, threads: u32) -> Result<Option<Arc<CpuPool>>, cpu::PoolError> {
        let n = pool_threads(threads);
        if n <= 1 {
            return Ok(None);
        }
        let pool = CpuPool::new(n)?;
        gst::debug!(CAT, imp = self, "{n} CPU scoring threads");
        Ok(Some(Arc::new(pool)))
    }

    /// READY->PAUSED: a `threads` value changed in READY takes effect (the pool of
    /// NULL->READY is replaced).
    fn refresh_cpu_pool(&self) -> Result<(), gst::ErrorMessage> {
        let (threads, backend) = {
            let s = lock(&self.settings);
            (s.threads, s.backend)
        };
        let want = pool_threads(threads);
        let have = lock(&self.prepared)
            .as_ref()
            .map(|p| p.cpu_pool.as_ref().map_or(1, |p| p.threads()));
        if backend == VmafBackend::Cuda || have.is_none_or(|h| h == want) {
            return Ok(());
        }
        let pool = self
            .cpu_pool(threads)
            .map_err(|e| gst::error_msg!(gst::ResourceError::Failed, ["{}", e]))?;
        if let Some(p) = lock(&self.prepared).as_mut() {
            p.cpu_pool = pool;
        }
        Ok(())
    }

    /// Posts a scoring failure as an element error.
    fn engine_failed(&self, e: EngineError) -> gst::FlowError {
        gst::element_imp_error!(self, gst::StreamError::Failed, ("Scoring failed: {}", e));
        gst::FlowError::Error
    }

    /// Attaches meta, posts the frame message (and an alert when the window crosses the
    /// threshold), logs, and pushes one completed frame; in a live pipeline the buffer goes
    /// back to the scoring queue, which pushes it in order.
    fn emit(&self, scored: Scored<Tag>, post: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        let Scored { tag, scores, .. } = scored;
        let mut buffer = tag.buffer;
        let live = self.live_queue();
        let mut attached = None;
        if let Some(scores) = scores {
            let mut msg = Self::frame_message(&scores, &buffer, tag.running_time);
            let alert = self.monitor_frame(&mut msg);
            let structure = msg.to_structure();
            if live.is_none() {
                let buf = buffer.make_mut();
                match gst::meta::CustomMeta::add(buf, META_NAME) {
                    Ok(mut meta) => {
                        let s = meta.mut_structure();
                        for (name, value) in structure.iter() {
                            s.set_value(name, value.clone());
                        }
                    }
                    Err(e) => gst::warning!(CAT, imp = self, "cannot attach scores meta: {e}"),
                }
            }
            self.write_log(&scores)?;
            let obj = self.obj();
            if post {
                let m = gst::message::Element::builder(structure.clone())
                    .src(&*obj)
                    .build();
                let _ = obj.post_message(m);
            }
            if let Some(alert) = alert {
                let m = gst::message::Element::builder(gst::Structure::from(&alert))
                    .src(&*obj)
                    .build();
                let _ = obj.post_message(m);
            }
            attached = Some(structure);
        }
        if let Some(queue) = live {
            queue.complete(buffer, attached);
            return Ok(gst::FlowSuccess::Ok);
        }
        self.finish_output(buffer)
    }

    /// Pushes one output buffer: a GAP without a picture (the aggregator's form of a GAP
    /// event) leaves as a GAP event, in order: downstream elements cannot map an empty video
    /// buffer.
    fn finish_output(&self, buffer: gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
        if is_gap(&buffer) && buffer.size() == 0 {
            if let Some(pts) = buffer.pts() {
                let gap = gst::event::Gap::builder(pts)
                    .duration(buffer.duration())
                    .build();
                let _ = self.obj().src_pad().push_event(gap);
            }
            return Ok(gst::FlowSuccess::Ok);
        }
        self.obj().finish_buffer(buffer)
    }

    fn frame_message(
        scores: &FrameScores,
        buffer: &gst::Buffer,
        rt: Option<gst::ClockTime>,
    ) -> FrameMessage {
        FrameMessage {
            index: scores.index,
            pts: buffer.pts(),
            running_time: rt,
            duration: buffer.duration(),
            vmaf: scores.vmaf(),
            metrics: scores.iter().map(|(n, v)| (n.to_owned(), v)).collect(),
            skipped: 0,
            window: None,
        }
    }

    fn write_log(&self, scores: &FrameScores) -> Result<(), gst::FlowError> {
        let mut state = lock(&self.state);
        let (w, h) = state.geometry.map(|(w, h, _)| (w, h)).unwrap_or((0, 0));
        if let Some(log) = state.log.as_mut() {
            if let Err(e) = log.write_frame(scores, w, h) {
                state.log = None;
                drop(state);
                gst::element_imp_error!(self, gst::ResourceError::Write, ("{}", e));
                return Err(gst::FlowError::Error);
            }
        }
        Ok(())
    }

    fn emit_all(&self, items: Vec<Scored<Tag>>) -> Result<gst::FlowSuccess, gst::FlowError> {
        let post = lock(&self.settings).frame_message;
        let mut ret = Ok(gst::FlowSuccess::Ok);
        for item in items {
            ret = self.emit(item, post);
            if ret.is_err() {
                break;
            }
        }
        ret
    }

    /// Says once per pad how CUDA memory of another context reaches the element's device:
    /// at info level when it is copied on the device or peer-to-peer (peer access enabled),
    /// as an element warning when the two devices have no peer access and the driver stages
    /// every copy through host memory.
    fn report_peer_path(&self, pad: &str, dev: &GpuDevice, ptr: u64, context: usize) {
        let to = dev.ordinal();
        match dev.peer_access(ptr, context) {
            Ok(PeerAccess::SameDevice) => gst::info!(
                CAT,
                imp = self,
                "{pad}: CUDA memory of another context on device {to}, copied on the device"
            ),
            Ok(PeerAccess::Direct { from }) => gst::info!(
                CAT,
                imp = self,
                "{pad}: CUDA memory of device {from} copied peer-to-peer to device {to} \
                 (peer access enabled, no host round trip)"
            ),
            Ok(PeerAccess::Staged { from }) => gst::element_imp_warning!(
                self,
                gst::ResourceError::Settings,
                ("{pad}: frames in CUDA memory of device {from} reach device-id={to} through \
                     host memory: the two GPUs have no peer access. Scores are unaffected; \
                     for speed decode on device {to} or set device-id={from}")
            ),
            Err(e) => gst::element_imp_warning!(
                self,
                gst::ResourceError::Settings,
                ("{pad}: frames in CUDA memory of another device are copied by the driver; \
                     peer access could not be set up: {e}")
            ),
        }
    }

    /// Maps both planes (see [`Self::map_luma`]), records the paths taken and pushes the
    /// pair into the scorer. `gpu` is used only when the scorer's backend reads device memory.
    #[allow(clippy::too_many_arguments)]
    fn push_pair(
        &self,
        state: &mut State,
        (rv, reference): (&PadVideo, &gst::Buffer),
        (dv, distorted): (&PadVideo, &gst::Buffer),
        bpc: u32,
        gpu: Option<&GpuDevice>,
        tag: Tag,
    ) -> Result<Vec<Scored<Tag>>, PairError> {
        let gpu = gpu.filter(|_| state.scorer.as_ref().is_some_and(|s| s.reads_device()));
        let (mut rm, rp) = self
            .map_luma(rv, reference, bpc, gpu, state)
            .map_err(|e| PairError::Map(format!("reference: {e}")))?;
        let (mut dm, dp) = self
            .map_luma(dv, distorted, bpc, gpu, state)
            .map_err(|e| PairError::Map(format!("distorted: {e}")))?;
        for (i, (pad, path)) in [("reference", rp), ("distorted", dp)]
            .into_iter()
            .enumerate()
        {
            if state.paths[i].insert(path) {
                gst::debug!(
                    CAT,
                    imp = self,
                    "{pad} frames reach the backend via '{}'",
                    path.name()
                );
                let mapped = if i == 0 { &rm } else { &dm };
                if let (Some(dev), MappedLuma::Device(Some(d), _)) = (gpu, mapped) {
                    if path == InputPath::CudaPeerCopy {
                        self.report_peer_path(pad, dev, d.ptr, d.context);
                    }
                }
            }
        }
        let wants_chroma = state
            .scorer
            .as_ref()
            .is_some_and(|s| s.plan().layout().reads_chroma());
        let mut chroma = std::mem::take(&mut state.chroma);
        let result = self.push_mapped(
            state,
            (&mut rm, &mut dm),
            wants_chroma,
            bpc,
            &mut chroma,
            tag,
        );
        state.chroma = chroma;
        result
    }

    /// Pushes mapped planes (and, when `wants_chroma`, their chroma packed into `chroma`).
    fn push_mapped(
        &self,
        state: &mut State,
        (rm, dm): (&mut MappedLuma<'_>, &mut MappedLuma<'_>),
        wants_chroma: bool,
        bpc: u32,
        chroma: &mut [[Vec<u16>; 2]; 2],
        tag: Tag,
    ) -> Result<Vec<Scored<Tag>>, PairError> {
        let components = state.scorer.as_ref().is_some_and(|s| s.reads_components());
        if components {
            return self.push_components(state, (rm, dm), wants_chroma, bpc, tag);
        }
        let mut sizes = [None, None];
        if wants_chroma {
            let [rc, dc] = chroma;
            sizes[0] = rm
                .pack_chroma(bpc, rc)
                .map_err(|e| PairError::Map(format!("reference: {e}")))?;
            sizes[1] = dm
                .pack_chroma(bpc, dc)
                .map_err(|e| PairError::Map(format!("distorted: {e}")))?;
        }
        let pair = match sizes {
            [Some(rs), Some(ds)] if rs == ds => {
                fn plane(
                    v: &[u16],
                    (w, h): (usize, usize),
                    bpc: u32,
                ) -> Result<LumaPlane<'_>, PairError> {
                    LumaPlane::packed(v, w, h, bpc).ok_or_else(|| {
                        PairError::Map("internal: chroma plane smaller than its size".into())
                    })
                }
                Some(ChromaPair {
                    reference: [
                        plane(&chroma[0][0], rs, bpc)?,
                        plane(&chroma[0][1], rs, bpc)?,
                    ],
                    distorted: [
                        plane(&chroma[1][0], rs, bpc)?,
                        plane(&chroma[1][1], rs, bpc)?,
                    ],
                })
            }
            [None, None] if !wants_chroma => None,
            [rs, ds] => {
                let show = |s: Option<(usize, usize)>| {
                    s.map_or("none (no chroma)".to_owned(), |(w, h)| format!("{w}x{h}"))
                };
                return Err(PairError::Map(format!(
                    "psnr_cb/psnr_cr need chroma planes of one size on both pads: reference \
                     chroma is {}, distorted chroma is {}",
                    show(rs),
                    show(ds)
                )));
            }
        };
        let r = rm
            .input()
            .map_err(|e| PairError::Map(format!("reference: {e}")))?;
        let d = dm
            .input()
            .map_err(|e| PairError::Map(format!("distorted: {e}")))?;
        let scorer = state
            .scorer
            .as_mut()
            .ok_or_else(|| PairError::Map("internal: no scorer".into()))?;
        scorer
            .push_frame(r, d, pair, tag)
            .map_err(PairError::Engine)
    }

    /// Pushes mapped planes to a backend that unpacks chroma itself (the CUDA backend), with
    /// the chroma components in the buffers' own layouts when `wants_chroma`.
    fn push_components(
        &self,
        state: &mut State,
        (rm, dm): (&mut MappedLuma<'_>, &mut MappedLuma<'_>),
        wants_chroma: bool,
        bpc: u32,
        tag: Tag,
    ) -> Result<Vec<Scored<Tag>>, PairError> {
        let (r, rc) = rm
            .inputs(bpc, wants_chroma)
            .map_err(|e| PairError::Map(format!("reference: {e}")))?;
        let (d, dc) = dm
            .inputs(bpc, wants_chroma)
            .map_err(|e| PairError::Map(format!("distorted: {e}")))?;
        let chroma = match (rc, dc) {
            (Some(reference), Some(distorted)) if reference[0].size() == distorted[0].size() => {
                Some(ChromaInput {
                    reference,
                    distorted,
                })
            }
            (None, None) => None,
            (rc, dc) => {
                let show = |c: Option<[ComponentInput<'_>; 2]>| {
                    c.map_or("none (no chroma)".to_owned(), |c| {
                        let (w, h) = c[0].size();
                        format!("{w}x{h}")
                    })
                };
                return Err(PairError::Map(format!(
                    "the metrics that read chroma need chroma planes of one size on both pads: \
                     reference chroma is {}, distorted chroma is {}",
                    show(rc),
                    show(dc)
                )));
            }
        };
        let scorer = state
            .scorer
            .as_mut()
            .ok_or_else(|| PairError::Map("internal: no scorer".into()))?;
        scorer
            .push_components(r, d, chroma, tag)
            .map_err(PairError::Engine)
    }

    fn score_pair(
        &self,
        reference: gst::Buffer,
        distorted: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let running_time = Self::running_time(&self.distorted_pad, &distorted);
        let mut state = lock(&self.state);
        let mismatch = matches!(
            (state.reference.as_ref(), state.distorted.as_ref()),
            (Some(r), Some(d)) if r.size() != d.size()
        );
        if mismatch {
            // The pads disagree: ensure_scorer ends the stream with an error. Frames still in
            // flight (CPU pool, GPU) are completed and sent first, as a synchronous backend
            // would have sent them before this pair.
            let settled = state.scorer.as_mut().map(|s| s.settle());
            if let Some(Ok(done)) = settled {
                drop(state);
                let _ = self.emit_all(done);
                state = lock(&self.state);
            }
        }
        let switched = self.ensure_scorer(&mut state)?;
        let (Some(rv), Some(dv), Some((w, h, bpc))) = (
            state.reference.clone(),
            state.distorted.clone(),
            state.geometry,
        ) else {
            return Err(gst::FlowError::NotNegotiated);
        };
        let (w, h) = (w as usize, h as usize);
        let gpu = lock(&self.prepared).as_ref().and_then(|p| p.gpu.clone());
        let tag = Tag {
            buffer: distorted.clone(),
            running_time,
        };
        let retry = tag.clone();
        let mut failed_over = Vec::new();
        let pushed = self.push_pair(
            &mut state,
            (&rv, &reference),
            (&dv, &distorted),
            bpc,
            gpu.as_deref(),
            tag,
        );
        let result = match pushed {
            Ok(done) => Ok(done),
            Err(PairError::Map(e)) => {
                drop(state);
                gst::element_imp_error!(self, gst::StreamError::Decode, ("{}", e));
                return Err(gst::FlowError::Error);
            }
            Err(PairError::Engine(e))
                if state
                    .scorer
                    .as_ref()
                    .is_some_and(|s| s.backend_name() != "cpu")
                    && lock(&self.settings).backend == VmafBackend::Auto =>
            {
                // The GPU failed mid-stream: finish the stream on the CPU.
                let plan = state.scorer.as_ref().map(|s| s.plan().clone());
                let colour = state
                    .reference
                    .as_ref()
                    .map(|r| yuv_to_rgb(&r.info))
                    .unwrap_or_default();
                let geometry = Geometry {
                    colour,
                    ..Geometry::luma(w, h, bpc)
                };
                match plan.map(|p| self.cpu_backend(&p, geometry)) {
                    Some(Ok(cpu)) => {
                        let lost = match state.scorer.as_mut() {
                            Some(scorer) => {
                                let (done, lost) = scorer.fail_over(Box::new(cpu));
                                failed_over = done;
                                lost
                            }
                            None => 0,
                        };
                        gst::element_imp_warning!(
                            self,
                            gst::ResourceError::Failed,
                            ("GPU scoring failed ({}): continuing on the CPU; {} frames in flight were not scored", e, lost)
                        );
                        match self.push_pair(
                            &mut state,
                            (&rv, &reference),
                            (&dv, &distorted),
                            bpc,
                            None,
                            retry,
                        ) {
                            Ok(done) => Ok(done),
                            Err(PairError::Map(e)) => Err(e),
                            Err(PairError::Engine(e)) => Err(e.to_string()),
                        }
                    }
                    _ => Err(e.to_string()),
                }
            }
            Err(PairError::Engine(e)) => Err(e.to_string()),
        };
        if state.started.is_none() {
            state.started = Some(Instant::now());
        }
        drop(state);
        let done = match result {
            Ok(done) => done,
            Err(e) => {
                gst::element_imp_error!(self, gst::StreamError::Failed, ("Scoring failed: {}", e));
                return Err(gst::FlowError::Error);
            }
        };
        self.emit_all(switched)?;
        self.emit_all(failed_over)?;
        self.emit_all(done)
    }

    fn pass_unpaired_distorted(
        &self,
        buffer: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let gap = is_gap(&buffer);
        let buffer = match self.live_pass(buffer) {
            Ok(ret) => {
                if !gap {
                    lock(&self.state).unpaired_distorted += 1;
                }
                return Ok(ret);
            }
            Err(buffer) => buffer,
        };
        let running_time = Self::running_time(&self.distorted_pad, &buffer);
        let tag = Tag {
            buffer,
            running_time,
        };
        let mut state = lock(&self.state);
        if !is_gap(&tag.buffer) {
            state.unpaired_distorted += 1;
        }
        let now = match state.scorer.as_mut() {
            Some(s) => s.push_unpaired(tag),
            None => Some(Scored {
                index: 0,
                tag,
                scores: None,
            }),
        };
        drop(state);
        match now {
            Some(item) => self.emit(item, false),
            None => Ok(gst::FlowSuccess::Ok),
        }
    }

    /// Both inputs are done: complete the last frame, post the summary, close the log.
    fn finish_stream(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut state = lock(&self.state);
        if state.finished {
            return Err(gst::FlowError::Eos);
        }
        state.finished = true;
        drop(state);
        // Live pipelines: the scoring thread finishes what it was given first.
        self.live_drain()?;
        let mut state = lock(&self.state);
        let tail = state.scorer.as_mut().map(|s| s.finish()).transpose();
        drop(state);
        let tail = tail.map_err(|e| self.engine_failed(e))?.unwrap_or_default();
        self.emit_all(tail)?;
        self.live_release(true)?;
        self.post_summary();
        Err(gst::FlowError::Eos)
    }

    fn post_summary(&self) {
        let settings = lock(&self.settings).clone();
        let mut state = lock(&self.state);
        let (frames, metrics, backend) = match state.scorer.as_ref() {
            Some(s) => (
                s.pool().count(),
                s.pool()
                    .pooled()
                    .into_iter()
                    .map(|(n, p)| {
                        (
                            n.to_owned(),
                            PooledMetric {
                                min: p.min,
                                max: p.max,
                                mean: p.mean,
                                harmonic_mean: p.harmonic_mean,
                            },
                        )
                    })
                    .collect(),
                s.backend_name().to_owned(),
            ),
            None => (0, Vec::new(), "cpu".to_owned()),
        };
        let (skipped, late) = self.monitor_counts();
        let joined =
            |set: &BTreeSet<InputPath>| set.iter().map(|p| p.name()).collect::<Vec<_>>().join("+");
        let summary = SummaryMessage {
            frames,
            unpaired_reference: state.unpaired_reference,
            unpaired_distorted: state.unpaired_distorted,
            backend,
            model: settings.model.clone(),
            reference_input: joined(&state.paths[0]),
            distorted_input: joined(&state.paths[1]),
            metrics,
            skipped,
            late,
        };
        let log_result = self.close_log(&mut state);
        drop(state);
        if let Err(e) = log_result {
            gst::element_imp_error!(self, gst::ResourceError::Write, ("{}", e));
        }
        let unpaired = summary.unpaired_reference + summary.unpaired_distorted;
        if unpaired > 0 {
            gst::element_imp_warning!(
                self,
                gst::StreamError::Failed,
                (
                    "{} reference and {} distorted frames had no partner and were not scored",
                    summary.unpaired_reference,
                    summary.unpaired_distorted
                ),
                ["One input ended early or their timestamps do not line up; {} pairs were scored.", frames]
            );
        }
        if let Some(vmaf) = summary.get("vmaf") {
            gst::info!(
                CAT,
                imp = self,
                "{} frames, VMAF mean {:.6} harmonic {:.6}",
                frames,
                vmaf.mean,
                vmaf.harmonic_mean
            );
        }
        let obj = self.obj();
        let _ = obj.post_message(
            gst::message::Element::builder(summary.to_structure())
                .src(&*obj)
                .build(),
        );
    }

    /// Creates (truncating) the `results-location` log, if one is set.
    fn open_log(&self) -> Result<Option<LogWriter>, gst::ErrorMessage> {
        let settings = lock(&self.settings).clone();
        let Some(location) = settings.results_location.as_deref() else {
            return Ok(None);
        };
        let format = match settings.results_format {
            ResultsFormat::Json => LogFormat::Json,
            ResultsFormat::Xml => LogFormat::Xml,
            ResultsFormat::Csv => LogFormat::Csv,
        };
        LogWriter::create(&PathBuf::from(location), format)
            .map(Some)
            .map_err(|e| {
                gst::error_msg!(
                    gst::ResourceError::OpenWrite,
                    ("{}", e),
                    ["Check that the directory exists and is writable (results-location)."]
                )
            })
    }

    fn close_log(&self, state: &mut State) -> Result<(), crate::engine::log::LogError> {
        let Some(log) = state.log.take() else {
            return Ok(());
        };
        let (w, h) = state.geometry.map(|(w, h, _)| (w, h)).unwrap_or((0, 0));
        let frames = state.scorer.as_ref().map_or(0, |s| s.frames_pushed());
        let fps = state
            .started
            .map(|t| frames as f64 / t.elapsed().as_secs_f64().max(1e-9))
            .unwrap_or(0.0);
        match state.scorer.as_ref() {
            Some(s) => log.finish(s.pool(), fps, w, h),
            None => {
                let empty = crate::engine::Pool::new(Vec::<String>::new().into());
                log.finish(&empty, fps, w, h)
            }
        }
    }
}

impl AggregatorImpl for VmafCompare {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.refresh_cpu_pool()?;
        let state = State {
            log: self.open_log()?,
            ..State::default()
        };
        *lock(&self.state) = state;
        self.monitor_start();
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.monitor_shutdown();
        let mut state = lock(&self.state);
        let res = self.close_log(&mut state);
        *state = State::default();
        drop(state);
        res.map_err(|e| gst::error_msg!(gst::ResourceError::Write, ("{}", e)))
    }

    fn sink_event(&self, pad: &gst_base::AggregatorPad, event: gst::Event) -> bool {
        if let gst::EventView::Caps(c) = event.view() {
            if !self.handle_caps(pad, c.caps()) {
                return false;
            }
        }
        if let gst::EventView::FlushStart(_) = event.view() {
            self.monitor_flush_start();
        }
        self.parent_sink_event(pad, event)
    }

    fn sink_query(&self, pad: &gst_base::AggregatorPad, query: &mut gst::QueryRef) -> bool {
        self.answer_context_query(query) || self.parent_sink_query(pad, query)
    }

    fn src_query(&self, query: &mut gst::QueryRef) -> bool {
        self.answer_context_query(query) || self.parent_src_query(query)
    }

    fn update_src_caps(&self, _caps: &gst::Caps) -> Result<gst::Caps, gst::FlowError> {
        match self.distorted_pad.current_caps() {
            Some(c) => Ok(c),
            None => Err(gst_base::AGGREGATOR_FLOW_NEED_DATA),
        }
    }

    /// A flushing seek starts a new run from the seek position: indices, motion, pooling,
    /// the unpaired counts and the results log all restart, so the summary and the log
    /// describe the same frames, as a fresh run from there would.
    fn flush(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        self.monitor_flush();
        let mut state = lock(&self.state);
        if let Some(s) = state.scorer.as_mut() {
            s.reset();
        }
        state.finished = false;
        state.unpaired_reference = 0;
        state.unpaired_distorted = 0;
        state.started = None;
        if state.log.take().is_some() {
            match self.open_log() {
                Ok(log) => state.log = log,
                Err(e) => {
                    drop(state);
                    self.post_error_message(e);
                    return Err(gst::FlowError::Error);
                }
            }
        }
        drop(state);
        self.parent_flush()
    }

    /// Drops buffers that lie wholly outside their pad's segment, such as the frames a
    /// parser pushes from before a seek target: they are not part of the stream, so they are
    /// neither scored (which would feed motion and indices) nor counted as unpaired.
    fn clip(&self, pad: &gst_base::AggregatorPad, buffer: gst::Buffer) -> Option<gst::Buffer> {
        let Some(pts) = buffer.pts() else {
            return Some(buffer);
        };
        let segment = pad.segment();
        let Some(segment) = segment.downcast_ref::<gst::ClockTime>() else {
            return Some(buffer);
        };
        // `ClockTime` addition is plain u64 addition (a panic in debug builds, a wrapped end in
        // release): a buffer whose end would pass the clock's range is clipped by its start.
        let end = buffer.duration().and_then(|d| pts.checked_add(d));
        if segment.clip(pts, end).is_none() {
            gst::debug!(
                CAT,
                obj = pad,
                "dropping buffer at {pts} outside the segment"
            );
            return None;
        }
        Some(buffer)
    }

    /// Live pipelines: the earliest running time at which something must happen without new
    /// data, as the aggregator times out at that time plus the latency: an output buffer of
    /// the scoring queue reaching its deadline, or a buffer waiting on a sink pad for a
    /// partner that did not come (a pad that never receives data), which is then dropped or
    /// passed on unscored instead of blocking its upstream forever (see
    /// `VmafCompare::live_next_time`). `None` (wait for data) when nothing waits.
    fn next_time(&self) -> Option<gst::ClockTime> {
        self.live_next_time()
    }

    fn aggregate(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        // Live pipelines: frames the scoring thread finished leave first, in order.
        self.live_release(false)?;
        if self.aligning() {
            return self.align_step();
        }
        // Inputs are the pads' buffers, after any held by auto-alignment (0: reference,
        // 1: distorted).
        let (rb, db) = (self.peek_input(0), self.peek_input(1));
        match (rb, db) {
            (Some((r, rrt)), Some((d, drt))) => {
                // Pair by running time (the distorted one shifted back by its delay): when
                // one side is more than half a frame ahead, the earlier buffer has no
                // partner. Half of the shorter frame, so that with differing frame rates
                // each frame of the slower stream pairs with the nearest frame of the
                // faster one.
                let half = match (d.duration(), r.duration()) {
                    (Some(a), Some(b)) => Some(a.min(b) / 2),
                    (a, b) => a.or(b).map(|d| d / 2),
                };
                if let (Some(rrt), Some(drt), Some(half)) = (rrt, drt, half) {
                    match self.unpaired_side(rrt, drt, half) {
                        Some(true) => {
                            gst::debug!(
                                CAT,
                                imp = self,
                                "reference at {rrt} has no partner, dropping"
                            );
                            drop(self.pop_input(0));
                            if !is_gap(&r) {
                                lock(&self.state).unpaired_reference += 1;
                            }
                            return Ok(gst::FlowSuccess::Ok);
                        }
                        Some(false) => {
                            gst::debug!(
                                CAT,
                                imp = self,
                                "distorted at {drt} has no partner, passing it on"
                            );
                            let d = self.pop_input(1).ok_or(gst::FlowError::Error)?;
                            return self.pass_unpaired_distorted(d);
                        }
                        None => {}
                    }
                }
                let (Some(r), Some(d)) = (self.pop_input(0), self.pop_input(1)) else {
                    return Ok(gst::FlowSuccess::Ok);
                };
                if is_gap(&r) || is_gap(&d) {
                    // No picture on one side: nothing to score; the other side is unpaired.
                    if !is_gap(&r) {
                        lock(&self.state).unpaired_reference += 1;
                    }
                    return self.pass_unpaired_distorted(d);
                }
                self.score_or_queue(r, d)
            }
            // One side waits alone: its partner is missing when the other stream ended, or
            // when a live timeout finds its deadline passed (`partner_overdue`).
            (Some((r, _)), None) if self.input_eos(1) || self.partner_overdue(0, timeout) => {
                drop(self.pop_input(0));
                if !is_gap(&r) {
                    lock(&self.state).unpaired_reference += 1;
                }
                Ok(gst::FlowSuccess::Ok)
            }
            (None, Some(_)) if self.input_eos(0) || self.partner_overdue(1, timeout) => {
                let d = self.pop_input(1).ok_or(gst::FlowError::Error)?;
                self.pass_unpaired_distorted(d)
            }
            (None, None) if self.input_eos(0) && self.input_eos(1) => self.finish_stream(),
            _ => Ok(gst::FlowSuccess::Ok),
        }
    }
}
