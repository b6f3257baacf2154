//! A second, adversarial port of tokio 1.54's `tests/sync_rwlock.rs`, `sync_barrier.rs`,
//! `sync_once_cell.rs` and `sync_oneshot.rs` (`tokio-1.54.1/tests/`) to `corio::sync::{RwLock,
//! Barrier, OnceCell, oneshot}`, with Go's `sync/once_test.go` against `OnceCell` and `Lazy`.
//! (`sync_review_contract.rs` ported the same files first; this suite re-expresses each tokio
//! test anew and goes after what a cancellable primitive used from three worlds can get wrong.)
//! Each test names its original in a `///` line; the tests with no original say what they
//! hold corio to.
//!
//! tokio's hand-polled checks (`tokio_test::task::spawn`, `is_woken`, `waker_ref_count`) are a
//! future polled by hand with a waker that counts its wake-ups ([`Hand`], [`Probe`]). tokio's
//! `#[tokio::test]` bodies run in corio async tasks and as blocking-style code in stackful
//! coroutines and on plain threads; the runtime tests run on one worker and on two
//! (`rt_common!`), each under the `within` watchdog.
//!
//! Beyond the ports: waiters cancelled in the middle of a hand-off (a future dropped after it
//! was handed the lock, the permit, the right to initialise) lose nothing and wake the next;
//! the documented FIFO fairness of `RwLock` (no writer starvation, no reader starvation); a
//! panic, or an abort, while a guard is held; cancellation by `timeout` and by abort from
//! coroutines, tasks and plain threads; oneshot halves dropped, lost to a panic or aborted in
//! each kind of task while the other half waits in each kind; a waiter handed its turn and
//! aborted before it could run (made deterministic on one worker); a runtime dropped with
//! waiters queued on all four primitives; `Lazy` forced from every kind, and after its
//! computation was cancelled.
//!
//! Not ported, because corio has no such API (one line each):
//! - sync_rwlock.rs `zero_max_readers`, `zero_max_readers_const`: no `RwLock::with_max_readers`.
//! - sync_rwlock.rs `downgrade_map`, `try_downgrade_map`: no write-guard downgrade.
//! - sync_once_cell.rs `drop_cell_new_with`, `drop_into_inner_new_with`: no `OnceCell::new_with`.
//! - sync_once_cell.rs `from`: no `From<T>` for `OnceCell`.
//! - sync_once_cell.rs `get_or_try_init`: no `get_or_try_init`.
//! - sync_oneshot.rs `receiver_is_terminated_send`, `_try_recv`, `_drop`, `_rx_close`: the
//!   receiver implements no `FusedFuture` (`is_terminated`).
//! - sync_oneshot.rs `receiver_is_empty_send`, `_try_recv`, `_drop`, `_rx_close`: no
//!   `Receiver::is_empty`.
//! - once_test.go `BenchmarkOnce`: a benchmark.
//!
//! Adapted to corio's documented design (each test says so):
//! - sync_rwlock.rs `exhaust_reading`: corio's reader limit is the constant `MAX_READS`
//!   (2^29 - 1) and cannot be lowered; taking every permit costs ~2 s in a release build
//!   (measured), so the port holds 100 000 readers at once and checks that a writer needs every
//!   permit (it waits for the very last reader).
//! - sync_once_cell.rs `set_twice`, `set_while_initializing`: `set` gives the value back
//!   (`Err(T)`), with no `SetError` to tell "already set" from "being initialised".
//! - sync_once_cell.rs `get_or_init`, `get_or_init_panic`, `set_while_initializing`: tokio
//!   orders its tasks with paused time; corio has none, so the order is made with gates.
//! - sync_oneshot.rs `close_try_recv_poll`: tokio panics when a finished receiver is polled
//!   again; corio's receiver answers `Err(RecvError)` (its `close` docs: it fails "with closed
//!   at once").
//! - once_test.go `TestOncePanic`: Go's `Once` counts a panicking function as done; corio's
//!   `OnceCell` leaves the cell empty and the next caller initialises (its rustdoc, as std's
//!   `OnceLock`), and corio's `Lazy` refuses every later use with a panic.
//! - once_test.go `TestOnce`: the `Once` is a `OnceCell<()>` whose initialiser counts.

#[macro_use]
mod support;

use std::future::Future;
use std::panic::resume_unwind;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use corio::Runtime;
use corio::sync::{Barrier, Lazy, MAX_READS, OnceCell, RwLock, WaitGroup, oneshot};
use support::{
    DropToken, Drops, EVENTUALLY, EXPECTED, Gate, Rng, panic_message, payload_text,
    quiet_expected_panics, wait_until, within,
};

const MS: Duration = Duration::from_millis(1);

/// A wait that never ends within a test.
const HOUR: Duration = Duration::from_secs(3600);

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Counts the wake-ups of the wakers made from it; the `Arc`'s strong count tells how many
/// clones of them are kept somewhere (tokio-test's `is_woken` and `waker_ref_count`).
#[derive(Default)]
struct Probe {
    wakes: AtomicUsize,
}

impl Wake for Probe {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, SeqCst);
    }
}

/// A fresh probe and a waker that reports to it.
fn probe() -> (Arc<Probe>, Waker) {
    let p = Arc::new(Probe::default());
    (p.clone(), Waker::from(p))
}

/// A future polled by hand with its own [`Probe`]'s waker (tokio-test's `task::spawn`).
struct Hand<F> {
    fut: Pin<Box<F>>,
    probe: Arc<Probe>,
    waker: Waker,
}

fn hand<F: Future>(fut: F) -> Hand<F> {
    let (probe, waker) = probe();
    Hand {
        fut: Box::pin(fut),
        probe,
        waker,
    }
}

impl<F: Future> Hand<F> {
    /// Polls once, clearing the "woken" mark first (as tokio-test does).
    fn poll(&mut self) -> Poll<F::Output> {
        self.probe.wakes.store(0, SeqCst);
        self.fut
            .as_mut()
            .poll(&mut Context::from_waker(&self.waker))
    }

    /// Whether the waker was woken since the last poll.
    fn woken(&self) -> bool {
        self.probe.wakes.load(SeqCst) > 0
    }
}

/// Polls `fut` once with `waker`.
fn poll_with<F: Future + ?Sized>(fut: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(waker))
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

/// Wraps a future and raises its flag once a poll of it returned `Pending`: from then on the
/// waiter is queued (its waker registered), so what the test does next is a wake-up, not a
/// race with the waiter's first poll.
struct Flagged<F> {
    inner: Pin<Box<F>>,
    waiting: Arc<AtomicBool>,
}

impl<F: Future> Flagged<F> {
    fn new(inner: F, waiting: Arc<AtomicBool>) -> Flagged<F> {
        Flagged {
            inner: Box::pin(inner),
            waiting,
        }
    }
}

impl<F: Future> Future for Flagged<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let poll = self.inner.as_mut().poll(cx);
        if poll.is_pending() {
            self.waiting.store(true, SeqCst);
        }
        poll
    }
}

/// A fresh "is waiting" flag for [`Flagged`].
fn flag() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

/// Waits (on the test's plain thread) until `flag` is up.
#[track_caller]
fn wait_for_flag(what: &str, flag: &AtomicBool) {
    wait_until(what, || flag.load(SeqCst));
}

/// The three kinds of waiter corio promises every blocking operation works from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Coroutine,
    Task,
    Thread,
}

const KINDS: [Kind; 3] = [Kind::Coroutine, Kind::Task, Kind::Thread];

/// A started body of some [`Kind`].
enum Joiner<T> {
    Corio(corio::JoinHandle<T>),
    Thread(std::thread::JoinHandle<T>),
}

impl<T> Joiner<T> {
    /// The body's output; its panic is resumed here, a cancellation is a panic.
    #[track_caller]
    fn join(self) -> T {
        match self.outcome() {
            Outcome::Done(v) => v,
            Outcome::Panicked(p) => resume_unwind(p),
            Outcome::Cancelled => panic!("the body was cancelled"),
        }
    }

    /// How the body ended.
    fn outcome(self) -> Outcome<T> {
        match self {
            Joiner::Corio(h) => match h.join() {
                Ok(v) => Outcome::Done(v),
                Err(e) if e.is_panic() => Outcome::Panicked(e.into_panic()),
                Err(_) => Outcome::Cancelled,
            },
            Joiner::Thread(t) => match t.join() {
                Ok(v) => Outcome::Done(v),
                Err(p) => Outcome::Panicked(p),
            },
        }
    }

    /// The text of the body's panic; fails if it did not panic.
    #[track_caller]
    fn panic_text(self) -> String {
        match self.outcome() {
            Outcome::Panicked(p) => payload_text(&*p),
            Outcome::Done(_) => panic!("the body returned, expected a panic"),
            Outcome::Cancelled => panic!("the body was cancelled, expected a panic"),
        }
    }

    /// Cancels a coroutine or task (not a thread).
    fn abort(&self) {
        match self {
            Joiner::Corio(h) => h.abort(),
            Joiner::Thread(_) => unreachable!("a plain thread cannot be aborted"),
        }
    }

    fn is_finished(&self) -> bool {
        match self {
            Joiner::Corio(h) => h.is_finished(),
            Joiner::Thread(t) => t.is_finished(),
        }
    }
}

enum Outcome<T> {
    Done(T),
    Panicked(Box<dyn std::any::Any + Send>),
    Cancelled,
}

/// Starts a body of `kind` on `rt` (or, for a thread, on a new plain thread) owning `x`: a
/// coroutine or a thread runs `blocking(x)`, a task awaits `asynch(x)`.
fn start<X, T, Fut>(
    rt: &Runtime,
    kind: Kind,
    x: X,
    blocking: impl FnOnce(X) -> T + Send + 'static,
    asynch: impl FnOnce(X) -> Fut + Send + 'static,
) -> Joiner<T>
where
    X: Send + 'static,
    T: Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    match kind {
        Kind::Coroutine => Joiner::Corio(rt.go(move || blocking(x))),
        Kind::Task => Joiner::Corio(rt.spawn(async move { asynch(x).await })),
        Kind::Thread => Joiner::Thread(std::thread::spawn(move || blocking(x))),
    }
}

/// Whether `j` is still running after a moment (a check from below only: a finished body is
/// seen as finished however slow the machine).
fn still_running<T>(j: &Joiner<T>) -> bool {
    std::thread::sleep(5 * MS);
    !j.is_finished()
}

fn is_send<T: Send>(_: &T) {}

/// Lets the others run for a moment, holding whatever is held: a coroutine yields to its
/// scheduler, a plain thread (where `corio::yield_now` panics, as documented) sleeps briefly.
fn pause() {
    if corio::try_current().is_some() {
        corio::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(100));
    }
}

// ---------------------------------------------------------------------------------------------
// RwLock: tokio's `sync_rwlock.rs`
// ---------------------------------------------------------------------------------------------

/// tokio `into_inner`; with `get_mut`, `Default` and an unsized value behind a `Box`.
#[test]
fn rwlock_into_inner_gives_back_the_value() {
    assert_eq!(RwLock::new(42).into_inner(), 42);
    let mut lock = RwLock::<Vec<u8>>::default();
    lock.get_mut().push(1);
    assert_eq!(lock.into_inner(), [1]);
    let unsized_lock: Box<RwLock<[u32]>> = Box::new(RwLock::new([1, 2, 3]));
    unsized_lock.try_write().unwrap()[0] = 10;
    assert_eq!(unsized_lock.try_read().unwrap().iter().sum::<u32>(), 15);
}

/// tokio `read_shared`: two read futures are both ready on their first poll.
#[test]
fn rwlock_two_read_futures_are_both_ready_at_once() {
    let lock = RwLock::new(100);
    let mut r1 = hand(lock.read_async());
    let g1 = ready(r1.poll());
    let mut r2 = hand(lock.read_async());
    let g2 = ready(r2.poll());
    assert_eq!(*g1 + *g2, 200);
}

/// tokio `write_shared_pending` and `write_shared_drop`: a writer is pending while a reader
/// holds the lock, and the reader's release wakes it and lets it in.
#[test]
fn rwlock_a_writer_waits_for_the_reader_whose_release_wakes_it() {
    let lock = RwLock::new(100);
    let mut r = hand(lock.read_async());
    let g = ready(r.poll());
    let mut w = hand(lock.write_async());
    pending(w.poll());
    assert!(!w.woken());
    drop(g);
    assert!(w.woken(), "the reader's release did not wake the writer");
    let mut g = ready(w.poll());
    *g += 1;
    drop(g);
    assert_eq!(*lock.try_read().unwrap(), 101);
}

