//! Stress: thousands of coroutines and tasks doing random yields, sleeps of 0–2 ms, nested
//! spawns and joins, detached children, planned panics and aborts (by the test and by parent
//! tasks), on one worker and on two. Afterwards every `JoinHandle` must have resolved to what
//! its task was planned to do — its value, its panic, or (if aborted, racing with completion)
//! a cancellation — every value made on a task's stack or in its future must have been dropped
//! exactly once, `live_tasks` must be back to 0, and once the runtime is dropped the stack
//! arena must have every stack back (`corio::stack::stats().in_use`).
//!
//! Everything random comes from one seed per run, printed, so a failure can be replayed with
//! `CORIO_STRESS_SEED=<seed>`. The size is `CORIO_STRESS_ROUNDS` rounds (default 5) of
//! `CORIO_STRESS_ROOTS` roots of each kind (default 4,000), all on one runtime; a debug build
//! on 2 loaded cores finishes well under a minute.
//!
//! The tests in this file run one at a time: the stack arena's counters are process-wide.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use corio::JoinHandle;
use support::{Drops, EXPECTED, Rng, payload_text, quiet_expected_panics, wait_until, within};

static SERIAL: Mutex<()> = Mutex::new(());

/// Nesting depth of child tasks below a root.
const MAX_DEPTH: u32 = 3;

/// What a task is planned to do, all derived from its seed.
#[derive(Clone, Copy, Debug)]
struct Plan {
    seed: u64,
    steps: u64,
    panics: bool,
}

impl Plan {
    fn new(seed: u64, depth: u32) -> Plan {
        let mut rng = Rng::new(seed);
        let steps = if depth == 0 {
            4 + rng.below(8)
        } else {
            rng.below(5)
        };
        Plan {
            seed,
            steps,
            panics: rng.chance(5),
        }
    }

    /// The value the task returns if it does not panic.
    fn value(&self) -> u64 {
        self.seed.wrapping_mul(0x9e37_79b9).rotate_left(7) ^ 0x5eed
    }

    fn panic_message(&self) -> String {
        format!("{EXPECTED} planned panic of {}", self.seed)
    }
}

/// Checks a child's (or root's) result against its plan; `aborted` allows a cancellation.
fn check<T: PartialEq<u64> + std::fmt::Debug>(
    plan: Plan,
    result: Result<T, corio::JoinError>,
    aborted: bool,
) -> Result<(), String> {
    match result {
        Ok(v) if !plan.panics && v == plan.value() => Ok(()),
        Err(e) if e.is_cancelled() && aborted => Ok(()),
        Err(e) if e.is_panic() && plan.panics => {
            let msg = payload_text(&*e.into_panic());
            if msg == plan.panic_message() {
                Ok(())
            } else {
                Err(format!("seed {}: wrong panic: {msg}", plan.seed))
            }
        }
        Err(e) if e.is_panic() => Err(format!(
            "seed {}: unplanned panic: {}",
            plan.seed,
            payload_text(&*e.into_panic())
        )),
        other => Err(format!(
            "seed {} (panics: {}, aborted: {aborted}): got {other:?}",
            plan.seed, plan.panics
        )),
    }
}

/// A stackful body: random suspensions and children, then its value or its planned panic.
fn coroutine_body(plan: Plan, depth: u32, drops: Drops) -> u64 {
    let _token = drops.token();
    let mut rng = Rng::new(plan.seed ^ 0xc0);
    for step in 0..plan.steps {
        let _step_token = drops.token(); // one more value per frame, dropped every step
        match rng.below(10) {
            0..=2 => corio::yield_now(),
            3 | 4 => corio::sleep(Duration::from_micros(rng.below(2_000))),
            5 => corio::block_on(corio::time::sleep_async(Duration::from_micros(
                rng.below(2_000),
            ))),
            6..=8 if depth < MAX_DEPTH => {
                let child = Plan::new(plan.seed.wrapping_mul(31).wrapping_add(step + 1), depth + 1);
                let stackful = rng.chance(50);
                let handle: JoinHandle<u64> = spawn_child(child, stackful, depth + 1, &drops);
                match rng.below(3) {
                    0 => drop(handle), // detached: runs on, its output dropped by the runtime
                    1 => {
                        corio::yield_now();
                        handle.abort();
                        check(child, handle.join(), true).unwrap_or_else(|e| panic!("{e}"));
                    }
                    _ => check(child, handle.join(), false).unwrap_or_else(|e| panic!("{e}")),
                }
            }
            _ => corio::yield_now(),
        }
    }
    if plan.panics {
        std::panic::panic_any(plan.panic_message());
    }
    plan.value()
}

