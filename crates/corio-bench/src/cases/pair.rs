//! `pair`: each corio server against the peer it competes with, in alternating windows, with
//! a 95 % interval on the ratio.
//!
//! # Why a second measurement of the same servers
//!
//! `http` and `echo` measure each server in fresh processes, round by round, 10 s a run. On a
//! shared machine one server's rate moves 15–40 % between rounds a minute apart, so their
//! per-round ratios spread far wider than the few per cent that separate corio's servers from
//! their peers: six full runs put the same cell's ratio anywhere between 0.975 and 1.07, and
//! none could say whether corio was ahead (`docs/net-bench.md`, "Fifteenth pass").
//!
//! Here the two servers of a pair (`http_hello` and may_minihttp, `hyper_hello` and hyper on
//! tokio, the stackful echo and may's, the async echo and tokio's) run side by side for the
//! whole cell, both pinned to CPU 0; the load, pinned to CPU 1, alternates between them in
//! short windows — A B, B A, A B, ... — so that a drift of the machine's load lands on both
//! sides of each pair and divides out of its ratio. The server that is not under load is idle:
//! corio's and tokio's make no wake-ups then, may's ~100 a second (~0.05 % of the CPU the
//! other uses). Each server gets one discarded 1 s window first.
//!
//! # What a row says
//!
//! A row is one ratio (corio's server / its peer) over the pairs of windows of one cell:
//! requests (or messages) per second, wrk's p99 latency (keep-alive; for the pipelined cell,
//! the p99 of a batch of 16 from the histogram, as `http` computes it), and the server's CPU
//! time per request. The median is the median of the per-pair ratios, min – max their range,
//! and the note gives a distribution-free 95 % interval for the median ([`interval`]: the
//! sign test's order statistics, which need no assumption about how the ratios spread), the
//! number of pairs above 1, the verdict the interval allows, and each server's median. For
//! requests/s the verdict is *ahead* when the whole interval lies above 1, *behind* when it
//! lies below, *level* otherwise; for p99 and CPU per request, where lower is better, *lower*
//! and *higher*. A cell whose interval contains 1 is not a tie: it is a difference this run
//! could not resolve.
//!
//! With `--json`, each row's `samples` are its per-pair ratios, in the order measured, so that
//! two runs can be pooled (the interval of 40 pairs is narrower than either's of 20).
//!
//! Defaults: 16 pairs of 2 s windows per cell, ~11 minutes in all (`--runs N` sets the pairs;
//! `--quick`: 4 pairs of 1 s, too few for an interval, [`MIN_PAIRS`], in two cells only —
//! `http_hello` against may_minihttp at 64 connections and the stackful echo against may's —
//! which shows the machinery works within CI's time). A cell gives up after
//! [`MAX_FAILED_WINDOWS`] failed windows, and its rows say why.

use super::netrun::launch;
use super::{Case, echo, http};
use crate::opts::Opts;
use crate::report::{Measurement, Outcome};
use crate::server::{self, Server};

/// The `pair` case.
pub const CASE: Case = Case {
    name: "pair",
    about: "corio's servers against their closest peers in alternating windows: ratios with 95 % intervals",
    reference: None,
    run,
    child: None,
};

/// What a cell puts on its servers.
#[derive(Clone, Copy, Debug)]
enum Load {
    /// `wrk -t1 -c<n>` keep-alive.
    KeepAlive(u64),
    /// `wrk -t1 -c<n>` with [`http::DEPTH`] requests per round trip.
    Pipelined(u64),
    /// The echo load client, [`echo::CLIENTS`] clients.
    Echo,
}

impl Load {
    /// The case whose servers this load measures, and the Go peer's subcommand for it.
    fn case(self) -> (&'static str, &'static str) {
        match self {
            Load::Echo => ("echo", "echoserve"),
            _ => ("http", "httpserve"),
        }
    }

    /// The problem size in the rows: connections or clients.
    fn n(self) -> u64 {
        match self {
            Load::KeepAlive(c) | Load::Pipelined(c) => c,
            Load::Echo => echo::CLIENTS as u64,
        }
    }

    fn describe(self) -> String {
        match self {
            Load::KeepAlive(c) => format!("{c} conns keep-alive"),
            Load::Pipelined(c) => format!("{c} conns × {} pipelined", http::DEPTH),
            Load::Echo => format!("{} clients × {} B echo", echo::CLIENTS, echo::MESSAGE),
        }
    }

