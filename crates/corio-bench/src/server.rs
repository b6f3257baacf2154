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

    /// The CPU time the server process has used so far: user and system time of all its
    /// threads, live or exited, from `/proc/<pid>/stat` (in the kernel's clock ticks, 10 ms
    /// at the usual 100 Hz: 0.1 % of a 10 s run). `None` where that file cannot be read.
    pub fn cpu_time(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).ok()?;
        // SAFETY: sysconf only reads a configuration value.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let ticks = stat_cpu_ticks(&stat)?;
        (hz > 0).then(|| Duration::from_secs_f64(ticks as f64 / hz as f64))
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

/// utime + stime, in clock ticks, from the text of a `/proc/<pid>/stat`: fields 14 and 15,
/// counted after the command name, which is in parentheses and may itself hold spaces and
/// parentheses (so the fields are counted from its last `)`, where field 3 begins).
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_comm.split_whitespace().skip(14 - 3);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// What a measurement spent of the server's CPU: `cpu` over `work` units of work (requests,
/// messages) that took `wall`. Adds `cpu_us@<cell>` (µs per unit) and `busy@<cell>` (the
/// share of one CPU the server used) to `values`, or nothing if either is unknown.
pub fn push_cpu(
    values: &mut Vec<(String, f64)>,
    cell: &str,
    cpu: Option<Duration>,
    work: f64,
    wall: Duration,
) {
    if let Some(cpu) = cpu.filter(|_| work > 0.0 && !wall.is_zero()) {
        values.push((format!("cpu_us@{cell}"), cpu.as_secs_f64() * 1e6 / work));
        values.push((
            format!("busy@{cell}"),
            cpu.as_secs_f64() / wall.as_secs_f64(),
        ));
    }
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

    #[test]
    fn cpu_ticks_are_read_past_a_command_name_with_spaces_and_parentheses() {
        // Fields 1-3, then 4-13 (ten), utime 250, stime 31, then more.
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 3 0";
        assert_eq!(stat_cpu_ticks(stat), Some(281));
        assert_eq!(stat_cpu_ticks("4242 (x) S 1"), None);
    }

    #[test]
    fn this_processs_own_stat_counts_the_cpu_it_burns() {
        let read = || {
            let stat = std::fs::read_to_string("/proc/self/stat").expect("Linux has /proc");
            stat_cpu_ticks(&stat).expect("a stat line has utime and stime")
        };
        let before = read();
        let start = std::time::Instant::now();
        let mut spins = 0u64;
        // Burns CPU until a tick is counted (10 ms at 100 Hz; bounded for a loaded machine).
        while read() == before && start.elapsed() < Duration::from_secs(20) {
            for _ in 0..100_000 {
                spins = std::hint::black_box(spins + 1);
            }
        }
        assert!(read() > before, "no tick counted in {spins} spins");
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