/// A stackless body: the same, awaited.
fn task_body(plan: Plan, depth: u32, drops: Drops) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        let _token = drops.token();
        let mut rng = Rng::new(plan.seed ^ 0x7a);
        for step in 0..plan.steps {
            let _step_token = drops.token();
            match rng.below(10) {
                0..=3 => corio::yield_now_async().await,
                4 | 5 => corio::time::sleep_async(Duration::from_micros(rng.below(2_000))).await,
                6..=8 if depth < MAX_DEPTH => {
                    let child =
                        Plan::new(plan.seed.wrapping_mul(37).wrapping_add(step + 1), depth + 1);
                    let stackful = rng.chance(50);
                    let handle: JoinHandle<u64> = spawn_child(child, stackful, depth + 1, &drops);
                    match rng.below(3) {
                        0 => drop(handle),
                        1 => {
                            corio::yield_now_async().await;
                            handle.abort();
                            check(child, handle.await, true).unwrap_or_else(|e| panic!("{e}"));
                        }
                        _ => check(child, handle.await, false).unwrap_or_else(|e| panic!("{e}")),
                    }
                }
                _ => corio::yield_now_async().await,
            }
        }
        if plan.panics {
            std::panic::panic_any(plan.panic_message());
        }
        plan.value()
    })
}

fn spawn_child(plan: Plan, stackful: bool, depth: u32, drops: &Drops) -> JoinHandle<u64> {
    let drops = drops.clone();
    if stackful {
        corio::go(move || coroutine_body(plan, depth, drops))
    } else {
        corio::spawn(task_body(plan, depth, drops))
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn stress(workers: usize) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    quiet_expected_panics();
    let roots = env_or("CORIO_STRESS_ROOTS", 4_000);
    let seed = env_or(
        "CORIO_STRESS_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    );
    eprintln!("stress: workers {workers}, {roots} roots of each kind, CORIO_STRESS_SEED={seed}");
    let stacks_before = corio::stack::stats().in_use;
    let rt = support::rt(workers);
    let started = Instant::now();
    let rounds = env_or("CORIO_STRESS_ROUNDS", 5);
    let (rt, drops) = within(Duration::from_secs(300), move || {
        let drops = Drops::new();
        let mut rng = Rng::new(seed);
        for round in 0..rounds {
            let mut handles = Vec::with_capacity(2 * roots as usize);
            for i in 0..2 * roots {
                let plan = Plan::new(rng.next_u64(), 0);
                let d = drops.clone();
                let handle = if i % 2 == 0 {
                    rt.go(move || coroutine_body(plan, 0, d))
                } else {
                    rt.spawn(task_body(plan, 0, d))
                };
                // Abort one root in ten: some at once (often before it starts), the rest
                // below, while they run.
                let abort = rng.chance(10);
                if abort && rng.chance(30) {
                    handle.abort();
                }
                handles.push((plan, handle, abort));
            }
            for (_, handle, abort) in &handles {
                if *abort {
                    if rng.chance(20) {
                        std::thread::sleep(Duration::from_micros(rng.below(500)));
                    }
                    handle.abort();
                }
            }
            let mut failures = Vec::new();
            let (mut values, mut panics, mut cancelled) = (0, 0, 0);
            for (plan, handle, abort) in handles {
                let result = handle.join();
                match &result {
                    Ok(_) => values += 1,
                    Err(e) if e.is_panic() => panics += 1,
                    Err(_) => cancelled += 1,
                }
                if let Err(e) = check(plan, result, abort) {
                    failures.push(e);
                }
            }
            eprintln!(
                "stress: round {round}: roots returned {values} values, {panics} panics, {cancelled} cancellations"
            );
            assert!(
                failures.is_empty(),
                "{} roots resolved wrongly, e.g. {:?}",
                failures.len(),
                &failures[..failures.len().min(5)]
            );
        }
        // Detached children finish on their own.
        wait_until("every value is dropped", || drops.dropped() == drops.made());
        wait_until("live_tasks is 0", || rt.metrics().live_tasks == 0);
        (rt, drops)
    });
    let metrics = rt.metrics();
    eprintln!(
        "stress: {} tasks spawned, {} values dropped, {} steals, {} hand-offs, in {:?}",
        metrics.spawned,
        drops.dropped(),
        metrics.steals,
        metrics.handoffs,
        started.elapsed()
    );
    assert!(metrics.spawned >= 2 * roots);
    assert_eq!(drops.made(), drops.dropped());
    drop(rt);
    let stacks_after = corio::stack::stats().in_use;
    assert_eq!(
        stacks_after, stacks_before,
        "coroutine stacks not returned to the arena"
    );
}

#[test]
fn thousands_of_coroutines_and_tasks_resolve_as_planned_on_one_worker() {
    stress(1);
}

#[test]
fn thousands_of_coroutines_and_tasks_resolve_as_planned_on_two_workers() {
    stress(2);
}
