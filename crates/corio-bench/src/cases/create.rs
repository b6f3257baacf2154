//! `create`: create a coroutine, run it to completion, drop it.
//!
//! Every coroutine is `|_, x| x + 1`, resumed once (it returns at once) and dropped, so the
//! figure is the whole life cycle of a short task minus any scheduler.
//!
//! # Warm (`warm_ns_per_coroutine`)
//!
//! In this process, one coroutine after another, so the stack comes from a warm cache:
//! - corio: `Coroutine::new` takes a slot from the thread's LIFO cache and gives it back.
//! - corosensei: `Coroutine::new` with `DefaultStack` maps a fresh 1 MiB stack and its guard
//!   page, and unmaps them on drop: three system calls per coroutine.
//! - corosensei with one stack reused (`with_stack` + `into_stack`): no system calls. An
//!   honest extra row: it is what a pool in front of corosensei would cost at best.
//!
//! # Cold (`cold_ns_per_coroutine`)
//!
//! In a fresh child process, `n` coroutines are created and all kept alive, then each is run to
//! completion, then all are dropped. Each needs a never-used stack: for corio a slot carved
//! from the arena (guard installed) whose top page faults in on first touch; for corosensei an
//! `mmap` + `mprotect` each. corosensei needs two mappings per stack, so it stops at about
//! 32,700 live coroutines under the default `vm.max_map_count`; that is reported as a failure
//! with the point reached. The note gives the split between the create, resume and drop
//! phases of the last run.
//!
//! # Instructions (`warm_instructions_per_coroutine`)
//!
//! With `--callgrind` (and in `table` when valgrind is installed) the warm loops run under
//! callgrind at two sizes (see `callgrind.rs`): user-space instructions per coroutine, without
//! the noise. System calls are not counted, so corosensei's `mmap` looks cheap there.

use std::hint::black_box;
use std::time::{Duration, Instant};

use corio::coroutine::{Coroutine, CoroutineResult};

use super::Case;
use crate::callgrind;
use crate::child::{self, ChildCommand};
use crate::opts::Opts;
use crate::report::Measurement;

/// The `create` case.
pub const CASE: Case = Case {
    name: "create",
    about: "create + run to completion + drop, ns per coroutine (warm cache; cold arena)",
    reference: Some("corosensei"),
    run,
    child: Some(child_main),
};

const REUSED: &str = "corosensei (one reused stack)";

/// `n` coroutines created, resumed once and dropped; returns the sum of their results.
#[inline(never)]
fn corio_warm(n: u64) -> u64 {
    let mut sum = 0;
    for i in 0..n {
        let mut co: Coroutine<u64, (), u64> = Coroutine::new(|_, x| x + 1);
        match black_box(&mut co).resume(black_box(i)) {
            CoroutineResult::Return(v) => sum += v,
            CoroutineResult::Yield(()) => unreachable!(),
        }
    }
    sum
}

/// As [`corio_warm`], each with a fresh `DefaultStack`.
#[inline(never)]
fn corosensei_warm(n: u64) -> u64 {
    let mut sum = 0;
    for i in 0..n {
        let mut co: corosensei::Coroutine<u64, (), u64> =
            corosensei::Coroutine::new(|_: &corosensei::Yielder<u64, ()>, x: u64| x + 1);
        match black_box(&mut co).resume(black_box(i)) {
            corosensei::CoroutineResult::Return(v) => sum += v,
            corosensei::CoroutineResult::Yield(()) => unreachable!(),
        }
    }
    sum
}

/// As [`corio_warm`], every coroutine on the same corosensei stack.
#[inline(never)]
fn corosensei_reused_warm(n: u64) -> u64 {
    let mut sum = 0;
    let mut stack = Some(corosensei::stack::DefaultStack::default());
    for i in 0..n {
        let mut co: corosensei::Coroutine<u64, (), u64> = corosensei::Coroutine::with_stack(
            stack.take().expect("the stack comes back every time"),
            |_: &corosensei::Yielder<u64, ()>, x: u64| x + 1,
        );
        match black_box(&mut co).resume(black_box(i)) {
            corosensei::CoroutineResult::Return(v) => sum += v,
            corosensei::CoroutineResult::Yield(()) => unreachable!(),
        }
        stack = Some(co.into_stack());
    }
    sum
}

