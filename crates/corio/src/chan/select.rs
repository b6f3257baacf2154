//! `select!`: wait on several channel operations and run exactly one.
//!
//! # Mechanism (Go's `selectgo`, with the hand-off protocol of the module essay)
//!
//! The macro builds one *arm* per channel operation on the caller's stack (a [`RecvArm`] or
//! [`SendArm`]) and a [`SelectFuture`] over them; the blocking form runs it with
//! [`block_on`](crate::block_on), `select_async!` awaits it. Its first poll:
//!
//! 1. locks every channel named, once each, in address order (so two selects over the same
//!    channels cannot deadlock, and a channel named twice is locked once);
//! 2. tries the arms in a uniformly random order (a Fisher–Yates shuffle: Go's `pollorder`)
//!    and performs the first that can complete now — this is the fairness among ready arms;
//! 3. if none can: with a `default` arm, unlocks and picks it; otherwise queues one entry per
//!    arm, all under one signal, and unlocks. No arm can complete while the locks are held, so
//!    no arm completes before every arm is queued, and none can match an entry of its own
//!    select (those are not queued yet while it tries).
//!
//! Later polls read the signal (H4). The first completer to claim it (H2) decides the arm; the
//! other entries are stale from that instant and are removed under their locks before the
//! future resolves, so an arm not chosen leaves no trace: no value taken, none sent, no entry
//! left behind. An `after(d)` arm is a [`Sleep`]: when it fires first, the select cancels its
//! signal (H5); if a completer won that race, the completed arm is returned instead — its
//! value must not be lost. Dropping the future mid-wait cancels the same way and gives a
//! received value back (H6).
//!
//! Arms are `&mut dyn Arm` in a slice on the caller's stack: no allocation beyond the signal
//! and the entries of an actual wait, and channels of different element types mix freely.

use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::core::{Chan, Observed, Signal, SignalRef, TryRecv, TrySend, wake};
use super::error::{RecvError, SendError};
use super::op::{RecvOp, SendOp, Withdrawn};
use super::{Receiver, Sender};
use crate::loom::sync::Arc;
use crate::task::waker::{clone_is_safe, lock_safe};
use crate::time::Sleep;

/// The most arms one `select!` may have (the shuffle and the lock order are fixed arrays on
/// the stack). Go allows 65536; 64 is far beyond any hand-written select.
pub const MAX_ARMS: usize = 64;

/// Which arm a [`SelectFuture`] chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selected {
    /// The channel arm with this index (its position in the slice).
    Arm(usize),
    /// The `after` timer fired first.
    After,
    /// Nothing was ready and there is a `default` arm.
    Default,
}

/// A select's shared signal, as the arms see it (opaque outside the crate).
#[doc(hidden)]
pub struct ArmSignal(Arc<Signal>);

/// One channel operation of a select: [`RecvArm`] and [`SendArm`], and nothing else. It has
/// no methods of its own; the select's protocol is the sealed supertrait's, and each of its
/// methods takes an [`Internal`](sealed::Internal) that only this module can make. So code
/// outside the crate can neither implement an arm nor drive one behind its channel's back: the
/// protocol's methods are callable on a `dyn Arm` wherever it is (a trait object's supertrait
/// methods need no import), and while they were token-free, safe code that forgot a polled
/// `SelectFuture` could call `complete` on a still-queued arm (a value taken without the
/// channel's lock: duplicated, or an internal assertion hit) or `lock` a channel for ever
/// (`tests/chan_review_edges.rs`).
#[doc(hidden)]
pub trait Arm: sealed::Protocol {}

impl<A: sealed::Protocol + ?Sized> Arm for A {}

mod sealed {
    use super::ArmSignal;
    use std::task::Waker;

    /// Proof that the caller is this module: its field is private to `select.rs`, and no
    /// value of it leaves the module except into this crate's own arms.
    pub struct Internal(pub(super) ());

