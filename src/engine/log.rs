//! Per-frame and pooled logs in the layouts the libvmaf CLI writes (JSON, XML, CSV), streamed
//! to the file as frames are scored so that memory stays flat on long runs.
//!
//! Layout source: Netflix/vmaf v3.2.0, libvmaf/src/output.c. Values are printed with `%.6f`,
//! or `%.16f` when more than six zeros follow the decimal point, as libvmaf does. Because the
//! processing speed is only known at the end, JSON puts `"fps"` after `"pooled_metrics"` and
//! XML puts `<fyi fps=..>` after `<pooled_metrics>` (key order does not matter to readers).
//! Beside libvmaf's pooled `min`, `max`, `mean` and `harmonic_mean`, each metric's pooled
//! entry has `percentile_1`, `percentile_5` and `percentile_10` (the 1%, 5% and 10% lows,
//! [`crate::engine::pool`]); readers of libvmaf's keys are unaffected.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use crate::engine::plan::FrameScores;
use crate::engine::pool::Pool;

/// Log file format (`results-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// libvmaf's JSON (`frames[].frameNum`, `frames[].metrics`, `pooled_metrics`).
    #[default]
    Json,
    /// libvmaf's XML (`<VMAF><frames><frame frameNum=..>`, `<pooled_metrics>`).
    Xml,
    /// libvmaf's CSV (`Frame,<metric>,...`).
    Csv,
}

/// Why a log could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write results to '{path}': {source}")]
pub struct LogError {
    /// The file.
    pub path: PathBuf,
    /// The I/O error.
    pub source: std::io::Error,
}

/// Version string written in the logs' `version` field.
pub const LOG_VERSION: &str = concat!("vmafcompare-", env!("CARGO_PKG_VERSION"));

/// Formats a score as libvmaf's writers do: `%.6f`, or `%.16f` for values with more than six
/// leading zeros after the decimal point (`count_leading_zeros_d`).
pub fn format_score(v: f64) -> String {
    let x = v.abs();
    let mut frac = x - x.trunc().min(i32::MAX as f64);
    let mut zeros = 0;
    while frac < 1.0 && frac != 0.0 && zeros < 400 {
        frac *= 10.0;
        zeros += 1;
    }
    if zeros <= 6 {
        format!("{v:.6}")
    } else {
        format!("{v:.16}")
    }
}

fn json_value(v: f64) -> String {
    if v.is_finite() {
        format_score(v)
    } else {
        "null".to_owned()
    }
}

enum Sink {
    Json {
        first: bool,
    },
    Xml(quick_xml::Writer<BufWriter<File>>),
    /// Boxed: the CSV writer's buffers make it several times larger than the other variants.
    Csv(Box<csv::Writer<BufWriter<File>>>),
}

/// A log being written. Created (and the file opened) before the first frame, so an
/// unwritable path is reported before any work.
pub struct LogWriter {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    sink: Sink,
    header_written: bool,
    /// `(key, text)` facts written beside `fps` at the end (see [`LogWriter::note`]).
    notes: Vec<(&'static str, String)>,
}

impl LogWriter {
    /// Creates (truncates) `path`.
    ///
    /// Errors: [`LogError`] when the file cannot be created.
    pub fn create(path: &Path, format: LogFormat) -> Result<Self, LogError> {
        let err = |source| LogError {
            path: path.to_owned(),
            source,
        };
        let file = File::create(path).map_err(err)?;
        let buf = BufWriter::new(file);
        let (out, sink) = match format {
            LogFormat::Json => (Some(buf), Sink::Json { first: true }),
            LogFormat::Xml => (
                None,
                Sink::Xml(quick_xml::Writer::new_with_indent(buf, b' ', 2)),
            ),
            LogFormat::Csv => (
                None,
                Sink::Csv(Box::new(
                    csv::WriterBuilder::new().flexible(true).from_writer(buf),
                )),
            ),
        };
        Ok(Self {
            path: path.to_owned(),
            out,
            sink,
            header_written: false,
            notes: Vec::new(),
        })
    }

