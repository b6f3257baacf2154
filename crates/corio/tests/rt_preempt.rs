//! Cooperative preemption and hand-off (DESIGN.md decision 3): a coroutine that runs a whole
//! time slice is asked to yield at its next runtime operation, and work queued behind a
//! coroutine that never yields is moved to another (possibly spare) worker.
//!
//! Each test's hog spins until the work it is blocking has been done, with a 10 s cap: if the
//! mechanism failed, the cap would expire and the test fail; nothing is timed otherwise.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use corio::chan::{Receiver, Sender};
use support::{EVENTUALLY, within};

const CAP: Duration = Duration::from_secs(10);

/// Spins for about `d` without any runtime call.
fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// One worker: a coroutine alternating 2 ms of computation with a runtime operation that never
/// blocks (`sleep(0)`) uses one unit of its coop budget (128) per operation, so within a few
/// operations only sysmon's preempt flag (set after a 10 ms slice) can make that operation
/// yield to the other coroutine waiting on the same worker. Returns how many operations the
/// hog made before the other ran (at most 128 + 1 if only the budget made it yield).
fn operations_before_the_other_coroutine_runs(rt: &corio::Runtime) -> u32 {
    operations_before_the_other_coroutine_runs_with(rt, || corio::sleep(Duration::ZERO))
}

/// As [`operations_before_the_other_coroutine_runs`], with `op` as the runtime operation.
fn operations_before_the_other_coroutine_runs_with(rt: &corio::Runtime, op: fn()) -> u32 {
    let other_ran = Arc::new(AtomicBool::new(false));
    let o = other_ran.clone();
    let hog = rt.go(move || {
        // Spawned from here, the other coroutine waits in this worker's own run queue. (From a
        // plain thread it would wait in the global queue, which a busy worker checks only every
        // 61 rounds, as Go's does.)
        let o2 = o.clone();
        let other = corio::go(move || o2.store(true, SeqCst));
        let start = Instant::now();
        let mut ops = 0;
        while !o.load(SeqCst) && start.elapsed() < CAP {
            spin(Duration::from_millis(2));
            op();
            ops += 1;
        }
        other.join().unwrap();
        ops
    });
    let ops = hog.join().unwrap();
    assert!(
        other_ran.load(SeqCst),
        "the other coroutine never ran while the hog computed for {CAP:?}"
    );
    ops
}

/// On a runtime that has settled (its workers and sysmon asleep), the hog is preempted after a
/// slice, long before its coop budget runs out.
#[test]
fn a_coroutine_that_runs_a_whole_slice_yields_at_its_next_runtime_operation() {
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        std::thread::sleep(Duration::from_millis(50));
        let ops = operations_before_the_other_coroutine_runs(&rt);
        assert!(
            ops < 100,
            "it was the coop budget ({ops} operations), not the preempt flag"
        );
    });
}

/// Issue 11 part 2: a blocking-style call whose future is ready at once (here `block_on` of a
/// ready future; a channel `recv` with a value waiting is the same) is a preemption point.
#[test]
fn a_coroutine_that_runs_a_whole_slice_yields_at_its_next_block_on() {
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        std::thread::sleep(Duration::from_millis(50));
        let ops = operations_before_the_other_coroutine_runs_with(&rt, || {
            corio::block_on(std::future::ready(()))
        });
        assert!(ops < 100, "block_on never yielded ({ops} operations)");
    });
}

/// A channel `send` that finds room and a `recv` that finds a value complete without building
/// a future (`block_on_ready_first`), and are still preemption points, each on its own (one
/// channel per test: the tests of this file run in parallel).
#[test]
fn a_coroutine_that_runs_a_whole_slice_yields_at_its_next_channel_send() {
    static CHAN: LazyLock<(Sender<u8>, Receiver<u8>)> = LazyLock::new(corio::chan::unbounded);
    assert_yields_at("a send with room", || {
        CHAN.0.send(1).unwrap();
        assert_eq!(CHAN.1.try_recv(), Ok(1));
    });
}

/// As above, for a receive.
#[test]
fn a_coroutine_that_runs_a_whole_slice_yields_at_its_next_channel_recv() {
    static CHAN: LazyLock<(Sender<u8>, Receiver<u8>)> = LazyLock::new(corio::chan::unbounded);
    assert_yields_at("a receive with a value there", || {
        CHAN.0.try_send(1).unwrap();
        assert_eq!(CHAN.1.recv(), Ok(1));
    });
}

/// On a settled runtime, the hog is preempted at `op` after a slice.
fn assert_yields_at(what: &'static str, op: fn()) {
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        std::thread::sleep(Duration::from_millis(50));
        let ops = operations_before_the_other_coroutine_runs_with(&rt, op);
        assert!(ops < 100, "{what} never yielded ({ops} operations)");
    });
}

