//! `spawn`: spawn a batch of tasks with an empty body, then join them all.
//!
//! A spawner that is itself a task of the runtime (so that with one worker it shares the
//! worker with what it spawns, as Go's main goroutine does) spawns `n` tasks whose body only
//! returns 1, keeping the handles, then joins them in order and checks the sum. The time,
//! taken inside the spawner from the first spawn to the last join, divided by `n`, is the
//! figure: nanoseconds per task, for the whole life of a task that does nothing. Whether
//! tasks run while others are still being spawned is the scheduler's business (with 2 workers
//! the second one runs and steals them meanwhile).
//!
//! | implementation | spawner | task | join |
//! |---|---|---|---|
//! | corio stackful | `rt.run` main coroutine | `corio::go(|| 1)` | `handle.join()` |
//! | corio stackless | a `corio::spawn`ed task | `corio::spawn(async { 1 })` | `handle.await` |
//! | go | main goroutine, `GOMAXPROCS=w` | `go func() { wg.Done() }()` | `wg.Wait()` |
//! | tokio | a spawned task; 1 worker: `current_thread`, 2: `multi_thread(2)` | `tokio::spawn(async { 1 })` | `handle.await` |
//! | may | a coroutine, `set_workers(w)`, no pinning | `may::coroutine::spawn(|| 1)` | `handle.join()` |
//! | std::thread | the main thread | `std::thread::spawn(|| 1)` | `handle.join()` (10,000 threads, not 1,000,000) |
//!
//! Every run of every implementation is a fresh process: memory that a previous batch left
//! in a pool or a free list can neither help nor hurt the first batch (`ns_per_task_*`), which
//! pays for every page of task memory and stack the batch needs, faulted in for the first
//! time. The same process then runs a second batch (`ns_per_task_*_warm`): pools, free lists
//! and the heap as the first left them — the steady state of a program that keeps spawning.
//! One discarded round of processes comes first (the binary and the Go peer in the page
//! cache, the CPU's clock up).
//!
//! The metrics are per worker count (`ns_per_task_1w`, `ns_per_task_2w`) so that the ratio
//! column compares with Go at the same `GOMAXPROCS`. std::thread sits with the 2-worker rows:
//! the kernel runs threads on both CPUs.
//!
//! may needs an `mmap` and a guard page per live coroutine's stack (two mappings), so it
//! cannot hold more than ~32,700 under the default `vm.max_map_count`; when the full batch
//! fails, the failure is recorded with how far it got, and a batch of 10,000 is measured too.

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::Case;
use super::fresh::{self, Launch, Row};
use crate::child::{self, ChildCommand};
use crate::gopeer;
use crate::opts::Opts;
use crate::report::{Measurement, Outcome};

/// The `spawn` case.
pub const CASE: Case = Case {
    name: "spawn",
    about: "spawn a batch of empty tasks, then join them all: ns per task, 1 and 2 workers",
    reference: Some("go"),
    run,
    child: Some(child_main),
};

/// The batch of OS threads (each has a stack of its own, so far fewer than coroutines).
const THREADS: u64 = 10_000;

/// The batch may is measured at when it cannot hold the full one.
const MAY_FALLBACK: u64 = 10_000;

/// One row: name, child key, workers, note.
struct Impl {
    imp: &'static str,
    key: &'static str,
    workers: usize,
    note: &'static str,
}

