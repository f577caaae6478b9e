//! Host side of SpEED temporal on the GPU: SpEED chroma's kernels (`kernels/speed.cu`,
//! [`SpeedGpu`]) on two problems per frame, the reference's and the distorted frame
//! difference (`speed_decimate_diff` reads the two planes of each and subtracts their levels
//! in `float`, as the CPU half's [`Difference`](crate::features::speed::cpu::Difference)).
//!
//! Five launches per frame on the compute stream (on every frame: it reads the previous
//! frame); the first frame of a run writes a zero word with one memset. The float and double
//! operations are the CPU half's in its order with explicit roundings; the values differ
//! from the CPU's only where CUDA's `log2` differs from glibc's (as SpEED chroma's: the GPU
//! test allows 1e-5).
//!
//! Everything is allocated in [`TemporalGpu::new`]; a frame allocates nothing.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/speed.c; oracle: [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::params::{TemporalConfig, FEATURE};
use crate::cuda::error::DriverResultExt;
use crate::cuda::{CudaError, GpuDevice};
use crate::features::api::{CudaExtractor, DevFrame};
use crate::features::speed::cuda::SpeedGpu;
use crate::features::speed::Dims;
use crate::video::frame::FeatureError;

/// SpEED temporal's kernels and scratch for one luma size and option set.
pub struct TemporalGpu {
    speed: SpeedGpu,
    dims: Dims,
    bpc: u32,
    use_ref_diff: bool,
}

impl TemporalGpu {
    /// `u64` words per frame: the score's `f32` bits, and 1 when a covariance was singular.
    pub const RESULT_WORDS: usize = 2;

    /// Loads the kernels and allocates everything (on `stream`) for luma planes of `dims`
    /// (checked by [`super::SpeedTemporalInstance::dims`]) at `bpc` bits.
    ///
    /// Errors: [`CudaError::Driver`] (kernel lookup, copy), [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        dims: Dims,
        bpc: u32,
        cfg: TemporalConfig,
    ) -> Result<Self, CudaError> {
        Ok(Self {
            speed: SpeedGpu::for_differences(dev, stream, dims, bpc, cfg.speed)?,
            dims,
            bpc,
            use_ref_diff: cfg.use_ref_diff,
        })
    }
}

impl CudaExtractor for TemporalGpu {
    fn result_words(&self) -> usize {
        Self::RESULT_WORDS
    }

    /// Errors: [`CudaError::Geometry`] for a previous reference without the previous
    /// distorted plane (a ladder), [`CudaError::Driver`] for an `out` shorter than
    /// [`TemporalGpu::RESULT_WORDS`], a failed memset or launch.
    fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        if out.len() < Self::RESULT_WORDS {
            return Err(CudaError::Driver {
                call: "speed_temporal enqueue(output words)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        let Some(prev_ref) = f.previous else {
            // The first frame of a run scores 0.
            return stream
                .memset_zeros(out)
                .during("cuMemsetD8Async(speed_temporal results)");
        };
        let Some(prev_dis) = f.previous_distorted else {
            let d = self.dims;
            return Err(CudaError::Geometry(FeatureError::wrong_size(
                FEATURE,
                (d.width, d.height, self.bpc),
                (0, 0),
            )));
        };
        let current = if self.use_ref_diff {
            f.reference
        } else {
            f.distorted
        };
        self.speed
            .enqueue_differences(stream, [prev_ref, f.reference, prev_dis, current], out)
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        let score = f32::from_bits(words.first().copied().unwrap_or(0) as u32);
        out.iter_mut().for_each(|o| *o = f64::from(score));
    }
}
