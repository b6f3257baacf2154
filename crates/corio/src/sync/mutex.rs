//! `Mutex`: a lock that suspends the waiting coroutine or task, with Go's starvation mode.
//!
//! # The mechanism
//!
//! One state word and a wait list ([`List`], the shared intrusive list of `wait_list.rs`):
//!
//! - `LOCKED`: somebody owns the lock.
//! - `WAITERS`: the list is not empty. Set and cleared only under the list's lock, so an unlock
//!   that sees it clear (the fast path, one compare-and-swap `LOCKED -> 0`) knows there is nobody
//!   to wake, and an unlock that sees it set (and `WOKEN` clear) goes to the list.
//! - `WOKEN`: an unlock has woken a waiter that has not polled since (Go's `mutexWoken`). Set
//!   only under the list's lock. While it is set, an unlock releases with one compare-and-swap
//!   and wakes nobody: the woken waiter will compete for the lock when it runs. Its next poll
//!   clears it in the same compare-and-swap that takes the lock or sees it held (so an unlock
//!   that released because of `WOKEN` is never missed); a cancelled woken waiter clears it, or
//!   passes the wake-up to the new head if the lock is free.
//!
//! Two modes, as Go's `sync.Mutex` (its `mutex.go` essay "Mutex fairness"; corio's version is a
//! rewrite of the idea on a FIFO wait list, not a port of Go's code):
//!
//! - **Normal mode.** An unlock clears `LOCKED` and wakes the head waiter, which then competes
//!   for the lock with whoever arrives meanwhile. A newcomer usually wins (it is running; the
//!   woken waiter still has to be scheduled), which keeps the lock busy and is why normal mode is
//!   fast. The woken waiter that loses keeps its place at the head.
//! - **Starvation mode.** Once the head has waited more than [`STARVATION`] (1 ms, Go's
//!   `starvationThresholdNs`), an unlock does not release the lock at all: it unlinks the head,
//!   marks it granted and wakes it, so ownership passes directly and `LOCKED` never drops. A
//!   newcomer finds the lock taken and queues at the tail. The mode ends by itself when the head
//!   has waited less than the threshold.
//!
//! Before queueing, a locker spins a little (Go's 4 rounds of 30 `PAUSE`s, re-trying between
//! them) unless it runs on the only worker of its runtime: a short critical section on another
//! CPU is then waited out without a suspension and a wake-up.
//!
//! ## Protocol (all under the list's lock except the two fast paths)
//!
//! 1. `lock` fast path: CAS `state` from "not `LOCKED`" to "`LOCKED`" (barging is normal mode).
//! 2. `lock` slow path (the future's poll): under the list lock, try step 1 again; else set
//!    `WAITERS` (CAS, so an unlock cannot clear `LOCKED` in between unseen) and queue, or, if
//!    already queued and not granted, note that the wake-up was lost to a barger and wait again.
//! 3. `unlock` fast path: CAS `LOCKED -> 0`; fails only if `WAITERS` is set. Then, while
//!    `WOKEN` is set, CAS `LOCKED` off and wake nobody.
//! 4. `unlock` slow path: under the list lock, hand off to a starving head (step "Starvation
//!    mode"), else clear `LOCKED`, set `WOKEN` and wake the head (marking it woken).
//! 5. Cancel (the future dropped while queued): a granted node owns the lock, so it unlocks
//!    (step 3/4 passes it on); a woken node unlinks and, if the lock is free, wakes the new head
//!    (the wake-up it was given is not lost), else clears `WOKEN` (so the owner's unlock wakes
//!    the new head); otherwise it just unlinks. Whoever empties the list clears `WAITERS` (and
//!    `WOKEN`).
//!
//! ## Guards and threads
//!
//! A [`MutexGuard`] may be held across a suspension (that is the point: the waiters suspend
//! rather than block the worker) and is `Send` when `T` is, as tokio's: unlocking is a
//! compare-and-swap or a hand-over under a lock, correct from any thread, so a task that moves
//! between workers at an `.await` may carry its guard. A stackful coroutine never changes thread
//! once started anyway.

