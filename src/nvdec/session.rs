//! One NVDEC decoding session: NVIDIA's bitstream parser (`cuvidCreateVideoParser`) feeding a
//! hardware decoder (`cuvidCreateDecoder`), with decoded pictures handed to a [`FrameSink`]
//! in display order.
//!
//! The parser calls back synchronously from within [`Session::decode`] and [`Session::drain`]:
//! a sequence header creates (or keeps) the decoder, each picture is decoded as soon as it is
//! parsed, and a picture is mapped and handed out once the parser's display queue passes it
//! (`max_display_delay` pictures later, so that the engines work on the next pictures while
//! this one is copied out: the pipelining that makes NVDEC reach its rated speed). Which input
//! frame a displayed picture belongs to is [`FrameMatcher`]'s answer, from the decode
//! surfaces the callbacks name, not the parser's timestamp (see [`super::frames`]).
//!
//! Source of the API and its call order: NVIDIA Video Codec SDK 12/13, `nvcuvid.h` and
//! `cuviddec.h` (NVDEC Video Decoder API Programming Guide).

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};

use super::frames::{Action, Event, FrameMatcher};
use super::sys::{self, Nvcuvid, Padded};

/// The stream formats this decoder takes (Annex B byte-stream, one access unit per call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// H.264 / AVC.
    H264,
    /// H.265 / HEVC.
    Hevc,
}

impl Codec {
    fn raw(self) -> i32 {
        match self {
            Codec::H264 => sys::CODEC_H264,
            Codec::Hevc => sys::CODEC_HEVC,
        }
    }
}

/// What a sequence header says about the pictures that follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceInfo {
    /// Displayed width and height in pixels (the sequence's display area, i.e. after
    /// cropping).
    pub width: u32,
    pub height: u32,
    /// Bits per sample: 8, 10 or 12 (luma and chroma alike).
    pub bit_depth: u32,
    /// Frame rate as the stream states it (`0/1` when it does not).
    pub frame_rate: (u32, u32),
    /// The VUI's `video_full_range_flag`.
    pub full_range: bool,
    /// Whether the sequence is progressive (interlaced frames are output woven).
    pub progressive: bool,
}

/// A decoded picture, mapped on the device for the duration of [`FrameSink::frame`]: a luma
/// plane of `height` rows then an interleaved CbCr plane of `height / 2` rows (rounded up),
/// both of `pitch` bytes per row, samples of `bytes` bytes (2: the high bits of a 16-bit word
/// hold the sample, as in P010 / P012).
#[derive(Debug, Clone, Copy)]
pub struct DecodedPicture {
    /// `CUdeviceptr` of the first luma sample.
    pub luma: u64,
    /// `CUdeviceptr` of the first CbCr pair.
    pub chroma: u64,
    /// Bytes from one row to the next, both planes.
    pub pitch: usize,
    pub width: u32,
    pub height: u32,
    /// Bytes per sample: 1 (8-bit) or 2.
    pub bytes: usize,
    /// The input frame the picture belongs to (the `frame` given with its access unit to
    /// [`Session::decode`]).
    pub frame: u32,
    /// The stream to copy on (`CUstream`); the session synchronises it before the picture is
    /// unmapped and before [`FrameSink::frame_ready`].
    pub stream: *mut c_void,
}

/// Receives what the session decodes. Errors end decoding: the parse call that caused them
/// returns them.
pub trait FrameSink {
    /// A new sequence (first, or a change of size or depth), before any of its pictures.
    fn sequence(&mut self, info: &SequenceInfo) -> Result<(), String>;
    /// A picture in display order: enqueue its copy-out on `picture.stream` (the device
    /// memory is valid only during this call and the stream work it queues).
    fn frame(&mut self, picture: &DecodedPicture) -> Result<(), String>;
    /// The copies queued by the last [`FrameSink::frame`] have completed: the output may
    /// leave.
    fn frame_ready(&mut self) -> Result<(), String>;
    /// Input `frame` will never have a picture (its access unit held none, or the parser
    /// skipped or dropped its picture): it leaves no output.
    fn release(&mut self, frame: u32) -> Result<(), String>;
    /// Every parser call and callback, in order, for the debug log (the recorded sequences
    /// `tests/nvdec_frames.rs` replays are these lines).
    fn event(&mut self, _event: &Event, _parser_timestamp: Option<i64>) {}
}

/// Geometry the current decoder was created for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Geometry {
    codec: i32,
    coded: (u32, u32),
    display: (i32, i32, i32, i32),
    bit_depth: u32,
    surfaces: u32,
}

