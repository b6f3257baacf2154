//! sysmon: the thread that watches the workers (Go's `sysmon`).
//!
//! Every tick — 20 µs, doubling after 50 quiet ticks up to 10 ms, as Go's — it looks at each
//! worker's time-slice count (`Remote::slices`). A counter that has not moved since the
//! previous tick while the worker is busy means one task (or one chain of tasks run from the
//! next-task slot, which inherit the slice) has been running all that time:
//!
//! - after a 10 ms time slice (Go's `forcePreemptNS`), the worker's preempt flag is set; the
//!   task's next runtime operation (a yield point, a channel, IO or timer call) yields;
//! - if movable work waits behind it — in that worker's run queue, or in the global queue
//!   with no worker free to take it — a parked worker is woken to steal it, or, when every
//!   worker is busy, a spare worker is started (at most four per worker);
//! - the hog is reported once on stderr (name, id, spawn location, how long), unless
//!   `Builder::hog_report(false)` or `CORIO_HOG_REPORT=0`.
//!
//! A worker inside `corio::blocking` for longer than one tick with work waiting gets the same
//! hand-off, without the report.
//!
//! If no worker polled the netpoller for [`NETPOLL_AFTER`] while they are busy, sysmon polls
//! it (Go's sysmon `netpoll`), so sockets that became ready are not starved by busy workers.
//!
//! When every worker is asleep, sysmon sleeps too, without a timeout, until a worker wakes it
//! (`wake_if_sleeping`): an idle runtime costs no wake-ups (Go's sysmon does not, #18236).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Shared;
use super::park::Event;
use super::worker::{STATUS_BLOCKING, STATUS_IDLE, STATUS_RUNNING};

/// Go's `forcePreemptNS`.
const TIME_SLICE: Duration = Duration::from_millis(10);
/// How long a task must have run before the work behind it is handed to others: two slices,
/// so that a task that merely ran one long slice (a burst of spawns, a big computation
/// between yields) does not start threads (async-std's blocking detection added threads too
/// eagerly and lost throughput under load).
const HAND_OFF_AFTER: Duration = Duration::from_millis(20);
/// How late a busy worker's timer must be before sysmon fires it instead.
const OVERDUE_NS: u64 = 200_000;
/// How long before a hog is reported.
const REPORT_AFTER: Duration = Duration::from_millis(50);
const MIN_DELAY: Duration = Duration::from_micros(20);
const MAX_DELAY: Duration = Duration::from_millis(10);
/// How long without an IO poll before sysmon polls (Go's sysmon: 10 ms).
const NETPOLL_AFTER: Duration = Duration::from_millis(10);
/// Quiet ticks before the delay starts doubling (Go: 50).
const QUIET_TICKS: u32 = 50;

