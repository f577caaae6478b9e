//! SSIMULACRA2 on the GPU ([`Ssimulacra2Gpu`]) against the CPU route
//! ([`gstvmafcompare::cpu::ssimulacra2::Ssimulacra2`]: our YUV -> linear RGB conversion, then
//! the ssimulacra2 crate 0.5.1): |gpu - cpu| <= 1e-4 per frame, and the same words on a
//! repeated run. Skipped (with a printed reason) where no GPU is usable.
//!
//! Run: `cargo test --release --test gpu_ssimulacra2 -- --nocapture`.

mod common;

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use gstvmafcompare::cuda::{ChromaDev, CudaError, DevPlane, GpuDevice};
use gstvmafcompare::engine::colour::{Matrix, Transfer, YuvToRgb};
use gstvmafcompare::engine::frame::{ChromaPair, FeatureError, LumaPlane, SampleLayout};
use gstvmafcompare::features::ssimulacra2::cpu::Ssimulacra2;
use gstvmafcompare::features::ssimulacra2::cuda::Ssimulacra2Gpu;

const TOLERANCE: f64 = 1e-4;

/// One frame's planes, samples right-aligned at the case's depth.
struct Frame {
    y: Vec<u16>,
    cb: Vec<u16>,
    cr: Vec<u16>,
}

struct Case {
    name: &'static str,
    width: usize,
    height: usize,
    bpc: u32,
    /// Score with chroma (4:2:0) or as grey frames.
    chroma: bool,
    conv: YuvToRgb,
    /// (reference, distorted) pairs.
    frames: Vec<(Frame, Frame)>,
    /// Print the GPU time per frame.
    time: bool,
}

fn conv(matrix: Matrix, full_range: bool, transfer: Transfer) -> YuvToRgb {
    YuvToRgb {
        matrix,
        full_range,
        transfer,
        defaulted: false,
    }
}

/// The first `frames` frames of an I420 file (8-bit samples, or 16-bit little-endian above 8).
fn read_i420(name: &str, w: usize, h: usize, bpc: u32, frames: usize) -> Vec<Frame> {
    let bytes =
        std::fs::read(common::reference_dir().join(name)).expect("read the vmaf-reference yuv");
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let samples: Vec<u16> = if bpc > 8 {
        bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect()
    } else {
        bytes.iter().map(|&b| u16::from(b)).collect()
    };
    samples
        .chunks_exact(w * h + 2 * cw * ch)
        .take(frames)
        .map(|f| Frame {
            y: f[..w * h].to_vec(),
            cb: f[w * h..w * h + cw * ch].to_vec(),
            cr: f[w * h + cw * ch..].to_vec(),
        })
        .collect()
}

/// A deterministic synthetic 4:2:0 pair: textured gradients, and a distorted frame with noise,
/// a small shift of the chroma and 8x8 block offsets.
fn synthetic(w: usize, h: usize, bpc: u32, seed: u64) -> (Frame, Frame) {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut rnd = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) % 1000) as f64 / 1000.0 - 0.5
    };
    let max = f64::from((1u32 << bpc) - 1);
    let s = f64::from(1u32 << (bpc - 8));
    let clip = |v: f64| v.round().clamp(0.0, max) as u16;
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let mut r = Frame {
        y: vec![0; w * h],
        cb: vec![0; cw * ch],
        cr: vec![0; cw * ch],
    };
    let mut d = Frame {
        y: vec![0; w * h],
        cb: vec![0; cw * ch],
        cr: vec![0; cw * ch],
    };
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f64, y as f64);
            let v = 40.0
                + 160.0 * fx / w as f64
                + 25.0 * (fx * 0.11).sin() * (fy * 0.07).cos()
                + 12.0 * ((fx * 0.9).sin() * (fy * 1.3).sin());
            r.y[y * w + x] = clip(v * s);
            let block = 3.0 * ((x / 8 + y / 8) % 3) as f64 - 3.0;
            d.y[y * w + x] = clip((v + 6.0 * rnd() + block) * s);
        }
    }
    for y in 0..ch {
        for x in 0..cw {
            let (fx, fy) = (x as f64, y as f64);
            let u = 128.0 + 50.0 * (fx * 0.05 + fy * 0.02).sin();
            let v = 128.0 + 45.0 * (fy * 0.04 - fx * 0.01).cos();
            r.cb[y * cw + x] = clip(u * s);
            r.cr[y * cw + x] = clip(v * s);
            d.cb[y * cw + x] = clip((u + 2.0 + 3.0 * rnd()) * s);
            d.cr[y * cw + x] = clip((v - 1.5 + 3.0 * rnd()) * s);
        }
    }
    (r, d)
}

