//! Stack overflow inside a coroutine is a message naming it, then SIGABRT; other faults keep
//! their usual behaviour. Each case runs in a child process (this binary, re-executed). CI runs
//! this file in both the debug and the release profile.

mod common;

use std::hint::black_box;

use common::{child_case, run_in_child, signal, stderr};
use corio_context::coroutine::{Builder, Coroutine};

#[inline(never)]
#[allow(unconditional_recursion)] // overflowing is the point
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth; 8]);
    black_box(recurse(depth + 1)) + frame[0]
}

#[inline(never)]
#[allow(unconditional_recursion)] // overflowing is the point
fn recurse_big_frames(depth: u64) -> u64 {
    // 16 KiB per frame: more than the guard page, so only stack probes make it hit the guard.
    let mut frame = [0u8; 16 << 10];
    frame[depth as usize % frame.len()] = 1;
    black_box(&mut frame);
    black_box(recurse_big_frames(depth + 1)) + frame[0] as u64
}

#[inline(never)]
fn one_huge_frame() -> u64 {
    // Larger than the whole 64 KiB stack in a single frame.
    let mut frame = [0u8; 256 << 10];
    black_box(&mut frame);
    frame[7] as u64
}

fn assert_coroutine_overflow(out: &std::process::Output, name: &str, kib: usize) {
    let err = stderr(out);
    let expected = format!("coroutine '{name}' (id ");
    assert!(
        err.contains(&expected),
        "no overflow line for {name}:\n{err}"
    );
    assert!(
        err.contains(&format!("has overflowed its stack of {kib} KiB")),
        "{err}"
    );
    assert!(err.contains("fault address 0x"), "{err}");
    assert!(
        err.contains("tests/overflow.rs:"),
        "the creation site is named:\n{err}"
    );
    assert_eq!(
        signal(out),
        Some(libc::SIGABRT),
        "the child must abort:\n{err}"
    );
}

#[test]
fn overflow_in_a_named_coroutine_names_it_and_aborts() {
    if child_case("overflow_in_a_named_coroutine_names_it_and_aborts") {
        let mut co = Builder::new()
            .name("deep-recursion")
            .stack_size(64 << 10)
            .build::<(), (), u64, _>(|_, ()| recurse(0))
            .unwrap();
        co.resume(());
        unreachable!();
    }
    let out = run_in_child("overflow_in_a_named_coroutine_names_it_and_aborts", &[]);
    assert_coroutine_overflow(&out, "deep-recursion", 64);
}

#[test]
fn overflow_with_frames_larger_than_the_guard_is_caught() {
    if child_case("overflow_with_frames_larger_than_the_guard_is_caught") {
        let mut co = Builder::new()
            .name("big-frames")
            .stack_size(64 << 10)
            .build::<(), (), u64, _>(|_, ()| recurse_big_frames(0))
            .unwrap();
        co.resume(());
        unreachable!();
    }
    let out = run_in_child("overflow_with_frames_larger_than_the_guard_is_caught", &[]);
    assert_coroutine_overflow(&out, "big-frames", 64);
}

#[test]
fn a_single_frame_larger_than_the_stack_is_caught() {
    if child_case("a_single_frame_larger_than_the_stack_is_caught") {
        let mut co = Builder::new()
            .name("huge-frame")
            .stack_size(64 << 10)
            .build::<(), (), u64, _>(|_, ()| one_huge_frame())
            .unwrap();
        co.resume(());
        unreachable!();
    }
    let out = run_in_child("a_single_frame_larger_than_the_stack_is_caught", &[]);
    assert_coroutine_overflow(&out, "huge-frame", 64);
}

#[test]
fn an_unnamed_coroutine_is_reported_as_unnamed() {
    if child_case("an_unnamed_coroutine_is_reported_as_unnamed") {
        let mut co: Coroutine<(), (), u64> = Coroutine::new(|_, ()| recurse(0));
        co.resume(());
        unreachable!();
    }
    let out = run_in_child("an_unnamed_coroutine_is_reported_as_unnamed", &[]);
    assert_coroutine_overflow(
        &out,
        "<unnamed>",
        corio_context::stack::DEFAULT_STACK_SIZE >> 10,
    );
}

