//! Time: sleeping, timeouts and intervals, in blocking style and as futures.
//!
//! Each operation comes twice, as every corio operation does: a blocking-style function for
//! stackful coroutines and plain threads (`sleep`, `timeout`, `Interval::tick`) and an async
//! one for stackless tasks (`sleep_async`, `timeout_async`, `Interval::tick_async`). The
//! blocking form is the async one run by [`block_on`](crate::block_on): in a coroutine it
//! suspends only the coroutine.
//!
//! Timers live in per-worker 4-ary heaps (Go's layout; `docs/scheduler.md` has the
//! measurement that chose it over a timing wheel), fired by whoever looks for work on that
//! worker, or by the worker sleeping in the driver until the nearest deadline.
//!
//! # Durations at the limit
//!
//! Every duration is accepted, `Duration::MAX` included, and a deadline past what the clocks can
//! represent means "never" (as in Go and tokio), never a panic or a wrap-around:
//!
//! - `Instant + Duration` saturates (`deadline_after`): a sum that `Instant` cannot hold
//!   becomes a point 30 years ahead (tokio's `far_future`), which is never in practice and
//!   leaves room to add periods to it again;
//! - a deadline is stored in the timer heaps as 64-bit nanoseconds since the runtime's epoch
//!   (585 years); one further away saturates to `u64::MAX` (`nanos_since`), the heaps'
//!   "not armed", which no clock reading reaches. (A plain `as u64` cut the high bits, so a
//!   585-year sleep fired 20 ms later: Go's `TestOverflowSleep`.)

mod fallback;
pub(crate) mod heap;
mod interval;
mod sleep;

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

pub use std::time::Instant;

pub(crate) use self::fallback::adopt;
pub use self::interval::{Interval, MissedTickBehavior, interval, interval_at};
pub use self::sleep::Sleep;

/// Where a deadline that `Instant` cannot represent is put: this far ahead (tokio's
/// `far_future` is 30 years too).
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 86_400);

/// `from + d`, saturating: a sum past what `Instant` can represent is "never" (see "Durations
/// at the limit").
pub(crate) fn deadline_after(from: Instant, d: Duration) -> Instant {
    from.checked_add(d)
        .or_else(|| from.checked_add(FAR_FUTURE))
        // `from` itself is already at the end of the representable range: as never as it gets.
        .unwrap_or(from)
}

/// `at` as nanoseconds since `epoch` on a timer heap's clock: 0 for the past, `u64::MAX`
/// ("never") past 585 years (see "Durations at the limit").
pub(crate) fn nanos_since(epoch: Instant, at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(epoch).as_nanos()).unwrap_or(u64::MAX)
}

/// Blocks the calling coroutine (or thread) for `duration`.
///
/// In a stackful coroutine only the coroutine waits; its worker runs others meanwhile. On a
/// plain thread the thread sleeps.
///
/// # Panics
///
/// Inside an async task (it would stall the worker): use [`sleep_async`] there.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let waited = rt.run(|| {
///     let start = Instant::now();
///     corio::sleep(Duration::from_millis(5));
///     start.elapsed()
/// });
/// assert!(waited >= Duration::from_millis(5));
/// ```
#[track_caller]
pub fn sleep(duration: Duration) {
    sleep_until(deadline_after(Instant::now(), duration));
}

/// Blocks the calling coroutine (or thread) until `deadline` (at once if it has passed).
///
/// # Panics
///
/// Inside an async task: use [`sleep_until_async`] there.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let deadline = Instant::now() + Duration::from_millis(5);
///     corio::time::sleep_until(deadline);
///     assert!(Instant::now() >= deadline);
/// });
/// ```
#[track_caller]
pub fn sleep_until(deadline: Instant) {
    match crate::runtime::context::here() {
        crate::runtime::context::Here::Thread => {
            let now = Instant::now();
            if deadline > now {
                std::thread::sleep(deadline - now);
            }
        }
        _ => crate::block_on(Sleep::until(deadline)),
    }
}

/// A future that completes after `duration`.
pub fn sleep_async(duration: Duration) -> Sleep {
    Sleep::until(deadline_after(Instant::now(), duration))
}

/// A future that completes at `deadline` (at once if it has passed).
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.block_on(async {
///     let deadline = Instant::now() + Duration::from_millis(5);
///     corio::time::sleep_until_async(deadline).await;
///     assert!(Instant::now() >= deadline);
/// });
/// ```
pub fn sleep_until_async(deadline: Instant) -> Sleep {
    Sleep::until(deadline)
}

/// The error of a timeout that expired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(_: Elapsed) -> std::io::Error {
        std::io::ErrorKind::TimedOut.into()
    }
}

