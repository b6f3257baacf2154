//! Go 1.19's scheduler tests (`src/runtime/proc_test.go`), ported to corio to look for
//! behaviour bugs, with the adversarial mixes a reviewer adds around them.
//!
//! The mapping:
//!
//! - a goroutine is a stackful coroutine (`corio::go`), some ports use async tasks too;
//!   `runtime.Gosched` is `corio::yield_now`; `GOMAXPROCS(n)` is `workers(n)`: most tests run
//!   on one and two workers (`rt_common!`);
//! - Go's function-call preemption point (the `preempt()` its tests spin on) is a runtime call
//!   that never waits, `corio::block_on` of a ready future: docs/scheduler.md ("sysmon,
//!   preemption and blocking calls") promises that after a 10 ms slice sysmon's flag makes the
//!   next such call yield;
//! - a loop *without* any runtime call is not preempted in corio unless its coroutine is
//!   marked preemptible (signal preemption, x86_64 Linux, `unsafe`): the docs promise only
//!   that *movable* work behind such a hog (async tasks, coroutines not started yet, an async
//!   task whose timer sysmon fires) is handed to another worker, and that coroutines pinned to
//!   the hog's thread wait for it. That, and no more, is what the tight-loop tests assert;
//! - `runtime.LockOSThread` has no equivalent: a started coroutine never changes thread, so
//!   where Go's tests lock a goroutine, these check that the coroutine stays on its thread;
//! - progress is counted, never timed: no test asserts an upper bound on time; starvation or
//!   a lost wake-up shows as a count that stops moving, caught after `EVENTUALLY`.
//!
//! Ported here: TestGoroutineParallelism, TestGoroutineParallelism2 (with its load and
//! netpoll variants), TestPreemption (runtime-call and signal-preempted forms),
//! TestSchedLocalQueueEmpty (its user-visible half: a runnable task and an idle worker do not
//! coexist), TestNetpollBreak (a worker asleep in the driver is woken by a wake, a spawn and a
//! socket), TestStopTheWorldDeadlock (a perpetual spawn chain beside whole-runtime
//! inspections), TestBigGOMAXPROCS, TestYieldLockedProgress (as the yielders' thread checks),
//! and BenchmarkPingPongHog's shape (a ping-pong pair beside a lone coroutine) as a test.
//!
//! Added: a ping-pong pair against a lone yielder, sleeper or spinner on one and two workers;
//! yielding coroutines against timers and woken coroutines; wake-ups from plain threads while
//! every worker is busy; a spawn storm from several coroutines, tasks and a plain thread in
//! which every task runs exactly once; movable work and timer-woken tasks behind a tight loop.

// Not ported, one Go test per line, with the reason:
//
// - TestYieldProgress, TestBlockLocked, TestTimerFairness, TestTimerFairness2,
//   TestPreemptionGC, TestPreemptionAfterSyscall, TestGCFairness, TestGCFairness2,
//   TestNumGoroutine, TestStealOrder's promise: sched_review_contract.rs ports them.
// - TestPingPongHog (two pairs on one worker within a factor of 20): rt_fairness.rs.
// - TestYieldLocked (yield and sleep in turn, locked): rt_pinning.rs
//   `a_coroutine_that_yields_and_sleeps_in_turn_stays_on_its_thread`.
// - TestAsyncPreempt (a pure loop preempted by signal): rt_preempt_signal.rs; here only the
//   two-spinner TestPreemption shape on preemptible coroutines.
// - TestSchedLocalQueue, TestSchedLocalQueueSteal, TestStealOrder's enumeration: tests of
//   Go's internal ring and its random-order iterator; corio's ring is crate-private and has
//   unit tests of its own.
// - TestLockOSThreadNesting, TestLockOSThreadExit, TestLockOSThreadAvoidsStatePropagation,
//   TestLockOSThreadTemplateThreadRace: no LockOSThread; the thread property is checked in the
//   tests below and in rt_pinning.rs.
// - TestPreemptSplitBig: Go's stack-split prologue; corio's stacks are fixed (guard pages).
// - TestGetgThreadSwitch: Go-internal (`getg` across a thread switch).

#[macro_use]
mod support;

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use corio::chan;
use support::{Baton, EVENTUALLY, Gate, holds_within, within};

/// A runtime call that never waits: `block_on` of a ready future, a preemption point
/// (docs/scheduler.md, "sysmon, preemption and blocking calls"), the analogue of the function
/// call Go's preemption tests spin on.
fn runtime_call() {
    corio::block_on(std::future::ready(()));
}

fn here() -> ThreadId {
    std::thread::current().id()
}

/// `n` increments the optimiser cannot remove: a turn's worth of work.
fn work(n: u64) {
    let mut x = 0u64;
    for _ in 0..n {
        x = std::hint::black_box(x + 1);
    }
    std::hint::black_box(x);
}

