//! DMABuf input without VA hardware: memfd-backed buffers wrapped by GStreamer's DMABuf
//! allocator, NV12 with a padded stride as VA-API decoders give it. Without a GPU (CI) the
//! element reads them back through host memory; on a GPU host it first tries to import them
//! into CUDA (the driver refuses a memfd) and then reads them back. Either way the scores must
//! equal those of the same frames in system memory, and a buffer whose mapping fails must
//! leave nothing behind (memory freed, file descriptor closed).

mod common;

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use common::*;
use gst::prelude::*;
use gst_allocators::prelude::*;

/// The tests count open file descriptors: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Luma and chroma row pitch of the NV12 frames (160 samples padded to 64-byte rows, plus 64).
const STRIDE: usize = 256;

/// Frees of the DMABuf memories made by [`dmabuf_frame`].
static FREED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn on_free(_data: gst::glib::ffi::gpointer, _obj: *mut gst::ffi::GstMiniObject) {
    FREED.fetch_add(1, Ordering::SeqCst);
}

fn memfd(len: usize) -> OwnedFd {
    // SAFETY: plain syscalls on a new descriptor we own.
    unsafe {
        let fd = libc::memfd_create(c"vmafcompare-test".as_ptr(), libc::MFD_CLOEXEC);
        assert!(fd >= 0, "memfd_create failed");
        let fd = OwnedFd::from_raw_fd(fd);
        assert_eq!(
            libc::ftruncate(std::os::fd::AsRawFd::as_raw_fd(&fd), len as libc::off_t),
            0
        );
        fd
    }
}

/// An NV12 frame of `w` x `h` in a DMABuf memory made from `fd` holding `bytes` (luma from
/// an I420 frame, neutral chroma), with a video meta giving the padded layout.
fn dmabuf_buffer(fd: OwnedFd, len: usize, w: usize, h: usize, i: u64) -> gst::Buffer {
    let alloc = gst_allocators::DmaBufAllocator::new();
    // SAFETY: the allocator takes ownership of the descriptor.
    let mem = unsafe { alloc.alloc_dmabuf(fd, len) }.expect("dmabuf memory");
    // SAFETY: a live memory; the notify only counts.
    unsafe {
        gst::ffi::gst_mini_object_weak_ref(
            mem.as_ptr() as *mut gst::ffi::GstMiniObject,
            Some(on_free),
            std::ptr::null_mut(),
        )
    };
    let mut buf = gst::Buffer::new();
    {
        let b = buf.get_mut().expect("new buffer is writable");
        b.append_memory(mem);
        b.set_pts(gst::ClockTime::from_mseconds(40 * i));
        b.set_duration(gst::ClockTime::from_mseconds(40));
        gst_video::VideoMeta::add_full(
            b,
            gst_video::VideoFrameFlags::empty(),
            gst_video::VideoFormat::Nv12,
            w as u32,
            h as u32,
            &[0, STRIDE * h],
            &[STRIDE as i32, STRIDE as i32],
        )
        .expect("video meta");
    }
    buf
}

fn dmabuf_frame(luma: &[u8], w: usize, h: usize, i: u64) -> gst::Buffer {
    let len = STRIDE * h + STRIDE * h.div_ceil(2);
    let fd = memfd(len);
    let mut data = vec![128u8; len];
    for (y, row) in luma.chunks_exact(w).enumerate() {
        data[y * STRIDE..y * STRIDE + w].copy_from_slice(row);
        // Padding that must never be read as samples.
        data[y * STRIDE + w..(y + 1) * STRIDE].fill(0xee);
    }
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, &data).expect("write memfd");
    dmabuf_buffer(file.into(), len, w, h, i)
}

fn caps(w: usize, h: usize) -> gst::Caps {
    gst_video::VideoCapsBuilder::new()
        .features([gst_allocators::CAPS_FEATURE_MEMORY_DMABUF])
        .format(gst_video::VideoFormat::Nv12)
        .width(w as i32)
        .height(h as i32)
        .framerate(gst::Fraction::new(25, 1))
        .build()
}

/// Open descriptors of this process whose target (`readlink /proc/self/fd/N`) satisfies
/// `pred`: counts only the test's own memfds and pipes, not what the CUDA driver or GStreamer
/// open on first use.
fn open_fds(pred: impl Fn(&str) -> bool) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .filter(|t| pred(&t.to_string_lossy()))
                .count()
        })
        .unwrap_or(0)
}

fn is_test_memfd(target: &str) -> bool {
    target.contains("memfd:vmafcompare-test")
}

/// Builds `appsrc name=ref`, `appsrc name=dis` into `vmafcompare`, with the DMABuf caps.
fn appsrc_pipeline(
    backend: &str,
    w: usize,
    h: usize,
) -> (gst::Pipeline, gst_app::AppSrc, gst_app::AppSrc) {
    init();
    let desc = format!(
        "appsrc name=ref format=time ! cmp.reference appsrc name=dis format=time ! cmp.distorted \
         vmafcompare name=cmp backend={backend} ! appsink name=out sync=false"
    );
    let pipeline = gst::parse::launch(&desc)
        .expect("pipeline")
        .downcast::<gst::Pipeline>()
        .expect("a pipeline");
    let (r, d) = (
        appsrc(&pipeline, "ref", &caps(w, h)),
        appsrc(&pipeline, "dis", &caps(w, h)),
    );
    (pipeline, r, d)
}

