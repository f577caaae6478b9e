//! Scores a distorted video file against its reference with `vmafcompare`: shows a progress
//! bar, prints the pooled scores and the worst frames, and writes a per-frame VMAF plot (SVG)
//! with the worst frames marked.
//!
//! ```sh
//! cargo run --release --example vmaf_files -- reference.mp4 distorted.mp4 --plot vmaf.svg
//! ```
//! Both files are decoded with `decodebin`; any format GStreamer can decode works. A
//! rendition of another size is scaled to the reference's (FFmpeg's bicubic, as
//! `scale=W:H:flags=bicubic+accurate_rnd`; `--scale-method` picks another filter,
//! `--score-size 1920x1080` scores both at a fixed size). `--log scores.json` also writes
//! libvmaf's JSON log.

use std::path::PathBuf;

use clap::Parser;
use gst::prelude::*;
use gstvmafcompare::vmafcompare::{
    FrameMessage, SummaryMessage, FRAME_MESSAGE_NAME, SUMMARY_MESSAGE_NAME,
};
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;

#[derive(Parser)]
#[command(about = "Scores a distorted video file against its reference with VMAF")]
struct Args {
    /// Reference (original) video file.
    reference: PathBuf,
    /// Distorted (encoded, transmitted...) video file.
    distorted: PathBuf,
    /// Per-frame VMAF plot to write (SVG).
    #[arg(long, default_value = "vmaf.svg")]
    plot: PathBuf,
    /// libvmaf-layout JSON log to write as well.
    #[arg(long)]
    log: Option<PathBuf>,
    /// VMAF model: built-in name or libvmaf JSON file.
    #[arg(long, default_value = "vmaf_v0.6.1")]
    model: String,
    /// Backend: auto, cpu or cuda.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Worst moments to list and mark on the plot: the lowest-scoring frames, at least
    /// 1/(4 x worst) of the clip apart so that one bad scene is marked once.
    #[arg(long, default_value_t = 5)]
    worst: usize,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// How a distorted file of another size is scaled to the scoring size: bicubic
    /// (FFmpeg's, the default), bilinear, lanczos, or none (refuse other sizes).
    #[arg(long, default_value = "bicubic")]
    scale_method: String,
    /// Score at WIDTHxHEIGHT (both files scaled to it) instead of the reference's size.
    #[arg(long, value_parser = parse_size)]
    score_size: Option<(u32, u32)>,
}

/// `WIDTHxHEIGHT`, e.g. `1920x1080`.
fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("'{s}': expected WIDTHxHEIGHT, e.g. 1920x1080"))?;
    let n = |v: &str| {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|v| *v > 0)
            .ok_or_else(|| format!("'{s}': expected WIDTHxHEIGHT, e.g. 1920x1080"))
    };
    Ok((n(w)?, n(h)?))
}

