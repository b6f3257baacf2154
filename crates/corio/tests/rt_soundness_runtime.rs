//! Soundness at the edges of the runtime's life: shutdown never unwinds a started coroutine off
//! its home thread, entering a runtime is scoped to the thread and nests, and the documented
//! `panic = "abort"` behaviour holds (`docs/soundness.md`, "The runtime's edges").

#[macro_use]
mod support;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use corio::Handle;

/// Counts what happened to the stress test's coroutines.
#[derive(Default)]
struct Tally {
    started: AtomicUsize,
    unwound: AtomicUsize,
    /// Unwinds that ran on another thread than the coroutine started on, with both ids.
    off_home: Mutex<Vec<(ThreadId, ThreadId)>>,
}

/// Lives on a coroutine's stack; its drop (the unwind at shutdown) records the thread.
struct HomeCheck {
    home: ThreadId,
    tally: Arc<Tally>,
}

impl Drop for HomeCheck {
    fn drop(&mut self) {
        let here = std::thread::current().id();
        if here != self.home {
            self.tally.off_home.lock().unwrap().push((self.home, here));
        }
        self.tally.unwound.fetch_add(1, SeqCst);
    }
}

/// A destructor that is slow: a worker unwinding its coroutines at shutdown takes a while to
/// reach each one, which widens the window in which another thread could reach it first.
struct SlowDrop;

impl Drop for SlowDrop {
    fn drop(&mut self) {
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// A waker that is slow to wake: fired from a worker's timer maintenance, it holds that worker
/// between its shutdown check and the next task it starts.
struct SlowWaker(Waker);

impl Wake for SlowWaker {
    fn wake(self: Arc<Self>) {
        std::thread::sleep(Duration::from_millis(1));
        self.0.wake_by_ref();
    }
}

/// Polls `F` with a [`SlowWaker`] around the task's waker.
struct SlowlyWoken<F>(Pin<Box<F>>);

impl<F: Future> Future for SlowlyWoken<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let waker = Waker::from(Arc::new(SlowWaker(cx.waker().clone())));
        self.0.as_mut().poll(&mut Context::from_waker(&waker))
    }
}

/// One round: fill the workers with coroutines that start and block for ever, then drop the
/// runtime while the workers are part-way through starting them. Slow wakers fired in the
/// workers' timer maintenance hold a worker between its shutdown check and the next coroutine
/// it starts; slow closure drops slow the dropping thread's cancellation of unstarted
/// coroutines; the same values, on started stacks, slow the workers' own unwinding. Together
/// they open the window of issue 7 item 3 in most rounds.
fn drop_runtime_while_coroutines_start(round: usize, tally: &Arc<Tally>) {
    let rt = corio::Runtime::builder().workers(2).build().unwrap();
    for _ in 0..2 {
        drop(rt.spawn(async {
            loop {
                SlowlyWoken(Box::pin(corio::time::sleep_async(Duration::from_micros(
                    50,
                ))))
                .await;
            }
        }));
    }
    let before = tally.started.load(SeqCst);
    for i in 0..300 {
        let tally = tally.clone();
        let slow = (i % 2 == 0).then_some(SlowDrop);
        drop(rt.go(move || {
            let _slow = slow;
            tally.started.fetch_add(1, SeqCst);
            let _check = HomeCheck {
                home: std::thread::current().id(),
                tally,
            };
            corio::block_on(std::future::pending::<()>());
        }));
    }
    // Drop while the workers are part-way through the burst (a different part each round).
    let target = before + 5 + (round * 37) % 200;
    let limit = Instant::now() + Duration::from_secs(2);
    while tally.started.load(SeqCst) < target && Instant::now() < limit {
        std::hint::spin_loop();
    }
    drop(rt);
}

/// Issue 7, item 3: `begin_shutdown` collected the coroutines that had not started, and a
/// worker could start one of them before the dropping thread cancelled it; the dropping thread
/// then unwound that started coroutine's stack on itself.
#[test]
fn dropping_runtimes_while_coroutines_start_unwinds_every_coroutine_on_its_home_thread() {
    let tally = Arc::new(Tally::default());
    let budget = if cfg!(debug_assertions) {
        Duration::from_secs(4)
    } else {
        Duration::from_secs(3)
    };
    let begin = Instant::now();
    let mut rounds = 0;
    while begin.elapsed() < budget || rounds < 20 {
        drop_runtime_while_coroutines_start(rounds, &tally);
        rounds += 1;
    }
    let off_home = tally.off_home.lock().unwrap();
    assert!(
        off_home.is_empty(),
        "{} of {} unwinds (in {rounds} rounds) ran off the coroutine's home thread: {:?}",
        off_home.len(),
        tally.unwound.load(SeqCst),
        &off_home[..off_home.len().min(4)]
    );
    assert_eq!(
        tally.started.load(SeqCst),
        tally.unwound.load(SeqCst),
        "every coroutine that started was unwound at shutdown"
    );
    assert!(
        tally.started.load(SeqCst) > 0,
        "the stress test started no coroutine at all"
    );
    assert!(Handle::try_current().is_none());
}

