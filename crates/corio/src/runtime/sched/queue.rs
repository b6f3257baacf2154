//! The per-P local run queue: a fixed ring that its owner pushes to and pops from without
//! contention, and from which idle workers steal half at a time.
//!
//! # The problem
//!
//! Every P (processor, DESIGN decision 7) needs a queue of runnable tasks that its own M pushes
//! and pops on every spawn, wake and switch — so those operations must cost a few uncontended
//! instructions — while any idle M may take work from it, so that one busy P does not leave other
//! cores idle. Stealing must move many tasks per attempt: an idle worker that takes one task comes
//! straight back for more, and every round trip is a contended cache line.
//!
//! # The mechanism
//!
//! Go's `runq` (`src/runtime/proc.go`: `runqput`, `runqputslow`, `runqget`, `runqgrab`,
//! `runqsteal`), in the form tokio adapted to owning task pointers
//! (`tokio/src/runtime/scheduler/multi_thread/queue.rs`). This file is written from the algorithm;
//! it follows tokio's claim-then-copy steal because `T` owns its task (see "Rejected
//! alternatives").
//!
//! A ring of [`LOCAL_QUEUE_CAPACITY`] slots. Positions are `u32` counters that only grow
//! (wrapping); position `p` lives in slot `p % LOCAL_QUEUE_CAPACITY`. Two atomics describe it:
//!
//! ```text
//!   head: AtomicU64 = steal << 32 | real           tail: AtomicU32 (owner writes, all read)
//!
//!   positions:   steal          real                          tail
//!                  |  claimed by  |  queued: the owner pops     |
//!    ... free ...  |  one thief,  |  from here, thieves claim   |  ... free ...
//!                  |  being copied|  from here                  |
//! ```
//!
//! - `real` is the next position to pop or steal. The owner's `pop` moves it by one, a thief's
//!   claim by the half it takes, the owner's overflow by half a ring.
//! - `steal` is the first position of a batch a thief has claimed but not yet copied out. It equals
//!   `real` when no steal is in flight. While they differ, the owner may not reuse the claimed
//!   slots, and no second thief may start.
//! - `tail` is one past the newest task. Only the owner writes it.
//!
//! ## Invariants (arithmetic wrapping modulo 2^32)
//!
//! 1. `steal <= real <= tail` and `tail - steal <= LOCAL_QUEUE_CAPACITY`.
//! 2. The slots of positions `real..tail` hold initialised tasks owned by the queue.
//! 3. The slots of positions `steal..real` hold initialised tasks owned by the one thief whose
//!    claim moved `real` past them. Only that thief reads them; then it sets `steal = real`.
//! 4. Every other slot is free (never written, or moved out). Only the owner writes slots, and
//!    only free ones.
//! 5. At most one steal is in flight: a thief that sees `steal != real` gives up.
//!
//! ## Protocol
//!
//! 1. **push** (owner, [`Local::push_back`]): if `tail - steal < LOCAL_QUEUE_CAPACITY`, write the
//!    slot at `tail`, then publish it by storing `tail + 1`.
//! 2. **overflow** (owner, the ring is full; Go's `runqputslow`, [`Local::push_back`]'s cold path):
//!    if a steal is in flight, its batch will free slots soon but the thief may be descheduled
//!    holding them, so push just the new task to the [`Overflow`] (tokio does the same). Otherwise
//!    CAS `head` from `(real, real)` to `(real + HALF, real + HALF)`, which claims the older half
//!    exactly as a thief would and releases it at once (only this thread reads those slots, before
//!    it returns), and hand those tasks plus the new one to [`Overflow::push_batch`] in one batch.
//!    If the CAS fails a thief took some tasks: the ring is no longer full, start over.
//! 3. **pop** (owner, [`Local::pop`]): if `real != tail`, CAS `real` to `real + 1` (leaving an
//!    in-flight thief's `steal` alone) and move the task out. FIFO: the oldest task runs first.
//! 4. **steal** (any thread, into its own queue, [`Steal::steal_into`]):
//!    1. Give up unless the destination has room for half a ring (it is normally empty).
//!    2. *Claim*: with `steal == real` and `n = ceil((tail - real) / 2)` (Go's `runqgrab`: the
//!       thief takes half, rounded up, so a single task can be stolen), CAS `head` from
//!       `(real, real)` to `(real, real + n)`.
//!    3. *Copy* the `n` tasks into the destination's free slots (not yet visible there).
//!    4. *Release*: CAS `head` from `(steal, real')` to `(real', real')`, retrying while the
//!       owner's pops move `real'`.
//!    5. Keep the newest copied task to return (the caller runs it at once) and publish the others
//!       by storing the destination's `tail`.
//!
//! ## Memory orderings
//!
//! Each use site names its partner; the pairs are (step numbers from "Protocol"; "batch" is
//! [`Local::push_back_batch`]; every `head` store is a CAS in pop, overflow, 4.2 or 4.4):
//!
//! | Release side                 | Acquire side                | what it carries               |
//! |------------------------------|-----------------------------|-------------------------------|
//! | `tail` store (1, 4.5, batch) | `tail` load (4.2)           | the tasks below that tail     |
//! | `head` CAS of 4.4            | `head` load (1, 4.1, batch) | thief's reads before rewrites |
//! | every `head` store           | `head` in 4.2, `Steal::len` | `tail >= real` (invariant 1)  |
//!
//! The owner reads its own `tail` with `Relaxed`: it is the only writer (coherence returns its own
//! latest store), and a `Local` that moves to another thread moves through a synchronising
//! hand-off. Nothing here needs `SeqCst`: the queue makes no promise that a push is seen by a
//! thief that looked "at the same time"; the scheduler's sleep/wake protocol owns that (see below).
//!
//! ## ABA
//!
//! A thief loads `head`, is descheduled, and CASes later. If meanwhile the owner moved `real` by
//! exactly a multiple of 2^32, the CAS would succeed on stale indices. That takes over four
//! billion pops during one preemption of one thief; tokio widened its indices from 8 to 16 to 32
//! bits for this reason (tokio#5041) and Go's are 32 bits too. Every other head value is unique:
//! each store moves `real` or `steal` forward.
//!
//! ## Rejected alternatives
//!
//! - *Chase–Lev deque* (crossbeam-deque): it grows, which needs deferred reclamation (epochs), its
//!   owner pops LIFO (a next-task slot in the scheduler gives the useful part of LIFO, with a
//!   fairness cap), and a thief takes one task per CAS where Go and tokio take half.
//! - *Go's copy-then-CAS* `runqgrab`: Go copies the slots first and discards the copies if its CAS
//!   fails. For a `*g` that is harmless; for an owning `T` a copy of a task that the owner may be
//!   popping at the same moment is two owners. So the thief claims first and copies second, and
//!   the `steal` index stops the owner from overwriting the claimed slots during the copy.
//! - *A lock per queue*: the owner's push and pop are the hot path of every switch; a lock there
//!   costs two atomic read-modify-writes per task even when nobody steals.
//!
//! # What the scheduler must know
//!
//! - **Every task in this ring can move.** The overflow sends tasks to the global queue and thieves
//!   take them to other workers. A *started* stackful coroutine must never move (DESIGN decision
//!   2), so it must not be queued here, or must be routed back to its home P wherever it is
//!   popped.
//! - **Lengths are snapshots.** [`Local::len`] is exact on the owner between operations except that
//!   thieves may lower it at any time. [`Steal::len`] may be stale in either direction (at most
//!   [`LOCAL_QUEUE_CAPACITY`]); use it as a hint for choosing victims. Neither counts tasks a thief
//!   has claimed but not yet published in its own queue.
//! - **[`Local::remaining_slots`] under-reports** while a steal is in flight (the claimed slots
//!   are not free until the thief releases them). It never over-reports, so a batch that fits it
//!   fits [`Local::push_back_batch`].
//! - **No wake-ups here.** A push does not wake an idle worker; a steal can miss a task pushed
//!   concurrently. The scheduler's park protocol (announce "idle", fence, re-check every queue
//!   before sleeping; the waker fences after publishing work) is what guarantees no lost work.
//! - **A thief descheduled mid-steal** pins its claimed slots: the victim's pushes past them go to
//!   the overflow one task at a time until the thief resumes.
//! - **Dropping a [`Local`] drops the tasks still in it**, on the dropping thread. Shut a P down by
//!   draining its queue first if tasks must be dropped somewhere else.

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use crate::loom::sync::atomic::{AtomicU32, AtomicU64};

