//! Host side of `kernels/psnr.cu` (placeholder API until the kernels land; issue 8).

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::context::GpuDevice;
use super::error::CudaError;
use super::plane::{ChromaDev, DevPlane};

/// PSNR on the GPU (placeholder).
pub struct PsnrGpu;

impl PsnrGpu {
    /// `u64` words per frame.
    pub const RESULT_WORDS: usize = 3;

    /// Placeholder.
    pub fn new(
        _dev: &GpuDevice,
        _stream: &Arc<CudaStream>,
        _width: usize,
        _height: usize,
        _bpc: u32,
    ) -> Result<Self, CudaError> {
        Ok(Self)
    }

    /// Placeholder.
    pub fn enqueue(
        &mut self,
        _stream: &Arc<CudaStream>,
        _reference: DevPlane,
        _distorted: DevPlane,
        _chroma: Option<&ChromaDev>,
        _out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        Ok(())
    }

    /// Placeholder.
    pub fn scores(&self, _words: &[u64], _chroma: Option<(usize, usize)>) -> [f64; 3] {
        [0.0; 3]
    }
}