const IMPLS: &[Impl] = &[
    Impl {
        imp: "corio stackful",
        key: "corio-stackful",
        workers: 1,
        note: "workers(1), go + join",
    },
    Impl {
        imp: "corio stackless",
        key: "corio-stackless",
        workers: 1,
        note: "workers(1), spawn + await",
    },
    Impl {
        imp: "go",
        key: "go",
        workers: 1,
        note: "GOMAXPROCS=1, go + WaitGroup",
    },
    Impl {
        imp: "tokio",
        key: "tokio",
        workers: 1,
        note: "current_thread, spawn + await",
    },
    Impl {
        imp: "may",
        key: "may",
        workers: 1,
        note: "1 worker, spawn + join",
    },
    Impl {
        imp: "corio stackful",
        key: "corio-stackful",
        workers: 2,
        note: "workers(2), go + join",
    },
    Impl {
        imp: "corio stackless",
        key: "corio-stackless",
        workers: 2,
        note: "workers(2), spawn + await",
    },
    Impl {
        imp: "go",
        key: "go",
        workers: 2,
        note: "GOMAXPROCS=2, go + WaitGroup",
    },
    Impl {
        imp: "tokio",
        key: "tokio",
        workers: 2,
        note: "multi_thread(2), spawn + await",
    },
    Impl {
        imp: "may",
        key: "may",
        workers: 2,
        note: "2 workers, spawn + join",
    },
    Impl {
        imp: "std::thread",
        key: "thread",
        workers: 2,
        note: "10,000 OS threads (not the batch size), spawn + join",
    },
];

fn metric(workers: usize, warm: bool) -> &'static str {
    match (workers, warm) {
        (1, false) => "ns_per_task_1w",
        (1, true) => "ns_per_task_1w_warm",
        (_, false) => "ns_per_task_2w",
        (_, true) => "ns_per_task_2w_warm",
    }
}

fn launch(im: &Impl, n: u64) -> Launch {
    match im.key {
        "go" => gopeer::command(["spawn".to_string(), im.workers.to_string(), n.to_string()]),
        key => Ok(ChildCommand::new("spawn")
            .args([key.to_string(), im.workers.to_string(), n.to_string()])
            .timeout(Duration::from_secs(180))),
    }
}

fn batch(im: &Impl, n: u64) -> u64 {
    if im.key == "thread" { THREADS } else { n }
}

fn run(opts: &Opts) -> Vec<Measurement> {
    let n: u64 = opts.size(1_000_000, 100_000);
    let runs = opts.runs(5, 5);
    let launches: Vec<Launch> = IMPLS.iter().map(|im| launch(im, batch(im, n))).collect();
    let series = fresh::run(&launches, runs, 1);
    let mut ms = Vec::new();
    for (im, s) in IMPLS.iter().zip(&series) {
        let rows = |s: &fresh::Series, n: u64, extra: &str| {
            let row = |warm| Row {
                case: "spawn",
                imp: im.imp.to_string(),
                metric: metric(im.workers, warm),
                unit: "ns",
                n,
            };
            [
                row(false)
                    .of(s, "ns_per_task")
                    .with_note(format!("{}; 1st batch, fresh process{extra}", im.note)),
                row(true)
                    .of(s, "warm_ns_per_task")
                    .with_note(format!("{}; 2nd batch, same process{extra}", im.note)),
            ]
        };
        ms.extend(rows(s, batch(im, n), ""));
        if im.key == "may" && matches!(s, Err(Outcome::Failed(_))) && n > MAY_FALLBACK {
            let small = fresh::run(&[launch(im, MAY_FALLBACK)], runs, 1);
            let extra = format!(
                "; a smaller batch: {} fail (row above)",
                crate::report::group_thousands(n as i128)
            );
            ms.extend(rows(&small[0], MAY_FALLBACK, &extra));
        }
    }
    // Worker count by worker count, so that the implementations sit side by side.
    ms.sort_by_key(|m| m.metric);
    ms
}

/// `__child spawn <impl> <workers> <n>`: two batches; reports `@ns_per_task` (the first)
/// and `@warm_ns_per_task` (the second).
fn child_main(args: &[String]) -> Result<(), String> {
    let imp: String = child::arg(args, 0, "implementation")?;
    let workers: usize = child::arg(args, 1, "workers")?;
    let n: usize = child::arg(args, 2, "batch size")?;
    let elapsed = match imp.as_str() {
        "corio-stackful" => corio_stackful(workers, n),
        "corio-stackless" => corio_stackless(workers, n),
        "tokio" => tokio_batch(workers, n),
        "may" => may_batch(workers, n),
        "thread" => Ok(thread_batch(n)),
        _ => return Err(format!("unknown implementation `{imp}`")),
    }?;
    let per = |d: Duration| d.as_nanos() as f64 / n as f64;
    child::emit("ns_per_task", per(elapsed[0]));
    child::emit("warm_ns_per_task", per(elapsed[1]));
    // Exit without tearing the runtime down: that is not part of the measurement.
    std::process::exit(0);
}

