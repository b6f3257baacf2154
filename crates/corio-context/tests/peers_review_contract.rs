//! A reviewer's contract tests of the bare `Coroutine`, ported from its peers' own suites:
//! corosensei's `src/tests/coroutine.rs` (smoke, suspend_and_resume, suspend_and_resume_values,
//! stateful, force_unwind, stack_growth, backtrace_traces_to_host, panics_propagated,
//! backward/forward_stack_address, stack_overflow) re-expressed for corio's API, plus the
//! adversarial cases a reviewer adds around them: values that cross the switch counted for
//! drops, coroutines handed from one resumer to another, panics crossing two switches, and
//! overflow reports for slots with a history. Cases that may abort or crash run in a child
//! process (this binary, re-executed).
//!
//! Not ported, because corio has no equivalent: corosensei's trap handler (an overflow in corio
//! is a report and an abort, not a recoverable trap), `on_stack` and `Yielder::on_parent_stack`,
//! and `ScopedCoroutine` (a corio coroutine's closure is `'static`).

mod common;

use std::cell::{Cell, RefCell};
use std::hint::black_box;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::rc::Rc;

use common::{child_case, run_in_child, signal, stderr};
use corio_context::coroutine::{Builder, Coroutine, CoroutineResult, ForcedUnwind, Yielder};
use corio_context::stack;

/// Records its tag in a shared log when dropped.
struct Tagged(&'static str, Rc<RefCell<Vec<&'static str>>>);
impl Drop for Tagged {
    fn drop(&mut self) {
        self.1.borrow_mut().push(self.0);
    }
}

type Log = Rc<RefCell<Vec<&'static str>>>;

fn new_log() -> Log {
    Rc::new(RefCell::new(Vec::new()))
}

/// The message of a panic payload, if it is a string.
fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// corosensei `smoke`, `suspend_and_resume`, `suspend_and_resume_values`, `stateful`.

#[test]
fn a_coroutine_reports_created_suspended_and_finished_as_it_goes() {
    let ran = Rc::new(Cell::new(0));
    let r = ran.clone();
    let mut co: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
        r.set(1);
        y.suspend(());
        r.set(2);
        y.suspend(());
        r.set(3);
    });
    let state = |co: &Coroutine<(), (), ()>| {
        let dbg = format!("{co:?}");
        ["created", "suspended", "finished"]
            .into_iter()
            .find(|s| dbg.contains(&format!("state: \"{s}\"")))
            .unwrap_or_else(|| panic!("no state in {dbg}"))
    };
    assert!(!co.is_started() && !co.is_done());
    assert_eq!(state(&co), "created");
    assert_eq!(
        co.stack_in_use(),
        0,
        "nothing in use before the first resume"
    );
    assert_eq!(ran.get(), 0, "creating runs nothing");
    for step in 1..=2 {
        assert_eq!(co.resume(()), CoroutineResult::Yield(()));
        assert_eq!(ran.get(), step);
        assert!(co.is_started() && !co.is_done());
        assert_eq!(state(&co), "suspended");
        assert!(co.stack_in_use() > 0, "a suspended coroutine has frames");
    }
    assert_eq!(co.resume(()), CoroutineResult::Return(()));
    assert_eq!(ran.get(), 3);
    assert!(co.is_started() && co.is_done());
    assert_eq!(state(&co), "finished");
    assert_eq!(co.stack_size(), 0, "a finished coroutine holds no stack");
}

#[test]
fn inputs_yields_and_the_return_value_may_all_have_different_types() {
    let mut co = Coroutine::new(|y: &Yielder<f64, i32>, first: f64| {
        assert_eq!(first, 2.0);
        assert_eq!(y.suspend(4), 3.0);
        format!("hello {}", y.suspend(5))
    });
    assert_eq!(co.resume(2.0), CoroutineResult::Yield(4));
    assert_eq!(co.resume(3.0), CoroutineResult::Yield(5));
    assert_eq!(
        co.resume(6.5),
        CoroutineResult::Return("hello 6.5".to_string())
    );
}