use std::cell::Cell;
use std::fmt;
use std::iter;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

/// Slots in each P's ring.
///
/// 256 is Go's `p.runq` size and tokio's `LOCAL_QUEUE_CAPACITY`, and DESIGN decision 7: enough
/// that a burst of spawns rarely reaches the global queue, small enough (2 KiB of pointers) that a
/// P's ring stays in cache. Under loom it is 4, so that the model checker reaches "full",
/// "overflow" and "wrap around" within a handful of operations.
#[cfg(not(loom))]
pub(crate) const LOCAL_QUEUE_CAPACITY: usize = 256;
/// Slots in each P's ring (4 under loom; see the non-loom definition).
#[cfg(loom)]
pub(crate) const LOCAL_QUEUE_CAPACITY: usize = 4;

/// Position → slot index.
const MASK: u32 = LOCAL_QUEUE_CAPACITY as u32 - 1;

/// How much overflow moves out, and the most a thief takes: half a ring (Go's
/// `runqputslow` moves `len(pp.runq)/2`).
const HALF: u32 = LOCAL_QUEUE_CAPACITY as u32 / 2;

const _: () = assert!(
    LOCAL_QUEUE_CAPACITY.is_power_of_two() && LOCAL_QUEUE_CAPACITY >= 2,
    "positions map to slots with a mask, and overflow moves half the ring"
);

/// Where a full [`Local`] sends tasks: the global queue (`Inject`) in the runtime.
pub(crate) trait Overflow<T> {
    /// Takes one task.
    fn push(&self, task: T);

    /// Takes a batch of tasks, oldest first, preferably under one lock acquisition.
    ///
    /// The tasks still in `iter` when it is dropped are dropped with it (the overflow batch is
    /// half a ring plus one: 129 tasks, or 3 under loom).
    fn push_batch<I: Iterator<Item = T>>(&self, iter: I);
}

/// The owner's handle to a P's run queue: push, pop, and be the destination of a steal.
///
/// One per queue, never cloned, never shared (`!Sync`); it may move to another thread.
/// Dropping it drops the tasks still queued.
pub(crate) struct Local<T> {
    /// Shared with every [`Steal`] of this queue.
    inner: Arc<Inner<T>>,
    /// Makes `Local` `!Sync` while keeping it `Send`: the owner's methods read `tail` as its only
    /// writer (a `Relaxed` load that is exact only on the owning thread), and the single-owner
    /// protocol is what `&mut self` stands for.
    _not_sync: PhantomData<Cell<()>>,
}

/// A handle for other workers to steal from a P's run queue. `Clone`, `Send`, `Sync`.
pub(crate) struct Steal<T>(Arc<Inner<T>>);

/// The ring and its indices. See the module documentation for who touches what.
struct Inner<T> {
    /// `steal << 32 | real` (see "The mechanism"). Written by the owner (pop, overflow) and by
    /// thieves (claim, release), always by CAS.
    head: AtomicU64,
    /// One past the newest task. Written only by the owner; read by everyone.
    tail: AtomicU32,
    /// The slots. Which thread may touch which slot is invariants 2–4.
    buffer: Box<[UnsafeCell<MaybeUninit<T>>; LOCAL_QUEUE_CAPACITY]>,
}

// SAFETY: `Inner` is shared between the owner and thieves on different threads. The only
// non-`Sync` part is the slots' `UnsafeCell`s, and each slot is accessed by one thread at a time:
// the head/tail protocol (invariants 2–4) hands a slot from the writer (owner) to exactly one
// reader (owner or one thief), with the Acquire/Release pairs of "Memory orderings". A task is
// moved to the reading thread, never shared by reference, so `T: Send` is all it needs.
unsafe impl<T: Send> Sync for Inner<T> {}

/// Creates a run queue and returns its owner and stealer handles.
pub(crate) fn local<T>() -> (Local<T>, Steal<T>) {
    local_at(0)
}

/// [`local`], with all indices starting at `start` (tests use it to cross the `u32` wrap).
fn local_at<T>(start: u32) -> (Local<T>, Steal<T>) {
    let buffer: Box<[UnsafeCell<MaybeUninit<T>>]> = (0..LOCAL_QUEUE_CAPACITY)
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect();
    let Ok(buffer) = buffer.try_into() else {
        unreachable!("the iterator yields exactly LOCAL_QUEUE_CAPACITY slots")
    };
    let inner = Arc::new(Inner {
        head: AtomicU64::new(pack(start, start)),
        tail: AtomicU32::new(start),
        buffer,
    });
    let local = Local {
        inner: inner.clone(),
        _not_sync: PhantomData,
    };
    (local, Steal(inner))
}

