//! [`WaiterSlot`]: the one-waker slot in front of a socket direction's waker list.
//!
//! # Why
//!
//! Almost always one task waits on a direction of a socket: the connection's coroutine reads,
//! and when it must wait for data it is the only reader. Queuing that waiter in a mutex-guarded
//! list cost a lock round trip on each side of every wait (the waiter's push, the poller's
//! drain) on the hottest path of a server. So each direction has a slot for one waker in front
//! of its list (`registry.rs`, "the protocol"): the first waiter takes the slot without a lock;
//! a second waiter on the same direction (two handles to one socket) finds the slot taken by a
//! different waker and goes to the list, as every waiter did before.
//!
//! # The mechanism
//!
//! The algorithm of `futures`' `AtomicWaker` (corio's own is `sync/atomic_waker.rs`), with two
//! changes. A state word guards an `UnsafeCell<Option<Waker>>`:
//!
//! - `REGISTERING`: a waiter holds the slot and is storing its waker.
//! - `WAKING`: a poller holds the slot and is taking the waker (or, finding `REGISTERING`, has
//!   left a note that the registering waiter must retry).
//! - `FULL`: the cell holds a waker (set and cleared only by the holder of the slot).
//!
//! 1. [`register`](WaiterSlot::register): CAS from a state without `REGISTERING`/`WAKING` to it
//!    plus `REGISTERING`. A state with `WAKING` means a poller is taking the waker after an
//!    edge: the waiter wakes its own waker and returns `Pending` (the next poll sees the edge),
//!    as `AtomicWaker` does. A state with `REGISTERING` means another waiter holds the slot: it
//!    goes to the list ([`Register::Occupied`]; the first change: two waiters are allowed, the
//!    second is sent elsewhere instead of being ignored). Holding the slot, the waiter stores
//!    its waker if the cell is empty or holds one that `will_wake` it (no clone), and else
//!    (another task's waker, left by a waiter that gave up or still waits) goes to the list;
//!    then releases with a CAS back to the state without `REGISTERING` (with `FULL` if it
//!    stored). If the release fails, a poller set `WAKING` meanwhile and went away: an edge
//!    came, so the waiter takes the waker back out, empties the slot and retries (its own
//!    waker), or wakes the other task's (whose wake-up the poller left to it).
//! 2. [`wake`](WaiterSlot::wake): `fetch_or(WAKING)`; if the slot was free, take the waker,
//!    clear `WAKING` and `FULL`, wake it. Before that, the second change: a poller that loads
//!    a state of 0 (nobody registered, nobody registering) returns at once, so an edge with
//!    nobody waiting (most write-direction edges) pays a load, not two read-modify-writes.
//!
//! The slot holds one *entry*: a waker, the count of the waiters behind it (futures of one
//! task share their task's waker) and the entry's number, which [`Ticket`]s name
//! (`registry.rs`, "A waiter that gives up"). Joining an entry, leaving it
//! ([`withdraw`](WaiterSlot::withdraw)) and taking it (a poller) all happen while holding the
//! slot, so the count needs no atomic of its own.
//!
//! # The guarantee, and the argument for the early return
//!
//! A poller that makes an edge visible (an AcqRel read-modify-write of the direction's
//! readiness state) and then calls `wake`, and a waiter that calls `register` and then, if it
//! stored its waker, re-checks the readiness state with an AcqRel read-modify-write that
//! changes nothing (`fetch_add(0)`), cannot both miss. Without the early return this is
//! `AtomicWaker`'s argument: every slot operation is a read-modify-write of one word, so they
//! are totally ordered, and the later one sees the earlier one's waker or (through the release
//! sequence of the word) its edge. For the early return, the two read-modify-writes of the
//! readiness state are ordered too: if the waiter's comes second it reads the edge and the
//! waiter retries; if it comes first, the poller's reads it, so the waiter's releasing CAS
//! (which set `FULL`) happens before the poller's load of this word, which then reads `FULL`
//! or a later state: `FULL` or `REGISTERING` (it takes the slow path), or 0 after another
//! poller took and woke this very waker. (A plain load for the re-check would need a `SeqCst`
//! store-load pair on each side, which loom does not model.) The same pair of
//! read-modify-writes on the `closed` flag makes a dropped socket wake its waiter.
//!
//! # Model checking
//!
//! `registry.rs`'s `loom_tests` check the whole wait/ready/close protocol with this slot:
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p corio --release --lib
//! --target-dir target/loom -- loom`.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::task::{RawWakerVTable, Waker};

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Release};

/// A waiter holds the slot and is storing its waker.
const REGISTERING: usize = 0b001;

