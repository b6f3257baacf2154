//! `corio::sync::Semaphore` and `RwLock` (built on the same FIFO semaphore): bounds counted
//! under contention from coroutines, tasks and threads; FIFO order (a large request is not
//! starved, a queued writer holds back later readers); cancelled waiters lose no permit.

#[macro_use]
mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use corio::sync::{RwLock, Semaphore};
use support::{EVENTUALLY, Rng, within};

/// Counts holders now and the most ever seen at once.
#[derive(Default)]
struct Peak {
    now: AtomicUsize,
    max: AtomicUsize,
}

impl Peak {
    fn enter(&self) {
        let n = self.now.fetch_add(1, SeqCst) + 1;
        self.max.fetch_max(n, SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, SeqCst);
    }
}

rt_common! {
    #[test]
    fn a_semaphore_admits_at_most_its_permits_from_coroutines_tasks_and_threads() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let sem = Arc::new(Semaphore::new(3));
            let peak = Arc::new(Peak::default());
            let done = Arc::new(AtomicUsize::new(0));
            let mut handles = Vec::new();
            for _ in 0..6 {
                {
                    let (sem, peak, done) = (sem.clone(), peak.clone(), done.clone());
                    handles.push(rt.go(move || {
                        for _ in 0..50 {
                            let _p = sem.acquire().unwrap();
                            peak.enter();
                            corio::yield_now();
                            peak.leave();
                            done.fetch_add(1, SeqCst);
                        }
                    }));
                }
                {
                    let (sem, peak, done) = (sem.clone(), peak.clone(), done.clone());
                    handles.push(rt.spawn(async move {
                        for _ in 0..50 {
                            let _p = sem.acquire_async().await.unwrap();
                            peak.enter();
                            corio::yield_now_async().await;
                            peak.leave();
                            done.fetch_add(1, SeqCst);
                        }
                    }));
                }
            }
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let (sem, peak, done) = (sem.clone(), peak.clone(), done.clone());
                    std::thread::spawn(move || {
                        for _ in 0..50 {
                            let _p = sem.acquire().unwrap();
                            peak.enter();
                            std::thread::yield_now();
                            peak.leave();
                            done.fetch_add(1, SeqCst);
                        }
                    })
                })
                .collect();
            handles.into_iter().for_each(|h| h.join().unwrap());
            threads.into_iter().for_each(|h| h.join().unwrap());
            assert!(peak.max.load(SeqCst) <= 3, "{} holders at once", peak.max.load(SeqCst));
            assert_eq!(done.load(SeqCst), 14 * 50);
            assert_eq!(sem.available_permits(), 3);
        });
    }

    /// Tasks take 1 or 2 permits and hold them a moment; a third of them are aborted, many
    /// while queued (some partly served). Every permit ends back in the semaphore.
    #[test]
    fn aborted_acquirers_lose_no_permit() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let sem = Arc::new(Semaphore::new(2));
            let mut rng = Rng::new(0x5e4a);
            let handles: Vec<_> = (0..60)
                .map(|_| {
                    let (sem, n) = (sem.clone(), 1 + rng.below(2) as usize);
                    rt.spawn(async move {
                        let _p = sem.acquire_many_async(n).await.unwrap();
                        corio::time::sleep_async(Duration::from_micros(200)).await;
                    })
                })
                .collect();
            for (i, h) in handles.iter().enumerate() {
                if i % 3 == 0 {
                    h.abort();
                }
            }
            for h in handles {
                let _ = h.join(); // finished or cancelled
            }
            assert_eq!(sem.available_permits(), 2, "a cancelled acquirer lost permits");
            assert!(sem.try_acquire_many(2).is_some());
        });
    }

    #[test]
    fn readers_share_and_writers_exclude_across_coroutines_tasks_and_threads() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let lock = Arc::new(RwLock::new((0u64, 0u64)));
            let readers = Arc::new(Peak::default());
            let mut handles = Vec::new();
            for i in 0..4 {
                {
                    let (lock, readers) = (lock.clone(), readers.clone());
                    handles.push(rt.go(move || {
                        for _ in 0..50 {
                            if i % 2 == 0 {
                                let mut w = lock.write();
                                w.0 += 1;
                                corio::yield_now(); // a reader that got in now would see a != b
                                w.1 += 1;
                            } else {
                                let r = lock.read();
                                readers.enter();
                                assert_eq!(r.0, r.1, "a reader saw a half-done write");
                                corio::yield_now();
                                readers.leave();
                            }
                        }
                    }));
                }
                {
                    let (lock, readers) = (lock.clone(), readers.clone());
                    handles.push(rt.spawn(async move {
                        for _ in 0..50 {
                            if i % 2 == 1 {
                                let mut w = lock.write_async().await;
                                w.0 += 1;
                                corio::yield_now_async().await;
                                w.1 += 1;
                            } else {
                                let r = lock.read_async().await;
                                readers.enter();
                                assert_eq!(r.0, r.1, "a reader saw a half-done write");
                                corio::yield_now_async().await;
                                readers.leave();
                            }
                        }
                    }));
                }
            }
            let lock2 = lock.clone();
            let thread = std::thread::spawn(move || {
                for _ in 0..50 {
                    let mut w = lock2.write();
                    w.0 += 1;
                    std::thread::yield_now();
                    w.1 += 1;
                    drop(w);
                    let r = lock2.read();
                    assert_eq!(r.0, r.1);
                }
            });
            handles.into_iter().for_each(|h| h.join().unwrap());
            thread.join().unwrap();
            assert_eq!(*lock.read_async_free(), (250, 250));
        });
    }

    /// Owned permits taken by a spawning loop and moved into the coroutines and tasks it spawns
    /// bound how many run at once, and come back when each ends (tokio's `acquire_owned`
    /// pattern: a connection limit).
    #[test]
    fn owned_permits_moved_into_spawned_work_bound_it_and_return_when_it_ends() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let sem = Arc::new(Semaphore::new(2));
            let peak = Arc::new(Peak::default());
            let s = sem.clone();
            let p = peak.clone();
            rt.run(move || {
                let mut handles = Vec::new();
                for i in 0..40 {
                    let peak = p.clone();
                    let permit = if i % 2 == 0 {
                        s.clone().acquire_owned().unwrap()
                    } else {
                        corio::block_on(s.clone().acquire_many_owned_async(1)).unwrap()
                    };
                    assert_eq!(permit.num_permits(), 1);
                    assert!(Arc::ptr_eq(permit.semaphore(), &s));
                    peak.enter();
                    if i % 2 == 0 {
                        handles.push(corio::go(move || {
                            corio::yield_now();
                            peak.leave();
                            drop(permit);
                        }));
                    } else {
                        handles.push(corio::spawn(async move {
                            corio::yield_now_async().await;
                            peak.leave();
                            drop(permit);
                        }));
                    }
                }
                handles.into_iter().for_each(|h| h.join().unwrap());
            });
            assert!(peak.max.load(SeqCst) <= 2, "{} held at once", peak.max.load(SeqCst));
            assert_eq!(sem.available_permits(), 2);
        });
    }

    /// Coroutines, tasks and threads blocked in `acquire` all wake with an error when the
    /// semaphore is closed, and nobody gets a permit after it.
    #[test]
    fn close_wakes_coroutines_tasks_and_threads_waiting_to_acquire_with_an_error() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let sem = Arc::new(Semaphore::new(0));
            let started = Arc::new(AtomicUsize::new(0));
            let mut handles = Vec::new();
            for _ in 0..3 {
                let (s, st) = (sem.clone(), started.clone());
                handles.push(rt.go(move || {
                    st.fetch_add(1, SeqCst);
                    assert!(s.acquire().is_err());
                }));
                let (s, st) = (sem.clone(), started.clone());
                handles.push(rt.spawn(async move {
                    st.fetch_add(1, SeqCst);
                    assert!(s.acquire_many_async(2).await.is_err());
                }));
            }
            let (s, st) = (sem.clone(), started.clone());
            let thread = std::thread::spawn(move || {
                st.fetch_add(1, SeqCst);
                assert!(s.acquire_owned().is_err());
            });
            support::wait_until("every acquirer started", || started.load(SeqCst) == 7);
            // Whether each has queued yet or not, it must fail: the close also refuses
            // acquirers that come after it.
            sem.close();
            handles.into_iter().for_each(|h| h.join().unwrap());
            thread.join().unwrap();
            sem.add_permits(1);
            assert!(sem.try_acquire().is_none());
        });
    }
}

