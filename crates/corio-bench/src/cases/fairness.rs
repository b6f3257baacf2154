//! `fairness`: how late a 1 ms sleeper wakes up while CPU hogs occupy every worker.
//!
//! With 2 workers, a sleeper task sleeps 1 ms again and again and records, for each sleep,
//! how late it woke: `elapsed − 1 ms`. Once it has finished one sleep, `2 × workers = 4` hogs
//! are spawned that spin on an atomic stop flag (nothing else: no yield, no runtime call) for
//! the window (3 s; `--quick`: 1 s, 3 runs instead of 5); then the main thread — a plain
//! thread outside the runtime, in the Rust children — sets the flag. Every sleep that *ends*
//! after the window began is a sample (the sleeper checks the flag before each sleep, so at
//! most one ends after the window): a sleeper starved for the whole window still reports that
//! one late wake-up. Reported per run: p50, p99 and max lateness (µs, nearest rank) and the
//! sample count (a sleeper that always woke on time would have ~window / 1.06 ms of them); the
//! table shows the median over the runs of each.
//!
//! | implementation | sleeper | hogs |
//! |---|---|---|
//! | corio stackless | `corio::spawn`, `time::sleep_async(1 ms).await` | `corio::spawn`ed async blocks |
//! | corio stackful | `corio::go`, `corio::sleep(1 ms)`; started (it has slept once) before the hogs, so it is pinned to the worker it started on | `corio::go` coroutines, placed by the scheduler |
//! | corio stackful, preemptible hogs | the same | coroutines spawned with `TaskBuilder::preemptible` (signal preemption, `docs/scheduler.md`) |
//! | go | a goroutine, `time.Sleep`, `GOMAXPROCS=2` (Go preempts hogs asynchronously, by signal) | goroutines |
//! | tokio | `multi_thread(2)`, `tokio::time::sleep` | `tokio::spawn`ed async blocks |
//!
//! corio runtimes are built with `hog_report(false)` (the hogs are the point). The corio rows
//! note sysmon's counters from the last run (spare workers started, hand-offs): how corio got
//! the sleeper past the hogs. No warm-up round: this is a latency distribution, not a
//! throughput, and each run is already a fresh process.
//!
//! # The cost of one preemption
//!
//! Rows `preempt_gap_p50`/`preempt_gap_p90` (µs): one worker (`GOMAXPROCS=1`), two preemptible
//! hogs that spin reading the monotonic clock, each stamping its own word and noting in a
//! shared word which of them runs. When one finds the other noted there, it reads the clock
//! again: the gap since the other's last stamp is one preemption as the preempted code sees it —
//! the signal's delivery and handler, the trampoline's save and restore (Go: `asyncPreempt`),
//! the scheduler, and the switch to the other — but not sysmon's work on its own thread. The
//! same program in Go and in corio; each sample is one preemption (sysmon's, every ~10 ms), the
//! window is the fairness window.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Case;
use super::fresh::{self, Launch, Row};
use crate::child::{self, ChildCommand};
use crate::gopeer;
use crate::opts::Opts;
use crate::report::Measurement;

/// The `fairness` case.
pub const CASE: Case = Case {
    name: "fairness",
    about: "1 ms sleeper's wake-up lateness with 4 spinning hogs on 2 workers: p50/p99/max µs",
    reference: Some("go"),
    run,
    child: Some(child_main),
};

const WORKERS: usize = 2;
const HOGS: usize = 2 * WORKERS;
const PERIOD: Duration = Duration::from_millis(1);

/// (row name, child key, note).
const IMPLS: [(&str, &str, &str); 5] = [
    (
        "corio stackless",
        "corio-stackless",
        "workers(2), sleep_async in a spawned task, hogs spawned",
    ),
    (
        "corio stackful",
        "corio-stackful",
        "workers(2), sleep in a go coroutine started before the hogs, hogs go",
    ),
    (
        "corio stackful, preemptible hogs",
        "corio-stackful-preemptible",
        "workers(2), sleep in a go coroutine started before the hogs, hogs spawned preemptible",
    ),
    (
        "go",
        "go",
        "GOMAXPROCS=2, time.Sleep in a goroutine, hogs goroutines",
    ),
    (
        "tokio",
        "tokio",
        "multi_thread(2), tokio::time::sleep in a task, hogs spawned",
    ),
];

