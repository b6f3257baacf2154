//! `RwLock`: many readers or one writer, FIFO-fair, on the batch semaphore.
//!
//! As tokio's `RwLock`: a semaphore with [`MAX_READS`] permits; a reader takes one, a writer
//! takes them all. The semaphore hands permits out strictly in queue order (`semaphore.rs`,
//! "Invariant"), so a queued writer holds back the readers that arrive after it: neither side
//! starves. A writer cancelled while it waits gives back the permits it had collected.

use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};

use super::semaphore::BatchSemaphore;

/// How many readers may hold the lock at once (the writer takes all of them).
pub const MAX_READS: usize = u32::MAX as usize >> 3;

/// A reader-writer lock whose waiters suspend (coroutine), return `Pending` (task) or park
/// (thread). Guards may be held across suspensions.
///
/// ```
/// use corio::sync::RwLock;
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let lock = RwLock::new(5);
///     {
///         let (r1, r2) = (lock.read(), lock.read());
///         assert_eq!(*r1 + *r2, 10);
///         assert!(lock.try_write().is_none());
///     }
///     *lock.write() += 1;
///     assert_eq!(*lock.read(), 6);
/// });
/// ```
pub struct RwLock<T: ?Sized> {
    sem: BatchSemaphore,
    data: UnsafeCell<T>,
}

// SAFETY: a writer gets `&mut T` alone (needs `T: Send` to hand it across threads); readers share
// `&T` from many threads at once (needs `T: Sync`), as `std::sync::RwLock`.
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}

impl<T> RwLock<T> {
    /// An unlocked lock holding `value`.
    pub fn new(value: T) -> RwLock<T> {
        RwLock {
            sem: BatchSemaphore::new(MAX_READS),
            data: UnsafeCell::new(value),
        }
    }

    /// The value, consuming the lock.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Shared access, waiting blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`read_async`](Self::read_async)`().await`.
    #[track_caller]
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        super::wait_for(|| self.try_read(), self.read_async())
    }

    /// Shared access, as a future.
    pub fn read_async(&self) -> impl Future<Output = RwLockReadGuard<'_, T>> + '_ {
        let acquire = self.sem.acquire(1);
        async move {
            acquire.await;
            RwLockReadGuard { lock: self }
        }
    }

    /// Exclusive access, waiting blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`write_async`](Self::write_async)`().await`.
    #[track_caller]
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        super::wait_for(|| self.try_write(), self.write_async())
    }

    /// Exclusive access, as a future.
    pub fn write_async(&self) -> impl Future<Output = RwLockWriteGuard<'_, T>> + '_ {
        let acquire = self.sem.acquire(MAX_READS);
        async move {
            acquire.await;
            RwLockWriteGuard { lock: self }
        }
    }

    /// Shared access if it is free now and no writer is queued.
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        self.sem
            .try_acquire(1)
            .then(|| RwLockReadGuard { lock: self })
    }

    /// Exclusive access if the lock is free now.
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        self.sem
            .try_acquire(MAX_READS)
            .then(|| RwLockWriteGuard { lock: self })
    }

    /// The value, through a unique borrow.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

/// Shared access to an [`RwLock`]'s value; released when dropped.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

/// Exclusive access to an [`RwLock`]'s value; released when dropped.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

// SAFETY: a read guard hands out `&T` on whichever thread holds it: needs `T: Sync`.
unsafe impl<T: ?Sized + Sync> Send for RwLockReadGuard<'_, T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}
// SAFETY: a write guard hands out `&mut T` (needs `T: Send` to move) and, shared, `&T`
// (`T: Sync`).
unsafe impl<T: ?Sized + Send + Sync> Send for RwLockWriteGuard<'_, T> {}
// SAFETY: shared, a write guard gives `&T` only.
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: a read permit is held, so no writer exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.sem.release(1);
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: every permit is held by this guard: nobody else has access.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: every permit is held by this guard: nobody else has access.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.sem.release(MAX_READS);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
