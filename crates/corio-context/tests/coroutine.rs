//! Behaviour of the bare `Coroutine`: values, depth, panics, drops, misuse, backtraces.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::rc::Rc;

use corio_context::coroutine::{Builder, Coroutine, CoroutineResult, ForcedUnwind, Yielder};
use corio_context::stack;

#[test]
fn resume_and_suspend_pass_values_both_ways() {
    let mut co = Coroutine::new(|y: &Yielder<String, usize>, first: String| {
        let mut seen = vec![first];
        for i in 0..3 {
            seen.push(y.suspend(i));
        }
        seen.join(",")
    });
    assert!(!co.is_started());
    assert_eq!(co.resume("a".into()), CoroutineResult::Yield(0));
    assert!(co.is_started());
    assert_eq!(co.resume("b".into()), CoroutineResult::Yield(1));
    assert_eq!(co.resume("c".into()), CoroutineResult::Yield(2));
    assert!(!co.is_done());
    assert_eq!(
        co.resume("d".into()),
        CoroutineResult::Return("a,b,c,d".to_string())
    );
    assert!(co.is_done());
}

fn descend(y: &Yielder<(), usize>, depth: usize) -> usize {
    if depth == 0 {
        y.suspend(0);
        return 0;
    }
    // A frame with something to keep across the suspension, so each level is real.
    let here = std::hint::black_box([depth; 4]);
    let below = descend(y, depth - 1);
    y.suspend(depth);
    below + here[3]
}

#[test]
fn suspend_works_at_any_call_depth() {
    let mut co = Coroutine::new(|y, ()| descend(y, 100));
    // The innermost call suspends first, then every level on the way back up.
    for expected in 0..=100 {
        assert_eq!(co.resume(()), CoroutineResult::Yield(expected));
    }
    assert_eq!(co.resume(()), CoroutineResult::Return((1..=100).sum()));
}

fn step(acc: u64, k: u64) -> u64 {
    acc.wrapping_mul(31).wrapping_add(k)
}

#[test]
fn coroutines_interleave_without_mixing_state() {
    const N: u64 = 500;
    const ROUNDS: u64 = 10;
    let mut cos: Vec<Coroutine<u64, u64, u64>> = (0..N)
        .map(|k| {
            Coroutine::new(move |y, mut acc: u64| {
                for _ in 0..ROUNDS {
                    acc = step(acc, k) ^ y.suspend(step(acc, k));
                }
                acc
            })
        })
        .collect();
    // Resume them round-robin, checking each against the same computation done here.
    let mut model: Vec<u64> = (0..N).map(|k| k * 7).collect();
    for round in 0..=ROUNDS {
        for (k, co) in cos.iter_mut().enumerate() {
            let k = k as u64;
            let input = if round == 0 {
                model[k as usize]
            } else {
                round * 1000 + k
            };
            if round > 0 {
                model[k as usize] = step(model[k as usize], k) ^ input;
            }
            let expected = if round < ROUNDS {
                CoroutineResult::Yield(step(model[k as usize], k))
            } else {
                CoroutineResult::Return(model[k as usize])
            };
            assert_eq!(co.resume(input), expected, "coroutine {k}, round {round}");
        }
    }
}

#[test]
fn coroutines_nest() {
    let mut outer = Coroutine::new(|y: &Yielder<(), u32>, ()| {
        let mut inner = Coroutine::new(|y: &Yielder<(), u32>, ()| {
            y.suspend(1);
            y.suspend(2);
            3
        });
        while let CoroutineResult::Yield(v) = inner.resume(()) {
            y.suspend(v * 10);
        }
        99
    });
    assert_eq!(outer.resume(()), CoroutineResult::Yield(10));
    assert_eq!(outer.resume(()), CoroutineResult::Yield(20));
    assert_eq!(outer.resume(()), CoroutineResult::Return(99));
}

