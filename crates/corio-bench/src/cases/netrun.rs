//! Rounds of server runs, shared by the network cases (`http`, `echo`, `c10k`).
//!
//! Each round starts every server once (a fresh process, pinned to the server CPU), in the
//! rotating order of [`run_order`](super::run_order), lets the case measure it with a closure
//! (wrk, a load client, 10,000 idle connections), and kills it. A server that fails to start
//! or to serve is not run again: the failure is a property of the implementation, and its rows
//! say why. The closure returns named values (`requests_per_sec@64`); [`NetRuns::row`] turns
//! one name's values over the rounds into a table row.

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

/// The values one measurement of one server produced, by name.
pub type Values = Vec<(String, f64)>;

/// What the rounds produced for every subject: one map per round, or why there is none.
pub struct NetRuns {
    per_subject: Vec<Result<Vec<HashMap<String, f64>>, Outcome>>,
    notes: Vec<HashMap<String, String>>,
}

/// Runs `runs` rounds over `subjects`, measuring each started server with `measure`, which
/// may also leave notes (`&mut HashMap<String, String>`, last round wins).
pub fn rounds(
    subjects: &[Launch],
    runs: usize,
    mut measure: impl FnMut(usize, &mut Server, &mut HashMap<String, String>) -> Result<Values, String>,
) -> NetRuns {
    let mut per_subject: Vec<Result<Vec<HashMap<String, f64>>, Outcome>> = subjects
        .iter()
        .map(|s| match s {
            Ok(_) => Ok(Vec::new()),
            Err(why) => Err(why.clone()),
        })
        .collect();
    let mut notes = vec![HashMap::new(); subjects.len()];
    for round in 0..runs {
        for i in super::run_order(round, subjects.len()) {
            let (Ok(done), Ok(command)) = (&mut per_subject[i], &subjects[i]) else {
                continue;
            };
            let result = Server::start(command).and_then(|mut server| {
                let values = measure(i, &mut server, &mut notes[i])?;
                if server.alive() {
                    Ok(values)
                } else {
                    Err("the server died under load".into())
                }
            });
            match result {
                Ok(values) => done.push(values.into_iter().collect()),
                Err(why) => per_subject[i] = Err(Outcome::Failed(why)),
            }
        }
    }
    NetRuns { per_subject, notes }
}

impl NetRuns {
    /// The row of value `key` for subject `i`.
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
                } else {
                    Measurement::failed(case, imp, metric, unit, n, format!("no `{key}` measured"))
                }
            }
            Err(Outcome::Skipped(why)) => Measurement::skipped(case, imp, metric, unit, n, why),
            Err(Outcome::Failed(why)) => Measurement::failed(case, imp, metric, unit, n, why),
            Err(Outcome::Value(_)) => unreachable!("a subject fails without a value"),
        }
    }

    /// The note subject `i` left under `key` in its last round, if any.
    pub fn note(&self, i: usize, key: &str) -> Option<&str> {
        self.notes[i].get(key).map(String::as_str)
    }
}
