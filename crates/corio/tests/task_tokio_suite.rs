//! tokio 1.54's task tests, ported to corio to find behaviour bugs: `tests/task_join_set.rs`,
//! `task_local.rs`, `task_local_set.rs` (as `spawn_local`/`go_local`), `task_id.rs`,
//! `task_yield_now.rs`, `task_builder.rs`, `task_panic.rs`, `join_handle_panic.rs`,
//! `task_hooks.rs` (only its spawn locations) and the task part of `async_send_sync.rs`.
//!
//! Where tokio's test is async, the port runs in an async task; where it is cheap, the
//! coroutine form runs too. tokio's `task::id()` is `corio::current().id()`, its `oneshot` is
//! `corio::sync::oneshot`, its paused clock is replaced by gates (no timing assertions).
//!
//! Not ported, because corio lacks what the test needs (one line each, with the reason):
//!
//! - join_set `test_with_sleep` (its first half), `join_all`, `task_panics`: no `detach_all`,
//!   no `join_all`.
//! - join_set `extend`: `JoinSet` implements neither `FromIterator` nor `Extend`.
//! - join_set `try_join_next_with_id`: no `*_with_id` methods (tokio_unstable there too).
//! - join_set `spawn_local_on::*` and the `local_set`/`local_runtime` flavours: no `LocalSet`
//!   or local runtime; `spawn_local` runs on the calling worker (ported in that form).
//! - task_local `take_value`, `poll_after_take_value_should_fail`, `get_value`: no
//!   `TaskLocalFuture::take_value`, no `LocalKey::try_get`.
//! - task_local_set `local_current_thread_scheduler`, `localset_future_*`,
//!   `enter_guard_spawn`, `spawn_wakes_localset`, `unstable::*`: no `LocalSet` to drive.
//! - task_local_set `block_in_place_cases::*`: `corio::blocking` is allowed in every task
//!   kind (runtime/blocking.rs docs), so there is no panic to expect; ported as a success.
//! - task_id `task_id_block_in_place_block_on_spawn`: `Runtime::block_on` panics inside any
//!   task (its docs); ported as a coroutine joining a task of a second runtime.
//! - task_builder `spawn_blocking_with_name`, `spawn_blocking_without_name`: the task
//!   `Builder` has no `spawn_blocking`.
//! - task_panic `spawn_panic_caller`: `corio::spawn` outside a runtime uses the default
//!   runtime (lib.rs docs) instead of panicking.
//! - task_panic `local_key_sync_scope_panic_caller`: a scope opened inside `with` is allowed
//!   (nested scopes, task_local.rs); there is no panic to locate.
//! - task_panic `local_set_block_on_panic_caller`: no `LocalSet::block_on`.
//! - task_hooks (every hook and schedule-latency test): no task hooks, only thread hooks.
//! - async_send_sync `LocalSet`, `coop::RestoreOnPending`, `unconstrained`: no such types.
//!
//! Already ported in other files, so not repeated here: join_set `test_abort_on_drop`,
//! `alternating`, `abort_all`, `join_set_coop`, `try_join_next`, `spawn_then_join_next`
//! (rt_join_set.rs, time_tasks_review_contract.rs); task_local `local`,
//! `task_local_available_on_completion_drop` (rt_task_local.rs); task_id collisions, ids
//! matching, `task_try_id_*` (rt_common.rs); task_local_set `drop_cancels_tasks`,
//! `local_threadpool_timer` (rt_local.rs).

#[macro_use]
mod support;

use std::cell::Cell;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use corio::JoinSet;
use corio::sync::oneshot;
use support::{EVENTUALLY, EXPECTED, Gate, payload_text, wait_until, within};

const MS: Duration = Duration::from_millis(1);

/// Waits in a coroutine (sleeping between looks) until `cond` holds; fails after EVENTUALLY.
fn wait_in_coroutine(what: &str, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < EVENTUALLY,
            "timed out waiting until {what}"
        );
        corio::sleep(MS);
    }
}

// ---------------------------------------------------------------------------------------------
// Panic locations (tokio's `support/panic.rs`): a hook records where each panic was raised.
// ---------------------------------------------------------------------------------------------

/// Messages of the misuse panics the location tests cause on purpose: kept off stderr.
const QUIET: &[&str] = &[
    EXPECTED,
    "outside a corio task",
    "task-local value not set",
    "must be called on a runtime worker",
    "inside an async task",
    "called from inside a task",
    "on a cancelled task",
    "no runtime here",
];

/// (message, file) of every panic since the hook was installed.
static PANICS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn install_panic_recorder() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = payload_text(info.payload());
            let file = info
                .location()
                .map(|l| l.file().to_string())
                .unwrap_or_default();
            let quiet = QUIET.iter().any(|q| msg.contains(q));
            PANICS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((msg, file));
            if !quiet {
                previous(info);
            }
        }));
    });
}

/// The file a panic with exactly this message was raised in (the latest such panic).
fn file_of_panic(msg: &str) -> String {
    PANICS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .rev()
        .find(|(m, _)| m == msg)
        .map(|(_, f)| f.clone())
        .unwrap_or_else(|| panic!("no panic recorded with message {msg:?}"))
}

/// Runs `f` on this thread, expects it to panic, and returns (message, file of the panic).
#[track_caller]
fn panic_site(f: impl FnOnce()) -> (String, String) {
    install_panic_recorder();
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    let msg = payload_text(&*payload);
    let file = file_of_panic(&msg);
    (msg, file)
}

/// Where a task's panic was raised, from its `JoinError`.
fn task_panic_site(err: corio::JoinError) -> (String, String) {
    assert!(err.is_panic(), "{err:?}");
    let msg = payload_text(&*err.into_panic());
    let file = file_of_panic(&msg);
    (msg, file)
}

#[track_caller]
fn assert_raised_here((msg, file): (String, String)) {
    assert!(
        file.ends_with("task_tokio_suite.rs"),
        "the panic {msg:?} points into {file}, not at the caller"
    );
}

// ---------------------------------------------------------------------------------------------
// task_join_set.rs
// ---------------------------------------------------------------------------------------------

mod join_set {
    use super::*;

