//! GStreamer's CUDA library (`libgstcuda-1.0`, gst-plugins-bad 1.22), loaded at run time.
//!
//! The plugin links nothing of it: where the library is absent the plugin still loads, CUDA
//! memory never reaches it (no producer can make any) and the system-memory path runs. Where it
//! is present, this module gives the few calls the element needs: recognising CUDA memory,
//! mapping it for the device (`GST_MAP_CUDA`), reading the context that owns it, and sharing a
//! `GstCudaContext` through GStreamer's context mechanism (`gst.cuda.context`).
//!
//! Source of the ABI used: the 1.22 headers `gst/cuda/gstcudamemory.h` (the public fields of
//! `GstCudaMemory`, `GST_MAP_CUDA`), `gstcudacontext.h`, `gstcudautils.h`, `gstcudaloader.h`.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use gst::glib;
use gst::glib::translate::{from_glib_full, FromGlibPtrNone, IntoGlibPtr, ToGlibPtr};
use gst::prelude::*;

use super::error::CudaError;

/// Context type name of the shared CUDA context (`GST_CUDA_CONTEXT_TYPE`).
pub const CONTEXT_TYPE: &str = "gst.cuda.context";
/// Caps feature of CUDA memory (`GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY`).
pub const CAPS_FEATURE_CUDA_MEMORY: &str = "memory:CUDAMemory";
/// `GST_MAP_CUDA`: map flag that returns the `CUdeviceptr` instead of a host copy.
const GST_MAP_CUDA: u32 = gst::ffi::GST_MAP_FLAG_LAST << 1;

/// The public head of `GstCudaMemory` (1.22): the memory, then the owning context and the
/// video layout (pitched planes) of the allocation.
#[repr(C)]
struct GstCudaMemoryHead {
    mem: gst::ffi::GstMemory,
    context: *mut gst::ffi::GstObject,
    info: gst_video::ffi::GstVideoInfo,
}

type FnVoidBool = unsafe extern "C" fn() -> glib::ffi::gboolean;
type FnIsCudaMemory = unsafe extern "C" fn(*mut gst::ffi::GstMemory) -> glib::ffi::gboolean;
type FnGetType = unsafe extern "C" fn() -> glib::ffi::GType;
type FnNew = unsafe extern "C" fn(u32) -> *mut gst::ffi::GstObject;
type FnNewWrapped = unsafe extern "C" fn(*mut c_void, c_int) -> *mut gst::ffi::GstObject;
type FnGetHandle = unsafe extern "C" fn(*mut gst::ffi::GstObject) -> *mut c_void;
type FnHandleQuery = unsafe extern "C" fn(
    *mut gst::ffi::GstElement,
    *mut gst::ffi::GstQuery,
    *mut gst::ffi::GstObject,
) -> glib::ffi::gboolean;
type FnHandleSetContext = unsafe extern "C" fn(
    *mut gst::ffi::GstElement,
    *mut gst::ffi::GstContext,
    c_int,
    *mut *mut gst::ffi::GstObject,
) -> glib::ffi::gboolean;
type FnNewContext = unsafe extern "C" fn(*mut gst::ffi::GstObject) -> *mut gst::ffi::GstContext;
type FnPoolNew = unsafe extern "C" fn(*mut gst::ffi::GstObject) -> *mut gst::ffi::GstBufferPool;

/// The loaded library and its entry points.
pub struct GstCuda {
    /// `gst_cuda_load_library` succeeded (called once, in [`library`]'s initialiser).
    driver_loaded: std::sync::OnceLock<bool>,
    load_library: FnVoidBool,
    is_cuda_memory: FnIsCudaMemory,
    context_get_type: FnGetType,
    context_new: FnNew,
    context_new_wrapped: FnNewWrapped,
    context_get_handle: FnGetHandle,
    handle_context_query: FnHandleQuery,
    handle_set_context: FnHandleSetContext,
    context_new_cuda_context: FnNewContext,
    buffer_pool_new: FnPoolNew,
    memory_init_once: unsafe extern "C" fn(),
    /// Kept loaded for the process's lifetime (the function pointers above point into it).
    _lib: libloading::Library,
}

/// Loads `libgstcuda-1.0.so.0` once. `None` (with the reason logged by the caller through
/// [`load_error`]) when it or one of the symbols is missing.
pub fn library() -> Option<&'static GstCuda> {
    LIB.get_or_init(load).as_ref().ok()
}

/// Why [`library`] returned `None`, if it did.
pub fn load_error() -> Option<&'static str> {
    LIB.get_or_init(load).as_ref().err().map(String::as_str)
}

