//! What this thread is doing, for code that has no other way to know: which task runs here,
//! whether this thread is a worker (and of which runtime), the cooperative budget, and the
//! runtime `spawn` should use.
//!
//! Everything hot lives in one `const`-initialised thread-local without a destructor, so
//! reading it is a plain TLS load.

use std::cell::{Cell, RefCell};
use std::ptr;
use std::sync::Arc;

use super::Shared;
use super::worker::WorkerCtx;
use crate::task::core::Header;
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
}

thread_local! {
    static CONTEXT: Context = const {
        Context {
            task: Cell::new(ptr::null()),
            stackful: Cell::new(ptr::null()),
            worker: Cell::new(ptr::null()),
            budget: Cell::new(UNCONSTRAINED),
        }
    };

    /// The runtime entered with `Runtime::enter`/`block_on` on a thread that is not a worker.
    static ENTERED: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
}

/// Restores the previous task context when dropped.
pub(crate) struct TaskGuard {
    task: *const Header,
    stackful: *const StackfulCtx,
    budget: u32,
}

/// Marks `header` as the task running on this thread, with a fresh budget (none for a
/// blocking-pool closure: it owns its thread, has nobody to be fair to, and would never get a
/// budget refilled, as tokio has no budget on its blocking threads).
#[inline]
pub(crate) fn enter_task(header: &Header) -> TaskGuard {
    let budget = if header.kind == crate::task::core::Kind::Blocking {
        UNCONSTRAINED
    } else {
        BUDGET
    };
    CONTEXT.with(|c| TaskGuard {
        task: c.task.replace(header),
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

/// What kind of code runs on this thread now.
pub(crate) enum Here<'a> {
    /// Inside a stackful coroutine: blocking-style calls suspend it.
    Stackful(&'a StackfulCtx),
    /// Inside a stackless task's poll: blocking would stall the worker.
    Stackless,
    /// Not inside a task (a plain thread, or a worker between tasks).
    Thread,
}

#[inline]
pub(crate) fn here<'a>() -> Here<'a> {
    CONTEXT.with(|c| {
        let stackful = c.stackful.get();
        if !stackful.is_null() {
            // SAFETY: the pointer is set only while the coroutine's poll is on this thread's
            // stack (see `enter_stackful`), and the context lives in the task cell.
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
pub(crate) fn current_task<R>(f: impl FnOnce(Option<&Header>) -> R) -> R {
    CONTEXT.with(|c| {
        let task = c.task.get();
        // SAFETY: set only while the task is being polled on this thread, which holds a
        // reference to it.
        f(unsafe { task.as_ref() })
    })
}

/// Runs `f` with this thread's worker, if it is one.
#[inline]
pub(crate) fn with_worker<R>(f: impl FnOnce(Option<&WorkerCtx>) -> R) -> R {
    CONTEXT.with(|c| {
        let worker = c.worker.get();
        // SAFETY: set by the worker loop for as long as its WorkerCtx lives on its stack.
        f(unsafe { worker.as_ref() })
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
    });
    WorkerGuard(())
}

pub(crate) struct WorkerGuard(());

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        CONTEXT.with(|c| c.worker.set(ptr::null()));
    }
}

/// Takes one unit of budget. False when the task has used its budget (or its worker was
/// asked to preempt it by sysmon): the caller should yield before continuing.
#[inline]
pub(crate) fn budget_proceed() -> bool {
    CONTEXT.with(|c| {
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
    })
}

/// Whether the running task has budget left (tokio's `coop::has_budget_remaining`); does not
/// take any. `Timeout` compares it before and after polling its future.
#[inline]
pub(crate) fn has_budget_remaining() -> bool {
    CONTEXT.with(|c| c.budget.get() != 0)
}

/// Lifts the budget until [`constrain`] puts back what this returned: for `corio::blocking`,
/// where the thread is the caller's to block and a foreign executor may poll corio futures any
/// number of times within one poll of the task. (The value belongs to the running poll only:
/// every task poll starts from its own fresh budget in `enter_task`.)
#[inline]
pub(crate) fn unconstrain() -> u32 {
    CONTEXT.with(|c| c.budget.replace(UNCONSTRAINED))
}

/// Puts back the budget [`unconstrain`] returned.
#[inline]
pub(crate) fn constrain(budget: u32) {
    CONTEXT.with(|c| c.budget.set(budget));
}

/// The runtime that `spawn` and timers use from this thread: the running task's, this
/// worker's, or the one entered with `Runtime::enter`.
pub(crate) fn current_shared() -> Option<Arc<Shared>> {
    if let Some(shared) = current_task(|t| t.map(|h| h.scheduler.clone())) {
        return Some(shared);
    }
    if let Some(shared) = with_worker(|w| w.map(|w| w.shared().clone())) {
        return Some(shared);
    }
    ENTERED.with(|e| e.borrow().clone())
}

/// Restores the previously entered runtime when dropped.
pub(crate) struct EnterGuard(Option<Arc<Shared>>);

/// Makes `shared` the runtime of this thread until the guard drops.
pub(crate) fn enter_runtime(shared: Arc<Shared>) -> EnterGuard {
    EnterGuard(ENTERED.with(|e| e.borrow_mut().replace(shared)))
}

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let previous = self.0.take();
        let _ = ENTERED.try_with(|e| *e.borrow_mut() = previous);
    }
}
