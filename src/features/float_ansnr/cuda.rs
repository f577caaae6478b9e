//! Host side of `kernels/float_ansnr.cu`: libvmaf's float ANSNR sums on the GPU,
//! bit-identical to the CPU's ([`super::cpu::Ansnr::sums`]): `ansnr_rows` filters and sums
//! each row in order, `ansnr_total` adds the rows in order.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/ansnr.c, ansnr_tools.c.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtrMut};

use super::params::{FEATURE, MIN_SIZE};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::CudaError;
use crate::cuda::memory::{alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::{check_size, DevPlane};
use crate::features::float_psnr::FloatDepth;

/// Block shape of `ansnr_rows`: 32 columns x 8 rows.
const BLOCK: (u32, u32, u32) = (32, 8, 1);

/// The ANSNR kernels and their row sums for one geometry.
pub struct AnsnrGpu {
    rows_fn: CudaFunction,
    total_fn: CudaFunction,
    /// Per-row sums: `height` of sig, then `height` of noise (`f32`).
    rows: DeviceAlloc<f32>,
    width: usize,
    height: usize,
    inv_scaler: f32,
}

impl AnsnrGpu {
    /// `u64` words [`AnsnrGpu::enqueue`] writes per frame: sig and noise, `f32` bits.
    pub const RESULT_WORDS: usize = 2;

    /// Loads the kernels and allocates the row sums (on `stream`) for `width` x `height`
    /// planes read as `depth` says.
    ///
    /// Errors: [`CudaError::Geometry`] below 3x3 or for a side above 65536,
    /// [`CudaError::Driver`] (kernel lookup), [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        depth: FloatDepth,
    ) -> Result<Self, CudaError> {
        check_size(FEATURE, (width, height, depth.bpc), MIN_SIZE)?;
        let m = dev.modules().get("float_ansnr")?;
        let rows_fn = function(m, "ansnr_rows", "cuModuleGetFunction(ansnr_rows)")?;
        let total_fn = function(m, "ansnr_total", "cuModuleGetFunction(ansnr_total)")?;
        let rows = alloc_zeroed::<f32>(stream, 2 * height, "cuMemAlloc(ansnr row sums)")?;
        Ok(Self {
            rows_fn,
            total_fn,
            rows,
            width,
            height,
            inv_scaler: 1.0 / depth.scaler,
        })
    }

    /// Enqueues on `stream` the sums of `reference` and `distorted` (luma, `width` x
    /// `height`, see [`DevPlane`]'s contract) into `out[0..2]`: `ansnr_rows` (grid
    /// `1 x ceil(h / 8)`) and `ansnr_total` (one block).
    ///
    /// Errors: [`CudaError::Driver`] for an `out` shorter than [`AnsnrGpu::RESULT_WORDS`]
    /// or a failed launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        mut reference: DevPlane,
        mut distorted: DevPlane,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        if out.len() < Self::RESULT_WORDS {
            return Err(CudaError::Driver {
                call: "float_ansnr enqueue(output words)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        let (mut w, mut h) = (self.width as i32, self.height as i32);
        let mut inv = self.inv_scaler;
        let mut p_rows = self.rows.device_ptr_mut(stream).0;
        let mut p_out = out.device_ptr_mut(stream).0;
        let grid = (1, self.height.div_ceil(8) as u32, 1);
        // SAFETY: ansnr_rows(Plane, Plane, i32, i32, f32, f32*): the planes hold w x h samples
        // (the caller's contract; the kernel reads only mirrored in-range indices), `rows`
        // holds 2 * h floats; all stay live until the stream has run (the owner synchronises
        // before freeing).
        unsafe {
            launch(
                stream,
                &self.rows_fn,
                grid,
                BLOCK,
                &mut [
                    param(&mut reference),
                    param(&mut distorted),
                    param(&mut w),
                    param(&mut h),
                    param(&mut inv),
                    param(&mut p_rows),
                ],
                "cuLaunchKernel(ansnr_rows)",
            )?;
            // SAFETY: ansnr_total(const f32*, i32, u64*): `rows` of 2 * h floats, `out` of
            // at least 2 words (checked above).
            launch(
                stream,
                &self.total_fn,
                (1, 1, 1),
                (32, 1, 1),
                &mut [param(&mut p_rows), param(&mut h), param(&mut p_out)],
                "cuLaunchKernel(ansnr_total)",
            )
        }
    }

    /// `(sig, noise)` from the words read back after [`AnsnrGpu::enqueue`] (missing words
    /// count as 0).
    pub fn sums(words: &[u64]) -> (f32, f32) {
        let word = |i: usize| f32::from_bits(words.get(i).copied().unwrap_or(0) as u32);
        (word(0), word(1))
    }
}
