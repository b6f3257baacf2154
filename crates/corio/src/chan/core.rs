//! The channel core: one lock, a buffer, two wait queues, and the claim/finish protocol that
//! hands values to waiters. The module essay (`chan/mod.rs`, "The hand-off protocol") numbers
//! the steps this file implements; the comments below refer to them as (H1)..(H6).

use std::collections::VecDeque;
use std::mem::{self, MaybeUninit};
use std::ptr;
use std::task::Waker;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Arc;
#[cfg(loom)]
use crate::loom::sync::Mutex;
#[cfg(not(loom))]
use crate::loom::sync::atomic::AtomicBool;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::task::waker::wakes;

/// A channel's lock: a test-and-set spin lock that yields the thread after a short spin.
///
/// Why not `std::sync::Mutex`: `select!` must hold the locks of every channel it names at
/// once (taken in address order, Go's `sellock`), and their states have different types, so
/// a lock with free-standing `lock`/`unlock` is what fits. Critical sections are a few dozen
/// instructions and never suspend, so waiting is short; the yield bounds the cost when the
/// holder's thread was preempted by the OS. Nor do they run a `Drop` of user code: a value
/// or a waker a critical section lets go of is dropped after the unlock (it may use this very
/// channel, which would spin on its own lock for ever).
#[cfg(not(loom))]
pub(crate) struct RawLock {
    /// `true` while held. Acquire on lock pairs with the Release store in `unlock`.
    locked: AtomicBool,
}

/// Spins before yielding: 2^0 + .. + 2^5 = 63 pause hints, about the length of a contended
/// critical section here (crossbeam's `Backoff` uses the same shape).
#[cfg(not(loom))]
const SPIN_ROUNDS: u32 = 6;

/// Pause hints a thread that lost the lock waits before it looks at the lock again: ~1.6 µs
/// on the development host (12–13 ns a pause), dozens of the holder's operations.
///
/// Why not look at once: while the lock's cache line stays on the holder's core, its
/// operations run at one core's speed (a send and a receive in ~17 ns on 1 worker); every
/// look from the other core pulls the line over, and a look that finds it free takes it, so
/// two busy cores alternated the line at every operation (4 → 4 MPMC over `bounded(1024)`
/// on 2 workers: ~7 M messages a second, against ~58 M on 1). Staying off it lets the
/// holder's core run a burst, then the waiter's core runs one: 35–40 M (docs/chan.md,
/// "The waiter stands off").
#[cfg(not(loom))]
const STAND_OFF: u32 = 128;

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
            // Lost to another thread: leave the line to its core for a while (`STAND_OFF`).
            for _ in 0..STAND_OFF {
                std::hint::spin_loop();
            }
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

#[inline]
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
    /// Whom to wake. Guarded by channel locks, not a lock of its own: written by the owner
    /// before its entries are queued, or later while it holds the lock of every channel it
    /// has an entry queued on ([`Signal::set_waker`]); taken by the claimer (H3), which holds
    /// its channel's lock from claim to finish. So a completer never finds it half-written,
    /// and a waker the owner stored is seen by every completer that claims afterwards.
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: `state` is atomic; `waker` is only touched under the channel locks as its doc says
// (or through `&mut`), so sharing a signal between threads races on nothing; `Waker` is
// `Send + Sync`.
unsafe impl Send for Signal {}
// SAFETY: as above.
unsafe impl Sync for Signal {}

impl Signal {
    pub(crate) fn new(waker: &Waker) -> Signal {
        Signal::with(Some(waker.clone()))
    }

    fn with(waker: Option<Waker>) -> Signal {
        Signal {
            state: AtomicUsize::new(WAITING),
            waker: UnsafeCell::new(waker),
        }
    }

    /// The owner's poll, not DONE yet: remember the latest waker (no clone if the stored one
    /// wakes the same task). Returns the waker it replaced, for the caller to drop once the
    /// locks are released: a waker's `Drop` is user code, which may use these channels.
    ///
    /// # Safety
    ///
    /// The caller is the signal's owner and holds the lock of every channel this signal has
    /// an entry queued on (see `waker`).
    #[inline]
    #[must_use = "drop the replaced waker after unlocking"]
    pub(crate) unsafe fn set_waker(&self, waker: &Waker) -> Option<Waker> {
        // SAFETY: exclusive per this function's contract (the locks are held).
        self.waker.with_mut(|slot| match unsafe { &mut *slot } {
            Some(old) if old.will_wake(waker) => None,
            slot => slot.replace(waker.clone()),
        })
    }

