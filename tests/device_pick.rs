//! Issue 33: `device-id=-1` lets the element pick its GPU at NULL->READY (the pipeline's CUDA
//! context's device, else the device a CUDA element upstream is bound to, else the
//! least-loaded GPU), and `active-device-id` tells which one it opened.
//!
//! The property tests and the CPU runs go everywhere; the GPU tests are ignored where no
//! NVIDIA GPU was found at build time (run them with `--include-ignored` on a GPU host; with
//! one GPU they check that both elements get device 0, the device-1 cases need two).

mod common;

use std::sync::{Mutex, MutexGuard};

use common::*;
use gst::glib;
use gst::prelude::*;
use gstvmafcompare::cuda::gst_cuda::{self, CONTEXT_TYPE};
use gstvmafcompare::cuda::{pick, GpuDevice};

const SMALL: &str = "videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=I420,width=64,height=48 ! cmp.reference \
                     videotestsrc num-buffers=3 pattern=snow ! video/x-raw,format=I420,width=64,height=48 ! cmp.distorted";

/// Tests that open GPUs run one at a time: a GPU one element of another test holds would
/// change what `device-id=-1` picks.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn pipeline(desc: &str) -> (gst::Pipeline, gst::Element) {
    init();
    let p = gst::parse::launch(desc)
        .unwrap_or_else(|e| panic!("{desc}: {e}"))
        .downcast::<gst::Pipeline>()
        .expect("a pipeline");
    let cmp = p.by_name("cmp").expect("cmp");
    (p, cmp)
}

fn active(cmp: &gst::Element) -> i32 {
    cmp.property::<i32>("active-device-id")
}

#[test]
fn device_id_takes_minus_one_and_defaults_to_zero() {
    init();
    let cmp = gst::ElementFactory::make("vmafcompare").build().unwrap();
    let spec = cmp.find_property("device-id").unwrap();
    let spec = spec.downcast_ref::<glib::ParamSpecInt>().expect("a gint");
    assert_eq!(
        (spec.minimum(), spec.maximum(), spec.default_value()),
        (-1, i32::MAX, 0)
    );
    assert_eq!(cmp.property::<i32>("device-id"), 0);
    cmp.set_property("device-id", -1i32);
    assert_eq!(cmp.property::<i32>("device-id"), -1);
    // Out of range from gst-launch (the C path): GLib refuses it and the default stays.
    for value in ["-2", "2147483648"] {
        if let Ok(p) = gst::parse::launch(&format!(
            "vmafcompare name=cmp device-id={value} ! fakesink"
        )) {
            let cmp = p.downcast::<gst::Bin>().unwrap().by_name("cmp").unwrap();
            assert_eq!(cmp.property::<i32>("device-id"), 0, "device-id={value}");
        }
    }

    let spec = cmp.find_property("active-device-id").unwrap();
    assert!(!spec.flags().contains(glib::ParamFlags::WRITABLE));
    let spec = spec.downcast_ref::<glib::ParamSpecInt>().expect("a gint");
    assert_eq!((spec.minimum(), spec.default_value()), (-1, -1));
    assert_eq!(active(&cmp), -1, "no GPU before NULL->READY");
}

#[test]
fn cpu_backend_with_auto_device_opens_no_gpu_and_scores() {
    let _serial = serial();
    let (p, cmp) = pipeline(&format!(
        "vmafcompare name=cmp backend=cpu device-id=-1 ! appsink name=out sync=false {SMALL}"
    ));
    p.set_state(gst::State::Ready).expect("READY");
    assert_eq!(active(&cmp), -1);
    let out = run_pipeline(&p, LONG);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), 3);
    assert_eq!(out.summary.expect("summary").backend, "cpu");
    assert_eq!(active(&cmp), -1);
}

/// `backend=auto device-id=-1`: a GPU when one is usable (then `active-device-id` names it
/// while the element is started and is -1 again in NULL), else the CPU with a warning.
#[test]
fn auto_backend_with_auto_device_scores_with_or_without_a_gpu() {
    let _serial = serial();
    let (p, cmp) = pipeline(&format!(
        "vmafcompare name=cmp backend=auto device-id=-1 ! appsink name=out sync=false {SMALL}"
    ));
    p.set_state(gst::State::Ready).expect("READY");
    let opened = active(&cmp);
    let out = run_pipeline(&p, LONG);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), 3);
    let backend = out.summary.expect("summary").backend;
    match GpuDevice::count() {
        Ok(n) => {
            assert!((0..n as i32).contains(&opened), "{opened} of {n} devices");
            assert_eq!(backend, "cuda");
        }
        Err(e) => {
            assert_eq!(opened, -1, "no GPU here ({e})");
            assert_eq!(backend, "cpu");
            assert!(
                out.warnings
                    .iter()
                    .any(|w| w.contains("scoring on the CPU")),
                "{:?}",
                out.warnings
            );
        }
    }
    assert_eq!(active(&cmp), -1, "back in NULL");
}

