//! `http`: requests per second and p99 latency of an HTTP/1.1 hello-world server on one core.
//!
//! Every server runs in its own process pinned to CPU 0 with one worker thread; `wrk` runs
//! pinned to CPU 1 (`taskset`), one thread, keep-alive, against `GET /plaintext`
//! (`Hello, World!`), at 16, 64 and 256 connections for 10 s (`--quick`: 64 connections for
//! 1 s), after a discarded 1 s warm-up (none under `--quick`). Then a pipelined run: 256
//! connections (`--quick`: 64), each sending 16 requests per round trip, through a wrk Lua
//! script this case writes to a temporary file. wrk's `--latency` distribution gives the p99;
//! with pipelining it is the latency of a batch of 16, when wrk has one (its pipelined
//! distribution is often empty, all percentiles 0.00us: that row then reads "no `p99@piped`
//! measured").
//!
//! | row | server |
//! |---|---|
//! | corio-stackful | `examples/http_hello`: a stackful coroutine per connection, httparse, `workers(1)` |
//! | corio-hyper | `examples/hyper_hello`: hyper 1.x on corio tasks, `workers(1)` |
//! | may_minihttp | may_minihttp on may with 1 worker |
//! | hyper-tokio | hyper 1.x on tokio `current_thread` (hyper-util's `TokioIo`) |
//! | go | net/http, `GOMAXPROCS=1` |
//!
//! Without `wrk` on `PATH` every row says "skipped: wrk not installed".

use std::time::Duration;

use super::Case;
use super::fresh::Launch;
use super::netrun::{self, Values, launch};
use crate::child::ChildCommand;
use crate::opts::Opts;
use crate::report::{Measurement, Outcome};
use crate::server::{self, LOAD_CPU};

/// The `http` case.
pub const CASE: Case = Case {
    name: "http",
    about: "HTTP/1.1 hello world on one core: requests/s and p99 latency under wrk",
    reference: Some("go"),
    run,
    child: Some(child_main),
};

/// (row name, server, note).
const IMPLS: [(&str, &str, &str); 5] = [
    ("corio-stackful", "corio", "examples/http_hello, workers(1)"),
    (
        "corio-hyper",
        "corio-hyper",
        "examples/hyper_hello, workers(1)",
    ),
    ("may_minihttp", "may_minihttp", "may, 1 worker"),
    ("hyper-tokio", "hyper-tokio", "tokio current_thread"),
    ("go", "go", "net/http, GOMAXPROCS=1"),
];

/// Requests per wrk round trip in the pipelined run.
const DEPTH: usize = 16;

/// The wrk script of the pipelined run: `DEPTH` requests sent back to back.
const PIPELINE_LUA: &str = "-- written by corio-bench: 16 pipelined GET /plaintext per round trip\n\
init = function(args)\n  local r = {}\n  for i = 1, 16 do r[i] = wrk.format(nil, \"/plaintext\") end\n  \
req = table.concat(r)\nend\nrequest = function() return req end\n";

/// The path of `wrk` if it is on `PATH`.
fn wrk_tool() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("wrk"))
        .find(|p| p.is_file())
}

fn run(opts: &Opts) -> Vec<Measurement> {
    let secs: u64 = opts.size(10, 1);
    let conns: Vec<u64> = opts.size(vec![16, 64, 256], vec![64]);
    let piped_conns: u64 = opts.size(256, 64);
    let warmup = !opts.quick;
    let runs = opts.runs(3, 1);
    let wrk = wrk_tool();
    let script =
        std::env::temp_dir().join(format!("corio-bench-pipeline-{}.lua", std::process::id()));
    let launches: Vec<Launch> = IMPLS
        .iter()
        .map(|(_, server, _)| match &wrk {
            None => Err(Outcome::Skipped("wrk not installed".into())),
            Some(_) => launch("http", server, "httpserve"),
        })
        .collect();
    let script_ok = std::fs::write(&script, PIPELINE_LUA).is_ok();
    let results = netrun::rounds(&launches, runs, |_, srv, notes| {
        let wrk = wrk
            .as_deref()
            .expect("servers start only when wrk is installed");
        let url = format!("http://{}/plaintext", srv.addr);
        if warmup {
            wrk_run(wrk, &url, 64, 1, None)?;
        }
        let mut values: Values = Vec::new();
        let mut problems = Vec::new();
        for &c in &conns {
            let r = wrk_run(wrk, &url, c, secs, None)?;
            values.push((format!("rps@{c}"), r.rps));
            values.push((format!("p99@{c}"), r.p99_us));
            problems.extend(r.errors.map(|e| format!("c={c}: {e}")));
        }
        if script_ok {
            let r = wrk_run(wrk, &url, piped_conns, secs, Some(&script))?;
            values.push(("rps@piped".into(), r.rps));
            // wrk's latency distribution of a pipelined run is often empty: its percentiles
            // read 0.00us although the mean is not 0. A 0 is no measurement (the row then says
            // "no `p99@piped` measured"), never a p99 of 0.
            if r.p99_us > 0.0 {
                values.push(("p99@piped".into(), r.p99_us));
            }
            problems.extend(r.errors.map(|e| format!("pipelined: {e}")));
        }
        if !problems.is_empty() {
            notes.insert("errors".into(), problems.join("; "));
        }
        Ok(values)
    });
    let _ = std::fs::remove_file(&script);
    let mut out = Vec::new();
    let mut rows = |metric, unit, n, key: &str, what: String| {
        for (i, (imp, _, note)) in IMPLS.iter().enumerate() {
            let mut full = format!("{note}; {what}; {}", server::pin_note());
            if let Some(e) = results.note(i, "errors") {
                full = format!("{full}; wrk saw {e}");
            }
            out.push(
                results
                    .row(i, "http", imp, (metric, unit, n), key)
                    .with_note(full),
            );
        }
    };
    for &c in &conns {
        rows(
            "requests_per_sec",
            "req/s",
            c,
            &format!("rps@{c}"),
            format!("{c} conns, {secs} s"),
        );
        rows(
            "p99_latency",
            "us",
            c,
            &format!("p99@{c}"),
            format!("{c} conns, {secs} s"),
        );
    }
    let what = format!("{piped_conns} conns × {DEPTH} pipelined, {secs} s");
    rows(
        "pipelined_req_per_sec",
        "req/s",
        piped_conns,
        "rps@piped",
        what.clone(),
    );
    rows(
        "pipelined_p99",
        "us",
        piped_conns,
        "p99@piped",
        format!("{what}; per batch"),
    );
    out
}

