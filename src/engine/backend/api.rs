//! The backend contract: one submission of a frame set (the reference and the renditions
//! paired with it; a pair is the set of one), its features collected in submission order.

use crate::engine::error::EngineError;
use crate::engine::frame_set::{FrameSet, SetFeatures};

/// A feature backend: the CPU reference implementation or the GPU.
///
/// A backend is made for a number of rendition slots ([`Backend::renditions`]: 1 for a pair)
/// and takes one [`FrameSet`] at a time: the reference placed once, the instances that read
/// the reference alone ([`crate::features::Needs::reference_only`], motion) computed once
/// against the previous submitted reference (0 after creation or [`Backend::reset`]), every
/// other instance on each rendition of the set whose `full` is set. Renditions arrive at their
/// own sizes and are scaled to the scoring size first. Each rendition's values equal, bit for
/// bit, what the backend gives for that rendition alone (a pair).
///
/// Work is collected in submission order, so a backend may keep several sets in flight
/// (upload, kernels and readback of different sets overlapping).
pub trait Backend: Send {
    /// Short name for logs and messages (`"cpu"`, `"cuda"`).
    fn name(&self) -> &'static str;
    /// Rendition slots, >= 1 (1: a pair).
    fn renditions(&self) -> usize {
        1
    }
    /// Starts one frame set. Host planes are read only during the call unless
    /// [`Backend::defers_host_rows`] (then their [`Hold`](crate::video::frame::Hold) is kept);
    /// a [`LumaInput::Device`](crate::video::frame::LumaInput::Device) plane's hold is kept
    /// until the kernels reading it have finished. May block while
    /// [`Backend::max_in_flight`] sets are in flight.
    ///
    /// Errors: [`EngineError::Feature`] for planes of another geometry, or a device plane
    /// given to a backend without [`Backend::reads_device`]; [`EngineError::Backend`] for a
    /// rendition slot outside the backend's or given twice, chroma in the form the backend
    /// does not take ([`Backend::reads_components`]), and device faults.
    fn submit_set(&mut self, set: FrameSet<'_>) -> Result<(), EngineError>;
    /// The values of the oldest submitted set not yet collected: each submitted rendition's
    /// slot and raw values, in submission order (reference-only instances' values the same in
    /// every rendition; 0 for instances a rendition did not compute). `wait == false`: `None`
    /// when that set is not finished yet; `wait == true`: blocks until it is. `None` as well
    /// when nothing is in flight.
    ///
    /// Errors: a device fault of the collected set.
    fn collect_set(&mut self, wait: bool) -> Result<Option<SetFeatures>, EngineError>;
    /// Whether chroma is taken as [`FrameChroma::Components`](crate::engine::FrameChroma)
    /// (unpacked by the backend, e.g. on the GPU) rather than packed planes.
    fn reads_components(&self) -> bool {
        false
    }
    /// Whether [`LumaInput::Device`](crate::video::frame::LumaInput::Device) planes are
    /// accepted (the GPU backend).
    fn reads_device(&self) -> bool {
        false
    }
    /// Whether the backend keeps host rows that carry a [`Hold`](crate::video::frame::Hold)
    /// past the submission and reads them later (the CPU backend on a pool, whose workers
    /// convert them), so that the caller should map frames with one. Without a hold, rows
    /// are copied before the submission returns.
    fn defers_host_rows(&self) -> bool {
        false
    }
    /// Sets the scorer lets be in flight before it waits for the oldest.
    fn max_in_flight(&self) -> usize {
        1
    }
    /// Sets scored at the same time, for estimating when a set handed over now will be done
    /// (a live pipeline's skip decision): the CPU backend's threads; 1 for a backend whose
    /// sets in flight go through one pipeline in turn (the default).
    fn parallel(&self) -> usize {
        1
    }
    /// Drops in-flight work and forgets the previous reference frame (after a flush or
    /// discontinuity).
    fn reset(&mut self);
}
