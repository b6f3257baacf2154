//! `OnceCell` and `Lazy`: a value initialised once, by whichever caller gets there first, while
//! the others suspend (coroutine or task) or park (thread) instead of blocking a worker.
//!
//! An initialisation lock (a one-permit [`BatchSemaphore`], FIFO) serialises the initialisers;
//! the value is published with a Release store of `ready` that every reader's Acquire load pairs
//! with. A racing initialiser that finds the lock taken waits; when it gets the lock it re-checks
//! `ready` and returns the value the winner stored, so the initialiser runs once. If it panics
//! (or its future is dropped), the lock is released with the cell still empty and the next
//! waiter runs its own initialiser. Once the value is stored the lock is closed, which
//! releases every waiter at once (as tokio's `OnceCell` closes its semaphore): a waiter
//! handed the lock but not being polled cannot hold the others back.

use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::mem::MaybeUninit;
use std::ops::Deref;

use super::semaphore::BatchSemaphore;
// Std atomics, not the loom shim: the cell's own protocol is one Release/Acquire pair; the
// lock it relies on (`BatchSemaphore`) is the part with loom models.
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Acquire, Release};

/// A cell written once; readers after that get `&T` without locking.
///
/// ```
/// use corio::sync::OnceCell;
///
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// rt.run(|| {
///     static CONFIG: OnceCell<String> = OnceCell::const_new();
///     let hs: Vec<_> = (0..4)
///         .map(|i| corio::go(move || CONFIG.get_or_init(|| format!("from {i}")).len()))
///         .collect();
///     hs.into_iter().for_each(|h| assert_eq!(h.join().unwrap(), 6));
///     assert!(CONFIG.get().unwrap().starts_with("from "));
/// });
/// ```
pub struct OnceCell<T> {
    /// Set (Release) once `value` is written; never cleared while shared.
    ready: AtomicBool,
    /// Written once by the holder of `init`, before `ready`; read only after `ready`.
    value: UnsafeCell<MaybeUninit<T>>,
    /// One permit: the right to initialise.
    init: BatchSemaphore,
}

// SAFETY: the value is written by one initialiser (any thread: `T: Send`) and then shared as
// `&T` among threads (`T: Sync`), as `std::sync::OnceLock`.
unsafe impl<T: Send + Sync> Sync for OnceCell<T> {}
// SAFETY: moving the cell moves the value: `T: Send`.
unsafe impl<T: Send> Send for OnceCell<T> {}

impl<T> Default for OnceCell<T> {
    fn default() -> Self {
        OnceCell::new()
    }
}

impl<T> OnceCell<T> {
    /// An empty cell, in a constant: `static CELL: OnceCell<u32> = OnceCell::const_new();`
    /// (as std's `OnceLock::new`).
    #[cfg(not(loom))]
    pub const fn const_new() -> OnceCell<T> {
        OnceCell {
            ready: AtomicBool::new(false),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            init: BatchSemaphore::const_new(1),
        }
    }

    /// An empty cell.
    pub fn new() -> OnceCell<T> {
        OnceCell {
            ready: AtomicBool::new(false),
            value: UnsafeCell::new(MaybeUninit::uninit()),
            init: BatchSemaphore::new(1),
        }
    }

    /// The value, if initialised.
    pub fn get(&self) -> Option<&T> {
        // Acquire: pairs with the Release store in `store`.
        if self.ready.load(Acquire) {
            // SAFETY: `ready` is set only after the value is written, and never cleared while
            // the cell is shared.
            Some(unsafe { (*self.value.get()).assume_init_ref() })
        } else {
            None
        }
    }

    /// Writes the value. Only the holder of the `init` permit calls this, once.
    fn store(&self, value: T) -> &T {
        // SAFETY: we hold the init permit and `ready` is false: nobody reads or writes `value`.
        let v = unsafe { (*self.value.get()).write(value) };
        // Release: pairs with the Acquire load in `get`.
        self.ready.store(true, Release);
        // Every waiter returns now, with the value: the right to initialise is no longer
        // passed from one to the next, which would hold a caller queued behind a waiter that
        // is not being polled (a `select!` branch not taken) although the value is there.
        // The initialiser's permit, released after this, changes nothing.
        self.init.close();
        v
    }

    /// Sets the value if the cell is empty and nobody is initialising it; else gives it back.
    pub fn set(&self, value: T) -> Result<(), T> {
        if self.get().is_some() || !self.init.try_acquire(1) {
            return Err(value);
        }
        let result = if self.get().is_some() {
            Err(value)
        } else {
            self.store(value);
            Ok(())
        };
        self.init.release(1);
        result
    }

    /// The value, initialising it with `f` if the cell is empty; racing callers wait for the
    /// one initialiser, blocking-style, and `f` runs once.
    ///
    /// # Panics
    ///
    /// With `f`'s panic (the cell stays empty and the next caller initialises). Inside an
    /// async task, if it would have to wait: use
    /// [`get_or_init_async`](Self::get_or_init_async) there.
    #[track_caller]
    pub fn get_or_init(&self, f: impl FnOnce() -> T) -> &T {
        match self.get_or_maybe_init(|| Some(f())) {
            Some(v) => v,
            None => unreachable!("corio: an initialiser that always gives a value gave none"),
        }
    }

