//! A sleep whose deadline has passed completes at its first poll ("at once if it has passed",
//! `sleep_until_async`), also on a worker whose last reading of the clock is old or was never
//! taken. Comparing the deadline with that reading instead of the clock, to save hyper's
//! header-read timeout a clock read per request, broke both cases: the reading of an idle
//! worker lags the present by as long as it idled (`docs/net-bench.md`, "hyper, third pass").

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

/// Polls `sleep` once from a task and says whether it was ready.
async fn ready_at_first_poll(mut sleep: corio::time::Sleep) -> bool {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut sleep).poll(cx).is_ready())).await
}

/// sysmon's time slice: a task that has been running this long (wall time, as Go measures it)
/// is asked to yield, and its next runtime operation does, a sleep's poll included.
const TIME_SLICE: Duration = Duration::from_millis(10);

/// Spawns a task on `rt` that polls a sleep until `deadline(now)` once. Whether the poll was
/// ready, or `None` if it was not but a time slice had passed since the spawn: on a loaded
/// machine the worker may have lost its CPU for that long, and then sysmon's request to yield
/// (not the deadline) may have made the poll return `Pending`, by design.
fn first_poll(
    rt: &corio::Runtime,
    deadline: impl FnOnce(Instant) -> Instant + Send + 'static,
) -> Option<bool> {
    let spawned = Instant::now();
    let handle = rt.spawn(async move {
        let sleep = corio::time::sleep_until_async(deadline(Instant::now()));
        let ready = ready_at_first_poll(sleep).await;
        (ready || spawned.elapsed() < TIME_SLICE).then_some(ready)
    });
    rt.block_on(handle).unwrap()
}

/// [`first_poll`] until an attempt is not explained away by a time slice (at most 20, each
/// after the worker idled for 50 ms again): the first such attempt's answer, or `true` if
/// every attempt took a slice.
fn ready_at_first_poll_of_a_task(
    rt: &corio::Runtime,
    deadline: impl Fn(Instant) -> Instant + Send + Copy + 'static,
) -> bool {
    (0..20)
        .find_map(|attempt| {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(50));
            }
            first_poll(rt, deadline)
        })
        .unwrap_or(true)
}

#[test]
fn a_passed_deadline_is_ready_at_the_first_poll_on_an_idle_worker() {
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    // No timer so far: the worker has had no reason to read the clock.
    std::thread::sleep(Duration::from_millis(20));
    rt.block_on(async {
        let past = Instant::now() - Duration::from_millis(5);
        assert!(ready_at_first_poll(corio::time::sleep_until_async(past)).await);
        assert!(ready_at_first_poll(corio::time::sleep_async(Duration::ZERO)).await);
    });
    assert!(ready_at_first_poll_of_a_task(&rt, |now| now));
}

#[test]
fn a_passed_deadline_is_ready_at_the_first_poll_after_the_worker_idled_with_a_timer() {
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    // A far timer makes the worker read the clock, then it idles for a while.
    let far = rt.spawn(corio::time::sleep_async(Duration::from_secs(3600)));
    std::thread::sleep(Duration::from_millis(50));
    assert!(ready_at_first_poll_of_a_task(&rt, |now| now - Duration::from_micros(1)));
    far.abort();
}
