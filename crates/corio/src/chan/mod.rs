//! Channels: Go's `chan` for coroutines, async tasks and threads alike.
//!
//! [`bounded`]`(n)` makes a channel that buffers up to `n` values; `bounded(0)` is a rendezvous
//! channel (Go's unbuffered `chan`): a send completes only when a receiver takes the value.
//! [`unbounded`]`()` never makes a sender wait. Both ends are cloneable (many producers, many
//! consumers). The [`select!`](crate::select) macro waits on several operations at once.
//!
//! ```
//! let rt = corio::Runtime::builder().workers(2).build().unwrap();
//! let total = rt.run(|| {
//!     let (tx, rx) = corio::chan::bounded(0);
//!     for i in 0..10u64 {
//!         let tx = tx.clone();
//!         corio::go(move || tx.send(i).unwrap()); // a stackful coroutine, blocking-style
//!     }
//!     drop(tx); // the channel closes when the last sender is gone
//!     rx.iter().sum::<u64>()
//! });
//! assert_eq!(total, 45);
//! ```
//!
//! # One operation, three kinds of waiter
//!
//! Every operation that can wait is a future (`send_async`, `recv_async`, ...); the
//! blocking-style face (`send`, `recv`, ...) is that future run by [`block_on`](crate::block_on),
//! which suspends a stackful coroutine, parks a plain thread, and panics with advice inside an
//! async task. So the wait queues hold one kind of thing — an entry whose owner is woken
//! through a `Waker` — and a stackful sender, an async receiver and a thread receiver meet on
//! one channel without knowing of each other.
//!
//! # Layout (Go's `runtime/chan.go`, with Rust's ownership)
//!
//! A channel is one lock, a ring buffer of values, a queue of waiting receivers and a queue of
//! waiting senders (each waiting sender holds its value in its entry), and a `closed` flag.
//! Invariants, with the lock held: if receivers wait, the buffer is empty and no sender waits;
//! if senders wait, the buffer is full (for a rendezvous channel: always "full").
//!
//! A waiting operation owns a `Signal` (a state word and a waker) and puts one `Entry` (its
//! signal, an arm number and a value slot) in a queue. A single `recv` has one entry; a
//! `select!` of n arms has one signal and n entries, one per channel queue. The state word is
//! what makes "exactly one arm happens" and "a cancelled waiter loses nothing" hold.
//!
//! # The hand-off protocol
//!
//! 1. **(H1) Try.** Under the channel lock an operation first tries to complete without
//!    waiting: a send claims the first waiting receiver and hands it the value, else buffers
//!    it if there is room; a receive takes the oldest buffered value (and moves the first
//!    waiting sender's value into the freed place), else takes a waiting sender's value
//!    directly. If neither is possible it queues its entry and returns `Pending`. (`select!`
//!    holds the locks of all its channels, in address order, for its whole first pass, so no
//!    counterpart can slip in between trying one arm and queueing another.)
//! 2. **(H2) Claim.** A counterpart found in a queue is *claimed* with one CAS of its signal's
//!    state from `WAITING` to `CLAIMED(arm)`, by a completer that holds that queue's channel
//!    lock. A failed CAS means the entry is stale (its select already chose another arm, or its
//!    owner cancelled): the completer drops it and tries the next. At most one CAS ever
//!    succeeds on a signal, so exactly one arm of a select happens.
//! 3. **(H3) Finish.** Still under the lock, the completer fills the slot (a value for a
//!    receiver; takes the value out of a sender's), takes the waker, stores `DONE(arm)` with
//!    Release (its last touch of the signal), and calls the waker after unlocking.
//! 4. **(H4) Observe.** The owner, polled again, loads the state with Acquire. `DONE(arm)`:
//!    the entry has left the queue and its slot is final, so the owner reads it without any
//!    lock. Otherwise (a spurious poll, perhaps with a new waker) it takes the lock of every
//!    channel it is queued on, where no completer can be between claim and finish, and
//!    looks again: still `WAITING`, it stores its current waker there and waits. The waker
//!    has no lock of its own: the channel locks guard it, and the next claimer takes it under
//!    one of them.
//! 5. **(H5) Cancel.** An owner that gives up (a timeout, a select's `after` arm, its future
//!    dropped because its task was aborted or its runtime shut down) CASes `WAITING` to
//!    `CANCELLED`. If that wins, nobody can complete it any more: it removes its entries under
//!    each lock and the operation did not happen (a send keeps its value). If it loses, the
//!    operation happened: after taking that arm's channel lock (which the completer held from
//!    claim to finish) the state is `DONE`, and the slot is the owner's.
//! 6. **(H6) Give back.** A receive that is cancelled after it was handed a value (step 5
//!    lost) must not lose it: a timeout returns it as the result instead of timing out; a
//!    dropped future hands it to the next waiting receiver, or else puts it back at the *front*
//!    of the buffer, where the next receive takes it, first. So a rendezvous send that
//!    completed always delivered its value to exactly one receiver, even if that receiver
//!    vanished in the same instant; the price is that a rendezvous channel may briefly
//!    buffer such a returned value (`len()` can then exceed `capacity()`).
//!
//! Rejected: a rendezvous sender that waits for the receiver to acknowledge the value (a
//! second hand-shake on every hand-off, to cover a rare race that H6 covers for free); a
//! notify-only wait queue where woken waiters retry (two selects, one sending and one
//! receiving on a rendezvous channel, would then never meet: neither can complete the other).
//! The one exception is the next section's.
//!
//! # Stream waits hold no value
//!
//! A [`Receiver`] is also a `Stream`, and `poll_next` returns `Pending` with a wait queued,
//! as any receive does. But nothing tells the handle when its caller stops waiting for the
//! item (`timeout(d, rx.next())` expired, a `select` on `next()` took another branch): a
//! receive future is dropped then, and gives back what it was handed (H6), while a stream
//! poll is simply never polled again. Handed a value, such an abandoned wait would keep it
//! from every other receiver, and hold their "closed" back ("Closing with values in
//! transit"). So a stream waits in a queue of its own (`State::watchq`) and is *told*, never
//! handed: whatever makes a value available to a receive (a send with room in the buffer, a
//! value given back to it, the close once drained) completes every waiting stream with an
//! empty slot, and each tries again; one takes the value, the others wait again. Every
//! stream, not one: the one told might be the abandoned one (async-channel wakes all its
//! stream listeners for the same reason). A waiting receive future still goes first.
//!
//! A send that finds no room on a rendezvous channel while a stream waits still completes,
//! as it would into a waiting receive (`try_send` and a `select!` with `default` rely on
//! that): its value goes to the buffer, one past the capacity as after H6, and the streams
//! are told (`State::send_to_watchers`). The two rejected designs above do not arise: a
//! stream is never in a `select!`, and its counterpart, a send, always queues a real entry or
//! completes. The price: a value reaches a stream through the buffer and a second lock
//! hold, not straight into its slot, and n streams of one channel are all woken for each
//! value; one wait stays queued per handle whose poll was abandoned, until the next value.
//!
//! # Closing
//!
//! [`Sender::close`] (or [`Receiver::close`], or the last sender or last receiver going away)
//! closes the channel: every waiter is completed at once, receivers with nothing and senders
//! with their value still in the slot, which comes back in their [`SendError`]. Receivers then
//! drain what is buffered and get [`RecvError`]; sends fail with the value handed back
//! (where Go would panic). When the last receiver goes, what is still buffered is dropped
//! then, since nobody can receive it (crossbeam-channel does the same): a value that holds a
//! sender of its own channel would otherwise keep the channel alive for ever.
//!
//! ## Closing with values in transit
//!
//! A value handed to a waiting receive (H3) whose owner has not seen it yet is *in transit*:
//! if the receive is then cancelled, H6 gives it back. So the channel is not "closed and
//! drained" while any value is in transit, and [`RecvError`] is said only when it is: a
//! close leaves the queued receivers waiting, and a receive on a closed channel with values
//! in transit waits too; each value then reaches one of them (given back), or its owner sees
//! it and the last to settle completes the waiting receivers with "closed". Without this, a
//! close told the queued receivers "closed" (every `for v in rx` loop ended) while a value
//! was on its way, and a cancellation then put it back into a channel that nobody would
//! look at again (`tests/chan_review_contract.rs`: a value sent with `Ok` was lost to the
//! draining loops in 1 to 195 rounds of 200).
//!
//! The count (`State::handed`, `settled`, `Chan::seen`): a hand-off counts in under the
//! lock; a withdrawal under the lock counts out there; an owner that sees its value without
//! the lock (H4) counts it out with one read-modify-write of `Chan::seen`, a word whose top
//! bit the close sets with another: the later of the two reads the earlier, and whichever
//! finds the last value counted out completes the receivers (`Chan::settle_seen`). That
//! increment is the cost: one atomic read-modify-write per direct hand-off, on a line only
//! receivers write. The price in liveness: a receive future handed a value and then
//! neither polled nor dropped (kept unpolled by its owner) holds the close's "closed" back
//! from the other receivers until it is polled or dropped, where before it held the value.
//! (A `Stream` poll, which its caller may abandon without dropping anything, is never handed
//! a value: "Stream waits hold no value".)
//!
//! # Costs
//!
//! An operation that completes at once takes the lock and allocates nothing; a blocking-style
//! `send`/`recv` in a stackful coroutine builds and polls its future in the caller's frame
//! (`block_on_ready_first`: one thread-local read decides that it runs in a coroutine that need
//! not yield), so completing at once costs about what the future's poll does. A lone send or
//! receive that waits needs one entry (an `Arc` holding its signal and value slot); the
//! completer that finishes a lone entry keeps it, under the lock, as the channel's spare, and
//! the next wait re-arms it once its owner has let go (`State::lone_entry`), so a ping-pong
//! allocates nothing and moves no entry through an atomic slot in the steady state. A `select!` that waits allocates its
//! shared signal and one entry per arm. Values never go through the heap except in the
//! buffer. The lock is a spin-then-yield lock
//! (`core.rs`, `RawLock`) whose critical sections never suspend.
//!
//! # Large values
//!
//! A value moves once into the operation and once out of it: a send moves it into its future,
//! and from there, by a raw copy, into a waiting receive's place, the buffer or its queued
//! entry; a receive moves it from there into a place in its own frame, and that to the
//! caller. No result, `Poll` or `Option` on the way carries it (a send that fails keeps its
//! value in its future until the error is made). So in an optimised build a blocking-style
//! `send` or `recv` keeps one copy of the value in its frame, and a large value's other move
//! (into a new queue entry, or into the buffer: `VecDeque` takes values, not places) is made
//! in a call of its own. A 64 KiB value goes through a channel between two coroutines with
//! the default 256 KiB stack, with and without a timeout (`tests/chan_crossbeam_suite.rs`).
//!
//! The caller's own code holds copies too (the value it built, the `Result` it got), and a
//! debug build copies a value at nearly every call and binding. For values of tens of KiB,
//! send them boxed (`Box<T>`, one pointer through the channel) or give the coroutine a
//! larger stack (`corio::Builder::stack_size`): an overflow aborts the process.

