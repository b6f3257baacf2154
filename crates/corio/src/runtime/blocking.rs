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

struct PoolState {
    queue: VecDeque<Notified>,
    threads: usize,
    idle: usize,
}

impl BlockingPool {
    pub(crate) fn new(max_threads: usize) -> BlockingPool {
        BlockingPool {
            state: Mutex::new(PoolState {
                queue: VecDeque::new(),
                threads: 0,
                idle: 0,
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
        if state.idle > 0 {
            state.idle -= 1;
            drop(state);
            self.condvar.notify_one();
        } else if state.threads < self.max_threads {
            state.threads += 1;
            drop(state);
            let shared = shared.clone();
            let name = (shared.config.hooks)
                .thread_name(|| format!("{}-blocking", shared.config.thread_name));
            let hooks = shared.config.hooks.clone();
            let spawned = std::thread::Builder::new()
                .name(name)
                .spawn(move || hooks.run_thread(|| pool_thread(shared)));
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
    loop {
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
        let (next, timeout) = pool
            .condvar
            .wait_timeout(state, KEEP_ALIVE)
            .unwrap_or_else(|e| e.into_inner());
        state = next;
        if timeout.timed_out() && state.queue.is_empty() {
            state.idle -= 1;
            break;
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
    /// Puts the task's budget back when `f` returns (or unwinds).
    struct Budget(u32);
    impl Drop for Budget {
        fn drop(&mut self) {
            context::constrain(self.0);
        }
    }
    let on_worker = context::with_worker(|w| w.map(|w| w.enter_blocking()).is_some());
    let _exit = on_worker.then_some(Exit);
    // No budget inside: `f` owns the thread meanwhile, and a foreign executor in it may poll
    // corio futures any number of times within this one poll of the task (tokio lifts its
    // budget in `block_in_place` for the same reason).
    let _budget = Budget(context::unconstrain());
    f()
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