    rt_common! {
        /// tokio `task_join_set.rs` `abort_tasks`: the abort handle `spawn` returns cancels
        /// that member only; the others keep their outputs.
        #[test]
        fn abort_tasks() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let mut set = JoinSet::new();
                    for i in 0..16u32 {
                        let abort = match (i % 2, i % 4) {
                            // Odd members never finish on their own.
                            (1, 1) => set.go(move || {
                                corio::block_on(Gate::new().wait());
                                i
                            }),
                            (1, _) => set.spawn(async move {
                                Gate::new().wait().await;
                                i
                            }),
                            (_, 0) => set.go(move || {
                                corio::sleep(MS * i);
                                i
                            }),
                            _ => set.spawn(async move {
                                corio::time::sleep_async(MS * i).await;
                                i
                            }),
                        };
                        if i % 2 == 1 {
                            abort.abort();
                        }
                    }
                    let (mut completed, mut cancelled) = (Vec::new(), 0);
                    while let Some(res) = set.join_next() {
                        match res {
                            Ok(i) => completed.push(i),
                            Err(e) => {
                                assert!(e.is_cancelled(), "{e}");
                                cancelled += 1;
                            }
                        }
                    }
                    completed.sort();
                    assert_eq!(completed, [0, 2, 4, 6, 8, 10, 12, 14]);
                    assert_eq!(cancelled, 8);
                })
            });
        }

        /// tokio `task_join_set.rs` `spawn_local::*::spawn_then_shutdown`, in a coroutine: local
        /// members (both kinds) that never finish are dropped by `shutdown`, which empties the
        /// set.
        #[test]
        fn spawn_local_then_shutdown() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let mut set = JoinSet::new();
                    let receivers = spawn_pending_locals(&mut set, 8);
                    set.shutdown();
                    assert!(set.is_empty());
                    assert!(set.join_next().is_none());
                    for rx in receivers {
                        assert!(rx.recv().is_err(), "a member's sender was not dropped");
                    }
                })
            });
        }

        /// tokio `task_join_set.rs` `spawn_local::*::spawn_then_shutdown`, in a local async
        /// task with `shutdown_async`.
        #[test]
        fn spawn_local_then_shutdown_async() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    corio::spawn_local(async {
                        let mut set = JoinSet::new();
                        let receivers = spawn_pending_locals(&mut set, 8);
                        set.shutdown_async().await;
                        assert!(set.is_empty());
                        for rx in receivers {
                            assert!(rx.await.is_err(), "a member's sender was not dropped");
                        }
                    })
                    .join()
                    .unwrap();
                })
            });
        }

        /// tokio `task_join_set.rs` `spawn_local::*::spawn_then_drop`: dropping the set aborts
        /// its local members, which drop what they hold on their worker.
        #[test]
        fn spawn_local_then_drop() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let mut set = JoinSet::new();
                    let receivers = spawn_pending_locals(&mut set, 8);
                    drop(set);
                    for rx in receivers {
                        assert!(rx.recv().is_err(), "a member's sender was not dropped");
                    }
                })
            });
        }
    }

    /// Spawns `n` local members (alternately coroutines and futures, each holding an `Rc`) that
    /// never finish and hold a oneshot sender; the receivers say when the senders are dropped.
    fn spawn_pending_locals(set: &mut JoinSet<()>, n: usize) -> Vec<oneshot::Receiver<()>> {
        let mut receivers = Vec::new();
        for i in 0..n {
            let (tx, rx) = oneshot::channel::<()>();
            receivers.push(rx);
            let rc = Rc::new(tx);
            if i % 2 == 0 {
                set.go_local(move || {
                    corio::block_on(Gate::new().wait());
                    drop(rc);
                });
            } else {
                set.spawn_local(async move {
                    Gate::new().wait().await;
                    drop(rc);
                });
            }
        }
        receivers
    }

    /// tokio `task_join_set.rs` `runtime_gone`: members of a set whose runtime was dropped
    /// come back cancelled, joined on another runtime.
    #[test]
    fn runtime_gone() {
        for workers in support::FLAVOURS {
            within(EVENTUALLY, move || {
                let mut set = JoinSet::new();
                {
                    let rt = support::rt(workers);
                    set.spawn_on(
                        async {
                            Gate::new().wait().await;
                            1
                        },
                        rt.handle(),
                    );
                    set.go_on(
                        || {
                            corio::block_on(Gate::new().wait());
                            2
                        },
                        rt.handle(),
                    );
                    drop(rt);
                }
                let other = support::rt(1);
                let results = other.run(move || {
                    let mut out = Vec::new();
                    while let Some(res) = set.join_next() {
                        out.push(res.map_err(|e| e.is_cancelled()));
                    }
                    out
                });
                assert_eq!(results, [Err(true), Err(true)]);
            });
        }
    }

    /// tokio `task_join_set.rs` `spawn_local::panic_outside_any_runtime` and
    /// `panic_in_multi_thread_runtime`: `JoinSet::spawn_local`/`go_local` off a worker panic
    /// with advice, and the set stays empty.
    #[test]
    fn spawn_local_off_a_worker_panics() {
        install_panic_recorder();
        let mut set: JoinSet<()> = JoinSet::new();
        let msg = support::panic_message(|| drop(set.spawn_local(async {})));
        assert!(msg.contains("runtime worker"), "{msg}");
        let msg = support::panic_message(|| drop(set.go_local(|| ())));
        assert!(msg.contains("runtime worker"), "{msg}");
        assert!(set.is_empty());
        let rt = support::rt(2);
        within(EVENTUALLY, move || {
            let msg = support::panic_message(|| {
                rt.block_on(async {
                    let mut set: JoinSet<()> = JoinSet::new();
                    set.spawn_local(async {});
                })
            });
            assert!(msg.contains("runtime worker"), "{msg}");
        });
    }

    /// tokio `task_join_set.rs` `replace_parent_waker_drops_outside_lock`: the set drops the
    /// waiter's waker it replaces after releasing its lock. Here the waker's destructor lets
    /// a member finish and then waits for another task of the one-worker runtime: the worker
    /// must wake the set (take its lock) before it can run that task.
    #[test]
    fn replace_parent_waker_drops_outside_lock() {
        struct DrivesOnDrop {
            handle: corio::Handle,
            gate: Gate,
            member: corio::AbortHandle,
        }
        impl Wake for DrivesOnDrop {
            fn wake(self: Arc<Self>) {}
        }
        impl Drop for DrivesOnDrop {
            fn drop(&mut self) {
                self.gate.open();
                wait_until("the member finished", || self.member.is_finished());
                // The member's completion wakes the set before the worker runs this one.
                self.handle.block_on(self.handle.spawn(async {})).unwrap();
            }
        }
        let rt = support::rt(1);
        within(EVENTUALLY, move || {
            let mut set = JoinSet::new();
            let gate = Gate::new();
            let wait = gate.wait();
            let member = set.spawn_on(
                async move {
                    wait.await;
                    42
                },
                rt.handle(),
            );
            let waker = Waker::from(Arc::new(DrivesOnDrop {
                handle: rt.handle().clone(),
                gate,
                member,
            }));
            assert!(
                set.poll_join_next(&mut Context::from_waker(&waker))
                    .is_pending()
            );
            drop(waker); // the set holds the last reference
            let got = match set.poll_join_next(&mut Context::from_waker(Waker::noop())) {
                Poll::Ready(Some(res)) => res,
                Poll::Ready(None) => panic!("the set lost its member"),
                Poll::Pending => set.try_join_next().expect("the member has finished"),
            };
            assert_eq!(got.unwrap(), 42);
        });
    }
}

