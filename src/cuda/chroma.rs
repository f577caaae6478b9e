//! Chroma on the GPU for the extra metrics that read it (`psnr_cb`/`psnr_cr`, SSIMULACRA2):
//! each frame's Cb and Cr components reach the device in their buffer's own layout (host rows
//! uploaded, CUDA memory read where it lies, other contexts copied), and `unpack_chroma`
//! (`kernels/frame.cu`) turns them into the packed 16-bit planes of a [`ChromaDev`].
//!
//! Only the rows and bytes that carry chroma move: a planar component's `width` samples per
//! row, an interleaved UV plane (NV12, P010) once for both components.

use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaFunction, CudaStream, DevicePtr, DevicePtrMut, PinnedHostSlice};

use super::context::{function, launch, param, GpuDevice};
use super::error::{CudaError, DriverResultExt};
use super::memory::{alloc_zeroed, DeviceAlloc};
use super::plane::{ChromaDev, DevPlane};
use super::staging::stage_rows;
use crate::video::frame::{ComponentInput, FeatureError, HostComponent, SampleLayout};

/// One chroma component in device memory, as `unpack_chroma` reads it (`struct Component` in
/// `kernels/frame.cu`, same layout: 40 bytes, 8-byte aligned).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct DevComponent {
    ptr: u64,
    pitch: i64,
    offset: u32,
    step: u32,
    wide: u32,
    down: u32,
    up: u32,
    mask: u32,
}

impl DevComponent {
    fn new(ptr: u64, pitch: usize, offset: usize, step: usize, layout: SampleLayout) -> Self {
        Self {
            ptr,
            pitch: pitch as i64,
            offset: offset as u32,
            step: step as u32,
            wide: u32::from(layout.bytes == 2),
            down: layout.down,
            up: layout.up,
            mask: u32::from(layout.mask()),
        }
    }
}

/// The staging one frame slot keeps for the chroma of one of its frames (reference or
/// distorted): pinned host rows and their device copy, each [`ChromaStaging::capacity`] bytes.
pub struct ChromaStaging {
    host: PinnedHostSlice<u8>,
    dev: DeviceAlloc<u8>,
}

impl ChromaStaging {
    /// Bytes for `width` x `height` chroma of two components at `sample_bytes`: two planar
    /// components, or one interleaved plane of both.
    pub fn capacity((width, height): (usize, usize), sample_bytes: usize) -> usize {
        2 * width * height * sample_bytes
    }

