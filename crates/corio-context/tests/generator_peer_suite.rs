//! The `generator` crate's suite (generator 0.8.11, `tests/lib.rs`: the stackful generators that
//! may is built on), ported to corio's bare stackful [`Coroutine`], plus the adversarial cases a
//! reviewer adds around it. Each test names its original in a `///` line; "reviewer" marks an
//! addition.
//!
//! Ported, re-expressed for corio's API (`resume(input)` / `Yielder::suspend(value)`):
//! `test_return`, `generator_is_done`, `generator_is_done1`, `generator_is_done_with_drop`,
//! `test_yield_a`, `test_yield_with`, `test_yield_float`, `test_scoped`, `test_scoped_yield`,
//! `test_inner_ref`, `test_drop`, `test_loop_drop`, `test_ill_drop`, `test_panic_inside`,
//! `test_cancel`, `test_yield_from_generator_context`, `test_yield_from`,
//! `test_yield_from_send`, `test_scope_gen`, `test_scope_yield_from_send`, `test_re_init`, and
//! the crate's `get_local_data`/`is_generator`/`stack_usage` (`src/rt.rs`, `src/gen_impl.rs`).
//!
//! Adapted where corio's documented design differs:
//!
//! - generator starts a generator with `raw_send(None)` and drops the first `send`'s value;
//!   corio's first `resume` passes its input to the closure as its argument.
//! - generator's `done!()` ends a generator from any depth by panicking with a private payload;
//!   corio has none: the closure's return is the only completion, and a panic is a panic.
//! - generator's `cancel()` unwinds a suspended generator and leaves it "done"; corio's cancel
//!   is `drop`, which unwinds the same way (so there is no handle left to ask `is_done`).
//! - generator's `yield_from` re-yields the inner generator's return value and returns the
//!   next input; here `delegate` returns the inner return value to the delegating closure,
//!   which yields it itself, so the resumer sees the same sequence of values.
//! - `test_re_init` re-initialises a generator on its old stack; a corio coroutine cannot be
//!   re-initialised, and what that saved (a fresh stack) is the thread cache's job: a new
//!   coroutine of the same size takes the finished one's slot.
//! - `get_local_data` is the running generator's local-data pointer; corio's equivalent is the
//!   per-context word of `corio_context::local` (each coroutine has its own, 0 until it sets
//!   it), and `is_generator` is `stack::current_context() != 0` or `Yielder::is_on_own_stack`.
//! - `test_inner_ref` lends the resumer a `&mut` to a local on the generator's stack through
//!   `yield_unsafe`; corio's `Yield` is `'static`, so the test yields a raw pointer instead,
//!   which stays valid because corio never moves or copies a stack.
//!
//! Not ported:
//!
//! - `test_scoped_1` (a generator that borrows a local of its creator): a corio closure is
//!   `'static`. `let mut x = 10; Coroutine::new(|_, ()| x = 5)` is E0373 ("closure may outlive
//!   the current function"), and yielding a reference to a local of the coroutine
//!   (`y.suspend(&x)`) is E0597 (checked by hand against this version).
//! - The runtime type errors (`test_yield_with_type_error`, `test_get_yield_type_error`,
//!   `test_deep_yield_with_type_error`, `test_yield_from_send_type_miss_match`,
//!   `invalid_yield_in_scope`): corio's input, yield and return types are the coroutine's type
//!   parameters, so each of those is a compile error (E0308).
//! - `test_yield_from_functor_context`, `test_yield_with_from_functor_context` and
//!   `done_in_normal` (suspending outside any generator panics): a corio `Yielder` is lent to
//!   its closure only, for a higher-ranked lifetime, so it cannot be kept (storing it in a
//!   `'static` place is E0521) nor reached from another stack by safe code.
//! - `test_stack_overflow` (commented out in generator itself): `overflow.rs` and
//!   `peers_review_contract.rs` cover overflow reports.
//! - Moving a generator to another thread: corio's `Coroutine` is `!Send` whatever its types
//!   (`std::thread::spawn(move || co.resume(()))` is E0277, "`*mut ()` cannot be sent between
//!   threads safely", started or not; `review_contract.rs` probes it and the `compile_fail`
//!   doctest checks it). What holds instead, that a coroutine lives its whole life on one thread
//!   and only its `Send` values cross, is tested below.
//! - corio's stackless `corio::generator`: this crate's dev-dependencies do not reach `corio`,
//!   and `crates/corio/tests/gen.rs` and `gen_review_contract.rs` already cover the behaviours
//!   of generator's suite that apply to it.
//!
//! Cases that may abort (a stack used to its last kilobytes) run in a child process: this
//! binary, re-executed (see `common`).

mod common;

use std::cell::{Cell, RefCell};
use std::hint::black_box;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{child_case, run_in_child, signal, stderr};
use corio_context::coroutine::{Builder, Coroutine, CoroutineResult, ForcedUnwind, Yielder};
use corio_context::{local, stack};

