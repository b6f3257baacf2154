//! Review tests for the sync primitives that `sync_mutex.rs`, `sync_semaphore.rs`,
//! `sync_notify.rs` and `sync_waitgroup.rs` leave mostly alone: `RwLock`, `Condvar`, `Barrier`,
//! `OnceCell`/`Lazy` and `oneshot`, held to their rustdoc and module docs.
//!
//! The peers' own suites, re-expressed for corio (not copied): tokio's `tests/sync_rwlock.rs`,
//! `sync_barrier.rs`, `sync_once_cell.rs` and `sync_oneshot.rs`; Go's `sync/cond_test.go`,
//! `rwmutex_test.go` and `once_test.go`; std's `Condvar`, `Barrier` and `OnceLock` tests. Each
//! port names its original. Then what a cancellable, three-world primitive adds: a future dropped
//! after it was handed the lock, the permit or the notification passes it on; a waiter polled
//! with a new waker wakes only that one; values are dropped exactly once; every documented
//! panic; coroutines, tasks and plain threads (with and without a runtime) on one primitive,
//! on one worker and on two.
//!
//! Every test is bounded by the `within` watchdog; assertions are about behaviour (who got in,
//! who was woken, what was dropped), never about how long something took.

#[macro_use]
mod support;

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use corio::sync::{Barrier, Condvar, Lazy, Mutex, OnceCell, RwLock, WaitGroup, oneshot};
use support::{
    Drops, EVENTUALLY, EXPECTED, FLAVOURS, Gate, panic_message, quiet_expected_panics, wait_until,
    within,
};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Counts the wake-ups of the wakers made from it (tokio-test's `is_woken`); the `Arc`'s strong
/// count tells how many clones of them are kept somewhere (tokio-test's `waker_ref_count`).
#[derive(Default)]
struct WakeLog {
    wakes: AtomicUsize,
}

impl Wake for WakeLog {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, SeqCst);
    }
}

impl WakeLog {
    fn woken(&self) -> bool {
        self.wakes.load(SeqCst) > 0
    }
}

/// A fresh log and a waker that reports to it.
fn waker() -> (Arc<WakeLog>, Waker) {
    let log = Arc::new(WakeLog::default());
    (log.clone(), Waker::from(log))
}

/// Polls `fut` once with `waker`.
fn poll_with<F: Future + ?Sized>(fut: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(waker))
}

/// Polls `fut` once with a waker that does nothing.
fn poll_noop<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    poll_with(fut, Waker::noop())
}

/// The value of a poll that must be ready.
#[track_caller]
fn ready<T>(poll: Poll<T>, what: &str) -> T {
    match poll {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("{what}: still pending"),
    }
}

/// The message of the panic `f` raises inside an async task of a fresh one-worker runtime.
fn panic_in_a_task(f: impl FnOnce() + Send + 'static) -> String {
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        rt.block_on(async move { corio::spawn(async move { panic_message(f) }).await })
            .unwrap()
    })
}

/// What a blocking-style call in an async task must say: that it would stall the worker, and
/// what to do instead (`DESIGN.md`, "Reliability": a panic that says what to do instead).
#[track_caller]
fn assert_advises_the_async_form(msg: &str) {
    assert!(
        msg.contains("async task") && msg.contains(".await") && msg.contains("_async"),
        "the panic gives no advice: {msg}"
    );
}

// ---------------------------------------------------------------------------------------------
// RwLock: tokio's `sync_rwlock.rs`
// ---------------------------------------------------------------------------------------------

/// tokio `into_inner`, with `get_mut` and `Default`.
#[test]
fn rwlock_into_inner_get_mut_and_default_give_the_value() {
    let mut lock = RwLock::new(41);
    *lock.get_mut() += 1;
    assert_eq!(lock.into_inner(), 42);
    assert_eq!(*RwLock::<u32>::default().try_read().unwrap(), 0);
}

/// tokio `read_shared`: two read futures are both ready at once.
#[test]
fn rwlock_two_readers_hold_the_lock_at_once() {
    let lock = RwLock::new(100);
    let mut r1 = pin!(lock.read_async());
    let g1 = ready(poll_noop(r1.as_mut()), "the first reader");
    let mut r2 = pin!(lock.read_async());
    let g2 = ready(poll_noop(r2.as_mut()), "the second reader");
    assert_eq!(*g1 + *g2, 200);
}

/// tokio `write_shared_pending` and `write_shared_drop`: a writer waits while a reader holds
/// the lock, and the reader's leaving wakes it.
#[test]
fn rwlock_a_writer_waits_for_the_reader_and_is_woken_when_it_leaves() {
    let lock = RwLock::new(100);
    let reader = lock.try_read().unwrap();
    let (log, w) = waker();
    let mut writer = pin!(lock.write_async());
    assert!(poll_with(writer.as_mut(), &w).is_pending());
    assert!(!log.woken());
    drop(reader);
    assert!(log.woken(), "the reader's release did not wake the writer");
    let mut g = ready(poll_with(writer.as_mut(), &w), "the writer");
    *g += 1;
    drop(g);
    assert_eq!(*lock.try_read().unwrap(), 101);
}

/// tokio `read_exclusive_pending` and `write_exclusive_pending`: while a writer holds the lock
/// both a reader and a writer wait; they get in one after the other, in the order they came.
#[test]
fn rwlock_a_writer_keeps_readers_and_writers_out_and_they_follow_in_order() {
    let lock = RwLock::new(0);
    let holder = lock.try_write().unwrap();
    let (read_log, rw) = waker();
    let (write_log, ww) = waker();
    let mut reader = pin!(lock.read_async());
    let mut writer = pin!(lock.write_async());
    assert!(poll_with(reader.as_mut(), &rw).is_pending());
    assert!(poll_with(writer.as_mut(), &ww).is_pending());
    drop(holder);
    assert!(read_log.woken(), "the queued reader was not woken");
    assert!(
        !write_log.woken(),
        "the second writer was woken while the reader queued before it gets the lock"
    );
    let r = ready(poll_with(reader.as_mut(), &rw), "the reader");
    assert!(poll_with(writer.as_mut(), &ww).is_pending());
    drop(r);
    assert!(write_log.woken());
    drop(ready(poll_with(writer.as_mut(), &ww), "the writer"));
    assert!(lock.try_write().is_some(), "every permit came back");
}

/// tokio `write_read_shared_drop_pending`: a queued writer holds back a later reader; when the
/// writer's future is dropped (a cancelled task, a timeout), the reader behind it gets in at
/// once although the first reader still holds the lock.
#[test]
fn rwlock_a_cancelled_queued_writer_lets_the_readers_queued_behind_it_in() {
    let lock = RwLock::new(7);
    let first = lock.try_read().unwrap();
    let mut writer = Box::pin(lock.write_async());
    assert!(poll_noop(writer.as_mut()).is_pending());
    let (log, w) = waker();
    let mut reader = pin!(lock.read_async());
    assert!(
        poll_with(reader.as_mut(), &w).is_pending(),
        "a reader overtook the queued writer"
    );
    drop(writer);
    assert!(
        log.woken(),
        "the writer's cancel did not wake the reader behind it"
    );
    let second = ready(
        poll_with(reader.as_mut(), &w),
        "the reader behind the writer",
    );
    assert_eq!(*first + *second, 14);
    assert!(lock.try_write().is_none());
    drop((first, second));
    assert!(
        lock.try_write().is_some(),
        "the cancelled writer kept permits"
    );
}

/// tokio `write_order`, stated on the queue: writers queued behind a reader get the lock one by
/// one in the order they queued, each woken only when it is its turn.
#[test]
fn rwlock_queued_writers_get_the_lock_in_the_order_they_queued() {
    let lock = RwLock::new(Vec::new());
    let reader = lock.try_read().unwrap();
    let logs: Vec<_> = (0..3).map(|_| waker()).collect();
    let mut writers: Vec<_> = (0..3).map(|_| Box::pin(lock.write_async())).collect();
    for (writer, (_, w)) in writers.iter_mut().zip(&logs) {
        assert!(poll_with(writer.as_mut(), w).is_pending());
    }
    drop(reader);
    for (i, (writer, (log, w))) in writers.iter_mut().zip(&logs).enumerate() {
        assert!(log.woken(), "writer {i} was not woken in its turn");
        for (later, _) in &logs[i + 1..] {
            assert!(
                !later.woken(),
                "a later writer was woken before writer {i} left"
            );
        }
        let mut g = ready(poll_with(writer.as_mut(), w), "the writer whose turn it is");
        g.push(i);
    }
    drop(writers);
    assert_eq!(*lock.try_read().unwrap(), [0, 1, 2]);
}

/// Cancellation after the grant: a writer is handed the lock by the last reader's release but
/// its future is dropped before it polls again. The lock must pass on to the reader queued
/// behind it, and no permit may be lost or duplicated.
#[test]
fn rwlock_a_writer_handed_the_lock_but_dropped_before_its_poll_passes_it_on() {
    let lock = RwLock::new(0);
    let holder = lock.try_read().unwrap();
    let (writer_log, ww) = waker();
    let mut writer = Box::pin(lock.write_async());
    assert!(poll_with(writer.as_mut(), &ww).is_pending());
    let (reader_log, rw) = waker();
    let mut reader = pin!(lock.read_async());
    assert!(poll_with(reader.as_mut(), &rw).is_pending());
    drop(holder);
    assert!(writer_log.woken(), "the writer was not handed the lock");
    assert!(lock.try_read().is_none(), "the writer owns the lock now");
    drop(writer);
    assert!(reader_log.woken(), "the granted lock was not passed on");
    let r = ready(
        poll_with(reader.as_mut(), &rw),
        "the reader behind the writer",
    );
    assert!(lock.try_write().is_none());
    drop(r);
    let w = lock.try_write().expect("a permit was lost");
    assert!(lock.try_read().is_none(), "a permit was duplicated");
    drop(w);
}

