//! The CUDA backend's input placement: each stream's scaler on the GPU, host planes staged in
//! pinned memory and uploaded (or device planes read in place or copied from another
//! context), scaled to the scoring size, and the backend's error conversions.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr, PinnedHostSlice};

use crate::cuda::chroma::{peer_copy, ChromaGpu};
use crate::cuda::context::GpuDevice;
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::memory::DeviceAlloc;
use crate::cuda::plane::{ChromaDev, DevPlane};
use crate::cuda::staging::{in_bands, stage_rows};
use crate::engine::error::EngineError;
use crate::engine::scale::cuda::CudaPlaneScaler;
use crate::engine::scale::StreamScaler;
use crate::features::Geometry;
use crate::video::frame::{DeviceLuma, FeatureError, HostLuma, LumaInput, LumaPlane, SampleLayout};

use super::cuda_slots::{Hold, StreamBufs};

/// One stream's scalers on the GPU: luma, and chroma when a metric reads it.
pub(super) struct GpuScaler {
    pub(super) luma: CudaPlaneScaler,
    pub(super) chroma: Option<CudaPlaneScaler>,
}

impl GpuScaler {
    /// `s`'s luma scaler, and its chroma scaler when a metric reads chroma
    /// (`chroma_size`), for output planes of `geometry`.
    ///
    /// Errors: [`CudaError::Geometry`] for a scaler of another output size than
    /// `geometry`'s; as [`CudaPlaneScaler::new`].
    pub(super) fn new(
        dev: &GpuDevice,
        compute: &Arc<CudaStream>,
        s: &StreamScaler,
        geometry: &Geometry,
        chroma_size: Option<(usize, usize)>,
    ) -> Result<Self, CudaError> {
        let (width, height, bpc) = geometry.triple();
        if s.luma.dst() != (width, height) {
            let (w, h) = s.luma.dst();
            return Err(CudaError::Geometry(FeatureError::wrong_size(
                "scale",
                (width, height, bpc),
                (w, h),
            )));
        }
        let chroma = match (s.chroma.as_ref(), chroma_size) {
            (Some(c), Some(_)) => Some(CudaPlaneScaler::new(dev, compute, c, bpc)?),
            _ => None,
        };
        Ok(Self {
            luma: CudaPlaneScaler::new(dev, compute, &s.luma, bpc)?,
            chroma,
        })
    }
}

/// An internal inconsistency of the backend's buffers (a bug, reported rather than a panic).
pub(super) fn internal(what: &str) -> CudaError {
    CudaError::Driver {
        call: "CudaBackend",
        code: format!("internal: {what}"),
    }
}

pub(super) fn engine_err(e: CudaError) -> EngineError {
    match e {
        CudaError::Geometry(f) => EngineError::Feature(f),
        other => EngineError::Backend {
            backend: "cuda",
            message: other.to_string(),
        },
    }
}

/// One rendition's share of a ladder slot, handed to the job that places it: its staging and
/// device buffers, its scaler to the scoring size, its chroma unpacking.
pub(super) struct RenditionParts<'a> {
    pub(super) bufs: &'a mut StreamBufs,
    pub(super) scaler: &'a mut Option<GpuScaler>,
    pub(super) unpacked: Option<&'a mut ChromaGpu>,
}

/// What placing one rendition gave: its luma at the scoring size (with the bytes copied for
/// luma and chroma, and the buffer to hold), its chroma with the reference's.
pub(super) struct PlacedRendition {
    pub(super) placed: Placed,
    pub(super) chroma: Option<ChromaDev>,
}

/// `plane` at the scoring size: itself, or (a stream with a scaler) the stream's scaled
/// plane in `bufs`, written by the scaler's kernels on `upload`.
pub(super) fn scale_luma_in(
    bufs: &mut StreamBufs,
    scaler: &mut Option<GpuScaler>,
    upload: &Arc<CudaStream>,
    plane: DevPlane,
) -> Result<DevPlane, CudaError> {
    let (Some(scaler), Some(out)) = (scaler.as_mut(), bufs.scaled.as_mut()) else {
        return Ok(plane);
    };
    let n = scaler.luma.output_len();
    scaler
        .luma
        .enqueue(upload, &plane, &mut out.slice_mut(0..n))
}

/// What [`place_in`] gave: the plane's descriptor, the bytes copied to the device, and the
/// input buffer to keep until its frame is collected.
pub(super) struct Placed {
    pub(super) plane: DevPlane,
    pub(super) bytes: u64,
    pub(super) hold: Option<Hold>,
}