mod core;
mod error;
mod op;
pub(crate) mod select;

#[cfg(all(test, loom))]
mod loom_tests;

use std::fmt;
use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use self::core::{Chan, TryRecv, TrySend, is_large, wake};
use self::op::{Closed, RecvOp, SendOp, WatchOp, Withdrawn};
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::Ordering;
use crate::time::Sleep;

pub use self::error::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
pub use self::select::{SelectFuture, Selected};

#[doc(hidden)]
pub mod __private {
    //! What the `select!` macros expand to; not a stable API.
    //!
    //! Public because the macros expand in the caller's crate, and so nameable; but the
    //! select's protocol over an arm is sealed (`select.rs`, `Arm`): its methods take a token
    //! nothing outside corio can make, so safe code cannot drive an arm behind its channel's
    //! back. Calling one does not compile:
    //!
    //! ```compile_fail,E0061
    //! use corio::chan::__private::{Arm, SendArm};
    //! let (tx, _rx) = corio::chan::bounded::<u64>(0);
    //! let mut arm = SendArm::new(&tx, 7);
    //! let arm: &mut dyn Arm = &mut arm;
    //! arm.complete(); // the token is missing
    //! ```
    //!
    //! and neither does making the token:
    //!
    //! ```compile_fail,E0603
    //! let _ = corio::chan::select::sealed::Internal(());
    //! ```
    pub use super::select::{Arm, RecvArm, SelectFuture, Selected, SendArm};
}

