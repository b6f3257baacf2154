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
//! `until` is the deadline the timerfd is armed at (`u64::MAX`: disarmed); it may also have
//! expired and not been read yet (the timerfd is then readable, and the next holder's
//! `epoll_wait` returns at once). Every `timerfd_settime`, and the holder's read of an
//! expiry, happen under `arm_lock`, so `until` always says what the timerfd holds: a read
//! that finds an expiry sets it to `u64::MAX` (a one-shot timerfd is disarmed once it has
//! fired). [`arm_earlier`] only ever moves `until` earlier; [`arm_for_wait`] (the holder,
//! before it waits) and [`rearm_after_cancel`] may move it later, recomputing it from the
//! workers' heaps.
//!
//! # The timerfd stays armed between waits
//!
//! The holder used to arm the timerfd at the nearest deadline before each wait and disarm it
//! when it left the driver: two `timerfd_settime`s per park, 0.095 per request for
//! `hyper_hello` under `wrk`, whose every request starts and cancels a 30 s header-read
//! timeout, so the nearest deadline is a different one at each park (`docs/net-bench.md`,
//! "hyper, second pass"). tokio passes its timeout to `epoll_wait` instead, which costs
//! nothing but cannot be moved without waking the waiter, and has millisecond resolution.
//! Now the timerfd is left as it is when the holder leaves, and the next holder sets it only
//! when it must move ([`arm_for_wait`]):
//!
//! - earlier, always: a deadline before `until` would be missed;
//! - later, only when the timerfd would otherwise wake the holder before half its real wait
//!   has passed, or when no timer is left at all (then it is disarmed, so that an idle
//!   runtime makes no wake-up). Otherwise it wakes the holder early at most once, and the
//!   holder, finding nothing due, re-arms it then. For a server whose nearest deadline is
//!   always about 30 s away, that is one `timerfd_settime` per 15 s instead of two per park.
//!
//! A timerfd left armed while nobody waits in the driver costs nothing when it fires: there
//! is no waiter to wake, and the next holder reads the expiry.
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
//! # The holder wakes its own tasks
//!
//! The holder dispatches the events its `epoll_wait` returned while it still counts as parked
//! (it is on the idle list until it leaves `park`). The second task it wakes is movable work
//! behind the first, and "wake a parked worker" (`Shared::notify_work`) may pick the holder
//! itself; with its park state still `PARKED_DRIVER`, that wake-up wrote the eventfd, and the
//! holder's next `epoll_wait` returned at once for it: a `write`, a `read` and an empty park
//! for nothing, after 4 in 10 of `hyper_hello`'s parks under `wrk` (`docs/net-bench.md`,
//! "hyper, second pass"). So [`wait`] calls back as soon as `epoll_wait` returns, and the
//! holder marks itself awake there (`Unparker::park_driver`): a wake-up from then on only
//! leaves a `NOTIFIED` that the holder consumes on its way back to its queues.
//!
//! [`wait`]: Driver::wait
//! [`poll_io`]: Driver::poll_io
//! [`wake`]: Driver::wake
//! [`arm_earlier`]: Driver::arm_earlier
//! [`arm_for_wait`]: Driver::arm_for_wait
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
    /// Shared with the registry only weakly (`Registration::deregister`): the driver owns it.
    epoll: Arc<OwnedFd>,
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
    /// Socket events dispatched so far (any poller): the only worker of a `workers(1)`
    /// runtime spins before it parks only while this moves (`WorkerCtx::spin`).
    pub(crate) socket_events: AtomicU64,
    /// Times [`wake`](Driver::wake) interrupted the holder (eventfd writes), for `Metrics`.
    pub(crate) wakes: AtomicU64,
    /// Times the timerfd was armed or disarmed (`timerfd_settime` calls), for `Metrics`.
    pub(crate) timer_sets: AtomicU64,
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// How the driver's own descriptors (its eventfd and timer) are registered: level-triggered.
/// Miri supports only edge-triggered registrations; under it nothing polls the driver (the
/// task harness's unit tests run tasks by hand), so the difference is never seen.
const INTERNAL_EVENTS: u32 = if cfg!(miri) {
    (libc::EPOLLIN | libc::EPOLLET) as u32
} else {
    libc::EPOLLIN as u32
};

/// The driver's timer: a `timerfd` on the monotonic clock.
#[cfg(not(miri))]
fn timer_fd() -> io::Result<OwnedFd> {
    // SAFETY: a plain system call; its result is checked by `owned`.
    owned(unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
        )
    })
}

/// Under Miri, which has no `timerfd`: an eventfd in its place, so that a runtime's shared
/// state can be built for the task harness's unit tests (`task/tests.rs`), which run tasks by
/// hand and arm no timer (arming it would fail: `timerfd_settime` is not supported either).
#[cfg(miri)]
fn timer_fd() -> io::Result<OwnedFd> {
    // SAFETY: a plain system call; its result is checked by `owned`.
    owned(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })
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

