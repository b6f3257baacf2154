//! One pending channel operation (a receive or a send) as a small state machine over the core:
//! try under the lock, else queue an entry (H1), then wait for DONE (H4) or withdraw (H5).
//! The single-operation futures and each `select!` arm are built from these.

use std::mem::MaybeUninit;
use std::task::{Context, Poll, Waker};

use super::core::{Chan, Entry, Observed, SignalRef, State, TryRecv, TrySend, wake};
use super::error::RecvError;
use crate::loom::sync::Arc;
use crate::task::waker::{clone_is_safe, lock_safe, relay};

/// A send found the channel closed: its value is still in its op ([`SendOp::take_value`]).
/// Results carry this, not the value, so that no value is copied through them ("Large
/// values", `chan/mod.rs`).
#[derive(Debug)]
pub(crate) struct Closed;

/// How a withdrawal (H5) ended.
pub(crate) enum Withdrawn<T> {
    /// Nothing was queued, or the entry was withdrawn before any completer claimed it: the
    /// operation did not happen. Holds a send's value.
    NotDone(Option<T>),
    /// A completer got there first: the operation happened. Holds the slot (a received value;
    /// or a send's value the closing channel handed back; else `None`).
    Done(Option<T>),
}

/// The queue entry of an operation, while it has one: what receives and sends share.
struct Queued<T>(Option<Arc<Entry<T>>>);

impl<T> Queued<T> {
    /// Queues a new entry with `queue` (the receive or the send queue). Lock held.
    fn enqueue(
        &mut self,
        state: &mut State<T>,
        queue: fn(&mut State<T>, Arc<Entry<T>>),
        entry: Arc<Entry<T>>,
    ) {
        queue(state, entry.clone());
        self.0 = Some(entry);
    }

    /// (H4) The owner's poll of a queued lone operation: once DONE, `Some` of what `take`
    /// made of the entry (it moves the slot's contents where the caller wants them).
    #[inline(always)]
    fn poll_done<R>(
        &mut self,
        chan: &Chan<T>,
        cx: &mut Context<'_>,
        take: impl FnOnce(&Entry<T>) -> R,
    ) -> Option<R> {
        let e = self.0.as_ref()?;
        // Woken because it is done (the usual case): no lock, and the waker is not needed.
        if !matches!(e.signal().observe(), Observed::Done(_)) {
            if !clone_is_safe(cx.waker()) && still_wakes(chan, e, cx.waker()) {
                return None;
            }
            let waker = lock_safe(cx.waker()); // its clone may be user code: not under the lock
            let locked = chan.lock();
            // Under the lock no completer is between claim and finish: WAITING or DONE.
            if !matches!(e.signal().observe(), Observed::Done(_)) {
                // SAFETY: we own the signal and hold the lock of its one channel.
                let replaced = unsafe { e.signal().set_waker(&waker) };
                drop(locked);
                drop(replaced); // user code: after the lock
                return None;
            }
        }
        let e = self.0.take()?;
        // We observed DONE for this entry's arm (H4): nobody else touches the slot.
        let r = take(&e);
        drop(e); // the completer kept it as the channel's spare: the next wait reuses it
        Some(r)
    }

    /// (H4) The slot after DONE was observed.
    fn take_done(&mut self) -> Option<T> {
        let e = self.0.take().expect("take_done without a queued operation");
        // SAFETY: the caller observed DONE for this entry's arm (H4): nobody else touches it.
        unsafe { e.take() }
    }

    /// Removes the (stale) entry from its queue and returns what its slot held (a send's
    /// value), for the caller to drop once the lock is released: a `T`'s `Drop` is user code
    /// and may use this very channel. Lock held.
    fn dequeue_locked(&mut self, state: &mut State<T>) -> Option<T> {
        let e = self.0.take()?;
        state.dequeue(&e);
        // SAFETY: we hold the channel lock, and the entry is out of the queue: stale, its
        // signal left WAITING for another arm or by a cancel, so no completer claims it (H2).
        unsafe { e.take() }
    }

