//! `skynet`: the skynet benchmark — a tree of 1,111,111 tasks, 1,000,000 of them leaves.
//!
//! Each node with `size > 1` spawns 10 children for the ten tenths of its range and sums
//! their results; a leaf returns its number. The root's sum over 1,000,000 leaves is
//! 499,999,500,000, checked in every run. (`--quick` uses 100,000 leaves, 111,111 tasks.)
//!
//! | implementation | node |
//! |---|---|
//! | corio stackful | a `corio::go` coroutine (default stack, taken when it first runs) that `go`es its 10 children and `join`s them; the root is `rt.run`'s main coroutine |
//! | corio stackless | an `async` node (boxed, for the recursion) that `corio::spawn`s its 10 children and awaits them; the root is a spawned task |
//! | go | the classic skynet.go: goroutines, each sends its sum on its parent's unbuffered channel |
//! | tokio | as corio stackless, with `tokio::spawn`; 1 worker: `current_thread`, 2: `multi_thread(2)` |
//!
//! Each run is a fresh process that runs the whole tree twice: the figure is the second
//! (warm: stacks, task memory and heap as the first run left them), the first is in the note
//! (cold: every stack carved, every page faulted in for the first time). A discarded round of
//! processes comes first. The metric is per worker count (`ms_per_run_1w`, `ms_per_run_2w`)
//! so that the ratio compares with Go at the same `GOMAXPROCS`.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use super::Case;
use super::fresh::{self, Launch, Row};
use crate::child::{self, ChildCommand};
use crate::gopeer;
use crate::opts::Opts;
use crate::report::{Measurement, fmt_num};

/// The `skynet` case.
pub const CASE: Case = Case {
    name: "skynet",
    about: "skynet: 1M leaves, fan-out 10, each node spawns and sums its children: ms per run",
    reference: Some("go"),
    run,
    child: Some(child_main),
};

/// Children per node.
const FANOUT: u64 = 10;

/// (row name, child key, note).
const IMPLS: [(&str, &str, &str); 4] = [
    ("corio stackful", "corio-stackful", "go + join"),
    (
        "corio stackless",
        "corio-stackless",
        "spawn + await, boxed async",
    ),
    ("go", "go", "goroutines + channels"),
    ("tokio", "tokio", "spawn + await, boxed async"),
];

fn run(opts: &Opts) -> Vec<Measurement> {
    let leaves: u64 = opts.size(1_000_000, 100_000);
    let runs = opts.runs(5, 5);
    let mut ms = Vec::new();
    for workers in [1usize, 2] {
        let launches: Vec<Launch> = IMPLS
            .iter()
            .map(|(_, key, _)| match *key {
                "go" => gopeer::command([
                    "skynet".to_string(),
                    workers.to_string(),
                    leaves.to_string(),
                ]),
                key => Ok(ChildCommand::new("skynet")
                    .args([key.to_string(), workers.to_string(), leaves.to_string()])
                    .timeout(Duration::from_secs(180))),
            })
            .collect();
        let series = fresh::run(&launches, runs, 1);
        for ((imp, key, note), s) in IMPLS.iter().zip(&series) {
            let config = match (*key, workers) {
                ("go", w) => format!("GOMAXPROCS={w}"),
                ("tokio", 1) => "current_thread".to_string(),
                ("tokio", w) => format!("multi_thread({w})"),
                (_, w) => format!("workers({w})"),
            };
            let cold = fresh::values(s, "cold_ms")
                .ok()
                .and_then(|v| crate::stats::Summary::of(&v))
                .map_or("?".to_string(), |c| fmt_num(c.median));
            let metric = if workers == 1 {
                "ms_per_run_1w"
            } else {
                "ms_per_run_2w"
            };
            ms.push(
                Row {
                    case: "skynet",
                    imp: imp.to_string(),
                    metric,
                    unit: "ms",
                    n: leaves,
                }
                .of(s, "ms")
                .with_note(format!(
                    "{config}, {note}; 2nd run in a fresh process (1st: {cold} ms)"
                )),
            );
        }
    }
    ms
}

