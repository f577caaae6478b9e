//! `vmafcompare`: scores distorted video files against their reference with VMAF from the
//! command line, the `vmafcompare` element doing the work (registered statically, so the
//! command needs no GST_PLUGIN_PATH). `vmafcompare --help` is its manual.
//!
//! Modules: [`cli`] (options and the manual), [`pipeline`] (one pipeline: a pair, or a
//! ladder of several distorted files against one reference), [`probes`] (what is measured
//! of each file while it plays), [`classify`] (errors, in the command's words, and exit
//! statuses), [`report`] (the pooled table and worst frames), [`notes`] (warnings that
//! explain the results), [`plot`] (`--plot`, `--rq-plot`).

mod classify;
mod cli;
mod notes;
mod pipeline;
mod plot;
mod probes;
mod report;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use gst::prelude::PluginFeatureExtManual;

use classify::Failure;
use cli::{Args, Backend};
use report::FileResult;

/// The NVDEC decoders whose rank `--backend auto|cuda` raises: this plugin's `vmafnvdec`
/// (H.264 and HEVC 4:2:0, about twice the frames per second of GStreamer 1.22's decoders) to
/// MAX (G_MAXINT), GStreamer's, which take the streams it does not (AV1, VP9, 4:4:4), to one
/// below (equal ranks would be ordered by name, nvh264dec first).
const NVDEC_DECODERS: [(&str, &str); 5] = [
    ("vmafnvdec", "MAX"),
    ("nvh264dec", "2147483646"),
    ("nvh265dec", "2147483646"),
    ("nvav1dec", "2147483646"),
    ("nvvp9dec", "2147483646"),
];

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) => {
            // Help and version go to stdout (status 0), usage errors to stderr (status 2).
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(classify::EXIT_USAGE));
        }
    };
    let (report, mut failure) = run(&args);
    if let Err(f) = write_stdout(&report) {
        failure.get_or_insert(f);
    }
    match failure {
        None => ExitCode::SUCCESS,
        Some(f) => {
            let _ = writeln!(std::io::stderr(), "vmafcompare: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

/// Scores the distorted files, all in one pipeline (a pair, or a ladder); returns the report
/// for standard output (the files scored, also when another had no frame pair scored or a
/// plot failed) and the failure that stopped the command, if any.
fn run(args: &Args) -> (String, Option<Failure>) {
    if let Err(f) = check_paths(args) {
        return (String::new(), Some(f));
    }
    if args.backend != Backend::Cpu {
        prefer_nvdec();
    }
    if let Err(e) = gst::init() {
        return (
            String::new(),
            Some(Failure::other(format!("cannot initialise GStreamer: {e}"))),
        );
    }
    if let Err(e) = gstvmafcompare::plugin_register_static() {
        return (
            String::new(),
            Some(Failure::other(format!(
                "cannot register the vmafcompare plugin: {e}"
            ))),
        );
    }
    if args.backend != Backend::Cpu {
        rank_own_decoder();
    }
    let labels = args.labels();
    let inputs: Vec<pipeline::Input> = args
        .distorted
        .iter()
        .zip(labels.iter())
        .map(|(path, label)| pipeline::Input { path, label })
        .collect();
    let log = args.log_location();
    let run = pipeline::Run {
        reference: &args.reference,
        inputs: &inputs,
        log: log.as_deref(),
    };
    let outcome = match pipeline::score(args, &run) {
        Ok(o) => o,
        Err(f) => return (String::new(), Some(f)),
    };
    let mut results: Vec<FileResult> = Vec::with_capacity(args.distorted.len());
    let mut failure = None;
    let files = args.distorted.iter().zip(labels).zip(args.log_paths());
    for (scored, ((path, label), log)) in outcome.scored.into_iter().zip(files) {
        match scored {
            Ok(scored) => results.push(FileResult {
                label,
                path: path.clone(),
                scored,
                log,
            }),
            Err(f) => {
                failure.get_or_insert(f);
            }
        }
    }
    let mut report = if results.is_empty() {
        String::new()
    } else {
        report::render(&results, args.worst)
    };
    if results.is_empty() {
        return (report, failure);
    }
    if let Some(a) = &outcome.aligned {
        report.push_str(&notes::aligned(a));
    }
    let pairing = notes::Pairing {
        delay: outcome.aligned.map_or_else(
            || args.offset.map_or(0, |s| (s * 1e9).round() as i64),
            |a| a.delay,
        ),
        adjustable: args.distorted.len() == 1,
        auto_align: args.auto_align,
    };
    let reference_name = args.reference.display().to_string();
    let mut notes = notes::warnings(&reference_name, &outcome.reference, &results, pairing);
    if let Some(path) = &args.plot {
        match plot::plot(path, &results, args.worst) {
            Ok(()) => report.push_str(&format!("plot written to {}\n", path.display())),
            Err(e) => {
                failure.get_or_insert(Failure::other(format!("{}: {e}", path.display())));
            }
        }
    }
    if let Some(path) = &args.rq_plot {
        match plot::rq_plot(path, &results) {
            Ok(left_out) => {
                report.push_str(&format!(
                    "rate-quality plot written to {}\n",
                    path.display()
                ));
                if left_out > 0 {
                    notes.push(format!(
                        "{}: {left_out} file(s) left out, their bitrate is unknown",
                        path.display()
                    ));
                }
            }
            Err(e) => {
                failure.get_or_insert(Failure::other(format!("{}: {e}", path.display())));
            }
        }
    }
    if !args.quiet {
        let mut err = std::io::stderr().lock();
        // The element's count of unpaired frames is explained by a note of its own, and its
        // range conversion by the line under each file's row (the element's text names pads).
        let explained = |w: &&String| {
            !w.contains("had no partner and were not scored") && !w.contains("range converted to")
        };
        for w in outcome.warnings.iter().filter(explained).chain(&notes) {
            let _ = writeln!(err, "vmafcompare: warning: {w}");
        }
    }
    (report, failure)
}

/// Refuses inputs that are missing, unreadable or not files, and output paths in directories
/// that do not exist (exit status 2), before anything is decoded.
fn check_paths(args: &Args) -> Result<(), Failure> {
    if args.distorted.len() > 1 && (args.auto_align || args.offset.is_some()) {
        return Err(Failure::usage(
            "--auto-align and --offset work with one distorted file, not with several in one \
             pass: score that file on its own (vmafcompare REFERENCE DISTORTED --auto-align)",
        ));
    }
    for input in std::iter::once(&args.reference).chain(&args.distorted) {
        let meta = std::fs::File::open(input)
            .and_then(|f| f.metadata())
            .map_err(|e| Failure::usage(format!("{}: {}", input.display(), io_reason(&e))))?;
        if !meta.is_file() {
            return Err(Failure::usage(format!("{}: not a file", input.display())));
        }
    }
    let outputs = args
        .log_paths()
        .into_iter()
        .flatten()
        .chain(args.plot.iter().cloned())
        .chain(args.rq_plot.iter().cloned());
    for output in outputs {
        let dir = output.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir.filter(|d| !d.is_dir()) {
            return Err(Failure::usage(format!(
                "{}: cannot write there: {} is not a directory",
                output.display(),
                dir.display()
            )));
        }
        if output.is_dir() {
            return Err(Failure::usage(format!(
                "{}: cannot write there: it is a directory",
                output.display()
            )));
        }
    }
    for plot in args.plot.iter().chain(&args.rq_plot) {
        plot::Format::of(plot).map_err(Failure::usage)?;
    }
    Ok(())
}

/// An I/O error without the `(os error N)` suffix.
fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// Raises the NVDEC decoders' ranks ([`NVDEC_DECODERS`]), so that decodebin picks them and
/// decoded frames reach the GPU in CUDA memory: appends `NAME:RANK` to GST_PLUGIN_FEATURE_RANK
/// (read by `gst::init`) for each decoder that the variable does not already name. Decoders
/// that are not installed are ignored by GStreamer.
fn prefer_nvdec() {
    let existing = std::env::var("GST_PLUGIN_FEATURE_RANK").unwrap_or_default();
    let value = with_nvdec_ranks(&existing);
    if value != existing {
        // Called before GStreamer (or any other thread) starts.
        std::env::set_var("GST_PLUGIN_FEATURE_RANK", value);
    }
}

/// Gives the built-in plugin's `vmafnvdec` the rank GST_PLUGIN_FEATURE_RANK names for it
/// (set by [`prefer_nvdec`] or by the user). GStreamer applies that variable at `gst::init`,
/// to the plugins it knows then; this plugin is registered later (built into the command), so
/// its rank is set here.
fn rank_own_decoder() {
    let value = std::env::var("GST_PLUGIN_FEATURE_RANK").unwrap_or_default();
    let Some(rank) = own_decoder_rank(&value) else {
        return;
    };
    if let Some(f) = gst::ElementFactory::find("vmafnvdec") {
        // SAFETY: any integer is a valid GstRank value.
        f.set_rank(unsafe { gst::glib::translate::from_glib(rank) });
    }
}

/// The rank a GST_PLUGIN_FEATURE_RANK value gives `vmafnvdec` (the last entry naming it; a
/// number or NONE, MARGINAL, SECONDARY, PRIMARY, MAX), `None` when it names none.
fn own_decoder_rank(value: &str) -> Option<i32> {
    value
        .split(',')
        .filter_map(|e| e.split_once(':'))
        .filter(|(name, _)| name.trim() == "vmafnvdec")
        .filter_map(|(_, rank)| match rank.trim() {
            "NONE" => Some(0),
            "MARGINAL" => Some(64),
            "SECONDARY" => Some(128),
            "PRIMARY" => Some(256),
            "MAX" => Some(i32::MAX),
            n => n.parse().ok(),
        })
        .next_back()
}

/// `existing` (a GST_PLUGIN_FEATURE_RANK value) with `NAME:RANK` appended for each NVDEC
/// decoder it does not name.
fn with_nvdec_ranks(existing: &str) -> String {
    let named: Vec<&str> = existing
        .split(',')
        .filter_map(|e| e.split(':').next())
        .map(str::trim)
        .collect();
    let mut entries: Vec<String> = existing
        .split(',')
        .filter(|e| !e.trim().is_empty())
        .map(str::to_owned)
        .collect();
    entries.extend(
        NVDEC_DECODERS
            .iter()
            .filter(|(d, _)| !named.contains(d))
            .map(|(d, rank)| format!("{d}:{rank}")),
    );
    entries.join(",")
}

/// Writes `text` to standard output; a closed pipe (`vmafcompare ... | head`) is not an error.
fn write_stdout(text: &str) -> Result<(), Failure> {
    if text.is_empty() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::other(format!(
            "standard output: {}",
            io_reason(&e)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_decoder_rank_is_read_from_the_variable() {
        assert_eq!(own_decoder_rank(&with_nvdec_ranks("")), Some(i32::MAX));
        assert_eq!(own_decoder_rank("vmafnvdec:NONE,nvh264dec:MAX"), Some(0));
        assert_eq!(own_decoder_rank("nvh264dec:MAX"), None);
    }

    #[test]
    fn nvdec_ranks_are_appended() {
        assert_eq!(
            with_nvdec_ranks(""),
            "vmafnvdec:MAX,nvh264dec:2147483646,nvh265dec:2147483646,nvav1dec:2147483646,\
             nvvp9dec:2147483646"
        );
        assert_eq!(
            with_nvdec_ranks("avdec_h264:NONE,nvh265dec:NONE"),
            "avdec_h264:NONE,nvh265dec:NONE,vmafnvdec:MAX,nvh264dec:2147483646,\
             nvav1dec:2147483646,nvvp9dec:2147483646"
        );
    }
}
