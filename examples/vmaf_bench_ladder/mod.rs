//! `vmaf_bench --ladder` (issue 30): one 1920x1080 8-bit reference scored against five
//! renditions (1920x1080, 1280x720, 960x540, 768x432, 640x360, each bicubic-scaled to
//! 1080p by the backend), on the CUDA backend, without GStreamer:
//! - `ladder`: one `CudaBackend::new_ladder` through `Scorer` (the reference placed
//!   once per frame, motion and the reference halves of VIF / ADM once);
//! - `ladder, unshared`: the same with `with_shared_reference(false)` (the reference placed
//!   once and motion once, VIF and ADM per rendition as a pair's): what VIF's and ADM's
//!   `enqueue_ladder` save;
//! - `5 pairs, threads`: five pair backends (`CudaBackend::new_scaled`, one per rendition),
//!   each on a thread of its own through a `Scorer`, all at once, as five elements would run;
//! - `5 pairs, in turn`: the same five pair backends one after the other.
//!
//! Reference fps: reference frames scored per second (each against all five renditions);
//! pairs/s = 5 x that. From device memory (every plane uploaded once before timing and read
//! in place, as GStreamer CUDA memory is) and from host memory (rows copied through the
//! backends' pinned staging). Content: a moving synthetic picture (gradients, waves, a
//! checkered block, noise); the renditions are a noisier copy of it scaled down with the
//! engine's CPU bicubic scaler; six distinct frames, cycled.

use std::sync::{Arc, Barrier};
use std::time::Instant;

use cudarc::driver::DevicePtr;
use gstvmafcompare::cuda::memory::{alloc_copy, DeviceAlloc};
use gstvmafcompare::cuda::GpuDevice;
use gstvmafcompare::engine::scale::cpu::{scale_plane, Scratch};
use gstvmafcompare::engine::scale::{LadderScaling, ScaleMethod, Siting, StreamScaler};
use gstvmafcompare::engine::{
    ChromaInput, ComponentInput, CudaBackend, DeviceComponent, DeviceLuma, FeatureSet, FrameChroma,
    FrameSet, Geometry, HostComponent, HostLuma, LumaInput, LumaPlane, Model, RenditionFrame,
    SampleLayout, ScorePlan, Scorer,
};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const REF: (usize, usize) = (1920, 1080);
const SIZES: [(usize, usize); 5] = [
    (1920, 1080),
    (1280, 720),
    (960, 540),
    (768, 432),
    (640, 360),
];
const DISTINCT: usize = 6;

fn half((w, h): (usize, usize)) -> (usize, usize) {
    (w.div_ceil(2), h.div_ceil(2))
}

const LAYOUT8: SampleLayout = SampleLayout {
    bytes: 1,
    down: 0,
    depth: 8,
    up: 0,
};

/// One 8-bit plane, packed rows, in host memory and on the device.
struct Plane {
    size: (usize, usize),
    host: Vec<u8>,
    /// Its device copy's address (taken once: no per-frame stream bookkeeping).
    ptr: u64,
    _dev: DeviceAlloc<u8>,
}

/// A 4:2:0 frame.
struct Frame {
    y: Plane,
    c: [Plane; 2],
}

/// Where the backends read planes from.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Mem {
    Device,
    Host,
}

impl Frame {
    fn luma(&self, mem: Mem, ctx: usize) -> LumaInput<'_> {
        plane_input(&self.y, mem, ctx)
    }

    fn chroma(&self, mem: Mem, ctx: usize) -> [ComponentInput<'_>; 2] {
        [&self.c[0], &self.c[1]].map(|p| {
            let (w, h) = p.size;
            match mem {
                Mem::Host => ComponentInput::Host(
                    HostComponent::new(&p.host, w, 1, 0, (w, h), LAYOUT8)
                        .expect("component of its own size"),
                ),
                Mem::Device => ComponentInput::Device(DeviceComponent {
                    ptr: p.ptr,
                    pitch: w,
                    pixel_stride: 1,
                    offset: 0,
                    width: w,
                    height: h,
                    layout: LAYOUT8,
                    context: ctx,
                }),
            }
        })
    }
}

fn plane_input(p: &Plane, mem: Mem, ctx: usize) -> LumaInput<'_> {
    let (w, h) = p.size;
    match mem {
        Mem::Host => {
            LumaInput::Host(HostLuma::new(&p.host, w, w, h, LAYOUT8).expect("plane of its size"))
        }
        Mem::Device => LumaInput::Device(DeviceLuma {
            ptr: p.ptr,
            pitch: w,
            width: w,
            height: h,
            layout: LAYOUT8,
            context: ctx,
            hold: Box::new(()),
        }),
    }
}

