//! Measurements in a fresh process: re-executing this binary as `__child <case> <args..>`.
//!
//! Memory per coroutine must be measured in a process that holds nothing else; a cold stack
//! arena exists only in a process that never made a coroutine; a peer that runs out of
//! mappings takes its process down with it. So such a measurement runs in a child: the parent
//! starts `current_exe() __child <case> <args..>` (optionally under a wrapper such as
//! valgrind), the case's `child` function does the work there, and reports on stdout.
//! The Go peer (`gopeer.rs`) speaks the same protocol and runs the same way, as a
//! [`ChildCommand::program`].
//!
//! # Protocol
//!
//! 1. The child writes one `@key value` line per result ([`emit`]), and `@progress K` lines
//!    as it goes ([`progress`]); both flush at once, so that a child that dies mid-way has
//!    already told the parent how far it got. Other lines are ignored.
//! 2. The parent reads stdout and stderr on two threads (so that neither pipe can fill and
//!    block the child), and waits at most the given timeout; a child still running then is
//!    killed (`SIGKILL`) and reported as timed out. A failing child can never hang the parent.
//! 3. [`ChildOutput::failure`] turns an unsuccessful exit into one line: the last progress
//!    count and the reason (the panic message, the signal, or the timeout). A child that
//!    panics ends at once ([`install_panic_exit`]) after reporting the exact count reached.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// A child run to start: `[wrapper..] current_exe __child <case> <args..>`.
#[derive(Clone, Debug)]
pub struct ChildCommand {
    /// A program to run instead of this binary's `__child <case>` (a Go peer).
    program: Option<std::path::PathBuf>,
    case: String,
    args: Vec<String>,
    wrapper: Vec<OsString>,
    timeout: Duration,
}

impl ChildCommand {
    /// Will run the child half of `case`, with a 120 s timeout.
    pub fn new(case: &str) -> ChildCommand {
        ChildCommand {
            program: None,
            case: case.to_string(),
            args: Vec::new(),
            wrapper: Vec::new(),
            timeout: Duration::from_secs(120),
        }
    }

    /// Will run another program (a Go peer that speaks the same `@key value` protocol) with
    /// the given arguments instead of this binary's `__child <case>`; 120 s timeout.
    pub fn program(path: impl Into<std::path::PathBuf>) -> ChildCommand {
        ChildCommand {
            program: Some(path.into()),
            ..ChildCommand::new("")
        }
    }

    /// Adds arguments for the child.
    pub fn args<I, S>(mut self, args: I) -> ChildCommand
    where
        I: IntoIterator<Item = S>,
        S: ToString,
    {
        self.args.extend(args.into_iter().map(|a| a.to_string()));
        self
    }

