//! The CUDA ladder backend (`CudaBackend::new_ladder`, issue 30) against pair backends: one
//! reference scored against four renditions of different sizes (one at the reference's size,
//! three bicubic-downscaled and scaled back by the backend), through `Scorer`, must give
//! each rendition, frame for frame, bit for bit the values of a pair `CudaBackend`
//! (`new_scaled` with that rendition's scaler) and of the CPU pair backend
//! (`CpuBackend::new(..).with_scaling(..)`): vmaf_v0.6.1 and vmaf_v1.0.16_3d0h, both with
//! `psnr` (chroma), 8 and 10 bit, planes as host rows and in device memory. Then the same with
//! one rendition missing two frames in the middle (its run ends and restarts; the others are
//! untouched), and the ladder without VIF's and ADM's shared reference work
//! (`with_shared_reference(false)`) giving the same values. Content: Netflix's src01 576x324
//! pair (real video, 3 frames, played forwards and backwards to 8 frames). Skipped (with a printed reason) where no GPU is usable.
//!
//! Run: `cargo test --release --test gpu_ladder -- --nocapture`.

mod common;

use std::sync::Arc;

use gstvmafcompare::cuda::memory::{alloc_copy, DeviceAlloc};
use gstvmafcompare::cuda::GpuDevice;
use gstvmafcompare::engine::scale::cpu::{scale_plane, Scratch};
use gstvmafcompare::engine::scale::{LadderScaling, ScaleMethod, Siting, StreamScaler};
use gstvmafcompare::engine::{
    ChromaInput, ChromaPair, ComponentInput, CpuBackend, CudaBackend, DeviceComponent, DeviceLuma,
    FeatureSet, FrameChroma, FrameSet, Geometry, HostComponent, HostLuma, LumaInput, LumaPlane,
    Model, RenditionFrame, SampleLayout, ScorePlan, Scored, Scorer,
};

/// Reference size and its 4:2:0 chroma size.
const REF: (usize, usize) = (576, 324);
/// The renditions' sizes (the first at the reference's).
const SIZES: [(usize, usize); 4] = [(576, 324), (384, 216), (288, 162), (448, 252)];
/// Which source frame each of the 8 frames plays.
const ORDER: [usize; 8] = [0, 1, 2, 1, 0, 1, 2, 2];

/// One 4:2:0 frame: packed right-aligned samples at `bpc` bits.
#[derive(Clone)]
struct Yuv {
    size: (usize, usize),
    y: Vec<u16>,
    c: [Vec<u16>; 2],
}

fn chroma_size((w, h): (usize, usize)) -> (usize, usize) {
    (w.div_ceil(2), h.div_ceil(2))
}

fn siting() -> Siting {
    Siting {
        h_sub: 1,
        v_sub: 1,
        h_pos: None,
        v_pos: None,
        chroma: true,
    }
}

/// A bicubic scaler of luma and chroma from `src` to `dst`, as the element makes for a
/// 4:2:0 stream.
fn scaler(src: (usize, usize), dst: (usize, usize)) -> Arc<StreamScaler> {
    Arc::new(
        StreamScaler::new(
            ScaleMethod::Bicubic,
            src,
            dst,
            Some((chroma_size(src), chroma_size(dst), siting())),
        )
        .expect("scaler"),
    )
}

/// The 3 frames of the src01 576x324 reference and distorted files at `bpc` (8 or 10).
fn load(bpc: u32) -> (Vec<Yuv>, Vec<Yuv>) {
    let pair = common::reference_pairs()
        .into_iter()
        .find(|p| p.width == 576 && (p.format == "I420") == (bpc == 8))
        .expect("576x324 pair");
    let read = |path: &std::path::Path| -> Vec<Yuv> {
        let bytes = std::fs::read(path).expect("reference file");
        let samples: Vec<u16> = if bpc == 8 {
            bytes.iter().map(|&b| u16::from(b)).collect()
        } else {
            bytes
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .collect()
        };
        let (l, c) = (REF.0 * REF.1, chroma_size(REF).0 * chroma_size(REF).1);
        samples
            .chunks_exact(l + 2 * c)
            .map(|f| Yuv {
                size: REF,
                y: f[..l].to_vec(),
                c: [f[l..l + c].to_vec(), f[l + c..].to_vec()],
            })
            .collect()
    };
    (read(&pair.reference), read(&pair.distorted))
}

