//! Issue 5 item 5, "no driver": where the CUDA backend cannot run, `backend=auto` scores on the
//! CPU with a warning naming the cause and `backend=cuda` fails at NULL->READY with a clear
//! error; nothing panics.
//!
//! On CI there is no `libcuda.so`, so the cause is the missing driver. Where a driver and a GPU
//! are present the same assertions run with `device-id=99`, a device that does not exist, so
//! the GPU is equally unusable and the test still checks the fallback and the refusal.

mod common;

use common::*;
use gst::prelude::*;
use gstvmafcompare::cuda::{CudaError, GpuDevice};

/// The element properties that make CUDA unusable here, and the text the cause must contain.
fn unusable_gpu() -> (&'static str, String) {
    match GpuDevice::open(0) {
        Err(CudaError::NoDriver) => (
            "",
            "the NVIDIA driver library (libcuda.so) cannot be loaded".to_owned(),
        ),
        Err(CudaError::NoDevice) => ("", "no CUDA device found".to_owned()),
        // A driver and device 0 exist (or device 0 fails otherwise): ask for one that cannot.
        _ => ("device-id=99", "device-id 99 is out of range".to_owned()),
    }
}

fn desc(props: &str) -> String {
    let p = reference_pairs().remove(0);
    format!(
        "vmafcompare name=cmp {props} ! appsink name=out sync=false {} {}",
        raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
        raw_branch(&p.distorted, p.width, p.height, p.format, "distorted")
    )
}

#[test]
fn auto_backend_warns_with_the_cause_and_scores_as_the_cpu() {
    let (props, cause) = unusable_gpu();
    let auto = run(&desc(&format!("backend=auto {props}")), LONG);
    let cpu = run(&desc("backend=cpu"), LONG);
    assert!(auto.errors.is_empty(), "{:?}", auto.errors);
    assert!(cpu.errors.is_empty(), "{:?}", cpu.errors);

    let warning = auto
        .warning_details
        .iter()
        .zip(&auto.warnings)
        .find(|(_, text)| text.contains(&cause))
        .unwrap_or_else(|| panic!("no warning naming '{cause}': {:?}", auto.warnings));
    assert!(
        warning.0.matches(gst::LibraryError::Init),
        "domain/code {:?}",
        warning.0
    );
    assert!(
        warning.1.contains("scoring on the CPU") && warning.1.contains("backend=cpu"),
        "{}",
        warning.1
    );
    assert!(
        cpu.warnings.is_empty(),
        "backend=cpu warns: {:?}",
        cpu.warnings
    );

    assert_eq!(auto.frames.len(), 48);
    assert_eq!(auto.frames.len(), cpu.frames.len());
    for (a, c) in auto.frames.iter().zip(&cpu.frames) {
        assert_eq!(a.index, c.index);
        for ((name, x), (_, y)) in a.metrics.iter().zip(&c.metrics) {
            assert_eq!(x.to_bits(), y.to_bits(), "frame {} {name}", a.index);
        }
    }
    assert_eq!(auto.summary.expect("summary").backend, "cpu");
}

#[test]
fn cuda_backend_fails_at_ready_with_a_clear_error() {
    init();
    let (props, cause) = unusable_gpu();
    let element = gst::ElementFactory::make("vmafcompare")
        .property_from_str("backend", "cuda")
        .build()
        .unwrap();
    if props.contains("device-id") {
        element.set_property("device-id", 99i32);
    }
    let bus = gst::Bus::new();
    element.set_bus(Some(&bus));

    assert!(
        element.set_state(gst::State::Ready).is_err(),
        "NULL->READY must fail"
    );
    assert_eq!(element.current_state(), gst::State::Null);
    let msg = bus
        .pop_filtered(&[gst::MessageType::Error])
        .expect("an error message on the bus");
    let gst::MessageView::Error(err) = msg.view() else {
        unreachable!()
    };
    let text = err.error().to_string();
    let debug = err.debug().map(|d| d.to_string()).unwrap_or_default();
    eprintln!("backend=cuda error: {text} / {debug}");
    assert!(
        err.error().matches(gst::LibraryError::Init),
        "{:?}",
        err.error()
    );
    assert!(
        text.starts_with("backend=cuda: no usable GPU: ") && text.contains(&cause),
        "{text}"
    );
    assert!(debug.contains("backend=cpu"), "{debug}");
    assert!(
        !text.contains("panicked") && !debug.contains("panicked"),
        "{text} {debug}"
    );

    // The element is still usable: back to NULL, then READY with the CPU backend.
    assert!(element.set_state(gst::State::Null).is_ok());
    element.set_property_from_str("backend", "cpu");
    assert!(element.set_state(gst::State::Ready).is_ok());
    assert!(element.set_state(gst::State::Null).is_ok());
    element.set_bus(None);
}

#[test]
fn cuda_backend_in_a_pipeline_fails_to_start_and_scores_nothing() {
    let (props, cause) = unusable_gpu();
    let out = run(&desc(&format!("backend=cuda {props}")), LONG);
    assert!(out.start_failed, "PLAYING must be refused");
    assert!(out.frames.is_empty() && out.buffers_out == 0);
    assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
    assert!(out.errors[0].contains(&cause), "{:?}", out.errors);
}