impl<T> Local<T> {
    /// Pushes `task` at the back; if the ring is full, moves half of it plus `task` to
    /// `overflow` in one batch (protocol steps 1–2).
    #[inline]
    pub(crate) fn push_back(&mut self, task: T, overflow: &impl Overflow<T>) {
        let tail = self.tail();
        // Acquire: pairs with the Release CAS of a thief's release (step 4.4): its reads of the
        // slots it claimed happen before we write any of them again.
        let (steal, _) = unpack(self.inner.head.load(Acquire));
        if tail.wrapping_sub(steal) < LOCAL_QUEUE_CAPACITY as u32 {
            // SAFETY: `tail` is the current tail, and `tail - steal < capacity` for a `steal`
            // loaded with Acquire on this thread, which is `write_at_tail`'s contract.
            unsafe { self.write_at_tail(tail, task) };
        } else {
            self.push_back_slow(task, overflow);
        }
    }

    /// The full-ring path of [`push_back`](Self::push_back): protocol step 2.
    #[cold]
    #[inline(never)]
    fn push_back_slow(&mut self, mut task: T, overflow: &impl Overflow<T>) {
        loop {
            let tail = self.tail();
            // Acquire: as in `push_back` (pairs with the thieves' release CAS). It also makes
            // this the value the overflow CAS below compares against, see `push_overflow`.
            let (steal, real) = unpack(self.inner.head.load(Acquire));
            if tail.wrapping_sub(steal) < LOCAL_QUEUE_CAPACITY as u32 {
                // A thief finished since we looked.
                // SAFETY: as in `push_back`, with this `tail` and Acquire-loaded `steal`.
                unsafe { self.write_at_tail(tail, task) };
                return;
            }
            if steal != real {
                // A thief is copying out of this ring; it will free slots, but it may be
                // descheduled holding them and this thread must not wait for it.
                overflow.push(task);
                return;
            }
            match self.push_overflow(task, real, tail, overflow) {
                Ok(()) => return,
                // A thief claimed tasks since we looked: the ring is no longer full.
                Err(returned) => task = returned,
            }
        }
    }

    /// Moves the older half of the full ring plus `task` to `overflow` (Go's `runqputslow`).
    ///
    /// `real` and `tail` are the values just loaded, with `steal == real` and the ring full.
    /// Gives `task` back if a thief changed `head` in between.
    fn push_overflow(
        &mut self,
        task: T,
        real: u32,
        tail: u32,
        overflow: &impl Overflow<T>,
    ) -> Result<(), T> {
        debug_assert_eq!(tail.wrapping_sub(real), LOCAL_QUEUE_CAPACITY as u32);
        let end = real.wrapping_add(HALF);
        // Release: pairs with the Acquire `head` load of a claim (step 4.2): a thief that sees
        // the new `real` sees a tail at least as far (invariant 1).
        // No Acquire needed on success: the slots we read next were written by this thread, and
        // the last thief to read any of them was synchronised with by the Acquire load in
        // `push_back_slow` that saw `steal == real`; success means `head` still holds that very
        // value (see "ABA"). Relaxed on failure: the caller starts over with a fresh load.
        if self
            .inner
            .head
            .compare_exchange(pack(real, real), pack(end, end), Release, Relaxed)
            .is_err()
        {
            return Err(task);
        }
        // Positions `real..end` are now behind both `steal` and `real`: no thief will touch them
        // and this thread moves them out before returning, so invariant 4 holds again on return.
        let batch = Drain {
            buffer: &self.inner.buffer,
            next: real,
            end,
        };
        overflow.push_batch(batch.chain(iter::once(task)));
        Ok(())
    }

    /// Writes `task` at position `tail` and publishes it (protocol step 1).
    ///
    /// # Safety
    ///
    /// `tail` is this queue's current tail and `tail - steal < LOCAL_QUEUE_CAPACITY` for a
    /// `steal` that this thread loaded from `head` with Acquire, so the slot is free
    /// (invariant 4) and no thief reads it.
    #[inline]
    unsafe fn write_at_tail(&mut self, tail: u32, task: T) {
        self.inner.buffer[slot(tail)].with_mut(|slot| {
            // SAFETY: by the contract the slot is free: outside `steal..tail`, so neither queued
            // nor claimed, and only this thread (the owner) writes slots. Overwriting a free
            // `MaybeUninit` drops nothing.
            unsafe { slot.write(MaybeUninit::new(task)) }
        });
        // Release: pairs with the Acquire `tail` load of a claim (step 4.2): a thief that sees
        // this tail sees the task written above.
        self.inner.tail.store(tail.wrapping_add(1), Release);
    }

    /// Pushes a batch at the back, oldest first (a batch taken from the global queue).
    ///
    /// The caller guarantees room: at most [`remaining_slots`](Self::remaining_slots) tasks.
    ///
    /// # Panics
    ///
    /// If `tasks` yields more than `remaining_slots()` tasks. The tasks pushed before that stay
    /// queued; the rest are dropped.
    #[track_caller]
    pub(crate) fn push_back_batch(&mut self, tasks: impl IntoIterator<Item = T>) {
        let start = self.tail();
        // Acquire: as in `push_back` (pairs with the thieves' release CAS): the slots counted as
        // room here are no longer being read.
        let (steal, _) = unpack(self.inner.head.load(Acquire));
        let room = LOCAL_QUEUE_CAPACITY as u32 - start.wrapping_sub(steal);
        // Publishes whatever was written, also if `tasks` or the room check panics, so that no
        // written task is leaked.
        let mut publish = PublishTail {
            tail: &self.inner.tail,
            value: start,
        };
        for task in tasks {
            if publish.value.wrapping_sub(start) == room {
                batch_too_large(room);
            }
            self.inner.buffer[slot(publish.value)].with_mut(|slot| {
                // SAFETY: the position is below `start + room`, i.e. less than a ring past the
                // Acquire-loaded `steal`, and at or past the tail: a free slot (invariant 4),
                // written only by this thread, the owner.
                unsafe { slot.write(MaybeUninit::new(task)) }
            });
            publish.value = publish.value.wrapping_add(1);
        }
    }

