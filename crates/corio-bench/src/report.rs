//! The measurement model and its two renderings: aligned tables and JSON lines.
//!
//! A case returns one [`Measurement`] per (implementation, metric, problem size): the summary
//! of its runs, or why there is no number (a peer that failed, a tool that is missing). The
//! table shows each measurement as a row, with a ratio against the case's reference
//! implementation ([`Case::reference`]) for the same metric; `--json` prints one object per
//! measurement per line, for scripts:
//!
//! ```text
//! {"case":"switch","impl":"corio","metric":"ns_per_switch","value":1.23,"min":1.2,"max":1.3,"runs":5,"samples":[1.23,1.2,1.3,1.25,1.22],"unit":"ns","n":20000000}
//! ```
//!
//! `samples` are the values of the runs the summary was made of, in the order measured (for
//! `pair`, the per-pair ratios), so that a script can pool two runs of a case.
//!
//! A measurement without a number has `"value":null` and either `"skipped"` or `"error"`
//! with the reason; an optional `"note"` carries context (the guard-page kind, VMA counts).

use std::fmt::Write as _;

use crate::cases::Case;
use crate::opts::Opts;
use crate::stats::Summary;

/// What became of one measurement.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// It was measured; the summary of its runs.
    Value(Summary),
    /// It was not attempted, for this reason (a tool is not installed).
    Skipped(String),
    /// The implementation failed, for this reason (e.g. "fails after ~32,000 coroutines").
    Failed(String),
}

/// One aggregated measurement: `metric` of implementation `imp` at problem size `n`.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The case that measured it (`"switch"`).
    pub case: &'static str,
    /// The implementation measured (`"corio"`, `"corosensei"`, `"may"`, ...).
    pub imp: String,
    /// What was measured (`"ns_per_switch"`).
    pub metric: &'static str,
    /// The unit of the value (`"ns"`, `"B"`, `"instr"`, `"count"`).
    pub unit: &'static str,
    /// The problem size: round trips, coroutines, ...
    pub n: u64,
    /// The value, or why there is none.
    pub outcome: Outcome,
    /// Context for a reader, shown in the table's last column.
    pub note: Option<String>,
    /// The values summarised, in the order measured (empty without a value); in `--json`.
    pub samples: Vec<f64>,
}

impl Measurement {
    /// A measured value, summarised from the values of each run.
    pub fn new(
        case: &'static str,
        imp: impl Into<String>,
        metric: &'static str,
        unit: &'static str,
        n: u64,
        values: &[f64],
    ) -> Measurement {
        let outcome = match Summary::of(values) {
            Some(s) => Outcome::Value(s),
            None => Outcome::Failed("no runs".into()),
        };
        Measurement {
            case,
            imp: imp.into(),
            metric,
            unit,
            n,
            outcome,
            note: None,
            samples: values.to_vec(),
        }
    }

    /// A measurement that was not attempted.
    pub fn skipped(
        case: &'static str,
        imp: impl Into<String>,
        metric: &'static str,
        unit: &'static str,
        n: u64,
        reason: impl Into<String>,
    ) -> Measurement {
        let outcome = Outcome::Skipped(reason.into());
        Measurement {
            case,
            imp: imp.into(),
            metric,
            unit,
            n,
            outcome,
            note: None,
            samples: Vec::new(),
        }
    }

    /// A measurement whose implementation failed.
    pub fn failed(
        case: &'static str,
        imp: impl Into<String>,
        metric: &'static str,
        unit: &'static str,
        n: u64,
        reason: impl Into<String>,
    ) -> Measurement {
        let outcome = Outcome::Failed(reason.into());
        Measurement {
            case,
            imp: imp.into(),
            metric,
            unit,
            n,
            outcome,
            note: None,
            samples: Vec::new(),
        }
    }

    /// Adds a note for the reader.
    pub fn with_note(mut self, note: impl Into<String>) -> Measurement {
        self.note = Some(note.into());
        self
    }

    /// Adds a note after the one it has, if any (`; ` between).
    pub fn and_note(mut self, note: impl Into<String>) -> Measurement {
        let note = note.into();
        self.note = Some(match self.note.take() {
            Some(first) => format!("{first}; {note}"),
            None => note,
        });
        self
    }

    /// The median, if there is a value.
    pub fn median(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Value(s) => Some(s.median),
            _ => None,
        }
    }

    /// This measurement as one line of JSON.
    pub fn to_json(&self) -> String {
        let mut s = String::from("{");
        let _ = write!(
            s,
            "\"case\":{},\"impl\":{},\"metric\":{},",
            json_str(self.case),
            json_str(&self.imp),
            json_str(self.metric)
        );
        match &self.outcome {
            Outcome::Value(v) => {
                let samples: Vec<String> = self.samples.iter().map(|&x| json_num(x)).collect();
                let _ = write!(
                    s,
                    "\"value\":{},\"min\":{},\"max\":{},\"runs\":{},\"samples\":[{}],",
                    json_num(v.median),
                    json_num(v.min),
                    json_num(v.max),
                    v.runs,
                    samples.join(",")
                );
            }
            Outcome::Skipped(why) => {
                let _ = write!(s, "\"value\":null,\"skipped\":{},", json_str(why));
            }
            Outcome::Failed(why) => {
                let _ = write!(s, "\"value\":null,\"error\":{},", json_str(why));
            }
        }
        let _ = write!(s, "\"unit\":{},\"n\":{}", json_str(self.unit), self.n);
        if let Some(note) = &self.note {
            let _ = write!(s, ",\"note\":{}", json_str(note));
        }
        s.push('}');
        s
    }
}

