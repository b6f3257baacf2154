//! Where a timer-woken task goes: a task whose sleep ends runs next on its worker, before the
//! tasks already queued there (Go's `ready` puts a woken goroutine in its P's `runnext`), not
//! behind every one of them. Its lateness is then about one turn of whatever runs, not one turn
//! of everything queued.
//!
//! Observed by order, never by time: the queued tasks count their turns, and the sleeper reads
//! how many turns were taken between its deadline and its wake-up.

#[macro_use]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};

use support::{EVENTUALLY, within};

/// How many yielding tasks share the worker with the sleeper.
/// (Fewer than the run queue's 256 slots: tasks that overflow into the global queue are taken
/// one per 61 turns, and a sleeper woken from sysmon's thread queues behind them there.)
const YIELDERS: u64 = 250;

/// On one worker, a sleeping task and 250 tasks that yield on every turn: when the worker
/// fires the sleeper's timer, the sleeper runs within a few turns, not after the 249 tasks
/// queued ahead of it. (The worker reads the clock every 16 turns; sysmon fires the timer
/// instead if the worker is 200 µs late — a worker that took no 16 turns in that time — and
/// a task woken from sysmon's thread waits at most one global-queue check, every 61 turns:
/// either way under half of the 250. Before the fix: 202–216 turns of 200 yielders in 8
/// of 10 debug runs, the other 2 were sysmon's.)
#[test]
fn a_timer_woken_task_runs_before_the_tasks_queued_ahead_of_it() {
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        let stop = Arc::new(AtomicBool::new(false));
        let turns = Arc::new(AtomicU64::new(0));
        // The turn count when the first yielder saw the sleeper's deadline pass (u64::MAX
        // until then), and the deadline itself in ns since `base`.
        let at_deadline = Arc::new(AtomicU64::new(u64::MAX));
        let deadline_ns = Arc::new(AtomicU64::new(u64::MAX));
        let base = Instant::now();
        let (st, t, at, dl) = (
            stop.clone(),
            turns.clone(),
            at_deadline.clone(),
            deadline_ns.clone(),
        );
        let waited = rt.run(move || {
            const SLEEP: Duration = Duration::from_millis(20);
            let (t2, at2, dl2) = (t.clone(), at.clone(), dl.clone());
            // Spawned from the worker: it runs first (spawn slot) and its timer is this
            // worker's.
            let sleeper = corio::spawn(async move {
                dl2.store((base.elapsed() + SLEEP).as_nanos() as u64, SeqCst);
                corio::time::sleep_async(SLEEP).await;
                let now = t2.load(SeqCst);
                // Turns taken after the deadline, before this task ran again.
                now - at2.load(SeqCst).min(now)
            });
            let yielders: Vec<_> = (0..YIELDERS)
                .map(|_| {
                    let (st, t, at, dl) = (st.clone(), t.clone(), at.clone(), dl.clone());
                    corio::spawn(async move {
                        while !st.load(SeqCst) {
                            let turn = t.fetch_add(1, SeqCst);
                            if at.load(SeqCst) == u64::MAX
                                && base.elapsed().as_nanos() as u64 >= dl.load(SeqCst)
                            {
                                at.store(turn, SeqCst);
                            }
                            corio::yield_now_async().await;
                        }
                    })
                })
                .collect();
            let waited = corio::block_on(sleeper).unwrap();
            st.store(true, SeqCst);
            for y in yielders {
                corio::block_on(y).unwrap();
            }
            waited
        });
        assert!(
            waited < YIELDERS / 2,
            "the timer-woken task ran {waited} turns after its deadline, behind the tasks \
             queued ahead of it ({YIELDERS} yielders)"
        );
    });
}