    /// The unit of its rate.
    fn rate_unit(self) -> &'static str {
        match self {
            Load::Echo => "msg/s",
            _ => "req/s",
        }
    }
}

/// What one window of load measured on one server.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Window {
    /// Requests or messages per second.
    rate: f64,
    /// The p99 latency in µs, where the load reports one.
    p99_us: Option<f64>,
    /// The server's CPU time per request or message, in µs, where it could be read.
    cpu_us: Option<f64>,
}

/// The pairs of windows of one cell, and why any were lost.
#[derive(Debug, Default)]
struct Paired {
    /// (A's window, B's window), pair by pair.
    pairs: Vec<(Window, Window)>,
    /// Each failed window, as "pair i, A: why".
    failures: Vec<String>,
}

/// The fewest pairs that give a 95 % interval ([`interval`]).
const MIN_PAIRS: usize = 6;

/// A cell stops measuring after this many failed windows.
const MAX_FAILED_WINDOWS: usize = 3;

/// Runs `pairs` pairs of windows, `window(0)` measuring server A and `window(1)` server B,
/// alternating which goes first (A B, B A, ...): a drift of the machine over a pair then
/// favours A and B equally often. A pair with a failed window is dropped; after
/// [`MAX_FAILED_WINDOWS`] failures the cell stops.
fn alternate(pairs: usize, mut window: impl FnMut(usize) -> Result<Window, String>) -> Paired {
    let mut out = Paired::default();
    'pairs: for p in 0..pairs {
        let order = if p % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut got = [None; 2];
        for side in order {
            match window(side) {
                Ok(w) => got[side] = Some(w),
                Err(why) => {
                    out.failures
                        .push(format!("pair {p}, {}: {why}", ["A", "B"][side]));
                    if out.failures.len() >= MAX_FAILED_WINDOWS {
                        break 'pairs;
                    }
                    continue 'pairs;
                }
            }
        }
        if let [Some(a), Some(b)] = got {
            out.pairs.push((a, b));
        }
    }
    out
}

/// The median of `values` and a distribution-free 95 % interval for it: the order statistics
/// `x(k)` and `x(n + 1 - k)` of the sorted values, with `k` the largest rank for which fewer
/// than `k` of `n` fair coin flips come up heads with probability at most 2.5 % (the sign
/// test's interval: it holds at least 95 % of the time whatever the distribution, for
/// independent pairs). 16 pairs give `x(4)` – `x(13)`. Below 6 values no rank qualifies and
/// there is no interval: `None` in the second place.
fn interval(values: &[f64]) -> Option<(f64, Option<(f64, f64)>)> {
    let median = crate::stats::Summary::of(values)?.median;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    // P(heads <= i) for i = 0, 1, ...: the binomial(n, 1/2) terms summed from log space
    // (0.5^n underflows past n ~ 1,000).
    let (mut ln_term, mut below, mut k) = (n as f64 * 0.5f64.ln(), 0.0, 0);
    for i in 0..n / 2 {
        below += ln_term.exp();
        if below > 0.025 {
            break;
        }
        k = i + 1;
        ln_term += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    let bounds = (k > 0).then(|| (sorted[k - 1], sorted[n - k]));
    Some((median, bounds))
}

/// What an interval (lo, hi) of a ratio allows one to say, for a metric where higher is
/// better (`higher_better`: requests/s) or lower is (p99, CPU per request).
fn verdict(lo: f64, hi: f64, higher_better: bool) -> &'static str {
    match (lo > 1.0, hi < 1.0, higher_better) {
        (true, _, true) => "corio ahead",
        (_, true, true) => "corio behind",
        (true, _, false) => "corio higher (worse)",
        (_, true, false) => "corio lower (better)",
        _ => "level: the interval contains 1",
    }
}

/// The cells: every load, each with both of corio's pairs for its case.
fn cells(opts: &Opts) -> Vec<(Load, (&'static str, &'static str))> {
    let piped = opts.size(256, 64);
    let mut loads: Vec<Load> = opts
        .size(vec![16, 64, 256], vec![64])
        .into_iter()
        .map(Load::KeepAlive)
        .collect();
    loads.push(Load::Pipelined(piped));
    loads.push(Load::Echo);
    let mut cells = Vec::new();
    for load in loads {
        let pairs = match load {
            Load::Echo => echo::PAIRS,
            _ => http::PAIRS,
        };
        cells.extend(pairs.into_iter().map(|p| (load, p)));
    }
    if opts.quick {
        // One keep-alive cell and one echo cell: the machinery, in CI's time.
        cells.retain(|(load, pair)| match load {
            Load::KeepAlive(_) => *pair == http::PAIRS[0],
            Load::Echo => *pair == echo::PAIRS[0],
            Load::Pipelined(_) => false,
        });
    }
    cells
}

