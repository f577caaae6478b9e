//! Live pipelines: scoring on its own thread behind a bounded queue, so that the streaming
//! thread never waits for a score, and output in input order at each frame's deadline.
//!
//! The streaming thread ([`ScoringQueue::offer`]) hands each frame pair to the scoring thread
//! and records an output slot for its distorted buffer. A pair is skipped (its buffer leaves
//! unscored, a gap is sent to the scorer so that motion restarts after it) when `capacity`
//! pairs are already waiting or being scored, or when the pairs waiting would not be scored
//! within the latency budget at the scorer's measured pace; with [`OnFull::Block`] the
//! streaming thread waits for room instead. The scoring thread completes slots
//! ([`Completer::complete`]), attaching the scores. The streaming thread releases slots in
//! order at their deadline, running time + the pipeline latency, which is when a synchronised
//! sink renders them ([`ScoringQueue::take_due`]; the aggregator wakes up for it through
//! [`ScoringQueue::next_time`]). A slot whose score is not ready by then leaves without meta;
//! its score, when it comes, is still posted and logged, and counted as late.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gst::glib;

use super::slots::Slots;
pub(crate) use super::slots::{Due, Released};

/// What the streaming thread does with a pair when the scoring queue is full
/// (`on-full` property; live pipelines only).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstVmafCompareOnFull")]
pub enum OnFull {
    /// Leave the pair unscored: its distorted buffer goes on at once, the skip is counted.
    #[default]
    #[enum_value(
        name = "Skip: pass the frame on unscored and count it (never blocks upstream)",
        nick = "skip"
    )]
    Skip = 0,
    /// Wait until the scorer has room (upstream is blocked meanwhile; every frame is scored).
    #[enum_value(
        name = "Block: wait for the scorer (blocks upstream, scores every frame)",
        nick = "block"
    )]
    Block = 1,
}

/// Work for the scoring thread, in stream order.
#[derive(Debug)]
pub(crate) enum Job {
    /// Score this frame set: the reference buffer and, per rendition slot, its partner
    /// (`None`: no frame at the reference's time); `slot` is its output slot.
    Set {
        slot: u64,
        reference: gst::Buffer,
        partners: Vec<Option<gst::Buffer>>,
    },
    /// `pairs` consecutive pairs were skipped here.
    Gap { pairs: u64 },
    /// Nothing queued, frames in flight (a backend scoring several frames at once, the CPU
    /// on its pool): collect those finished. Made by the scoring thread itself.
    Poll,
}

/// What a job left in the scorer: how many of the pairs it was given are still being
/// scored, and how many it scores at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Progress {
    /// Pairs handed to the scorer whose features are not in yet.
    pub(crate) in_flight: usize,
    /// Pairs the scorer works on at once (1: one after the other).
    pub(crate) parallel: usize,
}

impl Progress {
    /// A scorer that finished everything it was given, one pair at a time.
    pub(crate) const IDLE: Self = Self {
        in_flight: 0,
        parallel: 1,
    };
}

/// How often the idle scoring thread collects frames in flight.
const POLL: Duration = Duration::from_millis(2);

/// What [`ScoringQueue::offer`] did with a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offered {
    Queued,
    Skipped,
}

#[derive(Default)]
struct Inner {
    jobs: VecDeque<Job>,
    /// Pair jobs queued or being handed to the scorer.
    pairs_waiting: usize,
    /// Pairs in the scorer whose features are not in yet ([`Progress::in_flight`]); they
    /// count against the capacity as pairs being scored.
    in_flight: usize,
    /// When each of the pairs in flight was handed to the scorer, oldest first.
    handed: VecDeque<Instant>,
    /// Pairs the scorer works on at once ([`Progress::parallel`]).
    parallel: usize,
    slots: Slots,
    skipped: u64,
    /// Skips the scoring thread has passed, in stream order.
    skipped_in_order: u64,
    late: u64,
    /// Moving average of the time from handing a pair to the scorer until its features
    /// are in (one pair's scoring time when the scorer takes one pair at a time).
    pace: Option<Duration>,
    /// The first pair's time was left out of `pace`: it carries one-off work (the scorer's
    /// scratch and threads warming up, up to a second), which would make the queue skip the
    /// pairs after it until the average came down.
    warmed: bool,
    error: Option<gst::FlowError>,
    busy: bool,
    stop: bool,
}

