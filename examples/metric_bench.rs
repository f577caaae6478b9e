//! The speed of every libvmaf metric (issue 31): each metric alone and beside `vmaf_v0.6.1`,
//! and the float model against the integer one, on the CUDA backend from CUDA memory and on
//! the CPU backend, at 1920x1080 and 3840x2160, 8 and 10 bits. Prints markdown tables.
//!
//! Content: Netflix's src01 576x324 4:2:0 pair (three frames, `../shared/vmaf-reference` or
//! `--data`), scaled up bilinearly, luma and chroma. Frames are scored through the backends
//! (`CudaBackend`, `CpuBackend` on a pool of `--threads`), already in memory, with as many in
//! flight as the backend takes; the time is from the first submission to the last result.
//! "Alone" is a layout of that one metric; "beside VMAF" the layout of `vmaf_v0.6.1` with the
//! metric added (what `features=<metric>` computes).
//!
//! With `--libvmaf PATH` (libvmaf 3.2.0's `vmaf` CLI, `../shared/peers/libvmaf-3.2.0/vmaf` on
//! the GPU host) the CPU table gets libvmaf's fps for the same metric at the same thread
//! count (`--threads N --gpumask 0xffffffff --no_prediction --feature NAME`, or `--model
//! version=NAME` for a model), whole process on raw files of the same frames written here,
//! counted as libvmaf's README measures it: `(N - 1) / (wall(N frames) - wall(1 frame))`, so
//! start-up is not counted against it.
//!
//! ```text
//! cargo run --release --example metric_bench -- --backends cpu --sizes 1080p --depths 8
//! metric_bench --backends cuda,cpu --libvmaf ../shared/peers/libvmaf-3.2.0/vmaf --threads 1,16
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use cudarc::driver::DevicePtr;

#[path = "bench_data/mod.rs"]
mod bench_data;
use bench_data::{try_pair_chroma, try_pair_planes};
use gstvmafcompare::cpu::{threads_per_core, CpuPool};
use gstvmafcompare::cuda::memory::{alloc_copy, DeviceAlloc};
use gstvmafcompare::cuda::GpuDevice;
use gstvmafcompare::engine::PairInput;
use gstvmafcompare::engine::{
    Backend, ChromaInput, ChromaPair, ComponentInput, CpuBackend, CudaBackend, DeviceComponent,
    DeviceLuma, FeatureSet, Geometry, Layout, LumaInput, LumaPlane, NamedModel, SampleLayout,
    ScorePlan,
};
use gstvmafcompare::features::{Options, REGISTRY};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Parser)]
#[command(about = "Prints the speed of each libvmaf metric alone and beside VMAF, GPU and CPU")]
struct Args {
    /// Metrics (registry names, comma-separated); names not registered are reported as such.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ciede,psnr_hvs,speed_temporal,float_vif,float_adm,float_motion,float_psnr,float_ansnr,float_moment"
    )]
    metrics: Vec<String>,
    /// Models compared with `vmaf_v0.6.1` (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "vmaf_float_v0.6.1")]
    models: Vec<String>,
    /// Backends: `cuda`, `cpu` (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "cuda,cpu")]
    backends: Vec<String>,
    /// Frame sizes: 1080p, 2160p or WxH.
    #[arg(long, value_delimiter = ',', default_value = "1080p,2160p")]
    sizes: Vec<String>,
    /// Bit depths (8, 10).
    #[arg(long, value_delimiter = ',', default_value = "8,10")]
    depths: Vec<u32>,
    /// Frames per CUDA measurement.
    #[arg(long, default_value_t = 300)]
    frames: usize,
    /// Frames per CPU measurement (and per libvmaf run); at least 12 per thread.
    #[arg(long, default_value_t = 48)]
    cpu_frames: usize,
    /// CPU thread counts (`all`: one per core).
    #[arg(long, value_delimiter = ',', default_value = "1,all")]
    threads: Vec<String>,
    /// libvmaf 3.2.0's `vmaf` CLI, for the CPU side-by-side column.
    #[arg(long)]
    libvmaf: Option<PathBuf>,
    /// Folder of Netflix's src01 files.
    #[arg(long, env = "VMAF_REFERENCE_DIR", default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vmaf-reference"))]
    data: PathBuf,
}

