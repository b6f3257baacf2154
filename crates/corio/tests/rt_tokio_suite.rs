//! tokio 1.54's runtime tests, re-expressed for corio: `tests/rt_common.rs`, `rt_threaded.rs`,
//! `rt_basic.rs`, `rt_handle.rs`, `rt_handle_block_on.rs`, `rt_spawn_blocking.rs`,
//! `rt_shutdown_err.rs`, `rt_local.rs` and `rt_metrics.rs` (`rt_panic.rs` is ported in
//! `sched_review_contract.rs`, `misuse_panics_point_at_the_callers_line`). Where tokio's test is
//! async the port runs async tasks; where it is cheap the coroutine form runs too. Tests in
//! `rt_common!` run on one worker (1:N) and on two (M:N); tokio's current-thread and
//! multi-thread flavours map onto those. Each test's `///` line names the tokio test it ports.
//!
//! Not ported, because corio lacks what they test (tokio file: test — reason):
//!
//! - rt_common: `yield_defers_until_park`, `coop_yield_defers_until_park` — corio's
//!   `yield_now_async` requeues at once; it does not defer the task until the driver is polled
//!   (docs/scheduler.md, "How a worker finds work": sockets are polled every 61st round).
//! - rt_common: `coop_unconstrained`, `coop_consume_budget` — no public `unconstrained` or
//!   `consume_budget`.
//! - rt_common: `local_set_block_on_socket` — no `LocalSet` driven by `block_on` on the caller's
//!   thread (`spawn_local` needs a worker; `local_set_client_server_block_on` is ported so).
//! - rt_threaded: `global_queue_interval_set_to_one`, `test_tuning` — no tunable global queue
//!   interval (fixed at 61, docs/scheduler.md).
//! - rt_threaded, rt_basic: `default_runtime_name_should_be_none`, `different_runtime_names`,
//!   `runtime_id_is_same`, `runtime_ids_different` (also rt_handle) — no runtime name or id.
//! - rt_threaded: `test_block_in_place1`, `test_block_in_place3` — `corio::blocking` is legal
//!   everywhere (it just runs the closure off a runtime), so there is no panic to test.
//! - rt_threaded: `max_blocking_threads_set_to_zero` — the builder clamps it to 1
//!   (`BlockingPool::new`); rt_review_contract.rs tests invalid builder settings.
//! - rt_basic: `spawned_task_does_not_progress_without_block_on` — every corio runtime has its
//!   own worker threads; nothing waits for `block_on` to drive it.
//! - rt_basic: `timeout_panics_when_no_time_handle` — timers are always on (no `enable_time`).
//! - rt_basic: `before_park_yields` — no `on_thread_park` hook.
//! - rt_basic (unstable): `shutdown_on_panic`, `spawns_do_nothing`,
//!   `shutdown_all_concurrent_block_on`, `rng_seed`, `rng_seed_multi_enter` — no
//!   `unhandled_panic` setting, no seeded RNG.
//! - rt_handle: `interleave_enter_different_rt`, `interleave_then_enter` — corio allows guards
//!   dropped out of order (`EnterGuard`'s rustdoc); rt_soundness_runtime.rs tests that.
//! - rt_handle_block_on: `stdout_shutdown_before_started` — no async stdout/stderr.
//! - rt_handle_block_on: `tcp_listener_connect_before_shutdown`, `udp_stream_bind_before_shutdown`,
//!   `udp_stream_bind_after_shutdown`, `tcp_listener_connect_after_shutdown` — binding is a
//!   plain system call in corio (no registration until the first wait), so it succeeds after
//!   a shutdown; there is no `is_rt_shutdown_err`.
//! - rt_handle_block_on: `sleep_before_shutdown_panics`, `sleep_after_shutdown_panics` — a
//!   corio sleep outlives its runtime on the fallback timer thread (rt_time.rs tests that).
//! - rt_shutdown_err: `test_is_not_rt_shutdown_err`, `test_join_error_panic`,
//!   `test_join_error_cancelled`, `test_other_error_kinds_and_strings` — no
//!   `is_rt_shutdown_err`, no `From<JoinError> for io::Error`.
//! - rt_local: `test_spawn_local_on_runtime_object`, `test_spawn_local_from_guard`,
//!   `test_spawn_from_guard_other_thread`, `test_spawn_local_from_guard_other_thread` — no
//!   `LocalRuntime`, no `Runtime::spawn_local`, no `Handle::enter`.
//! - rt_metrics: `worker_total_busy_duration`, `worker_park_unpark_count` (exact counts) — no
//!   per-worker busy time or park/unpark counts (`Metrics::parks` and `unparked_workers` are
//!   ported instead).
//!
//! Already covered elsewhere (not repeated here): rt_common `spawn_await_chain`,
//! `outstanding_tasks_dropped`, `eagerly_drops_futures_on_shutdown`, `sleep_at_root`,
//! `sleep_in_spawn`, `spawn_from_blocking`, `spawn_blocking_from_blocking`, `enter_and_spawn`,
//! `wake_while_rt_is_dropping`, `runtime_in_thread_local`, `wake_by_*_from_thread_local`
//! (rt_common.rs, rt_shutdown.rs, rt_time.rs, sched_review_contract.rs); rt_threaded
//! `single_thread`, `start_stop_callbacks_called`, `multi_threadpool`,
//! `coop_and_block_in_place`, `test_disable_lifo_slot` (rt_builder.rs, rt_wakeups.rs,
//! rt_budget.rs, rt_spawn_slot.rs); rt_basic `acquire_mutex_in_drop`; rt_handle `basic_enter`;
//! rt_handle_block_on `basic_fs`, `fs_shutdown_before_started`, `basic_spawn_blocking`,
//! `spawn_blocking_after_shutdown_fails`, `spawn_after_runtime_dropped` (fs_*.rs, rt_blocking.rs,
//! rt_review_contract.rs, rt_shutdown.rs); rt_local `test_spawn_local_in_runtime`,
//! `test_spawn_from_handle`, `test_spawn_local_panic`, `test_spawn_local_in_*_runtime`
//! (rt_local.rs); rt_metrics `num_alive_tasks` (rt_common.rs); rt_panic (see above).

#[macro_use]
mod support;

use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier, Mutex, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use corio::sync::oneshot;
use support::{
    Drops, EVENTUALLY, EXPECTED, payload_text, quiet_expected_panics, wait_until, within,
};

const MS: Duration = Duration::from_millis(1);

/// Returns `Pending` once (waking itself), then `Ready`: tokio's `yield_once`.
async fn yield_once() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

/// Keeps its worker busy: wakes itself on every poll until `stop` is set.
async fn spin_until(stop: Arc<AtomicBool>) {
    while !stop.load(SeqCst) {
        yield_once().await;
    }
}

