//! A coroutine cancelled while it is suspended in a destructor that runs during its own
//! panic's unwind (a binary of its own: the failure was the process's abort).

#[macro_use]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

/// Spawns on `rt` a coroutine that panics with a destructor on its stack that sleeps 300 ms,
/// and returns once that destructor waits: the handle, and whether the destructor finished.
fn panics_and_waits_in_a_destructor(
    rt: &corio::Runtime,
) -> (corio::JoinHandle<()>, Arc<AtomicBool>) {
    let in_drop = Arc::new(AtomicBool::new(false));
    let drop_done = Arc::new(AtomicBool::new(false));
    let handle = rt.go({
        let (in_drop, drop_done) = (in_drop.clone(), drop_done.clone());
        move || {
            struct WaitsOnDrop(Arc<AtomicBool>, Arc<AtomicBool>);
            impl Drop for WaitsOnDrop {
                fn drop(&mut self) {
                    self.0.store(true, SeqCst);
                    corio::sleep(Duration::from_millis(300));
                    self.1.store(true, SeqCst);
                }
            }
            let _waits = WaitsOnDrop(in_drop, drop_done);
            panic!("{} the coroutine's own panic", support::EXPECTED);
        }
    });
    support::wait_until("the destructor waits", || in_drop.load(SeqCst));
    (handle, drop_done)
}

rt_common! {
    /// The coroutine panics; a destructor on the way out waits (a blocking-style call: here a
    /// sleep); the coroutine is aborted meanwhile. The cancellation used to be raised from
    /// that wait (the coroutine was not unwinding from a cancellation, so it raised one): a
    /// panic leaving a destructor that the unwind called, which Rust answers by aborting the
    /// process. Now it waits, as it does while a cancellation's own unwind runs: the
    /// destructor's wait completes and the task ends with its panic.
    #[test]
    fn aborting_a_coroutine_waiting_in_a_destructor_during_its_panic_lets_the_destructor_finish() {
        support::quiet_expected_panics();
        let rt = rt();
        let (handle, drop_done) = panics_and_waits_in_a_destructor(&rt);
        handle.abort();
        let err = handle.join().unwrap_err();
        assert!(err.is_panic(), "the task ends with its own panic: {err:?}");
        assert!(drop_done.load(SeqCst), "the destructor's wait was cut short");
    }

    /// The same coroutine, suspended in that destructor when its runtime is dropped: the drop
    /// waits for the destructor, and the process goes on.
    #[test]
    fn dropping_the_runtime_of_a_coroutine_waiting_in_a_destructor_during_its_panic() {
        support::quiet_expected_panics();
        let rt = rt();
        let (handle, drop_done) = panics_and_waits_in_a_destructor(&rt);
        drop(rt);
        assert!(drop_done.load(SeqCst), "the destructor's wait was cut short");
        assert!(handle.join().is_err());
    }

    /// A coroutine that caught its own panic and goes on is cancelled as any other.
    #[test]
    fn a_coroutine_that_caught_its_panic_is_still_cancelled_at_its_next_wait() {
        support::quiet_expected_panics();
        let rt = rt();
        let waiting = Arc::new(AtomicBool::new(false));
        let handle = rt.go({
            let waiting = waiting.clone();
            move || {
                let caught = std::panic::catch_unwind(|| {
                    panic!("{} caught at once", support::EXPECTED);
                });
                assert!(caught.is_err());
                waiting.store(true, SeqCst);
                corio::sleep(Duration::from_secs(3600));
            }
        });
        support::wait_until("the coroutine waits", || waiting.load(SeqCst));
        handle.abort();
        let err = support::within(Duration::from_secs(60), move || handle.join().unwrap_err());
        assert!(err.is_cancelled(), "{err:?}");
    }
}
