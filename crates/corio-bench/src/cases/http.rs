//! `http`: requests per second and p99 latency of an HTTP/1.1 hello-world server on one core.
//!
//! Every server runs in its own process pinned to CPU 0 with one worker thread; `wrk` runs
//! pinned to CPU 1 (`taskset`), one thread, keep-alive, against `GET /plaintext`
//! (`Hello, World!`), at 16, 64 and 256 connections for 10 s (`--quick`: 64 connections for
//! 1 s), each after a discarded 1 s warm-up at 64 connections (none under `--quick`). Then a
//! pipelined run: 256 connections (`--quick`: 64), each sending 16 requests per round trip,
//! through a wrk Lua script this case writes to a temporary file. wrk's `--latency` distribution gives the p99
//! of the keep-alive runs. With pipelining the p99 is of a batch of 16 (wrk records one
//! latency per batch, when the connection's 16th response arrives), computed here from the
//! histogram the script's `done` prints, because wrk's own pipelined percentiles are wrong:
//!
//! wrk 4.1 corrects its histogram for coordinated omission (`stats_correct`): every latency
//! `n >= 2E` adds a copy of its count at `n - E`, `n - 2E`, ... down to just above `E`, where
//! `E` = run time / (responses per connection). With 16 requests per round trip, `E` is the
//! interval between *responses*, 16 times shorter than a batch's round trip, so the copies
//! land between `E` and `2E` — below the fastest batch. The copies are counted in the total but
//! lie below the histogram's `min`, where `stats_percentile` never looks: it returns a value
//! too high, or (when the copies are more than 1 % of the total) runs out of samples and
//! prints `0.00us`. That is what the Rust servers showed: their batches are fast and even
//! (the fastest batch above `2E`), Go's are not (its fastest below `E`, so nothing is lost).
//! The copies come from the original counts only, so [`batch_p99_us`] undoes the correction
//! exactly (from the largest latency down) and takes the p99 of the batches as recorded; the
//! total it recovers equals wrk's responses / 16.
//!
//! Every (connection count, server) cell is measured `--runs` times (default 3, `--quick` 1),
//! each run in a fresh server process after its own warm-up, and the rounds of one connection
//! count interleave the servers (A B C D E, B C D E A, C D E A B) before the next count starts
//! (`netrun.rs`'s module doc says why); the table gives each cell's median requests/s and
//! median p99, with min – max over the runs beside them.
//!
//! | row | server |
//! |---|---|
//! | corio-stackful | `examples/http_hello`: a stackful coroutine per connection, httparse, `workers(1)` |
//! | corio-hyper | `examples/hyper_hello`: hyper 1.x on corio tasks, `workers(1)` |
//! | may_minihttp | may_minihttp on may with 1 worker |
//! | hyper-tokio | hyper 1.x on tokio `current_thread` (hyper-util's `TokioIo`) |
//! | go | net/http, `GOMAXPROCS=1` |
//!
//! Below them, `*_ratio` rows set each corio server against the peer it competes with
//! ([`PAIRS`]: `http_hello` against may_minihttp, `hyper_hello` against hyper on tokio), round
//! by round: each round's value of the one divided by the other's, the two runs at most a few
//! minutes apart, so that a drift of the shared machine's load divides out; the median of the
//! rounds, their range, and in the note in how many rounds the ratio was above 1 (for
//! requests/s, corio ahead; for p99 and CPU per request, corio's figure higher).
//!
//! The `*_cpu_per_req` rows are the server's CPU time (user + system, all its threads, from
//! its process CPU clock) over the measured run divided by the requests wrk completed, and each
//! note gives the share of one CPU the server used (the median over the rounds; a corio
//! server's includes its worker's spin before it parks, up to 50 µs each time it runs dry). Near 100 %
//! the server was the bottleneck and requests/s is its capacity; well below, wrk (on the other
//! CPU) was, every server's requests/s is wrk's, and the CPU per request is what tells the
//! servers apart.
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
    about: "HTTP/1.1 hello world on one core: requests/s, p99 latency and server CPU per request under wrk",
    reference: Some("go"),
    run,
    child: Some(child_main),
};