/// State the parser's callbacks reach through `pUserData` (boxed: its address is stable).
struct Callbacks {
    lib: &'static Nvcuvid,
    decoder: sys::CUvideodecoder,
    geometry: Option<Geometry>,
    /// (luma rows of a mapped surface, display width, display height, bytes per sample).
    surface: (u32, u32, u32, usize),
    stream: *mut c_void,
    display_delay: u32,
    /// The sink of the parse call in progress (null outside it).
    sink: Option<*mut (dyn FrameSink + 'static)>,
    /// The first error a callback met during the current parse call.
    error: Option<String>,
    /// Which frame each decode surface holds.
    matcher: FrameMatcher,
    /// The matcher's output, reused (no allocation per picture).
    actions: Vec<Action>,
}

impl Callbacks {
    /// Applies `event` to the matcher and carries out its releases on `sink` (a finish is
    /// the display callback's, which copies the picture out first).
    fn track(
        &mut self,
        event: Event,
        parser_timestamp: Option<i64>,
        sink: &mut dyn FrameSink,
    ) -> Result<Option<u32>, String> {
        sink.event(&event, parser_timestamp);
        let mut actions = std::mem::take(&mut self.actions);
        actions.clear();
        self.matcher.apply(event, &mut actions);
        let mut finish = None;
        let mut result = Ok(());
        for a in actions.iter() {
            match *a {
                Action::Finish(f) => finish = Some(f),
                Action::Release(f) => {
                    if result.is_ok() {
                        result = sink.release(f);
                    }
                }
                Action::Orphan { .. } => {}
            }
        }
        self.actions = actions;
        result.map(|()| finish)
    }

    /// [`Callbacks::track`] on the sink of the parse call in progress (none outside one).
    fn track_in_parse(
        &mut self,
        event: Event,
        parser_timestamp: Option<i64>,
    ) -> Result<Option<u32>, String> {
        match self.sink {
            // SAFETY: set by `parse` for the duration of this parse call.
            Some(s) => self.track(event, parser_timestamp, unsafe { &mut *s }),
            None => Ok(None),
        }
    }
}

/// An NVDEC session bound to one CUDA context (the device's primary context, shared with the
/// scoring element so that decoded frames are read in place).
pub struct Session {
    // Field order is drop order: the parser and decoder are destroyed in `Drop` first.
    cb: Box<Callbacks>,
    parser: sys::CUvideoparser,
    codec: Codec,
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
}

// SAFETY: the handles are used from one thread at a time (the element's streaming thread,
// under its state lock); NVDEC objects are not tied to the thread that made them as long as
// the context is current, which every call here ensures.
unsafe impl Send for Session {}

fn cu(call: &str, r: sys::CUresult) -> Result<(), String> {
    if r == 0 {
        Ok(())
    } else {
        Err(format!("{call} failed (CUresult {r})"))
    }
}

impl Session {
    /// A session for `codec` on `ctx`, copying out on `stream` (a non-blocking stream of
    /// `ctx`). `max_display_delay`: pictures the parser holds before display (0 = none;
    /// 2..4 lets decoding run ahead of the copy-out).
    ///
    /// Errors: `libnvcuvid.so.1` missing (no driver, or a container without the `video`
    /// capability), or the parser could not be made.
    pub fn new(
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        codec: Codec,
        max_display_delay: u32,
    ) -> Result<Session, String> {
        let lib = sys::library().map_err(str::to_owned)?;
        let cb = Box::new(Callbacks {
            lib,
            decoder: std::ptr::null_mut(),
            geometry: None,
            surface: (0, 0, 0, 1),
            stream: stream.cu_stream() as *mut c_void,
            display_delay: max_display_delay,
            sink: None,
            error: None,
            matcher: FrameMatcher::new(),
            actions: Vec::with_capacity(8),
        });
        let mut s = Session {
            cb,
            parser: std::ptr::null_mut(),
            codec,
            stream,
            ctx,
        };
        s.make_parser()?;
        Ok(s)
    }

