//! A coroutine that was woken but not yet run when its runtime shut down, and whose unwinding
//! then blocks in a destructor: the shutdown must resume it exactly as often as its wakes ask.
//!
//! The suspicion ("possible stale NOTIFIED double-queue after a shutdown race") is this:
//! shutdown takes over an idle task with `transition_to_shutdown`, which sets `RUNNING` but
//! leaves a pending `NOTIFIED` (whose `Notified` still sits in a queue). When the cancellation
//! blocks, `transition_to_idle` reads that stale `NOTIFIED` as a wake during the poll and queues
//! a second `Notified`, so two exist for one task: one extra resume of the unwinding coroutine,
//! and, in debug builds, the "running a task that was not notified" assertion when the second
//! is taken.
//!
//! Confirmed (2026-12-02, debug build, first round): the worker panicked with "running a task
//! that was not notified" (`task/state.rs`, `transition_to_running`), the coroutine was then
//! leaked ("kept blocking while being cancelled at shutdown") and its destructor never
//! finished. Release build, first round: the destructor's wait was polled 4 times, not 2 (two
//! spurious resumes of the unwinding coroutine). Fixed in `task/state.rs`: `transition_to_shutdown` clears
//! `NOTIFIED` when it takes an idle task, and `transition_to_running` drops the reference of a
//! `Notified` that finds it clear (a stale one) instead of running the task.

#[macro_use]
mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll};
use std::time::Duration;

use support::{CountPolls, EVENTUALLY, Gate, wait_until, within};

/// While the coroutine holding it unwinds, waits for `release` (counting the polls of that
/// wait), then records that it finished.
struct BlockInDrop {
    release: Gate,
    polls: Arc<AtomicUsize>,
    finished: Arc<AtomicBool>,
}

impl Drop for BlockInDrop {
    fn drop(&mut self) {
        corio::block_on(CountPolls::new(self.polls.clone(), self.release.wait()));
        self.finished.store(true, SeqCst);
    }
}

/// Pending until `gate` opens; counts its polls (so that the test knows the coroutine waits).
struct Waiting {
    gate: support::GateWait,
    polled: Arc<AtomicBool>,
}

impl Future for Waiting {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let r = Pin::new(&mut self.gate).poll(cx);
        self.polled.store(true, SeqCst);
        r
    }
}

/// One round: a coroutine C waits on a gate; a second coroutine B occupies the (only) worker;
/// the gate opens (C is now notified and queued, but B holds the worker); the runtime is
/// dropped and B returns only after the shutdown has begun. The worker's shutdown drain then
/// cancels C, whose destructor blocks until the test releases it.
///
/// Returns how many times the destructor's wait was polled: once before it blocks and once
/// after its release, 2 in all, whatever the interleaving.
fn one_round() -> usize {
    let rt = support::rt(1);
    let wake = Gate::new();
    let release = Gate::new();
    let polls = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicBool::new(false));
    let polled = Arc::new(AtomicBool::new(false));
    let guard = BlockInDrop {
        release: release.clone(),
        polls: polls.clone(),
        finished: finished.clone(),
    };
    let waiting = Waiting {
        gate: wake.wait(),
        polled: polled.clone(),
    };
    drop(rt.go(move || {
        let _guard = guard;
        corio::block_on(waiting);
        // Woken, it would return here and run the destructor without blocking for long; the
        // round only means something when the shutdown got there first (it usually does).
    }));
    wait_until("C waits", || polled.load(SeqCst));
    let spinning = Arc::new(AtomicBool::new(false));
    let go_on = Arc::new(AtomicBool::new(false));
    let (s, g) = (spinning.clone(), go_on.clone());
    drop(rt.go(move || {
        s.store(true, SeqCst);
        while !g.load(SeqCst) {
            std::hint::spin_loop();
        }
        // Hold the worker a little longer, so that the drop below has begun the shutdown
        // when the worker next looks.
        std::thread::sleep(Duration::from_millis(20));
    }));
    wait_until("B holds the worker", || spinning.load(SeqCst));
    wake.open(); // C: notified, queued behind B
    let p = polls.clone();
    let releaser = std::thread::spawn(move || {
        wait_until("C's destructor blocks", || p.load(SeqCst) >= 1);
        // Let a spurious resume, if any, happen before the release.
        std::thread::sleep(Duration::from_millis(20));
        release.open();
    });
    go_on.store(true, SeqCst);
    drop(rt);
    releaser.join().unwrap();
    assert!(
        finished.load(SeqCst),
        "C's destructor did not finish during the shutdown"
    );
    polls.load(SeqCst)
}

#[test]
fn a_woken_coroutine_whose_unwinding_blocks_at_shutdown_is_resumed_only_by_its_wakes() {
    within(EVENTUALLY * 4, || {
        for round in 0..50 {
            let polls = one_round();
            assert_eq!(
                polls, 2,
                "round {round}: the destructor's wait was polled {polls} times"
            );
        }
    });
}
