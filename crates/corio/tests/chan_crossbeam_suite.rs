//! crossbeam-channel 0.5.17's channel tests (`crossbeam-channel-0.5.17/tests/`), ported to
//! corio's channels and written anew: `array.rs` (`bounded(n)`), `zero.rs` (`bounded(0)`, the
//! rendezvous channel), `list.rs` (`unbounded()`), `iter.rs`, `same_channel.rs`, `never.rs` (a
//! channel nobody sends on) and `after.rs` (`select!`'s `after` arm), and the parts of
//! `mpsc.rs` (std's `mpsc` suite as crossbeam keeps it) that check something those do not.
//! Each test names its originals in a `///` line. (`select.rs`, `select_macro.rs`, `golang.rs`,
//! `ready.rs`, `tick.rs` and `thread_locals.rs` are other ports' business.)
//!
//! crossbeam's two scoped threads become two stackful coroutines (`corio::go`), and again a
//! plain thread against a coroutine each way (`PAIRS`); each body runs on one worker and on
//! two (`rt_common!`), under the `within` watchdog. Where crossbeam's three flavour files hold
//! the same test, one body runs over every capacity (`CAPS`: 0, 1, 3 and unbounded, plus the
//! original's own capacity where it matters). A sample runs every kind of waiter on one
//! channel: coroutines, async tasks (`send_async`, `recv_async`, the `Stream`,
//! `select_async!`), plain threads, and threads polling the futures with an executor that
//! knows nothing of corio. Sizes are crossbeam's divided by about ten (spsc 3,000, mpmc
//! 4 × 1,000, oneshots 300); crossbeam's 0.5–1.5 s sleeps that order two threads' steps are
//! signals over a second channel here, and the rest a few milliseconds. Durations are checked
//! from below only.
//!
//! Added, adversarial: drop counts by value id (`Ledger`: nothing leaked, nothing dropped
//! twice) through random sends and receives of every kind, a close in mid-flight and receivers
//! leaving; senders and receivers aborted mid-hand-off; a runtime dropped with waiters
//! blocked; timeouts (of sends, receives and `select!` `after` arms, from every kind of waiter)
//! racing hand-offs; zero timeouts against a waiting peer; capacity 1 and `usize::MAX - 1`;
//! zero-sized values with and without a `Drop`; `len()` watched from a thread under
//! concurrency; racing `close()`s; a value whose `Drop` uses its own channel; a cancelled
//! coroutine whose destructor waits in a send.
//!
//! Deliberate, documented differences the ports follow (each test says which):
//! - A send arm's value is evaluated once, before the select (select!'s rustdoc); crossbeam
//!   evaluates it only if the arm is chosen (`recv_in_send`: `send(s, panic!())` beside a
//!   ready `default` panics in corio, so the port checks the evaluation and the unsent value's
//!   drop instead).
//! - A buffered value whose drop panics: corio drops every buffered value (after its lock)
//!   and the panic reaches whoever dropped the last receiver; crossbeam stops at the panicking
//!   one and leaks the rest (`panic_on_drop`).
//! - `after(d)` is a timer arm, not a channel: `default` wins over `after(0)` ("nothing can
//!   happen now", as in Go, where `time.After(0)`'s channel is not ready yet), where
//!   crossbeam's `after(0)` channel is ready at once (`stress_default`); one `after` per
//!   select.
//! - corio has no `never()`: a channel nobody sends on is an ordinary channel, so two of them
//!   are two channels (`never_same_channel`).
//! - A rendezvous channel's `len()` is 0 only while nothing is cancelled mid-hand-off: a
//!   receive cancelled after it was handed a value gives it back to the buffer (protocol H6,
//!   `chan` module docs), so `len()` can briefly exceed `capacity()`. The `len` ports assert
//!   crossbeam's bounds where nothing is cancelled; with timeouts racing, the bound is the
//!   capacity plus the receives being cancelled.
//! - corio's channels also end by an explicit `close()` from either end (Go), so every
//!   disconnection test runs three ways: the other end dropped (crossbeam), the other end
//!   closed, and a clone of the waiter's own end closed.
//! - On a rendezvous channel two zero timeouts never meet (neither waits); a zero timeout
//!   completes against a peer that waits, as crossbeam's zero flavour.
//!
//! Not ported (one line each):
//! - same_channel.rs `after_same_channel`, `tick_same_channel`: no after or tick channels.
//! - after.rs `capacity`, `len_empty_full`, `try_recv`, `recv_timeout`: `after` is a select
//!   arm, not a channel with a length or a receive of its own.
//! - after.rs `recv_two`: two selects cannot share one `after` arm (each has its own timer).
//! - after.rs `ready`: no `Select::ready` (nor a select over a run-time list of channels).
//! - after.rs `fairness`, `fairness_duplicates`: one `after` arm per select, so there are no
//!   two timers to be fair between.
//! - mpsc.rs `smoke`, `smoke_shared`, `smoke_threads`, `oneshot_single_thread_close_port_first`,
//!   `oneshot_single_thread_close_chan_first`, `oneshot_single_thread_send_then_recv`,
//!   `oneshot_single_thread_try_send_open`, `oneshot_single_thread_try_recv_open`,
//!   `oneshot_single_thread_try_recv_closed`, `send1`, `sync2` (the simplest hand-offs and
//!   drops), `stress` (= crossbeam's `spsc`), `try_recv_states` (= crossbeam's `try_recv`),
//!   `test_recv_into_iter_*` (= iter.rs), and `sync_channel_tests`' repeats of
//!   `channel_tests` with a bounded channel: every port here runs over every capacity.
//!
//! BUG found and fixed (the test failed first):
//! - `a_64_kib_value_goes_through_a_channel_between_coroutines_with_the_default_stack` (40 KiB
//!   then): a blocking-style `send`/`recv` kept about eight copies of the value in one stack
//!   frame in a release build, so a 40 KiB value overflowed the default 256 KiB coroutine
//!   stack, which aborted the process. A value now moves once into an operation and once out of it
//!   (`chan`'s rustdoc, "Large values"; docs/chan.md).

#[macro_use]
mod support;

use std::any::Any;
use std::collections::HashSet;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use corio::chan::{
    self, Receiver, RecvError, RecvTimeoutError, SendError, SendTimeoutError, Sender, TryRecvError,
    TrySendError,
};
use futures::StreamExt;
use support::{
    Drops, EVENTUALLY, EXPECTED, Rng, foreign_block_on, payload_text, quiet_expected_panics, rt,
    within,
};

const MS: Duration = Duration::from_millis(1);

/// A wait that a passing test never sees end: a value that must come comes well before it
/// (and the `within` watchdog, at [`EVENTUALLY`], reports a hang first).
const LONG: Duration = Duration::from_secs(20);

/// An `after` arm that must never fire.
const HOUR: Duration = Duration::from_secs(3600);

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// crossbeam's three flavours as corio capacities: `bounded(0)` (zero.rs), `bounded(n)`
/// (array.rs) and `unbounded()` (list.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cap {
    Zero,
    Bounded(usize),
    Unbounded,
}

impl Cap {
    fn pair<T>(self) -> (Sender<T>, Receiver<T>) {
        match self {
            Cap::Zero => chan::bounded(0),
            Cap::Bounded(n) => chan::bounded(n),
            Cap::Unbounded => chan::unbounded(),
        }
    }

    /// How many values sends leave in the channel while nobody receives.
    fn room(self) -> usize {
        match self {
            Cap::Zero => 0,
            Cap::Bounded(n) => n,
            Cap::Unbounded => usize::MAX,
        }
    }

    /// What `capacity()` says.
    fn capacity(self) -> Option<usize> {
        match self {
            Cap::Zero => Some(0),
            Cap::Bounded(n) => Some(n),
            Cap::Unbounded => None,
        }
    }
}

/// Every flavour, with capacity 1 (the smallest buffer) and a small one beside it.
const CAPS: [Cap; 4] = [Cap::Zero, Cap::Bounded(1), Cap::Bounded(3), Cap::Unbounded];

/// Where a blocking-style body runs: a stackful coroutine (`corio::go`) or a plain thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum On {
    Go,
    Thread,
}

/// crossbeam's two threads: two coroutines, then a plain thread on either side of one.
const PAIRS: [(On, On); 3] = [(On::Go, On::Go), (On::Thread, On::Go), (On::Go, On::Thread)];

/// A started body (coroutine, async task or thread), joined by a coroutine or a thread
/// without blocking a worker: a thread's result comes back through a channel, since a
/// coroutine that joined it with `std::thread::JoinHandle::join` would block its worker (and
/// on one worker, everything the thread waits for).
enum Started<T> {
    Task(corio::JoinHandle<T>),
    Thread(Receiver<std::thread::Result<T>>),
}

fn start<T: Send + 'static>(on: On, f: impl FnOnce() -> T + Send + 'static) -> Started<T> {
    match on {
        On::Go => Started::Task(corio::go(f)),
        On::Thread => {
            let (tx, rx) = chan::bounded(1);
            std::thread::spawn(move || {
                let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
            });
            Started::Thread(rx)
        }
    }
}

fn start_task<T: Send + 'static>(fut: impl Future<Output = T> + Send + 'static) -> Started<T> {
    Started::Task(corio::spawn(fut))
}

impl<T> Started<T> {
    #[track_caller]
    fn join(self) -> T {
        match self {
            Started::Task(h) => match h.join() {
                Ok(v) => v,
                Err(e) if e.is_panic() => resume_unwind(e.into_panic()),
                Err(e) => panic!("a task was cancelled: {e:?}"),
            },
            Started::Thread(rx) => match rx.recv() {
                Ok(Ok(v)) => v,
                Ok(Err(payload)) => resume_unwind(payload),
                Err(RecvError) => panic!("a thread ended without a result"),
            },
        }
    }
}

/// Runs `a` and `b` where `on` says and joins both (crossbeam's `scope` of two threads).
fn both<A: Send + 'static, B: Send + 'static>(
    on: (On, On),
    a: impl FnOnce() -> A + Send + 'static,
    b: impl FnOnce() -> B + Send + 'static,
) -> (A, B) {
    let a = start(on.0, a);
    let b = start(on.1, b);
    (a.join(), b.join())
}

/// A one-way "it happened" signal between two bodies (never full: the signaller never waits).
fn signal() -> (Sender<()>, Receiver<()>) {
    chan::unbounded()
}

/// Calls `f` until it returns `Some`, sleeping a little in between (works in a coroutine and
/// on a thread); fails after [`LONG`].
#[track_caller]
fn poll_until<T>(mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < LONG, "poll_until: never happened");
        corio::sleep(Duration::from_micros(200));
    }
}

/// Lets others run in a spinning loop: a coroutine yields, a thread yields its CPU.
fn pause() {
    if corio::try_current().is_some() {
        corio::yield_now();
    } else {
        std::thread::yield_now();
    }
}

/// A channel that nobody ever sends on (crossbeam's `never()`): its sender is kept alive and
/// unused, so a receive on it never completes and never fails.
fn never<T>() -> (Sender<T>, Receiver<T>) {
    chan::bounded(0)
}

/// Records the drop of each value it makes by id, so that a value dropped twice, or never,
/// shows up by name (a count alone hides one of each).
struct Ledger {
    drops: Vec<AtomicUsize>,
}

