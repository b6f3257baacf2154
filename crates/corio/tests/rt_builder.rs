//! Runtime builder options and handle methods: `on_thread_start`/`on_thread_stop`,
//! `thread_name`/`thread_name_fn`, `shutdown_timeout`/`shutdown_background`,
//! `Handle::spawn_blocking` and `Handle::block_on`. tokio's `tests/rt_threaded.rs`
//! (`start_stop_callbacks_called`) and `tests/rt_common.rs` (`shutdown_timeout`) are the
//! models.

#[macro_use]
mod support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use support::{Drops, EVENTUALLY, panic_message, wait_until, within};

/// A builder of `workers` workers with hog reports off (see `support::rt`).
fn builder(workers: usize) -> corio::RuntimeBuilder {
    let mut b = corio::Runtime::builder();
    b.workers(workers).hog_report(false);
    b
}

rt_common! {
    #[test]
    fn on_thread_start_and_stop_run_on_every_worker_and_blocking_thread() {
        within(EVENTUALLY, || {
            let started = Arc::new(Mutex::new(Vec::new()));
            let stopped = Arc::new(AtomicUsize::new(0));
            let (s, t) = (started.clone(), stopped.clone());
            let rt = builder(WORKERS)
                .thread_name("hooked")
                .on_thread_start(move || {
                    let name = std::thread::current().name().unwrap_or("").to_string();
                    s.lock().unwrap().push(name);
                })
                .on_thread_stop(move || {
                    t.fetch_add(1, SeqCst);
                })
                .build()
                .unwrap();
            let on_blocking = rt.spawn_blocking(|| std::thread::current().name().map(String::from));
            assert_eq!(on_blocking.join().unwrap().as_deref(), Some("hooked-blocking"));
            let worker = rt.run(|| std::thread::current().name().map(String::from)).unwrap();
            drop(rt);
            let started = started.lock().unwrap().clone();
            let names: HashSet<_> = started.iter().cloned().collect();
            for i in 0..WORKERS {
                assert!(names.contains(&format!("hooked-{i}")), "{started:?}");
            }
            assert!(names.contains("hooked-blocking"), "{started:?}");
            assert!(names.contains(&worker), "{started:?}");
            // Workers are joined by the drop; the blocking thread exits on its own shortly.
            wait_until("every started thread ran its stop callback", || {
                stopped.load(SeqCst) == started.len()
            });
        });
    }

    #[test]
    fn thread_name_fn_names_workers_and_blocking_threads() {
        within(EVENTUALLY, || {
            let n = Arc::new(AtomicUsize::new(0));
            let rt = builder(WORKERS)
                .thread_name_fn(move || format!("custom-{}", n.fetch_add(1, SeqCst)))
                .build()
                .unwrap();
            let worker = rt.run(|| std::thread::current().name().map(String::from)).unwrap();
            let blocking = rt
                .handle()
                .spawn_blocking(|| std::thread::current().name().map(String::from))
                .join()
                .unwrap()
                .unwrap();
            assert!(worker.starts_with("custom-"), "{worker}");
            assert!(blocking.starts_with("custom-"), "{blocking}");
            assert_ne!(worker, blocking);
        });
    }

    #[test]
    fn shutdown_timeout_cancels_sleepers_and_joins_the_workers() {
        within(EVENTUALLY, || {
            let rt = builder(WORKERS).build().unwrap();
            let drops = Drops::new();
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let token = drops.token();
                    rt.go(move || {
                        let _token = token;
                        corio::sleep(Duration::from_secs(60));
                    })
                })
                .collect();
            rt.run(corio::yield_now);
            rt.shutdown_timeout(Duration::from_secs(30));
            assert_eq!(drops.dropped(), 4);
            for h in handles {
                assert!(h.join().unwrap_err().is_cancelled());
            }
        });
    }

    #[test]
    fn shutdown_timeout_returns_while_a_destructor_still_blocks_its_worker() {
        within(EVENTUALLY, || {
            let rt = builder(WORKERS).build().unwrap();
            let (release_tx, release_rx) = mpsc::channel::<()>();
            let blocking = Arc::new(AtomicBool::new(false));
            let finished = Arc::new(AtomicBool::new(false));
            /// Blocks its thread in its destructor until released.
            struct BlocksThread(mpsc::Receiver<()>, Arc<AtomicBool>, Arc<AtomicBool>);
            impl Drop for BlocksThread {
                fn drop(&mut self) {
                    self.1.store(true, SeqCst);
                    let _ = self.0.recv();
                    self.2.store(true, SeqCst);
                }
            }
            let value = BlocksThread(release_rx, blocking.clone(), finished.clone());
            let started = Arc::new(AtomicBool::new(false));
            let s = started.clone();
            let _h = rt.go(move || {
                let _value = value;
                s.store(true, SeqCst);
                corio::sleep(Duration::from_secs(60));
            });
            wait_until("the coroutine sleeps", || started.load(SeqCst));
            let start = Instant::now();
            rt.shutdown_timeout(Duration::from_millis(100));
            let took = start.elapsed();
            assert!(took < Duration::from_secs(20), "shutdown_timeout took {took:?}");
            // The worker is (or will be) stuck in the destructor until released: the runtime
            // could not have finished, yet `shutdown_timeout` returned.
            wait_until("the cancellation reaches the destructor", || blocking.load(SeqCst));
            assert!(!finished.load(SeqCst));
            release_tx.send(()).unwrap();
            wait_until("the destructor ends", || finished.load(SeqCst));
        });
    }

    #[test]
    fn shutdown_background_returns_and_the_runtime_still_shuts_down() {
        within(EVENTUALLY, || {
            let rt = builder(WORKERS).build().unwrap();
            let drops = Drops::new();
            let token = drops.token();
            let h = rt.go(move || {
                let _token = token;
                corio::sleep(Duration::from_secs(60));
            });
            rt.shutdown_background();
            assert!(h.join().unwrap_err().is_cancelled());
            wait_until("the sleeper is dropped", || drops.dropped() == 1);
        });
    }

    #[test]
    fn shutdown_timeout_and_shutdown_background_free_the_runtime_as_its_drop_does() {
        // Three waits of up to EVENTUALLY each: the watchdog waits for all of them.
        within(EVENTUALLY * 3, || {
            // A runtime's settings go when its last reference does: a hook's token is
            // dropped once the runtime is freed, however it was shut down.
            for how in ["drop", "shutdown_timeout", "shutdown_background"] {
                let drops = Drops::new();
                let token = drops.token();
                let rt = builder(WORKERS)
                    .on_thread_start(move || {
                        let _ = &token;
                    })
                    .build()
                    .unwrap();
                // Spawns from this thread and from a worker, so that both kinds of a task's
                // reference to the runtime have been taken and given back.
                rt.block_on(rt.spawn(async {})).unwrap();
                rt.run(|| corio::spawn(async {}).join().unwrap());
                match how {
                    "drop" => drop(rt),
                    "shutdown_timeout" => rt.shutdown_timeout(Duration::from_secs(30)),
                    _ => rt.shutdown_background(),
                }
                wait_until(&format!("the runtime is freed after {how}"), || {
                    drops.dropped() == 1
                });
            }
        });
    }

    #[test]
    fn handle_block_on_runs_a_future_from_a_plain_thread_and_panics_inside_a_task() {
        within(EVENTUALLY, || {
            let rt = builder(WORKERS).build().unwrap();
            let handle = rt.handle().clone();
            let h2 = handle.clone();
            let v = std::thread::spawn(move || {
                h2.block_on(async { corio::spawn(async { 20 }).await.unwrap() + 1 })
            })
            .join()
            .unwrap();
            assert_eq!(v, 21);
            let err = rt
                .run(move || {
                    let h = handle.clone();
                    corio::go(move || panic_message(|| h.block_on(async {})))
                        .join()
                })
                .unwrap();
            assert!(err.contains("corio::block_on"), "{err}");
        });
    }
}
