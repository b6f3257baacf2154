//! Blocking work: `corio::blocking` (Go's entersyscall/exitsyscall) and the blocking pool
//! (`corio::spawn_blocking`).
//!
//! `blocking(f)` runs `f` right where it is called — no thread hop, so a short call costs
//! nothing — after flushing the worker's next-task slot into its run queue and telling sysmon
//! that the worker is blocked. If `f` outlasts a sysmon tick while work waits on that worker,
//! sysmon wakes (or starts) another worker to steal it. The coroutine that called `blocking`
//! stays on its thread, as every started coroutine does.
//!
//! `spawn_blocking(f)` runs `f` on a pool of threads that grows on demand up to
//! `max_blocking_threads` (512 by default, as tokio) and shrinks after 10 s idle; it returns a
//! `JoinHandle` like any task.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::{Shared, context};
use crate::task::JoinHandle;
use crate::task::raw::Notified;

/// How long an idle pool thread waits for work before exiting (tokio's default).
const KEEP_ALIVE: Duration = Duration::from_secs(10);

pub(crate) struct BlockingPool {
    state: Mutex<PoolState>,
    condvar: Condvar,
    max_threads: usize,
    shutdown: AtomicBool,
}

/// Who may touch what: everything under `BlockingPool::state`'s lock.
struct PoolState {
    queue: VecDeque<Notified>,
    threads: usize,
    /// Threads waiting for work and not yet told of any: `push` takes one (counts it out and
    /// notifies), or the thread counts itself out when it gives up waiting (`woken`).
    idle: usize,
    /// Notifications `push` sent and no woken thread has taken yet. A thread's wait that ends
    /// by its timeout (or spuriously) just as `push` counted it out must still take the
    /// notification meant for it, not count itself out a second time: that was an underflow of
    /// `idle` (a panic in a debug build; a wrapped count in a release one, after which `push`
    /// believed a thread idle for ever and started none, so jobs queued behind busy ones).
    notified: usize,
}

/// How an idle pool thread's wait ended ([`PoolState::woken`]).
#[derive(Debug, PartialEq, Eq)]
enum Woken {
    /// Told of work, or found some: back to the queue (no longer idle).
    Work,
    /// Nothing to do and the keep-alive has passed, or the pool shuts down: the thread exits.
    Exit,
    /// Woken for nothing (a spurious wake-up): it waits again, still idle.
    Spurious,
}

impl PoolState {
    /// `push`'s side: counts out an idle thread to notify, if there is one.
    fn take_idle(&mut self) -> bool {
        if self.idle == 0 {
            return false;
        }
        self.idle -= 1;
        self.notified += 1;
        true
    }

    /// An idle thread's wait ended (`timed_out`: by its keep-alive; `shutdown`: the pool's).
    fn woken(&mut self, timed_out: bool, shutdown: bool) -> Woken {
        if self.notified > 0 {
            // `push` counted a thread out for this: whichever thread wakes takes it.
            self.notified -= 1;
            return Woken::Work;
        }
        if !self.queue.is_empty() {
            self.idle -= 1;
            return Woken::Work;
        }
        if timed_out || shutdown {
            self.idle -= 1;
            return Woken::Exit;
        }
        Woken::Spurious
    }
}

impl BlockingPool {
    pub(crate) fn new(max_threads: usize) -> BlockingPool {
        BlockingPool {
            state: Mutex::new(PoolState {
                queue: VecDeque::new(),
                threads: 0,
                idle: 0,
                notified: 0,
            }),
            condvar: Condvar::new(),
            max_threads: max_threads.max(1),
            shutdown: AtomicBool::new(false),
        }
    }