use std::cell::UnsafeCell;
use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
#[cfg(not(loom))]
use std::time::Instant;

use super::wait_list::{List, Node, Wakers};
use crate::loom::sync::Mutex as ListLock;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use crate::task::waker::RelaySlot;

const LOCKED: usize = 1;
const WAITERS: usize = 2;
/// A waiter has been woken in normal mode and has not polled since (Go's `mutexWoken`).
const WOKEN: usize = 4;

/// How long the head waiter may wait before the lock is handed to it directly (Go's
/// `starvationThresholdNs`, 1 ms: long enough that normal mode's barging, which keeps the lock
/// busy, rarely gives way; short enough that no waiter is passed over for long).
pub const STARVATION: Duration = Duration::from_millis(1);

/// Spinning before queueing: rounds, and `PAUSE`s per round (Go's `active_spin` = 4 and
/// `active_spin_cnt` = 30, `runtime/lock_futex.go`).
#[cfg(not(loom))]
const SPIN_ROUNDS: usize = 4;
#[cfg(not(loom))]
const SPIN_PAUSES: usize = 30;

/// A waiter's node data.
struct Waiting {
    /// The lock was handed to this waiter (starvation mode); it owns it.
    granted: bool,
    /// An unlock woke this waiter in normal mode and it has not polled since.
    woken: bool,
    /// When it queued; the starvation clock. Read only while linked, written when it links
    /// (so the fast path never reads the clock).
    #[cfg(not(loom))]
    since: Option<Instant>,
    /// Under loom time is not modelled: a waiter starves once it has lost one wake-up to a
    /// barger, a deterministic stand-in for "waited too long".
    #[cfg(loom)]
    passed_over: u32,
}

impl Waiting {
    fn new() -> Waiting {
        Waiting {
            granted: false,
            woken: false,
            #[cfg(not(loom))]
            since: None,
            #[cfg(loom)]
            passed_over: 0,
        }
    }

    fn starving(&self) -> bool {
        #[cfg(not(loom))]
        return self.since.is_some_and(|t| t.elapsed() > STARVATION);
        #[cfg(loom)]
        return self.passed_over > 0;
    }
}

/// The lock without the data: the state word and the wait list.
pub(crate) struct RawMutex {
    /// `LOCKED | WAITERS | WOKEN`; `WAITERS` and `WOKEN` are set only under `waiters`' lock.
    state: AtomicUsize,
    /// The queued [`Lock`] futures' nodes.
    waiters: ListLock<List<Waiting>>,
}

impl RawMutex {
    pub(crate) fn new() -> RawMutex {
        RawMutex {
            state: AtomicUsize::new(0),
            waiters: ListLock::new(List::new()),
        }
    }

    /// [`new`](Self::new) in a constant (loom's atomics and locks cannot be built in one).
    #[cfg(not(loom))]
    const fn const_new() -> RawMutex {
        RawMutex {
            state: AtomicUsize::new(0),
            waiters: ListLock::new(List::new()),
        }
    }

