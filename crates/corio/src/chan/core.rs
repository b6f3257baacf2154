//! The channel core: one lock, a buffer, two wait queues, and the claim/finish protocol that
//! hands values to waiters. The module essay (`chan/mod.rs`, "The hand-off protocol") numbers
//! the steps this file implements; the comments below refer to them as (H1)..(H6).

use std::collections::VecDeque;
use std::task::Waker;

use crate::loom::cell::UnsafeCell;
#[cfg(not(loom))]
use crate::loom::sync::atomic::AtomicBool;
use crate::loom::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use crate::loom::sync::{Arc, Mutex};

/// A channel's lock: a test-and-set spin lock that yields the thread after a short spin.
///
/// Why not `std::sync::Mutex`: `select!` must hold the locks of every channel it names at
/// once (taken in address order, Go's `sellock`), and their states have different types, so
/// a lock with free-standing `lock`/`unlock` is what fits. Critical sections are a few dozen
/// instructions and never suspend, so waiting is short; the yield bounds the cost when the
/// holder's thread was preempted by the OS.
#[cfg(not(loom))]
pub(crate) struct RawLock {
    /// `true` while held. Acquire on lock pairs with the Release store in `unlock`.
    locked: AtomicBool,
}

/// Spins before yielding: 2^0 + .. + 2^5 = 63 pause hints, about the length of a contended
/// critical section here (crossbeam's `Backoff` uses the same shape).
#[cfg(not(loom))]
const SPIN_ROUNDS: u32 = 6;

#[cfg(not(loom))]
impl RawLock {
    pub(crate) fn new() -> RawLock {
        RawLock {
            locked: AtomicBool::new(false),
        }
    }

    #[inline]
    pub(crate) fn lock(&self) {
        // A coroutine preempted while it holds the lock would be spun on for ever by the next
        // coroutine of its thread (`runtime/preempt.rs`); lowered in `unlock`.
        crate::runtime::preempt::hold();
        // Acquire: pairs with the Release store in `unlock`.
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
    }

    #[cold]
    fn lock_slow(&self) {
        let mut round = 0;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                if round < SPIN_ROUNDS {
                    for _ in 0..1u32 << round {
                        std::hint::spin_loop();
                    }
                    round += 1;
                } else {
                    std::thread::yield_now();
                }
            }
            // Acquire: pairs with the Release store in `unlock`.
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    #[inline]
    pub(crate) fn unlock(&self) {
        // Release: pairs with the Acquire CAS in `lock`/`lock_slow`.
        self.locked.store(false, Ordering::Release);
        crate::runtime::preempt::release();
    }
}

/// Under loom the lock blocks instead of spinning (loom cannot explore an unbounded spin), with
/// the same free-standing `lock`/`unlock` and the same acquire/release edges.
#[cfg(loom)]
pub(crate) struct RawLock {
    locked: Mutex<bool>,
    unlocked: loom::sync::Condvar,
}

#[cfg(loom)]
impl RawLock {
    pub(crate) fn new() -> RawLock {
        RawLock {
            locked: Mutex::new(false),
            unlocked: loom::sync::Condvar::new(),
        }
    }

    pub(crate) fn lock(&self) {
        let mut locked = self.locked.lock().unwrap();
        while *locked {
            locked = self.unlocked.wait(locked).unwrap();
        }
        *locked = true;
    }

    pub(crate) fn unlock(&self) {
        *self.locked.lock().unwrap() = false;
        self.unlocked.notify_one();
    }
}

/// `Signal::state` values: a waiter is WAITING until exactly one party moves it on.
const WAITING: usize = 0;
/// Its owner gave up (timeout, select timer, future dropped) before anyone claimed it.
const CANCELLED: usize = 1;
// CLAIMED(arm) = 2 + 2 * arm: a completer won the waiter for `arm` and is filling its slot.
// DONE(arm) = 3 + 2 * arm: the slot of `arm` is final; the owner may read it without a lock.

/// What a waiter's state word says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Observed {
    Waiting,
    Cancelled,
    Claimed(usize),
    Done(usize),
}