/// Makes a channel that buffers up to `cap` values; `bounded(0)` is a rendezvous channel
/// (Go's unbuffered `chan`).
///
/// ```
/// let (tx, rx) = corio::chan::bounded(1);
/// tx.try_send(1).unwrap();
/// assert!(tx.try_send(2).unwrap_err().is_full());
/// assert_eq!(rx.try_recv(), Ok(1));
/// assert_eq!((tx.capacity(), rx.len()), (Some(1), 0));
/// ```
///
/// # Panics
///
/// If `cap` is `usize::MAX` (the count of buffered values needs one value more).
#[track_caller]
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    assert!(cap < usize::MAX, "corio::chan::bounded: capacity too large");
    pair(Chan::new(cap))
}

/// Makes a channel whose senders never wait.
///
/// ```
/// let (tx, rx) = corio::chan::unbounded();
/// for i in 0..1000 {
///     tx.send(i).unwrap();
/// }
/// drop(tx);
/// assert_eq!(rx.iter().count(), 1000);
/// assert_eq!(rx.capacity(), None);
/// ```
pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
    pair(Chan::new(usize::MAX))
}

// Send and Sync, checked at compile time: the ends and the futures of a channel of `Send`
// values go anywhere.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Sender<u8>>();
    send_sync::<Receiver<u8>>();
    send_sync::<SendFuture<'static, u8>>();
    send_sync::<RecvFuture<'static, u8>>();
};

fn pair<T>(chan: Arc<Chan<T>>) -> (Sender<T>, Receiver<T>) {
    (
        Sender { chan: chan.clone() },
        Receiver {
            chan,
            stream: WatchOp::new(),
        },
    )
}

/// The sending end of a channel. Cloneable; the channel closes when the last one is dropped.
///
/// A channel's ends cross threads exactly when its values may:
///
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// let (tx, _rx) = corio::chan::bounded::<std::rc::Rc<u8>>(1);
/// send(tx); // `Rc` is not `Send`, so neither is a channel of them
/// ```
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

/// The receiving end of a channel. Cloneable (each value goes to one receiver); dropping the
/// last one closes the channel for the senders.
///
/// It is also an iterator source ([`Receiver::iter`], `for v in rx`) and a
/// [`futures_core::Stream`].
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
    /// The wait of the `Stream` implementation, while `poll_next` has one queued; owned by
    /// this handle alone. It never holds a value ("Stream waits hold no value"), so a poll
    /// abandoned by its caller leaves nothing behind that another receive would miss.
    stream: WatchOp<T>,
}

