//! Frame sets in flight on a [`CpuPool`]: each submitted set is copied into buffers of its
//! own and scored on the pool; results wait in submission order. A set of one unscaled
//! rendition (a pair) is one job that converts its host rows and then one job per feature
//! instance, each with an extractor of that instance ([`Parallel::fan_out`], as libvmaf
//! 3.2.0 queues a frame's features); any other set (a rendition the worker scales, several
//! renditions) is one job with its own [`Extractors`] ([`Extractors::extract_set`]). Both
//! run the instances through [`extract_instance`].
//!
//! Motion reads another frame (the previous reference), `speed_temporal` the previous
//! reference and distorted frames. The job of set i holds set i-1's buffers (an `Arc`
//! shared with that set's job), so the order in which workers finish changes nothing.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::cpu_frame::{
    extract_instance, scale_into, Extractors, FramePlan, RenditionPlanes, SetPlanes,
};
use super::cpu_owned::{lock, FreeList, Owned};
use crate::cpu::CpuPool;
use crate::engine::error::EngineError;
use crate::engine::frame::{LumaInput, LumaPlane};
use crate::engine::frame_set::{FrameChroma, SetFeatures};
use crate::engine::scale::StreamScaler;
use crate::features::CpuExtractor;
use crate::features::RawFeatures;

/// One set's result slot: filled by its job, read by [`Parallel::collect`].
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

/// One rendition of a job: its planes at its own size (`scale`, run by the worker, brings
/// them to the scoring size).
struct RenditionJob {
    rendition: usize,
    luma: Arc<Owned>,
    chroma: Option<[Owned; 2]>,
    scale: Option<Arc<StreamScaler>>,
    full: bool,
}

/// Everything one set's job owns.
struct Job {
    plan: Arc<FramePlan>,
    reference: Arc<Owned>,
    reference_chroma: Option<[Owned; 2]>,
    prev: Option<Arc<Owned>>,
    prev2: Option<Arc<Owned>>,
    /// The previous set's distorted plane (at the scoring size), when an instance reads it.
    prev_dis: Option<Arc<Owned>>,
    renditions: Vec<RenditionJob>,
    /// Extractors not in use, shared by the jobs.
    idle: Arc<Mutex<Vec<Extractors>>>,
}

/// Views of a pair of owned chroma planes.
fn view2(c: &Option<[Owned; 2]>) -> Result<Option<[LumaPlane<'_>; 2]>, EngineError> {
    Ok(match c {
        Some([p0, p1]) => Some([p0.view()?, p1.view()?]),
        None => None,
    })
}

impl Job {
    /// Scores the whole set with extractors from `idle` (made when none is free).
    fn run(&self, split: bool) -> Result<SetFeatures, EngineError> {
        let popped = lock(&self.idle).pop();
        let mut ex = match popped {
            Some(ex) => ex,
            None => Extractors::new(&self.plan)?,
        };
        let mut buffers = std::mem::take(&mut ex.buffers);
        let (_, bufs, scratch) = buffers.split(self.renditions.len());
        let result = (|| {
            let mut planes = Vec::with_capacity(self.renditions.len());
            for (r, b) in self.renditions.iter().zip(bufs.iter_mut()) {
                let [c0, c1] = &mut b.chroma;
                let s = r.scale.as_deref();
                let luma = scale_into(s.map(|s| &s.luma), r.luma.view()?, scratch, &mut b.luma)?;
                let cs = s.and_then(|s| s.chroma.as_ref());
                let chroma = match view2(&r.chroma)? {
                    Some([p0, p1]) => Some([
                        scale_into(cs, p0, scratch, c0)?,
                        scale_into(cs, p1, scratch, c1)?,
                    ]),
                    None => None,
                };
                planes.push(RenditionPlanes {
                    rendition: r.rendition,
                    luma,
                    chroma,
                    full: r.full,
                });
            }
            let set = self.planes(planes)?;
            ex.extract_set(&self.plan, &set, split)
        })();
        ex.buffers = buffers;
        lock(&self.idle).push(ex);
        result
    }