impl Ledger {
    fn new(n: usize) -> Arc<Ledger> {
        Arc::new(Ledger {
            drops: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    fn make(self: &Arc<Ledger>, id: usize) -> Tracked {
        Tracked {
            id,
            ledger: self.clone(),
        }
    }

    fn dropped(&self, id: usize) -> usize {
        self.drops[id].load(SeqCst)
    }

    /// Every value `0..made` was dropped exactly once.
    #[track_caller]
    fn assert_each_dropped_once(&self, made: usize, what: &str) {
        let bad: Vec<(usize, usize)> = (0..made)
            .map(|id| (id, self.dropped(id)))
            .filter(|&(_, n)| n != 1)
            .take(10)
            .collect();
        assert!(
            bad.is_empty(),
            "{what}: (id, drops) not dropped exactly once: {bad:?}"
        );
    }
}

/// A value whose drop its [`Ledger`] counts (no assertion inside `drop`: a panic there while
/// unwinding would abort the test binary).
struct Tracked {
    id: usize,
    ledger: Arc<Ledger>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.ledger.drops[self.id].fetch_add(1, SeqCst);
    }
}

/// Each value `0..n` exactly once in `got`.
#[track_caller]
fn assert_each_once(mut got: Vec<usize>, n: usize, what: &str) {
    got.sort_unstable();
    let dupes = got.windows(2).filter(|w| w[0] == w[1]).count();
    assert_eq!(dupes, 0, "{what}: a value was received twice");
    assert_eq!(got.len(), n, "{what}: {} of {n} values received", got.len());
    assert!(
        got.iter().copied().eq(0..n),
        "{what}: values other than 0..{n}"
    );
}

// ---------------------------------------------------------------------------------------------
// same_channel.rs
// ---------------------------------------------------------------------------------------------

/// crossbeam same_channel.rs: `array_same_channel`, `list_same_channel`, `zero_same_channel`
/// (on both ends, for every capacity; a closed channel is still itself).
#[test]
fn clones_are_the_same_channel_and_a_second_channel_is_not() {
    for cap in CAPS {
        let (s, r) = cap.pair::<usize>();
        let (s2, r2) = (s.clone(), r.clone());
        assert!(s.same_channel(&s2) && s2.same_channel(&s), "{cap:?}");
        assert!(r.same_channel(&r2) && r2.same_channel(&r), "{cap:?}");
        let (s3, r3) = cap.pair::<usize>();
        assert!(!s.same_channel(&s3) && !s2.same_channel(&s3), "{cap:?}");
        assert!(!r.same_channel(&r3) && !r2.same_channel(&r3), "{cap:?}");
        // Still itself once closed and with the other ends gone.
        assert!(s.close());
        drop((r, r2));
        assert!(s.same_channel(&s2) && !s.same_channel(&s3), "{cap:?}");
    }
}

/// crossbeam same_channel.rs: `different_flavors_same_channel`.
#[test]
fn channels_of_different_capacities_are_different_channels() {
    let (s1, r1) = chan::bounded::<usize>(0);
    let (s2, r2) = chan::unbounded::<usize>();
    let (s3, r3) = chan::bounded::<usize>(1);
    assert!(!s1.same_channel(&s2) && !s1.same_channel(&s3) && !s2.same_channel(&s3));
    assert!(!r1.same_channel(&r2) && !r1.same_channel(&r3) && !r2.same_channel(&r3));
}

/// crossbeam same_channel.rs: `never_same_channel`, adapted: corio has no `never()`; a channel
/// nobody sends on is an ordinary channel, so two of them are two channels (crossbeam's never
/// channels are all one).
#[test]
fn two_channels_nobody_sends_on_are_two_channels() {
    let (_s1, r1) = never::<usize>();
    let (_s2, r2) = never::<usize>();
    assert!(r1.same_channel(&r1.clone()));
    assert!(!r1.same_channel(&r2));
}

// ---------------------------------------------------------------------------------------------
// never.rs (a channel nobody sends on) and after.rs (select!'s `after` arm)
// ---------------------------------------------------------------------------------------------

/// crossbeam never.rs: `smoke`, `capacity`, `len_empty_full`, `try_recv`.
#[test]
fn a_channel_nobody_sends_on_is_never_ready() {
    let (_s, r) = never::<i32>();
    corio::select! {
        recv(r) -> _ => panic!("a receive on a channel nobody sends on completed"),
        default => {},
    }
    assert_eq!(r.capacity(), Some(0));
    assert_eq!(r.len(), 0);
    assert!(r.is_empty() && r.is_full());
    assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
    std::thread::sleep(5 * MS);
    assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
}

/// crossbeam never.rs: `optional` — an arm switched off by pointing it at a channel nobody
/// sends on.
#[test]
fn an_arm_switched_to_a_channel_nobody_sends_on_is_never_chosen() {
    let (s, r) = chan::unbounded::<i32>();
    s.send(1).unwrap();
    s.send(2).unwrap();
    let (_never_s, never_r) = never::<i32>();
    let mut on: Option<&Receiver<i32>> = Some(&r);
    corio::select! {
        recv(on.unwrap_or(&never_r)) -> v => assert_eq!(v, Ok(1)),
        default => panic!("the live arm was not chosen"),
    }
    on = None;
    corio::select! {
        recv(on.unwrap_or(&never_r)) -> _ => panic!("the switched-off arm was chosen"),
        default => {},
    }
    assert_eq!(r.try_recv(), Ok(2), "the switched-off arm took a value");
}

/// crossbeam never.rs: `recv_timeout` (lower bounds only: a loaded machine may be late).
#[test]
fn a_receive_timeout_on_a_channel_nobody_sends_on_lasts_at_least_its_duration() {
    let (_s, r) = never::<i32>();
    let start = Instant::now();
    assert_eq!(r.recv_timeout(20 * MS), Err(RecvTimeoutError::Timeout));
    assert!(start.elapsed() >= 20 * MS);
    assert_eq!(r.recv_timeout(20 * MS), Err(RecvTimeoutError::Timeout));
    assert!(start.elapsed() >= 40 * MS);
}

/// crossbeam after.rs: `stress_default`, adapted: crossbeam's `after(0)` is a channel that is
/// ready at once, so its arm beats `default`; corio's `after` is a timer, not an arm that can
/// be ready on a select's first pass, and `default` means "nothing can happen now" (select!'s
/// rustdoc), so `default` is chosen even over `after(0)` (as in Go, where `time.After(0)`'s
/// channel is not ready yet). Without `default`, `after(0)` fires at once.
#[test]
fn default_is_chosen_over_an_after_arm_and_after_zero_alone_fires_at_once() {
    let (_s, r) = never::<i32>();
    for _ in 0..10 {
        let chosen = corio::select! {
            recv(r) -> _ => "recv",
            after(Duration::ZERO) => "after",
            default => "default",
        };
        assert_eq!(chosen, "default");
        let chosen = corio::select! {
            recv(r) -> _ => "recv",
            after(100 * MS) => "after",
            default => "default",
        };
        assert_eq!(chosen, "default");
        let chosen = corio::select! {
            recv(r) -> _ => "recv",
            after(Duration::ZERO) => "after",
        };
        assert_eq!(chosen, "after");
    }
}

// ---------------------------------------------------------------------------------------------
// iter.rs (the single-threaded ones)
// ---------------------------------------------------------------------------------------------

/// crossbeam iter.rs: `recv_into_iter_owned` (the iterator keeps the channel: its senders went
/// with the block, so it yields what was buffered and ends).
#[test]
fn an_owning_iterator_yields_what_was_buffered_then_ends() {
    let mut iter = {
        let (s, r) = chan::unbounded::<i32>();
        s.send(1).unwrap();
        s.send(2).unwrap();
        r.into_iter()
    };
    assert_eq!(iter.next(), Some(1));
    assert_eq!(iter.next(), Some(2));
    assert_eq!(iter.next(), None);
    assert_eq!(iter.next(), None);
}

/// crossbeam iter.rs: `recv_into_iter_borrowed`; and (corio) the same through `close()` while
/// a sender still lives.
#[test]
fn a_borrowing_iterator_yields_what_was_buffered_then_ends_when_closed() {
    let (s, r) = chan::unbounded::<i32>();
    s.send(1).unwrap();
    s.send(2).unwrap();
    drop(s);
    let mut iter = (&r).into_iter();
    assert_eq!(iter.next(), Some(1));
    assert_eq!(iter.next(), Some(2));
    assert_eq!(iter.next(), None);

    let (s, r) = chan::bounded::<i32>(2);
    s.send(1).unwrap();
    s.send(2).unwrap();
    assert!(s.close());
    assert_eq!(r.iter().collect::<Vec<_>>(), [1, 2]);
    assert_eq!(r.try_iter().count(), 0);
}

// ---------------------------------------------------------------------------------------------
// array.rs, zero.rs, list.rs: one handle pair, no runtime
// ---------------------------------------------------------------------------------------------

/// crossbeam array.rs, list.rs: `smoke`; zero.rs: `smoke` (on a plain thread, no runtime).
#[test]
fn a_lone_pair_sends_and_receives_without_a_runtime() {
    for cap in [Cap::Bounded(1), Cap::Bounded(3), Cap::Unbounded] {
        let (s, r) = cap.pair();
        s.try_send(7).unwrap();
        assert_eq!(r.try_recv(), Ok(7));
        s.send(8).unwrap();
        assert_eq!(r.recv(), Ok(8));
        assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(r.recv_timeout(5 * MS), Err(RecvTimeoutError::Timeout));
    }
    let (s, r) = chan::bounded(0);
    assert_eq!(s.try_send(7), Err(TrySendError::Full(7)));
    assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
}

/// crossbeam array.rs, zero.rs, list.rs: `capacity`; and (corio) the extremes: capacity 1 and
/// `usize::MAX - 1`, the largest `bounded` accepts, which reserves nothing up front.
#[test]
fn capacity_is_the_buffer_size_from_one_to_the_largest() {
    for i in 1..10 {
        let (s, r) = chan::bounded::<()>(i);
        assert_eq!((s.capacity(), r.capacity()), (Some(i), Some(i)));
    }
    for cap in CAPS {
        let (s, r) = cap.pair::<()>();
        assert_eq!(
            (s.capacity(), r.capacity()),
            (cap.capacity(), cap.capacity())
        );
    }
    let huge = usize::MAX - 1;
    let (s, r) = chan::bounded::<u64>(huge);
    assert_eq!((s.capacity(), r.capacity()), (Some(huge), Some(huge)));
    for i in 0..10_000 {
        s.try_send(i).unwrap();
    }
    assert_eq!(s.len(), 10_000);
    assert!(!s.is_full());
    assert_eq!(r.try_iter().take(3).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(r.len(), 9_997);
}

/// crossbeam array.rs (`bounded(2)`), zero.rs, list.rs: `len_empty_full`.
#[test]
fn len_is_empty_and_is_full_follow_what_is_buffered() {
    let (s, r) = chan::bounded(2);
    let state = |s: &Sender<()>, r: &Receiver<()>| {
        assert_eq!(s.len(), r.len());
        assert_eq!(s.is_empty(), r.is_empty());
        assert_eq!(s.is_full(), r.is_full());
        (s.len(), s.is_empty(), s.is_full())
    };
    assert_eq!(state(&s, &r), (0, true, false));
    s.send(()).unwrap();
    assert_eq!(state(&s, &r), (1, false, false));
    s.send(()).unwrap();
    assert_eq!(state(&s, &r), (2, false, true));
    r.recv().unwrap();
    assert_eq!(state(&s, &r), (1, false, false));

    // A rendezvous channel buffers nothing and is always full.
    let (s, r) = chan::bounded(0);
    assert_eq!(state(&s, &r), (0, true, true));
    let h = std::thread::spawn(move || r.recv().unwrap());
    s.send(()).unwrap();
    h.join().unwrap();

    // An unbounded one is never full.
    let (s, r) = chan::unbounded();
    assert_eq!(state(&s, &r), (0, true, false));
    s.send(()).unwrap();
    assert_eq!(state(&s, &r), (1, false, false));
    r.recv().unwrap();
    assert_eq!(state(&s, &r), (0, true, false));
}

/// crossbeam array.rs: `send_timeout_nonfull_expired`; list.rs: `recv_timeout_nonempty_expired`
/// — a zero timeout still completes an operation that needs no waiting.
#[test]
fn a_zero_timeout_completes_what_needs_no_wait_and_times_out_otherwise() {
    let (s, r) = chan::bounded::<i32>(1);
    assert_eq!(s.send_timeout(1, Duration::ZERO), Ok(()));
    assert_eq!(
        s.send_timeout(2, Duration::ZERO),
        Err(SendTimeoutError::Timeout(2))
    );
    assert_eq!(r.recv_timeout(Duration::ZERO), Ok(1));
    assert_eq!(
        r.recv_timeout(Duration::ZERO),
        Err(RecvTimeoutError::Timeout)
    );
    let (s, r) = chan::unbounded::<i32>();
    s.send(5).unwrap();
    assert_eq!(r.recv_timeout(Duration::ZERO), Ok(5));
    assert_eq!(
        r.recv_timeout(Duration::ZERO),
        Err(RecvTimeoutError::Timeout)
    );
}

/// crossbeam array.rs, list.rs: `send_after_disconnect`, `recv_after_disconnect`; list.rs:
/// `try_send`, `send`, `send_timeout` (each fails with its own value once the receiver is
/// gone); and (corio) the same after `close()` from either end while both ends live.
#[test]
fn after_a_disconnect_sends_fail_with_their_value_and_receives_drain_then_fail() {
    for cap in [Cap::Bounded(3), Cap::Bounded(100), Cap::Unbounded] {
        for how in 0..3 {
            let (s, r) = cap.pair::<i32>();
            for v in 1..=3 {
                s.send(v).unwrap();
            }
            let r = match how {
                0 => {
                    drop(r);
                    None
                }
                1 => {
                    assert!(r.close());
                    Some(r)
                }
                _ => {
                    assert!(s.close());
                    Some(r)
                }
            };
            assert_eq!(s.send(4), Err(SendError(4)), "{cap:?} {how}");
            assert_eq!(s.try_send(5), Err(TrySendError::Disconnected(5)));
            assert_eq!(
                s.send_timeout(6, 5 * MS),
                Err(SendTimeoutError::Disconnected(6))
            );
            assert_eq!(
                s.send_timeout(7, Duration::ZERO),
                Err(SendTimeoutError::Disconnected(7))
            );
            assert!(s.is_closed());
            if let Some(r) = r {
                // A close keeps what was buffered for the receivers.
                assert_eq!(r.len(), 3);
                assert_eq!(r.recv(), Ok(1));
                assert_eq!(r.try_recv(), Ok(2));
                assert_eq!(r.recv_timeout(LONG), Ok(3));
                assert_eq!(r.recv(), Err(RecvError));
                assert_eq!(r.try_recv(), Err(TryRecvError::Disconnected));
                assert_eq!(r.recv_timeout(LONG), Err(RecvTimeoutError::Disconnected));
            }
        }
        let (s, r) = cap.pair::<i32>();
        for v in 1..=3 {
            s.send(v).unwrap();
        }
        drop(s);
        assert_eq!(r.recv(), Ok(1));
        assert_eq!(r.recv(), Ok(2));
        assert_eq!(r.recv(), Ok(3));
        assert_eq!(r.recv(), Err(RecvError));
    }
    let (s, r) = chan::unbounded::<usize>();
    for i in 0..1000 {
        assert_eq!(s.try_send(i), Ok(()));
        assert_eq!(s.send(i), Ok(()));
        assert_eq!(s.send_timeout(i, Duration::ZERO), Ok(()));
    }
    drop(r);
    assert_eq!(s.try_send(777), Err(TrySendError::Disconnected(777)));
    assert_eq!(s.send(777), Err(SendError(777)));
}

/// crossbeam array.rs, list.rs: `len` (the single-threaded part: `len` after each send and
/// receive, through the ring buffer's wrap-around many times).
#[test]
fn len_counts_each_send_and_receive_through_many_wrap_arounds() {
    const CAP: usize = 100;
    for cap in [Cap::Bounded(CAP), Cap::Unbounded] {
        let (s, r) = cap.pair::<usize>();
        assert_eq!((s.len(), r.len()), (0, 0));
        for _ in 0..CAP / 10 {
            for i in 0..50 {
                s.send(i).unwrap();
                assert_eq!(s.len(), i + 1);
            }
            for i in 0..50 {
                r.recv().unwrap();
                assert_eq!(r.len(), 50 - i - 1);
            }
        }
        assert_eq!((s.len(), r.len()), (0, 0));
        for i in 0..CAP {
            s.send(i).unwrap();
            assert_eq!(s.len(), i + 1);
        }
        for _ in 0..CAP {
            r.recv().unwrap();
        }
        assert_eq!((s.len(), r.len()), (0, 0));
    }
}

/// crossbeam array.rs, zero.rs, list.rs: `drops` (the part without threads: what is left in
/// the buffer is dropped when the ends go, once each); and (corio) the same when the channel
/// was closed first, and when the receiver goes first while a sender lives on.
#[test]
fn values_left_in_the_channel_are_dropped_once_when_the_last_receiver_goes() {
    for cap in [Cap::Bounded(1), Cap::Bounded(50), Cap::Unbounded] {
        for how in 0..4 {
            let drops = Drops::new();
            let (s, r) = cap.pair();
            let n = cap.room().min(50);
            for _ in 0..n {
                s.try_send(drops.token()).ok().unwrap();
            }
            r.recv().unwrap(); // one taken and dropped by the receiver
            assert_eq!(drops.dropped(), 1);
            match how {
                // crossbeam's order: senders, then receivers.
                0 => drop(s),
                // A close from either end keeps them for the receivers ...
                1 => assert!(s.close()),
                2 => assert!(r.close()),
                // ... and so does nothing at all while both ends live.
                _ => {}
            }
            assert_eq!(
                drops.dropped(),
                1,
                "{cap:?} {how}: dropped before the receiver went"
            );
            if how != 0 {
                assert_eq!(r.len(), n - 1);
            }
            drop(r);
            assert_eq!(drops.dropped(), n, "{cap:?} {how}: buffered values leaked");
            assert_eq!(drops.made(), n);
        }
    }
}

/// crossbeam array.rs: `panic_on_drop`, adapted: crossbeam stops dropping at the value whose
/// drop panics and leaks the rest; corio drops every buffered value (after the channel lock,
/// through `VecDeque`'s drop) and the panic reaches the code that dropped the last receiver.
/// The later value's drop must not panic too (a second panic while unwinding aborts, for a
/// `Vec` as much as for a channel).
#[test]
fn a_panicking_drop_of_a_buffered_value_reaches_the_dropper_and_the_rest_are_dropped() {
    quiet_expected_panics();
    struct Loud(Arc<AtomicUsize>, bool);
    impl Drop for Loud {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
            if self.1 && !std::thread::panicking() {
                panic!("{EXPECTED} first drop");
            }
        }
    }
    // Without a panic: both dropped.
    let dropped = Arc::new(AtomicUsize::new(0));
    let (s, r) = chan::bounded(2);
    s.send(Loud(dropped.clone(), false)).unwrap();
    s.send(Loud(dropped.clone(), false)).unwrap();
    drop(s);
    drop(r);
    assert_eq!(dropped.load(SeqCst), 2);
    // The first panics.
    let dropped = Arc::new(AtomicUsize::new(0));
    let (s, r) = chan::bounded(2);
    s.send(Loud(dropped.clone(), true)).unwrap();
    s.send(Loud(dropped.clone(), false)).unwrap();
    drop(s);
    let payload = catch_unwind(AssertUnwindSafe(move || drop(r))).unwrap_err();
    assert!(payload_text(&*payload).contains("first drop"));
    assert_eq!(
        dropped.load(SeqCst),
        2,
        "the value after the panicking one leaked"
    );
}

/// crossbeam array.rs, list.rs, zero.rs: `recv_in_send`, adapted: crossbeam evaluates a send
/// arm's value only if the arm is chosen (so `send(s, panic!())` beside a ready `default`
/// never panics); corio evaluates it once, before the select (select!'s rustdoc), and drops it
/// unsent if another arm is chosen. The second half holds as in crossbeam: the value
/// expression may itself use the channel.
#[test]
fn a_send_arms_value_is_evaluated_once_before_the_select_and_dropped_if_not_sent() {
    let drops = Drops::new();
    let evaluated = AtomicUsize::new(0);
    let (s, _r) = chan::bounded(1);
    s.send(drops.token()).unwrap();
    corio::select! {
        send(s, { evaluated.fetch_add(1, SeqCst); drops.token() }) -> _ => panic!("full"),
        default => {},
    }
    assert_eq!(evaluated.load(SeqCst), 1);
    assert_eq!(
        (drops.made(), drops.dropped()),
        (2, 1),
        "the unsent value leaked"
    );

    let (s, r) = chan::bounded(2);
    s.send(()).unwrap();
    corio::select! {
        send(s, assert_eq!(r.recv(), Ok(()))) -> res => res.unwrap(),
    }
    assert_eq!(r.try_recv(), Ok(()));
    assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
}

/// crossbeam list.rs: `stack_overflow` — a 32 KiB value through a channel, on a plain thread
/// and (corio) between coroutines of every capacity, with stacks roomy enough for an
/// unoptimised build (see the next test for the default stack).
#[test]
fn a_large_value_goes_through_a_channel_on_a_thread_and_between_roomy_coroutines() {
    const N: usize = 32 * 1024;
    struct Big([u8; N]);
    let (s, r) = chan::unbounded::<Big>();
    s.send(Big([7; N])).unwrap();
    for big in r.try_iter() {
        assert!(big.0.iter().all(|&b| b == 7));
    }
    let rt = rt(1);
    within(EVENTUALLY, move || {
        rt.block_on(async {
            for cap in CAPS {
                let (s, r) = cap.pair::<Big>();
                let roomy = || corio::Builder::new().stack_size(4 << 20);
                let rx = roomy()
                    .spawn(move || r.recv().unwrap().0.iter().all(|&b| b == 9))
                    .unwrap();
                let tx = roomy().spawn(move || s.send(Big([9; N])).is_ok()).unwrap();
                assert!(tx.await.unwrap(), "{cap:?}");
                assert!(rx.await.unwrap(), "{cap:?}");
            }
        })
    });
}

/// crossbeam list.rs: `stack_overflow`, in a coroutine with the default stack (256 KiB): a
/// 64 KiB value (a quarter of the stack) sent and received blocking-style, with and without a
/// timeout. The send and the receive each keep one copy of it in their frames (in an
/// optimised build), so this fits; they used to keep about eight, and a 40 KiB value
/// overflowed. An overflow aborts the whole test binary.
///
/// Optimised builds only: a debug build copies a value at nearly every call and binding, and
/// this test's own closures (the value built for `send`, the `Result` of `recv` and its
/// unwrapping) alone need more than the stack there (`chan`'s rustdoc, "Large values").
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "debug builds copy a value at every call and binding: the claim is for optimised builds"
)]
fn a_64_kib_value_goes_through_a_channel_between_coroutines_with_the_default_stack() {
    const N: usize = 64 * 1024;
    struct Big([u8; N]);
    let rt = rt(1);
    within(EVENTUALLY, move || {
        rt.block_on(async {
            for cap in CAPS {
                let (s, r) = cap.pair::<Big>();
                let rx = corio::go(move || r.recv().unwrap().0.iter().all(|&b| b == 9));
                let tx = corio::go(move || s.send(Big([9; N])).is_ok());
                assert!(tx.await.unwrap(), "{cap:?}");
                assert!(rx.await.unwrap(), "{cap:?}");
                // The faces with a timeout.
                let (s, r) = cap.pair::<Big>();
                let rx = corio::go(move || {
                    let v = r.recv_timeout(LONG).unwrap();
                    v.0.iter().all(|&b| b == 7)
                });
                let tx = corio::go(move || s.send_timeout(Big([7; N]), LONG).is_ok());
                assert!(tx.await.unwrap(), "{cap:?}");
                assert!(rx.await.unwrap(), "{cap:?}");
            }
        })
    });
}