/// Waits on a plain thread until `cond` holds, spinning with `yield_now` at first (the
/// answer usually comes within microseconds), then sleeping 100 µs between looks; false if it
/// did not hold within `PROGRESS_LIMIT`.
fn answered(mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    let mut looks = 0u32;
    while !cond() {
        if start.elapsed() > PROGRESS_LIMIT {
            return false;
        }
        looks += 1;
        if looks < 1_000 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    true
}

/// The part of `EVENTUALLY` a test waits for progress before it stops and reports the counts
/// (the rest is left for the shutdown, so that the report, not the watchdog, fails the test).
const PROGRESS_LIMIT: Duration = Duration::from_secs(20);

// ----- parallelism (Go's TestGoroutineParallelism, TestGoroutineParallelism2) ---------------

/// `p` coroutines on `p` workers take strict turns on a shared counter, spinning without a
/// single runtime call between looks: they can only finish if all `p` run at the same time.
/// `nested`: spawned two by two from short-lived parents (TestGoroutineParallelism2);
/// `load`: each try starts with `p` coroutines that wait for each other, so that the workers
/// are starting to park when the real ones come; `netpoll`: a coroutine waits in `accept` on
/// a listener meanwhile, so the netpoller is in use.
fn spinners_take_turns_on_p_workers(
    p: usize,
    tries: usize,
    nested: bool,
    load: bool,
    netpoll: bool,
) {
    let rt = support::rt(p);
    within(EVENTUALLY, move || {
        rt.run(move || {
            let acceptor = netpoll.then(|| {
                let listener = corio::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                (addr, corio::go(move || drop(listener.accept().unwrap())))
            });
            for _ in 0..tries {
                if load {
                    let x = Arc::new(AtomicUsize::new(0));
                    let (done_tx, done_rx) = chan::unbounded::<()>();
                    let loaders: Vec<_> = (0..p)
                        .map(|_| {
                            let (x, done) = (x.clone(), done_tx.clone());
                            corio::go(move || {
                                if x.fetch_add(1, SeqCst) + 1 == p {
                                    done.send(()).unwrap();
                                    return;
                                }
                                while x.load(SeqCst) != p {
                                    std::hint::spin_loop();
                                }
                            })
                        })
                        .collect();
                    done_rx.recv().unwrap();
                    for l in loaders {
                        l.join().unwrap();
                    }
                }
                let x = Arc::new(AtomicUsize::new(0));
                let (done_tx, done_rx) = chan::unbounded::<ThreadId>();
                let spinner =
                    move |id: usize, x: Arc<AtomicUsize>, done: chan::Sender<ThreadId>| {
                        let home = here();
                        for i in 0..3 {
                            let expected = p * i + id;
                            while x.load(SeqCst) != expected {
                                std::hint::spin_loop();
                            }
                            x.store(expected + 1, SeqCst);
                        }
                        assert_eq!(here(), home, "spinner {id} changed thread");
                        done.send(home).unwrap();
                    };
                if nested {
                    for parent in 0..p / 2 {
                        let (x, done) = (x.clone(), done_tx.clone());
                        drop(corio::go(move || {
                            for child in 0..2 {
                                let (x, done) = (x.clone(), done.clone());
                                drop(corio::go(move || spinner(parent * 2 + child, x, done)));
                            }
                        }));
                    }
                } else {
                    for id in 0..p {
                        let (x, done) = (x.clone(), done_tx.clone());
                        drop(corio::go(move || spinner(id, x, done)));
                    }
                }
                let threads: HashSet<ThreadId> = (0..p).map(|_| done_rx.recv().unwrap()).collect();
                assert_eq!(
                    threads.len(),
                    p,
                    "{p} spinners ran at once on fewer threads"
                );
                assert_eq!(x.load(SeqCst), 3 * p);
            }
            if let Some((addr, accepted)) = acceptor {
                drop(corio::net::TcpStream::connect(addr).unwrap());
                accepted.join().unwrap();
            }
        });
    });
}

/// Go's `TestGoroutineParallelism`: two spinners on two workers.
#[test]
fn goroutine_parallelism_two_spinners_on_two_workers() {
    spinners_take_turns_on_p_workers(2, 5, false, false, false);
}

/// Go's `TestGoroutineParallelism` in its short form: three spinners on three workers.
#[test]
fn goroutine_parallelism_three_spinners_on_three_workers() {
    spinners_take_turns_on_p_workers(3, 3, false, false, false);
}

/// Go's `TestGoroutineParallelism2`: spawned two by two from short-lived parents, after a
/// round of coroutines that wait for each other (load), with and without the netpoller in use.
#[test]
fn goroutine_parallelism2_nested_spawns_after_load_and_with_the_netpoller() {
    spinners_take_turns_on_p_workers(2, 3, true, true, false);
    spinners_take_turns_on_p_workers(2, 3, true, false, true);
    spinners_take_turns_on_p_workers(4, 2, true, true, true);
}

// ----- preemption (Go's TestPreemption) -----------------------------------------------------

mod preemption {
    use super::*;

    rt_common! {
        /// Go's `TestPreemption`: two coroutines take strict turns on a shared counter, each
        /// spinning on a runtime call while it waits. On one worker every turn needs the waiting
        /// one preempted (sysmon's flag, honoured at its next runtime call); on two they may also
        /// run at once. Both stay on their threads.
        #[test]
        fn two_spinners_on_runtime_calls_take_turns() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    const TURNS: u32 = 5;
                    let x = Arc::new(AtomicU32::new(0));
                    let spinners: Vec<_> = (0..2u32)
                        .map(|g| {
                            let x = x.clone();
                            corio::go(move || {
                                let home = here();
                                let mut calls = 0u64;
                                for _ in 0..TURNS {
                                    while x.load(SeqCst) != g {
                                        runtime_call();
                                        calls += 1;
                                    }
                                    x.store(1 - g, SeqCst);
                                }
                                assert_eq!(here(), home, "spinner {g} changed thread");
                                calls
                            })
                        })
                        .collect();
                    for s in spinners {
                        s.join().unwrap();
                    }
                });
            });
        }
    }
}

