//! The report on standard output: a line per scored file, the pooled scores (one row per file
//! and metric, with the 1%, 5% and 10% lows and the file's bitrate), and each file's worst frames.

use std::fmt::Write as _;
use std::path::PathBuf;

use gstvmafcompare::vmafcompare::SummaryMessage;

use crate::probes::Facts;

/// One scored frame, as the report and the plot need it.
#[derive(Clone, Debug)]
pub struct Point {
    /// libvmaf's `frameNum`.
    pub index: u64,
    /// Presentation timestamp of the frame (of its distorted buffer).
    pub pts: Option<gst::ClockTime>,
    /// The frame's VMAF.
    pub vmaf: f64,
}

/// A distorted file's bitrate and where it was read.
#[derive(Clone, Debug, PartialEq)]
pub struct Bitrate {
    /// Kilobits (1000 bits) per second.
    pub kbps: f64,
    /// Where it comes from, as the report says it: the video packets' bytes over their
    /// duration, the demuxer's `bitrate` or `nominal-bitrate` tag of the video stream, or the
    /// file's size over its duration.
    pub source: String,
}

/// What one distorted file gives: the element's summary, the per-frame VMAF and the
/// per-frame values of the other metrics the report shows.
pub struct Scored {
    /// The `vmafcompare-summary` message.
    pub summary: SummaryMessage,
    /// Per-frame VMAF, in frame order.
    pub frames: Vec<Point>,
    /// Per-frame values of the other metrics shown (`NaN` where a frame lacks one), by name.
    pub extra: Vec<(String, Vec<f64>)>,
    /// The file's bitrate, when known.
    pub bitrate: Option<Bitrate>,
    /// The colour ranges and their conversion, when the element's summary gives them.
    pub range: Option<Range>,
    /// What was measured of the distorted file while it played.
    pub facts: Facts,
}

/// The colour ranges of a rendition's two streams and what was converted (the summary's
/// `reference-range`, `distorted-range` and `range-conversion`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Range {
    /// `limited` or `full`.
    pub reference: String,
    /// `limited` or `full`.
    pub distorted: String,
    /// `none`, or what was converted (e.g. `distorted full->limited`).
    pub conversion: String,
}

impl Range {
    /// The summary's range fields, when it has them.
    pub fn of(s: &gst::StructureRef) -> Option<Range> {
        let text = |f: &str| s.get::<String>(f).ok().filter(|v| !v.is_empty());
        Some(Range {
            reference: text("reference-range")?,
            distorted: text("distorted-range")?,
            conversion: text("range-conversion").unwrap_or_else(|| "none".to_owned()),
        })
    }
}

/// One distorted file's results.
pub struct FileResult {
    /// How the report names the file (its label, see `Args::labels`).
    pub label: String,
    /// The file as given on the command line, shown beside the label when they differ.
    pub path: PathBuf,
    /// What its run gave.
    pub scored: Scored,
    /// The log written for it, if any.
    pub log: Option<PathBuf>,
}

/// Prefixes of the features that models read (VIF, ADM, motion, CAMBI, SpEED): pooled, but
/// not printed unless `--all-metrics` or `--features` asks for them.
const ELEMENTARY: [&str; 11] = [
    "integer_",
    "VMAF_",
    "cambi",
    "speed_",
    "float_adm",
    "float_vif",
    "float_motion",
    "vif_scale",
    "adm",
    "aim",
    "motion",
];

/// Whether the table shows metric `name`: `vmaf`, the scores of further models (not the
/// members of a bootstrap collection, `NAME_0001` ...), the metrics `--features` names, and
/// everything with `--all-metrics`.
pub fn shown(name: &str, all: bool, features: &str) -> bool {
    if all || name == "vmaf" {
        return true;
    }
    let asked = features
        .split(',')
        .map(str::trim)
        .any(|f| !f.is_empty() && name.contains(f));
    if asked {
        return true;
    }
    let member = name
        .rsplit_once('_')
        .is_some_and(|(_, n)| n.len() == 4 && n.bytes().all(|b| b.is_ascii_digit()));
    !member && !ELEMENTARY.iter().any(|p| name.starts_with(p))
}

/// One row of the table.
struct Row<'a> {
    /// The distorted file.
    label: &'a str,
    /// The metric.
    metric: &'a str,
    /// Frames scored.
    frames: u64,
    /// mean, harmonic mean, min, max, 1% low, 5% low, 10% low (the summary's pooled values).
    values: [f64; 7],
    /// The file's bitrate in kbit/s, if known.
    kbps: Option<f64>,
}

/// The rows of one file: `vmaf`, then the other metrics shown, in log order.
fn rows(file: &FileResult) -> Vec<Row<'_>> {
    let s = &file.scored;
    std::iter::once("vmaf")
        .chain(s.extra.iter().map(|(name, _)| name.as_str()))
        .filter_map(|metric| {
            let p = s.summary.get(metric)?;
            Some(Row {
                label: &file.label,
                metric,
                frames: s.summary.frames,
                values: [
                    p.mean,
                    p.harmonic_mean,
                    p.min,
                    p.max,
                    p.percentile_1,
                    p.percentile_5,
                    p.percentile_10,
                ],
                kbps: s.bitrate.as_ref().map(|b| b.kbps),
            })
        })
        .collect()
}

