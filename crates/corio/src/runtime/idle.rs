//! Which workers are asleep, and whether to wake one (Go's `wakep`/`pidleget`, tokio's
//! `idle.rs`).
//!
//! # Protocol
//!
//! One word counts *searching* workers (looking for work to steal, Go's "spinning" Ms) and
//! *unparked* workers; a mutex-protected list holds the parked ones.
//!
//! - New work that others could run (`notify_work`) wakes a parked worker only if nobody is
//!   searching: a searching worker will find it. The woken worker starts out searching.
//! - A worker may start searching only while fewer than half the unparked workers search, so
//!   an idle runtime does not burn every core spinning.
//! - A searcher that finds nothing spins for a moment before parking (`worker.rs`,
//!   `spin`) and stays counted as searching meanwhile, so work that appears then
//!   wakes nobody: the spinner takes it.
//! - A worker that stops searching because it found work, and was the last searcher, wakes
//!   another if movable work is queued somewhere (more may be behind what it found).
//! - A worker that parks re-checks every queue *after* publishing that it is parked (the
//!   `SeqCst` fences in `notify_work` and `Worker::park` pair up): either it sees the new work,
//!   or the notifier sees it parked and wakes it.

use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

const SEARCH_ONE: usize = 1;
const UNPARK_SHIFT: u32 = 16;
const UNPARK_ONE: usize = 1 << UNPARK_SHIFT;
const SEARCH_MASK: usize = UNPARK_ONE - 1;

pub(crate) struct Idle {
    state: AtomicUsize,
    num_workers: usize,
    sleepers: Mutex<Vec<usize>>,
}

fn searching(state: usize) -> usize {
    state & SEARCH_MASK
}

fn unparked(state: usize) -> usize {
    state >> UNPARK_SHIFT
}

impl Idle {
    pub(crate) fn new(num_workers: usize) -> Idle {
        assert!(num_workers < SEARCH_MASK, "corio: too many workers");
        Idle {
            state: AtomicUsize::new(num_workers * UNPARK_ONE),
            num_workers,
            sleepers: Mutex::new(Vec::with_capacity(num_workers)),
        }
    }

    fn should_wake(&self) -> bool {
        let s = self.state.load(SeqCst);
        searching(s) == 0 && unparked(s) < self.num_workers
    }

    /// A parked worker to wake for new work, already counted as unparked and searching.
    pub(crate) fn worker_to_notify(&self) -> Option<usize> {
        if !self.should_wake() {
            return None;
        }
        let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        if !self.should_wake() {
            return None;
        }
        let index = sleepers.pop()?;
        self.state.fetch_add(SEARCH_ONE + UNPARK_ONE, SeqCst);
        Some(index)
    }

    /// Whether this worker may start searching (at most half the unparked workers do).
    pub(crate) fn transition_worker_to_searching(&self) -> bool {
        let s = self.state.load(SeqCst);
        if 2 * searching(s) >= unparked(s).max(1) {
            return false;
        }
        self.state.fetch_add(SEARCH_ONE, SeqCst);
        true
    }

    /// The worker stopped searching; true if it was the last one.
    pub(crate) fn transition_worker_from_searching(&self) -> bool {
        let prev = self.state.fetch_sub(SEARCH_ONE, SeqCst);
        debug_assert!(searching(prev) > 0);
        searching(prev) == 1
    }

    /// Records `index` as parked; true if it was the last searcher.
    pub(crate) fn transition_worker_to_parked(&self, index: usize, is_searching: bool) -> bool {
        let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        let dec = UNPARK_ONE + if is_searching { SEARCH_ONE } else { 0 };
        let prev = self.state.fetch_sub(dec, SeqCst);
        sleepers.push(index);
        is_searching && searching(prev) == 1
    }

    /// Takes `index` off the parked list if it is there (it woke by itself, or someone wants
    /// that particular worker); true if it was.
    pub(crate) fn unpark_worker_by_id(&self, index: usize) -> bool {
        let mut sleepers = self.sleepers.lock().unwrap_or_else(|e| e.into_inner());
        match sleepers.iter().position(|&i| i == index) {
            Some(pos) => {
                sleepers.swap_remove(pos);
                self.state.fetch_add(UNPARK_ONE, SeqCst);
                true
            }
            None => false,
        }
    }

    /// Workers not parked.
    pub(crate) fn num_unparked(&self) -> usize {
        unparked(self.state.load(SeqCst))
    }

    /// Whether a worker is parked or searching: one that would take work queued now.
    pub(crate) fn has_idle_worker(&self) -> bool {
        let s = self.state.load(SeqCst);
        searching(s) > 0 || unparked(s) < self.num_workers
    }

    /// Workers searching for work.
    pub(crate) fn num_searching(&self) -> usize {
        searching(self.state.load(SeqCst))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_half_the_unparked_workers_may_search() {
        let idle = Idle::new(4);
        assert!(idle.transition_worker_to_searching());
        assert!(idle.transition_worker_to_searching());
        assert!(!idle.transition_worker_to_searching());
    }

    #[test]
    fn notify_wakes_a_sleeper_only_when_nobody_searches() {
        let idle = Idle::new(2);
        assert!(!idle.transition_worker_to_parked(1, false));
        assert!(idle.transition_worker_to_searching());
        assert_eq!(
            idle.worker_to_notify(),
            None,
            "a searcher will find the work"
        );
        assert!(idle.transition_worker_from_searching());
        assert_eq!(idle.worker_to_notify(), Some(1));
        assert_eq!(idle.num_searching(), 1);
        assert_eq!(idle.num_unparked(), 2);
    }
}
