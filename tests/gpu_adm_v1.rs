//! The CUDA half of ADM (`AdmGpu`, kernels/adm.cu) against the CPU half (`Adm`) with VMAF
//! v1's options: every output (adm2, aim, adm3, scale0..3, num, den) bit for bit, for the four
//! viewing conditions of the v1.0.16 models (CSF mode 2), the corrected blend (mode 3), and
//! VMAF v0's options (default, gain limit 1) as a control, over real frames at 8 and 10 bits.
//!
//! Content: the first frames of `$VMAF_GPU_CLIPS/{ref,dist}_1080p.mp4` (the bikes clips that
//! scripts/gpu-stage.sh makes), decoded to I420 and I420_10LE; Netflix's src01 pairs (576x324
//! 8- and 10-bit); and a synthetic 1920x1080 10-bit pair. Also prints the GPU time per 1080p
//! frame with v0's and v1's options (the same kernels; informative, not asserted).
//! Skipped (with a printed reason) where no GPU is usable.
//!
//! Run: `VMAF_GPU_CLIPS=... cargo test --release --test gpu_adm_v1 -- --nocapture`.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use common::device::{Layout, Upload};
use cudarc::driver::CudaStream;
use gst::prelude::*;
use gstvmafcompare::cuda::memory::{alloc_zeroed, DeviceAlloc};
use gstvmafcompare::cuda::{DevPlane, GpuDevice};
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::features::adm::cpu::Adm;
use gstvmafcompare::features::adm::cuda::AdmGpu;
use gstvmafcompare::features::adm::{AdmConfig, AdmScores, CsfMode};

/// Frames taken from each real clip.
const CLIP_FRAMES: usize = 6;

/// A luma frame pair: width, height, bpc, reference and distorted samples.
struct Pair {
    w: usize,
    h: usize,
    bpc: u32,
    r: Vec<u16>,
    d: Vec<u16>,
}

/// The option sets compared: VMAF v0's two, the v1.0.16 models' four viewing conditions, and
/// the corrected blend (mode 3) at 3 x 1080.
fn configs() -> Vec<(&'static str, AdmConfig)> {
    let v1 = |mode, nvd, rdh| AdmConfig {
        enhn_gain_limit: 1.0,
        csf_mode: mode,
        norm_view_dist: nvd,
        ref_display_height: rdh,
        noise_weight: 0.02,
        dlm_weight: 0.7,
        min_val: 0.5,
    };
    let blend = CsfMode::BartenWatsonBlend;
    vec![
        ("v0 default", AdmConfig::default()),
        (
            "v0 egl 1",
            AdmConfig {
                enhn_gain_limit: 1.0,
                ..AdmConfig::default()
            },
        ),
        ("v1 3d0h", v1(blend, 3.0, 1080)),
        ("v1 5d0h", v1(blend, 5.0, 1080)),
        ("v1 3d0h_2160", v1(blend, 3.0, 2160)),
        ("v1 1d5h_2160", v1(blend, 1.5, 2160)),
        ("mode 3 3d0h", v1(CsfMode::BartenWatsonBlendMae, 3.0, 1080)),
    ]
}

fn fields(s: &AdmScores) -> [(&'static str, f64); 9] {
    [
        ("adm2", s.adm2),
        ("aim", s.aim),
        ("adm3", s.adm3),
        ("scale0", s.scale[0]),
        ("scale1", s.scale[1]),
        ("scale2", s.scale[2]),
        ("scale3", s.scale[3]),
        ("num", s.num),
        ("den", s.den),
    ]
}

/// The first `max` frames of an H.264 MP4, decoded by GStreamer and converted to `format`
/// (`I420` or `I420_10LE`): (width, height, luma planes).
fn decode_luma(path: &Path, format: &str, max: usize) -> (usize, usize, Vec<Vec<u16>>) {
    common::init();
    let dec = ["avdec_h264", "openh264dec", "nvh264dec"]
        .into_iter()
        .find(|d| gst::ElementFactory::find(d).is_some())
        .expect("an H.264 decoder (gstreamer1.0-libav, openh264 or nvcodec)");
    let desc = format!(
        "filesrc location=\"{}\" ! qtdemux ! h264parse ! {dec} ! videoconvert ! \
         video/x-raw,format={format} ! appsink name=sink sync=false",
        path.display()
    );
    let pipeline = gst::parse::launch(&desc)
        .expect("decode pipeline")
        .downcast::<gst::Pipeline>()
        .expect("pipeline");
    let sink = pipeline
        .by_name("sink")
        .expect("appsink")
        .downcast::<gst_app::AppSink>()
        .expect("appsink");
    pipeline.set_state(gst::State::Playing).expect("play");
    let (mut w, mut h, mut frames) = (0, 0, Vec::new());
    while frames.len() < max {
        let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(60)) else {
            break;
        };
        let caps = sample.caps().expect("caps");
        let info = gst_video::VideoInfo::from_caps(caps).expect("video info");
        let buffer = sample.buffer().expect("buffer");
        let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, &info)
            .expect("readable frame");
        (w, h) = (info.width() as usize, info.height() as usize);
        let stride = info.stride()[0] as usize;
        let data = frame.plane_data(0).expect("luma plane");
        let wide = format.ends_with("10LE");
        let mut y = Vec::with_capacity(w * h);
        for row in data.chunks(stride).take(h) {
            if wide {
                y.extend(
                    row[..2 * w]
                        .chunks_exact(2)
                        .map(|p| u16::from_le_bytes([p[0], p[1]])),
                );
            } else {
                y.extend(row[..w].iter().map(|&b| u16::from(b)));
            }
        }
        frames.push(y);
    }
    pipeline.set_state(gst::State::Null).expect("stop");
    (w, h, frames)
}

