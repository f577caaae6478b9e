//! The GPU extra metrics (`PsnrGpu`: psnr_y/cb/cr; `SsimGpu`: float_ssim, float_ms_ssim)
//! against the CPU implementations, frame by frame: PSNR bit for bit, SSIM and MS-SSIM within
//! 1e-5 (the GPU sums its filter taps in float FMAs), and the same words when a frame is run
//! twice. Cases: Netflix's src01 pairs (160x90 8-bit, 576x324 8- and 10-bit), a synthetic
//! 1920x1080 10-bit pair and an odd-sized 8-bit one, flat, bar, checkerboard and ramp patterns
//! at 1920x1080 8 and 10 bits (where float tap sums stray furthest), over the input layouts
//! the backend passes (1-byte planes, packed and pitched 16-bit planes, pitched 1-byte
//! planes). Skipped (with a printed reason) where no GPU is usable.
//!
//! Run: `cargo test --release --test gpu_ssim -- --nocapture`.

mod common;

use common::device::{upload, Layout};

use std::sync::Arc;

use cudarc::driver::CudaStream;
use gstvmafcompare::cuda::memory::{alloc_copy, alloc_zeroed, DeviceAlloc};
use gstvmafcompare::cuda::{ChromaDev, CudaError, DevPlane, GpuDevice};
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::features::psnr::cpu as psnr;
use gstvmafcompare::features::psnr::cuda::PsnrGpu;
use gstvmafcompare::features::ssim::cpu::Ssim;
use gstvmafcompare::features::ssim::cuda::SsimGpu;
use gstvmafcompare::features::ssim::{ms_ssim_fits, ms_ssim_too_small};

const TOLERANCE: f64 = 1e-5;

/// One 4:2:0 frame: planes of `u16` samples at `bpc` bits.
struct Frame {
    w: usize,
    h: usize,
    bpc: u32,
    y: Vec<u16>,
    cb: Vec<u16>,
    cr: Vec<u16>,
}

impl Frame {
    fn chroma_size(&self) -> (usize, usize) {
        (self.w.div_ceil(2), self.h.div_ceil(2))
    }
}

/// The first `max` frames of an I420 (8-bit) or I420_10LE (`bpc` 10) file.
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

/// A smooth pattern with edges (reference) and the same with noise and a brightness shift
/// (distorted), `count` pairs.
fn synthetic(w: usize, h: usize, bpc: u32, count: usize) -> Vec<(Frame, Frame)> {
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
    (0..count)
        .map(|i| {
            let t = i as f64 * 0.7;
            let (ry, dy) = plane(w, h, t, 0.06);
            let (rb, db) = plane(cw, ch, t + 1.0, 0.03);
            let (rr, dr) = plane(cw, ch, t + 2.0, 0.03);
            let f = |y, cb, cr| Frame {
                w,
                h,
                bpc,
                y,
                cb,
                cr,
            };
            (f(ry, rb, rr), f(dy, db, dr))
        })
        .collect()
}

/// Content where float sums of the filter taps round differently from libvmaf's double sums
/// the most (measured on the CPU path: up to 3.1e-6): a flat frame against one a step darker
/// with specks, vertical bars against the same one level darker on every third row, a
/// 2x2-pixel checkerboard with grey samples, and a ramp against its banded copy. Neutral
/// chroma; samples scaled to `bpc` bits.
fn patterns(w: usize, h: usize, bpc: u32) -> Vec<(&'static str, Frame, Frame)> {
    let s = 1u16 << (bpc - 8);
    let frame = |y: Vec<u16>| {
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        Frame {
            w,
            h,
            bpc,
            y,
            cb: vec![128 * s; cw * ch],
            cr: vec![128 * s; cw * ch],
        }
    };
    let px = |f: &dyn Fn(usize, usize) -> u16| -> Vec<u16> {
        (0..w * h).map(|i| f(i % w, i / w) * s).collect()
    };
    const BARS: [u16; 7] = [235, 210, 170, 145, 106, 81, 41];
    let bar = move |x: usize| BARS[x * 7 / w];
    vec![
        (
            "flat 235 vs 234 with specks",
            frame(px(&|_, _| 235)),
            frame(px(&|x, y| {
                if (y * w + x).is_multiple_of(997) {
                    231
                } else {
                    234
                }
            })),
        ),
        (
            "bars",
            frame(px(&|x, _| bar(x))),
            frame(px(&|x, y| bar(x) - u16::from(y.is_multiple_of(3)))),
        ),
        (
            "checkerboard",
            frame(px(&|x, y| if (x / 2 + y / 2) % 2 == 0 { 16 } else { 235 })),
            frame(px(&|x, y| {
                if (y * w + x).is_multiple_of(7) {
                    128
                } else if (x / 2 + y / 2) % 2 == 0 {
                    16
                } else {
                    235
                }
            })),
        ),
        (
            "ramp vs banded ramp",
            frame(px(&|x, _| (x * 255 / w) as u16)),
            frame(px(&|x, _| (x * 255 / w) as u16 / 4 * 4)),
        ),
    ]
}

