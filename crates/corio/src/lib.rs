//! corio: Go-style concurrency for Rust — stackful coroutines and async tasks on one GMP
//! scheduler.
//!
//! ```
//! // A stackful main coroutine on the default runtime: blocking-style code that can spawn a
//! // million cheap coroutines, and call async code without colouring its callers.
//! let sum = corio::run(|| {
//!     let handles: Vec<_> = (0..100u64).map(|i| corio::go(move || i)).collect();
//!     let async_part = corio::block_on(async { corio::spawn(async { 50 }).await.unwrap() });
//!     handles.into_iter().map(|h| h.join().unwrap()).sum::<u64>() + async_part
//! });
//! assert_eq!(sum, 4950 + 50);
//! ```
//!
//! | | stackful coroutine | stackless task |
//! |---|---|---|
//! | spawn | [`go`]`(|| ..)`, [`Builder::spawn`] | [`spawn`]`(async { .. })`, [`Builder::spawn_async`] |
//! | wait for a future | [`block_on`]`(fut)` (suspends the coroutine) | `fut.await` |
//! | yield | [`yield_now`]`()` | [`yield_now_async`]`().await` |
//! | sleep | [`sleep`]`(d)` | [`time::sleep_async`]`(d).await` |
//! | join | `handle.join()` | `handle.await` |
//! | moves between threads | only before it starts | at any `.await` |
//!
//! Both kinds share the [`JoinHandle`] type, the [`Runtime`] and its workers. `docs/` in the
//! repository explains the scheduler and the stacks with measurements.
//!
//! # Blocking the worker: std locks, `RefCell`, stdout
//!
//! A started coroutine never leaves its worker's thread, and a suspension lets *other
//! coroutines of the same thread* run. Anything the thread holds across a suspension
//! (`yield_now`, `sleep`, `join`, `block_on`, any blocking-style call) is therefore held while
//! they run:
//!
//! - A `std::sync::Mutex` guard held across a suspension deadlocks the worker for ever when
//!   another coroutine of that worker locks the same mutex: the second `lock()` blocks the OS
//!   thread, and the holder, pinned to that thread, can never resume to unlock. (sysmon's hog
//!   report then names the coroutine stuck in `lock()`.) The same goes for `RwLock`,
//!   `Condvar` waits and any lock that blocks the thread.
//! - A thread-local `RefCell` borrowed across a suspension is still borrowed when the next
//!   coroutine of the thread touches it: its `borrow_mut()` panics ("already borrowed").
//! - Re-entrant locks such as `std::io::StdoutLock` are keyed by thread, so another coroutine
//!   of the thread re-enters them silently: a `println!` in it lands in the middle of output
//!   that was meant to be written in one piece.
//!
//! ```no_run
//! // Do not do this: with one worker it never finishes.
//! use std::sync::{Arc, Mutex};
//! let rt = corio::Runtime::builder().workers(1).build().unwrap();
//! let count = Arc::new(Mutex::new(0));
//! rt.run(move || {
//!     let c = count.clone();
//!     let a = corio::go(move || {
//!         let mut n = c.lock().unwrap();
//!         corio::yield_now(); // suspends with the lock held...
//!         *n += 1;
//!     });
//!     // ...so this lock() blocks the worker's only thread, where `a` must resume.
//!     let b = corio::go(move || *count.lock().unwrap() += 1);
//!     a.join().unwrap();
//!     b.join().unwrap();
//! });
//! ```
//!
//! Release std guards and borrows before any call that may suspend (a block `{ .. }` around
//! the critical section does it), or use a lock that suspends the coroutine instead of
//! blocking the thread: corio's own `corio::sync::Mutex`, `RwLock` and `Condvar` (in the
//! `sync` module) are built for this. Keep per-coroutine state in the coroutine, not in a
//! thread-local. corio does not detect these in debug builds: a std guard is invisible to
//! it, and watching every lock would cost every user of std's locks.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! let rt = corio::Runtime::builder().workers(1).build().unwrap();
//! let count = Arc::new(Mutex::new(0));
//! let total = rt.run(move || {
//!     let handles: Vec<_> = (0..4)
//!         .map(|_| {
//!             let count = count.clone();
//!             corio::go(move || {
//!                 *count.lock().unwrap() += 1; // the guard is dropped here...
//!                 corio::yield_now(); // ...before the suspension
//!             })
//!         })
//!         .collect();
//!     handles.into_iter().for_each(|h| h.join().unwrap());
//!     *count.lock().unwrap()
//! });
//! assert_eq!(total, 4);
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