/// The real 1080p clip pairs at 8 and 10 bits, or why there are none.
fn clip_pairs() -> Result<Vec<(String, Vec<Pair>)>, String> {
    let dir = std::env::var_os("VMAF_GPU_CLIPS")
        .ok_or("VMAF_GPU_CLIPS not set: the real 1080p clips were not compared")?;
    let dir = Path::new(&dir);
    let (rp, dp) = (dir.join("ref_1080p.mp4"), dir.join("dist_1080p.mp4"));
    let mut out = Vec::new();
    for (format, bpc) in [("I420", 8), ("I420_10LE", 10)] {
        let (w, h, refs) = decode_luma(&rp, format, CLIP_FRAMES);
        let (_, _, diss) = decode_luma(&dp, format, CLIP_FRAMES);
        assert!(!refs.is_empty() && refs.len() == diss.len(), "clip frames");
        let pairs = refs
            .into_iter()
            .zip(diss)
            .map(|(r, d)| Pair { w, h, bpc, r, d })
            .collect();
        out.push((format!("bikes {w}x{h} {bpc}-bit"), pairs));
    }
    Ok(out)
}

/// Netflix's src01 576x324 pairs (3 frames) at `bpc` bits.
fn src01(bpc: u32) -> (String, Vec<Pair>) {
    let (w, h) = (576, 324);
    let tag = if bpc > 8 { "10" } else { "8" };
    let read = |kind: &str| {
        let name = format!("src01_{kind}_{w}x{h}_420p{tag}_3f.yuv");
        let bytes = std::fs::read(common::reference_dir().join(name)).expect("src01 yuv");
        let bps = if bpc > 8 { 2 } else { 1 };
        let frame = (w * h + 2 * (w / 2) * (h / 2)) * bps;
        bytes
            .chunks_exact(frame)
            .map(|f| {
                let y = &f[..w * h * bps];
                if bps == 2 {
                    y.chunks_exact(2)
                        .map(|p| u16::from_le_bytes([p[0], p[1]]))
                        .collect()
                } else {
                    y.iter().map(|&b| u16::from(b)).collect::<Vec<u16>>()
                }
            })
            .collect::<Vec<_>>()
    };
    let pairs = read("ref")
        .into_iter()
        .zip(read("dis"))
        .map(|(r, d)| Pair { w, h, bpc, r, d })
        .collect();
    (format!("src01 {w}x{h} {bpc}-bit"), pairs)
}

/// A smooth pattern with edges and its noisy, slightly darkened copy (xorshift noise).
fn synthetic(w: usize, h: usize, bpc: u32) -> (String, Vec<Pair>) {
    let max = f64::from((1u32 << bpc) - 1);
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f64 / (1u64 << 24) as f64 - 0.5
    };
    let (mut r, mut d) = (Vec::with_capacity(w * h), Vec::with_capacity(w * h));
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f64 / w as f64, y as f64 / h as f64);
            let mut v =
                0.5 + 0.3 * (fx * 9.0).sin() * (fy * 5.0).cos() + 0.1 * ((fx + fy) * 40.0).sin();
            if (x / 64 + y / 48) % 5 == 0 {
                v += 0.15;
            }
            let rv = (v.clamp(0.0, 1.0) * max).round();
            let dv = (rv * 0.97 + 0.02 * max + noise() * 0.06 * max).round();
            r.push(rv.clamp(0.0, max) as u16);
            d.push(dv.clamp(0.0, max) as u16);
        }
    }
    (
        format!("synthetic {w}x{h} {bpc}-bit"),
        vec![Pair { w, h, bpc, r, d }],
    )
}

/// A luma plane in device memory as the element hands it over: 1-byte samples at 8 bits,
/// packed `u16` otherwise; the buffer must outlive the kernels that read it.
fn upload(
    stream: &Arc<CudaStream>,
    s: &[u16],
    (w, h): (usize, usize),
    bpc: u32,
) -> (Upload, DevPlane) {
    let layout = if bpc == 8 {
        Layout::U8 { pad: 0 }
    } else {
        Layout::U16Packed
    };
    common::device::upload(stream, s, w, h, layout)
}

