//! `Notify`: wake one waiter or all of them; also the core of `Condvar`, `WaitGroup` and
//! `Barrier`.
//!
//! # The mechanism
//!
//! A wait list ([`List`]) of [`Notified`] futures and, under the same lock, one stored permit.
//!
//! 1. `notify_one`: under the lock, unlink the head, mark it notified (`Got::One`) and wake it
//!    after unlocking; with nobody queued, store the permit (at most one) for the next waiter —
//!    unless the notifier was made without permits (`Condvar`, whose notifications are only for
//!    those already waiting).
//! 2. `notify_waiters`: under the lock, bump the generation, unlink every node marking it
//!    `Got::All`, wake them all after unlocking. The permit is left alone.
//! 3. A [`Notified`] reads the generation when it is *created*; its first poll (or
//!    [`Notified::enable`]) completes at once if the generation moved since (so "create the
//!    future, check the condition, await" cannot miss a `notify_waiters` between the check and
//!    the await), else takes the stored permit, else queues.
//! 4. Cancel: a dropped future unlinks its node; if it had been given a `notify_one` it never
//!    observed, it passes it on by step 1, so the notification is not lost.
//!
//! The generation is read without the lock at creation and bumped under it; both are `SeqCst`
//! so that a waiter's "read generation, then read my condition" and a notifier's "write the
//! condition, then bump the generation" cannot both miss (see `WaitGroup::wait_async`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::wait_list::{List, Node, Wakers};
use crate::loom::sync::Mutex as ListLock;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::SeqCst;
use crate::task::waker::RelaySlot;

/// What a node was given (module docs, steps 1–2).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Got {
    Nothing,
    One,
    All,
}

struct State {
    waiters: List<Got>,
    /// A `notify_one` that found nobody waiting (never set without `permits`).
    permit: bool,
}

/// Wakes tasks, coroutines and threads waiting for an event, as tokio's `Notify`:
/// [`notify_one`](Self::notify_one) wakes one waiter or, with none, lets the next one through;
/// [`notify_waiters`](Self::notify_waiters) wakes everybody waiting now.
///
/// ```
/// use std::sync::Arc;
/// use corio::sync::Notify;
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let ready = Arc::new(Notify::new());
///     let r = ready.clone();
///     let task = corio::spawn(async move { r.notified_async().await });
///     ready.notify_one(); // wakes the task, or lets it straight through if it has not waited yet
///     task.join().unwrap();
/// });
/// ```
pub struct Notify {
    /// Bumped by every `notify_waiters`, under `state`'s lock (module docs, step 3).
    generation: AtomicUsize,
    state: ListLock<State>,
    /// Whether a `notify_one` with nobody waiting is kept for the next waiter.
    permits: bool,
}

impl Default for Notify {
    fn default() -> Self {
        Notify::new()
    }
}

impl Notify {
    /// A notifier with no stored permit.
    pub fn new() -> Notify {
        Notify::with_permits(true)
    }

    pub(crate) fn with_permits(permits: bool) -> Notify {
        Notify {
            generation: AtomicUsize::new(0),
            state: ListLock::new(State {
                waiters: List::new(),
                permit: false,
            }),
            permits,
        }
    }

    fn lock(&self) -> crate::loom::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the longest waiter, or lets the next waiter through at once if none waits (at most
    /// one such permit is kept).
    pub fn notify_one(&self) {
        let mut wakers = Wakers::default();
        self.notify_one_locked(&mut self.lock(), &mut wakers);
        wakers.wake();
    }

    fn notify_one_locked(&self, state: &mut State, wakers: &mut Wakers) {
        match state.waiters.pop_front() {
            Some(mut head) => {
                head.data(|got| *got = Got::One);
                wakers.push(head.take_waker());
            }
            None => state.permit = self.permits,
        }
    }

    /// Wakes every waiter waiting now, and every [`Notified`] future created before this call.
    /// Stores no permit.
    pub fn notify_waiters(&self) {
        let mut wakers = Wakers::default();
        {
            let mut state = self.lock();
            self.generation.fetch_add(1, SeqCst);
            while let Some(mut node) = state.waiters.pop_front() {
                node.data(|got| *got = Got::All);
                wakers.push(node.take_waker());
            }
        }
        wakers.wake();
    }

    /// Waits for a notification, blocking-style (suspends a coroutine, parks a thread).
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`notified_async`](Self::notified_async)`().await`.
    #[track_caller]
    pub fn notified(&self) {
        crate::block_on(self.notified_async())
    }

    /// Waits for a notification, as a future. It counts as waiting for
    /// [`notify_waiters`](Self::notify_waiters) from its creation, and for
    /// [`notify_one`](Self::notify_one) from its first poll or [`Notified::enable`].
    pub fn notified_async(&self) -> Notified<'_> {
        Notified {
            notify: self,
            generation: self.generation.load(SeqCst),
            node: Node::new(Got::Nothing),
            queued: false,
            done: false,
            relay: RelaySlot::default(),
        }
    }
}

