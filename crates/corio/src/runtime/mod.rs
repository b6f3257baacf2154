//! The runtime: a GMP scheduler for stackful coroutines and stackless futures.
//!
//! # G, M and P in corio
//!
//! The article's M:N model (Go's GMP) maps onto corio like this:
//!
//! - **G** is a task (`crate::task`): a future, or a coroutine with its own stack.
//! - **M** is an OS thread running a worker loop (`worker.rs`).
//! - **P** is what a worker owns to run Gs: a 256-slot local run queue that others may steal
//!   from, a next-task slot, a queue of its pinned coroutines, a timer heap. In corio each
//!   worker has one P for life; what Go does by moving a P to another M when its M blocks,
//!   corio does by letting another M *steal* the blocked P's movable work (below).
//!
//! `workers(1)` is the article's 1:N model: one thread runs every coroutine. `workers(n)` is
//! M:N.
//!
//! # Where a task goes when it becomes runnable (`Shared::schedule`)
//!
//! | the task | woken on its runtime's worker W | woken elsewhere |
//! |---|---|---|
//! | movable (a future, or a coroutine that has not started) | W's next-task slot (the task it displaces goes to W's run queue) | the global queue, then a parked worker is woken |
//! | pinned (a started coroutine, or a local task from `go_local`/`spawn_local`), home W | W's next-task slot | home's inbox, and the home is woken |
//! | pinned, home H ≠ W | H's inbox, and H is woken | H's inbox, and H is woken |
//! | re-queued after a yield | the back of W's run queue (or pinned queue) | — |
//!
//! A started coroutine never leaves its home thread: LLVM may keep a thread-local's address
//! across the switch, and `!Send` values may sit on its stack (DESIGN.md, decision 2).
//!
//! # How a worker finds work (`worker.rs`)
//!
//! 1. Every 61st round, one task from the global queue first (Go's `schedtick % 61`), so
//!    a busy worker cannot starve it, and a non-blocking poll of the sockets (tokio's
//!    `event_interval`): a worker that never runs dry does not leave them to sysmon.
//! 2. The next-task slot, whose task inherits the time slice (Go's `inheritTime`): when sysmon
//!    ends the slice, the slot's task goes to the back of its queue, so a ping-pong pair has
//!    the worker for one slice at a time.
//! 3. Its pinned queue and its run queue, alternately (by pick, not by round).
//! 4. A batch from the global queue.
//! 5. Ready sockets (the netpoller, without blocking: `driver.rs`), then searching: steal half
//!    of a random victim's run queue; run due timers of any worker. At most half the busy
//!    workers search at once (`idle.rs`). A worker that will park without spinning, in a free
//!    driver, polls there instead (`WorkerCtx::parks_in_driver_next`).
//! 6. Spin up to 50 µs before parking (`WorkerCtx::spin`): with two or more workers,
//!    watching the inbox (and, as a searcher, the queues) and polling the sockets; with one,
//!    only while its sockets are busy.
//! 7. Park: at most one worker sleeps in the driver (`driver.rs`) until the nearest timer of
//!    any worker; the others sleep on a futex. No timeouts otherwise: an idle runtime makes no
//!    wake-ups.
//!
//! # When a coroutine hogs a worker or blocks it
//!
//! Rust has no safe points for signal-based preemption (DESIGN.md, decision 3). sysmon
//! (`sysmon.rs`) watches every worker: one that has run the same task (or next-task chain)
//! for 10 ms gets a preempt flag that the next runtime operation honours (the cooperative budget), and if
//! movable work waits behind it — or behind a worker inside `corio::blocking` for more than a
//! sysmon tick — sysmon wakes a parked worker, or starts a spare one, to steal that work. The
//! hog itself is left alone and reported once.

mod blocking;
mod builder;
pub(crate) mod context;
mod driver;
mod fd_table;
mod idle;
mod inspect;
mod local;
mod owned;
mod park;
pub(crate) mod preempt;
pub(crate) mod sched;
mod sigquit;
pub(crate) mod spawn;
mod sysmon;
mod thread_clock;
mod trace;
mod worker;

use std::fmt;
use std::future::Future;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle as ThreadHandle;
use std::time::{Duration, Instant};

pub(crate) use self::blocking::pool_or_here;
pub use self::blocking::{blocking, spawn_blocking};
pub use self::builder::Builder;
pub use self::inspect::{TaskInfo, TaskKind, TaskState};
pub use self::local::{go_local, spawn_local};
pub use self::spawn::TaskBuilder;
pub(crate) use self::spawn::{
    spawn_stackful, spawn_stackful_at, spawn_stackless, spawn_stackless_at,
};

use self::blocking::BlockingPool;
use self::driver::Driver;
use self::idle::Idle;
use self::owned::OwnedTasks;
use self::sched::inject::Inject;
use self::sysmon::Sysmon;
use self::worker::Remote;
use crate::task::JoinHandle;
use crate::task::core::{Header, Kind};
use crate::task::raw::Notified;

/// Settings fixed when the runtime is built.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) workers: usize,
    pub(crate) spares: usize,
    pub(crate) stack_size: usize,
    pub(crate) thread_name: String,
    pub(crate) max_blocking_threads: usize,
    pub(crate) hog_report: bool,
    pub(crate) hooks: builder::ThreadHooks,
    /// Whether coroutines are preemptible unless spawned otherwise (`preempt.rs`).
    pub(crate) preemptible: bool,
    /// Whether a single worker watches its busy sockets before it sleeps
    /// (`WorkerCtx::spin`).
    pub(crate) io_spin: bool,
    /// Whether worker 0 is the thread that called [`Builder::run_here`], not one the runtime
    /// starts.
    pub(crate) caller_worker: bool,
    /// The scheduler trace, if one was asked for (`trace.rs`).
    pub(crate) trace: Option<trace::TraceConfig>,
}

impl Config {
    /// Whether the runtime's only thread that runs tasks is the caller of `run_here`: then
    /// sysmon takes its own descriptor table (`fd_table.rs`). (One worker means no spares,
    /// which sysmon would have to start on the program's table.)
    pub(crate) fn solo(&self) -> bool {
        self.caller_worker && self.workers == 1 && self.spares == 0
    }
}