mod block_on;
pub mod chan;
pub mod fs;
// `gen` is a reserved keyword in Rust 2024, so the module is `generator` (the files keep the
// short name).
#[path = "gen/mod.rs"]
pub mod generator;
pub(crate) mod io;
mod join_set;
#[allow(dead_code)]
mod loom;
pub mod net;
pub(crate) mod runtime;
mod scope;
pub mod sync;
pub(crate) mod task;
mod task_local;
pub mod time;

use std::future::Future;
use std::sync::Arc;

pub use corio_context::coroutine;
pub use corio_context::stack;

pub use crate::block_on::{YieldNow, block_on, yield_now, yield_now_async};
pub use crate::join_set::JoinSet;
pub use crate::runtime::TaskBuilder as Builder;
pub use crate::runtime::{
    Builder as RuntimeBuilder, EnterGuard, Handle, Metrics, Runtime, TaskInfo, TaskKind, TaskState,
    blocking, spawn_blocking,
};
pub use crate::runtime::{go_local, spawn_local};
pub use crate::scope::{Scope, ScopedJoinHandle, scope};
pub use crate::task::{AbortHandle, JoinError, JoinHandle};
pub use crate::task_local::{AccessError, LocalKey, TaskLocalFuture};
pub use crate::time::sleep;

/// Spawns a stackful coroutine running `f` — blocking-style code with its own stack — on the
/// current runtime (inside a task or `Runtime::block_on`), else on the default runtime.
///
/// The coroutine may be stolen by another worker until it first runs; from then on it stays
/// on that worker's thread.
///
/// # Panics
///
/// If no stack can be had; [`Builder::spawn`] returns that as an error instead.
///
/// ```
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let v = rt.run(|| corio::go(|| 6 * 7).join().unwrap());
/// assert_eq!(v, 42);
/// ```
#[track_caller]
pub fn go<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let location = std::panic::Location::caller();
    let spawned = runtime::with_current_or_default(|shared| {
        runtime::spawn_stackful_at(shared, f, Builder::new(), None, location)
    });
    match spawned {
        Ok(handle) => handle,
        Err(e) => panic!("{e}"),
    }
}

/// Spawns a stackless task (a future) on the current runtime, else on the default runtime.
///
/// ```
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let v = rt.block_on(async { corio::spawn(async { 6 * 7 }).await.unwrap() });
/// assert_eq!(v, 42);
/// ```
#[track_caller]
pub fn spawn<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let location = std::panic::Location::caller();
    runtime::with_current_or_default(|shared| {
        runtime::spawn_stackless_at(shared, fut, None, None, location)
    })
}

/// Runs `f` as the main stackful coroutine of the default runtime and waits for it, like a Go
/// program's `main`. Workers: `CORIO_WORKERS`, else one per CPU.
///
/// # Panics
///
/// With `f`'s panic, or if called from inside a task.
#[track_caller]
pub fn run<F, T>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    runtime::default_runtime().run(f)
}

/// The task (stackful coroutine or stackless task) that is running, as seen from inside it.
#[derive(Clone, Debug)]
pub struct Task {
    id: u64,
    name: Option<Arc<str>>,
    stackful: bool,
    location: &'static std::panic::Location<'static>,
}

impl Task {
    /// Its process-unique id (the same as its `JoinHandle::id`).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Its name, if it was spawned with one ([`Builder::name`]).
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Whether it is a stackful coroutine (else a stackless task).
    pub fn is_stackful(&self) -> bool {
        self.stackful
    }

    /// Where it was spawned.
    pub fn location(&self) -> &'static std::panic::Location<'static> {
        self.location
    }
}

/// The running task.
///
/// # Panics
///
/// Outside a task; see [`try_current`].
///
/// ```
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let (stackful, async_kind) = rt.run(|| {
///     let a = corio::current().is_stackful();
///     let b = corio::block_on(corio::spawn(async { corio::current().is_stackful() })).unwrap();
///     (a, b)
/// });
/// assert!(stackful && !async_kind);
/// assert!(corio::try_current().is_none());
/// ```
#[track_caller]
pub fn current() -> Task {
    try_current().expect("corio::current() called outside a corio task")
}

/// The running task, if this code runs inside one.
pub fn try_current() -> Option<Task> {
    runtime::context::current_task(|header| {
        header.map(|h| Task {
            id: h.id,
            name: h.name.clone(),
            stackful: matches!(h.kind, task::core::Kind::Stackful { .. }),
            location: h.location,
        })
    })
}
