//! The global run queue (Go's `sched.runq`): where work goes that belongs to no P yet.
//!
//! # The problem
//!
//! Some runnable tasks have no P to go to: tasks spawned or woken from a thread that is not a
//! worker, the half-ring batches that a full local queue sheds ([`Overflow`]), and, at start-up,
//! the main coroutine. Every worker must be able to take from this queue, and an idle worker must
//! be able to ask "is there anything?" cheaply and often (DESIGN decision 7: the global queue is
//! checked on a fixed tick and whenever a worker looks for work).
//!
//! # The mechanism
//!
//! A `Mutex<VecDeque<T>>`, as in Go (`sched.lock` guards `sched.runq`), plus an [`AtomicUsize`]
//! copy of its length so that [`Inject::is_empty`] and [`Inject::len`] are one load without the
//! lock. A closed flag, also under the lock, turns pushes away during shutdown.
//!
//! 1. Every change to the deque happens with the lock held and ends by storing the deque's new
//!    length into `len`, still under the lock. `len` is therefore exact whenever the lock is free,
//!    and every operation re-derives it from the deque, so even a panic in the middle of a batch
//!    push (a caller's iterator) cannot leave it wrong for longer than one operation.
//! 2. Readers that only want to know whether to bother (`is_empty`, the fast paths of `pop` and
//!    `pop_batch_into`) load `len` and take the lock only if it is non-zero.
//! 3. [`Inject::pop_batch_into`] is Go's `globrunqget` (Go 1.21 `src/runtime/proc.go`): a worker
//!    takes its fair share, `len / workers + 1`, so that `workers` idle workers arriving together
//!    split the queue instead of the first one taking everything. The share is capped by the
//!    caller's `max` and by the room in the worker's local ring. One task is returned to run at
//!    once; the rest go into the local ring under the same lock acquisition.
//! 4. [`Inject::close`] sets the flag under the lock. After it returns, every [`Inject::push`] and
//!    [`Inject::push_batch`] hands its tasks back to the caller (an error carries the value,
//!    STYLE 13), so a spawn during shutdown can report failure instead of losing its task. Pops
//!    go on working, so shutdown can drain what is left.
//!
//! ## Orderings
//!
//! The mutex orders everything about the deque. `len` is a hint read without it, so it is stored
//! and loaded `Relaxed`: a reader that sees a non-zero `len` takes the lock (which synchronises
//! with the pusher) before touching any task, and one that sees zero simply moves on. Coherence
//! still guarantees that a push which happens-before a check is seen by it.
//!
//! What `len` cannot give is the Dekker guarantee a scheduler needs for parking: "a pusher that
//! finds no idle worker to wake" and "a worker that finds the queue empty and goes to sleep" must
//! not both happen. That is the scheduler's protocol, not this queue's: the parking worker
//! announces itself idle, issues a `SeqCst` fence, then re-checks `is_empty`; the pusher pushes,
//! issues a `SeqCst` fence, then looks for an idle worker to wake (Go: `wakep` after `runqput`,
//! and the re-check of `sched.runqsize` in `findRunnable` after dropping the P).
//!
//! ## Rejected alternatives
//!
//! - *A lock-free queue*: pushes here are rare next to local pushes (cross-thread spawns and
//!   wakes, and one push per 129 tasks on overflow) and pops are batched, so the lock is not the
//!   bottleneck; Go and tokio both use one. A lock-free MPMC queue would also need its own memory
//!   reclamation or a bounded size, and this queue must be unbounded: overflow may not fail.
//! - *An intrusive list through the task header* (tokio's choice): no allocation, and an O(1)
//!   splice of a whole overflow batch built outside the lock. It needs a link field in every task
//!   header and a `T` that is a task pointer; this queue is generic over `T`, and a `VecDeque`
//!   amortises to no allocation once it has grown to the program's high-water mark. Worth
//!   revisiting when the task header exists and a profile shows the overflow path.
//! - *Padding `len` onto its own cache line*: every push writes `len` anyway, so readers would
//!   miss on it after a push whether or not it shares a line with the lock word.
//!
//! ## Overflow into a closed queue
//!
//! The [`Overflow`] impl ignores the closed flag. Those tasks come from a running worker's own
//! ring, not from a new spawn; refusing them would mean dropping them on the spot, in the middle
//! of the worker's push. They stay in the queue, where shutdown's drain (or this queue's drop)
//! finds them.

use super::queue::{Local, Overflow};
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::Relaxed;
use crate::loom::sync::{Mutex, MutexGuard};