/// A waiter polled again with another waker (a task moved, a `select` re-registered) is woken
/// through the new waker only, and the old one's clone is released.
#[test]
fn rwlock_a_waiter_polled_with_a_new_waker_wakes_only_the_new_one() {
    let lock = RwLock::new(());
    let holder = lock.try_write().unwrap();
    let (old_log, old) = waker();
    let (new_log, new) = waker();
    let mut reader = pin!(lock.read_async());
    assert!(poll_with(reader.as_mut(), &old).is_pending());
    assert_eq!(
        Arc::strong_count(&old_log),
        3,
        "the lock keeps the first waker"
    );
    assert!(poll_with(reader.as_mut(), &new).is_pending());
    assert_eq!(
        Arc::strong_count(&old_log),
        2,
        "the replaced waker is still kept"
    );
    drop(holder);
    assert!(new_log.woken());
    assert!(!old_log.woken(), "the stale waker was woken");
    drop(ready(poll_with(reader.as_mut(), &new), "the reader"));
}

/// tokio `try_read_try_write`.
#[test]
fn rwlock_try_read_and_try_write_follow_the_holders() {
    let lock = RwLock::new(15);
    {
        let r1 = lock.try_read().unwrap();
        assert!(lock.try_write().is_none());
        let r2 = lock.try_read().unwrap();
        assert_eq!(*r1 + *r2, 30);
    }
    {
        let mut w = lock.try_write().unwrap();
        *w = 1515;
        assert!(lock.try_read().is_none());
        assert!(lock.try_write().is_none());
        assert_eq!(format!("{lock:?}"), "RwLock { data: <locked> }");
    }
    assert_eq!(*lock.try_read().unwrap(), 1515);
    assert_eq!(format!("{lock:?}"), "RwLock { data: 1515 }");
}

/// Documented panics: `read` and `write` inside an async task advise `read_async`/`write_async`.
#[test]
fn rwlock_read_and_write_in_an_async_task_panic_with_advice() {
    let msg = panic_in_a_task(|| {
        let lock = RwLock::new(0);
        drop(lock.read());
    });
    assert_advises_the_async_form(&msg);
    let msg = panic_in_a_task(|| {
        let lock = RwLock::new(0);
        drop(lock.write());
    });
    assert_advises_the_async_form(&msg);
}

/// Go's `TestRLocker`, re-expressed: a plain thread holds two read guards; a coroutine that
/// asks to write stays out until both are gone, then gets in.
#[test]
fn go_rlocker_a_writer_waits_until_every_read_guard_is_gone() {
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        let lock = Arc::new(RwLock::new(0));
        for round in 0..10 {
            let (r1, r2) = (lock.try_read().unwrap(), lock.try_read().unwrap());
            let entered = Arc::new(AtomicBool::new(false));
            let (l, e) = (lock.clone(), entered.clone());
            let writer = rt.go(move || {
                let mut g = l.write();
                e.store(true, SeqCst);
                *g += 1;
            });
            wait_until("the writer queues", || lock.try_read().is_none());
            drop(r1);
            assert!(
                !entered.load(SeqCst),
                "the writer got in with a read guard alive"
            );
            drop(r2);
            writer.join().unwrap();
            assert!(entered.load(SeqCst));
            assert_eq!(*lock.try_read().unwrap(), round + 1);
        }
    });
}

mod rwlock_on_every_flavour {
    use super::*;