/// Helper: read an `RwLock` from a plain thread without the blocking face (the lock is free).
trait ReadFree<T> {
    fn read_async_free(&self) -> corio::sync::RwLockReadGuard<'_, T>;
}

impl<T> ReadFree<T> for RwLock<T> {
    fn read_async_free(&self) -> corio::sync::RwLockReadGuard<'_, T> {
        self.try_read().expect("the lock is free")
    }
}

#[test]
fn a_large_acquire_many_is_not_overtaken_by_later_small_acquirers() {
    let sem = Semaphore::new(2);
    let held = sem.acquire().unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let mut big = pin!(sem.acquire_many_async(2));
    assert!(big.as_mut().poll(&mut cx).is_pending());
    assert!(
        sem.try_acquire().is_none(),
        "a newcomer took the free permit the queued large request is collecting"
    );
    drop(held);
    let permit = match big.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(p) => p.unwrap(),
        std::task::Poll::Pending => panic!("the large request was not served"),
    };
    assert_eq!(permit.num_permits(), 2);
}

#[test]
fn a_dropped_partly_served_acquire_returns_the_permits_it_had_collected() {
    let sem = Semaphore::new(1);
    let held = sem.acquire().unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    {
        let mut three = pin!(sem.acquire_many_async(3));
        assert!(three.as_mut().poll(&mut cx).is_pending());
        sem.add_permits(1);
        drop(held); // the waiter has 2 of its 3 now
        assert_eq!(sem.available_permits(), 0);
    }
    assert_eq!(
        sem.available_permits(),
        2,
        "the cancelled waiter kept its permits"
    );
}

