//! What this thread is doing, for code that has no other way to know: which task runs here,
//! whether this thread is a worker (and of which runtime), the cooperative budget, and the
//! runtime `spawn` should use.
//!
//! Everything hot lives in one `const`-initialised thread-local without a destructor, so
//! reading it is a plain TLS load.
//!
//! # Fresh addresses after a switch
//!
//! LLVM may compute a thread-local's address once and reuse it after a call in the same
//! function (llvm#98479); a stackful switch is such a call, and a `migratable` coroutine may
//! come back from it on another thread. So every accessor that coroutine code can call
//! ([`here`], [`current_task`], [`with_worker`], [`budget_proceed`], [`should_yield`], [`current_shared`],
//! [`enter_runtime`]) is `#[inline(never)]`: it computes the address afresh in a function
//! that contains no switch, whatever its caller inlines around it. The exceptions are read
//! only for a coroutine *pinned* to its worker, which never changes thread
//! ([`pinned_stackful_here`], [`worker_here`]). The guards that frame a
//! poll ([`enter_task`], [`enter_stackful`], [`enter_worker`] and their drops) and
//! [`worker_index_in`] (the home-thread check before a resume) stay inlined:
//! they run only in the frame of the worker (or plain thread) that polls the task, on that
//! thread's own stack, which never changes thread. See `docs/soundness.md`, "Thread-locals
//! across switches".

use std::cell::{Cell, RefCell};
use std::ptr;
use std::sync::Arc;

use super::Shared;
use super::worker::WorkerCtx;
use crate::task::core::{Header, TaskRef};
use crate::task::stackful::StackfulCtx;

/// Polls a task may make before a runtime operation yields instead of completing (tokio uses
/// 128; with corio's cheaper switch a larger budget costs no more fairness per unit of time).
pub(crate) const BUDGET: u32 = 128;

/// The budget of code that is on none: outside tasks, in blocking-pool closures and inside
/// `corio::blocking`. Runtime operations there always proceed (no preemption either).
const UNCONSTRAINED: u32 = u32::MAX;

struct Context {
    /// The task being polled on this thread, if any.
    task: Cell<*const Header>,
    /// For a stackful task: how to suspend it.
    stackful: Cell<*const StackfulCtx>,
    /// This thread's worker, while it runs its loop.
    worker: Cell<*const WorkerCtx>,
    /// Runtime operations left before a yield is forced; `UNCONSTRAINED` outside tasks.
    budget: Cell<u32>,
    /// This thread's worker's shared part, whose preempt request (`Remote::preempt`)
    /// [`should_yield`] reads, one load away; while the worker runs its loop.
    remote: Cell<*const super::worker::Remote>,
    /// Entries of `ENTERED` made inside a task (see [`Entered::task`]): while there are
    /// none, a spawn in a task uses the task's runtime without looking at the list.
    task_entries: Cell<usize>,
}

thread_local! {
    static CONTEXT: Context = const {
        Context {
            task: Cell::new(ptr::null()),
            stackful: Cell::new(ptr::null()),
            worker: Cell::new(ptr::null()),
            budget: Cell::new(UNCONSTRAINED),
            remote: Cell::new(ptr::null()),
            task_entries: Cell::new(0),
        }
    };

    /// The runtimes entered with `Runtime::enter`/`block_on` on this thread, oldest first;
    /// the last one is current (see `EnterGuard`), among those entered by the same task.
    static ENTERED: RefCell<Vec<Entered>> = const { RefCell::new(Vec::new()) };

    /// The id the next `EnterGuard` of this thread gets.
    static NEXT_ENTER_ID: Cell<u64> = const { Cell::new(0) };

    /// The address of the `Shared` of the runtime whose own thread this is (see
    /// [`own_thread`]), 0 on other threads.
    static OWN_THREAD_OF: Cell<usize> = const { Cell::new(0) };
}

/// Marks this thread as one of `shared`'s runtime's own, until the guard drops: a worker's
/// thread for its whole life (its start and stop hooks too, around its loop) and sysmon's.
/// User code runs on them (hooks; wakers that sysmon fires), and a `Runtime` dropped there
/// must not wait for this very thread ([`is_own_thread_of`]; it deadlocked, or waited for
/// ever: `tests/rt_review_lifecycle.rs`). The guard keeps the allocation (a `Weak`), so the
/// address cannot name another runtime while it is marked.
pub(crate) fn own_thread(shared: &Arc<Shared>) -> OwnThread {
    let weak = Arc::downgrade(shared);
    OWN_THREAD_OF.set(weak.as_ptr() as usize);
    OwnThread(weak)
}