/// tokio `read_exclusive_pending` and `write_exclusive_pending`: while a writer holds the lock
/// a reader and a second writer are both pending.
#[test]
fn rwlock_a_held_write_lock_keeps_readers_and_writers_pending() {
    let lock = RwLock::new(100);
    let mut holder = hand(lock.write_async());
    let g = ready(holder.poll());
    let mut r = hand(lock.read_async());
    pending(r.poll());
    let mut w = hand(lock.write_async());
    pending(w.poll());
    assert!(lock.try_read().is_none() && lock.try_write().is_none());
    drop(g);
    assert!(r.woken());
    assert!(
        !w.woken(),
        "the second writer was woken ahead of the reader"
    );
    drop(ready(r.poll()));
    assert!(w.woken());
    drop(ready(w.poll()));
    assert!(lock.try_write().is_some());
}

/// tokio `write_read_shared_pending`: with two readers in, a writer queues, and a reader that
/// comes after it is pending too (as is `try_read`), though readers hold the lock; once the
/// readers leave the writer goes first.
#[test]
fn rwlock_a_queued_writer_keeps_later_readers_out_while_readers_hold_the_lock() {
    let lock = RwLock::new(100);
    let g1 = lock.try_read().unwrap();
    let mut r2 = hand(lock.read_async());
    let g2 = ready(r2.poll());
    let mut w = hand(lock.write_async());
    pending(w.poll());
    let mut r3 = hand(lock.read_async());
    pending(r3.poll());
    assert!(
        lock.try_read().is_none(),
        "try_read overtook the queued writer"
    );
    drop(g1);
    assert!(!w.woken() && !r3.woken());
    drop(g2);
    assert!(w.woken());
    assert!(!r3.woken(), "the later reader was woken with the writer");
    drop(ready(w.poll()));
    assert!(r3.woken());
    assert_eq!(*ready(r3.poll()), 100);
}

/// tokio `write_read_shared_drop_pending`: the queued writer's future is dropped (a cancelled
/// task, a timeout); the reader behind it is woken and gets in while the first still reads.
#[test]
fn rwlock_a_dropped_queued_writer_lets_the_reader_behind_it_in() {
    let lock = RwLock::new(7);
    let first = lock.try_read().unwrap();
    let mut w = hand(lock.write_async());
    pending(w.poll());
    let mut r = hand(lock.read_async());
    pending(r.poll());
    drop(w);
    assert!(
        r.woken(),
        "the writer's cancel did not wake the reader behind it"
    );
    let second = ready(r.poll());
    assert_eq!(*first + *second, 14);
    drop((first, second));
    assert!(
        lock.try_write().is_some(),
        "the dropped writer kept permits"
    );
}

/// tokio `exhaust_reading`, adapted (file head): corio's limit is `MAX_READS`; 100 000 readers
/// hold the lock at once, a writer queued behind them waits for the very last one (it needs
/// every permit), and a reader queued behind the writer waits for the writer.
#[test]
fn rwlock_many_readers_share_the_lock_and_a_writer_needs_every_permit() {
    assert_eq!(MAX_READS, (1 << 29) - 1, "the documented reader limit");
    let lock = RwLock::new(());
    let mut readers: Vec<_> = (0..100_000)
        .map(|i| {
            lock.try_read()
                .unwrap_or_else(|| panic!("reader {i} refused"))
        })
        .collect();
    let mut w = hand(lock.write_async());
    pending(w.poll());
    let mut late = hand(lock.read_async());
    pending(late.poll());
    let last = readers.pop().unwrap();
    drop(readers);
    assert!(!w.woken(), "the writer was woken with a reader still in");
    assert!(lock.try_write().is_none());
    drop(last);
    assert!(w.woken());
    let g = ready(w.poll());
    assert!(!late.woken());
    drop(g);
    assert!(late.woken());
    drop(ready(late.poll()));
    assert!(lock.try_write().is_some(), "a permit was lost");
}

/// tokio `write_order`: writer futures made in one order and first polled in the other get
/// the lock in the order of their first polls (a future queues when first polled, as tokio's);
/// a reader holds the lock meanwhile so that both really queue.
#[test]
fn rwlock_writers_get_the_lock_in_the_order_they_first_wait() {
    let lock = RwLock::new(Vec::new());
    let reader = lock.try_read().unwrap();
    let mut w2 = hand(async { lock.write_async().await.push(2) });
    let mut w1 = hand(async { lock.write_async().await.push(1) });
    pending(w1.poll());
    pending(w2.poll());
    drop(reader);
    assert!(w1.woken() && !w2.woken());
    ready(w1.poll());
    assert!(w2.woken());
    ready(w2.poll());
    assert_eq!(*lock.try_read().unwrap(), [1, 2]);
}

/// tokio `try_read_try_write`.
#[test]
fn rwlock_try_read_and_try_write_follow_the_holders() {
    let lock = RwLock::new(15usize);
    {
        let r1 = lock.try_read().unwrap();
        assert_eq!(*r1, 15);
        assert!(lock.try_write().is_none());
        let r2 = lock.try_read().unwrap();
        assert_eq!(*r2, 15);
    }
    {
        let mut w = lock.try_write().unwrap();
        *w = 1515;
        assert!(lock.try_read().is_none());
        assert!(lock.try_write().is_none());
    }
    assert_eq!(*lock.try_read().unwrap(), 1515);
}

/// corio's fairness (module docs: strict FIFO on the batch semaphore): behind a held write lock
/// the queue R1 W1 R2 R3 W2 R4 is served as R1, W1, R2+R3 together, W2, R4 — each only when
/// its turn comes, nobody overtaking.
#[test]
fn rwlock_queued_waiters_are_served_in_arrival_order_with_reader_runs_together() {
    let lock = RwLock::new(Vec::<&str>::new());
    let holder = lock.try_write().unwrap();
    let mut r1 = hand(lock.read_async());
    let mut w1 = hand(lock.write_async());
    let mut r2 = hand(lock.read_async());
    let mut r3 = hand(lock.read_async());
    let mut w2 = hand(lock.write_async());
    let mut r4 = hand(lock.read_async());
    pending(r1.poll());
    pending(w1.poll());
    pending(r2.poll());
    pending(r3.poll());
    pending(w2.poll());
    pending(r4.poll());
    drop(holder);
    assert!(r1.woken(), "the head reader was not woken");
    assert!(
        !w1.woken() && !r2.woken() && !r3.woken(),
        "woken out of turn"
    );
    let g = ready(r1.poll());
    assert!(g.is_empty());
    drop(g);
    assert!(w1.woken() && !r2.woken() && !r3.woken());
    let mut g = ready(w1.poll());
    g.push("w1");
    drop(g);
    assert!(
        r2.woken() && r3.woken(),
        "the reader run was not let in together"
    );
    assert!(!w2.woken() && !r4.woken());
    let (a, b) = (ready(r2.poll()), ready(r3.poll()));
    assert_eq!((&*a, &*b), (&vec!["w1"], &vec!["w1"]));
    drop(a);
    assert!(!w2.woken(), "the writer got in with a reader still in");
    drop(b);
    assert!(w2.woken() && !r4.woken());
    ready(w2.poll()).push("w2");
    assert!(r4.woken());
    assert_eq!(*ready(r4.poll()), ["w1", "w2"]);
}

/// A waiter cancelled mid-hand-off: a reader handed its permit by the writer's release, but
/// dropped before it polls again, passes the permit on; the writer queued behind it (which had
/// collected every other permit) is woken and gets in, and no permit is lost or duplicated.
#[test]
fn rwlock_a_reader_handed_the_lock_but_dropped_unpolled_passes_it_to_the_writer_behind() {
    let lock = RwLock::new(0);
    let holder = lock.try_write().unwrap();
    let mut r = hand(lock.read_async());
    pending(r.poll());
    let mut w = hand(lock.write_async());
    pending(w.poll());
    drop(holder);
    assert!(r.woken() && !w.woken());
    assert!(
        lock.try_write().is_none(),
        "the reader holds its permit now"
    );
    drop(r);
    assert!(
        w.woken(),
        "the dropped reader's permit did not reach the writer"
    );
    *ready(w.poll()) += 1;
    let g = lock.try_write().expect("a permit was lost");
    assert!(lock.try_read().is_none(), "a permit was duplicated");
    assert_eq!(*g, 1);
}

/// The same for a run of readers let in together: those dropped unpolled give their permits
/// back; the writer behind waits only for the one that kept its guard.
#[test]
fn rwlock_a_reader_run_handed_the_lock_then_mostly_dropped_leaves_the_writer_waiting_for_one() {
    let lock = RwLock::new(0);
    let holder = lock.try_write().unwrap();
    let mut readers: Vec<_> = (0..4).map(|_| hand(lock.read_async())).collect();
    for r in &mut readers {
        pending(r.poll());
    }
    let mut w = hand(lock.write_async());
    pending(w.poll());
    drop(holder);
    assert!(readers.iter().all(Hand::woken));
    let mut kept = readers.pop().unwrap();
    drop(readers);
    assert!(
        !w.woken(),
        "the writer was let in while a granted reader lives"
    );
    let g = ready(kept.poll());
    drop(g);
    assert!(w.woken());
    drop(ready(w.poll()));
    assert!(lock.try_write().is_some());
}

/// Guards are `Send` (module docs): a read guard taken on one plain thread and dropped on
/// another releases the lock there, waking a coroutine queued for the write lock.
#[test]
fn rwlock_a_read_guard_dropped_on_another_thread_wakes_the_queued_writer() {
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        let lock = Arc::new(RwLock::new(1));
        let guard = lock.try_read().unwrap();
        let waiting = flag();
        let (l, f) = (lock.clone(), waiting.clone());
        let writer = rt.go(move || {
            let mut g = corio::block_on(Flagged::new(l.write_async(), f));
            *g += 1;
        });
        wait_for_flag("the writer queues", &waiting);
        std::thread::scope(|s| {
            s.spawn(move || drop(guard));
        });
        writer.join().unwrap();
        assert_eq!(*lock.try_read().unwrap(), 2);
    });
}

mod rwlock_on_every_flavour {
    use super::*;

    /// What one holder adds to the "inside" count: 1 for a reader, this for a writer.
    const WRITER: i64 = 1 << 20;