/// `f` scaled (bicubic, as an encoder's input would be) to `size`.
fn rendition(f: &Yuv, size: (usize, usize), bpc: u32) -> Yuv {
    if size == f.size {
        return f.clone();
    }
    let s = scaler(f.size, size);
    let mut scratch = Scratch::default();
    let mut plane = |p: &[u16], ps: &gstvmafcompare::engine::scale::PlaneScaler, (w, h)| {
        let mut out = Vec::new();
        let src = LumaPlane::packed(p, w, h, bpc).expect("plane");
        assert!(scale_plane(ps, &src, &mut scratch, &mut out), "CPU scale");
        out
    };
    let cs = s.chroma.as_ref().expect("chroma scaler");
    Yuv {
        size,
        y: plane(&f.y, &s.luma, f.size),
        c: [
            plane(&f.c[0], cs, chroma_size(f.size)),
            plane(&f.c[1], cs, chroma_size(f.size)),
        ],
    }
}

/// Where the GPU backends read a frame from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mem {
    Host,
    Device,
}

/// A frame in a buffer's own layout (1 byte per sample up to 8 bits, else 2, rows padded
/// with 24 bytes of garbage), in host memory and a device copy.
struct Stored {
    size: (usize, usize),
    bytes: usize,
    bpc: u32,
    planes: [Vec<u8>; 3],
    strides: [usize; 3],
    dev: [DeviceAlloc<u8>; 3],
    ctx: usize,
}

impl Stored {
    fn new(dev: &GpuDevice, stream: &Arc<cudarc::driver::CudaStream>, f: &Yuv, bpc: u32) -> Self {
        let bytes = if bpc > 8 { 2 } else { 1 };
        let (cw, ch) = chroma_size(f.size);
        let store = |p: &[u16], w: usize, h: usize| {
            let stride = w * bytes + 24;
            let mut out = vec![0xa7u8; stride * h];
            for (row, src) in out.chunks_exact_mut(stride).zip(p.chunks_exact(w)) {
                for (x, &v) in src.iter().enumerate() {
                    if bytes == 1 {
                        row[x] = v as u8;
                    } else {
                        row[2 * x..2 * x + 2].copy_from_slice(&v.to_le_bytes());
                    }
                }
            }
            (out, stride)
        };
        let (y, ys) = store(&f.y, f.size.0, f.size.1);
        let (u, us) = store(&f.c[0], cw, ch);
        let (v, vs) = store(&f.c[1], cw, ch);
        let up = |p: &Vec<u8>| alloc_copy(stream, &p[..], "test plane").expect("upload");
        let devp = [up(&y), up(&u), up(&v)];
        stream.synchronize().expect("sync");
        Self {
            size: f.size,
            bytes,
            bpc,
            planes: [y, u, v],
            strides: [ys, us, vs],
            dev: devp,
            ctx: dev.context().cu_ctx() as usize,
        }
    }

    fn layout(&self) -> SampleLayout {
        SampleLayout {
            bytes: self.bytes,
            down: 0,
            depth: self.bpc,
            up: 0,
        }
    }

    fn ptr(&self, i: usize, stream: &Arc<cudarc::driver::CudaStream>) -> u64 {
        use cudarc::driver::DevicePtr;
        self.dev[i].device_ptr(stream).0
    }

    fn luma(&self, mem: Mem, stream: &Arc<cudarc::driver::CudaStream>) -> LumaInput<'_> {
        let (w, h) = self.size;
        match mem {
            Mem::Host => LumaInput::Host(
                HostLuma::new(&self.planes[0], self.strides[0], w, h, self.layout())
                    .expect("host luma"),
            ),
            Mem::Device => LumaInput::Device(DeviceLuma {
                ptr: self.ptr(0, stream),
                pitch: self.strides[0],
                width: w,
                height: h,
                layout: self.layout(),
                context: self.ctx,
                hold: Box::new(()),
            }),
        }
    }

    fn chroma(
        &self,
        mem: Mem,
        stream: &Arc<cudarc::driver::CudaStream>,
    ) -> [ComponentInput<'_>; 2] {
        let size = chroma_size(self.size);
        [1, 2].map(|i| match mem {
            Mem::Host => ComponentInput::Host(
                HostComponent::new(
                    &self.planes[i],
                    self.strides[i],
                    self.bytes,
                    0,
                    size,
                    self.layout(),
                )
                .expect("host component"),
            ),
            Mem::Device => ComponentInput::Device(DeviceComponent {
                ptr: self.ptr(i, stream),
                pitch: self.strides[i],
                pixel_stride: self.bytes,
                offset: 0,
                width: size.0,
                height: size.1,
                layout: self.layout(),
                context: self.ctx,
            }),
        })
    }
}

