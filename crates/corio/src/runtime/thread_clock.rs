//! What sysmon can learn about a worker's OS thread from outside it: how much CPU time it
//! has used, and whether the kernel has it waiting in a system call.
//!
//! sysmon used to judge a worker by wall-clock time alone: a time-slice counter that had not
//! moved for 50 ms meant "a task has run for 50 ms". On a loaded machine that is false. A
//! worker thread that the kernel has not scheduled for 50 ms — because sysmon's own hand-offs
//! had started more threads than there are CPUs, or other processes hold the CPUs — has run
//! nothing at all, and its coroutine, whose whole body may be one `sleep`, was reported as a
//! hog (issue 11). So each worker publishes, when it starts, the kernel id of its thread and
//! the id of that thread's CPU clock (`pthread_getcpuclockid`, the clock
//! `CLOCK_THREAD_CPUTIME_ID` reads from inside). sysmon reads the clock with
//! `clock_gettime`: CPU time, user and system, that only advances while the thread runs.
//!
//! CPU time alone cannot tell a thread blocked in a system call (a coroutine calling
//! `std::thread::sleep`, a blocking `read`) from one the kernel wants to run but has no CPU
//! for: both use none. The difference matters for hand-offs — a spare thread helps the
//! first and only adds to the crowd in the second — so sysmon can also read the thread's
//! scheduler state from `/proc/self/task/<tid>/stat` (`R` runnable, `S`/`D` asleep); it does
//! so only for a worker it is about to hand off from, at most once per time slice.
//!
//! A thread's clock id stops being valid when the thread exits; the worker withdraws it
//! first ([`ThreadClock::clear`]), and a read that fails anyway (the kernel recycled the id)
//! is treated as "no reading", never as time spent.

use std::sync::atomic::{AtomicI32, Ordering};

/// No thread published (not started yet, or exited).
const NONE: i32 = 0;

/// A worker thread's kernel id and CPU clock, published by the thread, read by sysmon.
pub(crate) struct ThreadClock {
    /// The thread's id (`gettid`), or `NONE`.
    tid: AtomicI32,
    /// `pthread_getcpuclockid` of the thread; meaningful while `tid` is not `NONE`.
    clock: AtomicI32,
}

/// What the kernel says the thread is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ThreadState {
    /// Running on a CPU, or waiting for one.
    Runnable,
    /// Asleep in the kernel: a blocking system call, a page fault from disk, a futex.
    Blocked,
}

impl ThreadClock {
    pub(crate) const fn new() -> ThreadClock {
        ThreadClock {
            tid: AtomicI32::new(NONE),
            clock: AtomicI32::new(NONE),
        }
    }

    /// Publishes the calling thread (a worker, as it starts).
    pub(crate) fn set_current(&self) {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: `pthread_self` is the calling thread, alive; `clock` is a valid out-pointer.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
        if rc != 0 {
            return; // no clock: sysmon gets no readings, so it reports nothing
        }
        // SAFETY: `gettid` has no preconditions.
        let tid = unsafe { libc::gettid() };
        self.clock.store(clock, Ordering::Relaxed);
        // Release: pairs with the Acquire in `cpu_ns`/`state`, which then see `clock`.
        self.tid.store(tid, Ordering::Release);
    }

    /// Withdraws the thread (before it exits).
    pub(crate) fn clear(&self) {
        self.tid.store(NONE, Ordering::Release);
    }

