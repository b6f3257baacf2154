//! Putting a worker to sleep and waking it, on a futex or inside the driver.
//!
//! A worker sleeps in one of two ways: on its own futex word, indefinitely, or — for at most
//! one worker at a time — in the driver's `epoll_wait`, until the nearest timer (so an idle
//! runtime with no timers makes no wake-ups at all). [`Unparker::unpark`] wakes it either way.
//!
//! # Protocol
//!
//! The word holds `EMPTY`, `PARKED` (on the futex), `PARKED_DRIVER`, or `NOTIFIED`.
//!
//! 1. `park`: CAS `EMPTY → PARKED`; if the word was `NOTIFIED`, consume it and return. Then
//!    `futex_wait` while the word is `PARKED`, and consume `NOTIFIED`.
//! 2. `park_driver`: CAS `EMPTY → PARKED_DRIVER` (or consume `NOTIFIED` and return), wait in
//!    the driver, swapping the word back to `EMPTY` as soon as `epoll_wait` returns (before
//!    the driver wakes the ready sockets' tasks, which may `unpark` this very worker: it is
//!    awake, and a `NOTIFIED` is all they need to leave), and again when the driver returns.
//! 3. `unpark`: swap in `NOTIFIED`; if the old value was `PARKED`, `futex_wake`; if it was
//!    `PARKED_DRIVER`, wake the driver (an `eventfd` write). A `NOTIFIED` left behind makes the
//!    next park return at once: a wake-up is never lost, at worst one is spurious.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
use std::time::Duration;

use super::driver::Driver;

const EMPTY: u32 = 0;
const PARKED: u32 = 1;
const PARKED_DRIVER: u32 = 2;
const NOTIFIED: u32 = 3;

/// One worker's sleep word.
pub(crate) struct Unparker {
    state: AtomicU32,
}

impl Unparker {
    pub(crate) fn new() -> Unparker {
        Unparker {
            state: AtomicU32::new(EMPTY),
        }
    }

    /// Sleeps on the futex until `unpark`. Only the owning worker calls this.
    pub(crate) fn park(&self) {
        // Acquire: pairs with the Release swap in `unpark`, so what the waker published before
        // waking us is visible.
        if self
            .state
            .compare_exchange(EMPTY, PARKED, Acquire, Acquire)
            .is_err()
        {
            self.state.store(EMPTY, Release); // it was NOTIFIED
            return;
        }
        loop {
            futex_wait(&self.state, PARKED);
            if self
                .state
                .compare_exchange(NOTIFIED, EMPTY, Acquire, Acquire)
                .is_ok()
            {
                return;
            }
            // Spurious futex wake-up: sleep again.
        }
    }

    /// Sleeps in the driver until its armed deadline or `unpark`. Returns whether it waited
    /// there (false: a `NOTIFIED` was pending, and it returned without polling).
    pub(crate) fn park_driver(&self, driver: &Driver) -> bool {
        if self
            .state
            .compare_exchange(EMPTY, PARKED_DRIVER, Acquire, Acquire)
            .is_err()
        {
            self.state.store(EMPTY, Release);
            return false;
        }
        // Awake as soon as `epoll_wait` returns: the tasks the driver then wakes from this
        // thread must not write the eventfd to interrupt a wait that is over (step 2). The
        // Acquire pairs with an `unpark`'s Release swap, as below.
        driver.wait(|| {
            self.state.swap(EMPTY, Acquire);
        });
        // Consume a NOTIFIED that arrived since; either way we are awake now.
        self.state.swap(EMPTY, Acquire);
        true
    }

    /// Consumes a pending `NOTIFIED` (owner only, awake): called when the owner found the
    /// work it was notified of without sleeping (`WorkerCtx::spin`) and is about to
    /// look at its queues, so that its next park does not return at once for a wake-up it
    /// has already taken. A wake-up whose `NOTIFIED` this consumes published its work before
    /// (the Release swap in `unpark`, this Acquire), so the look that follows sees that work.
    pub(crate) fn clear_notified(&self) {
        let _ = self
            .state
            .compare_exchange(NOTIFIED, EMPTY, Acquire, Acquire);
    }

    /// Wakes the worker, or makes its next park return at once.
    pub(crate) fn unpark(&self, driver: &Driver) {
        // AcqRel: release what we published before waking; acquire the parker's state.
        match self.state.swap(NOTIFIED, AcqRel) {
            PARKED => futex_wake(&self.state),
            PARKED_DRIVER => driver.wake(),
            _ => {}
        }
    }
}

pub(crate) fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: FUTEX_WAIT on a valid aligned u32 with no timeout; the kernel only reads it.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

pub(crate) fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

/// A one-waiter futex event with an optional timeout (sysmon's sleep).
pub(crate) struct Event {
    state: AtomicU32,
}

impl Event {
    pub(crate) fn new() -> Event {
        Event {
            state: AtomicU32::new(EMPTY),
        }
    }

    /// Waits until `notify` or the timeout; consumes the notification.
    pub(crate) fn wait(&self, timeout: Option<Duration>) {
        if self
            .state
            .compare_exchange(EMPTY, PARKED, Acquire, Acquire)
            .is_ok()
        {
            let ts = timeout.map(|d| libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            });
            let ts_ptr = ts
                .as_ref()
                .map_or(std::ptr::null(), |t| t as *const libc::timespec);
            // SAFETY: FUTEX_WAIT on a valid aligned u32 with a relative timeout or none.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.state.as_ptr(),
                    libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                    PARKED,
                    ts_ptr,
                );
            }
        }
        self.state.swap(EMPTY, Acquire);
    }

    pub(crate) fn notify(&self) {
        if self.state.swap(NOTIFIED, AcqRel) == PARKED {
            futex_wake(&self.state);
        }
    }
}
