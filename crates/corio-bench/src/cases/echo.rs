//! `echo`: messages per second through a TCP echo server on one core.
//!
//! Every server runs in its own process pinned to CPU 0 with one worker thread. The load is a
//! `__child echo load` process pinned to CPU 1: one thread in a bare `epoll` loop (`load`, "Why
//! a bare epoll loop") with 100 connections, each writing a 64-byte message, reading the
//! 64-byte echo and checking it, as fast as it can for 10 s (`--quick`: 1 s). A message counts
//! once its echo has been read back whole and equal. The figure is messages per second over
//! all clients.
//!
//! Beside it, the server's CPU time over the load client's run (from its process CPU clock)
//! per message counted, with the share of its CPU the server used in the note: near 100 %
//! the server was the bottleneck; well below, the load client was, and the CPU per message
//! is what tells the servers apart (a corio server's CPU includes its worker's spin before it
//! parks, up to 50 µs each time it runs dry). `*_ratio` rows set each corio server against
//! the peer of its model (stackful against may, async against tokio) round by round, so that
//! a drift of the shared machine's load divides out; a ratio above 1 means corio's figure is
//! the larger: more messages per second, or (worse) more CPU per message.
//!
//! | row | server |
//! |---|---|
//! | corio-stackful | `examples/echo`: a stackful coroutine per connection, `workers(1)` |
//! | corio-async | `examples/echo_async`: a task per connection, `workers(1)` |
//! | tokio | a task per connection on `current_thread` |
//! | may | a coroutine per connection, 1 worker |
//! | go | a goroutine per connection, `GOMAXPROCS=1` |

use std::time::{Duration, Instant};

use super::Case;
use super::fresh::Launch;
use super::netrun::{self, launch};
use crate::child::{self, ChildCommand};
use crate::opts::Opts;
use crate::report::Measurement;
use crate::server::{self, LOAD_CPU, Server};

/// The `echo` case.
pub const CASE: Case = Case {
    name: "echo",
    about: "TCP echo on one core: 64-byte messages per second from 100 clients, server CPU per message",
    reference: Some("go"),
    run,
    child: Some(child_main),
};

/// (row name, server, note).
pub const IMPLS: [(&str, &str, &str); 5] = [
    (
        "corio-stackful",
        "corio",
        "examples/echo, workers(1) run_here",
    ),
    (
        "corio-async",
        "corio-async",
        "examples/echo_async, workers(1) run_here",
    ),
    ("tokio", "tokio", "current_thread"),
    ("may", "may", "1 worker"),
    ("go", "go", "GOMAXPROCS=1"),
];

/// corio's servers and the peer each is compared with round by round (`*_ratio` rows): the
/// stackful server against may's coroutines, the async one against tokio's tasks.
pub(super) const PAIRS: [(&str, &str); 2] = [("corio-stackful", "may"), ("corio-async", "tokio")];

/// Clients of the load, each with one message in flight.
pub(super) const CLIENTS: usize = 100;
/// Bytes per message.
pub(super) const MESSAGE: usize = 64;