/// std mpsc (crossbeam mpsc.rs): `drop_full`, `drop_full_shared` — a channel dropped with a
/// value in it, after clones of its sender came and went, leaks nothing.
#[test]
fn a_channel_dropped_holding_a_value_leaks_nothing() {
    for cap in [Cap::Bounded(1), Cap::Unbounded] {
        let drops = Drops::new();
        let (tx, rx) = cap.pair();
        drop(tx.clone());
        drop(tx.clone());
        tx.send(Box::new(drops.token())).ok().unwrap();
        assert!(!rx.is_closed());
        drop((tx, rx));
        assert_eq!(drops.dropped(), 1, "{cap:?}");
    }
}

/// std mpsc (crossbeam mpsc.rs): `smoke_port_gone`, `smoke_shared_port_gone2`,
/// `oneshot_single_thread_send_port_close`, `oneshot_single_thread_try_send_closed`,
/// `issue_32114`, sync `smoke_port_gone`, `try_send3` — sends fail, again and again, once the
/// receiver is gone, through a clone whose original went too; each failure hands back the
/// value it was given.
#[test]
fn sends_keep_failing_with_their_value_once_the_receiver_is_gone() {
    for cap in CAPS {
        let (tx, rx) = cap.pair::<i32>();
        if cap.room() > 0 {
            assert_eq!(tx.try_send(1), Ok(()));
        }
        drop(rx);
        let tx2 = tx.clone();
        drop(tx);
        for v in 10..13 {
            assert_eq!(tx2.send(v), Err(SendError(v)), "{cap:?}");
            assert_eq!(tx2.try_send(v), Err(TrySendError::Disconnected(v)));
            assert_eq!(
                tx2.send_timeout(v, HOUR),
                Err(SendTimeoutError::Disconnected(v))
            );
        }
        assert!(tx2.is_closed());
        assert_eq!(
            tx2.len(),
            0,
            "{cap:?}: values kept after the last receiver went"
        );
    }
    // The receiver of `channel()` dropped at once (`let (tx, _) = ...`).
    let (tx, _) = chan::unbounded::<i32>();
    assert_eq!(tx.send(123), Err(SendError(123)));
    assert_eq!(tx.send(123), Err(SendError(123)));
}

/// std mpsc (crossbeam mpsc.rs): `smoke_chan_gone(_shared)`, `oneshot_single_thread_recv_chan_
/// close`, `oneshot_single_thread_peek_close`, sync `oneshot_single_thread_try_recv_closed_
/// with_data`, `oneshot_single_thread_peek_data`, `oneshot_single_thread_peek_open` — a
/// receiver sees what was sent, then "disconnected" for good once the senders are gone.
#[test]
fn receives_drain_then_keep_failing_once_every_sender_is_gone() {
    for cap in CAPS {
        let (tx, rx) = cap.pair::<i32>();
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        if cap.room() > 0 {
            tx.send(10).unwrap();
            assert_eq!(rx.try_recv(), Ok(10));
            tx.send(11).unwrap();
        }
        let tx2 = tx.clone();
        drop(tx);
        assert_eq!(
            rx.try_recv(),
            if cap.room() > 0 {
                Ok(11)
            } else {
                Err(TryRecvError::Empty)
            }
        );
        assert!(!rx.is_closed(), "{cap:?}: closed while a sender lives");
        drop(tx2);
        for _ in 0..3 {
            assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected), "{cap:?}");
            assert_eq!(rx.recv(), Err(RecvError));
            assert_eq!(rx.recv_timeout(HOUR), Err(RecvTimeoutError::Disconnected));
        }
    }
}

/// std mpsc (crossbeam mpsc.rs): `oneshot_single_thread_recv_timeout`, `shared_recv_timeout`
/// (the tail), sync `recv_timeout`, `recv_timeout_upgrade` — a value there is taken, none
/// there is a timeout of at least the duration, with or without a second sender.
#[test]
fn receive_timeouts_take_what_is_there_and_otherwise_wait_at_least_their_duration() {
    for cap in [Cap::Bounded(1), Cap::Unbounded] {
        let (tx, rx) = cap.pair::<()>();
        let _tx2 = tx.clone();
        tx.send(()).unwrap();
        assert_eq!(rx.recv_timeout(MS), Ok(()));
        let start = Instant::now();
        assert_eq!(rx.recv_timeout(MS), Err(RecvTimeoutError::Timeout));
        assert!(start.elapsed() >= MS);
        tx.send(()).unwrap();
        assert_eq!(rx.recv_timeout(MS), Ok(()));
    }
}

/// std mpsc (crossbeam mpsc.rs): sync `try_send1`, `try_send2`,
/// `oneshot_single_thread_try_send_closed2` — a rendezvous `try_send` with the receiver alive
/// but not waiting is `Full`, as is a full buffer.
#[test]
fn try_send_is_full_with_no_receiver_waiting_or_no_room() {
    let (tx, _rx) = chan::bounded::<i32>(0);
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    let (tx, _rx) = chan::bounded::<i32>(1);
    assert_eq!(tx.try_send(1), Ok(()));
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
}

/// std mpsc (crossbeam mpsc.rs): `recv_a_lot` (receiving many buffered values does not grow the
/// stack), here in a coroutine with the smallest stack corio allows.
#[test]
fn many_buffered_values_are_received_in_a_coroutine_with_the_smallest_stack() {
    let rt = rt(1);
    within(EVENTUALLY, move || {
        rt.block_on(async {
            for cap in [Cap::Bounded(10_000), Cap::Unbounded] {
                let h = corio::Builder::new()
                    .stack_size(corio::stack::MIN_STACK_SIZE)
                    .spawn(move || {
                        let (tx, rx) = cap.pair();
                        for _ in 0..10_000 {
                            tx.send(()).unwrap();
                        }
                        for _ in 0..10_000 {
                            rx.recv().unwrap();
                        }
                        rx.try_recv().is_err()
                    })
                    .unwrap();
                assert!(h.await.unwrap());
            }
        })
    });
}

/// std mpsc (crossbeam mpsc.rs): select `preflight1`..`preflight9`, `smoke`, `smoke2`,
/// `closed`, `sync1` — a select over channels whose state is settled before it starts.
#[test]
fn a_select_sees_values_and_closes_that_came_before_it() {
    // preflight1/4: one value; 2/5: two; 3/6: with a clone of the sender gone.
    for (clone_gone, n) in [(false, 1), (false, 2), (true, 1)] {
        let (tx, rx) = chan::unbounded();
        if clone_gone {
            drop(tx.clone());
        }
        for _ in 0..n {
            tx.send(()).unwrap();
        }
        corio::select! { recv(rx) -> v => assert_eq!(v, Ok(())) }
    }
    // preflight7: closed and empty.
    let (tx, rx) = chan::unbounded::<()>();
    drop(tx);
    corio::select! { recv(rx) -> v => assert_eq!(v, Err(RecvError)) }
    // preflight8/9: drained, then closed.
    for clone_gone in [false, true] {
        let (tx, rx) = chan::unbounded();
        if clone_gone {
            drop(tx.clone());
        }
        tx.send(()).unwrap();
        drop(tx);
        rx.recv().unwrap();
        corio::select! { recv(rx) -> v => assert_eq!(v, Err(RecvError)) }
    }
    // smoke: the ready arm of two, both ways round, then each closed.
    let (tx1, rx1) = chan::unbounded::<i32>();
    let (tx2, rx2) = chan::unbounded::<i32>();
    tx1.send(1).unwrap();
    corio::select! {
        recv(rx1) -> v => assert_eq!(v, Ok(1)),
        recv(rx2) -> _ => panic!("rx2 was not ready"),
    }
    tx2.send(2).unwrap();
    corio::select! {
        recv(rx1) -> _ => panic!("rx1 was not ready"),
        recv(rx2) -> v => assert_eq!(v, Ok(2)),
    }
    drop(tx1);
    corio::select! {
        recv(rx1) -> v => assert_eq!(v, Err(RecvError)),
        recv(rx2) -> _ => panic!("rx2 was not ready"),
    }
    drop(tx2);
    corio::select! { recv(rx2) -> v => assert_eq!(v, Err(RecvError)) }
    // smoke2: only the fifth of five.
    let (_t1, r1) = chan::unbounded::<i32>();
    let (_t2, r2) = chan::unbounded::<i32>();
    let (_t3, r3) = chan::unbounded::<i32>();
    let (_t4, r4) = chan::unbounded::<i32>();
    let (t5, r5) = chan::unbounded::<i32>();
    t5.send(4).unwrap();
    corio::select! {
        recv(r1) -> _ => panic!("1"),
        recv(r2) -> _ => panic!("2"),
        recv(r3) -> _ => panic!("3"),
        recv(r4) -> _ => panic!("4"),
        recv(r5) -> v => assert_eq!(v, Ok(4)),
    }
    // sync1: a bounded channel's buffered value.
    let (tx, rx) = chan::bounded::<i32>(1);
    tx.send(1).unwrap();
    corio::select! { recv(rx) -> v => assert_eq!(v, Ok(1)) }
}

/// Receive timeouts on many plain threads at once, outside any runtime.
#[test]
fn many_plain_threads_time_out_at_once_each_after_its_duration() {
    within(
        EVENTUALLY,
        many_threads_time_out_at_once_each_after_its_duration,
    );
}

/// std mpsc (crossbeam mpsc.rs): `no_runtime` — two plain threads and no corio runtime at all.
#[test]
fn two_plain_threads_talk_with_no_runtime_anywhere() {
    for cap in CAPS {
        let (tx1, rx1) = cap.pair::<i32>();
        let (tx2, rx2) = cap.pair::<i32>();
        let t1 = std::thread::spawn(move || {
            assert_eq!(rx1.recv(), Ok(1));
            tx2.send(2).unwrap();
        });
        let t2 = std::thread::spawn(move || {
            tx1.send(1).unwrap();
            assert_eq!(rx2.recv(), Ok(2));
        });
        t1.join().unwrap();
        t2.join().unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// The two-party bodies of array.rs, zero.rs, list.rs (crossbeam's two scoped threads)
// ---------------------------------------------------------------------------------------------

/// crossbeam array.rs, zero.rs, list.rs: `try_recv`. crossbeam's sleeps order the steps; here
/// signals do, and the receiver polls for the value (a rendezvous value is there only while
/// its sender waits in `send`).
fn try_recv_sees_empty_then_the_value_then_disconnected(cap: Cap, on: (On, On)) {
    let (s, r) = cap.pair::<i32>();
    let (looked_tx, looked_rx) = signal();
    let (gone_tx, gone_rx) = signal();
    both(
        on,
        move || {
            assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
            looked_tx.send(()).unwrap();
            let v = poll_until(|| match r.try_recv() {
                Ok(v) => Some(v),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => panic!("{cap:?}: disconnected before 7"),
            });
            assert_eq!(v, 7, "{cap:?}");
            gone_rx.recv().unwrap();
            assert_eq!(r.try_recv(), Err(TryRecvError::Disconnected), "{cap:?}");
        },
        move || {
            looked_rx.recv().unwrap();
            corio::sleep(2 * MS);
            s.send(7).unwrap();
            drop(s);
            gone_tx.send(()).unwrap();
        },
    );
}

/// crossbeam array.rs, zero.rs, list.rs: `recv`.
fn recv_waits_for_each_value_then_reports_the_end(cap: Cap, on: (On, On)) {
    let (s, r) = cap.pair::<i32>();
    both(
        on,
        move || {
            assert_eq!(r.recv(), Ok(7));
            corio::sleep(2 * MS);
            assert_eq!(r.recv(), Ok(8));
            corio::sleep(2 * MS);
            assert_eq!(r.recv(), Ok(9));
            assert_eq!(r.recv(), Err(RecvError), "{cap:?}");
        },
        move || {
            corio::sleep(3 * MS);
            s.send(7).unwrap();
            s.send(8).unwrap();
            s.send(9).unwrap();
        },
    );
}

/// crossbeam array.rs, zero.rs, list.rs: `recv_timeout`.
fn recv_timeout_times_out_then_gets_the_value_then_disconnected(cap: Cap, on: (On, On)) {
    let (s, r) = cap.pair::<i32>();
    let (go_tx, go_rx) = signal();
    both(
        on,
        move || {
            let start = Instant::now();
            assert_eq!(r.recv_timeout(3 * MS), Err(RecvTimeoutError::Timeout));
            assert!(start.elapsed() >= 3 * MS);
            go_tx.send(()).unwrap();
            assert_eq!(r.recv_timeout(LONG), Ok(7), "{cap:?}");
            assert_eq!(r.recv_timeout(LONG), Err(RecvTimeoutError::Disconnected));
        },
        move || {
            go_rx.recv().unwrap();
            corio::sleep(2 * MS);
            s.send(7).unwrap();
        },
    );
}

/// crossbeam array.rs, zero.rs, list.rs: `try_send` (what fits goes in, then `Full`; once the
/// receiver drained it and waits, the next `try_send` gets through; `Disconnected` once the
/// receiver is gone).
fn try_send_fills_then_is_full_then_gets_through_then_disconnected(cap: Cap, on: (On, On)) {
    let (s, r) = cap.pair::<usize>();
    let fill = cap.room().min(3);
    let (filled_tx, filled_rx) = signal();
    let (drained_tx, drained_rx) = signal();
    let (gone_tx, gone_rx) = signal();
    both(
        on,
        move || {
            for i in 0..fill {
                assert_eq!(s.try_send(i), Ok(()), "{cap:?}");
            }
            if cap != Cap::Unbounded {
                assert_eq!(s.try_send(99), Err(TrySendError::Full(99)), "{cap:?}");
            }
            filled_tx.send(()).unwrap();
            drained_rx.recv().unwrap();
            poll_until(|| match s.try_send(100) {
                Ok(()) => Some(()),
                Err(TrySendError::Full(100)) => None,
                Err(e) => panic!("{cap:?}: {e:?}"),
            });
            gone_rx.recv().unwrap();
            assert_eq!(s.try_send(101), Err(TrySendError::Disconnected(101)));
        },
        move || {
            filled_rx.recv().unwrap();
            for i in 0..fill {
                assert_eq!(r.try_recv(), Ok(i));
            }
            assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
            drained_tx.send(()).unwrap();
            assert_eq!(r.recv(), Ok(100), "{cap:?}");
            drop(r);
            gone_tx.send(()).unwrap();
        },
    );
}

/// crossbeam array.rs, zero.rs: `send` (a send waits while there is no room).
fn send_waits_for_room_and_each_value_arrives_in_order(cap: Cap, on: (On, On)) {
    let (s, r) = cap.pair::<i32>();
    both(
        on,
        move || {
            for v in [7, 8, 9, 10] {
                s.send(v).unwrap();
                corio::sleep(MS);
            }
        },
        move || {
            corio::sleep(3 * MS);
            for v in [7, 8, 9, 10] {
                assert_eq!(r.recv(), Ok(v), "{cap:?}");
            }
            assert_eq!(r.recv(), Err(RecvError));
        },
    );
}

/// crossbeam array.rs (`bounded(2)`), zero.rs, list.rs: `send_timeout`.
fn send_timeout_times_out_without_room_then_gets_through_then_disconnected(cap: Cap, on: (On, On)) {
    let (s, r) = cap.pair::<usize>();
    let fill = cap.room().min(2);
    let (filled_tx, filled_rx) = signal();
    let (gone_tx, gone_rx) = signal();
    both(
        on,
        move || {
            for i in 0..fill {
                assert_eq!(s.send_timeout(i, LONG), Ok(()));
            }
            if cap != Cap::Unbounded {
                let start = Instant::now();
                assert_eq!(
                    s.send_timeout(50, 3 * MS),
                    Err(SendTimeoutError::Timeout(50)),
                    "{cap:?}"
                );
                assert!(start.elapsed() >= 3 * MS);
            }
            filled_tx.send(()).unwrap();
            assert_eq!(s.send_timeout(60, LONG), Ok(()), "{cap:?}");
            gone_rx.recv().unwrap();
            assert_eq!(
                s.send_timeout(70, LONG),
                Err(SendTimeoutError::Disconnected(70))
            );
            assert_eq!(s.send(71), Err(SendError(71)));
        },
        move || {
            filled_rx.recv().unwrap();
            corio::sleep(2 * MS);
            for i in 0..fill {
                assert_eq!(r.recv(), Ok(i));
            }
            assert_eq!(r.recv(), Ok(60), "{cap:?}");
            drop(r);
            gone_tx.send(()).unwrap();
        },
    );
}

/// How a test ends a channel: crossbeam drops the other end; corio may also `close()` it from
/// the other end or from a clone of the waiter's own end.
#[derive(Clone, Copy, Debug)]
enum Ending {
    DropOther,
    CloseOther,
    CloseOwn,
}

const ENDINGS: [Ending; 3] = [Ending::DropOther, Ending::CloseOther, Ending::CloseOwn];

/// crossbeam array.rs, zero.rs: `disconnect_wakes_sender`; std mpsc sync `send2`, `send3`,
/// `send4` — every sender waiting for room is woken with its own value when the channel ends
/// (one on `on.0`, and beside it a coroutine in `send_timeout` and a task in `send_async`),
/// and what was buffered stays for the receivers.
fn waiting_senders_are_woken_with_their_values_when_the_channel_ends(
    cap: Cap,
    ending: Ending,
    on: (On, On),
) {
    let (s, r) = cap.pair::<usize>();
    let fill = cap.room();
    for i in 0..fill {
        s.try_send(i).unwrap();
    }
    let (s2, s3, own) = (s.clone(), s.clone(), s.clone());
    let first = start(on.0, move || s.send(100));
    let second = corio::go(move || s2.send_timeout(200, LONG));
    let third = start_task(async move { s3.send_async(300).await });
    let kept = match ending {
        Ending::DropOther => None,
        _ => Some(r.clone()),
    };
    let closer = start(on.1, move || {
        corio::sleep(3 * MS);
        match ending {
            Ending::DropOther => drop(r),
            Ending::CloseOther => assert!(r.close()),
            Ending::CloseOwn => assert!(own.close()),
        }
    });
    closer.join();
    assert_eq!(first.join(), Err(SendError(100)), "{cap:?} {ending:?}");
    assert_eq!(
        second.join().unwrap(),
        Err(SendTimeoutError::Disconnected(200)),
        "{cap:?} {ending:?}"
    );
    assert_eq!(third.join(), Err(SendError(300)), "{cap:?} {ending:?}");
    if let Some(r) = kept {
        assert_eq!(r.iter().collect::<Vec<_>>(), (0..fill).collect::<Vec<_>>());
    }
}

/// crossbeam array.rs, zero.rs, list.rs: `disconnect_wakes_receiver`; std mpsc
/// `oneshot_multi_task_recv_then_close` — every waiting receiver is woken with "closed": one
/// on `on.0`, and beside it a coroutine in `recv_timeout`, a task in `recv_async` and a task
/// polling the `Stream`.
fn waiting_receivers_are_woken_when_the_channel_ends(cap: Cap, ending: Ending, on: (On, On)) {
    let (s, r) = cap.pair::<()>();
    let (r1, r2, r3, own) = (r.clone(), r.clone(), r.clone(), r.clone());
    let mut r4 = r.clone();
    let first = start(on.0, move || r1.recv());
    let second = corio::go(move || r2.recv_timeout(LONG));
    let third = start_task(async move { r3.recv_async().await });
    let fourth = start_task(async move { r4.next().await });
    let closer = start(on.1, move || {
        corio::sleep(3 * MS);
        match ending {
            Ending::DropOther => drop(s),
            Ending::CloseOther => {
                assert!(s.close());
                assert_eq!(s.send(()), Err(SendError(())));
            }
            Ending::CloseOwn => {
                assert!(own.close());
                assert_eq!(s.try_send(()), Err(TrySendError::Disconnected(())));
            }
        }
    });
    closer.join();
    assert_eq!(first.join(), Err(RecvError), "{cap:?} {ending:?}");
    assert_eq!(
        second.join().unwrap(),
        Err(RecvTimeoutError::Disconnected),
        "{cap:?} {ending:?}"
    );
    assert_eq!(third.join(), Err(RecvError), "{cap:?} {ending:?}");
    assert_eq!(fourth.join(), None, "{cap:?} {ending:?}");
    assert_eq!(r.try_recv(), Err(TryRecvError::Disconnected));
}

/// crossbeam array.rs, zero.rs: `len` (the concurrent part: `len()` never exceeds the capacity
/// while values stream through, and is 0 for a rendezvous channel, when nothing is cancelled).
fn len_stays_within_the_capacity_while_values_stream_through(cap: Cap, count: usize) {
    let (s, r) = cap.pair::<usize>();
    let limit = cap.room();
    let (s_len, r_len) = (s.clone(), r.clone());
    let receiver = corio::go(move || {
        for i in 0..count {
            assert_eq!(r.recv(), Ok(i));
            let len = r.len();
            assert!(len <= limit, "{cap:?}: len {len} after a receive");
        }
    });
    let sender = corio::go(move || {
        for i in 0..count {
            s.send(i).unwrap();
            let len = s.len();
            assert!(len <= limit, "{cap:?}: len {len} after a send");
        }
    });
    // A third party watching all along, from a plain thread.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut looks = 0u64;
            while !stop.load(SeqCst) {
                let (a, b) = (s_len.len(), r_len.len());
                assert!(
                    a <= limit && b <= limit,
                    "{cap:?}: len {a}/{b} seen by a watcher"
                );
                looks += 1;
                std::thread::yield_now();
            }
            (looks, s_len.len())
        })
    };
    sender.join().unwrap();
    receiver.join().unwrap();
    stop.store(true, SeqCst);
    let (_, last) = watcher.join().unwrap();
    assert_eq!(last, 0, "{cap:?}: len after everything was received");
}

