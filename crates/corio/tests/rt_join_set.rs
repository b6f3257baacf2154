//! `corio::JoinSet`: tasks of both kinds joined in completion order, aborted on drop. The
//! cases follow tokio's `tests/task_join_set.rs` (`test_with_sleep`, `test_abort_on_drop`,
//! `abort_all`), written for corio's two task kinds.

#[macro_use]
mod support;

use std::collections::HashSet;
use std::time::Duration;

use corio::JoinSet;
use support::{Drops, EVENTUALLY, EXPECTED, Gate, quiet_expected_panics, wait_until, within};

rt_common! {
    #[test]
    fn join_next_returns_tasks_in_the_order_they_finish() {
        let rt = rt();
        let order = within(EVENTUALLY, move || {
            rt.run(|| {
                let gates: Vec<Gate> = (0..6).map(|_| Gate::new()).collect();
                let mut set = JoinSet::new();
                for (i, gate) in gates.iter().enumerate() {
                    let wait = gate.wait();
                    if i % 2 == 0 {
                        set.go(move || {
                            corio::block_on(wait);
                            i
                        });
                    } else {
                        set.spawn(async move {
                            wait.await;
                            i
                        });
                    }
                }
                assert_eq!(set.len(), 6);
                let mut order = Vec::new();
                for i in [3, 0, 5, 1, 4, 2] {
                    gates[i].open();
                    order.push(set.join_next().unwrap().unwrap());
                }
                assert!(set.is_empty());
                assert!(set.join_next().is_none());
                order
            })
        });
        assert_eq!(order, [3, 0, 5, 1, 4, 2]);
    }

    #[test]
    fn join_next_async_joins_every_task_once_inside_an_async_task() {
        let rt = rt();
        let seen = within(EVENTUALLY, move || {
            rt.block_on(async {
                let mut set = JoinSet::new();
                for i in 0..500u32 {
                    if i % 3 == 0 {
                        set.go(move || {
                            corio::yield_now();
                            i
                        });
                    } else {
                        set.spawn(async move {
                            corio::yield_now_async().await;
                            i
                        });
                    }
                }
                let mut seen = HashSet::new();
                while let Some(res) = set.join_next_async().await {
                    assert!(seen.insert(res.unwrap()), "a task was joined twice");
                }
                seen
            })
        });
        assert_eq!(seen, (0..500).collect::<HashSet<_>>());
    }

    #[test]
    fn a_panicking_task_comes_back_as_a_join_error() {
        quiet_expected_panics();
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let mut set = JoinSet::new();
                set.go(|| -> u32 { panic!("{EXPECTED} coroutine") });
                set.spawn(async { panic!("{EXPECTED} task") });
                for _ in 0..2 {
                    assert!(set.join_next().unwrap().unwrap_err().is_panic());
                }
                assert!(set.join_next().is_none());
            })
        });
    }

    #[test]
    fn dropping_the_set_aborts_every_task_in_it() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let drops = Drops::new();
            rt.run({
                let drops = drops.clone();
                move || {
                    let mut set = JoinSet::new();
                    for _ in 0..3 {
                        let token = drops.token();
                        set.go(move || {
                            let _token = token;
                            corio::sleep(Duration::from_secs(60));
                        });
                        let token = drops.token();
                        set.spawn(async move {
                            let _token = token;
                            corio::time::sleep_async(Duration::from_secs(60)).await;
                        });
                    }
                    corio::yield_now();
                    drop(set);
                }
            });
            wait_until("every task of the dropped set is gone", || drops.dropped() == 6);
        });
    }

    #[test]
    fn shutdown_aborts_every_task_and_leaves_the_set_empty() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let drops = Drops::new();
                let mut set = JoinSet::new();
                for _ in 0..4 {
                    let token = drops.token();
                    set.go(move || {
                        let _token = token;
                        corio::block_on(Gate::new().wait());
                    });
                }
                set.shutdown();
                assert!(set.is_empty());
                assert_eq!(drops.dropped(), 4);
            })
        });
    }

    #[test]
    fn abort_all_makes_unfinished_tasks_return_cancelled() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let mut set = JoinSet::new();
                set.go(|| 1);
                let first = set.join_next().unwrap().unwrap();
                set.go(|| 2);
                set.spawn(async { 3 });
                let mut quick = Vec::new();
                while quick.len() < 2 {
                    corio::yield_now();
                    quick.extend(set.try_join_next().map(Result::unwrap));
                }
                quick.sort();
                assert_eq!(quick, [2, 3]);
                set.go(|| {
                    corio::block_on(Gate::new().wait());
                    4
                });
                set.spawn(async {
                    Gate::new().wait().await;
                    5
                });
                set.abort_all();
                let mut rest = Vec::new();
                while let Some(res) = set.join_next() {
                    rest.push(res.map_err(|e| e.is_cancelled()));
                }
                assert_eq!(first, 1);
                assert_eq!(rest, [Err(true), Err(true)]);
            })
        });
    }

    #[test]
    fn local_tasks_join_through_the_set_like_the_others() {
        let rt = rt();
        let sum = within(EVENTUALLY, move || {
            rt.run(|| {
                let shared = std::rc::Rc::new(10u32);
                let mut set = JoinSet::new();
                let s = shared.clone();
                set.go_local(move || {
                    corio::yield_now();
                    *s + 1
                });
                let s = shared.clone();
                set.spawn_local(async move {
                    corio::yield_now_async().await;
                    *s + 2
                });
                let mut sum = 0;
                while let Some(res) = set.join_next() {
                    sum += res.unwrap();
                }
                sum
            })
        });
        assert_eq!(sum, 23);
    }

    #[test]
    fn the_abort_handle_returned_by_spawn_aborts_that_task_only() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let mut set = JoinSet::new();
                let abort = set.go(|| {
                    corio::sleep(Duration::from_secs(60));
                    0
                });
                set.go(|| 7);
                abort.abort();
                let mut results = Vec::new();
                while let Some(res) = set.join_next() {
                    results.push(res.map_err(|e| e.is_cancelled()));
                }
                results.sort();
                assert_eq!(results, [Ok(7), Err(true)]);
                assert!(abort.is_finished());
            })
        });
    }
}

#[test]
fn try_join_next_on_an_empty_set_is_none() {
    let mut set: JoinSet<()> = JoinSet::new();
    assert!(set.try_join_next().is_none());
    assert!(set.join_next().is_none());
}
