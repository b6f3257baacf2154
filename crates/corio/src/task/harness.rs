//! Running a task: the generic functions behind a task's vtable.
//!
//! # Protocol (one poll)
//!
//! 1. `transition_to_running` consumes the `Notified` reference; on success this thread owns
//!    the stage.
//! 2. The body is polled with the task's own waker and with [`CURRENT`](crate::runtime::context)
//!    describing it, so that blocking-style calls and `corio::current()` know what runs.
//! 3. `Ready` stores the output and completes (step 5). `Pending` calls `transition_to_idle`:
//!    if the task was woken while it ran (`OkNotified`, which is what `yield_now` does) the
//!    reference becomes a `Notified` again and goes to the back of a run queue
//!    (`Shared::yield_task`), never to the next-task slot, so a yield lets others run.
//! 4. A task cancelled while idle, or while it ran, is cancelled instead of polled: a future is
//!    dropped; a started coroutine is resumed with a cancel signal and unwinds its stack, which
//!    may block again (a destructor that waits), in which case the task goes idle until woken.
//! 5. Completion: `transition_to_complete`; if nobody holds the `JoinHandle` the output is
//!    dropped here, else the join waker (if any) is woken; the task leaves the owned-tasks
//!    list and the two references (the poll's and the list's) are dropped.

use std::mem;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};

use super::JoinError;
use super::core::{Body, Cell, CellRef, Header, Payload, RunResult, Stage, TaskRef};
use super::raw::{Notified, drop_reference};
use super::state::{TransitionToIdle, TransitionToRunning};
use super::waker::waker_ref;
use crate::runtime::context;

/// How often shutdown resumes a coroutine that keeps blocking while it unwinds before it is
/// leaked instead.
const SHUTDOWN_CANCEL_ATTEMPTS: usize = 16;

/// # Safety
/// `ptr` must be a `Cell<B>` and the caller must hand over a `Notified` reference.
pub(crate) unsafe fn poll<B: Body>(ptr: NonNull<Header>) -> RunResult {
    // SAFETY: the caller's reference keeps the cell alive.
    let cell = unsafe { CellRef::<B>::new(ptr) };
    match cell.header.state.transition_to_running() {
        TransitionToRunning::Success => return poll_running(cell, ptr),
        TransitionToRunning::Cancelled => return cancel_running(cell, ptr),
        TransitionToRunning::Failed => {}
        // SAFETY: the last reference was ours.
        TransitionToRunning::Dealloc => unsafe { dealloc::<B>(ptr) },
    }
    RunResult::Done
}

/// Polls a task this thread has set RUNNING on.
#[inline]
fn poll_running<B: Body>(cell: CellRef<'_, B>, ptr: NonNull<Header>) -> RunResult {
    // SAFETY: `ptr` is the task's own pointer, alive while this poll holds its reference.
    let task = unsafe { TaskRef::new(ptr) };
    let waker = waker_ref(task);
    let mut cx = Context::from_waker(&waker);
    let (result, yielded) = {
        let _running = context::enter_task(task);
        // SAFETY: RUNNING gives this thread the stage.
        match unsafe { &mut *cell.core.stage.get() } {
            Stage::Running(body) => {
                let result = body.poll_body(task, &mut cx);
                if result.is_pending()
                    && let Some(switched) = body.take_switched()
                {
                    // Another coroutine switched back to this frame (a direct switch): its
                    // poll ends here, after our guards, and this task's ended when it left.
                    drop(_running);
                    // SAFETY: the direct switch handed that task's poll reference to this
                    // frame (see `WorkerCtx::direct_yield`).
                    return unsafe { claim_switched_dyn(switched) };
                }
                let yielded = result.is_pending() && body.take_yielded();
                (result, yielded)
            }
            _ => unreachable!("corio: polled a task whose body is gone"),
        }
    };
    end_poll(cell, ptr, result, yielded)
}

