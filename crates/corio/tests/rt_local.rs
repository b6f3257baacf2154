//! Local tasks (`go_local`, `spawn_local`, `Builder::spawn_local`): `!Send` coroutines and
//! futures that run, and are dropped, only on the worker thread that spawned them.

#[macro_use]
mod support;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use support::{EVENTUALLY, Gate, panic_message, within};

/// Records the thread it is dropped on.
struct DropsOn(Arc<Mutex<Vec<ThreadId>>>);

impl Drop for DropsOn {
    fn drop(&mut self) {
        self.0.lock().unwrap().push(std::thread::current().id());
    }
}

rt_common! {
    #[test]
    fn local_coroutines_and_futures_share_an_rc_and_run_only_on_the_spawning_thread() {
        let rt = rt();
        let (count, threads, home) = within(EVENTUALLY, move || {
            rt.run(|| {
                let home = std::thread::current().id();
                let counter = Rc::new(RefCell::new(0));
                let threads = Rc::new(RefCell::new(Vec::new()));
                let mut handles = Vec::new();
                for i in 0..20 {
                    let (c, t) = (counter.clone(), threads.clone());
                    if i % 2 == 0 {
                        handles.push(corio::go_local(move || {
                            for _ in 0..5 {
                                corio::yield_now();
                                corio::sleep(Duration::from_micros(100));
                                t.borrow_mut().push(std::thread::current().id());
                            }
                            *c.borrow_mut() += 1;
                        }));
                    } else {
                        handles.push(corio::spawn_local(async move {
                            for _ in 0..5 {
                                corio::yield_now_async().await;
                                corio::time::sleep_async(Duration::from_micros(100)).await;
                                t.borrow_mut().push(std::thread::current().id());
                            }
                            *c.borrow_mut() += 1;
                        }));
                    }
                }
                // Keep the other worker busy with stealable work meanwhile.
                let noise: Vec<_> = (0..50).map(|_| corio::spawn(async {})).collect();
                for h in handles.into_iter().chain(noise) {
                    h.join().unwrap();
                }
                let count = *counter.borrow();
                let threads = threads.borrow().clone();
                (count, threads, home)
            })
        });
        assert_eq!(count, 20);
        assert_eq!(threads.len(), 100);
        assert!(threads.iter().all(|t| *t == home), "a local task ran off its worker");
    }

    #[test]
    fn aborting_a_local_task_from_another_thread_drops_it_on_its_own_thread() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let dropped_on = Arc::new(Mutex::new(Vec::new()));
            let (d, gate) = (dropped_on.clone(), Gate::new());
            let g = gate.clone();
            let (home, co, task) = rt.run(move || {
                let (d1, d2) = (d.clone(), d.clone());
                let (g1, g2) = (g.clone(), g.clone());
                let co = corio::go_local(move || {
                    let _rc = Rc::new(DropsOn(d1));
                    corio::block_on(g1.wait());
                });
                let task = corio::spawn_local(async move {
                    let _rc = Rc::new(DropsOn(d2));
                    g2.wait().await;
                });
                corio::yield_now();
                (std::thread::current().id(), co, task)
            });
            co.abort();
            task.abort();
            assert!(co.join().unwrap_err().is_cancelled());
            assert!(task.join().unwrap_err().is_cancelled());
            assert_eq!(*dropped_on.lock().unwrap(), [home, home]);
        });
    }

    #[test]
    fn dropping_the_runtime_drops_local_tasks_on_their_own_thread() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let dropped_on = Arc::new(Mutex::new(Vec::new()));
            let d = dropped_on.clone();
            let (home, handles) = rt.run(move || {
                let mut handles = Vec::new();
                for _ in 0..3 {
                    // Made here and captured, so that they are dropped on cancellation
                    // whether or not the task ever started (on one worker none has).
                    let (rc1, rc2) = (Rc::new(DropsOn(d.clone())), Rc::new(DropsOn(d.clone())));
                    handles.push(corio::go_local(move || {
                        let _rc = rc1;
                        corio::sleep(Duration::from_secs(60));
                    }));
                    handles.push(corio::spawn_local(async move {
                        let _rc = rc2;
                        corio::time::sleep_async(Duration::from_secs(60)).await;
                    }));
                    corio::yield_now();
                }
                (std::thread::current().id(), handles)
            });
            drop(rt);
            for h in handles {
                assert!(h.join().unwrap_err().is_cancelled());
            }
            let dropped_on = dropped_on.lock().unwrap();
            assert_eq!(dropped_on.len(), 6);
            assert!(dropped_on.iter().all(|t| *t == home), "dropped off its thread");
        });
    }

    #[test]
    fn builder_spawn_local_names_the_coroutine() {
        let rt = rt();
        let name = within(EVENTUALLY, move || {
            rt.run(|| {
                let rc = Rc::new("local");
                corio::Builder::new()
                    .name("parser")
                    .spawn_local(move || format!("{}:{}", corio::current().name().unwrap(), rc))
                    .unwrap()
                    .join()
                    .unwrap()
            })
        });
        assert_eq!(name, "parser:local");
    }

    #[test]
    fn spawn_local_in_block_on_thread_panics_with_advice() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let msg = panic_message(|| {
                rt.block_on(async {
                    drop(corio::spawn_local(async {}));
                })
            });
            assert!(msg.contains("runtime worker"), "{msg}");
        });
    }
}

#[test]
fn go_local_on_a_plain_thread_panics_with_advice() {
    let msg = panic_message(|| {
        drop(corio::go_local(|| ()));
    });
    assert!(msg.contains("corio::go"), "{msg}");
}
