//! `--plot` and `--rq-plot`, drawn with plotters as SVG; a `.png` path gets that SVG
//! rasterised by resvg with a system font (so the SVG path needs no font at all).
//!
//! `--plot`: the per-frame VMAF. One file: its line, its pooled mean dashed and its worst
//! frames circled in red; several: one line per file, with a legend giving each file's mean.
//! `--rq-plot`: the rate-quality curve, pooled VMAF against bitrate, one labelled point per
//! file whose bitrate is known, joined in bitrate order.

use std::error::Error;
use std::path::Path;

use plotters::prelude::*;

use crate::report::{worst_moments, FileResult};

/// What a plot is written as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `.svg`
    Svg,
    /// `.png`
    Png,
}

impl Format {
    /// The format of `path`, by its extension (`.svg` or `.png`, any case).
    pub fn of(path: &Path) -> Result<Format, String> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("svg") => Ok(Format::Svg),
            Some("png") => Ok(Format::Png),
            _ => Err(format!(
                "{}: a plot is written as .svg or .png, by its extension",
                path.display()
            )),
        }
    }
}

/// Size of both plots, in pixels.
const SIZE: (u32, u32) = (1200, 500);

/// Writes the per-frame plot of `files` to `path`, marking `worst` frames when there is one
/// file.
pub fn plot(path: &Path, files: &[FileResult], worst: usize) -> Result<(), Box<dyn Error>> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw_frames(&root, files, worst)?;
        root.present()?;
    }
    write(path, &svg)
}

/// The VMAF axis for scores from `lo` to `hi`: widened to tens, within 0..100.
fn vmaf_axis(lo: f64, hi: f64) -> (f64, f64) {
    let lo = ((lo - 5.0) / 10.0).floor().clamp(0.0, 9.0) * 10.0;
    let hi = ((hi + 5.0) / 10.0).ceil().clamp(lo / 10.0 + 1.0, 10.0) * 10.0;
    (lo, hi)
}

/// The pooled VMAF of a file.
fn mean_of(f: &FileResult) -> f64 {
    f.scored.summary.get("vmaf").map_or(f64::NAN, |p| p.mean)
}

/// Draws the per-frame plot on `root`.
fn draw_frames(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    files: &[FileResult],
    worst: usize,
) -> Result<(), Box<dyn Error>> {
    root.fill(&WHITE)?;
    let all = files.iter().flat_map(|f| f.scored.frames.iter());
    let last = all.clone().map(|p| p.index).max().unwrap_or(1).max(1);
    let (lo, hi) = all.fold((100f64, 0f64), |(lo, hi), p| {
        (lo.min(p.vmaf), hi.max(p.vmaf))
    });
    let (lo, hi) = vmaf_axis(lo, hi);
    let caption = match files {
        [one] => format!(
            "VMAF per frame of {} (mean {:.3}; worst frames in red)",
            one.label,
            mean_of(one)
        ),
        _ => format!("VMAF per frame of {} files", files.len()),
    };
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 22))
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
    if let [one] = files {
        let frames = &one.scored.frames;
        let mean = mean_of(one);
        chart.draw_series(LineSeries::new(
            frames.iter().map(|p| (p.index, p.vmaf)),
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
        let mut marks = worst_moments(frames, worst);
        marks.sort_by_key(|p| p.index);
        chart.draw_series(marks.iter().enumerate().map(|(i, p)| {
            let dy = if i % 2 == 0 { 10 } else { -26 };
            EmptyElement::at((p.index, p.vmaf))
                + Circle::new((0, 0), 6, RED.stroke_width(2))
                + Text::new(
                    format!("#{} {:.1}", p.index, p.vmaf),
                    (-30, dy),
                    ("sans-serif", 14).into_font().color(&RED),
                )
        }))?;
    } else {
        for (i, f) in files.iter().enumerate() {
            let colour = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    f.scored.frames.iter().map(|p| (p.index, p.vmaf)),
                    colour.stroke_width(2),
                ))?
                .label(format!("{} (mean {:.3})", f.label, mean_of(f)))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK.mix(0.4))
            .position(SeriesLabelPosition::LowerRight)
            .draw()?;
    }
    Ok(())
}

/// One point of the rate-quality curve.
struct RqPoint<'a> {
    label: &'a str,
    kbps: f64,
    vmaf: f64,
}