/// A task's reference to its runtime: a task holds an `Arc<Anchor>`, and the anchor holds the
/// runtime (`Shared`), so every task keeps its runtime alive as if it held the `Arc<Shared>`
/// itself.
///
/// Why the extra level: a spawn takes a reference and a task's end releases one. On the
/// runtime's own `Arc` that was one counter written by every worker's spawns and every task's
/// end: on 2 workers its cache line crossed between the cores at nearly every spawn (a quarter
/// of the skynet tree's time). Each worker has an anchor of its own (`WorkerCtx::anchor`), and
/// its spawns count there; spawns from other threads share one (`Shared::outside_anchor`).
/// Aligned so that no two anchors share a cache line (two workers' anchors, allocated at
/// the same moment, had been neighbours: spawn+join of a batch on 2 workers went from 150 to
/// 250 ns a task).
#[repr(align(128))]
pub(crate) struct Anchor {
    pub(crate) shared: Arc<Shared>,
}

impl Anchor {
    /// A new anchor for `shared` (the worker loop makes one per worker).
    pub(crate) fn new(shared: Arc<Shared>) -> Arc<Anchor> {
        Arc::new(Anchor { shared })
    }
}

/// Everything the workers, tasks and handles of one runtime share.
pub(crate) struct Shared {
    pub(crate) config: Config,
    /// Per-worker parts others may touch: steal handle, inbox, timers, sysmon counters.
    /// Indices `0..workers` are the regular workers, the rest are spares.
    pub(crate) workers: Box<[Remote]>,
    /// The global run queue (Go's `sched.runq`).
    pub(crate) inject: Inject<Notified>,
    pub(crate) idle: Idle,
    pub(crate) owned: OwnedTasks,
    pub(crate) driver: Driver,
    pub(crate) blocking: BlockingPool,
    pub(crate) sysmon: Sysmon,
    /// The scheduler trace's thread, when one was asked for (`trace.rs`).
    pub(crate) tracer: trace::Tracer,
    pub(crate) shutdown: AtomicBool,
    /// The runtime clock's origin: deadlines are nanoseconds since it.
    pub(crate) epoch: Instant,
    /// Worker threads and their workers' indexes, joined at shutdown (those whose thread
    /// stays, `worker::Exit::finish`, are let go instead).
    threads: Mutex<Vec<(usize, ThreadHandle<()>)>>,
    /// Taken to tell, and to wait for, a worker's exit (`worker_exited`, `exit_cv`).
    exits: Mutex<()>,
    /// Signalled when a worker leaves its `run` (`Remote::exit`).
    exit_cv: std::sync::Condvar,
    /// Worker threads running their loop, and `begin_shutdown`s still cancelling tasks: the
    /// last of them to leave at shutdown finishes it (`Shared::leave`).
    running: AtomicUsize,
    /// Whether `finish_shutdown` has run.
    finished: AtomicBool,
    pub(crate) metrics: Counters,
    /// The anchor that tasks spawned from outside the workers share, while the `Runtime`
    /// keeps it alive (a weak reference: the anchor refers to this `Shared`).
    outside: std::sync::OnceLock<std::sync::Weak<Anchor>>,
}

/// Runtime-wide counters (Relaxed; for `Runtime::metrics`).
#[derive(Default)]
pub(crate) struct Counters {
    /// Spawns made outside the runtime's workers (a worker counts its own in
    /// `Remote::spawns`).
    pub(crate) spawned: AtomicU64,
    pub(crate) steals: AtomicU64,
    pub(crate) parks: AtomicU64,
    pub(crate) handoffs: AtomicU64,
    /// Time slices sysmon ended (`Metrics::slices_ended`).
    pub(crate) slices_ended: AtomicU64,
    pub(crate) spares_started: AtomicUsize,
}

impl Shared {
    /// A runtime's shared state, with no thread started yet (`Runtime::from_config` starts
    /// them; the task harness's unit tests run tasks by hand on it, under Miri too).
    pub(crate) fn new(config: Config) -> io::Result<Arc<Shared>> {
        let total = config.workers + config.spares;
        let mut workers = Vec::with_capacity(total);
        for index in 0..total {
            workers.push(Remote::new(index >= config.workers));
        }
        let epoch = Instant::now();
        Ok(Arc::new(Shared {
            workers: workers.into_boxed_slice(),
            inject: Inject::new(config.workers),
            idle: Idle::new(config.workers),
            owned: OwnedTasks::new(total),
            driver: Driver::new(epoch)?,
            blocking: BlockingPool::new(config.max_blocking_threads),
            sysmon: Sysmon::new(),
            tracer: trace::Tracer::default(),
            shutdown: AtomicBool::new(false),
            epoch,
            threads: Mutex::new(Vec::new()),
            exits: Mutex::new(()),
            exit_cv: std::sync::Condvar::new(),
            running: AtomicUsize::new(0),
            finished: AtomicBool::new(false),
            metrics: Counters::default(),
            outside: std::sync::OnceLock::new(),
            config,
        }))
    }

    /// The anchor a task spawned outside this runtime's workers takes: the runtime's own
    /// while the `Runtime` lives, else (a handle spawning after it was dropped) a new one.
    pub(crate) fn outside_anchor(self: &Arc<Self>) -> Arc<Anchor> {
        self.outside
            .get()
            .and_then(std::sync::Weak::upgrade)
            .unwrap_or_else(|| Anchor::new(self.clone()))
    }

    /// The runtime clock: nanoseconds since `epoch`.
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    #[inline] // on the direct switch's path, where a call costs more than the load
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// A task was woken: queue it where it must run (see the table in the module docs).
    #[inline]
    pub(crate) fn schedule(self: &Arc<Self>, task: Notified) {
        self.schedule_with(task, false);
    }

