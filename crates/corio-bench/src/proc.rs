//! What the kernel says about a process: resident memory, mappings, page tables, context
//! switches (Linux `/proc`).
//!
//! - RSS is `/proc/self/statm`'s second field (resident pages) times the page size. It counts
//!   the pages a process has touched, not the page tables that map them: those are `VmPTE` in
//!   `/proc/<pid>/status`, reported separately so that neither number hides the other.
//! - The VMA count is the number of lines of `/proc/self/maps`; `vm.max_map_count` (65530 by
//!   default) caps it, which is what stops one-`mmap`-plus-guard-per-stack runtimes at about
//!   32,700 stacks.
//! - Voluntary and involuntary context switches are `voluntary_ctxt_switches` and
//!   `nonvoluntary_ctxt_switches` in `/proc/<pid>/status` (the whole process when read for the
//!   process id, one thread when read under `task/<tid>`).

use std::collections::HashMap;
use std::fs;
use std::io;

/// The size of a page, in bytes.
pub fn page_size() -> usize {
    // SAFETY: sysconf only reads a configuration value.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

/// Resident memory of this process, in bytes.
pub fn rss_bytes() -> io::Result<u64> {
    let statm = fs::read_to_string("/proc/self/statm")?;
    let resident: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| io::Error::other(format!("unexpected /proc/self/statm: {statm:?}")))?;
    Ok(resident * page_size() as u64)
}

/// The number of memory mappings (VMAs) of this process.
pub fn vma_count() -> io::Result<u64> {
    let maps = fs::read("/proc/self/maps")?;
    Ok(maps.iter().filter(|&&b| b == b'\n').count() as u64)
}

/// A `kB` field of `/proc/self/status` (`"VmPTE"`, `"VmRSS"`), in bytes.
pub fn status_kib_field(name: &str) -> io::Result<u64> {
    let kib = status_field("self", name)?;
    Ok(kib * 1024)
}

/// A numeric field of `/proc/<pid>/status` (`pid` may be `"self"`), without its unit.
pub fn status_field(pid: &str, name: &str) -> io::Result<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))?;
    for line in status.lines() {
        if let Some(rest) = line.strip_prefix(name).and_then(|r| r.strip_prefix(':')) {
            return rest
                .split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| io::Error::other(format!("unexpected status line {line:?}")));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("no {name} in /proc/{pid}/status"),
    ))
}

/// Voluntary and involuntary context switches of a process (or `"self"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtxtSwitches {
    /// The process gave up the CPU: it blocked or slept.
    pub voluntary: u64,
    /// The kernel took the CPU away: preemption.
    pub nonvoluntary: u64,
}

/// The context switches of process `pid` (or `"self"`) so far.
pub fn ctxt_switches(pid: &str) -> io::Result<CtxtSwitches> {
    Ok(CtxtSwitches {
        voluntary: status_field(pid, "voluntary_ctxt_switches")?,
        nonvoluntary: status_field(pid, "nonvoluntary_ctxt_switches")?,
    })
}

/// The context switches of every thread of process `pid` (or `"self"`), by
/// thread id.
pub fn threads_switches(pid: &str) -> Result<HashMap<u32, CtxtSwitches>, String> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map_err(|e| format!("/proc/{pid}/task: {e}"))?;
    let mut out = HashMap::new();
    for entry in dir.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        // A thread that exited in between has no status any more: skip it.
        if let Ok(c) = ctxt_switches(&format!("{pid}/task/{tid}")) {
            out.insert(tid, c);
        }
    }
    Ok(out)
}

/// The switches made between two [`threads_switches`] readings, over the threads of the
/// second (a thread started in between counts from zero).
pub fn switches_between(
    before: &HashMap<u32, CtxtSwitches>,
    after: &HashMap<u32, CtxtSwitches>,
) -> CtxtSwitches {
    let mut total = CtxtSwitches::default();
    for (tid, a) in after {
        let b = before.get(tid).copied().unwrap_or_default();
        total.voluntary += a.voluntary - b.voluntary;
        total.nonvoluntary += a.nonvoluntary - b.nonvoluntary;
    }
    total
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` prints them.
pub fn loadavg() -> io::Result<String> {
    let text = fs::read_to_string("/proc/loadavg")?;
    Ok(text
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" "))
}

/// A snapshot of this process's memory, for before/after differences.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemSnapshot {
    /// Resident bytes.
    pub rss: u64,
    /// Mappings.
    pub vmas: u64,
    /// Page-table bytes (`VmPTE`).
    pub pte: u64,
}

impl MemSnapshot {
    /// Reads the three figures now.
    pub fn now() -> io::Result<MemSnapshot> {
        Ok(MemSnapshot {
            rss: rss_bytes()?,
            vmas: vma_count()?,
            pte: status_kib_field("VmPTE")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let m = MemSnapshot::now().unwrap();
        assert!(m.rss > 0 && m.vmas > 0);
        let c = ctxt_switches("self").unwrap();
        assert!(c.voluntary + c.nonvoluntary < u64::MAX);
        let touched = vec![1u8; 8 << 20];
        assert!(
            rss_bytes().unwrap() >= m.rss + (4 << 20),
            "{}",
            touched[4096]
        );
    }
}