    /// The select's internal protocol over one arm (see `Arm`).
    pub trait Protocol {
        /// The channel's identity (lock order, duplicates).
        fn chan_id(&self, _: Internal) -> usize;
        /// Locks the channel.
        fn lock(&self, _: Internal);
        /// Unlocks the channel.
        ///
        /// # Safety
        ///
        /// The caller locked it with [`Protocol::lock`] (on this arm or one on the same
        /// channel).
        unsafe fn unlock(&self, _: Internal);
        /// (H1) Performs the operation if it can complete now; `Some(waker to call)` if it did.
        ///
        /// # Safety
        ///
        /// The channel lock is held.
        unsafe fn try_locked(&mut self, _: Internal) -> Option<Option<Waker>>;
        /// Queues the operation as arm `arm` of `signal`.
        ///
        /// # Safety
        ///
        /// The channel lock is held.
        unsafe fn enqueue_locked(&mut self, _: Internal, signal: &ArmSignal, arm: usize);
        /// Removes this arm's (stale) entry.
        ///
        /// # Safety
        ///
        /// The channel lock is held.
        unsafe fn dequeue_locked(&mut self, _: Internal);
        /// Whether the arm is as `new` made it: not queued, no result, a send's value still
        /// there. One that is not was used by a select that was forgotten (`mem::forget`)
        /// while it waited; a second select must refuse it before it locks anything.
        fn unused(&mut self, _: Internal) -> bool;
        /// (H4) Takes the result after DONE was observed for this arm.
        fn complete(&mut self, _: Internal);
        /// (H5/H6) The select was dropped after this arm completed: give a received value
        /// back. Returns the wakers to call once the lock is released.
        ///
        /// # Safety
        ///
        /// The channel lock is held.
        unsafe fn abandon_locked(&mut self, _: Internal) -> Vec<Waker>;
    }
}

use sealed::{Internal, Protocol};

/// The token, for this module's calls of the protocol.
const IN: Internal = Internal(());

/// A `recv(rx) -> v` arm.
#[doc(hidden)]
pub struct RecvArm<'a, T> {
    chan: &'a Chan<T>,
    op: RecvOp<T>,
    /// Not an in-place `MaybeUninit` with a `Drop` of its own: such a `Drop` would make
    /// every lifetime in `T` outlive the arm, and a `select!` whose body moves a receiver of
    /// borrowed values would no longer compile (found by review; `Option` drops as `T` does).
    result: Option<Result<T, RecvError>>,
}

impl<'a, T> RecvArm<'a, T> {
    /// An arm receiving from `rx`.
    pub fn new(rx: &'a Receiver<T>) -> Self {
        RecvArm {
            chan: &rx.chan,
            op: RecvOp::new(),
            result: None,
        }
    }

    /// Whether this arm was chosen.
    pub fn is_selected(&self) -> bool {
        self.result.is_some()
    }

    /// Nothing to drop: a receive arm holds no value of its own until chosen.
    pub fn drop_unsent(&mut self) {}

    /// The chosen arm's result.
    pub fn take(&mut self) -> Result<T, RecvError> {
        self.result
            .take()
            .expect("select!: took the result of an arm not chosen")
    }
}

/// A `send(tx, value) -> res` arm.
#[doc(hidden)]
pub struct SendArm<'a, T> {
    chan: &'a Chan<T>,
    op: SendOp<T>,
    result: Option<Result<(), SendError<T>>>,
}

impl<'a, T> SendArm<'a, T> {
    /// An arm sending `value` on `tx`.
    pub fn new(tx: &'a Sender<T>, value: T) -> Self {
        SendArm {
            chan: &tx.chan,
            op: SendOp::new(value),
            result: None,
        }
    }

    /// Whether this arm was chosen.
    pub fn is_selected(&self) -> bool {
        self.result.is_some()
    }

    /// Drops the value if it was not sent (the arm was not chosen), so that it goes before
    /// the chosen arm's body runs, whether the select chose at once or after waiting. (A
    /// chosen arm's value is gone, or in its result.)
    pub fn drop_unsent(&mut self) {
        drop(self.op.take_value());
    }

    /// The chosen arm's result.
    pub fn take(&mut self) -> Result<(), SendError<T>> {
        self.result
            .take()
            .expect("select!: took the result of an arm not chosen")
    }
}