type Timed = Result<[Duration; 2], String>;

fn check(sum: u64, n: usize) {
    assert_eq!(sum, n as u64, "a task did not run");
}

fn corio_runtime(workers: usize) -> Result<corio::Runtime, String> {
    corio::Runtime::builder()
        .workers(workers)
        .hog_report(false)
        .build()
        .map_err(|e| e.to_string())
}

fn corio_stackful(workers: usize, n: usize) -> Timed {
    let rt = corio_runtime(workers)?;
    let times = twice(|| {
        rt.run(move || {
            let mut handles = Vec::with_capacity(n);
            let t = Instant::now();
            for _ in 0..n {
                handles.push(corio::go(|| black_box(1u64)));
            }
            let sum: u64 = handles.into_iter().map(|h| h.join().expect("task")).sum();
            let elapsed = t.elapsed();
            check(sum, n);
            elapsed
        })
    });
    std::mem::forget(rt);
    Ok(times)
}

fn corio_stackless(workers: usize, n: usize) -> Timed {
    let rt = corio_runtime(workers)?;
    let times = twice(|| {
        let spawner = rt.spawn(async move {
            let mut handles = Vec::with_capacity(n);
            let t = Instant::now();
            for _ in 0..n {
                handles.push(corio::spawn(async { black_box(1u64) }));
            }
            let mut sum = 0;
            for h in handles {
                sum += h.await.expect("task");
            }
            let elapsed = t.elapsed();
            check(sum, n);
            elapsed
        });
        rt.block_on(spawner).expect("spawner")
    });
    std::mem::forget(rt);
    Ok(times)
}

fn tokio_batch(workers: usize, n: usize) -> Timed {
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
    let times = twice(|| {
        let spawner = rt.spawn(async move {
            let mut handles = Vec::with_capacity(n);
            let t = Instant::now();
            for _ in 0..n {
                handles.push(tokio::spawn(async { black_box(1u64) }));
            }
            let mut sum = 0;
            for h in handles {
                sum += h.await.expect("task");
            }
            let elapsed = t.elapsed();
            check(sum, n);
            elapsed
        });
        rt.block_on(spawner).expect("spawner")
    });
    std::mem::forget(rt);
    Ok(times)
}

fn may_batch(workers: usize, n: usize) -> Timed {
    may::config().set_workers(workers).set_worker_pin(false);
    let times = twice(|| {
        let spawner = fresh::may_go(move || {
            let mut handles = Vec::with_capacity(n);
            let t = Instant::now();
            for i in 0..n {
                handles.push(fresh::may_go(|| black_box(1u64)));
                child::progress_every(i, 1000);
            }
            let sum: u64 = handles.into_iter().map(|h| h.join().expect("task")).sum();
            let elapsed = t.elapsed();
            check(sum, n);
            elapsed
        });
        spawner.join().expect("may: the spawner panicked")
    });
    Ok(times)
}

fn thread_batch(n: usize) -> [Duration; 2] {
    twice(|| {
        let mut handles = Vec::with_capacity(n);
        let t = Instant::now();
        for _ in 0..n {
            handles.push(std::thread::spawn(|| black_box(1u64)));
        }
        let sum: u64 = handles.into_iter().map(|h| h.join().expect("thread")).sum();
        let elapsed = t.elapsed();
        check(sum, n);
        elapsed
    })
}

/// Two batches in this process: the first on fresh memory, the second on what it left.
fn twice(mut batch: impl FnMut() -> Duration) -> [Duration; 2] {
    [batch(), batch()]
}
