//! The `vmafnvdec` element: a `GstVideoDecoder` whose frames go through a [`Session`].
//!
//! Frame matching: each access unit is parsed with its `system_frame_number`, and
//! [`super::frames::FrameMatcher`] tells which frame each displayed picture belongs to (by
//! its decode surface); the base class keeps the frame's own PTS, DTS, duration and flags,
//! so timestamps are GStreamer's, not the parser's. Frames that get no picture are released.
//! At `LOG` level (`GST_DEBUG=vmafnvdec:6`) every parser call and callback is logged as a
//! `cb: EVENT` line, the format of the recorded sequences in `tests/nvdec_recordings/`.

use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use cudarc::driver::{CudaContext, CudaStream};
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_video::prelude::*;
use gst_video::subclass::prelude::*;

use super::frames::Event;
use super::session::{Codec, DecodedPicture, FrameSink, SequenceInfo, Session};
use crate::cuda::gst_cuda::{self, CAPS_FEATURE_CUDA_MEMORY, CONTEXT_TYPE};

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "vmafnvdec",
        gst::DebugColorFlags::empty(),
        Some("NVDEC decoder (NVIDIA parser) for vmafcompare"),
    )
});

const DEFAULT_DEVICE_ID: u32 = 0;
const DEFAULT_DISPLAY_DELAY: u32 = 4;
/// Output formats: 8-bit NV12, and 10/12-bit samples in the high bits of 16-bit words.
const FORMATS: [gst_video::VideoFormat; 3] = [
    gst_video::VideoFormat::Nv12,
    gst_video::VideoFormat::P01010le,
    gst_video::VideoFormat::P012Le,
];

#[derive(Debug, Clone, Copy)]
struct Settings {
    device_id: u32,
    max_display_delay: u32,
}

/// What `start` opens and `stop` drops.
struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

#[derive(Default)]
struct State {
    gpu: Option<Gpu>,
    codec: Option<Codec>,
    session: Option<Session>,
    input: Option<gst_video::VideoCodecState<'static, gst_video::video_codec_state::Readable>>,
    /// The negotiated output: its info and whether it is CUDA memory.
    output: Option<(gst_video::VideoInfo, bool)>,
    /// Pictures handed out since start (for the debug log at stop).
    frames: u64,
}

/// Lock order: `state` may be held while the base class calls back into `gst_ctx` users
/// (negotiation runs inside a parse call: `decide_allocation`, context queries), so those
/// never take `state`.
#[derive(Default)]
pub struct VmafNvDec {
    settings: Mutex<Settings>,
    state: Mutex<State>,
    /// The context wrapped as a `GstCudaContext` (output pool and context queries); `None`
    /// before `start`, after `stop`, and without GStreamer's CUDA library (system memory
    /// output only).
    gst_ctx: Mutex<Option<gst::Object>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            device_id: DEFAULT_DEVICE_ID,
            max_display_delay: DEFAULT_DISPLAY_DELAY,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[glib::object_subclass]
impl ObjectSubclass for VmafNvDec {
    const NAME: &'static str = "GstVmafNvDec";
    type Type = element::VmafNvDec;
    type ParentType = gst_video::VideoDecoder;
}

impl ObjectImpl for VmafNvDec {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            vec![
                glib::ParamSpecUInt::builder("device-id")
                    .nick("CUDA device")
                    .blurb(
                        "CUDA ordinal of the GPU whose NVDEC engines decode (as nvidia-smi \
                         lists them). Give vmafcompare the same device-id so that it reads \
                         the frames in place. Applies from the next READY->PAUSED.",
                    )
                    .default_value(DEFAULT_DEVICE_ID)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("max-display-delay")
                    .nick("Display delay")
                    .blurb(
                        "Pictures NVIDIA's parser keeps queued before one is output. 0 \
                         outputs each picture as soon as it is decodable (least latency); \
                         2-4 let the engines decode the next pictures while one is copied \
                         out (most frames per second).",
                    )
                    .maximum(16)
                    .default_value(DEFAULT_DISPLAY_DELAY)
                    .mutable_ready()
                    .build(),
            ]
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        let mut s = lock(&self.settings);
        match pspec.name() {
            "device-id" => s.device_id = value.get().unwrap_or(DEFAULT_DEVICE_ID),
            "max-display-delay" => {
                s.max_display_delay = value.get().unwrap_or(DEFAULT_DISPLAY_DELAY)
            }
            _ => {}
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        let s = lock(&self.settings);
        match pspec.name() {
            "device-id" => s.device_id.to_value(),
            "max-display-delay" => s.max_display_delay.to_value(),
            _ => glib::Value::from_type(pspec.value_type()),
        }
    }