/// Records its tag in a shared log when dropped.
struct Tagged(&'static str, Log);
impl Drop for Tagged {
    fn drop(&mut self) {
        self.1.borrow_mut().push(self.0);
    }
}

type Log = Rc<RefCell<Vec<&'static str>>>;

fn new_log() -> Log {
    Rc::new(RefCell::new(Vec::new()))
}

/// A value whose creations and drops are counted in a shared `(made, dropped)` pair.
#[derive(Debug)]
struct Counted(u32, Rc<Cell<(u32, u32)>>);
impl Counted {
    fn new(n: u32, c: &Rc<Cell<(u32, u32)>>) -> Counted {
        let (made, dropped) = c.get();
        c.set((made + 1, dropped));
        Counted(n, c.clone())
    }
}
impl Drop for Counted {
    fn drop(&mut self) {
        let (made, dropped) = self.1.get();
        self.1.set((made, dropped + 1));
    }
}

/// A panic payload (it must be `Send`) that counts its drops.
struct Payload(u32, Arc<AtomicUsize>);
impl Drop for Payload {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

/// The message of a panic payload, if it is a string.
fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Runs `inner` to its end from inside a coroutine: what it yields is yielded on through `y`,
/// what `y` gets back goes in to `inner`, and its return value is the result. (generator's
/// `yield_from`, except that the return value comes back to the caller instead of being
/// yielded too.)
fn delegate<I, Y, R>(y: &Yielder<I, Y>, inner: &mut Coroutine<I, Y, R>, first: I) -> R {
    let mut input = first;
    loop {
        match inner.resume(input) {
            CoroutineResult::Yield(v) => input = y.suspend(v),
            CoroutineResult::Return(r) => return r,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Values both ways, and completion.

/// generator `test_return`.
#[test]
fn a_closure_that_never_suspends_returns_at_the_first_resume_and_is_done() {
    let mut co: Coroutine<(), (), u32> = Coroutine::new(|_, ()| 42);
    assert!(!co.is_done() && !co.is_started());
    assert_eq!(co.resume(()), CoroutineResult::Return(42));
    assert!(co.is_done() && co.is_started());
    // Resuming after completion is a panic that says so (generator returns `None`).
    let err = catch_unwind(AssertUnwindSafe(|| co.resume(()))).unwrap_err();
    assert!(
        message(&*err).contains("already finished"),
        "{}",
        message(&*err)
    );
    assert!(co.is_done());
}

/// generator `generator_is_done`, `generator_is_done1`, `generator_is_done_with_drop`.
#[test]
fn is_done_turns_true_at_the_resume_that_returns_and_not_before() {
    // A yielded `String` arrives intact; the return from inside a loop (generator's `done!()`
    // from a nested position) is the completion.
    let mut co: Coroutine<(), String, ()> = Coroutine::new(|y, ()| {
        for word in ["string", "more"] {
            y.suspend(String::from(word));
            if word == "more" {
                return;
            }
        }
        unreachable!("returned from inside the loop");
    });
    assert_eq!(
        co.resume(()),
        CoroutineResult::Yield(String::from("string"))
    );
    assert!(!co.is_done());
    assert_eq!(co.resume(()), CoroutineResult::Yield(String::from("more")));
    assert!(!co.is_done(), "suspended at its last yield: not done yet");
    assert_eq!(co.resume(()), CoroutineResult::Return(()));
    assert!(co.is_done());
}

/// generator `test_yield_a`, `test_yield_with`, `test_scope_gen`.
#[test]
fn the_first_input_is_the_closures_argument_and_later_ones_come_out_of_suspend() {
    let mut co: Coroutine<i32, i32, i32> = Coroutine::new(|y, first| {
        assert_eq!(first, -1, "the first resume's input");
        let r = y.suspend(10);
        r * 2
    });
    assert_eq!(co.resume(-1), CoroutineResult::Yield(10));
    assert!(!co.is_done());
    assert_eq!(co.resume(3), CoroutineResult::Return(6));
    assert!(co.is_done());

    // `test_yield_with`: nothing goes in, a yield and then a different return come out.
    let mut co: Coroutine<(), i32, i64> = Coroutine::new(|y, ()| {
        y.suspend(10);
        20
    });
    assert_eq!(co.resume(()), CoroutineResult::Yield(10));
    assert_eq!(co.resume(()), CoroutineResult::Return(20));
}

/// generator `test_yield_float`.
#[test]
fn floating_point_values_cross_the_switch_both_ways() {
    let mut co: Coroutine<f64, f64, f64> = Coroutine::new(|y, first| {
        assert_eq!(first, 0.5);
        let r = y.suspend(10.0);
        let x = r * 2.0; // 6
        let yy = x * 9.0; // 54
        let z = yy / 3.0; // 18
        let r = y.suspend(6.0);
        x * r * yy * z
    });
    let i = co.resume(0.5).as_yield().unwrap();
    assert_eq!(i, 10.0);
    let x = i * 10.0;
    assert_eq!(co.resume(3.0), CoroutineResult::Yield(6.0));
    assert_eq!(co.resume(x / 25.0), CoroutineResult::Return(23328.0));
    assert!(co.is_done());
}

/// One step of a floating-point recurrence, the same on both sides of the switch.
fn fstep(a: f64, k: f64) -> f64 {
    (a * 1.000_001 + k).sqrt() + a / 3.0
}

/// Reviewer: many floating-point locals, live in registers across every switch, on both sides.
#[test]
fn floating_point_locals_live_across_the_switch_survive_on_both_sides() {
    const ROUNDS: usize = 200;
    // Eight accumulators on each side: more than survive a call in any callee-saved register
    // (x86-64 has none for `xmm`), so each must be spilled around the switch and reloaded.
    let mut co: Coroutine<f64, f64, [f64; 8]> = Coroutine::new(|y, seed: f64| {
        let (mut a, mut b, mut c, mut d) = (seed, seed + 1.0, seed + 2.0, seed + 3.0);
        let (mut e, mut f, mut g, mut h) = (seed + 4.0, seed + 5.0, seed + 6.0, seed + 7.0);
        for _ in 0..ROUNDS {
            let k = y.suspend(a + b + c + d + e + f + g + h);
            a = fstep(a, k);
            b = fstep(b, a);
            c = fstep(c, b);
            d = fstep(d, c);
            e = fstep(e, d);
            f = fstep(f, e);
            g = fstep(g, f);
            h = fstep(h, g);
        }
        [a, b, c, d, e, f, g, h]
    });
    let seed = black_box(1.25);
    // The model of the coroutine's state, and the resumer's own live locals.
    let mut m = [0.0f64; 8];
    for (i, v) in m.iter_mut().enumerate() {
        *v = seed + i as f64;
    }
    let (mut p, mut q, mut r, mut s) = (black_box(0.1), 0.2, 0.3, 0.4);
    let (mut t, mut u, mut v, mut w) = (0.5, 0.6, 0.7, 0.8);
    let mut input = seed;
    for round in 0..=ROUNDS {
        let out = co.resume(input);
        if round < ROUNDS {
            assert_eq!(
                out,
                CoroutineResult::Yield(m.iter().sum::<f64>()),
                "round {round}"
            );
        } else {
            assert_eq!(out, CoroutineResult::Return(m), "the last round");
        }
        // The resumer's locals were live across the resume: they must be as they were.
        let k = p + q + r + s + t + u + v + w;
        (p, q, r, s) = (fstep(p, k), fstep(q, p), fstep(r, q), fstep(s, r));
        (t, u, v, w) = (fstep(t, s), fstep(u, t), fstep(v, u), fstep(w, v));
        input = k;
        if round < ROUNDS {
            let mut prev = k;
            for x in m.iter_mut() {
                *x = fstep(*x, prev);
                prev = *x;
            }
        }
    }
    // The resumer's chain again, without any coroutine in between.
    let (mut p2, mut q2, mut r2, mut s2) = (0.1, 0.2, 0.3, 0.4);
    let (mut t2, mut u2, mut v2, mut w2) = (0.5, 0.6, 0.7, 0.8);
    for _ in 0..=ROUNDS {
        let k = p2 + q2 + r2 + s2 + t2 + u2 + v2 + w2;
        (p2, q2, r2, s2) = (fstep(p2, k), fstep(q2, p2), fstep(r2, q2), fstep(s2, r2));
        (t2, u2, v2, w2) = (fstep(t2, s2), fstep(u2, t2), fstep(v2, u2), fstep(w2, v2));
    }
    assert_eq!([p, q, r, s, t, u, v, w], [p2, q2, r2, s2, t2, u2, v2, w2]);
}

/// generator `test_scoped_yield`.
#[test]
fn an_input_loop_runs_until_the_resumer_sends_none() {
    let mut co: Coroutine<Option<usize>, usize, usize> = Coroutine::new(|y, first| {
        assert_eq!(first, None, "started with nothing");
        let mut i = 0;
        loop {
            let v = y.suspend(i);
            i += 1;
            match v {
                Some(x) => assert_eq!(x, i),
                None => break,
            }
        }
        20
    });
    assert_eq!(co.resume(None), CoroutineResult::Yield(0));
    for i in 1..100 {
        assert_eq!(co.resume(Some(i)), CoroutineResult::Yield(i));
    }
    assert_eq!(co.resume(None), CoroutineResult::Return(20));
}

/// generator `test_scoped`.
#[test]
fn state_shared_through_an_rc_is_seen_by_the_resumer_between_resumes() {
    let x = Rc::new(RefCell::new(10));
    let x1 = x.clone();
    let mut co: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
        *x1.borrow_mut() = 20;
        y.suspend(());
        assert_eq!(*x1.borrow(), 30, "the resumer's write between the resumes");
        *x1.borrow_mut() = 5;
    });
    co.resume(());
    assert_eq!(*x.borrow(), 20);
    *x.borrow_mut() = 30;
    co.resume(());
    assert_eq!(*x.borrow(), 5);
    assert!(co.is_done());
    assert_eq!(
        Rc::strong_count(&x),
        1,
        "the capture went with the finished coroutine"
    );
}

/// generator `test_inner_ref`.
#[test]
fn a_pointer_to_a_local_of_a_suspended_coroutine_stays_valid_until_it_is_dropped() {
    // The coroutine sets up a resource on its own stack, lends it out while suspended, and
    // tears it down when dropped. The pointer must stay valid across resumes by different
    // resumers: corio never moves or copies a stack.
    struct Resource(u32, Rc<Cell<u32>>);
    impl Drop for Resource {
        fn drop(&mut self) {
            self.1.set(self.0); // the teardown sees the last value written
        }
    }
    let torn_down = Rc::new(Cell::new(0));
    let t = torn_down.clone();
    let co: Coroutine<(), *mut u32, ()> = Coroutine::new(move |y, ()| {
        let mut res = Resource(10, t);
        let p = &raw mut res.0;
        // From here on the coroutine touches `res.0` only through `p`.
        y.suspend(p);
        // SAFETY: `p` points to `res.0`, alive on this stack; the resumer wrote it while we
        // were suspended and touches it no more until we suspend again.
        assert_eq!(unsafe { *p }, 5, "the resumer's write");
        y.suspend(p);
        unreachable!("dropped while suspended");
    });
    let shared = Rc::new(RefCell::new(co));
    let p = shared.borrow_mut().resume(()).as_yield().unwrap();
    // SAFETY: the coroutine is suspended, so nothing else touches `res.0`, which stays alive
    // on its stack until the coroutine is dropped.
    unsafe {
        assert_eq!(*p, 10);
        *p = 5;
    }
    // Resumed the second time from inside another coroutine: the same address comes back.
    let s = shared.clone();
    let mut relay: Coroutine<(), (), *mut u32> =
        Coroutine::new(move |_, ()| s.borrow_mut().resume(()).as_yield().unwrap());
    let again = relay.resume(()).as_return().unwrap();
    assert_eq!(again, p, "the local did not move");
    // SAFETY: as above; the coroutine is suspended again.
    unsafe { *p = 77 };
    assert_eq!(torn_down.get(), 0);
    drop(relay);
    drop(shared); // the last handle: unwinds the coroutine, tearing the resource down
    assert_eq!(torn_down.get(), 77);
}

// ---------------------------------------------------------------------------------------------
// Drops and cancellation.

/// generator `test_drop`, `test_loop_drop`.
#[test]
fn dropping_a_suspended_coroutine_runs_none_of_the_code_after_its_suspension() {
    let x = Rc::new(Cell::new(10));
    let x1 = x.clone();
    let mut co: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
        x1.set(1);
        y.suspend(());
        x1.set(5);
    });
    co.resume(());
    drop(co);
    assert_eq!(x.get(), 1);

    // An endless loop of suspensions is ended by the drop alone.
    let x1 = x.clone();
    let mut co: Coroutine<(), u64, ()> = Coroutine::new(move |y, ()| {
        x1.set(5);
        let mut n = 0;
        loop {
            y.suspend(n);
            n += 1;
        }
    });
    assert_eq!(co.resume(()), CoroutineResult::Yield(0));
    assert_eq!(co.resume(()), CoroutineResult::Yield(1));
    drop(co);
    assert_eq!(x.get(), 5);
    assert_eq!(
        Rc::strong_count(&x),
        1,
        "both closures' captures were dropped"
    );
}

/// generator `test_ill_drop`.
#[test]
fn dropping_a_coroutine_that_never_ran_runs_none_of_its_body() {
    let log = new_log();
    let x = Rc::new(Cell::new(10u32));
    let (x1, guard) = (x.clone(), Tagged("capture", log.clone()));
    let co: Coroutine<u32, (), ()> = Coroutine::new(move |y, first| {
        let _guard = guard;
        x1.set(5);
        x1.set(first + y.suspend(()));
    });
    drop(co);
    assert_eq!(x.get(), 10, "not started: nothing ran");
    assert_eq!(*log.borrow(), ["capture"], "but the closure was dropped");
}

/// generator `test_cancel`.
#[test]
fn dropping_is_the_cancel_it_unwinds_a_counting_loop_and_gives_back_the_stack() {
    const SIZE: usize = 100 << 10; // used by no other test of this file
    let log = new_log();
    let l = log.clone();
    let mut co: Coroutine<(), u32, u32> = Builder::new()
        .stack_size(SIZE)
        .build(move |y, ()| {
            let _outer = Tagged("loop owner", l.clone());
            let mut i = 0;
            loop {
                let _round = Tagged("round", l.clone());
                y.suspend(i);
                // Only rounds that finished log their guard here.
                i += 1;
            }
        })
        .unwrap();
    loop {
        let i = co.resume(()).as_yield().unwrap();
        if i > 10 {
            break;
        }
    }
    assert_eq!(log.borrow().len(), 11, "eleven rounds finished");
    assert_eq!(stack::stats_for_size(SIZE).in_use, 1);
    drop(co);
    let log = log.borrow();
    assert_eq!(log.len(), 13);
    assert_eq!(
        &log[11..],
        ["round", "loop owner"],
        "the pending round, then the owner"
    );
    assert_eq!(stack::stats_for_size(SIZE).in_use, 0);
}

/// generator `test_panic_inside`.
#[test]
fn a_panic_before_the_first_suspension_reaches_the_resumer_with_its_message() {
    const SIZE: usize = 104 << 10; // used by no other test of this file
    let log = new_log();
    let x = Rc::new(Cell::new(10));
    let (x1, l) = (x.clone(), log.clone());
    let mut co: Coroutine<(), (), ()> = Builder::new()
        .stack_size(SIZE)
        .build(move |_, ()| {
            let _local = Tagged("local", l);
            x1.set(5);
            panic!("panic inside! {}", 7);
        })
        .unwrap();
    let err = catch_unwind(AssertUnwindSafe(|| co.resume(()))).unwrap_err();
    assert_eq!(message(&*err), "panic inside! 7", "the message is not lost");
    assert_eq!(x.get(), 5);
    assert_eq!(*log.borrow(), ["local"]);
    assert!(co.is_done());
    assert_eq!(Rc::strong_count(&x), 1, "the captures went with the unwind");
    assert_eq!(stack::stats_for_size(SIZE).in_use, 0);
    assert!(!std::thread::panicking());
}

/// Reviewer: a mutex held across a suspension is released by the drop.
#[test]
fn a_mutex_guard_held_across_a_suspension_is_released_when_the_coroutine_is_dropped() {
    // Released, and poisoned: the forced unwind is a panic as far as std is concerned, so the
    // guard's drop sees `std::thread::panicking()` (the same for generator and corosensei).
    let m = Arc::new(std::sync::Mutex::new(1u32));
    let m1 = m.clone();
    let mut co: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
        let mut g = m1.lock().unwrap();
        *g += 1;
        y.suspend(());
        *g += 100;
    });
    co.resume(());
    assert!(m.try_lock().is_err(), "held by the suspended coroutine");
    drop(co);
    let value = match m.try_lock() {
        Ok(g) => *g,
        Err(std::sync::TryLockError::Poisoned(p)) => *p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => panic!("the drop did not release the lock"),
    };
    assert_eq!(value, 2);
}

