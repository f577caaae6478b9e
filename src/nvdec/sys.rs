//! The part of NVIDIA's NVDEC API (`nvcuvid.h`, `cuviddec.h`, Video Codec SDK 12/13) that
//! [`super::session`] uses, loaded at run time from the driver's `libnvcuvid.so.1`.
//!
//! Nothing is linked: the plugin loads on machines without an NVIDIA driver, and the element
//! reports a clear error at start instead. The struct layouts below are those of the SDK
//! headers on 64-bit Linux (where the headers' `unsigned long` is 64 bits). Structs that are
//! passed *in* are followed by zeroed reserve space ([`Padded`]) so that a driver built for a
//! later header revision, which may read reserved fields past the end we know, reads zeros.
#![allow(non_camel_case_types, non_snake_case, clippy::upper_case_acronyms)]

use std::ffi::{c_int, c_short, c_uint, c_ulong, c_ulonglong, c_void};
use std::sync::OnceLock;

/// `CUresult` (0 is success).
pub type CUresult = c_int;
/// An opaque parser handle (`CUvideoparser`).
pub type CUvideoparser = *mut c_void;
/// An opaque decoder handle (`CUvideodecoder`).
pub type CUvideodecoder = *mut c_void;

/// `cudaVideoCodec_H264`.
pub const CODEC_H264: c_int = 4;
/// `cudaVideoCodec_HEVC`.
pub const CODEC_HEVC: c_int = 8;
/// `cudaVideoChromaFormat_Monochrome` .. `_444`.
pub const CHROMA_MONOCHROME: c_int = 0;
/// `cudaVideoChromaFormat_420`.
pub const CHROMA_420: c_int = 1;
/// `cudaVideoSurfaceFormat_NV12`: 8-bit, luma plane then interleaved CbCr at half height.
pub const SURFACE_NV12: c_int = 0;
/// `cudaVideoSurfaceFormat_P016`: as NV12 with 16-bit words, samples in the high bits.
pub const SURFACE_P016: c_int = 1;
/// `cudaVideoDeinterlaceMode_Weave` (no deinterlacing).
pub const DEINTERLACE_WEAVE: c_int = 0;
/// `cudaVideoCreate_PreferCUVID`: the dedicated video engines.
pub const CREATE_PREFER_CUVID: c_ulong = 0x04;
/// `CUVID_PKT_ENDOFSTREAM`: last packet; the parser displays what it still holds.
pub const PKT_ENDOFSTREAM: c_ulong = 0x01;
/// `CUVID_PKT_TIMESTAMP`: the packet's timestamp is valid.
pub const PKT_TIMESTAMP: c_ulong = 0x02;
/// `CUVID_PKT_ENDOFPICTURE`: the packet holds exactly one frame (an access unit).
pub const PKT_ENDOFPICTURE: c_ulong = 0x08;

/// `CUVIDEOFORMAT`: what the parser found in a sequence header (out).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CUVIDEOFORMAT {
    pub codec: c_int,
    pub frame_rate_numerator: c_uint,
    pub frame_rate_denominator: c_uint,
    pub progressive_sequence: u8,
    pub bit_depth_luma_minus8: u8,
    pub bit_depth_chroma_minus8: u8,
    pub min_num_decode_surfaces: u8,
    pub coded_width: c_uint,
    pub coded_height: c_uint,
    pub display_left: c_int,
    pub display_top: c_int,
    pub display_right: c_int,
    pub display_bottom: c_int,
    pub chroma_format: c_int,
    pub bitrate: c_uint,
    pub display_aspect_x: c_int,
    pub display_aspect_y: c_int,
    /// Bits 0-2 video_format, bit 3 video_full_range_flag.
    pub video_signal_flags: u8,
    pub color_primaries: u8,
    pub transfer_characteristics: u8,
    pub matrix_coefficients: u8,
    pub seqhdr_data_length: c_uint,
}

/// `CUVIDPARSERDISPINFO`: a picture ready for display (out).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CUVIDPARSERDISPINFO {
    pub picture_index: c_int,
    pub progressive_frame: c_int,
    pub top_field_first: c_int,
    pub repeat_first_field: c_int,
    pub timestamp: i64,
}

/// `CUVIDPICPARAMS`: the parser fills it and the decoder takes it as is; only its first
/// fields ([`CUVIDPICPARAMS_HEAD`]) are read here.
#[repr(C)]
pub struct CUVIDPICPARAMS {
    _opaque: [u8; 0],
}

/// The first fields of `CUVIDPICPARAMS` (`cuviddec.h`), the same in every SDK revision: which
/// decode surface the picture goes into and whether it completes a field pair.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CUVIDPICPARAMS_HEAD {
    pub PicWidthInMbs: c_int,
    pub FrameHeightInMbs: c_int,
    /// The decode surface of this picture (what `CUVIDPARSERDISPINFO::picture_index` names
    /// when it is displayed).
    pub CurrPicIdx: c_int,
    pub field_pic_flag: c_int,
    pub bottom_field_flag: c_int,
    /// 1: the second field of a complementary field pair (its first is in `CurrPicIdx`).
    pub second_field: c_int,
}

