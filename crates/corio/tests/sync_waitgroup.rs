//! `WaitGroup`, `Barrier`, `OnceCell` and `Lazy`: many coroutines, tasks and threads; a
//! cancelled barrier party takes its arrival back; racing initialisers run once; ports of Go's
//! `sync/waitgroup_test.go`.

#[macro_use]
mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Waker};
use std::time::Duration;

use corio::sync::{Barrier, Lazy, OnceCell, WaitGroup};
use support::{EVENTUALLY, panic_message, within};

rt_common! {
    /// Go's `TestWaitGroup` (sync/waitgroup_test.go): n goroutines each `wg1.Done()` then
    /// `wg2.Wait()`; none may pass `wg2` before all n `wg2.Done()` calls, and all pass after.
    /// Here half are coroutines and half tasks.
    #[test]
    fn go_wait_group_releases_nobody_early_and_everybody_at_zero() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let n = 16;
            let (wg1, wg2) = (Arc::new(WaitGroup::new()), Arc::new(WaitGroup::new()));
            wg1.add(n);
            wg2.add(n);
            let exited = Arc::new(AtomicUsize::new(0));
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let (wg1, wg2, exited) = (wg1.clone(), wg2.clone(), exited.clone());
                    if i % 2 == 0 {
                        rt.go(move || {
                            wg1.done();
                            wg2.wait();
                            exited.fetch_add(1, SeqCst);
                        })
                    } else {
                        rt.spawn(async move {
                            wg1.done();
                            wg2.wait_async().await;
                            exited.fetch_add(1, SeqCst);
                        })
                    }
                })
                .collect();
            wg1.wait(); // a plain thread parks
            for _ in 0..n {
                assert_eq!(exited.load(SeqCst), 0, "WaitGroup released group too soon");
                wg2.done();
            }
            handles.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(exited.load(SeqCst), n);
        });
    }

    #[test]
    fn a_wait_group_waits_for_a_thousand_coroutines() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let wg = Arc::new(WaitGroup::new());
                let count = Arc::new(AtomicUsize::new(0));
                for i in 0..1000 {
                    wg.add(1);
                    let (wg, count) = (wg.clone(), count.clone());
                    corio::go(move || {
                        if i % 7 == 0 {
                            corio::yield_now();
                        }
                        count.fetch_add(1, SeqCst);
                        wg.done();
                    });
                }
                wg.wait();
                assert_eq!(count.load(SeqCst), 1000);
            });
        });
    }

    /// 50 parties (coroutines, tasks, a thread) meet at a barrier for 5 rounds: nobody leaves a
    /// round before everybody arrived, and each round has exactly one leader.
    #[test]
    fn a_barrier_holds_every_party_until_all_arrive_round_after_round() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let parties = 50;
            let rounds = 5;
            let barrier = Arc::new(Barrier::new(parties));
            let arrived = Arc::new(AtomicUsize::new(0));
            let leaders = Arc::new(AtomicUsize::new(0));
            let check = move |arrived: &AtomicUsize, round: usize| {
                assert!(
                    arrived.load(SeqCst) >= (round + 1) * parties,
                    "a party left round {round} before all arrived"
                );
            };
            let mut handles = Vec::new();
            for i in 0..parties - 1 {
                let (b, a, l) = (barrier.clone(), arrived.clone(), leaders.clone());
                handles.push(if i % 2 == 0 {
                    rt.go(move || {
                        for round in 0..rounds {
                            a.fetch_add(1, SeqCst);
                            if b.wait().is_leader() {
                                l.fetch_add(1, SeqCst);
                            }
                            check(&a, round);
                        }
                    })
                } else {
                    rt.spawn(async move {
                        for round in 0..rounds {
                            a.fetch_add(1, SeqCst);
                            if b.wait_async().await.is_leader() {
                                l.fetch_add(1, SeqCst);
                            }
                            check(&a, round);
                        }
                    })
                });
            }
            for round in 0..rounds {
                arrived.fetch_add(1, SeqCst);
                if barrier.wait().is_leader() {
                    leaders.fetch_add(1, SeqCst);
                }
                check(&arrived, round);
            }
            handles.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(leaders.load(SeqCst), rounds);
        });
    }

    /// Coroutines, tasks and threads race to initialise one cell: the initialiser runs once and
    /// everybody sees its value.
    #[test]
    fn racing_once_cell_initialisers_run_once() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let cell = Arc::new(OnceCell::new());
            let runs = Arc::new(AtomicUsize::new(0));
            let mut handles = Vec::new();
            for i in 0..10 {
                let (c, r) = (cell.clone(), runs.clone());
                handles.push(rt.go(move || {
                    *c.get_or_init(|| {
                        r.fetch_add(1, SeqCst);
                        corio::sleep(Duration::from_millis(2)); // others pile up meanwhile
                        i
                    })
                }));
                let (c, r) = (cell.clone(), runs.clone());
                handles.push(rt.spawn(async move {
                    *c.get_or_init_async(|| async move {
                        r.fetch_add(1, SeqCst);
                        corio::time::sleep_async(Duration::from_millis(2)).await;
                        100 + i
                    })
                    .await
                }));
            }
            let (c, r) = (cell.clone(), runs.clone());
            let thread = std::thread::spawn(move || {
                *c.get_or_init(|| {
                    r.fetch_add(1, SeqCst);
                    1000
                })
            });
            let seen: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            let from_thread = thread.join().unwrap();
            assert_eq!(runs.load(SeqCst), 1, "the initialiser ran more than once");
            let v = *cell.get().unwrap();
            assert!(seen.iter().all(|&s| s == v) && from_thread == v);
        });
    }

    #[test]
    fn a_lazy_value_is_computed_once_for_many_coroutines() {
        let rt = rt();
        within(EVENTUALLY, move || {
            static RUNS: AtomicUsize = AtomicUsize::new(0);
            RUNS.store(0, SeqCst);
            let lazy: Arc<Lazy<Vec<u32>, _>> = Arc::new(Lazy::new(|| {
                RUNS.fetch_add(1, SeqCst);
                corio::yield_now();
                (0..10).collect()
            }));
            let handles: Vec<_> = (0..20)
                .map(|_| {
                    let l = lazy.clone();
                    rt.go(move || l.iter().sum::<u32>())
                })
                .collect();
            assert!(handles.into_iter().all(|h| h.join().unwrap() == 45));
            assert_eq!(RUNS.load(SeqCst), 1);
        });
    }
}

