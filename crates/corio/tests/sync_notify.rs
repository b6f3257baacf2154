//! `Notify`, `Condvar` and `oneshot`: each from a stackful coroutine, an async task and a plain
//! thread on one and two workers; a cancelled waiter passes its notification on (counted);
//! Condvar's spurious wake-ups absorbed by `wait_while`; ports of Go's `sync/cond_test.go`.

#[macro_use]
mod support;

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use corio::sync::{Condvar, Mutex, Notify, oneshot};
use support::{EVENTUALLY, wait_until, within};

rt_common! {
    /// One notifier, waiters of all three kinds; each `notify_one` lets exactly one through
    /// (stored as a permit when nobody waits yet), so `n` notifications release `n` waiters.
    #[test]
    fn notify_one_releases_one_waiter_of_each_kind_per_call() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let notify = Arc::new(Notify::new());
            let through = Arc::new(AtomicUsize::new(0));
            let (n1, t1) = (notify.clone(), through.clone());
            let co = rt.go(move || {
                n1.notified();
                t1.fetch_add(1, SeqCst);
            });
            let (n2, t2) = (notify.clone(), through.clone());
            let task = rt.spawn(async move {
                n2.notified_async().await;
                t2.fetch_add(1, SeqCst);
            });
            let (n3, t3) = (notify.clone(), through.clone());
            let thread = std::thread::spawn(move || {
                n3.notified();
                t3.fetch_add(1, SeqCst);
            });
            for i in 1..=3 {
                notify.notify_one();
                wait_until("a waiter is through", || through.load(SeqCst) == i);
            }
            co.join().unwrap();
            task.join().unwrap();
            thread.join().unwrap();
        });
    }

    /// Go's `TestCondBroadcast`-style check on many waiters: `notify_waiters` wakes everybody
    /// waiting, of every kind.
    #[test]
    fn notify_waiters_wakes_every_current_waiter() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let notify = Arc::new(Notify::new());
            let waiting = Arc::new(AtomicUsize::new(0));
            let mut handles = Vec::new();
            for _ in 0..20 {
                let (n, w) = (notify.clone(), waiting.clone());
                handles.push(rt.go(move || {
                    let mut f = pin!(n.notified_async());
                    f.as_mut().enable();
                    w.fetch_add(1, SeqCst);
                    corio::block_on(f);
                }));
                let (n, w) = (notify.clone(), waiting.clone());
                handles.push(rt.spawn(async move {
                    let mut f = pin!(n.notified_async());
                    f.as_mut().enable();
                    w.fetch_add(1, SeqCst);
                    f.await;
                }));
            }
            wait_until("every waiter is registered", || waiting.load(SeqCst) == 40);
            notify.notify_waiters();
            handles.into_iter().for_each(|h| h.join().unwrap());
        });
    }

    /// Go's `TestCondSignal` (sync/cond_test.go): n waiters; each `Signal` wakes exactly one.
    #[test]
    fn go_cond_signal_wakes_one_waiter_per_signal() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let pair = Arc::new((Mutex::new(0usize), Condvar::new()));
            let awake = Arc::new(AtomicUsize::new(0));
            let n = 8;
            let mut handles = Vec::new();
            for i in 0..n {
                let (pair, awake) = (pair.clone(), awake.clone());
                if i % 2 == 0 {
                    handles.push(rt.go(move || {
                        let mut g = pair.0.lock();
                        *g += 1;
                        let _g = pair.1.wait(g);
                        awake.fetch_add(1, SeqCst);
                    }));
                } else {
                    handles.push(rt.spawn(async move {
                        let mut g = pair.0.lock_async().await;
                        *g += 1;
                        let _g = pair.1.wait_async(g).await;
                        awake.fetch_add(1, SeqCst);
                    }));
                }
            }
            // Registered: each waiter counts itself under the mutex and waits in the same
            // critical section, so once the count is n every one is waiting.
            wait_until("every waiter waits", || *pair.0.try_lock().as_deref().unwrap_or(&0) == n);
            for woken in 1..=n {
                pair.1.notify_one();
                wait_until("one more waiter woke", || awake.load(SeqCst) == woken);
                assert_eq!(awake.load(SeqCst), woken, "a signal woke more than one waiter");
            }
            handles.into_iter().for_each(|h| h.join().unwrap());
        });
    }

    /// Go's `TestCondSignalGenerations` (sync/cond_test.go): waiters start one by one; each
    /// signal, sent once the newest waiter waits, wakes the one that waited before it in the
    /// same order (here: exactly the waiter of that generation, and no later one).
    #[test]
    fn go_cond_signal_generations_wake_waiters_in_order() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let pair = Arc::new((Mutex::new(()), Condvar::new()));
            let running = Arc::new(AtomicUsize::new(0));
            let awake = Arc::new(std::sync::Mutex::new(Vec::new()));
            let n = 50;
            let mut handles = Vec::new();
            for i in 0..n {
                let (p, r, a) = (pair.clone(), running.clone(), awake.clone());
                handles.push(rt.go(move || {
                    let g = p.0.lock();
                    r.fetch_add(1, SeqCst);
                    let _g = p.1.wait(g);
                    a.lock().unwrap().push(i);
                }));
                if i > 0 {
                    wait_until("the previous waiter woke", || awake.lock().unwrap().len() == i);
                    assert_eq!(awake.lock().unwrap()[i - 1], i - 1, "wrong waiter woke up");
                }
                wait_until("the new waiter runs", || running.load(SeqCst) == i + 1);
                // Locking after `running` means the waiter has released the mutex in `wait`.
                let g = pair.0.lock();
                pair.1.notify_one();
                drop(g);
            }
            handles.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(*awake.lock().unwrap(), (0..n).collect::<Vec<_>>());
        });
    }

    /// `notify_all` while the condition is still false is a spurious wake-up for `wait_while`:
    /// the waiters go back to waiting, and return only once the condition holds.
    #[test]
    fn condvar_wait_while_absorbs_wake_ups_before_the_condition_holds() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let pair = Arc::new((Mutex::new((0u32, false)), Condvar::new()));
            let returned = Arc::new(AtomicUsize::new(0));
            let mut handles = Vec::new();
            for _ in 0..3 {
                let (p, r) = (pair.clone(), returned.clone());
                handles.push(rt.go(move || {
                    let g = p.0.lock();
                    let g = p.1.wait_while(g, |s| !s.1);
                    assert!(g.1, "returned with the condition false");
                    r.fetch_add(1, SeqCst);
                }));
                let (p, r) = (pair.clone(), returned.clone());
                handles.push(rt.spawn(async move {
                    let g = p.0.lock_async().await;
                    let g = p.1.wait_while_async(g, |s| !s.1).await;
                    assert!(g.1, "returned with the condition false");
                    r.fetch_add(1, SeqCst);
                }));
            }
            for _ in 0..5 {
                pair.0.lock().0 += 1; // a change that does not make the condition true
                pair.1.notify_all();
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            assert_eq!(returned.load(SeqCst), 0, "a waiter returned on a spurious wake-up");
            pair.0.lock().1 = true;
            pair.1.notify_all();
            handles.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(returned.load(SeqCst), 6);
        });
    }

    /// With nobody notifying, `wait_timeout` returns after its timeout (never before), says
    /// so, and hands back the mutex locked: from a coroutine, a task and a plain thread.
    #[test]
    fn condvar_wait_timeout_without_a_notification_times_out_with_the_lock_held() {
        let rt = rt();
        within(EVENTUALLY, move || {
            const D: Duration = Duration::from_millis(20);
            let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
            let p = pair.clone();
            let co = rt.go(move || {
                let start = Instant::now();
                let (mut g, res) = p.1.wait_timeout(p.0.lock(), D);
                assert!(res.timed_out());
                assert!(start.elapsed() >= D, "timed out after {:?}", start.elapsed());
                assert!(p.0.try_lock().is_none(), "the guard does not hold the mutex");
                *g += 1;
            });
            let p = pair.clone();
            let task = rt.spawn(async move {
                let start = Instant::now();
                let (mut g, res) = p.1.wait_timeout_async(p.0.lock_async().await, D).await;
                assert!(res.timed_out());
                assert!(start.elapsed() >= D, "timed out after {:?}", start.elapsed());
                assert!(p.0.try_lock().is_none(), "the guard does not hold the mutex");
                *g += 1;
            });
            let start = Instant::now();
            let (mut g, res) = pair.1.wait_timeout(pair.0.lock(), D);
            assert!(res.timed_out());
            assert!(start.elapsed() >= D, "timed out after {:?}", start.elapsed());
            *g += 1;
            drop(g);
            co.join().unwrap();
            task.join().unwrap();
            assert_eq!(*pair.0.lock(), 3);
        });
    }

    /// A notification ends a `wait_timeout` long before its (60 s) timeout, which then reports
    /// no time-out, from a coroutine, a task and a plain thread at once.
    #[test]
    fn condvar_wait_timeout_returns_on_a_notification_without_timing_out() {
        let rt = rt();
        within(EVENTUALLY, move || {
            const LONG: Duration = Duration::from_secs(60);
            let pair = Arc::new((Mutex::new((false, 0u32)), Condvar::new()));
            let waiting = |p: &(Mutex<(bool, u32)>, Condvar)| p.0.lock().1;
            // Blocking-style, for the coroutine and the thread.
            let wait = |p: Arc<(Mutex<(bool, u32)>, Condvar)>| {
                let mut g = p.0.lock();
                g.1 += 1;
                while !g.0 {
                    let (next, res) = p.1.wait_timeout(g, LONG);
                    assert!(!res.timed_out());
                    g = next;
                }
            };
            let p = pair.clone();
            let co = rt.go(move || wait(p));
            let p = pair.clone();
            let task = rt.spawn(async move {
                let mut g = p.0.lock_async().await;
                g.1 += 1;
                while !g.0 {
                    let (next, res) = p.1.wait_timeout_async(g, LONG).await;
                    assert!(!res.timed_out());
                    g = next;
                }
            });
            let p = pair.clone();
            let thread = std::thread::spawn(move || wait(p));
            // Each waiter registers before it releases the lock: once all three have counted
            // themselves under it, a notification cannot miss them.
            wait_until("three waiters", || waiting(&pair) == 3);
            pair.0.lock().0 = true;
            pair.1.notify_all();
            co.join().unwrap();
            task.join().unwrap();
            thread.join().unwrap();
        });
    }

    #[test]
    fn oneshot_carries_a_value_between_every_pair_of_worlds() {
        let rt = rt();
        within(EVENTUALLY, move || {
            // coroutine -> task
            let (tx, rx) = oneshot::channel();
            let task = rt.spawn(async move { rx.await.unwrap() });
            rt.go(move || tx.send(1u32).unwrap()).join().unwrap();
            assert_eq!(task.join().unwrap(), 1);
            // task -> coroutine
            let (tx, rx) = oneshot::channel();
            let co = rt.go(move || rx.recv().unwrap());
            rt.spawn(async move { tx.send(2u32).unwrap() });
            assert_eq!(co.join().unwrap(), 2);
            // thread -> coroutine, coroutine -> thread
            let (tx, rx) = oneshot::channel();
            let (tx2, rx2) = oneshot::channel();
            let co = rt.go(move || tx2.send(rx.recv().unwrap() + 1).unwrap());
            std::thread::spawn(move || tx.send(3u32).unwrap());
            assert_eq!(rx2.recv(), Ok(4));
            co.join().unwrap();
            // a dropped sender wakes the receiver with an error
            let (tx, rx) = oneshot::channel::<u32>();
            let task = rt.spawn(rx);
            drop(tx);
            assert_eq!(task.join().unwrap(), Err(oneshot::RecvError));
        });
    }
}