    /// (H5) Withdraws the entry, whose signal the owner has already moved out of WAITING
    /// (`cancelled`: by its own CAS; else a completer claimed it, and since the caller holds
    /// the lock the completer held from claim to finish, it is DONE). `None` if not queued.
    fn withdraw_locked(&mut self, state: &mut State<T>, cancelled: bool) -> Option<Withdrawn<T>> {
        let e = self.0.take()?;
        Some(withdraw_entry(&e, state, cancelled))
    }

    /// (H5) Cancels a lone operation (one signal, one entry). `None` if not queued.
    fn cancel(&mut self, chan: &Chan<T>) -> Option<Withdrawn<T>> {
        let e = self.0.take()?;
        let cancelled = e.signal().try_cancel().is_ok();
        let mut locked = chan.lock();
        let withdrawn = withdraw_entry(&e, locked.state(), cancelled);
        drop(locked);
        // This may be the entry's last reference, and a cancelled entry still holds its
        // owner's waker, whose `Drop` is user code (it may use this channel): dropped after
        // the lock is released.
        drop(e);
        Some(withdrawn)
    }
}

/// Another executor's poll of a queued operation that is not DONE: whether the waker it
/// stored (a relay) already wakes `waker`. Then the poll has nothing to store and no relay
/// to make: a `select`/`join` there re-polls every branch when one wakes, and each re-poll
/// would otherwise allocate a relay (`tests/rt_spawn_alloc.rs`).
#[cold]
#[inline(never)]
fn still_wakes<T>(chan: &Chan<T>, e: &Entry<T>, waker: &Waker) -> bool {
    let locked = chan.lock();
    // Under the lock no completer is between claim and finish: WAITING or DONE.
    let wakes = !matches!(e.signal().observe(), Observed::Done(_))
        // SAFETY: we own the signal and hold the lock of its one channel.
        && unsafe { e.signal().wakes(waker) };
    drop(locked);
    wakes
}

/// Runs `f`, which may run user code (a waker's `wake`), after a value was moved into `out`:
/// if it unwinds, the value is dropped rather than leaked (the caller, unwinding too, never
/// reads `out`). Found by review: a receive whose wake of a queued sender panicked leaked the
/// value it had got.
#[inline(always)]
fn then_or_drop<T>(out: &mut MaybeUninit<T>, f: impl FnOnce()) {
    struct DropValue<'a, T>(&'a mut MaybeUninit<T>);
    impl<T> Drop for DropValue<'_, T> {
        fn drop(&mut self) {
            // SAFETY: reached only when `f` unwinds (the guard is forgotten otherwise), with
            // the value in place and not read.
            unsafe { self.0.assume_init_drop() }
        }
    }
    let guard = DropValue(out);
    f();
    std::mem::forget(guard);
}

/// `Queued::withdraw_locked` on a taken entry. Lock held.
fn withdraw_entry<T>(e: &Arc<Entry<T>>, state: &mut State<T>, cancelled: bool) -> Withdrawn<T> {
    if cancelled {
        state.dequeue(e);
    }
    // SAFETY: we hold the channel lock, and the entry is out of the queue or DONE (H5).
    let slot = unsafe { e.take() };
    if cancelled {
        Withdrawn::NotDone(slot)
    } else {
        Withdrawn::Done(slot)
    }
}

/// A receive in progress.
pub(crate) struct RecvOp<T> {
    queued: Queued<T>,
}

impl<T> RecvOp<T> {
    /// Whether the op has an entry in a queue (a select arm that is waiting).
    pub(crate) fn is_queued(&self) -> bool {
        self.queued.0.is_some()
    }

    pub(crate) const fn new() -> RecvOp<T> {
        RecvOp {
            queued: Queued(None),
        }
    }

    /// Polls the receive on its own: try (H1), else queue with its own signal, else wait.
    /// Inlined into the blocking-style `recv` and the future's poll: the try is the fast path
    /// (a value is there), queueing and the later polls are calls.
    ///
    /// The value received is moved into `out` (overwritten, not dropped; initialised if
    /// `Ready(Ok)`), its one move on this side ("Large values", `chan/mod.rs`).
    #[inline(always)]
    pub(crate) fn poll(
        &mut self,
        chan: &Chan<T>,
        cx: &mut Context<'_>,
        out: &mut MaybeUninit<T>,
    ) -> Poll<Result<(), RecvError>> {
        if self.queued.0.is_some() {
            return self.poll_queued(chan, cx, out);
        }
        let mut locked = chan.lock();
        match locked.state().try_recv(chan.cap, chan.seen(), out) {
            TryRecv::Got(w) => {
                drop(locked);
                then_or_drop(out, || wake(w));
                Poll::Ready(Ok(()))
            }
            TryRecv::Closed => Poll::Ready(Err(RecvError)),
            TryRecv::Empty if clone_is_safe(cx.waker()) => {
                self.enqueue_lone(locked.state(), cx);
                Poll::Pending
            }
            TryRecv::Empty => {
                drop(locked);
                self.poll_relayed(chan, cx, out)
            }
        }
    }

