//! Shutdown: dropping a `Runtime` cancels everything still alive — futures are dropped,
//! suspended coroutines are unwound on their own threads with every destructor run — joins the
//! workers promptly, and leaves every `JoinHandle` with an answer.

#[macro_use]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use support::{Drops, EVENTUALLY, Gate, wait_until, within};

/// A generous bound for "shuts down promptly" (the sleeps being cancelled last 60 s).
const PROMPTLY: Duration = Duration::from_secs(10);

/// Holds a token at each of `depth` frames, then waits for `wait`.
fn hold_deep(depth: u32, drops: &Drops, wait: &dyn Fn()) {
    let _token = drops.token();
    if depth == 0 {
        wait()
    } else {
        hold_deep(depth - 1, drops, wait)
    }
}

/// A value whose destructor sleeps before it counts itself done.
struct SleepInDrop(Arc<AtomicUsize>);

impl Drop for SleepInDrop {
    fn drop(&mut self) {
        corio::sleep(Duration::from_millis(1));
        self.0.fetch_add(1, SeqCst);
    }
}

/// Joins a task when dropped (a common "wait for the helper" guard).
struct JoinOnDrop(Option<corio::JoinHandle<()>>, Arc<AtomicUsize>);

impl Drop for JoinOnDrop {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.join();
        }
        self.1.fetch_add(1, SeqCst);
    }
}