#[test]
fn dmabuf_scores_equal_system_memory() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let p = reference_pairs().remove(0); // src01 160x90 8-bit, 48 frames
    let (w, h) = (p.width as usize, p.height as usize);
    let frame_len = w * h * 3 / 2;
    let read = |path: &std::path::Path| std::fs::read(path).expect("reference yuv");
    let (rdata, ddata) = (read(&p.reference), read(&p.distorted));

    // Baseline: the same files through system memory.
    let sys = run(
        &format!(
            "vmafcompare name=cmp backend=auto ! appsink name=out sync=false {} {}",
            raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
            raw_branch(&p.distorted, p.width, p.height, p.format, "distorted")
        ),
        Duration::from_secs(120),
    );
    assert!(sys.errors.is_empty(), "{:?}", sys.errors);
    assert_eq!(sys.frames.len(), p.frames);

    let fds_before = open_fds(is_test_memfd);
    FREED.store(0, Ordering::SeqCst);
    let out = {
        let (pipeline, rsrc, dsrc) = appsrc_pipeline("auto", w, h);
        for i in 0..p.frames {
            let luma = |d: &[u8]| d[i * frame_len..i * frame_len + w * h].to_vec();
            rsrc.push_buffer(dmabuf_frame(&luma(&rdata), w, h, i as u64))
                .expect("push reference");
            dsrc.push_buffer(dmabuf_frame(&luma(&ddata), w, h, i as u64))
                .expect("push distorted");
        }
        rsrc.end_of_stream().expect("eos");
        dsrc.end_of_stream().expect("eos");
        run_pipeline(&pipeline, Duration::from_secs(120))
    };
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert_eq!(out.frames.len(), p.frames);
    let mut max_diff = 0f64;
    for (a, b) in out.frames.iter().zip(&sys.frames) {
        assert_eq!(a.metrics.len(), b.metrics.len());
        for ((na, va), (nb, vb)) in a.metrics.iter().zip(&b.metrics) {
            assert_eq!(na, nb);
            max_diff = max_diff.max((va - vb).abs());
            assert_eq!(
                va.to_bits(),
                vb.to_bits(),
                "frame {} {na}: dmabuf {va} system {vb}",
                a.index
            );
        }
    }
    let summary = out.summary.expect("summary");
    println!(
        "DMABuf vs system memory, {} frames, backend {}: max |diff| {max_diff:e}; paths reference '{}', distorted '{}'",
        out.frames.len(),
        summary.backend,
        summary.reference_input,
        summary.distorted_input
    );
    for path in [&summary.reference_input, &summary.distorted_input] {
        if summary.backend == "cpu" {
            assert_eq!(path, "dmabuf-readback");
        } else {
            assert!(
                path == "dmabuf-readback" || path == "dmabuf-import",
                "{path}"
            );
        }
    }
    assert_eq!(
        FREED.load(Ordering::SeqCst),
        2 * p.frames,
        "every DMABuf memory freed"
    );
    assert_eq!(
        open_fds(is_test_memfd),
        fds_before,
        "every DMABuf descriptor closed"
    );
}

/// A DMABuf whose mapping fails (its descriptor is a pipe, which cannot be mmapped nor
/// imported): the element posts an error naming the pad and the failed map, and after the
/// pipeline is shut down the memories are freed and their descriptors closed.
#[test]
fn dmabuf_map_failure_leaks_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (w, h) = (160usize, 90usize);
    let len = STRIDE * h * 3 / 2;
    let mut ours = Vec::new();
    FREED.store(0, Ordering::SeqCst);
    let frames = 4u64;
    let out = {
        let (pipeline, rsrc, dsrc) = appsrc_pipeline("auto", w, h);
        for i in 0..frames {
            for src in [&rsrc, &dsrc] {
                let mut fds = [0; 2];
                // SAFETY: a new pipe; both ends are owned below.
                assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
                let (rd, wr) =
                    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
                drop(wr);
                let link = format!("/proc/self/fd/{}", fds[0]);
                ours.push(
                    std::fs::read_link(link)
                        .expect("pipe link")
                        .to_string_lossy()
                        .into_owned(),
                );
                let _ = src.push_buffer(dmabuf_buffer(rd, len, w, h, i));
            }
        }
        let _ = rsrc.end_of_stream();
        let _ = dsrc.end_of_stream();
        run_pipeline(&pipeline, Duration::from_secs(60))
    };
    println!("map failure: errors {:?}", out.errors);
    assert_eq!(out.errors.len(), 1, "one error: {:?}", out.errors);
    assert!(
        out.errors[0].contains("cannot map buffer") && out.errors[0].contains("reference"),
        "error names the pad and the map: {}",
        out.errors[0]
    );
    assert!(out.frames.is_empty());
    assert_eq!(
        FREED.load(Ordering::SeqCst),
        2 * frames as usize,
        "every memory freed"
    );
    let still_open = open_fds(|t| ours.iter().any(|o| o == t));
    assert_eq!(still_open, 0, "every descriptor closed");
}
