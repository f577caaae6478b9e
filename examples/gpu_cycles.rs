//! State cycles of a scoring pipeline in one process (issue 5, item 1): device memory
//! (`cuMemGetInfo`), process RSS, open file descriptors and the CUDA handles the backend holds
//! (`gstvmafcompare::cuda::fault::live`) before and after `N` cycles.
//!
//! Each cycle feeds both pads from `appsrc`: 3 frames at 1920x1080, then (with `--switch`) a
//! caps change to 1280x720 and 3 more frames, then EOS, waits for EOS on the bus and:
//! - `--mode null`: PLAYING -> NULL -> PLAYING (the element opens and closes the GPU);
//! - `--mode ready`: PLAYING -> READY -> PLAYING (the GPU stays open, the backend does not).
//!
//! With `--input cuda` the frames pass `cudaupload` (GStreamer CUDA memory, read in place).
//! With `--devices 0,1` (and `--mode null`) cycle `i` runs on `device-id` = the list's entry
//! `i mod len`, so the element opens and closes alternate GPUs; device memory is read and
//! checked on each of them. The warm-up runs one cycle on each listed device before the
//! baseline is read: the first scoring run in a device's context makes the driver allocate
//! memory it keeps for the context's life (2 MiB was seen on an H200, see the README's
//! "Several GPUs"), which a baseline read before that run would count as lost. The table's
//! "first use" column shows that amount per device.
//! `--leak-mib N` keeps N MiB of device memory per measured cycle on the cycle's device, a
//! planted leak the check must report (FAILED), to show that it still sees one.
//! Exits 1 when more than 1 MiB of device memory is missing at the end, a handle count grew,
//! or RSS grew by more than 4 MiB between the first and the last tenth of the cycles.
//!
//! `cargo run --release --example gpu_cycles -- --cycles 1000 --mode ready --switch`

use clap::{Parser, ValueEnum};
use gst::prelude::*;
use gstvmafcompare::cuda::{fault, GpuDevice};
use gstvmafcompare::vmafcompare::SUMMARY_MESSAGE_NAME;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum Mode {
    /// PLAYING -> NULL -> PLAYING.
    Null,
    /// PLAYING -> READY -> PLAYING.
    Ready,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
enum Input {
    /// System memory.
    System,
    /// GStreamer CUDA memory from `cudaupload`.
    Cuda,
}

#[derive(Parser)]
#[command(about = "Device memory, RSS and handles across vmafcompare state cycles")]
struct Args {
    /// Number of measured cycles (after one warm-up cycle).
    #[arg(long, default_value_t = 100)]
    cycles: usize,
    /// Which state the pipeline returns to between runs.
    #[arg(long, value_enum, default_value_t = Mode::Null)]
    mode: Mode,
    /// Memory the frames arrive in.
    #[arg(long, value_enum, default_value_t = Input::System)]
    input: Input,
    /// Switch the resolution (1920x1080 -> 1280x720) mid-stream in every cycle.
    #[arg(long)]
    switch: bool,
    /// With `--switch`, only the distorted stream switches: a 1280x720 rendition against the
    /// 1920x1080 reference, scaled by the element (its scaler made and freed in every cycle).
    #[arg(long)]
    rendition: bool,
    /// vmafcompare backend.
    #[arg(long, default_value = "cuda")]
    backend: String,
    /// vmafcompare `features` (extra metrics), e.g. every one of them:
    /// `psnr,float_ssim,float_ms_ssim,ssimulacra2`.
    #[arg(long, default_value = "")]
    features: String,
    /// vmafcompare `model` list, e.g. `vmaf_v1.0.16_3d0h` for VMAF v1.
    #[arg(long, default_value = "vmaf_v0.6.1")]
    model: String,
    /// CUDA devices to alternate between, one per cycle (`device-id`), comma-separated;
    /// needs `--mode null` when more than one (the device is chosen at NULL -> READY).
    #[arg(long, default_value = "0", value_delimiter = ',')]
    devices: Vec<usize>,
    /// A planted leak: keep this many MiB of device memory allocated after each measured
    /// cycle, on that cycle's device (the check must then fail).
    #[arg(long, default_value_t = 0)]
    leak_mib: usize,
}

/// Resident set size of this process in bytes (`/proc/self/statm`).
fn rss() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    pages * page
}

/// Open file descriptors of this process.
fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// An NV12 frame: a moving gradient (reference) or the same with deterministic noise
/// (distorted); chroma neutral.
fn frame(w: usize, h: usize, n: usize, noisy: bool) -> gst::Buffer {
    let mut data = vec![128u8; w * h + w * h / 2];
    let mut seed = 0x9e37_79b9u32 ^ (n as u32);
    for y in 0..h {
        for x in 0..w {
            let mut v = ((x + 3 * n) ^ (y / 2)) as u8;
            if noisy {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                v = v.saturating_add((seed % 9) as u8);
            }
            data[y * w + x] = v;
        }
    }
    gst::Buffer::from_mut_slice(data)
}