rt_common! {
    #[test]
    fn dropping_the_runtime_cancels_every_suspended_coroutine_and_pending_task_running_every_destructor() {
        let rt = rt();
        within(EVENTUALLY, move || {
            const EACH: usize = 50;
            let drops = Drops::new();
            let started = Arc::new(AtomicUsize::new(0));
            let mut handles = Vec::new();
            for i in 0..EACH {
                let (d, s) = (drops.clone(), started.clone());
                // Coroutines asleep for a minute, three frames deep.
                handles.push(rt.go(move || {
                    hold_deep(2, &d, &|| {
                        s.fetch_add(1, SeqCst);
                        corio::sleep(Duration::from_secs(60));
                    })
                }));
                let (d, s) = (drops.clone(), started.clone());
                // Coroutines blocked for ever on a future nobody completes.
                handles.push(rt.go(move || {
                    hold_deep(1, &d, &|| {
                        s.fetch_add(1, SeqCst);
                        corio::block_on(Gate::new().wait());
                    })
                }));
                let (token, s) = (drops.token(), started.clone());
                // Tasks pending on a sleep and on a future nobody completes.
                handles.push(rt.spawn(async move {
                    let _token = token;
                    s.fetch_add(1, SeqCst);
                    if i % 2 == 0 {
                        corio::time::sleep_async(Duration::from_secs(60)).await;
                    } else {
                        Gate::new().wait().await;
                    }
                }));
            }
            wait_until("everything is suspended", || started.load(SeqCst) == 3 * EACH);
            assert_eq!(drops.made(), EACH * (3 + 2 + 1));
            assert_eq!(drops.dropped(), 0);
            let start = Instant::now();
            drop(rt);
            assert!(start.elapsed() < PROMPTLY, "shutdown took {:?}", start.elapsed());
            assert_eq!(drops.dropped(), drops.made(), "destructors left unrun");
            for h in handles {
                let err = h.join().unwrap_err();
                assert!(err.is_cancelled(), "{err:?}");
            }
        });
    }

    #[test]
    fn dropping_the_runtime_cancels_coroutines_and_tasks_that_keep_yielding() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let drops = Drops::new();
            let spins = Arc::new(AtomicUsize::new(0));
            let mut handles = Vec::new();
            for _ in 0..20 {
                let (token, s) = (drops.token(), spins.clone());
                handles.push(rt.go(move || {
                    let _token = token;
                    loop {
                        s.fetch_add(1, SeqCst);
                        corio::yield_now();
                    }
                }));
                let (token, s) = (drops.token(), spins.clone());
                handles.push(rt.spawn(async move {
                    let _token = token;
                    loop {
                        s.fetch_add(1, SeqCst);
                        corio::yield_now_async().await;
                    }
                }));
            }
            wait_until("they spin", || spins.load(SeqCst) > 1000);
            let start = Instant::now();
            drop(rt);
            assert!(start.elapsed() < PROMPTLY);
            assert_eq!(drops.dropped(), 40);
            for h in handles {
                assert!(h.join().unwrap_err().is_cancelled());
            }
        });
    }

    #[test]
    fn dropping_the_runtime_while_other_threads_keep_spawning_resolves_every_handle() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let drops = Drops::new();
            let stop = Arc::new(AtomicBool::new(false));
            let finished = Arc::new(AtomicUsize::new(0));
            let spawners: Vec<_> = (0..3)
                .map(|t| {
                    let (handle, drops, stop) = (rt.handle().clone(), drops.clone(), stop.clone());
                    let finished = finished.clone();
                    std::thread::spawn(move || {
                        let mut handles = Vec::new();
                        let mut after_stop = 0;
                        let mut i = 0u64;
                        while after_stop < 200 {
                            if stop.load(SeqCst) {
                                after_stop += 1;
                            }
                            let token = drops.token();
                            let finished = finished.clone();
                            let h = if (i + t).is_multiple_of(2) {
                                handle.go(move || {
                                    let _token = token;
                                    corio::yield_now();
                                    finished.fetch_add(1, SeqCst);
                                    i
                                })
                            } else {
                                handle.spawn(async move {
                                    let _token = token;
                                    corio::yield_now_async().await;
                                    finished.fetch_add(1, SeqCst);
                                    i
                                })
                            };
                            handles.push((i, h));
                            i += 1;
                        }
                        handles
                    })
                })
                .collect();
            // Some tasks have finished (on a loaded machine, 20 ms of sleep was not always
            // enough for the first), and the spawners go on spawning while the runtime drops.
            wait_until("some tasks finish", || finished.load(SeqCst) > 0);
            std::thread::sleep(Duration::from_millis(20));
            drop(rt);
            stop.store(true, SeqCst);
            let (mut values, mut cancelled) = (0, 0);
            for s in spawners {
                for (i, h) in s.join().unwrap() {
                    match h.join() {
                        Ok(v) => {
                            assert_eq!(v, i);
                            values += 1;
                        }
                        Err(e) => {
                            assert!(e.is_cancelled(), "{e:?}");
                            cancelled += 1;
                        }
                    }
                }
            }
            assert!(values > 0 && cancelled >= 600, "values {values}, cancelled {cancelled}");
            assert_eq!(drops.dropped(), drops.made());
        });
    }

    #[test]
    fn dropping_the_runtime_drops_the_closures_of_coroutines_that_never_started() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let drops = Drops::new();
            let ran = Arc::new(AtomicUsize::new(0));
            let gate = Gate::new();
            // Keep every worker busy so that the coroutines spawned next stay queued.
            let busy: Vec<_> = (0..WORKERS)
                .map(|_| {
                    let g = gate.clone();
                    rt.go(move || {
                        while !g.is_open() {
                            std::hint::spin_loop();
                        }
                    })
                })
                .collect();
            let handles: Vec<_> = (0..20)
                .map(|_| {
                    let (token, r) = (drops.token(), ran.clone());
                    rt.go(move || {
                        let _token = token;
                        r.fetch_add(1, SeqCst);
                    })
                })
                .collect();
            // The spinners finish once the gate opens, inside the drop's shutdown.
            let g = gate.clone();
            let opener = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                g.open();
            });
            drop(rt);
            opener.join().unwrap();
            assert_eq!(drops.dropped(), 20);
            // Each either ran before the shutdown (and finished) or was cancelled unstarted.
            let mut cancelled = 0;
            for h in handles {
                match h.join() {
                    Ok(()) => {}
                    Err(e) => {
                        assert!(e.is_cancelled());
                        cancelled += 1;
                    }
                }
            }
            assert_eq!(cancelled + ran.load(SeqCst), 20);
            for b in busy {
                let _ = b.join();
            }
        });
    }

    #[test]
    fn join_handles_of_finished_tasks_keep_their_results_after_the_runtime_is_dropped() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let co = rt.go(|| 1);
            let task = rt.spawn(async { 2 });
            wait_until("both finish", || co.is_finished() && task.is_finished());
            drop(rt);
            assert_eq!(co.join().unwrap(), 1);
            assert_eq!(task.join().unwrap(), 2);
        });
    }

    #[test]
    fn a_thread_blocked_in_join_is_released_with_a_cancelled_error_by_the_drop() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let h = rt.go(|| corio::block_on(Gate::new().wait()));
            let t = rt.spawn(Gate::new().wait());
            let joiner = std::thread::spawn(move || (h.join(), t.join()));
            std::thread::sleep(Duration::from_millis(20)); // let it park in join
            drop(rt);
            let (a, b) = joiner.join().unwrap();
            assert!(a.unwrap_err().is_cancelled());
            assert!(b.unwrap_err().is_cancelled());
        });
    }

    #[test]
    fn spawning_through_a_handle_kept_past_the_drop_gives_a_cancelled_join_handle() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let handle = rt.handle().clone();
            drop(rt);
            let drops = Drops::new();
            let ran = Arc::new(AtomicBool::new(false));
            let (token, r) = (drops.token(), ran.clone());
            let co = handle.go(move || {
                let _token = token;
                r.store(true, SeqCst);
            });
            let (token, r) = (drops.token(), ran.clone());
            let task = handle.spawn(async move {
                let _token = token;
                r.store(true, SeqCst);
            });
            assert!(co.join().unwrap_err().is_cancelled());
            assert!(task.join().unwrap_err().is_cancelled());
            assert!(!ran.load(SeqCst), "a task spawned after shutdown ran");
            assert_eq!(drops.dropped(), 2, "the closures and futures were not dropped");
        });
    }

    #[test]
    fn dropping_the_runtime_waits_for_a_coroutine_inside_blocking_then_cancels_it() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let drops = Drops::new();
            let blocking = Arc::new(AtomicBool::new(false));
            let after = Arc::new(AtomicBool::new(false));
            let (token, b, a) = (drops.token(), blocking.clone(), after.clone());
            let h = rt.go(move || {
                let _token = token;
                b.store(true, SeqCst);
                corio::blocking(|| std::thread::sleep(Duration::from_millis(100)));
                corio::sleep(Duration::from_secs(60));
                a.store(true, SeqCst);
            });
            wait_until("it blocks", || blocking.load(SeqCst));
            let start = Instant::now();
            drop(rt);
            assert!(start.elapsed() < PROMPTLY);
            assert!(h.join().unwrap_err().is_cancelled());
            assert!(!after.load(SeqCst));
            assert_eq!(drops.dropped(), 1);
        });
    }

    #[test]
    fn live_tasks_is_zero_once_everything_is_joined() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let handles: Vec<_> = (0..100)
                .map(|i| {
                    if i % 2 == 0 {
                        rt.go(move || {
                            corio::yield_now();
                            i
                        })
                    } else {
                        rt.spawn(async move { i })
                    }
                })
                .collect();
            let sum: i32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(sum, 4950);
            wait_until("live_tasks is 0", || rt.metrics().live_tasks == 0);
        });
    }

    #[test]
    fn a_destructor_that_sleeps_while_shutdown_unwinds_its_coroutine_still_completes() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let done = Arc::new(AtomicUsize::new(0));
            let drops = Drops::new();
            let started = Arc::new(AtomicUsize::new(0));
            let handles: Vec<_> = (0..10)
                .map(|_| {
                    let (dn, token, s) = (done.clone(), drops.token(), started.clone());
                    rt.go(move || {
                        let _outer = token; // dropped after the sleeping destructor
                        let _sleepy = SleepInDrop(dn);
                        s.fetch_add(1, SeqCst);
                        corio::sleep(Duration::from_secs(60));
                    })
                })
                .collect();
            wait_until("all sleep", || started.load(SeqCst) == 10);
            let start = Instant::now();
            drop(rt);
            assert!(start.elapsed() < PROMPTLY);
            for h in handles {
                assert!(h.join().unwrap_err().is_cancelled());
            }
            // DESIGN.md, Reliability: "Shutdown drops every suspended coroutine with its
            // destructors run" — including one that sleeps for a millisecond.
            assert_eq!(done.load(SeqCst), 10, "sleeping destructors did not finish");
            assert_eq!(drops.dropped(), 10, "destructors below a sleeping one never ran");
        });
    }

    /// A coroutine unwound at shutdown whose destructor joins a stackless task (itself pending
    /// for ever, so shutdown must cancel it): the join must return (cancelled), and the
    /// unwinding go on, instead of the coroutine being leaked after the grace period.
    #[test]
    fn a_destructor_that_joins_a_pending_task_at_shutdown_completes() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let done = Arc::new(AtomicUsize::new(0));
            let drops = Drops::new();
            let started = Arc::new(AtomicUsize::new(0));
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let (dn, token, s) = (done.clone(), drops.token(), started.clone());
                    let helper = rt.spawn(Gate::new().wait());
                    rt.go(move || {
                        let _outer = token;
                        let _joins = JoinOnDrop(Some(helper), dn);
                        s.fetch_add(1, SeqCst);
                        corio::sleep(Duration::from_secs(60));
                    })
                })
                .collect();
            wait_until("all sleep", || started.load(SeqCst) == 4);
            let start = Instant::now();
            drop(rt);
            let took = start.elapsed();
            for h in handles {
                assert!(h.join().unwrap_err().is_cancelled());
            }
            assert_eq!(done.load(SeqCst), 4, "destructors that join a task did not finish");
            assert_eq!(drops.dropped(), 4, "destructors below them never ran");
            assert!(took < PROMPTLY, "shutdown took {took:?}");
        });
    }

    /// A destructor that blocks for ever at shutdown costs the drop only the grace period; the
    /// other coroutines are unwound completely.
    #[test]
    fn a_destructor_that_blocks_for_ever_at_shutdown_does_not_hang_the_drop() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let drops = Drops::new();
            let started = Arc::new(AtomicUsize::new(0));
            struct BlockForever;
            impl Drop for BlockForever {
                fn drop(&mut self) {
                    corio::block_on(Gate::new().wait());
                }
            }
            let (token, s) = (drops.token(), started.clone());
            let stuck = rt.go(move || {
                let _token = token; // below the blocking destructor: never dropped (leaked)
                let _blocks = BlockForever;
                s.fetch_add(1, SeqCst);
                corio::sleep(Duration::from_secs(60));
            });
            let others: Vec<_> = (0..10)
                .map(|_| {
                    let (token, s) = (drops.token(), started.clone());
                    rt.go(move || {
                        let _token = token;
                        s.fetch_add(1, SeqCst);
                        corio::sleep(Duration::from_secs(60));
                    })
                })
                .collect();
            wait_until("all sleep", || started.load(SeqCst) == 11);
            let start = Instant::now();
            drop(rt);
            assert!(start.elapsed() < PROMPTLY, "shutdown took {:?}", start.elapsed());
            assert!(stuck.join().unwrap_err().is_cancelled());
            for h in others {
                assert!(h.join().unwrap_err().is_cancelled());
            }
            assert_eq!(drops.dropped(), 10, "only the stuck coroutine's values may be leaked");
        });
    }
}