/// tokio's `client_server`: a server task writes "hello" to the one client it accepts, the
/// client reads to the end, and `tx` is told.
async fn client_server(tx: mpsc::Sender<()>) {
    let server = corio::net::TcpListener::bind_async("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().unwrap();
    corio::spawn(async move {
        let (socket, _) = server.accept_async().await.unwrap();
        socket.write_all_async(b"hello").await.unwrap();
    });
    let client = corio::net::TcpStream::connect_async(addr).await.unwrap();
    assert_eq!(read_to_end(&client).await, b"hello");
    tx.send(()).unwrap();
}

/// Reads `stream` until its peer closes it.
async fn read_to_end(stream: &corio::net::TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 64];
    loop {
        let n = stream.read_async(&mut buf).await.unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// tokio rt_common.rs `send_sync_bound` (with the handle too).
#[test]
fn runtime_and_handle_are_send_and_sync() {
    fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<corio::Runtime>();
    is_send_sync::<corio::Handle>();
}

rt_common! {
    // ----- block_on and spawn (rt_common.rs, rt_basic.rs, rt_threaded.rs) -------------------

    /// tokio rt_common.rs `block_on_sync`: the future may borrow the caller's locals.
    #[test]
    fn block_on_runs_a_future_borrowing_the_callers_local() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let mut win = false;
            rt.block_on(async {
                win = true;
            });
            assert!(win);
        });
    }

    /// tokio rt_common.rs `block_on_async`: `block_on` waits for a oneshot a plain thread sends
    /// later.
    #[test]
    fn block_on_waits_for_a_oneshot_sent_later_by_a_plain_thread() {
        let rt = rt();
        let out = within(EVENTUALLY, move || {
            rt.block_on(async {
                let (tx, rx) = oneshot::channel();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(50));
                    tx.send("ZOMG").unwrap();
                });
                rx.await.unwrap()
            })
        });
        assert_eq!(out, "ZOMG");
    }

    /// tokio rt_common.rs `spawn_one_bg`: a detached task sends to `block_on`; and the same
    /// from a detached coroutine to the main coroutine.
    #[test]
    fn a_detached_task_or_coroutine_sends_to_its_spawner() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let out = rt.block_on(async {
                let (tx, rx) = oneshot::channel();
                drop(corio::spawn(async move { tx.send("ZOMG").unwrap() }));
                rx.await.unwrap()
            });
            assert_eq!(out, "ZOMG");
            let out = rt.run(|| {
                let (tx, rx) = oneshot::channel();
                drop(corio::go(move || tx.send("ZOMG").unwrap()));
                rx.recv().unwrap()
            });
            assert_eq!(out, "ZOMG");
        });
    }

    /// tokio rt_common.rs `spawn_one_join`: the spawner gets both the message and the output.
    #[test]
    fn a_spawned_task_sends_a_message_and_returns_its_output() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let out = rt.block_on(async {
                let (tx, rx) = oneshot::channel();
                let handle = corio::spawn(async move {
                    tx.send("ZOMG").unwrap();
                    "DONE"
                });
                let msg = rx.await.unwrap();
                assert_eq!(handle.await.unwrap(), "DONE");
                msg
            });
            assert_eq!(out, "ZOMG");
            let out = rt.run(|| {
                let (tx, rx) = oneshot::channel();
                let handle = corio::go(move || {
                    tx.send("ZOMG").unwrap();
                    "DONE"
                });
                let msg = rx.recv().unwrap();
                assert_eq!(handle.join().unwrap(), "DONE");
                msg
            });
            assert_eq!(out, "ZOMG");
        });
    }

    /// tokio rt_common.rs `spawn_two`: one task forwards another's message.
    #[test]
    fn a_task_forwards_another_tasks_message() {
        let rt = rt();
        let out = within(EVENTUALLY, move || {
            rt.block_on(async {
                let (tx1, rx1) = oneshot::channel();
                let (tx2, rx2) = oneshot::channel();
                corio::spawn(async move { tx1.send("ZOMG").unwrap() });
                corio::spawn(async move { tx2.send(rx1.await.unwrap()).unwrap() });
                rx2.await.unwrap()
            })
        });
        assert_eq!(out, "ZOMG");
    }

    /// tokio rt_threaded.rs and rt_basic.rs `spawn_two`: a task spawned by a task sends to
    /// `block_on`; and a coroutine spawned by a coroutine to the main coroutine.
    #[test]
    fn a_grandchild_task_or_coroutine_sends_to_the_root() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let out = rt.block_on(async {
                let (tx, rx) = oneshot::channel();
                corio::spawn(async move {
                    corio::spawn(async move { tx.send("ZOMG").unwrap() });
                });
                rx.await.unwrap()
            });
            assert_eq!(out, "ZOMG");
            let out = rt.run(|| {
                let (tx, rx) = oneshot::channel();
                corio::go(move || {
                    corio::go(move || tx.send("ZOMG").unwrap());
                });
                rx.recv().unwrap()
            });
            assert_eq!(out, "ZOMG");
        });
    }

    /// tokio rt_basic.rs `spawn_remote`: a task waits for a oneshot a plain thread sends.
    #[test]
    fn a_task_waits_for_a_oneshot_sent_by_a_plain_thread_it_started() {
        let rt = rt();
        let out = within(EVENTUALLY, move || {
            rt.block_on(async {
                let handle = corio::spawn(async {
                    let (tx, rx) = oneshot::channel();
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(10));
                        tx.send("ZOMG").unwrap();
                    });
                    rx.await.unwrap()
                });
                handle.await.unwrap()
            })
        });
        assert_eq!(out, "ZOMG");
    }

    /// tokio rt_common.rs `spawn_many_from_block_on`: 200 tasks (and coroutines), spawned from
    /// `block_on`, each waiting for its own oneshot, which a plain thread sends.
    #[test]
    fn many_waiters_spawned_from_block_on_are_woken_by_a_plain_thread() {
        let rt = rt();
        let out = within(EVENTUALLY, move || rt.block_on(many_waiters(200)));
        assert_eq!(out, (0..200).collect::<Vec<_>>());
    }

    /// tokio rt_common.rs `spawn_many_from_task`: the same, 500 of them, from inside a task.
    #[test]
    fn many_waiters_spawned_from_a_task_are_woken_by_a_plain_thread() {
        let rt = rt();
        let out = within(EVENTUALLY, move || {
            rt.block_on(async { corio::spawn(many_waiters(500)).await.unwrap() })
        });
        assert_eq!(out, (0..500).collect::<Vec<_>>());
    }

    /// tokio rt_common.rs `spawn_one_from_block_on_called_on_handle`: a task spawned inside
    /// `Handle::block_on` outlives it, and a later `block_on` awaits it.
    #[test]
    fn a_task_spawned_inside_handle_block_on_is_awaited_by_a_later_block_on() {
        let rt = rt();
        let out = within(EVENTUALLY, move || {
            let (tx, rx) = oneshot::channel();
            #[allow(clippy::async_yields_async)] // the handle is awaited by the next block_on
            let handle = rt.handle().block_on(async {
                corio::spawn(async move {
                    tx.send("ZOMG").unwrap();
                    "DONE"
                })
            });
            rt.block_on(async {
                let msg = rx.await.unwrap();
                assert_eq!(handle.await.unwrap(), "DONE");
                msg
            })
        });
        assert_eq!(out, "ZOMG");
    }

    /// tokio rt_common.rs `nested_rt` and rt_handle_block_on.rs `nesting`, adapted: tokio
    /// panics; `Runtime::block_on` and `Handle::block_on` panic only "if called from inside a
    /// task" (their rustdoc), and `block_on`'s own future runs on the calling plain thread, not
    /// in a task, so the nested calls must run and return.
    #[test]
    fn block_on_nested_in_block_ons_future_runs() {
        let rt1 = rt();
        let rt2 = rt();
        within(EVENTUALLY, move || {
            let out = rt1.block_on(async { rt2.block_on(async { "hello" }) });
            assert_eq!(out, "hello");
            let out = rt1.block_on(async {
                corio::Handle::current().block_on(corio::time::sleep_async(10 * MS));
                1
            });
            assert_eq!(out, 1);
        });
    }

    /// tokio rt_common.rs `create_rt_in_block_on`: a runtime built inside `block_on` works
    /// after it, and is dropped outside.
    #[test]
    fn a_runtime_built_inside_block_on_works_afterwards() {
        let rt1 = rt();
        within(EVENTUALLY, move || {
            let rt2 = rt1.block_on(async { rt() });
            assert_eq!(rt2.block_on(async { "ZOMG" }), "ZOMG");
            assert_eq!(rt2.block_on(async { corio::spawn(async { 5 }).await.unwrap() }), 5);
            drop(rt2);
        });
    }

    /// tokio rt_common.rs `complete_block_on_under_load` and `complete_task_under_load`: with
    /// a task that wakes itself for ever, a oneshot from a plain thread still completes
    /// `block_on`, and one awaited by another task too.
    #[test]
    fn a_wake_from_a_plain_thread_completes_block_on_and_a_task_under_load() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let stop = Arc::new(AtomicBool::new(false));
            let load = rt.spawn(spin_until(stop.clone()));
            rt.block_on(async {
                let (tx, rx) = oneshot::channel();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(50));
                    tx.send(()).unwrap();
                });
                rx.await.unwrap();
            });
            rt.block_on(async {
                let (tx1, rx1) = oneshot::channel();
                let (tx2, rx2) = oneshot::channel();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(50));
                    tx1.send(()).unwrap();
                });
                corio::spawn(async move {
                    rx1.await.unwrap();
                    tx2.send(()).unwrap();
                });
                rx2.await.unwrap();
            });
            stop.store(true, SeqCst);
            rt.block_on(load).unwrap();
        });
    }

    /// tokio rt_common.rs `spawn_from_other_thread_idle`: a plain thread spawns onto an idle
    /// runtime (its workers asleep) while `block_on` waits.
    #[test]
    fn a_spawn_from_a_plain_thread_wakes_an_idle_runtime() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let handle = rt.handle().clone();
            let (tx, rx) = oneshot::channel();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                handle.spawn(async move { tx.send(()).unwrap() });
            });
            rt.block_on(async move { rx.await.unwrap() });
        });
    }

    /// tokio rt_common.rs `spawn_from_other_thread_under_load`: the same on a runtime kept
    /// busy by a task that wakes itself for ever.
    #[test]
    fn a_spawn_from_a_plain_thread_runs_on_a_loaded_runtime() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let handle = rt.handle().clone();
            let (tx, rx) = oneshot::channel();
            let stop = Arc::new(AtomicBool::new(false));
            let s = stop.clone();
            let t = std::thread::spawn(move || {
                handle.spawn(async move { tx.send(()).unwrap() });
            });
            rt.block_on(async move {
                let load = corio::spawn(spin_until(s.clone()));
                rx.await.unwrap();
                s.store(true, SeqCst);
                load.await.unwrap();
            });
            t.join().unwrap();
            assert!(stop.load(SeqCst));
        });
    }

    /// tokio rt_common.rs `always_active_parker`: two plain threads in `block_on` on one
    /// runtime at once, waiting for each other through oneshots and timers.
    #[test]
    fn two_threads_in_block_on_on_one_runtime_wait_for_each_other() {
        let rt = Arc::new(rt());
        within(EVENTUALLY, move || {
            let rt2 = rt.clone();
            let (tx1, rx1) = oneshot::channel();
            let (tx2, rx2) = oneshot::channel();
            let a = std::thread::spawn(move || {
                rt.block_on(async move {
                    rx2.await.unwrap();
                    corio::time::sleep_async(5 * MS).await;
                    tx1.send(()).unwrap();
                });
            });
            let b = std::thread::spawn(move || {
                rt2.block_on(async move {
                    tx2.send(()).unwrap();
                    corio::time::sleep_async(5 * MS).await;
                    rx1.await.unwrap();
                    corio::time::sleep_async(5 * MS).await;
                });
            });
            a.join().unwrap();
            b.join().unwrap();
        });
    }

    // ----- spawn_blocking and blocking (rt_common.rs, rt_threaded.rs) --------------------------

    /// tokio rt_common.rs `sleep_from_blocking`: a pool closure sleeps on the runtime's timer
    /// through an executor that is not corio's.
    #[test]
    fn a_pool_closure_sleeps_through_a_foreign_executor() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.block_on(async {
                corio::spawn_blocking(|| {
                    let start = Instant::now();
                    support::foreign_block_on(corio::time::sleep_async(MS));
                    assert!(start.elapsed() >= MS);
                })
                .await
                .unwrap();
            });
        });
    }

    /// tokio rt_common.rs `socket_from_blocking`: a pool closure connects through a foreign
    /// executor while `block_on` accepts.
    #[test]
    fn a_pool_closure_connects_through_a_foreign_executor() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.block_on(async {
                let listener = corio::net::TcpListener::bind_async("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                let peer = corio::spawn_blocking(move || {
                    support::foreign_block_on(corio::net::TcpStream::connect_async(addr)).unwrap();
                });
                listener.accept_async().await.unwrap();
                peer.await.unwrap();
            });
        });
    }

    /// tokio rt_threaded.rs `yield_after_block_in_place`, adapted: inside `corio::blocking`
    /// in a task, another runtime is built and waited on by a foreign executor (corio's
    /// `Runtime::block_on` panics inside a task, its rustdoc says), then the task yields and
    /// completes.
    #[test]
    fn a_task_yields_after_using_another_runtime_inside_blocking() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.block_on(async {
                corio::spawn(async {
                    corio::blocking(|| {
                        let inner = support::rt(1);
                        assert_eq!(support::foreign_block_on(inner.spawn(async { 3 })).unwrap(), 3);
                        drop(inner);
                    });
                    corio::yield_now_async().await;
                })
                .await
                .unwrap();
            });
        });
    }

    /// tokio rt_threaded.rs `test_nested_block_in_place_with_block_on_between` (a race, run
    /// 100 times): `blocking`, inside it a `block_on` that suspends the coroutine, inside that
    /// `blocking` again; then the coroutine ends.
    #[test]
    fn blocking_then_block_on_then_blocking_again_completes() {
        let rt = corio::Runtime::builder()
            .workers(WORKERS)
            .max_blocking_threads(1)
            .hog_report(false)
            .build()
            .unwrap();
        within(EVENTUALLY, move || {
            for _ in 0..100 {
                rt.run(|| {
                    corio::go(|| {
                        corio::blocking(|| {
                            corio::block_on(async {
                                corio::yield_now_async().await;
                                corio::blocking(|| {});
                            })
                        })
                    })
                    .join()
                    .unwrap();
                });
            }
        });
    }

    /// tokio rt_threaded.rs `yield_now_in_block_in_place` and rt_handle_block_on.rs
    /// `yield_in_block_in_place`: a yield waited on inside `corio::blocking`, from a
    /// coroutine (corio's `block_on`) and from a task (a foreign executor).
    #[test]
    fn a_yield_waited_on_inside_blocking_completes() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| corio::blocking(|| corio::block_on(corio::yield_now_async())));
            let yields = || support::foreign_block_on(corio::yield_now_async());
            rt.block_on(async move {
                corio::spawn(async move { corio::blocking(yields) }).await.unwrap();
            });
        });
    }

    /// tokio rt_threaded.rs `mutex_in_block_in_place`: more lock acquisitions than a budget
    /// holds, waited on inside `corio::blocking`, from a coroutine and from a task.
    #[test]
    fn a_mutex_locked_past_the_budget_inside_blocking_completes() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let lock = Arc::new(corio::sync::Mutex::new(0));
            let l = lock.clone();
            rt.run(move || {
                corio::blocking(|| {
                    corio::block_on(async {
                        for i in 0..129 {
                            *l.lock_async().await = i;
                        }
                    })
                })
            });
            let l = lock.clone();
            rt.block_on(async move {
                corio::spawn(async move {
                    corio::blocking(|| {
                        support::foreign_block_on(async {
                            for i in 0..129 {
                                *l.lock_async().await = i + 1;
                            }
                        })
                    })
                })
                .await
                .unwrap();
            });
            assert_eq!(*lock.lock(), 129);
        });
    }

    /// tokio rt_threaded.rs `wake_deferred_tasks_before_block_in_place`: a waker a task handed
    /// to a yield is woken before the task's `corio::blocking` call ends.
    #[test]
    fn a_yield_polled_by_a_task_wakes_its_waker_before_blocking_ends() {
        struct Flag(AtomicBool);
        impl Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.store(true, SeqCst);
            }
        }
        let rt = rt();
        within(EVENTUALLY, move || {
            let flag = Arc::new(Flag(AtomicBool::new(false)));
            let f = flag.clone();
            let (in_tx, in_rx) = mpsc::channel();
            let (out_tx, out_rx) = mpsc::channel::<()>();
            let task = rt.spawn(async move {
                let waker = Waker::from(f);
                let mut yielded = Box::pin(corio::yield_now_async());
                let polled = yielded.as_mut().poll(&mut Context::from_waker(&waker));
                assert!(polled.is_pending());
                corio::blocking(move || {
                    in_tx.send(()).unwrap();
                    out_rx.recv().unwrap();
                });
            });
            in_rx.recv().unwrap();
            let woken = flag.0.load(SeqCst);
            out_tx.send(()).unwrap();
            rt.block_on(task).unwrap();
            assert!(woken, "the yield's waker was not woken before blocking ended");
        });
    }

    /// tokio rt_threaded.rs `hang_on_shutdown`: the runtime is dropped while a task waits
    /// inside `corio::blocking` for a channel that another (pending) task holds the sender of.
    #[test]
    fn dropping_the_runtime_while_a_task_waits_inside_blocking_returns() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let (sync_tx, sync_rx) = mpsc::channel::<()>();
            let (in_tx, in_rx) = mpsc::channel();
            rt.spawn(async move {
                corio::blocking(move || {
                    in_tx.send(()).unwrap();
                    sync_rx.recv().ok()
                });
            });
            rt.spawn(async move {
                corio::time::sleep_async(Duration::from_millis(400)).await;
                drop(sync_tx);
            });
            in_rx.recv().unwrap();
            rt.block_on(corio::time::sleep_async(Duration::from_millis(200)));
            drop(rt);
        });
    }

    // ----- panics (rt_common.rs, rt_basic.rs) ------------------------------------------------

    /// tokio rt_common.rs `panic_in_task`: a future that panics in `poll` is dropped (its
    /// destructor sends), and the runtime goes on.
    #[test]
    fn a_future_that_panics_in_poll_is_dropped_and_the_runtime_goes_on() {
        quiet_expected_panics();
        struct Boom(Option<oneshot::Sender<()>>);
        impl Future for Boom {
            type Output = ();
            fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
                panic!("{EXPECTED} boom in poll");
            }
        }
        impl Drop for Boom {
            fn drop(&mut self) {
                self.0.take().unwrap().send(()).unwrap();
            }
        }
        let rt = rt();
        within(EVENTUALLY, move || {
            let (tx, rx) = oneshot::channel();
            let h = rt.spawn(Boom(Some(tx)));
            rt.block_on(rx).unwrap();
            assert!(rt.block_on(h).unwrap_err().is_panic());
            assert_eq!(rt.block_on(async { corio::spawn(async { 1 }).await.unwrap() }), 1);
        });
    }

    /// tokio rt_common.rs `panic_in_block_on`: a panic in `block_on`'s future reaches the
    /// caller with its payload, and the runtime stays usable.
    #[test]
    fn a_panic_in_block_ons_future_reaches_the_caller() {
        quiet_expected_panics();
        let rt = rt();
        within(EVENTUALLY, move || {
            let payload = catch_unwind(AssertUnwindSafe(|| {
                rt.block_on(async { panic!("{EXPECTED} boom in block_on") })
            }))
            .unwrap_err();
            assert!(payload_text(&*payload).contains("boom in block_on"));
            assert_eq!(rt.block_on(async { corio::spawn(async { 2 }).await.unwrap() }), 2);
        });
    }

    /// tokio rt_basic.rs `wake_in_drop_after_panic`: `block_on` panics, and the runtime is
    /// dropped during that unwind; its tasks' destructors wake each other. The panic must
    /// reach the caller unchanged (no abort, no hang).
    #[test]
    fn a_runtime_dropped_by_a_block_on_panic_runs_destructors_that_wake_others() {
        quiet_expected_panics();
        struct WakeOnDrop(Option<oneshot::Sender<()>>);
        impl Drop for WakeOnDrop {
            fn drop(&mut self) {
                let _ = self.0.take().unwrap().send(());
            }
        }
        let r = rt();
        let payload = within(EVENTUALLY, move || {
            catch_unwind(AssertUnwindSafe(move || {
                let rt = r;
                let (tx1, rx1) = oneshot::channel::<()>();
                let (tx2, rx2) = oneshot::channel::<()>();
                rt.spawn(async move {
                    let _w = WakeOnDrop(Some(tx2));
                    let _ = rx1.await;
                    unreachable!();
                });
                rt.go(move || {
                    let _w = WakeOnDrop(Some(tx1));
                    let _ = rx2.recv();
                    unreachable!();
                });
                rt.block_on(async {
                    corio::yield_now_async().await;
                    panic!("{EXPECTED} boom");
                });
            }))
            .unwrap_err()
        });
        assert!(payload_text(&*payload).contains("boom"));
    }

    // ----- shutdown (rt_common.rs, rt_threaded.rs, rt_basic.rs) ------------------------------

    /// tokio rt_common.rs `shutdown_timeout`: `shutdown_timeout` returns while a pool closure
    /// still blocks its thread.
    #[test]
    fn shutdown_timeout_returns_while_a_pool_closure_blocks() {
        let rt = rt();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        within(EVENTUALLY, move || {
            rt.block_on(async move {
                let (tx, rx) = oneshot::channel();
                corio::spawn_blocking(move || {
                    tx.send(()).unwrap();
                    let _ = release_rx.recv();
                });
                rx.await.unwrap();
            });
            rt.shutdown_timeout(Duration::from_millis(100));
        });
        drop(release_tx);
    }

    /// tokio rt_common.rs `shutdown_timeout_0`: a zero timeout returns at once despite a pool
    /// closure that may be running or still queued.
    #[test]
    fn shutdown_timeout_zero_returns_at_once_with_a_pool_closure_out() {
        let rt = rt();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        within(EVENTUALLY, move || {
            rt.block_on(async move {
                corio::spawn_blocking(move || {
                    let _ = release_rx.recv();
                });
            });
            let start = Instant::now();
            rt.shutdown_timeout(Duration::ZERO);
            assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
        });
        drop(release_tx);
    }

    /// tokio rt_common.rs `shutdown_timeout_max`: `Duration::MAX` means no limit, and an idle
    /// runtime shuts down.
    #[test]
    fn shutdown_timeout_max_on_an_idle_runtime_returns() {
        let rt = rt();
        within(EVENTUALLY, move || rt.shutdown_timeout(Duration::MAX));
    }

    /// tokio rt_common.rs `shutdown_wakeup_time`: after a timer ran, a huge shutdown timeout
    /// does not make the shutdown wait for it.
    #[test]
    fn shutdown_with_a_huge_timeout_after_a_timer_returns_promptly() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.block_on(corio::time::sleep_async(Duration::from_millis(100)));
            rt.shutdown_timeout(Duration::from_secs(10_000));
        });
    }

    /// tokio rt_common.rs `io_notify_while_shutting_down`: the runtime is dropped while a UDP
    /// receiver (which blocks its worker a little on each datagram) and a sender keep going.
    #[test]
    fn dropping_the_runtime_while_udp_sockets_keep_notifying_returns() {
        within(EVENTUALLY, move || {
            for _ in 1..10 {
                let rt = rt();
                rt.block_on(async {
                    let socket = corio::net::UdpSocket::bind_async("127.0.0.1:0").await.unwrap();
                    let addr = socket.local_addr().unwrap();
                    let send_half = Arc::new(socket);
                    let recv_half = send_half.clone();
                    corio::spawn(async move {
                        let mut buf = [0];
                        loop {
                            recv_half.recv_from_async(&mut buf).await.unwrap();
                            std::thread::sleep(2 * MS);
                        }
                    });
                    corio::spawn(async move {
                        loop {
                            send_half.send_to_async(&[0], addr).await.unwrap();
                            corio::time::sleep_async(MS).await;
                        }
                    });
                    corio::time::sleep_async(5 * MS).await;
                });
                drop(rt);
            }
        });
    }

    /// tokio rt_common.rs `shutdown_concurrent_spawn` (5 rounds): 10 000 tasks wait for
    /// oneshots, which a plain thread sends while the runtime is dropped.
    #[test]
    fn dropping_the_runtime_while_a_thread_wakes_its_tasks_returns() {
        within(EVENTUALLY * 2, || {
            for _ in 0..5 {
                let (tx, rx) = mpsc::channel();
                let rt = rt();
                let mut txs = Vec::new();
                for _ in 0..10_000 {
                    let (tx, rx) = oneshot::channel::<()>();
                    txs.push(tx);
                    rt.spawn(async move {
                        rx.await.unwrap();
                    });
                }
                rt.block_on(corio::yield_now_async());
                let th = std::thread::spawn(move || {
                    tx.send(()).unwrap();
                    for tx in txs.drain(..) {
                        let _ = tx.send(());
                    }
                });
                rx.recv().unwrap();
                drop(rt);
                th.join().unwrap();
            }
        });
    }

    /// tokio rt_threaded.rs `wake_during_shutdown` (issue 3869): the shutdown drops a future
    /// whose destructor, holding a std mutex, wakes another pending task of the runtime; that
    /// task's destructor takes the same mutex. The wake must not drop the task in place.
    #[test]
    fn a_destructor_that_wakes_a_task_while_holding_its_lock_does_not_deadlock_the_drop() {
        struct SharedWaker {
            waker: Option<Waker>,
        }
        struct MyFuture {
            shared: Arc<Mutex<SharedWaker>>,
            put_waker: bool,
        }
        impl Future for MyFuture {
            type Output = ();
            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
                let me = Pin::into_inner(self);
                let mut lock = me.shared.lock().unwrap();
                if me.put_waker {
                    lock.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
        impl Drop for MyFuture {
            fn drop(&mut self) {
                let mut lock = self.shared.lock().unwrap();
                if !self.put_waker
                    && let Some(w) = lock.waker.take()
                {
                    w.wake();
                }
                drop(lock);
            }
        }
        let rt = rt();
        within(EVENTUALLY, move || {
            let shared = Arc::new(Mutex::new(SharedWaker { waker: None }));
            rt.spawn(MyFuture { shared: shared.clone(), put_waker: true });
            rt.spawn(MyFuture { shared: shared.clone(), put_waker: false });
            wait_until("the first future left its waker", || {
                shared.lock().unwrap().waker.is_some()
            });
            rt.block_on(corio::time::sleep_async(20 * MS));
            drop(rt);
        });
    }

    /// tokio rt_threaded.rs `lifo_slot_budget`: a task that spawns a task that spawns ... for
    /// ever must not keep `block_on` from completing, nor the drop from ending it.
    #[test]
    fn an_endless_chain_of_spawns_does_not_stop_block_on_or_the_drop() {
        fn spawn_another() {
            corio::spawn(async { spawn_another() });
        }
        let rt = rt();
        within(EVENTUALLY, move || {
            let (send, recv) = oneshot::channel();
            rt.spawn(async move {
                spawn_another();
                let _ = send.send(());
            });
            rt.block_on(recv).unwrap();
            drop(rt);
        });
    }

    /// tokio rt_threaded.rs `many_oneshot_futures` (5 rounds): 1000 tasks spawned from a plain
    /// thread all run, then the runtime is dropped.
    #[test]
    fn a_thousand_tasks_spawned_from_outside_run_then_the_runtime_drops() {
        within(EVENTUALLY, || {
            for _ in 0..5 {
                let (tx, rx) = mpsc::channel();
                let rt = rt();
                let cnt = Arc::new(AtomicUsize::new(0));
                for _ in 0..1000 {
                    let (cnt, tx) = (cnt.clone(), tx.clone());
                    rt.spawn(async move {
                        if cnt.fetch_add(1, SeqCst) + 1 == 1000 {
                            tx.send(()).unwrap();
                        }
                    });
                }
                rx.recv().unwrap();
                drop(rt);
            }
        });
    }

    /// tokio rt_threaded.rs `many_multishot_futures` (smaller): tracks of forwarding tasks on
    /// bounded channels, whose last task cycles the message back to the start a few times.
    #[test]
    fn chains_of_forwarding_tasks_on_bounded_channels_deliver_every_cycle() {
        const CHAIN: usize = 100;
        const CYCLES: usize = 5;
        const TRACKS: usize = 20;
        within(EVENTUALLY * 2, || {
            for _ in 0..5 {
                let rt = rt();
                let mut start_txs = Vec::new();
                let mut final_rxs = Vec::new();
                for _ in 0..TRACKS {
                    let (start_tx, mut chain_rx) = corio::chan::bounded::<&str>(10);
                    for _ in 0..CHAIN {
                        let (next_tx, next_rx) = corio::chan::bounded(10);
                        rt.spawn(async move {
                            while let Ok(v) = chain_rx.recv_async().await {
                                next_tx.send_async(v).await.unwrap();
                            }
                        });
                        chain_rx = next_rx;
                    }
                    let (final_tx, final_rx) = corio::chan::bounded(10);
                    let cycle_tx = start_tx.clone();
                    rt.spawn(async move {
                        for rem in (0..CYCLES).rev() {
                            let msg = chain_rx.recv_async().await.unwrap();
                            if rem == 0 {
                                final_tx.send_async(msg).await.unwrap();
                            } else {
                                cycle_tx.send_async(msg).await.unwrap();
                            }
                        }
                    });
                    start_txs.push(start_tx);
                    final_rxs.push(final_rx);
                }
                rt.block_on(async move {
                    for tx in &start_txs {
                        tx.send_async("ping").await.unwrap();
                    }
                    for rx in final_rxs {
                        assert_eq!(rx.recv_async().await.unwrap(), "ping");
                    }
                });
            }
        });
    }

    /// tokio rt_threaded.rs `drop_threadpool_drops_futures` (200 rounds): after the drop,
    /// every thread that ran the start hook has run the stop hook, and the pending future was
    /// dropped once.
    #[test]
    fn the_drop_stops_every_started_thread_and_drops_the_pending_future_once() {
        struct Never(Arc<AtomicUsize>);
        impl Future for Never {
            type Output = ();
            fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
                Poll::Pending
            }
        }
        impl Drop for Never {
            fn drop(&mut self) {
                self.0.fetch_add(1, SeqCst);
            }
        }
        within(EVENTUALLY * 2, || {
            for _ in 0..200 {
                let started = Arc::new(AtomicUsize::new(0));
                let stopped = Arc::new(AtomicUsize::new(0));
                let dropped = Arc::new(AtomicUsize::new(0));
                let (a, b) = (started.clone(), stopped.clone());
                let rt = corio::Runtime::builder()
                    .workers(WORKERS)
                    .hog_report(false)
                    .on_thread_start(move || {
                        a.fetch_add(1, SeqCst);
                    })
                    .on_thread_stop(move || {
                        b.fetch_add(1, SeqCst);
                    })
                    .build()
                    .unwrap();
                rt.spawn(Never(dropped.clone()));
                drop(rt);
                let a = started.load(SeqCst);
                assert!(a >= 1);
                assert_eq!(a, stopped.load(SeqCst), "a started thread was not stopped by the drop");
                assert_eq!(dropped.load(SeqCst), 1);
            }
        });
    }

    /// tokio rt_basic.rs `drop_tasks_in_context`: a task's future dropped by the runtime's
    /// shutdown sees that runtime as the current one (so a destructor's `corio::spawn` goes
    /// there, not to the process's default runtime).
    #[test]
    fn a_future_dropped_by_the_shutdown_sees_its_runtime_as_current() {
        struct ContextOnDrop(Arc<AtomicBool>, Arc<AtomicBool>);
        impl Future for ContextOnDrop {
            type Output = ();
            fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
                self.1.store(true, SeqCst);
                Poll::Pending
            }
        }
        impl Drop for ContextOnDrop {
            fn drop(&mut self) {
                self.0.store(corio::Handle::try_current().is_some(), SeqCst);
            }
        }
        let rt = rt();
        within(EVENTUALLY, move || {
            let success = Arc::new(AtomicBool::new(false));
            let polled = Arc::new(AtomicBool::new(false));
            rt.spawn(ContextOnDrop(success.clone(), polled.clone()));
            wait_until("the future was polled", || polled.load(SeqCst));
            drop(rt);
            assert!(success.load(SeqCst), "the destructor saw no current runtime");
        });
    }

    /// tokio rt_basic.rs `no_extra_poll`: a receiving task is polled once at its start, once
    /// per wake-up (its receive then ready, then pending again), and once for the close.
    #[test]
    fn a_receiving_task_is_polled_only_when_woken() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let (tx, rx) = corio::chan::unbounded::<()>();
            let npolls = Arc::new(AtomicUsize::new(0));
            let n = npolls.clone();
            let task = rt.spawn(async move {
                loop {
                    let mut recv = pin!(rx.recv_async());
                    let got = poll_fn(|cx| {
                        n.fetch_add(1, SeqCst);
                        recv.as_mut().poll(cx)
                    })
                    .await;
                    if got.is_err() {
                        return;
                    }
                }
            });
            let settle = |count: usize| {
                wait_until("the receive is polled", || npolls.load(SeqCst) >= count);
                std::thread::sleep(Duration::from_millis(50));
                assert_eq!(npolls.load(SeqCst), count, "extra polls");
            };
            settle(1);
            tx.send(()).unwrap();
            settle(1 + 2);
            drop(tx);
            settle(1 + 2 + 1);
            rt.block_on(task).unwrap();
        });
    }

    // ----- sockets (rt_common.rs, rt_threaded.rs, rt_shutdown_err.rs) -------------------------

    /// tokio rt_common.rs `block_on_socket` and `client_server_block_on`: a TCP server task
    /// and a client in `block_on`.
    #[test]
    fn a_client_in_block_on_talks_to_a_server_task() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.block_on(async {
                let (tx, rx) = oneshot::channel();
                let listener = corio::net::TcpListener::bind_async("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                corio::spawn(async move {
                    let _ = listener.accept_async().await;
                    tx.send(()).unwrap();
                });
                corio::net::TcpStream::connect_async(addr).await.unwrap();
                rx.await.unwrap();
            });
            let (tx, rx) = mpsc::channel();
            rt.block_on(client_server(tx));
            assert!(rx.try_recv().is_ok());
            assert!(rx.try_recv().is_err());
        });
    }

    /// tokio rt_common.rs `local_set_client_server_block_on`, adapted: the server is a local
    /// task (`spawn_local`, which needs a worker, so the client is the main coroutine).
    #[test]
    fn a_client_coroutine_talks_to_a_local_server_task() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let server = corio::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = server.local_addr().unwrap();
                let local = std::rc::Rc::new(());
                corio::spawn_local(async move {
                    let _not_send = local;
                    let (socket, _) = server.accept_async().await.unwrap();
                    socket.write_all_async(b"hello").await.unwrap();
                });
                let client = corio::net::TcpStream::connect(addr).unwrap();
                let mut buf = Vec::new();
                std::io::Read::read_to_end(&mut &client, &mut buf).unwrap();
                assert_eq!(buf, b"hello");
            });
        });
    }

    /// tokio rt_common.rs `io_driver_called_when_under_load`: with 100 tasks that wake
    /// themselves for ever, sockets still make progress.
    #[test]
    fn sockets_make_progress_beside_a_hundred_self_waking_tasks() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let stop = Arc::new(AtomicBool::new(false));
            let loads: Vec<_> = (0..100).map(|_| rt.spawn(spin_until(stop.clone()))).collect();
            rt.block_on(async {
                let listener = corio::net::TcpListener::bind_async("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                let srv = corio::spawn(async move {
                    let (stream, _) = listener.accept_async().await.unwrap();
                    stream.write_all_async(b"hello world").await.unwrap();
                });
                let cli = corio::spawn(async move {
                    let stream = corio::net::TcpStream::connect_async(addr).await.unwrap();
                    let mut dst = [0u8; 11];
                    stream.read_exact_async(&mut dst).await.unwrap();
                    assert_eq!(&dst, b"hello world");
                });
                srv.await.unwrap();
                cli.await.unwrap();
            });
            stop.store(true, SeqCst);
            for l in loads {
                rt.block_on(l).unwrap();
            }
        });
    }

    /// tokio rt_threaded.rs `spawn_shutdown`: client/server pairs started from `block_on` and
    /// from `Runtime::spawn` both finish; after the drop nothing more arrives.
    #[test]
    fn client_server_pairs_spawned_both_ways_finish_before_the_drop() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let (tx, rx) = mpsc::channel();
            let t = tx.clone();
            rt.block_on(async move {
                corio::spawn(client_server(t));
            });
            rt.spawn(client_server(tx));
            rx.recv().unwrap();
            rx.recv().unwrap();
            drop(rt);
            assert!(rx.try_recv().is_err());
        });
    }

    /// tokio rt_shutdown_err.rs `test_is_rt_shutdown_err` and rt_handle_block_on.rs
    /// `unix_listener_shutdown_after_bind`/`_after_accept`/`unix_listener_bind`: an accept on
    /// a listener whose runtime is gone fails at once instead of hanging (corio has no
    /// `is_rt_shutdown_err`, so only the error is checked); while the runtime lives, it waits.
    /// Adapted: a corio socket registers with the runtime current at its first wait, not at
    /// its bind (`io/source.rs`, `Source::registration`), so each listener waits once in `rt1`
    /// first; one that never waited there would simply register with `rt2`.
    #[test]
    fn accept_on_a_listener_of_a_dropped_runtime_fails_instead_of_hanging() {
        let rt1 = rt();
        let rt2 = rt();
        within(EVENTUALLY, move || {
            let dir = support::TempDir::new(&format!("rt-tokio-accept-{WORKERS}"));
            let (tcp, unix) = rt1.block_on(async {
                let tcp = corio::net::TcpListener::bind_async("127.0.0.1:0").await.unwrap();
                let unix = corio::net::UnixListener::bind(dir.join("sock")).unwrap();
                let waited = corio::time::timeout_async(10 * MS, tcp.accept_async()).await;
                assert!(waited.is_err(), "accept did not wait on a live runtime");
                let waited = corio::time::timeout_async(10 * MS, unix.accept_async()).await;
                assert!(waited.is_err(), "accept did not wait on a live runtime");
                (tcp, unix)
            });
            drop(rt1);
            rt2.block_on(async {
                let res = corio::time::timeout_async(Duration::from_secs(10), tcp.accept_async())
                    .await
                    .expect("accept on a dropped runtime's listener hung");
                assert!(res.is_err());
                let res = corio::time::timeout_async(Duration::from_secs(10), unix.accept_async())
                    .await
                    .expect("accept on a dropped runtime's listener hung");
                assert!(res.is_err());
            });
        });
    }

    // ----- coop and saturation (rt_common.rs) ------------------------------------------------

    /// tokio rt_common.rs `coop`, on join handles (which take budget, docs/scheduler.md): one
    /// poll of a task that finds 1000 finished handles ready must see one say `Pending`.
    #[test]
    fn one_poll_that_joins_a_thousand_finished_tasks_runs_out_of_budget() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.block_on(async {
                corio::spawn(async {
                    let mut handles: Vec<_> = (0..1000).map(|_| corio::spawn(async {})).collect();
                    while !handles.iter().all(|h| h.is_finished()) {
                        corio::yield_now_async().await;
                    }
                    poll_fn(|cx| {
                        for h in handles.iter_mut() {
                            if Pin::new(h).poll(cx).is_pending() {
                                return Poll::Ready(());
                            }
                        }
                        panic!("did not yield");
                    })
                    .await;
                })
                .await
                .unwrap();
            });
        });
    }

    /// tokio rt_common.rs `coop`, as tokio wrote it: 1000 ready receives of a channel in one
    /// poll of a task must run out of budget once. (The blocking-style faces of the same
    /// channel are preemption points, docs/scheduler.md; the async faces take no budget and
    /// never consult sysmon's preempt flag, so an async task draining an always-ready channel
    /// holds its worker until the channel is empty.)
    #[test]
    fn one_poll_that_receives_a_thousand_ready_values_runs_out_of_budget() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.block_on(async {
                corio::spawn(async {
                    let (send, recv) = corio::chan::unbounded();
                    for _ in 0..1000 {
                        send.try_send(()).unwrap();
                    }
                    poll_fn(|cx| {
                        for _ in 0..1000 {
                            if pin!(recv.recv_async()).poll(cx).is_pending() {
                                return Poll::Ready(());
                            }
                        }
                        panic!("did not yield");
                    })
                    .await;
                })
                .await
                .unwrap();
            });
        });
    }

    /// tokio rt_common.rs `ping_pong_saturation`: 100 ping-pong pairs of tasks must not keep
    /// a yielding task from finishing.
    #[test]
    fn ping_pong_pairs_do_not_starve_a_yielding_task() {
        const NUM: usize = 100;
        let rt = rt();
        within(EVENTUALLY, move || {
            let running = Arc::new(AtomicBool::new(true));
            let r = running.clone();
            rt.block_on(async move {
                let (spawned_tx, spawned_rx) = corio::chan::unbounded();
                let mut tasks = Vec::new();
                for _ in 0..NUM {
                    let (tx1, rx1) = corio::chan::unbounded::<()>();
                    let (tx2, rx2) = corio::chan::unbounded::<()>();
                    let spawned_tx = spawned_tx.clone();
                    let running = r.clone();
                    tasks.push(corio::spawn(async move {
                        spawned_tx.try_send(()).unwrap();
                        while running.load(SeqCst) {
                            tx1.try_send(()).unwrap();
                            rx2.recv_async().await.unwrap();
                        }
                        drop(tx1);
                        assert!(rx2.recv_async().await.is_err());
                    }));
                    tasks.push(corio::spawn(async move {
                        while rx1.recv_async().await.is_ok() {
                            tx2.try_send(()).unwrap();
                        }
                    }));
                }
                for _ in 0..NUM {
                    spawned_rx.recv_async().await.unwrap();
                }
                corio::spawn(async {
                    for _ in 0..5 {
                        corio::yield_now_async().await;
                    }
                })
                .await
                .unwrap();
                r.store(false, SeqCst);
                for t in tasks {
                    t.await.unwrap();
                }
            });
            assert!(!running.load(SeqCst));
        });
    }

    // ----- handles (rt_handle.rs, rt_handle_block_on.rs) ---------------------------------------

    /// tokio rt_handle.rs `interleave_enter_same_rt`, adapted: tokio panics; corio's guards
    /// may be dropped in any order (`EnterGuard`'s rustdoc), so the runtime stays entered
    /// until the last guard goes.
    #[test]
    fn guards_of_one_runtime_entered_thrice_drop_in_any_order() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let enter1 = rt.enter();
            let enter2 = rt.enter();
            let enter3 = rt.enter();
            drop(enter2);
            assert!(corio::Handle::try_current().is_some());
            drop(enter1);
            assert!(corio::Handle::try_current().is_some());
            assert_eq!(corio::spawn(async { 4 }).join().unwrap(), 4);
            drop(enter3);
            assert!(corio::Handle::try_current().is_none());
        });
    }

    /// tokio rt_handle.rs `drop_tasks_with_reference_cycle`: two tasks each poll the other's
    /// join handle once (registering their wakers in each other) and then finish; both
    /// futures, and the handles they hold, must be freed.
    #[test]
    fn two_tasks_holding_each_others_join_handles_are_both_freed() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let drops = Drops::new();
            let (ta, tb) = (drops.token(), drops.token());
            rt.block_on(async move {
                let (tx, rx) = corio::chan::bounded::<corio::JoinHandle<()>>(1);
                let barrier = Arc::new(corio::sync::Barrier::new(3));
                let (ba, bb) = (barrier.clone(), barrier.clone());
                let a = corio::spawn(async move {
                    let _t = ta;
                    let mut b = rx.recv_async().await.unwrap();
                    let _ = poll_fn(|cx| Poll::Ready(Pin::new(&mut b).poll(cx))).await;
                    ba.wait_async().await;
                    drop(b);
                });
                let b = corio::spawn(async move {
                    let _t = tb;
                    let mut a = a;
                    let _ = poll_fn(|cx| Poll::Ready(Pin::new(&mut a).poll(cx))).await;
                    bb.wait_async().await;
                    drop(a);
                });
                tx.send_async(b).await.unwrap();
                barrier.wait_async().await;
            });
            wait_until("both futures are dropped", || drops.dropped() == 2);
            wait_until("both tasks are gone", || rt.metrics().live_tasks == 0);
        });
    }

    /// tokio rt_handle.rs `spawn_blocking_after_shutdown_drops_outside_lock`: a pool closure
    /// refused after the drop is dropped without a lock held: its destructor may call
    /// `spawn_blocking` again.
    #[test]
    fn a_refused_pool_closure_whose_destructor_spawns_blocking_does_not_deadlock() {
        struct OnDrop<F: FnOnce()>(Option<F>);
        impl<F: FnOnce()> Drop for OnDrop<F> {
            fn drop(&mut self) {
                if let Some(f) = self.0.take() {
                    f();
                }
            }
        }
        let rt = rt();
        within(EVENTUALLY, move || {
            let handle = rt.handle().clone();
            drop(rt);
            let h2 = handle.clone();
            let guard = OnDrop(Some(move || drop(h2.spawn_blocking(|| {}))));
            let jh = handle.spawn_blocking(move || drop(guard));
            assert!(support::foreign_block_on(jh).unwrap_err().is_cancelled());
        });
    }

    /// tokio rt_handle_block_on.rs `basic`, `bounded_mpsc_channel`, `unbounded_mpsc_channel`,
    /// `yield_in_block_in_place`: on an entered thread, `Handle::current().block_on` runs
    /// futures that need no runtime, before the shutdown and after it.
    #[test]
    fn handle_block_on_runs_runtime_independent_futures_before_and_after_shutdown() {
        fn body() {
            let one = corio::Handle::current().block_on(async { 1 });
            assert_eq!(one, 1);
            let (tx, rx) = corio::chan::bounded(1024);
            corio::Handle::current().block_on(tx.send_async(42)).unwrap();
            assert_eq!(corio::Handle::current().block_on(rx.recv_async()).unwrap(), 42);
            let (tx, rx) = corio::chan::unbounded();
            tx.try_send(42).unwrap();
            assert_eq!(corio::Handle::current().block_on(rx.recv_async()).unwrap(), 42);
            corio::Handle::current().block_on(async {
                corio::blocking(|| {
                    corio::Handle::current().block_on(corio::yield_now_async());
                });
            });
        }
        let rt = rt();
        within(EVENTUALLY, move || {
            let _enter = rt.enter();
            body();
            rt.shutdown_timeout(Duration::from_secs(1000));
            body();
        });
    }

    /// tokio rt_handle_block_on.rs `spawn_blocking_started_before_shutdown_continues`: a pool
    /// closure running when the runtime shuts down finishes and delivers its result.
    #[test]
    fn a_pool_closure_running_at_the_shutdown_delivers_its_result() {
        let rt = rt();
        let out = within(EVENTUALLY, move || {
            let _enter = rt.enter();
            let started = Arc::new(AtomicBool::new(false));
            let s = started.clone();
            let handle = corio::spawn_blocking(move || {
                s.store(true, SeqCst);
                std::thread::sleep(Duration::from_millis(200));
                42
            });
            wait_until("the closure runs", || started.load(SeqCst));
            rt.shutdown_timeout(Duration::from_secs(1000));
            corio::Handle::current().block_on(handle)
        });
        assert_eq!(out.expect("the running closure's result was lost"), 42);
    }

    /// tokio rt_handle_block_on.rs `thread_park_ok`: a future that consumes the thread's park
    /// token itself does not make `Handle::block_on` hang.
    #[test]
    fn a_future_that_consumes_the_park_token_does_not_hang_block_on() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let mut exit = false;
            rt.handle().block_on(poll_fn(move |cx| {
                if exit {
                    return Poll::Ready(());
                }
                cx.waker().wake_by_ref();
                std::thread::current().unpark();
                std::thread::park();
                exit = true;
                Poll::Pending
            }));
        });
    }

    // ----- metrics (rt_metrics.rs) -------------------------------------------------------------

    /// tokio rt_metrics.rs `num_workers`.
    #[test]
    fn metrics_report_the_number_of_workers() {
        let rt = rt();
        assert_eq!(rt.metrics().workers, WORKERS);
        assert_eq!(rt.handle().metrics().workers, WORKERS);
    }

    /// tokio rt_metrics.rs `worker_park_count` and `worker_park_unpark_count`, with corio's
    /// counters: an idle runtime's workers go to sleep (counted in `parks`), wake for a
    /// spawn, and all sleep again afterwards, parking more.
    #[test]
    fn workers_park_when_idle_and_again_after_work() {
        let rt = rt();
        within(EVENTUALLY, move || {
            wait_until("every worker sleeps", || rt.metrics().unparked_workers == 0);
            let before = rt.metrics().parks;
            assert!(before >= 1);
            rt.block_on(corio::time::sleep_async(MS));
            rt.block_on(rt.spawn(async {})).unwrap();
            wait_until("every worker sleeps again", || rt.metrics().unparked_workers == 0);
            assert!(rt.metrics().parks > before, "no worker parked after the work");
        });
    }
}