    fn constructed(&self) {
        self.parent_constructed();
        self.obj().set_packetized(true);
    }
}

impl GstObjectImpl for VmafNvDec {}

impl ElementImpl for VmafNvDec {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "NVDEC H.264/HEVC decoder for VMAF scoring",
                "Codec/Decoder/Video/Hardware",
                "Decodes H.264 and HEVC (4:2:0, 8 to 12 bits) on NVIDIA's NVDEC engines with \
                 NVIDIA's own bitstream parser, into CUDA memory of the device's primary \
                 context (read in place by vmafcompare) or system memory. Takes Annex B \
                 access units: put h264parse/h265parse in front.",
                "vmafcompare developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            // What NVDEC decodes (H.264: 8-bit 4:2:0; HEVC: 4:2:0 at 8, 10 or 12 bits), as
            // h264parse/h265parse state it (unsigned fields), so that decodebin offers
            // other streams to other decoders.
            let mut sink = gst::Caps::builder("video/x-h264")
                .field("stream-format", "byte-stream")
                .field("alignment", "au")
                .field("chroma-format", "4:2:0")
                .field("bit-depth-luma", 8u32)
                .build();
            sink.make_mut().append(
                gst::Caps::builder("video/x-h265")
                    .field("stream-format", "byte-stream")
                    .field("alignment", "au")
                    .field("chroma-format", "4:2:0")
                    .field("bit-depth-luma", gst::List::new([8u32, 10, 12]))
                    .build(),
            );
            let raw = |cuda: bool| {
                let b = gst_video::VideoCapsBuilder::new().format_list(FORMATS);
                if cuda {
                    b.features([CAPS_FEATURE_CUDA_MEMORY]).build()
                } else {
                    b.build()
                }
            };
            let mut src = raw(true);
            src.make_mut().append(raw(false));
            let mut out = Vec::new();
            for (name, dir, caps) in [
                ("sink", gst::PadDirection::Sink, sink),
                ("src", gst::PadDirection::Src, src),
            ] {
                match gst::PadTemplate::new(name, dir, gst::PadPresence::Always, &caps) {
                    Ok(t) => out.push(t),
                    Err(e) => gst::error!(CAT, "cannot make pad template {name}: {e}"),
                }
            }
            out
        });
        TEMPLATES.as_ref()
    }
}

/// The error every NVDEC failure becomes (decode errors are not recoverable here).
fn decode_error(msg: &str) -> gst::ErrorMessage {
    gst::error_msg!(gst::StreamError::Decode, ["{}", msg])
}