/// (row name, server, note).
pub(super) const IMPLS: [(&str, &str, &str); 5] = [
    (
        "corio-stackful",
        "corio",
        "examples/http_hello, workers(1) run_here",
    ),
    (
        "corio-hyper",
        "corio-hyper",
        "examples/hyper_hello, workers(1) run_here",
    ),
    ("may_minihttp", "may_minihttp", "may, 1 worker"),
    ("hyper-tokio", "hyper-tokio", "tokio current_thread"),
    ("go", "go", "net/http, GOMAXPROCS=1"),
];

/// corio's servers and the peer each is compared with round by round (`*_ratio` rows: the
/// first's value divided by the second's, per round): the same parser's server on may, and
/// the same hyper on tokio.
pub(super) const PAIRS: [(&str, &str); 2] = [
    ("corio-stackful", "may_minihttp"),
    ("corio-hyper", "hyper-tokio"),
];

/// Requests per wrk round trip in the pipelined run.
pub(super) const DEPTH: usize = 16;

/// The wrk script of the pipelined run: `DEPTH` requests sent back to back.
pub(super) const PIPELINE_LUA: &str = "-- written by corio-bench: 16 pipelined GET /plaintext per round trip\n\
init = function(args)\n  local r = {}\n  for i = 1, 16 do r[i] = wrk.format(nil, \"/plaintext\") end\n  \
req = table.concat(r)\nend\nrequest = function() return req end\n\
-- the histogram as wrk left it, from its largest latency down, for at most 5 s of wrk's CPU:\n\
-- latency(i) walks the histogram from its minimum at every call (see batch_p99_us in\n\
-- corio-bench's http.rs), and the p99 needs only the top\n\
done = function(summary, latency, requests)\n  \
io.write(string.format(\"@wrk duration %d responses %d\\n\", summary.duration, summary.requests))\n  \
local stop = os.clock() + 5\n  \
for i = #latency, 1, -1 do\n    \
if i % 64 == 0 and os.clock() > stop then\n      \
io.write(string.format(\"@lat-cut %d\\n\", i))\n      return\n    end\n    \
local v, c = latency(i)\n    io.write(string.format(\"@lat %d %d\\n\", v, c))\n  end\nend\n";