/// `Runtime::drop` on one of the runtime's own workers cannot join its own thread; it starts
/// the shutdown and lets the threads exit. Everything else it owns must still be cancelled
/// and dropped: here a pending task (a future holding a token).
#[test]
fn a_runtime_dropped_inside_its_own_coroutine_still_cancels_its_pending_tasks() {
    for workers in support::FLAVOURS {
        let rt = support::rt(workers);
        within(EVENTUALLY, move || {
            let handle = rt.handle().clone();
            let drops = Drops::new();
            let token = drops.token();
            let pending = handle.spawn(async move {
                let _token = token;
                Gate::new().wait().await;
            });
            let token = drops.token();
            let sleeper = handle.go(move || {
                let _token = token;
                corio::sleep(Duration::from_secs(60));
            });
            std::thread::sleep(Duration::from_millis(20));
            let dropper = handle.go(move || drop(rt));
            let _ = dropper.join();
            assert!(sleeper.join().unwrap_err().is_cancelled());
            let dropped = support::holds_within(Duration::from_secs(5), || drops.dropped() == 2);
            assert!(dropped, "the pending task's future was never dropped");
            assert!(pending.join().unwrap_err().is_cancelled());
        });
    }
}

/// After a runtime is dropped, none of its threads (workers, sysmon, blocking pool) is left.
#[test]
fn dropping_a_runtime_leaves_none_of_its_threads_behind() {
    for workers in support::FLAVOURS {
        let prefix = format!("sdleft{workers}");
        let rt = corio::Runtime::builder()
            .workers(workers)
            .hog_report(false)
            .thread_name(prefix.as_str())
            .build()
            .unwrap();
        within(EVENTUALLY, move || {
            rt.run(|| {
                corio::sleep(Duration::from_millis(1));
                corio::spawn_blocking(|| ()).join().unwrap();
            });
            assert!(
                support::threads_named(&prefix).len() > workers,
                "sysmon and a pool thread"
            );
            drop(rt);
            let gone = support::holds_within(Duration::from_secs(5), || {
                support::threads_named(&prefix).is_empty()
            });
            assert!(gone, "threads left: {:?}", support::threads_named(&prefix));
        });
    }
}