    /// Pops the oldest task (protocol step 3).
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        // Relaxed: the CAS below validates the value, and nothing is read through it that needs
        // ordering (every slot the owner pops was written by the owner).
        let mut head = self.inner.head.load(Relaxed);
        let real = loop {
            let (steal, real) = unpack(head);
            if real == self.tail() {
                return None;
            }
            let next_real = real.wrapping_add(1);
            // With no steal in flight keep `steal == real`; with one, leave the thief's `steal`
            // for its release (step 4.4).
            let next = if steal == real {
                pack(next_real, next_real)
            } else {
                pack(steal, next_real)
            };
            // Release: pairs with the Acquire `head` load of a claim (step 4.2): a thief that sees
            // the new `real` sees a tail at least as far (invariant 1). Relaxed on failure: the
            // loop retries with the value found.
            match self
                .inner
                .head
                .compare_exchange(head, next, Release, Relaxed)
            {
                Ok(_) => break real,
                Err(actual) => head = actual,
            }
        };
        let task = self.inner.buffer[slot(real)].with(|slot| {
            // SAFETY: the CAS moved `real` past this position while it was in `real..tail`
            // (invariant 2), so the slot holds an initialised task that is now ours alone: thieves
            // only claim positions at or after `real`, and only this thread writes slots.
            unsafe { slot.read().assume_init() }
        });
        Some(task)
    }

    /// Number of queued tasks. Exact on the owner, except that thieves may take some at any
    /// moment.
    pub(crate) fn len(&self) -> usize {
        // Relaxed: a snapshot. Every `real` ever stored is at most the owner's latest tail
        // (thieves claim only below a tail they read), so the difference cannot underflow.
        let (_, real) = unpack(self.inner.head.load(Relaxed));
        self.tail().wrapping_sub(real) as usize
    }

    /// Whether no task is queued (see [`len`](Self::len)).
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many tasks a [`push_back_batch`](Self::push_back_batch) can take now. Under-reports
    /// while a thief is copying out of this queue, never over-reports.
    pub(crate) fn remaining_slots(&self) -> usize {
        // Relaxed: an estimate for the caller's arithmetic; `push_back_batch` loads `steal` again
        // with Acquire before it writes. `steal` only grows, so an older value under-reports.
        let (steal, _) = unpack(self.inner.head.load(Relaxed));
        LOCAL_QUEUE_CAPACITY - self.tail().wrapping_sub(steal) as usize
    }

    /// The tail, read by its only writer.
    #[inline]
    fn tail(&self) -> u32 {
        // Relaxed: this thread is the only writer of `tail` (a `Local` that changed threads did so
        // through a synchronising hand-off), so coherence returns its own latest store.
        self.inner.tail.load(Relaxed)
    }
}

impl<T> Drop for Local<T> {
    /// Drops every task still queued, on this thread, so none leaks. (tokio asserts the queue is
    /// empty instead; corio's shutdown may drop a P with runnable tasks, and their `JoinHandle`s
    /// must then see a cancellation rather than wait forever.)
    fn drop(&mut self) {
        while let Some(task) = self.pop() {
            drop(task);
        }
    }
}

impl<T> Steal<T> {
    /// Steals half of this queue's tasks (rounded up) into `dst` and returns one of them for the
    /// caller to run now (protocol step 4).
    ///
    /// `None` if this queue is empty, another thief is stealing from it, `dst` is more than half
    /// full, or `dst` is this very queue.
    pub(crate) fn steal_into(&self, dst: &mut Local<T>) -> Option<T> {
        if Arc::ptr_eq(&self.0, &dst.inner) {
            return None;
        }
        let dst_tail = dst.tail();
        // Acquire: pairs with the Release CAS of the release (step 4.4) of whoever last stole
        // from `dst`: their reads of `dst`'s slots happen before our writes to them.
        let (dst_steal, _) = unpack(dst.inner.head.load(Acquire));
        if dst_tail.wrapping_sub(dst_steal) > HALF {
            // Step 4.1. Normally `dst` is empty: its owner steals when it has nothing to run.
            return None;
        }
        let n = self.0.grab_into(&dst.inner, dst_tail);
        if n == 0 {
            return None;
        }
        let newest = dst_tail.wrapping_add(n - 1);
        let task = dst.inner.buffer[slot(newest)].with(|slot| {
            // SAFETY: `grab_into` wrote this position of `dst` and it is not published (`dst`'s
            // tail is still `dst_tail <= newest`), so no thief of `dst` can claim it; only `dst`'s
            // owner — this thread, holding `&mut Local` — touches it.
            unsafe { slot.read().assume_init() }
        });
        if n > 1 {
            // Release: pairs with the Acquire `tail` load of a claim on `dst` (step 4.2): the
            // tasks copied below `newest` are visible to `dst`'s thieves.
            dst.inner.tail.store(newest, Release);
        }
        Some(task)
    }

    /// Number of queued tasks: a snapshot that may be stale in either direction (at most
    /// [`LOCAL_QUEUE_CAPACITY`]). A hint for choosing a victim.
    pub(crate) fn len(&self) -> usize {
        // Acquire: pairs with the Release of every `head` store (pop, overflow, claim, release),
        // so the tail read next is at least this `real` (invariant 1): no underflow.
        let (_, real) = unpack(self.0.head.load(Acquire));
        // Relaxed: only a count; no slot is read through it. A newer tail only over-reports.
        let tail = self.0.tail.load(Relaxed);
        (tail.wrapping_sub(real) as usize).min(LOCAL_QUEUE_CAPACITY)
    }

