//! The backends that run a [`crate::features::Layout`]'s features on frame pairs and
//! implement [`crate::engine::Backend`]: [`CpuBackend`] (every instance's CPU half, on the
//! calling thread or the element's [`crate::cpu::CpuPool`]) and [`CudaBackend`] (every
//! instance's CUDA half, frames in flight on streams).

pub mod api;
pub mod cpu;
mod cpu_frame;
mod cpu_owned;
mod cpu_parallel;
pub mod cuda;
mod cuda_build;
mod cuda_enqueue;
mod cuda_place;
mod cuda_slots;
pub mod pair;

pub use cpu::CpuBackend;
pub use cuda::CudaBackend;
