//! sysmon: the thread that watches the workers (Go's `sysmon`).
//!
//! Every tick — 20 µs, doubling after 50 quiet ticks up to 10 ms, as Go's — it looks at each
//! worker's time-slice count (`Remote::slices`). A counter that has not moved since the
//! previous tick while the worker is busy means one task (or one chain of tasks run from the
//! next-task slot, which inherit the slice) has been running all that time — or that the
//! worker's thread has not run at all, which the wall clock cannot tell apart. What sysmon
//! keeps per worker is a [`Slice`]: when the slice was first seen, the thread's CPU clock
//! when it was first seen stuck, the tick at which preemption was requested, and whether it
//! was reported. For a slice that lasts:
//!
//! - a 10 ms time slice of wall-clock time (Go's `forcePreemptNS`): the worker's preempt flag
//!   is set; the task's next preemption point (a yield, a spawn, a blocking-style call, a
//!   budgeted channel, IO or timer operation) yields; a preemptible coroutine is signalled at
//!   the same tick (`preempt.rs`). sysmon sleeps no longer than until that 10 ms mark;
//!   while a preemptible coroutine runs, no longer than `preempt::WATCH` (1 ms), so that its
//!   slice is not stretched by the back-off (10–21 ms before; Go's is 10–20 ms);
//! - two slices, with movable work waiting behind it — in that worker's run queue, or in the
//!   global queue with no worker free to take it: a parked worker is woken to steal it, or,
//!   when every worker is busy and a spare would help, a spare worker is started (see
//!   [`spare_would_help`] and "Spare workers" in `docs/scheduler.md`);
//! - 50 ms of the worker thread's *CPU time* (`thread_clock.rs`): the hog is reported once on
//!   stderr (name, id, spawn location, CPU time, which worker), unless
//!   `Builder::hog_report(false)` or `CORIO_HOG_REPORT=0`. Wall-clock time would count the
//!   time the kernel gave other threads, or the thread spent in a system call or on a lock:
//!   issue 11 found innocent coroutines (one `sleep` each) reported with 0–55 µs of CPU time
//!   in their "50 ms". No report either for a slice in which the task panicked (corio's panic
//!   hook marks it: printing a backtrace can take 50 ms of CPU), or once the task has
//!   finished (the worker is then in the scheduler);
//! - 1 s with the thread asleep in the kernel (a std `Mutex` guard held across a suspension,
//!   a blocking system call): reported as blocking the thread. A thread that merely waits
//!   for a CPU is never reported: its task is not what holds it.
//!
//! A worker inside `corio::blocking` for longer than one tick with work waiting gets the same
//! hand-off, without the report.
//!
//! Either way, the coroutines placed on the stuck worker to start there
//! (`sched/placement.rs`) and not started yet go to the global queue first, so that they are
//! part of the work handed off: not started, they are bound to no thread.
//!
//! A worker that has run one task since sysmon's previous tick reads the clock only between
//! tasks, so sysmon fires its due timers (200 µs overdue), and sleeps no longer than until
//! then: the back-off delay made a sleeper on a busy worker up to 10 ms late before its timer
//! even fired.
//!
//! If no worker polled the netpoller for [`NETPOLL_AFTER`] while they are busy, sysmon polls
//! it (Go's sysmon `netpoll`), so sockets that became ready are not starved by busy workers.
//!
//! Neither that poll nor the timers above on a one-worker `Builder::run_here` runtime: there
//! sysmon has its own descriptor table and runs no wakers (`fd_table.rs`).
//!
//! When every worker has been asleep for [`DEEP_SLEEP_AFTER`], sysmon sleeps too, without a
//! timeout, until a worker wakes it (`wake_if_sleeping`): an idle runtime costs no wake-ups
//! (Go's sysmon does not, #18236). Not at once: a server's single worker parks between
//! requests hundreds of times a second, and when sysmon slept at each park, every wake-up of
//! the worker also woke sysmon (a futex wake on the worker's way back to work) and restarted
//! its 20 µs ticks: 2,662 sysmon context switches in a 3 s `http` run (`docs/net-bench.md`).
//! Through a short idle spell sysmon keeps ticking at its backed-off delay instead, and the
//! worker's wake-up costs it one load.
//!
//! # Back to sleep after a rare wake-up
//!
//! That hysteresis made a rare wake-up expensive: a timer firing once a second on an idle
//! runtime, or one spurious wake-up of the driver's holder, woke sysmon, which then ticked
//! for 20 ms from 20 µs ticks backing off, ~60 ticks for one event. A wake-up after a deep
//! sleep of at least [`RARE_WAKE_UP`] is taken as rare: sysmon sleeps again as soon as two
//! looks a tick apart find every worker idle with no task run between them, 2–3 ticks per
//! event. A deep sleep shorter than that (a server between requests) restores the 20 ms.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Shared;
use super::context;
use super::fd_table;
use super::park::Event;
use super::thread_clock::ThreadState;
use super::worker::{Remote, STATUS_BLOCKING, STATUS_IDLE, STATUS_RUNNING};