/// Width, height and the (reference, distorted) frames pushed at that size.
type Segment = (usize, usize, Vec<(gst::Buffer, gst::Buffer)>);

fn caps(w: usize, h: usize) -> gst::Caps {
    gst::Caps::builder("video/x-raw")
        .field("format", "NV12")
        .field("width", w as i32)
        .field("height", h as i32)
        .field("framerate", gst::Fraction::new(30, 1))
        .build()
}

fn main() {
    let args = Args::parse();
    std::process::exit(match run(&args) {
        Ok(ok) => i32::from(!ok),
        Err(e) => {
            eprintln!("gpu_cycles: {e}");
            1
        }
    });
}

fn run(args: &Args) -> Result<bool, String> {
    gst::init().map_err(|e| e.to_string())?;
    gstvmafcompare::plugin_register_static().map_err(|e| e.to_string())?;
    // Holding the device keeps the primary context alive, so the readings compare like with
    // like; the element retains and releases its own reference each cycle.
    // (`--backend cpu` runs without a GPU: device readings are then 0.)
    if args.devices.is_empty() || (args.devices.len() > 1 && args.mode != Mode::Null) {
        return Err("--devices: one device, or several with --mode null".into());
    }
    let devs: Vec<GpuDevice> = if args.backend == "cpu" {
        Vec::new()
    } else {
        let mut seen = args.devices.clone();
        seen.sort_unstable();
        seen.dedup();
        seen.iter()
            .map(|&d| GpuDevice::open(d).map_err(|e| format!("no GPU {d}: {e}")))
            .collect::<Result<_, _>>()?
    };
    let free = || -> Vec<usize> {
        devs.iter()
            .map(|d| d.mem_get_info().map_or(0, |(f, _)| f))
            .collect()
    };
    let upload = if args.input == Input::Cuda {
        " ! cudaupload ! video/x-raw(memory:CUDAMemory)"
    } else {
        ""
    };
    let desc = format!(
        "appsrc name=r format=time{upload} ! cmp.reference \
         appsrc name=d format=time{upload} ! cmp.distorted \
         vmafcompare name=cmp backend={} features=\"{}\" model=\"{}\" frame-message=false ! fakesink",
        args.backend, args.features, args.model
    );
    let pipeline = gst::parse::launch(&desc)
        .map_err(|e| e.to_string())?
        .downcast::<gst::Pipeline>()
        .map_err(|_| "not a pipeline")?;
    let src = |name: &str| -> Result<gst_app::AppSrc, String> {
        pipeline
            .by_name(name)
            .and_then(|e| e.downcast::<gst_app::AppSrc>().ok())
            .ok_or_else(|| format!("no appsrc {name}"))
    };
    let (r, d) = (src("r")?, src("d")?);
    let mut sizes = vec![(1920usize, 1080usize)];
    if args.switch {
        sizes.push((1280, 720));
    }
    // Frames made once; each push shares their memory.
    let frames: Vec<Segment> = sizes
        .iter()
        .map(|&(w, h)| {
            let f = (0..3)
                .map(|n| (frame(w, h, n, false), frame(w, h, n, true)))
                .collect();
            (w, h, f)
        })
        .collect();
    let bus = pipeline.bus().ok_or("no bus")?;
    let away = match args.mode {
        Mode::Null => gst::State::Null,
        Mode::Ready => gst::State::Ready,
    };
    let mut summaries = 0usize;
    let cmp = pipeline.by_name("cmp").ok_or("no vmafcompare")?;
    let mut cycle = 0usize;
    let mut run_once = || -> Result<(), String> {
        cmp.set_property("device-id", args.devices[cycle % args.devices.len()] as i32);
        cycle += 1;
        // The first size before PLAYING: no stale caps of the last cycle go out first.
        r.set_caps(Some(&caps(sizes[0].0, sizes[0].1)));
        d.set_caps(Some(&caps(sizes[0].0, sizes[0].1)));
        pipeline
            .set_state(gst::State::Playing)
            .map_err(|e| format!("to PLAYING: {e}"))?;
        let mut pts = 0u64;
        for (k, (w, h, pairs)) in frames.iter().enumerate() {
            // A rendition: the reference keeps the first size and its frames.
            let (rw, rh, rpairs) = if args.rendition {
                (frames[0].0, frames[0].1, &frames[0].2)
            } else {
                (*w, *h, pairs)
            };
            if k == 0 || !args.rendition {
                r.set_caps(Some(&caps(rw, rh)));
            }
            d.set_caps(Some(&caps(*w, *h)));
            for ((rb, _), (_, db)) in rpairs.iter().zip(pairs) {
                for (s, b) in [(&r, rb), (&d, db)] {
                    let mut b = b.copy();
                    {
                        let b = b.make_mut();
                        b.set_pts(gst::ClockTime::from_mseconds(pts * 33));
                        b.set_duration(gst::ClockTime::from_mseconds(33));
                    }
                    s.push_buffer(b).map_err(|e| format!("push: {e}"))?;
                }
                pts += 1;
            }
        }
        let _ = r.end_of_stream();
        let _ = d.end_of_stream();
        let res = loop {
            match bus.timed_pop(gst::ClockTime::from_seconds(60)) {
                None => break Err("timeout".to_owned()),
                Some(m) => match m.view() {
                    gst::MessageView::Error(e) => break Err(e.error().to_string()),
                    gst::MessageView::Eos(_) => break Ok(()),
                    gst::MessageView::Element(e)
                        if e.structure()
                            .is_some_and(|s| s.name() == SUMMARY_MESSAGE_NAME) =>
                    {
                        summaries += 1
                    }
                    _ => {}
                },
            }
        };
        pipeline
            .set_state(away)
            .map_err(|e| format!("to {away:?}: {e}"))?;
        res
    };
    // Warm-up: one cycle on each device (the list's order), for the driver's and
    // GStreamer's lazy one-time allocations in each device's context. What each device's
    // first cycle kept is its "first use" amount.
    let mut first_use = vec![0.0f64; devs.len()];
    for k in 0..args.devices.len() {
        let at = free();
        run_once().map_err(|e| format!("warm-up cycle on device {}: {e}", args.devices[k]))?;
        for (i, (b, a)) in at.iter().zip(free()).enumerate() {
            first_use[i] += *b as f64 - a as f64;
        }
    }
    // After one warm-up cycle per entry, measured cycle i runs on the list's entry i mod len.
    let before = (free(), fault::live(), fds());
    let mut rss_at = Vec::with_capacity(args.cycles);
    let mut planted = Vec::new();
    for i in 0..args.cycles {
        run_once().map_err(|e| format!("cycle {i}: {e}"))?;
        if args.leak_mib > 0 {
            let dev = args.devices[i % args.devices.len()];
            let pos = devs
                .iter()
                .position(|d| d.ordinal() == dev)
                .ok_or("no device")?;
            planted.push(
                devs[pos]
                    .context()
                    .default_stream()
                    .alloc_zeros::<u8>(args.leak_mib << 20)
                    .map_err(|e| format!("planted leak: {e}"))?,
            );
        }
        rss_at.push(rss());
    }
    let after = (free(), fault::live(), fds());
    drop(planted);
    let _ = pipeline.set_state(gst::State::Null);
    // In NULL only this program's own device is left: one context and its modules.
    let in_null = fault::live();
    let mib = |b: f64| b / (1024.0 * 1024.0);
    let lost: Vec<f64> = before
        .0
        .iter()
        .zip(&after.0)
        .map(|(b, a)| *b as f64 - *a as f64)
        .collect();
    let tenth = (args.cycles / 10).max(1);
    let mean = |s: &[u64]| s.iter().sum::<u64>() as f64 / s.len().max(1) as f64;
    let first = mean(&rss_at[..tenth.min(rss_at.len())]);
    let last = mean(&rss_at[rss_at.len().saturating_sub(tenth)..]);
    let peak = rss_at.iter().copied().max().unwrap_or(0) as f64;
    let ok_mem = lost.iter().all(|l| *l <= 1024.0 * 1024.0);
    let n = devs.len() as i64;
    let own = [
        n,
        gstvmafcompare::cuda::context::Modules::COUNT as i64 * n,
        0,
        0,
    ];
    let ok_handles = after.1 == before.1 && after.2 <= before.2 && in_null == own;
    let ok_rss = last - first <= 4.0 * 1024.0 * 1024.0;
    let list = |v: &[usize]| {
        v.iter()
            .map(|b| format!("{:.1}", mib(*b as f64)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "| cycles | mode | input | switch | devices | first use (MiB) | device free before / after (MiB) | lost (MiB) | RSS first / last tenth, peak (MiB) | handles [ctx, mod, stream, event] before / after / in NULL | fds before / after | summaries | verdict |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    println!(
        "| {} | {:?} | {:?} | {} | {} | {} | {} / {} | {} | {:.1} / {:.1}, {:.1} | {:?} / {:?} / {:?} | {} / {} | {} | {} |",
        args.cycles,
        args.mode,
        args.input,
        if args.switch && args.rendition { "720p rendition of 1080p" } else if args.switch { "1080p -> 720p" } else { "no" },
        args.devices
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(" -> "),
        first_use
            .iter()
            .map(|l| format!("{:.3}", mib(*l)))
            .collect::<Vec<_>>()
            .join(", "),
        list(&before.0),
        list(&after.0),
        lost.iter()
            .map(|l| format!("{:.3}", mib(*l)))
            .collect::<Vec<_>>()
            .join(", "),
        mib(first),
        mib(last),
        mib(peak),
        before.1,
        after.1,
        in_null,
        before.2,
        after.2,
        summaries,
        if ok_mem && ok_handles && ok_rss {
            "ok"
        } else {
            "FAILED"
        }
    );
    Ok(ok_mem && ok_handles && ok_rss)
}
