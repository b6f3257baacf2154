//! The task harness driven by hand on a runtime's shared state with no thread started: a
//! stackless task is spawned, run from the global queue, woken through the waker it stored,
//! cancelled and joined, here, on the test's thread.
//!
//! For Miri. A stackful task cannot run under it (its switch is assembly), but every other
//! part of a task's life can: the references and their counts, the wakers, the trailer's join
//! waker, the owned-tasks list and the deallocation. Under Stacked Borrows, each pointer the
//! harness reaches a task's body or trailer through must carry the whole task's provenance
//! (`Cell::allocate`'s block), not only its header's: a pointer rebuilt from a `&Header`
//! covers the header's bytes alone, and reaching the body through it is undefined behaviour
//! that these tests make Miri report (docs/soundness.md, "Task pointers").

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use crate::runtime::Shared;
use crate::runtime::spawn::spawn_stackless;
use crate::task::JoinHandle;

/// A runtime's shared state with one worker and no thread: tasks are run by [`run_queued`].
fn shared() -> Arc<Shared> {
    let config = crate::Runtime::builder()
        .workers(1)
        .config()
        .expect("a one-worker config");
    Shared::new(config).expect("the runtime's shared state")
}

/// Runs every task in the global queue, as a worker would; how many it ran.
fn run_queued(shared: &Shared) -> usize {
    let mut ran = 0;
    while let Some(task) = shared.inject.pop() {
        assert_eq!(
            task.run(),
            crate::task::core::RunResult::Done,
            "a stackless task never yields as RUNNING"
        );
        ran += 1;
    }
    ran
}

/// A door a task waits at: its poll stores the task's waker until the door opens.
#[derive(Default)]
struct Door {
    open: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Door {
    async fn pass(&self) {
        poll_fn(|cx| {
            if self.open.load(Ordering::Acquire) {
                return Poll::Ready(());
            }
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        })
        .await;
    }

    /// Opens the door and hands back the waker the task left (the caller wakes or drops it).
    fn open(&self) -> Waker {
        self.open.store(true, Ordering::Release);
        self.waker
            .lock()
            .unwrap()
            .take()
            .expect("the task waits at the door")
    }
}

/// A waker that counts its wakes: the join handle's, polled from the test.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Spawns a task that waits at a new door and then returns `output`, and runs it up to the
/// door.
fn spawn_at_door<T: Send + 'static>(shared: &Arc<Shared>, output: T) -> (Arc<Door>, JoinHandle<T>) {
    let door = Arc::new(Door::default());
    let body = {
        let door = door.clone();
        async move {
            door.pass().await;
            output
        }
    };
    let handle = spawn_stackless(shared, body, None);
    assert_eq!(run_queued(shared), 1);
    (door, handle)
}

fn poll_join<T>(handle: &mut JoinHandle<T>, waker: &Waker) -> Poll<Result<T, crate::JoinError>> {
    Pin::new(handle).poll(&mut Context::from_waker(waker))
}

#[test]
fn a_task_woken_through_its_stored_waker_runs_again_and_its_output_is_joined() {
    let shared = shared();
    let (door, mut handle) = spawn_at_door(&shared, vec![7_u64; 3]);

    let join = Arc::new(Count::default());
    let join_waker = Waker::from(join.clone());
    assert!(poll_join(&mut handle, &join_waker).is_pending());

    // Woken by value: the stored waker's reference becomes the queue's.
    door.open().wake();
    assert_eq!(run_queued(&shared), 1);
    assert_eq!(
        join.0.load(Ordering::SeqCst),
        1,
        "completion wakes the join waker"
    );
    match poll_join(&mut handle, &join_waker) {
        Poll::Ready(Ok(output)) => assert_eq!(output, vec![7, 7, 7]),
        other => panic!("expected the output, got {:?}", other.map(|r| r.is_ok())),
    }
    assert_eq!(
        shared.owned.len(),
        0,
        "a completed task leaves the owned list"
    );
}

#[test]
fn a_task_woken_by_reference_and_freed_by_its_last_waker() {
    let shared = shared();
    let (door, handle) = spawn_at_door(&shared, String::from("done"));
    drop(handle); // nobody will join: the output is dropped at completion

    let waker = door.open();
    waker.wake_by_ref();
    assert_eq!(run_queued(&shared), 1);
    assert_eq!(shared.owned.len(), 0);
    // The waker holds the last reference: its drop frees the task.
    drop(waker);
}