// ---------------------------------------------------------------------------------------------
// task_local.rs
// ---------------------------------------------------------------------------------------------

mod task_local {
    use super::*;

    corio::task_local! {
        static KEY: u32;
    }

    /// Sends (once) when first polled; never ready; on drop sends what `KEY` holds then.
    struct PendsAndReports {
        polled: Option<oneshot::Sender<()>>,
        dropped: Option<oneshot::Sender<Option<u32>>>,
    }

    impl Future for PendsAndReports {
        type Output = ();

        fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            if let Some(tx) = self.polled.take() {
                let _ = tx.send(());
            }
            Poll::Pending
        }
    }

    impl Drop for PendsAndReports {
        fn drop(&mut self) {
            let _ = self.dropped.take().unwrap().send(KEY.try_with(|v| *v).ok());
        }
    }

    rt_common! {
        /// tokio `task_local.rs` `task_local_available_on_abort`: an aborted task's scoped
        /// future is dropped with the value still set, and the task is cancelled.
        #[test]
        fn task_local_available_on_abort() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.block_on(async {
                    let (tx_poll, rx_poll) = oneshot::channel();
                    let (tx_drop, rx_drop) = oneshot::channel();
                    let fut = PendsAndReports { polled: Some(tx_poll), dropped: Some(tx_drop) };
                    let h = corio::spawn(KEY.scope(42, fut));
                    rx_poll.await.unwrap();
                    h.abort();
                    assert_eq!(rx_drop.await.unwrap(), Some(42));
                    let err = h.await.unwrap_err();
                    assert!(err.is_cancelled(), "{err:?}");
                })
            });
        }

        /// tokio `task_local.rs` `task_local_available_on_abort`, for a local task aborted
        /// from another thread (its future is dropped on its own worker).
        #[test]
        fn task_local_available_on_abort_of_a_local_task() {
            let rt = rt();
            within(EVENTUALLY, move || {
                let (tx_poll, rx_poll) = oneshot::channel();
                let (tx_drop, rx_drop) = oneshot::channel();
                let h = rt.run(move || {
                    let fut = PendsAndReports { polled: Some(tx_poll), dropped: Some(tx_drop) };
                    corio::spawn_local(KEY.scope(7, fut))
                });
                rx_poll.recv().unwrap();
                h.abort();
                assert_eq!(rx_drop.recv().unwrap(), Some(7));
                assert!(h.join().unwrap_err().is_cancelled());
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// task_id.rs
// ---------------------------------------------------------------------------------------------

mod task_id {
    use super::*;

    /// The id of the running task, if any.
    fn id() -> Option<u64> {
        corio::try_current().map(|t| t.id())
    }

    /// On drop, sends the id of the task running then.
    struct ReportsId(Option<oneshot::Sender<Option<u64>>>);

    impl Drop for ReportsId {
        fn drop(&mut self) {
            let _ = self.0.take().unwrap().send(id());
        }
    }

    /// A future that is ready on its first poll, and reports the running task when dropped.
    struct ReadyAndReports {
        _report: ReportsId,
    }

    impl Future for ReadyAndReports {
        type Output = ();

        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            Poll::Ready(())
        }
    }

    rt_common! {
        /// tokio `task_id.rs` `task_id_spawn_blocking`: a blocking-pool closure is a task
        /// with the id its handle reports.
        #[test]
        fn task_id_spawn_blocking() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.block_on(async {
                    let h = corio::spawn_blocking(id);
                    let expected = h.id();
                    assert_eq!(h.await.unwrap(), Some(expected));
                })
            });
        }

        /// tokio `task_id.rs` `task_id_future_destructor_completion`: a task's future,
        /// dropped when it completes, is dropped as that task.
        #[test]
        fn task_id_future_destructor_completion() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.block_on(async {
                    let (tx, rx) = oneshot::channel();
                    let h = corio::spawn(ReadyAndReports {
                        _report: ReportsId(Some(tx)),
                    });
                    let expected = h.id();
                    h.await.unwrap();
                    assert_eq!(rx.await.unwrap(), Some(expected));
                })
            });
        }

        /// tokio `task_id.rs` `task_id_future_destructor_completion`, coroutine form: what the
        /// closure captured is dropped inside the coroutine.
        #[test]
        fn task_id_closure_destructor_completion() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let (tx, rx) = oneshot::channel();
                    let report = ReportsId(Some(tx));
                    let h = corio::go(move || {
                        let _report = report;
                    });
                    let expected = h.id();
                    h.join().unwrap();
                    assert_eq!(rx.recv().unwrap(), Some(expected));
                })
            });
        }

        /// tokio `task_id.rs` `task_id_future_destructor_abort`: an aborted task's future is
        /// dropped as that task.
        #[test]
        fn task_id_future_destructor_abort() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.block_on(async {
                    let (tx, rx) = oneshot::channel();
                    let report = ReportsId(Some(tx));
                    let h = corio::spawn(async move {
                        let _report = report;
                        std::future::pending::<()>().await;
                    });
                    let expected = h.id();
                    h.abort();
                    assert!(h.await.unwrap_err().is_cancelled());
                    assert_eq!(rx.await.unwrap(), Some(expected));
                })
            });
        }

        /// tokio `task_id.rs` `task_id_output_destructor_handle_dropped_before_completion`,
        /// adapted: tokio drops a detached task's output as that task; corio drops it
        /// between tasks, outside any task (docs/soundness.md, "Blocking the worker": a
        /// blocking-style call in that `Drop` blocks the worker as on a plain thread, which
        /// `rt_soundness_runtime.rs` checks), so its `Drop` sees no current task.
        #[test]
        fn task_id_output_destructor_handle_dropped_before_completion() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.block_on(async {
                    let (tx, mut rx) = oneshot::channel();
                    let gate = Gate::new();
                    let wait = gate.wait();
                    let h = corio::spawn(async move {
                        wait.await;
                        ReportsId(Some(tx))
                    });
                    drop(h);
                    assert!(rx.try_recv().is_err());
                    gate.open();
                    assert_eq!(rx.await.unwrap(), None);
                })
            });
        }

        /// tokio `task_id.rs` `task_id_output_destructor_handle_dropped_after_completion`:
        /// the output is dropped with the handle. corio's `current()` is "the running task"
        /// (lib.rs): the task that drops the handle, not the one that made the output.
        #[test]
        fn task_id_output_destructor_handle_dropped_after_completion() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let (tx, mut rx) = oneshot::channel();
                    let h = corio::spawn(async move { ReportsId(Some(tx)) });
                    wait_in_coroutine("the task finished", || h.is_finished());
                    assert!(rx.try_recv().is_err(), "the output was dropped early");
                    drop(h);
                    assert_eq!(rx.recv().unwrap(), Some(corio::current().id()));
                })
            });
        }

        /// tokio `task_id.rs` `task_id_nested_spawn_local`: a local task spawned by a local
        /// task has its own id, and the parent's is unchanged after joining it.
        #[test]
        fn task_id_nested_spawn_local() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    corio::spawn_local(async {
                        let parent = id().unwrap();
                        let child = corio::spawn_local(async { id().unwrap() });
                        let child_handle_id = child.id();
                        let child_id = child.await.unwrap();
                        assert_eq!(child_id, child_handle_id);
                        assert_ne!(child_id, parent);
                        assert_eq!(id(), Some(parent));
                        let co = corio::go_local(|| id().unwrap()).await.unwrap();
                        assert_ne!(co, parent);
                        assert_eq!(id(), Some(parent));
                    })
                    .join()
                    .unwrap();
                })
            });
        }

        /// tokio `task_id.rs` `task_id_block_in_place_block_on_spawn`, adapted: a coroutine
        /// that waits for a task of another runtime keeps its own id; the task has its own.
        #[test]
        fn task_id_across_a_second_runtime() {
            let rt = rt();
            let other = support::rt(1);
            within(EVENTUALLY, move || {
                let handle = other.handle().clone();
                rt.run(move || {
                    let parent = id().unwrap();
                    let child = corio::block_on(handle.spawn(async { id() })).unwrap();
                    assert!(child.is_some_and(|c| c != parent), "{child:?}");
                    assert_eq!(id(), Some(parent));
                });
                drop(other);
            });
        }
    }

    /// tokio `task_id.rs` `task_id_outside_task_panic_caller`: `corio::current()` outside a
    /// task panics at its caller.
    #[test]
    fn task_id_outside_task_panic_caller() {
        assert_raised_here(panic_site(|| drop(corio::current())));
    }

    /// tokio `task_id.rs` `task_id_inside_block_on_panic_caller`: the same inside
    /// `Runtime::block_on`, whose future is not a task.
    #[test]
    fn task_id_inside_block_on_panic_caller() {
        let rt = support::rt(1);
        within(EVENTUALLY, move || {
            assert_raised_here(panic_site(|| {
                rt.block_on(async {
                    drop(corio::current());
                })
            }));
        });
    }
}

