//! `gen`: stackful vs stackless, resume+yield cost and memory per live instance.
//!
//! The same body, `loop { x = suspend(x + 1) }` over `u64`, three ways:
//!
//! - `stackful`: `corio::coroutine::Coroutine` (own stack, register switch);
//! - `stackless`: `corio::generator::Generator` with its body's type known (`resume` polls
//!   the state machine directly, so it can be inlined);
//! - `stackless-dyn`: the same generator after `.boxed()` (one indirect call per resume).
//!
//! For each and for `live` ∈ {1, 1,000,000} (100,000 under `--quick`), a fresh child process
//! creates `live` instances, resumes each once (so each is suspended inside its body, as a
//! parked coroutine would be), then resumes them round-robin: one round trip is one `resume`
//! plus the `suspend` that returns from it. Metrics:
//!
//! - `ns_per_round_trip`: elapsed / round trips. With one live instance everything stays in
//!   L1 and the figure is the mechanism's own cost; with a million, every resume touches a
//!   cold instance (the stackful one its stack's top page and its handle, the stackless one
//!   its heap frame), so the figure is dominated by cache and TLB misses — what a server with
//!   many idle connections pays.
//! - `bytes_per_instance` (largest `live` only): (RSS after − RSS before) / `live`, the handles
//!   included (kept in a `Vec` reserved before the first reading).
//!
//! # Making the comparison fair
//!
//! - Same body, same types, the default stack size for the stackful one.
//! - Instances live in a `Vec` reached through `black_box`; the loop is `#[inline(never)]` and
//!   generic over `corio::generator::Resume`, so all three go through the same code.
//! - The input goes through `black_box` and the sum of the outputs is checked.
//! - Each run is a fresh process (so the stack arena and the allocator start cold), and each
//!   run rotates which implementation goes first (`run_order`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use corio::coroutine::Coroutine;
use corio::generator::{CoroutineResult, Generator, Resume};

use super::Case;
use crate::child::{self, ChildCommand};
use crate::opts::Opts;
use crate::proc::MemSnapshot;
use crate::report::Measurement;

/// The `gen` case.
pub const CASE: Case = Case {
    name: "gen",
    about: "stackful vs stackless: resume+yield round trip (1 and 1M live) and bytes per live instance",
    reference: Some("stackful"),
    run,
    child: Some(child_main),
};

/// The implementations measured, in table order.
const IMPLS: [&str; 3] = ["stackful", "stackless", "stackless-dyn"];

fn run(opts: &Opts) -> Vec<Measurement> {
    let sizes: [u64; 2] = [1, opts.size(1_000_000, 100_000)];
    let runs = opts.runs(5, 5);
    let mut ms = Vec::new();
    for (i, &live) in sizes.iter().enumerate() {
        // About 1 s per run for one instance; five passes over many.
        let trips = if live == 1 {
            opts.size(50_000_000, 5_000_000)
        } else {
            live * 5
        };
        let with_memory = i == sizes.len() - 1;
        // values[impl][metric]
        let mut values = vec![[Vec::new(), Vec::new()]; IMPLS.len()];
        let mut errors: Vec<Option<String>> = vec![None; IMPLS.len()];
        let mut notes: Vec<Option<String>> = vec![None; IMPLS.len()];
        for run in 0..runs {
            for k in super::run_order(run, IMPLS.len()) {
                let imp = IMPLS[k];
                if errors[k].is_some() {
                    continue;
                }
                let out = ChildCommand::new("gen")
                    .args([imp.to_string(), live.to_string(), trips.to_string()])
                    .timeout(Duration::from_secs(300))
                    .run();
                let out = match out {
                    Ok(out) => out,
                    Err(e) => {
                        errors[k] = Some(format!("could not start the child: {e}"));
                        continue;
                    }
                };
                match (
                    out.require_f64("ns_per_round_trip"),
                    out.require_f64("bytes_per_instance"),
                ) {
                    (Ok(ns), Ok(bytes)) => {
                        values[k][0].push(ns);
                        values[k][1].push(bytes);
                        notes[k] = out.get("config").map(str::to_string);
                    }
                    (Err(e), _) | (_, Err(e)) => errors[k] = Some(e),
                }
            }
        }
        for (k, imp) in IMPLS.iter().enumerate() {
            if let Some(e) = &errors[k] {
                ms.push(Measurement::failed(
                    "gen",
                    *imp,
                    "ns_per_round_trip",
                    "ns",
                    live,
                    e.clone(),
                ));
                continue;
            }
            let m = Measurement::new("gen", *imp, "ns_per_round_trip", "ns", live, &values[k][0]);
            ms.push(match &notes[k] {
                Some(note) => m.with_note(note.clone()),
                None => m,
            });
            if with_memory {
                ms.push(Measurement::new(
                    "gen",
                    *imp,
                    "bytes_per_instance",
                    "B",
                    live,
                    &values[k][1],
                ));
            }
        }
    }
    ms
}