/// The path of `wrk` if it is on `PATH`.
pub(super) fn wrk_tool() -> Option<std::path::PathBuf> {
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
    // The cells: each keep-alive connection count, then the pipelined run (if its script
    // could be written). Each cell's rounds interleave the servers (netrun's module doc).
    let mut cells: Vec<Option<u64>> = conns.iter().map(|&c| Some(c)).collect();
    if script_ok {
        cells.push(None);
    }
    let results = netrun::cell_rounds(&launches, cells.len(), runs, |cell, _, srv, notes| {
        let wrk = wrk
            .as_deref()
            .expect("servers start only when wrk is installed");
        let url = format!("http://{}/plaintext", srv.addr);
        let label = cells[cell].map_or("pipelined".to_string(), |c| format!("c={c}"));
        let wrk_run = |conns, secs, script| {
            wrk_run(wrk, &url, conns, secs, script).map_err(|e| format!("{label}: {e}"))
        };
        if warmup {
            wrk_run(64, 1, None)?;
        }
        let mut values: Values = Vec::new();
        let mut problems = Vec::new();
        // The server's CPU over the run: per request, and the share of its CPU it used
        // (near 1: the server was the bottleneck; well below: wrk was).
        let cpu_before = srv.cpu_time();
        let measured = |r: &WrkResult, values: &mut Values, key: &str| {
            let cpu = srv.cpu_since(cpu_before);
            server::push_cpu(values, key, cpu, r.requests, r.duration);
        };
        match cells[cell] {
            Some(c) => {
                let r = wrk_run(c, secs, None)?;
                measured(&r, &mut values, &c.to_string());
                values.push((format!("rps@{c}"), r.rps));
                values.push((format!("p99@{c}"), r.p99_us));
                problems.extend(r.errors.map(|e| format!("c={c}: {e}")));
            }
            None => {
                let r = wrk_run(piped_conns, secs, Some(&script))?;
                measured(&r, &mut values, "piped");
                values.push(("rps@piped".into(), r.rps));
                // Not wrk's pipelined percentile (see the module doc): the batches' own p99.
                match batch_p99_us(&r.text, piped_conns) {
                    Ok(p99) => values.push(("p99@piped".into(), p99)),
                    Err(e) => problems.push(format!("pipelined p99: {e}")),
                }
                problems.extend(r.errors.map(|e| format!("pipelined: {e}")));
            }
        }
        if !problems.is_empty() {
            // Every cell's and round's problems, not only the last one's.
            let all = notes.entry("errors".into()).or_default();
            if !all.is_empty() {
                all.push_str("; ");
            }
            all.push_str(&problems.join("; "));
        }
        Ok(values)
    });
    let _ = std::fs::remove_file(&script);
    let mut out = Vec::new();
    // `busy`: the key of the server's busy share, for the CPU rows' notes.
    let mut rows = |metric, unit, n, key: &str, busy: Option<&str>, what: String| {
        for (i, (imp, _, note)) in IMPLS.iter().enumerate() {
            let mut full = format!("{note}; {what}; {}", server::pin_note());
            if let Some(share) = busy.and_then(|b| results.median(i, b)) {
                full = format!("{full}; server busy {:.0} % of one CPU", share * 100.0);
            }
            if let Some(e) = results.note(i, "errors") {
                full = format!("{full}; wrk saw {e}");
            }
            if let Some(r) = results.note(i, netrun::RETRIED) {
                full = format!("{full}; {r}");
            }
            out.push(
                results
                    .row(i, "http", imp, (metric, unit, n), key)
                    .and_note(full),
            );
        }
    };
    for &c in &conns {
        let what = format!("{c} conns, {secs} s");
        rows(
            "requests_per_sec",
            "req/s",
            c,
            &format!("rps@{c}"),
            None,
            what.clone(),
        );
        rows(
            "p99_latency",
            "us",
            c,
            &format!("p99@{c}"),
            None,
            what.clone(),
        );
        let busy = format!("busy@{c}");
        rows(
            "server_cpu_per_req",
            "us",
            c,
            &format!("cpu_us@{c}"),
            Some(&busy),
            what,
        );
    }
    let what = format!("{piped_conns} conns × {DEPTH} pipelined, {secs} s");
    rows(
        "pipelined_req_per_sec",
        "req/s",
        piped_conns,
        "rps@piped",
        None,
        what.clone(),
    );
    rows(
        "pipelined_p99",
        "us",
        piped_conns,
        "p99@piped",
        None,
        format!("{what}; per batch"),
    );
    rows(
        "pipelined_cpu_per_req",
        "us",
        piped_conns,
        "cpu_us@piped",
        Some("busy@piped"),
        what,
    );
    // corio's two servers against the peer each competes with, round by round.
    let mut paired = |metric, n, key: &str, what: String| {
        for (a, b) in PAIRS {
            let ia = IMPLS.iter().position(|(imp, ..)| *imp == a);
            let ib = IMPLS.iter().position(|(imp, ..)| *imp == b);
            let (Some(ia), Some(ib)) = (ia, ib) else {
                continue;
            };
            out.push(results.ratio_row("http", (ia, a), (ib, b), (metric, n), key, &what));
        }
    };
    for &c in &conns {
        let what = format!("{c} conns, {secs} s");
        paired("rps_ratio", c, &format!("rps@{c}"), what.clone());
        paired("p99_ratio", c, &format!("p99@{c}"), what.clone());
        paired("cpu_ratio", c, &format!("cpu_us@{c}"), what);
    }
    let what = format!("{piped_conns} conns × {DEPTH} pipelined, {secs} s");
    paired(
        "pipelined_rps_ratio",
        piped_conns,
        "rps@piped",
        what.clone(),
    );
    paired(
        "pipelined_p99_ratio",
        piped_conns,
        "p99@piped",
        what.clone(),
    );
    paired("pipelined_cpu_ratio", piped_conns, "cpu_us@piped", what);
    out
}

/// What one wrk run measured.
pub(super) struct WrkResult {
    pub(super) rps: f64,
    pub(super) p99_us: f64,
    /// Requests (responses) completed, and in what time: wrk's `N requests in 10.00s`.
    pub(super) requests: f64,
    pub(super) duration: Duration,
    /// wrk's whole output (the pipelined script's `done` adds the histogram to it).
    pub(super) text: String,
    /// Socket errors or non-2xx responses, if wrk reported any.
    pub(super) errors: Option<String>,
}

