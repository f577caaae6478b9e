//! The scaler's CUDA half (`CudaPlaneScaler`, `kernels/scale.cu`) against its CPU half
//! (`cpu::scale_plane`, itself equal to FFmpeg's swscale, see tests/scale_swscale.rs): every
//! output sample must be equal. Cases: 8-bit 1280x720 to 640x360, 1920x1080 and 718x404
//! (bicubic), bilinear and lanczos once each, 10-bit 1280x720 to 854x480, a 12-bit 4:4:4
//! chroma-sized plane 640x360 to 1280x720, a 4:2:0 chroma plane, tiny planes (filters wider
//! than the plane, one vertical tap) and a 61x downscale, over the input layouts the
//! backend passes: 1-byte samples, packed and pitched 16-bit planes, an 8-bit stream raised
//! to 10 bits (`up` = 2) and P010-style left-aligned samples (`down` = 6, garbage in the
//! padding bits). Content: a smooth gradient with waves plus noise. Each scaler runs two
//! frames (no state carried over). Prints a table and the GPU time of 720p -> 1080p. Skipped
//! (with a printed reason) where no GPU is usable. The colour range conversion fused between
//! the passes (issue 49: full -> limited and back, luma and chroma, same size and scaled, 8
//! and 10 bits) is compared the same way.
//!
//! Run: `cargo test --release --test gpu_scale -- --nocapture`.

mod common;

use common::device::{upload, Layout};

use std::sync::Arc;

use cudarc::driver::CudaStream;
use gstvmafcompare::cuda::{CudaError, DevPlane, GpuDevice};
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::engine::scale::cpu::{scale_plane, Scratch};
use gstvmafcompare::engine::scale::cuda::CudaPlaneScaler;
use gstvmafcompare::engine::scale::range::{ColourRange, RangeConversion};
use gstvmafcompare::engine::scale::{PlaneScaler, ScaleMethod, Siting};

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

/// Natural-looking content at `bpc` bits: a diagonal gradient, two waves, a hard-edged
/// rectangle (ringing for bicubic / lanczos, clipped at both ends) and noise of a few code
/// values, moving with `t`.
fn natural(w: usize, h: usize, bpc: u32, t: u64) -> Vec<u16> {
    let max = f64::from((1u32 << bpc) - 1);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t + 1));
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f64 / w as f64, y as f64 / h as f64);
            let mut v = 0.15
                + 0.6 * (0.7 * fx + 0.3 * fy)
                + 0.08 * (fx * 37.0 + t as f64).sin() * (fy * 23.0).cos()
                + 0.05 * (fx * 310.0 + fy * 170.0).sin();
            if (0.3..0.45).contains(&fx) && (0.2..0.6).contains(&fy) {
                v = if (x / 8 + y / 8) % 2 == 0 { 1.0 } else { 0.0 };
            }
            let noise = (rng.next() % 9) as f64 - 4.0;
            out.push((v * max + noise * max / 255.0).round().clamp(0.0, max) as u16);
        }
    }
    out
}

/// How a case's source lies in device memory.
#[derive(Clone, Copy, Debug)]
enum Input {
    /// One of the common layouts, samples at the scoring depth.
    Plain(Layout),
    /// 8-bit samples stored as bytes, raised to the scoring depth by `up` (the scoring depth
    /// is 8 + `up`).
    Raised { up: u32 },
    /// P010-style: the `bpc`-bit sample in the top bits of a `u16`, the low 16 - bpc bits
    /// holding garbage, `pad` samples after each row.
    LeftAligned { pad: usize },
}

struct Case {
    name: &'static str,
    method: ScaleMethod,
    src: (usize, usize),
    dst: (usize, usize),
    bpc: u32,
    siting: Siting,
    input: Input,
}

