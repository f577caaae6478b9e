//! One scoring run: `filesrc ! decodebin` for the reference and for each distorted file into
//! `vmafcompare ! fakesink`. One distorted file is scored as a pair (the element's always
//! `distorted` pad); several are one ladder, each file on a `distorted_%u` request pad whose
//! `label` names it, so that the reference is decoded once and its work shared.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use gst::glib;
use gst::prelude::*;
use gstvmafcompare::vmafcompare::{
    FrameMessage, OffsetMessage, SummaryMessage, VmafBackend, FRAME_MESSAGE_NAME,
    OFFSET_MESSAGE_NAME, SUMMARY_MESSAGE_NAME,
};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::classify::{one_line, Classifier, Failure, Options, Source};
use crate::cli::Args;
use crate::probes;
use crate::report::{self, Bitrate, Point, Range, Scored};

/// What a run gives: per distorted file its scores or why it has none (no frame pair
/// scored), and the warnings the pipeline posted, in order, without repeats.
pub struct Outcome {
    /// In the order of the inputs.
    pub scored: Vec<Result<Scored, Failure>>,
    /// Warnings, each once.
    pub warnings: Vec<String>,
    /// What was measured of the reference while it played.
    pub reference: probes::Facts,
    /// The offset auto-alignment chose (`--auto-align`).
    pub aligned: Option<OffsetMessage>,
}

/// One distorted file of a run.
pub struct Input<'a> {
    /// The file.
    pub path: &'a Path,
    /// How the report, the progress bar and (in a ladder) the element name it.
    pub label: &'a str,
}

/// The files of one run.
pub struct Run<'a> {
    /// The reference file.
    pub reference: &'a Path,
    /// The distorted files: one is a pair, several a ladder.
    pub inputs: &'a [Input<'a>],
    /// The element's `results-location`: the log path of a pair; for a ladder a template
    /// whose `%s` the element replaces by each rendition's label.
    pub log: Option<&'a Path>,
}

/// Scores `run` with the options of `args`. `Err` when the pipeline failed (nothing was
/// scored); per file, `Err` when that file had no frame pair scored.
pub fn score(args: &Args, run: &Run<'_>) -> Result<Outcome, Failure> {
    let what = match run.inputs {
        [one] => one.path.display().to_string(),
        _ => run.reference.display().to_string(),
    };
    let internal =
        |step: &str, e: &dyn std::fmt::Display| Failure::other(format!("{what}: {step}: {e}"));
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
    // The pad of each distorted file: `distorted` for a pair, else one request pad each.
    let mut pads = Vec::with_capacity(run.inputs.len());
    if let [_] = run.inputs {
        let pad = cmp
            .static_pad("distorted")
            .ok_or_else(|| internal("cannot build the pipeline", &"no distorted pad"))?;
        pads.push(pad);
    } else {
        for input in run.inputs {
            let pad = cmp.request_pad_simple("distorted_%u").ok_or_else(|| {
                internal("cannot build the pipeline", &"no distorted_%u pad granted")
            })?;
            pad.set_property("label", input.label);
            pads.push(pad);
        }
    }
    let reference_pad = cmp
        .static_pad("reference")
        .ok_or_else(|| internal("cannot build the pipeline", &"no reference pad"))?;
    let mut branches = Vec::with_capacity(run.inputs.len() + 1);
    let targets = std::iter::once((run.reference, &reference_pad))
        .chain(run.inputs.iter().map(|i| i.path).zip(&pads));
    for (path, pad) in targets {
        let branch = decode_branch(&pipeline, path, pad)
            .map_err(|e| internal("cannot build the pipeline", &e))?;
        branches.push(branch);
    }
    let pad_files: Vec<(String, String)> = if run.inputs.len() > 1 {
        pads.iter()
            .zip(run.inputs)
            .map(|(p, i)| (p.name().to_string(), i.path.display().to_string()))
            .collect()
    } else {
        Vec::new()
    };
    let options = Options {
        score_size: args.score_size,
    };
    let (sources, exposed): (Vec<Source>, Vec<_>) = branches.into_iter().unzip();
    let classifier = Classifier::new(
        cmp.clone(),
        sources,
        (args.backend, options),
        &what,
        pad_files,
    );
    let Some(bus) = pipeline.bus() else {
        return Err(Failure::other(format!("{what}: pipeline without a bus")));
    };
    let slots: HashMap<String, usize> = pads
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name().to_string(), i))
        .collect();
    let result = run_bus(args, &pipeline, &bus, &classifier, run, &slots);
    let outcome = result.map(|(collected, warnings, aligned)| {
        let sources = classifier.inputs();
        let scored = collected
            .into_iter()
            .zip(run.inputs)
            .zip(sources[1..].iter().zip(&exposed[1..]))
            .map(|((c, input), (source, pad))| {
                let facts = probes::snapshot(&source.facts);
                let bitrate = bitrate(input.path, &facts, pad);
                c.finish(input.path, bitrate, facts)
            })
            .collect();
        Outcome {
            scored,
            warnings,
            reference: probes::snapshot(&sources[0].facts),
            aligned,
        }
    });
    let _ = pipeline.set_state(gst::State::Null);
    outcome
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
    // Live features that work for a pair only; main refuses them with several files.
    if args.auto_align {
        builder = builder.property("auto-align", true);
    }
    if let Some(seconds) = args.offset {
        builder = builder.property("distorted-delay", (seconds * 1e9).round() as i64);
    }
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