    /// The set's planes with `renditions` (at the scoring size) and the job's reference and
    /// earlier planes.
    fn planes<'a>(
        &'a self,
        renditions: Vec<RenditionPlanes<'a>>,
    ) -> Result<SetPlanes<'a>, EngineError> {
        fn view(p: &Option<Arc<Owned>>) -> Result<Option<LumaPlane<'_>>, EngineError> {
            p.as_ref().map(|p| p.view()).transpose()
        }
        Ok(SetPlanes {
            prev: view(&self.prev)?,
            prev2: view(&self.prev2)?,
            prev_dis: view(&self.prev_dis)?,
            reference: self.reference.view()?,
            reference_chroma: view2(&self.reference_chroma)?,
            renditions,
        })
    }

    /// The renditions' planes as they are (a set no worker scales: [`Parallel::fan_out`]).
    fn unscaled(&self) -> Result<Vec<RenditionPlanes<'_>>, EngineError> {
        self.renditions
            .iter()
            .map(|r| {
                if r.scale.is_some() {
                    return Err(EngineError::Backend {
                        backend: "cpu",
                        message: "internal: a scaled rendition fanned out".into(),
                    });
                }
                Ok(RenditionPlanes {
                    rendition: r.rendition,
                    luma: r.luma.view()?,
                    chroma: view2(&r.chroma)?,
                    full: r.full,
                })
            })
            .collect()
    }

    /// Converts every plane of the set that is still host rows ([`Owned::view`]).
    fn convert(&self) -> Result<(), EngineError> {
        self.planes(self.unscaled()?).map(|_| ())
    }

    /// Instance `i`'s values of each rendition (an unscaled set: [`Parallel::fan_out`]), with
    /// an extractor of that instance from `idle` (made when none is free, given back after).
    fn run_instance(
        &self,
        i: usize,
        idle: &Mutex<Vec<Box<dyn CpuExtractor>>>,
    ) -> Result<Vec<Vec<f64>>, EngineError> {
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
        let set = self.planes(self.unscaled()?)?;
        set.check(plan)?;
        let chroma = set.chroma();
        let frames = set.frames(&chroma);
        let full: Vec<bool> = set.renditions.iter().map(|r| r.full).collect();
        let mut values = vec![vec![0.0; span.len()]; set.renditions.len()];
        let mut outs: Vec<&mut [f64]> = values.iter_mut().map(Vec::as_mut_slice).collect();
        let result = extract_instance(ex.as_mut(), inst.needs(), &frames, &full, &mut outs);
        lock(idle).push(ex);
        result?;
        Ok(values)
    }
}

