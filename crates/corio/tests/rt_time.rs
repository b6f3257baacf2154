//! Timers: `sleep` in coroutines and on plain threads, `sleep_async` in tasks, `timeout`,
//! `interval`, many concurrent sleepers, the fallback timer thread used where no runtime is, and
//! a timer whose worker is busy.
//!
//! Every duration is checked only from below ("slept at least d"); upper bounds are "finishes
//! eventually" (the watchdog), so the tests hold on a loaded machine.

#[macro_use]
mod support;

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use corio::time::{self, Elapsed};
use support::{CountPolls, Drops, EVENTUALLY, Gate, Rng, panic_message, within};

const MS: Duration = Duration::from_millis(1);

/// Go's `big` in `TestOverflowSleep`: the largest `time.Duration`, 292 years.
const GO_BIG: Duration = Duration::from_nanos(i64::MAX as u64);

/// A sleep whose deadline does not fit in 64-bit nanoseconds: 585 years and 20 ms.
fn overflowing() -> Duration {
    Duration::from_nanos(u64::MAX) + 20 * MS
}

rt_common! {
    #[test]
    fn sleep_in_a_coroutine_lasts_at_least_its_duration() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                for d in [MS, 5 * MS, 20 * MS] {
                    let start = Instant::now();
                    corio::sleep(d);
                    assert!(start.elapsed() >= d, "slept {:?} < {d:?}", start.elapsed());
                }
            })
        });
    }

    #[test]
    fn sleep_async_in_a_task_lasts_at_least_its_duration() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let task = rt.spawn(async {
                for d in [MS, 5 * MS, 20 * MS] {
                    let start = Instant::now();
                    let sleep = time::sleep_async(d);
                    assert!(sleep.deadline() >= start + d);
                    // Not elapsed unless the clock has reached the deadline: a thread
                    // descheduled for over 1 ms right here (a loaded machine) sees it elapsed.
                    let elapsed = sleep.is_elapsed();
                    assert!(!elapsed || Instant::now() >= sleep.deadline(), "elapsed early");
                    sleep.await;
                    assert!(start.elapsed() >= d, "slept {:?} < {d:?}", start.elapsed());
                }
            });
            task.join().unwrap();
        });
    }

    #[test]
    fn sleeping_zero_or_until_the_past_returns() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let past = Instant::now();
                corio::sleep(Duration::ZERO);
                time::sleep_until(past);
                assert!(time::sleep_until_async(past).is_elapsed());
                corio::block_on(time::sleep_until_async(past));
                corio::spawn(async move {
                    time::sleep_async(Duration::ZERO).await;
                    time::sleep_until_async(past).await;
                })
                .join()
                .unwrap();
            })
        });
    }

    #[test]
    fn a_thousand_coroutines_sleeping_random_durations_all_wake_after_their_deadlines() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let mut rng = Rng::new(0x51ee_9e75);
            let handles: Vec<_> = (0..1000)
                .map(|_| {
                    let d = Duration::from_micros(rng.below(20_000));
                    rt.go(move || {
                        let start = Instant::now();
                        corio::sleep(d);
                        start.elapsed() >= d
                    })
                })
                .collect();
            let early = handles.into_iter().map(|h| h.join().unwrap()).filter(|ok| !ok).count();
            assert_eq!(early, 0, "sleepers woke before their deadline");
        });
    }

    #[test]
    fn a_thousand_tasks_sleeping_random_durations_all_wake_after_their_deadlines() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let mut rng = Rng::new(0x7a5c);
            let woke = Arc::new(AtomicUsize::new(0));
            let handles: Vec<_> = (0..1000)
                .map(|_| {
                    let d = Duration::from_micros(rng.below(20_000));
                    let woke = woke.clone();
                    rt.spawn(async move {
                        let start = Instant::now();
                        time::sleep_async(d).await;
                        woke.fetch_add(1, SeqCst);
                        start.elapsed() >= d
                    })
                })
                .collect();
            let early = handles.into_iter().map(|h| h.join().unwrap()).filter(|ok| !ok).count();
            assert_eq!(early, 0, "sleepers woke before their deadline");
            assert_eq!(woke.load(SeqCst), 1000);
        });
    }

    #[test]
    fn an_expired_timeout_returns_elapsed_and_drops_the_future() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let drops = Drops::new();
            let token = drops.token();
            let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let p = polls.clone();
            let d = drops.clone();
            rt.run(move || {
                let inner = CountPolls::new(p, async move {
                    let _token = token;
                    Gate::new().wait().await; // never completes
                });
                let start = Instant::now();
                let result = time::timeout(5 * MS, inner);
                assert!(start.elapsed() >= 5 * MS);
                let _elapsed: Elapsed = result.unwrap_err();
                // Dropped by the time `timeout` returns, not later.
                assert_eq!(d.dropped(), 1);
            });
            assert!(polls.load(SeqCst) >= 1);
        });
    }

    #[test]
    fn a_timeout_whose_future_completes_returns_its_output() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                assert_eq!(time::timeout(Duration::from_secs(60), async { 7 }), Ok(7));
                let slow_enough = time::timeout(Duration::from_secs(60), time::sleep_async(2 * MS));
                assert_eq!(slow_enough, Ok(()));
            })
        });
    }

    #[test]
    fn timeout_async_in_a_task_has_both_outcomes() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let drops = Drops::new();
            let token = drops.token();
            let (expired, completed) = rt.block_on(async move {
                corio::spawn(async move {
                    let never = async move {
                        let _token = token;
                        Gate::new().wait().await
                    };
                    let expired = time::timeout_async(3 * MS, never).await;
                    let completed = time::timeout_async(Duration::from_secs(60), async { 1 }).await;
                    (expired, completed)
                })
                .await
                .unwrap()
            });
            assert!(expired.is_err());
            assert_eq!(completed, Ok(1));
            assert_eq!(drops.dropped(), 1);
        });
    }

    #[test]
    fn interval_ticks_lie_on_its_period_grid_and_never_come_early() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let period = 3 * MS;
                let mut every = time::interval(period);
                assert_eq!(every.period(), period);
                let first = every.tick(); // the first tick is at once
                let mut previous = first;
                for _ in 0..5 {
                    let due = every.tick();
                    assert!(Instant::now() >= due, "a tick returned before it was due");
                    assert!(due > previous);
                    let since_first = (due - first).as_nanos();
                    assert_eq!(since_first % period.as_nanos(), 0, "tick off the grid");
                    previous = due;
                }
            })
        });
    }

    #[test]
    fn a_late_interval_skips_missed_ticks_instead_of_bursting() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let period = 5 * MS;
                let mut every = time::interval(period);
                let first = every.tick();
                corio::sleep(6 * period); // miss several ticks
                let late = every.tick(); // the missed one, returned at once
                let returned_at = Instant::now();
                let next = every.tick();
                assert_eq!(late, first + period);
                assert!(next > returned_at, "a burst: the tick after a late one was already due");
                assert_eq!((next - first).as_nanos() % period.as_nanos(), 0);
            })
        });
    }

    #[test]
    fn interval_tick_async_in_a_task() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let n = rt
                .spawn(async {
                    let mut every = time::interval(2 * MS);
                    let start = every.tick_async().await;
                    let mut last = start;
                    for _ in 0..4 {
                        last = every.tick_async().await;
                    }
                    assert!(last - start >= 8 * MS);
                    4
                })
                .join()
                .unwrap();
            assert_eq!(n, 4);
        });
    }

    #[test]
    fn runtime_block_on_sleeps_on_the_runtime_timers_from_a_plain_thread() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let start = Instant::now();
            rt.block_on(time::sleep_async(20 * MS));
            assert!(start.elapsed() >= 20 * MS);
            // And from a future that also waits for a task.
            let start = Instant::now();
            rt.block_on(async {
                let t = corio::spawn(time::sleep_async(10 * MS));
                time::sleep_async(10 * MS).await;
                t.await.unwrap();
            });
            assert!(start.elapsed() >= 10 * MS);
        });
    }

    #[test]
    fn a_sleeper_spawned_on_an_idle_runtime_wakes() {
        let rt = rt();
        within(EVENTUALLY, move || {
            std::thread::sleep(20 * MS); // let every worker park
            let start = Instant::now();
            rt.go(|| corio::sleep(30 * MS)).join().unwrap();
            assert!(start.elapsed() >= 30 * MS);
            std::thread::sleep(20 * MS);
            rt.spawn(time::sleep_async(30 * MS)).join().unwrap();
        });
    }

    /// Many timeouts whose futures complete early remove their timers from the heaps while
    /// sleepers' timers must stay and fire on time: a heap that loses, misplaces or fires the
    /// wrong entry shows here as an early or a missing wake-up.
    #[test]
    fn sleepers_wake_on_time_while_thousands_of_timeouts_are_cancelled_around_them() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let mut rng = Rng::new(0x71e0);
            let sleepers: Vec<_> = (0..300)
                .map(|_| {
                    let d = Duration::from_micros(rng.below(30_000));
                    rt.go(move || {
                        let start = Instant::now();
                        corio::sleep(d);
                        start.elapsed() >= d
                    })
                })
                .collect();
            // A timeout's future completes at its second poll, normally long before the
            // deadline; but the OS may deschedule the worker for longer than `d` between the
            // timeout's creation and that poll (seen on a loaded machine), and then `Elapsed` is
            // the right answer. What must never happen is an `Elapsed` before the deadline.
            let cancellers: Vec<_> = (0..20u64)
                .map(|k| {
                    rt.spawn(async move {
                        let mut rng = Rng::new(k);
                        let mut cancelled = 0;
                        for _ in 0..200 {
                            let d = Duration::from_micros(1_000 + rng.below(50_000));
                            let start = Instant::now();
                            match time::timeout_async(d, corio::yield_now_async()).await {
                                Ok(()) => cancelled += 1,
                                Err(Elapsed { .. }) => assert!(
                                    start.elapsed() >= d,
                                    "a timeout of {d:?} elapsed after {:?}",
                                    start.elapsed()
                                ),
                            }
                        }
                        cancelled
                    })
                })
                .collect();
            let cancelled: usize = cancellers.into_iter().map(|c| c.join().unwrap()).sum();
            // Thousands of timers removed from the heaps early is what this test is about.
            assert!(cancelled > 0, "every one of 4,000 timeouts elapsed");
            let early = sleepers.into_iter().map(|h| h.join().unwrap()).filter(|ok| !ok).count();
            assert_eq!(early, 0, "sleepers woke before their deadlines");
        });
    }

    /// An abort that arrives while a coroutine is inside `corio::blocking` takes effect at its
    /// next suspension after the blocking call returns.
    #[test]
    fn an_abort_during_blocking_takes_effect_at_the_next_suspension() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let inside = Arc::new(AtomicBool::new(false));
            let after_blocking = Arc::new(AtomicBool::new(false));
            let after_yield = Arc::new(AtomicBool::new(false));
            let (i, ab, ay) = (inside.clone(), after_blocking.clone(), after_yield.clone());
            // The blocking call ends only once the abort was made (it slept 30 ms, which a
            // descheduled test thread on a loaded machine outslept: the abort then came after
            // the task had finished).
            let (aborted_tx, aborted_rx) = std::sync::mpsc::channel::<()>();
            let h = rt.go(move || {
                corio::blocking(|| {
                    i.store(true, SeqCst);
                    aborted_rx.recv().unwrap();
                });
                ab.store(true, SeqCst);
                corio::yield_now();
                ay.store(true, SeqCst);
            });
            support::wait_until("it is inside blocking", || inside.load(SeqCst));
            h.abort();
            aborted_tx.send(()).unwrap();
            assert!(h.join().unwrap_err().is_cancelled());
            assert!(after_blocking.load(SeqCst), "blocking calls are not interrupted");
            assert!(!after_yield.load(SeqCst), "ran past the first suspension after the abort");
        });
    }

    /// Plain threads register timers on the runtime (through `Runtime::block_on`, so into
    /// worker 0's heap) and cancel others (timeouts that complete), all at once, while the
    /// workers park and unpark: every sleep ends, none early — no timer is lost by the driver
    /// being re-armed or handed from worker to worker.
    #[test]
    fn timers_added_and_cancelled_from_many_plain_threads_all_fire() {
        let rt = Arc::new(rt());
        within(EVENTUALLY, move || {
            let threads: Vec<_> = (0..6u64)
                .map(|t| {
                    let rt = rt.clone();
                    std::thread::spawn(move || {
                        let mut rng = Rng::new(t + 100);
                        let mut early = 0;
                        for _ in 0..150 {
                            let d = Duration::from_micros(rng.below(1_500));
                            let start = Instant::now();
                            if rng.chance(30) {
                                let done = rt.block_on(time::timeout_async(
                                    Duration::from_millis(50),
                                    time::sleep_async(d),
                                ));
                                assert_eq!(done, Ok(()));
                            } else {
                                rt.block_on(time::sleep_async(d));
                            }
                            if start.elapsed() < d {
                                early += 1;
                            }
                        }
                        early
                    })
                })
                .collect();
            let early: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
            assert_eq!(early, 0, "sleeps ended before their deadlines");
        });
    }

    // ----- durations at the limit (issue 8, bugs 1 and 2) -----------------------------------

    /// Issue 8, bug 1: `Instant::now() + d` panicked ("overflow when adding duration to
    /// instant") for `Duration::MAX`. A deadline past the representable range means never.
    #[test]
    fn durations_at_the_limit_mean_never_in_a_task() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.spawn(async {
                assert_eq!(time::timeout_async(Duration::MAX, async { 7 }).await, Ok(7));
                let never = time::sleep_async(Duration::MAX);
                assert!(!never.is_elapsed());
                assert!(time::timeout_async(20 * MS, never).await.is_err());
                let mut every = time::interval(Duration::MAX);
                every.tick_async().await; // the first tick is at once
                assert!(time::timeout_async(20 * MS, every.tick_async()).await.is_err());
            })
            .join()
            .unwrap();
        });
    }

    /// Issue 8, bug 1, the blocking-style forms in a coroutine.
    #[test]
    fn durations_at_the_limit_mean_never_in_a_coroutine() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                assert_eq!(time::timeout(Duration::MAX, async { 7 }), Ok(7));
                assert!(time::timeout(20 * MS, time::sleep_async(Duration::MAX)).is_err());
                let mut every = time::interval(Duration::MAX);
                every.tick();
                assert!(time::timeout(20 * MS, every.tick_async()).is_err());
                let sleeper = corio::go(|| corio::sleep(Duration::MAX));
                corio::sleep(20 * MS);
                assert!(!sleeper.is_finished());
                sleeper.abort();
            });
        });
    }

    /// Issue 8, bug 2, Go's `TestOverflowSleep` (time/sleep_test.go) on a runtime: a sleep whose
    /// deadline does not fit in 64-bit nanoseconds (585 years) was cut with `as u64` and fired
    /// about 20 ms later. Go's own `big` (2^63-1 ns) is checked too; Go's negative duration has
    /// no `Duration`, its equivalents (zero, a deadline in the past) return at once.
    #[test]
    fn an_overflowing_sleep_never_fires_on_a_runtime() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let woke = Arc::new(AtomicUsize::new(0));
            for big in [overflowing(), GO_BIG] {
                let w = woke.clone();
                rt.go(move || {
                    corio::sleep(big);
                    w.fetch_add(1, SeqCst);
                });
                let w = woke.clone();
                rt.spawn(async move {
                    time::sleep_async(big).await;
                    w.fetch_add(1, SeqCst);
                });
            }
            rt.run(|| {
                for big in [overflowing(), GO_BIG] {
                    assert!(time::timeout(50 * MS, time::sleep_async(big)).is_err());
                }
                corio::sleep(Duration::ZERO);
                corio::time::sleep_until(Instant::now() - MS);
            });
            let early = rt.block_on(async {
                time::timeout_async(50 * MS, time::sleep_async(overflowing())).await
            });
            assert!(early.is_err(), "the big timeout fired");
            assert_eq!(woke.load(SeqCst), 0, "a big sleep returned");
        });
    }
}

