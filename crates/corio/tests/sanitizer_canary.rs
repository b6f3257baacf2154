//! Canaries for the sanitizer campaigns (`.ci/sanitize`, `docs/asan.md`, `docs/tsan.md`): each
//! test runs a deliberate memory or thread error inside a coroutine, in a child process (this
//! binary re-executed), and checks that the sanitizer reports it. A campaign with no report is
//! evidence only if the sanitizer sees what runs on coroutine stacks; these show that it does.
//! Built only with `--cfg corio_asan` or `--cfg corio_tsan`; an ordinary build has no tests
//! here.
#![cfg(any(corio_asan, corio_tsan))]

use std::process::Command;

/// Set in the child: which error to commit.
const CHILD: &str = "CORIO_SANITIZER_CANARY";

/// Runs `test` of this binary in a child process with `CHILD=case`; returns its stderr, where
/// the child's sanitizer writes its report (a `log_path` the campaign set for this process is
/// taken out of the child's options).
fn child_stderr(test: &str, case: &str) -> String {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, case);
    for var in ["ASAN_OPTIONS", "TSAN_OPTIONS"] {
        if let Ok(options) = std::env::var(var) {
            let kept: Vec<&str> = options
                .split(':')
                .filter(|option| !option.starts_with("log_path="))
                .collect();
            child.env(var, kept.join(":"));
        }
    }
    let out = child.output().unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A coroutine reads a heap value after freeing it: AddressSanitizer reports it, with the
/// coroutine's frames in the report.
#[cfg(corio_asan)]
#[test]
fn asan_sees_a_use_after_free_on_a_coroutine_stack() {
    if std::env::var(CHILD).is_ok() {
        let rt = corio::Runtime::builder().workers(1).build().unwrap();
        let read = rt.run(|| {
            let boxed = Box::new(7u64);
            let ptr: *const u64 = &*boxed;
            drop(boxed);
            // SAFETY: none: this is the deliberate use after free ASan must report.
            unsafe { ptr.read_volatile() }
        });
        println!("read {read}");
        return;
    }
    let err = child_stderr("asan_sees_a_use_after_free_on_a_coroutine_stack", "uaf");
    assert!(
        err.contains("ERROR: AddressSanitizer: heap-use-after-free"),
        "{err}"
    );
    assert!(err.contains("sanitizer_canary"), "{err}");
}

/// A coroutine and a plain thread write one value with nothing ordering the writes:
/// ThreadSanitizer reports the data race, with the coroutine's frames in the report.
#[cfg(corio_tsan)]
#[test]
fn tsan_sees_a_data_race_between_a_coroutine_and_a_thread() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Racy(std::cell::UnsafeCell<u64>);
    // SAFETY: none: shared without synchronisation on purpose, for TSan to report.
    unsafe impl Sync for Racy {}
    static VALUE: Racy = Racy(std::cell::UnsafeCell::new(0));
    static ARRIVED: AtomicUsize = AtomicUsize::new(0);

    /// Both sides arrive, then write: the writes are ordered by nothing.
    fn arrive_then_write() {
        ARRIVED.fetch_add(1, Ordering::SeqCst);
        while ARRIVED.load(Ordering::SeqCst) < 2 {
            std::hint::spin_loop();
        }
        for _ in 0..1000 {
            // SAFETY: none: the deliberate race.
            unsafe { *VALUE.0.get() += 1 };
        }
    }

    if std::env::var(CHILD).is_ok() {
        let rt = corio::Runtime::builder().workers(1).build().unwrap();
        let thread = std::thread::spawn(arrive_then_write);
        rt.run(arrive_then_write);
        thread.join().unwrap();
        return;
    }
    let err = child_stderr(
        "tsan_sees_a_data_race_between_a_coroutine_and_a_thread",
        "race",
    );
    assert!(err.contains("WARNING: ThreadSanitizer: data race"), "{err}");
    assert!(err.contains("arrive_then_write"), "{err}");
}
