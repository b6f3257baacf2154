//! `corio::scope`: coroutines and tasks that borrow from the caller's stack, as
//! `std::thread::scope` does for threads.
//!
//! # Why it is sound
//!
//! A child's closure (or future) borrows data that lives for `'scope`; to spawn it on the
//! runtime its lifetime is erased to `'static`. That is sound only if nothing of the child —
//! its closure, its future, its result — is touched after `'scope` ends. So:
//!
//! 1. [`scope`] itself waits (std's design: there is no guard object the user could
//!    `mem::forget`). Every child holds a [`ChildGuard`] that it drops *last*, after the user's
//!    closure or future and its result are gone; the guard counts the child out.
//! 2. `scope` waits for the count to reach zero on every way out: after the user's closure
//!    returns, and, through a drop guard, while a panic (or the runtime's cancellation of the
//!    coroutine that called `scope`) unwinds through it. Should the wait itself ever unwind,
//!    the process aborts rather than let children outlive their borrows.
//! 3. The wait cannot be cut short by cancellation: inside a stackful coroutine it suspends
//!    with `StackfulCtx::suspend_uncancellable`, which records an abort (or the runtime's
//!    shutdown) instead of raising it. The cancellation is raised by the coroutine's next
//!    blocking-style call (or suspension, or spawn) after `scope` returned, before that call
//!    does anything. The children are *not* cancelled with the
//!    caller: they run to their end (abort them through their handles to stop them early). At
//!    shutdown the runtime cancels them as every task; a child that blocks through the
//!    shutdown grace period is leaked — and then so is the waiting coroutine, whose stack
//!    (and the data the child borrows) is never freed or reused.
//! 4. Where waiting is impossible — an async task's poll (it would stall the worker), a
//!    worker thread outside any task, a bare `Coroutine` nested in a task — `scope` panics
//!    *before* running the closure, so no child exists yet. An `async` form is not offered:
//!    a future can be forgotten without being dropped, and then nothing would wait.
//!
//! # Panics of children
//!
//! As in std: a child's panic is returned by its handle's `join`; a child that panicked and
//! was not joined makes `scope` panic after every child has ended. A panic of the closure
//! itself is resumed after every child has ended.

use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::runtime::context::{self, Here};
use crate::runtime::{Shared, TaskBuilder};
use crate::task::JoinError;
use crate::task::JoinHandle;
use crate::task::error::Cancelled;

/// Runs `f` with a [`Scope`] on which it can spawn coroutines ([`Scope::go`]) and tasks
/// ([`Scope::spawn`]) that borrow non-`'static` data, and returns once all of them have ended.
///
/// Inside a stackful coroutine the wait suspends only that coroutine; on a plain thread it
/// parks the thread. Children run on the current runtime (else the default one).
///
/// ```
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// rt.run(|| {
///     let mut data = vec![1, 2, 3];
///     let mut total = 0;
///     corio::scope(|s| {
///         s.go(|| println!("borrowing {data:?}"));
///         s.go(|| total = data.iter().sum::<i32>());
///     });
///     // Every child has ended: the borrows are over.
///     data.push(4);
///     assert_eq!(total, 6);
/// });
/// ```
///
/// A child cannot borrow what the closure itself mutates:
///
/// ```compile_fail
/// let mut v = vec![1];
/// corio::scope(|s| {
///     s.go(|| v.push(2));
///     v.push(3);
/// });
/// ```
///
/// nor outlive the scope through its handle:
///
/// ```compile_fail
/// let v = vec![1];
/// let handle = corio::scope(|s| s.go(|| v.len()));
/// ```
///
/// nor take what is not `Send`:
///
/// ```compile_fail,E0277
/// let rc = std::rc::Rc::new(1);
/// corio::scope(|s| {
///     s.go(|| *rc + 1);
/// });
/// ```
///
/// # Panics
///
/// With `f`'s panic, after every child has ended; with "a scoped coroutine panicked" if a child
/// panicked and was not joined. Inside an async task, on a runtime worker outside any task, or
/// inside a bare `Coroutine` that a task resumed (where `scope` could not wait): before `f`
/// runs. Use a stackful coroutine (`corio::go`) for scoped work, or `'static` tasks and a
/// [`JoinSet`](crate::JoinSet) in async code.
///
/// # Cancellation
///
/// If the coroutine that runs `scope` is aborted (or its runtime shuts down), `scope` still
/// waits for every child before the cancellation unwinds past it; the children are not
/// cancelled with it. At shutdown the runtime cancels them too; a child that keeps blocking
/// through the shutdown grace period is leaked, and then `scope` never returns (a coroutine
/// waiting in it is leaked with it; a plain thread stays parked): never returning is the
/// only sound way out while a child may still use the borrowed data.
#[track_caller]
pub fn scope<'env, F, T>(f: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    check_can_wait();
    let scope = Scope {
        state: Arc::new(ScopeState {
            running: AtomicUsize::new(0),
            waiter: Mutex::new(None),
            unjoined_panics: AtomicUsize::new(0),
        }),
        shared: crate::runtime::current_or_default(),
        _scope: PhantomData,
        _env: PhantomData,
    };
    let result = {
        // Waits for the children when dropped: after `f` returns, or while `f` unwinds.
        let _wait = WaitForChildren(&scope.state);
        f(&scope)
    };
    if scope.state.unjoined_panics.load(Ordering::Acquire) > 0 {
        panic!("a scoped coroutine panicked");
    }
    result
}

