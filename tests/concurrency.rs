//! Issue 5 item 4, concurrency: 8 pipelines in one process, 4 processes at once (2 pipelines
//! each) and two `vmafcompare` elements in one pipeline, on different content and
//! resolutions, all scoring at the same time: each gives exactly (bit for bit) the scores it
//! gives alone.
//!
//! Each check is two tests: `_cpu` everywhere (CI), and `_cuda`, ignored where no NVIDIA GPU
//! was found at build time (run it with `--include-ignored` on a GPU host, where it fails
//! without a usable GPU). Small content keeps it to a few seconds on CI.

mod common;

use std::sync::{Arc, Barrier};

use common::*;
use gst::prelude::*;

/// Environment of the child processes: the cases to run (comma-separated indices) and the
/// backend. The parent runs this test binary again with them, filtered to
/// [`child_process_entry`].
const CHILD_CASES: &str = "VMAFCOMPARE_CONCURRENCY_CASES";
const CHILD_BACKEND: &str = "VMAFCOMPARE_CONCURRENCY_BACKEND";
const CHILD_LINE: &str = "VMAFCOMPARE-CHILD-SCORES";

/// One scored stream: `branches(cmp)` links its reference and distorted branches to the
/// element named `cmp`.
struct Case {
    name: String,
    branches: Box<dyn Fn(&str) -> String + Send + Sync>,
}

/// Eight streams: Netflix's three reference pairs and five synthetic ones (videotestsrc
/// patterns against the same pattern rendered at half size and scaled up), at eight sizes,
/// 8 and 10 bits, planar, semi-planar and grey.
fn cases() -> Vec<Case> {
    let mut out: Vec<Case> = reference_pairs()
        .into_iter()
        .map(|p| Case {
            name: format!("src01 {}x{} {}", p.width, p.height, p.format),
            branches: Box::new(move |cmp| {
                format!(
                    "{} {}",
                    raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
                    raw_branch(&p.distorted, p.width, p.height, p.format, "distorted")
                )
                .replace("! cmp.", &format!("! {cmp}."))
            }),
        })
        .collect();
    for (pattern, format, w, h) in [
        ("ball", "I420", 97, 61),
        ("smpte", "NV12", 200, 120),
        ("zone-plate", "I420", 352, 288),
        ("pinwheel", "GRAY8", 66, 36),
        ("circular", "Y444", 128, 72),
    ] {
        out.push(Case {
            name: format!("{pattern} {w}x{h} {format}"),
            branches: Box::new(move |cmp| {
                let caps = |w: u32, h: u32| {
                    format!("video/x-raw,format={format},width={w},height={h},framerate=25/1")
                };
                format!(
                    "videotestsrc pattern={pattern} num-buffers=12 ! {} ! {cmp}.reference \
                     videotestsrc pattern={pattern} num-buffers=12 ! {} ! videoscale ! {} ! {cmp}.distorted",
                    caps(w, h),
                    caps(w / 2, h / 2),
                    caps(w, h)
                )
            }),
        });
    }
    out
}

fn desc(case: &Case, backend: &str) -> String {
    format!(
        "vmafcompare name=cmp backend={backend} ! fakesink {}",
        (case.branches)("cmp")
    )
}

/// Every frame's metrics as bits, to compare exactly.
fn bits(out: &RunOutput) -> Vec<Vec<(String, u64)>> {
    out.frames
        .iter()
        .map(|f| {
            f.metrics
                .iter()
                .map(|(n, v)| (n.clone(), v.to_bits()))
                .collect()
        })
        .collect()
}

/// Scores of `case` alone, checked to be complete.
fn alone(case: &Case, backend: &str) -> Vec<Vec<(String, u64)>> {
    let out = run(&desc(case, backend), LONG);
    assert!(
        out.errors.is_empty(),
        "{} alone: {:?}",
        case.name,
        out.errors
    );
    assert!(!out.frames.is_empty(), "{} alone: no frames", case.name);
    if let Some(s) = &out.summary {
        assert_eq!(s.backend, backend, "{}", case.name);
    }
    bits(&out)
}

fn eight_pipelines_in_one_process_score_as_alone_on(backend: &'static str) {
    init();
    let cases: Arc<Vec<Case>> = Arc::new(cases());
    assert_eq!(cases.len(), 8);

    let want: Vec<_> = cases.iter().map(|c| alone(c, backend)).collect();
    let barrier = Arc::new(Barrier::new(cases.len()));
    let threads: Vec<_> = (0..cases.len())
        .map(|i| {
            let (cases, barrier) = (cases.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let out = run(&desc(&cases[i], backend), LONG);
                assert!(out.errors.is_empty(), "{}: {:?}", cases[i].name, out.errors);
                bits(&out)
            })
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        let got = t.join().expect("pipeline thread");
        assert_eq!(
            got, want[i],
            "{} {backend}: concurrent != alone",
            cases[i].name
        );
    }
    eprintln!("{backend}: 8 concurrent pipelines equal their runs alone");
}