/// The metrics of one implementation: (metric, child key, unit).
const METRICS: [(&str, &str, &str); 4] = [
    ("lateness_p50", "p50_us", "µs"),
    ("lateness_p99", "p99_us", "µs"),
    ("lateness_max", "max_us", "µs"),
    ("samples", "samples", "count"),
];

fn run(opts: &Opts) -> Vec<Measurement> {
    let window_ms: u64 = opts.size(3_000, 1_000);
    let runs = opts.runs(5, 3);
    let launches: Vec<Launch> = IMPLS
        .iter()
        .map(|(_, key, _)| match *key {
            "go" => gopeer::command([
                "fairness".to_string(),
                WORKERS.to_string(),
                HOGS.to_string(),
                window_ms.to_string(),
            ]),
            key => Ok(ChildCommand::new("fairness")
                .args([key.to_string(), HOGS.to_string(), window_ms.to_string()])
                .timeout(Duration::from_millis(window_ms) + Duration::from_secs(60))),
        })
        .collect();
    let series = fresh::run(&launches, runs, 0);
    let mut ms = Vec::new();
    for (metric, key, unit) in METRICS {
        for ((imp, _, note), s) in IMPLS.iter().zip(&series) {
            let row = Row {
                case: "fairness",
                imp: imp.to_string(),
                metric,
                unit,
                n: window_ms,
            };
            let m = row.of(s, key);
            let m = match (metric, fresh::last(s, "sysmon")) {
                ("lateness_p99", Some(sysmon)) => {
                    m.with_note(format!("{note}; last run: {sysmon}"))
                }
                ("lateness_p99", None) => m.with_note(*note),
                _ => m,
            };
            ms.push(m);
        }
    }
    ms.extend(preempt_cost(window_ms, runs));
    ms
}

/// The cost-of-one-preemption rows (module docs).
fn preempt_cost(window_ms: u64, runs: usize) -> Vec<Measurement> {
    let impls = [
        (
            "corio stackful preemptible",
            "workers(1), 2 preemptible hogs reading Instant::now",
        ),
        ("go", "GOMAXPROCS=1, 2 goroutines reading time.Since"),
    ];
    let launches: Vec<Launch> = vec![
        Ok(ChildCommand::new("fairness")
            .args([
                "preempt-cost".to_string(),
                "2".to_string(),
                window_ms.to_string(),
            ])
            .timeout(Duration::from_millis(window_ms) + Duration::from_secs(60))),
        gopeer::command([
            "preemptcost".to_string(),
            "1".to_string(),
            window_ms.to_string(),
        ]),
    ];
    let series = fresh::run(&launches, runs, 0);
    let mut ms = Vec::new();
    for (metric, key) in [
        ("preempt_gap_p50", "p50_us"),
        ("preempt_gap_p90", "p90_us"),
        ("preemptions", "samples"),
    ] {
        for ((imp, note), s) in impls.iter().zip(&series) {
            let row = Row {
                case: "fairness",
                imp: imp.to_string(),
                metric,
                unit: if key == "samples" { "count" } else { "µs" },
                n: window_ms,
            };
            let m = row.of(s, key);
            ms.push(if key == "p50_us" {
                m.with_note(*note)
            } else {
                m
            });
        }
    }
    ms
}

