//! The spawn slot: one task a worker spawned, run next by its spawner's worker, stolen by
//! others only after a grace period.
//!
//! # The problem
//!
//! A stackful coroutine that has started never changes thread (DESIGN decision 2), so the
//! worker that *starts* a new coroutine keeps it for life. When spawns went to the back of the
//! spawner's run queue, an idle worker woken for them stole them before the spawner's worker got
//! to them, and they stayed on the thief. In Go's prime sieve — main spawns each filter and at
//! once blocks receiving from it — up to 41 filters of 99 ended up on the other thread, and
//! every number that crossed such a link in the chain was a cross-thread wake-up (futex, cold
//! caches): the 2-worker sieve ran at half the speed of the 1-worker one.
//!
//! # The mechanism
//!
//! Go's `runnext` for `go f()` (`runqput(pp, newg, true)` in `newproc`): the new task goes to a
//! one-task slot of the spawning worker. When the spawner blocks, which it usually does soon
//! after spawning (on a channel the child will send on, on a join), its worker runs the child
//! next, on the same thread, in the cache the spawner just warmed. A task spawned while the slot
//! is occupied goes to the back of the run queue, where anyone may steal it at once: a spawning
//! loop still spreads its batch over idle workers, and tasks spawned in a row start in the
//! order they were spawned (Go's newest task displaces the older one into the queue instead,
//! so Go starts the last of a row first; corio's programs and tests rely on spawn order).
//!
//! Unlike the next-task slot (owner-only, for wake-ups), this slot can be stolen, because a
//! spawner that does not block — it computes, or spins waiting for the child — must not keep
//! the child from an idle worker. A thief takes the task only if the *same* task is still there
//! after its owner ran for a grace period ([`GRACE`] of the owner thread's CPU time): Go's
//! `runqgrab` sleeps 3 µs before stealing `runnext` from a running P, "to ensure pp isn't about
//! to run the g we are about to steal". The slot is the last place a thief looks (after every
//! run queue and the global queue).
//!
//! A task run from the slot inherits the spawner's time slice, as one run from the next-task
//! slot does (Go's `inheritTime`), so a chain of coroutines that each spawn the next and exit
//! cannot starve the run queue: sysmon ends the slice after 10 ms, and then the slot's task
//! counts as the back of the run queue (`worker.rs`, `pick_after_slice_end`).
//!
//! # The protocol
//!
//! The slot is an `AtomicPtr` to the task's header; a non-null pointer owns one `Notified`
//! reference. Every transfer of that reference is one atomic read-modify-write, so exactly one
//! party ends up with it: the owner's `put` (compare-exchange from null to the task: it fails,
//! and the owner keeps the task, if the slot is occupied), the owner's `take` (swap in null)
//! and a thief's `steal` (compare-exchange from the task it saw to null: it fails if the owner
//! took it meanwhile). `put` is `Release` and every successful take `Acquire`, so whoever takes
//! the reference sees the task as its spawner wrote it.
//!
//! "The same task" is the pointer together with a count of the tasks that left the slot: task
//! blocks are reused, so a spawner that spawns and joins child after child puts each one at the
//! address of the last. By the pointer alone, a thief added up the owner's CPU time over all of
//! them and stole a child its spawner was about to run (a spawn-and-join loop on 2 workers under
//! load lost 1–2 children of 200 in 22 runs of 300).

use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

use crate::task::core::Header;
use crate::task::raw::Notified;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicPtr, AtomicU64};

use crate::runtime::thread_clock::ThreadClock;

/// How much CPU time the slot's owner must have had, with the same task in its slot, before a
/// thief takes that task. Go sleeps 3 µs (`usleep(3)`) of wall time; on a loaded machine the
/// owner's thread may get no CPU at all in that time (a thief woken for the spawn even preempts
/// it), and its child would be stolen although it was about to run it. Counting the owner's own
/// CPU time (`pthread_getcpuclockid`) steals only from a spawner that really kept running.
pub(crate) const GRACE: Duration = Duration::from_micros(50);

/// How long a thief spins watching the slot before it starts sleeping between looks.
const SPIN: Duration = Duration::from_micros(5);

/// How often a thief looks again while the owner has not yet had its grace (the thief sleeps
/// in between; a Linux sleep this short lasts ~55 µs with the default timer slack).
const POLL: Duration = Duration::from_micros(20);

/// How many times a thief looks before it gives up for now (its loop comes back: the slot
/// still counts as work that others can steal).
const POLLS: u32 = 50;

/// One spawned task, run next by its owner or stolen after [`GRACE`].
pub(crate) struct SpawnSlot {
    task: AtomicPtr<Header>,
    /// How many times a task left the slot (taken or stolen). A thief tells "the same task is
    /// still there" by the pointer *and* this count: task blocks are reused, so a spawner that
    /// runs child after child finds each new one at the address of the last, and by the pointer
    /// alone a thief took the grace of all of them together as one task's.
    taken: AtomicU64,
}

impl SpawnSlot {
    pub(crate) fn new() -> SpawnSlot {
        SpawnSlot {
            task: AtomicPtr::new(ptr::null_mut()),
            taken: AtomicU64::new(0),
        }
    }

