//! Fan-out / fan-in with `select!` and a timeout.
//!
//! A producer coroutine feeds jobs into a bounded channel; a pool of worker coroutines takes
//! them (fan-out: each job goes to exactly one worker) and sends results into one channel
//! (fan-in). The collector `select!`s between a result, the end of the stream (every worker
//! gone closes the result channel), and a deadline per result: a job that hangs — here one
//! in a hundred sleeps far too long — is reported instead of stalling the collector. An async
//! task joins the pool as a worker on the same channels, to show that coroutines and tasks mix.
//!
//! ```text
//! cargo run --release --example pipeline
//! ```

use std::time::Duration;

use corio::chan::{self, Receiver, Sender};

/// How long the collector waits for the next result before it reports a stall.
const PATIENCE: Duration = Duration::from_millis(200);

/// A job: square a number; job 42 hangs for a while, as a slow backend would.
fn work(job: u64) -> u64 {
    if job == 42 {
        corio::sleep(Duration::from_millis(500));
    }
    job * job
}

fn worker(jobs: Receiver<u64>, results: Sender<(u64, u64)>) {
    for job in jobs {
        if results.send((job, work(job))).is_err() {
            return;
        }
    }
}

fn main() {
    corio::run(|| {
        let (job_tx, job_rx) = chan::bounded::<u64>(16);
        let (result_tx, result_rx) = chan::bounded::<(u64, u64)>(16);

        corio::go(move || {
            for job in 0..100 {
                job_tx.send(job).unwrap();
            }
            // Dropping `job_tx` closes the job channel: workers finish what is queued, then stop.
        });
        for _ in 0..4 {
            let (jobs, results) = (job_rx.clone(), result_tx.clone());
            corio::go(move || worker(jobs, results));
        }
        // An async task is a worker too, on the same two channels.
        let (jobs, results) = (job_rx, result_tx);
        corio::spawn(async move {
            while let Ok(job) = jobs.recv_async().await {
                if job == 42 {
                    corio::time::sleep_async(Duration::from_millis(500)).await;
                }
                if results.send_async((job, job * job)).await.is_err() {
                    return;
                }
            }
        });

        let (mut sum, mut count, mut stalls) = (0, 0, 0);
        loop {
            corio::select! {
                recv(result_rx) -> r => match r {
                    Ok((_job, square)) => {
                        sum += square;
                        count += 1;
                    }
                    Err(_) => break, // every worker is gone: the stream is complete
                },
                after(PATIENCE) => {
                    stalls += 1;
                    println!("no result for {PATIENCE:?} ({count} so far); still waiting");
                }
            }
        }
        println!("{count} results, sum of squares {sum}, {stalls} stall(s) reported");
        assert_eq!((count, sum), (100, (0..100u64).map(|j| j * j).sum()));
    });
}
