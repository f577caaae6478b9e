//! SpEED temporal's CUDA half against its CPU half (itself checked against libvmaf in
//! tests/speed_temporal.rs), frame by frame through the registry's `speed_temporal`
//! instance: Netflix's src01 pairs (real content, 3 frames at 8 and 10 bits) at their size,
//! an odd 575x323 crop (pitched rows with garbage padding) and a nearest upscale to
//! 1920x1080, with the default options, `speed_use_ref_diff`, a bilinear prescale of 0.5
//! and a kernel scale of 1.5. 8-bit planes go up as bytes, 10-bit as `u16` (packed and
//! pitched). Each value within 1e-5 of the CPU's (the kernels round every operation as the
//! CPU does; CUDA's double `log2` may differ from glibc's by an ulp), the first frame of a
//! run 0 (written over an earlier frame's words), and the same words when a frame is run
//! twice. Prints the largest GPU - CPU difference. Skipped where no GPU is usable.
//!
//! Run: `cargo test --release --test gpu_speed_temporal -- --nocapture`.

mod common;

use std::sync::Arc;

use common::device::{upload, Layout, Upload};
use cudarc::driver::CudaStream;
use gstvmafcompare::cuda::{DevPlane, GpuDevice};
use gstvmafcompare::features::{self, DevFrame, Geometry, HostFrame, OptionValue, Options};
use gstvmafcompare::video::frame::LumaPlane;

const TOLERANCE: f64 = 1e-5;

/// A clip's luma frames: (reference, distorted) per frame, `w` x `h` at `bpc` bits.
struct Lumas {
    w: usize,
    h: usize,
    bpc: u32,
    frames: Vec<(Vec<u16>, Vec<u16>)>,
}

