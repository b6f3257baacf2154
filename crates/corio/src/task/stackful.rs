//! A stackful task's body: a coroutine whose "poll" resumes its stack.
//!
//! # How a coroutine blocks on a future
//!
//! 1. The worker polls the task; `poll_body` records this coroutine's context in the thread's
//!    context (`runtime::context`), then resumes the coroutine.
//! 2. A blocking-style call inside it (`corio::block_on(fut)`, and through it every channel, IO
//!    and timer call) polls `fut` with the task's waker, which the coroutine's context keeps in
//!    the task's memory (see "Wakers" below). `Ready`: it returns at once, no switch.
//!    `Pending`: it suspends the coroutine ([`StackfulCtx::suspend`]); the resume returns and
//!    the poll returns `Pending`.
//! 3. The future's waker wakes the task. The state word guarantees the task is requeued only
//!    after the poll (and so the switch off the coroutine's stack) has ended — a wake during
//!    the poll sets NOTIFIED and the worker requeues it when the poll returns. This is the
//!    "publish after the switch" rule (Go's `mcall(park_m)`), made by the task state machine.
//! 4. The next poll resumes the coroutine inside its `block_on`, which polls `fut` again.
//!
//! # Wakers
//!
//! The `Context` that `block_on` polls with must stay valid for as long as the poll runs, and
//! a poll may itself make a blocking-style call (`corio::yield_now()` or `sleep` inside an
//! `async` block, or a hand-written `poll` that sleeps): the coroutine then suspends *inside*
//! the poll, the worker's frame that resumed it returns, and a later resume comes from another
//! frame. So the waker must not live in the worker's frame (the first version pointed to the
//! worker's `waker_ref` and segfaulted in debug builds, issue 7). The task's waker is the
//! header's address and a static vtable; [`StackfulCtx`] keeps one in the task's `Live` block
//! (see [`Stackful`]), where it lives as long as the coroutine, and `block_on` borrows that.
//!
//! # Pinning
//!
//! The first resume stores the worker's index in the task's `home`; from then on the
//! scheduler routes the task to that worker only (see `Header::pinned_home`), because the
//! coroutine's stack may hold thread-bound state (see `corio_context::coroutine`). Before its
//! first resume the stack holds only the closure, which `spawn` requires to be `Send`, so an
//! unstarted coroutine may be stolen by any worker.
//!
//! # Cancellation
//!
//! An aborted coroutine is resumed with [`Signal::Cancel`]: its pending suspension raises a
//! panic with the runtime's private `Cancelled` payload, which unwinds the stack, running
//! destructors — which may block and suspend again; the task then waits to be woken as usual.
//! While it unwinds, further suspensions do not raise again. Whether it still unwinds is a flag
//! the payload carries and clears when dropped, not `std::thread::panicking()`, which is per
//! thread and so also true while *another* coroutine of the thread is suspended mid-unwind.
//! If user code catches the payload and carries on, its next suspension raises it again,
//! before suspending (so a coroutine that then waits for something that never comes is still
//! cancelled).
//!
//! A coroutine suspended in the middle of an unwind leaves the thread's panic count raised
//! until it finishes unwinding: meanwhile `std::thread::panicking()` is true in every coroutine
//! of that thread (a `MutexGuard` taken before and dropped during that time poisons its mutex).
//! Rust keeps that count per thread and gives no way to switch it with the stack.

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};

use corio_context::coroutine::{Coroutine, CoroutineResult, Detached, RawCoroutine, Yielder};

use crate::io::registry::{Direction, ScheduledIo};
use crate::io::slot::Ticket;
use crate::runtime::preempt::{self, NoPreempt, PreemptState};

use super::alloc::PoolBox;
use super::core::{Body, Header, Payload, TaskRef};
use super::error::Cancelled;
use super::waker::unowned_waker;
use crate::runtime::context;

/// What a resume tells the coroutine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Signal {
    Run,
    Cancel,
}

/// A direct switch's end, recorded by the poll frame it reached: the task that switched back
/// and its switch, for that task's `claim_switched` (see `Body::take_switched`).
pub(crate) struct Switched {
    pub(crate) task: NonNull<Header>,
    pub(crate) back: Detached,
}

/// Where a coroutine suspended in [`StackfulCtx::suspend_blocked_on_io`] left its waker: the
/// socket direction and the entry its ticket names (`io/slot.rs`).
#[derive(Clone, Copy)]
struct IoWait {
    io: NonNull<ScheduledIo>,
    dir: Direction,
    ticket: Ticket,
}