/// Half of the waiters a [`many_waiters`] spawns are coroutines, half async tasks; a plain
/// thread sends each its index; the indices that came back, sorted.
async fn many_waiters(n: usize) -> Vec<usize> {
    let (done_tx, done_rx) = corio::chan::unbounded();
    let mut txs: Vec<_> = (0..n)
        .map(|i| {
            let (tx, rx) = oneshot::channel::<usize>();
            let done_tx = done_tx.clone();
            if i % 2 == 0 {
                corio::spawn(async move {
                    let msg = rx.await.unwrap();
                    assert_eq!(i, msg);
                    done_tx.try_send(msg).unwrap();
                });
            } else {
                corio::go(move || {
                    let msg = rx.recv().unwrap();
                    assert_eq!(i, msg);
                    done_tx.send(msg).unwrap();
                });
            }
            tx
        })
        .collect();
    drop(done_tx);
    std::thread::spawn(move || {
        for (i, tx) in txs.drain(..).enumerate() {
            tx.send(i).unwrap();
        }
    });
    let mut out = Vec::new();
    while let Ok(i) = done_rx.recv_async().await {
        out.push(i);
    }
    out.sort_unstable();
    out
}

// ----- tests that need one flavour ------------------------------------------------------------

/// tokio rt_threaded.rs `blocking`, for two workers (one worker is a single thread by
/// promise, with no spare to hand work to): with every worker held inside `corio::blocking`,
/// 1000 tasks spawned from outside still run (sysmon hands them to spare workers).
#[test]
fn two_workers_tasks_run_while_every_worker_is_inside_blocking() {
    within(EVENTUALLY * 2, || {
        for _ in 0..3 {
            let rt = support::rt(2);
            let (tx, rx) = mpsc::channel();
            let cnt = Arc::new(AtomicUsize::new(0));
            let block = Arc::new(Barrier::new(3));
            for _ in 0..2 {
                let block = block.clone();
                rt.spawn(async move {
                    corio::blocking(move || {
                        block.wait();
                        block.wait();
                    })
                });
            }
            block.wait();
            for _ in 0..1000 {
                let (cnt, tx) = (cnt.clone(), tx.clone());
                rt.spawn(async move {
                    if cnt.fetch_add(1, SeqCst) + 1 == 1000 {
                        tx.send(()).unwrap();
                    }
                });
            }
            rx.recv().unwrap();
            block.wait();
        }
    });
}

