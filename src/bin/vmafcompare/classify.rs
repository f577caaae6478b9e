//! Failures and their exit statuses: a GStreamer error message is classified by its domain
//! and code and by the element that posted it (the `vmafcompare` element, or the decoding
//! branch of one of the files); the element's errors are said in the command's words (files,
//! their sizes, options), not in pads and properties.

use std::path::PathBuf;
use std::sync::Mutex;

use gst::prelude::*;

use crate::cli::Backend;
use crate::probes;

/// Exit status: anything not classified below.
pub const EXIT_OTHER: u8 = 1;
/// Exit status: a usage error (options, missing or unreadable files, unusable output paths).
pub const EXIT_USAGE: u8 = 2;
/// Exit status: an input cannot be decoded.
pub const EXIT_DECODE: u8 = 3;
/// Exit status: the streams cannot be scored together (negotiation).
pub const EXIT_NEGOTIATION: u8 = 4;
/// Exit status: the GPU was asked for but cannot be used.
pub const EXIT_GPU: u8 = 5;

/// Why the command stops: the exit status and the one line printed after `vmafcompare: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The exit status.
    pub code: u8,
    /// What went wrong, on one line.
    pub message: String,
}

impl Failure {
    /// A failure of status `code`.
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: one_line(&message.into()),
        }
    }

    /// Exit status 1.
    pub fn other(message: impl Into<String>) -> Self {
        Self::new(EXIT_OTHER, message)
    }

    /// Exit status 2.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(EXIT_USAGE, message)
    }
}

/// `text` on one line: line breaks become spaces.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One input file's decoding branch: the elements whose errors are about the file, and what
/// is measured of it.
pub struct Source {
    /// The file.
    pub path: PathBuf,
    /// Its `filesrc`.
    pub src: gst::Element,
    /// Its `decodebin`.
    pub dec: gst::Element,
    /// What is learnt of it while it plays (decoded caps and size, packets, frames).
    pub facts: probes::Shared,
}

/// The options an element error is translated with.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// `--score-size`.
    pub score_size: Option<(u32, u32)>,
}

/// Classifies the error messages of one run's pipeline.
pub struct Classifier {
    /// The `vmafcompare` element.
    cmp: gst::Element,
    /// Each input file and its decoding branch, the reference first.
    inputs: Vec<Source>,
    /// The options that errors mention.
    options: Options,
    /// The backend asked for.
    backend: Backend,
    /// What an error of the element is about: the distorted file of a pair, the reference
    /// of a ladder.
    label: String,
    /// A ladder's rendition pads and their files, so that an error naming a pad names the
    /// file.
    pads: Vec<(String, String)>,
    /// The last `missing-plugin` message's description of what is missing.
    missing: Mutex<Option<String>>,
}

impl Classifier {
    /// A classifier for the pipeline of `cmp` and `inputs` (the reference first); `pads`:
    /// a ladder's pad names and files.
    pub fn new(
        cmp: gst::Element,
        inputs: Vec<Source>,
        (backend, options): (Backend, Options),
        label: &str,
        pads: Vec<(String, String)>,
    ) -> Self {
        Self {
            cmp,
            inputs,
            options,
            backend,
            label: label.to_owned(),
            pads,
            missing: Mutex::new(None),
        }
    }

    /// The input files and their decoding branches, the reference first.
    pub fn inputs(&self) -> &[Source] {
        &self.inputs
    }

    /// What the run is named by in messages.
    pub fn what(&self) -> &str {
        &self.label
    }

    /// `text` of an element error about the whole run: each rendition pad it names followed
    /// by its file (`distorted_2 (r540.mp4)`); prefixed with the run's name when it names
    /// none.
    fn about(&self, text: &str) -> String {
        let (out, named) = self.replace_pads(text);
        if named {
            out
        } else {
            format!("{}: {out}", self.label)
        }
    }

    /// `text` with each rendition pad it names followed by its file (a warning of the
    /// element, e.g. about a rendition that ended early).
    pub fn with_files(&self, text: &str) -> String {
        self.replace_pads(text).0
    }