    /// Whether the queue looks empty (see [`len`](Self::len)).
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Inner<T> {
    /// Steps 4.2–4.4: claims half of this queue, copies it into `dst` at positions from
    /// `dst_tail` on (unpublished), releases the claim, and returns how many were copied.
    ///
    /// The caller owns `dst` (holds its `&mut Local`), has checked that `dst` has room for
    /// `HALF` tasks at `dst_tail`, and `dst` is not `self`.
    fn grab_into(&self, dst: &Inner<T>, dst_tail: u32) -> u32 {
        // Acquire: pairs with the Release of every `head` store (pop, overflow, another thief's
        // claim or release): whoever moved `real` here had seen a tail at least this far, so the
        // tail loaded below is too (invariant 1) and `tail - real` cannot underflow.
        let mut head = self.head.load(Acquire);
        let (first, n) = loop {
            let (steal, real) = unpack(head);
            if steal != real {
                // Invariant 5: another thief is in flight.
                return 0;
            }
            // Acquire: pairs with the Release `tail` stores of the owner (push, batch push, steal
            // step 5): the tasks below this tail are initialised and visible.
            let tail = self.tail.load(Acquire);
            let available = tail.wrapping_sub(real);
            let n = available - available / 2;
            if n == 0 {
                return 0;
            }
            // Success, Release: pairs with the Acquire `head` load of `Steal::len`, so a reader of
            // the claimed `real` sees a tail at least as far, as for every other head store
            // (invariant 1). Success, Acquire: the same partners as the load above; redundant
            // with it when nothing changed (see "ABA"), kept so each attempt stands alone.
            // Failure, Acquire: the value found seeds the next attempt, so it needs the load's
            // guarantee.
            match self.head.compare_exchange(
                head,
                pack(real, real.wrapping_add(n)),
                AcqRel,
                Acquire,
            ) {
                Ok(_) => break (real, n),
                Err(actual) => head = actual,
            }
        };
        // The claim succeeded on a consistent snapshot, so `n` is half a queue of at most
        // `capacity` tasks. A larger `n` means an ABA wrap or a bug, and would overrun `dst`.
        assert!(n <= HALF, "steal claimed {n} tasks, more than half a ring");

        // Step 4.3.
        for i in 0..n {
            let task = self.buffer[slot(first.wrapping_add(i))].with(|slot| {
                // SAFETY: the claim made positions `first..first + n` this thread's alone
                // (invariant 3); each is read once, and the owner does not write them until our
                // release below.
                unsafe { slot.read() }
            });
            dst.buffer[slot(dst_tail.wrapping_add(i))].with_mut(|slot| {
                // SAFETY: the caller checked `dst` has room for `HALF >= n` tasks at `dst_tail`,
                // so these slots are free (invariant 4), and only `dst`'s owner — this thread —
                // writes them. The positions are past `dst`'s tail, so no thief of `dst` reads
                // them.
                unsafe { slot.write(task) }
            });
        }

        // Step 4.4: only the owner's pops can have changed `head` meanwhile (invariant 5, and
        // overflow needs `steal == real`), and they only move `real`.
        let mut head = pack(first, first.wrapping_add(n));
        loop {
            let (steal, real) = unpack(head);
            debug_assert_eq!(steal, first);
            // Release: pairs with the Acquire `head` loads of the owner (push, batch push) and of
            // thieves (claim, step 4.1 of a steal into this queue): our reads of the claimed
            // slots happen before the owner reuses them, and a later thief sees a tail >= `real`
            // (our RMW continues the release sequence of the pop whose `real` we carry). Relaxed
            // on failure: the loop retries with the value found.
            match self
                .head
                .compare_exchange(head, pack(real, real), Release, Relaxed)
            {
                Ok(_) => return n,
                Err(actual) => head = actual,
            }
        }
    }
}

impl<T> Clone for Steal<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> fmt::Debug for Local<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Local")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Steal<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Steal")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// Moves the tasks at positions `next..end` out of the ring, oldest first: the half-ring batch
/// that overflow hands to [`Overflow::push_batch`]. Dropping it early (an `Overflow` that stops
/// iterating or panics) drops the rest, so none leaks.
struct Drain<'a, T> {
    buffer: &'a [UnsafeCell<MaybeUninit<T>>; LOCAL_QUEUE_CAPACITY],
    next: u32,
    end: u32,
}

impl<T> Iterator for Drain<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.next == self.end {
            return None;
        }
        let task = self.buffer[slot(self.next)].with(|slot| {
            // SAFETY: `push_overflow`'s CAS put `next..end` behind `steal` and `real`, handing
            // those initialised tasks to the owner — this thread, which holds `&mut Local` for the
            // life of this iterator; each position is read once as `next` advances.
            unsafe { slot.read().assume_init() }
        });
        self.next = self.next.wrapping_add(1);
        Some(task)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end.wrapping_sub(self.next) as usize;
        (n, Some(n))
    }
}

impl<T> ExactSizeIterator for Drain<'_, T> {}

impl<T> Drop for Drain<'_, T> {
    fn drop(&mut self) {
        self.for_each(drop);
    }
}

/// Stores `value` into `tail` when dropped: `push_back_batch`'s publication, on unwind too.
struct PublishTail<'a> {
    tail: &'a AtomicU32,
    value: u32,
}

impl Drop for PublishTail<'_> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire `tail` load of a claim (step 4.2): a thief that sees
        // this tail sees every task written below it.
        self.tail.store(self.value, Release);
    }
}

/// The panic of [`Local::push_back_batch`] when the caller's room guarantee is broken.
#[cold]
#[inline(never)]
#[track_caller]
fn batch_too_large(room: u32) -> ! {
    panic!("Local::push_back_batch: the batch is larger than the {room} free slots")
}

/// Position → slot index.
#[inline]
fn slot(position: u32) -> usize {
    (position & MASK) as usize
}

/// Splits `head` into `(steal, real)`.
#[inline]
fn unpack(head: u64) -> (u32, u32) {
    ((head >> 32) as u32, head as u32)
}

/// Joins `steal` and `real` into a `head` value.
#[inline]
fn pack(steal: u32, real: u32) -> u64 {
    (u64::from(steal) << 32) | u64::from(real)
}

