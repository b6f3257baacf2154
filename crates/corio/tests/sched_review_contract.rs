//! A reviewer's contract tests for the scheduler as users see it: `go`, `spawn`, `JoinHandle`,
//! `yield_now`, the runtime builder and `Handle`, `blocking` and `spawn_blocking`, sysmon's
//! preemption flag and hand-offs, shutdown.
//!
//! Ports, re-expressed for corio (each test cites its original):
//!
//! - Go, `src/runtime/proc_test.go`: `TestYieldProgress`, `TestBlockLocked`, `TestTimerFairness`,
//!   `TestTimerFairness2`, `TestPreemptionGC`, `TestPreemptionAfterSyscall`, `TestGCFairness`,
//!   `TestGCFairness2`, `TestNumGoroutine`, `TestGoroutineParallelism`, `TestStealOrder`'s
//!   promise (every queue is visited).
//! - tokio, `tokio/tests/`: `rt_common.rs` (`spawn_many_from_block_on`, `spawn_many_from_task`,
//!   `complete_block_on_under_load`, `spawn_from_other_thread_under_load`, `spawn_from_blocking`,
//!   `spawn_blocking_from_blocking`, `sleep_from_blocking`, `wake_while_rt_is_dropping`,
//!   `shutdown_timeout_0`, `runtime_in_thread_local`, `wake_by_ref_from_thread_local`),
//!   `rt_threaded.rs` (`many_multishot_futures` from many threads), `rt_handle.rs`,
//!   `rt_panic.rs` (misuse panics name the caller's line), `task_abort.rs`
//!   (`test_abort_wakes_task_3964`), `task_blocking.rs`.
//!
//! And corio's own promises (DESIGN.md, decision 2): resumes do not nest, a suspended stack
//! outlives the worker frame that resumed it, a started coroutine never changes thread, panics
//! stop at the `JoinHandle`, shutdown runs every destructor exactly once on its own thread.
//!
//! Every body runs on one worker (the 1:N scheduler) and on two (M:N) unless its name says it
//! needs two. Durations are only ever checked from below, or against bounds that only a hang
//! reaches.

#[macro_use]
mod support;

use std::cell::RefCell;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::task::{Context, Poll, Waker};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use corio::chan::{self, Receiver};
use support::{
    DropToken, Drops, EVENTUALLY, EXPECTED, Gate, Rng, payload_text, quiet_expected_panics,
    threads_named, wait_until, within,
};

/// Set in a child process started by [`run_child`]: which body to run there.
const CHILD: &str = "CORIO_SCHED_REVIEW_CHILD";
/// The worker count [`run_child`] passes to the child.
const CHILD_WORKERS: &str = "CORIO_SCHED_REVIEW_WORKERS";

/// Runs this test binary again, only the test `test`, with [`CHILD`] set to `mode` and a
/// runtime of `workers` workers asked for; fails unless the child passed and said so.
fn run_child(test: &str, mode: &str, workers: usize) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, mode)
        .env(CHILD_WORKERS, workers.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("child-done"),
        "{workers} workers: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The worker count a child started by [`run_child`] is to use.
fn child_workers() -> usize {
    std::env::var(CHILD_WORKERS).unwrap().parse().unwrap()
}

/// A runtime call that never waits: `block_on` of a ready future. It is a preemption point
/// (docs/scheduler.md, "sysmon, preemption and blocking calls"), the analogue of the function
/// call Go's preemption tests spin on.
fn runtime_call() {
    corio::block_on(std::future::ready(()));
}

fn here() -> ThreadId {
    std::thread::current().id()
}

/// A channel that receives one value after `d`, from a movable async task: Go's `time.After`.
fn after(d: Duration) -> Receiver<()> {
    let (tx, rx) = chan::bounded(1);
    corio::spawn(async move {
        corio::time::sleep_async(d).await;
        let _ = tx.send_async(()).await;
    });
    rx
}

/// A future that is always runnable: it wakes itself and returns `Pending` until `stop`.
struct SelfWaking {
    stop: Arc<AtomicBool>,
    polls: Arc<AtomicU64>,
}

impl Future for SelfWaking {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.polls.fetch_add(1, SeqCst);
        if self.stop.load(SeqCst) {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A future that hands its first waker to `tx` and is pending until `done`.
struct ShowsWaker {
    tx: Option<mpsc::Sender<Waker>>,
    done: Arc<AtomicBool>,
}

impl Future for ShowsWaker {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.done.load(SeqCst) {
            return Poll::Ready(());
        }
        if let Some(tx) = self.tx.take() {
            tx.send(cx.waker().clone()).unwrap();
        }
        Poll::Pending
    }
}

/// A drop token that also checks it is dropped on the thread it was made on (a started
/// coroutine's destructors must run on its home thread, DESIGN.md decision 2).
struct HomeToken {
    home: ThreadId,
    elsewhere: Arc<AtomicUsize>,
    _token: DropToken,
}

impl HomeToken {
    fn new(drops: &Drops, elsewhere: &Arc<AtomicUsize>) -> HomeToken {
        HomeToken {
            home: here(),
            elsewhere: elsewhere.clone(),
            _token: drops.token(),
        }
    }
}

impl Drop for HomeToken {
    fn drop(&mut self) {
        if here() != self.home {
            self.elsewhere.fetch_add(1, SeqCst);
        }
    }
}

/// Recurses `depth` frames, each with a page of stack it writes, then yields: keeps a thread's
/// other coroutines busy writing their own stacks.
fn scribble(depth: u32, seed: u64) -> u64 {
    let mut page = [0u64; 512];
    for (i, w) in page.iter_mut().enumerate() {
        *w = seed ^ i as u64;
    }
    std::hint::black_box(&mut page);
    if depth == 0 {
        corio::yield_now();
        return page.iter().sum();
    }
    scribble(depth - 1, seed.wrapping_mul(31)) ^ page[depth as usize % 512]
}

/// Panics on purpose, naming `what` and `i`.
fn boom(what: &str, i: u32) -> u32 {
    panic!("{EXPECTED} {what} {i}")
}

/// Where each misuse panic was raised (message, file), recorded by a panic hook installed once.
fn panic_sites() -> &'static Mutex<Vec<(String, String)>> {
    static SITES: OnceLock<Mutex<Vec<(String, String)>>> = OnceLock::new();
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = payload_text(info.payload());
            if message.starts_with("corio:") || message.starts_with("corio::") {
                let file = info.location().map(|l| l.file().to_string());
                panic_sites()
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((message, file.unwrap_or_default()));
                return; // expected here: kept off stderr
            }
            previous(info);
        }));
    });
    SITES.get_or_init(|| Mutex::new(Vec::new()))
}

