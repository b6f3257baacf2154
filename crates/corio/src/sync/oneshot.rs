//! `oneshot`: one value, sent once, from a sender to a receiver.
//!
//! A small shared state under a lock: the value, whether each side is open, the receiver's
//! waker and the sender's (one waiter on each side at most, so no wait list). The lock is held
//! for a few field updates only; a waker is woken, and a waker or value is dropped, after it
//! is released (user code).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::loom::sync::{Arc, Mutex};
use crate::task::waker::RelaySlot;

struct State<T> {
    value: Option<T>,
    sender_alive: bool,
    /// Whether a send may still succeed: cleared by [`Receiver::close`] and the receiver's
    /// drop.
    receiver_open: bool,
    /// The receiver's waker while it waits.
    waker: Option<Waker>,
    /// The sender's waker while it waits for the receiver to close ([`Sender::closed`]).
    sender_waker: Option<Waker>,
}

struct Shared<T> {
    state: Mutex<State<T>>,
}

impl<T> Shared<T> {
    fn lock(&self) -> crate::loom::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A channel for one value: [`Sender::send`] once, the [`Receiver`] waits for it (it is a
/// future; [`Receiver::recv`] waits blocking-style).
///
/// ```
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// rt.run(|| {
///     let (tx, rx) = corio::sync::oneshot::channel();
///     corio::spawn(async move { tx.send(42).unwrap() });
///     assert_eq!(rx.recv(), Ok(42));
///
///     let (tx, rx) = corio::sync::oneshot::channel::<u32>();
///     drop(tx);
///     assert!(rx.recv().is_err(), "the sender went away without sending");
/// });
/// ```
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            value: None,
            sender_alive: true,
            receiver_open: true,
            waker: None,
            sender_waker: None,
        }),
    });
    (
        Sender {
            shared: shared.clone(),
            relay: RelaySlot::default(),
        },
        Receiver {
            shared,
            relay: RelaySlot::default(),
        },
    )
}

/// The sending half of a [`channel`].
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
    /// The relay to another executor's waker, kept for `poll_closed`'s next poll.
    relay: RelaySlot,
}

/// The receiving half of a [`channel`]; a future of the value.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    /// The relay to another executor's waker, kept for the next poll.
    relay: RelaySlot,
}

/// No value will come: the sender was dropped without sending, or the receiver was
/// [closed](Receiver::close) before a value was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvError;

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "no value: the oneshot sender was dropped without sending, or the receiver was closed",
        )
    }
}

impl std::error::Error for RecvError {}

/// Why [`Receiver::try_recv`] has no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryRecvError {
    /// Not sent yet.
    Empty,
    /// The sender was dropped without sending, the receiver was [closed](Receiver::close),
    /// or the value was already received.
    Closed,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("no value sent yet"),
            TryRecvError::Closed => f.write_str(
                "no value: the oneshot sender was dropped without sending, or the receiver was closed",
            ),
        }
    }
}

impl std::error::Error for TryRecvError {}