    rt_common! {
        /// Go's `TestParallelReaders`: readers of every kind take the read lock and all hold it at
        /// the same time (each waits, holding it, until all have it).
        #[test]
        fn go_parallel_readers_all_hold_the_read_lock_together() {
            let rt = rt();
            within(EVENTUALLY, move || {
                let lock = Arc::new(RwLock::new(()));
                let holding = Arc::new(AtomicUsize::new(0));
                let release = Arc::new(WaitGroup::new());
                release.add(1);
                let mut handles = Vec::new();
                for _ in 0..4 {
                    let (l, h, r) = (lock.clone(), holding.clone(), release.clone());
                    handles.push(rt.go(move || {
                        let _g = l.read();
                        h.fetch_add(1, SeqCst);
                        r.wait();
                    }));
                    let (l, h, r) = (lock.clone(), holding.clone(), release.clone());
                    handles.push(rt.spawn(async move {
                        let _g = l.read_async().await;
                        h.fetch_add(1, SeqCst);
                        r.wait_async().await;
                    }));
                }
                let threads: Vec<_> = (0..2)
                    .map(|_| {
                        let (lock, holding, release) =
                            (lock.clone(), holding.clone(), release.clone());
                        std::thread::spawn(move || {
                            let _g = lock.read();
                            holding.fetch_add(1, SeqCst);
                            release.wait();
                        })
                    })
                    .collect();
                wait_until("every reader holds the lock", || holding.load(SeqCst) == 10);
                assert!(lock.try_write().is_none());
                release.done();
                handles.into_iter().for_each(|h| h.join().unwrap());
                threads.into_iter().for_each(|t| t.join().unwrap());
                assert!(lock.try_write().is_some());
            });
        }

        /// Go's `HammerRWMutex`: writers and readers of every kind hammer one lock; a reader never
        /// sees a writer inside, a writer never sees anybody else, and every write counts.
        #[test]
        fn go_hammer_rwlock_readers_and_writers_of_every_kind_never_overlap() {
            const ROUNDS: i64 = 200;
            const WRITER: i64 = 10_000;
            let rt = rt();
            within(EVENTUALLY, move || {
                let lock = Arc::new(RwLock::new(0i64));
                let activity = Arc::new(AtomicI64::new(0));
                let check_read = |activity: &AtomicI64| {
                    let n = activity.fetch_add(1, SeqCst) + 1;
                    assert!((1..WRITER).contains(&n), "a reader saw a writer inside ({n})");
                };
                let check_write = |activity: &AtomicI64| {
                    let n = activity.fetch_add(WRITER, SeqCst) + WRITER;
                    assert_eq!(n, WRITER, "a writer saw somebody else inside");
                };
                let mut handles = Vec::new();
                for _ in 0..2 {
                    {
                        let (lock, activity) = (lock.clone(), activity.clone());
                        handles.push(rt.go(move || {
                            for i in 0..ROUNDS {
                                let g = lock.read();
                                check_read(&activity);
                                if i % 8 == 0 {
                                    corio::yield_now();
                                }
                                activity.fetch_sub(1, SeqCst);
                                drop(g);
                            }
                        }));
                    }
                    {
                        let (lock, activity) = (lock.clone(), activity.clone());
                        handles.push(rt.spawn(async move {
                            for i in 0..ROUNDS {
                                let g = lock.read_async().await;
                                check_read(&activity);
                                if i % 8 == 0 {
                                    corio::yield_now_async().await;
                                }
                                activity.fetch_sub(1, SeqCst);
                                drop(g);
                            }
                        }));
                    }
                }
                let (l, a) = (lock.clone(), activity.clone());
                handles.push(rt.go(move || {
                    for i in 0..ROUNDS {
                        let mut g = l.write();
                        check_write(&a);
                        *g += 1;
                        if i % 8 == 0 {
                            corio::yield_now();
                        }
                        a.fetch_sub(WRITER, SeqCst);
                    }
                }));
                let (l, a) = (lock.clone(), activity.clone());
                handles.push(rt.spawn(async move {
                    for i in 0..ROUNDS {
                        let mut g = l.write_async().await;
                        check_write(&a);
                        *g += 1;
                        if i % 8 == 0 {
                            corio::yield_now_async().await;
                        }
                        a.fetch_sub(WRITER, SeqCst);
                    }
                }));
                let (l, a) = (lock.clone(), activity.clone());
                let thread_writer = std::thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        let mut g = l.write();
                        check_write(&a);
                        *g += 1;
                        a.fetch_sub(WRITER, SeqCst);
                    }
                });
                let (l, a) = (lock.clone(), activity.clone());
                let thread_reader = std::thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        let g = l.read();
                        check_read(&a);
                        a.fetch_sub(1, SeqCst);
                        drop(g);
                    }
                });
                handles.into_iter().for_each(|h| h.join().unwrap());
                thread_writer.join().unwrap();
                thread_reader.join().unwrap();
                assert_eq!(*lock.try_read().unwrap(), 3 * ROUNDS);
                assert_eq!(activity.load(SeqCst), 0);
            });
        }

        /// Writer starvation (module docs: "a queued writer holds back the readers that arrive
        /// after it: neither side starves"): readers that always overlap one another would keep a
        /// reader-preferring lock held for ever; the writer still gets in while they run, and
        /// they stop only once it has.
        #[test]
        fn a_writer_gets_in_while_overlapping_readers_keep_coming() {
            let rt = rt();
            within(EVENTUALLY, move || {
                let lock = Arc::new(RwLock::new(false));
                let readers: Vec<_> = (0..3)
                    .map(|_| {
                        let lock = lock.clone();
                        rt.go(move || {
                            let mut reads = 0u64;
                            loop {
                                let g = lock.read();
                                if *g {
                                    return reads;
                                }
                                reads += 1;
                                corio::yield_now();
                            }
                        })
                    })
                    .collect();
                let l = lock.clone();
                let writer = rt.spawn(async move {
                    corio::yield_now_async().await;
                    *l.write_async().await = true;
                });
                writer.join().unwrap();
                for r in readers {
                    r.join().unwrap();
                }
            });
        }

        /// A panic while holding the write guard releases the lock on unwind (tokio's `RwLock`
        /// does not poison, and corio documents no poisoning): a writer that was queued behind it
        /// gets in and sees the value as the panicking writer left it.
        #[test]
        fn a_panic_while_writing_releases_the_lock_and_keeps_what_was_written() {
            quiet_expected_panics();
            let rt = rt();
            within(EVENTUALLY, move || {
                let lock = Arc::new(RwLock::new(0));
                let holding = Arc::new(WaitGroup::new());
                holding.add(1);
                let go_on = Arc::new(WaitGroup::new());
                go_on.add(1);
                let (l, h, g) = (lock.clone(), holding.clone(), go_on.clone());
                let panicker = rt.go(move || {
                    let mut guard = l.write();
                    *guard = 7;
                    h.done();
                    g.wait();
                    panic!("{EXPECTED} writer fails");
                });
                holding.wait();
                let l = lock.clone();
                let next = rt.spawn(async move {
                    let mut guard = l.write_async().await;
                    *guard += 1;
                    *guard
                });
                go_on.done();
                assert!(panicker.join().unwrap_err().is_panic());
                assert_eq!(next.join().unwrap(), 8);
                assert_eq!(*lock.read(), 8);
            });
        }

        /// Cancellation through the runtime: a task queued for the write lock is aborted; the
        /// reader queued behind it gets in while the first reader still holds the lock.
        #[test]
        fn an_aborted_task_queued_for_the_write_lock_lets_the_readers_behind_it_in() {
            let rt = rt();
            within(EVENTUALLY, move || {
                let lock = Arc::new(RwLock::new(5));
                let first = lock.try_read().unwrap();
                let l = lock.clone();
                let writer = rt.spawn(async move {
                    *l.write_async().await += 1;
                });
                wait_until("the writer queues", || lock.try_read().is_none());
                let l = lock.clone();
                let reader = rt.go(move || *l.read());
                writer.abort();
                assert!(writer.join().unwrap_err().is_cancelled());
                assert_eq!(reader.join().unwrap(), 5);
                drop(first);
                assert!(lock.try_write().is_some(), "the aborted writer kept permits");
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Condvar: std's and Go's tests, and cancellation
// ---------------------------------------------------------------------------------------------

/// "`notify_one` wakes the longest waiter": two waiters, two notifications, in order; a third
/// notification with nobody waiting is lost (std semantics).
#[test]
fn condvar_notify_one_wakes_the_longest_waiter_and_only_it() {
    let lock = Mutex::new(0);
    let cv = Condvar::new();
    let (first_log, w1) = waker();
    let (second_log, w2) = waker();
    let mut first = pin!(cv.wait_async(lock.try_lock().unwrap()));
    assert!(poll_with(first.as_mut(), &w1).is_pending());
    let mut second = pin!(cv.wait_async(lock.try_lock().unwrap()));
    assert!(poll_with(second.as_mut(), &w2).is_pending());
    cv.notify_one();
    assert!(first_log.woken() && !second_log.woken());
    drop(ready(poll_with(first.as_mut(), &w1), "the first waiter"));
    cv.notify_one();
    assert!(second_log.woken());
    drop(ready(poll_with(second.as_mut(), &w2), "the second waiter"));
    cv.notify_one();
    let mut late = pin!(cv.wait_async(lock.try_lock().unwrap()));
    assert!(
        poll_noop(late.as_mut()).is_pending(),
        "a notification with nobody waiting was kept"
    );
}

/// Module docs: "A waiter cancelled after being notified passes the notification on." Here the
/// waiter is dropped before it polls again.
#[test]
fn condvar_a_waiter_notified_but_dropped_before_it_polls_passes_the_notification_on() {
    let lock = Mutex::new(0);
    let cv = Condvar::new();
    let mut first = Box::pin(cv.wait_async(lock.try_lock().unwrap()));
    assert!(poll_noop(first.as_mut()).is_pending());
    let (log, w) = waker();
    let mut second = pin!(cv.wait_async(lock.try_lock().unwrap()));
    assert!(poll_with(second.as_mut(), &w).is_pending());
    cv.notify_one();
    drop(first);
    assert!(
        log.woken(),
        "the notification went down with the cancelled waiter"
    );
    drop(ready(poll_with(second.as_mut(), &w), "the second waiter"));
}

/// The same promise once the waiter has seen the notification and waits to relock (the
/// notifier still holds the mutex, as it usually does): its future is dropped there (a
/// `timeout` around `wait_async`, an aborted task, a `select`), and the notification must reach
/// the other waiter, which otherwise sleeps with its condition true.
#[test]
fn condvar_a_waiter_cancelled_while_relocking_passes_its_notification_on() {
    within(EVENTUALLY, || {
        let lock = Mutex::new(0);
        let cv = Condvar::new();
        let mut first = Box::pin(cv.wait_async(lock.try_lock().unwrap()));
        assert!(poll_noop(first.as_mut()).is_pending());
        let (log, w) = waker();
        let mut second = pin!(cv.wait_async(lock.try_lock().unwrap()));
        assert!(poll_with(second.as_mut(), &w).is_pending());
        let mut g = lock.try_lock().unwrap();
        *g = 1;
        cv.notify_one();
        assert!(
            poll_noop(first.as_mut()).is_pending(),
            "notified, the first waiter now waits for the mutex the notifier holds"
        );
        drop(first);
        drop(g);
        assert!(
            log.woken(),
            "the cancelled waiter's notification never reached the other waiter"
        );
        let g = ready(poll_with(second.as_mut(), &w), "the second waiter");
        assert_eq!(*g, 1);
    });
}

/// As above for `wait_timeout_async` (same cause): notified well before its timeout, dropped
/// while relocking.
#[test]
fn condvar_a_timed_waiter_cancelled_while_relocking_passes_its_notification_on() {
    within(EVENTUALLY, || {
        let lock = Mutex::new(0);
        let cv = Condvar::new();
        let mut first = Box::pin(cv.wait_timeout_async(lock.try_lock().unwrap(), EVENTUALLY));
        assert!(poll_noop(first.as_mut()).is_pending());
        let (log, w) = waker();
        let mut second = pin!(cv.wait_async(lock.try_lock().unwrap()));
        assert!(poll_with(second.as_mut(), &w).is_pending());
        let g = lock.try_lock().unwrap();
        cv.notify_one();
        assert!(poll_noop(first.as_mut()).is_pending());
        drop(first);
        drop(g);
        assert!(
            log.woken(),
            "the cancelled waiter's notification never reached the other waiter"
        );
        drop(ready(poll_with(second.as_mut(), &w), "the second waiter"));
    });
}

/// `wait_timeout` docs: "A notification that arrives just as the timeout fires is not lost".
/// The first waiter's timeout fires while the notifier holds the mutex; the `notify_one` that
/// follows lands on it while it relocks; once it returns (timed out), the other waiter has the
/// notification.
#[test]
fn condvar_a_notification_caught_by_a_timed_out_waiter_reaches_the_next_one() {
    within(EVENTUALLY, || {
        let lock = Mutex::new(0);
        let cv = Condvar::new();
        let (first_log, w1) = waker();
        let mut first =
            pin!(cv.wait_timeout_async(lock.try_lock().unwrap(), Duration::from_millis(1)));
        assert!(poll_with(first.as_mut(), &w1).is_pending());
        let (second_log, w2) = waker();
        let mut second = pin!(cv.wait_async(lock.try_lock().unwrap()));
        assert!(poll_with(second.as_mut(), &w2).is_pending());
        let g = lock.try_lock().unwrap();
        wait_until("the first waiter's timer fires", || first_log.woken());
        assert!(
            poll_with(first.as_mut(), &w1).is_pending(),
            "timed out, the first waiter waits for the mutex"
        );
        cv.notify_one();
        drop(g);
        let (g, res) = ready(poll_with(first.as_mut(), &w1), "the timed-out waiter");
        assert!(res.timed_out());
        assert!(second_log.woken(), "the notification was lost");
        drop(g);
        drop(ready(poll_with(second.as_mut(), &w2), "the second waiter"));
    });
}

/// Documented panics: `wait`, `wait_while` and `wait_timeout` in an async task advise the
/// `_async` forms, and the guard handed in is released by the unwind (the mutex is not left
/// locked by a call that never waited).
#[test]
fn condvar_waits_in_an_async_task_panic_with_advice_and_release_the_mutex() {
    for which in 0..3 {
        let msg = panic_in_a_task(move || {
            let lock = Mutex::new(0);
            let cv = Condvar::new();
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match which {
                0 => drop(cv.wait(lock.try_lock().unwrap())),
                1 => drop(cv.wait_while(lock.try_lock().unwrap(), |_| true)),
                _ => drop(cv.wait_timeout(lock.try_lock().unwrap(), EVENTUALLY)),
            }));
            assert!(
                lock.try_lock().is_some(),
                "the panicking wait left the mutex locked"
            );
            if let Err(payload) = caught {
                std::panic::resume_unwind(payload);
            }
        });
        assert_advises_the_async_form(&msg);
    }
}

/// std's `wait_timeout_wait` and `notify_one` on plain threads with no corio runtime anywhere:
/// the blocking-style face parks the threads (and the timeout uses the fallback timer).
#[test]
fn condvar_works_between_plain_threads_with_no_runtime() {
    within(EVENTUALLY, || {
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let (lock, cv) = &*pair;
        let (g, res) = cv.wait_timeout(lock.lock(), Duration::ZERO);
        assert!(res.timed_out());
        let (g, res) = cv.wait_timeout(g, Duration::from_millis(2));
        assert!(res.timed_out());
        drop(g);
        let p = pair.clone();
        let setter = std::thread::spawn(move || {
            *p.0.lock() = true;
            p.1.notify_one();
        });
        let g = cv.wait_while(lock.lock(), |ready| !*ready);
        assert!(*g);
        drop(g);
        setter.join().unwrap();
    });
}

mod condvar_on_every_flavour {
    use super::*;

    rt_common! {
        /// std's `notify_all`: waiters of every kind count themselves in and wait until the count
        /// is reset; one `notify_all` releases all of them.
        #[test]
        fn std_notify_all_releases_waiters_of_every_kind() {
            const N: usize = 9;
            let rt = rt();
            within(EVENTUALLY, move || {
                let pair = Arc::new((Mutex::new(0usize), Condvar::new()));
                let (tx, rx) = mpsc::channel();
                let arrive = |count: &mut usize, tx: &mpsc::Sender<()>| {
                    *count += 1;
                    if *count == N {
                        tx.send(()).unwrap();
                    }
                };
                let mut handles = Vec::new();
                for _ in 0..3 {
                    let (p, done) = (pair.clone(), tx.clone());
                    handles.push(rt.go(move || {
                        let (lock, cv) = &*p;
                        let mut count = lock.lock();
                        arrive(&mut count, &done);
                        while *count != 0 {
                            count = cv.wait(count);
                        }
                        done.send(()).unwrap();
                    }));
                    let (p, done) = (pair.clone(), tx.clone());
                    handles.push(rt.spawn(async move {
                        let (lock, cv) = &*p;
                        let mut count = lock.lock_async().await;
                        arrive(&mut count, &done);
                        let count = cv.wait_while_async(count, |c| *c != 0).await;
                        drop(count);
                        done.send(()).unwrap();
                    }));
                }
                let threads: Vec<_> = (0..3)
                    .map(|_| {
                        let (p, tx) = (pair.clone(), tx.clone());
                        std::thread::spawn(move || {
                            let (lock, cv) = &*p;
                            let mut count = lock.lock();
                            arrive(&mut count, &tx);
                            loop {
                                let (c, _) = cv.wait_timeout(count, Duration::from_secs(3600));
                                count = c;
                                if *count == 0 {
                                    break;
                                }
                            }
                            tx.send(()).unwrap();
                        })
                    })
                    .collect();
                drop(tx);
                rx.recv().unwrap();
                let (lock, cv) = &*pair;
                let mut count = lock.lock();
                *count = 0;
                cv.notify_all();
                drop(count);
                for _ in 0..N {
                    rx.recv().unwrap();
                }
                handles.into_iter().for_each(|h| h.join().unwrap());
                threads.into_iter().for_each(|t| t.join().unwrap());
            });
        }

        /// Go's `TestCondBroadcast`, made robust to the spurious wake-ups corio's contract allows:
        /// waiters of every kind wait for the next round; each `notify_all` wakes every one of them
        /// exactly once for that round, and nobody passes before it.
        #[test]
        fn go_cond_broadcast_wakes_every_waiter_once_per_round() {
            const PER_KIND: usize = 4;
            const N: usize = 3 * PER_KIND;
            const ROUNDS: u64 = 5;
            let rt = rt();
            within(EVENTUALLY, move || {
                let pair = Arc::new((Mutex::new(0u64), Condvar::new()));
                let (running_tx, running_rx) = mpsc::channel::<usize>();
                let (awake_tx, awake_rx) = mpsc::channel::<usize>();
                let mut handles = Vec::new();
                let mut threads = Vec::new();
                for id in 0..N {
                    let (p, running, awake) = (pair.clone(), running_tx.clone(), awake_tx.clone());
                    let blocking = move || {
                        let (lock, cv) = &*p;
                        let mut round = lock.lock();
                        while *round < ROUNDS {
                            let seen = *round;
                            running.send(id).unwrap();
                            round = cv.wait_while(round, |r| *r == seen);
                            awake.send(id).unwrap();
                        }
                    };
                    match id % 3 {
                        0 => handles.push(rt.go(blocking)),
                        1 => threads.push(std::thread::spawn(blocking)),
                        _ => {
                            let (p, running, awake) =
                                (pair.clone(), running_tx.clone(), awake_tx.clone());
                            drop(blocking);
                            handles.push(rt.spawn(async move {
                                let (lock, cv) = &*p;
                                let mut round = lock.lock_async().await;
                                while *round < ROUNDS {
                                    let seen = *round;
                                    running.send(id).unwrap();
                                    round = cv.wait_while_async(round, |r| *r == seen).await;
                                    awake.send(id).unwrap();
                                }
                            }));
                        }
                    }
                }
                let (lock, cv) = &*pair;
                for _ in 0..ROUNDS {
                    for _ in 0..N {
                        running_rx.recv().unwrap();
                    }
                    assert!(awake_rx.try_recv().is_err(), "a waiter passed before the broadcast");
                    let mut round = lock.lock();
                    *round += 1;
                    cv.notify_all();
                    drop(round);
                    let mut seen = [false; N];
                    for _ in 0..N {
                        let id = awake_rx.recv().unwrap();
                        assert!(!seen[id], "waiter {id} woke twice in one round");
                        seen[id] = true;
                    }
                }
                handles.into_iter().for_each(|h| h.join().unwrap());
                threads.into_iter().for_each(|t| t.join().unwrap());
                assert!(running_rx.try_recv().is_err(), "a waiter did not leave");
            });
        }

        /// Go's `TestCondSignalStealing`: a waiter is inside `wait`; a broadcast races a second
        /// waiter arriving. The second may or may not be woken, but the first must be.
        #[test]
        fn go_cond_signal_stealing_the_first_waiter_still_gets_the_broadcast() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for _ in 0..100 {
                    let pair = Arc::new((Mutex::new(false), Condvar::new()));
                    let (tx, rx) = mpsc::channel();
                    let p = pair.clone();
                    let first = rt.go(move || {
                        let (lock, cv) = &*p;
                        let g = lock.lock();
                        tx.send(()).unwrap();
                        drop(cv.wait(g));
                        tx.send(()).unwrap();
                    });
                    rx.recv().unwrap();
                    // Locking after the waiter's send means it has released the mutex in `wait`.
                    drop(pair.0.lock());
                    let p = pair.clone();
                    let broadcaster = rt.go(move || p.1.notify_all());
                    let p = pair.clone();
                    let second = rt.spawn(async move {
                        let (lock, cv) = &*p;
                        drop(cv.wait_while_async(lock.lock_async().await, |done| !*done).await);
                    });
                    rx.recv().expect("the first waiter was not woken by the broadcast");
                    *pair.0.lock() = true;
                    pair.1.notify_all();
                    first.join().unwrap();
                    broadcaster.join().unwrap();
                    second.join().unwrap();
                }
            });
        }

        /// Go's `TestRace`: three parties (a coroutine, a task, a plain thread) hand a state along
        /// 1 -> 2 -> 3 through one condvar; each sees the state it waited for.
        #[test]
        fn go_cond_race_three_parties_hand_the_state_along() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for _ in 0..20 {
                    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
                    let p = pair.clone();
                    let a = rt.go(move || {
                        let (lock, cv) = &*p;
                        let mut x = lock.lock();
                        *x = 1;
                        x = cv.wait_while(x, |x| *x == 1);
                        assert_eq!(*x, 2);
                        *x = 3;
                        cv.notify_one();
                    });
                    let p = pair.clone();
                    let b = rt.spawn(async move {
                        let (lock, cv) = &*p;
                        loop {
                            let mut x = lock.lock_async().await;
                            if *x == 1 {
                                *x = 2;
                                cv.notify_one();
                                return;
                            }
                            drop(x);
                            corio::yield_now_async().await;
                        }
                    });
                    let p = pair.clone();
                    let c = std::thread::spawn(move || {
                        let (lock, cv) = &*p;
                        loop {
                            let x = lock.lock();
                            if *x == 2 {
                                let x = cv.wait_while(x, |x| *x == 2);
                                assert_eq!(*x, 3);
                                return;
                            }
                            if *x == 3 {
                                return;
                            }
                            drop(x);
                            std::thread::yield_now();
                        }
                    });
                    a.join().unwrap();
                    b.join().unwrap();
                    c.join().unwrap();
                }
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Barrier: tokio's `sync_barrier.rs`, std's `test_barrier`, cancellation
// ---------------------------------------------------------------------------------------------

