//! The per-P timer heap: a 4-ary min-heap of timers ordered by deadline (Go's `runtime/time.go`).
//!
//! # The problem
//!
//! Every P keeps the timers of the coroutines and tasks that sleep on it (DESIGN.md decision 7,
//! "Per-P timers"). Whoever looks for work asks the P for the expired ones, and an idle M blocks
//! in `epoll_wait` with "the nearest timer" as its timeout, so the structure must answer three
//! questions cheaply: what is the earliest deadline, which timers have expired, and (the common
//! case for timeouts, which are mostly cancelled) remove this timer now.
//!
//! # The mechanism
//!
//! A 4-ary min-heap in a `Vec`, as Go's runtime (`timerHeapN = 4`; children of `i` are
//! `4i+1 ..= 4i+4`, parent `(i-1)/4`). Four children per node halve the height of a binary heap
//! (10 levels at a million timers instead of 20), and the four children of a node (4 × 16 bytes)
//! span at most two cache lines, so `sift_down`'s extra compares are nearly free while its level
//! count (each a probable cache miss) halves.
//!
//! Each heap slot holds a copy of the deadline next to the `Arc` (Go 1.23's `timerWhen`), so
//! sifting compares deadlines inside the array and never dereferences an entry to read one.
//!
//! Each entry records its own position (`TimerEntry::index`), so `remove` is O(log n): swap the
//! last slot into the hole and sift it up or down. Every move in a sift writes the moved entry's
//! new position: that write (one per level) is the price of eager removal.
//!
//! - `next_deadline`: O(1), the root.
//! - `insert`: O(log n) worst case; O(1) on average for random deadlines and for the deadlines of
//!   timeouts, which are mostly later than the ones already queued and so stay near the leaves.
//! - `remove`: O(log n); O(1) on average for a random victim (three quarters of a 4-ary heap are
//!   leaves, and the last slot that replaces the victim rarely travels far).
//! - `pop_expired`: O(log n), a full sift down from the root.
//!
//! # The sorted run in front of the heap
//!
//! A server's timeouts come in deadline order and mostly leave oldest first: hyper starts a
//! header-read timeout (now + 30 s) each time a keep-alive connection waits for its next
//! request and cancels it when the request arrives, and connections served round-robin
//! cancel their timeouts in about the order they started them. In the heap alone each
//! timeout is appended as a leaf (cheap) and then removed *from the root* — the oldest is
//! the earliest — which is a full sift-down: 164 of the ~960 instructions that a corio timer
//! cost hyper per request, where tokio's wheel costs 647 in all (`docs/net-bench.md`, "hyper
//! on corio vs hyper on tokio").
//!
//! So a timer whose deadline is not earlier than the last one queued in the *run* is
//! appended to the run instead: a `VecDeque` of slots in non-decreasing deadline order. The
//! timer queue is the run and the heap together; its earliest timer is the earlier of the
//! run's front and the heap's root, so `next_deadline` stays exact.
//!
//! - Appending to the run, and removing its front or back: O(1), no sift.
//! - Removing from the middle of the run leaves a tombstone (a slot without its entry: the
//!   `Arc`, and the waker in it, are released at once). Tombstones at the front or back are
//!   popped straight away, so both ends are always live; when more than half the run (and
//!   more than [`RUN_COMPACT_MIN`] slots) is tombstones, the run is compacted, O(n) for n
//!   removals before it.
//! - A timer earlier than the run's back goes to the heap as before, so random deadlines
//!   (sleeps of every length) still cost what the heap costs.
//!
//! An entry's `index` says where it is: a heap position, or [`RUN_BIT`] with its position in
//! the run counted from when the run was last emptied or compacted (`run_base` is the count
//! of the current front), so popping the front renumbers nothing.
//!
//! # Rejected alternatives
//!
//! - *Lazy deletion*, as Go's runtime does (a stopped timer is only marked; it leaves the heap when
//!   it reaches the root, or in an O(n) clean-up pass once marked timers exceed a quarter of the
//!   heap). It saves the index writes, but 90% of a server's timeouts are cancelled, so an O(n)
//!   pass comes every n/4 or so cancellations (a latency spike under the P's timer lock), and a
//!   cancelled timer's memory (its `Arc`, and through the waker whatever task it names) lingers
//!   until then. corio removes eagerly.
//! - *A hierarchical timing wheel* (tokio: 6 levels × 64 slots, 1 ms). Measured against this heap
//!   by `wheel_proto.rs` (a test-only prototype, kept for re-measurement; the table is there).
//!   Per-operation costs are within ±30% of each other in a server's pattern (the heap ahead at
//!   1k timers, the wheel ahead at 100k–1M); the wheel is 3–7× cheaper per fired timer when 100k
//!   or more expire together. The heap was chosen because its deadlines are
//!   exact: a wheel fires up to 1 ms late (it rounds to its slots), and its `next_deadline` is only
//!   a lower bound above level 0, so an idle M would wake early to cascade, while corio promises
//!   nanosecond `sleep` deadlines and an idle M that wakes only for a timer that is due.
//!
//! # Deadlines are immutable
//!
//! A `TimerEntry`'s deadline is fixed when it is created. Resetting a timer (an `Interval` tick,
//! `Sleep::reset`) creates a new entry. An in-place reset "while not in a heap" would race with a
//! P that has just popped the entry and is about to `fire` it outside the lock: the owner would
//! see "not queued", reset the deadline and the `fired` flag, re-insert, and then receive the stale
//! fire. Go closes that race with a per-timer lock and a sequence number; an allocation per reset
//! is cheaper than that machinery on every operation. (`TimerEntry::recycle` keeps a cancelled
//! entry for the next `new_reusing` only when nothing else refers to it, so a reused entry is a
//! new one in all but its address: no heap, firer or future can see its deadline change.)
//!
//! # Who may touch what
//!
//! - `TimerHeap` is not synchronised: its owner wraps it in the P's timer lock, and every method
//!   taking `&mut self` runs under that lock.
//! - `TimerEntry::index` is written only by `TimerHeap` methods, i.e. under the lock of the heap
//!   that holds the entry (or held it, for the write that marks it unqueued). It is an `AtomicUsize`
//!   only because the entry is shared (`Arc`) with the future that owns the timer, which must be
//!   `Send + Sync`; a `Cell` would make the entry `!Sync`. All accesses are `Relaxed`: the heap
//!   lock orders the writes and the reads that matter (`remove`, `insert`'s check). A read
//!   without the lock (`is_queued`) is a hint only. On x86-64 and AArch64 a `Relaxed` load or store
//!   is a plain `mov`/`ldr`/`str`, so this costs what a `Cell` would.
//! - `TimerEntry::fired` is set by whoever fires the entry after popping it (normally the P, after
//!   releasing the heap lock) and read by the owning future.
//! - An entry is in at most one heap at a time. It is inserted by its owning future, or by a P
//!   re-inserting what it drained from another P's heap, or by the fallback timer thread taking
//!   a shut-down runtime's timers over (`insert_at`: the slot holds the deadline on the
//!   fallback's clock; the entry's own stays as it was).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::loom::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use crate::loom::sync::atomic::{AtomicBool, AtomicUsize};
use crate::sync::atomic_waker::AtomicWaker;