#[test]
fn a_task_collected_for_shutdown_is_cancelled_and_its_join_reports_it() {
    let shared = shared();
    let dropped = Arc::new(AtomicBool::new(false));
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    // The body holds the guard (its output) while it waits at the door.
    let (door, mut handle) = spawn_at_door(&shared, SetOnDrop(dropped.clone()));

    let tasks = shared.owned.close_and_collect(|_| true);
    assert_eq!(tasks.len(), 1);
    for task in tasks {
        assert_eq!(task.shutdown(), crate::task::core::RunResult::Done);
    }
    assert!(
        dropped.load(Ordering::SeqCst),
        "the cancelled body was dropped"
    );
    let join_waker = Waker::from(Arc::new(Count::default()));
    match poll_join(&mut handle, &join_waker) {
        Poll::Ready(Err(error)) => assert!(error.is_cancelled()),
        other => panic!(
            "expected a cancellation, got {:?}",
            other.map(|r| r.is_ok())
        ),
    }
    // The waker the task left holds a reference of its own: waking it now does nothing.
    door.open().wake();
    assert_eq!(run_queued(&shared), 0);
}

// ---- review additions (2026-12-07) ----

/// A task whose JoinHandle is dropped before it ever runs completes on its first poll: the
/// poll's reference and the owned list's are the last two, so `finish` deallocates the task
/// from inside the harness (while `poll_running`/`end_poll`/`complete` hold `&Cell<B>` and
/// `finish` holds `&Header` as arguments).
#[test]
fn review_a_detached_task_is_freed_by_its_own_completion() {
    let shared = shared();
    let handle = spawn_stackless(&shared, async { String::from("unread") }, None);
    drop(handle);
    assert_eq!(run_queued(&shared), 1);
    assert_eq!(shared.owned.len(), 0);
}

/// As above, but the task waited first and was woken by value (its waker's reference became
/// the poll's), so the completing poll frees it.
#[test]
fn review_a_detached_task_woken_by_value_is_freed_by_its_completion() {
    let shared = shared();
    let (door, handle) = spawn_at_door(&shared, ());
    drop(handle);
    door.open().wake();
    assert_eq!(run_queued(&shared), 1);
    assert_eq!(shared.owned.len(), 0);
}

/// `JoinHandle::abort` on an idle task: the abort queues it, the run cancels it, the join
/// reports the cancellation; the waker it left then holds the last reference but one.
#[test]
fn review_join_handle_abort_cancels_an_idle_task() {
    let shared = shared();
    let (door, mut handle) = spawn_at_door(&shared, ());
    handle.abort();
    assert_eq!(run_queued(&shared), 1);
    let join_waker = Waker::from(Arc::new(Count::default()));
    match poll_join(&mut handle, &join_waker) {
        Poll::Ready(Err(error)) => assert!(error.is_cancelled()),
        other => panic!(
            "expected a cancellation, got {:?}",
            other.map(|r| r.is_ok())
        ),
    }
    drop(handle);
    drop(door.open()); // the last reference: frees the task
}

/// An `AbortHandle` aborts a task whose JoinHandle is gone: the cancelling run frees the task
/// only if the door's waker is gone too, so drop that first.
#[test]
fn review_abort_handle_on_a_detached_task_frees_it_in_the_cancelling_run() {
    let shared = shared();
    let (door, handle) = spawn_at_door(&shared, ());
    let abort = handle.abort_handle();
    drop(handle);
    drop(door.open()); // the waker's reference goes
    abort.abort();
    drop(abort);
    assert_eq!(run_queued(&shared), 1); // cancels, completes and frees it
    assert_eq!(shared.owned.len(), 0);
}

/// A task collected for shutdown with its JoinHandle gone: `Task::shutdown` cancels and frees
/// it (inside `cancel_running`/`complete`/`finish`).
#[test]
fn review_a_detached_task_collected_for_shutdown_is_freed_by_it() {
    let shared = shared();
    let (door, handle) = spawn_at_door(&shared, ());
    drop(handle);
    drop(door.open());
    let tasks = shared.owned.close_and_collect(|_| true);
    assert_eq!(tasks.len(), 1);
    for task in tasks {
        assert_eq!(task.shutdown(), crate::task::core::RunResult::Done);
    }
}