/// Puts `frame` (source samples: at `bpc` bits, or 8 bits for [`Input::Raised`]) on the
/// device as `input` says; returns the buffer to keep alive and its descriptor.
fn put(
    stream: &Arc<CudaStream>,
    frame: &[u16],
    (w, h): (usize, usize),
    bpc: u32,
    input: Input,
    rng: &mut Rng,
) -> (common::device::Upload, DevPlane) {
    match input {
        Input::Plain(layout) => upload(stream, frame, w, h, layout),
        Input::Raised { up } => {
            let (keep, mut plane) = upload(stream, frame, w, h, Layout::U8 { pad: 5 });
            plane.up = up;
            (keep, plane)
        }
        Input::LeftAligned { pad } => {
            let down = 16 - bpc;
            let stored: Vec<u16> = frame
                .iter()
                .map(|&s| (s << down) | (rng.next() as u16 & ((1 << down) - 1)))
                .collect();
            let (keep, mut plane) = upload(stream, &stored, w, h, Layout::U16Pitched { pad });
            plane.down = down;
            plane.mask = (1 << bpc) - 1;
            (keep, plane)
        }
    }
}

/// Scales two frames of `case` on both halves and asserts equal samples. Returns a table row.
fn compare(dev: &GpuDevice, stream: &Arc<CudaStream>, case: &Case) -> String {
    compare_range(dev, stream, case, None)
}

/// [`compare`] with the colour range conversion `range` fused between the passes.
fn compare_range(
    dev: &GpuDevice,
    stream: &Arc<CudaStream>,
    case: &Case,
    range: Option<RangeConversion>,
) -> String {
    let (sw, sh) = case.src;
    let (dw, dh) = case.dst;
    let mut scaler = PlaneScaler::new(case.method, case.src, case.dst, case.siting)
        .unwrap_or_else(|e| panic!("{}: filters: {e}", case.name));
    scaler.range = range;
    let mut gpu =
        CudaPlaneScaler::new(dev, stream, &scaler, case.bpc).expect("CudaPlaneScaler::new");
    assert_eq!(gpu.src(), case.src);
    assert_eq!(gpu.dst(), case.dst);
    assert_eq!(gpu.output_bytes(), dw * dh * 2);
    let mut out = gpu.alloc_output(stream).expect("output");
    let mut scratch = Scratch::default();
    let mut want = Vec::new();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut extremes = (u16::MAX, 0u16);
    for t in 0..2 {
        let stored_bpc = match case.input {
            Input::Raised { .. } => 8,
            _ => case.bpc,
        };
        let frame = natural(sw, sh, stored_bpc, t);
        let scoring: Vec<u16> = match case.input {
            Input::Raised { up } => frame.iter().map(|&s| s << up).collect(),
            _ => frame.clone(),
        };
        let plane = LumaPlane::packed(&scoring, sw, sh, case.bpc).expect("plane");
        assert!(
            scale_plane(&scaler, &plane, &mut scratch, &mut want),
            "CPU refused"
        );
        let (_keep, src) = put(stream, &frame, case.src, case.bpc, case.input, &mut rng);
        let dp = gpu
            .enqueue(stream, &src, &mut out.slice_mut(..))
            .expect("enqueue");
        assert_eq!(dp.pitch, (dw * 2) as i64);
        let got = stream.clone_dtoh(&*out).expect("read back");
        stream.synchronize().expect("synchronize");
        assert_eq!(got.len(), want.len());
        if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
            let diffs = (0..want.len()).filter(|&i| got[i] != want[i]).count();
            panic!(
                "{} frame {t}: {diffs} samples differ, first at ({}, {}): GPU {} CPU {}",
                case.name,
                i % dw,
                i / dw,
                got[i],
                want[i]
            );
        }
        for &v in &want {
            extremes = (extremes.0.min(v), extremes.1.max(v));
        }
    }
    format!(
        "{:<22} {:>9} {:>5}x{:<4} -> {:>4}x{:<4} {:>2}-bit taps {:>2}/{:<2} {:<26} range {}..{}  equal",
        case.name,
        case.method.name(),
        sw,
        sh,
        dw,
        dh,
        case.bpc,
        scaler.h.taps,
        scaler.v.taps,
        format!("{:?}", case.input),
        extremes.0,
        extremes.1
    )
}