/// What both ends report about their channel.
macro_rules! common_methods {
    () => {
        /// Values buffered now (a snapshot: other threads may change it at once).
        pub fn len(&self) -> usize {
            self.chan.lock().state().len()
        }

        /// Whether nothing is buffered now.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// Whether the buffer is full now (a rendezvous channel always is).
        pub fn is_full(&self) -> bool {
            self.len() >= self.chan.cap
        }

        /// The buffer size: `Some(0)` for a rendezvous channel, `None` for an unbounded one.
        pub fn capacity(&self) -> Option<usize> {
            (self.chan.cap != usize::MAX).then_some(self.chan.cap)
        }

        /// Closes the channel: waiting and later sends fail with their value handed back;
        /// receivers drain what is buffered, then get a disconnection error. Returns whether
        /// this call closed it (`false` if it was closed already).
        pub fn close(&self) -> bool {
            close(&self.chan)
        }

        /// Whether the channel is closed.
        pub fn is_closed(&self) -> bool {
            self.chan.lock().state().is_closed()
        }

        /// Whether `self` and `other` are ends of the same channel.
        pub fn same_channel(&self, other: &Self) -> bool {
            Arc::ptr_eq(&self.chan, &other.chan)
        }
    };
}

fn close<T>(chan: &Chan<T>) -> bool {
    let mut locked = chan.lock();
    let state = locked.state();
    if state.is_closed() {
        return false;
    }
    let wakers = state.close(chan.seen());
    drop(locked);
    wakers.into_iter().for_each(|w| w.wake());
    true
}

/// The last receiver went: closes the channel and drops what is buffered, which nobody can
/// receive any more (crossbeam-channel's `discard_all_messages`). Kept, a value holding a sender
/// of its own channel would keep the channel, and itself, alive for ever.
fn close_for_good<T>(chan: &Chan<T>) {
    let mut locked = chan.lock();
    let state = locked.state();
    let wakers = if state.is_closed() {
        Vec::new()
    } else {
        state.close(chan.seen())
    };
    let values = state.take_buffered();
    drop(locked);
    wakers.into_iter().for_each(|w| w.wake());
    drop(values); // user code: after the lock
}

impl<T> Sender<T> {
    /// Sends `value`, waiting while the buffer is full (for a rendezvous channel: until a
    /// receiver takes it). Blocking-style: suspends a stackful coroutine or parks a thread.
    ///
    /// # Errors
    ///
    /// If the channel is closed (before or while waiting), with the value handed back.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`send_async`](Self::send_async) there.
    #[track_caller]
    #[inline(always)] // as before the large-value change, LLVM inlined it: one call frame less per send
    pub fn send(&self, value: T) -> Result<(), SendError<T>> {
        if !is_large::<T>() {
            // A few registers: the future is built and polled in place, and its output is
            // returned as it is.
            return crate::block_on::block_on_ready_first(|| self.send_future(value, false));
        }
        // The future is polled through a reference, and its output carries no value: the
        // value is moved once, into the future, and from there to where it goes ("Large
        // values" above).
        let mut send = self.send_future(value, false);
        match crate::block_on::block_on_ready_first(|| SendInPlace(&mut send)) {
            Ok(()) => Ok(()),
            Err(Closed) => Err(send.closed_error()),
        }
    }

    /// Sends `value` if that needs no waiting.
    ///
    /// # Errors
    ///
    /// [`TrySendError::Full`] if the buffer is full (no receiver waits, for a rendezvous
    /// channel), [`TrySendError::Disconnected`] if the channel is closed; both hand the value
    /// back.
    pub fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        let mut value = Some(value);
        let mut locked = self.chan.lock();
        match locked.state().try_send(self.chan.cap, &mut value) {
            TrySend::Sent(w) => {
                drop(locked);
                wake(w);
                Ok(())
            }
            TrySend::Full => Err(TrySendError::Full(value.expect(KEPT))),
            TrySend::Closed => Err(TrySendError::Disconnected(value.expect(KEPT))),
        }
    }

    /// Sends `value`, waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`SendTimeoutError::Timeout`] if there was no room in time,
    /// [`SendTimeoutError::Disconnected`] if the channel is closed; both hand the value back.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`send_timeout_async`](Self::send_timeout_async).
    #[track_caller]
    pub fn send_timeout(&self, value: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        // As in `send`: polled in place, the value left in the future unless sent.
        let mut send = self.send_timeout_async(value, timeout);
        let sent = crate::block_on(SendTimeoutInPlace(&mut send));
        sent.map_err(|e| send.error_with_value(e))
    }

    /// The future of a send: resolves when the value is sent or the channel closes.
    /// Dropping it before it resolves withdraws the send (the value is dropped with it).
    pub fn send_async(&self, value: T) -> SendFuture<'_, T> {
        self.send_future(value, true)
    }

    /// The future of a send; `budgeted`: it takes a unit of the task's budget per poll (the
    /// `_async` face). The blocking-style face's coroutine has taken its own already
    /// (`block_on_ready_first`).
    #[inline(always)]
    fn send_future(&self, value: T, budgeted: bool) -> SendFuture<'_, T> {
        SendFuture {
            chan: &self.chan,
            op: SendOp::new(value),
            budgeted,
        }
    }

    /// The future of [`send_timeout`](Self::send_timeout).
    pub fn send_timeout_async(&self, value: T, timeout: Duration) -> SendTimeoutFuture<'_, T> {
        SendTimeoutFuture {
            send: self.send_async(value),
            sleep: crate::time::sleep_async(timeout),
        }
    }

    common_methods!();
}