    /// [`get_or_init`](Self::get_or_init) with an initialiser that may give up (`None`:
    /// the cell stays empty and the next caller initialises) — so that [`Lazy`] panics at its
    /// caller's line, not in a closure of its own.
    #[track_caller]
    fn get_or_maybe_init(&self, f: impl FnOnce() -> Option<T>) -> Option<&T> {
        if let Some(v) = self.get() {
            return Some(v);
        }
        // Uncontended: no waiting, so this works in an async task too.
        if self.init.try_acquire(1) {
            return self.init_holding_permit(f);
        }
        // Closed: the value is there (`store`).
        if crate::block_on(self.init.acquire_or_closed(1)).is_err() {
            return self.get();
        }
        self.init_holding_permit(f)
    }

    fn init_holding_permit(&self, f: impl FnOnce() -> Option<T>) -> Option<&T> {
        let _permit = InitPermit(&self.init);
        match self.get() {
            Some(v) => Some(v),
            None => f().map(|value| self.store(value)),
        }
    }

    /// The value, initialising it with the future `f` makes if the cell is empty; racing
    /// callers wait, and `f` runs once. If the initialising future is dropped, the next waiter
    /// initialises.
    pub async fn get_or_init_async<F: Future<Output = T>>(&self, f: impl FnOnce() -> F) -> &T {
        if let Some(v) = self.get() {
            return v;
        }
        if self.init.acquire_or_closed(1).await.is_err() {
            return self
                .get()
                .expect("corio: the init lock closes once the value is stored");
        }
        let _permit = InitPermit(&self.init);
        match self.get() {
            Some(v) => v,
            None => {
                let value = f().await;
                self.store(value)
            }
        }
    }

    /// The value, through a unique borrow.
    pub fn get_mut(&mut self) -> Option<&mut T> {
        if *self.ready.get_mut() {
            // SAFETY: initialised (`ready`), and we have the only borrow.
            Some(unsafe { self.value.get_mut().assume_init_mut() })
        } else {
            None
        }
    }

    /// The value, consuming the cell.
    pub fn into_inner(mut self) -> Option<T> {
        if std::mem::replace(self.ready.get_mut(), false) {
            // SAFETY: initialised, and `ready` is now false so `Drop` will not drop it again.
            Some(unsafe { self.value.get_mut().assume_init_read() })
        } else {
            None
        }
    }
}

/// The init permit, held by the one initialiser; released when dropped, on unwind and when the
/// initialising future is dropped too.
struct InitPermit<'a>(&'a BatchSemaphore);

impl Drop for InitPermit<'_> {
    fn drop(&mut self) {
        self.0.release(1);
    }
}

impl<T> Drop for OnceCell<T> {
    fn drop(&mut self) {
        if *self.ready.get_mut() {
            // SAFETY: initialised, dropped once (we have the only access).
            unsafe { self.value.get_mut().assume_init_drop() }
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for OnceCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OnceCell").field(&self.get()).finish()
    }
}

/// A value computed on first use by `F`, then shared; racing first users wait for the one
/// computation (see [`OnceCell::get_or_init`]).
///
/// ```
/// use corio::sync::Lazy;
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let len = rt.run(|| {
///     let table = Lazy::new(|| (0..100).collect::<Vec<u32>>());
///     table.len()
/// });
/// assert_eq!(len, 100);
/// ```
pub struct Lazy<T, F = fn() -> T> {
    cell: OnceCell<T>,
    /// Taken by the one initialiser, under the cell's init permit.
    init: UnsafeCell<Option<F>>,
}

// SAFETY: `F` is taken (moved out) by one initialiser on any thread (`F: Send`); `T` as
// `OnceCell`.
unsafe impl<T: Send + Sync, F: Send> Sync for Lazy<T, F> {}

impl<T, F: FnOnce() -> T> Lazy<T, F> {
    /// A lazy value computed by `f` on first use, in a constant (a `static`).
    ///
    /// ```
    /// use corio::sync::Lazy;
    ///
    /// static PRIMES: Lazy<Vec<u32>> = Lazy::const_new(|| vec![2, 3, 5, 7]);
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// assert_eq!(rt.run(|| PRIMES.len()), 4);
    /// ```
    #[cfg(not(loom))]
    pub const fn const_new(f: F) -> Lazy<T, F> {
        Lazy {
            cell: OnceCell::const_new(),
            init: UnsafeCell::new(Some(f)),
        }
    }

    /// A lazy value computed by `f` on first use.
    pub fn new(f: F) -> Lazy<T, F> {
        Lazy {
            cell: OnceCell::new(),
            init: UnsafeCell::new(Some(f)),
        }
    }

    /// The value, computing it first if needed (blocking-style if another caller is computing).
    ///
    /// # Panics
    ///
    /// If an earlier computation panicked (the function is gone), or as
    /// [`OnceCell::get_or_init`].
    #[track_caller]
    pub fn force(this: &Lazy<T, F>) -> &T {
        let value = this.cell.get_or_maybe_init(|| {
            // SAFETY: this closure runs only under the cell's init permit, once per successful
            // initialisation; nobody else touches `init`.
            let f = unsafe { (*this.init.get()).take() };
            f.map(|f| f())
        });
        match value {
            Some(v) => v,
            None => panic!("corio::sync::Lazy: the initialiser panicked earlier"),
        }
    }
}

impl<T, F: FnOnce() -> T> Deref for Lazy<T, F> {
    type Target = T;
    #[track_caller]
    fn deref(&self) -> &T {
        Lazy::force(self)
    }
}

impl<T: fmt::Debug, F> fmt::Debug for Lazy<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Lazy").field(&self.cell.get()).finish()
    }
}
