//! Host side of `kernels/psnr.cu`: libvmaf's integer PSNR (`psnr_y`, `psnr_cb`, `psnr_cr`) on
//! the GPU.
//!
//! The kernels compute each plane's sum of squared errors as an integer (libvmaf's own
//! accumulation, modulo 2^32 per row at 8 bits); [`PsnrGpu::scores`] turns the sums into dB
//! with the CPU's formula ([`super::psnr_from_sse`]), so the scores are
//! bit-identical to [`super::cpu::psnr`].
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_psnr.c; oracle:
//! [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtrMut};

use super::params::{libvmaf_chroma_size, psnr_from_sse};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::CudaError;
use crate::cuda::memory::{alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::{check_size, ChromaDev, DevPlane};
use crate::video::frame::FeatureError;

/// Block shape of both kernels; `psnr_sse_rows` gives one row to each of its 8 warps.
const BLOCK: (u32, u32, u32) = (32, 8, 1);
const ROWS_PER_BLOCK: usize = 8;

/// The planes of one frame pair as `psnr_sse_rows` takes them (`struct PsnrPlanes` in
/// `kernels/psnr.cu`, same layout: 216 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct PsnrPlanes {
    reference: [DevPlane; 3],
    distorted: [DevPlane; 3],
    width: [i32; 3],
    height: [i32; 3],
}

const _: () = assert!(std::mem::size_of::<PsnrPlanes>() == 216);

/// The PSNR kernels and their per-block scratch for one geometry.
pub struct PsnrGpu {
    rows: CudaFunction,
    total: CudaFunction,
    /// Per-block sums of squared errors: `3 * blocks` words, plane-major.
    partial: DeviceAlloc<u64>,
    /// Blocks per plane of `psnr_sse_rows`: `ceil(height / 8)`.
    blocks: usize,
    width: usize,
    height: usize,
    bpc: u32,
}

impl PsnrGpu {
    /// `u64` words [`PsnrGpu::enqueue`] writes per frame: the sums of squared errors of Y, Cb
    /// and Cr (plain unsigned integers; Cb and Cr are 0 for a frame without chroma).
    pub const RESULT_WORDS: usize = 3;

    /// Loads the kernels and allocates the scratch (on `stream`) for `width` x `height` luma
    /// planes of `bpc` bits (`8..=16`; 8 selects libvmaf's 8-bit accumulation). Chroma planes
    /// may be at most that size.
    ///
    /// Errors: [`CudaError::Geometry`] for a zero size, a side above 65536 or a `bpc` outside
    /// `8..=16`, [`CudaError::Driver`] (kernel lookup),
    /// [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        bpc: u32,
    ) -> Result<Self, CudaError> {
        check_size("psnr", (width, height, bpc), 1)?;
        let m = dev.modules().get("psnr")?;
        let rows = function(m, "psnr_sse_rows", "cuModuleGetFunction(psnr_sse_rows)")?;
        let total = function(m, "psnr_sse_total", "cuModuleGetFunction(psnr_sse_total)")?;
        let blocks = height.div_ceil(ROWS_PER_BLOCK);
        let partial = alloc_zeroed::<u64>(stream, 3 * blocks, "cuMemAlloc(psnr block sums)")?;
        Ok(Self {
            rows,
            total,
            partial,
            blocks,
            width,
            height,
            bpc,
        })
    }

    /// Enqueues on `stream` the sums of squared errors of `distorted` against `reference`
    /// (luma, `width` x `height` planes, see [`DevPlane`]'s contract) and, when `chroma` is
    /// given, of its Cb and Cr planes, into `out[0..3]` (all three words overwritten; no
    /// zeroing needed, no host synchronisation). Two launches: `psnr_sse_rows` (grid
    /// `ceil(height / 8)` x planes) and `psnr_sse_total` (one block).
    ///
    /// Errors: [`CudaError::Geometry`] for chroma planes larger than the luma plane,
    /// [`CudaError::Driver`] for an `out` shorter than [`PsnrGpu::RESULT_WORDS`] or a failed
    /// launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: DevPlane,
        chroma: Option<&ChromaDev>,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        if out.len() < Self::RESULT_WORDS {
            return Err(CudaError::Driver {
                call: "psnr enqueue(output words)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        let mut planes = PsnrPlanes {
            reference: [reference; 3],
            distorted: [distorted; 3],
            width: [self.width as i32; 3],
            height: [self.height as i32; 3],
        };
        let mut count = 1i32;
        if let Some(c) = chroma {
            if c.width > self.width || c.height > self.height || c.width == 0 || c.height == 0 {
                return Err(CudaError::Geometry(FeatureError::wrong_size(
                    "psnr",
                    (self.width, self.height, self.bpc),
                    (c.width, c.height),
                )));
            }
            // libvmaf leaves out the last column/row of odd-sized subsampled planes.
            let (width, height) =
                libvmaf_chroma_size((self.width, self.height), (c.width, c.height));
            for i in 0..2 {
                planes.reference[i + 1] = c.reference[i];
                planes.distorted[i + 1] = c.distorted[i];
                planes.width[i + 1] = width as i32;
                planes.height[i + 1] = height as i32;
            }
            count = 3;
        }
        let mut narrow = i32::from(self.bpc <= 8);
        let mut blocks = self.blocks as i32;
        let mut p_partial = self.partial.device_ptr_mut(stream).0;
        let mut p_out = out.device_ptr_mut(stream).0;
        let grid = (self.blocks as u32, count as u32, 1);
        // SAFETY: psnr_sse_rows(PsnrPlanes, i32, u64*): the planes hold their width x height
        // samples (the caller's contract; chroma no larger than luma, checked above, so the
        // grid covers every row), `partial` holds 3 * blocks words; all stay live until the
        // stream has run (the owner synchronises before freeing).
        unsafe {
            launch(
                stream,
                &self.rows,
                grid,
                BLOCK,
                &mut [
                    param(&mut planes),
                    param(&mut narrow),
                    param(&mut p_partial),
                ],
                "cuLaunchKernel(psnr_sse_rows)",
            )?;
            // SAFETY: psnr_sse_total(const u64*, i32, i32, u64*); `out` holds >= 3 words
            // (checked above).
            launch(
                stream,
                &self.total,
                (1, 1, 1),
                BLOCK,
                &mut [
                    param(&mut p_partial),
                    param(&mut blocks),
                    param(&mut count),
                    param(&mut p_out),
                ],
                "cuLaunchKernel(psnr_sse_total)",
            )
        }
    }

    /// `[psnr_y, psnr_cb, psnr_cr]` in dB (each in `[0, 6 * bpc + 12]`) from the
    /// [`PsnrGpu::RESULT_WORDS`] words read back after [`PsnrGpu::enqueue`], bit-identical to
    /// [`super::cpu::psnr`] on the same planes. `chroma`: the chroma planes' size
    /// (`width`, `height`) when the frame had chroma, `None` otherwise (Cb and Cr are then
    /// 0.0); Cb and Cr cover [`libvmaf_chroma_size`] of it. Missing words count as 0.
    pub fn scores(&self, words: &[u64], chroma: Option<(usize, usize)>) -> [f64; 3] {
        let word = |i: usize| words.get(i).copied().unwrap_or(0);
        let mut out = [0.0; 3];
        out[0] = psnr_from_sse(word(0), self.width * self.height, self.bpc);
        if let Some(size) = chroma {
            let (cw, ch) = libvmaf_chroma_size((self.width, self.height), size);
            for (i, v) in out.iter_mut().enumerate().skip(1) {
                *v = psnr_from_sse(word(i), cw * ch, self.bpc);
            }
        }
        out
    }
}