/// The end of a poll: complete, requeue as yielded, or go idle.
#[inline]
fn end_poll<B: Body>(
    cell: CellRef<'_, B>,
    ptr: NonNull<Header>,
    result: Poll<Result<B::Output, super::core::Payload>>,
    yielded: bool,
) -> RunResult {
    let header = &cell.header;
    match result {
        Poll::Ready(Ok(output)) => complete(cell, ptr, Ok(output)),
        Poll::Ready(Err(payload)) => {
            complete(cell, ptr, Err(JoinError::from_payload(header.id, payload)))
        }
        // A pinned coroutine yielded: it stays RUNNING and its worker queues it at the back of
        // its pinned queue; no waker, no state transition (see `raw::Running`).
        Poll::Pending if yielded => return RunResult::Yielded,
        Poll::Pending => return after_pending(cell, ptr, false),
    }
    RunResult::Done
}

/// Dispatches a direct switch's end to the task that switched back.
///
/// # Safety
/// As [`claim_switched`].
#[cold]
#[inline(never)]
unsafe fn claim_switched_dyn(switched: super::stackful::Switched) -> RunResult {
    let ptr = switched.task;
    // SAFETY: per the caller; the poll reference keeps the task alive.
    unsafe { (ptr.as_ref().vtable.claim_switched)(ptr, switched.back) }
}

/// Ends the poll of a stackful coroutine that a direct switch resumed and that switched back
/// to another task's poll frame with `back`: as `poll_running` would have after its resume.
///
/// # Safety
/// `ptr` must be a `Cell<B>` owned as RUNNING by this thread, whose coroutine switched back
/// with `back`, and the caller hands over its poll's reference.
pub(crate) unsafe fn claim_switched<B: Body>(
    ptr: NonNull<Header>,
    back: corio_context::coroutine::Detached,
) -> RunResult {
    // SAFETY: the caller's reference keeps the cell alive.
    let cell = unsafe { CellRef::<B>::new(ptr) };
    // SAFETY: RUNNING gives this thread the stage.
    let (result, yielded) = match unsafe { &mut *cell.core.stage.get() } {
        Stage::Running(body) => {
            let result = body.claim_switched(back);
            let yielded = result.is_pending() && body.take_yielded();
            (result, yielded)
        }
        _ => unreachable!("corio: a task switched to directly has no body"),
    };
    end_poll(cell, ptr, result, yielded)
}

/// # Safety
/// `ptr` must be a live `Cell<B>` that this thread owns as RUNNING (a yielded coroutine of
/// this worker): the context returned is valid while it stays so.
pub(crate) unsafe fn stackful_ctx<B: Body>(
    ptr: NonNull<Header>,
) -> *const super::stackful::StackfulCtx {
    // SAFETY: the caller's reference keeps the cell alive.
    let cell = unsafe { CellRef::<B>::new(ptr) };
    // SAFETY: RUNNING gives this thread the stage; only read here.
    match unsafe { &*cell.core.stage.get() } {
        Stage::Running(body) => body
            .stackful_ctx()
            .map_or(std::ptr::null(), std::ptr::from_ref),
        _ => std::ptr::null(),
    }
}

/// # Safety
/// `ptr` must be a `Cell<B>` with RUNNING set by this thread's worker, and the caller hands
/// over the poll's reference (a `Running`).
pub(crate) unsafe fn resume_running<B: Body>(ptr: NonNull<Header>) -> RunResult {
    // SAFETY: the caller's reference keeps the cell alive.
    let cell = unsafe { CellRef::<B>::new(ptr) };
    if cell.header.state.load().is_cancelled() {
        return cancel_running(cell, ptr);
    }
    poll_running(cell, ptr)
}

/// The poll returned `Pending`: go idle, requeue, or cancel.
fn after_pending<B: Body>(
    cell: CellRef<'_, B>,
    ptr: NonNull<Header>,
    cancel_delivered: bool,
) -> RunResult {
    let header = &cell.header;
    match header.state.transition_to_idle(cancel_delivered) {
        TransitionToIdle::Ok => {}
        TransitionToIdle::OkNotified => {
            // SAFETY: the poll's reference is now a Notified (see `transition_to_idle`).
            let task = unsafe { Notified::from_raw(ptr) };
            header.runtime_for_handoff().yield_task(task);
        }
        // SAFETY: the last reference was ours.
        TransitionToIdle::OkDealloc => unsafe { dealloc::<B>(ptr) },
        TransitionToIdle::Cancelled => return cancel_running(cell, ptr),
    }
    RunResult::Done
}