/// Issue 11 part 2: spawning is a preemption point, so a spawning loop is preempted (it was
/// not, and was reported as a hog).
#[test]
fn a_coroutine_that_runs_a_whole_slice_yields_at_its_next_spawn() {
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        std::thread::sleep(Duration::from_millis(50));
        let ops = operations_before_the_other_coroutine_runs_with(&rt, || drop(corio::go(|| ())));
        assert!(ops < 100, "go never yielded ({ops} operations)");
    });
}

/// The same on fresh runtimes, given work at once: a worker that finds work before it ever
/// parks must still be watched by sysmon. Twenty fresh runtimes, so that the start-up race
/// (sysmon finding every worker idle before the first one marks itself running) is hit.
///
/// An attempt in which sysmon's thread spent half the time or more waiting for a CPU says
/// nothing about the runtime, and is made again (up to [`STARVED_ATTEMPTS`] times): a loaded
/// machine kept sysmon off the CPUs for 200 ms once, the hog ran its 100 operations
/// meanwhile, and no flag could be set. The waiting is the kernel's own count (`run_delay`),
/// so a sysmon that sleeps when it should watch — the start-up race — still fails the test.
#[test]
fn a_fresh_runtimes_first_coroutine_is_preempted_after_a_slice() {
    within(Duration::from_secs(120), || {
        let mut starved = 0;
        let mut attempt = 0;
        while attempt < 20 {
            let prefix = format!("fresh{}", attempt + starved);
            let rt = corio::Runtime::builder()
                .workers(1)
                .hog_report(false)
                .thread_name(&prefix)
                .build()
                .expect("cannot build a runtime");
            let sysmon = sysmon_tid(&prefix);
            let (waited_before, start) = (run_delay(sysmon), Instant::now());
            let ops = operations_before_the_other_coroutine_runs(&rt);
            let (sysmon_waited, took) = (run_delay(sysmon) - waited_before, start.elapsed());
            if ops >= 100 && sysmon_waited >= took / 2 && starved < STARVED_ATTEMPTS {
                starved += 1;
                continue;
            }
            assert!(
                ops < 100,
                "attempt {attempt}: not preempted; the coop budget ended the slice after {ops} \
                 operations (in {took:?}, of which sysmon waited {sysmon_waited:?} for a CPU)"
            );
            attempt += 1;
        }
    });
}

/// Attempts of [`a_fresh_runtimes_first_coroutine_is_preempted_after_a_slice`] made again
/// because sysmon was starved of CPU time, at most.
const STARVED_ATTEMPTS: usize = 20;

/// The kernel id of the sysmon thread of the runtime whose threads are named `prefix`.
fn sysmon_tid(prefix: &str) -> u32 {
    let mut tid = None;
    support::wait_until("the runtime's sysmon thread is there", || {
        tid = support::threads_named(prefix)
            .iter()
            .find(|t| t.comm.ends_with("-sysmon"))
            .map(|t| t.tid);
        tid.is_some()
    });
    tid.unwrap()
}

/// How long the thread `tid` of this process has waited for a CPU while it could run
/// (`run_delay`, the second field of `/proc/self/task/<tid>/schedstat`).
fn run_delay(tid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .expect("/proc/self/task/<tid>/schedstat");
    let ns = stat
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .expect("run_delay in schedstat");
    Duration::from_nanos(ns)
}

/// Spawns `n` tasks, each counting itself done in `done` when it runs.
fn queue_counting_tasks(done: &Arc<AtomicUsize>, n: usize) -> Vec<corio::JoinHandle<()>> {
    (0..n)
        .map(|_| {
            let d = done.clone();
            corio::spawn(async move {
                d.fetch_add(1, SeqCst);
            })
        })
        .collect()
}

/// Spins, without any runtime call, until `done` reaches `n` or `CAP` has passed.
fn hog_until(done: &AtomicUsize, n: usize) {
    let start = Instant::now();
    while done.load(SeqCst) < n && start.elapsed() < CAP {
        std::hint::spin_loop();
    }
}

/// Two workers, both hogged by coroutines that never call the runtime; tasks queued behind the
/// first hog on its worker must still run — moved by sysmon to a spare worker. Returns how many
/// of the queued tasks ran while the hogs spun.
fn tasks_done_behind_two_hogs(rt: &corio::Runtime) -> usize {
    const TASKS: usize = 10;
    let done = Arc::new(AtomicUsize::new(0));
    let first_spinning = Arc::new(AtomicBool::new(false));
    let (d, f) = (done.clone(), first_spinning.clone());
    let first = rt.go(move || {
        let queued = queue_counting_tasks(&d, TASKS);
        f.store(true, SeqCst);
        hog_until(&d, TASKS);
        drop(queued);
        d.load(SeqCst)
    });
    support::wait_until("the first hog spins", || first_spinning.load(SeqCst));
    let d = done.clone();
    let second = rt.go(move || hog_until(&d, TASKS));
    let finished = first.join().unwrap();
    second.join().unwrap();
    finished
}

