//! Checks the GPU integer ADM (`crate::cuda::adm::AdmGpu`) against the CPU reference
//! (`crate::features::adm::cpu::Adm`) bit for bit, and times it at 1920x1080.
//!
//! ```text
//! adm_gpu_check <adm.ptx> [data-dir] [--small]
//! ```
//! `data-dir` holds Netflix's src01 pairs (default `/work/shared/vmaf-reference`). For every
//! case (those pairs plus synthetic content at several sizes and bit depths) and every frame,
//! with `enhn_gain_limit` 100, 1.0 and 1.5 (the non-integer path), all ten outputs (adm2, aim, adm3, scale0..3, num, den)
//! are compared as `f64` bit patterns. Prints a table; exits 1 on any mismatch, 2 when no
//! GPU or PTX can be used.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaStream};
use cudarc::nvrtc::Ptx;
use gstvmafcompare::cuda::DevPlane;
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::features::adm::cpu::Adm;
use gstvmafcompare::features::adm::cuda::AdmGpu;
use gstvmafcompare::features::adm::{AdmConfig, AdmScores};

/// One test case: frames of (reference, distorted) luma planes.
struct Case {
    name: String,
    width: usize,
    height: usize,
    bpc: u32,
    frames: Vec<(Vec<u16>, Vec<u16>)>,
}

/// Luma planes of the first `frames` frames of a raw I420 (8-bit) or I420_10LE file.
fn read_luma(
    path: &str,
    w: usize,
    h: usize,
    bpc: u32,
    frames: usize,
) -> Result<Vec<Vec<u16>>, String> {
    let data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let bps = if bpc > 8 { 2 } else { 1 };
    let frame_bytes = (w * h + 2 * w.div_ceil(2) * h.div_ceil(2)) * bps;
    let mut out = Vec::new();
    for f in 0..frames {
        let start = f * frame_bytes;
        let Some(luma) = data.get(start..start + w * h * bps) else {
            return Err(format!("{path}: only {} bytes", data.len()));
        };
        let plane: Vec<u16> = if bps == 2 {
            luma.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        } else {
            luma.iter().map(|&b| b as u16).collect()
        };
        out.push(plane);
    }
    Ok(out)
}

fn pair_case(
    dir: &str,
    name: &str,
    w: usize,
    h: usize,
    bpc: u32,
    frames: usize,
) -> Result<Case, String> {
    let depth = if bpc > 8 { "420p10" } else { "420p8" };
    let r = read_luma(
        &format!("{dir}/src01_ref_{w}x{h}_{depth}_{name}.yuv"),
        w,
        h,
        bpc,
        frames,
    )?;
    let d = read_luma(
        &format!("{dir}/src01_dis_{w}x{h}_{depth}_{name}.yuv"),
        w,
        h,
        bpc,
        frames,
    )?;
    Ok(Case {
        name: format!("src01 {w}x{h} {bpc}-bit"),
        width: w,
        height: h,
        bpc,
        frames: r.into_iter().zip(d).collect(),
    })
}

/// Small deterministic PRNG (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn noise(&mut self, amp: i64) -> i64 {
        (self.next() % (2 * amp as u64 + 1)) as i64 - amp
    }
}

