//! Blocking work: `spawn_blocking` (the blocking pool) and `corio::blocking` (run a blocking
//! call in place, telling the scheduler, like Go's entersyscall/exitsyscall).

#[macro_use]
mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use support::{EVENTUALLY, EXPECTED, payload_text, quiet_expected_panics, within};

rt_common! {
    #[test]
    fn spawn_blocking_returns_its_result_to_join_and_to_await() {
        let rt = rt();
        within(EVENTUALLY, move || {
            // Awaited from a future on a plain thread.
            assert_eq!(rt.block_on(async { corio::spawn_blocking(|| 6 * 7).await.unwrap() }), 42);
            // Joined in blocking style from a coroutine.
            assert_eq!(rt.run(|| corio::spawn_blocking(|| 1 + 1).join().unwrap()), 2);
            // Awaited from a task.
            let v = rt.spawn(async { corio::spawn_blocking(|| 3).await.unwrap() }).join().unwrap();
            assert_eq!(v, 3);
            // Joined from a plain thread that entered the runtime.
            let _entered = rt.enter();
            assert_eq!(corio::spawn_blocking(|| 4).join().unwrap(), 4);
        });
    }

    #[test]
    fn spawn_blocking_runs_on_a_pool_thread_not_a_worker() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let name = rt
                .run(|| corio::spawn_blocking(|| std::thread::current().name().map(String::from)).join())
                .unwrap();
            assert_eq!(name.as_deref(), Some("corio-blocking"));
        });
    }

    #[test]
    fn a_panic_in_spawn_blocking_is_a_join_error_with_its_payload() {
        quiet_expected_panics();
        let rt = rt();
        within(EVENTUALLY, move || {
            let err = rt
                .run(|| corio::spawn_blocking(|| -> u32 { panic!("{EXPECTED} pool boom") }).join())
                .unwrap_err();
            assert!(err.is_panic());
            assert!(payload_text(&*err.into_panic()).contains("pool boom"));
            // The pool keeps serving.
            assert_eq!(rt.run(|| corio::spawn_blocking(|| 5).join().unwrap()), 5);
        });
    }

    #[test]
    fn spawn_blocking_closures_may_use_blocking_style_corio_calls() {
        let rt = rt();
        within(EVENTUALLY, move || {
            // A pool thread is a plain thread as far as blocking goes: sleeping, block_on and
            // join must park it, as they do on any thread outside a task.
            let v = rt
                .run(|| {
                    corio::spawn_blocking(|| {
                        corio::sleep(Duration::from_millis(1));
                        let a = corio::block_on(async { 1 });
                        let b = corio::go(|| 2).join().unwrap();
                        a + b
                    })
                    .join()
                })
                .unwrap();
            assert_eq!(v, 3);
        });
    }

    #[test]
    fn many_spawn_blocking_calls_never_exceed_max_blocking_threads() {
        let rt = corio::Runtime::builder()
            .workers(WORKERS)
            .hog_report(false)
            .max_blocking_threads(2)
            .build()
            .unwrap();
        within(EVENTUALLY, move || {
            let running = Arc::new(AtomicUsize::new(0));
            let most = Arc::new(AtomicUsize::new(0));
            let handles: Vec<_> = (0..10)
                .map(|i| {
                    let (running, most) = (running.clone(), most.clone());
                    let _entered = rt.enter();
                    corio::spawn_blocking(move || {
                        let now = running.fetch_add(1, SeqCst) + 1;
                        most.fetch_max(now, SeqCst);
                        std::thread::sleep(Duration::from_millis(5));
                        running.fetch_sub(1, SeqCst);
                        i
                    })
                })
                .collect();
            let sum: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(sum, 45);
            assert!(most.load(SeqCst) <= 2, "{} pool threads at once", most.load(SeqCst));
        });
    }

    #[test]
    fn blocking_runs_the_closure_on_the_calling_coroutines_thread() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let before = std::thread::current().id();
                let inside = corio::blocking(|| std::thread::current().id());
                let after = std::thread::current().id();
                assert_eq!(before, inside);
                assert_eq!(before, after);
                // Its result and a panic pass through unchanged.
                assert_eq!(corio::blocking(|| 9), 9);
            })
        });
    }
}

#[test]
fn blocking_outside_a_runtime_just_runs_the_closure() {
    let here = std::thread::current().id();
    assert_eq!(corio::blocking(|| std::thread::current().id()), here);
}

#[test]
fn a_panic_inside_blocking_unwinds_to_its_caller() {
    quiet_expected_panics();
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        let caught = rt.run(|| {
            let r =
                std::panic::catch_unwind(|| corio::blocking(|| panic!("{EXPECTED} in blocking")));
            // The worker is out of its blocking state again: coroutines still run.
            corio::go(|| ()).join().unwrap();
            r.is_err()
        });
        assert!(caught);
    });
}