/// See [`own_thread`].
pub(crate) struct OwnThread(#[allow(dead_code)] std::sync::Weak<Shared>);

impl Drop for OwnThread {
    fn drop(&mut self) {
        OWN_THREAD_OF.set(0);
    }
}

/// Whether this thread is one of `shared`'s runtime's own ([`own_thread`]).
pub(crate) fn is_own_thread_of(shared: &Arc<Shared>) -> bool {
    OWN_THREAD_OF.get() == Arc::as_ptr(shared) as usize
}

/// One `Runtime::enter` of this thread, until its guard drops.
struct Entered {
    /// The guard's id.
    id: u64,
    /// The id of the task (stackful or async, not a blocking-pool closure's) that entered it,
    /// or 0 outside one. Resumes do not nest: a coroutine may hold a guard across a
    /// suspension while another coroutine runs on the thread, and that one must not see the
    /// entry; so a task sees only its own entries, and code outside tasks only the others.
    task: u64,
    shared: Arc<Shared>,
}

/// Restores the previous task context when dropped.
pub(crate) struct TaskGuard {
    task: *const Header,
    stackful: *const StackfulCtx,
    budget: u32,
}

/// Marks `task` as the task running on this thread, with a fresh budget (none for a
/// blocking-pool closure: it owns its thread, has nobody to be fair to, and would never get a
/// budget refilled, as tokio has no budget on its blocking threads). The thread keeps the
/// task's own pointer (a direct switch's poll frame takes it as a handle: `TaskRef`).
#[inline]
pub(crate) fn enter_task(task: TaskRef<'_>) -> TaskGuard {
    let budget = if task.kind == crate::task::core::Kind::Blocking {
        UNCONSTRAINED
    } else {
        BUDGET
    };
    CONTEXT.with(|c| TaskGuard {
        task: c.task.replace(task.ptr().as_ptr()),
        stackful: c.stackful.replace(ptr::null()),
        budget: c.budget.replace(budget),
    })
}

impl Drop for TaskGuard {
    #[inline]
    fn drop(&mut self) {
        CONTEXT.with(|c| {
            c.task.set(self.task);
            c.stackful.set(self.stackful);
            c.budget.set(self.budget);
        });
    }
}

/// Restores the previous stackful context when dropped.
pub(crate) struct StackfulGuard(*const StackfulCtx);

/// Marks the running task as the stackful coroutine described by `ctx`.
#[inline]
pub(crate) fn enter_stackful(ctx: &StackfulCtx) -> StackfulGuard {
    StackfulGuard(CONTEXT.with(|c| c.stackful.replace(ctx)))
}

impl Drop for StackfulGuard {
    #[inline]
    fn drop(&mut self) {
        CONTEXT.with(|c| c.stackful.set(self.0));
    }
}

/// Tells the stackful coroutine running on this thread, if any, that a panic starts in it
/// (corio's panic hook; see `StackfulCtx::note_panic`).
pub(crate) fn note_stackful_panic() {
    let _ = CONTEXT.try_with(|c| {
        // SAFETY: as in `here`: set only while the coroutine's poll is on this thread's stack,
        // and the context lives in the started coroutine's `Live` block.
        if let Some(stackful) = unsafe { c.stackful.get().as_ref() } {
            stackful.note_panic();
        }
    });
}

/// The task that runs on this thread now, as set by its poll's [`enter_task`] or by a direct
/// switch ([`switch_task`]); read inline, so only on the polling thread's own stack (the poll
/// frame learning which coroutine switched back to it).
#[inline]
pub(crate) fn running_task_here() -> *const Header {
    CONTEXT.with(|c| c.task.get())
}

/// This thread's worker while it runs its loop, else null; read inline, so only from a pinned
/// coroutine (which never changes thread) or the worker's own stack.
#[inline]
pub(crate) fn worker_here() -> *const WorkerCtx {
    CONTEXT.with(|c| c.worker.get())
}

/// The running stackful coroutine's context if it is pinned to its worker (not
/// `migratable`), else `None` (the caller then asks [`here`]). Read inline, without the call
/// [`here`] costs: a pinned coroutine never changes thread, so the address its caller computed
/// stays right across the caller's switches, which only that coroutine makes (a bare
/// `Coroutine` it resumed is refused by `StackfulCtx::check_own_stack` before any switch).
/// For [`crate::block_on::yield_now`]'s fast path.
#[inline(always)]
pub(crate) fn pinned_stackful_here<'a>() -> Option<&'a StackfulCtx> {
    CONTEXT.with(|c| {
        // SAFETY: as in `here`: set only while the coroutine's poll is on this thread's
        // stack, and the context lives in the started coroutine's `Live` block.
        let stackful = unsafe { c.stackful.get().as_ref() }?;
        stackful.is_pinned().then_some(stackful)
    })
}

/// What [`enter_task`] and [`enter_stackful`] set, for a direct switch from the running
/// coroutine to `ctx`'s. Inlined although it runs on a coroutine's stack: only a pinned
/// coroutine, which never changes thread, makes a direct switch. The guards of the poll frame
/// the last coroutine switches back to restore the thread's own values.
#[inline]
pub(crate) fn switch_task(task: TaskRef<'_>, ctx: &StackfulCtx) {
    CONTEXT.with(|c| {
        c.task.set(task.ptr().as_ptr());
        c.stackful.set(ctx);
        c.budget.set(BUDGET);
    });
}

/// What kind of code runs on this thread now.
pub(crate) enum Here<'a> {
    /// Inside a stackful coroutine: blocking-style calls suspend it.
    Stackful(&'a StackfulCtx),
    /// Inside a stackless task's poll: blocking would stall the worker.
    Stackless,
    /// Not inside a task (a plain thread, or a worker between tasks).
    Thread,
}

#[inline(never)]
pub(crate) fn here<'a>() -> Here<'a> {
    CONTEXT.with(|c| {
        let stackful = c.stackful.get();
        if !stackful.is_null() {
            // SAFETY: the pointer is set only while the coroutine's poll is on this thread's
            // stack (see `enter_stackful`), and the context lives in the task's `Live` block.
            Here::Stackful(unsafe { &*stackful })
        } else if !c.task.get().is_null() {
            // SAFETY: as in `current_task`.
            match unsafe { &*c.task.get() }.kind {
                // A blocking-pool closure owns its thread: it may block like a plain thread.
                crate::task::core::Kind::Blocking => Here::Thread,
                _ => Here::Stackless,
            }
        } else {
            Here::Thread
        }
    })
}

/// The header of the task running on this thread.
#[inline(never)]
pub(crate) fn current_task<R>(f: impl FnOnce(Option<&Header>) -> R) -> R {
    CONTEXT.with(|c| {
        let task = c.task.get();
        // SAFETY: set only while the task is being polled on this thread, which holds a
        // reference to it.
        f(unsafe { task.as_ref() })
    })
}

/// Runs `f` with this thread's worker, if it is one.
#[inline(never)]
pub(crate) fn with_worker<R>(f: impl FnOnce(Option<&WorkerCtx>) -> R) -> R {
    CONTEXT.with(|c| {
        let worker = c.worker.get();
        // SAFETY: set by the worker loop for as long as its WorkerCtx lives on its stack.
        f(unsafe { worker.as_ref() })
    })
}

/// This thread's worker index in `shared`'s runtime, if it is one of its workers; read
/// inline, so only for code on the polling thread's own stack (never coroutine code: see
/// "Fresh addresses after a switch").
#[inline]
pub(crate) fn worker_index_in(shared: &Arc<Shared>) -> Option<usize> {
    CONTEXT.with(|c| {
        // SAFETY: as in `with_worker`.
        let worker = unsafe { c.worker.get().as_ref() }?;
        Arc::ptr_eq(worker.shared(), shared).then(|| worker.index())
    })
}

/// Registers this thread as a worker for the duration of the returned guard.
pub(crate) fn enter_worker(worker: &WorkerCtx) -> WorkerGuard {
    CONTEXT.with(|c| {
        assert!(
            c.worker.get().is_null(),
            "corio: a worker thread cannot run another runtime's worker"
        );
        c.worker.set(worker);
        c.remote.set(&worker.shared().workers[worker.index()]);
    });
    WorkerGuard(())
}

pub(crate) struct WorkerGuard(());

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        CONTEXT.with(|c| {
            c.worker.set(ptr::null());
            c.remote.set(ptr::null());
        });
    }
}