#[test]
fn owned_permits_try_forget_and_cancel_like_borrowed_ones() {
    let sem = Arc::new(Semaphore::new(3));
    let two = sem.clone().try_acquire_many_owned(2).unwrap();
    assert_eq!(two.num_permits(), 2);
    assert!(sem.clone().try_acquire_many_owned(2).is_none());
    assert_eq!(sem.available_permits(), 1, "a failed try took a permit");
    // A queued owned acquire that is dropped passes on what it was assigned.
    let mut cx = Context::from_waker(Waker::noop());
    {
        let mut three = pin!(sem.clone().acquire_many_owned_async(3));
        assert!(three.as_mut().poll(&mut cx).is_pending());
        drop(two); // the waiter has all 3 now, but is dropped before it sees them
    }
    assert_eq!(
        sem.available_permits(),
        3,
        "the cancelled owned acquire kept permits"
    );
    sem.clone().acquire_owned().unwrap().forget();
    assert_eq!(sem.available_permits(), 2, "a forgotten permit came back");
}

/// `close` fails every queued acquirer (including one that had collected part of what it
/// wants, whose permits go back) and every later one, while permits already held stay valid
/// and still come back (tokio's `close` contract).
#[test]
fn close_fails_queued_and_later_acquirers_and_keeps_held_permits_valid() {
    /// Counts its wakes.
    struct Wakes(AtomicUsize);
    impl std::task::Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    let wakes = Arc::new(Wakes(AtomicUsize::new(0)));
    let waker = Waker::from(wakes.clone());
    let sem = Arc::new(Semaphore::new(2));
    let held = sem.acquire().unwrap();
    let mut cx = Context::from_waker(&waker);
    let mut three = pin!(sem.acquire_many_async(3)); // collects the free permit, waits
    let mut one = pin!(sem.acquire_async());
    assert!(three.as_mut().poll(&mut cx).is_pending());
    assert!(one.as_mut().poll(&mut cx).is_pending());
    assert_eq!(sem.available_permits(), 0);
    sem.close();
    assert!(sem.is_closed());
    assert_eq!(wakes.0.load(SeqCst), 2, "close did not wake both waiters");
    assert!(matches!(three.as_mut().poll(&mut cx), Poll::Ready(Err(_))));
    assert!(matches!(one.as_mut().poll(&mut cx), Poll::Ready(Err(_))));
    assert_eq!(
        sem.available_permits(),
        1,
        "the failed acquirer kept the permit it had collected"
    );
    assert!(
        sem.try_acquire().is_none(),
        "try_acquire succeeded after close"
    );
    let err = sem.acquire().unwrap_err();
    assert_eq!(err.to_string(), "semaphore closed");
    assert!(sem.clone().acquire_owned().is_err());
    assert!(corio::block_on(sem.clone().acquire_many_owned_async(1)).is_err());
    drop(held);
    assert_eq!(
        sem.available_permits(),
        2,
        "a permit held across the close was lost"
    );
}

