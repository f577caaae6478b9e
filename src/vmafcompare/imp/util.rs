//! Small things every part of the element uses: its debug category, a poison-tolerant lock,
//! how the summary joins values, and what a GAP buffer is.

use std::sync::{LazyLock, Mutex, MutexGuard};

pub(super) static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "vmafcompare",
        gst::DebugColorFlags::empty(),
        Some("VMAF scoring of a distorted stream against its reference"),
    )
});

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What changed during a stream, for the summary and the log: the values in order, joined by
/// `+` (`system+dmabuf-readback`, `bicubic 1280x720->1920x1080+none`).
pub(super) fn joined<S: AsRef<str>>(values: impl IntoIterator<Item = S>) -> String {
    let mut out = String::new();
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push('+');
        }
        out.push_str(v.as_ref());
    }
    out
}

/// A GAP buffer carries no picture to score (the aggregator turns GAP events into empty
/// buffers with this flag).
pub(super) fn is_gap(buffer: &gst::BufferRef) -> bool {
    buffer.flags().contains(gst::BufferFlags::GAP)
}
