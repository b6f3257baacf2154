//! corio's port of the parts of tokio 1.54's sync test suite (`tokio-1.54.1/tests/`) that no
//! other corio suite had ported: `sync_mpsc.rs` (against `corio::chan`), `sync_mutex.rs`,
//! `sync_notify.rs`, `sync_semaphore.rs`, `sync_semaphore_owned.rs`, `sync_errors.rs` and
//! `sync_panic.rs`, written anew. (`sync_rwlock.rs`, `sync_oneshot.rs`, `sync_once_cell.rs` and
//! `sync_barrier.rs` are ported in `sync_review_contract.rs`; Go's channel tests in
//! `chan_golang.rs`.)
//!
//! tokio's hand-polled checks (`tokio_test::task::spawn`, `is_woken`, `assert_pending!`) are a
//! future polled by hand with a waker that records its wake-ups ([`Mock`]); tokio's
//! `#[tokio::test]` bodies run in corio async tasks and, where it is cheap, also as
//! blocking-style code in stackful coroutines, on one worker and on two (`rt_common!`), each
//! under the `within` watchdog. tokio's `blocking_*` calls are corio's blocking-style calls on
//! a plain thread.
//!
//! Not ported, because corio has no such API (one line each):
//! - sync_mpsc.rs unwind-safety impls of `Permit`, `OwnedPermit`, `PermitIterator`,
//!   `WeakSender`, `WeakUnboundedSender`: no such types (`Sender`'s and `Receiver`'s are checked).
//! - sync_mpsc.rs `async_send_recv_many_with_buffer`: no `recv_many`.
//! - sync_mpsc.rs `send_recv_many_unbounded`: no `recv_many`.
//! - sync_mpsc.rs `send_recv_many_bounded_capacity`: no `recv_many`.
//! - sync_mpsc.rs `send_recv_many_unbounded_capacity`: no `recv_many`.
//! - sync_mpsc.rs `recv_many_with_non_empty_buffer_bounded_rx_closed_and_idle`: no `recv_many`.
//! - sync_mpsc.rs `recv_many_with_non_empty_buffer_unbounded_rx_closed_and_idle`: no `recv_many`.
//! - sync_mpsc.rs `failed_reserve_many_wakes_closed_receiver`: no `reserve_many`.
//! - sync_mpsc.rs `cancelled_reserve_many_wakes_closed_receiver`: no `reserve_many`.
//! - sync_mpsc.rs `failed_reserve_wakes_closed_receiver`: no `reserve` (no permits).
//! - sync_mpsc.rs `cancelled_reserve_wakes_closed_receiver`: no `reserve` (no permits).
//! - sync_mpsc.rs `reserve_many_above_cap`: no `reserve_many`.
//! - sync_mpsc.rs `try_reserve_many_zero`: no `try_reserve_many`.
//! - sync_mpsc.rs `reserve_many_zero`: no `reserve_many`.
//! - sync_mpsc.rs `try_reserve_many_edge_cases`: no `try_reserve_many`.
//! - sync_mpsc.rs `try_reserve_fails`: no `try_reserve`.
//! - sync_mpsc.rs `reserve_many_and_send`: no `reserve_many`.
//! - sync_mpsc.rs `try_reserve_many_and_send`: no `try_reserve_many`.
//! - sync_mpsc.rs `reserve_many_on_closed_channel`: no `reserve_many`.
//! - sync_mpsc.rs `try_reserve_many_on_closed_channel`: no `try_reserve_many`.
//! - sync_mpsc.rs `try_reserve_many_full`: no `try_reserve_many`.
//! - sync_mpsc.rs `drop_permit_releases_permit`: no permits.
//! - sync_mpsc.rs `drop_permit_iterator_releases_permits`: no permits.
//! - sync_mpsc.rs `dropping_last_permit_wakes_closed_receiver`: no permits.
//! - sync_mpsc.rs `dropping_last_owned_permit_wakes_closed_receiver`: no owned permits.
//! - sync_mpsc.rs `dropping_last_permit_iterator_wakes_closed_receiver`: no permits.
//! - sync_mpsc.rs `sending_last_permit_wakes_closed_receiver`: no permits.
//! - sync_mpsc.rs `sending_last_owned_permit_wakes_closed_receiver`: no owned permits.
//! - sync_mpsc.rs `releasing_last_owned_permit_wakes_closed_receiver`: no owned permits.
//! - sync_mpsc.rs `ready_close_cancel_bounded`: no permits.
//! - sync_mpsc.rs `permit_available_not_acquired_close`: no permits.
//! - sync_mpsc.rs `try_recv_after_receiver_close_with_permit`: no permits.
//! - sync_mpsc.rs `test_rx_is_not_closed_when_there_are_permits_but_not_senders`: no permits.
//! - sync_mpsc_weak.rs (the whole file): corio's channels have no weak senders.
//! - sync_mutex.rs `mutex_fifo_with_coop_budget`: its cooperative-budget half (corio's sync
//!   futures take no budget); the wake order is ported.
//! - sync_mutex.rs `mutex_coop_drop_after_take_permit`: its cooperative-budget half; the drop of
//!   a woken waiter is ported.
//! - sync_mutex_owned.rs `straight_execution`: no `Mutex::lock_owned`/`OwnedMutexGuard`.
//! - sync_mutex_owned.rs `readiness`: no `lock_owned`.
//! - sync_mutex_owned.rs `aborted_future_1`: no `lock_owned`.
//! - sync_mutex_owned.rs `aborted_future_2`: no `lock_owned`.
//! - sync_mutex_owned.rs `try_lock_owned`: no `try_lock_owned`.
//! - sync_mutex_owned.rs `debug_format`: no `OwnedMutexGuard`.
//! - sync_notify.rs `notify_multi_notified_last`: no `notify_last`.
//! - sync_notify.rs `notified_multi_notify_last_drop`: no `notify_last`.
//! - sync_notify_owned.rs (the whole file): no `notified_owned`.
//! - sync_semaphore.rs `forget_open`: no `Semaphore::forget_permits`.
//! - sync_semaphore.rs `forget_closed`: no `Semaphore::forget_permits`.
//! - sync_semaphore.rs `merge`: no `SemaphorePermit::merge`.
//! - sync_semaphore.rs `merge_unrelated_permits`: no `merge`.
//! - sync_semaphore.rs `split`: no `SemaphorePermit::split`.
//! - sync_semaphore.rs `merge_many_permits`: no `merge` (the 6e9 permits are ported without it).
//! - sync_semaphore.rs `permit_semaphore`: `SemaphorePermit` has no `semaphore()` (the owned
//!   permit's is ported).
//! - sync_semaphore.rs `acquire_many_exceeds_maxpermits`: 32-bit targets only (the 64-bit
//!   refusal is in `chan_review_contract.rs`).
//! - sync_semaphore.rs `acquire_many_top_bit_exceeds_maxpermits`: 32-bit targets only.
//! - sync_semaphore_owned.rs `merge`: no `merge`.
//! - sync_semaphore_owned.rs `merge_unrelated_permits`: no `merge`.
//! - sync_semaphore_owned.rs `split`: no `split`.
//! - sync_semaphore_owned.rs `merge_many_permits_owned`: no `merge` (ported without it).
//! - sync_semaphore_owned.rs `acquire_many_owned_exceeds_maxpermits`: 32-bit targets only.
//! - sync_semaphore_owned.rs `acquire_many_owned_top_bit_exceeds_maxpermits`: 32-bit only.
//! - sync_watch.rs (the whole file): no watch channel.
//! - sync_broadcast.rs (the whole file): no broadcast channel.
//! - sync_errors.rs `watch_error_bound`: no watch channel.
//! - sync_panic.rs `broadcast_channel_panic_caller`: no broadcast channel.
//! - sync_panic.rs `rwlock_with_max_readers_panic_caller`: no `RwLock::with_max_readers`.
//! - sync_panic.rs `mpsc_bounded_receiver_blocking_recv_many_panic_caller`: no `recv_many`.
//! - sync_panic.rs `mpsc_unbounded_receiver_blocking_recv_many_panic_caller`: no `recv_many`.
//! - sync_panic.rs `semaphore_merge_unrelated_owned_permits`: no `merge`.
//! - sync_panic.rs `semaphore_merge_unrelated_permits`: no `merge`.
//!
//! Deliberate, documented differences the ports follow (each test says which):
//! - `bounded(0)` is a rendezvous channel (`chan` module docs), not refused as tokio's
//!   `channel(0)` is; the one capacity corio refuses is `usize::MAX`.
//! - `capacity()` is the buffer size (its rustdoc), tokio's `max_capacity()`; the free room is
//!   `capacity() - len()`.
//! - a send that finds a receive waiting hands the value to it (protocol H3, `chan` module
//!   docs): it is in that receive's slot, not in the buffer; a dropped receive gives it back
//!   (H6). tokio's permits become sends waiting in `send_async` futures.
//! - `Mutex::try_lock` returns an `Option` (tokio's a `Result`).
//! - a blocking-style `send` panics in an async task even on an unbounded channel (its rustdoc,
//!   "Panics"), where tokio's unbounded `send` is a plain call: a task uses `try_send`.
//! - timers work without a runtime (`time/fallback.rs`), so a send with a timeout on a plain
//!   thread works where tokio's panics (`recv_timeout_panic`).
//! - a blocking-style call inside an async task panics with advice to `.await` the `_async`
//!   form (`corio::block_on`'s rustdoc), where tokio's `blocking_*` panic "Cannot block".

#[macro_use]
mod support;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, RefUnwindSafe, UnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Once};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use corio::chan::{
    self, RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
use corio::sync::{Mutex, Notify, OwnedSemaphorePermit, RwLock, Semaphore, oneshot};
use futures::StreamExt;
use support::{EVENTUALLY, EXPECTED, within};

const MS: Duration = Duration::from_millis(1);

/// An hour: a wait that never ends within a test.
const HOUR: Duration = Duration::from_secs(3600);

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Records the wake-ups of the wakers made from it: whether one came since the last poll
/// (tokio-test's `is_woken`) and how many came in all.
#[derive(Default)]
struct WakeFlag {
    woken: AtomicBool,
    wakes: AtomicUsize,
}

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, SeqCst);
        self.wakes.fetch_add(1, SeqCst);
    }
}

/// A future polled by hand with a [`WakeFlag`] waker: tokio-test's `task::spawn`.
struct Mock<F> {
    fut: Pin<Box<F>>,
    flag: Arc<WakeFlag>,
}

fn mock<F: Future>(fut: F) -> Mock<F> {
    Mock {
        fut: Box::pin(fut),
        flag: Arc::default(),
    }
}

impl<F: Future> Mock<F> {
    /// Polls once, clearing the "woken" mark first (as tokio-test does).
    fn poll(&mut self) -> Poll<F::Output> {
        self.flag.woken.store(false, SeqCst);
        let waker = Waker::from(self.flag.clone());
        self.fut.as_mut().poll(&mut Context::from_waker(&waker))
    }

    /// Whether the waker was woken since the last poll.
    fn is_woken(&self) -> bool {
        self.flag.woken.load(SeqCst)
    }

    /// The future itself, pinned (tokio-test's `enter`).
    fn pinned(&mut self) -> Pin<&mut F> {
        self.fut.as_mut()
    }
}

