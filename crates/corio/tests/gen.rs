//! Behaviour of the stackless `Generator`: the resume/yield protocol, iteration, panics, drops,
//! misuse, and the `Resume` trait shared with the stackful `Coroutine`.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use corio::coroutine::Coroutine;
use corio::generator::{Co, CoroutineResult, Generator, Resume};

/// Runs `f`, expects it to panic, and returns the panic message.
fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        panic!("panic payload is not a string")
    }
}

/// Counts drops.
struct DropCounter(Rc<Cell<u32>>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

fn assert_send<T: Send>(_: &T) {}

#[test]
fn values_flow_both_ways_and_the_first_input_is_the_closures_argument() {
    let mut g = Generator::new(|co, first: u32| async move {
        let second = co.suspend(first * 2).await;
        let third = co.suspend(second * 3).await;
        first + second + third
    });
    assert!(!g.is_started());
    assert_eq!(g.resume(10), CoroutineResult::Yield(20));
    assert!(g.is_started());
    assert_eq!(g.resume(5), CoroutineResult::Yield(15));
    assert!(!g.is_done());
    assert_eq!(g.resume(1), CoroutineResult::Return(16));
    assert!(g.is_done());
    assert_eq!(g.frame_size(), 0);
}

#[test]
fn a_body_that_never_suspends_returns_at_the_first_resume() {
    let mut g = Generator::<u8, (), u8>::new(|_co, x| async move { x + 1 });
    assert_eq!(g.resume(1), CoroutineResult::Return(2));
    assert!(g.is_done());
}

#[test]
fn suspends_from_nested_async_fns() {
    async fn leaf(co: &Co<i64, i64>, x: i64) -> i64 {
        co.suspend(x).await
    }
    async fn middle(co: &Co<i64, i64>, x: i64) -> i64 {
        leaf(co, x).await + leaf(co, x + 1).await
    }
    let mut g = Generator::new(|co, x| async move { middle(&co, x).await });
    assert_eq!(g.resume(1), CoroutineResult::Yield(1));
    assert_eq!(g.resume(100), CoroutineResult::Yield(2));
    assert_eq!(g.resume(1000), CoroutineResult::Return(1100));
}

#[test]
fn iterates_over_yields_and_stays_finished() {
    let mut g = Generator::new(|co, ()| async move {
        for n in 0..4u32 {
            co.suspend(n * n).await;
        }
    });
    assert_eq!(g.by_ref().collect::<Vec<_>>(), [0, 1, 4, 9]);
    assert_eq!(g.next(), None);
    assert_eq!(g.next(), None);
}

#[test]
fn borrows_from_its_environment() {
    let owned = String::from("one two three");
    let text = owned.as_str();
    let words: Vec<&str> = Generator::new(move |co, ()| async move {
        for w in text.split(' ') {
            co.suspend(w).await;
        }
    })
    .collect();
    assert_eq!(words, ["one", "two", "three"]);
}

#[test]
fn a_frame_that_points_into_itself_survives_moving_the_generator() {
    let g = Generator::new(|co, ()| async move {
        let local = [1u64, 2, 3];
        let r = &local; // a reference into the frame, alive across suspensions
        for x in r {
            co.suspend(*x).await;
        }
    });
    let mut moved = vec![g];
    assert_eq!(moved[0].next(), Some(1));
    let mut boxed = Box::new(moved.pop().unwrap());
    assert_eq!(boxed.next(), Some(2));
    let mut g = *boxed;
    assert_eq!(g.next(), Some(3));
    assert_eq!(g.next(), None);
}

#[test]
fn a_panic_propagates_out_of_resume_and_finishes_the_generator() {
    let drops = Rc::new(Cell::new(0));
    let guard = DropCounter(drops.clone());
    let mut g = Generator::new(|co, ()| async move {
        let _guard = guard;
        co.suspend(1).await;
        panic!("boom in the body");
    });
    assert_eq!(g.resume(()), CoroutineResult::Yield(1));
    let msg = panic_message(|| {
        g.resume(());
    });
    assert_eq!(msg, "boom in the body");
    assert_eq!(drops.get(), 1, "the unwind dropped the body's locals once");
    assert!(g.is_done());
    let msg = panic_message(|| {
        g.resume(());
    });
    assert!(msg.contains("already finished"), "{msg}");
    drop(g);
    assert_eq!(drops.get(), 1);
}

#[test]
fn a_panic_in_the_closure_itself_propagates() {
    let mut g = Generator::<(), (), (), _>::new(|_co, ()| -> std::future::Ready<()> {
        panic!("closure panicked")
    });
    assert_eq!(
        panic_message(|| {
            g.resume(());
        }),
        "closure panicked"
    );
    assert!(g.is_done());
}

#[test]
fn dropping_a_suspended_generator_drops_its_locals() {
    let drops = Rc::new(Cell::new(0));
    let (a, b) = (DropCounter(drops.clone()), DropCounter(drops.clone()));
    let mut g = Generator::new(|co, ()| async move {
        let _a = a;
        co.suspend(()).await;
        let _b = b;
        co.suspend(()).await;
        unreachable!("dropped before the third resume");
    });
    g.resume(());
    g.resume(());
    assert_eq!(drops.get(), 0);
    drop(g);
    assert_eq!(drops.get(), 2);
}

#[test]
fn dropping_a_generator_that_never_ran_drops_its_closure() {
    let drops = Rc::new(Cell::new(0));
    let a = DropCounter(drops.clone());
    let g = Generator::new(|co, ()| async move {
        let _a = a;
        co.suspend(()).await;
    });
    drop(g);
    assert_eq!(drops.get(), 1);
}

#[test]
fn a_finished_generator_has_dropped_its_locals() {
    let drops = Rc::new(Cell::new(0));
    let a = DropCounter(drops.clone());
    let mut g = Generator::new(|_co: Co<(), ()>, ()| async move {
        let _a = a;
    });
    assert_eq!(g.resume(()), CoroutineResult::Return(()));
    assert_eq!(drops.get(), 1);
    drop(g);
    assert_eq!(drops.get(), 1);
}

#[test]
fn awaiting_a_future_that_is_not_ready_panics_and_finishes_the_generator() {
    let mut g = Generator::new(|co, ()| async move {
        co.suspend(1).await;
        std::future::pending::<()>().await;
    });
    assert_eq!(g.resume(()), CoroutineResult::Yield(1));
    let msg = panic_message(|| {
        g.resume(());
    });
    assert!(msg.contains("awaited a future that is not ready"), "{msg}");
    assert!(msg.contains("co.suspend"), "{msg}");
    assert!(g.is_done());
}

#[test]
fn a_co_polled_in_another_generator_panics() {
    let stash: Rc<RefCell<Option<Co<(), u32>>>> = Rc::default();
    let mut a = Generator::new({
        let stash = stash.clone();
        move |co, ()| async move {
            co.suspend(1).await;
            *stash.borrow_mut() = Some(co);
        }
    });
    assert_eq!(a.resume(()), CoroutineResult::Yield(1));
    assert_eq!(a.resume(()), CoroutineResult::Return(()));
    let a_id = a.id();

    let mut b = Generator::new(move |_own: Co<(), u32>, ()| async move {
        let foreign = stash.borrow_mut().take().unwrap();
        foreign.suspend(2).await;
    });
    let msg = panic_message(|| {
        b.resume(());
    });
    let expected = format!("co.suspend of generator {a_id} was polled while generator");
    assert!(msg.contains(&expected), "{msg}");
    assert!(msg.contains("only the generator it was given to"), "{msg}");
    assert!(b.is_done());
}

#[test]
fn a_co_polled_outside_any_resume_panics() {
    let stash: Rc<RefCell<Option<Co<(), u32>>>> = Rc::default();
    let mut g = Generator::new({
        let stash = stash.clone();
        move |co, ()| async move {
            *stash.borrow_mut() = Some(co);
        }
    });
    g.resume(());
    let co = stash.borrow_mut().take().unwrap();
    let mut fut = co.suspend(7);
    let msg = panic_message(|| {
        let _ = Pin::new(&mut fut).poll(&mut Context::from_waker(Waker::noop()));
    });
    assert!(msg.contains("no generator is being resumed"), "{msg}");
}

/// Polls two futures in turn until both are ready (a minimal `join!`).
struct Join<A: Future, B: Future>(
    Pin<Box<A>>,
    Pin<Box<B>>,
    Option<A::Output>,
    Option<B::Output>,
);

impl<A: Future, B: Future> Future for Join<A, B>
where
    A::Output: Unpin,
    B::Output: Unpin,
{
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.2.is_none()
            && let Poll::Ready(v) = this.0.as_mut().poll(cx)
        {
            this.2 = Some(v);
        }
        if this.3.is_none()
            && let Poll::Ready(v) = this.1.as_mut().poll(cx)
        {
            this.3 = Some(v);
        }
        if this.2.is_some() && this.3.is_some() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[test]
fn two_suspensions_raced_in_a_join_panic() {
    let mut g = Generator::new(|co: Co<(), u32>, ()| async move {
        Join(Box::pin(co.suspend(1)), Box::pin(co.suspend(2)), None, None).await;
    });
    let msg = panic_message(|| {
        g.resume(());
    });
    assert!(msg.contains("two co.suspend futures"), "{msg}");
}

#[test]
fn a_generator_may_resume_another_from_its_body() {
    let mut outer = Generator::new(|co, ()| async move {
        let inner = Generator::new(|co, ()| async move {
            co.suspend("inner 1").await;
            co.suspend("inner 2").await;
        });
        for v in inner {
            // After the inner resume, this generator's own suspension still works.
            co.suspend(v).await;
            co.suspend("outer").await;
        }
    });
    assert_eq!(
        outer.by_ref().collect::<Vec<_>>(),
        ["inner 1", "outer", "inner 2", "outer"]
    );
}

#[test]
fn a_suspended_generator_can_move_to_another_thread() {
    let mut g = Generator::new(|co, mut x: u64| async move {
        loop {
            x = co.suspend(x + 1).await;
        }
    });
    assert_eq!(g.resume(1), CoroutineResult::Yield(2));
    assert_send(&g);
    let g = std::thread::spawn(move || {
        assert_eq!(g.resume(10), CoroutineResult::Yield(11));
        g
    })
    .join()
    .unwrap();
    let mut g = g;
    assert_eq!(g.resume(20), CoroutineResult::Yield(21));
}

#[test]
fn a_boxed_generator_behaves_the_same_and_can_be_named() {
    struct Holder {
        g: Generator<u32, u32, u32>,
    }
    let mut h = Holder {
        g: Generator::new(|co, x: u32| async move {
            let y = co.suspend(x + 1).await;
            x + y
        })
        .boxed(),
    };
    assert!(format!("{:?}", h.g).contains("created"));
    assert_eq!(h.g.resume(1), CoroutineResult::Yield(2));
    assert!(format!("{:?}", h.g).contains("suspended"));
    assert_eq!(h.g.resume(2), CoroutineResult::Return(3));
    assert!(format!("{:?}", h.g).contains("finished"));
}

#[test]
fn ids_are_unique_and_shared_with_the_co() {
    let stash = Rc::new(Cell::new(0));
    let mut a = Generator::new({
        let stash = stash.clone();
        move |co: Co<(), ()>, ()| async move { stash.set(co.id()) }
    });
    let b = Generator::new(|_co: Co<(), ()>, ()| async {});
    assert_ne!(a.id(), b.id());
    a.resume(());
    assert_eq!(stash.get(), a.id());
}

/// Sends 1, 2, 3, .. and sums what comes back, then adds the return value.
fn drive<C: Resume<u64, Yield = u64, Return = u64>>(mut co: C) -> u64 {
    let mut total = 0;
    let mut input = 1;
    loop {
        match co.resume(input) {
            CoroutineResult::Yield(y) => total += y,
            CoroutineResult::Return(r) => {
                assert!(co.is_done());
                return total + r;
            }
        }
        input += 1;
    }
}

#[test]
#[cfg_attr(miri, ignore)] // a stackful `Coroutine`: inline asm, which Miri cannot run
fn the_resume_trait_drives_both_kinds_alike() {
    let stackful = Coroutine::new(|y, mut x: u64| {
        let mut sum = 0;
        while x < 5 {
            sum += x;
            x = y.suspend(x * 10);
        }
        sum
    });
    let stackless = Generator::new(|co, mut x: u64| async move {
        let mut sum = 0;
        while x < 5 {
            sum += x;
            x = co.suspend(x * 10).await;
        }
        sum
    });
    assert_eq!(drive(stackful), 100 + 10);
    assert_eq!(drive(stackless), 100 + 10);

    type AnyKind = Box<dyn Resume<u64, Yield = u64, Return = u64>>;
    let both = || -> Vec<AnyKind> {
        vec![
            Box::new(Coroutine::new(|y, x: u64| y.suspend(x) + 1)),
            Box::new(Generator::new(|co, x: u64| async move {
                co.suspend(x).await + 1
            })),
            Box::new(Generator::new(|co, x: u64| async move { co.suspend(x).await + 1 }).boxed()),
        ]
    };
    for mut co in both() {
        assert_eq!(co.resume(3), CoroutineResult::Yield(3));
        assert_eq!(co.resume(4), CoroutineResult::Return(5));
        assert!(co.is_done());
    }
    for co in both() {
        assert_eq!(drive(co), 1 + 3);
    }
}

#[test]
#[cfg_attr(miri, ignore)] // a stackful `Coroutine`: inline asm, which Miri cannot run
fn both_kinds_panic_the_same_way_when_resumed_after_finishing() {
    fn finish_then_resume(mut co: impl Resume<(), Yield = (), Return = ()>) -> String {
        assert_eq!(co.resume(()), CoroutineResult::Return(()));
        panic_message(move || {
            co.resume(());
        })
    }
    let stackful = finish_then_resume(Coroutine::new(|_, ()| {}));
    let stackless = finish_then_resume(Generator::new(|_co: Co<(), ()>, ()| async {}));
    assert!(stackful.contains("already finished"), "{stackful}");
    assert!(stackless.contains("already finished"), "{stackless}");
}

/// A `Co` that escaped its finished generator, while a bare stackful coroutine suspended inside
/// another generator's poll: the suspension must not leave a stale id published for it. Before
/// the fix, the inner generator's drop guard restored the finished generator's id on the way
/// out, so the escaped `Co` passed the check and wrote into its freed frame (issue 7, item 1).
#[test]
#[cfg_attr(miri, ignore)] // a stackful `Coroutine`: inline asm, which Miri cannot run
fn an_escaped_co_stays_refused_after_a_coroutine_suspended_inside_a_poll() {
    let mut inner = Coroutine::<(), (), ()>::new(|y, ()| {
        // Suspends the bare coroutine from inside this generator's poll.
        let mut suspends_mid_poll = Generator::<(), u32, ()>::new(|_co, ()| async move {
            y.suspend(());
        });
        assert_eq!(suspends_mid_poll.resume(()), CoroutineResult::Return(()));
    });
    let escaped = {
        let inner = &mut inner;
        let mut outer = Generator::<(), u32, Co<(), u32>>::new(|co, ()| async move {
            assert!(inner.resume(()).is_yield());
            co
        });
        match outer.resume(()) {
            CoroutineResult::Return(co) => co,
            CoroutineResult::Yield(_) => unreachable!(),
        }
    };
    // The inner generator's poll returns now, long after `outer` was freed.
    assert!(inner.resume(()).is_return());
    let mut fut = escaped.suspend(7);
    let msg = panic_message(|| {
        let _ = Pin::new(&mut fut).poll(&mut Context::from_waker(Waker::noop()));
    });
    assert!(msg.contains("no generator is being resumed"), "{msg}");
}

/// Each coroutine's generator id is its own: two bare coroutines that each suspend inside their
/// generator's poll, resumed alternately, both complete (the resumes do not nest).
#[test]
#[cfg_attr(miri, ignore)] // a stackful `Coroutine`: inline asm, which Miri cannot run
fn generators_in_alternately_resumed_coroutines_each_find_their_own_slot() {
    fn driver() -> Coroutine<(), (), Vec<u32>> {
        Coroutine::new(|y, ()| {
            let g = Generator::new(|co, ()| async move {
                for n in 0..3u32 {
                    y.suspend(());
                    co.suspend(n).await;
                }
            });
            g.collect()
        })
    }
    let (mut a, mut b) = (driver(), driver());
    let (mut done_a, mut done_b) = (None, None);
    while done_a.is_none() || done_b.is_none() {
        if done_a.is_none() {
            done_a = a.resume(()).as_return();
        }
        if done_b.is_none() {
            done_b = b.resume(()).as_return();
        }
    }
    assert_eq!(done_a.unwrap(), [0, 1, 2]);
    assert_eq!(done_b.unwrap(), [0, 1, 2]);
}
