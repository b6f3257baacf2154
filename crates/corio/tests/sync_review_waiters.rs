//! Review 3 (2026-12-07): `oneshot`, `Notify`, `OnceCell`, `Condvar`, `Barrier`, `RwLock`,
//! `JoinSet` and `Interval`, held to their rustdoc and to tokio's/std's documented semantics.
//! Each test says whether it failed on the code it was written against (a FINDING: it failed
//! on `724f6da`, whose behaviour its comment describes, and passes since the fix) or guards
//! something the other suites do not check (docs/soundness.md, "The reviews of 2026-12-07,
//! night").

#[macro_use]
mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use corio::sync::OnceCell;
use support::{Gate, within};

/// Hang guard for every test (a loaded 2-core machine finishes each in well under a second).
const GUARD: Duration = Duration::from_secs(20);

/// Polls `fut` once with a waker that does nothing.
fn poll_once<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

/// Waits (suspending the calling coroutine) until `cond` holds or `limit` has passed; returns
/// whether it held.
fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !cond() {
        if start.elapsed() > limit {
            return false;
        }
        corio::sleep(Duration::from_millis(1));
    }
    true
}

// ---------------------------------------------------------------------------------------------
// OnceCell
// ---------------------------------------------------------------------------------------------

/// FINDING. Once the value is stored, a caller queued behind another waiter that was handed
/// the right to initialise but has not run yet (a `get_or_init_async` future kept but not
/// polled: a `select!` arm not taken, a task not yet scheduled) waits for that waiter, though
/// the cell is set. tokio's `OnceCell` closes its semaphore when the value is set, waking every
/// waiter; corio's passes the one permit down the queue, one waiter at a time.
#[test]
fn once_cell_waiters_are_released_when_the_value_is_set_not_one_by_one() {
    within(GUARD, || {
        support::rt(1).run(|| {
            let cell = Arc::new(OnceCell::<u32>::new());
            let gate = Gate::new();
            let g = gate.clone();
            // The initialiser: holds the right until the gate opens.
            let mut first = Box::pin(cell.get_or_init_async(move || async move {
                g.wait().await;
                1
            }));
            assert!(poll_once(first.as_mut()).is_pending());
            // A waiter that queues and is then not polled for a while.
            let mut idle = Box::pin(cell.get_or_init_async(|| async { 2 }));
            assert!(poll_once(idle.as_mut()).is_pending());
            // A coroutine queued behind it (one worker: it has queued once `queued` is set and
            // this coroutine runs again).
            let queued = Arc::new(AtomicBool::new(false));
            let (c, q) = (cell.clone(), queued.clone());
            let waiter = corio::go(move || {
                q.store(true, SeqCst);
                *c.get_or_init(|| 3)
            });
            while !queued.load(SeqCst) {
                corio::yield_now();
            }
            gate.open();
            assert_eq!(poll_once(first.as_mut()), Poll::Ready(&1));
            assert_eq!(cell.get(), Some(&1));
            let released = eventually(Duration::from_secs(10), || waiter.is_finished());
            drop(idle); // lets the waiter through on the current code, so the test ends
            assert!(
                released,
                "a coroutine waited in get_or_init on a cell already set, behind an idle waiter"
            );
            assert_eq!(waiter.join().unwrap(), 1);
        })
    });
}

// ---------------------------------------------------------------------------------------------
// Interval
// ---------------------------------------------------------------------------------------------

/// FINDING (against the rustdoc of `MissedTickBehavior::Delay`, "for spacing calls at least a
/// period apart", and tokio's `Delay`, "tick at multiples of period from when tick was
/// called"). A `Delay` tick taken late by less than a whole period keeps the old grid: the
/// next tick comes less than a period after it (here half a period). tokio treats any tick
/// more than 5 ms late as late and moves the grid to `now + period`.
#[test]
fn a_delay_interval_spaces_ticks_a_period_apart_after_a_tick_late_by_less_than_a_period() {
    use corio::time::MissedTickBehavior;
    within(GUARD, || {
        support::rt(1).run(|| {
            let p = Duration::from_millis(300);
            // The first tick was due half a period ago: it is taken late by p / 2.
            let start = Instant::now() - p / 2;
            let mut every = corio::time::interval_at(start, p);
            every.set_missed_tick_behavior(MissedTickBehavior::Delay);
            let before = Instant::now();
            assert_eq!(every.tick(), start, "the late tick is returned at once");
            let next = every.tick();
            assert!(
                next >= before + p,
                "Delay: the tick after one taken {:?} late is due {:?} after it was taken, \
                 less than the period {p:?}",
                before - start,
                next.saturating_duration_since(before),
            );
        })
    });
}

// ---------------------------------------------------------------------------------------------
// Condvar
// ---------------------------------------------------------------------------------------------