/// tokio `zero_does_not_block` and `single`; the docs: "0 and 1 both mean nobody waits". Every
/// caller leads its own round, async and blocking-style (a plain thread).
#[test]
fn a_barrier_of_zero_or_one_party_never_waits_and_every_caller_leads() {
    for parties in [0, 1] {
        let barrier = Barrier::new(parties);
        for _ in 0..3 {
            let mut w = pin!(barrier.wait_async());
            assert!(ready(poll_noop(w.as_mut()), "a lone party").is_leader());
            assert!(barrier.wait().is_leader());
        }
    }
}

/// tokio `tango`: of two parties exactly one leads; the first is woken by the second's arrival.
#[test]
fn a_barrier_of_two_opens_on_the_second_and_names_one_leader() {
    let barrier = Barrier::new(2);
    let (log, w) = waker();
    let mut first = pin!(barrier.wait_async());
    assert!(poll_with(first.as_mut(), &w).is_pending());
    let mut second = pin!(barrier.wait_async());
    let r2 = ready(poll_noop(second.as_mut()), "the second party");
    assert!(log.woken(), "the first party was not woken");
    let r1 = ready(poll_with(first.as_mut(), &w), "the first party");
    assert!(r1.is_leader() != r2.is_leader(), "not exactly one leader");
}

