//! Checks the CUDA backend against the CPU backend bit for bit, frame by frame, through the
//! `Backend` API, and measures GPU throughput.
//!
//! ```text
//! gpu_check [data-dir]
//! ```
//! `data-dir` (default `.`, falling back to `../shared/vmaf-reference`) holds Netflix's src01
//! pairs. Cases: the three src01 pairs, the 576x324 pair widened to 12 and 16 bits, the
//! 160x90 pair and an enhanced (contrast-stretched) pair with `enhn_gain_limit = 1.0`, and
//! synthetic 1920x1080 pairs at 8 and 10 bits (upscaled src01 reference frames, shifted a
//! little per frame, distorted by a blur plus noise). For each frame every VIF num/den/scale,
//! the motion SAD score and every ADM value are compared as `f64` bit patterns. Prints a
//! table, then frames per second at 1920x1080 and 3840x2160 (8-bit, VIF + ADM + motion on
//! every frame, steady state, submit/collect as the scorer does). Exits 1 on any difference,
//! 2 when no GPU is usable.

use std::process::ExitCode;
use std::time::Instant;

use gstvmafcompare::cuda::GpuDevice;
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::engine::CpuBackend;
use gstvmafcompare::engine::CudaBackend;
use gstvmafcompare::engine::{Backend, PairInput, RawFeatures};
use gstvmafcompare::features::adm::AdmConfig;
use gstvmafcompare::features::vif::VifConfig;

struct Case {
    name: String,
    width: usize,
    height: usize,
    bpc: u32,
    gain_limit: f64,
    frames: Vec<(Vec<u16>, Vec<u16>)>,
}

/// Luma planes of every frame of a raw I420 (8-bit) or I420_10LE file.
fn read_luma(path: &str, w: usize, h: usize, bpc: u32) -> Result<Vec<Vec<u16>>, String> {
    let data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let bps = if bpc > 8 { 2 } else { 1 };
    let frame = (w * h + 2 * w.div_ceil(2) * h.div_ceil(2)) * bps;
    Ok(data
        .chunks_exact(frame)
        .map(|f| {
            let y = &f[..w * h * bps];
            if bps == 1 {
                y.iter().map(|&b| u16::from(b)).collect()
            } else {
                y.chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect()
            }
        })
        .collect())
}

fn src01(
    dir: &str,
    size: &str,
    fmt: &str,
    n: usize,
    w: usize,
    h: usize,
    bpc: u32,
) -> Result<Case, String> {
    let r = read_luma(&format!("{dir}/src01_ref_{size}_{fmt}_{n}f.yuv"), w, h, bpc)?;
    let d = read_luma(&format!("{dir}/src01_dis_{size}_{fmt}_{n}f.yuv"), w, h, bpc)?;
    Ok(Case {
        name: format!("src01 {size} {fmt}"),
        width: w,
        height: h,
        bpc,
        gain_limit: 100.0,
        frames: r.into_iter().zip(d).collect(),
    })
}

/// Deterministic noise in `-amp..=amp`.
struct Lcg(u32);
impl Lcg {
    fn next(&mut self, amp: i32) -> i32 {
        self.0 = self.0.wrapping_mul(1664525).wrapping_add(1013904223);
        ((self.0 >> 8) % (2 * amp as u32 + 1)) as i32 - amp
    }
}

