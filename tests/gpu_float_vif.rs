//! The GPU halves of float VIF (`FloatVifGpu`) and float motion (`FloatMotionGpu`) against
//! their CPU halves, frame by frame: every per-pixel value is the CPU's bits, only the frame
//! sums are added in another order (f64 per block on the GPU, libvmaf's f32 row sums on the
//! CPU), so `vif_scale0..3` and the motion score agree within 1e-5 (the test's bound; the
//! largest difference is printed) and are the same bits when a frame is run twice. Cases:
//! Netflix's src01 pairs (160x90 8-bit, 576x324 8- and 10-bit), a synthetic 1920x1080 10-bit
//! pair, an odd-sized 1001x563 8-bit one and a flat one, over the input layouts the backend
//! passes; then a timing at 1080p beside the integer VIF and motion. Skipped (with a printed
//! reason) where no GPU is usable. The element with `backend=cuda` against `backend=cpu`
//! (every content and format of the oracle test, and the options model) is in
//! `tests/float_vif.rs`.
//!
//! Run: `cargo test --release --test gpu_float_vif -- --nocapture`.

mod common;

use common::device::{upload, Layout};
use common::{gpu_device, reference_dir};

use std::sync::Arc;

use cudarc::driver::CudaStream;
use gstvmafcompare::cuda::memory::{alloc_zeroed, DeviceAlloc};
use gstvmafcompare::cuda::GpuDevice;
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::features::float_motion::cpu::FloatMotion;
use gstvmafcompare::features::float_motion::cuda::FloatMotionGpu;
use gstvmafcompare::features::float_motion::FloatMotionOptions;
use gstvmafcompare::features::float_vif::cpu::FloatVif;
use gstvmafcompare::features::float_vif::cuda::FloatVifGpu;
use gstvmafcompare::features::float_vif::FloatVifConfig;

const TOLERANCE: f64 = 1e-5;

/// A luma plane of `w` x `h` samples at `bpc` bits.
#[derive(Clone)]
struct Luma {
    w: usize,
    h: usize,
    bpc: u32,
    y: Vec<u16>,
}

impl Luma {
    fn plane(&self) -> LumaPlane<'_> {
        LumaPlane::packed(&self.y, self.w, self.h, self.bpc).expect("cpu plane")
    }
}

/// The luma of the first `max` frames of an I420 (8-bit) or I420_10LE file.
fn read_luma(name: &str, w: usize, h: usize, bpc: u32, max: usize) -> Vec<Luma> {
    let bytes = std::fs::read(reference_dir().join(name)).expect("read reference yuv");
    let bps = if bpc > 8 { 2 } else { 1 };
    let frame = (w * h + 2 * w.div_ceil(2) * h.div_ceil(2)) * bps;
    bytes
        .chunks_exact(frame)
        .take(max)
        .map(|f| {
            let y = &f[..w * h * bps];
            let y = if bps == 2 {
                y.chunks_exact(2)
                    .map(|p| u16::from_le_bytes([p[0], p[1]]))
                    .collect()
            } else {
                y.iter().map(|&x| u16::from(x)).collect()
            };
            Luma { w, h, bpc, y }
        })
        .collect()
}

/// A smooth pattern with edges (reference) and the same with noise, a gain and a shift
/// (distorted), `count` moving frames.
fn synthetic(w: usize, h: usize, bpc: u32, count: usize) -> (Vec<Luma>, Vec<Luma>) {
    let max = f64::from((1u32 << bpc) - 1);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f64 / (1u64 << 24) as f64 - 0.5
    };
    let (mut refs, mut dis) = (Vec::new(), Vec::new());
    for i in 0..count {
        let t = i as f64 * 0.7;
        let (mut r, mut d) = (Vec::with_capacity(w * h), Vec::with_capacity(w * h));
        for y in 0..h {
            for x in 0..w {
                let (fx, fy) = (x as f64 / w as f64, y as f64 / h as f64);
                let mut v = 0.5
                    + 0.3 * (fx * 9.0 + t).sin() * (fy * 5.0 - t).cos()
                    + 0.1 * ((fx + fy) * 40.0).sin();
                if (x / 64 + y / 48) % 5 == 0 {
                    v += 0.15;
                }
                let rv = (v.clamp(0.0, 1.0) * max).round();
                let dv = (rv * 0.97 + 0.02 * max + noise() * 0.05 * max).round();
                r.push(rv.clamp(0.0, max) as u16);
                d.push(dv.clamp(0.0, max) as u16);
            }
        }
        refs.push(Luma { w, h, bpc, y: r });
        dis.push(Luma { w, h, bpc, y: d });
    }
    (refs, dis)
}

