//! The driver: the one place a worker sleeps while the runtime waits for time (and, later,
//! for IO readiness, when the netpoller registers sockets with the same `epoll` instance).
//!
//! It is an `epoll` instance with an `eventfd` registered on it. At most one idle worker waits
//! in it (see `Shared::park`), with the nearest timer of any worker as the timeout; others
//! sleep on their futex. `wake` writes the `eventfd`. Whoever polls the driver fires due
//! timers afterwards, so timers on a worker that is asleep still fire on time.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// epoll token of the eventfd.
const WAKE_TOKEN: u64 = u64::MAX;

pub(crate) struct Driver {
    epoll: OwnedFd,
    event: OwnedFd,
    /// Whether a worker holds the driver (waits in it or is about to).
    held: AtomicBool,
    /// The deadline (runtime clock, ns) the holder sleeps until; `u64::MAX` for none.
    pub(crate) until: AtomicU64,
    /// Wake-ups delivered through the eventfd (metrics).
    pub(crate) wakes: AtomicU64,
}

impl Driver {
    pub(crate) fn new() -> io::Result<Driver> {
        // SAFETY: plain system calls; the results are checked and owned below.
        let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epoll < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `epoll` is a fresh descriptor we own.
        let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
        // SAFETY: as above.
        let event = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if event < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `event` is a fresh descriptor we own.
        let event = unsafe { OwnedFd::from_raw_fd(event) };
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: WAKE_TOKEN };
        // SAFETY: both descriptors are valid; `ev` is a valid event.
        if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, event.as_raw_fd(), &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Driver {
            epoll,
            event,
            held: AtomicBool::new(false),
            until: AtomicU64::new(u64::MAX),
            wakes: AtomicU64::new(0),
        })
    }

    /// Tries to become the driver's holder.
    pub(crate) fn try_acquire(&self) -> bool {
        // Acquire: pairs with `release`, ordering the previous holder's reads of timers.
        !self.held.load(Ordering::Relaxed)
            && self.held.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    pub(crate) fn release(&self) {
        self.until.store(u64::MAX, Ordering::SeqCst);
        self.held.store(false, Ordering::Release);
    }

    pub(crate) fn is_held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }

    /// Waits for a wake or the timeout. Only the holder calls this.
    ///
    /// `epoll_pwait2` (Linux 5.11) takes a nanosecond timeout; `epoll_wait`'s millisecond one
    /// would make a 100 µs sleep last a millisecond. The fallback rounds up.
    pub(crate) fn wait(&self, timeout: Option<Duration>) {
        static NO_PWAIT2: AtomicBool = AtomicBool::new(false);
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 16];
        let mut n = -1;
        if !NO_PWAIT2.load(Ordering::Relaxed) {
            let ts = timeout.map(|d| libc::timespec {
                tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            });
            let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
            // SAFETY: `events` is a valid buffer of 16 entries, `ts_ptr` null or a timespec,
            // and the null sigmask leaves the mask unchanged.
            n = unsafe {
                libc::syscall(
                    libc::SYS_epoll_pwait2,
                    self.epoll.as_raw_fd(),
                    events.as_mut_ptr(),
                    16,
                    ts_ptr,
                    std::ptr::null::<libc::sigset_t>(),
                    0usize,
                )
            } as i32;
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
                NO_PWAIT2.store(true, Ordering::Relaxed);
            }
        }
        if NO_PWAIT2.load(Ordering::Relaxed) {
            let ms = match timeout {
                None => -1,
                Some(d) => d.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32,
            };
            // SAFETY: `events` is a valid buffer of 16 entries.
            n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), 16, ms) };
        }
        for ev in events.iter().take(n.max(0) as usize) {
            if ev.u64 == WAKE_TOKEN {
                let mut buf = 0u64;
                // SAFETY: reading 8 bytes from our nonblocking eventfd into a u64.
                unsafe { libc::read(self.event.as_raw_fd(), (&raw mut buf).cast(), 8) };
            }
        }
    }

    /// Interrupts the holder's wait (or makes its next wait return at once).
    pub(crate) fn wake(&self) {
        self.wakes.fetch_add(1, Ordering::Relaxed);
        let one = 1u64;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe { libc::write(self.event.as_raw_fd(), (&raw const one).cast(), 8) };
    }
}
