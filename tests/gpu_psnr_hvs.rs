//! The GPU half of PSNR-HVS (`PsnrHvsGpu`) against the CPU half, frame by frame: the exact
//! sums of the 8x8 blocks' terms (which the GPU computes with the CPU's integer DCT and float
//! operations) equal the CPU's to within `f64` rounding (1e-12 relative), and the four dB
//! values, from the GPU's emulation of libvmaf's running float sum, stay within 1e-5 dB of
//! the CPU's (which is libvmaf's sum exactly); the words are the same when a frame is run
//! twice. Cases: Netflix's src01 pairs (160x90 8-bit, 576x324 8- and 10-bit) in the layouts
//! the backend passes, 12-bit, 4:4:4 and odd-sized (575x323) frames made from them, and a
//! synthetic 1920x1080 pair at 8 and 12 bits. Also the element with `backend=cuda` against
//! `backend=cpu`, and the device time per 1080p frame. Skipped where no GPU is usable.
//!
//! Run: `cargo test --release --test gpu_psnr_hvs -- --nocapture`.

mod common;

use common::device::{upload, Layout};

use std::sync::Arc;

use cudarc::driver::CudaStream;
use gstvmafcompare::cuda::memory::{alloc_copy, alloc_zeroed, DeviceAlloc};
use gstvmafcompare::cuda::{ChromaDev, DevPlane, GpuDevice};
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::features::psnr::libvmaf_chroma_size;
use gstvmafcompare::features::psnr_hvs::cuda::PsnrHvsGpu;
use gstvmafcompare::features::psnr_hvs::{cpu, outputs, Tables};

/// Largest |GPU - CPU| accepted per key, dB.
const TOLERANCE_DB: f64 = 1e-5;
/// Largest relative difference of the exact sums.
const TOLERANCE_SUM: f64 = 1e-12;

const KEYS: [&str; 4] = ["psnr_hvs_y", "psnr_hvs_cb", "psnr_hvs_cr", "psnr_hvs"];

/// One frame: planes of `u16` samples at `bpc` bits; chroma `cw` x `ch` (GStreamer's size).
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

impl Frame {
    /// The top-left `w` x `h` of a 4:2:0 frame (chroma rounded up).
    fn crop(&self, w: usize, h: usize) -> Frame {
        let take = |p: &[u16], pw: usize, rw: usize, rh: usize| -> Vec<u16> {
            (0..rh)
                .flat_map(|r| p[r * pw..r * pw + rw].iter().copied())
                .collect()
        };
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        Frame {
            w,
            h,
            cw,
            ch,
            bpc: self.bpc,
            y: take(&self.y, self.w, w, h),
            cb: take(&self.cb, self.cw, cw, ch),
            cr: take(&self.cr, self.cw, cw, ch),
        }
    }

    /// 4:2:0 chroma repeated to 4:4:4.
    fn to_444(&self) -> Frame {
        let up = |p: &[u16]| -> Vec<u16> {
            (0..self.h)
                .flat_map(|r| (0..self.w).map(move |c| p[(r / 2) * self.cw + c / 2]))
                .collect()
        };
        Frame {
            cw: self.w,
            ch: self.h,
            cb: up(&self.cb),
            cr: up(&self.cr),
            ..self.clone()
        }
    }

    /// Every sample shifted up by `by` bits.
    fn raised(&self, by: u32) -> Frame {
        let s = |p: &[u16]| p.iter().map(|v| v << by).collect();
        Frame {
            bpc: self.bpc + by,
            y: s(&self.y),
            cb: s(&self.cb),
            cr: s(&self.cr),
            ..self.clone()
        }
    }
}

