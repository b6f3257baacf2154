//! Review of `Mutex` (with its `WOKEN` bit), `Semaphore`, the wait list and the atomic waker
//! (2026-12-07, late evening).
//!
//! - Failed on the reviewed code (`724f6da`; fixed since, docs/soundness.md, "The reviews of
//!   2026-12-07, night"; one finding, three faces of it): a cancelled or closed acquire
//!   that gives its collected permits back to a semaphore `add_permits` has filled to
//!   `MAX_PERMITS` panics — in the future's `Drop` (and, during a coroutine's abort, the
//!   process aborts) or in its poll. `BatchSemaphore::cancel` and `poll_acquire`'s closed branch
//!   panic on `release_locked`'s refusal where `release_dropped` forgets the excess.
//! - Pass (coverage not found elsewhere): the `WOKEN` protocol's steps with a barger, checked
//!   deterministically with hand-polled futures (only loom covered them), and bounded stress
//!   runs that mix the three faces (coroutine, async task, plain thread) with random
//!   cancellation at every await point — including a woken (or handed-over) future dropped
//!   before it polls again, and coroutines aborted while they wait — checking mutual
//!   exclusion, permit accounting and progress on one and two workers.

#[macro_use]
mod support;

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use corio::sync::{Mutex, Semaphore};
use support::{EVENTUALLY, Rng, within};

/// A waker that counts its wake-ups.
struct CountWakes(AtomicUsize);