/// The same when the runtime is dropped inside one of its own coroutines.
#[test]
fn a_runtime_dropped_inside_its_own_coroutine_leaves_none_of_its_threads_behind() {
    for workers in support::FLAVOURS {
        let prefix = format!("sdself{workers}");
        let rt = corio::Runtime::builder()
            .workers(workers)
            .hog_report(false)
            .thread_name(prefix.as_str())
            .build()
            .unwrap();
        within(EVENTUALLY, move || {
            let handle = rt.handle().clone();
            handle
                .go(|| corio::spawn_blocking(|| ()).join().unwrap())
                .join()
                .unwrap();
            let _ = handle.go(move || drop(rt)).join();
            let gone = support::holds_within(Duration::from_secs(5), || {
                support::threads_named(&prefix).is_empty()
            });
            assert!(gone, "threads left: {:?}", support::threads_named(&prefix));
        });
    }
}

/// A one-worker runtime, and a token that a closure the runtime keeps (`on_thread_start`)
/// holds: the runtime is freed when the token is back to one reference ([`freed`]).
fn runtime_with_token() -> (corio::Runtime, Arc<()>) {
    let token = Arc::new(());
    let held = token.clone();
    let rt = corio::Runtime::builder()
        .workers(1)
        .hog_report(false)
        .on_thread_start(move || {
            let _ = &held;
        })
        .build()
        .unwrap();
    (rt, token)
}

