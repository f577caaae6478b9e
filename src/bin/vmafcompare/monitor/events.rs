//! `--events FILE` / `[server] events`: every scored frame of every channel appended to one
//! file as a JSON line (channel, rendition, index, pts, running_time, vmaf, window_mean,
//! window_min, skipped, metrics), for plotting and for checking what Prometheus scraped.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;

use gstvmafcompare::vmafcompare::FrameMessage;
use serde_json::{json, Map, Value};

/// The open events file, shared by the channels' threads (one short lock per frame).
pub struct Events {
    file: Mutex<BufWriter<File>>,
}

impl Events {
    /// Opens `path` for appending (created if missing). Errors: the path cannot be opened,
    /// as text naming it.
    pub fn open(path: &Path) -> Result<Self, String> {
        let file = File::options()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("{}: cannot open the events file: {e}", path.display()))?;
        Ok(Self {
            file: Mutex::new(BufWriter::new(file)),
        })
    }

    /// Appends one frame's line and flushes it (readers follow the file live). Errors: the
    /// write failed (disk full), as text.
    pub fn write(
        &self,
        channel: &str,
        rendition: &str,
        frame: &FrameMessage,
    ) -> Result<(), String> {
        let line = line(channel, rendition, frame);
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        writeln!(file, "{line}")
            .and_then(|()| file.flush())
            .map_err(|e| format!("cannot write the events file: {e}"))
    }
}

/// One frame as a JSON object; times in ns (null when unknown), metrics other than `vmaf`
/// under their names (non-finite values as null).
fn line(channel: &str, rendition: &str, frame: &FrameMessage) -> Value {
    let metrics: Map<String, Value> = frame
        .metrics
        .iter()
        .filter(|(n, _)| n != "vmaf")
        .map(|(n, v)| (n.clone(), json!(v.is_finite().then_some(*v))))
        .collect();
    json!({
        "channel": channel,
        "rendition": rendition,
        "index": frame.index,
        "pts": frame.pts.map(|t| t.nseconds()),
        "running_time": frame.running_time.map(|t| t.nseconds()),
        "vmaf": frame.vmaf,
        "window_mean": frame.window.map(|w| w.mean),
        "window_min": frame.window.map(|w| w.min),
        "skipped": frame.skipped,
        "metrics": metrics,
    })
}