// ---------------------------------------------------------------------------------------------
// task_yield_now.rs
// ---------------------------------------------------------------------------------------------

mod yield_now {
    use super::*;

    /// tokio `task_yield_now.rs` `yield_now_outside_of_runtime`: polled by hand on a plain
    /// thread, `yield_now_async` is pending once, having woken its waker, then ready.
    #[test]
    fn yield_now_outside_of_runtime() {
        struct Counts(AtomicUsize);
        impl Wake for Counts {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, SeqCst);
            }
            fn wake_by_ref(self: &Arc<Self>) {
                self.0.fetch_add(1, SeqCst);
            }
        }
        let counts = Arc::new(Counts(AtomicUsize::new(0)));
        let waker = Waker::from(counts.clone());
        let mut cx = Context::from_waker(&waker);
        let mut fut = pin!(corio::yield_now_async());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        assert_eq!(counts.0.load(SeqCst), 1, "not woken");
        assert!(fut.as_mut().poll(&mut cx).is_ready());
    }

    rt_common! {
        /// tokio `task_yield_now.rs` `yield_now_external_executor_and_block_in_place`: inside
        /// `corio::blocking`, in an async task and in a coroutine, a foreign executor drives
        /// `yield_now_async`; in a `spawn_blocking` closure `corio::block_on` does.
        #[test]
        fn yield_now_external_executor_and_blocking() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.block_on(async {
                    corio::spawn(async {
                        corio::blocking(|| support::foreign_block_on(corio::yield_now_async()));
                        corio::yield_now_async().await;
                    })
                    .await
                    .unwrap();
                    corio::go(|| {
                        corio::blocking(|| support::foreign_block_on(corio::yield_now_async()));
                        corio::block_on(corio::yield_now_async());
                    })
                    .await
                    .unwrap();
                    corio::spawn_blocking(|| corio::block_on(corio::yield_now_async()))
                        .await
                        .unwrap();
                })
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// task_builder.rs
// ---------------------------------------------------------------------------------------------

mod builder {
    use super::*;

    rt_common! {
        /// tokio `task_builder.rs` `spawn_local_with_name` and `spawn_local_without_name`: a
        /// `!Send` future spawned by the builder runs, under its name if it has one.
        #[test]
        fn spawn_local_with_and_without_name() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let data = Rc::new("task executed");
                    let d = data.clone();
                    let named = corio::Builder::new()
                        .name("name")
                        .spawn_local_async(async move {
                            corio::yield_now_async().await;
                            (*d, corio::current().name().map(String::from))
                        })
                        .unwrap();
                    assert_eq!(named.join().unwrap(), ("task executed", Some("name".into())));
                    let d = data.clone();
                    let unnamed = corio::Builder::new()
                        .spawn_local_async(async move {
                            (*d, corio::current().name().map(String::from))
                        })
                        .unwrap();
                    assert_eq!(unnamed.join().unwrap(), ("task executed", None));
                })
            });
        }
    }

    /// tokio `task_builder.rs` `spawn_local_panics_outside_local_set_or_local_runtime` and
    /// `spawn_local_panics_in_multi_thread_runtime`: the builder's local spawns panic off a
    /// worker (on a plain thread, in `Runtime::block_on`'s future).
    #[test]
    fn spawn_local_panics_off_a_worker() {
        install_panic_recorder();
        let msg = support::panic_message(|| {
            drop(corio::Builder::new().spawn_local_async(async {}));
        });
        assert!(msg.contains("runtime worker"), "{msg}");
        let rt = support::rt(2);
        within(EVENTUALLY, move || {
            let msg = support::panic_message(|| {
                rt.block_on(async {
                    drop(corio::Builder::new().name("x").spawn_local_async(async {}));
                })
            });
            assert!(msg.contains("runtime worker"), "{msg}");
            let msg = support::panic_message(|| {
                rt.block_on(async {
                    drop(corio::Builder::new().spawn_local(|| ()));
                })
            });
            assert!(msg.contains("runtime worker"), "{msg}");
        });
    }
}