/// Go's `forcePreemptNS`.
const TIME_SLICE: Duration = Duration::from_millis(10);
/// How long a task must have run before the work behind it is handed to others: two slices,
/// so that a task that merely ran one long slice (a burst of spawns, a big computation
/// between yields) does not start threads (async-std's blocking detection added threads too
/// eagerly and lost throughput under load).
const HAND_OFF_AFTER: Duration = Duration::from_millis(20);
/// How late a busy worker's timer must be before sysmon fires it instead.
const OVERDUE_NS: u64 = 200_000;
/// How much CPU time a task must have used in one slice to be reported as a hog.
const REPORT_AFTER: Duration = Duration::from_millis(50);
/// How long a task must have kept its worker's thread asleep in the kernel (a std lock held
/// across a suspension, a blocking system call) to be reported as blocking it: long enough
/// that no ordinary lock contention or page fault gets there.
const BLOCKED_REPORT_AFTER: Duration = Duration::from_secs(1);
const MIN_DELAY: Duration = Duration::from_micros(20);
const MAX_DELAY: Duration = Duration::from_millis(10);
/// How long without an IO poll before sysmon polls (Go's sysmon: 10 ms).
const NETPOLL_AFTER: Duration = Duration::from_millis(10);
/// Quiet ticks before the delay starts doubling (Go: 50).
const QUIET_TICKS: u32 = 50;
/// How long every worker must have been idle before sysmon sleeps without a timeout (and
/// must be woken by the next worker that wakes). Before that it keeps ticking, backing off as
/// usual: from 20 µs ticks to 10 ms ones this takes ~60 ticks.
const DEEP_SLEEP_AFTER: Duration = Duration::from_millis(20);
/// A deep sleep at least this long ended in a rare wake-up: sysmon goes back to deep sleep
/// as soon as two looks a tick apart find every worker idle with no task run between them
/// ("Back to sleep after a rare wake-up"). Five times `DEEP_SLEEP_AFTER`: a worker woken more
/// often than that keeps the hysteresis that spares its wake-ups a sysmon wake each.
const RARE_WAKE_UP: Duration = Duration::from_millis(100);

pub(crate) struct Sysmon {
    event: Event,
    sleeping: AtomicBool,
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Whether sysmon has its own descriptor table (`fd_table.rs`): then it runs no wakers.
    own_table: AtomicBool,
}

impl Sysmon {
    pub(crate) fn new() -> Sysmon {
        Sysmon {
            event: Event::new(),
            sleeping: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
            own_table: AtomicBool::new(false),
        }
    }

    /// Wakes sysmon if it sleeps because the runtime was idle.
    #[inline]
    pub(crate) fn wake_if_sleeping(&self) {
        // The caller has just stored its worker's status (RUNNING) with Release, which is not
        // in the SeqCst order: this fence puts that store before the load below, so that of
        // this pair and sysmon's (`sleeping.store(true)` then the status loads of `is_quiet`,
        // both SeqCst) at least one side sees the other's store, and sysmon never sleeps
        // without a timeout while this worker runs.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            self.event.notify();
        }
    }

    pub(crate) fn wake(&self) {
        self.event.notify();
    }

    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.event.notify();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

