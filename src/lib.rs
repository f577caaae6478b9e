//! GStreamer plugin `vmafcompare`: scores a distorted video against its reference with VMAF,
//! frame by frame, inside a running pipeline.
//!
//! Layers (data flows one way): [`vmafcompare`] (GStreamer glue) -> [`engine`] (models,
//! pooling, logs, the backends that run features) -> [`features`] (the registry: one folder
//! per metric, its CPU and CUDA halves) -> runtime ([`cpu`]: thread pool; [`cuda`]: context,
//! streams, memory, staging) -> `kernels/*.cu`. [`video`] holds the frame views every layer
//! shares.
#![allow(clippy::too_many_arguments)]

use gst::glib;

pub mod cpu;
pub mod cuda;
pub mod engine;
pub mod features;
pub mod nvdec;
pub mod video;
pub mod vmafcompare;

fn plugin_init(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    vmafcompare::register(plugin)?;
    nvdec::register(plugin)
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
