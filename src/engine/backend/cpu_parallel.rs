//! Frames in flight on a [`CpuPool`]: each submitted pair is copied into buffers of its own
//! and scored on the pool; results wait in submission order. An unscaled pair is one job
//! that converts its host rows and then one job per feature instance, each with an extractor
//! of that instance ([`Parallel::fan_out`], as libvmaf 3.2.0 queues a frame's features); a
//! pair whose distorted stream is scaled, and a ladder frame, is one job with its own
//! [`Extractors`].
//!
//! Motion reads another frame (the previous reference), `speed_temporal` the previous
//! reference and distorted frames. The job of frame i holds frame i-1's buffers (an `Arc`
//! shared with that frame's job), so the order in which workers finish changes nothing.
//!
//! A ladder backend's job is one ladder frame: the reference (converted, and scaled, by the
//! submitting thread) and a copy of each rendition's planes, which the worker scales and
//! scores ([`Extractors::extract_ladder`]).

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::cpu_frame::{scale_into, Extractors, FramePlan, LadderPlanes, RenditionBuffers, Scaled};
use super::cpu_owned::{lock, FreeList, Owned};
use crate::cpu::CpuPool;
use crate::engine::error::EngineError;
use crate::engine::frame::{Chroma, ChromaInput, ChromaPair, FeatureError, LumaInput, LumaPlane};
use crate::engine::frame_set::SetFeatures;
use crate::engine::scale::{LadderScaling, StreamScaler};
use crate::features::RawFeatures;
use crate::features::{CpuExtractor, HostFrame};

/// One frame's result slot (`T`: a pair's [`RawFeatures`] or a ladder frame's
/// [`SetFeatures`]): filled by its job, read by [`Parallel::collect`].
struct Flight<T> {
    result: Mutex<Option<Result<T, EngineError>>>,
    done: Condvar,
}

impl<T> Default for Flight<T> {
    fn default() -> Self {
        Self {
            result: Mutex::new(None),
            done: Condvar::new(),
        }
    }
}

impl<T> Flight<T> {
    fn finish(&self, result: Result<T, EngineError>) {
        *lock(&self.result) = Some(result);
        self.done.notify_all();
    }

