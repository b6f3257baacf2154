//! `yield`: two coroutines yielding to each other on one worker (Go's `runtime.Gosched`).
//!
//! Two coroutines each yield `n` times; nothing else is runnable (whoever started them waits,
//! parked, for both), so every yield switches to the other one. The time covers starting both
//! and waiting for both; the figure is `time / 2n`, nanoseconds per yield (a yield = one
//! trip through the scheduler: requeue, pick the next, switch).
//!
//! | implementation | what runs |
//! |---|---|
//! | corio stackful | `Runtime::builder().workers(1)`, `rt.run` main coroutine `go`es two coroutines looping `corio::yield_now()`, joins both |
//! | corio stackless | same runtime; a `corio::spawn`ed task spawns two tasks looping `yield_now_async().await`, awaits both |
//! | go | `GOMAXPROCS=1`, main goroutine starts two goroutines looping `runtime.Gosched()`, `WaitGroup` |
//! | may | `set_workers(1)` (no pinning, like the others), a coroutine spawns two looping `may::coroutine::yield_now()`, joins both |
//! | tokio | `current_thread` + `enable_all` (as `#[tokio::main(flavor = "current_thread")]`), `block_on` of a spawned task that spawns two looping `tokio::task::yield_now().await`, awaits both |
//! | tokio (no IO driver) | the same without `enable_all` |
//!
//! tokio's `yield_now` defers the waker; when the run queue is empty (after each pair of
//! yields here) the scheduler polls its driver with a zero timeout to wake the deferred tasks
//! — with the IO driver enabled that is an `epoll_wait` system call, which the second tokio
//! row leaves out.
//!
//! Each run is a fresh process that first runs the same pair with `n / 5` yields (discarded:
//! thread start, stack and queue allocation, the CPU's clock), then the timed pair.
//!
//! With `--callgrind` (and in `table` when valgrind is installed), corio stackful also runs under
//! callgrind at two sizes without the warm-up: the difference over the difference in yields is
//! the instructions of one yield (see `callgrind.rs`), noise-free. sysmon ticks during the run
//! add a little (it runs every few ms while a worker is busy).

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::Case;
use super::fresh::{self, Launch, Row};
use crate::callgrind;
use crate::child::{self, ChildCommand};
use crate::gopeer;
use crate::opts::Opts;
use crate::report::Measurement;

/// The `yield` case.
pub const CASE: Case = Case {
    name: "yield",
    about: "2 coroutines yielding to each other on 1 worker: ns (and instructions) per yield",
    reference: Some("go"),
    run,
    child: Some(child_main),
};

/// (row name, child implementation key, note); `go` runs the Go peer.
const IMPLS: [(&str, &str, &str); 6] = [
    (
        "corio stackful",
        "corio-stackful",
        "workers(1), go + yield_now",
    ),
    (
        "corio stackless",
        "corio-stackless",
        "workers(1), spawn + yield_now_async",
    ),
    ("go", "go", "GOMAXPROCS=1, runtime.Gosched"),
    ("may", "may", "1 worker, may::coroutine::yield_now"),
    (
        "tokio",
        "tokio",
        "current_thread + enable_all, task::yield_now",
    ),
    (
        "tokio (no IO driver)",
        "tokio-no-io",
        "current_thread without enable_all, task::yield_now",
    ),
];

/// Yields per coroutine for the callgrind difference (valgrind runs ~50× slower).
const CALLGRIND_N1: u64 = 100_000;
const CALLGRIND_N2: u64 = 200_000;

fn run(opts: &Opts) -> Vec<Measurement> {
    let n: u64 = opts.size(5_000_000, 1_000_000);
    let warm = n / 5;
    let runs = opts.runs(5, 5);
    let launches: Vec<Launch> = IMPLS
        .iter()
        .map(|(_, key, _)| match *key {
            "go" => gopeer::command([
                "yield".to_string(),
                "1".into(),
                n.to_string(),
                warm.to_string(),
            ]),
            key => Ok(ChildCommand::new("yield").args([
                key.to_string(),
                n.to_string(),
                warm.to_string(),
            ])),
        })
        .collect();
    let series = fresh::run(&launches, runs, 0);
    let mut ms: Vec<Measurement> = IMPLS
        .iter()
        .zip(&series)
        .map(|((imp, _, note), s)| {
            Row {
                case: "yield",
                imp: imp.to_string(),
                metric: "ns_per_yield",
                unit: "ns",
                n: 2 * n,
            }
            .of(s, "ns_per_yield")
            .with_note(format!(
                "{note}; fresh process, warm-up {} yields discarded",
                2 * warm
            ))
        })
        .collect();
    if opts.callgrind || opts.table {
        ms.push(instructions());
    }
    ms
}

