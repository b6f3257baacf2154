//! `block_on` and `yield_now`: the bridge between blocking-style code and futures.
//!
//! Every blocking operation in corio is a future; `block_on` is how blocking-style code waits
//! for one, and it waits the right way for where it runs:
//!
//! | where | what `block_on(fut)` does |
//! |---|---|
//! | a stackful coroutine | polls `fut` with the task's waker; on `Pending` suspends the coroutine, and polls again when the task is resumed. Only the coroutine waits. |
//! | a plain thread | polls `fut` with a waker that unparks the thread; parks between polls |
//! | an async task | panics: blocking would stall the worker and every task queued on it; `.await` instead |

use std::future::{Future, IntoFuture};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

use crate::runtime::context::{self, Here};

/// Waits for a future, blocking-style: inside a stackful coroutine it suspends only that
/// coroutine; on a plain thread it parks the thread.
///
/// This is how a coroutine calls async code without colouring its callers.
///
/// # Panics
///
/// Inside an async (stackless) task: `.await` the future there. Also on a runtime worker
/// thread outside any task (from a destructor the scheduler runs), where parking would stall
/// the worker.
///
/// ```
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let v = rt.run(|| {
///     // A plain function in a coroutine, calling async code:
///     fn fetch() -> u32 {
///         corio::block_on(async { corio::spawn(async { 21 }).await.unwrap() * 2 })
///     }
///     fetch()
/// });
/// assert_eq!(v, 42);
///
/// // On a plain thread it parks the thread:
/// assert_eq!(corio::block_on(async { 5 }), 5);
/// ```
#[track_caller]
pub fn block_on<F: IntoFuture>(fut: F) -> F::Output {
    let fut = fut.into_future();
    match context::here() {
        Here::Stackful(ctx) => block_on_stackful(ctx, fut),
        Here::Stackless => panic!(
            "corio::block_on (or a blocking-style call such as `join`, `sleep` or a channel \
             `recv`) inside an async task would stall its worker: `.await` the future (or use the \
             `_async` form) instead"
        ),
        Here::Thread => {
            if context::with_worker(|w| w.is_some()) {
                panic!(
                    "corio::block_on on a runtime worker thread outside any task would stall the worker"
                );
            }
            park_thread_on(fut)
        }
    }
}

/// `block_on` in the stackful coroutine of `ctx`, for a caller that has already asked
/// [`context::here`] (the blocking-style socket calls).
pub(crate) fn block_on_stackful<F: Future>(
    ctx: &crate::task::stackful::StackfulCtx,
    fut: F,
) -> F::Output {
    // corio's code from here on (the future's poll included) is not preempted.
    let _no_preempt = ctx.no_preempt();
    yield_if_asked(ctx);
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(ctx.waker());
    if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
        return v;
    }
    wait_stackful(ctx, fut)
}

/// The waiting half of a stackful `block_on`, once the future's first poll returned `Pending`:
/// suspends, and polls again each time the task is resumed, until the future is ready. The
/// caller holds the coroutine's no-preempt guard.
#[inline]
fn wait_stackful<F: Future>(
    ctx: &crate::task::stackful::StackfulCtx,
    mut fut: Pin<&mut F>,
) -> F::Output {
    loop {
        ctx.suspend_blocked();
        let mut cx = Context::from_waker(ctx.waker());
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// [`block_on`] for a blocking-style call whose future usually completes on its first poll (a
/// channel `send` with room or a waiting receiver, a `recv` with a value there), inlined into
/// the call (`make` builds the future): in a stackful coroutine that need not yield, one
/// thread-local read ([`context::stackful_on_budget`]), then the future is built and polled in
/// the caller's frame, without `block_on`'s generic frame, its separate `here` and
/// `should_yield` calls, or a move of the future. The semantics are `block_on`'s exactly:
///
/// - the preemption point: a coroutine whose budget is spent, or whose worker sysmon asked to
///   preempt it, takes `block_on`'s path, which yields before the poll (so a loop of sends
///   that never wait is still preempted);
/// - the poll runs under the coroutine's no-preempt guard, held until the call returns, as
///   `block_on_stackful` holds it;
/// - `Pending` suspends and re-polls on each resume, without a second first poll (a channel
///   operation that had to wait is already queued: [`wait_stackful`]);
/// - on a plain thread and in an async task it is `block_on` (parks; panics).
#[inline(always)]
#[track_caller]
pub(crate) fn block_on_ready_first<F: Future>(make: impl FnOnce() -> F) -> F::Output {
    let Some(ctx) = context::stackful_on_budget() else {
        return block_on(make());
    };
    let _no_preempt = ctx.no_preempt();
    // Made here, after the thread-local read, so that it is built in place (not moved).
    let mut fut = pin!(make());
    let mut cx = Context::from_waker(ctx.waker());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => wait_stackful(ctx, fut),
    }
}

/// A preemption point for runtime operations that need not wait (`go`, `spawn`): a stackful
/// coroutine whose budget is spent, or whose worker sysmon asked to preempt it, yields here,
/// so that a loop of such operations is preempted silently (issue 11: a
/// coroutine spawning a million coroutines was reported as a hog). Elsewhere it does nothing:
/// an async task cannot yield inside a synchronous call (its next budgeted `.await` will), a
/// plain thread has no scheduler to yield to.
///
/// The fast path is [`context::should_yield`]: the thread-local budget and, inside a task, one
/// load of the worker's preempt flag.
#[inline]
pub(crate) fn preemption_point() {
    if context::should_yield()
        && let Here::Stackful(ctx) = context::here()
    {
        yield_for_preemption(ctx);
    }
}

/// Yields the coroutine if [`context::should_yield`] says so and it can (it is not code of a
/// bare `Coroutine` that the task resumed, which cannot suspend the task). This is also where
/// a pending cancellation is raised, as at any suspension point: before the operation that
/// follows has done anything.
///
/// With a spent budget it yields as a budgeted future does (wake itself, then suspend), not
/// through `yield_now`: the task is rescheduled like any woken task, at the back of its queue.
/// When sysmon ended its time slice, it yields through `yield_now`, behind all the work it was
/// keeping waiting ([`yield_for_preemption`]).
#[inline(always)]
fn yield_if_asked(ctx: &crate::task::stackful::StackfulCtx) {
    if context::should_yield() {
        yield_for_preemption(ctx);
    }
}

/// The slow part of [`yield_if_asked`]. A coroutine whose time slice sysmon ended yields as
/// `corio::yield_now` does — a pinned one to its worker's yielded queue, behind everything
/// else runnable there — as Go's preempted goroutine goes to the global queue as one that
/// called `Gosched` does, and as the preemption signal's yield does (`preempt_yield`). It
/// used to yield as a woken task, to the back of the pinned queue, which takes every other
/// pick from the local queues whatever the run queue holds: beside 100 yielding tasks, a
/// coroutine doing long stretches of work between runtime calls had the worker for a whole
/// slice after every single turn of theirs (`tests/rt_starvation_review.rs`). A spent budget
/// (128 runtime operations) or a recorded cancellation still yields as a woken task.
#[cold]
#[inline(never)]
fn yield_for_preemption(ctx: &crate::task::stackful::StackfulCtx) {
    if !ctx.can_suspend() {
        return;
    }
    if context::preempt_requested_here() {
        ctx.yield_now();
    } else {
        ctx.yield_woken();
    }
}

/// A waker that unparks one thread.
struct ThreadWaker {
    thread: Thread,
    notified: AtomicBool,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Release: pairs with the Acquire swap in `ThreadParker::park`.
        if !self.notified.swap(true, Ordering::Release) {
            self.thread.unpark();
        }
    }
}

/// Runs `fut` to completion on this thread, parking it between polls.
pub(crate) fn park_thread_on<F: Future>(fut: F) -> F::Output {
    let parker = ThreadParker::new();
    let mut cx = Context::from_waker(&parker.waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        parker.park();
    }
}

/// What [`park_thread_on`] parks on: this thread's waker, made and waited on by functions that
/// do not depend on the future's type (compiled once, not once per future type).
struct ThreadParker {
    signal: Arc<ThreadWaker>,
    waker: Waker,
}

impl ThreadParker {
    fn new() -> ThreadParker {
        let signal = Arc::new(ThreadWaker {
            thread: std::thread::current(),
            notified: AtomicBool::new(false),
        });
        let waker = Waker::from(signal.clone());
        ThreadParker { signal, waker }
    }

    /// Parks this thread until the waker was woken (at once if it already was).
    fn park(&self) {
        // Acquire: pairs with the Release swap in `ThreadWaker::wake_by_ref`.
        while !self.signal.notified.swap(false, Ordering::Acquire) {
            std::thread::park();
        }
    }
}

/// Lets the scheduler run other coroutines and tasks before this stackful coroutine continues
/// (Go's `runtime.Gosched`). The coroutine goes to the back of its worker's queue.
///
/// # Panics
///
/// Outside a stackful coroutine: in an async task use [`yield_now_async`]`().await`; on a plain
/// thread, `std::thread::yield_now()`.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
/// use std::sync::Arc;
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let order = rt.run(|| {
///     let log = Arc::new(std::sync::Mutex::new(Vec::new()));
///     let l = log.clone();
///     let other = corio::go(move || l.lock().unwrap().push("other"));
///     corio::yield_now(); // on one worker, the other coroutine runs now
///     log.lock().unwrap().push("main");
///     other.join().unwrap();
///     let v = log.lock().unwrap().clone();
///     v
/// });
/// assert_eq!(order, ["other", "main"]);
/// ```
// Not `#[track_caller]`: the caller's location would be passed and kept on every yield (two
// instructions) for the misuse panics alone, whose messages name `corio::yield_now()`; they
// point into corio, and a backtrace shows the call.
#[inline(never)] // never into the caller's code: see below
pub fn yield_now() {
    // A pinned coroutine's yield, the common case, reads the thread's context inline (see
    // `pinned_stackful_here`); everything else takes the general path. Inlined into a caller
    // that loops, the address read here could be reused after a migratable coroutine's
    // switch in `yield_now_general`: this function's own code runs no switch but a pinned
    // coroutine's.
    match context::pinned_stackful_here() {
        Some(ctx) => ctx.yield_known(true),
        None => yield_now_general(),
    }
}

/// [`yield_now`] for all but a pinned coroutine: its own function, so that the thread-local
/// address `here` reads is never reused after a switch of a coroutine that may come back on
/// another thread.
#[inline(never)]
fn yield_now_general() {
    match context::here() {
        Here::Stackful(ctx) => ctx.yield_now(),
        Here::Stackless => {
            panic!("corio::yield_now() inside an async task: use `corio::yield_now_async().await`")
        }
        Here::Thread => panic!(
            "corio::yield_now() outside a corio coroutine: it yields a coroutine to the scheduler; \
             a plain thread can call std::thread::yield_now()"
        ),
    }
}

/// Yields an async task to the scheduler once: it goes to the back of its worker's queue.
pub fn yield_now_async() -> YieldNow {
    YieldNow { yielded: false }
}

/// The future of [`yield_now_async`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
