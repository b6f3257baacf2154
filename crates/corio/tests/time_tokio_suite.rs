//! tokio 1.54's time test suite, ported to `corio::time` to look for behaviour bugs.
//!
//! Sources (tokio-1.54.1): `tests/time_sleep.rs`, `tests/time_timeout.rs`,
//! `tests/time_interval.rs`, `tests/time_rt.rs`, `tests/time_panic.rs`,
//! `tests/rt_time_start_paused.rs`, the timer tests of `tests/rt_common.rs`, the
//! runtime-agnostic tests of `tests/time_alt.rs` (tokio_unstable's alternative timer),
//! `src/runtime/time/tests/mod.rs` and the time part of `tests/async_send_sync.rs`. Each case
//! is re-expressed for corio's faces where both make sense: async (`sleep_async`,
//! `timeout_async`, `tick_async`, in a task or in `block_on`) and blocking-style
//! (`corio::sleep`, `timeout`, `tick` in a stackful coroutine).
//!
//! corio has no paused clock, so every duration is checked strictly from below (no timer may
//! complete before its deadline) and from above only with bounds of seconds ([`LATE_OK`]).
//! Tests that tokio runs on a paused clock are ported with real time where the behaviour
//! survives that (their `///` line says so), and listed below where it does not.

// Not ported, one tokio test per entry, with the reason:
//
// - time_sleep `immediate_sleep`, its `!is_elapsed()` before the first poll only: corio's
//   `Sleep::is_elapsed` is documented as "Whether the deadline has passed", not "has fired".
// - time_sleep `greater_than_max`: completes only by auto-advancing a paused clock 5 years
//   (the "registers and stays pending" part is in `far_deadlines_*`).
// - time_sleep `multi_long_sleeps`: the same, years of paused time (pending part ported).
// - time_sleep `long_sleeps`: the same, and a 1 ms upper bound on a paused clock.
// - time_sleep `exactly_max`: awaits `Duration::MAX` on a paused clock (pending part ported).
// - time_sleep `no_out_of_bounds_close_to_max`: the same for `MAX - 1 ms`.
// - time_sleep `creating_sleep_outside_of_context`: tokio panics; corio serves such a sleep
//   from its fallback timer thread by design (`time/sleep.rs` docs); rt_time.rs tests that.
// - time_interval `reset_after`: no `Interval::reset_after` (it is `reset_at(now + d)`,
//   whose behaviour rt_time_api.rs tests).
// - time_interval `reset_after_doesnt_panic_max_duration`: no `reset_after`, and
//   `reset_at(Instant::now() + Duration::MAX)` would overflow in the caller's own code.
// - time_interval `stream_with_interval_poll_tick_self_waking`: no `Interval::poll_tick`,
//   no `Stream` impl.
// - time_interval `stream_with_interval_poll_tick_no_waking`: the same.
// - time_panic `pause_panic_caller`: no `time::pause`.
// - time_panic `resume_panic_caller`: no `time::resume`.
// - time_panic `timeout_panic_caller`: every corio runtime has timers (no `enable_time`);
//   the analogue, a blocking-style timer call in an async task, is ported.
// - time_panic `timeout_at_panic_caller`: the same.
// - rt_time_start_paused `test_start_paused`: no paused clock.
// - time_alt `reset_should_stay_on_same_runtime`: needs a dropped runtime to fire its timers
//   at once; corio hands them to its fallback thread, to fire at their deadline
//   (docs/scheduler.md, "Cancellation and shutdown").
// - time_alt `reset_should_stay_on_same_runtime2`: the same.
// - runtime/time/tests `poll_process_levels_targeted`: tokio's wheel levels and
//   `process_at_time`, internal to tokio.
// - runtime/time/tests `instant_to_tick_max`: tokio's tick arithmetic (corio's deadlines at
//   the limit: rt_time.rs).
//
// Already ported in other test files, so not repeated here:
//
// - time_sleep `short_sleeps`: time_tasks_review_contract.rs.
// - time_sleep `sub_ms_delayed_sleep`: time_tasks_review_contract.rs.
// - time_sleep `reset_after_firing`: time_tasks_review_contract.rs.
// - time_sleep `drop_from_wake`: time_tasks_review_contract.rs.
// - time_timeout `simultaneous_deadline_future_completion`: time_tasks_review_contract.rs.
// - time_timeout `timeout_is_not_exhausted_by_future`: time_tasks_review_contract.rs.
// - time_timeout `completed_future_past_deadline`: rt_time_api.rs.
// - time_interval `burst`: rt_time_api.rs.
// - time_interval `delay`: rt_time_api.rs.
// - time_interval `skip`: rt_time_api.rs.
// - time_interval `reset`: rt_time_api.rs.
// - time_interval `reset_at`: rt_time_api.rs.
// - time_interval `reset_at_bigger_than_interval`: rt_time_api.rs.
// - time_interval `interval_zero_duration`: rt_time.rs (`interval_at`'s is here).
// - time_interval `interval_doesnt_panic_max_duration_when_polling`: rt_time.rs.
// - rt_common `sleep_at_root`: rt_time.rs.
// - time_alt `sleep`: rt_time.rs (a thousand sleepers).

#[macro_use]
mod support;

use std::future::{Future, pending, poll_fn};
use std::panic::catch_unwind;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use corio::sync::oneshot;
use corio::time::{self, Sleep};
use support::{EVENTUALLY, payload_text, within};

const MS: Duration = Duration::from_millis(1);

/// A deadline no test reaches.
const HOUR: Duration = Duration::from_secs(3600);

/// The generous upper bound on lateness: on a loaded 2-core machine a timer may fire a few
/// hundred milliseconds late, but only one that waits for the wrong deadline (or never fires)
/// takes seconds.
const LATE_OK: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

/// Polls `fut` once with the caller's context.
async fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    poll_fn(|cx| Poll::Ready(Pin::new(&mut *fut).poll(cx))).await
}

/// Polls `fut` once with `waker`.
fn poll_with<F: Future + Unpin>(fut: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(waker))
}

/// A waker that counts its wakes and remembers when the first came.
#[derive(Default)]
struct WakeLog {
    count: AtomicUsize,
    first: Mutex<Option<Instant>>,
}

impl WakeLog {
    fn new() -> (Arc<WakeLog>, Waker) {
        let log = Arc::new(WakeLog::default());
        let waker = Waker::from(log.clone());
        (log, waker)
    }

    fn count(&self) -> usize {
        self.count.load(SeqCst)
    }

    fn first(&self) -> Option<Instant> {
        *self.first.lock().unwrap()
    }
}

impl Wake for WakeLog {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let now = Instant::now();
        self.first.lock().unwrap().get_or_insert(now);
        self.count.fetch_add(1, SeqCst);
    }
}

/// Waits (asynchronously, 1 ms at a time) until `log` has been woken; fails after
/// [`EVENTUALLY`].
async fn wait_woken(log: &WakeLog) {
    let start = Instant::now();
    while log.count() == 0 {
        assert!(start.elapsed() < EVENTUALLY, "never woken");
        time::sleep_async(MS).await;
    }
}

/// Checks `sleep.is_elapsed()` against the clock read around it ("whether the deadline has
/// passed"): false while the clock is before the deadline, true once it is past it.
fn check_is_elapsed(sleep: &Sleep) -> bool {
    let before = Instant::now();
    let elapsed = sleep.is_elapsed();
    let after = Instant::now();
    if after < sleep.deadline() {
        assert!(!elapsed, "is_elapsed before the deadline");
    }
    if before >= sleep.deadline() {
        assert!(elapsed, "not is_elapsed after the deadline");
    }
    elapsed
}

/// A minimal executor that is not corio's: polls `fut` on this thread, parking between polls
/// (tokio's tests use `futures::executor::block_on` to be sure no runtime context is set).
fn foreign_block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark {
        thread: std::thread::Thread,
        woken: AtomicBool,
    }
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.woken.store(true, SeqCst);
            self.thread.unpark();
        }
    }
    let unpark = Arc::new(Unpark {
        thread: std::thread::current(),
        woken: AtomicBool::new(false),
    });
    let waker = Waker::from(unpark.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        while !unpark.woken.swap(false, SeqCst) {
            std::thread::park();
        }
    }
}

/// Resumes a task's panic here (so that the failure shows the assertion's message), or fails
/// on a cancellation.
fn unwrap_task<T>(res: Result<T, corio::JoinError>) -> T {
    match res {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("the task did not finish: {e}"),
    }
}