/// Synthetic frames: textured content with noise; sharpened (enhancement); full-range random
/// noise against a different noise; flat reference; saturated extremes.
fn synthetic(w: usize, h: usize, bpc: u32, seed: u64) -> Case {
    let max = (1i64 << bpc) - 1;
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let clamp = |v: i64| v.clamp(0, max) as u16;
    let scale = 1i64 << (bpc - 8);
    let texture: Vec<i64> = (0..w * h)
        .map(|k| {
            let (x, y) = ((k % w) as f64, (k / w) as f64);
            let v = 128.0
                + 60.0 * (x * 0.07).sin() * (y * 0.05).cos()
                + 30.0 * ((x + 2.0 * y) * 0.31).sin()
                + if (x as usize / 7 + y as usize / 5).is_multiple_of(2) {
                    20.0
                } else {
                    -20.0
                };
            (v * scale as f64) as i64
        })
        .collect();
    let mut frames = Vec::new();
    // 0: texture + noise.
    let r: Vec<u16> = texture.iter().map(|&v| clamp(v)).collect();
    let d: Vec<u16> = texture
        .iter()
        .map(|&v| clamp(v + rng.noise(6 * scale)))
        .collect();
    frames.push((r.clone(), d));
    // 1: sharpened (unsharp mask, enhances detail) and slightly offset.
    let at = |x: isize, y: isize| -> i64 {
        let x = x.clamp(0, w as isize - 1) as usize;
        let y = y.clamp(0, h as isize - 1) as usize;
        texture[y * w + x]
    };
    let d: Vec<u16> = (0..w * h)
        .map(|k| {
            let (x, y) = ((k % w) as isize, (k / w) as isize);
            let blur = (at(x - 1, y) + at(x + 1, y) + at(x, y - 1) + at(x, y + 1)) / 4;
            clamp(at(x, y) + (at(x, y) - blur) * 3 / 2 + 2 * scale)
        })
        .collect();
    frames.push((r.clone(), d));
    // 2: full-range noise against full-range noise.
    let r2: Vec<u16> = (0..w * h)
        .map(|_| clamp(rng.noise(max) + max / 2))
        .collect();
    let d2: Vec<u16> = (0..w * h)
        .map(|_| clamp(rng.noise(max) + max / 2))
        .collect();
    frames.push((r2, d2));
    // 3: flat reference, noisy distorted.
    let r3 = vec![clamp(max / 3); w * h];
    let d3: Vec<u16> = (0..w * h)
        .map(|_| clamp(max / 3 + rng.noise(3 * scale)))
        .collect();
    frames.push((r3, d3));
    // 4: saturated checkerboard against its inverse.
    let r4: Vec<u16> = (0..w * h)
        .map(|k| {
            if ((k % w) / 3 + (k / w) / 2).is_multiple_of(2) {
                0
            } else {
                max as u16
            }
        })
        .collect();
    let d4: Vec<u16> = r4.iter().map(|&v| max as u16 - v).collect();
    frames.push((r4, d4));
    // 5: identical.
    frames.push((r.clone(), r));
    Case {
        name: format!("synthetic {w}x{h} {bpc}-bit"),
        width: w,
        height: h,
        bpc,
        frames,
    }
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

/// Runs one case; returns (frames x gains compared, mismatching comparisons).
fn run_case(
    stream: &Arc<CudaStream>,
    module: &Arc<cudarc::driver::CudaModule>,
    case: &Case,
) -> Result<(usize, usize), String> {
    let (w, h, bpc) = (case.width, case.height, case.bpc);
    let mut cpu = Adm::new(w, h, bpc).map_err(|e| e.to_string())?;
    let mut gpu =
        AdmGpu::new(module, stream, w, h, bpc, &AdmConfig::default()).map_err(|e| e.to_string())?;
    let mut d_ref = stream
        .alloc_zeros::<u16>(w * h)
        .map_err(|e| format!("{e:?}"))?;
    let mut d_dis = stream
        .alloc_zeros::<u16>(w * h)
        .map_err(|e| format!("{e:?}"))?;
    let mut d_out = stream
        .alloc_zeros::<u64>(AdmGpu::RESULT_WORDS)
        .map_err(|e| format!("{e:?}"))?;
    let mut words = vec![0u64; AdmGpu::RESULT_WORDS];
    let (mut compared, mut bad) = (0, 0);
    for (f, (r, d)) in case.frames.iter().enumerate() {
        stream
            .memcpy_htod(r, &mut d_ref)
            .map_err(|e| format!("{e:?}"))?;
        stream
            .memcpy_htod(d, &mut d_dis)
            .map_err(|e| format!("{e:?}"))?;
        let pr = LumaPlane::packed(r, w, h, bpc).ok_or("plane")?;
        let pd = LumaPlane::packed(d, w, h, bpc).ok_or("plane")?;
        for gain in [100.0, 1.0, 1.5] {
            let cfg = AdmConfig {
                enhn_gain_limit: gain,
                ..AdmConfig::default()
            };
            let want = cpu.compute(&pr, &pd, &cfg).map_err(|e| e.to_string())?;
            gpu.enqueue(
                stream,
                DevPlane::packed_u16(&d_ref, w, stream),
                DevPlane::packed_u16(&d_dis, w, stream),
                &cfg,
                &mut d_out.as_view_mut(),
            )
            .map_err(|e| e.to_string())?;
            stream
                .memcpy_dtoh(&d_out, &mut words)
                .map_err(|e| format!("{e:?}"))?;
            stream.synchronize().map_err(|e| format!("{e:?}"))?;
            let got = gpu.scores(&words, &cfg);
            compared += 1;
            let diffs: Vec<String> = fields(&want)
                .iter()
                .zip(fields(&got).iter())
                .filter(|(a, b)| a.1.to_bits() != b.1.to_bits())
                .map(|(a, b)| format!("{} cpu {:e} gpu {:e}", a.0, a.1, b.1))
                .collect();
            if !diffs.is_empty() {
                bad += 1;
                if bad <= 4 {
                    println!(
                        "  MISMATCH {} frame {f} gain {gain}: {}",
                        case.name,
                        diffs.join(", ")
                    );
                    println!("    words {words:?}");
                }
            }
        }
    }
    Ok((compared, bad))
}

/// GPU milliseconds per frame (kernels only, planes already on the device).
fn time_1080p(
    stream: &Arc<CudaStream>,
    module: &Arc<cudarc::driver::CudaModule>,
    bpc: u32,
) -> Result<f64, String> {
    let case = synthetic(1920, 1080, bpc, 7);
    let (r, d) = case.frames.first().ok_or("no frame")?;
    let mut gpu = AdmGpu::new(module, stream, 1920, 1080, bpc, &AdmConfig::default())
        .map_err(|e| e.to_string())?;
    let d_ref = stream.clone_htod(r).map_err(|e| format!("{e:?}"))?;
    let d_dis = stream.clone_htod(d).map_err(|e| format!("{e:?}"))?;
    let mut d_out = stream
        .alloc_zeros::<u64>(AdmGpu::RESULT_WORDS)
        .map_err(|e| format!("{e:?}"))?;
    let cfg = AdmConfig::default();
    for _ in 0..10 {
        gpu.enqueue(
            stream,
            DevPlane::packed_u16(&d_ref, 1920, stream),
            DevPlane::packed_u16(&d_dis, 1920, stream),
            &cfg,
            &mut d_out.as_view_mut(),
        )
        .map_err(|e| e.to_string())?;
    }
    stream.synchronize().map_err(|e| format!("{e:?}"))?;
    let n = 200;
    let t = Instant::now();
    for _ in 0..n {
        gpu.enqueue(
            stream,
            DevPlane::packed_u16(&d_ref, 1920, stream),
            DevPlane::packed_u16(&d_dis, 1920, stream),
            &cfg,
            &mut d_out.as_view_mut(),
        )
        .map_err(|e| e.to_string())?;
    }
    stream.synchronize().map_err(|e| format!("{e:?}"))?;
    Ok(t.elapsed().as_secs_f64() * 1e3 / n as f64)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(ptx) = args.get(1) else {
        eprintln!("usage: adm_gpu_check <adm.ptx> [data-dir] [--small]");
        return ExitCode::from(2);
    };
    let dir = args
        .get(2)
        .map(String::as_str)
        .unwrap_or("/work/shared/vmaf-reference");
    // `--small`: frames of at most 100k samples and no timing (for compute-sanitizer).
    let small = args.iter().any(|a| a == "--small");
    // SAFETY: only probes whether libcuda can be loaded.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        eprintln!("libcuda not found: no GPU driver");
        return ExitCode::from(2);
    }
    let setup = || -> Result<_, String> {
        let ctx = CudaContext::new(0).map_err(|e| format!("context: {e:?}"))?;
        let stream = ctx.new_stream().map_err(|e| format!("stream: {e:?}"))?;
        let module = ctx
            .load_module(Ptx::from_file(ptx))
            .map_err(|e| format!("module: {e:?}"))?;
        Ok((ctx, stream, module))
    };
    let (_ctx, stream, module) = match setup() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };

    let mut cases = Vec::new();
    for (name, w, h, bpc, n) in [
        ("48f", 160, 90, 8, 48),
        ("3f", 576, 324, 10, 3),
        ("3f", 576, 324, 8, 3),
    ] {
        match pair_case(dir, name, w, h, bpc, n) {
            Ok(c) => cases.push(c),
            Err(e) => println!("skipping src01 {w}x{h} {bpc}-bit: {e}"),
        }
    }
    let mut seed = 1;
    for (w, h) in [(33, 33), (37, 41), (99, 35), (1920, 1080)] {
        for bpc in [8, 10, 12] {
            cases.push(synthetic(w, h, bpc, seed));
            seed += 1;
        }
    }
    for (w, h, bpc) in [
        (34, 65, 16),
        (35, 33, 9),
        (65, 67, 11),
        (33, 301, 16),
        (301, 33, 8),
        (641, 359, 16),
        (1279, 719, 14),
    ] {
        cases.push(synthetic(w, h, bpc, seed));
        seed += 1;
    }
    if small {
        cases.retain(|c| c.width * c.height <= 100_000);
    }

    println!(
        "{:<32} {:>7} {:>11} {:>10}",
        "case", "frames", "comparisons", "mismatches"
    );
    let mut total_bad = 0;
    for case in &cases {
        match run_case(&stream, &module, case) {
            Ok((n, bad)) => {
                println!(
                    "{:<32} {:>7} {:>11} {:>10}",
                    case.name,
                    case.frames.len(),
                    n,
                    bad
                );
                total_bad += bad;
            }
            Err(e) => {
                println!("{:<32} error: {e}", case.name);
                total_bad += 1;
            }
        }
    }
    for bpc in [8, 10] {
        if small {
            break;
        }
        match time_1080p(&stream, &module, bpc) {
            Ok(ms) => println!("GPU ADM 1920x1080 {bpc}-bit: {ms:.3} ms/frame"),
            Err(e) => println!("timing failed: {e}"),
        }
    }
    if total_bad == 0 {
        println!("all outputs bit-identical");
        ExitCode::SUCCESS
    } else {
        println!("{total_bad} mismatching comparisons");
        ExitCode::from(1)
    }
}