/// The preempt-cost child (module docs): reports `@samples`, `@p50_us`, `@p90_us`. With
/// `storm`, the main thread preempts the running hog that often (a profiling aid:
/// `__child fairness preempt-cost 2 <window ms> <storm µs>`, many preemptions per second).
fn preempt_cost_window(window: Duration, storm: Option<Duration>) -> Result<(), String> {
    let mut builder = corio::Runtime::builder();
    builder.workers(1).hog_report(false);
    // SAFETY: the hogs hold no thread-local borrow, lock or guard while they spin.
    unsafe { builder.preemptible_coroutines() };
    let rt = builder.build().map_err(|e| e.to_string())?;
    let base = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let running = Arc::new(AtomicU64::new(0));
    let stamps: Arc<[AtomicU64; 3]> = Arc::new(std::array::from_fn(|_| AtomicU64::new(0)));
    let hogs: Vec<_> = (1..=2u64)
        .map(|me| {
            let (stop, running, stamps) = (stop.clone(), running.clone(), stamps.clone());
            rt.go(move || {
                let other = 3 - me as usize;
                let mut gaps = Vec::with_capacity(1 << 12);
                while !stop.load(Ordering::Relaxed) {
                    let mut now = base.elapsed().as_nanos() as u64;
                    if running.load(Ordering::Relaxed) != me {
                        now = base.elapsed().as_nanos() as u64;
                        let prev = stamps[other].load(Ordering::Relaxed);
                        if prev != 0 {
                            gaps.push(now.saturating_sub(prev));
                        }
                        running.store(me, Ordering::Relaxed);
                    }
                    stamps[me as usize].store(now, Ordering::Relaxed);
                }
                gaps
            })
        })
        .collect();
    match storm {
        // Profiling aid: preempt every `every` instead of waiting for sysmon's slices.
        Some(every) => {
            let end = Instant::now() + window;
            while Instant::now() < end {
                rt.preempt_running_coroutines();
                std::thread::sleep(every);
            }
        }
        None => std::thread::sleep(window),
    }
    stop.store(true, Ordering::Relaxed);
    let mut gaps = Vec::new();
    for h in hogs {
        gaps.extend(corio::block_on(h).map_err(|e| e.to_string())?);
    }
    gaps.sort_unstable();
    child::emit("samples", gaps.len());
    child::emit("preemptions", rt.metrics().preemptions);
    child::emit("signals", rt.metrics().preempt_signals);
    let us = |ns: u64| ns as f64 / 1e3;
    if let (Some(p50), Some(p90)) = (fresh::percentile(&gaps, 50), fresh::percentile(&gaps, 90)) {
        child::emit("p50_us", us(p50));
        child::emit("p90_us", us(p90));
    }
    std::mem::forget(rt);
    Ok(())
}

/// `__child fairness <impl> <hogs> <window ms>`: one window; reports `@samples`, `@p50_us`,
/// `@p99_us`, `@max_us`, and for corio `@sysmon`.
fn child_main(args: &[String]) -> Result<(), String> {
    let imp: String = child::arg(args, 0, "implementation")?;
    if imp == "preempt-cost" {
        let storm = match args.get(3) {
            Some(_) => Some(Duration::from_micros(child::arg(args, 3, "storm µs")?)),
            None => None,
        };
        preempt_cost_window(
            Duration::from_millis(child::arg(args, 2, "window ms")?),
            storm,
        )?;
        std::process::exit(0);
    }
    let hogs: usize = child::arg(args, 1, "hogs")?;
    let window = Duration::from_millis(child::arg(args, 2, "window ms")?);
    let flags = Flags::new();
    let samples = match imp.as_str() {
        "corio-stackless" => corio_window(false, false, hogs, window, &flags),
        "corio-stackful" => corio_window(true, false, hogs, window, &flags),
        "corio-stackful-preemptible" => corio_window(true, true, hogs, window, &flags),
        "tokio" => tokio_window(hogs, window, &flags),
        _ => return Err(format!("unknown implementation `{imp}`")),
    }?;
    emit_lateness(samples);
    std::process::exit(0);
}

/// What the main thread and the tasks share.
#[derive(Clone)]
struct Flags {
    /// Set when the window ends: hogs and sleeper stop.
    stop: Arc<AtomicBool>,
    /// Set when the window starts (after the hogs are spawned): sleeps are recorded.
    recording: Arc<AtomicBool>,
    /// Set when the sleeper has finished its first sleep.
    first: Arc<AtomicBool>,
}