/// The value of a poll that must be ready.
#[track_caller]
fn ready<T>(poll: Poll<T>) -> T {
    match poll {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("still pending, expected ready"),
    }
}

/// Checks that a poll is pending.
#[track_caller]
fn pending<T>(poll: Poll<T>) {
    assert!(poll.is_pending(), "ready, expected pending");
}

/// Polls `fut` once with a waker that does nothing.
fn poll_noop<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

/// The output of a future that must complete on its first poll.
#[track_caller]
fn at_once<F: Future>(fut: F) -> F::Output {
    ready(poll_noop(std::pin::pin!(fut)))
}

/// Runs `fut` as a corio task (`block_on`'s own future runs on the calling thread, which is
/// no task) and returns its output; a panic in the task is resumed here.
fn in_task<F>(rt: &corio::Runtime, fut: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    rt.block_on(async move { join(corio::spawn(fut)).await })
}

/// A task's output, its panic resumed here.
async fn join<T>(handle: corio::JoinHandle<T>) -> T {
    match handle.await {
        Ok(v) => v,
        Err(e) if e.is_panic() => resume_unwind(e.into_panic()),
        Err(e) => panic!("the task was cancelled: {e}"),
    }
}

/// Whether a panic message gives corio's advice for a blocking-style call in an async task.
fn advises_the_async_form(msg: &str) -> bool {
    msg.contains("async task") && msg.contains(".await") && msg.contains("_async")
}

thread_local! {
    /// Set while [`panic_site`] runs its closure on this thread.
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    /// The message and file of the last panic [`panic_site`] saw on this thread.
    static SITE: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

/// Installs (once) a panic hook that records, and keeps quiet, the panics [`panic_site`]
/// expects and those whose message holds [`EXPECTED`]; every other panic goes to the previous
/// hook.
fn quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let text = support::payload_text(info.payload());
            if CAPTURING.with(Cell::get) {
                let file = info.location().map(|l| l.file().to_string());
                SITE.with(|s| *s.borrow_mut() = Some((text, file.unwrap_or_default())));
                return;
            }
            if text.contains(EXPECTED) {
                return;
            }
            previous(info);
        }));
    });
}

/// The message and the file of the location of the panic `f` raises, or `None` if it does not
/// panic (tokio's `support::panic::test_panic`).
fn panic_site(f: impl FnOnce()) -> Option<(String, String)> {
    quiet_hook();
    SITE.with(|s| s.borrow_mut().take());
    CAPTURING.with(|c| c.set(true));
    let panicked = catch_unwind(AssertUnwindSafe(f)).is_err();
    CAPTURING.with(|c| c.set(false));
    let site = SITE.with(|s| s.borrow_mut().take());
    panicked.then(|| site.expect("the hook saw the panic"))
}

/// A call to check, borrowing what it calls on.
type Call<'a> = Box<dyn FnOnce() + 'a>;

/// Whether `T` is `UnwindSafe` and `RefUnwindSafe`, found at run time (autoref
/// specialisation: the first trait's method applies only under the bounds, else the call falls
/// back to the second's), so that a missing impl fails one test rather than the build.
struct Probe<T>(PhantomData<T>);

trait UnwindSafeYes {
    fn unwind_safe(&self) -> bool {
        true
    }
}

impl<T: UnwindSafe + RefUnwindSafe> UnwindSafeYes for Probe<T> {}

trait UnwindSafeNo {
    fn unwind_safe(&self) -> bool {
        false
    }
}

impl<T> UnwindSafeNo for &Probe<T> {}

fn is_debug<T: fmt::Debug>(_: &T) {}

// =============================================================================================
// sync_mpsc.rs, against corio::chan
// =============================================================================================

/// tokio sync_mpsc.rs: the `AssertUnwindSafe`/`AssertRefUnwindSafe` impls of `Sender`,
/// `Receiver`, `UnboundedSender` and `UnboundedReceiver` (corio's ends are one type for both).
// `chan::Chan` holds its state in an `UnsafeCell` (chan/core.rs), which is not
// `RefUnwindSafe`, and nothing says the ends are: `catch_unwind` around code that uses a
// `Sender` needs `AssertUnwindSafe`, where std's, crossbeam's and tokio's ends need none.
#[test]
// The explicit `&` is the specialisation's second step, needed where the bounds do not hold.
#[allow(clippy::needless_borrow)]
fn the_channel_ends_are_unwind_safe() {
    // The probe itself: std's channel ends are unwind-safe, `Cell` is not `RefUnwindSafe`.
    assert!((&Probe::<std::sync::mpsc::Sender<u8>>(PhantomData)).unwind_safe());
    assert!((&Probe::<std::sync::mpsc::Receiver<u8>>(PhantomData)).unwind_safe());
    assert!(!(&Probe::<std::cell::Cell<u8>>(PhantomData)).unwind_safe());
    let sender = (&Probe::<chan::Sender<u8>>(PhantomData)).unwind_safe();
    let receiver = (&Probe::<chan::Receiver<u8>>(PhantomData)).unwind_safe();
    assert_eq!(
        (sender, receiver),
        (true, true),
        "(Sender, Receiver): UnwindSafe + RefUnwindSafe"
    );
}

/// tokio sync_mpsc.rs: `send_recv_with_buffer` (a send future stands in for the permit).
#[test]
fn values_buffered_before_the_last_sender_goes_are_received_then_the_end() {
    let (tx, rx) = chan::bounded::<i32>(16);
    at_once(tx.send_async(1)).unwrap();
    tx.try_send(2).unwrap();
    drop(tx);
    assert_eq!(at_once(rx.recv_async()), Ok(1));
    assert_eq!(at_once(rx.recv_async()), Ok(2));
    assert_eq!(at_once(rx.recv_async()), Err(RecvError));
}

/// tokio sync_mpsc.rs: `reserve_disarm`, with sends waiting in `send_async` for the permits
/// tokio reserves (module docs, "Deliberate differences"): each slot a receive frees goes to
/// the longest-waiting sender, which alone is woken.
#[test]
fn each_freed_slot_goes_to_the_longest_waiting_sender_which_alone_is_woken() {
    let (tx1, rx) = chan::bounded::<i32>(2);
    let (tx2, tx3, tx4) = (tx1.clone(), tx1.clone(), tx1.clone());
    tx1.try_send(1).unwrap();
    tx2.try_send(2).unwrap();
    let mut s3 = mock(tx3.send_async(3));
    let mut s4 = mock(tx4.send_async(4));
    pending(s3.poll());
    pending(s4.poll());
    assert!(!s3.is_woken());
    assert_eq!(rx.try_recv(), Ok(1));
    assert!(s3.is_woken(), "the first waiting sender got the freed slot");
    assert!(!s4.is_woken());
    assert_eq!(ready(s3.poll()), Ok(()));
    assert_eq!(rx.try_recv(), Ok(2));
    assert!(s4.is_woken());
    assert_eq!(ready(s4.poll()), Ok(()));
    // The buffer holds 3 and 4 now: a new send waits.
    let mut s1 = mock(tx1.send_async(5));
    pending(s1.poll());
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [3, 4, 5]);
    assert_eq!(ready(s1.poll()), Ok(()));
}

/// tokio sync_mpsc.rs: `start_send_past_cap` (send futures for permits): a waiting send whose
/// future is dropped leaves the queue, so the slot freed next goes to the sender behind it,
/// and the dropped one's task is not woken.
#[test]
fn a_dropped_waiting_send_leaves_the_freed_slot_to_the_next_sender() {
    let (tx1, rx) = chan::bounded::<i32>(1);
    let tx2 = tx1.clone();
    tx1.try_send(0).unwrap();
    let mut s1 = mock(tx1.send_async(1));
    pending(s1.poll());
    let flag1 = s1.flag.clone();
    {
        let mut s2 = mock(tx2.send_async(2));
        pending(s2.poll());
        drop(s1);
        assert_eq!(at_once(rx.recv_async()), Ok(0));
        assert!(s2.is_woken());
        assert!(!flag1.woken.load(SeqCst), "the dropped send was woken");
        assert_eq!(ready(s2.poll()), Ok(()));
    }
    drop(tx1);
    drop(tx2);
    assert_eq!(
        at_once(rx.recv_async()),
        Ok(2),
        "the dropped send's value was not sent"
    );
    assert_eq!(at_once(rx.recv_async()), Err(RecvError));
}

/// tokio sync_mpsc.rs: `buffer_gteq_one`. tokio refuses a buffer of 0; corio's `bounded(0)` is
/// a rendezvous channel (`chan` module docs): nothing is buffered, and a send completes only
/// into a waiting receive. (The capacity corio refuses, `usize::MAX`, is checked with
/// sync_panic.rs's ports below.)
#[test]
fn a_zero_capacity_channel_is_a_rendezvous_not_an_error() {
    let (tx, rx) = chan::bounded::<i32>(0);
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    let mut recv = mock(rx.recv_async());
    pending(recv.poll());
    assert_eq!(tx.try_send(2), Ok(()));
    assert!(recv.is_woken());
    assert_eq!(ready(recv.poll()), Ok(2));
    assert_eq!((rx.len(), rx.capacity()), (0, Some(0)));
}

/// tokio sync_mpsc.rs: `send_recv_unbounded`.
#[test]
fn an_unbounded_channel_delivers_in_order_then_ends_when_the_sender_goes() {
    let (tx, rx) = chan::unbounded::<i32>();
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    assert_eq!(at_once(rx.recv_async()), Ok(1));
    assert_eq!(at_once(rx.recv_async()), Ok(2));
    drop(tx);
    assert_eq!(at_once(rx.recv_async()), Err(RecvError));
}

/// tokio sync_mpsc.rs: `no_t_bounds_buffer` and `no_t_bounds_unbounded`: the ends are `Debug`
/// and `Clone` whatever the value type is.
#[test]
fn the_ends_are_debug_and_clone_for_any_value_type() {
    struct NoImpls;
    for (tx, rx) in [chan::bounded::<NoImpls>(100), chan::unbounded::<NoImpls>()] {
        is_debug(&tx);
        is_debug(&rx);
        assert!(tx.clone().try_send(NoImpls).is_ok());
        assert!(at_once(rx.recv_async()).is_ok());
    }
}

/// tokio sync_mpsc.rs: `send_recv_buffer_limited` (a send future for the second permit): the
/// slot a receive frees is filled from the waiting sender at once, so a `try_send` right after
/// finds the channel full.
#[test]
fn a_freed_slot_goes_to_the_waiting_sender_before_a_later_try_send() {
    let (tx, rx) = chan::bounded::<i32>(1);
    at_once(tx.send_async(1)).unwrap();
    let mut second = mock(tx.send_async(2));
    pending(second.poll());
    assert_eq!(at_once(rx.recv_async()), Ok(1));
    assert!(second.is_woken());
    assert_eq!(tx.try_send(1337), Err(TrySendError::Full(1337)));
    assert_eq!(ready(second.poll()), Ok(()));
    assert_eq!(at_once(rx.recv_async()), Ok(2));
}

/// tokio sync_mpsc.rs: `recv_close_gets_none_idle`.
#[test]
fn after_the_receiver_closes_an_idle_channel_recv_ends_and_send_gives_the_value_back() {
    let (tx, rx) = chan::bounded::<i32>(10);
    assert!(rx.close());
    assert_eq!(at_once(rx.recv_async()), Err(RecvError));
    assert_eq!(at_once(tx.send_async(1)), Err(SendError(1)));
}

