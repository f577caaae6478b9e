//! The `vmafcompare` element: public wrapper, registration, and the typed forms of what it
//! posts (frame and summary messages) and attaches (the per-frame `GstCustomMeta`).

use gst::glib;
use gst::prelude::*;

mod imp;
mod live;
mod messages;
mod options;
mod pad;
mod slots;

pub use pad::VmafRenditionPad;

pub use imp::element::VmafCompare;
pub use live::OnFull;
pub use messages::{
    frame_meta, frame_metas, AlertMessage, FrameMessage, InputPath, OffsetMessage, PooledMetric,
    SummaryMessage, WindowStats, ALERT_MESSAGE_NAME, FRAME_MESSAGE_NAME, META_NAME,
    OFFSET_MESSAGE_NAME, SUMMARY_MESSAGE_NAME,
};
pub use options::{ResultsFormat, VmafBackend, VmafScaleMethod};

/// Registers the element and its custom meta with `plugin`.
pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    if !gst::meta::CustomMeta::is_registered(META_NAME) {
        gst::meta::CustomMeta::register(META_NAME, &[]);
    }
    #[cfg(feature = "doc")]
    {
        VmafBackend::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
        ResultsFormat::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
        OnFull::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
        VmafScaleMethod::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    }
    gst::Element::register(
        Some(plugin),
        "vmafcompare",
        gst::Rank::NONE,
        VmafCompare::static_type(),
    )
}