/// Takes one unit of budget. False when the task has used its budget (or its worker was
/// asked to preempt it by sysmon): the caller should yield before continuing.
#[inline(never)]
pub(crate) fn budget_proceed() -> bool {
    CONTEXT.with(take_budget)
}

/// [`budget_proceed`]'s body, on this thread's context.
#[inline(always)]
fn take_budget(c: &Context) -> bool {
    let budget = c.budget.get();
    if budget == UNCONSTRAINED {
        return true;
    }
    if budget == 0 {
        return false;
    }
    c.budget.set(budget - 1);
    let worker = c.worker.get();
    // SAFETY: as in `with_worker`.
    match unsafe { worker.as_ref() } {
        Some(w) if w.preempt_requested() => {
            c.budget.set(0);
            false
        }
        _ => true,
    }
}

/// The running stackful coroutine's context, having taken a unit of its budget: [`here`] is
/// `Stackful` and [`budget_proceed`] true, in one call (one thread-local access instead of
/// two). `None` if no coroutine runs here or it must yield first (its budget is then
/// spent, as after `budget_proceed`). For the blocking-style socket calls' fast path
/// (`io/source.rs`).
#[inline(never)]
pub(crate) fn stackful_budget_proceed<'a>() -> Option<&'a StackfulCtx> {
    CONTEXT.with(|c| {
        let stackful = c.stackful.get();
        if stackful.is_null() || !take_budget(c) {
            return None;
        }
        // SAFETY: as in `here`: set only while the coroutine's poll is on this thread's
        // stack, and the context lives in the task's `Live` block.
        Some(unsafe { &*stackful })
    })
}