/// Bilinear upscale of `src` (sw x sh) to w x h, shifted by `dx` output pixels.
fn upscale(src: &[u16], sw: usize, sh: usize, w: usize, h: usize, dx: f64) -> Vec<u16> {
    let mut out = vec![0u16; w * h];
    for y in 0..h {
        let fy = ((y as f64 + 0.5) * sh as f64 / h as f64 - 0.5).clamp(0.0, (sh - 1) as f64);
        let y0 = fy.floor() as usize;
        let y1 = (y0 + 1).min(sh - 1);
        let ty = fy - y0 as f64;
        for x in 0..w {
            let fx =
                ((x as f64 + 0.5 + dx) * sw as f64 / w as f64 - 0.5).clamp(0.0, (sw - 1) as f64);
            let x0 = fx.floor() as usize;
            let x1 = (x0 + 1).min(sw - 1);
            let tx = fx - x0 as f64;
            let a = src[y0 * sw + x0] as f64 * (1.0 - tx) + src[y0 * sw + x1] as f64 * tx;
            let b = src[y1 * sw + x0] as f64 * (1.0 - tx) + src[y1 * sw + x1] as f64 * tx;
            out[y * w + x] = (a * (1.0 - ty) + b * ty).round() as u16;
        }
    }
    out
}

/// 3x3 box blur plus noise, clipped to `bpc` bits.
fn distort(src: &[u16], w: usize, h: usize, bpc: u32, rng: &mut Lcg) -> Vec<u16> {
    let max = (1i32 << bpc) - 1;
    let amp = 1 << (bpc - 6);
    let mut out = vec![0u16; w * h];
    for y in 0..h {
        for x in 0..w {
            let mut s = 0i32;
            for dy in -1i32..=1 {
                for dx in -1i32..=1 {
                    let yy = (y as i32 + dy).clamp(0, h as i32 - 1) as usize;
                    let xx = (x as i32 + dx).clamp(0, w as i32 - 1) as usize;
                    s += i32::from(src[yy * w + xx]);
                }
            }
            out[y * w + x] = (s / 9 + rng.next(amp)).clamp(0, max) as u16;
        }
    }
    out
}

fn synthetic(src: &Case, w: usize, h: usize, frames: usize, name: &str) -> Case {
    let mut rng = Lcg(7);
    let frames = (0..frames)
        .map(|i| {
            let f = &src.frames[i % src.frames.len()].0;
            let r = upscale(f, src.width, src.height, w, h, i as f64 * 1.5);
            let d = distort(&r, w, h, src.bpc, &mut rng);
            (r, d)
        })
        .collect();
    Case {
        name: name.to_owned(),
        width: w,
        height: h,
        bpc: src.bpc,
        gain_limit: 100.0,
        frames,
    }
}

fn widen(src: &Case, bpc: u32) -> Case {
    let sh = bpc - src.bpc;
    let mut rng = Lcg(11);
    let max = (1i32 << bpc) - 1;
    let wide = |p: &Vec<u16>, rng: &mut Lcg| -> Vec<u16> {
        p.iter()
            .map(|&v| ((i32::from(v) << sh) + rng.next((1 << sh) - 1).abs()).clamp(0, max) as u16)
            .collect()
    };
    Case {
        name: format!("{} -> {bpc}-bit", src.name),
        width: src.width,
        height: src.height,
        bpc,
        gain_limit: src.gain_limit,
        frames: src
            .frames
            .iter()
            .map(|(r, d)| (wide(r, &mut rng), wide(d, &mut rng)))
            .collect(),
    }
}

fn enhanced(src: &Case) -> Case {
    let max = (1i32 << src.bpc) - 1;
    let mid = 1i32 << (src.bpc - 1);
    Case {
        name: format!("{} enhanced, egl 1.0", src.name),
        width: src.width,
        height: src.height,
        bpc: src.bpc,
        gain_limit: 1.0,
        frames: src
            .frames
            .iter()
            .take(8)
            .map(|(r, _)| {
                let e = r
                    .iter()
                    .map(|&x| ((i32::from(x) - mid) * 3 / 2 + mid).clamp(0, max) as u16)
                    .collect();
                (r.clone(), e)
            })
            .collect(),
    }
}

/// Every compared value of one frame (the layout's: ADM, motion SAD, VIF), as f64.
fn values(r: &RawFeatures) -> Vec<f64> {
    r.values().to_vec()
}