struct Shared {
    inner: Mutex<Inner>,
    cond: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How often a streaming thread blocked by [`OnFull::Block`] checks whether it should give
/// up (flushing, shutting down).
const BLOCK_POLL: Duration = Duration::from_millis(20);

/// The scoring thread, its bounded job queue and the ordered output slots.
pub(crate) struct ScoringQueue {
    shared: Arc<Shared>,
    capacity: usize,
    max_slots: usize,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl ScoringQueue {
    /// Starts the scoring thread. `capacity` >= 1: pairs that may wait for or be in scoring
    /// (in flight in the scorer included); `max_slots`: output slots kept at most (a safety
    /// bound on memory should deadlines not come, e.g. without a clock); beyond it the
    /// oldest leaves at once. `run` scores one job on the scoring thread, completes the
    /// slots of the frames it finishes (through a [`Completer`]) and says what is still in
    /// flight; while pairs are in flight and nothing is queued, the thread runs
    /// [`Job::Poll`] every [`POLL`]. An error stops scoring and is returned to the
    /// streaming thread.
    pub(crate) fn start(
        capacity: usize,
        max_slots: usize,
        mut run: impl FnMut(Job) -> Result<Progress, gst::FlowError> + Send + 'static,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner::default()),
            cond: Condvar::new(),
        });
        let worker_shared = shared.clone();
        let worker = std::thread::Builder::new()
            .name("vmafcompare-score".into())
            .spawn(move || {
                let s = worker_shared;
                loop {
                    let job = {
                        let mut g = s.lock();
                        loop {
                            if g.stop || !g.jobs.is_empty() {
                                break;
                            }
                            if g.in_flight > 0 && g.error.is_none() {
                                let (ng, timeout) = s
                                    .cond
                                    .wait_timeout(g, POLL)
                                    .unwrap_or_else(|p| p.into_inner());
                                g = ng;
                                if timeout.timed_out() && g.jobs.is_empty() && !g.stop {
                                    g.jobs.push_back(Job::Poll);
                                }
                            } else {
                                g = s.cond.wait(g).unwrap_or_else(|p| p.into_inner());
                            }
                        }
                        if g.stop {
                            break;
                        }
                        g.busy = true;
                        let job = g.jobs.pop_front();
                        if matches!(job, Some(Job::Set { .. })) {
                            g.handed.push_back(Instant::now());
                        }
                        job
                    };
                    let Some(job) = job else { continue };
                    let (pair, gap) = match &job {
                        Job::Set { .. } => (true, 0),
                        Job::Gap { pairs } => (false, *pairs),
                        Job::Poll => (false, 0),
                    };
                    let failed = s.lock().error.is_some();
                    let res = if failed { Ok(Progress::IDLE) } else { run(job) };
                    let mut g = s.lock();
                    g.busy = false;
                    if pair {
                        g.pairs_waiting = g.pairs_waiting.saturating_sub(1);
                    }
                    let progress = match res {
                        Ok(p) => p,
                        Err(e) => {
                            g.error.get_or_insert(e);
                            Progress::IDLE
                        }
                    };
                    g.in_flight = progress.in_flight;
                    g.parallel = progress.parallel.max(1);
                    // The pairs whose features came in: how long each took, from the
                    // moment it was handed over (exponential moving average over about 8).
                    let now = Instant::now();
                    while g.handed.len() > g.in_flight {
                        let Some(t0) = g.handed.pop_front() else {
                            break;
                        };
                        let took = now.saturating_duration_since(t0);
                        if !g.warmed {
                            g.warmed = true;
                            continue;
                        }
                        g.pace = Some(match g.pace {
                            Some(p) => p.saturating_mul(7).saturating_add(took) / 8,
                            None => took,
                        });
                    }
                    g.skipped_in_order += gap;
                    s.cond.notify_all();
                }
            })?;
        Ok(Self {
            shared,
            capacity: capacity.max(1),
            max_slots: max_slots.max(capacity.max(1) + 1),
            worker: Mutex::new(Some(worker)),
        })
    }

