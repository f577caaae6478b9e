//! Host side of `kernels/ssim.cu` (placeholder API until the kernels land; issue 8).

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::context::GpuDevice;
use super::error::CudaError;
use super::plane::DevPlane;

/// Float SSIM and MS-SSIM on the GPU (placeholder).
pub struct SsimGpu;

impl SsimGpu {
    /// `u64` words per frame.
    pub const RESULT_WORDS: usize = 2;

    /// Placeholder.
    pub fn new(
        _dev: &GpuDevice,
        _stream: &Arc<CudaStream>,
        _width: usize,
        _height: usize,
        _bpc: u32,
        _ssim: bool,
        _ms_ssim: bool,
    ) -> Result<Self, CudaError> {
        Ok(Self)
    }

    /// Placeholder.
    pub fn enqueue(
        &mut self,
        _stream: &Arc<CudaStream>,
        _reference: DevPlane,
        _distorted: DevPlane,
        _out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        Ok(())
    }

    /// Placeholder.
    pub fn scores(&self, _words: &[u64]) -> (f64, f64) {
        (0.0, 0.0)
    }
}