impl VideoDecoderImpl for VmafNvDec {
    /// NULL -> READY: the driver's libraries must be there (decodebin, trying this element,
    /// then moves on to the next decoder).
    fn open(&self) -> Result<(), gst::ErrorMessage> {
        if let Err(e) = super::sys::library() {
            return Err(gst::error_msg!(
                gst::LibraryError::Init,
                [
                    "NVDEC is not available ({}): it needs the NVIDIA driver's libnvcuvid.so.1 \
                     (in a container, NVIDIA_DRIVER_CAPABILITIES must include 'video'); \
                     decode with avdec_h264/avdec_h265 instead",
                    e
                ]
            ));
        }
        // SAFETY: only dlopens libcuda; cudarc panics on driver calls without it.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(gst::error_msg!(
                gst::LibraryError::Init,
                ["the CUDA driver (libcuda.so.1) is not installed"]
            ));
        }
        Ok(())
    }

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let settings = *lock(&self.settings);
        let open = || -> Result<(Gpu, Option<gst::Object>), String> {
            let ctx = CudaContext::new(settings.device_id as usize).map_err(|e| {
                format!(
                    "cannot open CUDA device {} ({e}): set device-id to a GPU that nvidia-smi lists",
                    settings.device_id
                )
            })?;
            let stream = ctx
                .new_stream()
                .map_err(|e| format!("cuStreamCreate failed: {e}"))?;
            let gst_ctx = gst_cuda::library().and_then(|lib| {
                lib.wrap_context(ctx.cu_ctx() as usize, ctx.cu_device(), ctx.clone())
            });
            Ok((Gpu { ctx, stream }, gst_ctx))
        };
        let (gpu, gst_ctx) =
            open().map_err(|e| gst::error_msg!(gst::LibraryError::Init, ["{}", e]))?;
        *lock(&self.gst_ctx) = gst_ctx;
        let mut state = lock(&self.state);
        *state = State {
            gpu: Some(gpu),
            ..State::default()
        };
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        let mut state = lock(&self.state);
        gst::debug!(CAT, imp = self, "stopping after {} pictures", state.frames);
        // The session (parser, decoder) goes before the context it lives in.
        state.session = None;
        *state = State::default();
        *lock(&self.gst_ctx) = None;
        Ok(())
    }

    fn set_format(
        &self,
        input: &gst_video::VideoCodecState<'static, gst_video::video_codec_state::Readable>,
    ) -> Result<(), gst::LoggableError> {
        let caps = input
            .caps()
            .ok_or_else(|| gst::loggable_error!(CAT, "input state without caps"))?;
        let codec = match caps.structure(0).map(|s| s.name().as_str()) {
            Some("video/x-h264") => Codec::H264,
            Some("video/x-h265") => Codec::Hevc,
            other => return Err(gst::loggable_error!(CAT, "unsupported caps {:?}", other)),
        };
        let mut state = lock(&self.state);
        if state.codec != Some(codec) {
            state.session = None;
        }
        state.codec = Some(codec);
        state.input = Some(input.clone());
        Ok(())
    }

    fn handle_frame(
        &self,
        frame: gst_video::VideoCodecFrame,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let id = frame.system_frame_number();
        let input = frame.input_buffer_owned().ok_or(gst::FlowError::Error)?;
        drop(frame);
        let map = input.map_readable().map_err(|_| {
            gst::element_imp_error!(
                self,
                gst::StreamError::Decode,
                ["cannot read an input buffer"]
            );
            gst::FlowError::Error
        })?;
        self.with_session(|session, sink| session.decode(&map, id, sink))
    }

    fn finish(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        self.with_session(|session, sink| session.drain(sink))
    }

    fn drain(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        self.with_session(|session, sink| session.drain(sink))
    }

    fn flush(&self) -> bool {
        if let Some(s) = lock(&self.state).session.as_mut() {
            s.reset();
        }
        true
    }

    fn decide_allocation(
        &self,
        query: &mut gst::query::Allocation,
    ) -> Result<(), gst::LoggableError> {
        let (caps, _) = query.get_owned();
        let Some(caps) = caps else {
            return self.parent_decide_allocation(query);
        };
        let cuda = caps
            .features(0)
            .is_some_and(|f| f.contains(CAPS_FEATURE_CUDA_MEMORY));
        if !cuda {
            return self.parent_decide_allocation(query);
        }
        let gst_ctx = lock(&self.gst_ctx).clone();
        let (Some(lib), Some(gst_ctx)) = (gst_cuda::library(), gst_ctx) else {
            return Err(gst::loggable_error!(
                CAT,
                "CUDA memory negotiated without GStreamer's CUDA library"
            ));
        };
        let pool = lib
            .new_buffer_pool(&gst_ctx)
            .ok_or_else(|| gst::loggable_error!(CAT, "gst_cuda_buffer_pool_new failed"))?;
        let info = gst_video::VideoInfo::from_caps(&caps)
            .map_err(|e| gst::loggable_error!(CAT, "output caps: {e}"))?;
        // No maximum: the decoder never waits for downstream to return a buffer.
        let (min, max) = (4, 0);
        let mut config = pool.config();
        config.set_params(Some(&caps), info.size() as u32, min, max);
        config.add_option(gst_video::BUFFER_POOL_OPTION_VIDEO_META.as_ref());
        if pool.set_config(config).is_err() {
            // The pool changed what it could not take as is (the size: its planes are
            // pitched); take its version if it still has our caps.
            let config = pool.config();
            let ok = config
                .params()
                .is_some_and(|(c, _, _, _)| c.as_ref() == Some(&caps));
            if !ok || pool.set_config(config).is_err() {
                return Err(gst::loggable_error!(
                    CAT,
                    "the CUDA buffer pool refused {caps}"
                ));
            }
        }
        let size = pool
            .config()
            .params()
            .map(|(_, size, _, _)| size)
            .unwrap_or(info.size() as u32);
        if query.allocation_pools().len() == 0 {
            query.add_allocation_pool(Some(&pool), size, min, max);
        } else {
            query.set_nth_allocation_pool(0, Some(&pool), size, min, max);
        }
        Ok(())
    }

    fn src_query(&self, query: &mut gst::QueryRef) -> bool {
        self.answer_context_query(query) || self.parent_src_query(query)
    }

    fn sink_query(&self, query: &mut gst::QueryRef) -> bool {
        self.answer_context_query(query) || self.parent_sink_query(query)
    }
}