#[test]
fn over_aligned_values_cross_the_switch_aligned_and_intact() {
    #[derive(Clone, Copy, Debug, PartialEq)]
    #[repr(C, align(4096))]
    struct Page([u64; 3]);
    fn aligned(p: &Page) -> bool {
        (std::ptr::from_ref(p) as usize).is_multiple_of(4096)
    }
    // Every generic frame between the entry and the closure that holds a `Page` is realigned
    // to 4 KiB: in a debug build ~230 KiB of stack are in use before the closure runs (as
    // with corosensei 0.3.4, measured during the review), so the default 256 KiB is too small.
    let mut co: Coroutine<Page, Page, Page> =
        Coroutine::with_stack_size(4 << 20, |y, first: Page| {
            assert!(aligned(&first));
            let mut p = first;
            for _ in 0..3 {
                p = y.suspend(Page([p.0[0] + 1, p.0[1] * 2, p.0[2]]));
                assert!(aligned(&p), "an input arrives aligned");
            }
            p
        });
    let mut p = Page([1, 1, 7]);
    for _ in 0..3 {
        let CoroutineResult::Yield(q) = co.resume(p) else {
            panic!("expected a yield")
        };
        assert!(aligned(&q), "a yielded value arrives aligned");
        p = q;
    }
    assert_eq!(p, Page([4, 8, 7]));
    assert_eq!(
        co.resume(Page([9, 9, 9])),
        CoroutineResult::Return(Page([9, 9, 9]))
    );
}

// ---------------------------------------------------------------------------------------------
// Values crossing the switch: each created value dropped exactly once, whatever the path.

/// A value whose creations and drops are counted.
struct Counted(Rc<Cell<(u32, u32)>>);
impl Counted {
    fn new(c: &Rc<Cell<(u32, u32)>>) -> Counted {
        let (made, dropped) = c.get();
        c.set((made + 1, dropped));
        Counted(c.clone())
    }
}
impl Drop for Counted {
    fn drop(&mut self) {
        let (made, dropped) = self.0.get();
        self.0.set((made, dropped + 1));
    }
}

#[test]
fn every_value_that_crosses_the_switch_is_dropped_exactly_once() {
    let c = Rc::new(Cell::new((0, 0)));
    let balanced = |what: &str| {
        let (made, dropped) = c.get();
        assert_eq!(made, dropped, "{what}: made {made}, dropped {dropped}");
    };
    // Full protocol: input in, yields out, inputs in, a return value out.
    {
        let k = c.clone();
        let mut co: Coroutine<Counted, Counted, Counted> = Coroutine::new(move |y, first| {
            drop(first);
            let second = y.suspend(Counted::new(&k));
            let _keep = second; // dropped at return
            let _ignored = y.suspend(Counted::new(&k));
            Counted::new(&k)
        });
        for _ in 0..2 {
            assert!(co.resume(Counted::new(&c)).is_yield());
        }
        assert!(co.resume(Counted::new(&c)).is_return());
        // Refused inputs: resuming a finished coroutine.
        for _ in 0..2 {
            assert!(catch_unwind(AssertUnwindSafe(|| co.resume(Counted::new(&c)))).is_err());
        }
    }
    balanced("full protocol");
    // Dropped while suspended holding an input and a yielded value's twin.
    {
        let k = c.clone();
        let mut co: Coroutine<Counted, Counted, Counted> = Coroutine::new(move |y, first| {
            let _held = first;
            let _also = Counted::new(&k);
            let _next = y.suspend(Counted::new(&k));
            unreachable!("dropped, never resumed")
        });
        let _yielded = co.resume(Counted::new(&c));
        drop(co);
    }
    balanced("dropped while suspended");
    // Dropped after catching the forced unwind and returning a value anyway.
    {
        let k = c.clone();
        let mut co: Coroutine<(), (), Counted> = Coroutine::new(move |y, ()| {
            let caught = catch_unwind(AssertUnwindSafe(|| y.suspend(())));
            assert!(caught.unwrap_err().is::<ForcedUnwind>());
            Counted::new(&k)
        });
        co.resume(());
        drop(co);
    }
    balanced("return value of an unwound coroutine");
    // Never started: the closure's captures are dropped, the input never made.
    {
        let captured = Counted::new(&c);
        let co: Coroutine<Counted, (), ()> = Coroutine::new(move |_, _| drop(captured));
        drop(co);
    }
    balanced("never started");
}