impl std::fmt::Debug for Notify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notify").finish_non_exhaustive()
    }
}

/// The future of [`Notify::notified_async`].
#[must_use = "futures do nothing unless polled"]
pub struct Notified<'a> {
    notify: &'a Notify,
    /// The generation when this future was made (module docs, step 3).
    generation: usize,
    /// Linked into `notify`'s list while `queued`.
    node: Node<Got>,
    /// The node is linked, or was unlinked by a notify this future has not yet observed.
    queued: bool,
    /// Notified already (by the generation or the permit) without queueing.
    done: bool,
    /// The relay to another executor's waker, kept for its next poll.
    relay: RelaySlot,
}

impl Notified<'_> {
    /// Registers as a waiter without waiting, so that a later `notify_one` is for this future.
    /// Returns whether it is notified already.
    pub fn enable(self: Pin<&mut Self>) -> bool {
        self.poll_with(None).is_ready()
    }

    fn poll_with(self: Pin<&mut Self>, cx: Option<&mut Context<'_>>) -> Poll<()> {
        // SAFETY: the node is never moved out of the pinned future; the rest is plain data.
        let this = unsafe { self.get_unchecked_mut() };
        if this.done {
            return Poll::Ready(());
        }
        // SAFETY: `this.node` is structurally pinned.
        let node = unsafe { Pin::new_unchecked(&this.node) };
        // As `Mutex::poll_lock`'s: a waker whose clone is user code is relayed before the lock.
        let waker = cx.map(|cx| this.relay.lock_safe(cx.waker()));
        let mut state_guard = this.notify.lock();
        let state = &mut *state_guard;
        if this.queued {
            // SAFETY: we hold the list's lock; the node is only used with this list.
            let mut me = unsafe { state.waiters.entry(node) };
            if me.data(|got| *got != Got::Nothing) {
                this.queued = false;
                this.done = true;
                return Poll::Ready(());
            }
            if let Some(waker) = &waker {
                let replaced = me.set_waker(waker);
                drop(state_guard);
                drop(replaced); // user code: after the lock
            }
            return Poll::Pending;
        }
        if this.notify.generation.load(SeqCst) != this.generation
            || std::mem::take(&mut state.permit)
        {
            this.done = true;
            return Poll::Ready(());
        }
        // SAFETY: we hold the list's lock; the node is not linked, is only used with this list,
        // and `Notified::drop` unlinks it.
        unsafe { state.waiters.push_back(node) };
        this.queued = true;
        if let Some(waker) = &waker {
            // SAFETY: as above.
            let replaced = unsafe { state.waiters.entry(node) }.set_waker(waker);
            drop(state_guard);
            drop(replaced); // user code: after the lock
        }
        Poll::Pending
    }
}

impl Future for Notified<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.poll_with(Some(cx))
    }
}

impl Drop for Notified<'_> {
    fn drop(&mut self) {
        if !self.queued {
            return;
        }
        // SAFETY: the node is pinned (the future is dropped in place once polled).
        let node = unsafe { Pin::new_unchecked(&self.node) };
        let mut wakers = Wakers::default();
        {
            let mut state = self.notify.lock();
            // SAFETY: we hold the list's lock; the node is only used with this list.
            let got = unsafe { state.waiters.entry(node) }.data(|got| *got);
            // SAFETY: as above.
            unsafe { state.waiters.remove(node) };
            if got == Got::One {
                // Given a notification we will never observe: pass it on (step 4).
                self.notify.notify_one_locked(&mut state, &mut wakers);
            }
        }
        wakers.wake();
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::Notify;
    use crate::loom::sync::Arc;
    use crate::sync::loom_block_on;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Waker};

    /// One waiter is cancelled while `notify_one` runs; the notification reaches the other waiter
    /// (or is stored for it), never vanishes with the cancelled one.
    #[test]
    fn loom_notify_one_is_passed_on_by_a_cancelled_waiter() {
        loom::model(|| {
            let notify = Arc::new(Notify::new());
            let n1 = notify.clone();
            let canceller = loom::thread::spawn(move || {
                let mut f = pin!(n1.notified_async());
                let mut cx = Context::from_waker(Waker::noop());
                f.as_mut().poll(&mut cx).is_ready()
            });
            let n2 = notify.clone();
            let waiter = loom::thread::spawn(move || {
                let mut f = pin!(n2.notified_async());
                loom_block_on(|cx| f.as_mut().poll(cx));
            });
            notify.notify_one();
            // The canceller may have observed the notification (then the waiter is owed another);
            // if it was handed it and dropped without observing it, it must pass it on.
            if canceller.join().unwrap() {
                notify.notify_one();
            }
            waiter.join().unwrap();
        });
    }
}