    /// The poll again, with a [`relay`] made outside the lock for another executor's waker
    /// (whose clone may be user code): the queued entry stores the relay.
    #[cold]
    #[inline(never)]
    fn poll_relayed(
        &mut self,
        chan: &Chan<T>,
        cx: &Context<'_>,
        out: &mut MaybeUninit<T>,
    ) -> Poll<Result<(), RecvError>> {
        let relay = relay(cx.waker());
        self.poll(chan, &mut Context::from_waker(&relay), out)
    }

    /// (H1) Queues this receive with its own signal (the try found nothing). Lock held.
    #[inline(never)]
    fn enqueue_lone(&mut self, state: &mut State<T>, cx: &Context<'_>) {
        let e = state.lone_entry(cx.waker(), None);
        self.queued.enqueue(state, State::enqueue_recv, e);
    }

    /// (H4) A poll after the receive was queued.
    #[inline(never)]
    fn poll_queued(
        &mut self,
        chan: &Chan<T>,
        cx: &mut Context<'_>,
        out: &mut MaybeUninit<T>,
    ) -> Poll<Result<(), RecvError>> {
        let take = |e: &Entry<T>| {
            // SAFETY: `poll_done` calls this after it observed DONE (H4).
            unsafe { e.take_to(out) }
        };
        match self.queued.poll_done(chan, cx, take) {
            None => Poll::Pending,
            Some(true) => {
                then_or_drop(out, || chan.settle_seen());
                Poll::Ready(Ok(()))
            }
            Some(false) => Poll::Ready(Err(RecvError)),
        }
    }

    /// Queues this receive under `signal` as `arm`. The caller holds the channel lock.
    pub(crate) fn enqueue_locked(&mut self, state: &mut State<T>, signal: SignalRef, arm: usize) {
        let e = Entry::new(signal, arm);
        self.queued.enqueue(state, State::enqueue_recv, e);
    }

    /// (H4) The slot after DONE was observed: the value (seen: counted out of transit), or
    /// `None` if the channel closed.
    pub(crate) fn take_done(&mut self, chan: &Chan<T>) -> Option<T> {
        let v = self.queued.take_done();
        if v.is_some() {
            chan.settle_seen(); // may wake (user code): `v` is a local, dropped if it panics
        }
        v
    }

    /// Removes the entry from the queue (it is stale: its signal left WAITING for another
    /// reason). The caller holds the channel lock.
    pub(crate) fn dequeue_locked(&mut self, state: &mut State<T>) {
        let slot = self.queued.dequeue_locked(state);
        debug_assert!(slot.is_none(), "a stale receive holds no value");
    }

    /// (H5) As `Queued::withdraw_locked`, for a `select!` arm.
    pub(crate) fn withdraw_locked(
        &mut self,
        state: &mut State<T>,
        cancelled: bool,
    ) -> Withdrawn<T> {
        (self.queued.withdraw_locked(state, cancelled)).unwrap_or(Withdrawn::NotDone(None))
    }

    /// (H5) Cancels a lone receive and reports how it ended.
    pub(crate) fn cancel(&mut self, chan: &Chan<T>) -> Withdrawn<T> {
        self.queued.cancel(chan).unwrap_or(Withdrawn::NotDone(None))
    }

    /// Cancels and, if a value had already been handed over, gives it back (H6): what a
    /// dropped receive does.
    #[inline(always)] // every finished receive is dropped through here: no call frame
    pub(crate) fn cancel_and_give_back(&mut self, chan: &Chan<T>) {
        if self.queued.0.is_some() {
            self.cancel_and_give_back_slow(chan);
        }
        // Else never queued, or done: the usual drop of a finished receive.
    }

