//! What the runtime writes on stderr about a misbehaving coroutine: a stack overflow (DESIGN.md
//! decision 5: a message naming the coroutine — name, id, spawn location, stack size — then
//! an abort) and a hog (decision 3: name, id, spawn location, how long).
//!
//! Each case runs in a child process (this test binary, re-executed with `CORIO_RT_CHILD` set
//! to the test's name), because an overflow aborts and stderr must be captured.

mod support;

use std::hint::black_box;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "CORIO_RT_CHILD";

/// Whether this process is the child started for the test `name`.
fn child_case(name: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|case| case == name)
}

/// Runs the test `name` of this binary in a child process and returns its output.
fn run_in_child(name: &str) -> Output {
    run_in_child_with(name, &[])
}

/// As [`run_in_child`], with `env` set in the child.
fn run_in_child_with(name: &str, env: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().expect("test binary path");
    let mut command = Command::new(exe);
    command
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, name)
        .env_remove("RUST_BACKTRACE")
        .env_remove("CORIO_HOG_REPORT")
        .env_remove("CORIO_WORKERS");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("spawn the test binary")
}

/// Runs the child case `name` and asserts that it succeeded and printed no hog report.
fn assert_no_hog_report(name: &str, env: &[(&str, &str)]) -> String {
    let out = run_in_child_with(name, env);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "child failed:\n{err}");
    assert!(
        !err.contains("without yielding"),
        "a hog report for a program that never hogged:\n{err}"
    );
    err
}

#[inline(never)]
#[allow(unconditional_recursion)] // overflowing is the point
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth; 32]);
    black_box(recurse(depth + 1)) + frame[0]
}

#[test]
fn a_stack_overflow_in_a_runtime_coroutine_names_it_and_where_it_was_spawned() {
    const NAME: &str = "a_stack_overflow_in_a_runtime_coroutine_names_it_and_where_it_was_spawned";
    if child_case(NAME) {
        let rt = support::rt(1);
        let id = rt.run(|| {
            let h = corio::Builder::new()
                .name("deep-recursion")
                .stack_size(64 << 10)
                .spawn(|| {
                    // Where the runtime says this coroutine was spawned.
                    eprintln!("spawned at {}", corio::current().location());
                    recurse(0)
                })
                .unwrap();
            eprintln!("spawned id {}", h.id());
            let _ = h.join();
            0
        });
        eprintln!("unreachable: the child survived ({id})");
        return;
    }
    let out = run_in_child(NAME);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "the child must abort:\n{err}"
    );
    assert_names_coroutine(&err, "deep-recursion");
    assert!(
        err.contains("has overflowed its stack of 64 KiB"),
        "stack size:\n{err}"
    );
    let at = err
        .lines()
        .find_map(|l| l.strip_prefix("spawned at "))
        .unwrap_or_else(|| panic!("no location line:\n{err}"))
        .trim();
    assert!(
        at.contains("tests/rt_reports.rs:"),
        "corio::current().location() is the spawn site: {at}"
    );
    assert!(
        err.contains(&format!("created at {at}")),
        "the spawn site ({at}) is named:\n{err}"
    );
}

/// The calling thread's CPU time.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_THREAD_CPUTIME_ID");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Spins until this thread has used `cpu` of CPU time: a hog however loaded the machine
/// (a wall-clock spin on a busy machine may get less CPU than the report threshold).
fn spin_for_cpu_time(cpu: Duration) {
    let start = thread_cpu_time();
    while thread_cpu_time() - start < cpu {
        std::hint::spin_loop();
    }
}

/// In a child: spawns a coroutine named `name` on the current runtime that spins for 300 ms of
/// CPU time, prints its id, and joins it.
fn spawn_hog_and_join(name: &str) {
    let hog = corio::Builder::new()
        .name(name)
        .spawn(|| spin_for_cpu_time(Duration::from_millis(300)))
        .unwrap();
    eprintln!("spawned id {}", hog.id());
    hog.join().unwrap();
}

/// Runs the child case `case`, which ran `spawn_hog_and_join(hog)`, and asserts that it
/// succeeded and that its stderr reports the hog by name and id; returns the stderr.
fn assert_hog_reported(case: &str, hog: &str) -> String {
    let out = run_in_child(case);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "child failed:\n{err}");
    assert_names_coroutine(&err, hog);
    err
}

/// Asserts that `err` (a child's stderr, with a "spawned id N" line the child printed) names
/// the coroutine `name` with that id, as the runtime's reports do.
fn assert_names_coroutine(err: &str, name: &str) {
    let id = err
        .lines()
        .find_map(|l| l.strip_prefix("spawned id "))
        .unwrap_or_else(|| panic!("no id line:\n{err}"))
        .trim();
    // "(id N)" in an overflow's message, "(id N, spawned at ..)" in a hog's.
    let named = |end: &str| err.contains(&format!("coroutine '{name}' (id {id}{end}"));
    assert!(
        named(")") || named(","),
        "the report, with name and id:\n{err}"
    );
}