fn src01(
    name: &'static str,
    (w, h, bpc): (usize, usize, u32),
    frames: usize,
    chroma: bool,
    conv: YuvToRgb,
) -> Case {
    let tag = if bpc > 8 { "10" } else { "8" };
    let count = if w == 160 { 48 } else { 3 };
    let file = |kind: &str| format!("src01_{kind}_{w}x{h}_420p{tag}_{count}f.yuv");
    let r = read_i420(&file("ref"), w, h, bpc, frames);
    let d = read_i420(&file("dis"), w, h, bpc, frames);
    Case {
        name,
        width: w,
        height: h,
        bpc,
        chroma,
        conv,
        frames: r.into_iter().zip(d).collect(),
        time: false,
    }
}

/// The device copies of one frame pair and the planes describing them.
struct Uploaded {
    _luma8: Vec<CudaSlice<u8>>,
    _planes16: Vec<CudaSlice<u16>>,
    reference: DevPlane,
    distorted: DevPlane,
    chroma: Option<ChromaDev>,
}

/// Uploads a pair: luma as bytes for 8-bit cases (the 1-byte `Plane` path), packed `u16`
/// otherwise; chroma as packed `u16` planes (the backend's unpacked layout).
fn upload(stream: &Arc<CudaStream>, case: &Case, r: &Frame, d: &Frame) -> Uploaded {
    let (w, h) = (case.width, case.height);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let mut luma8 = Vec::new();
    let mut planes16 = Vec::new();
    let (reference, distorted) = if case.bpc == 8 {
        let layout = SampleLayout {
            bytes: 1,
            down: 0,
            depth: 8,
            up: 0,
        };
        for f in [r, d] {
            let bytes: Vec<u8> = f.y.iter().map(|&v| v as u8).collect();
            luma8.push(stream.clone_htod(&bytes).expect("upload luma"));
        }
        (
            DevPlane::new(luma8[0].device_ptr(stream).0, w, layout),
            DevPlane::new(luma8[1].device_ptr(stream).0, w, layout),
        )
    } else {
        for f in [r, d] {
            planes16.push(stream.clone_htod(&f.y).expect("upload luma"));
        }
        (
            DevPlane::packed_u16(&planes16[0], w, stream),
            DevPlane::packed_u16(&planes16[1], w, stream),
        )
    };
    let chroma = case.chroma.then(|| {
        let first = planes16.len();
        for p in [&r.cb, &r.cr, &d.cb, &d.cr] {
            planes16.push(stream.clone_htod(p).expect("upload chroma"));
        }
        let plane = |i: usize| DevPlane::packed_u16(&planes16[first + i], cw, stream);
        ChromaDev {
            reference: [plane(0), plane(1)],
            distorted: [plane(2), plane(3)],
            width: cw,
            height: ch,
        }
    });
    Uploaded {
        _luma8: luma8,
        _planes16: planes16,
        reference,
        distorted,
        chroma,
    }
}

/// Runs the GPU on one uploaded pair and reads the words back.
fn gpu_words(
    stream: &Arc<CudaStream>,
    gpu: &mut Ssimulacra2Gpu,
    up: &Uploaded,
    out: &mut CudaSlice<u64>,
) -> Vec<u64> {
    gpu.enqueue(
        stream,
        up.reference,
        up.distorted,
        up.chroma.as_ref(),
        &mut out.as_view_mut(),
    )
    .expect("enqueue");
    let mut words = vec![0u64; Ssimulacra2Gpu::RESULT_WORDS];
    stream.memcpy_dtoh(out, &mut words).expect("read back");
    stream.synchronize().expect("synchronize");
    words
}

fn plane(v: &[u16], w: usize, h: usize, bpc: u32) -> LumaPlane<'_> {
    LumaPlane::packed(v, w, h, bpc).expect("plane")
}

