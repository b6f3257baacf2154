//! A review of the stackless `Generator`'s documented contract (`corio::generator` module
//! docs): resume after completion, re-entrancy, borrowing yields, Send/Sync, drops, panics,
//! nesting, memory, threads, and overflow inside a stackful resumer.
// A std guard held across a yield is what two tests are about (the generator's `Send`, and
// the guard released when a suspended generator is dropped).
#![allow(clippy::await_holding_lock)]

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::marker::PhantomData;
use std::os::unix::process::ExitStatusExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::process::{Command, Output};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};

use corio::coroutine::{Builder, Coroutine};
use corio::generator::{Co, CoroutineResult, Generator};

// ---------------------------------------------------------------------------------------------
// Helpers.

const CHILD_ENV: &str = "CORIO_GEN_REVIEW_CHILD";

fn child_case(name: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|c| c == name)
}

fn run_in_child(name: &str) -> Output {
    Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, name)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string payload>".into())
}

/// Logs its tag when dropped.
struct Tagged(&'static str, Rc<RefCell<Vec<&'static str>>>);
impl Drop for Tagged {
    fn drop(&mut self) {
        self.1.borrow_mut().push(self.0);
    }
}

struct Counted(Rc<Cell<u32>>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

// Auto-trait probes by autoref specialisation, evaluated at the concrete call site.
struct Probe<T: ?Sized>(PhantomData<T>);
fn probe_of<T: ?Sized>(_: &T) -> Probe<T> {
    Probe(PhantomData)
}
trait FallbackSend {
    fn send(&self) -> bool {
        false
    }
}
impl<T: ?Sized> FallbackSend for &Probe<T> {}
trait IsSend {
    fn send(&self) -> bool {
        true
    }
}
impl<T: ?Sized + Send> IsSend for Probe<T> {}
trait FallbackSync {
    fn sync(&self) -> bool {
        false
    }
}
impl<T: ?Sized> FallbackSync for &Probe<T> {}
trait IsSync {
    fn sync(&self) -> bool {
        true
    }
}
impl<T: ?Sized + Sync> IsSync for Probe<T> {}
macro_rules! is_send {
    ($e:expr) => {
        (&probe_of(&$e)).send()
    };
}
macro_rules! is_sync {
    ($e:expr) => {
        (&probe_of(&$e)).sync()
    };
}

// ---------------------------------------------------------------------------------------------
// Send / Sync.

// Each generator is built in a function of its own: an async block's auto traits are known
// only after the body that defines it has been type-checked, so the probe must look at it from
// another function (through the opaque return type, which leaks auto traits).
fn gen_plain() -> Generator<u32, u32, (), impl Future<Output = ()>> {
    Generator::new(|co: Co<u32, u32>, x: u32| async move {
        co.suspend(x).await;
    })
}
fn gen_rc_across() -> impl Sized {
    Generator::new(|co: Co<(), u32>, ()| async move {
        let rc = Rc::new(1);
        co.suspend(*rc).await;
        drop(rc);
    })
}
fn gen_rc_before_only() -> impl Sized {
    Generator::new(|co: Co<(), u32>, ()| async move {
        let n = {
            let rc = Rc::new(1);
            *rc
        };
        co.suspend(n).await;
    })
}
fn gen_rc_captured() -> impl Sized {
    let rc = Rc::new(5u32);
    Generator::new(move |co: Co<(), u32>, ()| async move {
        co.suspend(*rc).await;
    })
}
fn gen_ref_to_cell_across() -> impl Sized {
    Generator::new(|co: Co<(), u32>, ()| async move {
        let cell = Cell::new(1u32);
        let r: &Cell<u32> = &cell;
        co.suspend(r.get()).await;
        r.set(2);
    })
}
fn gen_rc_input() -> impl Sized {
    Generator::new(|co: Co<Rc<u8>, ()>, _first: Rc<u8>| async move {
        co.suspend(()).await;
    })
}
fn gen_rc_yield() -> impl Sized {
    Generator::new(|co: Co<(), Rc<u8>>, ()| async move {
        co.suspend(Rc::new(1)).await;
    })
}
fn gen_mutex_guard_across(m: &'static Mutex<u8>) -> impl Sized {
    Generator::new(move |co: Co<(), ()>, ()| async move {
        let g = m.lock().unwrap();
        co.suspend(()).await;
        drop(g);
    })
}

#[test]
fn send_follows_what_the_body_holds_and_a_generator_is_never_sync() {
    assert!(is_send!(1u8) && !is_send!(Rc::new(1)), "the probe works");
    let plain = gen_plain();
    assert!(is_send!(plain));
    assert!(
        !is_sync!(plain),
        "is_started(&self) uses a Cell: never Sync"
    );
    assert!(
        !is_send!(gen_rc_across()),
        "an Rc alive across a suspension"
    );
    assert!(
        is_send!(gen_rc_before_only()),
        "an Rc dropped before the suspension"
    );
    assert!(
        !is_send!(gen_rc_captured()),
        "an Rc captured by the closure"
    );
    assert!(
        !is_send!(gen_ref_to_cell_across()),
        "a &Cell alive across a suspension"
    );
    assert!(!is_send!(gen_rc_input()), "an Rc input");
    assert!(!is_send!(gen_rc_yield()), "an Rc yield");
    let m: &'static Mutex<u8> = Box::leak(Box::new(Mutex::new(0)));
    assert!(
        !is_send!(gen_mutex_guard_across(m)),
        "a MutexGuard across a suspension"
    );
    // Boxed (type-erased) generators are not Send: `dyn Future` carries no Send bound.
    assert!(!is_send!(plain.boxed()));
    // `Co` is Send + Sync whatever its types (it touches its slot only after the id check).
    let co_probe = Generator::new(|co: Co<Rc<u8>, Rc<u8>>, _: Rc<u8>| async move {
        let s = is_send!(co) && is_sync!(co);
        co.suspend(Rc::new(u8::from(s))).await;
    });
    let mut co_probe = co_probe;
    assert_eq!(*co_probe.resume(Rc::new(0)).as_yield().unwrap(), 1);
}

// ---------------------------------------------------------------------------------------------
// Resume protocol.

#[test]
fn resuming_a_finished_generator_panics_and_drops_the_input_once() {
    let drops = Rc::new(Cell::new(0));
    let mut g = Generator::new(|_co: Co<Counted, ()>, first: Counted| async move {
        drop(first);
        7
    });
    assert_eq!(g.resume(Counted(drops.clone())), CoroutineResult::Return(7));
    assert_eq!(drops.get(), 1);
    let err = catch_unwind(AssertUnwindSafe(|| g.resume(Counted(drops.clone())))).unwrap_err();
    assert!(panic_message(&*err).contains("already finished"));
    assert_eq!(drops.get(), 2, "the refused input was dropped once");
    assert!(g.is_done());
}

#[test]
fn yields_may_borrow_from_the_resume_arguments() {
    let lines = [String::from("alpha beta"), String::from("gamma")];
    let mut words = Generator::new(|co: Co<&str, &str>, mut line: &str| async move {
        let mut count = 0;
        loop {
            for w in line.split(' ') {
                // Each yield borrows the line passed to the resume that produced it.
                line = co.suspend(w).await;
                count += 1;
            }
            if line.is_empty() {
                return count;
            }
        }
    });
    assert_eq!(words.resume(&lines[0]), CoroutineResult::Yield("alpha"));
    // The input of this resume is ignored until "alpha"'s line is exhausted; the body takes
    // the most recent input as the next line.
    assert_eq!(words.resume(&lines[0]), CoroutineResult::Yield("beta"));
    assert_eq!(words.resume(&lines[1]), CoroutineResult::Yield("gamma"));
    assert_eq!(words.resume(""), CoroutineResult::Return(3));
}

#[test]
fn a_generator_resumed_from_inside_its_own_body_panics_and_stays_sound() {
    // Safe code cannot reach `&mut` of a generator being resumed; the nearest attempt is a
    // RefCell, which refuses the second borrow inside the body. The generator then finishes.
    type Shared = Rc<RefCell<Option<Generator<(), u32, ()>>>>;
    let slot: Shared = Rc::new(RefCell::new(None));
    let inner = slot.clone();
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let g = Generator::new(move |co: Co<(), u32>, ()| async move {
        let _local = Counted(d);
        co.suspend(1).await;
        // Re-entrant resume: must panic (BorrowMutError), not switch into itself.
        let _ = inner.borrow_mut().as_mut().unwrap().resume(());
        co.suspend(2).await;
    })
    .boxed();
    *slot.borrow_mut() = Some(g);
    assert_eq!(
        slot.borrow_mut().as_mut().unwrap().resume(()),
        CoroutineResult::Yield(1)
    );
    let r = catch_unwind(AssertUnwindSafe(|| {
        slot.borrow_mut().as_mut().unwrap().resume(())
    }));
    assert!(r.is_err());
    assert_eq!(drops.get(), 1, "the body's local was dropped once");
    assert!(slot.borrow().as_ref().unwrap().is_done());
    // Dropping the finished generator (and with it nothing else) is fine.
    slot.borrow_mut().take();
    assert_eq!(drops.get(), 1);
}

// ---------------------------------------------------------------------------------------------
// Drops.

#[test]
fn dropping_a_suspended_generator_drops_locals_in_reverse_order_and_releases_locks() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    let m = Arc::new(Mutex::new(0u32));
    let m2 = m.clone();
    let mut g = Generator::new(move |co: Co<(), ()>, ()| async move {
        let _a = Tagged("a", l.clone());
        let mut guard = m2.lock().unwrap();
        *guard += 1;
        let _b = Tagged("b", l.clone());
        co.suspend(()).await;
        unreachable!("never resumed again");
    });
    assert_eq!(g.resume(()), CoroutineResult::Yield(()));
    assert!(
        m.try_lock().is_err(),
        "the body holds the lock while suspended"
    );
    drop(g);
    assert_eq!(*log.borrow(), ["b", "a"]);
    assert_eq!(*m.try_lock().expect("the lock was released"), 1);
    assert!(!m.is_poisoned());
}

