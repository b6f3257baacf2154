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

fn poll_join<T>(handle: &mut JoinHandle<T>, waker: &Waker) -> Poll<Result<T, crate::JoinError>> {
    Pin::new(handle).poll(&mut Context::from_waker(waker))
}

#[test]
fn a_task_woken_through_its_stored_waker_runs_again_and_its_output_is_joined() {
    let shared = shared();
    let door = Arc::new(Door::default());
    let body = {
        let door = door.clone();
        async move {
            door.pass().await;
            vec![7_u64; 3]
        }
    };
    let mut handle = spawn_stackless(&shared, body, None);
    assert_eq!(run_queued(&shared), 1);

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
    let door = Arc::new(Door::default());
    let body = {
        let door = door.clone();
        async move {
            door.pass().await;
            String::from("done")
        }
    };
    let handle = spawn_stackless(&shared, body, None);
    assert_eq!(run_queued(&shared), 1);
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
    let door = Arc::new(Door::default());
    let dropped = Arc::new(AtomicBool::new(false));
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let body = {
        let door = door.clone();
        let guard = SetOnDrop(dropped.clone());
        async move {
            let _guard = guard;
            door.pass().await;
        }
    };
    let mut handle = spawn_stackless(&shared, body, None);
    assert_eq!(run_queued(&shared), 1);

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