/// tokio sync_mpsc.rs: `recv_close_gets_none_reserved`, with a buffered value for tokio's held
/// permit and a send waiting in `send_async` for the pending `reserve`: the receiver's close
/// wakes the waiting sender, which fails with its value; the buffered value is still received;
/// then the receive ends.
#[test]
fn the_receivers_close_fails_a_waiting_send_and_still_delivers_what_was_buffered() {
    let (tx1, rx) = chan::bounded::<i32>(1);
    let tx2 = tx1.clone();
    tx1.try_send(123).unwrap();
    let mut waiting = mock(tx2.send_async(456));
    pending(waiting.poll());
    rx.close();
    assert!(waiting.is_woken());
    assert_eq!(ready(waiting.poll()), Err(SendError(456)));
    let mut recv = mock(rx.recv_async());
    assert_eq!(ready(recv.poll()), Ok(123));
    assert_eq!(at_once(rx.recv_async()), Err(RecvError));
}

/// tokio sync_mpsc.rs: `tx_close_gets_none`.
#[test]
fn a_channel_whose_sender_was_dropped_at_once_ends_at_once() {
    let (_, rx) = chan::bounded::<i32>(10);
    assert_eq!(at_once(rx.recv_async()), Err(RecvError));
}

/// tokio sync_mpsc.rs: `try_send_fail` and `try_send_fail_with_try_recv`.
#[test]
fn try_send_on_a_full_channel_fails_with_full_and_gives_the_value_back() {
    for with_try_recv in [false, true] {
        let (tx, rx) = chan::bounded(1);
        tx.try_send("hello").unwrap();
        assert_eq!(tx.try_send("fail"), Err(TrySendError::Full("fail")));
        let recv = |rx: &chan::Receiver<&'static str>| {
            if with_try_recv {
                rx.try_recv().map_err(|e| e.is_disconnected())
            } else {
                at_once(rx.recv_async()).map_err(|RecvError| true)
            }
        };
        assert_eq!(recv(&rx), Ok("hello"));
        assert_eq!(tx.try_send("goodbye"), Ok(()));
        drop(tx);
        assert_eq!(recv(&rx), Ok("goodbye"));
        assert_eq!(recv(&rx), Err(true), "disconnected");
    }
}

/// tokio sync_mpsc.rs: `dropping_rx_closes_channel` and `dropping_rx_closes_channel_for_try`:
/// with the last receiver gone, sends fail with the value handed back, and what was buffered
/// is dropped then.
#[test]
fn dropping_the_receiver_closes_the_channel_and_drops_what_is_buffered() {
    for try_form in [false, true] {
        let (tx, rx) = chan::bounded(100);
        let msg = Arc::new(());
        tx.try_send(msg.clone()).unwrap();
        drop(rx);
        assert!(tx.is_closed());
        assert_eq!(
            Arc::strong_count(&msg),
            1,
            "the buffered value was not dropped"
        );
        if try_form {
            assert!(matches!(
                tx.try_send(msg.clone()),
                Err(TrySendError::Disconnected(_))
            ));
        } else {
            let err = at_once(tx.send_async(msg.clone())).unwrap_err();
            assert!(Arc::ptr_eq(&err.0, &msg), "the value is handed back");
        }
        assert_eq!(Arc::strong_count(&msg), 1);
    }
}

/// tokio sync_mpsc.rs: `dropping_rx_drops_sender_wakers_outside_lock`, with a waker whose
/// drop uses the channel (it takes the channel's lock) in place of tokio's permit: the close
/// that the last receiver's drop makes wakes the waiting sender, and that waker's drop must
/// come after the channel's lock is released.
#[test]
fn dropping_the_receiver_drops_a_waiting_senders_waker_outside_the_lock() {
    struct UsesChannelOnDrop(chan::Sender<i32>);
    impl Wake for UsesChannelOnDrop {
        fn wake(self: Arc<Self>) {}
    }
    impl Drop for UsesChannelOnDrop {
        fn drop(&mut self) {
            let _ = self.0.len(); // takes the channel's lock
        }
    }
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded(2);
        tx.try_send(1).unwrap();
        tx.try_send(2).unwrap();
        let mut send = tx.send_async(3);
        let waker = Waker::from(Arc::new(UsesChannelOnDrop(tx.clone())));
        pending(Pin::new(&mut send).poll(&mut Context::from_waker(&waker)));
        drop(waker);
        drop(rx); // must not deadlock
        assert_eq!(ready(poll_noop(Pin::new(&mut send))), Err(SendError(3)));
    });
}

/// tokio sync_mpsc.rs: `unconsumed_messages_are_dropped`.
#[test]
fn values_never_received_are_dropped_with_the_channel() {
    let msg = Arc::new(());
    let (tx, rx) = chan::bounded(100);
    tx.try_send(msg.clone()).unwrap();
    assert_eq!(Arc::strong_count(&msg), 2);
    drop((tx, rx));
    assert_eq!(Arc::strong_count(&msg), 1);
}