#[test]
fn a_panic_propagates_out_of_resume_and_finishes_the_coroutine() {
    let mut co: Coroutine<(), (), ()> = Coroutine::new(|y, ()| {
        y.suspend(());
        std::panic::panic_any(42u32);
    });
    co.resume(());
    let err = catch_unwind(AssertUnwindSafe(|| co.resume(()))).unwrap_err();
    assert_eq!(err.downcast_ref::<u32>(), Some(&42));
    assert!(co.is_done());
    let again = catch_unwind(AssertUnwindSafe(|| co.resume(()))).unwrap_err();
    assert!(
        again
            .downcast_ref::<&str>()
            .unwrap()
            .contains("already finished")
    );
}

struct CountDrops(Rc<Cell<usize>>);
impl Drop for CountDrops {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

fn hold_and_suspend(y: &Yielder<(), ()>, drops: &Rc<Cell<usize>>, depth: usize) {
    let _guard = CountDrops(drops.clone());
    if depth == 0 {
        y.suspend(());
        unreachable!("a dropped coroutine is never resumed normally");
    }
    hold_and_suspend(y, drops, depth - 1);
}

#[test]
fn dropping_a_suspended_coroutine_runs_every_destructor_on_its_stack() {
    // A stack size no other test uses, so that its slot counts are this test's alone.
    const SIZE: usize = 200 << 10;
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let mut co: Coroutine<(), (), ()> = Builder::new()
        .stack_size(SIZE)
        .build(move |y, ()| {
            let _outer = CountDrops(d.clone());
            hold_and_suspend(y, &d, 9);
        })
        .unwrap();
    co.resume(());
    assert_eq!(drops.get(), 0);
    assert_eq!(stack::stats_for_size(SIZE).in_use, 1);
    drop(co);
    // One guard per level (10) plus the outer one.
    assert_eq!(drops.get(), 11);
    assert_eq!(
        stack::stats_for_size(SIZE).in_use,
        0,
        "the stack went back to the cache"
    );
}

#[test]
fn dropping_an_unstarted_coroutine_drops_its_closure() {
    let drops = Rc::new(Cell::new(0));
    let guard = CountDrops(drops.clone());
    let co: Coroutine<(), (), ()> = Coroutine::new(move |_, ()| drop(guard));
    assert_eq!(drops.get(), 0);
    drop(co);
    assert_eq!(drops.get(), 1);
}

#[test]
fn a_swallowed_forced_unwind_is_raised_again_at_the_next_suspend() {
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let caught = Rc::new(Cell::new(false));
    let c = caught.clone();
    let mut co: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
        let _outer = CountDrops(d.clone());
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _inner = CountDrops(d.clone());
            y.suspend(());
        }));
        assert!(r.unwrap_err().is::<ForcedUnwind>());
        c.set(true);
        // Swallowed: carry on as if nothing happened and try to suspend again.
        y.suspend(());
        unreachable!("suspend must not return while the coroutine is being dropped");
    });
    co.resume(());
    drop(co);
    assert!(caught.get());
    assert_eq!(drops.get(), 2);
}

#[test]
fn a_coroutine_that_returns_after_catching_the_forced_unwind_is_finished() {
    let mut co: Coroutine<(), (), String> = Coroutine::new(|y, ()| {
        let r = catch_unwind(AssertUnwindSafe(|| y.suspend(())));
        match r {
            Ok(()) => "resumed".into(),
            Err(payload) if payload.is::<ForcedUnwind>() => "unwound".into(),
            Err(payload) => resume_unwind(payload),
        }
    });
    co.resume(());
    drop(co); // must not hang or panic
}

#[test]
fn a_panicking_destructor_during_drop_propagates_to_the_dropper() {
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            if !std::thread::panicking() {
                panic!("destructor panicked");
            }
        }
    }
    let mut co: Coroutine<(), (), ()> = Coroutine::new(|y, ()| {
        // During the forced unwind `panicking()` is true, so this destructor stays quiet;
        // dropping the closure of an unstarted coroutine is where a panic can escape.
        let _p = PanicOnDrop;
        y.suspend(());
    });
    co.resume(());
    drop(co);

    let p = PanicOnDrop;
    let co: Coroutine<(), (), ()> = Coroutine::new(move |_, ()| drop(p));
    let err = catch_unwind(AssertUnwindSafe(|| drop(co))).unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"destructor panicked"));
}