/// Cancels a task this thread has set RUNNING on.
fn cancel_running<B: Body>(cell: CellRef<'_, B>, ptr: NonNull<Header>) -> RunResult {
    match cancel_once(cell, ptr) {
        (Poll::Ready(error), _) => complete(cell, ptr, Err(error)),
        // A destructor yielded while the coroutine unwinds: requeue it as running.
        (Poll::Pending, true) => return RunResult::Yielded,
        (Poll::Pending, false) => return after_pending(cell, ptr, true),
    }
    RunResult::Done
}

/// One attempt to cancel the body: `Ready` with the error to complete with; and whether it
/// yielded (`corio::yield_now` in a destructor of an unwinding coroutine).
fn cancel_once<B: Body>(cell: CellRef<'_, B>, ptr: NonNull<Header>) -> (Poll<JoinError>, bool) {
    // SAFETY: `ptr` is the task's own pointer, alive while the caller holds its reference.
    let task = unsafe { TaskRef::new(ptr) };
    cancel_in_task(task, &mut |cx| {
        // SAFETY: RUNNING gives this thread the stage.
        match unsafe { &mut *cell.core.stage.get() } {
            Stage::Running(body) => {
                let poll = body.poll_cancel(task, cx);
                let yielded = poll.is_pending() && body.take_yielded();
                (poll, yielded)
            }
            _ => unreachable!("corio: cancelled a task whose body is gone"),
        }
    })
}

/// One cancel of a body: `Ready` once it is gone (with a destructor's panic, if any), and
/// whether it yielded ([`Body::poll_cancel`], [`Body::take_yielded`]).
type CancelStep<'a> = dyn FnMut(&mut Context<'_>) -> (Poll<Option<Payload>>, bool) + 'a;

/// The part of [`cancel_once`] that does not depend on the task's type (compiled once):
/// `cancel` runs in the task's context, with its waker, and its panic becomes the error.
fn cancel_in_task(task: TaskRef<'_>, cancel: &mut CancelStep<'_>) -> (Poll<JoinError>, bool) {
    // Cancelling resumes a started coroutine to unwind its stack: on its home thread only
    // (issue 7 item 3), checked in release builds too.
    super::stackful::assert_on_home_thread(&task);
    let waker = waker_ref(task);
    let mut cx = Context::from_waker(&waker);
    let (poll, yielded) = {
        let _running = context::enter_task(task);
        cancel(&mut cx)
    };
    let poll = poll.map(|panic| match panic {
        None => JoinError::cancelled(task.id),
        Some(payload) => JoinError::from_payload(task.id, payload),
    });
    (poll, yielded)
}

/// The task's context for the drop of the finished body in `complete`, so that its `Drop`
/// sees `corio::current()` as an aborted task's body does (`tests/task_tokio_suite.rs`,
/// tokio's `task_id_future_destructor_completion`); nothing, at no cost, for a type without
/// drop glue. (An unread output is dropped outside the task: see `complete`.)
#[inline(always)]
fn drop_context<T>(task: TaskRef<'_>) -> Option<context::TaskGuard> {
    if const { mem::needs_drop::<T>() } {
        Some(context::enter_task(task))
    } else {
        None
    }
}