    fn make_parser(&mut self) -> Result<(), String> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| format!("cuCtxSetCurrent failed: {e}"))?;
        let mut p = Padded::<sys::CUVIDPARSERPARAMS>::zeroed();
        p.value.CodecType = self.codec.raw();
        p.value.ulMaxNumDecodeSurfaces = 1; // raised by the sequence callback's return value
        p.value.ulClockRate = 0; // timestamps are passed through, never interpreted
        p.value.ulErrorThreshold = 100;
        p.value.ulMaxDisplayDelay = self.cb.display_delay;
        p.value.pUserData = (&mut *self.cb as *mut Callbacks).cast();
        p.value.pfnSequenceCallback = Some(on_sequence);
        p.value.pfnDecodePicture = Some(on_decode);
        p.value.pfnDisplayPicture = Some(on_display);
        let mut parser = std::ptr::null_mut();
        // SAFETY: valid out-pointer and params; `cb` outlives the parser (destroyed first).
        cu("cuvidCreateVideoParser", unsafe {
            (self.cb.lib.create_parser)(&mut parser, &mut p.value)
        })?;
        self.parser = parser;
        Ok(())
    }

    /// Parses one access unit (`data`, Annex B) of input frame `frame`; pictures it
    /// completes reach `sink` (as `frame` or earlier frames, in display order), and a frame
    /// that will have no picture is released.
    ///
    /// Errors: the first error of a callback (the sink's, or the decoder's), else the
    /// parser's.
    pub fn decode(
        &mut self,
        data: &[u8],
        frame: u32,
        sink: &mut dyn FrameSink,
    ) -> Result<(), String> {
        if self.parser.is_null() {
            self.make_parser()?;
        }
        let mut pkt = Padded::<sys::CUVIDSOURCEDATAPACKET>::zeroed();
        pkt.value.flags = sys::PKT_TIMESTAMP | sys::PKT_ENDOFPICTURE;
        pkt.value.payload_size = data.len() as _;
        pkt.value.payload = data.as_ptr();
        // Only for the debug log: the frame is matched by its decode surface.
        pkt.value.timestamp = frame as i64;
        self.cb.track(Event::Packet { frame }, None, sink)?;
        let parsed = self.parse(&mut pkt.value, sink);
        let done = self.cb.track(Event::PacketDone, None, sink);
        parsed.and(done.map(|_| ()))
    }

    /// End of stream: every picture the parser still holds reaches `sink`. The next
    /// [`Session::decode`] starts a new parser (the decoder is kept when the next sequence
    /// has the same geometry).
    pub fn drain(&mut self, sink: &mut dyn FrameSink) -> Result<(), String> {
        if self.parser.is_null() {
            return Ok(());
        }
        let mut pkt = Padded::<sys::CUVIDSOURCEDATAPACKET>::zeroed();
        pkt.value.flags = sys::PKT_ENDOFSTREAM;
        let r = self.parse(&mut pkt.value, sink);
        self.destroy_parser();
        let drained = self.cb.track(Event::Drained, None, sink);
        r.and(drained.map(|_| ()))
    }

    /// Drops the parser and what it holds (a flush): the next [`Session::decode`] starts
    /// afresh and needs a sequence header and a random access point. The frames in flight
    /// are the base class's to drop.
    pub fn reset(&mut self) {
        self.destroy_parser();
        let mut actions = std::mem::take(&mut self.cb.actions);
        self.cb.matcher.apply(Event::Reset, &mut actions);
        actions.clear();
        self.cb.actions = actions;
    }

    fn parse(
        &mut self,
        pkt: &mut sys::CUVIDSOURCEDATAPACKET,
        sink: &mut dyn FrameSink,
    ) -> Result<(), String> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| format!("cuCtxSetCurrent failed: {e}"))?;
        // SAFETY: the pointer is used only by the callbacks of the parse call below and
        // cleared before `sink`'s borrow ends; the lifetime is erased for storage only.
        let sink: *mut (dyn FrameSink + 'static) = unsafe { std::mem::transmute(sink) };
        self.cb.sink = Some(sink);
        self.cb.error = None;
        // SAFETY: a live parser and a packet whose payload outlives the call.
        let r = unsafe { (self.cb.lib.parse)(self.parser, pkt) };
        self.cb.sink = None;
        if let Some(e) = self.cb.error.take() {
            return Err(e);
        }
        cu("cuvidParseVideoData", r)
    }

    fn destroy_parser(&mut self) {
        if !self.parser.is_null() {
            let _ = self.ctx.bind_to_thread();
            // SAFETY: a live parser, destroyed once.
            unsafe { (self.cb.lib.destroy_parser)(self.parser) };
            self.parser = std::ptr::null_mut();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.destroy_parser();
        if !self.cb.decoder.is_null() {
            let _ = self.ctx.bind_to_thread();
            let _ = self.stream.synchronize();
            // SAFETY: a live decoder with no mapped picture (each is unmapped in the display
            // callback), destroyed once.
            unsafe { (self.cb.lib.destroy_decoder)(self.cb.decoder) };
            self.cb.decoder = std::ptr::null_mut();
        }
    }
}