/// tokio sync_mpsc.rs: `try_recv_bounded`.
#[test]
fn try_recv_drains_a_bounded_channel_in_order_and_reports_empty_then_disconnected() {
    let (tx, rx) = chan::bounded(5);
    for _ in 0..5 {
        tx.try_send("hello").unwrap();
    }
    assert!(tx.try_send("hello").is_err());
    for _ in 0..5 {
        assert_eq!(rx.try_recv(), Ok("hello"));
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    for _ in 0..4 {
        tx.try_send("hello").unwrap();
    }
    assert_eq!(rx.try_recv(), Ok("hello"));
    tx.try_send("hello").unwrap();
    tx.try_send("hello").unwrap();
    assert!(tx.try_send("hello").is_err());
    for _ in 0..5 {
        assert_eq!(rx.try_recv(), Ok("hello"));
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    for _ in 0..3 {
        tx.try_send("hello").unwrap();
    }
    drop(tx);
    for _ in 0..3 {
        assert_eq!(rx.try_recv(), Ok("hello"));
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

/// tokio sync_mpsc.rs: `try_recv_unbounded`.
#[test]
fn try_recv_drains_an_unbounded_channel_in_order_then_reports_disconnected() {
    for num in 0..100 {
        let (tx, rx) = chan::unbounded();
        for i in 0..num {
            tx.send(i).unwrap();
        }
        for i in 0..num {
            assert_eq!(rx.try_recv(), Ok(i));
        }
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        drop(tx);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    }
}

/// tokio sync_mpsc.rs: `try_recv_after_receiver_close`, `try_recv_close_while_empty_bounded`
/// and `try_recv_close_while_empty_unbounded`.
#[test]
fn try_recv_on_an_empty_channel_is_empty_until_it_closes_then_disconnected() {
    let (_tx, rx) = chan::bounded::<()>(5);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    rx.close();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    for (tx, rx) in [chan::bounded::<()>(5), chan::unbounded::<()>()] {
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        drop(tx);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    }
}

/// tokio sync_mpsc.rs: `recv_timeout` (tokio's `send_timeout`) and `recv_timeout_panic`, on a
/// plain thread with no runtime: corio's timers work there (`time/fallback.rs`), so the send
/// that tokio refuses outside a runtime times out as it would inside one.
#[test]
fn send_timeout_times_out_on_a_full_channel_and_fails_once_closed_without_a_runtime() {
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded(5);
        for v in [10, 20, 30, 40, 50] {
            assert_eq!(tx.send_timeout(v, Duration::from_secs(1)), Ok(()));
        }
        assert_eq!(
            tx.send_timeout(60, 10 * MS),
            Err(SendTimeoutError::Timeout(60))
        );
        drop(rx);
        assert_eq!(
            tx.send_timeout(70, Duration::from_secs(1)),
            Err(SendTimeoutError::Disconnected(70))
        );
        // The future form, driven by `corio::block_on` on this thread.
        let (tx, _rx) = chan::bounded(1);
        tx.try_send(1).unwrap();
        assert_eq!(
            corio::block_on(tx.send_timeout_async(2, 10 * MS)),
            Err(SendTimeoutError::Timeout(2))
        );
    });
}

/// tokio sync_mpsc.rs: `test_tx_capacity`. corio's `capacity()` is the buffer size (tokio's
/// `max_capacity()`, its rustdoc: "The buffer size"); the room left is `capacity() - len()`.
#[test]
fn capacity_stays_the_buffer_size_while_len_counts_what_is_buffered() {
    let (tx, _rx) = chan::bounded::<()>(10);
    assert_eq!((tx.capacity(), tx.len()), (Some(10), 0));
    at_once(tx.send_async(())).unwrap();
    assert_eq!((tx.capacity(), tx.len()), (Some(10), 1));
    at_once(tx.send_async(())).unwrap();
    assert_eq!((tx.capacity(), tx.len()), (Some(10), 2));
    assert_eq!(chan::unbounded::<()>().0.capacity(), None);
}

/// tokio sync_mpsc.rs: `test_rx_is_closed_when_calling_close_with_sender`,
/// `test_rx_is_closed_when_dropping_all_senders`, `test_rx_is_not_closed_when_there_are_senders`,
/// `test_rx_is_not_closed_when_there_are_senders_and_buffer_filled`,
/// `test_rx_is_closed_when_there_are_no_senders_and_there_are_messages`,
/// `test_rx_is_closed_when_there_are_messages_and_close_is_called`, and their
/// `test_rx_unbounded_*` twins.
#[test]
fn the_receiver_is_closed_after_close_or_once_every_sender_is_gone_whatever_is_buffered() {
    type Make = fn() -> (chan::Sender<i32>, chan::Receiver<i32>);
    let makes: [(&str, Make); 2] = [
        ("bounded", || chan::bounded(10)),
        ("unbounded", chan::unbounded),
    ];
    for (kind, make) in makes {
        let (_tx, rx) = make();
        assert!(!rx.is_closed(), "{kind}: a sender is alive");
        rx.close();
        assert!(rx.is_closed(), "{kind}: close with a sender alive");

        let (tx, rx) = make();
        let other = tx.clone();
        std::thread::spawn(move || drop(other)).join().unwrap();
        assert!(!rx.is_closed(), "{kind}: one sender is left");
        drop(tx);
        assert!(rx.is_closed(), "{kind}: every sender dropped");

        let (tx, rx) = make();
        for i in 0..10 {
            at_once(tx.send_async(i)).unwrap();
        }
        assert!(!rx.is_closed(), "{kind}: a full buffer is not a close");
        drop(tx);
        assert!(rx.is_closed(), "{kind}: no sender, values buffered");

        let (tx, rx) = make();
        for i in 0..10 {
            at_once(tx.send_async(i)).unwrap();
        }
        rx.close();
        assert!(rx.is_closed(), "{kind}: close with values buffered");
    }
}

/// tokio sync_mpsc.rs: `test_rx_is_empty_when_no_messages_were_sent`,
/// `test_rx_is_not_empty_when_there_are_messages_in_the_buffer`,
/// `test_rx_is_not_empty_when_the_buffer_is_full`,
/// `test_rx_is_not_empty_when_all_but_one_messages_are_consumed`,
/// `test_rx_is_empty_when_all_messages_are_consumed`,
/// `test_rx_is_empty_all_senders_are_dropped_and_messages_consumed`, and their
/// `test_rx_unbounded_*` twins.
#[test]
fn is_empty_follows_what_is_buffered() {
    type Make = fn() -> (chan::Sender<i32>, chan::Receiver<i32>);
    let makes: [(&str, Make); 2] = [
        ("bounded", || chan::bounded(10)),
        ("unbounded", chan::unbounded),
    ];
    for (kind, make) in makes {
        let (_tx, rx) = make();
        assert!(rx.is_empty(), "{kind}: nothing sent");

        let (tx, rx) = make();
        at_once(tx.send_async(1)).unwrap();
        assert!(!rx.is_empty(), "{kind}: one buffered");

        let (tx, rx) = make();
        for i in 0..10 {
            at_once(tx.send_async(i)).unwrap();
        }
        assert!(!rx.is_empty(), "{kind}: ten buffered");
        for _ in 0..9 {
            at_once(rx.recv_async()).unwrap();
        }
        assert!(!rx.is_empty(), "{kind}: one left");
        while rx.try_recv().is_ok() {}
        assert!(rx.is_empty(), "{kind}: all taken");

        let (tx, rx) = make();
        for i in 0..10 {
            at_once(tx.send_async(i)).unwrap();
        }
        drop(tx);
        for _ in 0..10 {
            at_once(rx.recv_async()).unwrap();
        }
        assert!(rx.is_empty(), "{kind}: senders gone, all taken");
    }
}

/// tokio sync_mpsc.rs: `test_rx_len_on_empty_channel`,
/// `test_rx_len_on_empty_channel_without_senders`, `test_rx_len_on_filled_channel`,
/// `test_rx_len_on_filled_channel_without_senders`, `test_rx_len_when_consuming_all_messages`,
/// `test_rx_len_when_close_is_called`, `test_rx_len_when_close_is_called_before_dropping_sender`,
/// `test_rx_len_when_close_is_called_after_dropping_sender`, and their `test_rx_unbounded_*`
/// twins (`test_rx_unbounded_len_with_multiple_messages*`).
#[test]
fn len_counts_what_is_buffered_whether_or_not_the_channel_is_closed() {
    type Make = fn() -> (chan::Sender<usize>, chan::Receiver<usize>);
    let makes: [(&str, Make); 2] = [
        ("bounded", || chan::bounded(100)),
        ("unbounded", chan::unbounded),
    ];
    for (kind, make) in makes {
        let (_tx, rx) = make();
        assert_eq!(rx.len(), 0, "{kind}: empty");
        let (tx, rx) = make();
        drop(tx);
        assert_eq!(rx.len(), 0, "{kind}: empty, no sender");

        let (tx, rx) = make();
        for i in 0..100 {
            at_once(tx.send_async(i)).unwrap();
            assert_eq!(rx.len(), i + 1, "{kind}: filling");
        }
        drop(tx);
        assert_eq!(rx.len(), 100, "{kind}: full, no sender");
        for i in (0..100).rev() {
            at_once(rx.recv_async()).unwrap();
            assert_eq!(rx.len(), i, "{kind}: draining");
        }

        for order in ["close only", "close, then drop", "drop, then close"] {
            let (tx, rx) = make();
            at_once(tx.send_async(1)).unwrap();
            match order {
                "close only" => drop(rx.close()),
                "close, then drop" => {
                    rx.close();
                    drop(tx);
                }
                _ => {
                    drop(tx);
                    rx.close();
                }
            }
            assert_eq!(rx.len(), 1, "{kind}: {order}");
        }
    }
}

/// tokio sync_mpsc.rs: `test_is_empty_32_msgs` (tokio's issue 6602: a block boundary).
#[test]
fn a_channel_is_empty_after_each_send_and_receive_across_many_rounds() {
    let (tx, rx) = chan::bounded(33);
    for value in 1..257 {
        at_once(tx.send_async(value)).unwrap();
        at_once(rx.recv_async()).unwrap();
        assert!(rx.is_empty(), "{value}. len: {}", rx.len());
    }
}

/// tokio sync_mpsc.rs: `permit_send_panicking_rx_waker` (a `try_send` for the permit's send).
/// The value goes to the waiting receive before its waker runs (module docs, "Deliberate
/// differences"), so a waker that panics loses nothing: the receive, polled again, has it, or,
/// dropped instead, gives it back to the channel; and the channel works on afterwards.
#[test]
fn a_receivers_waker_that_panics_loses_no_value_and_breaks_nothing() {
    struct PanickingWaker;
    impl Wake for PanickingWaker {
        fn wake(self: Arc<Self>) {
            panic!("{EXPECTED} the waker panicked");
        }
    }
    quiet_hook();
    for poll_again in [true, false] {
        let (tx, rx) = chan::bounded(1);
        let waker = Waker::from(Arc::new(PanickingWaker));
        let mut recv = rx.recv_async();
        pending(Pin::new(&mut recv).poll(&mut Context::from_waker(&waker)));
        assert!(catch_unwind(AssertUnwindSafe(|| tx.try_send(7))).is_err());
        if poll_again {
            assert_eq!(ready(poll_noop(Pin::new(&mut recv))), Ok(7));
            drop(recv);
            assert_eq!(rx.len(), 0);
        } else {
            drop(recv);
            assert_eq!(rx.len(), 1, "the value was given back");
            assert_eq!(rx.try_recv(), Ok(7));
        }
        assert_eq!(tx.capacity(), Some(1));
        tx.try_send(8).unwrap();
        rx.close();
        assert_eq!(rx.try_recv(), Ok(8));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    }
}

/// tokio sync_mpsc.rs: `drop_all_elements_during_panic`: when the last receiver goes, every
/// buffered value is dropped even if one's drop panics.
#[test]
fn every_buffered_value_is_dropped_even_when_one_drop_panics() {
    struct Loud(bool, Arc<AtomicUsize>);
    impl Drop for Loud {
        fn drop(&mut self) {
            self.1.fetch_add(1, SeqCst);
            if self.0 {
                panic!("{EXPECTED} a value's drop panicked");
            }
        }
    }
    quiet_hook();
    let dropped = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = chan::unbounded();
    tx.send(Loud(true, dropped.clone())).unwrap();
    tx.send(Loud(false, dropped.clone())).unwrap();
    tx.send(Loud(false, dropped.clone())).unwrap();
    assert!(catch_unwind(AssertUnwindSafe(move || drop(rx))).is_err());
    assert_eq!(dropped.load(SeqCst), 3, "every value was dropped");
    assert!(tx.is_closed());
    assert!(tx.try_send(Loud(false, dropped.clone())).is_err());
    assert_eq!(dropped.load(SeqCst), 4);
}

/// tokio sync_mpsc.rs: `release_waker_on_rx_drop`: a receiver keeps the waker of its `Stream`
/// poll only while it lives (alone, or with another handle open), and a receive future only
/// while it lives.
#[test]
fn a_receiver_or_receive_future_that_goes_releases_its_waker() {
    struct DummyWaker;
    impl Wake for DummyWaker {
        fn wake(self: Arc<Self>) {}
    }
    let dummy = Arc::new(DummyWaker);
    let waker = Waker::from(dummy.clone());
    let mut cx = Context::from_waker(&waker);
    assert_eq!(Arc::strong_count(&dummy), 2);

    let (_tx, mut rx) = chan::bounded::<()>(1);
    pending(futures_core::Stream::poll_next(Pin::new(&mut rx), &mut cx));
    assert_eq!(Arc::strong_count(&dummy), 3);
    drop(rx);
    assert_eq!(
        Arc::strong_count(&dummy),
        2,
        "the last receiver kept its waker"
    );

    let (_tx, mut rx) = chan::bounded::<()>(1);
    let other = rx.clone();
    pending(futures_core::Stream::poll_next(Pin::new(&mut rx), &mut cx));
    assert_eq!(Arc::strong_count(&dummy), 3);
    drop(rx);
    assert_eq!(
        Arc::strong_count(&dummy),
        2,
        "a dropped receiver kept its waker"
    );

    let mut recv = other.recv_async();
    pending(Pin::new(&mut recv).poll(&mut cx));
    assert_eq!(Arc::strong_count(&dummy), 3);
    drop(recv);
    assert_eq!(
        Arc::strong_count(&dummy),
        2,
        "a dropped receive kept its waker"
    );
}

/// tokio sync_mpsc.rs: `blocking_recv_async` and `blocking_send_async`: the blocking-style
/// calls inside an async task panic, with advice to `.await` the `_async` form (module docs,
/// "Deliberate differences").
#[test]
fn blocking_style_send_and_recv_in_an_async_task_panic_with_advice() {
    let messages = within(EVENTUALLY, || {
        in_task(&support::rt(1), async {
            let (tx, rx) = chan::bounded::<()>(1);
            let recv = panic_site(|| {
                let _ = rx.recv();
            });
            let send = panic_site(|| {
                let _ = tx.send(());
            });
            (recv, send)
        })
    });
    for (what, site) in [("recv", messages.0), ("send", messages.1)] {
        let (msg, _) = site.unwrap_or_else(|| panic!("{what} did not panic"));
        assert!(advises_the_async_form(&msg), "{what}: {msg}");
    }
}

rt_common! {
    /// tokio sync_mpsc.rs: `async_send_recv_with_buffer` (an async task sends, another
    /// receives).
    #[test]
    fn a_task_receives_what_another_task_sends_then_the_end() {
        let rt = rt();
        within(EVENTUALLY, move || {
            in_task(&rt, async {
                let (tx, rx) = chan::bounded(16);
                let sender = corio::spawn(async move {
                    tx.send_async(1).await.unwrap();
                    tx.send_async(2).await.unwrap();
                });
                assert_eq!(rx.recv_async().await, Ok(1));
                assert_eq!(rx.recv_async().await, Ok(2));
                assert_eq!(rx.recv_async().await, Err(RecvError));
                join(sender).await;
            })
        });
    }

    /// tokio sync_mpsc.rs: `async_send_recv_with_buffer`, as blocking-style coroutines.
    #[test]
    fn a_coroutine_receives_what_another_coroutine_sends_then_the_end() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let (tx, rx) = chan::bounded(16);
                let sender = corio::go(move || {
                    tx.send(1).unwrap();
                    tx.send(2).unwrap();
                });
                assert_eq!(rx.recv(), Ok(1));
                assert_eq!(rx.recv(), Ok(2));
                assert_eq!(rx.recv(), Err(RecvError));
                sender.join().unwrap();
            })
        });
    }

    /// tokio sync_mpsc.rs: `async_send_recv_unbounded`, in tasks and in coroutines.
    #[test]
    fn an_unbounded_channel_carries_values_between_tasks_and_between_coroutines() {
        let rt = rt();
        within(EVENTUALLY, move || {
            in_task(&rt, async {
                let (tx, rx) = chan::unbounded();
                // tokio's unbounded `send` is a plain call; corio's blocking-style `send`
                // panics in an async task even on an unbounded channel (its rustdoc, "Panics"),
                // so a task's never-waiting send is `try_send`.
                let sender = corio::spawn(async move {
                    tx.try_send(1).unwrap();
                    tx.try_send(2).unwrap();
                });
                assert_eq!(rx.recv_async().await, Ok(1));
                assert_eq!(rx.recv_async().await, Ok(2));
                assert_eq!(rx.recv_async().await, Err(RecvError));
                join(sender).await;
            });
            rt.run(|| {
                let (tx, rx) = chan::unbounded();
                let sender = corio::go(move || {
                    tx.send(1).unwrap();
                    tx.send(2).unwrap();
                });
                assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
                sender.join().unwrap();
            })
        });
    }

    /// tokio sync_mpsc.rs: `send_recv_stream_with_buffer` and `send_recv_stream_unbounded`
    /// (the receiver as a `Stream`).
    #[test]
    fn the_receiver_as_a_stream_yields_each_value_then_none() {
        for bounded in [true, false] {
            let rt = rt();
            within(EVENTUALLY, move || {
                in_task(&rt, async move {
                    let (tx, mut rx) = if bounded {
                        chan::bounded(16)
                    } else {
                        chan::unbounded()
                    };
                    let sender = corio::spawn(async move {
                        tx.send_async(1).await.unwrap();
                        tx.send_async(2).await.unwrap();
                    });
                    assert_eq!(rx.next().await, Some(1));
                    assert_eq!(rx.next().await, Some(2));
                    assert_eq!(rx.next().await, None);
                    join(sender).await;
                })
            });
        }
    }

    /// tokio sync_mpsc.rs: `send_recv_stream_with_buffer`, as blocking-style coroutines (the
    /// receiver's blocking iterator).
    #[test]
    fn the_receivers_iterator_in_a_coroutine_yields_each_value_then_ends() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let (tx, rx) = chan::bounded(16);
                let sender = corio::go(move || {
                    tx.send(1).unwrap();
                    tx.send(2).unwrap();
                });
                let got: Vec<i32> = rx.into_iter().collect();
                assert_eq!(got, [1, 2]);
                sender.join().unwrap();
            })
        });
    }

    /// tokio sync_mpsc.rs: `blocking_recv`: a plain thread waits in `recv`; a task, then a
    /// coroutine, sends.
    #[test]
    fn a_plain_thread_waiting_in_recv_gets_what_a_task_or_coroutine_sends() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let (tx, rx) = chan::bounded::<u8>(1);
            let thread = std::thread::spawn(move || (rx.recv(), rx.recv(), rx.recv()));
            let tx2 = tx.clone();
            rt.block_on(async move {
                join(corio::spawn(async move { tx2.send_async(10).await })).await.unwrap();
            });
            rt.run(move || tx.send(11)).unwrap();
            assert_eq!(thread.join().unwrap(), (Ok(10), Ok(11), Err(RecvError)));
        });
    }

    /// tokio sync_mpsc.rs: `blocking_send`: a plain thread sends blocking-style (waiting for
    /// room); a task receives.
    #[test]
    fn a_task_receives_what_a_plain_thread_sends_blocking_style() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let (tx, rx) = chan::bounded::<u8>(1);
            let thread = std::thread::spawn(move || {
                tx.send(10).unwrap();
                tx.send(11).unwrap(); // waits for room
                tx.send(12).unwrap();
            });
            let got = in_task(&rt, async move {
                let mut got = Vec::new();
                while let Ok(v) = rx.recv_async().await {
                    got.push(v);
                }
                got
            });
            thread.join().unwrap();
            assert_eq!(got, [10, 11, 12]);
        });
    }

    /// tokio sync_mpsc.rs: `recv_timeout` (tokio's `send_timeout`), in a task and in a
    /// coroutine.
    #[test]
    fn send_timeout_times_out_on_a_full_channel_and_fails_once_closed() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.block_on(async {
                let task = corio::spawn(async {
                    let (tx, rx) = chan::bounded(5);
                    for v in [10, 20, 30, 40, 50] {
                        assert_eq!(tx.send_timeout_async(v, Duration::from_secs(1)).await, Ok(()));
                    }
                    assert_eq!(
                        tx.send_timeout_async(60, 10 * MS).await,
                        Err(SendTimeoutError::Timeout(60))
                    );
                    drop(rx);
                    assert_eq!(
                        tx.send_timeout_async(70, Duration::from_secs(1)).await,
                        Err(SendTimeoutError::Disconnected(70))
                    );
                });
                join(task).await;
            });
            rt.run(|| {
                let (tx, rx) = chan::bounded(1);
                assert_eq!(tx.send_timeout(10, Duration::from_secs(1)), Ok(()));
                assert_eq!(tx.send_timeout(60, 10 * MS), Err(SendTimeoutError::Timeout(60)));
                assert_eq!(rx.recv_timeout(10 * MS), Ok(10));
                assert_eq!(rx.recv_timeout(10 * MS), Err(RecvTimeoutError::Timeout));
                drop(rx);
                assert_eq!(
                    tx.send_timeout(70, Duration::from_secs(1)),
                    Err(SendTimeoutError::Disconnected(70))
                );
            });
        });
    }

    // =========================================================================================
    // sync_mutex.rs (the tests that need a runtime)
    // =========================================================================================

    /// tokio sync_mutex.rs: `aborted_future_1`: a future that holds the guard and is given up
    /// by a timeout releases the lock (in a task, then in a coroutine).
    #[test]
    fn a_timed_out_future_holding_the_guard_releases_the_lock() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let m = Arc::new(Mutex::new(0usize));
            let m1 = m.clone();
            rt.block_on(async move {
                join(corio::spawn(async move {
                    let m2 = m1.clone();
                    let timed = corio::time::timeout_async(MS, async move {
                        let _g = m2.lock_async().await;
                        corio::time::sleep_async(HOUR).await;
                    })
                    .await;
                    assert!(timed.is_err(), "the hour-long hold timed out");
                    assert!(m1.try_lock().is_some(), "the mutex is still locked");
                    *m1.lock_async().await += 1;
                }))
                .await;
            });
            let m3 = m.clone();
            rt.run(move || {
                let m2 = m3.clone();
                let timed = corio::time::timeout(MS, async move {
                    let _g = m2.lock_async().await;
                    corio::time::sleep_async(HOUR).await;
                });
                assert!(timed.is_err());
                assert!(m3.try_lock().is_some(), "the mutex is still locked");
                *m3.lock() += 1;
            });
            assert_eq!(*m.try_lock().unwrap(), 2);
        });
    }

    /// tokio sync_mutex.rs: `aborted_future_2`: a future waiting for the lock and given up by
    /// a timeout leaves no claim on it (in a task, then in a coroutine).
    #[test]
    fn a_timed_out_future_waiting_for_the_lock_leaves_it_free_once_released() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let m = Arc::new(Mutex::new(0usize));
            let m1 = m.clone();
            rt.block_on(async move {
                join(corio::spawn(async move {
                    {
                        let _held = m1.lock_async().await;
                        let timed = corio::time::timeout_async(MS, m1.lock_async()).await;
                        assert!(timed.is_err(), "the lock was held");
                    }
                    assert!(m1.try_lock().is_some(), "the mutex is still locked");
                    *m1.lock_async().await += 1;
                }))
                .await;
            });
            let m3 = m.clone();
            rt.run(move || {
                {
                    let _held = m3.lock();
                    assert!(corio::time::timeout(MS, m3.lock_async()).is_err());
                }
                assert!(m3.try_lock().is_some(), "the mutex is still locked");
                *m3.lock() += 1;
            });
            assert_eq!(*m.try_lock().unwrap(), 2);
        });
    }

    // =========================================================================================
    // sync_semaphore.rs and sync_semaphore_owned.rs (the tests that need a runtime)
    // =========================================================================================

    /// tokio sync_semaphore.rs: `acquire` and `add_permits`; sync_semaphore_owned.rs: `acquire`
    /// and `add_permits`: a task waiting for a permit gets one when it is released or added.
    #[test]
    fn a_task_waiting_for_a_permit_gets_the_released_or_added_one() {
        let rt = rt();
        within(EVENTUALLY, move || {
            in_task(&rt, async {
                for owned in [false, true] {
                    let sem = Arc::new(Semaphore::new(1));
                    let p1 = sem.clone().try_acquire_owned().unwrap();
                    let s = sem.clone();
                    let waiter = corio::spawn(async move {
                        if owned {
                            drop(s.acquire_owned_async().await.unwrap());
                        } else {
                            drop(s.acquire_async().await.unwrap());
                        }
                    });
                    drop(p1);
                    join(waiter).await;

                    let sem = Arc::new(Semaphore::new(0));
                    let s = sem.clone();
                    let waiter = corio::spawn(async move {
                        if owned {
                            drop(s.acquire_owned_async().await.unwrap());
                        } else {
                            drop(s.acquire_async().await.unwrap());
                        }
                    });
                    sem.add_permits(1);
                    join(waiter).await;
                    assert_eq!(sem.available_permits(), 1);
                }
            })
        });
    }

    /// tokio sync_semaphore.rs: `acquire` and `add_permits`, as blocking-style coroutines.
    #[test]
    fn a_coroutine_waiting_for_a_permit_gets_the_released_or_added_one() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let sem = Arc::new(Semaphore::new(1));
                let p1 = sem.clone().try_acquire_owned().unwrap();
                let s = sem.clone();
                let waiter = corio::go(move || drop(s.acquire().unwrap()));
                corio::yield_now();
                drop(p1);
                waiter.join().unwrap();

                let sem = Arc::new(Semaphore::new(0));
                let s = sem.clone();
                let waiter = corio::go(move || drop(s.acquire_owned().unwrap()));
                corio::yield_now();
                sem.add_permits(1);
                waiter.join().unwrap();
                assert_eq!(sem.available_permits(), 1);
            })
        });
    }

    /// tokio sync_semaphore_owned.rs: `acquire_many`: a task holding 10 of 42 permits waits
    /// for 32 more until the main task releases its 32.
    #[test]
    fn a_task_waiting_for_many_owned_permits_gets_them_when_released() {
        let rt = rt();
        within(EVENTUALLY, move || {
            in_task(&rt, async {
                let sem = Arc::new(Semaphore::new(42));
                let permit32 = sem.clone().try_acquire_many_owned(32).unwrap();
                let (tx, rx) = oneshot::channel();
                let s = sem.clone();
                let task = corio::spawn(async move {
                    let _permit10 = s.clone().acquire_many_owned_async(10).await.unwrap();
                    tx.send(()).unwrap();
                    let _permit32 = s.acquire_many_owned_async(32).await.unwrap();
                });
                rx.await.unwrap();
                drop(permit32);
                join(task).await;
                assert_eq!(sem.available_permits(), 42);
            })
        });
    }

    /// tokio sync_semaphore.rs and sync_semaphore_owned.rs: `stress_test`: a thousand tasks
    /// take and release one of five permits (borrowed, then owned); all five come back.
    #[test]
    fn a_thousand_tasks_share_five_permits_and_all_five_come_back() {
        let rt = rt();
        within(EVENTUALLY, move || {
            in_task(&rt, async {
                for owned in [false, true] {
                    let sem = Arc::new(Semaphore::new(5));
                    let tasks: Vec<_> = (0..1000)
                        .map(|_| {
                            let s = sem.clone();
                            corio::spawn(async move {
                                if owned {
                                    drop(s.acquire_owned_async().await.unwrap());
                                } else {
                                    drop(s.acquire_async().await.unwrap());
                                }
                            })
                        })
                        .collect();
                    for t in tasks {
                        join(t).await;
                    }
                    let held: Vec<_> = (0..5).map(|_| sem.try_acquire().unwrap()).collect();
                    assert!(sem.try_acquire().is_none(), "more than five permits");
                    drop(held);
                }
            })
        });
    }

    /// tokio sync_semaphore.rs: `stress_test`, as a thousand blocking-style coroutines.
    #[test]
    fn a_thousand_coroutines_share_five_permits_and_all_five_come_back() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let sem = Arc::new(Semaphore::new(5));
                let coroutines: Vec<_> = (0..1000)
                    .map(|_| {
                        let s = sem.clone();
                        corio::go(move || {
                            let _p = s.acquire().unwrap();
                            corio::yield_now();
                        })
                    })
                    .collect();
                coroutines.into_iter().for_each(|c| c.join().unwrap());
                let held: Vec<_> = (0..5).map(|_| sem.try_acquire().unwrap()).collect();
                assert!(sem.try_acquire().is_none(), "more than five permits");
                drop(held);
            })
        });
    }
}

