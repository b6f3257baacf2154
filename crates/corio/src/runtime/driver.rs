//! The driver: the one place a worker sleeps while the runtime waits for time or IO
//! readiness — and the netpoller, whose sockets are registered on the same `epoll` instance
//! (`crate::io` and `docs/io.md` describe the registrations and who polls when).
//!
//! # Mechanism
//!
//! An `epoll` instance with two descriptors registered on it: an `eventfd` that [`wake`]
//! writes, and a `timerfd` armed at the nearest timer deadline of any worker. At most one idle
//! worker waits in it (the *holder*, see `WorkerCtx::sleep`); the others sleep on their futex.
//! The holder fires every worker's due timers when it wakes, so timers on workers that are
//! asleep still fire on time.
//!
//! The deadline lives in the timerfd, not in `epoll_wait`'s timeout, so that it can be moved
//! *without waking the holder*: a timer added with an earlier deadline re-arms it earlier
//! ([`arm_earlier`]), and the nearest timer being cancelled re-arms it later
//! ([`rearm_after_cancel`]). An idle runtime whose timers are cancelled therefore makes no
//! wake-up at all, and a new early timer costs one `timerfd_settime` instead of a wake-up and
//! a re-sleep. The timerfd's deadlines are absolute `CLOCK_MONOTONIC` times, with nanosecond
//! resolution (an `epoll_wait` timeout is in milliseconds).
//!
//! # Protocol
//!
//! `until` is the deadline the timerfd is armed at (`u64::MAX`: disarmed). Arming is
//! serialised by `arm_lock` and only ever moves `until` to the minimum of what the callers
//! asked for, except [`rearm_after_cancel`], which recomputes it from the workers' heaps.
//!
//! # Netpoller
//!
//! Sockets are added edge-triggered with a token from the [`Registry`]. Three kinds of poller
//! take their events, as in Go's `findRunnable`/`sysmon`: the holder in [`wait`]; a worker that
//! ran out of local work, before it steals ([`poll_io`], without blocking, and only when no
//! holder waits in `epoll_wait` — the holder gets the events anyway; a worker about to become
//! the holder skips it: "The deferred poll" in `worker.rs`); and sysmon, when no poll
//! happened for 10 ms while every worker is busy. `polls` counts polls for sysmon.
//! The non-blocking pollers leave the eventfd and timerfd (level-triggered) unread: they are
//! the holder's.
//!
//! [`wait`]: Driver::wait
//! [`poll_io`]: Driver::poll_io
//! [`wake`]: Driver::wake
//! [`arm_earlier`]: Driver::arm_earlier
//! [`rearm_after_cancel`]: Driver::rearm_after_cancel

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::io::registry::{Registration, Registry};

/// epoll token of the eventfd.
const WAKE_TOKEN: u64 = 1;
/// epoll token of the timerfd.
const TIMER_TOKEN: u64 = 2;
/// Events taken per `epoll_wait` (Go's `netpoll` takes 128).
const EVENTS: usize = 128;