// ---------------------------------------------------------------------------------------------
// Nesting and delegation.

/// generator `test_yield_from_generator_context`.
#[test]
fn an_inner_coroutine_yields_to_the_coroutine_that_resumes_it() {
    let mut co: Coroutine<(), i32, i32> = Coroutine::new(|y, ()| {
        let mut inner: Coroutine<(), i32, i32> = Coroutine::new(|y, ()| {
            y.suspend(5);
            10
        });
        let i = inner.resume(()).as_yield().unwrap();
        y.suspend(i);
        assert!(
            !inner.is_done(),
            "left suspended; unwound when this closure returns"
        );
        0
    });
    assert_eq!(co.resume(()), CoroutineResult::Yield(5));
    assert_eq!(co.resume(()), CoroutineResult::Return(0));
}

/// generator `test_yield_from`, `test_yield_from_send`, `test_scope_yield_from_send`.
#[test]
fn delegating_forwards_every_yield_out_and_every_input_in() {
    // `test_yield_from`: 5 from the inner, its return 10 yielded by the outer, then 0.
    let mut co: Coroutine<(), i32, i32> = Coroutine::new(|y, ()| {
        let mut inner = Coroutine::new(|y: &Yielder<(), i32>, ()| {
            y.suspend(5);
            10
        });
        let r = delegate(y, &mut inner, ());
        y.suspend(r);
        0
    });
    assert_eq!(co.resume(()), CoroutineResult::Yield(5));
    assert_eq!(co.resume(()), CoroutineResult::Yield(10));
    assert_eq!(co.resume(()), CoroutineResult::Return(0));
    assert!(co.is_done());

    // `test_yield_from_send`: inputs go through to the inner coroutine.
    let inner = || {
        Coroutine::new(|y: &Yielder<u32, u32>, first: u32| {
            assert_eq!(first, 100, "the outer's first input, passed on");
            let mut i = y.suspend(1);
            i = y.suspend(i * 2);
            i * 2
        })
    };
    let mut co: Coroutine<u32, u32, u32> = Coroutine::new(move |y, first| {
        let mut g1 = inner();
        let r = delegate(y, &mut g1, first);
        assert_eq!(y.suspend(r), 10);
        0
    });
    assert_eq!(co.resume(100), CoroutineResult::Yield(1));
    assert_eq!(co.resume(3), CoroutineResult::Yield(6));
    assert_eq!(co.resume(4), CoroutineResult::Yield(8));
    assert_eq!(co.resume(10), CoroutineResult::Return(0));
    assert!(co.is_done());

    // `test_scope_yield_from_send`: the outer's return depends on the input after the inner's.
    let mut co: Coroutine<u32, u32, u32> = Coroutine::new(move |y, first| {
        let mut g1 = inner();
        let r = delegate(y, &mut g1, first);
        y.suspend(r) * 2
    });
    let sent: Vec<_> = [100, 4, 10, 7].into_iter().map(|i| co.resume(i)).collect();
    use CoroutineResult::{Return, Yield};
    assert_eq!(sent, [Yield(1), Yield(8), Yield(20), Return(14)]);

    // Delegating to an inner coroutine that has already finished: its "already finished"
    // panic goes through the outer to the resumer, and finishes the outer.
    let mut co: Coroutine<(), i32, i32> = Coroutine::new(|y, ()| {
        let mut inner: Coroutine<(), i32, i32> = Coroutine::new(|_, ()| 1);
        let first = delegate(y, &mut inner, ());
        first + delegate(y, &mut inner, ())
    });
    let err = catch_unwind(AssertUnwindSafe(|| co.resume(()))).unwrap_err();
    assert!(
        message(&*err).contains("already finished"),
        "{}",
        message(&*err)
    );
    assert!(co.is_done());
}