/// Starts sysmon for `shared`. It holds the runtime until `Sysmon::stop`.
pub(crate) fn start(shared: &Arc<Shared>) -> std::io::Result<()> {
    install_panic_hook();
    let shared_for_thread = shared.clone();
    let name = format!("{}-sysmon", shared.config.thread_name);
    let (started_tx, started) = std::sync::mpsc::sync_channel(1);
    let thread = std::thread::Builder::new().name(name).spawn(move || {
        let shared = shared_for_thread;
        // The wakers sysmon fires are user code, which may drop the runtime.
        let _own = context::own_thread(&shared);
        let sysmon = &shared.sysmon;
        // Without `close_range` (Linux < 5.9) or `unshare` (a seccomp filter), sysmon stays
        // on the program's table: slower system calls on the worker, nothing else.
        if shared.config.solo() && fd_table::unshare_keeping(&shared.driver.fds()) {
            sysmon.own_table.store(true, Ordering::Relaxed);
        }
        // Before the worker runs anything, so that no file of the program's is held by
        // sysmon's copy of the table for longer than this start-up.
        let _ = started_tx.send(());
        let mut watch = Watch::default();
        // Since when every worker has been seen idle, having run no task since (the tasks
        // run so far, then): a worker that woke, ran and parked again between two looks
        // restarts it.
        let mut quiet_since: Option<(Instant, u64)> = None;
        // How long every worker must stay idle before the next deep sleep: `DEEP_SLEEP_AFTER`,
        // or a tick after a rare wake-up ("Back to sleep after a rare wake-up").
        let mut deep_sleep_after = DEEP_SLEEP_AFTER;
        while !sysmon.stop.load(Ordering::SeqCst) {
            let ran = tasks_run(&shared);
            if !is_quiet(&shared) || quiet_since.is_some_and(|(_, then)| then != ran) {
                quiet_since = None;
            } else if quiet_since.is_none() {
                quiet_since = Some((Instant::now(), ran));
            }
            if quiet_since.is_some_and(|(since, _)| since.elapsed() >= deep_sleep_after) {
                quiet_since = None;
                sysmon.sleeping.store(true, Ordering::SeqCst);
                // Re-check after publishing `sleeping` (pairs with `wake_if_sleeping`).
                if is_quiet(&shared) && !sysmon.stop.load(Ordering::SeqCst) {
                    let slept_from = Instant::now();
                    sysmon.event.wait(None);
                    deep_sleep_after = if slept_from.elapsed() >= RARE_WAKE_UP {
                        MIN_DELAY
                    } else {
                        DEEP_SLEEP_AFTER
                    };
                    watch.delay = MIN_DELAY;
                    watch.sleep = MIN_DELAY;
                    watch.quiet = 0;
                }
                sysmon.sleeping.store(false, Ordering::SeqCst);
                continue;
            }
            sysmon.event.wait(Some(watch.sleep));
            watch.tick(&shared);
            #[cfg(all(test, not(loom)))]
            tests::hold::PASSES.fetch_add(1, Ordering::SeqCst);
        }
    })?;
    if shared.config.solo() {
        let _ = started.recv();
    }
    *shared
        .sysmon
        .thread
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Some(thread);
    Ok(())
}

/// Tasks run so far by all workers (each worker's `ticks`, which only its owner writes).
fn tasks_run(shared: &Shared) -> u64 {
    shared
        .workers
        .iter()
        .map(|w| w.ticks.load(Ordering::Relaxed))
        .sum()
}

fn is_quiet(shared: &Shared) -> bool {
    shared
        .workers
        .iter()
        .all(|w| w.status.load(Ordering::SeqCst) == STATUS_IDLE)
}

/// What sysmon remembers between ticks.
struct Watch {
    /// The back-off delay between ticks (Go's: 20 µs, doubling after 50 quiet ticks).
    delay: Duration,
    /// How long sysmon sleeps before its next tick: `delay`, or less when something is due
    /// sooner (see [`Watch::tick`]).
    sleep: Duration,
    quiet: u32,
    slices: Vec<Slice>,
    /// When work was last handed off: at most one hand-off per time slice, so a woken or
    /// started worker has time to take the work before another is started.
    last_hand_off: Option<Instant>,
    /// The driver's poll count when last seen moving, and when.
    polls: u64,
    polls_since: Instant,
}