#[test]
fn a_panicking_destructor_in_a_dropped_generator_propagates_and_the_rest_still_drop() {
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("destructor panicked");
        }
    }
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let mut g = Generator::new(move |co: Co<(), ()>, ()| async move {
        let _first = Counted(d.clone());
        let _p = PanicOnDrop;
        let _last = Counted(d);
        co.suspend(()).await;
    });
    g.resume(());
    let err = catch_unwind(AssertUnwindSafe(|| drop(g))).unwrap_err();
    assert_eq!(panic_message(&*err), "destructor panicked");
    assert_eq!(drops.get(), 2, "both other locals were dropped");
}

// ---------------------------------------------------------------------------------------------
// Panics.

#[test]
fn a_non_string_panic_payload_propagates_and_the_generator_is_finished() {
    #[derive(Debug, PartialEq)]
    struct Code(u32);
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let mut g = Generator::new(move |co: Co<(), u32>, ()| async move {
        let _l = Counted(d);
        co.suspend(1).await;
        std::panic::panic_any(Code(99));
    });
    assert_eq!(g.next(), Some(1));
    let err = catch_unwind(AssertUnwindSafe(|| g.next())).unwrap_err();
    assert_eq!(err.downcast_ref::<Code>(), Some(&Code(99)));
    assert_eq!(drops.get(), 1);
    assert!(g.is_done());
    assert_eq!(g.next(), None, "fused after a panic");
    drop(g);
    assert_eq!(drops.get(), 1);
}