/// The server name (`__child <case> serve <server>`) of row `imp` in `load`'s case.
fn server_of(load: Load, imp: &str) -> &'static str {
    let impls: &[(&str, &'static str, &str)] = match load {
        Load::Echo => &echo::IMPLS,
        _ => &http::IMPLS,
    };
    impls
        .iter()
        .find(|(row, ..)| *row == imp)
        .map(|(_, server, _)| *server)
        .expect("every pair names rows of its case")
}

fn run(opts: &Opts) -> Vec<Measurement> {
    let pairs = opts.runs(16, 4);
    let secs: u64 = opts.size(2, 1);
    let wrk = http::wrk_tool();
    let script = std::env::temp_dir().join(format!("corio-bench-pair-{}.lua", std::process::id()));
    let script_ok = std::fs::write(&script, http::PIPELINE_LUA).is_ok();
    let mut out = Vec::new();
    for (load, (a, b)) in cells(opts) {
        eprintln!("corio-bench: pair: {a} / {b}, {}", load.describe());
        let what = format!(
            "{}, {pairs} pairs × {secs} s; {}",
            load.describe(),
            server::pin_note()
        );
        let measured = match load {
            Load::Echo => Ok(()),
            _ if wrk.is_none() => Err(Outcome::Skipped("wrk not installed".into())),
            Load::Pipelined(_) if !script_ok => Err(Outcome::Failed(format!(
                "could not write the pipelining script to {}",
                script.display()
            ))),
            _ => Ok(()),
        }
        .and_then(|()| {
            let start = |imp| {
                let (case, go_sub) = load.case();
                let command = launch(case, server_of(load, imp), go_sub)?;
                Server::start(&command).map_err(Outcome::Failed)
            };
            let mut servers = [start(a)?, start(b)?];
            let mut window = |side: usize, secs: u64| -> Result<Window, String> {
                let srv = &mut servers[side];
                let w = measure(load, srv, secs, wrk.as_deref(), &script)?;
                if srv.alive() {
                    Ok(w)
                } else {
                    Err("the server died under load".into())
                }
            };
            for side in [0, 1] {
                window(side, 1).map_err(|e| Outcome::Failed(format!("warm-up: {e}")))?;
            }
            Ok(alternate(pairs, |side| window(side, secs)))
        });
        out.extend(rows(load, (a, b), measured, &what));
    }
    let _ = std::fs::remove_file(&script);
    out
}

/// One window of `load` against `srv`, `secs` long.
fn measure(
    load: Load,
    srv: &Server,
    secs: u64,
    wrk: Option<&std::path::Path>,
    script: &std::path::Path,
) -> Result<Window, String> {
    match load {
        Load::Echo => {
            let r = echo::load_window(srv, secs * 1_000)?;
            Ok(Window {
                rate: r.per_sec,
                p99_us: None,
                cpu_us: server::cpu_per_unit_us(r.cpu, r.messages),
            })
        }
        Load::KeepAlive(conns) | Load::Pipelined(conns) => {
            let wrk = wrk.ok_or("wrk not installed")?;
            let url = format!("http://{}/plaintext", srv.addr);
            let piped = matches!(load, Load::Pipelined(_));
            let cpu_before = srv.cpu_time();
            let r = http::wrk_run(wrk, &url, conns, secs, piped.then_some(script))?;
            let cpu = srv.cpu_since(cpu_before);
            if let Some(e) = &r.errors {
                return Err(format!("wrk saw {e}"));
            }
            let p99_us = if piped {
                http::batch_p99_us(&r.text, conns).ok()
            } else {
                Some(r.p99_us)
            };
            Ok(Window {
                rate: r.rps,
                p99_us,
                cpu_us: server::cpu_per_unit_us(cpu, r.requests),
            })
        }
    }
}