impl VmafNvDec {
    /// Answers a `gst.cuda.context` query with this element's context (so that CUDA
    /// elements next to it, `vmafcompare` included, allocate and read in it).
    fn answer_context_query(&self, query: &mut gst::QueryRef) -> bool {
        let gst::QueryViewMut::Context(q) = query.view_mut() else {
            return false;
        };
        if q.context_type() != CONTEXT_TYPE {
            return false;
        }
        let ctx = lock(&self.gst_ctx).clone();
        let (Some(lib), Some(ctx)) = (gst_cuda::library(), ctx) else {
            return false;
        };
        let element = self.obj().upcast_ref::<gst::Element>().clone();
        lib.handle_context_query(&element, query, &ctx)
    }

    /// Runs `f` on the session (made on first use) with a sink that outputs through this
    /// element, and turns its error into an element error.
    fn with_session(
        &self,
        f: impl FnOnce(&mut Session, &mut Output<'_>) -> Result<(), String>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let settings = *lock(&self.settings);
        let mut state = lock(&self.state);
        if state.session.is_none() {
            let (Some(gpu), Some(codec)) = (state.gpu.as_ref(), state.codec) else {
                return Ok(gst::FlowSuccess::Ok); // nothing negotiated yet: nothing to drain
            };
            match Session::new(
                gpu.ctx.clone(),
                gpu.stream.clone(),
                codec,
                settings.max_display_delay,
            ) {
                Ok(s) => state.session = Some(s),
                Err(e) => {
                    gst::element_imp_error!(self, gst::LibraryError::Init, ["NVDEC: {}", e]);
                    return Err(gst::FlowError::Error);
                }
            }
        }
        let mut session = state.session.take().ok_or(gst::FlowError::Error)?;
        let mut out = Output {
            imp: self,
            state: &mut state,
            ready: None,
            flow: Ok(gst::FlowSuccess::Ok),
        };
        let r = f(&mut session, &mut out);
        let flow = out.flow;
        state.session = Some(session);
        drop(state);
        match (r, flow) {
            // A downstream flow return (flushing, not-linked, EOS, error) ends this call as
            // is: downstream or the base class reports it.
            (_, Err(e)) => Err(e),
            (Err(e), Ok(_)) => {
                self.post_error_message(decode_error(&format!("NVDEC: {e}")));
                Err(gst::FlowError::Error)
            }
            (Ok(()), Ok(s)) => Ok(s),
        }
    }
}

/// The [`FrameSink`] of one parse call: negotiates on a new sequence, copies each picture
/// into an output buffer and finishes its frame.
struct Output<'a> {
    imp: &'a VmafNvDec,
    state: &'a mut State,
    /// The frame whose picture was copied, to finish in `frame_ready`.
    ready: Option<u32>,
    /// The first downstream flow error (the parse is stopped by failing the callback).
    flow: Result<gst::FlowSuccess, gst::FlowError>,
}

