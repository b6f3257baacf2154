//! `Semaphore`: counted permits, handed to waiters strictly in FIFO order; also the core of
//! `RwLock` and `OnceCell`.
//!
//! # The mechanism
//!
//! An atomic count of free permits and a wait list ([`List`]) of acquirers, each node holding how
//! many permits it still needs (the design of tokio's `batch_semaphore.rs`, rewritten on corio's
//! list).
//!
//! ## Protocol
//!
//! 1. Fast path: CAS the count down by `n` if it holds `n`. No lock.
//! 2. Slow path (under the list lock): take whatever part of `n` the count holds, and queue the
//!    node with the rest still needed. An acquirer that queues thus takes the count to zero.
//! 3. Release of `n` permits (under the list lock): assign them to the head's remaining need,
//!    unlinking and waking each node whose need reaches zero, in order; only what is left once the
//!    list is empty goes back to the count.
//! 4. Cancel (a future dropped while queued, satisfied or not): unlink, then release (step 3)
//!    the permits it had been assigned, so none is lost.
//! 5. Close (under the list lock): set `closed`, unlink every node and wake it. A woken node
//!    whose need is not zero sees `closed` and fails, releasing what it had been assigned; the
//!    slow path refuses to queue once `closed` is set, and the fast path fails on it, so no
//!    acquire can wait on a closed semaphore. (A fast path that read the flag just before the
//!    close may still win its CAS after it: an acquire racing `close` can succeed.)
//!
//! ## Invariant
//!
//! While the list is not empty the count is zero (steps 2 and 3 keep it so under the lock), so
//! a newcomer's fast path never overtakes a queued acquirer: strict FIFO, and a large `acquire_many`
//! cannot be starved by a stream of small ones.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::wait_list::{List, Node, Wakers};
use crate::loom::sync::Mutex as ListLock;
use crate::loom::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use crate::loom::sync::atomic::{AtomicBool, AtomicUsize};
use crate::task::waker::RelaySlot;

/// The permits and their FIFO queue; `Semaphore`, `RwLock` and `OnceCell` wrap it.
pub(crate) struct BatchSemaphore {
    /// Free permits; zero while `waiters` is not empty (module "Invariant"). Increased only
    /// under `waiters`' lock.
    permits: AtomicUsize,
    /// Queued acquirers; each node's data is the number of permits it still needs.
    waiters: ListLock<List<usize>>,
    /// Set once, under `waiters`' lock (protocol step 5).
    closed: AtomicBool,
}

impl BatchSemaphore {
    /// The most permits a semaphore may hold (headroom so that adding never overflows).
    pub(crate) const MAX_PERMITS: usize = usize::MAX >> 3;

    /// [`new`](Self::new) in a constant (loom's atomics and locks cannot be built in one),
    /// for `OnceCell::const_new`; `permits` is checked at compile time there.
    #[cfg(not(loom))]
    pub(crate) const fn const_new(permits: usize) -> BatchSemaphore {
        assert!(permits <= Self::MAX_PERMITS);
        BatchSemaphore {
            permits: AtomicUsize::new(permits),
            waiters: ListLock::new(List::new()),
            closed: AtomicBool::new(false),
        }
    }

    #[track_caller] // `Semaphore::new`'s panic names its caller
    pub(crate) fn new(permits: usize) -> BatchSemaphore {
        assert!(
            permits <= Self::MAX_PERMITS,
            "a semaphore holds at most {} permits",
            Self::MAX_PERMITS
        );
        BatchSemaphore {
            permits: AtomicUsize::new(permits),
            waiters: ListLock::new(List::new()),
            closed: AtomicBool::new(false),
        }
    }

    fn list(&self) -> crate::loom::sync::MutexGuard<'_, List<usize>> {
        self.waiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Free permits right now.
    pub(crate) fn available(&self) -> usize {
        self.permits.load(Acquire)
    }