#[test]
fn eight_pipelines_in_one_process_score_as_alone_cpu() {
    eight_pipelines_in_one_process_score_as_alone_on("cpu");
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn eight_pipelines_in_one_process_score_as_alone_cuda() {
    eight_pipelines_in_one_process_score_as_alone_on("cuda");
}

fn two_elements_in_one_pipeline_score_as_alone_on(backend: &'static str) {
    let cases = cases();

    let (a, b) = (&cases[0], &cases[4]);
    let running = start(&format!(
        "vmafcompare name=a backend={backend} ! fakesink {} \
             vmafcompare name=b backend={backend} ! fakesink {}",
        (a.branches)("a"),
        (b.branches)("b")
    ));
    if backend == "cuda" {
        // Both elements hold one and the same GstCudaContext (the first one's, found
        // by the second through the bin).
        let _ = running.pipeline.state(gst::ClockTime::from_seconds(30));
        // Each element answers a context query on its src pad with the context it uses.
        let shared = |name: &str| {
            let element = running.pipeline.by_name(name)?;
            let pad = element.static_pad("src")?;
            let mut q = gst::query::Context::new("gst.cuda.context");
            pad.query(&mut q).then_some(())?;
            q.context_owned()?
                .structure()
                .get::<gst::glib::Object>("gst.cuda.context")
                .ok()
        };
        let (ca, cb) = (shared("a"), shared("b"));
        assert!(ca.is_some(), "element a holds no gst.cuda.context");
        assert_eq!(ca, cb, "the two elements hold different CUDA contexts");
    }
    let out = running.finish(LONG);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    for (name, case) in [("a", a), ("b", b)] {
        let got: Vec<Vec<(String, u64)>> = out
            .frames
            .iter()
            .zip(&out.frames_from)
            .filter(|(_, from)| *from == name)
            .map(|(f, _)| {
                f.metrics
                    .iter()
                    .map(|(n, v)| (n.clone(), v.to_bits()))
                    .collect()
            })
            .collect();
        assert_eq!(
            got,
            alone(case, backend),
            "{} in a shared pipeline",
            case.name
        );
    }
}

#[test]
fn two_elements_in_one_pipeline_score_as_alone_cpu() {
    two_elements_in_one_pipeline_score_as_alone_on("cpu");
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn two_elements_in_one_pipeline_score_as_alone_cuda() {
    two_elements_in_one_pipeline_score_as_alone_on("cuda");
}

fn four_processes_at_once_score_as_alone_on(backend: &'static str) {
    init();
    let cases = cases();
    let exe = std::env::current_exe().expect("test binary");

    let want: Vec<_> = cases.iter().map(|c| alone(c, backend)).collect();
    let children: Vec<_> = (0..4)
        .map(|p| {
            std::process::Command::new(&exe)
                .args([
                    "child_process_entry",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_CASES, format!("{},{}", 2 * p, 2 * p + 1))
                .env(CHILD_BACKEND, backend)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn a child test process")
        })
        .collect();
    let mut seen = 0;
    for child in children {
        let out = child.wait_with_output().expect("child output");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "child failed: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        // libtest may print "test child_process_entry ... " on the same line.
        for line in stdout
            .lines()
            .filter_map(|l| l.split_once(CHILD_LINE).map(|(_, rest)| rest))
        {
            let (i, json) = line.trim().split_once(' ').expect("case and scores");
            let i: usize = i.parse().unwrap();
            let got: Vec<Vec<(String, u64)>> = serde_json::from_str(json).unwrap();
            assert_eq!(
                got, want[i],
                "{} {backend}: other process != alone",
                cases[i].name
            );
            seen += 1;
        }
    }
    assert_eq!(seen, cases.len(), "every case reported by a child");
    eprintln!("{backend}: 4 processes x 2 pipelines equal their runs alone");
}

#[test]
fn four_processes_at_once_score_as_alone_cpu() {
    four_processes_at_once_score_as_alone_on("cpu");
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn four_processes_at_once_score_as_alone_cuda() {
    four_processes_at_once_score_as_alone_on("cuda");
}

/// Not a test of its own: the body of the child processes of
/// [`four_processes_at_once_score_as_alone`]; returns at once when run without its
/// environment. Runs its cases at the same time and prints their scores.
#[test]
fn child_process_entry() {
    let (Ok(list), Ok(backend)) = (std::env::var(CHILD_CASES), std::env::var(CHILD_BACKEND)) else {
        return;
    };
    init();
    let cases = Arc::new(cases());
    let threads: Vec<_> = list
        .split(',')
        .map(|i| {
            let i: usize = i.parse().unwrap();
            let (cases, backend) = (cases.clone(), backend.clone());
            std::thread::spawn(move || {
                let out = run(&desc(&cases[i], &backend), LONG);
                assert!(out.errors.is_empty(), "{}: {:?}", cases[i].name, out.errors);
                (i, bits(&out))
            })
        })
        .collect();
    for t in threads {
        let (i, scores) = t.join().expect("pipeline thread");
        println!(
            "{CHILD_LINE} {i} {}",
            serde_json::to_string(&scores).unwrap()
        );
    }
}