    /// Somebody inside the lock, counted in the shared "inside" number until dropped (so an
    /// unwind leaves too).
    struct Inside<'a>(&'a AtomicI64, i64);

    /// Counts a reader or writer in, checking that nobody incompatible is inside (Go's
    /// `HammerRWMutex` check).
    #[track_caller]
    fn enter(inside: &AtomicI64, write: bool) -> Inside<'_> {
        let me = if write { WRITER } else { 1 };
        let now = inside.fetch_add(me, SeqCst) + me;
        if write {
            assert_eq!(now, WRITER, "a writer saw somebody inside");
        } else {
            assert!(now < WRITER, "a reader saw a writer inside");
        }
        Inside(inside, me)
    }

    impl Drop for Inside<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(self.1, SeqCst);
        }
    }

    rt_common! {
        /// tokio `read_uncontested`, `write_uncontested` and `try_write`, from a coroutine, a
        /// task and a plain thread.
        #[test]
        fn uncontested_reads_and_writes_complete_at_once_in_every_kind() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for kind in KINDS {
                    let lock = Arc::new(RwLock::new(100));
                    let out = start(
                        &rt,
                        kind,
                        lock.clone(),
                        |l| {
                            let r = *l.read();
                            let mut w = l.write();
                            *w += 50;
                            drop(w);
                            let g = l.read();
                            let refused = l.try_write().is_none();
                            drop(g);
                            let now = *l.read();
                            (r, now, refused, l.try_write().is_some())
                        },
                        |l| async move {
                            let r = *l.read_async().await;
                            *l.write_async().await += 50;
                            let g = l.read_async().await;
                            let refused = l.try_write().is_none();
                            drop(g);
                            let now = *l.read_async().await;
                            (r, now, refused, l.try_write().is_some())
                        },
                    )
                    .join();
                    assert_eq!(out, (100, 150, true, true), "{kind:?}");
                }
            });
        }

        /// tokio `multithreaded`: writers of every kind (a coroutine, a plain thread, two
        /// tasks) add their own step many times; they and the test's thread meet at a
        /// `Barrier` of five, and the sum is exact.
        #[test]
        fn writers_of_every_kind_add_up_exactly_and_meet_at_a_barrier() {
            const N: u32 = 250;
            let rt = rt();
            within(EVENTUALLY, move || {
                let lock = Arc::new(RwLock::new(0u32));
                let barrier = Arc::new(Barrier::new(5));
                let mut joins = Vec::new();
                for (kind, step) in [(Kind::Coroutine, 2), (Kind::Task, 3), (Kind::Thread, 5), (Kind::Task, 7)] {
                    joins.push(start(
                        &rt,
                        kind,
                        (lock.clone(), barrier.clone()),
                        move |(l, b)| {
                            for _ in 0..N {
                                *l.write() += step;
                            }
                            b.wait();
                        },
                        move |(l, b)| async move {
                            for _ in 0..N {
                                *l.write_async().await += step;
                            }
                            b.wait_async().await;
                        },
                    ));
                }
                barrier.wait();
                assert_eq!(*lock.read(), 17 * N);
                joins.into_iter().for_each(Joiner::join);
            });
        }

        /// Writer starvation, as documented ("a queued writer holds back the readers that
        /// arrive after it: neither side starves"): readers of every kind keep overlapping
        /// so the lock is never free; a writer of each kind in turn still gets in, and a
        /// reader that starts once the writer is queued never gets in before it.
        #[test]
        fn a_writer_of_each_kind_is_not_starved_by_overlapping_readers_of_every_kind() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for writer_kind in KINDS {
                    let lock = Arc::new(RwLock::new(0u32));
                    let reads = Arc::new(AtomicUsize::new(0));
                    let readers: Vec<_> = KINDS
                        .iter()
                        .map(|&kind| {
                            start(
                                &rt,
                                kind,
                                (lock.clone(), reads.clone()),
                                move |(l, n)| loop {
                                    let g = l.read();
                                    if *g == 1 {
                                        return;
                                    }
                                    n.fetch_add(1, SeqCst);
                                    // Hold the guard across a pause so the readers overlap.
                                    pause();
                                },
                                |(l, n)| async move {
                                    loop {
                                        let g = l.read_async().await;
                                        if *g == 1 {
                                            return;
                                        }
                                        n.fetch_add(1, SeqCst);
                                        corio::yield_now_async().await;
                                    }
                                },
                            )
                        })
                        .collect();
                    wait_until("the readers run", || reads.load(SeqCst) > 30);
                    let writer = start(
                        &rt,
                        writer_kind,
                        lock.clone(),
                        |l| *l.write() = 1,
                        |l| async move { *l.write_async().await = 1 },
                    );
                    // Readers alone never take the count to zero: a refused `try_read` means
                    // the writer is queued (or in).
                    wait_until("the writer queues or is done", || {
                        lock.try_read().is_none_or(|g| *g == 1)
                    });
                    let late = start(
                        &rt,
                        Kind::Coroutine,
                        lock.clone(),
                        |l| *l.read(),
                        |l| async move { *l.read_async().await },
                    );
                    assert_eq!(late.join(), 1, "a late reader overtook the queued {writer_kind:?} writer");
                    writer.join();
                    readers.into_iter().for_each(Joiner::join);
                }
            });
        }

        /// The other side of the FIFO promise: writers of every kind take the lock one after
        /// another without pause; a reader of each kind that queues among them gets in, not
        /// starved by the writers that come after it.
        #[test]
        fn a_reader_of_each_kind_is_not_starved_by_a_stream_of_writers() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for reader_kind in KINDS {
                    let lock = Arc::new(RwLock::new(0u64));
                    let stop = Arc::new(AtomicBool::new(false));
                    let writers: Vec<_> = KINDS
                        .iter()
                        .map(|&kind| {
                            start(
                                &rt,
                                kind,
                                (lock.clone(), stop.clone()),
                                move |(l, stop)| {
                                    while !stop.load(SeqCst) {
                                        let mut g = l.write();
                                        *g += 1;
                                        pause();
                                    }
                                },
                                |(l, stop)| async move {
                                    while !stop.load(SeqCst) {
                                        let mut g = l.write_async().await;
                                        *g += 1;
                                        corio::yield_now_async().await;
                                    }
                                },
                            )
                        })
                        .collect();
                    wait_until("the writers run", || lock.try_read().is_none());
                    let seen = start(
                        &rt,
                        reader_kind,
                        lock.clone(),
                        |l| *l.read(),
                        |l| async move { *l.read_async().await },
                    )
                    .join();
                    stop.store(true, SeqCst);
                    writers.into_iter().for_each(Joiner::join);
                    assert!(seen > 0, "the reader got in before any write");
                }
            });
        }

        /// A panic while a guard is held, in each kind of holder, with read and write guards:
        /// the unwind releases the lock (corio's `RwLock`, as tokio's, does not poison), the
        /// panic reaches the holder's joiner, and a writer of another kind queued behind it
        /// gets in and sees what the panicking holder left.
        #[test]
        fn a_panic_while_holding_a_guard_releases_it_in_every_kind() {
            quiet_expected_panics();
            let rt = rt();
            within(EVENTUALLY, move || {
                for (i, holder_kind) in KINDS.into_iter().enumerate() {
                    for write in [false, true] {
                        let lock = Arc::new(RwLock::new(0));
                        let holding = Arc::new(WaitGroup::new());
                        let go_on = Arc::new(WaitGroup::new());
                        holding.add(1);
                        go_on.add(1);
                        let holder = start(
                            &rt,
                            holder_kind,
                            (lock.clone(), holding.clone(), go_on.clone()),
                            move |(l, h, g)| {
                                let _guard = if write {
                                    let mut w = l.write();
                                    *w = 7;
                                    Err(w)
                                } else {
                                    Ok(l.read())
                                };
                                h.done();
                                g.wait();
                                panic!("{EXPECTED} holder fails");
                            },
                            move |(l, h, g)| async move {
                                let _guard = if write {
                                    let mut w = l.write_async().await;
                                    *w = 7;
                                    Err(w)
                                } else {
                                    Ok(l.read_async().await)
                                };
                                h.done();
                                g.wait_async().await;
                                panic!("{EXPECTED} holder fails");
                            },
                        );
                        holding.wait();
                        let waiting = flag();
                        let next = start(
                            &rt,
                            KINDS[(i + 1) % 3],
                            (lock.clone(), waiting.clone()),
                            |(l, f)| {
                                let mut g = corio::block_on(Flagged::new(l.write_async(), f));
                                *g += 1;
                                *g
                            },
                            |(l, f)| async move {
                                let mut g = Flagged::new(l.write_async(), f).await;
                                *g += 1;
                                *g
                            },
                        );
                        wait_for_flag("the next writer queues", &waiting);
                        go_on.done();
                        assert!(holder.panic_text().contains("holder fails"));
                        let expect = if write { 8 } else { 1 };
                        assert_eq!(next.join(), expect, "{holder_kind:?}, write {write}");
                        assert!(lock.try_write().is_some(), "the lock was left held");
                    }
                }
            });
        }

        /// An abort while a guard is held: a coroutine suspended in `sleep` with the write
        /// guard, and a task pending with a read guard, are cancelled; the unwind (coroutine)
        /// or the drop (task) releases the guard, and the writer waiting behind gets in.
        #[test]
        fn an_aborted_holder_suspended_with_a_guard_releases_it() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for (holder_kind, waiter_kind) in [(Kind::Coroutine, Kind::Task), (Kind::Task, Kind::Thread)] {
                    for write in [false, true] {
                        let lock = Arc::new(RwLock::new(0));
                        let holding = Arc::new(WaitGroup::new());
                        holding.add(1);
                        let holder = start(
                            &rt,
                            holder_kind,
                            (lock.clone(), holding.clone()),
                            move |(l, h)| {
                                let _guard = if write { Err(l.write()) } else { Ok(l.read()) };
                                h.done();
                                corio::sleep(HOUR);
                            },
                            move |(l, h)| async move {
                                let _guard = if write {
                                    Err(l.write_async().await)
                                } else {
                                    Ok(l.read_async().await)
                                };
                                h.done();
                                std::future::pending::<()>().await;
                            },
                        );
                        holding.wait();
                        let waiting = flag();
                        let next = start(
                            &rt,
                            waiter_kind,
                            (lock.clone(), waiting.clone()),
                            |(l, f)| *corio::block_on(Flagged::new(l.write_async(), f)) += 1,
                            |(l, f)| async move { *Flagged::new(l.write_async(), f).await += 1 },
                        );
                        wait_for_flag("the writer queues", &waiting);
                        assert!(still_running(&next));
                        holder.abort();
                        assert!(matches!(holder.outcome(), Outcome::Cancelled));
                        next.join();
                        assert_eq!(*lock.try_read().unwrap(), 1);
                    }
                }
            });
        }

        /// Waiters of every kind give up at random — a `timeout` around the wait (blocking
        /// style in coroutines and on a plain thread, `timeout_async` in tasks) or an abort of
        /// a queued coroutine or task — while the lock changes hands all the time. Each of
        /// those cancellations may land just as the lock is handed to the waiter; nothing may
        /// be lost or duplicated: no reader sees a writer inside, no writer sees anybody, and
        /// at the end the lock is entirely free.
        #[test]
        fn waiters_cancelled_by_timeout_or_abort_in_every_kind_lose_and_duplicate_no_permit() {
            const ROUNDS: u64 = 60;
            let rt = rt();
            within(EVENTUALLY, move || {
                let lock = Arc::new(RwLock::new(0u64));
                let inside = Arc::new(AtomicI64::new(0));
                let mut joins = Vec::new();
                for (seed, kind) in KINDS.into_iter().enumerate() {
                    joins.push(start(
                        &rt,
                        kind,
                        (lock.clone(), inside.clone()),
                        move |(l, inside)| {
                            let mut rng = Rng::new(seed as u64 + 1);
                            for _ in 0..ROUNDS {
                                let limit = Duration::from_micros(rng.below(1500));
                                if rng.chance(40) {
                                    if let Ok(mut g) = corio::time::timeout(limit, l.write_async()) {
                                        let _in = enter(&inside, true);
                                        *g += 1;
                                        pause();
                                    }
                                } else if let Ok(_g) = corio::time::timeout(limit, l.read_async()) {
                                    let _in = enter(&inside, false);
                                    pause();
                                }
                            }
                        },
                        move |(l, inside)| async move {
                            let mut rng = Rng::new(seed as u64 + 1);
                            for _ in 0..ROUNDS {
                                let limit = Duration::from_micros(rng.below(1500));
                                if rng.chance(40) {
                                    let w = corio::time::timeout_async(limit, l.write_async());
                                    if let Ok(mut g) = w.await {
                                        let _in = enter(&inside, true);
                                        *g += 1;
                                        corio::yield_now_async().await;
                                    }
                                } else {
                                    let r = corio::time::timeout_async(limit, l.read_async());
                                    if let Ok(_g) = r.await {
                                        let _in = enter(&inside, false);
                                        corio::yield_now_async().await;
                                    }
                                }
                            }
                        },
                    ));
                }
                // Victims: queued waiters of both runtime kinds, aborted after a random pause
                // (some before they are handed the lock, some just after, some done).
                let mut rng = Rng::new(99);
                for i in 0..20 {
                    let kind = if i % 2 == 0 { Kind::Coroutine } else { Kind::Task };
                    let write = rng.chance(50);
                    let victim = start(
                        &rt,
                        kind,
                        (lock.clone(), inside.clone()),
                        move |(l, inside)| {
                            if write {
                                let mut g = l.write();
                                let _in = enter(&inside, true);
                                *g += 1;
                            } else {
                                let _g = l.read();
                                let _in = enter(&inside, false);
                            }
                        },
                        move |(l, inside)| async move {
                            if write {
                                let mut g = l.write_async().await;
                                let _in = enter(&inside, true);
                                *g += 1;
                            } else {
                                let _g = l.read_async().await;
                                let _in = enter(&inside, false);
                            }
                        },
                    );
                    std::thread::sleep(Duration::from_micros(rng.below(800)));
                    victim.abort();
                    match victim.outcome() {
                        Outcome::Done(()) | Outcome::Cancelled => {}
                        Outcome::Panicked(p) => resume_unwind(p),
                    }
                }
                joins.into_iter().for_each(Joiner::join);
                let g = lock.try_write().expect("a permit was lost");
                assert!(lock.try_read().is_none(), "a permit was duplicated");
                assert_eq!(inside.load(SeqCst), 0);
                drop(g);
                let readers: Vec<_> = (0..3).map(|_| lock.try_read().unwrap()).collect();
                assert!(lock.try_write().is_none());
                drop(readers);
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Barrier: tokio's `sync_barrier.rs`
// ---------------------------------------------------------------------------------------------

/// tokio `barrier_future_is_send`; the result is a plain `Copy` value.
#[test]
fn barrier_the_wait_future_is_send() {
    let b = Barrier::new(0);
    is_send(&b.wait_async());
    fn copy<T: Copy + std::fmt::Debug>(_: T) {}
    copy(b.wait());
}

/// tokio `zero_does_not_block` and `single`: with 0 or 1 party nobody waits and every caller
/// leads, polled by hand and called blocking-style on a plain thread.
#[test]
fn barrier_of_zero_or_one_party_never_blocks_and_every_caller_leads() {
    for parties in [0, 1] {
        let b = Barrier::new(parties);
        for _ in 0..3 {
            let mut w = hand(b.wait_async());
            assert!(ready(w.poll()).is_leader());
            assert!(b.wait().is_leader());
        }
    }
}

/// tokio `tango`: of two parties the second opens the barrier and wakes the first; exactly one
/// leads — the last to arrive, as documented.
#[test]
fn barrier_of_two_opens_on_the_second_which_leads() {
    let b = Barrier::new(2);
    let mut w1 = hand(b.wait_async());
    pending(w1.poll());
    let mut w2 = hand(b.wait_async());
    let r2 = ready(w2.poll());
    assert!(w1.woken());
    let r1 = ready(w1.poll());
    assert!(r2.is_leader() && !r1.is_leader());
}

/// tokio `lots`: ten rounds of a hundred parties; ninety-nine are pending (and stay pending
/// when polled again), the hundredth opens the round and is its one leader.
#[test]
fn barrier_of_a_hundred_opens_ten_rounds_each_with_one_leader() {
    let b = Barrier::new(100);
    for _ in 0..10 {
        let mut waiting: Vec<_> = (0..99).map(|_| hand(b.wait_async())).collect();
        for w in &mut waiting {
            pending(w.poll());
        }
        for w in &mut waiting {
            pending(w.poll());
        }
        let mut last = hand(b.wait_async());
        assert!(ready(last.poll()).is_leader());
        for w in &mut waiting {
            assert!(w.woken());
            assert!(!ready(w.poll()).is_leader(), "a second leader");
        }
    }
}

/// Cancellation, both halves of the module docs: a party dropped before its round opens takes
/// its arrival back (so the round needs a full set of live parties), one dropped before its
/// first poll never arrived, and one dropped after its round opened leaves the next round
/// alone.
#[test]
fn barrier_a_party_dropped_before_the_round_opens_is_not_counted() {
    let b = Barrier::new(3);
    let mut a = hand(b.wait_async());
    pending(a.poll());
    let mut gone = hand(b.wait_async());
    pending(gone.poll());
    drop(gone);
    drop(b.wait_async());
    let mut c = hand(b.wait_async());
    pending(c.poll());
    assert!(!a.woken(), "the round opened with a dropped party");
    let mut d = hand(b.wait_async());
    assert!(ready(d.poll()).is_leader());
    assert!(!ready(a.poll()).is_leader());
    // `c` is woken but dropped before it looks: the next round must not lose an arrival.
    assert!(c.woken());
    drop(c);
    let mut e = hand(b.wait_async());
    pending(e.poll());
    let mut f = hand(b.wait_async());
    pending(f.poll());
    assert!(
        !e.woken(),
        "the dropped party of the last round took an arrival back"
    );
    assert!(b.wait().is_leader());
    assert!(e.woken() && f.woken());
    assert!(!ready(e.poll()).is_leader() && !ready(f.poll()).is_leader());
}

mod barrier_on_every_flavour {
    use super::*;

    rt_common! {
        /// Cancellation from every kind of waiter: a coroutine's and a plain thread's
        /// blocking-style `timeout` around the wait, a task aborted while it waits and a
        /// coroutine aborted while it waits in `wait` — none of them counts. Then two live
        /// parties wait (and keep waiting), and the third opens the round and leads.
        #[test]
        fn parties_cancelled_in_every_kind_are_not_counted() {
            let rt = rt();
            within(EVENTUALLY, move || {
                let b = Arc::new(Barrier::new(3));
                for kind in [Kind::Coroutine, Kind::Thread] {
                    let out = start(
                        &rt,
                        kind,
                        b.clone(),
                        |b| corio::time::timeout(2 * MS, b.wait_async()).is_err(),
                        |b| async move { corio::time::timeout_async(2 * MS, b.wait_async()).await.is_err() },
                    );
                    assert!(out.join(), "{kind:?}: a lone party passed the barrier");
                }
                for kind in [Kind::Task, Kind::Coroutine] {
                    let waiting = flag();
                    let victim = start(
                        &rt,
                        kind,
                        (b.clone(), waiting.clone()),
                        |(b, f)| corio::block_on(Flagged::new(b.wait_async(), f)),
                        |(b, f)| async move { Flagged::new(b.wait_async(), f).await },
                    );
                    wait_for_flag("the victim waits", &waiting);
                    victim.abort();
                    assert!(matches!(victim.outcome(), Outcome::Cancelled), "{kind:?}");
                }
                let mut live = Vec::new();
                for kind in [Kind::Coroutine, Kind::Task] {
                    let waiting = flag();
                    live.push(start(
                        &rt,
                        kind,
                        (b.clone(), waiting.clone()),
                        |(b, f)| corio::block_on(Flagged::new(b.wait_async(), f)).is_leader(),
                        |(b, f)| async move { Flagged::new(b.wait_async(), f).await.is_leader() },
                    ));
                    wait_for_flag("a live party waits", &waiting);
                }
                assert!(live.iter().all(still_running), "the round opened early");
                assert!(b.wait().is_leader(), "the last party to arrive leads");
                assert!(live.into_iter().all(|j| !j.join()));
            });
        }

        /// A barrier of three whose third party keeps giving up and coming back: two steady
        /// parties (of two kinds) go through many rounds; the third (the remaining kind)
        /// waits each time under a short random `timeout` and retries until the steady ones
        /// are done. A timed-out arrival is taken back, one that made it counts: the steady
        /// parties never pass a round the other has not reached, the flaky one passes no more
        /// rounds than there were, and nobody hangs.
        #[test]
        fn a_party_that_keeps_timing_out_and_retrying_never_breaks_the_count() {
            const ROUNDS: usize = 40;
            let rt = rt();
            within(EVENTUALLY, move || {
                for flaky_kind in KINDS {
                    let b = Arc::new(Barrier::new(3));
                    let arrived: Arc<[AtomicUsize; 2]> = Arc::new(Default::default());
                    let done = Arc::new(AtomicUsize::new(0));
                    let steady_kinds: Vec<Kind> =
                        KINDS.into_iter().filter(|&k| k != flaky_kind).collect();
                    let steady: Vec<_> = steady_kinds
                        .into_iter()
                        .enumerate()
                        .map(|(me, kind)| {
                            start(
                                &rt,
                                kind,
                                (b.clone(), arrived.clone(), done.clone()),
                                move |(b, arrived, done)| {
                                    for round in 1..=ROUNDS {
                                        arrived[me].store(round, SeqCst);
                                        b.wait();
                                        assert!(arrived[1 - me].load(SeqCst) >= round, "passed early");
                                    }
                                    done.fetch_add(1, SeqCst);
                                },
                                move |(b, arrived, done)| async move {
                                    for round in 1..=ROUNDS {
                                        arrived[me].store(round, SeqCst);
                                        b.wait_async().await;
                                        assert!(arrived[1 - me].load(SeqCst) >= round, "passed early");
                                    }
                                    done.fetch_add(1, SeqCst);
                                },
                            )
                        })
                        .collect();
                    let flaky = start(
                        &rt,
                        flaky_kind,
                        (b.clone(), done.clone()),
                        |(b, done)| {
                            let (mut rng, mut passed) = (Rng::new(7), 0);
                            while done.load(SeqCst) < 2 {
                                let limit = Duration::from_micros(50 + rng.below(500));
                                passed += usize::from(corio::time::timeout(limit, b.wait_async()).is_ok());
                            }
                            passed
                        },
                        |(b, done)| async move {
                            let (mut rng, mut passed) = (Rng::new(7), 0);
                            while done.load(SeqCst) < 2 {
                                let limit = Duration::from_micros(50 + rng.below(500));
                                let wait = corio::time::timeout_async(limit, b.wait_async());
                                passed += usize::from(wait.await.is_ok());
                            }
                            passed
                        },
                    );
                    steady.into_iter().for_each(Joiner::join);
                    // Each round opened on exactly one arrival of the flaky party; a timeout that
                    // fired as its round opened still counted (it lost only the answer).
                    let passes = flaky.join();
                    assert!(passes <= ROUNDS, "{flaky_kind:?}: {passes} passes in {ROUNDS} rounds");
                }
            });
        }

        /// tokio `lots` at run time, with parties of every kind: round after round nobody
        /// passes before all have arrived at that round, and each round has one leader.
        #[test]
        fn parties_of_every_kind_meet_round_after_round() {
            const ROUNDS: usize = 20;
            const PARTIES: usize = 6;
            let rt = rt();
            within(EVENTUALLY, move || {
                let b = Arc::new(Barrier::new(PARTIES));
                let arrived: Arc<Vec<AtomicUsize>> =
                    Arc::new((0..ROUNDS).map(|_| AtomicUsize::new(0)).collect());
                let (tx, rx) = mpsc::channel::<(usize, bool)>();
                let joins: Vec<_> = (0..PARTIES)
                    .map(|i| {
                        start(
                            &rt,
                            KINDS[i % 3],
                            (b.clone(), arrived.clone(), tx.clone()),
                            |(b, arrived, tx)| {
                                for round in 0..ROUNDS {
                                    arrived[round].fetch_add(1, SeqCst);
                                    let leader = b.wait().is_leader();
                                    assert_eq!(arrived[round].load(SeqCst), PARTIES, "passed early");
                                    tx.send((round, leader)).unwrap();
                                }
                            },
                            |(b, arrived, tx)| async move {
                                for round in 0..ROUNDS {
                                    arrived[round].fetch_add(1, SeqCst);
                                    let leader = b.wait_async().await.is_leader();
                                    assert_eq!(arrived[round].load(SeqCst), PARTIES, "passed early");
                                    tx.send((round, leader)).unwrap();
                                }
                            },
                        )
                    })
                    .collect();
                drop(tx);
                joins.into_iter().for_each(Joiner::join);
                let mut leaders = [0usize; ROUNDS];
                let mut passed = [0usize; ROUNDS];
                for (round, leader) in rx {
                    passed[round] += 1;
                    leaders[round] += usize::from(leader);
                }
                assert!(passed.iter().all(|&n| n == PARTIES));
                assert!(leaders.iter().all(|&n| n == 1), "{leaders:?}");
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// OnceCell and Lazy: tokio's `sync_once_cell.rs`, Go's `once_test.go`
// ---------------------------------------------------------------------------------------------

/// tokio `drop_cell`: the value is dropped with the cell, once.
#[test]
fn once_cell_drops_its_value_with_it() {
    let drops = Drops::new();
    {
        let cell = OnceCell::new();
        assert!(cell.set(drops.token()).is_ok());
        assert_eq!(drops.dropped(), 0);
    }
    assert_eq!(drops.dropped(), 1);
    drop(OnceCell::<DropToken>::new());
    assert_eq!(drops.dropped(), 1);
}

/// tokio `drop_into_inner`: `into_inner` hands the value out undropped; it is dropped once,
/// by its new owner.
#[test]
fn once_cell_into_inner_hands_the_value_out_undropped() {
    let drops = Drops::new();
    let cell = OnceCell::new();
    assert!(cell.set(drops.token()).is_ok());
    let value = cell.into_inner();
    assert_eq!(drops.dropped(), 0);
    drop(value);
    assert_eq!(drops.dropped(), 1);
}

/// tokio `get_uninit` and `set_twice`, adapted (file head: the second `set` gives its value
/// back), on a `static`.
#[test]
fn once_cell_static_is_empty_then_set_once() {
    static ONCE: OnceCell<u32> = OnceCell::const_new();
    assert!(ONCE.get().is_none());
    assert_eq!(ONCE.set(5), Ok(()));
    assert_eq!(ONCE.set(6), Err(6));
    assert_eq!(ONCE.get(), Some(&5));
}

/// tokio `set_while_initializing`, adapted (file head): `set` while an initialiser is running
/// gives its value back, and the initialiser's value is the one that stays.
#[test]
fn once_cell_set_while_an_initialiser_runs_gives_the_value_back() {
    let cell = OnceCell::new();
    let gate = Gate::new();
    let g = gate.clone();
    let mut init = hand(cell.get_or_init_async(move || async move {
        g.wait().await;
        5
    }));
    pending(init.poll());
    assert_eq!(cell.set(10), Err(10));
    gate.open();
    assert!(init.woken());
    assert_eq!(*ready(init.poll()), 5);
    assert_eq!(cell.set(10), Err(10));
}

/// A waiter handed the right to initialise (the initialiser before it gave up) but dropped
/// before it polls passes the right on, so the next still wakes and initialises; and once a
/// value is stored every waiter is let through at once (not one by one, which would hold the
/// others behind a waiter nobody polls).
#[test]
fn once_cell_a_waiter_handed_the_right_but_dropped_unpolled_passes_it_on() {
    let cell = OnceCell::new();
    let gate = Gate::new();
    let g = gate.clone();
    let mut first = hand(cell.get_or_init_async(move || async move {
        g.wait().await;
        1
    }));
    pending(first.poll());
    let runs = AtomicUsize::new(0);
    let init = || {
        runs.fetch_add(1, SeqCst);
        async { 2 }
    };
    let mut second = hand(cell.get_or_init_async(init));
    pending(second.poll());
    let mut third = hand(cell.get_or_init_async(init));
    pending(third.poll());
    let mut fourth = hand(cell.get_or_init_async(init));
    pending(fourth.poll());
    drop(first); // the initialiser gives up: the right goes to the next waiter
    assert!(second.woken() && !third.woken());
    drop(second);
    assert!(third.woken(), "the right was lost with the dropped waiter");
    assert!(!fourth.woken());
    assert_eq!(*ready(third.poll()), 2);
    assert_eq!(runs.load(SeqCst), 1, "the initialiser did not run once");
    assert!(
        fourth.woken(),
        "a waiter was left queued after the value was stored"
    );
    assert_eq!(*ready(fourth.poll()), 2);
    assert_eq!(runs.load(SeqCst), 1, "an initialiser ran on a set cell");
    assert_eq!(*cell.get_or_init(|| 3), 2);
    drop(gate);
}

/// Go `TestOncePanic`, adapted (file head): the panic reaches the caller and the cell stays
/// empty, so the next caller's function runs (Go's `Once` would never run it); after that no
/// function runs again. `Lazy`, whose one function is gone with the panic, refuses every
/// later use with a panic that says so.
#[test]
fn go_once_panic_leaves_the_cell_empty_and_lazy_refuses_later_uses() {
    quiet_expected_panics();
    let cell = OnceCell::new();
    let msg = panic_message(|| {
        cell.get_or_init(|| -> u32 { panic!("{EXPECTED} failed") });
    });
    assert!(msg.contains("failed"));
    assert!(cell.get().is_none());
    assert_eq!(*cell.get_or_init(|| 2), 2);
    assert_eq!(
        *cell.get_or_init(|| unreachable!("the function ran twice")),
        2
    );

    let lazy: Lazy<u32, _> = Lazy::new(|| panic!("{EXPECTED} failed"));
    assert!(
        panic_message(|| {
            let _ = *lazy;
        })
        .contains("failed")
    );
    let again = panic_message(|| {
        let _ = *lazy;
    });
    assert!(again.contains("panicked earlier"), "{again}");
}

mod once_cell_on_every_flavour {
    use super::*;

    rt_common! {
        /// tokio `set_and_get`: a task sets a `static` cell; the value is there afterwards.
        #[test]
        fn a_value_set_in_a_task_is_seen_outside() {
            static ONCE: OnceCell<u32> = OnceCell::const_new();
            let rt = rt();
            within(EVENTUALLY, move || {
                assert_eq!(rt.spawn(async { ONCE.set(5) }).join().unwrap(), Ok(()));
                assert_eq!(ONCE.get(), Some(&5));
            });
        }

        /// tokio `get_or_init` (ordered with a gate, file head): the first task's initialiser
        /// runs; the second task's, racing it, never runs, and both see the first's value.
        #[test]
        fn a_racing_task_initialiser_never_runs_and_both_see_the_first_value() {
            static ONCE: OnceCell<u32> = OnceCell::const_new();
            let rt = rt();
            within(EVENTUALLY, move || {
                let gate = Gate::new();
                let inside = flag();
                let (g, i) = (gate.clone(), inside.clone());
                let first = rt.spawn(async move {
                    *ONCE
                        .get_or_init_async(|| async move {
                            i.store(true, SeqCst);
                            g.wait().await;
                            5
                        })
                        .await
                });
                wait_for_flag("the first initialiser runs", &inside);
                let waiting = flag();
                let w = waiting.clone();
                let second = rt.spawn(async move {
                    let init = ONCE.get_or_init_async(|| async { unreachable!("the second ran") });
                    *Flagged::new(init, w).await
                });
                wait_for_flag("the second waits", &waiting);
                gate.open();
                assert_eq!(first.join().unwrap(), 5);
                assert_eq!(second.join().unwrap(), 5);
            });
        }

        /// tokio `get_or_init_panic`: literally, the second task's panicking initialiser never
        /// runs since the first set the cell; and reversed (the panicking one first), its
        /// panic reaches its task, and the waiting task initialises.
        #[test]
        fn a_panicking_task_initialiser_reaches_its_task_and_the_waiter_initialises() {
            quiet_expected_panics();
            let rt = rt();
            within(EVENTUALLY, move || {
                let cell = Arc::new(OnceCell::new());
                let c = cell.clone();
                assert_eq!(rt.spawn(async move { *c.get_or_init_async(|| async { 5 }).await }).join().unwrap(), 5);
                let c = cell.clone();
                let second = rt.spawn(async move {
                    *c.get_or_init_async(|| async { panic!("{EXPECTED} never runs") }).await
                });
                assert_eq!(second.join().unwrap(), 5);

                let cell = Arc::new(OnceCell::new());
                let gate = Gate::new();
                let inside = flag();
                let (c, g, i) = (cell.clone(), gate.clone(), inside.clone());
                let panicker = rt.spawn(async move {
                    *c.get_or_init_async(|| async move {
                        i.store(true, SeqCst);
                        g.wait().await;
                        panic!("{EXPECTED} init fails")
                    })
                    .await
                });
                wait_for_flag("the panicking initialiser runs", &inside);
                let waiting = flag();
                let (c, w) = (cell.clone(), waiting.clone());
                let waiter = rt.spawn(async move {
                    *Flagged::new(c.get_or_init_async(|| async { 7u32 }), w).await
                });
                wait_for_flag("the waiter queues", &waiting);
                gate.open();
                let err = panicker.join().unwrap_err();
                assert!(payload_text(&*err.into_panic()).contains("init fails"));
                assert_eq!(waiter.join().unwrap(), 7);
                assert_eq!(cell.get(), Some(&7));
            });
        }

        /// Go `TestOnce`: ten callers of every kind race on a `OnceCell<()>` whose initialiser
        /// counts; it runs once, and each caller, once its call returns, sees the count at 1.
        #[test]
        fn go_once_runs_the_function_once_for_callers_of_every_kind() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for _ in 0..5 {
                    let once = Arc::new(OnceCell::<()>::new());
                    let count = Arc::new(AtomicUsize::new(0));
                    let joins: Vec<_> = (0..10)
                        .map(|i| {
                            start(
                                &rt,
                                KINDS[i % 3],
                                (once.clone(), count.clone()),
                                |(once, count)| {
                                    once.get_or_init(|| {
                                        count.fetch_add(1, SeqCst);
                                        corio::sleep(MS);
                                    });
                                    count.load(SeqCst)
                                },
                                |(once, count)| async move {
                                    once.get_or_init_async(|| async {
                                        count.fetch_add(1, SeqCst);
                                        corio::time::sleep_async(MS).await;
                                    })
                                    .await;
                                    count.load(SeqCst)
                                },
                            )
                        })
                        .collect();
                    for j in joins {
                        assert_eq!(j.join(), 1, "once failed inside a caller");
                    }
                    assert_eq!(count.load(SeqCst), 1, "once failed outside");
                }
            });
        }

        /// `Lazy` (Go's `TestOnce` again): coroutines and plain threads force one lazy value
        /// at once; the function runs once and all see its value. Then a lazy value whose
        /// computing coroutine is aborted while it computes (its stack unwound, the function
        /// gone with it): every later use panics as after a panicking computation (its
        /// rustdoc, "the function is gone").
        #[test]
        fn lazy_computes_once_for_every_kind_and_is_gone_after_a_cancelled_computation() {
            type Boxed = Lazy<usize, Box<dyn FnOnce() -> usize + Send>>;
            quiet_expected_panics();
            let rt = rt();
            within(EVENTUALLY, move || {
                let runs = Arc::new(AtomicUsize::new(0));
                let r = runs.clone();
                let lazy: Arc<Boxed> = Arc::new(Lazy::new(Box::new(move || {
                    corio::sleep(MS);
                    r.fetch_add(1, SeqCst) + 40
                })));
                let joins: Vec<_> = (0..6)
                    .map(|i| {
                        let kind = if i % 2 == 0 { Kind::Coroutine } else { Kind::Thread };
                        start(&rt, kind, lazy.clone(), |l| **l, |_| async { unreachable!() })
                    })
                    .collect();
                for j in joins {
                    assert_eq!(j.join(), 40);
                }
                assert_eq!(runs.load(SeqCst), 1);
                let l = lazy.clone();
                assert_eq!(rt.spawn(async move { **l }).join().unwrap(), 40, "a task reads it");

                let inside = flag();
                let i = inside.clone();
                let lazy: Arc<Boxed> = Arc::new(Lazy::new(Box::new(move || {
                    i.store(true, SeqCst);
                    corio::sleep(HOUR);
                    0
                })));
                let l = lazy.clone();
                let computing = rt.go(move || **l);
                wait_for_flag("the computation runs", &inside);
                computing.abort();
                assert!(computing.join().unwrap_err().is_cancelled());
                let l = lazy.clone();
                let later = std::thread::spawn(move || **l).join().unwrap_err();
                assert!(payload_text(&*later).contains("panicked earlier"));
            });
        }

        /// A panicking initialiser in each kind of caller: the panic reaches that caller's
        /// joiner, the cell stays empty, and a waiter of another kind queued behind it runs
        /// its own initialiser; everybody after sees that value.
        #[test]
        fn a_panicking_initialiser_in_each_kind_hands_the_init_to_the_next_waiter() {
            quiet_expected_panics();
            let rt = rt();
            within(EVENTUALLY, move || {
                for (i, kind) in KINDS.into_iter().enumerate() {
                    let cell = Arc::new(OnceCell::new());
                    let inside = Arc::new(WaitGroup::new());
                    let go_on = Arc::new(WaitGroup::new());
                    inside.add(1);
                    go_on.add(1);
                    let panicker = start(
                        &rt,
                        kind,
                        (cell.clone(), inside.clone(), go_on.clone()),
                        |(c, inside, go_on)| {
                            *c.get_or_init(|| -> usize {
                                inside.done();
                                go_on.wait();
                                panic!("{EXPECTED} init fails")
                            })
                        },
                        |(c, inside, go_on)| async move {
                            *c.get_or_init_async(|| async move {
                                inside.done();
                                go_on.wait_async().await;
                                panic!("{EXPECTED} init fails")
                            })
                            .await
                        },
                    );
                    inside.wait();
                    let waiting = flag();
                    let next_kind = KINDS[(i + 1) % 3];
                    let waiter = start(
                        &rt,
                        next_kind,
                        (cell.clone(), waiting.clone()),
                        move |(c, w)| *corio::block_on(Flagged::new(c.get_or_init_async(|| async move { 10 + i }), w)),
                        move |(c, w)| async move { *Flagged::new(c.get_or_init_async(|| async move { 10 + i }), w).await },
                    );
                    wait_for_flag("the waiter queues", &waiting);
                    assert!(cell.get().is_none());
                    go_on.done();
                    assert!(panicker.panic_text().contains("init fails"), "{kind:?}");
                    assert_eq!(waiter.join(), 10 + i, "{kind:?} then {next_kind:?}");
                    assert_eq!(*cell.get_or_init(|| 0), 10 + i);
                }
            });
        }

        /// An initialiser cancelled mid-init — a coroutine aborted while suspended inside its
        /// function, a task aborted while its init future waits, a coroutine's and a plain
        /// thread's `timeout` around `get_or_init_async` — gives the right up; of the waiters
        /// queued behind it (one of each kind) exactly one initialises, and all see its value.
        #[test]
        fn an_initialiser_cancelled_mid_init_in_each_kind_lets_exactly_one_waiter_initialise() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for (victim_kind, by_timeout) in [
                    (Kind::Coroutine, false),
                    (Kind::Task, false),
                    (Kind::Coroutine, true),
                    (Kind::Thread, true),
                ] {
                    let cell = Arc::new(OnceCell::new());
                    let runs = Arc::new(AtomicUsize::new(0));
                    let inside = flag();
                    let victim = start(
                        &rt,
                        victim_kind,
                        (cell.clone(), inside.clone()),
                        move |(c, i)| {
                            if by_timeout {
                                let init = c.get_or_init_async(|| async move {
                                    i.store(true, SeqCst);
                                    std::future::pending::<usize>().await
                                });
                                assert!(corio::time::timeout(30 * MS, init).is_err());
                            } else {
                                c.get_or_init(|| {
                                    i.store(true, SeqCst);
                                    corio::sleep(HOUR);
                                    0
                                });
                            }
                        },
                        |(c, i)| async move {
                            c.get_or_init_async(|| async move {
                                i.store(true, SeqCst);
                                std::future::pending::<usize>().await
                            })
                            .await;
                        },
                    );
                    wait_for_flag("the victim initialises", &inside);
                    let waiters: Vec<_> = KINDS
                        .into_iter()
                        .enumerate()
                        .map(|(n, kind)| {
                            let waiting = flag();
                            let j = start(
                                &rt,
                                kind,
                                (cell.clone(), runs.clone(), waiting.clone()),
                                move |(c, r, w)| {
                                    *corio::block_on(Flagged::new(
                                        c.get_or_init_async(|| async move {
                                            r.fetch_add(1, SeqCst);
                                            n + 1
                                        }),
                                        w,
                                    ))
                                },
                                move |(c, r, w)| async move {
                                    *Flagged::new(
                                        c.get_or_init_async(|| async move {
                                            r.fetch_add(1, SeqCst);
                                            n + 1
                                        }),
                                        w,
                                    )
                                    .await
                                },
                            );
                            // Under load the victim's timeout may fire first; the waiter then
                            // initialises at once and never queues.
                            wait_until("a waiter queues (or is done)", || {
                                waiting.load(SeqCst) || j.is_finished()
                            });
                            j
                        })
                        .collect();
                    if by_timeout {
                        victim.join();
                    } else {
                        victim.abort();
                        assert!(matches!(victim.outcome(), Outcome::Cancelled));
                    }
                    let seen: Vec<usize> = waiters.into_iter().map(Joiner::join).collect();
                    assert_eq!(runs.load(SeqCst), 1, "{victim_kind:?}: not exactly one init");
                    let value = *cell.get().unwrap();
                    assert!(seen.iter().all(|&v| v == value), "{seen:?}");
                }
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// oneshot: tokio's `sync_oneshot.rs`
// ---------------------------------------------------------------------------------------------

/// tokio's `AssertSend` lines: both halves are `Send`.
#[test]
fn oneshot_halves_are_send() {
    let (tx, rx) = oneshot::channel::<i32>();
    is_send(&tx);
    is_send(&rx);
}

/// tokio `send_recv`: a pending receiver is woken by the send and gets the value.
#[test]
fn oneshot_send_wakes_the_pending_receiver() {
    let (tx, rx) = oneshot::channel();
    let mut rx = hand(rx);
    pending(rx.poll());
    assert_eq!(tx.send(1), Ok(()));
    assert!(rx.woken());
    assert_eq!(ready(rx.poll()), Ok(1));
}

/// tokio `close_tx`: dropping the sender wakes the pending receiver, which gets the error.
#[test]
fn oneshot_dropping_the_sender_wakes_the_receiver_with_an_error() {
    let (tx, rx) = oneshot::channel::<i32>();
    let mut rx = hand(rx);
    pending(rx.poll());
    drop(tx);
    assert!(rx.woken());
    assert_eq!(ready(rx.poll()), Err(oneshot::RecvError));
}

/// tokio `close_rx`: with the receiver gone, `send` fails and gives the value back; a sender
/// waiting in `poll_closed` is woken by the receiver's drop, sees the channel closed, and its
/// send fails too.
#[test]
fn oneshot_dropping_the_receiver_closes_the_channel_for_the_sender() {
    let (tx, _) = oneshot::channel();
    assert_eq!(tx.send(1), Err(1));

    let (mut tx, rx) = oneshot::channel();
    let (p, w) = probe();
    pending(tx.poll_closed(&mut Context::from_waker(&w)));
    assert!(!tx.is_closed());
    drop(rx);
    assert!(
        p.wakes.load(SeqCst) > 0,
        "the receiver's drop did not wake the sender"
    );
    assert!(tx.is_closed());
    assert!(tx.poll_closed(&mut Context::from_waker(&w)).is_ready());
    assert_eq!(tx.send(1), Err(1));
}

/// tokio `explicit_close_poll`: a value sent before `close` is still received; without one,
/// `close` wakes a sender in `poll_closed`, closes it, and the receiver fails.
#[test]
fn oneshot_close_keeps_a_value_sent_before_and_wakes_a_waiting_sender() {
    let (tx, rx) = oneshot::channel();
    let mut rx = hand(rx);
    tx.send(1).unwrap();
    rx.fut.close();
    assert_eq!(ready(rx.poll()), Ok(1));

    for send_after in [true, false] {
        let (mut tx, rx) = oneshot::channel::<i32>();
        let mut rx = hand(rx);
        let (p, w) = probe();
        pending(tx.poll_closed(&mut Context::from_waker(&w)));
        rx.fut.close();
        assert!(p.wakes.load(SeqCst) > 0, "close did not wake the sender");
        assert!(tx.is_closed());
        assert!(tx.poll_closed(&mut Context::from_waker(&w)).is_ready());
        if send_after {
            assert_eq!(tx.send(1), Err(1));
        } else {
            drop(tx);
        }
        assert_eq!(ready(rx.poll()), Err(oneshot::RecvError));
    }
}

/// tokio `explicit_close_try_recv`: as above, through `try_recv`.
#[test]
fn oneshot_close_then_try_recv_gets_a_value_sent_before_or_closed() {
    let (tx, mut rx) = oneshot::channel();
    tx.send(1).unwrap();
    rx.close();
    assert_eq!(rx.try_recv(), Ok(1));

    let (mut tx, mut rx) = oneshot::channel::<i32>();
    let (p, w) = probe();
    pending(tx.poll_closed(&mut Context::from_waker(&w)));
    rx.close();
    assert!(p.wakes.load(SeqCst) > 0);
    assert!(tx.is_closed());
    assert!(tx.poll_closed(&mut Context::from_waker(&w)).is_ready());
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
}

/// tokio `close_try_recv_poll`, adapted (file head): after `close` with no value, `try_recv`
/// fails and a poll is ready with the error at once (tokio's panics), and stays so.
#[test]
fn oneshot_a_closed_empty_receiver_fails_at_once_and_again() {
    let (_tx, mut rx) = oneshot::channel::<i32>();
    rx.close();
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
    let (_, w) = probe();
    for _ in 0..2 {
        assert_eq!(
            poll_with(Pin::new(&mut rx), &w),
            Poll::Ready(Err(oneshot::RecvError))
        );
    }
}

/// tokio `close_after_recv`, `try_recv_after_completion` and `try_recv_after_completion_await`:
/// once the value is taken (by `try_recv` or a poll), `try_recv` says closed, and `close`
/// afterwards is harmless.
#[test]
fn oneshot_after_the_value_is_taken_try_recv_says_closed() {
    let (tx, mut rx) = oneshot::channel::<i32>();
    tx.send(17).unwrap();
    assert_eq!(rx.try_recv(), Ok(17));
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));
    rx.close();
    assert_eq!(rx.try_recv(), Err(oneshot::TryRecvError::Closed));

    let (tx, rx) = oneshot::channel::<i32>();
    let mut rx = hand(rx);
    tx.send(17).unwrap();
    assert_eq!(ready(rx.poll()), Ok(17));
    assert_eq!(rx.fut.try_recv(), Err(oneshot::TryRecvError::Closed));
}

/// tokio `drops_tasks`: once both halves are gone, neither the receiver's waker nor the
/// sender's (from `poll_closed`) is kept anywhere.
#[test]
fn oneshot_dropping_both_halves_releases_both_wakers() {
    let (mut tx, mut rx) = oneshot::channel::<i32>();
    let (tx_probe, tx_waker) = probe();
    let (rx_probe, rx_waker) = probe();
    pending(tx.poll_closed(&mut Context::from_waker(&tx_waker)));
    pending(poll_with(Pin::new(&mut rx), &rx_waker));
    drop(tx);
    drop(rx);
    drop((tx_waker, rx_waker));
    assert_eq!(Arc::strong_count(&tx_probe), 1, "the sender's waker leaked");
    assert_eq!(
        Arc::strong_count(&rx_probe),
        1,
        "the receiver's waker leaked"
    );
}

/// tokio `receiver_changes_task`: polled with a second waker, the receiver keeps only that one
/// (the first's clone is released) and the send wakes only it.
#[test]
fn oneshot_a_receiver_polled_by_a_new_task_wakes_only_the_new_one() {
    let (tx, mut rx) = oneshot::channel();
    let (p1, w1) = probe();
    let (p2, w2) = probe();
    pending(poll_with(Pin::new(&mut rx), &w1));
    assert_eq!((Arc::strong_count(&p1), Arc::strong_count(&p2)), (3, 2));
    pending(poll_with(Pin::new(&mut rx), &w2));
    assert_eq!((Arc::strong_count(&p1), Arc::strong_count(&p2)), (2, 3));
    tx.send(1).unwrap();
    assert_eq!(p1.wakes.load(SeqCst), 0);
    assert_eq!(p2.wakes.load(SeqCst), 1);
    assert_eq!(poll_with(Pin::new(&mut rx), &w2), Poll::Ready(Ok(1)));
}

/// tokio `sender_changes_task`: the same for a sender in `poll_closed`.
#[test]
fn oneshot_a_sender_polled_by_a_new_task_wakes_only_the_new_one() {
    let (mut tx, rx) = oneshot::channel::<i32>();
    let (p1, w1) = probe();
    let (p2, w2) = probe();
    pending(tx.poll_closed(&mut Context::from_waker(&w1)));
    assert_eq!((Arc::strong_count(&p1), Arc::strong_count(&p2)), (3, 2));
    pending(tx.poll_closed(&mut Context::from_waker(&w2)));
    assert_eq!((Arc::strong_count(&p1), Arc::strong_count(&p2)), (2, 3));
    drop(rx);
    assert_eq!(p1.wakes.load(SeqCst), 0);
    assert_eq!(p2.wakes.load(SeqCst), 1);
    assert!(tx.poll_closed(&mut Context::from_waker(&w2)).is_ready());
}

/// A receiver's waker that panics when the send wakes it: the panic reaches the sender's
/// caller, but the value was delivered first and is received, once.
#[test]
fn oneshot_a_panicking_receiver_waker_loses_no_value() {
    struct Bad;
    impl Wake for Bad {
        fn wake(self: Arc<Self>) {
            panic!("{EXPECTED} the waker panicked");
        }
    }
    quiet_expected_panics();
    let drops = Drops::new();
    let (tx, mut rx) = oneshot::channel();
    pending(poll_with(Pin::new(&mut rx), &Waker::from(Arc::new(Bad))));
    let token = drops.token();
    assert!(panic_message(move || drop(tx.send(token))).contains("waker panicked"));
    assert!(rx.try_recv().is_ok());
    assert_eq!(drops.dropped(), 1);
    assert_eq!(rx.try_recv().err(), Some(oneshot::TryRecvError::Closed));
}

/// `send` racing `close` on two plain threads: either the send comes first, and the value is
/// still received after the close, or it fails and gives the value back; never both, never
/// neither, and every value is dropped once.
#[test]
fn oneshot_send_racing_close_is_either_received_or_given_back() {
    within(EVENTUALLY, || {
        let drops = Drops::new();
        let (mut received, mut refused) = (0, 0);
        for _ in 0..300 {
            let (tx, mut rx) = oneshot::channel();
            let token = drops.token();
            let sender = std::thread::spawn(move || tx.send(token).is_ok());
            rx.close();
            let sent = sender.join().unwrap();
            match rx.try_recv() {
                Ok(v) => {
                    assert!(sent, "a refused value was received");
                    drop(v);
                    received += 1;
                }
                Err(e) => {
                    assert!(!sent, "a sent value was lost: {e:?}");
                    refused += 1;
                }
            }
            assert_eq!(drops.made(), drops.dropped());
        }
        assert_eq!(received + refused, 300);
    });
}

mod oneshot_on_every_flavour {
    use super::*;

    rt_common! {
        /// tokio `async_send_recv`, from each kind of receiver: a value sent before the
        /// receive is there at once.
        #[test]
        fn a_value_sent_before_the_receive_is_there_in_every_kind() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for kind in KINDS {
                    let (tx, rx) = oneshot::channel();
                    tx.send(1).unwrap();
                    let got = start(&rt, kind, rx, |rx| rx.recv(), |rx| rx);
                    assert_eq!(got.join(), Ok(1), "{kind:?}");
                }
            });
        }

        /// tokio `async_rx_closed`, from each kind of sender: a receiver dropped in a task
        /// ends the sender's `closed` (blocking-style in a coroutine and on a thread,
        /// `closed_async` in a task).
        #[test]
        fn closed_returns_once_a_task_drops_the_receiver_in_every_kind() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for kind in KINDS {
                    let (tx, rx) = oneshot::channel::<()>();
                    let sender = start(
                        &rt,
                        kind,
                        tx,
                        |mut tx| {
                            tx.closed();
                            tx.send(())
                        },
                        |mut tx| async move {
                            tx.closed_async().await;
                            tx.send(())
                        },
                    );
                    rt.spawn(async move { drop(rx) }).join().unwrap();
                    assert_eq!(sender.join(), Err(()), "{kind:?}");
                }
            });
        }

        /// A value sent from each kind reaches a receiver waiting in each kind (nine pairs);
        /// the receiver is queued before the send, so each is a wake-up across kinds.
        #[test]
        fn a_value_sent_from_any_kind_wakes_a_receiver_of_any_kind() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for sender_kind in KINDS {
                    for receiver_kind in KINDS {
                        let (tx, rx) = oneshot::channel::<String>();
                        let waiting = flag();
                        let receiver = start(
                            &rt,
                            receiver_kind,
                            (rx, waiting.clone()),
                            |(rx, w)| corio::block_on(Flagged::new(rx, w)),
                            |(rx, w)| Flagged::new(rx, w),
                        );
                        wait_for_flag("the receiver waits", &waiting);
                        let msg = format!("{sender_kind:?} to {receiver_kind:?}");
                        start(
                            &rt,
                            sender_kind,
                            (tx, msg.clone()),
                            |(tx, m)| tx.send(m).unwrap(),
                            |(tx, m)| async move { tx.send(m).unwrap() },
                        )
                        .join();
                        assert_eq!(receiver.join().as_deref(), Ok(msg.as_str()));
                    }
                }
            });
        }

        /// The sender dropped unsent from each kind wakes a receiver waiting in each kind,
        /// which gets `RecvError`.
        #[test]
        fn the_sender_dropped_from_any_kind_wakes_a_receiver_of_any_kind() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for dropper_kind in KINDS {
                    for receiver_kind in KINDS {
                        let (tx, rx) = oneshot::channel::<u32>();
                        let waiting = flag();
                        let receiver = start(
                            &rt,
                            receiver_kind,
                            (rx, waiting.clone()),
                            |(rx, w)| corio::block_on(Flagged::new(rx, w)),
                            |(rx, w)| Flagged::new(rx, w),
                        );
                        wait_for_flag("the receiver waits", &waiting);
                        start(&rt, dropper_kind, tx, drop, |tx| async move { drop(tx) }).join();
                        assert_eq!(
                            receiver.join(),
                            Err(oneshot::RecvError),
                            "dropped in a {dropper_kind:?}, received in a {receiver_kind:?}"
                        );
                    }
                }
            });
        }

        /// The receiver dropped from each kind wakes a sender waiting in `closed` in each kind,
        /// whose send then fails and gives the value back.
        #[test]
        fn the_receiver_dropped_from_any_kind_wakes_a_sender_in_closed_of_any_kind() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for dropper_kind in KINDS {
                    for sender_kind in KINDS {
                        let (tx, rx) = oneshot::channel::<u32>();
                        let waiting = flag();
                        let sender = start(
                            &rt,
                            sender_kind,
                            (tx, waiting.clone()),
                            |(mut tx, w)| {
                                corio::block_on(Flagged::new(tx.closed_async(), w));
                                tx.send(5)
                            },
                            |(mut tx, w)| async move {
                                Flagged::new(tx.closed_async(), w).await;
                                tx.send(5)
                            },
                        );
                        wait_for_flag("the sender waits", &waiting);
                        start(&rt, dropper_kind, rx, drop, |rx| async move { drop(rx) }).join();
                        assert_eq!(sender.join(), Err(5), "{dropper_kind:?} / {sender_kind:?}");
                    }
                }
            });
        }

        /// A sender lost with its owner while the receiver waits: a coroutine, a task and a
        /// plain thread that panic, a coroutine aborted while suspended in `sleep`, a task
        /// aborted while pending. The unwind or drop drops the sender, and the receiver (a
        /// kind different from the owner's) gets `RecvError`.
        #[test]
        fn a_sender_lost_to_a_panic_or_an_abort_ends_the_receive_with_an_error() {
            quiet_expected_panics();
            let rt = rt();
            within(EVENTUALLY, move || {
                let cases = [
                    (Kind::Coroutine, false),
                    (Kind::Task, false),
                    (Kind::Thread, false),
                    (Kind::Coroutine, true),
                    (Kind::Task, true),
                ];
                for (i, (owner_kind, abort)) in cases.into_iter().enumerate() {
                    let drops = Drops::new();
                    let (tx, rx) = oneshot::channel::<DropToken>();
                    let waiting = flag();
                    let receiver = start(
                        &rt,
                        KINDS[(i + 1) % 3],
                        (rx, waiting.clone()),
                        |(rx, w)| corio::block_on(Flagged::new(rx, w)).is_err(),
                        |(rx, w)| async move { Flagged::new(rx, w).await.is_err() },
                    );
                    wait_for_flag("the receiver waits", &waiting);
                    let go_on = Arc::new(WaitGroup::new());
                    go_on.add(1);
                    let token = drops.token();
                    let owner = start(
                        &rt,
                        owner_kind,
                        (tx, go_on.clone(), token),
                        move |(tx, g, token)| {
                            let _keep = (tx, token);
                            if abort {
                                g.done();
                                corio::sleep(HOUR);
                            }
                            g.wait();
                            panic!("{EXPECTED} owner fails")
                        },
                        move |(tx, g, token)| async move {
                            let _keep = (tx, token);
                            if abort {
                                g.done();
                                std::future::pending::<()>().await;
                            }
                            g.wait_async().await;
                            panic!("{EXPECTED} owner fails")
                        },
                    );
                    if abort {
                        go_on.wait();
                        assert!(still_running(&receiver));
                        owner.abort();
                        assert!(matches!(owner.outcome(), Outcome::Cancelled));
                    } else {
                        assert!(still_running(&receiver));
                        go_on.done();
                        assert!(owner.panic_text().contains("owner fails"));
                    }
                    assert!(receiver.join(), "{owner_kind:?} (abort {abort})");
                    assert_eq!(drops.dropped(), 1, "what the owner held was not dropped");
                }
            });
        }

        /// A receive cut short by a `timeout` around `&mut rx` (the receiver kept) leaves the
        /// channel open: the sender is not closed, and a later value is received, in every
        /// kind.
        #[test]
        fn a_receive_timed_out_through_a_borrow_keeps_the_channel_open() {
            let rt = rt();
            within(EVENTUALLY, move || {
                for kind in KINDS {
                    let (tx, rx) = oneshot::channel::<u32>();
                    let timed_out = flag();
                    let receiver = start(
                        &rt,
                        kind,
                        (rx, timed_out.clone()),
                        |(mut rx, t)| {
                            assert!(corio::time::timeout(2 * MS, &mut rx).is_err());
                            t.store(true, SeqCst);
                            rx.recv()
                        },
                        |(mut rx, t)| async move {
                            assert!(corio::time::timeout_async(2 * MS, &mut rx).await.is_err());
                            t.store(true, SeqCst);
                            rx.await
                        },
                    );
                    wait_for_flag("the first receive times out", &timed_out);
                    assert!(!tx.is_closed(), "{kind:?}: the timed-out receive closed the channel");
                    tx.send(9).unwrap();
                    assert_eq!(receiver.join(), Ok(9), "{kind:?}");
                }
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Runtime shutdown with waiters queued
// ---------------------------------------------------------------------------------------------

mod shutdown_on_every_flavour {
    use super::*;

    rt_common! {
           /// Dropping the runtime cancels what waits in it — suspended coroutines are unwound,
           /// pending tasks dropped — and each cancelled waiter unlinks itself and passes on what
           /// it was handed: coroutines and tasks queued for an `RwLock` (once, also just handed
           /// it by a release right before the drop), a coroutine suspended with a read guard,
           /// parties waiting at a `Barrier`, an initialiser and a waiter of a `OnceCell`, both
           /// halves of a `oneshot`. Afterwards, on plain threads, the lock is free, the barrier
           /// counts no dead party, the cell takes a value, and the oneshot halves that are left
           /// see the others gone.
           #[test]
           fn dropping_the_runtime_cancels_its_waiters_and_they_pass_everything_on() {
               within(EVENTUALLY, || {
                   for handed_before_drop in [false, true] {
                       let rt = rt();
                       let lock = Arc::new(RwLock::new(0));
                       let barrier = Arc::new(Barrier::new(3));
                       let cell = Arc::new(OnceCell::<u32>::new());
                       let (tx, rx) = oneshot::channel::<u32>();
                       let (tx2, rx2) = oneshot::channel::<u32>();
                       let reader = lock.try_read().unwrap();
                       let mut flags = Vec::new();
                       let mut joins = Vec::new();
                       for kind in [Kind::Coroutine, Kind::Task] {
                           let f = flag();
                           flags.push(f.clone());
                           joins.push(start(
                               &rt,
                               kind,
                               (lock.clone(), f),
                               |(l, f)| *corio::block_on(Flagged::new(l.write_async(), f)) += 1,
                               |(l, f)| async move { *Flagged::new(l.write_async(), f).await += 1 },
                           ));
                           let f = flag();
                           flags.push(f.clone());
                           joins.push(start(
                               &rt,
                               kind,
                               (barrier.clone(), f),
                               |(b, f)| {
    let _ = corio::block_on(Flagged::new(b.wait_async(), f));
    },
                               |(b, f)| async move {
    let _ = Flagged::new(b.wait_async(), f).await;
    },
                           ));
                       }
                       let f = flag();
                       flags.push(f.clone());
                       let c = cell.clone();
                       joins.push(Joiner::Corio(rt.spawn(async move {
                           c.get_or_init_async(|| async move {
                               f.store(true, SeqCst);
                               std::future::pending::<u32>().await
                           })
                           .await;
                       })));
                       wait_for_flag("the initialiser runs", flags.last().unwrap());
                       let f = flag();
                       flags.push(f.clone());
                       let c = cell.clone();
                       joins.push(Joiner::Corio(rt.go(move || {
                           corio::block_on(Flagged::new(c.get_or_init_async(|| async { 1 }), f));
                       })));
                       let f = flag();
                       flags.push(f.clone());
                       joins.push(Joiner::Corio(rt.go(move || {
                           let _ = corio::block_on(Flagged::new(rx, f));
                       })));
                       let f = flag();
                       flags.push(f.clone());
                       joins.push(Joiner::Corio(rt.spawn(async move {
                           let mut tx2 = tx2;
                           Flagged::new(tx2.closed_async(), f).await;
                       })));
                       for f in &flags {
                           wait_for_flag("every waiter waits", f);
                       }
                       if handed_before_drop {
                           drop(reader);
                           drop(rt);
                       } else {
                           drop(rt);
                           drop(reader);
                       }
                       for j in joins {
                           match j.outcome() {
                               Outcome::Cancelled | Outcome::Done(()) => {}
                               Outcome::Panicked(p) => resume_unwind(p),
                           }
                       }
                       let g = lock.try_write().expect("a cancelled waiter kept its permits");
                       assert!(lock.try_read().is_none());
                       assert!(*g <= 2);
                       drop(g);
                       let mut a = hand(barrier.wait_async());
                       pending(a.poll());
                       let mut b = hand(barrier.wait_async());
                       pending(b.poll());
                       assert!(!a.woken(), "a cancelled party was still counted");
                       assert!(barrier.wait().is_leader());
                       assert!(!ready(a.poll()).is_leader() && !ready(b.poll()).is_leader());
                       assert_eq!(cell.set(3), Ok(()), "a cancelled initialiser kept the right");
                       assert!(tx.is_closed(), "the unwound receiver did not close the channel");
                       assert_eq!(tx.send(4), Err(4));
                       let mut rx2 = rx2;
                       assert_eq!(rx2.try_recv(), Err(oneshot::TryRecvError::Closed));
                   }
               });
           }

           /// A plain thread waits for the write lock that a coroutine holds across a `sleep`;
           /// dropping the coroutine's runtime unwinds it, and its guard's release wakes the
           /// thread.
           #[test]
           fn a_guard_held_by_a_coroutine_is_released_when_its_runtime_is_dropped() {
               within(EVENTUALLY, || {
                   let rt = rt();
                   let lock = Arc::new(RwLock::new(0));
                   let holding = Arc::new(WaitGroup::new());
                   holding.add(1);
                   let (l, h) = (lock.clone(), holding.clone());
                   let holder = rt.go(move || {
                       let mut g = l.write();
                       *g = 1;
                       h.done();
                       corio::sleep(HOUR);
                   });
                   holding.wait();
                   let waiting = flag();
                   let (l, f) = (lock.clone(), waiting.clone());
                   let thread = std::thread::spawn(move || {
                       *corio::block_on(Flagged::new(l.write_async(), f)) += 1;
                   });
                   wait_for_flag("the thread waits", &waiting);
                   drop(rt);
                   assert!(holder.join().unwrap_err().is_cancelled());
                   thread.join().unwrap();
                   assert_eq!(*lock.try_read().unwrap(), 2);
               });
           }
       }
}

// ---------------------------------------------------------------------------------------------
// Handed over, then aborted before it could run
// ---------------------------------------------------------------------------------------------

/// Yields the calling coroutine until `flag` is up (on one worker, the others run meanwhile).
fn yield_until(flag: &AtomicBool) {
    while !flag.load(SeqCst) {
        corio::yield_now();
    }
}

/// [`start`] on the current runtime, for a coroutine or a task.
fn spawn_here<X, T, Fut>(
    kind: Kind,
    x: X,
    blocking: impl FnOnce(X) -> T + Send + 'static,
    asynch: impl FnOnce(X) -> Fut + Send + 'static,
) -> corio::JoinHandle<T>
where
    X: Send + 'static,
    T: Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    match kind {
        Kind::Coroutine => corio::go(move || blocking(x)),
        Kind::Task => corio::spawn(async move { asynch(x).await }),
        Kind::Thread => unreachable!("only coroutines and tasks can be aborted"),
    }
}

/// Cancellation exactly in the hand-off, made deterministic on one worker: the main coroutine
/// hands a queued waiter (a coroutine, then a task) what it waits for — the write lock, the
/// right to initialise, the opening of its barrier round, its oneshot value — and aborts it
/// before it suspends again, so the worker never runs the waiter in between. The cancelled
/// waiter never observes the hand-off; what it was handed must go on to the next waiter (a
/// reader, a second initialiser, the next round) or, for the oneshot, be dropped once with
/// the receiver.
#[test]
fn a_waiter_handed_its_turn_and_aborted_before_it_runs_passes_the_turn_on() {
    quiet_expected_panics();
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        rt.run(|| {
            for kind in [Kind::Coroutine, Kind::Task] {
                // RwLock: the writer is handed the lock by the last reader's release.
                let lock = Arc::new(RwLock::new(0));
                let guard = lock.read();
                let queued = flag();
                let writer = spawn_here(
                    kind,
                    (lock.clone(), queued.clone()),
                    |(l, f)| *corio::block_on(Flagged::new(l.write_async(), f)) += 1,
                    |(l, f)| async move { *Flagged::new(l.write_async(), f).await += 1 },
                );
                yield_until(&queued);
                let (l, behind) = (lock.clone(), flag());
                let f = behind.clone();
                let reader = corio::spawn(async move { *Flagged::new(l.read_async(), f).await });
                yield_until(&behind);
                drop(guard);
                writer.abort();
                assert!(writer.join().unwrap_err().is_cancelled(), "{kind:?}");
                assert_eq!(
                    reader.join().unwrap(),
                    0,
                    "{kind:?}: the lock was not passed on"
                );
                assert!(lock.try_write().is_some(), "{kind:?}: a permit was lost");

                // OnceCell: the waiter is handed the right to initialise by the unwind of this
                // coroutine's failing initialiser.
                let cell = Arc::new(OnceCell::new());
                let mut spawned = None;
                let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    cell.get_or_init(|| -> u32 {
                        let queued = flag();
                        let victim = spawn_here(
                            kind,
                            (cell.clone(), queued.clone()),
                            |(c, f)| {
                                *corio::block_on(Flagged::new(
                                    c.get_or_init_async(|| async { 1 }),
                                    f,
                                ))
                            },
                            |(c, f)| async move {
                                *Flagged::new(c.get_or_init_async(|| async { 1 }), f).await
                            },
                        );
                        yield_until(&queued);
                        let (c, behind) = (cell.clone(), flag());
                        let f = behind.clone();
                        let last = corio::spawn(async move {
                            *Flagged::new(c.get_or_init_async(|| async { 2 }), f).await
                        });
                        yield_until(&behind);
                        spawned = Some((victim, last));
                        panic!("{EXPECTED} init fails")
                    });
                }));
                assert!(failed.is_err());
                let (victim, last) = spawned.unwrap();
                victim.abort();
                assert!(victim.join().unwrap_err().is_cancelled(), "{kind:?}");
                assert_eq!(
                    last.join().unwrap(),
                    2,
                    "{kind:?}: the right was not passed on"
                );
                assert_eq!(cell.get(), Some(&2));

                // Barrier: the victim's round opens on this coroutine's arrival.
                let b = Arc::new(Barrier::new(2));
                let queued = flag();
                let victim = spawn_here(
                    kind,
                    (b.clone(), queued.clone()),
                    |(b, f)| corio::block_on(Flagged::new(b.wait_async(), f)).is_leader(),
                    |(b, f)| async move { Flagged::new(b.wait_async(), f).await.is_leader() },
                );
                yield_until(&queued);
                assert!(b.wait().is_leader(), "{kind:?}");
                victim.abort();
                assert!(victim.join().unwrap_err().is_cancelled(), "{kind:?}");
                let (b1, queued) = (b.clone(), flag());
                let f = queued.clone();
                let next = corio::go(move || {
                    corio::block_on(Flagged::new(b1.wait_async(), f)).is_leader()
                });
                yield_until(&queued);
                corio::yield_now();
                assert!(
                    !next.is_finished(),
                    "{kind:?}: the next round opened with one party"
                );
                assert!(b.wait().is_leader());
                assert!(!next.join().unwrap());

                // oneshot: the receiver is handed the value, then aborted.
                let drops = Drops::new();
                let (tx, rx) = oneshot::channel::<DropToken>();
                let queued = flag();
                let receiver = spawn_here(
                    kind,
                    (rx, queued.clone()),
                    |(rx, f)| corio::block_on(Flagged::new(rx, f)).is_ok(),
                    |(rx, f)| async move { Flagged::new(rx, f).await.is_ok() },
                );
                yield_until(&queued);
                assert!(tx.send(drops.token()).is_ok());
                receiver.abort();
                assert!(receiver.join().unwrap_err().is_cancelled(), "{kind:?}");
                assert_eq!(
                    drops.dropped(),
                    1,
                    "{kind:?}: the handed value was not dropped once"
                );
            }
        });
    });
}