/// What one row measures: one metric's layout, or a model's (with extra metrics).
#[derive(Clone)]
enum What {
    /// The metric alone.
    Alone(String),
    /// `models` with `features` (comma-separated).
    Plan { models: String, features: String },
}

impl What {
    fn reads_chroma(&self) -> bool {
        match self {
            What::Alone(m) => REGISTRY
                .iter()
                .find(|f| f.name() == m)
                .is_some_and(|f| f.reads_chroma()),
            What::Plan { features, .. } => features.split(',').any(|m| {
                REGISTRY
                    .iter()
                    .find(|f| f.name() == m)
                    .is_some_and(|f| f.reads_chroma())
            }),
        }
    }

    /// The layout the backend is made for.
    fn layout(&self) -> Result<Arc<Layout>, BoxError> {
        let chroma = self.reads_chroma();
        match self {
            What::Alone(m) => {
                let f = REGISTRY
                    .iter()
                    .find(|f| f.name() == m)
                    .ok_or_else(|| format!("{m} is not registered"))?;
                let inst = f.configure(&Options::new(), chroma)?;
                Ok(Layout::new(vec![inst])?)
            }
            What::Plan { models, features } => {
                let models: Arc<[NamedModel]> = NamedModel::load_list(models)?.into();
                let plan = ScorePlan::new(models, FeatureSet::parse(features)?, chroma)?;
                Ok(plan.layout().clone())
            }
        }
    }
}

/// One test frame pair: luma and chroma planes at the bench size and depth.
struct Pair {
    y: [Vec<u16>; 2],
    c: [[Vec<u16>; 2]; 2],
}

struct Content {
    size: (usize, usize),
    bpc: u32,
    pairs: Vec<Pair>,
}

impl Content {
    fn load(data: &Path, (w, h): (usize, usize), bpc: u32) -> Result<Self, BoxError> {
        let (r, d) = try_pair_planes(data, w, h, bpc)?;
        let (rc, dc) = try_pair_chroma(data, w, h, bpc)?;
        let pairs = (0..r.len())
            .map(|i| Pair {
                y: [r[i].clone(), d[i].clone()],
                c: [rc[i].clone(), dc[i].clone()],
            })
            .collect();
        Ok(Self {
            size: (w, h),
            bpc,
            pairs,
        })
    }

    fn chroma_size(&self) -> (usize, usize) {
        (self.size.0.div_ceil(2), self.size.1.div_ceil(2))
    }

    fn geometry(&self, chroma: bool) -> Geometry {
        Geometry {
            chroma: chroma.then(|| self.chroma_size()),
            ..Geometry::luma(self.size.0, self.size.1, self.bpc)
        }
    }

    /// Raw planar 4:2:0 files (reference, distorted) of `n` frames, for libvmaf's CLI.
    fn write_raw(&self, n: usize, dir: &Path) -> Result<(PathBuf, PathBuf), BoxError> {
        let tag = format!("{}x{}_{}_{n}", self.size.0, self.size.1, self.bpc);
        let paths = [
            dir.join(format!("metric_bench_ref_{tag}.yuv")),
            dir.join(format!("metric_bench_dis_{tag}.yuv")),
        ];
        for (side, path) in paths.iter().enumerate() {
            let mut bytes = Vec::new();
            for i in 0..n {
                let p = &self.pairs[i % self.pairs.len()];
                for plane in [&p.y[side], &p.c[side][0], &p.c[side][1]] {
                    for &v in plane {
                        if self.bpc > 8 {
                            bytes.extend_from_slice(&v.to_le_bytes());
                        } else {
                            bytes.push(v as u8);
                        }
                    }
                }
            }
            std::fs::write(path, bytes)?;
        }
        let [r, d] = paths;
        Ok((r, d))
    }
}

/// A pair's planes on the device, in the buffers' own layout (1 byte per sample at 8 bits,
/// 2 little-endian above).
struct DevPair {
    planes: Vec<(u64, usize, usize, DeviceAlloc<u8>)>,
}