fn decode(word: usize) -> Observed {
    match word {
        WAITING => Observed::Waiting,
        CANCELLED => Observed::Cancelled,
        w if w % 2 == 0 => Observed::Claimed((w - 2) / 2),
        w => Observed::Done((w - 3) / 2),
    }
}

/// One waiting operation — a single send or receive, or a whole `select!` — shared by all the
/// entries it put in wait queues. Its state word decides, once, which of them completes.
pub(crate) struct Signal {
    /// WAITING / CANCELLED / CLAIMED(arm) / DONE(arm). Moved out of WAITING by one CAS: by a
    /// completer holding the lock of that arm's channel (H2), or by the owner cancelling (H5).
    state: AtomicUsize,
    /// Whom to wake. Written by the owner on each poll, taken by the completer (H3). A leaf
    /// lock: nothing else is locked while it is held.
    waker: Mutex<Option<Waker>>,
}

impl Signal {
    pub(crate) fn new(waker: &Waker) -> Signal {
        Signal::with(Some(waker.clone()))
    }

    fn with(waker: Option<Waker>) -> Signal {
        Signal {
            state: AtomicUsize::new(WAITING),
            waker: Mutex::new(waker),
        }
    }

    /// The owner's poll: remember the latest waker, then read the state. Reading after the
    /// store closes the lost-wake-up window: a completer that took the old waker stored DONE
    /// before it locked `waker`, so this read (after our lock of `waker`) sees it.
    pub(crate) fn refresh(&self, waker: &Waker) -> Observed {
        // Fast path: woken because it is done (the usual case), the waker is not needed.
        let seen = self.observe();
        if matches!(seen, Observed::Done(_)) {
            return seen;
        }
        {
            let mut slot = self.waker.lock().unwrap_or_else(|e| e.into_inner());
            match &*slot {
                Some(old) if old.will_wake(waker) => {}
                _ => *slot = Some(waker.clone()),
            }
        }
        self.observe()
    }

    pub(crate) fn observe(&self) -> Observed {
        // Acquire: pairs with the Release store in `finish`, so the slot it filled is visible.
        decode(self.state.load(Ordering::Acquire))
    }

