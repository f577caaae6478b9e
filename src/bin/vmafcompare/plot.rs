//! `--plot`: the per-frame VMAF as an SVG plot. One file: its line, its pooled mean dashed
//! and its worst frames circled in red (as `examples/vmaf_files.rs` draws it); several: one
//! line per file in one plot, with a legend giving each file's mean.

use std::path::Path;

use plotters::prelude::*;

use crate::report::{worst_moments, FileResult};

/// Writes the plot of `files` to `path`, marking `worst` frames when there is one file.
pub fn plot(
    path: &Path,
    files: &[FileResult],
    worst: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let all = files.iter().flat_map(|f| f.scored.frames.iter());
    let last = all.clone().map(|p| p.index).max().unwrap_or(1).max(1);
    // VMAF axis: the scores' range widened to tens, within 0..100.
    let (lo, hi) = all.fold((100f64, 0f64), |(lo, hi), p| {
        (lo.min(p.vmaf), hi.max(p.vmaf))
    });
    let lo = ((lo - 5.0) / 10.0).floor().clamp(0.0, 9.0) * 10.0;
    let hi = ((hi + 5.0) / 10.0).ceil().clamp(lo / 10.0 + 1.0, 10.0) * 10.0;
    let mean_of = |f: &FileResult| f.scored.summary.get("vmaf").map_or(f64::NAN, |p| p.mean);
    let caption = match files {
        [one] => format!(
            "VMAF per frame of {} (mean {:.3}; worst frames in red)",
            one.label,
            mean_of(one)
        ),
        _ => format!("VMAF per frame of {} files", files.len()),
    };
    let mut chart = ChartBuilder::on(&root)
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
    root.present()?;
    Ok(())
}
