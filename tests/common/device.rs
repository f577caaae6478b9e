//! Test planes in device memory: one plane of samples uploaded in one of the layouts the
//! kernels read (bytes, packed or pitched right-aligned `u16`), with padding filled with
//! garbage so a kernel that reads past a row is caught.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr};
use gstvmafcompare::cuda::memory::{alloc_copy, DeviceAlloc};
use gstvmafcompare::cuda::DevPlane;
use gstvmafcompare::engine::frame::SampleLayout;

/// How a test plane lies in device memory.
#[derive(Clone, Copy, Debug)]
pub enum Layout {
    /// 1-byte samples (8-bit input), `pad` bytes after each row.
    U8 { pad: usize },
    /// Packed right-aligned `u16` (`DevPlane::packed_u16`).
    U16Packed,
    /// Right-aligned `u16`, `pad` samples after each row.
    U16Pitched { pad: usize },
}

/// A device copy of a plane (held, never read, until the kernels have run).
#[allow(dead_code)]
pub enum Upload {
    /// [`Layout::U8`].
    Bytes(DeviceAlloc<u8>),
    /// [`Layout::U16Packed`], [`Layout::U16Pitched`].
    Words(DeviceAlloc<u16>),
}

/// Uploads the `w` x `h` `samples` in `layout`; returns the buffer (to keep alive while the
/// kernels read it) and its descriptor. Panics when an upload fails (a test helper).
pub fn upload(
    stream: &Arc<CudaStream>,
    samples: &[u16],
    w: usize,
    h: usize,
    layout: Layout,
) -> (Upload, DevPlane) {
    match layout {
        Layout::U8 { pad } => {
            let pitch = w + pad;
            let mut host = vec![0xa5u8; pitch * h];
            for (dst, src) in host.chunks_exact_mut(pitch).zip(samples.chunks_exact(w)) {
                for (d, &s) in dst.iter_mut().zip(src) {
                    *d = u8::try_from(s).expect("8-bit sample");
                }
            }
            let buf = alloc_copy(stream, &host[..], "test upload").expect("upload");
            let layout = SampleLayout {
                bytes: 1,
                down: 0,
                depth: 8,
                up: 0,
            };
            let plane = DevPlane::new(buf.device_ptr(stream).0, pitch, layout);
            (Upload::Bytes(buf), plane)
        }
        Layout::U16Packed => {
            let buf = alloc_copy(stream, samples, "test upload").expect("upload");
            let plane = DevPlane::packed_u16(&buf, w, stream);
            (Upload::Words(buf), plane)
        }
        Layout::U16Pitched { pad } => {
            let pitch = w + pad;
            let mut host = vec![0xffffu16; pitch * h];
            for (dst, src) in host.chunks_exact_mut(pitch).zip(samples.chunks_exact(w)) {
                dst[..w].copy_from_slice(src);
            }
            let buf = alloc_copy(stream, &host[..], "test upload").expect("upload");
            let plane = DevPlane::new(
                buf.device_ptr(stream).0,
                pitch * 2,
                SampleLayout::RIGHT_ALIGNED_U16,
            );
            (Upload::Words(buf), plane)
        }
    }
}