/// The file named by the hook for the first recorded panic whose message contains `needle`.
fn site_of(needle: &str) -> Option<String> {
    panic_sites()
        .lock()
        .unwrap()
        .iter()
        .find(|(m, _)| m.contains(needle))
        .map(|(_, f)| f.clone())
}

rt_common! {
    // ----- yield_now -----------------------------------------------------------------------

    /// Go's `TestYieldProgress`, in its own shape: a goroutine polls a channel with
    /// `select { case <-c: default: Gosched() }`; the main goroutine sleeps, then sends. The
    /// yielding loop must let the sleeper wake and the send pair with the poll.
    #[test]
    fn a_select_default_yield_loop_lets_a_sleeping_sender_in() {
        let rt = rt();
        let spins = within(EVENTUALLY, move || {
            rt.run(|| {
                let (tx, rx) = chan::bounded::<()>(0);
                let (ack_tx, ack_rx) = chan::bounded::<u64>(0);
                corio::go(move || {
                    let mut spins = 0u64;
                    loop {
                        corio::select! {
                            recv(rx) -> _ => break,
                            default => {
                                spins += 1;
                                corio::yield_now();
                            }
                        }
                    }
                    ack_tx.send(spins).unwrap();
                });
                corio::sleep(Duration::from_millis(10));
                tx.send(()).unwrap();
                ack_rx.recv().unwrap()
            })
        });
        assert!(spins > 0);
    }

    /// A coroutine's `yield_now` lets an async task of its worker run, and a task's
    /// `yield_now_async` lets a coroutine run: both kinds share one queue discipline.
    #[test]
    fn yields_of_either_kind_let_the_other_kind_run() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let (to_task, to_co) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
                let (t, c) = (to_task.clone(), to_co.clone());
                let task = corio::spawn(async move {
                    c.store(true, SeqCst);
                    let mut yields = 0u64;
                    while !t.load(SeqCst) {
                        corio::yield_now_async().await;
                        yields += 1;
                    }
                    yields
                });
                let (t, c) = (to_task.clone(), to_co.clone());
                let co = corio::go(move || {
                    while !c.load(SeqCst) {
                        corio::yield_now();
                    }
                    t.store(true, SeqCst);
                });
                co.join().unwrap();
                task.join().unwrap();
            });
        });
    }

    // ----- channels and timers under load (Go's proc_test.go) -----------------------------

    /// Go's `TestBlockLocked`: a goroutine locked to its thread blocks on an unbuffered send
    /// again and again. Every corio coroutine is locked once started: each send suspends it,
    /// and it must come back on the same thread every time, as must the receiver.
    #[test]
    fn a_coroutine_blocking_on_every_send_stays_on_its_thread() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                const N: u32 = 2_000;
                let (tx, rx) = chan::bounded::<u32>(0);
                let sender = corio::go(move || {
                    let home = here();
                    for i in 0..N {
                        tx.send(i).unwrap();
                        assert_eq!(here(), home, "the sender changed thread after send {i}");
                    }
                });
                let home = here();
                for i in 0..N {
                    assert_eq!(rx.recv().unwrap(), i);
                    assert_eq!(here(), home, "the receiver changed thread after recv {i}");
                }
                sender.join().unwrap();
            });
        });
    }

    /// Go's `TestTimerFairness`: two goroutines keep an unbuffered channel always ready; the
    /// main goroutine selects between it and a timer. The timer must win eventually.
    #[test]
    fn a_timer_wins_a_select_against_a_channel_that_is_always_ready() {
        let rt = rt();
        let received = within(EVENTUALLY, move || {
            rt.run(|| {
                let (c_tx, c_rx) = chan::bounded::<()>(0);
                let (done_tx, done_rx) = chan::bounded::<()>(0);
                let producers: Vec<_> = (0..2)
                    .map(|_| {
                        let (c, done) = (c_tx.clone(), done_rx.clone());
                        corio::go(move || loop {
                            corio::select! {
                                send(c, ()) -> _ => {}
                                recv(done) -> _ => break,
                            }
                        })
                    })
                    .collect();
                let timer = after(Duration::from_millis(20));
                let start = Instant::now();
                let mut received = 0u64;
                loop {
                    corio::select! {
                        recv(c_rx) -> _ => received += 1,
                        recv(timer) -> _ => break,
                    }
                }
                assert!(start.elapsed() >= Duration::from_millis(20));
                drop(done_tx); // closes `done`: every producer's select returns
                for p in producers {
                    p.join().unwrap();
                }
                received
            })
        });
        assert!(received > 0);
    }

    /// Go's `TestTimerFairness2`: two goroutines each make a system call, then select between
    /// sending on, receiving from one shared unbuffered channel, and a timer of their own.
    /// Both timers must fire although the pair can always talk to each other.
    #[test]
    fn each_of_a_talking_pair_sees_its_own_timer_fire() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let (c_tx, c_rx) = chan::bounded::<()>(0);
                let pair: Vec<_> = (0..2)
                    .map(|_| {
                        let (c_tx, c_rx) = (c_tx.clone(), c_rx.clone());
                        corio::go(move || {
                            let timer = after(Duration::from_millis(20));
                            let start = Instant::now();
                            let mut talks = 0u64;
                            loop {
                                corio::blocking(|| std::hint::black_box(std::process::id()));
                                corio::select! {
                                    send(c_tx, ()) -> _ => talks += 1,
                                    recv(c_rx) -> _ => talks += 1,
                                    recv(timer) -> _ => break,
                                }
                            }
                            assert!(start.elapsed() >= Duration::from_millis(20));
                            talks
                        })
                    })
                    .collect();
                for p in pair {
                    p.join().unwrap();
                }
            });
        });
    }

    // ----- preemption (Go's proc_test.go) -------------------------------------------------

    /// Go's `TestPreemptionGC`, for corio's cooperative preemption: more spinners than
    /// workers, each making a runtime call that never waits in a loop, while the main coroutine
    /// sleeps again and again. Its worker is always taken by a spinner, so each wake-up needs
    /// sysmon's preempt flag honoured at a spinner's runtime call.
    #[test]
    fn spinners_making_runtime_calls_on_every_worker_let_a_sleeper_wake_again_and_again() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let stop = Arc::new(AtomicBool::new(false));
                let spinning = Arc::new(AtomicUsize::new(0));
                let spinners: Vec<_> = (0..WORKERS + 1)
                    .map(|_| {
                        let (stop, spinning) = (stop.clone(), spinning.clone());
                        corio::go(move || {
                            spinning.fetch_add(1, SeqCst);
                            let mut calls = 0u64;
                            while !stop.load(SeqCst) {
                                runtime_call();
                                calls += 1;
                            }
                            calls
                        })
                    })
                    .collect();
                while spinning.load(SeqCst) < WORKERS + 1 {
                    corio::sleep(Duration::from_millis(1));
                }
                for _ in 0..10 {
                    let start = Instant::now();
                    corio::sleep(Duration::from_millis(1));
                    assert!(start.elapsed() >= Duration::from_millis(1));
                }
                stop.store(true, SeqCst);
                for s in spinners {
                    assert!(s.join().unwrap() > 0);
                }
            });
        });
    }

    /// Go's `TestPreemptionAfterSyscall`: a goroutine that returned from a long system call
    /// must still be preemptible. Here the spinner first spends 30 ms inside
    /// `corio::blocking` (long enough for sysmon to see its worker blocked), then spins on
    /// runtime calls; the main coroutine, pinned to the same worker when there is one, must
    /// still get to run and stop it.
    #[test]
    fn a_coroutine_back_from_a_long_blocking_call_is_still_preempted() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let stop = Arc::new(AtomicBool::new(false));
                let spinning = Arc::new(AtomicBool::new(false));
                let (st, sp) = (stop.clone(), spinning.clone());
                let spinner = corio::go(move || {
                    corio::blocking(|| std::thread::sleep(Duration::from_millis(30)));
                    sp.store(true, SeqCst);
                    while !st.load(SeqCst) {
                        runtime_call();
                    }
                });
                while !spinning.load(SeqCst) {
                    corio::sleep(Duration::from_millis(1));
                }
                corio::sleep(Duration::from_millis(5));
                stop.store(true, SeqCst);
                spinner.join().unwrap();
            });
        });
    }

    /// Go's `TestGCFairness2`: with more goroutines that never block than Ps, every one of
    /// them gets to run. Here each spinner makes runtime calls (the preemption points corio
    /// offers), so sysmon's slices let each start in turn.
    #[test]
    fn every_spinner_of_a_crowded_runtime_gets_to_run() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let n = 2 * WORKERS + 1;
                let stop = Arc::new(AtomicBool::new(false));
                let ran: Arc<Vec<AtomicBool>> = Arc::new((0..n).map(|_| AtomicBool::new(false)).collect());
                let spinners: Vec<_> = (0..n)
                    .map(|i| {
                        let (stop, ran) = (stop.clone(), ran.clone());
                        corio::go(move || {
                            ran[i].store(true, SeqCst);
                            while !stop.load(SeqCst) {
                                runtime_call();
                            }
                        })
                    })
                    .collect();
                while !ran.iter().all(|r| r.load(SeqCst)) {
                    corio::sleep(Duration::from_millis(5));
                }
                stop.store(true, SeqCst);
                for s in spinners {
                    s.join().unwrap();
                }
            });
        });
    }

    /// Go's `TestGCFairness`: goroutines that loop on system calls (writes to /dev/null)
    /// must not keep the main goroutine, sleeping 10 ms, from running. corio's system-call
    /// wrapper is `corio::blocking`, Go's entersyscall/exitsyscall, where Go checks for a
    /// preemption request on the way out; DESIGN.md (decision 3) has "a preempt flag set by
    /// sysmon after a time slice that the next runtime call honours".
    #[test]
    fn coroutines_looping_on_blocking_system_calls_let_a_sleeper_of_their_worker_run() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let stop = Arc::new(AtomicBool::new(false));
                let writers: Vec<_> = (0..2)
                    .map(|_| {
                        let stop = stop.clone();
                        corio::go(move || {
                            let mut null = std::fs::OpenOptions::new()
                                .write(true)
                                .open("/dev/null")
                                .unwrap();
                            let mut writes = 0u64;
                            while !stop.load(SeqCst) {
                                corio::blocking(|| null.write_all(b".").unwrap());
                                writes += 1;
                            }
                            writes
                        })
                    })
                    .collect();
                corio::sleep(Duration::from_millis(10));
                stop.store(true, SeqCst);
                for w in writers {
                    w.join().unwrap();
                }
            });
        });
    }

    // ----- metrics (Go's TestNumGoroutine) -----------------------------------------------

    /// Go's `TestNumGoroutine`, with `Metrics::live_tasks`: it counts parked tasks of both
    /// kinds, and forgets those that were aborted, that panicked and that finished.
    #[test]
    fn live_tasks_counts_parked_tasks_and_forgets_aborted_panicked_and_finished_ones() {
        quiet_expected_panics();
        let rt = rt();
        within(EVENTUALLY, move || {
            assert_eq!(rt.metrics().live_tasks, 0);
            let gate = Gate::new();
            let coroutines: Vec<_> = (0..6)
                .map(|_| {
                    let g = gate.clone();
                    rt.go(move || corio::block_on(g.wait()))
                })
                .collect();
            let tasks: Vec<_> = (0..6)
                .map(|_| {
                    let g = gate.clone();
                    rt.spawn(async move { g.wait().await })
                })
                .collect();
            assert_eq!(rt.metrics().live_tasks, 12);
            coroutines[0].abort();
            tasks[0].abort();
            let panicking = rt.go(|| -> () { panic!("{EXPECTED} live_tasks") });
            assert!(panicking.join().unwrap_err().is_panic());
            wait_until("aborted and panicked tasks are gone", || rt.metrics().live_tasks == 10);
            gate.open();
            for h in coroutines.into_iter().skip(1) {
                h.join().unwrap();
            }
            for h in tasks.into_iter().skip(1) {
                h.join().unwrap();
            }
            wait_until("every task is gone", || rt.metrics().live_tasks == 0);
        });
    }

    // ----- spawning (tokio's rt_common.rs, rt_threaded.rs, rt_handle.rs) -----------------

    /// tokio's `spawn_many_from_block_on` and `spawn_many_from_task`: a thousand tasks of each
    /// kind, spawned from `Runtime::block_on` (a plain thread: the global queue) and from
    /// inside a task (a worker's queues), all run.
    #[test]
    fn a_thousand_spawns_from_block_on_and_from_a_task_all_run() {
        const N: usize = 1_000;
        let rt = rt();
        let handle = rt.handle().clone();
        within(EVENTUALLY, move || {
            let spawn_all = || async {
                let (tx, rx) = mpsc::channel();
                for i in 0..N {
                    let tx = tx.clone();
                    if i % 2 == 0 {
                        corio::spawn(async move { tx.send(i).unwrap() });
                    } else {
                        corio::go(move || tx.send(i).unwrap());
                    }
                }
                drop(tx);
                rx
            };
            let rx = rt.block_on(spawn_all());
            let mut got: Vec<usize> = rx.iter().collect();
            got.sort_unstable();
            assert_eq!(got, (0..N).collect::<Vec<_>>());
            let rx = handle.spawn(async move { spawn_all().await }).join().unwrap();
            let mut got: Vec<usize> = rx.iter().collect();
            got.sort_unstable();
            assert_eq!(got, (0..N).collect::<Vec<_>>());
        });
    }

    /// tokio's `many_multishot_futures`/`spawn_from_other_thread`: plain threads spawning
    /// through clones of one `Handle` at the same time lose no task and no result.
    #[test]
    fn plain_threads_spawning_through_one_handle_at_once_lose_nothing() {
        let rt = rt();
        let handle = rt.handle().clone();
        let total = within(EVENTUALLY, move || {
            let threads: Vec<_> = (0..4u64)
                .map(|t| {
                    let h = handle.clone();
                    std::thread::spawn(move || {
                        let handles: Vec<_> = (0..250u64)
                            .map(|i| {
                                let v = t * 1000 + i;
                                if i % 2 == 0 {
                                    h.spawn(async move { v })
                                } else {
                                    h.go(move || v)
                                }
                            })
                            .collect();
                        handles.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).sum::<u64>()
        });
        let expected: u64 = (0..4u64).flat_map(|t| (0..250u64).map(move |i| t * 1000 + i)).sum();
        assert_eq!(total, expected);
        drop(rt);
    }

    /// tokio's `complete_block_on_under_load`, `complete_task_under_load` and
    /// `spawn_from_other_thread_under_load`: with a task that wakes itself for ever on every
    /// worker, a timer still fires for `Runtime::block_on`, a coroutine still sleeps and
    /// finishes, and a plain thread still spawns and joins through a handle.
    #[test]
    fn always_runnable_tasks_on_every_worker_leave_room_for_timers_and_spawns() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let stop = Arc::new(AtomicBool::new(false));
            let loads: Vec<_> = (0..WORKERS)
                .map(|_| {
                    let polls = Arc::new(AtomicU64::new(0));
                    rt.spawn(SelfWaking { stop: stop.clone(), polls })
                })
                .collect();
            let start = Instant::now();
            rt.block_on(corio::time::sleep_async(Duration::from_millis(5)));
            assert!(start.elapsed() >= Duration::from_millis(5));
            let v = rt
                .go(|| {
                    corio::sleep(Duration::from_millis(1));
                    7
                })
                .join()
                .unwrap();
            assert_eq!(v, 7);
            let h = rt.handle().clone();
            let from_thread = std::thread::spawn(move || {
                let a = h.spawn(async { 1 }).join().unwrap();
                let b = h.go(|| 2).join().unwrap();
                a + b
            })
            .join()
            .unwrap();
            assert_eq!(from_thread, 3);
            stop.store(true, SeqCst);
            for l in loads {
                l.join().unwrap();
            }
        });
    }

    /// Go's `TestGoroutineParallelism` with mixed kinds, spawned from inside a coroutine:
    /// with two workers a stackful and a stackless spinner that never call the runtime can
    /// only take turns if they run at once; with one worker they call `yield_now`/
    /// `yield_now_async` between looks (Go's `TestYieldProgress`), so they still do.
    #[test]
    fn a_coroutine_and_a_task_spinning_in_turns_both_finish() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                for _try in 0..5 {
                    let x = Arc::new(AtomicU64::new(0));
                    let xs = x.clone();
                    let stackful = corio::go(move || {
                        for i in 0..3u64 {
                            while xs.load(SeqCst) != 2 * i {
                                if WORKERS == 1 {
                                    corio::yield_now();
                                } else {
                                    std::hint::spin_loop();
                                }
                            }
                            xs.store(2 * i + 1, SeqCst);
                        }
                    });
                    let stackless = corio::spawn(async move {
                        for i in 0..3u64 {
                            while x.load(SeqCst) != 2 * i + 1 {
                                if WORKERS == 1 {
                                    corio::yield_now_async().await;
                                } else {
                                    std::hint::spin_loop();
                                }
                            }
                            x.store(2 * i + 2, SeqCst);
                        }
                    });
                    stackful.join().unwrap();
                    stackless.join().unwrap();
                }
            });
        });
    }

    // ----- spawn_blocking and blocking (tokio's task_blocking.rs) -------------------------

    /// tokio's `spawn_from_blocking`, `spawn_blocking_from_blocking`, `sleep_from_blocking`:
    /// a pool closure spawns both kinds and joins them blocking-style, nests spawn_blocking
    /// three deep, and sleeps on the runtime's timers.
    #[test]
    fn spawn_blocking_closures_spawn_nest_and_sleep() {
        let rt = rt();
        let v = within(EVENTUALLY, move || {
            rt.block_on(async {
                corio::spawn_blocking(|| {
                    let a = corio::spawn(async { 1 }).join().unwrap();
                    let b = corio::go(|| {
                        corio::yield_now();
                        2
                    })
                    .join()
                    .unwrap();
                    let c = corio::spawn_blocking(|| {
                        corio::spawn_blocking(|| corio::spawn_blocking(|| 4).join().unwrap())
                            .join()
                            .unwrap()
                    })
                    .join()
                    .unwrap();
                    let start = Instant::now();
                    corio::sleep(Duration::from_millis(5));
                    assert!(start.elapsed() >= Duration::from_millis(5));
                    a + b + c
                })
                .await
                .unwrap()
            })
        });
        assert_eq!(v, 7);
    }

    // ----- JoinHandle, abort, panics (tokio's task_abort.rs, rt_panic.rs) ------------------

    /// tokio's `test_abort_wakes_task_3964`: aborting a pending task from a plain thread wakes
    /// whoever waits for it, a coroutine in `join`, an async task awaiting the handle or a
    /// plain thread in `join`, with a cancellation; the target's future or stack is dropped
    /// once.
    #[test]
    fn an_abort_from_a_plain_thread_wakes_every_kind_of_joiner_with_a_cancellation() {
        let rt = rt();
        within(EVENTUALLY, move || {
            for target_stackful in [true, false] {
                for joiner in 0..3 {
                    let drops = Drops::new();
                    let token = drops.token();
                    let started = Arc::new(AtomicBool::new(false));
                    let s = started.clone();
                    let gate = Gate::new();
                    let g = gate.clone();
                    let target = if target_stackful {
                        rt.go(move || {
                            let _t = token;
                            s.store(true, SeqCst);
                            corio::block_on(g.wait());
                        })
                    } else {
                        rt.spawn(async move {
                            let _t = token;
                            s.store(true, SeqCst);
                            g.wait().await;
                        })
                    };
                    let abort = target.abort_handle();
                    wait_until("the target started", || started.load(SeqCst));
                    let (res_tx, res_rx) = mpsc::channel();
                    let waiting = match joiner {
                        0 => {
                            rt.go(move || res_tx.send(target.join()).unwrap());
                            None
                        }
                        1 => {
                            rt.spawn(async move { res_tx.send(target.await).unwrap() });
                            None
                        }
                        _ => Some(std::thread::spawn(move || res_tx.send(target.join()).unwrap())),
                    };
                    std::thread::sleep(Duration::from_millis(2)); // the joiner likely waits now
                    abort.abort();
                    let res = res_rx.recv().unwrap();
                    assert!(res.unwrap_err().is_cancelled(), "target stackful {target_stackful}, joiner {joiner}");
                    if let Some(t) = waiting {
                        t.join().unwrap();
                    }
                    wait_until("the target's token is dropped", || drops.dropped() == 1);
                    assert!(abort.is_finished());
                    drop(gate);
                }
            }
        });
    }

    /// A storm of panics of every kind — coroutines, tasks, pool closures, panics inside
    /// `corio::blocking` and inside a nested `block_on` — each reaches its `JoinHandle`, and
    /// the runtime keeps all its workers and goes on running both kinds.
    #[test]
    fn panics_of_every_kind_reach_their_handles_and_leave_every_worker_running() {
        quiet_expected_panics();
        let prefix = format!("srpanic{WORKERS}"); // `comm` keeps 15 bytes
        let rt = corio::Runtime::builder()
            .workers(WORKERS)
            .hog_report(false)
            .thread_name(prefix.clone())
            .build()
            .unwrap();
        let p = prefix.clone();
        let rt = within(EVENTUALLY, move || {
            let mut handles = Vec::new();
            for i in 0..200u32 {
                let h = match i % 5 {
                    0 => rt.go(move || boom("coroutine", i)),
                    1 => rt.spawn(async move { boom("task", i) }),
                    2 => rt.spawn_blocking(move || boom("pool", i)),
                    3 => rt.go(move || corio::blocking(|| boom("blocking", i))),
                    _ => rt.go(move || {
                        corio::yield_now();
                        corio::block_on(async move { boom("nested", i) })
                    }),
                };
                handles.push((i, h));
            }
            for (i, h) in handles {
                let text = payload_text(&*h.join().unwrap_err().into_panic());
                assert!(text.contains(&i.to_string()), "{text}");
            }
            assert_eq!(rt.go(|| 1).join().unwrap() + rt.spawn(async { 2 }).join().unwrap(), 3);
            let workers = threads_named(&p)
                .into_iter()
                .filter(|t| t.comm[p.len() + 1..].parse::<usize>().is_ok_and(|n| n < WORKERS))
                .count();
            assert_eq!(workers, WORKERS, "a worker thread is gone after the panics");
            rt
        });
        drop(rt);
    }

    // ----- resumes do not nest; stacks outlive their resumers (DESIGN.md decision 2) -------

    /// A future awaited by `block_on` borrows the coroutine's stack; the coroutine is
    /// suspended in it hundreds of times while other coroutines of its thread run, recurse and
    /// write their own stacks, and it is resumed both by the worker's loop and by direct
    /// switches. The borrowed stack must come back intact every time.
    #[test]
    fn a_borrow_of_a_suspended_stack_survives_other_coroutines_running_on_its_thread() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let stop = Arc::new(AtomicBool::new(false));
                let churners: Vec<_> = (0..8u64)
                    .map(|k| {
                        let stop = stop.clone();
                        corio::go(move || {
                            let mut acc = 0u64;
                            while !stop.load(SeqCst) {
                                acc ^= scribble(4, k);
                            }
                            acc
                        })
                    })
                    .collect();
                let holders: Vec<_> = (0..4u64)
                    .map(|k| {
                        corio::go(move || {
                            let home = here();
                            let mut local = [0u64; 1024];
                            for (i, w) in local.iter_mut().enumerate() {
                                *w = k * 1_000_003 + i as u64;
                            }
                            let local = &local;
                            corio::block_on(async move {
                                for round in 0..300u64 {
                                    if round % 3 == 0 {
                                        corio::time::sleep_async(Duration::ZERO).await;
                                    }
                                    corio::yield_now_async().await;
                                    let ok = local
                                        .iter()
                                        .enumerate()
                                        .all(|(i, w)| *w == k * 1_000_003 + i as u64);
                                    assert!(ok, "the suspended stack changed under coroutine {k}, round {round}");
                                }
                            });
                            assert_eq!(here(), home);
                            local.iter().sum::<u64>()
                        })
                    })
                    .collect();
                for (k, h) in holders.into_iter().enumerate() {
                    let k = k as u64;
                    let expected: u64 = (0..1024u64).map(|i| k * 1_000_003 + i).sum();
                    assert_eq!(h.join().unwrap(), expected);
                }
                stop.store(true, SeqCst);
                for c in churners {
                    c.join().unwrap();
                }
            });
        });
    }

    /// Coroutines of one thread interleave through every kind of suspension while each checks
    /// that the runtime's view of "the current task" is its own: its id, its name, and its
    /// being stackful, before and after each suspension.
    #[test]
    fn interleaved_coroutines_each_see_themselves_as_current_after_every_suspension() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let handles: Vec<_> = (0..12u64)
                    .map(|k| {
                        corio::Builder::new()
                            .name(format!("co-{k}"))
                            .spawn(move || {
                                let me = corio::current();
                                let name = format!("co-{k}");
                                let mut rng = Rng::new(k + 1);
                                for _ in 0..200 {
                                    match rng.below(5) {
                                        0 => corio::yield_now(),
                                        1 => corio::sleep(Duration::ZERO),
                                        2 => {
                                            let inner = corio::spawn(async { corio::current().id() });
                                            assert_ne!(inner.join().unwrap(), me.id());
                                        }
                                        3 => corio::block_on(async {
                                            corio::yield_now_async().await;
                                            assert_eq!(corio::current().id(), me.id());
                                        }),
                                        _ => {
                                            let v = corio::spawn_blocking(|| corio::try_current().map(|t| t.is_stackful()));
                                            assert_ne!(v.join().unwrap(), Some(true));
                                        }
                                    }
                                    let now = corio::current();
                                    assert_eq!(now.id(), me.id());
                                    assert_eq!(now.name(), Some(name.as_str()));
                                    assert!(now.is_stackful());
                                }
                            })
                            .unwrap()
                    })
                    .collect();
                for h in handles {
                    h.join().unwrap();
                }
            });
        });
    }

    /// A started coroutine keeps its thread through yields, sleeps, joins of movable tasks,
    /// spawn_blocking, and its own long `corio::blocking` calls, which make sysmon hand the
    /// work queued behind it to another worker (or a spare): everything around it moves, it
    /// does not.
    #[test]
    fn a_started_coroutine_keeps_its_thread_through_hand_offs_steals_and_spares() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let handles: Vec<_> = (0..6u64)
                    .map(|k| {
                        corio::go(move || {
                            let home = here();
                            let mut rng = Rng::new(100 + k);
                            for step in 0..40 {
                                match rng.below(6) {
                                    0 => corio::yield_now(),
                                    1 => corio::sleep(Duration::from_millis(1)),
                                    2 => corio::blocking(|| std::thread::sleep(Duration::from_millis(12))),
                                    3 => {
                                        let tasks: Vec<_> = (0..8)
                                            .map(|_| corio::spawn(async { corio::yield_now_async().await }))
                                            .collect();
                                        for t in tasks {
                                            t.join().unwrap();
                                        }
                                    }
                                    4 => corio::spawn_blocking(|| std::thread::sleep(Duration::from_millis(2)))
                                        .join()
                                        .unwrap(),
                                    _ => {
                                        let t0 = Instant::now();
                                        while t0.elapsed() < Duration::from_millis(3) {
                                            runtime_call();
                                        }
                                    }
                                }
                                assert_eq!(here(), home, "coroutine {k} changed thread at step {step}");
                            }
                        })
                    })
                    .collect();
                for h in handles {
                    h.join().unwrap();
                }
            });
        });
    }

    // ----- shutdown (tokio's rt_common.rs) ------------------------------------------------

    /// Dropping the runtime unwinds each suspended coroutine exactly once, on the thread it
    /// ran on, whatever it waits in: the yield queue, a sleep, a channel, a join of a pending
    /// task, a scope, a wake-up that arrived from another thread just before the drop.
    #[test]
    fn the_drop_unwinds_every_suspended_coroutine_once_on_its_own_thread() {
        let rt = rt();
        let drops = Drops::new();
        let elsewhere = Arc::new(AtomicUsize::new(0));
        let (d, e) = (drops.clone(), elsewhere.clone());
        let (keep_tx, keep_rx) = mpsc::channel::<chan::Sender<()>>();
        let (handles_tx, handles_rx) = mpsc::channel::<corio::JoinHandle<()>>();
        let late_gate = Gate::new();
        let lg = late_gate.clone();
        let rt = within(EVENTUALLY, move || {
            let ready = Arc::new(AtomicUsize::new(0));
            let r = ready.clone();
            rt.run(move || {
                let never = Gate::new();
                for i in 0..36u32 {
                    let (d, e, r, never, lg) = (d.clone(), e.clone(), r.clone(), never.clone(), lg.clone());
                    let (tx, rx) = chan::bounded::<()>(0);
                    keep_tx.send(tx).unwrap();
                    let h = corio::go(move || {
                        let _t = HomeToken::new(&d, &e);
                        r.fetch_add(1, SeqCst);
                        match i % 6 {
                            0 => loop {
                                corio::yield_now();
                            },
                            1 => corio::sleep(Duration::from_secs(3600)),
                            2 => {
                                let _ = rx.recv();
                            }
                            3 => {
                                let pending = corio::spawn(never.wait());
                                let _ = pending.join();
                            }
                            4 => corio::scope(|s| {
                                s.go(|| {
                                    let _inner = HomeToken::new(&d, &e);
                                    corio::sleep(Duration::from_secs(3600));
                                });
                            }),
                            _ => {
                                corio::block_on(lg.wait());
                                corio::sleep(Duration::from_secs(3600));
                            }
                        }
                    });
                    handles_tx.send(h).unwrap();
                }
            });
            wait_until("every coroutine started", || ready.load(SeqCst) == 36);
            rt
        });
        let made = || drops.made();
        wait_until("the scoped children started", || made() == 36 + 6);
        late_gate.open(); // wake-ups from this thread, racing the drop
        within(EVENTUALLY, move || drop(rt));
        drop(keep_rx);
        assert_eq!(drops.dropped(), drops.made(), "some destructor never ran");
        let handles: Vec<_> = handles_rx.try_iter().collect();
        assert_eq!(handles.len(), 36);
        for h in handles {
            assert!(h.is_finished());
            assert!(h.join().unwrap_err().is_cancelled());
        }
        assert_eq!(elsewhere.load(SeqCst), 0, "a coroutine was unwound off its thread");
    }

    /// tokio's `wake_while_rt_is_dropping`: destructors run by the shutdown wake other
    /// pending tasks of the runtime (both kinds). The drop still returns, and every
    /// destructor runs exactly once.
    #[test]
    fn destructors_that_wake_other_tasks_during_the_drop_all_run_once() {
        struct OpensOnDrop(Gate, #[allow(dead_code)] DropToken);
        impl Drop for OpensOnDrop {
            fn drop(&mut self) {
                self.0.open();
            }
        }
        let rt = rt();
        let drops = Drops::new();
        let started = Arc::new(AtomicUsize::new(0));
        let gates: Vec<Gate> = (0..8).map(|_| Gate::new()).collect();
        for i in 0..8 {
            let (mine, next) = (gates[i].clone(), gates[(i + 1) % 8].clone());
            let opener = OpensOnDrop(next, drops.token());
            let s = started.clone();
            if i % 2 == 0 {
                rt.go(move || {
                    let _opener = opener;
                    s.fetch_add(1, SeqCst);
                    corio::block_on(mine.wait());
                    corio::sleep(Duration::from_secs(3600));
                });
            } else {
                rt.spawn(async move {
                    let _opener = opener;
                    s.fetch_add(1, SeqCst);
                    mine.wait().await;
                    corio::time::sleep_async(Duration::from_secs(3600)).await;
                });
            }
        }
        wait_until("all started", || started.load(SeqCst) == 8);
        within(EVENTUALLY, move || drop(rt));
        assert_eq!(drops.dropped(), 8);
    }

    /// tokio's `shutdown_timeout_0`: `shutdown_background` and `shutdown_timeout(0)` return
    /// without waiting for sleepers of an hour, and the coroutines are still unwound, each
    /// once, on their own threads.
    #[test]
    fn shutdown_background_and_a_zero_timeout_return_and_still_unwind_everything_once() {
        for background in [true, false] {
            let rt = rt();
            let drops = Drops::new();
            let elsewhere = Arc::new(AtomicUsize::new(0));
            let started = Arc::new(AtomicUsize::new(0));
            for _ in 0..8 {
                let (d, e, s) = (drops.clone(), elsewhere.clone(), started.clone());
                rt.go(move || {
                    let _t = HomeToken::new(&d, &e);
                    s.fetch_add(1, SeqCst);
                    corio::sleep(Duration::from_secs(3600));
                });
                let (t, s) = (drops.token(), started.clone());
                rt.spawn(async move {
                    let _t = t;
                    s.fetch_add(1, SeqCst);
                    corio::time::sleep_async(Duration::from_secs(3600)).await;
                });
            }
            wait_until("all started", || started.load(SeqCst) == 16);
            within(EVENTUALLY, move || {
                if background {
                    rt.shutdown_background();
                } else {
                    rt.shutdown_timeout(Duration::ZERO);
                }
            });
            wait_until("every destructor ran", || drops.dropped() == 16);
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(drops.dropped(), 16, "a destructor ran twice");
            assert_eq!(elsewhere.load(SeqCst), 0, "a coroutine was unwound off its thread");
        }
    }

    /// tokio's `task_blocking.rs` shutdown cases: with one pool thread held by a closure that
    /// waits for this test, a second closure waits in the pool's queue and a coroutine waits
    /// in `join` for it. The drop must not wait for the held thread, and every handle must
    /// resolve: the queued closure is dropped unrun and reported cancelled, the held one
    /// still delivers its result (or a cancellation) once released, and the waiting
    /// coroutine is unwound.
    #[test]
    fn the_drop_resolves_pool_jobs_that_are_running_and_queued() {
        let rt = corio::Runtime::builder()
            .workers(WORKERS)
            .max_blocking_threads(1)
            .hog_report(false)
            .build()
            .unwrap();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let running = Arc::new(AtomicBool::new(false));
        let r = running.clone();
        let held = rt.spawn_blocking(move || {
            r.store(true, SeqCst);
            release_rx.recv().unwrap();
            1
        });
        wait_until("the pool thread is held", || running.load(SeqCst));
        let drops = Drops::new();
        let (token, ran) = (drops.token(), Arc::new(AtomicBool::new(false)));
        let rn = ran.clone();
        let queued = rt.spawn_blocking(move || {
            let _t = token;
            rn.store(true, SeqCst);
            2
        });
        let joiner_in = Arc::new(AtomicBool::new(false));
        let j = joiner_in.clone();
        let joiner = rt.go(move || {
            j.store(true, SeqCst);
            queued.join()
        });
        wait_until("the joiner waits", || joiner_in.load(SeqCst));
        within(EVENTUALLY, move || drop(rt));
        let joined = within(EVENTUALLY, move || joiner.join());
        match joined {
            // The joiner was unwound by the drop, or saw the queued job cancelled first.
            Err(e) => assert!(e.is_cancelled(), "{e}"),
            Ok(r) => assert!(r.unwrap_err().is_cancelled()),
        }
        wait_until("the queued closure is dropped", || drops.dropped() == 1);
        assert!(!ran.load(SeqCst), "a job queued at the drop still ran");
        release_tx.send(()).unwrap();
        let held = within(EVENTUALLY, move || held.join());
        match held {
            Ok(v) => assert_eq!(v, 1),
            Err(e) => assert!(e.is_cancelled(), "{e}"),
        }
    }

    /// Wakers of a coroutine and of a task, kept by a plain thread, are woken (by value and
    /// by reference) and dropped after the runtime is gone: nothing happens, nothing hangs,
    /// and the handles say the tasks were cancelled.
    #[test]
    fn wakers_used_and_dropped_after_the_runtime_is_gone_are_harmless() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let (tx, rx) = mpsc::channel();
            let done = Arc::new(AtomicBool::new(false));
            let (t, d) = (tx.clone(), done.clone());
            let co = rt.go(move || corio::block_on(ShowsWaker { tx: Some(t), done: d }));
            let task = rt.spawn(ShowsWaker { tx: Some(tx), done: done.clone() });
            let wakers: Vec<Waker> = (0..2).map(|_| rx.recv().unwrap()).collect();
            drop(rt);
            done.store(true, SeqCst);
            std::thread::spawn(move || {
                for w in &wakers {
                    w.wake_by_ref();
                }
                let clones: Vec<Waker> = wakers.to_vec();
                for w in wakers {
                    w.wake();
                }
                drop(clones);
            })
            .join()
            .unwrap();
            assert!(co.join().unwrap_err().is_cancelled());
            assert!(task.join().unwrap_err().is_cancelled());
        });
    }

    // ----- the runtime entered inside a task ---------------------------------------------

    /// `Runtime::enter` "makes this runtime the one `corio::spawn`/`corio::go` use on this
    /// thread until the guard is dropped" (its rustdoc); tokio's `Runtime::enter` does the
    /// same inside a task of another runtime. Inside a coroutine of `outer`, entering `inner`
    /// must make `Handle::current()` and `corio::spawn` use `inner`.
    #[test]
    fn entering_another_runtime_inside_a_coroutine_makes_it_the_one_spawns_use() {
        let outer = rt();
        let inner = corio::Runtime::builder()
            .workers(3)
            .thread_name("schedrev-inner")
            .hog_report(false)
            .build()
            .unwrap();
        let inner = Arc::new(inner);
        let i = inner.clone();
        let (workers, thread) = within(EVENTUALLY, move || {
            outer.run(move || {
                let _entered = i.enter();
                let workers = corio::Handle::current().metrics().workers;
                let thread = corio::spawn(async { std::thread::current().name().map(String::from) })
                    .join()
                    .unwrap();
                (workers, thread)
            })
        });
        assert_eq!(workers, 3, "Handle::current() is not the entered runtime");
        assert!(
            thread.as_deref().is_some_and(|n| n.starts_with("schedrev-inner")),
            "the spawn ran on {thread:?}, not on the entered runtime"
        );
    }

    /// Resumes do not nest: a coroutine that entered another runtime and suspended with the
    /// guard alive must not lend that runtime to the coroutine that runs next on its thread,
    /// and gets it back when it resumes.
    #[test]
    fn a_runtime_entered_by_a_suspended_coroutine_stays_its_own() {
        let outer = rt();
        let inner = Arc::new(
            corio::Runtime::builder()
                .workers(3)
                .hog_report(false)
                .build()
                .unwrap(),
        );
        let i = inner.clone();
        let seen = within(EVENTUALLY, move || {
            outer.run(move || {
                let (go_on, wait) = corio::chan::bounded::<()>(0);
                let entered = corio::go(move || {
                    let _entered = i.enter();
                    let before = corio::Handle::current().metrics().workers;
                    wait.recv().unwrap(); // suspended, guard alive
                    (before, corio::Handle::current().metrics().workers)
                });
                // Runs while the other is suspended (on the same thread on 1 worker).
                let other = corio::go(|| corio::Handle::current().metrics().workers)
                    .join()
                    .unwrap();
                let mine = corio::Handle::current().metrics().workers;
                go_on.send(()).unwrap();
                let (before, after) = entered.join().unwrap();
                (other, mine, before, after)
            })
        });
        let own = WORKERS;
        assert_eq!(seen, (own, own, 3, 3), "(other coroutine, main, entered before, after)");
    }
}