/// How long [`WaiterSlot::withdraw`] waits while another waiter holds the slot: [`SPINS`]
/// spins, [`YIELDS`] yields of the thread (the holder may wait for this CPU), then naps of
/// 100 µs until the holder lets go. A holder always lets go: it holds the slot for a few
/// instructions, with no suspension point, and is never preempted there (`register` raises the
/// coroutine's no-preempt counter, `runtime/preempt.rs`), so it is never a coroutine of this
/// thread; only its thread may be descheduled for a while. (The wait was bounded at about
/// 10 ms until 2026-12-07, for a holder preempted by signal; on a loaded machine a descheduled
/// holder outlasted it: 2 withdraws in 2,000 left their waker behind, once in 16 runs of
/// `tests/net_waiters.rs` with two copies of the test suite running.) Under loom, once.
const WITHDRAW_WAITS: u32 = if cfg!(loom) { 1 } else { u32::MAX };

/// Of [`WITHDRAW_WAITS`], the spins.
const SPINS: u32 = 64;

/// Of [`WITHDRAW_WAITS`], the yields after the spins.
const YIELDS: u32 = 64;

/// The `waits`-th wait of a withdraw for the slot's holder.
#[cold]
fn wait_for_holder(waits: u32) {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    if waits <= SPINS {
        std::hint::spin_loop();
    } else if waits <= SPINS + YIELDS {
        std::thread::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    let _ = waits;
}
/// A poller holds the slot, or left a note for the registering waiter.
const WAKING: usize = 0b010;
/// The cell holds a waker.
const FULL: usize = 0b100;

/// A waker's identity — what [`Waker::will_wake`] compares, its data and vtable pointers —
/// kept without a reference: a future notes the waker it left with a socket when it returns
/// `Pending` (no clone, no atomic operation), to take it back if it is dropped before the
/// wake (`ScheduledIo::withdraw`). An identity gone stale (the task freed, its address reused
/// by another) can at worst match that other task's waker, which `withdraw` then wakes once
/// for nothing. The data pointer is kept as an address, so that the futures stay `Send`.
/// Like `will_wake`, it can miss: a vtable duplicated across codegen units gives one waker
/// two identities (corio's task wakers use one `static` vtable, so theirs always match); a
/// miss leaves the waker where it was, as before `withdraw` existed, until the next edge.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WakerId {
    data: usize,
    vtable: &'static RawWakerVTable,
}

impl WakerId {
    #[inline]
    pub(crate) fn of(waker: &Waker) -> WakerId {
        WakerId {
            data: waker.data() as usize,
            vtable: waker.vtable(),
        }
    }

    /// Whether `waker` is the one this identity was taken from (as `will_wake` decides).
    #[inline]
    pub(crate) fn is(&self, waker: &Waker) -> bool {
        waker.data() as usize == self.data && std::ptr::eq(waker.vtable(), self.vtable)
    }
}

/// Where a waiter's waker waits, for the waiter to take its share of it back
/// ([`ScheduledIo::withdraw`](super::registry::ScheduledIo::withdraw)): the waker's identity
/// and the *entry* it is counted in. An entry is one waker left in a direction's slot or
/// list, with a count of the waiters behind it (the futures of one task waiting on one
/// direction share their task's waker); each entry has its own number, so a waiter whose
/// entry a poller already took (and woke) does not take a share of a newer entry of the
/// same waker.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ticket {
    pub(crate) waker: WakerId,
    pub(crate) place: Place,
}

/// The entry of a [`Ticket`]: the slot's or the list's, and its number there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    Slot(u64),
    List(u64),
}

/// What [`WaiterSlot::register`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Register {
    /// The slot holds the waker, in the entry with this number: check the readiness state
    /// (and `closed`), then wait.
    Stored(u64),
    /// A poller was waking the slot: the waker was woken at once; return `Pending`.
    Woken,
    /// An edge came while registering: try the operation again.
    Retry,
    /// The slot holds (or is being given) another task's waker: use the list.
    Occupied,
}

/// One direction's waker slot: see the module documentation.
pub(crate) struct WaiterSlot {
    /// `REGISTERING`, `WAKING` and `FULL` bits.
    state: AtomicUsize,
    /// Touched only by the holder of `REGISTERING` (without `WAKING`) or of `WAKING` (whose
    /// `fetch_or` found neither `REGISTERING` nor `WAKING`).
    cell: UnsafeCell<Entry>,
}

/// The slot's entry: its waker, how many waiters share it, and its number.
struct Entry {
    waker: Option<Waker>,
    /// The waiters behind `waker` (meaningful while it is there).
    count: usize,
    /// The number of the entry now (or last) in the slot: bumped when a waker is stored in
    /// an empty slot.
    number: u64,
}

