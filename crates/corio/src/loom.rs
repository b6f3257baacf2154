//! The one door through which lock-free code imports its synchronisation primitives.
//!
//! # Why a shim
//!
//! corio's lock-free structures (the per-P run queue first, task state words later) are
//! model-checked with [loom](https://docs.rs/loom): under `RUSTFLAGS="--cfg loom"` every atomic,
//! cell, lock and `Arc` must be loom's instrumented twin, so that loom can enumerate the
//! interleavings and the weak-memory outcomes a real CPU may produce. A module that wrote
//! `std::sync::atomic::AtomicU64` directly would be invisible to the model checker, and one that
//! wrote `loom::...` would not build without the `loom` cfg. So such modules import from here:
//!
//! ```text
//! use crate::loom::cell::UnsafeCell;
//! use crate::loom::sync::Arc;
//! use crate::loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
//! ```
//!
//! and this file decides, once, which implementation they get. The layout mirrors
//! `std::sync` / `std::cell` so that a `use` line reads like the std one it replaces.
//! (tokio's `src/loom/` is the model; this is a smaller cut of the same idea.)
//!
//! # The one API difference: `UnsafeCell`
//!
//! loom cannot watch raw-pointer dereferences, so its `UnsafeCell` has no `get()`; it hands out
//! the pointer only inside a closure (`with` for shared access, `with_mut` for exclusive access)
//! and records each access, which is how it catches two threads touching a slot at once. Without
//! loom, [`cell::UnsafeCell`] is a zero-cost wrapper around `std::cell::UnsafeCell` with the same
//! two closure methods, so code written against the shim compiles unchanged in both
//! configurations. The closures are `#[inline(always)]`; release builds see a plain pointer.
//!
//! # What is not here
//!
//! Only what a lock-free module needs at run time. Thread spawning and `loom::model` are used
//! directly by the `cfg(all(test, loom))` test modules, which are loom-only anyway; the
//! `cfg(all(test, not(loom)))` tests use `std::thread` and run at full size.

#![allow(
    unused_imports,
    reason = "the shim offers the whole std-shaped set; not every item has a user yet"
)]

/// `std::sync`, or loom's instrumented twin under `cfg(loom)`.
pub(crate) mod sync {
    #[cfg(loom)]
    pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
    #[cfg(not(loom))]
    pub(crate) use preemptless::{Mutex, MutexGuard};
    #[cfg(not(loom))]
    pub(crate) use std::sync::Arc;

    /// `std::sync::Mutex` whose guard also keeps a preemptible coroutine from being preempted
    /// while it holds the lock (`runtime/preempt.rs`, "The rule"): another coroutine of the
    /// same thread that then took the lock would block the thread for ever.
    #[cfg(not(loom))]
    mod preemptless {
        use std::ops::{Deref, DerefMut};
        use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

        use crate::runtime::preempt::{self, NoPreempt};

        /// See the module docs.
        #[derive(Debug, Default)]
        pub(crate) struct Mutex<T: ?Sized>(std::sync::Mutex<T>);

        /// The guard of [`Mutex`]; the lock is released before the no-preempt guard.
        pub(crate) struct MutexGuard<'a, T: ?Sized> {
            inner: std::sync::MutexGuard<'a, T>,
            _no_preempt: NoPreempt,
        }

        impl<T> Mutex<T> {
            pub(crate) const fn new(value: T) -> Mutex<T> {
                Mutex(std::sync::Mutex::new(value))
            }
        }

        impl<T: ?Sized> Mutex<T> {
            #[inline]
            pub(crate) fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
                let no_preempt = preempt::guard();
                match self.0.lock() {
                    Ok(inner) => Ok(MutexGuard {
                        inner,
                        _no_preempt: no_preempt,
                    }),
                    Err(poisoned) => Err(PoisonError::new(MutexGuard {
                        inner: poisoned.into_inner(),
                        _no_preempt: no_preempt,
                    })),
                }
            }

            #[inline]
            pub(crate) fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
                let no_preempt = preempt::guard();
                match self.0.try_lock() {
                    Ok(inner) => Ok(MutexGuard {
                        inner,
                        _no_preempt: no_preempt,
                    }),
                    Err(TryLockError::Poisoned(poisoned)) => {
                        Err(TryLockError::Poisoned(PoisonError::new(MutexGuard {
                            inner: poisoned.into_inner(),
                            _no_preempt: no_preempt,
                        })))
                    }
                    Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
                }
            }
        }

        impl<T: ?Sized> Deref for MutexGuard<'_, T> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                &self.inner
            }
        }

        impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                &mut self.inner
            }
        }
    }

    /// `std::sync::atomic`, or loom's instrumented twin under `cfg(loom)`.
    pub(crate) mod atomic {
        #[cfg(loom)]
        pub(crate) use loom::sync::atomic::{
            AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
        };
        #[cfg(not(loom))]
        pub(crate) use std::sync::atomic::{
            AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
        };
    }
}

/// `std::hint`, or loom's twin (a spin hint is a yield point to the model checker).
pub(crate) mod hint {
    #[cfg(loom)]
    pub(crate) use loom::hint::spin_loop;
    #[cfg(not(loom))]
    pub(crate) use std::hint::spin_loop;
}

/// `std::thread::yield_now`, or loom's twin.
pub(crate) mod thread {
    #[cfg(loom)]
    pub(crate) use loom::thread::yield_now;
    #[cfg(not(loom))]
    pub(crate) use std::thread::yield_now;
}

/// `UnsafeCell` with loom's closure-based access API in both configurations.
pub(crate) mod cell {
    #[cfg(loom)]
    pub(crate) use loom::cell::UnsafeCell;

    /// `std::cell::UnsafeCell` behind loom's `with`/`with_mut` API (see the module docs).
    ///
    /// The closures receive the raw pointer; dereferencing it is the caller's `unsafe`, with the
    /// same rules as `std::cell::UnsafeCell::get`. Under `cfg(loom)` the same calls are
    /// additionally checked for conflicting concurrent access.
    #[cfg(not(loom))]
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct UnsafeCell<T: ?Sized>(std::cell::UnsafeCell<T>);

    #[cfg(not(loom))]
    #[allow(
        dead_code,
        reason = "the shim mirrors loom's API; not every method has a user yet"
    )]
    impl<T> UnsafeCell<T> {
        /// Wraps `value`.
        #[inline(always)]
        pub(crate) const fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        /// Unwraps the value.
        #[inline(always)]
        pub(crate) fn into_inner(self) -> T {
            self.0.into_inner()
        }
    }

    #[cfg(not(loom))]
    #[allow(
        dead_code,
        reason = "the shim mirrors loom's API; not every method has a user yet"
    )]
    impl<T: ?Sized> UnsafeCell<T> {
        /// Calls `f` with a pointer for shared (read) access to the contents.
        ///
        /// The caller must ensure no `with_mut` access to this cell races with the reads `f`
        /// makes through the pointer; loom checks exactly that under `cfg(loom)`.
        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Calls `f` with a pointer for exclusive (write) access to the contents.
        ///
        /// The caller must ensure no other access to this cell races with `f`'s; loom checks
        /// exactly that under `cfg(loom)`.
        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}