/// A failed `try_acquire` must not hand back permits it never took (it once built a permit and
/// dropped it).
#[test]
fn a_failed_try_acquire_returns_no_permit() {
    let sem = Semaphore::new(1);
    let p = sem.try_acquire().unwrap();
    assert!(sem.try_acquire().is_none());
    assert_eq!(
        sem.available_permits(),
        0,
        "a failed try_acquire added a permit"
    );
    drop(p);
    assert_eq!(sem.available_permits(), 1);
}

#[test]
fn a_queued_writer_holds_back_later_readers_and_a_failed_try_write_frees_nothing() {
    let lock = RwLock::new(0);
    let r1 = lock.try_read().unwrap();
    assert!(lock.try_write().is_none());
    assert!(lock.try_write().is_none());
    let mut cx = Context::from_waker(Waker::noop());
    let mut w = pin!(lock.write_async());
    assert!(
        w.as_mut().poll(&mut cx).is_pending(),
        "a writer got in beside a reader"
    );
    assert!(
        lock.try_read().is_none(),
        "a reader overtook the queued writer"
    );
    drop(r1);
    assert!(w.as_mut().poll(&mut cx).is_ready());
}

/// A waiter's waker is user code: an acquire polled again with another waker drops the one it
/// had stored outside the semaphore's lock. Here the old waker owns a permit, whose drop
/// releases it (under the lock, the release blocked for ever on that lock).
#[test]
fn an_acquire_polled_with_a_new_waker_drops_the_old_one_outside_the_lock() {
    struct OwnsPermit(#[allow(dead_code)] corio::sync::OwnedSemaphorePermit);
    impl std::task::Wake for OwnsPermit {
        fn wake(self: Arc<Self>) {}
    }
    within(EVENTUALLY, || {
        let sem = Arc::new(Semaphore::new(1));
        let permit = sem.clone().try_acquire_owned().unwrap();
        let waker = Waker::from(Arc::new(OwnsPermit(permit)));
        let mut acquire = pin!(sem.acquire_async());
        assert!(
            acquire
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        drop(waker); // the node's clone is the last
        // The poll stores the new waker; the old one's drop then releases the permit to us.
        assert!(
            acquire
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending()
        );
        assert!(matches!(
            acquire
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop())),
            Poll::Ready(Ok(_))
        ));
    });
}

/// A permit taken before `add_permits` filled the free count to `MAX_PERMITS` (allowed: the
/// free count does not pass it) drops without a panic (a panic in `drop` during an unwind
/// aborts the process); the free count stays at the maximum.
#[test]
fn a_permit_returned_to_a_full_semaphore_drops_without_a_panic() {
    let sem = Semaphore::new(1);
    let permit = sem.try_acquire().unwrap();
    sem.add_permits(Semaphore::MAX_PERMITS);
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(permit)));
    assert!(dropped.is_ok(), "dropping the permit panicked");
    assert_eq!(sem.available_permits(), Semaphore::MAX_PERMITS);
}
