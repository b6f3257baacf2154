//! `chan`: channel hand-offs, corio vs Go, tokio, may and crossbeam-channel.
//!
//! Three programs, each run as a fresh process per run (`fresh.rs`), interleaved:
//!
//! | metric | program | implementations |
//! |---|---|---|
//! | `pingpong_ns_per_handoff_{1,2}w` | main and an echo pass a value back and forth over two rendezvous channels, `n` round trips; time / 2n | corio stackful (`go`, `send`/`recv`), corio async (`spawn`, `send_async`/`recv_async`), Go unbuffered `chan` (`GOMAXPROCS` = workers), tokio `mpsc::channel(1)` (`current_thread` for 1 worker, `multi_thread` for 2; tokio has no rendezvous channel), may `sync::mpsc::channel` (unbounded: may has no bounded channel) |
//! | `mpmc_msgs_per_s_2w` | 4 producers send `n` values each into one channel of capacity 1024, 4 consumers drain it until it closes; 4n / time | corio stackful, Go, tokio `mpsc::channel(1024)` with the 4 consumers sharing the receiver behind a `tokio::sync::Mutex` (tokio's channel is single-consumer), crossbeam-channel `bounded(1024)` on 8 OS threads |
//! | `sieve_ms_{1,2}w` | Go's concurrent prime sieve to the n-th prime (`examples/sieve.rs`; Go's is the tour's, which never tears its chain down) | corio stackful, Go |
//!
//! Each ping-pong and MPMC child first runs the same program at a tenth of the size
//! (discarded: thread start, allocation, the CPU's clock); the sieve has no warm-up (one run
//! is seconds long). The value each child reports is `@value`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Case;
use super::fresh::{self, Launch, Row};
use crate::child::{self, ChildCommand};
use crate::gopeer;
use crate::opts::Opts;
use crate::report::Measurement;

// The sieve is the example's own chain, so that what is measured is what a reader sees in
// `crates/corio/examples/sieve.rs`.
#[path = "../../../corio/examples/shared/sieve.rs"]
mod corio_sieve_chain;

/// The `chan` case.
pub const CASE: Case = Case {
    name: "chan",
    about: "channels: rendezvous ping-pong (ns per hand-off), 4→4 MPMC over bounded(1024) \
            (messages/s), prime sieve (ms)",
    reference: Some("go"),
    run,
    child: Some(child_main),
};

/// One program of the case: (program, workers, metric, unit, rows as (row name, child key, note)).
type Program = (
    &'static str,
    usize,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str, &'static str)],
);

const PINGPONG_ROWS: &[(&str, &str, &str)] = &[
    (
        "corio stackful",
        "corio-stackful",
        "go + send/recv on bounded(0)",
    ),
    (
        "corio async",
        "corio-async",
        "spawn + send_async/recv_async on bounded(0)",
    ),
    ("go", "go", "unbuffered chan"),
    ("tokio", "tokio", "mpsc::channel(1)"),
    ("may", "may", "may::sync::mpsc::channel (unbounded)"),
];

const PROGRAMS: &[Program] = &[
    (
        "pingpong",
        1,
        "pingpong_ns_per_handoff_1w",
        "ns",
        PINGPONG_ROWS,
    ),
    (
        "pingpong",
        2,
        "pingpong_ns_per_handoff_2w",
        "ns",
        PINGPONG_ROWS,
    ),
    (
        "mpmc",
        2,
        "mpmc_msgs_per_s_2w",
        "msg/s",
        &[
            (
                "corio stackful",
                "corio-stackful",
                "4 + 4 coroutines, bounded(1024)",
            ),
            ("go", "go", "4 + 4 goroutines, make(chan int, 1024)"),
            (
                "tokio",
                "tokio",
                "multi_thread(2), mpsc::channel(1024), receiver behind a Mutex",
            ),
            (
                "crossbeam",
                "crossbeam",
                "8 OS threads, crossbeam_channel::bounded(1024)",
            ),
        ],
    ),
    (
        "sieve",
        1,
        "sieve_ms_1w",
        "ms",
        &[
            ("corio stackful", "corio-stackful", "examples/sieve.rs"),
            ("go", "go", "the Go tour's sieve"),
        ],
    ),
    (
        "sieve",
        2,
        "sieve_ms_2w",
        "ms",
        &[
            ("corio stackful", "corio-stackful", "examples/sieve.rs"),
            ("go", "go", "the Go tour's sieve"),
        ],
    ),
];