/// Runs `wrk -t1 -c<conns> -d<secs>s --latency` (pinned to the load CPU) against `url`.
pub(super) fn wrk_run(
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
        .timeout(Duration::from_secs(secs + 20))
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
    // `  12345 requests in 10.00s, 1.50MB read`
    let (requests, duration) = text
        .lines()
        .find_map(|l| {
            let (n, rest) = l.trim().split_once(" requests in ")?;
            let secs = parse_duration_us(rest.split(',').next()?.trim())? / 1e6;
            Some((n.parse::<f64>().ok()?, Duration::from_secs_f64(secs)))
        })
        .ok_or_else(|| format!("no `requests in` line in wrk's output: {text:?}"))?;
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
        requests,
        duration,
        text: text.to_string(),
        errors,
    })
}

/// The p99 latency of a pipelined run's batches, in µs, from the `@wrk` and `@lat` lines the
/// pipelined script's `done` prints: wrk's histogram with its coordinated-omission correction
/// undone (the module doc says why wrk's own percentile is wrong here).
///
/// wrk's correction, with `E` = duration / (responses / `conns`) in integer µs, runs over
/// `n` from `2E` up to the maximum and adds the *original* count of `n` at `n - kE` for every
/// `k >= 1` with `n - kE > E` (it only ever adds below `n`, so a count is read before anything
/// is added to it). So the count added at a latency `m > E` is the sum of the original counts
/// at `m + E`, `m + 2E`, ...: going down from the largest latency, each original count is the
/// histogram's minus the running sum of the originals already recovered in its residue class
/// modulo `E`. The copies below the histogram's minimum are not printed, and not needed.
///
/// wrk's script API reads the histogram one entry at a time, and each `latency(i)` walks it
/// from its minimum to the `i`-th entry: reading it all is quadratic. A server whose batches
/// spread over hundreds of milliseconds (Go's net/http, 137,000 entries over 259 ms) kept
/// wrk printing for 17 s after a 10 s run, past the bench's timeout, which failed the run
/// ("wrk failed: timed out, killed"). So the script prints the histogram from the largest
/// latency down, and stops after 5 s of wrk's CPU time with `@lat-cut`. The recovery above
/// goes from the top down anyway, and the p99 is the latency at which the originals counted
/// from the top first reach the top 1 %. A complete histogram gives the total of originals
/// exactly; a cut one takes it as wrk's responses / [`DEPTH`], which counts the batches still
/// incomplete at the end of the run as well (at most one per connection: a rank off by a few
/// in hundreds of thousands). If the printed top holds fewer originals than the top 1 %, there
/// is no p99, and the error says so.
pub(super) fn batch_p99_us(text: &str, conns: u64) -> Result<f64, String> {
    let mut header = None;
    let mut hist: Vec<(u64, u64)> = Vec::new();
    let mut cut = false;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok());
        match words.first() {
            Some(&"@wrk") => header = num(2).zip(num(4)),
            Some(&"@lat") => hist.push(num(1).zip(num(2)).ok_or("a bad @lat line")?),
            Some(&"@lat-cut") => cut = true,
            _ => {}
        }
    }
    let (duration, responses) = header.ok_or("no @wrk line in wrk's output")?;
    let per_conn = responses / conns.max(1);
    if per_conn == 0 || hist.is_empty() {
        return Err("no batch completed".into());
    }
    let e = duration / per_conn;
    hist.sort_unstable();
    // Originals, from the largest latency down; `later[r]` sums the originals recovered so far
    // whose latency is `r` modulo `e` (all of them above the current one).
    let mut later = std::collections::HashMap::new();
    let mut originals = Vec::with_capacity(hist.len());
    for &(latency, count) in hist.iter().rev() {
        let class = later.entry(latency % e.max(1)).or_insert(0u64);
        let added = if latency > e { *class } else { 0 };
        let original = count.checked_sub(added).ok_or_else(|| {
            format!("the histogram is not wrk's correction of one (at {latency} us)")
        })?;
        *class += original;
        originals.push((latency, original));
    }
    let total = if cut {
        responses / DEPTH as u64
    } else {
        originals.iter().map(|&(_, c)| c).sum()
    };
    let rank = (total as f64 * 0.99).ceil().max(1.0) as u64;
    // The rank-th smallest is the (total - rank + 1)-th largest.
    let from_top = total - rank + 1;
    let mut seen = 0;
    for &(latency, count) in &originals {
        seen += count;
        if seen >= from_top {
            return Ok(latency as f64);
        }
    }
    Err(if cut {
        format!(
            "the top of wrk's histogram that could be read back in time holds {seen} batches, \
             fewer than the slowest 1 % of {total}"
        )
    } else {
        "no batch completed".into()
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
        assert_eq!((r.requests, r.duration), (12345.0, Duration::from_secs(1)));
        assert_eq!(
            r.errors.as_deref(),
            Some("socket errors (connect 0, read 3, write 0, timeout 0)")
        );
        assert_eq!(parse_duration_us("850.00us"), Some(850.0));
        assert_eq!(parse_duration_us("1.50s"), Some(1.5e6));
        assert!(parse_wrk("garbage").is_err());
    }

    /// wrk 4.1's `stats_correct` (src/stats.c), applied to a histogram indexed by µs.
    fn wrk_correct(hist: &mut [u64], max: usize, e: usize) {
        for n in 2 * e..=max {
            let count = hist[n];
            let mut m = n - e;
            while count > 0 && m > e {
                hist[m] += count;
                m -= e;
            }
        }
    }

    /// wrk 4.1's `stats_percentile`: scans from the minimum *recorded* latency only.
    fn wrk_percentile(hist: &[u64], min: usize, max: usize, count: u64, p: f64) -> usize {
        let rank = ((p / 100.0) * count as f64 + 0.5).round() as u64;
        let mut total = 0;
        for (i, &c) in hist.iter().enumerate().take(max + 1).skip(min) {
            total += c;
            if total >= rank {
                return i;
            }
        }
        0
    }

    #[test]
    fn the_pipelined_p99_is_recovered_where_wrks_own_reads_zero() {
        // 64 connections, 1,000 batches of 16 each in 1 s: E = 1_000_000 / 16_000 = 62 µs,
        // every batch 300-420 µs, and one slow batch in a hundred at 2 ms.
        let (conns, duration, e) = (64u64, 1_000_000u64, 62usize);
        let mut hist = vec![0u64; 2_001];
        let mut batches = 0;
        for i in 0..64_000usize {
            let latency = if i % 100 == 99 { 2_000 } else { 300 + i % 121 };
            hist[latency] += 1;
            batches += 1;
        }
        let p99_true = 420.0; // 99 % of the batches are at most 420 µs
        let (min, max) = (300, 2_000);
        let mut corrected = hist.clone();
        wrk_correct(&mut corrected, max, e);
        let count: u64 = corrected.iter().sum();
        // What wrk prints for this run: its copies below `min` are counted but never scanned.
        assert_eq!(wrk_percentile(&corrected, min, max, count, 99.0), 0);

        let mut text = format!(
            "Requests/sec: 1.0\n@wrk duration {duration} responses {}\n",
            batches * 16
        );
        for (latency, &c) in corrected.iter().enumerate().skip(min) {
            if c > 0 {
                text.push_str(&format!("@lat {latency} {c}\n"));
            }
        }
        assert_eq!(batch_p99_us(&text, conns), Ok(p99_true));
    }

    #[test]
    fn a_histogram_cut_short_gives_the_p99_if_its_printed_top_reaches_it() {
        // 1,000 batches: 980 at 100 µs, 10 at 3,000, 10 at 5,000. E = 1 s / (16,000 / 16) =
        // 1,000 µs, so wrk added copies of the 5,000s at 4,000, 3,000 and 2,000 µs, and of the
        // 3,000s at 2,000. The 990th batch, the p99, is at 3,000 µs.
        let head = "@wrk duration 1000000 responses 16000\n";
        let top = "@lat 5000 10\n@lat 4000 10\n@lat 3000 20\n";
        let full = format!("{head}{top}@lat 2000 20\n@lat 100 980\n");
        assert_eq!(batch_p99_us(&full, 16), Ok(3000.0));
        // Printed from the top and cut after 3,000 µs: the same p99.
        let cut = format!("{head}{top}@lat-cut 2\n");
        assert_eq!(batch_p99_us(&cut, 16), Ok(3000.0));
        // Cut after the slowest entry alone: 10 batches, not the slowest 11 of 1,000.
        let too_short = format!("{head}@lat 5000 10\n@lat-cut 4\n");
        let why = batch_p99_us(&too_short, 16).unwrap_err();
        assert!(
            why.contains("holds 10 batches, fewer than the slowest 1 % of 1000"),
            "{why}"
        );
    }

    #[test]
    fn a_pipelined_run_without_the_histogram_has_no_p99() {
        assert!(batch_p99_us("Requests/sec: 1.0\n", 64).is_err());
        assert!(batch_p99_us("@wrk duration 1000000 responses 0\n@lat 5 1\n", 64).is_err());
    }
}
