//! `switch`: the raw context switch, corio vs corosensei.
//!
//! A coroutine `loop { x = y.suspend(x + 1) }` is resumed `n` times; each round trip is two
//! switches (in and out), so the figure is `elapsed / (2 n)`.
//!
//! # Making the comparison fair
//!
//! - Both coroutines have the same closure, types (`u64` in, `u64` out) and a default stack.
//! - Both handles live in a `Box`, reached through `black_box(&mut *boxed)` by an
//!   `#[inline(never)]` loop, so neither loop can keep the handle's fields in registers across
//!   iterations: what is timed is the switch plus the handle's bookkeeping, as a real caller
//!   would pay it.
//! - The input goes through `black_box`, and the final value is checked, so no round trip can
//!   be optimised away.
//! - Both warm up first, and each run alternates which goes first (A B, B A, ..).
//!
//! # Instructions per switch
//!
//! With `--callgrind` (and in `table` when valgrind is installed) the child half runs the same
//! loop under callgrind at two sizes; the difference divided by the difference in switches
//! is the instruction count of one switch, including the loop around it (see `callgrind.rs`).

use std::hint::black_box;
use std::time::Instant;

use corio::coroutine::{Coroutine, CoroutineResult};

use super::Case;
use crate::callgrind;
use crate::child::{self, ChildCommand};
use crate::opts::Opts;
use crate::report::Measurement;

/// The `switch` case.
pub const CASE: Case = Case {
    name: "switch",
    about: "resume+suspend round trips of a bare coroutine: ns (and instructions) per switch",
    reference: Some("corosensei"),
    run,
    child: Some(child_main),
};

/// The implementations measured, in table order.
const IMPLS: [&str; 2] = ["corio", "corosensei"];

/// Round-trip counts for the callgrind difference (small: valgrind runs ~50× slower).
const CALLGRIND_N1: u64 = 100_000;
const CALLGRIND_N2: u64 = 200_000;

type CorioCo = Coroutine<u64, u64, ()>;
type CorosenseiCo = corosensei::Coroutine<u64, u64, ()>;

fn corio_coroutine() -> Box<CorioCo> {
    Box::new(Coroutine::new(|y, mut x: u64| {
        loop {
            x = y.suspend(x + 1);
        }
    }))
}

fn corosensei_coroutine() -> Box<CorosenseiCo> {
    Box::new(corosensei::Coroutine::new(
        |y: &corosensei::Yielder<u64, u64>, mut x: u64| {
            loop {
                x = y.suspend(x + 1);
            }
        },
    ))
}

/// `n` round trips; returns the last value (which is the start value plus `n`).
#[inline(never)]
fn corio_round_trips(co: &mut CorioCo, mut x: u64, n: u64) -> u64 {
    for _ in 0..n {
        x = match co.resume(black_box(x)) {
            CoroutineResult::Yield(v) => v,
            CoroutineResult::Return(()) => unreachable!(),
        };
    }
    x
}

/// `n` round trips; returns the last value (which is the start value plus `n`).
#[inline(never)]
fn corosensei_round_trips(co: &mut CorosenseiCo, mut x: u64, n: u64) -> u64 {
    for _ in 0..n {
        x = match co.resume(black_box(x)) {
            corosensei::CoroutineResult::Yield(v) => v,
            corosensei::CoroutineResult::Return(()) => unreachable!(),
        };
    }
    x
}

/// A coroutine of either kind, started, behind a `Box`.
enum Subject {
    Corio(Box<CorioCo>),
    Corosensei(Box<CorosenseiCo>),
}

impl Subject {
    fn new(imp: &str) -> Result<Subject, String> {
        match imp {
            "corio" => Ok(Subject::Corio(corio_coroutine())),
            "corosensei" => Ok(Subject::Corosensei(corosensei_coroutine())),
            _ => Err(format!("unknown implementation `{imp}`")),
        }
    }

    /// `n` round trips, checked.
    fn round_trips(&mut self, n: u64) {
        // The first resume starts the closure, whose first suspend returns start + 1: every
        // round trip adds one whether or not it is the first.
        let start = 1_000;
        let end = match self {
            Subject::Corio(co) => corio_round_trips(black_box(&mut **co), start, n),
            Subject::Corosensei(co) => corosensei_round_trips(black_box(&mut **co), start, n),
        };
        assert_eq!(end, start + n, "the coroutine lost a round trip");
    }

    /// Nanoseconds per switch over `n` round trips.
    fn time(&mut self, n: u64) -> f64 {
        let t = Instant::now();
        self.round_trips(n);
        t.elapsed().as_nanos() as f64 / (2 * n) as f64
    }
}

fn run(opts: &Opts) -> Vec<Measurement> {
    let n = opts.size(20_000_000, 5_000_000);
    let runs = opts.runs(5, 5);
    let mut subjects: Vec<Subject> = IMPLS
        .iter()
        .map(|i| Subject::new(i).expect("known"))
        .collect();
    // Warm up: caches, branch predictors, the CPU's clock.
    for s in &mut subjects {
        s.round_trips(n / 4);
    }
    let mut samples = vec![Vec::new(); IMPLS.len()];
    for run in 0..runs {
        for i in super::run_order(run, subjects.len()) {
            samples[i].push(subjects[i].time(n));
        }
    }
    let mut ms: Vec<Measurement> = IMPLS
        .iter()
        .zip(&samples)
        .map(|(imp, v)| Measurement::new("switch", *imp, "ns_per_switch", "ns", n, v))
        .collect();
    if opts.callgrind || opts.table {
        ms.extend(instructions());
    }
    ms
}

/// The `instructions_per_switch` rows: measured, or skipped without valgrind.
fn instructions() -> Vec<Measurement> {
    let metric = "instructions_per_switch";
    IMPLS
        .iter()
        .map(|imp| {
            if callgrind::valgrind().is_none() {
                return Measurement::skipped(
                    "switch",
                    *imp,
                    metric,
                    "instr",
                    CALLGRIND_N2,
                    "valgrind not installed",
                );
            }
            let command =
                |n: u64| ChildCommand::new("switch").args([imp.to_string(), n.to_string()]);
            match callgrind::instructions_per_op(command, CALLGRIND_N1, CALLGRIND_N2, 2.0) {
                Ok(v) => Measurement::new("switch", *imp, metric, "instr", CALLGRIND_N2, &[v])
                    .with_note(format!(
                        "callgrind, (Ir@{CALLGRIND_N2} − Ir@{CALLGRIND_N1}) / switches"
                    )),
                Err(e) => Measurement::failed("switch", *imp, metric, "instr", CALLGRIND_N2, e),
            }
        })
        .collect()
}

/// `__child switch <impl> <round trips>`: runs the loop once (for callgrind) and reports.
fn child_main(args: &[String]) -> Result<(), String> {
    let imp: String = child::arg(args, 0, "implementation")?;
    let n: u64 = child::arg(args, 1, "round trips")?;
    let mut subject = Subject::new(&imp)?;
    subject.round_trips(n);
    child::emit("round_trips", n);
    Ok(())
}
