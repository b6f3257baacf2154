//! sysmon's own descriptor table, for a runtime whose only worker is the calling thread
//! ([`Builder::run_here`](crate::runtime::Builder::run_here)).
//!
//! # Why
//!
//! Every `recv` and `send` looks its descriptor up in the calling thread's descriptor table.
//! When that table is shared with another thread, Linux must take a reference on the file
//! for the length of the call and drop it after (`fdget`/`fput`: two atomic operations and
//! an RCU section); when the thread is the table's only user, it borrows the file for free.
//! A one-worker server built with `build` has three threads on one table — the worker,
//! sysmon, and the thread waiting in `block_on` — and paid for it on every system call:
//! `run_here` serves 1.1–1.2 % more echo messages a second than the same server started with
//! `build` (`docs/net-bench.md`, "Eighteenth pass"). tokio's `current_thread` runtime is one
//! thread.
//!
//! `run_here` makes the calling thread the worker; this module moves sysmon off the table.
//!
//! # How
//!
//! sysmon calls `unshare(CLONE_FILES)`, which gives it a copy of the table, then closes every
//! descriptor of the copy but the driver's three (epoll, eventfd, timerfd), which it may use to
//! wake the worker. A copy held on to would keep files open after the program closed them: a
//! socket closed by the program would stay connected, and a pipe on stdout would never see its
//! end. Closing a copy drops only the copy's reference (and, on Linux, no POSIX lock: those
//! belong to the table that took them).
//!
//! sysmon then runs no code but its own: it polls no sockets and fires no timers (see
//! `sysmon.rs`), because a waker run there could write to a descriptor of the program's, which
//! sysmon's table does not have or has under another file. Hog reports go to the program's
//! current stderr, fetched for each report with `pidfd_getfd`.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Gives the calling thread its own descriptor table holding only `keep` (whose entries must be
/// open descriptors) and `/dev/null` as whichever of 0, 1 and 2 they are not — so that a stray
/// write to stderr from this thread goes nowhere, and the descriptors it opens never take those
/// numbers. Whether the thread now has its own table: not if the kernel lacks `close_range`
/// (Linux 5.9) or refuses `unshare` (a seccomp filter); the table is then left shared rather
/// than copied with every descriptor in it.
pub(crate) fn unshare_keeping(keep: &[RawFd]) -> bool {
    // A range past any descriptor: closes nothing, and fails only without `close_range`.
    if close_range(RawFd::MAX as u32 - 1, RawFd::MAX as u32).is_err() {
        return false;
    }
    // SAFETY: `unshare(CLONE_FILES)` only changes which descriptor table this thread uses.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        return false;
    }
    // From here the table is this thread's, whatever fails below (`close_range` fails only
    // for a range whose first is above its last, which this loop never passes).
    let mut keep = keep.to_vec();
    keep.sort_unstable();
    let mut from: u32 = 0;
    for &fd in &keep {
        let fd = fd as u32;
        if fd > from {
            let _ = close_range(from, fd - 1);
        }
        from = fd + 1;
    }
    let _ = close_range(from, u32::MAX);
    // SAFETY: opening a file with a NUL-terminated path; the result is checked.
    let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if null < 0 {
        return true; // 0-2 stay closed: stray writes fail instead
    }
    // SAFETY: `null` is a new descriptor; the copies of 0-2 it replaces are this table's own.
    let null = unsafe { OwnedFd::from_raw_fd(null) };
    for fd in (0..=2).filter(|fd| !keep.contains(fd)) {
        // SAFETY: as above: `dup2` replaces this table's descriptor `fd` with `/dev/null`.
        unsafe { libc::dup2(null.as_raw_fd(), fd) };
    }
    if null.as_raw_fd() <= 2 {
        std::mem::forget(null); // it is one of 0-2 now
    }
    true
}

fn close_range(first: u32, last: u32) -> io::Result<()> {
    // SAFETY: closes descriptors of this thread's table only; called on a table this module
    // has just unshared (or with an empty range), whose descriptors nothing else here owns.
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Writes `msg` to the process's stderr as the rest of the program sees it now (its main
/// thread's descriptor 2), from a thread with its own descriptor table.
pub(crate) fn write_program_stderr(msg: &str) -> io::Result<()> {
    // SAFETY: plain system calls; each result is checked before it is used.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0u32) };
    if pidfd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `pidfd` is a new descriptor that nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    // SAFETY: as above; `pidfd` is open.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_pidfd_getfd,
            pidfd.as_raw_fd(),
            libc::STDERR_FILENO,
            0u32,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `pidfd_getfd` returned a new descriptor in this thread's table, ours to close.
    let mut stderr = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
    stderr.write_all(msg.as_bytes())
}
