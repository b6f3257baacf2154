//! A worker out of work spins for a moment before it parks (Go's spinning M; `worker.rs`,
//! `spin`): work that appears in that moment is run without the worker going to
//! sleep and without its waker's futex wake, and a runtime with nothing to do still goes to
//! sleep. The park count is `Metrics::parks` (times a worker went to sleep).
//!
//! What is asserted is a count, never a time: on a loaded machine a spinner's thread may be
//! descheduled for longer than it spins, so a few parks are allowed for, not none.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use support::{EVENTUALLY, within};

/// Round trips of the cross-worker ping-pong.
const ROUND_TRIPS: u64 = 4_000;

/// Starts a coroutine that is certain to run on the *other* worker of a two-worker runtime:
/// the caller busy-waits (no runtime operation, so its worker runs nothing else) until the
/// child has started, which only the other worker can do (it steals the child from the
/// spawn slot after the grace period). Returns the child's handle.
fn go_on_the_other_worker<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> corio::JoinHandle<T> {
    let started = Arc::new(AtomicBool::new(false));
    let here = std::thread::current().id();
    let flag = started.clone();
    let handle = corio::go(move || {
        assert_ne!(
            std::thread::current().id(),
            here,
            "started on the spawner's thread"
        );
        flag.store(true, SeqCst);
        f()
    });
    while !started.load(SeqCst) {
        std::hint::spin_loop();
    }
    handle
}

/// Two coroutines on different workers pass a value back and forth over rendezvous
/// channels. Each hand-off wakes a coroutine pinned on the other worker, which has just run
/// out of work: without spinning, that worker had parked, and nearly every hand-off cost a
/// park and a futex wake (measured before the spin: see `docs/chan.md`). With it, the worker
/// whose turn it is not spins on its inbox and takes the wake-up there.
///
/// That holds while the spinners keep their CPUs. After a spin lost a time slice to another
/// thread of the machine (the CPUs are oversubscribed), its worker parks without spinning
/// for a while, by design (`spin`, "When the CPUs are oversubscribed": spinning on
/// then cost a scheduler tick per hand-off, `tests/chan_pair_hang.rs`); each such skipped
/// spin (`Metrics::spins_skipped`) may cost one park more, and is allowed for.
#[test]
fn a_coroutine_woken_from_the_other_worker_while_its_home_spins_runs_without_a_park() {
    let rt = support::rt(2);
    let (parks, skipped, lost) = within(EVENTUALLY, move || {
        let measured = rt.run(|| {
            let (ping_tx, ping_rx) = corio::chan::bounded::<u64>(0);
            let (pong_tx, pong_rx) = corio::chan::bounded::<u64>(0);
            let echo = go_on_the_other_worker(move || {
                for v in ping_rx {
                    pong_tx.send(v + 1).expect("pong");
                }
            });
            // Warm up: both workers have run and parked at least once by now.
            ping_tx.send(0).expect("ping");
            assert_eq!(pong_rx.recv(), Ok(1));
            let before = corio::Handle::current().metrics();
            for i in 0..ROUND_TRIPS {
                ping_tx.send(i).expect("ping");
                assert_eq!(pong_rx.recv(), Ok(i + 1));
            }
            let after = corio::Handle::current().metrics();
            drop(ping_tx);
            echo.join().expect("echo");
            (
                after.parks - before.parks,
                after.spins_skipped - before.spins_skipped,
                after.spin_slices_lost - before.spin_slices_lost,
            )
        });
        drop(rt);
        measured
    });
    // 2 × ROUND_TRIPS hand-offs; without the spin nearly each one parked a worker.
    assert!(
        parks < ROUND_TRIPS / 4 + skipped,
        "{parks} parks in {ROUND_TRIPS} cross-worker round trips ({skipped} spins skipped \
         after {lost} lost time slices)"
    );
}

/// Work that keeps two workers busy for a while, then nothing: both stop spinning and park
/// (the runtime's park count stops moving), and no worker is left awake.
#[test]
fn spinning_ends_and_every_worker_parks_when_the_work_is_done() {
    let rt = support::rt(2);
    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    rt.run(move || {
        let hs: Vec<_> = (0..64)
            .map(|_| {
                let d = d.clone();
                corio::go(move || {
                    for _ in 0..50 {
                        corio::yield_now();
                    }
                    d.fetch_add(1, SeqCst);
                })
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
    });
    assert_eq!(done.load(SeqCst), 64);
    support::wait_until("both workers park", || rt.metrics().unparked_workers == 0);
    let parks = rt.metrics().parks;
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        rt.metrics().parks,
        parks,
        "a worker woke up and parked again with nothing to do"
    );
}
