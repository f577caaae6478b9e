//! The CUDA runtime (cudarc): device, context and kernel modules ([`GpuDevice`]), streams,
//! device buffers and pinned staging, CUresult -> typed errors ([`CudaError`]), chroma
//! unpacking, and GStreamer CUDA memory / DMABuf import. It knows no metric: the features'
//! CUDA halves (`crate::features::*::cuda`) build on it, and the CUDA backend
//! (`crate::engine::backend::cuda`) runs them.
//!
//! [`GpuDevice`] is opened once per element (NULL -> READY), on the device `device-id` names or,
//! for `device-id=-1`, on one [`pick`] chooses.

pub mod chroma;
pub mod context;
pub mod error;
pub mod fault;
pub mod gst_cuda;
pub mod memory;
pub mod pick;
pub mod plane;
pub mod staging;

pub use context::GpuDevice;
pub use error::CudaError;
pub use pick::DeviceClaim;
pub use plane::{ChromaDev, DevPlane};