    #[cold]
    fn cancel_and_give_back_slow(&mut self, chan: &Chan<T>) {
        if let Some(Withdrawn::Done(Some(v))) = self.queued.cancel(chan) {
            // Still counted in transit since the withdrawal: a close meanwhile left the
            // queued receivers waiting for it.
            chan.locked_then_wake(|state, _| chan.give_back_settled(state, v));
        }
    }
}

/// A send in progress.
pub(crate) struct SendOp<T> {
    /// The value, until it is sent or queued.
    value: Option<T>,
    queued: Queued<T>,
}

impl<T> SendOp<T> {
    pub(crate) const fn new(value: T) -> SendOp<T> {
        SendOp {
            value: Some(value),
            queued: Queued(None),
        }
    }

    /// Polls the send on its own: try (H1), else queue with its own signal, else wait.
    /// Inlined as [`RecvOp::poll`] is.
    ///
    /// The value moves once, from the op to where it goes (a waiting receive's slot, the
    /// buffer, or the queued entry's slot); a send that found the channel closed leaves it in
    /// the op ([`Closed`]; [`SendOp::take_value`]).
    #[inline(always)]
    pub(crate) fn poll(
        &mut self,
        chan: &Chan<T>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), Closed>> {
        if self.queued.0.is_some() {
            return self.poll_queued(chan, cx);
        }
        // A real check: with no value, `try_send` would hand "nothing" to a waiting receive
        // (found by review: a completed send polled again did that in release builds).
        assert!(self.value.is_some(), "a send polled after it completed");
        let mut locked = chan.lock();
        match locked.state().try_send(chan.cap, &mut self.value) {
            TrySend::Sent(w) => {
                drop(locked);
                wake(w);
                Poll::Ready(Ok(()))
            }
            TrySend::Closed => Poll::Ready(Err(Closed)),
            TrySend::Full if clone_is_safe(cx.waker()) => {
                self.enqueue_lone(locked.state(), cx);
                Poll::Pending
            }
            TrySend::Full => {
                drop(locked);
                self.poll_relayed(chan, cx)
            }
        }
    }

    /// As [`RecvOp::poll_relayed`].
    #[cold]
    #[inline(never)]
    fn poll_relayed(&mut self, chan: &Chan<T>, cx: &Context<'_>) -> Poll<Result<(), Closed>> {
        let relay = relay(cx.waker());
        self.poll(chan, &mut Context::from_waker(&relay))
    }

    /// (H1) Queues this send and its value with its own signal (no room). Lock held.
    #[inline(never)]
    fn enqueue_lone(&mut self, state: &mut State<T>, cx: &Context<'_>) {
        let e = state.lone_entry(cx.waker(), Some(&mut self.value));
        self.queued.enqueue(state, State::enqueue_send, e);
    }

    /// (H4) A poll after the send was queued: the value was taken, or the closing channel
    /// handed it back to the op.
    #[inline(never)]
    fn poll_queued(&mut self, chan: &Chan<T>, cx: &mut Context<'_>) -> Poll<Result<(), Closed>> {
        let value = &mut self.value;
        let take = |e: &Entry<T>| {
            // SAFETY: `poll_done` calls this after it observed DONE (H4).
            unsafe { e.take_into(value) }
        };
        match self.queued.poll_done(chan, cx, take) {
            None => Poll::Pending,
            Some(()) if value.is_none() => Poll::Ready(Ok(())),
            Some(()) => Poll::Ready(Err(Closed)),
        }
    }

    /// The value, if the op still holds it: not sent yet, or handed back ([`Closed`]).
    pub(crate) fn take_value(&mut self) -> Option<T> {
        self.value.take()
    }

    /// The value's place, for a non-blocking attempt under the lock ([`State::try_send`]
    /// takes it only if it sends it).
    pub(crate) fn value_mut(&mut self) -> &mut Option<T> {
        &mut self.value
    }

    /// Queues this send (with its value) under `signal` as `arm`. The caller holds the lock.
    pub(crate) fn enqueue_locked(&mut self, state: &mut State<T>, signal: SignalRef, arm: usize) {
        let e = Entry::new(signal, arm);
        // SAFETY: the entry is new and not yet queued: nobody else can reach it.
        unsafe { e.fill(&mut self.value) };
        self.queued.enqueue(state, State::enqueue_send, e);
    }