/// The waker is cloned and woken (by reference, then by value) on another thread, and the
/// join waker is woken there too as the task completes on this one.
#[test]
fn review_a_waker_cloned_and_woken_on_another_thread() {
    let shared = shared();
    let (door, mut handle) = spawn_at_door(&shared, 42_u32);
    let join = Arc::new(Count::default());
    let join_waker = Waker::from(join.clone());
    assert!(poll_join(&mut handle, &join_waker).is_pending());
    let waker = door.open();
    std::thread::spawn(move || {
        let again = waker.clone();
        waker.wake_by_ref();
        drop(waker);
        again.wake();
    })
    .join()
    .unwrap();
    assert_eq!(run_queued(&shared), 1);
    assert_eq!(join.0.load(Ordering::SeqCst), 1);
    match poll_join(&mut handle, &join_waker) {
        Poll::Ready(Ok(v)) => assert_eq!(v, 42),
        other => panic!("expected the output, got {:?}", other.map(|r| r.is_ok())),
    }
}

/// The JoinHandle is polled (setting the join waker), then dropped before completion: the
/// task side drops the join waker and the output.
#[test]
fn review_a_join_handle_dropped_after_it_set_its_waker() {
    let shared = shared();
    let (door, mut handle) = spawn_at_door(&shared, vec![1_u8; 5]);
    let join = Arc::new(Count::default());
    assert!(poll_join(&mut handle, &Waker::from(join.clone())).is_pending());
    drop(handle);
    door.open().wake();
    assert_eq!(run_queued(&shared), 1);
    assert_eq!(join.0.load(Ordering::SeqCst), 0);
    assert_eq!(Arc::strong_count(&join), 1, "the join waker was dropped");
}

/// `RelaySlot`: a relay is reused only while alive and only for a waker it wakes; a relay
/// dropped (woken by value) or made for another waker is replaced by a fresh one, and no
/// clone of the other executor's waker outlives the relays.
#[test]
fn review_relay_slot_reuses_only_a_live_relay_of_the_same_waker() {
    use crate::task::waker::RelaySlot;
    let a = Arc::new(Count::default());
    let b = Arc::new(Count::default());
    // Static-vtable wakers: `Waker::from(Arc<impl Wake>)`'s clone has another vtable address
    // under Miri (std builds the vtable as two promoted constants), so `will_wake` says no.
    let (wa, wb) = (static_count_waker(&a), static_count_waker(&b));
    let mut slot = RelaySlot::default();
    let r1 = slot.lock_safe(&wa).into_owned();
    assert_eq!(Arc::strong_count(&a), 3);
    let again = slot.lock_safe(&wa).into_owned();
    assert!(
        again.will_wake(&r1),
        "a live relay of the same waker is reused"
    );
    assert_eq!(Arc::strong_count(&a), 3, "no new clone");
    let rb = slot.lock_safe(&wb).into_owned();
    assert!(!rb.will_wake(&r1), "another waker gets its own relay");
    rb.wake_by_ref();
    assert_eq!(
        (a.0.load(Ordering::SeqCst), b.0.load(Ordering::SeqCst)),
        (0, 1)
    );
    let ra = slot.lock_safe(&wa).into_owned();
    assert!(!ra.will_wake(&r1), "the slot now remembers b's relay only");
    drop((r1, again, rb));
    assert_eq!(Arc::strong_count(&b), 2, "b's relay is gone");
    ra.wake(); // by value: the relay's last count
    assert_eq!(a.0.load(Ordering::SeqCst), 1);
    assert_eq!(Arc::strong_count(&a), 2, "a's relays are gone");
    let fresh = slot.lock_safe(&wa).into_owned();
    assert_eq!(
        Arc::strong_count(&a),
        3,
        "a dead relay is replaced by a fresh one"
    );
    fresh.wake();
    assert_eq!(a.0.load(Ordering::SeqCst), 2);
    // A corio task's waker is used as it is.
    let shared = shared();
    let (door, mut handle) = spawn_at_door(&shared, ());
    let task_waker = door.open();
    assert!(matches!(
        slot.lock_safe(&task_waker),
        std::borrow::Cow::Borrowed(_)
    ));
    task_waker.wake();
    assert_eq!(run_queued(&shared), 1);
    assert!(poll_join(&mut handle, &wa).is_ready());
}