// ---------------------------------------------------------------------------------------------
// task_panic.rs: misuse panics point at the caller
// ---------------------------------------------------------------------------------------------

mod panic_caller {
    use super::*;

    corio::task_local! {
        static NUMBER: u32;
    }

    /// tokio `task_panic.rs` `local_key_with_panic_caller`.
    #[test]
    fn local_key_with_panic_caller() {
        assert_raised_here(panic_site(|| NUMBER.with(|_| ())));
    }

    /// tokio `task_panic.rs` `local_key_get_panic_caller`.
    #[test]
    fn local_key_get_panic_caller() {
        assert_raised_here(panic_site(|| {
            let _ = NUMBER.get();
        }));
    }

    /// tokio `task_panic.rs` `local_set_spawn_local_panic_caller`: each local spawn off a
    /// worker panics at its caller.
    #[test]
    fn spawn_local_panic_caller() {
        assert_raised_here(panic_site(|| drop(corio::spawn_local(async {}))));
        assert_raised_here(panic_site(|| drop(corio::go_local(|| ()))));
        assert_raised_here(panic_site(|| {
            drop(corio::Builder::new().spawn_local(|| ()));
        }));
        assert_raised_here(panic_site(|| {
            drop(corio::Builder::new().spawn_local_async(async {}));
        }));
        let mut set: JoinSet<()> = JoinSet::new();
        assert_raised_here(panic_site(|| drop(set.spawn_local(async {}))));
        assert_raised_here(panic_site(|| drop(set.go_local(|| ()))));
    }

    /// tokio `task_panic.rs` `block_in_place_panic_caller`, for corio's blocking-style calls
    /// inside an async task, which panic there: the panic points at the call.
    #[test]
    fn blocking_style_call_in_an_async_task_panic_caller() {
        install_panic_recorder();
        let rt = support::rt(2);
        within(EVENTUALLY, move || {
            let handle = rt.handle().clone();
            let calls: Vec<corio::JoinHandle<()>> = vec![
                rt.spawn(async { corio::block_on(async {}) }),
                rt.spawn(async { drop(corio::spawn(async {}).join()) }),
                rt.spawn(async {
                    let mut set = JoinSet::<()>::new();
                    set.spawn(async {});
                    drop(set.join_next());
                }),
                rt.spawn(async {
                    let mut set = JoinSet::<()>::new();
                    set.shutdown();
                }),
                rt.spawn(async { corio::scope(|_| ()) }),
                rt.spawn(async move { handle.block_on(async {}) }),
            ];
            for call in calls {
                assert_raised_here(task_panic_site(call.join().unwrap_err()));
            }
        });
    }

    /// tokio `task_panic.rs` (its `*_panic_caller` pattern) for the other task misuse panics:
    /// `Runtime::run` inside a task, `JoinError::into_panic` on a cancellation,
    /// `Handle::current` outside a runtime.
    #[test]
    fn other_task_misuse_panic_caller() {
        install_panic_recorder();
        let rt = Arc::new(support::rt(1));
        within(EVENTUALLY, move || {
            let r = rt.clone();
            let err = rt.go(move || r.run(|| ())).join().unwrap_err();
            assert_raised_here(task_panic_site(err));
            let h = rt.spawn(std::future::pending::<()>());
            h.abort();
            let cancelled = h.join().unwrap_err();
            assert_raised_here(panic_site(move || drop(cancelled.into_panic())));
            assert_raised_here(panic_site(|| drop(corio::Handle::current())));
        });
    }
}

// ---------------------------------------------------------------------------------------------
// join_handle_panic.rs
// ---------------------------------------------------------------------------------------------

mod join_handle_panic {
    use super::*;

    /// Panics when dropped.
    struct PanicsOnDrop;

    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("{EXPECTED} I told you so");
        }
    }

    rt_common! {
        /// tokio `join_handle_panic.rs` `test_panics_do_not_propagate_when_dropping_join_handle`:
        /// dropping the handle of a finished task drops its output, whose panic stays there,
        /// in a coroutine, in an async task and on a plain thread.
        #[test]
        fn test_panics_do_not_propagate_when_dropping_join_handle() {
            install_panic_recorder();
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let task = corio::spawn(async { PanicsOnDrop });
                    let co = corio::go(|| PanicsOnDrop);
                    wait_in_coroutine("both finished", || task.is_finished() && co.is_finished());
                    drop(task);
                    drop(co);
                });
                let survived = rt.block_on(async {
                    corio::spawn(async {
                        let task = corio::spawn(async { PanicsOnDrop });
                        while !task.is_finished() {
                            corio::time::sleep_async(MS).await;
                        }
                        drop(task);
                        "survived"
                    })
                    .await
                    .unwrap()
                });
                assert_eq!(survived, "survived");
                let task = rt.spawn(async { PanicsOnDrop });
                wait_until("the task finished", || task.is_finished());
                drop(task);
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// task_local_set.rs, as spawn_local / go_local
// ---------------------------------------------------------------------------------------------

mod local {
    use super::*;

