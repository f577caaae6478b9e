//! The CUDA half of scaling (`kernels/scale.cu`): a plane in device memory through a
//! [`PlaneScaler`], with swscale's integer arithmetic, equal sample for sample to the CPU half
//! ([`super::cpu::scale_plane`]).
//!
//! [`CudaPlaneScaler`] is made once per caps: it uploads the two [`FilterBank`]s' tables and
//! allocates the 15-bit intermediate; each frame is then two launches and no allocation. The
//! output plane belongs to the caller (one per frame slot, say), sized by
//! [`CudaPlaneScaler::output_len`]; [`CudaPlaneScaler::alloc_output`] makes one.
//!
//! Source: FFmpeg libswscale/swscale.c `hScale8To15_c` / `hScale16To15_c` and
//! libswscale/output.c `yuv2planeX_8_c` / `yuv2planeX_10_c_template`; oracle:
//! [`super::cpu::scale_plane`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut};

use super::range::RangeMap;
use super::{h_shift, FilterBank, PlaneScaler};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::CudaError;
use crate::cuda::memory::{alloc_copy, alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::{check_size, DevPlane};
use crate::video::frame::{FeatureError, SampleLayout};

/// Block shape of both kernels (32 x 8 threads).
const BLOCK: (u32, u32, u32) = (32, 8, 1);
/// Rows of the intermediate each `scale_h` thread computes (`ROWS` in `kernels/scale.cu`).
const ROWS: usize = 4;
/// Output columns each `scale_v` thread computes (`COLS` in `kernels/scale.cu`).
const COLS: usize = 4;

/// Name used in geometry errors.
const FEATURE: &str = "scale";

/// Bit depths the 15-bit intermediate path takes (as [`super::cpu::scale_plane`]).
const BPC: std::ops::RangeInclusive<u32> = 8..=14;

/// One axis's filter in device memory: `pos` (`dst` words) and `coeff` (`dst * taps`).
struct DevBank {
    pos: DeviceAlloc<i32>,
    coeff: DeviceAlloc<i16>,
    taps: usize,
}

impl DevBank {
    /// Checks that `bank`'s tables keep every kernel read inside the plane (its fields are
    /// public, so they may disagree) and uploads them on `stream`.
    fn upload(
        stream: &Arc<CudaStream>,
        bank: &FilterBank,
        what: (&'static str, &'static str),
    ) -> Result<Self, CudaError> {
        let consistent = bank.src >= 1
            && bank.dst >= 1
            && (1..256).contains(&bank.taps)
            && bank.pos.len() == bank.dst
            && bank.coeffs.len() == bank.dst * bank.taps
            && bank.pos.iter().all(|&p| p >= 0 && (p as usize) < bank.src);
        if !consistent {
            return Err(CudaError::Driver {
                call: "CudaPlaneScaler::new(filter tables)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        let pos = alloc_copy(stream, &bank.pos, what.0)?;
        let coeff = alloc_copy(stream, &bank.coeffs, what.1)?;
        Ok(Self {
            pos,
            coeff,
            taps: bank.taps,
        })
    }
}

/// A [`PlaneScaler`] on the GPU: its filter tables uploaded, the kernels looked up and the
/// intermediate allocated, for planes of one size and depth. Owns all of it (freed on drop;
/// whoever drops it makes sure no queued launch still uses it, as for every
/// [`DeviceAlloc`]).
pub struct CudaPlaneScaler {
    h_fn: CudaFunction,
    v_fn: CudaFunction,
    h: DevBank,
    v: DevBank,
    /// The horizontal pass's output: `dst_w * src_h` 15-bit values, packed.
    tmp: DeviceAlloc<i16>,
    src: (usize, usize),
    dst: (usize, usize),
    bpc: u32,
    /// The colour range conversion applied to the intermediate, if any (the CPU half's).
    range: Option<RangeMap>,
}

impl std::fmt::Debug for CudaPlaneScaler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaPlaneScaler")
            .field("src", &self.src)
            .field("dst", &self.dst)
            .field("taps", &(self.h.taps, self.v.taps))
            .field("bpc", &self.bpc)
            .finish_non_exhaustive()
    }
}

impl CudaPlaneScaler {
    /// Loads the `scale` kernels, uploads `scaler`'s filter tables and allocates the
    /// intermediate (`dst_w * src_h` `i16`, `2 * dst_w * src_h` bytes) on `stream`, for
    /// planes of `scaler.src()` samples at the scoring depth `bpc` (the depth
    /// [`DevPlane`]'s `sample` gives, after its `down` / `mask` / `up` shifts) scaled to
    /// `scaler.dst()` samples of the same depth.
    ///
    /// Errors: [`CudaError::Geometry`] for a `bpc` outside `8..=14` (swscale's 15-bit
    /// intermediate path), a side above [`crate::cuda::plane::MAX_SIDE`] or an intermediate
    /// of 2^32 samples or more (`dst_w * src_h`);
    /// [`CudaError::Driver`] for filter tables that disagree with their sizes (a
    /// [`FilterBank`] not made by [`FilterBank::new`]) or a failed kernel lookup or upload;
    /// [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        scaler: &PlaneScaler,
        bpc: u32,
    ) -> Result<Self, CudaError> {
        let src = scaler.src();
        let dst = scaler.dst();
        check_size(FEATURE, (src.0, src.1, bpc), 1)?;
        check_size(FEATURE, (dst.0, dst.1, bpc), 1)?;
        if !BPC.contains(&bpc) {
            return Err(CudaError::Geometry(FeatureError::WrongGeometry {
                feature: FEATURE,
                expected_width: src.0,
                expected_height: src.1,
                expected_bpc: *BPC.end(),
                width: src.0,
                height: src.1,
                bpc,
            }));
        }
        // `scale_v` indexes the intermediate with 32-bit offsets.
        if dst.0.saturating_mul(src.1) > u32::MAX as usize {
            return Err(CudaError::Geometry(FeatureError::wrong_size(
                FEATURE,
                (u32::MAX as usize / src.1, src.1, bpc),
                (dst.0, src.1),
            )));
        }
        // The colour range conversion between the passes (none, or the CPU half's map).
        let range = scaler.range_map(bpc).unwrap_or(None);
        let m = dev.modules().get("scale")?;
        let h_fn = function(m, "scale_h", "cuModuleGetFunction(scale_h)")?;
        let v_fn = function(m, "scale_v", "cuModuleGetFunction(scale_v)")?;
        let h = DevBank::upload(
            stream,
            &scaler.h,
            ("cuMemAlloc(scale h positions)", "cuMemAlloc(scale h taps)"),
        )?;
        let v = DevBank::upload(
            stream,
            &scaler.v,
            ("cuMemAlloc(scale v positions)", "cuMemAlloc(scale v taps)"),
        )?;
        let tmp = alloc_zeroed::<i16>(stream, dst.0 * src.1, "cuMemAlloc(scale intermediate)")?;
        Ok(Self {
            h_fn,
            v_fn,
            h,
            v,
            tmp,
            src,
            dst,
            bpc,
            range,
        })
    }

    /// Source size (width, height) in samples.
    pub fn src(&self) -> (usize, usize) {
        self.src
    }

    /// Output size (width, height) in samples.
    pub fn dst(&self) -> (usize, usize) {
        self.dst
    }

    /// The scoring depth the scaler was made for, in bits.
    pub fn bpc(&self) -> u32 {
        self.bpc
    }

    /// Samples of one output plane: `dst_w * dst_h` `u16`.
    pub fn output_len(&self) -> usize {
        self.dst.0 * self.dst.1
    }

    /// Bytes of one output plane: `2 * dst_w * dst_h`.
    pub fn output_bytes(&self) -> usize {
        self.output_len() * std::mem::size_of::<u16>()
    }

    /// Allocates one output plane ([`CudaPlaneScaler::output_len`] samples, zeroed on
    /// `stream`) for [`CudaPlaneScaler::enqueue`].
    ///
    /// Errors: [`CudaError::OutOfMemory`], [`CudaError::Driver`] (as
    /// [`crate::cuda::memory::alloc_zeroed`]).
    pub fn alloc_output(&self, stream: &Arc<CudaStream>) -> Result<DeviceAlloc<u16>, CudaError> {
        alloc_zeroed::<u16>(stream, self.output_len(), "cuMemAlloc(scaled plane)")
    }

    /// Enqueues on `stream` the scaling of `src` (a plane of [`CudaPlaneScaler::src`]
    /// samples, see [`DevPlane`]'s contract, whose samples are at the scaler's `bpc` once
    /// shifted) into `out`: packed right-aligned `u16`, `dst_w` samples per row, `dst_h`
    /// rows, `bpc` bits. Two launches (`scale_h`, grid `ceil(dst_w / 32)` x `ceil(src_h /
    /// 32)`; `scale_v`, grid `ceil(dst_w / 128)` x `ceil(dst_h / 8)`), no host
    /// synchronisation, no allocation. Work queued after it on `stream` sees the output.
    ///
    /// Returns the descriptor of the output plane (pitch `2 * dst_w` bytes, layout
    /// [`SampleLayout::RIGHT_ALIGNED_U16`]), to hand to the feature kernels.
    ///
    /// Errors: [`CudaError::Driver`] for an `out` shorter than
    /// [`CudaPlaneScaler::output_len`] or a failed launch.
    pub fn enqueue(
        &mut self,
        stream: &CudaStream,
        src: &DevPlane,
        out: &mut CudaViewMut<u16>,
    ) -> Result<DevPlane, CudaError> {
        if out.len() < self.output_len() {
            return Err(CudaError::Driver {
                call: "CudaPlaneScaler::enqueue(output length)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        let out_ptr = out.device_ptr_mut(stream).0;
        // SAFETY: `out` holds at least `output_len` samples (checked above) and is borrowed
        // for the call; the caller keeps it alive until the stream has run, as every
        // buffer a queued kernel uses.
        unsafe { self.enqueue_to(stream, src, out_ptr) }
    }

    /// [`CudaPlaneScaler::enqueue`] into the output plane at device address `out_ptr`
    /// (`CUdeviceptr` in `stream`'s context), for a caller that keeps its outputs as raw
    /// pointers (part of a larger buffer, say).
    ///
    /// # Safety
    /// `out_ptr` must point at [`CudaPlaneScaler::output_bytes`] writable bytes, 2-byte
    /// aligned, that no other queued work uses concurrently and that stay allocated until
    /// the launches have run.
    ///
    /// Errors: [`CudaError::Driver`] for a null `out_ptr` or a failed launch.
    pub unsafe fn enqueue_to(
        &mut self,
        stream: &CudaStream,
        src: &DevPlane,
        out_ptr: u64,
    ) -> Result<DevPlane, CudaError> {
        if out_ptr == 0 || !out_ptr.is_multiple_of(2) {
            return Err(CudaError::Driver {
                call: "CudaPlaneScaler::enqueue(output pointer)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        let (sw, sh) = self.src;
        let (dw, dh) = self.dst;
        // Sizes are at most MAX_SIDE (2^16, checked in `new`): they fit i32 and the grids.
        let mut plane = *src;
        let mut p_hpos = self.h.pos.device_ptr(stream).0;
        let mut p_hcoeff = self.h.coeff.device_ptr(stream).0;
        let mut h_taps = self.h.taps as i32;
        let mut src_w = sw as i32;
        let mut src_h = sh as i32;
        let mut dst_w = dw as i32;
        let mut dst_h = dh as i32;
        let mut shift = h_shift(self.bpc) as i32;
        // 0: no conversion; 1: the map; 2: the map, clipped at 32767 (towards full range).
        let (mut r_coeff, mut r_offset, mut r_mode) = match self.range {
            None => (0i32, 0i32, 0i32),
            Some(m) => (m.coeff, m.offset, if m.clip { 2 } else { 1 }),
        };
        let mut p_tmp = self.tmp.device_ptr_mut(stream).0;
        let mut p_vpos = self.v.pos.device_ptr(stream).0;
        let mut p_vcoeff = self.v.coeff.device_ptr(stream).0;
        let mut v_taps = self.v.taps as i32;
        let mut bpc = self.bpc as i32;
        let mut p_out = out_ptr;
        let blocks = |w: usize, h: usize| {
            (
                w.div_ceil(BLOCK.0 as usize) as u32,
                h.div_ceil(BLOCK.1 as usize) as u32,
                1,
            )
        };
        // SAFETY: scale_h(Plane, const i32*, const i16*, i32, i32, i32, i32, i32, i32, i32,
        // i32, i16*):
        // `src` holds src_w x src_h samples (the caller's contract); the tables hold dst_w
        // positions in 0..src_w and dst_w * taps coefficients (checked in `new`), and the
        // kernel reads at most src_w - pos taps; `tmp` holds dst_w * src_h values. All stay
        // live until the stream has run (the owner synchronises before dropping).
        unsafe {
            launch(
                stream,
                &self.h_fn,
                blocks(dw, sh.div_ceil(ROWS)),
                BLOCK,
                &mut [
                    param(&mut plane),
                    param(&mut p_hpos),
                    param(&mut p_hcoeff),
                    param(&mut h_taps),
                    param(&mut src_w),
                    param(&mut src_h),
                    param(&mut dst_w),
                    param(&mut shift),
                    param(&mut r_coeff),
                    param(&mut r_offset),
                    param(&mut r_mode),
                    param(&mut p_tmp),
                ],
                "cuLaunchKernel(scale_h)",
            )?;
        }
        // SAFETY: scale_v(const i16*, const i32*, const i16*, i32, i32, i32, i32, i32, u16*):
        // `tmp` holds the dst_w x src_h intermediate written above (same stream); the
        // tables hold dst_h positions in 0..src_h and dst_h * taps coefficients, the kernel
        // reads at most src_h - pos rows; `out_ptr` holds dst_w * dst_h samples (the
        // caller's contract).
        unsafe {
            launch(
                stream,
                &self.v_fn,
                blocks(dw.div_ceil(COLS), dh),
                BLOCK,
                &mut [
                    param(&mut p_tmp),
                    param(&mut p_vpos),
                    param(&mut p_vcoeff),
                    param(&mut v_taps),
                    param(&mut src_h),
                    param(&mut dst_w),
                    param(&mut dst_h),
                    param(&mut bpc),
                    param(&mut p_out),
                ],
                "cuLaunchKernel(scale_v)",
            )?;
        }
        Ok(DevPlane::new(
            out_ptr,
            dw * 2,
            SampleLayout::RIGHT_ALIGNED_U16,
        ))
    }
}