/// The first `max` frames of an I420 (8-bit) or I420_10LE (`bpc` 10) reference file.
fn read_i420(name: &str, w: usize, h: usize, bpc: u32, max: usize) -> Vec<Frame> {
    let bytes = std::fs::read(common::reference_dir().join(name)).expect("read reference yuv");
    let bps = if bpc > 8 { 2 } else { 1 };
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
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
        .take(max)
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

/// A smooth pattern with edges and texture (reference) and the same with noise and a
/// brightness change (distorted), 4:2:0 at `bpc` bits.
fn synthetic(w: usize, h: usize, bpc: u32) -> (Frame, Frame) {
    let max = f64::from((1u32 << bpc) - 1);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let mut plane = |pw: usize, ph: usize, t: f64, noise: f64| -> (Vec<u16>, Vec<u16>) {
        let mut r = Vec::with_capacity(pw * ph);
        let mut d = Vec::with_capacity(pw * ph);
        for y in 0..ph {
            for x in 0..pw {
                let (fx, fy) = (x as f64 / pw as f64, y as f64 / ph as f64);
                let mut v = 0.5
                    + 0.3 * (fx * 9.0 + t).sin() * (fy * 5.0 - t).cos()
                    + 0.1 * ((fx + fy) * 40.0).sin();
                if (x / 64 + y / 48) % 5 == 0 {
                    v += 0.15;
                }
                let rv = (v.clamp(0.0, 1.0) * max).round();
                let n = (rng.next() >> 40) as f64 / (1u64 << 24) as f64 - 0.5;
                let dv = (rv * 0.97 + 0.02 * max + n * noise * max).round();
                r.push(rv.clamp(0.0, max) as u16);
                d.push(dv.clamp(0.0, max) as u16);
            }
        }
        (r, d)
    };
    let (ry, dy) = plane(w, h, 0.0, 0.06);
    let (rb, db) = plane(cw, ch, 1.0, 0.03);
    let (rr, dr) = plane(cw, ch, 2.0, 0.03);
    let f = |y, cb, cr| Frame {
        w,
        h,
        cw,
        ch,
        bpc,
        y,
        cb,
        cr,
    };
    (f(ry, rb, rr), f(dy, db, dr))
}

/// Uploads both frames' Cb and Cr as packed `u16` planes.
fn upload_chroma(
    stream: &Arc<CudaStream>,
    (r, d): (&Frame, &Frame),
) -> (Vec<DeviceAlloc<u16>>, ChromaDev) {
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
    (bufs, chroma)
}

/// The three planes' sizes as libvmaf reads them.
fn planes(f: &Frame) -> [(usize, usize); 3] {
    let c = libvmaf_chroma_size((f.w, f.h), (f.cw, f.ch));
    [(f.w, f.h), c, c]
}

/// The CPU's four dB values and the three exact sums.
fn cpu_values(r: &Frame, d: &Frame) -> ([f64; 4], [f64; 3]) {
    let sizes = planes(r);
    let mut score = [0.0; 3];
    let mut exact = [0.0; 3];
    for (p, (a, b)) in [(&r.y, &d.y), (&r.cb, &d.cb), (&r.cr, &d.cr)]
        .into_iter()
        .enumerate()
    {
        let pw = if p == 0 { r.w } else { r.cw };
        let ph = if p == 0 { r.h } else { r.ch };
        let rp = LumaPlane::packed(a, pw, ph, r.bpc).expect("plane");
        let dp = LumaPlane::packed(b, pw, ph, r.bpc).expect("plane");
        let t = Tables::new(p);
        score[p] = cpu::plane(&rp, &dp, sizes[p], &t);
        exact[p] = cpu::plane_sum_f64(&rp, &dp, sizes[p], &t).0;
    }
    (outputs(score), exact)
}

/// Runs one pair on the GPU and reads the words back.
fn run_gpu(
    stream: &Arc<CudaStream>,
    gpu: &mut PsnrHvsGpu,
    (r, d): (&Frame, &Frame),
    layout: Layout,
    out: &mut DeviceAlloc<u64>,
) -> Vec<u64> {
    let (_ry, ry) = upload(stream, &r.y, r.w, r.h, layout);
    let (_dy, dy) = upload(stream, &d.y, r.w, r.h, layout);
    let (_bufs, chroma) = upload_chroma(stream, (r, d));
    gpu.enqueue(stream, ry, dy, Some(&chroma), &mut out.slice_mut(..))
        .expect("psnr_hvs enqueue");
    let words = stream.clone_dtoh(&**out).expect("read back");
    stream.synchronize().expect("synchronize");
    words
}

/// One case: asserts every frame, prints the largest differences.
fn run_case(
    dev: &GpuDevice,
    stream: &Arc<CudaStream>,
    name: &str,
    pairs: &[(Frame, Frame)],
    layout: Layout,
) {
    let first = &pairs[0].0;
    let mut gpu = PsnrHvsGpu::new(dev, stream, planes(first), first.bpc).expect("new");
    let mut out =
        alloc_zeroed::<u64>(stream, PsnrHvsGpu::RESULT_WORDS, "test out").expect("alloc out");
    let mut max_db = [0.0f64; 4];
    let mut max_rel = 0.0f64;
    for (i, (r, d)) in pairs.iter().enumerate() {
        let words = run_gpu(stream, &mut gpu, (r, d), layout, &mut out);
        if i == 0 {
            let again = run_gpu(stream, &mut gpu, (r, d), layout, &mut out);
            assert_eq!(words, again, "{name}: words differ between two runs");
        }
        let (cpu_db, cpu_exact) = cpu_values(r, d);
        let gpu_db = outputs(gpu.scores(&words));
        for p in 0..3 {
            let g = f64::from_bits(words[3 + p]);
            let rel = (g - cpu_exact[p]).abs() / cpu_exact[p].abs().max(1e-300);
            assert!(
                rel <= TOLERANCE_SUM,
                "{name} frame {i} plane {p}: exact sum gpu {g} cpu {}",
                cpu_exact[p]
            );
            max_rel = max_rel.max(rel);
        }
        for k in 0..4 {
            let diff = (gpu_db[k] - cpu_db[k]).abs();
            assert!(
                diff <= TOLERANCE_DB,
                "{name} frame {i}: {} gpu {} cpu {}",
                KEYS[k],
                gpu_db[k],
                cpu_db[k]
            );
            max_db[k] = max_db[k].max(diff);
        }
    }
    println!(
        "{name:<34} {:>2} frames {:<24} exact sums rel {max_rel:.1e}; max|dB diff| y {:.1e} \
         cb {:.1e} cr {:.1e} psnr_hvs {:.1e}",
        pairs.len(),
        format!("{layout:?}"),
        max_db[0],
        max_db[1],
        max_db[2],
        max_db[3]
    );
}

/// Device time per frame of the four launches, frames back to back (planes uploaded once).
fn time_1080p(dev: &GpuDevice, stream: &Arc<CudaStream>, (r, d): (&Frame, &Frame)) {
    const FRAMES: u32 = 500;
    let mut gpu = PsnrHvsGpu::new(dev, stream, planes(r), r.bpc).expect("new");
    let mut out =
        alloc_zeroed::<u64>(stream, PsnrHvsGpu::RESULT_WORDS, "test out").expect("alloc out");
    let (_ry, ry) = upload(stream, &r.y, r.w, r.h, Layout::U8 { pad: 0 });
    let (_dy, dy) = upload(stream, &d.y, r.w, r.h, Layout::U8 { pad: 0 });
    let (_bufs, chroma) = upload_chroma(stream, (r, d));
    let mut frame = |out: &mut DeviceAlloc<u64>| {
        gpu.enqueue(stream, ry, dy, Some(&chroma), &mut out.slice_mut(..))
            .expect("enqueue");
    };
    for _ in 0..20 {
        frame(&mut out);
    }
    stream.synchronize().expect("synchronize");
    let t = std::time::Instant::now();
    for _ in 0..FRAMES {
        frame(&mut out);
    }
    stream.synchronize().expect("synchronize");
    let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(FRAMES);
    println!(
        "timing {}x{} {}-bit 4:2:0, {FRAMES} frames back to back: {us:.1} us/frame ({:.0} fps)",
        r.w,
        r.h,
        r.bpc,
        1e6 / us
    );
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_psnr_hvs_matches_cpu() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    println!("GPU: {}", dev.name());
    let src = |w, h, bpc, tag: &str, frames| -> Vec<(Frame, Frame)> {
        let f = |kind: &str| {
            read_i420(
                &format!("src01_{kind}_{w}x{h}_420p{tag}"),
                w,
                h,
                bpc,
                frames,
            )
        };
        f("ref").into_iter().zip(f("dis")).collect()
    };
    let small = src(160, 90, 8, "8_48f.yuv", 8);
    let p8 = src(576, 324, 8, "8_3f.yuv", 3);
    let p10 = src(576, 324, 10, "10_3f.yuv", 3);
    let map = |v: &[(Frame, Frame)], f: &dyn Fn(&Frame) -> Frame| -> Vec<(Frame, Frame)> {
        v.iter().map(|(r, d)| (f(r), f(d))).collect()
    };
    run_case(
        &dev,
        &stream,
        "src01 160x90 8-bit",
        &small,
        Layout::U8 { pad: 3 },
    );
    run_case(
        &dev,
        &stream,
        "src01 576x324 8-bit",
        &p8,
        Layout::U8 { pad: 0 },
    );
    run_case(
        &dev,
        &stream,
        "src01 576x324 10-bit",
        &p10,
        Layout::U16Packed,
    );
    run_case(
        &dev,
        &stream,
        "src01 576x324 12-bit",
        &map(&p10, &|f| f.raised(2)),
        Layout::U16Pitched { pad: 5 },
    );
    run_case(
        &dev,
        &stream,
        "src01 576x324 8-bit 4:4:4",
        &map(&p8, &|f| f.to_444()),
        Layout::U8 { pad: 0 },
    );
    run_case(
        &dev,
        &stream,
        "src01 575x323 8-bit",
        &map(&p8, &|f| f.crop(575, 323)),
        Layout::U8 { pad: 1 },
    );
    run_case(
        &dev,
        &stream,
        "src01 575x323 10-bit",
        &map(&p10, &|f| f.crop(575, 323)),
        Layout::U16Packed,
    );
    let hd8 = synthetic(1920, 1080, 8);
    let hd12 = synthetic(1920, 1080, 12);
    run_case(
        &dev,
        &stream,
        "synthetic 1920x1080 8-bit",
        std::slice::from_ref(&hd8),
        Layout::U8 { pad: 0 },
    );
    run_case(
        &dev,
        &stream,
        "synthetic 1920x1080 12-bit",
        &[hd12],
        Layout::U16Packed,
    );
    time_1080p(&dev, &stream, (&hd8.0, &hd8.1));
}

/// The element: `backend=cuda` gives the CPU's values (within the tolerance) on the src01
/// pairs, in the messages and the log.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn element_cuda_matches_cpu() {
    if common::gpu_device().is_none() {
        return;
    }
    for p in common::reference_pairs() {
        let score = |backend: &str| {
            let desc = format!(
                "vmafcompare name=cmp backend={backend} features=psnr_hvs ! appsink name=out sync=false {} {}",
                common::raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
                common::raw_branch(&p.distorted, p.width, p.height, p.format, "distorted"),
            );
            let out = common::run(&desc, common::LONG);
            assert!(out.errors.is_empty(), "{backend}: {:?}", out.errors);
            assert_eq!(out.frames.len(), p.frames);
            out
        };
        let (gpu, cpu) = (score("cuda"), score("cpu"));
        assert_eq!(
            gpu.summary.as_ref().map(|s| s.backend.as_str()),
            Some("cuda")
        );
        let mut max = 0.0f64;
        for (g, c) in gpu.frames.iter().zip(&cpu.frames) {
            for key in KEYS {
                let (a, b) = (g.get(key).expect("gpu key"), c.get(key).expect("cpu key"));
                assert!((a - b).abs() <= TOLERANCE_DB, "{key}: cuda {a} cpu {b}");
                max = max.max((a - b).abs());
            }
        }
        println!(
            "element src01 {}x{} {}: {} frames, max |cuda - cpu| {max:.1e} dB",
            p.width, p.height, p.format, p.frames
        );
    }
}
