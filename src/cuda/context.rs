//! The GPU an element runs on: driver check, device choice, context and the loaded kernel
//! modules. Made once per element at NULL -> READY, dropped at READY -> NULL.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;

use super::error::{CudaError, DriverResultExt};

/// PTX of `kernels/motion.cu` (compiled by `build.rs`, or the committed `kernels/ptx` copy),
/// NUL-terminated for `cuModuleLoadData`.
const MOTION_PTX: &str = concat!(include_str!(concat!(env!("OUT_DIR"), "/motion.ptx")), "\0");
/// PTX of `kernels/vif.cu`, NUL-terminated.
const VIF_PTX: &str = concat!(include_str!(concat!(env!("OUT_DIR"), "/vif.ptx")), "\0");
/// PTX of `kernels/adm.cu`, NUL-terminated (only when the build found it).
#[cfg(has_adm_ptx)]
const ADM_PTX: Option<&str> = Some(concat!(
    include_str!(concat!(env!("OUT_DIR"), "/adm.ptx")),
    "\0"
));
#[cfg(not(has_adm_ptx))]
const ADM_PTX: Option<&str> = None;

/// The loaded kernel modules; each is unloaded (`cuModuleUnload`) when the last
/// [`CudaFunction`] taken from it is dropped.
#[derive(Debug)]
pub struct Modules {
    /// `kernels/motion.cu`: `motion_rows`, `motion_total`.
    pub motion: Arc<CudaModule>,
    /// `kernels/vif.cu`: `vif_stat0_narrow`, `vif_stat0..3`, `vif_sub1..3`.
    pub vif: Arc<CudaModule>,
    /// `kernels/adm.cu`, when this build has it.
    pub adm: Option<Arc<CudaModule>>,
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
        let adm = match ADM_PTX {
            Some(ptx) => Some(load(&ctx, ptx, "cuModuleLoadData(adm)")?),
            None => None,
        };
        Ok(GpuDevice {
            modules: Modules { motion, vif, adm },
            ctx,
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