/// tokio `lots`: ten rounds of a hundred parties; ninety-nine wait (and stay waiting when
/// polled again), the hundredth opens the round, and each round has exactly one leader.
#[test]
fn a_barrier_of_a_hundred_opens_round_after_round_with_one_leader_each() {
    let barrier = Barrier::new(100);
    for _ in 0..10 {
        let mut waiting: Vec<_> = (0..99).map(|_| Box::pin(barrier.wait_async())).collect();
        for w in &mut waiting {
            assert!(poll_noop(w.as_mut()).is_pending());
        }
        for w in &mut waiting {
            assert!(poll_noop(w.as_mut()).is_pending(), "a party passed early");
        }
        let mut last = pin!(barrier.wait_async());
        let mut leaders = usize::from(ready(poll_noop(last.as_mut()), "the last").is_leader());
        for w in &mut waiting {
            leaders += usize::from(ready(poll_noop(w.as_mut()), "a waiting party").is_leader());
        }
        assert_eq!(leaders, 1);
    }
}

/// A party whose round opened but whose future is dropped before it polls again must not take
/// an arrival back from the *next* round (the module docs: only a party cancelled "before the
/// barrier opened" takes its arrival back).
#[test]
fn a_barrier_party_dropped_after_its_round_opened_leaves_the_next_round_alone() {
    let barrier = Barrier::new(2);
    let mut gone = Box::pin(barrier.wait_async());
    assert!(poll_noop(gone.as_mut()).is_pending());
    let mut opener = pin!(barrier.wait_async());
    assert!(ready(poll_noop(opener.as_mut()), "the opener").is_leader());
    let mut next = pin!(barrier.wait_async());
    assert!(poll_noop(next.as_mut()).is_pending());
    drop(gone);
    assert!(
        poll_noop(next.as_mut()).is_pending(),
        "the next round opened with one party"
    );
    let mut second = pin!(barrier.wait_async());
    assert!(poll_noop(second.as_mut()).is_ready());
    assert!(poll_noop(next.as_mut()).is_ready());
}

/// A waiting party polled again with a new waker is woken through it only.
#[test]
fn a_barrier_party_polled_with_a_new_waker_is_woken_through_it() {
    let barrier = Barrier::new(2);
    let (old_log, old) = waker();
    let (new_log, new) = waker();
    let mut first = pin!(barrier.wait_async());
    assert!(poll_with(first.as_mut(), &old).is_pending());
    assert!(poll_with(first.as_mut(), &new).is_pending());
    assert!(barrier.wait().is_leader());
    assert!(new_log.woken());
    assert!(!old_log.woken(), "the stale waker was woken");
    assert!(!ready(poll_with(first.as_mut(), &new), "the first party").is_leader());
}

/// Documented panic: `wait` in an async task advises `wait_async`; the call that panicked did
/// not count as an arrival.
#[test]
fn barrier_wait_in_an_async_task_panics_with_advice_and_counts_no_arrival() {
    let barrier = Arc::new(Barrier::new(2));
    let b = barrier.clone();
    let msg = panic_in_a_task(move || {
        let _ = b.wait();
    });
    assert_advises_the_async_form(&msg);
    let mut first = pin!(barrier.wait_async());
    assert!(
        poll_noop(first.as_mut()).is_pending(),
        "the panicking wait was counted as a party"
    );
}

mod barrier_on_every_flavour {
    use super::*;