/// Children per node. 4 as Go's `timerHeapN`: half the height of a binary heap, and a node's
/// four 16-byte children span at most two 64-byte lines.
const ARITY: usize = 4;

/// `TimerEntry::index` of an entry that is in no heap.
const NOT_QUEUED: usize = usize::MAX;

/// Set in `TimerEntry::index` of an entry in the sorted run (the rest is its position count,
/// see "The sorted run in front of the heap"). Below `NOT_QUEUED`'s bits: a run position is
/// masked with [`RUN_MASK`], so it never reaches `NOT_QUEUED`.
const RUN_BIT: usize = 1 << (usize::BITS - 2);

/// The bits of a run position count (it wraps within them).
const RUN_MASK: usize = RUN_BIT - 1;

/// Tombstones the run must hold, besides being more than half of it, before it is compacted:
/// a small run is cheaper to leave alone (its tombstones leave from the front soon enough).
const RUN_COMPACT_MIN: usize = 32;

/// How many spare timer entries a thread keeps ([`TimerEntry::recycle`]): enough for the
/// timeouts one worker's connections start and cancel between two of its polls; a spare is
/// 64 bytes.
#[cfg(not(loom))]
const SPARE_ENTRIES_MAX: usize = 64;

#[cfg(not(loom))]
thread_local! {
    /// This thread's spare timer entries: unique, unqueued, without a waker.
    static SPARE_ENTRIES: std::cell::RefCell<Vec<Arc<TimerEntry>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// One timer, shared (`Arc`) by the heap that queues it and the future that waits for it.
pub(crate) struct TimerEntry {
    /// Nanoseconds on the runtime clock. Immutable: see "Deadlines are immutable".
    deadline: u64,
    /// Position in the heap that holds the entry, or `NOT_QUEUED`. Written only under that heap's
    /// lock (by `TimerHeap` methods); `Relaxed`, see "Who may touch what".
    index: AtomicUsize,
    /// Set once by `fire`; never cleared.
    fired: AtomicBool,
    /// The task to wake when the timer fires.
    waker: AtomicWaker,
}

impl TimerEntry {
    /// A new, unqueued, unfired timer for `deadline` (nanoseconds on the runtime clock).
    pub(crate) fn new(deadline: u64) -> Arc<Self> {
        Arc::new(Self {
            deadline,
            index: AtomicUsize::new(NOT_QUEUED),
            fired: AtomicBool::new(false),
            waker: AtomicWaker::new(),
        })
    }

    /// [`new`](Self::new), in one of this thread's spare entries if it has one (see
    /// [`recycle`](Self::recycle)): a timeout that is started and cancelled per request
    /// (hyper's header-read timer) then allocates nothing.
    #[inline(never)] // reads a thread-local: never inlined into code that may switch stacks
    pub(crate) fn new_reusing(deadline: u64) -> Arc<Self> {
        #[cfg(not(loom))]
        if let Some(mut entry) = SPARE_ENTRIES
            .try_with(|spare| spare.try_borrow_mut().ok()?.pop())
            .ok()
            .flatten()
        {
            // A spare is unique (`recycle` checked) and emptied: no waker, not queued.
            let fresh = Arc::get_mut(&mut entry).expect("a spare timer entry is shared");
            fresh.deadline = deadline;
            *fresh.fired.get_mut() = false;
            return entry;
        }
        Self::new(deadline)
    }

    /// Keeps `entry` as a spare of this thread for [`new_reusing`](Self::new_reusing) if
    /// nothing else refers to it (no heap, no firer), else just drops this reference. Its
    /// waker is dropped here, so a spare keeps no task alive. Call it without a heap's lock
    /// held: dropping a waker may drop a task, whose future may cancel a timer.
    #[inline(never)] // as `new_reusing`
    pub(crate) fn recycle(entry: Arc<Self>) {
        #[cfg(not(loom))]
        Self::keep_spare(entry);
        #[cfg(loom)]
        drop(entry);
    }

    /// `recycle` outside loom (whose model has no thread-local spares).
    #[cfg(not(loom))]
    fn keep_spare(mut entry: Arc<Self>) {
        let Some(unique) = Arc::get_mut(&mut entry) else {
            return;
        };
        debug_assert!(!unique.is_queued());
        unique.waker = AtomicWaker::new();
        let _ = SPARE_ENTRIES.try_with(|spare| {
            if let Ok(mut spare) = spare.try_borrow_mut()
                && spare.len() < SPARE_ENTRIES_MAX
            {
                spare.push(entry);
            }
        });
    }

    /// The deadline, in nanoseconds on the runtime clock.
    #[inline]
    #[allow(
        dead_code,
        reason = "part of the structure's API, exercised by its tests"
    )]
    pub(crate) fn deadline(&self) -> u64 {
        self.deadline
    }

    /// Whether the entry is in a heap. Exact under the lock of the heap that holds it; without
    /// that lock a hint only (a P may be popping it right now). A fired entry is never queued.
    #[inline]
    pub(crate) fn is_queued(&self) -> bool {
        self.index.load(Relaxed) != NOT_QUEUED
    }

    /// Whether [`fire`](Self::fire) has run.
    #[inline]
    pub(crate) fn is_fired(&self) -> bool {
        // Acquire pairs with the Release store in `fire`: whatever the firer did before is visible.
        self.fired.load(Acquire)
    }

    /// Marks the timer fired and wakes the registered waker.
    ///
    /// Called by whoever popped the entry with [`TimerHeap::pop_expired`] (or drained it and
    /// decided it expired), preferably after releasing the heap lock: the wake-up pushes a task
    /// to a run queue and may take other locks.
    pub(crate) fn fire(&self) {
        // Release pairs with the Acquire load in `is_fired`/`poll_elapsed`; the store is before the
        // wake, which is what `AtomicWaker`'s guarantee requires of a producer.
        self.fired.store(true, Release);
        self.waker.wake();
    }

    /// The owning future's poll: `Ready` once fired; otherwise registers `cx`'s waker.
    ///
    /// Registering before the second check is what makes a concurrent `fire` impossible to miss
    /// (see `AtomicWaker`, "The guarantee").
    pub(crate) fn poll_elapsed(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.is_fired() {
            return Poll::Ready(());
        }
        self.register(cx.waker());
        if self.is_fired() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Registers `waker` to be woken by [`fire`](Self::fire) (for blocking-style waiters that
    /// are not polled through a `Context`). Check [`is_fired`](Self::is_fired) afterwards.
    pub(crate) fn register(&self, waker: &Waker) {
        self.waker.register(waker);
    }

    /// Takes the registered waker back, unwoken (`Sleep::reset` moves it to a new entry);
    /// `None` if there is none or a `fire` took it.
    pub(crate) fn take_waker(&self) -> Option<Waker> {
        self.waker.take()
    }
}

impl fmt::Debug for TimerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerEntry")
            .field("deadline", &self.deadline)
            .field("queued", &self.is_queued())
            .field("fired", &self.is_fired())
            .finish()
    }
}

