//! SpEED chroma's CUDA half against its CPU half (itself checked against libvmaf in
//! tests/v1_speed.rs), frame by frame through the registry's `speed_chroma` instance with the
//! v1 models' options: Netflix's src01 pairs (real content, 3 frames at 8 and 10 bits) at
//! their size, upscaled to 1920x1080 in 4:2:0 and 4:4:4, to an odd 1283x721, and to
//! 3840x2160 with the 2160 models' prescale (0.5, bilinear). 8-bit planes go up as bytes,
//! 10-bit as `u16`. Each output within 1e-5 of the CPU's (the kernels round every operation
//! as the CPU does; CUDA's double `log2` may differ from glibc's by an ulp), and the same
//! words when a frame is run twice. Skipped (with a printed reason) where no GPU is usable.
//!
//! Run: `cargo test --release --test gpu_speed -- --nocapture`.

mod common;

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use gstvmafcompare::cuda::{ChromaDev, DevPlane, GpuDevice};
use gstvmafcompare::engine::frame::SampleLayout;
use gstvmafcompare::features::{self, DevFrame, Geometry, HostFrame, OptionValue, Options};
use gstvmafcompare::video::frame::{ChromaPair, LumaPlane};

const TOLERANCE: f64 = 1e-5;

/// One frame's chroma planes (Cb, Cr), `cw` x `ch` samples at `bpc` bits.
#[derive(Clone)]
struct Chroma {
    cw: usize,
    ch: usize,
    bpc: u32,
    planes: [Vec<u16>; 2],
}

