//! The netpoller's registrations: which socket an epoll event is for, and who waits on it.
//!
//! Each registered socket has a [`ScheduledIo`]: per direction (read, write) a readiness
//! *sequence number* and a list of waiting wakers. The [`Registry`] maps an epoll token to it.
//!
//! # Tokens, and the event for a socket dropped meanwhile
//!
//! An epoll event carries a `u64` chosen at `EPOLL_CTL_ADD`. corio's is the index of the
//! socket's `ScheduledIo` in the registry's pool (offset by [`TOKEN_BASE`], below which the
//! driver's eventfd and timerfd tokens live) and, in the high 32 bits, the registration's
//! *generation*. A poller turns a token into its `ScheduledIo` without a lock and without a
//! reference count (`Registry::get`: one load of the bucket's address). This is Go's
//! `pollDesc` scheme (type-stable memory, a sequence number in the descriptor); the previous
//! design here, a slab under a mutex and an `Arc` clone per event, cost ~80 instructions per
//! event to get the same safety. Two rules make it sound:
//!
//! 1. **The memory stays.** `ScheduledIo`s live in buckets that are allocated once and freed
//!    only when the `Registry` is dropped; a released registration's `ScheduledIo` goes back
//!    to the free list and is reused, never freed. A poller dispatches through `&Registry`
//!    (the driver's `Arc`), and every `Registration` holds an `Arc<Registry>`, so neither an
//!    event taken from the kernel just before its socket was dropped on another thread nor
//!    the socket's own handle can outlive the memory.
//! 2. **A stale event changes nothing.** The generation lives in the same atomic word as each
//!    direction's readiness state (`ScheduledIo::state`), and releasing a registration bumps it
//!    there. An edge is applied with a compare-and-swap that checks the token's generation
//!    against the word's, so an event for a dropped socket can never make the socket that
//!    reuses the `ScheduledIo` (or the fd number) look ready or closed. What a stale poller
//!    can still do is what it was doing when its check passed: wake the waiter slot (or list)
//!    it then finds. If the socket was dropped and its `ScheduledIo` reused in that window, the
//!    new socket's waiter is woken once for nothing: it polls, finds its state unchanged and
//!    waits again, as after any spurious wake-up (the protocol below allows them).
//!
//! The generation has 30 bits (the state word's low two bits are the ready and final bits):
//! a stale event would have to be held across 2^30 reuses of one `ScheduledIo` within one
//! `epoll_wait` batch to be taken for a live one.
//!
//! # Waiting without losing an edge (the protocol)
//!
//! Sockets are registered edge-triggered: the kernel reports a transition to ready once. Each
//! direction has a *state*: a sequence number of the edges seen and a *ready* bit (`READY`),
//! set by every edge and cleared when an operation learns the socket is drained. An operation
//! on a socket therefore:
//!
//! 1. reads the direction's state;
//! 2. if the ready bit is set, tries the system call; anything but `EAGAIN` is its result —
//!    and a stream read or write that moved fewer bytes than asked for drained the socket, so
//!    it clears the ready bit ([`ScheduledIo::clear`], only if the state is still the one read
//!    in step 1) and the *next* operation waits without a system call that would only say
//!    `EAGAIN` (tokio's "short read clears readiness");
//! 3. on `EAGAIN` clears the ready bit the same way; then, or when the bit was clear in step
//!    2, calls [`ScheduledIo::wait`] with the cleared state: it leaves the waker in the
//!    direction's single-waiter slot (`slot.rs`; or, if another task's waker holds the slot,
//!    in the direction's list, under the waiter lock), then re-checks: if the state moved, an
//!    edge arrived after step 1 — go back to 1; else the operation returns `Pending`.
//!
//! The poller that receives an edge bumps the sequence number and sets the ready bit in one
//! atomic update *before* it wakes the slot and the list. Either the waiter's re-check sees
//! the new state, or the poller finds the waker the waiter left and wakes it: an edge is never
//! lost, at worst a waiter is woken once for nothing. Both sides make the decision with
//! read-modify-writes of the state word (the waiter's re-check is a `fetch_add(0)`), which
//! are totally ordered: if the waiter's comes first, its Release carries the slot's `FULL`
//! bit (or the list's `waiting` flag) to the poller, which then looks at the slot (takes the
//! lock); if it comes second it reads the edge. So the poller skips the slot when it is empty
//! and the lock when no list waiter announced itself — almost every edge (`slot.rs`, "The
//! guarantee"; the loom models below check the argument). A clear is a compare-and-swap from the state read in step 1, so it never erases an
//! edge that came after that read: data that arrives after a short read (or during it) leaves
//! the bit set, because its edge moved the state. The ready bit starts set: a socket may be
//! ready before it is registered, and the first operation finds out with its system call.
//!
//! A clear never touches the *final* bit, which an edge with `EPOLLRDHUP`/`EPOLLHUP`/`EPOLLERR`
//! sets: the peer's FIN often arrives in the same edge as its last data (epoll merges events
//! not yet taken), so the short read of that data says nothing about the end of the stream,
//! which no later edge will announce (tokio's "closed states are final" rule; the test
//! `data_arriving_after_a_short_read_wakes_a_coroutine_reader` hung at EOF without it).
//!
//! An edge with `EPOLLPRI` — TCP urgent data, the only socket event that reports it — sets the
//! final bit too, without closing anything: a TCP read stops short at the urgent mark with
//! more data behind it, which came with the same edge, so after that short read the ready bit
//! is no longer evidence of anything. From then on every read of that socket tries its system
//! call first (one `EAGAIN` per wait), as before the short-read rule existed. Without it, a
//! peer's `send(MSG_OOB)` between two writes left the second one unread until the peer sent
//! more (`tests/net_review_io.rs`, `urgent_data_does_not_strand_the_data_behind_it`).
//!
//! A Unix stream read the kernel ends early — at a message that carried descriptors
//! (`SCM_RIGHTS`), or with `SO_PASSCRED` at a change of writer — is short with data behind it
//! whose edge has come and gone. Such a read is the one that reports `MSG_CTRUNC`, so a Unix
//! stream reads with `recvmsg` and, after a short read that reports it, reads on until the
//! socket says `EAGAIN` (`io/sys.rs`, `recv_unix_stream`): the short result it returns is then
//! true. Before, the next read waited for an edge that never came (`tests/net_review_netpoll.rs`).
//!
//! # Leaving the epoll set (a socket closed or handed back)
//!
//! epoll drops an entry by itself only when the socket's *last* descriptor closes. A socket
//! handed back to its owner (`into_std`, `IntoRawFd`: `net/fd.rs`) keeps its fd, and a socket
//! corio closes may live on in a duplicate (`into_raw_fd`'s, or one the user made, which corio
//! cannot see). So every registered socket leaves through [`Registration::deregister`] before
//! its fd closes: it removes the socket (`EPOLL_CTL_DEL`), then releases the registration.
//! Releasing is all the rest needs: `EPOLL_CTL_DEL` also drops an event the kernel has queued
//! and no poller has taken yet, and an event a poller took before it carries the old
//! generation, which the release retires (rule 2 of "Tokens"): it changes nothing, at worst
//! wakes the next user of the `ScheduledIo` once for nothing.
//!
//! The registry reaches the epoll instance through a weak reference to the driver's fd
//! (`Registry::epoll`): a socket that outlives its runtime must not keep the runtime's
//! descriptors open (`tests/net_fds.rs`). Once the driver is gone the reference no longer
//! upgrades, and no `EPOLL_CTL_DEL` is needed: the driver's fd was the instance's only
//! descriptor, and closing it freed the instance with every entry in it. While it does
//! upgrade, the strong reference keeps the fd open across the `epoll_ctl`, so its number can
//! never name another file by then. (A runtime shut down but not yet dropped — a `Handle`
//! outlives it — still has its epoll instance: the socket is removed from it as from a live
//! one.)
//!
//! Waker lists keep their capacity, so after a socket's first wait its waits do not allocate.
//!
//! # A waiter that gives up
//!
//! A wait can end without its edge: a future dropped (`select`, `timeout_async`), a
//! blocking-style timeout, an aborted coroutine. Its waker would stay in the slot or the list
//! until the next edge, holding its task — and on a socket that sees no traffic, each task
//! that gave up would add one to the list. So the waiting side keeps a [`Ticket`] — its
//! waker's identity and the entry (slot or list, by number) it is counted in — and, when it
//! goes without its wake-up, calls [`ScheduledIo::withdraw`], which takes it out of that
//! entry. An entry is one waker with a count of the waiters behind it: `wait` keeps one per
//! task waker, shared by every future of that task waiting on the direction, so the waker
//! goes with the last of them, and nothing is woken. A waiter that waits again with another
//! waker withdraws its old ticket first. (docs/io.md, "Waiters that share a waker".) The
//! poll-based traits (`AsyncRead::poll_read` and the like) have no future to keep a ticket
//! in: a caller that stops polling leaves its waker until the next edge, the socket's drop or
//! the runtime's (as tokio's `poll_read_ready` does).

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize};
use std::sync::{Arc, Mutex, Weak};
use std::task::Waker;

