//! What the randomised networking hunts (`net_stress.rs`, `net_stress_more.rs`) share: the
//! seed, the descriptor check around a runtime's life, the random pause before a side of a
//! race acts, and what a read that was sent nothing may return.

use std::time::{Duration, Instant};

use super::{Rng, open_fds};

/// The seed of this run: `NET_STRESS_SEED` to replay one, else the clock.
pub fn seed() -> u64 {
    if let Ok(s) = std::env::var("NET_STRESS_SEED") {
        return s.parse().expect("NET_STRESS_SEED is not a number");
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Runs `body` (which builds and drops its runtime) and checks that the process's descriptors
/// are those it had before. As in `net_fds.rs`, the runtime's own descriptors may outlive its
/// drop by a moment (blocking-pool threads hold a reference until they notice the shutdown).
pub fn no_fd_leak(what: &str, seed: u64, body: impl FnOnce()) {
    let before = open_fds();
    body();
    let deadline = Instant::now() + Duration::from_secs(5);
    while open_fds() != before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        open_fds(),
        before,
        "{what}, seed {seed}: descriptors leaked"
    );
}

/// A random pause in a coroutine: none, a few yields, or a sleep of up to 2 ms — so that the
/// other side's action lands before, during or after the wait begins.
pub fn pause(rng: &mut Rng) {
    match rng.below(3) {
        0 => {}
        1 => {
            for _ in 0..rng.below(8) {
                corio::yield_now();
            }
        }
        _ => corio::sleep(Duration::from_micros(rng.below(2000))),
    }
}

/// A read's result where nothing was ever sent: EOF or an error, never data.
pub fn nothing_read(r: &std::io::Result<usize>) -> bool {
    !matches!(r, Ok(n) if *n > 0)
}

/// One hunt: serialised with its file's other tests by `serial` (each counts the process's
/// descriptors), its seed printed first (so that a hang the watchdog reports has it in the
/// test's output), then `body(seed)` under the watchdog.
pub fn hunt(
    serial: &std::sync::Mutex<()>,
    what: &str,
    workers: usize,
    body: impl FnOnce(u64) + Send + 'static,
) {
    let _serial = serial.lock().unwrap_or_else(|e| e.into_inner());
    let seed = seed();
    eprintln!("{what}: seed {seed}, {workers} workers");
    super::within(super::EVENTUALLY * 2, move || body(seed));
}

/// Ten rounds of a soak cut short: round `r` runs `soak(seed ^ r, cut)`, the cut
/// `1..=max_ms` ms drawn from `rng`, and no descriptor may outlive it.
pub fn cut_rounds(what: &str, seed: u64, mut rng: Rng, max_ms: u64, soak: impl Fn(u64, Duration)) {
    for round in 0..10 {
        let cut = Duration::from_millis(1 + rng.below(max_ms));
        let what = format!("{what} round {round} ({cut:?})");
        no_fd_leak(&what, seed, || soak(seed ^ round, cut));
    }
}
