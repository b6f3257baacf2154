//! Go's concurrent prime sieve, on corio: a chain of stackful coroutines linked by rendezvous
//! channels.
//!
//! A generator sends 2, 3, 4, ... down a channel. Each prime found gets a filter coroutine
//! that passes on only the numbers it does not divide; the main coroutine reads the next prime
//! from the end of the chain and appends a filter for it. Finding the n-th prime takes n
//! coroutines and about n²/(2 ln n) channel hand-offs, so it measures hand-offs and switches,
//! not arithmetic (corio-bench's `chan` case times the same program against Go's).
//!
//! When main is done it drops its end of the chain: the last filter's send fails, it returns
//! and drops its own receiver, and so on up to the generator — the whole chain unwinds through
//! Go's close semantics, with no flag or kill switch. The chain itself is `shared/sieve.rs`,
//! which corio-bench's `chan` case runs too.
//!
//! ```text
//! cargo run --release --example sieve -- 10000      # the 10,000th prime
//! CORIO_WORKERS=1 cargo run --release --example sieve
//! ```

use std::time::Instant;

#[path = "shared/sieve.rs"]
mod sieve;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("usage: sieve [n]"))
        .unwrap_or(1000);
    let start = Instant::now();
    let p = corio::run(move || sieve::nth_prime(n));
    println!("prime #{n} is {p} ({:?})", start.elapsed());
}
