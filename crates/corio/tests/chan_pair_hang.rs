//! One sender and one receiver coroutine passing 10,000 values over a channel on two workers,
//! with every CPU of the machine oversubscribed (busy threads beside the runtime). Found by
//! the flake hunt as `chan_golang::two_workers::go_test_select_stress` failing 4 of 116 loaded
//! runs ("did not finish within 30s"), then narrowed to this pair: both ends stackful
//! coroutines pinned to different workers, so that every hand-off is a cross-worker wake
//! through the home worker's inbox; rendezvous (capacity 0) and buffered (capacity 2) alike.
//!
//! What it was: not a lost wake-up but a scheduling lockstep. A worker out of work spins on
//! its inbox before it parks (`runtime/worker.rs`, `spin`), yielding its thread
//! (`sched_yield`) between looks. With more runnable threads than CPUs, both workers ended up
//! taking turns on one CPU with a busy thread, both always spinning, neither ever asleep: the
//! `unpark` of a spinning worker wakes nothing, and a thread that never sleeps gets no wake-up
//! preemption, so each hand-off waited for the busy thread's scheduler tick (a trace of a
//! stuck run: 4 ms per round trip, every one of them a spin that lost its CPU for the whole
//! tick and then found the work). 10,000 values took minutes instead of milliseconds; the
//! counts moved about 75 a second. Before the fix this test failed 2 runs of its 20 in most
//! invocations under load; a spin that loses a slice now makes its worker park without
//! spinning for a while, and a parked worker is woken at once (`spin`, "When the CPUs
//! are oversubscribed").
//!
//! (The select stress had a second cause of its own, found by a later hunt: its two selects'
//! switched-off arms shared one channel and matched each other, which left a plain sender or
//! receiver without a partner for good; fixed in that test.)
//!
//! What is asserted is that every run finishes within the generous `EVENTUALLY`, never a speed.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use support::EVENTUALLY;

/// Runs per test.
const RUNS: usize = 20;

/// One run: a sender and a receiver of `N` values over a channel of capacity `cap`, on two
/// workers. Returns the two counts of completed operations if it did not finish in time.
fn pair_run(cap: usize) -> Result<(), [usize; 2]> {
    const N: usize = 10_000;
    let rt = support::rt(2);
    let done: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let counts = done.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        rt.run(move || {
            let (sender, receiver) = corio::chan::bounded::<usize>(cap);
            let sent = counts.clone();
            let a = corio::go(move || {
                for i in 0..N {
                    sender.send(i).unwrap();
                    sent[0].fetch_add(1, SeqCst);
                }
            });
            let b = corio::go(move || {
                for i in 0..N {
                    assert_eq!(receiver.recv().unwrap(), i);
                    counts[1].fetch_add(1, SeqCst);
                }
            });
            a.join().unwrap();
            b.join().unwrap();
        });
        let _ = tx.send(());
    });
    match rx.recv_timeout(EVENTUALLY) {
        Ok(()) => Ok(()),
        Err(_) => Err([done[0].load(SeqCst), done[1].load(SeqCst)]),
    }
}

/// Busy threads, one more than the machine has CPUs, for as long as the guard lives: every
/// CPU is oversubscribed, so the workers share theirs with a thread that never sleeps.
struct CpuHogs {
    stop: Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuHogs {
    fn start() -> CpuHogs {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let n = std::thread::available_parallelism().map_or(2, |n| n.get()) + 1;
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(SeqCst) {
                        for _ in 0..1000 {
                            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                        }
                    }
                })
            })
            .collect();
        CpuHogs { stop, threads }
    }
}

impl Drop for CpuHogs {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn runs_finish(cap: usize) {
    let _hogs = CpuHogs::start();
    for run in 0..RUNS {
        if let Err([sent, received]) = pair_run(cap) {
            panic!(
                "capacity {cap}, run {run}: not finished within {EVENTUALLY:?}: {sent} sends \
                 returned and {received} receives"
            );
        }
    }
}

#[test]
fn a_rendezvous_pair_on_two_workers_finishes_with_the_cpus_oversubscribed() {
    runs_finish(0);
}

#[test]
fn a_buffered_pair_on_two_workers_finishes_with_the_cpus_oversubscribed() {
    runs_finish(2);
}