/// What sysmon knows about the time slice a worker is in.
#[derive(Clone, Copy)]
struct Slice {
    /// The worker's `slices()` count when this slice was first seen.
    ticks: u64,
    /// When it was first seen (wall clock).
    since: Instant,
    /// The worker thread's CPU time when the slice was first seen to last longer than a
    /// tick (read lazily, so that the many short slices cost no system call).
    cpu_since: Option<u64>,
    /// Preemption signals sent in this slice (a preemptible coroutine's; see
    /// `preempt::nudge`).
    signals: u32,
    /// Since when the thread has been seen asleep in the kernel at every look (reset by a
    /// look that finds it runnable).
    blocked_since: Option<Instant>,
    /// Whether the hog was reported (once per slice).
    reported: bool,
    /// Whether this slice was counted as ended (`Metrics::slices_ended`; the request is
    /// stored again at every tick until the task yields).
    ended: bool,
}

impl Slice {
    fn new(ticks: u64, now: Instant) -> Slice {
        Slice {
            ticks,
            since: now,
            cpu_since: None,
            signals: 0,
            blocked_since: None,
            reported: false,
            ended: false,
        }
    }

    /// CPU time the worker's thread has used since the slice was first seen stuck.
    fn cpu_used(&self, remote: &Remote) -> Option<Duration> {
        let used = remote.clock.cpu_ns()?.checked_sub(self.cpu_since?)?;
        Some(Duration::from_nanos(used))
    }
}

impl Default for Watch {
    fn default() -> Watch {
        Watch {
            delay: MIN_DELAY,
            sleep: MIN_DELAY,
            quiet: 0,
            slices: Vec::new(),
            last_hand_off: None,
            polls: 0,
            polls_since: Instant::now(),
        }
    }
}

impl Watch {
    /// Whether a hand-off may happen now (and, if so, records it).
    fn may_hand_off(&mut self, now: Instant) -> bool {
        if self.last_hand_off.is_some_and(|t| now - t < TIME_SLICE) {
            return false;
        }
        self.last_hand_off = Some(now);
        true
    }

    /// Polls the netpoller if nobody did for `NETPOLL_AFTER`; whether a socket was ready.
    fn poll_io_if_starved(&mut self, shared: &Shared, now: Instant) -> bool {
        let polls = shared.driver.polls.load(Ordering::Relaxed);
        if polls != self.polls {
            self.polls = polls;
            self.polls_since = now;
            return false;
        }
        if now - self.polls_since < NETPOLL_AFTER {
            return false;
        }
        self.polls_since = now;
        shared.driver.poll_io() > 0
    }