/// Reviewer: counted values through three levels of delegation, whatever the ending.
#[test]
fn values_through_three_levels_of_delegation_are_each_dropped_once() {
    type Co = Coroutine<Counted, Counted, Counted>;
    /// Level `k` forwards to level `k + 1`; the innermost yields twice, keeping its inputs.
    fn level(k: u32, c: Rc<Cell<(u32, u32)>>, ending: u8) -> Co {
        Coroutine::new(move |y: &Yielder<Counted, Counted>, first: Counted| {
            if k < 2 {
                let mut inner = level(k + 1, c.clone(), ending);
                let r = delegate(y, &mut inner, first);
                // Each level adds one to the value coming back up.
                return Counted::new(r.0 + 1, &c);
            }
            let a = y.suspend(Counted::new(first.0 * 10, &c));
            let b = y.suspend(Counted::new(a.0 * 10, &c));
            if ending == 1 {
                std::panic::panic_any(String::from("innermost gives up"));
            }
            Counted::new(first.0 + a.0 + b.0, &c)
        })
    }
    let c = Rc::new(Cell::new((0, 0)));
    let balanced = |what: &str| {
        let (made, dropped) = c.get();
        assert_eq!(made, dropped, "{what}: made {made}, dropped {dropped}");
        assert!(made > 0);
    };
    // To the end: inputs 1, 2, 3 reach the innermost; its return goes up two levels.
    {
        let mut co = level(0, c.clone(), 0);
        assert_eq!(co.resume(Counted::new(1, &c)).as_yield().unwrap().0, 10);
        assert_eq!(co.resume(Counted::new(2, &c)).as_yield().unwrap().0, 20);
        assert_eq!(co.resume(Counted::new(3, &c)).as_return().unwrap().0, 6 + 2);
    }
    balanced("to the end");
    // Dropped while all three are suspended, each holding values.
    {
        let mut co = level(0, c.clone(), 0);
        let _first = co.resume(Counted::new(1, &c));
        let _second = co.resume(Counted::new(2, &c));
        drop(co);
    }
    balanced("dropped mid-way");
    // The innermost panics: the panic crosses three switches; every level's values go.
    {
        let mut co = level(0, c.clone(), 1);
        co.resume(Counted::new(1, &c));
        co.resume(Counted::new(2, &c));
        let err = catch_unwind(AssertUnwindSafe(|| co.resume(Counted::new(3, &c)))).unwrap_err();
        assert_eq!(message(&*err), "innermost gives up");
        assert!(co.is_done());
    }
    balanced("panicked");
}

/// A binary tree whose values count their drops.
enum Tree {
    Leaf,
    Node(Box<Tree>, Counted, Box<Tree>),
}

fn tree(lo: u32, hi: u32, c: &Rc<Cell<(u32, u32)>>) -> Tree {
    if lo > hi {
        return Tree::Leaf;
    }
    // `lo >= 1` in this file, so `mid - 1` does not wrap.
    let mid = (lo + hi) / 2;
    let left = Box::new(tree(lo, mid - 1, c));
    Tree::Node(left, Counted::new(mid, c), Box::new(tree(mid + 1, hi, c)))
}

/// A coroutine that walks `t` in order, one coroutine per subtree, delegating to each.
fn walker(t: Tree, size: usize) -> Coroutine<(), u32, ()> {
    Builder::new()
        .stack_size(size)
        .build(move |y: &Yielder<(), u32>, ()| {
            if let Tree::Node(left, value, right) = t {
                if let Tree::Node(..) = *left {
                    delegate(y, &mut walker(*left, size), ());
                }
                y.suspend(value.0);
                drop(value);
                if let Tree::Node(..) = *right {
                    delegate(y, &mut walker(*right, size), ());
                }
            }
        })
        .unwrap()
}

/// Reviewer: recursion by coroutines (generator's tree-walking example in corio's terms).
#[test]
fn a_recursive_walk_with_a_coroutine_per_subtree_yields_in_order_and_gives_back_every_stack() {
    const SIZE: usize = 108 << 10; // used by no other test of this file
    const N: u32 = 63; // a perfect tree: six levels
    let c = Rc::new(Cell::new((0, 0)));
    let mut walk = walker(tree(1, N, &c), SIZE);
    assert_eq!(walk.resume(()), CoroutineResult::Yield(1));
    assert_eq!(
        stack::stats_for_size(SIZE).in_use,
        6,
        "one coroutine per level on the way to the leftmost node"
    );
    let mut seen = vec![1];
    while let CoroutineResult::Yield(v) = walk.resume(()) {
        seen.push(v);
    }
    assert_eq!(seen, (1..=N).collect::<Vec<_>>());
    assert_eq!(stack::stats_for_size(SIZE).in_use, 0);
    assert_eq!(c.get(), (N, N));

    // Dropped half-way: every stack comes back and every value not yet visited is dropped
    // once, whether it was on a suspended stack or in a closure that never ran.
    let c = Rc::new(Cell::new((0, 0)));
    let mut walk = walker(tree(1, N, &c), SIZE);
    for expected in 1..=40 {
        assert_eq!(walk.resume(()), CoroutineResult::Yield(expected));
    }
    assert!(stack::stats_for_size(SIZE).in_use > 1);
    drop(walk);
    assert_eq!(stack::stats_for_size(SIZE).in_use, 0);
    assert_eq!(c.get(), (N, N));
}