/// While one coroutine sits in `corio::blocking`, the work queued behind it on its worker —
/// coroutines it spawned just before (still unstarted, so movable) and tasks — is run by the
/// other worker (directly, or after sysmon's hand-off). The blocking call waits for that work to
/// finish, with a generous limit: if the work were stuck behind it, the limit would expire and
/// the test fail. Then the blocked coroutine continues on its own thread.
#[test]
fn while_a_coroutine_blocks_the_work_queued_behind_it_runs_on_the_other_worker() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        rt.run(|| {
            const N: usize = 20;
            let home = std::thread::current().id();
            let (tx, rx) = mpsc::channel();
            let others: Vec<_> = (0..N)
                .map(|i| {
                    let tx = tx.clone();
                    if i % 2 == 0 {
                        corio::go(move || {
                            for _ in 0..5 {
                                corio::yield_now();
                            }
                            corio::sleep(Duration::from_millis(1));
                            tx.send(std::thread::current().id()).unwrap();
                        })
                    } else {
                        corio::spawn(async move {
                            corio::yield_now_async().await;
                            tx.send(std::thread::current().id()).unwrap();
                        })
                    }
                })
                .collect();
            let finished_while_blocked = corio::blocking(|| {
                let mut n = 0;
                let deadline = Instant::now() + Duration::from_secs(10);
                while n < N {
                    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                        Ok(thread) => {
                            assert_ne!(thread, home, "ran on the blocked worker's thread");
                            n += 1;
                        }
                        Err(_) => break,
                    }
                }
                n
            });
            assert_eq!(
                finished_while_blocked, N,
                "work stayed stuck behind a blocking call"
            );
            assert_eq!(std::thread::current().id(), home);
            for h in others {
                h.join().unwrap();
            }
        })
    });
}

/// The same with a thread that sleeps: one coroutine is blocked in
/// `blocking(|| std::thread::sleep(200 ms))` — repeated until the others are done, at most
/// 10 s — while coroutines spawned from a plain thread run on the other worker. Every one of
/// them finishes while it is still blocked.
#[test]
fn coroutines_keep_running_while_one_sleeps_inside_blocking() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        const N: usize = 10;
        let finished = Arc::new(AtomicUsize::new(0));
        let blocking = Arc::new(AtomicBool::new(false));
        let (f, b) = (finished.clone(), blocking.clone());
        let blocked = rt.go(move || {
            let home = std::thread::current().id();
            b.store(true, SeqCst);
            let start = Instant::now();
            let seen = corio::blocking(|| {
                loop {
                    std::thread::sleep(Duration::from_millis(200));
                    let seen = f.load(SeqCst);
                    if seen == N || start.elapsed() > Duration::from_secs(10) {
                        return seen;
                    }
                }
            });
            assert!(start.elapsed() >= Duration::from_millis(200));
            assert_eq!(std::thread::current().id(), home);
            seen
        });
        support::wait_until("the coroutine blocks", || blocking.load(SeqCst));
        let handles: Vec<_> = (0..N)
            .map(|_| {
                let f = finished.clone();
                rt.go(move || {
                    corio::yield_now();
                    corio::sleep(Duration::from_millis(1));
                    f.fetch_add(1, SeqCst);
                })
            })
            .collect();
        let seen_while_blocked = blocked.join().unwrap();
        assert_eq!(
            seen_while_blocked, N,
            "coroutines stalled while another was blocked"
        );
        for h in handles {
            h.join().unwrap();
        }
    });
}

/// With one pool thread busy, a queued `spawn_blocking` closure that is aborted never runs and
/// is dropped; the running one cannot be interrupted and returns its value.
#[test]
fn aborting_a_queued_spawn_blocking_drops_its_closure_without_running_it() {
    let rt = corio::Runtime::builder()
        .workers(1)
        .hog_report(false)
        .max_blocking_threads(1)
        .build()
        .unwrap();
    within(EVENTUALLY, move || {
        let _entered = rt.enter();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (running_tx, running_rx) = mpsc::channel::<()>();
        let busy = corio::spawn_blocking(move || {
            running_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            1
        });
        running_rx.recv().unwrap();
        let drops = support::Drops::new();
        let ran = Arc::new(AtomicBool::new(false));
        let (token, r) = (drops.token(), ran.clone());
        let queued = corio::spawn_blocking(move || {
            let _token = token;
            r.store(true, SeqCst);
            2
        });
        queued.abort();
        busy.abort(); // running: too late to stop it
        release_tx.send(()).unwrap();
        assert!(queued.join().unwrap_err().is_cancelled());
        assert!(!ran.load(SeqCst));
        assert_eq!(drops.dropped(), 1);
        match busy.join() {
            Ok(v) => assert_eq!(v, 1),
            Err(e) => panic!("a running blocking closure was reported as {e:?}"),
        }
    });
}