fn layout_of(bpc: u32) -> SampleLayout {
    SampleLayout {
        bytes: if bpc > 8 { 2 } else { 1 },
        down: 0,
        depth: bpc,
        up: 0,
    }
}

fn upload(dev: &GpuDevice, c: &Content) -> Result<Vec<DevPair>, BoxError> {
    let stream = dev.context().default_stream();
    let (cw, ch) = c.chroma_size();
    let mut out = Vec::new();
    for p in &c.pairs {
        let mut planes = Vec::new();
        for (plane, (w, h)) in [
            (&p.y[0], c.size),
            (&p.y[1], c.size),
            (&p.c[0][0], (cw, ch)),
            (&p.c[0][1], (cw, ch)),
            (&p.c[1][0], (cw, ch)),
            (&p.c[1][1], (cw, ch)),
        ] {
            let bytes: Vec<u8> = if c.bpc > 8 {
                plane.iter().flat_map(|v| v.to_le_bytes()).collect()
            } else {
                plane.iter().map(|&v| v as u8).collect()
            };
            let d = alloc_copy(&stream, &bytes[..], "metric bench plane")?;
            let ptr = d.device_ptr(&stream).0;
            planes.push((ptr, w, h, d));
        }
        out.push(DevPair { planes });
    }
    stream.synchronize()?;
    Ok(out)
}