    /// A task woken by value through its waker: as [`Shared::schedule`], for a `self` that is
    /// the task's runtime, whose last count may go with the task as soon as it is queued
    /// (`self` itself is a copy on the waker's stack, `Header::runtime_for_handoff`, not a
    /// reference into the task's anchor, which may be freed with it). On a worker of this
    /// runtime the worker's own `Arc` keeps `Shared` alive, so no clone is taken: cloning
    /// here, on every wake-up, made the `Arc`'s count one cache line that every hand-off on
    /// every worker wrote (72 % of `wake`'s samples for the sieve split over 2 workers).
    /// Elsewhere (a plain thread, another runtime) a clone keeps it alive.
    #[inline]
    pub(crate) fn schedule_woken(self: &Arc<Self>, task: Notified) {
        if task.header().kind != Kind::Blocking {
            let done = context::with_worker(|worker| match worker {
                // `w.shared()` is the worker's own `Arc`: `self` is not used after this.
                Some(w) if Arc::ptr_eq(w.shared(), self) => {
                    w.schedule_local(task, false);
                    None
                }
                _ => Some(task),
            });
            let Some(task) = done else { return };
            return self.clone().schedule_remote(task);
        }
        self.clone().schedule(task);
    }

    /// A task was woken while it ran (a yield): queue it behind the others.
    #[inline]
    pub(crate) fn yield_task(self: &Arc<Self>, task: Notified) {
        self.schedule_with(task, true);
    }

    fn schedule_with(self: &Arc<Self>, task: Notified, is_yield: bool) {
        if task.header().kind == Kind::Blocking {
            self.blocking.push(self, task);
            return;
        }
        context::with_worker(|worker| match worker {
            Some(w) if Arc::ptr_eq(w.shared(), self) => w.schedule_local(task, is_yield),
            _ => self.schedule_remote(task),
        });
    }

    /// Queues a task from a thread that is not one of this runtime's workers.
    pub(crate) fn schedule_remote(&self, task: Notified) {
        if let Some(home) = task.header().pinned_home() {
            self.workers[home].push_inbox(task);
            self.workers[home].unparker.unpark(&self.driver);
            return;
        }
        match self.inject.push(task) {
            Ok(()) => self.notify_work(),
            // Shutting down: the task will be cancelled through the owned list.
            Err(task) => drop(task),
        }
    }

    /// New movable work appeared: wake a parked worker unless one is already searching.
    pub(crate) fn notify_work(&self) {
        // Pairs with the fence in `WorkerCtx::park`: either the parking worker sees the work
        // or we see it parked.
        std::sync::atomic::fence(Ordering::SeqCst);
        if let Some(index) = self.idle.worker_to_notify() {
            self.workers[index].unparker.unpark(&self.driver);
        }
    }