fn run(opts: &Opts) -> Vec<Measurement> {
    let mut ms = Vec::new();
    for &(program, workers, metric, unit, rows) in PROGRAMS {
        let (n, runs): (u64, usize) = match program {
            "pingpong" => (opts.size(1_000_000, 100_000), opts.runs(5, 3)),
            "mpmc" => (opts.size(500_000, 50_000), opts.runs(5, 3)),
            _ => (opts.size(10_000, 1_000), opts.runs(3, 3)),
        };
        let warm = if program == "sieve" { 0 } else { n / 10 };
        let args = |key: &str| {
            [
                program.to_string(),
                key.to_string(),
                workers.to_string(),
                n.to_string(),
                warm.to_string(),
            ]
        };
        // The sieve to the 10,000th prime takes tens of seconds per run on a loaded 2-vCPU
        // machine; the default 120 s child timeout is too short for it.
        let limit = Duration::from_secs(if program == "sieve" { 900 } else { 120 });
        let launches: Vec<Launch> = rows
            .iter()
            .map(|(_, key, _)| match *key {
                "go" => gopeer::command([
                    "chan".to_string(),
                    workers.to_string(),
                    program.to_string(),
                    n.to_string(),
                    warm.to_string(),
                ])
                .map(|c| c.timeout(limit)),
                key => Ok(ChildCommand::new("chan").args(args(key)).timeout(limit)),
            })
            .collect();
        let series = fresh::run(&launches, runs, 0);
        ms.extend(rows.iter().zip(&series).map(|((imp, _, note), s)| {
            Row {
                case: "chan",
                imp: imp.to_string(),
                metric,
                unit,
                n,
            }
            .of(s, "value")
            .with_note(format!("{note}; {workers} worker(s), fresh process"))
        }));
    }
    ms
}

/// `__child chan <program> <impl> <workers> <n> <warm-up n>`: reports `@value`.
fn child_main(args: &[String]) -> Result<(), String> {
    let program: String = child::arg(args, 0, "program")?;
    let imp: String = child::arg(args, 1, "implementation")?;
    let workers: usize = child::arg(args, 2, "workers")?;
    let n: u64 = child::arg(args, 3, "n")?;
    let warm: u64 = child::arg(args, 4, "warm-up n")?;
    let timed = |f: &dyn Fn(u64) -> Result<Duration, String>| -> Result<Duration, String> {
        if warm > 0 {
            f(warm)?;
        }
        f(n)
    };
    let value = match (program.as_str(), imp.as_str()) {
        ("pingpong", "corio-stackful") => per_handoff(timed(&|n| corio_pingpong(workers, n))?, n),
        ("pingpong", "corio-async") => {
            per_handoff(timed(&|n| corio_async_pingpong(workers, n))?, n)
        }
        ("pingpong", "tokio") => per_handoff(timed(&|n| tokio_pingpong(workers, n))?, n),
        ("pingpong", "may") => per_handoff(timed(&|n| may_pingpong(workers, n))?, n),
        ("mpmc", "corio-stackful") => per_second(timed(&|n| corio_mpmc(workers, n))?, n),
        ("mpmc", "tokio") => per_second(timed(&|n| tokio_mpmc(workers, n))?, n),
        ("mpmc", "crossbeam") => per_second(timed(&crossbeam_mpmc)?, n),
        ("sieve", "corio-stackful") => timed(&|n| corio_sieve(workers, n))?.as_secs_f64() * 1e3,
        _ => {
            return Err(format!(
                "unknown program/implementation `{program}` `{imp}`"
            ));
        }
    };
    child::emit("value", value);
    Ok(())
}

fn per_handoff(d: Duration, round_trips: u64) -> f64 {
    d.as_nanos() as f64 / (2 * round_trips) as f64
}

