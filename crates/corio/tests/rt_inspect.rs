//! Looking at a running runtime (DESIGN.md decision 8): `Handle::tasks` lists the live tasks
//! with their kind, state, name, worker and spawn location, and the scheduler trace
//! (`Builder::sched_trace`, `CORIO_SCHEDTRACE`) writes the counters, and the tasks, to stderr
//! at its period and stops with its runtime.
//!
//! The trace's cases run in a child process (this test binary, re-executed with
//! `CORIO_RT_CHILD` set to the case's name), because they read stderr and set the environment.

mod support;

use std::os::unix::process::CommandExt;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use corio::{TaskInfo, TaskKind, TaskState};
use support::{threads_named, wait_until, within};

const CHILD_ENV: &str = "CORIO_RT_CHILD";
const LIMIT: Duration = Duration::from_secs(60);

fn find(handle: &corio::Handle, id: u64) -> Option<TaskInfo> {
    handle.tasks().into_iter().find(|t| t.id == id)
}

/// Waits until task `id` is listed in `state`, and returns what the list says of it.
#[track_caller]
fn listed_as(handle: &corio::Handle, id: u64, state: TaskState) -> TaskInfo {
    let mut seen = None;
    wait_until(&format!("task {id} is listed as {state}"), || {
        seen = find(handle, id);
        seen.as_ref().is_some_and(|t| t.state == state)
    });
    seen.unwrap()
}

#[test]
fn tasks_lists_each_kind_with_its_state_name_worker_and_spawn_site() {
    within(LIMIT, || {
        // No hog report for the spinner below, which spins on purpose.
        let rt = corio::Runtime::builder()
            .workers(2)
            .hog_report(false)
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        let _entered = rt.enter();

        // A stackful coroutine waiting in a channel receive, and a stackless task waiting on
        // the same kind of channel.
        let (wake_coroutine, coroutine_rx) = corio::chan::bounded::<()>(0);
        let coroutine = corio::Builder::new()
            .name("waiter")
            .spawn(move || coroutine_rx.recv().is_ok())
            .unwrap();
        let coroutine_line = line!() - 2; // the `.spawn` line
        let (wake_task, task_rx) = corio::chan::bounded::<()>(0);
        let task = corio::spawn(async move { task_rx.recv_async().await.is_ok() });
        let task_line = line!() - 1;

        // A coroutine that spins until told to stop, without a runtime call: running.
        let stop = Arc::new(AtomicBool::new(false));
        // Stops it however this test ends, so that a failed assertion fails rather than hangs
        // in the runtime's drop.
        struct StopOnDrop(Arc<AtomicBool>);
        impl Drop for StopOnDrop {
            fn drop(&mut self) {
                self.0.store(true, SeqCst);
            }
        }
        let _stop_on_drop = StopOnDrop(stop.clone());
        let started = Arc::new(AtomicBool::new(false));
        let spinner = corio::go({
            let (stop, started) = (stop.clone(), started.clone());
            move || {
                started.store(true, SeqCst);
                while !stop.load(SeqCst) {
                    std::hint::spin_loop();
                }
            }
        });
        // A closure of the blocking pool, waiting on a std channel: running (on the pool).
        let (release_pool, pool_rx) = std::sync::mpsc::channel::<()>();
        let pool = corio::spawn_blocking(move || pool_rx.recv().is_ok());

        let info = listed_as(&handle, coroutine.id(), TaskState::Waiting);
        assert_eq!(info.kind, TaskKind::Stackful);
        assert_eq!(info.name.as_deref(), Some("waiter"));
        assert!(info.worker.is_some_and(|w| w < 2), "{info}");
        assert_eq!(info.location.file(), file!());
        assert_eq!(info.location.line(), coroutine_line, "{info}");
        let line = info.to_string();
        assert!(
            line.starts_with(&format!(
                "task {} \"waiter\" stackful, waiting, worker ",
                info.id
            )) && line.ends_with(&format!("spawned at {}", info.location)),
            "{line}"
        );

        let info = listed_as(&handle, task.id(), TaskState::Waiting);
        assert_eq!(info.kind, TaskKind::Stackless);
        assert_eq!(info.name, None);
        assert_eq!(info.worker, None, "a stackless task is pinned to no worker");
        assert_eq!(info.location.line(), task_line, "{info}");

        wait_until("the spinner runs", || started.load(SeqCst));
        let info = listed_as(&handle, spinner.id(), TaskState::Running);
        assert_eq!(info.kind, TaskKind::Stackful);
        let info = listed_as(&handle, pool.id(), TaskState::Running);
        assert_eq!(info.kind, TaskKind::Blocking);

        // Each leaves the list once it has finished and its handle took the output.
        wake_coroutine.send(()).unwrap();
        wake_task.send(()).unwrap();
        stop.store(true, SeqCst);
        release_pool.send(()).unwrap();
        assert!(coroutine.join().unwrap());
        assert!(task.join().unwrap());
        spinner.join().unwrap();
        assert!(pool.join().unwrap());
        wait_until("every task left the list", || handle.tasks().is_empty());
    });
}

