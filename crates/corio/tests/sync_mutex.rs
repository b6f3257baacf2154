//! `corio::sync::Mutex`: mutual exclusion counted under contention from stackful coroutines,
//! async tasks and plain threads at once; Go's starvation mode (a waiter that waited more than
//! 1 ms gets the lock before a barging newcomer); cancellation of a waiter, including one that
//! had just been handed the lock, loses nothing; the blocking form's advice in an async task;
//! and ports of Go's `sync/mutex_test.go`.

#[macro_use]
mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use corio::sync::{Mutex, STARVATION};
use support::{EVENTUALLY, panic_message, within};

/// The protected counter and a witness that no two owners are ever inside at once.
#[derive(Default)]
struct Shared {
    count: Mutex<u64>,
    inside: AtomicUsize,
}

impl Shared {
    fn enter(&self) {
        assert_eq!(self.inside.fetch_add(1, SeqCst), 0, "two owners at once");
    }
    fn leave(&self) {
        self.inside.fetch_sub(1, SeqCst);
    }
}

const ROUNDS: u64 = 200;

rt_common! {
    #[test]
    fn coroutines_tasks_and_threads_exclude_each_other_and_every_increment_counts() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let shared = Arc::new(Shared::default());
            let mut coroutines = Vec::new();
            let mut tasks = Vec::new();
            for _ in 0..4 {
                let s = shared.clone();
                coroutines.push(rt.go(move || {
                    for _ in 0..ROUNDS {
                        let mut g = s.count.lock();
                        s.enter();
                        let v = *g;
                        corio::yield_now(); // the guard is held across a suspension
                        *g = v + 1;
                        s.leave();
                    }
                }));
                let s = shared.clone();
                tasks.push(rt.spawn(async move {
                    for _ in 0..ROUNDS {
                        let mut g = s.count.lock_async().await;
                        s.enter();
                        let v = *g;
                        corio::yield_now_async().await;
                        *g = v + 1;
                        s.leave();
                    }
                }));
            }
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let s = shared.clone();
                    std::thread::spawn(move || {
                        for _ in 0..ROUNDS {
                            let mut g = s.count.lock();
                            s.enter();
                            let v = *g;
                            std::thread::yield_now();
                            *g = v + 1;
                            s.leave();
                        }
                    })
                })
                .collect();
            coroutines.into_iter().for_each(|h| h.join().unwrap());
            tasks.into_iter().for_each(|h| h.join().unwrap());
            threads.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(*shared.count.try_lock().unwrap(), 10 * ROUNDS);
        });
    }

    /// The owner unlocks and at once tries to take the lock again, as a newcomer would. The
    /// waiter queued more than `STARVATION` ago must get it instead (Go's starvation mode): in
    /// normal mode the newcomer, still running, would win.
    #[test]
    fn a_waiter_that_waited_past_the_starvation_threshold_gets_the_lock_before_a_barging_newcomer() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let m = Arc::new(Mutex::new(Vec::new()));
                let mut g = m.lock();
                let (m2, queued) = (m.clone(), Arc::new(AtomicBool::new(false)));
                let checked = Arc::new(AtomicBool::new(false));
                let (q2, c2) = (queued.clone(), checked.clone());
                let waiter = corio::go(move || {
                    let lock = FlagWhenPending { inner: Box::pin(m2.lock_async()), queued: q2 };
                    let mut g = corio::block_on(lock);
                    g.push("waiter");
                    // Hold the lock until the owner has tried to barge (on two workers the
                    // waiter could otherwise be done and unlock before the owner's attempt).
                    while !c2.load(SeqCst) {
                        corio::yield_now();
                    }
                });
                // Let the waiter queue, then starve.
                while !queued.load(SeqCst) {
                    corio::yield_now();
                }
                corio::sleep(STARVATION * 5);
                g.push("owner");
                drop(g);
                assert!(
                    m.try_lock().is_none(),
                    "a newcomer barged past a waiter that had waited more than {STARVATION:?}"
                );
                checked.store(true, SeqCst);
                waiter.join().unwrap();
                assert_eq!(*m.lock(), ["owner", "waiter"]);
            });
        });
    }

    #[test]
    fn an_aborted_task_waiting_for_the_lock_leaves_the_lock_usable() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let m = Arc::new(Mutex::new(0));
                let g = m.lock();
                let polled = Arc::new(AtomicBool::new(false));
                let (m2, p2) = (m.clone(), polled.clone());
                let victim = corio::spawn(async move {
                    p2.store(true, SeqCst);
                    *m2.lock_async().await += 100;
                });
                let m3 = m.clone();
                let survivor = corio::go(move || *m3.lock() += 1);
                while !polled.load(SeqCst) {
                    corio::yield_now();
                }
                victim.abort();
                assert!(victim.join().unwrap_err().is_cancelled());
                drop(g);
                survivor.join().unwrap();
                assert_eq!(*m.lock(), 1, "the aborted task never got the lock");
            });
        });
    }

    /// A lock wait given up by `corio::time::timeout` leaves the queue; the lock, released
    /// later, goes to the next waiter, and nobody got it twice.
    #[test]
    fn a_lock_wait_that_times_out_leaves_the_queue_and_loses_nothing() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let m = Arc::new(Mutex::new(0));
                let g = m.lock();
                let m2 = m.clone();
                let timed_out = corio::go(move || {
                    corio::time::timeout(Duration::from_millis(5), m2.lock_async()).is_err()
                });
                assert!(timed_out.join().unwrap(), "got a lock that was held throughout");
                let m3 = m.clone();
                let next = corio::spawn(async move { *m3.lock_async().await += 1 });
                corio::sleep(Duration::from_millis(2));
                drop(g);
                next.join().unwrap();
                assert_eq!(*m.lock(), 1);
            });
        });
    }

    /// Go's `TestMutexFairness` (sync/mutex_test.go): a goroutine that holds the lock most of
    /// the time must not keep a second one from taking it 10 times.
    #[test]
    fn go_mutex_fairness_a_hog_does_not_starve_another_locker() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let m = Arc::new(Mutex::new(()));
                let stop = Arc::new(AtomicBool::new(false));
                let (m1, stop1) = (m.clone(), stop.clone());
                let hog = corio::go(move || {
                    while !stop1.load(SeqCst) {
                        let _g = m1.lock();
                        corio::sleep(Duration::from_micros(100));
                    }
                });
                let m2 = m.clone();
                let other = corio::go(move || {
                    for _ in 0..10 {
                        corio::sleep(Duration::from_micros(100));
                        drop(m2.lock());
                    }
                });
                other.join().unwrap();
                stop.store(true, SeqCst);
                hog.join().unwrap();
            });
        });
    }

    /// Go's `TestMutex` / `HammerMutex` (sync/mutex_test.go): lockers mixing `lock` and
    /// `try_lock` in a loop; here the count of successful critical sections is checked too.
    #[test]
    fn go_hammer_mutex_with_lock_and_try_lock() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let shared = Arc::new(Shared::default());
            let done = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..10)
                .map(|i| {
                    let (s, done) = (shared.clone(), done.clone());
                    rt.go(move || {
                        for j in 0..500 {
                            let g = if (i + j) % 3 == 0 { s.count.try_lock() } else { Some(s.count.lock()) };
                            if let Some(mut g) = g {
                                s.enter();
                                *g += 1;
                                s.leave();
                                done.fetch_add(1, SeqCst);
                            }
                            if j % 50 == 0 {
                                corio::yield_now();
                            }
                        }
                    })
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(*shared.count.try_lock().unwrap(), done.load(SeqCst) as u64);
        });
    }
}