pub type PfnSequence = unsafe extern "C" fn(*mut c_void, *mut CUVIDEOFORMAT) -> c_int;
pub type PfnDecode = unsafe extern "C" fn(*mut c_void, *mut CUVIDPICPARAMS) -> c_int;
pub type PfnDisplay = unsafe extern "C" fn(*mut c_void, *mut CUVIDPARSERDISPINFO) -> c_int;

/// `CUVIDPARSERPARAMS` (in).
#[repr(C)]
pub struct CUVIDPARSERPARAMS {
    pub CodecType: c_int,
    pub ulMaxNumDecodeSurfaces: c_uint,
    pub ulClockRate: c_uint,
    pub ulErrorThreshold: c_uint,
    pub ulMaxDisplayDelay: c_uint,
    /// bAnnexb (bit 0), bMemoryOptimize (bit 1): both 0 here.
    pub flags: c_uint,
    pub uReserved1: [c_uint; 4],
    pub pUserData: *mut c_void,
    pub pfnSequenceCallback: Option<PfnSequence>,
    pub pfnDecodePicture: Option<PfnDecode>,
    pub pfnDisplayPicture: Option<PfnDisplay>,
    pub pfnGetOperatingPoint: *mut c_void,
    pub pfnGetSEIMsg: *mut c_void,
    pub pvReserved2: [*mut c_void; 5],
    pub pExtVideoInfo: *mut c_void,
}

/// `CUVIDSOURCEDATAPACKET` (in).
#[repr(C)]
pub struct CUVIDSOURCEDATAPACKET {
    pub flags: c_ulong,
    pub payload_size: c_ulong,
    pub payload: *const u8,
    pub timestamp: i64,
}

/// A rectangle of `short`s as the decoder's create info has them.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ShortRect {
    pub left: c_short,
    pub top: c_short,
    pub right: c_short,
    pub bottom: c_short,
}

/// `CUVIDDECODECREATEINFO` (in).
#[repr(C)]
pub struct CUVIDDECODECREATEINFO {
    pub ulWidth: c_ulong,
    pub ulHeight: c_ulong,
    pub ulNumDecodeSurfaces: c_ulong,
    pub CodecType: c_int,
    pub ChromaFormat: c_int,
    pub ulCreationFlags: c_ulong,
    pub bitDepthMinus8: c_ulong,
    pub ulIntraDecodeOnly: c_ulong,
    pub ulMaxWidth: c_ulong,
    pub ulMaxHeight: c_ulong,
    pub Reserved1: c_ulong,
    pub display_area: ShortRect,
    pub OutputFormat: c_int,
    pub DeinterlaceMode: c_int,
    pub ulTargetWidth: c_ulong,
    pub ulTargetHeight: c_ulong,
    pub ulNumOutputSurfaces: c_ulong,
    pub vidLock: *mut c_void,
    pub target_rect: ShortRect,
    pub enableHistogram: c_ulong,
    pub Reserved2: [c_ulong; 4],
}

/// `CUVIDPROCPARAMS` (in): how a decoded picture is mapped.
#[repr(C)]
pub struct CUVIDPROCPARAMS {
    pub progressive_frame: c_int,
    pub second_field: c_int,
    pub top_field_first: c_int,
    pub unpaired_field: c_int,
    pub reserved_flags: c_uint,
    pub reserved_zero: c_uint,
    pub raw_input_dptr: c_ulonglong,
    pub raw_input_pitch: c_uint,
    pub raw_input_format: c_uint,
    pub raw_output_dptr: c_ulonglong,
    pub raw_output_pitch: c_uint,
    pub Reserved1: c_uint,
    pub output_stream: *mut c_void,
    pub Reserved: [c_uint; 46],
    pub histogram_dptr: *mut c_ulonglong,
    pub Reserved2: [*mut c_void; 1],
}

/// An in-struct followed by zeroed reserve space (see the module docs).
#[repr(C)]
pub struct Padded<T> {
    pub value: T,
    _reserve: [u64; 64],
}

impl<T> Padded<T> {
    /// All zeros (every struct above is plain data for which zero is a valid value: null
    /// pointers, `None` callbacks, zero counts).
    pub fn zeroed() -> Self {
        // SAFETY: see above; every field of every `T` used here accepts all-zero bits.
        unsafe { std::mem::zeroed() }
    }
}