/// Runs `gpu` on one uploaded pair and reads its words back.
fn gpu_words(
    stream: &Arc<CudaStream>,
    gpu: &mut AdmGpu,
    (r, d): (DevPlane, DevPlane),
    cfg: &AdmConfig,
    out: &mut DeviceAlloc<u64>,
) -> Vec<u64> {
    gpu.enqueue(
        stream,
        r,
        d,
        cfg,
        &mut out.slice_mut(0..AdmGpu::RESULT_WORDS),
    )
    .expect("adm enqueue");
    let words = stream.clone_dtoh(&**out).expect("read back");
    stream.synchronize().expect("synchronize");
    words
}

/// Compares every frame of `pairs` under every option set; returns the values compared.
fn run_case(dev: &GpuDevice, stream: &Arc<CudaStream>, name: &str, pairs: &[Pair]) -> usize {
    let Some(first) = pairs.first() else {
        panic!("{name}: no frames");
    };
    let (w, h, bpc) = (first.w, first.h, first.bpc);
    let module = dev.modules().get("adm").expect("adm module");
    let mut cpu = Adm::new(w, h, bpc).expect("cpu adm");
    let mut out = alloc_zeroed::<u64>(stream, AdmGpu::RESULT_WORDS, "test out").expect("out");
    let uploads: Vec<_> = pairs
        .iter()
        .map(|p| {
            (
                upload(stream, &p.r, (w, h), bpc),
                upload(stream, &p.d, (w, h), bpc),
            )
        })
        .collect();
    let mut compared = 0;
    for (cname, cfg) in configs() {
        let mut gpu = AdmGpu::new(module, stream, w, h, bpc, &cfg).expect("AdmGpu::new");
        for (i, (p, ((_ru, rp), (_du, dp)))) in pairs.iter().zip(&uploads).enumerate() {
            let words = gpu_words(stream, &mut gpu, (*rp, *dp), &cfg, &mut out);
            let got = gpu.scores(&words, &cfg);
            let rl = LumaPlane::packed(&p.r, w, h, bpc).expect("plane");
            let dl = LumaPlane::packed(&p.d, w, h, bpc).expect("plane");
            let want = cpu.compute(&rl, &dl, &cfg).expect("cpu compute");
            for ((f, a), (_, b)) in fields(&want).into_iter().zip(fields(&got)) {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{name} {cname} frame {i} {f}: cpu {a} gpu {b}"
                );
                compared += 1;
            }
        }
    }
    println!(
        "{name:<28} {:>2} frames x {} option sets: {compared} values bit-identical",
        pairs.len(),
        configs().len()
    );
    compared
}

/// GPU milliseconds per frame of `cfg` on `p` (planes on the device, 100 frames back to back).
fn time_ms(dev: &GpuDevice, stream: &Arc<CudaStream>, p: &Pair, cfg: &AdmConfig) -> f64 {
    let module = dev.modules().get("adm").expect("adm module");
    let mut gpu = AdmGpu::new(module, stream, p.w, p.h, p.bpc, cfg).expect("AdmGpu::new");
    let mut out = alloc_zeroed::<u64>(stream, AdmGpu::RESULT_WORDS, "test out").expect("out");
    let (_ru, rp) = upload(stream, &p.r, (p.w, p.h), p.bpc);
    let (_du, dp) = upload(stream, &p.d, (p.w, p.h), p.bpc);
    let mut frame = || {
        gpu.enqueue(
            stream,
            rp,
            dp,
            cfg,
            &mut out.slice_mut(0..AdmGpu::RESULT_WORDS),
        )
        .expect("adm enqueue");
    };
    for _ in 0..10 {
        frame();
    }
    stream.synchronize().expect("synchronize");
    let n = 100;
    let t = Instant::now();
    for _ in 0..n {
        frame();
    }
    stream.synchronize().expect("synchronize");
    t.elapsed().as_secs_f64() * 1e3 / f64::from(n)
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_adm_v1_options_match_cpu() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    println!("GPU: {}", dev.name());

    let mut cases = vec![src01(8), src01(10), synthetic(1920, 1080, 10)];
    match clip_pairs() {
        Ok(clips) => cases.extend(clips),
        Err(why) => println!("{why}"),
    }
    let total: usize = cases
        .iter()
        .map(|(name, pairs)| run_case(&dev, &stream, name, pairs))
        .sum();
    println!("{total} values bit-identical");

    let hd = cases
        .iter()
        .rev()
        .find(|(_, p)| p.first().is_some_and(|p| p.w == 1920 && p.h == 1080))
        .and_then(|(_, p)| p.first());
    if let Some(p) = hd {
        for (cname, cfg) in configs() {
            let ms = time_ms(&dev, &stream, p, &cfg);
            println!(
                "timing 1920x1080 {}-bit {cname}: {ms:.3} ms/frame (GPU)",
                p.bpc
            );
        }
    }
}