    /// A thief's attempt: takes the slot's task once the same task has sat there while the
    /// owner ran for [`GRACE`] of CPU time (`owner`: its worker thread's clock; without a
    /// reading, for `GRACE` of wall time). Gives
    /// up as soon as `other_work` says there is something else to steal (a spawning loop fills
    /// its run queue while its first task waits in the slot).
    pub(crate) fn steal_after_grace(
        &self,
        owner: &ThreadClock,
        other_work: impl Fn() -> bool,
    ) -> Option<Notified> {
        let seen = self.first_look()?;
        let start = owner.cpu_ns();
        let wall = Instant::now();
        let moved_on = || self.seen() != Some(seen) || other_work();
        // Spin a little first: a spawner that blocks takes its child within a microsecond or
        // two, and a sleep costs this worker a context switch and tens of microseconds.
        while wall.elapsed() < SPIN {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
            if moved_on() {
                return None;
            }
        }
        for _ in 0..POLLS {
            std::thread::sleep(POLL);
            if moved_on() {
                return None; // the owner took it, or there is other work first
            }
            let graced = match (start, owner.cpu_ns()) {
                (Some(start), Some(now)) => now.saturating_sub(start) >= GRACE.as_nanos() as u64,
                _ => wall.elapsed() >= GRACE,
            };
            if graced {
                return self.steal(seen);
            }
        }
        None
    }

    /// Puts `task` in the slot if it is empty (owner only); else gives it back.
    #[inline]
    pub(crate) fn put(&self, task: Notified) -> Result<(), Notified> {
        let ptr = task.into_raw();
        // Release on success: publishes the task to the Acquire of whoever takes it.
        match self
            .task
            .compare_exchange(ptr::null_mut(), ptr.as_ptr(), Release, Relaxed)
        {
            Ok(_) => Ok(()),
            // SAFETY: the exchange failed, so the reference `into_raw` gave up is still ours.
            Err(_) => Err(unsafe { Notified::from_raw(ptr) }),
        }
    }

    /// Takes the slot's task (owner, or anyone at shutdown).
    #[inline]
    pub(crate) fn take(&self) -> Option<Notified> {
        // A plain load first: the loop calls this every round, mostly on an empty slot.
        if self.task.load(Relaxed).is_null() {
            return None;
        }
        // Acquire: pairs with the Release of the `put` that stored it.
        let old = NonNull::new(self.task.swap(ptr::null_mut(), Acquire))?;
        self.count_taken();
        // SAFETY: as in `put`, the swap transferred the slot's reference to us.
        Some(unsafe { Notified::from_raw(old) })
    }

    /// The task in the slot now, as an identity for [`SpawnSlot::steal`] (the pointer is not
    /// dereferenced), with the count of tasks that had left the slot before it.
    ///
    /// The count is read before the pointer on the first look ([`SpawnSlot::first_look`]) and
    /// after it on later looks, so a task that left and a new one put at the same address in
    /// between always show a larger count: a removal bumps the count (`Release`) after it
    /// emptied the slot, and the new task's `put` (`Release`) comes after that removal; reading
    /// the new pointer (`Acquire`) makes the bump visible to the count read after it.
    #[inline]
    fn seen(&self) -> Option<(NonNull<Header>, u64)> {
        let task = NonNull::new(self.task.load(Acquire))?;
        // Acquire: pairs with the Release of `count_taken`.
        Some((task, self.taken.load(Acquire)))
    }

    /// A thief's first look: as [`SpawnSlot::seen`], with the count read first. (A count read
    /// after the pointer may already include the removal of the task seen, and a new task at
    /// the same address would then pass for it.)
    #[inline]
    fn first_look(&self) -> Option<(NonNull<Header>, u64)> {
        // Acquire: pairs with the Release of `count_taken`.
        let taken = self.taken.load(Acquire);
        NonNull::new(self.task.load(Acquire)).map(|task| (task, taken))
    }

    /// Counts a task leaving the slot; `Release` publishes the emptying before it.
    #[inline]
    fn count_taken(&self) {
        self.taken.fetch_add(1, Release);
    }

    /// Whether the slot holds a task.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.task.load(Relaxed).is_null()
    }

    /// Takes the task if it is still `seen` (a thief, after the grace period). The task may
    /// still be another one at the same address, put between the last look and the exchange:
    /// that costs the owner its child's locality once, never correctness — the exchange hands
    /// over exactly the slot's reference.
    fn steal(&self, (seen, _): (NonNull<Header>, u64)) -> Option<Notified> {
        // Acquire on success: pairs with the Release of the `put` that stored it.
        self.task
            .compare_exchange(seen.as_ptr(), ptr::null_mut(), Acquire, Relaxed)
            .ok()?;
        self.count_taken();
        // SAFETY: the exchange moved the slot's reference to us; `seen` is what it held.
        Some(unsafe { Notified::from_raw(seen) })
    }
}

impl Drop for SpawnSlot {
    fn drop(&mut self) {
        // Releases the reference of a task never run (the runtime is gone).
        drop(self.take());
    }
}
