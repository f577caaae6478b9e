//! [`RenditionLanes`]: streams on which a ladder's per-rendition kernel chains run beside each
//! other, forked from and joined back into the stream that did the reference's work.
//!
//! A ladder scores one reference against several renditions. The reference's share of VIF
//! and ADM (its pyramid, its wavelet bands) is done once on the instance's stream; what is
//! left per rendition is a chain of small kernels (VIF scales 1..3, ADM's four scales of DWT,
//! decoupling and masking) whose grids leave most of the GPU idle. Run one after the other on
//! one stream, those chains made a 5-rendition ladder no faster than five separate elements
//! (issue 30, `vmaf_bench --ladder` on an H200), although it did about 15% less GPU work:
//! separate elements run their chains on separate streams. A lane per rendition does the same.

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

use super::context::GpuDevice;
use super::error::{CudaError, DriverResultExt};
use super::fault::{Counted, Handle};

/// `n` streams with an event each, and the fork event: lane `i` runs rendition `i`'s chain of
/// a ladder frame after the reference's work ([`RenditionLanes::fork`]), and the instance's
/// stream waits for every used lane before its next work ([`RenditionLanes::join`]).
///
/// The owner keeps each lane's scratch to itself and uses it in frame order on that lane.
/// Dropping synchronises every lane, so an owner that declares its lanes before its scratch
/// frees nothing a lane still reads, even after a failed enqueue that never joined.
pub struct RenditionLanes {
    streams: Vec<Arc<CudaStream>>,
    /// Recorded on the instance's stream after the reference's work.
    fork: CudaEvent,
    /// `joins[i]`: recorded on lane `i` after its chain.
    joins: Vec<CudaEvent>,
    _counted: Vec<Counted>,
}

impl RenditionLanes {
    /// `n` lanes (streams of `dev`'s context) and `n + 1` events without timing.
    ///
    /// Errors: [`CudaError::Driver`] from `cuStreamCreate` / `cuEventCreate`; whatever was
    /// made is released.
    pub fn new(dev: &GpuDevice, n: usize) -> Result<Self, CudaError> {
        let event = || {
            dev.context()
                .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .during("cuEventCreate(rendition lane)")
        };
        let mut counted = Vec::with_capacity(2 * n + 1);
        let fork = event()?;
        counted.push(Counted::new(Handle::Event));
        let mut streams = Vec::with_capacity(n);
        let mut joins = Vec::with_capacity(n);
        for _ in 0..n {
            streams.push(dev.new_stream()?);
            counted.push(Counted::new(Handle::Stream));
            joins.push(event()?);
            counted.push(Counted::new(Handle::Event));
        }
        Ok(Self {
            streams,
            fork,
            joins,
            _counted: counted,
        })
    }

    /// Number of lanes.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// Whether there are no lanes.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Lane `i`, if there is one.
    pub fn stream(&self, i: usize) -> Option<&Arc<CudaStream>> {
        self.streams.get(i)
    }

    /// Makes the first `used` lanes (at most all) wait for what `main` has enqueued so far.
    ///
    /// Errors: [`CudaError::Driver`] from `cuEventRecord` / `cuStreamWaitEvent`.
    pub fn fork(&self, main: &Arc<CudaStream>, used: usize) -> Result<(), CudaError> {
        self.fork
            .record(main)
            .during("cuEventRecord(rendition fork)")?;
        for lane in self.streams.iter().take(used) {
            lane.wait(&self.fork)
                .during("cuStreamWaitEvent(rendition lane)")?;
        }
        Ok(())
    }

    /// Makes `main` wait for what the first `used` lanes (at most all) have enqueued so far.
    ///
    /// Errors: [`CudaError::Driver`] from `cuEventRecord` / `cuStreamWaitEvent`.
    pub fn join(&self, main: &Arc<CudaStream>, used: usize) -> Result<(), CudaError> {
        for (lane, join) in self.streams.iter().zip(&self.joins).take(used) {
            join.record(lane).during("cuEventRecord(rendition join)")?;
            main.wait(join)
                .during("cuStreamWaitEvent(rendition join)")?;
        }
        Ok(())
    }
}

impl Drop for RenditionLanes {
    fn drop(&mut self) {
        for lane in &self.streams {
            // Nothing to report to: a failed synchronisation leaves the context broken, which
            // the owner's next call reports.
            let _ = lane.synchronize();
        }
    }
}
