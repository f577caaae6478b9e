//! Test hooks for the CUDA backend's failure paths: make the k-th CUDA step fail, and count
//! the driver handles (streams, events, modules, contexts) the backend owns.
//!
//! Every fallible CUDA call of this crate goes through [`super::error::DriverResultExt`]
//! (`during` / `allocating`), which calls `check` once the driver has answered: when the
//! hook is armed at step `k`, the `k`-th such call (counted from [`arm`]) is turned into a
//! failure even though the driver succeeded, and whatever that call made is dropped as it
//! would be on a real failure. Allocation steps fail with `CUDA_ERROR_OUT_OF_MEMORY`, other
//! steps with `CUDA_ERROR_UNKNOWN`. Unarmed, `check` is one relaxed atomic load.
//!
//! The hook is process-wide (the element calls CUDA from the application thread at
//! NULL -> READY and from streaming threads), so tests that use it run one at a time.
//! It is meant for tests (`tests/gpu_faults.rs`) and examples, never for production use.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use cudarc::driver::sys::CUresult;
use cudarc::driver::DriverError;

/// Whether [`check`] counts steps at all (armed or recording).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The step that fails (1-based); 0: none (recording only).
static FAIL_AT: AtomicU64 = AtomicU64::new(0);
/// Steps counted since [`arm`] or [`record`].
static STEPS: AtomicU64 = AtomicU64::new(0);
/// The names of the counted steps (recording), and the step that was made to fail.
static LOG: Mutex<Log> = Mutex::new(Log {
    names: Vec::new(),
    fired: None,
});

struct Log {
    names: Vec<&'static str>,
    fired: Option<&'static str>,
}

fn log() -> std::sync::MutexGuard<'static, Log> {
    LOG.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes the `step`-th CUDA step from now (1-based) fail; the steps are also recorded.
pub fn arm(step: u64) {
    {
        let mut l = log();
        l.names.clear();
        l.fired = None;
    }
    STEPS.store(0, Ordering::SeqCst);
    FAIL_AT.store(step, Ordering::SeqCst);
    ACTIVE.store(true, Ordering::SeqCst);
}

/// Records the names of the CUDA steps from now on, failing none.
pub fn record() {
    arm(0);
}

/// Stops counting; returns the names of the steps counted since [`arm`] or [`record`], in
/// order (`call` names such as `cuModuleLoadData(vif)`).
pub fn disarm() -> Vec<&'static str> {
    ACTIVE.store(false, Ordering::SeqCst);
    FAIL_AT.store(0, Ordering::SeqCst);
    std::mem::take(&mut log().names)
}

/// The step that the armed hook made fail, if it was reached.
pub fn fired() -> Option<&'static str> {
    log().fired
}

/// Called after every CUDA step named `call`: counts it and, at the armed step, returns the
/// error the step is made to fail with (`alloc`: out of memory, else an unknown error).
#[inline]
pub(crate) fn check(call: &'static str, alloc: bool) -> Result<(), DriverError> {
    if !ACTIVE.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut l = log();
    let n = STEPS.fetch_add(1, Ordering::SeqCst) + 1;
    l.names.push(call);
    if n == FAIL_AT.load(Ordering::SeqCst) {
        l.fired = Some(call);
        return Err(DriverError(if alloc {
            CUresult::CUDA_ERROR_OUT_OF_MEMORY
        } else {
            CUresult::CUDA_ERROR_UNKNOWN
        }));
    }
    Ok(())
}

/// Kinds of driver handle the backend owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handle {
    /// A retained primary context (`cuDevicePrimaryCtxRetain`).
    Context = 0,
    /// A kernel module (`cuModuleLoadData`).
    Module = 1,
    /// A stream (`cuStreamCreate`).
    Stream = 2,
    /// An event (`cuEventCreate`).
    Event = 3,
}

static LIVE: [AtomicI64; 4] = [
    AtomicI64::new(0),
    AtomicI64::new(0),
    AtomicI64::new(0),
    AtomicI64::new(0),
];

/// Counts one live handle of a kind for as long as it exists; owners keep one beside each
/// handle, so [`live`] tells how many the crate holds at any moment.
#[derive(Debug)]
pub(crate) struct Counted(Handle);

impl Counted {
    pub(crate) fn new(kind: Handle) -> Self {
        LIVE[kind as usize].fetch_add(1, Ordering::SeqCst);
        Self(kind)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        LIVE[self.0 as usize].fetch_sub(1, Ordering::SeqCst);
    }
}

/// Handles this crate holds now: `[contexts, modules, streams, events]` (a leak across state
/// cycles shows as growth). Counts only what the CUDA backend creates, in this process.
pub fn live() -> [i64; 4] {
    [0, 1, 2, 3].map(|i| LIVE[i].load(Ordering::SeqCst))
}