static LIB: OnceLock<Result<GstCuda, String>> = OnceLock::new();

fn load() -> Result<GstCuda, String> {
    const NAME: &str = "libgstcuda-1.0.so.0";
    // SAFETY: loading GStreamer's own library runs only its (GObject-style) initialisers,
    // which have no preconditions; it is never unloaded.
    let lib = unsafe { libloading::Library::new(NAME) }.map_err(|e| format!("{NAME}: {e}"))?;
    macro_rules! sym {
        ($name:literal, $ty:ty) => {{
            // SAFETY: the symbol has this C signature in GStreamer 1.22's headers (see the
            // module docs); the pointer stays valid while `lib` is loaded (forever).
            let s: libloading::Symbol<'_, $ty> = unsafe { lib.get($name) }
                .map_err(|e| format!("{NAME}: {}: {e}", String::from_utf8_lossy($name)))?;
            *s
        }};
    }
    Ok(GstCuda {
        driver_loaded: std::sync::OnceLock::new(),
        load_library: sym!(b"gst_cuda_load_library", FnVoidBool),
        is_cuda_memory: sym!(b"gst_is_cuda_memory", FnIsCudaMemory),
        context_get_type: sym!(b"gst_cuda_context_get_type", FnGetType),
        context_new: sym!(b"gst_cuda_context_new", FnNew),
        context_new_wrapped: sym!(b"gst_cuda_context_new_wrapped", FnNewWrapped),
        context_get_handle: sym!(b"gst_cuda_context_get_handle", FnGetHandle),
        handle_context_query: sym!(b"gst_cuda_handle_context_query", FnHandleQuery),
        handle_set_context: sym!(b"gst_cuda_handle_set_context", FnHandleSetContext),
        context_new_cuda_context: sym!(b"gst_context_new_cuda_context", FnNewContext),
        buffer_pool_new: sym!(b"gst_cuda_buffer_pool_new", FnPoolNew),
        memory_init_once: sym!(b"gst_cuda_memory_init_once", unsafe extern "C" fn()),
        _lib: lib,
    })
}

/// A mapping of CUDA memory for the device (`GST_MAP_READ | GST_MAP_CUDA`), holding a
/// reference to its buffer. Unmapped when dropped; kept by the GPU backend until the kernels
/// that read it have finished.
pub struct CudaMapping {
    mem: *mut gst::ffi::GstMemory,
    info: gst::ffi::GstMapInfo,
    _buffer: gst::Buffer,
}

// SAFETY: the mapping is a device pointer plus GStreamer objects whose unmap and unref are
// thread-safe; nothing in it is tied to the thread that mapped it.
unsafe impl Send for CudaMapping {}

impl Drop for CudaMapping {
    fn drop(&mut self) {
        // SAFETY: `mem` was mapped with `info` by `map_device` and is kept alive by the
        // buffer reference; it is unmapped exactly once.
        unsafe { gst::ffi::gst_memory_unmap(self.mem, &mut self.info) };
    }
}

/// A buffer's CUDA memory mapped for the device to write (`GST_MAP_WRITE | GST_MAP_CUDA`):
/// the planes' device addresses. Unmapped when dropped, which must happen before the buffer
/// it came from is released (the owner keeps both, this one first).
pub struct DeviceWrite {
    mem: *mut gst::ffi::GstMemory,
    info: gst::ffi::GstMapInfo,
    /// `(CUdeviceptr, pitch)` of each plane of the memory's layout (`(0, 0)` past the last).
    pub planes: [(u64, usize); 4],
}

// SAFETY: a device pointer and a memory whose unmap is thread-safe.
unsafe impl Send for DeviceWrite {}

impl Drop for DeviceWrite {
    fn drop(&mut self) {
        // SAFETY: mapped by `map_device_write` with `info`; unmapped exactly once, while the
        // owner still holds the buffer (see the type's docs).
        unsafe { gst::ffi::gst_memory_unmap(self.mem, &mut self.info) };
    }
}

/// The luma plane of a buffer of CUDA memory, mapped for the device.
pub struct DevicePlane {
    /// `CUdeviceptr` of the plane's first sample.
    pub ptr: u64,
    /// Bytes from one row to the next.
    pub pitch: usize,
    /// The `CUcontext` that owns the memory, as an address.
    pub context: usize,
    /// `(CUdeviceptr, pitch)` of planes 1 and 2 (chroma; an interleaved UV plane is plane 1
    /// and plane 2 is then unused), `(0, 0)` where the format has none.
    pub chroma_planes: [(u64, usize); 2],
    /// Keeps the mapping (and buffer) alive.
    pub mapping: CudaMapping,
}