/// Puts one input plane where the kernels can read it, in one stream's buffers of a slot
/// (`bufs`), with the backend's
/// upload stream, `CUcontext` and bits per sample (`ctx`): host rows through the pinned
/// staging into the device plane, device memory of this context in place (held until frame
/// `release_after` is collected), other device memory copied (held until frame `index`).
/// Free of the backend, so that a ladder's renditions can be placed beside each other.
pub(super) fn place_in(
    bufs: &mut StreamBufs,
    input: LumaInput<'_>,
    (upload_stream, context, bpc): (&Arc<CudaStream>, usize, u32),
    index: u64,
    release_after: u64,
) -> Result<Placed, CudaError> {
    let (host, dev) = (&mut bufs.host, &mut bufs.dev);
    let dev_ptr = dev.device_ptr(upload_stream).0;
    let upload = |bytes: usize, host: &PinnedHostSlice<u8>| -> Result<(), CudaError> {
        let src = host
            .as_slice()
            .during("cuEventSynchronize(staging)")?
            .get(..bytes)
            // `ok_or_else`: the error text is made only on failure (an eager `ok_or` put
            // a 30-byte allocation in every upload; tests/gpu_lessons.rs found it).
            .ok_or_else(|| CudaError::Driver {
                call: "cuMemcpyHtoDAsync(luma)",
                code: "staging smaller than the plane".to_owned(),
            })?;
        // SAFETY: `dev` holds width * height * sample_bytes >= bytes bytes (`check`); the
        // pinned source lives in the slot until the upload is complete (the slot is reused
        // only after its frame was collected, which implies the upload event passed).
        unsafe {
            cudarc::driver::result::memcpy_htod_async(dev_ptr, src, upload_stream.cu_stream())
        }
        .during("cuMemcpyHtoDAsync(luma)")
    };
    let placed = |plane, bytes: usize, hold| Placed {
        plane,
        bytes: bytes as u64,
        hold,
    };
    match input {
        LumaInput::Packed(p) => {
            let dst = host.as_mut_slice().during("cuEventSynchronize(staging)")?;
            let bytes = sample_bytes(bpc);
            let n = stage_packed(&p, dst, bytes);
            upload(n, host)?;
            let layout = if bytes == 1 {
                SampleLayout {
                    bytes: 1,
                    down: 0,
                    depth: 8,
                    up: 0,
                }
            } else {
                SampleLayout::RIGHT_ALIGNED_U16
            };
            Ok(placed(
                DevPlane::new(dev_ptr, bytes * p.width, layout),
                n,
                None,
            ))
        }
        LumaInput::Host(h) => {
            let dst = host.as_mut_slice().during("cuEventSynchronize(staging)")?;
            let n = stage_host(&h, dst);
            upload(n, host)?;
            Ok(placed(
                DevPlane::new(dev_ptr, h.width * h.layout.bytes, h.layout),
                n,
                None,
            ))
        }
        LumaInput::Device(d) => {
            let DeviceLuma {
                ptr,
                pitch,
                width,
                height,
                layout,
                context: from,
                hold,
            } = d;
            let row = width * layout.bytes;
            let aligned = layout.bytes == 1 || (ptr % 2 == 0 && pitch % 2 == 0);
            if from == context && aligned && pitch >= row {
                let hold = Hold {
                    release_after,
                    _keep: hold,
                };
                return Ok(placed(DevPlane::new(ptr, pitch, layout), 0, Some(hold)));
            }
            // Another context (or device): one pitched copy of the valid rows. The
            // destination holds width * height * sample_bytes >= row * height bytes
            // (`check`); `hold` keeps the source alive until this frame is collected.
            peer_copy(
                (ptr, from, pitch),
                (dev_ptr, context, row),
                (row, height),
                upload_stream,
            )?;
            let hold = Hold {
                release_after: index,
                _keep: hold,
            };
            Ok(placed(
                DevPlane::new(dev_ptr, row, layout),
                row * height,
                Some(hold),
            ))
        }
    }
}

/// A scaled stream's chroma `planes` through its chroma scaler (if any) into `outs`, on
/// `upload`; `planes` then describe the scaled planes.
pub(super) fn scale_chroma(
    scaler: &mut Option<GpuScaler>,
    outs: &mut Option<[DeviceAlloc<u16>; 2]>,
    upload: &CudaStream,
    planes: &mut [DevPlane; 2],
) -> Result<(), CudaError> {
    let (Some(sc), Some(outs)) = (
        scaler.as_mut().and_then(|g| g.chroma.as_mut()),
        outs.as_mut(),
    ) else {
        return Ok(());
    };
    for (plane, out) in planes.iter_mut().zip(outs.iter_mut()) {
        let n = sc.output_len();
        *plane = sc.enqueue(upload, plane, &mut out.slice_mut(0..n))?;
    }
    Ok(())
}

/// Bytes per sample of the slots' planes: 1 up to 8 bits, else 2.
pub(super) fn sample_bytes(bpc: u32) -> usize {
    if bpc > 8 {
        2
    } else {
        1
    }
}

/// Copies the valid samples of a packed `u16` plane's rows into `dst` (packed, `bytes`
/// per sample: 2 little-endian, or 1 for planes of at most 8 bits, whose samples are below
/// 256 by [`LumaPlane`]'s contract), in parallel bands of rows. Returns the bytes written.
pub(super) fn stage_packed(p: &LumaPlane, dst: &mut [u8], bytes: usize) -> usize {
    let w = p.width;
    in_bands(dst, bytes * w, p.height, |first, band, row| {
        for (i, out) in band.chunks_exact_mut(row).enumerate() {
            let start = (first + i) * p.stride;
            let Some(src) = p.data.get(start..start + w) else {
                continue;
            };
            if bytes == 1 {
                for (d, v) in out.iter_mut().zip(src) {
                    *d = *v as u8;
                }
            } else {
                for (d, v) in out.chunks_exact_mut(2).zip(src) {
                    d.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
    })
}

/// Copies the valid bytes of each row of `h` into `dst` (packed), in parallel bands of
/// rows: one thread copies at ~6-10 GB/s, short of what the upload takes (issue 6's
/// measurements). Returns the bytes written.
pub(super) fn stage_host(h: &HostLuma, dst: &mut [u8]) -> usize {
    stage_rows(h.data, h.stride, h.width * h.layout.bytes, h.height, dst)
}
