//! `Builder::run_here`: a runtime whose first worker is the calling thread, for as long as its
//! main coroutine runs; with one worker, sysmon on a descriptor table of its own
//! (`runtime/fd_table.rs`).

mod support;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use support::{EVENTUALLY, within};

fn builder(workers: usize, name: &str) -> corio::RuntimeBuilder {
    let mut b = corio::Runtime::builder();
    b.workers(workers).hog_report(false).thread_name(name);
    b
}

#[test]
fn the_main_coroutine_and_what_it_spawns_run_on_the_calling_thread_with_one_worker() {
    within(EVENTUALLY, || {
        let caller = std::thread::current().id();
        let (main_here, coroutine_here, task_here) = builder(1, "rh-thread")
            .run_here(move || {
                let main_here = std::thread::current().id() == caller;
                let co = corio::go(move || std::thread::current().id() == caller);
                let task = corio::spawn(async move { std::thread::current().id() == caller });
                corio::sleep(Duration::from_millis(5));
                (main_here, co.join().unwrap(), task.join().unwrap())
            })
            .unwrap();
        assert!(main_here, "the main coroutine runs on the caller");
        assert!(
            coroutine_here,
            "a coroutine it spawned too: the only worker"
        );
        assert!(task_here, "and a task");
        // No thread of the runtime is left.
        support::wait_until("the runtime's threads exit", || {
            support::threads_named("rh-thread").is_empty()
        });
    });
}

#[test]
fn with_two_workers_main_runs_on_the_caller_and_others_also_on_the_second_worker() {
    within(EVENTUALLY, || {
        let caller = std::thread::current().id();
        builder(2, "rh-two")
            .run_here(move || {
                assert_eq!(std::thread::current().id(), caller);
                // Batches of busy coroutines until the second worker has taken one.
                loop {
                    let batch: Vec<_> = (0..8)
                        .map(|_| {
                            corio::go(|| {
                                let start = std::time::Instant::now();
                                while start.elapsed() < Duration::from_millis(1) {
                                    corio::yield_now();
                                }
                                std::thread::current().id()
                            })
                        })
                        .collect();
                    if batch.into_iter().any(|h| h.join().unwrap() != caller) {
                        break;
                    }
                }
                assert_eq!(std::thread::current().id(), caller, "main never moves");
            })
            .unwrap();
    });
}

#[test]
fn run_here_leaves_no_descriptor_open() {
    // Alone in a child process: the other tests of this binary open descriptors meanwhile.
    const NAME: &str = "run_here_leaves_no_descriptor_open";
    if std::env::var("CORIO_RT_CHILD").as_deref() != Ok(NAME) {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
            .env("CORIO_RT_CHILD", NAME)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "the child failed:\n{err}");
        assert!(
            err.contains("fds checked"),
            "the child ran the check:\n{err}"
        );
        return;
    }
    within(EVENTUALLY, || {
        let before = support::open_fds();
        builder(1, "rh-leak")
            .run_here(|| {
                let listener = corio::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                // Left open: the shutdown closes what the runtime's sockets hold.
                corio::go(move || listener.accept().map(|_| ()));
                let _client = corio::net::TcpStream::connect(addr).unwrap();
                corio::sleep(Duration::from_millis(5));
            })
            .unwrap();
        assert_eq!(support::open_fds(), before);
        eprintln!("fds checked");
    });
}

#[test]
fn coroutines_left_when_main_returns_are_cancelled_and_unwound_before_run_here_returns() {
    within(EVENTUALLY, || {
        let dropped = Arc::new(AtomicBool::new(false));
        let d = dropped.clone();
        let v = builder(1, "rh-cancel")
            .run_here(move || {
                struct Flag(Arc<AtomicBool>);
                impl Drop for Flag {
                    fn drop(&mut self) {
                        self.0.store(true, SeqCst);
                    }
                }
                corio::go(move || {
                    let _flag = Flag(d);
                    corio::sleep(Duration::from_secs(3600));
                });
                corio::sleep(Duration::from_millis(5)); // let it start and suspend
                7
            })
            .unwrap();
        assert_eq!(v, 7);
        assert!(
            dropped.load(SeqCst),
            "the sleeper's stack was unwound on its thread before run_here returned"
        );
    });
}

#[test]
fn a_panic_in_main_is_resumed_on_the_caller_after_the_shutdown() {
    support::quiet_expected_panics();
    within(EVENTUALLY, || {
        let msg = support::panic_message(|| {
            let _ = builder(1, "rh-panic").run_here(|| -> u32 { panic!("main failed") });
        });
        assert!(msg.contains("main failed"), "{msg}");
        support::wait_until("the runtime's threads exit", || {
            support::threads_named("rh-panic").is_empty()
        });
    });
}