/// Runs `frames` through `b` the way the scorer does (up to max_in_flight in flight).
fn run_backend(b: &mut dyn Backend, case: &Case) -> Result<Vec<RawFeatures>, String> {
    let mut out = Vec::new();
    let mut pending = 0usize;
    for (r, d) in &case.frames {
        let rp = LumaPlane::packed(r, case.width, case.height, case.bpc).ok_or("plane")?;
        let dp = LumaPlane::packed(d, case.width, case.height, case.bpc).ok_or("plane")?;
        b.submit(&rp, &dp, true).map_err(|e| e.to_string())?;
        pending += 1;
        while pending > b.max_in_flight() - 1 {
            match b.collect(true).map_err(|e| e.to_string())? {
                Some(f) => out.push(f),
                None => return Err("frame lost".into()),
            }
            pending -= 1;
        }
    }
    while pending > 0 {
        match b.collect(true).map_err(|e| e.to_string())? {
            Some(f) => out.push(f),
            None => return Err("frame lost".into()),
        }
        pending -= 1;
    }
    Ok(out)
}

fn compare(dev: &GpuDevice, case: &Case) -> Result<(usize, usize, String), String> {
    let vif = VifConfig {
        enhn_gain_limit: case.gain_limit,
    };
    let adm = AdmConfig {
        enhn_gain_limit: case.gain_limit,
        ..AdmConfig::default()
    };
    let mut cpu =
        CpuBackend::vmaf(case.width, case.height, case.bpc, vif, adm).map_err(|e| e.to_string())?;
    let mut gpu = CudaBackend::vmaf(dev, case.width, case.height, case.bpc, vif, adm)
        .map_err(|e| e.to_string())?;
    let a = run_backend(&mut cpu, case)?;
    let b = run_backend(&mut gpu, case)?;
    let names = cpu.layout().names().to_vec();
    let (mut n, mut diffs) = (0, 0);
    let mut first = String::new();
    for (fi, (x, y)) in a.iter().zip(&b).enumerate() {
        for (k, (p, q)) in values(x).iter().zip(values(y)).enumerate() {
            n += 1;
            if p.to_bits() != q.to_bits() {
                diffs += 1;
                if first.is_empty() {
                    first = format!("frame {fi} {}: cpu {p:e} gpu {q:e}", names[k]);
                }
            }
        }
    }
    if a.len() != b.len() {
        diffs += 1;
        first = format!("frame count cpu {} gpu {}", a.len(), b.len());
    }
    Ok((n, diffs, first))
}

/// Frames per second of the GPU backend at w x h, 8-bit, steady state.
fn bench(dev: &GpuDevice, w: usize, h: usize, frames: usize) -> Result<f64, String> {
    let mut rng = Lcg(3);
    let planes: Vec<(Vec<u16>, Vec<u16>)> = (0..4)
        .map(|i| {
            let r: Vec<u16> = (0..w * h)
                .map(|p| {
                    let (x, y) = (p % w, p / w);
                    (((x + 3 * i) / 7 + y / 5 + (x * y) % 13) % 256) as u16
                })
                .collect();
            let d = r
                .iter()
                .map(|&v| (i32::from(v) + rng.next(3)).clamp(0, 255) as u16)
                .collect();
            (r, d)
        })
        .collect();
    let mut b = CudaBackend::vmaf(dev, w, h, 8, VifConfig::default(), AdmConfig::default())
        .map_err(|e| e.to_string())?;
    let mut pending = 0usize;
    let step = |b: &mut CudaBackend, i: usize, pending: &mut usize| -> Result<(), String> {
        let (r, d) = &planes[i % planes.len()];
        let rp = LumaPlane::packed(r, w, h, 8).ok_or("plane")?;
        let dp = LumaPlane::packed(d, w, h, 8).ok_or("plane")?;
        b.submit(&rp, &dp, true).map_err(|e| e.to_string())?;
        *pending += 1;
        while *pending > b.max_in_flight() - 1 {
            b.collect(true)
                .map_err(|e| e.to_string())?
                .ok_or("frame lost")?;
            *pending -= 1;
        }
        Ok(())
    };
    for i in 0..10 {
        step(&mut b, i, &mut pending)?;
    }
    let t = Instant::now();
    for i in 0..frames {
        step(&mut b, i, &mut pending)?;
    }
    while pending > 0 {
        b.collect(true)
            .map_err(|e| e.to_string())?
            .ok_or("frame lost")?;
        pending -= 1;
    }
    Ok(frames as f64 / t.elapsed().as_secs_f64())
}