    /// One look at the workers; sets `delay` (the back-off) and `sleep` (the time to the
    /// next tick: `delay`, or less when a stuck worker's timer or a preemptible coroutine's
    /// slice end is due sooner).
    fn tick(&mut self, shared: &Arc<Shared>) {
        let now = Instant::now();
        let mut due = Duration::MAX;
        if self.slices.len() != shared.workers.len() {
            self.slices = vec![Slice::new(u64::MAX, now); shared.workers.len()];
        }
        // With its own descriptor table, sysmon runs no wakers (`fd_table.rs`): the only
        // worker, busy, is the only one that could run what they wake anyway.
        let runs_wakers = !shared.sysmon.own_table.load(Ordering::Relaxed);
        let mut acted = runs_wakers && self.poll_io_if_starved(shared, now);
        // A worker busy with one long task reads the clock only between tasks: fire its due
        // timers from here so that sleepers on it are not late by a whole task.
        let runtime_now = shared.now_ns();
        for (index, remote) in shared.workers.iter().enumerate() {
            if runs_wakers
                && remote
                    .next_timer
                    .load(Ordering::Relaxed)
                    .saturating_add(OVERDUE_NS)
                    <= runtime_now
                && remote.status.load(Ordering::Acquire) != STATUS_IDLE
            {
                acted |= shared.fire_timers(index, runtime_now) > 0;
            }
        }
        // Workers stuck long enough that a spare would help (see `spare_would_help`), and
        // whether work waits behind a stuck worker (`Some`), behind one that a spare helps
        // (`Some(true)`).
        let mut stuck = 0;
        let mut hand_off: Option<bool> = None;
        for (index, remote) in shared.workers.iter().enumerate() {
            let status = remote.status.load(Ordering::Acquire);
            let ticks = remote.slices();
            let slice = &mut self.slices[index];
            if status == STATUS_IDLE {
                *slice = Slice::new(ticks, now);
                continue;
            }
            // A preemptible coroutine running: its slice's end is seen within
            // `preempt::WATCH`, not within the back-off delay (up to 10 ms).
            if super::preempt::runs_preemptible(&remote.preempt_signal) {
                due = due.min(super::preempt::WATCH);
            }
            if ticks != slice.ticks {
                *slice = Slice::new(ticks, now);
                continue;
            }
            // In the same slice since the last tick: the worker reads the clock only between
            // tasks, so sysmon fires its timers (above) — on time, not a back-off delay late.
            let next_timer = remote.next_timer.load(Ordering::Relaxed);
            if next_timer != u64::MAX {
                let until = next_timer
                    .saturating_add(OVERDUE_NS)
                    .saturating_sub(runtime_now);
                due = due.min(Duration::from_nanos(until));
            }
            if slice.cpu_since.is_none() {
                slice.cpu_since = remote.clock.cpu_ns();
            }
            let stuck_for = now - slice.since;
            let work_waiting = remote.has_stealable_work() || !shared.inject.is_empty();
            match status {
                STATUS_RUNNING if stuck_for < TIME_SLICE => {
                    due = due.min(TIME_SLICE - stuck_for);
                }
                STATUS_RUNNING => {
                    #[cfg(all(test, not(loom)))]
                    tests::hold::before_preempt(shared);
                    remote
                        .preempt
                        .store(super::worker::Remote::slice_tag(ticks), Ordering::Relaxed);
                    // The request names the slice read above. If sysmon lost its CPU since
                    // that read (a loaded machine), the slice may have ended and the worker
                    // cleared the request after its task; one landing now names a slice that
                    // is over, and the next task ignores it (`Remote::preempt`). (Before the
                    // request carried its slice, only the withdrawal below stopped it, and a
                    // next task that read it first, while sysmon lost its CPU again between
                    // the store and the withdrawal, was preempted at once.) Look again all the
                    // same: a slice that ended needs no more of this verdict (signal, report,
                    // hand-off), and the request goes. SeqCst: the read is not moved before
                    // the store.
                    std::sync::atomic::fence(Ordering::SeqCst);
                    let now_slices = remote.slices();
                    let ended = now_slices != ticks;
                    if ended {
                        remote.preempt.store(0, Ordering::Relaxed);
                        // The new slice is seen now, not at `now`, read before sysmon lost
                        // its CPU: from `now` it would look as old as sysmon was away, and
                        // its task be preempted at the next tick after running a fraction of
                        // a slice (the unit test below, on a loaded machine: "B was
                        // preempted after running 1.06 ms").
                        *slice = Slice::new(now_slices, Instant::now());
                    }
                    #[cfg(all(test, not(loom)))]
                    tests::hold::after_preempt();
                    if ended {
                        continue;
                    }
                    if !slice.ended {
                        slice.ended = true;
                        shared.metrics.slices_ended.fetch_add(1, Ordering::Relaxed);
                    }
                    // A preemptible coroutine also gets the signal, at once, as Go's
                    // `preemptone` sets `gp.preempt` and signals together; sysmon looks again
                    // soon (`preempt::nudge`) in case the handler found no safe point.
                    if let Some(retry) =
                        super::preempt::nudge(&remote.preempt_signal, slice.signals)
                    {
                        slice.signals += 1;
                        due = due.min(retry);
                    }
                    if stuck_for >= REPORT_AFTER && !slice.reported {
                        slice.reported = report_if_hog(shared, index, slice, stuck_for);
                    }
                    if stuck_for >= HAND_OFF_AFTER {
                        let helps = spare_would_help(remote, slice, now);
                        stuck += usize::from(helps);
                        if release_placed(shared, remote) || work_waiting {
                            hand_off = Some(helps || hand_off == Some(true));
                        }
                    }
                }
                STATUS_BLOCKING if stuck_for >= self.delay.max(MIN_DELAY) => {
                    stuck += 1;
                    if release_placed(shared, remote) || work_waiting {
                        hand_off = Some(true);
                    }
                }
                _ => {}
            }
        }
        if let Some(spare_helps) = hand_off
            && self.may_hand_off(now)
        {
            let spares_allowed = spare_helps && active_spares(shared) < stuck;
            acted |= hand_off_work(shared, spares_allowed);
        }
        if acted {
            self.quiet = 0;
            self.delay = MIN_DELAY;
        } else {
            self.quiet += 1;
            if self.quiet > QUIET_TICKS {
                self.delay = (self.delay * 2).min(MAX_DELAY);
            }
        }
        self.sleep = self.delay.min(due).max(MIN_DELAY);
    }
}