// ---------------------------------------------------------------------------------------------
// corosensei `force_unwind`: each of its cases, through `Drop` (corio has no `force_unwind`).

#[test]
fn dropping_runs_both_destructors_in_every_case_of_corosensei_force_unwind() {
    const SIZE: usize = 44 << 10; // used by no other test of this file
    fn case(body: fn(&Yielder<(), ()>, Tagged, Tagged), resumes: usize) -> Vec<&'static str> {
        let log = new_log();
        let (a, b) = (Tagged("a", log.clone()), Tagged("b", log.clone()));
        let mut co: Coroutine<(), (), ()> = Builder::new()
            .stack_size(SIZE)
            .build(move |y, ()| body(y, a, b))
            .unwrap();
        for _ in 0..resumes {
            co.resume(());
        }
        drop(co);
        assert_eq!(stack::stats_for_size(SIZE).in_use, 0, "the stack went back");
        log.borrow().clone()
    }
    fn plain(y: &Yielder<(), ()>, a: Tagged, b: Tagged) {
        drop(a);
        y.suspend(());
        drop(b);
    }
    fn catch_then_go_on(y: &Yielder<(), ()>, a: Tagged, b: Tagged) {
        drop(a);
        let _ = catch_unwind(AssertUnwindSafe(|| y.suspend(())));
        drop(b);
    }
    fn catch_then_suspend_again(y: &Yielder<(), ()>, a: Tagged, b: Tagged) {
        drop(a);
        let _ = catch_unwind(AssertUnwindSafe(|| y.suspend(())));
        y.suspend(());
        drop(b);
    }
    // Never started: both captures dropped with the closure.
    let mut never = case(plain, 0);
    never.sort_unstable();
    assert_eq!(never, ["a", "b"]);
    // Suspended: `a` dropped while running, `b` by the unwind.
    assert_eq!(case(plain, 1), ["a", "b"]);
    // The unwind caught, and the closure carries on to its end.
    assert_eq!(case(catch_then_go_on, 1), ["a", "b"]);
    // The unwind caught, and the closure suspends again: raised again there.
    assert_eq!(case(catch_then_suspend_again, 1), ["a", "b"]);
    // Finished before the drop.
    assert_eq!(case(plain, 2), ["a", "b"]);
}

#[test]
fn a_forced_unwind_caught_and_rethrown_is_still_an_unwind() {
    let log = new_log();
    let l = log.clone();
    let mut co: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
        let _outer = Tagged("outer", l.clone());
        let caught = catch_unwind(AssertUnwindSafe(|| {
            let _inner = Tagged("inner", l.clone());
            y.suspend(());
        }));
        let payload = caught.unwrap_err();
        assert!(payload.is::<ForcedUnwind>());
        assert!(!std::thread::panicking(), "caught: no panic in flight");
        l.borrow_mut().push("rethrowing");
        resume_unwind(payload);
    });
    co.resume(());
    drop(co); // must not panic: the coroutine was only unwound
    assert_eq!(*log.borrow(), ["inner", "rethrowing", "outer"]);
}

#[test]
fn a_coroutine_that_panics_with_its_own_payload_while_dropped_panics_the_dropper() {
    // It swallowed the forced unwind and then panicked for its own reasons: that panic is no
    // unwind, and reaches the code that dropped it, as a panicking destructor would.
    let mut co: Coroutine<(), (), ()> = Coroutine::new(|y, ()| {
        let _ = catch_unwind(AssertUnwindSafe(|| y.suspend(())));
        std::panic::panic_any(9u8);
    });
    co.resume(());
    let err = catch_unwind(AssertUnwindSafe(|| drop(co))).unwrap_err();
    assert_eq!(err.downcast_ref::<u8>(), Some(&9));
    assert!(!std::thread::panicking());
}

// ---------------------------------------------------------------------------------------------
// corosensei `stack_growth`, and the promise that `stack_size(n)` gives the frames `n` bytes.

#[inline(never)]
fn recurse_frames(i: u32, frame: &mut [u8; 10_000]) -> u64 {
    black_box(&mut *frame);
    let here = frame[(i as usize * 7) % frame.len()] as u64;
    if i == 0 {
        return here;
    }
    let mut next = [i as u8; 10_000];
    here + recurse_frames(i - 1, &mut next)
}