/// A waiter handed a `notify_one` and dropped before it observed it passes it on to the next
/// waiter: the notification is not lost.
#[test]
fn a_cancelled_notified_waiter_passes_its_notification_to_the_next() {
    let notify = Notify::new();
    let mut cx = Context::from_waker(Waker::noop());
    let mut second = pin!(notify.notified_async());
    {
        let mut first = pin!(notify.notified_async());
        assert!(first.as_mut().poll(&mut cx).is_pending());
        assert!(second.as_mut().poll(&mut cx).is_pending());
        notify.notify_one(); // goes to `first`, which is dropped unobserved
    }
    assert_eq!(
        second.as_mut().poll(&mut cx),
        Poll::Ready(()),
        "the notification was lost"
    );
}

/// The last waiter cancelled with a notification leaves it as the stored permit.
#[test]
fn a_cancelled_notified_last_waiter_leaves_the_permit_for_the_next_comer() {
    let notify = Notify::new();
    let mut cx = Context::from_waker(Waker::noop());
    {
        let mut only = pin!(notify.notified_async());
        assert!(only.as_mut().poll(&mut cx).is_pending());
        notify.notify_one();
    }
    let mut later = pin!(notify.notified_async());
    assert_eq!(later.as_mut().poll(&mut cx), Poll::Ready(()));
}