/// Runs the future `make` builds in a stackful coroutine (`corio::block_on`) and then in an
/// async task, on `rt`, under the watchdog.
fn in_coroutine_and_task<F, Fut>(rt: corio::Runtime, make: F)
where
    F: Fn() -> Fut + Send + Copy + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    within(EVENTUALLY, move || {
        rt.run(move || corio::block_on(make()));
        let task = rt.spawn(make());
        unwrap_task(rt.block_on(task));
    });
}

/// corio's panics whose message contains one of [`MARKS`]: (message, file of the location).
static PANICS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// The panics the panic-location tests cause: a zero period; a blocking-style call in a task.
const MARKS: [&str; 2] = [
    "period must be positive",
    "inside an async task would stall its worker",
];

/// Installs (once) a panic hook that records the panics of [`MARKS`] in [`PANICS`] and keeps
/// them off stderr; every other panic goes to the previous hook.
fn record_corio_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = payload_text(info.payload());
            if MARKS.iter().any(|m| msg.contains(m)) {
                let file = info.location().map(|l| l.file().to_string());
                PANICS.lock().unwrap().push((msg, file.unwrap_or_default()));
                return;
            }
            previous(info);
        }));
    });
}

/// The files of the recorded panics whose message contains `mark`, taken out of the record.
fn take_panics(mark: &str) -> Vec<String> {
    let mut all = PANICS.lock().unwrap();
    let (mine, rest): (Vec<_>, Vec<_>) = all.drain(..).partition(|(m, _)| m.contains(mark));
    *all = rest;
    mine.into_iter().map(|(_, file)| file).collect()
}

// ---------------------------------------------------------------------------------------------
// time_sleep.rs
// ---------------------------------------------------------------------------------------------

mod time_sleep {
    use super::*;

