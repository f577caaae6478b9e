//! Fault injection at every CUDA init and allocation step (issue 5, item 2), on a GPU.
//!
//! A recording run lists the CUDA steps of a scoring run (opening the device at
//! NULL -> READY, making the backend at the first caps) up to the first per-frame step. Then,
//! for each step `k` of that list, the test hook `gstvmafcompare::cuda::fault` makes step `k`
//! fail and the test checks:
//! - `backend=cuda`: the element posts an error whose text names the failing step; once the
//!   pipeline is back in NULL, free device memory (`cuMemGetInfo`) is back to its value before
//!   the run (within 1 MiB) and the backend holds no more streams, events, modules or contexts
//!   than before (every earlier step undone);
//! - `backend=auto`: a warning names the step, and the stream is scored on the CPU with
//!   exactly the CPU backend's scores;
//! - the next `backend=cuda` run, unarmed, succeeds with the same scores.
//!
//! Skips where no GPU is usable (CI); `VMAFCOMPARE_REQUIRE_GPU=1` turns the skip into a
//! failure (the GPU host). Run: `cargo test --release --test gpu_faults -- --nocapture`.

mod common;

use common::*;
use gstvmafcompare::cuda::{fault, GpuDevice};

const MIB: f64 = 1024.0 * 1024.0;

/// The extra metrics of issue 31 and before, each with its own CUDA allocations.
const EXTRAS: &str = "psnr,float_ssim,float_ms_ssim,ssimulacra2,ciede,psnr_hvs,speed_temporal,\
                      float_vif,float_adm,float_motion,float_psnr,float_ansnr,float_moment";

/// The 576x324 8-bit reference pair through `vmafcompare backend=<backend> model=<model>`
/// (with `features=` after the model, when given: `"vmaf_v0.6.1 features=psnr"`).
fn desc(backend: &str, model: &str) -> String {
    let pair = reference_pairs()
        .into_iter()
        .find(|p| p.width == 576 && p.format == "I420")
        .expect("576x324 8-bit reference pair");
    format!(
        "{} {} vmafcompare name=cmp backend={backend} model={model} ! fakesink",
        raw_branch(
            &pair.reference,
            pair.width,
            pair.height,
            pair.format,
            "reference"
        ),
        raw_branch(
            &pair.distorted,
            pair.width,
            pair.height,
            pair.format,
            "distorted"
        ),
    )
}

/// [`desc`] as a ladder of two renditions (the distorted file on `distorted` and on
/// `distorted_1`): the ladder backend's steps, its renditions' lanes and scratch among them.
fn ladder_desc(backend: &str, model: &str) -> String {
    let pair = reference_pairs()
        .into_iter()
        .find(|p| p.width == 576 && p.format == "I420")
        .expect("576x324 8-bit reference pair");
    format!(
        "{} {}",
        desc(backend, model),
        raw_branch(
            &pair.distorted,
            pair.width,
            pair.height,
            pair.format,
            "distorted_1"
        ),
    )
}

fn scores(out: &RunOutput) -> Vec<Vec<f64>> {
    out.frames
        .iter()
        .map(|f| f.metrics.iter().map(|(_, v)| *v).collect())
        .collect()
}

/// Whether `a` and `b` are the same scores: bit for bit (`tolerance` 0), or each value within
/// `tolerance` (metrics whose GPU half sums floats in another order than the CPU's).
fn same(a: &[Vec<f64>], b: &[Vec<f64>], tolerance: f64) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.len() == y.len()
                && x.iter().zip(y).all(|(p, q)| {
                    p.to_bits() == q.to_bits() || (tolerance > 0.0 && (p - q).abs() <= tolerance)
                })
        })
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn every_init_and_allocation_step_can_fail_cleanly() {
    inject_every_step("vmaf_v0.6.1");
}

/// The same with VMAF v1 (issue 19): CAMBI's, SpEED chroma's and the Barten-CSF ADM's
/// modules, planes and scratch are among the steps.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn every_v1_init_and_allocation_step_can_fail_cleanly() {
    inject_every_step("vmaf_v1.0.16_3d0h");
}

/// The same with every extra metric (issue 31): each one's kernels' module, device planes
/// and scratch are among the steps. Float metrics may differ from the CPU's in the last
/// digits (within 1e-4 here, the accuracy bar; their own GPU tests give the largest
/// difference).
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn every_extra_metric_init_and_allocation_step_can_fail_cleanly() {
    inject_every_step(&format!("vmaf_v0.6.1 features={EXTRAS}"));
}

/// The same for a ladder of two renditions (issue 30): the CUDA ladder backend's steps,
/// among them each rendition's lane (stream, events) and its own VIF and ADM scratch.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn every_ladder_init_and_allocation_step_can_fail_cleanly() {
    inject_every_step_of("vmaf_v0.6.1", ladder_desc, 6);
}

