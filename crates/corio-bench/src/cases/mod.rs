//! The registry of cases.
//!
//! A case is one file here with a `pub const CASE: Case`, and one line in [`CASES`]; `table`
//! runs them in the order listed. A case that needs a fresh process gives a `child` function,
//! which `corio-bench __child <name> <args..>` runs (see `child.rs`).

use crate::opts::Opts;
use crate::report::Measurement;

mod c10k;
mod chan;
mod create;
mod echo;
mod fairness;
mod fresh;
mod r#gen;
mod http;
mod idle;
mod mem;
mod mutex;
mod netrun;
mod pair;
mod servers;
mod skynet;
mod spawn;
mod switch;
mod r#yield;

/// The half of a case that runs in a child process: gets the arguments after the case name,
/// reports with `child::emit`, and returns an error message on bad arguments.
pub type ChildMain = fn(&[String]) -> Result<(), String>;

/// One benchmark: a name on the command line, a one-line description, and how to run it.
pub struct Case {
    /// The name on the command line (`switch`).
    pub name: &'static str,
    /// One line for `list` and the table heading.
    pub about: &'static str,
    /// The implementation the table's ratio column divides by, if any.
    pub reference: Option<&'static str>,
    /// Measures, in this process and children, and returns the aggregated measurements.
    pub run: fn(&Opts) -> Vec<Measurement>,
    /// The half that runs in a child process (`__child <name> <args..>`), if the case has one.
    pub child: Option<ChildMain>,
}

/// Every case, in the order `table` runs them.
pub static CASES: &[Case] = &[
    switch::CASE, //
    create::CASE,
    mem::CASE,
    r#gen::CASE,
    r#yield::CASE,
    spawn::CASE,
    skynet::CASE,
    fairness::CASE,
    idle::CASE,
    mutex::CASE,
    chan::CASE,
    http::CASE,
    echo::CASE,
    c10k::CASE,
    pair::CASE,
];

/// The case named `name`.
pub fn find(name: &str) -> Option<&'static Case> {
    CASES.iter().find(|c| c.name == name)
}

/// The order in which run `run` visits `len` implementations: rotated by one each run
/// (A B C, B C A, C A B, ..), so that no implementation always runs first, right after a
/// warm-up or a slower neighbour, or always last.
pub fn run_order(run: usize, len: usize) -> impl Iterator<Item = usize> {
    (0..len).map(move |i| (run + i) % len)
}