/// The `Arm` methods that are the same for both kinds: they only reach the channel and the
/// op's queue entry.
macro_rules! arm_plumbing {
    () => {
        fn chan_id(&self, _: Internal) -> usize {
            self.chan.id()
        }

        fn lock(&self, _: Internal) {
            self.chan.raw_lock().lock();
        }

        unsafe fn unlock(&self, _: Internal) {
            self.chan.raw_lock().unlock();
        }

        unsafe fn enqueue_locked(&mut self, _: Internal, signal: &ArmSignal, arm: usize) {
            debug_assert!(!self.op.is_queued(), "a select arm queued twice");
            // SAFETY: the caller holds the lock (this method's contract).
            let state = unsafe { self.chan.state_locked() };
            self.op
                .enqueue_locked(state, SignalRef::Shared(signal.0.clone()), arm);
        }

        unsafe fn dequeue_locked(&mut self, _: Internal) {
            // SAFETY: the caller holds the lock (this method's contract).
            let state = unsafe { self.chan.state_locked() };
            self.op.dequeue_locked(state);
        }
    };
}

impl<T> Protocol for RecvArm<'_, T> {
    arm_plumbing!();

    fn unused(&mut self, _: Internal) -> bool {
        !self.op.is_queued() && self.result.is_none()
    }

    unsafe fn try_locked(&mut self, _: Internal) -> Option<Option<Waker>> {
        // SAFETY: the caller holds the lock (this method's contract).
        let state = unsafe { self.chan.state_locked() };
        let mut out = MaybeUninit::uninit();
        match state.try_recv(self.chan.cap, self.chan.seen(), &mut out) {
            TryRecv::Got(w) => {
                // SAFETY: `Got`: `try_recv` moved a value into `out`.
                self.result = Some(Ok(unsafe { out.assume_init() }));
                Some(w) // woken by the caller after the locks, the value stored by then
            }
            TryRecv::Closed => {
                self.result = Some(Err(RecvError));
                Some(None)
            }
            TryRecv::Empty => None,
        }
    }

    fn complete(&mut self, _: Internal) {
        self.result = Some(self.op.take_done(self.chan).ok_or(RecvError));
    }

    unsafe fn abandon_locked(&mut self, _: Internal) -> Vec<Waker> {
        // SAFETY: the caller holds the lock.
        let state = unsafe { self.chan.state_locked() };
        match self.op.withdraw_locked(state, false) {
            Withdrawn::Done(Some(v)) => self.chan.give_back_settled(state, v),
            _ => Vec::new(),
        }
    }
}

/// A send arm that found its channel closed still holds its value.
const KEPT: &str = "a send keeps its value until it is sent";

impl<T> Protocol for SendArm<'_, T> {
    arm_plumbing!();

    fn unused(&mut self, _: Internal) -> bool {
        !self.op.is_queued() && self.result.is_none() && self.op.value_mut().is_some()
    }

    unsafe fn try_locked(&mut self, _: Internal) -> Option<Option<Waker>> {
        // SAFETY: the caller holds the lock (this method's contract).
        let state = unsafe { self.chan.state_locked() };
        debug_assert!(self.op.value_mut().is_some(), "a select arm tried twice");
        match state.try_send(self.chan.cap, self.op.value_mut()) {
            TrySend::Sent(w) => {
                self.result = Some(Ok(()));
                Some(w)
            }
            TrySend::Closed => {
                self.result = Some(Err(SendError(self.op.take_value().expect(KEPT))));
                Some(None)
            }
            TrySend::Full => None,
        }
    }

    fn complete(&mut self, _: Internal) {
        self.result = Some(match self.op.take_done() {
            Ok(()) => Ok(()),
            Err(_closed) => Err(SendError(self.op.take_value().expect(KEPT))),
        });
    }

    unsafe fn abandon_locked(&mut self, _: Internal) -> Vec<Waker> {
        // SAFETY: the caller holds the lock.
        let state = unsafe { self.chan.state_locked() };
        // The send happened (or the closing channel handed the value back, which is then
        // dropped with the arm, outside the lock).
        if let Withdrawn::Done(Some(v)) = self.op.withdraw_locked(state, false) {
            self.result = Some(Err(SendError(v)));
        }
        Vec::new()
    }
}

/// The future of a select over `arms` (what `select!` and `select_async!` expand to).
#[doc(hidden)]
#[must_use = "futures do nothing unless polled"]
pub struct SelectFuture<'s, A: Arm + ?Sized> {
    arms: &'s mut [&'s mut A],
    after: Option<Sleep>,
    default: bool,
    /// Set once the arms are queued (step 3).
    signal: Option<ArmSignal>,
    finished: bool,
}