fn main() {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => {}
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

/// Quotes a path for `gst::parse::launch`.
fn quoted(p: &std::path::Path) -> String {
    format!("\"{}\"", p.display().to_string().replace('"', "\\\""))
}

fn run(args: &Args) -> Result<(), String> {
    gst::init().map_err(|e| e.to_string())?;
    gstvmafcompare::plugin_register_static().map_err(|e| e.to_string())?;
    for f in [&args.reference, &args.distorted] {
        if !f.is_file() {
            return Err(format!("{} is not a file", f.display()));
        }
    }
    let log = args
        .log
        .as_ref()
        .map(|l| format!("results-location={}", quoted(l)))
        .unwrap_or_default();
    let size = args
        .score_size
        .map(|(w, h)| format!("score-width={w} score-height={h}"))
        .unwrap_or_default();
    let desc = format!(
        "vmafcompare name=cmp model={model} backend={backend} scale-method={scale} {size} {log} ! fakesink \
         filesrc location={r} ! decodebin ! cmp.reference \
         filesrc location={d} ! decodebin ! cmp.distorted",
        model = quoted(std::path::Path::new(&args.model)),
        backend = args.backend,
        scale = args.scale_method,
        r = quoted(&args.reference),
        d = quoted(&args.distorted),
    );
    let pipeline = gst::parse::launch(&desc)
        .map_err(|e| e.to_string())?
        .downcast::<gst::Pipeline>()
        .map_err(|_| "not a pipeline")?;
    let bus = pipeline.bus().ok_or("pipeline without bus")?;
    pipeline
        .set_state(gst::State::Paused)
        .map_err(|e| format!("cannot start: {e}"))?;
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(0)
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} ms  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pipeline
        .set_state(gst::State::Playing)
        .map_err(|e| format!("cannot play: {e}"))?;
    let mut frames = Vec::new();
    let mut summary = None;
    let mut warnings = Vec::new();
    for msg in bus.iter_timed(gst::ClockTime::NONE) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                let _ = pipeline.set_state(gst::State::Null);
                return Err(format!("{} ({:?})", e.error(), e.debug()));
            }
            gst::MessageView::Warning(w) => warnings.push(w.error().to_string()),
            gst::MessageView::Element(e) => match e.structure() {
                Some(s) if s.name() == FRAME_MESSAGE_NAME => {
                    let Ok(f) = FrameMessage::try_from(s) else {
                        continue;
                    };
                    if bar.length() == Some(0) {
                        if let Some(d) = pipeline.query_duration::<gst::ClockTime>() {
                            bar.set_length(d.mseconds());
                        }
                    }
                    if let Some(pts) = f.pts {
                        bar.set_position(pts.mseconds());
                    }
                    bar.set_message(format!("frame {} VMAF {:.2}", f.index, f.vmaf));
                    frames.push(f);
                }
                Some(s) if s.name() == SUMMARY_MESSAGE_NAME => {
                    summary = SummaryMessage::try_from(s).ok();
                }
                _ => {}
            },
            _ => {}
        }
    }
    bar.finish_and_clear();
    let _ = pipeline.set_state(gst::State::Null);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let summary = summary.ok_or("no summary: nothing was scored")?;
    println!(
        "{} frames scored ({} backend, model {})",
        summary.frames, summary.backend, summary.model
    );
    if summary.distorted_scaling != "none" || summary.reference_scaling != "none" {
        println!(
            "scored at {}x{}: reference {}, distorted {}",
            summary.scored_width,
            summary.scored_height,
            summary.reference_scaling,
            summary.distorted_scaling
        );
    }
    println!(
        "{:40} {:>12} {:>12} {:>12} {:>12}",
        "metric", "mean", "harmonic", "min", "max"
    );
    for (name, p) in &summary.metrics {
        println!(
            "{name:40} {:12.6} {:12.6} {:12.6} {:12.6}",
            p.mean, p.harmonic_mean, p.min, p.max
        );
    }
    let worst = worst_moments(&frames, args.worst);
    println!("worst frames:");
    for f in &worst {
        println!(
            "  frame {:5}  pts {}  VMAF {:.6}",
            f.index,
            f.pts.map_or("-".to_owned(), |t| t.to_string()),
            f.vmaf
        );
    }
    let mean = summary.get("vmaf").map_or(f64::NAN, |p| p.mean);
    plot(&args.plot, &frames, &worst, mean).map_err(|e| format!("plot: {e}"))?;
    println!("plot written to {}", args.plot.display());
    if let Some(l) = &args.log {
        println!("log written to {}", l.display());
    }
    Ok(())
}

/// The `n` lowest-scoring frames, each at least `frames / (4 n)` frames from those before.
fn worst_moments(frames: &[FrameMessage], n: usize) -> Vec<&FrameMessage> {
    let gap = (frames.len() / (4 * n.max(1))).max(1) as u64;
    let mut by_score: Vec<&FrameMessage> = frames.iter().collect();
    by_score.sort_by(|a, b| a.vmaf.total_cmp(&b.vmaf));
    let mut out: Vec<&FrameMessage> = Vec::with_capacity(n);
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

/// Per-frame VMAF as a line, the pooled mean as a dashed line, the worst frames as red
/// circles labelled with their index.
fn plot(
    path: &std::path::Path,
    frames: &[FrameMessage],
    worst: &[&FrameMessage],
    mean: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let last = frames.last().map_or(1, |f| f.index.max(1));
    // VMAF axis: the scores' range widened to tens, within 0..100.
    let (lo, hi) = frames.iter().fold((100f64, 0f64), |(lo, hi), f| {
        (lo.min(f.vmaf), hi.max(f.vmaf))
    });
    let lo = ((lo - 5.0) / 10.0).floor().clamp(0.0, 9.0) * 10.0;
    let hi = ((hi + 5.0) / 10.0).ceil().clamp(lo / 10.0 + 1.0, 10.0) * 10.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("VMAF per frame (mean {mean:.3}; worst frames in red)"),
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0u64..last + (last / 25).max(1), lo..hi)?;
    chart
        .configure_mesh()
        .x_desc("frame")
        .y_desc("VMAF")
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    chart.draw_series(LineSeries::new(
        frames.iter().map(|f| (f.index, f.vmaf)),
        BLUE.stroke_width(2),
    ))?;
    chart.draw_series(DashedLineSeries::new(
        [(0, mean), (last, mean)],
        6,
        4,
        BLACK.mix(0.6).stroke_width(1),
    ))?;
    // Labels centred under the marks, every other one (in time order) above, so that
    // neighbouring labels do not overlap.
    let mut marks = worst.to_vec();
    marks.sort_by_key(|f| f.index);
    chart.draw_series(marks.iter().enumerate().map(|(i, f)| {
        let dy = if i % 2 == 0 { 10 } else { -26 };
        EmptyElement::at((f.index, f.vmaf))
            + Circle::new((0, 0), 6, RED.stroke_width(2))
            + Text::new(
                format!("#{} {:.1}", f.index, f.vmaf),
                (-30, dy),
                ("sans-serif", 14).into_font().color(&RED),
            )
    }))?;
    root.present()?;
    Ok(())
}