    /// Protocol step 5.
    pub(crate) fn close(&self) {
        let mut wakers = Wakers::default();
        {
            let mut list = self.list();
            // Release: pairs with the Acquire loads in `is_closed` and `try_acquire` (the
            // slow path reads it under the lock).
            self.closed.store(true, Release);
            while let Some(mut node) = list.pop_front() {
                wakers.push(node.take_waker());
            }
        }
        wakers.wake();
    }

    /// Whether [`close`](Self::close) has been called.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Acquire)
    }

    /// Protocol step 1.
    pub(crate) fn try_acquire(&self, n: usize) -> bool {
        if self.is_closed() {
            return false;
        }
        let mut have = self.permits.load(Relaxed);
        while have >= n {
            // Acquire: pairs with the Release that added the permits in `release_locked`.
            match self
                .permits
                .compare_exchange_weak(have, have - n, Acquire, Relaxed)
            {
                Ok(_) => return true,
                Err(now) => have = now,
            }
        }
        false
    }

    /// Protocol step 3.
    ///
    /// # Panics
    ///
    /// If the free permits would exceed [`MAX_PERMITS`](Self::MAX_PERMITS) (at the caller's
    /// line: `Semaphore::add_permits`). The waiters served first are woken before, and the
    /// excess is not added, so the count never passes the maximum (it was added, and then a
    /// later release panicked too; a waiter already served was never woken:
    /// `tests/sync_tokio_suite.rs`).
    #[track_caller]
    pub(crate) fn release(&self, n: usize) {
        if self.give_back(n) {
            too_many_permits();
        }
    }

    /// [`release`](Self::release) for a permit being dropped: never panics (a panic in `drop`
    /// during an unwind aborts the process). A permit taken before `add_permits` filled the
    /// free count to `MAX_PERMITS` (which counts only free permits) finds no room: what does
    /// not fit is forgotten, as `SemaphorePermit::forget` would.
    pub(crate) fn release_dropped(&self, n: usize) {
        let _refused = self.give_back(n);
    }

    /// Gives `n` permits back and wakes the waiters they serve; returns whether what was left
    /// for the free count was refused (it would pass `MAX_PERMITS`).
    fn give_back(&self, n: usize) -> bool {
        if n == 0 {
            return false;
        }
        let mut wakers = Wakers::default();
        let refused = self.release_locked(&mut self.list(), n, &mut wakers);
        wakers.wake();
        refused
    }

    /// Gives `n` permits to the waiters in order, then adds what is left to the free count;
    /// returns whether that was refused (it would pass `MAX_PERMITS`), for the caller to panic
    /// once it has woken the waiters served.
    #[must_use]
    fn release_locked(&self, list: &mut List<usize>, mut n: usize, wakers: &mut Wakers) -> bool {
        while n > 0 {
            let Some(mut head) = list.front() else { break };
            let done = head.data(|need| {
                let give = n.min(*need);
                *need -= give;
                n -= give;
                *need == 0
            });
            if !done {
                break;
            }
            let mut head = list.pop_front().expect("the head is there");
            wakers.push(head.take_waker());
        }
        if n == 0 {
            return false;
        }
        let mut before = self.permits.load(Relaxed);
        loop {
            if before
                .checked_add(n)
                .is_none_or(|after| after > Self::MAX_PERMITS)
            {
                return true;
            }
            // Release: pairs with the Acquire CAS in `try_acquire`. The list is empty here.
            match self
                .permits
                .compare_exchange_weak(before, before + n, Release, Relaxed)
            {
                Ok(_) => return false,
                Err(now) => before = now,
            }
        }
    }

    /// Protocol step 2: the poll of an [`AcquireRaw`] whose node is `node`.
    fn poll_acquire(
        &self,
        node: Pin<&Node<usize>>,
        n: usize,
        queued: &mut bool,
        relay: &mut RelaySlot,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), AcquireError>> {
        if !*queued && self.try_acquire(n) {
            return Poll::Ready(Ok(()));
        }
        // As `Mutex::poll_lock`'s: a waker whose clone is user code is relayed before the lock.
        let waker = relay.lock_safe(cx.waker());
        let mut list = self.list();
        if *queued {
            // SAFETY: we hold the list lock; the node is only ever used with this list.
            let mut me = unsafe { list.entry(node) };
            let need = me.data(|need| *need);
            if need == 0 {
                *queued = false; // the release unlinked us
                return Poll::Ready(Ok(()));
            }
            if self.closed.load(Relaxed) {
                // The close unlinked us (step 5): pass on what we had been assigned.
                *queued = false;
                let mut wakers = Wakers::default();
                // What does not fit (an `add_permits` filled the free count after the close
                // unlinked us) is forgotten, as a dropped permit's: this caller asked for
                // nothing to be added, and its error must not become a panic.
                let _refused = self.release_locked(&mut list, n - need, &mut wakers);
                drop(list);
                wakers.wake();
                return Poll::Ready(Err(AcquireError(())));
            }
            let replaced = me.set_waker(&waker);
            drop(list);
            drop(replaced); // user code: after the lock
            return Poll::Pending;
        }
        if self.closed.load(Relaxed) {
            return Poll::Ready(Err(AcquireError(())));
        }
        let mut have = self.permits.load(Relaxed);
        let need = loop {
            let take = have.min(n);
            // Acquire: pairs with the Release in `release_locked`.
            match self
                .permits
                .compare_exchange_weak(have, have - take, Acquire, Relaxed)
            {
                Ok(_) => break n - take,
                Err(now) => have = now,
            }
        };
        if need == 0 {
            return Poll::Ready(Ok(()));
        }
        // SAFETY: we hold the list lock; the node is not linked (`queued` is false), is only
        // used with this list, and `AcquireRaw::drop` unlinks it.
        unsafe { list.push_back(node) };
        *queued = true;
        // SAFETY: as above.
        let mut me = unsafe { list.entry(node) };
        me.data(|d| *d = need);
        let replaced = me.set_waker(&waker);
        drop(list);
        drop(replaced); // user code: after the lock
        Poll::Pending
    }

    /// Protocol step 4.
    #[cold]
    fn cancel(&self, node: Pin<&Node<usize>>, n: usize) {
        let mut wakers = Wakers::default();
        {
            let mut list = self.list();
            // SAFETY: we hold the list lock; the node is only ever used with this list.
            let need = unsafe { list.entry(node) }.data(|need| *need);
            // SAFETY: as above.
            unsafe { list.remove(node) };
            // Never panics: this runs in `drop` (an aborted coroutine's unwind, where a panic
            // aborts the process). What does not fit — an `add_permits` filled the free count
            // after this waiter was served, which it may once the queue is empty — is
            // forgotten, as a dropped permit's (`release_dropped`).
            let _refused = self.release_locked(&mut list, n - need, &mut wakers);
        }
        wakers.wake();
    }

    /// A future that acquires `n` permits (they are the caller's once it completes), for a
    /// semaphore that is never closed (`RwLock`).
    pub(crate) fn acquire(&self, n: usize) -> impl Future<Output = ()> + '_ {
        let acquire = self.acquire_or_closed(n);
        async move {
            acquire
                .await
                .expect("corio: a lock's semaphore is never closed")
        }
    }

    /// Refuses a request for more than [`MAX_PERMITS`](Self::MAX_PERMITS) (see
    /// [`acquire_or_closed`](Self::acquire_or_closed)).
    #[track_caller]
    pub(crate) fn check_request(n: usize) {
        assert!(
            n <= Self::MAX_PERMITS,
            "corio: acquiring {n} permits, more than a semaphore can ever hold ({})",
            Self::MAX_PERMITS
        );
    }

    /// A future that acquires `n` permits, or fails once the semaphore is closed.
    ///
    /// Panics if `n` exceeds [`MAX_PERMITS`](Self::MAX_PERMITS): no semaphore ever holds that
    /// many, so the request could only wait for ever, and, first in the queue, hold back every
    /// acquirer behind it (tokio refuses it too).
    #[track_caller]
    pub(crate) fn acquire_or_closed(&self, n: usize) -> AcquireRaw<'_> {
        Self::check_request(n);
        AcquireRaw {
            sem: self,
            node: Node::new(n),
            n,
            queued: false,
            relay: RelaySlot::default(),
        }
    }
}