#[test]
fn half_a_mebibyte_of_ten_kilobyte_frames_fits_a_one_mebibyte_stack() {
    let mut co: Coroutine<(), (), u64> = Builder::new()
        .stack_size(1 << 20)
        .build(|_, ()| recurse_frames(50, &mut [1; 10_000]))
        .unwrap();
    assert!(co.resume(()).as_return().is_some());
}

/// Recurses in 1 KiB frames until the stack pointer is within `slack` bytes of `limit`,
/// touching every frame; returns the lowest address reached.
#[inline(never)]
fn descend_to(limit: usize, slack: usize) -> usize {
    let mut frame = [0u8; 1024];
    black_box(&mut frame);
    let here = std::ptr::from_ref(&frame) as usize;
    if here < limit + slack {
        return here;
    }
    black_box(descend_to(limit, slack)).min(here)
}

#[test]
fn frames_reach_the_bottom_of_the_requested_stack_size_without_a_fault() {
    let name = "frames_reach_the_bottom_of_the_requested_stack_size_without_a_fault";
    if child_case(name) {
        for size in [stack::MIN_STACK_SIZE, 40 << 10, 256 << 10] {
            let mut co: Coroutine<(), (), (usize, usize, usize)> = Builder::new()
                .stack_size(size)
                .build(|y, ()| {
                    let (limit, top) = y.stack_bounds();
                    (limit, top, descend_to(limit, 3 << 10))
                })
                .unwrap();
            let (limit, top, lowest) = co.resume(()).as_return().unwrap();
            assert!(
                top - limit >= size,
                "stack_size({size}) gave the frames only {} bytes",
                top - limit
            );
            assert!(
                lowest < limit + (4 << 10),
                "size {size}: stopped at {lowest:#x}"
            );
        }
        return;
    }
    let out = run_in_child(name, &[]);
    assert!(
        out.status.success(),
        "signal {:?}:\n{}",
        signal(&out),
        stderr(&out)
    );
}

// ---------------------------------------------------------------------------------------------
// corosensei `backtrace_traces_to_host`: after every resume, from whichever frame resumed.

#[inline(never)]
fn first_resumer(co: &mut Coroutine<(), String, String>) -> String {
    black_box(co.resume(())).as_yield().unwrap()
}

#[inline(never)]
fn second_resumer(co: &mut Coroutine<(), String, String>) -> String {
    black_box(co.resume(())).as_return().unwrap()
}

fn trace() -> String {
    std::backtrace::Backtrace::force_capture().to_string()
}

#[test]
fn a_backtrace_after_a_later_resume_reaches_the_frame_that_resumed_it_last() {
    let mut co: Coroutine<(), String, String> = Coroutine::new(|y, ()| {
        y.suspend(trace());
        trace()
    });
    let first = first_resumer(&mut co);
    assert!(first.contains("first_resumer"), "{first}");
    let second = second_resumer(&mut co);
    assert!(second.contains("second_resumer"), "{second}");
    assert!(
        !second.contains("first_resumer"),
        "the second trace still names the first resumer:\n{second}"
    );
}

#[inline(never)]
fn outermost_resumer(co: &mut Coroutine<(), (), String>) -> String {
    black_box(co.resume(())).as_return().unwrap()
}

#[test]
fn a_backtrace_in_a_nested_coroutine_crosses_both_switches() {
    let mut outer: Coroutine<(), (), String> = Coroutine::new(|_, ()| {
        let mut inner: Coroutine<(), (), String> = Coroutine::new(|_, ()| trace());
        inner.resume(()).as_return().unwrap()
    });
    let t = outermost_resumer(&mut outer);
    assert!(t.contains("outermost_resumer"), "{t}");
    assert!(
        t.contains("a_backtrace_in_a_nested_coroutine_crosses_both_switches"),
        "{t}"
    );
}

#[inline(never)]
fn resumer_seen_by_the_panic_hook(co: &mut Coroutine<(), (), ()>) {
    co.resume(());
}