    fn take(&self, wait: bool) -> Option<Result<T, EngineError>> {
        let mut g = lock(&self.result);
        loop {
            if let Some(r) = g.take() {
                return Some(r);
            }
            if !wait {
                return None;
            }
            g = self.done.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Everything one job owns.
struct Job {
    plan: Arc<FramePlan>,
    reference: Arc<Owned>,
    prev: Option<Arc<Owned>>,
    prev2: Option<Arc<Owned>>,
    /// The previous frame's distorted plane (at the scoring size), when an instance reads it.
    prev_dis: Option<Arc<Owned>>,
    distorted: Arc<Owned>,
    chroma: Option<Chroma<Owned>>,
    /// The distorted stream's scaler to the scoring size, run by the worker.
    scale: Option<Arc<StreamScaler>>,
    full: bool,
    /// Extractors not in use, shared by the jobs.
    idle: Arc<Mutex<Vec<Extractors>>>,
}

impl Job {
    fn run(&self, split: bool) -> Result<RawFeatures, EngineError> {
        let popped = lock(&self.idle).pop();
        let mut ex = match popped {
            Some(ex) => ex,
            None => Extractors::new(&self.plan)?,
        };
        let mut scaled = std::mem::take(&mut ex.scaled);
        let raw = self.run_with(&mut ex, &mut scaled, split);
        ex.scaled = scaled;
        lock(&self.idle).push(ex);
        raw
    }

    /// Scores the pair with `ex`, the distorted planes scaled into `scaled` first when the
    /// job has a scaler.
    fn run_with(
        &self,
        ex: &mut Extractors,
        scaled: &mut Scaled,
        split: bool,
    ) -> Result<RawFeatures, EngineError> {
        let Scaled {
            luma: [_, luma_d],
            chroma: [_, [c0, c1]],
            scratch,
        } = scaled;
        let luma_s = self.scale.as_deref().map(|s| &s.luma);
        let chroma_s = self.scale.as_deref().and_then(|s| s.chroma.as_ref());
        let r = self.reference.view()?;
        let d = scale_into(luma_s, self.distorted.view()?, scratch, luma_d)?;
        let [prev, prev2, prev_dis] = self.previous()?;
        let chroma = match &self.chroma {
            Some(c) => Some(ChromaPair {
                reference: [c.reference[0].view()?, c.reference[1].view()?],
                distorted: [
                    scale_into(chroma_s, c.distorted[0].view()?, scratch, c0)?,
                    scale_into(chroma_s, c.distorted[1].view()?, scratch, c1)?,
                ],
            }),
            None => None,
        };
        ex.extract(
            &self.plan,
            prev.as_ref(),
            prev2.as_ref(),
            prev_dis.as_ref(),
            &r,
            &d,
            chroma.as_ref(),
            self.full,
            split,
        )
    }

    /// The earlier planes the job holds: the previous reference, the one before it, the
    /// previous distorted plane (each `None` when not held).
    fn previous(&self) -> Result<[Option<LumaPlane<'_>>; 3], EngineError> {
        fn view(p: &Option<Arc<Owned>>) -> Result<Option<LumaPlane<'_>>, EngineError> {
            p.as_ref().map(|p| p.view()).transpose()
        }
        Ok([view(&self.prev)?, view(&self.prev2)?, view(&self.prev_dis)?])
    }

    /// Converts every plane of the pair that is still host rows ([`Owned::view`]).
    fn convert(&self) -> Result<(), EngineError> {
        let planes = [
            Some(&self.reference),
            Some(&self.distorted),
            self.prev.as_ref(),
        ]
        .into_iter()
        .chain([self.prev2.as_ref(), self.prev_dis.as_ref()])
        .flatten();
        for p in planes {
            p.view()?;
        }
        if let Some(c) = &self.chroma {
            for p in c.reference.iter().chain(&c.distorted) {
                p.view()?;
            }
        }
        Ok(())
    }

    /// Instance `i`'s values of the pair (an unscaled pair: [`Parallel::fan_out`]), with an
    /// extractor of that instance from `idle` (made when none is free, given back after).
    fn run_instance(
        &self,
        i: usize,
        idle: &Mutex<Vec<Box<dyn CpuExtractor>>>,
    ) -> Result<Vec<f64>, EngineError> {
        let plan = &self.plan;
        let (Some(inst), span) = (plan.layout.instances().get(i), plan.layout.span(i)) else {
            return Err(EngineError::Backend {
                backend: "cpu",
                message: "internal: an instance outside the layout".into(),
            });
        };
        let popped = lock(idle).pop();
        let mut ex = match popped {
            Some(ex) => ex,
            None => inst.cpu(&plan.geometry)?,
        };
        let geometry = plan.geometry.triple();
        let r = self.reference.view()?;
        let d = self.distorted.view()?;
        FeatureError::check_plane("vmaf", geometry, &r)?;
        FeatureError::check_plane("vmaf", geometry, &d)?;
        let [prev, prev2, prev_dis] = self.previous()?;
        let chroma = match &self.chroma {
            Some(c) => Some(ChromaPair {
                reference: [c.reference[0].view()?, c.reference[1].view()?],
                distorted: [c.distorted[0].view()?, c.distorted[1].view()?],
            }),
            None => None,
        };
        let frame = HostFrame {
            reference: &r,
            distorted: &d,
            previous: prev.as_ref(),
            previous2: prev2.as_ref(),
            previous_distorted: prev_dis.as_ref(),
            chroma: chroma.as_ref(),
        };
        let mut out = vec![0.0; span.len()];
        let result = ex.extract(&frame, &mut out);
        lock(idle).push(ex);
        result?;
        Ok(out)
    }
}

/// One pair's instances in flight as jobs of their own ([`Parallel::fan_out`]): the job
/// (dropped with the last instance, so that its planes go back to the free list before the
/// values are seen), the values written so far, the first error, how many instances have not
/// finished, and where the values go.
struct FanOut {
    job: Mutex<Option<Arc<Job>>>,
    raw: Mutex<Option<RawFeatures>>,
    error: Mutex<Option<EngineError>>,
    remaining: AtomicUsize,
    idle: InstanceIdle,
    flight: Arc<Flight<RawFeatures>>,
    /// The backend's count of unfinished jobs (this pair counts one).
    active: Arc<AtomicUsize>,
}

impl FanOut {
    /// Runs instance `i` (a panic becomes an error) and records its values.
    fn run(&self, i: usize) {
        let Some(job) = lock(&self.job).clone() else {
            return;
        };
        let result = match self.idle.get(i) {
            Some(idle) => caught(|| job.run_instance(i, idle)),
            None => Err(EngineError::Backend {
                backend: "cpu",
                message: "internal: an instance without its extractors".into(),
            }),
        };
        let span = job.plan.layout.span(i);
        drop(job);
        self.instance_done(Some((span, result)));
    }

    /// One instance finished (`None`: ended by an earlier error); the last one drops the
    /// job and hands the values (or the first error) over.
    fn instance_done(&self, done: Option<InstanceValues>) {
        match done {
            Some((span, Ok(values))) => {
                if let Some(out) = lock(&self.raw)
                    .as_mut()
                    .and_then(|raw| raw.values_mut().get_mut(span))
                {
                    out.copy_from_slice(&values);
                }
            }
            Some((_, Err(e))) => {
                lock(&self.error).get_or_insert(e);
            }
            None => {}
        }
        if self.remaining.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        lock(&self.job).take();
        let error = lock(&self.error).take();
        let raw = lock(&self.raw).take();
        self.active.fetch_sub(1, Ordering::AcqRel);
        self.flight.finish(match (error, raw) {
            (Some(e), _) => Err(e),
            (None, Some(raw)) => Ok(raw),
            (None, None) => Err(EngineError::Backend {
                backend: "cpu",
                message: "internal: a pair's values were taken twice".into(),
            }),
        });
    }
}

/// `f()` on a pool thread, a panic in it an error.
fn caught<T>(f: impl FnOnce() -> Result<T, EngineError>) -> Result<T, EngineError> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(EngineError::Backend {
            backend: "cpu",
            message: "internal: a CPU scoring thread panicked".into(),
        })
    })
}

