//! Device buffers from `cuMemAlloc`, not from the stream-ordered memory pool.
//!
//! cudarc allocates with `cuMemAllocAsync` from the device's default pool whenever the device
//! supports pools. That pool maps physical memory in 32 MiB chunks, so a scorer's few dozen
//! MB of scratch showed up as the next multiple of 32 MiB (66, 98, 226 and 290 MiB on the
//! benchmark's sizes) and a 576x324 element held 34 MiB for 3 MB of data. `cuMemAlloc`
//! rounds each allocation to the driver's page (2 MiB for large ones, sub-allocated below),
//! so an element holds what it uses. All long-lived scratch of the CUDA backend goes through
//! [`alloc_zeroed`] and [`alloc_copy`].

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use cudarc::driver::{result, CudaContext, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};

use super::error::{CudaError, DriverResultExt};

/// A device buffer of `len` elements of `T` allocated with `cuMemAlloc` and freed with
/// `cuMemFree` when dropped (after binding its context). It dereferences to a cudarc
/// [`CudaSlice`], so views, `device_ptr` and copies work as on any cudarc buffer.
///
/// The context must not track events (`GpuDevice` disables tracking): cudarc would then
/// make two events per buffer. Whoever drops it makes sure no queued kernel still uses it
/// (the backend synchronises its streams first).
#[derive(Debug)]
pub struct DeviceAlloc<T> {
    slice: ManuallyDrop<CudaSlice<T>>,
    ctx: Arc<CudaContext>,
}

impl<T> Deref for DeviceAlloc<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        &self.slice
    }
}

impl<T> DerefMut for DeviceAlloc<T> {
    fn deref_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }
}

impl<T> Drop for DeviceAlloc<T> {
    fn drop(&mut self) {
        // SAFETY: `slice` is taken once, here, and never used again.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        // `leak` hands back the pointer without cudarc's pool free (`cuMemFreeAsync`).
        let ptr = slice.leak();
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `ptr` came from `cuMemAlloc` in this context and nothing else frees it.
            // An error here (a context already in a sticky error state) leaves nothing to do.
            let _ = unsafe { result::free_sync(ptr) };
        }
    }
}

/// Allocates `len` elements of `T` (at least one) with `cuMemAlloc` and zeroes them on
/// `stream` (stream-ordered: work queued later on `stream`, or ordered after it by events,
/// sees zeros).
///
/// `what` names the buffer in errors, e.g. `"cuMemAlloc(reference plane)"`. Errors:
/// [`CudaError::OutOfMemory`] or [`CudaError::Driver`] from the allocation or the memset.
pub fn alloc_zeroed<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
    what: &'static str,
) -> Result<DeviceAlloc<T>, CudaError> {
    let mut buf = alloc_raw::<T>(stream, len, what)?;
    stream
        .memset_zeros(&mut *buf)
        .during("cuMemsetD8Async(new buffer)")?;
    Ok(buf)
}

/// Allocates a buffer holding a copy of `src` (at least one element), uploaded on `stream`.
/// The host copy may be dropped once this returns (a copy from pageable memory is staged
/// before the call returns).
///
/// Errors: as [`alloc_zeroed`], and [`CudaError::Driver`] from the copy.
pub fn alloc_copy<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    src: &[T],
    what: &'static str,
) -> Result<DeviceAlloc<T>, CudaError> {
    let mut buf = alloc_raw::<T>(stream, src.len(), what)?;
    stream
        .memcpy_htod(src, &mut *buf)
        .during("cuMemcpyHtoDAsync(new buffer)")?;
    Ok(buf)
}

fn alloc_raw<T>(
    stream: &Arc<CudaStream>,
    len: usize,
    what: &'static str,
) -> Result<DeviceAlloc<T>, CudaError> {
    let len = len.max(1);
    let bytes = len.saturating_mul(std::mem::size_of::<T>());
    let ctx = stream.context().clone();
    ctx.bind_to_thread().during("cuCtxSetCurrent(alloc)")?;
    // SAFETY: a plain allocation in the bound context. The pointer is owned by the
    // `DeviceAlloc` made right away, so a failure injected by the fault hook frees it.
    unsafe { result::malloc_sync(bytes) }
        .map(|ptr| DeviceAlloc {
            // SAFETY: `ptr` holds `len` elements of `T` (`bytes` bytes) in `stream`'s context;
            // with event tracking off no event is made.
            slice: ManuallyDrop::new(unsafe { stream.upgrade_device_ptr::<T>(ptr, len) }),
            ctx,
        })
        .allocating(what, bytes)
}