/// Whether the running task should yield at its next preemption point: its budget is spent,
/// or sysmon asked its worker to preempt it. Takes no budget (the operation that follows
/// takes its own, if it has any); for [`crate::block_on::preemption_point`].
#[inline(never)]
pub(crate) fn should_yield() -> bool {
    CONTEXT.with(yield_due)
}

/// Whether sysmon asked this thread's worker to end the running task's time slice (not merely
/// a spent budget): for a coroutine about to yield at a preemption point. Out of line, as
/// every thread-local read from code a coroutine runs (see "Fresh addresses after a switch").
#[inline(never)]
pub(crate) fn preempt_requested_here() -> bool {
    with_worker(|w| w.is_some_and(|w| w.preempt_requested()))
}

/// [`should_yield`]'s test, on this thread's context.
#[inline(always)]
fn yield_due(c: &Context) -> bool {
    match c.budget.get() {
        0 => true,
        UNCONSTRAINED => false,
        _ => {
            let remote = c.remote.get();
            // SAFETY: set by `enter_worker` to this thread's worker's `Remote`, which lives
            // in `Shared` for as long as the worker runs its loop (and so any task in it).
            !remote.is_null() && unsafe { &*remote }.preempt_for_this_slice()
        }
    }
}

/// The running stackful coroutine's context if a stackful coroutine runs here and need not
/// yield first: [`here`] is `Stackful` and [`should_yield`] is false, read in one call (one
/// thread-local address computation instead of two). `None` in every other case, where the
/// caller takes `block_on`'s general path. For [`crate::block_on::block_on_ready_first`].
#[inline(never)]
pub(crate) fn stackful_on_budget<'a>() -> Option<&'a StackfulCtx> {
    CONTEXT.with(|c| {
        let stackful = c.stackful.get();
        if stackful.is_null() || yield_due(c) {
            return None;
        }
        // SAFETY: as in `here`: set only while the coroutine's poll is on this thread's
        // stack, and the context lives in the task's `Live` block.
        Some(unsafe { &*stackful })
    })
}

/// Whether the running task has budget left (tokio's `coop::has_budget_remaining`); does not
/// take any. `Timeout` compares it before and after polling its future.
#[inline(never)]
pub(crate) fn has_budget_remaining() -> bool {
    CONTEXT.with(|c| c.budget.get() != 0)
}

/// Lifts the budget until the guard drops, which puts it back (also when unwinding): for
/// `corio::blocking`, where the thread is the caller's to block and a foreign executor may
/// poll corio futures any number of times within one poll of the task; and for calls that
/// never wait but poll many futures, such as `JoinSet::try_join_next` (a spent budget would
/// make a finished handle say `Pending`, and such a call has no later poll to retry in). The
/// value belongs to the running poll only: every task poll starts from its own fresh budget
/// in `enter_task`.
#[inline(never)]
pub(crate) fn unconstrained() -> Unconstrained {
    Unconstrained(CONTEXT.with(|c| c.budget.replace(UNCONSTRAINED)))
}

/// Spends the running task's budget: its next runtime operation takes its slow path (the
/// stackful task's recorded cancellation is raised there).
#[inline(never)]
pub(crate) fn spend_budget() {
    CONTEXT.with(|c| c.budget.set(0));
}

/// The budget [`unconstrained`] lifted, put back on drop.
#[must_use = "the budget is put back when this guard drops"]
pub(crate) struct Unconstrained(u32);

impl Drop for Unconstrained {
    #[inline(never)]
    fn drop(&mut self) {
        CONTEXT.with(|c| c.budget.set(self.0));
    }
}

