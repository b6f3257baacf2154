//! A task's `Waker`: one reference to the task; waking submits it to its scheduler.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::{Arc, Weak};
use std::task::{RawWaker, RawWakerVTable, Waker};

use super::core::{Header, TaskRef};
use super::raw::{Notified, drop_reference};
use super::state::{TransitionToNotifiedByRef, TransitionToNotifiedByVal};

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

/// Whether `waker` may be cloned under an internal lock (a channel's, a wait list's): its
/// clone runs no user code — a corio task's waker (a reference count), or a [`relay`].
/// Another executor's waker's `clone` is user code, which may use the very primitive whose
/// lock is held (a spin lock would spin for ever, a `std` mutex deadlock) or panic — the same
/// rule as for a waker's `wake` and `Drop`, which run only after the lock is released
/// (docs/chan.md, "User code outside the lock").
#[inline]
pub(crate) fn clone_is_safe(waker: &Waker) -> bool {
    std::ptr::eq(waker.vtable(), &VTABLE) || std::ptr::eq(waker.vtable(), &RELAY_VTABLE)
}

/// `waker` itself if [`clone_is_safe`], else a [`relay`] to it: made before an internal lock
/// is taken, by an operation that may store its waker under it.
#[inline]
pub(crate) fn lock_safe(waker: &Waker) -> Cow<'_, Waker> {
    if clone_is_safe(waker) {
        Cow::Borrowed(waker)
    } else {
        Cow::Owned(relay(waker))
    }
}

/// A waker that wakes `waker` and whose clone is an `Arc` count: it holds one clone of
/// `waker`, taken here (outside any lock). Its `wake` calls `waker`'s (user code, so only
/// after the lock, as every wake of a stored waker), and its last drop drops `waker` (stored
/// wakers are dropped after the lock too). Only another executor's waker pays for it (an
/// allocation per poll that may wait); a corio task's waker is cloned as it is.
#[cold]
#[inline(never)]
pub(crate) fn relay(waker: &Waker) -> Waker {
    relay_waker(Arc::new(Relay(waker.clone())))
}

/// The waker of `relay`, which owns the count given.
fn relay_waker(relay: Arc<Relay>) -> Waker {
    let raw = RawWaker::new(Arc::into_raw(relay).cast(), &RELAY_VTABLE);
    // SAFETY: the data pointer is an `Arc<Relay>` whose one count the new waker owns, and
    // `RELAY_VTABLE`'s functions keep that contract (`relay_clone` takes a count, `relay_wake`
    // and `relay_drop` give theirs back, `relay_wake_by_ref` borrows it).
    unsafe { Waker::from_raw(raw) }
}

/// Whether `stored`, a waker an operation stored, already wakes `waker`: it `will_wake`s it,
/// or it is a [`relay`] of a waker that does. So another executor that polls again with the
/// same waker needs no new relay (an allocation). Compares pointers only, no user code: it may
/// be called under a lock.
pub(crate) fn wakes(stored: &Waker, waker: &Waker) -> bool {
    if stored.will_wake(waker) {
        return true;
    }
    if !std::ptr::eq(stored.vtable(), &RELAY_VTABLE) {
        return false;
    }
    // SAFETY: a relay waker's data is an `Arc<Relay>` that the waker holds a count of, alive
    // while `stored` is borrowed.
    let relay = unsafe { &*stored.data().cast::<Relay>() };
    relay.0.will_wake(waker)
}

/// A waiting future's [`relay`], recognised across its polls. Another executor that polls the
/// future again with the same waker (a `select`/`join` there re-polls every branch when any
/// one wakes) gets the relay it stored last time back instead of a new one (an allocation per
/// poll); and as the waker the wait list stores is then that same relay, storing it again
/// clones nothing (`will_wake` compares the relay's own pointer). For the wait-list
/// primitives (`sync`, `JoinSet`), whose futures own their state; a channel operation checks
/// its stored waker under its lock instead ([`wakes`]).
///
/// The slot holds the relay weakly: the wait list's copy is the only strong one, so a relay
/// the primitive has woken or dropped (a hand-over, a close) drops the other executor's waker
/// then, as it did when each poll made its own relay, not when the future goes
/// (`tests/sync_tokio_suite.rs`, `close_drops_a_waiters_waker_outside_the_lock`).
#[derive(Default)]
pub(crate) struct RelaySlot(Option<Weak<Relay>>);