/// Whether a timerfd armed at `until` would wake a holder whose nearest deadline is `next`
/// (later) before half its wait has passed (times on the runtime clock, `now` the present):
/// then it is worth a `timerfd_settime` to move it ("The timerfd stays armed between waits").
fn fires_too_early(until: u64, next: u64, now: u64) -> bool {
    until.saturating_sub(now) < next.saturating_sub(now) / 2
}

impl Driver {
    /// Its descriptors: epoll, eventfd, timerfd (for `fd_table::unshare_keeping`).
    pub(crate) fn fds(&self) -> [std::os::fd::RawFd; 3] {
        [
            self.epoll.as_raw_fd(),
            self.event.as_raw_fd(),
            self.timer.as_raw_fd(),
        ]
    }

    /// A driver for a runtime whose clock started at `epoch` (read just before this call).
    pub(crate) fn new(epoch: std::time::Instant) -> io::Result<Driver> {
        // SAFETY: plain system calls; results are checked by `owned`.
        let epoll = Arc::new(owned(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?);
        // SAFETY: as above.
        let event = owned(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
        let timer = timer_fd()?;
        for (fd, token) in [(&event, WAKE_TOKEN), (&timer, TIMER_TOKEN)] {
            let mut ev = libc::epoll_event {
                events: INTERNAL_EVENTS,
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
        let registry = Arc::new(Registry::new(Arc::downgrade(&epoll)));
        Ok(Driver {
            epoll,
            event,
            timer,
            epoch_monotonic,
            held: AtomicBool::new(false),
            until: AtomicU64::new(u64::MAX),
            arm_lock: Mutex::new(()),
            registry,
            polls: AtomicU64::new(0),
            socket_events: AtomicU64::new(0),
            wakes: AtomicU64::new(0),
            timer_sets: AtomicU64::new(0),
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

    /// Gives up the driver. The timerfd stays as it is ("The timerfd stays armed between
    /// waits"): the next holder moves it if it must.
    pub(crate) fn release(&self) {
        // SeqCst: as every access to `held` (it is read with `until` in `rearm_after_cancel`).
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

    /// The holder, before it waits: makes the timerfd wake it by `next()` (the nearest
    /// deadline of any worker), moving it only when it must ("The timerfd stays armed between
    /// waits"). `now` is the runtime clock, read only if the timerfd might move later.
    pub(crate) fn arm_for_wait(&self, next: impl Fn() -> u64, now: impl FnOnce() -> u64) {
        let n = next();
        let until = self.until.load(Ordering::SeqCst);
        if n < until {
            self.arm_earlier(n);
        } else if n > until && (n == u64::MAX || fires_too_early(until, n, now())) {
            let _arm = self.arm_lock.lock().unwrap_or_else(|e| e.into_inner());
            if self.until.load(Ordering::SeqCst) == until {
                self.set_later(&next);
            }
        }
    }

    /// The timer at `cancelled` was removed; if the timerfd was armed for it, or is armed for
    /// a deadline already gone while no timer is left, re-arm it at `next()` (the nearest
    /// deadline left) — later, without waking the holder. The second case: a deadline whose
    /// timer was cancelled while the driver was free stays in the timerfd, and a holder whose
    /// nearest deadline is a little later keeps it ("The timerfd stays armed between waits");
    /// when that last timer goes too, the holder would wake at the stale deadline for nothing
    /// (an idle runtime's wake-up, and sysmon's ~60 after it: `docs/flake-hunt.md`).
    pub(crate) fn rearm_after_cancel(&self, cancelled: u64, next: impl Fn() -> u64) {
        let stale = |until: u64| until == cancelled || (until != u64::MAX && next() == u64::MAX);
        if !self.is_held() || !stale(self.until.load(Ordering::SeqCst)) {
            return;
        }
        let _arm = self.arm_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_held() && stale(self.until.load(Ordering::SeqCst)) {
            self.set_later(&next);
        }
    }

    /// Arms the timerfd at `next()`, which may be later than `until`; the caller holds
    /// `arm_lock`.
    fn set_later(&self, next: &impl Fn() -> u64) {
        let n = next();
        self.set_timer(n);
        // A timer added meanwhile on another heap that `next` did not see yet: its adder
        // stores the heap's deadline, then (in `arm_earlier`) reads `until`, which still
        // said the old deadline, and left. Looking again after our store (all SeqCst: the
        // adder's store and load against ours) means either it saw `n` and arms its
        // earlier deadline itself, or we see its deadline here.
        let m = next();
        if m < n {
            self.set_timer(m);
        }
    }

    /// The holder's `epoll_wait` found the timerfd readable: takes the expiry, after which
    /// the one-shot timerfd is disarmed. Under `arm_lock`, so that a `timerfd_settime` made
    /// after the expiry (which clears it: the read then finds nothing) is not mistaken for it.
    fn take_timer_expiry(&self) {
        let _arm = self.arm_lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut expirations = 0u64;
        // SAFETY: reading 8 bytes from our nonblocking timerfd into a u64.
        let n = unsafe { libc::read(self.timer.as_raw_fd(), (&raw mut expirations).cast(), 8) };
        if n == 8 {
            self.until.store(u64::MAX, Ordering::SeqCst);
        }
    }

    /// Arms (or with `u64::MAX` disarms) the timerfd; the caller holds `arm_lock`.
    fn set_timer(&self, deadline: u64) {
        self.timer_sets.fetch_add(1, Ordering::Relaxed);
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
    /// the sockets that became ready. Only the holder calls this; it calls `awake` as soon as
    /// `epoll_wait` returns, before it wakes those tasks (see "The holder wakes its own
    /// tasks").
    pub(crate) fn wait(&self, awake: impl FnOnce()) {
        self.poll(-1, awake);
    }

    /// Takes the IO events that are ready now, without blocking, if sockets are registered and
    /// no holder waits in `epoll_wait` (it takes them). Returns how many sockets were ready.
    pub(crate) fn poll_io(&self) -> usize {
        self.try_poll_io().unwrap_or(0)
    }

    /// [`poll_io`](Self::poll_io), saying whether it polled: `None` when it made no
    /// `epoll_wait` (no socket registered, or the holder waits in it).
    pub(crate) fn try_poll_io(&self) -> Option<usize> {
        if self.registry.is_empty() || self.is_held() {
            return None;
        }
        Some(self.poll(0, || {}))
    }

    /// One `epoll_wait` with `timeout_ms`, then `awake`; returns the number of socket events
    /// dispatched.
    fn poll(&self, timeout_ms: libc::c_int, awake: impl FnOnce()) -> usize {
        // Uninitialised: the kernel writes the entries it returns, and zeroing 1.5 KiB per
        // poll cost more than the rest of an empty poll's user-space work (a spinning
        // single worker polls about once per request: `WorkerCtx::spin`).
        let mut events = [const { std::mem::MaybeUninit::<libc::epoll_event>::uninit() }; EVENTS];
        // SAFETY: `events` is a writable buffer of EVENTS entries; the kernel only writes it.
        let n = unsafe {
            libc::epoll_wait(
                self.epoll.as_raw_fd(),
                events.as_mut_ptr().cast::<libc::epoll_event>(),
                EVENTS as libc::c_int,
                timeout_ms,
            )
        };
        self.polls.fetch_add(1, Ordering::Relaxed);
        awake();
        // SAFETY: `epoll_wait` initialised the first `n` entries (none on an error, -1).
        let events = unsafe {
            std::slice::from_raw_parts(
                events.as_ptr().cast::<libc::epoll_event>(),
                n.max(0) as usize,
            )
        };
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
            if ev.u64 == TIMER_TOKEN {
                self.take_timer_expiry();
                continue;
            }
            let mut buf = 0u64;
            // SAFETY: reading 8 bytes from our nonblocking eventfd into a u64 (the timerfd is read
            // by `take_timer_expiry` above).
            unsafe { libc::read(fd, (&raw mut buf).cast(), 8) };
        }
        if sockets > 0 {
            self.socket_events
                .fetch_add(sockets as u64, Ordering::Relaxed);
            self.registry.dispatch(events);
        }
        sockets
    }

    /// Registers `fd` (a nonblocking socket) edge-triggered for reading and writing, and for
    /// TCP urgent data (`EPOLLPRI`: `io/registry.rs`, "the protocol").
    pub(crate) fn register(&self, fd: libc::c_int) -> io::Result<Registration> {
        let registration = self.registry.insert();
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN
                | libc::EPOLLOUT
                | libc::EPOLLRDHUP
                | libc::EPOLLPRI
                | libc::EPOLLET) as u32,
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
        self.wakes.fetch_add(1, Ordering::Relaxed);
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

    const SECOND: u64 = 1_000_000_000;

    #[test]
    #[cfg_attr(miri, ignore)] // epoll and timerfd system calls
    fn the_timerfd_stays_armed_when_the_holder_leaves_and_the_next_one_keeps_it() {
        let driver = Driver::new(std::time::Instant::now()).unwrap();
        assert!(driver.try_acquire());
        driver.arm_for_wait(|| 60 * SECOND, || 0);
        assert!(timerfd_left(&driver) > 0);
        driver.release();
        assert_eq!(driver.until.load(Ordering::SeqCst), 60 * SECOND);
        assert!(timerfd_left(&driver) > 0);
        // The next holder's nearest deadline is a little later: the timerfd would wake it
        // early once, in a minute; not worth a `timerfd_settime` now.
        let sets = driver.timer_sets.load(Ordering::Relaxed);
        assert!(driver.try_acquire());
        driver.arm_for_wait(|| 61 * SECOND, || SECOND);
        assert_eq!(driver.timer_sets.load(Ordering::Relaxed), sets);
        assert_eq!(driver.until.load(Ordering::SeqCst), 60 * SECOND);
        // An earlier one always moves it.
        driver.arm_for_wait(|| 30 * SECOND, || SECOND);
        assert_eq!(driver.until.load(Ordering::SeqCst), 30 * SECOND);
    }

    #[test]
    #[cfg_attr(miri, ignore)] // epoll and timerfd system calls
    fn the_timerfd_moves_later_when_it_would_wake_the_holder_before_half_its_wait() {
        let driver = Driver::new(std::time::Instant::now()).unwrap();
        assert!(driver.try_acquire());
        driver.arm_for_wait(|| 10 * SECOND, || 0);
        driver.release();
        assert!(driver.try_acquire());
        // At 9 s, the nearest deadline is at 40 s: the timerfd would fire in 1 s of 31.
        driver.arm_for_wait(|| 40 * SECOND, || 9 * SECOND);
        assert_eq!(driver.until.load(Ordering::SeqCst), 40 * SECOND);
        let left = timerfd_left(&driver);
        assert!(left > 20 * SECOND, "{left} ns left");
    }

    #[test]
    #[cfg_attr(miri, ignore)] // epoll and timerfd system calls
    fn the_timerfd_is_disarmed_when_no_timer_is_left() {
        let driver = Driver::new(std::time::Instant::now()).unwrap();
        assert!(driver.try_acquire());
        driver.arm_for_wait(|| 3600 * SECOND, || 0);
        driver.release();
        assert!(driver.try_acquire());
        driver.arm_for_wait(|| u64::MAX, || unreachable!("no clock read needed"));
        assert_eq!(driver.until.load(Ordering::SeqCst), u64::MAX);
        assert_eq!(timerfd_left(&driver), 0);
    }

    /// The flake of `rt_idle`'s `two_workers::cancelled_timers_leave_no_wake_ups_behind`: the
    /// timerfd kept a deadline whose timer was cancelled while nobody held the driver; the next
    /// holder kept it (its own nearest deadline was a little later); that last timer was then
    /// cancelled on the other worker while the holder waited: no timer left, and the holder
    /// woke at the stale deadline anyway (and the wake-up woke sysmon: ~60 more switches).
    #[test]
    #[cfg_attr(miri, ignore)] // epoll and timerfd system calls
    fn the_timerfd_is_disarmed_when_the_last_timer_is_cancelled_under_a_stale_deadline() {
        let driver = Driver::new(std::time::Instant::now()).unwrap();
        assert!(driver.try_acquire());
        driver.arm_for_wait(|| 10 * SECOND, || 0);
        driver.release();
        // Cancelled while the driver is free: the timerfd stays at 10 s.
        driver.rearm_after_cancel(10 * SECOND, || 11 * SECOND);
        assert!(driver.try_acquire());
        driver.arm_for_wait(|| 11 * SECOND, || 0);
        assert_eq!(driver.until.load(Ordering::SeqCst), 10 * SECOND);
        // The last timer, at 11 s, cancelled while the holder waits.
        driver.rearm_after_cancel(11 * SECOND, || u64::MAX);
        assert_eq!(driver.until.load(Ordering::SeqCst), u64::MAX);
        assert_eq!(timerfd_left(&driver), 0);
    }

    #[test]
    #[cfg_attr(miri, ignore)] // epoll and timerfd system calls
    fn an_expiry_taken_by_the_holder_leaves_the_timerfd_disarmed_and_rearmable() {
        let epoch = std::time::Instant::now();
        let driver = Driver::new(epoch).unwrap();
        assert!(driver.try_acquire());
        // Already due: the wait returns at once with the expiry.
        driver.arm_for_wait(|| 1, || 0);
        driver.wait(|| {});
        assert_eq!(driver.until.load(Ordering::SeqCst), u64::MAX);
        // The same deadline again (a timer not fired yet, say) arms it again: a holder
        // that kept a stale `until` would wait forever.
        driver.arm_for_wait(|| 1, || 0);
        assert_eq!(driver.until.load(Ordering::SeqCst), 1);
        driver.wait(|| {});
        assert_eq!(driver.until.load(Ordering::SeqCst), u64::MAX);
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
