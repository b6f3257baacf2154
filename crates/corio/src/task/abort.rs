//! `AbortHandle`: the right to cancel a task, without the right to its output.
//!
//! It holds one count of the task's reference count (as a waker does), so the header stays
//! alive while the handle does; cancelling goes through the state word exactly as
//! `JoinHandle::abort` does (`abort_task`).

use std::fmt;
use std::ptr::NonNull;

use super::core::Header;
use super::raw::{Notified, drop_reference};

/// Cancels a task from a shared reference to it: marks it cancelled and, if it was idle,
/// schedules it so that a worker (its home worker, for a started coroutine) cancels it.
pub(crate) fn abort_task(raw: NonNull<Header>) {
    // The caller may be a preemptible coroutine's own code: not preempted while the task is
    // queued (`schedule_local` borrows the worker's core, which the loop borrows again when the
    // preempted coroutine comes back to it; `runtime/preempt.rs`, "The rule"), as a waker's
    // wake is not.
    let _no_preempt = crate::runtime::preempt::guard();
    // SAFETY: the caller holds a reference to the task.
    let header = unsafe { raw.as_ref() };
    if header.state.transition_to_notified_and_cancel() {
        // SAFETY: the transition took a reference for this Notified.
        header
            .scheduler
            .shared
            .schedule(unsafe { Notified::from_raw(raw) });
    }
}

/// Cancels a task it does not own the output of; from [`JoinHandle::abort_handle`] or
/// [`JoinSet::spawn`](crate::JoinSet::spawn). Cloning it is cheap; dropping it does nothing
/// to the task.
///
/// [`JoinHandle::abort_handle`]: crate::JoinHandle::abort_handle
///
/// ```
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let h = corio::go(|| corio::sleep(std::time::Duration::from_secs(60)));
///     let abort = h.abort_handle();
///     std::thread::spawn(move || abort.abort()).join().unwrap();
///     assert!(h.join().unwrap_err().is_cancelled());
/// });
/// ```
pub struct AbortHandle {
    raw: NonNull<Header>,
}

// SAFETY: the handle only touches the task through its thread-safe state word and scheduler.
unsafe impl Send for AbortHandle {}
// SAFETY: as above; every method takes `&self` and is thread-safe.
unsafe impl Sync for AbortHandle {}

// Unwind safety, as `JoinHandle`'s (see there).
impl std::panic::UnwindSafe for AbortHandle {}
impl std::panic::RefUnwindSafe for AbortHandle {}

impl AbortHandle {
    /// # Safety
    /// `raw` must be a live task, and the caller gives one of its references to the handle.
    pub(crate) unsafe fn from_raw(raw: NonNull<Header>) -> AbortHandle {
        AbortHandle { raw }
    }

    fn header(&self) -> &Header {
        // SAFETY: the handle holds a reference.
        unsafe { self.raw.as_ref() }
    }

    /// Cancels the task, as [`JoinHandle::abort`](crate::JoinHandle::abort).
    pub fn abort(&self) {
        abort_task(self.raw);
    }

    /// Whether the task has finished (returned, panicked or been cancelled).
    pub fn is_finished(&self) -> bool {
        self.header().state.load().is_complete()
    }

    /// The task's id.
    pub fn id(&self) -> u64 {
        self.header().id
    }
}

impl Clone for AbortHandle {
    fn clone(&self) -> AbortHandle {
        self.header().state.ref_inc();
        AbortHandle { raw: self.raw }
    }
}

impl Drop for AbortHandle {
    fn drop(&mut self) {
        drop_reference(self.raw);
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle")
            .field("id", &self.id())
            .finish()
    }
}