/// Whether the runtime that `token` came with is freed within `PROMPTLY`.
fn freed(token: &Arc<()>) -> bool {
    support::holds_within(PROMPTLY, || Arc::strong_count(token) == 1)
}

/// The runtime is freed when its drop returns, even when cancelling its tasks takes a while.
/// The drop cancels the tasks that are not running on the dropping thread, one after another,
/// while the workers notice the shutdown on their own; the last worker to leave finished the
/// shutdown at once, handing the timers still in its heap to the fallback timer thread. A task
/// the drop cancelled after that left its timer there, with its waker: the task, and through
/// it the whole runtime (its epoll, eventfd and timerfd), lived until the timer's deadline.
/// Found by `net_stress_more`'s cut datagram soak (a `timeout_async` of 20 s).
///
/// Seen here through a closure the runtime keeps (`on_thread_start`) and its captured token.
#[test]
fn the_runtime_is_freed_by_its_drop_even_when_cancelling_its_tasks_is_slow() {
    /// A value whose destructor takes a while on the thread that drops the runtime.
    struct SlowDrop;
    impl Drop for SlowDrop {
        fn drop(&mut self) {
            if std::thread::current().name() == Some("within") {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    within(EVENTUALLY, || {
        let (rt, token) = runtime_with_token();
        const TASKS: usize = 8;
        let waiting = Arc::new(AtomicUsize::new(0));
        for _ in 0..TASKS {
            let waiting = waiting.clone();
            drop(rt.spawn(async move {
                // Dropped in this order: the slow destructor, then the timer.
                let mut both = (
                    SlowDrop,
                    corio::time::sleep_async(Duration::from_secs(3600)),
                );
                waiting.fetch_add(1, SeqCst);
                (&mut both.1).await;
            }));
        }
        // Keeps the worker awake, so that it sees the shutdown while the drop is still
        // cancelling the tasks above.
        drop(rt.go(|| {
            loop {
                corio::yield_now();
            }
        }));
        wait_until("every task waits on its timer", || {
            waiting.load(SeqCst) == TASKS
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(rt);
        assert!(
            freed(&token),
            "the runtime outlived its drop by {PROMPTLY:?}"
        );
    });
}

/// The runtime is freed by its drop while plain threads keep waking its coroutines. A wake from
/// outside the workers marks the task notified and then puts it in its home worker's inbox; a
/// coroutine whose mark came just before the shutdown took it was cancelled and finished, and
/// its worker left, before the waking thread's push. The push then came after the inbox's
/// last drain and stayed there for ever, holding the task and through it the runtime (found
/// by `net_stress_more`'s cut datagram soak, a wake from the fallback timer thread).
#[test]
fn the_runtime_is_freed_by_its_drop_while_plain_threads_wake_its_coroutines() {
    within(EVENTUALLY * 2, || {
        for round in 0..60 {
            let (rt, token) = runtime_with_token();
            let stop = Arc::new(AtomicBool::new(false));
            let mut senders = Vec::new();
            for _ in 0..16 {
                let (tx, rx) = corio::chan::bounded::<u32>(1);
                drop(rt.go(move || while rx.recv().is_ok() {}));
                senders.push(tx);
            }
            // Two plain threads wake the coroutines as fast as they can.
            let wakers: Vec<_> = senders
                .chunks(8)
                .map(|chunk| {
                    let chunk = chunk.to_vec();
                    let stop = stop.clone();
                    std::thread::spawn(move || {
                        while !stop.load(SeqCst) {
                            for tx in &chunk {
                                let _ = tx.try_send(1);
                            }
                        }
                    })
                })
                .collect();
            drop(senders);
            std::thread::sleep(Duration::from_millis(2 + round % 5));
            drop(rt);
            stop.store(true, SeqCst);
            for w in wakers {
                w.join().unwrap();
            }
            assert!(
                freed(&token),
                "round {round}: the runtime outlived its drop by {PROMPTLY:?}"
            );
        }
    });
}

/// A coroutine that keeps blocking while it unwinds at shutdown is leaked: its frames never
/// end, so what they borrowed stays borrowed for ever — including a thread-local of its worker,
/// lent by `LocalKey::with` for as long as the closure runs. Its worker thread must therefore
/// never destroy its thread-locals: it stays, parked, instead of exiting. (It exited, and a
/// scoped thread that the leaked frame had started could read the thread-local after its drop:
/// a use after free from safe code.)
#[test]
fn a_worker_that_leaked_a_coroutine_at_shutdown_keeps_its_thread_locals() {
    static DROPPED: AtomicBool = AtomicBool::new(false);
    struct Victim(#[allow(dead_code)] u64);
    impl Drop for Victim {
        fn drop(&mut self) {
            DROPPED.store(true, SeqCst);
        }
    }
    thread_local! {
        static VICTIM: Victim = const { Victim(7) };
    }
    struct BlockForever;
    impl Drop for BlockForever {
        fn drop(&mut self) {
            corio::block_on(Gate::new().wait());
        }
    }
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let started = Arc::new(AtomicBool::new(false));
        let s = started.clone();
        let stuck = rt.go(move || {
            VICTIM.with(|victim| {
                std::thread::scope(|scope| {
                    // Holds the borrow on another thread while the coroutine waits (and, once
                    // leaked, for ever).
                    scope.spawn(move || {
                        let _borrowed: &Victim = victim;
                        loop {
                            std::thread::park();
                        }
                    });
                    let _blocks = BlockForever;
                    s.store(true, SeqCst);
                    corio::sleep(Duration::from_secs(60));
                });
            });
        });
        wait_until("the coroutine waits", || started.load(SeqCst));
        let start = Instant::now();
        drop(rt);
        assert!(
            start.elapsed() < PROMPTLY,
            "shutdown took {:?}",
            start.elapsed()
        );
        assert!(stuck.join().unwrap_err().is_cancelled());
        // Had the worker exited, its thread-locals would be gone by now.
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !DROPPED.load(SeqCst),
            "the worker's thread-local was dropped while the leaked coroutine borrows it"
        );
    });
}