// ----- tests that need two workers ----------------------------------------------------------

/// Go's `TestStealOrder` promises that a P looking for work visits every other P; its
/// user-visible half: a coroutine that spawns both kinds and then spins without ever calling
/// the runtime (its worker is gone for good) still sees every child run — taken from its
/// spawn slot and run queue by the other worker.
#[test]
fn two_workers_an_idle_worker_takes_everything_a_spinning_spawner_queued() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        rt.run(|| {
            const N: usize = 64;
            let done = Arc::new(AtomicUsize::new(0));
            for i in 0..N {
                let d = done.clone();
                if i % 2 == 0 {
                    corio::go(move || {
                        d.fetch_add(1, SeqCst);
                    });
                } else {
                    corio::spawn(async move {
                        d.fetch_add(1, SeqCst);
                    });
                }
            }
            while done.load(SeqCst) < N {
                std::hint::spin_loop();
            }
        });
    });
}

// ----- misuse panics name the caller (tokio's rt_panic.rs) ---------------------------------

/// tokio's `rt_panic.rs`: a misuse panic points at the caller's line, not into the runtime
/// (STYLE.md 12: `#[track_caller]` on anything that can panic on misuse). Checked for
/// `Handle::current()` and `corio::current()` outside a runtime, `JoinError::into_panic` of a
/// cancellation, `JoinHandle::join` inside an async task, and `Runtime::block_on` and
/// `Runtime::run` inside a coroutine.
#[test]
fn misuse_panics_point_at_the_callers_line() {
    let sites = panic_sites();
    sites.lock().unwrap().clear();
    let this = file!();
    let expect = |needle: &str| {
        let file = site_of(needle).unwrap_or_else(|| panic!("no panic recorded for {needle:?}"));
        assert!(
            file.ends_with("sched_review_contract.rs"),
            "the panic {needle:?} points at {file}, not at the caller in {this}"
        );
    };
    let outside = std::thread::spawn(|| {
        let _ = std::panic::catch_unwind(|| drop(corio::Handle::current()));
        let _ = std::panic::catch_unwind(|| drop(corio::current()));
    });
    outside.join().unwrap();
    expect("no runtime here");
    expect("current()");
    let rt = Arc::new(support::rt(1));
    let r = rt.clone();
    within(EVENTUALLY, move || {
        let h = r.go(|| corio::sleep(Duration::from_secs(3600)));
        h.abort();
        let err = h.join().unwrap_err();
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(err.into_panic())));
        let pending = r.go(|| 1);
        let _ = r.spawn(async move { pending.join() }).join();
        let me = r.clone();
        let _ = r.go(move || me.block_on(async {})).join();
        let me = r.clone();
        let _ = r.go(move || me.run(|| ())).join();
    });
    expect("into_panic");
    expect("`.await` the future");
    expect("`Runtime::block_on` called from inside a task");
    expect("`Runtime::run` called from inside a task");
}

