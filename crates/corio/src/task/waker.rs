//! A task's `Waker`: one reference to the task; waking submits it to its scheduler.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::NonNull;
use std::task::{RawWaker, RawWakerVTable, Waker};

use super::core::Header;
use super::raw::{Notified, drop_reference};
use super::state::{TransitionToNotifiedByRef, TransitionToNotifiedByVal};

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

/// Whether `waker` is a corio task's: its clone and drop are a reference count, never user
/// code (what `chan` needs to clone a waker under a channel lock).
#[inline]
pub(crate) fn is_task_waker(waker: &Waker) -> bool {
    std::ptr::eq(waker.vtable(), &VTABLE)
}

/// A `Waker` borrowed from a task without taking a reference, for the duration of a poll.
pub(crate) struct WakerRef<'a> {
    waker: ManuallyDrop<Waker>,
    _task: PhantomData<&'a Header>,
}

impl Deref for WakerRef<'_> {
    type Target = Waker;
    fn deref(&self) -> &Waker {
        &self.waker
    }
}

/// The task's waker, valid while `header` is borrowed.
pub(crate) fn waker_ref(header: &Header) -> WakerRef<'_> {
    WakerRef {
        // SAFETY: the `WakerRef` borrows `header`, so the task outlives the waker.
        waker: unsafe { unowned_waker(header) },
        _task: PhantomData,
    }
}

/// The task's waker without a reference of its own: (header pointer, static vtable), the same
/// value as every [`waker_ref`] of this task. It is never dropped, and clones take a reference.
///
/// # Safety
///
/// The waker must not be used after the task is deallocated: keep it inside the task's cell
/// (a stackful task's context does, so that it outlives every resume of its coroutine) or in
/// a borrow of the task.
pub(crate) unsafe fn unowned_waker(header: &Header) -> ManuallyDrop<Waker> {
    let raw = RawWaker::new(std::ptr::from_ref(header).cast(), &VTABLE);
    // SAFETY: the vtable's functions uphold RawWaker's contract for a task pointer; the
    // ManuallyDrop means no reference is dropped for this borrowed waker, and clones take one;
    // the caller keeps the task alive while the waker is used.
    ManuallyDrop::new(unsafe { Waker::from_raw(raw) })
}

fn header<'a>(ptr: *const ()) -> &'a Header {
    // SAFETY: every waker built here points to a live task header it holds a reference to.
    unsafe { &*ptr.cast::<Header>() }
}

fn nonnull(ptr: *const ()) -> NonNull<Header> {
    // SAFETY: waker data pointers are task headers, never null.
    unsafe { NonNull::new_unchecked(ptr.cast_mut().cast()) }
}

unsafe fn clone(ptr: *const ()) -> RawWaker {
    header(ptr).state.ref_inc();
    RawWaker::new(ptr, &VTABLE)
}

unsafe fn wake(ptr: *const ()) {
    // Scheduling touches the worker's run queue: not to be preempted half-way.
    let _no_preempt = crate::runtime::preempt::guard();
    let header = header(ptr);
    match header.state.transition_to_notified_by_val() {
        TransitionToNotifiedByVal::DoNothing => {}
        TransitionToNotifiedByVal::Submit => {
            // SAFETY: the waker's reference became a Notified's.
            header
                .scheduler
                .shared
                .schedule_woken(unsafe { Notified::from_raw(nonnull(ptr)) });
        }
        TransitionToNotifiedByVal::Dealloc => {
            // SAFETY: the waker held the last reference.
            unsafe { (header.vtable.dealloc)(nonnull(ptr)) }
        }
    }
}

unsafe fn wake_by_ref(ptr: *const ()) {
    let _no_preempt = crate::runtime::preempt::guard();
    let header = header(ptr);
    if header.state.transition_to_notified_by_ref() == TransitionToNotifiedByRef::Submit {
        // SAFETY: the transition took a reference for the Notified.
        header
            .scheduler
            .shared
            .schedule(unsafe { Notified::from_raw(nonnull(ptr)) });
    }
}

unsafe fn drop_waker(ptr: *const ()) {
    let _no_preempt = crate::runtime::preempt::guard();
    drop_reference(nonnull(ptr));
}
