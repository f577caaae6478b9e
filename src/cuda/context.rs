//! The GPU an element runs on: driver check, device choice, context and the loaded kernel
//! modules. Made once per element at NULL -> READY, dropped at READY -> NULL.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DevicePtr, MappedBuffer};
use cudarc::nvrtc::Ptx;

use super::error::{CudaError, DriverResultExt};
use super::fault::{Counted, Handle};

/// PTX of `kernels/motion.cu` (compiled by `build.rs`, or the committed `kernels/ptx` copy),
/// NUL-terminated for `cuModuleLoadData`.
const MOTION_PTX: &str = concat!(include_str!(concat!(env!("OUT_DIR"), "/motion.ptx")), "\0");
/// PTX of `kernels/vif.cu`, NUL-terminated.
const VIF_PTX: &str = concat!(include_str!(concat!(env!("OUT_DIR"), "/vif.ptx")), "\0");
/// PTX of `kernels/adm.cu`, NUL-terminated.
const ADM_PTX: &str = concat!(include_str!(concat!(env!("OUT_DIR"), "/adm.ptx")), "\0");
/// PTX of `kernels/frame.cu`, NUL-terminated.
const FRAME_PTX: &str = concat!(include_str!(concat!(env!("OUT_DIR"), "/frame.ptx")), "\0");
/// PTX of `kernels/psnr.cu`, NUL-terminated.
const PSNR_PTX: &str = concat!(include_str!(concat!(env!("OUT_DIR"), "/psnr.ptx")), "\0");
/// PTX of `kernels/ssim.cu`, NUL-terminated.
const SSIM_PTX: &str = concat!(include_str!(concat!(env!("OUT_DIR"), "/ssim.ptx")), "\0");
/// PTX of `kernels/ssimulacra2.cu`, NUL-terminated.
const SSIMULACRA2_PTX: &str = concat!(
    include_str!(concat!(env!("OUT_DIR"), "/ssimulacra2.ptx")),
    "\0"
);

/// The loaded kernel modules; each is unloaded (`cuModuleUnload`) when the last
/// [`CudaFunction`] taken from it is dropped.
#[derive(Debug)]
pub struct Modules {
    /// `kernels/motion.cu`: `motion_rows`, `motion_total`.
    pub motion: Arc<CudaModule>,
    /// `kernels/vif.cu`: `vif_stat0_narrow`, `vif_stat0..3`, `vif_sub1..3`.
    pub vif: Arc<CudaModule>,
    /// `kernels/adm.cu`: the DWT, decouple/CSF and contrast-masking kernels.
    pub adm: Arc<CudaModule>,
    /// `kernels/frame.cu`: chroma unpacking into packed planes (the extra metrics' input).
    pub frame: Arc<CudaModule>,
    /// `kernels/psnr.cu`: squared-error sums of PSNR.
    pub psnr: Arc<CudaModule>,
    /// `kernels/ssim.cu`: float SSIM and MS-SSIM.
    pub ssim: Arc<CudaModule>,
    /// `kernels/ssimulacra2.cu`: YUV to XYB, recursive Gaussian blur, SSIMULACRA2 error maps.
    pub ssimulacra2: Arc<CudaModule>,
}

impl Modules {
    /// How many modules [`GpuDevice::open`] loads.
    pub const COUNT: usize = 7;
}

/// One CUDA device with its (primary) context and the vmafcompare kernels loaded.
///
/// Built step by step: a failure at any step drops what the earlier steps made. Dropping it
/// unloads the modules, then releases the context (cudarc's `Drop` impls).
#[derive(Debug)]
pub struct GpuDevice {
    // Field order is drop order: modules before the context they live in.
    modules: Modules,
    ctx: Arc<CudaContext>,
    /// The retained context and the modules, for [`super::fault::live`].
    _counted: [Counted; 1 + Modules::COUNT],
}

/// Loads one NUL-terminated PTX text into `ctx`.
fn load(
    ctx: &Arc<CudaContext>,
    ptx: &str,
    call: &'static str,
) -> Result<Arc<CudaModule>, CudaError> {
    ctx.load_module(Ptx::from_binary(ptx.as_bytes().to_vec()))
        .during(call)
}

