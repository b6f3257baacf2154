//! Servers in their own process, for the network cases (`http`, `echo`, `c10k`).
//!
//! A network case measures a server under load from another process, so the server must keep
//! running while the load generator (wrk, or a `__child` load client) works against it: a
//! [`ChildCommand`] run to its end does not fit. [`Server::start`] starts the command (a
//! `__child <case> serve <impl>` of this binary, or the Go peer's `httpserve`/`echoserve`),
//! reads its stdout until the server reports `@addr host:port` — it does so only once its
//! socket listens — and hands back the address and process id. Dropping the [`Server`] kills
//! the process and reaps it, so a case that fails half-way leaves no server behind.
//!
//! # Pinning
//!
//! The issue asks for the server on CPU 0 and the load on CPU 1, so that the two never compete
//! for one core and the figure is the server's throughput on one core. [`pinned`] prefixes a
//! command line with `taskset -c <cpu>` when `taskset` is installed and the machine has that
//! CPU; otherwise the run is unpinned and the row's note says so.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::child::ChildCommand;

/// The CPU servers run on.
pub const SERVER_CPU: usize = 0;
/// The CPU load generators run on.
pub const LOAD_CPU: usize = 1;

/// A running server process; killed when dropped.
pub struct Server {
    child: Child,
    /// The address it listens on.
    pub addr: SocketAddr,
}

impl Server {
    /// Starts `command` and waits (at most 60 s) for it to report `@addr`.
    pub fn start(command: &ChildCommand) -> Result<Server, String> {
        let mut cmd = command
            .command()
            .map_err(|e| format!("could not start the server: {e}"))?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("could not start the server: {e}"))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, rx) = mpsc::channel::<String>();
        // Reads every line (so the pipe never fills) and forwards the address once.
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("@addr ") {
                    let _ = tx.send(addr.trim().to_string());
                }
            }
        });
        let (etx, erx) = mpsc::channel::<String>();
        thread::spawn(move || {
            let mut last = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !line.trim().is_empty() {
                    last = line;
                }
            }
            let _ = etx.send(last);
        });
        let mut server = Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(addr) => {
                server.addr = addr
                    .parse()
                    .map_err(|_| format!("the server reported a bad address `{addr}`"))?;
                Ok(server)
            }
            Err(_) => {
                server.kill();
                let why = erx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
                Err(format!("the server never listened: {why}"))
            }
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The CPU time the server process has used so far ([`process_cpu_time`]).
    pub fn cpu_time(&self) -> Option<Duration> {
        process_cpu_time(self.pid())
    }

    /// The CPU time the server has used since an earlier [`cpu_time`](Self::cpu_time)
    /// reading, if both are known.
    pub fn cpu_since(&self, before: Option<Duration>) -> Option<Duration> {
        Some(self.cpu_time()?.saturating_sub(before?))
    }

    /// Whether it is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn kill(&mut self) {
        // Kill errors only if it has already exited; wait reaps it either way.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The CPU time process `pid` has used so far: user and system time of all its threads, live
/// or exited, in nanoseconds (the process's CPU-time clock, `clock_getcpuclockid`; Linux
/// lets any process read another's). `None` if there is no such process.
pub fn process_cpu_time(pid: u32) -> Option<Duration> {
    // A pid is at most PID_MAX_LIMIT (2^22). Above it the clock id's encoding (the pid's
    // complement shifted left by 3) overflows, and 2^31 - 1 even becomes this process's own
    // clock (CLOCK_PROCESS_CPUTIME_ID): the test below found it.
    const PID_MAX_LIMIT: u32 = 1 << 22;
    if pid == 0 || pid > PID_MAX_LIMIT {
        return None;
    }
    let pid = libc::pid_t::try_from(pid).ok()?;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: writes the clock id into `clock`, a valid clockid_t.
    if unsafe { libc::clock_getcpuclockid(pid, &mut clock) } != 0 {
        return None;
    }
    clock_time(clock) // None if the process exited in between
}

