//! The cooperative budget: where it applies and what must not be bounded by it.
//!
//! On a worker, every runtime operation takes one unit of a task's budget and yields once it is
//! spent, so one task cannot hold a worker for ever. Two things must stay outside it: a
//! timeout's own deadline (else a future that spends the budget keeps its timeout from ever
//! firing), and code off the workers (a blocking-pool thread has nobody to be fair to, and no
//! scheduler that would ever refill a budget there).

#[macro_use]
mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

use corio::time;
use support::{EVENTUALLY, within};

const MS: Duration = Duration::from_millis(1);

/// A future that never completes and spends the budget as fast as it can: each zero sleep is
/// ready at once until the budget is spent.
async fn spend_budget_for_ever() {
    loop {
        time::sleep_async(Duration::ZERO).await;
    }
}

/// A minimal executor that is not corio's (like `futures::executor::block_on`): polls, and
/// parks the thread until woken.
fn foreign_block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

rt_common! {
    /// Issue 8, bug 3: `Timeout` polled its own `Sleep`, which said `Pending` on a spent budget
    /// before it looked at the deadline, so the timeout never fired (tokio checks the deadline
    /// outside the budget in `Timeout::poll` for the same reason).
    #[test]
    fn a_timeout_fires_while_its_future_spends_the_whole_budget_in_a_task() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let res = rt.spawn(time::timeout_async(MS, spend_budget_for_ever())).join();
            assert!(res.unwrap().is_err());
        });
    }

    /// Issue 8, bug 3, the blocking-style `timeout` in a coroutine.
    #[test]
    fn a_timeout_fires_while_its_future_spends_the_whole_budget_in_a_coroutine() {
        let rt = rt();
        within(EVENTUALLY, move || {
            assert!(rt.run(|| time::timeout(MS, spend_budget_for_ever())).is_err());
        });
    }

    /// A timeout whose deadline has passed still lets its task yield when the budget is
    /// spent: it is the inner future's spending that the deadline check ignores, not the
    /// timeout's own (a loop of expired timeouts would otherwise never yield).
    #[test]
    fn a_loop_of_expired_timeouts_still_yields_to_other_tasks() {
        let rt = rt();
        within(EVENTUALLY, move || {
            // The looper spawns the task that stops it after its first timeout: on one worker
            // that task runs only if the loop yields. (Spawned from outside, it could run on
            // the second worker before the loop's first round, which then made none.)
            let looper = rt.spawn(async move {
                let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let mut n = 0u64;
                let mut setter = None;
                while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                    let pending = std::future::pending::<()>();
                    assert!(time::timeout_async(Duration::ZERO, pending).await.is_err());
                    n += 1;
                    if n == 1 {
                        let flag = flag.clone();
                        setter = Some(corio::spawn(async move {
                            flag.store(true, std::sync::atomic::Ordering::SeqCst);
                        }));
                    }
                }
                (n, setter)
            });
            let (n, setter) = looper.join().unwrap();
            setter.expect("spawned at the first round").join().unwrap();
            assert!(n > 0);
        });
    }

    /// Issue 8, bug 4: a `spawn_blocking` closure got one budget of 128 for its whole life;
    /// the 129th poll of a corio future said `Pending` and woke itself, for ever (tokio has no
    /// budget on blocking threads).
    #[test]
    fn a_spawn_blocking_closure_is_not_bounded_by_a_budget() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let n = rt.block_on(async {
                corio::spawn_blocking(|| {
                    let mut n = 0;
                    for _ in 0..1_000 {
                        corio::block_on(time::sleep_async(Duration::ZERO));
                        n += 1;
                    }
                    n
                })
                .await
                .unwrap()
            });
            assert_eq!(n, 1_000);
        });
    }

    /// Issue 8, bug 4: a foreign executor run inside `corio::blocking` in a task polls corio
    /// futures within that task's poll; the budget must not bound it (tokio disables its
    /// budget in `block_in_place`).
    #[test]
    fn a_foreign_executor_inside_blocking_in_a_task_is_not_bounded_by_a_budget() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let n = rt
                .spawn(async {
                    corio::blocking(|| {
                        let mut n = 0;
                        for _ in 0..1_000 {
                            foreign_block_on(time::sleep_async(Duration::ZERO));
                            n += 1;
                        }
                        n
                    })
                })
                .join()
                .unwrap();
            assert_eq!(n, 1_000);
        });
    }

    /// After `corio::blocking` returns, the task is on a budget again: a task that spends it
    /// lets another task on its worker run.
    #[test]
    fn the_budget_applies_again_after_blocking_returns() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let f = flag.clone();
            let spinner = rt.spawn(async move {
                corio::blocking(|| ());
                while !f.load(std::sync::atomic::Ordering::SeqCst) {
                    time::sleep_async(Duration::ZERO).await;
                }
            });
            rt.spawn(async move { flag.store(true, std::sync::atomic::Ordering::SeqCst) })
                .join()
                .unwrap();
            spinner.join().unwrap();
        });
    }
}