/// crossbeam array.rs, zero.rs: `spsc`.
fn spsc_delivers_every_value_in_order(cap: Cap, count: usize, on: (On, On)) {
    let (s, r) = cap.pair::<usize>();
    both(
        on,
        move || {
            for i in 0..count {
                assert_eq!(r.recv(), Ok(i), "{cap:?}");
            }
            assert_eq!(r.recv(), Err(RecvError));
        },
        move || {
            for i in 0..count {
                s.send(i).unwrap();
            }
        },
    );
}

/// crossbeam array.rs, zero.rs, list.rs: `mpmc` — four senders send 0..count each, four
/// receivers take `count` each; every value arrives once per sender.
fn mpmc_delivers_each_value_once_per_sender(cap: Cap, count: usize, receivers_on: On) {
    const THREADS: usize = 4;
    let (s, r) = cap.pair::<usize>();
    let seen: Arc<Vec<AtomicUsize>> = Arc::new((0..count).map(|_| AtomicUsize::new(0)).collect());
    let rs: Vec<_> = (0..THREADS)
        .map(|_| {
            let (r, seen) = (r.clone(), seen.clone());
            start(receivers_on, move || {
                for _ in 0..count {
                    let n = r.recv().unwrap();
                    seen[n].fetch_add(1, SeqCst);
                }
            })
        })
        .collect();
    let ss: Vec<_> = (0..THREADS)
        .map(|_| {
            let s = s.clone();
            corio::go(move || {
                for i in 0..count {
                    s.send(i).unwrap();
                }
            })
        })
        .collect();
    ss.into_iter().for_each(|h| h.join().unwrap());
    rs.into_iter().for_each(Started::join);
    for (i, c) in seen.iter().enumerate() {
        assert_eq!(c.load(SeqCst), THREADS, "{cap:?}: value {i}");
    }
    assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
}

/// crossbeam array.rs, zero.rs, list.rs: `stress_oneshot`; std mpsc
/// `oneshot_multi_thread_send_recv_stress`.
fn oneshots_meet(cap: Cap, rounds: usize, on: (On, On)) {
    for i in 0..rounds {
        let (s, r) = cap.pair::<usize>();
        let (got, ()) = both(on, move || r.recv().unwrap(), move || s.send(i).unwrap());
        assert_eq!(got, i);
    }
}

/// crossbeam array.rs, zero.rs, list.rs: `stress_iter`; iter.rs `recv_try_iter`; std mpsc
/// `test_recv_try_iter` — a client asks for values until it has `count`, draining the answers
/// with `try_iter`; the server answers each request until the client has gone.
fn request_response_until_the_client_has_enough(cap: Cap, count: usize, on: (On, On)) {
    let (request_s, request_r) = cap.pair::<()>();
    let (response_s, response_r) = cap.pair::<usize>();
    let (total, answered) = both(
        on,
        move || {
            let mut total = 0;
            loop {
                for x in response_r.try_iter() {
                    total += x;
                    if total == count {
                        return total;
                    }
                }
                // A rendezvous request gets through only while the server waits for one.
                let _ = request_s.try_send(());
                pause();
            }
        },
        move || {
            let mut answered = 0;
            for () in request_r.iter() {
                if response_s.send(1).is_err() {
                    break;
                }
                answered += 1;
            }
            answered
        },
    );
    assert_eq!(total, count);
    assert!(answered >= count, "{cap:?}: {answered} answers");
}