/// The layout a `GstCudaMemory` was allocated with: plane count (at most 4), offsets and
/// strides of its `GstVideoInfo`.
///
/// # Safety
/// `raw` must be a live `GstCudaMemory`.
unsafe fn cuda_memory_layout(raw: *mut gst::ffi::GstMemory) -> (usize, [usize; 4], [i32; 4]) {
    // SAFETY: the caller's contract; the public head has this layout in 1.22.
    let head = unsafe { &*(raw as *const GstCudaMemoryHead) };
    let n_planes = if head.info.finfo.is_null() {
        0
    } else {
        // SAFETY: a non-null finfo of a GstVideoInfo points at static format info.
        (unsafe { (*head.info.finfo).n_planes } as usize).min(4)
    };
    (n_planes, head.info.offset, head.info.stride)
}

/// Maps `raw` for the device (`flags | GST_MAP_CUDA`): the map info whose `data` is the
/// `CUdeviceptr`, `None` when the map fails.
///
/// # Safety
/// `raw` must be a live `GstCudaMemory`, unmapped later with the returned info.
unsafe fn map_for_device(
    raw: *mut gst::ffi::GstMemory,
    flags: u32,
) -> Option<gst::ffi::GstMapInfo> {
    let mut info = std::mem::MaybeUninit::<gst::ffi::GstMapInfo>::zeroed();
    // SAFETY: the caller's contract; `info` receives the mapping.
    let ok = unsafe { gst::ffi::gst_memory_map(raw, info.as_mut_ptr(), flags | GST_MAP_CUDA) };
    // SAFETY: initialised by a successful map.
    (ok != glib::ffi::GFALSE).then(|| unsafe { info.assume_init() })
}

impl GstCuda {
    /// Loads the CUDA driver inside GStreamer's library (`gst_cuda_load_library`). Must
    /// return true before any context call; call only after libcuda is known to load.
    ///
    /// Called once per process, serialised: GStreamer 1.22's loader is not thread-safe (two
    /// threads loading at once can briefly see a NULL entry in its function table, and the
    /// next CUDA call through it aborts the process), so concurrent elements must not race
    /// into it. Every context call of this module checks it first.
    pub fn load_driver(&self) -> bool {
        *self.driver_loaded.get_or_init(|| {
            // SAFETY: libcuda must load for the call to succeed, and is checked first
            // (cudarc's probe only dlopens it); no arguments.
            let present = unsafe { cudarc::driver::sys::is_culib_present() };
            // SAFETY: as above.
            present && unsafe { (self.load_library)() != glib::ffi::GFALSE }
        })
    }

    /// Whether `mem` is GStreamer CUDA memory.
    pub fn is_cuda_memory(&self, mem: &gst::MemoryRef) -> bool {
        // SAFETY: a valid memory pointer; the call only reads its allocator's type.
        unsafe { (self.is_cuda_memory)(mem.as_mut_ptr()) != glib::ffi::GFALSE }
    }

    /// Whether `obj` is a `GstCudaContext`.
    fn is_context(&self, obj: &gst::Object) -> bool {
        // SAFETY: get_type has no preconditions.
        let t: glib::Type = unsafe { glib::translate::from_glib((self.context_get_type)()) };
        obj.type_().is_a(t)
    }

    /// The `CUcontext` of a `GstCudaContext`, as an address (0 if `obj` is not one).
    pub fn context_handle(&self, obj: &gst::Object) -> usize {
        if !self.is_context(obj) {
            return 0;
        }
        // SAFETY: `obj` is a live GstCudaContext (checked above).
        unsafe { (self.context_get_handle)(obj.to_glib_none().0) as usize }
    }

    /// The CUDA ordinal of a `GstCudaContext` (its `cuda-device-id` property: a `guint` in
    /// GStreamer 1.22, read as either integer type), `None` if `obj` is not one.
    pub fn context_device(&self, obj: &gst::Object) -> Option<usize> {
        if !self.is_context(obj) || obj.find_property("cuda-device-id").is_none() {
            return None;
        }
        let v = obj.property_value("cuda-device-id");
        v.get::<u32>()
            .ok()
            .map(|d| d as usize)
            .or_else(|| v.get::<i32>().ok().and_then(|d| usize::try_from(d).ok()))
    }