/// Per frame: the frame index and every value's bits.
type Values = Vec<(u64, Vec<u64>)>;

fn values(done: Vec<Scored<usize>>) -> Values {
    done.into_iter()
        .map(|s| {
            let f = s.scores.expect("scores");
            (f.index, f.values.iter().map(|v| v.to_bits()).collect())
        })
        .collect()
}

struct Case {
    plan: ScorePlan,
    geometry: Geometry,
    bpc: u32,
    /// Per frame: reference, and each rendition at its size.
    reference: Vec<Yuv>,
    renditions: Vec<Vec<Yuv>>,
}

impl Case {
    fn new(model: &str, bpc: u32) -> Self {
        let model = Model::load(model).expect("model");
        let plan = ScorePlan::for_model(&model, FeatureSet::parse("psnr").expect("psnr"), true)
            .expect("plan");
        let geometry = Geometry {
            chroma: Some(chroma_size(REF)),
            ..Geometry::luma(REF.0, REF.1, bpc)
        };
        let (r, d) = load(bpc);
        let reference = ORDER.iter().map(|&i| r[i].clone()).collect();
        let renditions = SIZES
            .iter()
            .map(|&s| ORDER.iter().map(|&i| rendition(&d[i], s, bpc)).collect())
            .collect();
        Self {
            plan,
            geometry,
            bpc,
            reference,
            renditions,
        }
    }

    fn scaling(&self) -> LadderScaling {
        LadderScaling {
            reference: None,
            renditions: SIZES
                .iter()
                .map(|&s| (s != REF).then(|| scaler(s, REF)))
                .collect(),
        }
    }

