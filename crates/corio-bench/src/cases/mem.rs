//! `mem`: the memory of a parked stackful coroutine, and how many fit.
//!
//! For each implementation and `N`, a fresh child process creates `N` coroutines and leaves
//! each suspended inside its closure (holding the top page of its stack), then reports:
//!
//! - `bytes_per_coroutine`: (RSS after − RSS before) / N. Handles are kept in a `Vec`
//!   reserved before the first reading, so the handle's own bytes count too, as they would
//!   in a program.
//! - `page_table_bytes_per_coroutine`: the growth of `VmPTE` / N. RSS does not include page
//!   tables; a page per stack, a million stacks apart, also costs page tables.
//! - `extra_vmas`: mappings after − before. `vm.max_map_count` (65530 by default) caps them.
//! - `create_ns_per_coroutine`: the time to create and park all N, per coroutine.
//!
//! Implementations:
//! - corio: `Coroutine::new` (default stack size, guard pages on), resumed once.
//! - corosensei: `Coroutine::new` with `DefaultStack` (a 1 MiB `mmap` + guard page each),
//!   resumed once.
//! - may: `may::coroutine::spawn` of a coroutine that parks (`may::coroutine::park`) on one
//!   worker, default stack size. may's scheduler pre-allocates a pool of stacks when it starts;
//!   it is started (one coroutine spawned and joined) before the first reading.
//!
//! The peers need two mappings per stack and fail near 32,700 coroutines; the child prints
//! `@progress K` every 1000, so the parent can say where it failed and why. A failing or hung
//! child is killed after a timeout and cannot stop the benchmark.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use corio::coroutine::Coroutine;

use super::Case;
use crate::child::{self, ChildCommand, ChildOutput};
use crate::opts::Opts;
use crate::proc::MemSnapshot;
use crate::report::Measurement;

/// The `mem` case.
pub const CASE: Case = Case {
    name: "mem",
    about: "memory per parked stackful coroutine at 10k/100k/1M, extra mappings, where peers fail",
    reference: Some("corosensei"),
    run,
    child: Some(child_main),
};

const IMPLS: [&str; 3] = ["corio", "corosensei", "may"];

/// The metrics of one (implementation, N), in table order, with their units.
const METRICS: [(&str, &str); 4] = [
    ("bytes_per_coroutine", "B"),
    ("page_table_bytes_per_coroutine", "B"),
    ("extra_vmas", "count"),
    ("create_ns_per_coroutine", "ns"),
];

fn run(opts: &Opts) -> Vec<Measurement> {
    let sizes: &[u64] = if opts.quick {
        &[10_000, 100_000]
    } else {
        &[10_000, 100_000, 1_000_000]
    };
    let runs = opts.runs(5, 3);
    let mut ms = Vec::new();
    for &n in sizes {
        for imp in IMPLS {
            ms.extend(measure(imp, n, runs));
        }
    }
    // Metric by metric, so that the implementations sit side by side.
    ms.sort_by_key(|m| METRICS.iter().position(|(name, _)| *name == m.metric));
    ms
}

/// `runs` fresh children for `imp` at `n`; the failure of one ends the series.
fn measure(imp: &str, n: u64, runs: usize) -> Vec<Measurement> {
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); METRICS.len()];
    let mut last: Option<ChildOutput> = None;
    for _ in 0..runs {
        let out = ChildCommand::new("mem")
            .args([imp.to_string(), n.to_string()])
            .timeout(Duration::from_secs(300))
            .run();
        let out = match out {
            Ok(out) => out,
            Err(e) => return vec![failed(imp, n, format!("could not start the child: {e}"))],
        };
        let row: Result<Vec<f64>, String> = METRICS
            .iter()
            .map(|(name, _)| out.require_f64(name))
            .collect();
        match row {
            Ok(row) => row
                .into_iter()
                .zip(&mut values)
                .for_each(|(v, vs)| vs.push(v)),
            Err(e) => return vec![failed(imp, n, e)],
        }
        last = Some(out);
    }
    let Some(last) = last else { return Vec::new() };
    METRICS
        .iter()
        .zip(&values)
        .map(|((metric, unit), v)| {
            let m = Measurement::new("mem", imp, metric, unit, n, v);
            let note = match *metric {
                "bytes_per_coroutine" => last.get("config").map(str::to_string),
                "extra_vmas" => match (last.get("vmas_before"), last.get("vmas_after")) {
                    (Some(a), Some(b)) => Some(format!("{a} → {b} (last run)")),
                    _ => None,
                },
                _ => None,
            };
            match note {
                Some(note) => m.with_note(note),
                None => m,
            }
        })
        .collect()
}

fn failed(imp: &str, n: u64, why: String) -> Measurement {
    Measurement::failed("mem", imp, "bytes_per_coroutine", "B", n, why)
}