    /// Maps the single CUDA memory of `buffer` for the device and locates its luma plane:
    /// `offset` and `stride` of plane 0 come from the buffer's video meta when it has one,
    /// else from the memory's own layout.
    ///
    /// Errors: [`CudaError::Driver`] naming what is wrong (not one CUDA memory, map failed).
    pub fn map_device(&self, buffer: &gst::Buffer) -> Result<DevicePlane, CudaError> {
        let bad = |code: &str| CudaError::Driver {
            call: "gst_memory_map(GST_MAP_CUDA)",
            code: code.to_owned(),
        };
        if !self.load_driver() {
            return Err(bad(
                "the CUDA driver did not load in GStreamer's CUDA library",
            ));
        }
        if buffer.n_memory() != 1 {
            return Err(bad("CUDA buffer with more than one memory"));
        }
        let mem = buffer.peek_memory(0);
        if !self.is_cuda_memory(mem) {
            return Err(bad("not CUDA memory"));
        }
        let raw = mem.as_mut_ptr();
        // SAFETY: `raw` is GstCudaMemory (checked).
        let (n_planes, mut offsets, strides) = unsafe { cuda_memory_layout(raw) };
        // SAFETY: as above.
        let head = unsafe { &*(raw as *const GstCudaMemoryHead) };
        let mut strides = strides.map(|s| s.max(0) as usize);
        if let Some(meta) = buffer.meta::<gst_video::VideoMeta>() {
            for (i, (o, st)) in meta.offset().iter().zip(meta.stride()).enumerate().take(4) {
                offsets[i] = *o;
                strides[i] = (*st).max(0) as usize;
            }
        }
        let (offset, stride) = (offsets[0], strides[0]);
        let context = if head.context.is_null() {
            0
        } else {
            // SAFETY: the memory holds a reference on its context for its lifetime.
            let ctx = unsafe { gst::Object::from_glib_none(head.context) };
            self.context_handle(&ctx)
        };
        // SAFETY: `raw` is a live CUDA memory of `buffer`, unmapped by `CudaMapping`.
        let Some(info) = (unsafe { map_for_device(raw, gst::ffi::GST_MAP_READ) }) else {
            return Err(bad("mapping the CUDA memory for the device failed"));
        };
        let mapping = CudaMapping {
            mem: raw,
            info,
            _buffer: buffer.clone(),
        };
        let base = mapping.info.data as u64;
        let plane = |i: usize| {
            if i < n_planes {
                (base + offsets[i] as u64, strides[i])
            } else {
                (0, 0)
            }
        };
        Ok(DevicePlane {
            ptr: base + offset as u64,
            pitch: stride,
            context,
            chroma_planes: [plane(1), plane(2)],
            mapping,
        })
    }

    /// Maps the single CUDA memory of `buffer` for the device to write, with the plane layout
    /// the memory was allocated with (its `GstVideoInfo`: pitched planes).
    ///
    /// Errors: [`CudaError::Driver`] naming what is wrong (not one CUDA memory, map failed).
    pub fn map_device_write(&self, buffer: &gst::BufferRef) -> Result<DeviceWrite, CudaError> {
        let bad = |code: &str| CudaError::Driver {
            call: "gst_memory_map(GST_MAP_WRITE | GST_MAP_CUDA)",
            code: code.to_owned(),
        };
        if !self.load_driver() {
            return Err(bad(
                "the CUDA driver did not load in GStreamer's CUDA library",
            ));
        }
        if buffer.n_memory() != 1 || !self.is_cuda_memory(buffer.peek_memory(0)) {
            return Err(bad("the buffer is not one CUDA memory"));
        }
        let raw = buffer.peek_memory(0).as_mut_ptr();
        // SAFETY: `raw` is GstCudaMemory (checked).
        let (n_planes, offsets, strides) = unsafe { cuda_memory_layout(raw) };
        // SAFETY: `raw` is a live CUDA memory of `buffer`, unmapped by `DeviceWrite`.
        let Some(info) = (unsafe { map_for_device(raw, gst::ffi::GST_MAP_WRITE) }) else {
            return Err(bad("mapping the CUDA memory for the device failed"));
        };
        let base = info.data as u64;
        let mut planes = [(0u64, 0usize); 4];
        for (i, p) in planes.iter_mut().enumerate().take(n_planes) {
            *p = (base + offsets[i] as u64, strides[i].max(0) as usize);
        }
        Ok(DeviceWrite {
            mem: raw,
            info,
            planes,
        })
    }

