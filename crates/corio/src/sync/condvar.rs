//! `Condvar`: wait for a condition under a corio [`Mutex`], suspending instead of blocking.
//!
//! A condvar is a [`Notify`] without stored permits: `notify_one` wakes the longest waiter and
//! is lost if nobody waits, as with std's condvar. The waiter registers *before* it releases the
//! mutex ([`Notified::enable`]), so a notifier that takes the mutex after it and notifies cannot
//! be missed. A waiter cancelled after being notified passes the notification on.
//!
//! Spurious wake-ups are part of the contract (as for every condvar): `notify_waiters`-style
//! wake-ups, a cancelled waiter passing on its notification. Use
//! [`wait_while`](Condvar::wait_while), or re-check the condition in a loop.

use std::pin::{Pin, pin};

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
        mutex.lock_async().await
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