impl Output<'_> {
    fn negotiate(&mut self, info: &SequenceInfo) -> Result<(), String> {
        let obj = self.imp.obj();
        let format = output_format(info.bit_depth);
        let cuda_possible = lock(&self.imp.gst_ctx).is_some();
        let mut out = obj
            .set_output_state(format, info.width, info.height, self.state.input.as_ref())
            .map_err(|e| format!("cannot set the output format: {e:?}"))?;
        let mut caps = out
            .info()
            .to_caps()
            .map_err(|e| format!("output caps: {e}"))?;
        // The range is the sequence header's (VUI video_full_range_flag): parsers state a
        // colorimetry only when the VUI describes the colours, and a full-range stream
        // without a colour description would otherwise leave as limited (issue 49).
        set_range(caps.make_mut(), info.full_range);
        if cuda_possible {
            let mut cuda = caps.clone();
            cuda.make_mut()
                .set_features_simple(Some(gst::CapsFeatures::new([CAPS_FEATURE_CUDA_MEMORY])));
            let peer = obj.src_pad().peer_query_caps(Some(&cuda));
            if !peer.is_empty() {
                caps = cuda;
            }
        }
        out.set_caps(&caps);
        obj.negotiate(out)
            .map_err(|e| format!("downstream refused {caps} ({e:?})"))?;
        let cuda = caps
            .features(0)
            .is_some_and(|f| f.contains(CAPS_FEATURE_CUDA_MEMORY));
        let vinfo = gst_video::VideoInfo::from_caps(&caps).map_err(|e| e.to_string())?;
        gst::info!(
            CAT,
            imp = self.imp,
            "output {}x{} {}-bit {} ({})",
            info.width,
            info.height,
            info.bit_depth,
            format.to_str(),
            if cuda { "CUDA memory" } else { "system memory" }
        );
        self.state.output = Some((vinfo, cuda));
        Ok(())
    }
}

/// Sets the range of `caps`' colorimetry to full or limited, keeping its matrix, transfer
/// and primaries (unknown where the caps gave none).
fn set_range(caps: &mut gst::CapsRef, full: bool) {
    use gst_video::{VideoColorRange, VideoColorimetry};
    let Some(s) = caps.structure_mut(0) else {
        return;
    };
    let stated = s
        .get::<&str>("colorimetry")
        .ok()
        .and_then(|c| c.parse::<VideoColorimetry>().ok());
    let (matrix, transfer, primaries) = stated.map_or(
        (
            gst_video::VideoColorMatrix::Unknown,
            gst_video::VideoTransferFunction::Unknown,
            gst_video::VideoColorPrimaries::Unknown,
        ),
        |c| (c.matrix(), c.transfer(), c.primaries()),
    );
    let range = if full {
        VideoColorRange::Range0_255
    } else {
        VideoColorRange::Range16_235
    };
    let c = VideoColorimetry::new(range, matrix, transfer, primaries);
    s.set("colorimetry", c.to_string());
}

/// The output format of a stream of `bit_depth` bits: NV12, else the samples in the high bits
/// of 16-bit words as NVDEC writes them (P010 for 10 bits, P012 for 12).
fn output_format(bit_depth: u32) -> gst_video::VideoFormat {
    match bit_depth {
        0..=8 => gst_video::VideoFormat::Nv12,
        10 => gst_video::VideoFormat::P01010le,
        _ => gst_video::VideoFormat::P012Le,
    }
}

/// One plane copy (`cuMemcpy2DAsync`) from the mapped picture to device or host memory.
fn copy_plane(
    src: u64,
    src_pitch: usize,
    dst: (u64, usize),
    host: Option<*mut u8>,
    width_bytes: usize,
    rows: usize,
    stream: *mut std::ffi::c_void,
) -> Result<(), String> {
    use cudarc::driver::sys;
    let (dst_type, dst_host) = match host {
        Some(p) => (sys::CUmemorytype::CU_MEMORYTYPE_HOST, p.cast()),
        None => (
            sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            std::ptr::null_mut(),
        ),
    };
    let mut c = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: src,
        srcArray: std::ptr::null_mut(),
        srcPitch: src_pitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host,
        dstDevice: if host.is_some() { 0 } else { dst.0 },
        dstArray: std::ptr::null_mut(),
        dstPitch: 0,
        WidthInBytes: 0,
        Height: 0,
    };
    c.dstPitch = dst.1;
    c.WidthInBytes = width_bytes;
    c.Height = rows;
    // SAFETY: both regions are mapped for the duration of the copy (the caller synchronises
    // before unmapping either).
    let r = unsafe { sys::cuMemcpy2DAsync_v2(&c, stream as _) };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("cuMemcpy2DAsync failed ({r:?})"))
    }
}