/// `s` as a JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `v` as a JSON number (JSON has no NaN or infinity: those become `null`).
fn json_num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

/// A number for a table: about four significant digits, thousands separated.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a >= 10_000.0 {
        group_thousands(v.round() as i128)
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// An integer with `,` between groups of three digits.
pub fn group_thousands(v: i128) -> String {
    let digits = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0 { format!("-{out}") } else { out }
}

/// The median column: the number, with KiB beside byte counts.
fn fmt_value(m: &Measurement, v: f64) -> String {
    if m.unit == "B" && v.abs() >= 1024.0 {
        format!("{} ({:.2} KiB)", fmt_num(v), v / 1024.0)
    } else {
        fmt_num(v)
    }
}

/// The reference row for `m`: same metric and size from the reference implementation, or
/// same metric if the reference measured it at one size only.
fn reference_value(case: &Case, all: &[Measurement], m: &Measurement) -> Option<f64> {
    let reference = case.reference?;
    let rows: Vec<&Measurement> = all
        .iter()
        .filter(|r| r.imp == reference && r.metric == m.metric)
        .collect();
    let row =
        rows.iter()
            .find(|r| r.n == m.n)
            .or(if rows.len() == 1 { rows.first() } else { None })?;
    row.median()
}

/// Renders the measurements of one case as an aligned table.
pub fn table(case: &Case, all: &[Measurement]) -> String {
    let ratio_header = case.reference.map(|r| format!("vs {r}"));
    let mut header = vec!["impl", "metric", "n", "median", "min – max", "unit"];
    if let Some(h) = &ratio_header {
        header.push(h);
    }
    header.push("note");
    let mut rows: Vec<Vec<String>> = Vec::new();
    for m in all {
        let mut row = vec![
            m.imp.clone(),
            m.metric.to_string(),
            group_thousands(m.n as i128),
        ];
        let mut note = m.note.clone().unwrap_or_default();
        match &m.outcome {
            Outcome::Value(s) => {
                row.push(fmt_value(m, s.median));
                row.push(format!(
                    "{} – {} (×{})",
                    fmt_num(s.min),
                    fmt_num(s.max),
                    s.runs
                ));
            }
            Outcome::Skipped(why) => {
                row.push("skipped".into());
                row.push(String::new());
                note = join_note(why, &note);
            }
            Outcome::Failed(why) => {
                row.push("FAILED".into());
                row.push(String::new());
                note = join_note(why, &note);
            }
        }
        row.push(m.unit.to_string());
        if ratio_header.is_some() {
            let ratio = match (m.median(), reference_value(case, all, m)) {
                (Some(v), Some(r)) if r != 0.0 && (v / r).abs() < 0.1 => format!("{:.4}×", v / r),
                (Some(v), Some(r)) if r != 0.0 => format!("{:.2}×", v / r),
                _ => "—".into(),
            };
            row.push(ratio);
        }
        row.push(note);
        rows.push(row);
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // Numbers right-aligned, words left-aligned.
    let right = |i: usize| {
        matches!(header[i], "n" | "median" | "min – max") || header[i].starts_with("vs ")
    };
    let mut out = format!("== {}: {} ==\n", case.name, case.about);
    if let Ok(load) = crate::proc::loadavg() {
        // Context for the reader: on a 2-vCPU VM a load above 2 means the runs were shared.
        out.push_str(&format!("(load average after the runs: {load})\n"));
    }
    let mut line = |cells: &[String]| {
        let mut l = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            let last = i + 1 == cells.len();
            if right(i) {
                l.push_str(&" ".repeat(pad));
                l.push_str(cell);
            } else {
                l.push_str(cell);
                if !last {
                    l.push_str(&" ".repeat(pad));
                }
            }
            if !last {
                l.push_str("  ");
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    line(&widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>());
    for row in &rows {
        line(row);
    }
    out
}

fn join_note(a: &str, b: &str) -> String {
    if b.is_empty() {
        a.to_string()
    } else {
        format!("{a}; {b}")
    }
}

/// Prints the measurements of one case as `--json` lines or a table.
pub fn print(case: &Case, all: &[Measurement], opts: &Opts) {
    if opts.json {
        for m in all {
            println!("{}", m.to_json());
        }
    } else {
        println!("{}", table(case, all));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_line_has_the_documented_fields() {
        let m = Measurement::new(
            "switch",
            "corio",
            "ns_per_switch",
            "ns",
            20,
            &[1.0, 3.0, 2.0],
        );
        assert_eq!(
            m.to_json(),
            "{\"case\":\"switch\",\"impl\":\"corio\",\"metric\":\"ns_per_switch\",\"value\":2,\
             \"min\":1,\"max\":3,\"runs\":3,\"samples\":[1,3,2],\"unit\":\"ns\",\"n\":20}"
        );
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_str("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
        let m = Measurement::failed("mem", "may", "bytes_per_coroutine", "B", 1, "x \"y\"");
        assert!(
            m.to_json()
                .contains("\"value\":null,\"error\":\"x \\\"y\\\"\"")
        );
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(group_thousands(1_000_000), "1,000,000");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(fmt_num(1.234), "1.23");
        assert_eq!(fmt_num(12_345.6), "12,346");
    }
}