    rt_common! {
        /// tokio `time_sleep.rs` `immediate_sleep`: a sleep until now completes at once (it is
        /// already elapsed in corio's sense before it is polled, see the top of the file).
        #[test]
        fn a_sleep_until_now_completes_at_once() {
            async fn check() {
                let now = Instant::now();
                let mut sleep = time::sleep_until_async(now);
                assert!(sleep.is_elapsed());
                (&mut sleep).await;
                assert!(sleep.is_elapsed());
                assert_eq!(sleep.deadline(), now);
                assert!(now.elapsed() < LATE_OK, "waited for a deadline that had come");
            }
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    corio::block_on(check());
                    let now = Instant::now();
                    time::sleep_until(now);
                    corio::sleep(Duration::ZERO);
                    assert!(now.elapsed() < LATE_OK);
                });
                rt.block_on(check());
                unwrap_task(rt.block_on(rt.spawn(check())));
            });
        }

        /// tokio `time_sleep.rs` `is_elapsed`: not elapsed before or after a pending poll while the
        /// clock is before the deadline, elapsed once the sleep has completed, and ready again.
        #[test]
        fn is_elapsed_follows_the_deadline_through_polls_and_completion() {
            async fn check() {
                let mut sleep = time::sleep_async(10 * MS);
                let deadline = sleep.deadline();
                check_is_elapsed(&sleep);
                if poll_once(&mut sleep).await.is_pending() {
                    check_is_elapsed(&sleep);
                }
                (&mut sleep).await;
                assert!(Instant::now() >= deadline, "completed before its deadline");
                assert!(sleep.is_elapsed());
                corio::yield_now_async().await;
                assert!(poll_once(&mut sleep).await.is_ready(), "a completed sleep is ready again");
                // The same with a deadline no test reaches: never elapsed.
                let mut far = time::sleep_async(HOUR);
                assert!(!far.is_elapsed());
                assert!(poll_once(&mut far).await.is_pending());
                assert!(!far.is_elapsed());
            }
            in_coroutine_and_task(rt(), check);
        }

        /// tokio `time_sleep.rs` `delayed_sleep_level_0` and `delayed_sleep_wrapping_level_0`:
        /// sleeps until now + 1, 10 and 60 ms, and a 60 ms one after a 5 ms one, last at least that
        /// long (and not seconds longer).
        #[test]
        fn delayed_sleeps_last_their_duration() {
            fn check_took(start: Instant, d: Duration) {
                let took = start.elapsed();
                assert!(took >= d, "a {d:?} sleep took {took:?}");
                assert!(took < d + LATE_OK, "a {d:?} sleep took {took:?}");
            }
            async fn check() {
                for d in [MS, 10 * MS, 60 * MS] {
                    let start = Instant::now();
                    time::sleep_until_async(start + d).await;
                    check_took(start, d);
                }
                time::sleep_async(5 * MS).await;
                let start = Instant::now();
                time::sleep_until_async(start + 60 * MS).await;
                check_took(start, 60 * MS);
            }
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    for d in [MS, 10 * MS, 60 * MS] {
                        let start = Instant::now();
                        time::sleep_until(start + d);
                        check_took(start, d);
                    }
                    corio::sleep(5 * MS);
                    let start = Instant::now();
                    corio::sleep(60 * MS);
                    check_took(start, 60 * MS);
                });
                unwrap_task(rt.block_on(rt.spawn(check())));
                rt.block_on(check());
            });
        }

        /// tokio `time_sleep.rs` `reset_future_sleep_before_fire`: a registered sleep reset to a
        /// later deadline completes at the new one, not at the deadline it was registered with.
        #[test]
        fn a_sleep_reset_later_before_it_fires_completes_at_the_new_deadline() {
            async fn check() {
                let start = Instant::now();
                let mut sleep = time::sleep_until_async(start + 100 * MS);
                let _ = poll_once(&mut sleep).await;
                let later = Instant::now() + 200 * MS;
                sleep.reset(later);
                assert_eq!(sleep.deadline(), later);
                (&mut sleep).await;
                let woke = Instant::now();
                assert!(woke >= later, "completed {:?} before its new deadline", later - woke);
                assert!(woke < later + LATE_OK);
            }
            in_coroutine_and_task(rt(), check);
        }

        /// tokio's `Sleep::reset` keeps the task waiting on the sleep registered: a future that
        /// polls its sleep, then pushes the deadline on (an idle timeout reset by activity)
        /// and returns `Pending` without polling the sleep again is still woken at the new
        /// deadline. corio's reset dropped the timer, waker and all, and left the next poll to
        /// register one, so that task slept for ever.
        #[test]
        fn a_sleep_reset_without_a_poll_after_it_still_wakes_its_task() {
            struct ResetAfterPoll {
                sleep: Sleep,
                reset_to: Option<Instant>,
            }
            impl Future for ResetAfterPoll {
                type Output = ();
                fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
                    if Pin::new(&mut self.sleep).poll(cx).is_ready() {
                        return Poll::Ready(());
                    }
                    if let Some(at) = self.reset_to.take() {
                        self.sleep.reset(at); // and no poll of the sleep after it
                    }
                    Poll::Pending
                }
            }
            within(EVENTUALLY, || {
                for (later, earlier) in [(true, false), (false, true)] {
                    reset_without_a_poll(rt(), later, earlier);
                }
            });
            fn reset_without_a_poll(rt: corio::Runtime, later: bool, earlier: bool) {
                let start = Instant::now();
                let reset_to = if later { start + 50 * MS } else { start + 10 * MS };
                let first = if earlier { start + 3600 * 1000 * MS } else { start + 10 * MS };
                let done = rt.block_on(rt.spawn(ResetAfterPoll {
                    sleep: time::sleep_until_async(first),
                    reset_to: Some(reset_to),
                }));
                unwrap_task(done);
                assert!(Instant::now() >= reset_to, "completed before its new deadline");
            }
        }

        /// tokio `time_sleep.rs` `reset_past_sleep_before_turn`: a registered sleep reset to an
        /// earlier deadline completes then (not at the old one, an hour away here).
        #[test]
        fn a_sleep_reset_earlier_before_it_fires_completes_at_the_new_deadline() {
            async fn check() {
                let start = Instant::now();
                let mut sleep = time::sleep_until_async(start + HOUR);
                assert!(poll_once(&mut sleep).await.is_pending());
                let earlier = start + 80 * MS;
                sleep.reset(earlier);
                (&mut sleep).await;
                let woke = Instant::now();
                assert!(woke >= earlier, "completed before its new deadline");
                assert!(woke < earlier + LATE_OK, "waited {:?}", woke - start);
            }
            in_coroutine_and_task(rt(), check);
        }

        /// tokio `time_sleep.rs` `reset_past_sleep_before_fire`: as above, with the reset made
        /// after another sleep, while the runtime's timers have turned.
        #[test]
        fn a_sleep_reset_earlier_after_other_timers_fired_completes_at_the_new_deadline() {
            async fn check() {
                let start = Instant::now();
                let mut sleep = time::sleep_until_async(start + HOUR);
                assert!(poll_once(&mut sleep).await.is_pending());
                time::sleep_async(10 * MS).await;
                let earlier = start + 80 * MS;
                sleep.reset(earlier);
                (&mut sleep).await;
                let woke = Instant::now();
                assert!(woke >= earlier, "completed before its new deadline");
                assert!(woke < earlier + LATE_OK, "waited {:?}", woke - start);
            }
            in_coroutine_and_task(rt(), check);
        }

        /// tokio `time_sleep.rs` `reset_future_sleep_after_fire`: a completed sleep reset to a
        /// later deadline waits again, until that deadline.
        #[test]
        fn a_completed_sleep_reset_later_waits_until_the_new_deadline() {
            async fn check() {
                let start = Instant::now();
                let mut sleep = time::sleep_until_async(start + 100 * MS);
                (&mut sleep).await;
                assert!(Instant::now() >= start + 100 * MS);
                sleep.reset(start + 110 * MS);
                (&mut sleep).await;
                assert!(Instant::now() >= start + 110 * MS, "completed before its new deadline");
                // And a reset well ahead of a completed sleep is pending, not ready.
                sleep.reset(Instant::now() + HOUR);
                assert!(poll_once(&mut sleep).await.is_pending());
            }
            in_coroutine_and_task(rt(), check);
        }

        /// tokio `time_sleep.rs` `reset_sleep_to_past`: a registered sleep is not woken before its
        /// deadline; reset to an instant that has passed, it is ready at its next poll.
        #[test]
        fn a_registered_sleep_is_not_woken_early_and_reset_to_the_past_is_ready() {
            async fn check() {
                let start = Instant::now();
                let (log, waker) = WakeLog::new();
                let mut sleep = time::sleep_until_async(start + HOUR);
                corio::yield_now_async().await; // a fresh budget for the polls by hand
                assert!(poll_with(&mut sleep, &waker).is_pending());
                time::sleep_async(50 * MS).await;
                assert_eq!(log.count(), 0, "woken long before its deadline");
                sleep.reset(start + 40 * MS);
                corio::yield_now_async().await;
                assert!(poll_with(&mut sleep, &waker).is_ready());
            }
            in_coroutine_and_task(rt(), check);
        }

        /// tokio `time_sleep.rs` `drop_after_reschedule_at_new_scheduled_time`: three registered
        /// sleeps, one of them moved to a later deadline; the first completes and the moved one is
        /// dropped, which leaves the other timers intact.
        #[test]
        fn dropping_a_rescheduled_sleep_leaves_the_other_timers_intact() {
            async fn check() {
                let start = Instant::now();
                let mut a = time::sleep_until_async(start + 5 * MS);
                let mut b = time::sleep_until_async(start + 5 * MS);
                let mut c = time::sleep_until_async(start + 10 * MS);
                let _ = poll_once(&mut a).await;
                let _ = poll_once(&mut b).await;
                let _ = poll_once(&mut c).await;
                b.reset(start + 10 * MS);
                (&mut a).await;
                assert!(Instant::now() >= start + 5 * MS);
                drop(b);
                (&mut c).await;
                assert!(Instant::now() >= start + 10 * MS);
                // The same, awaiting the moved one instead of dropping it.
                let start = Instant::now();
                let mut a = time::sleep_until_async(start + 5 * MS);
                let mut b = time::sleep_until_async(start + 5 * MS);
                let _ = poll_once(&mut a).await;
                let _ = poll_once(&mut b).await;
                b.reset(start + 10 * MS);
                (&mut a).await;
                (&mut b).await;
                let woke = Instant::now();
                assert!(woke >= start + 10 * MS, "the moved sleep fired at its old deadline");
            }
            in_coroutine_and_task(rt(), check);
        }

        /// tokio `time_sleep.rs` `long_wait_sleep_does_not_break_other_timers`: with a sleep of
        /// `10 << 36` ms (22 years) pending, a 10 ms sleep still fires on time.
        #[test]
        fn a_very_long_sleep_does_not_break_other_timers() {
            const LONG: Duration = Duration::from_millis(10 << 36);
            let rt = rt();
            within(EVENTUALLY, move || {
                let long_task = rt.spawn(time::sleep_async(LONG));
                let long_coroutine = rt.go(|| corio::sleep(LONG));
                rt.run(|| {
                    corio::sleep(5 * MS); // let both register
                    let start = Instant::now();
                    corio::sleep(10 * MS);
                    let took = start.elapsed();
                    assert!(took >= 10 * MS && took < 10 * MS + LATE_OK, "{took:?}");
                });
                unwrap_task(rt.block_on(rt.spawn(async {
                    let start = Instant::now();
                    time::sleep_async(10 * MS).await;
                    let took = start.elapsed();
                    assert!(took >= 10 * MS && took < 10 * MS + LATE_OK, "{took:?}");
                })));
                assert!(!long_task.is_finished() && !long_coroutine.is_finished());
                long_task.abort();
                long_coroutine.abort();
                assert!(long_task.join().unwrap_err().is_cancelled());
                assert!(long_coroutine.join().unwrap_err().is_cancelled());
            });
        }

        /// tokio `time_sleep.rs` `long_wait_sleep_does_not_corrupt_wheel`: with a 22-year sleep
        /// pending, two short sleeps registered, fired and dropped leave the timers working (a
        /// later sleep fires on time, the long one stays pending).
        #[test]
        fn fired_sleeps_dropped_beside_a_very_long_one_leave_the_timers_working() {
            async fn check() {
                let mut long = time::sleep_async(Duration::from_millis(10 << 36));
                assert!(poll_once(&mut long).await.is_pending());
                let start = Instant::now();
                let mut first = time::sleep_until_async(start + 10 * MS);
                let mut second = time::sleep_until_async(start + 20 * MS);
                let _ = poll_once(&mut first).await;
                let _ = poll_once(&mut second).await;
                time::sleep_async(30 * MS).await;
                drop(first);
                time::sleep_async(5 * MS).await;
                drop(second);
                let start = Instant::now();
                time::sleep_async(10 * MS).await;
                assert!(start.elapsed() >= 10 * MS);
                assert!(time::timeout_async(5 * MS, &mut long).await.is_err());
            }
            in_coroutine_and_task(rt(), check);
        }

        /// tokio `time_sleep.rs` `greater_than_max`, `multi_long_sleeps`, `long_sleeps`,
        /// `exactly_max`, `issue_5183` and `no_out_of_bounds_close_to_max`: sleeps of 1, 5 and 10
        /// years, `u64::MAX / 10` s, `Duration::MAX - 1 ms` and `Duration::MAX` register, stay
        /// pending and panic nowhere, and a 1 ns sleep raced against each wins.
        #[test]
        fn far_deadlines_register_stay_pending_and_lose_to_a_short_sleep() {
            const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
            const FAR: [Duration; 6] = [
                YEAR,
                Duration::from_secs(5 * 365 * 24 * 3600),
                Duration::from_secs(10 * 365 * 24 * 3600),
                Duration::from_secs(u64::MAX / 10),
                Duration::MAX.saturating_sub(Duration::from_millis(1)),
                Duration::MAX,
            ];
            async fn check() {
                for d in FAR {
                    let before = Instant::now();
                    let mut far = time::sleep_async(d);
                    assert!(far.deadline() > before, "{d:?}: a deadline in the past");
                    assert!(!far.is_elapsed(), "{d:?}");
                    assert!(poll_once(&mut far).await.is_pending(), "{d:?}");
                    // `issue_5183`: `select!` with `biased;`, the far sleep polled first.
                    let mut short = time::sleep_async(Duration::from_nanos(1));
                    let won = poll_fn(|cx| {
                        if Pin::new(&mut far).poll(cx).is_ready() {
                            return Poll::Ready(false);
                        }
                        Pin::new(&mut short).poll(cx).map(|()| true)
                    })
                    .await;
                    assert!(won, "{d:?}: the far sleep completed");
                    // Ten of them one after another (`multi_long_sleeps`), each dropped pending.
                    for _ in 0..10 {
                        let mut again = time::sleep_until_async(far.deadline());
                        assert!(poll_once(&mut again).await.is_pending(), "{d:?}");
                    }
                }
            }
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    corio::block_on(check());
                    for d in FAR {
                        assert!(time::timeout(5 * MS, time::sleep_async(d)).is_err(), "{d:?}");
                    }
                });
                unwrap_task(rt.block_on(rt.spawn(check())));
                // And the runtime's timers still work.
                let start = Instant::now();
                rt.block_on(time::sleep_async(5 * MS));
                assert!(start.elapsed() >= 5 * MS);
            });
        }

        /// tokio `time_sleep.rs` `drop_from_waker_drop`: dropping a registered sleep drops its
        /// waker, and that waker's destructor drops another registered sleep (cancelling it takes
        /// the timer heap's lock again): no deadlock, no panic; the same when the waker's last
        /// reference goes with a timer that fires.
        #[test]
        fn a_wakers_destructor_may_drop_another_registered_sleep() {
            async fn check() {
                check_waker_drop_drops_a_sleep().await;
            }
            in_coroutine_and_task(rt(), check);
        }

        /// tokio `time_alt.rs` `cancelled_timer_waker_drop_can_register_timer`: the destructor of
        /// a cancelled sleep's waker registers a new timer (polls a fresh sleep): no deadlock.
        #[test]
        fn a_cancelled_sleeps_waker_may_register_a_timer_when_dropped() {
            async fn check() {
                check_waker_drop_registers_a_sleep().await;
            }
            in_coroutine_and_task(rt(), check);
        }
    }
}