#[test]
fn a_panic_in_a_nested_generator_caught_by_the_outer_body_leaves_the_outer_usable() {
    // The inner resume unwinds through its `Enter` guard; the outer's id must be published
    // again, or the outer's next `co.suspend` would panic.
    let mut outer = Generator::new(|co: Co<(), &'static str>, ()| async move {
        let mut inner = Generator::new(|co: Co<(), u8>, ()| async move {
            co.suspend(1).await;
            panic!("inner failed");
        });
        assert_eq!(inner.resume(()), CoroutineResult::Yield(1));
        let r = catch_unwind(AssertUnwindSafe(|| inner.resume(())));
        assert!(r.is_err());
        assert!(inner.is_done());
        co.suspend("after").await;
        "done"
    });
    assert_eq!(outer.resume(()), CoroutineResult::Yield("after"));
    assert_eq!(outer.resume(()), CoroutineResult::Return("done"));
}

// ---------------------------------------------------------------------------------------------
// Nesting.

fn chain(depth: u32, drops: Rc<Cell<u32>>) -> Generator<(), u32, ()> {
    Generator::new(move |co: Co<(), u32>, ()| async move {
        let _l = Counted(drops.clone());
        if depth == 0 {
            for n in 0..3 {
                co.suspend(n).await;
            }
            return;
        }
        // Each level resumes the next from its body and passes its yields up.
        let mut inner = chain(depth - 1, drops);
        while let CoroutineResult::Yield(v) = inner.resume(()) {
            co.suspend(v + 1).await;
        }
    })
    .boxed()
}

#[test]
fn generators_nested_a_hundred_deep_pass_values_and_unwind_on_drop() {
    let drops = Rc::new(Cell::new(0));
    let all: Vec<u32> = chain(99, drops.clone()).collect();
    assert_eq!(all, [99, 100, 101]);
    assert_eq!(drops.get(), 100);

    drops.set(0);
    let mut g = chain(99, drops.clone());
    assert_eq!(g.next(), Some(99));
    drop(g);
    assert_eq!(drops.get(), 100, "every level's local dropped");
}

// ---------------------------------------------------------------------------------------------
// Memory.

