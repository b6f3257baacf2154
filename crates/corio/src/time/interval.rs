//! `Interval`: ticks on a period, and what to do about ticks that come late.
//!
//! An interval keeps the instant its next tick is due. `tick` sleeps until then, returns that
//! instant, and computes the next one: `due + period`, unless that too has already passed —
//! the caller was late by a whole period or more. What happens then is the interval's
//! [`MissedTickBehavior`] (tokio's three, with tokio's names):
//!
//! | behaviour | next tick after a late one | ticks run after the caller was late by 3.5 periods |
//! |---|---|---|
//! | `Burst` | `due + period`: the missed ticks are all returned, at once | 3 at once, then on the grid |
//! | `Delay` | `now + period`: the grid moves to when the late tick was taken | 1, then every period from then |
//! | `Skip` (default) | the first instant of the grid after now | 1, then on the grid |
//!
//! A tick is late when the next tick's instant has come by the time this one is taken; a
//! `Delay` tick is late also when it is taken more than [`DELAY_TOLERANCE`] (5 ms, tokio's
//! figure) after it was due, since `Delay` promises ticks a period apart: a tick taken half a
//! period late is followed by one a period later, not half a period. (tokio calls a tick of
//! any behaviour late 5 ms after it was due; for `Burst` and `Skip` that gives the same next
//! tick as corio's rule whenever the period is longer than 5 ms.)
//!
//! Sums saturate (see "Durations at the limit" in the module above): an interval of
//! `Duration::MAX` ticks once and then never.

use std::time::{Duration, Instant};

use super::{deadline_after, sleep_until, sleep_until_async};

/// How long after its instant a [`MissedTickBehavior::Delay`] tick may be taken and still be
/// on time (tokio's 5 ms): a sleep wakes a little after its deadline, and a tick that late
/// keeps the grid.
const DELAY_TOLERANCE: Duration = Duration::from_millis(5);

/// Ticks every `period`, the first tick at once, as tokio's `interval` (Go's `time.Ticker`
/// ticks first one period after it is made: that is [`interval_at`]`(now + period, period)`).
/// Missed ticks are skipped by default: see [`MissedTickBehavior`].
///
/// # Panics
///
/// If `period` is zero.
///
/// ```
/// use std::time::Duration;
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let mut every = corio::time::interval(Duration::from_millis(2));
///     for _ in 0..3 {
///         every.tick();
///     }
/// });
/// ```
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    interval_at(Instant::now(), period)
}

/// Ticks every `period`, the first tick at `start` (tokio's `interval_at`).
///
/// # Panics
///
/// If `period` is zero.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let start = Instant::now() + Duration::from_millis(5);
///     let mut every = corio::time::interval_at(start, Duration::from_millis(2));
///     assert_eq!(every.tick(), start);
///     assert!(Instant::now() >= start);
///     // On the grid from `start` (the very next point, unless this thread was late).
///     let second = every.tick();
///     assert!(second >= start + Duration::from_millis(2));
/// });
/// ```
#[track_caller]
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(
        !period.is_zero(),
        "corio: an interval's period must be positive"
    );
    Interval {
        period,
        next: start,
        missed: MissedTickBehavior::default(),
    }
}

/// What an [`Interval`] does when a tick is taken so late that the next one is already due.
///
/// See the table in the module documentation of `corio::time::interval`:
///
/// ```
/// use corio::time::MissedTickBehavior;
/// use std::time::{Duration, Instant};
///
/// let period = Duration::from_millis(5);
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(move || {
///     let mut every = corio::time::interval(period);
///     every.set_missed_tick_behavior(MissedTickBehavior::Burst);
///     let first = every.tick();
///     corio::sleep(period * 3 + period / 2); // late by three and a half periods
///     // Burst: every missed tick is returned, at once, then the grid goes on.
///     for k in 1..=4 {
///         assert_eq!(every.tick(), first + period * k);
///     }
/// });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MissedTickBehavior {
    /// Returns every missed tick, one after another without waiting, until caught up (tokio's
    /// default): for counting ticks, where each must happen.
    Burst,
    /// Takes the late tick, then starts a new grid a period after it was taken: for spacing
    /// calls at least a period apart. A tick taken more than 5 ms after it was due is late
    /// here (tokio's rule), even when the next tick's instant has not come yet.
    Delay,
    /// Takes the late tick, then goes on with the first tick of the grid after now (corio's
    /// default, and what Go's `Ticker` does by dropping ticks): for periodic work that has
    /// nothing to catch up on.
    #[default]
    Skip,
}

/// See [`interval`].
#[derive(Debug)]
pub struct Interval {
    period: Duration,
    /// When the next tick is due.
    next: Instant,
    missed: MissedTickBehavior,
}

impl Interval {
    /// Waits for the next tick (blocking-style) and returns its scheduled instant.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`tick_async`](Interval::tick_async) there.
    #[track_caller]
    pub fn tick(&mut self) -> Instant {
        let due = self.next;
        sleep_until(due);
        self.advance(due);
        due
    }

    /// Waits for the next tick and returns its scheduled instant.
    pub async fn tick_async(&mut self) -> Instant {
        let due = self.next;
        sleep_until_async(due).await;
        self.advance(due);
        due
    }

    /// Sets the next tick after the one due at `due`, taken now.
    fn advance(&mut self, due: Instant) {
        let now = Instant::now();
        let next = deadline_after(due, self.period);
        let late = next <= now
            || (self.missed == MissedTickBehavior::Delay
                && now.saturating_duration_since(due) > DELAY_TOLERANCE);
        self.next = if !late {
            next // on time
        } else {
            match self.missed {
                MissedTickBehavior::Burst => next,
                MissedTickBehavior::Delay => deadline_after(now, self.period),
                MissedTickBehavior::Skip => {
                    // The first instant of the grid after `now`.
                    let behind = (now - next).as_nanos();
                    let periods = behind / self.period.as_nanos() + 1;
                    let skip = self
                        .period
                        .as_nanos()
                        .saturating_mul(periods)
                        .min(u64::MAX as u128);
                    deadline_after(next, Duration::from_nanos(skip as u64))
                }
            }
        };
    }

    /// Makes the next tick due a period from now (tokio's `Interval::reset`).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let period = Duration::from_millis(5);
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// rt.run(move || {
    ///     let mut every = corio::time::interval(period);
    ///     every.tick();
    ///     corio::sleep(period / 2);
    ///     let reset_at = Instant::now();
    ///     every.reset();
    ///     assert!(every.tick() >= reset_at + period);
    /// });
    /// ```
    pub fn reset(&mut self) {
        self.next = deadline_after(Instant::now(), self.period);
    }

    /// Makes the next tick due at `deadline`; the ticks after it follow every period from there.
    pub fn reset_at(&mut self, deadline: Instant) {
        self.next = deadline;
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What this interval does about missed ticks.
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    /// Sets what this interval does about missed ticks (see [`MissedTickBehavior`]).
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }
}