fn run(opts: &Opts) -> Vec<Measurement> {
    let ms: u64 = opts.size(10_000, 1_000);
    let runs = opts.runs(3, 1);
    let launches: Vec<Launch> = IMPLS
        .iter()
        .map(|(_, srv, _)| launch("echo", srv, "echoserve"))
        .collect();
    let results = netrun::rounds(&launches, runs, |_, srv, _| {
        let r = load_window(srv, ms)?;
        let mut values = vec![("mps".into(), r.per_sec)];
        server::push_cpu(&mut values, "echo", r.cpu, r.messages, r.window);
        Ok(values)
    });
    let what = |i: usize| {
        format!(
            "{CLIENTS} clients × {MESSAGE} B for {} s; {}{}",
            ms as f64 / 1e3,
            server::pin_note(),
            results
                .note(i, netrun::RETRIED)
                .map(|r| format!("; {r}"))
                .unwrap_or_default()
        )
    };
    let n = CLIENTS as u64;
    let mut out = Vec::new();
    for (i, (imp, _, note)) in IMPLS.iter().enumerate() {
        out.push(
            results
                .row(i, "echo", imp, ("messages_per_sec", "msg/s", n), "mps")
                .and_note(format!("{note}; {}", what(i))),
        );
    }
    for (i, (imp, _, note)) in IMPLS.iter().enumerate() {
        let busy = results
            .median(i, "busy@echo")
            .map(|b| format!("; server busy {:.0} % of one CPU", b * 100.0))
            .unwrap_or_default();
        out.push(
            results
                .row(
                    i,
                    "echo",
                    imp,
                    ("server_cpu_per_msg", "us", n),
                    "cpu_us@echo",
                )
                .and_note(format!("{note}; {}{busy}", what(i))),
        );
    }
    // Each corio server against the peer it competes with (the same model), round by round.
    for (a, b) in PAIRS {
        let (Some(ia), Some(ib)) = (
            IMPLS.iter().position(|(imp, ..)| *imp == a),
            IMPLS.iter().position(|(imp, ..)| *imp == b),
        ) else {
            continue;
        };
        let load = format!("{CLIENTS} clients × {MESSAGE} B for {} s", ms as f64 / 1e3);
        for (metric, key) in [("mps_ratio", "mps"), ("cpu_ratio", "cpu_us@echo")] {
            out.push(results.ratio_row("echo", (ia, a), (ib, b), (metric, n), key, &load));
        }
    }
    out
}

/// What one run of the load client measured against a server.
pub(super) struct LoadWindow {
    /// Messages per second over all clients.
    pub(super) per_sec: f64,
    /// Messages counted, in `window`.
    pub(super) messages: f64,
    pub(super) window: Duration,
    /// The server's CPU time over the run, if it could be read.
    pub(super) cpu: Option<Duration>,
}

/// Runs the load client (`CLIENTS` clients, pinned to the load CPU) against `srv` for `ms`
/// milliseconds, reading the server's CPU time around it.
pub(super) fn load_window(srv: &Server, ms: u64) -> Result<LoadWindow, String> {
    let cpu_before = srv.cpu_time();
    let out = ChildCommand::new("echo")
        .args([
            "load".to_string(),
            srv.addr.to_string(),
            CLIENTS.to_string(),
            ms.to_string(),
        ])
        .wrapper(server::pinned(LOAD_CPU))
        .timeout(Duration::from_millis(ms) + Duration::from_secs(60))
        .run()
        .map_err(|e| format!("could not start the load client: {e}"))?;
    let per_sec = out.require_f64("messages_per_sec")?;
    let messages = out.require_f64("messages")?;
    let window = Duration::try_from_secs_f64(out.require_f64("window_secs")?)
        .map_err(|e| format!("the load client reported a bad window: {e}"))?;
    Ok(LoadWindow {
        per_sec,
        messages,
        window,
        cpu: srv.cpu_since(cpu_before),
    })
}

/// `__child echo serve <server>` or `__child echo load <addr> <clients> <ms>`.
fn child_main(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("serve") => super::servers::echo(&child::arg::<String>(args, 1, "server")?),
        Some("load") => load(
            child::arg(args, 1, "address")?,
            child::arg(args, 2, "clients")?,
            Duration::from_millis(child::arg(args, 3, "ms")?),
        ),
        _ => Err("usage: __child echo serve <server> | load <addr> <clients> <ms>".into()),
    }
}