#[test]
fn a_panic_under_rust_backtrace_on_the_default_stack_prints_a_trace_through_the_resumer() {
    let name =
        "a_panic_under_rust_backtrace_on_the_default_stack_prints_a_trace_through_the_resumer";
    if child_case(name) {
        let mut co: Coroutine<(), (), ()> = Coroutine::new(|_, ()| panic!("from the coroutine"));
        let err = catch_unwind(AssertUnwindSafe(|| resumer_seen_by_the_panic_hook(&mut co)));
        assert_eq!(message(&*err.unwrap_err()), "from the coroutine");
        return;
    }
    let out = run_in_child(name, &[("RUST_BACKTRACE", "full")]);
    let err = stderr(&out);
    assert!(out.status.success(), "signal {:?}:\n{err}", signal(&out));
    assert!(err.contains("from the coroutine"), "{err}");
    assert!(
        err.contains("resumer_seen_by_the_panic_hook"),
        "the printed backtrace does not cross the switch:\n{err}"
    );
}

#[test]
fn a_panic_in_a_minimum_size_coroutine_is_reported_and_caught() {
    // Without RUST_BACKTRACE the hook formats one line: the smallest stack must hold that.
    let name = "a_panic_in_a_minimum_size_coroutine_is_reported_and_caught";
    if child_case(name) {
        let mut co: Coroutine<(), (), ()> = Builder::new()
            .stack_size(stack::MIN_STACK_SIZE)
            .build(|_, ()| panic!("small but {}", "formatted"))
            .unwrap();
        let err = catch_unwind(AssertUnwindSafe(|| co.resume(()))).unwrap_err();
        assert_eq!(message(&*err), "small but formatted");
        return;
    }
    let out = run_in_child(name, &[]);
    let err = stderr(&out);
    assert!(out.status.success(), "signal {:?}:\n{err}", signal(&out));
    assert!(err.contains("small but formatted"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// corosensei `panics_propagated`, `backward_stack_address`, `forward_stack_address`.

#[test]
fn a_panic_in_a_coroutine_on_another_thread_reaches_that_threads_join() {
    // Stack slots carved before and after the thread started (the unwinder must not assume
    // the coroutine's stack lies above or below the thread's).
    let before: Coroutine<(), (), ()> = Coroutine::new(|_, ()| {});
    drop(before);
    for _ in 0..2 {
        let joined = std::thread::spawn(|| {
            let log = new_log();
            let guard = Tagged("captured", log.clone());
            let mut co: Coroutine<(), (), ()> = Coroutine::new(move |_, ()| {
                drop(guard);
                panic!("foobar");
            });
            let r = catch_unwind(AssertUnwindSafe(|| co.resume(())));
            assert_eq!(*log.borrow(), ["captured"]);
            resume_unwind(r.unwrap_err());
        })
        .join();
        assert_eq!(message(&*joined.unwrap_err()), "foobar");
    }
}

// ---------------------------------------------------------------------------------------------
// Coroutines handed between resumers.

#[inline(never)]
fn thread_resumer(co: &mut Coroutine<(), (u32, String), ()>) -> (u32, String) {
    black_box(co.resume(())).as_yield().unwrap()
}

#[test]
fn a_coroutine_first_resumed_inside_another_returns_to_whoever_resumes_it_next() {
    const SIZE: usize = 52 << 10; // used by no other test of this file
    type Inner = Coroutine<(), (u32, String), ()>;
    let inner: Inner = Coroutine::new(|y, ()| {
        y.suspend((1, trace()));
        y.suspend((2, trace()));
        panic!("inner gives up");
    });
    // The carrier resumes `inner` once from its own stack, then hands it back and finishes:
    // its stack slot goes back to the cache while `inner`'s link still pointed into it.
    let mut carrier: Coroutine<(), (), Inner> = Builder::new()
        .stack_size(SIZE)
        .build(move |_, ()| {
            let mut inner = inner;
            assert_eq!(inner.resume(()).as_yield().unwrap().0, 1);
            inner
        })
        .unwrap();
    let mut inner = carrier.resume(()).as_return().unwrap();
    assert_eq!(stack::stats_for_size(SIZE).in_use, 0);
    // Scribble over the carrier's old slot with another coroutine's frames.
    let mut scribbler: Coroutine<(), (), usize> = Builder::new()
        .stack_size(SIZE)
        .build(|y, ()| {
            let (limit, _) = y.stack_bounds();
            descend_to(limit, 8 << 10)
        })
        .unwrap();
    assert!(scribbler.resume(()).is_return());
    // Resumed from this thread now: it comes back here, traced through here.
    let (n, t) = thread_resumer(&mut inner);
    assert_eq!(n, 2);
    assert!(t.contains("thread_resumer"), "{t}");
    let err = catch_unwind(AssertUnwindSafe(|| inner.resume(()))).unwrap_err();
    assert_eq!(message(&*err), "inner gives up");
    assert!(inner.is_done());
}

#[test]
fn a_coroutine_resumed_alternately_by_the_thread_and_by_another_coroutine_keeps_its_count() {
    type Shared = Rc<RefCell<Coroutine<(), u32, ()>>>;
    let counter: Shared = Rc::new(RefCell::new(Coroutine::new(|y, ()| {
        let mut n = 0;
        loop {
            n += 1;
            y.suspend(n);
        }
    })));
    let c = counter.clone();
    let mut relay: Coroutine<(), u32, ()> = Coroutine::new(move |y, ()| {
        loop {
            let v = c.borrow_mut().resume(()).as_yield().unwrap();
            y.suspend(v);
        }
    });
    let mut seen = Vec::new();
    for _ in 0..200 {
        seen.push(counter.borrow_mut().resume(()).as_yield().unwrap());
        seen.push(relay.resume(()).as_yield().unwrap());
    }
    let expected: Vec<u32> = (1..=400).collect();
    assert_eq!(seen, expected);
    drop(relay);
    drop(counter); // both unwound, in either order
}

#[test]
fn catch_unwind_inside_a_coroutine_around_a_panicking_inner_resume_recovers() {
    let log = new_log();
    let l = log.clone();
    let mut outer: Coroutine<(), &'static str, u32> = Coroutine::new(move |y, ()| {
        let l2 = l.clone();
        let mut inner: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
            let _g = Tagged("inner frame", l2);
            y.suspend(());
            std::panic::panic_any(77u32);
        });
        inner.resume(());
        let caught = catch_unwind(AssertUnwindSafe(|| inner.resume(())));
        let code = *caught.unwrap_err().downcast_ref::<u32>().unwrap();
        assert!(inner.is_done());
        assert!(!std::thread::panicking());
        // The outer coroutine still suspends and resumes normally afterwards.
        y.suspend("recovered");
        code + 1
    });
    assert_eq!(outer.resume(()), CoroutineResult::Yield("recovered"));
    assert_eq!(*log.borrow(), ["inner frame"]);
    assert_eq!(outer.resume(()), CoroutineResult::Return(78));
}

