//! `JoinSet`: many tasks of both kinds, joined in the order they finish, aborted together.
//!
//! # Mechanism
//!
//! The set owns the `JoinHandle`s, keyed by task id, and gives each its own waker. A task
//! that finishes wakes that waker, which queues the task's id in the set's ready queue and
//! wakes whoever waits in [`JoinSet::join_next`]; the waiter polls only the queued handles. So
//! a `join_next` costs O(tasks that finished), not O(tasks), and the order is completion order
//! (FuturesUnordered's scheme, without its intrusive list: a hash map and a `VecDeque` are
//! enough at the sizes a set holds). A new task's id is queued once at spawn, so that its first
//! poll registers its waker.
//!
//! A poll looks at most at the ids queued when it began: a handle that returns `Pending`
//! because the cooperative budget ran out wakes its waker at once, and would otherwise keep
//! the poll going forever.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;

// The ready list's lock. `try_join_next` and `join_next` take it in a coroutine's own code, and
// a member's completion takes it on the worker's stack: a preemptible coroutine preempted while
// it held it would block its worker for ever, so outside loom the lock's guard also raises the
// no-preempt counter (`runtime/preempt.rs`, "The rule").
#[cfg(not(loom))]
use crate::loom::sync::Mutex;
#[cfg(loom)]
use std::sync::Mutex;
use std::task::{Context, Poll, Wake, Waker};

use crate::task::waker::RelaySlot;
use crate::task::{AbortHandle, JoinError, JoinHandle};

/// A set of tasks (stackful coroutines and async tasks) with the same output type, joined in
/// the order they finish; dropping the set aborts every task still in it. tokio's
/// `JoinSet`, for both kinds of corio task.
///
/// ```
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let outputs = rt.run(|| {
///     let mut set = corio::JoinSet::new();
///     for i in 0..4u64 {
///         set.go(move || {
///             corio::sleep(std::time::Duration::from_millis(10 * (4 - i)));
///             i
///         });
///     }
///     set.spawn(async { 100 });
///     let mut out = Vec::new();
///     while let Some(res) = set.join_next() {
///         out.push(res.unwrap()); // in the order they finish
///     }
///     out
/// });
/// let mut sorted = outputs.clone();
/// sorted.sort();
/// assert_eq!(sorted, [0, 1, 2, 3, 100]);
/// ```
pub struct JoinSet<T> {
    tasks: HashMap<u64, Entry<T>>,
    ready: Arc<Ready>,
    /// The relay to another executor's waker, kept for `poll_join_next`'s next poll.
    relay: RelaySlot,
}

struct Entry<T> {
    handle: JoinHandle<T>,
    /// Queues this task's id in `ready` when woken.
    waker: Waker,
}

/// Ids of tasks that may have finished, and the waker of the set's waiter.
#[derive(Default)]
struct Ready {
    inner: Mutex<ReadyInner>,
}

#[derive(Default)]
struct ReadyInner {
    ids: VecDeque<u64>,
    waiter: Option<Waker>,
}

impl Ready {
    fn push(&self, id: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.ids.push_back(id);
        let waiter = inner.waiter.take();
        drop(inner);
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }

    fn pop(&self) -> Option<u64> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ids
            .pop_front()
    }
}

/// The waker of one task of the set.
struct EntryWaker {
    id: u64,
    ready: Arc<Ready>,
}

impl Wake for EntryWaker {
    fn wake(self: Arc<Self>) {
        self.ready.push(self.id);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.ready.push(self.id);
    }
}

impl<T> Default for JoinSet<T> {
    fn default() -> JoinSet<T> {
        JoinSet::new()
    }
}

impl<T> JoinSet<T> {
    /// An empty set.
    pub fn new() -> JoinSet<T> {
        JoinSet {
            tasks: HashMap::new(),
            ready: Arc::default(),
            relay: RelaySlot::default(),
        }
    }

    /// Tasks in the set (finished ones count until they are joined).
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the set holds no task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Adds a task by its handle; returns a handle that can abort it.
    fn insert(&mut self, handle: JoinHandle<T>) -> AbortHandle {
        let id = handle.id();
        let abort = handle.abort_handle();
        let waker = Waker::from(Arc::new(EntryWaker {
            id,
            ready: self.ready.clone(),
        }));
        self.tasks.insert(id, Entry { handle, waker });
        self.ready.push(id);
        abort
    }

    /// Cancels every task in the set (they stay in it until joined, with a cancellation
    /// error unless they finished first).
    pub fn abort_all(&mut self) {
        for entry in self.tasks.values() {
            entry.handle.abort();
        }
    }

    /// Polls for the next finished task: `Ready(None)` if the set is empty.
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        if self.tasks.is_empty() {
            return Poll::Ready(None);
        }
        // Stored under the set's lock: a waker whose clone is user code is relayed before it.
        let waker = self.relay.lock_safe(cx.waker());
        let (queued, replaced) = {
            let mut inner = self.ready.inner.lock().unwrap_or_else(|e| e.into_inner());
            let replaced = if inner.waiter.as_ref().is_some_and(|w| w.will_wake(&waker)) {
                None
            } else {
                inner.waiter.replace(waker.into_owned())
            };
            (inner.ids.len(), replaced)
        };
        // The replaced waker is dropped after the lock: its `Drop` is user code, which may
        // wait for a member to finish, and a finishing member takes this lock (`Ready::push`)
        // to queue itself (tokio's `replace_parent_waker_drops_outside_lock`: a deadlock).
        drop(replaced);
        match self.poll_queued(queued) {
            Some(result) => Poll::Ready(Some(result)),
            None => Poll::Pending,
        }
    }

    /// Polls the handles of at most `n` queued ids; the first finished one's result.
    fn poll_queued(&mut self, n: usize) -> Option<Result<T, JoinError>> {
        for _ in 0..n {
            let id = self.ready.pop()?;
            let Some(entry) = self.tasks.get_mut(&id) else {
                continue; // joined already; a stale wake
            };
            let mut cx = Context::from_waker(&entry.waker);
            if let Poll::Ready(result) = Pin::new(&mut entry.handle).poll(&mut cx) {
                self.tasks.remove(&id);
                return Some(result);
            }
        }
        None
    }

    /// The result of a task that has finished, if one has, without waiting.
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        // Outside the coop budget: a handle polled on a spent budget says `Pending` (and
        // wakes its task to come back later), which is right for `join_next`, which waits;
        // this call does not wait, so it would say `None` with finished members left.
        let _budget = crate::runtime::context::unconstrained();
        let queued = self
            .ready
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ids
            .len();
        self.poll_queued(queued)
    }

    /// Waits for the next task to finish and returns its result; `None` when the set is
    /// empty. For async tasks.
    pub async fn join_next_async(&mut self) -> Option<Result<T, JoinError>> {
        poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// Waits for the next task to finish and returns its result; `None` when the set is
    /// empty. Blocking-style: suspends a stackful coroutine, parks a plain thread.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`join_next_async`](JoinSet::join_next_async).
    #[track_caller]
    pub fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        crate::block_on(poll_fn(|cx| self.poll_join_next(cx)))
    }

    /// Aborts every task and waits until all have ended; the set is then empty. Blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`shutdown_async`](JoinSet::shutdown_async).
    #[track_caller]
    pub fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().is_some() {}
    }

    /// Aborts every task and waits until all have ended; the set is then empty.
    pub async fn shutdown_async(&mut self) {
        self.abort_all();
        while self.join_next_async().await.is_some() {}
    }
}

