//! `echo`: messages per second through a TCP echo server on one core.
//!
//! Every server runs in its own process pinned to CPU 0 with one worker thread. The load is a
//! `__child echo load` process pinned to CPU 1: a tokio `current_thread` runtime (one thread,
//! so it needs only its one core) with 100 clients, each writing a 64-byte message, reading the
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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Case;
use super::fresh::Launch;
use super::netrun::{self, launch};
use crate::child::{self, ChildCommand};
use crate::opts::Opts;
use crate::report::Measurement;
use crate::server::{self, LOAD_CPU};

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
    ("corio-stackful", "corio", "examples/echo, workers(1)"),
    (
        "corio-async",
        "corio-async",
        "examples/echo_async, workers(1)",
    ),
    ("tokio", "tokio", "current_thread"),
    ("may", "may", "1 worker"),
    ("go", "go", "GOMAXPROCS=1"),
];

/// corio's servers and the peer each is compared with round by round (`*_ratio` rows): the
/// stackful server against may's coroutines, the async one against tokio's tasks.
const PAIRS: [(&str, &str); 2] = [("corio-stackful", "may"), ("corio-async", "tokio")];

const CLIENTS: usize = 100;
const MESSAGE: usize = 64;

fn run(opts: &Opts) -> Vec<Measurement> {
    let ms: u64 = opts.size(10_000, 1_000);
    let runs = opts.runs(3, 1);
    let launches: Vec<Launch> = IMPLS
        .iter()
        .map(|(_, srv, _)| launch("echo", srv, "echoserve"))
        .collect();
    let results = netrun::rounds(&launches, runs, |_, srv, _| {
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
        let mps = out.require_f64("messages_per_sec")?;
        let messages = out.require_f64("messages")?;
        let window = Duration::try_from_secs_f64(out.require_f64("window_secs")?)
            .map_err(|e| format!("the load client reported a bad window: {e}"))?;
        let cpu = srv.cpu_since(cpu_before);
        let mut values = vec![("mps".into(), mps)];
        server::push_cpu(&mut values, "echo", cpu, messages, window);
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
fn load(addr: std::net::SocketAddr, clients: usize, window: Duration) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let mut streams = Vec::with_capacity(clients);
        for _ in 0..clients {
            let s = tokio::net::TcpStream::connect(addr)
                .await
                .map_err(|e| format!("connect: {e}"))?;
            s.set_nodelay(true).map_err(|e| e.to_string())?;
            streams.push(s);
        }
        let start = Instant::now();
        let tasks: Vec<_> = streams
            .into_iter()
            .enumerate()
            .map(|(i, mut s)| {
                let (stop, count) = (stop.clone(), count.clone());
                tokio::spawn(async move {
                    let msg = [i as u8; MESSAGE];
                    let mut back = [0u8; MESSAGE];
                    // Relaxed: the flag only ends the loop; the count is read after every
                    // task has been joined (the join is the synchronisation).
                    while !stop.load(Ordering::Relaxed) {
                        s.write_all(&msg).await.map_err(|e| format!("write: {e}"))?;
                        s.read_exact(&mut back)
                            .await
                            .map_err(|e| format!("read: {e}"))?;
                        if back != msg {
                            return Err("the echo differs from the message".to_string());
                        }
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        tokio::time::sleep(window).await;
        let counted = count.load(Ordering::Relaxed);
        let elapsed = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            t.await.map_err(|e| e.to_string())??;
        }
        child::emit("messages_per_sec", counted as f64 / elapsed.as_secs_f64());
        child::emit("messages", counted);
        child::emit("window_secs", elapsed.as_secs_f64());
        Ok::<(), String>(())
    })
}