/// xorshift64*.
fn noise(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// A moving picture at `size`, 8 bits; `amp`: noise amplitude in code values.
fn picture((w, h): (usize, usize), t: usize, amp: u64, seed: u64) -> Vec<u16> {
    let mut s = seed ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f64 / w as f64, y as f64 / h as f64);
            let mut v = 0.15
                + 0.6 * (0.7 * fx + 0.3 * fy)
                + 0.08 * (fx * 37.0 + t as f64 * 0.3).sin() * (fy * 23.0).cos()
                + 0.05 * (fx * 310.0 + fy * 170.0 + t as f64).sin();
            if (0.3..0.45).contains(&fx) && (0.2..0.6).contains(&fy) {
                v = if ((x + 3 * t) / 8 + y / 8).is_multiple_of(2) {
                    0.9
                } else {
                    0.1
                };
            }
            let n = (noise(&mut s) % (2 * amp + 1)) as f64 - amp as f64;
            out.push((v * 255.0 + n).round().clamp(0.0, 255.0) as u16);
        }
    }
    out
}

fn scaler(src: (usize, usize), dst: (usize, usize)) -> Result<Arc<StreamScaler>, BoxError> {
    let siting = Siting {
        h_sub: 1,
        v_sub: 1,
        h_pos: None,
        v_pos: None,
        chroma: true,
    };
    Ok(Arc::new(StreamScaler::new(
        ScaleMethod::Bicubic,
        src,
        dst,
        Some((half(src), half(dst), siting)),
    )?))
}

fn upload(dev: &GpuDevice, samples: &[u16], size: (usize, usize)) -> Result<Plane, BoxError> {
    let host: Vec<u8> = samples.iter().map(|&v| v as u8).collect();
    let stream = dev.context().default_stream();
    let d = alloc_copy(&stream, &host[..], "bench plane")?;
    let ptr = d.device_ptr(&stream).0;
    stream.synchronize()?;
    Ok(Plane {
        size,
        host,
        ptr,
        _dev: d,
    })
}

/// `f` (planes at `from` size) scaled to `to` on the CPU, then put on the device.
fn make_frame(
    dev: &GpuDevice,
    planes: &[Vec<u16>; 3],
    from: (usize, usize),
    to: (usize, usize),
) -> Result<Frame, BoxError> {
    let mut scratch = Scratch::default();
    let (y, c) = if from == to {
        (planes[0].clone(), [planes[1].clone(), planes[2].clone()])
    } else {
        let s = scaler(from, to)?;
        let cs = s.chroma.as_ref().ok_or("no chroma scaler")?;
        let mut run = |p: &[u16], ps, (w, h)| -> Result<Vec<u16>, BoxError> {
            let mut out = Vec::new();
            let src = LumaPlane::packed(p, w, h, 8).ok_or("plane")?;
            if !scale_plane(ps, &src, &mut scratch, &mut out) {
                return Err("CPU scaling refused".into());
            }
            Ok(out)
        };
        (
            run(&planes[0], &s.luma, from)?,
            [
                run(&planes[1], cs, half(from))?,
                run(&planes[2], cs, half(from))?,
            ],
        )
    };
    Ok(Frame {
        y: upload(dev, &y, to)?,
        c: [upload(dev, &c[0], half(to))?, upload(dev, &c[1], half(to))?],
    })
}

/// The reference's and each rendition's frames.
struct Content {
    reference: Vec<Frame>,
    renditions: Vec<Vec<Frame>>,
}

fn content(dev: &GpuDevice) -> Result<Content, BoxError> {
    let mut reference = Vec::new();
    let mut renditions: Vec<Vec<Frame>> = SIZES.iter().map(|_| Vec::new()).collect();
    for t in 0..DISTINCT {
        let r = [
            picture(REF, t, 2, 1),
            picture(half(REF), t, 1, 2),
            picture(half(REF), t, 1, 3),
        ];
        let d = [
            picture(REF, t, 6, 4),
            picture(half(REF), t, 3, 5),
            picture(half(REF), t, 3, 6),
        ];
        reference.push(make_frame(dev, &r, REF, REF)?);
        for (k, &size) in SIZES.iter().enumerate() {
            renditions[k].push(make_frame(dev, &d, REF, size)?);
        }
    }
    Ok(Content {
        reference,
        renditions,
    })
}