/// The load client: `clients` connections ping-ponging `MESSAGE` bytes for `window`; reports
/// `@messages_per_sec`, and the `@messages` counted in the `@window_secs` it measured.
///
/// # Why a bare epoll loop
///
/// The load should cost less per message than any server it measures, or it measures
/// itself. The first client here was 100 tokio tasks on `current_thread` (`write_all`, then
/// `read_exact`): its read after each write found nothing yet and said `EAGAIN`, so it made
/// 2.9–3.4 system calls per message to a server's 2.1–2.6 (`perf stat -p` on both processes,
/// 2026-12-04), and it ran its CPU at ~100 % against every server. This loop makes the two
/// calls a message needs — the echo's `read` once epoll reports it, the next message's
/// `write` — and one `epoll_wait` per batch of replies: 2.2–2.8 calls per message in the
/// same measurement. It still keeps its CPU ~96–98 % busy, because on loopback each side's
/// `write` also does the kernel's receive work for the other side's socket, so the two
/// processes' costs per message stay close; the server's share of the round trip is now
/// the larger one: may's and Go's servers, which make ~3 calls per message (they read until
/// `EAGAIN`), led or tied with the old client and fell behind corio's and tokio's with this
/// one (`docs/net-bench.md`, "Thirteenth pass").
fn load(addr: std::net::SocketAddr, clients: usize, window: Duration) -> Result<(), String> {
    use std::io::{ErrorKind, Read, Write};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    if clients == 0 {
        return Err("the load needs at least one client".into());
    }
    let mut conns = Vec::with_capacity(clients);
    for _ in 0..clients {
        let s = std::net::TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        s.set_nonblocking(true).map_err(|e| e.to_string())?;
        conns.push(Conn {
            stream: s,
            msg: [0; MESSAGE],
            got: 0,
            round: 0,
        });
    }
    // SAFETY: a plain system call with no pointer arguments.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(format!(
            "epoll_create1: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: `ep` is a descriptor epoll_create1 just returned and nothing else owns.
    let ep = unsafe { OwnedFd::from_raw_fd(ep) };
    for (i, c) in conns.iter().enumerate() {
        // Level-triggered: a reply read in two parts is reported again until it is whole.
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: i as u64,
        };
        // SAFETY: both descriptors are open for the call and `ev` is a valid event.
        let r = unsafe {
            libc::epoll_ctl(
                ep.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                c.stream.as_raw_fd(),
                &mut ev,
            )
        };
        if r < 0 {
            return Err(format!("epoll_ctl: {}", std::io::Error::last_os_error()));
        }
    }
    let start = Instant::now();
    let deadline = start + window;
    for (i, c) in conns.iter_mut().enumerate() {
        c.send(i)?;
    }
    let mut in_flight = clients;
    let mut counted = 0u64;
    let mut stopped: Option<Duration> = None;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; clients];
    let mut back = [0u8; MESSAGE];
    while in_flight > 0 {
        // SAFETY: `events` has room for `clients` entries, the count passed.
        let n = unsafe {
            libc::epoll_wait(
                ep.as_raw_fd(),
                events.as_mut_ptr(),
                clients as libc::c_int,
                1_000,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("epoll_wait: {e}"));
        }
        if n == 0 {
            return Err("no echo for 1 s: the server stopped answering".into());
        }
        if stopped.is_none() && Instant::now() >= deadline {
            stopped = Some(start.elapsed());
        }
        for ev in &events[..n as usize] {
            let i = ev.u64 as usize;
            let c = &mut conns[i];
            let got = match c.stream.read(&mut back[c.got..]) {
                Ok(0) => return Err("read: the server closed the connection".into()),
                Ok(got) => got,
                Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                Err(e) => return Err(format!("read: {e}")),
            };
            if back[c.got..c.got + got] != c.msg[c.got..c.got + got] {
                return Err("the echo differs from the message".into());
            }
            c.got += got;
            if c.got < MESSAGE {
                continue;
            }
            c.got = 0;
            if stopped.is_some() {
                in_flight -= 1;
                continue;
            }
            counted += 1;
            c.send(i)?;
        }
    }
    let elapsed = stopped.unwrap_or_else(|| start.elapsed());
    child::emit("messages_per_sec", counted as f64 / elapsed.as_secs_f64());
    child::emit("messages", counted);
    child::emit("window_secs", elapsed.as_secs_f64());

    /// One client connection of `load`: its message in flight and how much of the echo came.
    struct Conn {
        stream: std::net::TcpStream,
        msg: [u8; MESSAGE],
        got: usize,
        round: u8,
    }

    impl Conn {
        /// Writes client `i`'s next message (each round's bytes differ, so an echo of an
        /// earlier message is caught).
        fn send(&mut self, i: usize) -> Result<(), String> {
            self.round = self.round.wrapping_add(1);
            self.msg = [(i as u8).wrapping_add(self.round); MESSAGE];
            // One message is in flight per connection and its send buffer is empty before
            // it: 64 bytes always fit, so a short write is a fault, not back-pressure.
            match (&self.stream).write(&self.msg) {
                Ok(MESSAGE) => Ok(()),
                Ok(n) => Err(format!("write: {n} of {MESSAGE} bytes went")),
                Err(e) => Err(format!("write: {e}")),
            }
        }
    }
    Ok(())
}