// ---------------------------------------------------------------------------------------------
// Stack usage.

#[inline(never)]
fn suspend_at_depth(y: &Yielder<(), ()>, depth: usize) {
    let frame = black_box([depth as u8; 512]);
    if depth == 0 {
        y.suspend(());
    } else {
        suspend_at_depth(y, depth - 1);
    }
    black_box(frame);
}

/// generator `stack_usage` (`src/gen_impl.rs`).
#[test]
fn stack_in_use_grows_with_the_depth_of_the_suspension_and_stays_within_the_stack() {
    let mut co: Coroutine<(), (), usize> = Coroutine::new(|y, ()| {
        for depth in 0..20 {
            suspend_at_depth(y, depth);
        }
        let (limit, top) = y.stack_bounds();
        top - limit
    });
    assert_eq!(co.stack_in_use(), 0, "not started");
    let mut last = 0;
    for depth in 0..20 {
        assert!(co.resume(()).is_yield());
        let used = co.stack_in_use();
        assert!(
            used > last + 512,
            "depth {depth}: {used} bytes in use, {last} one level up"
        );
        assert!(used < co.stack_size(), "{used} of {}", co.stack_size());
        last = used;
    }
    let span = co.resume(()).as_return().unwrap();
    assert!(
        span >= stack::DEFAULT_STACK_SIZE,
        "the frames get the whole size: {span}"
    );
    assert_eq!(co.stack_in_use(), 0, "finished");
    assert_eq!(co.stack_size(), 0, "finished: the stack went back");
}

/// Recurses in 1 KiB frames, each holding a guard, until within `slack` bytes of `limit`;
/// suspends twice there; returns how many frames it made.
#[inline(never)]
fn descend_and_suspend(y: &Yielder<(), usize>, limit: usize, slack: usize, guards: &Log) -> usize {
    let _guard = Tagged("frame", guards.clone());
    let mut frame = [0u8; 1024];
    black_box(&mut frame);
    let here = std::ptr::from_ref(&frame) as usize;
    if here < limit + slack {
        y.suspend(here - limit);
        y.suspend(here - limit);
        return 1;
    }
    1 + black_box(descend_and_suspend(y, limit, slack, guards))
}

/// Reviewer: suspending with the stack almost full, and unwinding from deep down.
#[test]
fn a_coroutine_suspends_within_kilobytes_of_its_stack_bottom_and_unwinds_from_deep_down() {
    let name =
        "a_coroutine_suspends_within_kilobytes_of_its_stack_bottom_and_unwinds_from_deep_down";
    if child_case(name) {
        // Suspending and resuming 3 KiB above the guard, then returning through every frame.
        for size in [stack::MIN_STACK_SIZE, 64 << 10, stack::DEFAULT_STACK_SIZE] {
            // Room reserved: a guard's drop near the bottom must not need `realloc`'s stack.
            let log: Log = Rc::new(RefCell::new(Vec::with_capacity(1024)));
            let l = log.clone();
            let mut co: Coroutine<(), usize, usize> = Builder::new()
                .stack_size(size)
                .build(move |y, ()| {
                    let (limit, _) = y.stack_bounds();
                    descend_and_suspend(y, limit, 3 << 10, &l)
                })
                .unwrap();
            let left = co.resume(()).as_yield().unwrap();
            assert!(left < 3 << 10, "{size}: {left} bytes left");
            assert_eq!(co.resume(()), CoroutineResult::Yield(left));
            let frames = co.resume(()).as_return().unwrap();
            assert_eq!(log.borrow().len(), frames, "{size}");
        }
        // Dropped while suspended deep down: the forced unwind runs below the deepest frame,
        // which needs room of its own (about 6 KiB in a debug build, as a panic would), so
        // this one leaves 16 KiB. Every frame's guard runs.
        for size in [64 << 10, stack::DEFAULT_STACK_SIZE] {
            let log = new_log();
            let l = log.clone();
            let mut co: Coroutine<(), usize, usize> = Builder::new()
                .stack_size(size)
                .build(move |y, ()| {
                    let (limit, _) = y.stack_bounds();
                    descend_and_suspend(y, limit, 16 << 10, &l)
                })
                .unwrap();
            let left = co.resume(()).as_yield().unwrap();
            assert!(left < 16 << 10, "{size}: {left} bytes left");
            let in_use = co.stack_in_use();
            drop(co);
            let frames = log.borrow().len();
            assert!(
                frames * 1024 > in_use / 2,
                "{size}: {frames} frames for {in_use}"
            );
            assert!(log.borrow().iter().all(|&t| t == "frame"));
        }
        eprintln!("CHILD: done");
        return;
    }
    let out = run_in_child(name, &[]);
    let err = stderr(&out);
    assert!(
        out.status.success(),
        "status {:?}, signal {:?}:\n{err}",
        out.status,
        signal(&out)
    );
    assert!(err.contains("CHILD: done"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Panics during a forced unwind (reviewer). Panics raised inside destructors use
// `resume_unwind`, which skips the panic hook: a hook run with a panic already in flight prints
// a full backtrace, which is slow and beside the point. A panic that escapes a destructor
// during the unwind aborts: `review_contract.rs` covers that.

/// Reviewer: a nested panic, caught inside a destructor that the forced unwind runs.
#[test]
fn a_destructor_that_panics_and_catches_it_during_the_forced_unwind_lets_the_drop_finish() {
    const SIZE: usize = 120 << 10; // used by no other test of this file
    struct CatchesItsOwnPanic(Log);
    impl Drop for CatchesItsOwnPanic {
        fn drop(&mut self) {
            assert!(std::thread::panicking(), "run by the forced unwind");
            let r = catch_unwind(|| resume_unwind(Box::new(3u8)));
            assert_eq!(r.unwrap_err().downcast_ref::<u8>(), Some(&3));
            assert!(
                std::thread::panicking(),
                "the forced unwind is still in flight"
            );
            self.0.borrow_mut().push("caught its own");
        }
    }
    let log = new_log();
    let l = log.clone();
    let mut co: Coroutine<(), (), ()> = Builder::new()
        .stack_size(SIZE)
        .build(move |y, ()| {
            let _first = Tagged("first", l.clone());
            let _c = CatchesItsOwnPanic(l.clone());
            let _last = Tagged("last", l);
            y.suspend(());
        })
        .unwrap();
    co.resume(());
    drop(co);
    assert_eq!(*log.borrow(), ["last", "caught its own", "first"]);
    assert_eq!(stack::stats_for_size(SIZE).in_use, 0);
    assert!(!std::thread::panicking());
}

/// Reviewer: a forced unwind started from inside another one.
#[test]
fn a_destructor_that_drops_another_suspended_coroutine_during_the_forced_unwind_unwinds_both() {
    const SIZE: usize = 124 << 10; // used by no other test of this file
    struct DropsACoroutine(Option<Coroutine<(), (), ()>>, Log);
    impl Drop for DropsACoroutine {
        fn drop(&mut self) {
            self.1.borrow_mut().push("before the inner drop");
            drop(self.0.take());
            self.1.borrow_mut().push("after the inner drop");
        }
    }
    let log = new_log();
    let l = log.clone();
    let mut victim: Coroutine<(), (), ()> = Builder::new()
        .stack_size(SIZE)
        .build(move |y, ()| {
            let _v = Tagged("victim frame", l);
            y.suspend(());
            unreachable!();
        })
        .unwrap();
    victim.resume(()); // suspended by the thread, dropped from the other's unwind
    let l = log.clone();
    let mut co: Coroutine<(), (), ()> = Builder::new()
        .stack_size(SIZE)
        .build(move |y, ()| {
            let _outer = Tagged("outer frame", l.clone());
            let _d = DropsACoroutine(Some(victim), l);
            y.suspend(());
            unreachable!();
        })
        .unwrap();
    co.resume(());
    assert_eq!(stack::stats_for_size(SIZE).in_use, 2);
    drop(co);
    assert_eq!(
        *log.borrow(),
        [
            "before the inner drop",
            "victim frame",
            "after the inner drop",
            "outer frame"
        ]
    );
    assert_eq!(stack::stats_for_size(SIZE).in_use, 0);
    assert!(!std::thread::panicking());
}

/// Reviewer: coroutines run, and panic, from a destructor that the forced unwind runs.
#[test]
fn a_destructor_run_by_the_forced_unwind_can_resume_coroutines_and_catch_their_panics() {
    type Shared = Rc<RefCell<Coroutine<(), u32, ()>>>;
    let counter: Shared = Rc::new(RefCell::new(Coroutine::new(|y, ()| {
        let mut n = 0;
        loop {
            n += 1;
            y.suspend(n);
        }
    })));
    struct Runs(Shared, Rc<Cell<u32>>, Arc<AtomicUsize>);
    impl Drop for Runs {
        fn drop(&mut self) {
            // A shared coroutine, resumed by the thread before: it continues its count.
            self.1
                .set(self.0.borrow_mut().resume(()).as_yield().unwrap());
            // A fresh coroutine that panics: its panic reaches this destructor, caught here.
            let drops = self.2.clone();
            let mut p: Coroutine<(), (), ()> =
                Coroutine::new(move |_, ()| resume_unwind(Box::new(Payload(9, drops))));
            let err = catch_unwind(AssertUnwindSafe(|| p.resume(()))).unwrap_err();
            assert_eq!(err.downcast_ref::<Payload>().map(|p| p.0), Some(9));
            assert!(p.is_done());
        }
    }
    let seen = Rc::new(Cell::new(0));
    let payload_drops = Arc::new(AtomicUsize::new(0));
    assert_eq!(counter.borrow_mut().resume(()), CoroutineResult::Yield(1));
    let runs = Runs(counter.clone(), seen.clone(), payload_drops.clone());
    let mut co: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
        let _r = runs;
        y.suspend(());
    });
    co.resume(());
    drop(co);
    assert_eq!(seen.get(), 2, "resumed once from the destructor");
    assert_eq!(
        payload_drops.load(Ordering::SeqCst),
        1,
        "the caught payload, once"
    );
    // It suspended last into a frame of the unwound stack; the thread resumes it now.
    assert_eq!(counter.borrow_mut().resume(()), CoroutineResult::Yield(3));
}

/// Takes a backtrace when dropped.
struct TraceOnDrop(Rc<RefCell<String>>);
impl Drop for TraceOnDrop {
    fn drop(&mut self) {
        let trace = std::backtrace::Backtrace::force_capture().to_string();
        *self.0.borrow_mut() = trace;
    }
}

#[inline(never)]
fn the_dropper(co: Coroutine<(), (), ()>) {
    drop(black_box(co));
}

/// Reviewer: the unwinder crosses the switch that a drop makes, as it does a resume's.
#[test]
fn a_backtrace_taken_during_the_forced_unwind_reaches_the_code_that_dropped_the_coroutine() {
    let trace = Rc::new(RefCell::new(String::new()));
    let t = TraceOnDrop(trace.clone());
    let mut co: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
        let _t = t;
        y.suspend(());
    });
    co.resume(());
    the_dropper(co);
    let suspended = trace.take();
    assert!(suspended.contains("the_dropper"), "{suspended}");
    // Never started: the closure is dropped on the coroutine's stack too.
    let t = TraceOnDrop(trace.clone());
    let co: Coroutine<(), (), ()> = Coroutine::new(move |_, ()| drop(t));
    the_dropper(co);
    let unstarted = trace.take();
    assert!(unstarted.contains("the_dropper"), "{unstarted}");
}