#[test]
fn other_threads_spawn_onto_it_through_its_handle() {
    within(EVENTUALLY, || {
        let v = builder(1, "rh-handle")
            .run_here(|| {
                let handle = corio::Handle::current();
                // A blocking-pool thread: outside the runtime's workers, and joined without
                // blocking the only one.
                corio::spawn_blocking(move || {
                    let a = handle.go(|| 20);
                    let b = handle.spawn(async { 22 });
                    a.join().unwrap() + b.join().unwrap()
                })
                .join()
                .unwrap()
            })
            .unwrap();
        assert_eq!(v, 42);
    });
}

#[test]
fn run_here_inside_a_task_panics_with_advice() {
    support::quiet_expected_panics();
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let msg = rt.run(|| {
            support::panic_message(|| {
                let _ = builder(1, "rh-nested").run_here(|| ());
            })
        });
        assert!(msg.contains("run_here"), "{msg}");
    });
}

/// The names of the descriptors in thread `tid`'s table (`/proc/self/task/<tid>/fd`): where
/// each link points.
fn thread_fds(tid: u32) -> Vec<String> {
    let dir = format!("/proc/self/task/{tid}/fd");
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

fn sysmon_fds(prefix: &str) -> Vec<String> {
    let find = || {
        support::threads_named(prefix)
            .into_iter()
            .find(|t| t.comm.ends_with("-sysmon"))
    };
    // A new thread names itself once it runs.
    support::wait_until("sysmon has its name", || find().is_some());
    thread_fds(find().unwrap().tid)
}

#[test]
fn with_one_worker_sysmon_holds_none_of_the_programs_files() {
    within(EVENTUALLY, || {
        // Opened before the runtime, and while it runs: neither may stay open in sysmon.
        let before = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let before_addr = before.local_addr().unwrap();
        let (fds, refused) = builder(1, "rh-fds")
            .run_here(move || {
                let during = corio::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let fds = sysmon_fds("rh-fds");
                // Closing the listener closes the socket: sysmon has no copy keeping it open.
                drop(before);
                let refused = std::net::TcpStream::connect(before_addr).is_err();
                drop(during);
                (fds, refused)
            })
            .unwrap();
        assert!(
            refused,
            "a listener the program closed still accepts connections"
        );
        assert!(
            fds.iter().all(|f| !f.starts_with("socket:")),
            "sysmon's table holds the program's sockets: {fds:?}"
        );
        // The driver's three, and /dev/null as 0-2 (not the program's stdio).
        let driver = fds.iter().filter(|f| f.starts_with("anon_inode:")).count();
        assert_eq!(driver, 3, "{fds:?}");
        assert_eq!(fds.len(), 6, "{fds:?}");
        assert_eq!(
            fds.iter().filter(|f| *f == "/dev/null").count(),
            3,
            "{fds:?}"
        );
    });
}

#[test]
fn with_two_workers_sysmon_shares_the_programs_table() {
    // sysmon may have to start spare workers, which must run on the program's table.
    within(EVENTUALLY, || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let fds = builder(2, "rh-sh")
            .run_here(|| sysmon_fds("rh-sh"))
            .unwrap();
        let ours = thread_fds(support::current_tid().unwrap());
        drop(listener);
        assert!(
            fds.iter().any(|f| f.starts_with("socket:")),
            "sysmon shares the table: {fds:?} (ours: {ours:?})"
        );
    });
}

#[test]
fn a_tcp_echo_runs_on_a_one_worker_run_here_runtime() {
    within(EVENTUALLY, || {
        let total = builder(1, "rh-echo")
            .run_here(|| {
                let listener = corio::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                corio::go(move || {
                    loop {
                        let (mut s, _) = listener.accept().unwrap();
                        corio::go(move || {
                            let mut buf = [0u8; 64];
                            loop {
                                match s.read(&mut buf) {
                                    Ok(0) | Err(_) => return,
                                    Ok(n) => s.write_all(&buf[..n]).unwrap(),
                                }
                            }
                        });
                    }
                });
                let clients: Vec<_> = (0..50u8)
                    .map(|i| {
                        corio::go(move || {
                            let mut c = corio::net::TcpStream::connect(addr).unwrap();
                            let mut got = 0;
                            for round in 0..20u8 {
                                let msg = [i ^ round; 64];
                                c.write_all(&msg).unwrap();
                                let mut back = [0u8; 64];
                                c.read_exact(&mut back).unwrap();
                                assert_eq!(back, msg);
                                got += 64;
                            }
                            got
                        })
                    })
                    .collect();
                clients
                    .into_iter()
                    .map(|c| c.join().unwrap())
                    .sum::<usize>()
            })
            .unwrap();
        assert_eq!(total, 50 * 20 * 64);
    });
}