    /// The CPU time the thread has used so far, in nanoseconds; `None` if there is no thread
    /// or the clock cannot be read.
    pub(crate) fn cpu_ns(&self) -> Option<u64> {
        // Acquire: pairs with the Release in `set_current`.
        if self.tid.load(Ordering::Acquire) == NONE {
            return None;
        }
        let clock = self.clock.load(Ordering::Relaxed);
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid out-pointer; an invalid clock id only makes the call fail.
        if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
            return None;
        }
        Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    /// The thread's scheduler state, read from procfs; `None` if it cannot be read.
    pub(crate) fn state(&self) -> Option<ThreadState> {
        // Acquire: pairs with the Release in `set_current`.
        let tid = self.tid.load(Ordering::Acquire);
        if tid == NONE {
            return None;
        }
        // Without allocating (sysmon must not: a program counting its allocations, as
        // `tests/net_alloc.rs` does, saw sysmon's path string and read buffer, up to 850 per
        // 2,000 round trips on a loaded machine): the path and the line in stack buffers.
        let mut path = [0u8; 40];
        let len = stat_path(tid, &mut path);
        let mut stat = [0u8; 256];
        // SAFETY: `path` is NUL-terminated within its length (`stat_path`).
        let fd = unsafe {
            libc::open(
                path[..len].as_ptr().cast(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` is ours and open; `stat` is a valid buffer of that length. The state is
        // the third field, well within the first 256 bytes (the command name is at most 15).
        let n = unsafe { libc::read(fd, stat.as_mut_ptr().cast(), stat.len()) };
        // SAFETY: `fd` is ours and closed once.
        unsafe { libc::close(fd) };
        parse_state(&stat[..usize::try_from(n).ok()?])
    }
}

/// Writes `/proc/self/task/<tid>/stat` and a NUL into `buf`; returns the length with the NUL.
fn stat_path(tid: i32, buf: &mut [u8; 40]) -> usize {
    use std::io::Write;
    let mut rest = &mut buf[..];
    // A slice as `io::Write` formats in place; the longest path (a 10-digit id) takes 32.
    write!(rest, "/proc/self/task/{tid}/stat\0").expect("fits in 40 bytes");
    40 - rest.len()
}

/// The state field of a `/proc/<pid>/task/<tid>/stat` line: the first field after the
/// command name, which is in parentheses and may itself contain spaces and parentheses.
fn parse_state(stat: &[u8]) -> Option<ThreadState> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    match stat.get(close + 2)? {
        b'R' => Some(ThreadState::Runnable),
        b'S' | b'D' | b'T' | b't' => Some(ThreadState::Blocked),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "pthread_getcpuclockid and procfs are not available under Miri"
    )]
    fn a_spinning_thread_gains_cpu_time_and_a_sleeping_one_does_not() {
        let clock = ThreadClock::new();
        assert_eq!(clock.cpu_ns(), None, "no thread published yet");
        clock.set_current();
        let before = clock.cpu_ns().expect("own clock");
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(20) {
            std::hint::spin_loop();
        }
        let spun = clock.cpu_ns().unwrap() - before;
        assert!(spun > 0, "spinning used CPU time");
        let before = clock.cpu_ns().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let slept = clock.cpu_ns().unwrap() - before;
        assert!(slept < 40_000_000, "sleeping 50 ms used {slept} ns of CPU");
        assert_eq!(clock.state(), Some(ThreadState::Runnable), "reading itself");
        clock.clear();
        assert_eq!(clock.cpu_ns(), None);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "pthread_getcpuclockid and procfs are not available under Miri"
    )]
    fn a_thread_asleep_in_a_system_call_reads_as_blocked() {
        let clock = std::sync::Arc::new(ThreadClock::new());
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let (stop, stop_rx) = std::sync::mpsc::channel::<()>();
        let c = clock.clone();
        let sleeper = std::thread::spawn(move || {
            c.set_current();
            ready_tx.send(()).unwrap();
            let _ = stop_rx.recv(); // asleep on a futex until told
        });
        ready.recv().unwrap();
        // Eventually asleep (it may take a moment to reach the call on a loaded machine).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while clock.state() != Some(ThreadState::Blocked) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let state = clock.state();
        stop.send(()).unwrap();
        sleeper.join().unwrap();
        assert_eq!(state, Some(ThreadState::Blocked));
    }

    #[test]
    fn the_stat_path_is_spelled_without_allocating() {
        let mut buf = [0u8; 40];
        for tid in [1, 42, 1234567, i32::MAX] {
            let len = stat_path(tid, &mut buf);
            assert_eq!(
                &buf[..len],
                format!("/proc/self/task/{tid}/stat\0").as_bytes()
            );
        }
    }

    #[test]
    fn the_state_is_found_after_a_command_name_with_parentheses() {
        assert_eq!(
            parse_state(b"42 (a) b (c) S 1 2 3"),
            Some(ThreadState::Blocked)
        );
        assert_eq!(parse_state(b"42 (x) R 1"), Some(ThreadState::Runnable));
        assert_eq!(parse_state(b"garbage"), None);
    }
}