    /// Queues a blocking task, starting a thread if none is idle.
    pub(crate) fn push(&self, shared: &Arc<Shared>, task: Notified) {
        if self.shutdown.load(Ordering::Acquire) {
            drop(task); // cancelled through the owned list
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.queue.push_back(task);
        if state.take_idle() {
            drop(state);
            self.condvar.notify_one();
        } else if state.threads < self.max_threads {
            state.threads += 1;
            drop(state);
            let shared = shared.clone();
            let hooks = shared.config.hooks.clone();
            // A `thread_name_fn` that panics fails this start as a refused `clone` would.
            let spawned = hooks
                .thread_name(|| format!("{}-blocking", shared.config.thread_name))
                .and_then(|name| {
                    std::thread::Builder::new()
                        .name(name)
                        .spawn(move || hooks.run_thread(|| pool_thread(shared)))
                });
            if let Err(e) = spawned {
                self.state.lock().unwrap_or_else(|e| e.into_inner()).threads -= 1;
                eprintln!("corio: could not start a blocking-pool thread: {e}");
            }
        }
    }

    pub(crate) fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Release);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.queue.clear();
        drop(state);
        self.condvar.notify_all();
    }
}

fn pool_thread(shared: Arc<Shared>) {
    let _enter = context::enter_runtime(shared.clone());
    let pool = &shared.blocking;
    let mut state = pool.state.lock().unwrap_or_else(|e| e.into_inner());
    'serve: loop {
        if let Some(task) = state.queue.pop_front() {
            drop(state);
            let _ = task.run(); // blocking tasks never yield
            state = pool.state.lock().unwrap_or_else(|e| e.into_inner());
            continue;
        }
        if pool.shutdown.load(Ordering::Acquire) {
            break;
        }
        state.idle += 1;
        loop {
            let (next, timeout) = pool
                .condvar
                .wait_timeout(state, KEEP_ALIVE)
                .unwrap_or_else(|e| e.into_inner());
            state = next;
            match state.woken(timeout.timed_out(), pool.shutdown.load(Ordering::Acquire)) {
                Woken::Work => break,
                Woken::Spurious => {}
                Woken::Exit => break 'serve,
            }
        }
    }
    state.threads -= 1;
}

/// Runs `f`, which may block the thread (a system call, a lock, a C library), telling the
/// scheduler so.
///
/// Inside a task on a worker, work queued behind this task on the same worker is handed to
/// other workers if `f` takes longer than a sysmon tick (20 µs to 10 ms); the calling
/// coroutine itself continues on this thread when `f` returns. Elsewhere it just runs `f`.
///
/// # Pinned coroutines wait, so do not wait for them
///
/// Only *movable* work is handed off: futures, and coroutines that have not started. The
/// coroutines that have started on this worker are pinned to its thread, which `f` occupies:
/// none of them runs until `f` returns. If `f` waits for one of them (a std channel it is to
/// send on, a lock it holds, a flag it sets), that is a deadlock. For such calls use
/// [`spawn_blocking`], which runs `f` on a pool thread while the caller suspends:
///
/// ```
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let (tx, rx) = std::sync::mpsc::channel();
///     // One worker: `sender` can only run on this thread.
///     let sender = corio::go(move || tx.send(42).unwrap());
///     // `corio::blocking(|| rx.recv())` would hold the thread and wait for ever; on the
///     // pool, the caller suspends and `sender` runs:
///     let got = corio::spawn_blocking(move || rx.recv().unwrap()).join().unwrap();
///     assert_eq!(got, 42);
///     sender.join().unwrap();
/// });
/// ```
///
/// ```
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let len = rt.run(|| corio::blocking(|| std::fs::read("Cargo.toml").map(|b| b.len())).unwrap());
/// assert!(len > 0);
/// ```
pub fn blocking<R>(f: impl FnOnce() -> R) -> R {
    struct Exit;
    impl Drop for Exit {
        fn drop(&mut self) {
            context::with_worker(|w| {
                if let Some(w) = w {
                    w.exit_blocking();
                }
            });
        }
    }
    // The outermost `blocking` of a nest tells sysmon when it ends, not an inner one.
    let entered = context::with_worker(|w| w.is_some_and(|w| w.enter_blocking()));
    let result = {
        // Not `then_some(Exit)`: that makes the guard whatever `entered` says, and drops it
        // at once when it says no, which told sysmon the worker ran again in the middle of
        // the outer call.
        let _exit = if entered { Some(Exit) } else { None };
        // No budget inside: `f` owns the thread meanwhile, and a foreign executor in it may
        // poll corio futures any number of times within this one poll of the task (tokio
        // lifts its budget in `block_in_place` for the same reason).
        let _budget = context::unconstrained(); // put back when `f` returns or unwinds
        f()
    };
    // A preemption point on the way out, as Go's `exitsyscall` is: a coroutine that loops on
    // blocking calls (a file read in chunks) makes no other runtime call, and without this
    // the coroutines pinned to its worker never ran again (Go's `TestGCFairness`,
    // `sched_review_contract.rs`). Only the outermost call: an inner one is still inside the
    // outer call's hold of the thread.
    if entered {
        crate::block_on::preemption_point();
    }
    result
}

