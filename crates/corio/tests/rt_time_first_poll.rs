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
    let handle = rt.spawn(async {
        let now = Instant::now();
        ready_at_first_poll(corio::time::sleep_until_async(now)).await
    });
    assert!(rt.block_on(handle).unwrap());
}

#[test]
fn a_passed_deadline_is_ready_at_the_first_poll_after_the_worker_idled_with_a_timer() {
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    // A far timer makes the worker read the clock, then it idles for a while.
    let far = rt.spawn(corio::time::sleep_async(Duration::from_secs(3600)));
    std::thread::sleep(Duration::from_millis(50));
    let handle = rt.spawn(async {
        let past = Instant::now() - Duration::from_micros(1);
        ready_at_first_poll(corio::time::sleep_until_async(past)).await
    });
    assert!(rt.block_on(handle).unwrap());
    far.abort();
}