    rt_common! {
        /// tokio `task_local_set.rs` `nested_spawn_is_local` and `all_spawns_are_local`: local
        /// tasks spawned by local tasks, four deep and 128 wide, all run on the spawner's
        /// thread.
        #[test]
        fn nested_spawn_is_local() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let home = std::thread::current().id();
                    let here = move || assert_eq!(std::thread::current().id(), home);
                    corio::spawn_local(async move {
                        here();
                        corio::spawn_local(async move {
                            here();
                            corio::go_local(move || {
                                here();
                                corio::spawn_local(async move { here() }).join().unwrap();
                                here();
                            })
                            .await
                            .unwrap();
                        })
                        .await
                        .unwrap();
                    })
                    .join()
                    .unwrap();
                    let wide: Vec<_> = (0..128)
                        .map(|i| {
                            if i % 2 == 0 {
                                corio::spawn_local(async move { here() })
                            } else {
                                corio::go_local(here)
                            }
                        })
                        .collect();
                    for h in wide {
                        h.join().unwrap();
                    }
                })
            });
        }

        /// tokio `task_local_set.rs` `local_threadpool_blocking_run` (and the
        /// `block_in_place_cases`, which corio allows): `spawn_blocking` from a local task
        /// runs on another thread, `corio::blocking` in place, and the task stays home.
        #[test]
        fn local_threadpool_blocking_run() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let home = std::thread::current().id();
                    let off_home = move || std::thread::current().id() != home;
                    let at_home = move || std::thread::current().id() == home;
                    corio::spawn_local(async move {
                        assert!(at_home());
                        assert!(corio::spawn_blocking(off_home).await.unwrap());
                        assert!(at_home());
                        assert!(corio::blocking(at_home));
                    })
                    .join()
                    .unwrap();
                    corio::go_local(move || {
                        assert!(at_home());
                        assert!(corio::spawn_blocking(off_home).join().unwrap());
                        assert!(at_home());
                        assert!(corio::blocking(at_home));
                    })
                    .join()
                    .unwrap();
                })
            });
        }

        /// tokio `task_local_set.rs` `join_local_future_elsewhere`: a local task's handle,
        /// awaited by an ordinary task, which also wakes it; the local task runs at home.
        #[test]
        fn join_local_future_elsewhere() {
            let rt = rt();
            let msg = within(EVENTUALLY, move || {
                rt.run(|| {
                    let home = std::thread::current().id();
                    let (tx, rx) = oneshot::channel::<()>();
                    let rc = Rc::new("hello world");
                    let local = corio::spawn_local(async move {
                        assert_eq!(std::thread::current().id(), home, "ran off its worker");
                        rx.await.unwrap();
                        assert_eq!(std::thread::current().id(), home, "woke off its worker");
                        *rc
                    });
                    let elsewhere = corio::spawn(async move {
                        tx.send(()).expect("the local task ended early");
                        local.await.expect("the local task failed")
                    });
                    elsewhere.join().unwrap()
                })
            });
            assert_eq!(msg, "hello world");
        }

        /// tokio `task_local_set.rs` `drop_cancels_remote_tasks`: a local task woken from
        /// another thread just before the runtime is dropped does not keep the drop looping.
        #[test]
        fn drop_cancels_remote_tasks() {
            let rt = rt();
            within(EVENTUALLY, move || {
                let (tx, rx) = corio::chan::bounded::<()>(1024);
                let h = rt.run(move || {
                    let h = corio::spawn_local(async move {
                        while rx.recv_async().await.is_ok() {}
                    });
                    corio::sleep(MS);
                    h
                });
                drop(tx);
                drop(rt);
                if let Err(e) = h.join() {
                    assert!(e.is_cancelled(), "{e:?}");
                }
            });
        }

        /// tokio `task_local_set.rs` `local_tasks_wake_join_all`: 128 local tasks, each
        /// waiting for a local task it spawned, all complete.
        #[test]
        fn local_tasks_wake_join_all() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let handles: Vec<_> = (0..128)
                        .map(|_| {
                            corio::spawn_local(async {
                                corio::spawn_local(async {}).await.unwrap();
                            })
                        })
                        .collect();
                    corio::block_on(futures::future::join_all(handles))
                        .into_iter()
                        .for_each(Result::unwrap);
                })
            });
        }

        /// tokio `task_local_set.rs` `local_tasks_are_polled_after_tick`: 500 local tasks,
        /// each waiting for a oneshot that an ordinary task fires, all run to the end.
        #[test]
        fn local_tasks_are_polled_after_tick() {
            const N: usize = 500;
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let (tx, rx) = corio::chan::unbounded::<oneshot::Receiver<()>>();
                    let firer = corio::spawn(async move {
                        corio::time::sleep_async(MS).await;
                        let mut senders = Vec::with_capacity(N);
                        for _ in 0..N {
                            let (otx, orx) = oneshot::channel();
                            senders.push(otx);
                            tx.send_async(orx).await.unwrap();
                        }
                        corio::time::sleep_async(MS).await;
                        for otx in senders {
                            otx.send(()).unwrap();
                        }
                    });
                    let (received, done) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
                    let mut locals = Vec::new();
                    while let Ok(orx) = rx.recv() {
                        received.set(received.get() + 1);
                        let done = done.clone();
                        locals.push(corio::spawn_local(async move {
                            orx.await.unwrap();
                            done.set(done.get() + 1);
                        }));
                    }
                    firer.join().unwrap();
                    for h in locals {
                        h.join().unwrap();
                    }
                    assert_eq!((received.get(), done.get()), (N, N));
                })
            });
        }

        /// tokio `task_local_set.rs` `acquire_mutex_in_drop`: dropping the runtime drops local
        /// tasks whose destructors wake other local tasks of the worker; they are cancelled,
        /// not polled again.
        #[test]
        fn acquire_mutex_in_drop() {
            support::quiet_expected_panics();
            let rt = rt();
            within(EVENTUALLY, move || {
                let handles = rt.run(|| {
                    let (tx1, rx1) = oneshot::channel::<()>();
                    let (tx2, rx2) = oneshot::channel::<()>();
                    let a = corio::spawn_local(async move {
                        let _ = rx2.await;
                        panic!("{EXPECTED} polled after its waker's sender was dropped");
                    });
                    let b = corio::spawn_local(async move {
                        let _ = rx1.await;
                        let _ = tx2.send(());
                        panic!("{EXPECTED} polled after its waker's sender was dropped");
                    });
                    let c = corio::spawn_local(async move {
                        std::future::pending::<()>().await;
                        let _ = tx1.send(());
                    });
                    corio::yield_now();
                    corio::sleep(MS);
                    vec![a, b, c]
                });
                drop(rt);
                for h in handles {
                    let err = h.join().unwrap_err();
                    assert!(err.is_cancelled(), "{err:?}");
                }
            });
        }

        /// tokio `task_local_set.rs` `sleep_with_local_enter_guard`: a local task's zero
        /// sleep wakes it (both kinds).
        #[test]
        fn sleep_with_local_zero_sleep() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let (tx, rx) = oneshot::channel();
                    corio::spawn_local(async move {
                        corio::time::sleep_async(Duration::ZERO).await;
                        tx.send(()).unwrap();
                    });
                    assert_eq!(rx.recv(), Ok(()));
                    let (tx, rx) = oneshot::channel();
                    corio::go_local(move || {
                        corio::sleep(Duration::ZERO);
                        tx.send(()).unwrap();
                    });
                    assert_eq!(rx.recv(), Ok(()));
                })
            });
        }
    }

    /// tokio `task_local_set.rs` `localset_in_thread_local` and
    /// `store_local_set_in_thread_local_with_runtime`: a runtime kept in a thread-local, used
    /// for local tasks, is dropped when its thread exits without a panic or a hang.
    #[test]
    fn store_runtime_in_thread_local() {
        thread_local! {
            static RT: corio::Runtime = support::rt(1);
        }
        let v = within(EVENTUALLY, || {
            std::thread::spawn(|| {
                RT.with(|rt| {
                    rt.run(|| {
                        let rc = Rc::new(5);
                        let r = rc.clone();
                        corio::spawn_local(async move { *r }).join().unwrap() + *rc
                    })
                })
            })
            .join()
        });
        assert_eq!(v.expect("the thread panicked"), 10);
    }
}