fn named_rt(name: &str) -> corio::Runtime {
    corio::Runtime::builder()
        .workers(1)
        .thread_name(name)
        .build()
        .unwrap()
}

/// The worker-thread name of the runtime `corio::spawn` uses from this thread now.
fn current_runtime_name() -> Option<String> {
    Handle::try_current()?;
    let task = corio::spawn(async { std::thread::current().name().map(str::to_owned) });
    task.join().unwrap()
}

/// Issue 8, bug 6: `drop(g1)` restored what was entered before `g1` (nothing), leaving `rt1`
/// entered by nobody; dropping `g2` then restored `rt1`, which stayed entered after both
/// runtimes were gone.
#[test]
fn enter_guards_dropped_out_of_order_leave_exactly_the_runtimes_still_entered() {
    let rt1 = named_rt("entered-one");
    let rt2 = named_rt("entered-two");
    let g1 = rt1.enter();
    let g2 = rt2.enter();
    assert_eq!(current_runtime_name().as_deref(), Some("entered-two-0"));
    drop(g1);
    // `g2` still holds its runtime entered.
    assert_eq!(current_runtime_name().as_deref(), Some("entered-two-0"));
    drop(g2);
    assert!(
        Handle::try_current().is_none(),
        "no guard is alive, yet a runtime is still entered"
    );
    drop(rt1);
    drop(rt2);
    // With nothing entered, spawning uses the default runtime, which runs the task.
    assert_eq!(corio::spawn(async { 7 }).join().unwrap(), 7);
}

#[test]
fn enter_guards_dropped_in_order_restore_the_runtime_entered_before() {
    let rt1 = named_rt("nested-one");
    let rt2 = named_rt("nested-two");
    let g1 = rt1.enter();
    {
        let _g2 = rt2.enter();
        assert_eq!(current_runtime_name().as_deref(), Some("nested-two-0"));
    }
    assert_eq!(current_runtime_name().as_deref(), Some("nested-one-0"));
    drop(g1);
    assert!(Handle::try_current().is_none());
}

/// Issue 7, item 4: under `panic = "abort"`, cancelling a started coroutine (abort, or the
/// runtime's drop) resumed it with a cancellation that unwinds, which aborted the process. Builds
/// `examples/cancellation.rs` with `-C panic=abort` (its own target directory) and runs it.
#[test]
fn under_panic_abort_cancelling_a_blocked_coroutine_leaks_it_with_a_warning() {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target_dir = manifest_dir.join("../../target/panic-abort");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args([
            "run",
            "-q",
            "--offline",
            "-p",
            "corio",
            "--example",
            "cancellation",
        ])
        .current_dir(manifest_dir)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("RUSTFLAGS", "-C panic=abort")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output();
    let output = match output {
        Ok(output) => output,
        Err(e) => {
            eprintln!("SKIPPED: cannot run {cargo:?} to build the panic=abort example: {e}");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the panic=abort build of examples/cancellation.rs failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains("panic strategy: abort"), "{stdout}");
    assert!(
        stdout.contains("abort: cancelled=true destructors run=0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("runtime drop: cancelled=true destructors run=0"),
        "{stdout}"
    );
    let warnings = stderr
        .lines()
        .filter(|l| l.contains("cancelled under panic=abort") && l.contains("leaked"))
        .count();
    assert_eq!(
        warnings, 2,
        "one warning line per leaked coroutine:\n{stderr}"
    );
}

/// Panics when dropped: on a cancelled coroutine's stack, while the cancellation unwinds it.
struct PanicsInDrop;

impl Drop for PanicsInDrop {
    fn drop(&mut self) {
        panic!("a destructor panicked");
    }
}

/// The child half of the tests below: set in the environment of the re-run test binary.
const CHILD: &str = "CORIO_RT_SOUNDNESS_CHILD";

/// Runs `test` of this binary alone in a child process with `CHILD=mode`.
fn run_child(test: &str, mode: &str) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, mode)
        .output()
        .unwrap()
}

/// In the child: a coroutine blocked with a `PanicsInDrop` on its stack is cancelled.
fn cancel_a_coroutine_whose_destructor_panics(by_dropping_the_runtime: bool) {
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let seen = started.clone();
    let handle = rt.go(move || {
        let _p = PanicsInDrop;
        seen.fetch_add(1, SeqCst);
        corio::block_on(std::future::pending::<()>());
    });
    support::wait_until("the coroutine started", || started.load(SeqCst) == 1);
    if by_dropping_the_runtime {
        drop(rt);
    } else {
        handle.abort();
    }
    let _ = handle.join();
    println!("the process survived");
}