/// Stores the result and completes the task (step 5 of the protocol): the finished body is
/// dropped and the result stored here, where their types are known; [`finish`] does the rest.
fn complete<B: Body>(
    cell: CellRef<'_, B>,
    ptr: NonNull<Header>,
    result: Result<B::Output, JoinError>,
) {
    {
        // The body's drop sees its task as `corio::current()`, as it does when the task is
        // aborted (`poll_cancel` drops it inside the task) and as tokio's does.
        // SAFETY: `ptr` is the task's own pointer, alive while the caller holds its reference.
        let _task = drop_context::<B>(unsafe { TaskRef::new(ptr) });
        // SAFETY: RUNNING gives this thread the stage (a panicking `Drop` is caught there).
        unsafe { drop_stage::<B>(ptr) };
    }
    // SAFETY: as above.
    unsafe { *cell.core.stage.get() = Stage::Finished(result) };
    finish(ptr);
}

/// The rest of [`complete`], once the result is stored: the transition to COMPLETE, the
/// output dropped if nobody will read it or the join waker woken, and the task released. It
/// does not depend on the task's type, so it is compiled once, not once per spawned closure or
/// future type (the vtable reaches the output's drop and the deallocation).
///
/// It may free the task (when the poll's and the list's references are the last): so it takes
/// the task's pointer, not a `&Header`, which would have to stay valid until it returns
/// ([`CellRef`]); `header` is not used after the deallocation.
fn finish(ptr: NonNull<Header>) {
    // SAFETY: the poll's reference keeps the task alive until the last use of `header`,
    // before the deallocation at the end.
    let header = unsafe { ptr.as_ref() };
    // Before COMPLETE is published: whoever sees the task finished (its joiner, `is_finished`)
    // and then spawns a `spread` coroutine sees this one no longer counted.
    if header.spread {
        header.scheduler.shared.spread_done(header);
    }
    let snapshot = header.state.transition_to_complete();
    if !snapshot.is_join_interested() {
        // Nobody will read the output: it is ours to drop. Outside the task, between tasks
        // (docs/soundness.md, "Blocking the worker": a blocking-style call in its `Drop`
        // blocks the thread, as on a plain thread, rather than panic unseen).
        // SAFETY: COMPLETE without JOIN_INTEREST leaves the stage to this thread.
        unsafe { (header.vtable.drop_stage)(ptr) };
    } else if snapshot.is_join_waker_set() {
        // SAFETY: the poll's reference keeps the task alive; `ptr` is the task's pointer.
        let trailer = unsafe { Header::trailer(ptr) };
        // SAFETY: JOIN_WAKER set gives the task side the waker field.
        unsafe { trailer.wake_join() };
        let snapshot = header.state.unset_waker_after_complete();
        if !snapshot.is_join_interested() {
            // The JoinHandle was dropped meanwhile and left the waker to us.
            // SAFETY: we cleared JOIN_WAKER and JOIN_INTEREST is gone: the field is ours.
            unsafe { trailer.set_waker(None) };
        }
    }
    let released = header.scheduler.shared.release(ptr);
    let refs = if released { 2 } else { 1 };
    if header.state.transition_to_terminal(refs) {
        // SAFETY: those were the last references.
        unsafe { (header.vtable.dealloc)(ptr) };
    }
}

/// # Safety
/// `ptr` must be a `Cell<B>` whose stage the caller owns (see `state.rs`).
pub(crate) unsafe fn drop_stage<B: Body>(ptr: NonNull<Header>) {
    // SAFETY: the caller's ownership of the stage keeps the cell alive.
    let cell = unsafe { CellRef::<B>::new(ptr) };
    // SAFETY: per the caller, the stage is ours; a panicking `Drop` is caught.
    discard(catch_unwind(AssertUnwindSafe(|| unsafe {
        *cell.core.stage.get() = Stage::Consumed;
    })));
}

/// Drops what a `catch_unwind` around a drop caught (`error::drop_payload`: a payload whose
/// own drop panics does not unwind into the scheduler).
fn discard(caught: std::thread::Result<()>) {
    if let Err(payload) = caught {
        super::error::drop_payload(payload);
    }
}

