//! Element `vmafnvdec`: H.264 and HEVC decoding on NVDEC with NVIDIA's own bitstream parser,
//! into CUDA memory that `vmafcompare` reads in place.
//!
//! Why it exists: on the GPU host GStreamer 1.22's `nvh264dec` delivers about 250-280 frames
//! per second of 1080p H.264 where FFmpeg's NVDEC paths (`-hwaccel cuda`, `h264_cuvid`)
//! deliver about 500 from the same stream on the same card; scoring behind `nvh264dec` is
//! then limited by the decoder, not by VMAF. This element drives the engines the way FFmpeg's
//! `h264_cuvid` does (the parser's display queue lets several pictures decode while one is
//! copied out), and allocates its output from a `GstCudaBufferPool` in the device's primary
//! context, the context `vmafcompare` runs its kernels in, so no copy happens between the two.
//!
//! Layout: [`sys`] (the NVDEC API, loaded at run time), [`frames`] (which input frame each
//! decoded picture belongs to: a pure function of the parser's callbacks), [`session`]
//! (parser + decoder, GStreamer-free), `imp` (the `GstVideoDecoder` subclass and its public
//! type [`VmafNvDec`], re-exported here).

use gst::glib;
use gst::prelude::*;

pub mod frames;
mod imp;
pub mod session;
pub mod sys;

pub use imp::element::VmafNvDec;

/// Registers `vmafnvdec` (rank none: pipelines name it; `decodebin` picks it only when the
/// application raises its rank, as the `vmafcompare` command does).
pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(
        Some(plugin),
        "vmafnvdec",
        gst::Rank::NONE,
        VmafNvDec::static_type(),
    )
}