#[test]
fn overflow_is_caught_with_mprotect_guards_too() {
    if child_case("overflow_is_caught_with_mprotect_guards_too") {
        assert_eq!(
            corio_context::stack::guard_kind(),
            corio_context::stack::GuardKind::Mprotect
        );
        let mut co = Builder::new()
            .name("mprotect-guard")
            .stack_size(32 << 10)
            .build::<(), (), u64, _>(|_, ()| recurse(0))
            .unwrap();
        co.resume(());
        unreachable!();
    }
    let out = run_in_child(
        "overflow_is_caught_with_mprotect_guards_too",
        &[("CORIO_STACK_GUARD", "mprotect")],
    );
    assert_coroutine_overflow(&out, "mprotect-guard", 32);
}

#[test]
fn overflow_in_a_coroutine_on_a_thread_rust_did_not_start_is_caught() {
    // Threads not started by std have no alternate signal stack; corio gives them one.
    if child_case("overflow_in_a_coroutine_on_a_thread_rust_did_not_start_is_caught") {
        extern "C" fn thread_main(_: *mut libc::c_void) -> *mut libc::c_void {
            let mut co = Builder::new()
                .name("foreign-thread")
                .stack_size(64 << 10)
                .build::<(), (), u64, _>(|_, ()| recurse(0))
                .unwrap();
            co.resume(());
            std::ptr::null_mut()
        }
        let mut thread: libc::pthread_t = 0;
        // SAFETY: a valid out-pointer and an extern "C" entry point that takes no argument.
        let rc = unsafe {
            libc::pthread_create(
                &mut thread,
                std::ptr::null(),
                thread_main,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(rc, 0);
        // SAFETY: `thread` was created above and is joined once.
        unsafe { libc::pthread_join(thread, std::ptr::null_mut()) };
        unreachable!();
    }
    let out = run_in_child(
        "overflow_in_a_coroutine_on_a_thread_rust_did_not_start_is_caught",
        &[],
    );
    assert_coroutine_overflow(&out, "foreign-thread", 64);
}

#[test]
fn a_thread_overflow_still_gets_rusts_own_message() {
    if child_case("a_thread_overflow_still_gets_rusts_own_message") {
        let t = std::thread::Builder::new()
            .name("plain-thread".into())
            .stack_size(256 << 10)
            .spawn(|| {
                // Install corio's handler first, then overflow the thread's own stack.
                let mut co: Coroutine<(), (), ()> = Coroutine::new(|_, ()| {});
                co.resume(());
                recurse(0)
            })
            .unwrap();
        let _ = t.join();
        unreachable!();
    }
    let out = run_in_child("a_thread_overflow_still_gets_rusts_own_message", &[]);
    let err = stderr(&out);
    assert!(err.contains("thread 'plain-thread'"), "{err}");
    assert!(err.contains("has overflowed its stack"), "{err}");
    assert!(!err.contains("coroutine '"), "{err}");
    assert_eq!(signal(&out), Some(libc::SIGABRT), "{err}");
}

#[test]
fn a_fault_that_is_not_an_overflow_still_kills_with_sigsegv() {
    if child_case("a_fault_that_is_not_an_overflow_still_kills_with_sigsegv") {
        let mut co: Coroutine<(), (), ()> = Coroutine::new(|_, ()| {
            // SAFETY: none: this deliberately writes to an unmapped address to fault.
            unsafe { std::ptr::write_volatile(16 as *mut u64, 1) };
        });
        co.resume(());
        unreachable!();
    }
    let out = run_in_child(
        "a_fault_that_is_not_an_overflow_still_kills_with_sigsegv",
        &[],
    );
    let err = stderr(&out);
    assert!(!err.contains("overflowed"), "{err}");
    assert_eq!(signal(&out), Some(libc::SIGSEGV), "{err}");
}