/// Go's `TestWaitGroupMisuse`: `Done` past zero panics.
#[test]
fn go_wait_group_misuse_done_past_zero_panics() {
    let wg = WaitGroup::new();
    wg.add(1);
    wg.done();
    let msg = panic_message(|| wg.done());
    assert!(msg.contains("negative"), "{msg}");
    assert_eq!(wg.count(), 0);
}

/// A party whose wait is dropped before the barrier opens takes its arrival back: the barrier
/// still needs as many live parties as it was made for.
#[test]
fn a_cancelled_barrier_party_takes_its_arrival_back() {
    let barrier = Barrier::new(2);
    let mut cx = Context::from_waker(Waker::noop());
    {
        let mut gone = pin!(barrier.wait_async());
        assert!(gone.as_mut().poll(&mut cx).is_pending());
    }
    let mut first = pin!(barrier.wait_async());
    assert!(
        first.as_mut().poll(&mut cx).is_pending(),
        "the barrier opened with a cancelled party counted"
    );
    let mut second = pin!(barrier.wait_async());
    assert!(second.as_mut().poll(&mut cx).is_ready());
    assert!(first.as_mut().poll(&mut cx).is_ready());
}

/// An initialiser that panics leaves the cell empty and the next caller initialises it.
#[test]
fn a_panicking_initialiser_leaves_the_cell_for_the_next_caller() {
    let cell = OnceCell::new();
    let msg = panic_message(|| {
        cell.get_or_init(|| panic!("initialiser fails"));
    });
    assert!(msg.contains("initialiser fails"));
    assert!(cell.get().is_none());
    assert_eq!(*cell.get_or_init(|| 7), 7);
    assert_eq!(cell.set(8), Err(8));
}

/// Two surplus `done()`s racing on a counter of zero both panic, and the counter stays at
/// zero. (The first one took the counter below zero before it put it back: the second then
/// saw `usize::MAX` there, went on without a panic, and the counter stayed at `usize::MAX`.)
#[test]
fn two_surplus_dones_racing_both_panic_and_leave_the_counter_at_zero() {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    within(EVENTUALLY, || {
        for round in 0..5_000 {
            let wg = Arc::new(WaitGroup::new());
            let start = Arc::new(std::sync::Barrier::new(2));
            let panics = Arc::new(AtomicUsize::new(0));
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let (wg, start, panics) = (wg.clone(), start.clone(), panics.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        if catch_unwind(AssertUnwindSafe(|| wg.done())).is_err() {
                            panics.fetch_add(1, SeqCst);
                        }
                    })
                })
                .collect();
            threads.into_iter().for_each(|t| t.join().unwrap());
            assert_eq!(
                (wg.count(), panics.load(SeqCst)),
                (0, 2),
                "round {round}: (counter, panics) after two surplus done() calls"
            );
        }
    });
}

/// `add` past the counter's range panics (as Go's "WaitGroup counter overflow") instead of
/// wrapping to a counter that reads as nothing outstanding.
#[test]
fn add_past_the_counters_range_panics_and_leaves_it_unchanged() {
    let wg = WaitGroup::new();
    wg.add(usize::MAX);
    let message = panic_message(|| wg.add(1));
    assert!(message.contains("overflow"), "{message}");
    assert_eq!(wg.count(), usize::MAX);
}