    /// (H2) Wins this waiter for `arm`. The caller holds the lock of `arm`'s channel.
    fn try_claim(&self, arm: usize) -> bool {
        // Relaxed on success is enough for the claim itself (the slot is published by the
        // Release in `finish`); Acquire on failure is not needed either: a loser only skips.
        self.state
            .compare_exchange(WAITING, 2 + 2 * arm, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// (H3) Publishes the filled slot of `arm` and returns the waker to call once the channel
    /// lock is released.
    fn finish(&self, arm: usize) -> Option<Waker> {
        // Release: pairs with the Acquire load in `observe`.
        self.state.store(3 + 2 * arm, Ordering::Release);
        self.waker.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// (H5) The owner gives up. `Err(arm)` if a completer got there first: that arm is claimed
    /// or done (done once the caller has taken `arm`'s channel lock, which the completer held
    /// from claim to finish).
    pub(crate) fn try_cancel(&self) -> Result<(), usize> {
        // Acquire on failure: pairs with the Release store in `finish` (when already DONE).
        match self
            .state
            .compare_exchange(WAITING, CANCELLED, Ordering::Relaxed, Ordering::Acquire)
        {
            Ok(_) => Ok(()),
            Err(word) => match decode(word) {
                Observed::Claimed(arm) | Observed::Done(arm) => Err(arm),
                other => unreachable!("a waiter cancelled twice ({other:?})"),
            },
        }
    }
}

/// Where an entry's signal lives: inside the entry for a lone send or receive (one
/// allocation per wait), shared by the arms of a `select!`.
pub(crate) enum SignalRef {
    Own(Signal),
    Shared(Arc<Signal>),
}

/// A waiter's place in one channel's queue: which operation (`signal`, `arm`) and its value.
pub(crate) struct Entry<T> {
    signal: SignalRef,
    arm: usize,
    /// A send's value (taken by the receiver that completes it; still there if the channel
    /// closed), or the value a receive got (`None` if the channel closed).
    /// Guarded by the channel lock while queued; after DONE, by the owner alone (H4).
    slot: UnsafeCell<Option<T>>,
}

// SAFETY: the slot is only touched under the channel lock or, after DONE, by the owner alone
// (H4), so moving `T`s between threads through it is all that happens: `T: Send` suffices.
unsafe impl<T: Send> Send for Entry<T> {}
// SAFETY: as above; shared references never give access to the slot without that exclusion.
unsafe impl<T: Send> Sync for Entry<T> {}

impl<T> Entry<T> {
    pub(crate) fn new(signal: SignalRef, arm: usize, value: Option<T>) -> Arc<Entry<T>> {
        Arc::new(Entry {
            signal,
            arm,
            slot: UnsafeCell::new(value),
        })
    }

    /// A lone operation's entry (its own signal, arm 0).
    fn lone(waker: Option<Waker>, value: Option<T>) -> Entry<T> {
        Entry {
            signal: SignalRef::Own(Signal::with(waker)),
            arm: 0,
            slot: UnsafeCell::new(value),
        }
    }

    pub(crate) fn signal(&self) -> &Signal {
        match &self.signal {
            SignalRef::Own(s) => s,
            SignalRef::Shared(s) => s,
        }
    }

    /// Takes the slot's value.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of the channel this entry was queued on, or has observed
    /// DONE for this entry's arm (then nobody else touches the slot again).
    pub(crate) unsafe fn take(&self) -> Option<T> {
        // SAFETY: exclusive access per this function's contract.
        self.slot.with_mut(|p| unsafe { (*p).take() })
    }

    /// Stores a value in the slot.
    ///
    /// # Safety
    ///
    /// As for [`Entry::take`].
    unsafe fn put(&self, value: T) {
        // SAFETY: exclusive access per this function's contract.
        self.slot.with_mut(|p| unsafe { *p = Some(value) });
    }
}

/// The state behind a channel's lock.
pub(crate) struct State<T> {
    /// Buffered values, oldest first. At most `cap` long, except for values given back by a
    /// cancelled receiver (H6), which go to the front.
    buf: VecDeque<T>,
    /// Waiting receivers, FIFO. May hold stale entries (not WAITING); claimers drop them.
    recvq: VecDeque<Arc<Entry<T>>>,
    /// Waiting senders with their values, FIFO. Stale entries as for `recvq`.
    sendq: VecDeque<Arc<Entry<T>>>,
    /// Closed by `close`, or by the last sender or last receiver going away. Never reopens.
    closed: bool,
}

/// A channel: what every `Sender` and `Receiver` of it share.
pub(crate) struct Chan<T> {
    lock: RawLock,
    /// Guarded by `lock`.
    state: UnsafeCell<State<T>>,
    /// Buffer capacity; `usize::MAX` for an unbounded channel; 0 for a rendezvous channel.
    pub(crate) cap: usize,
    /// Live `Sender`s / `Receiver`s; the last one of either kind closes the channel.
    pub(crate) senders: AtomicUsize,
    pub(crate) receivers: AtomicUsize,
    /// One emptied lone entry kept for the next lone wait on this channel (null if none),
    /// from `Arc::into_raw` of an entry nobody else holds: a ping-pong allocates nothing.
    spare: AtomicPtr<Entry<T>>,
}

// SAFETY: the state is only reached under `lock` (see `Locked`); values of `T` move between
// threads through it, so `T: Send` is required and suffices.
unsafe impl<T: Send> Send for Chan<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Chan<T> {}

/// Wakers collected under a lock, to call after it is released (Go's `goready` after
/// `unlock`): waking may take scheduler locks, and the waiter should not spin on ours.
pub(crate) type Wake = Option<Waker>;

pub(crate) fn wake(w: Wake) {
    if let Some(w) = w {
        w.wake();
    }
}

/// Pops the first waiter of `q` that can be claimed (H2), dropping stale ones.
fn claim<T>(q: &mut VecDeque<Arc<Entry<T>>>) -> Option<Arc<Entry<T>>> {
    while let Some(e) = q.pop_front() {
        if e.signal().try_claim(e.arm) {
            return Some(e);
        }
    }
    None
}

/// The outcome of a non-blocking attempt under the lock.
pub(crate) enum TrySend<T> {
    Sent(Wake),
    Full(T),
    Closed(T),
}

/// The outcome of a non-blocking receive under the lock.
pub(crate) enum TryRecv<T> {
    Got(T, Wake),
    Empty,
    Closed,
}

impl<T> Chan<T> {
    pub(crate) fn new(cap: usize) -> Arc<Chan<T>> {
        Arc::new(Chan {
            lock: RawLock::new(),
            state: UnsafeCell::new(State {
                buf: VecDeque::with_capacity(if cap == usize::MAX { 0 } else { cap.min(1024) }),
                recvq: VecDeque::new(),
                sendq: VecDeque::new(),
                closed: false,
            }),
            cap,
            senders: AtomicUsize::new(1),
            receivers: AtomicUsize::new(1),
            spare: AtomicPtr::new(std::ptr::null_mut()),
        })
    }

    /// An entry for a lone wait: the spare one if there is one, else a new one.
    pub(crate) fn lone_entry(&self, waker: &Waker, value: Option<T>) -> Arc<Entry<T>> {
        let fresh = Entry::lone(Some(waker.clone()), value);
        match self.take_spare() {
            Some(mut e) => {
                let only = Arc::get_mut(&mut e).expect("a spare entry has one owner");
                *only = fresh;
                e
            }
            None => Arc::new(fresh),
        }
    }

    fn take_spare(&self) -> Option<Arc<Entry<T>>> {
        // Acquire: pairs with the Release exchange in `recycle`, so the emptied entry is seen.
        let p = self.spare.swap(std::ptr::null_mut(), Ordering::Acquire);
        // SAFETY: a non-null `spare` came from `Arc::into_raw` in `recycle`, and the swap
        // made this call its only taker.
        (!p.is_null()).then(|| unsafe { Arc::from_raw(p) })
    }

    /// Keeps a finished lone entry as the spare, if nobody else holds it and there is none.
    pub(crate) fn recycle(&self, mut e: Arc<Entry<T>>) {
        let Some(only) = Arc::get_mut(&mut e) else {
            return;
        };
        if !matches!(only.signal, SignalRef::Own(_)) {
            return;
        }
        // Emptied now: no value or waker (a reference to a task) outlives its operation.
        *only = Entry::lone(None, None);
        let p = Arc::into_raw(e).cast_mut();
        // Release: pairs with the Acquire swap in `take_spare`.
        if (self.spare)
            .compare_exchange(
                std::ptr::null_mut(),
                p,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_err()
        {
            // SAFETY: `p` came from `Arc::into_raw` just above and was not published.
            drop(unsafe { Arc::from_raw(p) });
        }
    }

    /// An identity for lock ordering and duplicate detection in `select!`.
    pub(crate) fn id(&self) -> usize {
        self as *const Self as usize
    }

    pub(crate) fn raw_lock(&self) -> &RawLock {
        &self.lock
    }

    /// Locks the channel for the guard's lifetime.
    pub(crate) fn lock(&self) -> Locked<'_, T> {
        self.lock.lock();
        Locked { chan: self }
    }

    /// The state, for a caller that holds the lock.
    ///
    /// # Safety
    ///
    /// The caller holds `self.raw_lock()` for as long as it uses the reference, and makes no
    /// second reference from another call meanwhile.
    #[allow(
        clippy::mut_from_ref,
        reason = "the lock, held by the caller, gives exclusivity"
    )]
    pub(crate) unsafe fn state_locked(&self) -> &mut State<T> {
        // SAFETY: exclusive per this function's contract (the lock is held).
        self.state.with_mut(|p| unsafe { &mut *p })
    }
}

impl<T> Drop for Chan<T> {
    fn drop(&mut self) {
        drop(self.take_spare());
    }
}

/// A held channel lock.
pub(crate) struct Locked<'a, T> {
    chan: &'a Chan<T>,
}

