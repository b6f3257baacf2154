//! Every way to spawn names its caller and is counted, from a worker and from elsewhere.
//!
//! The spawn paths borrow the runtime from the running task and take their task's reference
//! to the runtime through the spawning worker's anchor (docs/scheduler.md, "What two workers
//! shared at every spawn"). These tests pin what that must not change: the spawn site a task
//! reports (`corio::current().location()`) is the user's call, not a line inside corio, and
//! `Metrics::spawned` counts every spawn once, wherever it was made.

#[macro_use]
mod support;

use std::panic::Location;

use support::{EVENTUALLY, within};

/// The spawn site the task reports, and the site of the call that spawned it.
type Sites = (&'static Location<'static>, u32);

fn assert_here(what: &str, (reported, line): Sites) {
    assert!(
        reported.file().ends_with("rt_spawn_paths.rs") && reported.line() == line,
        "{what}: the task reports {reported}, spawned at line {line} of this file"
    );
}

fn at() -> &'static Location<'static> {
    corio::current().location()
}

#[test]
fn every_spawn_path_reports_its_callers_line() {
    let rt = corio::Runtime::builder().workers(2).build().unwrap();
    within(EVENTUALLY, move || {
        let from_worker: Vec<(&str, Sites)> = rt.run(|| {
            let (h, l) = (corio::go(at), line!());
            let go = (h.join().unwrap(), l);
            let (h, l) = (corio::spawn(async { at() }), line!());
            let spawn = (h.join().unwrap(), l);
            let (h, l) = (corio::Builder::new().spawn(at).unwrap(), line!());
            let builder = (h.join().unwrap(), l);
            let f = async { at() };
            let (h, l) = (corio::Builder::new().spawn_async(f).unwrap(), line!());
            let builder_async = (h.join().unwrap(), l);
            let (h, l) = (corio::spawn_local(async { at() }), line!());
            let local = (h.join().unwrap(), l);
            let (h, l) = (corio::go_local(at), line!());
            let go_local = (h.join().unwrap(), l);
            vec![
                ("corio::go", go),
                ("corio::spawn", spawn),
                ("Builder::spawn", builder),
                ("Builder::spawn_async", builder_async),
                ("corio::spawn_local", local),
                ("corio::go_local", go_local),
            ]
        });
        for (what, sites) in from_worker {
            assert_here(what, sites);
        }
        // From this plain thread: through the runtime, and through an entered context.
        let (h, l) = (rt.go(at), line!());
        assert_here("Runtime::go", (rt.block_on(h).unwrap(), l));
        let (h, l) = (rt.spawn(async { at() }), line!());
        assert_here("Runtime::spawn", (rt.block_on(h).unwrap(), l));
        let _entered = rt.enter();
        let (h, l) = (corio::spawn(async { at() }), line!());
        assert_here("corio::spawn, entered", (rt.block_on(h).unwrap(), l));
    });
}

#[test]
fn metrics_count_every_spawn_once_wherever_it_is_made() {
    let rt = corio::Runtime::builder().workers(2).build().unwrap();
    within(EVENTUALLY, move || {
        let before = rt.metrics().spawned;
        // From the workers: 1 main coroutine, then 10 + 10 + 3, and each of the first 10
        // coroutines spawns a task of its own (on whichever worker it runs).
        rt.run(|| {
            let coroutines: Vec<_> = (0..10)
                .map(|_| corio::go(|| corio::spawn(async {}).join().unwrap()))
                .collect();
            let tasks: Vec<_> = (0..10).map(|_| corio::spawn(async {})).collect();
            let blocking: Vec<_> = (0..3).map(|_| corio::spawn_blocking(|| {})).collect();
            for h in coroutines {
                h.join().unwrap();
            }
            for h in tasks {
                h.join().unwrap();
            }
            for h in blocking {
                h.join().unwrap();
            }
        });
        assert_eq!(rt.metrics().spawned, before + 1 + 10 + 10 + 10 + 3);
        // From this thread: 4 + 4 + 2.
        let from_here: Vec<_> = (0..4).map(|_| rt.spawn(async {})).collect();
        let coroutines: Vec<_> = (0..4).map(|_| rt.go(|| {})).collect();
        let blocking: Vec<_> = (0..2).map(|_| rt.spawn_blocking(|| {})).collect();
        for h in from_here {
            rt.block_on(h).unwrap();
        }
        for h in coroutines {
            rt.block_on(h).unwrap();
        }
        for h in blocking {
            rt.block_on(h).unwrap();
        }
        assert_eq!(rt.metrics().spawned, before + 34 + 10);
    });
}