/// `__child mem <impl> <n>`: create and park `n` coroutines, report the differences.
fn child_main(args: &[String]) -> Result<(), String> {
    let imp: String = child::arg(args, 0, "implementation")?;
    let n: usize = child::arg(args, 1, "coroutine count")?;
    let (before, after, elapsed) = match imp.as_str() {
        "corio" => park_corio(n),
        "corosensei" => park_corosensei(n),
        "may" => park_may(n),
        _ => return Err(format!("unknown implementation `{imp}`")),
    }
    .map_err(|e| e.to_string())?;
    let per = |a: u64, b: u64| (b as f64 - a as f64) / n as f64;
    child::emit("bytes_per_coroutine", per(before.rss, after.rss));
    child::emit("page_table_bytes_per_coroutine", per(before.pte, after.pte));
    child::emit("extra_vmas", after.vmas as f64 - before.vmas as f64);
    child::emit("vmas_before", before.vmas);
    child::emit("vmas_after", after.vmas);
    child::emit(
        "create_ns_per_coroutine",
        elapsed.as_nanos() as f64 / n as f64,
    );
    // Exit without dropping: unwinding a million suspended stacks would only add time.
    std::process::exit(0);
}

type Parked = std::io::Result<(MemSnapshot, MemSnapshot, Duration)>;

fn park_corio(n: usize) -> Parked {
    let guard = corio::stack::guard_kind();
    child::emit(
        "config",
        format!(
            "stack {} KiB, guard: {guard:?}",
            corio::stack::DEFAULT_STACK_SIZE >> 10
        ),
    );
    let mut all: Vec<Coroutine<(), (), ()>> = Vec::with_capacity(n);
    let before = MemSnapshot::now()?;
    let t = Instant::now();
    for i in 0..n {
        let mut co = Coroutine::new(|y, ()| {
            y.suspend(());
        });
        assert!(co.resume(()).is_yield());
        all.push(co);
        child::progress_every(i, 1000);
    }
    let elapsed = t.elapsed();
    let after = MemSnapshot::now()?;
    black_box(&all);
    std::mem::forget(all);
    Ok((before, after, elapsed))
}

fn park_corosensei(n: usize) -> Parked {
    child::emit("config", "DefaultStack 1 MiB: mmap + guard page each");
    let mut all: Vec<corosensei::Coroutine<(), (), ()>> = Vec::with_capacity(n);
    let before = MemSnapshot::now()?;
    let t = Instant::now();
    for i in 0..n {
        let mut co = corosensei::Coroutine::new(|y: &corosensei::Yielder<(), ()>, ()| {
            y.suspend(());
        });
        assert!(matches!(
            co.resume(()),
            corosensei::CoroutineResult::Yield(())
        ));
        all.push(co);
        child::progress_every(i, 1000);
    }
    let elapsed = t.elapsed();
    let after = MemSnapshot::now()?;
    black_box(&all);
    std::mem::forget(all);
    Ok((before, after, elapsed))
}

fn park_may(n: usize) -> Parked {
    // One worker (may's 1:N); stack size and pool left at their defaults (0x1000 words =
    // 32 KiB, 1000 pooled stacks); no core pinning, so the worker and this spawning thread
    // share the two vCPUs as the kernel sees fit.
    may::config().set_workers(1).set_worker_pin(false);
    let stack_kib = (may::config().get_stack_size() * size_of::<usize>()) >> 10;
    child::emit(
        "config",
        format!(
            "stack {stack_kib} KiB (default), 1 worker, pool {}",
            may::config().get_pool_capacity()
        ),
    );
    // Start the scheduler (worker threads, pooled stacks) before the first reading.
    // SAFETY: the coroutine touches no thread-local and uses a few bytes of stack.
    let warm = unsafe { may::coroutine::spawn(|| black_box(1)) };
    warm.join()
        .map_err(|_| std::io::Error::other("may: the warm-up coroutine panicked"))?;

    let parked = Arc::new(AtomicUsize::new(0));
    let mut all = Vec::with_capacity(n);
    let before = MemSnapshot::now()?;
    let t = Instant::now();
    for i in 0..n {
        let parked = parked.clone();
        // SAFETY: the coroutine touches no thread-local of ours (may's own park uses its
        // coroutine-local data) and uses a few hundred bytes of its stack.
        let handle = unsafe {
            may::coroutine::spawn(move || {
                parked.fetch_add(1, Ordering::Release);
                may::coroutine::park();
            })
        };
        all.push(handle);
        child::progress_every(i, 1000);
    }
    // Pairs with the Release increment in each coroutine: all N are running or parked.
    while parked.load(Ordering::Acquire) < n {
        std::thread::sleep(Duration::from_micros(200));
    }
    let elapsed = t.elapsed();
    // The last increments happen just before `park`; give the worker a moment to switch away.
    std::thread::sleep(Duration::from_millis(10));
    let after = MemSnapshot::now()?;
    black_box(&all);
    std::mem::forget(all);
    Ok((before, after, elapsed))
}