/// Go's `TestRace` in spirit (sync/cond_test.go): a `notify_waiters` between creating the
/// future and its first poll is not missed.
#[test]
fn a_notified_future_made_before_notify_waiters_completes() {
    let notify = Notify::new();
    let mut cx = Context::from_waker(Waker::noop());
    let mut f = pin!(notify.notified_async());
    notify.notify_waiters();
    assert_eq!(f.as_mut().poll(&mut cx), Poll::Ready(()));
    let mut g = pin!(notify.notified_async());
    assert!(
        g.as_mut().poll(&mut cx).is_pending(),
        "notify_waiters stored a permit"
    );
}

/// A condvar notification with nobody waiting is not kept (unlike `Notify::notify_one`).
#[test]
fn a_condvar_notify_with_nobody_waiting_is_lost() {
    let m = Mutex::new(());
    let cv = Condvar::new();
    cv.notify_one();
    let mut cx = Context::from_waker(Waker::noop());
    let mut wait = pin!(cv.wait_async(m.try_lock().unwrap()));
    assert!(wait.as_mut().poll(&mut cx).is_pending());
    assert!(
        m.try_lock().is_some(),
        "the waiting condvar released the mutex"
    );
}

/// A oneshot receiver's waker is user code: dropped (with the receiver, or replaced by a later
/// poll) outside the oneshot's lock. Here the waker owns the sender, whose drop takes that lock.
#[test]
fn a_oneshot_receivers_waker_is_dropped_outside_the_lock() {
    struct OwnsSender(#[allow(dead_code)] oneshot::Sender<u8>);
    impl std::task::Wake for OwnsSender {
        fn wake(self: Arc<Self>) {}
    }
    within(EVENTUALLY, || {
        // Dropped with the receiver.
        let (tx, mut rx) = oneshot::channel::<u8>();
        let waker = Waker::from(Arc::new(OwnsSender(tx)));
        assert!(
            Pin::new(&mut rx)
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        drop(waker); // the receiver's clone is the last
        drop(rx);
        // Replaced by a later poll.
        let (tx, mut rx) = oneshot::channel::<u8>();
        let waker = Waker::from(Arc::new(OwnsSender(tx)));
        assert!(
            Pin::new(&mut rx)
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        drop(waker);
        assert!(
            Pin::new(&mut rx)
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending()
        );
        assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
    });
}