    /// Whether the stored waker already wakes `waker` ([`wakes`]: a relay of it counts).
    ///
    /// # Safety
    ///
    /// As for [`Signal::set_waker`].
    pub(crate) unsafe fn wakes(&self, waker: &Waker) -> bool {
        // SAFETY: the locks are held (this function's contract): nobody writes the slot.
        self.waker
            .with(|slot| unsafe { &*slot }.as_ref().is_some_and(|w| wakes(w, waker)))
    }

    #[inline]
    pub(crate) fn observe(&self) -> Observed {
        // Acquire: pairs with the Release store in `finish`, so the slot it filled is visible.
        decode(self.state.load(Ordering::Acquire))
    }

    /// (H2) Wins this waiter for `arm`. The caller holds the lock of `arm`'s channel.
    #[inline]
    fn try_claim(&self, arm: usize) -> bool {
        // Relaxed on success is enough for the claim itself (the slot is published by the
        // Release in `finish`); Acquire on failure is not needed either: a loser only skips.
        self.state
            .compare_exchange(WAITING, 2 + 2 * arm, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// (H3) Publishes the filled slot of `arm` and returns the waker to call once the channel
    /// lock is released.
    #[inline]
    fn finish(&self, arm: usize) -> Option<Waker> {
        // SAFETY: the caller holds the lock of `arm`'s channel, where this signal's entry was
        // queued (see `waker`). Taken before DONE is stored: an owner that sees DONE may drop
        // the signal at once, so the store is the completer's last touch.
        let waker = self.waker.with_mut(|slot| unsafe { (*slot).take() });
        // Release: pairs with the Acquire load in `observe`.
        self.state.store(3 + 2 * arm, Ordering::Release);
        waker
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
    /// An entry with an empty slot (a send fills it with [`Entry::fill`] before queueing it).
    pub(crate) fn new(signal: SignalRef, arm: usize) -> Arc<Entry<T>> {
        Arc::new(Entry {
            signal,
            arm,
            slot: UnsafeCell::new(None),
        })
    }

    /// A lone operation's entry (its own signal, arm 0), its slot empty.
    fn lone(waker: Option<Waker>) -> Entry<T> {
        Entry {
            signal: SignalRef::Own(Signal::with(waker)),
            arm: 0,
            slot: UnsafeCell::new(None),
        }
    }

    /// Makes a finished lone entry (the spare) a new lone wait, in place: what
    /// `Entry::lone(Some(waker.clone()))` makes, without building and moving a whole entry,
    /// with `value`'s value moved into its slot. `&mut`: the caller is the entry's only
    /// holder (its last owner let it go).
    #[inline]
    fn rearm(&mut self, waker: &Waker, value: Option<&mut Option<T>>) {
        let SignalRef::Own(signal) = &mut self.signal else {
            unreachable!("a spare entry has its own signal")
        };
        // Relaxed: `&mut` means no other thread can look (`Arc::get_mut`'s Acquire saw the
        // last owner's drop); the entry is published again by the channel lock (queueing it).
        signal.state.store(WAITING, Ordering::Relaxed);
        // SAFETY: `&mut self`: nobody else can reach the waker.
        signal
            .waker
            .with_mut(|slot| unsafe { *slot = Some(waker.clone()) });
        self.arm = 0;
        // SAFETY: `&mut self`: nobody else can reach the slot.
        self.slot
            .with_mut(|p| unsafe { *p = value.and_then(Option::take) });
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

    /// Moves the slot's value (or its emptiness) into `out`, which must be empty, with no
    /// copy of it on the stack (a value may be tens of KiB, on a coroutine's small stack:
    /// "Large values", `chan/mod.rs`).
    ///
    /// # Safety
    ///
    /// As for [`Entry::take`].
    pub(crate) unsafe fn take_into(&self, out: &mut Option<T>) {
        debug_assert!(out.is_none(), "a value would be overwritten");
        // SAFETY: exclusive access per this function's contract; the slot and `out` are
        // distinct places. (`swap_nonoverlapping` swaps in small chunks: no copy of a whole
        // value on the stack, as `mem::swap` through `&mut` or `ptr::swap` may make.)
        self.slot
            .with_mut(|p| unsafe { ptr::swap_nonoverlapping(p, out, 1) });
    }

    /// Moves the slot's value, if it holds one, into `out` (whose contents are overwritten,
    /// not dropped) and returns whether it did: the one move a receive makes of a value it
    /// gets from a sender's entry ("Large values", `chan/mod.rs`).
    ///
    /// # Safety
    ///
    /// As for [`Entry::take`].
    pub(crate) unsafe fn take_to(&self, out: &mut MaybeUninit<T>) -> bool {
        // SAFETY: exclusive access per this function's contract.
        self.slot.with_mut(|p| unsafe { move_out(&mut *p, out) })
    }

    /// Moves `value`'s value into the (empty) slot, leaving `value` empty; as
    /// [`Entry::take_into`], without a copy on the stack.
    ///
    /// # Safety
    ///
    /// As for [`Entry::take`].
    pub(crate) unsafe fn fill(&self, value: &mut Option<T>) {
        // SAFETY: exclusive access per this function's contract.
        // The slot and `value` are distinct places (as in `take_into`).
        self.slot.with_mut(|p| unsafe {
            debug_assert!((*p).is_none(), "a value would be overwritten");
            ptr::swap_nonoverlapping(p, value, 1);
        });
    }
}

/// The state behind a channel's lock. `repr(C)`: the buffer and `closed` come first, on the
/// channel's first cache line (see [`Chan`]).
#[repr(C)]
pub(crate) struct State<T> {
    /// Buffered values, oldest first. At most `cap` long, except for values given back by a
    /// cancelled receiver (H6), which go to the front.
    buf: VecDeque<T>,
    /// Closed by `close`, or by the last sender or last receiver going away. Never reopens.
    closed: bool,
    /// Waiting receivers, FIFO. May hold stale entries (not WAITING); claimers drop them.
    recvq: VecDeque<Arc<Entry<T>>>,
    /// Waiting senders with their values, FIFO. Stale entries as for `recvq`.
    sendq: VecDeque<Arc<Entry<T>>>,
    /// `Stream` polls waiting to be told that a value may be there ("Stream waits hold no
    /// value", `chan/mod.rs`): lone entries whose slot stays empty. Whatever makes a value
    /// available to a receive (a send into the buffer, a value given back to it, the close
    /// once drained) completes all of them ([`State::wake_watchers`]), so while one waits
    /// the buffer is empty and no sender waits. Stale entries as for `recvq`.
    watchq: VecDeque<Arc<Entry<T>>>,
    /// The last lone entry a completer finished here, kept for the next lone wait on this
    /// channel: a ping-pong allocates nothing. Its owner may still hold it (reading its
    /// slot after DONE); it is reused only once `Arc::get_mut` says the owner let go.
    spare: Option<Arc<Entry<T>>>,
    /// Values handed to a waiting receive (H3, H6), counted since the channel was made; and
    /// of those, the ones settled under this lock (their owner withdrew them: kept by a
    /// timeout, or given back). With [`Chan::seen`] (settled without the lock, H4) they say
    /// how many values are *in transit* ([`State::in_transit`]): neither seen by their owner
    /// nor given back. While any is, the channel is not "closed and drained" for receivers:
    /// a receive so cancelled gives its value back (H6), and a receiver already told
    /// "closed" would never look for it ("Closing with values in transit", `chan/mod.rs`).
    /// Wrapping counts: only their difference means anything.
    handed: usize,
    settled: usize,
}

/// A channel: what every `Sender` and `Receiver` of it share.
///
/// Layout (`repr(C)`, aligned to a 64-byte cache line): a send or receive that completes at
/// once writes the lock word and the buffer's head and length, and reads `cap` and `closed`;
/// these share the first line, so an operation that follows one on the other core moves one
/// line between the cores (plus the buffer slot itself), not two. (Rust's default layout
/// had put the lock on the line after the buffer's.) The wait queues, read by every
/// operation but written only when someone waits, follow on the next line; the handle counts,
/// written by clones and drops, after them; the `Arc`'s reference counts, before the channel,
/// keep a line of their own.
#[repr(C, align(64))]
pub(crate) struct Chan<T> {
    lock: RawLock,
    /// Buffer capacity; `usize::MAX` for an unbounded channel; 0 for a rendezvous channel.
    pub(crate) cap: usize,
    /// Guarded by `lock`.
    state: UnsafeCell<State<T>>,
    /// Live `Sender`s / `Receiver`s; the last one of either kind closes the channel.
    pub(crate) senders: AtomicUsize,
    pub(crate) receivers: AtomicUsize,
    /// Values handed to a receive that their owner then saw without the lock (H4): the part
    /// of the settled count the lock does not guard ([`State::handed`]), in the low bits;
    /// and [`DRAINING`], set by the close. One word, so that the owners' increments and the
    /// close's setting of the flag are read-modify-writes of one location, totally ordered:
    /// see [`Chan::settle_seen`].
    seen: AtomicUsize,
    /// Under loom, this channel's creation order: its identity in `select!` ([`Chan::id`]).
    #[cfg(loom)]
    serial: usize,
}

// SAFETY: the state is only reached under `lock` (see `Locked`); values of `T` move between
// threads through it, so `T: Send` is required and suffices.
unsafe impl<T: Send> Send for Chan<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Chan<T> {}

/// Wakers collected under a lock, to call after it is released (Go's `goready` after
/// `unlock`): waking may take scheduler locks, and the waiter should not spin on ours.
pub(crate) type Wake = Option<Waker>;

#[inline]
pub(crate) fn wake(w: Wake) {
    if let Some(w) = w {
        w.wake();
    }
}

/// Several wakers called as one: what [`State::wake_watchers`] returns when more than one
/// `Stream` poll waits, so that every caller still gets one [`Wake`].
struct WakeAll(Vec<Waker>);

impl std::task::Wake for WakeAll {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.iter().for_each(Waker::wake_by_ref);
    }
}

/// Pops the first waiter of `q` that can be claimed (H2), dropping stale ones. Inlined
/// for the usual case, an empty queue (a buffered channel that nobody waits on).
#[inline]
fn claim<T>(q: &mut VecDeque<Arc<Entry<T>>>) -> Option<Arc<Entry<T>>> {
    if q.is_empty() {
        return None;
    }
    claim_queued(q)
}

#[inline]
fn claim_queued<T>(q: &mut VecDeque<Arc<Entry<T>>>) -> Option<Arc<Entry<T>>> {
    while let Some(e) = q.pop_front() {
        if e.signal().try_claim(e.arm) {
            return Some(e);
        }
    }
    None
}

/// The outcome of a non-blocking attempt under the lock.
/// Neither carries the value: it stays where the caller keeps it unless it was sent, so that
/// no value is copied through these results ("Large values", `chan/mod.rs`).
pub(crate) enum TrySend {
    /// The value was taken.
    Sent(Wake),
    Full,
    Closed,
}

/// The outcome of a non-blocking receive under the lock.
pub(crate) enum TryRecv {
    /// The value was moved into the caller's place.
    Got(Wake),
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
                watchq: VecDeque::new(),
                closed: false,
                spare: None,
                handed: 0,
                settled: 0,
            }),
            cap,
            senders: AtomicUsize::new(1),
            receivers: AtomicUsize::new(1),
            seen: AtomicUsize::new(0),
            #[cfg(loom)]
            serial: {
                // A plain std counter, outside the model: creation order is the same in every
                // iteration, addresses are not.
                static NEXT: std::sync::atomic::AtomicUsize =
                    std::sync::atomic::AtomicUsize::new(0);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        })
    }

    /// An identity for lock ordering and duplicate detection in `select!`: the address, or
    /// under loom the creation order. Loom replays each model iteration and needs the same
    /// lock order every time; two channels' relative addresses may differ between iterations
    /// (with the 64-byte alignment they did, and `loom_select_registration_completes_exactly_
    /// one_arm` failed with "Is the model fully deterministic?").
    pub(crate) fn id(&self) -> usize {
        #[cfg(not(loom))]
        return self as *const Self as usize;
        #[cfg(loom)]
        return self.serial;
    }

    pub(crate) fn raw_lock(&self) -> &RawLock {
        &self.lock
    }

    /// (H4) The owner of a receive saw the value it was handed, without the lock: counts it
    /// out of transit, and if the channel is closed (`DRAINING`), completes the queued
    /// receivers once none is left in transit.
    ///
    /// The increment and the close's `fetch_or` of `DRAINING` are read-modify-writes of one
    /// word, so one of them comes first in its modification order and the later one reads
    /// the earlier: either the close counts this value out (and completes the receivers
    /// itself if it was the last), or this increment finds the flag and this owner looks
    /// under the lock. (A flag and a count in two words would need a `SeqCst` store-load
    /// pair on each side, which loom does not model: it reported a deadlock that the C++
    /// model rules out.)
    #[inline]
    pub(crate) fn settle_seen(&self) {
        // AcqRel: the increment is read by a close (under the lock, whose later holders
        // then see it); the flag, when set, orders this owner after the close.
        if self.seen.fetch_add(1, Ordering::AcqRel) & DRAINING != 0 {
            self.finish_draining();
        }
    }

    /// A receive withdrawn after it was handed `v` (H5) gives it back (H6), and the value is
    /// counted out of transit — after it went to a waiting receiver (in transit again) or
    /// to the buffer, so that no close in between finds the channel drained. The caller
    /// holds the lock and wakes the wakers after releasing it.
    pub(crate) fn give_back_settled(&self, state: &mut State<T>, v: T) -> Vec<Waker> {
        let w = state.give_back(v);
        state.settled = state.settled.wrapping_add(1);
        let mut wakers = state.finish_draining(&self.seen);
        wakers.extend(w);
        wakers
    }

    /// A receive withdrawn after it was handed its value keeps it (a timeout that lost the
    /// race to a sender returns the value): counted out of transit under the lock.
    pub(crate) fn settle_kept(&self) {
        self.locked_then_wake(|state, seen| {
            state.settled = state.settled.wrapping_add(1);
            state.finish_draining(seen)
        });
    }

    #[cold]
    #[inline(never)]
    fn finish_draining(&self) {
        self.locked_then_wake(State::finish_draining);
    }

    /// Runs `f` under the lock, then wakes the wakers it returns once the lock is released
    /// (a waker's `wake` is user code, which may use this channel).
    pub(crate) fn locked_then_wake(
        &self,
        f: impl FnOnce(&mut State<T>, &AtomicUsize) -> Vec<Waker>,
    ) {
        let mut locked = self.lock();
        let wakers = f(locked.state(), &self.seen);
        drop(locked);
        wakers.into_iter().for_each(Waker::wake);
    }

    /// The word `settle_seen` increments, for the `State` methods that need it.
    pub(crate) fn seen(&self) -> &AtomicUsize {
        &self.seen
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

/// [`Chan::seen`]'s top bit: the channel is closed, and an owner that counts a value out of
/// transit takes the lock to see whether the queued receivers can now be told "closed".
const DRAINING: usize = 1 << (usize::BITS - 1);

/// Values in transit from the three counts (`State::handed`, `State::settled`, `Chan::seen`
/// with its flag masked off). The counts wrap (`seen` within its 63 bits: 2^63 hand-offs, at
/// ten a nanosecond, take nine centuries); only the difference, which is small, matters.
fn transit(handed: usize, settled: usize, seen: usize) -> usize {
    handed.wrapping_sub(settled).wrapping_sub(seen) & !DRAINING
}

/// Moves `from`'s value, if it has one, into `out` (overwritten, not dropped), leaving `from`
/// empty, and returns whether it did. A raw copy: `Option::take` and `MaybeUninit::write`
/// would each make a copy on the stack in between, which a release build does not always
/// remove ("Large values", `chan/mod.rs`).
#[inline(always)]
fn move_out<T>(from: &mut Option<T>, out: &mut MaybeUninit<T>) -> bool {
    let Some(v) = from.as_mut() else {
        return false;
    };
    // SAFETY: `v` is a valid `T` and `out` a place for one, distinct (`&mut`s); after the
    // copy, `from` is overwritten with `None` without dropping what it held, so the value
    // has moved: it lives on in `out` only.
    unsafe {
        ptr::copy_nonoverlapping(v as *const T, out.as_mut_ptr(), 1);
        ptr::write(from, None);
    }
    true
}

/// Moves the buffer's front value, if any, into `out` (overwritten, not dropped), as
/// [`move_out`] does, and returns whether it did.
#[inline(always)]
fn pop_front_to<T>(buf: &mut VecDeque<T>, out: &mut MaybeUninit<T>) -> bool {
    if !is_large::<T>() {
        // A few registers: the plain pop, which finds the front once.
        return buf.pop_front().map(|v| out.write(v)).is_some();
    }
    let Some(front) = buf.front() else {
        return false;
    };
    // SAFETY: `front` is a valid `T` in the buffer, `out` a distinct place for one. The
    // copy is then removed from the buffer and forgotten, not dropped: the value has moved
    // to `out`. (The forgotten copy is never read, so the compiler drops it.)
    unsafe { ptr::copy_nonoverlapping(front as *const T, out.as_mut_ptr(), 1) };
    mem::forget(buf.pop_front());
    true
}

/// Whether `T` is large enough that a copy of it on the stack matters: the size above which
/// a value's moves through the buffer are made in calls of their own, not inlined into every
/// send and receive ("Large values", `chan/mod.rs`). Below it, the copy is a few registers.
#[inline(always)]
pub(crate) const fn is_large<T>() -> bool {
    mem::size_of::<T>() > 256
}

/// The value a send holds, taken as it goes into the buffer.
#[inline(always)]
fn sent_value<T>(value: &mut Option<T>) -> T {
    value
        .take()
        .expect("a send holds its value until it is sent")
}

impl<T> State<T> {
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// Queued entries (receivers and `Stream` polls, senders), stale ones included: what
    /// the tests check is empty.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> (usize, usize) {
        (self.recvq.len() + self.watchq.len(), self.sendq.len())
    }

    /// A send without waiting (H1): to a waiting receiver first, else into the buffer, else
    /// (a rendezvous channel) into the buffer all the same if a `Stream` poll waits for it.
    #[inline(always)] // the fast path of every send and receive: no call frame
    ///
    /// `value` holds the value; it is taken only if sent.
    pub(crate) fn try_send(&mut self, cap: usize, value: &mut Option<T>) -> TrySend {
        if self.closed {
            return TrySend::Closed;
        }
        if let Some(e) = claim(&mut self.recvq) {
            // SAFETY: we hold the channel lock and claimed the entry (H2).
            unsafe { e.fill(value) };
            self.handed = self.handed.wrapping_add(1);
            return TrySend::Sent(self.finish(e));
        }
        if self.buf.len() < cap {
            self.push_sent(value);
            return TrySend::Sent(self.wake_watchers());
        }
        if !self.watchq.is_empty() {
            return self.send_to_watchers(value);
        }
        TrySend::Full
    }

    /// A send on a full channel while `Stream` polls wait, which happens on a rendezvous
    /// channel only (they wait with the buffer empty). A waiting stream is a waiting
    /// receiver, so the send completes, as it would into a waiting receive; but the value
    /// goes to the buffer, not to one stream's slot, and every stream is told: the one a
    /// value was handed to might have been abandoned by its caller ("Stream waits hold no
    /// value", `chan/mod.rs`). The buffer then briefly holds one value more than its
    /// capacity, as after a give-back (H6).
    #[cold]
    #[inline(never)]
    fn send_to_watchers(&mut self, value: &mut Option<T>) -> TrySend {
        match self.wake_watchers_slow() {
            Some(w) => {
                self.push_sent(value);
                TrySend::Sent(Some(w))
            }
            None => TrySend::Full, // every entry was stale
        }
    }

    /// A receive without waiting (H1): from the buffer (refilling it from a waiting sender),
    /// else straight from a waiting sender (the rendezvous case).
    ///
    /// `seen` is the channel's [`Chan::seen`]: a closed channel with values in transit is
    /// `Empty`, not `Closed` (the receive waits for them: "Closing with values in transit").
    #[inline(always)] // the fast path of every send and receive: no call frame
    ///
    /// A value received is moved into `out` (overwritten, not dropped): initialised if
    /// `Got`.
    pub(crate) fn try_recv(
        &mut self,
        cap: usize,
        seen: &AtomicUsize,
        out: &mut MaybeUninit<T>,
    ) -> TryRecv {
        if pop_front_to(&mut self.buf, out) {
            let mut w = None;
            if self.buf.len() < cap
                && let Some(e) = claim(&mut self.sendq)
            {
                if is_large::<T>() {
                    self.refill(&e);
                } else {
                    // SAFETY: we hold the channel lock and claimed the entry (H2).
                    let moved = unsafe { e.take() }.expect("a waiting sender has its value");
                    self.buf.push_back(moved);
                }
                w = self.finish(e);
            }
            return TryRecv::Got(w);
        }
        if let Some(e) = claim(&mut self.sendq) {
            // SAFETY: as above.
            let moved = unsafe { e.take_to(out) };
            assert!(moved, "a waiting sender has its value");
            return TryRecv::Got(self.finish(e));
        }
        if self.closed && self.in_transit(seen) == 0 {
            TryRecv::Closed
        } else {
            TryRecv::Empty
        }
    }

    /// Moves a send's value to the back of the buffer.
    #[inline(always)]
    fn push_sent(&mut self, value: &mut Option<T>) {
        if is_large::<T>() {
            self.push_large(value);
        } else {
            self.buf.push_back(sent_value(value));
        }
    }

    /// [`State::push_sent`] for a large value, in a call of its own: the value passes through
    /// a copy on the stack here (`VecDeque` takes values, not places, and may grow in
    /// between), which must not sit in the frame of every send ("Large values",
    /// `chan/mod.rs`).
    #[inline(never)]
    fn push_large(&mut self, value: &mut Option<T>) {
        self.buf.push_back(sent_value(value));
    }

    /// Moves a claimed waiting sender's large value to the back of the buffer; a call of its
    /// own, as [`State::push_large`] is.
    #[inline(never)]
    fn refill(&mut self, e: &Entry<T>) {
        // SAFETY: the caller holds the channel lock and claimed the entry (H2).
        let moved = unsafe { e.take() }.expect("a waiting sender has its value");
        self.buf.push_back(moved);
    }

    /// Values handed to a receive and not yet settled (see `handed`). Acquire: a lock
    /// holder after the close reads at least what the close's `fetch_or` read (it happened
    /// before, through the lock), and an increment it misses finds `DRAINING` set and takes
    /// the lock after it (`Chan::settle_seen`).
    fn in_transit(&self, seen: &AtomicUsize) -> usize {
        transit(self.handed, self.settled, seen.load(Ordering::Acquire))
    }

    /// (H3) Finishes a claimed entry, keeps it as the spare if it is a lone one, and returns
    /// the waker to call once the lock is released.
    #[inline]
    fn finish(&mut self, e: Arc<Entry<T>>) -> Wake {
        let w = e.signal().finish(e.arm);
        if self.spare.is_none() && matches!(e.signal, SignalRef::Own(_)) {
            self.spare = Some(e);
        }
        w
    }

    /// An entry for a lone wait: the spare, re-armed, if its owner has let it go; else a
    /// new one.
    #[inline]
    ///
    /// A send's `value`: its value is moved into the entry's slot.
    pub(crate) fn lone_entry(
        &mut self,
        waker: &Waker,
        value: Option<&mut Option<T>>,
    ) -> Arc<Entry<T>> {
        if let Some(mut e) = self.spare.take() {
            if let Some(only) = Arc::get_mut(&mut e) {
                only.rearm(waker, value);
                return e;
            }
            self.spare = Some(e); // its owner still reads it: maybe next time
        }
        let e = Arc::new(Entry::lone(Some(waker.clone())));
        if let Some(value) = value {
            // SAFETY: the entry is new and not yet queued: nobody else can reach it.
            unsafe { e.fill(value) };
        }
        e
    }

    /// Queues a receiver (its signal already holds its waker).
    #[inline]
    pub(crate) fn enqueue_recv(&mut self, e: Arc<Entry<T>>) {
        self.recvq.push_back(e);
    }

    /// Queues a sender (its entry holds the value). No `Stream` poll waits then: one that
    /// waits finds the buffer empty and no sender queued, and the next send completes at
    /// once, through it (`State::try_send`).
    #[inline]
    pub(crate) fn enqueue_send(&mut self, e: Arc<Entry<T>>) {
        self.sendq.push_back(e);
    }

    /// Queues a `Stream` poll's wait (an entry that never holds a value).
    pub(crate) fn enqueue_watch(&mut self, e: Arc<Entry<T>>) {
        self.watchq.push_back(e);
    }

    /// Completes every waiting `Stream` poll (a value may be there for them now) and returns
    /// one waker that wakes them all, to call once the lock is released. Inlined for the
    /// usual case, nobody watching.
    #[inline]
    fn wake_watchers(&mut self) -> Wake {
        if self.watchq.is_empty() {
            return None;
        }
        self.wake_watchers_slow()
    }

    /// All of them, not one: a `Stream` poll may have been abandoned (`timeout(d,
    /// rx.next())` expired), and a wake-up given to it alone would be lost while another
    /// handle's stream waits. async-channel wakes all its stream listeners for the same
    /// reason. A woken stream that finds nothing (another took the value) waits again.
    #[cold]
    #[inline(never)]
    fn wake_watchers_slow(&mut self) -> Wake {
        // The usual case, one stream, allocates nothing.
        let mut first = None;
        let mut more = Vec::new();
        while let Some(e) = claim(&mut self.watchq) {
            match (self.finish(e), &first) {
                (None, _) => {}
                (Some(w), None) => first = Some(w),
                (Some(w), Some(_)) => more.push(w),
            }
        }
        if more.is_empty() {
            return first;
        }
        more.extend(first);
        Some(Waker::from(std::sync::Arc::new(WakeAll(more))))
    }

    /// Removes `e` from whichever queue holds it (a no-op if a claimer already popped it).
    pub(crate) fn dequeue(&mut self, e: &Arc<Entry<T>>) {
        for q in [&mut self.recvq, &mut self.sendq, &mut self.watchq] {
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
            unsafe { e.fill(&mut Some(value)) };
            self.handed = self.handed.wrapping_add(1);
            return self.finish(e);
        }
        self.buf.push_front(value);
        self.wake_watchers()
    }

    /// Takes every buffered value out, for the caller to drop once the lock is released (a
    /// `T`'s `Drop` is user code).
    pub(crate) fn take_buffered(&mut self) -> VecDeque<T> {
        std::mem::take(&mut self.buf)
    }

    /// Closes the channel: every waiter is completed, senders with their value still in the
    /// slot (so they hand it back), receivers with no value (`None`) — unless values are in
    /// transit: then the receivers wait for them (one may be given back), and whoever settles
    /// the last completes them ([`DRAINING`], [`State::finish_draining`]).
    pub(crate) fn close(&mut self, seen: &AtomicUsize) -> Vec<Waker> {
        self.closed = true;
        let mut wakers = Vec::new();
        while let Some(e) = claim(&mut self.sendq) {
            wakers.extend(e.signal().finish(e.arm));
        }
        // From here every owner that counts a value out takes the lock to look
        // (`Chan::settle_seen`). AcqRel: see there.
        seen.fetch_or(DRAINING, Ordering::AcqRel);
        wakers.extend(self.finish_draining(seen));
        wakers
    }

    /// Completes the queued receivers with "closed" if the channel is closed and drained:
    /// nothing buffered, nothing in transit.
    pub(crate) fn finish_draining(&mut self, seen: &AtomicUsize) -> Vec<Waker> {
        let mut wakers = Vec::new();
        if self.closed && self.buf.is_empty() && self.in_transit(seen) == 0 {
            while let Some(e) = claim(&mut self.recvq) {
                wakers.extend(e.signal().finish(e.arm));
            }
            wakers.extend(self.wake_watchers());
        }
        wakers
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Threads that keep losing the lock to each other (every one of them stands off and
    /// looks again, `STAND_OFF`) still exclude each other: no increment of a plain counter
    /// under the lock is lost.
    #[test]
    fn contended_lock_excludes_and_loses_no_update() {
        struct Counter {
            lock: RawLock,
            value: std::cell::UnsafeCell<u64>,
        }
        // SAFETY: `value` is only touched under `lock`.
        unsafe impl Sync for Counter {}
        // (50 under Miri, which interprets each of a waiter's 128 pause hints: 200 took 53 s
        // of CI's miri step; four threads at 50 still contend at every acquisition.)
        let per_thread = if cfg!(miri) { 50 } else { 200_000 };
        let counter = Counter {
            lock: RawLock::new(),
            value: std::cell::UnsafeCell::new(0),
        };
        let shared = &counter;
        let start = std::sync::Barrier::new(4);
        let start = &start;
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(move || {
                    let counter = shared;
                    start.wait();
                    for _ in 0..per_thread {
                        counter.lock.lock();
                        // SAFETY: the lock is held, so no other thread touches `value`. A
                        // read and a separate write, so a second holder would lose updates.
                        unsafe {
                            let v = std::ptr::read_volatile(counter.value.get());
                            std::ptr::write_volatile(counter.value.get(), v + 1);
                        }
                        counter.lock.unlock();
                    }
                });
            }
        });
        assert_eq!(counter.value.into_inner(), 4 * per_thread);
    }

    /// What a send or receive that completes at once writes (the lock, the buffer's head and
    /// length) and reads (`cap`, `closed`) lies in the channel's first cache line.
    #[test]
    fn the_fields_a_completing_operation_touches_share_one_cache_line() {
        assert_eq!(std::mem::align_of::<Chan<u64>>(), 64);
        let state = std::mem::offset_of!(Chan<u64>, state);
        let first_line = |offset: usize, size: usize| offset + size <= 64;
        assert!(first_line(
            std::mem::offset_of!(Chan<u64>, lock),
            size_of::<RawLock>()
        ));
        assert!(first_line(
            std::mem::offset_of!(Chan<u64>, cap),
            size_of::<usize>()
        ));
        let buf = state + std::mem::offset_of!(State<u64>, buf);
        assert!(first_line(buf, size_of::<VecDeque<u64>>()));
        assert!(first_line(
            state + std::mem::offset_of!(State<u64>, closed),
            1
        ));
    }
}
