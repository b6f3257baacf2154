//! Signal preemption never suspends a coroutine inside a signal handler of the program's that
//! runs on the coroutine's stack (installed without `SA_ONSTACK`): whatever the handler
//! interrupted — glibc's `malloc`, holding its arena lock — would stay suspended with it, and
//! the next `malloc` of the worker would wait for ever on a lock its own thread holds. (It was
//! preempted there: the handler's code is ordinary program text, so the check on the
//! interrupted instruction passed.) A binary of its own: it installs a `SIGUSR1` handler.
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

mod support;

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use support::{EVENTUALLY, within};

static IN_HANDLER: AtomicBool = AtomicBool::new(false);
static OTHER_RAN: AtomicBool = AtomicBool::new(false);
static OTHER_RAN_INSIDE: AtomicBool = AtomicBool::new(false);

/// Async-signal-safe: atomics and a bounded spin. Spins until another coroutine of the thread
/// has run (which needs this handler's coroutine preempted) or about a second has passed.
extern "C" fn on_usr1(_: libc::c_int) {
    IN_HANDLER.store(true, SeqCst);
    let start = std::time::Instant::now();
    while !OTHER_RAN.load(SeqCst) && start.elapsed() < Duration::from_millis(1500) {
        std::hint::spin_loop();
    }
    OTHER_RAN_INSIDE.store(OTHER_RAN.load(SeqCst), SeqCst);
    IN_HANDLER.store(false, SeqCst);
}

#[test]
fn a_preemptible_coroutine_is_not_preempted_inside_a_signal_handler_on_its_stack() {
    // SAFETY: installs a handler that touches atomics only (and reads the clock: the vDSO).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_usr1 as *const () as usize;
        action.sa_flags = libc::SA_RESTART; // no SA_ONSTACK: it runs on the coroutine's stack
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
            0
        );
    }
    let rt = corio::Runtime::builder()
        .workers(1)
        .hog_report(false)
        .build()
        .unwrap();
    let preemptions = within(EVENTUALLY, move || {
        rt.run(|| {
            // SAFETY: the coroutine holds no lock, borrow or guard, and allocates nothing.
            let raiser = unsafe { corio::Builder::new().preemptible() }
                .spawn(|| {
                    // SAFETY: raise has no preconditions.
                    unsafe { libc::raise(libc::SIGUSR1) };
                })
                .unwrap();
            // Runs while the raiser is in its handler only if the raiser was preempted there
            // (one worker, and the raiser makes no runtime call).
            let other = corio::go(|| {
                if IN_HANDLER.load(SeqCst) {
                    OTHER_RAN.store(true, SeqCst);
                }
            });
            raiser.join().unwrap();
            other.join().unwrap();
            corio::Handle::current().metrics().preemptions
        })
    });
    assert!(
        !OTHER_RAN_INSIDE.load(SeqCst),
        "the coroutine was preempted inside its signal handler ({preemptions} preemptions)"
    );
}
