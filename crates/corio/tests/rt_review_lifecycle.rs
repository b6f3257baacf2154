//! Review of the runtime's public lifecycle API (2026-12-07): `Builder`, `Runtime` (build,
//! run, block_on, drop, shutdown), the hooks, the blocking pool, `JoinHandle`/`AbortHandle`/
//! `JoinError`. Safe code only. Tests that count the process's threads or descriptors run
//! in a child process of their own (this binary re-run with `CHILD` set), so that no other
//! test's threads are counted.
//!
//! Status on the reviewed tree, `724f6da` (each failing one failed every run; all pass since
//! the fixes, docs/soundness.md, "The reviews of 2026-12-07, night"):
//!
//! | test | on the reviewed code |
//! |---|---|
//! | `a_thread_name_fn_panicking_in_build_leaves_no_thread_or_descriptor_behind` | fails: worker 0 and the driver's 3 descriptors leaked |
//! | `a_runtime_whose_worker_start_hook_panicked_is_fully_shut_down_by_its_drop` | fails: sysmon and 3 descriptors leaked |
//! | `run_here_whose_start_hook_panics_leaves_no_thread_or_descriptor_behind` | fails: the same through `run_here` (the test then expected the panic to leave `run_here`; a start hook's panic is now reported and the thread goes on, and the test says so) |
//! | `a_pool_job_whose_thread_start_hook_panicked_still_runs` | fails: the join hangs |
//! | `a_thread_name_fn_panicking_for_a_pool_thread_leaves_the_pool_usable` | fails: the next `spawn_blocking` hangs (the test then expected the name fn's panic to reach the caller; corio now fails that thread's start instead, and the test says so) |
//! | `a_thread_name_fn_panicking_for_a_spare_worker_leaves_sysmon_running` | fails: sysmon's thread died |
//! | `a_runtime_dropped_by_a_waker_that_sysmon_fires_shuts_down` | fails: the drop deadlocks (sysmon waits for worker 0, which joins sysmon) |
//! | `a_runtime_dropped_by_a_spare_workers_start_hook_shuts_down` | fails: the drop waits for its own thread |
//! | `a_detached_tasks_panic_payload_whose_drop_panics_twice_leaves_the_worker_running` | fails: the worker thread dies, the runtime hangs |
//! | `an_unstarted_coroutine_whose_closure_panics_when_dropped_by_an_abort_reports_the_panic` | passes (kept: the stackful twin of an async-only check) |
//! | `a_runtime_dropped_with_an_unstarted_coroutine_whose_closure_panics_shuts_down` | passes (kept: a user panic on the dropping thread inside `begin_shutdown`) |
//! | `dropping_a_runtime_with_a_spare_and_a_trace_leaves_none_of_its_threads_behind` | passes (kept: spares and the trace thread are not in `rt_shutdown.rs`'s thread checks) |
//! | `a_runtime_built_used_and_dropped_inside_another_runtimes_coroutine` | passes (kept: `rt_tokio_suite.rs` checks this inside `block_on` only) |

#[macro_use]
mod support;

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use support::{EVENTUALLY, within};

/// Set in the environment of this binary re-run as a child process.
const CHILD: &str = "CORIO_REVIEW_LIFECYCLE_CHILD";

/// Runs `test` alone in a child process and fails unless it passed there.
fn run_in_child(test: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, test)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("child-done"),
        "child failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
}

/// Whether this process is the child run for `test`.
fn in_child(test: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|t| t == test)
}

/// The names of the process's threads.
fn threads() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| {
            let path = e.ok()?.path().join("comm");
            Some(std::fs::read_to_string(path).ok()?.trim().to_string())
        })
        .collect();
    names.sort();
    names
}