/// Uploads both frames' Cb and Cr as packed `u16` planes; returns the buffers (to keep alive
/// while the kernels read them) and their descriptors.
fn upload_chroma(
    stream: &Arc<CudaStream>,
    (r, d): (&Frame, &Frame),
) -> (Vec<DeviceAlloc<u16>>, ChromaDev) {
    let (width, height) = r.chroma_size();
    let bufs: Vec<DeviceAlloc<u16>> = [&r.cb, &r.cr, &d.cb, &d.cr]
        .iter()
        .map(|p| alloc_copy(stream, &p[..], "test chroma").expect("upload chroma"))
        .collect();
    let cp = |i: usize| DevPlane::packed_u16(&bufs[i], width, stream);
    let chroma = ChromaDev {
        reference: [cp(0), cp(1)],
        distorted: [cp(2), cp(3)],
        width,
        height,
    };
    (bufs, chroma)
}

/// Uploads a frame pair, runs both extractors and reads the words back:
/// `[psnr words.., ssim words..]`.
fn run_gpu(
    stream: &Arc<CudaStream>,
    (psnr_gpu, ssim_gpu): (&mut PsnrGpu, &mut SsimGpu),
    (r, d): (&Frame, &Frame),
    layout: Layout,
    out: &mut DeviceAlloc<u64>,
) -> Vec<u64> {
    let (w, h) = (r.w, r.h);
    let (_ry, ry) = upload(stream, &r.y, w, h, layout);
    let (_dy, dy) = upload(stream, &d.y, w, h, layout);
    let (_chroma_bufs, chroma) = upload_chroma(stream, (r, d));
    let n = PsnrGpu::RESULT_WORDS;
    psnr_gpu
        .enqueue(stream, ry, dy, Some(&chroma), &mut out.slice_mut(0..n))
        .expect("psnr enqueue");
    ssim_gpu
        .enqueue(
            stream,
            ry,
            dy,
            &mut out.slice_mut(n..n + SsimGpu::RESULT_WORDS),
        )
        .expect("ssim enqueue");
    let words = stream.clone_dtoh(&**out).expect("read back");
    stream.synchronize().expect("synchronize");
    words
}

/// A packed CPU plane over `s`.
fn cpu_plane(s: &[u16], w: usize, h: usize, bpc: u32) -> LumaPlane<'_> {
    LumaPlane::packed(s, w, h, bpc).expect("cpu plane")
}

/// The frames of a case as (reference, distorted) pairs.
fn zip(p: &(Vec<Frame>, Vec<Frame>)) -> Vec<(&Frame, &Frame)> {
    p.0.iter().zip(&p.1).collect()
}