/// Go's `TestPreemption` with Go 1.14's asynchronous preemption: two preemptible coroutines
/// on one worker take strict turns, each waiting in a loop with no runtime call at all. Every
/// turn needs the waiting one preempted by signal (docs/scheduler.md, "Signal preemption").
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn two_preemptible_pure_spinners_on_one_worker_take_turns() {
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        rt.run(|| {
            const TURNS: u32 = 5;
            let x = Arc::new(AtomicU32::new(0));
            let spinners: Vec<_> = (0..2u32)
                .map(|g| {
                    let x = x.clone();
                    // SAFETY: between corio's operations the closure only loads and stores an
                    // atomic and spins: no thread-local borrow, std lock, re-entrant lock or
                    // allocation is held where it may be preempted.
                    let builder = unsafe { corio::Builder::new().preemptible() };
                    builder
                        .spawn(move || {
                            for _ in 0..TURNS {
                                while x.load(SeqCst) != g {
                                    std::hint::spin_loop();
                                }
                                x.store(1 - g, SeqCst);
                            }
                        })
                        .unwrap()
                })
                .collect();
            for s in spinners {
                s.join().unwrap();
            }
            assert_eq!(x.load(SeqCst), 0);
        });
    });
}

// ----- a tight loop without runtime calls (what sysmon promises, and no more) ---------------

/// Two workers; a coroutine that spins without a single runtime call, after it has had async
/// tasks start sleeping on its own worker (their first polls, so their timers, are there)
/// and then spawned coroutines and async tasks that have not started. docs/scheduler.md
/// promises that movable work behind such a hog runs elsewhere: sysmon fires a busy worker's
/// due timers (into the global queue) and hands the queued work off. The hog stops once all
/// of it has run. Returns how many sleepers were first polled on the hog's thread, and
/// whether everything ran (false: the hog gave up after `PROGRESS_LIMIT`).
fn movable_work_behind_a_tight_loop(rt: &corio::Runtime) -> (usize, bool, usize) {
    const SLEEPERS: usize = 4;
    const QUEUED: usize = 8;
    rt.run(|| {
        let hog = corio::go(|| {
            let home = here();
            let done = Arc::new(AtomicUsize::new(0));
            let polled = Arc::new(AtomicUsize::new(0));
            let on_home = Arc::new(AtomicUsize::new(0));
            let gate = Gate::new();
            for _ in 0..SLEEPERS {
                let (done, polled, on_home, gate) =
                    (done.clone(), polled.clone(), on_home.clone(), gate.clone());
                drop(corio::spawn(async move {
                    if here() == home {
                        on_home.fetch_add(1, SeqCst);
                    }
                    if polled.fetch_add(1, SeqCst) + 1 == SLEEPERS {
                        gate.open();
                    }
                    corio::time::sleep_async(Duration::from_millis(2)).await;
                    done.fetch_add(1, SeqCst);
                }));
            }
            corio::block_on(gate.wait());
            for i in 0..QUEUED {
                let done = done.clone();
                if i.is_multiple_of(2) {
                    drop(corio::go(move || {
                        done.fetch_add(1, SeqCst);
                    }));
                } else {
                    drop(corio::spawn(async move {
                        done.fetch_add(1, SeqCst);
                    }));
                }
            }
            let start = Instant::now();
            while done.load(SeqCst) < SLEEPERS + QUEUED {
                if start.elapsed() > PROGRESS_LIMIT {
                    break;
                }
                std::hint::spin_loop();
            }
            (
                on_home.load(SeqCst),
                done.load(SeqCst) == SLEEPERS + QUEUED,
                done.load(SeqCst),
            )
        });
        hog.join().unwrap()
    })
}

#[test]
fn two_workers_movable_work_and_sleeping_tasks_behind_a_tight_loop_run() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        let mut timers_on_the_hogs_worker = 0;
        for attempt in 0..3 {
            let (on_home, all_ran, done) = movable_work_behind_a_tight_loop(&rt);
            assert!(
                all_ran,
                "attempt {attempt}: only {done} of 12 movable tasks ran behind the hog \
                 ({on_home} sleepers had their timer on its worker)"
            );
            timers_on_the_hogs_worker += on_home;
        }
        assert!(
            timers_on_the_hogs_worker > 0,
            "no sleeper ever started on the hog's worker: the timer case was not exercised"
        );
    });
}

// ----- a ping-pong pair beside a lone coroutine (BenchmarkPingPongHog's shape) -------------

/// What the lone coroutine beside the pair does on each turn.
#[derive(Clone, Copy, Debug)]
enum Lone {
    /// `corio::yield_now()`.
    Yielder,
    /// A 100 µs sleep (a timer wakes it).
    Sleeper,
    /// A runtime call that never waits (only sysmon's flag makes it yield).
    Spinner,
}

/// The two sides' progress as each saw the other's.
#[derive(Debug, Default)]
struct PairAndLone {
    /// The pair's round trips, and the lone coroutine's turns.
    trips: AtomicU64,
    turns: AtomicU64,
    /// Round trips after which the lone coroutine's count had moved, and turns after which the
    /// pair's had: each is one interleaving seen from that side.
    pair_saw_lone_move: AtomicU64,
    lone_saw_pair_move: AtomicU64,
    stop: AtomicBool,
}

/// How many interleavings each side must see.
const INTERLEAVINGS: u64 = 5;