#[test]
fn a_task_spawned_and_not_yet_run_is_runnable_and_the_caller_running() {
    within(LIMIT, || {
        let rt = corio::Runtime::builder().workers(1).build().unwrap();
        let (me, child) = rt.run(|| {
            let child = corio::go(|| ());
            // One worker, and it is running this coroutine: the child waits in the queue.
            let tasks = corio::Handle::current().tasks();
            let me = tasks
                .iter()
                .find(|t| t.id == corio::current().id())
                .cloned();
            let child_info = tasks.iter().find(|t| t.id == child.id()).cloned();
            child.join().unwrap();
            (me.unwrap(), child_info.unwrap())
        });
        assert_eq!(me.state, TaskState::Running, "{me}");
        assert_eq!(me.worker, Some(0), "{me}");
        assert_eq!(child.state, TaskState::Runnable, "{child}");
        assert_eq!(
            child.worker, None,
            "a coroutine not yet started has no home: {child}"
        );
    });
}

/// Whether this process is the child started for the case `name`.
fn child_case(name: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|case| case == name)
}

/// Runs the test `name` of this binary in a child process with `env` set, and returns its
/// output.
fn run_in_child(name: &str, env: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().expect("test binary path");
    let mut command = Command::new(exe);
    command
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, name)
        .env_remove("CORIO_SCHEDTRACE")
        .env_remove("CORIO_DUMP_ON_SIGQUIT");
    for (key, value) in env {
        command.env(key, value);
    }
    // The child starts with SIGQUIT at its default action, whatever this process inherited (a
    // shell without job control starts background jobs, such as a CI run, with it ignored).
    // SAFETY: `signal` is async-signal-safe, as code between fork and exec must be.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    command.output().expect("spawn the test binary")
}

fn stderr_of(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "child failed:\n{err}");
    err
}

/// The child's program: a runtime with a named coroutine waiting for a while, so that the
/// trace has a task to list; then the runtime is dropped, and no trace thread may remain.
fn traced_program(builder: &mut corio::RuntimeBuilder) {
    let rt = builder.thread_name("traced").workers(2).build().unwrap();
    let sleeper = rt.handle().go(|| corio::sleep(Duration::from_millis(300)));
    sleeper.join().unwrap();
    // The trace thread is the runtime's: it ends with it.
    drop(rt);
    assert!(
        threads_named("traced").is_empty(),
        "threads left after the runtime's drop: {:?}",
        threads_named("traced")
    );
}

#[test]
fn the_environment_variable_traces_counters_and_tasks_until_the_runtime_ends() {
    const NAME: &str = "the_environment_variable_traces_counters_and_tasks_until_the_runtime_ends";
    if child_case(NAME) {
        traced_program(&mut corio::Runtime::builder());
        return;
    }
    let err = stderr_of(&run_in_child(NAME, &[("CORIO_SCHEDTRACE", "20,tasks")]));
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("corio SCHED "))
        .collect();
    assert!(
        lines.len() >= 2,
        "fewer than 2 trace lines in 300 ms:\n{err}"
    );
    let first = lines[0];
    for field in [
        "ms: workers=2 ",
        " unparked=",
        " live=",
        " global=",
        " queues=[",
        " spawned=",
        " polls=[",
        " steals=",
        " parks=",
        " handoffs=",
        " io_polls=",
    ] {
        assert!(first.contains(field), "no {field:?} in {first:?}");
    }
    assert!(
        err.lines()
            .any(|l| l.starts_with("  task ") && l.contains(" stackful, waiting, ")),
        "no task line for the sleeping coroutine:\n{err}"
    );
}

#[test]
fn the_builder_overrides_the_environment_variable() {
    const NAME: &str = "the_builder_overrides_the_environment_variable";
    if child_case(NAME) {
        traced_program(corio::Runtime::builder().sched_trace(Duration::ZERO, false));
        return;
    }
    let err = stderr_of(&run_in_child(NAME, &[("CORIO_SCHEDTRACE", "10")]));
    assert!(
        !err.contains("corio SCHED"),
        "traced although turned off:\n{err}"
    );
}