    /// Removes a completed task from the owned list; true if the list's reference was
    /// released to the caller (who drops it).
    /// A [`TaskBuilder::spread`](crate::TaskBuilder::spread) coroutine completed: it no
    /// longer counts on its home worker.
    #[cold]
    pub(crate) fn spread_done(&self, header: &Header) {
        // Relaxed: the home was stored before the task was published. The count orders
        // nothing itself; it is taken before the task's COMPLETE transition (AcqRel), so a
        // thread that has seen the task complete reads it already taken.
        let home = header.home.load(Ordering::Relaxed) as usize;
        self.workers[home]
            .spread_live
            .fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn release(&self, task: NonNull<Header>) -> bool {
        match self.owned.remove(task) {
            Some(task) => {
                std::mem::forget(task);
                true
            }
            None => false,
        }
    }

    /// The nearest timer deadline of any worker (`u64::MAX` if none).
    pub(crate) fn next_timer(&self) -> u64 {
        self.workers
            .iter()
            .map(|w| w.next_timer.load(Ordering::SeqCst))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// A timer with `deadline` was added to worker `index`'s heap from this thread.
    pub(crate) fn timer_added(&self, index: usize, deadline: u64) {
        // SeqCst (inside): pairs with the holder arming the driver after it took it and read
        // the heaps' deadlines: either it saw this timer or we see it holding the driver.
        if self.driver.is_held() {
            // Re-arm the holder's timerfd if this is earlier: no wake-up needed.
            self.driver.arm_earlier(deadline);
            return;
        }
        let on_owner = context::with_worker(|w| {
            w.is_some_and(|w| w.index() == index && std::ptr::eq(w.shared().as_ref(), self))
        });
        if !on_owner {
            // The owner may be asleep on its futex, watching nothing: let it look.
            self.workers[index].unparker.unpark(&self.driver);
        }
    }

    /// The timer at `deadline` was removed from a heap (whose `next_timer` is updated).
    pub(crate) fn timer_removed(&self, deadline: u64) {
        self.driver
            .rearm_after_cancel(deadline, || self.next_timer());
    }

    /// Fires the due timers in worker `index`'s heap; returns how many fired.
    pub(crate) fn fire_timers(&self, index: usize, now: u64) -> usize {
        /// Timers popped per hold of the heap's lock.
        const FIRE_BATCH: usize = 64;
        let remote = &self.workers[index];
        if remote.next_timer.load(Ordering::SeqCst) > now {
            return 0;
        }
        // In batches, with the lock released between them: a worker registering a timer
        // waits for one batch, not for thousands of pops (issue 11: 8,619 timers popped
        // under one lock hold took 47 ms in a debug build, and the workers waiting on the
        // lock looked stuck to sysmon).
        let mut n = 0;
        loop {
            let mut fired = Vec::new();
            let more = {
                let Ok(mut heap) = remote.timers.try_lock() else {
                    return n;
                };
                while fired.len() < FIRE_BATCH
                    && let Some(entry) = heap.pop_expired(now)
                {
                    fired.push(entry);
                }
                remote
                    .next_timer
                    .store(heap.next_deadline().unwrap_or(u64::MAX), Ordering::SeqCst);
                fired.len() == FIRE_BATCH
            };
            n += fired.len();
            for entry in fired {
                entry.fire();
            }
            if !more {
                return n;
            }
        }
    }

    /// Fires the due timers of every worker.
    pub(crate) fn fire_all_timers(&self) -> usize {
        let now = self.now_ns();
        (0..self.workers.len())
            .map(|i| self.fire_timers(i, now))
            .sum()
    }

    /// Starts a spare worker (or wakes a started one) to steal work stuck behind a hog or a
    /// blocking call. False if every spare is busy.
    pub(crate) fn activate_spare(self: &Arc<Self>) -> bool {
        for index in self.config.workers..self.workers.len() {
            let remote = &self.workers[index];
            if remote.active.swap(true, Ordering::AcqRel) {
                continue;
            }
            if !remote.started.swap(true, Ordering::AcqRel) {
                self.metrics.spares_started.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = self.start_worker(index) {
                    remote.active.store(false, Ordering::Release);
                    remote.started.store(false, Ordering::Release);
                    eprintln!("corio: could not start a spare worker: {e}");
                    return false;
                }
            } else {
                remote.unparker.unpark(&self.driver);
            }
            return true;
        }
        false
    }

    fn start_worker(self: &Arc<Self>, index: usize) -> io::Result<()> {
        // Before the count: a `thread_name_fn` that panics is this start's error (`build`'s,
        // or sysmon's "could not start a spare"), with nothing counted or started.
        let name =
            (self.config.hooks).thread_name(|| format!("{}-{index}", self.config.thread_name))?;
        self.running.fetch_add(1, Ordering::SeqCst);
        let shared = self.clone();
        let hooks = self.config.hooks.clone();
        let thread = match std::thread::Builder::new().name(name).spawn(move || {
            let _own = context::own_thread(&shared);
            hooks.run_thread(|| worker::run(shared, index))
        }) {
            Ok(thread) => thread,
            Err(e) => {
                self.running.fetch_sub(1, Ordering::SeqCst);
                return Err(e);
            }
        };
        self.threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((index, thread));
        Ok(())
    }
}

/// A corio runtime: worker threads, their queues, timers, sysmon and a blocking pool.
///
/// ```
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
///
/// // A stackful main coroutine: blocking-style code, spawning more coroutines.
/// let total = rt.run(|| {
///     let a = corio::go(|| 40);
///     let b = corio::spawn(async { 2 });
///     a.join().unwrap() + b.join().unwrap()
/// });
/// assert_eq!(total, 42);
///
/// // A future, driven from this thread.
/// assert_eq!(rt.block_on(async { corio::spawn(async { 7 }).await.unwrap() }), 7);
/// ```
///
/// # Dropping the runtime
///
/// Dropping the runtime shuts it down: every task still alive is cancelled — futures are
/// dropped, coroutines are unwound on their own threads so their destructors run — and the
/// worker threads are joined. A coroutine that keeps blocking while it unwinds (a destructor
/// that waits for something that never comes) is leaked after a grace period of two seconds,
/// and its worker's thread then stays, parked for good, instead of being joined: the leaked
/// frames may borrow that thread's thread-locals (`docs/soundness.md`, "Leaked coroutines and
/// thread-locals").
///
/// As with [`JoinHandle::abort`], which says more: a destructor that panics while a
/// coroutine's stack unwinds aborts the process (a panic during a panic); one in an async
/// task's future is caught. Under `panic = "abort"` the started coroutines are not unwound
/// but leaked, each with a line on stderr.
pub struct Runtime {
    handle: Handle,
    /// Keeps the anchor of spawns from outside the workers alive while the runtime lives
    /// (`Shared::outside_anchor`).
    _outside: Arc<Anchor>,
}

/// A cheap, clonable reference to a runtime, for spawning onto it from anywhere.
#[derive(Clone)]
pub struct Handle {
    pub(crate) shared: Arc<Shared>,
}

impl Runtime {
    /// A builder with the defaults (workers: `CORIO_WORKERS` or the number of CPUs).
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// A runtime with the default settings.
    ///
    /// # Errors
    ///
    /// If the worker threads or the driver cannot be created.
    pub fn new() -> io::Result<Runtime> {
        Builder::new().build()
    }

    pub(crate) fn from_config(config: Config) -> io::Result<Runtime> {
        let shared = Shared::new(config)?;
        for index in 0..shared.config.workers {
            shared.workers[index].started.store(true, Ordering::Relaxed);
            shared.workers[index].active.store(true, Ordering::Relaxed);
            if index == 0 && shared.config.caller_worker {
                // Started by `run_here` on its own thread.
                shared.running.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            if let Err(e) = shared.start_worker(index) {
                Handle {
                    shared: shared.clone(),
                }
                .shutdown_and_join();
                return Err(e);
            }
        }
        if let Err(e) = sysmon::start(&shared).and_then(|()| trace::Tracer::start(&shared)) {
            Handle { shared }.shutdown_and_join();
            return Err(e);
        }
        let outside = Anchor::new(shared.clone());
        let _ = shared.outside.set(Arc::downgrade(&outside));
        sigquit::register(&shared);
        Ok(Runtime {
            handle: Handle { shared },
            _outside: outside,
        })
    }

    /// `Builder::run_here`: a runtime whose worker 0 is this thread, for as long as `f` runs.
    #[track_caller]
    pub(crate) fn run_here<F, T>(mut config: Config, f: F) -> io::Result<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if inside_a_task_or_worker() {
            panic!(
                "corio: `Builder::run_here` called from inside a task or on a runtime's \
                 worker; spawn the work on the runtime that is running instead"
            );
        }
        config.caller_worker = true;
        let rt = Runtime::from_config(config)?;
        let shared = rt.handle.shared.clone();
        /// Shuts the runtime down when the main coroutine ends, however it ends (as a Go
        /// program ends with `main`), so that worker 0's loop returns here.
        struct EndsRuntime(Arc<Shared>);
        impl Drop for EndsRuntime {
            fn drop(&mut self) {
                self.0.begin_shutdown();
            }
        }
        let ends = EndsRuntime(shared.clone());
        // Pinned to this thread from birth, as Go's `main` runs on the main thread.
        let main = spawn::spawn_stackful_at(
            &shared,
            move || {
                let _ends = ends;
                f()
            },
            TaskBuilder::new().name("main"),
            Some(0),
            std::panic::Location::caller(),
        )
        .map_err(|e| io::Error::other(e.to_string()))?;
        shared
            .config
            .hooks
            .run_thread(|| worker::run(shared.clone(), 0));
        // Joins the other workers and sysmon; the main coroutine has finished (or its home,
        // this thread, cancelled it while shutting down).
        drop(rt);
        match crate::block_on::park_thread_on(main) {
            Ok(v) => Ok(v),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("corio: the main coroutine was cancelled ({e})"),
        }
    }

    /// A handle to this runtime.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Runs a future to completion on the calling thread (which is not one of the workers),
    /// with this runtime entered, so that `corio::spawn`, `corio::go` and timers inside it use
    /// this runtime. Tasks it spawns run on the workers.
    ///
    /// # Panics
    ///
    /// If called from inside a task (it would block a worker or a coroutine's thread).
    #[track_caller]
    pub fn block_on<F: Future>(&self, fut: F) -> F::Output {
        self.handle.block_on(fut)
    }

    /// Runs `f` as the main stackful coroutine on this runtime and waits for it, like Go's
    /// `main`. A panic in `f` is resumed on the calling thread.
    ///
    /// # Panics
    ///
    /// If `f` panics (with its payload), or if called from inside a task.
    #[track_caller]
    pub fn run<F, T>(&self, f: F) -> T
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        // Refused before `f` is spawned: the panic must not leave it running on its own.
        if inside_a_task_or_worker() {
            panic!(
                "corio: `Runtime::run` called from inside a task; spawn the work with \
                 `corio::go` and join it instead"
            );
        }
        let handle = self.handle.go(f);
        match self.block_on(handle) {
            Ok(v) => v,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("corio: the main coroutine was cancelled ({e})"),
        }
    }

    /// Spawns a stackless task (a future) on this runtime.
    #[track_caller]
    pub fn spawn<F>(&self, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(fut)
    }

    /// Spawns a stackful coroutine on this runtime.
    ///
    /// # Panics
    ///
    /// If no stack can be had; see [`TaskBuilder::spawn`] for the fallible form.
    #[track_caller]
    pub fn go<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.handle.go(f)
    }