/// Polls `inner`, raising `queued` once a poll has returned `Pending` (the waiter is then in
/// the lock's queue).
struct FlagWhenPending<F> {
    inner: std::pin::Pin<Box<F>>,
    queued: Arc<AtomicBool>,
}

impl<F: Future> Future for FlagWhenPending<F> {
    type Output = F::Output;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let out = self.inner.as_mut().poll(cx);
        if out.is_pending() {
            self.queued.store(true, SeqCst);
        }
        out
    }
}

/// A `Lock` future handed the lock (starvation mode) and then dropped without being polled
/// again passes the lock on: nothing is lost.
#[test]
fn a_dropped_lock_future_that_had_been_handed_the_lock_passes_it_on() {
    let m = Mutex::new(0);
    let g = m.lock();
    let mut cx = Context::from_waker(Waker::noop());
    {
        let mut waiting = pin!(m.lock_async());
        assert!(waiting.as_mut().poll(&mut cx).is_pending());
        std::thread::sleep(STARVATION * 3);
        drop(g); // hands the lock to `waiting` (it has starved)
        assert!(
            m.try_lock().is_none(),
            "the lock went to the starving waiter"
        );
    } // dropped without observing it
    assert!(m.try_lock().is_some(), "the dropped waiter's lock was lost");
}