/// A heap slot: the deadline copied next to the entry, so sifts never dereference an entry to
/// compare (Go's `timerWhen`).
struct Slot {
    deadline: u64,
    entry: Arc<TimerEntry>,
}

/// A slot of the sorted run: `None` is a tombstone (a timer removed from the middle).
struct RunSlot {
    deadline: u64,
    entry: Option<Arc<TimerEntry>>,
}

/// A 4-ary min-heap of timers ordered by deadline, with a sorted run in front of it (see
/// "The sorted run in front of the heap"). One per P, behind the P's timer lock.
///
/// Entries with equal deadlines come out in no particular order.
#[derive(Default)]
pub(crate) struct TimerHeap {
    slots: Vec<Slot>,
    /// Timers in non-decreasing deadline order; the front and back are never tombstones.
    run: VecDeque<RunSlot>,
    /// The position count of `run[0]` (masked with `RUN_MASK`).
    run_base: usize,
    /// How many of `run`'s slots are tombstones.
    run_dead: usize,
}

impl TimerHeap {
    /// An empty heap. Does not allocate.
    pub(crate) const fn new() -> Self {
        Self {
            slots: Vec::new(),
            run: VecDeque::new(),
            run_base: 0,
            run_dead: 0,
        }
    }

    /// Number of queued timers.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slots.len() + self.run.len() - self.run_dead
    }

    /// Whether no timer is queued.
    #[inline]
    #[allow(
        dead_code,
        reason = "part of the structure's API, exercised by its tests"
    )]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The earliest deadline, O(1). What an idle M turns into its `epoll_wait` timeout.
    #[inline]
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        // The run's front is live (never a tombstone), so this is exact.
        match (self.slots.first(), self.run.front()) {
            (Some(h), Some(r)) => Some(h.deadline.min(r.deadline)),
            (h, r) => h.map(|s| s.deadline).or(r.map(|s| s.deadline)),
        }
    }

    /// Queues `entry`.
    ///
    /// # Panics
    ///
    /// If `entry` is already in a heap (this one or another): an entry is inserted once, by its
    /// owner. The check reads the entry's index without the other heap's lock, so a misuse that
    /// races with another heap's operations may go undetected; it cannot cause memory unsafety.
    #[track_caller]
    pub(crate) fn insert(&mut self, entry: Arc<TimerEntry>) {
        let deadline = entry.deadline;
        self.insert_at(entry, deadline);
    }

    /// [`insert`](Self::insert) on another clock: the heap orders and fires `entry` at
    /// `deadline` (ns on this heap's clock) instead of its own deadline (ns on the clock of the
    /// runtime that made it). The fallback timer thread takes a shut-down runtime's timers
    /// over this way (`fallback::adopt`), so that the owner's cancel still finds the entry.
    pub(crate) fn insert_at(&mut self, entry: Arc<TimerEntry>, deadline: u64) {
        assert!(
            !entry.is_queued(),
            "TimerHeap::insert: the timer is already in a heap"
        );
        if self.run.back().is_none_or(|last| deadline >= last.deadline) {
            // In deadline order: append to the run.
            let at = self.run_base.wrapping_add(self.run.len()) & RUN_MASK;
            entry.index.store(RUN_BIT | at, Relaxed);
            self.run.push_back(RunSlot {
                deadline,
                entry: Some(entry),
            });
            return;
        }
        let i = self.slots.len();
        self.slots.push(Slot { deadline, entry });
        self.sift_up(i);
    }

    /// Removes `entry` if it is in this heap. `false` if it is not (never inserted, already popped
    /// or removed, or in another heap).
    pub(crate) fn remove(&mut self, entry: &TimerEntry) -> bool {
        let i = entry.index.load(Relaxed);
        if i != NOT_QUEUED && i & RUN_BIT != 0 {
            return self.remove_from_run(i & RUN_MASK, entry);
        }
        // An index from another heap may be in range here: the identity check makes that `false`.
        match self.slots.get(i) {
            Some(slot) if std::ptr::eq(&*slot.entry, entry) => {
                drop(self.remove_at(i));
                true
            }
            _ => false,
        }
    }

    /// Removes and returns the earliest timer if its deadline is at or before `now`.
    ///
    /// The caller fires it ([`TimerEntry::fire`]), preferably after releasing the heap lock.
    #[inline]
    pub(crate) fn pop_expired(&mut self, now: u64) -> Option<Arc<TimerEntry>> {
        let root = self.slots.first().map_or(u64::MAX, |s| s.deadline);
        match self.run.front() {
            Some(front) if front.deadline <= now && front.deadline <= root => {
                Some(self.pop_run_front())
            }
            _ if root <= now && !self.slots.is_empty() => Some(self.remove_at(0)),
            _ => None,
        }
    }

    /// Removes every timer, in no particular order, for shutdown or to hand them to another P's
    /// heap. Every entry is marked unqueued before the first one is yielded, so dropping the
    /// iterator early leaves no entry that believes it is queued.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Arc<TimerEntry>> + '_ {
        self.unqueue_all();
        self.run_base = 0;
        self.run_dead = 0;
        let run = self.run.drain(..).filter_map(|slot| slot.entry);
        self.slots.drain(..).map(|slot| slot.entry).chain(run)
    }

    /// Marks every queued entry unqueued (for `drain` and `drop`).
    fn unqueue_all(&self) {
        for slot in &self.slots {
            slot.entry.index.store(NOT_QUEUED, Relaxed);
        }
        for entry in self.run.iter().filter_map(|slot| slot.entry.as_ref()) {
            entry.index.store(NOT_QUEUED, Relaxed);
        }
    }

    /// `remove` for an entry whose index says it is at run position count `at`.
    fn remove_from_run(&mut self, at: usize, entry: &TimerEntry) -> bool {
        let k = at.wrapping_sub(self.run_base) & RUN_MASK;
        // A position from another heap's run may be in range here: the identity check makes
        // that `false`.
        match self.run.get(k).and_then(|slot| slot.entry.as_deref()) {
            Some(queued) if std::ptr::eq(queued, entry) => {}
            _ => return false,
        }
        if k == 0 {
            drop(self.pop_run_front()); // marks it unqueued
            return true;
        }
        entry.index.store(NOT_QUEUED, Relaxed);
        if k == self.run.len() - 1 {
            self.run.pop_back();
            self.pop_dead_back();
        } else {
            // From the middle: a tombstone (its `Arc` goes now).
            self.run[k].entry = None;
            self.run_dead += 1;
            if self.run_dead > RUN_COMPACT_MIN && self.run_dead * 2 > self.run.len() {
                self.compact_run();
            }
        }
        true
    }

    /// Pops the run's front (which is live) and any tombstones behind it.
    fn pop_run_front(&mut self) -> Arc<TimerEntry> {
        let slot = self
            .run
            .pop_front()
            .expect("pop_run_front: the run is empty");
        self.run_base = self.run_base.wrapping_add(1) & RUN_MASK;
        while self.run.front().is_some_and(|s| s.entry.is_none()) {
            self.run.pop_front();
            self.run_base = self.run_base.wrapping_add(1) & RUN_MASK;
            self.run_dead -= 1;
        }
        let entry = slot.entry.expect("the run's front is never a tombstone");
        entry.index.store(NOT_QUEUED, Relaxed);
        entry
    }

    /// Pops the tombstones at the run's back.
    fn pop_dead_back(&mut self) {
        while self.run.back().is_some_and(|s| s.entry.is_none()) {
            self.run.pop_back();
            self.run_dead -= 1;
        }
    }

    /// Drops the run's tombstones and renumbers its entries from 0.
    #[cold]
    fn compact_run(&mut self) {
        self.run.retain(|slot| slot.entry.is_some());
        self.run_base = 0;
        self.run_dead = 0;
        for (k, slot) in self.run.iter().enumerate() {
            if let Some(entry) = &slot.entry {
                entry.index.store(RUN_BIT | k, Relaxed);
            }
        }
    }

    /// Removes the slot at `i`: the last slot fills the hole and is sifted into place.
    fn remove_at(&mut self, i: usize) -> Arc<TimerEntry> {
        let removed = self.slots.swap_remove(i);
        removed.entry.index.store(NOT_QUEUED, Relaxed);
        if i < self.slots.len() {
            // The former last slot is at `i` now; it may belong above or below.
            if i > 0 && self.slots[i].deadline < self.slots[(i - 1) / ARITY].deadline {
                self.sift_up(i);
            } else {
                self.sift_down(i);
            }
        }
        removed.entry
    }

    /// Moves the slot at `i` towards the root until its parent is not later. Records the final
    /// position of every slot it moves.
    fn sift_up(&mut self, mut i: usize) {
        let deadline = self.slots[i].deadline;
        while i > 0 {
            let parent = (i - 1) / ARITY;
            // `>=`: equal deadlines stop early, which saves moves (and keeps ties in insertion
            // order along one path, though not in general).
            if deadline >= self.slots[parent].deadline {
                break;
            }
            self.slots.swap(i, parent);
            self.slots[i].entry.index.store(i, Relaxed);
            i = parent;
        }
        self.slots[i].entry.index.store(i, Relaxed);
    }

    /// Moves the slot at `i` towards the leaves until no child is earlier. Records the final
    /// position of every slot it moves.
    fn sift_down(&mut self, mut i: usize) {
        let n = self.slots.len();
        let deadline = self.slots[i].deadline;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            // The earliest of up to four children.
            let mut min = first;
            let mut min_deadline = self.slots[first].deadline;
            for c in first + 1..(first + ARITY).min(n) {
                let d = self.slots[c].deadline;
                if d < min_deadline {
                    min = c;
                    min_deadline = d;
                }
            }
            if min_deadline >= deadline {
                break;
            }
            self.slots.swap(i, min);
            self.slots[i].entry.index.store(i, Relaxed);
            i = min;
        }
        self.slots[i].entry.index.store(i, Relaxed);
    }

    /// Checks the heap property, the deadline copies and every recorded index (of a heap
    /// filled by `insert`: `insert_at` copies another deadline than the entry's).
    #[cfg(all(test, not(loom)))]
    fn assert_invariants(&self) {
        for (i, slot) in self.slots.iter().enumerate() {
            assert_eq!(slot.deadline, slot.entry.deadline, "stale deadline at {i}");
            assert_eq!(slot.entry.index.load(Relaxed), i, "stale index at {i}");
            if i > 0 {
                let parent = &self.slots[(i - 1) / ARITY];
                assert!(parent.deadline <= slot.deadline, "heap order broken at {i}");
            }
        }
        let ends = [self.run.front(), self.run.back()];
        assert!(
            ends.iter().flatten().all(|s| s.entry.is_some()),
            "a tombstone at an end"
        );
        let dead = self.run.iter().filter(|s| s.entry.is_none()).count();
        assert_eq!(dead, self.run_dead, "tombstone count");
        for (k, slot) in self.run.iter().enumerate() {
            if k > 0 {
                assert!(
                    self.run[k - 1].deadline <= slot.deadline,
                    "run order broken at {k}"
                );
            }
            if let Some(entry) = &slot.entry {
                assert_eq!(slot.deadline, entry.deadline, "stale run deadline at {k}");
                let at = self.run_base.wrapping_add(k) & RUN_MASK;
                assert_eq!(
                    entry.index.load(Relaxed),
                    RUN_BIT | at,
                    "stale run index at {k}"
                );
            }
        }
    }
}