/// A value crosses between two runtimes: a coroutine of one sends to a task of the other,
/// which answers to a coroutine of the first; each wake-up comes from the other runtime's
/// worker.
#[test]
fn oneshot_values_cross_between_two_runtimes() {
    let (a, b) = (support::rt(1), support::rt(2));
    within(EVENTUALLY, move || {
        for _ in 0..20 {
            let (to_b, in_b) = oneshot::channel::<u32>();
            let (to_a, in_a) = oneshot::channel::<u32>();
            let task = b.spawn(async move {
                let v = in_b.await.unwrap();
                to_a.send(v * 2).unwrap();
            });
            let answer = a.go(move || in_a.recv());
            let sender = a.go(move || to_b.send(21).unwrap());
            sender.join().unwrap();
            assert_eq!(answer.join().unwrap(), Ok(42));
            task.join().unwrap();
        }
    });
}

// =============================================================================================
// A waker whose clone is user code (found by the crossbeam select port's reviewer: the sync
// primitives stored `cx.waker().clone()` under their wait-list locks)
// =============================================================================================

thread_local! {
    /// What [`hooked_waker`]'s clone runs on this thread.
    static ON_CLONE: std::cell::RefCell<Option<Box<dyn Fn()>>> =
        const { std::cell::RefCell::new(None) };
}