impl FrameSink for Output<'_> {
    fn sequence(&mut self, info: &SequenceInfo) -> Result<(), String> {
        let same = self.state.output.as_ref().is_some_and(|(v, _)| {
            (v.width(), v.height(), v.format())
                == (info.width, info.height, output_format(info.bit_depth))
        });
        if same {
            return Ok(());
        }
        self.negotiate(info)
    }

    fn frame(&mut self, p: &DecodedPicture) -> Result<(), String> {
        let obj = self.imp.obj();
        let Some(mut frame) = obj.frame(p.frame as i32) else {
            return Ok(()); // its frame was dropped (flush): nothing to output
        };
        let Some((vinfo, cuda)) = self.state.output.clone() else {
            return Err("a picture before the output was negotiated".to_owned());
        };
        if let Err(e) = obj.allocate_output_frame(&mut frame, None) {
            self.flow = Err(e);
            return Err(format!("no output buffer ({e:?})"));
        }
        let buffer = frame
            .output_buffer_mut()
            .ok_or_else(|| "no output buffer".to_owned())?;
        let row_bytes = p.width as usize * p.bytes;
        let chroma_rows = p.height.div_ceil(2) as usize;
        let rows = [p.height as usize, chroma_rows];
        let srcs = [p.luma, p.chroma];
        if cuda {
            let lib = gst_cuda::library().ok_or("GStreamer's CUDA library is gone")?;
            let w = lib.map_device_write(buffer).map_err(|e| e.to_string())?;
            for i in 0..2 {
                copy_plane(
                    srcs[i],
                    p.pitch,
                    w.planes[i],
                    None,
                    row_bytes,
                    rows[i],
                    p.stream,
                )?;
            }
            // SAFETY: the session's stream; the copies must finish before the unmap below.
            let r = unsafe { cudarc::driver::sys::cuStreamSynchronize(p.stream as _) };
            if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
                return Err(format!("cuStreamSynchronize failed ({r:?})"));
            }
            drop(w);
        } else {
            let mut vf = gst_video::VideoFrameRef::from_buffer_ref_writable(buffer, &vinfo)
                .map_err(|_| "cannot map the output buffer".to_owned())?;
            for i in 0..2 {
                let stride = vf.plane_stride()[i] as usize;
                let data = vf
                    .plane_data_mut(i as u32)
                    .map_err(|e| format!("output plane {i}: {e}"))?;
                // Pageable host memory: the copy is complete when the call returns.
                copy_plane(
                    srcs[i],
                    p.pitch,
                    (0, stride),
                    Some(data.as_mut_ptr()),
                    row_bytes,
                    rows[i],
                    p.stream,
                )?;
            }
        }
        self.ready = Some(frame.system_frame_number());
        self.state.frames += 1;
        Ok(())
    }

    fn release(&mut self, frame: u32) -> Result<(), String> {
        let obj = self.imp.obj();
        if let Some(f) = obj.frame(frame as i32) {
            gst::debug!(
                CAT,
                imp = self.imp,
                "frame {frame} (PTS {}) has no picture: released",
                f.pts().display()
            );
            obj.release_frame(f);
        }
        Ok(())
    }

    fn event(&mut self, event: &Event, parser_timestamp: Option<i64>) {
        if !CAT.above_threshold(gst::DebugLevel::Log) {
            return;
        }
        match (event, parser_timestamp) {
            (Event::Packet { frame }, _) => {
                let pts = self.imp.obj().frame(*frame as i32).and_then(|f| f.pts());
                gst::log!(
                    CAT,
                    imp = self.imp,
                    "cb: {event} pts={}",
                    pts.map_or(-1, |t| t.nseconds() as i64)
                );
            }
            (_, Some(ts)) => gst::log!(CAT, imp = self.imp, "cb: {event} ts={ts}"),
            (_, None) => gst::log!(CAT, imp = self.imp, "cb: {event}"),
        }
    }

    fn frame_ready(&mut self) -> Result<(), String> {
        let Some(id) = self.ready.take() else {
            return Ok(());
        };
        let obj = self.imp.obj();
        let Some(frame) = obj.frame(id as i32) else {
            return Ok(());
        };
        match obj.finish_frame(frame) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.flow = Err(e);
                Err(format!("downstream: {e:?}"))
            }
        }
    }
}

/// The element's public type, declared beside its implementation so that `mod.rs`, which
/// re-exports it, and this file do not import each other.
pub mod element {
    use gst::glib;

    glib::wrapper! {
        /// The `vmafnvdec` element (see the module docs).
        pub struct VmafNvDec(ObjectSubclass<super::VmafNvDec>)
            @extends gst_video::VideoDecoder, gst::Element, gst::Object;
    }
}