impl<'s, A: Arm + ?Sized> SelectFuture<'s, A> {
    /// A select over `arms`, with an optional `after` timer and `default` arm.
    ///
    /// # Panics
    ///
    /// With more than [`MAX_ARMS`] arms.
    pub fn new(arms: &'s mut [&'s mut A], after: Option<Duration>, default: bool) -> Self {
        assert!(
            arms.len() <= MAX_ARMS,
            "select! supports at most {MAX_ARMS} arms"
        );
        SelectFuture {
            arms,
            after: after.map(crate::time::sleep_async),
            default,
            signal: None,
            finished: false,
        }
    }

    /// Steps 1–3 of the module essay. `Some` if an arm (or `default`) was chosen at once.
    fn first_pass(&mut self, waker: &Waker) -> Option<Selected> {
        // Before any lock is taken: a panic under a channel's spin lock would leave it held.
        for arm in self.arms.iter_mut() {
            assert!(
                arm.unused(IN),
                "corio: a select arm reused by a second select (the first was forgotten while \
                 it waited)"
            );
        }
        let n = self.arms.len();
        let lock_order = lock_order(self.arms);
        let arms = &mut *self.arms;
        let locked = &lock_order[..n];
        lock_all(arms, locked);
        let mut poll_order = [0u8; MAX_ARMS];
        shuffle(&mut poll_order[..n]);
        for &i in &poll_order[..n] {
            // SAFETY: every channel is locked (lock_all above).
            if let Some(w) = unsafe { arms[i as usize].try_locked(IN) } {
                // SAFETY: locked by lock_all with the same order.
                unsafe { unlock_all(arms, locked) };
                wake(w);
                return Some(Selected::Arm(i as usize));
            }
        }
        if self.default {
            // SAFETY: as above.
            unsafe { unlock_all(arms, locked) };
            return Some(Selected::Default);
        }
        // Queued in the random poll order too: two arms on one channel sit in its queue in
        // that order, so which of them a counterpart meets first is random as well (Go builds
        // its lock order from the poll order for the same reason; TestPseudoRandomSend).
        let signal = ArmSignal(Arc::new(Signal::new(waker)));
        for &i in &poll_order[..n] {
            // SAFETY: every channel is locked.
            unsafe { arms[i as usize].enqueue_locked(IN, &signal, i as usize) };
        }
        // SAFETY: as above.
        unsafe { unlock_all(arms, locked) };
        self.signal = Some(signal);
        None
    }

    /// A later poll before DONE was seen: store the waker, which needs the lock of every
    /// channel an arm is queued on (`Signal::set_waker`); under them no completer is between
    /// claim and finish, so the state is WAITING, or DONE (then that arm is the result).
    fn refresh(&mut self, waker: &Waker) -> Option<Selected> {
        let signal = &self.signal.as_ref()?.0;
        let order = lock_order(self.arms);
        let locked = &order[..self.arms.len()];
        lock_all(self.arms, locked);
        let seen = signal.observe();
        let mut replaced = None;
        if seen == Observed::Waiting {
            // SAFETY: we own the signal and hold the lock of every channel it is queued on.
            replaced = unsafe { signal.set_waker(waker) };
        }
        // SAFETY: locked by lock_all with the same order.
        unsafe { unlock_all(self.arms, locked) };
        drop(replaced); // user code: after the locks
        match seen {
            Observed::Done(k) => Some(self.finish(k)),
            _ => None,
        }
    }

    /// Whether the select still waits and the waker it stored (a relay) already wakes
    /// `waker`: another executor's `select`/`join` re-polls every branch when one wakes, and
    /// each re-poll would otherwise allocate a relay (`tests/rt_spawn_alloc.rs`).
    #[cold]
    #[inline(never)]
    fn still_wakes(&mut self, waker: &Waker) -> bool {
        let Some(signal) = self.signal.as_ref() else {
            return false;
        };
        let signal = &signal.0;
        let order = lock_order(self.arms);
        let locked = &order[..self.arms.len()];
        lock_all(self.arms, locked);
        // SAFETY: we own the signal and hold the lock of every channel it is queued on.
        let wakes = signal.observe() == Observed::Waiting && unsafe { signal.wakes(waker) };
        // SAFETY: locked by lock_all with the same order.
        unsafe { unlock_all(self.arms, locked) };
        wakes
    }

    /// Arm `k` completed (DONE observed): take its result, withdraw the others.
    fn finish(&mut self, k: usize) -> Selected {
        self.arms[k].complete(IN);
        self.dequeue_all_but(Some(k));
        Selected::Arm(k)
    }

    fn dequeue_all_but(&mut self, chosen: Option<usize>) {
        for (i, arm) in self.arms.iter_mut().enumerate() {
            if Some(i) != chosen {
                arm.lock(IN);
                // SAFETY: locked just above; unlocked just below.
                unsafe {
                    arm.dequeue_locked(IN);
                    arm.unlock(IN);
                }
            }
        }
    }

    /// (H5) The timer fired: cancel, unless an arm won the race (then that arm it is).
    fn expire(&mut self) -> Selected {
        let signal = self
            .signal
            .as_ref()
            .expect("expire before the arms were queued");
        match signal.0.try_cancel() {
            Ok(()) => {
                self.dequeue_all_but(None);
                Selected::After
            }
            Err(k) => {
                // The completer holds this lock from claim to finish: once we have had it,
                // the arm is DONE.
                self.arms[k].lock(IN);
                // SAFETY: locked just above.
                unsafe { self.arms[k].unlock(IN) };
                self.finish(k)
            }
        }
    }
}

