//! One pending channel operation (a receive or a send) as a small state machine over the core:
//! try under the lock, else queue an entry (H1), then wait for DONE (H4) or withdraw (H5).
//! The single-operation futures and each `select!` arm are built from these.

use std::task::{Context, Poll};

use super::core::{Chan, Entry, Observed, Signal, SignalRef, State, TryRecv, TrySend, Wake, wake};
use super::error::{RecvError, SendError};
use crate::loom::sync::Arc;

/// How a withdrawal (H5) ended.
pub(crate) enum Withdrawn<T> {
    /// Nothing was queued, or the entry was withdrawn before any completer claimed it: the
    /// operation did not happen. Holds a send's value.
    NotDone(Option<T>),
    /// A completer got there first: the operation happened. Holds the slot (a received value;
    /// or a send's value the closing channel handed back; else `None`).
    Done(Option<T>),
}

/// A receive in progress.
pub(crate) struct RecvOp<T> {
    entry: Option<Arc<Entry<T>>>,
}

impl<T> RecvOp<T> {
    pub(crate) const fn new() -> RecvOp<T> {
        RecvOp { entry: None }
    }

    /// Polls the receive on its own: try (H1), else queue with a fresh signal, else wait.
    pub(crate) fn poll(
        &mut self,
        chan: &Chan<T>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, RecvError>> {
        if let Some(e) = &self.entry {
            return match e.signal().refresh(cx.waker()) {
                Observed::Done(_) => Poll::Ready(self.take_done().ok_or(RecvError)),
                _ => Poll::Pending,
            };
        }
        let mut locked = chan.lock();
        let state = locked.state();
        match state.try_recv(chan.cap) {
            TryRecv::Got(v, w) => {
                drop(locked);
                wake(w);
                Poll::Ready(Ok(v))
            }
            TryRecv::Closed => Poll::Ready(Err(RecvError)),
            TryRecv::Empty => {
                self.enqueue_locked(state, SignalRef::Own(Signal::new(cx.waker())), 0);
                Poll::Pending
            }
        }
    }

    /// Queues this receive under `signal` as `arm`. The caller holds the channel lock.
    pub(crate) fn enqueue_locked(&mut self, state: &mut State<T>, signal: SignalRef, arm: usize) {
        let e = Entry::new(signal, arm, None);
        state.enqueue_recv(e.clone());
        self.entry = Some(e);
    }

    /// (H4) The slot after DONE was observed: the value, or `None` if the channel closed.
    pub(crate) fn take_done(&mut self) -> Option<T> {
        let e = self
            .entry
            .take()
            .expect("take_done without a queued receive");
        // SAFETY: the caller observed DONE for this entry's arm (H4): nobody else touches it.
        unsafe { e.take() }
    }

    /// Removes the entry from the queue (it is stale: its signal left WAITING for another
    /// reason). The caller holds the channel lock.
    pub(crate) fn dequeue_locked(&mut self, state: &mut State<T>) {
        if let Some(e) = self.entry.take() {
            state.dequeue(&e);
        }
    }

    /// (H5) Withdraws a queued receive whose signal the owner has already moved out of
    /// WAITING (`cancelled`: by its own CAS; else a completer claimed it). The caller holds
    /// the channel lock, so a claimed entry is DONE by now.
    pub(crate) fn withdraw_locked(
        &mut self,
        state: &mut State<T>,
        cancelled: bool,
    ) -> Withdrawn<T> {
        let Some(e) = self.entry.take() else {
            return Withdrawn::NotDone(None);
        };
        if cancelled {
            state.dequeue(&e);
            Withdrawn::NotDone(None)
        } else {
            // SAFETY: we hold the channel lock (H4/H5).
            Withdrawn::Done(unsafe { e.take() })
        }
    }

    /// (H5) Cancels a lone receive (one signal, one entry) and reports how it ended.
    pub(crate) fn cancel(&mut self, chan: &Chan<T>) -> Withdrawn<T> {
        let Some(e) = &self.entry else {
            return Withdrawn::NotDone(None);
        };
        let cancelled = e.signal().try_cancel().is_ok();
        let mut locked = chan.lock();
        self.withdraw_locked(locked.state(), cancelled)
    }

    /// Cancels and, if a value had already been handed over, gives it back (H6): what a
    /// dropped receive does.
    pub(crate) fn cancel_and_give_back(&mut self, chan: &Chan<T>) {
        if self.entry.is_none() {
            return;
        }
        if let Withdrawn::Done(Some(v)) = self.cancel(chan) {
            let w = chan.lock().state().give_back(v);
            wake(w);
        }
    }

    /// Gives back a value that a cancelled `select!` arm had been handed (H6). The caller
    /// holds the channel lock.
    pub(crate) fn give_back_locked(state: &mut State<T>, v: T) -> Wake {
        state.give_back(v)
    }
}

/// A send in progress.
pub(crate) struct SendOp<T> {
    /// The value, until it is sent or queued.
    value: Option<T>,
    entry: Option<Arc<Entry<T>>>,
}

impl<T> SendOp<T> {
    pub(crate) const fn new(value: T) -> SendOp<T> {
        SendOp {
            value: Some(value),
            entry: None,
        }
    }