/// crossbeam array.rs, zero.rs, list.rs: `stress_timeout_two_threads` — sends and receives
/// with short timeouts, retried until they succeed, against a peer that keeps pausing: every
/// value arrives once, in order (a timeout that races a hand-off loses nothing: it either
/// sent/received or hands the value back).
fn timed_out_attempts_retried_deliver_each_value_once_in_order(
    cap: Cap,
    count: usize,
    on: (On, On),
) {
    let (s, r) = cap.pair::<usize>();
    both(
        on,
        move || {
            for i in 0..count {
                if i % 2 == 0 {
                    corio::sleep(2 * MS);
                }
                let mut v = i;
                loop {
                    match s.send_timeout(v, MS / 2) {
                        Ok(()) => break,
                        Err(SendTimeoutError::Timeout(back)) => v = back,
                        Err(e) => panic!("{cap:?}: {e:?}"),
                    }
                }
                assert_eq!(v, i, "a timed-out send handed back another value");
            }
        },
        move || {
            for i in 0..count {
                if i % 2 == 0 {
                    corio::sleep(2 * MS);
                }
                loop {
                    match r.recv_timeout(MS / 2) {
                        Ok(x) => {
                            assert_eq!(x, i, "{cap:?}: out of order or lost");
                            break;
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(e) => panic!("{cap:?}: {e:?}"),
                    }
                }
            }
            assert_eq!(r.recv_timeout(LONG), Err(RecvTimeoutError::Disconnected));
        },
    );
}

/// crossbeam array.rs, zero.rs, list.rs: `drops` — random numbers of values sent and received
/// concurrently, then more left in the buffer: each dropped exactly once, the leftovers when
/// the ends go.
fn drops_once_each_whatever_the_mix(cap: Cap, runs: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    for _ in 0..runs {
        let steps = rng.below(500) as usize;
        let additional = cap.room().min(rng.below(50) as usize);
        let ledger = Ledger::new(steps + additional);
        let (s, r) = cap.pair::<Tracked>();
        let (s1, r1) = (s.clone(), r.clone());
        let l1 = ledger.clone();
        let receiver = corio::go(move || {
            for _ in 0..steps {
                r1.recv().unwrap();
            }
        });
        let sender = corio::go(move || {
            for id in 0..steps {
                s1.send(l1.make(id)).ok().unwrap();
            }
        });
        sender.join().unwrap();
        receiver.join().unwrap();
        for id in steps..steps + additional {
            s.send(ledger.make(id)).ok().unwrap();
        }
        let early: usize = (0..steps + additional).map(|id| ledger.dropped(id)).sum();
        assert_eq!(early, steps, "{cap:?}: drops before the ends went");
        drop(s);
        drop(r);
        ledger.assert_each_dropped_once(steps + additional, &format!("{cap:?}"));
    }
}

/// crossbeam array.rs, list.rs: `linearizable` — each of four senders sends one value and
/// then `try_recv` must find one (its own or another's): a send is visible to every receive
/// that starts after it returned.
fn every_send_is_visible_to_a_try_recv_that_follows_it(cap: Cap, count: usize) {
    const THREADS: usize = 4;
    let (s, r) = cap.pair::<usize>();
    let hs: Vec<_> = (0..THREADS)
        .map(|_| {
            let (s, r) = (s.clone(), r.clone());
            corio::go(move || {
                for _ in 0..count {
                    s.send(0).unwrap();
                    r.try_recv().unwrap();
                }
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(r.len(), 0);
}

/// crossbeam array.rs, list.rs: `fairness`, `fairness_duplicates` (buffered channels, values
/// all there before the selects): each arm is chosen at least half its fair share.
fn selects_over_ready_channels_choose_every_arm_fairly(cap: Cap) {
    const COUNT: usize = 1000;
    let (s1, r1) = cap.pair::<()>();
    let (s2, r2) = cap.pair::<()>();
    for _ in 0..COUNT {
        s1.send(()).unwrap();
        s2.send(()).unwrap();
    }
    let mut hits = [0usize; 2];
    for _ in 0..COUNT {
        corio::select! {
            recv(r1) -> _ => hits[0] += 1,
            recv(r2) -> _ => hits[1] += 1,
        }
    }
    assert!(
        hits.iter().all(|&x| x >= COUNT / hits.len() / 2),
        "{cap:?}: {hits:?}"
    );
    let (s, r) = cap.pair::<()>();
    for _ in 0..COUNT {
        s.send(()).unwrap();
    }
    let mut hits = [0usize; 5];
    for _ in 0..COUNT {
        corio::select! {
            recv(r) -> _ => hits[0] += 1,
            recv(r) -> _ => hits[1] += 1,
            recv(r) -> _ => hits[2] += 1,
            recv(r) -> _ => hits[3] += 1,
            recv(r) -> _ => hits[4] += 1,
        }
    }
    assert!(
        hits.iter().all(|&x| x >= COUNT / hits.len() / 2),
        "{cap:?}: {hits:?}"
    );
    assert_eq!(r.len(), 0);
}

/// crossbeam zero.rs: `fairness`, `fairness_duplicates` — a receiving select and a sending
/// select meet on rendezvous channels; each side chooses every arm fairly.
fn selects_meeting_on_rendezvous_channels_choose_every_arm_fairly(on: (On, On)) {
    const COUNT: usize = 1000;
    let (s1, r1) = chan::bounded::<()>(0);
    let (s2, r2) = chan::bounded::<()>(0);
    let (rx_hits, tx_hits) = both(
        on,
        move || {
            let mut hits = [0usize; 2];
            for _ in 0..COUNT {
                corio::select! {
                    recv(r1) -> v => { v.unwrap(); hits[0] += 1 },
                    recv(r2) -> v => { v.unwrap(); hits[1] += 1 },
                }
            }
            hits
        },
        move || {
            let mut hits = [0usize; 2];
            for _ in 0..COUNT {
                corio::select! {
                    send(s1, ()) -> v => { v.unwrap(); hits[0] += 1 },
                    send(s2, ()) -> v => { v.unwrap(); hits[1] += 1 },
                }
            }
            hits
        },
    );
    for hits in [rx_hits, tx_hits] {
        assert!(hits.iter().all(|&x| x >= COUNT / 4), "{hits:?}");
    }
    let (s, r) = chan::bounded::<()>(0);
    let (rx_hits, tx_hits) = both(
        on,
        move || {
            let mut hits = [0usize; 5];
            for _ in 0..COUNT {
                corio::select! {
                    recv(r) -> _ => hits[0] += 1,
                    recv(r) -> _ => hits[1] += 1,
                    recv(r) -> _ => hits[2] += 1,
                    recv(r) -> _ => hits[3] += 1,
                    recv(r) -> _ => hits[4] += 1,
                }
            }
            hits
        },
        move || {
            let mut hits = [0usize; 5];
            for _ in 0..COUNT {
                corio::select! {
                    send(s, ()) -> _ => hits[0] += 1,
                    send(s, ()) -> _ => hits[1] += 1,
                    send(s, ()) -> _ => hits[2] += 1,
                    send(s, ()) -> _ => hits[3] += 1,
                    send(s, ()) -> _ => hits[4] += 1,
                }
            }
            hits
        },
    );
    for hits in [rx_hits, tx_hits] {
        assert!(hits.iter().all(|&x| x >= COUNT / 10), "{hits:?}");
    }
}

/// crossbeam array.rs, zero.rs, list.rs: `channel_through_channel` — each value carries the
/// receiver of the next channel, as `Box<dyn Any + Send>`.
fn a_chain_of_channels_each_sent_through_the_last(cap: Cap, count: usize, on: (On, On)) {
    type T = Box<dyn Any + Send>;
    let (s, r) = cap.pair::<T>();
    both(
        on,
        move || {
            let mut s = s;
            for _ in 0..count {
                let (new_s, new_r) = cap.pair::<T>();
                let new_r: T = Box::new(Some(new_r));
                s.send(new_r).ok().unwrap();
                s = new_s;
            }
        },
        move || {
            let mut r = r;
            for _ in 0..count {
                r = r
                    .recv()
                    .unwrap()
                    .downcast_mut::<Option<Receiver<T>>>()
                    .unwrap()
                    .take()
                    .unwrap();
            }
            // The last sender went with the sending side.
            assert_eq!(r.recv().err(), Some(RecvError));
        },
    );
}

/// crossbeam zero.rs: `recv_in_send` — a send arm whose value is received from the same
/// rendezvous channel (corio evaluates it before the select: see the single-threaded port).
/// crossbeam orders the three parties by sleeps; here the second receiver starts only once the
/// first value was taken, so that it cannot take that value in the select's stead.
fn a_send_arms_value_received_from_the_same_rendezvous_channel(on: (On, On)) {
    let (s, r) = chan::bounded::<i32>(0);
    let (taken_s, taken_r) = signal();
    let (s2, r2) = (s.clone(), r.clone());
    let receiver = start(on.0, move || {
        taken_r.recv().unwrap();
        r2.recv().unwrap()
    });
    let sender = start(on.1, move || {
        corio::sleep(MS);
        s2.send(6).unwrap(); // a rendezvous: done once the select's value expression took it
        taken_s.send(()).unwrap();
    });
    corio::select! {
        send(s, r.recv().unwrap() + 1) -> res => res.unwrap(),
    }
    sender.join();
    assert_eq!(receiver.join(), 7);
}

// ---------------------------------------------------------------------------------------------
// The rest of std's mpsc suite (crossbeam mpsc.rs), with threads as coroutines
// ---------------------------------------------------------------------------------------------

/// crossbeam zero.rs: `stress_iter`'s premise, on its own — `try_iter` on a rendezvous channel
/// takes what waiting senders hold (that is what is "there now") and stops without waiting
/// once none waits.
fn try_iter_on_a_rendezvous_channel_takes_what_waiting_senders_hold(on: On) {
    let (s, r) = chan::bounded::<usize>(0);
    let hs: Vec<_> = (0..3)
        .map(|i| {
            let s = s.clone();
            start(on, move || s.send(i))
        })
        .collect();
    let mut got = Vec::new();
    poll_until(|| {
        got.extend(r.try_iter());
        (got.len() >= 3).then_some(())
    });
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2]);
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(r.try_iter().count(), 0);
    drop(s);
    assert_eq!(r.try_iter().count(), 0);
}

/// crossbeam array.rs `send_timeout_nonfull_expired`, list.rs `recv_timeout_nonempty_expired`,
/// against a peer that waits: on a rendezvous channel a zero timeout completes when its
/// counterpart waits (a receive in `recv`, a send in `send`); each attempt that finds none
/// times out, a send handing its value back, and every value arrives exactly once. (Two
/// zero timeouts never meet: neither waits.)
fn zero_timeouts_meet_a_waiting_peer_on_a_rendezvous_channel(on: (On, On)) {
    let (s, r) = chan::bounded::<usize>(0);
    let ((), ()) = both(
        on,
        move || {
            for i in 0..20 {
                if i % 2 == 1 {
                    s.send(i).unwrap(); // waits for the receiver's zero timeout
                    continue;
                }
                let mut v = i;
                let mut tries = 0u64;
                loop {
                    match s.send_timeout(v, Duration::ZERO) {
                        Ok(()) => break,
                        Err(SendTimeoutError::Timeout(back)) => v = back,
                        Err(e) => panic!("{e:?}"),
                    }
                    tries += 1;
                    if tries.is_multiple_of(16) {
                        pause();
                    }
                }
                assert_eq!(v, i);
            }
        },
        move || {
            for i in 0..20 {
                if i % 2 == 0 {
                    assert_eq!(r.recv(), Ok(i)); // waits for the sender's zero timeout
                    continue;
                }
                let mut tries = 0u64;
                let got = loop {
                    match r.recv_timeout(Duration::ZERO) {
                        Ok(v) => break v,
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(e) => panic!("{e:?}"),
                    }
                    tries += 1;
                    if tries.is_multiple_of(16) {
                        pause();
                    }
                };
                assert_eq!(got, i);
            }
            assert_eq!(r.recv(), Err(RecvError));
        },
    );
}

/// Many plain threads with receive timeouts at once (the timers of threads outside the
/// runtime): each lasts at least its duration and none is lost.
fn many_threads_time_out_at_once_each_after_its_duration() {
    let (_s, r) = never::<u8>();
    let hs: Vec<_> = (0..8)
        .map(|k| {
            let r = r.clone();
            std::thread::spawn(move || {
                for i in 0..20u32 {
                    let d = Duration::from_micros(50 * u64::from((k + i) % 7));
                    let start = Instant::now();
                    assert_eq!(r.recv_timeout(d), Err(RecvTimeoutError::Timeout));
                    assert!(start.elapsed() >= d);
                }
            })
        })
        .collect();
    assert!(poll_until(|| hs
        .iter()
        .all(|h| h.is_finished())
        .then_some(true)));
    hs.into_iter().for_each(|h| h.join().unwrap());
}

/// std mpsc (crossbeam mpsc.rs): `port_gone_concurrent`, `port_gone_concurrent_shared` — a
/// sender that never waits (unbounded, or buffered with a receiver keeping up) sends in a
/// tight loop until the receiver, after one value, goes; and `chan_gone_concurrent`, the
/// mirror.
fn a_tight_send_loop_ends_when_the_receiver_goes(cap: Cap, on: (On, On)) {
    let (tx, rx) = cap.pair::<i32>();
    let tx2 = tx.clone();
    both(
        on,
        move || while tx.send(1).is_ok() && tx2.send(1).is_ok() {},
        move || {
            rx.recv().unwrap();
        },
    );
    let (tx, rx) = cap.pair::<i32>();
    let (received, ()) = both(
        on,
        move || {
            let mut n = 0;
            while rx.recv().is_ok() {
                n += 1;
            }
            n
        },
        move || {
            tx.send(1).unwrap();
            tx.send(1).unwrap();
        },
    );
    assert_eq!(received, 2, "{cap:?}");
}

/// std mpsc (crossbeam mpsc.rs): `stress_shared`, `shared_chan_stress` — many senders, one
/// receiver, which then finds nothing more.
fn many_senders_one_receiver_get_everything_then_nothing(cap: Cap, senders: usize, each: usize) {
    let (tx, rx) = cap.pair::<usize>();
    let receiver = corio::go(move || {
        let mut got = Vec::with_capacity(senders * each);
        for _ in 0..senders * each {
            got.push(rx.recv().unwrap());
        }
        assert!(rx.try_recv().is_err());
        got
    });
    let hs: Vec<_> = (0..senders)
        .map(|k| {
            let tx = tx.clone();
            corio::go(move || (0..each).for_each(|i| tx.send(k * each + i).unwrap()))
        })
        .collect();
    drop(tx);
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_each_once(
        receiver.join().unwrap(),
        senders * each,
        &format!("{cap:?}"),
    );
}

/// std mpsc (crossbeam mpsc.rs): `send_from_outside_runtime`, `recv_from_outside_runtime` —
/// plain threads outside the runtime send to and receive from coroutines.
fn threads_outside_the_runtime_talk_to_coroutines(cap: Cap) {
    let (tx1, rx1) = cap.pair::<()>();
    let (tx2, rx2) = cap.pair::<i32>();
    let co = corio::go(move || {
        tx1.send(()).unwrap();
        for _ in 0..40 {
            assert_eq!(rx2.recv().unwrap(), 1);
        }
    });
    rx1.recv().unwrap();
    let t = std::thread::spawn(move || {
        for _ in 0..40 {
            tx2.send(1).unwrap();
        }
    });
    co.join().unwrap();
    let (tx, rx) = cap.pair::<i32>();
    let t2 = std::thread::spawn(move || {
        for _ in 0..40 {
            assert_eq!(rx.recv().unwrap(), 1);
        }
    });
    for _ in 0..40 {
        tx.send(1).unwrap();
    }
    // The threads are done once their channels say so (no std join from a coroutine).
    assert!(poll_until(
        || (t.is_finished() && t2.is_finished()).then_some(true)
    ));
    t.join().unwrap();
    t2.join().unwrap();
}

/// std mpsc (crossbeam mpsc.rs): `oneshot_multi_thread_close_stress`,
/// `oneshot_multi_thread_send_close_stress`, `oneshot_multi_thread_recv_close_stress` — the
/// two ends of a fresh channel go (or send, or receive) at the same time on two sides; the
/// receive sees "closed", the send either succeeds or hands its value back.
fn ends_going_at_once_race_cleanly(cap: Cap, rounds: usize, on: (On, On)) {
    for i in 0..rounds {
        let (tx, rx) = cap.pair::<usize>();
        both(on, move || drop(rx), move || drop(tx));
        let (tx, rx) = cap.pair::<usize>();
        let ((), sent) = both(on, move || drop(rx), move || tx.send(i));
        if let Err(SendError(v)) = sent {
            assert_eq!(v, i);
        }
        let (tx, rx) = cap.pair::<usize>();
        let (got, ()) = both(on, move || rx.recv(), move || drop(tx));
        assert_eq!(got, Err(RecvError));
    }
}

/// std mpsc (crossbeam mpsc.rs): `stream_send_recv_stress` — a chain of coroutines, each
/// sending one value and starting the next sender; another chain receiving them in order.
fn chains_of_coroutines_send_and_receive_in_turn(cap: Cap, rounds: usize) {
    fn send(tx: Sender<Box<i32>>, i: i32) {
        if i < 10 {
            corio::go(move || {
                tx.send(Box::new(i)).unwrap();
                send(tx, i + 1);
            });
        }
    }
    fn recv(rx: Receiver<Box<i32>>, i: i32, done: Sender<()>) {
        if i == 10 {
            done.send(()).unwrap();
            return;
        }
        corio::go(move || {
            assert_eq!(*rx.recv().unwrap(), i);
            recv(rx, i + 1, done);
        });
    }
    let (done_tx, done_rx) = chan::unbounded();
    for _ in 0..rounds {
        let (tx, rx) = cap.pair();
        send(tx, 0);
        recv(rx, 0, done_tx.clone());
    }
    drop(done_tx);
    assert_eq!(done_rx.iter().count(), rounds, "{cap:?}: a chain broke");
}

/// std mpsc (crossbeam mpsc.rs): `stress_recv_timeout_two_threads` — receive timeouts
/// against a sender that pauses longer than them; the loop ends at "disconnected" having
/// counted every value.
fn receive_timeouts_against_a_slow_sender_count_every_value(cap: Cap, count: usize, on: (On, On)) {
    let (tx, rx) = cap.pair::<usize>();
    let timeout = MS;
    let ((), received) = both(
        on,
        move || {
            for i in 0..count {
                if i % 2 == 0 {
                    corio::sleep(timeout * 2);
                }
                tx.send(1).unwrap();
            }
        },
        move || {
            let mut received = 0;
            loop {
                match rx.recv_timeout(timeout) {
                    Ok(n) => {
                        assert_eq!(n, 1);
                        received += 1;
                    }
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            received
        },
    );
    assert_eq!(received, count, "{cap:?}");
}

/// std mpsc (crossbeam mpsc.rs): `stress_recv_timeout_shared` — many senders that each send
/// once at a different moment, a receiver with receive timeouts until "disconnected".
fn receive_timeouts_against_many_staggered_senders_count_every_value(cap: Cap, senders: usize) {
    let (tx, rx) = cap.pair::<usize>();
    let hs: Vec<_> = (0..senders)
        .map(|i| {
            let tx = tx.clone();
            corio::go(move || {
                corio::sleep(Duration::from_micros(200) * i as u32);
                tx.send(i).unwrap();
            })
        })
        .collect();
    drop(tx);
    let mut got = Vec::new();
    loop {
        match rx.recv_timeout(MS / 2) {
            Ok(n) => got.push(n),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_each_once(got, senders, &format!("{cap:?}"));
}

/// std mpsc (crossbeam mpsc.rs): `destroy_upgraded_shared_port_when_sender_still_active` — a
/// receiver that got its value and went, while the sending side clones its sender, drops the
/// original and sends again, neither livelocks nor loses the second send's error.
fn a_receiver_going_while_the_sender_is_cloned_and_sends(cap: Cap) {
    let (tx, rx) = cap.pair::<()>();
    let (tx2, rx2) = chan::unbounded::<()>();
    let t = corio::go(move || {
        rx.recv().unwrap();
        drop(rx);
        tx2.send(()).unwrap();
    });
    for _ in 0..50 {
        corio::yield_now();
    }
    let tx3 = tx.clone();
    drop(tx);
    tx3.send(()).unwrap();
    rx2.recv().unwrap();
    t.join().unwrap();
    assert_eq!(tx3.send(()), Err(SendError(())));
}

/// std mpsc (crossbeam mpsc.rs): sync `issue_15761` — two buffered channels crossed between
/// two sides, 100 times: no wake-up is lost.
fn two_crossed_buffered_channels_lose_no_wake_up(on: (On, On)) {
    for _ in 0..100 {
        let (tx1, rx1) = chan::bounded::<()>(3);
        let (tx2, rx2) = chan::bounded::<()>(3);
        both(
            on,
            move || {
                rx1.recv().unwrap();
                tx2.try_send(()).unwrap();
            },
            move || {
                tx1.try_send(()).unwrap();
                rx2.recv().unwrap();
            },
        );
    }
}

/// std mpsc (crossbeam mpsc.rs): select `unblocks`, `both_ready`, `cloning`, `cloning2`,
/// `cloning3`, `oneshot_data_waiting`, `stream_data_waiting`, `shared_data_waiting`, `sync2`
/// — a waiting select is completed by a value sent later, and by a close, and not by a clone
/// of a sender coming and going.
fn a_waiting_select_is_completed_by_what_comes_later(on: On) {
    // unblocks
    let (tx1, rx1) = chan::unbounded::<i32>();
    let (_tx2, rx2) = chan::unbounded::<i32>();
    let (tx3, rx3) = chan::unbounded::<i32>();
    let t = start(on, move || {
        corio::sleep(MS);
        tx1.send(1).unwrap();
        rx3.recv().unwrap();
        corio::sleep(MS);
    });
    corio::select! {
        recv(rx1) -> a => assert_eq!(a, Ok(1)),
        recv(rx2) -> _ => panic!("rx2"),
    }
    tx3.send(1).unwrap();
    corio::select! {
        recv(rx1) -> a => assert_eq!(a, Err(RecvError)),
        recv(rx2) -> _ => panic!("rx2"),
    }
    t.join();

    // both_ready
    let (tx1, rx1) = chan::unbounded::<i32>();
    let (tx2, rx2) = chan::unbounded::<i32>();
    let (tx3, rx3) = chan::unbounded::<()>();
    let t = start(on, move || {
        corio::sleep(MS);
        tx1.send(1).unwrap();
        tx2.send(2).unwrap();
        rx3.recv().unwrap();
    });
    let mut got = Vec::new();
    for _ in 0..2 {
        corio::select! {
            recv(rx1) -> a => got.push(a.unwrap()),
            recv(rx2) -> a => got.push(a.unwrap()),
        }
    }
    got.sort_unstable();
    assert_eq!(got, [1, 2]);
    assert_eq!(rx1.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(rx2.try_recv(), Err(TryRecvError::Empty));
    tx3.send(()).unwrap();
    t.join();

    // cloning / cloning2: a clone of the sender made and dropped while the select waits
    // is no value.
    let (tx1, rx1) = chan::unbounded::<i32>();
    let (_tx2, rx2) = chan::unbounded::<i32>();
    let (tx3, rx3) = chan::unbounded::<()>();
    let t = start(on, move || {
        rx3.recv().unwrap();
        drop(tx1.clone());
        assert_eq!(rx3.try_recv(), Err(TryRecvError::Empty));
        tx1.send(2).unwrap();
        rx3.recv().unwrap();
    });
    tx3.send(()).unwrap();
    corio::select! {
        recv(rx1) -> v => assert_eq!(v, Ok(2)),
        recv(rx2) -> _ => panic!("rx2"),
    }
    tx3.send(()).unwrap();
    t.join();

    // cloning3: the waiting select is on the other side.
    let (tx1, rx1) = chan::unbounded::<()>();
    let (tx2, rx2) = chan::unbounded::<()>();
    let (tx3, rx3) = chan::unbounded::<()>();
    let t = start(on, move || {
        corio::select! {
            recv(rx1) -> _ => panic!("rx1 completed by a clone of its sender coming and going"),
            recv(rx2) -> v => assert_eq!(v, Ok(())),
        }
        tx3.send(()).unwrap();
    });
    corio::sleep(MS);
    drop(tx1.clone());
    tx2.send(()).unwrap();
    rx3.recv().unwrap();
    t.join();
    drop(tx1);

    // oneshot/stream/shared_data_waiting, sync2: a select waits, then the value comes.
    for shape in 0..4 {
        let (tx1, rx1) = if shape == 3 {
            chan::bounded::<()>(0)
        } else {
            chan::unbounded::<()>()
        };
        let (tx2, rx2) = chan::unbounded::<()>();
        if shape == 1 {
            tx1.send(()).unwrap();
            tx1.send(()).unwrap();
            rx1.recv().unwrap();
            rx1.recv().unwrap();
        }
        if shape == 2 {
            drop(tx1.clone());
            tx1.send(()).unwrap();
            rx1.recv().unwrap();
        }
        let t = start(on, move || {
            corio::select! { recv(rx1) -> v => assert_eq!(v, Ok(())) }
            tx2.send(()).unwrap();
        });
        corio::sleep(MS);
        tx1.send(()).unwrap();
        rx2.recv().unwrap();
        t.join();
    }
}

/// std mpsc (crossbeam mpsc.rs): select `stress` — alternate sends on two channels, each
/// received by a select in turn, in step through a third.
fn a_select_takes_alternate_values_in_step(on: On, amt: usize) {
    let (tx1, rx1) = chan::unbounded::<usize>();
    let (tx2, rx2) = chan::unbounded::<usize>();
    let (tx3, rx3) = chan::unbounded::<()>();
    let t = start(on, move || {
        for i in 0..amt {
            if i % 2 == 0 {
                tx1.send(i).unwrap();
            } else {
                tx2.send(i).unwrap();
            }
            rx3.recv().unwrap();
        }
    });
    for i in 0..amt {
        corio::select! {
            recv(rx1) -> v => assert!(i % 2 == 0 && v == Ok(i)),
            recv(rx2) -> v => assert!(i % 2 == 1 && v == Ok(i)),
        }
        tx3.send(()).unwrap();
    }
    t.join();
}

/// std mpsc (crossbeam mpsc.rs): select `sync3` — a rendezvous channel and an unbounded one
/// both get a value from a thread each; the select takes either, the other is still there.
fn a_select_over_a_rendezvous_and_an_unbounded_channel_takes_one_and_leaves_the_other(on: On) {
    let (tx1, rx1) = chan::bounded::<i32>(0);
    let (tx2, rx2) = chan::unbounded::<i32>();
    let t = start(on, move || tx1.send(1).unwrap());
    let t2 = start(on, move || tx2.send(2).unwrap());
    corio::select! {
        recv(rx1) -> n => {
            assert_eq!(n, Ok(1));
            assert_eq!(rx2.recv(), Ok(2));
        },
        recv(rx2) -> n => {
            assert_eq!(n, Ok(2));
            assert_eq!(rx1.recv(), Ok(1));
        },
    }
    t.join();
    t2.join();
}

// ---------------------------------------------------------------------------------------------
// iter.rs, never.rs and after.rs: the ones with threads
// ---------------------------------------------------------------------------------------------

/// crossbeam iter.rs: `nested_recv_iter`, `recv_iter_break`; std mpsc `test_nested_recv_iter`,
/// `test_recv_iter_break`.
fn iterators_sum_until_the_end_and_break_early(cap: Cap, on: On) {
    let (s, r) = cap.pair::<i32>();
    let (total_s, total_r) = chan::unbounded::<i32>();
    let t = start(on, move || {
        let acc: i32 = r.iter().sum();
        total_s.send(acc).unwrap();
    });
    s.send(3).unwrap();
    s.send(1).unwrap();
    s.send(2).unwrap();
    drop(s);
    assert_eq!(total_r.recv(), Ok(6), "{cap:?}");
    t.join();

    let (s, r) = cap.pair::<i32>();
    let (count_s, count_r) = chan::unbounded();
    let t = start(on, move || {
        let mut count = 0;
        for x in r.iter() {
            if count >= 3 {
                break;
            }
            count += x;
        }
        count_s.send(count).unwrap();
    });
    s.send(2).unwrap();
    s.send(2).unwrap();
    s.send(2).unwrap();
    // The loop breaks on this one (it takes it first) or the receiver is gone: either is fine.
    let _ = s.send_timeout(2, LONG);
    drop(s);
    assert_eq!(count_r.recv(), Ok(4), "{cap:?}");
    t.join();
}

/// crossbeam never.rs: `tick_n` — a ticking channel (a coroutine sending on an `interval`)
/// counted ten times, then switched to a channel nobody sends on, where only the `after` arm
/// can end the loop. The `after` arm is an hour while the ticker is live, so that a loaded
/// machine that runs the ticker late cannot end the loop early.
fn ten_ticks_then_a_channel_nobody_sends_on_until_after(on: On) {
    let (tick_s, tick_r) = chan::bounded::<Instant>(1);
    let ticker = start(on, move || {
        let mut interval = corio::time::interval(MS);
        while tick_s.send(interval.tick()).is_ok() {}
    });
    let (_never_s, never_r) = never::<Instant>();
    let mut r = &tick_r;
    let mut step = 0;
    let mut last: Option<Instant> = None;
    loop {
        let wait = if r.same_channel(&tick_r) {
            HOUR
        } else {
            5 * MS
        };
        corio::select! {
            recv(r) -> t => {
                let t = t.unwrap();
                assert!(last.is_none_or(|l| t > l), "ticks out of order");
                last = Some(t);
                step += 1;
            },
            after(wait) => break,
        }
        if step == 10 {
            r = &never_r;
        }
    }
    assert_eq!(step, 10);
    drop(tick_r);
    ticker.join();
}

/// crossbeam after.rs: `fire`, `recv` — the `after` arm fires no earlier than its duration,
/// from a coroutine, a thread, or (`select_async!`) a task.
fn an_after_arm_fires_no_earlier_than_its_duration(on: On) {
    let t = start(on, || {
        let (_s, r) = never::<i32>();
        let start = Instant::now();
        corio::select! {
            recv(r) -> _ => panic!("a channel nobody sends on"),
            after(10 * MS) => {},
        }
        start.elapsed()
    });
    assert!(t.join() >= 10 * MS);
    let task = start_task(async {
        let (_s, r) = never::<i32>();
        let start = Instant::now();
        corio::select_async! {
            recv(r) -> _ => panic!("a channel nobody sends on"),
            after(10 * MS) => {},
        }
        start.elapsed()
    });
    assert!(task.join() >= 10 * MS);
}

/// crossbeam after.rs: `recv_race`, adapted (one `after` arm per select): a value that comes
/// first beats an `after` arm of an hour; an `after` arm beats a value that is sent only once
/// the select has returned.
fn an_after_arm_loses_to_a_value_first_and_beats_a_value_later(on: On) {
    let (s, r) = chan::bounded::<i32>(0);
    let t = start(on, move || {
        corio::sleep(5 * MS);
        s.send(1).unwrap();
    });
    corio::select! {
        recv(r) -> v => assert_eq!(v, Ok(1)),
        after(HOUR) => panic!("the hour passed"),
    }
    t.join();

    let (s, r) = chan::bounded::<i32>(0);
    let (go_s, go_r) = signal();
    let t = start(on, move || {
        go_r.recv().unwrap();
        s.send(2)
    });
    corio::select! {
        recv(r) -> _ => panic!("nothing was sent yet"),
        after(5 * MS) => {},
    }
    go_s.send(()).unwrap();
    assert_eq!(r.recv(), Ok(2));
    assert_eq!(t.join(), Ok(()));
}

/// crossbeam after.rs: `select` — several selecting sides over the same "after" sources
/// (here channels fed at staggered moments by timer coroutines, since corio's `after` is an
/// arm, not a channel), each looping with a short `after` of its own: every value is taken
/// exactly once, whichever side took it and however its timer raced the hand-off.
fn selects_with_short_afters_over_timed_sources_take_each_value_once(cap: Cap, selectors: On) {
    const SOURCES: usize = 8;
    const EACH: usize = 10;
    let chans: Vec<(Sender<usize>, Receiver<usize>)> = (0..SOURCES).map(|_| cap.pair()).collect();
    let feeders: Vec<_> = chans
        .iter()
        .enumerate()
        .map(|(k, (s, _))| {
            let s = s.clone();
            corio::go(move || {
                for i in 0..EACH {
                    corio::sleep(Duration::from_micros(100 * ((k + i) % 5) as u64));
                    s.send(k * EACH + i).unwrap();
                }
            })
        })
        .collect();
    let got = Arc::new(Mutex::new(Vec::new()));
    let (done_s, done_r) = chan::bounded::<()>(0);
    let sides: Vec<_> = (0..4)
        .map(|_| {
            let rs: Vec<Receiver<usize>> = chans.iter().map(|(_, r)| r.clone()).collect();
            let (got, done_r) = (got.clone(), done_r.clone());
            start(selectors, move || {
                let mut timeouts = 0;
                loop {
                    corio::select! {
                        recv(rs[0]) -> v => got.lock().unwrap().push(v.unwrap()),
                        recv(rs[1]) -> v => got.lock().unwrap().push(v.unwrap()),
                        recv(rs[2]) -> v => got.lock().unwrap().push(v.unwrap()),
                        recv(rs[3]) -> v => got.lock().unwrap().push(v.unwrap()),
                        recv(rs[4]) -> v => got.lock().unwrap().push(v.unwrap()),
                        recv(rs[5]) -> v => got.lock().unwrap().push(v.unwrap()),
                        recv(rs[6]) -> v => got.lock().unwrap().push(v.unwrap()),
                        recv(rs[7]) -> v => got.lock().unwrap().push(v.unwrap()),
                        recv(done_r) -> _ => break,
                        after(Duration::from_micros(300)) => timeouts += 1,
                    }
                }
                timeouts
            })
        })
        .collect();
    feeders.into_iter().for_each(|h| h.join().unwrap());
    poll_until(|| (got.lock().unwrap().len() >= SOURCES * EACH).then_some(()));
    drop(done_s);
    sides.into_iter().for_each(|s| {
        s.join();
    });
    let got = std::mem::take(&mut *got.lock().unwrap());
    assert_each_once(got, SOURCES * EACH, &format!("{cap:?}"));
}

/// crossbeam after.rs: `select`, the mirror (corio): sides that *send* through a select with a
/// short `after`, retried until the send arm is chosen, against slow receivers: a value
/// counts as sent only if the send arm was chosen, and exactly the values so counted arrive
/// (an `after` that fires as a receiver takes the value reports the send, not the timeout).
fn selects_sending_with_short_afters_deliver_exactly_what_they_report(cap: Cap, senders: On) {
    const SIDES: usize = 4;
    const EACH: usize = 60;
    let (s, r) = cap.pair::<usize>();
    let sides: Vec<Started<(Vec<usize>, usize)>> = (0..SIDES)
        .map(|k| {
            let s = s.clone();
            start(senders, move || {
                let mut sent = Vec::new();
                let mut timeouts = 0;
                for v in k * EACH..(k + 1) * EACH {
                    loop {
                        let done = corio::select! {
                            send(s, v) -> res => { res.unwrap(); true },
                            after(Duration::from_micros(100)) => false,
                        };
                        if done {
                            sent.push(v);
                            break;
                        }
                        timeouts += 1;
                    }
                }
                (sent, timeouts)
            })
        })
        .collect();
    drop(s);
    let receivers: Vec<_> = (0..2)
        .map(|k| {
            let r = r.clone();
            corio::go(move || {
                let mut got = Vec::new();
                while let Ok(v) = r.recv() {
                    got.push(v);
                    if (v + k) % 3 == 0 {
                        corio::sleep(Duration::from_micros(150));
                    }
                }
                got
            })
        })
        .collect();
    drop(r);
    let mut sent = Vec::new();
    for side in sides {
        sent.extend(side.join().0);
    }
    assert_each_once(sent, SIDES * EACH, &format!("{cap:?}: sent"));
    let got: Vec<usize> = receivers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert_each_once(got, SIDES * EACH, &format!("{cap:?}: received"));
}

/// crossbeam after.rs: `stress_clone`, adapted to what corio has to race: both ends cloned
/// and dropped by ten sides at once never close the channel while an original lives; it
/// closes when the last sender goes.
fn handles_cloned_and_dropped_at_once_never_close_the_channel_early(cap: Cap, on: On) {
    for _ in 0..20 {
        let (s, r) = cap.pair::<usize>();
        let hs: Vec<_> = (0..10)
            .map(|_| {
                let (s, r) = (s.clone(), r.clone());
                start(on, move || {
                    let _ = r.try_recv();
                    for _ in 0..50 {
                        drop(s.clone());
                        drop(r.clone());
                        assert!(!s.is_closed(), "closed while the original ends live");
                        pause();
                    }
                })
            })
            .collect();
        hs.into_iter().for_each(Started::join);
        assert!(!r.is_closed());
        if cap.room() > 0 {
            s.send(1).unwrap();
        }
        drop(s);
        assert!(r.is_closed());
        if cap.room() > 0 {
            assert_eq!(r.recv(), Ok(1));
        }
        assert_eq!(r.try_recv(), Err(TryRecvError::Disconnected));
    }
}

// ---------------------------------------------------------------------------------------------
// Adversarial: every kind of waiter on one channel, drops, timeouts, len, closes
// ---------------------------------------------------------------------------------------------

/// Every kind of waiter on one channel: senders in a coroutine (`send`), a thread (`send`), a
/// task (`send_async`, and one `send_timeout_async`), and a thread polling `send_async` with an
/// executor that knows nothing of corio; receivers in a coroutine (`iter`), a thread (`iter`),
/// a task (`recv_async`), a task (the `Stream`), a task (`select_async!`), a coroutine
/// (`block_on` of the `Stream`) and a thread (a foreign executor polling `recv_async`). Every
/// value arrives exactly once.
fn every_kind_of_waiter_sends_and_receives_on_one_channel(cap: Cap, each: usize) {
    const SENDERS: usize = 5;
    let (s, r) = cap.pair::<usize>();
    let mut senders = Vec::new();
    for k in 0..SENDERS {
        let s = s.clone();
        let values = (k * each)..((k + 1) * each);
        senders.push(match k {
            0 => start(On::Go, move || values.for_each(|v| s.send(v).unwrap())),
            1 => start(On::Thread, move || values.for_each(|v| s.send(v).unwrap())),
            2 => start_task(async move {
                for v in values {
                    s.send_async(v).await.unwrap();
                }
            }),
            3 => start_task(async move {
                for v in values {
                    s.send_timeout_async(v, LONG).await.unwrap();
                    if v % 16 == 0 {
                        corio::yield_now_async().await;
                    }
                }
            }),
            _ => start(On::Thread, move || {
                for v in values {
                    foreign_block_on(s.send_async(v)).unwrap();
                }
            }),
        });
    }
    drop(s);
    let receivers: Vec<Started<Vec<usize>>> = (0..7)
        .map(|k| {
            let r = r.clone();
            match k {
                0 => start(On::Go, move || r.iter().collect()),
                1 => start(On::Thread, move || r.iter().collect()),
                2 => start_task(async move {
                    let mut got = Vec::new();
                    while let Ok(v) = r.recv_async().await {
                        got.push(v);
                    }
                    got
                }),
                3 => start_task(async move {
                    let mut r = r;
                    let mut got = Vec::new();
                    while let Some(v) = r.next().await {
                        got.push(v);
                    }
                    got
                }),
                4 => start_task(async move {
                    let mut got = Vec::new();
                    loop {
                        corio::select_async! {
                            recv(r) -> v => match v {
                                Ok(v) => got.push(v),
                                Err(RecvError) => return got,
                            },
                            after(HOUR) => panic!("an hour"),
                        }
                    }
                }),
                5 => start(On::Go, move || {
                    let mut r = r;
                    let mut got = Vec::new();
                    while let Some(v) = corio::block_on(r.next()) {
                        got.push(v);
                    }
                    got
                }),
                _ => start(On::Thread, move || {
                    let mut got = Vec::new();
                    while let Ok(v) = foreign_block_on(r.recv_async()) {
                        got.push(v);
                    }
                    got
                }),
            }
        })
        .collect();
    drop(r);
    senders.into_iter().for_each(Started::join);
    let got: Vec<usize> = receivers.into_iter().flat_map(Started::join).collect();
    assert_each_once(got, SENDERS * each, &format!("{cap:?}"));
}

/// Sends with tiny timeouts from a coroutine, a task and a thread, against receives with tiny
/// timeouts on all three, retried until every sender is done: every send that returned `Ok`
/// is received exactly once, every timed-out send handed back the value it was given, and
/// nothing else arrives (a timeout racing a hand-off loses nothing and duplicates nothing).
fn timeouts_racing_hand_offs_lose_nothing_across_kinds(cap: Cap, each: usize) {
    let (s, r) = cap.pair::<usize>();
    let tiny = Duration::from_micros(50);
    let blocking_sender = |s: Sender<usize>, values: std::ops::Range<usize>| {
        move || {
            let mut sent = Vec::new();
            for v in values {
                loop {
                    match s.send_timeout(v, tiny) {
                        Ok(()) => {
                            sent.push(v);
                            break;
                        }
                        Err(SendTimeoutError::Timeout(back)) => assert_eq!(back, v),
                        Err(e) => panic!("{e:?}"),
                    }
                }
            }
            sent
        }
    };
    let task_sender = |s: Sender<usize>, values: std::ops::Range<usize>| async move {
        let mut sent = Vec::new();
        for v in values {
            loop {
                match s.send_timeout_async(v, tiny).await {
                    Ok(()) => {
                        sent.push(v);
                        break;
                    }
                    Err(SendTimeoutError::Timeout(back)) => assert_eq!(back, v),
                    Err(e) => panic!("{e:?}"),
                }
            }
        }
        sent
    };
    let senders: Vec<Started<Vec<usize>>> = vec![
        start(On::Go, blocking_sender(s.clone(), 0..each)),
        start(On::Thread, blocking_sender(s.clone(), each..2 * each)),
        start_task(task_sender(s.clone(), 2 * each..3 * each)),
    ];
    drop(s);
    let blocking_receiver = |r: Receiver<usize>| {
        move || {
            let mut got = Vec::new();
            loop {
                match r.recv_timeout(tiny) {
                    Ok(v) => got.push(v),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return got,
                }
            }
        }
    };
    let task_receiver = |r: Receiver<usize>| async move {
        let mut got = Vec::new();
        loop {
            match r.recv_timeout_async(tiny).await {
                Ok(v) => got.push(v),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return got,
            }
        }
    };
    let receivers: Vec<Started<Vec<usize>>> = vec![
        start(On::Go, blocking_receiver(r.clone())),
        start(On::Thread, blocking_receiver(r.clone())),
        start_task(task_receiver(r.clone())),
    ];
    drop(r);
    let sent: Vec<usize> = senders.into_iter().flat_map(Started::join).collect();
    assert_eq!(sent.len(), 3 * each);
    let got: Vec<usize> = receivers.into_iter().flat_map(Started::join).collect();
    assert_each_once(got, 3 * each, &format!("{cap:?}"));
}

/// What happened to the values of one run of
/// [`every_value_is_dropped_once_through_random_sends_receives_and_a_close`].
#[derive(Debug, Default)]
struct Fates {
    received: usize,
    kept_by_senders: usize,
    left_at_close: usize,
}

/// Values sent by every means (send, try_send, send_timeout, a task's send_async), received by
/// every means (recv, try_recv, recv_timeout, a task's recv_async), while the channel is
/// closed in mid-flight (after a random number of operations) and receivers leave at random:
/// each value is dropped exactly once in the end — received, handed back to (and dropped by) its sender, or
/// left in the closed channel and dropped with its last receiver.
fn every_value_is_dropped_once_through_random_sends_receives_and_a_close(
    cap: Cap,
    seed: u64,
) -> Fates {
    const PER: usize = 150;
    const SENDERS: usize = 4;
    let ledger = Ledger::new(SENDERS * PER);
    let (s, r) = cap.pair::<Tracked>();
    let ops = Arc::new(AtomicUsize::new(0));
    let kept_by_senders = Arc::new(AtomicUsize::new(0));
    let mut senders = Vec::new();
    for k in 0..SENDERS {
        let (s, ledger, ops, back) = (
            s.clone(),
            ledger.clone(),
            ops.clone(),
            kept_by_senders.clone(),
        );
        let mut rng = Rng::new(seed * 1_000 + k as u64);
        if k == SENDERS - 1 {
            senders.push(start_task(async move {
                for id in k * PER..(k + 1) * PER {
                    // A value handed back is dropped right here, by the sender.
                    if s.send_async(ledger.make(id)).await.is_err() {
                        back.fetch_add(1, SeqCst);
                    }
                    ops.fetch_add(1, SeqCst);
                }
            }));
            continue;
        }
        let on = if k == 0 { On::Thread } else { On::Go };
        senders.push(start(on, move || {
            for id in k * PER..(k + 1) * PER {
                let v = ledger.make(id);
                let failed = match rng.below(3) {
                    0 => s.send(v).is_err(),
                    1 => s.try_send(v).is_err(),
                    _ => s
                        .send_timeout(v, Duration::from_micros(rng.below(200)))
                        .is_err(),
                };
                if failed {
                    back.fetch_add(1, SeqCst);
                }
                ops.fetch_add(1, SeqCst);
                if rng.chance(5) {
                    pause();
                }
            }
        }));
    }
    drop(s);
    let received = Arc::new(AtomicUsize::new(0));
    let mut receivers = Vec::new();
    for k in 0..3 {
        let (r, ops, received) = (r.clone(), ops.clone(), received.clone());
        let mut rng = Rng::new(seed * 31 + k);
        if k == 2 {
            let quota = rng.below(2 * (SENDERS * PER) as u64) as usize;
            receivers.push(start_task(async move {
                for _ in 0..quota {
                    let Ok(v) = r.recv_async().await else { break };
                    drop(v);
                    received.fetch_add(1, SeqCst);
                    ops.fetch_add(1, SeqCst);
                }
            }));
            continue;
        }
        let on = if k == 0 { On::Thread } else { On::Go };
        receivers.push(start(on, move || {
            loop {
                // A receiver that leaves early: what is still buffered then stays for the
                // others (or for the last receiver's drop).
                if rng.chance(1) {
                    return;
                }
                let got = match rng.below(3) {
                    0 => r.recv().map_err(|_| true),
                    1 => r.try_recv().map_err(|e| e == TryRecvError::Disconnected),
                    _ => r
                        .recv_timeout(Duration::from_micros(rng.below(200)))
                        .map_err(|e| e == RecvTimeoutError::Disconnected),
                };
                match got {
                    Ok(v) => {
                        drop(v);
                        received.fetch_add(1, SeqCst);
                    }
                    Err(true) => return,
                    Err(false) => {}
                }
                ops.fetch_add(1, SeqCst);
            }
        }));
    }
    // Close in mid-flight: after a random number of operations (or a few milliseconds, if the
    // receivers all left and the senders wait for room).
    let mut rng = Rng::new(seed ^ 0xc105e);
    let threshold = rng.below(2 * (SENDERS * PER) as u64) as usize;
    let deadline = Instant::now() + 3 * MS;
    while ops.load(SeqCst) < threshold && Instant::now() < deadline {
        pause();
    }
    r.close(); // (false if the senders were all done and gone already)
    senders.into_iter().for_each(Started::join);
    receivers.into_iter().for_each(Started::join);
    // Everything is now received, handed back (and dropped) or in the channel; the last
    // receiver drops what is left.
    let fates = Fates {
        received: received.load(SeqCst),
        kept_by_senders: kept_by_senders.load(SeqCst),
        left_at_close: r.len(),
    };
    assert_eq!(
        fates.received + fates.kept_by_senders + fates.left_at_close,
        SENDERS * PER,
        "{cap:?} seed {seed}: {fates:?}"
    );
    let made = SENDERS * PER;
    let early: usize = (0..made).map(|id| ledger.dropped(id)).sum();
    assert_eq!(
        early,
        made - fates.left_at_close,
        "{cap:?} seed {seed}: {fates:?}"
    );
    drop(r);
    ledger.assert_each_dropped_once(made, &format!("{cap:?} seed {seed}"));
    fates
}

/// Coroutines and tasks blocked in sends (holding their values) and in receives when their
/// runtime is dropped: each value is dropped exactly once (by the cancelled send, or with the
/// channel's buffer), and nothing is received twice.
fn runtime_dropped_with_blocked_senders_and_receivers(workers: usize, cap: Cap) {
    const N: usize = 40;
    let rt = rt(workers);
    let ledger = Ledger::new(N);
    let (s, r) = cap.pair::<Tracked>();
    for id in 0..N {
        let (s, v) = (s.clone(), ledger.make(id));
        if id % 2 == 0 {
            rt.go(move || drop(s.send(v)));
        } else {
            rt.spawn(async move { drop(s.send_async(v).await) });
        }
    }
    let got = Arc::new(Mutex::new(Vec::new()));
    for k in 0..4 {
        let (r, got) = (r.clone(), got.clone());
        if k % 2 == 0 {
            rt.go(move || {
                for _ in 0..3 {
                    let v = r.recv().unwrap();
                    got.lock().unwrap().push(v.id);
                }
                // Then wait for ever, holding its receiver.
                let _ = r.recv_timeout(HOUR);
            });
        } else {
            rt.spawn(async move {
                for _ in 0..3 {
                    let v = r.recv_async().await.unwrap();
                    got.lock().unwrap().push(v.id);
                }
                let _ = r.recv_timeout_async(HOUR).await;
            });
        }
    }
    poll_until(|| (got.lock().unwrap().len() == 12).then_some(()));
    std::thread::sleep(2 * MS);
    drop(rt);
    drop(s);
    drop(r);
    let got = got.lock().unwrap().clone();
    assert_eq!(
        got.iter().collect::<HashSet<_>>().len(),
        got.len(),
        "received twice"
    );
    ledger.assert_each_dropped_once(N, &format!("{cap:?} on {workers} workers"));
}

/// Coroutines and tasks waiting in sends and receives are aborted (`JoinHandle::abort`) in
/// batches while values flow: every value made is dropped exactly once, none is received
/// twice, and every send that returned `Ok` was received or is still in the channel (an
/// aborted receive that had been handed a value gives it back, H6).
fn aborted_senders_and_receivers_lose_and_duplicate_nothing(cap: Cap, seed: u64) {
    const N: usize = 400;
    let ledger = Ledger::new(N);
    let made = Arc::new(Mutex::new(Vec::new()));
    let sent_ok = Arc::new(Mutex::new(Vec::new()));
    let got = Arc::new(Mutex::new(Vec::new()));
    let (s, r) = cap.pair::<Tracked>();
    let mut rng = Rng::new(seed);
    let mut next = 0;
    let mut aborted = 0;
    while next < N {
        let mut batch = Vec::new();
        for k in 0..4 {
            let ids = next..(next + 10).min(N);
            next = ids.end;
            let (s, ledger, made, sent_ok) =
                (s.clone(), ledger.clone(), made.clone(), sent_ok.clone());
            let make = move |id| {
                made.lock().unwrap().push(id);
                ledger.make(id)
            };
            batch.push(if k % 2 == 0 {
                corio::go(move || {
                    for id in ids {
                        if s.send(make(id)).is_ok() {
                            sent_ok.lock().unwrap().push(id);
                        }
                        corio::yield_now();
                    }
                })
            } else {
                corio::spawn(async move {
                    for id in ids {
                        if s.send_async(make(id)).await.is_ok() {
                            sent_ok.lock().unwrap().push(id);
                        }
                        corio::yield_now_async().await;
                    }
                })
            });
        }
        for k in 0..4 {
            let (r, got) = (r.clone(), got.clone());
            batch.push(if k % 2 == 0 {
                corio::go(move || {
                    while let Ok(v) = r.recv() {
                        got.lock().unwrap().push(v.id);
                    }
                })
            } else {
                corio::spawn(async move {
                    while let Ok(v) = r.recv_async().await {
                        got.lock().unwrap().push(v.id);
                    }
                })
            });
        }
        // Abort in mid-flight, in a random order, with yields in between.
        for _ in 0..rng.below(12) {
            corio::yield_now();
        }
        for i in (1..batch.len()).rev() {
            batch.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for h in &batch {
            h.abort();
            if rng.chance(30) {
                corio::yield_now();
            }
        }
        aborted += batch.len();
        for h in batch {
            let _ = h.join();
        }
    }
    drop(s);
    let left: Vec<usize> = r.try_iter().map(|v| v.id).collect();
    let got = std::mem::take(&mut *got.lock().unwrap());
    let mut all: Vec<usize> = got.iter().chain(&left).copied().collect();
    all.sort_unstable();
    let n = all.len();
    all.dedup();
    assert_eq!(
        all.len(),
        n,
        "{cap:?}: a value was received twice ({aborted} aborted)"
    );
    let all: HashSet<usize> = all.into_iter().collect();
    let lost: Vec<usize> = sent_ok
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|id| !all.contains(id))
        .collect();
    assert!(
        lost.is_empty(),
        "{cap:?}: sent with Ok, never received: {lost:?}"
    );
    drop(r);
    let made = std::mem::take(&mut *made.lock().unwrap());
    let made_set: HashSet<usize> = made.iter().copied().collect();
    assert_eq!(made_set.len(), made.len());
    let bad: Vec<(usize, usize)> = (0..N)
        .map(|id| (id, ledger.dropped(id)))
        .filter(|&(id, d)| d != usize::from(made_set.contains(&id)))
        .take(10)
        .collect();
    assert!(
        bad.is_empty(),
        "{cap:?}: (id, drops) of values not dropped once: {bad:?}"
    );
}

/// A coroutine aborted while it waits in `recv`, whose destructor then sends on a rendezvous
/// channel (so it waits during its unwind: docs/scheduler.md, "Cancellation and shutdown"):
/// the receive it was in is withdrawn (a value sent later goes to the next receiver) and the
/// destructor's send is delivered.
fn a_cancelled_coroutines_destructor_sends_on_a_rendezvous_channel(cap: Cap) {
    struct SendOnDrop(Option<(Sender<&'static str>, &'static str)>);
    impl Drop for SendOnDrop {
        fn drop(&mut self) {
            let (s, v) = self.0.take().unwrap();
            let _ = s.send(v);
        }
    }
    let (s, r) = cap.pair::<usize>();
    let (bye_s, bye_r) = chan::bounded::<&'static str>(0);
    let r2 = r.clone();
    let h = corio::go(move || {
        let _guard = SendOnDrop(Some((bye_s, "bye")));
        let _ = r2.recv();
        unreachable!("nothing was sent before the abort");
    });
    for _ in 0..10 {
        corio::yield_now();
    }
    h.abort();
    corio::sleep(MS);
    assert_eq!(bye_r.recv_timeout(LONG), Ok("bye"), "{cap:?}");
    assert!(h.join().unwrap_err().is_cancelled());
    let next = corio::go(move || r.recv());
    s.send(5)
        .unwrap_or_else(|_| panic!("{cap:?}: the channel closed"));
    assert_eq!(
        next.join().unwrap(),
        Ok(5),
        "{cap:?}: the aborted receive took the value"
    );
}

/// Closes from many sides at once: exactly one `close()` returns true, every waiter is woken.
fn concurrent_closes_exactly_one_wins(cap: Cap, on: On) {
    for _ in 0..20 {
        let (s, r) = cap.pair::<()>();
        let waiter = corio::go({
            let r = r.clone();
            move || r.recv()
        });
        let closers: Vec<_> = (0..6)
            .map(|k| {
                let (s, r) = (s.clone(), r.clone());
                start(on, move || if k % 2 == 0 { s.close() } else { r.close() })
            })
            .collect();
        let wins = closers
            .into_iter()
            .map(Started::join)
            .filter(|&w| w)
            .count();
        assert_eq!(wins, 1, "{cap:?}: {wins} closes returned true");
        assert!(!s.close() && !r.close());
        assert_eq!(waiter.join().unwrap(), Err(RecvError));
    }
}

/// Zero-sized values, with and without a `Drop`: counts, `len()` and drops come out exact
/// across four senders and four receivers.
fn zero_sized_values_are_counted_exactly(cap: Cap) {
    const EACH: usize = 500;
    let (s, r) = cap.pair::<()>();
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let s = s.clone();
            corio::go(move || (0..EACH).for_each(|_| s.send(()).unwrap()))
        })
        .collect();
    let rs: Vec<_> = (0..4)
        .map(|_| {
            let r = r.clone();
            corio::go(move || (0..EACH).filter(|_| r.recv().is_ok()).count())
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(
        rs.into_iter().map(|h| h.join().unwrap()).sum::<usize>(),
        4 * EACH
    );
    assert_eq!(r.len(), 0);
    // `()`s buffered: len counts them.
    let fill = cap.room().min(1000);
    for _ in 0..fill {
        s.try_send(()).unwrap();
    }
    assert_eq!(s.len(), fill);
    assert_eq!(r.try_iter().count(), fill);
}

/// A value truly of size zero whose drop is counted in a static (per test, so no other test
/// can touch it).
fn a_true_zero_sized_value_with_a_drop_is_dropped_once_each(cap: Cap) {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    static LOCK: Mutex<()> = Mutex::new(());
    struct Zst;
    impl Drop for Zst {
        fn drop(&mut self) {
            DROPS.fetch_add(1, SeqCst);
        }
    }
    assert_eq!(std::mem::size_of::<Zst>(), 0);
    // Both flavours' tests share the static: one at a time.
    let _one = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    DROPS.store(0, SeqCst);
    let (s, r) = cap.pair::<Zst>();
    let fill = cap.room().min(100);
    for _ in 0..fill {
        s.try_send(Zst).ok().unwrap();
    }
    let receiver = corio::go(move || {
        let mut n = 0;
        while let Ok(z) = r.recv() {
            drop(z);
            n += 1;
        }
        n
    });
    for _ in 0..100 {
        s.send(Zst).ok().unwrap();
    }
    drop(s);
    assert_eq!(receiver.join().unwrap(), fill + 100);
    assert_eq!(DROPS.load(SeqCst), fill + 100);
    let (s, r) = cap.pair::<Zst>();
    DROPS.store(0, SeqCst);
    for _ in 0..fill {
        s.try_send(Zst).ok().unwrap();
    }
    drop(r);
    assert_eq!(DROPS.load(SeqCst), fill);
    assert!(matches!(
        s.try_send(Zst),
        Err(TrySendError::Disconnected(Zst))
    ));
    assert_eq!(DROPS.load(SeqCst), fill + 1);
}

/// `len()` from a watcher while four senders and four receivers run with timeouts that race
/// hand-offs: it never exceeds the capacity by more than the receives being cancelled at that
/// moment (H6 may put a value back one past it), and once everything is quiet it is exactly
/// what was sent and not received.
fn len_is_consistent_under_concurrency(cap: Cap) {
    const EACH: usize = 300;
    let (s, r) = cap.pair::<usize>();
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (r, stop) = (r.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut max = 0;
            while !stop.load(SeqCst) {
                max = max.max(r.len());
                std::thread::yield_now();
            }
            max
        })
    };
    let hs: Vec<_> = (0..4)
        .map(|k| {
            let s = s.clone();
            corio::go(move || {
                for i in 0..EACH {
                    s.send(k * EACH + i).unwrap();
                }
            })
        })
        .collect();
    let received = Arc::new(AtomicUsize::new(0));
    let rs: Vec<_> = (0..4)
        .map(|_| {
            let (r, received) = (r.clone(), received.clone());
            corio::go(move || {
                // Each takes a quarter, then stops: some are left when the counts are uneven.
                for _ in 0..EACH - 10 {
                    loop {
                        match r.recv_timeout(Duration::from_micros(30)) {
                            Ok(_) => break,
                            Err(RecvTimeoutError::Timeout) => {}
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                    received.fetch_add(1, SeqCst);
                }
            })
        })
        .collect();
    rs.into_iter().for_each(|h| h.join().unwrap());
    // The senders finish once there is room for the 40 values nobody receives.
    if cap.room() >= 40 {
        hs.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(r.len(), 4 * EACH - received.load(SeqCst), "{cap:?}");
        assert_eq!(r.try_iter().count(), 40);
    } else {
        let mut left = 0;
        while left < 40 {
            r.recv().unwrap();
            left += 1;
        }
        hs.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(r.len(), 0);
    }
    stop.store(true, SeqCst);
    let max = watcher.join().unwrap();
    // 4 receivers may each give one value back past the capacity at the same moment (H6).
    assert!(
        max <= cap.room().saturating_add(4),
        "{cap:?}: len reached {max}"
    );
}

/// A value whose drop uses its own channel, dropped by the channel (the last receiver going)
/// or by a withdrawn send: the drop runs outside the channel's lock, so it neither deadlocks
/// nor corrupts the channel.
fn a_values_drop_may_use_its_own_channel(cap: Cap) {
    struct UsesChannel(Sender<UsesChannel>, Arc<AtomicUsize>);
    impl Drop for UsesChannel {
        fn drop(&mut self) {
            let _ = self.0.len();
            let _ = self.0.is_closed();
            // A send from inside the drop: fails (the channel is going) or is buffered.
            if let Err(TrySendError::Disconnected(v) | TrySendError::Full(v)) = self
                .0
                .try_send(UsesChannel(self.0.clone(), Arc::new(AtomicUsize::new(0))))
            {
                std::mem::forget(v); // no recursion
            }
            self.1.fetch_add(1, SeqCst);
        }
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    let (s, r) = cap.pair::<UsesChannel>();
    let fill = cap.room().min(5);
    for _ in 0..fill {
        s.try_send(UsesChannel(s.clone(), dropped.clone()))
            .ok()
            .unwrap();
    }
    drop(s); // the buffered values still hold senders: the channel stays open
    assert_eq!(r.is_closed(), fill == 0, "{cap:?}");
    drop(r); // the last receiver: the buffered values are dropped, and with them the senders
    assert_eq!(dropped.load(SeqCst), fill, "{cap:?}");

    // A send future withdrawn while it waits drops its value after the lock.
    let dropped = Arc::new(AtomicUsize::new(0));
    let (s, r) = cap.pair::<UsesChannel>();
    for _ in 0..cap.room().min(5) {
        s.try_send(UsesChannel(s.clone(), Arc::new(AtomicUsize::new(0))))
            .ok()
            .unwrap();
    }
    if cap != Cap::Unbounded {
        let v = UsesChannel(s.clone(), dropped.clone());
        let result = s.send_timeout(v, MS);
        assert!(
            matches!(result, Err(SendTimeoutError::Timeout(_))),
            "{cap:?}"
        );
        drop(result);
        assert_eq!(dropped.load(SeqCst), 1);
        let mut fut = Box::pin(s.send_async(UsesChannel(s.clone(), dropped.clone())));
        let waker = std::task::Waker::noop();
        assert!(
            fut.as_mut()
                .poll(&mut std::task::Context::from_waker(waker))
                .is_pending()
        );
        drop(fut);
        assert_eq!(
            dropped.load(SeqCst),
            2,
            "{cap:?}: the withdrawn send's value"
        );
    }
    drop(s);
    drop(r);
}

// ---------------------------------------------------------------------------------------------
// The tests that run the bodies above, on one worker and on two
// ---------------------------------------------------------------------------------------------

rt_common! {
    /// crossbeam array.rs, zero.rs, list.rs: `try_recv`; std mpsc `try_recv_states`.
    #[test]
    fn try_recv_sees_empty_then_the_value_then_disconnected() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                for on in PAIRS {
                    super::try_recv_sees_empty_then_the_value_then_disconnected(cap, on);
                }
            }
        }));
    }

    /// crossbeam array.rs, zero.rs, list.rs: `recv`.
    #[test]
    fn recv_waits_for_each_value_then_reports_the_end() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                for on in PAIRS {
                    super::recv_waits_for_each_value_then_reports_the_end(cap, on);
                }
            }
        }));
    }

    /// crossbeam array.rs, zero.rs, list.rs: `recv_timeout`.
    #[test]
    fn recv_timeout_times_out_then_gets_the_value_then_disconnected() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                for on in PAIRS {
                    super::recv_timeout_times_out_then_gets_the_value_then_disconnected(cap, on);
                }
            }
        }));
    }

    /// crossbeam array.rs, zero.rs, list.rs: `try_send`.
    #[test]
    fn try_send_fills_then_is_full_then_gets_through_then_disconnected() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                for on in PAIRS {
                    super::try_send_fills_then_is_full_then_gets_through_then_disconnected(cap, on);
                }
            }
        }));
    }

    /// crossbeam array.rs, zero.rs: `send`.
    #[test]
    fn send_waits_for_room_and_each_value_arrives_in_order() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                for on in PAIRS {
                    super::send_waits_for_room_and_each_value_arrives_in_order(cap, on);
                }
            }
        }));
    }

    /// crossbeam array.rs, zero.rs, list.rs: `send_timeout`.
    #[test]
    fn send_timeout_times_out_without_room_then_gets_through_then_disconnected() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in [Cap::Zero, Cap::Bounded(1), Cap::Bounded(2), Cap::Unbounded] {
                for on in PAIRS {
                    super::send_timeout_times_out_without_room_then_gets_through_then_disconnected(cap, on);
                }
            }
        }));
    }

    /// crossbeam array.rs, zero.rs: `disconnect_wakes_sender`; std mpsc sync `send2`, `send3`,
    /// `send4`.
    #[test]
    fn waiting_senders_are_woken_with_their_values_when_the_channel_ends() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in [Cap::Zero, Cap::Bounded(1), Cap::Bounded(3)] {
                for ending in ENDINGS {
                    for on in PAIRS {
                        super::waiting_senders_are_woken_with_their_values_when_the_channel_ends(cap, ending, on);
                    }
                }
            }
        }));
    }

    /// crossbeam array.rs, zero.rs, list.rs: `disconnect_wakes_receiver`; std mpsc
    /// `oneshot_multi_task_recv_then_close`.
    #[test]
    fn waiting_receivers_are_woken_when_the_channel_ends() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                for ending in ENDINGS {
                    for on in PAIRS {
                        super::waiting_receivers_are_woken_when_the_channel_ends(cap, ending, on);
                    }
                }
            }
        }));
    }

    /// crossbeam array.rs (`bounded(1000)`), zero.rs: `len` (the concurrent part), with a
    /// watcher thread as well.
    #[test]
    fn len_stays_within_the_capacity_while_values_stream_through() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in [Cap::Zero, Cap::Bounded(1), Cap::Bounded(1000)] {
                super::len_stays_within_the_capacity_while_values_stream_through(cap, 5_000);
            }
        }));
    }

    /// crossbeam array.rs (`bounded(3)`), zero.rs, list.rs: `spsc`; std mpsc `stress`.
    #[test]
    fn spsc_delivers_every_value_in_order() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                for on in PAIRS {
                    super::spsc_delivers_every_value_in_order(cap, 3_000, on);
                }
            }
        }));
    }

    /// crossbeam array.rs (`bounded(3)`), zero.rs, list.rs: `mpmc`.
    #[test]
    fn mpmc_delivers_each_value_once_per_sender() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::mpmc_delivers_each_value_once_per_sender(cap, 1_000, On::Go);
            }
            super::mpmc_delivers_each_value_once_per_sender(Cap::Zero, 300, On::Thread);
            super::mpmc_delivers_each_value_once_per_sender(Cap::Bounded(3), 300, On::Thread);
        }));
    }

    /// crossbeam array.rs, zero.rs, list.rs: `stress_oneshot`; std mpsc
    /// `oneshot_multi_thread_send_recv_stress`, `oneshot_multi_task_recv_then_send`.
    #[test]
    fn oneshots_meet() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::oneshots_meet(cap, 300, PAIRS[0]);
                super::oneshots_meet(cap, 20, PAIRS[1]);
                super::oneshots_meet(cap, 20, PAIRS[2]);
            }
        }));
    }

    /// crossbeam array.rs, zero.rs, list.rs: `stress_iter`; iter.rs `recv_try_iter`; std mpsc
    /// `test_recv_try_iter`.
    #[test]
    fn request_response_until_the_client_has_enough() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                for on in PAIRS {
                    super::request_response_until_the_client_has_enough(cap, 300, on);
                }
            }
        }));
    }

    /// crossbeam array.rs (`bounded(2)`), zero.rs, list.rs: `stress_timeout_two_threads`.
    #[test]
    fn timed_out_attempts_retried_deliver_each_value_once_in_order() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in [Cap::Zero, Cap::Bounded(1), Cap::Bounded(2), Cap::Unbounded] {
                for on in PAIRS {
                    super::timed_out_attempts_retried_deliver_each_value_once_in_order(cap, 30, on);
                }
            }
        }));
    }

    /// crossbeam array.rs (`bounded(50)`), zero.rs, list.rs: `drops`.
    #[test]
    fn drops_once_each_whatever_the_mix() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for (k, cap) in [Cap::Zero, Cap::Bounded(1), Cap::Bounded(50), Cap::Unbounded].into_iter().enumerate() {
                super::drops_once_each_whatever_the_mix(cap, 10, 7 + k as u64);
            }
        }));
    }

    /// crossbeam array.rs (`bounded(4)`), list.rs: `linearizable`.
    #[test]
    fn every_send_is_visible_to_a_try_recv_that_follows_it() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in [Cap::Bounded(4), Cap::Bounded(100), Cap::Unbounded] {
                super::every_send_is_visible_to_a_try_recv_that_follows_it(cap, 2_000);
            }
        }));
    }

    /// crossbeam array.rs, list.rs: `fairness`, `fairness_duplicates`.
    #[test]
    fn selects_over_ready_channels_choose_every_arm_fairly() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in [Cap::Bounded(1000), Cap::Unbounded] {
                super::selects_over_ready_channels_choose_every_arm_fairly(cap);
            }
        }));
    }

    /// crossbeam zero.rs: `fairness`, `fairness_duplicates`.
    #[test]
    fn selects_meeting_on_rendezvous_channels_choose_every_arm_fairly() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            super::selects_meeting_on_rendezvous_channels_choose_every_arm_fairly(PAIRS[0]);
            super::selects_meeting_on_rendezvous_channels_choose_every_arm_fairly(PAIRS[1]);
        }));
    }

    /// crossbeam array.rs, zero.rs, list.rs: `channel_through_channel`.
    #[test]
    fn a_chain_of_channels_each_sent_through_the_last() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                for on in PAIRS {
                    super::a_chain_of_channels_each_sent_through_the_last(cap, 200, on);
                }
            }
        }));
    }

    /// crossbeam zero.rs: `recv_in_send`.
    #[test]
    fn a_send_arms_value_received_from_the_same_rendezvous_channel() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for on in PAIRS {
                super::a_send_arms_value_received_from_the_same_rendezvous_channel(on);
            }
        }));
    }

    /// std mpsc: `port_gone_concurrent`, `port_gone_concurrent_shared`, `chan_gone_concurrent`.
    #[test]
    fn a_tight_send_loop_ends_when_the_receiver_goes() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                for on in PAIRS {
                    super::a_tight_send_loop_ends_when_the_receiver_goes(cap, on);
                }
            }
        }));
    }

    /// std mpsc: `stress_shared`, `shared_chan_stress`, `smoke_shared`.
    #[test]
    fn many_senders_one_receiver_get_everything_then_nothing() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::many_senders_one_receiver_get_everything_then_nothing(cap, 8, 500);
                super::many_senders_one_receiver_get_everything_then_nothing(cap, 100, 1);
            }
        }));
    }

    /// std mpsc: `send_from_outside_runtime`, `recv_from_outside_runtime`.
    #[test]
    fn threads_outside_the_runtime_talk_to_coroutines() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::threads_outside_the_runtime_talk_to_coroutines(cap);
            }
        }));
    }

    /// std mpsc: `oneshot_multi_thread_close_stress`, `oneshot_multi_thread_send_close_stress`,
    /// `oneshot_multi_thread_recv_close_stress`.
    #[test]
    fn ends_going_at_once_race_cleanly() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::ends_going_at_once_race_cleanly(cap, 100, PAIRS[0]);
                super::ends_going_at_once_race_cleanly(cap, 10, PAIRS[1]);
                super::ends_going_at_once_race_cleanly(cap, 10, PAIRS[2]);
            }
        }));
    }

    /// std mpsc: `stream_send_recv_stress`.
    #[test]
    fn chains_of_coroutines_send_and_receive_in_turn() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::chains_of_coroutines_send_and_receive_in_turn(cap, 30);
            }
        }));
    }

    /// std mpsc: `stress_recv_timeout_two_threads`.
    #[test]
    fn receive_timeouts_against_a_slow_sender_count_every_value() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                for on in PAIRS {
                    super::receive_timeouts_against_a_slow_sender_count_every_value(cap, 20, on);
                }
            }
        }));
    }

    /// std mpsc: `stress_recv_timeout_shared`.
    #[test]
    fn receive_timeouts_against_many_staggered_senders_count_every_value() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::receive_timeouts_against_many_staggered_senders_count_every_value(cap, 50);
            }
        }));
    }

    /// std mpsc: `destroy_upgraded_shared_port_when_sender_still_active`.
    #[test]
    fn a_receiver_going_while_the_sender_is_cloned_and_sends() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::a_receiver_going_while_the_sender_is_cloned_and_sends(cap);
            }
        }));
    }

    /// std mpsc: sync `issue_15761`.
    #[test]
    fn two_crossed_buffered_channels_lose_no_wake_up() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for on in PAIRS {
                super::two_crossed_buffered_channels_lose_no_wake_up(on);
            }
        }));
    }

    /// std mpsc select: `unblocks`, `both_ready`, `cloning`, `cloning2`, `cloning3`,
    /// `oneshot_data_waiting`, `stream_data_waiting`, `shared_data_waiting`, `sync2`.
    #[test]
    fn a_waiting_select_is_completed_by_what_comes_later() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            super::a_waiting_select_is_completed_by_what_comes_later(On::Go);
            super::a_waiting_select_is_completed_by_what_comes_later(On::Thread);
        }));
    }

    /// std mpsc select: `stress`.
    #[test]
    fn a_select_takes_alternate_values_in_step() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            super::a_select_takes_alternate_values_in_step(On::Go, 2_000);
            super::a_select_takes_alternate_values_in_step(On::Thread, 200);
        }));
    }

    /// std mpsc select: `sync3`.
    #[test]
    fn a_select_over_a_rendezvous_and_an_unbounded_channel_takes_one_and_leaves_the_other() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for _ in 0..20 {
                super::a_select_over_a_rendezvous_and_an_unbounded_channel_takes_one_and_leaves_the_other(On::Go);
            }
            super::a_select_over_a_rendezvous_and_an_unbounded_channel_takes_one_and_leaves_the_other(On::Thread);
        }));
    }

    /// crossbeam iter.rs: `nested_recv_iter`, `recv_iter_break`; std mpsc
    /// `test_nested_recv_iter`, `test_recv_iter_break`.
    #[test]
    fn iterators_sum_until_the_end_and_break_early() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::iterators_sum_until_the_end_and_break_early(cap, On::Go);
                super::iterators_sum_until_the_end_and_break_early(cap, On::Thread);
            }
        }));
    }

    /// crossbeam never.rs: `tick_n`.
    #[test]
    fn ten_ticks_then_a_channel_nobody_sends_on_until_after() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            super::ten_ticks_then_a_channel_nobody_sends_on_until_after(On::Go);
            super::ten_ticks_then_a_channel_nobody_sends_on_until_after(On::Thread);
        }));
    }

    /// crossbeam after.rs: `fire`, `recv`.
    #[test]
    fn an_after_arm_fires_no_earlier_than_its_duration() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            super::an_after_arm_fires_no_earlier_than_its_duration(On::Go);
            super::an_after_arm_fires_no_earlier_than_its_duration(On::Thread);
        }));
    }

    /// crossbeam after.rs: `recv_race`.
    #[test]
    fn an_after_arm_loses_to_a_value_first_and_beats_a_value_later() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            super::an_after_arm_loses_to_a_value_first_and_beats_a_value_later(On::Go);
            super::an_after_arm_loses_to_a_value_first_and_beats_a_value_later(On::Thread);
        }));
    }

    /// crossbeam after.rs: `select`.
    #[test]
    fn selects_with_short_afters_over_timed_sources_take_each_value_once() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in [Cap::Zero, Cap::Bounded(1)] {
                super::selects_with_short_afters_over_timed_sources_take_each_value_once(cap, On::Go);
                super::selects_with_short_afters_over_timed_sources_take_each_value_once(cap, On::Thread);
            }
        }));
    }

    /// crossbeam after.rs: `select`, with send arms.
    #[test]
    fn selects_sending_with_short_afters_deliver_exactly_what_they_report() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in [Cap::Zero, Cap::Bounded(1)] {
                super::selects_sending_with_short_afters_deliver_exactly_what_they_report(cap, On::Go);
                super::selects_sending_with_short_afters_deliver_exactly_what_they_report(cap, On::Thread);
            }
        }));
    }

    /// crossbeam after.rs: `stress_clone`.
    #[test]
    fn handles_cloned_and_dropped_at_once_never_close_the_channel_early() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::handles_cloned_and_dropped_at_once_never_close_the_channel_early(cap, On::Go);
            }
            super::handles_cloned_and_dropped_at_once_never_close_the_channel_early(Cap::Bounded(1), On::Thread);
        }));
    }

    /// Every kind of waiter (coroutine, task with `recv_async`, task with the `Stream`, thread)
    /// on one channel, sending and receiving.
    #[test]
    fn every_kind_of_waiter_sends_and_receives_on_one_channel() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::every_kind_of_waiter_sends_and_receives_on_one_channel(cap, 1_000);
            }
        }));
    }

    /// A timeout racing a send or a receive loses nothing, from every kind of waiter.
    #[test]
    fn timeouts_racing_hand_offs_lose_nothing_across_kinds() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::timeouts_racing_hand_offs_lose_nothing_across_kinds(cap, 300);
            }
        }));
    }

    /// Drop counts: every value dropped exactly once through random operations and a close.
    #[test]
    fn every_value_is_dropped_once_through_random_sends_receives_and_a_close() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for seed in 0..6 {
                for cap in CAPS {
                    super::every_value_is_dropped_once_through_random_sends_receives_and_a_close(cap, seed);
                }
            }
        }));
    }

    /// Drop counts when the runtime goes with senders and receivers blocked.
    #[test]
    fn runtime_dropped_with_blocked_senders_and_receivers_drops_each_value_once() {
        within(EVENTUALLY, || {
            for cap in [Cap::Zero, Cap::Bounded(1), Cap::Bounded(8)] {
                super::runtime_dropped_with_blocked_senders_and_receivers(WORKERS, cap);
            }
        });
    }

    /// Aborted senders and receivers of both kinds lose and duplicate nothing.
    #[test]
    fn aborted_senders_and_receivers_lose_and_duplicate_nothing() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for (k, cap) in CAPS.into_iter().enumerate() {
                for seed in 0..3 {
                    super::aborted_senders_and_receivers_lose_and_duplicate_nothing(cap, 10 * k as u64 + seed);
                }
            }
        }));
    }

    /// crossbeam zero.rs: `stress_iter` (its premise: `try_iter` takes from waiting senders).
    #[test]
    fn try_iter_on_a_rendezvous_channel_takes_what_waiting_senders_hold() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            super::try_iter_on_a_rendezvous_channel_takes_what_waiting_senders_hold(On::Go);
            super::try_iter_on_a_rendezvous_channel_takes_what_waiting_senders_hold(On::Thread);
        }));
    }

    /// crossbeam array.rs: `send_timeout_nonfull_expired`; list.rs:
    /// `recv_timeout_nonempty_expired` — against a waiting peer on a rendezvous channel.
    #[test]
    fn zero_timeouts_meet_a_waiting_peer_on_a_rendezvous_channel() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for on in PAIRS {
                super::zero_timeouts_meet_a_waiting_peer_on_a_rendezvous_channel(on);
            }
        }));
    }

    /// A cancelled coroutine's destructor waits in a channel send during its unwind.
    #[test]
    fn a_cancelled_coroutines_destructor_sends_on_a_rendezvous_channel() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::a_cancelled_coroutines_destructor_sends_on_a_rendezvous_channel(cap);
            }
        }));
    }

    /// Racing closes from both ends.
    #[test]
    fn concurrent_closes_exactly_one_wins() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::concurrent_closes_exactly_one_wins(cap, On::Go);
            }
            super::concurrent_closes_exactly_one_wins(Cap::Zero, On::Thread);
        }));
    }

    /// Zero-sized values.
    #[test]
    fn zero_sized_values_are_counted_exactly() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::zero_sized_values_are_counted_exactly(cap);
                super::a_true_zero_sized_value_with_a_drop_is_dropped_once_each(cap);
            }
        }));
    }

    /// `len()` under concurrency.
    #[test]
    fn len_is_consistent_under_concurrency() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in [Cap::Zero, Cap::Bounded(1), Cap::Bounded(64), Cap::Unbounded] {
                super::len_is_consistent_under_concurrency(cap);
            }
        }));
    }

    /// A value's drop that uses its own channel.
    #[test]
    fn a_values_drop_may_use_its_own_channel() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| {
            for cap in CAPS {
                super::a_values_drop_may_use_its_own_channel(cap);
            }
        }));
    }
}
