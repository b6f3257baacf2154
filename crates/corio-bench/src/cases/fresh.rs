//! Series of fresh-process runs, shared by the scheduler cases (yield, spawn, skynet,
//! fairness, idle).
//!
//! Each run of each implementation is one child process: a `__child` of this binary for the
//! Rust implementations, the Go peer (`gopeer.rs`) for Go. The runs are interleaved with
//! [`run_order`](super::run_order) — run 1 visits A B C, run 2 B C A, ... — so that a noisy
//! neighbour spreads over every implementation instead of ruining one. An implementation that
//! fails once is not run again: the failure is a property of the implementation.

use crate::child::{ChildCommand, ChildOutput};
use crate::report::{Measurement, Outcome};

/// How to start one run of an implementation, or why it cannot run (`Skipped`: a missing
/// tool; `Failed`: a peer that did not build).
pub type Launch = Result<ChildCommand, Outcome>;

/// The runs of one subject: every output, or why there are none.
pub type Series = Result<Vec<ChildOutput>, Outcome>;

/// Runs every subject `runs` times, interleaved, after `warmup` discarded rounds.
pub fn run(subjects: &[Launch], runs: usize, warmup: usize) -> Vec<Series> {
    let mut series: Vec<Series> = subjects
        .iter()
        .map(|s| match s {
            Ok(_) => Ok(Vec::new()),
            Err(why) => Err(why.clone()),
        })
        .collect();
    for round in 0..warmup + runs {
        for i in super::run_order(round, subjects.len()) {
            let (Ok(outputs), Ok(command)) = (&mut series[i], &subjects[i]) else {
                continue;
            };
            match command.run() {
                Ok(out) if out.success() => {
                    if round >= warmup {
                        outputs.push(out);
                    }
                }
                Ok(out) => series[i] = Err(Outcome::Failed(out.failure())),
                Err(e) => {
                    series[i] = Err(Outcome::Failed(format!("could not start the child: {e}")));
                }
            }
        }
    }
    series
}

/// The values of `key` in every output, or why one is missing.
pub fn values(series: &Series, key: &str) -> Result<Vec<f64>, Outcome> {
    let outputs = series.as_ref().map_err(Clone::clone)?;
    outputs
        .iter()
        .map(|o| o.require_f64(key).map_err(Outcome::Failed))
        .collect()
}

/// The last run's value of `key`, as printed, if any.
pub fn last<'a>(series: &'a Series, key: &str) -> Option<&'a str> {
    series.as_ref().ok()?.last()?.get(key)
}

/// What the table shows of a metric: the summary of `key` over the runs, or why there is none.
pub struct Row {
    /// The case.
    pub case: &'static str,
    /// The implementation's row name.
    pub imp: String,
    /// The metric's name.
    pub metric: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// The problem size.
    pub n: u64,
}

impl Row {
    /// The measurement of `key` in `series`.
    pub fn of(self, series: &Series, key: &str) -> Measurement {
        let Row {
            case,
            imp,
            metric,
            unit,
            n,
        } = self;
        match values(series, key) {
            Ok(v) => Measurement::new(case, imp, metric, unit, n, &v),
            Err(Outcome::Skipped(why)) => Measurement::skipped(case, imp, metric, unit, n, why),
            Err(Outcome::Failed(why)) => Measurement::failed(case, imp, metric, unit, n, why),
            Err(Outcome::Value(_)) => unreachable!("values() never fails with a value"),
        }
    }
}

/// Spawns a may coroutine (`may::go!` without the macro, so that the `unsafe` is documented).
///
/// may calls `spawn` unsafe because a coroutine that is moved between threads may break
/// thread-local storage it relies on. The closures of these cases touch no thread-local of
/// theirs, and use at most a few hundred bytes of their stacks.
pub fn may_go<F, T>(f: F) -> may::coroutine::JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // SAFETY: see above: no thread-local state, a small stack footprint.
    unsafe { may::coroutine::spawn(f) }
}

/// The nearest-rank percentile `p` (0–100) of sorted `v` (the Go peer computes the same).
pub fn percentile(sorted: &[u64], p: usize) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), Some(50));
        assert_eq!(percentile(&v, 99), Some(99));
        assert_eq!(percentile(&v, 100), Some(100));
        assert_eq!(percentile(&[7], 99), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }
}
