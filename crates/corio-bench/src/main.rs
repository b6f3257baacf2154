//! `corio-bench`: the article's tables, re-measured on the machine it runs on.
//!
//! # Shape
//!
//! A *case* (`cases/*.rs`) measures one thing for corio and its peers and returns
//! [`Measurement`](report::Measurement)s; this file parses the command line, runs the cases asked
//! for and hands their measurements to `report.rs`, which prints an aligned table per case or
//! one JSON object per line. Cases are listed in one registry, [`cases::CASES`]; `table` runs
//! all of them in that order, so adding a case is one file and one registry line.
//!
//! Measurements that need a fresh process (memory per coroutine, a cold stack arena, a run
//! under callgrind, a peer that may crash) re-execute this binary as
//! `corio-bench __child <case> <args..>`; the case's `child` function runs there and reports
//! `@key value` lines on stdout, which the parent parses (`child.rs`).
//!
//! # Command line
//!
//! ```text
//! corio-bench <case>... [--json] [--quick] [--runs N] [--callgrind]
//! corio-bench table [--json] [--quick] [--runs N]
//! corio-bench list
//! ```
//!
//! The parser is std-only and strict: an unknown case or flag prints the error and the usage
//! and exits with code 2.

mod callgrind;
mod cases;
mod child;
mod gopeer;
mod opts;
mod proc;
mod report;
mod server;
mod stats;

use std::process::ExitCode;

use crate::cases::{CASES, Case};
use crate::opts::Opts;

/// The usage text, printed with `--help` and after a command-line error.
fn usage() -> String {
    let mut s = String::from(
        "usage:\n  corio-bench <case>... [--json] [--quick] [--runs N] [--callgrind]\n  \
         corio-bench table [--json] [--quick] [--runs N]\n  corio-bench list\n\n\
         options:\n  --json       one JSON object per measurement per line, instead of tables\n  \
         --quick      smaller problem sizes (same number of runs, except slow cases)\n  \
         --runs N     repeat each measurement N times (default 5; mem --quick: 3; http, echo, c10k: 3, \
         --quick 1, servers interleaved run by run; pair: pairs of windows, 16, --quick 4)\n  \
         --callgrind  also count instructions under valgrind (switch, create, yield; `table` does it \
         when valgrind is on PATH)\n\ncases:\n",
    );
    for case in CASES {
        s.push_str(&format!("  {:<10} {}\n", case.name, case.about));
    }
    s
}

/// What the command line asks for.
enum Command {
    /// Run these cases, in this order.
    Run(Vec<&'static Case>, Opts),
    /// Print the case names and descriptions.
    List,
    /// Print the usage and exit successfully.
    Help,
    /// Run a case's child half (internal: `__child <case> <args..>`).
    Child(&'static Case, Vec<String>),
}

/// Parses the arguments after the program name.
fn parse(args: &[String]) -> Result<Command, String> {
    if args.first().map(String::as_str) == Some("__child") {
        let name = args.get(1).ok_or("__child needs a case name")?;
        let case = cases::find(name).ok_or_else(|| format!("unknown case `{name}`"))?;
        return Ok(Command::Child(case, args[2..].to_vec()));
    }
    let mut opts = Opts::default();
    let mut selected: Vec<&'static Case> = Vec::new();
    let mut table = false;
    let mut list = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => opts.json = true,
            "--quick" => opts.quick = true,
            "--callgrind" => opts.callgrind = true,
            "--runs" => {
                let v = it.next().ok_or("--runs needs a number")?;
                opts.runs = Some(parse_runs(v)?);
            }
            "-h" | "--help" | "help" => return Ok(Command::Help),
            "table" => table = true,
            "list" => list = true,
            s if s.starts_with("--runs=") => opts.runs = Some(parse_runs(&s["--runs=".len()..])?),
            s if s.starts_with('-') => return Err(format!("unknown option `{s}`")),
            name => match cases::find(name) {
                Some(case) => selected.push(case),
                None => return Err(format!("unknown case `{name}` (try `corio-bench list`)")),
            },
        }
    }
    match (table, list, selected.is_empty()) {
        (false, true, true) => Ok(Command::List),
        (true, false, true) => {
            opts.table = true;
            Ok(Command::Run(CASES.iter().collect(), opts))
        }
        (false, false, false) => Ok(Command::Run(selected, opts)),
        (false, false, true) => Err("no case given".into()),
        _ => Err("`table` and `list` take no case names and do not mix".into()),
    }
}

fn parse_runs(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("--runs needs a positive integer, not `{v}`")),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("corio-bench: {e}\n\n{}", usage());
            return ExitCode::from(2);
        }
    };
    match command {
        Command::Help => print!("{}", usage()),
        Command::List => {
            for case in CASES {
                println!("{:<10} {}", case.name, case.about);
            }
        }
        Command::Child(case, args) => {
            let Some(child) = case.child else {
                eprintln!("corio-bench: case `{}` has no child half", case.name);
                return ExitCode::from(2);
            };
            child::install_panic_exit();
            if let Err(e) = child(&args) {
                eprintln!("corio-bench __child {}: {e}", case.name);
                return ExitCode::from(2);
            }
        }
        Command::Run(cases, opts) => {
            for case in cases {
                eprintln!("corio-bench: running {} ...", case.name);
                let measurements = (case.run)(&opts);
                report::print(case, &measurements, &opts);
            }
        }
    }
    ExitCode::SUCCESS
}