/// Waits (up to 10 s) until the process has `threads` threads and `fds` descriptors again;
/// fails naming what was left.
fn assert_back_to(what: &str, base_threads: &[String], base_fds: &[String]) {
    let start = Instant::now();
    loop {
        let (t, f) = (threads(), support::open_fds());
        if t.len() <= base_threads.len() && f.len() <= base_fds.len() {
            return;
        }
        if start.elapsed() > Duration::from_secs(10) {
            panic!(
                "{what}: threads before {base_threads:?}, 10 s after {t:?}; descriptors before \
                 {base_fds:?}, after {f:?}"
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for `rx` as a hang guard: fails after `EVENTUALLY`.
fn recv_or_hang<T>(rx: &mpsc::Receiver<T>, what: &str) -> T {
    rx.recv_timeout(EVENTUALLY)
        .unwrap_or_else(|_| panic!("{what}: nothing after {EVENTUALLY:?} (hangs)"))
}

// ---------------------------------------------------------------------------------------------
// Builder misuse: hooks that panic
// ---------------------------------------------------------------------------------------------

/// A `thread_name_fn` that panics while `build` starts the second worker: the panic leaves
/// `build`, and the first worker, already started, must not be left running (with the
/// runtime's epoll, eventfd and timerfd) for the rest of the process.
#[test]
fn a_thread_name_fn_panicking_in_build_leaves_no_thread_or_descriptor_behind() {
    const NAME: &str = "a_thread_name_fn_panicking_in_build_leaves_no_thread_or_descriptor_behind";
    if !in_child(NAME) {
        if std::env::var(CHILD).is_err() {
            run_in_child(NAME);
        }
        return;
    }
    let (base_threads, base_fds) = (threads(), support::open_fds());
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let built = catch_unwind(AssertUnwindSafe(|| {
        corio::Runtime::builder()
            .workers(2)
            .hog_report(false)
            .thread_name_fn(move || {
                if c.fetch_add(1, SeqCst) == 1 {
                    panic!("name fn refuses the second thread");
                }
                "lc1-worker".to_string()
            })
            .build()
    }));
    // Either the panic leaves `build` or `build` returns an error; never a runtime.
    assert!(
        !matches!(built, Ok(Ok(_))),
        "the name fn panicked, yet `build` succeeded"
    );
    assert_eq!(calls.load(SeqCst), 2);
    assert_back_to("after the panicking build", &base_threads, &base_fds);
    println!("child-done");
}

/// A worker whose `on_thread_start` hook panicked never runs its loop. The runtime still
/// works on the other worker, and its drop must still shut everything down: sysmon stopped,
/// the threads gone and the descriptors closed.
#[test]
fn a_runtime_whose_worker_start_hook_panicked_is_fully_shut_down_by_its_drop() {
    const NAME: &str = "a_runtime_whose_worker_start_hook_panicked_is_fully_shut_down_by_its_drop";
    if !in_child(NAME) {
        if std::env::var(CHILD).is_err() {
            run_in_child(NAME);
        }
        return;
    }
    let (base_threads, base_fds) = (threads(), support::open_fds());
    let rt = corio::Runtime::builder()
        .workers(2)
        .hog_report(false)
        .thread_name("lc2")
        .on_thread_start(|| {
            if std::thread::current().name() == Some("lc2-0") {
                panic!("start hook refuses worker 0");
            }
        })
        .build()
        .unwrap();
    // The other worker serves the runtime.
    assert_eq!(rt.run(|| corio::go(|| 6 * 7).join().unwrap()), 42);
    within(EVENTUALLY, move || drop(rt));
    assert_back_to("after the drop", &base_threads, &base_fds);
    println!("child-done");
}

/// A blocking-pool thread whose `on_thread_start` hook panics (once) dies before it serves
/// the job it was started for. That job must still run (or its handle resolve): the pool
/// must not count the dead thread as one that will serve its queue.
#[test]
fn a_pool_job_whose_thread_start_hook_panicked_still_runs() {
    within(EVENTUALLY + Duration::from_secs(5), || {
        let panicked = Arc::new(AtomicUsize::new(0));
        let p = panicked.clone();
        let rt = corio::Runtime::builder()
            .workers(1)
            .hog_report(false)
            .thread_name("lc3")
            .on_thread_start(move || {
                let name = std::thread::current().name().map(String::from);
                if name.as_deref() == Some("lc3-blocking") && p.fetch_add(1, SeqCst) == 0 {
                    panic!("start hook refuses the first pool thread");
                }
            })
            .build()
            .unwrap();
        let h = rt.spawn_blocking(|| 7);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(h.join());
        });
        let got = recv_or_hang(&rx, "the join of the pool job");
        assert_eq!(panicked.load(SeqCst), 1, "the hook panicked once");
        // Ok(7) is the expectation; a JoinError would at least not hang.
        assert_eq!(got.ok(), Some(7));
        // Leave the runtime (and its stuck pool) to the process if it hung: no drop here.
        drop(rt);
    });
}

/// A `thread_name_fn` that panics when the blocking pool starts a thread: that start fails,
/// as one the system refuses (reported on stderr; the job stays queued). The pool must stay
/// usable: with `max_blocking_threads(1)` a later `spawn_blocking` must start a thread, which
/// runs both jobs. (It hung: the failed start kept its place in the thread count.)
#[test]
fn a_thread_name_fn_panicking_for_a_pool_thread_leaves_the_pool_usable() {
    within(EVENTUALLY + Duration::from_secs(5), || {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let rt = corio::Runtime::builder()
            .workers(1)
            .hog_report(false)
            .max_blocking_threads(1)
            .thread_name_fn(move || {
                // Call 0 names the worker; call 1 the first pool thread.
                if c.fetch_add(1, SeqCst) == 1 {
                    panic!("name fn refuses the first pool thread");
                }
                "lc4".to_string()
            })
            .build()
            .unwrap();
        let first = catch_unwind(AssertUnwindSafe(|| rt.spawn_blocking(|| 1)))
            .expect("the name fn's panic is the pool thread's failed start, not the caller's");
        assert_eq!(calls.load(SeqCst), 2, "the pool tried to start a thread");
        let h = rt.spawn_blocking(|| 7);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send((first.join(), h.join()));
        });
        let (first, got) = recv_or_hang(&rx, "the joins of the two pool jobs");
        assert_eq!(
            first.ok(),
            Some(1),
            "the job queued at the failed start did not run"
        );
        assert_eq!(got.ok(), Some(7));
        drop(rt);
    });
}