/// The GPU's words for one frame pair (float VIF, then float motion against `prev`).
fn run_gpu(
    stream: &Arc<CudaStream>,
    (vif, motion): (&mut FloatVifGpu, &mut FloatMotionGpu),
    (r, d, prev): (&Luma, &Luma, &Luma),
    layout: Layout,
    out: &mut DeviceAlloc<u64>,
) -> Vec<u64> {
    let (w, h) = (r.w, r.h);
    let (_r, rp) = upload(stream, &r.y, w, h, layout);
    let (_d, dp) = upload(stream, &d.y, w, h, layout);
    let (_p, pp) = upload(stream, &prev.y, w, h, layout);
    let n = FloatVifGpu::RESULT_WORDS;
    vif.enqueue(stream, rp, dp, &mut out.slice_mut(0..n))
        .expect("float_vif enqueue");
    motion
        .enqueue(stream, pp, rp, &mut out.slice_mut(n..n + 1))
        .expect("float_motion enqueue");
    let words = stream.clone_dtoh(&**out).expect("read back");
    stream.synchronize().expect("synchronize");
    words
}

/// Runs one case (asserting per frame); returns the max |GPU - CPU| of the four VIF scales
/// and of the motion score, and prints them.
fn run_case(
    dev: &GpuDevice,
    stream: &Arc<CudaStream>,
    tag: &str,
    (refs, dis): (&[Luma], &[Luma]),
    layout: Layout,
) -> f64 {
    let (w, h, bpc) = (refs[0].w, refs[0].h, refs[0].bpc);
    let cfg = FloatVifConfig::default();
    let mopts = FloatMotionOptions::default();
    let mut vif_gpu = FloatVifGpu::new(dev, stream, w, h, bpc, &cfg).expect("FloatVifGpu::new");
    let mut motion_gpu =
        FloatMotionGpu::new(dev, stream, w, h, bpc, mopts.filter()).expect("FloatMotionGpu::new");
    let mut vif_cpu = FloatVif::new(w, h, bpc, cfg.clone()).expect("FloatVif::new");
    let mut motion_cpu = FloatMotion::new(w, h, bpc, mopts.filter()).expect("FloatMotion::new");
    let mut out =
        alloc_zeroed::<u64>(stream, FloatVifGpu::RESULT_WORDS + 1, "test out").expect("alloc out");
    let mut max_diff = [0.0f64; 5];
    for (i, (r, d)) in refs.iter().zip(dis).enumerate() {
        let prev = &refs[i.saturating_sub(1)];
        let words = run_gpu(
            stream,
            (&mut vif_gpu, &mut motion_gpu),
            (r, d, prev),
            layout,
            &mut out,
        );
        let again = run_gpu(
            stream,
            (&mut vif_gpu, &mut motion_gpu),
            (r, d, prev),
            layout,
            &mut out,
        );
        assert_eq!(words, again, "{tag} frame {i}: same words on a second run");
        let n = FloatVifGpu::RESULT_WORDS;
        let gpu_vif = cfg.scores(&FloatVifGpu::sums(&words[..n]));
        let cpu_vif = cfg.scores(&vif_cpu.compute(&r.plane(), &d.plane()).expect("cpu vif"));
        let gpu_m = mopts.score(motion_gpu.sad(&words[n..]).expect("motion word"));
        let cpu_m = mopts.score(
            motion_cpu
                .sad(&prev.plane(), &r.plane())
                .expect("cpu motion"),
        );
        for (k, (g, c)) in gpu_vif
            .iter()
            .zip(&cpu_vif)
            .chain([(&gpu_m, &cpu_m)])
            .enumerate()
        {
            let diff = (g - c).abs();
            assert!(
                diff <= TOLERANCE,
                "{tag} frame {i}: output {k} GPU {g} vs CPU {c}"
            );
            max_diff[k] = max_diff[k].max(diff);
        }
    }
    println!(
        "| {tag} | {} | {:.2e} | {:.2e} | {:.2e} | {:.2e} | {:.2e} |",
        refs.len(),
        max_diff[0],
        max_diff[1],
        max_diff[2],
        max_diff[3],
        max_diff[4]
    );
    max_diff.iter().copied().fold(0.0, f64::max)
}

