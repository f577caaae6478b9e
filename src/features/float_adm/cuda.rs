//! Float ADM on the GPU: host side of `kernels/float_adm.cu` (in progress).

use std::sync::Arc;

use cudarc::driver::{CudaModule, CudaStream, CudaViewMut};

use super::FloatAdmConfig;
use crate::cuda::error::CudaError;
use crate::cuda::plane::DevPlane;

/// Float ADM on the GPU for one frame geometry.
pub struct FloatAdmGpu {}

impl FloatAdmGpu {
    /// Result words per frame.
    pub const RESULT_WORDS: usize = 12;

    /// Not yet available.
    ///
    /// Errors: always.
    pub fn new(
        _module: &Arc<CudaModule>,
        _stream: &Arc<CudaStream>,
        _width: usize,
        _height: usize,
        _bpc: u32,
        _cfg: &FloatAdmConfig,
    ) -> Result<Self, CudaError> {
        Err(CudaError::Driver {
            call: "FloatAdmGpu::new",
            code: "CUDA_ERROR_NOT_SUPPORTED".to_owned(),
        })
    }

    /// Enqueues one frame.
    ///
    /// Errors: none yet.
    pub fn enqueue(
        &mut self,
        _stream: &Arc<CudaStream>,
        _reference: DevPlane,
        _distorted: DevPlane,
        _out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        Ok(())
    }

    /// The outputs from the read-back words.
    pub fn scores(&self, _words: &[u64]) -> [f64; 7] {
        [0.0; 7]
    }
}