#[test]
fn work_queued_behind_hogs_on_every_worker_is_handed_to_a_spare_worker() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            tasks_done_behind_two_hogs(&rt),
            10,
            "tasks stayed stuck behind the hogs"
        );
    });
}

#[test]
fn work_queued_behind_hogs_on_a_fresh_runtime_is_handed_to_a_spare_worker() {
    within(Duration::from_secs(120), || {
        for attempt in 0..5 {
            let rt = support::rt(2);
            let done = tasks_done_behind_two_hogs(&rt);
            assert_eq!(
                done, 10,
                "attempt {attempt}: tasks stayed stuck behind the hogs for {CAP:?}"
            );
        }
    });
}

/// Keeps `rt`'s workers parking and waking for short spells for ~100 ms (sleeps of 1 ms), so
/// that sysmon, which sleeps without a timeout only after every worker has been idle for 20 ms,
/// keeps ticking throughout and backs its delay off towards 10 ms; then idles 5 ms (a spell
/// too short for sysmon to go to sleep). What follows starts with sysmon ticking at a
/// backed-off delay and not woken by the worker (`sysmon.rs`, `DEEP_SLEEP_AFTER`).
fn after_short_idle_spells(rt: &corio::Runtime) {
    rt.run(|| {
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(100) {
            corio::sleep(Duration::from_millis(1));
        }
    });
    std::thread::sleep(Duration::from_millis(5));
}

/// A hog that starts after short idle spells, while sysmon ticks at its backed-off delay
/// instead of being woken by the worker, is still preempted after a slice.
#[test]
fn a_hog_that_starts_after_short_idle_spells_is_preempted_after_a_slice() {
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        after_short_idle_spells(&rt);
        let ops = operations_before_the_other_coroutine_runs(&rt);
        assert!(
            ops < 100,
            "it was the coop budget ({ops} operations), not the preempt flag"
        );
    });
}

/// Work queued behind hogs that start after short idle spells is still handed off.
#[test]
fn work_queued_behind_hogs_after_short_idle_spells_is_handed_to_a_spare_worker() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        after_short_idle_spells(&rt);
        assert_eq!(
            tasks_done_behind_two_hogs(&rt),
            10,
            "tasks stayed stuck behind the hogs"
        );
    });
}

/// Two workers, one hogged by a coroutine that never calls the runtime, the other inside
/// `corio::blocking` with tasks queued behind it: sysmon must hand those tasks to a spare
/// worker. Returns how many ran while the hog spun and the blocking call waited for them.
fn tasks_done_behind_a_blocking_call_and_a_hog(rt: &corio::Runtime) -> usize {
    const TASKS: usize = 10;
    let done = Arc::new(AtomicUsize::new(0));
    let hog_spinning = Arc::new(AtomicBool::new(false));
    let (d, h) = (done.clone(), hog_spinning.clone());
    let hog = rt.go(move || {
        h.store(true, SeqCst);
        hog_until(&d, TASKS);
    });
    support::wait_until("the hog spins", || hog_spinning.load(SeqCst));
    let d = done.clone();
    let blocker = rt.go(move || {
        let queued = queue_counting_tasks(&d, TASKS);
        corio::blocking(|| {
            let start = Instant::now();
            while d.load(SeqCst) < TASKS && start.elapsed() < CAP {
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        drop(queued);
        d.load(SeqCst)
    });
    let finished = blocker.join().unwrap();
    hog.join().unwrap();
    finished
}

/// A worker blocked in `corio::blocking` after short idle spells (sysmon ticking at its
/// backed-off delay, not woken by the worker) still has its queued work handed off.
#[test]
fn work_queued_behind_a_blocking_call_after_short_idle_spells_is_handed_off() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        after_short_idle_spells(&rt);
        assert_eq!(
            tasks_done_behind_a_blocking_call_and_a_hog(&rt),
            10,
            "tasks stayed stuck behind the blocking call"
        );
    });
}

/// Spins with no runtime call until `go_on` is set (true) or 5 s have passed (false).
fn spin_until(go_on: &AtomicBool) -> bool {
    let start = Instant::now();
    while !go_on.load(SeqCst) {
        if start.elapsed() > Duration::from_secs(5) {
            return false;
        }
        std::hint::spin_loop();
    }
    true
}