/// What blocking-style calls inside a coroutine need: how to suspend and which waker to
/// register. Lives in the task's [`Live`] block, so its address is stable while the coroutine
/// lives.
pub(crate) struct StackfulCtx {
    /// The coroutine's switch state (in the same cell), for a direct switch to or from it.
    raw: Cell<*mut RawCoroutine>,
    /// Set by a poll frame of this task that a direct switch's last coroutine, another task,
    /// switched back to; taken at once by `poll_running` (see `Body::take_switched`).
    switched: Cell<Option<Switched>>,
    /// The coroutine's yielder (on its own stack), published by the coroutine when it starts.
    yielder: Cell<*const Yielder<Signal, ()>>,
    /// The task's waker, unowned (see "Wakers" in the module docs): it lives in the task's
    /// cell, as long as the coroutine, so a `Context` built from it survives suspensions.
    waker: ManuallyDrop<Waker>,
    /// Set by `yield_now` before it suspends.
    yielded: Cell<bool>,
    /// Set once a resume has delivered `Signal::Cancel`.
    cancel_requested: Cell<bool>,
    /// Set by corio's panic hook when a panic starts in this coroutine (`note_panic`): while
    /// the thread is panicking, this coroutine may be unwinding from its own panic, and a
    /// cancellation raised in one of the destructors that unwind runs would abort the process
    /// (see [`raise_if_not_unwinding`](Self::raise_if_not_unwinding)).
    panicked: Cell<bool>,
    /// While suspended in [`suspend_blocked_on_io`](Self::suspend_blocked_on_io): the socket
    /// direction whose waiter slot or list holds this coroutine's waker, and where.
    io_wait: Cell<Option<IoWait>>,
    /// While the cancellation raised by this coroutine unwinds its stack: true (see the
    /// module docs, "Cancellation").
    unwinding: std::cell::RefCell<Option<Arc<AtomicBool>>>,
    /// Whether the coroutine is pinned to its worker (not `migratable`).
    pinned: bool,
    /// The coroutine's open task-local scopes (`task_local.rs`).
    locals: crate::task_local::ScopeStack,
    /// For a preemptible coroutine: what the preemption signal's handler checks
    /// (`runtime/preempt.rs`).
    preempt: Option<PreemptState>,
}

// SAFETY: the cells are touched only by the thread that resumes the coroutine, during the
// resume (the home worker, or for the first resume the worker that starts it).
unsafe impl Send for StackfulCtx {}

impl StackfulCtx {
    /// The running task's waker; valid as long as the coroutine (see "Wakers" in the module
    /// docs).
    #[inline]
    pub(crate) fn waker(&self) -> &Waker {
        &self.waker
    }

    /// The coroutine's own stack of open task-local scopes.
    #[inline]
    pub(crate) fn task_locals(&self) -> &crate::task_local::ScopeStack {
        &self.locals
    }

    /// Suspends the coroutine until its task is polled again.
    ///
    /// # Panics
    ///
    /// Raises the cancellation payload if the task was aborted (see the module docs), and
    /// panics if called from the stack of another coroutine that this one resumed.
    /// Yields to the scheduler (`corio::yield_now`): the coroutine runs again after the other
    /// runnable tasks of its worker.
    #[inline(always)] // into `corio::yield_now`, which has read the thread's context already
    pub(crate) fn yield_now(&self) {
        self.yield_known(self.pinned);
    }

    /// [`yield_now`](Self::yield_now) for a caller that has read whether the coroutine is
    /// pinned already (`pinned` is `self.pinned`): a second read would not be folded into the
    /// first across the stack check's branches.
    #[inline(always)]
    pub(crate) fn yield_known(&self, pinned: bool) {
        // The yield's code twice, for a preemptible coroutine and for one that is not: the
        // guard's end and the direct switch then know it without testing `preempt` again
        // (after the switch, which the compiler assumes may have changed it).
        if self.preempt.is_some() {
            self.yield_as::<true>(pinned);
        } else {
            self.yield_as::<false>(pinned);
        }
    }

    /// [`yield_known`](Self::yield_known) for a coroutine that is preemptible (`PREEMPTIBLE`,
    /// which must be `self.is_preemptible()`) or not.
    #[inline(always)]
    fn yield_as<const PREEMPTIBLE: bool>(&self, pinned: bool) {
        debug_assert_eq!(pinned, self.pinned);
        debug_assert_eq!(PREEMPTIBLE, self.is_preemptible());
        // Lowered through `self`, which the switch keeps anyway: a `NoPreempt` guard would be
        // one more value kept (spilled and reloaded) across it.
        let _no_preempt = self.no_preempt_here::<PREEMPTIBLE>();
        // Refuse a nested coroutine before leaving any trace of the yield (a set flag or a
        // wake would resume the task spuriously at its next real suspension).
        let yielder = self.check_own_stack();
        // A cancellation recorded by an uncancellable suspension (`corio::scope`'s wait, a
        // preemption) is raised here, before the yield leaves a trace: `suspend_on` would raise
        // it too, but after the flag below was set (or the task woken), and the task's next
        // real suspension — a destructor that blocks while the coroutine unwinds — would then
        // be resumed once spuriously. While the cancellation unwinds, this does nothing and a
        // destructor's yield is an ordinary one.
        if self.cancel_requested.get() {
            self.raise_if_not_unwinding();
        }
        if pinned {
            if let Some(to) = self.direct_yield_target(PREEMPTIBLE) {
                // SAFETY: the worker has done the bookkeeping of ending our turn and starting
                // `to`'s (see `WorkerCtx::direct_yield`): `to` is a suspended coroutine of
                // this thread taking a `Signal`, we run on our own stack (checked above) and
                // were resumed by a task poll's `resume_detached` or by such a transfer.
                let signal = unsafe { yielder.transfer(self.raw.get(), to, Signal::Run) };
                if signal == Signal::Cancel {
                    self.cancel_requested.set(true);
                    self.raise_if_not_unwinding();
                }
                return;
            }
            // Requeued by the worker as still running: no waker, no state transitions.
            self.yielded.set(true);
        } else {
            self.waker().wake_by_ref();
        }
        self.suspend_on(yielder);
    }