// ----- without a runtime ---------------------------------------------------------------------

#[test]
fn sleep_on_a_plain_thread_sleeps_the_thread() {
    let start = Instant::now();
    corio::sleep(10 * MS);
    assert!(start.elapsed() >= 10 * MS);
}

#[test]
fn sleep_async_without_a_runtime_uses_the_fallback_timer_thread() {
    let start = Instant::now();
    corio::block_on(time::sleep_async(10 * MS));
    assert!(start.elapsed() >= 10 * MS);
    // Many at once, out of order.
    let sleepers: Vec<_> = [15u64, 3, 9, 1, 12]
        .into_iter()
        .map(|ms| {
            std::thread::spawn(move || {
                let start = Instant::now();
                corio::block_on(time::sleep_async(Duration::from_millis(ms)));
                start.elapsed() >= Duration::from_millis(ms)
            })
        })
        .collect();
    assert!(sleepers.into_iter().all(|t| t.join().unwrap()));
}

#[test]
fn timeout_on_a_plain_thread_expires_and_completes() {
    let start = Instant::now();
    let expired = time::timeout(5 * MS, Gate::new().wait());
    assert!(start.elapsed() >= 5 * MS);
    let err = expired.unwrap_err();
    assert_eq!(err.to_string(), "deadline has elapsed");
    assert_eq!(io::Error::from(err).kind(), io::ErrorKind::TimedOut);
    // A completed timeout cancels its fallback timer; later sleeps are unaffected.
    assert_eq!(time::timeout(Duration::from_secs(60), async { 3 }), Ok(3));
    let start = Instant::now();
    corio::block_on(time::sleep_async(5 * MS));
    assert!(start.elapsed() >= 5 * MS);
}