    /// Runs `f` on this runtime's blocking pool; see [`Handle::spawn_blocking`].
    #[track_caller]
    pub fn spawn_blocking<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.handle.spawn_blocking(f)
    }

    /// Shuts the runtime down like dropping it, but waits at most `timeout` for the worker
    /// threads to finish cancelling their tasks. Workers still busy then — a destructor that
    /// blocks its thread, a coroutine that keeps blocking while it unwinds — are left to finish
    /// on their own, detached (the last one completes the shutdown).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = corio::Runtime::builder().workers(2).build().unwrap();
    /// rt.go(|| corio::sleep(Duration::from_secs(60)));
    /// rt.shutdown_timeout(Duration::from_secs(5)); // the sleeper is cancelled at once
    /// ```
    pub fn shutdown_timeout(self, timeout: std::time::Duration) {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again, so moving its fields out of it leaves
        // no second owner of either.
        let (handle, outside) =
            unsafe { (std::ptr::read(&this.handle), std::ptr::read(&this._outside)) };
        // The outside anchor holds the runtime too: left in `this`, it would never be dropped,
        // and the runtime never freed (its descriptors, its settings).
        let _outside = outside;
        if handle.on_own_worker() {
            handle.shared.begin_shutdown();
            return;
        }
        handle.shutdown_and_join_within(Some(timeout));
    }

    /// Shuts the runtime down without waiting for its threads (`shutdown_timeout` with a zero
    /// timeout).
    pub fn shutdown_background(self) {
        self.shutdown_timeout(std::time::Duration::ZERO);
    }

    /// Makes this runtime the one `corio::spawn`/`corio::go` use on this thread until the
    /// guard is dropped.
    ///
    /// Guards nest, and may be dropped in any order: the runtime used is the one entered last
    /// among those whose guards are still alive (see [`EnterGuard`]).
    ///
    /// Inside a task (a coroutine or an async task) it is that task's alone: a coroutine that
    /// holds the guard across a suspension does not lend the runtime to the other coroutines
    /// of its thread, and the task's own runtime is used again once the guard drops.
    ///
    /// ```
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// let _guard = rt.enter();
    /// assert_eq!(corio::spawn(async { 6 * 7 }).join().unwrap(), 42); // runs on `rt`
    /// ```
    pub fn enter(&self) -> EnterGuard {
        EnterGuard(context::enter_runtime(self.handle.shared.clone()))
    }

    /// A snapshot of the runtime's counters.
    pub fn metrics(&self) -> Metrics {
        self.handle.metrics()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.handle.on_own_worker() {
            // Joining our own thread would deadlock; leave the threads to exit on their own.
            self.handle.shared.begin_shutdown();
            return;
        }
        self.handle.shutdown_and_join();
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.handle.shared.config.workers)
            .finish_non_exhaustive()
    }
}

/// Returned by [`Runtime::enter`]; leaves the runtime when dropped.
///
/// Each guard removes its own runtime from the thread's entered runtimes, so guards dropped
/// out of order leave exactly the runtimes whose guards are alive, the last entered of them
/// current. (tokio panics on out-of-order drops instead; in corio they are ordinary: two
/// coroutines of one thread may each hold a guard across a suspension.)
///
/// ```
/// let one = corio::Runtime::builder().workers(1).build().unwrap();
/// let two = corio::Runtime::builder().workers(1).build().unwrap();
/// let g1 = one.enter();
/// let g2 = two.enter();
/// drop(g1); // `two` stays entered: `g2` is alive
/// assert!(corio::Handle::try_current().is_some());
/// drop(g2);
/// assert!(corio::Handle::try_current().is_none());
/// ```
///
/// It is not `Send`: the runtime is entered on the thread that called `enter`, and only that
/// thread can leave it.
///
/// ```compile_fail
/// let rt = corio::Runtime::new().unwrap();
/// let guard = rt.enter();
/// std::thread::spawn(move || drop(guard)); // error: `EnterGuard` cannot be sent
/// ```
pub struct EnterGuard(#[allow(dead_code)] context::EnterGuard);

impl fmt::Debug for EnterGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnterGuard")
    }
}

impl Handle {
    /// The runtime of the calling task, worker, or entered context.
    ///
    /// # Panics
    ///
    /// If there is none; see [`Handle::try_current`].
    #[track_caller]
    pub fn current() -> Handle {
        Handle::try_current().expect(
            "corio: no runtime here: call this inside a corio task, inside Runtime::block_on, \
             or after Runtime::enter",
        )
    }

    /// The runtime of the calling task, worker, or entered context, if any.
    pub fn try_current() -> Option<Handle> {
        context::current_shared().map(|shared| Handle { shared })
    }

