//! `corio::task_local!`: a value per coroutine or task, never visible to another coroutine or
//! task that runs on the same thread while the owner is suspended inside its scope.

#[macro_use]
mod support;

use std::sync::{Arc, Mutex};

use support::{EVENTUALLY, within};

corio::task_local! {
    static VALUE: u32;
    static NAME: String;
}

rt_common! {
    #[test]
    fn two_coroutines_yielding_inside_their_scopes_each_see_only_their_own_value() {
        let rt = rt();
        let seen = within(EVENTUALLY, move || {
            rt.run(|| {
                let seen = Arc::new(Mutex::new(Vec::new()));
                let handles: Vec<_> = (1..=2u32)
                    .map(|v| {
                        let seen = seen.clone();
                        corio::go(move || {
                            VALUE.sync_scope(v, || {
                                for _ in 0..10 {
                                    corio::yield_now();
                                    seen.lock().unwrap().push((v, VALUE.get()));
                                }
                            });
                            // Outside its scope it sees nothing, whatever the other one set.
                            corio::yield_now();
                            seen.lock().unwrap().push((v, VALUE.try_with(|v| *v).unwrap_or(0)));
                        })
                    })
                    .collect();
                for h in handles {
                    h.join().unwrap();
                }
                seen.lock().unwrap().clone()
            })
        });
        assert_eq!(seen.len(), 22);
        for (owner, value) in seen {
            if value != 0 {
                assert_eq!(owner, value, "a coroutine saw another coroutine's value");
            }
        }
    }

    #[test]
    fn a_coroutine_suspended_inside_a_scope_hides_its_value_from_an_async_task() {
        let rt = rt();
        let (inside, outside) = within(EVENTUALLY, move || {
            rt.run(|| {
                let (tx, rx) = std::sync::mpsc::channel();
                VALUE.sync_scope(5, || {
                    // While this coroutine waits for it, the task may run on this thread.
                    let task = corio::spawn(async move {
                        VALUE.try_with(|v| *v).ok()
                    });
                    tx.send(task.join().unwrap()).unwrap();
                    VALUE.get()
                });
                (VALUE.sync_scope(6, || VALUE.get()), rx.recv().unwrap())
            })
        });
        assert_eq!(inside, 6);
        assert_eq!(outside, None);
    }

    #[test]
    fn an_async_scope_keeps_its_value_across_awaits_and_moves() {
        let rt = rt();
        let v = within(EVENTUALLY, move || {
            rt.block_on(async {
                let tasks: Vec<_> = (0..8u32)
                    .map(|i| {
                        corio::spawn(VALUE.scope(i, async move {
                            let mut sum = 0;
                            for _ in 0..5 {
                                corio::yield_now_async().await;
                                sum += VALUE.get();
                            }
                            (i, sum)
                        }))
                    })
                    .collect();
                let mut out = Vec::new();
                for t in tasks {
                    out.push(t.await.unwrap());
                }
                out
            })
        });
        for (i, sum) in v {
            assert_eq!(sum, 5 * i);
        }
    }

    #[test]
    fn an_async_scope_awaited_in_a_coroutine_is_seen_only_during_its_polls() {
        let rt = rt();
        let (during, after) = within(EVENTUALLY, move || {
            rt.run(|| {
                let during = corio::block_on(NAME.scope("inner".to_string(), async {
                    corio::yield_now_async().await;
                    NAME.get()
                }));
                (during, NAME.try_with(|n| n.clone()).ok())
            })
        });
        assert_eq!(during, "inner");
        assert_eq!(after, None);
    }

    #[test]
    fn a_cancelled_coroutine_leaves_no_value_behind_on_its_thread() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let h = corio::go(|| {
                    VALUE.sync_scope(1, || corio::sleep(std::time::Duration::from_secs(60)))
                });
                corio::yield_now();
                h.abort();
                assert!(h.join().unwrap_err().is_cancelled());
                assert!(VALUE.try_with(|_| ()).is_err());
                let other = corio::go(|| VALUE.try_with(|v| *v).ok()).join().unwrap();
                assert_eq!(other, None);
            })
        });
    }
}

