//! The GPU half of `float_adm` (`FloatAdmGpu`) against the CPU half, frame by frame: every
//! output (`adm2`, `aim`, `adm3`, `adm_scale0..3`) within 1e-5 (the GPU sums rows as trees
//! and adds the masking centre in `f32`; expected differences are a few 1e-7), the same words
//! when a frame is run twice. Cases: Netflix's src01 pairs (576x324 8- and 10-bit, 160x90),
//! a synthetic 1920x1080 10-bit pair and an odd 575x323 8-bit one, over the input layouts
//! the backend passes (1-byte planes, packed and pitched 16-bit planes), and option sets
//! (gain limit 1, Barten's CSF, p-norm 2.5 with bypassed masking, skipped scale 0 with the
//! harmonic `adm3`); and through the element, `backend=cuda` against `backend=cpu`. Skipped
//! (with a printed reason) where no GPU is usable.
//!
//! Run: `cargo test --release --test gpu_float_adm -- --nocapture` (prints the largest
//! difference per key).

mod common;

use common::device::{upload, Layout};

use std::sync::Arc;

use cudarc::driver::CudaStream;
use gstvmafcompare::cuda::memory::alloc_zeroed;
use gstvmafcompare::cuda::GpuDevice;
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::features::float_adm::cpu::FloatAdm;
use gstvmafcompare::features::float_adm::cuda::FloatAdmGpu;
use gstvmafcompare::features::float_adm::FloatAdmConfig;

const TOLERANCE: f64 = 1e-5;
const KEYS: [&str; 7] = [
    "adm2",
    "aim",
    "adm3",
    "adm_scale0",
    "adm_scale1",
    "adm_scale2",
    "adm_scale3",
];

/// A case: luma frames (reference, distorted) of `w` x `h` at `bpc` bits.
struct Case {
    name: String,
    w: usize,
    h: usize,
    bpc: u32,
    frames: Vec<(Vec<u16>, Vec<u16>)>,
}

/// The lumas of the first `max` frames of a 4:2:0 reference pair file.
fn read_lumas(name: &str, w: usize, h: usize, bpc: u32, max: usize) -> Vec<Vec<u16>> {
    let bytes = std::fs::read(common::reference_dir().join(name)).expect("read reference yuv");
    let bps = if bpc > 8 { 2 } else { 1 };
    let frame = (w * h + 2 * w.div_ceil(2) * h.div_ceil(2)) * bps;
    bytes
        .chunks_exact(frame)
        .take(max)
        .map(|f| {
            let y = &f[..w * h * bps];
            if bps == 2 {
                y.chunks_exact(2)
                    .map(|p| u16::from_le_bytes([p[0], p[1]]))
                    .collect()
            } else {
                y.iter().map(|&x| u16::from(x)).collect()
            }
        })
        .collect()
}

fn src01(w: usize, h: usize, tag: &str, n: usize, bpc: u32, max: usize) -> Case {
    let r = read_lumas(&format!("src01_ref_{w}x{h}_{tag}_{n}f.yuv"), w, h, bpc, max);
    let d = read_lumas(&format!("src01_dis_{w}x{h}_{tag}_{n}f.yuv"), w, h, bpc, max);
    Case {
        name: format!("src01 {w}x{h} {tag}"),
        w,
        h,
        bpc,
        frames: r.into_iter().zip(d).collect(),
    }
}

/// A smooth pattern with edges and its noisy, dimmed copy (xorshift noise).
fn synthetic(w: usize, h: usize, bpc: u32) -> Case {
    let max = f64::from((1u32 << bpc) - 1);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f64 / (1u64 << 24) as f64 - 0.5
    };
    let mut r = Vec::with_capacity(w * h);
    let mut d = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f64 / w as f64, y as f64 / h as f64);
            let mut v =
                0.5 + 0.3 * (fx * 9.0).sin() * (fy * 5.0).cos() + 0.1 * ((fx + fy) * 40.0).sin();
            if (x / 64 + y / 48) % 5 == 0 {
                v += 0.15;
            }
            let rv = (v.clamp(0.0, 1.0) * max).round();
            let dv = (rv * 0.97 + 0.02 * max + noise() * 0.06 * max).round();
            r.push(rv.clamp(0.0, max) as u16);
            d.push(dv.clamp(0.0, max) as u16);
        }
    }
    Case {
        name: format!("synthetic {w}x{h} {bpc}-bit"),
        w,
        h,
        bpc,
        frames: vec![(r, d)],
    }
}

/// GPU words of one frame pair.
fn run_gpu(
    stream: &Arc<CudaStream>,
    gpu: &mut FloatAdmGpu,
    c: &Case,
    (r, d): (&[u16], &[u16]),
    layout: Layout,
) -> Vec<u64> {
    let (_ru, rp) = upload(stream, r, c.w, c.h, layout);
    let (_du, dp) = upload(stream, d, c.w, c.h, layout);
    let mut out = alloc_zeroed::<u64>(stream, FloatAdmGpu::RESULT_WORDS, "test out").expect("out");
    gpu.enqueue(
        stream,
        rp,
        dp,
        &mut out.slice_mut(0..FloatAdmGpu::RESULT_WORDS),
    )
    .expect("enqueue");
    let words = stream.clone_dtoh(&*out).expect("read back");
    stream.synchronize().expect("synchronize");
    words
}