/// A pair of coroutines handing a value back and forth over two rendezvous channels, doing
/// `work` increments per turn, beside a `lone` coroutine, on `rt`; spawned from a plain thread
/// (the global queue), run until each side has seen the other move `INTERLEAVINGS` times.
/// Every coroutine checks it never changes thread.
fn pair_beside_lone(rt: &corio::Runtime, work_per_turn: u64, lone: Lone) {
    let s = Arc::new(PairAndLone::default());
    let (ping_tx, ping_rx) = chan::bounded::<u64>(0);
    let (pong_tx, pong_rx) = chan::bounded::<u64>(0);
    let s1 = s.clone();
    let a = rt.go(move || {
        let home = here();
        let mut seen = 0;
        let mut n = 0;
        while !s1.stop.load(SeqCst) {
            work(work_per_turn);
            ping_tx.send(n).unwrap();
            n = pong_rx.recv().unwrap() + 1;
            s1.trips.fetch_add(1, SeqCst);
            let now = s1.turns.load(SeqCst);
            if now != seen {
                seen = now;
                s1.pair_saw_lone_move.fetch_add(1, SeqCst);
            }
            assert_eq!(here(), home, "the pair's first coroutine changed thread");
        }
        // Dropping `ping_tx` ends the partner's loop.
    });
    let b = rt.go(move || {
        let home = here();
        while let Ok(n) = ping_rx.recv() {
            work(work_per_turn);
            if pong_tx.send(n).is_err() {
                break;
            }
            assert_eq!(here(), home, "the pair's second coroutine changed thread");
        }
    });
    let s2 = s.clone();
    let l = rt.go(move || {
        let home = here();
        let mut seen = 0;
        while !s2.stop.load(SeqCst) {
            match lone {
                Lone::Yielder => corio::yield_now(),
                Lone::Sleeper => corio::sleep(Duration::from_micros(100)),
                Lone::Spinner => runtime_call(),
            }
            s2.turns.fetch_add(1, SeqCst);
            let now = s2.trips.load(SeqCst);
            if now != seen {
                seen = now;
                s2.lone_saw_pair_move.fetch_add(1, SeqCst);
            }
            assert_eq!(here(), home, "the lone coroutine changed thread");
        }
    });
    let both = holds_within(PROGRESS_LIMIT, || {
        s.pair_saw_lone_move.load(SeqCst) >= INTERLEAVINGS
            && s.lone_saw_pair_move.load(SeqCst) >= INTERLEAVINGS
    });
    s.stop.store(true, SeqCst);
    assert!(
        both,
        "{lone:?} beside a pair doing {work_per_turn} per turn: one side starved: {s:?}"
    );
    for h in [a, b, l] {
        h.join().unwrap();
    }
}

/// Work per turn of the pair: none (hand-offs as fast as they go), and a heavy turn.
const PAIR_WORK: [u64; 2] = [0, 20_000];

mod pair_and_lone {
    use super::*;

    rt_common! {
        /// A ping-pong pair (each hand-off through the next-task slot, inheriting the time slice)
        /// and a coroutine that yields in a loop both make progress, seen from each side.
        #[test]
        fn a_ping_pong_pair_and_a_lone_yielder_both_progress() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for w in PAIR_WORK {
                    pair_beside_lone(&rt, w, Lone::Yielder);
                }
            });
        }

        /// The same with a lone coroutine that sleeps 100 µs per turn: its timer keeps firing
        /// beside the pair's chain of hand-offs.
        #[test]
        fn a_ping_pong_pair_and_a_lone_sleeper_both_progress() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for w in PAIR_WORK {
                    pair_beside_lone(&rt, w, Lone::Sleeper);
                }
            });
        }

        /// The same with a lone coroutine that spins on runtime calls that never wait: on one
        /// worker the two sides alternate only by sysmon's time slices.
        #[test]
        fn a_ping_pong_pair_and_a_lone_spinner_both_progress() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for w in PAIR_WORK {
                    pair_beside_lone(&rt, w, Lone::Spinner);
                }
            });
        }
    }
}

// ----- yielders against timers and wake-ups --------------------------------------------------

/// How many times each waiter in [`yielders_leave_room_for_timers_and_wakes`] must be woken.
const WAKES: u64 = 20;

