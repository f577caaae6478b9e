//! The CUDA backend (cudarc): context, streams, modules, device buffers and pinned staging,
//! CUresult -> typed error mapping, and the host side of the kernels in `kernels/*.cu`.
//!
//! [`GpuDevice`] is opened once per element (NULL -> READY); a [`CudaBackend`] is made per
//! geometry (caps) and implements [`crate::engine::scorer::Backend`].

pub mod adm;
pub mod backend;
pub mod chroma;
pub mod context;
pub mod error;
pub mod fault;
pub mod gst_cuda;
pub mod memory;
pub mod motion;
pub mod plane;
pub mod psnr;
pub mod ssim;
pub mod ssimulacra2;
pub mod vif;

pub use backend::CudaBackend;
pub use context::GpuDevice;
pub use error::CudaError;
pub use plane::{ChromaDev, DevPlane};