#[test]
fn an_interval_with_a_zero_period_panics_with_a_message() {
    let msg = panic_message(|| {
        let _ = time::interval(Duration::ZERO);
    });
    assert!(msg.contains("period must be positive"), "{msg}");
}

// ----- one flavour ---------------------------------------------------------------------------

/// A stackless task whose timer sits in the heap of a worker that a coroutine then hogs (spins
/// without any runtime call): the timer must still fire — found by the other worker, or by
/// sysmon — and the task, being movable, must run on the other worker while the hog goes on.
/// The hog spins until the task has finished (or 10 s), so there is no timing assertion: a
/// timer stuck behind the hog makes the hog give up and the test fail.
#[test]
fn a_task_whose_timer_is_on_a_hogged_worker_still_wakes_on_the_other_worker() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        for attempt in 0..20 {
            let outcome = rt.run(|| {
                let hog_thread = std::thread::current().id();
                let polled_on: Arc<Mutex<Option<ThreadId>>> = Arc::default();
                let done = Arc::new(AtomicBool::new(false));
                let (p, d) = (polled_on.clone(), done.clone());
                let task = corio::spawn(async move {
                    *p.lock().unwrap() = Some(std::thread::current().id());
                    time::sleep_async(5 * MS).await;
                    d.store(true, SeqCst);
                    std::thread::current().id()
                });
                // Let the task run (and register its timer) on this worker or the other.
                while polled_on.lock().unwrap().is_none() {
                    corio::yield_now();
                }
                if *polled_on.lock().unwrap() != Some(hog_thread) {
                    task.join().unwrap();
                    return None; // registered on the other worker: try again
                }
                // Hog this worker without any runtime call.
                let start = Instant::now();
                while !done.load(SeqCst) && start.elapsed() < Duration::from_secs(10) {
                    std::hint::spin_loop();
                }
                let woke_while_hogged = done.load(SeqCst);
                let woke_on = task.join().unwrap();
                Some((woke_while_hogged, woke_on != hog_thread))
            });
            if let Some((woke_while_hogged, elsewhere)) = outcome {
                assert!(
                    woke_while_hogged,
                    "the timer never fired while its worker was busy"
                );
                assert!(elsewhere);
                return;
            }
            assert!(
                attempt < 19,
                "the task never registered its timer on the hog's worker"
            );
        }
    });
}