/// As [`a_preempted_coroutine_is_not_stranded_behind_movable_work_while_a_worker_is_idle`],
/// with no worker idle: the other worker is busy. A coroutine preempted at a spawn, with
/// the child it spawned before waiting in its worker's spawn slot, goes on for one more slice
/// while that child waits in the global queue. Before, the child ran first, and a child that
/// spun waiting for its sibling (which the preempted parent was about to spawn) kept the
/// worker for good: `rt_go_proc_suite`'s 4-worker parallelism test hung so about once in 500
/// runs under load, with every other worker busy finishing its task.
#[test]
fn a_coroutine_preempted_at_a_spawn_is_not_stranded_behind_its_child_while_no_worker_is_idle() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        rt.run(|| {
            let here = std::thread::current().id();
            let go_on = Arc::new(AtomicBool::new(false));
            // A busy coroutine on the other worker, so that no worker is idle: `spread` places
            // by live count, on the spawner's worker on a tie, so a first one that waits stays
            // here. It yields all the time, so that the only slice sysmon ends is this one.
            // It starts before the rest goes on: not started, it would be queued here (a
            // `spread` coroutine is pinned from birth) when this one's slice ends.
            let (stay_tx, stay_rx) = corio::chan::bounded::<()>(0);
            let (stays_tx, stays_rx) = corio::chan::bounded::<()>(1);
            let staying = corio::Builder::new()
                .spread()
                .spawn(move || {
                    stays_tx.send(()).unwrap();
                    let _ = stay_rx.recv();
                })
                .unwrap();
            stays_rx.recv().unwrap();
            let (started_tx, started_rx) = corio::chan::bounded(1);
            let g = go_on.clone();
            let busy = corio::Builder::new()
                .spread()
                .spawn(move || {
                    started_tx.send(std::thread::current().id()).unwrap();
                    let start = Instant::now();
                    while !g.load(SeqCst) && start.elapsed() < CAP {
                        corio::yield_now();
                    }
                })
                .unwrap();
            assert_ne!(started_rx.recv().unwrap(), here, "busy on the other worker");
            let g = go_on.clone();
            // A pure spinner: no runtime call until its parent has gone on.
            let child = corio::go(move || spin_until(&g));
            // Run until sysmon ends this slice, with no runtime call.
            let ended = corio::Handle::current().metrics().slices_ended;
            let start = Instant::now();
            while corio::Handle::current().metrics().slices_ended == ended {
                assert!(start.elapsed() < CAP, "sysmon never ended the slice");
                std::hint::spin_loop();
            }
            let sibling = corio::go(|| ()); // the preemption point
            go_on.store(true, SeqCst);
            assert!(
                child.join().unwrap(),
                "the preempted coroutine waited 5 s behind the child it had spawned"
            );
            sibling.join().unwrap();
            busy.join().unwrap();
            drop(stay_tx);
            staying.join().unwrap();
        });
    });
}

/// A coroutine whose time slice sysmon ended yields at its next preemption point; when the
/// only work queued ahead of it on its worker is movable and another worker is idle, that work
/// goes to the idle worker and the coroutine goes on. Before, its worker started the movable
/// task first, and a task that then spun waiting for the preempted coroutine (a pure spinner,
/// as Go's `TestGoroutineParallelism2` has) kept the worker for good: a started coroutine
/// cannot move, so it was stranded behind its own child while the other worker slept.
/// `rt_go_proc_suite`'s parallelism test hung so under load (a spawner preempted at its
/// second spawn, the first child in the spawn slot); here a woken async task stands in the
/// next-task slot, which makes the order exact: the coroutine wakes the task and yields only
/// after sysmon has ended its slice.
#[test]
fn a_preempted_coroutine_is_not_stranded_behind_movable_work_while_a_worker_is_idle() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        rt.run(|| {
            let notify = Arc::new(corio::sync::Notify::new());
            let go_on = Arc::new(AtomicBool::new(false));
            let waiting = Arc::new(AtomicBool::new(false));
            let (n, g, w) = (notify.clone(), go_on.clone(), waiting.clone());
            let spinner = corio::spawn(async move {
                let notified = n.notified_async();
                w.store(true, SeqCst);
                notified.await;
                // A pure spinner: no runtime call until the coroutine has gone on.
                spin_until(&g)
            });
            while !waiting.load(SeqCst) {
                corio::yield_now();
            }
            // Run until sysmon ends this slice, with no runtime call.
            let ended = corio::Handle::current().metrics().slices_ended;
            let start = Instant::now();
            while corio::Handle::current().metrics().slices_ended == ended {
                assert!(start.elapsed() < CAP, "sysmon never ended the slice");
                std::hint::spin_loop();
            }
            notify.notify_one(); // the task goes to this worker's next-task slot
            corio::yield_now(); // the preemption point
            go_on.store(true, SeqCst);
            assert!(
                spinner.join().unwrap(),
                "the preempted coroutine waited 5 s behind the task it had woken"
            );
        });
    });
}