/// Nanoseconds per coroutine of `f(n)`, checking its result.
fn time_warm(f: fn(u64) -> u64, n: u64) -> f64 {
    let t = Instant::now();
    let sum = f(n);
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    assert_eq!(sum, n * (n + 1) / 2, "a coroutine did not run");
    ns
}

/// One warm variant: its loop and size.
struct Warm {
    imp: &'static str,
    f: fn(u64) -> u64,
    n: u64,
    note: &'static str,
}

fn run(opts: &Opts) -> Vec<Measurement> {
    let runs = opts.runs(5, 5);
    let warm = [
        Warm {
            imp: "corio",
            f: corio_warm,
            n: opts.size(2_000_000, 500_000),
            note: "thread-cache slot",
        },
        Warm {
            imp: "corosensei",
            f: corosensei_warm,
            n: opts.size(20_000, 5_000),
            note: "DefaultStack: mmap+mprotect+munmap each",
        },
        Warm {
            imp: REUSED,
            f: corosensei_reused_warm,
            n: opts.size(2_000_000, 500_000),
            note: "with_stack + into_stack",
        },
    ];
    for w in &warm {
        time_warm(w.f, w.n / 10);
    }
    let mut samples = vec![Vec::new(); warm.len()];
    for run in 0..runs {
        for i in super::run_order(run, warm.len()) {
            samples[i].push(time_warm(warm[i].f, warm[i].n));
        }
    }
    let mut ms: Vec<Measurement> = warm
        .iter()
        .zip(&samples)
        .map(|(w, v)| {
            Measurement::new("create", w.imp, "warm_ns_per_coroutine", "ns", w.n, v)
                .with_note(w.note)
        })
        .collect();

    let sizes: &[u64] = if opts.quick {
        &[10_000]
    } else {
        &[10_000, 100_000]
    };
    for &n in sizes {
        for imp in ["corio", "corosensei"] {
            ms.push(cold(imp, n, runs));
        }
    }
    if opts.callgrind || opts.table {
        ms.extend(instructions());
    }
    ms
}

/// The warm loop of an implementation, by name.
fn warm_fn(imp: &str) -> Option<fn(u64) -> u64> {
    match imp {
        "corio" => Some(corio_warm),
        "corosensei" => Some(corosensei_warm),
        REUSED => Some(corosensei_reused_warm),
        _ => None,
    }
}

/// The `warm_instructions_per_coroutine` rows (warm loop under callgrind), or why they are missing.
fn instructions() -> Vec<Measurement> {
    let metric = "warm_instructions_per_coroutine";
    // corosensei's mmap per coroutine is slow under valgrind: fewer of them.
    let sizes = |imp: &str| {
        if imp == "corosensei" {
            (1_000, 2_000)
        } else {
            (50_000, 100_000)
        }
    };
    ["corio", "corosensei", REUSED]
        .iter()
        .map(|imp| {
            let (n1, n2) = sizes(imp);
            if callgrind::valgrind().is_none() {
                return Measurement::skipped(
                    "create",
                    *imp,
                    metric,
                    "instr",
                    n2,
                    "valgrind not installed",
                );
            }
            let command = |n: u64| ChildCommand::new("create").args(["warm", imp, &n.to_string()]);
            match callgrind::instructions_per_op(command, n1, n2, 1.0) {
                Ok(v) => Measurement::new("create", *imp, metric, "instr", n2, &[v]).with_note(
                    "callgrind, user-space instructions only (syscalls are not counted)",
                ),
                Err(e) => Measurement::failed("create", *imp, metric, "instr", n2, e),
            }
        })
        .collect()
}

