//! A reviewer's contract tests of the runtime, ported from may's own suite (`tests/lib.rs`:
//! panic_coroutine, coroutine_result, cancel_coroutine, cancel_io_coroutine, spawn_inside,
//! wait_join, multi_yield, go_with_macro, test_sleep) and re-expressed for corio on both
//! scheduler flavours, plus a few cases around the bare coroutine (`corio::coroutine`) run
//! inside a task. may's park/unpark, `coroutine_local!` and scoped coroutines have no direct
//! equivalent beyond what `rt_scope.rs` and `rt_task_local.rs` already check.

#[macro_use]
mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use support::{EVENTUALLY, within};

rt_common! {
    #[test]
    fn panicking_coroutines_hand_their_payload_to_join_and_the_others_their_result() {
        // may `panic_coroutine` and `coroutine_result`, a hundred at a time.
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let handles: Vec<_> = (0..100u32)
                    .map(|i| {
                        corio::go(move || {
                            corio::yield_now();
                            if i % 2 == 0 {
                                panic!("panic inside coroutine {i}");
                            }
                            i * 100
                        })
                    })
                    .collect();
                for (i, h) in handles.into_iter().enumerate() {
                    match h.join() {
                        Ok(v) => assert_eq!(v, i as u32 * 100),
                        Err(e) => {
                            assert!(i % 2 == 0 && e.is_panic(), "{i}: {e:?}");
                            let p = e.into_panic();
                            let msg = p.downcast_ref::<String>().expect("a formatted message");
                            assert_eq!(*msg, format!("panic inside coroutine {i}"));
                        }
                    }
                }
                // The runtime goes on.
                assert_eq!(corio::go(|| 100).join().unwrap(), 100);
            })
        });
    }

    #[test]
    fn a_cancelled_coroutine_that_swallows_the_cancellation_is_cancelled_at_its_next_blocking_call() {
        // may `cancel_coroutine`: "next sys call would cause a Cancel panic". Here the
        // coroutine catches the unwind of its cancellation and goes on to sleep for ever.
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let caught = Arc::new(AtomicBool::new(false));
                let after_sleep = Arc::new(AtomicBool::new(false));
                let (c, a) = (caught.clone(), after_sleep.clone());
                let (_tx, rx) = corio::chan::bounded::<()>(0);
                let (ready_tx, ready_rx) = corio::chan::bounded::<()>(1);
                let h = corio::go(move || {
                    ready_tx.send(()).unwrap();
                    let r = catch_unwind(AssertUnwindSafe(|| rx.recv()));
                    c.store(r.is_err(), SeqCst);
                    corio::sleep(Duration::from_secs(1_000_000));
                    a.store(true, SeqCst);
                });
                ready_rx.recv().unwrap();
                corio::sleep(Duration::from_millis(10));
                h.abort();
                let err = h.join().unwrap_err();
                assert!(err.is_cancelled(), "{err:?}");
                assert!(caught.load(SeqCst), "the parked recv was unwound");
                assert!(!after_sleep.load(SeqCst), "the sleep was not slept through");
            })
        });
    }

    #[test]
    fn aborting_a_coroutine_blocked_in_accept_cancels_it_and_closes_the_listener() {
        // may `cancel_io_coroutine`.
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let (addr_tx, addr_rx) = corio::chan::bounded(1);
                let h = corio::go(move || {
                    let listener = corio::net::TcpListener::bind("127.0.0.1:0").unwrap();
                    addr_tx.send(listener.local_addr().unwrap()).unwrap();
                    loop {
                        let _ = listener.accept();
                    }
                });
                let addr = addr_rx.recv().unwrap();
                corio::sleep(Duration::from_millis(10));
                h.abort();
                assert!(h.join().unwrap_err().is_cancelled());
                let refused = corio::blocking(move || std::net::TcpStream::connect(addr));
                assert_eq!(
                    refused.map(drop).unwrap_err().kind(),
                    std::io::ErrorKind::ConnectionRefused,
                    "the listener was closed by the unwind"
                );
            })
        });
    }

    #[test]
    fn a_named_parent_spawns_yielding_children_and_joins_them_all() {
        // may `spawn_inside`, `wait_join` and `multi_yield`.
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let ran = Arc::new(AtomicUsize::new(0));
                let r = ran.clone();
                let parent = corio::Builder::new()
                    .name("parent")
                    .spawn(move || {
                        assert_eq!(corio::current().name(), Some("parent"));
                        let children: Vec<_> = (0..10)
                            .map(|i| {
                                let r = r.clone();
                                corio::go(move || {
                                    assert_eq!(corio::current().name(), None);
                                    corio::yield_now();
                                    r.fetch_add(1, SeqCst);
                                    i
                                })
                            })
                            .collect();
                        corio::yield_now();
                        assert_eq!(corio::current().name(), Some("parent"));
                        children.into_iter().map(|c| c.join().unwrap()).sum::<i32>()
                    })
                    .unwrap();
                assert_eq!(parent.join().unwrap(), 45);
                assert_eq!(ran.load(SeqCst), 10);
            })
        });
    }

    #[test]
    fn a_coroutine_with_a_tiny_requested_stack_runs_and_sees_its_name() {
        // may `go_with_macro` (8192 and 10240 bytes, below corio's minimum: rounded up).
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                for size in [8192, 10240] {
                    let (tx, rx) = corio::chan::bounded(1);
                    corio::Builder::new()
                        .name("test_task")
                        .stack_size(size)
                        .spawn(move || {
                            let me = corio::current();
                            tx.send((me.name().map(str::to_owned), format!("{size}"))).unwrap();
                        })
                        .unwrap()
                        .join()
                        .unwrap();
                    let (name, said) = rx.recv().unwrap();
                    assert_eq!(name.as_deref(), Some("test_task"));
                    assert_eq!(said, size.to_string());
                }
            })
        });
    }

    #[test]
    fn a_thousand_coroutines_each_sleep_at_least_their_duration_and_all_together() {
        // may `test_sleep`.
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let start = Instant::now();
                corio::sleep(Duration::from_millis(100));
                assert!(start.elapsed() >= Duration::from_millis(100));
                let start = Instant::now();
                let hs: Vec<_> = (0..1000)
                    .map(|_| {
                        corio::go(|| {
                            let now = Instant::now();
                            corio::sleep(Duration::from_millis(100));
                            now.elapsed()
                        })
                    })
                    .collect();
                for h in hs {
                    assert!(h.join().unwrap() >= Duration::from_millis(100));
                }
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "the sleeps overlap: {:?}",
                    start.elapsed()
                );
            })
        });
    }

    #[test]
    fn twenty_thousand_minimum_stack_coroutines_parked_on_one_channel_all_wake() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                const N: u64 = 20_000;
                let (tx, rx) = corio::chan::unbounded::<u64>();
                let hs: Vec<_> = (0..N)
                    .map(|_| {
                        let rx = rx.clone();
                        corio::Builder::new()
                            .stack_size(corio::stack::MIN_STACK_SIZE)
                            .spawn(move || rx.recv().unwrap())
                            .unwrap()
                    })
                    .collect();
                corio::yield_now();
                for v in 0..N {
                    tx.send(v).unwrap();
                }
                let sum: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
                assert_eq!(sum, N * (N - 1) / 2);
            })
        });
    }

    #[test]
    fn a_closure_with_a_buffer_captured_by_value_runs_on_the_default_stack() {
        // A 24 KiB buffer moved into a coroutine: under a tenth of the default stack.
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let buf = [3u8; 24 << 10];
                let h = corio::go(move || buf.iter().map(|&b| b as usize).sum::<usize>());
                assert_eq!(h.join().unwrap(), 3 * (24 << 10));
            })
        });
    }

    #[test]
    fn a_panic_in_a_bare_coroutine_run_by_a_task_reaches_the_tasks_join() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let h = corio::go(|| {
                    let mut co: corio::coroutine::Coroutine<(), u32, ()> =
                        corio::coroutine::Coroutine::new(|y, ()| {
                            y.suspend(1);
                            std::panic::panic_any(41u32);
                        });
                    assert_eq!(co.resume(()).as_yield(), Some(1));
                    corio::yield_now();
                    co.resume(());
                });
                let p = h.join().unwrap_err().into_panic();
                assert_eq!(p.downcast_ref::<u32>(), Some(&41));
            })
        });
    }

    #[test]
    fn a_blocking_call_inside_a_bare_coroutine_run_by_a_task_is_a_misuse_panic_with_advice() {
        // Documented (`task/stackful.rs`, `nested_misuse`): only the task's own coroutine
        // blocks on the scheduler. The panic reaches the task's join; the runtime goes on.
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                for sleep in [true, false] {
                    let h = corio::go(move || {
                        let mut co: corio::coroutine::Coroutine<(), (), ()> =
                            corio::coroutine::Coroutine::new(move |_, ()| {
                                if sleep {
                                    corio::sleep(Duration::from_millis(20));
                                } else {
                                    corio::yield_now();
                                }
                            });
                        co.resume(());
                    });
                    let p = h.join().unwrap_err().into_panic();
                    let msg = support::payload_text(&*p);
                    assert!(msg.contains("inside a bare `Coroutine`"), "{msg:?}");
                    assert_eq!(corio::go(|| 5).join().unwrap(), 5);
                }
            })
        });
    }
}

/// A closure that cannot fit in half its coroutine's stack is refused when it is spawned,
/// with an error that says so (not a task that fails, or a stack overflow, when it starts).
#[test]
fn a_closure_larger_than_half_its_stack_is_refused_at_spawn() {
    let rt = support::rt(1);
    // From the test's own thread (2 MiB of stack): the spawner's frames copy the capture too.
    let _entered = rt.enter();
    let big = [7u8; 64 << 10];
    let refused = corio::Builder::new()
        .stack_size(64 << 10)
        .spawn(move || big.iter().map(|&b| u64::from(b)).sum::<u64>())
        .map(|h| h.join());
    let err = refused.expect_err("a 64 KiB closure was accepted for a 64 KiB stack");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("does not fit in half"), "{err}");
}