/// A woken (normal mode) waiter dropped before it runs hands its wake-up to the next waiter.
#[test]
fn a_dropped_woken_waiter_hands_its_wake_up_to_the_next_one() {
    let m = Mutex::new(0);
    let g = m.lock();
    let woken = Arc::new(AtomicUsize::new(0));
    let waker = Waker::from(Arc::new(CountWakes(woken.clone())));
    let mut cx_first = Context::from_waker(Waker::noop());
    let mut cx_second = Context::from_waker(&waker);
    let mut second = pin!(m.lock_async());
    {
        let mut first = pin!(m.lock_async());
        assert!(first.as_mut().poll(&mut cx_first).is_pending());
        assert!(second.as_mut().poll(&mut cx_second).is_pending());
        drop(g); // wakes `first` (it has not starved: normal mode), the lock is free
    }
    assert_eq!(woken.load(SeqCst), 1, "the second waiter was not woken");
    assert!(matches!(
        second.as_mut().poll(&mut cx_second),
        Poll::Ready(_)
    ));
}

struct CountWakes(Arc<AtomicUsize>);

impl std::task::Wake for CountWakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn lock_in_an_async_task_panics_with_advice_to_await_lock_async() {
    let rt = support::rt(1);
    let msg = within(EVENTUALLY, move || {
        rt.block_on(async {
            corio::spawn(async {
                let m = Mutex::new(());
                panic_message(|| drop(m.lock()))
            })
            .await
            .unwrap()
        })
    });
    assert!(
        msg.contains("async task") && msg.contains(".await"),
        "{msg}"
    );
}

/// A `try_lock` that fails must leave the owner's lock alone (a failed attempt once built a
/// guard and dropped it, unlocking a lock it did not own).
#[test]
fn a_failed_try_lock_leaves_the_lock_held() {
    let m = Mutex::new(0);
    let g = m.lock();
    assert!(m.try_lock().is_none());
    assert!(
        m.try_lock().is_none(),
        "the failed try_lock unlocked the owner's lock"
    );
    drop(g);
    assert!(m.try_lock().is_some());
}

/// `Mutex::const_new` makes a lock usable as a `static`. (Not under loom, where a mutex cannot
/// be built in a constant and there is no `const_new`.)
#[cfg(not(loom))]
#[test]
fn a_static_mutex_made_by_const_new_excludes_coroutines() {
    static COUNT: Mutex<u64> = Mutex::const_new(0);
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                rt.go(|| {
                    for _ in 0..100 {
                        let mut g = COUNT.lock();
                        let v = *g;
                        corio::yield_now();
                        *g = v + 1;
                    }
                })
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(*COUNT.lock(), 800);
    });
}