/// A waker whose destructor drops the sleep it holds.
struct OwnsSleep {
    held: Mutex<Option<Sleep>>,
    dropped: Arc<AtomicBool>,
    woken: AtomicUsize,
}

impl Wake for OwnsSleep {
    fn wake(self: Arc<Self>) {
        self.woken.fetch_add(1, SeqCst);
    }
}

impl Drop for OwnsSleep {
    fn drop(&mut self) {
        drop(self.held.lock().unwrap().take());
        self.dropped.store(true, SeqCst);
    }
}

/// A waker whose destructor registers a new timer (one poll of a fresh sleep).
struct RegistersOnDrop {
    registered: Arc<AtomicBool>,
    woken: AtomicUsize,
}

impl Wake for RegistersOnDrop {
    fn wake(self: Arc<Self>) {
        self.woken.fetch_add(1, SeqCst);
    }
}

impl Drop for RegistersOnDrop {
    fn drop(&mut self) {
        let mut sleep = time::sleep_async(Duration::from_secs(5));
        let pending = poll_with(&mut sleep, Waker::noop()).is_pending();
        drop(sleep);
        self.registered.store(pending, SeqCst);
    }
}

/// The body of `a_wakers_destructor_may_drop_another_registered_sleep`, wherever it is polled.
async fn check_waker_drop_drops_a_sleep() {
    // Cancelled: the primary sleep is dropped while pending.
    corio::yield_now_async().await;
    let mut secondary = time::sleep_async(HOUR);
    assert!(poll_with(&mut secondary, Waker::noop()).is_pending());
    let dropped = Arc::new(AtomicBool::new(false));
    let owner = Arc::new(OwnsSleep {
        held: Mutex::new(Some(secondary)),
        dropped: dropped.clone(),
        woken: AtomicUsize::new(0),
    });
    let waker = Waker::from(owner);
    let mut primary = time::sleep_async(HOUR);
    assert!(poll_with(&mut primary, &waker).is_pending());
    drop(waker);
    assert!(
        !dropped.load(SeqCst),
        "the timer let its waker go while registered"
    );
    drop(primary);
    assert!(dropped.load(SeqCst), "the cancelled timer kept its waker");
    // Fired: the primary's waker has its last reference in the timer, which wakes it by value.
    corio::yield_now_async().await;
    let mut secondary = time::sleep_async(HOUR);
    assert!(poll_with(&mut secondary, Waker::noop()).is_pending());
    let dropped = Arc::new(AtomicBool::new(false));
    let waker = Waker::from(Arc::new(OwnsSleep {
        held: Mutex::new(Some(secondary)),
        dropped: dropped.clone(),
        woken: AtomicUsize::new(0),
    }));
    let deadline = Instant::now() + 5 * MS;
    let mut primary = time::sleep_until_async(deadline);
    let polled = poll_with(&mut primary, &waker);
    drop(waker);
    if polled.is_pending() {
        let start = Instant::now();
        while !dropped.load(SeqCst) {
            assert!(
                start.elapsed() < EVENTUALLY,
                "the fired timer never let its waker go"
            );
            time::sleep_async(MS).await;
        }
        assert!(Instant::now() >= deadline);
    }
    drop(primary);
    // The timers still work.
    let start = Instant::now();
    time::sleep_async(2 * MS).await;
    assert!(start.elapsed() >= 2 * MS);
}

/// The body of `a_cancelled_sleeps_waker_may_register_a_timer_when_dropped`.
async fn check_waker_drop_registers_a_sleep() {
    corio::yield_now_async().await;
    let registered = Arc::new(AtomicBool::new(false));
    let waker = Waker::from(Arc::new(RegistersOnDrop {
        registered: registered.clone(),
        woken: AtomicUsize::new(0),
    }));
    let mut timer = time::sleep_async(Duration::from_secs(10));
    assert!(poll_with(&mut timer, &waker).is_pending());
    drop(waker);
    corio::yield_now_async().await;
    drop(timer);
    assert!(
        registered.load(SeqCst),
        "the waker's destructor did not run at the cancel"
    );
    corio::yield_now_async().await;
    let start = Instant::now();
    time::sleep_async(2 * MS).await;
    assert!(start.elapsed() >= 2 * MS);
}

/// tokio `time_sleep.rs` `drop_from_waker_drop` and `time_alt.rs`
/// `cancelled_timer_waker_drop_can_register_timer` on plain threads: with no runtime (the
/// fallback timer thread) and inside `Runtime::enter` (worker 0's heap, from outside).
#[test]
fn waker_destructors_that_touch_timers_work_on_plain_threads() {
    within(EVENTUALLY, || {
        corio::block_on(check_waker_drop_drops_a_sleep());
        corio::block_on(check_waker_drop_registers_a_sleep());
        let rt = support::rt(1);
        let _entered = rt.enter();
        corio::block_on(check_waker_drop_drops_a_sleep());
        corio::block_on(check_waker_drop_registers_a_sleep());
        rt.block_on(check_waker_drop_drops_a_sleep());
    });
}

// ---------------------------------------------------------------------------------------------
// time_timeout.rs
// ---------------------------------------------------------------------------------------------

type Waited = Result<Result<u32, oneshot::RecvError>, time::Elapsed>;

mod time_timeout {
    use super::*;

    rt_common! {
        /// tokio `time_timeout.rs` `future_and_deadline_in_future`, `future_and_timeout_in_future`
        /// and `very_large_timeout`: a timeout (an instant, a duration, `Duration::MAX`) around a
        /// future that is not ready stays pending, is not woken while nothing happens, is woken
        /// when the future's value comes, and gives that value.
        #[test]
        fn a_timeout_gives_the_value_that_comes_before_its_deadline() {
            async fn check() {
                for form in 0..3 {
                    let (tx, rx) = oneshot::channel::<u32>();
                    let (log, waker) = WakeLog::new();
                    let mut fut: Pin<Box<dyn Future<Output = Waited> + Send>> = match form {
                        0 => Box::pin(time::timeout_at_async(Instant::now() + HOUR, rx)),
                        1 => Box::pin(time::timeout_async(HOUR, rx)),
                        _ => Box::pin(time::timeout_async(Duration::MAX, rx)),
                    };
                    corio::yield_now_async().await;
                    assert!(poll_with(&mut fut, &waker).is_pending(), "form {form}");
                    time::sleep_async(90 * MS).await;
                    corio::yield_now_async().await;
                    assert!(poll_with(&mut fut, &waker).is_pending(), "form {form}");
                    assert_eq!(log.count(), 0, "form {form}: woken while nothing happened");
                    tx.send(7).unwrap();
                    assert!(log.count() > 0, "form {form}: the value did not wake the timeout");
                    let got = poll_with(&mut fut, &waker);
                    assert!(matches!(got, Poll::Ready(Ok(Ok(7)))), "form {form}: {got:?}");
                }
            }
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    for form in 0..3 {
                        let (tx, rx) = oneshot::channel::<u32>();
                        let sender = corio::go(move || {
                            corio::sleep(90 * MS);
                            tx.send(7).unwrap();
                        });
                        let start = Instant::now();
                        let got = match form {
                            0 => time::timeout_at(Instant::now() + HOUR, rx),
                            1 => time::timeout(HOUR, rx),
                            _ => time::timeout(Duration::MAX, rx),
                        };
                        assert!(matches!(got, Ok(Ok(7))), "form {form}: {got:?}");
                        assert!(start.elapsed() >= 90 * MS);
                        sender.join().unwrap();
                    }
                    corio::block_on(check());
                });
                unwrap_task(rt.block_on(rt.spawn(check())));
                rt.block_on(check());
            });
        }

        /// tokio `time_timeout.rs` `deadline_now_elapses`: a timeout whose deadline is now (or a
        /// zero duration) around a future that never completes elapses at once.
        #[test]
        fn a_timeout_with_a_deadline_of_now_elapses_at_once() {
            async fn check() {
                let now = Instant::now();
                assert!(time::timeout_at_async(now, pending::<()>()).await.is_err());
                assert!(time::timeout_async(Duration::ZERO, pending::<()>()).await.is_err());
                assert!(now.elapsed() < LATE_OK, "waited for a deadline that had come");
            }
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let now = Instant::now();
                    assert!(time::timeout_at(now, pending::<()>()).is_err());
                    assert!(time::timeout(Duration::ZERO, pending::<()>()).is_err());
                    assert!(now.elapsed() < LATE_OK);
                    corio::block_on(check());
                });
                unwrap_task(rt.block_on(rt.spawn(check())));
                rt.block_on(check());
            });
        }

        /// tokio `time_timeout.rs` `deadline_future_elapses`: a timeout 300 ms ahead around a
        /// future that never completes is pending, is woken by its timer — never before the
        /// deadline — and then gives `Elapsed`.
        #[test]
        fn a_timeout_is_woken_at_its_deadline_and_elapses() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| corio::block_on(check_timeout_elapses_at_its_deadline()));
                unwrap_task(rt.block_on(rt.spawn(check_timeout_elapses_at_its_deadline())));
                rt.block_on(check_timeout_elapses_at_its_deadline());
            });
        }
    }
}