/// The files' points for the rate-quality curve, in bitrate order; files without a bitrate
/// or a pooled VMAF are left out.
fn rq_points(files: &[FileResult]) -> Vec<RqPoint<'_>> {
    let mut points: Vec<RqPoint> = files
        .iter()
        .filter_map(|f| {
            let kbps = f.scored.bitrate.as_ref()?.kbps;
            let vmaf = mean_of(f);
            (kbps.is_finite() && vmaf.is_finite()).then_some(RqPoint {
                label: &f.label,
                kbps,
                vmaf,
            })
        })
        .collect();
    points.sort_by(|a, b| a.kbps.total_cmp(&b.kbps));
    points
}

/// Writes the rate-quality curve of `files` to `path`. Returns how many files were left out
/// (bitrate unknown); an error when no file has a bitrate.
pub fn rq_plot(path: &Path, files: &[FileResult]) -> Result<usize, Box<dyn Error>> {
    let points = rq_points(files);
    if points.is_empty() {
        return Err("no distorted file's bitrate is known: nothing to draw".into());
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw_rq(&root, &points)?;
        root.present()?;
    }
    write(path, &svg)?;
    Ok(files.len() - points.len())
}

/// Draws the rate-quality curve on `root`.
fn draw_rq(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    points: &[RqPoint<'_>],
) -> Result<(), Box<dyn Error>> {
    root.fill(&WHITE)?;
    let max_rate = points.iter().map(|p| p.kbps).fold(0.0, f64::max);
    let (lo, hi) = points.iter().fold((100f64, 0f64), |(lo, hi), p| {
        (lo.min(p.vmaf), hi.max(p.vmaf))
    });
    let (lo, hi) = vmaf_axis(lo, hi);
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!(
                "Rate-quality: pooled VMAF of {} file{}",
                points.len(),
                if points.len() == 1 { "" } else { "s" }
            ),
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..(max_rate * 1.15).max(1.0), lo..hi)?;
    chart
        .configure_mesh()
        .x_desc("video bitrate (kbit/s)")
        .y_desc("VMAF (mean)")
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    chart.draw_series(LineSeries::new(
        points.iter().map(|p| (p.kbps, p.vmaf)),
        BLUE.stroke_width(2),
    ))?;
    // Labels under the points, every other one above, so that neighbours do not overlap.
    chart.draw_series(points.iter().enumerate().map(|(i, p)| {
        let dy = if i % 2 == 0 { 10 } else { -26 };
        EmptyElement::at((p.kbps, p.vmaf))
            + Circle::new((0, 0), 5, BLUE.filled())
            + Text::new(
                format!("{} {:.2}", p.label, p.vmaf),
                (-30, dy),
                ("sans-serif", 14).into_font().color(&BLACK),
            )
    }))?;
    Ok(())
}

/// Writes `svg` to `path` as it is, or rasterised to PNG when `path` ends in `.png`.
fn write(path: &Path, svg: &str) -> Result<(), Box<dyn Error>> {
    match Format::of(path)? {
        Format::Svg => std::fs::write(path, svg)?,
        Format::Png => std::fs::write(path, rasterise(svg)?)?,
    }
    Ok(())
}

/// `svg` drawn as a PNG, its text in a system sans-serif font.
fn rasterise(svg: &str) -> Result<Vec<u8>, Box<dyn Error>> {
    use resvg::{tiny_skia, usvg};
    let mut options = usvg::Options::default();
    let db = options.fontdb_mut();
    db.load_system_fonts();
    let families: Vec<String> = db
        .faces()
        .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
        .collect();
    let preferred = [
        "DejaVu Sans",
        "Liberation Sans",
        "Noto Sans",
        "FreeSans",
        "Arial",
    ];
    let Some(family) = preferred
        .iter()
        .find(|p| families.iter().any(|f| f == *p))
        .map(|p| (*p).to_owned())
        .or_else(|| families.first().cloned())
    else {
        return Err(
            "no system font to draw a PNG's text with: install one (Debian: \
                    fonts-dejavu-core) or write the plot as .svg"
                .into(),
        );
    };
    db.set_sans_serif_family(family.clone());
    options.font_family = family;
    let tree = usvg::Tree::from_str(svg, &options)?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or("cannot make a picture of that size")?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    Ok(pixmap.encode_png()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_extension() {
        assert_eq!(Format::of(Path::new("a/b.SVG")), Ok(Format::Svg));
        assert_eq!(Format::of(Path::new("b.png")), Ok(Format::Png));
        assert!(Format::of(Path::new("b.jpg")).is_err());
        assert!(Format::of(Path::new("b")).is_err());
    }

    #[test]
    fn axis_is_widened_to_tens() {
        assert_eq!(vmaf_axis(31.2, 47.9), (20.0, 60.0));
        assert_eq!(vmaf_axis(99.0, 100.0), (90.0, 100.0));
        assert_eq!(vmaf_axis(0.0, 2.0), (0.0, 10.0));
    }
}
