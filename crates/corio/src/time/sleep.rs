//! `Sleep`: a future that completes at a deadline, on the runtime's per-worker timer heaps.
//!
//! The first poll puts a timer entry in the heap of the worker it runs on (or, off the
//! workers, worker 0's; with no runtime at all, the fallback timer thread's). Whoever looks for
//! work on that worker — its owner each round, a searching worker, or the one sleeping in the
//! driver until the nearest deadline — fires it, which wakes the task. Dropping a `Sleep`
//! before it fires removes its entry, so cancelled timers (the usual fate of a timeout) leave
//! nothing behind.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use super::fallback;
use super::heap::TimerEntry;
use crate::runtime::{Shared, context};

/// A future that completes at a deadline. Made by [`sleep_async`](super::sleep_async) or
/// [`sleep_until_async`](super::sleep_until_async).
#[must_use = "futures do nothing unless polled"]
pub struct Sleep {
    deadline: Instant,
    timer: Option<Registered>,
}

enum Registered {
    /// In worker `index`'s heap of a runtime.
    Runtime {
        shared: Arc<Shared>,
        index: usize,
        entry: Arc<TimerEntry>,
    },
    /// With the fallback timer thread.
    Fallback(Arc<TimerEntry>),
}

impl Sleep {
    pub(crate) fn until(deadline: Instant) -> Sleep {
        Sleep {
            deadline,
            timer: None,
        }
    }

    /// The instant this sleep completes at.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the deadline has passed.
    pub fn is_elapsed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// `register` with the fallback timer thread: no runtime, or one shutting down.
    fn register_fallback(&mut self, cx: &mut Context<'_>) {
        let entry = fallback::register(self.deadline, cx.waker());
        self.timer = Some(Registered::Fallback(entry));
    }

    fn register(&mut self, cx: &mut Context<'_>) {
        // Not preempted while it holds the heap's lock or the driver's (`runtime/preempt.rs`,
        // "The rule"): a coroutine of this thread that then took it would block the worker for
        // ever. A poll inside `block_on` holds the counter already; one outside it does not.
        let _no_preempt = crate::runtime::preempt::guard();
        let Some(shared) = context::current_shared().filter(|s| !s.is_shutdown()) else {
            return self.register_fallback(cx);
        };
        let index = context::with_worker(|w| match w {
            Some(w) if Arc::ptr_eq(w.shared(), &shared) => w.index(),
            _ => 0,
        });
        let deadline = super::nanos_since(shared.epoch, self.deadline);
        let entry = TimerEntry::new_reusing(deadline);
        entry.register(cx.waker());
        let earliest = {
            let remote = &shared.workers[index];
            let mut heap = remote.timers.lock().unwrap_or_else(|e| e.into_inner());
            // Again under the lock: the shutdown may have begun since the check above, and
            // then its drain (`Remote::drain`, which hands the heap's timers to the fallback
            // thread under this lock, after the flag is set) may be over, and a timer put in
            // now would never fire: a plain thread in `Runtime::block_on` or `enter` slept
            // for ever (`tests/time_tokio_suite.rs`, `sleeps_registered_from_plain_threads_
            // while_the_runtime_shuts_down_all_fire`). Seen here, the flag means the drain has
            // not taken this heap yet or has; either way the fallback thread is the place.
            if shared.is_shutdown() {
                None
            } else {
                heap.insert(entry.clone());
                let earliest =
                    deadline < remote.next_timer.load(std::sync::atomic::Ordering::SeqCst);
                if earliest {
                    remote
                        .next_timer
                        .store(deadline, std::sync::atomic::Ordering::SeqCst);
                }
                Some(earliest)
            }
        };
        let Some(earliest) = earliest else {
            drop(entry); // never in a heap: only this `Sleep` holds it
            return self.register_fallback(cx);
        };
        // Only a new earliest deadline of its heap needs the driver re-armed or the owner
        // told: a later one leaves every heap's `next_timer` as it was, and whoever watches
        // that earlier timer looks at the heap again when it fires or is cancelled (a server's
        // timeouts, each later than the last, skip this).
        if earliest {
            shared.timer_added(index, deadline);
        }
        self.timer = Some(Registered::Runtime {
            shared,
            index,
            entry,
        });
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if !context::budget_proceed() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.poll_deadline(cx)
    }
}

