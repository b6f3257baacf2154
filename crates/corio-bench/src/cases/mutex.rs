//! `mutex`: lock + unlock of an async-aware mutex, uncontended and contended.
//!
//! `lockers` coroutines (tasks, goroutines) each lock and unlock one mutex `n / lockers` times
//! around a counter increment; whoever started them waits for all. The figure is the elapsed
//! time over `n`, nanoseconds per lock + unlock. Two shapes:
//!
//! - **uncontended**: 1 locker on 1 worker — the fast paths (one compare-and-swap each way
//!   for corio and Go; tokio's goes through its semaphore).
//! - **contended**: 4 lockers on 2 workers — waiters queue, suspend and are woken; corio's and
//!   Go's normal mode let a running locker barge, tokio's semaphore is strictly FIFO.
//!
//! | implementation | what runs |
//! |---|---|
//! | corio stackful | `corio::sync::Mutex::lock()` in `corio::go` coroutines, `workers(1)` / `workers(2)` |
//! | corio async | `lock_async().await` in `corio::spawn`ed tasks, same runtimes |
//! | tokio | `tokio::sync::Mutex::lock().await` in tasks: `current_thread` / `multi_thread` with 2 workers |
//! | go | `sync.Mutex` in goroutines, `GOMAXPROCS=1` / `2` |
//!
//! Each run is a fresh process that first runs the same shape with `n / 5` (discarded).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Case;
use super::fresh::{self, Launch, Row};
use crate::child::{self, ChildCommand};
use crate::gopeer;
use crate::opts::Opts;
use crate::report::Measurement;

/// The `mutex` case.
pub const CASE: Case = Case {
    name: "mutex",
    about: "lock+unlock: 1 locker on 1 worker, and 4 lockers on 2 workers: ns per lock",
    reference: Some("go"),
    run,
    child: Some(child_main),
};

/// (implementation row name, child key).
const IMPLS: [(&str, &str); 4] = [
    ("corio stackful", "corio-stackful"),
    ("corio async", "corio-async"),
    ("tokio", "tokio"),
    ("go", "go"),
];

/// (shape name, workers, lockers).
const SHAPES: [(&str, usize, usize); 2] = [("uncontended", 1, 1), ("contended", 2, 4)];

fn run(opts: &Opts) -> Vec<Measurement> {
    let n: u64 = opts.size(2_000_000, 400_000);
    let warm = n / 5;
    let runs = opts.runs(5, 3);
    let mut ms = Vec::new();
    for (shape, workers, lockers) in SHAPES {
        let args = |key: &str| -> Vec<String> {
            vec![
                key.to_string(),
                workers.to_string(),
                lockers.to_string(),
                n.to_string(),
                warm.to_string(),
            ]
        };
        let launches: Vec<Launch> = IMPLS
            .iter()
            .map(|(_, key)| match *key {
                "go" => gopeer::command(
                    ["mutex".to_string()]
                        .into_iter()
                        .chain(args("go").into_iter().skip(1)),
                ),
                key => Ok(ChildCommand::new("mutex").args(args(key))),
            })
            .collect();
        let series = fresh::run(&launches, runs, 0);
        ms.extend(IMPLS.iter().zip(&series).map(|((imp, _), s)| {
            Row {
                case: "mutex",
                imp: format!("{imp}, {shape}"),
                metric: "ns_per_lock",
                unit: "ns",
                n,
            }
            .of(s, "ns_per_lock")
            .with_note(format!(
                "{lockers} locker(s) on {workers} worker(s); fresh process, warm-up {warm} discarded"
            ))
        }));
    }
    ms
}

/// `__child mutex <impl> <workers> <lockers> <n> <warm-up n>`; reports `@ns_per_lock`.
fn child_main(args: &[String]) -> Result<(), String> {
    let imp: String = child::arg(args, 0, "implementation")?;
    let workers: usize = child::arg(args, 1, "workers")?;
    let lockers: u64 = child::arg(args, 2, "lockers")?;
    let n: u64 = child::arg(args, 3, "lock+unlock in all")?;
    let warm: u64 = child::arg(args, 4, "warm-up n")?;
    let per = n / lockers.max(1);
    let timed: Box<dyn Fn(u64) -> Duration> = match imp.as_str() {
        "corio-stackful" | "corio-async" => {
            let rt = corio::Runtime::builder()
                .workers(workers)
                .hog_report(false)
                .build()
                .map_err(|e| e.to_string())?;
            let stackful = imp == "corio-stackful";
            Box::new(move |per| corio_run(&rt, stackful, lockers, per))
        }
        "tokio" => {
            let rt = if workers == 1 {
                tokio::runtime::Builder::new_current_thread().build()
            } else {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(workers)
                    .build()
            }
            .map_err(|e| e.to_string())?;
            Box::new(move |per| tokio_run(&rt, lockers, per))
        }
        _ => return Err(format!("unknown implementation `{imp}`")),
    };
    if warm > 0 {
        timed(warm / lockers.max(1));
    }
    let elapsed = timed(per);
    child::emit(
        "ns_per_lock",
        elapsed.as_nanos() as f64 / (per * lockers) as f64,
    );
    Ok(())
}

fn corio_run(rt: &corio::Runtime, stackful: bool, lockers: u64, per: u64) -> Duration {
    let m = Arc::new(corio::sync::Mutex::new(0u64));
    let m2 = m.clone();
    let elapsed = rt.run(move || {
        let t = Instant::now();
        let handles: Vec<_> = (0..lockers)
            .map(|_| {
                let m = m2.clone();
                if stackful {
                    corio::go(move || {
                        for _ in 0..black_box(per) {
                            *m.lock() += 1;
                        }
                    })
                } else {
                    corio::spawn(async move {
                        for _ in 0..black_box(per) {
                            *m.lock_async().await += 1;
                        }
                    })
                }
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().expect("locker"));
        t.elapsed()
    });
    assert_eq!(
        *m.try_lock().expect("free"),
        per * lockers,
        "lost increments"
    );
    elapsed
}

fn tokio_run(rt: &tokio::runtime::Runtime, lockers: u64, per: u64) -> Duration {
    let m = Arc::new(tokio::sync::Mutex::new(0u64));
    let m2 = m.clone();
    let elapsed = rt.block_on(async move {
        let t = Instant::now();
        let handles: Vec<_> = (0..lockers)
            .map(|_| {
                let m = m2.clone();
                tokio::spawn(async move {
                    for _ in 0..black_box(per) {
                        *m.lock().await += 1;
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.expect("locker");
        }
        t.elapsed()
    });
    assert_eq!(
        *m.try_lock().expect("free"),
        per * lockers,
        "lost increments"
    );
    elapsed
}