/// GPU time per plane of 8-bit 1280x720 -> 1920x1080 bicubic, back to back.
fn time(dev: &GpuDevice, stream: &Arc<CudaStream>) {
    const FRAMES: u32 = 1000;
    let scaler = PlaneScaler::new(
        ScaleMethod::Bicubic,
        (1280, 720),
        (1920, 1080),
        Siting::default(),
    )
    .expect("filters");
    let mut gpu = CudaPlaneScaler::new(dev, stream, &scaler, 8).expect("CudaPlaneScaler::new");
    let mut out = gpu.alloc_output(stream).expect("output");
    let frame = natural(1280, 720, 8, 0);
    let (_keep, src) = upload(stream, &frame, 1280, 720, Layout::U8 { pad: 0 });
    let mut run = |n: u32| {
        for _ in 0..n {
            gpu.enqueue(stream, &src, &mut out.slice_mut(..))
                .expect("enqueue");
        }
        stream.synchronize().expect("synchronize");
    };
    run(20);
    let t = std::time::Instant::now();
    run(FRAMES);
    let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(FRAMES);
    println!("timing scale 1280x720 -> 1920x1080 8-bit bicubic: {us:.1} us/plane");
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_scale_matches_cpu() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    println!("GPU: {}", dev.name());
    let luma = Siting::default();
    let chroma444 = Siting {
        chroma: true,
        ..Siting::default()
    };
    let chroma420 = Siting {
        h_sub: 1,
        v_sub: 1,
        chroma: true,
        ..Siting::default()
    };
    let p720 = (1280, 720);
    let cases = [
        Case {
            name: "8-bit half",
            method: ScaleMethod::Bicubic,
            src: p720,
            dst: (640, 360),
            bpc: 8,
            siting: luma,
            input: Input::Plain(Layout::U8 { pad: 13 }),
        },
        Case {
            name: "8-bit up to 1080p",
            method: ScaleMethod::Bicubic,
            src: p720,
            dst: (1920, 1080),
            bpc: 8,
            siting: luma,
            input: Input::Plain(Layout::U16Packed),
        },
        Case {
            name: "8-bit odd size",
            method: ScaleMethod::Bicubic,
            src: p720,
            dst: (718, 404),
            bpc: 8,
            siting: luma,
            input: Input::Plain(Layout::U16Pitched { pad: 7 }),
        },
        Case {
            name: "8-bit bilinear",
            method: ScaleMethod::Bilinear,
            src: p720,
            dst: (718, 404),
            bpc: 8,
            siting: luma,
            input: Input::Plain(Layout::U8 { pad: 0 }),
        },
        Case {
            name: "8-bit lanczos",
            method: ScaleMethod::Lanczos,
            src: p720,
            dst: (1920, 1080),
            bpc: 8,
            siting: luma,
            input: Input::Plain(Layout::U16Packed),
        },
        Case {
            name: "10-bit 480p",
            method: ScaleMethod::Bicubic,
            src: p720,
            dst: (854, 480),
            bpc: 10,
            siting: luma,
            input: Input::Plain(Layout::U16Packed),
        },
        Case {
            name: "12-bit 4:4:4 chroma",
            method: ScaleMethod::Bicubic,
            src: (640, 360),
            dst: (1280, 720),
            bpc: 12,
            siting: chroma444,
            input: Input::Plain(Layout::U16Pitched { pad: 3 }),
        },
        Case {
            name: "8-bit 4:2:0 chroma",
            method: ScaleMethod::Bicubic,
            src: (640, 360),
            dst: (359, 202),
            bpc: 8,
            siting: chroma420,
            input: Input::Plain(Layout::U8 { pad: 1 }),
        },
        Case {
            name: "8-bit raised to 10",
            method: ScaleMethod::Bicubic,
            src: p720,
            dst: (854, 480),
            bpc: 10,
            siting: luma,
            input: Input::Raised { up: 2 },
        },
        Case {
            name: "P010 left-aligned",
            method: ScaleMethod::Bicubic,
            src: p720,
            dst: (1920, 1080),
            bpc: 10,
            siting: luma,
            input: Input::LeftAligned { pad: 4 },
        },
        // Filters wider than the plane (taps cut at its edge), one tap vertically, and a
        // 61x downscale (244 / 238 taps).
        Case {
            name: "tiny up, lanczos",
            method: ScaleMethod::Lanczos,
            src: (9, 5),
            dst: (32, 17),
            bpc: 8,
            siting: luma,
            input: Input::Plain(Layout::U8 { pad: 3 }),
        },
        Case {
            name: "tiny down",
            method: ScaleMethod::Bicubic,
            src: (40, 30),
            dst: (3, 2),
            bpc: 10,
            siting: luma,
            input: Input::Plain(Layout::U16Pitched { pad: 1 }),
        },
        Case {
            name: "tiny, 1 vertical tap",
            method: ScaleMethod::Bicubic,
            src: (5, 3),
            dst: (4, 7),
            bpc: 8,
            siting: luma,
            input: Input::Plain(Layout::U16Packed),
        },
        Case {
            name: "steep down",
            method: ScaleMethod::Bicubic,
            src: p720,
            dst: (21, 12),
            bpc: 8,
            siting: luma,
            input: Input::Plain(Layout::U8 { pad: 0 }),
        },
    ];
    for case in &cases {
        println!("{}", compare(&dev, &stream, case));
    }
    // Colour range conversion (issue 49), both directions, on luma and chroma planes, the
    // same size (one tap each way, as an unscaled stream is converted) and scaled.
    let directions = [
        RangeConversion::between(ColourRange::Full, ColourRange::Limited),
        RangeConversion::between(ColourRange::Limited, ColourRange::Full),
    ];
    let ranged = [
        Case {
            name: "range 8-bit same size",
            method: ScaleMethod::Bicubic,
            src: (640, 360),
            dst: (640, 360),
            bpc: 8,
            siting: luma,
            input: Input::Plain(Layout::U8 { pad: 3 }),
        },
        Case {
            name: "range 10-bit same size",
            method: ScaleMethod::Bicubic,
            src: (640, 360),
            dst: (640, 360),
            bpc: 10,
            siting: luma,
            input: Input::Plain(Layout::U16Packed),
        },
        Case {
            name: "range 8-bit 4:2:0 chroma",
            method: ScaleMethod::Bicubic,
            src: (320, 180),
            dst: (320, 180),
            bpc: 8,
            siting: chroma420,
            input: Input::Plain(Layout::U8 { pad: 0 }),
        },
        Case {
            name: "range 8-bit scaled up",
            method: ScaleMethod::Bicubic,
            src: (426, 240),
            dst: (640, 360),
            bpc: 8,
            siting: luma,
            input: Input::Plain(Layout::U8 { pad: 1 }),
        },
        Case {
            name: "range 10-bit 4:4:4 chroma scaled",
            method: ScaleMethod::Bicubic,
            src: (640, 360),
            dst: (426, 240),
            bpc: 10,
            siting: chroma444,
            input: Input::Plain(Layout::U16Pitched { pad: 2 }),
        },
    ];
    for case in &ranged {
        for range in directions {
            let row = compare_range(&dev, &stream, case, range);
            println!("{row} {:?}", range.map(|r| (r.from, r.to)));
        }
    }

    // Refusals: a depth beyond the 15-bit path, an output buffer too short.
    let scaler = PlaneScaler::new(ScaleMethod::Bicubic, p720, (640, 360), luma).expect("filters");
    assert!(matches!(
        CudaPlaneScaler::new(&dev, &stream, &scaler, 16),
        Err(CudaError::Geometry(_))
    ));
    let mut gpu = CudaPlaneScaler::new(&dev, &stream, &scaler, 8).expect("CudaPlaneScaler::new");
    let mut short = gpu.alloc_output(&stream).expect("output");
    let frame = natural(1280, 720, 8, 0);
    let (_keep, src) = upload(&stream, &frame, 1280, 720, Layout::U8 { pad: 0 });
    let n = gpu.output_len();
    assert!(matches!(
        gpu.enqueue(&stream, &src, &mut short.slice_mut(..n - 1)),
        Err(CudaError::Driver { .. })
    ));
    stream.synchronize().expect("synchronize");

    time(&dev, &stream);
}