/// Panics (before anything is spawned) where `scope` could not wait.
#[track_caller]
fn check_can_wait() {
    match context::here() {
        Here::Stackless => panic!(
            "corio::scope inside an async task would stall its worker while it waits: run the \
             scope in a stackful coroutine (`corio::go`, `corio::spawn_blocking`), or spawn \
             `'static` tasks (a `corio::JoinSet`) and await them"
        ),
        Here::Stackful(ctx) if !ctx.can_suspend() => panic!(
            "corio::scope inside a bare `Coroutine` resumed by a task cannot wait for its \
             children: call it in the task's own coroutine"
        ),
        Here::Thread if context::with_worker(|w| w.is_some()) => {
            panic!("corio::scope on a runtime worker outside any task would stall the worker")
        }
        _ => {}
    }
}

/// A scope to spawn borrowing coroutines and tasks on; see [`scope`].
///
/// `'scope` is the lifetime of the scope itself (children may borrow for that long) and `'env`
/// the lifetime of what they borrow from outside it.
pub struct Scope<'scope, 'env: 'scope> {
    state: Arc<ScopeState>,
    shared: Arc<Shared>,
    /// Invariant in `'scope`, as std's: a scope cannot be shrunk to let a child borrow less
    /// than the scope outlives.
    _scope: PhantomData<&'scope mut &'scope ()>,
    /// Invariant in `'env` for the same reason.
    _env: PhantomData<&'env mut &'env ()>,
}

/// What the scope and its children share.
struct ScopeState {
    /// Children whose [`ChildGuard`] has not dropped yet.
    running: AtomicUsize,
    /// The waker of `scope`'s wait; guarded by the mutex.
    waiter: Mutex<Option<Waker>>,
    /// Children that panicked and whose handle has not returned the panic.
    unjoined_panics: AtomicUsize,
}

/// Counts a child out of the scope when dropped: the last thing a child does.
struct ChildGuard(Arc<ScopeState>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // corio's code on the child's stack, which takes the lock `scope`'s wait takes: a
        // preemptible child preempted while holding it would leave the wait, on the same
        // thread, blocked on it for ever (runtime/preempt.rs, "The rule").
        let _no_preempt = crate::runtime::preempt::guard();
        // Release: pairs with the Acquire load in `AllChildrenEnded::poll`, so that everything
        // the child did (writes into borrowed data, dropping its closure) happens before
        // `scope` returns.
        if self.0.running.fetch_sub(1, Ordering::Release) == 1 {
            let waker = self
                .0
                .waiter
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

/// Waits for every child when dropped (see the module docs, steps 2 and 3).
struct WaitForChildren<'a>(&'a Arc<ScopeState>);

impl Drop for WaitForChildren<'_> {
    fn drop(&mut self) {
        /// Aborts if the wait unwinds: children would outlive the data they borrow.
        struct AbortOnUnwind;
        impl Drop for AbortOnUnwind {
            fn drop(&mut self) {
                eprintln!("corio: scope's wait for its children unwound; aborting");
                std::process::abort();
            }
        }
        let bomb = AbortOnUnwind;
        wait_uncancellable(AllChildrenEnded(self.0));
        std::mem::forget(bomb);
    }
}

