//! `ciede` on the GPU ([`CiedeGpu`]) against the CPU half ([`Ciede`], equal to libvmaf 3.2.0
//! at its log's 6 decimals, tests/ciede.rs), frame by frame, within 1e-4 (the GPU computes
//! each pixel in `f32` with fast intrinsics; expected ~1e-5), and the same words when a frame
//! is run twice. Cases: Netflix's src01 576x324 at 8, 10 and 12 bits in 4:2:0, 4:2:2 and
//! 4:4:4 (chroma made here by repeating samples), 575x323 crops (libvmaf's padding and, for
//! 4:2:0, its read past the chroma buffer, taken as 0 by both halves), and a synthetic
//! 1920x1080 8-bit pair, over 1-byte, packed and pitched 16-bit luma layouts. Then the
//! throughput of `ciede` alone at 1920x1080 8-bit (printed; the bar is 2000 fps on an H100).
//! Skipped (with a printed reason) where no GPU is usable.
//!
//! Run: `cargo test --release --test gpu_ciede -- --nocapture`.

mod common;

use common::device::{upload, Layout};

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::CudaStream;
use gstvmafcompare::cuda::memory::{alloc_copy, alloc_zeroed, DeviceAlloc};
use gstvmafcompare::cuda::{ChromaDev, DevPlane};
use gstvmafcompare::engine::frame::{ChromaPair, LumaPlane};
use gstvmafcompare::features::ciede::cpu::Ciede;
use gstvmafcompare::features::ciede::cuda::CiedeGpu;
use gstvmafcompare::features::ciede::ChromaRead;
use gstvmafcompare::features::{DevFrame, HostFrame};

const TOLERANCE: f64 = 1e-4;

/// One frame: Y, Cb, Cr planes of `u16` samples at `bpc` bits; chroma `cw` x `ch`.
#[derive(Clone)]
struct Frame {
    w: usize,
    h: usize,
    cw: usize,
    ch: usize,
    bpc: u32,
    y: Vec<u16>,
    cb: Vec<u16>,
    cr: Vec<u16>,
}

/// The first `n` frames of a src01 I420 (8-bit) or I420_10LE file.
fn read_i420(name: &str, w: usize, h: usize, bpc: u32, n: usize) -> Vec<Frame> {
    let bytes = std::fs::read(common::reference_dir().join(name)).expect("read reference yuv");
    let bps = if bpc > 8 { 2 } else { 1 };
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
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
        .chunks_exact((w * h + 2 * cw * ch) * bps)
        .take(n)
        .map(|f| {
            let (y, rest) = f.split_at(w * h * bps);
            let (cb, cr) = rest.split_at(cw * ch * bps);
            Frame {
                w,
                h,
                cw,
                ch,
                bpc,
                y: samples(y),
                cb: samples(cb),
                cr: samples(cr),
            }
        })
        .collect()
}

impl Frame {
    /// 4:2:2 (`full_width` false) or 4:4:4 from 4:2:0 by repeating chroma samples.
    fn upsample(&self, full_width: bool) -> Frame {
        let cw = if full_width { self.w } else { self.cw };
        let ch = self.h;
        let up = |p: &[u16]| -> Vec<u16> {
            (0..ch * cw)
                .map(|i| {
                    let (x, y) = (i % cw, i / cw);
                    let sx = if full_width { x / 2 } else { x };
                    p[(y / 2) * self.cw + sx]
                })
                .collect()
        };
        Frame {
            cw,
            ch,
            cb: up(&self.cb),
            cr: up(&self.cr),
            y: self.y.clone(),
            ..*self
        }
    }

    /// The top-left `w` x `h` (chroma rounded up like GStreamer's planes).
    fn crop(&self, w: usize, h: usize) -> Frame {
        let (cw, ch) = (
            if self.cw < self.w { w.div_ceil(2) } else { w },
            if self.ch < self.h { h.div_ceil(2) } else { h },
        );
        let cut = |p: &[u16], pw: usize, nw: usize, nh: usize| -> Vec<u16> {
            (0..nh)
                .flat_map(|y| p[y * pw..y * pw + nw].to_vec())
                .collect()
        };
        Frame {
            w,
            h,
            cw,
            ch,
            bpc: self.bpc,
            y: cut(&self.y, self.w, w, h),
            cb: cut(&self.cb, self.cw, cw, ch),
            cr: cut(&self.cr, self.cw, cw, ch),
        }
    }

