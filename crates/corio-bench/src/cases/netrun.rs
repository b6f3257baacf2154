//! Rounds of server runs, shared by the network cases (`http`, `echo`, `c10k`).
//!
//! Each round starts every server once (a fresh process, pinned to the server CPU), in the
//! rotating order of [`run_order`](super::run_order), lets the case measure it with a closure
//! (wrk, a load client, 10,000 idle connections), and kills it. A server that fails to start
//! is not started again; one that fails a measurement twice in a row is not run again for
//! that measurement (the failure is a property of the implementation, and the rows it would
//! have filled say why), and its other measurements go on: one cell's fault (wrk once could
//! not read back a wide pipelined histogram in time, `http.rs`) no longer empties a server's
//! whole table. The closure returns named values (`requests_per_sec@64`); [`NetRuns::row`] turns
//! one name's values over the rounds into a table row.
//!
//! A case that measures several things per server (`http`: 16, 64 and 256 connections, then
//! pipelined) calls them *cells* and uses [`cell_rounds`]: all rounds of one cell, servers
//! interleaved round by round (A B C D E, B C D E A, ...), before the next cell, each
//! measurement in a fresh server process. The alternative, every cell of one server back to
//! back before the next server, puts one server's 40 s against another's: a burst of load on a
//! shared machine (a neighbour's build) then lands on all of one server's rows and decides
//! them. Interleaved, the runs of one cell lie within a minute or so of each other and a burst
//! hits one run of each of a few servers; the median of each cell's runs drops it and the
//! table's min – max shows it happened. [`schedule`] is that order, tested on its own.

use std::collections::HashMap;

use super::fresh::Launch;
use crate::child::ChildCommand;
use crate::gopeer;
use crate::report::{Measurement, Outcome};
use crate::server::{self, SERVER_CPU, Server};

/// How to start server `server` of `case` (`__child <case> serve <server>`, or the Go peer's
/// `go_sub` for `"go"`), pinned to the server CPU.
pub fn launch(case: &str, server: &str, go_sub: &str) -> Launch {
    let pin = server::pinned(SERVER_CPU);
    if server == "go" {
        return gopeer::command([go_sub, "1"]).map(|c| c.wrapper(pin));
    }
    Ok(ChildCommand::new(case).args(["serve", server]).wrapper(pin))
}

/// The note under which [`cell_rounds`] records a measurement it had to repeat, and why.
pub const RETRIED: &str = "retried";

/// The values one measurement of one server produced, by name.
pub type Values = Vec<(String, f64)>;

/// What the rounds produced for every subject: one map per round, or why there is none.
pub struct NetRuns {
    per_subject: Vec<Result<Vec<HashMap<String, f64>>, Outcome>>,
    /// Per subject, why each cell it failed in failed (after its second chance), by cell.
    failed: Vec<Vec<(usize, String)>>,
    notes: Vec<HashMap<String, String>>,
}

/// Runs `runs` rounds over `subjects`, measuring each started server with `measure`, which
/// may also leave notes (`&mut HashMap<String, String>`, last round wins).
pub fn rounds(
    subjects: &[Launch],
    runs: usize,
    mut measure: impl FnMut(usize, &mut Server, &mut HashMap<String, String>) -> Result<Values, String>,
) -> NetRuns {
    cell_rounds(subjects, 1, runs, |_, i, server, notes| {
        measure(i, server, notes)
    })
}

/// The order of [`cell_rounds`]' measurements, as (cell, round, subject): cell by cell, and
/// within a cell `runs` rounds that each visit every subject once, in [`run_order`]'s
/// rotation (continued from one cell to the next, so no subject always opens a cell).
///
/// [`run_order`]: super::run_order
pub fn schedule(cells: usize, runs: usize, subjects: usize) -> Vec<(usize, usize, usize)> {
    let mut order = Vec::with_capacity(cells * runs * subjects);
    for cell in 0..cells {
        for round in 0..runs {
            order.extend(super::run_order(cell * runs + round, subjects).map(|i| (cell, round, i)));
        }
    }
    order
}