/// A ratio row's metric.
struct Metric {
    /// The row's metric name.
    name: &'static str,
    /// Its value in one window, if that window has one.
    get: fn(&Window) -> Option<f64>,
    /// Whether corio is better when the ratio is above 1 (requests/s) or below (p99, CPU).
    higher_better: bool,
    /// The unit of the two servers' medians in the note.
    unit: &'static str,
}

/// The rows of one cell: the ratio of rates, of p99s (not for echo, whose load measures no
/// latency) and of CPU per request.
fn rows(
    load: Load,
    (a, b): (&str, &str),
    measured: Result<Paired, Outcome>,
    what: &str,
) -> Vec<Measurement> {
    let imp = format!("{a} / {b}");
    let mut metrics = vec![Metric {
        name: "rate_ratio",
        get: |w| Some(w.rate),
        higher_better: true,
        unit: load.rate_unit(),
    }];
    if !matches!(load, Load::Echo) {
        metrics.push(Metric {
            name: "p99_ratio",
            get: |w| w.p99_us,
            higher_better: false,
            unit: "us",
        });
    }
    metrics.push(Metric {
        name: "cpu_ratio",
        get: |w| w.cpu_us,
        higher_better: false,
        unit: "us CPU",
    });
    let n = load.n();
    metrics
        .iter()
        .map(|m| {
            let row = match &measured {
                Err(Outcome::Skipped(why)) => {
                    Measurement::skipped("pair", &imp, m.name, "x", n, why)
                }
                Err(Outcome::Failed(why)) => Measurement::failed("pair", &imp, m.name, "x", n, why),
                Err(Outcome::Value(_)) => unreachable!("a cell fails without a value"),
                Ok(paired) => ratio_row(paired, (&imp, a, b), m, n),
            };
            let row = match &measured {
                Ok(p) if !p.failures.is_empty() => row.and_note(format!(
                    "{} failed window(s): {}",
                    p.failures.len(),
                    p.failures.join("; ")
                )),
                _ => row,
            };
            row.and_note(what)
        })
        .collect()
}