/// `yielders` coroutines yield in a loop (with two or more they switch to each other
/// directly) until four waiters, started only once the yielders yield, are each woken
/// [`WAKES`] times: a coroutine sleeping 1 ms, an async task sleeping 1 ms, a coroutine woken
/// by the first yielder (a wake from its own worker), and a coroutine woken from a plain
/// thread. Each wake is acknowledged before the next, so none is merged with another. The
/// yielders check they never change thread (Go's TestYieldLockedProgress).
fn yielders_leave_room_for_timers_and_wakes(rt: &corio::Runtime, yielders: usize) {
    let all_done = Arc::new(AtomicBool::new(false));
    let yielding = Arc::new(AtomicUsize::new(0));
    let go = Gate::new();
    let local = Arc::new(Baton::default());
    let local_acks = Arc::new(AtomicU64::new(0));
    let remote = Arc::new(Baton::default());
    let remote_acks = Arc::new(AtomicU64::new(0));
    let yielder_handles: Vec<_> = (0..yielders)
        .map(|k| {
            let (all_done, yielding, go) = (all_done.clone(), yielding.clone(), go.clone());
            let (local, local_acks) = (local.clone(), local_acks.clone());
            rt.go(move || {
                let home = here();
                if yielding.fetch_add(1, SeqCst) + 1 == yielders {
                    go.open();
                }
                let (mut yields, mut passed) = (0u64, 0u64);
                while !all_done.load(SeqCst) {
                    corio::yield_now();
                    yields += 1;
                    assert_eq!(
                        here(),
                        home,
                        "yielder {k} changed thread after {yields} yields"
                    );
                    if k == 0
                        && yields.is_multiple_of(16)
                        && passed < WAKES
                        && local_acks.load(SeqCst) == passed
                    {
                        passed += 1;
                        local.pass();
                    }
                }
                yields
            })
        })
        .collect();
    let g = go.clone();
    let sleeper = rt.go(move || {
        corio::block_on(g.wait());
        for _ in 0..WAKES {
            corio::sleep(Duration::from_millis(1));
        }
    });
    let g = go.clone();
    let sleeper_task = rt.spawn(async move {
        g.wait().await;
        for _ in 0..WAKES {
            corio::time::sleep_async(Duration::from_millis(1)).await;
        }
    });
    let (g, l, la) = (go.clone(), local.clone(), local_acks.clone());
    let locally_woken = rt.go(move || {
        corio::block_on(g.wait());
        for _ in 0..WAKES {
            corio::block_on(l.take());
            la.fetch_add(1, SeqCst);
        }
    });
    let (g, r, ra) = (go.clone(), remote.clone(), remote_acks.clone());
    let remotely_woken = rt.go(move || {
        corio::block_on(g.wait());
        for _ in 0..WAKES {
            corio::block_on(r.take());
            ra.fetch_add(1, SeqCst);
        }
    });
    let ra = remote_acks.clone();
    let waker = std::thread::spawn(move || {
        for i in 0..WAKES {
            remote.pass();
            if !answered(|| ra.load(SeqCst) > i) {
                return false;
            }
        }
        true
    });
    let finished = holds_within(PROGRESS_LIMIT, || {
        sleeper.is_finished()
            && sleeper_task.is_finished()
            && locally_woken.is_finished()
            && remotely_woken.is_finished()
    });
    let report = format!(
        "{yielders} yielders: sleeper done {}, sleeping task done {}, local wakes {}, \
         remote wakes {}",
        sleeper.is_finished(),
        sleeper_task.is_finished(),
        local_acks.load(SeqCst),
        remote_acks.load(SeqCst)
    );
    all_done.store(true, SeqCst);
    assert!(
        finished,
        "a waiter starved beside yielding coroutines: {report}"
    );
    assert!(
        waker.join().unwrap(),
        "a wake from a plain thread went unanswered: {report}"
    );
    for h in [sleeper, locally_woken, remotely_woken] {
        h.join().unwrap();
    }
    sleeper_task.join().unwrap();
    for y in yielder_handles {
        y.join().unwrap();
    }
}

mod yielders {
    use super::*;

    rt_common! {
        /// One coroutine yielding in a loop starves neither a timer nor a woken coroutine.
        #[test]
        fn a_yielding_coroutine_starves_no_timer_and_no_woken_coroutine() {
            let rt = rt();
            within(EVENTUALLY, move || yielders_leave_room_for_timers_and_wakes(&rt, 1));
        }

        /// The same with three yielders, which switch to each other directly (the yield fast
        /// path that checks the timers and the inbox itself).
        #[test]
        fn coroutines_yielding_to_each_other_starve_no_timer_and_no_woken_coroutine() {
            let rt = rt();
            within(EVENTUALLY, move || yielders_leave_room_for_timers_and_wakes(&rt, 3));
        }
    }
}

// ----- wake-ups from plain threads while every worker is busy -------------------------------

mod busy_workers {
    use super::*;

