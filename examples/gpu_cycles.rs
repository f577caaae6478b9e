//! Device memory across state cycles: runs a scoring pipeline with `backend=cuda`
//! NULL -> PLAYING (to EOS) -> NULL `N` times in one process and prints free device memory
//! (`cuMemGetInfo`) before and after. Exits 1 when more than 1 MiB is missing at the end.
//!
//! `cargo run --release --example gpu_cycles -- 100 [system|cuda]`: with `cuda`, both pads
//! receive GStreamer CUDA memory from `cudaupload` (read in place by the kernels, in the
//! context the element shares), else system memory.

use gst::prelude::*;
use gstvmafcompare::cuda::GpuDevice;

fn main() {
    let cycles: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let init = gst::init()
        .map_err(|e| e.to_string())
        .and_then(|_| gstvmafcompare::plugin_register_static().map_err(|e| e.to_string()));
    if let Err(e) = init {
        eprintln!("cannot initialise GStreamer: {e}");
        std::process::exit(1);
    }
    // Holding the device keeps the primary context alive, so the readings compare like with
    // like; the element retains and releases its own reference each cycle.
    let dev = match GpuDevice::open(0) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("no GPU: {e}");
            std::process::exit(1);
        }
    };
    let free = || dev.mem_get_info().map(|(f, _)| f).unwrap_or(0);
    let cuda = std::env::args().nth(2).as_deref() == Some("cuda");
    let upload = if cuda {
        " ! cudaupload ! video/x-raw(memory:CUDAMemory)"
    } else {
        ""
    };
    let desc = format!(
        "videotestsrc num-buffers=5 pattern=ball ! video/x-raw,format=NV12,width=1920,height=1080{upload} ! cmp.reference \
         videotestsrc num-buffers=5 pattern=snow ! video/x-raw,format=NV12,width=1920,height=1080{upload} ! cmp.distorted \
         vmafcompare name=cmp backend=cuda frame-message=false ! fakesink"
    );
    let pipeline = match gst::parse::launch(&desc) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let run_once = || -> Result<(), String> {
        pipeline
            .set_state(gst::State::Playing)
            .map_err(|e| e.to_string())?;
        let bus = pipeline.bus().ok_or("no bus")?;
        let res = match bus.timed_pop_filtered(
            gst::ClockTime::from_seconds(60),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        ) {
            Some(m) => match m.view() {
                gst::MessageView::Error(e) => Err(e.error().to_string()),
                _ => Ok(()),
            },
            None => Err("timeout".into()),
        };
        pipeline
            .set_state(gst::State::Null)
            .map_err(|e| e.to_string())?;
        res
    };
    // One warm-up cycle: the driver's own lazy allocations happen once per process.
    if let Err(e) = run_once() {
        eprintln!("cycle failed: {e}");
        std::process::exit(1);
    }
    let before = free();
    for i in 0..cycles {
        if let Err(e) = run_once() {
            eprintln!("cycle {i} failed: {e}");
            std::process::exit(1);
        }
    }
    let after = free();
    let mib = |b: usize| b as f64 / (1024.0 * 1024.0);
    let lost = before.saturating_sub(after);
    println!("| cycles | input | free before (MiB) | free after (MiB) | lost (MiB) |");
    println!("| --- | --- | --- | --- | --- |");
    println!(
        "| {cycles} | {} | {:.1} | {:.1} | {:.3} |",
        if cuda {
            "CUDA memory (cudaupload)"
        } else {
            "system memory"
        },
        mib(before),
        mib(after),
        mib(lost)
    );
    std::process::exit(i32::from(lost > 1024 * 1024));
}