    /// Raised by 2 bits, the low bits from the top ones (a 12-bit frame from a 10-bit one).
    fn to_12_bits(&self) -> Frame {
        let up = |p: &[u16]| p.iter().map(|&v| (v << 2) | (v >> 8)).collect();
        Frame {
            bpc: 12,
            y: up(&self.y),
            cb: up(&self.cb),
            cr: up(&self.cr),
            ..self.clone()
        }
    }

    fn plane<'a>(&self, s: &'a [u16], chroma: bool) -> LumaPlane<'a> {
        let (w, h) = if chroma {
            (self.cw, self.ch)
        } else {
            (self.w, self.h)
        };
        LumaPlane::packed(s, w, h, self.bpc).expect("plane")
    }
}

/// A smooth coloured pattern (reference) and a noisy, shifted copy (distorted), 4:2:0.
fn synthetic(w: usize, h: usize, count: usize) -> Vec<(Frame, Frame)> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f64 / (1u64 << 24) as f64 - 0.5
    };
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let mut plane = |pw: usize, ph: usize, t: f64, lo: f64, hi: f64| -> (Vec<u16>, Vec<u16>) {
        let (mut r, mut d) = (Vec::new(), Vec::new());
        for y in 0..ph {
            for x in 0..pw {
                let (fx, fy) = (x as f64 / pw as f64, y as f64 / ph as f64);
                let v = 0.5 + 0.35 * (fx * 9.0 + t).sin() * (fy * 5.0 - t).cos();
                let rv = (lo + v * (hi - lo)).round();
                let dv = (rv * 0.98 + 3.0 + noise() * 12.0).round();
                r.push(rv.clamp(0.0, 255.0) as u16);
                d.push(dv.clamp(0.0, 255.0) as u16);
            }
        }
        (r, d)
    };
    (0..count)
        .map(|i| {
            let t = i as f64 * 0.7;
            let (ry, dy) = plane(w, h, t, 16.0, 235.0);
            let (rb, db) = plane(cw, ch, t + 1.0, 16.0, 240.0);
            let (rr, dr) = plane(cw, ch, t + 2.0, 16.0, 240.0);
            let f = |y, cb, cr| Frame {
                w,
                h,
                cw,
                ch,
                bpc: 8,
                y,
                cb,
                cr,
            };
            (f(ry, rb, rr), f(dy, db, dr))
        })
        .collect()
}

/// Uploaded planes of one pair (kept alive while the kernels read them) and its frame.
struct Uploaded {
    _luma: Vec<common::device::Upload>,
    _chroma: Vec<DeviceAlloc<u16>>,
    reference: DevPlane,
    distorted: DevPlane,
    chroma: ChromaDev,
}

fn upload_pair(stream: &Arc<CudaStream>, (r, d): (&Frame, &Frame), layout: Layout) -> Uploaded {
    let (ru, rp) = upload(stream, &r.y, r.w, r.h, layout);
    let (du, dp) = upload(stream, &d.y, d.w, d.h, layout);
    let bufs: Vec<DeviceAlloc<u16>> = [&r.cb, &r.cr, &d.cb, &d.cr]
        .iter()
        .map(|p| alloc_copy(stream, &p[..], "test chroma").expect("upload chroma"))
        .collect();
    let cp = |i: usize| DevPlane::packed_u16(&bufs[i], r.cw, stream);
    let chroma = ChromaDev {
        reference: [cp(0), cp(1)],
        distorted: [cp(2), cp(3)],
        width: r.cw,
        height: r.ch,
    };
    Uploaded {
        _luma: vec![ru, du],
        _chroma: bufs,
        reference: rp,
        distorted: dp,
        chroma,
    }
}

fn enqueue(gpu: &mut CiedeGpu, stream: &Arc<CudaStream>, u: &Uploaded, out: &mut DeviceAlloc<u64>) {
    let frame = DevFrame {
        reference: u.reference,
        distorted: u.distorted,
        previous: None,
        previous_distorted: None,
        chroma: Some(&u.chroma),
    };
    gpu.enqueue_frame(
        stream,
        &frame,
        &mut out.slice_mut(0..CiedeGpu::RESULT_WORDS),
    )
    .expect("ciede enqueue");
}