// =============================================================================================
// sync_mutex.rs
// =============================================================================================

/// tokio sync_mutex.rs: `straight_execution`.
#[test]
fn lock_after_lock_sees_each_previous_write() {
    let l = Mutex::new(100);
    {
        let mut g = ready(mock(l.lock_async()).poll());
        assert_eq!(*g, 100);
        *g = 99;
    }
    {
        let mut g = ready(mock(l.lock_async()).poll());
        assert_eq!(*g, 99);
        *g = 98;
    }
    let g = ready(mock(l.lock_async()).poll());
    assert_eq!(*g, 98);
}

/// tokio sync_mutex.rs: `readiness`.
#[test]
fn a_waiting_lock_is_woken_and_ready_once_the_guard_goes() {
    let l = Mutex::new(100);
    let mut t1 = mock(l.lock_async());
    let mut t2 = mock(l.lock_async());
    let g = ready(t1.poll());
    pending(t2.poll());
    drop(g);
    assert!(t2.is_woken());
    let _g2 = ready(t2.poll());
}

/// tokio sync_mutex.rs: `try_lock` (corio's is an `Option`: module docs, "Deliberate
/// differences").
#[test]
fn try_lock_fails_while_held_and_succeeds_once_released() {
    let m = Mutex::new(0usize);
    {
        let g1 = m.try_lock();
        assert!(g1.is_some());
        assert!(m.try_lock().is_none());
    }
    assert!(m.try_lock().is_some());
}