    /// Asks this thread's worker for a direct switch to the coroutine it would run next (see
    /// `WorkerCtx::direct_yield`); `None` when the loop must decide instead. Never for a
    /// coroutine that is being cancelled: its poll frame expects it back.
    /// `preemptible` is `self.is_preemptible()`.
    #[inline(always)] // as `yield_now`
    fn direct_yield_target(&self, preemptible: bool) -> Option<*mut RawCoroutine> {
        if self.cancel_requested.get() {
            return None;
        }
        // SAFETY: this thread's worker, if it is one, outlives its tasks' runs.
        unsafe { context::worker_here().as_ref() }?.direct_yield(self, preemptible)
    }

    /// Whether the coroutine is pinned to its worker (never changes thread).
    #[inline]
    pub(crate) fn is_pinned(&self) -> bool {
        self.pinned
    }

    /// Whether signal preemption may suspend this coroutine.
    #[inline]
    pub(crate) fn is_preemptible(&self) -> bool {
        self.preempt.is_some()
    }

    /// The task this is the context of.
    #[inline]
    pub(crate) fn header_ptr(&self) -> NonNull<Header> {
        // The task's own waker's data is its header (see `unowned_waker`).
        // SAFETY: a waker's data pointer is never null; this one is the task's header.
        unsafe { NonNull::new_unchecked(self.waker.data().cast::<Header>().cast_mut()) }
    }

    /// Makes this coroutine, whose task is `task`, the running task of this thread, as its
    /// poll's guards do, for a direct switch to it by `worker` (the index of this thread's
    /// worker; the guards of the poll frame it will switch back to restore the thread's
    /// values). Returns its switch state. `preemptible` is `self.is_preemptible()`, which the
    /// caller has compared and passes as it knows it (a constant on the yield's path): when
    /// it is false, `preempt` is not tested again.
    #[inline(always)] // into the yield, like `WorkerCtx::direct_yield`
    pub(crate) fn enter_direct(
        &self,
        task: TaskRef<'_>,
        worker: usize,
        preemptible: bool,
    ) -> *mut RawCoroutine {
        debug_assert_eq!(preemptible, self.is_preemptible());
        // The caller's pointer to the task, which it read from the queue: reading it again
        // from the waker would cost a load.
        debug_assert_eq!(self.header_ptr(), task.ptr());
        let header = task.header();
        // The home check of every resume, against the index of the worker that runs this (a
        // direct switch reaches only pinned coroutines; their home was stored by this thread).
        debug_assert!(self.pinned);
        let home = header.home.load(Ordering::Relaxed) as usize;
        if home != worker {
            check_home(header.id, home, Some(worker));
        }
        context::switch_task(task, self);
        if preemptible && let Some(state) = &self.preempt {
            // The guard's drop is the poll frame's own (it clears the same two fields).
            std::mem::forget(preempt::enter_resume(state));
        }
        self.raw.get()
    }

    /// Keeps a preemptible coroutine from being preempted while the guard lives: for corio's
    /// code that runs on its stack (see "The rule" in `runtime/preempt.rs`).
    #[inline]
    pub(crate) fn no_preempt(&self) -> NoPreempt {
        match &self.preempt {
            Some(state) => state.no_preempt(),
            None => NoPreempt::NONE,
        }
    }