/// # Safety
/// `ptr` must be a `Cell<B>` with no references left.
pub(crate) unsafe fn dealloc<B: Body>(ptr: NonNull<Header>) {
    let cell = ptr.cast::<Cell<B>>();
    // A body or output still inside is dropped here; catch a panicking Drop so that
    // deallocation (often inside a waker) cannot unwind.
    // SAFETY: the cell was written by `Cell::allocate` and nobody refers to it any more.
    discard(catch_unwind(AssertUnwindSafe(|| unsafe {
        std::ptr::drop_in_place(cell.as_ptr())
    })));
    // SAFETY: allocated by `Cell::allocate` with this layout; dropped above.
    unsafe { super::alloc::free(cell.cast(), std::alloc::Layout::new::<Cell<B>>()) };
}

/// # Safety
/// `ptr` must be a `Cell<B>` the caller holds the `JoinHandle` of, and `dst` a
/// `*mut Poll<Result<B::Output, JoinError>>`.
pub(crate) unsafe fn try_read_output<B: Body>(ptr: NonNull<Header>, dst: *mut (), waker: &Waker) {
    // SAFETY: the JoinHandle's reference keeps the cell alive.
    let cell = unsafe { CellRef::<B>::new(ptr) };
    if can_read_output(&cell.header, ptr, waker) {
        // SAFETY: COMPLETE with JOIN_INTEREST gives the JoinHandle the stage.
        let stage = unsafe { mem::replace(&mut *cell.core.stage.get(), Stage::Consumed) };
        let Stage::Finished(result) = stage else {
            panic!("corio: JoinHandle polled after it returned the task's output");
        };
        // SAFETY: the caller passes a pointer to the right Poll type.
        unsafe { *(dst as *mut Poll<Result<B::Output, JoinError>>) = Poll::Ready(result) };
    }
}

/// Whether the output is ready; if not, makes sure `waker` will be woken when it is. (For the
/// `JoinHandle` only.)
fn can_read_output(header: &Header, ptr: NonNull<Header>, waker: &Waker) -> bool {
    let state = &header.state;
    let snapshot = state.load();
    if snapshot.is_complete() {
        return true;
    }
    let res = if snapshot.is_join_waker_set() {
        // SAFETY: reading the waker to compare is allowed to the JoinHandle: the task side
        // only reads it (to wake) and never writes it while JOIN_WAKER is set and the task is
        // not complete.
        if unsafe { Header::trailer(ptr).will_wake(waker) } {
            return false;
        }
        state
            .unset_waker()
            .and_then(|_| set_join_waker(header, ptr, waker))
    } else {
        set_join_waker(header, ptr, waker)
    };
    match res {
        Ok(_) => false,
        Err(snapshot) => {
            debug_assert!(snapshot.is_complete());
            true
        }
    }
}

fn set_join_waker(
    header: &Header,
    ptr: NonNull<Header>,
    waker: &Waker,
) -> Result<super::state::Snapshot, super::state::Snapshot> {
    // SAFETY: the JoinHandle's reference keeps the task alive; `ptr` is the task's pointer.
    let trailer = unsafe { Header::trailer(ptr) };
    // SAFETY: JOIN_WAKER is clear, so the JoinHandle owns the field.
    unsafe { trailer.set_waker(Some(waker.clone())) };
    let res = header.state.set_join_waker();
    if res.is_err() {
        // SAFETY: the task completed first; the field is still ours.
        unsafe { trailer.set_waker(None) };
    }
    res
}

/// The slow path of dropping a `JoinHandle` (any task type).
///
/// # Safety
/// `ptr` must be a task whose `JoinHandle` (and its reference) the caller gives up.
pub(crate) unsafe fn drop_join_handle_slow(ptr: NonNull<Header>) {
    // SAFETY: the JoinHandle's reference keeps the task alive.
    let header = unsafe { ptr.as_ref() };
    let t = header.state.transition_to_join_handle_dropped();
    if t.drop_output {
        // SAFETY: COMPLETE with the JoinHandle gone leaves the output to us.
        unsafe { (header.vtable.drop_stage)(ptr) };
    }
    if t.drop_waker {
        // SAFETY: the transition gave us the waker field.
        unsafe { Header::trailer(ptr).set_waker(None) };
    }
    drop_reference(ptr);
}

