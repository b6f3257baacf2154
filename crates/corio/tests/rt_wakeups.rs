//! No wake-up is ever lost: tasks woken from many threads at once, a plain thread and the
//! runtime passing control back and forth while workers park in between, wakes that cross
//! from one runtime to another, and a coroutine that aborts itself.
//!
//! A lost wake-up shows as a hang, which the watchdog turns into a failure.

#[macro_use]
mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use support::{EVENTUALLY, Gate, Rng, within};

/// A counter that futures can wait on until it reaches a target; every increment wakes the
/// registered wakers (from whichever thread increments).
#[derive(Clone, Default)]
struct Counter(Arc<CounterInner>);

#[derive(Default)]
struct CounterInner {
    value: AtomicU64,
    wakers: Mutex<Vec<Waker>>,
}

impl Counter {
    fn increment(&self) {
        self.0.value.fetch_add(1, SeqCst);
        let wakers: Vec<Waker> = self.0.wakers.lock().unwrap().clone();
        for w in wakers {
            w.wake();
        }
    }

    fn reaches(&self, target: u64) -> Reaches {
        Reaches {
            counter: self.clone(),
            target,
            polls: 0,
        }
    }
}

struct Reaches {
    counter: Counter,
    target: u64,
    polls: u64,
}

impl Future for Reaches {
    type Output = u64;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        self.polls += 1;
        let inner = &self.counter.0;
        if inner.value.load(SeqCst) >= self.target {
            return Poll::Ready(self.polls);
        }
        {
            let mut wakers = inner.wakers.lock().unwrap();
            wakers.retain(|w| !w.will_wake(cx.waker()));
            wakers.push(cx.waker().clone());
        }
        if inner.value.load(SeqCst) >= self.target {
            Poll::Ready(self.polls)
        } else {
            Poll::Pending
        }
    }
}

