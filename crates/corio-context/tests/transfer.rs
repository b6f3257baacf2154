//! `Yielder::transfer`: one coroutine hands the running turn straight to another, which then
//! switches back to the frame that resumed the first (`resume_detached` + `claim`).

use std::cell::Cell;
use std::rc::Rc;

use corio_context::coroutine::{Coroutine, CoroutineResult, RawCoroutine, Yielder};

/// Where a coroutine's closure finds the handles it transfers between (set after creation).
type Handles = Rc<Cell<[*mut RawCoroutine; 2]>>;

#[test]
#[cfg_attr(miri, ignore)] // inline asm
fn a_transfer_runs_the_other_coroutine_which_returns_to_the_first_ones_resumer() {
    let handles: Handles = Rc::new(Cell::new([std::ptr::null_mut(); 2]));
    let log = Rc::new(std::cell::RefCell::new(Vec::new()));
    let (h, l) = (handles.clone(), log.clone());
    // Different return types: the resumer claims each result with its own coroutine.
    let mut a = Coroutine::new(move |y: &Yielder<u32, ()>, first: u32| {
        l.borrow_mut().push(format!("a {first}"));
        let [me, other] = h.get();
        // SAFETY: `me` is this coroutine, resumed by `resume_detached`; `other` is suspended
        // and takes a `u32`.
        let next = unsafe { y.transfer(me, other, 10u32) };
        l.borrow_mut().push(format!("a {next}"));
        String::from("a done")
    });
    let l = log.clone();
    let mut b = Coroutine::new(move |y: &Yielder<u32, ()>, first: u32| {
        l.borrow_mut().push(format!("b {first}"));
        for _ in 0..2 {
            let next = y.suspend(());
            l.borrow_mut().push(format!("b {next}"));
        }
        7u64
    });
    // Start `b` and leave it suspended.
    assert_eq!(b.resume(1), CoroutineResult::Yield(()));
    handles.set([a.as_raw(), b.as_raw()]);
    // Resume `a`: it transfers to `b`, whose suspension comes back here, for `b` to claim.
    // SAFETY: claimed below by `b`, the coroutine the transfer passed the turn to.
    let back = unsafe { a.resume_detached(2) };
    // SAFETY: `b` switched back.
    assert_eq!(unsafe { b.claim(back) }, CoroutineResult::Yield(()));
    assert!(!a.is_done() && !b.is_done());
    // `a` is suspended inside its transfer: resuming it returns there.
    assert_eq!(a.resume(3), CoroutineResult::Return(String::from("a done")));
    assert_eq!(b.resume(4), CoroutineResult::Return(7));
    assert_eq!(*log.borrow(), ["b 1", "a 2", "b 10", "a 3", "b 4"]);
}

#[test]
#[cfg_attr(miri, ignore)] // inline asm
fn a_coroutine_finishing_after_a_transfer_is_claimed_by_its_own_handle() {
    let handles: Handles = Rc::new(Cell::new([std::ptr::null_mut(); 2]));
    let h = handles.clone();
    let mut a = Coroutine::new(move |y: &Yielder<(), ()>, ()| {
        let [me, other] = h.get();
        // SAFETY: as in the first test; `other` takes `()`.
        unsafe { y.transfer(me, other, ()) };
        1u8
    });
    // `b` finishes (panicking) after the transfer: its final switch reaches `a`'s resumer.
    let mut b = Coroutine::new(|y: &Yielder<(), ()>, ()| -> Vec<u64> {
        y.suspend(());
        panic!("b panics after the transfer")
    });
    assert!(b.resume(()).is_yield());
    handles.set([a.as_raw(), b.as_raw()]);
    // SAFETY: claimed by `b`.
    let back = unsafe { a.resume_detached(()) };
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `b` switched back (finished).
        unsafe { b.claim(back) }
    }))
    .unwrap_err();
    assert_eq!(
        err.downcast_ref::<&str>(),
        Some(&"b panics after the transfer")
    );
    assert!(b.is_done());
    assert_eq!(a.resume(()), CoroutineResult::Return(1));
}

#[test]
#[cfg_attr(miri, ignore)] // inline asm
fn a_chain_of_transfers_returns_to_the_first_resumer_and_keeps_each_word() {
    use corio_context::local;
    // Three coroutines, each with its own per-context word: a → b → c, then c suspends.
    let handles: Rc<Cell<[*mut RawCoroutine; 3]>> = Rc::new(Cell::new([std::ptr::null_mut(); 3]));
    let words = Rc::new(std::cell::RefCell::new(Vec::new()));
    let make = |index: usize| {
        let (h, w) = (handles.clone(), words.clone());
        Coroutine::new(move |y: &Yielder<(), ()>, ()| {
            // SAFETY: nothing in this test trusts the word; the coroutine ends with it set.
            unsafe { local::replace(100 + index as u64) };
            y.suspend(());
            let all = h.get();
            if index < 2 {
                // SAFETY: `all[index]` is this coroutine, `all[index + 1]` a suspended one.
                unsafe { y.transfer(all[index], all[index + 1], ()) };
            } else {
                y.suspend(());
            }
            w.borrow_mut().push((index, local::get()));
        })
    };
    let mut cos = [make(0), make(1), make(2)];
    for co in &mut cos {
        assert!(co.resume(()).is_yield());
    }
    handles.set([cos[0].as_raw(), cos[1].as_raw(), cos[2].as_raw()]);
    // SAFETY: nothing in this test trusts the word; it is put back to 0 at the end.
    unsafe { local::replace(5) };
    // SAFETY: claimed by `c`, the end of the chain.
    let back = unsafe { cos[0].resume_detached(()) };
    assert_eq!(local::get(), 102, "c's word while c ran");
    // SAFETY: `c` switched back.
    assert!(unsafe { cos[2].claim(back) }.is_yield());
    assert_eq!(local::get(), 5, "the resumer's word is back");
    for co in cos.iter_mut().rev() {
        assert!(co.resume(()).is_return());
        assert_eq!(local::get(), 5);
    }
    assert_eq!(*words.borrow(), [(2, 102), (1, 101), (0, 100)]);
    // SAFETY: the thread's value before the test.
    unsafe { local::replace(0) };
}

#[test]
#[cfg_attr(miri, ignore)] // inline asm
fn dropping_a_coroutine_suspended_in_a_transfer_unwinds_it() {
    let handles: Handles = Rc::new(Cell::new([std::ptr::null_mut(); 2]));
    let dropped = Rc::new(Cell::new(false));
    struct Flag(Rc<Cell<bool>>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }
    let (h, d) = (handles.clone(), dropped.clone());
    let mut a = Coroutine::new(move |y: &Yielder<(), ()>, ()| {
        let _flag = Flag(d);
        let [me, other] = h.get();
        // SAFETY: as in the first test.
        unsafe { y.transfer(me, other, ()) };
        unreachable!("dropped, not resumed");
    });
    let mut b = Coroutine::new(|y: &Yielder<(), ()>, ()| {
        y.suspend(());
        y.suspend(());
    });
    assert!(b.resume(()).is_yield());
    handles.set([a.as_raw(), b.as_raw()]);
    // SAFETY: claimed by `b`.
    let back = unsafe { a.resume_detached(()) };
    // SAFETY: `b` switched back.
    assert!(unsafe { b.claim(back) }.is_yield());
    drop(a);
    assert!(dropped.get());
    assert!(b.resume(()).is_return());
}