/// FINDING (minor). `notify_one` "wakes the longest waiter, if any". A `wait_timeout` whose
/// timeout has passed keeps its place in the condvar's queue until it has relocked the mutex
/// and returned (its `Notified` is dropped only then), so a `notify_one` made meanwhile goes to
/// it, and the waiter still waiting is not woken until the timed-out one is done relocking
/// (here: never, as that future is not polled again). std's and Go's timed-out waiter leaves
/// the queue when its time is up.
#[test]
fn condvar_notify_one_after_a_waiter_timed_out_wakes_one_still_waiting() {
    use corio::sync::{Condvar, Mutex};
    within(GUARD, || {
        support::rt(1).run(|| {
            let m = Arc::new(Mutex::new(0u32));
            let cv = Arc::new(Condvar::new());
            // A: a timed wait, driven by hand, first in the queue.
            let mut a = Box::pin(cv.wait_timeout_async(m.lock(), Duration::from_millis(1)));
            assert!(poll_once(a.as_mut()).is_pending());
            // B: a coroutine waiting behind it for the value to change.
            let waiting = Arc::new(AtomicBool::new(false));
            let (m2, cv2, w) = (m.clone(), cv.clone(), waiting.clone());
            let b = corio::go(move || {
                let g = m2.lock();
                w.store(true, SeqCst);
                *cv2.wait_while(g, |v| *v == 0)
            });
            while !waiting.load(SeqCst) {
                corio::yield_now();
            }
            let mut g = m.lock();
            corio::sleep(Duration::from_millis(20));
            // A's time is up: polled now, it stops waiting and queues to relock the mutex.
            assert!(poll_once(a.as_mut()).is_pending());
            *g = 1;
            cv.notify_one();
            drop(g);
            let woken = eventually(Duration::from_secs(10), || b.is_finished());
            // A relocks and returns (passing the notification on, on the current code).
            let (ga, res) = corio::block_on(a.as_mut());
            drop(ga);
            assert!(res.timed_out(), "A's time was up before the notification");
            assert!(
                woken,
                "notify_one went to a waiter whose timeout had passed"
            );
            assert_eq!(b.join().unwrap(), 1);
        })
    });
}

// ---------------------------------------------------------------------------------------------
// Checks that held (not covered in this form elsewhere)
// ---------------------------------------------------------------------------------------------

/// HELD. `Notify` as a one-token lock: waiters of every kind (coroutines, tasks, a plain
/// thread) on two workers wait with random timeouts (each timeout cancels a wait, possibly one
/// that was just handed the token), while more waiters are aborted mid-wait; the token is
/// neither lost (every waiter finishes its rounds) nor duplicated (never two holders).
#[test]
fn a_notify_token_survives_timeouts_and_aborts_of_every_kind_of_waiter_on_two_workers() {
    use corio::sync::Notify;
    use support::Rng;

    struct S {
        n: Notify,
        held: AtomicBool,
        start: Instant,
    }
    const ROUNDS: u64 = 300;
    fn enter(s: &S) {
        assert!(!s.held.swap(true, SeqCst), "two holders of the one token");
    }
    fn leave(s: &S) {
        assert!(s.held.swap(false, SeqCst));
        s.n.notify_one();
    }
    fn hang_guard(s: &S) {
        assert!(
            s.start.elapsed() < Duration::from_secs(15),
            "the token was lost"
        );
    }
    fn blocking(s: Arc<S>, seed: u64, thread: bool) {
        let mut rng = Rng::new(seed);
        let mut k = 0;
        while k < ROUNDS {
            hang_guard(&s);
            let d = Duration::from_micros(rng.below(300));
            if corio::time::timeout(d, s.n.notified_async()).is_ok() {
                enter(&s);
                if rng.chance(50) {
                    if thread {
                        std::thread::yield_now()
                    } else {
                        corio::yield_now()
                    }
                }
                leave(&s);
                k += 1;
            }
        }
    }
    async fn task(s: Arc<S>, seed: u64) {
        let mut rng = Rng::new(seed);
        let mut k = 0;
        while k < ROUNDS {
            hang_guard(&s);
            let d = Duration::from_micros(rng.below(300));
            if corio::time::timeout_async(d, s.n.notified_async())
                .await
                .is_ok()
            {
                enter(&s);
                if rng.chance(50) {
                    corio::yield_now_async().await;
                }
                leave(&s);
                k += 1;
            }
        }
    }

    for round in 0..3u64 {
        within(GUARD, move || {
            let s = Arc::new(S {
                n: Notify::new(),
                held: AtomicBool::new(false),
                start: Instant::now(),
            });
            s.n.notify_one(); // the token
            let thread = {
                let s = s.clone();
                std::thread::spawn(move || blocking(s, 999 + round, true))
            };
            support::rt(2).run(move || {
                let mut hs = Vec::new();
                for i in 0..3 {
                    let a = s.clone();
                    hs.push(corio::go(move || blocking(a, round * 10 + i, false)));
                    let b = s.clone();
                    hs.push(corio::spawn(task(b, round * 10 + i + 5)));
                }
                let mut rng = Rng::new(round + 77);
                for _ in 0..200 {
                    let a = s.clone();
                    let h = if rng.chance(50) {
                        corio::go(move || {
                            a.n.notified();
                            enter(&a);
                            leave(&a);
                        })
                    } else {
                        corio::spawn(async move {
                            a.n.notified_async().await;
                            enter(&a);
                            leave(&a);
                        })
                    };
                    if rng.chance(50) {
                        corio::yield_now();
                    }
                    h.abort();
                    let _ = h.join();
                }
                hs.into_iter().for_each(|h| h.join().unwrap());
            });
            thread.join().unwrap();
        });
    }
}