#[test]
fn a_hog_is_reported_with_its_name_id_spawn_site_and_how_long_it_ran() {
    const NAME: &str = "a_hog_is_reported_with_its_name_id_spawn_site_and_how_long_it_ran";
    if child_case(NAME) {
        let rt = corio::Runtime::builder()
            .workers(2)
            .hog_report(true)
            .build()
            .unwrap();
        std::thread::sleep(Duration::from_millis(50)); // settle: sysmon watches from the start
        let _entered = rt.enter();
        spawn_hog_and_join("busy-loop");
        return;
    }
    let err = assert_hog_reported(NAME, "busy-loop");
    assert!(
        err.contains("tests/rt_reports.rs:"),
        "the spawn site is named:\n{err}"
    );
    assert!(err.contains("has run for"), "how long:\n{err}");
    assert_eq!(
        err.matches("'busy-loop'").count(),
        1,
        "reported once:\n{err}"
    );
}

#[test]
fn a_hog_on_a_run_here_runtime_is_reported_on_the_programs_stderr() {
    // With one worker, sysmon has its own descriptor table, whose 2 is /dev/null: the report
    // reaches the program's stderr only through `pidfd_getfd` (`runtime/fd_table.rs`).
    const NAME: &str = "a_hog_on_a_run_here_runtime_is_reported_on_the_programs_stderr";
    if child_case(NAME) {
        corio::Runtime::builder()
            .workers(1)
            .hog_report(true)
            .run_here(|| {
                corio::sleep(Duration::from_millis(50)); // settle
                spawn_hog_and_join("busy-here");
            })
            .unwrap();
        return;
    }
    assert_hog_reported(NAME, "busy-here");
}

#[test]
fn hog_report_false_keeps_stderr_quiet() {
    const NAME: &str = "hog_report_false_keeps_stderr_quiet";
    if child_case(NAME) {
        let rt = support::rt(2); // hog_report(false)
        std::thread::sleep(Duration::from_millis(50));
        rt.go(|| {
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(200) {
                std::hint::spin_loop();
            }
        })
        .join()
        .unwrap();
        return;
    }
    let out = run_in_child(NAME);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{err}");
    assert!(
        !err.contains("without yielding"),
        "a report despite hog_report(false):\n{err}"
    );
}

const SLEEPERS: usize = 100_000;

/// Spawns `SLEEPERS` coroutines that each sleep 100 ms, joins them; how many finished.
fn sleepers() -> usize {
    let handles: Vec<_> = (0..SLEEPERS)
        .map(|_| corio::go(|| corio::sleep(Duration::from_millis(100))))
        .collect();
    handles.into_iter().filter_map(|h| h.join().ok()).count()
}

/// Issue 11 part 2: 100,000 coroutines that each sleep 100 ms on the default runtime. Each one
/// runs for microseconds; none may be reported (they were, 12-14 times a run, "on worker 7").
#[test]
fn many_sleeping_coroutines_are_not_reported_as_hogs() {
    const NAME: &str = "many_sleeping_coroutines_are_not_reported_as_hogs";
    if child_case(NAME) {
        assert_eq!(corio::run(sleepers), SLEEPERS);
        return;
    }
    assert_no_hog_report(NAME, &[]);
}

/// Issue 11 part 2: a coroutine whose panic prints a backtrace (which can take longer than
/// the report threshold) is not reported while it unwinds.
#[test]
fn a_panicking_coroutine_printing_its_backtrace_is_not_reported_as_a_hog() {
    const NAME: &str = "a_panicking_coroutine_printing_its_backtrace_is_not_reported_as_a_hog";
    if child_case(NAME) {
        let failed = corio::run(|| {
            corio::Builder::new()
                .name("panicker")
                .spawn(|| panic!("on purpose"))
                .unwrap()
                .join()
                .is_err()
        });
        assert!(failed);
        return;
    }
    let err = assert_no_hog_report(NAME, &[("RUST_BACKTRACE", "1")]);
    assert!(err.contains("on purpose"), "the panic is printed:\n{err}");
}

/// Issue 11 part 2: spawning is a preemption point, so a coroutine that spawns a million
/// coroutines in a loop is preempted silently rather than reported.
#[test]
fn a_coroutine_spawning_a_million_coroutines_is_not_reported_as_a_hog() {
    const NAME: &str = "a_coroutine_spawning_a_million_coroutines_is_not_reported_as_a_hog";
    if child_case(NAME) {
        let sum = corio::run(|| {
            let handles: Vec<_> = (0..1_000_000u64).map(|i| corio::go(move || i)).collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
        });
        assert_eq!(sum, 999_999 * 1_000_000 / 2);
        return;
    }
    assert_no_hog_report(NAME, &[]);
}

/// Issue 11 part 2: hand-offs start spare threads only for a worker that verifiably holds a
/// CPU with one task, or sleeps in the kernel for a time slice — not for workers that merely
/// wait for a CPU. 100,000 one-sleep coroutines on two workers hog nothing; they started
/// every spare the runtime allows (four per worker), whose crowding made more workers look
/// stuck and innocent coroutines look like hogs. (A stray spare remains possible: a worker
/// waiting long for a lock whose holder the kernel descheduled looks, from outside, like one
/// in a blocking call; runs on a loaded machine saw zero to two.)
#[test]
fn many_sleeping_coroutines_do_not_start_a_spiral_of_spare_workers() {
    const WORKERS: usize = 2;
    const SPARE_LIMIT: usize = 4 * WORKERS; // the builder's default
    let rt = corio::Runtime::builder()
        .workers(WORKERS)
        .hog_report(false)
        .build()
        .unwrap();
    assert_eq!(rt.run(sleepers), SLEEPERS);
    let spares = rt.metrics().spares_started;
    assert!(
        spares < SPARE_LIMIT,
        "{spares} spare workers started for a program without a hog"
    );
}