/// Two elements with `device-id=-1` of one pipeline brought to READY one after the other: on
/// different GPUs when there are two or more (the second counts the first's claim, and the
/// context the first offered, which the bin hands to the second, does not pull it along),
/// both on device 0 with one; the claims go at READY->NULL.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn two_auto_elements_spread_over_the_gpus() {
    let _serial = serial();
    let Some(count) = gpu_device().map(|_| GpuDevice::count().expect("a device count")) else {
        return;
    };
    init();
    let make = || {
        gst::ElementFactory::make("vmafcompare")
            .property_from_str("backend", "cuda")
            .property("device-id", -1i32)
            .build()
            .unwrap()
    };
    let (a, b) = (make(), make());
    let p = gst::Pipeline::new();
    p.add_many([&a, &b]).unwrap();
    a.set_state(gst::State::Ready).expect("a: READY");
    b.set_state(gst::State::Ready).expect("b: READY");
    let (da, db) = (active(&a), active(&b));
    eprintln!("{count} GPU(s): the elements opened devices {da} and {db}");
    if count >= 2 {
        assert_ne!(da, db);
        assert!(da >= 0 && db >= 0 && (da as usize) < count && (db as usize) < count);
    } else {
        assert_eq!((da, db), (0, 0));
    }
    assert_eq!(pick::claims_on(da as usize), if count >= 2 { 1 } else { 2 });
    a.set_state(gst::State::Null).unwrap();
    b.set_state(gst::State::Null).unwrap();
    assert_eq!((active(&a), active(&b)), (-1, -1));
    assert_eq!(
        pick::claims_on(da as usize) + pick::claims_on(db as usize),
        0
    );
}

/// The device of the pipeline's CUDA context wins: `cudaupload cuda-device-id=1` upstream
/// (bound to device 1, no context yet at the element's NULL->READY), then a context of
/// device 1 set on the element by the application, which the element keeps and shares.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn auto_takes_the_device_of_the_upstream_cuda_context() {
    let _serial = serial();
    if gpu_device().is_none() {
        return;
    }
    if GpuDevice::count().unwrap_or(0) < 2 {
        eprintln!("skipped: one GPU (needs two)");
        return;
    }
    init();
    let Some(lib) = gst_cuda::library().filter(|l| l.load_driver()) else {
        panic!("no GStreamer CUDA library: {:?}", gst_cuda::load_error());
    };
    assert!(
        gst::ElementFactory::find("cudaupload").is_some(),
        "no cudaupload (nvcodec)"
    );

    // A CUDA element upstream bound to device 1: scored there, its memory read in place.
    let upload = "video/x-raw,format=I420,width=64,height=48 ! cudaupload cuda-device-id=1 ! \
                  video/x-raw(memory:CUDAMemory)";
    let (p, cmp) = pipeline(&format!(
        "vmafcompare name=cmp backend=cuda device-id=-1 ! fakesink \
         videotestsrc num-buffers=3 pattern=ball ! {upload} ! cmp.reference \
         videotestsrc num-buffers=3 pattern=snow ! {upload} ! cmp.distorted"
    ));
    p.set_state(gst::State::Ready).expect("READY");
    assert_eq!(active(&cmp), 1);
    let out = run_pipeline(&p, LONG);
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), 3);
    let s = out.summary.expect("summary");
    assert_eq!(
        (s.reference_input.as_str(), s.distorted_input.as_str()),
        ("cuda", "cuda"),
        "read in place"
    );

    // A context of device 1 set by the application: picked, and kept as the shared one.
    let owned = lib
        .new_owned_context(1)
        .expect("a CUDA context on device 1");
    let context = lib.new_context(&owned).expect("a gst.cuda.context");
    let cmp = gst::ElementFactory::make("vmafcompare")
        .property_from_str("backend", "cuda")
        .property("device-id", -1i32)
        .build()
        .unwrap();
    cmp.set_context(&context);
    cmp.set_state(gst::State::Ready).expect("READY");
    assert_eq!(active(&cmp), 1);
    let mut q = gst::query::Context::new(CONTEXT_TYPE);
    assert!(
        cmp.static_pad("src").unwrap().query(&mut q),
        "context answered"
    );
    let answered = q
        .context()
        .and_then(|c| c.structure().get::<gst::Object>(CONTEXT_TYPE).ok())
        .expect("a GstCudaContext in the answer");
    assert_eq!(answered, owned, "the application's context is kept");
    cmp.set_state(gst::State::Null).unwrap();
}