    /// [`no_preempt`](Self::no_preempt) for a frame that keeps `self` across its switch
    /// anyway: the guard finds the counter through the context when it drops. `PREEMPTIBLE`
    /// is `self.is_preemptible()`: when it is false, neither end tests `preempt`.
    #[inline(always)]
    fn no_preempt_here<const PREEMPTIBLE: bool>(&self) -> NoPreemptHere<'_, PREEMPTIBLE> {
        debug_assert_eq!(PREEMPTIBLE, self.is_preemptible());
        if let (true, Some(state)) = (PREEMPTIBLE, &self.preempt) {
            state.enter();
        }
        NoPreemptHere(self)
    }

    /// Yields for the preemption trampoline (`runtime/preempt.rs`): as `yield_now`, but never
    /// raises the cancellation (nothing may unwind through the trampoline); a cancel that
    /// arrives is recorded and raised by the coroutine's next ordinary suspension.
    pub(crate) fn preempt_yield(&self) {
        if !self.can_suspend() {
            return;
        }
        if self.pinned {
            self.yielded.set(true);
        } else {
            self.waker().wake_by_ref();
        }
        self.suspend_uncancellable();
    }

    /// Suspends the coroutine in `block_on`, after its future returned `Pending`: as
    /// [`suspend`](Self::suspend), but a pinned coroutine switches straight to the coroutine
    /// its worker would run next when that is the one it woke into the next-task slot (see
    /// `WorkerCtx::direct_block`), ending its own poll first.
    ///
    /// # Panics
    ///
    /// As [`suspend`](Self::suspend).
    #[inline]
    pub(crate) fn suspend_blocked(&self) {
        let yielder = self.check_own_stack();
        if self.pinned
            && !self.cancel_requested.get()
            && let Some(to) = self.direct_block_target()
        {
            // SAFETY: the worker has ended our poll and started `to`'s (see
            // `WorkerCtx::direct_block`): `to` is a suspended coroutine of this thread taking
            // a `Signal`, we run on our own stack (checked above) and were resumed by a task
            // poll's `resume_detached` or by such a transfer.
            let signal = unsafe { yielder.transfer(self.raw.get(), to, Signal::Run) };
            if signal == Signal::Cancel {
                self.cancel_requested.set(true);
                self.raise_if_not_unwinding();
            }
            return;
        }
        self.suspend_on(yielder);
    }

    /// [`suspend_blocked`](Self::suspend_blocked) with this coroutine's waker left in `io`'s
    /// `dir` slot or list (`Source::wait_stackful`): a cancellation raised from this
    /// suspension (an abort, the runtime's shutdown) first takes the waker back
    /// (`ScheduledIo::withdraw`), which the socket would otherwise hold, with the task, until
    /// its next edge. Two stores on the wait path, rather than a drop guard in the caller,
    /// whose unwind cleanup cost ~50 instructions per echo message (`docs/net-bench.md`).
    #[inline]
    pub(crate) fn suspend_blocked_on_io(
        &self,
        io: &ScheduledIo,
        dir: Direction,
        ticket: Option<Ticket>,
    ) {
        self.io_wait.set(ticket.map(|ticket| IoWait {
            io: NonNull::from(io),
            dir,
            ticket,
        }));
        self.suspend_blocked();
        self.io_wait.set(None);
    }

    /// Asks this thread's worker for a direct hand-off to the coroutine in its next-task slot
    /// (`WorkerCtx::direct_block`); `None` when the loop must decide instead.
    #[inline]
    fn direct_block_target(&self) -> Option<*mut RawCoroutine> {
        // SAFETY: this thread's worker, if it is one, outlives its tasks' runs.
        unsafe { context::worker_here().as_ref() }?.direct_block(self)
    }

    #[inline]
    pub(crate) fn suspend(&self) {
        self.suspend_on(self.check_own_stack());
    }

    /// [`suspend`](Self::suspend) with the yielder `check_own_stack` returned.
    #[inline]
    fn suspend_on(&self, yielder: &Yielder<Signal, ()>) {
        if self.cancel_requested.get() {
            self.raise_if_not_unwinding();
        }
        if yielder.suspend(()) == Signal::Cancel {
            self.cancel_requested.set(true);
            self.raise_if_not_unwinding();
        }
    }

    /// Whether this code runs on the coroutine's own stack (not inside a bare `Coroutine` that
    /// the task resumed), so that it can suspend the task.
    #[inline]
    pub(crate) fn can_suspend(&self) -> bool {
        // SAFETY: as in `check_own_stack`.
        unsafe { &*self.yielder.get() }.is_on_own_stack()
    }

    /// Whether this code runs on the coroutine's own stack rather than on that of a bare
    /// `Coroutine` it resumed (true before the coroutine has published its yielder: only the
    /// coroutine's own first frame runs then).
    #[inline]
    pub(crate) fn runs_on_own_stack(&self) -> bool {
        // SAFETY: as in `check_own_stack`; null until the coroutine's first frame sets it.
        unsafe { self.yielder.get().as_ref() }.is_none_or(Yielder::is_on_own_stack)
    }

    /// Suspends like [`suspend`](Self::suspend) but never raises the cancellation: a cancel
    /// that arrives is recorded, and the coroutine's next ordinary suspension raises it. For
    /// waits that must not be cut short (`corio::scope` waiting for its children, whose
    /// borrows would otherwise outlive the data they borrow).
    ///
    /// While a cancellation is recorded, the resumed coroutine's budget is spent, so that the
    /// next blocking-style call (or spawn) takes its slow path, [`yield_woken`](Self::yield_woken),
    /// which raises the cancellation *before* polling anything. Raised only by a suspension
    /// after the poll, it would leave behind what the poll did: a future that wakes its task
    /// and returns `Pending` (an async yield) left the task notified, and a destructor that
    /// blocked while the coroutine unwound was resumed once before its waker fired.
    pub(crate) fn suspend_uncancellable(&self) {
        if self.check_own_stack().suspend(()) == Signal::Cancel {
            self.cancel_requested.set(true);
        }
        if self.cancel_requested.get() {
            context::spend_budget();
        }
    }

    /// Yields as a woken task (wakes itself, then suspends): for a spent budget or a
    /// preemption request (`block_on::yield_for_preemption`). A recorded cancellation is raised
    /// first, before the wake leaves a trace (see [`suspend_uncancellable`](Self::suspend_uncancellable)).
    ///
    /// # Panics
    ///
    /// As [`suspend`](Self::suspend).
    pub(crate) fn yield_woken(&self) {
        // Raised only from the coroutine's own stack: `suspend` refuses a nested one.
        if self.cancel_requested.get() && self.can_suspend() {
            self.raise_if_not_unwinding();
        }
        self.waker().wake_by_ref();
        self.suspend();
    }

    /// The coroutine's yielder, after checking that the caller runs on the coroutine's own
    /// stack and not on that of a bare `Coroutine` it resumed.
    #[inline]
    fn check_own_stack(&self) -> &Yielder<Signal, ()> {
        // SAFETY: the yielder lives on the coroutine's stack, which is alive and on this
        // thread while its code runs (and only its code reaches this context).
        let yielder = unsafe { &*self.yielder.get() };
        if !yielder.is_on_own_stack() {
            self.refuse_nested();
        }
        yielder
    }

    /// `check_own_stack`'s refusal: a blocking call inside a bare `Coroutine` that the task
    /// resumed. A refused `suspend_blocked_on_io` first takes back the waker its caller left
    /// with the socket, and its record of that socket (`io_wait`), which the panic would
    /// otherwise leave behind: the task may catch it and go on, the socket go (and its
    /// runtime, with the registry whose memory held the `ScheduledIo`), and a later
    /// cancellation withdraw from that memory (`tests/rt_review_stale_io_wait.rs`).
    #[cold]
    #[inline(never)]
    fn refuse_nested(&self) -> ! {
        if let Some(IoWait { io, dir, ticket }) = self.io_wait.take() {
            // SAFETY: set only during `suspend_blocked_on_io`, whose caller holds the socket,
            // and with it the registration that owns `io`, across the call we are in.
            unsafe { io.as_ref() }.withdraw(dir, ticket);
        }
        nested_misuse()
    }

    /// Notes that a panic starts in this coroutine (corio's panic hook, on its stack).
    #[cold]
    pub(crate) fn note_panic(&self) {
        self.panicked.set(true);
    }

    /// Raises the cancellation unless this coroutine is already unwinding: from it, or from a
    /// panic of its own.
    #[cold]
    fn raise_if_not_unwinding(&self) {
        // Unwinding from our own cancellation: the payload is alive (not dropped by a catch) and
        // the thread is panicking. Either alone is not enough: the payload may be held by code
        // that caught it, and the thread may be panicking for another coroutine.
        //
        // Or unwinding from a panic of its own (`panicked`, set by corio's panic hook, and the
        // thread panicking): a cancellation raised here would leave a destructor that the
        // unwind runs, which Rust answers by aborting the process. The cancellation waits, as
        // it does while its own unwind runs: the destructor's wait goes on, and the task ends
        // with its panic (`tests/rt_review_unwind.rs`). A coroutine that caught its panic and
        // went on, while another coroutine of this thread is suspended in an unwind, defers a
        // cancellation too, until that one's unwind ends: the thread's panic count is the
        // thread's, not the coroutine's.
        let unwinding = (self.panicked.get()
            || self
                .unwinding
                .borrow()
                .as_ref()
                .is_some_and(|f| f.load(Ordering::Relaxed)))
            && std::thread::panicking();
        if !unwinding {
            if let Some(IoWait { io, dir, ticket }) = self.io_wait.take() {
                // SAFETY: set only during `suspend_blocked_on_io`, whose caller holds the socket,
                // and with it the registration that owns `io`, across the call we are in.
                let io = unsafe { io.as_ref() };
                io.withdraw(dir, ticket);
            }
            let flag = Arc::new(AtomicBool::new(true));
            *self.unwinding.borrow_mut() = Some(flag.clone());
            resume_unwind(Box::new(Cancelled {
                unwinding: Some(flag),
            }));
        }
    }
}