/// What one wrk run measured.
struct WrkResult {
    rps: f64,
    p99_us: f64,
    /// Socket errors or non-2xx responses, if wrk reported any.
    errors: Option<String>,
}

/// Runs `wrk -t1 -c<conns> -d<secs>s --latency` (pinned to the load CPU) against `url`.
fn wrk_run(
    wrk: &std::path::Path,
    url: &str,
    conns: u64,
    secs: u64,
    script: Option<&std::path::Path>,
) -> Result<WrkResult, String> {
    let mut args = vec![
        "-t1".to_string(),
        format!("-c{conns}"),
        format!("-d{secs}s"),
        "--timeout".into(),
        "5s".into(),
        "--latency".into(),
    ];
    if let Some(s) = script {
        args.push("-s".into());
        args.push(s.display().to_string());
    }
    args.push(url.to_string());
    let out = ChildCommand::program(wrk)
        .wrapper(server::pinned(LOAD_CPU))
        .args(args)
        .timeout(Duration::from_secs(secs + 60))
        .run()
        .map_err(|e| format!("could not run wrk: {e}"))?;
    if !out.success() {
        return Err(format!("wrk failed: {}", out.failure()));
    }
    parse_wrk(&out.stdout)
}

/// Reads requests/s, the p99 latency and any errors from wrk's `--latency` output.
fn parse_wrk(text: &str) -> Result<WrkResult, String> {
    let field = |prefix: &str| {
        text.lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(prefix).map(str::trim))
    };
    let rps: f64 = field("Requests/sec:")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no Requests/sec in wrk's output: {text:?}"))?;
    let p99_us = field("99%")
        .and_then(parse_duration_us)
        .ok_or_else(|| format!("no 99% latency in wrk's output: {text:?}"))?;
    let mut errors = Vec::new();
    if let Some(e) = field("Socket errors:") {
        errors.push(format!("socket errors ({e})"));
    }
    if let Some(e) = field("Non-2xx or 3xx responses:") {
        errors.push(format!("{e} non-2xx responses"));
    }
    let errors = (!errors.is_empty()).then(|| errors.join(", "));
    Ok(WrkResult {
        rps,
        p99_us,
        errors,
    })
}

/// `850.00us`, `1.23ms`, `2.00s`, `3.00m` as microseconds.
fn parse_duration_us(v: &str) -> Option<f64> {
    let split = v.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = v.split_at(split);
    let num: f64 = num.parse().ok()?;
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => return None,
    };
    Some(num * scale)
}

/// `__child http serve <server>`.
fn child_main(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("serve") => super::servers::http(&child_arg(args, 1)?),
        _ => Err("usage: __child http serve <server>".into()),
    }
}

fn child_arg(args: &[String], i: usize) -> Result<String, String> {
    crate::child::arg(args, i, "server")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_wrks_latency_output() {
        let text = "Running 1s test @ http://127.0.0.1:1/plaintext\n  1 threads and 64 connections\n  \
            Latency Distribution\n     50%  420.00us\n     75%  500.00us\n     90%    1.10ms\n     \
            99%    2.50ms\n  12345 requests in 1.00s, 1.50MB read\n  \
            Socket errors: connect 0, read 3, write 0, timeout 0\nRequests/sec:  12345.67\n\
            Transfer/sec:      1.50MB\n";
        let r = parse_wrk(text).unwrap();
        assert_eq!(r.rps, 12345.67);
        assert_eq!(r.p99_us, 2500.0);
        assert_eq!(
            r.errors.as_deref(),
            Some("socket errors (connect 0, read 3, write 0, timeout 0)")
        );
        assert_eq!(parse_duration_us("850.00us"), Some(850.0));
        assert_eq!(parse_duration_us("1.50s"), Some(1.5e6));
        assert!(parse_wrk("garbage").is_err());
    }
}