    /// Spawns a stackless task.
    #[track_caller]
    pub fn spawn<F>(&self, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_stackless(&self.shared, fut, None)
    }

    /// Runs `f` on this runtime's blocking pool (threads that may block) and returns a
    /// handle to its result; as [`corio::spawn_blocking`](crate::spawn_blocking) on a chosen
    /// runtime.
    ///
    /// ```
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// let handle = rt.handle().clone();
    /// let name = handle.spawn_blocking(|| std::thread::current().name().map(String::from));
    /// assert!(name.join().unwrap().unwrap().ends_with("-blocking"));
    /// ```
    #[track_caller]
    pub fn spawn_blocking<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        spawn::spawn_blocking_task(&self.shared, f)
    }

    /// Runs a future to completion on the calling thread with this runtime entered, as
    /// [`Runtime::block_on`]; usable wherever a handle was passed.
    ///
    /// ```
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// let handle = rt.handle().clone();
    /// let v = std::thread::spawn(move || handle.block_on(async { corio::spawn(async { 3 }).await }))
    ///     .join()
    ///     .unwrap();
    /// assert_eq!(v.unwrap(), 3);
    /// ```
    ///
    /// # Panics
    ///
    /// If called from inside a task or on a runtime worker (it would block a worker or a
    /// coroutine's thread).
    #[track_caller]
    pub fn block_on<F: Future>(&self, fut: F) -> F::Output {
        if inside_a_task_or_worker() {
            panic!(
                "corio: `Runtime::block_on` called from inside a task; use `corio::block_on` \
                 (in a stackful coroutine) or `.await` (in an async task)"
            );
        }
        let _enter = context::enter_runtime(self.shared.clone());
        crate::block_on::park_thread_on(fut)
    }

    /// Whether this thread is one of this runtime's own: a worker (in its loop, or in the
    /// start and stop hooks around it) or sysmon (which fires wakers). Joining it from itself
    /// would never end.
    fn on_own_worker(&self) -> bool {
        context::is_own_thread_of(&self.shared)
            || context::with_worker(|w| w.is_some_and(|w| Arc::ptr_eq(w.shared(), &self.shared)))
    }

    /// Spawns a stackful coroutine with the runtime's default stack size.
    ///
    /// # Panics
    ///
    /// If no stack can be had (see [`TaskBuilder::spawn`]).
    #[track_caller]
    pub fn go<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match spawn_stackful(&self.shared, f, TaskBuilder::new()) {
            Ok(handle) => handle,
            Err(e) => panic!("{e}"),
        }
    }

    /// A snapshot of the runtime's counters.
    pub fn metrics(&self) -> Metrics {
        let _no_preempt = preempt::guard();
        let shared = &self.shared;
        let m = &shared.metrics;
        let sum = |counter: fn(&worker::Remote) -> &std::sync::atomic::AtomicU64| -> u64 {
            shared
                .workers
                .iter()
                .map(|w| counter(w).load(Ordering::Relaxed))
                .sum()
        };
        let each = |counter: fn(&worker::Remote) -> &std::sync::atomic::AtomicU64| -> Vec<u64> {
            shared
                .workers
                .iter()
                .map(|w| counter(w).load(Ordering::Relaxed))
                .collect()
        };
        Metrics {
            workers: shared.config.workers,
            spares_started: m.spares_started.load(Ordering::Relaxed),
            live_tasks: shared.owned.len(),
            spawned: m.spawned.load(Ordering::Relaxed) + sum(|w| &w.spawns),
            steals: m.steals.load(Ordering::Relaxed),
            parks: m.parks.load(Ordering::Relaxed),
            handoffs: m.handoffs.load(Ordering::Relaxed),
            slices_ended: m.slices_ended.load(Ordering::Relaxed),
            global_queue: shared.inject.len(),
            polls: shared
                .workers
                .iter()
                .map(|w| w.ticks.load(Ordering::Relaxed))
                .sum(),
            unparked_workers: shared.idle.num_unparked(),
            preemptions: sum(|w| &w.preempt_signal.preemptions),
            preempt_signals: sum(|w| &w.preempt_signal.signals),
            preempt_signals_stray: sum(|w| &w.preempt_signal.stray),
            direct_switches: sum(|w| &w.direct_switches),
            direct_handoffs: sum(|w| &w.direct_handoffs),
            direct_queue_handoffs: sum(|w| &w.direct_queue_handoffs),
            spin_slices_lost: sum(|w| &w.spin_slices_lost),
            spins_skipped: sum(|w| &w.spins_skipped),
            io_spin_polls: sum(|w| &w.io_spin_polls),
            first_poll_waits: sum(|w| &w.first_poll_waits),
            first_poll_wait_time: Duration::from_nanos(sum(|w| &w.first_poll_wait_ns)),
            io_polls: shared.driver.polls.load(Ordering::Relaxed),
            driver_wakes: shared.driver.wakes.load(Ordering::Relaxed),
            timer_sets: shared.driver.timer_sets.load(Ordering::Relaxed),
            worker_polls: each(|w| &w.ticks),
            worker_inbox_pushes: each(|w| &w.inbox_pushes),
        }
    }

    fn shutdown_and_join(&self) {
        self.shutdown_and_join_within(None);
    }

    /// Shuts down and joins the worker threads, giving up after `timeout` (then the threads
    /// still running are detached, and the last of them finishes the shutdown).
    fn shutdown_and_join_within(&self, timeout: Option<std::time::Duration>) {
        let shared = &self.shared;
        shared.begin_shutdown();
        let threads =
            std::mem::take(&mut *shared.threads.lock().unwrap_or_else(|e| e.into_inner()));
        if let Some(timeout) = timeout {
            // `None` (a deadline past the clock's range) means "no limit".
            let deadline = Instant::now().checked_add(timeout);
            // std has no join with a timeout: poll the threads (1 ms apart, only here).
            while threads
                .iter()
                .any(|(i, t)| !t.is_finished() && !shared.worker_stays(*i))
            {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return; // dropping the handles detaches the threads still running
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        // Wait until each worker has left its `run`, so that those whose thread stays for
        // good (`worker::Exit::finish`) are known; join the others. (A thread that never reached
        // `run` — a start hook panicked — is seen finished; hence the timeout.)
        {
            let mut exits = shared.exits.lock().unwrap_or_else(|e| e.into_inner());
            while threads.iter().any(|(i, t)| {
                !t.is_finished()
                    && shared.workers[*i].exit.load(Ordering::Acquire) == worker::EXIT_RUNNING
            }) {
                exits = shared
                    .exit_cv
                    .wait_timeout(exits, std::time::Duration::from_millis(10))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
        for (index, thread) in threads {
            if !shared.worker_stays(index) {
                let _ = thread.join();
            }
        }
        // The last to leave has finished the shutdown; a worker that panicked left without
        // finishing it (`worker::run`), and then it is done here.
        if shared.running.load(Ordering::SeqCst) == 0 {
            shared.finish_shutdown();
        }
    }
}

impl Shared {
    /// A worker thread leaves its loop, or `begin_shutdown` has cancelled what it could; the
    /// last of them at shutdown finishes the shutdown (so it completes even when the runtime
    /// was dropped on one of its own workers, where nobody can join the threads).
    pub(crate) fn leave(&self) {
        if self.running.fetch_sub(1, Ordering::SeqCst) == 1 && self.is_shutdown() {
            self.finish_shutdown();
        }
    }

    /// A worker's thread has left its `run` with `state` (`Remote::exit`): tells a drop that
    /// waits to join it.
    pub(crate) fn worker_exited(&self, index: usize, state: u8) {
        self.workers[index].exit.store(state, Ordering::Release);
        let _exits = self.exits.lock().unwrap_or_else(|e| e.into_inner());
        self.exit_cv.notify_all();
    }

    /// Whether worker `index`'s thread stays for good (`worker::Exit::finish`).
    fn worker_stays(&self, index: usize) -> bool {
        self.workers[index].exit.load(Ordering::Acquire) == worker::EXIT_STAYS
    }

    /// The task of `header` is being leaked: if it is a started coroutine pinned to a worker,
    /// its frames never end, and that worker's thread must never exit
    /// (`worker::Exit::finish`).
    pub(crate) fn note_leaked_task(&self, header: &crate::task::core::Header) {
        if let (crate::task::core::Kind::Stackful { migratable: false }, Some(home)) =
            (header.kind, header.pinned_home())
        {
            self.workers[home]
                .leaked_coroutine
                .store(true, Ordering::Release);
        }
    }

    /// `leave` for a worker that panicked: it leaves the shutdown, if it is the last,
    /// to `shutdown_and_join` (cancelling tasks while unwinding would abort on a destructor's
    /// panic).
    pub(crate) fn leave_after_panic(&self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
    }

    /// Cancels what no worker took (futures and coroutines that never started), drops what is
    /// queued, stops sysmon and the blocking pool. Runs once, after the workers' own shutdown.
    fn finish_shutdown(&self) {
        if self.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        for task in self.owned.close_and_collect(|_| true) {
            if task.header().pinned_home().is_some() {
                // Its worker left without finishing it (it cannot run it elsewhere).
                task.leak();
            } else if let Some(running) = task.shutdown_unless_pinned() {
                // No worker runs any more, so nothing can have started it since the check;
                // were it so, its home is gone: leak it rather than unwind it here.
                running.leak();
            }
        }
        for remote in self.workers.iter() {
            remote.drain(self.epoch);
        }
        while let Some(task) = self.inject.pop() {
            drop(task);
        }
        self.sysmon.stop();
        self.tracer.stop();
        self.blocking.shutdown();
        // Waiters on sockets wake with an error; the wakers they left go (they hold tasks).
        self.driver.registry.close_all();
    }

    fn begin_shutdown(&self) {
        // Counted as a running worker until it has cancelled what it could. The workers see the
        // flag and leave meanwhile, and the last of them to leave finishes the shutdown, which
        // drains the timer heaps: a timer of a task cancelled here after that drain stayed with
        // the fallback timer thread, holding the task's waker, and through it this runtime and
        // its descriptors, until its deadline (`rt_shutdown.rs`, `the_runtime_is_freed_...`).
        self.running.fetch_add(1, Ordering::SeqCst);
        if self.shutdown.swap(true, Ordering::AcqRel) {
            self.leave();
            return;
        }
        self.inject.close();
        // Futures and coroutines that never started can be cancelled from any thread: do it
        // now, so that a coroutine whose destructor waits for one of them (while its worker
        // drains it, see `WorkerCtx::shut_down`) sees it finish. A worker that checked the
        // shutdown flag just before it was set may still start one of them meanwhile (issue 7,
        // item 3): whoever wins its shutdown transition then owns a started coroutine, which
        // only its home may unwind, so it goes to the home's inbox. The home's drain waits for
        // it: the task stays in the owned list until it completes.
        for task in self.owned.close_and_collect(|h| h.pinned_home().is_none()) {
            if let Some(running) = task.shutdown_unless_pinned() {
                let home = running
                    .header()
                    .pinned_home()
                    .expect("corio: a task handed back for its home has none");
                self.workers[home].push_inbox_running(running);
                self.workers[home].unparker.unpark(&self.driver);
            }
        }
        for remote in self.workers.iter() {
            remote.unparker.unpark(&self.driver);
        }
        self.driver.wake();
        self.sysmon.wake();
        self.leave();
    }
}

/// Whether the caller is a task, or a runtime's worker between tasks: where waiting for a
/// runtime on the thread (`block_on`, `run`, `run_here`) would block a worker or a coroutine's
/// thread.
fn inside_a_task_or_worker() -> bool {
    !matches!(context::here(), context::Here::Thread) || context::with_worker(|w| w.is_some())
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("workers", &self.shared.config.workers)
            .finish_non_exhaustive()
    }
}

/// Counters of a runtime, read with [`Runtime::metrics`].
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Metrics {
    /// Worker threads (the P count, like `GOMAXPROCS`).
    pub workers: usize,
    /// Spare workers started by sysmon to take work stuck behind hogs or blocking calls.
    pub spares_started: usize,
    /// Tasks alive now (spawned and not finished).
    pub live_tasks: usize,
    /// Tasks spawned since the runtime started.
    pub spawned: u64,
    /// Successful steals (each moves half a run queue).
    pub steals: u64,
    /// Times a worker went to sleep.
    pub parks: u64,
    /// Times sysmon moved work away from a hogging or blocked worker.
    pub handoffs: u64,
    /// Time slices sysmon ended: a task ran 10 ms without suspending, and was asked to yield
    /// at its next preemption point (a yield, a spawn, a blocking-style call, a budgeted
    /// channel, IO or timer operation).
    pub slices_ended: u64,
    /// Tasks in the global queue now.
    pub global_queue: usize,
    /// Task polls (resumes, for coroutines) so far.
    pub polls: u64,
    /// Workers not asleep now.
    pub unparked_workers: usize,
    /// Signal preemptions: times a preemptible coroutine was suspended by sysmon's signal
    /// (see [`TaskBuilder::preemptible`](crate::Builder::preemptible)).
    pub preemptions: u64,
    /// Preemption signals sysmon sent to workers (some find no safe point and are retried).
    pub preempt_signals: u64,
    /// Preemption signals that arrived when no preemptible coroutine was running on the
    /// worker (the one sysmon meant had yielded by itself meanwhile).
    pub preempt_signals_stray: u64,
    /// Yields that switched straight from one pinned coroutine to the next one its worker
    /// ran, without going through the worker's loop (docs/scheduler.md, "Yield path").
    pub direct_switches: u64,
    /// Suspensions in `block_on` that switched straight from one pinned coroutine to the one
    /// it had woken into its worker's next-task slot, without going through the worker's loop
    /// (docs/scheduler.md, "The direct switch on a `block_on` suspension").
    pub direct_handoffs: u64,
    /// Suspensions in `block_on` that switched straight from one pinned coroutine to the one
    /// at the front of its worker's pinned queue (a woken coroutine waiting for its turn, with
    /// the next-task slot empty), without going through the worker's loop (docs/scheduler.md,
    /// "The direct switch to a queued coroutine"): a server's coroutines, woken by one poll
    /// of the sockets, hand the worker on to each other this way.
    pub direct_queue_handoffs: u64,
    /// Spins of a worker out of work whose `sched_yield` lost the CPU to another thread for a
    /// time slice: the CPUs were oversubscribed, and the worker parked without spinning for a
    /// while after each (`runtime/worker.rs`, `spin`).
    pub spin_slices_lost: u64,
    /// Times a worker out of work went to park without spinning because its spins had been
    /// losing time slices (each at most one park more than spinning would have made).
    pub spins_skipped: u64,
    /// Netpoller polls made by workers spinning for a moment before they park: the spin of
    /// a multi-worker runtime's workers, and the only worker of a `workers(1)` runtime
    /// watching its busy sockets (`runtime/worker.rs`, `spin`, "The only worker spins while
    /// its sockets are busy"); also counted in `io_polls`.
    pub io_spin_polls: u64,
    /// Spins of the only worker of a `workers(1)` runtime that waited before their first
    /// netpoller poll, so that a busy server's requests are taken in batches rather than by
    /// an `epoll_wait` each (`runtime/worker.rs`, `spin`, "The first poll waits"). A worker
    /// that has no time to spare (it spends less than an eighth of its time spinning) does
    /// not wait; nor do the workers of a runtime with more than one.
    pub first_poll_waits: u64,
    /// The time those waits lasted in all. A wait ends early when work arrives, so this is
    /// at most `first_poll_waits` times the longest wait (20 µs), scheduling delays aside.
    pub first_poll_wait_time: Duration,
    /// Netpoller polls (`epoll_wait` calls) so far, blocking or not, by any poller: a parked
    /// worker in the driver, a worker out of work, sysmon (`runtime/driver.rs`, "Netpoller").
    pub io_polls: u64,
    /// Times a thread interrupted the worker waiting in the driver (`epoll_wait`) to make it
    /// look at new work: writes to the driver's eventfd (`runtime/driver.rs`).
    pub driver_wakes: u64,
    /// Times the driver's timer (a `timerfd`, the deadline of the worker waiting in the
    /// driver) was armed, moved or disarmed: `timerfd_settime` calls (`runtime/driver.rs`).
    pub timer_sets: u64,
    /// Task polls per worker (the workers in order, then any spares sysmon started).
    pub worker_polls: Vec<u64>,
    /// Per worker, tasks other threads queued on it: cross-thread wake-ups of its coroutines
    /// and coroutines placed there to start (same order as `worker_polls`).
    pub worker_inbox_pushes: Vec<u64>,
}

/// The process-wide runtime used by `corio::go`/`corio::spawn`/`corio::run` outside any
/// other runtime. Built on first use with the default settings; lives until the process exits.
pub(crate) fn default_runtime() -> &'static Runtime {
    static DEFAULT: OnceLock<Runtime> = OnceLock::new();
    DEFAULT.get_or_init(|| {
        Runtime::new().unwrap_or_else(|e| panic!("corio: cannot start the default runtime: {e}"))
    })
}

/// The runtime to spawn on from here: the current one, else the default.
pub(crate) fn current_or_default() -> Arc<Shared> {
    context::current_shared().unwrap_or_else(|| default_runtime().handle.shared.clone())
}

/// Runs `f` with the runtime [`current_or_default`] names, borrowed from the running task when
/// there is one: a spawn then touches no reference count of the runtime's (an `Arc<Shared>`
/// clone and drop, whose counter every worker's spawns write: a cache line that crossed
/// between the cores at every spawn on 2 workers).
pub(crate) fn with_current_or_default<R>(f: impl FnOnce(&Arc<Shared>) -> R) -> R {
    // A blocking-pool closure's task does not name the runtime first, nor does a task that
    // entered another runtime (`current_shared`).
    if let Some(scheduler) = context::current_task(|t| {
        t.filter(|h| h.kind != crate::task::core::Kind::Blocking)
            .filter(|_| !context::has_task_entries())
            .map(|h| std::ptr::NonNull::from(&h.scheduler.shared))
    }) {
        // SAFETY: the task running this code holds its own header alive until it completes,
        // which is after `f` returns, and a task's `scheduler` never changes.
        return f(unsafe { scheduler.as_ref() });
    }
    f(&current_or_default())
}