/// The guard of [`StackfulCtx::no_preempt_here`]: lowers the coroutine's no-preempt counter,
/// if it is preemptible (`PREEMPTIBLE`, which is its `is_preemptible()`), when it drops.
struct NoPreemptHere<'a, const PREEMPTIBLE: bool>(&'a StackfulCtx);

impl<const PREEMPTIBLE: bool> Drop for NoPreemptHere<'_, PREEMPTIBLE> {
    #[inline(always)]
    fn drop(&mut self) {
        if PREEMPTIBLE && let Some(state) = &self.0.preempt {
            // The counter `no_preempt_here` raised on this coroutine (its `NoPreempt` guard,
            // forgotten, would lower the same one).
            drop(state.adopt());
        }
    }
}

/// Aborts the process unless the calling thread is the home worker of `header`'s task, when
/// that task is a started coroutine pinned to its worker (not `migratable`). Every resume of a
/// started coroutine checks this, in release builds too; so must any other path that runs a
/// started coroutine's code, such as its cancellation at shutdown.
///
/// A started coroutine's stack may hold thread-bound state (see "Pinning" in the module docs):
/// resuming it on another thread is memory-unsafe, so this never continues, nor panics (a panic
/// could be caught, and unwinding would run the coroutine's destructors on the wrong thread).
/// The cost is a thread-local load and two compares, inlined: call it on the stack of the
/// thread that polls or cancels the task (a worker's, or the one dropping the runtime), never
/// from a coroutine's code.
#[inline]
pub(crate) fn assert_on_home_thread(header: &Header) {
    if let Some(home) = header.pinned_home() {
        check_home(
            header.id,
            home,
            context::worker_index_in(&header.scheduler.shared),
        );
    }
}