/// Runs `f` blocking-style where this is called: on the blocking pool from a coroutine (only
/// the coroutine waits; its worker runs the others), in place on a plain thread. `None`
/// inside an async task, where waiting would stall the worker: the caller panics there with
/// advice for its own call. (`corio::fs`'s blocking-style calls, `corio::net`'s name lookups.)
#[track_caller]
pub(crate) fn pool_or_here<F, T>(f: F) -> Option<Result<T, crate::JoinError>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match context::here() {
        context::Here::Stackful(_) => Some(crate::block_on(spawn_blocking(f))),
        context::Here::Stackless => None,
        context::Here::Thread => Some(Ok(f())),
    }
}

/// Runs `f` on the blocking pool of the current runtime (or the default one) and returns a
/// handle to its result.
///
/// ```
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let n = rt.block_on(async { corio::spawn_blocking(|| 6 * 7).await.unwrap() });
/// assert_eq!(n, 42);
/// ```
#[track_caller]
pub fn spawn_blocking<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    super::spawn::spawn_blocking_task(&super::current_or_default(), f)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn empty() -> PoolState {
        PoolState {
            queue: VecDeque::new(),
            threads: 1,
            idle: 0,
            notified: 0,
        }
    }

    /// An idle thread's keep-alive ends just as `push` counts it out and notifies it, and
    /// another thread, finishing its job, takes the new one first: the woken thread takes the
    /// notification meant for it (and waits again, idle once more) instead of counting itself
    /// out a second time, which underflowed `idle`.
    #[test]
    fn a_keep_alive_that_ends_as_push_notifies_takes_the_notification() {
        let mut s = empty();
        s.idle += 1; // the thread waits
        assert!(s.take_idle(), "push finds it idle");
        assert!(!s.take_idle(), "and only once");
        // The job was taken by another thread; the wait ends by its timeout.
        assert_eq!(s.woken(true, false), Woken::Work);
        assert_eq!((s.idle, s.notified), (0, 0));
        // Back at the queue it finds nothing and waits again; its keep-alive then passes.
        s.idle += 1;
        assert_eq!(s.woken(true, false), Woken::Exit);
        assert_eq!((s.idle, s.notified), (0, 0));
    }

    /// A wake-up for nothing leaves the thread idle, where `push` still finds it.
    #[test]
    fn a_spurious_wake_up_leaves_the_thread_idle() {
        let mut s = empty();
        s.idle += 1;
        assert_eq!(s.woken(false, false), Woken::Spurious);
        assert_eq!(s.idle, 1);
        assert!(s.take_idle());
        assert_eq!(s.woken(false, false), Woken::Work);
        assert_eq!((s.idle, s.notified), (0, 0));
    }

    /// At shutdown every idle thread exits, and a notification still pending is taken first.
    #[test]
    fn shutdown_lets_idle_threads_exit() {
        let mut s = empty();
        s.idle += 2;
        assert!(s.take_idle());
        assert_eq!(s.woken(false, true), Woken::Work);
        assert_eq!(s.woken(false, true), Woken::Exit);
        assert_eq!((s.idle, s.notified), (0, 0));
    }
}