/// Whether a spare thread should take over from `remote`, which has run one task for a whole
/// hand-off period of wall-clock time: yes if its thread verifiably holds a CPU with that
/// task (it used a whole time slice of CPU time in it: a hog) or is asleep in the kernel (a
/// blocking system call or lock) for a time slice, so that the spare does not compete with it; no while
/// neither is known — the thread may merely be waiting for a CPU, and a spare would be one
/// more thread waiting with it. That was the spiral issue 11 found: a spawning loop counted
/// as stuck, the hand-offs started all eight spares of a 2-CPU runtime, the ten threads
/// crowded each other out, every crowded worker looked stuck, and innocent coroutines were
/// reported as hogs "on worker 7".
fn spare_would_help(remote: &Remote, slice: &mut Slice, now: Instant) -> bool {
    if slice.cpu_used(remote).is_some_and(|cpu| cpu >= TIME_SLICE) {
        return true;
    }
    if remote.clock.state() != Some(ThreadState::Blocked) {
        slice.blocked_since = None;
        return false;
    }
    // Asleep at two looks a time slice apart, not once: a worker waiting a moment for a lock
    // whose holder the kernel descheduled is asleep too, and needs no spare.
    let since = *slice.blocked_since.get_or_insert(now);
    now - since >= TIME_SLICE
}

/// Sends the coroutines placed on a stuck worker and not started yet (`Remote::push_placed`)
/// to the global queue: they are bound to no thread until they start, and the worker may not
/// come back to them for a long time (a hog, a system call). Whether there were any.
fn release_placed(shared: &Shared, remote: &Remote) -> bool {
    let placed = remote.release_placed();
    let any = !placed.is_empty();
    for task in placed {
        // Shutting down: the owned list cancels it.
        let _ = shared.inject.push(task);
    }
    any
}

/// Spare workers looking for or running work now.
fn active_spares(shared: &Shared) -> usize {
    shared.workers[shared.config.workers..]
        .iter()
        // Relaxed: a count for a heuristic; `activate_spare` does the real claiming.
        .filter(|remote| remote.active.load(Ordering::Relaxed))
        .count()
}

/// Gets someone to steal work stuck behind a hogging or blocked worker: a parked worker, or,
/// if `spare` allows, a spare one. Never with one worker: `workers(1)` promises a single
/// thread (the 1:N model, with its known weakness).
fn hand_off_work(shared: &Arc<Shared>, spare: bool) -> bool {
    if shared.config.workers == 1 {
        return false;
    }
    if shared.idle.num_searching() > 0 {
        return false; // a searching worker will find it
    }
    if let Some(index) = shared.idle.worker_to_notify() {
        shared.workers[index].unparker.unpark(&shared.driver);
    } else if !spare || !shared.activate_spare() {
        return false;
    }
    shared.metrics.handoffs.fetch_add(1, Ordering::Relaxed);
    true
}

/// Marks the time slice the calling thread's task is in as panicking: sysmon does not report
/// it (printing a panic's backtrace can take longer than `REPORT_AFTER` of CPU time). Called
/// from corio's panic hook; a no-op off corio's workers.
pub(crate) fn note_panic() {
    super::context::note_stackful_panic();
    super::context::with_worker(|worker| {
        if let Some(worker) = worker {
            let remote = &worker.shared().workers[worker.index()];
            remote.panicked_in.store(remote.slices(), Ordering::Relaxed);
        }
    });
}

/// Installs, once per process, a panic hook that calls [`note_panic`] and then the hook that
/// was installed before it (the default one prints the message and backtrace). A hook the
/// program installs later replaces it; then a panicking task's slice may be reported again.
pub(crate) fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            note_panic();
            previous(info);
        }));
    });
}