#[test]
fn a_task_spawned_through_a_handle_after_the_runtime_is_gone_is_refused_cleanly() {
    let rt = corio::Runtime::builder().workers(1).build().unwrap();
    let handle = rt.handle().clone();
    // A task that outlives nothing: the runtime is dropped with the handle still held.
    let done = handle.spawn(async { 7 });
    assert_eq!(rt.block_on(done).unwrap(), 7);
    drop(rt);
    within(EVENTUALLY, move || {
        let late = handle.spawn(async { 8 });
        let err = corio::block_on(late).unwrap_err();
        assert!(err.is_cancelled(), "{err}");
    });
}

/// A runtime whose hook holds a token of `drops`: the token is dropped when the runtime's
/// last reference goes (its settings go with it), so `drops.dropped() == 1` says it was freed.
fn freed_when_dropped(workers: usize, drops: &support::Drops) -> corio::Runtime {
    let token = drops.token();
    corio::Runtime::builder()
        .workers(workers)
        .hog_report(false)
        .on_thread_start(move || {
            let _ = &token;
        })
        .build()
        .unwrap()
}

/// Each result is the task's output or a cancellation: nothing else, and nothing hangs.
fn assert_ran_or_cancelled(what: &str, result: Result<u32, corio::JoinError>) {
    match result {
        Ok(v) => assert_eq!(v, 7, "{what}"),
        Err(e) => assert!(e.is_cancelled(), "{what}: {e}"),
    }
}

#[test]
fn spawns_racing_the_runtimes_drop_run_or_are_cancelled_and_the_runtime_is_freed() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    within(EVENTUALLY * 2, || {
        for round in 0..20 {
            let drops = support::Drops::new();
            let rt = freed_when_dropped(2, &drops);
            let stop = Arc::new(AtomicBool::new(false));
            let spawned = Arc::new(AtomicUsize::new(0));
            // Two plain threads spawn through handles (the runtime's outside anchor) while
            // the runtime is dropped under them.
            let spawners: Vec<_> = (0..2)
                .map(|_| {
                    let (handle, stop, spawned) =
                        (rt.handle().clone(), stop.clone(), spawned.clone());
                    std::thread::spawn(move || {
                        let mut handles = Vec::new();
                        while !stop.load(SeqCst) {
                            handles.push(("spawn", handle.spawn(async { 7 })));
                            handles.push(("go", handle.go(|| 7)));
                            handles.push(("spawn_blocking", handle.spawn_blocking(|| 7)));
                            spawned.fetch_add(3, SeqCst);
                            std::thread::yield_now();
                        }
                        // After the drop: refused (a new anchor each, the runtime's is gone).
                        handles.push(("spawn after", handle.spawn(async { 7 })));
                        handles.push(("go after", handle.go(|| 7)));
                        handles
                    })
                })
                .collect();
            support::wait_until("the spawners are under way", || {
                spawned.load(SeqCst) >= 30 * (round % 4 + 1)
            });
            drop(rt);
            stop.store(true, SeqCst);
            for spawner in spawners {
                for (what, h) in spawner.join().unwrap() {
                    assert_ran_or_cancelled(what, h.join());
                }
            }
            // The handles, the tasks and the spawners' anchors are gone: so is the runtime.
            support::wait_until("the runtime is freed", || drops.dropped() == 1);
        }
    });
}