use std::collections::VecDeque;
use std::fmt;
use std::sync::PoisonError;

/// The global run queue, shared by all workers. Dropping it drops the tasks still in it.
pub(crate) struct Inject<T> {
    /// The tasks and the closed flag. Guarded by the mutex.
    synced: Mutex<Synced<T>>,
    /// `synced.queue.len()`. Written only with the lock held (protocol step 1); read without it.
    len: AtomicUsize,
    /// The number of workers (Ps) that share this queue; divides it in `pop_batch_into`.
    /// Immutable.
    workers: usize,
}

/// The part of [`Inject`] behind its lock.
struct Synced<T> {
    /// Oldest first.
    queue: VecDeque<T>,
    /// Set once by [`Inject::close`]; never cleared.
    closed: bool,
}

impl<T> Inject<T> {
    /// An empty, open queue shared by `workers` workers.
    ///
    /// # Panics
    ///
    /// If `workers` is zero.
    #[track_caller]
    pub(crate) fn new(workers: usize) -> Self {
        assert!(
            workers > 0,
            "Inject::new: a runtime has at least one worker"
        );
        Self {
            synced: Mutex::new(Synced {
                queue: VecDeque::new(),
                closed: false,
            }),
            len: AtomicUsize::new(0),
            workers,
        }
    }

    /// Pushes `task` at the back. Hands it back if the queue is closed.
    pub(crate) fn push(&self, task: T) -> Result<(), T> {
        let mut synced = self.lock();
        if synced.closed {
            return Err(task);
        }
        synced.queue.push_back(task);
        self.set_len(&synced);
        Ok(())
    }

    /// Pushes every task of `tasks` at the back, in order, under one lock acquisition. Hands the
    /// untouched iterator back if the queue is closed.
    #[allow(
        dead_code,
        reason = "part of the structure's API, exercised by its tests"
    )]
    pub(crate) fn push_batch<I: IntoIterator<Item = T>>(
        &self,
        tasks: I,
    ) -> Result<(), I::IntoIter> {
        let tasks = tasks.into_iter();
        let mut synced = self.lock();
        if synced.closed {
            return Err(tasks);
        }
        self.extend_locked(&mut synced, tasks);
        Ok(())
    }

    /// Pops the oldest task. Takes the lock only if the queue looks non-empty.
    pub(crate) fn pop(&self) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let mut synced = self.lock();
        let task = synced.queue.pop_front();
        self.set_len(&synced);
        task
    }

    /// Takes a fair share of the queue (Go's `globrunqget`, protocol step 3): returns the oldest
    /// task to run now and moves the next ones into `dst`, oldest first.
    ///
    /// The share is `min(len / workers + 1, len, max, dst.remaining_slots() + 1)` tasks, counting
    /// the returned one (which needs no slot). Go also caps it at half a local ring, so that the
    /// worker's next pushes do not overflow straight back here: pass
    /// `max = LOCAL_QUEUE_CAPACITY / 2` for Go's behaviour. `None` if the queue is empty or
    /// `max` is zero. Works on a closed queue (shutdown drains it).
    pub(crate) fn pop_batch_into(&self, dst: &mut Local<T>, max: usize) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let mut synced = self.lock();
        let len = synced.queue.len();
        let n = (len / self.workers + 1)
            .min(len)
            .min(max)
            .min(dst.remaining_slots() + 1);
        if n == 0 {
            return None;
        }
        let task = synced.queue.pop_front();
        // `n - 1 <= remaining_slots()`, which never over-reports: `push_back_batch` cannot panic.
        dst.push_back_batch(synced.queue.drain(..n - 1));
        self.set_len(&synced);
        task
    }

    /// The number of queued tasks, without the lock: exact when no push or pop is in progress,
    /// otherwise the value before or after it.
    pub(crate) fn len(&self) -> usize {
        // Relaxed: a hint (see "Orderings"); no task is read through it.
        self.len.load(Relaxed)
    }

    /// Whether the queue is empty, without the lock (see [`len`](Self::len)).
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes the queue: from now on pushes hand their tasks back (protocol step 4). Returns
    /// `true` if this call closed it, `false` if it was closed already.
    pub(crate) fn close(&self) -> bool {
        let mut synced = self.lock();
        !std::mem::replace(&mut synced.closed, true)
    }

    /// Whether [`close`](Self::close) has been called.
    #[allow(
        dead_code,
        reason = "part of the structure's API, exercised by its tests"
    )]
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Takes the lock. A poisoned lock is taken anyway: the only code that can panic while
    /// holding it is a caller's iterator in a batch push, which leaves a valid deque behind, and
    /// `len` is re-derived from the deque by the next operation (protocol step 1).
    fn lock(&self) -> MutexGuard<'_, Synced<T>> {
        self.synced.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `tasks` with the lock held, then updates `len`.
    fn extend_locked(
        &self,
        synced: &mut MutexGuard<'_, Synced<T>>,
        tasks: impl Iterator<Item = T>,
    ) {
        synced.queue.extend(tasks);
        self.set_len(synced);
    }

    /// Protocol step 1: mirrors the deque's length into `len`. Called with the lock held.
    fn set_len(&self, synced: &Synced<T>) {
        // Relaxed: only the lock holder writes `len`, and readers use it as a hint (see
        // "Orderings").
        self.len.store(synced.queue.len(), Relaxed);
    }
}