    /// `text` with each rendition pad it names as a whole word followed by its file, and
    /// whether it named one.
    fn replace_pads(&self, text: &str) -> (String, bool) {
        let mut out = String::with_capacity(text.len());
        let mut named = false;
        let mut rest = text;
        'scan: while !rest.is_empty() {
            for (pad, file) in &self.pads {
                if let Some(after) = rest.strip_prefix(pad.as_str()) {
                    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
                    let whole = !after.starts_with(word) && !out.ends_with(word);
                    if whole {
                        out.push_str(&format!("{pad} ({file})"));
                        rest = after;
                        named = true;
                        continue 'scan;
                    }
                }
            }
            let mut chars = rest.chars();
            if let Some(c) = chars.next() {
                out.push(c);
            }
            rest = chars.as_str();
        }
        (out, named)
    }

    /// Remembers what a `missing-plugin` element message says is missing (decodebin posts one
    /// before its error when no decoder handles a stream).
    pub fn note_missing_plugin(&self, s: &gst::StructureRef) {
        let what = s
            .get::<gst::Caps>("detail")
            .ok()
            .and_then(|c| c.structure(0).map(|s| s.name().to_string()))
            .or_else(|| s.get::<String>("detail").ok())
            .or_else(|| s.get::<String>("name").ok());
        if let (Some(what), Ok(mut missing)) = (what, self.missing.lock()) {
            *missing = Some(what);
        }
    }

    /// The input whose decoding branch holds `obj`, if any.
    fn input_of(&self, obj: Option<&gst::Object>) -> Option<&Source> {
        let mut cur = obj.cloned();
        while let Some(o) = cur {
            for source in &self.inputs {
                if &o == source.src.upcast_ref::<gst::Object>()
                    || &o == source.dec.upcast_ref::<gst::Object>()
                {
                    return Some(source);
                }
            }
            cur = o.parent();
        }
        None
    }

    /// The failure an error message stands for.
    pub fn classify(&self, msg: &gst::message::Error) -> Failure {
        let err = msg.error();
        let text = one_line(err.message());
        let src = msg.src();
        if src == Some(self.cmp.upcast_ref::<gst::Object>()) {
            return self.element_failure(&err, text);
        }
        if let Some(source) = self.input_of(src) {
            let file = source.path.display();
            if let Some(e) = err.kind::<gst::ResourceError>() {
                if matches!(
                    e,
                    gst::ResourceError::NotFound
                        | gst::ResourceError::OpenRead
                        | gst::ResourceError::OpenReadWrite
                        | gst::ResourceError::Read
                        | gst::ResourceError::NoSpaceLeft
                ) {
                    return Failure::usage(format!("{file}: {text}"));
                }
            }
            if err.kind::<gst::CoreError>() == Some(gst::CoreError::Negotiation) {
                return Failure::new(EXIT_NEGOTIATION, format!("{file}: {text}"));
            }
            // A decoder whose output the element refused (a format it does not score): the
            // streaming thread stops with not-negotiated, the decoder posts the error.
            let debug = msg.debug().map(|d| d.to_string()).unwrap_or_default();
            if debug.contains("not-negotiated") {
                let caps = source.facts.lock().ok().and_then(|f| f.caps.clone());
                return Failure::new(
                    EXIT_NEGOTIATION,
                    format!(
                        "{file}: the element does not take the decoded video ({}): {text}",
                        caps.as_deref().unwrap_or("caps unknown")
                    ),
                );
            }
            let missing = self.missing.lock().ok().and_then(|m| m.clone());
            let text = match missing {
                Some(what)
                    if err.kind::<gst::CoreError>() == Some(gst::CoreError::MissingPlugin)
                        || text.contains("missing a plug-in") =>
                {
                    format!("no decoder for {what} is installed")
                }
                _ => text,
            };
            return Failure::new(EXIT_DECODE, format!("{file}: cannot decode: {text}"));
        }
        Failure::other(format!("{}: {text}", self.label))
    }

    /// The failure an error of the `vmafcompare` element stands for.
    fn element_failure(&self, err: &gst::glib::Error, text: String) -> Failure {
        if err.kind::<gst::CoreError>() == Some(gst::CoreError::Negotiation) {
            return Failure::new(EXIT_NEGOTIATION, self.in_users_words(&text));
        }
        if let Some(e) = err.kind::<gst::LibraryError>() {
            match e {
                // backend=cuda without a usable GPU, at NULL->READY.
                gst::LibraryError::Init => return Failure::new(EXIT_GPU, text),
                // An invalid model or features value.
                gst::LibraryError::Settings => return Failure::usage(text),
                _ => {}
            }
        }
        if let Some(e) = err.kind::<gst::ResourceError>() {
            match e {
                // The log cannot be created.
                gst::ResourceError::OpenWrite => return Failure::usage(text),
                // The CUDA backend failed to start for the negotiated geometry.
                gst::ResourceError::Failed
                    if self.backend == Backend::Cuda
                        && (text.contains("CUDA") || text.contains("GPU")) =>
                {
                    return Failure::new(EXIT_GPU, text)
                }
                _ => {}
            }
        }
        Failure::other(self.about(&text))
    }
}