fn status_kib(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_hundred_thousand_generators_do_not_grow_the_process() {
    let name = "a_hundred_thousand_generators_do_not_grow_the_process";
    if child_case(name) {
        let run = |n: u32| {
            for i in 0..n {
                let mut g = Generator::new(move |co: Co<(), u32>, ()| async move {
                    let buf = vec![i as u8; 256];
                    co.suspend(buf.len() as u32).await;
                    co.suspend(i).await;
                });
                assert_eq!(g.resume(()), CoroutineResult::Yield(256));
                if i % 2 == 0 {
                    g.resume(());
                    g.resume(());
                    assert!(g.is_done());
                }
            }
        };
        run(10_000);
        let (rss, size) = (status_kib("VmRSS:"), status_kib("VmSize:"));
        run(100_000);
        let (rss2, size2) = (status_kib("VmRSS:"), status_kib("VmSize:"));
        assert!(rss2 <= rss + 2048, "VmRSS grew from {rss} to {rss2} KiB");
        assert!(
            size2 <= size + 2048,
            "VmSize grew from {size} to {size2} KiB"
        );
        return;
    }
    let out = run_in_child(name);
    assert!(out.status.success(), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------------
// Threads.

#[test]
fn a_generator_resumed_on_several_threads_sees_each_threads_locals() {
    thread_local! {
        static WHO: Cell<u32> = const { Cell::new(0) };
    }
    let mut g = Generator::new(|co: Co<(), u32>, ()| async move {
        for _ in 0..4 {
            let here = WHO.with(Cell::get);
            co.suspend(here).await;
        }
    });
    let mut seen = Vec::new();
    for t in 1..=4u32 {
        let (g2, v) = std::thread::spawn(move || {
            WHO.with(|w| w.set(t));
            let v = g.next();
            (g, v)
        })
        .join()
        .unwrap();
        g = g2;
        seen.push(v.unwrap());
    }
    assert_eq!(seen, [1, 2, 3, 4]);
    assert_eq!(g.next(), None);
}

#[test]
fn a_co_sent_to_another_thread_is_refused_there_while_its_generator_runs_here() {
    let (tx, rx) = std::sync::mpsc::channel::<Co<(), u32>>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<String>();
    let other = std::thread::spawn(move || {
        let co = rx.recv().unwrap();
        let mut fut = co.suspend(5);
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _ = Pin::new(&mut fut).poll(&mut Context::from_waker(Waker::noop()));
        }));
        done_tx
            .send(r.map_or_else(|p| panic_message(&*p), |()| "accepted".into()))
            .unwrap();
    });
    let mut g = Generator::new(move |co: Co<(), u32>, ()| async move {
        tx.send(co).unwrap();
        // The generator is being resumed on this thread while the other polls its Co.
        let msg = done_rx.recv().unwrap();
        msg.len() as u32
    });
    let r = g.resume(());
    other.join().unwrap();
    let CoroutineResult::Return(len) = r else {
        panic!("unexpected yield")
    };
    assert!(
        len > "accepted".len() as u32,
        "the other thread's poll was accepted"
    );
}

// ---------------------------------------------------------------------------------------------
// Generators inside stackful coroutines.

#[test]
fn dropping_a_coroutine_suspended_inside_a_generators_poll_drops_the_generator_once() {
    // The coroutine resumes a generator whose body suspends the coroutine mid-poll. Dropping
    // the coroutine unwinds through the poll (its `Enter` guard and the generator's
    // free-on-unwind): the body's locals are dropped once, the coroutine's word is restored.
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let mut co: Coroutine<(), (), ()> = Coroutine::new(move |y, ()| {
        let _outer = Counted(d.clone());
        let mut g = Generator::new(move |co: Co<(), u32>, ()| async move {
            let _l = Counted(d);
            y.suspend(());
            co.suspend(1).await;
        });
        let _ = g.resume(());
        unreachable!("the coroutine is dropped, not resumed");
    });
    co.resume(());
    assert_eq!(drops.get(), 0);
    drop(co);
    assert_eq!(drops.get(), 2);
    assert_eq!(
        corio_context::local::get(),
        0,
        "the thread's word is untouched"
    );
    // A fresh generator still works on this thread.
    let mut g = Generator::new(|co: Co<(), u8>, ()| async move { co.suspend(3).await });
    assert_eq!(g.resume(()), CoroutineResult::Yield(3));
}

#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 8]);
    std::hint::black_box(recurse(depth + 1)) + frame[0]
}

#[test]
fn deep_recursion_in_a_generator_body_on_a_small_coroutine_stack_is_reported() {
    let name = "deep_recursion_in_a_generator_body_on_a_small_coroutine_stack_is_reported";
    if child_case(name) {
        let mut co = Builder::new()
            .name("gen-driver")
            .stack_size(32 << 10)
            .build::<(), (), u64, _>(|_, ()| {
                let mut g = Generator::new(|co: Co<(), u64>, ()| async move {
                    co.suspend(1).await;
                    recurse(0)
                });
                g.resume(());
                g.resume(()).as_return().unwrap()
            })
            .unwrap();
        co.resume(());
        unreachable!();
    }
    let out = run_in_child(name);
    let err = stderr(&out);
    assert!(
        err.contains("coroutine 'gen-driver' (id ") && err.contains("has overflowed its stack"),
        "{err}"
    );
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{err}");
}
