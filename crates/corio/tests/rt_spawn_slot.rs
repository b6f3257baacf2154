//! Where a spawned task runs (`runtime/sched/slot.rs`): in the spawner's spawn slot, so a
//! spawner that blocks right after spawning runs its child on its own thread even when another
//! worker is idle; stolen after a grace period when the spawner does not block; and run with the
//! spawner's time slice, so a chain of spawns cannot starve the run queue.
//!
//! Observed through `std::thread::current().id()`: a started stackful coroutine never changes
//! thread, so the thread it reports at its start is the one it ran on.

mod support;

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Instant;

use support::{EVENTUALLY, rt, within};

/// Go's concurrent prime sieve (the tour's; `examples/sieve.rs`): main spawns each filter and
/// at once blocks receiving from it. Every filter reports the thread it started on.
fn sieve_threads(primes: usize) -> (ThreadId, Vec<ThreadId>) {
    use corio::chan::{Receiver, Sender};
    let threads = Arc::new(Mutex::new(Vec::new()));
    let seen = threads.clone();
    let main = rt(2).run(move || {
        fn filter(input: Receiver<u64>, out: Sender<u64>, prime: u64) {
            for i in input {
                if i % prime != 0 && out.send(i).is_err() {
                    return;
                }
            }
        }
        let (tx, mut rx) = corio::chan::bounded(0);
        corio::go(move || {
            for i in 2.. {
                if tx.send(i).is_err() {
                    return;
                }
            }
        });
        for _ in 1..primes {
            let prime = rx.recv().expect("the chain ended");
            let (tx, next) = corio::chan::bounded(0);
            let seen = seen.clone();
            corio::go(move || {
                seen.lock().unwrap().push(std::thread::current().id());
                filter(rx, tx, prime)
            });
            rx = next;
        }
        assert_eq!(rx.recv(), Ok(541), "the 100th prime");
        std::thread::current().id()
    });
    let threads = threads.lock().unwrap().clone();
    (main, threads)
}

#[test]
fn a_spawner_that_blocks_at_once_runs_its_children_on_its_own_thread() {
    // Before the spawn slot, spawns went to the back of the run queue, behind the filters
    // already runnable there, and the second worker (woken for each spawn) stole many of them:
    // they then ran on its thread for good, and the chain crossed threads at every such link.
    let (main, threads) = within(EVENTUALLY, || sieve_threads(100));
    assert_eq!(threads.len(), 99);
    let elsewhere: Vec<usize> = (0..threads.len()).filter(|&i| threads[i] != main).collect();
    assert!(
        elsewhere.is_empty(),
        "{} of 99 filters started on another thread than their spawner's: {elsewhere:?}",
        elsewhere.len()
    );
}

#[test]
fn a_child_is_stolen_from_a_spawner_that_spins_waiting_for_it() {
    // The spawn slot must not keep a child from an idle worker when its spawner does not
    // block: here the spawner spins on a flag only the child sets, without a single runtime
    // call (with a slot only its owner could take, this never ends).
    within(EVENTUALLY, || {
        rt(2).run(|| {
            let done = Arc::new(AtomicBool::new(false));
            let set = done.clone();
            let spawner = std::thread::current().id();
            let child = corio::go(move || {
                set.store(true, SeqCst);
                std::thread::current().id()
            });
            let start = Instant::now();
            while !done.load(SeqCst) {
                assert!(start.elapsed() < EVENTUALLY, "the child never ran");
                std::hint::spin_loop();
            }
            assert_ne!(child.join().unwrap(), spawner, "the child ran on a thief");
        })
    });
}

#[test]
fn a_chain_of_spawns_does_not_starve_a_queued_coroutine() {
    // One worker. Each link of the chain spawns the next and returns, so the spawn slot is
    // never empty; a task run from it inherits the spawner's time slice, and sysmon ends the
    // slice, so the coroutine queued behind the chain gets the worker.
    fn link(stop: Arc<AtomicBool>, gave_up: Arc<AtomicBool>, start: Instant) {
        if stop.load(SeqCst) {
            return;
        }
        if start.elapsed() > EVENTUALLY {
            gave_up.store(true, SeqCst);
            return;
        }
        corio::go(move || link(stop, gave_up, start));
    }
    within(EVENTUALLY * 2, || {
        rt(1).run(|| {
            let stop = Arc::new(AtomicBool::new(false));
            let gave_up = Arc::new(AtomicBool::new(false));
            let (s, g) = (stop.clone(), gave_up.clone());
            // The chain's head takes the spawn slot; the queued coroutine goes to the run queue.
            corio::go(move || link(s, g, Instant::now()));
            let ran = stop.clone();
            let queued = corio::go(move || ran.store(true, SeqCst));
            queued.join().unwrap();
            assert!(
                !gave_up.load(SeqCst),
                "the queued coroutine ran only once the chain gave up"
            );
        })
    });
}