// ---------------------------------------------------------------------------------------------
// The last `Runtime` dropped from user code that the runtime runs on its own threads
// ---------------------------------------------------------------------------------------------

/// Where a test keeps the runtime for the user callback that drops it.
type Slot = Arc<std::sync::Mutex<Option<corio::Runtime>>>;

/// Spins on the calling worker for `d` without a runtime call (a hog).
fn hog(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// A waker that, when woken, takes the runtime out of its slot, drops it, and says so.
struct DropsRuntime {
    slot: Slot,
    dropped: mpsc::Sender<String>,
}

impl std::task::Wake for DropsRuntime {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let rt = self.slot.lock().unwrap().take();
        if let Some(rt) = rt {
            let thread = std::thread::current().name().unwrap_or("?").to_string();
            let _ = self.dropped.send(format!("entered on {thread}"));
            drop(rt);
            let _ = self.dropped.send(thread);
        }
    }
}

/// A waker fired by sysmon (the due timer of a worker busy in a long task: sysmon fires it so
/// that the sleeper is not late by the whole task) drops the last `Runtime`, on the sysmon
/// thread. That is a drop from a thread that is not a worker, so it shuts down and joins the
/// workers; the drop must return, as a drop on any other thread does, not wait for ever for a
/// sysmon that is itself.
#[test]
fn a_runtime_dropped_by_a_waker_that_sysmon_fires_shuts_down() {
    let (tx, rx) = mpsc::channel();
    let slot: Slot = Arc::default();
    let rt = corio::Runtime::builder()
        .workers(1)
        .hog_report(false)
        .thread_name("lc5")
        .build()
        .unwrap();
    let waker = std::task::Waker::from(Arc::new(DropsRuntime {
        slot: slot.clone(),
        dropped: tx,
    }));
    let (registered_tx, registered_rx) = mpsc::channel();
    let _hogger = rt.go(move || {
        // Registered on this worker's heap, with a waker that is not corio's.
        let mut sleep = Box::pin(corio::time::sleep_async(Duration::from_millis(20)));
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        registered_tx.send(()).unwrap();
        // Hold the worker well past the deadline: sysmon fires the timer.
        hog(Duration::from_secs(2));
        drop(sleep);
    });
    registered_rx.recv().unwrap();
    *slot.lock().unwrap() = Some(rt);
    let entered = recv_or_hang(&rx, "the waker's call (test setup)");
    println!("the waker's drop {entered}");
    let thread = recv_or_hang(&rx, "the runtime's drop inside the waker");
    // Where it ran (sysmon, as expected; a worker would also be fine).
    println!("the waker dropped the runtime on {thread}");
}