/// The cold measurement of `imp` with `n` live coroutines, `runs` fresh processes.
fn cold(imp: &str, n: u64, runs: usize) -> Measurement {
    let metric = "cold_ns_per_coroutine";
    let mut values = Vec::new();
    let mut phases = String::new();
    for _ in 0..runs {
        let out = ChildCommand::new("create")
            .args(["cold".to_string(), imp.to_string(), n.to_string()])
            .timeout(Duration::from_secs(120))
            .run();
        match out.map_err(|e| e.to_string()).and_then(|o| {
            let phase = |k| o.get_f64(k).map_or("?".to_string(), crate::report::fmt_num);
            let p = format!(
                "create {} + resume {} + drop {} ns (last run)",
                phase("create_ns"),
                phase("resume_ns"),
                phase("drop_ns")
            );
            Ok((o.require_f64("ns_per_coroutine")?, p))
        }) {
            Ok((v, p)) => {
                values.push(v);
                phases = p;
            }
            // A failure is a property of the implementation: once is enough.
            Err(e) => return Measurement::failed("create", imp, metric, "ns", n, e),
        }
    }
    Measurement::new("create", imp, metric, "ns", n, &values)
        .with_note(format!("fresh process, all alive; {phases}"))
}

/// `__child create cold <impl> <n>`: the cold measurement, in this fresh process;
/// `__child create warm <impl> <n>`: `n` warm creations (for callgrind).
fn child_main(args: &[String]) -> Result<(), String> {
    let mode: String = child::arg(args, 0, "mode (cold or warm)")?;
    let imp: String = child::arg(args, 1, "implementation")?;
    let n: usize = child::arg(args, 2, "coroutine count")?;
    if mode == "warm" {
        let f = warm_fn(&imp).ok_or_else(|| format!("unknown implementation `{imp}`"))?;
        time_warm(f, n as u64);
        return Ok(());
    } else if mode != "cold" {
        return Err(format!("unknown mode `{mode}`"));
    }
    let phases = match imp.as_str() {
        "corio" => cold_phases(
            n,
            || Coroutine::<u64, (), u64>::new(|_, x| x + 1),
            |co, i| co.resume(i).as_return().expect("returns at once"),
        ),
        "corosensei" => cold_phases(
            n,
            || {
                corosensei::Coroutine::<u64, (), u64>::new(
                    |_: &corosensei::Yielder<u64, ()>, x: u64| x + 1,
                )
            },
            |co, i| co.resume(i).as_return().expect("returns at once"),
        ),
        _ => return Err(format!("unknown implementation `{imp}`")),
    };
    let per = |d: Duration| d.as_nanos() as f64 / n as f64;
    child::emit("ns_per_coroutine", per(phases.iter().sum()));
    child::emit("create_ns", per(phases[0]));
    child::emit("resume_ns", per(phases[1]));
    child::emit("drop_ns", per(phases[2]));
    Ok(())
}

/// Creates `n` coroutines, then resumes each, then drops them all: the time of each phase.
fn cold_phases<C>(
    n: usize,
    create: impl Fn() -> C,
    resume: impl Fn(&mut C, u64) -> u64,
) -> [Duration; 3] {
    let mut all: Vec<C> = Vec::with_capacity(n);
    let t0 = Instant::now();
    for i in 0..n {
        all.push(create());
        child::progress_every(i, 1000);
    }
    let t1 = Instant::now();
    let mut sum = 0;
    for (i, co) in all.iter_mut().enumerate() {
        sum += resume(black_box(co), black_box(i as u64));
    }
    let t2 = Instant::now();
    drop(all);
    let t3 = Instant::now();
    check_sum(sum, n);
    [t1 - t0, t2 - t1, t3 - t2]
}

fn check_sum(sum: u64, n: usize) {
    let n = n as u64;
    assert_eq!(sum, n * (n + 1) / 2, "a coroutine did not run");
}