/// tokio rt_metrics.rs `global_queue_depth_current_thread` and `_multi_thread`, on one worker
/// (with two, sysmon hands the queue to a spare worker behind a blocked one, so its depth is
/// not stable): while the only worker is held, each spawn from outside adds one to the
/// global queue.
#[test]
fn one_worker_spawns_from_outside_a_held_worker_count_in_the_global_queue() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let (held_tx, held_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        rt.spawn(async move {
            held_tx.send(()).unwrap();
            let _ = release_rx.recv();
        });
        held_rx.recv().unwrap();
        let mut handles = Vec::new();
        for i in 0..10 {
            assert_eq!(rt.metrics().global_queue, i);
            handles.push(rt.spawn(async {}));
        }
        assert_eq!(rt.metrics().global_queue, 10);
        drop(release_tx);
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(rt.metrics().global_queue, 0);
    });
}

/// tokio rt_spawn_blocking.rs `issue_8056_regression_test` (a race in the pool, run many
/// times): quick pool jobs churn the pool's threads between idle and busy while long-lived
/// jobs wait in blocking receives; every job must still be taken.
#[test]
fn pool_jobs_spawned_while_threads_churn_are_never_stranded() {
    type Writer = (Vec<corio::chan::Sender<()>>, Vec<corio::JoinHandle<()>>);
    fn make_writer() -> Writer {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for _ in 0..2 {
            let (tx, rx) = corio::chan::bounded::<()>(1);
            senders.push(tx);
            handles.push(corio::spawn_blocking(move || while rx.recv().is_ok() {}));
        }
        (senders, handles)
    }
    async fn drive_writer((senders, handles): Writer) {
        for tx in &senders {
            tx.send_async(()).await.unwrap();
        }
        drop(senders);
        for h in handles {
            h.await.unwrap();
        }
    }
    async fn quick() {
        corio::spawn_blocking(|| {}).await.unwrap();
    }
    within(EVENTUALLY * 3, || {
        for round in 0..256 {
            let rt = support::rt(1 + round % 2);
            let completed = rt.block_on(async {
                corio::time::timeout_async(Duration::from_secs(10), async {
                    quick().await;
                    quick().await;
                    let persistent = make_writer();
                    for _ in 0..2 {
                        quick().await;
                        quick().await;
                        let (senders, handles) = make_writer();
                        drop(senders);
                        for h in handles {
                            h.await.unwrap();
                        }
                    }
                    quick().await;
                    quick().await;
                    let second = make_writer();
                    drive_writer(persistent).await;
                    drive_writer(second).await;
                })
                .await
                .is_ok()
            });
            assert!(completed, "round {round}: a pool job was stranded");
        }
    });
}