    /// Rendition `k` over `frames` on the CPU pair backend.
    fn cpu(&self, k: usize, frames: &[usize]) -> Values {
        let b = CpuBackend::new(self.plan.layout(), self.geometry)
            .expect("cpu backend")
            .with_scaling(self.scaling().pair(k));
        let mut s = Scorer::with_plan(Box::new(b), self.plan.clone(), 1);
        let mut done = Vec::new();
        for &i in frames {
            let (r, d) = (&self.reference[i], &self.renditions[k][i]);
            let bpc = self.bpc;
            fn p(v: &[u16], (w, h): (usize, usize), bpc: u32) -> LumaPlane<'_> {
                LumaPlane::packed(v, w, h, bpc).expect("plane")
            }
            let (rc, dc) = (chroma_size(r.size), chroma_size(d.size));
            let chroma = ChromaPair {
                reference: [p(&r.c[0], rc, bpc), p(&r.c[1], rc, bpc)],
                distorted: [p(&d.c[0], dc, bpc), p(&d.c[1], dc, bpc)],
            };
            done.extend(
                s.push_frame(
                    LumaInput::Packed(p(&r.y, r.size, bpc)),
                    LumaInput::Packed(p(&d.y, d.size, bpc)),
                    Some(chroma),
                    i,
                )
                .expect("cpu push"),
            );
        }
        done.extend(s.finish().expect("cpu finish").into_iter().map(|(_, s)| s));
        values(done)
    }

    /// Rendition `k` over `frames` on a pair CUDA backend.
    fn cuda_pair(&self, dev: &GpuDevice, k: usize, frames: &[usize], mem: Mem) -> Values {
        let stream = dev.new_stream().expect("stream");
        let b = CudaBackend::new_scaled(
            dev,
            self.plan.layout(),
            self.geometry,
            self.scaling().pair(k),
        )
        .expect("cuda pair backend");
        let mut s = Scorer::with_plan(Box::new(b), self.plan.clone(), 1);
        let mut done = Vec::new();
        // The stored frames of the last 4 frames are kept: frames stay in flight, and the
        // next frame's motion reads the previous reference.
        let mut keep = std::collections::VecDeque::new();
        for &i in frames {
            let r = Stored::new(dev, &stream, &self.reference[i], self.bpc);
            let d = Stored::new(dev, &stream, &self.renditions[k][i], self.bpc);
            let chroma = ChromaInput {
                reference: r.chroma(mem, &stream),
                distorted: d.chroma(mem, &stream),
            };
            done.extend(
                s.push_components(r.luma(mem, &stream), d.luma(mem, &stream), Some(chroma), i)
                    .expect("cuda push"),
            );
            keep.push_back((r, d));
            if keep.len() > 4 {
                keep.pop_front();
            }
        }
        done.extend(s.finish().expect("cuda finish").into_iter().map(|(_, s)| s));
        values(done)
    }

    /// Every rendition through one ladder backend; `present(k, i)`: whether rendition `k`
    /// has frame `i`; `share`: as `CudaBackend::with_shared_reference`. Frames stay in flight
    /// (the stored frames of the last 4 frames are kept).
    fn ladder(
        &self,
        dev: &GpuDevice,
        mem: Mem,
        present: impl Fn(usize, usize) -> bool,
        share: bool,
    ) -> Vec<Values> {
        let stream = dev.new_stream().expect("stream");
        let b = CudaBackend::new_ladder(dev, self.plan.layout(), self.geometry, self.scaling())
            .expect("cuda ladder backend")
            .with_shared_reference(share);
        let mut s = Scorer::with_plan(Box::new(b), self.plan.clone(), 1);
        assert_eq!(s.renditions(), SIZES.len());
        let mut done: Vec<Vec<Scored<usize>>> = (0..SIZES.len()).map(|_| Vec::new()).collect();
        let mut keep = std::collections::VecDeque::new();
        for i in 0..ORDER.len() {
            let r = Stored::new(dev, &stream, &self.reference[i], self.bpc);
            let ds: Vec<(usize, Stored)> = (0..SIZES.len())
                .filter(|&k| present(k, i))
                .map(|k| {
                    (
                        k,
                        Stored::new(dev, &stream, &self.renditions[k][i], self.bpc),
                    )
                })
                .collect();
            let frame = FrameSet {
                reference: r.luma(mem, &stream),
                reference_chroma: Some(FrameChroma::Components(r.chroma(mem, &stream))),
                renditions: ds
                    .iter()
                    .map(|(k, d)| RenditionFrame {
                        rendition: *k,
                        luma: d.luma(mem, &stream),
                        chroma: Some(FrameChroma::Components(d.chroma(mem, &stream))),
                        full: s.next_full(*k),
                    })
                    .collect(),
            };
            let tags = vec![i; ds.len()];
            for (k, x) in s.push_set(frame, tags).expect("ladder push") {
                done[k].push(x);
            }
            keep.push_back((r, ds));
            if keep.len() > 4 {
                keep.pop_front();
            }
        }
        for (k, x) in s.finish().expect("ladder finish") {
            done[k].push(x);
        }
        done.into_iter().map(values).collect()
    }
}