/// The compare of [`assert_on_home_thread`]: `here` is this thread's worker index in the task's
/// runtime, if it is one of its workers.
#[inline]
fn check_home(id: u64, home: usize, here: Option<usize>) {
    if here != Some(home) {
        off_home_thread(id, home, here);
    }
}

#[cold]
#[inline(never)]
fn off_home_thread(id: u64, home: usize, here: Option<usize>) -> ! {
    let here = match here {
        Some(index) => format!("worker {index}"),
        None => "a thread that is not one of its runtime's workers".to_string(),
    };
    eprintln!(
        "fatal runtime error: corio: a started coroutine (task {id}) was about to run off its \
         home thread (its home is worker {home}, this is {here}); its stack may hold \
         thread-bound state, so continuing would be memory-unsafe; aborting"
    );
    std::process::abort()
}

/// Gives up a started coroutine without unwinding it: its stack is never reused and the
/// destructors on it never run. For `panic = "abort"`, where unwinding aborts the process.
#[cold]
fn leak_without_unwinding<F, T>(header: &Header, body: Stackful<F, T>) {
    eprintln!(
        "corio: coroutine {} ({}, spawned at {}) cancelled under panic=abort: its stack \
         cannot unwind, so it is leaked and its destructors do not run",
        header.id,
        header.name.as_deref().unwrap_or("<unnamed>"),
        header.location
    );
    // Its frames never end: its worker's thread must keep its thread-locals.
    header.scheduler.shared.note_leaked_task(header);
    std::mem::forget(body);
}

#[cold]
fn nested_misuse() -> ! {
    panic!(
        "corio: a blocking call was made inside a bare `Coroutine` that a task resumed; only \
         the task's own coroutine can block on the scheduler. Suspend the nested coroutine \
         with its `Yielder` and block in the task instead."
    );
}

/// The coroutine, `Send` because it is resumed only on its home worker once started.
pub(crate) struct PinnedCoroutine<T>(Coroutine<Signal, (), Result<T, Payload>>);

// SAFETY: the scheduler resumes and drops a started coroutine only on its home worker (checked
// in release builds too, by `assert_on_home_thread` in `resume`), so its stack never changes thread; `T` crosses threads as output.
unsafe impl<T: Send> Send for PinnedCoroutine<T> {}

/// How to build the coroutine when the task first runs (its id and name are the header's).
pub(crate) struct StackConfig {
    pub(crate) stack_size: usize,
    /// Whether signal preemption may suspend it (`TaskBuilder::preemptible`).
    pub(crate) preemptible: bool,
}

/// The builder of a task's coroutine (not generic: compiled once).
fn coroutine_builder(header: &Header, config: &StackConfig) -> corio_context::coroutine::Builder {
    let builder = corio_context::coroutine::Builder::new()
        .stack_size(config.stack_size)
        .id(header.id)
        .location(header.location);
    match &header.name {
        Some(name) => builder.name(name.clone()),
        None => builder,
    }
}

impl StackfulCtx {
    /// The context of a coroutine task about to start (not generic: compiled once).
    ///
    /// # Safety
    /// The context must not outlive `task` (its waker does not own a reference).
    unsafe fn new(task: TaskRef<'_>, pinned: bool, preemptible: bool) -> StackfulCtx {
        StackfulCtx {
            raw: Cell::new(ptr::null_mut()),
            switched: Cell::new(None),
            yielder: Cell::new(ptr::null()),
            // SAFETY: per this function's contract.
            waker: unsafe { unowned_waker(task.ptr()) },
            yielded: Cell::new(false),
            cancel_requested: Cell::new(false),
            panicked: Cell::new(false),
            io_wait: Cell::new(None),
            unwinding: std::cell::RefCell::new(None),
            pinned,
            locals: std::cell::OnceCell::new(),
            // A migratable coroutine is never preempted (see `runtime/preempt.rs`).
            preempt: (preemptible && pinned).then(|| PreemptState::new(task.id)),
        }
    }
}

