//! The per-poll state a direct hand-off sets for the arriving coroutine (docs/scheduler.md,
//! "The direct switch on a `block_on` suspension" and "The direct switch to a queued
//! coroutine"): the generator word of `corio_context::local`, task-local scopes, the current
//! task, the preemptible coroutine the signal handler may suspend, and the thread. Each test
//! also checks that the direct path ran, so that it cannot pass by falling back to the loop.

#[macro_use]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use corio::generator::{CoroutineResult, Generator};
use support::{EVENTUALLY, within};

corio::task_local! {
    static VALUE: u64;
}

fn one_worker() -> corio::Runtime {
    corio::Runtime::builder()
        .workers(1)
        .hog_report(false)
        .build()
        .unwrap()
}

/// Two coroutines ping-pong over rendezvous channels from inside the bodies of their own
/// generators: each blocks (a direct hand-off to the other) in the middle of its generator's
/// poll, then suspends the generator with the value it received. The generator word travels
/// with each hand-off: a `co.suspend` that found the other coroutine's generator published
/// would panic.
#[test]
fn generators_blocking_inside_their_bodies_keep_their_own_slot_across_direct_hand_offs() {
    within(EVENTUALLY, || {
        const ROUNDS: u64 = 2_000;
        let rt = one_worker();
        let (a, b) = rt.run(|| {
            let (ping_tx, ping_rx) = corio::chan::bounded::<u64>(0);
            let (pong_tx, pong_rx) = corio::chan::bounded::<u64>(0);
            let a = corio::go(move || {
                let mut g = Generator::new(move |co, ()| async move {
                    for v in 0..ROUNDS {
                        ping_tx.send(v).unwrap();
                        let back = pong_rx.recv().unwrap();
                        co.suspend(back).await;
                    }
                });
                let mut got = Vec::new();
                while let CoroutineResult::Yield(v) = g.resume(()) {
                    got.push(v);
                }
                got
            });
            let b = corio::go(move || {
                let mut g = Generator::new(move |co, ()| async move {
                    while let Ok(v) = ping_rx.recv() {
                        pong_tx.send(v + 1).unwrap();
                        co.suspend(v).await;
                    }
                });
                let mut got = Vec::new();
                while let CoroutineResult::Yield(v) = g.resume(()) {
                    got.push(v);
                }
                got
            });
            (a.join().unwrap(), b.join().unwrap())
        });
        assert_eq!(a, (1..=ROUNDS).collect::<Vec<_>>());
        assert_eq!(b, (0..ROUNDS).collect::<Vec<_>>());
        assert!(rt.metrics().direct_handoffs > 0, "{:?}", rt.metrics());
    });
}

/// A fan-out of receivers that hand the worker on through the pinned queue, each inside a
/// task-local scope of its own and inside its own generator's body: after every hand-off each
/// still sees its own task-local value, its own task id and its own generator.
#[test]
fn task_locals_generators_and_ids_stay_each_coroutines_own_across_queue_hand_offs() {
    within(EVENTUALLY, || {
        const RECEIVERS: u64 = 8;
        const ROUNDS: u64 = 1_000;
        let rt = one_worker();
        let sums = rt.run(|| {
            let (txs, handles): (Vec<_>, Vec<_>) = (0..RECEIVERS)
                .map(|index| {
                    let (tx, rx) = corio::chan::bounded::<u64>(0);
                    let handle = corio::go(move || {
                        let id = corio::current().id();
                        VALUE.sync_scope(index, || {
                            let mut g = Generator::new(move |co, ()| async move {
                                while let Ok(v) = rx.recv() {
                                    assert_eq!(VALUE.get(), index, "another coroutine's value");
                                    assert_eq!(corio::current().id(), id, "another task's id");
                                    co.suspend(v).await;
                                }
                            });
                            let mut sum = 0;
                            while let CoroutineResult::Yield(v) = g.resume(()) {
                                assert_eq!(VALUE.get(), index, "another coroutine's value");
                                sum += v;
                            }
                            sum
                        })
                    });
                    (tx, handle)
                })
                .unzip();
            for round in 0..ROUNDS {
                for tx in &txs {
                    tx.send(round).unwrap();
                }
            }
            drop(txs);
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        });
        assert_eq!(sums, vec![ROUNDS * (ROUNDS - 1) / 2; RECEIVERS as usize]);
        assert!(rt.metrics().direct_queue_handoffs > 0, "{:?}", rt.metrics());
    });
}

/// A preemptible builder.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn preemptible() -> corio::Builder {
    // SAFETY: the coroutines below hold no thread-local borrow, lock or guard in the code that
    // may be preempted (a pure loop between channel calls).
    unsafe { corio::Builder::new().preemptible() }
}