    /// Allocates the staging (pinned host memory and device memory, on `stream`).
    ///
    /// Errors: [`CudaError::OutOfMemory`], [`CudaError::Driver`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        size: (usize, usize),
        sample_bytes: usize,
    ) -> Result<Self, CudaError> {
        let bytes = Self::capacity(size, sample_bytes);
        // SAFETY: written (the rows staged) before each upload that reads it.
        let host = unsafe { dev.context().alloc_pinned_with_flags::<u8>(bytes, 0) }
            .allocating("cuMemHostAlloc(chroma staging)", bytes)?;
        let dev_mem = alloc_zeroed::<u8>(stream, bytes, "cuMemAlloc(chroma plane)")?;
        Ok(Self { host, dev: dev_mem })
    }

    /// Puts the two components of one frame where `unpack_chroma` can read them, enqueuing
    /// copies on `upload`. Host components are packed row by row into the staging (one copy
    /// per distinct plane: NV12's UV once) and uploaded; device components of `context` are
    /// read where they lie; device components of another context are copied peer to peer.
    ///
    /// The caller keeps device components' memory valid until the frame's kernels are done,
    /// and reuses this staging only after the previous upload from it completed.
    ///
    /// Returns the components' descriptors and the bytes copied (uploaded or peer-copied).
    ///
    /// Errors: [`CudaError::Geometry`] when the rows do not fit the staging;
    /// [`CudaError::Driver`] for a failed copy.
    fn place(
        &mut self,
        comps: &[ComponentInput<'_>; 2],
        context: usize,
        upload: &CudaStream,
    ) -> Result<([DevComponent; 2], usize), CudaError> {
        let base = self.dev.device_ptr(upload).0;
        let capacity = self.host.len();
        let mut used = 0usize;
        // Device offsets of the planes staged so far, keyed by their host address and stride.
        let mut staged: [(usize, usize, usize); 2] = [(0, 0, 0); 2];
        let mut n_staged = 0;
        let mut out = [DevComponent::default(); 2];
        for (k, comp) in comps.iter().enumerate() {
            out[k] = match comp {
                ComponentInput::Host(h) => {
                    let key = (h.data.as_ptr() as usize, h.stride);
                    let row = plane_row_bytes(comps, key);
                    let found = staged[..n_staged]
                        .iter()
                        .find(|s| (s.0, s.1) == key)
                        .map(|s| s.2);
                    let at = match found {
                        Some(at) => at,
                        None => {
                            let at = used;
                            let n = row * h.height;
                            if at + n > capacity {
                                return Err(too_big(h.width, h.height));
                            }
                            self.stage(h, row, at)?;
                            self.upload_range(upload, base, at, n)?;
                            used += n;
                            staged[n_staged] = (key.0, key.1, at);
                            n_staged += 1;
                            at
                        }
                    };
                    DevComponent::new(base + at as u64, row, h.offset, h.pixel_stride, h.layout)
                }
                ComponentInput::Device(d) if d.context == context => {
                    DevComponent::new(d.ptr, d.pitch, d.offset, d.pixel_stride, d.layout)
                }
                ComponentInput::Device(d) => {
                    // Another context: copy the rows that carry this component.
                    let row = d.row_bytes();
                    let at = used;
                    let n = row * d.height;
                    if at + n > capacity {
                        return Err(too_big(d.width, d.height));
                    }
                    peer_copy(
                        (d.ptr, d.context, d.pitch),
                        (base + at as u64, context, row),
                        (row, d.height),
                        upload,
                    )?;
                    used += n;
                    DevComponent::new(base + at as u64, row, d.offset, d.pixel_stride, d.layout)
                }
            };
        }
        Ok((out, used))
    }

    /// Packs `row` bytes of each of `h`'s rows into the staging at byte `at`, in parallel
    /// bands of rows on the staging pool (as the luma).
    fn stage(&mut self, h: &HostComponent<'_>, row: usize, at: usize) -> Result<(), CudaError> {
        let needed = (h.height - 1) * h.stride + row;
        if h.data.len() < needed {
            return Err(too_big(h.width, h.height));
        }
        let dst = self
            .host
            .as_mut_slice()
            .during("cuEventSynchronize(chroma staging)")?;
        let Some(dst) = dst.get_mut(at..at + row * h.height) else {
            return Err(too_big(h.width, h.height));
        };
        stage_rows(h.data, h.stride, row, h.height, dst);
        Ok(())
    }

    /// Uploads staging bytes `at..at + n` to the same offset of the device copy.
    fn upload_range(
        &self,
        upload: &CudaStream,
        base: u64,
        at: usize,
        n: usize,
    ) -> Result<(), CudaError> {
        let src = self
            .host
            .as_slice()
            .during("cuEventSynchronize(chroma staging)")?
            .get(at..at + n)
            .ok_or_else(|| too_big(0, 0))?;
        // SAFETY: the device copy holds `capacity >= at + n` bytes (checked by the caller);
        // the pinned source stays untouched until this slot's frame is collected, which
        // implies the upload completed.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(base + at as u64, src, upload.cu_stream())
        }
        .during("cuMemcpyHtoDAsync(chroma)")
    }
}