// ----- timers and the runtime's lifetime -----------------------------------------------------

/// A plain thread inside `Runtime::enter` sleeps on that runtime's timers. If another thread
/// drops the runtime meanwhile, the sleep must still last its whole duration: shutting a
/// runtime down must not end other threads' sleeps early.
#[test]
fn a_sleep_on_an_entered_thread_lasts_its_duration_even_if_the_runtime_is_dropped() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        let _entered = rt.enter();
        let dropper = std::thread::spawn(move || {
            std::thread::sleep(30 * MS);
            drop(rt);
        });
        let start = Instant::now();
        corio::block_on(time::sleep_async(300 * MS));
        let slept = start.elapsed();
        dropper.join().unwrap();
        assert!(slept >= 300 * MS, "a 300 ms sleep returned after {slept:?}");
    });
}

/// The same thread, still inside `enter` after the runtime is gone, sleeps again: it must not
/// wait for ever on timers nobody fires any more.
#[test]
fn a_sleep_on_an_entered_thread_after_the_runtime_is_dropped_still_wakes() {
    let rt = support::rt(1);
    within(Duration::from_secs(10), move || {
        let entered = rt.enter();
        std::thread::scope(|s| {
            s.spawn(move || drop(rt));
        });
        let start = Instant::now();
        corio::block_on(time::sleep_async(10 * MS));
        assert!(start.elapsed() >= 10 * MS);
        drop(entered);
    });
}

