//! GStreamer plugin `vmafcompare`: scores a distorted video against its reference with VMAF,
//! frame by frame, inside a running pipeline.
//!
//! Layers (data flows one way): [`vmafcompare`] (GStreamer glue) -> [`engine`] (model,
//! pooling, logs) -> [`cpu`] (the integer feature extractors).
#![allow(clippy::too_many_arguments)]

use gst::glib;

pub mod cpu;
pub mod cuda;
pub mod engine;
pub mod vmafcompare;

fn plugin_init(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    vmafcompare::register(plugin)
}

gst::plugin_define!(
    vmafcompare,
    env!("CARGO_PKG_DESCRIPTION"),
    plugin_init,
    concat!(env!("CARGO_PKG_VERSION"), "-", env!("COMMIT_ID")),
    "BSD",
    env!("CARGO_PKG_NAME"),
    env!("CARGO_PKG_NAME"),
    env!("CARGO_PKG_REPOSITORY"),
    env!("BUILD_REL_DATE")
);