use super::slot::{Place, Register, Ticket, WaiterSlot, WakerId};
use crate::loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
// The waker lists' lock: loom's under the model checker (a std lock held by a thread loom
// switched away from would block the model for real), otherwise std's with a no-preempt
// guard (a preemptible coroutine preempted while it held it, withdrawing its waker outside
// `block_on`, would block the next coroutine of its thread that took it: `runtime/preempt.rs`,
// "The rule").
use crate::loom::sync::Mutex as ListLock;

/// The lowest token of a socket; the driver's own descriptors use tokens below it.
pub(crate) const TOKEN_BASE: u64 = 16;

/// The ready bit of a direction's state: set by every edge, cleared when an operation finds
/// the socket drained.
const READY: u64 = 1;
/// The *final* bit: the direction is closed (`EPOLLRDHUP`, `EPOLLHUP`, `EPOLLERR`), or for
/// reads, TCP urgent data came (`EPOLLPRI`: "the protocol"). Never cleared: a closed socket
/// stays ready (its reads return 0 or the error) and closing sends no second edge. Bits 2 to
/// 31 are the registration's generation ("Tokens"); the high 32 bits count edges (and wrap
/// without touching the generation).
const FINAL: u64 = 2;
/// Where the generation starts in a state word, and its bits there.
const GEN_SHIFT: u32 = 2;
const GEN_MASK: u64 = 0xffff_fffc;
/// What one edge adds to a direction's state.
const EDGE: u64 = 1 << 32;

/// Whether an operation with direction state `state` should try its system call (step 2).
#[inline]
pub(crate) fn may_be_ready(state: u64) -> bool {
    state & (READY | FINAL) != 0
}

/// A direction of readiness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

/// What [`ScheduledIo::wait`] decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// The waker is queued: return `Pending`.
    Queued,
    /// Readiness arrived since the sequence number was read: try again.
    Retry,
    /// The registration is gone (the runtime shut down, or the socket was closed).
    Closed,
}

/// The readiness state and waiters of one registered socket.
pub(crate) struct ScheduledIo {
    /// Per direction (index: `Direction as usize`): edges seen times [`EDGE`], the generation,
    /// and [`READY`] while the socket may be ready. Moved (Release) by the poller before it
    /// takes `waiters`; read (Acquire) by an operation before its system call.
    state: [AtomicU64; 2],
    /// Set when the registration ends while handles may still wait on it.
    closed: AtomicBool,
    /// Per direction: the first waiter's waker (`slot.rs`), taken without a lock.
    slots: [WaiterSlot; 2],
    /// Per direction: set (under the lock) by `wait` before it re-checks the state, cleared
    /// (under the lock) by `ready` when it empties the list. `ready` skips the lock while it
    /// is clear — almost every edge, now that a single waiter uses the slot.
    waiting: [AtomicBool; 2],
    /// Wakers waiting for each direction behind the slot's; guarded by the mutex.
    waiters: ListLock<[WaitList; 2]>,
    /// The registry's window in which this socket was last counted as active
    /// ([`Registry::end_window`]).
    seen: AtomicU32,
}

impl ScheduledIo {
    fn new() -> ScheduledIo {
        ScheduledIo {
            seen: AtomicU32::new(0),
            state: [AtomicU64::new(READY), AtomicU64::new(READY)],
            closed: AtomicBool::new(false),
            slots: [WaiterSlot::new(), WaiterSlot::new()],
            waiting: [AtomicBool::new(false), AtomicBool::new(false)],
            waiters: ListLock::new([WaitList::new(), WaitList::new()]),
        }
    }

    /// Step 1 of the protocol: the direction's state (test it with [`may_be_ready`]).
    #[inline]
    pub(crate) fn state(&self, dir: Direction) -> u64 {
        // Acquire: pairs with the Release update in `ready`, so the data the edge announced
        // is visible to the system call that follows.
        self.state[dir as usize].load(Ordering::Acquire)
    }

