//! The sieve's chain of coroutines, shared as a module by `examples/sieve.rs` and corio-bench's
//! `chan` case (`sieve_ms_{1,2}w`), so that what is measured is the code a reader sees.
//!
//! A generator sends 2, 3, 4, ... down a rendezvous channel. Each prime found gets a filter
//! coroutine that passes on only the numbers it does not divide; the caller reads the next
//! prime from the end of the chain and appends a filter for it. When the caller is done it
//! drops its end of the chain: the last filter's send fails, it returns and drops its own
//! receiver, and so on up to the generator.

use corio::chan::{self, Receiver, Sender};

/// Sends 2, 3, 4, ... until the receiving side is gone.
fn generate(out: Sender<u64>) {
    for i in 2.. {
        if out.send(i).is_err() {
            return;
        }
    }
}

/// Passes on the numbers from `input` that `prime` does not divide.
fn filter(input: Receiver<u64>, out: Sender<u64>, prime: u64) {
    for i in input {
        if i % prime != 0 && out.send(i).is_err() {
            return;
        }
    }
}

/// The `n`-th prime (n ≥ 1), by the sieve. Call it from a coroutine (e.g. inside
/// `Runtime::run`): it spawns the generator and one filter per prime found.
pub fn nth_prime(n: usize) -> u64 {
    let (tx, mut rx) = chan::bounded(0);
    corio::go(move || generate(tx));
    for _ in 1..n {
        let prime = rx.recv().expect("the chain is alive");
        let (tx, next) = chan::bounded(0);
        corio::go(move || filter(rx, tx, prime));
        rx = next;
    }
    rx.recv().expect("the chain is alive")
}