    rt_common! {
        /// Every worker is given yielding coroutines and async tasks to run (two of each per
        /// worker), while three plain threads each wake a coroutine and an async task 50 times, one wake at a
        /// time (each acknowledged before the next), and a fourth sends 1,000 values on unbounded
        /// channels to a coroutine and an async task. No wake is lost, every value arrives once.
        #[test]
        fn wakes_from_plain_threads_reach_waiters_while_every_worker_is_busy() {
            const ROUNDS: u64 = 50;
            const VALUES: u64 = 1_000;
            let rt = rt();
            within(EVENTUALLY, move || {
                let stop = Arc::new(AtomicBool::new(false));
                let mut busy = Vec::new();
                for _ in 0..2 * WORKERS {
                    let s = stop.clone();
                    busy.push(rt.go(move || {
                        let stop = s;
                        while !stop.load(SeqCst) {
                            corio::yield_now();
                        }
                    }));
                    let s = stop.clone();
                    busy.push(rt.spawn(async move {
                        let stop = s;
                        while !stop.load(SeqCst) {
                            corio::yield_now_async().await;
                        }
                    }));
                }
                let mut waiters = Vec::new();
                let mut wakers = Vec::new();
                for t in 0..3 {
                    let batons = [Arc::new(Baton::default()), Arc::new(Baton::default())];
                    let acks = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
                    let (b, a) = (batons[0].clone(), acks[0].clone());
                    waiters.push(rt.go(move || {
                        for _ in 0..ROUNDS {
                            corio::block_on(b.take());
                            a.fetch_add(1, SeqCst);
                        }
                    }));
                    let (b, a) = (batons[1].clone(), acks[1].clone());
                    waiters.push(rt.spawn(async move {
                        for _ in 0..ROUNDS {
                            b.take().await;
                            a.fetch_add(1, SeqCst);
                        }
                    }));
                    wakers.push(std::thread::spawn(move || {
                        for round in 0..ROUNDS {
                            for (b, a) in batons.iter().zip(&acks) {
                                b.pass();
                                if !answered(|| a.load(SeqCst) > round) {
                                    return Err(format!("thread {t}: wake {round} was never answered"));
                                }
                            }
                        }
                        Ok(())
                    }));
                }
                let (co_tx, co_rx) = chan::unbounded::<u64>();
                let (task_tx, task_rx) = chan::unbounded::<u64>();
                let co_sum = rt.go(move || {
                    let mut seen = vec![false; VALUES as usize];
                    for _ in 0..VALUES {
                        let v = co_rx.recv().unwrap();
                        assert!(!std::mem::replace(&mut seen[v as usize], true), "{v} arrived twice");
                    }
                    seen.iter().all(|s| *s)
                });
                let task_sum = rt.spawn(async move {
                    let mut seen = vec![false; VALUES as usize];
                    for _ in 0..VALUES {
                        let v = task_rx.recv_async().await.unwrap();
                        assert!(!std::mem::replace(&mut seen[v as usize], true), "{v} arrived twice");
                    }
                    seen.iter().all(|s| *s)
                });
                let sender = std::thread::spawn(move || {
                    for v in 0..VALUES {
                        co_tx.send(v).unwrap();
                        task_tx.send(v).unwrap();
                        if v.is_multiple_of(64) {
                            std::thread::yield_now();
                        }
                    }
                });
                let results: Vec<_> = wakers.into_iter().map(|w| w.join().unwrap()).collect();
                sender.join().unwrap();
                let values = holds_within(PROGRESS_LIMIT, || co_sum.is_finished() && task_sum.is_finished());
                stop.store(true, SeqCst);
                for r in results {
                    r.unwrap();
                }
                assert!(values, "values sent from a plain thread never all arrived");
                assert!(co_sum.join().unwrap());
                assert!(task_sum.join().unwrap());
                for w in waiters {
                    w.join().unwrap();
                }
                for b in busy {
                    b.join().unwrap();
                }
            });
        }
    }
}

// ----- a spawn storm -------------------------------------------------------------------------

mod spawn_storm {
    use super::*;

    rt_common! {
        /// Six coroutines, two async tasks and a plain thread spawn at once, 500 items each, each
        /// item two tasks of rotating kinds (coroutines and async tasks, detached or joined, the
        /// second spawned by the first or beside it). Every task runs exactly once: each counts
        /// itself in its own slot, and the slots are checked when the last has run and again once
        /// the runtime has no task left but the main one.
        #[test]
        fn a_spawn_storm_from_coroutines_tasks_and_a_thread_runs_every_task_exactly_once() {
            const PER: usize = 500;
            const COROUTINES: usize = 6;
            const TASKS: usize = 2;
            const SPAWNERS: usize = COROUTINES + TASKS + 1;
            const TOTAL: usize = SPAWNERS * PER * 2;
            let rt = rt();
            let handle = rt.handle().clone();
            within(EVENTUALLY, move || {
                let runs: Arc<Vec<AtomicU32>> = Arc::new((0..TOTAL).map(|_| AtomicU32::new(0)).collect());
                let left = Arc::new(AtomicUsize::new(TOTAL));
                let all_ran = Gate::new();
                let run_one = {
                    let (runs, left, all_ran) = (runs.clone(), left.clone(), all_ran.clone());
                    Arc::new(move |id: usize| {
                        runs[id].fetch_add(1, SeqCst);
                        if left.fetch_sub(1, SeqCst) == 1 {
                            all_ran.open();
                        }
                    })
                };
                // One item: task `2k` of the spawner's range, which spawns task `2k + 1` or has it
                // spawned beside it. Returns a handle to join, for the kinds that are joined.
                fn item(
                    on: Option<&corio::Handle>,
                    run: &Arc<dyn Fn(usize) + Send + Sync>,
                    base: usize,
                    k: usize,
                ) -> Option<corio::JoinHandle<()>> {
                    let (first, second) = (base + 2 * k, base + 2 * k + 1);
                    let (r1, r2) = (run.clone(), run.clone());
                    let go = |f: Box<dyn FnOnce() + Send>| match on {
                        Some(h) => h.go(f),
                        None => corio::go(f),
                    };
                    let spawn = |f: Pin<Box<dyn Future<Output = ()> + Send>>| match on {
                        Some(h) => h.spawn(f),
                        None => corio::spawn(f),
                    };
                    match k % 4 {
                        0 => {
                            drop(go(Box::new(move || {
                                r1(first);
                                drop(corio::spawn(async move { r2(second) }));
                            })));
                            None
                        }
                        1 => {
                            drop(spawn(Box::pin(async move {
                                r1(first);
                                drop(corio::go(move || r2(second)));
                            })));
                            None
                        }
                        2 => {
                            drop(spawn(Box::pin(async move { r2(second) })));
                            Some(go(Box::new(move || r1(first))))
                        }
                        _ => {
                            drop(go(Box::new(move || r2(second))));
                            Some(spawn(Box::pin(async move { r1(first) })))
                        }
                    }
                }
                let run: Arc<dyn Fn(usize) + Send + Sync> = run_one;
                let before = rt.metrics();
                let spawned = rt.run(move || {
                    let mut spawners = Vec::new();
                    for s in 0..COROUTINES {
                        let run = run.clone();
                        spawners.push(corio::go(move || {
                            let joins: Vec<_> = (0..PER).filter_map(|k| item(None, &run, s * PER * 2, k)).collect();
                            for j in joins {
                                j.join().unwrap();
                            }
                        }));
                    }
                    for t in 0..TASKS {
                        let run = run.clone();
                        spawners.push(corio::spawn(async move {
                            let base = (COROUTINES + t) * PER * 2;
                            let joins: Vec<_> = (0..PER).filter_map(|k| item(None, &run, base, k)).collect();
                            for j in joins {
                                j.await.unwrap();
                            }
                        }));
                    }
                    let (run2, h) = (run.clone(), handle.clone());
                    let thread = std::thread::spawn(move || {
                        let base = (COROUTINES + TASKS) * PER * 2;
                        let joins: Vec<_> = (0..PER).filter_map(|k| item(Some(&h), &run2, base, k)).collect();
                        for j in joins {
                            j.join().unwrap();
                        }
                    });
                    for s in spawners {
                        s.join().unwrap();
                    }
                    corio::block_on(all_ran.wait());
                    corio::blocking(|| thread.join().unwrap());
                    SPAWNERS - 1 + TOTAL
                });
                for (id, r) in runs.iter().enumerate() {
                    assert_eq!(r.load(SeqCst), 1, "task {id} ran {} times", r.load(SeqCst));
                }
                assert!(
                    holds_within(PROGRESS_LIMIT, || rt.metrics().live_tasks == 0),
                    "tasks left alive after the storm: {}",
                    rt.metrics().live_tasks
                );
                for (id, r) in runs.iter().enumerate() {
                    assert_eq!(r.load(SeqCst), 1, "task {id} ran {} times in the end", r.load(SeqCst));
                }
                let after = rt.metrics();
                assert!(
                    after.spawned - before.spawned >= spawned as u64,
                    "{} spawns counted, {spawned} made",
                    after.spawned - before.spawned
                );
            });
        }
    }
}