/// The lumas of the 3 frames of a src01 576x324 pair.
fn src01(bpc: u32) -> Lumas {
    let tag = if bpc == 8 { "420p8" } else { "420p10" };
    let read = |which: &str| -> Vec<Vec<u16>> {
        let path = common::reference_dir().join(format!("src01_{which}_576x324_{tag}_3f.yuv"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let bps = if bpc > 8 { 2 } else { 1 };
        let frame = (576 * 324 + 2 * 288 * 162) * bps;
        bytes
            .chunks_exact(frame)
            .map(|f| {
                let y = &f[..576 * 324 * bps];
                if bps == 2 {
                    y.chunks_exact(2)
                        .map(|p| u16::from_le_bytes([p[0], p[1]]))
                        .collect()
                } else {
                    y.iter().map(|&x| u16::from(x)).collect()
                }
            })
            .collect()
    };
    Lumas {
        w: 576,
        h: 324,
        bpc,
        frames: read("ref").into_iter().zip(read("dis")).collect(),
    }
}

impl Lumas {
    /// The top-left `w` x `h` of every frame.
    fn crop(&self, w: usize, h: usize) -> Lumas {
        let c = |p: &[u16]| -> Vec<u16> {
            p.chunks_exact(self.w)
                .take(h)
                .flat_map(|row| row[..w].to_vec())
                .collect()
        };
        Lumas {
            w,
            h,
            bpc: self.bpc,
            frames: self.frames.iter().map(|(r, d)| (c(r), c(d))).collect(),
        }
    }

    /// Every frame upscaled to `w` x `h` by the nearest sample.
    fn upscale(&self, w: usize, h: usize) -> Lumas {
        let u = |p: &[u16]| -> Vec<u16> {
            (0..h)
                .flat_map(|y| {
                    let sy = y * self.h / h;
                    (0..w).map(move |x| p[sy * self.w + x * self.w / w])
                })
                .collect()
        };
        Lumas {
            w,
            h,
            bpc: self.bpc,
            frames: self.frames.iter().map(|(r, d)| (u(r), u(d))).collect(),
        }
    }
}

/// Largest |gpu - cpu| over the frames of `clip` with `options`, each frame's planes in
/// `layout`.
fn run_case(
    dev: &GpuDevice,
    stream: &Arc<CudaStream>,
    label: &str,
    clip: &Lumas,
    options: &Options,
    layout: Layout,
) -> f64 {
    let inst = features::find("speed_temporal")
        .expect("registered")
        .configure(options, false)
        .expect("configure");
    let g = Geometry::luma(clip.w, clip.h, clip.bpc);
    let mut cpu = inst.cpu(&g).expect("cpu half");
    let mut gpu = inst.cuda(dev, stream, &g).expect("cuda half");
    let mut out = stream
        .alloc_zeros::<u64>(gpu.result_words())
        .expect("alloc out");
    let up: Vec<((Upload, DevPlane), (Upload, DevPlane))> = clip
        .frames
        .iter()
        .map(|(r, d)| {
            (
                upload(stream, r, clip.w, clip.h, layout),
                upload(stream, d, clip.w, clip.h, layout),
            )
        })
        .collect();
    fn packed(p: &[u16], w: usize, h: usize, bpc: u32) -> LumaPlane<'_> {
        LumaPlane::packed(p, w, h, bpc).expect("plane")
    }
    let plane = |p| packed(p, clip.w, clip.h, clip.bpc);
    let mut max = 0f64;
    // The frames in order, then the first again (a new run: 0 over the last frame's words).
    let order: Vec<(usize, bool)> = (0..clip.frames.len())
        .map(|i| (i, i > 0))
        .chain([(0, false)])
        .collect();
    for (i, has_previous) in order {
        let (r, d) = (plane(&clip.frames[i].0), plane(&clip.frames[i].1));
        let prev =
            has_previous.then(|| (plane(&clip.frames[i - 1].0), plane(&clip.frames[i - 1].1)));
        let mut want = [0.0];
        cpu.extract(
            &HostFrame {
                reference: &r,
                distorted: &d,
                previous: prev.as_ref().map(|p| &p.0),
                previous2: None,
                previous_distorted: prev.as_ref().map(|p| &p.1),
                chroma: None,
            },
            &mut want,
        )
        .expect("cpu extract");
        let frame = DevFrame {
            reference: up[i].0 .1,
            distorted: up[i].1 .1,
            previous: has_previous.then(|| up[i - 1].0 .1),
            previous_distorted: has_previous.then(|| up[i - 1].1 .1),
            chroma: None,
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
        let mut got = [0.0];
        gpu.read(&runs[0], false, &mut got);
        if !has_previous {
            assert_eq!(got[0], 0.0, "{label} frame {i}: first of a run");
        } else {
            assert!(want[0] > 0.0, "{label} frame {i}: a real difference");
        }
        let e = (got[0] - want[0]).abs();
        max = max.max(e);
        assert!(
            e <= TOLERANCE,
            "{label} frame {i}: gpu {} cpu {}",
            got[0],
            want[0]
        );
    }
    max
}

#[test]
fn gpu_matches_cpu() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    let option_sets: Vec<(&str, Options)> = {
        let set = |pairs: &[(&str, OptionValue)]| {
            let mut o = Options::new();
            for (k, v) in pairs {
                o.set(k, v.clone());
            }
            o
        };
        vec![
            ("default", Options::new()),
            (
                "use_ref_diff",
                set(&[("speed_use_ref_diff", OptionValue::Bool(true))]),
            ),
            (
                "prescale 0.5 bilinear",
                set(&[
                    ("speed_prescale", OptionValue::Number(0.5)),
                    (
                        "speed_prescale_method",
                        OptionValue::Text("bilinear".into()),
                    ),
                ]),
            ),
            (
                "kernelscale 1.5",
                set(&[("speed_kernelscale", OptionValue::Number(1.5))]),
            ),
        ]
    };
    let mut table = vec!["| content | options | max abs gpu - cpu |".to_owned()];
    table.push("|---|---|---|".to_owned());
    let mut largest = 0f64;
    for bpc in [8, 10] {
        let s = src01(bpc);
        let layouts = if bpc == 8 {
            [Layout::U8 { pad: 0 }, Layout::U8 { pad: 13 }]
        } else {
            [Layout::U16Packed, Layout::U16Pitched { pad: 7 }]
        };
        let clips = [
            (
                format!("src01 576x324 {bpc}-bit"),
                s.crop(576, 324),
                layouts[0],
            ),
            (
                format!("src01 575x323 {bpc}-bit"),
                s.crop(575, 323),
                layouts[1],
            ),
            (
                format!("src01 upscaled 1920x1080 {bpc}-bit"),
                s.upscale(1920, 1080),
                layouts[0],
            ),
        ];
        for (name, clip, layout) in &clips {
            for (opt_name, options) in &option_sets {
                let label = format!("{name} {opt_name} ({layout:?})");
                let m = run_case(&dev, &stream, &label, clip, options, *layout);
                largest = largest.max(m);
                table.push(format!("| {name} | {opt_name} | {m:.2e} |"));
            }
        }
    }
    eprintln!("\n{}\n", table.join("\n"));
    eprintln!("speed_temporal: largest |gpu - cpu| over every case = {largest:.3e}");
}

/// The CUDA half refuses a previous reference without the previous distorted plane (what a
/// ladder would give), instead of scoring a wrong difference.
#[test]
fn refuses_a_frame_without_the_previous_distorted() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    let s = src01(8);
    let inst = features::find("speed_temporal")
        .expect("registered")
        .configure(&Options::new(), false)
        .expect("configure");
    let g = Geometry::luma(s.w, s.h, 8);
    let mut gpu = inst.cuda(&dev, &stream, &g).expect("cuda half");
    let mut out = stream.alloc_zeros::<u64>(gpu.result_words()).expect("out");
    let (_keep, p) = upload(&stream, &s.frames[0].0, s.w, s.h, Layout::U8 { pad: 0 });
    let frame = DevFrame {
        reference: p,
        distorted: p,
        previous: Some(p),
        previous_distorted: None,
        chroma: None,
    };
    assert!(gpu
        .enqueue(&stream, &frame, &mut out.as_view_mut())
        .is_err());
}