impl<T> Locked<'_, T> {
    pub(crate) fn state(&mut self) -> &mut State<T> {
        // SAFETY: this guard holds the lock, and `&mut self` keeps the reference unique.
        unsafe { self.chan.state_locked() }
    }
}

impl<T> Drop for Locked<'_, T> {
    fn drop(&mut self) {
        self.chan.lock.unlock();
    }
}

impl<T> State<T> {
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// Queued entries (receivers, senders), stale ones included: what the tests check is empty.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> (usize, usize) {
        (self.recvq.len(), self.sendq.len())
    }

    /// A send without waiting (H1): to a waiting receiver first, else into the buffer.
    pub(crate) fn try_send(&mut self, cap: usize, value: T) -> TrySend<T> {
        if self.closed {
            return TrySend::Closed(value);
        }
        if let Some(e) = claim(&mut self.recvq) {
            // SAFETY: we hold the channel lock and claimed the entry (H2).
            unsafe { e.put(value) };
            return TrySend::Sent(e.signal().finish(e.arm));
        }
        if self.buf.len() < cap {
            self.buf.push_back(value);
            return TrySend::Sent(None);
        }
        TrySend::Full(value)
    }

    /// A receive without waiting (H1): from the buffer (refilling it from a waiting sender),
    /// else straight from a waiting sender (the rendezvous case).
    pub(crate) fn try_recv(&mut self, cap: usize) -> TryRecv<T> {
        if let Some(v) = self.buf.pop_front() {
            let mut w = None;
            if self.buf.len() < cap
                && let Some(e) = claim(&mut self.sendq)
            {
                // SAFETY: we hold the channel lock and claimed the entry (H2).
                let moved = unsafe { e.take() }.expect("a waiting sender has its value");
                self.buf.push_back(moved);
                w = e.signal().finish(e.arm);
            }
            return TryRecv::Got(v, w);
        }
        if let Some(e) = claim(&mut self.sendq) {
            // SAFETY: as above.
            let v = unsafe { e.take() }.expect("a waiting sender has its value");
            return TryRecv::Got(v, e.signal().finish(e.arm));
        }
        if self.closed {
            TryRecv::Closed
        } else {
            TryRecv::Empty
        }
    }

    /// Queues a receiver (its signal already holds its waker).
    pub(crate) fn enqueue_recv(&mut self, e: Arc<Entry<T>>) {
        self.recvq.push_back(e);
    }

    /// Queues a sender (its entry holds the value).
    pub(crate) fn enqueue_send(&mut self, e: Arc<Entry<T>>) {
        self.sendq.push_back(e);
    }

    /// Removes `e` from whichever queue holds it (a no-op if a claimer already popped it).
    pub(crate) fn dequeue(&mut self, e: &Arc<Entry<T>>) {
        for q in [&mut self.recvq, &mut self.sendq] {
            if let Some(i) = q.iter().position(|x| Arc::ptr_eq(x, e)) {
                q.remove(i);
                return;
            }
        }
    }

    /// (H6) A value that a cancelled receiver had been handed goes to the next waiting
    /// receiver, else back to the front of the buffer, where the next receive finds it.
    pub(crate) fn give_back(&mut self, value: T) -> Wake {
        if let Some(e) = claim(&mut self.recvq) {
            // SAFETY: we hold the channel lock and claimed the entry (H2).
            unsafe { e.put(value) };
            return e.signal().finish(e.arm);
        }
        self.buf.push_front(value);
        None
    }

    /// Closes the channel: every waiter is completed, receivers with no value (`None`),
    /// senders with their value still in the slot (so they hand it back).
    pub(crate) fn close(&mut self) -> Vec<Waker> {
        self.closed = true;
        let mut wakers = Vec::new();
        for q in [&mut self.recvq, &mut self.sendq] {
            while let Some(e) = claim(q) {
                wakers.extend(e.signal().finish(e.arm));
            }
        }
        wakers
    }
}