/// decodebin's pad linked to the element (asked for the stream's duration).
type Exposed = Arc<Mutex<Option<gst::Pad>>>;

/// `filesrc location=PATH ! decodebin`, whose first video stream is linked to `target`. A
/// file without a video stream, or whose video the element does not take, makes decodebin
/// post an error saying so. The demuxer's video packets and tags, and the decoded frames at
/// `target`, are measured ([`probes`]).
fn decode_branch(
    pipeline: &gst::Pipeline,
    path: &Path,
    target: &gst::Pad,
) -> Result<(Source, Exposed), String> {
    let location = path
        .to_str()
        .ok_or_else(|| format!("{}: the path is not valid UTF-8", path.display()))?;
    let name = target.name();
    let src = gst::ElementFactory::make("filesrc")
        .name(format!("{name}-file"))
        .property("location", location)
        .build()
        .map_err(|e| e.to_string())?;
    let dec = gst::ElementFactory::make("decodebin")
        .name(format!("{name}-decode"))
        .build()
        .map_err(|e| e.to_string())?;
    pipeline.add_many([&src, &dec]).map_err(|e| e.to_string())?;
    src.link(&dec).map_err(|e| e.to_string())?;
    // Without the signal (never expected) audio is decoded too, which costs only time.
    if let Some(signal) = glib::subclass::SignalId::lookup("autoplug-continue", dec.type_()) {
        dec.connect_id(signal, None, false, |values| {
            let caps = values.get(2).and_then(|v| v.get::<gst::Caps>().ok());
            let go_on = caps.is_none_or(|c| !is_not_video(&c));
            Some(go_on.to_value())
        });
    }
    let facts = probes::Shared::default();
    if let Some(bin) = dec.downcast_ref::<gst::Bin>() {
        let facts = facts.clone();
        bin.connect_deep_element_added(move |_, _, e| probes::watch_demuxer(e, &facts));
    }
    probes::watch_frames(target, &facts);
    let linked = Arc::new(AtomicBool::new(false));
    let exposed = Arc::new(Mutex::new(None));
    {
        let linked = linked.clone();
        let described = facts.clone();
        let exposed = exposed.clone();
        let target = target.clone();
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
                d.caps = Some(describe_caps(&caps));
            }
            if let Ok(mut p) = exposed.lock() {
                *p = Some(new_pad.clone());
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
    let path = path.to_path_buf();
    Ok((
        Source {
            path,
            src,
            dec,
            facts,
        },
        exposed,
    ))
}

/// The bitrate of the distorted file `path`: its video packets' bytes over their duration
/// (measured before the decoder, so audio and container are left out), else the demuxer's
/// `bitrate` tag of its video stream, else its `nominal-bitrate`, else the file's size over
/// its duration (audio and container included); `None` when the duration is unknown.
fn bitrate(path: &Path, facts: &probes::Facts, exposed: &Exposed) -> Option<Bitrate> {
    let p = &facts.packets;
    if let Some(d) = p.duration().filter(|_| p.bytes > 0) {
        let seconds = d.nseconds() as f64 / 1e9;
        return Some(Bitrate {
            kbps: p.bytes as f64 * 8.0 / seconds / 1000.0,
            source: format!(
                "video packets: {} bytes over {seconds:.3} s, audio and container left out",
                p.bytes
            ),
        });
    }
    let tagged = [
        (
            facts.tags.bitrate,
            "the demuxer's bitrate tag of the video stream",
        ),
        (
            facts.tags.nominal,
            "the demuxer's nominal-bitrate tag of the video stream",
        ),
    ];
    if let Some((Some(bps), source)) = tagged.into_iter().find(|(b, _)| b.is_some()) {
        return Some(Bitrate {
            kbps: f64::from(bps) / 1000.0,
            source: source.to_owned(),
        });
    }
    let pad = exposed.lock().ok().and_then(|p| p.clone())?;
    let duration = pad.query_duration::<gst::ClockTime>()?;
    let size = std::fs::metadata(path).ok()?.len();
    let seconds = duration.nseconds() as f64 / 1e9;
    (seconds > 0.0).then(|| Bitrate {
        kbps: size as f64 * 8.0 / seconds / 1000.0,
        source: "file size / duration, audio and container included".to_owned(),
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

/// What the bus gave for one distorted file.
#[derive(Default)]
struct Collected {
    frames: Vec<Point>,
    extra: Option<Vec<(String, Vec<f64>)>>,
    summary: Option<SummaryMessage>,
    range: Option<Range>,
}

impl Collected {
    /// Its scores, or why there are none.
    fn finish(
        self,
        path: &Path,
        bitrate: Option<Bitrate>,
        facts: probes::Facts,
    ) -> Result<Scored, Failure> {
        let file = path.display();
        let summary = self.summary.ok_or_else(|| {
            Failure::other(format!(
                "{file}: the stream ended without the element's summary"
            ))
        })?;
        if summary.frames == 0 || self.frames.is_empty() {
            return Err(Failure::other(format!(
                "{file}: no frame pair was scored ({} reference and {} distorted frames without a partner)",
                summary.unpaired_reference, summary.unpaired_distorted
            )));
        }
        Ok(Scored {
            summary,
            frames: self.frames,
            extra: self.extra.unwrap_or_default(),
            bitrate,
            range: self.range,
            facts,
        })
    }
}

/// What playing a run gave: each input's frames and summary, the warnings, and the offset
/// auto-alignment chose.
type Played = (Vec<Collected>, Vec<String>, Option<OffsetMessage>);

/// Which input a message is about: by its `pad` field (a ladder), else the only one.
fn slot_of(pad: Option<&str>, slots: &HashMap<String, usize>, n: usize) -> Option<usize> {
    match pad {
        Some(p) => slots.get(p).copied(),
        None => (n == 1).then_some(0),
    }
}

/// Plays the pipeline to its end, collecting each input's frames and summary, and the
/// warnings.
fn run_bus(
    args: &Args,
    pipeline: &gst::Pipeline,
    bus: &gst::Bus,
    classifier: &Classifier,
    run: &Run<'_>,
    slots: &HashMap<String, usize>,
) -> Result<Played, Failure> {
    let n = run.inputs.len();
    if pipeline.set_state(gst::State::Playing).is_err() {
        // The element or a source failed to start; the reason is on the bus.
        let msg =
            bus.timed_pop_filtered(gst::ClockTime::from_seconds(1), &[gst::MessageType::Error]);
        return Err(match msg.as_ref().map(|m| m.view()) {
            Some(gst::MessageView::Error(e)) => classifier.classify(e),
            _ => Failure::other(format!("{}: the pipeline did not start", classifier.what())),
        });
    }
    let bars = progress_bars(args, run.inputs);
    let mut collected: Vec<Collected> = (0..n).map(|_| Collected::default()).collect();
    let mut warnings: Vec<String> = Vec::new();
    let mut length_known = false;
    let mut aligned = None;
    for msg in bus.iter_timed(gst::ClockTime::NONE) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                bars.clear();
                return Err(classifier.classify(e));
            }
            gst::MessageView::Warning(w) => {
                let text = classifier.with_files(&one_line(&w.error().to_string()));
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
                    let Some(i) = slot_of(f.pad.as_deref(), slots, n) else {
                        continue;
                    };
                    let c = &mut collected[i];
                    let extra = c.extra.get_or_insert_with(|| {
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
                    if !length_known {
                        if let Some(d) = pipeline.query_duration::<gst::ClockTime>() {
                            bars.set_length(d.mseconds());
                            length_known = true;
                        }
                    }
                    bars.frame(i, &f);
                    c.frames.push(Point {
                        index: f.index,
                        pts: f.pts,
                        vmaf: f.vmaf,
                    });
                } else if s.name() == SUMMARY_MESSAGE_NAME {
                    if let Ok(summary) = SummaryMessage::try_from(s) {
                        if let Some(i) = slot_of(summary.pad.as_deref(), slots, n) {
                            collected[i].summary = Some(summary);
                            collected[i].range = Range::of(s);
                        }
                    }
                } else if s.name() == OFFSET_MESSAGE_NAME {
                    aligned = OffsetMessage::try_from(s).ok();
                } else if s.name() == "missing-plugin" {
                    classifier.note_missing_plugin(s);
                }
            }
            _ => {}
        }
    }
    bars.clear();
    Ok((collected, warnings, aligned))
}

/// The progress bars on standard error: one per distorted file, when standard error is a
/// terminal and `--quiet` is not given; hidden otherwise.
struct Bars {
    bars: Vec<ProgressBar>,
}

impl Bars {
    /// The stream's duration in ms, once the pipeline knows it.
    fn set_length(&self, ms: u64) {
        for b in &self.bars {
            b.set_length(ms);
        }
    }

    /// Frame `f` of input `i` was scored.
    fn frame(&self, i: usize, f: &FrameMessage) {
        let Some(bar) = self.bars.get(i) else { return };
        if let Some(pts) = f.pts {
            bar.set_position(pts.mseconds());
        }
        bar.set_message(format!("frame {} VMAF {:.2}", f.index, f.vmaf));
    }

    /// Removes the bars from the terminal.
    fn clear(&self) {
        for b in &self.bars {
            b.finish_and_clear();
        }
    }
}

/// A bar per input, named by its label (the names padded to one width).
fn progress_bars(args: &Args, inputs: &[Input<'_>]) -> Bars {
    if args.quiet || !std::io::stderr().is_terminal() {
        return Bars {
            bars: inputs.iter().map(|_| ProgressBar::hidden()).collect(),
        };
    }
    let width = inputs
        .iter()
        .map(|i| i.label.chars().count())
        .max()
        .unwrap_or(0);
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{prefix} [{bar:30}] {percent:>3}%  {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    let bars = inputs
        .iter()
        .map(|input| {
            // The length (the stream's duration in ms) is set once the pipeline knows it.
            let bar = multi.add(ProgressBar::no_length());
            bar.set_style(style.clone());
            bar.set_prefix(format!("{:width$}", input.label));
            bar
        })
        .collect();
    Bars { bars }
}