/// Two preemptible pairs ping-pong over rendezvous channels (direct hand-offs between
/// preemptible coroutines, which make the arriving one the coroutine the signal handler may
/// suspend) with a pure loop between their calls, while a plain thread keeps requesting
/// preemptions. A preemption that suspended the wrong coroutine, or one in the middle of a
/// hand-off, shows as a wrong value, a wrong task id, a changed thread, or a crash.
#[test]
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn preemptible_coroutines_handing_off_directly_under_continuous_preemption_keep_their_state() {
    const ROUNDS: u64 = 3_000;
    let rt = Arc::new(one_worker());
    let r = rt.clone();
    within(EVENTUALLY, move || {
        let done = Arc::new(AtomicBool::new(false));
        let (d, r2) = (done.clone(), r.clone());
        let preempter = std::thread::spawn(move || {
            while !d.load(SeqCst) {
                r2.preempt_running_coroutines();
                std::thread::sleep(Duration::from_micros(20));
            }
        });
        /// A pure loop long enough for a signal to land in it now and then.
        fn work(seed: u64) -> u64 {
            let mut x = seed;
            for _ in 0..2_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            x
        }
        let results = r.run(move || {
            let mut handles = Vec::new();
            for pair in 0..2u64 {
                let (ping_tx, ping_rx) = corio::chan::bounded::<u64>(0);
                let (pong_tx, pong_rx) = corio::chan::bounded::<u64>(0);
                handles.push(
                    preemptible()
                        .spawn(move || {
                            let (id, thread) = (corio::current().id(), std::thread::current().id());
                            let mut acc = 0u64;
                            for v in 0..ROUNDS {
                                acc = acc.wrapping_add(work(v));
                                ping_tx.send(v * 2 + pair).unwrap();
                                assert_eq!(pong_rx.recv().unwrap(), v * 2 + pair + 1);
                                assert_eq!(corio::current().id(), id);
                                assert_eq!(std::thread::current().id(), thread);
                            }
                            std::hint::black_box(acc);
                            ROUNDS
                        })
                        .unwrap(),
                );
                handles.push(
                    preemptible()
                        .spawn(move || {
                            let (id, thread) = (corio::current().id(), std::thread::current().id());
                            let mut n = 0;
                            let mut acc = 0u64;
                            while let Ok(v) = ping_rx.recv() {
                                assert_eq!(v % 2, pair, "another pair's value");
                                acc = acc.wrapping_add(work(v));
                                pong_tx.send(v + 1).unwrap();
                                assert_eq!(corio::current().id(), id);
                                assert_eq!(std::thread::current().id(), thread);
                                n += 1;
                            }
                            std::hint::black_box(acc);
                            n
                        })
                        .unwrap(),
                );
            }
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        });
        done.store(true, SeqCst);
        preempter.join().unwrap();
        assert_eq!(results, vec![ROUNDS; 4]);
        let m = r.metrics();
        assert!(m.direct_handoffs > 0, "{m:?}");
        assert!(m.preemptions > 0, "{m:?}");
    });
}

/// Two workers, pairs and fan-outs of coroutines on both, woken across workers and from a
/// plain thread: no coroutine ever runs on another thread than the one it started on, and
/// every value arrives.
#[test]
fn coroutines_handing_off_directly_on_two_workers_never_change_thread() {
    within(EVENTUALLY, || {
        const PAIRS: u64 = 8;
        const ROUNDS: u64 = 2_000;
        let rt = corio::Runtime::builder()
            .workers(2)
            .hog_report(false)
            .build()
            .unwrap();
        let results = rt.run(|| {
            let mut handles = Vec::new();
            for pair in 0..PAIRS {
                let (ping_tx, ping_rx) = corio::chan::bounded::<u64>(0);
                let (pong_tx, pong_rx) = corio::chan::bounded::<u64>(0);
                handles.push(corio::go(move || {
                    let thread = std::thread::current().id();
                    for v in 0..ROUNDS {
                        ping_tx.send(v * PAIRS + pair).unwrap();
                        assert_eq!(pong_rx.recv().unwrap(), v * PAIRS + pair + 1);
                        assert_eq!(std::thread::current().id(), thread);
                    }
                    ROUNDS
                }));
                handles.push(corio::go(move || {
                    let thread = std::thread::current().id();
                    let mut n = 0;
                    while let Ok(v) = ping_rx.recv() {
                        assert_eq!(v % PAIRS, pair);
                        pong_tx.send(v + 1).unwrap();
                        assert_eq!(std::thread::current().id(), thread);
                        n += 1;
                    }
                    n
                }));
            }
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        });
        assert_eq!(results, vec![ROUNDS; 2 * PAIRS as usize]);
        assert!(rt.metrics().direct_handoffs > 0, "{:?}", rt.metrics());
    });
}