    fn io_err(&self, source: std::io::Error) -> LogError {
        LogError {
            path: self.path.clone(),
            source,
        }
    }

    fn header(&mut self, names: &[String], width: u32, height: u32) -> std::io::Result<()> {
        if self.header_written {
            return Ok(());
        }
        self.header_written = true;
        match &mut self.sink {
            Sink::Json { .. } => {
                if let Some(out) = self.out.as_mut() {
                    write!(
                        out,
                        "{{\n  \"version\": \"{LOG_VERSION}\",\n  \"frames\": ["
                    )?;
                }
            }
            Sink::Xml(w) => {
                w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
                    .map_err(std::io::Error::other)?;
                let mut root = BytesStart::new("VMAF");
                root.push_attribute(("version", LOG_VERSION));
                w.write_event(Event::Start(root))
                    .map_err(std::io::Error::other)?;
                let mut params = BytesStart::new("params");
                params.push_attribute(("qualityWidth", width.to_string().as_str()));
                params.push_attribute(("qualityHeight", height.to_string().as_str()));
                w.write_event(Event::Empty(params))
                    .map_err(std::io::Error::other)?;
                w.write_event(Event::Start(BytesStart::new("frames")))
                    .map_err(std::io::Error::other)?;
            }
            Sink::Csv(w) => {
                let mut rec = vec!["Frame".to_owned()];
                rec.extend(names.iter().cloned());
                rec.push(String::new());
                w.write_record(&rec).map_err(std::io::Error::other)?;
            }
        }
        Ok(())
    }

    /// Appends one frame. `width`/`height` go into the XML header.
    pub fn write_frame(
        &mut self,
        scores: &FrameScores,
        width: u32,
        height: u32,
    ) -> Result<(), LogError> {
        self.write_frame_inner(scores, width, height)
            .map_err(|e| self.io_err(e))
    }

    fn write_frame_inner(
        &mut self,
        s: &FrameScores,
        width: u32,
        height: u32,
    ) -> std::io::Result<()> {
        self.header(&s.names, width, height)?;
        match &mut self.sink {
            Sink::Json { first } => {
                let Some(out) = self.out.as_mut() else {
                    return Ok(());
                };
                write!(
                    out,
                    "{}    {{\n      \"frameNum\": {},\n      \"metrics\": {{\n",
                    if *first { "\n" } else { ",\n" },
                    s.index
                )?;
                *first = false;
                let n = s.values.len();
                for (i, (name, v)) in s.iter().enumerate() {
                    let sep = if i + 1 < n { "," } else { "" };
                    writeln!(out, "        \"{name}\": {}{sep}", json_value(v))?;
                }
                write!(out, "      }}\n    }}")?;
            }
            Sink::Xml(w) => {
                let mut frame = BytesStart::new("frame");
                frame.push_attribute(("frameNum", s.index.to_string().as_str()));
                for (name, v) in s.iter() {
                    frame.push_attribute((name, format_score(v).as_str()));
                }
                w.write_event(Event::Empty(frame))
                    .map_err(std::io::Error::other)?;
            }
            Sink::Csv(w) => {
                let mut rec = Vec::with_capacity(s.values.len() + 2);
                rec.push(s.index.to_string());
                rec.extend(s.values.iter().map(|v| format_score(*v)));
                rec.push(String::new());
                w.write_record(&rec).map_err(std::io::Error::other)?;
            }
        }
        Ok(())
    }

    /// Records a fact about how the metrics were computed, written at the end beside `fps`:
    /// a JSON key at the top level, an attribute of XML's `<fyi>` (the CSV log has no place
    /// for it). Used for `ssimulacra2_yuv_to_rgb`, the colorimetry SSIMULACRA2 converted
    /// with. A repeated key replaces the earlier text.
    pub fn note(&mut self, key: &'static str, text: String) {
        match self.notes.iter_mut().find(|(k, _)| *k == key) {
            Some(n) => n.1 = text,
            None => self.notes.push((key, text)),
        }
    }