pub(crate) struct Sysmon {
    event: Event,
    sleeping: AtomicBool,
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Sysmon {
    pub(crate) fn new() -> Sysmon {
        Sysmon {
            event: Event::new(),
            sleeping: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
        }
    }

    /// Wakes sysmon if it sleeps because the runtime was idle.
    #[inline]
    pub(crate) fn wake_if_sleeping(&self) {
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
    let shared_for_thread = shared.clone();
    let name = format!("{}-sysmon", shared.config.thread_name);
    let thread = std::thread::Builder::new().name(name).spawn(move || {
        let shared = shared_for_thread;
        let sysmon = &shared.sysmon;
        let mut watch = Watch::default();
        while !sysmon.stop.load(Ordering::SeqCst) {
            if is_quiet(&shared) {
                sysmon.sleeping.store(true, Ordering::SeqCst);
                // Re-check after publishing `sleeping` (pairs with `wake_if_sleeping`).
                if is_quiet(&shared) && !sysmon.stop.load(Ordering::SeqCst) {
                    sysmon.event.wait(None);
                    watch.delay = MIN_DELAY;
                }
                sysmon.sleeping.store(false, Ordering::SeqCst);
                continue;
            }
            sysmon.event.wait(Some(watch.delay));
            watch.tick(&shared);
        }
    })?;
    *shared
        .sysmon
        .thread
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Some(thread);
    Ok(())
}

fn is_quiet(shared: &Shared) -> bool {
    shared
        .workers
        .iter()
        .all(|w| w.status.load(Ordering::SeqCst) == STATUS_IDLE)
}

/// What sysmon remembers between ticks.
struct Watch {
    delay: Duration,
    quiet: u32,
    seen: Vec<Seen>,
    /// When work was last handed off: at most one hand-off per time slice, so a woken or
    /// started worker has time to take the work before another is started.
    last_hand_off: Option<Instant>,
    /// The driver's poll count when last seen moving, and when.
    polls: u64,
    polls_since: Instant,
}

#[derive(Clone, Copy)]
struct Seen {
    ticks: u64,
    since: Instant,
    handled: bool,
}

impl Default for Watch {
    fn default() -> Watch {
        Watch {
            delay: MIN_DELAY,
            quiet: 0,
            seen: Vec::new(),
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

    fn tick(&mut self, shared: &Arc<Shared>) {
        let now = Instant::now();
        if self.seen.len() != shared.workers.len() {
            self.seen = vec![
                Seen {
                    ticks: u64::MAX,
                    since: now,
                    handled: false
                };
                shared.workers.len()
            ];
        }
        let mut acted = self.poll_io_if_starved(shared, now);
        // A worker busy with one long task reads the clock only between tasks: fire its due
        // timers from here so that sleepers on it are not late by a whole task.
        let runtime_now = shared.now_ns();
        for (index, remote) in shared.workers.iter().enumerate() {
            if remote
                .next_timer
                .load(Ordering::Relaxed)
                .saturating_add(OVERDUE_NS)
                <= runtime_now
                && remote.status.load(Ordering::Acquire) != STATUS_IDLE
            {
                acted |= shared.fire_timers(index, runtime_now) > 0;
            }
        }
        for (index, remote) in shared.workers.iter().enumerate() {
            let status = remote.status.load(Ordering::Acquire);
            let ticks = remote.slices();
            let seen = &mut self.seen[index];
            if status == STATUS_IDLE || ticks != seen.ticks {
                *seen = Seen {
                    ticks,
                    since: now,
                    handled: false,
                };
                continue;
            }
            let stuck_for = now - seen.since;
            let work_waiting = remote.has_stealable_work() || !shared.inject.is_empty();
            match status {
                STATUS_RUNNING if stuck_for >= TIME_SLICE => {
                    remote.preempt.store(true, Ordering::Relaxed);
                    if super::preempt::nudge(&remote.preempt_signal, ticks) {
                        self.delay = self.delay.min(super::preempt::RETRY);
                    }
                    if stuck_for >= REPORT_AFTER && !seen.handled {
                        seen.handled = true;
                        if shared.config.hog_report {
                            report_hog(shared, index, stuck_for);
                        }
                    }
                    if stuck_for >= HAND_OFF_AFTER && work_waiting && self.may_hand_off(now) {
                        acted |= hand_off(shared);
                    }
                }
                STATUS_BLOCKING
                    if stuck_for >= self.delay.max(MIN_DELAY)
                        && work_waiting
                        && self.may_hand_off(now) =>
                {
                    acted |= hand_off(shared);
                }
                _ => {}
            }
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
    }
}

/// Gets someone to steal work stuck behind a hogging or blocked worker. Never with one
/// worker: `workers(1)` promises a single thread (the 1:N model, with its known weakness).
fn hand_off(shared: &Arc<Shared>) -> bool {
    if shared.config.workers == 1 {
        return false;
    }
    if shared.idle.num_searching() > 0 {
        return false; // a searching worker will find it
    }
    if let Some(index) = shared.idle.worker_to_notify() {
        shared.workers[index].unparker.unpark(&shared.driver);
    } else if !shared.activate_spare() {
        return false;
    }
    shared.metrics.handoffs.fetch_add(1, Ordering::Relaxed);
    true
}

fn report_hog(shared: &Shared, index: usize, stuck_for: Duration) {
    let remote = &shared.workers[index];
    let id = remote.current_id.load(Ordering::Relaxed);
    let mut name = None;
    let mut stackful = false;
    let mut at = String::from("?");
    // The task is alive while it is in the owned list, whose lock we hold while reading it.
    shared.owned.for_each(|h| {
        if h.id == id {
            name = h.name.clone();
            stackful = matches!(h.kind, crate::task::core::Kind::Stackful { .. });
            at = h.location.to_string();
        }
    });
    let kind = if stackful { "coroutine" } else { "task" };
    let name = name.as_deref().unwrap_or("<unnamed>");
    eprintln!(
        "corio: {kind} '{name}' (id {id}, spawned at {at}) has run for {} ms on worker {index} \
         without yielding; work queued behind it is moved to other workers \
         (this report: Builder::hog_report(false) or CORIO_HOG_REPORT=0 turns it off)",
        stuck_for.as_millis()
    );
}