#[test]
fn spawns_from_destructors_the_runtimes_drop_runs_are_cancelled_and_the_runtime_is_freed() {
    use std::sync::mpsc;
    within(EVENTUALLY * 2, || {
        for workers in support::FLAVOURS {
            let drops = support::Drops::new();
            let rt = freed_when_dropped(workers, &drops);
            let (tx, rx) = mpsc::channel::<(&'static str, corio::JoinHandle<u32>)>();
            /// Spawns in its destructor (run by the runtime's drop) and sends the handles out.
            struct SpawnsOnDrop(
                &'static str,
                mpsc::Sender<(&'static str, corio::JoinHandle<u32>)>,
            );
            impl Drop for SpawnsOnDrop {
                fn drop(&mut self) {
                    let _ = self.1.send((self.0, corio::spawn(async { 7 })));
                    let _ = self.1.send((self.0, corio::go(|| 7)));
                    let _ = self.1.send((self.0, corio::spawn_blocking(|| 7)));
                }
            }
            let (started_tx, started_rx) = mpsc::channel();
            // A coroutine unwound on its worker, a future dropped by the thread that drops the
            // runtime, and one that never ran.
            let v = SpawnsOnDrop("coroutine", tx.clone());
            let s = started_tx.clone();
            rt.go(move || {
                let _v = v;
                s.send(()).unwrap();
                corio::sleep(std::time::Duration::from_secs(600));
            });
            let v = SpawnsOnDrop("future", tx.clone());
            let s = started_tx;
            rt.spawn(async move {
                let _v = v;
                s.send(()).unwrap();
                std::future::pending::<()>().await;
            });
            started_rx.recv().unwrap();
            started_rx.recv().unwrap();
            let v = SpawnsOnDrop("unstarted", tx);
            // Queued behind nothing runnable, but the drop may come first: either way its
            // destructor runs at the drop or when it is cancelled.
            rt.spawn(async move {
                let _v = v;
                std::future::pending::<()>().await;
            });
            drop(rt);
            let mut seen = 0;
            for (what, h) in rx.iter() {
                seen += 1;
                assert_ran_or_cancelled(what, h.join());
            }
            assert_eq!(seen, 9, "workers: {workers}");
            support::wait_until("the runtime is freed", || drops.dropped() == 1);
        }
    });
}

#[test]
fn a_blocking_closure_that_outlives_its_runtime_spawns_onto_it_cleanly() {
    use std::sync::mpsc;
    within(EVENTUALLY, || {
        let drops = support::Drops::new();
        let rt = freed_when_dropped(1, &drops);
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel::<()>();
        let closure = rt.spawn_blocking(move || {
            started_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            // The runtime was dropped meanwhile: this borrows it from this closure's task.
            let spawned = corio::spawn(async { 7 });
            let went = corio::go(|| 7);
            let blocking = corio::spawn_blocking(|| 7);
            [spawned, went, blocking].map(|h| h.join().map(|_| ()))
        });
        started_rx.recv().unwrap();
        drop(rt);
        go_tx.send(()).unwrap();
        for r in closure.join().unwrap() {
            assert!(r.unwrap_err().is_cancelled());
        }
        support::wait_until("the runtime is freed", || drops.dropped() == 1);
    });
}

#[test]
fn a_runtime_entered_inside_a_blocking_closure_is_the_one_its_spawns_use() {
    within(EVENTUALLY, || {
        let named = |name: &str| {
            corio::Runtime::builder()
                .workers(1)
                .hog_report(false)
                .thread_name(name)
                .build()
                .unwrap()
        };
        let pool = named("rt-pool");
        let other = std::sync::Arc::new(named("rt-other"));
        let (entered, rt) = (other.handle().clone(), other.clone());
        let thread_name = || std::thread::current().name().unwrap_or("").to_string();
        // `Handle::block_on` enters `other` on this blocking-pool thread of `pool`: spawns
        // inside it go to `other` (its docs), as they do inside `Runtime::enter`.
        let (in_block_on, in_enter) = pool
            .spawn_blocking(move || {
                let in_block_on = entered
                    .block_on(async move { corio::spawn(async move { thread_name() }).await })
                    .unwrap();
                let _entered = rt.enter();
                (in_block_on, corio::go(thread_name).join().unwrap())
            })
            .join()
            .unwrap();
        assert!(in_block_on.starts_with("rt-other-"), "ran on {in_block_on}");
        assert!(in_enter.starts_with("rt-other-"), "ran on {in_enter}");
    });
}

#[test]
fn a_spawn_onto_another_runtime_from_a_worker_is_counted_and_anchored_there() {
    within(EVENTUALLY, || {
        let drops = support::Drops::new();
        let x = freed_when_dropped(1, &drops);
        let y = corio::Runtime::builder()
            .workers(2)
            .hog_report(false)
            .build()
            .unwrap();
        let (x_before, y_before) = (x.metrics().spawned, y.metrics().spawned);
        let hx = x.handle().clone();
        // From a coroutine and a task of `y`, onto `x`: 2 + 2 spawns on `x`, and on `y` the
        // main coroutine and the task.
        let handles = y.run(move || {
            let from_task = corio::spawn({
                let hx = hx.clone();
                async move { [hx.spawn(async { 7 }), hx.go(|| 7)] }
            });
            let from_coroutine = [hx.spawn(async { 7 }), hx.go(|| 7)];
            let from_task = from_task.join().unwrap();
            [from_coroutine, from_task]
        });
        assert_eq!(y.metrics().spawned, y_before + 2);
        // `y` goes first: the tasks on `x` hold `x`, not `y`.
        drop(y);
        for h in handles.into_iter().flatten() {
            assert_eq!(h.join().unwrap(), 7);
        }
        assert_eq!(x.metrics().spawned, x_before + 4);
        drop(x);
        support::wait_until("x is freed", || drops.dropped() == 1);
    });
}