impl<T> Receiver<T> {
    /// Receives a value, waiting until one is sent. Blocking-style: suspends a stackful
    /// coroutine or parks a thread.
    ///
    /// # Errors
    ///
    /// [`RecvError`] once the channel is closed and drained.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`recv_async`](Self::recv_async) there.
    #[track_caller]
    #[inline(always)] // as `send`
    pub fn recv(&self) -> Result<T, RecvError> {
        if !is_large::<T>() {
            // As in `send`.
            return crate::block_on::block_on_ready_first(|| self.recv_future(false));
        }
        // As in `send`: the value is moved once, into `out`, and from there to the caller.
        let mut recv = self.recv_future(false);
        let mut out = MaybeUninit::uninit();
        crate::block_on::block_on_ready_first(|| RecvInPlace(&mut recv, &mut out))?;
        // SAFETY: the receive succeeded: it moved a value into `out`.
        Ok(unsafe { out.assume_init() })
    }

    /// Receives a value if one is there without waiting.
    ///
    /// # Errors
    ///
    /// [`TryRecvError::Empty`] if nothing is there, [`TryRecvError::Disconnected`] once the
    /// channel is closed and drained (also of values in transit: handed to another receive
    /// that may still give them back, module docs, "Closing with values in transit").
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        let mut out = MaybeUninit::uninit();
        let mut locked = self.chan.lock();
        match locked
            .state()
            .try_recv(self.chan.cap, self.chan.seen(), &mut out)
        {
            TryRecv::Got(w) => {
                drop(locked);
                // SAFETY: `Got`: `try_recv` moved a value into `out`. Read out before the
                // wake (user code), so that a panic there drops it rather than leaking it.
                let v = unsafe { out.assume_init() };
                wake(w);
                Ok(v)
            }
            TryRecv::Empty => Err(TryRecvError::Empty),
            TryRecv::Closed => Err(TryRecvError::Disconnected),
        }
    }

    /// Receives a value, waiting at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`RecvTimeoutError::Timeout`] if nothing came in time, [`RecvTimeoutError::Disconnected`]
    /// once the channel is closed and drained.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`recv_timeout_async`](Self::recv_timeout_async).
    #[track_caller]
    #[inline(always)] // as `recv`: inlined, `out` is the caller's own place for the value
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        // As in `recv`.
        let mut recv = self.recv_timeout_async(timeout);
        let mut out = MaybeUninit::uninit();
        crate::block_on(RecvTimeoutInPlace(&mut recv, &mut out))?;
        // SAFETY: the receive succeeded: it moved a value into `out`.
        Ok(unsafe { out.assume_init() })
    }

    /// The future of a receive. Dropping it after a value was handed to it but before it
    /// resolved gives the value back to the channel (module docs, H6).
    pub fn recv_async(&self) -> RecvFuture<'_, T> {
        self.recv_future(true)
    }

    /// The future of a receive; `budgeted` as in [`Sender::send_future`].
    #[inline(always)]
    fn recv_future(&self, budgeted: bool) -> RecvFuture<'_, T> {
        RecvFuture {
            chan: &self.chan,
            op: RecvOp::new(),
            budgeted,
        }
    }

    /// The future of [`recv_timeout`](Self::recv_timeout).
    pub fn recv_timeout_async(&self, timeout: Duration) -> RecvTimeoutFuture<'_, T> {
        RecvTimeoutFuture {
            recv: self.recv_async(),
            sleep: crate::time::sleep_async(timeout),
        }
    }

    /// A blocking iterator: yields values until the channel is closed and drained.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the values there now, without waiting.
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }

    common_methods!();
}