/// HELD. A producer's `notify_one` per item reaches a consumer (coroutines, tasks and a plain
/// thread, on two workers) although "noise" waiters keep timing out of `wait_timeout` on the
/// same condvar (each notification one of them catches while timing out is passed on, and one
/// it takes is handed on by it): every item is consumed, no consumer sleeps with items left.
#[test]
fn condvar_notifications_reach_consumers_past_waiters_that_keep_timing_out() {
    use corio::sync::{Condvar, Mutex};
    use std::sync::atomic::AtomicU64;
    use support::Rng;

    struct S {
        m: Mutex<u64>,
        cv: Condvar,
        done: AtomicBool,
        consumed: AtomicU64,
    }
    fn consumer(s: &S) {
        loop {
            let mut g = s.m.lock();
            while *g == 0 && !s.done.load(SeqCst) {
                g = s.cv.wait(g);
            }
            if *g == 0 {
                return;
            }
            *g -= 1;
            s.consumed.fetch_add(1, SeqCst);
        }
    }
    async fn consumer_async(s: Arc<S>) {
        loop {
            let mut g = s.m.lock_async().await;
            while *g == 0 && !s.done.load(SeqCst) {
                g = s.cv.wait_async(g).await;
            }
            if *g == 0 {
                return;
            }
            *g -= 1;
            s.consumed.fetch_add(1, SeqCst);
        }
    }
    fn noise(s: &S, seed: u64) {
        let mut rng = Rng::new(seed);
        while !s.done.load(SeqCst) {
            let (g, r) =
                s.cv.wait_timeout(s.m.lock(), Duration::from_micros(rng.below(2000)));
            drop(g);
            if !r.timed_out() {
                s.cv.notify_one(); // not for us: hand it on
            }
        }
    }
    async fn noise_async(s: Arc<S>, seed: u64) {
        let mut rng = Rng::new(seed);
        while !s.done.load(SeqCst) {
            let g = s.m.lock_async().await;
            let d = Duration::from_micros(rng.below(2000));
            let (g, r) = s.cv.wait_timeout_async(g, d).await;
            drop(g);
            if !r.timed_out() {
                s.cv.notify_one();
            }
        }
    }

    const ITEMS: u64 = 3000;
    for round in 0..3u64 {
        within(GUARD, move || {
            let s = Arc::new(S {
                m: Mutex::new(0),
                cv: Condvar::new(),
                done: AtomicBool::new(false),
                consumed: AtomicU64::new(0),
            });
            let threads = [
                {
                    let s = s.clone();
                    std::thread::spawn(move || consumer(&s))
                },
                {
                    let s = s.clone();
                    std::thread::spawn(move || noise(&s, 99 + round))
                },
            ];
            let s2 = s.clone();
            support::rt(2).run(move || {
                let s = s2;
                let mut hs = Vec::new();
                for i in 0..2 {
                    let a = s.clone();
                    hs.push(corio::go(move || consumer(&a)));
                    hs.push(corio::spawn(consumer_async(s.clone())));
                    let b = s.clone();
                    hs.push(corio::go(move || noise(&b, round * 10 + i)));
                    hs.push(corio::spawn(noise_async(s.clone(), round * 10 + i + 5)));
                }
                let mut rng = Rng::new(round);
                for _ in 0..ITEMS {
                    let mut g = s.m.lock();
                    *g += 1;
                    s.cv.notify_one();
                    drop(g);
                    if rng.chance(30) {
                        corio::yield_now();
                    }
                }
                let all = eventually(Duration::from_secs(15), || s.consumed.load(SeqCst) == ITEMS);
                let left = *s.m.lock();
                s.done.store(true, SeqCst);
                drop(s.m.lock());
                s.cv.notify_all();
                hs.into_iter().for_each(|h| h.join().unwrap());
                assert!(all, "a consumer slept with {left} items left");
            });
            threads.into_iter().for_each(|t| t.join().unwrap());
        });
    }
}