/// Reviewer: a suspension attempted by a destructor that the forced unwind runs.
#[test]
fn a_destructor_that_tries_to_suspend_during_the_forced_unwind_gets_the_unwind_again() {
    struct SuspendsOnDrop<'y>(&'y Yielder<(), &'static str>, Log);
    impl Drop for SuspendsOnDrop<'_> {
        fn drop(&mut self) {
            // The coroutine is being dropped: `suspend` does not switch, it raises the forced
            // unwind again (caught here, inside the destructor, so the unwind goes on).
            let r = catch_unwind(AssertUnwindSafe(|| self.0.suspend("flush")));
            assert!(r.unwrap_err().is::<ForcedUnwind>());
            self.1.borrow_mut().push("suspend refused");
        }
    }
    let log = new_log();
    let l = log.clone();
    let mut co: Coroutine<(), &'static str, ()> = Coroutine::new(move |y, ()| {
        let _outer = Tagged("outer", l.clone());
        let _s = SuspendsOnDrop(y, l);
        y.suspend("parked");
    });
    assert_eq!(co.resume(()), CoroutineResult::Yield("parked"));
    drop(co); // neither hangs nor aborts
    assert_eq!(*log.borrow(), ["suspend refused", "outer"]);
}

/// Reviewer: an unstarted coroutine's closure owns a suspended coroutine.
#[test]
fn dropping_an_unstarted_coroutine_unwinds_the_suspended_one_its_closure_owns() {
    const SIZE: usize = 128 << 10; // used by no other test of this file
    let log = new_log();
    let l = log.clone();
    let mut owned: Coroutine<(), (), ()> = Builder::new()
        .stack_size(SIZE)
        .build(move |y, ()| {
            let _o = Tagged("owned frame", l);
            y.suspend(());
        })
        .unwrap();
    owned.resume(());
    let l = log.clone();
    let owner: Coroutine<(), (), ()> = Builder::new()
        .stack_size(SIZE)
        .build(move |_, ()| {
            let mut owned = owned;
            owned.resume(());
            l.borrow_mut().push("owner ran");
        })
        .unwrap();
    assert_eq!(stack::stats_for_size(SIZE).in_use, 2);
    drop(owner); // the closure is dropped on the owner's stack, unwinding `owned` from there
    assert_eq!(*log.borrow(), ["owned frame"]);
    assert_eq!(stack::stats_for_size(SIZE).in_use, 0);
}