/// The arms' indices sorted by channel address: the order `lock_all` takes their locks in.
fn lock_order<A: Arm + ?Sized>(arms: &[&mut A]) -> [u8; MAX_ARMS] {
    let mut order = [0u8; MAX_ARMS];
    for (i, slot) in order[..arms.len()].iter_mut().enumerate() {
        *slot = i as u8;
    }
    order[..arms.len()].sort_unstable_by_key(|&i| arms[i as usize].chan_id(IN));
    order
}

fn lock_all<A: Arm + ?Sized>(arms: &[&mut A], order: &[u8]) {
    let mut last = None;
    for &i in order {
        let id = arms[i as usize].chan_id(IN);
        if last != Some(id) {
            arms[i as usize].lock(IN);
            last = Some(id);
        }
    }
}

/// # Safety
///
/// `lock_all(arms, order)` locked them.
unsafe fn unlock_all<A: Arm + ?Sized>(arms: &[&mut A], order: &[u8]) {
    let mut last = None;
    for &i in order {
        let id = arms[i as usize].chan_id(IN);
        if last != Some(id) {
            // SAFETY: locked by lock_all, once per channel, as here.
            unsafe { arms[i as usize].unlock(IN) };
            last = Some(id);
        }
    }
}

/// Fills `order` with a uniformly random permutation of `0..order.len()`.
fn shuffle(order: &mut [u8]) {
    for (i, slot) in order.iter_mut().enumerate() {
        *slot = i as u8;
    }
    // Under loom the order must be deterministic for the model checker to replay runs.
    #[cfg(not(loom))]
    for i in (1..order.len()).rev() {
        let j = (rand_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
}

/// wyrand (Wang Yi's public-domain generator, as Go's `runtime.rand` uses), per thread,
/// seeded from std's per-process random hasher keys. Not per coroutine on purpose: it is
/// stateless from a coroutine's point of view.
#[cfg(not(loom))]
fn rand_u64() -> u64 {
    use std::cell::Cell;
    use std::hash::{BuildHasher, RandomState};
    thread_local! {
        static STATE: Cell<u64> = Cell::new(RandomState::new().hash_one(std::thread::current().id()));
    }
    STATE.with(|s| {
        let x = s.get().wrapping_add(0xa076_1d64_78bd_642f);
        s.set(x);
        let t = u128::from(x) * u128::from(x ^ 0xe703_7ed1_a0b4_28db);
        (t >> 64) as u64 ^ t as u64
    })
}

impl<A: Arm + ?Sized> Unpin for SelectFuture<'_, A> {}

impl<A: Arm + ?Sized> std::future::Future for SelectFuture<'_, A> {
    type Output = Selected;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Selected> {
        let this = self.get_mut();
        assert!(!this.finished, "a select polled after it completed");
        // The coop budget, as the channel futures take it: a loop of selects over ready
        // channels must not hold the worker.
        if super::budget_spent(cx) {
            return Poll::Pending;
        }
        let ready = match &this.signal {
            // The waker is cloned under the arms' locks: another executor's is relayed
            // (`lock_safe`), its clone being user code.
            None => this.first_pass(&lock_safe(cx.waker())),
            Some(signal) => match signal.0.observe() {
                Observed::Done(k) => Some(this.finish(k)),
                // Another executor polling again with the waker it stored (relayed): nothing
                // to store, and no relay to make (`still_wakes`).
                _ if !clone_is_safe(cx.waker()) && this.still_wakes(cx.waker()) => None,
                _ => this.refresh(&lock_safe(cx.waker())),
            },
        };
        let ready = ready.or_else(|| {
            let sleep = this.after.as_mut()?;
            Pin::new(sleep).poll(cx).is_ready().then(|| this.expire())
        });
        match ready {
            Some(r) => {
                this.finished = true;
                Poll::Ready(r)
            }
            None => Poll::Pending,
        }
    }
}

impl<A: Arm + ?Sized> Drop for SelectFuture<'_, A> {
    fn drop(&mut self) {
        let Some(signal) = &self.signal else { return };
        if self.finished {
            return;
        }
        match signal.0.try_cancel() {
            Ok(()) => self.dequeue_all_but(None),
            Err(k) => {
                let arm = &mut self.arms[k];
                arm.lock(IN);
                // SAFETY: locked just above; unlocked just below.
                let wakers = unsafe {
                    let wakers = arm.abandon_locked(IN);
                    arm.unlock(IN);
                    wakers
                };
                wakers.into_iter().for_each(Waker::wake);
                self.dequeue_all_but(Some(k));
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! Arms not chosen leave no entry in their channel's queues (the queues are private, so
    //! this is checked here rather than in `tests/select.rs`).

    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    use crate::chan::{Receiver, Sender, bounded};

    fn waiting<T>(rx: &Receiver<T>) -> (usize, usize) {
        rx.chan.lock().state().waiting()
    }

    fn waiting_tx<T>(tx: &Sender<T>) -> (usize, usize) {
        tx.chan.lock().state().waiting()
    }

    fn poll_once<F: std::future::Future>(fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        fut.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn a_completed_select_leaves_no_entry_on_the_arms_not_chosen() {
        let (a_tx, a) = bounded::<u8>(0);
        let (b_tx, b) = bounded::<u8>(0);
        let mut fut = pin!(async {
            crate::select_async! {
                recv(a) -> v => v,
                recv(b) -> v => v,
                send(b_tx, 3) -> _ => Ok(0),
            }
        });
        assert!(poll_once(fut.as_mut()).is_pending());
        assert_eq!((waiting(&a), waiting(&b)), ((1, 0), (1, 1)));
        a_tx.try_send(1).unwrap();
        assert_eq!(poll_once(fut.as_mut()), Poll::Ready(Ok(1)));
        assert_eq!((waiting(&a), waiting(&b)), ((0, 0), (0, 0)));
        assert_eq!(waiting_tx(&a_tx), (0, 0));
    }

    #[test]
    fn a_dropped_or_timed_out_select_leaves_no_entry() {
        let (_a_tx, a) = bounded::<u8>(0);
        let (b_tx, b) = bounded::<u8>(0);
        {
            let mut fut = pin!(async {
                crate::select_async! {
                    recv(a) -> _ => {},
                    send(b_tx, 1) -> _ => {},
                }
            });
            assert!(poll_once(fut.as_mut()).is_pending());
            assert_eq!((waiting(&a), waiting(&b)), ((1, 0), (0, 1)));
        }
        assert_eq!((waiting(&a), waiting(&b)), ((0, 0), (0, 0)));
        let timed_out = crate::block_on(async {
            crate::select_async! {
                recv(a) -> _ => false,
                send(b_tx, 1) -> _ => false,
                after(Duration::from_millis(1)) => true,
            }
        });
        assert!(timed_out);
        assert_eq!((waiting(&a), waiting(&b)), ((0, 0), (0, 0)));
    }
}

/// Waits on several channel operations and runs the one that happens; blocking-style (it
/// suspends a stackful coroutine or parks a thread; inside an async task use
/// [`select_async!`](crate::select_async)).
///
/// ```text
/// select! {
///     recv(rx) -> v => ..,          // v: Result<T, RecvError>
///     send(tx, value) -> res => ..,  // res: Result<(), SendError<T>>
///     after(duration) => ..,        // if no other arm happened within `duration`
///     default => ..,                // if no arm can happen now (never waits)
/// }
/// ```
///
/// Arms over any mix of channels (and element types), in any order; `after` and `default` at
/// most once each. When several arms are ready one is chosen uniformly at random; an arm not
/// chosen leaves no trace (no value taken or sent, no waiter left registered). A send arm's
/// value expression is evaluated before the select waits and, if the arm is not chosen,
/// dropped before the chosen arm's body runs. A select with no arms at all waits forever, as Go's `select {}`. Arm bodies may
/// `break`, `continue` and `return`.
///
/// ```
/// use std::time::Duration;
///
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// rt.run(|| {
///     let (tx, rx) = corio::chan::bounded::<i32>(0);
///     let (done_tx, done_rx) = corio::chan::bounded::<()>(0);
///     corio::go(move || {
///         for i in 0..3 {
///             tx.send(i).unwrap();
///         }
///         drop(done_tx); // closes `done`
///     });
///     let mut got = Vec::new();
///     loop {
///         corio::select! {
///             recv(rx) -> v => match v {
///                 Ok(v) => got.push(v),
///                 Err(_) => break, // closed: the sender is gone
///             },
///             recv(done_rx) -> _ => break,
///             after(Duration::from_secs(10)) => panic!("timed out"),
///         }
///     }
///     assert_eq!(got, [0, 1, 2]);
/// });
/// ```
///
/// # Panics
///
/// Inside an async task (use `select_async!`), and with more than 64 channel arms.
#[macro_export]
macro_rules! select {
    ($($arms:tt)*) => {
        $crate::__select_parse!(@blocking [] [] [] $($arms)*)
    };
}

/// The async form of [`select!`](crate::select): the same arms, awaited (use it inside
/// `async` code, for example a task made by [`corio::spawn`](crate::spawn)).
///
/// ```
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let v = rt.block_on(async {
///     let (tx, rx) = corio::chan::bounded::<u8>(1);
///     tx.send_async(7).await.unwrap();
///     corio::select_async! {
///         recv(rx) -> v => v.unwrap(),
///         after(std::time::Duration::from_secs(10)) => 0,
///     }
/// });
/// assert_eq!(v, 7);
/// ```
#[macro_export]
macro_rules! select_async {
    ($($arms:tt)*) => {
        $crate::__select_parse!(@awaiting [] [] [] $($arms)*)
    };
}

/// The arm parser of `select!` (a token muncher). Each step introduces one `__arm` and one
/// `__ch` binding; macro hygiene makes each one a distinct variable.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_parse {
    // recv(rx) -> pat => { block } [,]
    (@$mode:ident [$($arms:tt)*] [$($after:tt)*] [$($default:tt)*]
        recv($rx:expr) -> $p:pat => $body:block, $($rest:tt)*) => {
        $crate::__select_parse!(@$mode
            [$($arms)* (__arm, __ch, $rx, $crate::chan::__private::RecvArm::new(__ch), $p, $body)]
            [$($after)*] [$($default)*] $($rest)*)
    };
    // recv(rx) -> pat => { block } [,]
    (@$mode:ident [$($arms:tt)*] [$($after:tt)*] [$($default:tt)*]
        recv($rx:expr) -> $p:pat => $body:block $($rest:tt)*) => {
        $crate::__select_parse!(@$mode
            [$($arms)* (__arm, __ch, $rx, $crate::chan::__private::RecvArm::new(__ch), $p, $body)]
            [$($after)*] [$($default)*] $($rest)*)
    };
    // recv(rx) -> pat => expr, ...
    (@$mode:ident [$($arms:tt)*] [$($after:tt)*] [$($default:tt)*]
        recv($rx:expr) -> $p:pat => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__select_parse!(@$mode
            [$($arms)* (__arm, __ch, $rx, $crate::chan::__private::RecvArm::new(__ch), $p, $body)]
            [$($after)*] [$($default)*] $($($rest)*)?)
    };
    // send(tx, value) -> pat => { block } [,]
    (@$mode:ident [$($arms:tt)*] [$($after:tt)*] [$($default:tt)*]
        send($tx:expr, $v:expr) -> $p:pat => $body:block, $($rest:tt)*) => {
        $crate::__select_parse!(@$mode
            [$($arms)* (__arm, __ch, $tx, $crate::chan::__private::SendArm::new(__ch, $v), $p, $body)]
            [$($after)*] [$($default)*] $($rest)*)
    };
    // send(tx, value) -> pat => { block } [,]
    (@$mode:ident [$($arms:tt)*] [$($after:tt)*] [$($default:tt)*]
        send($tx:expr, $v:expr) -> $p:pat => $body:block $($rest:tt)*) => {
        $crate::__select_parse!(@$mode
            [$($arms)* (__arm, __ch, $tx, $crate::chan::__private::SendArm::new(__ch, $v), $p, $body)]
            [$($after)*] [$($default)*] $($rest)*)
    };
    // send(tx, value) -> pat => expr, ...
    (@$mode:ident [$($arms:tt)*] [$($after:tt)*] [$($default:tt)*]
        send($tx:expr, $v:expr) -> $p:pat => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__select_parse!(@$mode
            [$($arms)* (__arm, __ch, $tx, $crate::chan::__private::SendArm::new(__ch, $v), $p, $body)]
            [$($after)*] [$($default)*] $($($rest)*)?)
    };
    // after(duration) => { block } [,]
    (@$mode:ident [$($arms:tt)*] [] [$($default:tt)*]
        after($d:expr) => $body:block, $($rest:tt)*) => {
        $crate::__select_parse!(@$mode [$($arms)*] [($d, $body)] [$($default)*] $($rest)*)
    };
    // after(duration) => { block } [,]
    (@$mode:ident [$($arms:tt)*] [] [$($default:tt)*]
        after($d:expr) => $body:block $($rest:tt)*) => {
        $crate::__select_parse!(@$mode [$($arms)*] [($d, $body)] [$($default)*] $($rest)*)
    };
    // after(duration) => expr, ...
    (@$mode:ident [$($arms:tt)*] [] [$($default:tt)*]
        after($d:expr) => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__select_parse!(@$mode [$($arms)*] [($d, $body)] [$($default)*] $($($rest)*)?)
    };
    // default => { block } [,]
    (@$mode:ident [$($arms:tt)*] [$($after:tt)*] []
        default => $body:block, $($rest:tt)*) => {
        $crate::__select_parse!(@$mode [$($arms)*] [$($after)*] [(true, $body)] $($rest)*)
    };
    // default => { block } [,]
    (@$mode:ident [$($arms:tt)*] [$($after:tt)*] []
        default => $body:block $($rest:tt)*) => {
        $crate::__select_parse!(@$mode [$($arms)*] [$($after)*] [(true, $body)] $($rest)*)
    };
    // default => expr, ...
    (@$mode:ident [$($arms:tt)*] [$($after:tt)*] []
        default => $body:expr $(, $($rest:tt)*)?) => {
        $crate::__select_parse!(@$mode [$($arms)*] [$($after)*] [(true, $body)] $($($rest)*)?)
    };
    // All arms parsed.
    (@$mode:ident [$(($var:ident, $ch:ident, $chan:expr, $ctor:expr, $p:pat, $body:tt))*]
        [$(($d:expr, $abody:tt))?] [$(($dflag:tt, $dbody:tt))?]) => {{
        // The channel is borrowed in a `let` of its own, so that a temporary (`rx.clone()`)
        // lives to the end of the select, and an `if` that picks one of two channels is typed
        // on its own (the arm's constructor derefs the extra `&`); channel, then value, arm by
        // arm, as Go evaluates them.
        $( let $ch = &$chan; let mut $var = $ctor; )*
        let __selected = {
            let __arms: &mut [&mut $crate::__select_dyn!($mode)] = &mut [$(&mut $var),*];
            let __after: ::core::option::Option<::core::time::Duration> =
                ::core::option::Option::None $( .or(::core::option::Option::Some($d)) )?;
            let __future = $crate::chan::__private::SelectFuture::new(
                __arms, __after, false $( || $dflag )?);
            $crate::__select_wait!($mode __future)
        };
        $( $var.drop_unsent(); )*
        $( if $var.is_selected() { let $p = $var.take(); $body } else )*
        $( if __selected == $crate::chan::Selected::After { $abody } else )?
        $( if __selected == $crate::chan::Selected::Default { $dbody } else )?
        { ::core::unreachable!("select!: no arm was chosen") }
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __select_dyn {
    (blocking) => { dyn $crate::chan::__private::Arm };
    (awaiting) => { dyn $crate::chan::__private::Arm + ::core::marker::Send };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __select_wait {
    (blocking $f:ident) => {
        $crate::block_on($f)
    };
    (awaiting $f:ident) => {
        $f.await
    };
}