impl GpuDevice {
    /// Opens device `device_id` (CUDA ordinal): checks that the driver library loads, that the
    /// device exists, retains its primary context and loads every kernel module.
    ///
    /// Errors: [`CudaError::NoDriver`] when `libcuda.so` cannot be loaded (checked before any
    /// other driver call, so a machine without a driver never panics), [`CudaError::NoDevice`]
    /// when the driver reports no device, [`CudaError::DeviceOutOfRange`] for a `device_id`
    /// past the last device, [`CudaError::Driver`] for any failing call (context, module load).
    pub fn open(device_id: usize) -> Result<GpuDevice, CudaError> {
        // SAFETY: only tries to dlopen libcuda (and drops the handle); no driver function is
        // called. It must come first because cudarc panics on the first driver call when the
        // library is absent.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(CudaError::NoDriver);
        }
        let count = match CudaContext::device_count() {
            Ok(n) => usize::try_from(n).unwrap_or(0),
            Err(e) if e.0 == CUresult::CUDA_ERROR_NO_DEVICE => 0,
            Err(e) => return Err(CudaError::driver("cuInit/cuDeviceGetCount", e)),
        };
        if count == 0 {
            return Err(CudaError::NoDevice);
        }
        if device_id >= count {
            return Err(CudaError::DeviceOutOfRange {
                requested: device_id,
                count,
            });
        }
        let ctx = CudaContext::new(device_id).during("cuDevicePrimaryCtxRetain")?;
        // SAFETY: the backends synchronise their streams explicitly with events (uploads
        // before kernels, kernels before a staging buffer or plane is reused) and synchronise
        // before freeing; cudarc's per-buffer event tracking is then redundant.
        unsafe { ctx.disable_event_tracking() };
        let motion = load(&ctx, MOTION_PTX, "cuModuleLoadData(motion)")?;
        let vif = load(&ctx, VIF_PTX, "cuModuleLoadData(vif)")?;
        let adm = load(&ctx, ADM_PTX, "cuModuleLoadData(adm)")?;
        let frame = load(&ctx, FRAME_PTX, "cuModuleLoadData(frame)")?;
        let psnr = load(&ctx, PSNR_PTX, "cuModuleLoadData(psnr)")?;
        let ssim = load(&ctx, SSIM_PTX, "cuModuleLoadData(ssim)")?;
        let ssimulacra2 = load(&ctx, SSIMULACRA2_PTX, "cuModuleLoadData(ssimulacra2)")?;
        let module = || Counted::new(Handle::Module);
        Ok(GpuDevice {
            modules: Modules {
                motion,
                vif,
                adm,
                frame,
                psnr,
                ssim,
                ssimulacra2,
            },
            ctx,
            _counted: [
                Counted::new(Handle::Context),
                module(),
                module(),
                module(),
                module(),
                module(),
                module(),
                module(),
            ],
        })
    }

    /// The device's name as the driver reports it (e.g. `NVIDIA H100 80GB HBM3`), or
    /// `"unknown CUDA device"` if the driver cannot say.
    pub fn name(&self) -> String {
        self.ctx
            .name()
            .unwrap_or_else(|_| "unknown CUDA device".to_owned())
    }

    /// The CUDA ordinal of this device.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// `(free, total)` device memory in bytes (`cuMemGetInfo`), the measure of leaks that
    /// also sees module memory. Errors: [`CudaError::Driver`].
    pub fn mem_get_info(&self) -> Result<(usize, usize), CudaError> {
        self.ctx.mem_get_info().during("cuMemGetInfo")
    }

    /// The loaded kernel modules.
    pub fn modules(&self) -> &Modules {
        &self.modules
    }

    /// The context (shared by every stream and buffer of this device).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// A new stream of this device's context (`cuStreamCreate`), owned by the caller.
    /// Errors: [`CudaError::Driver`].
    pub fn new_stream(&self) -> Result<Arc<CudaStream>, CudaError> {
        self.ctx.new_stream().during("cuStreamCreate")
    }
}

/// How device memory of another context reaches this device (see [`GpuDevice::peer_access`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerAccess {
    /// The memory lies on this device (another context): copied on the device.
    SameDevice,
    /// The memory lies on device `from`, which this device can read directly (NVLink or
    /// PCIe peer-to-peer); peer access is enabled for the copy engines.
    Direct { from: usize },
    /// The memory lies on device `from` without peer access between the two: the driver
    /// stages each copy through host memory (correct, slower).
    Staged { from: usize },
}

