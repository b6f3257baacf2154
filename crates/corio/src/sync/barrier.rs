//! `Barrier`: `n` parties wait until all have arrived, then all continue (std's `Barrier`).
//!
//! A count and a generation under a small lock, and a [`Notify`] to wake the waiting parties.
//! The last to arrive bumps the generation and calls `notify_waiters`; the others wait until the
//! generation moves, creating their `Notified` before reading it (the `WaitGroup` pattern).
//! A waiting party that is cancelled (its future dropped before the barrier opened) takes its
//! arrival back, so the barrier still needs exactly `n` live parties.

use super::notify::Notify;
use crate::loom::sync::Mutex;

#[derive(Debug)]
struct Round {
    arrived: usize,
    generation: u64,
}

/// Lets `n` coroutines, tasks or threads meet: each [`wait`](Self::wait)s until all `n` have.
///
/// ```
/// use std::sync::Arc;
/// use corio::sync::Barrier;
///
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let leaders = rt.run(|| {
///     let barrier = Arc::new(Barrier::new(10));
///     let hs: Vec<_> = (0..10)
///         .map(|_| {
///             let b = barrier.clone();
///             corio::go(move || b.wait().is_leader())
///         })
///         .collect();
///     hs.into_iter().map(|h| h.join().unwrap()).filter(|&leader| leader).count()
/// });
/// assert_eq!(leaders, 1, "one party per round is the leader");
/// ```
#[derive(Debug)]
pub struct Barrier {
    parties: usize,
    round: Mutex<Round>,
    notify: Notify,
}

/// What [`Barrier::wait`] returns: whether this party was the leader (the last to arrive; one
/// per round).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarrierWaitResult(bool);

impl BarrierWaitResult {
    /// Whether this party was the round's leader.
    pub fn is_leader(&self) -> bool {
        self.0
    }
}

/// Takes a cancelled party's arrival back (module docs).
struct Arrival<'a> {
    barrier: &'a Barrier,
    generation: u64,
    armed: bool,
}

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut round = self.barrier.lock();
            if round.generation == self.generation {
                round.arrived -= 1;
            }
        }
    }
}

impl Barrier {
    /// A barrier for `parties` parties (0 and 1 both mean nobody waits).
    pub fn new(parties: usize) -> Barrier {
        Barrier {
            parties,
            round: Mutex::new(Round {
                arrived: 0,
                generation: 0,
            }),
            notify: Notify::new(),
        }
    }

    fn lock(&self) -> crate::loom::sync::MutexGuard<'_, Round> {
        self.round.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until all parties have called `wait`, blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`wait_async`](Self::wait_async)`().await`.
    #[track_caller]
    pub fn wait(&self) -> BarrierWaitResult {
        crate::block_on(self.wait_async())
    }

    /// Waits until all parties have arrived, as a future. Dropping it before the barrier opens
    /// takes this party's arrival back.
    pub async fn wait_async(&self) -> BarrierWaitResult {
        let generation = {
            let mut round = self.lock();
            round.arrived += 1;
            if round.arrived >= self.parties {
                round.arrived = 0;
                round.generation += 1;
                drop(round);
                self.notify.notify_waiters();
                return BarrierWaitResult(true);
            }
            round.generation
        };
        let mut arrival = Arrival {
            barrier: self,
            generation,
            armed: true,
        };
        loop {
            // Before the generation read (the `WaitGroup` pattern, module docs).
            let notified = self.notify.notified_async();
            if self.lock().generation != generation {
                arrival.armed = false;
                return BarrierWaitResult(false);
            }
            notified.await;
        }
    }
}