/// The `n` lowest-scoring frames, each at least `frames / (4 n)` frames from those before.
pub fn worst_moments(frames: &[Point], n: usize) -> Vec<&Point> {
    let gap = (frames.len() / (4 * n.max(1))).max(1) as u64;
    let mut by_score: Vec<&Point> = frames.iter().collect();
    by_score.sort_by(|a, b| a.vmaf.total_cmp(&b.vmaf));
    let mut out: Vec<&Point> = Vec::with_capacity(n);
    for f in by_score {
        if out.len() == n {
            break;
        }
        if out.iter().all(|o| o.index.abs_diff(f.index) >= gap) {
            out.push(f);
        }
    }
    out
}

/// One line of the worst frames: the distorted file's frame number and the time from its
/// first frame (what a player seeks to, whatever the container's start offset), the VMAF,
/// and libvmaf's `frameNum` (the log's) where it differs from the frame number.
fn worst_line(p: &Point, facts: &Facts) -> String {
    let frames = &facts.frames;
    let pts = p.pts.map(gst::ClockTime::nseconds);
    let number = pts.and_then(|t| frames.number_of(t));
    let time = pts
        .zip(frames.first_pts())
        .map(|(t, first)| t.saturating_sub(first) as f64 / 1e9);
    let mut line = format!(
        "  frame {:6}  at {:>10}  VMAF {:10.6}",
        number.map_or(p.index, |n| n as u64),
        time.map_or("-".to_owned(), |s| format!("{s:.3} s")),
        p.vmaf
    );
    if number.is_some_and(|n| n as u64 != p.index) {
        let _ = write!(line, "  (frameNum {} in the log)", p.index);
    }
    line.push('\n');
    line
}

/// The whole report for `files`, with `worst` worst frames per file.
pub fn render(files: &[FileResult], worst: usize) -> String {
    let mut out = String::new();
    for f in files {
        let s = &f.scored.summary;
        let _ = write!(out, "{}", f.label);
        let path = f.path.display().to_string();
        if !path.ends_with(&f.label) {
            let _ = write!(out, " ({path})");
        }
        let _ = write!(
            out,
            ": {} frames scored at {}x{} on the {} backend, model {}",
            s.frames, s.scored_width, s.scored_height, s.backend, s.model
        );
        if s.reference_scaling != "none" {
            let _ = write!(out, "; reference scaled {}", s.reference_scaling);
        }
        if s.distorted_scaling != "none" {
            let _ = write!(out, "; distorted scaled {}", s.distorted_scaling);
        }
        if s.unpaired_reference + s.unpaired_distorted > 0 {
            let _ = write!(
                out,
                "; {} reference and {} distorted frames without a partner",
                s.unpaired_reference, s.unpaired_distorted
            );
        }
        if let Some(r) = &f.scored.range {
            let _ = write!(
                out,
                "; colour range: reference {}, distorted {}",
                r.reference, r.distorted
            );
        }
        if let Some(b) = &f.scored.bitrate {
            let _ = write!(out, "; bitrate {:.1} kbit/s ({})", b.kbps, b.source);
        }
        out.push('\n');
        if let Some(r) = f.scored.range.as_ref().filter(|r| r.conversion != "none") {
            let _ = writeln!(
                out,
                "  {}: colour ranges differ, converted before scoring as FFmpeg does: {}",
                f.label, r.conversion
            );
        }
    }
    let rows: Vec<Row> = files.iter().flat_map(rows).collect();
    let lw = rows
        .iter()
        .map(|r| r.label.chars().count())
        .chain([9])
        .max()
        .unwrap_or(9);
    let mw = rows
        .iter()
        .map(|r| r.metric.chars().count())
        .chain([6])
        .max()
        .unwrap_or(6);
    let _ = writeln!(
        out,
        "\n{:lw$}  {:mw$}  {:>7}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}  {:>9}",
        "distorted",
        "metric",
        "frames",
        "mean",
        "harmonic",
        "min",
        "max",
        "1% low",
        "5% low",
        "10% low",
        "kbit/s"
    );
    for r in &rows {
        let _ = write!(out, "{:lw$}  {:mw$}  {:>7}", r.label, r.metric, r.frames);
        for v in r.values {
            let _ = write!(out, "  {v:>11.6}");
        }
        if let Some(k) = r.kbps {
            let _ = write!(out, "  {k:>9.1}");
        }
        out.push('\n');
    }
    if worst > 0 {
        for f in files {
            let _ = writeln!(
                out,
                "\nworst frames of {} (frame number and time from its first frame):",
                f.label
            );
            for p in worst_moments(&f.scored.frames, worst) {
                out.push_str(&worst_line(p, &f.scored.facts));
            }
        }
    }
    let logs: Vec<_> = files
        .iter()
        .filter_map(|f| f.log.as_ref().map(|l| (f, l)))
        .collect();
    if !logs.is_empty() {
        out.push('\n');
    }
    for (f, l) in logs {
        let _ = writeln!(out, "log of {} written to {}", f.label, l.display());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_metrics_are_shown() {
        assert!(shown("vmaf", false, ""));
        assert!(shown("vmaf_phone", false, ""));
        assert!(!shown("vmaf_b_v0.6.3_0001", false, ""));
        assert!(shown("vmaf_b_v0.6.3_ci_p95_lo", false, ""));
        assert!(!shown("integer_adm2", false, ""));
        assert!(shown("integer_adm2", false, "psnr,adm"));
        assert!(shown("psnr_y", false, "psnr"));
        assert!(shown("float_ssim", false, "float_ssim"));
        assert!(shown("integer_vif_scale0", true, ""));
    }
}
