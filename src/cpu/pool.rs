//! The CPU backend's own worker threads: a `rayon` pool that an element creates at
//! NULL->READY (`threads` property) and whose threads are joined when it goes at READY->NULL.
//!
//! Never rayon's global pool: the application may use that one for its own work, and a global
//! pool's threads outlive the element. Dropping a `rayon::ThreadPool` only asks its threads to
//! stop; [`CpuPool`] spawns them itself (rayon's `spawn_handler`) so that its `Drop` can join
//! them, and no thread of it outlives the value.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// Why a [`CpuPool`] could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot start {threads} CPU scoring threads: {message}")]
pub struct PoolError {
    /// Threads asked for.
    pub threads: usize,
    /// What the system or rayon said.
    pub message: String,
}

/// Threads of a pool made with `threads = 0`: one per core the process may run on (as
/// `std::thread::available_parallelism`, which honours CPU affinity and cgroup quotas), 1
/// when that is unknown.
pub fn threads_per_core() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A pool of worker threads owned by one element (or shared by several through an `Arc`).
///
/// Frames are scored on it in parallel by `crate::engine::backend::CpuBackend::with_pool`. Dropping the
/// last `Arc` stops the threads and waits for them (the jobs in progress finish first).
pub struct CpuPool {
    pool: Option<rayon::ThreadPool>,
    handles: Arc<Mutex<Vec<JoinHandle<()>>>>,
    threads: usize,
}

impl std::fmt::Debug for CpuPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuPool")
            .field("threads", &self.threads)
            .finish()
    }
}

impl CpuPool {
    /// Starts `threads` worker threads (0: [`threads_per_core`]), named
    /// `vmafcompare-cpu-N`.
    ///
    /// Errors: [`PoolError`] when the system refuses a thread; the threads started before it
    /// are stopped and joined.
    pub fn new(threads: usize) -> Result<Self, PoolError> {
        let threads = if threads == 0 {
            threads_per_core()
        } else {
            threads
        };
        let handles: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let spawned = handles.clone();
        // Threads that have started (named, running rayon's loop).
        let started: Arc<(Mutex<usize>, Condvar)> = Arc::default();
        let starting = started.clone();
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("vmafcompare-cpu-{i}"))
            // A panic in a job is caught where the job runs (see `CpuBackend`); this handler
            // only keeps rayon from aborting the process should one escape.
            .panic_handler(|_| {})
            .start_handler(move |_| {
                *lock(&starting.0) += 1;
                starting.1.notify_all();
            })
            .spawn_handler(move |thread| {
                let mut b = std::thread::Builder::new();
                if let Some(name) = thread.name() {
                    b = b.name(name.to_owned());
                }
                if let Some(size) = thread.stack_size() {
                    b = b.stack_size(size);
                }
                let handle = b.spawn(|| thread.run())?;
                lock(&spawned).push(handle);
                Ok(())
            })
            .build();
        match built {
            Ok(pool) => {
                // Wait until every thread runs, so that the pool is complete when `new`
                // returns (a bounded wait: a slow start is not an error).
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                let mut n = lock(&started.0);
                while *n < threads {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    n = started
                        .1
                        .wait_timeout(n, left)
                        .map(|(g, _)| g)
                        .unwrap_or_else(|p| p.into_inner().0);
                }
                drop(n);
                Ok(Self {
                    pool: Some(pool),
                    handles,
                    threads,
                })
            }
            Err(e) => {
                // rayon has told the threads it started to stop; wait for them.
                join_all(&handles);
                Err(PoolError {
                    threads,
                    message: e.to_string(),
                })
            }
        }
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `job` on a worker thread, asynchronously. `job` must not panic (the backend
    /// catches panics inside it).
    pub(crate) fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        if let Some(pool) = &self.pool {
            pool.spawn(job);
        }
    }

    /// Whether the calling thread is one of this pool's workers.
    pub(crate) fn is_worker(&self) -> bool {
        self.pool
            .as_ref()
            .is_some_and(|p| p.current_thread_index().is_some())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Joins every handle, except the calling thread's own (a pool dropped from one of its
/// workers cannot wait for itself; that thread ends when it returns to rayon).
fn join_all(handles: &Mutex<Vec<JoinHandle<()>>>) {
    let me = std::thread::current().id();
    let all = std::mem::take(&mut *lock(handles));
    for h in all {
        if h.thread().id() != me {
            let _ = h.join();
        }
    }
}

impl Drop for CpuPool {
    fn drop(&mut self) {
        // Dropping the rayon pool tells its threads to finish their jobs and exit.
        drop(self.pool.take());
        join_all(&self.handles);
    }
}