#[test]
fn resuming_a_coroutine_from_inside_itself_panics_instead_of_switching() {
    // Safe code cannot reach a running coroutine's `&mut` (the borrow checker forbids it),
    // so the nearest safe attempt goes through a RefCell, which refuses the second borrow.
    type Shared = Rc<RefCell<Option<Coroutine<(), (), ()>>>>;
    let slot: Shared = Rc::new(RefCell::new(None));
    let inner = slot.clone();
    let co: Coroutine<(), (), ()> = Coroutine::new(move |_, ()| {
        let again = catch_unwind(AssertUnwindSafe(|| {
            inner.borrow_mut().as_mut().unwrap().resume(());
        }));
        assert!(again.is_err(), "re-entrant resume must panic");
    });
    *slot.borrow_mut() = Some(co);
    let r = slot.borrow_mut().as_mut().unwrap().resume(());
    assert_eq!(r, CoroutineResult::Return(()));
}

#[test]
fn builder_names_and_sizes_the_coroutine() {
    let co: Coroutine<(), (), ()> = Builder::new()
        .name("parser")
        .stack_size(100_000)
        .build(|_, ()| {})
        .unwrap();
    assert_eq!(co.name(), Some("parser"));
    assert_eq!(co.stack_size(), 100_000_usize.div_ceil(4096) * 4096);
    let tiny: Coroutine<(), (), ()> = Builder::new().stack_size(1).build(|_, ()| {}).unwrap();
    assert_eq!(tiny.stack_size(), stack::MIN_STACK_SIZE);
    let err = Builder::new()
        .stack_size(stack::MAX_STACK_SIZE + 1)
        .build::<(), (), (), _>(|_, ()| {});
    assert_eq!(err.unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn a_closure_too_large_for_its_stack_is_an_error() {
    let big = [0u8; 64 << 10];
    let err = Builder::new()
        .stack_size(stack::MIN_STACK_SIZE)
        .build::<(), (), usize, _>(move |_, ()| big.len())
        .unwrap_err();
    assert!(err.to_string().contains("does not fit"), "{err}");
}

#[test]
fn ids_are_unique() {
    let cos: Vec<Coroutine<(), (), ()>> = (0..3000).map(|_| Coroutine::new(|_, ()| {})).collect();
    let mut ids: Vec<u64> = cos.iter().map(Coroutine::id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3000);
}

#[inline(never)]
fn resumer_marker_function(co: &mut Coroutine<(), (), String>) -> String {
    let r = co.resume(());
    std::hint::black_box(r).as_return().unwrap()
}

#[test]
fn a_backtrace_taken_inside_a_coroutine_reaches_its_resumer() {
    let mut co: Coroutine<(), (), String> =
        Coroutine::new(|_, ()| std::backtrace::Backtrace::force_capture().to_string());
    let trace = resumer_marker_function(&mut co);
    assert!(
        trace.contains("resumer_marker_function"),
        "backtrace did not cross the switch:\n{trace}"
    );
    assert!(
        trace.contains("a_backtrace_taken_inside_a_coroutine_reaches_its_resumer"),
        "backtrace did not reach the test function:\n{trace}"
    );
}

#[test]
fn the_default_stack_takes_a_symbolized_backtrace() {
    // Capturing and resolving a backtrace is what `panic!` does under RUST_BACKTRACE=1; it
    // needs ~24 KiB of stack, which the default stack must hold.
    let mut co: Coroutine<(), (), usize> =
        Coroutine::new(|_, ()| std::backtrace::Backtrace::force_capture().to_string().len());
    assert!(co.resume(()).as_return().unwrap() > 0);
}

#[test]
fn stack_memory_is_reused_from_the_thread_cache() {
    const SIZE: usize = 72 << 10; // used by no other test
    let new = || {
        Builder::new()
            .stack_size(SIZE)
            .build::<(), (), (), _>(|_, ()| {})
            .unwrap()
    };
    drop(new());
    let carved = stack::stats_for_size(SIZE).carved;
    for _ in 0..1000 {
        new().resume(());
    }
    let stats = stack::stats_for_size(SIZE);
    assert_eq!(stats.carved, carved, "a warm cache needs no new slots");
    assert_eq!(stats.in_use, 0);
}