#[test]
fn a_panic_crosses_two_switches_to_the_outermost_resumer() {
    const SIZE: usize = 60 << 10; // used by no other test of this file
    let log = new_log();
    let l = log.clone();
    let mut outer: Coroutine<(), (), ()> = Builder::new()
        .stack_size(SIZE)
        .build(move |_, ()| {
            let _o = Tagged("outer frame", l.clone());
            let l2 = l.clone();
            let mut inner: Coroutine<(), (), ()> = Builder::new()
                .stack_size(SIZE)
                .build(move |_, ()| {
                    let _i = Tagged("inner frame", l2);
                    std::panic::panic_any(String::from("deep"));
                })
                .unwrap();
            inner.resume(());
            unreachable!("the inner panic continues here");
        })
        .unwrap();
    let err = catch_unwind(AssertUnwindSafe(|| outer.resume(()))).unwrap_err();
    assert_eq!(message(&*err), "deep");
    assert_eq!(*log.borrow(), ["inner frame", "outer frame"]);
    assert!(outer.is_done());
    assert_eq!(stack::stats_for_size(SIZE).in_use, 0);
}

#[test]
fn a_suspended_coroutine_dropped_inside_another_is_unwound_there() {
    let log = new_log();
    let l = log.clone();
    let mut victim: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
        let _v = Tagged("victim frame", l);
        y.suspend(());
    });
    victim.resume(()); // suspended by this thread
    let l = log.clone();
    let mut dropper: Coroutine<(), (), usize> = Coroutine::new(move |y, ()| {
        y.suspend(());
        drop(victim);
        let seen = l.borrow().len();
        l.borrow_mut().push("after the drop");
        seen
    });
    dropper.resume(());
    assert_eq!(dropper.resume(()), CoroutineResult::Return(1));
    assert_eq!(*log.borrow(), ["victim frame", "after the drop"]);
}