/// A spare worker's `on_thread_start` hook drops the last `Runtime` (sysmon started the spare
/// because both workers hog while work waits). The drop runs on a thread of the runtime that
/// is not yet a worker; it must return, not wait for that thread (itself) to exit.
#[test]
fn a_runtime_dropped_by_a_spare_workers_start_hook_shuts_down() {
    let (tx, rx) = mpsc::channel::<String>();
    let slot: Slot = Arc::default();
    let s = slot.clone();
    let tx = std::sync::Mutex::new(tx);
    let rt = corio::Runtime::builder()
        .workers(2)
        .hog_report(false)
        .thread_name("lc6")
        .on_thread_start(move || {
            let name = std::thread::current().name().unwrap_or("").to_string();
            let spare = name
                .strip_prefix("lc6-")
                .and_then(|i| i.parse::<usize>().ok())
                .is_some_and(|i| i >= 2);
            // Taken out first: the slot's lock is not held across the drop.
            let rt = if spare {
                s.lock().unwrap().take()
            } else {
                None
            };
            if let Some(rt) = rt {
                let _ = tx.lock().unwrap().send(format!("entered on {name}"));
                drop(rt);
                let _ = tx.lock().unwrap().send(name);
            }
        })
        .build()
        .unwrap();
    let handle = rt.handle().clone();
    *slot.lock().unwrap() = Some(rt);
    // Both workers hog; movable work waits behind them: sysmon starts a spare.
    let (started_tx, started_rx) = mpsc::channel();
    let hogs: Vec<_> = (0..2)
        .map(|_| {
            let started = started_tx.clone();
            handle.go(move || {
                started.send(()).unwrap();
                hog(Duration::from_secs(3));
            })
        })
        .collect();
    for _ in 0..2 {
        started_rx.recv().unwrap();
    }
    let queued: Vec<_> = (0..8).map(|_| handle.spawn(async {})).collect();
    let entered = recv_or_hang(&rx, "the spare's start hook (test setup)");
    println!("the start hook's drop {entered}");
    let name = recv_or_hang(&rx, "the runtime's drop in the spare's start hook");
    println!("the start hook of {name} dropped the runtime");
    drop((hogs, queued));
}

// ---------------------------------------------------------------------------------------------
// JoinHandle and JoinError
// ---------------------------------------------------------------------------------------------

/// A panic payload whose destructor panics with a payload whose destructor panics too.
struct Bomb(u32);

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.0 > 0 {
            std::panic::panic_any(Bomb(self.0 - 1));
        }
    }
}

/// A detached task (its `JoinHandle` dropped) panics with a payload whose drop panics with
/// a payload whose drop panics. The runtime drops the payload, since nobody will read it,
/// and must catch whatever that drop raises: the worker must go on running tasks.
#[test]
fn a_detached_tasks_panic_payload_whose_drop_panics_twice_leaves_the_worker_running() {
    within(EVENTUALLY + Duration::from_secs(5), || {
        let rt = corio::Runtime::builder()
            .workers(1)
            .hog_report(false)
            .build()
            .unwrap();
        for stackful in [false, true] {
            let (tx, rx) = mpsc::channel();
            let h = if stackful {
                rt.go(move || {
                    let _ = rx.recv();
                    std::panic::panic_any(Bomb(2));
                })
            } else {
                rt.spawn(async move {
                    let _ = rx.recv();
                    std::panic::panic_any(Bomb(2));
                })
            };
            drop(h);
            tx.send(()).unwrap();
            let (done_tx, done_rx) = mpsc::channel();
            let handle = rt.handle().clone();
            std::thread::spawn(move || {
                let _ = done_tx.send(handle.go(|| 42).join().ok());
            });
            assert_eq!(
                recv_or_hang(&done_rx, "a coroutine spawned after the payload's drop"),
                Some(42),
                "stackful: {stackful}"
            );
        }
    });
}