/// The body of `a_timeout_is_woken_at_its_deadline_and_elapses`, wherever it is polled.
async fn check_timeout_elapses_at_its_deadline() {
    let deadline = Instant::now() + 300 * MS;
    let (log, waker) = WakeLog::new();
    let mut fut = Box::pin(time::timeout_at_async(deadline, pending::<()>()));
    corio::yield_now_async().await;
    if poll_with(&mut fut, &waker).is_pending() {
        wait_woken(&log).await;
        let woke = log.first().unwrap();
        assert!(
            woke >= deadline,
            "woken {:?} before the deadline",
            deadline - woke
        );
        let got = poll_with(&mut fut, &waker);
        assert!(matches!(got, Poll::Ready(Err(_))), "woken, but {got:?}");
    }
    assert!(Instant::now() >= deadline);
}

/// tokio `time_timeout.rs` `deadline_now_elapses` and `deadline_future_elapses` on a plain
/// thread without a runtime (the fallback timer thread).
#[test]
fn timeouts_elapse_at_their_deadline_on_a_plain_thread() {
    within(EVENTUALLY, || {
        let now = Instant::now();
        assert!(time::timeout_at(now, pending::<()>()).is_err());
        assert!(time::timeout(Duration::ZERO, pending::<()>()).is_err());
        assert!(now.elapsed() < LATE_OK);
        corio::block_on(check_timeout_elapses_at_its_deadline());
    });
}

// ---------------------------------------------------------------------------------------------
// time_rt.rs
// ---------------------------------------------------------------------------------------------

/// tokio `time_rt.rs` `starving`: a future that wakes itself every time it is polled, and
/// polls a sleep each time. The sleep completes, at its deadline.
struct Starve<F> {
    inner: F,
    polls: u64,
}

impl<F: Future<Output = ()> + Unpin> Future for Starve<F> {
    type Output = u64;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        if Pin::new(&mut self.inner).poll(cx).is_ready() {
            return Poll::Ready(self.polls);
        }
        self.polls += 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

async fn starve_until(when: Instant) {
    Starve {
        inner: time::sleep_until_async(when),
        polls: 0,
    }
    .await;
    let now = Instant::now();
    assert!(now >= when, "completed {:?} early", when - now);
    assert!(now < when + LATE_OK, "completed {:?} late", now - when);
}

mod time_rt {
    use super::*;

    rt_common! {
        /// tokio `time_rt.rs` `timer_with_threaded_runtime` and
        /// `timer_with_current_thread_scheduler`: a spawned task, a coroutine and `block_on` sleep
        /// until an instant and report to a plain thread over a std channel.
        #[test]
        fn timers_in_tasks_coroutines_and_block_on_report_to_a_plain_thread() {
            let rt = rt();
            within(EVENTUALLY, move || {
                let (tx, rx) = std::sync::mpsc::channel();
                let t = tx.clone();
                rt.spawn(async move {
                    let when = Instant::now() + 10 * MS;
                    time::sleep_until_async(when).await;
                    t.send(Instant::now() >= when).unwrap();
                });
                let t = tx.clone();
                rt.go(move || {
                    let when = Instant::now() + 10 * MS;
                    time::sleep_until(when);
                    t.send(Instant::now() >= when).unwrap();
                });
                rt.block_on(async move {
                    let when = Instant::now() + 10 * MS;
                    time::sleep_until_async(when).await;
                    tx.send(Instant::now() >= when).unwrap();
                });
                for _ in 0..3 {
                    assert!(rx.recv_timeout(EVENTUALLY).unwrap(), "a sleep ended early");
                }
            });
        }

        /// tokio `time_rt.rs` `timeout_value`: a timeout around a receiver whose sender stays
        /// alive elapses, no sooner than its duration — in `block_on`, a task and a coroutine.
        #[test]
        fn a_timeout_around_a_silent_receiver_elapses_after_its_duration() {
            async fn check() {
                let (_tx, rx) = oneshot::channel::<()>();
                let now = Instant::now();
                let res = time::timeout_async(10 * MS, rx).await;
                assert!(res.is_err(), "{res:?}");
                assert!(Instant::now() >= now + 10 * MS);
            }
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.block_on(check());
                unwrap_task(rt.block_on(rt.spawn(check())));
                rt.run(|| {
                    let (_tx, rx) = oneshot::channel::<()>();
                    let now = Instant::now();
                    assert!(time::timeout(10 * MS, rx).is_err());
                    assert!(Instant::now() >= now + 10 * MS);
                });
            });
        }

        /// tokio `time_rt.rs` `starving`: a sleep polled by a future that wakes itself at every
        /// poll (so its task never stops being runnable) still completes at its deadline — in
        /// `block_on` on a plain thread, in a task and in a coroutine.
        #[test]
        fn a_sleep_inside_a_self_waking_future_completes() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.block_on(starve_until(Instant::now() + 10 * MS));
                let task = rt.spawn(starve_until(Instant::now() + 10 * MS));
                unwrap_task(rt.block_on(task));
                rt.run(|| corio::block_on(starve_until(Instant::now() + 10 * MS)));
                // Several at once, all spinning on the same workers.
                let when = Instant::now() + 20 * MS;
                let tasks: Vec<_> = (0..4).map(|_| rt.spawn(starve_until(when))).collect();
                let coroutines: Vec<_> = (0..4)
                    .map(|_| rt.go(move || corio::block_on(starve_until(when))))
                    .collect();
                for t in tasks {
                    unwrap_task(t.join());
                }
                for c in coroutines {
                    unwrap_task(c.join());
                }
            });
        }
    }
}

/// tokio `time_rt.rs` `tickspace`, with real time: a sleep made under one runtime, reset and
/// registered in another whose clock started 200 ms later, and awaited under the first (and
/// the other way round, by tasks) completes at its deadline, never before: each runtime keeps
/// its deadlines on its own epoch, and a mix-up shows as a wake-up up to 200 ms early.
#[test]
#[allow(clippy::async_yields_async)] // the blocks hand a `Sleep` over, on purpose
fn a_sleep_moved_between_runtimes_with_different_epochs_keeps_its_deadline() {
    within(EVENTUALLY, || {
        let rt_past = support::rt(1);
        std::thread::sleep(200 * MS);
        let rt_now = support::rt(1);
        let mut sleep = {
            let _entered = rt_past.enter();
            let mut sleep = time::sleep_async(200 * MS);
            let _ = poll_with(&mut sleep, Waker::noop()); // in rt_past's heap
            sleep
        };
        let deadline = sleep.deadline() + 50 * MS;
        let mut sleep = rt_now.block_on(async move {
            sleep.reset(deadline);
            let _ = poll_once(&mut sleep).await; // in rt_now's heap
            sleep
        });
        rt_past.block_on(&mut sleep);
        let woke = Instant::now();
        assert!(woke >= deadline, "completed {:?} early", deadline - woke);
        assert!(woke < deadline + LATE_OK);
        // Registered by a task of rt_past (the earlier epoch), awaited by a task of rt_now.
        let deadline = Instant::now() + 100 * MS;
        let sleep = unwrap_task(rt_past.block_on(rt_past.spawn(async move {
            let mut sleep = time::sleep_until_async(deadline);
            let _ = poll_once(&mut sleep).await;
            sleep
        })));
        let woke = unwrap_task(rt_now.block_on(rt_now.spawn(async move {
            sleep.await;
            Instant::now()
        })));
        assert!(woke >= deadline, "completed {:?} early", deadline - woke);
        assert!(woke < deadline + LATE_OK);
    });
}

