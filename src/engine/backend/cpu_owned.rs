//! Planes owned by the CPU pool's jobs: packed copies, or host rows converted by the first
//! worker that reads them, their buffers recycled through a free list.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use super::cpu_frame::{device_refused, FramePlan};
use crate::engine::error::EngineError;
use crate::engine::frame::{ComponentInput, FeatureError, LumaInput, LumaPlane};
use crate::video::frame::{Detached, HostComponent, HostLuma};

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Plane buffers given back by finished jobs, reused by the next submissions.
pub(super) type FreeList = Arc<Mutex<Free>>;

/// Buffers kept on the free list at least; more when more frames are in flight
/// ([`Parallel::in_flight`]): a buffer freed and allocated again each frame costs page
/// faults and, in a process of many threads, `munmap`'s TLB shootdowns on every core.
pub(super) const MIN_FREE: usize = 64;

/// The free buffers and how many may be kept.
#[derive(Default)]
pub(super) struct Free {
    pub(super) buffers: Vec<Vec<u16>>,
    pub(super) keep: usize,
}

/// A buffer from the free list for a plane of `len` samples: the smallest that holds it,
/// else the last freed (or a new, empty one).
///
/// Luma and chroma buffers share the list: a chroma buffer taken for a luma plane grows
/// (new pages to fault in), and the luma buffer left behind then holds a chroma plane. Taking
/// the last freed one grew 22 chroma buffers in a 32-frame 1080p run of pairs on two threads
/// (page faults 44k -> 52k, about 3% of the run's wall time) once the order in which a set's
/// planes are copied changed; a buffer that fits grows none.
pub(super) fn take(free: &FreeList, len: usize) -> Vec<u16> {
    let mut free = lock(free);
    let fit = free
        .buffers
        .iter()
        .enumerate()
        .filter(|(_, b)| b.capacity() >= len)
        .min_by_key(|(_, b)| b.capacity())
        .map(|(i, _)| i);
    match fit {
        Some(i) => free.buffers.swap_remove(i),
        None => free.buffers.pop().unwrap_or_default(),
    }
}