/// Bytes of each row of the host plane `key` (address, stride) that either component on it
/// reads: the larger of their [`HostComponent::row_bytes`].
fn plane_row_bytes(comps: &[ComponentInput<'_>; 2], key: (usize, usize)) -> usize {
    comps
        .iter()
        .filter_map(|c| match c {
            ComponentInput::Host(h) if (h.data.as_ptr() as usize, h.stride) == key => {
                Some(h.row_bytes())
            }
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

fn too_big(width: usize, height: usize) -> CudaError {
    CudaError::Geometry(FeatureError::WrongGeometry {
        feature: "chroma",
        expected_width: width,
        expected_height: height,
        expected_bpc: 16,
        width,
        height,
        bpc: 16,
    })
}

/// One pitched copy of `rows` rows of `row` bytes from `(ptr, context, pitch)` to `(ptr,
/// context, pitch)`, enqueued on `stream`.
///
/// Errors: [`CudaError::Driver`].
pub fn peer_copy(
    (src, src_ctx, src_pitch): (u64, usize, usize),
    (dst, dst_ctx, dst_pitch): (u64, usize, usize),
    (row, rows): (usize, usize),
    stream: &CudaStream,
) -> Result<(), CudaError> {
    let copy = sys::CUDA_MEMCPY3D_PEER {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: src,
        srcArray: std::ptr::null_mut(),
        srcContext: src_ctx as sys::CUcontext,
        srcPitch: src_pitch,
        srcHeight: rows,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst,
        dstArray: std::ptr::null_mut(),
        dstContext: dst_ctx as sys::CUcontext,
        dstPitch: dst_pitch,
        dstHeight: rows,
        WidthInBytes: row,
        Height: rows,
        Depth: 1,
    };
    // SAFETY: the caller guarantees `rows` rows of `row` bytes at both ends, alive until the
    // stream has run the copy.
    unsafe { sys::cuMemcpy3DPeerAsync(&copy, stream.cu_stream()) }
        .result()
        .during("cuMemcpy3DPeerAsync")
}

/// The unpack kernel and the packed chroma planes it writes, for the reference's and the
/// distorted frame's chroma size (they differ when one stream is scaled to the scoring size
/// afterwards). The backend keeps one per frame slot: the upload stream unpacks a frame while
/// the side streams still read the frames before it.
pub struct ChromaGpu {
    unpack: CudaFunction,
    /// Reference Cb, Cr (`sizes[0]`), distorted Cb, Cr (`sizes[1]`): packed `u16`.
    planes: [DeviceAlloc<u16>; 4],
    sizes: [(usize, usize); 2],
}

impl ChromaGpu {
    /// Loads the kernel and allocates the four packed planes: the reference's two of
    /// `sizes[0]` samples, the distorted frame's two of `sizes[1]`.
    ///
    /// Errors: [`CudaError::Driver`] (kernel lookup), [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        sizes: [(usize, usize); 2],
    ) -> Result<Self, CudaError> {
        let unpack = function(
            dev.modules().get("frame")?,
            "unpack_chroma",
            "cuModuleGetFunction(unpack_chroma)",
        )?;
        let (r, d) = (sizes[0].0 * sizes[0].1, sizes[1].0 * sizes[1].1);
        let what = "cuMemAlloc(packed chroma)";
        let planes = [
            alloc_zeroed::<u16>(stream, r, what)?,
            alloc_zeroed::<u16>(stream, r, what)?,
            alloc_zeroed::<u16>(stream, d, what)?,
            alloc_zeroed::<u16>(stream, d, what)?,
        ];
        Ok(Self {
            unpack,
            planes,
            sizes,
        })
    }

    /// The chroma sizes this was made for (reference, distorted).
    pub fn sizes(&self) -> [(usize, usize); 2] {
        self.sizes
    }

    /// Places one frame's components (`side` 0: the reference's, 1: the distorted frame's)
    /// through `staging` (see [`ChromaStaging`]), checking their size first. Returns them and
    /// the bytes copied to the device for them (0 for components read where they lie).
    ///
    /// Errors: [`CudaError::Geometry`] for components of another size; as the placement.
    pub fn place(
        &self,
        staging: &mut ChromaStaging,
        comps: &[ComponentInput<'_>; 2],
        side: usize,
        context: usize,
        upload: &CudaStream,
    ) -> Result<([PlacedComponent; 2], usize), CudaError> {
        let (width, height) = self.sizes[side.min(1)];
        for c in comps {
            if c.size() != (width, height) {
                let (w, h) = c.size();
                return Err(CudaError::Geometry(FeatureError::wrong_size(
                    "chroma",
                    (width, height, 16),
                    (w, h),
                )));
            }
        }
        let (placed, bytes) = staging.place(comps, context, upload)?;
        Ok((placed.map(PlacedComponent), bytes))
    }

    /// Enqueues `unpack_chroma` on `stream` for the placed reference and distorted
    /// components and returns the packed planes' descriptors: `width` x `height` is the
    /// reference's chroma size; the distorted planes are of `sizes()[1]` (equal unless the
    /// distorted stream is scaled next).
    ///
    /// Errors: [`CudaError::Driver`] for a failed launch.
    pub fn unpack(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: &[PlacedComponent; 2],
        distorted: &[PlacedComponent; 2],
    ) -> Result<ChromaDev, CudaError> {
        let [a, b, c, d] = &mut self.planes;
        let outs = [
            a.device_ptr_mut(stream).0,
            b.device_ptr_mut(stream).0,
            c.device_ptr_mut(stream).0,
            d.device_ptr_mut(stream).0,
        ];
        let comps = [
            reference[0].0,
            reference[1].0,
            distorted[0].0,
            distorted[1].0,
        ];
        if self.sizes[0] == self.sizes[1] {
            self.launch(stream, comps, outs, self.sizes[0], 4)?;
        } else {
            // One launch per frame, each over its own size (grid z = 2: the first two
            // components and outputs of the lists).
            for side in 0..2 {
                let c = [
                    comps[2 * side],
                    comps[2 * side + 1],
                    comps[2 * side],
                    comps[2 * side + 1],
                ];
                let o = [
                    outs[2 * side],
                    outs[2 * side + 1],
                    outs[2 * side],
                    outs[2 * side + 1],
                ];
                self.launch(stream, c, o, self.sizes[side], 2)?;
            }
        }
        let plane = |i: usize| {
            let w = self.sizes[i / 2].0;
            DevPlane::new(outs[i], w * 2, SampleLayout::RIGHT_ALIGNED_U16)
        };
        Ok(ChromaDev {
            reference: [plane(0), plane(1)],
            distorted: [plane(2), plane(3)],
            width: self.sizes[0].0,
            height: self.sizes[0].1,
        })
    }

    /// Enqueues `unpack_chroma` on `stream` for one frame's placed components (`side` 0:
    /// the reference's, into the reference planes; 1: the distorted frame's) and returns its
    /// packed Cb and Cr planes (`sizes()[side]`). A ladder unpacks its reference once this way
    /// and each rendition's frame into a `ChromaGpu` of its own.
    ///
    /// Errors: [`CudaError::Driver`] for a failed launch.
    pub fn unpack_one(
        &mut self,
        stream: &Arc<CudaStream>,
        side: usize,
        comps: &[PlacedComponent; 2],
    ) -> Result<[DevPlane; 2], CudaError> {
        let side = side.min(1);
        let [a, b, c, d] = &mut self.planes;
        let outs = if side == 0 {
            [a.device_ptr_mut(stream).0, b.device_ptr_mut(stream).0]
        } else {
            [c.device_ptr_mut(stream).0, d.device_ptr_mut(stream).0]
        };
        self.launch(
            stream,
            [comps[0].0, comps[1].0, comps[0].0, comps[1].0],
            [outs[0], outs[1], outs[0], outs[1]],
            self.sizes[side],
            2,
        )?;
        let w = self.sizes[side].0;
        Ok(outs.map(|o| DevPlane::new(o, w * 2, SampleLayout::RIGHT_ALIGNED_U16)))
    }

    /// One `unpack_chroma` launch over `planes` (1..=4) of the lists, `width` x `height` each.
    fn launch(
        &self,
        stream: &Arc<CudaStream>,
        mut four: [DevComponent; 4],
        mut outs: [u64; 4],
        (width, height): (usize, usize),
        planes: u32,
    ) -> Result<(), CudaError> {
        let mut w = width as i32;
        let mut h = height as i32;
        let grid = (width.div_ceil(32) as u32, height.div_ceil(8) as u32, planes);
        // SAFETY: parameters match unpack_chroma(Four, Outputs, i32, i32) (4 x 40-byte
        // components, 4 pointers); each of the first `planes` outputs holds w * h samples;
        // each of those components' rows are valid device memory for w samples at its step
        // (placed above).
        unsafe {
            launch(
                stream,
                &self.unpack,
                grid,
                (32, 8, 1),
                &mut [
                    param(&mut four),
                    param(&mut outs),
                    param(&mut w),
                    param(&mut h),
                ],
                "cuLaunchKernel(unpack_chroma)",
            )
        }
    }
}

/// A component where `unpack_chroma` reads it (from [`ChromaGpu::place`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct PlacedComponent(DevComponent);
