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