impl Entry {
    /// Counts a waiter in the entry if it holds a waker that `will_wake` `waker`, or makes a
    /// new entry if the slot is empty; `false` if another task's waker is there. (A waiter
    /// that waited before left its entry first: `ScheduledIo::wait`.)
    fn join(&mut self, waker: &Waker) -> bool {
        match &self.waker {
            Some(old) if old.will_wake(waker) => {
                self.count += 1;
                true
            }
            Some(_) => false,
            None => {
                self.waker = Some(waker.clone());
                self.count = 1;
                self.number = self.number.wrapping_add(1);
                true
            }
        }
    }

    /// Takes the waiter of `ticket` out of the entry if it is counted in it; returns the
    /// waker when it was the last one.
    fn leave(&mut self, waker: WakerId, number: u64) -> Option<Waker> {
        match &self.waker {
            Some(stored) if self.number == number && waker.is(stored) => {
                self.count -= 1;
                if self.count == 0 {
                    self.waker.take()
                } else {
                    None
                }
            }
            _ => None,
        }
    }
}

// SAFETY: the only non-`Sync` part is the cell, and it is accessed only by the thread that owns
// the slot through `state` (see the field); ownership passes with the Acquire/Release pairs
// named at each use. `Option<Waker>` is `Send`.
unsafe impl Sync for WaiterSlot {}

impl WaiterSlot {
    pub(crate) fn new() -> WaiterSlot {
        WaiterSlot {
            state: AtomicUsize::new(0),
            cell: UnsafeCell::new(Entry {
                waker: None,
                count: 0,
                number: 0,
            }),
        }
    }

