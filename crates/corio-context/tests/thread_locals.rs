//! A known limitation (corosensei's coroutines share it): a frame suspended
//! inside `LocalKey::with` holds a borrow of the thread-local that std expects to end before
//! the thread exits (a thread cannot exit with frames of its own still running; a suspended
//! coroutine is such a frame). So a bare `Coroutine` suspended there must not outlive its
//! thread's exit: resumed or dropped from a thread-local's destructor, it runs its frames after
//! the thread-local they borrow was destroyed; leaked with `mem::forget`, a thread it started
//! in a `std::thread::scope` there goes on using the borrow after the thread exits.
//!
//! corio's runtime closes this for its own workers: a worker whose coroutine was leaked at
//! shutdown keeps its thread (`tests/rt_shutdown.rs`, `a_worker_that_leaked_a_coroutine_*`).
//! A bare coroutine on a thread of the user's cannot be tracked so: std gives no hook that runs
//! before a thread's thread-locals are destroyed (docs/soundness.md, "Leaked coroutines and
//! thread-locals"). These tests show the three shapes; they fail (and only check a flag set by
//! the thread-local's destructor, never reading through the dangling borrow).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use corio_context::coroutine::Coroutine;

/// A thread-local value that records its drop in `flag`.
struct Victim(&'static AtomicBool);

impl Drop for Victim {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

/// Resumes the coroutine it holds when dropped.
struct ResumeOnDrop(Coroutine<(), (), ()>);

impl Drop for ResumeOnDrop {
    fn drop(&mut self) {
        if !self.0.is_done() {
            let _ = self.0.resume(());
        }
    }
}

#[test]
#[ignore = "LIMITATION: a bare coroutine suspended inside LocalKey::with and resumed by a later thread-local destructor runs after the borrowed value's drop (docs/soundness.md)"]
fn a_coroutine_resumed_from_a_thread_local_destructor_runs_after_the_borrowed_value_dropped() {
    static DROPPED: AtomicBool = AtomicBool::new(false);
    static SAW_DROPPED: AtomicBool = AtomicBool::new(false);
    thread_local! {
        static VICTIM: Victim = const { Victim(&DROPPED) };
        static HOLDER: RefCell<Option<ResumeOnDrop>> = const { RefCell::new(None) };
    }
    std::thread::spawn(|| {
        // HOLDER is registered first, so its destructor runs after VICTIM's.
        HOLDER.with(|h| {
            *h.borrow_mut() = Some(ResumeOnDrop(Coroutine::new(|y, ()| {
                VICTIM.with(|v| {
                    y.suspend(());
                    let _still_borrowed: &Victim = v;
                    SAW_DROPPED.store(DROPPED.load(SeqCst), SeqCst);
                })
            })));
        });
        HOLDER.with(|h| h.borrow_mut().as_mut().unwrap().0.resume(()));
    })
    .join()
    .unwrap();
    assert!(
        !SAW_DROPPED.load(SeqCst),
        "ran under a borrow of a dropped thread-local"
    );
}

#[test]
#[ignore = "LIMITATION: a bare coroutine kept in a thread-local is unwound at thread exit, after thread-locals it borrows may be gone (docs/soundness.md)"]
fn a_coroutine_unwound_at_thread_exit_runs_destructors_after_the_borrowed_value_dropped() {
    static DROPPED: AtomicBool = AtomicBool::new(false);
    static SAW_DROPPED: AtomicBool = AtomicBool::new(false);
    thread_local! {
        static VICTIM: Victim = const { Victim(&DROPPED) };
        static HOLDER: RefCell<Option<Coroutine<(), (), ()>>> = const { RefCell::new(None) };
    }
    struct Guard<'a>(#[allow(dead_code)] &'a Victim);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            SAW_DROPPED.store(DROPPED.load(SeqCst), SeqCst);
        }
    }
    std::thread::spawn(|| {
        HOLDER.with(|h| {
            let mut co = Coroutine::new(|y, ()| {
                VICTIM.with(|v| {
                    let _guard = Guard(v);
                    y.suspend(());
                })
            });
            co.resume(());
            *h.borrow_mut() = Some(co);
        });
    })
    .join()
    .unwrap();
    assert!(
        !SAW_DROPPED.load(SeqCst),
        "a destructor ran under a dropped thread-local's borrow"
    );
}

#[test]
#[ignore = "LIMITATION: a forgotten bare coroutine keeps a LocalKey::with borrow alive past its thread's exit (docs/soundness.md)"]
fn a_forgotten_coroutine_keeps_a_thread_local_borrowed_past_its_threads_exit() {
    static DROPPED: AtomicBool = AtomicBool::new(false);
    static BORROW_HELD: AtomicBool = AtomicBool::new(false);
    thread_local! {
        static VICTIM: Victim = const { Victim(&DROPPED) };
    }
    std::thread::spawn(|| {
        let mut co: Coroutine<(), (), ()> = Coroutine::new(|y, ()| {
            VICTIM.with(|v| {
                std::thread::scope(|s| {
                    s.spawn(move || {
                        let _borrowed: &Victim = v;
                        BORROW_HELD.store(true, SeqCst);
                        loop {
                            std::thread::park();
                        }
                    });
                    y.suspend(());
                })
            })
        });
        co.resume(());
        while !BORROW_HELD.load(SeqCst) {
            std::thread::yield_now();
        }
        std::mem::forget(co);
    })
    .join()
    .unwrap();
    assert!(
        !DROPPED.load(SeqCst),
        "the thread-local was dropped while a scoped thread still borrows it"
    );
}