/// Who is shutting a task down, and so what it may do with it (`harness::shutdown`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShutdownMode {
    /// The task's home worker (or, for a task that is not pinned, anyone): cancel it here.
    Here,
    /// A thread that is not known to be the task's home (the thread dropping the runtime):
    /// cancel it here unless it turns out to be a started pinned coroutine, which is handed
    /// back as `Yielded` for its home worker to cancel.
    UnlessPinned,
    /// Complete it without running anything more (its stack and destructors are leaked).
    Leak,
}

/// # Safety
/// `ptr` must be a `Cell<B>` and the caller gives up one reference. A started pinned
/// coroutine must be shut down with `Here` only on its home worker. On `Yielded` the caller's
/// reference became a `Running`'s, which it must queue on the task's home worker.
///
/// Cancels the task if it is idle (a coroutine may block while it unwinds: it then waits to be
/// woken, and the worker's shutdown drain runs it). With `Leak`, a task that still has a body
/// (a coroutine that kept blocking through the shutdown grace period) is completed without
/// running anything more: its body is leaked, so its stack is never reused and its remaining
/// destructors never run.
///
/// With `UnlessPinned` the home is read *after* the transition is won: a worker may have
/// started the coroutine between the caller choosing it (as not yet started) and here, and
/// the transition (AcqRel, pairing with the worker's `transition_to_idle`) makes the home it
/// stored visible. Owning the task as RUNNING keeps it from starting now.
pub(crate) unsafe fn shutdown<B: Body>(ptr: NonNull<Header>, mode: ShutdownMode) -> RunResult {
    // SAFETY: the caller's reference keeps the cell alive.
    let cell = unsafe { CellRef::<B>::new(ptr) };
    if !cell.header.state.transition_to_shutdown() {
        // Running or complete: whoever runs it sees CANCELLED.
        drop_reference(ptr);
        return RunResult::Done;
    }
    // We own the task as if we had set RUNNING; the caller's reference stands in for the
    // poll's.
    match mode {
        ShutdownMode::UnlessPinned if cell.header.pinned_home().is_some() => RunResult::Yielded,
        ShutdownMode::Here | ShutdownMode::UnlessPinned => cancel_running(cell, ptr),
        ShutdownMode::Leak => {
            leak_running(cell, ptr);
            RunResult::Done
        }
    }
}

/// Completes a task this thread owns as RUNNING without running its body again: the body (a
/// coroutine's stack, with whatever destructors are left on it) is leaked.
fn leak_running<B: Body>(cell: CellRef<'_, B>, ptr: NonNull<Header>) {
    report_leak(&cell.header);
    // SAFETY: RUNNING gives this thread the stage.
    mem::forget(unsafe { mem::replace(&mut *cell.core.stage.get(), Stage::Consumed) });
    complete(cell, ptr, Err(JoinError::cancelled(cell.header.id)));
}

#[cold]
fn report_leak(header: &Header) {
    eprintln!(
        "corio: task {} kept blocking while being cancelled at shutdown; leaking its stack \
         (its remaining destructors do not run)",
        header.id
    );
    header.scheduler.shared.note_leaked_task(header);
}

/// # Safety
/// `ptr` must be a `Cell<B>` with RUNNING owned by the caller (a `Running`), and the caller
/// gives up the poll's reference. Unless `leak`, the caller must be the task's home worker.
pub(crate) unsafe fn shutdown_running<B: Body>(ptr: NonNull<Header>, leak: bool) {
    // SAFETY: the caller's reference keeps the cell alive; we own it as RUNNING.
    let cell = unsafe { CellRef::<B>::new(ptr) };
    if leak {
        leak_running(cell, ptr);
        return;
    }
    // A yielded coroutine dropped unrun (its worker exits): cancel it here, and if it keeps
    // yielding or blocking, leak it rather than loop.
    for _ in 0..SHUTDOWN_CANCEL_ATTEMPTS {
        if let (Poll::Ready(error), _) = cancel_once(cell, ptr) {
            complete(cell, ptr, Err(error));
            return;
        }
    }
    leak_running(cell, ptr);
}