/// Host rows not converted yet: read by the first worker that needs the plane.
pub(super) enum Pending {
    Luma(Detached<HostLuma<'static>>),
    Component(Detached<HostComponent<'static>>),
}

/// A packed plane owned by a job; its samples return to the free list when it drops.
///
/// Filled when it is made (a copy in the submitting thread), or, for rows whose mapping has
/// a [`Hold`](crate::video::frame::Hold), by the first worker that views it (the rows stay
/// mapped until then): the conversion then runs on the pool, in parallel, instead of in the
/// streaming thread. Frame i's reference is viewed by jobs i, i + 1 and i + 2 (motion); the
/// first converts it, the others wait for that ([`OnceLock`]).
pub(super) struct Owned {
    data: OnceLock<Vec<u16>>,
    pending: Mutex<Option<Pending>>,
    width: usize,
    height: usize,
    bpc: u32,
    free: FreeList,
}

impl Owned {
    pub(super) fn filled(
        data: Vec<u16>,
        (width, height): (usize, usize),
        bpc: u32,
        free: &FreeList,
    ) -> Self {
        Self {
            data: OnceLock::from(data),
            pending: Mutex::new(None),
            width,
            height,
            bpc,
            free: free.clone(),
        }
    }

    pub(super) fn deferred(
        pending: Pending,
        (width, height): (usize, usize),
        bpc: u32,
        free: &FreeList,
    ) -> Self {
        Self {
            data: OnceLock::new(),
            pending: Mutex::new(Some(pending)),
            width,
            height,
            bpc,
            free: free.clone(),
        }
    }

    /// A packed copy of `p` in a buffer from `free`.
    pub(super) fn copy(p: &LumaPlane, free: &FreeList) -> Self {
        let mut data = take(free, p.width * p.height);
        data.clear();
        data.reserve(p.width * p.height);
        for y in 0..p.height {
            data.extend_from_slice(p.row(y));
        }
        Self::filled(data, (p.width, p.height), p.bpc, free)
    }

    /// A packed plane of a luma input: packed planes copied, host rows converted (by the
    /// first worker that views them when they are held). The size is checked against `plan`
    /// (or `size`, a scaled stream's source size) here, so a wrong frame fails at submission.
    pub(super) fn luma(
        plan: &FramePlan,
        input: &LumaInput<'_>,
        free: &FreeList,
        size: Option<(usize, usize)>,
    ) -> Result<Self, EngineError> {
        let (w, h, bpc) = plan.geometry.triple();
        let (w, h) = size.unwrap_or((w, h));
        let geometry = (w, h, bpc);
        match input {
            LumaInput::Packed(p) => {
                FeatureError::check_plane("vmaf", geometry, p)?;
                Ok(Self::copy(p, free))
            }
            LumaInput::Host(h) => {
                if (h.width, h.height) != (geometry.0, geometry.1) {
                    return Err(
                        FeatureError::wrong_size("vmaf", geometry, (h.width, h.height)).into(),
                    );
                }
                let size = (h.width, h.height);
                let bpc = plan.geometry.bpc;
                Ok(match h.detach() {
                    Some(d) => Self::deferred(Pending::Luma(d), size, bpc, free),
                    None => {
                        let mut data = take(free, h.width * h.height);
                        h.to_packed(&mut data);
                        Self::filled(data, size, bpc, free)
                    }
                })
            }
            LumaInput::Device(_) => Err(device_refused()),
        }
    }

    /// A packed plane of a chroma component in its buffer's own layout, at `bpc` bits
    /// (converted by the first worker that views it when it is held).
    pub(super) fn component(
        input: &ComponentInput<'_>,
        bpc: u32,
        free: &FreeList,
    ) -> Result<Self, EngineError> {
        let ComponentInput::Host(c) = input else {
            return Err(device_refused());
        };
        let size = (c.width, c.height);
        Ok(match c.detach() {
            Some(d) => Self::deferred(Pending::Component(d), size, bpc, free),
            None => {
                let mut data = take(free, c.width * c.height);
                c.to_packed(&mut data);
                Self::filled(data, size, bpc, free)
            }
        })
    }

    pub(super) fn view(&self) -> Result<LumaPlane<'_>, EngineError> {
        let data = self.data.get_or_init(|| {
            let mut data = take(&self.free, self.width * self.height);
            // Taken once: the rows (and the buffer mapping they keep) go as soon as they are
            // converted.
            match lock(&self.pending).take() {
                Some(Pending::Luma(d)) => d.view().to_packed(&mut data),
                Some(Pending::Component(d)) => d.view().to_packed(&mut data),
                None => data.clear(),
            }
            data
        });
        LumaPlane::packed(data, self.width, self.height, self.bpc).ok_or_else(|| {
            EngineError::Backend {
                backend: "cpu",
                message: format!(
                    "internal: a {}x{} plane of {} samples",
                    self.width,
                    self.height,
                    data.len()
                ),
            }
        })
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        let Some(data) = self.data.take() else {
            return;
        };
        let mut free = lock(&self.free);
        if data.capacity() > 0 && free.buffers.len() < free.keep.max(MIN_FREE) {
            free.buffers.push(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(capacities: &[usize]) -> FreeList {
        let buffers = capacities.iter().map(|&c| Vec::with_capacity(c)).collect();
        Arc::new(Mutex::new(Free { buffers, keep: 8 }))
    }

    /// A 1080p I420 luma plane (2,073,600 samples) takes the luma-sized buffer even when a
    /// chroma-sized one (518,400) was freed last, and a chroma plane the smallest that holds
    /// it: no buffer grows (the page faults of d22d01a's 2-thread slowdown).
    #[test]
    fn a_plane_takes_the_smallest_buffer_that_holds_it() {
        let (luma, chroma) = (1920 * 1080, 960 * 540);
        let free = list(&[luma, chroma, luma, chroma]);
        assert!(take(&free, luma).capacity() >= luma);
        assert!(take(&free, luma).capacity() >= luma);
        let c = take(&free, chroma);
        assert!(c.capacity() >= chroma && c.capacity() < luma);
        assert_eq!(lock(&free).buffers.len(), 1);
    }

    /// With no buffer large enough, the last freed one is taken (it grows once), and an empty
    /// list gives a new, empty buffer.
    #[test]
    fn without_a_fit_the_last_freed_is_taken() {
        let free = list(&[100, 10]);
        assert_eq!(take(&free, 1000).capacity(), 10);
        assert_eq!(take(&free, 1000).capacity(), 100);
        assert_eq!(take(&free, 1000).capacity(), 0);
    }
}