/// One set's instances in flight as jobs of their own ([`Parallel::fan_out`]): the job
/// (dropped with the last instance, so that its planes go back to the free list before the
/// values are seen), the values written so far, the first error, how many instances have not
/// finished, and where the values go.
struct FanOut {
    job: Mutex<Option<Arc<Job>>>,
    raw: Mutex<Option<SetFeatures>>,
    error: Mutex<Option<EngineError>>,
    remaining: AtomicUsize,
    idle: InstanceIdle,
    flight: Arc<Flight<SetFeatures>>,
    /// The backend's count of unfinished jobs (this set counts one).
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
                if let Some(raws) = lock(&self.raw).as_mut() {
                    for ((_, raw), values) in raws.iter_mut().zip(&values) {
                        if let Some(out) = raw.values_mut().get_mut(span.clone()) {
                            out.copy_from_slice(values);
                        }
                    }
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
                message: "internal: a set's values were taken twice".into(),
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

/// One instance's span of a set's values and what it computed for each rendition.
type InstanceValues = (std::ops::Range<usize>, Result<Vec<Vec<f64>>, EngineError>);

/// Idle extractors of each instance of a layout, shared by the fanned-out jobs.
type InstanceIdle = Arc<[Mutex<Vec<Box<dyn CpuExtractor>>>]>;

/// A stream's input as [`Parallel::submit_set`] takes it: its luma and chroma (packed
/// planes copied; host rows and buffer components converted by the first worker that reads
/// them when their mapping is held).
pub(crate) struct StreamInput<'a, 'b> {
    pub(crate) luma: &'b LumaInput<'a>,
    pub(crate) chroma: Option<FrameChroma<'a>>,
}

/// A rendition's input: its slot, planes, whether it computes its full features, and the
/// scaler the worker runs (its planes then at the scaler's source size).
pub(crate) struct RenditionInput<'a, 'b> {
    pub(crate) rendition: usize,
    pub(crate) stream: StreamInput<'a, 'b>,
    pub(crate) full: bool,
    pub(crate) scale: Option<Arc<StreamScaler>>,
}

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
    flights: VecDeque<Arc<Flight<SetFeatures>>>,
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

    /// Copies one frame set (the reference at the scoring size, each rendition at its
    /// scaler's source size, checked here) and starts scoring it on the pool.
    ///
    /// Errors: [`EngineError::Feature`] for planes of another geometry, a device plane.
    pub(crate) fn submit_set(
        &mut self,
        plan: &Arc<FramePlan>,
        reference: StreamInput<'_, '_>,
        renditions: &[RenditionInput<'_, '_>],
    ) -> Result<(), EngineError> {
        let per_set = (1 + renditions.len()) * if reference.chroma.is_some() { 3 } else { 1 };
        self.keep_free(per_set);
        let bpc = plan.geometry.bpc;
        let chroma = |c: Option<FrameChroma<'_>>, free: &FreeList| match c {
            None => Ok(None),
            Some(FrameChroma::Packed(p)) => Ok(Some(p.each_ref().map(|p| Owned::copy(p, free)))),
            Some(FrameChroma::Components([c0, c1])) => Ok::<_, EngineError>(Some([
                Owned::component(&c0, bpc, free)?,
                Owned::component(&c1, bpc, free)?,
            ])),
        };
        let reference_luma = Arc::new(Owned::luma(plan, reference.luma, &self.free, None)?);
        let reference_chroma = chroma(reference.chroma, &self.free)?;
        let mut jobs = Vec::with_capacity(renditions.len());
        for r in renditions {
            let size = r.scale.as_ref().map(|s| s.luma.src());
            jobs.push(RenditionJob {
                rendition: r.rendition,
                luma: Arc::new(Owned::luma(plan, r.stream.luma, &self.free, size)?),
                chroma: chroma(r.stream.chroma, &self.free)?,
                scale: r.scale.clone(),
                full: r.full,
            });
        }
        let prev = self.prev.replace(reference_luma.clone());
        // The backend scales a distorted stream itself when an instance reads its previous
        // frame (a backend of one rendition), so the kept plane is at the scoring size.
        let prev_dis = match jobs.as_slice() {
            [r] if plan.keeps_distorted() && r.scale.is_none() => {
                self.prev_dis.replace(r.luma.clone())
            }
            _ => None,
        };
        let job = Job {
            plan: plan.clone(),
            prev2: std::mem::replace(&mut self.prev2, prev.clone()),
            prev,
            prev_dis,
            reference: reference_luma,
            reference_chroma,
            renditions: jobs,
            idle: self.idle.clone(),
        };
        // One unscaled rendition (a pair): its instances fanned out; else one job.
        let flight = match job.renditions.as_slice() {
            [r] if r.scale.is_none() => self.fan_out(job),
            _ => self.spawn(job, Job::run),
        };
        self.flights.push_back(flight);
        Ok(())
    }

    /// Runs each instance of an unscaled set's `job` that scores this set as a pool job of
    /// its own, and returns where the set's values will be (the last instance to finish puts
    /// them there, after the planes went back to the free list).
    ///
    /// A whole pair per worker kept each worker on one frame through every feature, so that
    /// a frame's planes came from memory once per feature, and at the start and end of a run
    /// (fewer frames than workers) workers idled; libvmaf 3.2.0 queues each feature of a
    /// frame as a job of its own (issue 33). One job first converts the pair's host rows
    /// (so that no instance waits for another's conversion), then queues the other
    /// instances and runs the last one itself: a frame's instances run at about the same
    /// time, sharing its planes in the cache, and no job waits for another.
    fn fan_out(&mut self, job: Job) -> Arc<Flight<SetFeatures>> {
        let flight: Arc<Flight<SetFeatures>> = Arc::new(Flight::default());
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
        let any_full = job.renditions.iter().any(|r| r.full);
        let wanted: Vec<usize> = layout
            .instances()
            .iter()
            .enumerate()
            .filter(|(_, inst)| any_full || inst.needs().previous)
            .map(|(i, _)| i)
            .collect();
        let raw: SetFeatures = job
            .renditions
            .iter()
            .map(|r| (r.rendition, RawFeatures::new(layout)))
            .collect();
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

    /// The oldest set's features: `None` when it is not finished and `wait` is false, or
    /// when nothing is in flight.
    pub(crate) fn collect(&mut self, wait: bool) -> Result<Option<SetFeatures>, EngineError> {
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
        self.prev = None;
        self.prev2 = None;
        self.prev_dis = None;
    }
}