fn per_second(d: Duration, per_producer: u64) -> f64 {
    (4 * per_producer) as f64 / d.as_secs_f64()
}

fn corio_rt(workers: usize) -> Result<corio::Runtime, String> {
    corio::Runtime::builder()
        .workers(workers)
        .hog_report(false)
        .build()
        .map_err(|e| e.to_string())
}

fn corio_pingpong(workers: usize, n: u64) -> Result<Duration, String> {
    let rt = corio_rt(workers)?;
    Ok(rt.run(move || {
        let (ping_tx, ping_rx) = corio::chan::bounded::<u64>(0);
        let (pong_tx, pong_rx) = corio::chan::bounded::<u64>(0);
        let echo = corio::go(move || {
            for v in ping_rx {
                pong_tx.send(v + 1).expect("pong");
            }
        });
        let t = Instant::now();
        for i in 0..black_box(n) {
            ping_tx.send(i).expect("ping");
            assert_eq!(pong_rx.recv(), Ok(i + 1));
        }
        let d = t.elapsed();
        drop(ping_tx);
        echo.join().expect("echo");
        d
    }))
}

fn corio_async_pingpong(workers: usize, n: u64) -> Result<Duration, String> {
    let rt = corio_rt(workers)?;
    let main = rt.spawn(async move {
        let (ping_tx, ping_rx) = corio::chan::bounded::<u64>(0);
        let (pong_tx, pong_rx) = corio::chan::bounded::<u64>(0);
        let echo = corio::spawn(async move {
            while let Ok(v) = ping_rx.recv_async().await {
                pong_tx.send_async(v + 1).await.expect("pong");
            }
        });
        let t = Instant::now();
        for i in 0..black_box(n) {
            ping_tx.send_async(i).await.expect("ping");
            assert_eq!(pong_rx.recv_async().await, Ok(i + 1));
        }
        let d = t.elapsed();
        drop(ping_tx);
        echo.await.expect("echo");
        d
    });
    rt.block_on(main).map_err(|e| e.to_string())
}

fn tokio_rt(workers: usize) -> Result<tokio::runtime::Runtime, String> {
    let mut b = if workers == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(workers);
        b
    };
    b.enable_all().build().map_err(|e| e.to_string())
}

fn tokio_pingpong(workers: usize, n: u64) -> Result<Duration, String> {
    let rt = tokio_rt(workers)?;
    let main = rt.spawn(async move {
        let (ping_tx, mut ping_rx) = tokio::sync::mpsc::channel::<u64>(1);
        let (pong_tx, mut pong_rx) = tokio::sync::mpsc::channel::<u64>(1);
        let echo = tokio::spawn(async move {
            while let Some(v) = ping_rx.recv().await {
                pong_tx.send(v + 1).await.expect("pong");
            }
        });
        let t = Instant::now();
        for i in 0..black_box(n) {
            ping_tx.send(i).await.expect("ping");
            assert_eq!(pong_rx.recv().await, Some(i + 1));
        }
        let d = t.elapsed();
        drop(ping_tx);
        echo.await.expect("echo");
        d
    });
    rt.block_on(main).map_err(|e| e.to_string())
}

fn may_pingpong(workers: usize, n: u64) -> Result<Duration, String> {
    may::config().set_workers(workers).set_worker_pin(false);
    let main = fresh::may_go(move || {
        let (ping_tx, ping_rx) = may::sync::mpsc::channel::<u64>();
        let (pong_tx, pong_rx) = may::sync::mpsc::channel::<u64>();
        let echo = fresh::may_go(move || {
            while let Ok(v) = ping_rx.recv() {
                pong_tx.send(v + 1).expect("pong");
            }
        });
        let t = Instant::now();
        for i in 0..black_box(n) {
            ping_tx.send(i).expect("ping");
            assert_eq!(pong_rx.recv(), Ok(i + 1));
        }
        let d = t.elapsed();
        drop(ping_tx);
        echo.join().expect("echo");
        d
    });
    main.join()
        .map_err(|_| "may: the main coroutine panicked".to_string())
}