/// Runs a callback body, turning an error or a panic into the callback's failure value 0
/// (the error is kept for [`Session::parse`] to return).
fn guarded(user: *mut c_void, body: impl FnOnce(&mut Callbacks) -> Result<i32, String>) -> i32 {
    // SAFETY: `user` is the boxed `Callbacks` given to the parser, alive during the parse.
    let cb = unsafe { &mut *(user as *mut Callbacks) };
    let cb_ptr: *mut Callbacks = cb;
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(cb))) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            // SAFETY: as above (the closure's borrow has ended).
            let cb = unsafe { &mut *cb_ptr };
            cb.error.get_or_insert(e);
            0
        }
        Err(_) => {
            // SAFETY: as above.
            let cb = unsafe { &mut *cb_ptr };
            cb.error
                .get_or_insert_with(|| "internal error in the NVDEC callback".to_owned());
            0
        }
    }
}

unsafe extern "C" fn on_sequence(user: *mut c_void, fmt: *mut sys::CUVIDEOFORMAT) -> i32 {
    guarded(user, |cb| {
        // SAFETY: the parser passes a valid format for the duration of the call.
        let f = unsafe { *fmt };
        let depth = 8 + f.bit_depth_luma_minus8 as u32;
        if f.chroma_format != sys::CHROMA_420 {
            let what = match f.chroma_format {
                sys::CHROMA_MONOCHROME => "4:0:0 (monochrome)",
                2 => "4:2:2",
                3 => "4:4:4",
                _ => "an unknown chroma format",
            };
            return Err(format!(
                "the stream is {what}; vmafnvdec outputs 4:2:0 only: decode it with nvh265dec or avdec_h265 instead"
            ));
        }
        if ![8, 10, 12].contains(&depth) || f.bit_depth_chroma_minus8 != f.bit_depth_luma_minus8 {
            return Err(format!(
                "bit depth {depth} (chroma {}) is not supported: 8, 10 or 12 bits, equal for luma and chroma",
                8 + f.bit_depth_chroma_minus8 as u32
            ));
        }
        let display = (
            f.display_left,
            f.display_top,
            f.display_right,
            f.display_bottom,
        );
        let (w, h) = (
            (f.display_right - f.display_left).max(0) as u32,
            (f.display_bottom - f.display_top).max(0) as u32,
        );
        if w == 0 || h == 0 {
            return Err(format!(
                "the sequence header gives an empty picture ({w}x{h})"
            ));
        }
        let surfaces = (f.min_num_decode_surfaces as u32 + cb.display_delay + 4).min(32);
        let geometry = Geometry {
            codec: f.codec,
            coded: (f.coded_width, f.coded_height),
            display,
            bit_depth: depth,
            surfaces,
        };
        if cb.geometry != Some(geometry) {
            if !cb.decoder.is_null() {
                // SAFETY: no picture of it is mapped (each is unmapped in on_display).
                unsafe { (cb.lib.destroy_decoder)(cb.decoder) };
                cb.decoder = std::ptr::null_mut();
                cb.geometry = None;
            }
            let mut ci = Padded::<sys::CUVIDDECODECREATEINFO>::zeroed();
            let c = &mut ci.value;
            c.ulWidth = f.coded_width as _;
            c.ulHeight = f.coded_height as _;
            c.ulNumDecodeSurfaces = surfaces as _;
            c.CodecType = f.codec;
            c.ChromaFormat = f.chroma_format;
            c.ulCreationFlags = sys::CREATE_PREFER_CUVID;
            c.bitDepthMinus8 = f.bit_depth_luma_minus8 as _;
            c.ulMaxWidth = f.coded_width as _;
            c.ulMaxHeight = f.coded_height as _;
            c.display_area = sys::ShortRect {
                left: display.0 as i16,
                top: display.1 as i16,
                right: display.2 as i16,
                bottom: display.3 as i16,
            };
            c.OutputFormat = if depth > 8 {
                sys::SURFACE_P016
            } else {
                sys::SURFACE_NV12
            };
            c.DeinterlaceMode = sys::DEINTERLACE_WEAVE;
            // Output surfaces of the displayed size, even rows for the 4:2:0 chroma plane.
            c.ulTargetWidth = (w + (w & 1)) as _;
            c.ulTargetHeight = (h + (h & 1)) as _;
            c.ulNumOutputSurfaces = 2;
            let mut dec = std::ptr::null_mut();
            // SAFETY: valid out-pointer and create info; the context is current.
            cu("cuvidCreateDecoder", unsafe {
                (cb.lib.create_decoder)(&mut dec, c)
            })
            .map_err(|e| {
                format!(
                    "{e}: NVDEC cannot decode {}x{} {depth}-bit {} on this GPU",
                    f.coded_width,
                    f.coded_height,
                    if f.codec == sys::CODEC_HEVC {
                        "HEVC"
                    } else {
                        "H.264"
                    }
                )
            })?;
            cb.decoder = dec;
            cb.geometry = Some(geometry);
            cb.surface = (h + (h & 1), w, h, if depth > 8 { 2 } else { 1 });
        }
        let info = SequenceInfo {
            width: w,
            height: h,
            bit_depth: depth,
            frame_rate: (f.frame_rate_numerator, f.frame_rate_denominator.max(1)),
            full_range: f.video_signal_flags & 0x08 != 0,
            progressive: f.progressive_sequence != 0,
        };
        if let Some(sink) = cb.sink {
            // SAFETY: set by `parse` for the duration of this parse call.
            unsafe { &mut *sink }.sequence(&info)?;
        }
        Ok(surfaces as i32)
    })
}