/// Mismatches found so far (every case runs; the test fails at the end listing them all).
static FAILS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Values of the same frames, compared ignoring the frame index (a restarted run's pair
/// scorer counts from 0): records a mismatch (the first differing frame and values) and
/// returns whether all are equal.
fn same(got: &Values, want: &Values, what: &str) -> bool {
    let fail = |m: String| {
        eprintln!("MISMATCH {m}");
        FAILS.lock().unwrap_or_else(|p| p.into_inner()).push(m);
        false
    };
    if got.len() != want.len() {
        return fail(format!("{what}: {} frames vs {}", got.len(), want.len()));
    }
    for (n, (g, w)) in got.iter().zip(want).enumerate() {
        if g.1 != w.1 {
            let diff: Vec<String> = g
                .1
                .iter()
                .zip(&w.1)
                .enumerate()
                .filter(|(_, (a, b))| a != b)
                .map(|(i, (a, b))| format!("#{i} {} vs {}", f64::from_bits(*a), f64::from_bits(*b)))
                .collect();
            return fail(format!(
                "{what}: frame {n} (index {} vs {}): {}",
                g.0,
                w.0,
                diff.join(", ")
            ));
        }
    }
    true
}

/// Records a mismatch of the frame indices.
fn indices(got: &Values, want: Vec<u64>, what: &str) {
    let have: Vec<u64> = got.iter().map(|v| v.0).collect();
    if have != want {
        let m = format!("{what}: indices {have:?}, expected {want:?}");
        eprintln!("MISMATCH {m}");
        FAILS.lock().unwrap_or_else(|p| p.into_inner()).push(m);
    }
}

/// Fails the test if any comparison failed.
fn check_fails(test: &str) {
    let fails = std::mem::take(&mut *FAILS.lock().unwrap_or_else(|p| p.into_inner()));
    assert!(
        fails.is_empty(),
        "{test}: {} mismatches:\n{}",
        fails.len(),
        fails.join("\n")
    );
}
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn every_rendition_of_a_ladder_scores_as_its_own_pair() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let all: Vec<usize> = (0..ORDER.len()).collect();
    let mut rows = vec!["| model | bpc | input | rendition | frames | vmaf (frame 3) | ladder = CUDA pair = CPU pair |".to_owned()];
    for model in ["vmaf_v0.6.1", "vmaf_v1.0.16_3d0h"] {
        for bpc in [8, 10] {
            let case = Case::new(model, bpc);
            let cpu: Vec<Values> = (0..SIZES.len()).map(|k| case.cpu(k, &all)).collect();
            for mem in [Mem::Host, Mem::Device] {
                let ladder = case.ladder(&dev, mem, |_, _| true, true);
                if mem == Mem::Device {
                    // Without VIF's and ADM's shared reference work: the same values.
                    let unshared = case.ladder(&dev, mem, |_, _| true, false);
                    for (k, (a, b)) in ladder.iter().zip(&unshared).enumerate() {
                        same(
                            a,
                            b,
                            &format!("{model} {bpc}-bit rendition {k}: shared vs not"),
                        );
                    }
                }
                for k in 0..SIZES.len() {
                    let what = format!("{model} {bpc}-bit {mem:?} rendition {k} {:?}", SIZES[k]);
                    let pair = case.cuda_pair(&dev, k, &all, mem);
                    let ok = same(&pair, &cpu[k], &format!("{what}: CUDA pair vs CPU"))
                        & same(&ladder[k], &pair, &format!("{what}: ladder vs CUDA pair"));
                    indices(&ladder[k], all.iter().map(|&i| i as u64).collect(), &what);
                    let vmaf = ladder[k]
                        .get(3)
                        .and_then(|f| f.1.last())
                        .map_or(f64::NAN, |v| f64::from_bits(*v));
                    rows.push(format!(
                        "| {model} | {bpc} | {mem:?} | {}x{} | {} | {vmaf:.6} | {} |",
                        SIZES[k].0,
                        SIZES[k].1,
                        ladder[k].len(),
                        if ok { "equal" } else { "DIFFERENT" }
                    ));
                }
            }
        }
    }
    eprintln!("{}", rows.join("\n"));
    check_fails("every_rendition_of_a_ladder_scores_as_its_own_pair");
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn a_rendition_missing_frames_restarts_and_leaves_the_others_alone() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let all: Vec<usize> = (0..ORDER.len()).collect();
    // Rendition 2 has no frames 3 and 4.
    let gap = |k: usize, i: usize| !(k == 2 && (3..5).contains(&i));
    for (model, bpc) in [("vmaf_v0.6.1", 8), ("vmaf_v1.0.16_3d0h", 10)] {
        let case = Case::new(model, bpc);
        let ladder = case.ladder(&dev, Mem::Device, gap, true);
        for (k, got) in ladder.iter().enumerate() {
            let what = format!("{model} {bpc}-bit rendition {k} with a gap");
            if k == 2 {
                // Two runs, each as a pair backend of its own scores it.
                let mut want = case.cuda_pair(&dev, k, &[0, 1, 2], Mem::Device);
                want.extend(case.cuda_pair(&dev, k, &[5, 6, 7], Mem::Device));
                let cpu_first = case.cpu(k, &[0, 1, 2]);
                same(
                    &want[..3].to_vec(),
                    &cpu_first,
                    &format!("{what}: pair vs CPU"),
                );
                same(got, &want, &what);
                // Indices count the scored pairs.
                indices(got, (0..6).collect(), &what);
            } else {
                same(got, &case.cuda_pair(&dev, k, &all, Mem::Device), &what);
            }
        }
        eprintln!("{model} {bpc}-bit: a rendition missing frames 3-4 against two pair runs, the others against full pairs: compared");
    }
    check_fails("a_rendition_missing_frames_restarts_and_leaves_the_others_alone");
}