struct Setup {
    plan: ScorePlan,
    geometry: Geometry,
    scaling: LadderScaling,
    /// Frames each run scores before its timing starts (`--ladder-warm`).
    warm: usize,
}

/// Reference frames per second of the ladder backend over `frames` frames (after a warm-up).
fn ladder_fps(
    dev: &GpuDevice,
    set: &Setup,
    c: &Content,
    mem: Mem,
    frames: usize,
    share: bool,
) -> Result<f64, BoxError> {
    let ctx = dev.context().cu_ctx() as usize;
    let b = CudaBackend::new_ladder(dev, set.plan.layout(), set.geometry, set.scaling.clone())?
        .with_shared_reference(share);
    let mut s = Scorer::with_plan(Box::new(b), set.plan.clone(), 1);
    let mut start = Instant::now();
    let warm = set.warm;
    for i in 0..warm + frames {
        if i == warm {
            s.settle()?;
            start = Instant::now();
        }
        let t = i % DISTINCT;
        let r = &c.reference[t];
        let frame = FrameSet {
            reference: r.luma(mem, ctx),
            reference_chroma: Some(FrameChroma::Components(r.chroma(mem, ctx))),
            renditions: (0..SIZES.len())
                .map(|k| {
                    let d = &c.renditions[k][t];
                    RenditionFrame {
                        rendition: k,
                        luma: d.luma(mem, ctx),
                        chroma: Some(FrameChroma::Components(d.chroma(mem, ctx))),
                        full: true,
                    }
                })
                .collect(),
        };
        s.push_set(frame, vec![(); SIZES.len()])?;
    }
    s.settle()?;
    let fps = frames as f64 / start.elapsed().as_secs_f64();
    s.finish()?;
    Ok(fps)
}

/// A pair backend's scorer for rendition `k`.
fn pair_scorer(dev: &GpuDevice, set: &Setup, k: usize) -> Result<Scorer<()>, BoxError> {
    let b = CudaBackend::new_scaled(dev, set.plan.layout(), set.geometry, set.scaling.pair(k))?;
    Ok(Scorer::with_plan(Box::new(b), set.plan.clone(), 1))
}

/// Pushes `frames` pairs of rendition `k` into `s` and waits for them; returns the seconds
/// they took.
fn run_pair(
    s: &mut Scorer<()>,
    dev: &GpuDevice,
    c: &Content,
    k: usize,
    mem: Mem,
    frames: usize,
) -> Result<f64, BoxError> {
    let ctx = dev.context().cu_ctx() as usize;
    let start = Instant::now();
    for i in 0..frames {
        let t = i % DISTINCT;
        let (r, d) = (&c.reference[t], &c.renditions[k][t]);
        let chroma = ChromaInput {
            reference: r.chroma(mem, ctx),
            distorted: d.chroma(mem, ctx),
        };
        s.push_components(r.luma(mem, ctx), d.luma(mem, ctx), Some(chroma), ())?;
    }
    s.settle()?;
    Ok(start.elapsed().as_secs_f64())
}

/// Reference fps of five pair backends on five threads at once (each made and warmed up
/// first; timed from a common start to the last one's end).
fn threads_fps(
    dev: &GpuDevice,
    set: &Setup,
    c: &Content,
    mem: Mem,
    frames: usize,
) -> Result<f64, BoxError> {
    let gate = Barrier::new(SIZES.len());
    let results: Vec<Result<f64, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..SIZES.len())
            .map(|k| {
                let gate = &gate;
                scope.spawn(move || -> Result<f64, String> {
                    let ready = || -> Result<Scorer<()>, BoxError> {
                        dev.context().bind_to_thread()?;
                        let mut s = pair_scorer(dev, set, k)?;
                        run_pair(&mut s, dev, c, k, mem, set.warm)?;
                        Ok(s)
                    };
                    let ready = ready();
                    // Every thread passes the gate once, ready or not.
                    gate.wait();
                    let mut s = ready.map_err(|e| e.to_string())?;
                    let secs =
                        run_pair(&mut s, dev, c, k, mem, frames).map_err(|e| e.to_string())?;
                    s.finish().map_err(|e| e.to_string())?;
                    Ok(secs)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("thread panicked".into())))
            .collect()
    });
    let mut slowest = 0.0f64;
    for r in results {
        slowest = slowest.max(r?);
    }
    Ok(frames as f64 / slowest)
}