    rt_common! {
        /// std's `test_barrier`, with parties of every kind: nobody passes before the last one
        /// (the calling plain thread) arrives, and each round has exactly one leader.
        #[test]
        fn std_barrier_holds_every_kind_of_party_until_the_last_and_names_one_leader() {
            const N: usize = 9;
            const ROUNDS: usize = 3;
            let rt = rt();
            within(EVENTUALLY, move || {
                let barrier = Arc::new(Barrier::new(N));
                let (tx, rx) = mpsc::channel::<bool>();
                let mut handles = Vec::new();
                for _ in 0..3 {
                    let (b, led) = (barrier.clone(), tx.clone());
                    handles.push(rt.go(move || {
                        for _ in 0..ROUNDS {
                            led.send(b.wait().is_leader()).unwrap();
                        }
                    }));
                    let (b, led) = (barrier.clone(), tx.clone());
                    handles.push(rt.spawn(async move {
                        for _ in 0..ROUNDS {
                            led.send(b.wait_async().await.is_leader()).unwrap();
                        }
                    }));
                }
                let threads: Vec<_> = (0..2)
                    .map(|_| {
                        let (b, tx) = (barrier.clone(), tx.clone());
                        std::thread::spawn(move || {
                            for _ in 0..ROUNDS {
                                tx.send(b.wait().is_leader()).unwrap();
                            }
                        })
                    })
                    .collect();
                for _ in 0..ROUNDS {
                    assert!(rx.try_recv().is_err(), "a party passed before the last arrived");
                    let mut leaders = usize::from(barrier.wait().is_leader());
                    for _ in 0..N - 1 {
                        leaders += usize::from(rx.recv().unwrap());
                    }
                    assert_eq!(leaders, 1);
                }
                handles.into_iter().for_each(|h| h.join().unwrap());
                threads.into_iter().for_each(|t| t.join().unwrap());
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// OnceCell and Lazy: tokio's `sync_once_cell.rs`, std's `OnceLock` tests, Go's `TestOnce`
// ---------------------------------------------------------------------------------------------

/// tokio `get_uninit`, `set_and_get`, `set_twice`; with `get_mut` and `into_inner`.
#[test]
fn once_cell_set_get_and_a_second_set_gives_the_value_back() {
    let mut cell = OnceCell::new();
    assert!(cell.get().is_none());
    assert!(cell.get_mut().is_none());
    assert_eq!(cell.set(5), Ok(()));
    assert_eq!(cell.get(), Some(&5));
    assert_eq!(cell.set(6), Err(6));
    assert_eq!(*cell.get_or_init(|| unreachable!("initialised already")), 5);
    *cell.get_mut().unwrap() += 1;
    assert_eq!(cell.into_inner(), Some(6));
    assert_eq!(OnceCell::<u32>::new().into_inner(), None);
}

/// tokio `set_while_initializing`: `set` while an initialiser runs gives its value back, and
/// the initialiser's value is the one that stays.
#[test]
fn once_cell_set_while_another_caller_initialises_gives_the_value_back() {
    let cell = OnceCell::new();
    let gate = Gate::new();
    let g = gate.clone();
    let mut init = pin!(cell.get_or_init_async(move || async move {
        g.wait().await;
        5
    }));
    assert!(poll_noop(init.as_mut()).is_pending());
    assert_eq!(cell.set(10), Err(10));
    assert!(cell.get().is_none());
    gate.open();
    assert_eq!(*ready(poll_noop(init.as_mut()), "the initialiser"), 5);
    assert_eq!(cell.get(), Some(&5));
}

/// tokio `get_or_init`: a second initialiser that races the first waits, is woken when the
/// first stores its value, and returns that value without running its own function.
#[test]
fn once_cell_a_racing_async_initialiser_waits_and_returns_the_winners_value() {
    let cell = OnceCell::new();
    let gate = Gate::new();
    let g = gate.clone();
    let mut first = pin!(cell.get_or_init_async(move || async move {
        g.wait().await;
        5
    }));
    assert!(poll_noop(first.as_mut()).is_pending());
    let ran = AtomicBool::new(false);
    let (log, w) = waker();
    let mut second = pin!(cell.get_or_init_async(|| {
        ran.store(true, SeqCst);
        async { 10 }
    }));
    assert!(poll_with(second.as_mut(), &w).is_pending());
    gate.open();
    assert_eq!(
        *ready(poll_noop(first.as_mut()), "the first initialiser"),
        5
    );
    assert!(log.woken(), "the waiting initialiser was not woken");
    assert_eq!(*ready(poll_with(second.as_mut(), &w), "the second"), 5);
    assert!(!ran.load(SeqCst), "the losing initialiser ran");
}

/// Module docs: "If it panics (or its future is dropped), the lock is released with the cell
/// still empty and the next waiter runs its own initialiser" — and a waiter that is handed the
/// right to initialise but dropped before it polls passes it on in turn.
#[test]
fn once_cell_dropped_initialisers_pass_the_right_to_initialise_down_the_queue() {
    let cell = OnceCell::new();
    let mut first = Box::pin(cell.get_or_init_async(std::future::pending::<u32>));
    assert!(poll_noop(first.as_mut()).is_pending());
    let (second_log, w2) = waker();
    let mut second = Box::pin(cell.get_or_init_async(|| async { 2 }));
    assert!(poll_with(second.as_mut(), &w2).is_pending());
    let (third_log, w3) = waker();
    let mut third = pin!(cell.get_or_init_async(|| async { 3 }));
    assert!(poll_with(third.as_mut(), &w3).is_pending());
    drop(first);
    assert!(second_log.woken(), "the dropped initialiser kept the right");
    assert!(cell.get().is_none());
    drop(second);
    assert!(
        third_log.woken(),
        "the right was lost with the second waiter"
    );
    assert_eq!(*ready(poll_with(third.as_mut(), &w3), "the third"), 3);
    assert_eq!(cell.set(4), Err(4));
}

/// Values are dropped exactly once: the cell's value when the cell goes, a value given back by
/// `set` or `into_inner` by its caller, the functions of initialisers that lost (never run,
/// dropped with what they captured), and a losing async initialiser's function.
#[test]
fn once_cell_every_value_is_dropped_exactly_once() {
    let drops = Drops::new();
    let cell = OnceCell::new();
    cell.set(drops.token()).ok().unwrap();
    let back = cell.set(drops.token()).unwrap_err();
    drop(back);
    assert_eq!(drops.dropped(), 1);
    let lost = drops.token();
    let _kept = cell.get_or_init(move || lost);
    assert_eq!(
        drops.dropped(),
        2,
        "the unused initialiser's capture was not dropped"
    );
    {
        let lost = drops.token();
        let mut f = pin!(cell.get_or_init_async(move || async move { lost }));
        let _ = ready(poll_noop(f.as_mut()), "an initialised cell");
    }
    assert_eq!(drops.dropped(), 3);
    drop(cell);
    assert_eq!(
        drops.dropped(),
        4,
        "the cell's value was not dropped with it"
    );
    let cell = OnceCell::new();
    cell.set(drops.token()).ok().unwrap();
    let inner = cell.into_inner().unwrap();
    assert_eq!(
        drops.dropped(),
        4,
        "into_inner dropped the value it returned"
    );
    drop(inner);
    assert_eq!(drops.made(), drops.dropped());

    // std's `sync_once_cell_drop`, racing: plain threads each offer a value; one is kept.
    let cell = Arc::new(OnceCell::new());
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let (cell, token) = (cell.clone(), drops.token());
            std::thread::spawn(move || {
                if i % 2 == 0 {
                    let _ = cell.get_or_init(move || token);
                } else {
                    drop(cell.set(token));
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(
        drops.made() - drops.dropped(),
        1,
        "exactly the kept value lives"
    );
    drop(cell);
    assert_eq!(drops.made(), drops.dropped());
}

/// Documented panic: `get_or_init` in an async task works when it need not wait, and when it
/// would have to wait panics with advice to use `get_or_init_async`, queueing nothing.
#[test]
fn once_cell_get_or_init_in_an_async_task_runs_when_free_and_panics_with_advice_when_it_would_wait()
{
    let free = Arc::new(OnceCell::new());
    let busy = Arc::new(OnceCell::new());
    let gate = Gate::new();
    let (f, b, g) = (free.clone(), busy.clone(), gate.clone());
    let msg = panic_in_a_task(move || {
        assert_eq!(
            *f.get_or_init(|| 1),
            1,
            "an uncontended get_or_init in a task"
        );
        let mut init = Box::pin(b.get_or_init_async(move || async move {
            g.wait().await;
            2
        }));
        assert!(poll_noop(init.as_mut()).is_pending());
        // `init` holds the right to initialise while `get_or_init` is refused.
        let _init = init;
        b.get_or_init(|| 3);
    });
    assert_advises_the_async_form(&msg);
    assert!(busy.get().is_none());
    assert_eq!(
        busy.set(4),
        Ok(()),
        "the refused call or the dropped one kept the right"
    );
}

/// `Lazy`: computed once for many callers; documented panic: once its computation panicked,
/// every later use panics saying so.
#[test]
fn lazy_computes_once_and_after_a_panicking_computation_every_use_panics() {
    quiet_expected_panics();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let table = Arc::new(Lazy::new(move || {
        r.fetch_add(1, SeqCst);
        vec![1u32, 2, 3]
    }));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let t = table.clone();
            std::thread::spawn(move || t.iter().sum::<u32>())
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 6);
    }
    assert_eq!(runs.load(SeqCst), 1);

    let broken: Lazy<u32> = Lazy::new(|| panic!("{EXPECTED} lazy computation fails"));
    let first = panic_message(|| {
        std::hint::black_box(*broken);
    });
    assert!(first.contains("lazy computation fails"), "{first}");
    let later = panic_message(|| {
        std::hint::black_box(*broken);
    });
    assert!(later.contains("panicked earlier"), "{later}");

    // What the function captured is dropped once: with the unforced `Lazy`, or as the value
    // it became.
    let drops = Drops::new();
    let token = drops.token();
    let unforced = Lazy::new(move || {
        let _captured = &token;
        0u32
    });
    drop(unforced);
    assert_eq!(drops.dropped(), 1, "an unforced Lazy leaked its function");
    let token = drops.token();
    let forced = Lazy::new(move || token);
    Lazy::force(&forced);
    assert_eq!(drops.dropped(), 1);
    drop(forced);
    assert_eq!(
        drops.dropped(),
        2,
        "the forced value was not dropped with the Lazy"
    );
}

mod once_cell_on_every_flavour {
    use super::*;

    rt_common! {
        /// Go's `TestOnce`: callers of every kind race to initialise; the function runs once and
        /// everybody sees its value.
        #[test]
        fn go_once_runs_the_function_once_for_callers_of_every_kind() {
            let rt = rt();
            within(EVENTUALLY, move || {
                let cell = Arc::new(OnceCell::new());
                let runs = Arc::new(AtomicUsize::new(0));
                let mut handles = Vec::new();
                for i in 0..10 {
                    {
                        let (cell, runs) = (cell.clone(), runs.clone());
                        handles.push(rt.go(move || {
                            *cell.get_or_init(|| {
                                runs.fetch_add(1, SeqCst);
                                corio::yield_now();
                                i
                            })
                        }));
                    }
                    {
                        let (cell, runs) = (cell.clone(), runs.clone());
                        handles.push(rt.spawn(async move {
                            *cell
                                .get_or_init_async(|| async move {
                                    runs.fetch_add(1, SeqCst);
                                    corio::yield_now_async().await;
                                    100 + i
                                })
                                .await
                        }));
                    }
                }
                let threads: Vec<_> = (0..4)
                    .map(|i| {
                        let (cell, runs) = (cell.clone(), runs.clone());
                        std::thread::spawn(move || {
                            *cell.get_or_init(|| {
                                runs.fetch_add(1, SeqCst);
                                200 + i
                            })
                        })
                    })
                    .collect();
                let mut seen: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
                seen.extend(threads.into_iter().map(|t| t.join().unwrap()));
                assert_eq!(runs.load(SeqCst), 1, "the initialiser ran more than once");
                let value = *cell.get().unwrap();
                assert!(seen.iter().all(|v| *v == value), "callers saw different values");
            });
        }

        /// tokio `get_or_init_panic`, with blocking-style waiters queued behind the one that
        /// panics: exactly one of them initialises next, and all of them see its value.
        #[test]
        fn a_panicking_initialiser_lets_exactly_one_queued_waiter_initialise() {
            quiet_expected_panics();
            let rt = rt();
            within(EVENTUALLY, move || {
                let cell = Arc::new(OnceCell::new());
                let runs = Arc::new(AtomicUsize::new(0));
                let inside = Arc::new(WaitGroup::new());
                inside.add(1);
                let fail = Arc::new(WaitGroup::new());
                fail.add(1);
                let (c, r, i, f) = (cell.clone(), runs.clone(), inside.clone(), fail.clone());
                let panicker = rt.spawn(async move {
                    *c.get_or_init_async(|| async move {
                        r.fetch_add(1, SeqCst);
                        i.done();
                        f.wait_async().await;
                        panic!("{EXPECTED} initialiser fails");
                    })
                    .await
                });
                inside.wait();
                let mut waiters = Vec::new();
                for n in 0..4 {
                    let (cell, runs) = (cell.clone(), runs.clone());
                    waiters.push(rt.go(move || {
                        *cell.get_or_init(|| {
                            runs.fetch_add(1, SeqCst);
                            n
                        })
                    }));
                }
                let (c, r) = (cell.clone(), runs.clone());
                let thread = std::thread::spawn(move || {
                    *c.get_or_init(|| {
                        r.fetch_add(1, SeqCst);
                        10
                    })
                });
                fail.done();
                assert!(panicker.join().unwrap_err().is_panic());
                let mut seen: Vec<_> = waiters.into_iter().map(|h| h.join().unwrap()).collect();
                seen.push(thread.join().unwrap());
                assert_eq!(runs.load(SeqCst), 2, "one failed run and one successful run");
                let value = *cell.get().unwrap();
                assert!(seen.iter().all(|v| *v == value));
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// oneshot: tokio's `sync_oneshot.rs`
// ---------------------------------------------------------------------------------------------

/// tokio `send_recv`: a pending receiver is woken by the send and gets the value.
#[test]
fn oneshot_send_wakes_the_pending_receiver_with_the_value() {
    let (tx, mut rx) = oneshot::channel();
    let (log, w) = waker();
    assert!(poll_with(Pin::new(&mut rx), &w).is_pending());
    assert_eq!(tx.send(1), Ok(()));
    assert!(log.woken());
    assert_eq!(
        ready(poll_with(Pin::new(&mut rx), &w), "the receiver"),
        Ok(1)
    );
}

/// tokio `close_tx`: dropping the sender wakes the receiver, which gets the error.
#[test]
fn oneshot_dropping_the_sender_wakes_the_receiver_with_an_error() {
    let (tx, mut rx) = oneshot::channel::<u32>();
    let (log, w) = waker();
    assert!(poll_with(Pin::new(&mut rx), &w).is_pending());
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Empty));
    drop(tx);
    assert!(log.woken());
    assert_eq!(
        ready(poll_with(Pin::new(&mut rx), &w), "the receiver"),
        Err(oneshot::RecvError)
    );
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
}

/// tokio `close_rx`: with the receiver gone the sender is closed and `send` gives the value
/// back.
#[test]
fn oneshot_dropping_the_receiver_closes_the_sender_and_send_gives_the_value_back() {
    let (tx, rx) = oneshot::channel();
    assert!(!tx.is_closed());
    drop(rx);
    assert!(tx.is_closed());
    assert_eq!(tx.send(1), Err(1));
}

/// tokio `try_recv_after_completion` and `try_recv_after_completion_await`: once the value is
/// taken (by `try_recv` or by a poll), `try_recv` says `Closed` and a poll says `RecvError`.
#[test]
fn oneshot_after_the_value_is_taken_the_receiver_reports_closed() {
    let (tx, mut rx) = oneshot::channel();
    tx.send(17).unwrap();
    assert_eq!(rx.try_recv(), Ok(17));
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
    assert_eq!(
        poll_noop(Pin::new(&mut rx)),
        Poll::Ready(Err(oneshot::RecvError))
    );

    let (tx, mut rx) = oneshot::channel();
    tx.send(18).unwrap();
    assert_eq!(poll_noop(Pin::new(&mut rx)), Poll::Ready(Ok(18)));
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
}

/// tokio `receiver_changes_task`: polled by a second waker, the receiver keeps only that one
/// and the send wakes only it.
#[test]
fn oneshot_a_receiver_polled_with_a_new_waker_wakes_only_the_new_one() {
    let (tx, mut rx) = oneshot::channel();
    let (first_log, w1) = waker();
    let (second_log, w2) = waker();
    assert!(poll_with(Pin::new(&mut rx), &w1).is_pending());
    assert_eq!(Arc::strong_count(&first_log), 3);
    assert_eq!(Arc::strong_count(&second_log), 2);
    assert!(poll_with(Pin::new(&mut rx), &w2).is_pending());
    assert_eq!(
        Arc::strong_count(&first_log),
        2,
        "the old waker is still kept"
    );
    assert_eq!(Arc::strong_count(&second_log), 3);
    tx.send(1).unwrap();
    assert!(!first_log.woken());
    assert!(second_log.woken());
    assert_eq!(poll_with(Pin::new(&mut rx), &w2), Poll::Ready(Ok(1)));
}

/// tokio `drops_tasks`: once both halves are gone no clone of the receiver's waker is kept.
#[test]
fn oneshot_dropping_both_halves_releases_the_receivers_waker() {
    let (tx, mut rx) = oneshot::channel::<u32>();
    let (log, w) = waker();
    assert!(poll_with(Pin::new(&mut rx), &w).is_pending());
    drop(tx);
    drop(rx);
    assert_eq!(Arc::strong_count(&log), 2, "a waker clone leaked");
}

/// A value is dropped exactly once whichever half goes first: unreceived in the channel (the
/// receiver drops it), refused by a closed channel (the sender's caller gets it back), and
/// with a send racing the receiver's drop on another thread.
#[test]
fn oneshot_a_value_is_dropped_exactly_once_whichever_half_goes_first() {
    let drops = Drops::new();
    let (tx, rx) = oneshot::channel();
    tx.send(drops.token()).ok().unwrap();
    assert_eq!(drops.dropped(), 0);
    drop(rx);
    assert_eq!(
        drops.dropped(),
        1,
        "the unreceived value was not dropped with the receiver"
    );
    let (tx, rx) = oneshot::channel();
    drop(rx);
    let back = tx.send(drops.token()).unwrap_err();
    assert_eq!(drops.dropped(), 1);
    drop(back);
    assert_eq!(drops.dropped(), 2);
    within(EVENTUALLY, move || {
        for _ in 0..500 {
            let (tx, rx) = oneshot::channel();
            let token = drops.token();
            let receiver = std::thread::spawn(move || drop(rx));
            let sent = tx.send(token);
            drop(sent);
            receiver.join().unwrap();
            assert_eq!(drops.made(), drops.dropped());
        }
    });
}

/// tokio `close_rx` and `close_tx`'s `closed` half: a sender waiting for the receiver to
/// close is woken by `close` and by the receiver's drop, and only then.
#[test]
fn oneshot_a_sender_waiting_in_closed_wakes_when_the_receiver_closes_or_drops() {
    let (mut tx, mut rx) = oneshot::channel::<u32>();
    let (log, w) = waker();
    let mut cx = Context::from_waker(&w);
    assert!(tx.poll_closed(&mut cx).is_pending());
    assert!(!log.woken());
    rx.close();
    assert!(log.woken(), "close did not wake the sender");
    assert!(tx.poll_closed(&mut cx).is_ready());
    assert!(tx.is_closed());
    assert_eq!(tx.send(3), Err(3));

    let (mut tx, rx) = oneshot::channel::<u32>();
    let (log, w) = waker();
    assert!(tx.poll_closed(&mut Context::from_waker(&w)).is_pending());
    drop(rx);
    assert!(log.woken(), "the receiver's drop did not wake the sender");
    assert!(tx.poll_closed(&mut Context::from_waker(&w)).is_ready());
    drop(tx);
    assert_eq!(
        Arc::strong_count(&log),
        2,
        "a clone of the sender's waker leaked"
    );
}

/// tokio `close_try_recv_poll` and `close_after_recv`: after `close` a receiver with no value
/// fails at once (the future and `try_recv` alike) instead of waiting for a send that can no
/// longer succeed, and a value sent before the close is still received.
#[test]
fn oneshot_a_closed_receiver_fails_at_once_but_keeps_a_value_sent_before() {
    let (tx, mut rx) = oneshot::channel::<u32>();
    rx.close();
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
    assert_eq!(
        poll_noop(Pin::new(&mut rx)),
        Poll::Ready(Err(oneshot::RecvError))
    );
    assert_eq!(tx.send(1), Err(1));

    let (tx, mut rx) = oneshot::channel::<u32>();
    tx.send(2).unwrap();
    rx.close();
    assert_eq!(poll_noop(Pin::new(&mut rx)), Poll::Ready(Ok(2)));
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
}

/// The blocking-style and async forms of `closed`: a sender coroutine and a sender task each
/// wait until a receiver on the other side closes, and their `send` then fails.
#[test]
fn oneshot_closed_waits_blocking_style_in_a_coroutine_and_async_in_a_task() {
    within(EVENTUALLY, || {
        for workers in FLAVOURS {
            let rt = support::rt(workers);
            rt.run(|| {
                let (mut tx, mut rx) = oneshot::channel::<u32>();
                let sender = corio::go(move || {
                    tx.closed();
                    tx.send(1)
                });
                corio::sleep(Duration::from_millis(5));
                assert!(!sender.is_finished(), "closed returned before the close");
                rx.close();
                assert_eq!(sender.join().unwrap(), Err(1));

                let (mut tx, rx) = oneshot::channel::<u32>();
                let sender = corio::spawn(async move {
                    tx.closed_async().await;
                    tx.send(2)
                });
                corio::sleep(Duration::from_millis(5));
                assert!(
                    !sender.is_finished(),
                    "closed_async returned before the drop"
                );
                drop(rx);
                assert_eq!(corio::block_on(sender).unwrap(), Err(2));
            });
        }
    });
}

/// Documented panic: `recv` in an async task advises awaiting the receiver.
#[test]
fn oneshot_recv_in_an_async_task_panics_with_advice_to_await() {
    let msg = panic_in_a_task(|| {
        let (tx, rx) = oneshot::channel::<u32>();
        tx.send(1).unwrap();
        let _ = rx.recv();
    });
    assert!(
        msg.contains("async task") && msg.contains(".await"),
        "{msg}"
    );
}

/// The blocking-style face on plain threads with no runtime at all: `recv` parks until another
/// thread sends, or drops the sender.
#[test]
fn oneshot_recv_on_a_plain_thread_with_no_runtime_waits_for_another_thread() {
    within(EVENTUALLY, || {
        let (tx, rx) = oneshot::channel();
        let sender = std::thread::spawn(move || tx.send(String::from("hi")).unwrap());
        assert_eq!(rx.recv().as_deref(), Ok("hi"));
        sender.join().unwrap();
        let (tx, rx) = oneshot::channel::<u32>();
        let dropper = std::thread::spawn(move || drop(tx));
        assert_eq!(rx.recv(), Err(oneshot::RecvError));
        dropper.join().unwrap();
    });
}

mod oneshot_on_every_flavour {
    use super::*;

    rt_common! {
        /// Cancellation through the runtime: a task awaiting the receiver is aborted; the sender
        /// sees the channel closed and a send gives the value back, dropped once.
        #[test]
        fn an_aborted_receiving_task_closes_the_channel_for_the_sender() {
            let rt = rt();
            within(EVENTUALLY, move || {
                let drops = Drops::new();
                let (tx, rx) = oneshot::channel();
                let started = Arc::new(AtomicBool::new(false));
                let s = started.clone();
                let receiver = rt.spawn(async move {
                    s.store(true, SeqCst);
                    rx.await
                });
                wait_until("the receiver runs", || started.load(SeqCst));
                receiver.abort();
                assert!(receiver.join().is_err_and(|e| e.is_cancelled()));
                assert!(tx.is_closed());
                let back = tx.send(drops.token()).unwrap_err();
                drop(back);
                assert_eq!(drops.dropped(), 1);
            });
        }

        /// Values cross from each world to each other world: coroutine to task, task to thread,
        /// thread to coroutine.
        #[test]
        fn oneshot_values_cross_between_coroutines_tasks_and_threads() {
            let rt = rt();
            within(EVENTUALLY, move || {
                let (to_task, in_task) = oneshot::channel::<u32>();
                let (to_thread, in_thread) = oneshot::channel::<u32>();
                let (to_coroutine, in_coroutine) = oneshot::channel::<u32>();
                let task = rt.spawn(async move {
                    let v = in_task.await.unwrap();
                    to_thread.send(v + 1).unwrap();
                });
                let thread = std::thread::spawn(move || {
                    let v = in_thread.recv().unwrap();
                    to_coroutine.send(v + 1).unwrap();
                });
                let coroutine = rt.go(move || in_coroutine.recv().unwrap());
                let sender = rt.go(move || to_task.send(1).unwrap());
                sender.join().unwrap();
                assert_eq!(coroutine.join().unwrap(), 3);
                task.join().unwrap();
                thread.join().unwrap();
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Review additions (2026-12-07): the relay a waiting future keeps for another executor's waker
// (`RelaySlot`, task/waker.rs)
// ---------------------------------------------------------------------------------------------

impl WakeLog {
    fn count(&self) -> usize {
        self.wakes.load(SeqCst)
    }
}

/// A waiter woken by an unlock whose lock a barger then took: its relay was woken and dropped,
/// so the re-poll with the same waker must store a fresh one, which the next unlock wakes.
#[test]
fn review_relay_mutex_a_woken_waiter_that_lost_to_a_barger_is_woken_again() {
    within(EVENTUALLY, || {
        let mut barged = 0;
        for _ in 0..50 {
            let m = Mutex::new(());
            let g = m.try_lock().unwrap();
            let (log, w) = waker();
            let mut fut = pin!(m.lock_async());
            assert!(poll_with(fut.as_mut(), &w).is_pending());
            assert_eq!(Arc::strong_count(&log), 3, "the relay holds one clone");
            drop(g);
            assert_eq!(log.count(), 1);
            assert_eq!(Arc::strong_count(&log), 2, "the woken relay was dropped");
            // In starvation mode (the head waited over 1 ms) the unlock handed it the lock.
            let Some(g2) = m.try_lock() else { continue };
            barged += 1;
            assert!(poll_with(fut.as_mut(), &w).is_pending());
            assert_eq!(Arc::strong_count(&log), 3, "a fresh relay was stored");
            drop(g2);
            assert_eq!(log.count(), 2, "the second unlock's wake-up was lost");
            let _g = ready(poll_with(fut.as_mut(), &w), "lock");
        }
        assert!(barged > 0, "never in normal mode");
    });
}

/// A: w1, w2, w1 again: each poll with a different waker replaces the stored one (the old
/// clone dropped at once) and only the last one is woken, for Semaphore, Notify, Mutex and
/// both oneshot halves.
#[test]
fn review_relay_a_waiter_repolled_with_other_wakers_keeps_only_the_last() {
    within(EVENTUALLY, || {
        fn check(mut poll: impl FnMut(&Waker) -> bool, release: impl FnOnce(), what: &str) {
            let (l1, w1) = waker();
            let (l2, w2) = waker();
            assert!(poll(&w1), "{what}: ready at once");
            assert_eq!(Arc::strong_count(&l1), 3, "{what}");
            for _ in 0..3 {
                assert!(poll(&w1), "{what}");
                assert_eq!(Arc::strong_count(&l1), 3, "{what}: same waker, one clone");
            }
            assert!(poll(&w2), "{what}");
            assert_eq!(Arc::strong_count(&l1), 2, "{what}: w1's clone kept");
            assert_eq!(Arc::strong_count(&l2), 3, "{what}");
            assert!(poll(&w1), "{what}");
            assert_eq!(Arc::strong_count(&l1), 3, "{what}");
            assert_eq!(Arc::strong_count(&l2), 2, "{what}: w2's clone kept");
            release();
            assert_eq!(l1.count(), 1, "{what}: the last waker was not woken");
            assert_eq!(l2.count(), 0, "{what}: a replaced waker was woken");
        }
        let sem = corio::sync::Semaphore::new(0);
        let mut acq = pin!(sem.acquire_async());
        check(
            |w| poll_with(acq.as_mut(), w).is_pending(),
            || sem.add_permits(1),
            "Semaphore",
        );

        let notify = corio::sync::Notify::new();
        let mut n = pin!(notify.notified_async());
        check(
            |w| poll_with(n.as_mut(), w).is_pending(),
            || notify.notify_one(),
            "Notify",
        );

        let m = Mutex::new(());
        let g = m.try_lock().unwrap();
        let mut l = pin!(m.lock_async());
        check(
            |w| poll_with(l.as_mut(), w).is_pending(),
            || drop(g),
            "Mutex",
        );

        let (tx, mut rx) = oneshot::channel::<u8>();
        check(
            |w| poll_with(Pin::new(&mut rx), w).is_pending(),
            || drop(tx),
            "oneshot::Receiver",
        );

        let (mut tx, rx) = oneshot::channel::<u8>();
        check(
            |w| tx.poll_closed(&mut Context::from_waker(w)).is_pending(),
            || drop(rx),
            "oneshot::Sender::poll_closed",
        );
    });
}

/// A foreign waker whose `Drop` uses the very primitive: the relay that held its last clone is
/// replaced by a re-poll with another waker, and dropped after the wait list's lock (else the
/// `notify_one` in the `Drop` deadlocks on it).
#[test]
fn review_relay_a_replaced_relays_last_drop_runs_outside_the_lock() {
    struct UsesNotify(Arc<corio::sync::Notify>, Arc<AtomicBool>);
    impl Wake for UsesNotify {
        fn wake(self: Arc<Self>) {}
    }
    impl Drop for UsesNotify {
        fn drop(&mut self) {
            self.0.notify_one(); // takes the Notify's lock
            self.1.store(true, SeqCst);
        }
    }
    within(EVENTUALLY, || {
        let notify = Arc::new(corio::sync::Notify::new());
        let dropped = Arc::new(AtomicBool::new(false));
        let mut n = pin!(notify.notified_async());
        let w1 = Waker::from(Arc::new(UsesNotify(notify.clone(), dropped.clone())));
        assert!(poll_with(n.as_mut(), &w1).is_pending());
        assert!(poll_with(n.as_mut(), &w1).is_pending()); // the relay reused
        drop(w1); // the relay now holds the last clone
        assert!(!dropped.load(SeqCst));
        let (_log, w2) = waker();
        // Replaces the relay: its last drop (w1's `Drop`) must come after the lock.
        let _ = poll_with(n.as_mut(), &w2);
        assert!(dropped.load(SeqCst), "w1's last clone is kept");
    });
}

/// Another executor on plain threads that re-polls each pending future twice with the same
/// waker before it parks (a `select`'s spurious re-polls), and otherwise only when woken: a
/// lost wake-up hangs (the watchdog reports it). Semaphore, Mutex and Notify ping-pong, on
/// three threads, so that relays are upgraded while other threads wake and drop them.
#[test]
fn review_relay_a_foreign_executor_repolling_spuriously_loses_no_wake_up() {
    struct Unpark(std::thread::Thread, AtomicBool);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref()
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.1.store(true, SeqCst);
            self.0.unpark();
        }
    }
    fn block_on_foreign<F: Future>(f: F) -> F::Output {
        let me = Arc::new(Unpark(std::thread::current(), AtomicBool::new(false)));
        let w = Waker::from(me.clone());
        let mut f = pin!(f);
        loop {
            for _ in 0..3 {
                if let Poll::Ready(v) = poll_with(f.as_mut(), &w) {
                    return v;
                }
            }
            while !me.1.swap(false, SeqCst) {
                std::thread::park();
            }
        }
    }
    const ROUNDS: usize = 20_000;
    within(Duration::from_secs(120), || {
        let sem = Arc::new(corio::sync::Semaphore::new(1));
        let m = Arc::new(Mutex::new(0_usize));
        let ping = Arc::new(corio::sync::Notify::new());
        let pong = Arc::new(corio::sync::Notify::new());
        let threads: Vec<_> = (0..3)
            .map(|i| {
                let (sem, m, ping, pong) = (sem.clone(), m.clone(), ping.clone(), pong.clone());
                std::thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        let p = block_on_foreign(sem.acquire_async()).unwrap();
                        *block_on_foreign(m.lock_async()) += 1;
                        drop(p);
                        match i {
                            0 => {
                                ping.notify_one();
                                block_on_foreign(pong.notified_async());
                            }
                            1 => {
                                block_on_foreign(ping.notified_async());
                                pong.notify_one();
                            }
                            _ => {}
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*m.try_lock().unwrap(), 3 * ROUNDS);
    });
}

/// A `JoinSet` joined by another executor that re-polls spuriously: every member's result
/// arrives (its relay, kept weakly by the set, is reused while the set's waiter slot holds it
/// and replaced after a member's completion took it).
#[test]
fn review_relay_a_join_set_joined_by_a_foreign_executor_gets_every_result() {
    for workers in FLAVOURS {
        within(EVENTUALLY, move || {
            let rt = support::rt(workers);
            let _enter = rt.enter();
            let mut set = corio::JoinSet::new();
            let gate = Arc::new(corio::sync::Semaphore::new(0));
            for i in 0..200_u64 {
                let gate = gate.clone();
                set.spawn(async move {
                    if i % 2 == 0 {
                        gate.acquire_async().await.unwrap().forget();
                    }
                    i
                });
            }
            let (log, w) = waker();
            let (mut total, mut got, mut opened) = (0, 0, false);
            let take =
                |r: Option<Result<u64, corio::JoinError>>, total: &mut u64, got: &mut u64| {
                    *total += r.expect("the set is not empty").unwrap();
                    *got += 1;
                };
            while got < 200 {
                let before = log.count();
                if let Poll::Ready(r) = set.poll_join_next(&mut Context::from_waker(&w)) {
                    take(r, &mut total, &mut got);
                    continue;
                }
                if !opened && got == 100 {
                    opened = true;
                    gate.add_permits(100);
                }
                // A spurious re-poll with the same waker, then wait for a wake-up.
                if let Poll::Ready(r) = set.poll_join_next(&mut Context::from_waker(&w)) {
                    take(r, &mut total, &mut got);
                    continue;
                }
                wait_until("a member's wake-up", || log.count() > before);
            }
            assert_eq!(total, (0..200).sum::<u64>());
            drop(set);
            // The last member to finish may still hold the relay for a moment on its worker
            // (it wakes the join waker, then clears it) after its result was taken.
            wait_until("the set's clone of the waker is dropped", || {
                Arc::strong_count(&log) == 2
            });
        });
    }
}

/// `RelaySlot` reuses a relay only if the waker it holds (a clone) `will_wake`s the new poll's
/// waker. For `Waker::from(Arc<impl Wake>)` std builds the clone's vtable as another promoted
/// constant than the original's, so whether the two compare equal depends on the build.
#[test]
fn review_relay_a_std_wake_waker_will_wake_its_clone() {
    let (_log, w) = waker();
    assert!(
        w.clone().will_wake(&w),
        "the clone of a std Wake waker has another vtable address: a relay is never reused"
    );
}