fn corio_mpmc(workers: usize, n: u64) -> Result<Duration, String> {
    let rt = corio_rt(workers)?;
    Ok(rt.run(move || {
        let (tx, rx) = corio::chan::bounded::<u64>(1024);
        let t = Instant::now();
        let producers: Vec<_> = (0..4)
            .map(|_| {
                let tx = tx.clone();
                corio::go(move || (0..n).for_each(|i| tx.send(i).expect("send")))
            })
            .collect();
        drop(tx);
        let consumers: Vec<_> = (0..4)
            .map(|_| {
                let rx = rx.clone();
                corio::go(move || rx.iter().count() as u64)
            })
            .collect();
        producers
            .into_iter()
            .for_each(|p| p.join().expect("producer"));
        let got: u64 = consumers
            .into_iter()
            .map(|c| c.join().expect("consumer"))
            .sum();
        assert_eq!(got, 4 * n);
        t.elapsed()
    }))
}

fn tokio_mpmc(workers: usize, n: u64) -> Result<Duration, String> {
    let rt = tokio_rt(workers)?;
    let main = rt.spawn(async move {
        let (tx, rx) = tokio::sync::mpsc::channel::<u64>(1024);
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let t = Instant::now();
        let producers: Vec<_> = (0..4)
            .map(|_| {
                let tx = tx.clone();
                tokio::spawn(async move {
                    for i in 0..n {
                        tx.send(i).await.expect("send");
                    }
                })
            })
            .collect();
        drop(tx);
        let consumers: Vec<_> = (0..4)
            .map(|_| {
                let rx = rx.clone();
                tokio::spawn(async move {
                    let mut got = 0u64;
                    while rx.lock().await.recv().await.is_some() {
                        got += 1;
                    }
                    got
                })
            })
            .collect();
        for p in producers {
            p.await.expect("producer");
        }
        let mut got = 0;
        for c in consumers {
            got += c.await.expect("consumer");
        }
        assert_eq!(got, 4 * n);
        t.elapsed()
    });
    rt.block_on(main).map_err(|e| e.to_string())
}

fn crossbeam_mpmc(n: u64) -> Result<Duration, String> {
    let (tx, rx) = crossbeam_channel::bounded::<u64>(1024);
    let t = Instant::now();
    let producers: Vec<_> = (0..4)
        .map(|_| {
            let tx = tx.clone();
            std::thread::spawn(move || (0..n).for_each(|i| tx.send(i).expect("send")))
        })
        .collect();
    drop(tx);
    let consumers: Vec<_> = (0..4)
        .map(|_| {
            let rx = rx.clone();
            std::thread::spawn(move || rx.iter().count() as u64)
        })
        .collect();
    producers
        .into_iter()
        .for_each(|p| p.join().expect("producer"));
    let got: u64 = consumers
        .into_iter()
        .map(|c| c.join().expect("consumer"))
        .sum();
    assert_eq!(got, 4 * n);
    Ok(t.elapsed())
}

/// `examples/sieve.rs`, timed inside the runtime.
fn corio_sieve(workers: usize, n: u64) -> Result<Duration, String> {
    let n = usize::try_from(n).map_err(|e| e.to_string())?;
    let rt = corio_rt(workers)?;
    Ok(rt.run(move || {
        let t = Instant::now();
        let p = corio_sieve_chain::nth_prime(n);
        let d = t.elapsed();
        child::emit("prime", p);
        d
    }))
    .inspect(|_| emit_placement(&rt.metrics()))
}

/// Where the work ran: polls per worker and the tasks other threads queued on each (cross-
/// thread wake-ups and placements), as `@polls_w<i>` / `@inbox_w<i>` lines.
fn emit_placement(m: &corio::Metrics) {
    let each = m.worker_polls.iter().zip(&m.worker_inbox_pushes);
    for (i, (polls, inbox)) in each.enumerate() {
        if i >= m.workers && *polls == 0 {
            continue; // a spare that never ran
        }
        child::emit(&format!("polls_w{i}"), polls);
        child::emit(&format!("inbox_w{i}"), inbox);
    }
}