// Unwind safety, as `std::sync::mpsc`'s and crossbeam's ends: a panic never leaves a channel
// half-changed for another user to see. Its state changes under its lock run no user code
// (values move in and out; their drops and wakers' wakes run after the lock), so an end used
// again after a `catch_unwind` finds a consistent channel (`tests/sync_tokio_suite.rs`).
impl<T> std::panic::UnwindSafe for Sender<T> {}
impl<T> std::panic::RefUnwindSafe for Sender<T> {}
impl<T> std::panic::UnwindSafe for Receiver<T> {}
impl<T> std::panic::RefUnwindSafe for Receiver<T> {}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        // Relaxed: a new handle is made from a live one, so the count cannot be zero
        // concurrently (std's `Arc::clone` argument).
        self.chan.senders.fetch_add(1, Ordering::Relaxed);
        Sender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        // Relaxed: as for `Sender::clone`.
        self.chan.receivers.fetch_add(1, Ordering::Relaxed);
        Receiver {
            chan: self.chan.clone(),
            stream: WatchOp::new(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        // AcqRel: the last decrement must see every other handle's earlier work; the close it
        // then does takes the lock anyway.
        if self.chan.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            close(&self.chan);
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.stream.cancel(&self.chan);
        // AcqRel: as for `Sender::drop`.
        if self.chan.receivers.fetch_sub(1, Ordering::AcqRel) == 1 {
            close_for_good(&self.chan);
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

/// The future of [`Sender::send_async`].
#[must_use = "futures do nothing unless polled"]
pub struct SendFuture<'a, T> {
    chan: &'a Chan<T>,
    op: SendOp<T>,
    /// Whether a poll takes a unit of the task's budget (see [`budget_spent`]).
    budgeted: bool,
}

impl<T> Unpin for SendFuture<'_, T> {}

impl<T> SendFuture<'_, T> {
    /// The poll, with the value left in the op if the channel is closed.
    #[inline(always)] // the blocking-style call polls it in its own frame
    fn poll_op(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Closed>> {
        if self.budgeted && budget_spent(cx) {
            return Poll::Pending;
        }
        self.op.poll(self.chan, cx)
    }
}

impl<T> Future for SendFuture<'_, T> {
    type Output = Result<(), SendError<T>>;

    #[inline(always)] // the poll of every `send_async().await`
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match this.poll_op(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Ready(Err(Closed)) => Poll::Ready(Err(this.closed_error())),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A send that found the channel closed still holds its value.
const KEPT: &str = "a send keeps its value until it is sent";

impl<T> SendFuture<'_, T> {
    /// The error of a send that found the channel closed, with the value its op kept.
    fn closed_error(&mut self) -> SendError<T> {
        SendError(self.op.take_value().expect(KEPT))
    }
}

/// The blocking-style [`Sender::send`]'s future: its send future, polled in place, with an
/// output that carries no value (a value moved through `block_on`'s output would be copied
/// several times on the coroutine's stack).
struct SendInPlace<'f, 'a, T>(&'f mut SendFuture<'a, T>);

impl<T> Future for SendInPlace<'_, '_, T> {
    type Output = Result<(), Closed>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().0.poll_op(cx)
    }
}

/// The blocking-style [`Receiver::recv`]'s future: as [`SendInPlace`], with the value moved
/// into the caller's place (initialised when it resolves to `Ok`).
struct RecvInPlace<'f, 'a, T>(&'f mut RecvFuture<'a, T>, &'f mut MaybeUninit<T>);

impl<T> Future for RecvInPlace<'_, '_, T> {
    type Output = Result<(), RecvError>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.0.poll_into(cx, this.1)
    }
}

impl<T> Drop for SendFuture<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if self.op.is_queued() {
            self.withdraw();
        }
    }
}

impl<T> SendFuture<'_, T> {
    /// The drop of a queued send: withdrawn, the value is dropped here; done, it was
    /// delivered (H5). A call of its own, so that the value it may hold is not a copy in the
    /// frame of every send ("Large values").
    #[cold]
    #[inline(never)]
    fn withdraw(&mut self) {
        drop(self.op.cancel(self.chan));
    }
}

/// The future of [`Receiver::recv_async`].
#[must_use = "futures do nothing unless polled"]
pub struct RecvFuture<'a, T> {
    chan: &'a Chan<T>,
    op: RecvOp<T>,
    /// Whether a poll takes a unit of the task's budget (see [`budget_spent`]).
    budgeted: bool,
}

impl<T> Unpin for RecvFuture<'_, T> {}

impl<T> RecvFuture<'_, T> {
    /// The poll, with the value moved into `out` (empty).
    #[inline(always)] // the blocking-style call polls it in its own frame
    fn poll_into(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut MaybeUninit<T>,
    ) -> Poll<Result<(), RecvError>> {
        if self.budgeted && budget_spent(cx) {
            return Poll::Pending;
        }
        self.op.poll(self.chan, cx, out)
    }
}

impl<T> Future for RecvFuture<'_, T> {
    type Output = Result<T, RecvError>;

    #[inline(always)] // the poll of every `recv_async().await`
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut out = MaybeUninit::uninit();
        match self.get_mut().poll_into(cx, &mut out) {
            // SAFETY: the receive succeeded: it moved a value into `out`.
            Poll::Ready(Ok(())) => Poll::Ready(Ok(unsafe { out.assume_init() })),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The async faces' coop budget (tokio's `coop::poll_proceed`), as sockets, joins and timers
/// take it: a channel that is always ready (a full buffer to drain, a receiver that keeps up)
/// must not let one task hold its worker, nor keep sysmon's preemption request from being
/// seen. Spent: the task is woken to go to the back of the queue. (Until 2026-12-06 the
/// channel futures took none: a task drained 20 million buffered values in one poll, and a
/// 1 ms timer beside it fired 142 ms late; tokio's `coop` test, `tests/rt_tokio_suite.rs`.)
#[inline(always)]
pub(super) fn budget_spent(cx: &mut Context<'_>) -> bool {
    if crate::runtime::context::budget_proceed() {
        false
    } else {
        cx.waker().wake_by_ref();
        true
    }
}

impl<T> Drop for RecvFuture<'_, T> {
    fn drop(&mut self) {
        self.op.cancel_and_give_back(self.chan);
    }
}

/// The future of [`Sender::send_timeout_async`].
#[must_use = "futures do nothing unless polled"]
pub struct SendTimeoutFuture<'a, T> {
    send: SendFuture<'a, T>,
    sleep: Sleep,
}