/// Through the element: `backend=cuda` (whose pair backend keeps the previous frame's
/// distorted plane in its slot) against `backend=cpu`, frame by frame on the src01 pairs
/// (8 and 10 bits), within 1e-5; the first frame 0 on both.
#[test]
fn element_cuda_matches_cpu() {
    if common::gpu_device().is_none() {
        return;
    }
    common::init();
    for p in common::reference_pairs()
        .into_iter()
        .filter(|p| p.width == 576)
    {
        let values = |backend: &str| -> Vec<f64> {
            let desc = format!(
                "vmafcompare name=cmp backend={backend} features=speed_temporal ! fakesink {} {}",
                common::raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
                common::raw_branch(&p.distorted, p.width, p.height, p.format, "distorted"),
            );
            let out = common::run(&desc, common::LONG);
            assert!(out.errors.is_empty(), "{backend}: {:?}", out.errors);
            assert_eq!(out.frames.len(), p.frames);
            out.frames
                .iter()
                .map(|f| f.get("speed_temporal").expect("speed_temporal"))
                .collect()
        };
        let (gpu, cpu) = (values("cuda"), values("cpu"));
        assert_eq!(gpu[0], 0.0);
        let mut max = 0f64;
        for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
            let e = (g - c).abs();
            max = max.max(e);
            assert!(e <= TOLERANCE, "{} frame {i}: gpu {g} cpu {c}", p.format);
        }
        eprintln!(
            "element src01 576x324 {}: max |gpu - cpu| speed_temporal = {max:.3e}",
            p.format
        );
    }
}