    /// (H4) The outcome after DONE was observed: sent, or the closing channel handed the
    /// value back (into the op).
    pub(crate) fn take_done(&mut self) -> Result<(), Closed> {
        debug_assert!(
            self.value.is_none(),
            "a queued send's value is in its entry"
        );
        self.value = self.queued.take_done();
        if self.value.is_none() {
            Ok(())
        } else {
            Err(Closed)
        }
    }

    /// As [`RecvOp::dequeue_locked`]; the value comes back to the op, so it is dropped with
    /// it, outside the lock (its `Drop` may use this channel).
    pub(crate) fn dequeue_locked(&mut self, state: &mut State<T>) {
        if let Some(v) = self.queued.dequeue_locked(state) {
            self.value = Some(v);
        }
    }

    /// As [`RecvOp::withdraw_locked`]; a withdrawn send hands its value back.
    pub(crate) fn withdraw_locked(
        &mut self,
        state: &mut State<T>,
        cancelled: bool,
    ) -> Withdrawn<T> {
        let value = &mut self.value;
        (self.queued.withdraw_locked(state, cancelled))
            .unwrap_or_else(|| Withdrawn::NotDone(value.take()))
    }

    /// (H5) Cancels a lone send and reports how it ended.
    pub(crate) fn cancel(&mut self, chan: &Chan<T>) -> Withdrawn<T> {
        let value = &mut self.value;
        (self.queued.cancel(chan)).unwrap_or_else(|| Withdrawn::NotDone(value.take()))
    }

    /// Whether the operation is queued.
    pub(crate) fn is_queued(&self) -> bool {
        self.queued.0.is_some()
    }
}

/// A `Stream` poll's wait: told, never handed a value ("Stream waits hold no value",
/// `chan/mod.rs`). Its entry sits in the watch queue until something makes a value
/// available, which completes it with an empty slot; the next poll then tries again.
pub(crate) struct WatchOp<T> {
    queued: Queued<T>,
}

impl<T> WatchOp<T> {
    pub(crate) const fn new() -> WatchOp<T> {
        WatchOp {
            queued: Queued(None),
        }
    }

    /// The next item: a value, `None` once the channel is closed and drained, or `Pending`
    /// with this wait queued (or its waker updated).
    pub(crate) fn poll(&mut self, chan: &Chan<T>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if self.queued.0.is_some() {
            let take = |e: &Entry<T>| {
                // SAFETY: `poll_done` calls this after it observed DONE (H4).
                unsafe { e.take() }
            };
            match self.queued.poll_done(chan, cx, take) {
                None => return Poll::Pending,
                Some(slot) => debug_assert!(slot.is_none(), "a watch is never handed a value"),
            }
        }
        let mut out = MaybeUninit::uninit();
        let mut locked = chan.lock();
        match locked.state().try_recv(chan.cap, chan.seen(), &mut out) {
            TryRecv::Got(w) => {
                drop(locked);
                // SAFETY: `Got`: `try_recv` moved a value into `out`. Read out before the
                // wake (user code): if that panics, the value is dropped, not leaked.
                let v = unsafe { out.assume_init() };
                wake(w);
                Poll::Ready(Some(v))
            }
            TryRecv::Closed => Poll::Ready(None),
            TryRecv::Empty if clone_is_safe(cx.waker()) => {
                let state = locked.state();
                let e = state.lone_entry(cx.waker(), None);
                self.queued.enqueue(state, State::enqueue_watch, e);
                Poll::Pending
            }
            TryRecv::Empty => {
                // As `RecvOp::poll_relayed`.
                drop(locked);
                let relay = relay(cx.waker());
                self.poll(chan, &mut Context::from_waker(&relay))
            }
        }
    }

    /// Withdraws the wait, if queued (the handle is going away). Nothing to give back.
    pub(crate) fn cancel(&mut self, chan: &Chan<T>) {
        if self.queued.0.is_some() {
            let withdrawn = self.queued.cancel(chan);
            debug_assert!(
                matches!(
                    withdrawn,
                    Some(Withdrawn::NotDone(None) | Withdrawn::Done(None))
                ),
                "a watch is never handed a value"
            );
        }
    }
}