/// Acquires permits of a [`BatchSemaphore`]; completes with them owned by the caller.
pub(crate) struct AcquireRaw<'a> {
    sem: &'a BatchSemaphore,
    /// Linked into `sem`'s wait list while `queued`; its data is the need left.
    node: Node<usize>,
    n: usize,
    /// The node is linked, or was unlinked by a release this future has not yet observed.
    queued: bool,
    /// The relay to another executor's waker, kept for its next poll.
    relay: RelaySlot,
}

impl Future for AcquireRaw<'_> {
    type Output = Result<(), AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the node is never moved out of the pinned future; the rest is plain data.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: `this.node` is structurally pinned.
        let node = unsafe { Pin::new_unchecked(&this.node) };
        this.sem
            .poll_acquire(node, this.n, &mut this.queued, &mut this.relay, cx)
    }
}

impl Drop for AcquireRaw<'_> {
    fn drop(&mut self) {
        if self.queued {
            // SAFETY: the node is pinned (the future is dropped in place once polled).
            let node = unsafe { Pin::new_unchecked(&self.node) };
            self.sem.cancel(node, self.n);
        }
    }
}

/// A counting semaphore whose waiters suspend (coroutine), return `Pending` (task) or park
/// (thread). Permits go to waiters in FIFO order; a waiter that is cancelled passes on any
/// permits it had been assigned.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
/// use corio::sync::Semaphore;
///
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let peak = rt.run(|| {
///     let sem = Arc::new(Semaphore::new(3));
///     let (now, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
///     let hs: Vec<_> = (0..20)
///         .map(|_| {
///             let (sem, now, peak) = (sem.clone(), now.clone(), peak.clone());
///             corio::go(move || {
///                 let _permit = sem.acquire().unwrap();
///                 peak.fetch_max(now.fetch_add(1, SeqCst) + 1, SeqCst);
///                 corio::yield_now();
///                 now.fetch_sub(1, SeqCst);
///             })
///         })
///         .collect();
///     hs.into_iter().for_each(|h| h.join().unwrap());
///     peak.load(SeqCst)
/// });
/// assert!(peak <= 3);
/// ```
pub struct Semaphore {
    sem: BatchSemaphore,
}

/// The panic of a release that would pass `MAX_PERMITS`.
#[cold]
#[track_caller]
fn too_many_permits() -> ! {
    panic!(
        "a semaphore holds at most {} permits",
        BatchSemaphore::MAX_PERMITS
    )
}

impl Semaphore {
    /// The most permits a semaphore may hold.
    pub const MAX_PERMITS: usize = BatchSemaphore::MAX_PERMITS;

    /// A semaphore with `permits` free permits.
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`MAX_PERMITS`](Self::MAX_PERMITS).
    #[track_caller]
    pub fn new(permits: usize) -> Semaphore {
        Semaphore {
            sem: BatchSemaphore::new(permits),
        }
    }

    /// Free permits right now.
    pub fn available_permits(&self) -> usize {
        self.sem.available()
    }

    /// Adds `n` permits (they go to the waiters first, in order).
    ///
    /// # Panics
    ///
    /// If the total would exceed [`MAX_PERMITS`](Self::MAX_PERMITS); the permits are then
    /// not added (those the waiters took are theirs).
    #[track_caller]
    pub fn add_permits(&self, n: usize) {
        self.sem.release(n);
    }

    /// Closes the semaphore (tokio's `Semaphore::close`): every acquirer waiting now and every
    /// later one fails with [`AcquireError`], and `try_acquire` returns `None`. Permits already
    /// held stay valid and are returned as usual; [`add_permits`](Self::add_permits) still
    /// counts. A way to tell a pool of waiters "no more".
    ///
    /// ```
    /// use std::sync::Arc;
    /// use corio::sync::Semaphore;
    ///
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// rt.run(|| {
    ///     let sem = Arc::new(Semaphore::new(0));
    ///     let s = sem.clone();
    ///     let waiter = corio::go(move || s.acquire().is_err());
    ///     corio::yield_now(); // the waiter queues
    ///     sem.close();
    ///     assert!(waiter.join().unwrap(), "the waiter failed");
    ///     assert!(sem.is_closed() && sem.try_acquire().is_none());
    /// });
    /// ```
    pub fn close(&self) {
        self.sem.close();
    }

    /// Whether [`close`](Self::close) has been called.
    pub fn is_closed(&self) -> bool {
        self.sem.is_closed()
    }

    /// Takes one permit, waiting blocking-style (see [`Mutex::lock`](super::Mutex::lock)).
    /// Fails if the semaphore is closed before a permit is had.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`acquire_async`](Self::acquire_async)`().await`.
    #[track_caller]
    pub fn acquire(&self) -> Result<SemaphorePermit<'_>, AcquireError> {
        super::wait_for(|| self.try_acquire().map(Ok), self.acquire_many_async(1))
    }

    /// Takes `n` permits at once, waiting blocking-style. Fails if the semaphore is closed
    /// before all `n` are had.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`acquire_many_async`](Self::acquire_many_async). If `n`
    /// exceeds [`MAX_PERMITS`](Self::MAX_PERMITS), which no semaphore ever holds.
    #[track_caller]
    pub fn acquire_many(&self, n: usize) -> Result<SemaphorePermit<'_>, AcquireError> {
        super::wait_for(
            || self.try_acquire_many(n).map(Ok),
            self.acquire_many_async(n),
        )
    }

    /// Takes one permit, as a future.
    pub fn acquire_async(
        &self,
    ) -> impl Future<Output = Result<SemaphorePermit<'_>, AcquireError>> + '_ {
        self.acquire_many_async(1)
    }

    /// Takes `n` permits at once, as a future. Dropping it while it waits passes on whatever
    /// permits it had been assigned.
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`MAX_PERMITS`](Self::MAX_PERMITS), which no semaphore ever holds.
    #[track_caller]
    pub fn acquire_many_async(
        &self,
        n: usize,
    ) -> impl Future<Output = Result<SemaphorePermit<'_>, AcquireError>> + '_ {
        let acquire = self.sem.acquire_or_closed(n);
        async move {
            acquire.await?;
            Ok(SemaphorePermit {
                sem: self,
                permits: n,
            })
        }
    }

    /// Takes one permit if one is free, nobody is queued and the semaphore is open.
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        self.try_acquire_many(1)
    }

    /// Takes `n` permits if they are free, nobody is queued and the semaphore is open.
    pub fn try_acquire_many(&self, n: usize) -> Option<SemaphorePermit<'_>> {
        self.sem.try_acquire(n).then(|| SemaphorePermit {
            sem: self,
            permits: n,
        })
    }
}