// ---------------------------------------------------------------------------------------------
// task_hooks.rs: the spawn location, seen through `corio::current().location()`
// ---------------------------------------------------------------------------------------------

mod spawn_location {
    use super::*;

    /// (file, line) of the running task's spawn location.
    fn loc() -> (String, u32) {
        let l = corio::current().location();
        (l.file().to_string(), l.line())
    }

    /// Evaluates a spawn and the line it is on.
    macro_rules! at {
        ($e:expr) => {
            ($e, line!())
        };
    }

    #[track_caller]
    fn check(what: &str, got: (String, u32), line: u32) {
        assert!(got.0.ends_with("task_tokio_suite.rs"), "{what}: {got:?}");
        assert_eq!(
            got.1, line,
            "{what}: the spawn location is not the caller's line"
        );
    }

    fn one<T>(set: &mut JoinSet<T>) -> T {
        set.join_next().unwrap().unwrap()
    }

    /// tokio `task_hooks.rs` `task_hook_spawn_location_current_thread`,
    /// `task_hook_spawn_location_multi_thread` and `task_hook_spawn_location_builder`: every
    /// way to spawn records the caller's location.
    #[test]
    fn spawn_location_is_the_callers() {
        for workers in support::FLAVOURS {
            let rt = support::rt(workers);
            within(EVENTUALLY, move || {
                let (h, line) = at!(rt.spawn(async { loc() }));
                check("Runtime::spawn", h.join().unwrap(), line);
                let (h, line) = at!(rt.go(loc));
                check("Runtime::go", h.join().unwrap(), line);
                let (h, line) = at!(rt.handle().spawn(async { loc() }));
                check("Handle::spawn", h.join().unwrap(), line);
                let (h, line) = at!(rt.handle().go(loc));
                check("Handle::go", h.join().unwrap(), line);
                let (h, line) = at!(rt.spawn_blocking(loc));
                check("Runtime::spawn_blocking", h.join().unwrap(), line);
                let (got, line) = at!(rt.run(loc));
                check("Runtime::run", got, line);
                rt.run(spawn_locations_inside_a_coroutine);
            });
        }
    }

    fn spawn_locations_inside_a_coroutine() {
        let (h, line) = at!(corio::go(loc));
        check("go", h.join().unwrap(), line);
        let (h, line) = at!(corio::spawn(async { loc() }));
        check("spawn", h.join().unwrap(), line);
        let (h, line) = at!(corio::spawn_blocking(loc));
        check("spawn_blocking", h.join().unwrap(), line);
        let (h, line) = at!(corio::go_local(loc));
        check("go_local", h.join().unwrap(), line);
        let (h, line) = at!(corio::spawn_local(async { loc() }));
        check("spawn_local", h.join().unwrap(), line);
        let (h, line) = at!(corio::Builder::new().spawn(loc));
        check("Builder::spawn", h.unwrap().join().unwrap(), line);
        let (h, line) = at!(corio::Builder::new().spawn_async(async { loc() }));
        check("Builder::spawn_async", h.unwrap().join().unwrap(), line);
        let (h, line) = at!(corio::Builder::new().spawn_local(loc));
        check("Builder::spawn_local", h.unwrap().join().unwrap(), line);
        let (h, line) = at!(corio::Builder::new().spawn_local_async(async { loc() }));
        check(
            "Builder::spawn_local_async",
            h.unwrap().join().unwrap(),
            line,
        );
        let handle = corio::Handle::current();
        let mut set = JoinSet::new();
        let line = at!(set.go(loc)).1;
        check("JoinSet::go", one(&mut set), line);
        let line = at!(set.spawn(async { loc() })).1;
        check("JoinSet::spawn", one(&mut set), line);
        let line = at!(set.go_on(loc, &handle)).1;
        check("JoinSet::go_on", one(&mut set), line);
        let line = at!(set.spawn_on(async { loc() }, &handle)).1;
        check("JoinSet::spawn_on", one(&mut set), line);
        let line = at!(set.go_local(loc)).1;
        check("JoinSet::go_local", one(&mut set), line);
        let line = at!(set.spawn_local(async { loc() })).1;
        check("JoinSet::spawn_local", one(&mut set), line);
        corio::scope(|s| {
            let (h, line) = at!(s.go(loc));
            check("Scope::go", h.join().unwrap(), line);
            let (h, line) = at!(s.go_with(corio::Builder::new(), loc));
            check("Scope::go_with", h.unwrap().join().unwrap(), line);
            let (h, line) = at!(s.spawn(async { loc() }));
            check("Scope::spawn", h.join().unwrap(), line);
        });
    }
}

// ---------------------------------------------------------------------------------------------
// async_send_sync.rs: which task types are Send, Sync and Unpin
// ---------------------------------------------------------------------------------------------

mod send_sync {
    use super::*;

    /// Autoref specialisation: for a concrete `T`, `(&Probe::<T>::new()).send()` picks the
    /// first trait's method when `T: Send`, else the second's. Each returns its answer.
    pub struct Probe<T: ?Sized>(PhantomData<T>);

    impl<T: ?Sized> Probe<T> {
        pub fn new() -> Probe<T> {
            Probe(PhantomData)
        }
    }

    macro_rules! probe_traits {
        ($($yes:ident / $no:ident: $bound:path => $method:ident;)*) => {
            $(
                #[allow(dead_code, reason = "picked only for types with the trait")]
                pub trait $yes {
                    fn $method(&self) -> bool {
                        true
                    }
                }
                impl<T: ?Sized + $bound> $yes for Probe<T> {}
                #[allow(dead_code, reason = "picked only for types without the trait")]
                pub trait $no {
                    fn $method(&self) -> bool {
                        false
                    }
                }
                impl<T: ?Sized> $no for &Probe<T> {}
            )*
        };
    }

    probe_traits! {
        YesSend / NoSend: Send => send;
        YesSync / NoSync: Sync => sync;
        YesUnpin / NoUnpin: Unpin => unpin;
    }

    /// "Send Sync Unpin" of a type, each marked `+` or `-` (so a mismatch shows which).
    macro_rules! traits {
        ($t:ty) => {{
            #[allow(unused_imports)]
            use crate::send_sync::{NoSend, NoSync, NoUnpin, YesSend, YesSync, YesUnpin};
            let sign = |b: bool| if b { '+' } else { '-' };
            format!(
                "{}Send {}Sync {}Unpin",
                sign((&crate::send_sync::Probe::<$t>::new()).send()),
                sign((&crate::send_sync::Probe::<$t>::new()).sync()),
                sign((&crate::send_sync::Probe::<$t>::new()).unpin()),
            )
        }};
    }