/// Issue 8, "Document": cancellation unwinds a coroutine's stack, and a destructor that panics
/// during an unwind aborts the process (Rust's "panic in a destructor during cleanup"), for an
/// abort and for the runtime's drop alike; `JoinHandle::abort` and `Runtime` say so.
#[test]
fn a_destructor_panicking_while_a_coroutine_is_cancelled_aborts_the_process() {
    match std::env::var(CHILD).as_deref() {
        Ok("abort") => return cancel_a_coroutine_whose_destructor_panics(false),
        Ok("drop") => return cancel_a_coroutine_whose_destructor_panics(true),
        _ => {}
    }
    for mode in ["abort", "drop"] {
        let output = run_child(
            "a_destructor_panicking_while_a_coroutine_is_cancelled_aborts_the_process",
            mode,
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            output.status.signal(),
            Some(libc::SIGABRT),
            "{mode}: the child did not abort ({}):\n{stdout}\n{stderr}",
            output.status
        );
        assert!(!stdout.contains("the process survived"), "{mode}: {stdout}");
        assert!(
            stderr.contains("panic in a destructor during cleanup"),
            "{mode}: {stderr}"
        );
    }
}

/// The other half of the documented contrast: an async task is dropped, not unwound, so a
/// destructor that panics when it is aborted is caught and reported as `JoinError::Panic`.
#[test]
fn a_destructor_panicking_while_an_async_task_is_aborted_is_reported_as_a_join_panic() {
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let seen = started.clone();
    let handle = rt.spawn(async move {
        let _p = PanicsInDrop;
        seen.fetch_add(1, SeqCst);
        std::future::pending::<()>().await;
    });
    support::wait_until("the task started", || started.load(SeqCst) == 1);
    handle.abort();
    let error = handle.join().unwrap_err();
    assert!(error.is_panic(), "{error}");
    let message = error.into_panic();
    assert_eq!(
        message.downcast_ref::<&str>(),
        Some(&"a destructor panicked")
    );
}

/// Starts a coroutine that waits for `gate`, then reports on `tx`; returns once it has
/// started (and so is pinned to the worker it started on).
fn pinned_waiter(gate: &support::Gate, tx: std::sync::mpsc::Sender<()>) -> corio::JoinHandle<()> {
    let started = Arc::new(AtomicUsize::new(0));
    let seen = started.clone();
    let wait = gate.wait();
    let handle = corio::go(move || {
        seen.fetch_add(1, SeqCst);
        corio::block_on(wait);
        tx.send(()).unwrap();
    });
    while started.load(SeqCst) == 0 {
        corio::yield_now();
    }
    handle
}

/// `corio::blocking`'s docs: while a coroutine is inside `blocking`, the coroutines pinned to
/// its worker cannot run, so a blocking call that waits for one of them waits in vain (here
/// for a second, instead of for ever); the same wait through `spawn_blocking` completes.
#[test]
fn coroutines_pinned_to_a_worker_inside_blocking_wait_until_it_returns() {
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    rt.run(|| {
        let gate = support::Gate::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = pinned_waiter(&gate, tx);
        let waited = corio::blocking(|| {
            gate.open();
            rx.recv_timeout(Duration::from_secs(1))
        });
        assert!(
            waited.is_err(),
            "a coroutine pinned to this worker ran while it was inside `blocking`"
        );
        waiter.join().unwrap();
        assert!(rx.try_recv().is_ok(), "it ran once `blocking` returned");

        // The documented way out: the blocking call on the blocking pool.
        let gate = support::Gate::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = pinned_waiter(&gate, tx);
        let opener = gate.clone();
        let waited = corio::spawn_blocking(move || {
            opener.open();
            rx.recv_timeout(support::EVENTUALLY)
        });
        assert!(waited.join().unwrap().is_ok());
        waiter.join().unwrap();
    });
}

/// In the child: the crate docs' "do not do this" — a std `Mutex` guard held across a
/// suspension on one worker, the second locker named `stuck-locker`. Never returns.
fn std_mutex_held_across_a_yield() {
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    let count = Arc::new(Mutex::new(0));
    rt.run(move || {
        let c = count.clone();
        let a = corio::go(move || {
            let mut n = c.lock().unwrap();
            corio::yield_now();
            *n += 1;
        });
        let b = corio::Builder::new()
            .name("stuck-locker")
            .spawn(move || *count.lock().unwrap() += 1)
            .unwrap();
        a.join().unwrap();
        b.join().unwrap();
    });
    println!("the coroutines finished");
}