#[test]
fn a_trace_from_the_builder_lists_no_tasks_unless_asked() {
    const NAME: &str = "a_trace_from_the_builder_lists_no_tasks_unless_asked";
    if child_case(NAME) {
        traced_program(corio::Runtime::builder().sched_trace(Duration::from_millis(20), false));
        return;
    }
    let err = stderr_of(&run_in_child(NAME, &[]));
    assert!(err.contains("corio SCHED "), "no trace:\n{err}");
    assert!(
        !err.contains("  task "),
        "tasks listed though not asked:\n{err}"
    );
}

#[test]
fn a_malformed_environment_variable_is_an_error_from_build() {
    const NAME: &str = "a_malformed_environment_variable_is_an_error_from_build";
    if child_case(NAME) {
        let e = corio::Runtime::builder().workers(1).build().unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("CORIO_SCHEDTRACE"), "{e}");
        return;
    }
    stderr_of(&run_in_child(NAME, &[("CORIO_SCHEDTRACE", "1s")]));
}

/// SIGQUIT's action as the process has it now.
fn sigquit_action() -> usize {
    // SAFETY: a zeroed `sigaction` is a valid out-parameter; a null new action only queries.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        assert_eq!(
            libc::sigaction(libc::SIGQUIT, std::ptr::null(), &mut current),
            0
        );
        current.sa_sigaction
    }
}

#[test]
fn sigquit_dumps_every_runtimes_tasks_and_ends_the_program_as_sigquit_does() {
    use std::os::unix::process::ExitStatusExt;
    const NAME: &str = "sigquit_dumps_every_runtimes_tasks_and_ends_the_program_as_sigquit_does";
    if child_case(NAME) {
        // No core file from this test's ending.
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: sets this process's core-size limit from a valid struct.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) };
        let one = corio::Runtime::builder().workers(1).build().unwrap();
        let two = corio::Runtime::builder().workers(2).build().unwrap();
        let (_tx, rx) = corio::chan::bounded::<()>(0);
        let _entered = two.enter();
        let waiter = corio::Builder::new()
            .name("stuck")
            .spawn(move || rx.recv())
            .unwrap();
        wait_until("the coroutine waits", || {
            find(two.handle(), waiter.id()).is_some_and(|t| t.state == TaskState::Waiting)
        });
        // SAFETY: sends SIGQUIT to this process.
        unsafe { libc::kill(libc::getpid(), libc::SIGQUIT) };
        std::thread::sleep(Duration::from_secs(50));
        drop(one);
        panic!("SIGQUIT did not end the program");
    }
    let out = run_in_child(NAME, &[("CORIO_DUMP_ON_SIGQUIT", "1")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGQUIT),
        "the child did not end by SIGQUIT ({:?}):\n{err}",
        out.status
    );
    assert!(
        err.contains("corio: SIGQUIT: 2 runtime(s)"),
        "no dump header:\n{err}"
    );
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("corio SCHED "))
            .count(),
        2,
        "one counter line per runtime:\n{err}"
    );
    assert!(
        err.lines().any(
            |l| l.starts_with("  task ") && l.contains(" \"stuck\" stackful, waiting, worker ")
        ),
        "no line for the waiting coroutine:\n{err}"
    );
}

#[test]
fn without_the_variable_sigquit_keeps_its_default_action() {
    const NAME: &str = "without_the_variable_sigquit_keeps_its_default_action";
    if child_case(NAME) {
        let rt = corio::Runtime::builder().workers(1).build().unwrap();
        rt.run(|| ());
        assert_eq!(sigquit_action(), libc::SIG_DFL);
        return;
    }
    stderr_of(&run_in_child(NAME, &[]));
}

#[test]
fn a_programs_own_sigquit_handler_is_kept() {
    const NAME: &str = "a_programs_own_sigquit_handler_is_kept";
    if child_case(NAME) {
        // SAFETY: ignoring SIGQUIT in this child process.
        unsafe { libc::signal(libc::SIGQUIT, libc::SIG_IGN) };
        let rt = corio::Runtime::builder().workers(1).build().unwrap();
        rt.run(|| ());
        assert_eq!(sigquit_action(), libc::SIG_IGN);
        return;
    }
    let err = stderr_of(&run_in_child(NAME, &[("CORIO_DUMP_ON_SIGQUIT", "1")]));
    assert!(
        err.contains("SIGQUIT is not at its default action"),
        "no word about the kept handler:\n{err}"
    );
}