/// Permits that own their semaphore through an `Arc`, for holders that are `'static`: a
/// permit moved into a spawned coroutine or task, or kept in a struct (tokio's
/// `acquire_owned`).
impl Semaphore {
    /// Takes one permit, waiting blocking-style, as an [`OwnedSemaphorePermit`].
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`acquire_owned_async`](Self::acquire_owned_async)`().await`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use corio::sync::Semaphore;
    ///
    /// let rt = corio::Runtime::builder().workers(2).build().unwrap();
    /// rt.run(|| {
    ///     let sem = Arc::new(Semaphore::new(2));
    ///     let workers: Vec<_> = (0..6)
    ///         .map(|i| {
    ///             // Taken here, released by the coroutine when it ends.
    ///             let permit = sem.clone().acquire_owned().unwrap();
    ///             corio::go(move || {
    ///                 let _permit = permit;
    ///                 i * 2
    ///             })
    ///         })
    ///         .collect();
    ///     let sum: i32 = workers.into_iter().map(|h| h.join().unwrap()).sum();
    ///     assert_eq!(sum, 30);
    ///     assert_eq!(sem.available_permits(), 2);
    /// });
    /// ```
    #[track_caller]
    pub fn acquire_owned(self: Arc<Self>) -> Result<OwnedSemaphorePermit, AcquireError> {
        self.acquire_many_owned(1)
    }

    /// Takes `n` permits at once, waiting blocking-style, as an [`OwnedSemaphorePermit`].
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`acquire_many_owned_async`](Self::acquire_many_owned_async).
    /// If `n` exceeds [`MAX_PERMITS`](Self::MAX_PERMITS), which no semaphore ever holds.
    #[track_caller]
    pub fn acquire_many_owned(
        self: Arc<Self>,
        n: usize,
    ) -> Result<OwnedSemaphorePermit, AcquireError> {
        let fast = self.clone();
        super::wait_for(
            move || fast.try_acquire_many_owned(n).map(Ok),
            self.acquire_many_owned_async(n),
        )
    }

    /// Takes one permit, as a future that owns the semaphore (it is `'static`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use corio::sync::Semaphore;
    ///
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// let sem = Arc::new(Semaphore::new(1));
    /// let s = sem.clone();
    /// rt.block_on(async move {
    ///     let permit = s.clone().acquire_owned_async().await.unwrap();
    ///     assert!(s.clone().try_acquire_owned().is_none());
    ///     // The task releases the permit when it ends.
    ///     corio::spawn(async move { drop(permit) }).await.unwrap();
    ///     assert!(s.try_acquire_owned().is_some());
    /// });
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn acquire_owned_async(
        self: Arc<Self>,
    ) -> impl Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send + 'static {
        self.acquire_many_owned_async(1)
    }

    /// Takes `n` permits at once, as a future that owns the semaphore. Dropping it while it
    /// waits passes on whatever permits it had been assigned.
    ///
    /// # Panics
    ///
    /// If `n` exceeds [`MAX_PERMITS`](Self::MAX_PERMITS), which no semaphore ever holds.
    #[track_caller]
    pub fn acquire_many_owned_async(
        self: Arc<Self>,
        n: usize,
    ) -> impl Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send + 'static {
        // Refused here, where the caller asked, rather than at the first poll.
        BatchSemaphore::check_request(n);
        async move {
            self.sem.acquire_or_closed(n).await?;
            Ok(OwnedSemaphorePermit {
                sem: self,
                permits: n,
            })
        }
    }

    /// Takes one permit if one is free and nobody is queued, as an [`OwnedSemaphorePermit`].
    pub fn try_acquire_owned(self: Arc<Self>) -> Option<OwnedSemaphorePermit> {
        self.try_acquire_many_owned(1)
    }

    /// Takes `n` permits if they are free and nobody is queued, as an
    /// [`OwnedSemaphorePermit`].
    pub fn try_acquire_many_owned(self: Arc<Self>, n: usize) -> Option<OwnedSemaphorePermit> {
        self.sem.try_acquire(n).then(|| OwnedSemaphorePermit {
            sem: self,
            permits: n,
        })
    }
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("available_permits", &self.available_permits())
            .finish()
    }
}