/// Runs one case (asserting per frame) and prints its line: the max |GPU - CPU| of psnr
/// y/cb/cr, float_ssim and float_ms_ssim.
fn run_case(
    dev: &GpuDevice,
    stream: &Arc<CudaStream>,
    name: &str,
    pairs: &[(&Frame, &Frame)],
    layout: Layout,
) {
    let Some((first, _)) = pairs.first() else {
        panic!("{name}: no frames");
    };
    let (w, h, bpc) = (first.w, first.h, first.bpc);
    let ms = ms_ssim_fits(w, h);
    if !ms {
        match SsimGpu::new(dev, stream, w, h, bpc, true, true) {
            Err(CudaError::Geometry(e)) => {
                assert_eq!(e.to_string(), ms_ssim_too_small(w, h).to_string())
            }
            Err(e) => panic!("{name}: wrong error for a frame too small for MS-SSIM: {e}"),
            Ok(_) => panic!("{name}: MS-SSIM accepted {w}x{h}"),
        }
    }
    let mut psnr_gpu = PsnrGpu::new(dev, stream, w, h, bpc).expect("PsnrGpu::new");
    let mut ssim_gpu = SsimGpu::new(dev, stream, w, h, bpc, true, ms).expect("SsimGpu::new");
    let mut out = alloc_zeroed::<u64>(
        stream,
        PsnrGpu::RESULT_WORDS + SsimGpu::RESULT_WORDS,
        "test out",
    )
    .expect("alloc out");
    let mut cpu = Ssim::new();
    let mut max_diff = [0.0f64; 5];
    let (cw, ch) = first.chroma_size();
    for (i, &(r, d)) in pairs.iter().enumerate() {
        let words = run_gpu(
            stream,
            (&mut psnr_gpu, &mut ssim_gpu),
            (r, d),
            layout,
            &mut out,
        );
        if i == 0 {
            let again = run_gpu(
                stream,
                (&mut psnr_gpu, &mut ssim_gpu),
                (r, d),
                layout,
                &mut out,
            );
            assert_eq!(words, again, "{name}: words differ between two runs");
        }
        let (pw, sw) = words.split_at(PsnrGpu::RESULT_WORDS);
        let gpu_psnr = psnr_gpu.scores(pw, Some((cw, ch)));
        let (gpu_ssim, gpu_ms) = ssim_gpu.scores(sw);

        let (ry, dy) = (cpu_plane(&r.y, w, h, bpc), cpu_plane(&d.y, w, h, bpc));
        let chroma_psnr = |a: &[u16], b: &[u16]| {
            psnr::chroma_psnr(
                (w, h),
                &cpu_plane(a, cw, ch, bpc),
                &cpu_plane(b, cw, ch, bpc),
            )
        };
        let cpu_psnr = [
            psnr::psnr(&ry, &dy),
            chroma_psnr(&r.cb, &d.cb),
            chroma_psnr(&r.cr, &d.cr),
        ];
        for k in 0..3 {
            assert_eq!(
                gpu_psnr[k].to_bits(),
                cpu_psnr[k].to_bits(),
                "{name} frame {i}: psnr[{k}] gpu {} cpu {}",
                gpu_psnr[k],
                cpu_psnr[k]
            );
            max_diff[k] = max_diff[k].max((gpu_psnr[k] - cpu_psnr[k]).abs());
        }
        let cpu_ssim = cpu.float_ssim(&ry, &dy).expect("cpu float_ssim");
        let ds = (gpu_ssim - cpu_ssim).abs();
        assert!(
            ds <= TOLERANCE,
            "{name} frame {i}: float_ssim gpu {gpu_ssim} cpu {cpu_ssim}"
        );
        max_diff[3] = max_diff[3].max(ds);
        if ms {
            let cpu_ms = cpu.float_ms_ssim(&ry, &dy).expect("cpu float_ms_ssim");
            let dm = (gpu_ms - cpu_ms).abs();
            assert!(
                dm <= TOLERANCE,
                "{name} frame {i}: float_ms_ssim gpu {gpu_ms} cpu {cpu_ms}"
            );
            max_diff[4] = max_diff[4].max(dm);
        } else {
            assert_eq!(gpu_ms, 0.0, "{name}: ms-ssim disabled must read 0");
        }
    }
    let ms_col = if ms {
        format!("{:.3e}", max_diff[4])
    } else {
        "n/a".to_owned()
    };
    let lay = format!("{layout:?}");
    println!(
        "{name:<36} {:>2} frames  {lay:<24}  max|diff| psnr_y {:.1e} psnr_cb {:.1e} \
         psnr_cr {:.1e}  float_ssim {:.3e}  float_ms_ssim {ms_col}",
        pairs.len(),
        max_diff[0],
        max_diff[1],
        max_diff[2],
        max_diff[3],
    );
}

