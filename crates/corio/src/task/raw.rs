//! Typed references to a task. Each owns one count of the state word's reference count.
//!
//! | type | who holds it | what it allows |
//! |---|---|---|
//! | [`Notified`] | a run queue, an inbox, the blocking pool | running the task once |
//! | [`Task`] | the owned-tasks list | shutting the task down |
//! | `JoinHandle` (`join.rs`) | the spawner | reading the output, aborting |
//! | `Waker` (`waker.rs`) | whoever will wake it | notifying it |

use std::fmt;
use std::ptr::NonNull;

use super::core::{Header, RunResult};
use super::harness::ShutdownMode;

/// A task that must be run: it has `NOTIFIED` set and this reference is the one that will
/// run it.
pub(crate) struct Notified(NonNull<Header>);

/// The owned-tasks list's reference.
pub(crate) struct Task(NonNull<Header>);

/// A pinned coroutine that yielded (`corio::yield_now`) and waits in its home worker's pinned
/// queue *still RUNNING*: the reference is its poll's, and no waker was involved. Running it
/// again skips `transition_to_running`; a cancellation that arrived meanwhile is seen by the
/// CANCELLED bit. It exists only on its home worker — or on its way there through the home's
/// inbox, when the thread dropping the runtime won a started coroutine's shutdown transition
/// (`Task::shutdown_unless_pinned`) — and must not be dropped unrun: its Drop cancels the task
/// (which runs destructors on the coroutine's stack, on this thread). Off its home, `leak` it.
pub(crate) struct Running(NonNull<Header>);

// SAFETY: a task's header is Sync (atomics, immutable fields, and cells guarded by the state
// protocol), and bodies are Send; what is pinned to a thread (a started coroutine) is only
// resumed there, which `schedule` guarantees by routing it to its home worker.
unsafe impl Send for Notified {}
// SAFETY: as above.
unsafe impl Send for Task {}
// SAFETY: `Task` only exposes operations that are safe from any thread (shutdown goes through
// the state word).
unsafe impl Sync for Task {}

impl Notified {
    /// # Safety
    /// `ptr` must be a live task and the caller must own one reference with NOTIFIED set.
    pub(crate) unsafe fn from_raw(ptr: NonNull<Header>) -> Notified {
        Notified(ptr)
    }

    pub(crate) fn into_raw(self) -> NonNull<Header> {
        let ptr = self.0;
        std::mem::forget(self);
        ptr
    }

    pub(crate) fn header(&self) -> &Header {
        // SAFETY: we hold a reference, so the task is alive.
        unsafe { self.0.as_ref() }
    }

    /// The task's own pointer (not one rebuilt from [`header`](Self::header): see
    /// `core::TaskRef`).
    pub(crate) fn ptr(&self) -> NonNull<Header> {
        self.0
    }

    /// Runs the task once; consumes this reference (which, on `Yielded`, becomes a
    /// `Running` the caller must queue).
    #[inline]
    pub(crate) fn run(self) -> RunResult {
        let ptr = self.into_raw();
        // SAFETY: the vtable belongs to this task, and we hand it our Notified reference.
        unsafe { (ptr.as_ref().vtable.poll)(ptr) }
    }

    /// Whether a steal may move this task to another worker.
    pub(crate) fn is_movable(&self) -> bool {
        self.header().pinned_home().is_none()
    }
}

impl Drop for Notified {
    fn drop(&mut self) {
        // A queue dropped without running its tasks (shutdown): release the reference.
        drop_reference(self.0);
    }
}

impl fmt::Debug for Notified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Notified(task {})", self.header().id)
    }
}

impl Running {
    /// # Safety
    /// `ptr` must be a task the caller owns as RUNNING (this thread's worker set it, or a
    /// shutdown transition handed it over), and the caller hands over the poll's reference.
    pub(crate) unsafe fn from_raw(ptr: NonNull<Header>) -> Running {
        Running(ptr)
    }

    pub(crate) fn header(&self) -> &Header {
        // SAFETY: we hold a reference.
        unsafe { self.0.as_ref() }
    }

    /// The task's own pointer (see [`Notified::ptr`]).
    pub(crate) fn ptr(&self) -> NonNull<Header> {
        self.0
    }

    /// Runs the task again (see `Notified::run` for the result).
    #[inline]
    pub(crate) fn run(self) -> RunResult {
        let ptr = self.0;
        std::mem::forget(self);
        // SAFETY: the vtable belongs to this task and we hand it the poll's reference.
        unsafe { (ptr.as_ref().vtable.resume_running)(ptr) }
    }

    /// Completes the task without running it again, leaking its stack: for a `Running` that
    /// can no longer reach its home worker (it exited).
    pub(crate) fn leak(self) {
        let ptr = self.0;
        std::mem::forget(self);
        // SAFETY: as in `run`; with `leak` nothing runs on this thread.
        unsafe { (ptr.as_ref().vtable.shutdown_running)(ptr, true) }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // SAFETY: as in `run`: cancelling completes the task and drops our reference (the
        // home-thread check on the cancellation path aborts if this is not its home).
        unsafe { (self.0.as_ref().vtable.shutdown_running)(self.0, false) }
    }
}

impl Task {
    /// # Safety
    /// `ptr` must be a live task and the caller must own one reference.
    pub(crate) unsafe fn from_raw(ptr: NonNull<Header>) -> Task {
        Task(ptr)
    }

    pub(crate) fn header(&self) -> &Header {
        // SAFETY: we hold a reference.
        unsafe { self.0.as_ref() }
    }

    pub(crate) fn header_ptr(&self) -> NonNull<Header> {
        self.0
    }

    /// Cancels the task for shutdown: if it is idle, the caller's thread cancels it now. A
    /// pinned coroutine must be shut down on its home worker, which queues it as `Running` on
    /// `Yielded`.
    pub(crate) fn shutdown(self) -> RunResult {
        self.shutdown_with(ShutdownMode::Here)
    }

    /// Cancels the task for shutdown from a thread that is not its home: as `shutdown`, except
    /// that a coroutine found started and pinned once the transition is won is not cancelled
    /// here. Then the result is `Some(Running)`, which the caller must send to the home worker.
    pub(crate) fn shutdown_unless_pinned(self) -> Option<Running> {
        let ptr = self.0;
        match self.shutdown_with(ShutdownMode::UnlessPinned) {
            RunResult::Done => None,
            // SAFETY: on `Yielded` the transition handed our reference over as RUNNING.
            RunResult::Yielded => Some(unsafe { Running::from_raw(ptr) }),
        }
    }

    /// Completes a task that kept blocking through the shutdown grace period without running
    /// anything more (see `harness::shutdown`).
    pub(crate) fn leak(self) {
        let _ = self.shutdown_with(ShutdownMode::Leak);
    }

    fn shutdown_with(self, mode: ShutdownMode) -> RunResult {
        let ptr = self.0;
        std::mem::forget(self);
        // SAFETY: we hand the vtable our reference.
        unsafe { (ptr.as_ref().vtable.shutdown)(ptr, mode) }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        drop_reference(self.0);
    }
}

/// Drops one reference, deallocating on the last.
pub(crate) fn drop_reference(ptr: NonNull<Header>) {
    // SAFETY: the caller owned a reference, so the header is alive until we drop it.
    let header = unsafe { ptr.as_ref() };
    if header.state.ref_dec() {
        // SAFETY: that was the last reference.
        unsafe { (header.vtable.dealloc)(ptr) }
    }
}