unsafe extern "C" fn on_decode(user: *mut c_void, pic: *mut sys::CUVIDPICPARAMS) -> i32 {
    guarded(user, |cb| {
        if cb.decoder.is_null() {
            return Err("a picture came before any sequence header".to_owned());
        }
        // SAFETY: the parser's picture parameters, valid for this call, begin with the head.
        let head = unsafe { *(pic as *const sys::CUVIDPICPARAMS_HEAD) };
        // SAFETY: a live decoder and the parser's picture parameters for this call.
        cu("cuvidDecodePicture", unsafe {
            (cb.lib.decode_picture)(cb.decoder, pic)
        })?;
        cb.track_in_parse(
            Event::Decode {
                surface: head.CurrPicIdx,
                second_field: head.second_field != 0,
            },
            None,
        )?;
        Ok(1)
    })
}

unsafe extern "C" fn on_display(user: *mut c_void, disp: *mut sys::CUVIDPARSERDISPINFO) -> i32 {
    guarded(user, |cb| {
        if disp.is_null() || cb.decoder.is_null() {
            return Ok(1);
        }
        // SAFETY: valid for the duration of the call.
        let d = unsafe { *disp };
        let Some(frame) = cb.track_in_parse(
            Event::Display {
                surface: d.picture_index,
            },
            Some(d.timestamp),
        )?
        else {
            return Ok(1); // no frame claims this picture: nothing to output
        };
        let mut proc_ = Padded::<sys::CUVIDPROCPARAMS>::zeroed();
        proc_.value.progressive_frame = d.progressive_frame;
        proc_.value.top_field_first = d.top_field_first;
        proc_.value.unpaired_field = (d.repeat_first_field < 0) as i32;
        proc_.value.output_stream = cb.stream;
        let (mut ptr, mut pitch) = (0u64, 0u32);
        // SAFETY: a live decoder, an index the parser gave, valid out-pointers.
        cu("cuvidMapVideoFrame64", unsafe {
            (cb.lib.map)(
                cb.decoder,
                d.picture_index,
                &mut ptr,
                &mut pitch,
                &mut proc_.value,
            )
        })?;
        let (rows, w, h, bytes) = cb.surface;
        let picture = DecodedPicture {
            luma: ptr,
            chroma: ptr + pitch as u64 * rows as u64,
            pitch: pitch as usize,
            width: w,
            height: h,
            bytes,
            frame,
            stream: cb.stream,
        };
        let sink = cb.sink;
        let copied = match sink {
            // SAFETY: set by `parse` for the duration of this parse call.
            Some(s) => unsafe { &mut *s }.frame(&picture),
            None => Ok(()),
        };
        // The copies must be complete before the surface is handed back to the decoder.
        // SAFETY: the stream is the session's, alive.
        let synced = cu("cuStreamSynchronize", unsafe {
            cudarc::driver::sys::cuStreamSynchronize(cb.stream as _) as i32
        });
        // SAFETY: the pointer mapped above, unmapped once.
        let unmapped = cu("cuvidUnmapVideoFrame64", unsafe {
            (cb.lib.unmap)(cb.decoder, ptr)
        });
        copied?;
        synced?;
        unmapped?;
        if let Some(s) = sink {
            // SAFETY: as above.
            unsafe { &mut *s }.frame_ready()?;
        }
        Ok(1)
    })
}
