//! One scoring run: the reference against one distorted file, in a pipeline of its own:
//! `filesrc ! decodebin` for each file into `vmafcompare ! fakesink`.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use gst::glib;
use gst::prelude::*;
use gstvmafcompare::vmafcompare::{
    FrameMessage, SummaryMessage, VmafBackend, FRAME_MESSAGE_NAME, SUMMARY_MESSAGE_NAME,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::classify::{Classifier, Failure};
use crate::cli::Args;
use crate::report;

/// One scored frame, as the report and the plot need it.
#[derive(Clone, Debug)]
pub struct Point {
    /// libvmaf's `frameNum`.
    pub index: u64,
    /// Presentation timestamp of the distorted frame.
    pub pts: Option<gst::ClockTime>,
    /// The frame's VMAF.
    pub vmaf: f64,
}

/// What one run gives: the element's summary, the per-frame VMAF and the per-frame values
/// of the other metrics the report shows.
pub struct Scored {
    /// The `vmafcompare-summary` message.
    pub summary: SummaryMessage,
    /// Per-frame VMAF, in frame order.
    pub frames: Vec<Point>,
    /// Per-frame values of the other metrics shown (`NaN` where a frame lacks one), by name.
    pub extra: Vec<(String, Vec<f64>)>,
    /// Warnings the pipeline posted, in order, without repeats.
    pub warnings: Vec<String>,
}

/// The files and the log path of one run.
pub struct Run<'a> {
    /// The reference file.
    pub reference: &'a Path,
    /// The distorted file.
    pub distorted: &'a Path,
    /// Where the element writes its log, if anywhere.
    pub log: Option<&'a Path>,
    /// How the progress bar names the distorted file.
    pub label: &'a str,
}

/// Scores `run` with the options of `args`.
pub fn score(args: &Args, run: &Run<'_>) -> Result<Scored, Failure> {
    let label = run.distorted.display().to_string();
    let internal =
        |what: &str, e: &dyn std::fmt::Display| Failure::other(format!("{label}: {what}: {e}"));
    let pipeline = gst::Pipeline::with_name("vmafcompare-pipeline");
    let cmp = vmafcompare_element(args, run.log)?;
    let sink = gst::ElementFactory::make("fakesink")
        .property("sync", false)
        .build()
        .map_err(|e| internal("cannot make fakesink", &e))?;
    pipeline
        .add_many([&cmp, &sink])
        .map_err(|e| internal("cannot build the pipeline", &e))?;
    cmp.link(&sink)
        .map_err(|e| internal("cannot build the pipeline", &e))?;
    let mut inputs = Vec::with_capacity(2);
    for (path, pad) in [(run.reference, "reference"), (run.distorted, "distorted")] {
        let branch = decode_branch(&pipeline, &cmp, path, pad)
            .map_err(|e| internal("cannot build the pipeline", &e))?;
        inputs.push((path.to_path_buf(), branch));
    }
    let classifier = Classifier::new(cmp.clone(), inputs, args.backend, &label);
    let Some(bus) = pipeline.bus() else {
        return Err(Failure::other(format!("{label}: pipeline without a bus")));
    };
    let result = run_bus(args, &pipeline, &bus, &classifier, &label, run.label);
    let _ = pipeline.set_state(gst::State::Null);
    result
}

/// The element, its properties set from the options.
fn vmafcompare_element(args: &Args, log: Option<&Path>) -> Result<gst::Element, Failure> {
    let (score_w, score_h) = args.score_size.unwrap_or((0, 0));
    let mut builder = gst::ElementFactory::make("vmafcompare")
        .name("vmafcompare")
        .property("model", args.model.as_str())
        .property("features", args.features.as_str())
        .property("backend", VmafBackend::from(args.backend))
        .property("threads", args.threads)
        .property("device-id", args.device_id)
        .property("subsample", args.subsample)
        .property(
            "scale-method",
            gstvmafcompare::vmafcompare::VmafScaleMethod::from(args.scale_method),
        )
        .property("score-width", score_w)
        .property("score-height", score_h);
    if let Some(log) = log {
        let Some(location) = log.to_str() else {
            return Err(Failure::usage(format!(
                "{}: the log path is not valid UTF-8",
                log.display()
            )));
        };
        builder = builder.property("results-location", location).property(
            "results-format",
            gstvmafcompare::vmafcompare::ResultsFormat::from(args.log_format()),
        );
    }
    builder.build().map_err(|e| {
        Failure::other(format!(
            "cannot make the vmafcompare element (is the plugin registered?): {e}"
        ))
    })
}