/// `WxH` as (W, H).
fn size_of(s: &str) -> Option<(u32, u32)> {
    let (w, h) = s.split_once('x')?;
    Some((w.parse().ok()?, h.parse().ok()?))
}

/// The first `WxH` word of `s` after `after`.
fn size_after(s: &str, after: &str) -> Option<(u32, u32)> {
    let at = s.find(after)? + after.len();
    s[at..]
        .split(|c: char| !(c.is_ascii_digit() || c == 'x'))
        .find_map(size_of)
}

/// The smallest size of `(w, h)`'s shape that is at least `min` each way, in even numbers.
fn scaled_up((w, h): (u32, u32), (mw, mh): (u32, u32)) -> (u32, u32) {
    let f = (f64::from(mw) / f64::from(w.max(1))).max(f64::from(mh) / f64::from(h.max(1)));
    let even = |v: f64| ((v.ceil() as u32).max(2)).div_ceil(2) * 2;
    (even(f64::from(w) * f), even(f64::from(h) * f))
}

impl Classifier {
    /// The file a pad of the element carries: `reference`, `distorted` (a pair) or a
    /// ladder's `distorted_N`.
    fn file_of_pad(&self, pad: &str) -> Option<String> {
        match pad {
            "reference" => self.inputs.first(),
            "distorted" => self.inputs.get(1),
            _ => {
                let file = &self.pads.iter().find(|(p, _)| p == pad)?.1;
                return Some(file.clone());
            }
        }
        .map(|s| s.path.display().to_string())
    }

    /// A negotiation error of the element in the command's words: the files and their sizes
    /// instead of pads and the scoring size, and the option that helps. Texts it does not
    /// know keep the element's words, each pad named with its file.
    fn in_users_words(&self, text: &str) -> String {
        let reference = self.file_of_pad("reference").unwrap_or_default();
        if text.contains("scale-method=none") {
            // "reference is RWxRH but PAD is DWxDH and scale-method=none: ... the WxH scoring size"
            let pad = text
                .split_once(" but ")
                .and_then(|(_, rest)| rest.split_once(" is "))
                .map(|(pad, _)| pad);
            let (Some(r), Some(pad), Some(d), Some(s)) = (
                size_after(text, "reference is "),
                pad,
                size_after(text, " but "),
                size_after(text, "carry the "),
            ) else {
                return self.about(text);
            };
            let file = self.file_of_pad(pad).unwrap_or_else(|| pad.to_owned());
            let (rw, rh, dw, dh, w, h) = (r.0, r.1, d.0, d.1, s.0, s.1);
            return match self.options.score_size {
                Some(_) => format!(
                    "the reference {reference} is {rw}x{rh} and {file} is {dw}x{dh}: with \
                     --scale-method none both must be the --score-size {w}x{h}; leave \
                     --scale-method out to scale them to it (FFmpeg's bicubic)"
                ),
                None => format!(
                    "{file} is {dw}x{dh} but the reference {reference} is {rw}x{rh}: with \
                     --scale-method none a distorted file must have the reference's size; leave \
                     --scale-method out to scale it to {rw}x{rh} as FFmpeg's bicubic does, or \
                     encode it at {rw}x{rh}"
                ),
            };
        }
        if let Some((what, rest)) = text.split_once(": ") {
            if let (Some(size), Some(min)) = (
                size_of(rest.split(' ').next().unwrap_or("")),
                size_after(rest, "than the "),
            ) {
                if rest.contains("smaller than the") {
                    return self.too_small(what, size, min, rest);
                }
            }
        }
        let mut out = text.to_owned();
        for pad in ["reference", "distorted"] {
            if let Some(file) = self.file_of_pad(pad) {
                out = out.replace(&format!("{pad} pad"), &file);
            }
        }
        out = out
            .replace("the scoring size", "the size scored at")
            .replace("scoring size", "size scored at");
        self.about(&out)
    }

