//! `WaitGroup`: Go's `sync.WaitGroup` — wait until a counter of outstanding work drops to zero.
//!
//! A counter and a [`Notify`]. `done` that brings the counter to zero calls `notify_waiters`;
//! `wait` creates its `Notified` future *before* reading the counter, so a `done` between the
//! read and the await is seen through the generation (`notify.rs`, step 3): both sides use
//! `SeqCst`, counter then generation on the writer's side, generation then counter on the
//! reader's.

use super::notify::Notify;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::SeqCst;

/// Waits for a collection of coroutines, tasks or threads to finish, as Go's `sync.WaitGroup`:
/// [`add`](Self::add) before starting each piece of work, [`done`](Self::done) at its end,
/// [`wait`](Self::wait) for the counter to reach zero. Share it with an `Arc`.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
/// use corio::sync::WaitGroup;
///
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let n = rt.run(|| {
///     let wg = Arc::new(WaitGroup::new());
///     let count = Arc::new(AtomicUsize::new(0));
///     for _ in 0..100 {
///         wg.add(1);
///         let (wg, count) = (wg.clone(), count.clone());
///         corio::go(move || {
///             count.fetch_add(1, SeqCst);
///             wg.done();
///         });
///     }
///     wg.wait();
///     count.load(SeqCst)
/// });
/// assert_eq!(n, 100);
/// ```
#[derive(Debug, Default)]
pub struct WaitGroup {
    /// Work started and not yet done.
    count: AtomicUsize,
    notify: Notify,
}

impl WaitGroup {
    /// A wait group with nothing outstanding.
    pub fn new() -> WaitGroup {
        WaitGroup {
            count: AtomicUsize::new(0),
            notify: Notify::new(),
        }
    }

    /// Adds `n` pieces of outstanding work.
    ///
    /// # Panics
    ///
    /// If the counter would pass `usize::MAX` (Go: "sync: WaitGroup counter overflow"); it is
    /// left as it was. (Wrapped, it would read as nothing outstanding.)
    #[track_caller]
    pub fn add(&self, n: usize) {
        if self
            .count
            .fetch_update(SeqCst, SeqCst, |count| count.checked_add(n))
            .is_err()
        {
            panic!("corio::sync::WaitGroup::add: counter overflow");
        }
    }

    /// Marks one piece of work done; at zero, wakes every waiter.
    ///
    /// # Panics
    ///
    /// If the counter is already zero (Go: "sync: negative WaitGroup counter"); it stays zero.
    #[track_caller]
    pub fn done(&self) {
        // SeqCst: the counter store comes before the generation bump in `notify_waiters`
        // (module docs). Never below zero, not even for a moment: a decrement undone after a
        // panic let a second surplus `done` racing with it see `usize::MAX` and go on (and a
        // `wait` that read the transient 0 after the undo, none came to wake).
        match self
            .count
            .fetch_update(SeqCst, SeqCst, |count| count.checked_sub(1))
        {
            Err(_) => {
                panic!("corio::sync::WaitGroup::done called more times than add: negative counter")
            }
            Ok(1) => self.notify.notify_waiters(),
            Ok(_) => {}
        }
    }

    /// Outstanding work right now.
    pub fn count(&self) -> usize {
        self.count.load(SeqCst)
    }

    /// Waits until the counter is zero, blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`wait_async`](Self::wait_async)`().await`.
    #[track_caller]
    pub fn wait(&self) {
        super::wait_for(|| (self.count() == 0).then_some(()), self.wait_async())
    }

    /// Waits until the counter is zero, as a future.
    pub async fn wait_async(&self) {
        loop {
            // Before the counter read: see the module docs.
            let notified = self.notify.notified_async();
            if self.count.load(SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}