/// A stackful task's body.
///
/// The stack is taken when the coroutine first runs, not when it is spawned: an unstarted
/// coroutine is just its closure in the task's cell. A burst of spawns therefore costs no stack
/// memory, the stack comes from the cache of the worker that will run it (warm, and where it
/// will stay), and a batch of short coroutines reuses a handful of stacks.
///
/// **The cell.** A started coroutine's handle and context (240 bytes) live in a block of their
/// own ([`Live`], from the task pools), taken when it starts and freed when it finishes, not in
/// the task's cell: the cell lives as long as the task's `JoinHandle` (it holds the output),
/// and a program that holds many handles — a batch of spawns joined afterwards — held 336
/// bytes per task where 128 are needed (a header, the closure and stack size or the output, the
/// join waker). Only the coroutines running at once hold a `Live`, a handful per worker in a
/// batch of short ones; the price is one pooled allocation and free per coroutine and a pointer
/// to follow on the context's every use (see `docs/scheduler.md`, "The stackful cell").
pub(crate) enum Stackful<F, T> {
    Unstarted { f: F, config: StackConfig },
    Started(PoolBox<Live<T>>),
    Done,
}

/// A started coroutine: its handle and what its blocking-style calls need. Both stay at one
/// address until the coroutine finishes (a direct switch and the context's waker rely on it).
pub(crate) struct Live<T> {
    co: PinnedCoroutine<T>,
    ctx: StackfulCtx,
}

impl<F, T> Stackful<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    pub(crate) fn new(f: F, config: StackConfig) -> Self {
        Stackful::Unstarted { f, config }
    }

    /// Builds the coroutine on this worker's stack cache.
    #[cold]
    fn start(&mut self, task: TaskRef<'_>, pinned: bool) -> Result<(), Payload> {
        let Stackful::Unstarted { .. } = self else {
            return Ok(());
        };
        let Stackful::Unstarted { f, config } = std::mem::replace(self, Stackful::Done) else {
            unreachable!()
        };
        let built = coroutine_builder(&task, &config).build(
            move |yielder: &Yielder<Signal, ()>, first: Signal| {
                let ctx = match context::here() {
                    context::Here::Stackful(ctx) => ctx,
                    _ => unreachable!("corio: a task's coroutine started outside its poll"),
                };
                ctx.yielder.set(yielder);
                if first == Signal::Cancel {
                    drop(f);
                    return Err(Box::new(Cancelled { unwinding: None }) as Payload);
                }
                let Some(preempt) = &ctx.preempt else {
                    return catch_unwind(AssertUnwindSafe(f));
                };
                // Preemptible from here until `f` has returned or unwound (`runtime/preempt.rs`).
                let (limit, _) = yielder.stack_bounds();
                let here = 0u8;
                preempt.start(limit, ptr::from_ref(&here) as usize);
                let result = catch_unwind(AssertUnwindSafe(f));
                preempt.finish();
                result
            },
        );
        match built {
            Ok(co) => {
                // SAFETY: the context goes into the task's `Live` block, which the task's cell
                // owns, so the task outlives it.
                let ctx = unsafe { StackfulCtx::new(task, pinned, config.preemptible) };
                let mut live = PoolBox::new(Live {
                    co: PinnedCoroutine(co),
                    ctx,
                });
                // The handle's final place (the `Live` block): a direct switch uses it.
                let raw = live.co.0.as_raw();
                live.ctx.raw.set(raw);
                *self = Stackful::Started(live);
                Ok(())
            }
            Err(e) => Err(Box::new(format!(
                "corio: cannot create the coroutine's stack: {e}"
            ))),
        }
    }

    #[inline]
    fn resume(
        &mut self,
        task: TaskRef<'_>,
        cx: &mut Context<'_>,
        signal: Signal,
    ) -> Poll<Result<T, Payload>> {
        let header = task.header();
        if let Stackful::Unstarted { .. } = self {
            let pinned = matches!(
                header.kind,
                crate::task::core::Kind::Stackful { migratable: false }
            );
            if let Err(payload) = self.start(task, pinned) {
                return Poll::Ready(Err(payload));
            }
            let me = context::with_worker(|w| w.map(|w| w.index()));
            let me = me.expect("corio: a stackful task was polled off its runtime's workers");
            // Release: pairs with the Acquire in `Header::pinned_home`.
            header.home.store(me as u32, Ordering::Release);
        }
        let Stackful::Started(live) = self else {
            unreachable!("corio: resumed a finished coroutine");
        };
        let Live { co, ctx } = &mut **live;
        assert_on_home_thread(header);
        debug_assert!(cx.waker().will_wake(ctx.waker()));
        let back = {
            let _stackful = context::enter_stackful(ctx);
            let _preempt = ctx.preempt.as_ref().map(preempt::enter_resume);
            // SAFETY: claimed below, by this coroutine or by the one that switched back.
            unsafe { co.0.resume_detached(signal) }
        };
        // Who switched back: this coroutine, unless a direct switch (`yield_now`) passed the
        // turn on, which made the last coroutine it reached the thread's running task.
        let running = context::running_task_here();
        if running != task.ptr().as_ptr().cast_const() {
            ctx.switched.set(Some(Switched {
                // SAFETY: the direct switch set a live task's own pointer (`switch_task`), and
                // its poll reference is ours now.
                task: unsafe { NonNull::new_unchecked(running.cast_mut()) },
                back,
            }));
            return Poll::Pending;
        }
        // SAFETY: this coroutine switched back.
        let result = unsafe { co.0.claim(back) };
        self.claim(result)
    }

    /// The end of a resume: `Pending`, or the coroutine's result once it finished.
    #[inline]
    fn claim(
        &mut self,
        result: CoroutineResult<(), Result<T, Payload>>,
    ) -> Poll<Result<T, Payload>> {
        match result {
            CoroutineResult::Yield(()) => Poll::Pending,
            CoroutineResult::Return(result) => {
                // The stack went back to this worker's cache when the coroutine finished.
                *self = Stackful::Done;
                Poll::Ready(result)
            }
        }
    }
}

