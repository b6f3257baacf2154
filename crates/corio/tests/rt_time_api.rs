//! The time API beyond sleep/timeout/interval: deadlines as instants (`sleep_until`,
//! `timeout_at`, `interval_at`), resetting (`Sleep::reset`, `Interval::reset`) and what an
//! interval does about missed ticks (`MissedTickBehavior`).
//!
//! The interval cases are ported from tokio's tests/time_interval.rs (`burst`, `delay`, `skip`,
//! `reset`), which run on a paused clock. corio has no paused clock, so these check ORDER and
//! COUNTS against instants read around each call — a tick is never due before the instant it
//! must follow, and it lies on the grid it must lie on — never how quickly anything happened.

#[macro_use]
mod support;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use corio::time::{self, MissedTickBehavior};
use support::{EVENTUALLY, Gate, within};

/// The interval period: long enough that the sleeps that make ticks late are unmistakable.
const P: Duration = Duration::from_millis(10);
const MS: Duration = Duration::from_millis(1);
/// A tick as the test saw it: its instant, and the window in which `tick` ran.
#[derive(Clone, Copy, Debug)]
struct Taken {
    due: Instant,
    before: Instant,
    after: Instant,
}

/// Ticks `every` (blocking-style) and records the window around the call.
fn take(every: &mut time::Interval) -> Taken {
    let before = Instant::now();
    let due = every.tick();
    let after = Instant::now();
    assert!(after >= due, "a tick returned before it was due");
    Taken { due, before, after }
}

/// Checks that `next` follows the tick `prev` by `every`'s rule. The interval read the clock
/// somewhere in `[max(before, due), after]` of `prev`: where that window decides whether
/// `prev` was late, the rule is checked exactly; where it straddles the line (a loaded
/// machine), either answer that the rule allows at some instant of the window is accepted.
fn check_follows(every: &time::Interval, prev: Taken, next: Instant) {
    let p = every.period();
    let on_time = prev.due + p;
    let earliest_now = prev.before.max(prev.due);
    // The first instant at which taking `prev` makes it late: when the next tick's instant has
    // come, or for `Delay` more than 5 ms after `prev` was due (tokio's tolerance), whichever
    // is first. A loaded machine can wake a tick that late.
    let late_from = match every.missed_tick_behavior() {
        MissedTickBehavior::Delay => {
            on_time.min(prev.due + DELAY_TOLERANCE + Duration::from_nanos(1))
        }
        _ => on_time,
    };
    let late_rule = match every.missed_tick_behavior() {
        MissedTickBehavior::Burst => next == on_time,
        MissedTickBehavior::Delay => next >= earliest_now + p && next <= prev.after + p,
        MissedTickBehavior::Skip => {
            (next - prev.due).as_nanos().is_multiple_of(p.as_nanos())
                && next > earliest_now
                && next <= prev.after + p
        }
    };
    if late_from > prev.after {
        assert_eq!(
            next, on_time,
            "a tick taken on time must be followed a period later"
        );
    } else if late_from <= earliest_now {
        assert!(
            late_rule,
            "{:?} after a late tick {prev:?}: {next:?}",
            every.missed_tick_behavior()
        );
    } else {
        assert!(next == on_time || late_rule, "{prev:?} then {next:?}");
    }
}

/// How late a `Delay` tick may be taken and still keep the grid (`corio::time::interval`).
const DELAY_TOLERANCE: Duration = Duration::from_millis(5);

/// Ticks `n` more times, checking each tick against the one before.
fn go_on(every: &mut time::Interval, mut prev: Taken, n: usize) {
    for _ in 0..n {
        let next = take(every);
        check_follows(every, prev, next.due);
        prev = next;
    }
}

/// An interval of period `P` with `behavior`, whose second tick is taken late by 3.5
/// periods (three ticks missed). Returns it, the first tick's instant and the late tick.
fn late_interval(behavior: MissedTickBehavior) -> (time::Interval, Instant, Taken) {
    let mut every = time::interval(P);
    every.set_missed_tick_behavior(behavior);
    assert_eq!(every.missed_tick_behavior(), behavior);
    let first = every.tick();
    corio::sleep(P * 3 + P / 2);
    let late = take(&mut every);
    assert_eq!(late.due, first + P, "the late tick is the first one missed");
    (every, first, late)
}