/// Increments `counter` `n` times from each of `threads` plain threads.
fn storm(counter: &Counter, threads: usize, n: u64) -> Vec<std::thread::JoinHandle<()>> {
    (0..threads)
        .map(|_| {
            let c = counter.clone();
            std::thread::spawn(move || {
                for i in 0..n {
                    c.increment();
                    if i % 64 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect()
}

rt_common! {
    #[test]
    fn a_coroutine_and_a_task_woken_from_many_threads_at_once_complete() {
        let rt = rt();
        within(EVENTUALLY, move || {
            for _ in 0..20 {
                let counter = Counter::default();
                const THREADS: usize = 4;
                const N: u64 = 2_000;
                let target = THREADS as u64 * N;
                let c = counter.clone();
                let co = rt.go(move || corio::block_on(c.reaches(target)));
                let task = rt.spawn(counter.reaches(target));
                for t in storm(&counter, THREADS, N) {
                    t.join().unwrap();
                }
                // Every increment woke both; whatever the interleaving, both see the end.
                assert!(co.join().unwrap() >= 1);
                assert!(task.join().unwrap() >= 1);
            }
        });
    }

    /// The runtime is driven from a plain thread one step at a time, with pauses that let
    /// every worker park in between: each spawn must wake a worker, and each completion must
    /// wake the joining thread.
    #[test]
    fn spawn_and_join_from_a_plain_thread_never_loses_a_wake_up_across_parks() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let mut rng = Rng::new(0x9a4c);
            for i in 0..2_000u64 {
                if rng.chance(5) {
                    std::thread::sleep(Duration::from_micros(rng.below(2_000)));
                }
                let v = if i % 2 == 0 {
                    rt.go(move || i).join().unwrap()
                } else {
                    rt.spawn(async move { i }).join().unwrap()
                };
                assert_eq!(v, i);
            }
        });
    }

    /// A coroutine and a plain thread take turns through two gates each round.
    #[test]
    fn a_coroutine_and_a_plain_thread_take_turns_without_losing_a_wake_up() {
        let rt = rt();
        within(EVENTUALLY, move || {
            const ROUNDS: usize = 1_000;
            let pings: Vec<Gate> = (0..ROUNDS).map(|_| Gate::new()).collect();
            let pongs: Vec<Gate> = (0..ROUNDS).map(|_| Gate::new()).collect();
            let (pi, po) = (pings.clone(), pongs.clone());
            let co = rt.go(move || {
                for r in 0..ROUNDS {
                    corio::block_on(pi[r].wait());
                    po[r].open();
                }
            });
            let mut rng = Rng::new(7);
            for r in 0..ROUNDS {
                if rng.chance(3) {
                    std::thread::sleep(Duration::from_micros(rng.below(1_000)));
                }
                pings[r].open();
                corio::block_on(pongs[r].wait());
            }
            co.join().unwrap();
        });
    }

    /// A coroutine on one runtime and a task on another wait for each other: wakes cross
    /// runtimes (the waker of a pinned coroutine is called on a worker of the other runtime).
    #[test]
    fn tasks_of_two_runtimes_join_each_other() {
        let a = rt();
        let b = support::rt(3 - WORKERS);
        within(EVENTUALLY, move || {
            let bh = b.handle().clone();
            let v = a.run(move || {
                let mut sum = 0;
                for i in 0..200u64 {
                    // A coroutine on `a` joins a coroutine on `b`, which awaits a task on `a`.
                    let ah = corio::Handle::current();
                    let from_b = bh.go(move || {
                        corio::block_on(ah.spawn(async move {
                            corio::yield_now_async().await;
                            i
                        }))
                        .unwrap()
                    });
                    sum += from_b.join().unwrap();
                }
                sum
            });
            assert_eq!(v, 199 * 200 / 2);
            drop(b);
        });
    }

    /// A coroutine that aborts itself is cancelled at its next suspension and runs no further.
    #[test]
    fn a_coroutine_that_aborts_itself_is_cancelled_at_its_next_suspension() {
        let rt = rt();
        within(EVENTUALLY, move || {
            for suspension in 0..2 {
                let me: Arc<Mutex<Option<corio::JoinHandle<()>>>> = Arc::default();
                let after = Arc::new(AtomicBool::new(false));
                let (m, a) = (me.clone(), after.clone());
                let gate = Gate::new();
                let g = gate.clone();
                let h = rt.go(move || {
                    corio::block_on(g.wait());
                    m.lock().unwrap().as_ref().unwrap().abort();
                    if suspension == 0 {
                        corio::yield_now();
                    } else {
                        corio::sleep(Duration::from_millis(1));
                    }
                    a.store(true, SeqCst);
                });
                *me.lock().unwrap() = Some(h);
                gate.open();
                support::wait_until("it finishes", || me.lock().unwrap().as_ref().unwrap().is_finished());
                let h = me.lock().unwrap().take().unwrap();
                assert!(h.join().unwrap_err().is_cancelled());
                assert!(!after.load(SeqCst), "ran past the suspension after aborting itself");
            }
        });
    }

    /// A migratable coroutine (the `unsafe` builder option) may be resumed on any worker; it
    /// must still see every wake-up and finish.
    #[test]
    fn a_migratable_coroutine_finishes_through_yields_sleeps_and_joins() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let handles: Vec<_> = (0..50u64)
                .map(|i| {
                    let _entered = rt.enter();
                    // SAFETY: the body keeps nothing thread-bound across its suspensions.
                    let builder = unsafe { corio::Builder::new().migratable() };
                    builder
                        .spawn(move || {
                            let mut acc = 0;
                            for k in 0..20 {
                                match k % 3 {
                                    0 => corio::yield_now(),
                                    1 => corio::sleep(Duration::from_micros(200)),
                                    _ => acc += corio::go(move || k).join().unwrap(),
                                }
                            }
                            acc + i
                        })
                        .unwrap()
                })
                .collect();
            for (i, h) in handles.into_iter().enumerate() {
                assert_eq!(h.join().unwrap(), (2..20).step_by(3).sum::<u64>() + i as u64);
            }
        });
    }
}