fn cpu_score(cpu: &mut Ciede, (r, d): (&Frame, &Frame)) -> f64 {
    let (ry, dy) = (r.plane(&r.y, false), d.plane(&d.y, false));
    let chroma = ChromaPair {
        reference: [r.plane(&r.cb, true), r.plane(&r.cr, true)],
        distorted: [d.plane(&d.cb, true), d.plane(&d.cr, true)],
    };
    let f = HostFrame {
        reference: &ry,
        distorted: &dy,
        previous: None,
        previous2: None,
        previous_distorted: None,
        chroma: Some(&chroma),
    };
    cpu.score(&f).expect("cpu ciede")
}

/// The cases: name, pairs.
fn cases() -> Vec<(String, Vec<(Frame, Frame)>)> {
    let r8 = read_i420("src01_ref_576x324_420p8_3f.yuv", 576, 324, 8, 3);
    let d8 = read_i420("src01_dis_576x324_420p8_3f.yuv", 576, 324, 8, 3);
    let r10 = read_i420("src01_ref_576x324_420p10_3f.yuv", 576, 324, 10, 3);
    let d10 = read_i420("src01_dis_576x324_420p10_3f.yuv", 576, 324, 10, 3);
    let pairs = |r: &[Frame], d: &[Frame], f: &dyn Fn(&Frame) -> Frame| -> Vec<(Frame, Frame)> {
        r.iter().zip(d).map(|(a, b)| (f(a), f(b))).collect()
    };
    vec![
        (
            "576x324 4:2:0 8-bit".into(),
            pairs(&r8, &d8, &|f| f.clone()),
        ),
        (
            "576x324 4:2:2 8-bit".into(),
            pairs(&r8, &d8, &|f| f.upsample(false)),
        ),
        (
            "576x324 4:4:4 8-bit".into(),
            pairs(&r8, &d8, &|f| f.upsample(true)),
        ),
        (
            "576x324 4:2:0 10-bit".into(),
            pairs(&r10, &d10, &|f| f.clone()),
        ),
        (
            "576x324 4:2:2 12-bit".into(),
            pairs(&r10, &d10, &|f| f.upsample(false).to_12_bits()),
        ),
        (
            "576x324 4:4:4 12-bit".into(),
            pairs(&r10, &d10, &|f| f.upsample(true).to_12_bits()),
        ),
        (
            "575x323 4:2:0 8-bit".into(),
            pairs(&r8, &d8, &|f| f.crop(575, 323)),
        ),
        (
            "575x323 4:2:2 10-bit".into(),
            pairs(&r10, &d10, &|f| f.upsample(false).crop(575, 323)),
        ),
        (
            "575x323 4:4:4 8-bit".into(),
            pairs(&r8, &d8, &|f| f.upsample(true).crop(575, 323)),
        ),
        (
            "1920x1080 4:2:0 8-bit synthetic".into(),
            synthetic(1920, 1080, 2),
        ),
    ]
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn ciede_gpu_matches_cpu() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    let mut out = alloc_zeroed::<u64>(&stream, CiedeGpu::RESULT_WORDS, "test out").expect("out");
    let mut table = vec!["| case | luma layout | frames | max abs GPU - CPU |".to_owned()];
    for (name, pairs) in cases() {
        let (r0, _) = &pairs[0];
        let read = ChromaRead::new((r0.w, r0.h), (r0.cw, r0.ch), r0.bpc).expect("chroma read");
        let mut cpu = Ciede::new(r0.w, r0.h, r0.bpc, read);
        let mut gpu = CiedeGpu::new(&dev, &stream, r0.w, r0.h, r0.bpc, read).expect("CiedeGpu");
        let expected: Vec<f64> = pairs
            .iter()
            .map(|(r, d)| cpu_score(&mut cpu, (r, d)))
            .collect();
        let layouts: Vec<Layout> = if r0.bpc == 8 {
            vec![Layout::U8 { pad: 13 }, Layout::U16Packed]
        } else {
            vec![Layout::U16Packed, Layout::U16Pitched { pad: 7 }]
        };
        for layout in layouts {
            let mut dmax = 0.0f64;
            for (i, (r, d)) in pairs.iter().enumerate() {
                let u = upload_pair(&stream, (r, d), layout);
                enqueue(&mut gpu, &stream, &u, &mut out);
                let words = stream.clone_dtoh(&*out).expect("read back");
                enqueue(&mut gpu, &stream, &u, &mut out);
                let again = stream.clone_dtoh(&*out).expect("read back");
                stream.synchronize().expect("synchronize");
                assert_eq!(words, again, "{name}: words differ between two runs");
                let g = gpu.score(&words);
                let diff = (g - expected[i]).abs();
                assert!(
                    diff <= TOLERANCE,
                    "{name} {layout:?} frame {i}: GPU {g} vs CPU {}",
                    expected[i]
                );
                dmax = dmax.max(diff);
            }
            table.push(format!(
                "| {name} | {layout:?} | {} | {dmax:.2e} |",
                pairs.len()
            ));
        }
    }
    eprintln!("\nciede GPU vs CPU:\n{}\n", table.join("\n"));
}