#[test]
fn ten_thousand_minimum_size_coroutines_alive_at_once_keep_their_own_state() {
    const N: usize = 10_000;
    let mut cos: Vec<Coroutine<u64, u64, u64>> = (0..N as u64)
        .map(|k| {
            Builder::new()
                .stack_size(stack::MIN_STACK_SIZE)
                .build(move |y: &Yielder<u64, u64>, mut x: u64| {
                    let mut local = [k; 16];
                    for _ in 0..3 {
                        local[(x % 16) as usize] += 1;
                        x = y.suspend(black_box(local).iter().sum());
                    }
                    x + k
                })
                .unwrap()
        })
        .collect();
    for round in 0..3u64 {
        for (k, co) in cos.iter_mut().enumerate() {
            let k = k as u64;
            assert_eq!(co.resume(round), CoroutineResult::Yield(16 * k + round + 1));
        }
    }
    for (k, co) in cos.iter_mut().enumerate() {
        assert_eq!(co.resume(5), CoroutineResult::Return(5 + k as u64));
    }
}

// ---------------------------------------------------------------------------------------------
// Forced unwinds are quiet, and overflow reports for slots with a history.

static HOOK_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[test]
fn dropping_a_suspended_coroutine_calls_no_panic_hook_and_prints_nothing() {
    let name = "dropping_a_suspended_coroutine_calls_no_panic_hook_and_prints_nothing";
    if child_case(name) {
        std::panic::set_hook(Box::new(|_| {
            HOOK_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
        for _ in 0..10 {
            let mut co: Coroutine<(), (), ()> = Coroutine::new(|y, ()| {
                let _ = catch_unwind(AssertUnwindSafe(|| y.suspend(())));
                y.suspend(()); // raised again: still no hook
            });
            co.resume(());
            drop(co);
        }
        assert_eq!(HOOK_CALLS.load(std::sync::atomic::Ordering::SeqCst), 0);
        let _ = std::panic::take_hook();
        return;
    }
    let out = run_in_child(name, &[]);
    let err = stderr(&out);
    assert!(out.status.success(), "signal {:?}:\n{err}", signal(&out));
    assert!(!err.contains("panicked"), "{err}");
}

#[inline(never)]
#[allow(unconditional_recursion)] // overflowing is the point
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth; 8]);
    black_box(recurse(depth + 1)) + frame[0]
}

fn assert_reported(out: &std::process::Output, name: &str) {
    let err = stderr(out);
    assert!(
        err.contains(&format!("coroutine '{name}' (id "))
            && err.contains("has overflowed its stack"),
        "no overflow report for {name}: status {:?}, signal {:?}:\n{err}",
        out.status,
        signal(out)
    );
    assert_eq!(signal(out), Some(libc::SIGABRT), "{err}");
}

#[test]
fn an_overflow_in_a_reused_slot_names_its_new_owner_not_the_previous_one() {
    let name = "an_overflow_in_a_reused_slot_names_its_new_owner_not_the_previous_one";
    if child_case(name) {
        const SIZE: usize = 48 << 10;
        let mut old: Coroutine<(), (), ()> = Builder::new()
            .name("previous-owner")
            .stack_size(SIZE)
            .build(|y, ()| y.suspend(()))
            .unwrap();
        old.resume(());
        drop(old);
        let mut new: Coroutine<(), (), u64> = Builder::new()
            .stack_size(SIZE)
            .build(|_, ()| recurse(0))
            .unwrap();
        new.resume(());
        unreachable!();
    }
    let out = run_in_child(name, &[]);
    assert_reported(&out, "<unnamed>");
    assert!(!stderr(&out).contains("previous-owner"), "{}", stderr(&out));
}