// ----- thread-local destructors (tokio's rt_common.rs) --------------------------------------

/// tokio's `runtime_in_thread_local`: a runtime kept in a thread-local is dropped by the
/// thread's TLS destructors when the thread exits, while a coroutine of it sleeps. The drop
/// must shut the runtime down (the coroutine unwound), not crash or hang the process. Run in a
/// child process, where an abort is an exit status.
#[test]
fn a_runtime_dropped_by_a_thread_local_destructor_shuts_down() {
    if let Ok(mode) = std::env::var(CHILD) {
        if mode != "runtime-in-tls" {
            return;
        }
        let workers: usize = child_workers();
        thread_local! {
            static KEPT: RefCell<Option<corio::Runtime>> = const { RefCell::new(None) };
        }
        let drops = Drops::new();
        let d = drops.clone();
        within(EVENTUALLY, move || {
            std::thread::spawn(move || {
                let rt = support::rt(workers);
                let started = Arc::new(AtomicBool::new(false));
                let s = started.clone();
                rt.go(move || {
                    let _t = d.token();
                    s.store(true, SeqCst);
                    corio::sleep(Duration::from_secs(3600));
                });
                wait_until("the sleeper started", || started.load(SeqCst));
                KEPT.with(|k| *k.borrow_mut() = Some(rt));
            })
            .join()
            .unwrap();
        });
        wait_until("the sleeper was unwound", || drops.dropped() == 1);
        println!("child-done");
        return;
    }
    for workers in support::FLAVOURS {
        run_child(
            "a_runtime_dropped_by_a_thread_local_destructor_shuts_down",
            "runtime-in-tls",
            workers,
        );
    }
}