impl<F, T> Body for Stackful<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    type Output = T;

    #[inline]
    fn poll_body(&mut self, task: TaskRef<'_>, cx: &mut Context<'_>) -> Poll<Result<T, Payload>> {
        self.resume(task, cx, Signal::Run)
    }

    #[inline]
    fn take_yielded(&mut self) -> bool {
        match self {
            Stackful::Started(live) => live.ctx.yielded.replace(false),
            _ => false,
        }
    }

    #[inline]
    fn take_switched(&mut self) -> Option<Switched> {
        match self {
            Stackful::Started(live) => live.ctx.switched.take(),
            _ => None,
        }
    }

    fn claim_switched(&mut self, back: Detached) -> Poll<Result<T, Payload>> {
        let Stackful::Started(live) = self else {
            unreachable!("corio: switched to a coroutine that is not started");
        };
        // SAFETY: per `Body::claim_switched`, this coroutine switched back with `back`.
        let result = unsafe { live.co.0.claim(back) };
        self.claim(result)
    }

    fn stackful_ctx(&self) -> Option<&StackfulCtx> {
        match self {
            Stackful::Started(live) => Some(&live.ctx),
            _ => None,
        }
    }

    fn poll_cancel(&mut self, task: TaskRef<'_>, cx: &mut Context<'_>) -> Poll<Option<Payload>> {
        match self {
            Stackful::Done => return Poll::Ready(None),
            Stackful::Unstarted { .. } => {
                // Never ran: dropping the closure is all there is to do.
                return Poll::Ready(
                    catch_unwind(AssertUnwindSafe(|| *self = Stackful::Done)).err(),
                );
            }
            Stackful::Started(_) => {}
        }
        if cfg!(panic = "abort") {
            // Cancelling unwinds the stack, which aborts the process under `panic = "abort"`:
            // leak it instead (module docs, "Cancellation").
            leak_without_unwinding(&task, std::mem::replace(self, Stackful::Done));
            return Poll::Ready(None);
        }
        match self.resume(task, cx, Signal::Cancel) {
            Poll::Pending => Poll::Pending,
            // It caught the cancellation and returned: still cancelled; its output is dropped.
            Poll::Ready(Ok(_)) => Poll::Ready(None),
            Poll::Ready(Err(payload)) if payload.is::<Cancelled>() => Poll::Ready(None),
            Poll::Ready(Err(payload)) => Poll::Ready(Some(payload)),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::check_home;

    /// A task's cell lives as long as its `JoinHandle`: a stackful one with a small closure
    /// takes one 128-byte block, as a stackless one does, not the 336 bytes
    /// it took while the started coroutine's handle and context were in it.
    #[test]
    fn a_stackful_task_with_a_small_closure_fits_in_128_bytes() {
        use crate::task::core::Cell;
        type Small = super::Stackful<fn() -> u64, u64>;
        let cell = size_of::<Cell<Small>>();
        assert!(cell <= 128, "a stackful task's cell is {cell} bytes");
        // The started state is where the bytes went, in a block of its own.
        assert!(size_of::<super::Live<u64>>() > 128);
    }

    /// Set in the child process that the abort test re-executes.
    const CHILD: &str = "CORIO_TEST_OFF_HOME_CHILD";

    #[test]
    fn the_home_check_passes_on_the_home_worker() {
        check_home(7, 1, Some(1));
    }

    /// The home check is a real check in every build profile: off its home it aborts the
    /// process with a message (run in a child process, this test binary re-executed).
    #[test]
    #[cfg_attr(miri, ignore)] // re-runs the test binary in a child process
    fn the_home_check_aborts_off_the_home_worker_in_every_profile() {
        if let Ok(case) = std::env::var(CHILD) {
            match case.as_str() {
                "other-worker" => check_home(7, 0, Some(1)),
                _ => check_home(7, 0, None),
            }
            unreachable!("the home check returned off the home thread");
        }
        for (case, here) in [
            ("other-worker", "this is worker 1"),
            ("not-a-worker", "not one of"),
        ] {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "task::stackful::tests::the_home_check_aborts_off_the_home_worker_in_every_profile",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD, case)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("(task 7) was about to run off its home thread"),
                "{err}"
            );
            assert!(err.contains("its home is worker 0"), "{err}");
            assert!(err.contains(here), "{err}");
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{err}");
        }
    }
}