/// Runs `fut` to completion where `scope` runs, without letting a cancellation cut it short.
fn wait_uncancellable<F: Future>(fut: F) -> F::Output {
    match context::here() {
        Here::Stackful(ctx) => {
            // corio's code on a coroutine's stack, as in `block_on`: a preemptible coroutine
            // preempted inside the wait (holding its lock, or between a resume and the read of
            // the resume's signal) would break "The rule" of runtime/preempt.rs.
            let _no_preempt = ctx.no_preempt();
            let mut fut = std::pin::pin!(fut);
            loop {
                let mut cx = Context::from_waker(ctx.waker());
                if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                    return v;
                }
                ctx.suspend_uncancellable();
            }
        }
        // `check_can_wait` ruled out the places where parking would stall a worker.
        Here::Stackless | Here::Thread => crate::block_on::park_thread_on(fut),
    }
}

/// Ready once every child's guard has dropped.
struct AllChildrenEnded<'a>(&'a ScopeState);

impl Future for AllChildrenEnded<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // Acquire: pairs with the Release decrement in `ChildGuard::drop`.
        if self.0.running.load(Ordering::Acquire) == 0 {
            return Poll::Ready(());
        }
        // The clone before the lock, and the replaced waker dropped after it: both are user
        // code for another executor's waker.
        let waker = Some(cx.waker().clone());
        let replaced = std::mem::replace(
            &mut *self.0.waiter.lock().unwrap_or_else(|e| e.into_inner()),
            waker,
        );
        drop(replaced);
        // Re-check after publishing the waker: a child that ended in between took `None`.
        if self.0.running.load(Ordering::Acquire) == 0 {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

/// Where a child leaves its value for its handle.
struct Packet<T> {
    value: Mutex<Option<T>>,
    /// The child panicked (not cancelled); cleared when its handle returns the panic.
    panicked: AtomicBool,
}

/// A child's closure with its guard. Fields drop in declaration order: the user's closure and
/// the packet (which may hold the result) before the guard.
struct Child<F, T> {
    f: Option<F>,
    packet: Arc<Packet<T>>,
    guard: ChildGuard,
}

impl<F: FnOnce() -> T, T> Child<F, T> {
    fn run(mut self) {
        let f = self.f.take().expect("a scoped child runs once");
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(v) => {
                // The lock the handle's join takes, maybe on this thread: not preempted while
                // held (runtime/preempt.rs, "The rule").
                let _no_preempt = crate::runtime::preempt::guard();
                *self.packet.value.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
            }
            Err(payload) => {
                self.record_panic(&payload);
                resume_unwind(payload)
            }
        }
    }

    fn record_panic(&self, payload: &crate::task::core::Payload) {
        // The runtime's cancellation unwinds through here too: that is no panic of the child.
        if !payload.is::<Cancelled>() {
            count_panic(&self.packet, &self.guard);
        }
    }
}

/// Records that a child panicked, for its handle and for `scope`.
fn count_panic<T>(packet: &Packet<T>, guard: &ChildGuard) {
    packet.panicked.store(true, Ordering::Relaxed);
    // Release: pairs with the Acquire load at the end of `scope` (ordered before it by this
    // child's guard anyway; Release keeps the count meaningful on its own).
    guard.0.unjoined_panics.fetch_add(1, Ordering::Release);
}

/// A child future with its guard (drop order as in [`Child`]).
struct ChildFuture<'scope, T> {
    fut: Option<Pin<Box<dyn Future<Output = T> + Send + 'scope>>>,
    packet: Arc<Packet<T>>,
    guard: ChildGuard,
}

impl<T> Future for ChildFuture<'_, T> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let fut = this
            .fut
            .as_mut()
            .expect("a scoped child polled after it ended");
        match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => {
                this.fut = None;
                *this.packet.value.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
                Poll::Ready(())
            }
            Err(payload) => {
                this.fut = None;
                count_panic(&this.packet, &this.guard);
                resume_unwind(payload)
            }
        }
    }
}

impl<'scope, 'env> Scope<'scope, 'env> {
    fn new_child<T>(&'scope self) -> (Arc<Packet<T>>, ChildGuard) {
        self.state.running.fetch_add(1, Ordering::Relaxed);
        let packet = Arc::new(Packet {
            value: Mutex::new(None),
            panicked: AtomicBool::new(false),
        });
        (packet, ChildGuard(self.state.clone()))
    }