/// tokio sync_mutex.rs: `debug_format` and `mutex_debug`.
#[test]
fn the_guard_debugs_as_the_value_and_the_mutex_shows_it_or_locked() {
    let s = "debug";
    let m = Mutex::new(s.to_string());
    assert_eq!(format!("{s:?}"), format!("{:?}", at_once(m.lock_async())));
    let m = Mutex::new("data".to_string());
    assert_eq!(format!("{m:?}"), r#"Mutex { data: "data" }"#);
    let _guard = at_once(m.lock_async());
    assert_eq!(format!("{m:?}"), r#"Mutex { data: <locked> }"#);
}

/// tokio sync_mutex.rs: `mutex_fifo_with_coop_budget`, without the budget (corio's sync
/// futures take none): an unlock wakes the first waiter and not the one queued behind it.
#[test]
fn an_unlock_wakes_the_first_waiter_not_the_second() {
    let m = Mutex::new(());
    let g0 = at_once(m.lock_async());
    let mut a = mock(m.lock_async());
    pending(a.poll());
    let mut b = mock(m.lock_async());
    pending(b.poll());
    drop(g0);
    assert!(a.is_woken());
    assert!(!b.is_woken());
    let ga = ready(a.poll());
    pending(b.poll());
    drop(ga);
    assert!(b.is_woken());
    drop(ready(b.poll()));
}

/// tokio sync_mutex.rs: `mutex_coop_drop_after_take_permit`, without the budget: a waiting
/// lock future that is woken and then dropped leaves the mutex free.
#[test]
fn a_woken_lock_future_dropped_unpolled_leaves_the_mutex_free() {
    let m = Mutex::new(());
    let g0 = at_once(m.lock_async());
    let mut a = mock(m.lock_async());
    pending(a.poll());
    drop(g0);
    assert!(a.is_woken());
    drop(a);
    assert!(m.try_lock().is_some());
}

// =============================================================================================
// sync_notify.rs
// =============================================================================================

/// tokio sync_notify.rs: the `AssertSend` impl (`Notify: Send + Sync`).
#[test]
fn notify_is_send_and_sync() {
    fn bound<T: Send + Sync>() {}
    bound::<Notify>();
}

/// tokio sync_notify.rs: `notify_notified_one`.
#[test]
fn a_notify_one_before_anyone_waits_lets_the_next_waiter_through() {
    let notify = Notify::new();
    let mut notified = mock(async { notify.notified_async().await });
    notify.notify_one();
    ready(notified.poll());
}

/// tokio sync_notify.rs: `notify_multi_notified_one`.
#[test]
fn notify_one_completes_the_first_of_two_waiters() {
    let notify = Notify::new();
    let mut n1 = mock(async { notify.notified_async().await });
    let mut n2 = mock(async { notify.notified_async().await });
    pending(n1.poll());
    pending(n2.poll());
    notify.notify_one();
    ready(n1.poll());
    pending(n2.poll());
}

/// tokio sync_notify.rs: `notified_one_notify`.
#[test]
fn notify_one_wakes_a_waiting_waiter() {
    let notify = Notify::new();
    let mut notified = mock(async { notify.notified_async().await });
    pending(notified.poll());
    notify.notify_one();
    assert!(notified.is_woken());
    ready(notified.poll());
}

/// tokio sync_notify.rs: `notified_multi_notify`.
#[test]
fn notify_one_wakes_the_first_of_two_waiters_only() {
    let notify = Notify::new();
    let mut n1 = mock(async { notify.notified_async().await });
    let mut n2 = mock(async { notify.notified_async().await });
    pending(n1.poll());
    pending(n2.poll());
    notify.notify_one();
    assert!(n1.is_woken());
    assert!(!n2.is_woken());
    ready(n1.poll());
    pending(n2.poll());
}

/// tokio sync_notify.rs: `notify_notified_multi`.
#[test]
fn a_stored_permit_serves_one_waiter_and_the_next_notify_the_other() {
    let notify = Notify::new();
    notify.notify_one();
    let mut n1 = mock(async { notify.notified_async().await });
    let mut n2 = mock(async { notify.notified_async().await });
    ready(n1.poll());
    pending(n2.poll());
    notify.notify_one();
    assert!(n2.is_woken());
    ready(n2.poll());
}

/// tokio sync_notify.rs: `notified_drop_notified_notify`.
#[test]
fn a_waiter_dropped_before_the_notify_does_not_take_it() {
    let notify = Notify::new();
    let mut n1 = mock(async { notify.notified_async().await });
    let mut n2 = mock(async { notify.notified_async().await });
    pending(n1.poll());
    drop(n1);
    pending(n2.poll());
    notify.notify_one();
    assert!(n2.is_woken());
    ready(n2.poll());
}

/// tokio sync_notify.rs: `notified_multi_notify_drop_one`.
#[test]
fn a_notified_waiter_dropped_before_its_poll_wakes_the_next_one() {
    let notify = Notify::new();
    let mut n1 = mock(async { notify.notified_async().await });
    let mut n2 = mock(async { notify.notified_async().await });
    pending(n1.poll());
    pending(n2.poll());
    notify.notify_one();
    assert!(n1.is_woken());
    assert!(!n2.is_woken());
    drop(n1);
    assert!(n2.is_woken());
    ready(n2.poll());
}

/// tokio sync_notify.rs: `notified_multi_notify_one_drop`.
#[test]
fn a_notify_one_for_a_dropped_head_goes_to_the_next_in_order() {
    let notify = Notify::new();
    let mut n1 = mock(async { notify.notified_async().await });
    let mut n2 = mock(async { notify.notified_async().await });
    let mut n3 = mock(async { notify.notified_async().await });
    pending(n1.poll());
    pending(n2.poll());
    pending(n3.poll());
    notify.notify_one();
    drop(n1);
    ready(n2.poll());
    pending(n3.poll());
}

/// tokio sync_notify.rs: `notify_in_drop_after_wake`: a waker whose drop calls
/// `notify_waiters` does not deadlock the `notify_waiters` that wakes it.
#[test]
fn a_waker_that_notifies_when_dropped_does_not_deadlock_notify_waiters() {
    struct NotifyOnDrop(Arc<Notify>);
    impl Wake for NotifyOnDrop {
        fn wake(self: Arc<Self>) {}
    }
    impl Drop for NotifyOnDrop {
        fn drop(&mut self) {
            self.0.notify_waiters();
        }
    }
    within(EVENTUALLY, || {
        let notify = Arc::new(Notify::new());
        let mut fut = Box::pin(async { notify.notified_async().await });
        {
            let waker = Waker::from(Arc::new(NotifyOnDrop(notify.clone())));
            pending(fut.as_mut().poll(&mut Context::from_waker(&waker)));
        }
        notify.notify_waiters(); // must not deadlock
        ready(poll_noop(fut.as_mut()));
    });
}

/// tokio sync_notify.rs: `notify_one_after_dropped_all`: a `notify_one` while the only waiter
/// holds a `notify_waiters` it has not observed is kept for the next waiter.
#[test]
fn a_notify_one_after_notify_waiters_is_kept_when_the_woken_waiter_goes() {
    let notify = Notify::new();
    let mut n1 = mock(async { notify.notified_async().await });
    pending(n1.poll());
    notify.notify_waiters();
    notify.notify_one();
    drop(n1);
    let mut n2 = mock(async { notify.notified_async().await });
    ready(n2.poll());
}

/// tokio sync_notify.rs: `test_notify_one_not_enabled`.
#[test]
fn a_notify_one_reaches_a_future_never_polled_nor_enabled() {
    let notify = Notify::new();
    let mut future = mock(notify.notified_async());
    notify.notify_one();
    ready(future.poll());
}

/// tokio sync_notify.rs: `test_notify_one_after_enable`.
#[test]
fn an_enabled_future_gets_the_notify_one_and_stays_notified() {
    let notify = Notify::new();
    let mut future = mock(notify.notified_async());
    assert!(!future.pinned().enable());
    notify.notify_one();
    ready(future.poll());
    assert!(future.pinned().enable());
}

/// tokio sync_notify.rs: `test_poll_after_enable`.
#[test]
fn an_enabled_future_without_a_notification_is_pending() {
    let notify = Notify::new();
    let mut future = mock(notify.notified_async());
    assert!(!future.pinned().enable());
    pending(future.poll());
}

/// tokio sync_notify.rs: `test_enable_after_poll`.
#[test]
fn enable_after_a_pending_poll_reports_not_notified() {
    let notify = Notify::new();
    let mut future = mock(notify.notified_async());
    pending(future.poll());
    assert!(!future.pinned().enable());
}

/// tokio sync_notify.rs: `test_enable_consumes_permit`.
#[test]
fn enable_takes_the_stored_permit() {
    let notify = Notify::new();
    notify.notify_one();
    let mut f1 = mock(notify.notified_async());
    assert!(f1.pinned().enable());
    let mut f2 = mock(notify.notified_async());
    assert!(!f2.pinned().enable());
}

/// tokio sync_notify.rs: `test_waker_update`.
#[test]
fn a_waiter_polled_again_with_a_new_waker_is_woken_through_it() {
    let notify = Notify::new();
    let mut future = mock(notify.notified_async());
    pending(poll_noop(future.pinned()));
    pending(future.poll());
    notify.notify_one();
    assert!(future.is_woken());
}

/// tokio sync_notify.rs: `unpolled_future_completed_by_notify_waiters_preserves_notify_one_permit`.
#[test]
fn a_future_completed_by_notify_waiters_leaves_the_notify_one_permit_alone() {
    let notify = Notify::new();
    let n1 = notify.notified_async();
    notify.notify_waiters();
    notify.notify_one();
    at_once(n1);
    at_once(notify.notified_async());
}

// =============================================================================================
// sync_semaphore.rs and sync_semaphore_owned.rs
// =============================================================================================

/// tokio sync_semaphore.rs: `no_permits`.
#[test]
fn a_semaphore_of_no_permits_can_be_made() {
    assert_eq!(Semaphore::new(0).available_permits(), 0);
}

/// tokio sync_semaphore.rs: `try_acquire`; sync_semaphore_owned.rs: `try_acquire`.
#[test]
fn try_acquire_fails_while_the_permit_is_held_and_succeeds_once_released() {
    let sem = Semaphore::new(1);
    {
        let p1 = sem.try_acquire();
        assert!(p1.is_some());
        assert!(sem.try_acquire().is_none());
    }
    assert!(sem.try_acquire().is_some());
    let sem = Arc::new(Semaphore::new(1));
    {
        let p1 = sem.clone().try_acquire_owned();
        assert!(p1.is_some());
        assert!(sem.clone().try_acquire_owned().is_none());
    }
    assert!(sem.try_acquire_owned().is_some());
}

/// tokio sync_semaphore_owned.rs: `try_acquire_many`.
#[test]
fn try_acquire_many_owned_takes_exactly_what_is_there() {
    let sem = Arc::new(Semaphore::new(42));
    {
        let p1 = sem.clone().try_acquire_many_owned(42);
        assert!(p1.is_some());
        assert!(sem.clone().try_acquire_owned().is_none());
    }
    let p3 = sem.clone().try_acquire_many_owned(32);
    assert!(p3.is_some());
    let p4 = sem.clone().try_acquire_many_owned(10);
    assert!(p4.is_some());
    assert!(sem.try_acquire_owned().is_none());
}

/// tokio sync_semaphore.rs: `add_permits_open` and `add_permits_closed`.
#[test]
fn add_permits_counts_whether_or_not_the_semaphore_is_closed() {
    for close in [false, true] {
        for size in 0..4 {
            for add in 0..4 {
                let sem = Semaphore::new(size);
                if close {
                    sem.close();
                }
                sem.add_permits(add);
                assert_eq!(sem.available_permits(), size + add);
                assert_eq!(sem.is_closed(), close);
            }
        }
    }
}

/// tokio sync_semaphore.rs: `close_drops_wakers_outside_lock`: the close wakes the waiter, and
/// its waker, which owns a permit, is dropped after the semaphore's lock is released.
#[test]
fn close_drops_a_waiters_waker_outside_the_lock() {
    struct ReleaseOnDrop(#[allow(dead_code)] OwnedSemaphorePermit);
    impl Wake for ReleaseOnDrop {
        fn wake(self: Arc<Self>) {}
    }
    within(EVENTUALLY, || {
        let sem = Arc::new(Semaphore::new(1));
        let mut acquire = Box::pin(sem.acquire_async());
        let permit = sem.clone().try_acquire_owned().unwrap();
        let waker = Waker::from(Arc::new(ReleaseOnDrop(permit)));
        pending(acquire.as_mut().poll(&mut Context::from_waker(&waker)));
        drop(waker);
        sem.close(); // must not deadlock
        assert_eq!(sem.available_permits(), 1);
        assert!(ready(poll_noop(acquire.as_mut())).is_err());
    });
}

/// tokio sync_semaphore.rs: `close_wakes_waiters_outside_lock`: a waker that adds a permit
/// when woken does not deadlock the close that wakes it.
#[test]
fn close_wakes_waiters_outside_the_lock() {
    struct ReleaseOnWake(Arc<Semaphore>);
    impl Wake for ReleaseOnWake {
        fn wake(self: Arc<Self>) {
            self.0.add_permits(1);
        }
    }
    within(EVENTUALLY, || {
        let sem = Arc::new(Semaphore::new(0));
        let mut acquire = Box::pin(sem.acquire_async());
        let waker = Waker::from(Arc::new(ReleaseOnWake(sem.clone())));
        pending(acquire.as_mut().poll(&mut Context::from_waker(&waker)));
        sem.close(); // must not deadlock
        assert_eq!(sem.available_permits(), 1);
        assert!(ready(poll_noop(acquire.as_mut())).is_err());
    });
}

/// tokio sync_semaphore.rs: `close_wakes_all_waiters`.
#[test]
fn close_wakes_every_waiter_and_each_fails() {
    const WAITERS: usize = 100;
    let sem = Semaphore::new(0);
    let flag = Arc::new(WakeFlag::default());
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    let mut acquires: Vec<_> = (0..WAITERS)
        .map(|_| Box::pin(sem.acquire_async()))
        .collect();
    for a in &mut acquires {
        pending(a.as_mut().poll(&mut cx));
    }
    sem.close();
    assert_eq!(flag.wakes.load(SeqCst), WAITERS);
    for a in &mut acquires {
        assert!(ready(a.as_mut().poll(&mut cx)).is_err());
    }
}

/// tokio sync_semaphore.rs: `forget`; sync_semaphore_owned.rs: `forget`.
#[test]
fn a_forgotten_permit_never_comes_back() {
    let sem = Arc::new(Semaphore::new(1));
    {
        let p = sem.try_acquire().unwrap();
        assert_eq!(sem.available_permits(), 0);
        p.forget();
        assert_eq!(sem.available_permits(), 0);
    }
    assert_eq!(sem.available_permits(), 0);
    assert!(sem.try_acquire().is_none());

    let sem = Arc::new(Semaphore::new(1));
    {
        let p = sem.clone().try_acquire_owned().unwrap();
        assert_eq!(sem.available_permits(), 0);
        p.forget();
        assert_eq!(sem.available_permits(), 0);
    }
    assert_eq!(sem.available_permits(), 0);
    assert!(sem.try_acquire_owned().is_none());
}

/// tokio sync_semaphore.rs: `permit_semaphore`, for the owned permit (the borrowed one has no
/// `semaphore()`).
#[test]
fn an_owned_permit_names_its_semaphore() {
    let sem = Arc::new(Semaphore::new(1));
    let permit = sem.clone().try_acquire_owned().unwrap();
    assert!(Arc::ptr_eq(permit.semaphore(), &sem));
}

/// tokio sync_semaphore.rs: `add_max_amount_permits` and `no_panic_at_maxpermits`.
#[test]
fn a_semaphore_holds_up_to_max_permits() {
    let s = Semaphore::new(0);
    s.add_permits(Semaphore::MAX_PERMITS);
    assert_eq!(s.available_permits(), Semaphore::MAX_PERMITS);
    let _ = Semaphore::new(Semaphore::MAX_PERMITS);
    let s = Semaphore::new(Semaphore::MAX_PERMITS - 1);
    s.add_permits(1);
    assert_eq!(s.available_permits(), Semaphore::MAX_PERMITS);
}

/// tokio sync_semaphore.rs: `add_more_than_max_amount_permits1`,
/// `add_more_than_max_amount_permits2` and `panic_when_exceeds_maxpermits`.
#[test]
fn more_than_max_permits_is_refused_with_a_panic() {
    let s = Semaphore::new(1);
    assert!(panic_site(|| s.add_permits(Semaphore::MAX_PERMITS)).is_some());
    let s = Semaphore::new(Semaphore::MAX_PERMITS - 1);
    assert!(panic_site(|| s.add_permits(1)).is_none());
    assert!(panic_site(|| s.add_permits(1)).is_some());
    assert!(
        panic_site(|| {
            let _ = Semaphore::new(Semaphore::MAX_PERMITS + 1);
        })
        .is_some()
    );
}

/// tokio sync_semaphore.rs: `merge_many_permits` and sync_semaphore_owned.rs:
/// `merge_many_permits_owned`, without the merge: six billion permits are taken in two halves
/// and all come back.
#[test]
fn billions_of_permits_are_taken_and_returned_whole() {
    let sem = Arc::new(Semaphore::new(6_000_000_000));
    let a = sem.try_acquire_many(3_000_000_000).unwrap();
    let b = sem.clone().try_acquire_many_owned(3_000_000_000).unwrap();
    assert_eq!(
        (a.num_permits(), b.num_permits()),
        (3_000_000_000, 3_000_000_000)
    );
    assert_eq!(sem.available_permits(), 0);
    drop(a);
    drop(b);
    assert_eq!(sem.available_permits(), 6_000_000_000);
}

/// tokio sync_semaphore.rs: `blocking_acquire`, `blocking_acquire_many`,
/// `blocking_acquire_owned` and `blocking_acquire_many_owned`: the blocking-style calls on a
/// plain thread.
#[test]
fn blocking_style_acquires_on_a_plain_thread_take_and_return_permits() {
    within(EVENTUALLY, || {
        let sem = Arc::new(Semaphore::new(1));
        let permit = sem.acquire().unwrap();
        assert_eq!(sem.available_permits(), 0);
        drop(permit);
        assert_eq!(sem.available_permits(), 1);
        let permit = sem.clone().acquire_owned().unwrap();
        assert_eq!(sem.available_permits(), 0);
        drop(permit);
        assert_eq!(sem.available_permits(), 1);

        let sem = Arc::new(Semaphore::new(5));
        let permit = sem.acquire_many(3).unwrap();
        assert_eq!(sem.available_permits(), 2);
        drop(permit);
        assert_eq!(sem.available_permits(), 5);
        let permit = sem.clone().acquire_many_owned(3).unwrap();
        assert_eq!(sem.available_permits(), 2);
        drop(permit);
        assert_eq!(sem.available_permits(), 5);
    });
}

/// tokio sync_semaphore.rs: `blocking_acquire_waits_for_permit`.
#[test]
fn a_plain_thread_waits_in_acquire_until_a_permit_is_added() {
    within(EVENTUALLY, || {
        let sem = Arc::new(Semaphore::new(0));
        let s = sem.clone();
        let thread = std::thread::spawn(move || drop(s.acquire().unwrap()));
        sem.add_permits(1);
        thread.join().unwrap();
        assert_eq!(sem.available_permits(), 1);
    });
}

/// tokio sync_semaphore.rs: `blocking_acquire_closed`.
#[test]
fn blocking_style_acquires_on_a_closed_semaphore_fail() {
    within(EVENTUALLY, || {
        let sem = Arc::new(Semaphore::new(1));
        sem.close();
        assert!(sem.acquire().is_err());
        assert!(sem.acquire_many(2).is_err());
        assert!(sem.clone().acquire_owned().is_err());
        assert!(sem.clone().acquire_many_owned(2).is_err());
    });
}

/// tokio sync_semaphore.rs: `blocking_acquire_in_async_context`,
/// `blocking_acquire_many_in_async_context`, `blocking_acquire_owned_in_async_context` and
/// `blocking_acquire_many_owned_in_async_context`: inside an async task each panics, with
/// advice to `.await` the `_async` form (module docs, "Deliberate differences").
#[test]
fn blocking_style_acquires_in_an_async_task_panic_with_advice() {
    let sites = within(EVENTUALLY, || {
        in_task(&support::rt(1), async {
            let sem = Arc::new(Semaphore::new(1));
            vec![
                ("acquire", panic_site(|| drop(sem.acquire()))),
                ("acquire_many", panic_site(|| drop(sem.acquire_many(1)))),
                (
                    "acquire_owned",
                    panic_site(|| drop(sem.clone().acquire_owned())),
                ),
                (
                    "acquire_many_owned",
                    panic_site(|| drop(sem.clone().acquire_many_owned(1))),
                ),
            ]
        })
    });
    for (what, site) in sites {
        let (msg, file) = site.unwrap_or_else(|| panic!("{what} did not panic"));
        assert!(advises_the_async_form(&msg), "{what}: {msg}");
        // sync_panic.rs's rule: the panic names the caller.
        assert_eq!(file, file!(), "{what}: the panic names {file}");
    }
}

/// corio's `Lazy` (tokio's `sync_panic.rs` rule, found by the port of `sync_once_cell.rs`):
/// a `Lazy` whose initialiser panicked refuses every later use, through `force` and through
/// `Deref`, with a panic that names the caller's line; and `Deref` in an async task that would
/// have to wait for another caller's computation panics at the caller's line too.
#[test]
fn a_lazys_panics_name_the_callers_line() {
    let lazy: corio::sync::Lazy<u32, fn() -> u32> =
        corio::sync::Lazy::new(|| panic!("{EXPECTED} the initialiser"));
    let (msg, _) = panic_site(|| _ = std::hint::black_box(*lazy)).expect("the initialiser panics");
    assert!(msg.contains("the initialiser"), "{msg}");
    for (what, site) in [
        ("Deref", panic_site(|| _ = std::hint::black_box(*lazy))),
        (
            "force",
            panic_site(|| _ = std::hint::black_box(*corio::sync::Lazy::force(&lazy))),
        ),
    ] {
        let (msg, file) = site.unwrap_or_else(|| panic!("{what} did not panic"));
        assert!(msg.contains("panicked earlier"), "{what}: {msg}");
        assert_eq!(file, file!(), "{what}: the panic names {file}");
    }

    // Deref in a task while a coroutine computes the value (it waits for the task's look).
    let started = Arc::new(AtomicBool::new(false));
    let looked = Arc::new(AtomicBool::new(false));
    let (s, l) = (started.clone(), looked.clone());
    let lazy = Arc::new(
        corio::sync::Lazy::<u32, Box<dyn FnOnce() -> u32 + Send>>::new(Box::new(move || {
            s.store(true, SeqCst);
            while !l.load(SeqCst) {
                std::thread::sleep(Duration::from_millis(1)); // holds its worker: there are two
            }
            7
        })),
    );
    let site = within(EVENTUALLY, move || {
        let rt = support::rt(2);
        let computing = lazy.clone();
        let first = rt.go(move || **computing);
        let site = in_task(&rt, async move {
            while !started.load(SeqCst) {
                corio::yield_now_async().await;
            }
            let site = panic_site(|| _ = std::hint::black_box(**lazy));
            looked.store(true, SeqCst);
            site
        });
        assert_eq!(first.join().unwrap(), 7);
        site
    });
    let (msg, file) = site.expect("Deref in a task that would wait panics");
    assert!(advises_the_async_form(&msg), "{msg}");
    assert_eq!(file, file!(), "Deref in a task: the panic names {file}");
}

// =============================================================================================
// sync_errors.rs
// =============================================================================================

/// tokio sync_errors.rs: `mpsc_error_bound` and `oneshot_error_bound` (and corio's other sync
/// errors): each is an `Error` that is `Send` and `Sync`.
#[test]
fn the_sync_errors_are_send_sync_errors() {
    fn is_error<T: std::error::Error + Send + Sync>() {}
    is_error::<SendError<()>>();
    is_error::<TrySendError<()>>();
    is_error::<SendTimeoutError<()>>();
    is_error::<RecvError>();
    is_error::<TryRecvError>();
    is_error::<RecvTimeoutError>();
    is_error::<oneshot::RecvError>();
    is_error::<oneshot::TryRecvError>();
    is_error::<corio::sync::AcquireError>();
}

// =============================================================================================
// sync_panic.rs
// =============================================================================================

/// tokio sync_panic.rs: `mutex_blocking_lock_panic_caller`, `oneshot_blocking_recv_panic_caller`,
/// `rwlock_blocking_read_panic_caller`, `rwlock_blocking_write_panic_caller`,
/// `mpsc_bounded_receiver_blocking_recv_panic_caller`,
/// `mpsc_bounded_sender_blocking_send_panic_caller` and
/// `mpsc_unbounded_receiver_blocking_recv_panic_caller` (and corio's `Notify::notified`, the
/// channels' `send_timeout`/`recv_timeout`): a blocking-style call inside an async task panics,
/// and the panic names the caller's file.
#[test]
fn a_blocking_style_call_in_an_async_task_panics_at_the_callers_line() {
    let misplaced = within(EVENTUALLY, || {
        in_task(&support::rt(1), async {
            let here = file!();
            let mutex = Mutex::new(5u32);
            let lock = RwLock::new(0u8);
            let (_otx, orx) = oneshot::channel::<u8>();
            let (tx, rx) = chan::bounded::<u8>(1);
            let (_utx, urx) = chan::unbounded::<u8>();
            let notify = Notify::new();
            let (ttx, trx) = chan::bounded::<u8>(0);
            let cases: Vec<(&str, Call<'_>)> = vec![
                ("Mutex::lock", Box::new(|| drop(mutex.lock()))),
                ("Notify::notified", Box::new(|| notify.notified())),
                (
                    "chan::Sender::send_timeout",
                    Box::new(|| {
                        let _ = ttx.send_timeout(1, MS);
                    }),
                ),
                (
                    "chan::Receiver::recv_timeout",
                    Box::new(|| {
                        let _ = trx.recv_timeout(MS);
                    }),
                ),
                (
                    "oneshot::Receiver::recv",
                    Box::new(move || {
                        let _ = orx.recv();
                    }),
                ),
                ("RwLock::read", Box::new(|| drop(lock.read()))),
                ("RwLock::write", Box::new(|| drop(lock.write()))),
                (
                    "chan::Receiver::recv (bounded)",
                    Box::new(|| {
                        let _ = rx.recv();
                    }),
                ),
                (
                    "chan::Sender::send (bounded)",
                    Box::new(|| {
                        let _ = tx.send(3);
                    }),
                ),
                (
                    "chan::Receiver::recv (unbounded)",
                    Box::new(|| {
                        let _ = urx.recv();
                    }),
                ),
            ];
            let mut misplaced = Vec::new();
            for (what, call) in cases {
                match panic_site(call) {
                    Some((msg, file)) if file == here && advises_the_async_form(&msg) => {}
                    found => misplaced.push(format!("{what}: {found:?}")),
                }
            }
            misplaced
        })
    });
    assert!(
        misplaced.is_empty(),
        "panics not at the caller: {misplaced:?}"
    );
}

/// tokio sync_panic.rs: `mpsc_bounded_channel_panic_caller`, for the one capacity corio
/// refuses (`usize::MAX`; `bounded(0)` is a rendezvous channel): the panic names the caller's
/// file (STYLE.md 12: `#[track_caller]` on anything that can panic on misuse).
#[test]
fn bounded_refusing_its_capacity_panics_at_the_callers_line() {
    let site = panic_site(|| drop(chan::bounded::<u8>(usize::MAX)));
    let (msg, file) = site.expect("bounded(usize::MAX) did not panic");
    assert_eq!(
        file,
        file!(),
        "the panic ({msg}) names {file}, not the caller"
    );
}

/// tokio sync_panic.rs's rule (a misuse panic names the caller) for tokio sync_semaphore.rs's
/// `panic_when_exceeds_maxpermits`: `Semaphore::new` is `#[track_caller]`, so its refusal of
/// too many permits must name the caller's file.
#[test]
fn semaphore_new_refusing_too_many_permits_panics_at_the_callers_line() {
    let site = panic_site(|| {
        let _ = Semaphore::new(Semaphore::MAX_PERMITS + 1);
    });
    let (msg, file) = site.expect("Semaphore::new(MAX_PERMITS + 1) did not panic");
    assert_eq!(
        file,
        file!(),
        "the panic ({msg}) names {file}, not the caller"
    );
}

/// tokio sync_panic.rs's rule for tokio sync_semaphore.rs's `add_more_than_max_amount_permits1`
/// and `add_more_than_max_amount_permits2`: `add_permits` documents its panic (`# Panics`), so
/// the panic must name the caller's file (STYLE.md 12).
#[test]
fn add_permits_past_max_permits_panics_at_the_callers_line() {
    let s = Semaphore::new(Semaphore::MAX_PERMITS);
    let site = panic_site(|| s.add_permits(1));
    let (msg, file) = site.expect("add_permits past MAX_PERMITS did not panic");
    assert_eq!(
        file,
        file!(),
        "the panic ({msg}) names {file}, not the caller"
    );
}

/// After tokio sync_semaphore.rs's `add_more_than_max_amount_permits2`: a refused
/// `add_permits` adds nothing, so the count stays within `MAX_PERMITS` and the permits already
/// out can still come back. (The permits were added before the check: the count read
/// `MAX_PERMITS + 1`, and the next permit's drop panicked too.)
#[test]
fn a_refused_add_permits_adds_nothing() {
    let s = Semaphore::new(1);
    let permit = s.try_acquire().expect("a free permit");
    s.add_permits(Semaphore::MAX_PERMITS - 1);
    assert!(panic_site(|| s.add_permits(2)).is_some(), "no panic");
    assert_eq!(s.available_permits(), Semaphore::MAX_PERMITS - 1);
    drop(permit); // comes back: the count reaches the maximum, no panic
    assert_eq!(s.available_permits(), Semaphore::MAX_PERMITS);
}

/// A refused `add_permits` still wakes the waiter it served before it refused the rest. (The
/// waker it had taken was dropped in the unwind: the waiter, given its permit, slept on.)
#[test]
fn a_refused_add_permits_wakes_the_waiter_it_served() {
    within(EVENTUALLY, || {
        support::rt(1).run(|| {
            let s = std::sync::Arc::new(Semaphore::new(0));
            let s2 = s.clone();
            let waiter = corio::go(move || s2.acquire().map(drop).is_ok());
            corio::yield_now(); // the waiter queues
            assert!(panic_site(|| s.add_permits(Semaphore::MAX_PERMITS + 2)).is_some());
            assert!(waiter.join().unwrap(), "the waiter failed");
        })
    });
}