    /// Clears the ready bit of `dir` if its state is still `state` (no edge since it was
    /// read); returns the state to wait with.
    #[inline]
    pub(crate) fn clear(&self, dir: Direction, state: u64) -> u64 {
        let cleared = state & !READY;
        if state != cleared {
            // Relaxed: a failure means an edge moved the state, which `wait` then sees (under
            // the lock) and answers with `Retry`; a success publishes nothing.
            let _ = self.state[dir as usize].compare_exchange(
                state,
                cleared,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        cleared
    }

    /// Step 3 of the protocol: queue `waker` unless the state moved from `state` (the cleared
    /// state `clear` returned) — in the direction's slot, or in its list if another task's
    /// waker holds the slot.
    ///
    /// `ticket` is where this waiter's waker waits (`slot.rs`, [`Ticket`]): `None` for a
    /// first wait, else what an earlier `wait` of the same waiter (a future polled again)
    /// left in it. A waiter that waited before leaves that entry first, so that it is
    /// counted once, and a future re-polled with ever new wakers leaves one with the
    /// socket, not all of them. `wait` updates it; it stays valid until the waiter's
    /// wake-up, and [`withdraw`](Self::withdraw) takes it back before that.
    #[inline]
    pub(crate) fn wait(
        &self,
        dir: Direction,
        state: u64,
        waker: &Waker,
        ticket: &mut Option<Ticket>,
    ) -> Wait {
        // A waiter that waited before (a future polled again, a coroutine resumed without
        // its edge) leaves the entry it is counted in and waits afresh: with the same waker,
        // in the same entry if others keep it; with a new one (a future moved to another
        // task, or polled by a combinator that makes a waker per poll), the old one goes
        // unless others keep it. A first wait (almost every wait) has no ticket.
        if let Some(old) = ticket.take() {
            self.withdraw(dir, old);
        }
        match self.slots[dir as usize].register(waker) {
            Register::Stored(number) => {
                *ticket = Some(Ticket {
                    waker: WakerId::of(waker),
                    place: Place::Slot(number),
                });
                // Read-modify-writes that change nothing, AcqRel: each is ordered with the
                // poller's (or closer's) read-modify-write of the same word, so either it reads
                // the edge (the close), or its Release carries the slot's `FULL` to that
                // poller's later load of the slot (`slot.rs`, "The guarantee"). Plain loads
                // would need a SeqCst store-load pair, which loom cannot check.
                if self.closed.fetch_or(false, Ordering::AcqRel) {
                    // Nothing will wake the waker just stored, and it holds its task (and with
                    // it the task's runtime) until the socket goes: take it back. (The slot
                    // holds it or, if a close or a poller took it meanwhile, nothing of use: a
                    // waiter that registered since then also finds `closed`.)
                    drop(self.slots[dir as usize].take());
                    *ticket = None;
                    Wait::Closed
                } else if self.state[dir as usize].fetch_add(0, Ordering::AcqRel) != state {
                    Wait::Retry
                } else {
                    Wait::Queued
                }
            }
            // A poller is taking the slot's entry (this waiter is in none: no ticket).
            Register::Woken => Wait::Queued,
            Register::Retry => Wait::Retry,
            Register::Occupied => self.wait_in_list(dir, state, waker, ticket),
        }
    }

    /// `wait` for a second waiter on one direction: the waker list.
    #[inline(never)]
    fn wait_in_list(
        &self,
        dir: Direction,
        state: u64,
        waker: &Waker,
        ticket: &mut Option<Ticket>,
    ) -> Wait {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if self.closed.load(Ordering::Acquire) {
            return Wait::Closed;
        }
        // The flag, then a read-modify-write of the state that changes nothing (AcqRel): it
        // is ordered with `ready`'s update of the state; either it reads that edge and we
        // retry, or its Release carries the flag to `ready`, whose Acquire update is then
        // followed by a load of `waiting` that sees it, and `ready` takes the lock (after we
        // queue, since we hold it).
        self.waiting[dir as usize].store(true, Ordering::Relaxed);
        if self.state[dir as usize].fetch_add(0, Ordering::AcqRel) != state {
            return Wait::Retry;
        }
        let number = waiters[dir as usize].join(waker);
        *ticket = Some(Ticket {
            waker: WakerId::of(waker),
            place: Place::List(number),
        });
        Wait::Queued
    }

    /// Takes the waiter of `ticket` (one that gives up: its future dropped, a timeout, or a
    /// wait with another waker) out of the entry the ticket names, in `dir`'s slot or list;
    /// the waker goes when it was the entry's last waiter. Nothing is woken: the other
    /// waiters behind the entry (futures of the same task) keep it, and a ticket whose entry
    /// a poller took (and woke) no longer names anything. Cheap when nothing is there (a
    /// load of the slot's state or of the list's flag). Out of line: every caller is on a
    /// rare path (a waiter that gave up, or waits again), and it keeps `wait` small.
    #[cold]
    #[inline(never)]
    pub(crate) fn withdraw(&self, dir: Direction, ticket: Ticket) {
        match ticket.place {
            Place::Slot(number) => {
                drop(self.slots[dir as usize].withdraw(ticket.waker, number));
            }
            // Relaxed: a waiter that queued in the list set the flag itself (under the
            // lock), and only `ready` or a release, which empty the list, clear it.
            Place::List(number) => {
                if self.waiting[dir as usize].load(Ordering::Relaxed) {
                    self.withdraw_from_list(dir, ticket.waker, number);
                }
            }
        }
    }

    #[inline(never)]
    fn withdraw_from_list(&self, dir: Direction, waker: WakerId, number: u64) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        let list = &mut waiters[dir as usize];
        let gone = list.leave(waker, number);
        if list.entries.is_empty() {
            self.waiting[dir as usize].store(false, Ordering::Relaxed); // under the lock
        }
        drop(waiters);
        drop(gone); // a waker's drop may run any code: not under the lock
    }

    /// An edge for `dir` of the registration of generation `generation` (as in a state word):
    /// bump its sequence number, set its ready bit (and with `closed` its final bit), and wake
    /// its waiters. Does nothing if that registration has been released ("Tokens", rule 2).
    #[inline]
    pub(crate) fn ready(&self, dir: Direction, closed: bool, generation: u64) {
        let set = if closed { READY | FINAL } else { READY };
        // One update for both, so that no operation sees the new edge count without the ready
        // bit, and only if the generation is the event's. AcqRel: Release for the Acquire load
        // in `state` and for `wait`'s re-check; Acquire for the slot's `FULL` and the `waiting`
        // flag a waiter's re-check carried (see `wait`), which the loads below must see.
        // (A compare-exchange loop rather than `fetch_update`, deprecated on nightly.)
        let state = &self.state[dir as usize];
        let mut s = state.load(Ordering::Relaxed);
        loop {
            if s & GEN_MASK != generation {
                return; // a stale event: whoever uses this `ScheduledIo` now is another socket
            }
            let new = s.wrapping_add(EDGE) | set;
            match state.compare_exchange_weak(s, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        // The slot first (its load pairs with the update above: `slot.rs`), then the list.
        self.slots[dir as usize].wake();
        if self.waiting[dir as usize].load(Ordering::Relaxed) {
            self.wake_waiters(dir);
        }
        // Else nobody waits, and whoever comes next sees the new state.
    }

    /// The part of `ready` with waiters to wake (kept out of line: `ready` runs for both
    /// directions of every event, and most edges find nobody waiting in one of them).
    ///
    /// The wakers are woken without the lock: a wake may run any code — one that consumes the
    /// last reference to a task whose future holds a handle to this socket drops it, which
    /// closes the socket (`close` takes this lock; `tests/net_review_netpoll.rs`: the poller
    /// deadlocked, when they were woken under it). The list is taken out to be woken, and put
    /// back emptied, for its capacity, if no waiter queued meanwhile (a second lock round, on
    /// this rare path only; a waiter that queues meanwhile allocates a list of its own).
    #[inline(never)]
    fn wake_waiters(&self, dir: Direction) {
        let dir = dir as usize;
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        self.waiting[dir].store(false, Ordering::Relaxed); // under the lock
        let mut woken = std::mem::take(&mut waiters[dir].entries);
        drop(waiters);
        for entry in woken.drain(..) {
            entry.waker.wake();
        }
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        let list = &mut waiters[dir].entries;
        if list.is_empty() && woken.capacity() > list.capacity() {
            *list = woken;
        }
    }

    /// Whether a waker waits on `dir` (in the slot or the list).
    #[cfg(test)]
    pub(crate) fn holds_wakers(&self, dir: Direction) -> bool {
        self.slots[dir as usize]
            .take()
            .inspect(Waker::wake_by_ref)
            .is_some()
            || !self.waiters.lock().unwrap()[dir as usize]
                .entries
                .is_empty()
    }

    /// The generation of the current registration (as in a state word).
    #[inline]
    fn generation(&self) -> u64 {
        self.state[0].load(Ordering::Relaxed) & GEN_MASK
    }

    /// Makes a released `ScheduledIo` ready for its next registration: a new generation (from
    /// now on, events with the old one change nothing), the state of a new socket, and no
    /// wakers (those left by waiters that gave up hold their tasks: they are returned, for the
    /// caller to drop). Called under the registry's lock once the socket's last handle is
    /// gone; stale pollers may still be in `ready` or `wake_waiters` ("Tokens").
    ///
    /// The caller drops the wakers after it releases that lock: a waker's drop may run any
    /// code — a hand-written executor's waker that owns its task's future drops the future,
    /// and with it, maybe, another socket of this registry, whose release takes the lock
    /// (`tests/net_review_netpoll.rs`: a deadlock, when they were dropped here).
    #[must_use = "the wakers are to be dropped once the registry's lock is released"]
    fn reset(&self) -> Stale {
        let generation = (self.generation() + (1 << GEN_SHIFT)) & GEN_MASK;
        for state in &self.state {
            // A read-modify-write, so that a stale poller's compare-and-swap is ordered with
            // it: before it (and overwritten) or after it (and failing its generation check).
            // Relaxed: nothing is published with it (the registry's lock hands the
            // `ScheduledIo` to the next registration).
            state.swap(generation | READY, Ordering::Relaxed);
        }
        let slots = [self.slots[0].take(), self.slots[1].take()];
        // `try_lock`: the holder can only be a stale poller taking one direction's list or
        // giving its capacity back (`wake_waiters`; or a close), for a moment. The other
        // direction's wakers then stay: if the
        // `ScheduledIo` is reused, its first edge that way wakes them once for nothing (never
        // a lost wake-up); if it is not, `close_all` drops them at shutdown (each holds its
        // task and with it the runtime: left in place they would keep the driver's fds open).
        let lists = match self.waiters.try_lock() {
            Ok(mut waiters) => self.take_lists(&mut waiters),
            Err(_) => Vec::new(),
        };
        self.closed.store(false, Ordering::Relaxed);
        Stale { slots, lists }
    }

    /// The wakers a `reset` could not clear from this released `ScheduledIo` (see there).
    fn take_stale(&self) -> Vec<Waker> {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        self.take_lists(&mut waiters)
    }

    /// Empties both directions' lists, whose lock the caller holds (`waiters` is its guard).
    fn take_lists(&self, waiters: &mut [WaitList; 2]) -> Vec<Waker> {
        let mut wakers = Vec::new();
        for (list, waiting) in waiters.iter_mut().zip(&self.waiting) {
            waiting.store(false, Ordering::Relaxed); // under the lock
            list.take_into(&mut wakers);
        }
        wakers
    }

    /// Ends the registration: every waiter wakes and finds it closed.
    pub(crate) fn close(&self) {
        for waker in self.close_take() {
            waker.wake();
        }
    }

    /// `close` without the wakes: sets `closed` and returns the wakers to wake, so that the
    /// caller can wake them after releasing its own locks (a wake may drop a task and with it
    /// a socket, whose release takes the registry's lock).
    fn close_take(&self) -> Vec<Waker> {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        // A read-modify-write, AcqRel: Release for the list's waiters (their load under the
        // lock) and for a slot waiter's re-check of `closed`; Acquire for the `FULL` such a
        // re-check carried, which the slots' `take` below must see (`wait`).
        self.closed.swap(true, Ordering::AcqRel);
        let mut wakers: Vec<Waker> = self.slots.iter().filter_map(WaiterSlot::take).collect();
        for list in waiters.iter_mut() {
            list.take_into(&mut wakers);
        }
        wakers
    }
}

/// A direction's waker list: the entries of the waiters that found the slot taken by
/// another task's waker, each with its waker, the count of waiters behind it and its number
/// (as the slot's entry: `slot.rs`, [`Ticket`]).
struct WaitList {
    entries: Vec<ListEntry>,
    /// The number of the newest entry.
    number: u64,
}

struct ListEntry {
    waker: Waker,
    count: usize,
    number: u64,
}

impl WaitList {
    fn new() -> WaitList {
        WaitList {
            entries: Vec::new(),
            number: 0,
        }
    }

    /// Counts a waiter in the entry of a waker that `will_wake` `waker`, or in a new entry;
    /// returns the entry's number.
    fn join(&mut self, waker: &Waker) -> u64 {
        if let Some(entry) = self.entries.iter_mut().find(|e| e.waker.will_wake(waker)) {
            entry.count += 1;
            return entry.number;
        }
        self.number = self.number.wrapping_add(1);
        self.entries.push(ListEntry {
            waker: waker.clone(),
            count: 1,
            number: self.number,
        });
        self.number
    }

    /// Takes a waiter out of entry `number` if it still holds `waker`; returns the waker if
    /// that was the entry's last waiter.
    fn leave(&mut self, waker: WakerId, number: u64) -> Option<Waker> {
        let i = self
            .entries
            .iter()
            .position(|e| e.number == number && waker.is(&e.waker))?;
        let entry = &mut self.entries[i];
        entry.count -= 1;
        (entry.count == 0).then(|| self.entries.swap_remove(i).waker)
    }

    /// Moves every entry's waker to `wakers`.
    fn take_into(&mut self, wakers: &mut Vec<Waker>) {
        wakers.extend(self.entries.drain(..).map(|e| e.waker));
    }
}

/// The wakers [`ScheduledIo::reset`] took from a released registration, to be dropped once the
/// registry's lock is released (see there).
struct Stale {
    #[allow(dead_code)] // held only to be dropped
    slots: [Option<Waker>; 2],
    #[allow(dead_code)] // held only to be dropped
    lists: Vec<Waker>,
}

/// How many `ScheduledIo`s the first bucket of the pool holds; bucket `b` holds
/// `FIRST << b`, so 27 buckets cover every 32-bit index.
const FIRST: usize = 64;
const BUCKETS: usize = 27;

/// Bucket and offset of pool index `index`.
#[inline]
fn locate(index: u32) -> (usize, usize) {
    let j = index as usize + FIRST;
    let bucket = (usize::BITS - 1 - j.leading_zeros()) as usize - FIRST.trailing_zeros() as usize;
    (bucket, j - (FIRST << bucket))
}

/// The pool's bookkeeping, under the registry's lock.
#[derive(Default)]
struct Pool {
    /// Indices handed out so far (every bucket they fall in is allocated).
    len: u32,
    /// Released indices, reused first.
    free: Vec<u32>,
    /// Per index: registered now.
    live: Vec<bool>,
    /// Set by `close_all` (the runtime shut down): a registration made after it starts
    /// closed, since no poller will ever take its events.
    closed: bool,
}

/// Token → [`ScheduledIo`] for every socket registered with one driver: a pool of
/// `ScheduledIo`s that are reused, never freed while the registry lives ("Tokens").
pub(crate) struct Registry {
    /// Registrations and releases (one per socket, not per event) take this lock.
    pool: Mutex<Pool>,
    /// Bucket `b`: `FIRST << b` `ScheduledIo`s, allocated (under the lock) when the first of
    /// its indices is handed out, freed in `drop`; null before. Read without the lock by
    /// pollers.
    buckets: [AtomicPtr<ScheduledIo>; BUCKETS],
    /// Registered sockets (read without the lock by pollers deciding whether to poll).
    count: AtomicUsize,
    /// The driver's epoll instance, for [`Registration::deregister`]; weak, so that sockets
    /// outliving their runtime do not keep it open ("Leaving the epoll set"). Set once.
    epoll: Weak<OwnedFd>,
    /// The current window of [`end_window`](Self::end_window), from 1.
    window: AtomicU32,
    /// Sockets that had events in the current window, each counted once.
    active: AtomicU32,
}

impl Default for Registry {
    /// A registry attached to no epoll instance (the unit tests').
    fn default() -> Registry {
        Registry::new(Weak::new())
    }
}

impl Registry {
    /// A registry for the sockets of the driver whose epoll instance is `epoll`.
    pub(crate) fn new(epoll: Weak<OwnedFd>) -> Registry {
        Registry {
            pool: Mutex::default(),
            buckets: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            count: AtomicUsize::new(0),
            epoll,
            window: AtomicU32::new(1),
            active: AtomicU32::new(0),
        }
    }

    /// Registers a new socket: a `ScheduledIo` from the pool and its token (the caller then
    /// adds the fd to epoll with [`Registration::token`]).
    pub(crate) fn insert(self: &Arc<Self>) -> Registration {
        // A coroutine's own code takes the pool's lock (a socket's registration, its drop):
        // not preempted while it holds it (`runtime/preempt.rs`, "The rule"), or the next
        // coroutine of its thread to make or drop a socket blocks the worker for ever.
        let _no_preempt = crate::runtime::preempt::guard();
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let index = match pool.free.pop() {
            Some(index) => index,
            None => {
                let index = pool.len;
                assert!(
                    u64::from(index) + TOKEN_BASE <= u64::from(u32::MAX),
                    "too many sockets registered with one corio runtime"
                );
                let (bucket, offset) = locate(index);
                if offset == 0 {
                    let ios: Box<[ScheduledIo]> =
                        (0..FIRST << bucket).map(|_| ScheduledIo::new()).collect();
                    // Release: pairs with the Acquire in `get`, so a poller that finds the
                    // bucket sees its `ScheduledIo`s initialised.
                    self.buckets[bucket].store(Box::into_raw(ios).cast(), Ordering::Release);
                }
                pool.len += 1;
                pool.live.push(false);
                index
            }
        };
        pool.live[index as usize] = true;
        self.count.fetch_add(1, Ordering::Relaxed);
        let io = self
            .get(index)
            .expect("a handed-out index is in an allocated bucket");
        if pool.closed {
            // A socket first used after the runtime shut down (through a `Handle` or an
            // `EnterGuard` that outlived it): its waiters get the shut-down error, as those
            // of sockets registered before, instead of waiting for ever in an epoll set that
            // nobody polls. Nobody can wait on this fresh `ScheduledIo` yet, so there is
            // nobody to wake; `reset` (under the same lock) clears the flag for the next
            // registration. Release: for the Acquire loads of `closed` in `wait` (the
            // `Registration` reaches other threads through `Source`'s `OnceLock` anyway).
            io.closed.store(true, Ordering::Release);
        }
        let token = ((io.generation() >> GEN_SHIFT) << 32) | (u64::from(index) + TOKEN_BASE);
        Registration {
            registry: self.clone(),
            token,
            io: NonNull::from(io),
        }
    }

    /// The `ScheduledIo` at pool index `index`, if its bucket is allocated.
    #[inline]
    fn get(&self, index: u32) -> Option<&ScheduledIo> {
        let (bucket, offset) = locate(index);
        // Acquire: pairs with the Release in `insert` that published the bucket.
        let base = self.buckets.get(bucket)?.load(Ordering::Acquire);
        if base.is_null() {
            return None;
        }
        // SAFETY: a non-null bucket pointer came from `Box::into_raw` of `FIRST << bucket`
        // initialised `ScheduledIo`s, and `offset < FIRST << bucket` (`locate`); the bucket is
        // freed only in `drop`, so it outlives `&self`. Only shared references are ever made.
        Some(unsafe { &*base.add(offset) })
    }

    /// Releases the registration of `token`: its `ScheduledIo` gets a new generation and goes
    /// back to the pool (a stale token is ignored).
    fn remove(&self, token: u64) {
        let (index, generation) = split(token);
        // As in `insert`.
        let _no_preempt = crate::runtime::preempt::guard();
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.live.get(index as usize) == Some(&true)
            && let Some(io) = self.get(index)
            && io.generation() == generation
        {
            let stale = io.reset();
            pool.live[index as usize] = false;
            pool.free.push(index);
            self.count.fetch_sub(1, Ordering::Relaxed);
            // Dropped without the lock (`reset`).
            drop(pool);
            drop(stale);
        }
    }

    /// Delivers a batch of epoll events to their sockets; events with the driver's own tokens
    /// (below [`TOKEN_BASE`]) are skipped, and stale ones change nothing ("Tokens").
    ///
    /// No lock and no reference count: the `ScheduledIo`s outlive `&self`, and the wakes may
    /// drop tasks and with them sockets, whose release takes the pool lock.
    pub(crate) fn dispatch(&self, events: &[libc::epoll_event]) {
        let window = self.window.load(Ordering::Relaxed);
        for ev in events {
            let token = ev.u64;
            if token as u32 as u64 >= TOKEN_BASE {
                let (index, generation) = split(token);
                if let Some(io) = self.get(index) {
                    if io.seen.load(Ordering::Relaxed) != window {
                        io.seen.store(window, Ordering::Relaxed);
                        self.active.fetch_add(1, Ordering::Relaxed);
                    }
                    deliver(io, ev.events, generation);
                }
            }
        }
    }

    /// Ends the current window and starts the next: how many sockets had events in the one
    /// that ended, each counted once however many events it had (the only worker's estimate
    /// of its active connections, `WorkerCtx::spin`, "The first poll waits"). Exact when one
    /// thread polls; pollers racing on one socket may count it twice, which a heuristic
    /// tolerates. The windows are as long as the caller makes them.
    pub(crate) fn end_window(&self) -> u32 {
        self.window.fetch_add(1, Ordering::Relaxed);
        self.active.swap(0, Ordering::Relaxed)
    }

    /// Whether any socket is registered.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.count.load(Ordering::Relaxed) == 0
    }

    /// Closes every registration (runtime shutdown): waiters wake with an error, and the
    /// wakers they left behind — which hold their tasks — are dropped, also those a `reset`
    /// could not clear from a released `ScheduledIo`. The registrations stay
    /// (their sockets still use their `ScheduledIo`s, now closed) until the sockets drop;
    /// registrations made from now on start closed (`insert`).
    pub(crate) fn close_all(&self) {
        let wakers: Vec<Waker> = {
            // Under the lock, so that no socket is released (and its `ScheduledIo` reset for
            // the next one) while it is being closed.
            let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
            pool.closed = true;
            // Every `ScheduledIo`, released ones too: `reset` may have left wakers in one
            // (taken without closing it: it is free for a next registration).
            (0..pool.len)
                .filter_map(|index| Some((pool.live[index as usize], self.get(index)?)))
                .flat_map(|(live, io)| {
                    if live {
                        io.close_take()
                    } else {
                        io.take_stale()
                    }
                })
                .collect()
        };
        // Without it: a wake may drop a task and with it a socket, whose release takes it.
        for waker in wakers {
            waker.wake();
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        for (bucket, base) in self.buckets.iter_mut().enumerate() {
            let base = *base.get_mut();
            if !base.is_null() {
                let ios = std::ptr::slice_from_raw_parts_mut(base, FIRST << bucket);
                // SAFETY: `base` is the `Box<[ScheduledIo]>` of `FIRST << bucket` elements that
                // `insert` leaked; `&mut self`: no poller and no `Registration` (each holds an
                // `Arc<Registry>`) refers to it any more.
                drop(unsafe { Box::from_raw(ios) });
            }
        }
    }
}

/// Delivers one epoll event (`events`: its `EPOLL*` bits) to `io`, if it is still the
/// registration of `generation`.
#[inline]
fn deliver(io: &ScheduledIo, events: u32, generation: u64) {
    let hangup = (libc::EPOLLHUP | libc::EPOLLERR) as u32;
    // Urgent data is not an end, but it ends the short-read rule for good ("the protocol").
    let read_final = (libc::EPOLLRDHUP | libc::EPOLLPRI) as u32 | hangup;
    if events & (libc::EPOLLIN as u32 | read_final) != 0 {
        io.ready(Direction::Read, events & read_final != 0, generation);
    }
    if events & (libc::EPOLLOUT as u32 | hangup) != 0 {
        io.ready(Direction::Write, events & hangup != 0, generation);
    }
}

/// A socket token's pool index and generation (shifted as in a state word).
#[inline]
fn split(token: u64) -> (u32, u64) {
    (
        (token as u32).wrapping_sub(TOKEN_BASE as u32),
        ((token >> 32) << GEN_SHIFT) & GEN_MASK,
    )
}

/// A socket's registration with one runtime's driver: released when dropped. (Closing the
/// socket's fd removes it from the epoll set.) Holds the registry — the pool its
/// `ScheduledIo` lives in, not the runtime — so that a socket outliving its runtime still has
/// its (closed) `ScheduledIo`.
pub(crate) struct Registration {
    registry: Arc<Registry>,
    token: u64,
    /// In `registry`'s pool: valid while `registry` is (rule 1 of "Tokens"), and this
    /// registration's until it is dropped.
    io: NonNull<ScheduledIo>,
}

// SAFETY: `io` points into the pool that `registry` (an `Arc`, `Send + Sync`) keeps alive, and
// `ScheduledIo` is `Send + Sync` (checked below); only shared references to it are made, from
// any thread, as the `Arc<ScheduledIo>` this replaced allowed.
unsafe impl Send for Registration {}
// SAFETY: as above.
unsafe impl Sync for Registration {}

/// What the `unsafe impl`s above rely on, checked by the compiler.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<ScheduledIo>();
};

impl Registration {
    /// The epoll token of this registration.
    pub(crate) fn token(&self) -> u64 {
        self.token
    }

    /// The socket's readiness state and waiters.
    #[inline]
    pub(crate) fn io(&self) -> &ScheduledIo {
        // SAFETY: the pool keeps it alive while `self.registry` lives (rule 1 of "Tokens"),
        // and it is not reused before `self` is dropped (`Registry::remove`).
        unsafe { self.io.as_ref() }
    }
}

impl Registration {
    /// An edge for `dir` with its final bit, as a hang-up would send: for a shutdown this
    /// socket made itself, which the kernel may not announce (`Source::shutdown`).
    pub(crate) fn shut_down(&self, dir: Direction) {
        let (_, generation) = split(self.token);
        self.io().ready(dir, true, generation);
    }
}

impl Registration {
    /// Takes `fd` — the socket of this registration, still open — out of its runtime's epoll
    /// set, if that runtime's driver still exists, and releases the registration ("Leaving
    /// the epoll set"): no event for the socket reaches corio after this, and the socket can
    /// be registered again, with this runtime or another.
    pub(crate) fn deregister(self, fd: RawFd) {
        if let Some(epoll) = self.registry.epoll.upgrade() {
            // SAFETY: `epoll` is the driver's open epoll fd (the upgrade keeps it open), `fd`
            // the caller's open socket; `EPOLL_CTL_DEL` reads no event (null is allowed since
            // Linux 2.6.9). It can only fail with `ENOENT`, for an fd that is not in the set
            // (never, for a registered socket whose fd its owner did not replace): nothing to
            // remove then, so the result is ignored.
            unsafe {
                libc::epoll_ctl(
                    epoll.as_raw_fd(),
                    libc::EPOLL_CTL_DEL,
                    fd,
                    std::ptr::null_mut(),
                )
            };
        }
        // The release (`drop`): a new generation, so that an event a poller already took is
        // stale.
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry.remove(self.token);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
    use std::task::Wake;

    /// A waker that counts its wakes.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn event(token: u64, events: libc::c_int) -> libc::epoll_event {
        libc::epoll_event {
            events: events as u32,
            u64: token,
        }
    }

    /// Has a new waiter wait for the socket to become readable; returns its waker's count
    /// and its ticket.
    fn waiting(registration: &Registration) -> (Arc<Count>, Ticket) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let ticket = wait_with(registration.io(), &Waker::from(count.clone()), None);
        (count, ticket)
    }

    /// One wait for readability with `waker`, by a waiter whose ticket is `ticket`.
    fn wait_with(io: &ScheduledIo, waker: &Waker, mut ticket: Option<Ticket>) -> Ticket {
        let state = io.clear(Direction::Read, io.state(Direction::Read));
        assert_eq!(
            io.wait(Direction::Read, state, waker, &mut ticket),
            Wait::Queued
        );
        ticket.expect("a queued waiter has a ticket")
    }

    /// A window counts each socket with events once, however many it had, and the next
    /// window starts from none.
    #[test]
    fn a_window_counts_each_active_socket_once() {
        let registry = Arc::new(Registry::default());
        let (a, b) = (registry.insert(), registry.insert());
        let readable = libc::EPOLLIN;
        registry.dispatch(&[event(a.token(), readable), event(b.token(), readable)]);
        registry.dispatch(&[event(a.token(), readable)]);
        assert_eq!(registry.end_window(), 2, "a and b, a once");
        registry.dispatch(&[event(b.token(), readable), event(b.token(), readable)]);
        assert_eq!(registry.end_window(), 1, "b alone");
        assert_eq!(registry.end_window(), 0, "no events");
    }

    /// The review's leak: a stale poller holds a `ScheduledIo`'s list lock (waking one
    /// direction) while the socket's last handle drops on another thread, so `reset` cannot
    /// clear the other direction's list. `close_all` must still drop those wakers: each holds
    /// its task and with it the runtime (before: it visited only live registrations, and the
    /// waker stayed for ever).
    #[test]
    fn close_all_drops_the_wakers_a_reset_could_not_clear() {
        let registry = Arc::new(Registry::default());
        let registration = registry.insert();
        let (index, _) = split(registration.token());
        let io = registration.io();
        // Two writers: the first waits in the slot, the second in the list.
        let mut counts = Vec::new();
        for _ in 0..2 {
            let count = Arc::new(Count(AtomicUsize::new(0)));
            let waker = Waker::from(count.clone());
            let state = io.clear(Direction::Write, io.state(Direction::Write));
            assert_eq!(
                io.wait(Direction::Write, state, &waker, &mut None),
                Wait::Queued
            );
            counts.push(count);
        }
        let listed = counts.pop().unwrap();
        assert_eq!(
            Arc::strong_count(&listed),
            2,
            "the list holds the second waker"
        );
        {
            // The stale poller's lock, held while the release resets the `ScheduledIo`.
            let _poller = registry.get(index).unwrap().waiters.lock().unwrap();
            drop(registration);
        }
        assert_eq!(
            Arc::strong_count(&listed),
            2,
            "reset could not clear the list"
        );
        registry.close_all();
        assert_eq!(
            Arc::strong_count(&listed),
            1,
            "close_all left a released ScheduledIo's waker in place"
        );
    }

    /// A waiter that gives up takes its waker back (`withdraw`), from the slot or the list,
    /// without waking it; another task's waker stays. Before, both stayed until the next
    /// edge: each holds its task.
    #[test]
    // Miri gives each use of a vtable its own address, so a waker's identity (`WakerId`,
    // like `Waker::will_wake`) never matches a clone's there.
    #[cfg_attr(miri, ignore)]
    fn a_waiter_that_gives_up_takes_its_waker_back() {
        let registry = Arc::new(Registry::default());
        let registration = registry.insert();
        let io = registration.io();
        let dir = Direction::Read;
        let ((first, first_ticket), (second, second_ticket)) =
            (waiting(&registration), waiting(&registration));
        assert_eq!(
            (Arc::strong_count(&first), Arc::strong_count(&second)),
            (2, 2)
        );
        // The list's waiter gives up; the slot's stays.
        io.withdraw(dir, second_ticket);
        assert_eq!(
            Arc::strong_count(&second),
            1,
            "the list let go of its waker"
        );
        assert_eq!(second.0.load(Ordering::SeqCst), 0, "not woken as it left");
        assert_eq!(Arc::strong_count(&first), 2, "the slot's waker stays");
        // Then the slot's: nothing left, and an edge wakes nobody.
        io.withdraw(dir, first_ticket);
        assert_eq!(Arc::strong_count(&first), 1, "the slot let go of its waker");
        let (_, generation) = split(registration.token());
        io.ready(dir, false, generation);
        assert_eq!(
            (
                first.0.load(Ordering::SeqCst),
                second.0.load(Ordering::SeqCst)
            ),
            (0, 0)
        );
        // Withdrawing what is not there changes nothing.
        io.withdraw(dir, first_ticket);
        io.withdraw(Direction::Write, first_ticket);
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
    }

    /// Two waiters of one task (one waker) share an entry, in the slot and in the list: one
    /// that gives up leaves it to the other, whose wake-up the edge still brings; and a
    /// waiter whose entry an edge already took does not take a share of a newer entry of
    /// the same waker. (Before entries were counted, `withdraw` woke the waker it took, so
    /// that the other waiter would poll again.)
    #[test]
    #[cfg_attr(miri, ignore)] // `WakerId`, as above
    fn waiters_sharing_a_waker_keep_it_until_the_last_gives_up() {
        let registry = Arc::new(Registry::default());
        let registration = registry.insert();
        let io = registration.io();
        let dir = Direction::Read;
        let (_, generation) = split(registration.token());
        // Another task's waker in the slot, so the second round uses the list.
        for other_in_slot in [false, true] {
            let other = other_in_slot.then(|| waiting(&registration));
            let task = Arc::new(Count(AtomicUsize::new(0)));
            let waker = Waker::from(task.clone());
            let a = wait_with(io, &waker, None);
            let b = wait_with(io, &waker, None);
            assert_eq!(
                wait_with(io, &waker, Some(b)).place,
                b.place,
                "b polled again"
            );
            assert_eq!(Arc::strong_count(&task), 3, "one entry for both");
            io.withdraw(dir, a);
            assert_eq!(Arc::strong_count(&task), 3, "b still waits on it");
            io.ready(dir, false, generation);
            assert_eq!(task.0.load(Ordering::SeqCst), 1, "the edge woke b");
            // A third waiter of the task makes a new entry; b's stale ticket leaves it be.
            let c = wait_with(io, &waker, None);
            io.withdraw(dir, b);
            io.ready(dir, false, generation);
            assert_eq!(task.0.load(Ordering::SeqCst), 2, "the edge woke c");
            io.withdraw(dir, c);
            if let Some((other, ticket)) = other {
                assert_eq!(other.0.load(Ordering::SeqCst), 1);
                io.withdraw(dir, ticket);
            }
            assert_eq!(Arc::strong_count(&task), 2, "no waker left with the socket");
        }
    }

    /// A waiter polled again with a new waker each time leaves only its latest with the
    /// socket (the old ones went to the list behind the first, one per poll, before).
    #[test]
    #[cfg_attr(miri, ignore)] // `WakerId`, as above
    fn a_waiter_polled_with_ever_new_wakers_leaves_only_the_latest() {
        let registry = Arc::new(Registry::default());
        let registration = registry.insert();
        let io = registration.io();
        let counts: Vec<Arc<Count>> = (0..10)
            .map(|_| Arc::new(Count(AtomicUsize::new(0))))
            .collect();
        let mut ticket = None;
        for count in &counts {
            ticket = Some(wait_with(io, &Waker::from(count.clone()), ticket));
        }
        let held: Vec<usize> = (0..counts.len())
            .filter(|&i| Arc::strong_count(&counts[i]) > 1)
            .collect();
        assert_eq!(held, [counts.len() - 1]);
        assert!(
            counts.iter().all(|c| c.0.load(Ordering::SeqCst) == 0),
            "none woken"
        );
        let (_, generation) = split(registration.token());
        io.ready(Direction::Read, false, generation);
        assert_eq!(counts.last().unwrap().0.load(Ordering::SeqCst), 1);
    }

    /// A socket first registered after the runtime shut down (its `Handle` outlived it) must
    /// not wait in an epoll set nobody polls: its registration starts closed. The next one
    /// made from its `ScheduledIo` after it is released does too.
    #[test]
    fn a_registration_made_after_close_all_starts_closed() {
        let registry = Arc::new(Registry::default());
        let before = registry.insert();
        registry.close_all();
        let after = registry.insert();
        let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        for registration in [&before, &after] {
            let io = registration.io();
            let state = io.clear(Direction::Read, io.state(Direction::Read));
            assert_eq!(
                io.wait(Direction::Read, state, &waker, &mut None),
                Wait::Closed
            );
        }
        drop(after);
        let reused = registry.insert();
        let io = reused.io();
        let state = io.clear(Direction::Read, io.state(Direction::Read));
        assert_eq!(
            io.wait(Direction::Read, state, &waker, &mut None),
            Wait::Closed
        );
    }

    /// `deregister` takes the socket out of the epoll set (a second `EPOLL_CTL_DEL` finds
    /// nothing) and retires its token; with its epoll instance gone it only releases.
    #[test]
    #[cfg_attr(miri, ignore)] // epoll system calls
    fn deregister_leaves_the_epoll_set_and_retires_the_token() {
        use std::os::fd::{FromRawFd, OwnedFd};
        // SAFETY: a fresh descriptor, owned once (the call is checked just below).
        let epoll = Arc::new(unsafe { OwnedFd::from_raw_fd(libc::epoll_create1(0)) });
        assert!(epoll.as_raw_fd() >= 0);
        let registry = Arc::new(Registry::new(Arc::downgrade(&epoll)));
        let (socket, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let ctl = |op, token| {
            let mut ev = event(token, libc::EPOLLIN | libc::EPOLLET);
            // SAFETY: valid epoll and socket fds, a valid event.
            unsafe { libc::epoll_ctl(epoll.as_raw_fd(), op, socket.as_raw_fd(), &mut ev) }
        };
        let registration = registry.insert();
        let token = registration.token();
        assert_eq!(ctl(libc::EPOLL_CTL_ADD, token), 0);
        registration.deregister(socket.as_raw_fd());
        assert_eq!(ctl(libc::EPOLL_CTL_DEL, 0), -1, "still in the epoll set");
        assert!(registry.is_empty(), "not released");
        // A late event for it changes nothing for the next registration.
        let next = registry.insert();
        let (count, _) = waiting(&next);
        registry.dispatch(&[event(token, libc::EPOLLIN | libc::EPOLLHUP)]);
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
        assert!(!may_be_ready(next.io().state(Direction::Read)));
        // The driver gone: nothing to remove from, and the release still happens.
        drop(epoll);
        next.deregister(socket.as_raw_fd());
        assert!(registry.is_empty());
    }

    /// TCP urgent data ends the short-read rule for the socket's reads: its edge sets the read
    /// direction's final bit (a cleared ready bit no longer stops a read), not the write's.
    #[test]
    fn an_urgent_data_edge_makes_reads_try_their_system_call_for_good() {
        let registry = Arc::new(Registry::default());
        let registration = registry.insert();
        let (count, _) = waiting(&registration);
        registry.dispatch(&[event(registration.token(), libc::EPOLLIN | libc::EPOLLPRI)]);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        let io = registration.io();
        // A short read of the data before the urgent mark clears the ready bit...
        let state = io.clear(Direction::Read, io.state(Direction::Read));
        // ...and the next read still tries its system call.
        assert!(may_be_ready(state));
        assert_eq!(io.state(Direction::Write) & FINAL, 0);
    }

    #[test]
    fn a_batch_wakes_its_sockets_and_skips_stale_and_driver_tokens() {
        let registry = Arc::new(Registry::default());
        let old = registry.insert();
        let old_token = old.token();
        drop(old);
        // The `ScheduledIo` is reused with a new generation: the old token is stale.
        let new = registry.insert();
        assert_eq!(split(new.token()).0, split(old_token).0);
        assert_ne!(new.token(), old_token);
        let (count, _) = waiting(&new);

        registry.dispatch(&[
            event(old_token, libc::EPOLLIN),
            event(1, libc::EPOLLIN),
            event(2, libc::EPOLLIN),
        ]);
        assert_eq!(count.0.load(Ordering::SeqCst), 0, "a stale token woke");
        assert!(!may_be_ready(new.io().state(Direction::Read)));

        registry.dispatch(&[
            event(1, libc::EPOLLIN),
            event(old_token, libc::EPOLLIN),
            event(new.token(), libc::EPOLLIN),
        ]);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(may_be_ready(new.io().state(Direction::Read)));
    }

    #[test]
    fn a_stale_hang_up_never_closes_the_socket_that_reuses_the_registration() {
        let registry = Arc::new(Registry::default());
        let old = registry.insert();
        let old_token = old.token();
        drop(old);
        let new = registry.insert();
        let (count, _) = waiting(&new);
        let hangup = libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR;
        registry.dispatch(&[event(old_token, hangup)]);
        for dir in [Direction::Read, Direction::Write] {
            assert_eq!(
                new.io().state(dir) & FINAL,
                0,
                "{dir:?} closed by a stale event"
            );
        }
        assert!(!may_be_ready(new.io().state(Direction::Read)));
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
        // The new registration's own hang-up does close it.
        registry.dispatch(&[event(new.token(), hangup)]);
        assert_ne!(new.io().state(Direction::Read) & FINAL, 0);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_released_registration_drops_the_wakers_left_in_it_and_starts_afresh() {
        let registry = Arc::new(Registry::default());
        let first = registry.insert();
        let (count, _) = waiting(&first);
        // A second waiter on the same direction goes to the list.
        let other = Arc::new(Count(AtomicUsize::new(0)));
        let io = first.io();
        let state = io.state(Direction::Read);
        assert_eq!(
            io.wait(
                Direction::Read,
                state,
                &Waker::from(other.clone()),
                &mut None
            ),
            Wait::Queued
        );
        assert_eq!(
            (Arc::strong_count(&count), Arc::strong_count(&other)),
            (2, 2)
        );
        drop(first);
        // Dropped, not woken: their tasks gave up on a socket that is gone.
        assert_eq!(
            (Arc::strong_count(&count), Arc::strong_count(&other)),
            (1, 1)
        );
        assert_eq!(
            count.0.load(Ordering::SeqCst) + other.0.load(Ordering::SeqCst),
            0
        );
        let second = registry.insert();
        for dir in [Direction::Read, Direction::Write] {
            assert_eq!(second.io().state(dir) & !GEN_MASK, READY, "{dir:?}");
        }
        assert!(registry.pool.lock().unwrap().len == 1, "the pool grew");
    }

    #[test]
    fn registrations_beyond_the_first_bucket_are_found_by_their_tokens() {
        let registry = Arc::new(Registry::default());
        let all: Vec<Registration> = (0..3 * FIRST + 5).map(|_| registry.insert()).collect();
        let counts: Vec<Arc<Count>> = all.iter().map(|r| waiting(r).0).collect();
        let events: Vec<_> = all
            .iter()
            .map(|r| event(r.token(), libc::EPOLLIN))
            .collect();
        registry.dispatch(&events);
        assert!(counts.iter().all(|c| c.0.load(Ordering::SeqCst) == 1));
        assert_eq!(locate(FIRST as u32), (1, 0));
        assert_eq!(locate(3 * FIRST as u32 - 1), (1, 2 * FIRST - 1));
        assert_eq!(locate(3 * FIRST as u32), (2, 0));
        drop(all);
        assert!(registry.is_empty());
    }

    /// The race the tokens are built for: events for a socket that another thread drops (and
    /// whose `ScheduledIo` a new socket takes at once) while a poller is delivering them.
    /// Under Miri this also checks that no event touches freed memory:
    /// `cargo +nightly miri test -p corio --lib registry`.
    #[test]
    fn events_racing_with_a_socket_drop_never_change_the_socket_that_reuses_it() {
        let rounds = if cfg!(miri) { 60 } else { 20_000 };
        let registry = Arc::new(Registry::default());
        // The token the poller may send hang-ups to: a registration that is live when
        // published, and is dropped while the poller still sends to it.
        let current = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let poller = {
            let (registry, current, done) = (registry.clone(), current.clone(), done.clone());
            std::thread::spawn(move || {
                let hangup = libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLHUP;
                while !done.load(Ordering::Relaxed) {
                    let token = current.load(Ordering::Relaxed);
                    if token != 0 {
                        registry.dispatch(&[event(token, hangup), event(token, hangup)]);
                    }
                    std::hint::spin_loop();
                }
            })
        };
        for round in 0..rounds {
            let registration = registry.insert();
            if round % 2 == 0 {
                // This one the poller may close: publish it, let it race with the drop.
                current.store(registration.token(), Ordering::Relaxed);
                for _ in 0..round % 7 {
                    std::thread::yield_now();
                }
                drop(registration);
                continue;
            }
            // Reuses the `ScheduledIo` just released, while the poller still sends hang-ups
            // for the released one: nothing may reach this socket.
            let io = registration.io();
            let state = io.clear(Direction::Read, io.state(Direction::Read));
            let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
            // `Retry` is the wake-up for nothing allowed below, met while
            // registering: a stale poller that passed its check before the drop set the
            // slot's `WAKING` (seen once in ~20,000 rounds in a loaded debug run). `Closed`
            // would be a stale hang-up reaching this socket.
            let wait = io.wait(Direction::Read, state, &waker, &mut None);
            assert!(
                matches!(wait, Wait::Queued | Wait::Retry),
                "round {round}: {wait:?}"
            );
            for _ in 0..3 {
                std::thread::yield_now();
            }
            // (A wake-up for nothing is allowed — a poller past its check when the socket
            // was dropped — but not a change of state.)
            assert_eq!(
                io.state(Direction::Read),
                state,
                "round {round}: read state changed"
            );
            assert_eq!(
                io.state(Direction::Write) & !GEN_MASK,
                READY,
                "round {round}: write state changed"
            );
        }
        done.store(true, Ordering::Relaxed);
        poller.join().unwrap();
    }
}

/// The wait/ready/close protocol with the single-waiter slot (`slot.rs`) under loom: a lost
/// wake-up leaves a waiter blocked for ever, which loom reports as a deadlock.
/// `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p corio --release --lib
/// --target-dir target/loom -- loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::atomic_waker::loom_tests::Signal;

    /// A reader that found the socket drained (its `EAGAIN` cleared the ready bit) waits as
    /// `Source::poll_registered` does until the socket may be ready: `Ok` once an edge is
    /// visible, `Err` if the registration closed.
    fn wait_for_edge(io: &ScheduledIo) -> Result<(), ()> {
        let signal = std::sync::Arc::new(Signal::new());
        let waker = Waker::from(signal.clone());
        let dir = Direction::Read;
        // The socket's data is the edge: a read after it finds the data, one before it finds
        // the socket drained and clears the ready bit (the state starts ready, edge count 0).
        let first = io.state(dir);
        if first >= EDGE {
            return Ok(());
        }
        let mut state = io.clear(dir, first);
        let mut ticket = None;
        loop {
            match io.wait(dir, state, &waker, &mut ticket) {
                Wait::Queued => signal.wait(),
                Wait::Retry => {}
                Wait::Closed => return Err(()),
            }
            state = io.state(dir);
            if may_be_ready(state) {
                return Ok(());
            }
        }
    }

    /// A poller thread delivering one edge for `dir` (generation 0).
    fn edge(io: &Arc<ScheduledIo>, dir: Direction) -> loom::thread::JoinHandle<()> {
        let io = io.clone();
        loom::thread::spawn(move || io.ready(dir, false, 0))
    }

    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(2);
        }
        builder.check(f);
    }