    fn handle<T>(
        &'scope self,
        task: JoinHandle<()>,
        packet: Arc<Packet<T>>,
    ) -> ScopedJoinHandle<'scope, T> {
        ScopedJoinHandle {
            task,
            packet,
            state: self.state.clone(),
            _scope: PhantomData,
        }
    }

    /// Spawns a stackful coroutine that may borrow from outside the scope.
    ///
    /// # Panics
    ///
    /// If no stack can be had; [`Scope::go_with`] returns that as an error.
    #[track_caller]
    pub fn go<F, T>(&'scope self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        match self.go_with(TaskBuilder::new(), f) {
            Ok(handle) => handle,
            Err(e) => panic!("{e}"),
        }
    }

    /// Spawns a stackful coroutine configured by `builder` (name, stack size) that may borrow
    /// from outside the scope.
    ///
    /// # Errors
    ///
    /// As [`Builder::spawn`](crate::Builder::spawn).
    #[track_caller]
    pub fn go_with<F, T>(
        &'scope self,
        builder: TaskBuilder,
        f: F,
    ) -> io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let (packet, guard) = self.new_child();
        let child = Child {
            f: Some(f),
            packet: packet.clone(),
            guard,
        };
        let run: Box<dyn FnOnce() + Send + 'scope> = Box::new(move || child.run());
        // SAFETY: only the lifetime changes. Everything the closure borrows lives for
        // `'scope`, and `scope` does not return, nor unwind past `'scope`, before the child's
        // guard has dropped — which the child does last, after the closure and its result
        // (module docs, "Why it is sound"). If the spawn fails, the closure is dropped here.
        let run: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(run) };
        let task = crate::runtime::spawn_stackful(&self.shared, run, builder)?;
        Ok(self.handle(task, packet))
    }

    /// Spawns a stackless task (a future) that may borrow from outside the scope.
    ///
    /// ```
    /// let rt = corio::Runtime::builder().workers(2).build().unwrap();
    /// let lens = rt.run(|| {
    ///     let words = vec!["a".to_string(), "bb".into(), "ccc".into()];
    ///     corio::scope(|s| {
    ///         let hs: Vec<_> = words
    ///             .iter()
    ///             .map(|w| s.spawn(async move { w.len() }))
    ///             .collect();
    ///         hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    ///     })
    /// });
    /// assert_eq!(lens, [1, 2, 3]);
    /// ```
    #[track_caller]
    pub fn spawn<F>(&'scope self, fut: F) -> ScopedJoinHandle<'scope, F::Output>
    where
        F: Future + Send + 'scope,
        F::Output: Send + 'scope,
    {
        let (packet, guard) = self.new_child();
        let child = ChildFuture {
            fut: Some(Box::pin(fut)),
            packet: packet.clone(),
            guard,
        };
        let child: Pin<Box<dyn Future<Output = ()> + Send + 'scope>> = Box::pin(child);
        // SAFETY: as in `go_with`: the future and what it borrows live for `'scope`, and the
        // guard, dropped last when the task drops the future, holds `scope` until then.
        let child: Pin<Box<dyn Future<Output = ()> + Send + 'static>> =
            unsafe { std::mem::transmute(child) };
        let task = crate::runtime::spawn_stackless(&self.shared, child, None);
        self.handle(task, packet)
    }
}

impl fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("running", &self.state.running.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A handle to a child of a [`Scope`]: wait for it and take its value.
pub struct ScopedJoinHandle<'scope, T> {
    task: JoinHandle<()>,
    packet: Arc<Packet<T>>,
    state: Arc<ScopeState>,
    /// Bound to the scope: the handle cannot leave it.
    _scope: PhantomData<&'scope ()>,
}

impl<T> ScopedJoinHandle<'_, T> {
    /// Waits for the child and returns its value, or why there is none (its panic, which
    /// `scope` then does not raise again, or its cancellation).
    ///
    /// # Panics
    ///
    /// Inside an async task, as [`JoinHandle::join`].
    #[track_caller]
    pub fn join(self) -> Result<T, JoinError> {
        crate::block_on(self)
    }

    /// Whether the child has ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Cancels the child (as [`JoinHandle::abort`]); `scope` still waits until it has ended.
    pub fn abort(&self) {
        self.task.abort();
    }

    /// The child's task id.
    pub fn id(&self) -> u64 {
        self.task.id()
    }
}

/// Awaiting the handle (in a scoped async child, say) is the async form of
/// [`join`](ScopedJoinHandle::join).
impl<T> Future for ScopedJoinHandle<'_, T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        Pin::new(&mut this.task)
            .poll(cx)
            .map(|result| match result {
                Ok(()) => Ok(this
                    .packet
                    .value
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .expect("corio: a scoped child's value was taken twice")),
                Err(e) => {
                    if this.packet.panicked.swap(false, Ordering::Relaxed) {
                        this.state.unjoined_panics.fetch_sub(1, Ordering::Relaxed);
                    }
                    Err(e)
                }
            })
    }
}

impl<T> fmt::Debug for ScopedJoinHandle<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopedJoinHandle")
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}
