//! Review of the public runtime API and timers: edge cases of JoinHandle, JoinSet, scope,
//! task_local, time, Builder and fs that the other test files do not cover.
//!
//! Every test is bounded (`within`) and asserts behaviour, never timing beyond lower bounds.

#[macro_use]
mod support;

use std::future::{Future, poll_fn};
use std::io::{Read, Seek, SeekFrom, Write};
use std::pin::Pin;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, mpsc};
use std::task::Poll;
use std::time::{Duration, Instant};

use corio::time::{self, MissedTickBehavior};
use support::{Drops, EVENTUALLY, Gate, panic_message, wait_until, within};

const MS: Duration = Duration::from_millis(1);

/// Set in the environment of this binary re-run as a child process.
const CHILD: &str = "CORIO_REVIEW_RT_CHILD";

fn run_child(test: &str, mode: &str) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, mode)
        .output()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// time
// ---------------------------------------------------------------------------------------------

/// A sleep until `deadline`, first polled (registered) in a task of a runtime of `workers`
/// workers, then taken out of it; the runtime is dropped before this returns.
#[allow(clippy::async_yields_async)] // the registered `Sleep` itself is the result
fn registered_in_a_dropped_runtime(workers: usize, deadline: Instant) -> time::Sleep {
    let rt = support::rt(workers);
    rt.block_on(async move {
        corio::spawn(async move {
            let mut s = time::sleep_until_async(deadline);
            poll_fn(|cx| {
                assert!(Pin::new(&mut s).poll(cx).is_pending());
                Poll::Ready(())
            })
            .await;
            s
        })
        .await
        .unwrap()
    })
}

mod common1 {
    #[allow(unused_imports)]
    use super::*;
    rt_common! {
        /// `timeout` looks at the future first: a future ready at its first poll wins even against
        /// a zero duration or a deadline in the past, in every context.
        #[test]
        fn a_ready_future_beats_a_zero_or_past_timeout_everywhere() {
            within(EVENTUALLY, || {
                let rt = rt();
                let past = Instant::now() - Duration::from_secs(1);
                let (a, b) = rt.run(move || {
                    (
                        time::timeout(Duration::ZERO, async { 1 }),
                        time::timeout_at(past, async { 2 }),
                    )
                });
                assert_eq!(a, Ok(1));
                assert_eq!(b, Ok(2));
                let (c, d) = rt.block_on(async move {
                    corio::spawn(async move {
                        (
                            time::timeout_async(Duration::ZERO, async { 3 }).await,
                            time::timeout_at_async(past, async { 4 }).await,
                        )
                    })
                    .await
                    .unwrap()
                });
                assert_eq!(c, Ok(3));
                assert_eq!(d, Ok(4));
                // A finished task's handle is ready too.
                let e = rt.run(|| {
                    let h = corio::go(|| 5);
                    while !h.is_finished() {
                        corio::yield_now();
                    }
                    time::timeout(Duration::ZERO, h).map(|r| r.unwrap())
                });
                assert_eq!(e, Ok(5));
            });
        }

        /// A `Sleep` that completed, reset to a later deadline, waits again until that deadline.
        #[test]
        fn a_completed_sleep_reset_to_the_future_waits_again() {
            within(EVENTUALLY, || {
                let rt = rt();
                rt.block_on(async {
                    corio::spawn(async {
                        let mut s = time::sleep_async(MS);
                        (&mut s).await;
                        let again = Instant::now() + Duration::from_millis(30);
                        s.reset(again);
                        (&mut s).await;
                        assert!(Instant::now() >= again, "the reset sleep completed early");
                        // And reset to the past: ready at once.
                        s.reset(Instant::now() - Duration::from_secs(1));
                        (&mut s).await;
                    })
                    .await
                    .unwrap()
                });
            });
        }

        /// A registered `Sleep` reset to an earlier deadline completes at the earlier one.
        #[test]
        fn a_registered_sleep_reset_earlier_completes_at_the_new_deadline() {
            within(EVENTUALLY, || {
                let rt = rt();
                rt.block_on(async {
                    corio::spawn(async {
                        let mut s = time::sleep_async(Duration::from_secs(3600));
                        // Register it.
                        poll_fn(|cx| {
                            assert!(Pin::new(&mut s).poll(cx).is_pending());
                            Poll::Ready(())
                        })
                        .await;
                        let soon = Instant::now() + Duration::from_millis(20);
                        s.reset(soon);
                        (&mut s).await;
                        assert!(Instant::now() >= soon);
                    })
                    .await
                    .unwrap()
                });
            });
        }

        /// A sleep first polled (registered) in a task of a runtime, then taken out of it and
        /// awaited elsewhere after the runtime was dropped, still completes, and not before its
        /// deadline (the fallback timer thread takes it over).
        #[test]
        fn a_sleep_registered_in_a_dropped_runtime_completes_on_a_plain_thread() {
            within(EVENTUALLY, || {
                let deadline = Instant::now() + Duration::from_millis(150);
                let sleep = registered_in_a_dropped_runtime(WORKERS, deadline);
                corio::block_on(sleep);
                assert!(Instant::now() >= deadline, "fired early");
            });
        }

        /// The same, awaited in a task of another runtime.
        #[test]
        fn a_sleep_registered_in_a_dropped_runtime_completes_in_another_runtime() {
            within(EVENTUALLY, || {
                let deadline = Instant::now() + Duration::from_millis(150);
                let sleep = registered_in_a_dropped_runtime(WORKERS, deadline);
                let other = support::rt(WORKERS);
                other.block_on(async move { corio::spawn(sleep).await.unwrap() });
                assert!(Instant::now() >= deadline, "fired early");
            });
        }

        /// Thousands of sleepers aborted at once leave the runtime able to fire a new timer, and
        /// leave no task behind.
        #[test]
        fn thousands_of_aborted_sleepers_leave_a_working_timer_and_no_task() {
            within(EVENTUALLY, || {
                let rt = rt();
                rt.run(|| {
                    let mut set = corio::JoinSet::new();
                    for i in 0..2000u64 {
                        if i % 2 == 0 {
                            set.go(move || corio::sleep(Duration::from_secs(60 + i)));
                        } else {
                            set.spawn(async move {
                                time::sleep_async(Duration::from_secs(60 + i)).await
                            });
                        }
                    }
                    corio::sleep(MS);
                    set.abort_all();
                    let mut cancelled = 0;
                    while let Some(r) = set.join_next() {
                        assert!(r.unwrap_err().is_cancelled());
                        cancelled += 1;
                    }
                    assert_eq!(cancelled, 2000);
                    let start = Instant::now();
                    corio::sleep(Duration::from_millis(20));
                    assert!(start.elapsed() >= Duration::from_millis(20));
                });
                wait_until("no task is live", || rt.metrics().live_tasks == 0);
            });
        }

        /// Missed-tick behaviours through `tick_async` in an async task, as the docs' table says.
        #[test]
        fn missed_ticks_through_tick_async_follow_the_table() {
            within(EVENTUALLY, || {
                let rt = rt();
                let p = Duration::from_millis(10);
                rt.block_on(async move {
                    corio::spawn(async move {
                        // Burst
                        let mut every = time::interval(p);
                        every.set_missed_tick_behavior(MissedTickBehavior::Burst);
                        let first = every.tick_async().await;
                        time::sleep_async(p * 3 + p / 2).await;
                        for k in 1..=4 {
                            assert_eq!(every.tick_async().await, first + p * k);
                        }
                        // Delay
                        let mut every = time::interval(p);
                        every.set_missed_tick_behavior(MissedTickBehavior::Delay);
                        let first = every.tick_async().await;
                        time::sleep_async(p * 3 + p / 2).await;
                        let before = Instant::now();
                        let late = every.tick_async().await;
                        assert_eq!(late, first + p);
                        let next = every.tick_async().await;
                        assert!(next >= before + p, "delay: next tick not a period after the late one");
                        // Skip
                        let mut every = time::interval(p);
                        let first = every.tick_async().await;
                        time::sleep_async(p * 3 + p / 2).await;
                        let late = every.tick_async().await;
                        assert_eq!(late, first + p);
                        let next = every.tick_async().await;
                        let k = (next - first).as_nanos() / p.as_nanos();
                        assert_eq!((next - first).as_nanos() % p.as_nanos(), 0, "skip: off the grid");
                        assert!(k >= 4, "skip: went back to a missed tick ({k})");
                    })
                    .await
                    .unwrap()
                });
            });
        }

        /// A tick_async dropped before its instant does not consume the tick.
        #[test]
        fn a_dropped_tick_async_does_not_consume_the_tick() {
            within(EVENTUALLY, || {
                let rt = rt();
                rt.block_on(async {
                    corio::spawn(async {
                        let start = Instant::now() + Duration::from_millis(50);
                        let p = Duration::from_millis(50);
                        let mut every = time::interval_at(start, p);
                        let r = time::timeout_async(MS, every.tick_async()).await;
                        assert!(r.is_err());
                        assert_eq!(every.tick_async().await, start);
                        assert!(Instant::now() >= start);
                    })
                    .await
                    .unwrap()
                });
            });
        }
    }
}