/// One instance's span of a pair's values and what it computed for them.
type InstanceValues = (std::ops::Range<usize>, Result<Vec<f64>, EngineError>);

/// Idle extractors of each instance of a layout, shared by the fanned-out jobs.
type InstanceIdle = Arc<[Mutex<Vec<Box<dyn CpuExtractor>>>]>;

/// One rendition of a ladder job: its planes at its own size, its scaler.
struct RenditionJob {
    rendition: usize,
    luma: Owned,
    chroma: Option<[Owned; 2]>,
    scale: Option<Arc<StreamScaler>>,
    full: bool,
}

/// Everything one ladder frame's job owns.
struct LadderJob {
    plan: Arc<FramePlan>,
    reference: Arc<Owned>,
    reference_chroma: Option<[Owned; 2]>,
    prev: Option<Arc<Owned>>,
    prev2: Option<Arc<Owned>>,
    renditions: Vec<RenditionJob>,
    idle: Arc<Mutex<Vec<Extractors>>>,
}

impl LadderJob {
    fn run(&self, split: bool) -> Result<SetFeatures, EngineError> {
        let popped = lock(&self.idle).pop();
        let mut ex = match popped {
            Some(ex) => ex,
            None => Extractors::new(&self.plan)?,
        };
        let mut buffers = std::mem::take(&mut ex.ladder);
        let mut scaled = std::mem::take(&mut ex.scaled);
        let result = self.run_with(&mut ex, &mut buffers, &mut scaled.scratch, split);
        ex.ladder = buffers;
        ex.scaled = scaled;
        lock(&self.idle).push(ex);
        result
    }