impl Wake for CountWakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn counting() -> (Arc<CountWakes>, Waker) {
    let c = Arc::new(CountWakes(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}

// ---------------------------------------------------------------------------------------------
// Semaphore: permits given back by a cancelled or closed acquire into a full semaphore.
// ---------------------------------------------------------------------------------------------

/// FAILED on the reviewed code (fixed since). An acquire that was served (its permits assigned, its node
/// unlinked) and is dropped before it polls again gives its permits back through
/// `BatchSemaphore::cancel`, which panics when they do not fit under `MAX_PERMITS` — a panic
/// in `Drop`. The same situation for a held permit (`SemaphorePermit::drop`) was fixed on
/// 2026-12-07 (`release_dropped`: the excess is forgotten); the cancelled future's path was not.
#[test]
fn a_served_acquire_dropped_before_it_polls_into_a_full_semaphore_does_not_panic() {
    let sem = Semaphore::new(0);
    let mut cx = Context::from_waker(Waker::noop());
    let mut acquire = Box::pin(sem.acquire_many_async(2));
    assert!(acquire.as_mut().poll(&mut cx).is_pending());
    sem.add_permits(2); // serves the queued acquire: it now owns 2 permits
    sem.add_permits(Semaphore::MAX_PERMITS); // the free count was 0: allowed
    let dropped = catch_unwind(AssertUnwindSafe(move || drop(acquire)));
    assert!(
        dropped.is_ok(),
        "dropping a served acquire future panicked (a panic in Drop)"
    );
    assert_eq!(sem.available_permits(), Semaphore::MAX_PERMITS);
}

/// FAILED on the reviewed code (fixed since). A queued acquire that had collected part of its permits and
/// finds the semaphore closed gives them back in its poll (`poll_acquire`, closed branch); if
/// they do not fit under `MAX_PERMITS` the poll panics instead of returning `AcquireError`.
#[test]
fn a_closed_acquire_giving_back_its_collected_permits_to_a_full_semaphore_returns_an_error() {
    let sem = Semaphore::new(0);
    let mut cx = Context::from_waker(Waker::noop());
    let mut acquire = Box::pin(sem.acquire_many_async(3));
    assert!(acquire.as_mut().poll(&mut cx).is_pending());
    sem.add_permits(1); // one of its three
    sem.close();
    sem.add_permits(Semaphore::MAX_PERMITS); // the free count was 0: allowed
    let polled = catch_unwind(AssertUnwindSafe(|| {
        acquire.as_mut().poll(&mut cx).map(|r| r.is_err())
    }));
    assert!(
        matches!(polled, Ok(Poll::Ready(true))),
        "the closed acquire's poll panicked instead of failing with AcquireError"
    );
    drop(acquire);
    assert_eq!(sem.available_permits(), Semaphore::MAX_PERMITS);
}

const CHILD_ENV: &str = "CORIO_SYNC_REVIEW_LOCKS_CHILD";

/// FAILED on the reviewed code (fixed since) (the child process aborts). The consequence of the first test in
/// a program: a coroutine waiting in `acquire_many` is served, the semaphore is then filled,
/// and the coroutine is aborted before it runs again. The abort unwinds its stack; the acquire
/// future's drop panics during that unwind, and Rust aborts the whole process.
#[test]
fn an_aborted_coroutine_whose_acquire_was_served_into_a_full_semaphore_does_not_abort_the_process()
{
    if std::env::var_os(CHILD_ENV).is_some() {
        let rt = support::rt(1);
        rt.run(|| {
            let sem = Arc::new(Semaphore::new(0));
            let s = sem.clone();
            let waiter = corio::go(move || {
                let _permit = s.acquire_many(2);
                unreachable!("the waiter is aborted before it runs again");
            });
            corio::yield_now(); // one worker: the waiter runs and queues
            sem.add_permits(2); // serves it (it is woken, not yet run)
            sem.add_permits(Semaphore::MAX_PERMITS);
            waiter.abort();
            assert!(waiter.join().unwrap_err().is_cancelled());
            assert_eq!(sem.available_permits(), Semaphore::MAX_PERMITS);
        });
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "an_aborted_coroutine_whose_acquire_was_served_into_a_full_semaphore_does_not_abort_the_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let panics: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("panic") || l.contains("permits"))
        .collect();
    assert!(
        out.status.success(),
        "the child process failed ({:?}); its panics:\n{}",
        out.status,
        panics.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Mutex: the WOKEN protocol, step by step, with hand-polled futures (only loom covered these).
// ---------------------------------------------------------------------------------------------

/// Protocol steps 2 and 4 with `WOKEN`: the woken head finds a barger holding the lock, goes
/// back to wait (clearing `WOKEN`), and the barger's unlock wakes it again; while it was woken
/// and had not polled, an unlock woke nobody else.
#[test]
fn a_woken_waiter_that_loses_to_a_barger_is_woken_again_by_the_bargers_unlock() {
    let m = Mutex::new(0u32);
    let g = m.lock();
    let (first_wakes, first_waker) = counting();
    let (second_wakes, second_waker) = counting();
    let mut first = pin!(m.lock_async());
    let mut second = pin!(m.lock_async());
    assert!(
        first
            .as_mut()
            .poll(&mut Context::from_waker(&first_waker))
            .is_pending()
    );
    assert!(
        second
            .as_mut()
            .poll(&mut Context::from_waker(&second_waker))
            .is_pending()
    );
    drop(g); // normal mode: wakes `first`, sets WOKEN
    assert_eq!(first_wakes.0.load(SeqCst), 1);
    let b = m.try_lock().expect("a newcomer barges in normal mode");
    drop(b); // WOKEN: released with one CAS, nobody woken
    assert_eq!(
        second_wakes.0.load(SeqCst),
        0,
        "second woken while first was woken"
    );
    let b = m.try_lock().expect("barges again");
    // `first` runs now: the lock is held, it goes back to wait and clears WOKEN.
    assert!(
        first
            .as_mut()
            .poll(&mut Context::from_waker(&first_waker))
            .is_pending()
    );
    drop(b); // must wake `first` again (it is the head), not release silently
    assert_eq!(
        first_wakes.0.load(SeqCst),
        2,
        "the barger's unlock woke nobody"
    );
    let g = match first.as_mut().poll(&mut Context::from_waker(&first_waker)) {
        Poll::Ready(g) => g,
        Poll::Pending => panic!("the woken head did not get the free lock"),
    };
    drop(g);
    assert_eq!(
        second_wakes.0.load(SeqCst),
        1,
        "the first's unlock did not wake the second"
    );
    assert!(matches!(
        second
            .as_mut()
            .poll(&mut Context::from_waker(&second_waker)),
        Poll::Ready(_)
    ));
    assert!(m.try_lock().is_some());
}

/// Protocol step 5, the held case (the lock-free case is `sync_mutex.rs`'s
/// `a_dropped_woken_waiter_hands_its_wake_up_to_the_next_one`): the woken head is dropped
/// while a barger holds the lock; the barger's unlock must wake the new head.
#[test]
fn a_woken_waiter_dropped_while_a_barger_holds_the_lock_lets_the_bargers_unlock_wake_the_next() {
    let m = Mutex::new(0u32);
    let g = m.lock();
    let (second_wakes, second_waker) = counting();
    let mut second = pin!(m.lock_async());
    {
        // Boxed, so that `drop(first)` below drops the future itself (a pinned `&mut` would
        // drop only the reference).
        let mut first = Box::pin(m.lock_async());
        assert!(
            first
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending()
        );
        assert!(
            second
                .as_mut()
                .poll(&mut Context::from_waker(&second_waker))
                .is_pending()
        );
        drop(g); // wakes `first`
        let b = m.try_lock().expect("a newcomer barges in normal mode");
        drop(first); // cancelled while `b` holds the lock
        assert_eq!(second_wakes.0.load(SeqCst), 0);
        drop(b);
    }
    assert_eq!(
        second_wakes.0.load(SeqCst),
        1,
        "the second waiter was never woken"
    );
    assert!(matches!(
        second
            .as_mut()
            .poll(&mut Context::from_waker(&second_waker)),
        Poll::Ready(_)
    ));
}

// ---------------------------------------------------------------------------------------------
// Stress: every face, random cancellation, two workers; exclusion, accounting and progress.
// ---------------------------------------------------------------------------------------------

/// A future that polls `inner` at most `polls` times and, at the poll after that, drops it
/// without polling it: a cancellation at a chosen await point. With `self_wake` it asks to be
/// polled again at once (the drop then races the lock's own wake-up); without, its next poll
/// comes from the lock's wake-up, so it drops a future that was woken (or handed the lock in
/// starvation mode) and has not polled since.
struct GiveUpAfter<F> {
    inner: Option<Pin<Box<F>>>,
    polls: u32,
    self_wake: bool,
}

impl<F: Future> Future for GiveUpAfter<F> {
    type Output = Option<F::Output>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<F::Output>> {
        if self.polls == 0 {
            GAVE_UP.fetch_add(1, SeqCst);
            self.inner = None; // dropped while queued, unpolled since its last wake-up
            return Poll::Ready(None);
        }
        self.polls -= 1;
        let inner = self.inner.as_mut().expect("polled after completion");
        if let Poll::Ready(v) = inner.as_mut().poll(cx) {
            self.inner = None;
            return Poll::Ready(Some(v));
        }
        if self.self_wake {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

/// How many `GiveUpAfter`s gave up (the stress test checks that some did).
static GAVE_UP: AtomicUsize = AtomicUsize::new(0);

fn give_up_after<F: Future>(inner: F, rng: &mut Rng) -> GiveUpAfter<F> {
    GiveUpAfter {
        inner: Some(Box::pin(inner)),
        polls: 1 + rng.below(3) as u32,
        self_wake: rng.chance(50),
    }
}

struct Guarded {
    count: Mutex<u64>,
    inside: AtomicUsize,
    done: AtomicUsize,
}

impl Guarded {
    fn critical(&self, v: &mut u64) {
        assert_eq!(
            self.inside.fetch_add(1, SeqCst),
            0,
            "two owners of the mutex at once"
        );
        *v += 1;
        self.inside.fetch_sub(1, SeqCst);
        self.done.fetch_add(1, SeqCst);
    }
}

const MUTEX_ROUNDS: u64 = 1_000;
/// Fresh scenarios (new seeds) per stress test.
const STRESS_ITERS: u64 = 10;

rt_common! {
    /// Coroutines (blocking `lock`, `timeout`, aborts), async tasks (`lock_async` given up
    /// after a random number of polls, `timeout_async`) and plain threads (`lock`, `try_lock`)
    /// on one mutex. Every completed critical section counts once, no two overlap, nobody hangs
    /// (a lost wake-up or a `WOKEN` bit left set with the lock free would), and the lock ends
    /// free.
    #[test]
    fn mutex_faces_with_random_cancellation_keep_exclusion_and_progress() {
        let rt = rt();
        within(EVENTUALLY, move || {
 for iter in 0..STRESS_ITERS {
            let g = Arc::new(Guarded {
                count: Mutex::new(0),
                inside: AtomicUsize::new(0),
                done: AtomicUsize::new(0),
            });
            let mut handles = Vec::new();
            for seed in 0..3u64 {
                let s = g.clone();
                handles.push(rt.go(move || {
                    let mut rng = Rng::new(iter * 10_000 + seed + 1);
                    for _ in 0..MUTEX_ROUNDS {
                        match rng.below(4) {
                            0 => {
                                let mut v = s.count.lock();
                                s.critical(&mut v);
                                if rng.chance(2) {
                                    // Held past `STARVATION`: the next unlocks hand over.
                                    corio::sleep(Duration::from_millis(2));
                                } else if rng.chance(30) {
                                    corio::yield_now();
                                }
                            }
                            1 => {
                                let d = Duration::from_micros(rng.below(50));
                                if let Ok(mut v) = corio::time::timeout(d, s.count.lock_async()) {
                                    s.critical(&mut v);
                                }
                            }
                            2 => {
                                if let Some(mut v) = s.count.try_lock() {
                                    s.critical(&mut v);
                                }
                            }
                            _ => {
                                let r = corio::block_on(give_up_after(s.count.lock_async(), &mut rng));
                                if let Some(mut v) = r {
                                    s.critical(&mut v);
                                    corio::yield_now();
                                }
                            }
                        }
                    }
                }));
                let s = g.clone();
                handles.push(rt.spawn(async move {
                    let mut rng = Rng::new(iter * 10_000 + seed + 100);
                    for _ in 0..MUTEX_ROUNDS {
                        match rng.below(3) {
                            0 => {
                                let mut v = s.count.lock_async().await;
                                s.critical(&mut v);
                                if rng.chance(2) {
                                    corio::time::sleep_async(Duration::from_millis(2)).await;
                                } else if rng.chance(30) {
                                    corio::yield_now_async().await;
                                }
                            }
                            1 => {
                                let d = Duration::from_micros(rng.below(50));
                                if let Ok(mut v) =
                                    corio::time::timeout_async(d, s.count.lock_async()).await
                                {
                                    s.critical(&mut v);
                                }
                            }
                            _ => {
                                if let Some(mut v) = give_up_after(s.count.lock_async(), &mut rng).await {
                                    s.critical(&mut v);
                                }
                            }
                        }
                    }
                }));
            }
            // Coroutines that wait on the lock and are aborted at random points.
            let victims: Vec<_> = (0..20)
                .map(|_| {
                    let s = g.clone();
                    rt.go(move || loop {
                        let mut v = s.count.lock();
                        s.critical(&mut v);
                        drop(v);
                        corio::yield_now();
                    })
                })
                .collect();
            let threads: Vec<_> = (0..2u64)
                .map(|t| {
                    let s = g.clone();
                    std::thread::spawn(move || {
                        let mut rng = Rng::new(iter * 10_000 + t + 1000);
                        for _ in 0..MUTEX_ROUNDS {
                            if rng.chance(50) {
                                let mut v = s.count.lock();
                                s.critical(&mut v);
                            } else if let Some(mut v) = s.count.try_lock() {
                                s.critical(&mut v);
                            } else {
                                std::thread::yield_now();
                            }
                        }
                    })
                })
                .collect();
            let mut rng = Rng::new(iter * 10_000 + 7);
            for v in &victims {
                std::thread::sleep(Duration::from_micros(rng.below(300)));
                v.abort();
            }
            for v in victims {
                let _ = v.join();
            }
            handles.into_iter().for_each(|h| h.join().unwrap());
            threads.into_iter().for_each(|h| h.join().unwrap());
            let v = *g.count.try_lock().expect("the lock ends free");
            assert_eq!(v, g.done.load(SeqCst) as u64, "an increment was lost or doubled");
 }
            assert!(GAVE_UP.load(SeqCst) > 0, "no lock future was ever given up");
        });
    }

    /// `acquire_many` of 1..=3 of 4 permits from every face, each given up at a random point
    /// (after a partial grant too), coroutines aborted while they wait; holders never exceed
    /// the permits and every permit comes back.
    #[test]
    fn semaphore_faces_with_random_cancellation_keep_permit_accounting() {
        const PERMITS: usize = 4;
        let rt = rt();
        within(EVENTUALLY, move || {
 for iter in 0..STRESS_ITERS {
            let sem = Arc::new(Semaphore::new(PERMITS));
            let held = Arc::new(AtomicUsize::new(0));
            let take = |held: &AtomicUsize, n: usize| {
                let now = held.fetch_add(n, SeqCst) + n;
                assert!(now <= PERMITS, "{now} permits held of {PERMITS}");
            };
            let mut handles = Vec::new();
            for seed in 0..3u64 {
                let (s, h) = (sem.clone(), held.clone());
                handles.push(rt.go(move || {
                    let mut rng = Rng::new(iter * 10_000 + seed + 1);
                    for _ in 0..MUTEX_ROUNDS {
                        let n = 1 + rng.below(3) as usize;
                        let p = match rng.below(3) {
                            0 => Some(s.acquire_many(n).unwrap()),
                            1 => corio::time::timeout(
                                Duration::from_micros(rng.below(50)),
                                s.acquire_many_async(n),
                            )
                            .ok()
                            .map(Result::unwrap),
                            _ => corio::block_on(give_up_after(s.acquire_many_async(n), &mut rng))
                            .map(Result::unwrap),
                        };
                        if let Some(p) = p {
                            take(&h, n);
                            if rng.chance(30) {
                                corio::yield_now();
                            }
                            h.fetch_sub(n, SeqCst);
                            drop(p);
                        }
                    }
                }));
                let (s, h) = (sem.clone(), held.clone());
                handles.push(rt.spawn(async move {
                    let mut rng = Rng::new(iter * 10_000 + seed + 100);
                    for _ in 0..MUTEX_ROUNDS {
                        let n = 1 + rng.below(3) as usize;
                        let p = if rng.chance(50) {
                            Some(s.acquire_many_async(n).await.unwrap())
                        } else {
                            give_up_after(s.acquire_many_async(n), &mut rng)
                                .await
                                .map(Result::unwrap)
                        };
                        if let Some(p) = p {
                            take(&h, n);
                            corio::yield_now_async().await;
                            h.fetch_sub(n, SeqCst);
                            drop(p);
                        }
                    }
                }));
            }
            let victims: Vec<_> = (0..20)
                .map(|i| {
                    let (s, h) = (sem.clone(), held.clone());
                    rt.go(move || loop {
                        let n = 1 + i % 3;
                        let p = s.acquire_many(n).unwrap();
                        take(&h, n);
                        h.fetch_sub(n, SeqCst);
                        drop(p);
                        corio::yield_now();
                    })
                })
                .collect();
            let threads: Vec<_> = (0..2u64)
                .map(|t| {
                    let (s, h) = (sem.clone(), held.clone());
                    std::thread::spawn(move || {
                        let mut rng = Rng::new(iter * 10_000 + t + 1000);
                        for _ in 0..MUTEX_ROUNDS {
                            let n = 1 + rng.below(3) as usize;
                            let p = s.acquire_many(n).unwrap();
                            take(&h, n);
                            h.fetch_sub(n, SeqCst);
                            drop(p);
                        }
                    })
                })
                .collect();
            let mut rng = Rng::new(iter * 10_000 + 7);
            for v in &victims {
                std::thread::sleep(Duration::from_micros(rng.below(300)));
                v.abort();
            }
            for v in victims {
                let _ = v.join();
            }
            handles.into_iter().for_each(|h| h.join().unwrap());
            threads.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(sem.available_permits(), PERMITS, "a permit was lost or created");
 }
        });
    }
}