    /// Writes the pooled metrics and the processing speed, and closes the file.
    pub fn finish(
        mut self,
        pool: &Pool,
        fps: f64,
        width: u32,
        height: u32,
    ) -> Result<(), LogError> {
        let r = self.finish_inner(pool, fps, width, height);
        r.map_err(|e| self.io_err(e))
    }

    fn finish_inner(
        &mut self,
        pool: &Pool,
        fps: f64,
        width: u32,
        height: u32,
    ) -> std::io::Result<()> {
        self.header(pool.names(), width, height)?;
        let pooled = pool.pooled();
        let fps_text = if fps.is_finite() {
            format!("{fps:.2}")
        } else {
            "null".to_owned()
        };
        match &mut self.sink {
            Sink::Json { .. } => {
                let Some(out) = self.out.as_mut() else {
                    return Ok(());
                };
                write!(out, "\n  ],\n  \"pooled_metrics\": {{")?;
                for (i, (name, p)) in pooled.iter().enumerate() {
                    write!(
                        out,
                        "{}    \"{name}\": {{\n      \"min\": {},\n      \"max\": {},\n      \"mean\": {},\n      \"harmonic_mean\": {},\n      \"percentile_1\": {},\n      \"percentile_5\": {},\n      \"percentile_10\": {}\n    }}",
                        if i > 0 { ",\n" } else { "\n" },
                        json_value(p.min),
                        json_value(p.max),
                        json_value(p.mean),
                        json_value(p.harmonic_mean),
                        json_value(p.percentile_1),
                        json_value(p.percentile_5),
                        json_value(p.percentile_10)
                    )?;
                }
                write!(out, "\n  }},\n  \"aggregate_metrics\": {{\n  }},\n")?;
                for (key, text) in &self.notes {
                    let text = serde_json::to_string(text).map_err(std::io::Error::other)?;
                    writeln!(out, "  \"{key}\": {text},")?;
                }
                write!(out, "  \"fps\": {fps_text}\n}}\n")?;
                out.flush()?;
            }
            Sink::Xml(w) => {
                let e = std::io::Error::other;
                w.write_event(Event::End(BytesEnd::new("frames")))
                    .map_err(e)?;
                w.write_event(Event::Start(BytesStart::new("pooled_metrics")))
                    .map_err(e)?;
                for (name, p) in &pooled {
                    let mut m = BytesStart::new("metric");
                    m.push_attribute(("name", *name));
                    m.push_attribute(("min", format_score(p.min).as_str()));
                    m.push_attribute(("max", format_score(p.max).as_str()));
                    m.push_attribute(("mean", format_score(p.mean).as_str()));
                    m.push_attribute(("harmonic_mean", format_score(p.harmonic_mean).as_str()));
                    m.push_attribute(("percentile_1", format_score(p.percentile_1).as_str()));
                    m.push_attribute(("percentile_5", format_score(p.percentile_5).as_str()));
                    m.push_attribute(("percentile_10", format_score(p.percentile_10).as_str()));
                    w.write_event(Event::Empty(m)).map_err(e)?;
                }
                w.write_event(Event::End(BytesEnd::new("pooled_metrics")))
                    .map_err(e)?;
                w.write_event(Event::Empty(BytesStart::new("aggregate_metrics")))
                    .map_err(e)?;
                let mut fyi = BytesStart::new("fyi");
                fyi.push_attribute(("fps", fps_text.as_str()));
                for (key, text) in &self.notes {
                    fyi.push_attribute((*key, text.as_str()));
                }
                w.write_event(Event::Empty(fyi)).map_err(e)?;
                w.write_event(Event::End(BytesEnd::new("VMAF")))
                    .map_err(e)?;
                w.write_event(Event::Text(BytesText::new("\n")))
                    .map_err(e)?;
                w.get_mut().flush()?;
            }
            Sink::Csv(w) => w.flush()?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_printf() {
        assert_eq!(format_score(93.913917), "93.913917");
        assert_eq!(format_score(0.0), "0.000000");
        assert_eq!(format_score(1.5e-8), "0.0000000150000000");
        assert_eq!(format_score(-2.25), "-2.250000");
    }
}
