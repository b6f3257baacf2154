//! `corio::scope`: children that borrow from the caller's stack end before `scope` returns —
//! on a normal return, when the closure panics, when a child panics, and when the coroutine
//! inside `scope` is cancelled or its runtime is dropped. std's `thread::scope` tests
//! (`library/std/src/thread/tests.rs`, `test_scoped_threads_nll`, `scope_join_race`) are the
//! model for the first ones.

#[macro_use]
mod support;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use support::{
    Drops, EVENTUALLY, EXPECTED, Gate, panic_message, quiet_expected_panics, wait_until, within,
};

rt_common! {
    #[test]
    fn children_of_both_kinds_borrow_the_callers_stack_and_end_before_scope_returns() {
        let rt = rt();
        let (sum, log) = within(EVENTUALLY, move || {
            rt.run(|| {
                let numbers: Vec<u64> = (1..=100).collect();
                let log = Mutex::new(Vec::new());
                let mut total = 0;
                corio::scope(|s| {
                    let (a, b) = numbers.split_at(50);
                    let h1 = s.go(|| {
                        corio::yield_now();
                        a.iter().sum::<u64>()
                    });
                    let h2 = s.spawn(async {
                        corio::yield_now_async().await;
                        b.iter().sum::<u64>()
                    });
                    s.go(|| log.lock().unwrap().push("unjoined coroutine"));
                    s.spawn(async { log.lock().unwrap().push("unjoined task") });
                    total = h1.join().unwrap() + h2.join().unwrap();
                });
                let mut log = log.into_inner().unwrap();
                log.sort();
                (total, log)
            })
        });
        assert_eq!(sum, 5050);
        assert_eq!(log, ["unjoined coroutine", "unjoined task"]);
    }

    #[test]
    fn an_async_child_awaits_a_sibling_coroutines_handle() {
        let rt = rt();
        let v = within(EVENTUALLY, move || {
            rt.run(|| {
                let base = 40u32;
                corio::scope(|s| {
                    let first = s.go(|| {
                        corio::yield_now();
                        base + 1
                    });
                    s.spawn(async { first.await.unwrap() + 1 }).join().unwrap()
                })
            })
        });
        assert_eq!(v, 42);
    }

    #[test]
    fn scope_waits_for_children_that_were_never_joined() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let done = AtomicUsize::new(0);
                corio::scope(|s| {
                    for _ in 0..10 {
                        s.go(|| {
                            corio::sleep(Duration::from_millis(20));
                            done.fetch_add(1, SeqCst);
                        });
                    }
                });
                assert_eq!(done.load(SeqCst), 10);
            })
        });
    }

    #[test]
    fn a_child_may_spawn_more_children_on_the_same_scope() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let done = AtomicUsize::new(0);
                corio::scope(|s| {
                    s.go(|| {
                        for _ in 0..5 {
                            s.go(|| {
                                corio::yield_now();
                                done.fetch_add(1, SeqCst);
                            });
                        }
                    });
                });
                assert_eq!(done.load(SeqCst), 5);
            })
        });
    }

    #[test]
    fn a_childs_panic_that_was_not_joined_is_raised_by_scope_after_every_child_ended() {
        quiet_expected_panics();
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let slow_done = AtomicBool::new(false);
                let msg = panic_message(|| {
                    corio::scope(|s| {
                        s.go(|| panic!("{EXPECTED} child"));
                        s.go(|| {
                            corio::sleep(Duration::from_millis(20));
                            slow_done.store(true, SeqCst);
                        });
                    })
                });
                assert!(msg.contains("a scoped coroutine panicked"), "{msg}");
                assert!(slow_done.load(SeqCst));
            })
        });
    }

    #[test]
    fn a_joined_childs_panic_is_returned_by_join_and_not_raised_again() {
        quiet_expected_panics();
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let v = corio::scope(|s| {
                    let a = s.go(|| -> u32 { panic!("{EXPECTED} joined coroutine") });
                    let b = s.spawn(async { panic!("{EXPECTED} joined task") });
                    let ea = a.join().unwrap_err();
                    let eb: corio::JoinError = b.join().unwrap_err();
                    assert!(ea.is_panic() && eb.is_panic());
                    7
                });
                assert_eq!(v, 7);
            })
        });
    }

    #[test]
    fn a_panic_in_the_closure_is_resumed_after_every_child_ended() {
        quiet_expected_panics();
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let done = AtomicBool::new(false);
                let msg = panic_message(|| {
                    corio::scope(|s| {
                        s.go(|| {
                            corio::sleep(Duration::from_millis(20));
                            done.store(true, SeqCst);
                        });
                        panic!("{EXPECTED} closure");
                    })
                });
                assert!(msg.contains("closure"), "{msg}");
                assert!(done.load(SeqCst), "the child ended before the panic left scope");
            })
        });
    }

    #[test]
    fn aborting_the_coroutine_inside_scope_waits_for_its_children_before_unwinding() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let gate = Gate::new();
            let in_scope = std::sync::Arc::new(AtomicBool::new(false));
            let child_done = std::sync::Arc::new(AtomicBool::new(false));
            let seen_at_exit = std::sync::Arc::new(AtomicBool::new(false));
            let (g, i, c, seen) =
                (gate.clone(), in_scope.clone(), child_done.clone(), seen_at_exit.clone());
            let parent = rt.go(move || {
                let borrowed = AtomicBool::new(false);
                struct Check<'a>(&'a AtomicBool, std::sync::Arc<AtomicBool>);
                impl Drop for Check<'_> {
                    fn drop(&mut self) {
                        self.1.store(self.0.load(SeqCst), SeqCst);
                    }
                }
                let _check = Check(&borrowed, seen);
                corio::scope(|s| {
                    s.go(|| {
                        corio::block_on(g.wait());
                        borrowed.store(true, SeqCst);
                        c.store(true, SeqCst);
                    });
                    i.store(true, SeqCst);
                    corio::block_on(Gate::new().wait()); // the parent waits here until aborted
                });
            });
            wait_until("the parent is inside scope", || in_scope.load(SeqCst));
            parent.abort();
            std::thread::sleep(Duration::from_millis(50));
            assert!(!parent.is_finished(), "the parent left scope while its child ran");
            assert!(!child_done.load(SeqCst));
            gate.open();
            assert!(parent.join().unwrap_err().is_cancelled());
            assert!(child_done.load(SeqCst));
            assert!(seen_at_exit.load(SeqCst), "the child's write happened before the unwind");
        });
    }

    #[test]
    fn aborting_the_coroutine_while_scope_waits_for_its_children_does_not_cut_the_wait_short() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let gate = Gate::new();
            let waiting = std::sync::Arc::new(AtomicBool::new(false));
            let after_scope = std::sync::Arc::new(AtomicBool::new(false));
            let (g, w, a) = (gate.clone(), waiting.clone(), after_scope.clone());
            let parent = rt.go(move || {
                let mut value = 0;
                corio::scope(|s| {
                    s.go(|| {
                        corio::block_on(g.wait());
                        value = 1;
                    });
                    w.store(true, SeqCst); // the closure returns: scope now waits
                });
                a.store(value == 1, SeqCst);
                corio::yield_now(); // the recorded cancellation is raised here
                unreachable!("the cancellation was lost");
            });
            wait_until("the parent is in scope", || waiting.load(SeqCst));
            std::thread::sleep(Duration::from_millis(20));
            parent.abort();
            std::thread::sleep(Duration::from_millis(50));
            assert!(!parent.is_finished(), "the parent left scope while its child ran");
            gate.open();
            assert!(parent.join().unwrap_err().is_cancelled());
            assert!(after_scope.load(SeqCst), "scope returned only after the child's write");
        });
    }

    /// The cancellation that arrives while `scope` waits is recorded, and raised by the next
    /// ordinary suspension: here a `yield_now`. That yield must leave no trace once it raises
    /// instead of yielding: a destructor that then blocks while the coroutine unwinds waits for
    /// its waker, and is not resumed before (as it was when the yield had already marked the
    /// task "yielded", which requeued it as running at the destructor's first suspension).
    #[test]
    fn a_cancellation_recorded_while_scope_waited_is_raised_by_the_next_yield_without_a_spurious_resume()
     {
        recorded_cancellation_leaves_no_spurious_resume(rt(), corio::yield_now);
    }

    /// The same when the next suspension is the yield of a spent budget (zero sleeps, each
    /// ready at once, until the budget runs out). (It passed before the fix too: the wake it
    /// left was taken by the destructor's own first `block_on`, which yields on the spent
    /// budget before polling, so no poll was repeated; a regression guard.)
    #[test]
    fn a_cancellation_recorded_while_scope_waited_is_raised_by_a_spent_budget_without_a_spurious_resume()
     {
        recorded_cancellation_leaves_no_spurious_resume(rt(), || {
            for _ in 0..100_000 {
                corio::sleep(Duration::ZERO);
            }
        });
    }

    /// The same when the next suspension is a `block_on` of a future that wakes its task and
    /// returns `Pending` (an async yield): the wake is left behind when the suspension raises.
    #[test]
    fn a_cancellation_recorded_while_scope_waited_is_raised_by_a_self_waking_block_on_without_a_spurious_resume()
     {
        recorded_cancellation_leaves_no_spurious_resume(rt(), || {
            corio::block_on(corio::yield_now_async())
        });
    }

    #[test]
    fn dropping_the_runtime_ends_the_children_before_the_waiting_coroutine_unwinds() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let drops = Drops::new();
            let order = std::sync::Arc::new(Mutex::new(Vec::new()));
            let in_scope = std::sync::Arc::new(AtomicBool::new(false));
            let (o, i, d) = (order.clone(), in_scope.clone(), drops.clone());
            let parent = rt.go(move || {
                struct Log(std::sync::Arc<Mutex<Vec<&'static str>>>, &'static str);
                impl Drop for Log {
                    fn drop(&mut self) {
                        self.0.lock().unwrap().push(self.1);
                    }
                }
                let _parent = Log(o.clone(), "parent unwound");
                corio::scope(|s| {
                    s.go(|| {
                        let _token = d.token();
                        let _child = Log(o.clone(), "child ended");
                        corio::block_on(Gate::new().wait()); // until the runtime cancels it
                    });
                    i.store(true, SeqCst);
                });
            });
            wait_until("the parent is inside scope", || in_scope.load(SeqCst));
            drop(rt);
            assert!(parent.join().unwrap_err().is_cancelled());
            assert_eq!(drops.dropped(), 1);
            assert_eq!(*order.lock().unwrap(), ["child ended", "parent unwound"]);
        });
    }

    #[test]
    fn scope_inside_an_async_task_panics_with_advice_before_running_the_closure() {
        quiet_expected_panics();
        let rt = rt();
        within(EVENTUALLY, move || {
            let ran = std::sync::Arc::new(AtomicBool::new(false));
            let r = ran.clone();
            let err = rt
                .block_on(async move {
                    corio::spawn(async move {
                        corio::scope(|_| r.store(true, SeqCst));
                    })
                    .await
                })
                .unwrap_err();
            let msg = support::payload_text(&*err.into_panic());
            assert!(msg.contains("stackful coroutine"), "{msg}");
            assert!(!ran.load(SeqCst));
        });
    }

    #[test]
    fn scope_on_a_plain_thread_parks_it_until_the_children_end() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let _entered = rt.enter();
            let mut results = [0u64; 4];
            corio::scope(|s| {
                for (i, slot) in results.iter_mut().enumerate() {
                    s.go(move || {
                        corio::yield_now();
                        *slot = i as u64 * 10;
                    });
                }
            });
            assert_eq!(results, [0, 10, 20, 30]);
        });
    }
}

