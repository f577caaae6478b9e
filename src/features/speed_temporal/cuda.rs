//! Host side of SpEED temporal on the GPU (placeholder until the CUDA half lands).

use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::TemporalConfig;
use crate::cuda::{CudaError, GpuDevice};
use crate::features::speed::Dims;
use crate::features::{CudaExtractor, DevFrame};

/// The SpEED temporal kernels and their scratch.
pub struct TemporalGpu;

impl TemporalGpu {
    /// Errors: always, for now.
    pub fn new(
        _dev: &GpuDevice,
        _stream: &Arc<CudaStream>,
        _dims: Dims,
        _bpc: u32,
        _cfg: TemporalConfig,
    ) -> Result<Self, CudaError> {
        Err(CudaError::Driver {
            call: "speed_temporal",
            code: "not implemented on the GPU yet".to_owned(),
        })
    }
}

impl CudaExtractor for TemporalGpu {
    fn result_words(&self) -> usize {
        1
    }
    fn enqueue(
        &mut self,
        _stream: &Arc<CudaStream>,
        _frame: &DevFrame,
        _out: &mut cudarc::driver::CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        Ok(())
    }
    fn read(&self, _words: &[u64], _chroma: bool, _out: &mut [f64]) {}
}