/// Panics when dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("PanicsOnDrop");
    }
}

/// Holds the only worker of `rt` (a thread sleep inside a coroutine) until `release` is
/// sent or dropped, so that what is spawned meanwhile does not start.
fn hold_worker(rt: &corio::Runtime) -> (corio::JoinHandle<()>, mpsc::Sender<()>) {
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let h = rt.go(move || {
        started_tx.send(()).unwrap();
        let _ = release_rx.recv(); // blocks the thread: nothing else runs on it
    });
    started_rx.recv().unwrap();
    (h, release_tx)
}

/// An unstarted coroutine is aborted; dropping its closure panics. As for an async task
/// (`rt_common.rs`, `a_future_whose_destructor_panics_when_aborted_reports_that_panic`), the
/// handle reports that panic, and the runtime goes on.
#[test]
fn an_unstarted_coroutine_whose_closure_panics_when_dropped_by_an_abort_reports_the_panic() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let (holder, release) = hold_worker(&rt);
        let bomb = PanicsOnDrop;
        let victim = rt.go(move || {
            let _keep = &bomb;
        });
        victim.abort();
        drop(release);
        holder.join().unwrap();
        let err = victim.join().unwrap_err();
        assert!(err.is_panic(), "{err:?}");
        assert_eq!(rt.run(|| 42), 42);
    });
}

/// The runtime is dropped while a coroutine that never started is queued; dropping its
/// closure panics (on the dropping thread, which cancels unstarted work). The drop must still
/// shut the runtime down and return; its handle reports the panic or the cancellation.
#[test]
fn a_runtime_dropped_with_an_unstarted_coroutine_whose_closure_panics_shuts_down() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let (holder, release) = hold_worker(&rt);
        let bomb = PanicsOnDrop;
        let victim = rt.go(move || {
            let _keep = &bomb;
        });
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(release);
        });
        let dropped = catch_unwind(AssertUnwindSafe(move || drop(rt)));
        releaser.join().unwrap();
        assert!(dropped.is_ok(), "the runtime's drop panicked");
        let _ = holder.join();
        let err = victim.join().unwrap_err();
        assert!(err.is_panic() || err.is_cancelled(), "{err:?}");
    });
}

/// A `thread_name_fn` that panics when sysmon starts a spare worker (both workers hog while
/// work waits). The name function runs on the sysmon thread: its panic must not end sysmon
/// (which preempts, fires the timers of busy workers and hands work off for the runtime's
/// whole life); a thread that cannot be started is reported and skipped, as a failed spawn is.
#[test]
fn a_thread_name_fn_panicking_for_a_spare_worker_leaves_sysmon_running() {
    within(EVENTUALLY + Duration::from_secs(5), || {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let rt = corio::Runtime::builder()
            .workers(2)
            .hog_report(false)
            .thread_name("lc7")
            .thread_name_fn(move || {
                let n = c.fetch_add(1, SeqCst);
                if n == 2 {
                    panic!("name fn refuses the first spare");
                }
                format!("lc7-w{n}")
            })
            .build()
            .unwrap();
        let sysmon_alive = || threads().iter().any(|t| t == "lc7-sysmon");
        // (A new thread names itself as it starts.)
        support::wait_until("sysmon's thread is named", sysmon_alive);
        let (started_tx, started_rx) = mpsc::channel();
        let hogs: Vec<_> = (0..2)
            .map(|_| {
                let started = started_tx.clone();
                rt.go(move || {
                    started.send(()).unwrap();
                    hog(Duration::from_secs(2));
                })
            })
            .collect();
        for _ in 0..2 {
            started_rx.recv().unwrap();
        }
        let queued: Vec<_> = (0..8).map(|_| rt.spawn(async {})).collect();
        for h in hogs {
            h.join().unwrap();
        }
        for h in queued {
            h.join().unwrap();
        }
        assert!(calls.load(SeqCst) >= 3, "sysmon tried to start a spare");
        assert!(sysmon_alive(), "sysmon's thread is gone");
    });
}