    fn list(&self) -> crate::loom::sync::MutexGuard<'_, List<Waiting>> {
        // The list lock guards pointer updates only; no user code runs under it.
        self.waiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Protocol step 1.
    #[inline]
    pub(crate) fn try_lock(&self) -> bool {
        let mut s = self.state.load(Relaxed);
        while s & LOCKED == 0 {
            // Acquire: pairs with the Release of the unlock that cleared `LOCKED`.
            match self
                .state
                .compare_exchange_weak(s, s | LOCKED, Acquire, Relaxed)
            {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
        false
    }

    /// Spins briefly for a lock whose owner may be running on another CPU (Go's `sync_runtime_canSpin`:
    /// a few rounds of `PAUSE`, re-trying between them), so that a short critical section is
    /// waited out without a suspension and a wake-up. Not on a runtime of one worker, whose
    /// owner, if it is a coroutine, cannot run while we spin; not under loom.
    #[cold]
    fn spin(&self) -> bool {
        #[cfg(not(loom))]
        {
            let lone_worker = crate::runtime::context::with_worker(|w| {
                w.is_some_and(|w| w.shared().workers.len() == 1)
            });
            if lone_worker {
                return false;
            }
            for _ in 0..SPIN_ROUNDS {
                for _ in 0..SPIN_PAUSES {
                    crate::loom::hint::spin_loop();
                }
                if self.state.load(Relaxed) & LOCKED == 0 && self.try_lock() {
                    return true;
                }
            }
        }
        false
    }

    /// Protocol step 3.
    #[inline]
    pub(crate) fn unlock(&self) {
        // Release: pairs with the Acquire CAS of the next `try_lock`.
        if self
            .state
            .compare_exchange(LOCKED, 0, Release, Relaxed)
            .is_err()
        {
            self.unlock_contended();
        }
    }

    /// Protocol step 3 with waiters: while a woken waiter has yet to poll (`WOKEN`), releases
    /// without the list, as Go's `Unlock` does (the woken waiter will compete for the lock);
    /// otherwise step 4.
    #[cold]
    fn unlock_contended(&self) {
        let mut s = self.state.load(Relaxed);
        while s & WOKEN != 0 {
            // Release: pairs with the Acquire CAS of the next `try_lock`.
            match self
                .state
                .compare_exchange_weak(s, s & !LOCKED, Release, Relaxed)
            {
                Ok(_) => return,
                Err(now) => s = now,
            }
        }
        self.unlock_slow();
    }

    /// Protocol step 4.
    #[cold]
    fn unlock_slow(&self) {
        let mut wakers = Wakers::default();
        {
            let mut list = self.list();
            let head_starving = list.front().map(|mut head| head.data(|w| w.starving()));
            match head_starving {
                // The waiters cancelled between our CAS and this lock; `WAITERS` is clear now.
                None => {
                    self.state.fetch_and(!LOCKED, Release);
                }
                Some(true) => {
                    let mut head = list.pop_front().expect("the head is there");
                    head.data(|w| w.granted = true);
                    wakers.push(head.take_waker());
                    if list.is_empty() {
                        self.state.fetch_and(!WAITERS, Relaxed);
                    }
                    // `LOCKED` stays set: ownership passes to the head, and the list lock
                    // orders our critical section before its (it reads `granted` under it).
                }
                Some(false) => {
                    let mut head = list.front().expect("the head is there");
                    head.data(|w| w.woken = true);
                    wakers.push(head.take_waker());
                    // `LOCKED` is set (we own the lock) and `WOKEN` clear (it is set only under
                    // the list lock, by an unlock, which only the owner makes, or by a cancel
                    // while the lock is free): the XOR clears the one and sets the other.
                    // Release: pairs with the Acquire CAS in `try_lock`.
                    self.state.fetch_xor(LOCKED | WOKEN, Release);
                }
            }
        }
        wakers.wake();
    }

    /// Protocol step 2: the poll of a [`Lock`] future whose node is `node`.
    #[inline(never)]
    fn poll_lock(
        &self,
        node: Pin<&Node<Waiting>>,
        queued: &mut bool,
        relay: &mut RelaySlot,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        if !*queued && (self.try_lock() || self.spin()) {
            return Poll::Ready(());
        }
        // Stored under the list lock below: another executor's waker is relayed first (its
        // clone is user code, which must not run under the lock).
        let waker = relay.lock_safe(cx.waker());
        let mut list = self.list();
        // `WOKEN` if we are the woken waiter: this poll ends that state (we take the lock, or
        // go back to waiting and the next unlock wakes a waiter again).
        let mut ends_woken = 0;
        if *queued {
            // SAFETY: we hold the list lock; the node is only ever used with this list.
            let mut me = unsafe { list.entry(node) };
            let (granted, woken) = me.data(|w| (w.granted, w.woken));
            if granted {
                *queued = false; // the unlock unlinked us
                return Poll::Ready(());
            }
            if woken {
                ends_woken = WOKEN;
            }
        }
        let mut s = self.state.load(Relaxed);
        loop {
            if s & LOCKED == 0 {
                // Acquire: pairs with the Release of the unlock that cleared `LOCKED`.
                match self.state.compare_exchange_weak(
                    s,
                    (s | LOCKED) & !ends_woken,
                    Acquire,
                    Relaxed,
                ) {
                    Ok(_) => {
                        // SAFETY: we hold the list lock; the node is only used with this list.
                        if *queued && unsafe { list.remove(node) } && list.is_empty() {
                            self.state.fetch_and(!WAITERS, Relaxed);
                        }
                        *queued = false;
                        return Poll::Ready(());
                    }
                    Err(now) => s = now,
                }
            } else {
                // Set under the list lock, so an unlock that then sees `WAITERS` without
                // `WOKEN` goes to the list. Clearing `WOKEN` in the same CAS that sees the lock
                // held: an unlock that released it because we were woken is seen here.
                let want = (s | WAITERS) & !ends_woken;
                if want == s {
                    break;
                }
                match self.state.compare_exchange_weak(s, want, Relaxed, Relaxed) {
                    Ok(_) => break,
                    Err(now) => s = now,
                }
            }
        }
        if !*queued {
            // SAFETY: we hold the list lock; the node is not linked (`queued` is false), is
            // only used with this list, and `Lock::drop` unlinks it.
            unsafe { list.push_back(node) };
            *queued = true;
            #[cfg(not(loom))]
            // SAFETY: as above.
            unsafe { list.entry(node) }.data(|w| w.since = Some(Instant::now()));
        }
        // SAFETY: as above.
        let mut me = unsafe { list.entry(node) };
        me.data(|w| {
            if std::mem::take(&mut w.woken) {
                #[cfg(loom)]
                {
                    w.passed_over += 1;
                }
            }
        });
        let replaced = me.set_waker(&waker);
        drop(list);
        drop(replaced); // user code: after the lock
        Poll::Pending
    }

    /// Protocol step 5: a [`Lock`] future dropped while queued.
    #[cold]
    fn cancel(&self, node: Pin<&Node<Waiting>>) {
        let mut wakers = Wakers::default();
        {
            let mut list = self.list();
            // SAFETY: we hold the list lock; the node is only ever used with this list.
            let (granted, woken) = unsafe { list.entry(node) }.data(|w| (w.granted, w.woken));
            if granted {
                drop(list);
                self.unlock(); // we own the lock: pass it on
                return;
            }
            // SAFETY: as above.
            unsafe { list.remove(node) };
            if list.is_empty() {
                // (A woken waiter is a queued one: with none left, `WOKEN` goes too.)
                self.state.fetch_and(!(WAITERS | WOKEN), Relaxed);
            } else if woken {
                // Our wake-up must not be lost: if the lock is free, the new head gets it (and
                // `WOKEN` stays); if it is held, `WOKEN` goes, so that its unlock wakes the new
                // head. One CAS decides, against an unlock that releases because of `WOKEN`.
                let mut s = self.state.load(Relaxed);
                while s & LOCKED != 0 {
                    match self
                        .state
                        .compare_exchange_weak(s, s & !WOKEN, Relaxed, Relaxed)
                    {
                        Ok(_) => break,
                        Err(now) => s = now,
                    }
                }
                if s & LOCKED == 0 {
                    let mut head = list.front().expect("the list is not empty");
                    head.data(|w| w.woken = true);
                    wakers.push(head.take_waker());
                }
            }
        }
        wakers.wake();
    }
}

/// A mutual-exclusion lock whose waiters suspend: a stackful coroutine suspends, an async task
/// returns `Pending`, a plain thread parks. The worker keeps running other coroutines meanwhile.
///
/// Fair in the way Go's `sync.Mutex` is: newcomers may overtake a woken waiter (fast), but a
/// waiter that has waited more than [`STARVATION`] gets the lock handed to it directly.
///
/// ```
/// use std::sync::Arc;
/// use corio::sync::Mutex;
///
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let total = rt.run(|| {
///     let m = Arc::new(Mutex::new(0));
///     let coroutines: Vec<_> = (0..10)
///         .map(|_| {
///             let m = m.clone();
///             corio::go(move || {
///                 let mut g = m.lock();
///                 corio::yield_now(); // holding a corio guard across a suspension is fine
///                 *g += 1;
///             })
///         })
///         .collect();
///     let m2 = m.clone();
///     let task = corio::spawn(async move { *m2.lock_async().await += 1 });
///     coroutines.into_iter().for_each(|c| c.join().unwrap());
///     task.join().unwrap();
///     let n = *m.lock();
///     n
/// });
/// assert_eq!(total, 11);
/// ```
pub struct Mutex<T: ?Sized> {
    raw: RawMutex,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands `&mut T` to one owner at a time, from any thread: `T: Send` suffices
// (as `std::sync::Mutex`).
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    pub fn new(value: T) -> Mutex<T> {
        Mutex {
            raw: RawMutex::new(),
            data: UnsafeCell::new(value),
        }
    }

    /// An unlocked mutex holding `value`, in a constant: `static M: Mutex<u32> =
    /// Mutex::const_new(0);`.
    #[cfg(not(loom))]
    pub const fn const_new(value: T) -> Mutex<T> {
        Mutex {
            raw: RawMutex::const_new(),
            data: UnsafeCell::new(value),
        }
    }

    /// The value, consuming the mutex.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks, suspending the current stackful coroutine (or parking the thread) until the lock
    /// is free.
    ///
    /// # Panics
    ///
    /// Inside an async task, where the wait would stall the worker: use
    /// [`lock_async`](Self::lock_async)`().await` there (see [`block_on`](crate::block_on)).
    #[track_caller]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        // The first poll of `lock_async` spins if spinning can help.
        super::wait_for(|| self.try_lock(), self.lock_async())
    }

    /// Locks, as a future. Dropping the future while it waits gives up its place in the queue
    /// (and passes the lock on if it had just been handed it).
    pub fn lock_async(&self) -> Lock<'_, T> {
        Lock {
            mutex: self,
            node: Node::new(Waiting::new()),
            queued: false,
            relay: RelaySlot::default(),
        }
    }

    /// Locks if the lock is free right now.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.raw.try_lock().then(|| MutexGuard { mutex: self })
    }

    /// The value, through a unique borrow (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// The future of [`Mutex::lock_async`].
#[must_use = "futures do nothing unless polled"]
pub struct Lock<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
    /// Linked into `mutex`'s wait list while `queued`.
    node: Node<Waiting>,
    /// The node is linked, or was unlinked by a hand-over this future has not yet observed.
    queued: bool,
    /// The relay to another executor's waker, kept for its next poll.
    relay: RelaySlot,
}

impl<'a, T: ?Sized> Future for Lock<'a, T> {
    type Output = MutexGuard<'a, T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutexGuard<'a, T>> {
        // SAFETY: the node is never moved out of the pinned future; `queued` is plain data.
        let this = unsafe { self.get_unchecked_mut() };
        let mutex = this.mutex;
        // The fast path inline; `poll_lock` (spinning, queueing) is the cold rest.
        if !this.queued && mutex.raw.try_lock() {
            return Poll::Ready(MutexGuard { mutex });
        }
        // SAFETY: `this.node` is structurally pinned (the future is pinned and never moves it).
        let node = unsafe { Pin::new_unchecked(&this.node) };
        mutex
            .raw
            .poll_lock(node, &mut this.queued, &mut this.relay, cx)
            .map(|()| MutexGuard { mutex })
    }
}

impl<T: ?Sized> Drop for Lock<'_, T> {
    fn drop(&mut self) {
        if self.queued {
            // SAFETY: the node is pinned (a `Lock` is dropped in place once polled).
            let node = unsafe { Pin::new_unchecked(&self.node) };
            self.mutex.raw.cancel(node);
        }
    }
}