impl<T> Sender<T> {
    /// Sends the value; gives it back if the receiver is gone.
    pub fn send(self, value: T) -> Result<(), T> {
        let waker = {
            let mut state = self.shared.lock();
            if !state.receiver_open {
                return Err(value);
            }
            state.value = Some(value);
            state.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }

    /// Whether the receiver is gone or closed (a send would fail).
    pub fn is_closed(&self) -> bool {
        !self.shared.lock().receiver_open
    }

    /// Waits blocking-style until the receiver is dropped or [closed](Receiver::close): the
    /// value is no longer wanted, so work to produce it can stop.
    ///
    /// ```
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// rt.run(|| {
    ///     let (mut tx, rx) = corio::sync::oneshot::channel::<u64>();
    ///     let worker = corio::go(move || {
    ///         tx.closed(); // a computation would race this in a `select!`
    ///         tx.send(1).is_err()
    ///     });
    ///     drop(rx);
    ///     assert!(worker.join().unwrap());
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// Inside an async task: `.await` [`closed_async`](Self::closed_async) there.
    #[track_caller]
    pub fn closed(&mut self) {
        crate::block_on(self.closed_async())
    }

    /// Completes when the receiver is dropped or [closed](Receiver::close) (the async form of
    /// [`closed`](Self::closed)).
    pub async fn closed_async(&mut self) {
        std::future::poll_fn(|cx| self.poll_closed(cx)).await
    }

    /// Ready once the receiver is dropped or [closed](Receiver::close); otherwise registers
    /// the task of `cx` to be woken then (only the last task to poll is woken).
    pub fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        // Kept under the lock: a waker whose clone is user code is relayed before it.
        let waker = self.relay.lock_safe(cx.waker());
        let mut state = self.shared.lock();
        if !state.receiver_open {
            return Poll::Ready(());
        }
        let replaced = keep_waker(&mut state.sender_waker, &waker);
        drop(state);
        drop(replaced); // a waker's drop is user code: after the lock
        Poll::Pending
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let (waker, own) = {
            let mut state = self.shared.lock();
            state.sender_alive = false;
            (state.waker.take(), state.sender_waker.take())
        };
        drop(own);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Receiver<T> {
    /// Waits for the value blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task: `.await` the receiver there.
    #[track_caller]
    pub fn recv(self) -> Result<T, RecvError> {
        crate::block_on(self)
    }

    /// The value if it has been sent.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let mut state = self.shared.lock();
        match state.value.take() {
            Some(v) => Ok(v),
            None if state.sender_alive && state.receiver_open => Err(TryRecvError::Empty),
            None => Err(TryRecvError::Closed),
        }
    }

    /// Refuses the value from now on: a later [`Sender::send`] fails and gives it back, and a
    /// sender waiting in [`Sender::closed`] wakes. A value sent before the call is still
    /// received (by [`try_recv`](Self::try_recv), the future or [`recv`](Self::recv)), which
    /// otherwise fail with closed at once instead of waiting.
    ///
    /// ```
    /// use corio::sync::oneshot::{self, TryRecvError};
    ///
    /// let (tx, mut rx) = oneshot::channel();
    /// rx.close();
    /// assert_eq!(tx.send(7), Err(7));
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    ///
    /// let (tx, mut rx) = oneshot::channel();
    /// tx.send(8).unwrap();
    /// rx.close();
    /// assert_eq!(rx.try_recv(), Ok(8), "sent before the close");
    /// ```
    pub fn close(&mut self) {
        let waker = {
            let mut state = self.shared.lock();
            state.receiver_open = false;
            state.sender_waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, RecvError>> {
        // As `Sender::poll_closed`'s.
        let this = self.get_mut();
        let waker = this.relay.lock_safe(cx.waker());
        let mut state = this.shared.lock();
        if let Some(v) = state.value.take() {
            return Poll::Ready(Ok(v));
        }
        if !state.sender_alive || !state.receiver_open {
            return Poll::Ready(Err(RecvError));
        }
        let replaced = keep_waker(&mut state.waker, &waker);
        drop(state);
        drop(replaced); // a waker's drop is user code: after the lock
        Poll::Pending
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let (value, waker, sender) = {
            let mut state = self.shared.lock();
            state.receiver_open = false;
            (
                state.value.take(),
                state.waker.take(),
                state.sender_waker.take(),
            )
        };
        // The value's destructor and the wakers are user code: outside the lock.
        drop(value);
        drop(waker);
        if let Some(w) = sender {
            w.wake();
        }
    }
}

/// Keeps `waker` in `slot` unless the one there wakes the same task; returns the one it
/// replaced, to be dropped after the lock (a waker's drop is user code).
fn keep_waker(slot: &mut Option<Waker>, waker: &Waker) -> Option<Waker> {
    match slot {
        Some(w) if w.will_wake(waker) => None,
        slot => slot.replace(waker.clone()),
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("oneshot::Sender").finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("oneshot::Receiver").finish_non_exhaustive()
    }
}