    /// "WHAT: WxH is smaller than the AxB minimum ..." of the element, said of the file (or
    /// of `--score-size`) with a size that works.
    fn too_small(&self, what: &str, size: (u32, u32), min: (u32, u32), rest: &str) -> String {
        let (w, h) = size;
        let (mw, mh) = min;
        let (uw, uh) = scaled_up(size, min);
        let metric = rest
            .split_once(" minimum of ")
            .map(|(_, name)| name.trim().to_owned());
        let need = match &metric {
            Some(name) => format!("the {mw}x{mh} that {name} needs"),
            None => format!("the {mw}x{mh} that VMAF's filters need"),
        };
        let leave_out = metric
            .as_ref()
            .map(|n| format!(" or leave {n} out of --features,"))
            .unwrap_or_default();
        let pad = what.strip_suffix(" pad");
        if pad.is_none() && self.options.score_size.is_some() {
            return format!(
                "--score-size {w}x{h} is smaller than {need}:{leave_out} score at a larger \
                 size, e.g. --score-size {uw}x{uh}"
            );
        }
        // The scoring size without --score-size is the reference's.
        let file = pad.map_or_else(
            || {
                self.file_of_pad("reference")
                    .map(|f| format!("the reference {f}"))
            },
            |p| {
                self.file_of_pad(p).map(|f| {
                    if p == "reference" {
                        format!("the reference {f}")
                    } else {
                        f
                    }
                })
            },
        );
        let file = file.unwrap_or_else(|| what.to_owned());
        format!(
            "{file} is {w}x{h}, smaller than {need}:{leave_out} score both files at a larger \
             size with --score-size, e.g. --score-size {uw}x{uh}, or use a larger file"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_are_named_with_their_files() {
        gst::init().unwrap();
        let c = Classifier::new(
            gst::ElementFactory::make("identity").build().unwrap(),
            Vec::new(),
            (Backend::Cpu, Options::default()),
            "ref.mp4",
            vec![
                ("distorted_1".into(), "r720.mp4".into()),
                ("distorted_10".into(), "r360.mp4".into()),
            ],
        );
        assert_eq!(
            c.about("distorted_10: 88x72, distorted_1 too"),
            "distorted_10 (r360.mp4): 88x72, distorted_1 (r720.mp4) too"
        );
        assert_eq!(c.about("no model"), "ref.mp4: no model");
        assert_eq!(c.about("xdistorted_1"), "ref.mp4: xdistorted_1");
        assert_eq!(
            c.with_files("distorted_1: 3 frames"),
            "distorted_1 (r720.mp4): 3 frames"
        );
        assert_eq!(
            c.in_users_words(
                "reference is 176x144 but distorted_10 is 88x72 and scale-method=none: \
                 every pad must carry the 176x144 scoring size"
            ),
            "r360.mp4 is 88x72 but the reference  is 176x144: with --scale-method none a \
             distorted file must have the reference's size; leave --scale-method out to scale \
             it to 176x144 as FFmpeg's bicubic does, or encode it at 176x144"
        );
        assert_eq!(
            c.in_users_words(
                "distorted_1 pad: 32x18 is smaller than the 33x33 minimum that VMAF's filters need"
            ),
            "r720.mp4 is 32x18, smaller than the 33x33 that VMAF's filters need: score both \
             files at a larger size with --score-size, e.g. --score-size 60x34, or use a larger \
             file"
        );
    }

    #[test]
    fn sizes_scale_up_to_the_minimum() {
        assert_eq!(scaled_up((32, 18), (33, 33)), (60, 34));
        assert_eq!(scaled_up((20, 40), (33, 33)), (34, 66));
    }
}
