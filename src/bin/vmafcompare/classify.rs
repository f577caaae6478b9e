//! Failures and their exit statuses: a GStreamer error message is classified by its domain
//! and code and by the element that posted it (the `vmafcompare` element, or the decoding
//! branch of one of the two files).

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
    /// The distorted file, as the messages name it.
    label: String,
    /// The last `missing-plugin` message's description of what is missing.
    missing: Mutex<Option<String>>,
}

impl Classifier {
    /// A classifier for the pipeline of `cmp` and `inputs`.
    pub fn new(
        cmp: gst::Element,
        inputs: Vec<(PathBuf, Branch)>,
        backend: Backend,
        label: &str,
    ) -> Self {
        Self {
            cmp,
            inputs,
            backend,
            label: label.to_owned(),
            missing: Mutex::new(None),
        }
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
            return Failure::new(EXIT_NEGOTIATION, format!("{}: {text}", self.label));
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
        Failure::other(format!("{}: {text}", self.label))
    }
}