/// The crate docs, "Blocking the worker": a std `Mutex` guard held across a suspension
/// deadlocks a one-worker runtime for ever, and sysmon's hog report names the coroutine stuck
/// in `lock()`. Runs in a child process, killed once the report is seen.
#[test]
fn a_std_mutex_guard_held_across_a_yield_deadlocks_the_worker_and_the_hog_report_names_the_locker()
{
    if std::env::var(CHILD).as_deref() == Ok("mutex") {
        return std_mutex_held_across_a_yield();
    }
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "a_std_mutex_guard_held_across_a_yield_deadlocks_the_worker_and_the_hog_report_names_the_locker",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD, "mutex")
        .env("CORIO_HOG_REPORT", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if line.contains("'stuck-locker'") && line.contains("without yielding") {
                let _ = tx.send(line);
                return;
            }
        }
    });
    let report = rx.recv_timeout(support::EVENTUALLY);
    let still_running = child.try_wait().unwrap().is_none();
    child.kill().unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(report.is_ok(), "no hog report named the stuck locker");
    assert!(still_running, "the deadlocked child exited: {stdout}");
    assert!(!stdout.contains("the coroutines finished"), "{stdout}");
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The crate docs, "Blocking the worker": a thread-local `RefCell` borrowed across a
/// suspension is still borrowed when the next coroutine of the thread touches it.
#[test]
fn a_thread_local_borrow_held_across_a_yield_makes_the_next_coroutine_panic() {
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    let second = rt.run(|| {
        let holder = corio::go(|| {
            SCRATCH.with(|s| {
                let mut v = s.borrow_mut();
                corio::yield_now();
                v.push(1);
            })
        });
        let second = corio::go(|| SCRATCH.with(|s| s.borrow_mut().push(2)));
        holder.join().unwrap();
        second.join()
    });
    let error = second.unwrap_err();
    assert!(error.is_panic(), "{error}");
    let payload = error.into_panic();
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(message.contains("already borrowed"), "{message}");
}

/// In the child: a coroutine writes a line in two pieces under `StdoutLock`, suspending in
/// between; another coroutine of the thread prints meanwhile.
fn stdout_lock_held_across_a_yield() {
    use std::io::Write;
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    rt.run(|| {
        let writer = corio::go(|| {
            let mut out = std::io::stdout().lock();
            write!(out, "[first half ").unwrap();
            corio::yield_now();
            writeln!(out, "second half]").unwrap();
        });
        let other = corio::go(|| println!("other coroutine"));
        writer.join().unwrap();
        other.join().unwrap();
    });
}

/// The crate docs, "Blocking the worker": `StdoutLock` is re-entrant per thread, so another
/// coroutine of the thread prints in the middle of a write meant to be in one piece.
#[test]
fn a_stdout_lock_held_across_a_yield_is_silently_reentered_by_another_coroutine() {
    if std::env::var(CHILD).as_deref() == Ok("stdout") {
        return stdout_lock_held_across_a_yield();
    }
    let output = run_child(
        "a_stdout_lock_held_across_a_yield_is_silently_reentered_by_another_coroutine",
        "stdout",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("[first half other coroutine\nsecond half]"),
        "{stdout}"
    );
}

/// docs/soundness.md, "Blocking the worker": the output of a task that nobody joins is dropped
/// by its worker between tasks, outside any coroutine, where a blocking-style call blocks the
/// thread as on a plain thread: the worker's other coroutines wait meanwhile.
#[test]
fn a_blocking_call_in_the_drop_of_an_unjoined_output_blocks_the_worker() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
    use std::time::Duration;
    /// Sleeps in its drop, and records how far the counter moved meanwhile.
    struct SleepsInDrop(Arc<AtomicU64>, Arc<AtomicU64>);
    impl Drop for SleepsInDrop {
        fn drop(&mut self) {
            let before = self.0.load(SeqCst);
            corio::sleep(Duration::from_millis(50));
            self.1.store(self.0.load(SeqCst) - before + 1, SeqCst);
        }
    }
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    let (count, moved) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (c, m) = (count.clone(), moved.clone());
    rt.run(move || {
        // Counts while it runs, one yield apart.
        let c2 = c.clone();
        let m2 = m.clone();
        let counter = corio::go(move || {
            while m2.load(SeqCst) == 0 {
                c2.fetch_add(1, SeqCst);
                corio::yield_now();
            }
        });
        drop(corio::go(move || SleepsInDrop(c, m)));
        counter.join().unwrap();
    });
    assert_eq!(
        moved.load(SeqCst),
        1,
        "the counter ran during the drop's sleep: the worker was not blocked"
    );
}