rt_common! {
    /// tokio's `burst`: every missed tick is returned, each on the grid, none skipped.
    #[test]
    fn a_bursting_interval_returns_every_missed_tick_on_the_grid() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let (mut every, first, late) = late_interval(MissedTickBehavior::Burst);
                let mut prev = late;
                for k in 2..=6 {
                    let next = take(&mut every);
                    assert_eq!(next.due, first + P * k, "tick {k} is not the k-th of the grid");
                    prev = next;
                }
                go_on(&mut every, prev, 3);
            })
        });
    }

    /// tokio's `delay`: the late tick is returned, and the next one is a period after it was
    /// taken — off the old grid — and so on from there.
    #[test]
    fn a_delaying_interval_restarts_its_grid_from_the_late_tick() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let (mut every, _, late) = late_interval(MissedTickBehavior::Delay);
                let next = take(&mut every);
                assert!(
                    next.due >= late.before + P && next.due <= late.after + P,
                    "not a period after the late tick"
                );
                go_on(&mut every, next, 3);
            })
        });
    }

    /// tokio's `skip`: the late tick is returned, then the grid goes on from the first tick
    /// after now; the ticks in between are never returned.
    #[test]
    fn a_skipping_interval_goes_on_with_the_grid_after_a_late_tick() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                assert_eq!(
                    time::interval(P).missed_tick_behavior(),
                    MissedTickBehavior::Skip,
                    "the default"
                );
                let (mut every, first, late) = late_interval(MissedTickBehavior::Skip);
                let next = take(&mut every);
                assert!(next.due > late.before, "a missed tick came back");
                assert!(next.due >= first + P * 4);
                assert_eq!((next.due - first).as_nanos() % P.as_nanos(), 0, "off the grid");
                go_on(&mut every, next, 3);
            })
        });
    }

    /// tokio's `reset`: after `reset`, the next tick is a period after the reset, not on
    /// the old grid; `reset_at` sets it to an instant.
    #[test]
    fn a_reset_interval_ticks_a_period_after_the_reset() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let mut every = time::interval(P);
                every.tick();
                corio::sleep(P / 2);
                let before = Instant::now();
                every.reset();
                let after = Instant::now();
                let next = take(&mut every);
                assert!(next.due >= before + P && next.due <= after + P);
                go_on(&mut every, next, 2);
                let at = Instant::now() + 3 * P;
                every.reset_at(at);
                let next = take(&mut every);
                assert_eq!(next.due, at);
                go_on(&mut every, next, 2);
            })
        });
    }

    /// `interval_at`: the first tick is at `start`, not at once, and the grid starts there.
    #[test]
    fn an_interval_at_a_start_ticks_first_at_the_start() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let start = Instant::now() + 2 * P;
                let mut every = time::interval_at(start, P);
                let first = take(&mut every);
                assert_eq!(first.due, start);
                go_on(&mut every, first, 2);
                // A start in the past: the first tick at once, on that grid.
                let past = Instant::now() - 10 * P;
                let mut every = time::interval_at(past, P);
                assert_eq!(every.tick(), past);
            });
            rt.spawn(async {
                let start = Instant::now() + 2 * P;
                let mut every = time::interval_at(start, P);
                assert_eq!(every.tick_async().await, start);
                assert!(Instant::now() >= start);
            })
            .join()
            .unwrap();
        });
    }

    /// `Sleep::reset` moves a sleep that has already registered its timer, earlier and later,
    /// and re-arms one that has completed.
    #[test]
    fn a_reset_sleep_completes_at_its_new_deadline() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.spawn(async {
                let mut sleep = time::sleep_async(Duration::from_secs(3600));
                // Poll it once, so that its timer is in a heap.
                assert!(time::timeout_async(MS, &mut sleep).await.is_err());
                let soon = Instant::now() + 2 * P;
                sleep.reset(soon); // earlier
                assert_eq!(sleep.deadline(), soon);
                // Not elapsed unless the clock has reached `soon` (the thread may be
                // descheduled for 2 P right here on a loaded machine).
                let elapsed = sleep.is_elapsed();
                assert!(!elapsed || Instant::now() >= soon, "elapsed early");
                (&mut sleep).await;
                assert!(Instant::now() >= soon);
                // Completed: a reset re-arms it.
                let again = Instant::now() + P;
                sleep.reset(again);
                (&mut sleep).await;
                assert!(Instant::now() >= again);
                // Later than a registered deadline: the old timer must not complete it.
                // Its timer is registered by one poll, not by a 1 ms timeout as before: that
                // timeout's worker, woken P late (a descheduled thread on a loaded machine),
                // polled the sleep first and found it elapsed (1 of ~10 loaded runs failed).
                // If the poll itself comes P late, the reset below re-arms a completed sleep,
                // which must not complete early either.
                let mut sleep = time::sleep_async(P);
                let _ = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut sleep).poll(cx))).await;
                sleep.reset(Instant::now() + Duration::from_secs(3600));
                assert!(time::timeout_async(3 * P, &mut sleep).await.is_err(), "the old timer fired it");
            })
            .join()
            .unwrap();
        });
    }

    /// `timeout_at`, blocking-style in a coroutine and async in a task: expires at the
    /// instant, returns what completes before it, and a passed deadline still lets a ready
    /// future through.
    #[test]
    fn timeout_at_expires_at_its_instant() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let deadline = Instant::now() + 2 * P;
                assert_eq!(time::timeout_at(deadline, async { 5 }), Ok(5));
                assert!(time::timeout_at(deadline, Gate::new().wait()).is_err());
                assert!(Instant::now() >= deadline);
                assert_eq!(time::timeout_at(deadline, async { 6 }), Ok(6), "a passed deadline");
            });
            rt.spawn(async {
                let deadline = Instant::now() + 2 * P;
                assert!(time::timeout_at_async(deadline, Gate::new().wait()).await.is_err());
                assert!(Instant::now() >= deadline);
            })
            .join()
            .unwrap();
        });
    }

    /// `sleep_until` (blocking-style) and `sleep_until_async` wait until the instant, and
    /// return at once for one that has passed.
    #[test]
    fn sleep_until_waits_until_its_instant() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let deadline = Instant::now() + 2 * P;
                time::sleep_until(deadline);
                assert!(Instant::now() >= deadline);
                time::sleep_until(deadline - P); // passed
            });
            rt.spawn(async {
                let deadline = Instant::now() + 2 * P;
                time::sleep_until_async(deadline).await;
                assert!(Instant::now() >= deadline);
            })
            .join()
            .unwrap();
        });
    }
}

/// On a plain thread: `timeout_at` and `sleep_until` through the fallback timer thread.
#[test]
fn timeout_at_and_sleep_until_work_on_a_plain_thread() {
    let deadline = Instant::now() + 2 * P;
    assert!(time::timeout_at(deadline, Gate::new().wait()).is_err());
    assert!(Instant::now() >= deadline);
    let deadline = Instant::now() + P;
    corio::block_on(time::sleep_until_async(deadline));
    assert!(Instant::now() >= deadline);
    let deadline = Instant::now() + P;
    time::sleep_until(deadline);
    assert!(Instant::now() >= deadline);
}
