//! Host side of `kernels/float_psnr.cu`: the integer plane sums ([`super::PlaneSums`]) of
//! `float_psnr` and `float_moment` on the GPU, bit-identical to the CPU's
//! ([`super::cpu::plane_sums`]), so both extractors give the CPU's scores bit for bit.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_psnr.c, float_moment.c.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtrMut};

use super::params::PlaneSums;
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::plane::{check_size, DevPlane};

/// Block shape: 32 x 8 threads, each summing 4 pixels of a column.
const BLOCK: (u32, u32, u32) = (32, 8, 1);
const TILE_ROWS: usize = 32;

/// The plane-sums kernel for one geometry (nothing to allocate: it adds into the result
/// words).
pub struct PlaneSumsGpu {
    sums: CudaFunction,
    width: usize,
    height: usize,
}

impl PlaneSumsGpu {
    /// `u64` words [`PlaneSumsGpu::enqueue`] writes per frame: the five [`PlaneSums`] in
    /// field order.
    pub const RESULT_WORDS: usize = 5;

    /// Loads the kernel for `width` x `height` planes of `bpc` bits, for `feature`'s errors.
    ///
    /// Errors: [`CudaError::Geometry`] for a zero size, a side above 65536 or a `bpc` outside
    /// `8..=16`, [`CudaError::Driver`] (kernel lookup).
    pub fn new(
        dev: &GpuDevice,
        feature: &'static str,
        width: usize,
        height: usize,
        bpc: u32,
    ) -> Result<Self, CudaError> {
        check_size(feature, (width, height, bpc), 1)?;
        let m = dev.modules().get("float_psnr")?;
        let sums = function(
            m,
            "float_plane_sums",
            "cuModuleGetFunction(float_plane_sums)",
        )?;
        Ok(Self {
            sums,
            width,
            height,
        })
    }

    /// Enqueues on `stream` the sums of `reference` and `distorted` (luma, `width` x `height`,
    /// see [`DevPlane`]'s contract) into `out[0..5]`: one memset and one launch (grid
    /// `ceil(w / 32)` x `ceil(h / 32)`).
    ///
    /// Errors: [`CudaError::Driver`] for an `out` shorter than
    /// [`PlaneSumsGpu::RESULT_WORDS`], a failed memset or launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        mut reference: DevPlane,
        mut distorted: DevPlane,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        if out.len() < Self::RESULT_WORDS {
            return Err(CudaError::Driver {
                call: "float plane sums enqueue(output words)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        stream
            .memset_zeros(out)
            .during("cuMemsetD8Async(float plane sums)")?;
        let (mut w, mut h) = (self.width as i32, self.height as i32);
        let mut p_out = out.device_ptr_mut(stream).0;
        let grid = (
            self.width.div_ceil(32) as u32,
            self.height.div_ceil(TILE_ROWS) as u32,
            1,
        );
        // SAFETY: float_plane_sums(Plane, Plane, i32, i32, u64*): the planes hold w x h
        // samples (the caller's contract), `out` at least 5 words (checked above); all stay
        // live until the stream has run (the owner synchronises before freeing).
        unsafe {
            launch(
                stream,
                &self.sums,
                grid,
                BLOCK,
                &mut [
                    param(&mut reference),
                    param(&mut distorted),
                    param(&mut w),
                    param(&mut h),
                    param(&mut p_out),
                ],
                "cuLaunchKernel(float_plane_sums)",
            )
        }
    }

    /// The sums from the words read back after [`PlaneSumsGpu::enqueue`] (missing words
    /// count as 0).
    pub fn sums(words: &[u64]) -> PlaneSums {
        let word = |i: usize| words.get(i).copied().unwrap_or(0);
        PlaneSums {
            error: word(0),
            reference: word(1),
            distorted: word(2),
            reference2: word(3),
            distorted2: word(4),
        }
    }
}
