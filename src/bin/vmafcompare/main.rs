//! `vmafcompare`: scores distorted video files against their reference with VMAF from the
//! command line, the `vmafcompare` element doing the work (registered statically, so the
//! command needs no GST_PLUGIN_PATH). `vmafcompare --help` is its manual.
//!
//! Modules: [`cli`] (options and the manual), [`pipeline`] (one pipeline: a pair, or a
//! ladder of several distorted files against one reference), [`probes`] (what is measured
//! of each file while it plays), [`classify`] (errors, in the command's words, and exit
//! statuses), [`report`] (the pooled table and worst frames), [`notes`] (warnings that
//! explain the results), [`plot`] (`--plot`, `--rq-plot`), [`decoders`] (NVDEC decoder
//! ranks). `vmafcompare monitor --config FILE` is the monitoring service ([`monitor`]).

mod classify;
mod cli;
mod decoders;
mod monitor;
mod notes;
mod pipeline;
mod plot;
mod probes;
mod report;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use classify::Failure;
use cli::{Args, Backend};
use report::FileResult;

fn main() -> ExitCode {
    // `vmafcompare monitor ...`: the service (a file named `monitor` is scored as `./monitor`).
    if std::env::args_os().nth(1).is_some_and(|a| a == "monitor") {
        return monitor::main(std::env::args_os().skip(1));
    }
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
        decoders::prefer_nvdec();
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
        decoders::rank_own_decoder();
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