/// A waker of "another executor" whose `clone` runs this thread's [`ON_CLONE`] once (the hook
/// is taken), and whose wake and drop do nothing.
fn hooked_waker() -> Waker {
    fn clone(_: *const ()) -> std::task::RawWaker {
        if let Some(hook) = ON_CLONE.with(|h| h.borrow_mut().take()) {
            hook();
        }
        std::task::RawWaker::new(std::ptr::null(), &VTABLE)
    }
    fn noop(_: *const ()) {}
    static VTABLE: std::task::RawWakerVTable =
        std::task::RawWakerVTable::new(clone, noop, noop, noop);
    // SAFETY: the vtable never reads the data pointer (null), `clone` returns a waker with the
    // same vtable, and wake and drop do nothing: `RawWaker`'s contract holds.
    unsafe { Waker::from_raw(std::task::RawWaker::new(std::ptr::null(), &VTABLE)) }
}

/// Polls `fut` once with [`hooked_waker`], `hook` set for its clone.
fn poll_with_clone_hook<F: Future>(fut: Pin<&mut F>, hook: impl Fn() + 'static) -> Poll<F::Output> {
    ON_CLONE.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
    let waker = hooked_waker();
    let poll = fut.poll(&mut Context::from_waker(&waker));
    ON_CLONE.with(|h| *h.borrow_mut() = None);
    poll
}