/// One ratio row: the per-pair ratios of `m`, their median with [`interval`]'s interval and
/// [`verdict`] in the note, and each server's median.
fn ratio_row(paired: &Paired, (imp, a, b): (&str, &str, &str), m: &Metric, n: u64) -> Measurement {
    let (mut ratios, mut va, mut vb) = (Vec::new(), Vec::new(), Vec::new());
    for (wa, wb) in &paired.pairs {
        if let (Some(x), Some(y)) = ((m.get)(wa), (m.get)(wb))
            && y > 0.0
        {
            ratios.push(x / y);
            va.push(x);
            vb.push(y);
        }
    }
    let Some((_, bounds)) = interval(&ratios) else {
        return Measurement::failed("pair", imp, m.name, "x", n, "no pair measured both");
    };
    let said = match bounds {
        Some((lo, hi)) => format!(
            "95 % interval {lo:.3} – {hi:.3}, {}",
            verdict(lo, hi, m.higher_better)
        ),
        None => format!(
            "no 95 % interval from {} pairs (it needs {MIN_PAIRS})",
            ratios.len()
        ),
    };
    let above = ratios.iter().filter(|&&r| r > 1.0).count();
    let median = |v: &[f64]| crate::stats::Summary::of(v).map_or(f64::NAN, |s| s.median);
    Measurement::new("pair", imp, m.name, "x", n, &ratios).with_note(format!(
        "{said}; above 1 in {above} of {} pairs; medians {a} {}, {b} {} {}",
        ratios.len(),
        crate::report::fmt_num(median(&va)),
        crate::report::fmt_num(median(&vb)),
        m.unit,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(rate: f64) -> Window {
        Window {
            rate,
            p99_us: Some(100.0),
            cpu_us: None,
        }
    }

    #[test]
    fn the_windows_alternate_which_server_goes_first() {
        let mut order = Vec::new();
        let paired = alternate(4, |side| {
            order.push(side);
            Ok(w(1.0 + side as f64))
        });
        assert_eq!(order, [0, 1, 1, 0, 0, 1, 1, 0]);
        assert_eq!(paired.pairs.len(), 4);
        assert!(
            paired
                .pairs
                .iter()
                .all(|(a, b)| a.rate == 1.0 && b.rate == 2.0)
        );
    }

    #[test]
    fn a_failed_window_drops_its_pair_and_enough_failures_stop_the_cell() {
        let mut calls = 0;
        // The third window (pair 1's first, which is B's) fails.
        let paired = alternate(3, |_| {
            calls += 1;
            if calls == 3 {
                Err("wrk hung".into())
            } else {
                Ok(w(1.0))
            }
        });
        assert_eq!(paired.pairs.len(), 2, "pairs 0 and 2");
        assert_eq!(paired.failures, ["pair 1, B: wrk hung"]);
        assert_eq!(calls, 5, "pair 1's second window is not run");

        let mut calls = 0;
        let paired = alternate(10, |_| {
            calls += 1;
            Err::<Window, _>("refused".into())
        });
        assert_eq!(calls, MAX_FAILED_WINDOWS);
        assert!(paired.pairs.is_empty());
    }

    #[test]
    fn the_interval_is_the_sign_tests_order_statistics() {
        // 16 values 1..=16: P(at most 3 of 16 heads) = 697 / 65,536 <= 2.5 % < P(at most 4),
        // so the interval runs from the 4th to the 13th.
        let v: Vec<f64> = (1..=16).rev().map(f64::from).collect();
        assert_eq!(interval(&v), Some((8.5, Some((4.0, 13.0)))));
        // 6 values: P(0 of 6) = 1 / 64 <= 2.5 %: the extremes. 5: 1 / 32 > 2.5 %: none.
        let v = [3.0, 1.0, 2.0, 6.0, 5.0, 4.0];
        assert_eq!(interval(&v), Some((3.5, Some((1.0, 6.0)))));
        assert_eq!(interval(&v[..5]), Some((3.0, None)));
        assert_eq!(interval(&[1.0; MIN_PAIRS - 1]).unwrap().1, None);
        assert!(interval(&[1.0; MIN_PAIRS]).unwrap().1.is_some());
        assert_eq!(interval(&[]), None);
        // Large counts do not underflow: 2,000 values, x(956) - x(1045) (normal approximation:
        // 1,000 -/+ 1.96 * sqrt(500), rounded outwards).
        let v: Vec<f64> = (1..=2000).map(f64::from).collect();
        let (lo, hi) = interval(&v).unwrap().1.unwrap();
        assert!(
            (950.0..=960.0).contains(&lo) && (1041.0..=1051.0).contains(&hi),
            "{lo} {hi}"
        );
        assert_eq!(lo + hi, 2001.0, "symmetric");
    }

    #[test]
    fn the_verdict_needs_the_whole_interval_on_one_side_of_1() {
        assert_eq!(verdict(1.01, 1.07, true), "corio ahead");
        assert_eq!(verdict(0.9, 0.99, true), "corio behind");
        assert_eq!(verdict(0.99, 1.07, true), "level: the interval contains 1");
        assert_eq!(verdict(0.8, 0.95, false), "corio lower (better)");
        assert_eq!(verdict(1.0, 1.2, false), "level: the interval contains 1");
    }

    #[test]
    fn a_ratio_row_divides_pair_by_pair_and_skips_pairs_missing_a_value() {
        let mut paired = Paired::default();
        for (x, y) in [(110.0, 100.0), (120.0, 100.0), (90.0, 100.0)] {
            paired.pairs.push((w(x), w(y)));
        }
        paired.pairs.push((
            Window {
                p99_us: None,
                ..w(1.0)
            },
            w(1.0),
        ));
        let metric = |name, get| Metric {
            name,
            get,
            higher_better: true,
            unit: "",
        };
        let row = ratio_row(
            &paired,
            ("a / b", "a", "b"),
            &metric("rate_ratio", |w| Some(w.rate)),
            16,
        );
        assert_eq!(row.median(), Some(1.05), "the ratios 1.1, 1.2, 0.9 and 1.0");
        let row = ratio_row(
            &paired,
            ("a / b", "a", "b"),
            &metric("p99_ratio", |w| w.p99_us),
            16,
        );
        assert_eq!(row.median(), Some(1.0), "the p99s of the first three pairs");
        let note = row.note.unwrap();
        assert!(note.contains("of 3 pairs"), "{note}");
        assert!(note.starts_with("no 95 % interval from 3 pairs"), "{note}");
    }

    #[test]
    fn every_cell_names_servers_its_case_can_start() {
        for quick in [false, true] {
            let opts = Opts {
                quick,
                ..Opts::default()
            };
            let cells = cells(&opts);
            assert_eq!(cells.len(), if quick { 2 } else { 10 });
            for (load, (a, b)) in cells {
                server_of(load, a);
                server_of(load, b);
            }
        }
    }
}