// ----- a runnable task and an idle worker (Go's TestSchedLocalQueueEmpty) --------------------

/// Go's `TestSchedLocalQueueEmpty` checks that a run queue is never seen empty while it holds
/// work, which would leave runnable work and an idle P side by side. Its user-visible half,
/// again and again: a coroutine spawns one to three movable tasks (into its spawn slot and
/// run queue, kinds rotating), then spins without any runtime call until they have all run —
/// which only the other, idle worker can do.
#[test]
fn two_workers_work_queued_behind_a_spinning_spawner_never_waits_beside_an_idle_worker() {
    const ITERATIONS: usize = 30;
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        rt.run(|| {
            for i in 0..ITERATIONS {
                let spawner = corio::go(move || {
                    let n = 1 + i % 3;
                    let done = Arc::new(AtomicUsize::new(0));
                    for c in 0..n {
                        let done = done.clone();
                        if (i + c).is_multiple_of(2) {
                            drop(corio::go(move || {
                                done.fetch_add(1, SeqCst);
                            }));
                        } else {
                            drop(corio::spawn(async move {
                                done.fetch_add(1, SeqCst);
                            }));
                        }
                    }
                    let start = Instant::now();
                    while done.load(SeqCst) < n && start.elapsed() < PROGRESS_LIMIT {
                        std::hint::spin_loop();
                    }
                    (done.load(SeqCst), n)
                });
                let (done, n) = spawner.join().unwrap();
                assert_eq!(
                    done, n,
                    "iteration {i}: {done} of {n} children ran beside an idle worker"
                );
            }
        });
    });
}

// ----- a worker asleep in the driver (Go's TestNetpollBreak) --------------------------------

mod driver {
    use super::*;

    rt_common! {
        /// Go's `TestNetpollBreak`: a poller asleep with a long timeout must be woken by work.
        /// Here a coroutine sleeps 60 s (the worker asleep in the driver waits on that far timer)
        /// and one waits in `accept`; then, 10 times, a plain thread pauses (so the workers park),
        /// spawns a task through a handle, wakes a parked coroutine, and connects to the listener.
        /// Each must be answered long before the far timer (the test's own limit is shorter).
        #[test]
        fn a_worker_asleep_in_the_driver_is_woken_by_a_spawn_a_wake_and_a_socket() {
            const ROUNDS: u64 = 10;
            let rt = rt();
            let handle = rt.handle().clone();
            within(EVENTUALLY, move || {
                let far = rt.go(|| corio::sleep(Duration::from_secs(60)));
                let listener = rt.block_on(async { corio::net::TcpListener::bind("127.0.0.1:0").unwrap() });
                let addr = listener.local_addr().unwrap();
                let accepts = Arc::new(AtomicU64::new(0));
                let a = accepts.clone();
                let acceptor = rt.go(move || {
                    for _ in 0..ROUNDS {
                        drop(listener.accept().unwrap());
                        a.fetch_add(1, SeqCst);
                    }
                });
                let baton = Arc::new(Baton::default());
                let woken = Arc::new(AtomicU64::new(0));
                let (b, w) = (baton.clone(), woken.clone());
                let waiter = rt.go(move || {
                    for _ in 0..ROUNDS {
                        corio::block_on(b.take());
                        w.fetch_add(1, SeqCst);
                    }
                });
                let spawned = Arc::new(AtomicU64::new(0));
                let mut conns = Vec::new();
                for round in 0..ROUNDS {
                    std::thread::sleep(Duration::from_millis(3));
                    let s = spawned.clone();
                    drop(handle.spawn(async move {
                        s.fetch_add(1, SeqCst);
                    }));
                    assert!(
                        answered(|| spawned.load(SeqCst) > round),
                        "round {round}: a task spawned from a plain thread never ran"
                    );
                    std::thread::sleep(Duration::from_millis(3));
                    baton.pass();
                    assert!(
                        answered(|| woken.load(SeqCst) > round),
                        "round {round}: a coroutine woken from a plain thread never ran"
                    );
                    std::thread::sleep(Duration::from_millis(3));
                    conns.push(std::net::TcpStream::connect(addr).unwrap());
                    assert!(
                        answered(|| accepts.load(SeqCst) > round),
                        "round {round}: a connection was never accepted"
                    );
                }
                assert!(!far.is_finished(), "the far sleeper woke: was everything waiting on it?");
                waiter.join().unwrap();
                acceptor.join().unwrap();
                far.abort();
                assert!(far.join().unwrap_err().is_cancelled());
            });
        }
    }
}