/// Runs a case with `cfg` in `layout`; returns the max |GPU - CPU| per key.
fn run_case(
    dev: &GpuDevice,
    stream: &Arc<CudaStream>,
    c: &Case,
    cfg: &FloatAdmConfig,
    layout: Layout,
) -> [f64; 7] {
    let module = dev.modules().get("float_adm").expect("float_adm module");
    let mut gpu = FloatAdmGpu::new(module, stream, c.w, c.h, c.bpc, cfg).expect("FloatAdmGpu::new");
    let mut cpu = FloatAdm::new(c.w, c.h, c.bpc).expect("FloatAdm::new");
    let mut dmax = [0.0f64; 7];
    for (i, (r, d)) in c.frames.iter().enumerate() {
        let words = run_gpu(stream, &mut gpu, c, (r, d), layout);
        if i == 0 {
            let again = run_gpu(stream, &mut gpu, c, (r, d), layout);
            assert_eq!(words, again, "{}: words differ between two runs", c.name);
        }
        let g = gpu.scores(&words);
        let rp = LumaPlane::packed(r, c.w, c.h, c.bpc).unwrap();
        let dp = LumaPlane::packed(d, c.w, c.h, c.bpc).unwrap();
        let v = cpu.compute(&rp, &dp, cfg).expect("cpu");
        for k in 0..7 {
            let diff = (g[k] - v[k]).abs();
            assert!(
                diff <= TOLERANCE,
                "{} frame {i} {layout:?} {cfg:?}: {} gpu {} cpu {}",
                c.name,
                KEYS[k],
                g[k],
                v[k]
            );
            dmax[k] = dmax[k].max(diff);
        }
    }
    dmax
}

#[test]
fn float_adm_gpu_matches_cpu() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    let cases = [
        src01(576, 324, "420p8", 3, 8, 3),
        src01(576, 324, "420p10", 3, 10, 3),
        src01(160, 90, "420p8", 48, 8, 8),
        synthetic(1920, 1080, 10),
        synthetic(575, 323, 8),
    ];
    let default = FloatAdmConfig::default();
    let options = [
        (
            "egl 1",
            FloatAdmConfig {
                enhn_gain_limit: 1.0,
                ..default
            },
        ),
        (
            "Barten CSF",
            FloatAdmConfig {
                csf_mode: 1,
                ..default
            },
        ),
        (
            "p 2.5, no masking",
            FloatAdmConfig {
                p_norm: 2.5,
                bypass_cm: 1,
                ..default
            },
        ),
        (
            "skip scale 0, harmonic adm3",
            FloatAdmConfig {
                skip_scale0: true,
                adm3_apply_hm: true,
                skip_aim_scale: 1,
                ..default
            },
        ),
    ];
    let mut table = vec![format!(
        "| case | layout | options | {} |",
        KEYS.join(" | ")
    )];
    let mut worst = 0.0f64;
    let mut row = |name: &str, layout: Layout, opts: &str, d: [f64; 7]| {
        worst = d.iter().fold(worst, |a, &b| a.max(b));
        let cells: Vec<String> = d.iter().map(|x| format!("{x:.1e}")).collect();
        table.push(format!(
            "| {name} | {layout:?} | {opts} | {} |",
            cells.join(" | ")
        ));
    };
    for c in &cases {
        let layouts: &[Layout] = if c.bpc == 8 {
            &[Layout::U8 { pad: 3 }, Layout::U16Packed]
        } else {
            &[Layout::U16Packed, Layout::U16Pitched { pad: 5 }]
        };
        for &layout in layouts {
            row(
                &c.name,
                layout,
                "default",
                run_case(&dev, &stream, c, &default, layout),
            );
        }
    }
    let c = &cases[0];
    for (opts, cfg) in &options {
        row(
            &c.name,
            Layout::U8 { pad: 0 },
            opts,
            run_case(&dev, &stream, c, cfg, Layout::U8 { pad: 0 }),
        );
    }
    eprintln!(
        "\n{}\nlargest GPU-CPU difference: {worst:.2e}\n",
        table.join("\n")
    );
}

/// Through the element: `backend=cuda features=float_adm` against `backend=cpu` on src01
/// 576x324 8-bit, every key of every frame within 1e-5 (the registry's CUDA half: its result
/// words and read-back).
#[test]
fn float_adm_element_cuda_matches_cpu() {
    if common::gpu_device().is_none() {
        return;
    }
    let p = &common::reference_pairs()[2];
    let run = |backend: &str| {
        let desc = format!(
            "vmafcompare name=cmp backend={backend} features=float_adm ! fakesink {} {}",
            common::raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
            common::raw_branch(&p.distorted, p.width, p.height, p.format, "distorted"),
        );
        let out = common::run(&desc, common::LONG);
        assert!(out.errors.is_empty(), "{backend}: {:?}", out.errors);
        assert_eq!(out.frames.len(), p.frames, "{backend}");
        out
    };
    let (cpu, gpu) = (run("cpu"), run("cuda"));
    let mut worst = 0.0f64;
    for (c, g) in cpu.frames.iter().zip(&gpu.frames) {
        for key in KEYS {
            let (c, g) = (
                c.get(key).expect("cpu value"),
                g.get(key).expect("cuda value"),
            );
            assert!((c - g).abs() <= TOLERANCE, "{key}: cpu {c} cuda {g}");
            worst = worst.max((c - g).abs());
        }
    }
    eprintln!("element: largest backend=cuda - backend=cpu difference {worst:.2e}");
}
