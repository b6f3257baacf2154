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
//!
//! # Send and Sync
//!
//! Every future here is `Send` when its data is, so a task holding it may move between
//! workers, and the guards are `Send`/`Sync` as tokio's are (unlocking is correct from any
//! thread). What must not compile does not:
//!
//! ```compile_fail
//! // A `Mutex` of `!Send` data is not `Sync`: it cannot be shared across coroutines.
//! fn shared<T: Sync>(_: &T) {}
//! shared(&corio::sync::Mutex::new(std::rc::Rc::new(0)));
//! ```
//!
//! ```compile_fail
//! // A read guard of `!Sync` data cannot move to another thread.
//! fn send<T: Send>(_: T) {}
//! let lock = corio::sync::RwLock::new(std::cell::Cell::new(0));
//! send(lock.try_read().unwrap());
//! ```

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
pub use self::condvar::{Condvar, WaitTimeoutResult};
pub use self::mutex::{Lock, Mutex, MutexGuard, STARVATION};
pub use self::notify::{Notified, Notify};
pub use self::once_cell::{Lazy, OnceCell};
pub use self::rwlock::{MAX_READS, RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use self::semaphore::{AcquireError, OwnedSemaphorePermit, Semaphore, SemaphorePermit};
pub use self::wait_group::WaitGroup;

/// The blocking-style face of every wait here: `fast` first (an uncontended lock is one
/// compare-and-swap; `block_on` on a plain thread would cost a waker allocation), then `fut`
/// through [`block_on`](crate::block_on). In an async task the fast path is skipped, so that
/// `block_on`'s advice to `.await` the `_async` form shows on the first call, not only once
/// the lock happens to be contended.
#[track_caller]
pub(crate) fn wait_for<T>(
    fast: impl FnOnce() -> Option<T>,
    fut: impl std::future::Future<Output = T>,
) -> T {
    use crate::runtime::context::{Here, here};
    if !matches!(here(), Here::Stackless)
        && let Some(v) = fast()
    {
        return v;
    }
    crate::block_on(fut)
}

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

/// Compile-time checks: every future here can be held by a task that moves between workers,
/// and the guards are `Send`/`Sync` when their data allows (as tokio's); the module docs hold
/// the `compile_fail` half.
#[cfg(all(test, not(loom)))]
mod send_sync {
    use super::*;

    fn send<T: Send>(_: &T) {}
    fn sync<T: Sync>(_: &T) {}

    #[test]
    fn the_futures_and_guards_are_send_when_their_data_is() {
        let m = Mutex::new(0u32);
        send(&m.lock_async());
        send(&m.try_lock().unwrap());
        sync(&m.try_lock().unwrap());
        let rw = RwLock::new(0u32);
        send(&rw.read_async());
        send(&rw.write_async());
        send(&rw.try_read().unwrap());
        let sem = Semaphore::new(1);
        send(&sem.acquire_many_async(1));
        let n = Notify::new();
        send(&n.notified_async());
        let cv = Condvar::new();
        send(&cv.wait_async(m.try_lock().unwrap()));
        send(&WaitGroup::new().wait_async());
        send(&Barrier::new(1).wait_async());
        let cell = OnceCell::new();
        send(&cell.get_or_init_async(|| async { 1u32 }));
        let (tx, rx) = oneshot::channel::<u32>();
        send(&tx);
        send(&rx);
        sync(&Lazy::new(|| 1u32));
    }
}
