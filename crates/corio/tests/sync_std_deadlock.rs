//! The deadlock `docs/sync.md` describes: a `std::sync::Mutex` guard held across a corio
//! suspension on one worker blocks the worker thread itself when a second coroutine asks for the
//! lock, so the holder is never resumed to release it. The same program with
//! `corio::sync::Mutex` finishes: its second locker suspends instead.
//!
//! (The deadlocked runtime of the first test is leaked on purpose: its worker is blocked in
//! the kernel for good. It lives in its own test binary so that nothing else shares it.)

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::EVENTUALLY;

/// Runs the holder/blocked program on a one-worker runtime: `lock` takes the lock in each
/// coroutine and returns an unlock-on-drop guard. Reports whether it finished within `limit`.
fn holder_and_second_locker<M: Send + Sync + 'static>(
    mutex: M,
    lock: fn(&M) -> Box<dyn Held + '_>,
    limit: Duration,
) -> bool {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = support::rt(1);
        rt.run(move || {
            let m = Arc::new(mutex);
            let m2 = m.clone();
            let holder = corio::go(move || {
                let guard = lock(&m2);
                corio::sleep(Duration::from_millis(10)); // suspends with the guard held
                drop(guard);
            });
            corio::yield_now(); // on one worker, the holder runs now and suspends in `sleep`
            let second = corio::go(move || drop(lock(&m)));
            holder.join().unwrap();
            second.join().unwrap();
        });
        let _ = tx.send(());
    });
    rx.recv_timeout(limit).is_ok()
}

/// Any guard, held until dropped (a stackful coroutine's locals need not be `Send`).
trait Held {}
impl<T> Held for T {}

#[test]
fn a_std_mutex_guard_held_across_a_suspension_deadlocks_one_worker() {
    let finished = holder_and_second_locker(
        std::sync::Mutex::new(()),
        |m| Box::new(m.lock().unwrap()),
        Duration::from_secs(2),
    );
    assert!(
        !finished,
        "the std::sync::Mutex program finished: the deadlock docs/sync.md shows is gone"
    );
}

#[test]
fn a_corio_mutex_guard_held_across_a_suspension_lets_the_second_locker_suspend() {
    let finished = holder_and_second_locker(
        corio::sync::Mutex::new(()),
        |m| Box::new(m.lock()),
        EVENTUALLY,
    );
    assert!(finished, "the corio::sync::Mutex program hung");
}