/// `ciede` alone at 1920x1080 8-bit 4:2:0: frames per second of enqueue (both kernels) over
/// 500 frames on one stream, the planes already on the GPU.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn ciede_gpu_throughput_1080p() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    let pairs = synthetic(1920, 1080, 1);
    let (r, d) = &pairs[0];
    let read = ChromaRead::new((r.w, r.h), (r.cw, r.ch), 8).expect("chroma read");
    let mut gpu = CiedeGpu::new(&dev, &stream, r.w, r.h, 8, read).expect("CiedeGpu");
    let mut out = alloc_zeroed::<u64>(&stream, 1, "test out").expect("out");
    let u = upload_pair(&stream, (r, d), Layout::U8 { pad: 0 });
    for _ in 0..20 {
        enqueue(&mut gpu, &stream, &u, &mut out);
    }
    stream.synchronize().expect("synchronize");
    let n = 500;
    let t = Instant::now();
    for _ in 0..n {
        enqueue(&mut gpu, &stream, &u, &mut out);
    }
    stream.synchronize().expect("synchronize");
    let fps = f64::from(n) / t.elapsed().as_secs_f64();
    eprintln!(
        "ciede GPU alone, 1920x1080 8-bit 4:2:0 on {}: {fps:.0} fps",
        dev.name()
    );
    assert!(fps > 0.0);
}

/// Through the element: `backend=cuda` against `backend=cpu` with all four new extractors on
/// src01 (160x90 8-bit, 576x324 8- and 10-bit 4:2:0 files): `ciede2000` within 1e-4, the
/// float extractors' keys equal (their GPU sums are the CPU's bit for bit). Covers the CUDA
/// backend's chroma unpacking and the extractors' own streams.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn cuda_backend_equals_cpu_backend() {
    if common::gpu_device().is_none() {
        return;
    }
    let features = "ciede,float_psnr,float_ansnr,float_moment";
    let exact = [
        "float_psnr",
        "float_ansnr",
        "float_anpsnr",
        "float_moment_ref1st",
        "float_moment_dis1st",
        "float_moment_ref2nd",
        "float_moment_dis2nd",
    ];
    for p in common::reference_pairs() {
        let score = |backend: &str| {
            let desc = format!(
                "vmafcompare name=cmp backend={backend} features={features} ! fakesink {} {}",
                common::raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
                common::raw_branch(&p.distorted, p.width, p.height, p.format, "distorted"),
            );
            let out = common::run(&desc, common::LONG);
            assert!(out.errors.is_empty(), "{backend}: {:?}", out.errors);
            assert_eq!(out.frames.len(), p.frames, "{backend}");
            out.frames
        };
        let (gpu, cpu) = (score("cuda"), score("cpu"));
        let mut dmax = 0.0f64;
        for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
            let (a, b) = (g.get("ciede2000"), c.get("ciede2000"));
            let (a, b) = (a.expect("gpu ciede2000"), b.expect("cpu ciede2000"));
            assert!(
                (a - b).abs() <= TOLERANCE,
                "frame {i}: ciede2000 {a} vs {b}"
            );
            dmax = dmax.max((a - b).abs());
            for k in exact {
                assert_eq!(g.get(k), c.get(k), "{} frame {i}: {k}", p.format);
            }
        }
        eprintln!(
            "{}x{} {}: ciede2000 max |cuda - cpu| {dmax:.2e}, float keys equal",
            p.width, p.height, p.format
        );
    }
}
