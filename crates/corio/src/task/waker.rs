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
    let raw = RawWaker::new(std::ptr::from_ref(header).cast(), &VTABLE);
    // SAFETY: the vtable's functions uphold RawWaker's contract for a task pointer; the
    // ManuallyDrop means no reference is dropped for this borrowed waker, and clones take one.
    let waker = unsafe { Waker::from_raw(raw) };
    WakerRef {
        waker: ManuallyDrop::new(waker),
        _task: PhantomData,
    }
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
    let header = header(ptr);
    match header.state.transition_to_notified_by_val() {
        TransitionToNotifiedByVal::DoNothing => {}
        TransitionToNotifiedByVal::Submit => {
            // SAFETY: the waker's reference became a Notified's.
            header
                .scheduler
                .clone()
                .schedule(unsafe { Notified::from_raw(nonnull(ptr)) });
        }
        TransitionToNotifiedByVal::Dealloc => {
            // SAFETY: the waker held the last reference.
            unsafe { (header.vtable.dealloc)(nonnull(ptr)) }
        }
    }
}

unsafe fn wake_by_ref(ptr: *const ()) {
    let header = header(ptr);
    if header.state.transition_to_notified_by_ref() == TransitionToNotifiedByRef::Submit {
        // SAFETY: the transition took a reference for the Notified.
        header
            .scheduler
            .schedule(unsafe { Notified::from_raw(nonnull(ptr)) });
    }
}

unsafe fn drop_waker(ptr: *const ()) {
    drop_reference(nonnull(ptr));
}