// ----- a perpetual spawn chain (Go's TestStopTheWorldDeadlock) -----------------------------

/// One link of Go's `perpetuumMobile`: spawns the next link (a coroutine and an async task in
/// turn) and returns, until `stop`; the link that sees `stop` opens `ended`.
fn perpetuum_mobile(stop: Arc<AtomicBool>, links: Arc<AtomicU64>, ended: Gate) {
    let n = links.fetch_add(1, SeqCst);
    if stop.load(SeqCst) {
        ended.open();
        return;
    }
    if n.is_multiple_of(2) {
        drop(corio::go(move || perpetuum_mobile(stop, links, ended)));
    } else {
        drop(corio::spawn(
            async move { perpetuum_mobile(stop, links, ended) },
        ));
    }
}

mod spawn_chain {
    use super::*;

    rt_common! {
        /// Go's `TestStopTheWorldDeadlock`: a chain of goroutines each spawning the next runs
        /// while other goroutines stop the world again and again (GC, GOMAXPROCS). corio has no
        /// stop-the-world; its whole-runtime operations are the inspections (`Handle::tasks`
        /// walks every live task, `metrics` reads every worker) and `corio::blocking` (which
        /// flushes the worker's slots). A coroutine does each 50 times, yielding between them,
        /// beside the chain (the inspector goes on until it has seen the chain move 3 times):
        /// both finish, the chain keeps moving, and stops when asked.
        #[test]
        fn inspections_and_blocking_calls_beside_a_perpetual_spawn_chain_finish() {
            let rt = rt();
            let handle = rt.handle().clone();
            within(EVENTUALLY, move || {
                rt.run(move || {
                    let stop = Arc::new(AtomicBool::new(false));
                    let links = Arc::new(AtomicU64::new(0));
                    let ended = Gate::new();
                    let (s, l, e) = (stop.clone(), links.clone(), ended.clone());
                    drop(corio::go(move || perpetuum_mobile(s, l, e)));
                    let l = links.clone();
                    let inspector = corio::go(move || {
                        let mut moved = 0;
                        let mut last = l.load(SeqCst);
                        let start = Instant::now();
                        // 50 rounds, and on until the chain was seen to move 3 times (its
                        // worker's thread may lose its CPU for a few milliseconds at any time).
                        let mut rounds = 0;
                        while (rounds < 50 || moved < 3) && start.elapsed() < PROGRESS_LIMIT {
                            rounds += 1;
                            let tasks = handle.tasks();
                            std::hint::black_box(tasks.len());
                            std::hint::black_box(handle.metrics().live_tasks);
                            corio::yield_now();
                            let now = l.load(SeqCst);
                            if now != last {
                                moved += 1;
                                last = now;
                            }
                        }
                        moved
                    });
                    let blocker = corio::go(|| {
                        for i in 0..50u64 {
                            std::hint::black_box(corio::blocking(|| i * 2));
                            corio::yield_now();
                        }
                    });
                    let moved = inspector.join().unwrap();
                    blocker.join().unwrap();
                    assert!(moved >= 3, "the spawn chain moved {moved} times while the inspector ran");
                    stop.store(true, SeqCst);
                    corio::block_on(ended.wait());
                });
            });
        }
    }
}

// ----- many workers (Go's TestBigGOMAXPROCS) -------------------------------------------------

/// Go's `TestBigGOMAXPROCS`: a large worker count starts, runs work, and shuts down. 64
/// workers (each a thread) on a 2-core machine run 256 coroutines that each sleep a
/// millisecond, and the runtime is dropped.
#[test]
fn sixty_four_workers_start_run_coroutines_and_shut_down() {
    const WORKERS: usize = 64;
    let rt = support::rt(WORKERS);
    within(EVENTUALLY, move || {
        assert_eq!(rt.metrics().workers, WORKERS);
        let threads = rt.run(|| {
            let handles: Vec<_> = (0..4 * WORKERS)
                .map(|_| {
                    corio::go(|| {
                        let home = here();
                        corio::sleep(Duration::from_millis(1));
                        assert_eq!(here(), home, "a sleeper changed thread");
                        home
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<HashSet<ThreadId>>()
                .len()
        });
        assert!((1..=WORKERS).contains(&threads));
        drop(rt);
    });
}