/// Permits taken from a [`Semaphore`]; returned to it when dropped.
#[must_use = "the permits are returned as soon as this is dropped"]
#[derive(Debug)]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
    permits: usize,
}

impl SemaphorePermit<'_> {
    /// How many permits this holds.
    pub fn num_permits(&self) -> usize {
        self.permits
    }

    /// Keeps the permits out of the semaphore for good.
    pub fn forget(mut self) {
        self.permits = 0;
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        self.sem.sem.release_dropped(self.permits);
    }
}

/// The error of an acquire on a [`Semaphore`] that was [closed](Semaphore::close).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcquireError(());

impl std::fmt::Display for AcquireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("semaphore closed")
    }
}

impl std::error::Error for AcquireError {}

/// Permits taken from a [`Semaphore`] held through an `Arc` ([`Semaphore::acquire_owned`]);
/// returned to it when dropped. Unlike [`SemaphorePermit`] it borrows nothing, so it can move
/// into a spawned coroutine or task.
#[must_use = "the permits are returned as soon as this is dropped"]
#[derive(Debug)]
pub struct OwnedSemaphorePermit {
    sem: Arc<Semaphore>,
    permits: usize,
}

impl OwnedSemaphorePermit {
    /// How many permits this holds.
    pub fn num_permits(&self) -> usize {
        self.permits
    }

