//! The options every case receives.

/// Command-line options, shared by every case.
#[derive(Clone, Debug, Default)]
pub struct Opts {
    /// Print one JSON object per measurement per line instead of tables.
    pub json: bool,
    /// Smaller problem sizes, for a quick look or CI.
    pub quick: bool,
    /// `--runs N`: how many times each measurement is repeated; `None` means the case default.
    pub runs: Option<usize>,
    /// `--callgrind`: also count instructions under valgrind where a case supports it.
    pub callgrind: bool,
    /// Set when running as part of `table`: cases include their optional parts when the
    /// tools they need are installed.
    pub table: bool,
}

impl Opts {
    /// The number of runs: `--runs` if given, else `full` (or `quick` under `--quick`).
    pub fn runs(&self, full: usize, quick: usize) -> usize {
        self.runs.unwrap_or(if self.quick { quick } else { full })
    }

    /// `full`, or `quick` under `--quick`: a problem size.
    pub fn size<T>(&self, full: T, quick: T) -> T {
        if self.quick { quick } else { full }
    }
}