pub(crate) struct Driver {
    epoll: OwnedFd,
    event: OwnedFd,
    timer: OwnedFd,
    /// `CLOCK_MONOTONIC` at the runtime's epoch, in ns: runtime deadlines plus this are the
    /// timerfd's absolute times.
    epoch_monotonic: u64,
    /// Whether a worker holds the driver (waits in it or is about to).
    held: AtomicBool,
    /// The deadline (runtime clock, ns) the timerfd is armed at; `u64::MAX` when disarmed.
    pub(crate) until: AtomicU64,
    arm_lock: Mutex<()>,
    /// The registered sockets.
    pub(crate) registry: Arc<Registry>,
    /// IO polls made so far (any poller); sysmon watches it move.
    pub(crate) polls: AtomicU64,
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn monotonic_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Driver {
    /// A driver for a runtime whose clock started at `epoch` (read just before this call).
    pub(crate) fn new(epoch: std::time::Instant) -> io::Result<Driver> {
        // SAFETY: plain system calls; results are checked by `owned`.
        let epoll = owned(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: as above.
        let event = owned(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
        // SAFETY: as above.
        let timer = owned(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
            )
        })?;
        for (fd, token) in [(&event, WAKE_TOKEN), (&timer, TIMER_TOKEN)] {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: token,
            };
            // SAFETY: both descriptors are valid; `ev` is a valid event.
            if unsafe {
                libc::epoll_ctl(
                    epoll.as_raw_fd(),
                    libc::EPOLL_CTL_ADD,
                    fd.as_raw_fd(),
                    &mut ev,
                )
            } < 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        // Instant is CLOCK_MONOTONIC on Linux: map the epoch onto it.
        let epoch_monotonic = monotonic_now_ns().saturating_sub(epoch.elapsed().as_nanos() as u64);
        Ok(Driver {
            epoll,
            event,
            timer,
            epoch_monotonic,
            held: AtomicBool::new(false),
            until: AtomicU64::new(u64::MAX),
            arm_lock: Mutex::new(()),
            registry: Arc::new(Registry::default()),
            polls: AtomicU64::new(0),
        })
    }

    /// Tries to become the driver's holder.
    pub(crate) fn try_acquire(&self) -> bool {
        // Acquire: pairs with `release`, ordering the previous holder's reads of timers.
        !self.held.load(Ordering::Relaxed)
            && self
                .held
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Gives up the driver (and disarms the timerfd if it is armed).
    ///
    /// A timerfd that is not armed (`until` is `u64::MAX`: no timer was due while the holder
    /// waited, as in a server that only waits for sockets) is left alone: that would be a
    /// `timerfd_settime` per wake-up of an idle worker for nothing. `until` is only written
    /// under `arm_lock`, so reading `u64::MAX` here means the timerfd is disarmed; an
    /// `arm_earlier` racing with this release is the same race as one right after it (the
    /// next holder's `epoll_wait` finds the timerfd readable).
    pub(crate) fn release(&self) {
        // SeqCst: as every access to `until` (it is read with `held` in `rearm_after_cancel`).
        if self.until.load(Ordering::SeqCst) != u64::MAX {
            let _arm = self.arm_lock.lock().unwrap_or_else(|e| e.into_inner());
            self.set_timer(u64::MAX);
        }
        self.held.store(false, Ordering::SeqCst);
    }

    pub(crate) fn is_held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }

    /// Arms the timerfd at `deadline` if that is earlier than where it is armed (the holder
    /// before it waits, or a thread that added an earlier timer while the holder waits).
    pub(crate) fn arm_earlier(&self, deadline: u64) {
        if deadline >= self.until.load(Ordering::SeqCst) {
            return;
        }
        let _arm = self.arm_lock.lock().unwrap_or_else(|e| e.into_inner());
        if deadline < self.until.load(Ordering::SeqCst) {
            self.set_timer(deadline);
        }
    }

    /// The timer at `cancelled` was removed; if the timerfd was armed for it, re-arm it at
    /// `next()` (the nearest deadline left) — later, without waking the holder.
    pub(crate) fn rearm_after_cancel(&self, cancelled: u64, next: impl Fn() -> u64) {
        if !self.is_held() || self.until.load(Ordering::SeqCst) != cancelled {
            return;
        }
        let _arm = self.arm_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_held() && self.until.load(Ordering::SeqCst) == cancelled {
            let n = next();
            self.set_timer(n);
            // A timer added meanwhile on another heap that `next` did not see yet: its adder
            // stores the heap's deadline, then (in `arm_earlier`) reads `until`, which still
            // said `cancelled`, and left. Looking again after our store (all SeqCst: the
            // adder's store and load against ours) means either it saw `n` and arms its
            // earlier deadline itself, or we see its deadline here.
            let m = next();
            if m < n {
                self.set_timer(m);
            }
        }
    }

    /// Arms (or with `u64::MAX` disarms) the timerfd; the caller holds `arm_lock`.
    fn set_timer(&self, deadline: u64) {
        self.until.store(deadline, Ordering::SeqCst);
        let value = if deadline == u64::MAX {
            libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            } // disarm
        } else {
            // At least 1 ns: a zero it_value would disarm instead.
            let at = self.epoch_monotonic.saturating_add(deadline).max(1);
            libc::timespec {
                tv_sec: (at / 1_000_000_000) as libc::time_t,
                tv_nsec: (at % 1_000_000_000) as libc::c_long,
            }
        };
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: value,
        };
        // SAFETY: a valid timerfd and itimerspec; the old value is not wanted.
        unsafe {
            libc::timerfd_settime(
                self.timer.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            );
        }
    }

    /// Waits until `wake`, the armed deadline or IO readiness, and wakes the tasks waiting for
    /// the sockets that became ready. Only the holder calls this.
    pub(crate) fn wait(&self) {
        self.poll(-1);
    }

    /// Takes the IO events that are ready now, without blocking, if sockets are registered and
    /// no holder waits in `epoll_wait` (it takes them). Returns how many sockets were ready.
    pub(crate) fn poll_io(&self) -> usize {
        if self.registry.is_empty() || self.is_held() {
            return 0;
        }
        self.poll(0)
    }

    /// One `epoll_wait` with `timeout_ms`; returns the number of socket events dispatched.
    fn poll(&self, timeout_ms: libc::c_int) -> usize {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS];
        // SAFETY: `events` is a valid buffer of EVENTS entries.
        let n = unsafe {
            libc::epoll_wait(
                self.epoll.as_raw_fd(),
                events.as_mut_ptr(),
                EVENTS as libc::c_int,
                timeout_ms,
            )
        };
        self.polls.fetch_add(1, Ordering::Relaxed);
        let events = &mut events[..n.max(0) as usize];
        let mut sockets = 0;
        for ev in events.iter() {
            let fd = match ev.u64 {
                WAKE_TOKEN => self.event.as_raw_fd(),
                TIMER_TOKEN => self.timer.as_raw_fd(),
                _ => {
                    sockets += 1;
                    continue;
                }
            };
            if timeout_ms == 0 {
                continue; // the holder's (see "Netpoller")
            }
            let mut buf = 0u64;
            // SAFETY: reading 8 bytes from our nonblocking eventfd/timerfd into a u64.
            unsafe { libc::read(fd, (&raw mut buf).cast(), 8) };
        }
        if sockets > 0 {
            self.registry.dispatch(events);
        }
        sockets
    }

    /// Registers `fd` (a nonblocking socket) edge-triggered for reading and writing.
    pub(crate) fn register(&self, fd: libc::c_int) -> io::Result<Registration> {
        let registration = self.registry.insert();
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: registration.token(),
        };
        // SAFETY: a valid epoll fd; `fd` is the caller's open socket; `ev` is a valid event.
        let r =
            unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if r < 0 {
            return Err(io::Error::last_os_error()); // `registration`'s drop frees the slot
        }
        Ok(registration)
    }

    /// Interrupts the holder's wait (or makes its next wait return at once).
    pub(crate) fn wake(&self) {
        let one = 1u64;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe { libc::write(self.event.as_raw_fd(), (&raw const one).cast(), 8) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timerfd's remaining time, in ns (0: disarmed).
    fn timerfd_left(driver: &Driver) -> u64 {
        let mut spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
        };
        // SAFETY: a valid timerfd and out-pointer.
        let r = unsafe { libc::timerfd_gettime(driver.timer.as_raw_fd(), &mut spec) };
        assert_eq!(r, 0);
        spec.it_value.tv_sec as u64 * 1_000_000_000 + spec.it_value.tv_nsec as u64
    }

    #[test]
    #[cfg_attr(miri, ignore)] // epoll and timerfd system calls
    fn releasing_the_driver_disarms_a_timerfd_armed_by_its_holder() {
        let epoch = std::time::Instant::now();
        let driver = Driver::new(epoch).unwrap();
        assert!(driver.try_acquire());
        driver.arm_earlier(60_000_000_000); // a minute after the epoch
        assert!(timerfd_left(&driver) > 0);
        driver.release();
        assert_eq!(timerfd_left(&driver), 0);
        assert_eq!(driver.until.load(Ordering::SeqCst), u64::MAX);
        // The next holder arms it again.
        assert!(driver.try_acquire());
        driver.arm_earlier(60_000_000_000);
        assert!(timerfd_left(&driver) > 0);
    }

    #[test]
    #[cfg_attr(miri, ignore)] // epoll and timerfd system calls
    fn releasing_an_unarmed_driver_leaves_it_unarmed_and_free() {
        let driver = Driver::new(std::time::Instant::now()).unwrap();
        for _ in 0..3 {
            assert!(driver.try_acquire());
            assert!(!driver.try_acquire(), "held twice");
            driver.release();
            assert_eq!(timerfd_left(&driver), 0);
            assert_eq!(driver.until.load(Ordering::SeqCst), u64::MAX);
        }
    }
}