    /// A handle for the scoring thread's `run` to complete slots with.
    pub(crate) fn completer(&self) -> Completer {
        Completer {
            shared: self.shared.clone(),
        }
    }

    /// Hands frame set `slot` (`reference` and its `partners`, one per rendition slot) to the
    /// scorer, with `output` the buffer that leaves for it, complete once the `present`
    /// renditions' scores came in. With [`OnFull::Skip`] the set is skipped when `capacity`
    /// sets are waiting, or when, at the scorer's measured pace, it would not be scored within
    /// `budget` (the time a frame may stay: the element's own latency). With
    /// [`OnFull::Block`] the streaming thread waits until fewer than `capacity` sets wait,
    /// pushing what becomes ready meanwhile through `release`, until `cancelled()` says to
    /// give up (`Err(Flushing)`). An earlier scoring error is returned here.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn offer(
        &self,
        (slot, reference, partners): (u64, gst::Buffer, Vec<Option<gst::Buffer>>),
        output: gst::Buffer,
        running_time: Option<gst::ClockTime>,
        on_full: OnFull,
        budget: Option<Duration>,
        cancelled: impl Fn() -> bool,
        mut release: impl FnMut(Vec<Released>) -> Result<gst::FlowSuccess, gst::FlowError>,
    ) -> Result<Offered, gst::FlowError> {
        let present = partners.iter().filter(|p| p.is_some()).count();
        let mut g = self.shared.lock();
        loop {
            if let Some(e) = g.error {
                return Err(e);
            }
            // Sets ahead of this one: queued, being handed over, or in flight.
            let waiting = g.pairs_waiting + g.in_flight;
            // It is scored once the sets ahead have gone through the scorer's `parallel`
            // lanes: (waiting / parallel + 1) set times.
            let rounds = (waiting / g.parallel.max(1)) as u32 + 1;
            let too_slow = match (g.pace, budget) {
                (Some(pace), Some(budget)) => pace.checked_mul(rounds).is_none_or(|t| t > budget),
                _ => false,
            };
            if waiting == 0 || (waiting < self.capacity && !too_slow) {
                break;
            }
            if on_full == OnFull::Skip {
                g.skipped += 1;
                g.slots.push(slot, output, running_time, 0);
                match g.jobs.back_mut() {
                    Some(Job::Gap { pairs }) => *pairs += 1,
                    _ => g.jobs.push_back(Job::Gap { pairs: 1 }),
                }
                self.shared.cond.notify_all();
                return Ok(Offered::Skipped);
            }
            if waiting < self.capacity {
                break;
            }
            if cancelled() {
                return Err(gst::FlowError::Flushing);
            }
            // Blocked: what completed meanwhile still leaves, in order.
            let ready = g.slots.front_ready();
            if !ready.is_empty() {
                drop(g);
                release(ready)?;
                g = self.shared.lock();
                continue;
            }
            g = self
                .shared
                .cond
                .wait_timeout(g, BLOCK_POLL)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        g.pairs_waiting += 1;
        g.slots.push(slot, output, running_time, present);
        g.jobs.push_back(Job::Set {
            slot,
            reference,
            partners,
        });
        self.shared.cond.notify_all();
        Ok(Offered::Queued)
    }

    /// A buffer that leaves unscored, in order (a distorted one with no partner, a reference
    /// frame no rendition had).
    pub(crate) fn pass(
        &self,
        slot: u64,
        buffer: gst::Buffer,
        running_time: Option<gst::ClockTime>,
    ) {
        self.shared.lock().slots.push(slot, buffer, running_time, 0);
    }

    /// Running time of the oldest slot: the aggregator wakes up at that time plus the
    /// latency to release it ([`ScoringQueue::take_due`]).
    pub(crate) fn next_time(&self) -> Option<gst::ClockTime> {
        self.shared.lock().slots.next_time()
    }

    /// Slots that leave now, in order (see [`Slots::take_due`]; beyond `max_slots` the oldest
    /// leave anyway). With `all` (end of stream, after [`ScoringQueue::drain`]) every slot
    /// leaves.
    pub(crate) fn take_due(&self, due: Due, all: bool) -> Vec<Released> {
        self.shared.lock().slots.take_due(due, all, self.max_slots)
    }

    /// Waits until every queued job is scored, the pairs in flight included (end of
    /// stream). Returns a scoring error, or `Err(Flushing)` when `cancelled()` says to give
    /// up.
    pub(crate) fn drain(&self, cancelled: impl Fn() -> bool) -> Result<(), gst::FlowError> {
        let mut g = self.shared.lock();
        while !g.jobs.is_empty() || g.busy || (g.in_flight > 0 && g.error.is_none()) {
            if cancelled() {
                return Err(gst::FlowError::Flushing);
            }
            g = self
                .shared
                .cond
                .wait_timeout(g, BLOCK_POLL)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        match g.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Drops queued jobs and slots, waits for the job in progress and restarts the skip and
    /// late counts (flush: a new run starts from the seek position, as the element's other
    /// counts do).
    pub(crate) fn clear(&self) {
        let mut g = self.shared.lock();
        let pairs = g
            .jobs
            .iter()
            .filter(|j| matches!(j, Job::Set { .. }))
            .count();
        g.jobs.clear();
        g.pairs_waiting = g.pairs_waiting.saturating_sub(pairs);
        while g.busy {
            g = self.shared.cond.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        g.slots.clear();
        // The element resets the scorer on a flush: nothing stays in flight.
        g.in_flight = 0;
        g.handed.clear();
        g.error = None;
        g.skipped = 0;
        g.skipped_in_order = 0;
        g.late = 0;
    }

    /// The first scoring error, if any.
    pub(crate) fn error(&self) -> Option<gst::FlowError> {
        self.shared.lock().error
    }

    /// Pairs skipped so far (all offered ones).
    pub(crate) fn skipped(&self) -> u64 {
        self.shared.lock().skipped
    }

    /// Scored frames whose buffer had left before the score was ready.
    pub(crate) fn late(&self) -> u64 {
        self.shared.lock().late
    }

    /// Stops the scoring thread after the job in progress and drops what is queued. Called
    /// from the scoring thread itself (its element going away there), it does not wait.
    pub(crate) fn shutdown(&self) {
        {
            let mut g = self.shared.lock();
            g.stop = true;
            g.jobs.clear();
            g.slots.clear();
        }
        self.shared.cond.notify_all();
        let worker = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(w) = worker {
            if w.thread().id() != std::thread::current().id() {
                let _ = w.join();
            }
        }
    }

    /// See [`Completer::complete`].
    pub(crate) fn complete(&self, slot: u64, scores: Option<gst::Structure>) {
        self.completer().complete(slot, scores)
    }
}

impl Drop for ScoringQueue {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The scoring thread's side: completes output slots.
#[derive(Clone)]
pub(crate) struct Completer {
    shared: Arc<Shared>,
}

impl Completer {
    /// One rendition of frame set `slot` is done, with `scores` to attach (`None`:
    /// unscored). When the slot already left (its deadline came first), a scored frame
    /// counts as late.
    pub(crate) fn complete(&self, slot: u64, scores: Option<gst::Structure>) {
        let mut g = self.shared.lock();
        let scored = scores.is_some();
        if !g.slots.complete(slot, scores) && scored {
            g.late += 1;
        }
    }

    /// Pairs skipped before the frame being completed now (the scoring thread's view, in
    /// stream order).
    pub(crate) fn skipped_in_order(&self) -> u64 {
        self.shared.lock().skipped_in_order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn ms(t: u64) -> Option<gst::ClockTime> {
        Some(gst::ClockTime::from_mseconds(t))
    }

    fn buf(pts: u64) -> gst::Buffer {
        let mut b = gst::Buffer::new();
        if let Some(b) = b.get_mut() {
            b.set_pts(ms(pts));
        }
        b
    }

    fn pts(r: &[Released]) -> Vec<(u64, bool)> {
        r.iter()
            .map(|(b, s)| (b.pts().map_or(999, |t| t.mseconds()), !s.is_empty()))
            .collect()
    }

    /// A scoring thread that finishes a job only when the test says so.
    fn gated(capacity: usize, max_slots: usize) -> (ScoringQueue, mpsc::Sender<()>) {
        gst::init().unwrap();
        let (tx, rx) = mpsc::channel::<()>();
        let rx = Mutex::new(rx);
        let cell: Arc<Mutex<Option<Completer>>> = Arc::new(Mutex::new(None));
        let c2 = cell.clone();
        let queue = ScoringQueue::start(capacity, max_slots, move |job| {
            let _ = rx.lock().unwrap().recv();
            if let (Job::Set { slot, .. }, Some(c)) = (job, c2.lock().unwrap().as_ref()) {
                c.complete(slot, Some(gst::Structure::new_empty("s")));
            }
            Ok(Progress::IDLE)
        })
        .unwrap();
        *cell.lock().unwrap() = Some(queue.completer());
        (queue, tx)
    }

    /// The pair at `t` ms: frame set `t`, its distorted buffer the output.
    fn pair(t: u64) -> (u64, gst::Buffer, Vec<Option<gst::Buffer>>) {
        (t, buf(t), vec![Some(buf(t))])
    }

    fn none(_: Vec<Released>) -> Result<gst::FlowSuccess, gst::FlowError> {
        Ok(gst::FlowSuccess::Ok)
    }

    #[test]
    fn skips_when_full_keeps_order_and_releases_at_deadlines() {
        let (q, gate) = gated(1, 16);
        let offer = |t| q.offer(pair(t), buf(t), ms(t), OnFull::Skip, None, || false, none);
        assert_eq!(offer(0), Ok(Offered::Queued));
        assert_eq!(offer(40), Ok(Offered::Skipped));
        assert_eq!(q.next_time(), ms(0));
        // Before the first deadline nothing leaves, even the skipped (ready) one behind it.
        assert!(
            q.take_due(Due::WhenReady, false).is_empty(),
            "0 is not ready"
        );
        assert!(
            q.take_due(Due::Until(None), false).is_empty(),
            "no deadline yet"
        );
        assert_eq!(offer(80), Ok(Offered::Skipped));
        // Deadline of 0 and 40 passed: 0 leaves unscored (still pending), then 40.
        assert_eq!(
            pts(&q.take_due(Due::Until(ms(40)), false)),
            [(0, false), (40, false)]
        );
        assert_eq!(q.next_time(), ms(80));
        gate.send(()).unwrap(); // job 0 completes: its buffer already left
        gate.send(()).unwrap(); // the gap job
        q.drain(|| false).unwrap();
        assert_eq!((q.skipped(), q.late()), (2, 1));
        assert_eq!(q.completer().skipped_in_order(), 2);
        assert_eq!(offer(120), Ok(Offered::Queued));
        gate.send(()).unwrap();
        q.drain(|| false).unwrap();
        // Without a clock, completed slots leave as soon as they are ready.
        assert_eq!(
            pts(&q.take_due(Due::WhenReady, false)),
            [(80, false), (120, true)]
        );
    }

    #[test]
    fn skips_when_the_pace_does_not_fit_the_budget() {
        let (q, gate) = gated(8, 16);
        let budget = Some(Duration::from_millis(100));
        let offer = |t| q.offer(pair(t), buf(t), ms(t), OnFull::Skip, budget, || false, none);
        assert_eq!(offer(0), Ok(Offered::Queued));
        // No pace measured yet: queued up to capacity.
        assert_eq!(offer(40), Ok(Offered::Queued));
        // The first pair (warm-up, left out of the pace) is done at once; the second, handed
        // over then, takes 120 ms.
        gate.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(120));
        gate.send(()).unwrap();
        q.drain(|| false).unwrap();
        // One pair takes about 120 ms > 100 ms: only an idle scorer takes a pair.
        assert_eq!(offer(80), Ok(Offered::Queued));
        assert_eq!(offer(120), Ok(Offered::Skipped));
        gate.send(()).unwrap();
        gate.send(()).unwrap();
        q.drain(|| false).unwrap();
        let out = pts(&q.take_due(Due::WhenReady, true));
        assert_eq!(
            out.iter().map(|o| o.0).collect::<Vec<_>>(),
            [0, 40, 80, 120]
        );
        assert_eq!(q.skipped(), 1);
    }

    #[test]
    fn block_waits_for_room_and_releases_meanwhile() {
        let (q, gate) = gated(1, 8);
        let q = Arc::new(q);
        let released = Arc::new(Mutex::new(Vec::new()));
        q.offer(pair(0), buf(0), ms(0), OnFull::Block, None, || false, none)
            .unwrap();
        let (q2, r2) = (q.clone(), released.clone());
        let t = std::thread::spawn(move || {
            q2.offer(
                pair(40),
                buf(40),
                ms(40),
                OnFull::Block,
                None,
                || false,
                |r| {
                    r2.lock().unwrap().extend(pts(&r));
                    Ok(gst::FlowSuccess::Ok)
                },
            )
        });
        gate.send(()).unwrap();
        assert_eq!(t.join().unwrap(), Ok(Offered::Queued));
        gate.send(()).unwrap();
        q.drain(|| false).unwrap();
        let mut all = released.lock().unwrap().clone();
        all.extend(pts(&q.take_due(Due::WhenReady, true)));
        assert_eq!(all, [(0, true), (40, true)], "both scored, in order");
        assert_eq!(q.skipped(), 0);
        // A blocked offer gives up when told to.
        let _ = q.offer(
            pair(80),
            buf(80),
            ms(80),
            OnFull::Block,
            None,
            || false,
            none,
        );
        let cancelled = q.offer(
            pair(120),
            buf(120),
            ms(120),
            OnFull::Block,
            None,
            || true,
            none,
        );
        assert_eq!(cancelled, Err(gst::FlowError::Flushing));
        gate.send(()).unwrap();
    }
    /// A scorer with two lanes: a pair stays in flight after its job until the test lets
    /// it finish; the scoring thread's polls collect it.
    #[test]
    fn pairs_in_flight_count_against_capacity_and_are_polled() {
        gst::init().unwrap();
        let (tx, rx) = mpsc::channel::<()>();
        let rx = Mutex::new(rx);
        let cell: Arc<Mutex<Option<Completer>>> = Arc::new(Mutex::new(None));
        let c2 = cell.clone();
        let mut flying: VecDeque<u64> = VecDeque::new();
        let queue = ScoringQueue::start(2, 16, move |job| {
            if let Job::Set { slot, .. } = job {
                flying.push_back(slot);
            }
            // One pair finishes per gate opening; polls do not wait for one.
            if rx.lock().unwrap().try_recv().is_ok() {
                if let (Some(b), Some(c)) = (flying.pop_front(), c2.lock().unwrap().as_ref()) {
                    c.complete(b, Some(gst::Structure::new_empty("s")));
                }
            }
            Ok(Progress {
                in_flight: flying.len(),
                parallel: 2,
            })
        })
        .unwrap();
        *cell.lock().unwrap() = Some(queue.completer());
        let q = queue;
        let offer = |t| q.offer(pair(t), buf(t), ms(t), OnFull::Skip, None, || false, none);
        assert_eq!(offer(0), Ok(Offered::Queued));
        assert_eq!(offer(40), Ok(Offered::Queued));
        // Wait until both were handed over (in flight, nothing queued).
        let t0 = Instant::now();
        while q.shared.lock().in_flight < 2 && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(q.shared.lock().in_flight, 2);
        // Capacity 2 is taken by the pairs in flight.
        assert_eq!(offer(80), Ok(Offered::Skipped));
        // Released one at a time by polls, in order.
        tx.send(()).unwrap();
        tx.send(()).unwrap();
        q.drain(|| false).unwrap();
        assert_eq!(q.shared.lock().in_flight, 0);
        assert!(
            q.shared.lock().pace.is_some(),
            "pace measured from hand-over to done"
        );
        assert_eq!(
            pts(&q.take_due(Due::WhenReady, true)),
            [(0, true), (40, true), (80, false)]
        );
    }
}