/// A huge period: the first tick at once, the next never (within a short wait).
#[test]
fn an_interval_of_duration_max_ticks_once_then_never() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        rt.run(|| {
            let mut every = time::interval(Duration::MAX);
            every.tick();
            assert!(time::timeout(Duration::from_millis(30), every.tick_async()).is_err());
            let mut every = time::interval(Duration::from_secs(u64::MAX / 2));
            every.set_missed_tick_behavior(MissedTickBehavior::Skip);
            every.tick();
            assert!(time::timeout(Duration::from_millis(30), every.tick_async()).is_err());
        });
    });
}

/// A Skip interval far behind (an `interval_at` start far in the past) does not overflow and
/// lands on the grid after now.
#[test]
fn a_skip_interval_far_behind_lands_on_the_grid_after_now() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        rt.run(|| {
            let p = Duration::from_millis(7);
            let Some(start) = Instant::now().checked_sub(Duration::from_secs(3600)) else {
                return;
            };
            let mut every = time::interval_at(start, p);
            assert_eq!(every.tick(), start);
            let before = Instant::now();
            let next = every.tick();
            assert!(next >= before, "skip returned a missed tick");
            assert_eq!((next - start).as_nanos() % p.as_nanos(), 0, "off the grid");
        });
    });
}

// ---------------------------------------------------------------------------------------------
// JoinHandle
// ---------------------------------------------------------------------------------------------