    /// Polls the send on its own: try (H1), else queue with a fresh signal, else wait.
    pub(crate) fn poll(
        &mut self,
        chan: &Chan<T>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), SendError<T>>> {
        if let Some(e) = &self.entry {
            return match e.signal().refresh(cx.waker()) {
                Observed::Done(_) => Poll::Ready(self.take_done()),
                _ => Poll::Pending,
            };
        }
        let value = self.value.take().expect("a send polled after it completed");
        let mut locked = chan.lock();
        let state = locked.state();
        match state.try_send(chan.cap, value) {
            TrySend::Sent(w) => {
                drop(locked);
                wake(w);
                Poll::Ready(Ok(()))
            }
            TrySend::Closed(v) => Poll::Ready(Err(SendError(v))),
            TrySend::Full(v) => {
                self.value = Some(v);
                self.enqueue_locked(state, SignalRef::Own(Signal::new(cx.waker())), 0);
                Poll::Pending
            }
        }
    }

    /// The value, for a non-blocking attempt under the lock.
    pub(crate) fn take_value(&mut self) -> Option<T> {
        self.value.take()
    }

    /// Puts back a value a failed attempt returned.
    pub(crate) fn restore_value(&mut self, v: T) {
        self.value = Some(v);
    }

    /// Queues this send (with its value) under `signal` as `arm`. The caller holds the lock.
    pub(crate) fn enqueue_locked(&mut self, state: &mut State<T>, signal: SignalRef, arm: usize) {
        let e = Entry::new(signal, arm, self.value.take());
        state.enqueue_send(e.clone());
        self.entry = Some(e);
    }

    /// (H4) The outcome after DONE was observed: sent, or the closing channel handed the
    /// value back.
    pub(crate) fn take_done(&mut self) -> Result<(), SendError<T>> {
        let e = self.entry.take().expect("take_done without a queued send");
        // SAFETY: the caller observed DONE for this entry's arm (H4): nobody else touches it.
        match unsafe { e.take() } {
            None => Ok(()),
            Some(v) => Err(SendError(v)),
        }
    }

    /// As [`RecvOp::dequeue_locked`].
    pub(crate) fn dequeue_locked(&mut self, state: &mut State<T>) {
        if let Some(e) = self.entry.take() {
            state.dequeue(&e);
        }
    }

    /// As [`RecvOp::withdraw_locked`]; a withdrawn send hands its value back.
    pub(crate) fn withdraw_locked(
        &mut self,
        state: &mut State<T>,
        cancelled: bool,
    ) -> Withdrawn<T> {
        let Some(e) = self.entry.take() else {
            return Withdrawn::NotDone(self.value.take());
        };
        if cancelled {
            state.dequeue(&e);
        }
        // SAFETY: we hold the channel lock, and the entry is out of the queue or DONE (H5).
        let slot = unsafe { e.take() };
        if cancelled {
            Withdrawn::NotDone(slot)
        } else {
            Withdrawn::Done(slot)
        }
    }

    /// (H5) Cancels a lone send and reports how it ended.
    pub(crate) fn cancel(&mut self, chan: &Chan<T>) -> Withdrawn<T> {
        let Some(e) = &self.entry else {
            return Withdrawn::NotDone(self.value.take());
        };
        let cancelled = e.signal().try_cancel().is_ok();
        let mut locked = chan.lock();
        self.withdraw_locked(locked.state(), cancelled)
    }

    /// Whether the operation is queued.
    pub(crate) fn is_queued(&self) -> bool {
        self.entry.is_some()
    }
}