/// Runs `runs` rounds of each of `cells` measurements over `subjects`, in [`schedule`]'s order,
/// starting a fresh server for each and measuring it with `measure(cell, subject, server,
/// notes)`. Round `r`'s values of every cell end up in one map per subject, so
/// [`NetRuns::row`] reads a cell's value over the rounds by its name.
pub fn cell_rounds(
    subjects: &[Launch],
    cells: usize,
    runs: usize,
    mut measure: impl FnMut(
        usize,
        usize,
        &mut Server,
        &mut HashMap<String, String>,
    ) -> Result<Values, String>,
) -> NetRuns {
    let mut per_subject: Vec<Result<Vec<HashMap<String, f64>>, Outcome>> = subjects
        .iter()
        .map(|s| match s {
            Ok(_) => Ok(vec![HashMap::new(); runs]),
            Err(why) => Err(why.clone()),
        })
        .collect();
    let mut notes = vec![HashMap::new(); subjects.len()];
    let mut failed: Vec<Vec<(usize, String)>> = vec![Vec::new(); subjects.len()];
    for (cell, round, i) in schedule(cells, runs, subjects.len()) {
        let (Ok(done), Ok(command)) = (&mut per_subject[i], &subjects[i]) else {
            continue;
        };
        if failed[i].iter().any(|&(c, _)| c == cell) {
            continue;
        }
        // `Ok(Err(why))`: the measurement failed; `Err(why)`: the server did not start.
        let mut once =
            |notes: &mut HashMap<String, String>| -> Result<Result<Values, String>, String> {
                let mut server = Server::start(command)?;
                Ok(measure(cell, i, &mut server, notes).and_then(|values| {
                    if server.alive() {
                        Ok(values)
                    } else {
                        Err("the server died under load".into())
                    }
                }))
            };
        // A second chance, in a fresh process, before a failure counts: on a shared machine
        // the load generator itself has been seen to hang past its timeout (wrk, 70 s for a
        // 10 s run, twice in one `http` run, for two different servers), and one such fault
        // would otherwise fail that cell of that server. The first failure stays in the notes.
        let notes = &mut notes[i];
        let result = match once(notes) {
            Ok(Ok(values)) => Ok(Ok(values)),
            Ok(Err(first)) | Err(first) => {
                let retried = format!("cell {cell} round {round} retried after: {first}");
                notes
                    .entry(RETRIED.into())
                    .and_modify(|n| *n = format!("{n}; {retried}"))
                    .or_insert(retried);
                once(notes)
            }
        };
        match result {
            Ok(Ok(values)) => done[round].extend(values),
            Ok(Err(why)) => failed[i].push((cell, format!("cell {cell}: {why}"))),
            // A server that does not start is not started again, for any cell.
            Err(why) => per_subject[i] = Err(Outcome::Failed(why)),
        }
    }
    NetRuns {
        per_subject,
        failed,
        notes,
    }
}

impl NetRuns {
    /// The row of value `key` for subject `i`: the median over the rounds that measured it.
    /// If only some did (one round's pipelined p99 could not be read back, say), the row
    /// keeps their values and its note says from how many rounds and why the others have
    /// none; callers add their own notes with [`Measurement::and_note`].
    pub fn row(
        &self,
        i: usize,
        case: &'static str,
        imp: &str,
        (metric, unit, n): (&'static str, &'static str, u64),
        key: &str,
    ) -> Measurement {
        match &self.per_subject[i] {
            Ok(rounds) => {
                let v: Vec<f64> = rounds.iter().filter_map(|r| r.get(key).copied()).collect();
                if v.len() == rounds.len() && !v.is_empty() {
                    Measurement::new(case, imp, metric, unit, n, &v)
                } else if !v.is_empty() {
                    let mut note = format!("from {} of {} rounds", v.len(), rounds.len());
                    for (_, why) in &self.failed[i] {
                        note = format!("{note}; {why}");
                    }
                    Measurement::new(case, imp, metric, unit, n, &v).with_note(note)
                } else if !self.failed[i].is_empty() {
                    // Not every cell's failure is this key's; each names its cell.
                    let why: Vec<&str> = self.failed[i].iter().map(|(_, w)| w.as_str()).collect();
                    Measurement::failed(case, imp, metric, unit, n, why.join("; "))
                } else {
                    Measurement::failed(case, imp, metric, unit, n, format!("no `{key}` measured"))
                }
            }
            Err(Outcome::Skipped(why)) => Measurement::skipped(case, imp, metric, unit, n, why),
            Err(Outcome::Failed(why)) => Measurement::failed(case, imp, metric, unit, n, why),
            Err(Outcome::Value(_)) => unreachable!("a subject fails without a value"),
        }
    }