/// A full local queue sheds into the global one. Accepted even when closed: see "Overflow into a
/// closed queue".
impl<T> Overflow<T> for Inject<T> {
    fn push(&self, task: T) {
        let mut synced = self.lock();
        synced.queue.push_back(task);
        self.set_len(&synced);
    }

    fn push_batch<I: Iterator<Item = T>>(&self, iter: I) {
        let mut synced = self.lock();
        self.extend_locked(&mut synced, iter);
    }
}

impl<T> fmt::Debug for Inject<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inject")
            .field("len", &self.len())
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::runtime::sched::queue::{LOCAL_QUEUE_CAPACITY, local};
    use std::iter;
    use std::sync::atomic::Ordering::SeqCst;

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
        let inject = Inject::new(1);
        inject.push(0).unwrap();
        inject.push_batch(1..4).unwrap();
        inject.push(4).unwrap();
        assert_eq!(inject.len(), 5);
        assert_eq!(
            iter::from_fn(|| inject.pop()).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4]
        );
        assert!(inject.is_empty());
    }

    #[test]
    fn a_closed_queue_hands_the_task_back() {
        let inject = Inject::new(1);
        inject.push(1).unwrap();
        assert!(inject.close());
        assert!(
            !inject.close(),
            "second close reports it was closed already"
        );
        assert!(inject.is_closed());
        assert_eq!(inject.push(2), Err(2));
        // Pops go on working, so shutdown can drain.
        assert_eq!(inject.pop(), Some(1));
        assert_eq!(inject.pop(), None);
    }

    #[test]
    fn a_closed_queue_hands_the_batch_back_untouched() {
        let inject = Inject::new(1);
        inject.close();
        let rest = inject.push_batch(vec![1, 2, 3]).unwrap_err();
        assert_eq!(rest.collect::<Vec<_>>(), vec![1, 2, 3]);
        assert!(inject.is_empty());
    }

    #[test]
    fn pop_batch_into_takes_a_fair_share() {
        // Go's globrunqget: 10 tasks, 4 workers: 10 / 4 + 1 = 3.
        let inject = Inject::new(4);
        inject.push_batch(0..10).unwrap();
        let (mut local, _steal) = local();
        assert_eq!(inject.pop_batch_into(&mut local, usize::MAX), Some(0));
        assert_eq!(drain(&mut local), vec![1, 2]);
        assert_eq!(inject.len(), 7);
    }

    #[test]
    fn pop_batch_into_takes_everything_with_one_worker_up_to_max() {
        let inject = Inject::new(1);
        inject.push_batch(0..10).unwrap();
        let (mut local, _steal) = local();
        assert_eq!(inject.pop_batch_into(&mut local, 4), Some(0));
        assert_eq!(drain(&mut local), vec![1, 2, 3]);
        assert_eq!(inject.pop_batch_into(&mut local, 100), Some(4));
        assert_eq!(drain(&mut local), vec![5, 6, 7, 8, 9]);
        assert!(inject.is_empty());
    }

    #[test]
    fn pop_batch_into_fits_the_room_left_in_the_local_queue() {
        let inject = Inject::new(1);
        inject.push_batch(0..10).unwrap();
        let (mut local, _steal) = local();
        local.push_back_batch(100..100 + LOCAL_QUEUE_CAPACITY - 2);
        // Two free slots: three tasks, one of them returned.
        assert_eq!(inject.pop_batch_into(&mut local, usize::MAX), Some(0));
        assert_eq!(local.remaining_slots(), 0);
        assert_eq!(inject.len(), 7);
        // A full local queue still gets one task to run.
        assert_eq!(inject.pop_batch_into(&mut local, usize::MAX), Some(3));
        assert_eq!(inject.len(), 6);
        assert_eq!(drain(&mut local)[LOCAL_QUEUE_CAPACITY - 2..], [1, 2]);
    }

    #[test]
    fn pop_batch_into_from_an_empty_queue_or_with_max_zero_returns_none() {
        let inject = Inject::new(2);
        let (mut local, _steal) = local();
        assert_eq!(inject.pop_batch_into(&mut local, 10), None);
        inject.push(1).unwrap();
        assert_eq!(inject.pop_batch_into(&mut local, 0), None);
        assert_eq!(inject.len(), 1);
        assert!(local.is_empty());
    }

    #[test]
    fn a_full_local_queue_overflows_half_of_itself_into_the_inject() {
        let inject = Inject::new(1);
        let (mut local, _steal) = local();
        for i in 0..=LOCAL_QUEUE_CAPACITY {
            local.push_back(i, &inject);
        }
        assert_eq!(inject.len(), LOCAL_QUEUE_CAPACITY / 2 + 1);
        let mut expected: Vec<_> = (0..LOCAL_QUEUE_CAPACITY / 2).collect();
        expected.push(LOCAL_QUEUE_CAPACITY);
        assert_eq!(iter::from_fn(|| inject.pop()).collect::<Vec<_>>(), expected);
        drain(&mut local);
    }

    #[test]
    fn overflow_is_accepted_after_close() {
        let inject = Inject::new(1);
        inject.close();
        Overflow::push(&inject, 1);
        Overflow::push_batch(&inject, 2..4);
        assert_eq!(inject.len(), 3);
        assert_eq!(
            iter::from_fn(|| inject.pop()).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
    }

    #[test]
    fn dropping_the_queue_drops_its_tasks() {
        let drops = AtomicUsize::new(0);
        let inject = Inject::new(1);
        for _ in 0..3 {
            inject.push(Counted(&drops)).ok().unwrap();
        }
        drop(inject);
        assert_eq!(drops.load(SeqCst), 3);
    }

    #[test]
    fn a_panicking_batch_leaves_a_consistent_queue() {
        let inject = Inject::new(1);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = inject.push_batch((0..5).map(|i| if i == 3 { panic!("boom") } else { i }));
        }));
        assert!(result.is_err());
        // The lock was poisoned; the queue keeps working with what was pushed.
        inject.push(9).unwrap();
        assert_eq!(inject.len(), 4);
        assert_eq!(
            iter::from_fn(|| inject.pop()).collect::<Vec<_>>(),
            vec![0, 1, 2, 9]
        );
    }

    #[test]
    #[should_panic(expected = "at least one worker")]
    fn zero_workers_panics() {
        let _ = Inject::<u32>::new(0);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! Models of the lock-free `len` next to the lock, and of `close` racing with `push`.

    use super::*;
    use crate::runtime::sched::queue::local;
    use loom::sync::Arc;
    use loom::thread;
    use std::iter;

    #[test]
    fn loom_pushes_race_a_batch_pop_and_every_task_comes_out_once() {
        loom::model(|| {
            let inject = Arc::new(Inject::new(2));
            let pusher = {
                let inject = inject.clone();
                thread::spawn(move || {
                    inject.push(0).unwrap();
                    inject.push_batch([1, 2]).unwrap();
                })
            };
            let (mut local, _steal) = local();
            let mut seen: Vec<u32> = inject.pop_batch_into(&mut local, 8).into_iter().collect();
            seen.extend(iter::from_fn(|| local.pop()));
            pusher.join().unwrap();
            seen.extend(iter::from_fn(|| inject.pop()));
            seen.sort_unstable();
            assert_eq!(seen, vec![0, 1, 2]);
            assert!(inject.is_empty());
        });
    }

    #[test]
    fn loom_a_push_racing_close_is_either_queued_or_handed_back() {
        loom::model(|| {
            let inject = Arc::new(Inject::new(1));
            let closer = {
                let inject = inject.clone();
                thread::spawn(move || assert!(inject.close()))
            };
            let pushed = inject.push(7);
            closer.join().unwrap();
            match pushed {
                Ok(()) => assert_eq!(inject.pop(), Some(7)),
                Err(task) => {
                    assert_eq!(task, 7);
                    assert!(inject.is_empty());
                }
            }
            assert_eq!(inject.push(8), Err(8));
        });
    }
}