// Ownership is in the types (STYLE 7): thieves share `Steal`; the one `Local` may move to another
// thread but is never shared. The negative check uses the ambiguous-impl trick of the
// `static_assertions` crate: if `Local` were `Sync`, `Probe` would have two candidate impls and
// the inferred `_` would fail to resolve.
const _: () = {
    const fn send_sync<X: Send + Sync>() {}
    const fn send<X: Send>() {}
    send_sync::<Steal<Box<u8>>>();
    send::<Local<Box<u8>>>();

    trait Probe<A> {
        fn probe() {}
    }
    impl<X: ?Sized> Probe<()> for X {}
    impl<X: ?Sized + Sync> Probe<u8> for X {}
    let _ = <Local<Box<u8>> as Probe<_>>::probe;
};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::thread;

    const CAP: usize = LOCAL_QUEUE_CAPACITY;

    /// An overflow that records what it was given, and in how many calls.
    struct Recorder<T> {
        tasks: RefCell<Vec<T>>,
        batches: Cell<usize>,
    }

    impl<T> Default for Recorder<T> {
        fn default() -> Self {
            Self {
                tasks: RefCell::new(Vec::new()),
                batches: Cell::new(0),
            }
        }
    }

    impl<T> Overflow<T> for Recorder<T> {
        fn push(&self, task: T) {
            self.tasks.borrow_mut().push(task);
        }
        fn push_batch<I: Iterator<Item = T>>(&self, iter: I) {
            self.batches.set(self.batches.get() + 1);
            self.tasks.borrow_mut().extend(iter);
        }
    }

    /// A thread-safe overflow for the stress test.
    struct Shared<T>(Mutex<Vec<T>>);

    impl<T> Overflow<T> for Shared<T> {
        fn push(&self, task: T) {
            self.0.lock().unwrap().push(task);
        }
        fn push_batch<I: Iterator<Item = T>>(&self, iter: I) {
            self.0.lock().unwrap().extend(iter);
        }
    }

    fn drain<T>(local: &mut Local<T>) -> Vec<T> {
        iter::from_fn(|| local.pop()).collect()
    }

    /// A task that counts its drops.
    struct Counted<'a>(&'a AtomicUsize);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    #[test]
    fn pop_returns_tasks_in_push_order() {
        let (mut local, _steal) = local();
        let overflow = Recorder::default();
        for i in 0..10 {
            local.push_back(i, &overflow);
        }
        assert_eq!(local.len(), 10);
        assert_eq!(drain(&mut local), (0..10).collect::<Vec<_>>());
        assert!(local.is_empty());
        assert!(local.pop().is_none());
    }

    #[test]
    fn a_full_queue_takes_pushes_up_to_capacity_without_overflowing() {
        let (mut local, _steal) = local();
        let overflow = Recorder::default();
        for i in 0..CAP {
            local.push_back(i, &overflow);
        }
        assert_eq!(local.len(), CAP);
        assert_eq!(local.remaining_slots(), 0);
        assert!(overflow.tasks.borrow().is_empty());
    }

    #[test]
    fn overflow_moves_the_older_half_and_the_new_task_in_one_batch() {
        let (mut local, _steal) = local();
        let overflow = Recorder::default();
        for i in 0..=CAP {
            local.push_back(i, &overflow);
        }
        let mut expected: Vec<usize> = (0..CAP / 2).collect();
        expected.push(CAP);
        assert_eq!(*overflow.tasks.borrow(), expected);
        assert_eq!(overflow.batches.get(), 1);
        assert_eq!(drain(&mut local), (CAP / 2..CAP).collect::<Vec<_>>());
    }

    #[test]
    fn steal_takes_half_of_the_victims_queue_and_returns_the_newest_of_them() {
        let (mut victim, steal) = local();
        let (mut thief, _) = local();
        let overflow = Recorder::default();
        for i in 0..9 {
            victim.push_back(i, &overflow);
        }
        // Half of 9, rounded up: positions 0..5; 4 is returned, 0..4 are queued in the thief.
        assert_eq!(steal.steal_into(&mut thief), Some(4));
        assert_eq!(drain(&mut thief), vec![0, 1, 2, 3]);
        assert_eq!(drain(&mut victim), vec![5, 6, 7, 8]);
    }

    #[test]
    fn steal_takes_a_lone_task() {
        let (mut victim, steal) = local();
        let (mut thief, _) = local();
        victim.push_back(7, &Recorder::default());
        assert_eq!(steal.steal_into(&mut thief), Some(7));
        assert!(thief.is_empty());
        assert!(victim.is_empty());
    }

    #[test]
    fn steal_from_an_empty_queue_returns_none() {
        let (_victim, steal) = local::<u32>();
        let (mut thief, _) = local();
        assert_eq!(steal.steal_into(&mut thief), None);
        assert!(thief.is_empty());
    }

    #[test]
    fn steal_into_a_queue_more_than_half_full_returns_none() {
        let (mut victim, steal) = local();
        let (mut thief, _) = local();
        let overflow = Recorder::default();
        victim.push_back(0, &overflow);
        for i in 0..=CAP / 2 {
            thief.push_back(i, &overflow);
        }
        assert_eq!(steal.steal_into(&mut thief), None);
        assert_eq!(victim.len(), 1);
    }

    #[test]
    fn steal_from_ones_own_queue_returns_none() {
        let (mut local, steal) = local();
        local.push_back(1, &Recorder::default());
        assert_eq!(steal.steal_into(&mut local), None);
        assert_eq!(local.pop(), Some(1));
    }

    #[test]
    fn indices_wrap_around_u32() {
        let (mut victim, steal) = local_at(u32::MAX - 3);
        let (mut thief, _) = local_at(u32::MAX - 1);
        let overflow = Recorder::default();
        for i in 0..=CAP {
            victim.push_back(i, &overflow);
        }
        assert_eq!(overflow.tasks.borrow().len(), CAP / 2 + 1);
        assert_eq!(victim.len(), CAP / 2);
        assert_eq!(steal.steal_into(&mut thief), Some(CAP / 2 + CAP / 4 - 1));
        assert_eq!(thief.len(), CAP / 4 - 1);
        assert_eq!(victim.len(), CAP / 4);
        assert_eq!(
            drain(&mut victim),
            (CAP / 2 + CAP / 4..CAP).collect::<Vec<_>>()
        );
        assert_eq!(
            drain(&mut thief),
            (CAP / 2..CAP / 2 + CAP / 4 - 1).collect::<Vec<_>>()
        );
    }

    #[test]
    fn many_laps_keep_fifo_order() {
        let (mut local, _steal) = local();
        let overflow = Recorder::default();
        // Keep the ring nearly full while its positions go round ten times.
        for task in 0..CAP - 1 {
            local.push_back(task, &overflow);
        }
        for task in CAP - 1..10 * CAP {
            local.push_back(task, &overflow);
            assert_eq!(local.pop(), Some(task + 1 - CAP));
        }
        assert!(overflow.tasks.borrow().is_empty());
        assert_eq!(
            drain(&mut local),
            (9 * CAP + 1..10 * CAP).collect::<Vec<_>>()
        );
    }

    #[test]
    fn push_back_batch_appends_in_order() {
        let (mut local, _steal) = local();
        local.push_back(0, &Recorder::default());
        local.push_back_batch(1..CAP);
        assert_eq!(local.remaining_slots(), 0);
        assert_eq!(drain(&mut local), (0..CAP).collect::<Vec<_>>());
    }

    #[test]
    fn push_back_batch_larger_than_the_room_panics_and_keeps_what_fit() {
        let drops = AtomicUsize::new(0);
        let (mut local, _steal) = local();
        local.push_back_batch((0..CAP - 2).map(|_| Counted(&drops)));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            local.push_back_batch((0..3).map(|_| Counted(&drops)));
        }));
        assert!(result.is_err());
        // Two fit and stay queued; the third was dropped by the panic.
        assert_eq!(drops.load(SeqCst), 1);
        assert_eq!(local.len(), CAP);
        drop(local);
        assert_eq!(drops.load(SeqCst), CAP + 1);
    }

    #[test]
    fn dropping_local_drops_the_queued_tasks() {
        let drops = AtomicUsize::new(0);
        let (mut local, steal) = local();
        let overflow = Recorder::default();
        for _ in 0..5 {
            local.push_back(Counted(&drops), &overflow);
        }
        drop(local);
        assert_eq!(drops.load(SeqCst), 5);
        // A stealer that outlives the owner finds nothing.
        let (mut thief, _) = super::local();
        assert!(steal.steal_into(&mut thief).is_none());
    }

    #[test]
    fn an_overflow_that_drops_its_batch_early_drops_every_task() {
        struct TakesOne;
        impl<T> Overflow<T> for TakesOne {
            fn push(&self, _: T) {}
            fn push_batch<I: Iterator<Item = T>>(&self, mut iter: I) {
                iter.next();
            }
        }
        let drops = AtomicUsize::new(0);
        let (mut local, _steal) = local();
        for _ in 0..=CAP {
            local.push_back(Counted(&drops), &TakesOne);
        }
        assert_eq!(drops.load(SeqCst), CAP / 2 + 1);
        drop(local);
        assert_eq!(drops.load(SeqCst), CAP + 1);
    }

    #[test]
    fn len_and_remaining_slots_add_up_to_capacity() {
        let (mut local, steal) = local();
        let overflow = Recorder::default();
        for i in 0..100 {
            local.push_back(i, &overflow);
        }
        local.pop();
        assert_eq!(local.len(), 99);
        assert_eq!(steal.len(), 99);
        assert_eq!(local.remaining_slots(), CAP - 99);
        assert!(!steal.is_empty());
    }

    /// One producer spawning into its own queue, every worker popping its own queue and stealing
    /// from random victims, the overflow shared: every task must run exactly once.
    #[test]
    fn many_thieves_run_every_task_exactly_once() {
        // Miri (data-race and weak-memory checking) runs a smaller instance.
        // (500, not 2,000, so that the Miri step of `.ci/run` takes a few minutes.)
        const TASKS: usize = if cfg!(miri) { 500 } else { 200_000 };
        const WORKERS: usize = 4;

        let runs: Vec<AtomicUsize> = (0..TASKS).map(|_| AtomicUsize::new(0)).collect();
        let done = AtomicUsize::new(0);
        let producing = AtomicBool::new(true);
        let overflow = Shared(Mutex::new(Vec::new()));
        let (locals, steals): (Vec<_>, Vec<_>) = (0..WORKERS).map(|_| local::<usize>()).unzip();

        let run = |task: usize| {
            assert_eq!(runs[task].fetch_add(1, SeqCst), 0, "task {task} ran twice");
            done.fetch_add(1, SeqCst);
        };

        thread::scope(|s| {
            for (me, mut local) in locals.into_iter().enumerate() {
                let (steals, overflow, run, done, producing) =
                    (&steals, &overflow, &run, &done, &producing);
                s.spawn(move || {
                    let mut rng = 0x9e37_79b9_u32.wrapping_mul(me as u32 + 1);
                    let mut next_random = move || {
                        rng ^= rng << 13;
                        rng ^= rng >> 17;
                        rng ^= rng << 5;
                        rng
                    };
                    let mut spawned = 0;
                    loop {
                        if me == 0 && spawned < TASKS {
                            // Bursts of up to 300 spawns, so the ring also overflows.
                            let burst = (next_random() as usize % 300).min(TASKS - spawned);
                            for task in spawned..spawned + burst {
                                local.push_back(task, overflow);
                            }
                            spawned += burst;
                            if spawned == TASKS {
                                producing.store(false, SeqCst);
                            }
                        }
                        // Run a few local tasks, then look elsewhere, as a scheduler would.
                        for _ in 0..next_random() % 64 {
                            match local.pop() {
                                Some(task) => run(task),
                                None => break,
                            }
                        }
                        let victim = next_random() as usize % WORKERS;
                        if let Some(task) = steals[victim].steal_into(&mut local) {
                            run(task);
                        }
                        if local.is_empty() {
                            let task = overflow.0.lock().unwrap().pop();
                            if let Some(task) = task {
                                run(task);
                            }
                        }
                        if !producing.load(SeqCst) && done.load(SeqCst) == TASKS {
                            break;
                        }
                        if local.is_empty() {
                            thread::yield_now();
                        }
                    }
                    assert!(local.is_empty());
                });
            }
        });

        assert!(runs.iter().all(|r| r.load(SeqCst) == 1));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! Models of the protocol with a 4-slot ring. Tasks are `u32` ids; every model checks that
    //! each id comes out exactly once (a double read or a lost task fails it), and loom checks
    //! every slot access for races and every `Arc` for leaks.

    use super::*;
    use loom::thread;
    use std::cell::RefCell;

    /// An overflow used by the owner thread only.
    #[derive(Default)]
    struct Recorder(RefCell<Vec<u32>>);

    impl Overflow<u32> for Recorder {
        fn push(&self, task: u32) {
            self.0.borrow_mut().push(task);
        }
        fn push_batch<I: Iterator<Item = u32>>(&self, iter: I) {
            self.0.borrow_mut().extend(iter);
        }
    }

    fn drain(local: &mut Local<u32>) -> Vec<u32> {
        iter::from_fn(|| local.pop()).collect()
    }

    /// Steals once from `victim` into a fresh queue and returns everything that yields.
    fn steal_all(victim: &Steal<u32>) -> Vec<u32> {
        let (mut mine, _) = local();
        let mut seen: Vec<u32> = victim.steal_into(&mut mine).into_iter().collect();
        seen.extend(drain(&mut mine));
        seen
    }

    fn assert_each_once(mut seen: Vec<u32>, n: u32) {
        seen.sort_unstable();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn loom_push_and_pop_race_one_thief() {
        loom::model(|| {
            let (mut local, steal) = local();
            let thief = thread::spawn(move || steal_all(&steal));
            let overflow = Recorder::default();
            let mut seen = Vec::new();
            local.push_back(0, &overflow);
            local.push_back(1, &overflow);
            seen.extend(local.pop());
            local.push_back(2, &overflow);
            seen.extend(drain(&mut local));
            seen.extend(thread_result(thief));
            seen.extend(overflow.0.into_inner());
            assert_each_once(seen, 3);
        });
    }

    #[test]
    fn loom_overflow_while_a_thief_steals() {
        loom::model(|| {
            let (mut local, steal) = local();
            let overflow = Recorder::default();
            for i in 0..LOCAL_QUEUE_CAPACITY as u32 {
                local.push_back(i, &overflow);
            }
            let thief = thread::spawn(move || steal_all(&steal));
            // Full ring: these overflow (half a ring + the task), go to the overflow alone (a
            // steal in flight), or fit (a steal finished).
            local.push_back(4, &overflow);
            local.push_back(5, &overflow);
            let mut seen = drain(&mut local);
            seen.extend(thread_result(thief));
            seen.extend(overflow.0.into_inner());
            assert_each_once(seen, 6);
        });
    }

    #[test]
    fn loom_a_thief_that_sees_an_overflow_sees_the_pushes_before_it() {
        // The thief starts before the owner fills the ring, so only the orderings of push and
        // overflow (not the spawn) tell it how far the tail is.
        loom::model(|| {
            let (mut local, steal) = local();
            let thief = thread::spawn(move || steal_all(&steal));
            let overflow = Recorder::default();
            for i in 0..=LOCAL_QUEUE_CAPACITY as u32 {
                local.push_back(i, &overflow);
            }
            let mut seen = drain(&mut local);
            seen.extend(thread_result(thief));
            seen.extend(overflow.0.into_inner());
            assert_each_once(seen, LOCAL_QUEUE_CAPACITY as u32 + 1);
        });
    }

    #[test]
    fn loom_two_thieves_and_the_owner() {
        loom::model(|| {
            let (mut local, steal) = local();
            let overflow = Recorder::default();
            for i in 0..3 {
                local.push_back(i, &overflow);
            }
            let thieves: Vec<_> = (0..2)
                .map(|_| {
                    let steal = steal.clone();
                    thread::spawn(move || steal_all(&steal))
                })
                .collect();
            let mut seen: Vec<u32> = local.pop().into_iter().collect();
            for thief in thieves {
                seen.extend(thread_result(thief));
            }
            seen.extend(drain(&mut local));
            assert_each_once(seen, 3);
        });
    }

    #[test]
    fn loom_two_thieves_while_the_owner_refills() {
        // The second thief must back off while the first copies (invariant 5); if it claimed
        // too, the first one's release would hand the owner slots the second is still reading.
        loom::model(|| {
            let (mut local, steal) = local();
            let overflow = Recorder::default();
            for i in 0..LOCAL_QUEUE_CAPACITY as u32 {
                local.push_back(i, &overflow);
            }
            let thieves: Vec<_> = (0..2)
                .map(|_| {
                    let steal = steal.clone();
                    thread::spawn(move || steal_all(&steal))
                })
                .collect();
            local.push_back(4, &overflow);
            local.push_back(5, &overflow);
            let mut seen = Vec::new();
            for thief in thieves {
                seen.extend(thread_result(thief));
            }
            seen.extend(drain(&mut local));
            seen.extend(overflow.0.into_inner());
            assert_each_once(seen, 6);
        });
    }

    #[test]
    fn loom_steal_while_the_owner_pops_everything() {
        loom::model(|| {
            let (mut local, steal) = local();
            let overflow = Recorder::default();
            for i in 0..LOCAL_QUEUE_CAPACITY as u32 {
                local.push_back(i, &overflow);
            }
            let thief = thread::spawn(move || steal_all(&steal));
            let mut seen = drain(&mut local);
            seen.extend(thread_result(thief));
            assert_each_once(seen, LOCAL_QUEUE_CAPACITY as u32);
        });
    }

    #[test]
    fn loom_stolen_tasks_can_be_stolen_again() {
        // Thief A steals into its queue and pops it while thief B steals from A's queue: checks
        // that A publishes what it copied (steal step 5) before anyone can claim it.
        loom::model(|| {
            let (mut first, first_steal) = local();
            let overflow = Recorder::default();
            for i in 0..LOCAL_QUEUE_CAPACITY as u32 {
                first.push_back(i, &overflow);
            }
            let (mut middle, middle_steal) = local();
            let a = thread::spawn(move || {
                let mut seen: Vec<u32> = first_steal.steal_into(&mut middle).into_iter().collect();
                seen.extend(drain(&mut middle));
                seen
            });
            let b = thread::spawn(move || steal_all(&middle_steal));
            let mut seen = drain(&mut first);
            seen.extend(thread_result(a));
            seen.extend(thread_result(b));
            assert_each_once(seen, LOCAL_QUEUE_CAPACITY as u32);
        });
    }

    #[test]
    fn loom_a_queue_being_robbed_can_be_the_destination_of_a_steal() {
        // `mine` is robbed by one thread while its owner empties it and steals into it; the
        // steal reuses a slot the robber read, so it must wait for the robber's release.
        loom::model(|| {
            let (mut victim, victim_steal) = local();
            let (mut mine, mine_steal) = local();
            let overflow = Recorder::default();
            for i in 0..4 {
                victim.push_back(i, &overflow);
            }
            for i in 4..7 {
                mine.push_back(i, &overflow);
            }
            let robber = thread::spawn(move || steal_all(&mine_steal));
            let owner = thread::spawn(move || {
                let mut seen = drain(&mut mine);
                seen.extend(victim_steal.steal_into(&mut mine));
                seen.extend(drain(&mut mine));
                seen
            });
            let mut seen = thread_result(robber);
            seen.extend(thread_result(owner));
            seen.extend(drain(&mut victim));
            assert_each_once(seen, 7);
        });
    }

    fn thread_result(handle: thread::JoinHandle<Vec<u32>>) -> Vec<u32> {
        handle.join().expect("model thread panicked")
    }
}
