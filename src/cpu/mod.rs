//! The CPU runtime: the element's own thread pool ([`CpuPool`]) that the CPU backend
//! (`crate::engine::backend::cpu`) scores frames on.

pub mod pool;

pub use pool::{threads_per_core, CpuPool, PoolError};