/// The runtime that `spawn` and timers use from this thread: the running task's, this
/// worker's, or the one entered with `Runtime::enter`.
///
/// A blocking-pool closure's task names its runtime only after the entered ones: the closure
/// owns its thread as a plain thread does, and may enter another runtime there
/// (`Runtime::enter`, `Handle::block_on`), which its spawns must then use. Its pool thread
/// entered the closure's own runtime first, so without such an entry it is the one found.
///
/// A task's own entries (`Runtime::enter` inside it) come before its runtime, as a plain
/// thread's before the default; see [`Entered::task`].
#[inline(never)]
pub(crate) fn current_shared() -> Option<Arc<Shared>> {
    let task = current_task(|t| t.map(|h| (h.kind, h.id, h.scheduler.shared.clone())));
    match task {
        Some((crate::task::core::Kind::Blocking, _, shared)) => {
            return Some(entered(|_| true).unwrap_or(shared));
        }
        Some((_, id, shared)) => {
            let own = has_task_entries()
                .then(|| entered(|task| task == id))
                .flatten();
            return Some(own.unwrap_or(shared));
        }
        None => {}
    }
    if let Some(shared) = with_worker(|w| w.map(|w| w.shared().clone())) {
        return Some(shared);
    }
    entered(|task| task == 0)
}

/// Whether a task of this thread holds an `EnterGuard` (then its spawns look at `ENTERED`).
#[inline]
pub(crate) fn has_task_entries() -> bool {
    CONTEXT.with(|c| c.task_entries.get() != 0)
}

/// The runtime entered last on this thread by an entry whose task `by` accepts, if any.
fn entered(by: impl Fn(u64) -> bool) -> Option<Arc<Shared>> {
    // Every borrow of `ENTERED` is made under the no-preempt counter: a coroutine preempted
    // inside one would leave it held while the next coroutine of the thread runs, whose own
    // borrow would panic ("The rule" in `preempt.rs`).
    let _no_preempt = super::preempt::guard();
    ENTERED.with(|e| {
        let entered = e.borrow();
        entered
            .iter()
            .rev()
            .find(|e| by(e.task))
            .map(|e| e.shared.clone())
    })
}

/// Keeps a runtime entered on this thread until dropped.
///
/// Entered runtimes form a per-thread list, and a guard's drop removes *its own* entry, so
/// guards may be dropped in any order: the current runtime is always the one entered last
/// among those whose guards are still alive. (A stack that restores "the previous" runtime on
/// drop, as a guard restoring a saved value would, breaks on out-of-order drops — issue 8,
/// bug 6 — and out-of-order drops are ordinary on a thread whose coroutines each hold one
/// across a suspension, so tokio's answer, a panic, would not do here.)
pub(crate) struct EnterGuard {
    id: u64,
    /// `!Send`: the entry is in this thread's list; dropped on another thread, the guard
    /// would remove an entry there (or none) and leave this one behind.
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Makes `shared` the runtime of this thread until the guard drops.
#[inline(never)]
pub(crate) fn enter_runtime(shared: Arc<Shared>) -> EnterGuard {
    // Under the no-preempt counter, as every use of `ENTERED`, and so are the thread-local
    // read-modify-writes here: a preemptible coroutine preempted between a read and its
    // write would let the next coroutine of the thread update the same word in between (a
    // lost update; `rt_preempt_signal.rs` saw the task count wrap below zero).
    let no_preempt = super::preempt::guard();
    let id = NEXT_ENTER_ID.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    });
    // A blocking-pool closure's entries are found by any lookup there (`current_shared`).
    let task = current_task(|t| {
        t.filter(|h| h.kind != crate::task::core::Kind::Blocking)
            .map_or(0, |h| h.id)
    });
    if task != 0 {
        CONTEXT.with(|c| c.task_entries.set(c.task_entries.get() + 1));
    }
    ENTERED.with(|e| e.borrow_mut().push(Entered { id, task, shared }));
    drop(no_preempt);
    EnterGuard {
        id,
        _not_send: std::marker::PhantomData,
    }
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        // Taken out first and dropped after the borrow ends: the last `Arc<Shared>` may go.
        let no_preempt = super::preempt::guard(); // as in `enter_runtime`
        let removed = ENTERED.try_with(|e| {
            let mut entered = e.borrow_mut();
            let at = entered.iter().rposition(|e| e.id == self.id);
            at.map(|at| entered.remove(at))
        });
        if let Ok(Some(Entered { task, .. })) = &removed
            && *task != 0
        {
            let _ = CONTEXT.try_with(|c| c.task_entries.set(c.task_entries.get() - 1));
        }
        drop(no_preempt);
        drop(removed);
    }
}
