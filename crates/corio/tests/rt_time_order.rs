//! Timers registered while an earlier or a later one is pending on the same worker: only a new
//! earliest deadline tells the driver (`Sleep::register`), so a later timer relies on whoever
//! watches the earlier one to look again when it fires or is cancelled. Both must fire on
//! time on an otherwise idle runtime, where nothing else wakes a worker.

mod support;

use std::time::{Duration, Instant};

use support::{EVENTUALLY, within};

const EARLY: Duration = Duration::from_millis(300);
const LATE: Duration = Duration::from_millis(600);

/// Spawns a task that sleeps `d` and returns when it woke.
fn sleeper(d: Duration) -> corio::JoinHandle<Instant> {
    corio::spawn(async move {
        corio::time::sleep_async(d).await;
        Instant::now()
    })
}

#[test]
fn a_later_timer_fires_on_time_after_the_earlier_one_is_cancelled() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).block_on(async {
                let start = Instant::now();
                let early = sleeper(EARLY);
                // Let the early timer register first, so that the late one is not the earliest.
                corio::time::sleep_async(Duration::from_millis(20)).await;
                let late = sleeper(LATE);
                corio::time::sleep_async(Duration::from_millis(20)).await;
                early.abort();
                assert!(early.await.unwrap_err().is_cancelled());
                let woke = late.await.unwrap();
                assert!(
                    woke >= start + LATE,
                    "fired {:?} early",
                    start + LATE - woke
                );
            });
        }
    });
}

#[test]
fn a_later_timer_fires_on_time_after_the_earlier_one_fired() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).block_on(async {
                let start = Instant::now();
                let early = sleeper(EARLY);
                corio::time::sleep_async(Duration::from_millis(20)).await;
                let late = sleeper(LATE);
                assert!(early.await.unwrap() >= start + EARLY);
                assert!(late.await.unwrap() >= start + LATE);
            });
        }
    });
}

#[test]
fn an_earlier_timer_registered_second_fires_first() {
    // The late timer is far enough out that an early one that waited for it is unmistakable
    // however loaded the machine.
    const FAR: Duration = Duration::from_secs(20);
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).block_on(async {
                let start = Instant::now();
                let late = sleeper(FAR);
                corio::time::sleep_async(Duration::from_millis(20)).await;
                let early = sleeper(EARLY);
                let woke = early.await.unwrap();
                assert!(woke >= start + EARLY);
                assert!(
                    woke < start + FAR,
                    "the early timer waited for the late one"
                );
                late.abort();
                assert!(late.await.unwrap_err().is_cancelled());
            });
        }
    });
}
