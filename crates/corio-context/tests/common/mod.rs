//! Running a test body in a child process: the test binary re-executes itself.
//!
//! `child_case(name)` is true in the child started by `run_in_child(name, ..)`; the test runs
//! its body there (which may abort or crash) and the parent inspects how the child ended.

#![allow(dead_code)] // each test file uses a different part

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

const CHILD_ENV: &str = "CORIO_TEST_CHILD";

/// Whether this process is the child started for the test `name`.
pub fn child_case(name: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|case| case == name)
}

/// Runs the test `name` of this binary in a child process with `env` set, and returns its
/// output. The test must call [`child_case`] first thing.
pub fn run_in_child(name: &str, env: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, name);
    cmd.env_remove("RUST_BACKTRACE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("spawn the test binary")
}

/// The child's stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The signal that killed the child, if one did.
pub fn signal(out: &Output) -> Option<i32> {
    out.status.signal()
}
