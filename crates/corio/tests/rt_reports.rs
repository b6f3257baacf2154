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
    let exe = std::env::current_exe().expect("test binary path");
    Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, name)
        .env_remove("RUST_BACKTRACE")
        .env_remove("CORIO_HOG_REPORT")
        .output()
        .expect("spawn the test binary")
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
    let id = err
        .lines()
        .find_map(|l| l.strip_prefix("spawned id "))
        .unwrap_or_else(|| panic!("no id line:\n{err}"))
        .trim();
    assert!(
        err.contains(&format!("coroutine 'deep-recursion' (id {id})")),
        "name and id:\n{err}"
    );
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
        let h = corio::Builder::new();
        let _entered = rt.enter();
        let hog = h
            .name("busy-loop")
            .spawn(|| {
                let start = Instant::now();
                while start.elapsed() < Duration::from_millis(300) {
                    std::hint::spin_loop();
                }
            })
            .unwrap();
        eprintln!("spawned id {}", hog.id());
        hog.join().unwrap();
        return;
    }
    let out = run_in_child(NAME);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{err}");
    let id = err
        .lines()
        .find_map(|l| l.strip_prefix("spawned id "))
        .unwrap_or_else(|| panic!("no id line:\n{err}"))
        .trim();
    assert!(
        err.contains(&format!("coroutine 'busy-loop' (id {id}")),
        "name and id:\n{err}"
    );
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