type FnCreateParser = unsafe extern "C" fn(*mut CUvideoparser, *mut CUVIDPARSERPARAMS) -> CUresult;
type FnParse = unsafe extern "C" fn(CUvideoparser, *mut CUVIDSOURCEDATAPACKET) -> CUresult;
type FnDestroyParser = unsafe extern "C" fn(CUvideoparser) -> CUresult;
type FnCreateDecoder =
    unsafe extern "C" fn(*mut CUvideodecoder, *mut CUVIDDECODECREATEINFO) -> CUresult;
type FnDestroyDecoder = unsafe extern "C" fn(CUvideodecoder) -> CUresult;
type FnDecodePicture = unsafe extern "C" fn(CUvideodecoder, *mut CUVIDPICPARAMS) -> CUresult;
type FnMap = unsafe extern "C" fn(
    CUvideodecoder,
    c_int,
    *mut c_ulonglong,
    *mut c_uint,
    *mut CUVIDPROCPARAMS,
) -> CUresult;
type FnUnmap = unsafe extern "C" fn(CUvideodecoder, c_ulonglong) -> CUresult;

/// The entry points of `libnvcuvid.so.1`.
pub struct Nvcuvid {
    pub create_parser: FnCreateParser,
    pub parse: FnParse,
    pub destroy_parser: FnDestroyParser,
    pub create_decoder: FnCreateDecoder,
    pub destroy_decoder: FnDestroyDecoder,
    pub decode_picture: FnDecodePicture,
    pub map: FnMap,
    pub unmap: FnUnmap,
    /// Kept loaded for the process's lifetime (the pointers above point into it).
    _lib: libloading::Library,
}

static LIB: OnceLock<Result<Nvcuvid, String>> = OnceLock::new();

/// Loads `libnvcuvid.so.1` once.
///
/// Errors: the loader's message (no NVIDIA driver, or a container started without the
/// `video` driver capability, which leaves this library out).
pub fn library() -> Result<&'static Nvcuvid, &'static str> {
    LIB.get_or_init(load).as_ref().map_err(String::as_str)
}

fn load() -> Result<Nvcuvid, String> {
    const NAME: &str = "libnvcuvid.so.1";
    // SAFETY: the driver's library has no initialisers with preconditions; never unloaded.
    let lib = unsafe { libloading::Library::new(NAME) }.map_err(|e| format!("{NAME}: {e}"))?;
    macro_rules! sym {
        ($name:literal) => {{
            // SAFETY: the symbol has the signature of the matching `Fn*` type in the SDK
            // headers (module docs); the pointer lives as long as `lib` (forever).
            let s = unsafe { lib.get($name) }
                .map_err(|e| format!("{NAME}: {}: {e}", String::from_utf8_lossy($name)))?;
            *s
        }};
    }
    Ok(Nvcuvid {
        create_parser: sym!(b"cuvidCreateVideoParser"),
        parse: sym!(b"cuvidParseVideoData"),
        destroy_parser: sym!(b"cuvidDestroyVideoParser"),
        create_decoder: sym!(b"cuvidCreateDecoder"),
        destroy_decoder: sym!(b"cuvidDestroyDecoder"),
        decode_picture: sym!(b"cuvidDecodePicture"),
        map: sym!(b"cuvidMapVideoFrame64"),
        unmap: sym!(b"cuvidUnmapVideoFrame64"),
        _lib: lib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes of the SDK structs on x86-64 Linux, as the headers give them.
    #[test]
    fn layouts_match_the_sdk_headers() {
        assert_eq!(std::mem::size_of::<CUVIDEOFORMAT>(), 64);
        assert_eq!(std::mem::size_of::<CUVIDPARSERDISPINFO>(), 24);
        assert_eq!(std::mem::offset_of!(CUVIDPICPARAMS_HEAD, CurrPicIdx), 8);
        assert_eq!(std::mem::offset_of!(CUVIDPICPARAMS_HEAD, second_field), 20);
        assert_eq!(std::mem::size_of::<CUVIDSOURCEDATAPACKET>(), 32);
        assert_eq!(std::mem::size_of::<CUVIDPARSERPARAMS>(), 136);
        assert_eq!(std::mem::offset_of!(CUVIDPARSERPARAMS, pUserData), 40);
        assert_eq!(
            std::mem::offset_of!(CUVIDDECODECREATEINFO, display_area),
            80
        );
        assert_eq!(std::mem::offset_of!(CUVIDDECODECREATEINFO, vidLock), 120);
        assert_eq!(std::mem::size_of::<CUVIDDECODECREATEINFO>(), 176);
        assert_eq!(std::mem::offset_of!(CUVIDEOFORMAT, chroma_format), 40);
        assert_eq!(std::mem::offset_of!(CUVIDEOFORMAT, seqhdr_data_length), 60);
        assert_eq!(std::mem::offset_of!(CUVIDPROCPARAMS, output_stream), 56);
        assert_eq!(std::mem::size_of::<CUVIDPROCPARAMS>(), 264);
    }
}