/// Reviewer: a coroutine's own panic during a drop that is part of the dropper's unwind.
#[test]
fn a_coroutine_dropped_by_a_panicking_dropper_that_panics_itself_leaves_the_dropper_panic_alone() {
    // The coroutine swallows its forced unwind and panics with its own payload; the dropper is
    // already unwinding, so corio drops that payload (once) and the dropper's panic goes on.
    struct PanicsOnDrop(Payload);
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            let p = Payload(self.0.0, self.0.1.clone());
            resume_unwind(Box::new(p));
        }
    }
    let own_drops = Arc::new(AtomicUsize::new(0));
    let dropper_drops = Arc::new(AtomicUsize::new(0));
    let unstarted_drops = Arc::new(AtomicUsize::new(0));
    let returned = Rc::new(Cell::new((0, 0)));
    let (od, dd, rc) = (own_drops.clone(), dropper_drops.clone(), returned.clone());
    let ud = unstarted_drops.clone();
    let r = catch_unwind(AssertUnwindSafe(move || {
        let mut panics: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
            let caught = catch_unwind(AssertUnwindSafe(|| y.suspend(())));
            assert!(caught.unwrap_err().is::<ForcedUnwind>());
            resume_unwind(Box::new(Payload(1, od)));
        });
        // And one that swallows it and returns a value instead: dropped too.
        let mut returns: Coroutine<(), (), Counted> = Coroutine::new(move |y, ()| {
            let _ = catch_unwind(AssertUnwindSafe(|| y.suspend(())));
            Counted::new(5, &rc)
        });
        // And one that never ran, whose closure's capture panics when dropped.
        let capture = PanicsOnDrop(Payload(3, ud));
        let _unstarted: Coroutine<(), (), ()> = Coroutine::new(move |_, ()| drop(capture));
        panics.resume(());
        returns.resume(());
        // All three are dropped by this unwind, with the thread panicking.
        resume_unwind(Box::new(Payload(2, dd)));
    }));
    let err = r.unwrap_err();
    assert_eq!(
        err.downcast_ref::<Payload>().map(|p| p.0),
        Some(2),
        "the dropper's own panic"
    );
    assert_eq!(
        own_drops.load(Ordering::SeqCst),
        1,
        "the coroutine's payload, once"
    );
    assert_eq!(
        dropper_drops.load(Ordering::SeqCst),
        0,
        "not yet: we hold it"
    );
    drop(err);
    assert_eq!(dropper_drops.load(Ordering::SeqCst), 1);
    assert_eq!(
        returned.get(),
        (1, 1),
        "the unwound coroutine's return value, dropped once"
    );
    assert_eq!(
        unstarted_drops.load(Ordering::SeqCst),
        2,
        "the capture and the payload its drop raised, once each"
    );
    assert!(!std::thread::panicking());
}

// ---------------------------------------------------------------------------------------------
// Per-context data: generator's `get_local_data` and `is_generator`.

/// generator `get_local_data` (`src/rt.rs`), as corio's per-context word.
#[test]
fn each_coroutine_keeps_its_own_context_word_through_nesting_panics_and_drops() {
    // Nothing in this binary trusts the word (it is corio's generators' capability, and none
    // run here); each value is put back by the context that set it, and the thread's at the end.
    const T: u64 = 0x7e57_0001;
    const A: u64 = 0x7e57_000a;
    const B: u64 = 0x7e57_000b;
    let base = local::get();
    // SAFETY: see above.
    unsafe { local::replace(T) };
    struct SeesWord(Rc<Cell<u64>>);
    impl Drop for SeesWord {
        fn drop(&mut self) {
            self.0.set(local::get());
        }
    }
    let at_unwind = Rc::new(Cell::new(0));
    let seen = at_unwind.clone();
    let mut a: Coroutine<(), u64, ()> = Coroutine::new(move |y, ()| {
        assert_eq!(
            local::get(),
            0,
            "a coroutine starts with 0, not its resumer's word"
        );
        // SAFETY: see above.
        unsafe { local::replace(A) };
        y.suspend(local::get());
        assert_eq!(local::get(), A, "kept across a suspension");
        let mut b: Coroutine<(), u64, ()> = Coroutine::new(|y, ()| {
            assert_eq!(local::get(), 0);
            // SAFETY: see above.
            unsafe { local::replace(B) };
            y.suspend(local::get());
            assert_eq!(local::get(), B);
            panic!("b gives up");
        });
        assert_eq!(b.resume(()), CoroutineResult::Yield(B));
        assert_eq!(local::get(), A, "b's suspension put a's word back");
        assert!(catch_unwind(AssertUnwindSafe(|| b.resume(()))).is_err());
        assert_eq!(local::get(), A, "b's panic put a's word back");
        let _sees = SeesWord(seen);
        y.suspend(local::get());
        unreachable!("dropped");
    });
    assert_eq!(a.resume(()), CoroutineResult::Yield(A));
    assert_eq!(local::get(), T, "the thread's word is back");
    assert_eq!(a.resume(()), CoroutineResult::Yield(A));
    assert_eq!(local::get(), T);
    drop(a);
    assert_eq!(at_unwind.get(), A, "a's destructors run with a's word");
    assert_eq!(local::get(), T, "and the dropper's is back afterwards");
    // SAFETY: the thread's value before this test.
    unsafe { local::replace(base) };
}

/// Reviewer: the word stays the coroutine's whoever resumes it.
#[test]
fn a_coroutine_keeps_its_context_word_when_resumed_by_the_thread_and_by_another_coroutine() {
    const C: u64 = 0x7e57_00c0;
    const R: u64 = 0x7e57_00d0;
    let base = local::get();
    type Shared = Rc<RefCell<Coroutine<(), u64, ()>>>;
    let counter: Shared = Rc::new(RefCell::new(Coroutine::new(|y, ()| {
        // SAFETY: nothing in this binary trusts the word; see the test above.
        unsafe { local::replace(C) };
        loop {
            y.suspend(local::get());
        }
    })));
    let c = counter.clone();
    let mut relay: Coroutine<(), (u64, u64), ()> = Coroutine::new(move |y, ()| {
        // SAFETY: as above.
        unsafe { local::replace(R) };
        loop {
            let inside = c.borrow_mut().resume(()).as_yield().unwrap();
            y.suspend((inside, local::get()));
        }
    });
    for _ in 0..50 {
        assert_eq!(counter.borrow_mut().resume(()), CoroutineResult::Yield(C));
        assert_eq!(local::get(), base);
        assert_eq!(relay.resume(()), CoroutineResult::Yield((C, R)));
        assert_eq!(local::get(), base);
    }
}

/// generator `is_generator` (`src/rt.rs`), as `current_context` and `is_on_own_stack`.
#[test]
fn nested_coroutines_each_know_they_run_on_their_own_stack() {
    type Seen = (usize, usize, bool, bool);
    let outside = stack::current_context();
    assert_eq!(outside, 0, "the thread's own stack is no coroutine's");
    let mut outer: Coroutine<(), (), (usize, Seen, usize)> = Coroutine::new(|y, ()| {
        let mine = stack::current_context();
        assert!(y.is_on_own_stack());
        let outer_yielder = std::ptr::from_ref(y) as usize;
        let mut inner: Coroutine<(), (), Seen> = Coroutine::new(move |y, ()| {
            let outer_yielder = outer_yielder as *const Yielder<(), ()>;
            // SAFETY: the outer coroutine is running (it resumed us), so its yielder is alive
            // in its frame; `is_on_own_stack` reads two of its fields and nothing else.
            let outer_sees_its_own = unsafe { &*outer_yielder }.is_on_own_stack();
            (
                stack::current_context(),
                y.stack_bounds().1,
                y.is_on_own_stack(),
                outer_sees_its_own,
            )
        });
        let seen = inner.resume(()).as_return().unwrap();
        (mine, seen, stack::current_context())
    });
    let (mine, (inner, inner_top, inner_own, outer_own), after) =
        outer.resume(()).as_return().unwrap();
    assert_ne!(mine, 0);
    assert_ne!(inner, 0);
    assert_ne!(inner, mine, "each coroutine is its own context");
    assert!(
        inner >= inner_top,
        "the context is the top of the slot holding the frames"
    );
    assert!(inner_own, "the inner yielder's coroutine is running");
    assert!(
        !outer_own,
        "the outer yielder is not on the stack that runs now"
    );
    assert_eq!(
        after, mine,
        "back in the outer coroutine after the inner returned"
    );
    assert_eq!(stack::current_context(), outside);
}

// ---------------------------------------------------------------------------------------------
// Threads and stack reuse.