mod common2 {
    #[allow(unused_imports)]
    use super::*;
    rt_common! {
        /// A JoinHandle first polled by one waiter (a timeout that expired) and then joined by
        /// another (on another thread) wakes the second one.
        #[test]
        fn a_join_handle_polled_by_one_waiter_then_joined_by_another_wakes_the_second() {
            within(EVENTUALLY, || {
                let rt = rt();
                let gate = Gate::new();
                let g = gate.clone();
                let h = rt.spawn(async move {
                    g.wait().await;
                    7
                });
                let h = rt.run(move || {
                    let mut h = h;
                    assert!(time::timeout(Duration::from_millis(5), &mut h).is_err());
                    h
                });
                let t = std::thread::spawn(move || h.join());
                std::thread::sleep(Duration::from_millis(20));
                gate.open();
                assert_eq!(t.join().unwrap().unwrap(), 7);
            });
        }

        /// The output of a task whose handle was dropped before it finished is dropped once; so is
        /// the output of one whose handle is dropped after it finished, unread.
        #[test]
        fn outputs_nobody_reads_are_dropped_exactly_once() {
            within(EVENTUALLY, || {
                let rt = rt();
                let drops = Drops::new();
                let (d1, d2, d3) = (drops.clone(), drops.clone(), drops.clone());
                let gate = Gate::new();
                let g = gate.clone();
                drop(rt.spawn(async move {
                    g.wait().await;
                    d1.token()
                }));
                let done = rt.go(move || d2.token());
                let done_async = rt.spawn(async move { d3.token() });
                wait_until("both finished", || done.is_finished() && done_async.is_finished());
                drop(done);
                drop(done_async);
                gate.open();
                wait_until("all outputs dropped", || drops.dropped() == 3);
                assert_eq!(drops.made(), 3);
                drop(rt);
                assert_eq!(drops.dropped(), 3);
            });
        }

        /// An AbortHandle still cancels the task after its JoinHandle was dropped (detached).
        #[test]
        fn an_abort_handle_cancels_a_detached_task() {
            within(EVENTUALLY, || {
                let rt = rt();
                let drops = Drops::new();
                let d = drops.clone();
                let h = rt.go(move || {
                    let _t = d.token();
                    corio::sleep(Duration::from_secs(600));
                });
                let a = h.abort_handle();
                drop(h);
                wait_until("started", || drops.made() == 1);
                a.abort();
                wait_until("cancelled", || a.is_finished());
                assert_eq!(drops.dropped(), 1);
                let d = drops.clone();
                let h = rt.spawn(async move {
                    let _t = d.token();
                    std::future::pending::<()>().await
                });
                let a = h.abort_handle();
                drop(h);
                wait_until("started", || drops.made() == 2);
                a.abort();
                wait_until("cancelled", || a.is_finished());
                assert_eq!(drops.dropped(), 2);
            });
        }

        /// Aborting a running spawn_blocking: the closure runs exactly once and the join returns.
        #[test]
        fn aborting_a_running_spawn_blocking_runs_it_once_and_join_returns() {
            within(EVENTUALLY, || {
                let rt = rt();
                let runs = Arc::new(AtomicUsize::new(0));
                let r = runs.clone();
                let (started_tx, started_rx) = mpsc::channel();
                let (go_tx, go_rx) = mpsc::channel::<()>();
                let h = rt.spawn_blocking(move || {
                    r.fetch_add(1, SeqCst);
                    started_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                    5
                });
                started_rx.recv().unwrap();
                h.abort();
                go_tx.send(()).unwrap();
                let res = h.join();
                // tokio: abort has no effect on a started blocking task.
                assert!(matches!(res, Ok(5)) || res.as_ref().is_err_and(|e| e.is_cancelled()), "{res:?}");
                std::thread::sleep(Duration::from_millis(20));
                assert_eq!(runs.load(SeqCst), 1);
            });
        }

        /// spawn_blocking through a handle kept past the runtime's drop gives a cancelled handle,
        /// not a hang.
        #[test]
        fn spawn_blocking_after_the_drop_is_cancelled_not_hung() {
            within(EVENTUALLY, || {
                let rt = rt();
                let handle = rt.handle().clone();
                drop(rt);
                let ran = Arc::new(AtomicBool::new(false));
                let r = ran.clone();
                let h = handle.spawn_blocking(move || r.store(true, SeqCst));
                assert!(h.join().unwrap_err().is_cancelled());
                assert!(!ran.load(SeqCst));
                let h = handle.go(|| 1);
                assert!(h.join().unwrap_err().is_cancelled());
            });
        }

        /// The payload of a panicking spawn_blocking closure reaches the handle; `blocking`'s
        /// panic unwinds to its caller with its payload.
        #[test]
        fn panics_of_blocking_work_keep_their_payloads() {
            within(EVENTUALLY, || {
                support::quiet_expected_panics();
                let rt = rt();
                let e = rt
                    .spawn_blocking(|| std::panic::panic_any(format!("{} 42", support::EXPECTED)))
                    .join()
                    .unwrap_err();
                assert!(e.is_panic());
                assert!(support::payload_text(&*e.into_panic()).ends_with("42"));
                let e = rt
                    .go(|| corio::blocking(|| std::panic::panic_any(17u32)))
                    .join()
                    .unwrap_err();
                assert_eq!(e.into_panic().downcast_ref::<u32>(), Some(&17));
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JoinSet
// ---------------------------------------------------------------------------------------------

mod common3 {
    #[allow(unused_imports)]
    use super::*;
    rt_common! {
        /// Tasks spawned into a set on another runtime's handle come back cancelled when that
        /// runtime is dropped; join_next does not hang.
        #[test]
        fn join_next_returns_cancellations_when_the_tasks_runtime_is_dropped() {
            within(EVENTUALLY, || {
                let rt = rt();
                let other = rt.handle().clone();
                let mut set = corio::JoinSet::new();
                for _ in 0..4 {
                    set.spawn_on(std::future::pending::<u32>(), &other);
                    set.go_on(|| { corio::sleep(Duration::from_secs(600)); 1 }, &other);
                }
                std::thread::sleep(Duration::from_millis(10));
                drop(rt);
                let mut n = 0;
                while let Some(r) = set.join_next() {
                    assert!(r.unwrap_err().is_cancelled());
                    n += 1;
                }
                assert_eq!(n, 8);
                assert!(set.is_empty());
            });
        }

        /// try_join_next sees a task that has finished.
        #[test]
        fn try_join_next_returns_a_finished_task() {
            within(EVENTUALLY, || {
                let rt = rt();
                let _g = rt.enter();
                let mut set = corio::JoinSet::new();
                let a = set.spawn(async { 1 });
                wait_until("finished", || a.is_finished());
                assert_eq!(set.try_join_next().map(|r| r.unwrap()), Some(1));
                assert!(set.is_empty());
                assert!(set.try_join_next().is_none());
                // And once polled while pending, then finished.
                let gate = Gate::new();
                let g = gate.clone();
                let b = set.spawn(async move { g.wait().await; 2 });
                assert!(set.try_join_next().is_none());
                gate.open();
                wait_until("finished", || b.is_finished());
                let mut got = None;
                wait_until("try_join_next sees it", || {
                    got = set.try_join_next();
                    got.is_some()
                });
                assert_eq!(got.unwrap().unwrap(), 2);
            });
        }

        /// A set dropped inside a coroutine cancels its stackful members, whose destructors run.
        #[test]
        fn dropping_a_set_unwinds_its_coroutines() {
            within(EVENTUALLY, || {
                let rt = rt();
                let drops = Drops::new();
                let d = drops.clone();
                rt.run(move || {
                    let mut set = corio::JoinSet::new();
                    for _ in 0..10 {
                        let d = d.clone();
                        set.go(move || {
                            let _t = d.token();
                            corio::sleep(Duration::from_secs(600));
                        });
                    }
                    wait_until_co(|| d.made() == 10);
                    drop(set);
                });
                wait_until("every member unwound", || drops.dropped() == 10);
            });
        }
    }
}

/// Polls `cond` from a coroutine, sleeping 1 ms between tries.
fn wait_until_co(mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < EVENTUALLY, "timed out");
        corio::sleep(MS);
    }
}

// ---------------------------------------------------------------------------------------------
// scope
// ---------------------------------------------------------------------------------------------

mod common4 {
    #[allow(unused_imports)]
    use super::*;
    rt_common! {
        /// An async child's unjoined panic makes `scope` panic after every child ended.
        #[test]
        fn an_unjoined_async_childs_panic_is_raised_by_scope() {
            within(EVENTUALLY, || {
                support::quiet_expected_panics();
                let rt = rt();
                let ended = Arc::new(AtomicBool::new(false));
                let e = ended.clone();
                let msg = rt.run(move || {
                    panic_message(|| {
                        corio::scope(|s| {
                            s.spawn(async { panic!("{}", support::EXPECTED) });
                            s.go(|| {
                                corio::sleep(Duration::from_millis(20));
                                e.store(true, SeqCst);
                            });
                        });
                    })
                });
                assert!(ended.load(SeqCst));
                assert!(msg.contains("scoped"), "{msg}");
            });
        }

        /// On a plain thread with a runtime entered, the children run on that runtime.
        #[test]
        fn scope_on_an_entered_plain_thread_uses_the_entered_runtime() {
            within(EVENTUALLY, || {
                let rt = corio::Runtime::builder()
                    .workers(WORKERS)
                    .hog_report(false)
                    .thread_name("scopeent")
                    .build()
                    .unwrap();
                let _g = rt.enter();
                let data = [1, 2, 3];
                let (name, sum) = corio::scope(|s| {
                    let a = s.go(|| std::thread::current().name().unwrap_or("").to_string());
                    let b = s.spawn(async { data.iter().sum::<i32>() });
                    (a.join().unwrap(), b.join().unwrap())
                });
                assert!(name.starts_with("scopeent-"), "{name}");
                assert_eq!(sum, 6);
            });
        }

        /// An aborted child that never started: its closure is dropped, `scope` returns, and its
        /// handle reports the cancellation.
        #[test]
        fn an_aborted_scoped_child_is_cancelled_and_scope_returns() {
            within(EVENTUALLY, || {
                let rt = rt();
                rt.run(|| {
                    let r = corio::scope(|s| {
                        let h = s.go(|| {
                            corio::sleep(Duration::from_secs(600));
                            1
                        });
                        corio::sleep(MS);
                        h.abort();
                        h.join()
                    });
                    assert!(r.unwrap_err().is_cancelled());
                });
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// task_local
// ---------------------------------------------------------------------------------------------

corio::task_local! {
    static KEY: u64;
}

mod common5 {
    #[allow(unused_imports)]
    use super::*;
    rt_common! {
        /// A child task does not inherit its parent's value (as tokio); `block_on` inside the
        /// scope sees it; after the scope, `try_with` is an error again.
        #[test]
        fn task_locals_are_not_inherited_but_seen_through_block_on() {
            within(EVENTUALLY, || {
                let rt = rt();
                rt.run(|| {
                    KEY.sync_scope(5, || {
                        assert_eq!(corio::block_on(async { KEY.get() }), 5);
                        assert!(corio::go(|| KEY.try_with(|v| *v)).join().unwrap().is_err());
                        assert!(corio::block_on(corio::spawn(async { KEY.try_with(|v| *v) }))
                            .unwrap()
                            .is_err());
                        assert!(corio::spawn_blocking(|| KEY.try_with(|v| *v)).join().unwrap().is_err());
                        corio::sleep(MS);
                        assert_eq!(KEY.get(), 5);
                    });
                    assert!(KEY.try_with(|v| *v).is_err());
                });
            });
        }

        /// A scope opened inside a spawn_blocking closure is gone when it returns: the next job on
        /// the same pool thread does not see it.
        #[test]
        fn a_blocking_jobs_scope_does_not_leak_to_the_next_job() {
            within(EVENTUALLY, || {
                let rt = corio::Runtime::builder()
                    .workers(WORKERS)
                    .max_blocking_threads(1)
                    .hog_report(false)
                    .build()
                    .unwrap();
                let a = rt.spawn_blocking(|| KEY.sync_scope(3, || KEY.get())).join().unwrap();
                assert_eq!(a, 3);
                let b = rt.spawn_blocking(|| KEY.try_with(|v| *v)).join().unwrap();
                assert!(b.is_err());
            });
        }

        /// A `scope` future spawned as a task and aborted while pending: its destructors see the
        /// value (the docs: "while it is dropped").
        #[test]
        fn an_aborted_scoped_task_drops_its_future_inside_the_scope() {
            within(EVENTUALLY, || {
                struct SeesKey(Arc<Mutex<Option<Result<u64, corio::AccessError>>>>);
                impl Drop for SeesKey {
                    fn drop(&mut self) {
                        *self.0.lock().unwrap() = Some(KEY.try_with(|v| *v));
                    }
                }
                let rt = rt();
                let seen = Arc::new(Mutex::new(None));
                let s = seen.clone();
                let h = rt.spawn(KEY.scope(11, async move {
                    let _k = SeesKey(s);
                    std::future::pending::<()>().await
                }));
                std::thread::sleep(Duration::from_millis(10));
                h.abort();
                assert!(h.join().unwrap_err().is_cancelled());
                assert_eq!(*seen.lock().unwrap(), Some(Ok(11)));
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Builder
// ---------------------------------------------------------------------------------------------

#[test]
fn invalid_builder_settings_are_invalid_input_errors() {
    within(EVENTUALLY, || {
        for n in [0, 4097, usize::MAX] {
            let e = corio::Runtime::builder().workers(n).build().unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{n}");
        }
        for size in [usize::MAX, (1 << 30) + 1] {
            let e = corio::Runtime::builder()
                .workers(1)
                .stack_size(size)
                .build()
                .unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{size}");
        }
        let e = corio::Runtime::builder()
            .workers(0)
            .run_here(|| ())
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    });
}

/// A tiny stack size is rounded up to something usable.
#[test]
fn a_zero_stack_size_still_runs_coroutines() {
    within(EVENTUALLY, || {
        let rt = corio::Runtime::builder()
            .workers(1)
            .stack_size(0)
            .hog_report(false)
            .build()
            .unwrap();
        assert_eq!(rt.run(|| corio::go(|| 40 + 2).join().unwrap()), 42);
    });
}

/// `run_here` runs the hooks on the calling thread too, as many starts as stops.
#[test]
fn run_here_runs_start_and_stop_hooks_in_pairs() {
    within(EVENTUALLY, || {
        for workers in [1, 2] {
            let started = Arc::new(AtomicUsize::new(0));
            let stopped = Arc::new(AtomicUsize::new(0));
            let (s, t) = (started.clone(), stopped.clone());
            let here = std::thread::current().id();
            let here_started = Arc::new(AtomicBool::new(false));
            let hs = here_started.clone();
            let v = corio::Runtime::builder()
                .workers(workers)
                .hog_report(false)
                .on_thread_start(move || {
                    s.fetch_add(1, SeqCst);
                    if std::thread::current().id() == here {
                        hs.store(true, SeqCst);
                    }
                })
                .on_thread_stop(move || {
                    t.fetch_add(1, SeqCst);
                })
                .run_here(|| corio::spawn_blocking(|| 3).join().unwrap())
                .unwrap();
            assert_eq!(v, 3);
            assert!(here_started.load(SeqCst));
            wait_until("stops match starts", || {
                stopped.load(SeqCst) == started.load(SeqCst)
            });
        }
    });
}

/// `run_here` inside `Runtime::block_on`'s future (a plain thread, no task): it either works
/// or panics with advice; it does not hang.
#[test]
fn run_here_nested_in_block_on_does_not_hang() {
    support::quiet_expected_panics();
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.block_on(async {
                corio::Runtime::builder()
                    .workers(1)
                    .hog_report(false)
                    .run_here(|| corio::go(|| 2).join().unwrap())
                    .unwrap()
            })
        }));
        if let Ok(v) = r {
            assert_eq!(v, 2);
        }
    });
}

/// `Runtime::block_on` inside a blocking-pool closure of the same runtime works (it is a plain
/// thread) and does not deadlock.
#[test]
fn handle_block_on_inside_spawn_blocking_works() {
    within(EVENTUALLY, || {
        let rt = support::rt(2);
        let h = rt.handle().clone();
        let v = rt
            .spawn_blocking(move || {
                h.block_on(async {
                    time::sleep_async(MS).await;
                    corio::spawn(async { 9 }).await.unwrap()
                })
            })
            .join()
            .unwrap();
        assert_eq!(v, 9);
    });
}

/// Dropping the runtime inside one of its own blocking-pool closures does not hang.
#[test]
fn dropping_the_runtime_inside_its_own_spawn_blocking_does_not_hang() {
    within(EVENTUALLY, || {
        let rt = support::rt(2);
        let (tx, rx) = mpsc::channel::<corio::Runtime>();
        let h = rt.handle().spawn_blocking(move || {
            let rt = rx.recv().unwrap();
            drop(rt);
            1
        });
        let sleeper = rt.go(|| corio::sleep(Duration::from_secs(600)));
        tx.send(rt).unwrap();
        assert_eq!(h.join().unwrap(), 1);
        assert!(sleeper.join().unwrap_err().is_cancelled());
    });
}

// ---------------------------------------------------------------------------------------------
// fs
// ---------------------------------------------------------------------------------------------

/// Seek past the end, read at EOF, write after a seek past the end (a hole of zeros), set_len
/// extending and shrinking, a negative seek: each as std does, from a coroutine and from an
/// async task.
#[test]
fn file_edge_semantics_match_std() {
    let dir = support::TempDir::new("review-fs-edges");
    let std_path = dir.join("std");
    let corio_path = dir.join("corio");
    let co_path = dir.join("co");
    /// A file that the script below runs on: std's, or corio's blocking-style one.
    trait Scripted: Read + Write + Seek {
        fn truncate_to(&self, len: u64) -> std::io::Result<()>;
    }
    impl Scripted for std::fs::File {
        fn truncate_to(&self, len: u64) -> std::io::Result<()> {
            self.set_len(len)
        }
    }
    impl Scripted for corio::fs::File {
        fn truncate_to(&self, len: u64) -> std::io::Result<()> {
            self.set_len(len)
        }
    }
    fn script(f: &mut impl Scripted) -> Vec<String> {
        let mut log = Vec::new();
        log.push(format!("{:?}", f.write(b"abc").map_err(|e| e.kind())));
        log.push(format!(
            "{:?}",
            f.seek(SeekFrom::Start(10)).map_err(|e| e.kind())
        ));
        let mut buf = [9u8; 4];
        log.push(format!("{:?}", f.read(&mut buf).map_err(|e| e.kind())));
        log.push(format!("{:?}", f.read(&mut buf).map_err(|e| e.kind())));
        log.push(format!("{:?}", f.write(b"Z").map_err(|e| e.kind())));
        log.push(format!(
            "{:?}",
            f.seek(SeekFrom::Current(-100)).map_err(|e| e.kind())
        ));
        log.push(format!("{:?}", f.stream_position().map_err(|e| e.kind())));
        log.push(format!("{:?}", f.truncate_to(20).map_err(|e| e.kind())));
        log.push(format!("{:?}", f.stream_position().map_err(|e| e.kind())));
        log.push(format!(
            "{:?}",
            f.seek(SeekFrom::Start(0)).map_err(|e| e.kind())
        ));
        let mut all = Vec::new();
        log.push(format!(
            "{:?}",
            f.read_to_end(&mut all).map_err(|e| e.kind())
        ));
        log.push(format!("{all:?}"));
        log.push(format!("{:?}", f.truncate_to(2).map_err(|e| e.kind())));
        log.push(format!("{:?}", f.read(&mut buf).map_err(|e| e.kind())));
        log.push(format!(
            "{:?}",
            f.seek(SeekFrom::End(0)).map_err(|e| e.kind())
        ));
        log.push(format!(
            "{:?}",
            f.seek(SeekFrom::End(-3)).map_err(|e| e.kind())
        ));
        log
    }
    let expected = script(
        &mut std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&std_path)
            .unwrap(),
    );
    within(EVENTUALLY, move || {
        let rt = support::rt(2);
        // blocking-style in a coroutine
        let got = rt.run(move || {
            script(
                &mut corio::fs::File::options()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&co_path)
                    .unwrap(),
            )
        });
        assert_eq!(got, expected, "coroutine");
        // async forms in a task
        let got = rt.block_on(async move {
            corio::spawn(async move {
                let mut log = Vec::new();
                let mut f = corio::fs::File::options()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open_async(&corio_path)
                    .await
                    .unwrap();
                log.push(format!(
                    "{:?}",
                    f.write_async(b"abc").await.map_err(|e| e.kind())
                ));
                log.push(format!(
                    "{:?}",
                    f.seek_async(SeekFrom::Start(10))
                        .await
                        .map_err(|e| e.kind())
                ));
                let mut buf = [9u8; 4];
                log.push(format!(
                    "{:?}",
                    f.read_async(&mut buf).await.map_err(|e| e.kind())
                ));
                log.push(format!(
                    "{:?}",
                    f.read_async(&mut buf).await.map_err(|e| e.kind())
                ));
                log.push(format!(
                    "{:?}",
                    f.write_async(b"Z").await.map_err(|e| e.kind())
                ));
                log.push(format!(
                    "{:?}",
                    f.seek_async(SeekFrom::Current(-100))
                        .await
                        .map_err(|e| e.kind())
                ));
                log.push(format!(
                    "{:?}",
                    f.seek_async(SeekFrom::Current(0))
                        .await
                        .map_err(|e| e.kind())
                ));
                log.push(format!(
                    "{:?}",
                    f.set_len_async(20).await.map_err(|e| e.kind())
                ));
                log.push(format!(
                    "{:?}",
                    f.seek_async(SeekFrom::Current(0))
                        .await
                        .map_err(|e| e.kind())
                ));
                log.push(format!(
                    "{:?}",
                    f.seek_async(SeekFrom::Start(0)).await.map_err(|e| e.kind())
                ));
                let mut all = Vec::new();
                let mut chunk = [0u8; 7];
                let total = loop {
                    match f.read_async(&mut chunk).await {
                        Ok(0) => break Ok(all.len()),
                        Ok(n) => all.extend_from_slice(&chunk[..n]),
                        Err(e) => break Err(e.kind()),
                    }
                };
                log.push(format!("{total:?}"));
                log.push(format!("{all:?}"));
                log.push(format!(
                    "{:?}",
                    f.set_len_async(2).await.map_err(|e| e.kind())
                ));
                log.push(format!(
                    "{:?}",
                    f.read_async(&mut buf).await.map_err(|e| e.kind())
                ));
                log.push(format!(
                    "{:?}",
                    f.seek_async(SeekFrom::End(0)).await.map_err(|e| e.kind())
                ));
                log.push(format!(
                    "{:?}",
                    f.seek_async(SeekFrom::End(-3)).await.map_err(|e| e.kind())
                ));
                log
            })
            .await
            .unwrap()
        });
        // The async script reads in chunks and seeks by `Current(0)` where the other one
        // asks `stream_position`: the same answers.
        assert_eq!(got, expected, "async");
        drop(dir);
    });
}

/// Error kinds of opening: missing file, create_new on an existing one, a directory opened
/// for writing, a read-only file opened for writing (unless root).
#[test]
fn open_errors_have_stds_kinds() {
    let dir = support::TempDir::new("review-fs-open-errors");
    let d = dir.path();
    within(EVENTUALLY, move || {
        let rt = support::rt(1);
        let exists = d.join("exists");
        std::fs::write(&exists, "x").unwrap();
        let ro = d.join("ro");
        std::fs::write(&ro, "x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
        let cases: Vec<(
            std::path::PathBuf,
            std::fs::OpenOptions,
            corio::fs::OpenOptions,
        )> = {
            let mut v = Vec::new();
            let mut s = std::fs::OpenOptions::new();
            s.read(true);
            v.push((
                d.join("missing"),
                s.clone(),
                corio::fs::OpenOptions::from(s),
            ));
            let mut s = std::fs::OpenOptions::new();
            s.write(true).create_new(true);
            v.push((exists.clone(), s.clone(), corio::fs::OpenOptions::from(s)));
            let mut s = std::fs::OpenOptions::new();
            s.write(true);
            v.push((d.clone(), s.clone(), corio::fs::OpenOptions::from(s)));
            let mut s = std::fs::OpenOptions::new();
            s.write(true);
            v.push((ro.clone(), s.clone(), corio::fs::OpenOptions::from(s)));
            v
        };
        for (path, s, c) in cases {
            let want = s.open(&path).map(|_| ()).map_err(|e| e.kind());
            let p = path.clone();
            let c2 = c.clone();
            let got = rt.run(move || c2.open(&p).map(|_| ()).map_err(|e| e.kind()));
            assert_eq!(got, want, "{path:?}");
            let p = path.clone();
            let got = rt.block_on(async move {
                corio::spawn(
                    async move { c.open_async(&p).await.map(|_| ()).map_err(|e| e.kind()) },
                )
                .await
                .unwrap()
            });
            assert_eq!(got, want, "{path:?} async");
        }
    });
}

/// Two tasks reading one `File` through `&File` concurrently: every byte read once, in
/// whole calls.
#[test]
fn two_coroutines_reading_one_shared_file_see_every_byte_once() {
    let dir = support::TempDir::new("review-fs-shared-read");
    let path = dir.join("data");
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    within(EVENTUALLY, move || {
        let rt = support::rt(2);
        let chunks = rt.run(move || {
            let f = Arc::new(corio::fs::File::open(&path).unwrap());
            let readers: Vec<_> = (0..2)
                .map(|_| {
                    let f = f.clone();
                    corio::go(move || {
                        let mut got = Vec::new();
                        loop {
                            let pos = (&*f).stream_position().unwrap();
                            let _ = pos;
                            let mut buf = vec![0u8; 1000];
                            let n = (&*f).read(&mut buf).unwrap();
                            if n == 0 {
                                break;
                            }
                            got.push(buf[..n].to_vec());
                        }
                        got
                    })
                })
                .collect();
            readers
                .into_iter()
                .flat_map(|r| r.join().unwrap())
                .collect::<Vec<_>>()
        });
        let total: usize = chunks.iter().map(Vec::len).sum();
        assert_eq!(total, data.len());
        drop(dir);
    });
}

// ---------------------------------------------------------------------------------------------
// Shutdown and destructors that use the runtime
// ---------------------------------------------------------------------------------------------

/// A coroutine unwound by the runtime's drop whose destructor calls a blocking-style
/// `corio::fs` function (a temporary-file guard removing its file): the docs say destructors
/// run at shutdown; the call should return (an error at worst), not abort the process.
#[test]
fn a_destructor_calling_corio_fs_at_shutdown_does_not_abort_the_process() {
    if std::env::var(CHILD).as_deref() == Ok("fs-dtor") {
        struct RemoveOnDrop(std::path::PathBuf, Arc<Mutex<Option<String>>>);
        impl Drop for RemoveOnDrop {
            fn drop(&mut self) {
                let r = corio::fs::remove_file(&self.0);
                *self.1.lock().unwrap() = Some(format!("{:?}", r.map_err(|e| e.kind())));
            }
        }
        let dir = std::env::temp_dir().join(format!("corio-review-fsdtor-{}", std::process::id()));
        std::fs::write(&dir, "x").unwrap();
        let rt = support::rt(1);
        let seen = Arc::new(Mutex::new(None));
        let s = seen.clone();
        let started = Arc::new(AtomicBool::new(false));
        let st = started.clone();
        let p = dir.clone();
        let _h = rt.go(move || {
            let _g = RemoveOnDrop(p, s);
            st.store(true, SeqCst);
            corio::sleep(Duration::from_secs(600));
        });
        wait_until("started", || started.load(SeqCst));
        drop(rt);
        println!("the process survived: {:?}", seen.lock().unwrap());
        let _ = std::fs::remove_file(&dir);
        return;
    }
    let out = run_child(
        "a_destructor_calling_corio_fs_at_shutdown_does_not_abort_the_process",
        "fs-dtor",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("the process survived"),
        "status {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
}

/// The same with `spawn_blocking(..).join()` in the destructor: a JoinError, not an abort.
#[test]
fn a_destructor_joining_spawn_blocking_at_shutdown_gets_a_result() {
    within(EVENTUALLY, || {
        struct JoinsBlocking(Arc<Mutex<Option<String>>>);
        impl Drop for JoinsBlocking {
            fn drop(&mut self) {
                let r = corio::spawn_blocking(|| 1).join();
                *self.0.lock().unwrap() = Some(format!("{r:?}"));
            }
        }
        let rt = support::rt(1);
        let seen = Arc::new(Mutex::new(None));
        let s = seen.clone();
        let started = Arc::new(AtomicBool::new(false));
        let st = started.clone();
        let _h = rt.go(move || {
            let _g = JoinsBlocking(s);
            st.store(true, SeqCst);
            corio::sleep(Duration::from_secs(600));
        });
        wait_until("started", || started.load(SeqCst));
        drop(rt);
        assert!(seen.lock().unwrap().is_some());
    });
}

/// `corio::fs` through a handle kept past the runtime's drop: the call returns an
/// `io::Result`, so a refused pool job should be an error, as a refused spawn is a
/// `JoinError` and a sleep still works (fallback timers), not a panic.
#[test]
fn an_fs_call_on_a_dropped_runtime_is_an_error_not_a_panic() {
    support::quiet_expected_panics();
    let dir = support::TempDir::new("review-fs-dropped-rt");
    let path = dir.join("f");
    std::fs::write(&path, "hello").unwrap();
    within(EVENTUALLY, move || {
        let rt = support::rt(1);
        let handle = rt.handle().clone();
        drop(rt);
        // Sleeping and spawning through the handle do not panic.
        handle.block_on(time::sleep_async(MS));
        assert!(
            handle
                .block_on(async { corio::spawn(async { 1 }).await })
                .unwrap_err()
                .is_cancelled()
        );
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handle.block_on(corio::fs::read_async(&path))
        }));
        match r {
            Ok(res) => assert!(res.is_err() || res.unwrap() == b"hello"),
            Err(p) => panic!(
                "corio::fs::read_async panicked instead of returning an io::Error: {}",
                support::payload_text(&*p)
            ),
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Misuse panics happen before anything runs
// ---------------------------------------------------------------------------------------------

/// `Runtime::run` inside a task panics ("if called from inside a task"); it must not have
/// started the closure anyway.
#[test]
fn runtime_run_inside_a_task_panics_without_running_the_closure() {
    support::quiet_expected_panics();
    within(EVENTUALLY, || {
        let outer = support::rt(1);
        let inner = Arc::new(support::rt(1));
        let ran = Arc::new(AtomicBool::new(false));
        let (i, r) = (inner.clone(), ran.clone());
        let res = outer
            .go(move || {
                i.run(move || r.store(true, SeqCst));
            })
            .join();
        assert!(
            res.unwrap_err().is_panic(),
            "run inside a task did not panic"
        );
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !ran.load(SeqCst),
            "Runtime::run panicked inside a task, but its closure ran anyway"
        );
    });
}

/// A coroutine and a task that abort themselves are cancelled at their next suspension.
#[test]
fn self_abort_cancels_at_the_next_suspension() {
    within(EVENTUALLY, || {
        let rt = support::rt(2);
        let after = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel::<corio::AbortHandle>();
        let a = after.clone();
        let h = rt.go(move || {
            let me = rx.recv().unwrap();
            me.abort();
            corio::yield_now();
            a.store(true, SeqCst);
        });
        tx.send(h.abort_handle()).unwrap();
        assert!(h.join().unwrap_err().is_cancelled());
        assert!(!after.load(SeqCst));
        let (tx, rx) = mpsc::channel::<corio::AbortHandle>();
        let a = after.clone();
        let h = rt.spawn(async move {
            let me = rx.recv().unwrap();
            me.abort();
            corio::yield_now_async().await;
            a.store(true, SeqCst);
        });
        tx.send(h.abort_handle()).unwrap();
        assert!(h.join().unwrap_err().is_cancelled());
        assert!(!after.load(SeqCst));
    });
}

/// Nested `corio::blocking`: the outer call is still blocking after the inner one returns,
/// so sysmon must not report the coroutine as a hog blocking its thread (the report even
/// suggests moving the call into `corio::blocking`, where it is).
#[test]
fn nested_blocking_is_not_reported_as_a_hog() {
    if let Ok(mode) = std::env::var(CHILD) {
        if mode == "nested" || mode == "flat" {
            let rt = corio::Runtime::builder()
                .workers(2)
                .hog_report(true)
                .build()
                .unwrap();
            let nested = mode == "nested";
            let h = rt.handle().clone();
            let name = if nested {
                "nested-blocker"
            } else {
                "flat-blocker"
            };
            let j = {
                let _g = rt.enter();
                corio::Builder::new()
                    .name(name)
                    .spawn(move || {
                        corio::blocking(|| {
                            if nested {
                                corio::blocking(|| ());
                            }
                            std::thread::sleep(Duration::from_millis(1800));
                        })
                    })
                    .unwrap()
            };
            // Some movable work queued behind it.
            let _other = h.spawn(async { time::sleep_async(MS).await });
            j.join().unwrap();
            println!("child done");
        }
        return;
    }
    let mut reports = Vec::new();
    for mode in ["flat", "nested"] {
        let out = run_child("nested_blocking_is_not_reported_as_a_hog", mode);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(stdout.contains("child done"), "{mode}: {stdout}\n{stderr}");
        reports.push((
            mode,
            stderr
                .lines()
                .filter(|l| l.contains("-blocker'"))
                .map(String::from)
                .collect::<Vec<_>>(),
        ));
    }
    for (mode, lines) in &reports {
        assert!(
            lines.is_empty(),
            "{mode}: a coroutine inside corio::blocking was reported as a hog:\n{lines:#?}"
        );
    }
}

/// Destructors run at shutdown may spawn and join: they get results (cancellations), the
/// process does not abort.
#[test]
fn destructors_at_shutdown_that_spawn_and_join_do_not_abort() {
    if std::env::var(CHILD).as_deref() == Ok("spawn-dtor") {
        struct Spawns(Arc<Mutex<Vec<String>>>);
        impl Drop for Spawns {
            fn drop(&mut self) {
                let a = corio::go(|| 1).join();
                let b = corio::block_on(corio::spawn(async { 2 }));
                let c = corio::time::timeout(MS, std::future::pending::<()>());
                let mut set = corio::JoinSet::new();
                set.spawn(async { 3 });
                let d = set.join_next();
                self.0
                    .lock()
                    .unwrap()
                    .push(format!("{a:?} {b:?} {c:?} {d:?}"));
            }
        }
        let rt = support::rt(2);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let started = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let (s, st) = (seen.clone(), started.clone());
            drop(rt.go(move || {
                let _g = Spawns(s);
                st.fetch_add(1, SeqCst);
                corio::sleep(Duration::from_secs(600));
            }));
        }
        wait_until("started", || started.load(SeqCst) == 2);
        drop(rt);
        println!("the process survived: {:?}", seen.lock().unwrap());
        return;
    }
    let out = run_child(
        "destructors_at_shutdown_that_spawn_and_join_do_not_abort",
        "spawn-dtor",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("the process survived"),
        "status {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
}

/// Inside a spawn_blocking closure: `try_current` agrees with the handle's id if it names a
/// task at all; blocking tasks count as live until they end; `Runtime::run` of another
/// runtime works there (a plain thread).
#[test]
fn blocking_tasks_identity_liveness_and_nested_run() {
    within(EVENTUALLY, || {
        let rt = support::rt(2);
        let (tx, rx) = mpsc::channel::<()>();
        let h = rt.spawn_blocking(move || {
            rx.recv().unwrap();
            corio::try_current().map(|t| t.id())
        });
        wait_until("the blocking task is live", || rt.metrics().live_tasks == 1);
        let id = h.id();
        tx.send(()).unwrap();
        if let Some(seen) = h.join().unwrap() {
            assert_eq!(seen, id);
        }
        wait_until("no live task", || rt.metrics().live_tasks == 0);
        let other = Arc::new(support::rt(1));
        let o = other.clone();
        let v = rt
            .spawn_blocking(move || o.run(|| corio::go(|| 5).join().unwrap()))
            .join()
            .unwrap();
        assert_eq!(v, 5);
    });
}

/// reset_at: the next tick at the new instant, the ones after on the grid from it.
#[test]
fn interval_reset_at_restarts_the_grid() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        rt.run(|| {
            let p = Duration::from_millis(10);
            let mut every = time::interval(p);
            every.tick();
            let at = Instant::now() + Duration::from_millis(25);
            every.reset_at(at);
            assert_eq!(every.tick(), at);
            assert!(Instant::now() >= at);
            let next = every.tick();
            assert!(next >= at + p);
            assert_eq!((next - at).as_nanos() % p.as_nanos(), 0);
        });
    });
}