/// tokio's `wake_by_ref_from_thread_local`/`wake_from_thread_local`: a plain thread keeps the
/// wakers of a coroutine and of a task in a thread-local and wakes them from its TLS
/// destructor at exit, when the thread's other thread-locals (corio's own included) may be
/// gone. The tasks must be woken and finish; nothing may crash.
#[test]
fn wakers_woken_by_a_thread_local_destructor_wake_their_tasks() {
    if let Ok(mode) = std::env::var(CHILD) {
        if mode != "wake-from-tls" {
            return;
        }
        struct WakeAtExit(Vec<Waker>, Arc<AtomicBool>);
        impl Drop for WakeAtExit {
            fn drop(&mut self) {
                self.1.store(true, SeqCst);
                let mut wakers = std::mem::take(&mut self.0);
                if let Some(w) = wakers.pop() {
                    w.wake_by_ref();
                    drop(w);
                }
                for w in wakers {
                    w.wake();
                }
            }
        }
        thread_local! {
            static KEPT: RefCell<Option<WakeAtExit>> = const { RefCell::new(None) };
        }
        let workers: usize = child_workers();
        let rt = support::rt(workers);
        within(EVENTUALLY, move || {
            let (tx, rx) = mpsc::channel();
            let done = Arc::new(AtomicBool::new(false));
            let (t, d) = (tx.clone(), done.clone());
            let co = rt.go(move || {
                corio::block_on(ShowsWaker {
                    tx: Some(t),
                    done: d,
                })
            });
            let task = rt.spawn(ShowsWaker {
                tx: Some(tx),
                done: done.clone(),
            });
            let wakers: Vec<Waker> = (0..2).map(|_| rx.recv().unwrap()).collect();
            std::thread::spawn(move || {
                KEPT.with(|k| *k.borrow_mut() = Some(WakeAtExit(wakers, done)));
            })
            .join()
            .unwrap();
            co.join().unwrap();
            task.join().unwrap();
        });
        println!("child-done");
        return;
    }
    for workers in support::FLAVOURS {
        run_child(
            "wakers_woken_by_a_thread_local_destructor_wake_their_tasks",
            "wake-from-tls",
            workers,
        );
    }
}