fn main() -> ExitCode {
    let mut dir = std::env::args().nth(1).unwrap_or_else(|| ".".to_owned());
    if !std::path::Path::new(&format!("{dir}/src01_ref_160x90_420p8_48f.yuv")).exists() {
        dir = "../shared/vmaf-reference".to_owned();
    }
    let dev = match GpuDevice::open(0) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("no usable GPU: {e}");
            return ExitCode::from(2);
        }
    };
    println!("device: {}", dev.name());
    let mut cases = Vec::new();
    for (size, fmt, n, w, h, bpc) in [
        ("160x90", "420p8", 48, 160, 90, 8),
        ("576x324", "420p10", 3, 576, 324, 10),
        ("576x324", "420p8", 3, 576, 324, 8),
    ] {
        match src01(&dir, size, fmt, n, w, h, bpc) {
            Ok(c) => cases.push(c),
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(1);
            }
        }
    }
    let egl = Case {
        name: format!("{}, egl 1.0", cases[0].name),
        gain_limit: 1.0,
        frames: cases[0].frames.clone(),
        ..cases[0]
    };
    let enh = enhanced(&cases[0]);
    let w12 = widen(&cases[1], 12);
    let w16 = widen(&cases[1], 16);
    let s8 = synthetic(&cases[2], 1920, 1080, 6, "synthetic 1920x1080 8-bit");
    let s10 = synthetic(&cases[1], 1920, 1080, 4, "synthetic 1920x1080 10-bit");
    cases.extend([egl, enh, w12, w16, s8, s10]);

    let free_before = dev.mem_get_info().map(|m| m.0).unwrap_or(0);
    println!();
    println!("| pair | frames | features compared | bit differences | first difference |");
    println!("| --- | ---: | ---: | ---: | --- |");
    let mut failed = false;
    for c in &cases {
        match compare(&dev, c) {
            Ok((n, d, first)) => {
                println!(
                    "| {} | {} | {n} | {d} | {} |",
                    c.name,
                    c.frames.len(),
                    if first.is_empty() { "-" } else { &first }
                );
                failed |= d > 0;
            }
            Err(e) => {
                println!("| {} | {} | - | error | {e} |", c.name, c.frames.len());
                failed = true;
            }
        }
    }
    // Leak check: backends made and dropped.
    for _ in 0..20 {
        if let Err(e) = CudaBackend::vmaf(
            &dev,
            1920,
            1080,
            10,
            VifConfig::default(),
            AdmConfig::default(),
        ) {
            println!("backend creation failed: {e}");
            failed = true;
        }
    }
    let free_after = dev.mem_get_info().map(|m| m.0).unwrap_or(0);
    println!();
    println!(
        "device memory free before/after the checks and 20 more backends: {} / {} MiB",
        free_before >> 20,
        free_after >> 20
    );
    let bench_frames = std::env::var("GPU_CHECK_BENCH_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300usize);
    if bench_frames > 0 {
        for (w, h, n) in [(1920, 1080, bench_frames), (3840, 2160, bench_frames / 3)] {
            match bench(&dev, w, h, n) {
                Ok(fps) => println!("GPU fps {w}x{h} 8-bit (VIF+ADM+motion, {n} frames): {fps:.1}"),
                Err(e) => {
                    println!("bench {w}x{h} failed: {e}");
                    failed = true;
                }
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