    /// Step 1 of the module documentation: leave `waker` in the slot if it is free or already
    /// holds a waker that `will_wake` it.
    #[inline]
    pub(crate) fn register(&self, waker: &Waker) -> Register {
        // Never preempted while holding the slot: a withdraw on this thread would wait for us.
        let _no_preempt = crate::runtime::preempt::guard();
        let mut cur = self.state.load(Acquire);
        loop {
            if cur & WAKING != 0 {
                waker.wake_by_ref();
                return Register::Woken;
            }
            if cur & REGISTERING != 0 {
                return Register::Occupied;
            }
            // Acquire: pairs with the Release of `wake`'s clearing `fetch_and` and of an
            // earlier `register`'s releasing CAS, so the cell they left is visible.
            match self
                .state
                .compare_exchange_weak(cur, cur | REGISTERING, Acquire, Acquire)
            {
                Ok(_) => break,
                Err(actual) => cur = actual,
            }
        }
        let held = cur | REGISTERING;
        // The waker's `clone` is the waiter's code, and may panic.
        let joined = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: our CAS set `REGISTERING` on a state without it or `WAKING`: the cell is
            // ours until we release it (pollers that come now only set `WAKING`).
            self.cell.with_mut(|cell| unsafe {
                let entry = &mut *cell;
                (entry.join(waker), entry.number)
            })
        }));
        let (stored, number) = match joined {
            Ok(joined) => joined,
            Err(payload) => {
                // The waker's `clone` panicked (the entry is unchanged): let go of the slot, or
                // a withdraw would wait for it for ever.
                self.release_or_wake(held, cur);
                resume_unwind(payload)
            }
        };
        let released = if stored { FULL } else { cur };
        // Release on success: for the Acquire of `wake`'s `fetch_or` and early-return load (the
        // waker just stored, and `FULL`). Failure, Acquire: pairs with the `fetch_or` that set
        // `WAKING`, so its edge is visible to the retry.
        match self.state.compare_exchange(held, released, AcqRel, Acquire) {
            Ok(_) => {
                if stored {
                    Register::Stored(number)
                } else {
                    Register::Occupied
                }
            }
            Err(_) => {
                // A poller came while we held the slot (`held | WAKING`) and left the wake to
                // us. SAFETY: pollers that see `REGISTERING` do not touch the cell and no other
                // waiter can take it, so it is still ours.
                let (taken, count) = self
                    .cell
                    .with_mut(|cell| unsafe { ((*cell).waker.take(), (*cell).count) });
                // Release: hands the empty cell to the next owner (`register`'s first CAS,
                // `wake`'s `fetch_or`).
                self.state.store(0, Release);
                if stored {
                    // Our own waker: the edge is visible (the failed CAS acquired it) to this
                    // waiter, which retries. Other futures of its task counted in the entry
                    // returned `Pending` and are not polled again unless woken.
                    if count > 1
                        && let Some(shared) = taken
                    {
                        shared.wake();
                    }
                    Register::Retry
                } else {
                    if let Some(other) = taken {
                        other.wake();
                    }
                    Register::Occupied
                }
            }
        }
    }

    /// Lets go of the slot, held as `held`, to the state `to`, for a holder whose cell needs
    /// no retry (a withdraw, or a `register` whose waker's `clone` panicked). As `register`'s
    /// releasing CAS: Release on success hands the cell on; a failure (Acquire) means a poller
    /// set `WAKING` meanwhile and left the wake to us: whatever the cell holds is taken and
    /// woken.
    #[cold]
    fn release_or_wake(&self, held: usize, to: usize) {
        if self
            .state
            .compare_exchange(held, to, AcqRel, Acquire)
            .is_err()
        {
            // SAFETY: as in `register`'s failure path, the cell is still ours.
            let taken = self.cell.with_mut(|cell| unsafe { (*cell).waker.take() });
            // Release: hands the empty cell to the next owner.
            self.state.store(0, Release);
            if let Some(other) = taken {
                other.wake();
            }
        }
    }

    /// Step 2: wakes the stored waker, if any. Called after the edge (or `closed`) was made
    /// visible with a `SeqCst` store or read-modify-write.
    #[inline]
    pub(crate) fn wake(&self) {
        // Acquire: sees `FULL` whenever the caller's read-modify-write read a waiter's re-check
        // (module documentation, "The guarantee").
        if self.state.load(Acquire) != 0 {
            self.wake_slow();
        }
    }

    #[inline(never)]
    fn wake_slow(&self) {
        if let Some(waker) = self.take_slow() {
            waker.wake();
        }
        // Else a registering waiter will see `WAKING` and retry, or another poller is waking.
    }

    /// Takes a waiter that gave up (its future was dropped, it timed out, or it waits with
    /// another waker now) out of the entry with number `number`, if that entry still holds
    /// `waker`; returns the waker, for the caller to drop, when it was the entry's last
    /// waiter. Holds the slot as a registering waiter does: `REGISTERING` from a state of
    /// exactly `FULL`. Another waiter holding it (`FULL | REGISTERING`: it stores its waker
    /// or, finding the slot taken, goes to the list, a few instructions) is waited for: a
    /// spin, then yields and naps of the thread until it lets go ([`WITHDRAW_WAITS`]); tried
    /// once, the withdraw left the waker behind in about 1 case in 20 under such contention
    /// (`tests/net_waiters.rs`, `a_dropped_read_future_takes_its_waker_back_while_*`). Any
    /// other state leaves the slot alone: empty, or a poller is at it (it takes the entry).
    /// A poller that comes while the slot is held leaves
    /// the wake to this holder, as in `register`: whatever the cell then holds is taken and
    /// woken.
    pub(crate) fn withdraw(&self, waker: WakerId, number: u64) -> Option<Waker> {
        // As in `register`: another withdraw on this thread would wait for us.
        let _no_preempt = crate::runtime::preempt::guard();
        let mut waits = 0;
        loop {
            // Acquire (both): as `register`'s first CAS.
            match self
                .state
                .compare_exchange(FULL, FULL | REGISTERING, Acquire, Acquire)
            {
                Ok(_) => break,
                Err(held) if held == FULL | REGISTERING && waits < WITHDRAW_WAITS => {
                    // Counts on through the naps: `u32::MAX` naps of 100 µs are never reached.
                    waits += 1;
                    wait_for_holder(waits);
                }
                Err(_) => return None,
            }
        }
        // SAFETY: our CAS set `REGISTERING` on a state without it or `WAKING`, as
        // `register`'s: the cell is ours until we release it.
        let mine = self
            .cell
            .with_mut(|cell| unsafe { (*cell).leave(waker, number) });
        let released = if mine.is_some() { 0 } else { FULL };
        self.release_or_wake(FULL | REGISTERING, released);
        mine
    }

    /// Takes the stored waker without waking it, as `wake` would take it (a released
    /// registration drops the waker of a waiter that gave up: `ScheduledIo::reset`).
    pub(crate) fn take(&self) -> Option<Waker> {
        if self.state.load(Acquire) == 0 {
            return None;
        }
        self.take_slow()
    }

    #[inline]
    fn take_slow(&self) -> Option<Waker> {
        // AcqRel: Acquire pairs with `register`'s releasing CAS (the stored waker is visible);
        // Release pairs with the Acquire of `register`'s CASes, so a waiter that sees `WAKING`
        // sees the edge this poller published before.
        let prev = self.state.fetch_or(WAKING, AcqRel);
        if prev & (REGISTERING | WAKING) != 0 {
            return None;
        }
        // SAFETY: our `fetch_or` set `WAKING` on a state without `REGISTERING` or `WAKING`:
        // the cell is ours until we clear `WAKING`.
        let waker = self.cell.with_mut(|cell| unsafe { (*cell).waker.take() });
        // Release: hands the emptied cell to the next owner (`register`'s first CAS).
        self.state.fetch_and(!(WAKING | FULL), Release);
        waker
    }
}