    /// Value `key` of subject `a` divided by subject `b`'s, round by round, over the rounds
    /// in which both measured it. The two runs of a round lie within a minute or so of each
    /// other, so a slow drift of the machine's load divides out of the ratio, where it would
    /// stay in a ratio of medians taken over the whole case.
    pub fn ratios(&self, a: usize, b: usize, key: &str) -> Vec<f64> {
        let (Ok(ra), Ok(rb)) = (&self.per_subject[a], &self.per_subject[b]) else {
            return Vec::new();
        };
        ra.iter()
            .zip(rb)
            .filter_map(|(x, y)| Some(x.get(key)? / y.get(key)?))
            .collect()
    }

    /// The `*_ratio` row of subject `a` against subject `b` (each with its row name) for
    /// value `key`: the median of [`ratios`](Self::ratios), and in the note (after `what`)
    /// in how many rounds the ratio was above 1.
    pub fn ratio_row(
        &self,
        case: &'static str,
        (a, a_name): (usize, &str),
        (b, b_name): (usize, &str),
        (metric, n): (&'static str, u64),
        key: &str,
        what: &str,
    ) -> Measurement {
        let ratios = self.ratios(a, b, key);
        let imp = format!("{a_name} / {b_name}");
        if ratios.is_empty() {
            return Measurement::failed(case, imp, metric, "x", n, "not both measured in a round");
        }
        let above = ratios.iter().filter(|&&r| r > 1.0).count();
        Measurement::new(case, imp, metric, "x", n, &ratios).with_note(format!(
            "{what}; per round, the two runs minutes apart at most; above 1 in {above} of {} \
             rounds",
            ratios.len()
        ))
    }

    /// The median of subject `i`'s values under `key` over the rounds that have one.
    pub fn median(&self, i: usize, key: &str) -> Option<f64> {
        let rounds = self.per_subject[i].as_ref().ok()?;
        let v: Vec<f64> = rounds.iter().filter_map(|r| r.get(key).copied()).collect();
        crate::stats::Summary::of(&v).map(|s| s.median)
    }

    /// The note subject `i` left under `key` in its last round, if any.
    pub fn note(&self, i: usize, key: &str) -> Option<&str> {
        self.notes[i].get(key).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in server: `sh` reports an address and stays up until killed.
    fn fake_server() -> Launch {
        Ok(ChildCommand::program("sh").args(["-c", "echo @addr 127.0.0.1:9; exec sleep 60"]))
    }

    #[test]
    fn a_measurement_that_fails_once_is_repeated_in_a_fresh_server_and_noted() {
        let mut calls = 0;
        let mut pids = Vec::new();
        let runs = cell_rounds(&[fake_server()], 1, 1, |_, _, server, _| {
            calls += 1;
            pids.push(server.pid());
            if calls == 1 {
                Err("c=16: wrk failed: timed out, killed".into())
            } else {
                Ok(vec![("rps@16".into(), 7.0)])
            }
        });
        assert_eq!(calls, 2);
        assert_ne!(
            pids[0], pids[1],
            "the second attempt reuses the first server"
        );
        let row = runs.row(0, "http", "x", ("requests_per_sec", "req/s", 16), "rps@16");
        assert_eq!(row.median(), Some(7.0));
        assert_eq!(
            runs.note(0, RETRIED),
            Some("cell 0 round 0 retried after: c=16: wrk failed: timed out, killed")
        );
    }

    #[test]
    fn a_cell_that_fails_twice_is_not_measured_again_and_the_other_cells_go_on() {
        let mut calls = [0; 2];
        // Cell 0 always fails; cell 1 always works.
        let runs = cell_rounds(&[fake_server()], 2, 2, |cell, _, _, _| {
            calls[cell] += 1;
            match cell {
                0 => Err("c=16: it broke".into()),
                _ => Ok(vec![("rps@64".into(), 5.0)]),
            }
        });
        assert_eq!(calls, [2, 2], "cell 0 measured again after failing twice");
        let row = runs.row(0, "http", "x", ("requests_per_sec", "req/s", 16), "rps@16");
        assert!(matches!(row.outcome, Outcome::Failed(ref why) if why == "cell 0: c=16: it broke"));
        let row = runs.row(0, "http", "x", ("requests_per_sec", "req/s", 64), "rps@64");
        assert_eq!(row.median(), Some(5.0));
    }

    #[test]
    fn a_value_missing_in_some_rounds_keeps_the_others_and_says_so() {
        let mut calls = 0;
        // Three rounds; the second measured no p99 (the cell itself did not fail).
        let runs = cell_rounds(&[fake_server()], 1, 3, |_, _, _, _| {
            calls += 1;
            let mut v = vec![("rps@16".to_string(), calls as f64)];
            if calls != 2 {
                v.push(("p99@16".into(), 10.0 * calls as f64));
            }
            Ok(v)
        });
        let row = runs.row(0, "http", "x", ("p99_latency", "us", 16), "p99@16");
        assert_eq!(row.median(), Some(20.0), "the median of 10 and 30");
        let row = row.and_note("wrk saw a cut histogram");
        assert_eq!(
            row.note.as_deref(),
            Some("from 2 of 3 rounds; wrk saw a cut histogram")
        );
        let row = runs.row(0, "http", "x", ("requests_per_sec", "req/s", 16), "rps@16");
        assert_eq!((row.median(), row.note), (Some(2.0), None));
    }

    #[test]
    fn a_server_that_does_not_start_is_tried_twice_and_fails_every_cell() {
        let broken: Launch = Ok(ChildCommand::program("sh").args(["-c", "echo no >&2; exit 3"]));
        let mut calls = 0;
        let runs = cell_rounds(&[broken], 3, 2, |_, _, _, _| {
            calls += 1;
            Ok(vec![])
        });
        assert_eq!(calls, 0);
        for key in ["rps@16", "rps@64"] {
            let row = runs.row(0, "http", "x", ("requests_per_sec", "req/s", 16), key);
            assert!(matches!(row.outcome, Outcome::Failed(_)), "{key}");
        }
        let retried = runs.note(0, RETRIED).unwrap_or_default();
        assert_eq!(retried.matches("retried").count(), 1, "{retried}");
    }

    #[test]
    fn ratios_pair_the_runs_of_one_round_and_skip_rounds_that_lack_either() {
        let mut calls = 0;
        // Two subjects, two rounds; subject 1's second run measured nothing under `rps@16`.
        let runs = cell_rounds(&[fake_server(), fake_server()], 1, 2, |_, i, _, _| {
            calls += 1;
            Ok(match (i, calls) {
                (0, _) => vec![("rps@16".into(), 30.0 * calls as f64)],
                (1, 1..=2) => vec![("rps@16".into(), 10.0)],
                _ => vec![],
            })
        });
        // Order: round 0 is (0, 1), round 1 is (1, 0): subject 0 ran 1st and 4th.
        assert_eq!(runs.ratios(0, 1, "rps@16"), vec![3.0]);
        assert!(runs.ratios(0, 1, "p99@16").is_empty());
    }

    #[test]
    fn each_cell_runs_all_its_rounds_with_the_servers_interleaved_before_the_next_cell() {
        let order = schedule(2, 3, 3);
        assert_eq!(
            order,
            vec![
                (0, 0, 0),
                (0, 0, 1),
                (0, 0, 2),
                (0, 1, 1),
                (0, 1, 2),
                (0, 1, 0),
                (0, 2, 2),
                (0, 2, 0),
                (0, 2, 1),
                (1, 0, 0),
                (1, 0, 1),
                (1, 0, 2),
                (1, 1, 1),
                (1, 1, 2),
                (1, 1, 0),
                (1, 2, 2),
                (1, 2, 0),
                (1, 2, 1),
            ]
        );
    }

    #[test]
    fn every_subject_is_measured_once_per_round_of_every_cell() {
        let (cells, runs, subjects) = (4, 5, 5);
        let order = schedule(cells, runs, subjects);
        assert_eq!(order.len(), cells * runs * subjects);
        let mut seen = std::collections::HashSet::new();
        for &m in &order {
            assert!(seen.insert(m), "{m:?} measured twice");
        }
        // No subject opens two consecutive rounds of a cell.
        for cell in 0..cells {
            let firsts: Vec<usize> = (0..runs)
                .map(|r| order[(cell * runs + r) * subjects].2)
                .collect();
            assert!(firsts.windows(2).all(|w| w[0] != w[1]), "{firsts:?}");
        }
    }
}