/// A bare `Coroutine` resumed by a task shares the task's context but cannot suspend the task:
/// `scope` inside it could not wait, so it refuses before running the closure.
#[test]
fn scope_inside_a_bare_coroutine_resumed_by_a_task_panics_before_running_the_closure() {
    use corio::coroutine::Coroutine;
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        let ran = std::sync::Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let err = rt
            .go(move || {
                let mut inner: Coroutine<(), (), ()> =
                    Coroutine::new(move |_, ()| corio::scope(|_| r.store(true, SeqCst)));
                let _ = inner.resume(());
            })
            .join()
            .unwrap_err();
        let msg = support::payload_text(&*err.into_panic());
        assert!(msg.contains("bare `Coroutine`"), "{msg}");
        assert!(!ran.load(SeqCst));
    });
}

/// A coroutine aborted while `scope` waits for its child; once the child ends, `suspend` is its
/// next ordinary suspension, which raises the recorded cancellation. A destructor then waits
/// for a gate while the coroutine unwinds: it must be polled once, then not again before the
/// gate opens.
fn recorded_cancellation_leaves_no_spurious_resume(rt: corio::Runtime, suspend: fn()) {
    within(EVENTUALLY, move || {
        let child_gate = Gate::new();
        let drop_gate = Gate::new();
        let waiting = std::sync::Arc::new(AtomicBool::new(false));
        let polls = std::sync::Arc::new(AtomicUsize::new(0));
        let (cg, dg, w, p) = (
            child_gate.clone(),
            drop_gate.clone(),
            waiting.clone(),
            polls.clone(),
        );
        let parent = rt.go(move || {
            /// Waits for its gate, counting the polls, while the coroutine unwinds.
            struct WaitsWhenDropped(Gate, std::sync::Arc<AtomicUsize>);
            impl Drop for WaitsWhenDropped {
                fn drop(&mut self) {
                    corio::block_on(support::CountPolls::new(self.1.clone(), self.0.wait()));
                }
            }
            let _waits = WaitsWhenDropped(dg, p);
            corio::scope(|s| {
                s.go(|| corio::block_on(cg.wait()));
                w.store(true, SeqCst); // the closure returns: scope now waits
            });
            suspend(); // raises the cancellation recorded while scope waited
            unreachable!("the cancellation was lost");
        });
        wait_until("the parent is in scope", || waiting.load(SeqCst));
        std::thread::sleep(Duration::from_millis(20));
        parent.abort();
        child_gate.open();
        wait_until("the destructor waits", || polls.load(SeqCst) >= 1);
        // Long enough for a spurious resume to happen first, were there one.
        std::thread::sleep(Duration::from_millis(100));
        let before_wake = polls.load(SeqCst);
        drop_gate.open();
        assert!(parent.join().unwrap_err().is_cancelled());
        assert_eq!(
            before_wake, 1,
            "the unwinding coroutine was resumed before its waker fired"
        );
    });
}