    /// Scales each rendition into `buffers` (grown to the frame's renditions), then scores
    /// the ladder frame with `ex`.
    fn run_with(
        &self,
        ex: &mut Extractors,
        buffers: &mut Vec<RenditionBuffers>,
        scratch: &mut crate::engine::scale::cpu::Scratch,
        split: bool,
    ) -> Result<SetFeatures, EngineError> {
        if buffers.len() < self.renditions.len() {
            buffers.resize_with(self.renditions.len(), RenditionBuffers::default);
        }
        let mut planes = Vec::with_capacity(self.renditions.len());
        for (r, b) in self.renditions.iter().zip(buffers.iter_mut()) {
            let RenditionBuffers {
                luma,
                chroma: [c0, c1],
                ..
            } = b;
            let s = r.scale.as_deref();
            let l = scale_into(s.map(|s| &s.luma), r.luma.view()?, scratch, luma)?;
            let cs = s.and_then(|s| s.chroma.as_ref());
            let chroma = match &r.chroma {
                Some([p0, p1]) => Some([
                    scale_into(cs, p0.view()?, scratch, c0)?,
                    scale_into(cs, p1.view()?, scratch, c1)?,
                ]),
                None => None,
            };
            planes.push(LadderPlanes {
                rendition: r.rendition,
                luma: l,
                chroma,
                full: r.full,
            });
        }
        let reference = self.reference.view()?;
        let reference_chroma = match &self.reference_chroma {
            Some([p0, p1]) => Some([p0.view()?, p1.view()?]),
            None => None,
        };
        let prev = self.prev.as_ref().map(|p| p.view()).transpose()?;
        let prev2 = self.prev2.as_ref().map(|p| p.view()).transpose()?;
        ex.extract_ladder(
            &self.plan,
            prev.as_ref(),
            prev2.as_ref(),
            &reference,
            reference_chroma.as_ref(),
            &planes,
            split,
        )
    }
}