/// Caps that decodebin exposes as they are instead of decoding further: every stream that
/// is not video (audio and subtitles are not scored, so they are not decoded).
fn is_not_video(caps: &gst::CapsRef) -> bool {
    caps.structure(0).is_some_and(|s| {
        let name = s.name().as_str();
        [
            "audio/",
            "text/",
            "subpicture/",
            "subtitle/",
            "closedcaption/",
            "application/x-ass",
            "application/x-ssa",
            "application/x-subtitle",
            "application/x-teletext",
        ]
        .iter()
        .any(|p| name.starts_with(p))
    })
}

/// The elements of one file's decoding branch, and the decoded video's caps once decodebin
/// exposes them (for error messages).
pub struct Branch {
    /// The `filesrc`.
    pub src: gst::Element,
    /// The `decodebin`.
    pub dec: gst::Element,
    /// The caps of the video stream linked to the element, described.
    pub caps: Arc<Mutex<Option<String>>>,
}

/// `filesrc location=PATH ! decodebin`, whose first video stream is linked to the element's
/// pad `pad`. A file without a video stream, or whose video the element does not take, makes
/// decodebin post an error saying so.
fn decode_branch(
    pipeline: &gst::Pipeline,
    cmp: &gst::Element,
    path: &Path,
    pad: &str,
) -> Result<Branch, String> {
    let location = path
        .to_str()
        .ok_or_else(|| format!("{}: the path is not valid UTF-8", path.display()))?;
    let src = gst::ElementFactory::make("filesrc")
        .name(format!("{pad}-file"))
        .property("location", location)
        .build()
        .map_err(|e| e.to_string())?;
    let dec = gst::ElementFactory::make("decodebin")
        .name(format!("{pad}-decode"))
        .build()
        .map_err(|e| e.to_string())?;
    pipeline.add_many([&src, &dec]).map_err(|e| e.to_string())?;
    src.link(&dec).map_err(|e| e.to_string())?;
    let target = cmp
        .static_pad(pad)
        .ok_or_else(|| format!("the element has no {pad} pad"))?;
    // Without the signal (never expected) audio is decoded too, which costs only time.
    if let Some(signal) = glib::subclass::SignalId::lookup("autoplug-continue", dec.type_()) {
        dec.connect_id(signal, None, false, |values| {
            let caps = values.get(2).and_then(|v| v.get::<gst::Caps>().ok());
            let go_on = caps.is_none_or(|c| !is_not_video(&c));
            Some(go_on.to_value())
        });
    }
    let linked = Arc::new(AtomicBool::new(false));
    let described = Arc::new(Mutex::new(None));
    {
        let linked = linked.clone();
        let described = described.clone();
        dec.connect_pad_added(move |dec, new_pad| {
            let caps = new_pad
                .current_caps()
                .unwrap_or_else(|| new_pad.query_caps(None));
            let is_video = caps
                .structure(0)
                .is_some_and(|s| s.name().starts_with("video/"));
            if !is_video || linked.swap(true, Ordering::SeqCst) {
                return;
            }
            if let Ok(mut d) = described.lock() {
                *d = Some(describe_caps(&caps));
            }
            if let Err(e) = new_pad.link(&target) {
                let text = format!(
                    "the element cannot take this decoded video ({e:?}): {}",
                    describe_caps(&caps)
                );
                let _ = dec.post_message(
                    gst::message::Error::builder(gst::CoreError::Negotiation, &text)
                        .src(dec)
                        .build(),
                );
            }
        });
    }
    dec.connect_no_more_pads(move |dec| {
        if !linked.load(Ordering::SeqCst) {
            let text = "no video stream";
            let _ = dec.post_message(
                gst::message::Error::builder(gst::StreamError::WrongType, text)
                    .src(dec)
                    .build(),
            );
        }
    });
    Ok(Branch {
        src,
        dec,
        caps: described,
    })
}