/// Proof of holding a [`Mutex`]; unlocks when dropped. May be held across a suspension.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
}

// SAFETY: a shared guard gives `&T` only: `T: Sync` suffices (as std's `MutexGuard`).
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// The mutex this guard holds (for [`Condvar`](super::Condvar), which relocks it).
    pub(crate) fn mutex(this: &Self) -> &'a Mutex<T> {
        this.mutex
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held, so no `&mut T` exists elsewhere.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held by us alone.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.mutex.raw.unlock();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::{RawMutex, RelaySlot};
    use crate::loom::sync::Arc;
    use crate::loom::sync::atomic::AtomicUsize;
    use crate::loom::sync::atomic::Ordering::Relaxed;
    use crate::sync::loom_block_on;

    fn lock(m: &RawMutex) {
        let node = super::Node::new(super::Waiting::new());
        let mut queued = false;
        let node = std::pin::pin!(node);
        loom_block_on(|cx| m.poll_lock(node.as_ref(), &mut queued, &mut RelaySlot::default(), cx));
    }

    /// Two lockers and the owner's unlock race; the critical sections never overlap and every
    /// locker gets in (a lost wake-up would be a loom deadlock).
    #[test]
    fn loom_mutex_lockers_race_with_an_unlock() {
        loom::model(|| {
            let m = Arc::new(RawMutex::new());
            let inside = Arc::new(AtomicUsize::new(0));
            assert!(m.try_lock());
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let (m, inside) = (m.clone(), inside.clone());
                    loom::thread::spawn(move || {
                        lock(&m);
                        assert_eq!(inside.fetch_add(1, Relaxed), 0, "two owners");
                        inside.fetch_sub(1, Relaxed);
                        m.unlock();
                    })
                })
                .collect();
            m.unlock();
            for t in threads {
                t.join().unwrap();
            }
            assert!(m.try_lock(), "the lock ends free");
        });
    }

    /// The woken waiter is cancelled while a barger holds the lock: its wake-up is not lost
    /// (`WOKEN` goes with it, so the barger's unlock wakes the waiter queued behind it; were it
    /// left set, that unlock would release without waking anyone: a loom deadlock).
    #[test]
    fn loom_mutex_woken_waiter_cancelled_under_a_barger_passes_its_wake_on() {
        loom::model(|| {
            let m = Arc::new(RawMutex::new());
            assert!(m.try_lock());
            let first = std::pin::pin!(super::Node::new(super::Waiting::new()));
            let mut queued = false;
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            let polled = m.poll_lock(
                first.as_ref(),
                &mut queued,
                &mut RelaySlot::default(),
                &mut cx,
            );
            assert!(polled.is_pending() && queued);
            let m2 = m.clone();
            let behind = loom::thread::spawn(move || {
                lock(&m2);
                m2.unlock();
            });
            m.unlock(); // wakes `first`, the head
            let barged = m.try_lock();
            m.cancel(first.as_ref());
            if barged {
                m.unlock();
            }
            behind.join().unwrap();
            assert!(m.try_lock(), "the lock ends free");
        });
    }

    /// A queued locker is cancelled while the owner unlocks (perhaps handing the lock to it):
    /// the other locker still gets the lock.
    #[test]
    fn loom_mutex_cancelled_waiter_passes_the_lock_on() {
        loom::model(|| {
            let m = Arc::new(RawMutex::new());
            assert!(m.try_lock());
            let m2 = m.clone();
            let canceller = loom::thread::spawn(move || {
                let node = std::pin::pin!(super::Node::new(super::Waiting::new()));
                let mut queued = false;
                let waker = std::task::Waker::noop();
                let mut cx = std::task::Context::from_waker(waker);
                if m2
                    .poll_lock(
                        node.as_ref(),
                        &mut queued,
                        &mut RelaySlot::default(),
                        &mut cx,
                    )
                    .is_ready()
                {
                    m2.unlock();
                } else if queued {
                    m2.cancel(node.as_ref());
                }
            });
            let m3 = m.clone();
            let waiter = loom::thread::spawn(move || {
                lock(&m3);
                m3.unlock();
            });
            m.unlock();
            canceller.join().unwrap();
            waiter.join().unwrap();
            assert!(m.try_lock(), "the lock ends free");
        });
    }
}