/// A sleep that an entered thread registered in the runtime's heap outlives the runtime: the
/// fallback timer thread takes its timer over. Dropping the sleep then must release the timer
/// and its waker at once, not at the deadline an hour later (they held the waker, and through
/// it whatever it wakes, until then).
#[test]
fn a_sleep_taken_over_by_the_fallback_thread_releases_its_waker_when_dropped() {
    struct Counted;
    impl std::task::Wake for Counted {
        fn wake(self: Arc<Self>) {}
    }
    let counted = Arc::new(Counted);
    let waker = std::task::Waker::from(counted.clone());
    let rt = support::rt(1);
    let entered = rt.enter();
    let mut sleep = time::sleep_async(Duration::from_secs(3600));
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(std::pin::Pin::new(&mut sleep).poll(&mut cx).is_pending());
    drop(entered);
    drop(rt);
    assert_eq!(
        Arc::strong_count(&counted),
        3,
        "the timer holds a clone of the waker while it waits"
    );
    drop(sleep);
    assert_eq!(
        Arc::strong_count(&counted),
        2,
        "the dropped sleep's timer still holds its waker"
    );
}

/// Issue 8, bugs 1 and 2 without a runtime: the fallback timer thread (`block_on` and
/// `timeout` on a plain thread) and the plain thread's own sleep (Go's `TestOverflowSleep`).
#[test]
fn an_overflowing_sleep_never_fires_on_a_plain_thread() {
    let woke = Arc::new(AtomicUsize::new(0));
    for big in [overflowing(), GO_BIG, Duration::MAX] {
        let w = woke.clone();
        std::thread::spawn(move || {
            corio::sleep(big);
            w.fetch_add(1, SeqCst);
        });
        let w = woke.clone();
        std::thread::spawn(move || {
            corio::block_on(time::sleep_async(big));
            w.fetch_add(1, SeqCst);
        });
        assert!(
            time::timeout(50 * MS, time::sleep_async(big)).is_err(),
            "{big:?} fired"
        );
        assert_eq!(time::timeout(big, async { 1 }), Ok(1));
    }
    corio::sleep(Duration::ZERO);
    corio::block_on(time::sleep_until_async(Instant::now() - MS));
    std::thread::sleep(20 * MS);
    assert_eq!(woke.load(SeqCst), 0, "a big sleep returned");
}