/// generator: generators moved between threads (see the file head for the compile-time side).
#[test]
fn coroutines_live_their_whole_lives_on_their_threads_and_send_only_their_values() {
    const SIZE: usize = 116 << 10; // used by no other test of this file
    let (tx, rx) = std::sync::mpsc::channel::<(usize, u64)>();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                // Eight interleaved coroutines per thread; half are dropped while suspended.
                let mut cos: Vec<Coroutine<u64, u64, u64>> = (0..8u64)
                    .map(|k| {
                        Builder::new()
                            .stack_size(SIZE)
                            .build(move |y: &Yielder<u64, u64>, mut x: u64| {
                                let local = Rc::new(Cell::new(k)); // !Send: stays here
                                for _ in 0..10 {
                                    local.set(local.get() + x);
                                    x = y.suspend(local.get());
                                }
                                local.get()
                            })
                            .unwrap()
                    })
                    .collect();
                for round in 0..10u64 {
                    for co in &mut cos {
                        let v = co.resume(round).as_yield().unwrap();
                        tx.send((t, v)).unwrap();
                    }
                }
                let mut returned = 0;
                for (k, mut co) in cos.into_iter().enumerate() {
                    if k % 2 == 0 {
                        returned += co.resume(0).as_return().unwrap();
                    }
                }
                returned
            })
        })
        .collect();
    drop(tx);
    let sums: Vec<u64> = threads.into_iter().map(|h| h.join().unwrap()).collect();
    // Every coroutine k sums to k + (0 + 1 + ... + 9) + 0 = k + 45; the even ones returned.
    let expected: u64 = [0u64, 2, 4, 6].iter().map(|k| k + 45).sum();
    assert_eq!(sums, [expected; 4]);
    let received: Vec<(usize, u64)> = rx.iter().collect();
    assert_eq!(received.len(), 4 * 8 * 10);
    for t in 0..4 {
        let last: u64 = received
            .iter()
            .filter(|r| r.0 == t)
            .map(|r| r.1)
            .max()
            .unwrap();
        assert_eq!(last, 7 + 45, "thread {t}'s largest running total");
    }
    assert_eq!(
        stack::stats_for_size(SIZE).in_use,
        0,
        "each thread's stacks went back, dropped or finished, when it exited"
    );
}

/// Reviewer: the closure's captures, whichever way the builder stores the closure.
#[test]
fn captures_are_dropped_once_whether_the_closure_is_boxed_in_place_or_refused() {
    const SIZE: usize = 132 << 10; // used by no other test of this file
    let c = Rc::new(Cell::new((0, 0)));
    // Above `BOX_CLOSURES_ABOVE` (kept in a box until it runs) and below it (on the stack).
    let big = |c: &Rc<Cell<(u32, u32)>>| {
        let (pad, k) = ([7u8; 1024], Counted::new(1, c));
        move |y: &Yielder<(), usize>, ()| {
            let _k = k;
            y.suspend(pad.iter().map(|&b| b as usize).sum());
        }
    };
    let small = |c: &Rc<Cell<(u32, u32)>>| {
        let k = Counted::new(2, c);
        move |y: &Yielder<(), usize>, ()| {
            let _k = k;
            y.suspend(0);
        }
    };
    fn both<F>(f: impl Fn() -> F, expected: usize)
    where
        F: FnOnce(&Yielder<(), usize>, ()) + 'static,
    {
        let build = |f| Builder::new().stack_size(SIZE).build(f).unwrap();
        let never: Coroutine<(), usize, ()> = build(f());
        drop(never);
        let mut suspended: Coroutine<(), usize, ()> = build(f());
        assert_eq!(suspended.resume(()), CoroutineResult::Yield(expected));
        drop(suspended);
        let mut finished: Coroutine<(), usize, ()> = build(f());
        assert_eq!(finished.resume(()), CoroutineResult::Yield(expected));
        assert_eq!(finished.resume(()), CoroutineResult::Return(()));
    }
    assert!(size_of_val(&big(&c)) > corio_context::coroutine::BOX_CLOSURES_ABOVE);
    assert!(size_of_val(&small(&c)) <= corio_context::coroutine::BOX_CLOSURES_ABOVE);
    both(|| big(&c), 7 * 1024);
    both(|| small(&c), 0);
    // Larger than half the stack: refused, with its captures dropped and no slot kept.
    let (pad, k) = ([1u8; 70 << 10], Counted::new(3, &c));
    let refused = Builder::new()
        .stack_size(SIZE)
        .build::<(), (), usize, _>(move |_, ()| {
            let _k = k;
            pad.len()
        });
    assert_eq!(
        refused.err().map(|e| e.kind()),
        Some(std::io::ErrorKind::InvalidInput)
    );
    let (made, dropped) = c.get();
    // Two probes above, three coroutines of each kind, and the refused one.
    assert_eq!((made, dropped), (9, 9), "made {made}, dropped {dropped}");
    assert_eq!(stack::stats_for_size(SIZE).in_use, 0);
}

/// Reviewer: generator's generators live in boxes; a corio handle is a plain value that may move.
#[test]
fn suspended_coroutines_keep_their_state_when_their_handles_move() {
    let counter = |k: u64| -> Coroutine<(), u64, ()> {
        Coroutine::new(move |y, ()| {
            let mut n = k;
            loop {
                let here = black_box(&mut n);
                *here += 1;
                y.suspend(*here);
            }
        })
    };
    // Suspended handles in a vector that reallocates as it grows.
    let mut cos: Vec<Coroutine<(), u64, ()>> = Vec::with_capacity(1);
    for k in 0..40 {
        let mut co = counter(k * 1000);
        assert_eq!(co.resume(()), CoroutineResult::Yield(k * 1000 + 1));
        cos.push(co);
    }
    // Swapped, boxed, taken out of an Option, reversed: each still resumes its own stack.
    cos.swap(0, 39);
    let boxed = Box::new(cos.remove(5));
    let mut slot = Some(*boxed);
    cos.reverse();
    let mut five = slot.take().unwrap();
    assert_eq!(five.resume(()), CoroutineResult::Yield(5002));
    let mut seen: Vec<u64> = cos
        .iter_mut()
        .map(|co| co.resume(()).as_yield().unwrap())
        .collect();
    seen.sort_unstable();
    let expected: Vec<u64> = (0..40).filter(|&k| k != 5).map(|k| k * 1000 + 2).collect();
    assert_eq!(seen, expected);
}

/// generator `test_re_init`.
#[test]
fn a_new_coroutine_after_a_finished_one_of_its_size_reuses_its_stack() {
    // generator re-initialises a generator of 0x800 words; the smallest corio stack will do.
    const SIZE: usize = 20 << 10; // used by no other test of this file
    let make = || -> Coroutine<(), u32, u32> {
        Builder::new()
            .stack_size(SIZE)
            .build(|y, ()| {
                y.suspend(0);
                y.suspend(3);
                5
            })
            .unwrap()
    };
    let run = |mut co: Coroutine<(), u32, u32>| {
        // A slot that held a finished coroutine makes a fresh one, not a started one.
        assert!(!co.is_started() && !co.is_done());
        let out: Vec<_> = (0..3).map(|_| co.resume(())).collect();
        assert!(co.is_done());
        out
    };
    use CoroutineResult::{Return, Yield};
    assert_eq!(run(make()), [Yield(0), Yield(3), Return(5)]);
    let carved = stack::stats_for_size(SIZE).carved;
    for _ in 0..3 {
        assert_eq!(run(make()), [Yield(0), Yield(3), Return(5)]);
    }
    let stats = stack::stats_for_size(SIZE);
    assert_eq!(
        stats.carved, carved,
        "the finished coroutine's slot was taken again"
    );
    assert_eq!(stats.in_use, 0);
}