    /// Runs the child under a wrapper program, e.g. `["valgrind", "--tool=callgrind"]`.
    pub fn wrapper<I, S>(mut self, wrapper: I) -> ChildCommand
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.wrapper = wrapper.into_iter().map(Into::into).collect();
        self
    }

    /// Kills the child if it has not exited after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> ChildCommand {
        self.timeout = timeout;
        self
    }

    /// The command line this describes, not started yet.
    pub fn command(&self) -> io::Result<Command> {
        let exe = match &self.program {
            Some(program) => program.clone(),
            None => own_exe()?,
        };
        let mut command = match self.wrapper.split_first() {
            Some((program, rest)) => {
                let mut c = Command::new(program);
                c.args(rest).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        if self.program.is_none() {
            command.arg("__child").arg(&self.case);
        }
        command.args(&self.args);
        Ok(command)
    }

    /// Starts the child and waits for it (at most the timeout).
    pub fn run(&self) -> io::Result<ChildOutput> {
        let mut command = self.command()?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let out = drain(child.stdout.take().expect("stdout is piped"));
        let err = drain(child.stderr.take().expect("stderr is piped"));
        let deadline = Instant::now() + self.timeout;
        let (status, timed_out) = loop {
            if let Some(status) = child.try_wait()? {
                break (status, false);
            }
            if Instant::now() >= deadline {
                // Kill errors only if it has just exited by itself; wait reaps it either way.
                let _ = child.kill();
                break (child.wait()?, true);
            }
            thread::sleep(Duration::from_millis(5));
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        Ok(ChildOutput {
            status,
            timed_out,
            stdout,
            stderr,
        })
    }
}

/// The path of this process's own executable, for the child to run the same code.
///
/// `/proc/<pid>/exe` rather than the path it was started from: a `cargo build` in the same
/// target directory during a long run replaces (or briefly removes) the file at that path,
/// but the link keeps naming the inode this process runs. The pid, not `self`, so that a
/// wrapper (valgrind) opening the path finds our binary rather than its own.
fn own_exe() -> io::Result<std::path::PathBuf> {
    let link = std::path::PathBuf::from(format!("/proc/{}/exe", std::process::id()));
    if link.exists() {
        Ok(link)
    } else {
        std::env::current_exe()
    }
}

/// Reads a pipe to its end on a new thread.
fn drain<R: Read + Send + 'static>(mut pipe: R) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// What a child printed, and how it ended.
#[derive(Debug)]
pub struct ChildOutput {
    /// Its exit status.
    pub status: ExitStatus,
    /// Whether the parent killed it at the timeout.
    pub timed_out: bool,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

impl ChildOutput {
    /// Whether it exited with status 0 in time.
    pub fn success(&self) -> bool {
        !self.timed_out && self.status.success()
    }

    /// The last value reported for `key` (`@key value`).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.stdout.lines().rev().find_map(|line| {
            let rest = line.strip_prefix('@')?.strip_prefix(key)?;
            rest.strip_prefix(' ').map(str::trim)
        })
    }

    /// The last value reported for `key`, as a number.
    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key)?.parse().ok()
    }

    /// How far the child got: the exact count its panic hook reported (`@reached`), else
    /// the last `@progress` count.
    pub fn progress(&self) -> Option<u64> {
        self.get("reached")
            .or_else(|| self.get("progress"))?
            .parse()
            .ok()
    }

    /// The last value for `key`, as a number, or an error saying why it is missing.
    pub fn require_f64(&self, key: &str) -> Result<f64, String> {
        if !self.success() {
            return Err(self.failure());
        }
        self.get_f64(key)
            .ok_or_else(|| format!("the child reported no `{key}`"))
    }

    /// Why the child failed, in one line: how far it got and what stopped it.
    pub fn failure(&self) -> String {
        let reason = if self.timed_out {
            "timed out, killed".to_string()
        } else if let Some(sig) = self.status.signal() {
            format!("killed by signal {sig} ({})", signal_name(sig))
        } else {
            match self.status.code() {
                Some(0) => "exited normally".to_string(),
                Some(code) => format!("exit code {code}"),
                None => "unknown exit".to_string(),
            }
        };
        let reason = match self.stderr_reason() {
            Some(line) => format!("{reason}: {line}"),
            None => reason,
        };
        match self.progress() {
            Some(k) => format!(
                "fails after {}{} coroutines ({reason})",
                if self.get("reached").is_some() {
                    ""
                } else {
                    "~"
                },
                crate::report::group_thousands(k as i128)
            ),
            None => reason,
        }
    }

    /// The most telling line of stderr: a panic message, else the last non-empty line.
    fn stderr_reason(&self) -> Option<String> {
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        // A panic prints "thread '..' panicked at file:line:col:" and the message below it.
        let panic = lines.iter().position(|l| l.contains("panicked at"));
        let line = match panic {
            Some(i) => lines.get(i + 1).copied().unwrap_or(lines[i]),
            None => lines
                .iter()
                .rev()
                .find(|l| !l.starts_with("note:"))
                .copied()?,
        };
        let mut line = line.to_string();
        if line.len() > 160 {
            let mut cut = 157;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push_str("...");
        }
        Some(line)
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGILL => "SIGILL",
        _ => "signal",
    }
}

/// In the child: makes a panic print its message and end the process at once.
///
/// A child that panics has failed; unwinding would only run destructors in a process that
/// may be out of mappings or memory, and the default hook's backtrace then needs memory
/// itself: a peer that ran out of `vm.max_map_count` was seen to hang there, holding the
/// backtrace lock after a nested allocation failure. So: one line, no backtrace, `_exit(101)`.
pub fn install_panic_exit() {
    std::panic::set_hook(Box::new(|info| {
        let msg = match info.payload().downcast_ref::<&str>() {
            Some(s) => *s,
            None => info
                .payload()
                .downcast_ref::<String>()
                .map_or("(no message)", String::as_str),
        };
        let done = DONE.load(Ordering::Relaxed);
        if done > 0 {
            emit("reached", done);
        }
        let mut err = io::stderr().lock();
        let _ = match info.location() {
            Some(at) => writeln!(err, "panicked at {at}:\n{msg}"),
            None => writeln!(err, "panicked:\n{msg}"),
        };
        let _ = err.flush();
        // SAFETY: `_exit` ends the process without running anything else; nothing is owed to
        // anyone (stdout is flushed after every report).
        unsafe { libc::_exit(101) }
    }));
}

/// In the child: reports `@key value` to the parent, flushed at once.
pub fn emit(key: &str, value: impl std::fmt::Display) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "@{key} {value}");
    let _ = out.flush();
}

/// In the child: reports that `k` units of work (coroutines) are done.
pub fn progress(k: u64) {
    emit("progress", k);
}

/// Units of work done so far in this child, for the panic hook to report exactly.
static DONE: AtomicU64 = AtomicU64::new(0);

/// In the child: records that `i + 1` units are done (`i` counts from 0), and reports it as
/// progress when it is a multiple of `every`. If the child then panics, the panic hook
/// reports the exact count (`@reached`).
#[inline]
pub fn progress_every(i: usize, every: usize) {
    DONE.store(i as u64 + 1, Ordering::Relaxed);
    if (i + 1).is_multiple_of(every) {
        progress(i as u64 + 1);
    }
}

/// In the child: the `i`-th argument, parsed, or an error naming it.
pub fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<T, String> {
    let raw = args
        .get(i)
        .ok_or_else(|| format!("missing argument {i} ({what})"))?;
    raw.parse().map_err(|_| format!("bad {what}: `{raw}`"))
}