/// The time on `clock`, or `None` if it cannot be read.
fn clock_time(clock: libc::clockid_t) -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the time into `ts`, a valid timespec.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// What a measurement spent of the server's CPU: `cpu` over `work` units of work (requests,
/// messages) done in `wall`. Adds `cpu_us@<cell>` (µs per unit) and `busy@<cell>` (the share
/// of one CPU the server used) to `values`; adds nothing if the CPU time is unknown or there
/// was no work or no time (the row then says the value is missing).
pub fn push_cpu(
    values: &mut Vec<(String, f64)>,
    cell: &str,
    cpu: Option<Duration>,
    work: f64,
    wall: Duration,
) {
    if let (Some(per_unit), Some(cpu)) =
        (cpu_per_unit_us(cpu, work), cpu.filter(|_| !wall.is_zero()))
    {
        values.push((format!("cpu_us@{cell}"), per_unit));
        values.push((
            format!("busy@{cell}"),
            cpu.as_secs_f64() / wall.as_secs_f64(),
        ));
    }
}

/// `cpu` over `work` units of work, in µs per unit; `None` if the CPU time is unknown or
/// there was no work.
pub fn cpu_per_unit_us(cpu: Option<Duration>, work: f64) -> Option<f64> {
    cpu.filter(|_| work > 0.0)
        .map(|cpu| cpu.as_secs_f64() * 1e6 / work)
}

/// The `taskset -c <cpu>` prefix that pins a command to `cpu`, or nothing if `taskset` is
/// missing or the machine has no such CPU.
pub fn pinned(cpu: usize) -> Vec<String> {
    let cpus = thread::available_parallelism().map_or(1, usize::from);
    let taskset = ["/usr/bin/taskset", "/bin/taskset"]
        .iter()
        .find(|p| std::path::Path::new(p).is_file());
    match taskset {
        Some(t) if cpu < cpus => vec![t.to_string(), "-c".into(), cpu.to_string()],
        _ => Vec::new(),
    }
}

/// A note for a row: where the server and the load ran.
pub fn pin_note() -> &'static str {
    if pinned(LOAD_CPU).is_empty() {
        "unpinned (no taskset or one CPU)"
    } else {
        "server on CPU 0, load on CPU 1"
    }
}

/// Raises this process's soft limit on open files to its hard limit (10,000 connections need
/// 10,000 descriptors).
pub fn raise_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the limit into `lim`, a valid rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 && lim.rlim_cur < lim.rlim_max
    {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: setrlimit reads `lim`, a valid rlimit; raising the soft limit up to the hard
        // limit needs no privilege.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's own CPU time, read through its pid, lies between two readings of its
    /// CPU-time clock taken around it, and grows as it burns CPU.
    #[test]
    fn a_process_cpu_time_read_by_pid_is_that_processs_cpu_clock() {
        let own = || clock_time(libc::CLOCK_PROCESS_CPUTIME_ID).expect("this process's clock");
        let pid = std::process::id();
        let before = own();
        let read = process_cpu_time(pid).expect("this process exists");
        let after = own();
        assert!(
            before <= read && read <= after,
            "{before:?} <= {read:?} <= {after:?}"
        );
        // Burns 5 ms of CPU by the process's own clock; the reading by pid follows it.
        let mut spins = 0u64;
        while own() < read + Duration::from_millis(5) {
            spins = std::hint::black_box(spins + 1);
        }
        let later = process_cpu_time(pid).expect("this process exists");
        assert!(
            later >= read + Duration::from_millis(5),
            "{later:?} after {spins} spins"
        );
    }

    #[test]
    fn a_process_that_does_not_exist_has_no_cpu_time() {
        // Exited and reaped: its pid is free (the kernel hands pids out in a cycle, so it is
        // not reused within this test).
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = child.id();
        child.wait().expect("reap true");
        assert_eq!(process_cpu_time(pid), None, "pid {pid}");
        // No pid at all, and pids whose clock id would overflow.
        for pid in [0, (1 << 22) + 1, i32::MAX as u32, u32::MAX] {
            assert_eq!(process_cpu_time(pid), None, "pid {pid}");
        }
    }

    #[test]
    fn cpu_per_unit_and_busy_share_come_together_or_not_at_all() {
        let mut v = Vec::new();
        push_cpu(
            &mut v,
            "16",
            Some(Duration::from_secs(5)),
            1e6,
            Duration::from_secs(10),
        );
        assert_eq!(
            v,
            vec![("cpu_us@16".to_string(), 5.0), ("busy@16".to_string(), 0.5)]
        );
        push_cpu(&mut v, "64", None, 1e6, Duration::from_secs(10));
        push_cpu(
            &mut v,
            "64",
            Some(Duration::from_secs(5)),
            0.0,
            Duration::from_secs(10),
        );
        assert_eq!(v.len(), 2);
    }
}