// ---------------------------------------------------------------------------------------------
// time_panic.rs
// ---------------------------------------------------------------------------------------------

/// tokio `time_panic.rs` `interval_panic_caller` and `interval_at_panic_caller` (and
/// `time_interval.rs` `interval_zero_duration` for `interval_at`): a zero period panics, and
/// the panic points at the caller's file, not at corio's.
#[test]
fn a_zero_period_panics_pointing_at_the_callers_file() {
    record_corio_panics();
    let r = catch_unwind(|| time::interval(Duration::ZERO));
    assert!(r.is_err());
    let r = catch_unwind(|| time::interval_at(Instant::now(), Duration::ZERO));
    assert!(r.is_err());
    let files = take_panics(MARKS[0]);
    assert_eq!(files.len(), 2, "{files:?}");
    for f in files {
        assert_eq!(f, file!());
    }
}

/// tokio `time_panic.rs` `timeout_panic_caller` and `timeout_at_panic_caller`, as corio can
/// misuse its timers: the blocking-style calls (`sleep`, `sleep_until`, `timeout`,
/// `timeout_at`, `Interval::tick`) inside an async task panic, with the caller's location.
#[test]
fn blocking_style_timer_calls_in_an_async_task_panic_pointing_at_the_callers_file() {
    record_corio_panics();
    type Call = fn();
    let calls: [Call; 5] = [
        || corio::sleep(MS),
        || time::sleep_until(Instant::now() + MS),
        || {
            let _ = time::timeout(MS, pending::<()>());
        },
        || {
            let _ = time::timeout_at(Instant::now() + MS, pending::<()>());
        },
        || {
            let _ = time::interval(MS).tick();
        },
    ];
    let rt = support::rt(1);
    within(EVENTUALLY, move || {
        for call in calls {
            let err = rt.block_on(rt.spawn(async move { call() })).unwrap_err();
            assert!(err.is_panic(), "{err}");
        }
    });
    let files = take_panics(MARKS[1]);
    assert_eq!(files.len(), calls.len(), "{files:?}");
    for f in files {
        assert_eq!(f, file!(), "the panic points into corio");
    }
}

// ---------------------------------------------------------------------------------------------
// time_interval.rs
// ---------------------------------------------------------------------------------------------

mod time_interval {
    use super::*;

