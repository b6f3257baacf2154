//! `Condvar`: wait for a condition under a corio [`Mutex`], suspending instead of blocking.
//!
//! A condvar is a [`Notify`] without stored permits: `notify_one` wakes the longest waiter and
//! is lost if nobody waits, as with std's condvar. The waiter registers *before* it releases the
//! mutex ([`Notified::enable`]), so a notifier that takes the mutex after it and notifies cannot
//! be missed. A waiter cancelled after being notified passes the notification on: before it
//! saw it (its `Notified` future's drop does that), and after it saw it, while it waits to
//! relock the mutex (a [`PassOn`] guard armed for that wait does).
//!
//! Spurious wake-ups are part of the contract (as for every condvar): `notify_waiters`-style
//! wake-ups, a cancelled waiter passing on its notification. Use
//! [`wait_while`](Condvar::wait_while), or re-check the condition in a loop.

use std::pin::{Pin, pin};
use std::time::Duration;

use super::mutex::{Mutex, MutexGuard};
use super::notify::{Notified, Notify};

/// A condition variable for corio's [`Mutex`].
///
/// ```
/// use std::sync::Arc;
/// use corio::sync::{Condvar, Mutex};
///
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// rt.run(|| {
///     let pair = Arc::new((Mutex::new(false), Condvar::new()));
///     let p = pair.clone();
///     let setter = corio::spawn(async move {
///         *p.0.lock_async().await = true;
///         p.1.notify_all();
///     });
///     let (lock, cv) = &*pair;
///     let ready = cv.wait_while(lock.lock(), |ready| !*ready);
///     assert!(*ready);
///     drop(ready);
///     setter.join().unwrap();
/// });
/// ```
#[derive(Debug)]
pub struct Condvar {
    notify: Notify,
}

/// A notification a waiter has seen but not yet acted on, while it waits to relock the mutex:
/// if the wait is cancelled then (its future dropped by a timeout, an abort, a `select`), the
/// drop passes the notification on to the next waiter, as `Notified`'s drop does before it
/// is seen. After a `notify_all` that is a spurious wake-up, which the contract allows.
struct PassOn<'a> {
    notify: Option<&'a Notify>,
}

impl<'a> PassOn<'a> {
    fn armed(notify: &'a Notify) -> PassOn<'a> {
        PassOn {
            notify: Some(notify),
        }
    }

    /// The wait ended with the mutex relocked: the waiter acts on its notification.
    fn disarm(mut self) {
        self.notify = None;
    }
}

impl Drop for PassOn<'_> {
    fn drop(&mut self) {
        if let Some(notify) = self.notify {
            notify.notify_one();
        }
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Condvar::new()
    }
}

impl Condvar {
    /// A condvar with nobody waiting.
    pub fn new() -> Condvar {
        Condvar {
            notify: Notify::with_permits(false),
        }
    }