impl<T> SendTimeoutFuture<'_, T> {
    /// The poll, with the value left in the send's op unless it was sent (as
    /// [`SendFuture::poll_op`]).
    fn poll_op(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SendTimeoutError<()>>> {
        if let Poll::Ready(r) = self.send.poll_op(cx) {
            return Poll::Ready(r.map_err(|Closed| SendTimeoutError::Disconnected(())));
        }
        if Pin::new(&mut self.sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        Poll::Ready(self.expire())
    }

    /// `e` with the value the send's op kept.
    fn error_with_value(&mut self, e: SendTimeoutError<()>) -> SendTimeoutError<T> {
        let value = self.send.op.take_value().expect(KEPT);
        match e {
            SendTimeoutError::Timeout(()) => SendTimeoutError::Timeout(value),
            SendTimeoutError::Disconnected(()) => SendTimeoutError::Disconnected(value),
        }
    }

    /// The time is up: withdraws the send, its value back in the op unless it went.
    #[cold]
    #[inline(never)]
    fn expire(&mut self) -> Result<(), SendTimeoutError<()>> {
        let (value, e) = match self.send.op.cancel(self.send.chan) {
            Withdrawn::Done(None) => return Ok(()),
            Withdrawn::Done(Some(v)) => (v, SendTimeoutError::Disconnected(())),
            Withdrawn::NotDone(v) => (v.expect(KEPT), SendTimeoutError::Timeout(())),
        };
        *self.send.op.value_mut() = Some(value);
        Err(e)
    }
}

impl<T> Future for SendTimeoutFuture<'_, T> {
    type Output = Result<(), SendTimeoutError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut(); // every field is `Unpin`
        this.poll_op(cx)
            .map(|r| r.map_err(|e| this.error_with_value(e)))
    }
}

/// [`Sender::send_timeout`]'s future, as [`SendInPlace`].
struct SendTimeoutInPlace<'f, 'a, T>(&'f mut SendTimeoutFuture<'a, T>);

impl<T> Future for SendTimeoutInPlace<'_, '_, T> {
    type Output = Result<(), SendTimeoutError<()>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().0.poll_op(cx)
    }
}

/// The future of [`Receiver::recv_timeout_async`].
#[must_use = "futures do nothing unless polled"]
pub struct RecvTimeoutFuture<'a, T> {
    recv: RecvFuture<'a, T>,
    sleep: Sleep,
}

impl<T> RecvTimeoutFuture<'_, T> {
    /// The poll, with the value moved into `out` (as [`RecvFuture::poll_into`]).
    fn poll_into(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut MaybeUninit<T>,
    ) -> Poll<Result<(), RecvTimeoutError>> {
        if let Poll::Ready(r) = self.recv.poll_into(cx, out) {
            return Poll::Ready(r.map_err(RecvTimeoutError::from));
        }
        if Pin::new(&mut self.sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        Poll::Ready(self.expire(out))
    }

    /// The time is up: withdraws the receive. H6: a value handed over in the same instant is
    /// returned (moved into `out`) rather than lost.
    #[cold]
    #[inline(never)]
    fn expire(&mut self, out: &mut MaybeUninit<T>) -> Result<(), RecvTimeoutError> {
        match self.recv.op.cancel(self.recv.chan) {
            Withdrawn::NotDone(_) => Err(RecvTimeoutError::Timeout),
            Withdrawn::Done(Some(v)) => {
                self.recv.chan.settle_kept();
                out.write(v);
                Ok(())
            }
            Withdrawn::Done(None) => Err(RecvTimeoutError::Disconnected),
        }
    }
}

impl<T> Future for RecvTimeoutFuture<'_, T> {
    type Output = Result<T, RecvTimeoutError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut out = MaybeUninit::uninit();
        self.get_mut().poll_into(cx, &mut out).map(|r| {
            // SAFETY: the receive succeeded: it moved a value into `out`.
            r.map(|()| unsafe { out.assume_init() })
        })
    }
}

/// [`Receiver::recv_timeout`]'s future, as [`RecvInPlace`].
struct RecvTimeoutInPlace<'f, 'a, T>(&'f mut RecvTimeoutFuture<'a, T>, &'f mut MaybeUninit<T>);

impl<T> Future for RecvTimeoutInPlace<'_, '_, T> {
    type Output = Result<(), RecvTimeoutError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.0.poll_into(cx, this.1)
    }
}

/// The blocking iterator of [`Receiver::iter`].
#[derive(Debug)]
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;

    #[inline] // a receive that completes at once is a few dozen instructions: no call frame
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

/// The non-blocking iterator of [`Receiver::try_iter`].
#[derive(Debug)]
pub struct TryIter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

/// The owning blocking iterator of a [`Receiver`] (`for v in rx`).
#[derive(Debug)]
pub struct IntoIter<T> {
    rx: Receiver<T>,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;

    #[inline] // a receive that completes at once is a few dozen instructions: no call frame
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T> Unpin for Receiver<T> {}

impl<T> futures_core::Stream for Receiver<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        if budget_spent(cx) {
            return Poll::Pending;
        }
        this.stream.poll(&this.chan, cx)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! A `Stream` poll's wait in the channel's queues (private, so checked here).

    use std::pin::Pin;
    use std::task::{Context, Waker};

    use super::{Receiver, bounded};

