//! Every CUDA failure as a typed error: which call failed and the driver's CUresult name.

use cudarc::driver::DriverError;

/// A CUDA failure. Never a panic or an abort: each becomes an element error (or, with
/// `backend=auto`, a warning and a CPU fallback).
#[derive(Debug, Clone, thiserror::Error)]
pub enum CudaError {
    /// `libcuda.so` could not be loaded (no NVIDIA driver on this machine).
    #[error("the NVIDIA driver library (libcuda.so) cannot be loaded: no usable GPU driver")]
    NoDriver,
    /// The driver loaded but reports no device.
    #[error("no CUDA device found")]
    NoDevice,
    /// `device-id` names a device that does not exist.
    #[error("device-id {requested} is out of range: {count} CUDA device(s) present")]
    DeviceOutOfRange {
        /// The requested ordinal.
        requested: usize,
        /// Devices present.
        count: usize,
    },
    /// A call failed for lack of device memory (an allocation, or a module load, stream or
    /// context creation that needs some).
    #[error("out of GPU memory: {call}{} ({code}); free GPU memory (other processes, other elements) or use backend=auto to fall back to the CPU", asked(*.bytes))]
    OutOfMemory {
        /// What was being allocated.
        call: &'static str,
        /// Bytes asked for (0 when the call is not an allocation of a known size).
        bytes: usize,
        /// The CUresult name, e.g. `CUDA_ERROR_OUT_OF_MEMORY`.
        code: String,
    },
    /// The frame geometry does not suit an extractor (too small, bad bit depth).
    #[error(transparent)]
    Geometry(#[from] crate::video::frame::FeatureError),
    /// Any other failing driver call.
    #[error("{call} failed: {code}")]
    Driver {
        /// The call or step, e.g. `cuModuleLoadData(vif)`.
        call: &'static str,
        /// The CUresult name.
        code: String,
    },
}

/// The CUresult's name (`CUDA_ERROR_...`), from the driver's error enum.
pub fn code_name(e: &DriverError) -> String {
    format!("{:?}", e.0)
}

fn is_oom(e: &DriverError) -> bool {
    e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY
}

fn asked(bytes: usize) -> String {
    if bytes == 0 {
        String::new()
    } else {
        format!(" asked for {bytes} bytes")
    }
}

impl CudaError {
    /// Maps a driver error of `call` (`CUDA_ERROR_OUT_OF_MEMORY` becomes
    /// [`CudaError::OutOfMemory`]).
    pub fn driver(call: &'static str, e: DriverError) -> Self {
        if is_oom(&e) {
            return Self::OutOfMemory {
                call,
                bytes: 0,
                code: code_name(&e),
            };
        }
        Self::Driver {
            call,
            code: code_name(&e),
        }
    }

    /// Maps an allocation error of `bytes` bytes in `call` (out of memory is reported as such).
    pub fn alloc(call: &'static str, bytes: usize, e: DriverError) -> Self {
        match Self::driver(call, e) {
            Self::OutOfMemory { call, code, .. } => Self::OutOfMemory { call, bytes, code },
            other => other,
        }
    }
}

/// `result.map_err(|e| CudaError::driver(call, e))` in short.
pub trait DriverResultExt<T> {
    /// Names the failing call.
    fn during(self, call: &'static str) -> Result<T, CudaError>;
    /// Names the failing allocation and its size.
    fn allocating(self, call: &'static str, bytes: usize) -> Result<T, CudaError>;
}

/// Both methods also pass each step to the test hook `super::fault::check`, which can make
/// a step that succeeded fail (dropping what it made, as a real failure would).
impl<T> DriverResultExt<T> for Result<T, DriverError> {
    fn during(self, call: &'static str) -> Result<T, CudaError> {
        let made = self.map_err(|e| CudaError::driver(call, e))?;
        super::fault::check(call, false).map_err(|e| CudaError::driver(call, e))?;
        Ok(made)
    }

    fn allocating(self, call: &'static str, bytes: usize) -> Result<T, CudaError> {
        let made = self.map_err(|e| CudaError::alloc(call, bytes, e))?;
        super::fault::check(call, true).map_err(|e| CudaError::alloc(call, bytes, e))?;
        Ok(made)
    }
}