/// Prints the device time per frame of PSNR (with chroma), SSIM + MS-SSIM, and all three,
/// averaged over back-to-back frames (planes uploaded once; informative, not asserted).
fn time_extras(dev: &GpuDevice, stream: &Arc<CudaStream>, (r, d): (&Frame, &Frame)) {
    const FRAMES: u32 = 200;
    let (w, h, bpc) = (r.w, r.h, r.bpc);
    let mut psnr_gpu = PsnrGpu::new(dev, stream, w, h, bpc).expect("PsnrGpu::new");
    let mut ssim_gpu = SsimGpu::new(dev, stream, w, h, bpc, true, true).expect("SsimGpu::new");
    let mut out = alloc_zeroed::<u64>(
        stream,
        PsnrGpu::RESULT_WORDS + SsimGpu::RESULT_WORDS,
        "test out",
    )
    .expect("alloc out");
    let (_ry, ry) = upload(stream, &r.y, w, h, Layout::U16Packed);
    let (_dy, dy) = upload(stream, &d.y, w, h, Layout::U16Packed);
    let (_chroma_bufs, chroma) = upload_chroma(stream, (r, d));
    let n = PsnrGpu::RESULT_WORDS;
    let mut per_frame = |psnr_on: bool, ssim_on: bool| -> f64 {
        let mut frame = |out: &mut DeviceAlloc<u64>| {
            if psnr_on {
                psnr_gpu
                    .enqueue(stream, ry, dy, Some(&chroma), &mut out.slice_mut(0..n))
                    .expect("psnr enqueue");
            }
            if ssim_on {
                ssim_gpu
                    .enqueue(
                        stream,
                        ry,
                        dy,
                        &mut out.slice_mut(n..n + SsimGpu::RESULT_WORDS),
                    )
                    .expect("ssim enqueue");
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
    let p = per_frame(true, false);
    let s = per_frame(false, true);
    let both = per_frame(true, true);
    println!(
        "timing {w}x{h} {bpc}-bit, {FRAMES} frames back to back: psnr (Y+Cb+Cr) {p:.1} us/frame, \
         float_ssim + float_ms_ssim {s:.1} us/frame, all {both:.1} us/frame"
    );
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_psnr_ssim_match_cpu() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    println!("GPU: {}", dev.name());

    let src = |w, h, bpc, tag: &str, frames| {
        let f = |kind: &str| {
            read_i420(
                &format!("src01_{kind}_{w}x{h}_420p{tag}"),
                w,
                h,
                bpc,
                frames,
            )
        };
        (f("ref"), f("dis"))
    };

    let small = src(160, 90, 8, "8_48f.yuv", 8);
    run_case(
        &dev,
        &stream,
        "src01 160x90 8-bit",
        &zip(&small),
        Layout::U8 { pad: 0 },
    );

    let mid8 = src(576, 324, 8, "8_3f.yuv", 3);
    run_case(
        &dev,
        &stream,
        "src01 576x324 8-bit",
        &zip(&mid8),
        Layout::U8 { pad: 0 },
    );
    run_case(
        &dev,
        &stream,
        "src01 576x324 8-bit pitched",
        &zip(&mid8),
        Layout::U8 { pad: 61 },
    );
    run_case(
        &dev,
        &stream,
        "src01 576x324 8-bit as u16",
        &zip(&mid8),
        Layout::U16Packed,
    );

    let mid10 = src(576, 324, 10, "10_3f.yuv", 3);
    run_case(
        &dev,
        &stream,
        "src01 576x324 10-bit",
        &zip(&mid10),
        Layout::U16Packed,
    );

    let hd: Vec<(Frame, Frame)> = synthetic(1920, 1080, 10, 2);
    let hd_pairs: Vec<(&Frame, &Frame)> = hd.iter().map(|(a, b)| (a, b)).collect();
    run_case(
        &dev,
        &stream,
        "synthetic 1920x1080 10-bit",
        &hd_pairs,
        Layout::U16Packed,
    );
    run_case(
        &dev,
        &stream,
        "synthetic 1920x1080 10-bit pitched",
        &hd_pairs,
        Layout::U16Pitched { pad: 128 },
    );
    if let Some((r, d)) = hd.first() {
        time_extras(&dev, &stream, (r, d));
    }

    for (bpc, layout) in [(8, Layout::U8 { pad: 0 }), (10, Layout::U16Packed)] {
        for (name, r, d) in patterns(1920, 1080, bpc) {
            run_case(
                &dev,
                &stream,
                &format!("{name} 1920x1080 {bpc}-bit"),
                &[(&r, &d)],
                layout,
            );
        }
    }

    let odd: Vec<(Frame, Frame)> = synthetic(723, 405, 8, 2);
    let odd_pairs: Vec<(&Frame, &Frame)> = odd.iter().map(|(a, b)| (a, b)).collect();
    run_case(
        &dev,
        &stream,
        "synthetic 723x405 8-bit pitched",
        &odd_pairs,
        Layout::U8 { pad: 5 },
    );
}