/// `run_here` whose `on_thread_start` hook panics on the calling thread (its worker 0): the
/// panic is reported and the thread goes on (the `on_thread_start` contract), so `run_here`
/// runs `f`; and the runtime it built must be gone after it (sysmon stopped, descriptors
/// closed), as after any other `run_here`. (Before, the hook's panic left `run_here` and
/// leaked sysmon and the driver's three descriptors.)
#[test]
fn run_here_whose_start_hook_panics_leaves_no_thread_or_descriptor_behind() {
    const NAME: &str = "run_here_whose_start_hook_panics_leaves_no_thread_or_descriptor_behind";
    if !in_child(NAME) {
        if std::env::var(CHILD).is_err() {
            run_in_child(NAME);
        }
        return;
    }
    let (base_threads, base_fds) = (threads(), support::open_fds());
    let caller = std::thread::current().id();
    let ran = catch_unwind(AssertUnwindSafe(|| {
        corio::Runtime::builder()
            .workers(1)
            .hog_report(false)
            .thread_name("lc8")
            .on_thread_start(move || {
                if std::thread::current().id() == caller {
                    panic!("start hook refuses the caller's thread");
                }
            })
            .run_here(|| 42)
    }));
    assert!(
        matches!(ran, Ok(Ok(42))),
        "the hook's panic is reported and the thread goes on, so run_here runs `f`"
    );
    assert_back_to("after the panicking run_here", &base_threads, &base_fds);
    println!("child-done");
}

/// A runtime that started a spare worker and runs a scheduler trace leaves none of its
/// threads (workers, the spare, sysmon, the trace thread, the pool) behind once dropped.
#[test]
fn dropping_a_runtime_with_a_spare_and_a_trace_leaves_none_of_its_threads_behind() {
    within(EVENTUALLY + Duration::from_secs(5), || {
        let rt = corio::Runtime::builder()
            .workers(2)
            .hog_report(false)
            .thread_name("lc9")
            .sched_trace(Duration::from_secs(3600), false)
            .build()
            .unwrap();
        let (started_tx, started_rx) = mpsc::channel();
        let hogs: Vec<_> = (0..2)
            .map(|_| {
                let started = started_tx.clone();
                rt.go(move || {
                    started.send(()).unwrap();
                    hog(Duration::from_millis(1500));
                })
            })
            .collect();
        for _ in 0..2 {
            started_rx.recv().unwrap();
        }
        let queued: Vec<_> = (0..8)
            .map(|_| rt.spawn(async { corio::spawn_blocking(|| ()).await.unwrap() }))
            .collect();
        for h in hogs.into_iter().chain(queued) {
            h.join().unwrap();
        }
        assert!(rt.metrics().spares_started >= 1, "sysmon started a spare");
        drop(rt);
        let gone = support::holds_within(Duration::from_secs(5), || {
            support::threads_named("lc9").is_empty()
        });
        assert!(gone, "threads left: {:?}", support::threads_named("lc9"));
    });
}

/// A runtime built inside a coroutine of another runtime, used there (a coroutine and a task
/// joined, a sleeper left running) and dropped there: the drop cancels the sleeper and
/// returns, and the outer runtime goes on.
#[test]
fn a_runtime_built_used_and_dropped_inside_another_runtimes_coroutine() {
    for workers in support::FLAVOURS {
        within(EVENTUALLY, move || {
            let outer = support::rt(workers);
            let got = outer.run(move || {
                let inner = support::rt(workers);
                let a = inner.go(|| 40).join().unwrap();
                let b = corio::block_on(inner.spawn(async { 2 })).unwrap();
                let sleeper = inner.go(|| corio::sleep(Duration::from_secs(3600)));
                drop(inner);
                assert!(sleeper.join().unwrap_err().is_cancelled());
                a + b
            });
            assert_eq!(got, 42);
            assert_eq!(outer.run(|| corio::go(|| 1).join().unwrap()), 1);
        });
    }
}