    /// The same for the type of a value (an `async fn`'s future): (Send, Sync).
    macro_rules! send_sync_of {
        ($v:expr) => {{
            #[allow(unused_imports)]
            use crate::send_sync::{NoSend, NoSync, YesSend, YesSync};
            let value = $v;
            let probe = crate::send_sync::probe_of(&value);
            ((&probe).send(), (&probe).sync())
        }};
    }

    pub fn probe_of<T>(_: &T) -> Probe<T> {
        Probe::new()
    }

    const ALL: &str = "+Send +Sync +Unpin";

    /// tokio `async_send_sync.rs`, its `tokio::task` handle and error lines: handles and
    /// errors are Send + Sync + Unpin for any `Send` output, neither Send nor Sync for a
    /// `!Send` one.
    #[test]
    fn handles_and_errors() {
        assert_eq!(traits!(corio::JoinHandle<u32>), ALL, "JoinHandle<u32>");
        assert_eq!(
            traits!(corio::JoinHandle<Cell<u32>>),
            ALL,
            "JoinHandle<Cell<u32>>"
        );
        assert_eq!(traits!(corio::JoinHandle<Rc<u32>>), "-Send -Sync +Unpin");
        assert_eq!(traits!(corio::AbortHandle), ALL, "AbortHandle");
        assert_eq!(traits!(corio::JoinError), ALL, "JoinError");
        assert_eq!(traits!(corio::Task), ALL, "Task");
        assert_eq!(
            traits!(corio::ScopedJoinHandle<'static, u32>),
            ALL,
            "ScopedJoinHandle"
        );
    }

    /// tokio's `JoinHandle` and `AbortHandle` are `UnwindSafe` and `RefUnwindSafe` (explicit
    /// impls: the task's state moves by atomic transitions only), so a `catch_unwind` around
    /// code that holds one needs no `AssertUnwindSafe`. corio's were neither until
    /// 2026-12-06.
    #[test]
    fn handles_are_unwind_safe() {
        fn unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}
        unwind_safe::<corio::JoinHandle<u32>>();
        unwind_safe::<corio::JoinHandle<Cell<u32>>>();
        unwind_safe::<corio::AbortHandle>();
        let rt = support::rt(1);
        let handle = rt.spawn(async { 7u32 });
        let caught = std::panic::catch_unwind(|| {
            handle.abort_handle(); // used inside, and the handle outlives the unwind
            panic!("{}", support::EXPECTED)
        });
        assert!(caught.is_err());
    }

    /// tokio `async_send_sync.rs`, its `JoinSet` lines: a set is Send + Sync + Unpin when
    /// its output is Send, neither Send nor Sync when it is not; its `join_next` and
    /// `shutdown` futures are Send + Sync.
    #[test]
    fn join_set_and_its_futures() {
        assert_eq!(traits!(JoinSet<u32>), ALL, "JoinSet<u32>");
        assert_eq!(traits!(JoinSet<Cell<u32>>), ALL, "JoinSet<Cell<u32>>");
        assert_eq!(
            traits!(JoinSet<Rc<u32>>),
            "-Send -Sync +Unpin",
            "JoinSet<Rc<u32>>"
        );
        let mut set = JoinSet::<u32>::new();
        assert_eq!(
            send_sync_of!(set.join_next_async()),
            (true, true),
            "join_next_async"
        );
        assert_eq!(
            send_sync_of!(set.shutdown_async()),
            (true, true),
            "shutdown_async"
        );
        let mut set = JoinSet::<Cell<u32>>::new();
        assert_eq!(
            send_sync_of!(set.join_next_async()),
            (true, true),
            "join_next_async"
        );
        assert_eq!(
            send_sync_of!(set.shutdown_async()),
            (true, true),
            "shutdown_async"
        );
        let mut set = JoinSet::<Rc<u32>>::new();
        assert_eq!(
            send_sync_of!(set.join_next_async()),
            (false, false),
            "Rc output"
        );
        assert_eq!(
            send_sync_of!(set.shutdown_async()),
            (false, false),
            "Rc output"
        );
    }

    /// tokio `async_send_sync.rs`, its `LocalKey::scope` lines: the scoped future is Send when
    /// both the value and the future are, Sync when both are Sync; never for an `Rc` value.
    #[test]
    fn task_local_futures() {
        corio::task_local! {
            static NUM: u32;
            static CELL: Cell<u32>;
            static RC: Rc<u32>;
        }
        type Plain = Pin<Box<dyn Future<Output = ()>>>;
        type Sendable = Pin<Box<dyn Future<Output = ()> + Send>>;
        type SendSync = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;
        let plain = || -> Plain { Box::pin(async {}) };
        let sendable = || -> Sendable { Box::pin(async {}) };
        let send_sync = || -> SendSync { Box::pin(async {}) };
        assert_eq!(send_sync_of!(NUM.scope(1, plain())), (false, false));
        assert_eq!(send_sync_of!(NUM.scope(1, sendable())), (true, false));
        assert_eq!(send_sync_of!(NUM.scope(1, send_sync())), (true, true));
        assert_eq!(
            send_sync_of!(CELL.scope(Cell::new(1), plain())),
            (false, false)
        );
        assert_eq!(
            send_sync_of!(CELL.scope(Cell::new(1), sendable())),
            (true, false)
        );
        assert_eq!(
            send_sync_of!(CELL.scope(Cell::new(1), send_sync())),
            (true, false)
        );
        assert_eq!(
            send_sync_of!(RC.scope(Rc::new(1), send_sync())),
            (false, false)
        );
        assert_eq!(traits!(corio::LocalKey<Rc<u32>>), ALL, "LocalKey<Rc<u32>>");
        assert_eq!(traits!(corio::AccessError), ALL, "AccessError");
    }

    /// tokio `async_send_sync.rs`, its `tokio::runtime` lines and `yield_now`: runtimes,
    /// handles and builders are Send + Sync + Unpin; the enter guard is not Send (its docs).
    #[test]
    fn runtime_types() {
        assert_eq!(traits!(corio::Runtime), ALL, "Runtime");
        assert_eq!(traits!(corio::Handle), ALL, "Handle");
        assert_eq!(traits!(corio::RuntimeBuilder), ALL, "RuntimeBuilder");
        assert_eq!(traits!(corio::Builder), ALL, "task Builder");
        assert_eq!(traits!(corio::YieldNow), ALL, "YieldNow");
        assert!(
            traits!(corio::EnterGuard).starts_with("-Send "),
            "EnterGuard"
        );
    }
}