/// Frames per second of `backend` over `n` frames of `feed(i)` submissions.
fn time_backend(
    backend: &mut dyn Backend,
    n: usize,
    mut submit: impl FnMut(&mut dyn Backend, usize) -> Result<(), BoxError>,
) -> Result<f64, BoxError> {
    let max = backend.max_in_flight().max(1);
    let mut in_flight = 0usize;
    // Warm-up: a few frames, all collected.
    for i in 0..4 {
        submit(backend, i)?;
        while backend.collect(true)?.is_some() {}
    }
    let start = Instant::now();
    for i in 0..n {
        submit(backend, i)?;
        in_flight += 1;
        while in_flight >= max {
            backend.collect(true)?.ok_or("a frame was lost")?;
            in_flight -= 1;
        }
    }
    while in_flight > 0 {
        backend.collect(true)?.ok_or("a frame was lost")?;
        in_flight -= 1;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

fn cuda_fps(
    dev: &GpuDevice,
    c: &Content,
    planes: &[DevPair],
    what: &What,
    n: usize,
) -> Result<f64, BoxError> {
    let chroma = what.reads_chroma();
    let mut b = CudaBackend::new(dev, &what.layout()?, c.geometry(chroma))?;
    let ctx = dev.context().cu_ctx() as usize;
    let lay = layout_of(c.bpc);
    let bytes = lay.bytes;
    time_backend(&mut b, n, |b, i| {
        let p = &planes[i % planes.len()];
        let luma = |k: usize| {
            let (ptr, w, h, _) = &p.planes[k];
            LumaInput::Device(DeviceLuma {
                ptr: *ptr,
                pitch: w * bytes,
                width: *w,
                height: *h,
                layout: lay,
                context: ctx,
                hold: Box::new(()),
            })
        };
        let comp = |k: usize| {
            let (ptr, w, h, _) = &p.planes[k];
            ComponentInput::Device(DeviceComponent {
                ptr: *ptr,
                pitch: w * bytes,
                pixel_stride: bytes,
                offset: 0,
                width: *w,
                height: *h,
                layout: lay,
                context: ctx,
            })
        };
        let c = chroma.then(|| ChromaInput {
            reference: [comp(2), comp(3)],
            distorted: [comp(4), comp(5)],
        });
        b.submit_components(luma(0), luma(1), c, true)?;
        Ok(())
    })
}

fn cpu_fps(c: &Content, what: &What, threads: usize, n: usize) -> Result<f64, BoxError> {
    let chroma = what.reads_chroma();
    let mut b = CpuBackend::new(&what.layout()?, c.geometry(chroma))?;
    if threads > 1 {
        b = b.with_pool(Arc::new(CpuPool::new(threads)?));
    }
    let (w, h) = c.size;
    let (cw, ch) = c.chroma_size();
    let bpc = c.bpc;
    time_backend(&mut b, n, |b, i| {
        let p = &c.pairs[i % c.pairs.len()];
        fn plane(v: &[u16], w: usize, h: usize, bpc: u32) -> Result<LumaPlane<'_>, BoxError> {
            Ok(LumaPlane::packed(v, w, h, bpc).ok_or("plane size")?)
        }
        let pair = if chroma {
            Some(ChromaPair {
                reference: [
                    plane(&p.c[0][0], cw, ch, bpc)?,
                    plane(&p.c[0][1], cw, ch, bpc)?,
                ],
                distorted: [
                    plane(&p.c[1][0], cw, ch, bpc)?,
                    plane(&p.c[1][1], cw, ch, bpc)?,
                ],
            })
        } else {
            None
        };
        b.submit_frame(
            LumaInput::Packed(plane(&p.y[0], w, h, bpc)?),
            LumaInput::Packed(plane(&p.y[1], w, h, bpc)?),
            pair,
            true,
        )?;
        Ok(())
    })
}

/// libvmaf CLI's steady fps for `what` at `threads` threads on `n` frames.
fn libvmaf_fps(
    cli: &Path,
    c: &Content,
    what: &What,
    threads: usize,
    n: usize,
) -> Result<f64, BoxError> {
    let dir = std::env::temp_dir();
    let wall = |frames: usize| -> Result<f64, BoxError> {
        let (r, d) = c.write_raw(frames, &dir)?;
        let mut cmd = Command::new(cli);
        cmd.args(["-r"])
            .arg(&r)
            .arg("-d")
            .arg(&d)
            .args(["-w", &c.size.0.to_string(), "-h", &c.size.1.to_string()])
            .args(["-p", "420", "-b", &c.bpc.to_string()])
            .args(["--threads", &threads.to_string(), "--gpumask", "0xffffffff"])
            .args(["-q", "--json", "-o", "/dev/null"]);
        match what {
            What::Alone(m) => {
                cmd.args(["--no_prediction", "--feature", m]);
            }
            What::Plan { models, features } => {
                cmd.args(["--model", &format!("version={models}")]);
                for f in features.split(',').filter(|f| !f.is_empty()) {
                    cmd.args(["--feature", f]);
                }
            }
        }
        let start = Instant::now();
        let out = cmd.output()?;
        let secs = start.elapsed().as_secs_f64();
        if !out.status.success() {
            return Err(format!(
                "libvmaf failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )
            .into());
        }
        Ok(secs)
    };
    let one = wall(1)?;
    let all = wall(n)?;
    Ok((n - 1) as f64 / (all - one).max(1e-9))
}

fn size(s: &str) -> Result<(usize, usize), BoxError> {
    match s {
        "1080p" => Ok((1920, 1080)),
        "2160p" => Ok((3840, 2160)),
        _ => {
            let (w, h) = s
                .split_once('x')
                .ok_or_else(|| format!("size {s}: not WxH"))?;
            Ok((w.parse()?, h.parse()?))
        }
    }
}

fn cell(r: &Result<f64, BoxError>) -> String {
    match r {
        Ok(v) => format!("{v:.1}"),
        Err(e) => format!("({e})"),
    }
}

fn ratio(a: &Result<f64, BoxError>, b: &Result<f64, BoxError>) -> String {
    match (a, b) {
        (Ok(a), Ok(b)) if *b > 0.0 => format!("{:.2}", a / b),
        _ => "-".to_owned(),
    }
}

fn main() {
    match bench() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("metric_bench: {e}");
            std::process::exit(2);
        }
    }
}