/// The `instructions_per_yield` row for corio stackful.
fn instructions() -> Measurement {
    let (imp, metric) = ("corio stackful", "instructions_per_yield");
    if callgrind::valgrind().is_none() {
        return Measurement::skipped(
            "yield",
            imp,
            metric,
            "instr",
            2 * CALLGRIND_N2,
            "valgrind not installed",
        );
    }
    let command = |n: u64| {
        ChildCommand::new("yield").args(["corio-stackful".to_string(), n.to_string(), "0".into()])
    };
    match callgrind::instructions_per_op(command, CALLGRIND_N1, CALLGRIND_N2, 2.0) {
        Ok(v) => Measurement::new("yield", imp, metric, "instr", 2 * CALLGRIND_N2, &[v]).with_note(
            format!(
                "callgrind, (Ir@{} − Ir@{} yields) / difference",
                2 * CALLGRIND_N2,
                2 * CALLGRIND_N1
            ),
        ),
        Err(e) => Measurement::failed("yield", imp, metric, "instr", 2 * CALLGRIND_N2, e),
    }
}

/// `__child yield <impl> <n> <warm-up n>`: a warm-up pair (if `warm-up n` > 0), then the
/// timed pair; reports `@ns_per_yield`.
fn child_main(args: &[String]) -> Result<(), String> {
    let imp: String = child::arg(args, 0, "implementation")?;
    let n: u64 = child::arg(args, 1, "yields per coroutine")?;
    let warm: u64 = child::arg(args, 2, "warm-up yields per coroutine")?;
    let elapsed = match imp.as_str() {
        "corio-stackful" => corio_stackful(n, warm),
        "corio-stackless" => corio_stackless(n, warm),
        "may" => may_pair(n, warm),
        "tokio" => tokio_pair(true, n, warm),
        "tokio-no-io" => tokio_pair(false, n, warm),
        _ => return Err(format!("unknown implementation `{imp}`")),
    }?;
    child::emit("ns_per_yield", elapsed.as_nanos() as f64 / (2 * n) as f64);
    Ok(())
}

type Timed = Result<Duration, String>;

fn corio_stackful(n: u64, warm: u64) -> Timed {
    let rt = corio::Runtime::builder()
        .workers(1)
        .hog_report(false)
        .build()
        .map_err(|e| e.to_string())?;
    let pair = |n: u64| {
        rt.run(move || {
            let t = Instant::now();
            let yielder = move || {
                for _ in 0..black_box(n) {
                    corio::yield_now();
                }
            };
            let a = corio::go(yielder);
            let b = corio::go(yielder);
            a.join().expect("yielder a");
            b.join().expect("yielder b");
            t.elapsed()
        })
    };
    if warm > 0 {
        pair(warm);
    }
    Ok(pair(n))
}

fn corio_stackless(n: u64, warm: u64) -> Timed {
    let rt = corio::Runtime::builder()
        .workers(1)
        .hog_report(false)
        .build()
        .map_err(|e| e.to_string())?;
    let pair = |n: u64| {
        let main = rt.spawn(async move {
            let t = Instant::now();
            let a = corio::spawn(async move {
                for _ in 0..black_box(n) {
                    corio::yield_now_async().await;
                }
            });
            let b = corio::spawn(async move {
                for _ in 0..black_box(n) {
                    corio::yield_now_async().await;
                }
            });
            a.await.expect("yielder a");
            b.await.expect("yielder b");
            t.elapsed()
        });
        rt.block_on(main).expect("main task")
    };
    if warm > 0 {
        pair(warm);
    }
    Ok(pair(n))
}

fn may_pair(n: u64, warm: u64) -> Timed {
    may::config().set_workers(1).set_worker_pin(false);
    let pair = |n: u64| {
        let main = fresh::may_go(move || {
            let t = Instant::now();
            let yielder = move || {
                for _ in 0..black_box(n) {
                    may::coroutine::yield_now();
                }
            };
            let a = fresh::may_go(yielder);
            let b = fresh::may_go(yielder);
            a.join().expect("yielder a");
            b.join().expect("yielder b");
            t.elapsed()
        });
        main.join()
            .map_err(|_| "may: the main coroutine panicked".to_string())
    };
    if warm > 0 {
        pair(warm)?;
    }
    pair(n)
}

fn tokio_pair(io: bool, n: u64, warm: u64) -> Timed {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    if io {
        builder.enable_all();
    }
    let rt = builder.build().map_err(|e| e.to_string())?;
    let pair = |n: u64| {
        let main = rt.spawn(async move {
            let t = Instant::now();
            let a = tokio::spawn(async move {
                for _ in 0..black_box(n) {
                    tokio::task::yield_now().await;
                }
            });
            let b = tokio::spawn(async move {
                for _ in 0..black_box(n) {
                    tokio::task::yield_now().await;
                }
            });
            a.await.expect("yielder a");
            b.await.expect("yielder b");
            t.elapsed()
        });
        rt.block_on(main).expect("main task")
    };
    if warm > 0 {
        pair(warm);
    }
    Ok(pair(n))
}