/// `video/x-raw, format=RGBA, width=64, height=64` without the less telling fields.
fn describe_caps(caps: &gst::CapsRef) -> String {
    let Some(s) = caps.structure(0) else {
        return caps.to_string();
    };
    let mut out = s.name().to_string();
    for field in ["format", "width", "height"] {
        if let Ok(v) = s.value(field) {
            let text = v
                .serialize()
                .map(|t| t.to_string())
                .unwrap_or_else(|_| format!("{v:?}"));
            out.push_str(&format!(", {field}={text}"));
        }
    }
    if let Some(features) = caps.features(0) {
        if !features.is_any() && features.iter().any(|f| f != "memory:SystemMemory") {
            out.push_str(&format!(" ({features})"));
        }
    }
    out
}

/// Plays the pipeline to its end, collecting frames, the summary and warnings.
fn run_bus(
    args: &Args,
    pipeline: &gst::Pipeline,
    bus: &gst::Bus,
    classifier: &Classifier,
    label: &str,
    short: &str,
) -> Result<Scored, Failure> {
    if pipeline.set_state(gst::State::Playing).is_err() {
        // The element or a source failed to start; the reason is on the bus.
        let msg =
            bus.timed_pop_filtered(gst::ClockTime::from_seconds(1), &[gst::MessageType::Error]);
        return Err(match msg.as_ref().map(|m| m.view()) {
            Some(gst::MessageView::Error(e)) => classifier.classify(e),
            _ => Failure::other(format!("{label}: the pipeline did not start")),
        });
    }
    let bar = progress_bar(args, short);
    let mut frames: Vec<Point> = Vec::new();
    let mut extra: Option<Vec<(String, Vec<f64>)>> = None;
    let mut summary = None;
    let mut warnings: Vec<String> = Vec::new();
    for msg in bus.iter_timed(gst::ClockTime::NONE) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                bar.finish_and_clear();
                return Err(classifier.classify(e));
            }
            gst::MessageView::Warning(w) => {
                let text = one_line(&w.error().to_string());
                if !warnings.contains(&text) {
                    warnings.push(text);
                }
            }
            gst::MessageView::Element(e) => {
                let Some(s) = e.structure() else { continue };
                if s.name() == FRAME_MESSAGE_NAME {
                    let Ok(f) = FrameMessage::try_from(s) else {
                        continue;
                    };
                    let extra = extra.get_or_insert_with(|| {
                        f.metrics
                            .iter()
                            .filter(|(name, _)| {
                                name != "vmaf"
                                    && report::shown(name, args.all_metrics, &args.features)
                            })
                            .map(|(name, _)| (name.clone(), Vec::new()))
                            .collect()
                    });
                    for (name, values) in extra.iter_mut() {
                        values.push(f.get(name).unwrap_or(f64::NAN));
                    }
                    if bar.length().is_none() {
                        if let Some(d) = pipeline.query_duration::<gst::ClockTime>() {
                            bar.set_length(d.mseconds());
                        }
                    }
                    if let Some(pts) = f.pts {
                        bar.set_position(pts.mseconds());
                    }
                    bar.set_message(format!("frame {} VMAF {:.2}", f.index, f.vmaf));
                    frames.push(Point {
                        index: f.index,
                        pts: f.pts,
                        vmaf: f.vmaf,
                    });
                } else if s.name() == SUMMARY_MESSAGE_NAME {
                    summary = SummaryMessage::try_from(s).ok();
                } else if s.name() == "missing-plugin" {
                    classifier.note_missing_plugin(s);
                }
            }
            _ => {}
        }
    }
    bar.finish_and_clear();
    let summary = summary.ok_or_else(|| {
        Failure::other(format!(
            "{label}: the stream ended without the element's summary"
        ))
    })?;
    if summary.frames == 0 || frames.is_empty() {
        return Err(Failure::other(format!(
            "{label}: no frame pair was scored ({} reference and {} distorted frames without a partner)",
            summary.unpaired_reference, summary.unpaired_distorted
        )));
    }
    Ok(Scored {
        summary,
        frames,
        extra: extra.unwrap_or_default(),
        warnings,
    })
}

/// A progress bar on standard error when it is a terminal and `--quiet` is not given, else a
/// hidden one.
fn progress_bar(args: &Args, label: &str) -> ProgressBar {
    if args.quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    // The length (the stream's duration in ms) is set once the pipeline knows it.
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{prefix} [{bar:30}] {percent:>3}%  {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_prefix(label.to_owned());
    bar
}

/// `text` on one line: line breaks become spaces.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
