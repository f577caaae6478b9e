//! Host side of `kernels/ssimulacra2.cu` (placeholder API until the kernels land; issue 8).

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::context::GpuDevice;
use super::error::CudaError;
use super::plane::{ChromaDev, DevPlane};
use crate::engine::colour::YuvToRgb;

/// SSIMULACRA2 on the GPU (placeholder).
pub struct Ssimulacra2Gpu;

impl Ssimulacra2Gpu {
    /// `u64` words per frame.
    pub const RESULT_WORDS: usize = 1;

    /// Placeholder.
    pub fn new(
        _dev: &GpuDevice,
        _stream: &Arc<CudaStream>,
        _width: usize,
        _height: usize,
        _bpc: u32,
        _chroma: Option<(usize, usize)>,
        _conv: YuvToRgb,
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
    pub fn score(&self, _words: &[u64]) -> f64 {
        0.0
    }
}