/// Device time per 1080p frame of float VIF + float motion, and of the integer VIF + motion
/// (informative, not asserted).
fn time_1080p(dev: &GpuDevice, stream: &Arc<CudaStream>, r: &Luma, d: &Luma) {
    use gstvmafcompare::features::motion::cuda::MotionGpu;
    use gstvmafcompare::features::vif::cuda::VifGpu;
    use gstvmafcompare::features::vif::VifConfig;
    const FRAMES: u32 = 200;
    let (w, h, bpc) = (r.w, r.h, r.bpc);
    let cfg = FloatVifConfig::default();
    let mut fvif = FloatVifGpu::new(dev, stream, w, h, bpc, &cfg).expect("FloatVifGpu::new");
    let mut fmotion = FloatMotionGpu::new(
        dev,
        stream,
        w,
        h,
        bpc,
        FloatMotionOptions::default().filter(),
    )
    .expect("FloatMotionGpu::new");
    let mut ivif = VifGpu::new(dev, stream, w, h, bpc).expect("VifGpu::new");
    let mut imotion = MotionGpu::new(dev, stream, w, h, bpc).expect("MotionGpu::new");
    let mut out = alloc_zeroed::<u64>(stream, 64, "test out").expect("alloc out");
    let (_r, rp) = upload(stream, &r.y, w, h, Layout::U16Packed);
    let (_d, dp) = upload(stream, &d.y, w, h, Layout::U16Packed);
    let mut time = |float: bool| -> f64 {
        let mut frame = |out: &mut DeviceAlloc<u64>| {
            if float {
                fvif.enqueue(stream, rp, dp, &mut out.slice_mut(0..8))
                    .expect("float_vif");
                fmotion
                    .enqueue(stream, dp, rp, &mut out.slice_mut(8..9))
                    .expect("float_motion");
            } else {
                let n = VifGpu::RESULT_WORDS;
                ivif.enqueue(
                    stream,
                    rp,
                    dp,
                    &VifConfig::default(),
                    &mut out.slice_mut(0..n),
                )
                .expect("vif");
                imotion
                    .enqueue(stream, dp, rp, &mut out.slice_mut(n..n + 1))
                    .expect("motion");
            }
        };
        for _ in 0..10 {
            frame(&mut out);
        }
        stream.synchronize().expect("synchronize");
        let t = std::time::Instant::now();
        for _ in 0..FRAMES {
            frame(&mut out);
        }
        stream.synchronize().expect("synchronize");
        t.elapsed().as_secs_f64() * 1e6 / f64::from(FRAMES)
    };
    let f = time(true);
    let i = time(false);
    println!(
        "timing {w}x{h} {bpc}-bit, {FRAMES} frames back to back: float_vif + float_motion \
         {f:.1} us/frame, integer vif + motion {i:.1} us/frame"
    );
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_float_vif_and_motion_match_cpu() {
    let Some(dev) = gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    println!("GPU: {}", dev.name());
    println!("| case | frames | vif_scale0 | vif_scale1 | vif_scale2 | vif_scale3 | motion |");
    let mut worst = 0.0f64;
    let src = |w, h, bpc, tag: &str, n| {
        let f = |kind: &str| read_luma(&format!("src01_{kind}_{w}x{h}_420p{tag}"), w, h, bpc, n);
        (f("ref"), f("dis"))
    };
    let small = src(160, 90, 8, "8_48f.yuv", 8);
    worst = worst.max(run_case(
        &dev,
        &stream,
        "src01 160x90 8-bit",
        (&small.0, &small.1),
        Layout::U8 { pad: 0 },
    ));
    let mid8 = src(576, 324, 8, "8_3f.yuv", 3);
    worst = worst.max(run_case(
        &dev,
        &stream,
        "src01 576x324 8-bit, pitched",
        (&mid8.0, &mid8.1),
        Layout::U8 { pad: 64 },
    ));
    let mid10 = src(576, 324, 10, "10_3f.yuv", 3);
    worst = worst.max(run_case(
        &dev,
        &stream,
        "src01 576x324 10-bit",
        (&mid10.0, &mid10.1),
        Layout::U16Packed,
    ));
    let hd = synthetic(1920, 1080, 10, 3);
    worst = worst.max(run_case(
        &dev,
        &stream,
        "synthetic 1920x1080 10-bit",
        (&hd.0, &hd.1),
        Layout::U16Pitched { pad: 32 },
    ));
    let odd = synthetic(1001, 563, 8, 3);
    worst = worst.max(run_case(
        &dev,
        &stream,
        "synthetic 1001x563 8-bit",
        (&odd.0, &odd.1),
        Layout::U8 { pad: 3 },
    ));
    let flat = Luma {
        w: 64,
        h: 48,
        bpc: 8,
        y: vec![77; 64 * 48],
    };
    worst = worst.max(run_case(
        &dev,
        &stream,
        "flat 64x48 8-bit",
        (&[flat.clone(), flat.clone()], &[flat.clone(), flat]),
        Layout::U8 { pad: 0 },
    ));
    println!("largest GPU - CPU difference: {worst:.2e}");
    time_1080p(&dev, &stream, &hd.0[0], &hd.1[0]);
}