    #[test]
    fn loom_an_edge_racing_with_a_slot_wait_is_never_lost() {
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let poller = edge(&io, Direction::Read);
            assert_eq!(wait_for_edge(&io), Ok(()));
            poller.join().unwrap();
        });
    }

    #[test]
    fn loom_a_waiter_giving_up_racing_with_an_edge_and_another_waiter_loses_no_wake_up() {
        // The waiter that gives up holds the slot; the other finds it taken (the list) or
        // free again (the slot); the edge must reach the other either way.
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let gone = Waker::from(std::sync::Arc::new(Signal::new()));
            let dir = Direction::Read;
            let state = io.clear(dir, io.state(dir));
            let mut ticket = None;
            assert_eq!(io.wait(dir, state, &gone, &mut ticket), Wait::Queued);
            let withdrawer = {
                let io = io.clone();
                let ticket = ticket.unwrap();
                loom::thread::spawn(move || io.withdraw(dir, ticket))
            };
            let poller = edge(&io, dir);
            assert_eq!(wait_for_edge(&io), Ok(()));
            withdrawer.join().unwrap();
            poller.join().unwrap();
        });
    }

    #[test]
    fn loom_a_waiter_giving_up_racing_with_an_edge_leaves_its_task_waker_to_the_other_waiter() {
        // Two futures of one task (one waker) wait on the direction: one entry, counted
        // twice. The first gives up while the edge comes; the second, which returned
        // `Pending` and is not polled again unless woken, must be woken.
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let signal = std::sync::Arc::new(Signal::new());
            let waker = Waker::from(signal.clone());
            let dir = Direction::Read;
            let state = io.clear(dir, io.state(dir));
            let (mut first, mut second) = (None, None);
            assert_eq!(io.wait(dir, state, &waker, &mut first), Wait::Queued);
            assert_eq!(io.wait(dir, state, &waker, &mut second), Wait::Queued);
            let poller = edge(&io, dir);
            io.withdraw(dir, first.unwrap());
            signal.wait();
            poller.join().unwrap();
        });
    }

    #[test]
    fn loom_a_waiter_polled_again_with_another_waker_racing_with_an_edge_sees_it() {
        // The second wait takes the first waker's entry back and leaves the new waker, while
        // the edge comes: either its re-check sees the edge or the edge wakes the new waker.
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let old = Waker::from(std::sync::Arc::new(Signal::new()));
            let signal = std::sync::Arc::new(Signal::new());
            let new = Waker::from(signal.clone());
            let dir = Direction::Read;
            let state = io.clear(dir, io.state(dir));
            let mut ticket = None;
            assert_eq!(io.wait(dir, state, &old, &mut ticket), Wait::Queued);
            let poller = edge(&io, dir);
            match io.wait(dir, state, &new, &mut ticket) {
                Wait::Queued => signal.wait(),
                Wait::Retry => {}
                Wait::Closed => panic!("closed"),
            }
            poller.join().unwrap();
        });
    }

    #[test]
    fn loom_two_waiters_on_one_direction_both_see_the_edge() {
        // One takes the slot, the other the list (or both the slot, in turn, after a wake).
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let other = {
                let io = io.clone();
                loom::thread::spawn(move || wait_for_edge(&io))
            };
            let poller = edge(&io, Direction::Read);
            assert_eq!(wait_for_edge(&io), Ok(()));
            assert_eq!(other.join().unwrap(), Ok(()));
            poller.join().unwrap();
        });
    }

    #[test]
    fn loom_a_close_racing_with_a_slot_wait_wakes_the_waiter_with_an_error() {
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let closer = {
                let io = io.clone();
                loom::thread::spawn(move || io.close())
            };
            assert_eq!(wait_for_edge(&io), Err(()));
            closer.join().unwrap();
        });
    }

    #[test]
    fn loom_a_stale_hang_up_racing_with_a_release_never_reaches_the_next_registration() {
        // A poller took a hang-up for the socket of generation 0 from the kernel; the socket is
        // dropped (its `ScheduledIo` reset) and the next one waits on it, woken by its own
        // edge (generation 1). It must see that edge, and never the stale hang-up.
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let stale = {
                let io = io.clone();
                loom::thread::spawn(move || io.ready(Direction::Read, true, 0))
            };
            drop(io.reset());
            let generation = io.generation();
            assert_ne!(generation, 0);
            let poller = {
                let io = io.clone();
                loom::thread::spawn(move || io.ready(Direction::Read, false, generation))
            };
            assert_eq!(wait_for_edge(&io), Ok(()));
            stale.join().unwrap();
            poller.join().unwrap();
            assert_eq!(io.state(Direction::Read) & FINAL, 0);
        });
    }

    #[test]
    fn loom_an_edge_and_a_close_racing_with_a_wait_end_it() {
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let poller = edge(&io, Direction::Read);
            let closer = {
                let io = io.clone();
                loom::thread::spawn(move || io.close())
            };
            // Either ending is right; waiting for ever is not.
            let _ = wait_for_edge(&io);
            poller.join().unwrap();
            closer.join().unwrap();
        });
    }
}