/// The chroma of the first 3 frames of a src01 576x324 file.
fn read_src01(which: &str, bpc: u32) -> Vec<Chroma> {
    let tag = if bpc == 8 { "420p8" } else { "420p10" };
    let path = common::reference_dir().join(format!("src01_{which}_576x324_{tag}_3f.yuv"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (w, h, cw, ch) = (576, 324, 288, 162);
    let bps = if bpc > 8 { 2 } else { 1 };
    let frame = (w * h + 2 * cw * ch) * bps;
    let samples = |b: &[u8]| -> Vec<u16> {
        if bps == 2 {
            b.chunks_exact(2)
                .map(|p| u16::from_le_bytes([p[0], p[1]]))
                .collect()
        } else {
            b.iter().map(|&x| u16::from(x)).collect()
        }
    };
    bytes
        .chunks_exact(frame)
        .map(|f| {
            let c = &f[w * h * bps..];
            let (cb, cr) = c.split_at(cw * ch * bps);
            Chroma {
                cw,
                ch,
                bpc,
                planes: [samples(cb), samples(cr)],
            }
        })
        .collect()
}

/// `c` resized to `cw` x `ch` (bilinear, rounded): larger real content.
fn resize(c: &Chroma, cw: usize, ch: usize) -> Chroma {
    let plane = |p: &[u16]| -> Vec<u16> {
        let mut out = Vec::with_capacity(cw * ch);
        for y in 0..ch {
            let fy =
                ((y as f64 + 0.5) * c.ch as f64 / ch as f64 - 0.5).clamp(0.0, (c.ch - 1) as f64);
            let (y0, ty) = (fy.floor() as usize, fy.fract());
            let y1 = (y0 + 1).min(c.ch - 1);
            for x in 0..cw {
                let fx = ((x as f64 + 0.5) * c.cw as f64 / cw as f64 - 0.5)
                    .clamp(0.0, (c.cw - 1) as f64);
                let (x0, tx) = (fx.floor() as usize, fx.fract());
                let x1 = (x0 + 1).min(c.cw - 1);
                let s = |xx: usize, yy: usize| f64::from(p[yy * c.cw + xx]);
                let v = (s(x0, y0) * (1.0 - tx) + s(x1, y0) * tx) * (1.0 - ty)
                    + (s(x0, y1) * (1.0 - tx) + s(x1, y1) * tx) * ty;
                out.push(v.round() as u16);
            }
        }
        out
    };
    Chroma {
        cw,
        ch,
        bpc: c.bpc,
        planes: [plane(&c.planes[0]), plane(&c.planes[1])],
    }
}

fn v1_options(prescale: Option<f64>) -> Options {
    let mut o = Options::new();
    for (k, v) in [
        ("speed_nn_floor", 0.1),
        ("speed_sigma_nn", 0.19),
        ("speed_weight_var_mode", 5.0),
        ("speed_max_val", 45.0),
    ] {
        o.set(k, OptionValue::Number(v));
    }
    if let Some(p) = prescale {
        o.set("speed_prescale", OptionValue::Number(p));
        o.set(
            "speed_prescale_method",
            OptionValue::Text("bilinear".into()),
        );
    }
    o
}

/// Device copies of a pair's chroma (bytes at 8 bits, `u16` above) and their descriptors.
struct Uploaded {
    _bytes: Vec<CudaSlice<u8>>,
    _words: Vec<CudaSlice<u16>>,
    chroma: ChromaDev,
}

fn upload(stream: &Arc<CudaStream>, r: &Chroma, d: &Chroma) -> Uploaded {
    let (cw, ch) = (r.cw, r.ch);
    let (mut bytes, mut words) = (Vec::new(), Vec::new());
    let mut planes = Vec::new();
    for p in [&r.planes[0], &r.planes[1], &d.planes[0], &d.planes[1]] {
        if r.bpc == 8 {
            let b: Vec<u8> = p.iter().map(|&v| v as u8).collect();
            bytes.push(stream.clone_htod(&b).expect("upload chroma"));
            let layout = SampleLayout {
                bytes: 1,
                down: 0,
                depth: 8,
                up: 0,
            };
            planes.push(DevPlane::new(
                bytes.last().expect("uploaded").device_ptr(stream).0,
                cw,
                layout,
            ));
        } else {
            words.push(stream.clone_htod(p).expect("upload chroma"));
            planes.push(DevPlane::packed_u16(
                words.last().expect("uploaded"),
                cw,
                stream,
            ));
        }
    }
    Uploaded {
        _bytes: bytes,
        _words: words,
        chroma: ChromaDev {
            reference: [planes[0], planes[1]],
            distorted: [planes[2], planes[3]],
            width: cw,
            height: ch,
        },
    }
}

/// Max |gpu - cpu| per output over the frames of a case (frames `(ref, dis)` of a
/// `w` x `h` frame).
fn run_case(
    dev: &GpuDevice,
    stream: &Arc<CudaStream>,
    label: &str,
    (w, h): (usize, usize),
    frames: &[(Chroma, Chroma)],
    prescale: Option<f64>,
) -> [f64; 3] {
    let (cw, ch, bpc) = (frames[0].0.cw, frames[0].0.ch, frames[0].0.bpc);
    let inst = features::find("speed_chroma")
        .expect("registered")
        .configure(&v1_options(prescale), true)
        .expect("configure");
    let g = Geometry {
        chroma: Some((cw, ch)),
        ..Geometry::luma(w, h, bpc)
    };
    let mut cpu = inst.cpu(&g).expect("cpu half");
    let mut gpu = inst.cuda(dev, stream, &g).expect("cuda half");
    let mut out = stream
        .alloc_zeros::<u64>(gpu.result_words())
        .expect("alloc out");
    let luma = vec![0u16; w * h];
    let lp = LumaPlane::packed(&luma, w, h, bpc).expect("luma");
    let mut max = [0f64; 3];
    for (i, (r, d)) in frames.iter().enumerate() {
        fn c(p: &[u16], cw: usize, ch: usize, bpc: u32) -> LumaPlane<'_> {
            LumaPlane::packed(p, cw, ch, bpc).expect("chroma")
        }
        let pair = ChromaPair {
            reference: [c(&r.planes[0], cw, ch, bpc), c(&r.planes[1], cw, ch, bpc)],
            distorted: [c(&d.planes[0], cw, ch, bpc), c(&d.planes[1], cw, ch, bpc)],
        };
        let mut want = [0.0; 3];
        cpu.extract(
            &HostFrame {
                reference: &lp,
                distorted: &lp,
                previous: None,
                previous2: None,
                previous_distorted: None,
                chroma: Some(&pair),
            },
            &mut want,
        )
        .expect("cpu extract");

        let up = upload(stream, r, d);
        let frame = DevFrame {
            reference: DevPlane::default(),
            distorted: DevPlane::default(),
            previous: None,
            previous_distorted: None,
            chroma: Some(&up.chroma),
        };
        let mut runs = Vec::new();
        for _ in 0..2 {
            gpu.enqueue(stream, &frame, &mut out.as_view_mut())
                .expect("enqueue");
            let mut words = vec![0u64; gpu.result_words()];
            stream.memcpy_dtoh(&out, &mut words).expect("read back");
            stream.synchronize().expect("synchronize");
            runs.push(words);
        }
        assert_eq!(runs[0], runs[1], "{label} frame {i}: not deterministic");
        let mut got = [0.0; 3];
        gpu.read(&runs[0], true, &mut got);
        for k in 0..3 {
            let e = (got[k] - want[k]).abs();
            max[k] = max[k].max(e);
            assert!(
                e <= TOLERANCE,
                "{label} frame {i} output {k}: gpu {} cpu {}",
                got[k],
                want[k]
            );
        }
    }
    eprintln!("{label}: max |gpu - cpu| (u, v, uv) = {max:?}");
    max
}

#[test]
fn gpu_matches_cpu() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    for bpc in [8, 10] {
        let pairs: Vec<(Chroma, Chroma)> = read_src01("ref", bpc)
            .into_iter()
            .zip(read_src01("dis", bpc))
            .collect();
        run_case(
            &dev,
            &stream,
            &format!("src01 576x324 {bpc}-bit"),
            (576, 324),
            &pairs,
            None,
        );
        let scaled = |cw, ch| -> Vec<(Chroma, Chroma)> {
            pairs
                .iter()
                .map(|(r, d)| (resize(r, cw, ch), resize(d, cw, ch)))
                .collect()
        };
        let label = format!("1920x1080 4:2:0 {bpc}-bit");
        run_case(&dev, &stream, &label, (1920, 1080), &scaled(960, 540), None);
        let label = format!("1920x1080 4:4:4 {bpc}-bit");
        run_case(
            &dev,
            &stream,
            &label,
            (1920, 1080),
            &scaled(1920, 1080),
            None,
        );
        // Odd luma size: libvmaf reads the chroma planes rounded down (641x360 of 642x361).
        let label = format!("1283x721 4:2:0 {bpc}-bit");
        run_case(&dev, &stream, &label, (1283, 721), &scaled(642, 361), None);
        let label = format!("3840x2160 4:2:0 {bpc}-bit prescale 0.5");
        run_case(
            &dev,
            &stream,
            &label,
            (3840, 2160),
            &scaled(1920, 1080),
            Some(0.5),
        );
    }
}