    /// A new `GstCudaBufferPool` allocating CUDA memory in `ctx` (a `GstCudaContext`), to be
    /// configured with video caps like any video pool (`gst_cuda_buffer_pool_new`).
    pub fn new_buffer_pool(&self, ctx: &gst::Object) -> Option<gst::BufferPool> {
        if !self.load_driver() || !self.is_context(ctx) {
            return None;
        }
        // The default CUDA allocator the pool allocates with exists only once this has run
        // (nvcodec runs it when its plugin loads, which a pipeline without nvcodec elements
        // never does). SAFETY: no arguments; idempotent.
        unsafe { (self.memory_init_once)() };
        // SAFETY: a live GstCudaContext; returns a new (floating-sunk) reference or NULL.
        let ptr = unsafe { (self.buffer_pool_new)(ctx.to_glib_none().0) };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: a live object; a floating reference is turned into the one we own.
        unsafe {
            if glib::gobject_ffi::g_object_is_floating(ptr.cast()) != glib::ffi::GFALSE {
                glib::gobject_ffi::g_object_ref_sink(ptr.cast());
            }
            Some(from_glib_full(ptr))
        }
    }

    /// Wraps `cu_ctx` (a context of device `cu_device`) in a new `GstCudaContext` that does
    /// not own it. `keep` is attached to the object and dropped when it is finalized: pass
    /// what keeps the `CUcontext` alive (the primary context's retain) so that elements that
    /// share the object never see a dead context.
    pub fn wrap_context<K: Send + Sync + 'static>(
        &self,
        cu_ctx: usize,
        cu_device: i32,
        keep: K,
    ) -> Option<gst::Object> {
        if !self.load_driver() {
            return None;
        }
        // SAFETY: a live context and its device; returns a new (floating-sunk) reference.
        let ptr = unsafe { (self.context_new_wrapped)(cu_ctx as *mut c_void, cu_device) };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: transfer full.
        let obj: gst::Object = unsafe { from_glib_full(ptr) };
        // SAFETY: the key is ours and only ever holds a `K`.
        unsafe { obj.set_data("vmafcompare-context-keep", keep) };
        Some(obj)
    }

    /// A new `GstCudaContext` owning a new (non-primary) `CUcontext` on device `device_id`
    /// (`gst_cuda_context_new`), as nvcodec elements make when no context is shared. For
    /// applications and tests that want elements in a context of their own.
    pub fn new_owned_context(&self, device_id: u32) -> Option<gst::Object> {
        if !self.load_driver() {
            return None;
        }
        // SAFETY: returns a new reference or NULL.
        let ptr = unsafe { (self.context_new)(device_id) };
        (!ptr.is_null()).then(|| unsafe { from_glib_full(ptr) })
    }

    /// A `GstContext` of type [`CONTEXT_TYPE`] carrying `ctx` (persistent).
    pub fn new_context(&self, ctx: &gst::Object) -> Option<gst::Context> {
        // SAFETY: a live GstCudaContext; returns a new reference.
        let ptr = unsafe { (self.context_new_cuda_context)(ctx.to_glib_none().0) };
        (!ptr.is_null()).then(|| unsafe { from_glib_full(ptr) })
    }

    /// `set_context` helper: takes the `GstCudaContext` out of `context` into `slot` when
    /// the slot is empty and the context is of `device_id` (-1: any).
    pub fn handle_set_context(
        &self,
        element: &gst::Element,
        context: &gst::Context,
        device_id: i32,
        slot: &mut Option<gst::Object>,
    ) {
        if !self.load_driver() {
            return;
        }
        let mut raw: *mut gst::ffi::GstObject = match slot.take() {
            // Ownership moves into `raw` and back below.
            Some(o) => o.into_glib_ptr(),
            None => std::ptr::null_mut(),
        };
        // SAFETY: live element and context; `raw` is null or an owned GstCudaContext, which
        // the call keeps or replaces with a new owned reference.
        unsafe {
            (self.handle_set_context)(
                element.to_glib_none().0,
                context.to_glib_none().0,
                device_id,
                &mut raw,
            );
        }
        if !raw.is_null() {
            // SAFETY: transfer full (see above).
            *slot = Some(unsafe { from_glib_full(raw) });
        }
    }

    /// Answers a context query of type [`CONTEXT_TYPE`] with `ctx`. Returns whether it was
    /// answered.
    pub fn handle_context_query(
        &self,
        element: &gst::Element,
        query: &mut gst::QueryRef,
        ctx: &gst::Object,
    ) -> bool {
        if !self.load_driver() {
            return false;
        }
        // SAFETY: live element, query and context.
        unsafe {
            (self.handle_context_query)(
                element.to_glib_none().0,
                query.as_mut_ptr(),
                ctx.to_glib_none().0,
            ) != glib::ffi::GFALSE
        }
    }
}
