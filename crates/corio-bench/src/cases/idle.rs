//! `idle`: how often an idle runtime wakes up.
//!
//! In a fresh process: build the runtime (2 workers), use it once (spawn a task and wait for
//! it, which also starts runtimes that start lazily), let it settle for 200 ms, then count the
//! context switches — voluntary + nonvoluntary, from `/proc/self/task/<tid>/status` — of
//! every thread of the process except the measuring thread itself, at the start and the end
//! of the window (2 s; `--quick`: 1 s, 3 runs instead of 5). A thread that sleeps until there
//! is work makes none; one that polls on a timer makes one per tick. The figure is switches
//! per second.
//!
//! | implementation | runtime | the measuring thread |
//! |---|---|---|
//! | corio | `workers(2)`, `hog_report(false)` | the main thread, outside the runtime, in `thread::sleep` |
//! | tokio | `multi_thread(2)`, `enable_all` | the main thread, in `thread::sleep` |
//! | go | `GOMAXPROCS=2` | the main goroutine, locked to its thread, parked in `time.Sleep` |
//! | may | `set_workers(2)`, no pinning | the main thread, in `thread::sleep` |
//!
//! The Go row's count includes the one wake-up that ends the window (the runtime's timer
//! readies the main goroutine); the Rust rows' does not (the main thread's own sleep is a
//! kernel timer). The note gives the split and the number of threads (last run).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::Case;
use super::fresh::{self, Launch, Row};
use crate::child::{self, ChildCommand};
use crate::gopeer;
use crate::opts::Opts;
use crate::proc::{CtxtSwitches, switches_between, threads_switches};
use crate::report::Measurement;

/// The `idle` case.
pub const CASE: Case = Case {
    name: "idle",
    about: "context switches per second of an idle runtime with 2 workers (all threads)",
    reference: Some("go"),
    run,
    child: Some(child_main),
};

const WORKERS: usize = 2;
const SETTLE_MS: u64 = 200;

/// (row name, child key, note).
const IMPLS: [(&str, &str, &str); 4] = [
    ("corio", "corio", "workers(2)"),
    ("tokio", "tokio", "multi_thread(2)"),
    ("go", "go", "GOMAXPROCS=2, parked main"),
    ("may", "may", "2 workers"),
];

fn run(opts: &Opts) -> Vec<Measurement> {
    let window_ms: u64 = opts.size(2_000, 1_000);
    let runs = opts.runs(5, 3);
    let launches: Vec<Launch> = IMPLS
        .iter()
        .map(|(_, key, _)| match *key {
            "go" => gopeer::command([
                "idle".to_string(),
                WORKERS.to_string(),
                SETTLE_MS.to_string(),
                window_ms.to_string(),
            ]),
            key => Ok(ChildCommand::new("idle").args([
                key.to_string(),
                SETTLE_MS.to_string(),
                window_ms.to_string(),
            ])),
        })
        .collect();
    let series = fresh::run(&launches, runs, 0);
    IMPLS
        .iter()
        .zip(&series)
        .map(|((imp, _, note), s)| {
            let m = Row {
                case: "idle",
                imp: imp.to_string(),
                metric: "switches_per_sec",
                unit: "1/s",
                n: window_ms,
            }
            .of(s, "switches_per_sec");
            let last = |k| fresh::last(s, k);
            match (last("voluntary"), last("nonvoluntary"), last("threads")) {
                (Some(v), Some(nv), Some(t)) => m.with_note(format!(
                    "{note}; last run: {v} voluntary + {nv} nonvoluntary over {window_ms} ms, \
                     {t} threads"
                )),
                _ => m.with_note(*note),
            }
        })
        .collect()
}

/// `__child idle <impl> <settle ms> <window ms>`: reports `@switches_per_sec`, `@voluntary`,
/// `@nonvoluntary` and `@threads`.
fn child_main(args: &[String]) -> Result<(), String> {
    let imp: String = child::arg(args, 0, "implementation")?;
    let settle = Duration::from_millis(child::arg(args, 1, "settle ms")?);
    let window = Duration::from_millis(child::arg(args, 2, "window ms")?);
    // Each arm builds a runtime, uses it once, and keeps it alive through the window.
    let keep: Box<dyn std::any::Any> = match imp.as_str() {
        "corio" => {
            let rt = corio::Runtime::builder()
                .workers(WORKERS)
                .hog_report(false)
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(rt.spawn(async { 1 }))
                .map_err(|e| e.to_string())?;
            Box::new(rt)
        }
        "tokio" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(WORKERS)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(rt.spawn(async { 1 }))
                .map_err(|e| e.to_string())?;
            Box::new(rt)
        }
        "may" => {
            may::config().set_workers(WORKERS).set_worker_pin(false);
            fresh::may_go(|| 1)
                .join()
                .map_err(|_| "may: the coroutine panicked".to_string())?;
            Box::new(())
        }
        _ => return Err(format!("unknown implementation `{imp}`")),
    };
    std::thread::sleep(settle);
    let before = other_threads()?;
    let t = Instant::now();
    std::thread::sleep(window);
    let after = other_threads()?;
    let elapsed = t.elapsed();
    let total = switches_between(&before, &after);
    child::emit(
        "switches_per_sec",
        (total.voluntary + total.nonvoluntary) as f64 / elapsed.as_secs_f64(),
    );
    child::emit("voluntary", total.voluntary);
    child::emit("nonvoluntary", total.nonvoluntary);
    child::emit("threads", after.len() + 1);
    std::mem::forget(keep);
    std::process::exit(0);
}

/// The context switches of every thread of this process but the calling one.
fn other_threads() -> Result<HashMap<u32, CtxtSwitches>, String> {
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() } as u32;
    let mut all = threads_switches("self")?;
    all.remove(&me);
    Ok(all)
}