/// A rendition's planes as [`Parallel::submit_ladder`] takes them: slot, luma, chroma, full.
pub(crate) type RenditionInput<'a, 'b> =
    (usize, &'b LumaInput<'a>, Option<[LumaPlane<'a>; 2]>, bool);

/// The frames in flight of one [`super::CpuBackend`] on a pool.
pub(crate) struct Parallel {
    pool: Arc<CpuPool>,
    /// Jobs spawned and not finished (queued or running).
    active: Arc<AtomicUsize>,
    idle: Arc<Mutex<Vec<Extractors>>>,
    /// Idle extractors per instance, for pairs fanned out ([`Parallel::fan_out`]); made on
    /// the first such pair.
    instance_idle: Option<InstanceIdle>,
    free: FreeList,
    flights: VecDeque<Arc<Flight<RawFeatures>>>,
    /// A ladder backend's frames in flight.
    ladder_flights: VecDeque<Arc<Flight<SetFeatures>>>,
    /// The last submitted reference (the next frame's motion reads it) and the one before it
    /// (the five-frame motion).
    prev: Option<Arc<Owned>>,
    prev2: Option<Arc<Owned>>,
    /// The last submitted distorted plane, when an instance reads it (`speed_temporal`).
    prev_dis: Option<Arc<Owned>>,
}

impl Parallel {
    /// Runs `run(&job)` on the pool (a panic becomes an error) and returns where its result
    /// will be; the job, with its buffers, is dropped (they go back to the free list) before
    /// the result is seen.
    ///
    /// The job splits its frame's instances over the pool (rayon) only while fewer jobs are
    /// unfinished than there are threads: a worker waiting for its split instances runs
    /// whatever the pool holds, a whole other frame included, so with frames queued a split
    /// held the oldest frame back by a frame or more while the newer ones waited for it to
    /// be collected (measured on a 32-core GPU host, 1080p 8-bit `vmaf_v0.6.1`: a 55 ms frame
    /// held its worker 115 ms at 8 threads; splitting only with a worker free took the
    /// whole-process fps from 101 to 138 at 8 threads, 165 to 215 at 16, 238 to 298 at 32).
    fn spawn<J: Send + 'static, T: Send + 'static>(
        &self,
        job: J,
        run: fn(&J, bool) -> Result<T, EngineError>,
    ) -> Arc<Flight<T>> {
        let flight = Arc::new(Flight::default());
        let slot = flight.clone();
        let active = self.active.clone();
        let threads = self.pool.threads();
        active.fetch_add(1, Ordering::AcqRel);
        self.pool.spawn(move || {
            let split = active.load(Ordering::Acquire) < threads;
            let result = caught(|| run(&job, split));
            drop(job);
            active.fetch_sub(1, Ordering::AcqRel);
            slot.finish(result);
        });
        flight
    }

    pub(crate) fn new(pool: Arc<CpuPool>) -> Self {
        Self {
            pool,
            active: Arc::default(),
            idle: Arc::default(),
            instance_idle: None,
            free: Arc::default(),
            flights: VecDeque::new(),
            ladder_flights: VecDeque::new(),
            prev: None,
            prev2: None,
            prev_dis: None,
        }
    }

    /// Extractors for the workers to use (the backend's own, made for the same plan).
    pub(crate) fn give(&mut self, ex: Extractors) {
        lock(&self.idle).push(ex);
    }

    pub(crate) fn threads(&self) -> usize {
        self.pool.threads()
    }

    /// Frames in flight at most before the submitting thread waits for the oldest
    /// ([`Backend::max_in_flight`](crate::engine::Backend::max_in_flight)): two per
    /// thread, and one more. Results leave in order, so with one frame per thread a worker
    /// that finished early waited for the oldest frame to be collected; measured on a
    /// 32-core GPU host (1080p, `vmaf_v0.6.1`, `scripts/cpu-vs-libvmaf.py`), `threads + 1`
    /// gave 141 / 203 fps at 16 / 32 threads and `2 threads + 1` 172 / 270 (`3 threads + 1`:
    /// 189 / 270, but at 2160p more frames in flight only cost memory: 57 -> 49 fps at 32
    /// threads). Each frame in flight holds its planes: at 3840x2160 with 32 threads about
    /// 2.2 GB of luma.
    pub(crate) fn in_flight(&self) -> usize {
        2 * self.pool.threads() + 1
    }

    /// Lets the free list keep enough buffers for the frames in flight, each of `planes`
    /// planes (and the two previous references that motion reads).
    fn keep_free(&self, planes: usize) {
        let keep = (self.in_flight() + 3) * planes;
        let mut free = lock(&self.free);
        free.keep = free.keep.max(keep);
    }

    /// Copies the pair and starts scoring it on the pool.
    ///
    /// Errors: [`EngineError::Feature`] for planes of another geometry, a device plane.
    pub(crate) fn submit(
        &mut self,
        plan: &Arc<FramePlan>,
        reference: &LumaInput<'_>,
        distorted: &LumaInput<'_>,
        chroma: Option<&ChromaPair<'_>>,
        full: bool,
    ) -> Result<(), EngineError> {
        self.submit_scaled(plan, reference, distorted, chroma, full, None)
    }

    /// [`Parallel::submit`] of a pair whose distorted stream the worker scales with `scale`
    /// (its planes at the scaler's source size).
    ///
    /// Errors: as [`Parallel::submit`].
    pub(crate) fn submit_scaled(
        &mut self,
        plan: &Arc<FramePlan>,
        reference: &LumaInput<'_>,
        distorted: &LumaInput<'_>,
        chroma: Option<&ChromaPair<'_>>,
        full: bool,
        scale: Option<&Arc<StreamScaler>>,
    ) -> Result<(), EngineError> {
        self.keep_free(if chroma.is_some() { 6 } else { 2 });
        let reference = Arc::new(Owned::luma(plan, reference, &self.free, None)?);
        let distorted = Arc::new(Owned::luma(
            plan,
            distorted,
            &self.free,
            scale.map(|s| s.luma.src()),
        )?);
        let chroma = chroma.map(|c| Chroma {
            reference: c.reference.each_ref().map(|p| Owned::copy(p, &self.free)),
            distorted: c.distorted.each_ref().map(|p| Owned::copy(p, &self.free)),
        });
        self.start(plan, reference, distorted, chroma, full, scale)
    }

    /// [`Parallel::submit`] with the chroma components in their buffers' own layouts (host
    /// rows; converted by the worker when their mapping is held).
    ///
    /// Errors: as [`Parallel::submit`].
    pub(crate) fn submit_components(
        &mut self,
        plan: &Arc<FramePlan>,
        reference: &LumaInput<'_>,
        distorted: &LumaInput<'_>,
        chroma: Option<&ChromaInput<'_>>,
        full: bool,
    ) -> Result<(), EngineError> {
        self.keep_free(if chroma.is_some() { 6 } else { 2 });
        let reference = Arc::new(Owned::luma(plan, reference, &self.free, None)?);
        let distorted = Arc::new(Owned::luma(plan, distorted, &self.free, None)?);
        let bpc = plan.geometry.bpc;
        let chroma = match chroma {
            Some(c) => {
                let [r0, r1] = &c.reference;
                let [d0, d1] = &c.distorted;
                let free = &self.free;
                Some(Chroma {
                    reference: [
                        Owned::component(r0, bpc, free)?,
                        Owned::component(r1, bpc, free)?,
                    ],
                    distorted: [
                        Owned::component(d0, bpc, free)?,
                        Owned::component(d1, bpc, free)?,
                    ],
                })
            }
            None => None,
        };
        self.start(plan, reference, distorted, chroma, full, None)
    }

    /// Starts the job of one pair whose planes are owned.
    fn start(
        &mut self,
        plan: &Arc<FramePlan>,
        reference: Arc<Owned>,
        distorted: Arc<Owned>,
        chroma: Option<Chroma<Owned>>,
        full: bool,
        scale: Option<&Arc<StreamScaler>>,
    ) -> Result<(), EngineError> {
        let prev = self.prev.replace(reference.clone());
        // The backend scales a distorted stream itself when an instance reads its previous
        // frame, so the kept plane is at the scoring size.
        let prev_dis = if plan.keeps_distorted() && scale.is_none() {
            self.prev_dis.replace(distorted.clone())
        } else {
            None
        };
        let job = Job {
            plan: plan.clone(),
            prev2: std::mem::replace(&mut self.prev2, prev.clone()),
            prev,
            prev_dis,
            reference,
            distorted,
            chroma,
            scale: scale.cloned(),
            full,
            idle: self.idle.clone(),
        };
        let flight = if job.scale.is_none() {
            self.fan_out(job)
        } else {
            self.spawn(job, Job::run)
        };
        self.flights.push_back(flight);
        Ok(())
    }

    /// Runs each instance of an unscaled pair's `job` that scores this frame as a pool job
    /// of its own, and returns where the pair's values will be (the last instance to finish
    /// puts them there, after the planes went back to the free list).
    ///
    /// A whole pair per worker kept each worker on one frame through every feature, so that
    /// a frame's planes came from memory once per feature, and at the start and end of a run
    /// (fewer frames than workers) workers idled; libvmaf 3.2.0 queues each feature of a
    /// frame as a job of its own (issue 33). One job first converts the pair's host rows
    /// (so that no instance waits for another's conversion), then queues the other
    /// instances and runs the last one itself: a frame's instances run at about the same
    /// time, sharing its planes in the cache, and no job waits for another.
    fn fan_out(&mut self, job: Job) -> Arc<Flight<RawFeatures>> {
        let flight: Arc<Flight<RawFeatures>> = Arc::new(Flight::default());
        let layout = &job.plan.layout;
        let n = layout.instances().len();
        let idle = match &self.instance_idle {
            Some(idle) if idle.len() == n => idle.clone(),
            _ => {
                let idle: InstanceIdle = (0..n).map(|_| Mutex::new(Vec::new())).collect();
                self.instance_idle = Some(idle.clone());
                idle
            }
        };
        let wanted: Vec<usize> = layout
            .instances()
            .iter()
            .enumerate()
            .filter(|(_, inst)| job.full || inst.needs().previous)
            .map(|(i, _)| i)
            .collect();
        let raw = RawFeatures::new(layout);
        if wanted.is_empty() {
            drop(job);
            flight.finish(Ok(raw));
            return flight;
        }
        let fan = Arc::new(FanOut {
            job: Mutex::new(Some(Arc::new(job))),
            raw: Mutex::new(Some(raw)),
            error: Mutex::new(None),
            remaining: AtomicUsize::new(wanted.len()),
            idle,
            flight: flight.clone(),
            active: self.active.clone(),
        });
        self.active.fetch_add(1, Ordering::AcqRel);
        self.pool.spawn(move || {
            let Some(job) = lock(&fan.job).clone() else {
                return;
            };
            let converted = caught(|| job.convert());
            drop(job);
            if let Err(e) = converted {
                // Every instance ends at once with the conversion's error.
                lock(&fan.error).get_or_insert(e);
                for _ in &wanted {
                    fan.instance_done(None);
                }
                return;
            }
            let Some((&last, rest)) = wanted.split_last() else {
                return;
            };
            for &i in rest {
                let fan = fan.clone();
                // On a worker, rayon::spawn queues into this worker's own pool (no handle
                // to the pool is kept in a job: its last drop would join its own thread).
                rayon::spawn(move || fan.run(i));
            }
            fan.run(last);
        });
        flight
    }

    /// Copies one ladder frame (the reference at the scoring size, each rendition at its
    /// scaler's source size, checked here) and starts scoring it on the pool.
    ///
    /// Errors: [`EngineError::Feature`] for planes of another geometry, a device plane.
    pub(crate) fn submit_ladder(
        &mut self,
        plan: &Arc<FramePlan>,
        reference: &LumaInput<'_>,
        reference_chroma: Option<[LumaPlane<'_>; 2]>,
        renditions: &[RenditionInput<'_, '_>],
        scaling: &LadderScaling,
    ) -> Result<(), EngineError> {
        let per_frame = (1 + renditions.len()) * if reference_chroma.is_some() { 3 } else { 1 };
        self.keep_free(per_frame);
        let reference = Arc::new(Owned::luma(plan, reference, &self.free, None)?);
        let reference_chroma =
            reference_chroma.map(|c| c.each_ref().map(|p| Owned::copy(p, &self.free)));
        let mut jobs = Vec::with_capacity(renditions.len());
        for (k, luma, chroma, full) in renditions {
            let scale = scaling.renditions.get(*k).cloned().flatten();
            let size = scale.as_ref().map(|s| s.luma.src());
            jobs.push(RenditionJob {
                rendition: *k,
                luma: Owned::luma(plan, luma, &self.free, size)?,
                chroma: chroma.map(|c| c.each_ref().map(|p| Owned::copy(p, &self.free))),
                scale,
                full: *full,
            });
        }
        let prev = self.prev.replace(reference.clone());
        let job = LadderJob {
            plan: plan.clone(),
            prev2: std::mem::replace(&mut self.prev2, prev.clone()),
            prev,
            reference,
            reference_chroma,
            renditions: jobs,
            idle: self.idle.clone(),
        };
        let flight = self.spawn(job, LadderJob::run);
        self.ladder_flights.push_back(flight);
        Ok(())
    }

    /// The oldest ladder frame's values, as [`Parallel::collect`].
    pub(crate) fn collect_ladder(
        &mut self,
        wait: bool,
    ) -> Result<Option<SetFeatures>, EngineError> {
        let Some(front) = self.ladder_flights.front() else {
            return Ok(None);
        };
        let wait = wait && !self.pool.is_worker();
        match front.take(wait) {
            Some(result) => {
                self.ladder_flights.pop_front();
                result.map(Some)
            }
            None => Ok(None),
        }
    }

    /// The oldest frame's features: `None` when it is not finished and `wait` is false, or
    /// when nothing is in flight.
    pub(crate) fn collect(&mut self, wait: bool) -> Result<Option<RawFeatures>, EngineError> {
        let Some(front) = self.flights.front() else {
            return Ok(None);
        };
        // Waiting on a pool thread would block one of the workers the frame needs.
        let wait = wait && !self.pool.is_worker();
        match front.take(wait) {
            Some(result) => {
                self.flights.pop_front();
                result.map(Some)
            }
            None => Ok(None),
        }
    }

    /// Forgets the frames in flight (they finish on the pool, unread) and the previous
    /// reference.
    pub(crate) fn reset(&mut self) {
        self.flights.clear();
        self.ladder_flights.clear();
        self.prev = None;
        self.prev2 = None;
        self.prev_dis = None;
    }
}
