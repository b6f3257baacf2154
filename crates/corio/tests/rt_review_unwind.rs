//! A coroutine cancelled while it is suspended in a destructor that runs during its own
//! panic's unwind (a binary of its own: the failure is the process's abort).

#[macro_use]
mod support;

use std::time::Duration;

/// The coroutine panics; a destructor on the way out waits (a blocking-style call: here a
/// sleep, as well a socket read); the coroutine is aborted meanwhile. The cancellation is
/// raised from that wait (`StackfulCtx::raise_if_not_unwinding`: the coroutine is not
/// unwinding from a cancellation, so it raises one) — a panic leaving a destructor that the
/// unwind called, which Rust answers by aborting the process.
#[test]
#[ignore = "aborts the process: a cancellation raised inside a destructor that a panic's unwind runs (design: the coroutine would have to know it is mid-unwind)"]
fn aborting_a_coroutine_waiting_in_a_destructor_during_its_panic_does_not_abort_the_process() {
    support::quiet_expected_panics();
    let rt = support::rt(1);
    let handle = rt.go(|| {
        struct WaitsOnDrop;
        impl Drop for WaitsOnDrop {
            fn drop(&mut self) {
                corio::sleep(Duration::from_secs(3600));
            }
        }
        let _waits = WaitsOnDrop;
        panic!("{} the coroutine's own panic", support::EXPECTED);
    });
    // Suspended in the destructor, mid-unwind, by then (if not, the abort still finds it there).
    std::thread::sleep(Duration::from_millis(200));
    handle.abort();
    let result = handle.join();
    assert!(result.is_err(), "{result:?}");
}