/// After tokio's `task_local_available_on_completion_drop` (`tests/task_local.rs`): the value
/// is set while the scoped future is dropped, so its destructors see it.
#[test]
fn the_scoped_futures_destructors_see_the_value() {
    struct Reads(std::sync::mpsc::Sender<Option<u32>>);
    impl Drop for Reads {
        fn drop(&mut self) {
            let _ = self.0.send(VALUE.try_with(|v| *v).ok());
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let reads = Reads(tx);
    let fut = VALUE.scope(3, async move {
        let _reads = reads;
        std::future::pending::<()>().await;
    });
    drop(fut); // never polled: the future and `reads` in it are dropped inside the scope
    assert_eq!(rx.recv().unwrap(), Some(3));
}

/// Nested scopes of one key shadow the outer value and restore it when they end.
#[test]
fn nested_scopes_shadow_and_restore_on_a_plain_thread() {
    let v = VALUE.sync_scope(1, || {
        let inner = VALUE.sync_scope(2, || VALUE.get());
        (inner, VALUE.get())
    });
    assert_eq!(v, (2, 1));
    assert!(VALUE.try_with(|_| ()).is_err());
}

#[test]
fn with_outside_any_scope_panics_with_advice() {
    let msg = support::panic_message(|| VALUE.with(|_| ()));
    assert!(msg.contains("sync_scope"), "{msg}");
}

corio::task_local! {
    static CANARY: Canary;
}

const ALIVE: u64 = 0xA11E;
const DEAD: u64 = 0xDEAD;

/// A value that says whether it has been dropped (its memory is read through the key after).
struct Canary(u64);

impl Drop for Canary {
    fn drop(&mut self) {
        // Volatile: the store must survive into the (dropped) value's memory for the test.
        // SAFETY: `self.0` is a valid, aligned `u64` we own.
        unsafe { std::ptr::write_volatile(&mut self.0, DEAD) };
    }
}

/// A bare coroutine that sees nothing of task-local `CANARY` (returns `None`), or what it sees;
/// and the execution context (stack slot) it runs in.
fn fresh_reader() -> (Option<u64>, usize) {
    use corio::coroutine::Coroutine;
    let mut reader: Coroutine<(), (), (Option<u64>, usize)> = Coroutine::new(|_, ()| {
        (
            CANARY.try_with(|c| c.0).ok(),
            corio::stack::current_context(),
        )
    });
    reader.resume(()).as_return().unwrap()
}

/// A bare coroutine that opens a scope of `CANARY` and suspends inside it, already resumed
/// once; and the execution context (stack slot) it runs in.
fn suspended_opener() -> (corio::coroutine::Coroutine<(), usize, ()>, usize) {
    let mut opener = corio::coroutine::Coroutine::new(|y, ()| {
        CANARY.sync_scope(Canary(ALIVE), || y.suspend(corio::stack::current_context()));
    });
    let context = opener.resume(()).as_yield().unwrap();
    (opener, context)
}

/// A bare `Coroutine` resumed inside a task opens its scopes on the task's scope stack (module
/// docs). If it suspends inside a scope and another task of the thread then drops it, the
/// unwind closes the scope there: the entry must still leave the first task's stack, or the
/// next coroutine given the freed stack slot reads the dropped value through a safe `&T`.
#[test]
fn a_scope_a_bare_coroutine_left_open_ends_for_its_task_when_another_task_drops_it() {
    let rt = support::rt(1);
    let (opened_in, after, (next_sees, next_in)) = within(EVENTUALLY, move || {
        rt.run(|| {
            let (opener, opened_in) = suspended_opener();
            // An async task of this worker drops the suspended coroutine: it unwinds there.
            corio::spawn_local(async move { drop(opener) })
                .join()
                .unwrap();
            (opened_in, CANARY.try_with(|c| c.0).ok(), fresh_reader())
        })
    });
    assert_eq!(
        after, None,
        "the scope ended but its (dropped) value is still visible"
    );
    assert_eq!(
        next_in, opened_in,
        "the next coroutine got the freed stack slot"
    );
    assert_eq!(
        next_sees, None,
        "a scope of the slot's last coroutine is still visible"
    );
}

/// The same with the roles swapped: a bare coroutine resumed inside an async task's poll opens
/// its scope on the thread's scope stack, and a stackful coroutine of the worker drops it.
#[test]
fn a_scope_a_bare_coroutine_left_open_in_an_async_task_ends_when_a_coroutine_drops_it() {
    use corio::coroutine::Coroutine;
    let rt = support::rt(1);
    let (opened_in, (next_sees, next_in)) = within(EVENTUALLY, move || {
        rt.run(|| {
            thread_local! {
                static STASH: std::cell::RefCell<Option<Coroutine<(), usize, ()>>> =
                    const { std::cell::RefCell::new(None) };
            }
            let opened_in = corio::spawn_local(async {
                let (opener, opened_in) = suspended_opener();
                STASH.with(|s| *s.borrow_mut() = Some(opener));
                opened_in
            })
            .join()
            .unwrap();
            // The main coroutine (a stackful context) drops it: the scope closes here.
            drop(STASH.with(|s| s.borrow_mut().take()));
            // The next coroutine an async task resumes gets the freed slot.
            let next = corio::spawn_local(async { fresh_reader() }).join().unwrap();
            (opened_in, next)
        })
    });
    assert_eq!(
        next_in, opened_in,
        "the next coroutine got the freed stack slot"
    );
    assert_eq!(
        next_sees, None,
        "a scope of the slot's last coroutine is still visible"
    );
}

/// A scoped future kept in a thread-local is dropped while the thread's thread-locals are
/// destroyed, possibly after the thread's own scope stack: its drop (which opens the scope for
/// the future's destructors) must not panic there, which would abort the process.
#[test]
fn a_scoped_future_dropped_while_the_threads_locals_are_destroyed_does_not_abort() {
    use std::cell::RefCell;
    thread_local! {
        static HELD: RefCell<Option<corio::TaskLocalFuture<u32, std::future::Pending<()>>>> =
            const { RefCell::new(None) };
    }
    let seen = std::thread::spawn(|| {
        // Registered first, so destroyed last (destructors run in reverse order).
        HELD.with(|h| *h.borrow_mut() = Some(VALUE.scope(4, std::future::pending())));
        // The thread's scope stack is made (and its destructor registered) only now.
        VALUE.sync_scope(5, || VALUE.get())
    })
    .join()
    .expect("the thread ended without a panic");
    assert_eq!(seen, 5);
}

/// What a bare coroutine reads of a scope its resumer opened, after suspending inside `with`
/// and being resumed once that scope has ended: `None` (it never saw the value) or the value
/// still alive; never the dropped value (`DEAD`), which `with` lent as a plain `&T`.
fn read_across_the_resumers_scope() -> Option<u64> {
    use corio::coroutine::{Coroutine, CoroutineResult};
    let mut reader: Coroutine<(), (), Option<u64>> = Coroutine::new(|y, ()| {
        CANARY
            .try_with(|c| {
                y.suspend(());
                // SAFETY: `&c.0` comes from a `&Canary`, valid for reads for as long as `with`
                // lends it — the promise under test. Volatile: the load stays after the switch.
                unsafe { std::ptr::read_volatile(&c.0) }
            })
            .ok()
    });
    let first = CANARY.sync_scope(Canary(ALIVE), || reader.resume(()));
    // The scope has ended: its value is dropped.
    match first {
        CoroutineResult::Return(read) => read,
        CoroutineResult::Yield(()) => reader.resume(()).as_return().unwrap(),
    }
}

/// `with` lends `&T` for the length of its closure, which is sound only if the scope that owns
/// the value cannot end meanwhile: true when the scope is an outer frame of the same stack,
/// false for a bare coroutine reading its resumer's scope, which it may suspend inside `with`
/// while the resumer ends the scope.
#[test]
fn a_bare_coroutine_suspended_inside_with_does_not_read_its_resumers_ended_scope() {
    let read = read_across_the_resumers_scope();
    assert!(
        read.is_none() || read == Some(ALIVE),
        "read {read:x?} through a reference to a dropped value"
    );
}

/// The same inside a task: the bare coroutine shares the task's scope stack.
#[test]
fn a_bare_coroutine_suspended_inside_with_in_a_task_does_not_read_the_tasks_ended_scope() {
    let rt = support::rt(1);
    let read = within(EVENTUALLY, move || rt.run(read_across_the_resumers_scope));
    assert!(
        read.is_none() || read == Some(ALIVE),
        "read {read:x?} through a reference to a dropped value"
    );
}

/// The other way round: the resumer reads, inside `with`, a scope that a bare coroutine left
/// open while suspended (visible to it, module docs), and resumes the coroutine, which ends
/// that scope and drops the value the resumer still holds a `&T` to.
fn read_across_a_resumed_coroutines_scope() -> Option<u64> {
    use corio::coroutine::Coroutine;
    let mut opener: Coroutine<(), (), ()> = Coroutine::new(|y, ()| {
        CANARY.sync_scope(Canary(ALIVE), || y.suspend(()));
    });
    assert!(opener.resume(()).is_yield());
    CANARY
        .try_with(|c| {
            assert!(opener.resume(()).is_return()); // its scope ends, its value is dropped
            // SAFETY: as in `read_across_the_resumers_scope`.
            unsafe { std::ptr::read_volatile(&c.0) }
        })
        .ok()
}

#[test]
fn a_scope_a_bare_coroutine_left_open_cannot_end_under_its_resumers_with() {
    let read = read_across_a_resumed_coroutines_scope();
    assert!(
        read.is_none() || read == Some(ALIVE),
        "read {read:x?} through a reference to a dropped value"
    );
}

#[test]
fn a_scope_a_bare_coroutine_left_open_cannot_end_under_its_tasks_with() {
    let rt = support::rt(1);
    let read = within(EVENTUALLY, move || {
        rt.run(read_across_a_resumed_coroutines_scope)
    });
    assert!(
        read.is_none() || read == Some(ALIVE),
        "read {read:x?} through a reference to a dropped value"
    );
}

/// A bare coroutine's scopes are its own wherever it is resumed from: one that opens a scope
/// and suspends inside it still sees its value when another task of the worker (or an async
/// task's poll) resumes it. (Its entry went on the stack of the task that resumed it when it
/// opened the scope, and a later resumer's lookup searched only its own: `try_with` said "not
/// set" inside the coroutine's own open scope.)
#[test]
fn a_bare_coroutine_sees_the_scope_it_left_open_whoever_resumes_it() {
    use std::cell::RefCell;
    use std::rc::Rc;

    use corio::coroutine::Coroutine;
    let rt = support::rt(1);
    let seen = within(EVENTUALLY, move || {
        rt.run(|| {
            let bare: Rc<RefCell<Coroutine<(), Option<u32>, ()>>> =
                Rc::new(RefCell::new(Coroutine::new(|y, ()| {
                    VALUE.sync_scope(5, || {
                        for _ in 0..3 {
                            y.suspend(VALUE.try_with(|v| *v).ok());
                        }
                    });
                })));
            let resume = |bare: &Rc<RefCell<Coroutine<(), Option<u32>, ()>>>| {
                bare.borrow_mut().resume(()).as_yield().unwrap()
            };
            // Opened while this coroutine resumes it; then another coroutine and an async
            // task of this worker resume it.
            let mine = resume(&bare);
            let b = bare.clone();
            let other = corio::go_local(move || resume(&b)).join().unwrap();
            let b = bare.clone();
            let task = corio::spawn_local(async move { resume(&b) })
                .join()
                .unwrap();
            (mine, other, task)
        })
    });
    assert_eq!(seen, (Some(5), Some(5), Some(5)));
}