impl RelaySlot {
    /// `waker` itself if [`clone_is_safe`], else a relay to it: the one this slot made last, if
    /// the wait list still holds it and it wakes `waker`, else a new one. Call it before the
    /// internal lock is taken, and drop what it returns after the lock is released (the last
    /// count of a relay drops another executor's waker, user code).
    #[inline]
    pub(crate) fn lock_safe<'a>(&mut self, waker: &'a Waker) -> Cow<'a, Waker> {
        if clone_is_safe(waker) {
            return Cow::Borrowed(waker);
        }
        Cow::Owned(self.refresh(waker))
    }

    #[cold]
    #[inline(never)]
    fn refresh(&mut self, waker: &Waker) -> Waker {
        if let Some(kept) = self.0.as_ref().and_then(Weak::upgrade)
            && kept.0.will_wake(waker)
        {
            return relay_waker(kept);
        }
        let relay = Arc::new(Relay(waker.clone()));
        self.0 = Some(Arc::downgrade(&relay));
        relay_waker(relay)
    }
}

/// What a [`relay`] waker holds.
struct Relay(Waker);

static RELAY_VTABLE: RawWakerVTable =
    RawWakerVTable::new(relay_clone, relay_wake, relay_wake_by_ref, relay_drop);

/// # Safety
/// `ptr` is the data of a live relay waker (an `Arc<Relay>` it holds a count of).
unsafe fn relay_clone(ptr: *const ()) -> RawWaker {
    // SAFETY: per the caller, the `Arc` is alive; the clone owns the count taken here.
    unsafe { Arc::increment_strong_count(ptr.cast::<Relay>()) };
    RawWaker::new(ptr, &RELAY_VTABLE)
}

/// # Safety
/// As [`relay_clone`]; the waker's count is given up.
unsafe fn relay_wake(ptr: *const ()) {
    // SAFETY: per the caller: this takes over the waker's count.
    let relay = unsafe { Arc::from_raw(ptr.cast::<Relay>()) };
    relay.0.wake_by_ref();
}

/// # Safety
/// As [`relay_clone`].
unsafe fn relay_wake_by_ref(ptr: *const ()) {
    // SAFETY: per the caller, the `Arc` is alive for this call.
    unsafe { &*ptr.cast::<Relay>() }.0.wake_by_ref();
}

/// # Safety
/// As [`relay_wake`].
unsafe fn relay_drop(ptr: *const ()) {
    // SAFETY: per the caller: the waker's count is given back.
    drop(unsafe { Arc::from_raw(ptr.cast::<Relay>()) });
}

/// A `Waker` borrowed from a task without taking a reference, for the duration of a poll.
pub(crate) struct WakerRef<'a> {
    waker: ManuallyDrop<Waker>,
    _task: PhantomData<TaskRef<'a>>,
}

impl Deref for WakerRef<'_> {
    type Target = Waker;
    fn deref(&self) -> &Waker {
        &self.waker
    }
}

/// The task's waker, valid while the task is borrowed.
pub(crate) fn waker_ref(task: TaskRef<'_>) -> WakerRef<'_> {
    WakerRef {
        // SAFETY: the `WakerRef` borrows the task, so the task outlives the waker.
        waker: unsafe { unowned_waker(task.ptr()) },
        _task: PhantomData,
    }
}

/// The task's waker without a reference of its own: (task pointer, static vtable), the same
/// value as every [`waker_ref`] of this task. It is never dropped, and clones take a reference.
/// `ptr` is the task's own pointer, never one rebuilt from a `&Header`: the waker's clones go
/// into queues as the task's handles, which reach its body (see [`TaskRef`]).
///
/// # Safety
///
/// `ptr` must be a live task's pointer as its handles hold it. The waker must not be used
/// after the task is deallocated: keep it inside the task's cell (a stackful task's context
/// does, so that it outlives every resume of its coroutine) or in a borrow of the task.
pub(crate) unsafe fn unowned_waker(ptr: NonNull<Header>) -> ManuallyDrop<Waker> {
    let raw = RawWaker::new(ptr.as_ptr().cast_const().cast(), &VTABLE);
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
                .runtime_for_handoff()
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