/// Reference fps of the five pair backends one after the other.
fn in_turn_fps(
    dev: &GpuDevice,
    set: &Setup,
    c: &Content,
    mem: Mem,
    frames: usize,
) -> Result<f64, BoxError> {
    let mut total = 0.0;
    for k in 0..SIZES.len() {
        let mut s = pair_scorer(dev, set, k)?;
        run_pair(&mut s, dev, c, k, mem, set.warm)?;
        total += run_pair(&mut s, dev, c, k, mem, frames)?;
        s.finish()?;
    }
    Ok(frames as f64 / total)
}

/// Measures and prints the ladder table for `models`; `frames`: reference frames timed per
/// run; `runs`: the columns to time (`ladder`, `unshared`, `threads`, `turn`; a run left out
/// prints `-`, e.g. to profile one of them alone); `memory`: `cuda` and/or `system`; `warm`:
/// frames scored before each run's timing starts.
pub fn ladder(
    models: &[String],
    frames: usize,
    runs: &[String],
    memory: &[String],
    warm: usize,
) -> Result<bool, BoxError> {
    let wants = |r: &str| runs.iter().any(|x| x.trim() == r);
    let mems: Vec<Mem> = memory
        .iter()
        .map(|m| match m.trim() {
            "cuda" => Ok(Mem::Device),
            "system" => Ok(Mem::Host),
            other => Err(format!("--ladder-memory {other}: not cuda or system")),
        })
        .collect::<Result<_, _>>()?;
    let dev = GpuDevice::open(0)?;
    dev.context().bind_to_thread()?;
    let c = content(&dev)?;
    let mut rows = vec![
        format!("ladder bench on {}: 1920x1080 8-bit reference, renditions {} (bicubic to 1080p), {frames} reference frames per run", dev.name(),
            SIZES.iter().map(|(w, h)| format!("{w}x{h}")).collect::<Vec<_>>().join(", ")),
        "| model | input | ladder ref fps | ladder, unshared ref fps | 5 pairs, threads ref fps | ladder / threads | 5 pairs, in turn ref fps | ladder / in turn | ladder pairs/s |".to_owned(),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |".to_owned(),
    ];
    let mut ok = true;
    for model in models {
        let m = Model::load(model)?;
        let plan = ScorePlan::for_model(&m, FeatureSet::default(), true)?;
        let set = Setup {
            plan,
            geometry: Geometry {
                chroma: Some(half(REF)),
                ..Geometry::luma(REF.0, REF.1, 8)
            },
            scaling: LadderScaling {
                reference: None,
                renditions: SIZES
                    .iter()
                    .map(|&s| (s != REF).then(|| scaler(s, REF)).transpose())
                    .collect::<Result<_, _>>()?,
            },
            warm,
        };
        for &mem in &mems {
            // `None`: not asked for.
            let l = wants("ladder").then(|| ladder_fps(&dev, &set, &c, mem, frames, true));
            let u = wants("unshared").then(|| ladder_fps(&dev, &set, &c, mem, frames, false));
            let t = wants("threads").then(|| threads_fps(&dev, &set, &c, mem, frames));
            let q = wants("turn").then(|| in_turn_fps(&dev, &set, &c, mem, frames));
            let cell = |r: &Option<Result<f64, BoxError>>| match r {
                Some(Ok(v)) => format!("{v:.1}"),
                Some(Err(e)) => format!("failed: {e}"),
                None => "-".to_owned(),
            };
            let ratio =
                |a: &Option<Result<f64, BoxError>>, b: &Option<Result<f64, BoxError>>| match (a, b)
                {
                    (Some(Ok(a)), Some(Ok(b))) => format!("{:.2}x", a / b),
                    _ => "n/a".to_owned(),
                };
            ok &= [&l, &u, &t, &q].iter().all(|r| !matches!(r, Some(Err(_))));
            rows.push(format!(
                "| {model} | {} | {} | {} | {} | {} | {} | {} | {} |",
                if mem == Mem::Device {
                    "CUDA memory"
                } else {
                    "system memory"
                },
                cell(&l),
                cell(&u),
                cell(&t),
                ratio(&l, &t),
                cell(&q),
                ratio(&l, &q),
                match &l {
                    Some(Ok(v)) => format!("{:.0}", v * SIZES.len() as f64),
                    _ => "n/a".to_owned(),
                },
            ));
            eprintln!("{}", rows.last().map_or("", String::as_str));
        }
    }
    println!("{}", rows.join("\n"));
    Ok(ok)
}
