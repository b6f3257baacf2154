//! Instruction counts under callgrind: a measurement that a noisy VM cannot disturb.
//!
//! Time on a shared 2-vCPU VM wobbles by 10–30%; the number of instructions executed does not.
//! A case's child is run twice under `valgrind --tool=callgrind`, with two problem sizes
//! `n1 < n2`, and the total instruction count (`Ir`, the `summary:`/`totals:` line of the
//! output file) of each run is read back. Then
//!
//! ```text
//! instructions per operation = (Ir(n2) − Ir(n1)) / (ops_per_n × (n2 − n1))
//! ```
//!
//! which cancels everything both runs share: process start, valgrind's own start-up, creating
//! the coroutine, printing. What remains is the loop body, exactly.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::child::ChildCommand;

/// The path of `valgrind` if it is on `PATH`.
pub fn valgrind() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("valgrind"))
        .find(|p| p.is_file())
}

/// Runs `command` under callgrind and returns its total instruction count.
pub fn total_ir(command: ChildCommand) -> Result<u64, String> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let valgrind = valgrind().ok_or("valgrind not installed")?;
    let file = std::env::temp_dir().join(format!(
        "corio-bench-callgrind-{}-{}.out",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let mut out_flag = std::ffi::OsString::from("--callgrind-out-file=");
    out_flag.push(&file);
    let output = command
        .wrapper([
            valgrind.into_os_string(),
            "--tool=callgrind".into(),
            out_flag,
        ])
        .timeout(Duration::from_secs(300))
        .run()
        .map_err(|e| format!("could not start valgrind: {e}"))?;
    let text = std::fs::read_to_string(&file);
    let _ = std::fs::remove_file(&file);
    if !output.success() {
        return Err(format!("under callgrind: {}", output.failure()));
    }
    let text = text.map_err(|e| format!("reading {}: {e}", file.display()))?;
    parse_total(&text).ok_or_else(|| format!("no summary/totals line in {}", file.display()))
}

/// The first number of the `summary:` (or, failing that, `totals:`) line of a callgrind file.
fn parse_total(text: &str) -> Option<u64> {
    let field = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    };
    field("summary:").or_else(|| field("totals:"))
}

/// Instructions per operation, from runs at sizes `n1` and `n2` (see the module docs).
///
/// `command(n)` builds the child command for size `n`; each size does `ops_per_n × n`
/// operations (2 switches per round trip: `ops_per_n = 2`).
pub fn instructions_per_op(
    command: impl Fn(u64) -> ChildCommand,
    n1: u64,
    n2: u64,
    ops_per_n: f64,
) -> Result<f64, String> {
    assert!(n2 > n1, "n2 must exceed n1");
    let ir1 = total_ir(command(n1))?;
    let ir2 = total_ir(command(n2))?;
    Ok((ir2 as f64 - ir1 as f64) / (ops_per_n * (n2 - n1) as f64))
}

#[cfg(test)]
mod tests {
    use super::parse_total;

    #[test]
    fn reads_summary_or_totals() {
        assert_eq!(
            parse_total("events: Ir\nsummary: 12345\ntotals: 1\n"),
            Some(12345)
        );
        assert_eq!(parse_total("events: Ir\ntotals: 77 3\n"), Some(77));
        assert_eq!(parse_total("events: Ir\n"), None);
    }
}