/// Reports the task of worker `index` if it really held the worker's thread: for
/// `REPORT_AFTER` of the thread's CPU time (wall-clock time counts the time the kernel ran
/// other threads), or for `BLOCKED_REPORT_AFTER` with the thread asleep in the kernel (a
/// thread waiting for a CPU is not held by its task); not while it panicked, and only while it
/// is still a task (between tasks the time is the scheduler's). Whether it is done with this
/// slice.
fn report_if_hog(shared: &Shared, index: usize, slice: &Slice, stuck_for: Duration) -> bool {
    let remote = &shared.workers[index];
    if remote.panicked_in.load(Ordering::Relaxed) == slice.ticks {
        return true; // the panic hook runs, and then the task unwinds: never a hog
    }
    let Some(cpu) = slice.cpu_used(remote) else {
        return true; // no clock to tell: say nothing rather than guess
    };
    let held = if cpu >= REPORT_AFTER {
        Held::Running(cpu)
    } else if stuck_for >= BLOCKED_REPORT_AFTER
        && remote.clock.state() == Some(ThreadState::Blocked)
    {
        Held::Blocked(stuck_for)
    } else {
        return false;
    };
    if shared.config.hog_report {
        report_hog(shared, index, held);
    }
    true
}

/// How a task held its worker's thread.
enum Held {
    /// It ran for this much CPU time.
    Running(Duration),
    /// The thread has been asleep in the kernel for this long.
    Blocked(Duration),
}

/// How a worker is named to users: a spare thread's index is beyond the worker count.
fn worker_label(shared: &Shared, index: usize) -> String {
    let workers = shared.config.workers;
    if index < workers {
        format!("worker {index}")
    } else {
        format!(
            "spare worker {index} (a thread sysmon started to run work stuck behind a hog or \
             a blocking call; workers 0-{} are the runtime's own)",
            workers - 1
        )
    }
}

