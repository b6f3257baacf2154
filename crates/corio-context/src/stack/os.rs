//! The system calls behind the stack arena: reserve, guard, release.
//!
//! Each is a thin wrapper that turns `-1`/`errno` into `io::Error`. Batches of ranges go through
//! `process_madvise(2)` when the kernel takes the advice that way (one system call and one TLB
//! shoot-down for the whole batch instead of one per range), else through one `madvise(2)` per
//! range. What the kernel supports is probed once, on first use.

use std::io;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// `MADV_GUARD_INSTALL` (Linux 6.13): turns a range into guard markers that fault on access,
/// without a VMA of their own. Not yet in every libc crate release.
const MADV_GUARD_INSTALL: libc::c_int = 102;

/// `PIDFD_SELF` (Linux 6.15): a pidfd naming the calling process, no file descriptor needed.
const PIDFD_SELF: libc::c_int = -10000;

/// Most ranges one `process_madvise` call accepts (`UIO_MAXIOV`).
const MAX_IOV: usize = 1024;

/// The system page size (read once; a relaxed load afterwards, as creating a coroutine asks).
#[inline]
pub(crate) fn page_size() -> usize {
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    match PAGE.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
            PAGE.store(page, Ordering::Relaxed);
            page
        }
        page => page,
    }
}

/// Reserves `len` bytes of address space, readable and writable, committed on first touch.
///
/// `MAP_NORESERVE` keeps the reservation out of the overcommit accounting; `MAP_STACK` asks the
/// kernel (6.7+) not to back it with transparent huge pages, and `MADV_NOHUGEPAGE` says the
/// same to older kernels: a 2 MiB page behind a stack would cost 2 MiB of RSS per coroutine.
pub(crate) fn reserve(len: usize) -> io::Result<usize> {
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing aliases nothing.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the range was just mapped; the advice only affects how it is backed.
    unsafe { libc::madvise(addr, len, libc::MADV_NOHUGEPAGE) };
    Ok(addr as usize)
}

/// How guard pages are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GuardMode {
    /// `MADV_GUARD_INSTALL`: no VMA per guard, survives `MADV_DONTNEED`.
    Madvise,
    /// `mprotect(PROT_NONE)`: two VMAs per guard, limited by `vm.max_map_count`.
    Mprotect,
}

/// Installs guards over `ranges` (each `(addr, len)`, page aligned) with `MADV_GUARD_INSTALL`.
pub(crate) fn guard_install(ranges: &[(usize, usize)]) -> io::Result<()> {
    advise(ranges, MADV_GUARD_INSTALL)
}

/// Makes `(addr, len)` inaccessible with `mprotect`.
pub(crate) fn guard_mprotect(addr: usize, len: usize) -> io::Result<()> {
    // SAFETY: the range lies in a reservation of ours that holds no live data.
    if unsafe { libc::mprotect(addr as *mut libc::c_void, len, libc::PROT_NONE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Gives the physical pages behind `ranges` back to the kernel; the next touch gets zero pages.
pub(crate) fn release(ranges: &[(usize, usize)]) -> io::Result<()> {
    advise(ranges, libc::MADV_DONTNEED)
}

/// How batches are advised, probed on first use.
static BATCH: AtomicU8 = AtomicU8::new(BATCH_UNKNOWN);
const BATCH_UNKNOWN: u8 = 0;
const BATCH_PIDFD_SELF: u8 = 1;
const BATCH_NONE: u8 = 2;

/// Applies `advice` to every range: in `process_madvise` batches when possible, else one
/// `madvise` per range (and for whatever a batch call left undone).
fn advise(ranges: &[(usize, usize)], advice: libc::c_int) -> io::Result<()> {
    let mut rest = ranges;
    if rest.len() > 1 && BATCH.load(Ordering::Relaxed) != BATCH_NONE {
        while !rest.is_empty() {
            let n = rest.len().min(MAX_IOV);
            match process_madvise(&rest[..n], advice) {
                Ok(done) => {
                    BATCH.store(BATCH_PIDFD_SELF, Ordering::Relaxed);
                    rest = &rest[done..];
                    if done < n {
                        break; // a short count: finish this batch one range at a time
                    }
                }
                Err(_) => {
                    // ENOSYS, or EINVAL/EBADF from a kernel without PIDFD_SELF or without this
                    // advice in process_madvise: never try again.
                    if BATCH.load(Ordering::Relaxed) == BATCH_UNKNOWN {
                        BATCH.store(BATCH_NONE, Ordering::Relaxed);
                    }
                    break;
                }
            }
        }
    }
    for &(addr, len) in rest {
        // SAFETY: every range lies in a reservation of ours and holds no live data.
        if unsafe { libc::madvise(addr as *mut libc::c_void, len, advice) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// One `process_madvise(PIDFD_SELF, ranges, advice)`; returns how many whole ranges were done.
fn process_madvise(ranges: &[(usize, usize)], advice: libc::c_int) -> io::Result<usize> {
    let iov: Vec<libc::iovec> = ranges
        .iter()
        .map(|&(addr, len)| libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: len,
        })
        .collect();
    // SAFETY: `iov` describes ranges in reservations of ours; the kernel only reads the array.
    let r = unsafe {
        libc::syscall(
            libc::SYS_process_madvise,
            PIDFD_SELF,
            iov.as_ptr(),
            iov.len(),
            advice,
            0u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // Count the ranges fully covered by the `r` bytes the kernel reports.
    let mut bytes = r as usize;
    let mut done = 0;
    for &(_, len) in ranges {
        if bytes < len {
            break;
        }
        bytes -= len;
        done += 1;
    }
    Ok(done)
}

/// Reads `/proc/sys/vm/max_map_count` (65530 when it cannot be read: the kernel default).
pub(crate) fn max_map_count() -> usize {
    std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(65530)
}

/// Counts this process's mappings (lines of `/proc/self/maps`).
pub(crate) fn map_count() -> usize {
    std::fs::read("/proc/self/maps")
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}
