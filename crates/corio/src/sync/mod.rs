//! Synchronisation primitives that suspend the waiting stackful coroutine or async task instead
//! of blocking its worker, and park a plain thread.
//!
//! | type | what it is | blocking-style | async |
//! |---|---|---|---|
//! | [`Mutex`] | mutual exclusion, Go's starvation mode | `lock()` | `lock_async().await` |
//! | [`RwLock`] | readers or one writer, FIFO | `read()`, `write()` | `read_async()`, `write_async()` |
//! | [`Condvar`] | wait for a condition under a [`Mutex`] | `wait(g)`, `wait_while(g, f)` | `wait_async`, `wait_while_async` |
//! | [`Semaphore`] | counted permits, FIFO | `acquire()` | `acquire_async()` |
//! | [`Notify`] | wake one or all waiters | `notified()` | `notified_async().await` |
//! | [`WaitGroup`] | Go's `sync.WaitGroup` | `wait()` | `wait_async()` |
//! | [`Barrier`] | `n` parties meet | `wait()` | `wait_async()` |
//! | [`oneshot`] | one value, once | `rx.recv()` | `rx.await` |
//! | [`OnceCell`], [`Lazy`] | initialised once | `get_or_init(f)` | `get_or_init_async(f)` |
//!
//! Each operation is implemented once, as a future; the blocking-style form is that future run
//! by [`block_on`](crate::block_on): it suspends a stackful coroutine, parks a plain thread, and
//! panics in an async task (where the `_async` form is awaited instead). Guards may be held
//! across a suspension; `docs/sync.md` explains why a `std::sync::Mutex` guard may not.
//!
//! All waiters queue on one intrusive wait list (`wait_list.rs`): the node lives in the waiting
//! future, so a wait allocates nothing, and a future dropped while it waits unlinks itself and
//! passes on whatever it had been handed (the lock, permits, a notification).

pub(crate) mod atomic_waker;
mod barrier;
mod condvar;
mod mutex;
mod notify;
mod once_cell;
pub mod oneshot;
mod rwlock;
mod semaphore;
mod wait_group;
mod wait_list;

pub use self::barrier::{Barrier, BarrierWaitResult};
pub use self::condvar::Condvar;
pub use self::mutex::{Lock, Mutex, MutexGuard, STARVATION};
pub use self::notify::{Notified, Notify};
pub use self::once_cell::{Lazy, OnceCell};
pub use self::rwlock::{MAX_READS, RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use self::semaphore::{Semaphore, SemaphorePermit};
pub use self::wait_group::WaitGroup;

/// Polls `poll` to completion on a loom thread, sleeping on a loom condvar between polls (the
/// `Signal` of `atomic_waker.rs`'s models).
#[cfg(all(test, loom))]
pub(crate) fn loom_block_on<R>(
    mut poll: impl FnMut(&mut std::task::Context<'_>) -> std::task::Poll<R>,
) -> R {
    let signal = std::sync::Arc::new(atomic_waker::loom_tests::Signal::new());
    let waker = std::task::Waker::from(signal.clone());
    let mut cx = std::task::Context::from_waker(&waker);
    loop {
        if let std::task::Poll::Ready(v) = poll(&mut cx) {
            return v;
        }
        signal.wait();
    }
}