/// `__child skynet <impl> <workers> <leaves>`: two runs of the tree; reports `@cold_ms`
/// (the first) and `@ms` (the second).
fn child_main(args: &[String]) -> Result<(), String> {
    let imp: String = child::arg(args, 0, "implementation")?;
    let workers: usize = child::arg(args, 1, "workers")?;
    let leaves: u64 = child::arg(args, 2, "leaves")?;
    if leaves == 0 || !is_power_of_fanout(leaves) {
        return Err(format!("leaves must be a power of {FANOUT}, not {leaves}"));
    }
    let times = match imp.as_str() {
        "corio-stackful" => corio_stackful(workers, leaves),
        "corio-stackless" => corio_stackless(workers, leaves),
        "tokio" => tokio_tree(workers, leaves),
        _ => return Err(format!("unknown implementation `{imp}`")),
    }?;
    let ms = |d: Duration| d.as_nanos() as f64 / 1e6;
    child::emit("cold_ms", ms(times[0]));
    child::emit("ms", ms(times[1]));
    std::process::exit(0);
}

fn is_power_of_fanout(mut n: u64) -> bool {
    while n.is_multiple_of(FANOUT) {
        n /= FANOUT;
    }
    n == 1
}

/// Times `tree()` twice, checking its sum each time.
fn twice(leaves: u64, mut tree: impl FnMut() -> u64) -> [Duration; 2] {
    let want = leaves * (leaves - 1) / 2;
    let mut once = || {
        let t = Instant::now();
        let sum = tree();
        let elapsed = t.elapsed();
        assert_eq!(sum, want, "skynet: wrong sum");
        elapsed
    };
    [once(), once()]
}

fn corio_runtime(workers: usize) -> Result<corio::Runtime, String> {
    corio::Runtime::builder()
        .workers(workers)
        .hog_report(false)
        .build()
        .map_err(|e| e.to_string())
}

/// A stackful node: `go`es its children, then joins them.
fn stackful_node(num: u64, size: u64) -> u64 {
    if size == 1 {
        return num;
    }
    let sub = size / FANOUT;
    let children: Vec<_> = (0..FANOUT)
        .map(|i| corio::go(move || stackful_node(num + i * sub, sub)))
        .collect();
    children.into_iter().map(|c| c.join().expect("node")).sum()
}

fn corio_stackful(workers: usize, leaves: u64) -> Result<[Duration; 2], String> {
    let rt = corio_runtime(workers)?;
    let times = twice(leaves, || rt.run(move || stackful_node(0, leaves)));
    std::mem::forget(rt);
    Ok(times)
}

type Node = Pin<Box<dyn Future<Output = u64> + Send>>;

/// A stackless node: spawns its children, then awaits them.
fn corio_node(num: u64, size: u64) -> Node {
    Box::pin(async move {
        if size == 1 {
            return num;
        }
        let sub = size / FANOUT;
        let children: Vec<_> = (0..FANOUT)
            .map(|i| corio::spawn(corio_node(num + i * sub, sub)))
            .collect();
        let mut sum = 0;
        for c in children {
            sum += c.await.expect("node");
        }
        sum
    })
}

fn corio_stackless(workers: usize, leaves: u64) -> Result<[Duration; 2], String> {
    let rt = corio_runtime(workers)?;
    let times = twice(leaves, || {
        rt.block_on(rt.spawn(corio_node(0, leaves))).expect("root")
    });
    std::mem::forget(rt);
    Ok(times)
}

/// A tokio node: spawns its children, then awaits them.
fn tokio_node(num: u64, size: u64) -> Node {
    Box::pin(async move {
        if size == 1 {
            return num;
        }
        let sub = size / FANOUT;
        let children: Vec<_> = (0..FANOUT)
            .map(|i| tokio::spawn(tokio_node(num + i * sub, sub)))
            .collect();
        let mut sum = 0;
        for c in children {
            sum += c.await.expect("node");
        }
        sum
    })
}

fn tokio_tree(workers: usize, leaves: u64) -> Result<[Duration; 2], String> {
    let rt = if workers == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
    }
    .map_err(|e| e.to_string())?;
    let times = twice(leaves, || {
        rt.block_on(rt.spawn(tokio_node(0, leaves))).expect("root")
    });
    std::mem::forget(rt);
    Ok(times)
}