/// The relay a slot remembers is woken, dropped and upgraded on different threads at once (a
/// wait list's owner waking it while the future is polled again): every wake reaches the
/// waker and no clone of it is kept at the end.
#[test]
fn review_relay_slot_upgrade_races_the_wake_on_another_thread() {
    use crate::task::waker::RelaySlot;
    let rounds = if cfg!(miri) { 20 } else { 2000 };
    let a = Arc::new(Count::default());
    let wa = static_count_waker(&a);
    let stored: Arc<Mutex<Option<Waker>>> = Arc::default();
    let waker_side = {
        let stored = stored.clone();
        std::thread::spawn(move || {
            let mut woken = 0;
            while woken < rounds {
                let taken = stored.lock().unwrap().take();
                if let Some(w) = taken {
                    w.wake();
                    woken += 1;
                } else {
                    std::thread::yield_now();
                }
            }
        })
    };
    let mut slot = RelaySlot::default();
    let mut stored_count = 0;
    while stored_count < rounds {
        let relay = slot.lock_safe(&wa);
        let mut list = stored.lock().unwrap();
        if list.is_none() {
            *list = Some(relay.clone().into_owned());
            stored_count += 1;
        }
        drop(list);
        drop(relay);
        std::thread::yield_now();
    }
    waker_side.join().unwrap();
    assert_eq!(a.0.load(Ordering::SeqCst), rounds);
    assert_eq!(Arc::strong_count(&a), 2, "a clone of the waker is kept");
}

/// A waker of `count` with one static vtable (clones keep the vtable's address).
fn static_count_waker(count: &Arc<Count>) -> Waker {
    use std::task::{RawWaker, RawWakerVTable};
    static VT: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop);
    unsafe fn clone(p: *const ()) -> RawWaker {
        // SAFETY: `p` is an `Arc<Count>` the waker holds a count of.
        unsafe { Arc::increment_strong_count(p.cast::<Count>()) };
        RawWaker::new(p, &VT)
    }
    unsafe fn wake(p: *const ()) {
        // SAFETY: as above; the count is given up.
        let c = unsafe { Arc::from_raw(p.cast::<Count>()) };
        c.0.fetch_add(1, Ordering::SeqCst);
    }
    unsafe fn wake_by_ref(p: *const ()) {
        // SAFETY: as above.
        unsafe { &*p.cast::<Count>() }
            .0
            .fetch_add(1, Ordering::SeqCst);
    }
    unsafe fn drop(p: *const ()) {
        // SAFETY: as above; the count is given up.
        std::mem::drop(unsafe { Arc::from_raw(p.cast::<Count>()) });
    }
    let raw = RawWaker::new(Arc::into_raw(count.clone()).cast(), &VT);
    // SAFETY: the vtable keeps the `Arc` count contract.
    unsafe { Waker::from_raw(raw) }
}

/// A detached task woken by value on another thread while this one runs it to completion as
/// soon as it is queued: the completion frees the task and, as it held the last count of its
/// anchor (spawned with no `Runtime` alive, as through a `Handle` after the runtime's drop,
/// it took an anchor of its own), the anchor too, possibly while the waking thread is still
/// in the scheduler's call that queued it. That call must not hold a reference into either
/// (docs/soundness.md, "Task pointers"). Repeated, so that Miri's thread scheduler tries
/// several interleavings.
#[test]
fn a_task_woken_by_value_may_be_freed_before_the_wake_returns() {
    let shared = shared();
    let rounds = if cfg!(miri) { 20 } else { 1_000 };
    for _ in 0..rounds {
        let (door, handle) = spawn_at_door(&shared, ());
        drop(handle);
        let waker = door.open();
        let waking = std::thread::spawn(move || waker.wake());
        while run_queued(&shared) == 0 {
            std::thread::yield_now();
        }
        waking.join().unwrap();
        assert_eq!(shared.owned.len(), 0);
    }
}