fn bench() -> Result<bool, BoxError> {
    let args = Args::parse();
    gst::init()?;
    let vmaf = || What::Plan {
        models: "vmaf_v0.6.1".into(),
        features: String::new(),
    };
    let mut ok = true;
    let mut cuda_rows = vec![
        "| size | bits | metric | alone fps | beside vmaf_v0.6.1 fps | vmaf_v0.6.1 alone fps | beside / VMAF alone |".to_owned(),
        "| --- | --- | --- | --- | --- | --- | --- |".to_owned(),
    ];
    let mut cpu_rows = vec![
        "| size | bits | threads | metric | vmafcompare fps | libvmaf 3.2.0 fps | ours / libvmaf |"
            .to_owned(),
        "| --- | --- | --- | --- | --- | --- | --- |".to_owned(),
    ];
    let dev = if args.backends.iter().any(|b| b == "cuda") {
        match GpuDevice::open(0) {
            Ok(d) => {
                d.context().bind_to_thread()?;
                Some(d)
            }
            Err(e) => {
                eprintln!("no CUDA table: {e}");
                None
            }
        }
    } else {
        None
    };
    let threads: Vec<usize> = args
        .threads
        .iter()
        .map(|t| {
            if t == "all" {
                Ok(threads_per_core())
            } else {
                t.parse::<usize>()
            }
        })
        .collect::<Result<_, _>>()?;
    for s in &args.sizes {
        for &bpc in &args.depths {
            let c = Content::load(&args.data, size(s)?, bpc)?;
            let (w, h) = c.size;
            let mut rows: Vec<(String, What, Option<What>)> = args
                .metrics
                .iter()
                .map(|m| {
                    (
                        m.clone(),
                        What::Alone(m.clone()),
                        Some(What::Plan {
                            models: "vmaf_v0.6.1".into(),
                            features: m.clone(),
                        }),
                    )
                })
                .collect();
            rows.extend(args.models.iter().map(|m| {
                (
                    m.clone(),
                    What::Plan {
                        models: m.clone(),
                        features: String::new(),
                    },
                    None,
                )
            }));
            if let Some(dev) = &dev {
                let planes = upload(dev, &c)?;
                let base = cuda_fps(dev, &c, &planes, &vmaf(), args.frames);
                ok &= base.is_ok();
                for (name, alone, beside) in &rows {
                    let a = cuda_fps(dev, &c, &planes, alone, args.frames);
                    let b = beside
                        .as_ref()
                        .map(|b| cuda_fps(dev, &c, &planes, b, args.frames));
                    let line = format!(
                        "| {w}x{h} | {bpc} | {name} | {} | {} | {} | {} |",
                        cell(&a),
                        b.as_ref().map_or("-".to_owned(), cell),
                        cell(&base),
                        match &b {
                            Some(b) => ratio(b, &base),
                            None => ratio(&a, &base),
                        }
                    );
                    eprintln!("{line}");
                    cuda_rows.push(line);
                }
            }
            if args.backends.iter().any(|b| b == "cpu") {
                for &t in &threads {
                    let all_rows =
                        std::iter::once(("vmaf_v0.6.1".to_owned(), vmaf(), None::<What>))
                            .chain(rows.iter().cloned());
                    for (name, alone, _) in all_rows {
                        // At least 12 frames per thread: fewer leave a pool's tail idle.
                        let n = args.cpu_frames.max(12 * t);
                        let ours = cpu_fps(&c, &alone, t, n);
                        let theirs = match &args.libvmaf {
                            Some(cli) => libvmaf_fps(cli, &c, &alone, t, n),
                            None => Err("no --libvmaf".into()),
                        };
                        let line = format!(
                            "| {w}x{h} | {bpc} | {t} | {name} | {} | {} | {} |",
                            cell(&ours),
                            cell(&theirs),
                            ratio(&ours, &theirs)
                        );
                        eprintln!("{line}");
                        cpu_rows.push(line);
                    }
                }
            }
        }
    }
    if let Some(dev) = &dev {
        println!(
            "\nCUDA backend on {}, frames in CUDA memory, {} frames per run:\n",
            dev.name(),
            args.frames
        );
        println!("{}", cuda_rows.join("\n"));
    }
    if args.backends.iter().any(|b| b == "cpu") {
        println!(
            "\nCPU backend, at least {} frames per run and 12 per thread ({} cores here):\n",
            args.cpu_frames.max(12),
            threads_per_core()
        );
        println!("{}", cpu_rows.join("\n"));
    }
    Ok(ok)
}