/// Max |gpu - cpu| over the case's frames (asserting each frame and the determinism).
fn run_case(dev: &GpuDevice, stream: &Arc<CudaStream>, case: &Case) -> f64 {
    let (w, h, bpc) = (case.width, case.height, case.bpc);
    let chroma_size = case.chroma.then(|| (w.div_ceil(2), h.div_ceil(2)));
    let mut gpu = Ssimulacra2Gpu::new(dev, stream, w, h, bpc, chroma_size, case.conv)
        .unwrap_or_else(|e| panic!("{}: new: {e}", case.name));
    let mut cpu = Ssimulacra2::new();
    let mut out = stream
        .alloc_zeros::<u64>(Ssimulacra2Gpu::RESULT_WORDS)
        .expect("alloc out");
    let mut max_diff = 0.0f64;
    let mut scores = Vec::new();
    for (i, (r, d)) in case.frames.iter().enumerate() {
        let up = upload(stream, case, r, d);
        let words = gpu_words(stream, &mut gpu, &up, &mut out);
        let again = gpu_words(stream, &mut gpu, &up, &mut out);
        assert_eq!(
            words, again,
            "{} frame {i}: words differ between runs",
            case.name
        );
        let got = gpu.score(&words);

        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let pair = case.chroma.then(|| ChromaPair {
            reference: [plane(&r.cb, cw, ch, bpc), plane(&r.cr, cw, ch, bpc)],
            distorted: [plane(&d.cb, cw, ch, bpc), plane(&d.cr, cw, ch, bpc)],
        });
        let want = cpu
            .score(
                &plane(&r.y, w, h, bpc),
                &plane(&d.y, w, h, bpc),
                pair.as_ref(),
                &case.conv,
            )
            .expect("cpu score");
        let diff = (got - want).abs();
        assert!(
            diff <= TOLERANCE,
            "{} frame {i}: gpu {got} cpu {want} (|diff| {diff:e})",
            case.name
        );
        max_diff = max_diff.max(diff);
        scores.push(got);
    }
    println!(
        "{}: {}x{} {}-bit {}, {}: {} frames, max |gpu - cpu| = {max_diff:.3e}, scales {:?}, gpu scores {scores:.4?}",
        case.name,
        w,
        h,
        bpc,
        if case.chroma { "4:2:0" } else { "grey" },
        case.conv,
        case.frames.len(),
        gpu.scales(),
    );
    if case.time {
        if let Some((r, d)) = case.frames.first() {
            let up = upload(stream, case, r, d);
            let runs = 50;
            for _ in 0..5 {
                gpu.enqueue(
                    stream,
                    up.reference,
                    up.distorted,
                    up.chroma.as_ref(),
                    &mut out.as_view_mut(),
                )
                .expect("enqueue");
            }
            stream.synchronize().expect("synchronize");
            let t = Instant::now();
            for _ in 0..runs {
                gpu.enqueue(
                    stream,
                    up.reference,
                    up.distorted,
                    up.chroma.as_ref(),
                    &mut out.as_view_mut(),
                )
                .expect("enqueue");
            }
            stream.synchronize().expect("synchronize");
            println!(
                "{}: {:.3} ms per frame on the GPU (kernels only, {} runs)",
                case.name,
                t.elapsed().as_secs_f64() * 1e3 / f64::from(runs),
                runs
            );
        }
    }
    max_diff
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_ssimulacra2_matches_cpu() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    println!("GPU: {}", dev.name());

    // Below 8x8: refused before any allocation.
    assert!(matches!(
        Ssimulacra2Gpu::new(
            &dev,
            &stream,
            8,
            7,
            8,
            None,
            conv(Matrix::Bt709, false, Transfer::Bt709)
        ),
        Err(CudaError::Geometry(FeatureError::FrameTooSmall { .. }))
    ));

    let bt709 = conv(Matrix::Bt709, false, Transfer::Bt709);
    let bt601_full = conv(Matrix::Bt601, true, Transfer::Srgb);
    let bt2020 = conv(Matrix::Bt2020, false, Transfer::Bt709);
    let mut cases = vec![
        src01("src01 576x324 8-bit", (576, 324, 8), 3, true, bt709),
        src01("src01 576x324 10-bit", (576, 324, 10), 3, true, bt709),
        src01(
            "src01 576x324 10-bit full",
            (576, 324, 10),
            3,
            true,
            bt601_full,
        ),
        src01("src01 160x90 8-bit", (160, 90, 8), 4, true, bt601_full),
        src01("src01 160x90 grey", (160, 90, 8), 4, false, bt709),
        src01(
            "src01 576x324 grey 10-bit",
            (576, 324, 10),
            1,
            false,
            bt601_full,
        ),
    ];
    for (name, w, h, bpc, cv, time) in [
        ("synthetic 1920x1080 8-bit", 1920, 1080, 8, bt709, true),
        (
            "synthetic 1920x1080 8-bit full",
            1920,
            1080,
            8,
            bt601_full,
            false,
        ),
        ("synthetic 37x21 10-bit", 37, 21, 10, bt2020, false),
        ("synthetic 8x8 8-bit", 8, 8, 8, bt709, false),
    ] {
        cases.push(Case {
            name,
            width: w,
            height: h,
            bpc,
            chroma: true,
            conv: cv,
            frames: vec![synthetic(w, h, bpc, 7)],
            time,
        });
    }
    let mut worst = 0.0f64;
    for case in &cases {
        worst = worst.max(run_case(&dev, &stream, case));
    }
    println!("all cases: max |gpu - cpu| = {worst:.3e} (tolerance {TOLERANCE:e})");
}
