//! Failures and their exit statuses: a GStreamer error message is classified by its domain
//! and code and by the element that posted it (the `vmafcompare` element, or the decoding
//! branch of one of the files).

use std::path::PathBuf;
use std::sync::Mutex;

use gst::prelude::*;

use crate::cli::Backend;
use crate::pipeline::{one_line, Branch};

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

/// Classifies the error messages of one run's pipeline.
pub struct Classifier {
    /// The `vmafcompare` element.
    cmp: gst::Element,
    /// Each input file and its decoding branch.
    inputs: Vec<(PathBuf, Branch)>,
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
        inputs: Vec<(PathBuf, Branch)>,
        backend: Backend,
        label: &str,
        pads: Vec<(String, String)>,
    ) -> Self {
        Self {
            cmp,
            inputs,
            backend,
            label: label.to_owned(),
            pads,
            missing: Mutex::new(None),
        }
    }

    /// The input files and their decoding branches, the reference first.
    pub fn inputs(&self) -> &[(PathBuf, Branch)] {
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
    fn input_of(&self, obj: Option<&gst::Object>) -> Option<(&PathBuf, &Branch)> {
        let mut cur = obj.cloned();
        while let Some(o) = cur {
            for (path, branch) in &self.inputs {
                if &o == branch.src.upcast_ref::<gst::Object>()
                    || &o == branch.dec.upcast_ref::<gst::Object>()
                {
                    return Some((path, branch));
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
        if let Some((path, branch)) = self.input_of(src) {
            let file = path.display();
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
                let caps = branch.caps.lock().ok().and_then(|c| c.clone());
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
            return Failure::new(EXIT_NEGOTIATION, self.about(&text));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_are_named_with_their_files() {
        gst::init().unwrap();
        let c = Classifier::new(
            gst::ElementFactory::make("identity").build().unwrap(),
            Vec::new(),
            Backend::Cpu,
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
    }
}