    /// Releases `guard`'s mutex, waits for a notification, relocks and returns the guard;
    /// blocking-style. May wake spuriously.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`wait_async`](Self::wait_async).
    #[track_caller]
    pub fn wait<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        crate::block_on(self.wait_async(guard))
    }

    /// [`wait`](Self::wait), as a future.
    pub async fn wait_async<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        let mutex: &'a Mutex<T> = MutexGuard::mutex(&guard);
        let mut notified: Pin<&mut Notified<'_>> = pin!(self.notify.notified_async());
        // Registered before the mutex is released: a notifier that locks after us finds us.
        notified.as_mut().enable();
        drop(guard);
        notified.await;
        let pass_on = PassOn::armed(&self.notify);
        let guard = mutex.lock_async().await;
        pass_on.disarm();
        guard
    }

    /// Releases `guard`'s mutex and waits for a notification or until `timeout` has passed,
    /// whichever comes first; relocks and returns the guard, and whether the wait timed out;
    /// blocking-style. May wake spuriously. The time to relock is not part of `timeout`.
    ///
    /// A notification that arrives just as the timeout fires is not lost: the waiter, dropped
    /// with it, passes it on to the next waiter (module docs).
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`wait_timeout_async`](Self::wait_timeout_async).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use corio::sync::{Condvar, Mutex};
    ///
    /// let rt = corio::Runtime::builder().workers(2).build().unwrap();
    /// rt.run(|| {
    ///     let pair = Arc::new((Mutex::new(0), Condvar::new()));
    ///     let (lock, cv) = &*pair;
    ///     // Nobody notifies: the wait times out.
    ///     let (guard, res) = cv.wait_timeout(lock.lock(), Duration::from_millis(10));
    ///     assert!(res.timed_out());
    ///     drop(guard);
    ///     // Somebody does: it does not (retried, as any condvar wait may wake spuriously).
    ///     let p = pair.clone();
    ///     let setter = corio::go(move || {
    ///         *p.0.lock() = 1;
    ///         p.1.notify_all();
    ///     });
    ///     let mut guard = lock.lock();
    ///     while *guard == 0 {
    ///         let (g, res) = cv.wait_timeout(guard, Duration::from_secs(60));
    ///         assert!(!res.timed_out());
    ///         guard = g;
    ///     }
    ///     drop(guard);
    ///     setter.join().unwrap();
    /// });
    /// ```
    #[track_caller]
    pub fn wait_timeout<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> (MutexGuard<'a, T>, WaitTimeoutResult) {
        crate::block_on(self.wait_timeout_async(guard, timeout))
    }

    /// [`wait_timeout`](Self::wait_timeout), as a future.
    pub async fn wait_timeout_async<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> (MutexGuard<'a, T>, WaitTimeoutResult) {
        let mutex: &'a Mutex<T> = MutexGuard::mutex(&guard);
        // The waiter leaves the queue when its wait ends, before it relocks: a `notify_one`
        // meanwhile goes to a waiter still waiting, not to this one, which has timed out.
        // (Dropped with a notification caught as the deadline passed, it passes it on.)
        let timed_out = {
            let mut notified: Pin<&mut Notified<'_>> = pin!(self.notify.notified_async());
            // Registered before the mutex is released, as in `wait_async`.
            notified.as_mut().enable();
            drop(guard);
            crate::time::timeout_async(timeout, notified).await.is_err()
        };
        // Armed only if the wait ended with a notification.
        let pass_on = PassOn {
            notify: (!timed_out).then_some(&self.notify),
        };
        let guard = mutex.lock_async().await;
        pass_on.disarm();
        (guard, WaitTimeoutResult(timed_out))
    }

    /// Waits until `condition` is false, re-checking it after every wake-up (so spurious
    /// wake-ups are absorbed); blocking-style. Returns the guard with the condition false.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`wait_while_async`](Self::wait_while_async).
    #[track_caller]
    pub fn wait_while<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        condition: impl FnMut(&mut T) -> bool,
    ) -> MutexGuard<'a, T> {
        crate::block_on(self.wait_while_async(guard, condition))
    }

    /// [`wait_while`](Self::wait_while), as a future.
    pub async fn wait_while_async<'a, T: ?Sized>(
        &self,
        mut guard: MutexGuard<'a, T>,
        mut condition: impl FnMut(&mut T) -> bool,
    ) -> MutexGuard<'a, T> {
        while condition(&mut guard) {
            guard = self.wait_async(guard).await;
        }
        guard
    }

    /// Wakes the longest waiter, if any (a notification with nobody waiting is lost).
    pub fn notify_one(&self) {
        self.notify.notify_one();
    }

    /// Wakes every waiter.
    pub fn notify_all(&self) {
        self.notify.notify_waiters();
    }
}

/// Whether a [`Condvar::wait_timeout`] returned because its timeout passed (std's
/// `WaitTimeoutResult`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// True if the wait ended because the timeout passed, not because of a notification.
    pub fn timed_out(&self) -> bool {
        self.0
    }
}