    fn poll_next_once(rx: &mut Receiver<u8>) -> std::task::Poll<Option<u8>> {
        let mut cx = Context::from_waker(Waker::noop());
        futures_core::Stream::poll_next(Pin::new(rx), &mut cx)
    }

    fn queued(rx: &Receiver<u8>) -> usize {
        rx.chan.lock().state().waiting().0
    }

    #[test]
    fn polls_abandoned_again_and_again_leave_one_wait_per_handle() {
        let (tx, mut rx) = bounded::<u8>(0);
        let mut other = rx.clone();
        for _ in 0..100 {
            assert!(poll_next_once(&mut rx).is_pending());
            assert!(poll_next_once(&mut other).is_pending());
        }
        assert_eq!(queued(&rx), 2);
        // A send tells both and leaves none queued; the value waits in the buffer.
        assert_eq!(tx.try_send(1), Ok(()));
        assert_eq!(queued(&rx), 0);
        assert_eq!(poll_next_once(&mut other), std::task::Poll::Ready(Some(1)));
        assert!(poll_next_once(&mut rx).is_pending());
        assert_eq!(queued(&rx), 1);
        // A handle dropped with its stream waiting withdraws the wait.
        drop(rx);
        assert_eq!(queued(&other), 0);
    }

    /// A value that owns heap memory and is large enough for the channel's "large value"
    /// paths (moved by raw copies and in calls of their own): under Miri, a value moved twice
    /// or not at all, or a copy left behind and dropped, is a double free, a leak or a read
    /// of freed memory.
    struct Large {
        text: String,
        pad: [u8; 512],
    }

    fn large(i: usize) -> Large {
        Large {
            text: format!("value {i}"),
            pad: [i as u8; 512],
        }
    }

    fn check(v: &Large, i: usize) {
        assert_eq!(v.text, format!("value {i}"));
        assert!(v.pad.iter().all(|&b| b == i as u8));
    }

    /// Every way a value moves: into the buffer and out, from a queued sender into a waiting
    /// receive's place, from a queued sender into the buffer (refill), into a queued
    /// receive's slot, back to a sender from a closing channel; for small and large values.
    #[test]
    fn values_move_through_every_path_exactly_once() {
        fn run<T: Send + 'static>(make: fn(usize) -> T, check: fn(&T, usize)) {
            // Buffer in, buffer out; a full buffer refuses and hands the value back.
            let (tx, rx) = bounded(2);
            tx.try_send(make(0)).ok().unwrap();
            tx.try_send(make(1)).ok().unwrap();
            let refused = tx.try_send(make(2)).unwrap_err().into_inner();
            check(&refused, 2);
            // A sender queued on the full buffer: the receive refills the buffer from it.
            let queued = std::thread::spawn({
                let tx = tx.clone();
                move || tx.send(make(3)).is_ok()
            });
            while rx.chan.lock().state().waiting().1 == 0 {
                std::thread::yield_now();
            }
            check(&rx.try_recv().unwrap(), 0);
            check(&rx.recv().unwrap(), 1);
            check(&rx.recv().unwrap(), 3);
            assert!(queued.join().unwrap());
            // Rendezvous, both ways round: a receive queued first, then a send queued first.
            let (tx, rx) = bounded(0);
            let receiver = std::thread::spawn(move || {
                let v = rx.recv().unwrap();
                (rx, v)
            });
            while tx.chan.lock().state().waiting().0 == 0 {
                std::thread::yield_now();
            }
            tx.send(make(4)).ok().unwrap();
            let (rx, v) = receiver.join().unwrap();
            check(&v, 4);
            let sender = std::thread::spawn({
                let tx = tx.clone();
                move || tx.send(make(5)).is_ok()
            });
            while rx.chan.lock().state().waiting().1 == 0 {
                std::thread::yield_now();
            }
            check(&rx.recv().unwrap(), 5);
            assert!(sender.join().unwrap());
            // A send queued when the channel closes gets its value back.
            let sender = std::thread::spawn({
                let tx = tx.clone();
                move || tx.send(make(6)).unwrap_err().into_inner()
            });
            while rx.chan.lock().state().waiting().1 == 0 {
                std::thread::yield_now();
            }
            drop(rx);
            check(&sender.join().unwrap(), 6);
            // Values left in a dropped channel's buffer are dropped with it.
            let (tx, rx) = bounded(1);
            tx.try_send(make(7)).ok().unwrap();
            drop((tx, rx));
            // A `select!` receive, chosen at once (from the buffer) and after waiting (handed
            // to its queued arm).
            let (tx, rx) = bounded(1);
            tx.try_send(make(8)).ok().unwrap();
            crate::select! { recv(rx) -> v => check(&v.unwrap(), 8) }
            let selecting = std::thread::spawn(move || {
                crate::select! { recv(rx) -> v => v.unwrap() }
            });
            while tx.chan.lock().state().waiting().0 == 0 {
                std::thread::yield_now();
            }
            tx.send(make(9)).ok().unwrap();
            check(&selecting.join().unwrap(), 9);
        }
        run(large, check);
        run(|i| i.to_string(), |v, i| assert_eq!(*v, i.to_string()));
    }
}
