//! Soundness regressions from issue 7: state that belongs to one coroutine must survive other
//! coroutines running on the same thread while it is suspended (resumes do not nest), and no
//! reference into a worker's stack frame may outlive the resume that made it.

#[macro_use]
mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use corio::coroutine::Coroutine;
use corio::generator::Generator;

/// Two coroutines each drive a generator whose body blocks the coroutine (`block`) before
/// every `co.suspend`; every generator must yield 0, 1, 2 and return.
fn two_coroutines_drive_blocking_generators(rt: corio::Runtime, block: fn()) {
    let got = support::within(support::EVENTUALLY, move || {
        rt.run(move || {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    corio::go(move || {
                        let g = Generator::new(|co, ()| async move {
                            for n in 0..3u32 {
                                block();
                                co.suspend(n).await;
                            }
                        });
                        g.collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        })
    });
    assert_eq!(got, [[0, 1, 2], [0, 1, 2]]);
}

rt_common! {
    #[test]
    fn generators_whose_bodies_yield_the_coroutine_keep_their_own_ids() {
        two_coroutines_drive_blocking_generators(rt(), corio::yield_now);
    }

    #[test]
    fn generators_whose_bodies_sleep_keep_their_own_ids() {
        two_coroutines_drive_blocking_generators(rt(), || corio::sleep(Duration::from_millis(1)));
    }

    #[test]
    fn generators_whose_bodies_join_keep_their_own_ids() {
        two_coroutines_drive_blocking_generators(rt(), || {
            assert_eq!(corio::go(|| 5).join().unwrap(), 5);
        });
    }

    #[test]
    fn generators_whose_bodies_block_on_keep_their_own_ids() {
        two_coroutines_drive_blocking_generators(rt(), || {
            corio::block_on(async {
                corio::yield_now_async().await;
                corio::time::sleep_async(Duration::from_millis(1)).await;
            });
        });
    }

    /// Issue 7, item 2: the future's `cx` must stay valid when its `poll` suspends the
    /// coroutine (a debug build segfaulted here before the fix).
    #[test]
    fn block_on_survives_a_future_that_yields_the_coroutine_inside_its_poll() {
        let rt = rt();
        let sum = support::within(support::EVENTUALLY, move || {
            rt.run(|| {
                let handles: Vec<_> = (0..4u32)
                    .map(|i| {
                        corio::go(move || {
                            corio::block_on(async move {
                                corio::yield_now();
                                corio::time::sleep_async(Duration::from_millis(1)).await;
                                i
                            })
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).sum::<u32>()
            })
        });
        assert_eq!(sum, 6);
    }

    /// Issue 7, item 2: a future that sleeps and yields blocking-style inside `poll`, then uses
    /// its `cx`.
    #[test]
    fn block_on_survives_a_future_that_sleeps_inside_its_poll() {
        let rt = rt();
        let polls = support::within(support::EVENTUALLY, move || {
            rt.run(|| {
                let handles: Vec<_> = (0..4)
                    .map(|_| corio::go(|| corio::block_on(SleepsInPoll { polls: 0 })))
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
            })
        });
        assert_eq!(polls, [3, 3, 3, 3]);
    }

    /// Issue 7, item 4: a bare `Coroutine` nested in a task's coroutine may not yield the task,
    /// and its refused `yield_now` must leave nothing behind that resumes the task spuriously.
    #[test]
    fn a_refused_yield_in_a_nested_coroutine_leaves_no_spurious_resume() {
        refused_nested_yield_leaves_no_spurious_resume(rt(), corio::Builder::new());
    }

    #[test]
    fn a_refused_yield_in_a_nested_coroutine_of_a_migratable_task_leaves_no_spurious_resume() {
        // SAFETY: the coroutine holds nothing thread-bound across a suspension.
        let builder = unsafe { corio::Builder::new().migratable() };
        refused_nested_yield_leaves_no_spurious_resume(rt(), builder);
    }
}

/// Sleeps the coroutine (blocking-style) inside every poll, yields it, then wakes itself
/// through `cx`; ready at the third poll. (A sleep alone is resumed from a worker frame at the
/// same address as the one it suspended under, which hid the dangling `cx` in a debug build;
/// the yield is resumed from another.)
struct SleepsInPoll {
    polls: u32,
}

impl Future for SleepsInPoll {
    type Output = u32;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        self.polls += 1;
        corio::sleep(Duration::from_millis(1));
        corio::yield_now();
        if self.polls == 3 {
            return Poll::Ready(self.polls);
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Pending until `woken` is set by whoever takes the waker; counts polls made before that.
struct WaitForWake {
    waker: Arc<Mutex<Option<Waker>>>,
    woken: Arc<AtomicBool>,
    polls_before_wake: Arc<AtomicUsize>,
    polled: bool,
}

impl Future for WaitForWake {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.woken.load(SeqCst) {
            return Poll::Ready(());
        }
        if self.polled {
            self.polls_before_wake.fetch_add(1, SeqCst);
        }
        self.polled = true;
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

fn refused_nested_yield_leaves_no_spurious_resume(rt: corio::Runtime, builder: corio::Builder) {
    let spurious = support::within(support::EVENTUALLY, move || {
        rt.run(move || {
            let task = builder.spawn(|| {
                let mut nested = Coroutine::<(), (), ()>::new(|_y, ()| corio::yield_now());
                let msg = support::panic_message(|| {
                    nested.resume(());
                });
                assert!(msg.contains("bare `Coroutine`"), "{msg}");

                let waker = Arc::new(Mutex::new(None::<Waker>));
                let woken = Arc::new(AtomicBool::new(false));
                let polls_before_wake = Arc::new(AtomicUsize::new(0));
                let waking = std::thread::spawn({
                    let (waker, woken) = (waker.clone(), woken.clone());
                    move || {
                        support::wait_until("the task waits", || waker.lock().unwrap().is_some());
                        // Long enough for a spurious resume to happen first, were there one.
                        std::thread::sleep(Duration::from_millis(100));
                        woken.store(true, SeqCst);
                        waker.lock().unwrap().take().unwrap().wake();
                    }
                });
                corio::block_on(WaitForWake {
                    waker,
                    woken,
                    polls_before_wake: polls_before_wake.clone(),
                    polled: false,
                });
                waking.join().unwrap();
                polls_before_wake.load(SeqCst)
            });
            task.unwrap().join().unwrap()
        })
    });
    assert_eq!(spurious, 0, "the task was resumed before its waker fired");
}