    rt_common! {
        /// tokio `time_interval.rs` `reset_doesnt_panic_max_duration`: an interval of
        /// `Duration::MAX` can be reset (its next tick is then never), and reset to now it ticks
        /// once more and then never again.
        #[test]
        fn an_interval_of_the_longest_period_can_be_reset() {
            async fn check() {
                let mut every = time::interval(Duration::MAX);
                every.reset();
                assert!(time::timeout_async(5 * MS, every.tick_async()).await.is_err());
                let now = Instant::now();
                every.reset_at(now);
                assert_eq!(every.tick_async().await, now);
                assert!(time::timeout_async(5 * MS, every.tick_async()).await.is_err());
            }
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let mut every = time::interval(Duration::MAX);
                    assert!(every.tick() <= Instant::now());
                    every.reset();
                    assert!(time::timeout(5 * MS, every.tick_async()).is_err());
                    corio::block_on(check());
                });
                unwrap_task(rt.block_on(rt.spawn(check())));
            });
        }

        /// tokio `time_interval.rs` `reset_immediately`, through `reset_at(Instant::now())`: the
        /// next tick is the reset instant, at once, and the grid goes on from there.
        #[test]
        fn an_interval_reset_to_now_ticks_at_once_and_follows_the_new_grid() {
            const P: Duration = Duration::from_millis(100);
            fn on_grid(t: Instant, origin: Instant) -> bool {
                t > origin && (t - origin).as_nanos().is_multiple_of(P.as_nanos())
            }
            async fn check() {
                let start = Instant::now();
                let mut every = time::interval_at(start, P);
                assert_eq!(every.tick_async().await, start);
                let second = every.tick_async().await;
                assert!(on_grid(second, start), "{:?}", second - start);
                time::sleep_async(P / 3).await;
                let reset = Instant::now();
                every.reset_at(reset);
                assert_eq!(every.tick_async().await, reset);
                assert!(reset.elapsed() < LATE_OK, "the tick after the reset waited");
                let next = every.tick_async().await;
                assert!(on_grid(next, reset), "off the new grid: {:?}", next - reset);
                assert!(Instant::now() >= next);
            }
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    let start = Instant::now();
                    let mut every = time::interval_at(start, P);
                    assert_eq!(every.tick(), start);
                    assert!(on_grid(every.tick(), start));
                    corio::sleep(P / 3);
                    let reset = Instant::now();
                    every.reset_at(reset);
                    assert_eq!(every.tick(), reset);
                    assert!(reset.elapsed() < LATE_OK);
                    let next = every.tick();
                    assert!(on_grid(next, reset), "off the new grid: {:?}", next - reset);
                    assert!(Instant::now() >= next);
                });
                unwrap_task(rt.block_on(rt.spawn(check())));
            });
        }

        /// `runtime/time/tests` `interval_poll_tick_races_with_fire`: tick futures polled and
        /// dropped before and around the tick's instant (their timers registered, then cancelled,
        /// some just as they fire) lose nothing: the next tick awaited is still that instant, and
        /// the one after it waits for its period (an hour).
        #[test]
        fn dropped_tick_futures_lose_no_tick() {
            async fn check() {
                const P: Duration = Duration::from_secs(3600);
                let start = Instant::now() + 30 * MS;
                let mut every = time::interval_at(start, P);
                let mut taken = false;
                while Instant::now() < start + 10 * MS {
                    let tick = pin!(every.tick_async());
                    if let Poll::Ready(due) = tick.poll(&mut Context::from_waker(Waker::noop())) {
                        // Only once the instant has come: the tick is taken then.
                        assert_eq!(due, start);
                        assert!(Instant::now() >= start);
                        taken = true;
                        break;
                    }
                    corio::yield_now_async().await;
                }
                if !taken {
                    assert_eq!(every.tick_async().await, start, "a dropped tick future lost it");
                }
                assert!(Instant::now() >= start);
                let next = time::timeout_async(20 * MS, every.tick_async()).await;
                assert!(next.is_err(), "the tick after it came early");
            }
            in_coroutine_and_task(rt(), check);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// rt_common.rs (timers) and time_alt.rs
// ---------------------------------------------------------------------------------------------

mod rt_common_timers {
    use super::*;

    rt_common! {
        /// tokio `rt_common.rs` `sleep_in_spawn`: a spawned task (and a coroutine) sleeps, then
        /// sends on a oneshot that `block_on` (and the main coroutine) waits for.
        #[test]
        fn a_spawned_sleeper_reports_after_its_sleep() {
            const D: Duration = Duration::from_millis(50);
            let rt = rt();
            within(EVENTUALLY, move || {
                let now = Instant::now();
                rt.block_on(async {
                    let (tx, rx) = oneshot::channel();
                    corio::spawn(async move {
                        time::sleep_async(D).await;
                        tx.send(()).unwrap();
                    });
                    rx.await.unwrap();
                });
                assert!(now.elapsed() >= D);
                rt.run(|| {
                    let now = Instant::now();
                    let (tx, rx) = oneshot::channel();
                    corio::go(move || {
                        corio::sleep(D);
                        tx.send(()).unwrap();
                    });
                    rx.recv().unwrap();
                    assert!(now.elapsed() >= D);
                });
            });
        }

        /// tokio `rt_common.rs` `sleep_from_blocking`: a corio sleep awaited by an executor that
        /// is not corio's, on the runtime's blocking pool, lasts its duration (the runtime's timer
        /// wakes a foreign waker); `corio::sleep` there sleeps the thread.
        #[test]
        fn a_sleep_awaited_by_a_foreign_executor_on_the_blocking_pool_completes() {
            let rt = rt();
            within(EVENTUALLY, move || {
                let took = rt.block_on(async {
                    corio::spawn_blocking(|| {
                        let mut took = Vec::new();
                        for d in [MS, 20 * MS] {
                            let now = Instant::now();
                            foreign_block_on(time::sleep_async(d));
                            took.push((d, now.elapsed()));
                            let now = Instant::now();
                            corio::sleep(d);
                            took.push((d, now.elapsed()));
                        }
                        took
                    })
                    .await
                    .unwrap()
                });
                for (d, t) in took {
                    assert!(t >= d && t < d + LATE_OK, "{d:?} took {t:?}");
                }
            });
        }

        /// `sleep_from_blocking` again, with the foreign executor run inside `corio::blocking` in
        /// a coroutine (the documented place for one: "a foreign executor in it may poll corio
        /// futures"): the sleep's timer is on the worker that the blocking call holds, and must
        /// still fire.
        #[test]
        fn a_sleep_awaited_by_a_foreign_executor_inside_corio_blocking_completes() {
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.run(|| {
                    for d in [MS, 20 * MS] {
                        let now = Instant::now();
                        corio::blocking(|| foreign_block_on(time::sleep_async(d)));
                        let took = now.elapsed();
                        assert!(took >= d && took < d + LATE_OK, "{d:?} took {took:?}");
                        // And corio's own blocking-style sleep called inside `blocking`.
                        let now = Instant::now();
                        corio::blocking(|| corio::sleep(d));
                        let took = now.elapsed();
                        assert!(took >= d && took < d + LATE_OK, "{d:?} took {took:?}");
                    }
                });
            });
        }

        /// tokio `rt_common.rs` `always_active_parker`: two plain threads in `block_on` on one
        /// runtime at once, each sleeping and waiting for the other over oneshots.
        #[test]
        fn two_threads_in_block_on_sleep_and_wait_for_each_other() {
            let rt = Arc::new(rt());
            within(EVENTUALLY, move || {
                let (tx1, rx1) = oneshot::channel::<()>();
                let (tx2, rx2) = oneshot::channel::<()>();
                let rt1 = rt.clone();
                let a = std::thread::spawn(move || {
                    rt1.block_on(async move {
                        rx2.await.unwrap();
                        time::sleep_async(5 * MS).await;
                        tx1.send(()).unwrap();
                    });
                });
                let rt2 = rt.clone();
                let b = std::thread::spawn(move || {
                    rt2.block_on(async move {
                        tx2.send(()).unwrap();
                        time::sleep_async(5 * MS).await;
                        rx1.await.unwrap();
                        time::sleep_async(5 * MS).await;
                    });
                });
                a.join().unwrap();
                b.join().unwrap();
            });
        }

        /// tokio `rt_common.rs` `shutdown_wakeup_time`: after a sleep in `block_on`, shutting the
        /// runtime down with a very long timeout returns at once (no worker waits on a timer);
        /// the same with sleepers of an hour pending, which are cancelled.
        #[test]
        fn shutdown_after_sleeps_returns_at_once() {
            within(EVENTUALLY, move || {
                let first = rt();
                first.block_on(time::sleep_async(100 * MS));
                let start = Instant::now();
                first.shutdown_timeout(Duration::from_secs(10_000));
                assert!(start.elapsed() < LATE_OK, "shutdown took {:?}", start.elapsed());

                let second = rt();
                let task = second.spawn(time::sleep_async(HOUR));
                let coroutine = second.go(|| corio::sleep(HOUR));
                second.block_on(time::sleep_async(20 * MS));
                let start = Instant::now();
                second.shutdown_timeout(Duration::from_secs(10_000));
                assert!(start.elapsed() < LATE_OK, "shutdown took {:?}", start.elapsed());
                assert!(task.join().unwrap_err().is_cancelled());
                assert!(coroutine.join().unwrap_err().is_cancelled());
            });
        }

        /// tokio `time_alt.rs` `timeout`: 512 timeouts around futures that never complete, in
        /// tasks and in coroutines (and one in `block_on`), all elapse, none before its duration.
        #[test]
        fn hundreds_of_expiring_timeouts_all_elapse_on_time() {
            const N: usize = 512;
            const D: Duration = Duration::from_millis(10);
            let rt = rt();
            within(EVENTUALLY, move || {
                rt.block_on(async {
                    let now = Instant::now();
                    assert!(time::timeout_async(D, pending::<()>()).await.is_err());
                    assert!(now.elapsed() >= D);
                    let tasks: Vec<_> = (0..N)
                        .map(|_| {
                            corio::spawn(async {
                                let now = Instant::now();
                                assert!(time::timeout_async(D, pending::<()>()).await.is_err());
                                assert!(now.elapsed() >= D, "elapsed after {:?}", now.elapsed());
                            })
                        })
                        .collect();
                    let coroutines: Vec<_> = (0..N)
                        .map(|_| {
                            corio::go(|| {
                                let now = Instant::now();
                                assert!(time::timeout(D, pending::<()>()).is_err());
                                assert!(now.elapsed() >= D, "elapsed after {:?}", now.elapsed());
                            })
                        })
                        .collect();
                    for t in tasks.into_iter().chain(coroutines) {
                        unwrap_task(t.await);
                    }
                });
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// src/runtime/time/tests/mod.rs
// ---------------------------------------------------------------------------------------------

mod time_internals {
    use super::*;

    rt_common! {
        /// `runtime/time/tests` `single_timer`, `change_waker` and `drop_timer`: a sleep polled
        /// from a plain thread inside `Runtime::enter` (first with a no-op waker, then with a real
        /// one) completes at its deadline; sleeps polled twice with no-op wakers and dropped around
        /// their deadline, from plain threads and tasks at once, leave the runtime's timers
        /// working.
        #[test]
        fn sleeps_polled_from_other_threads_fire_change_wakers_and_drop_cleanly() {
            let rt = Arc::new(rt());
            within(EVENTUALLY, move || {
                // single_timer / change_waker
                let r = rt.clone();
                std::thread::spawn(move || {
                    let _entered = r.enter();
                    let mut sleep = time::sleep_async(20 * MS);
                    let deadline = sleep.deadline();
                    let _ = poll_with(&mut sleep, Waker::noop());
                    foreign_block_on(&mut sleep);
                    assert!(Instant::now() >= deadline);
                    let mut sleep = time::sleep_async(20 * MS);
                    let _ = poll_with(&mut sleep, Waker::noop());
                    corio::block_on(&mut sleep);
                    assert!(Instant::now() >= sleep.deadline());
                })
                .join()
                .unwrap();
                // drop_timer, many times over, racing the fires.
                let threads: Vec<_> = (0..2u64)
                    .map(|k| {
                        let r = rt.clone();
                        std::thread::spawn(move || {
                            let _entered = r.enter();
                            for i in 0..300u64 {
                                let d = Duration::from_micros((i * 37 + k * 11) % 2_000);
                                let mut sleep = time::sleep_async(d);
                                let _ = poll_with(&mut sleep, Waker::noop());
                                std::thread::sleep(Duration::from_micros(i % 3 * 500));
                                let _ = poll_with(&mut sleep, Waker::noop());
                            }
                        })
                    })
                    .collect();
                let tasks: Vec<_> = (0..4u64)
                    .map(|k| {
                        rt.spawn(async move {
                            for i in 0..300u64 {
                                let d = Duration::from_micros((i * 53 + k * 7) % 2_000);
                                let mut sleep = time::sleep_async(d);
                                let _ = poll_with(&mut sleep, Waker::noop());
                                if i % 2 == 0 {
                                    corio::yield_now_async().await;
                                }
                                let _ = poll_with(&mut sleep, Waker::noop());
                            }
                        })
                    })
                    .collect();
                for t in threads {
                    t.join().unwrap();
                }
                for t in tasks {
                    unwrap_task(t.join());
                }
                let start = Instant::now();
                rt.block_on(time::sleep_async(5 * MS));
                assert!(start.elapsed() >= 5 * MS);
                rt.run(|| {
                    let start = Instant::now();
                    corio::sleep(5 * MS);
                    assert!(start.elapsed() >= 5 * MS);
                });
            });
        }

        /// `runtime/time/tests` `poll_process_levels`: 1,024 sleeps whose deadlines are spread over
        /// 50 ms, polled again and again: each is ready only once its deadline has passed, stays
        /// ready, and all complete.
        #[test]
        fn a_thousand_staggered_sleeps_each_complete_at_their_deadline() {
            async fn check() {
                const N: u32 = 1024;
                const STEP: Duration = Duration::from_micros(50);
                /// Sleeps polled per step: well within a poll's budget.
                const CHUNK: usize = 32;
                let base = Instant::now() + 20 * MS;
                let mut sleeps: Vec<Sleep> =
                    (0..N).map(|i| time::sleep_until_async(base + STEP * i)).collect();
                // Register every one (the budget allows a few dozen polls per step).
                for chunk in sleeps.chunks_mut(CHUNK) {
                    for s in chunk {
                        let _ = poll_once(s).await;
                    }
                    corio::yield_now_async().await;
                }
                let mut done = vec![false; N as usize];
                let mut left = N as usize;
                let start = Instant::now();
                while left > 0 {
                    assert!(start.elapsed() < EVENTUALLY, "{left} sleeps never completed");
                    let mut polled = 0;
                    for (i, s) in sleeps.iter_mut().enumerate() {
                        if done[i] {
                            continue;
                        }
                        if poll_once(s).await.is_ready() {
                            let now = Instant::now();
                            assert!(now >= s.deadline(), "sleep {i} completed early");
                            assert!(now < s.deadline() + LATE_OK, "sleep {i} completed late");
                            done[i] = true;
                            left -= 1;
                        }
                        polled += 1;
                        if polled % CHUNK == 0 {
                            corio::yield_now_async().await;
                        }
                    }
                    // Completed sleeps stay ready.
                    for (i, s) in sleeps.iter_mut().enumerate().filter(|(i, _)| done[*i]).take(8) {
                        assert!(poll_once(s).await.is_ready(), "sleep {i} went back to pending");
                    }
                    time::sleep_async(MS).await;
                }
            }
            in_coroutine_and_task(rt(), check);
        }

        /// `runtime/time/tests` `poll_process_levels` with `drop_timer`, against corio's own
        /// layout: 300 sleeps registered in deadline order (the timer queue's sorted run), two in
        /// three dropped before they fire (tombstones, then a compaction), then half of the rest
        /// dropped too (removals after the renumbering), while the earliest fire. Every survivor
        /// completes, none before its deadline.
        #[test]
        fn sleeps_cancelled_out_of_a_deadline_ordered_queue_leave_the_rest_on_time() {
            async fn check() {
                const N: u32 = 300;
                const STEP: Duration = Duration::from_micros(300);
                let base = Instant::now() + 30 * MS;
                let mut sleeps: Vec<Option<Sleep>> = Vec::new();
                for i in 0..N {
                    let mut s = time::sleep_until_async(base + STEP * i);
                    // By hand, with a fresh budget every 32 sleeps.
                    if i % 32 == 0 {
                        corio::yield_now_async().await;
                    }
                    let _ = poll_with(&mut s, Waker::noop());
                    sleeps.push(Some(s));
                }
                for (i, s) in sleeps.iter_mut().enumerate() {
                    if i % 3 != 0 {
                        *s = None;
                    }
                }
                for (i, s) in sleeps.iter_mut().enumerate() {
                    if i % 6 == 3 {
                        *s = None;
                    }
                }
                let mut completed = 0;
                for (i, s) in sleeps.into_iter().enumerate() {
                    let Some(s) = s else { continue };
                    let deadline = s.deadline();
                    s.await;
                    let now = Instant::now();
                    assert!(now >= deadline, "sleep {i} completed {:?} early", deadline - now);
                    completed += 1;
                }
                assert_eq!(completed, 50);
            }
            in_coroutine_and_task(rt(), check);
        }
    }
}

/// tokio's `async_send_sync.rs`, time part: what users hold across `.await`s or share is
/// `Send` and `Sync` (and `Unpin` where corio documents it: `Sleep`).
#[test]
fn time_types_are_send_and_sync() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn unpin<T: Unpin>(_: &T) {}
    let sleep = time::sleep_async(MS);
    send_sync(&sleep);
    unpin(&sleep);
    let timeout = time::timeout_async(MS, std::future::ready(()));
    send_sync(&timeout);
    unpin(&timeout);
    let mut every = time::interval(MS);
    send_sync(&every);
    send_sync(&every.tick_async());
    let elapsed = time::timeout(Duration::ZERO, pending::<()>()).unwrap_err();
    send_sync(&elapsed);
    let _: &dyn std::error::Error = &elapsed;
}

// ---------------------------------------------------------------------------------------------
// timers and the runtime's shutdown
// ---------------------------------------------------------------------------------------------

/// What a plain thread's sleep looked like to the test: its first poll's window, and whether
/// its latest poll was pending.
#[derive(Default)]
struct SleepWatch {
    polls: AtomicUsize,
    pending: AtomicBool,
    first_poll: Mutex<Option<(Instant, Instant)>>,
    waker: Mutex<Option<Waker>>,
}

impl SleepWatch {
    /// Forgets the previous sleep.
    fn reset(&self) {
        self.polls.store(0, SeqCst);
        *self.first_poll.lock().unwrap() = None;
    }
}

/// A sleep whose polls are recorded in a [`SleepWatch`].
struct Watched<'a>(Sleep, &'a SleepWatch);

impl Future for Watched<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let watch = self.1;
        let first = watch.polls.fetch_add(1, SeqCst) == 0;
        *watch.waker.lock().unwrap() = Some(cx.waker().clone());
        let start = Instant::now();
        let res = Pin::new(&mut self.0).poll(cx);
        if first {
            *watch.first_poll.lock().unwrap() = Some((start, Instant::now()));
        }
        watch.pending.store(res.is_pending(), SeqCst);
        res
    }
}