/// Frames per second of the CUDA half at 1080p 4:2:0 10-bit (printed; no assertion).
#[test]
fn gpu_throughput_1080p() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    let r = resize(&read_src01("ref", 10)[0], 960, 540);
    let d = resize(&read_src01("dis", 10)[0], 960, 540);
    let inst = features::find("speed_chroma")
        .expect("registered")
        .configure(&v1_options(None), true)
        .expect("configure");
    let g = Geometry {
        chroma: Some((960, 540)),
        ..Geometry::luma(1920, 1080, 10)
    };
    let mut gpu = inst.cuda(&dev, &stream, &g).expect("cuda half");
    let mut out = stream
        .alloc_zeros::<u64>(gpu.result_words())
        .expect("alloc out");
    let up = upload(&stream, &r, &d);
    let frame = DevFrame {
        reference: DevPlane::default(),
        distorted: DevPlane::default(),
        previous: None,
        previous_distorted: None,
        chroma: Some(&up.chroma),
    };
    let n = 500;
    for _ in 0..10 {
        gpu.enqueue(&stream, &frame, &mut out.as_view_mut())
            .expect("enqueue");
    }
    stream.synchronize().expect("synchronize");
    let t = std::time::Instant::now();
    for _ in 0..n {
        gpu.enqueue(&stream, &frame, &mut out.as_view_mut())
            .expect("enqueue");
    }
    stream.synchronize().expect("synchronize");
    let s = t.elapsed().as_secs_f64();
    eprintln!(
        "speed_chroma CUDA, 1080p 4:2:0 10-bit, one stream: {:.0} fps ({:.1} us/frame)",
        n as f64 / s,
        s * 1e6 / n as f64
    );
}