    /// The semaphore the permits came from.
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.sem
    }

    /// Keeps the permits out of the semaphore for good.
    pub fn forget(mut self) {
        self.permits = 0;
    }
}

impl Drop for OwnedSemaphorePermit {
    fn drop(&mut self) {
        self.sem.sem.release_dropped(self.permits);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::BatchSemaphore;
    use crate::loom::sync::Arc;
    use crate::sync::loom_block_on;
    use std::pin::pin;
    use std::task::{Context, Waker};

    /// A waiter for 2 of 2 permits is cancelled while both are released one by one and another
    /// waiter wants 1: the other waiter gets in and every permit ends back in the count.
    #[test]
    fn loom_semaphore_cancel_races_with_release() {
        loom::model(|| {
            let sem = Arc::new(BatchSemaphore::new(0));
            let s1 = sem.clone();
            let canceller = loom::thread::spawn(move || {
                let mut acquire = pin!(s1.acquire(2));
                let mut cx = Context::from_waker(Waker::noop());
                if acquire.as_mut().poll(&mut cx).is_ready() {
                    s1.release(2);
                }
                // else: dropped while queued, perhaps holding one permit
            });
            let s2 = sem.clone();
            let waiter = loom::thread::spawn(move || {
                let mut acquire = pin!(s2.acquire(1));
                loom_block_on(|cx| acquire.as_mut().poll(cx));
                s2.release(1);
            });
            sem.release(1);
            sem.release(1);
            canceller.join().unwrap();
            waiter.join().unwrap();
            assert_eq!(sem.available(), 2, "a permit was lost or duplicated");
        });
    }

    /// A waiter for 2 permits races `close` and two releases (one before, one after the close
    /// on this thread): it either gets both and gives them back, or fails and gives back what
    /// it had collected; it is never left waiting, and every permit ends back in the count.
    #[test]
    fn loom_semaphore_close_races_with_a_queued_acquire_and_releases() {
        loom::model(|| {
            let sem = Arc::new(BatchSemaphore::new(0));
            let s1 = sem.clone();
            let waiter = loom::thread::spawn(move || {
                let mut acquire = pin!(s1.acquire_or_closed(2));
                if loom_block_on(|cx| acquire.as_mut().poll(cx)).is_ok() {
                    s1.release(2);
                }
            });
            let s2 = sem.clone();
            let releaser = loom::thread::spawn(move || s2.release(1));
            sem.close();
            sem.release(1);
            waiter.join().unwrap();
            releaser.join().unwrap();
            assert_eq!(sem.available(), 2, "a permit was lost or duplicated");
        });
    }

    use std::future::Future;
}