/// tokio `rt_common.rs` `shutdown_wakeup_time` and `sleep_from_blocking`, carried to corio's
/// documented shutdown (docs/scheduler.md, "Cancellation and shutdown": "pending timers of
/// sleepers outside the runtime are handed to a fallback timer thread"; `Sleep::register`
/// sends a sleep polled after the shutdown there too): plain threads sleeping 50 µs at a time
/// through `Handle::block_on` while the runtime is dropped must all wake, whichever side of
/// the shutdown their sleep was registered on.
#[test]
fn sleeps_registered_from_plain_threads_while_the_runtime_shuts_down_all_fire() {
    const THREADS: usize = 6;
    within(EVENTUALLY, || {
        let start = Instant::now();
        let mut round = 0u64;
        while start.elapsed() < Duration::from_secs(15) {
            round += 1;
            let rt = support::rt(1);
            let stop = Arc::new(AtomicBool::new(false));
            let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
            let watches: Vec<Arc<SleepWatch>> = (0..THREADS).map(|_| Arc::default()).collect();
            for watch in &watches {
                let (handle, stop, done_tx) = (rt.handle().clone(), stop.clone(), done_tx.clone());
                let watch = watch.clone();
                std::thread::spawn(move || {
                    loop {
                        let last = stop.load(SeqCst);
                        watch.reset();
                        let sleep = time::sleep_async(Duration::from_micros(50));
                        handle.block_on(Watched(sleep, &watch));
                        if last {
                            break;
                        }
                    }
                    done_tx.send(()).unwrap();
                });
            }
            std::thread::sleep(Duration::from_micros(500 + (round % 7) * 300));
            let dropped = Instant::now();
            drop(rt);
            stop.store(true, SeqCst);
            for _ in 0..THREADS {
                if done_rx.recv_timeout(Duration::from_secs(5)).is_ok() {
                    continue;
                }
                let mut report = String::new();
                for (k, w) in watches.iter().enumerate() {
                    if !w.pending.load(SeqCst) {
                        continue;
                    }
                    let (from, to) = w.first_poll.lock().unwrap().unwrap();
                    let rel = |t: Instant| {
                        t.duration_since(dropped).as_secs_f64() * 1e6
                            - dropped.duration_since(t).as_secs_f64() * 1e6
                    };
                    // Woken by hand and polled again: still pending means that its timer
                    // never fired (not a lost wake-up).
                    let polls = w.polls.load(SeqCst);
                    if let Some(waker) = w.waker.lock().unwrap().clone() {
                        waker.wake();
                    }
                    std::thread::sleep(100 * MS);
                    report += &format!(
                        "\n  thread {k}: a 50 us sleep first polled from {:+.0} us to {:+.0} us \
                         around the drop's start is pending 5 s later; woken by hand and \
                         polled again ({} -> {} polls) it is still pending: {}",
                        rel(from),
                        rel(to),
                        polls,
                        w.polls.load(SeqCst),
                        w.pending.load(SeqCst),
                    );
                }
                panic!("round {round}: a sleep never fired{report}");
            }
        }
    });
}