/// Records the CUDA init and allocation steps of a `model` run, then fails each in turn:
/// the element must report the step, leak nothing, fall back under `backend=auto` with
/// scores equal to the CPU's, and the next run must work.
fn inject_every_step(model: &str) {
    inject_every_step_of(model, desc, 3);
}

/// [`inject_every_step`] with the pipeline `describe(backend, model)`, which posts `frames`
/// frame messages (a ladder: one per rendition and reference frame).
fn inject_every_step_of(model: &str, describe: fn(&str, &str) -> String, frames: usize) {
    let desc = describe;
    init();
    let dev = match GpuDevice::open(0) {
        Ok(d) => d,
        Err(e) => {
            assert!(
                std::env::var_os("VMAFCOMPARE_REQUIRE_GPU").is_none(),
                "VMAFCOMPARE_REQUIRE_GPU is set but no GPU: {e}"
            );
            eprintln!("skipped: no usable GPU here ({e})");
            return;
        }
    };
    // The test's own device keeps the primary context alive, so free memory compares like
    // with like between runs.
    let free = || dev.mem_get_info().map(|(f, _)| f).unwrap_or(0);
    let cpu = run(&desc("cpu", model), LONG);
    assert!(cpu.errors.is_empty(), "cpu: {:?}", cpu.errors);
    let expected = scores(&cpu);
    assert_eq!(expected.len(), frames);
    let tolerance = if model.contains("features=") {
        1e-4
    } else {
        0.0
    };
    // Warm-up: the driver's lazy per-process allocations.
    let warm = run(&desc("cuda", model), LONG);
    assert!(warm.errors.is_empty(), "cuda: {:?}", warm.errors);

    fault::record();
    let recorded = run(&desc("cuda", model), LONG);
    let names = fault::disarm();
    assert!(recorded.errors.is_empty(), "{:?}", recorded.errors);
    assert!(
        same(&scores(&recorded), &expected, tolerance),
        "GPU scores differ from the CPU's: {:?} vs {expected:?}",
        scores(&recorded)
    );
    let first_frame = names
        .iter()
        .position(|n| *n == "cuCtxSetCurrent(frame)")
        .expect("a per-frame step was recorded");
    let steps = &names[..first_frame];
    assert!(steps.len() >= 10, "too few init steps recorded: {steps:?}");

    let base_free = free();
    let base_live = fault::live();
    println!("| step | CUDA step | backend=cuda error | device memory after (MiB) | handles after | backend=auto | next run |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let mut failures = Vec::new();
    for (k, name) in steps.iter().enumerate() {
        let k = k + 1;
        fault::arm(k as u64);
        let out = run(&desc("cuda", model), LONG);
        let fired = fault::fired();
        fault::disarm();
        let error = out.errors.first().cloned().unwrap_or_default();
        let delta = (free() as f64 - base_free as f64) / MIB;
        let live = fault::live();

        fault::arm(k as u64);
        let auto = run(&desc("auto", model), LONG);
        fault::disarm();
        let auto_ok = auto.errors.is_empty()
            && same(&scores(&auto), &expected, 0.0)
            && auto.warnings.iter().any(|w| w.contains(name));

        let next = run(&desc("cuda", model), LONG);
        let next_ok = next.errors.is_empty()
            && same(&scores(&next), &expected, tolerance)
            && next.summary.as_ref().is_some_and(|s| s.backend == "cuda");

        let short: String = error.split(" (Some").next().unwrap_or("").to_owned();
        println!(
            "| {k} | {name} | {short} | {delta:+.3} | {live:?} | {} | {} |",
            if auto_ok {
                "CPU, scores equal"
            } else {
                "WRONG"
            },
            if next_ok { "ok" } else { "FAILED" }
        );
        let mut wrong = Vec::new();
        if fired != Some(*name) {
            wrong.push(format!("fired {fired:?}"));
        }
        if !error.contains(name) {
            wrong.push(format!("error {error:?} does not name the step"));
        }
        if delta.abs() > 1.0 {
            wrong.push(format!("device memory {delta:+.3} MiB"));
        }
        if live != base_live {
            wrong.push(format!("handles {live:?}, before {base_live:?}"));
        }
        if !auto_ok {
            wrong.push(format!(
                "auto: errors {:?}, warnings {:?}, {} frames",
                auto.errors,
                auto.warnings,
                auto.frames.len()
            ));
        }
        if !next_ok {
            wrong.push(format!("next run: {:?}", next.errors));
        }
        if !wrong.is_empty() {
            failures.push(format!("step {k} ({name}): {}", wrong.join("; ")));
        }
    }
    println!(
        "{model}: {} init/allocation steps injected; device memory {:.1} MiB free at the start, handles {:?}",
        steps.len(),
        base_free as f64 / MIB,
        base_live
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