impl Drop for TimerHeap {
    /// Marks every remaining entry unqueued: an entry's `is_queued` never outlives its heap.
    fn drop(&mut self) {
        self.unqueue_all();
    }
}

impl fmt::Debug for TimerHeap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHeap")
            .field("len", &self.len())
            .field("next_deadline", &self.next_deadline())
            .finish()
    }
}

/// A hierarchical timing wheel, built to measure against the heap (declared here rather than in
/// `time/mod.rs` so that it can reuse `TimerEntry`'s position word; test builds only). Not
/// under Miri: it is not shipped, and its tests are sized for timing, not for an interpreter.
#[cfg(all(test, not(loom), not(miri)))]
#[path = "wheel_proto.rs"]
mod wheel_proto;

#[cfg(all(test, not(loom)))]
mod test_rng {
    //! A tiny deterministic PRNG for tests and the timer benchmark (no dev-dependency needed).

    /// SplitMix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", 2014).
    pub(crate) struct Rng(u64);

    impl Rng {
        /// A generator seeded with `seed`.
        pub(crate) fn new(seed: u64) -> Self {
            Self(seed)
        }

        /// The next 64 random bits.
        pub(crate) fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        /// A value in `lo..hi` (slightly biased for huge ranges; fine for tests).
        pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
            lo + self.next_u64() % (hi - lo)
        }

