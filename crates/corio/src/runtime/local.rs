//! Local tasks: coroutines and futures that are not `Send`, run only on the worker that
//! spawns them (`go_local`, `spawn_local`, `Builder::spawn_local`).
//!
//! # Mechanism
//!
//! A local task is an ordinary task whose `home` is set to the spawning worker *at spawn*,
//! before anything else can see it, instead of at its first resume. From then on it is pinned
//! like a started coroutine (`Header::pinned_home`): every wake routes it to that worker's
//! queues or inbox, steals never see it (only movable tasks enter the stealable run queue),
//! and nothing else resumes or polls it. That is what makes a `!Send` body sound: its closure
//! or future is created, run, and dropped on one thread.
//!
//! The body is wrapped in [`LocalOnly`], which claims `Send` so that it fits the task cell;
//! the claim holds because of where the body is touched:
//!
//! | event | thread |
//! |---|---|
//! | spawn (and cancel-on-spawn if the runtime is shutting down) | the home worker, the caller |
//! | every poll or resume | the home worker (`schedule` routes by home) |
//! | completion, which drops the body | the home worker |
//! | abort from elsewhere | only sets a bit and queues the task to its home's inbox |
//! | runtime shutdown | the home worker cancels it (`WorkerCtx::shut_down`); if the worker is gone, `finish_shutdown` leaks the body (forgets, never drops) |
//!
//! The output crosses to the `JoinHandle`, so it must be `Send`.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::spawn::{TaskBuilder, spawn_stackful_at, spawn_stackless_at};
use super::{Shared, context};
use crate::task::JoinHandle;

/// A `!Send` value that only its home worker's thread touches (see the module docs).
struct LocalOnly<T>(T);

// SAFETY: a `LocalOnly` lives in the cell of a local task, which is created, run, completed
// and (at shutdown) cancelled only on its home worker's thread, or leaked; the table in the
// module docs lists every access.
unsafe impl<T> Send for LocalOnly<T> {}

impl<T> LocalOnly<T> {
    fn into_inner(self) -> T {
        self.0
    }
}

impl<F: Future> Future for LocalOnly<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: the future is structurally pinned: never moved out of the wrapper.
        unsafe { self.map_unchecked_mut(|s| &mut s.0) }.poll(cx)
    }
}

/// The runtime and index of the worker this thread is.
#[track_caller]
fn this_worker(what: &str) -> (Arc<Shared>, usize) {
    match context::with_worker(|w| w.map(|w| (w.shared().clone(), w.index()))) {
        Some(found) => found,
        None => panic!(
            "corio::{what} must be called on a runtime worker (inside a coroutine or task): the \
             local task runs on the calling worker only. On a plain thread, spawn a coroutine \
             with `corio::go` (or use `Runtime::run`) and call {what} inside it"
        ),
    }
}

/// Spawns a stackful coroutine that runs on the current worker only, so `f` need not be
/// `Send` (it may hold an `Rc`, a `RefCell` shared with the caller, a thread-bound handle).
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
///
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let n = rt.run(|| {
///     let counter = Rc::new(RefCell::new(0));
///     let handles: Vec<_> = (0..3)
///         .map(|_| {
///             let c = counter.clone();
///             corio::go_local(move || {
///                 corio::yield_now();
///                 *c.borrow_mut() += 1;
///             })
///         })
///         .collect();
///     handles.into_iter().for_each(|h| h.join().unwrap());
///     let n = *counter.borrow();
///     n
/// });
/// assert_eq!(n, 3);
/// ```
///
/// # Panics
///
/// Off a runtime worker (a plain thread, `Runtime::block_on`'s thread), and if no stack can
/// be had.
#[track_caller]
pub fn go_local<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + 'static,
    T: Send + 'static,
{
    match spawn_local_stackful(f, TaskBuilder::new(), "go_local") {
        Ok(handle) => handle,
        Err(e) => panic!("{e}"),
    }
}

/// Spawns a future that is polled on the current worker only, so it need not be `Send`.
///
/// ```
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let v = rt.run(|| {
///     let shared = std::rc::Rc::new(5);
///     let s = shared.clone();
///     let task = corio::spawn_local(async move {
///         corio::yield_now_async().await;
///         *s * 2
///     });
///     task.join().unwrap() + *shared
/// });
/// assert_eq!(v, 15);
/// ```
///
/// # Panics
///
/// Off a runtime worker.
#[track_caller]
pub fn spawn_local<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: Send + 'static,
{
    let (shared, index) = this_worker("spawn_local");
    spawn_stackless_at(
        &shared,
        LocalOnly(fut),
        None,
        Some(index),
        std::panic::Location::caller(),
    )
}

#[track_caller]
fn spawn_local_stackful<F, T>(f: F, builder: TaskBuilder, what: &str) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + 'static,
    T: Send + 'static,
{
    let (shared, index) = this_worker(what);
    let f = LocalOnly(f);
    let builder = TaskBuilder {
        migratable: false,
        ..builder
    };
    spawn_stackful_at(
        &shared,
        move || (f.into_inner())(),
        builder,
        Some(index),
        std::panic::Location::caller(),
    )
}

impl TaskBuilder {
    /// Spawns a stackful coroutine on the current worker only, as [`go_local`], with this
    /// builder's name and stack size (`migratable` does not apply).
    ///
    /// # Errors
    ///
    /// As [`spawn`](TaskBuilder::spawn).
    ///
    /// # Panics
    ///
    /// Off a runtime worker.
    #[track_caller]
    pub fn spawn_local<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + 'static,
        T: Send + 'static,
    {
        spawn_local_stackful(f, self, "Builder::spawn_local")
    }

    /// Spawns a future on the current worker only, as [`spawn_local`], with this builder's
    /// name.
    ///
    /// # Panics
    ///
    /// Off a runtime worker.
    #[track_caller]
    pub fn spawn_local_async<F>(self, fut: F) -> io::Result<JoinHandle<F::Output>>
    where
        F: Future + 'static,
        F::Output: Send + 'static,
    {
        let (shared, index) = this_worker("Builder::spawn_local_async");
        Ok(spawn_stackless_at(
            &shared,
            LocalOnly(fut),
            self.name,
            Some(index),
            std::panic::Location::caller(),
        ))
    }
}