impl GpuDevice {
    /// Where the device memory at `ptr`, owned by context `peer_ctx` (a `CUcontext` address),
    /// lies and how it will be copied here. Enables this context's access to `peer_ctx`
    /// (`cuCtxEnablePeerAccess`) when the two devices support it, so that
    /// `cuMemcpy3DPeerAsync` runs device to device; the access ends when either context is
    /// destroyed.
    ///
    /// Errors: [`CudaError::Driver`] when the pointer's device cannot be read
    /// (`cuPointerGetAttribute`), peer support cannot be queried, or enabling fails.
    pub fn peer_access(&self, ptr: u64, peer_ctx: usize) -> Result<PeerAccess, CudaError> {
        use cudarc::driver::sys;
        let mut ordinal: std::ffi::c_int = -1;
        // SAFETY: the attribute writes one int; `ptr` is a device pointer the caller holds
        // mapped.
        unsafe {
            sys::cuPointerGetAttribute(
                (&mut ordinal as *mut std::ffi::c_int).cast(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                ptr,
            )
        }
        .result()
        .during("cuPointerGetAttribute(DEVICE_ORDINAL)")?;
        let from = usize::try_from(ordinal).unwrap_or(usize::MAX);
        if from == self.ordinal() {
            return Ok(PeerAccess::SameDevice);
        }
        let mut can: std::ffi::c_int = 0;
        // SAFETY: plain queries on two device ordinals that the driver reported.
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, self.ordinal() as i32, ordinal) }
            .result()
            .during("cuDeviceCanAccessPeer")?;
        if can == 0 {
            return Ok(PeerAccess::Staged { from });
        }
        self.ctx.bind_to_thread().during("cuCtxSetCurrent")?;
        // SAFETY: `peer_ctx` is the live context that owns `ptr` (the caller holds the
        // memory, which holds its context); this context is current on this thread.
        let r = unsafe { sys::cuCtxEnablePeerAccess(peer_ctx as sys::CUcontext, 0) };
        match r {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
                Ok(PeerAccess::Direct { from })
            }
            e => Err(CudaError::driver(
                "cuCtxEnablePeerAccess",
                cudarc::driver::DriverError(e),
            )),
        }
    }
}

/// A DMABuf imported into a device's context as external memory and mapped (the whole
/// dma-buf). The mapping is freed and the import destroyed when this is dropped; the caller
/// keeps it until the kernels that read it have finished.
#[derive(Debug)]
pub struct ImportedDmaBuf {
    mapped: MappedBuffer,
    ptr: u64,
}

// SAFETY: the external-memory handle and the mapped pointer are plain driver handles, valid
// from any thread (the driver API is thread-safe and cudarc binds the context before freeing).
unsafe impl Send for ImportedDmaBuf {}

impl ImportedDmaBuf {
    /// `CUdeviceptr` of the dma-buf's first byte.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Bytes mapped (the dma-buf's size).
    pub fn len(&self) -> usize {
        cudarc::driver::DeviceSlice::len(&self.mapped)
    }

    /// Whether nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl GpuDevice {
    /// Imports the dma-buf `fd` (`size` bytes) into this device's context
    /// (`cuImportExternalMemory` with an opaque file descriptor, which takes a duplicate of
    /// `fd`) and maps it whole (`cuExternalMemoryGetMappedBuffer`).
    ///
    /// Errors: [`CudaError::Driver`] naming the refusing call. NVIDIA's driver refuses
    /// dma-bufs that another device exported (e.g. Intel VA-API surfaces) and plain memfds;
    /// the caller then reads the buffer back through host memory. On any error the duplicate
    /// is closed and nothing stays imported.
    pub fn import_dmabuf(
        &self,
        fd: std::os::fd::BorrowedFd<'_>,
        size: u64,
    ) -> Result<ImportedDmaBuf, CudaError> {
        let owned = fd.try_clone_to_owned().map_err(|e| CudaError::Driver {
            call: "dup(dma-buf fd)",
            code: e.to_string(),
        })?;
        let file = std::fs::File::from(owned);
        // SAFETY: `size` is the dma-buf's size as the caller measured it (lseek to the end);
        // the driver checks the descriptor and takes ownership of the duplicate only on
        // success (cudarc closes it on failure).
        let external = unsafe { self.ctx.import_external_memory(file, size) }
            .during("cuImportExternalMemory(dma-buf)")?;
        let mapped = external
            .map_all()
            .during("cuExternalMemoryGetMappedBuffer(dma-buf)")?;
        let stream = self.ctx.default_stream();
        let ptr = mapped.device_ptr(&stream).0;
        Ok(ImportedDmaBuf { mapped, ptr })
    }
}

/// Looks up kernel `name` in `module`. Errors: [`CudaError::Driver`] naming `call`.
pub fn function(
    module: &Arc<CudaModule>,
    name: &str,
    call: &'static str,
) -> Result<CudaFunction, CudaError> {
    module.load_function(name).during(call)
}

/// Launches `f` on `stream` with `params` (pointers to each argument's value, in the kernel's
/// parameter order) without any host allocation.
///
/// # Safety
/// `params` must match the kernel's parameter list in number, order and types, and every
/// device pointer among them must stay valid until the kernel has run.
pub(crate) unsafe fn launch(
    stream: &CudaStream,
    f: &CudaFunction,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    params: &mut [*mut c_void],
    call: &'static str,
) -> Result<(), CudaError> {
    // SAFETY: forwarded to the caller (see above); the function and stream are live.
    unsafe {
        cudarc::driver::result::launch_kernel(
            f.cu_function(),
            grid,
            block,
            0,
            stream.cu_stream(),
            params,
        )
    }
    .during(call)
}

/// `&mut value` as a kernel parameter pointer.
#[inline]
pub(crate) fn param<T>(value: &mut T) -> *mut c_void {
    (value as *mut T).cast()
}
