//! `c10k`: what 10,000 idle keep-alive connections cost one server on one worker.
//!
//! Each server (an echo server of the `echo` case, pinned to CPU 0, one worker) starts in a
//! fresh process and settles for 300 ms; its RSS (`VmRSS` of `/proc/<pid>/status`) is read.
//! This process then opens 10,000 connections (`--quick`: 2,000) and makes one 1-byte round
//! trip on each, so that every connection has been accepted and has its coroutine, task or
//! goroutine parked in a read; after 500 ms the RSS is read again. The difference divided by
//! the connection count is the memory per connection. Then, with every connection idle, the
//! context switches of all the server's threads (`/proc/<pid>/task/*/status`) over a 2 s
//! window (`--quick`: 1 s) give the wake-ups per second of an idle server holding them.
//! The soft `RLIMIT_NOFILE` is raised to the hard limit on both sides.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::Case;
use super::echo;
use super::fresh::Launch;
use super::netrun::{self, launch};
use crate::opts::Opts;
use crate::proc::{status_field, switches_between, threads_switches};
use crate::report::Measurement;
use crate::server::{self, raise_nofile};

/// The `c10k` case.
pub const CASE: Case = Case {
    name: "c10k",
    about: "10,000 idle keep-alive connections on one worker: RSS per connection, wake-ups/s",
    reference: Some("go"),
    run,
    child: None,
};

/// The `echo` servers measured here: (row name, server, note).
const IMPLS: [(&str, &str, &str); 4] = [
    echo::IMPLS[0], // corio-stackful
    echo::IMPLS[1], // corio-async
    echo::IMPLS[2], // tokio
    echo::IMPLS[4], // go
];

fn run(opts: &Opts) -> Vec<Measurement> {
    let conns: usize = opts.size(10_000, 2_000);
    let window = Duration::from_millis(opts.size(2_000, 1_000));
    let runs = opts.runs(3, 1);
    raise_nofile();
    let launches: Vec<Launch> = IMPLS
        .iter()
        .map(|(_, srv, _)| launch("echo", srv, "echoserve"))
        .collect();
    let results = netrun::rounds(&launches, runs, |_, srv, notes| {
        let pid = srv.pid().to_string();
        std::thread::sleep(Duration::from_millis(300));
        let rss = || {
            status_field(&pid, "VmRSS")
                .map(|kib| kib * 1024)
                .map_err(|e| format!("reading the server's RSS: {e}"))
        };
        let before = rss()?;
        let held = connect_all(srv.addr, conns)?;
        std::thread::sleep(Duration::from_millis(500));
        let after = rss()?;
        let s0 = threads_switches(&pid)?;
        let t = Instant::now();
        std::thread::sleep(window);
        let s1 = threads_switches(&pid)?;
        let elapsed = t.elapsed();
        let total = switches_between(&s0, &s1);
        drop(held);
        notes.insert(
            "last".into(),
            format!(
                "last run: RSS {} → {} KiB, {} threads",
                before / 1024,
                after / 1024,
                s1.len()
            ),
        );
        Ok(vec![
            ("rss".into(), (after as f64 - before as f64) / conns as f64),
            (
                "wakeups".into(),
                (total.voluntary + total.nonvoluntary) as f64 / elapsed.as_secs_f64(),
            ),
        ])
    });
    let mut out = Vec::new();
    for (metric, unit, key) in [
        ("rss_per_conn", "B", "rss"),
        ("idle_wakeups_per_sec", "1/s", "wakeups"),
    ] {
        for (i, (imp, _, note)) in IMPLS.iter().enumerate() {
            let parts = [
                Some(*note),
                results.note(i, "last"),
                results.note(i, netrun::RETRIED),
                Some(server::pin_note()),
            ];
            let full: Vec<&str> = parts.into_iter().flatten().collect();
            out.push(
                results
                    .row(i, "c10k", imp, (metric, unit, conns as u64), key)
                    .and_note(full.join("; ")),
            );
        }
    }
    out
}

/// Opens `n` connections to the echo server at `addr` and makes one 1-byte round trip on each.
fn connect_all(addr: std::net::SocketAddr, n: usize) -> Result<Vec<TcpStream>, String> {
    let mut held = Vec::with_capacity(n);
    for i in 0..n {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
            .map_err(|e| format!("connection {i}: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        let mut b = [i as u8];
        s.write_all(&b)
            .and_then(|()| s.read_exact(&mut b))
            .map_err(|e| format!("round trip on connection {i}: {e}"))?;
        if b[0] != i as u8 {
            return Err(format!("connection {i} echoed the wrong byte"));
        }
        held.push(s);
    }
    Ok(held)
}
