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

use super::core::{Header, Kind};

/// A task that must be run: it has `NOTIFIED` set and this reference is the one that will
/// run it.
pub(crate) struct Notified(NonNull<Header>);

/// The owned-tasks list's reference.
pub(crate) struct Task(NonNull<Header>);

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

    /// Runs the task once; consumes this reference.
    pub(crate) fn run(self) {
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

    /// Cancels the task for shutdown: if it is idle, the caller's thread cancels it now.
    pub(crate) fn shutdown(self) {
        let ptr = self.0;
        std::mem::forget(self);
        // SAFETY: we hand the vtable our reference.
        unsafe { (ptr.as_ref().vtable.shutdown)(ptr) }
    }

    pub(crate) fn kind(&self) -> Kind {
        self.header().kind
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