fn report_hog(shared: &Shared, index: usize, held: Held) {
    let remote = &shared.workers[index];
    let id = remote.current_id.load(Ordering::Relaxed);
    let mut name = None;
    let mut stackful = false;
    let mut at = None;
    // The task is alive while it is in the owned list, whose lock we hold while reading it.
    shared.owned.for_each(|h| {
        if h.id == id {
            name = h.name.clone();
            stackful = matches!(h.kind, crate::task::core::Kind::Stackful { .. });
            at = Some(h.location.to_string());
        }
    });
    let Some(at) = at else {
        return; // the task has finished: the worker is between tasks
    };
    let kind = if stackful { "coroutine" } else { "task" };
    let name = name.as_deref().unwrap_or("<unnamed>");
    let (how, hint) = match held {
        Held::Running(cpu) => (
            format!("has run for {} ms of CPU time", cpu.as_millis()),
            "",
        ),
        Held::Blocked(wall) => (
            format!("has blocked the thread for {} ms", wall.as_millis()),
            " (asleep in the kernel: a std lock held across a suspension, or a blocking call \
             that belongs in corio::blocking or spawn_blocking?)",
        ),
    };
    let report = format!(
        "corio: {kind} '{name}' (id {id}, spawned at {at}) {how} on {} without yielding{hint}; \
         work queued behind it is moved to other workers \
         (this report: Builder::hog_report(false) or CORIO_HOG_REPORT=0 turns it off)\n",
        worker_label(shared, index),
    );
    if shared.sysmon.own_table.load(Ordering::Relaxed) {
        // sysmon's own 2 is /dev/null; a process whose main thread has exited has no table
        // to fetch stderr from, and loses the report.
        let _ = fd_table::write_program_stderr(&report);
    } else {
        eprint!("{report}");
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::Poll;
    use std::time::{Duration, Instant};

    /// A test's hold on one runtime's sysmon between its decision to preempt a worker's task
    /// and its request (the store of `Remote::preempt`), as a loaded machine may hold it.
    pub(super) mod hold {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

        use crate::runtime::Shared;

        /// The runtime (its `Shared`'s address) whose sysmon is held at its next decision.
        static ARMED_FOR: AtomicUsize = AtomicUsize::new(0);
        /// Set by sysmon once it is held; cleared by `release`.
        pub(crate) static HELD: AtomicBool = AtomicBool::new(false);
        /// Set by the test to let the held sysmon go on.
        static RELEASE: AtomicBool = AtomicBool::new(false);
        /// Set by sysmon once the held decision's request is made.
        pub(crate) static DONE: AtomicBool = AtomicBool::new(false);
        /// Whether the sysmon passing `after_preempt` is the one that was held.
        static HOLDING: AtomicBool = AtomicBool::new(false);
        /// sysmon's passes over the workers (`tick`s) so far, in any runtime.
        pub(crate) static PASSES: std::sync::atomic::AtomicU64 =
            std::sync::atomic::AtomicU64::new(0);

        pub(crate) fn arm(shared: &Shared) {
            ARMED_FOR.store(std::ptr::from_ref(shared) as usize, Ordering::SeqCst);
        }

        pub(crate) fn release() {
            RELEASE.store(true, Ordering::SeqCst);
        }

        pub(crate) fn before_preempt(shared: &Shared) {
            let me = std::ptr::from_ref(shared) as usize;
            if ARMED_FOR
                .compare_exchange(me, 0, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                return;
            }
            HOLDING.store(true, Ordering::SeqCst);
            HELD.store(true, Ordering::SeqCst);
            while !RELEASE.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }

        pub(crate) fn after_preempt() {
            if HOLDING.swap(false, Ordering::SeqCst) {
                DONE.store(true, Ordering::SeqCst);
            }
        }
    }

    /// Waits (up to 30 s) until `cond`.
    fn until(what: &str, cond: impl Fn() -> bool) {
        let start = Instant::now();
        while !cond() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "timed out: {what}"
            );
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// sysmon decides to preempt task A and is held (as a loaded machine takes its CPU) while
    /// A ends and B starts, for longer than a slice; B then runs on until sysmon's next full
    /// pass before its first runtime operation. B may be preempted only for a slice of its
    /// own: not by the request for A's, nor because sysmon dated B's slice from before it was
    /// held.
    #[test]
    #[cfg_attr(miri, ignore)] // a runtime: epoll and timerfd system calls
    fn a_preempt_request_that_lands_after_its_slice_ended_does_not_preempt_the_next_task() {
        let rt = crate::Runtime::builder()
            .workers(1)
            .hog_report(false)
            .build()
            .unwrap();
        hold::arm(&rt.handle().shared);
        // However the test ends, the held sysmon goes on (else dropping the runtime hangs).
        struct Release;
        impl Drop for Release {
            fn drop(&mut self) {
                hold::release();
            }
        }
        let _release = Release;
        // Task A runs without a runtime operation until told to stop: after a time slice
        // sysmon decides to preempt it, and is held before it asks.
        let stop = Arc::new(AtomicBool::new(false));
        let a = {
            let stop = stop.clone();
            rt.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        until("sysmon decides to preempt A", || {
            hold::HELD.load(Ordering::SeqCst)
        });
        // The held pass is not counted yet: it ends as pass `held + 1`, and the next full
        // one is `held + 2`.
        let held = hold::PASSES.load(Ordering::SeqCst);
        stop.store(true, Ordering::Relaxed);
        rt.block_on(a).unwrap();
        // sysmon stays away for longer than a slice.
        std::thread::sleep(super::TIME_SLICE + Duration::from_millis(5));
        // Task B starts a slice of its own; sysmon's request for A's lands meanwhile; then B
        // makes its first runtime operation, a sleep whose deadline has passed.
        let (started, go) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let b = {
            let (started, go) = (started.clone(), go.clone());
            rt.spawn(async move {
                let began = Instant::now();
                started.store(true, Ordering::SeqCst);
                while !go.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
                // The first full pass after the held one: where a slice dated from before
                // sysmon was held looked a whole slice old.
                while hold::PASSES.load(Ordering::SeqCst) < held + 2 {
                    std::hint::spin_loop();
                }
                let mut sleep = crate::time::sleep_until_async(Instant::now());
                let ready = std::future::poll_fn(|cx| {
                    Poll::Ready(Pin::new(&mut sleep).poll(cx).is_ready())
                })
                .await;
                // A slice of B's own would explain a preemption.
                (ready, began.elapsed())
            })
        };
        until("B starts", || started.load(Ordering::SeqCst));
        hold::release();
        until("sysmon asks", || hold::DONE.load(Ordering::SeqCst));
        go.store(true, Ordering::SeqCst);
        let (ready, ran) = rt.block_on(b).unwrap();
        assert!(
            ready || ran >= Duration::from_millis(10),
            "B was preempted after running {ran:?}, by the request for A's slice"
        );
    }
}