impl<T: Send + 'static> JoinSet<T> {
    /// Spawns an async task into the set, on the current runtime (else the default one).
    #[track_caller]
    pub fn spawn<F>(&mut self, fut: F) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
    {
        self.insert(crate::spawn(fut))
    }

    /// Spawns a stackful coroutine into the set, on the current runtime (else the default
    /// one).
    ///
    /// # Panics
    ///
    /// If no stack can be had (as [`corio::go`](crate::go)).
    #[track_caller]
    pub fn go<F>(&mut self, f: F) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
    {
        self.insert(crate::go(f))
    }

    /// Spawns an async task into the set on the runtime of `handle`.
    #[track_caller]
    pub fn spawn_on<F>(&mut self, fut: F, handle: &crate::Handle) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
    {
        self.insert(handle.spawn(fut))
    }

    /// Spawns a stackful coroutine into the set on the runtime of `handle`.
    #[track_caller]
    pub fn go_on<F>(&mut self, f: F, handle: &crate::Handle) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
    {
        self.insert(handle.go(f))
    }
}

impl<T: Send + 'static> JoinSet<T> {
    /// Spawns a `!Send` future into the set, on the current worker only (as
    /// [`corio::spawn_local`](crate::spawn_local)).
    ///
    /// # Panics
    ///
    /// Off a runtime worker.
    #[track_caller]
    pub fn spawn_local<F>(&mut self, fut: F) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        self.insert(crate::spawn_local(fut))
    }

    /// Spawns a `!Send` stackful coroutine into the set, on the current worker only (as
    /// [`corio::go_local`](crate::go_local)).
    ///
    /// # Panics
    ///
    /// Off a runtime worker, or if no stack can be had.
    #[track_caller]
    pub fn go_local<F>(&mut self, f: F) -> AbortHandle
    where
        F: FnOnce() -> T + 'static,
    {
        self.insert(crate::go_local(f))
    }
}

impl<T> Drop for JoinSet<T> {
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet")
            .field("len", &self.tasks.len())
            .finish()
    }
}