        /// `true` with probability `percent`/100.
        #[cfg_attr(miri, allow(dead_code))] // used by `wheel_proto`, which Miri skips
        pub(crate) fn chance(&mut self, percent: u64) -> bool {
            self.next_u64() % 100 < percent
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::test_rng::Rng;
    use super::*;
    use std::collections::BTreeMap;
    use std::task::Wake;

    fn pop_all(heap: &mut TimerHeap, now: u64) -> Vec<u64> {
        let mut out = Vec::new();
        while let Some(e) = heap.pop_expired(now) {
            assert!(!e.is_queued());
            out.push(e.deadline());
            heap.assert_invariants();
        }
        out
    }

    #[test]
    fn timers_expire_in_deadline_order() {
        let mut rng = Rng::new(1);
        let mut heap = TimerHeap::new();
        // (100 under Miri, which interprets every sift, and `pop_all`'s invariant check after
        // each pop makes this quadratic: 500 took 71 s of CI's miri step, 200 14 s; 100 still
        // sifts through four levels of the 4-ary heap.)
        let n = if cfg!(miri) { 100 } else { 5_000 };
        let mut deadlines: Vec<u64> = (0..n).map(|_| rng.range(1, 1_000_000)).collect();
        for &d in &deadlines {
            heap.insert(TimerEntry::new(d));
        }
        heap.assert_invariants();
        deadlines.sort_unstable();
        assert_eq!(heap.next_deadline(), Some(deadlines[0]));
        assert_eq!(pop_all(&mut heap, u64::MAX), deadlines);
        assert!(heap.is_empty());
        assert_eq!(heap.next_deadline(), None);
    }

    #[test]
    fn nothing_expires_before_its_deadline() {
        let mut heap = TimerHeap::new();
        for d in [30, 10, 20] {
            heap.insert(TimerEntry::new(d));
        }
        assert!(heap.pop_expired(9).is_none());
        assert_eq!(heap.pop_expired(10).map(|e| e.deadline()), Some(10));
        assert!(heap.pop_expired(19).is_none());
        assert_eq!(pop_all(&mut heap, 30), [20, 30]);
    }

    /// `insert_at` orders and fires an entry by the deadline it is given (the fallback
    /// thread's clock), not by the entry's own, in the heap and in the run alike; `remove`
    /// still finds it.
    #[test]
    fn an_entry_inserted_at_another_deadline_is_ordered_by_that_one() {
        let mut heap = TimerHeap::new();
        let (late, early, gone) = (
            TimerEntry::new(5),
            TimerEntry::new(1_000),
            TimerEntry::new(7),
        );
        heap.insert_at(late.clone(), 300); // the run
        heap.insert_at(early.clone(), 100); // earlier than the run's back: the heap
        heap.insert_at(gone.clone(), 200);
        assert_eq!(heap.next_deadline(), Some(100));
        assert!(heap.remove(&gone));
        assert!(heap.pop_expired(99).is_none());
        let fired = heap.pop_expired(100).expect("due at 100");
        assert!(Arc::ptr_eq(&fired, &early));
        assert!(heap.pop_expired(299).is_none());
        let fired = heap.pop_expired(300).expect("due at 300");
        assert!(Arc::ptr_eq(&fired, &late));
        assert_eq!(late.deadline(), 5, "the entry's own deadline is unchanged");
    }

    #[test]
    fn removing_from_the_middle_keeps_the_heap_valid() {
        let mut rng = Rng::new(2);
        let mut heap = TimerHeap::new();
        // (100 under Miri: the invariant check after each removal makes this quadratic; 200
        // took 13 s of CI's miri step.)
        let n = if cfg!(miri) { 100 } else { 2_000 };
        let mut entries: Vec<_> = (0..n)
            .map(|_| TimerEntry::new(rng.range(0, 10_000)))
            .collect();
        for e in &entries {
            heap.insert(e.clone());
        }
        // Remove every other entry in a scrambled order, checking after each removal.
        let mut removed = Vec::new();
        while entries.len() > n / 2 {
            let e = entries.swap_remove(rng.range(0, entries.len() as u64) as usize);
            assert!(heap.remove(&e));
            assert!(!e.is_queued());
            heap.assert_invariants();
            removed.push(e);
        }
        assert!(removed.iter().all(|e| !heap.remove(e)), "removed twice");
        let mut expect: Vec<u64> = entries.iter().map(|e| e.deadline()).collect();
        expect.sort_unstable();
        assert_eq!(pop_all(&mut heap, u64::MAX), expect);
    }

    #[test]
    fn a_removed_timer_can_be_inserted_again() {
        let mut heap = TimerHeap::new();
        let a = TimerEntry::new(5);
        let b = TimerEntry::new(7);
        heap.insert(a.clone());
        heap.insert(b.clone());
        assert!(heap.remove(&a));
        assert_eq!(heap.next_deadline(), Some(7));
        heap.insert(a.clone());
        heap.assert_invariants();
        assert_eq!(heap.next_deadline(), Some(5));
        assert_eq!(pop_all(&mut heap, 10), [5, 7]);
    }

    #[test]
    fn remove_refuses_a_timer_of_another_heap() {
        let (mut h1, mut h2) = (TimerHeap::new(), TimerHeap::new());
        let a = TimerEntry::new(1);
        let b = TimerEntry::new(2);
        h1.insert(a.clone());
        h2.insert(b.clone());
        // Both sit at index 0 of their heaps: the identity check must tell them apart.
        assert!(!h1.remove(&b));
        assert!(!h2.remove(&a));
        assert!(!h1.remove(&TimerEntry::new(1)), "never inserted");
        assert_eq!((h1.len(), h2.len()), (1, 1));
    }

    #[test]
    #[should_panic(expected = "already in a heap")]
    fn inserting_a_queued_timer_panics() {
        let mut heap = TimerHeap::new();
        let a = TimerEntry::new(1);
        heap.insert(a.clone());
        heap.insert(a);
    }

    #[test]
    fn timers_with_equal_deadlines_all_expire_together() {
        let mut heap = TimerHeap::new();
        let same: Vec<_> = (0..100).map(|_| TimerEntry::new(50)).collect();
        for e in &same {
            heap.insert(e.clone());
        }
        heap.insert(TimerEntry::new(49));
        heap.insert(TimerEntry::new(51));
        // Remove a few ties from the middle too.
        for e in same.iter().step_by(7) {
            assert!(heap.remove(e));
            heap.assert_invariants();
        }
        assert_eq!(pop_all(&mut heap, 49), [49]);
        let at_50 = pop_all(&mut heap, 50);
        assert_eq!(at_50.len(), 100 - same.iter().step_by(7).count());
        assert!(at_50.iter().all(|&d| d == 50));
        assert_eq!(pop_all(&mut heap, 51), [51]);
    }

    #[test]
    fn random_operations_agree_with_a_btreemap_model() {
        agree_with_a_btreemap_model(3, |rng, now| now + rng.range(0, 1_000), false);
    }

    /// A server's timeouts: deadlines a fixed span ahead (so mostly in order, into the run),
    /// with a little jitter (so some go to the heap), cancelled mostly oldest first.
    #[test]
    fn server_timeouts_agree_with_a_btreemap_model() {
        agree_with_a_btreemap_model(4, |rng, now| now + 30_000 + rng.range(0, 20), true);
    }

    /// 100k operations: insert (at `deadline(rng, now)`), remove a live timer (a random one,
    /// or with `oldest_first` usually the one inserted longest ago), remove a dead one, pop at
    /// an advancing clock. The model orders by (deadline, id); ties may pop in any order, so
    /// pops are compared by deadline and then removed from the model by identity.
    fn agree_with_a_btreemap_model(
        seed: u64,
        mut deadline: impl FnMut(&mut Rng, u64) -> u64,
        oldest_first: bool,
    ) {
        let mut rng = Rng::new(seed);
        let mut heap = TimerHeap::new();
        let mut model: BTreeMap<(u64, usize), Arc<TimerEntry>> = BTreeMap::new();
        let mut live: Vec<(u64, usize)> = Vec::new();
        let mut dead: Vec<Arc<TimerEntry>> = Vec::new();
        let mut now = 0u64;
        // (1,000 under Miri, which interprets every operation: ~10 s each.)
        for op in 0..if cfg!(miri) { 1_000usize } else { 100_000 } {
            match rng.range(0, 100) {
                0..45 => {
                    let d = deadline(&mut rng, now);
                    let e = TimerEntry::new(d);
                    heap.insert(e.clone());
                    model.insert((d, op), e);
                    live.push((d, op));
                }
                45..70 if !live.is_empty() => {
                    let key = if oldest_first && !rng.chance(10) {
                        live.remove(0)
                    } else {
                        live.swap_remove(rng.range(0, live.len() as u64) as usize)
                    };
                    if let Some(e) = model.remove(&key) {
                        assert!(heap.remove(&e));
                        assert!(!e.is_queued());
                        dead.push(e);
                    } else {
                        // Already popped: `live` is pruned lazily.
                    }
                }
                70..75 if !dead.is_empty() => {
                    let e = &dead[rng.range(0, dead.len() as u64) as usize];
                    assert!(!heap.remove(e));
                }
                _ => {
                    now += rng.range(0, 40);
                    while let Some(e) = heap.pop_expired(now) {
                        let (&(d, _), _) = model.first_key_value().expect("heap has extra timer");
                        assert_eq!(e.deadline(), d);
                        assert!(d <= now);
                        // Same deadline; find this very entry among the ties.
                        let key = model
                            .range((d, 0)..=(d, usize::MAX))
                            .find(|(_, m)| Arc::ptr_eq(m, &e))
                            .map(|(k, _)| *k)
                            .expect("popped timer is not in the model");
                        assert!(model.remove(&key).is_some());
                    }
                    assert!(model.first_key_value().is_none_or(|(&(d, _), _)| d > now));
                }
            }
            assert_eq!(heap.len(), model.len());
            assert_eq!(
                heap.next_deadline(),
                model.first_key_value().map(|(k, _)| k.0)
            );
            if op % 1_000 == 0 {
                heap.assert_invariants();
            }
            if dead.len() > 1_000 {
                dead.clear();
            }
        }
        heap.assert_invariants();
    }

    #[test]
    fn timeouts_in_deadline_order_stay_out_of_the_heap_and_leave_in_any_order() {
        let mut rng = Rng::new(5);
        let mut heap = TimerHeap::new();
        // (120 under Miri, where the invariant check after each removal makes this quadratic:
        // enough for the run's tombstones to pass `RUN_COMPACT_MIN` and be compacted.)
        let n = if cfg!(miri) { 120 } else { 2_000 };
        // Non-decreasing, with ties.
        let mut entries: Vec<_> = (0..n).map(|i| TimerEntry::new(100 + i / 3)).collect();
        for e in &entries {
            heap.insert(e.clone());
        }
        assert!(heap.slots.is_empty(), "an in-order timer went to the heap");
        heap.assert_invariants();
        // Remove three quarters in a scrambled order (front, back and middle), checking the
        // next deadline and the invariants after each, and that tombstones are compacted.
        while entries.len() > n as usize / 4 {
            let e = entries.swap_remove(rng.range(0, entries.len() as u64) as usize);
            assert!(heap.remove(&e));
            assert!(!e.is_queued());
            assert!(!heap.remove(&e), "removed twice");
            assert_eq!(Arc::strong_count(&e), 1, "a tombstone kept its timer");
            heap.assert_invariants();
            let min = entries.iter().map(|e| e.deadline()).min();
            assert_eq!(heap.next_deadline(), min);
            assert_eq!(heap.len(), entries.len());
            assert!(heap.run.len() <= 2 * heap.len() + RUN_COMPACT_MIN + 1);
        }
        // A timer earlier than the run's back goes to the heap; pops interleave both.
        heap.insert(TimerEntry::new(0));
        heap.insert(TimerEntry::new(u64::MAX / 2));
        assert_eq!(heap.slots.len(), 1);
        let mut expect: Vec<u64> = entries.iter().map(|e| e.deadline()).collect();
        expect.extend([0, u64::MAX / 2]);
        expect.sort_unstable();
        assert_eq!(pop_all(&mut heap, u64::MAX), expect);
        assert!(heap.is_empty() && heap.run.is_empty());
    }

    #[test]
    fn drain_empties_the_heap_and_unqueues_every_timer() {
        let mut heap = TimerHeap::new();
        let entries: Vec<_> = (0..100).map(|d| TimerEntry::new(d * 3 % 17)).collect();
        for e in &entries {
            heap.insert(e.clone());
        }
        // Drop the iterator after one item: the rest must be unqueued all the same.
        let first = heap.drain().next().unwrap();
        assert!(heap.is_empty());
        assert!(!first.is_queued());
        assert!(entries.iter().all(|e| !e.is_queued()));

        // Handing timers to another heap.
        let mut from = TimerHeap::new();
        for e in &entries {
            from.insert(e.clone());
        }
        let mut to = TimerHeap::new();
        for e in from.drain() {
            to.insert(e);
        }
        to.assert_invariants();
        assert_eq!(to.len(), entries.len());
    }

    #[test]
    fn dropping_the_heap_unqueues_its_timers() {
        let e = TimerEntry::new(1);
        {
            let mut heap = TimerHeap::new();
            heap.insert(e.clone());
            assert!(e.is_queued());
        }
        assert!(!e.is_queued());
        assert_eq!(Arc::strong_count(&e), 1);
    }

    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Release);
        }
    }

    #[test]
    fn firing_a_popped_timer_wakes_its_poller() {
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let e = TimerEntry::new(10);
        let mut heap = TimerHeap::new();
        heap.insert(e.clone());
        assert!(e.poll_elapsed(&mut cx).is_pending());
        let popped = heap.pop_expired(10).unwrap();
        popped.fire();
        assert!(flag.0.load(Acquire), "not woken");
        assert!(e.is_fired());
        assert!(e.poll_elapsed(&mut cx).is_ready());
    }

    #[test]
    fn a_recycled_entry_comes_back_fresh_and_without_its_old_waker() {
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let e = TimerEntry::new_reusing(10);
        let mut heap = TimerHeap::new();
        heap.insert(e.clone());
        assert!(e.poll_elapsed(&mut cx).is_pending());
        heap.pop_expired(10).unwrap().fire();
        assert!(flag.0.swap(false, Acquire));
        let old = Arc::as_ptr(&e);
        TimerEntry::recycle(e);
        drop(waker);
        assert_eq!(Arc::strong_count(&flag), 1, "a spare kept its waker");

        let again = TimerEntry::new_reusing(20);
        assert_eq!(Arc::as_ptr(&again), old, "the spare was not reused");
        assert_eq!(again.deadline(), 20);
        assert!(!again.is_fired() && !again.is_queued());
        heap.insert(again.clone());
        assert!(heap.pop_expired(19).is_none());
        heap.pop_expired(20).unwrap().fire();
        assert!(!flag.0.load(Acquire), "the old waker was woken");

        // A shared entry (its firer or heap still holds it) is not kept.
        let shared = TimerEntry::new_reusing(30);
        let keep = shared.clone();
        TimerEntry::recycle(shared);
        assert!(!Arc::ptr_eq(&TimerEntry::new_reusing(40), &keep));
    }
}