/// `__child gen <impl> <live> <trips>`.
fn child_main(args: &[String]) -> Result<(), String> {
    let imp: String = child::arg(args, 0, "implementation")?;
    let live: usize = child::arg(args, 1, "live instances")?;
    let trips: u64 = child::arg(args, 2, "round trips")?;
    if live == 0 {
        return Err("at least one live instance".into());
    }
    match imp.as_str() {
        "stackful" => {
            child::emit(
                "config",
                format!(
                    "handle {} B + stack {} KiB (committed on touch)",
                    size_of::<Coroutine<u64, u64, ()>>(),
                    corio::stack::DEFAULT_STACK_SIZE >> 10
                ),
            );
            measure(live, trips, stackful)
        }
        "stackless" => {
            let frame = stackless().frame_size();
            child::emit(
                "config",
                format!(
                    "handle {} B + heap frame {frame} B",
                    size_of_val(&stackless())
                ),
            );
            measure(live, trips, stackless)
        }
        "stackless-dyn" => {
            let frame = stackless_dyn().frame_size();
            child::emit(
                "config",
                format!(
                    "handle {} B + heap frame {frame} B",
                    size_of::<Generator<u64, u64, ()>>()
                ),
            );
            measure(live, trips, stackless_dyn)
        }
        _ => return Err(format!("unknown implementation `{imp}`")),
    }
    .map_err(|e| e.to_string())?;
    // Exit without dropping a million instances: it would only add time.
    std::process::exit(0);
}

fn stackful() -> Coroutine<u64, u64, ()> {
    Coroutine::new(|y, mut x: u64| {
        loop {
            x = y.suspend(x + 1);
        }
    })
}

fn stackless() -> Generator<u64, u64, (), impl Future<Output = ()>> {
    Generator::new(|co, mut x: u64| async move {
        loop {
            x = co.suspend(x + 1).await;
        }
    })
}

fn stackless_dyn() -> Generator<u64, u64, ()> {
    stackless().boxed()
}

/// Creates `live` instances with `make`, parks each inside its body, measures RSS around
/// that, then times `trips` round trips over them round-robin; emits both.
fn measure<C>(live: usize, trips: u64, make: fn() -> C) -> std::io::Result<()>
where
    C: Resume<u64, Yield = u64, Return = ()>,
{
    let mut all: Vec<C> = Vec::with_capacity(live);
    let before = MemSnapshot::now()?;
    for i in 0..live {
        let mut c = make();
        assert_eq!(c.resume(0), CoroutineResult::Yield(1));
        all.push(c);
        child::progress_every(i, 100_000);
    }
    let after = MemSnapshot::now()?;
    child::emit(
        "bytes_per_instance",
        (after.rss as f64 - before.rss as f64) / live as f64,
    );
    // Warm up (one pass, at most a million round trips), then time.
    round_robin(black_box(&mut all), trips.min(live as u64).min(1_000_000));
    let t = Instant::now();
    let sum = round_robin(black_box(&mut all), trips);
    let elapsed = t.elapsed();
    // Each round trip returns its input + 1, and the inputs are 1.
    assert_eq!(sum, 2 * trips, "every round trip ran");
    child::emit(
        "ns_per_round_trip",
        elapsed.as_nanos() as f64 / trips as f64,
    );
    black_box(&all);
    std::mem::forget(all);
    Ok(())
}

/// `trips` round trips over `all`, round-robin; returns the sum of what was yielded.
#[inline(never)]
fn round_robin<C>(all: &mut [C], trips: u64) -> u64
where
    C: Resume<u64, Yield = u64, Return = ()>,
{
    let mut sum = 0;
    let mut i = 0;
    for _ in 0..trips {
        sum += match all[i].resume(black_box(1)) {
            CoroutineResult::Yield(v) => v,
            CoroutineResult::Return(()) => unreachable!("the body loops forever"),
        };
        i += 1;
        if i == all.len() {
            i = 0;
        }
    }
    sum
}