impl Sleep {
    /// `poll` without the budget: whether the deadline has passed, registering the timer (and
    /// `cx`'s waker) if not.
    pub(crate) fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.timer.is_none() && Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        self.poll_not_elapsed(cx)
    }

    /// Whether the deadline has passed, without registering anything: the timer has fired, or
    /// (not registered yet) the clock is past it. For `Timeout::poll`, before it polls its
    /// future.
    #[inline]
    pub(crate) fn has_elapsed(&self) -> bool {
        match &self.timer {
            Some(Registered::Runtime { entry, .. } | Registered::Fallback(entry)) => {
                entry.is_fired()
            }
            None => Instant::now() >= self.deadline,
        }
    }

    /// [`poll_deadline`](Self::poll_deadline) after [`has_elapsed`](Self::has_elapsed) said
    /// `false` a moment ago: an unregistered sleep registers without reading the clock again
    /// (if the deadline passed meanwhile, the timer fires at once).
    #[inline]
    pub(crate) fn poll_not_elapsed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match &self.timer {
            Some(Registered::Runtime { entry, .. } | Registered::Fallback(entry)) => {
                entry.poll_elapsed(cx)
            }
            None => {
                self.register(cx);
                Poll::Pending
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.cancel();
    }
}

impl Sleep {
    /// Makes this sleep complete at `deadline` instead, whether or not it has completed or
    /// been polled (tokio's `Sleep::reset`). A task waiting on it stays registered: it is
    /// woken at the new deadline (at once if that has passed) without polling the sleep
    /// again, as with tokio's. (Until 2026-12-06 the waker went with the old timer, and a
    /// future that reset its sleep at the end of a poll, an idle timeout pushed on by
    /// activity, was never woken.) A `Sleep` is `Unpin`, so this also serves a
    /// `Pin<&mut Sleep>` in a `select`-style loop.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// rt.block_on(async {
    ///     let mut sleep = corio::time::sleep_async(Duration::from_secs(3600));
    ///     let soon = Instant::now() + Duration::from_millis(5);
    ///     sleep.reset(soon);
    ///     (&mut sleep).await;
    ///     assert!(Instant::now() >= soon);
    ///     assert_eq!(sleep.deadline(), soon);
    /// });
    /// ```
    pub fn reset(&mut self, deadline: Instant) {
        // The waiting task's waker, taken from the old timer unless it fired (then the task
        // was woken already, and its next poll registers anew).
        let waiter = match &self.timer {
            Some(Registered::Runtime { entry, .. } | Registered::Fallback(entry))
                if !entry.is_fired() =>
            {
                entry.take_waker()
            }
            _ => None,
        };
        self.cancel();
        self.deadline = deadline;
        if let Some(waker) = waiter
            && self
                .poll_deadline(&mut Context::from_waker(&waker))
                .is_ready()
        {
            waker.wake(); // the new deadline has passed: the task is to see it
        }
    }

    /// Removes the timer from its heap if it has not fired (a cancelled timer leaves nothing
    /// behind, not even a stale deadline that would wake an idle runtime).
    fn cancel(&mut self) {
        // As in `register`: a `Sleep` reset or dropped by a coroutine's own code, outside
        // `block_on`, takes the same locks.
        let _no_preempt = crate::runtime::preempt::guard();
        match self.timer.take() {
            Some(Registered::Runtime {
                shared,
                index,
                entry,
            }) => {
                if !entry.is_fired() {
                    let remote = &shared.workers[index];
                    let removed = {
                        let mut heap = remote.timers.lock().unwrap_or_else(|e| e.into_inner());
                        let removed = heap.remove(&entry);
                        if removed {
                            // Under the lock, as every writer of `next_timer`.
                            let next = heap.next_deadline().unwrap_or(u64::MAX);
                            remote
                                .next_timer
                                .store(next, std::sync::atomic::Ordering::SeqCst);
                        } else if shared.is_shutdown() {
                            // Not in the heap: popped (it is firing), or, the runtime being
                            // shut down, taken over by the fallback timer thread with the rest
                            // of the heap (`Remote::drain`, under this lock): take it out there,
                            // or it would hold its waker until its deadline.
                            fallback::cancel(&entry);
                        }
                        removed
                    };
                    if removed {
                        // Cancelled timers leave nothing behind, not even a stale deadline
                        // that would wake an idle runtime.
                        shared.timer_removed(entry.deadline());
                    }
                }
                // Outside the lock (it drops the waker). A fired or firing entry that its
                // firer still holds is not unique, and is only dropped.
                TimerEntry::recycle(entry);
            }
            Some(Registered::Fallback(entry)) if !entry.is_fired() => fallback::cancel(&entry),
            _ => {}
        }
    }
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}