/// corio (reviewer): a waiter's poll stores a clone of its waker in the primitive's wait list,
/// under the list's lock; the clone of another executor's waker is user code, and one that
/// uses the same primitive (here: frees what the waiter waits for, which takes that lock)
/// deadlocked on the `std` mutex. It is now made before the lock (relayed).
#[test]
fn a_waker_whose_clone_uses_the_primitive_does_not_deadlock_its_waiter() {
    within(EVENTUALLY, || {
        let notify = Arc::new(corio::sync::Notify::new());
        let n = notify.clone();
        let mut notified = Box::pin(notify.notified_async());
        let _ = poll_with_clone_hook(notified.as_mut(), move || n.notify_one());

        let sem = Arc::new(corio::sync::Semaphore::new(0));
        let s = sem.clone();
        let mut acquire = Box::pin(sem.acquire_async());
        let _ = poll_with_clone_hook(acquire.as_mut(), move || s.add_permits(1));

        let mutex: &'static corio::sync::Mutex<u8> =
            Box::leak(Box::new(corio::sync::Mutex::new(0)));
        let guard = Arc::new(std::sync::Mutex::new(Some(mutex.try_lock().unwrap())));
        let g = guard.clone();
        let mut lock = Box::pin(mutex.lock_async());
        let _ = poll_with_clone_hook(lock.as_mut(), move || drop(g.lock().unwrap().take()));
        drop(lock);
        assert!(guard.lock().unwrap().is_none(), "the hook ran");

        let (tx, rx) = oneshot::channel::<u8>();
        let tx = Arc::new(std::sync::Mutex::new(Some(tx)));
        let t = tx.clone();
        let mut rx = Box::pin(rx);
        let polled = poll_with_clone_hook(rx.as_mut(), move || {
            let _ = t.lock().unwrap().take().unwrap().send(5);
        });
        assert!(matches!(polled, Poll::Ready(Ok(5)) | Poll::Pending));
    });
}