#[test]
fn an_overflow_in_a_coroutine_with_a_huge_name_is_still_one_bounded_report() {
    let name = "an_overflow_in_a_coroutine_with_a_huge_name_is_still_one_bounded_report";
    if child_case(name) {
        let long: String = "é".repeat(50_000);
        let mut co: Coroutine<(), (), u64> = Builder::new()
            .name(long)
            .stack_size(64 << 10)
            .build(|_, ()| recurse(0))
            .unwrap();
        co.resume(());
        unreachable!();
    }
    let out = run_in_child(name, &[]);
    let err = stderr(&out);
    assert_eq!(signal(&out), Some(libc::SIGABRT), "{err}");
    assert!(err.contains("coroutine '\u{e9}\u{e9}"), "{err}");
    assert!(err.contains("coroutine stack overflow, aborting"), "{err}");
    assert!(
        err.len() < 4096,
        "the report is bounded: {} bytes",
        err.len()
    );
}

#[test]
fn an_overflow_in_a_coroutine_handed_to_another_resumer_names_it() {
    // Created and first resumed by one coroutine, overflowing when resumed by another.
    let name = "an_overflow_in_a_coroutine_handed_to_another_resumer_names_it";
    if child_case(name) {
        type Deep = Coroutine<(), (), u64>;
        let mut maker: Coroutine<(), (), Deep> = Builder::new()
            .name("maker")
            .build(|_, ()| {
                let mut deep: Deep = Builder::new()
                    .name("handed-over")
                    .stack_size(32 << 10)
                    .build(|y, ()| {
                        y.suspend(());
                        recurse(0)
                    })
                    .unwrap();
                deep.resume(());
                deep
            })
            .unwrap();
        let deep = maker.resume(()).as_return().unwrap();
        let mut runner: Coroutine<(), (), u64> = Builder::new()
            .name("runner")
            .build(move |_, ()| {
                let mut deep = deep;
                deep.resume(()).as_return().unwrap()
            })
            .unwrap();
        runner.resume(());
        unreachable!();
    }
    assert_reported(&run_in_child(name, &[]), "handed-over");
}

// ---------------------------------------------------------------------------------------------
// Send and Sync: positive properties checked at compile time (the negative ones, `Coroutine`
// and `Yielder` being neither, are `review_contract.rs`'s probes and the `compile_fail` doctest).

const fn assert_send_sync<T: Send + Sync>() {}
const _: () = assert_send_sync::<CoroutineResult<u32, String>>();
const _: () = assert_send_sync::<ForcedUnwind>();
const _: () = assert_send_sync::<Builder>();
const _: () = assert_send_sync::<stack::StackStats>();

#[test]
fn a_forced_unwind_payload_can_be_sent_to_another_thread() {
    // It is a panic payload (`Box<dyn Any + Send>`): code that catches it may move it.
    let stash: Rc<RefCell<Option<Box<dyn std::any::Any + Send>>>> = Rc::new(RefCell::new(None));
    let s = stash.clone();
    let mut co: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
        *s.borrow_mut() = catch_unwind(AssertUnwindSafe(|| y.suspend(()))).err();
    });
    co.resume(());
    drop(co);
    let payload = stash.borrow_mut().take().expect("caught");
    let back = std::thread::spawn(move || payload.is::<ForcedUnwind>())
        .join()
        .unwrap();
    assert!(back);
}

#[test]
fn a_closure_the_builder_accepts_runs_without_overflowing() {
    // `build` refuses a closure that does not fit in half of the stack; one that fits in a
    // quarter must then be able to run: the body only borrows the capture. (corosensei
    // refuses such a closure at creation, "type is too big to transfer".)
    let name = "a_closure_the_builder_accepts_runs_without_overflowing";
    if child_case(name) {
        const SIZE: usize = 64 << 10;
        let big = [7u8; 16 << 10];
        let mut co: Coroutine<(), (), usize> = Builder::new()
            .name("big-capture")
            .stack_size(SIZE)
            .build(move |_, ()| big.iter().map(|&b| b as usize).sum())
            .expect("16 KiB fits in half of 64 KiB");
        assert_eq!(co.resume(()), CoroutineResult::Return(7 * (16 << 10)));
        return;
    }
    let out = run_in_child(name, &[]);
    assert!(
        out.status.success(),
        "signal {:?}:\n{}",
        signal(&out),
        stderr(&out)
    );
}