impl Flags {
    fn new() -> Flags {
        Flags {
            stop: Arc::new(AtomicBool::new(false)),
            recording: Arc::new(AtomicBool::new(false)),
            first: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Waits on this plain thread until the sleeper has slept once.
    fn wait_first(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.first.load(Ordering::Acquire) {
            if Instant::now() > deadline {
                return Err("the sleeper did not finish its first sleep within 10 s".into());
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        Ok(())
    }

    /// The window: recording on, wait, stop.
    fn window(&self, window: Duration) {
        self.recording.store(true, Ordering::Release);
        std::thread::sleep(window);
        self.stop.store(true, Ordering::Release);
    }

    /// A hog's body: spin until stopped.
    fn spin(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    }
}

/// The lateness of each sleep (ns) that ended after the window began, in blocking style.
fn sleeper_stackful(flags: Flags) -> Vec<u64> {
    let mut samples = Vec::with_capacity(1 << 14);
    while !flags.stop.load(Ordering::Acquire) {
        let t0 = Instant::now();
        corio::sleep(PERIOD);
        let late = t0.elapsed().saturating_sub(PERIOD);
        if flags.recording.load(Ordering::Acquire) {
            samples.push(late.as_nanos() as u64);
        }
        flags.first.store(true, Ordering::Release);
    }
    samples
}

/// The lateness of each sleep (ns) that ended after the window began, as a future.
async fn sleeper_async<S: Future<Output = ()>>(
    flags: Flags,
    sleep: impl Fn(Duration) -> S,
) -> Vec<u64> {
    let mut samples = Vec::with_capacity(1 << 14);
    while !flags.stop.load(Ordering::Acquire) {
        let t0 = Instant::now();
        sleep(PERIOD).await;
        let late = t0.elapsed().saturating_sub(PERIOD);
        if flags.recording.load(Ordering::Acquire) {
            samples.push(late.as_nanos() as u64);
        }
        flags.first.store(true, Ordering::Release);
    }
    samples
}

fn corio_window(
    stackful: bool,
    preemptible: bool,
    hogs: usize,
    window: Duration,
    flags: &Flags,
) -> Result<Vec<u64>, String> {
    let rt = corio::Runtime::builder()
        .workers(WORKERS)
        .hog_report(false)
        .build()
        .map_err(|e| e.to_string())?;
    let f = flags.clone();
    let sleeper = if stackful {
        rt.go(move || sleeper_stackful(f))
    } else {
        rt.spawn(sleeper_async(f, corio::time::sleep_async))
    };
    flags.wait_first()?;
    let hog_handles: Vec<_> = (0..hogs)
        .map(|_| {
            let f = flags.clone();
            if preemptible {
                let _entered = rt.enter();
                // SAFETY: a hog holds no thread-local borrow, lock or guard while it spins.
                unsafe { corio::Builder::new().preemptible() }
                    .spawn(move || f.spin())
                    .expect("a stack for a hog")
            } else if stackful {
                rt.go(move || f.spin())
            } else {
                rt.spawn(async move { f.spin() })
            }
        })
        .collect();
    flags.window(window);
    for h in hog_handles {
        corio::block_on(h).map_err(|e| e.to_string())?;
    }
    let samples = corio::block_on(sleeper).map_err(|e| e.to_string())?;
    let m = rt.metrics();
    child::emit(
        "sysmon",
        format!(
            "{} spare workers started, {} hand-offs, {} steals, {} preemptions",
            m.spares_started, m.handoffs, m.steals, m.preemptions
        ),
    );
    std::mem::forget(rt);
    Ok(samples)
}

fn tokio_window(hogs: usize, window: Duration, flags: &Flags) -> Result<Vec<u64>, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let sleeper = rt.spawn(sleeper_async(flags.clone(), tokio::time::sleep));
    flags.wait_first()?;
    let hog_handles: Vec<_> = (0..hogs)
        .map(|_| {
            let f = flags.clone();
            rt.spawn(async move { f.spin() })
        })
        .collect();
    flags.window(window);
    let samples = rt.block_on(async move {
        for h in hog_handles {
            h.await.map_err(|e| e.to_string())?;
        }
        sleeper.await.map_err(|e| e.to_string())
    })?;
    std::mem::forget(rt);
    Ok(samples)
}

/// Reports the sample count and the p50/p99/max lateness in µs.
fn emit_lateness(mut samples: Vec<u64>) {
    samples.sort_unstable();
    child::emit("samples", samples.len());
    let us = |ns: u64| ns as f64 / 1e3;
    if let (Some(p50), Some(p99), Some(max)) = (
        fresh::percentile(&samples, 50),
        fresh::percentile(&samples, 99),
        samples.last(),
    ) {
        child::emit("p50_us", us(p50));
        child::emit("p99_us", us(p99));
        child::emit("max_us", us(*max));
    }
}