/// Waits for `fut` for at most `duration`, blocking-style. On expiry the future is dropped
/// (cancelling what it waited for) and `Err(Elapsed)` is returned.
///
/// # Panics
///
/// Inside an async task: use [`timeout_async`] there.
///
/// ```
/// use std::time::Duration;
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let slow = corio::time::sleep_async(Duration::from_secs(60));
///     assert!(corio::time::timeout(Duration::from_millis(5), slow).is_err());
///     assert_eq!(corio::time::timeout(Duration::from_secs(60), async { 1 }), Ok(1));
/// });
/// ```
#[track_caller]
pub fn timeout<F: IntoFuture>(duration: Duration, fut: F) -> Result<F::Output, Elapsed> {
    crate::block_on(timeout_async(duration, fut))
}

/// A future that resolves to `fut`'s output, or to `Err(Elapsed)` after `duration`.
pub fn timeout_async<F: IntoFuture>(duration: Duration, fut: F) -> Timeout<F::IntoFuture> {
    timeout_at_async(deadline_after(Instant::now(), duration), fut)
}

/// Waits for `fut` until `deadline` at most, blocking-style: [`timeout`] with an instant
/// instead of a duration, for several waits that share one deadline.
///
/// # Panics
///
/// Inside an async task: use [`timeout_at_async`] there.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let deadline = Instant::now() + Duration::from_millis(20);
///     let quick = corio::time::timeout_at(deadline, async { 1 });
///     let slow = corio::time::timeout_at(deadline, corio::time::sleep_async(Duration::from_secs(60)));
///     assert_eq!(quick, Ok(1));
///     assert!(slow.is_err());
///     assert!(Instant::now() >= deadline);
/// });
/// ```
#[track_caller]
pub fn timeout_at<F: IntoFuture>(deadline: Instant, fut: F) -> Result<F::Output, Elapsed> {
    crate::block_on(timeout_at_async(deadline, fut))
}

/// A future that resolves to `fut`'s output, or to `Err(Elapsed)` at `deadline`.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let res = rt.block_on(async {
///     let deadline = Instant::now() + Duration::from_millis(5);
///     corio::time::timeout_at_async(deadline, std::future::pending::<()>()).await
/// });
/// assert!(res.is_err());
/// ```
pub fn timeout_at_async<F: IntoFuture>(deadline: Instant, fut: F) -> Timeout<F::IntoFuture> {
    Timeout {
        fut: fut.into_future(),
        sleep: Sleep::until(deadline),
    }
}

/// The future of [`timeout_async`].
///
/// It polls its future first and times out only if the deadline had passed before that poll
/// began: a future is always polled at least once after its deadline, so one that is ready by
/// then gives its value (and one whose poll began before the deadline and ended after it is
/// polled again rather than cut off).
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Timeout<F> {
    fut: F,
    sleep: Sleep,
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `fut` is structurally pinned (never moved out; `Timeout` has no Drop that
        // moves it); `sleep` is Unpin.
        let this = unsafe { self.get_unchecked_mut() };
        let had_budget = crate::runtime::context::has_budget_remaining();
        // Whether the deadline had passed *before* the future is polled: only then does this
        // poll time out. A deadline that passes during the future's poll (one that began just
        // before it, and was descheduled, or ran long) gives the future another poll first, so
        // that a future due at the deadline gives its value (`tests/time_tasks_review_contract.rs`,
        // `a_future_whose_poll_straddles_the_deadline_*`, found by the ThreadSanitizer campaign).
        let elapsed_before = this.sleep.has_elapsed();
        // SAFETY: as above.
        if let Poll::Ready(v) = unsafe { Pin::new_unchecked(&mut this.fut) }.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        // If the future spent the last of the budget, the deadline is looked at anyway: a
        // future that always spends the budget would otherwise keep its timeout from ever
        // firing. If the budget was spent before, the timeout yields like any operation, so a
        // loop of expired timeouts still lets others run. (tokio's `Timeout::poll` does the
        // same.)
        let future_spent_the_last = had_budget && !crate::runtime::context::has_budget_remaining();
        if !future_spent_the_last && !crate::runtime::context::budget_proceed() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if elapsed_before {
            return Poll::Ready(Err(Elapsed(())));
        }
        if this.sleep.poll_not_elapsed(cx).is_ready() {
            // It passed during the future's poll: poll the future once more, at once.
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}
