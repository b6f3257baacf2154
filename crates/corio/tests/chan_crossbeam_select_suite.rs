//! crossbeam-channel 0.5.17's select tests (`tests/select_macro.rs` and `tests/select.rs`),
//! ported to `corio::select!` (blocking-style) and `corio::select_async!`, and the adversarial
//! cases a reviewer adds. Each test names its original in a `///` line ("crossbeam:"), or says
//! "adversarial:" for a new one. (`tests/select.rs` and `tests/chan_golang.rs` hold what was
//! already covered: Go's select tests, a dropped select giving a value back, `after` racing
//! hand-offs, values dropped outside the locks, `after(Duration::MAX)` on a plain thread.)
//!
//! How they run. crossbeam's spawned threads are the *peers* of `with_peers`: scoped stackful
//! coroutines (`corio::scope`) on one and on two workers (modules `one_worker`, `two_workers`;
//! the selecting side is the runtime's main coroutine), and the same bodies again with scoped
//! plain threads (module `plain_threads`, the selecting side on the test's thread). Bodies
//! without peers run on a plain thread and as the main coroutine of each flavour
//! (`everywhere`). A sample runs as async tasks with `select_async!` (the `async_*` tests), and
//! one test matches selects of all three waiter kinds on one channel. crossbeam's sleeps
//! (0.5–1.5 s) become `DELAY` (10 ms) and are never measured; where a crossbeam test relied on
//! one sleep outlasting another (a timeout that must fire before a peer sends, a non-blocking
//! select that must find a peer already waiting), the peer waits for a message or the select is
//! retried, so nothing can fail on a loaded machine. Durations are only checked from below.
//! Loop counts are scaled down as `testing.Short()` would (10,000 → 1,000 or 2,000; crossbeam's
//! 100,000-round linearizability tests → 2,000 rounds on coroutines, 300 on threads).
//!
//! Adapted to corio's documented design:
//! - crossbeam's `default(timeout)` arm is corio's `after(timeout)`, `default()` is `default`.
//! - corio's `after(d)` is a timeout, not a channel (crossbeam's `fairness1` selects on its
//!   `after(0)` and `tick(0)` *receivers* as two more ready arms): it is chosen only when no
//!   channel arm can complete. The port keeps the two channels and adds `after(0)`, which must
//!   never win.
//! - corio has no `never()` channel: a channel whose other end is held and never used stands in.
//! - The dynamic `Select` builder (all of `tests/select.rs`) is not ported onto corio's
//!   `SelectFuture`: that type is exported (`corio::chan::SelectFuture`) but `#[doc(hidden)]`,
//!   and the arms it takes (`RecvArm`, `SendArm`, the `Arm` trait) live in
//!   `corio::chan::__private`, "not a stable API": there is no documented dynamic select. Each
//!   `select.rs` test with a fixed set of operations checks the same behaviour as its
//!   `select_macro.rs` twin and is covered by that port (its `///` line names both);
//!   `sync_and_clone` and `send_and_clone` (one `Select` cloned per thread) are `matching` with
//!   fewer threads, `reuse` (one `Select` reused) is `stress_mixed`, `linearizable_try` is
//!   `linearizable_default`, and `fairness2`'s conditionally added arms become the macro port's
//!   never-ready "hole" channel. crossbeam's two-phase protocol (select an index, then complete
//!   it with `oper.recv(&r)`) has no counterpart: corio's select performs the operation itself.
//!
//! Not ported (one line each):
//! - select_macro.rs `unfairness`, `unfairness_timeout`, `unfairness_try`: no `select_biased!`.
//! - select_macro.rs `move_handles`, `once_receiver`, `once_sender`, the `never()` half of
//!   `references`: the macro borrows each handle expression into a `let` (`RecvArm::new(&$rx)`),
//!   so a handle that is a temporary (`recv((move || r)())`, `recv(get())`) does not compile
//!   (E0716, "temporary value dropped while borrowed"); crossbeam accepts it.
//! - select_macro.rs `panic_sender`/`panic_receiver` as written (their handle is a temporary,
//!   above): the port panics in a function returning a *reference* to a handle.
//! - select_macro.rs `default_syntax`: no `default()` spelling (the `default =>` forms are in
//!   `default_is_chosen_only_when_no_arm_can_complete`).
//! - select_macro.rs `trailing_comma`: no comma inside `recv(..)`, `send(..)`, `after(..)` (one
//!   after the last arm is accepted and used throughout).
//!
//! Found, and fixed (the three `a_waker_whose_clone_*` tests failed before): a select's first
//! poll and its later polls cloned the task's waker while they held the channel locks
//! (`Signal::new`, `Signal::set_waker`; a lone wait's `State::lone_entry` too), and a waker's
//! clone is user code: one that used a channel of the select spun for ever on that channel's
//! lock, and one that panicked left the channels locked, so every later operation on them spun
//! for ever. Another executor's waker is now relayed (`task::waker::relay`, made before the
//! lock), docs/chan.md "User code outside the lock".

#[macro_use]
mod support;

use std::any::Any;
use std::collections::HashSet;
use std::future::Future;
use std::ops::Deref;
use std::panic::resume_unwind;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use std::time::{Duration, Instant};

use corio::chan::{self, Receiver, RecvError, SendError, Sender, TryRecvError, TrySendError};
use support::{
    Drops, EVENTUALLY, EXPECTED, FLAVOURS, Rng, panic_message, payload_text, quiet_expected_panics,
    within,
};

const MS: Duration = Duration::from_millis(1);

/// crossbeam's 0.5–1.5 s sleeps: they only let a peer get ahead, and are never measured.
const DELAY: Duration = Duration::from_millis(10);

fn poll_once<F: Future>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

/// Runs a blocking-style body on a plain thread and as the main coroutine of a one-worker and
/// a two-worker runtime.
fn everywhere(body: fn()) {
    within(EVENTUALLY, body);
    for workers in FLAVOURS {
        let rt = support::rt(workers);
        within(EVENTUALLY, move || rt.run(body));
    }
}

/// Who plays crossbeam's spawned threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Peers {
    /// Scoped stackful coroutines on the current runtime.
    Coroutines,
    /// Scoped plain threads.
    Threads,
}

type Job<'a> = Box<dyn FnOnce() + Send + 'a>;

fn job<'a>(f: impl FnOnce() + Send + 'a) -> Job<'a> {
    Box::new(f)
}

/// crossbeam's `scope(|s| { s.spawn(peer); ..; main })`: starts each peer (a scoped coroutine
/// or thread), runs `main` meanwhile, then joins the peers, resuming a peer's panic.
fn with_peers<'env, R>(kind: Peers, peers: Vec<Job<'env>>, main: impl FnOnce() -> R) -> R {
    match kind {
        Peers::Coroutines => corio::scope(|s| {
            let handles: Vec<_> = peers.into_iter().map(|p| s.go(p)).collect();
            let r = main();
            for h in handles {
                if let Err(e) = h.join() {
                    resume_unwind(e.into_panic());
                }
            }
            r
        }),
        Peers::Threads => std::thread::scope(|s| {
            let handles: Vec<_> = peers.into_iter().map(|p| s.spawn(p)).collect();
            let r = main();
            for h in handles {
                if let Err(p) = h.join() {
                    resume_unwind(p);
                }
            }
            r
        }),
    }
}

/// A peer body with coroutines as peers, the selecting side the runtime's main coroutine.
fn on_coroutines(rt: corio::Runtime, body: fn(Peers)) {
    within(EVENTUALLY, move || rt.run(move || body(Peers::Coroutines)));
}

/// A peer body with plain threads as peers, the selecting side a plain thread.
fn on_threads(body: fn(Peers)) {
    within(EVENTUALLY, move || body(Peers::Threads));
}

/// A body run as an async task (`corio::spawn`) of `rt`.
fn on_task<F>(rt: corio::Runtime, body: fn() -> F)
where
    F: Future<Output = ()> + Send + 'static,
{
    within(EVENTUALLY, move || {
        let h = rt.spawn(body());
        rt.block_on(h).unwrap()
    });
}

// ---------------------------------------------------------------------------------------------
// select_macro.rs (and select.rs) without peers: run everywhere.

/// crossbeam: select_macro.rs and select.rs `smoke1`.
#[test]
fn the_ready_arm_is_chosen_and_the_empty_one_is_not() {
    everywhere(|| {
        let (s1, r1) = chan::unbounded::<usize>();
        let (s2, r2) = chan::unbounded::<usize>();
        s1.send(1).unwrap();
        corio::select! {
            recv(r1) -> v => assert_eq!(v, Ok(1)),
            recv(r2) -> _ => panic!("r2 is empty"),
        }
        s2.send(2).unwrap();
        corio::select! {
            recv(r1) -> _ => panic!("r1 is empty"),
            recv(r2) -> v => assert_eq!(v, Ok(2)),
        }
    });
}

/// crossbeam: select_macro.rs and select.rs `smoke2`.
#[test]
fn the_one_ready_arm_of_five_is_chosen() {
    everywhere(|| {
        let (_s1, r1) = chan::unbounded::<i32>();
        let (_s2, r2) = chan::unbounded::<i32>();
        let (_s3, r3) = chan::unbounded::<i32>();
        let (_s4, r4) = chan::unbounded::<i32>();
        let (s5, r5) = chan::unbounded::<i32>();
        s5.send(5).unwrap();
        corio::select! {
            recv(r1) -> _ => panic!("r1"),
            recv(r2) -> _ => panic!("r2"),
            recv(r3) -> _ => panic!("r3"),
            recv(r4) -> _ => panic!("r4"),
            recv(r5) -> v => assert_eq!(v, Ok(5)),
        }
    });
}

/// crossbeam: select_macro.rs and select.rs `default` (and the `default =>` half of
/// `default_syntax`).
#[test]
fn default_is_chosen_only_when_no_arm_can_complete() {
    everywhere(|| {
        let (s1, r1) = chan::unbounded::<i32>();
        let (s2, r2) = chan::unbounded::<i32>();
        corio::select! {
            recv(r1) -> _ => panic!("r1 is empty"),
            recv(r2) -> _ => panic!("r2 is empty"),
            default => {}
        }
        drop(s1);
        corio::select! {
            recv(r1) -> v => assert_eq!(v, Err(RecvError)),
            recv(r2) -> _ => panic!("r2 is empty"),
            default => panic!("a closed channel is ready"),
        }
        s2.send(2).unwrap();
        corio::select! {
            recv(r2) -> v => assert_eq!(v, Ok(2)),
            default => panic!("r2 has a value"),
        }
        corio::select! {
            recv(r2) -> _ => panic!("r2 is empty again"),
            default => {},
        }
        corio::select! {
            default => {},
        }
        let (s, _r) = chan::bounded::<i32>(0);
        corio::select! {
            send(s, 0) -> _ => panic!("no receiver waits"),
            default => {}
        }
    });
}

/// crossbeam: select_macro.rs and select.rs `default_when_disconnected`.
#[test]
fn a_closed_channel_is_ready_before_default_and_after() {
    everywhere(|| {
        let (_, r) = chan::unbounded::<i32>();
        corio::select! {
            recv(r) -> v => assert_eq!(v, Err(RecvError)),
            default => panic!("closed is ready"),
        }
        let (_, r) = chan::unbounded::<i32>();
        corio::select! {
            recv(r) -> v => assert_eq!(v, Err(RecvError)),
            after(EVENTUALLY) => panic!("closed is ready"),
        }
        let (s, _) = chan::bounded::<i32>(0);
        corio::select! {
            send(s, 0) -> r => assert_eq!(r, Err(SendError(0))),
            default => panic!("closed is ready"),
        }
        let (s, _) = chan::bounded::<i32>(0);
        corio::select! {
            send(s, 0) -> r => assert_eq!(r, Err(SendError(0))),
            after(EVENTUALLY) => panic!("closed is ready"),
        }
    });
}

/// crossbeam: select_macro.rs and select.rs `default_only` (only the lower bound of the
/// timeout is checked: an upper bound fails on a loaded machine).
#[test]
fn a_select_of_only_default_or_only_after() {
    everywhere(|| {
        let r = corio::select! {
            default => 1,
        };
        assert_eq!(r, 1);
        let start = Instant::now();
        corio::select! {
            after(DELAY) => {}
        }
        assert!(start.elapsed() >= DELAY);
    });
}

/// crossbeam: select_macro.rs and select.rs `preflight1`, `preflight2`, `preflight3`.
#[test]
fn preflight_buffered_closed_and_drained_channels() {
    everywhere(|| {
        let (s, r) = chan::unbounded();
        s.send(()).unwrap();
        corio::select! {
            recv(r) -> v => assert_eq!(v, Ok(())),
        }

        let (s, r) = chan::unbounded();
        drop(s.clone());
        s.send(()).unwrap();
        drop(s);
        corio::select! {
            recv(r) -> v => assert_eq!(v, Ok(())),
        }
        assert_eq!(r.try_recv(), Err(TryRecvError::Disconnected));

        let (s, r) = chan::unbounded();
        drop(s.clone());
        s.send(()).unwrap();
        drop(s);
        r.recv().unwrap();
        corio::select! {
            recv(r) -> v => assert_eq!(v, Err(RecvError))
        }
    });
}

/// crossbeam: select_macro.rs and select.rs `duplicate_operations` (bounded: each of the four
/// arms is hit within 10,000 selects, where 30 would do with overwhelming probability).
#[test]
fn each_of_duplicate_recv_and_send_arms_is_chosen() {
    everywhere(|| {
        let (s, r) = chan::unbounded::<i32>();
        let mut hit = [false; 4];
        for _ in 0..10_000 {
            if hit.iter().all(|&h| h) {
                break;
            }
            corio::select! {
                recv(r) -> v => { v.unwrap(); hit[0] = true },
                recv(r) -> v => { v.unwrap(); hit[1] = true },
                send(s, 0) -> res => { res.unwrap(); hit[2] = true },
                send(s, 0) -> res => { res.unwrap(); hit[3] = true },
            }
        }
        assert_eq!(hit, [true; 4]);
    });
}

/// crossbeam: select_macro.rs and select.rs `nesting`.
#[test]
fn selects_nest_in_arm_bodies() {
    everywhere(|| {
        let (s, r) = chan::unbounded::<i32>();
        corio::select! {
            send(s, 0) -> res => {
                res.unwrap();
                corio::select! {
                    recv(r) -> v => {
                        assert_eq!(v, Ok(0));
                        corio::select! {
                            send(s, 1) -> res => {
                                res.unwrap();
                                corio::select! {
                                    recv(r) -> v => assert_eq!(v, Ok(1)),
                                }
                            }
                        }
                    }
                }
            }
        }
    });
}

/// crossbeam: select_macro.rs `panic_sender` and `panic_receiver` (the handle comes from a
/// function returning a reference: a temporary handle does not compile, see the file head).
#[test]
fn a_panicking_handle_expression_panics_the_select() {
    quiet_expected_panics();
    fn sender() -> &'static Sender<i32> {
        panic!("{EXPECTED} send panicked")
    }
    fn receiver() -> &'static Receiver<i32> {
        panic!("{EXPECTED} recv panicked")
    }
    let msg = panic_message(|| {
        corio::select! {
            send(*sender(), 0) -> _ => {}
        }
    });
    assert!(msg.contains("send panicked"), "{msg}");
    let msg = panic_message(|| {
        corio::select! {
            recv(*receiver()) -> _ => {}
        }
    });
    assert!(msg.contains("recv panicked"), "{msg}");
}

/// crossbeam: select_macro.rs and select.rs `send_recv_same_channel`.
#[test]
fn a_select_never_meets_itself_on_one_channel() {
    everywhere(|| {
        let (s, r) = chan::bounded::<i32>(0);
        let start = Instant::now();
        corio::select! {
            send(s, 0) -> _ => panic!("the send arm met its own receive arm"),
            recv(r) -> _ => panic!("the receive arm met its own send arm"),
            after(DELAY) => {}
        }
        assert!(start.elapsed() >= DELAY);
        let (s, r) = chan::unbounded::<i32>();
        corio::select! {
            send(s, 0) -> res => res.unwrap(),
            recv(r) -> _ => panic!("the channel was empty"),
            after(EVENTUALLY) => panic!("the send can complete"),
        }
        assert_eq!(r.try_recv(), Ok(0));
    });
}

/// crossbeam: select_macro.rs `fairness1` and select.rs `fairness1`, adapted: corio's `after`
/// is a timeout, not a channel, so `after(0)` must never win while a channel arm is ready; the
/// two channels share the selects fairly.
#[test]
fn after_zero_never_beats_ready_arms_which_share_fairly() {
    everywhere(|| {
        const COUNT: usize = 2_000;
        let (s1, r1) = chan::bounded::<()>(COUNT);
        let (s2, r2) = chan::unbounded::<()>();
        for _ in 0..COUNT {
            s1.send(()).unwrap();
            s2.send(()).unwrap();
        }
        let mut hits = [0usize; 2];
        for _ in 0..COUNT {
            corio::select! {
                recv(r1) -> v => { v.unwrap(); hits[0] += 1 },
                recv(r2) -> v => { v.unwrap(); hits[1] += 1 },
                after(Duration::ZERO) => panic!("after(0) beat a ready arm"),
            }
        }
        assert!(hits.iter().all(|&h| h >= COUNT / 4), "{hits:?}");
    });
}

/// crossbeam: select_macro.rs `fairness_recv`.
#[test]
fn ready_receive_arms_are_chosen_fairly() {
    everywhere(|| {
        const COUNT: usize = 4_000;
        let (s1, r1) = chan::bounded::<()>(COUNT);
        let (s2, r2) = chan::unbounded::<()>();
        for _ in 0..COUNT {
            s1.send(()).unwrap();
            s2.send(()).unwrap();
        }
        let mut hits = [0usize; 2];
        while hits[0] + hits[1] < COUNT {
            corio::select! {
                recv(r1) -> _ => hits[0] += 1,
                recv(r2) -> _ => hits[1] += 1,
            }
        }
        assert!(hits.iter().all(|&h| h >= COUNT / 4), "{hits:?}");
    });
}

/// crossbeam: select_macro.rs `fairness_send`.
#[test]
fn ready_send_arms_are_chosen_fairly() {
    everywhere(|| {
        const COUNT: usize = 4_000;
        let (s1, _r1) = chan::bounded::<()>(COUNT);
        let (s2, _r2) = chan::unbounded::<()>();
        let mut hits = [0usize; 2];
        for _ in 0..COUNT {
            corio::select! {
                send(s1, ()) -> _ => hits[0] += 1,
                send(s2, ()) -> _ => hits[1] += 1,
            }
        }
        assert!(hits.iter().all(|&h| h >= COUNT / 4), "{hits:?}");
    });
}

/// crossbeam: select_macro.rs `references`, `deref` and `handles_on_heap`.
#[test]
#[allow(clippy::unnecessary_literal_unwrap)] // as in crossbeam: a handle from an expression
fn handles_behind_references_boxes_and_deref() {
    struct MySender<T>(Sender<T>);
    struct MyReceiver<T>(Receiver<T>);
    impl<T> Deref for MySender<T> {
        type Target = Sender<T>;
        fn deref(&self) -> &Sender<T> {
            &self.0
        }
    }
    impl<T> Deref for MyReceiver<T> {
        type Target = Receiver<T>;
        fn deref(&self) -> &Receiver<T> {
            &self.0
        }
    }
    within(EVENTUALLY, || {
        let (s, r) = chan::unbounded::<i32>();
        corio::select! {
            send(s, 0) -> _ => {}
            recv(r) -> _ => {}
        }
        corio::select! {
            send(&&&&s, 0) -> _ => {}
            recv(&&&&r) -> _ => {}
        }
        let (_other_s, other) = chan::unbounded::<i32>();
        corio::select! {
            recv(Some(&r).unwrap_or(&other)) -> _ => {},
            default => {}
        }

        let (s, r) = chan::bounded::<i32>(0);
        let (s, r) = (MySender(s), MyReceiver(r));
        corio::select! {
            send(s, 0) -> _ => panic!("no receiver waits"),
            recv(r) -> _ => panic!("no sender waits"),
            default => {}
        }

        let (s, r) = chan::unbounded::<i32>();
        let (s, r) = (Box::new(s), Box::new(r));
        let got = corio::select! {
            send(*s, 0) -> _ => "sent",
            recv(*r) -> _ => "received",
            default => "default",
        };
        assert_eq!(got, "sent", "only the send could complete");
    });
}

/// crossbeam: select_macro.rs `case_blocks`, `evaluate`, `same_variable_name`, `infer_types`,
/// `result_types`, `once_blocks` and `parse_nesting` (the grammar: bodies of every shape,
/// values, moved captures, inferred element types).
#[test]
#[allow(clippy::match_single_binding, clippy::never_loop, unreachable_code)]
fn arm_bodies_of_every_shape_evaluate_to_the_select_value() {
    within(EVENTUALLY, || {
        // case_blocks
        let (s, r) = chan::unbounded::<i32>();
        let f = corio::select! {
            recv(r) -> _ => 3.0,
            recv(r) -> _ => loop { unreachable!() },
            recv(r) -> _ => match 7 + 3 { _ => unreachable!() },
            default => 7.,
        };
        assert_eq!(f, 7.);
        corio::select! {
            recv(r) -> msg => if msg.is_ok() { unreachable!() },
            default => ()
        }
        drop(s);

        // evaluate
        let (s, r) = chan::unbounded::<i32>();
        let v: String = corio::select! {
            recv(r) -> _ => "foo".into(),
            send(s, 0) -> _ => "bar".to_owned(),
            default => "baz".to_string(),
        };
        assert_eq!(v, "bar");
        let v: String = corio::select! {
            recv(r) -> _ => "foo".into(),
            default => "baz".to_string(),
        };
        assert_eq!(v, "foo");
        let v: String = corio::select! {
            recv(r) -> _ => "foo".into(),
            default => "baz".to_string(),
        };
        assert_eq!(v, "baz");

        // same_variable_name
        let (_, r) = chan::unbounded::<i32>();
        corio::select! {
            recv(r) -> r => assert!(r.is_err()),
        }

        // infer_types
        let (s, r) = chan::unbounded();
        corio::select! {
            recv(r) -> _ => {}
            default => {}
        }
        s.send(()).unwrap();
        let (s, r) = chan::unbounded();
        corio::select! {
            send(s, ()) -> _ => {}
        }
        r.recv().unwrap();

        // result_types
        let (s, _) = chan::bounded::<i32>(0);
        let (_, r) = chan::bounded::<i32>(0);
        corio::select! {
            recv(r) -> res => { let _: Result<i32, RecvError> = res; },
        }
        corio::select! {
            recv(r) -> res => { let _: Result<i32, RecvError> = res; },
            default => {}
        }
        corio::select! {
            recv(r) -> res => { let _: Result<i32, RecvError> = res; },
            after(Duration::ZERO) => {}
        }
        corio::select! {
            send(s, 0) -> res => { let _: Result<(), SendError<i32>> = res; },
        }
        corio::select! {
            send(s, 0) -> res => { let _: Result<(), SendError<i32>> = res; },
            default => {}
        }
        corio::select! {
            send(s, 0) -> res => { let _: Result<(), SendError<i32>> = res; },
            after(Duration::ZERO) => {}
        }
        corio::select! {
            send(s, 0) -> res => { let _: Result<(), SendError<i32>> = res; },
            recv(r) -> res => { let _: Result<i32, RecvError> = res; },
        }

        // once_blocks: each body may move the same captured value.
        let (s, r) = chan::unbounded::<i32>();
        let once = Box::new(());
        corio::select! {
            send(s, 0) -> _ => drop(once),
        }
        let once = Box::new(());
        corio::select! {
            recv(r) -> _ => drop(once),
        }
        let (once1, once2) = (Box::new(()), Box::new(()));
        corio::select! {
            send(s, 0) -> _ => drop(once1),
            default => drop(once2),
        }
        let (once1, once2) = (Box::new(()), Box::new(()));
        corio::select! {
            recv(r) -> _ => drop(once1),
            default => drop(once2),
        }
        let (once1, once2) = (Box::new(()), Box::new(()));
        corio::select! {
            recv(r) -> _ => drop(once1),
            send(s, 0) -> _ => drop(once2),
        }

        // parse_nesting
        let (_, r) = chan::unbounded::<i32>();
        corio::select! {
            recv(r) -> _ => {}
            recv(r) -> _ => {
                corio::select! {
                    recv(r) -> _ => {}
                    recv(r) -> _ => {
                        corio::select! {
                            recv(r) -> _ => {}
                            recv(r) -> _ => {
                                corio::select! {
                                    default => {}
                                }
                            }
                        }
                    }
                }
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// select_macro.rs (and select.rs) with peers: on coroutines (1 and 2 workers) and on threads.

/// The bodies of the tests with peers (crossbeam's spawned threads).
mod peer_bodies {
    use super::*;

    /// crossbeam: select_macro.rs and select.rs `disconnected` (the value on `r2` is sent after
    /// the select, on a message, where crossbeam relies on a 500 ms sleep).
    pub fn a_closed_arm_wakes_a_waiting_select(peers: Peers) {
        let (s1, r1) = chan::unbounded::<i32>();
        let (s2, r2) = chan::unbounded::<i32>();
        let (go_s, go_r) = chan::bounded::<()>(0);
        with_peers(
            peers,
            vec![job(|| {
                corio::sleep(DELAY);
                drop(s1);
                go_r.recv().unwrap();
                s2.send(5).unwrap();
            })],
            || {
                corio::select! {
                    recv(r1) -> v => assert_eq!(v, Err(RecvError)),
                    recv(r2) -> _ => panic!("nothing was sent on r2 yet"),
                    after(EVENTUALLY) => panic!("the close did not wake the select"),
                }
                go_s.send(()).unwrap();
                assert_eq!(r2.recv(), Ok(5));
            },
        );
        corio::select! {
            recv(r1) -> v => assert_eq!(v, Err(RecvError)),
            recv(r2) -> _ => panic!("r2 is empty"),
            after(EVENTUALLY) => panic!("r1 is closed"),
        }
        with_peers(
            peers,
            vec![job(move || {
                corio::sleep(DELAY);
                drop(s2);
            })],
            || {
                corio::select! {
                    recv(r2) -> v => assert_eq!(v, Err(RecvError)),
                    after(EVENTUALLY) => panic!("the close did not wake the select"),
                }
            },
        );
    }

    /// crossbeam: select_macro.rs and select.rs `timeout` (the peer sends after the first
    /// select timed out, on a message; the close is waited for with repeated timeouts).
    pub fn after_fires_then_a_later_value_is_received(peers: Peers) {
        let (_s1, r1) = chan::unbounded::<i32>();
        let (s2, r2) = chan::unbounded::<i32>();
        let (go_s, go_r) = chan::bounded::<()>(0);
        with_peers(
            peers,
            vec![job(move || {
                go_r.recv().unwrap();
                corio::sleep(DELAY);
                s2.send(2).unwrap();
            })],
            || {
                let start = Instant::now();
                corio::select! {
                    recv(r1) -> _ => panic!("r1 never gets a value"),
                    recv(r2) -> _ => panic!("nothing was sent yet"),
                    after(DELAY) => {}
                }
                assert!(start.elapsed() >= DELAY);
                go_s.send(()).unwrap();
                corio::select! {
                    recv(r1) -> _ => panic!("r1 never gets a value"),
                    recv(r2) -> v => assert_eq!(v, Ok(2)),
                    after(EVENTUALLY) => panic!("the value did not come"),
                }
            },
        );
        let (s, r) = chan::unbounded::<i32>();
        with_peers(
            peers,
            vec![job(move || {
                corio::sleep(DELAY);
                drop(s);
            })],
            || {
                while !r.is_closed() {
                    corio::select! {
                        after(DELAY) => {}
                    }
                }
                corio::select! {
                    recv(r) -> v => assert_eq!(v, Err(RecvError)),
                    default => panic!("r is closed"),
                }
            },
        );
    }

    /// crossbeam: select_macro.rs and select.rs `unblocks`.
    pub fn a_waiting_select_is_completed_by_a_late_peer(peers: Peers) {
        let (s1, r1) = chan::bounded::<i32>(0);
        let (s2, r2) = chan::bounded::<i32>(0);
        with_peers(
            peers,
            vec![job(|| {
                corio::sleep(DELAY);
                s2.send(2).unwrap();
            })],
            || {
                corio::select! {
                    recv(r1) -> _ => panic!("nobody sends on r1"),
                    recv(r2) -> v => assert_eq!(v, Ok(2)),
                    after(EVENTUALLY) => panic!("the send did not complete the select"),
                }
            },
        );
        with_peers(
            peers,
            vec![job(|| {
                corio::sleep(DELAY);
                assert_eq!(r1.recv(), Ok(1));
            })],
            || {
                corio::select! {
                    send(s1, 1) -> res => res.unwrap(),
                    send(s2, 2) -> _ => panic!("nobody receives on r2"),
                    after(EVENTUALLY) => panic!("the receive did not complete the select"),
                }
            },
        );
    }

    /// crossbeam: select_macro.rs and select.rs `both_ready`.
    pub fn a_receive_and_a_send_arm_each_complete_once(peers: Peers) {
        let (s1, r1) = chan::bounded(0);
        let (s2, r2) = chan::bounded(0);
        with_peers(
            peers,
            vec![job(|| {
                corio::sleep(DELAY);
                s1.send(1).unwrap();
                assert_eq!(r2.recv(), Ok(2));
            })],
            || {
                for _ in 0..2 {
                    corio::select! {
                        recv(r1) -> v => assert_eq!(v, Ok(1)),
                        send(s2, 2) -> res => res.unwrap(),
                    }
                }
            },
        );
    }

    /// crossbeam: select_macro.rs and select.rs `loop_try` (5 runs, not 20): loops of
    /// non-blocking selects meet a blocking one. On coroutines the loops never wait; the
    /// selects' cooperative budget must let the others run, even on one worker.
    pub fn busy_loops_of_default_selects_meet_a_blocking_select(peers: Peers) {
        for _ in 0..5 {
            let (s1, r1) = chan::bounded::<i32>(0);
            let (s2, r2) = chan::bounded::<i32>(0);
            let (s_end, r_end) = chan::bounded::<()>(0);
            with_peers(
                peers,
                vec![
                    job(|| {
                        loop {
                            corio::select! {
                                send(s1, 1) -> _ => break,
                                default => {}
                            }
                            corio::select! {
                                recv(r_end) -> _ => break,
                                default => {}
                            }
                        }
                    }),
                    job(|| {
                        loop {
                            if let Ok(x) = r2.try_recv() {
                                assert_eq!(x, 2);
                                break;
                            }
                            corio::select! {
                                recv(r_end) -> _ => break,
                                default => {}
                            }
                        }
                    }),
                    job(|| {
                        corio::sleep(DELAY);
                        corio::select! {
                            recv(r1) -> v => assert_eq!(v, Ok(1)),
                            send(s2, 2) -> res => res.unwrap(),
                            after(EVENTUALLY) => panic!("neither busy loop met the select"),
                        }
                        drop(s_end);
                    }),
                ],
                || {},
            );
        }
    }

    /// crossbeam: select_macro.rs and select.rs `cloning1`: dropping a clone of a sender
    /// neither closes the channel nor completes a waiting select.
    pub fn dropping_a_sender_clone_does_not_complete_a_select(peers: Peers) {
        let (s1, r1) = chan::unbounded::<i32>();
        let (_s2, r2) = chan::unbounded::<i32>();
        let (s3, r3) = chan::unbounded::<()>();
        with_peers(
            peers,
            vec![job(move || {
                r3.recv().unwrap();
                drop(s1.clone());
                assert_eq!(r3.try_recv(), Err(TryRecvError::Empty));
                s1.send(1).unwrap();
                r3.recv().unwrap();
            })],
            || {
                s3.send(()).unwrap();
                corio::select! {
                    recv(r1) -> v => assert_eq!(v, Ok(1)),
                    recv(r2) -> _ => panic!("nobody sends on r2"),
                }
                s3.send(()).unwrap();
            },
        );
    }

    /// crossbeam: select_macro.rs and select.rs `cloning2`.
    pub fn dropping_a_sender_clone_does_not_wake_a_waiting_select(peers: Peers) {
        let (s1, r1) = chan::unbounded::<()>();
        let (s2, r2) = chan::unbounded::<()>();
        let (_s3, _r3) = chan::unbounded::<()>();
        with_peers(
            peers,
            vec![job(move || {
                corio::select! {
                    recv(r1) -> _ => panic!("r1 got nothing and is not closed"),
                    recv(r2) -> v => assert_eq!(v, Ok(())),
                }
            })],
            || {
                corio::sleep(DELAY);
                drop(s1.clone());
                s2.send(()).unwrap();
            },
        );
    }

    const STRESS: usize = 1_000;

    /// crossbeam: select_macro.rs and select.rs `stress_recv` (1,000 rounds, not 10,000).
    pub fn stress_receive_arms(peers: Peers) {
        let (s1, r1) = chan::unbounded();
        let (s2, r2) = chan::bounded(5);
        let (s3, r3) = chan::bounded(100);
        with_peers(
            peers,
            vec![job(|| {
                for i in 0..STRESS {
                    s1.send(i).unwrap();
                    r3.recv().unwrap();
                    s2.send(i).unwrap();
                    r3.recv().unwrap();
                }
            })],
            || {
                for i in 0..STRESS {
                    for _ in 0..2 {
                        corio::select! {
                            recv(r1) -> v => assert_eq!(v, Ok(i)),
                            recv(r2) -> v => assert_eq!(v, Ok(i)),
                        }
                        s3.send(()).unwrap();
                    }
                }
            },
        );
    }

    /// crossbeam: select_macro.rs and select.rs `stress_send`.
    pub fn stress_send_arms(peers: Peers) {
        let (s1, r1) = chan::bounded(0);
        let (s2, r2) = chan::bounded(0);
        let (s3, r3) = chan::bounded(100);
        with_peers(
            peers,
            vec![job(|| {
                for i in 0..STRESS {
                    assert_eq!(r1.recv(), Ok(i));
                    assert_eq!(r2.recv(), Ok(i));
                    r3.recv().unwrap();
                }
            })],
            || {
                for i in 0..STRESS {
                    for _ in 0..2 {
                        corio::select! {
                            send(s1, i) -> res => res.unwrap(),
                            send(s2, i) -> res => res.unwrap(),
                        }
                    }
                    s3.send(()).unwrap();
                }
            },
        );
    }

    /// crossbeam: select_macro.rs and select.rs `stress_mixed`, and select.rs `reuse`.
    pub fn stress_mixed_arms(peers: Peers) {
        let (s1, r1) = chan::bounded(0);
        let (s2, r2) = chan::bounded(0);
        let (s3, r3) = chan::bounded(100);
        with_peers(
            peers,
            vec![job(|| {
                for i in 0..STRESS {
                    s1.send(i).unwrap();
                    assert_eq!(r2.recv(), Ok(i));
                    r3.recv().unwrap();
                }
            })],
            || {
                for i in 0..STRESS {
                    for _ in 0..2 {
                        corio::select! {
                            recv(r1) -> v => assert_eq!(v, Ok(i)),
                            send(s2, i) -> res => res.unwrap(),
                        }
                    }
                    s3.send(()).unwrap();
                }
            },
        );
    }

    /// crossbeam: select_macro.rs and select.rs `stress_timeout_two_threads` (10 values,
    /// 10 ms pauses, 1 ms timeouts).
    pub fn stress_timeouts(peers: Peers) {
        const COUNT: usize = 10;
        let (s, r) = chan::bounded(2);
        with_peers(
            peers,
            vec![
                job(|| {
                    for i in 0..COUNT {
                        if i.is_multiple_of(2) {
                            corio::sleep(DELAY);
                        }
                        loop {
                            corio::select! {
                                send(s, i) -> res => { res.unwrap(); break }
                                after(MS) => {}
                            }
                        }
                    }
                }),
                job(|| {
                    for i in 0..COUNT {
                        if i.is_multiple_of(2) {
                            corio::sleep(DELAY);
                        }
                        loop {
                            corio::select! {
                                recv(r) -> v => { assert_eq!(v, Ok(i)); break }
                                after(MS) => {}
                            }
                        }
                    }
                }),
            ],
            || {},
        );
    }

    /// A select that both offers `i` and waits for a value, on one rendezvous channel; a value
    /// received is never its own.
    fn match_up(s: &Sender<usize>, r: &Receiver<usize>, i: usize) {
        corio::select! {
            recv(r) -> v => assert_ne!(v.unwrap(), i, "a select received its own value"),
            send(s, i) -> res => res.unwrap(),
        }
    }

    /// crossbeam: select_macro.rs and select.rs `matching`, and select.rs `sync_and_clone` and
    /// `send_and_clone` (the same with 20).
    pub fn selects_match_up_in_pairs(peers: Peers) {
        const N: usize = 44;
        let (s, r) = &chan::bounded::<usize>(0);
        let jobs = (0..N).map(|i| job(move || match_up(s, r, i))).collect();
        with_peers(peers, jobs, || {});
        assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
    }

    /// crossbeam: select_macro.rs and select.rs `matching_with_leftover`.
    pub fn selects_match_up_with_a_plain_sender_for_the_odd_one(peers: Peers) {
        const N: usize = 55;
        let (s, r) = &chan::bounded::<usize>(0);
        let jobs = (0..N).map(|i| job(move || match_up(s, r, i))).collect();
        with_peers(peers, jobs, || s.send(!0).unwrap());
        assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
    }

    /// crossbeam: select_macro.rs and select.rs `channel_through_channel` (200 hops, not 1,000).
    pub fn channels_sent_through_channels(peers: Peers) {
        const COUNT: usize = 200;
        type T = Box<dyn Any + Send>;
        for cap in 0..3 {
            let (s, r) = chan::bounded::<T>(cap);
            with_peers(
                peers,
                vec![
                    job(move || {
                        let mut s = s;
                        for _ in 0..COUNT {
                            let (new_s, new_r) = chan::bounded::<T>(cap);
                            let new_r: T = Box::new(Some(new_r));
                            corio::select! {
                                send(s, new_r) -> res => assert!(res.is_ok()),
                            }
                            s = new_s;
                        }
                    }),
                    job(move || {
                        let mut r = r;
                        for _ in 0..COUNT {
                            r = corio::select! {
                                recv(r) -> msg => msg
                                    .unwrap()
                                    .downcast_mut::<Option<Receiver<T>>>()
                                    .unwrap()
                                    .take()
                                    .unwrap(),
                            }
                        }
                    }),
                ],
                || {},
            );
        }
    }

    /// crossbeam's linearizability tests: at the instant of the select one of `r1`, `r2` holds
    /// a value (the peer sends on `s2` before taking from `r1`), so neither `default` nor
    /// `after(0)` may be chosen.
    fn linearizable(peers: Peers, after_zero: bool) {
        let count = match peers {
            Peers::Coroutines => 2_000,
            Peers::Threads => 300,
        };
        for step in 0..2 {
            let (start_s, start_r) = chan::bounded::<()>(0);
            let (end_s, end_r) = chan::bounded::<()>(0);
            let ((s1, r1), (s2, r2)) = if step == 0 {
                (chan::bounded::<i32>(1), chan::bounded::<i32>(1))
            } else {
                (chan::unbounded::<i32>(), chan::unbounded::<i32>())
            };
            with_peers(
                peers,
                vec![job(|| {
                    for _ in 0..count {
                        start_s.send(()).unwrap();
                        s1.send(1).unwrap();
                        if after_zero {
                            corio::select! {
                                recv(r1) -> v => v.unwrap(),
                                recv(r2) -> v => v.unwrap(),
                                after(Duration::ZERO) => panic!("after(0) chosen with a value ready"),
                            };
                        } else {
                            corio::select! {
                                recv(r1) -> v => v.unwrap(),
                                recv(r2) -> v => v.unwrap(),
                                default => panic!("default chosen with a value ready"),
                            };
                        }
                        end_s.send(()).unwrap();
                        let _ = r2.try_recv();
                    }
                })],
                || {
                    for _ in 0..count {
                        start_r.recv().unwrap();
                        s2.send(1).unwrap();
                        let _ = r1.try_recv();
                        end_r.recv().unwrap();
                    }
                },
            );
        }
    }

    /// crossbeam: select_macro.rs `linearizable_default`, select.rs `linearizable_try`.
    pub fn linearizable_default(peers: Peers) {
        linearizable(peers, false);
    }

    /// crossbeam: select_macro.rs and select.rs `linearizable_timeout` (with `after(0)`).
    pub fn linearizable_after_zero(peers: Peers) {
        linearizable(peers, true);
    }

    /// crossbeam: select_macro.rs and select.rs `fairness2` (2,000 rounds; select.rs adds arms
    /// conditionally, select_macro.rs swaps in a never-ready "hole" channel, as here). Each of
    /// an unbounded, a one-slot and a rendezvous channel gets at least 1/50 of its share.
    pub fn fairness_with_arms_switched_off(peers: Peers) {
        const COUNT: usize = 2_000;
        let (s1, r1) = chan::unbounded::<()>();
        let (s2, r2) = chan::bounded::<()>(1);
        let (s3, r3) = chan::bounded::<()>(0);
        let (hole, _hole_r) = chan::bounded::<()>(0);
        let hits = with_peers(
            peers,
            vec![job(|| {
                for _ in 0..COUNT {
                    let t1 = if s1.is_empty() { &s1 } else { &hole };
                    let t2 = if s2.is_empty() { &s2 } else { &hole };
                    corio::select! {
                        send(t1, ()) -> res => res.unwrap(),
                        send(t2, ()) -> res => res.unwrap(),
                        send(s3, ()) -> res => res.unwrap(),
                    }
                }
            })],
            || {
                let mut hits = [0usize; 3];
                for _ in 0..COUNT {
                    corio::select! {
                        recv(r1) -> v => { v.unwrap(); hits[0] += 1 },
                        recv(r2) -> v => { v.unwrap(); hits[1] += 1 },
                        recv(r3) -> v => { v.unwrap(); hits[2] += 1 },
                    }
                }
                hits
            },
        );
        assert!(hits.iter().all(|&h| h >= COUNT / 3 / 50), "{hits:?}");
    }

    /// crossbeam: select_macro.rs `try_recv`: a select with `default` takes a value only from a
    /// sender already waiting (retried until the peer waits, where crossbeam sleeps), and then
    /// sees the close.
    pub fn default_selects_receive_from_a_waiting_sender(peers: Peers) {
        let (s, r) = chan::bounded::<i32>(0);
        let (go_s, go_r) = chan::bounded::<()>(0);
        with_peers(
            peers,
            vec![
                job(move || {
                    corio::select! {
                        recv(r) -> _ => panic!("nothing was sent yet"),
                        default => {}
                    }
                    go_s.send(()).unwrap();
                    let v = loop {
                        corio::select! {
                            recv(r) -> v => break v,
                            default => corio::sleep(MS),
                        }
                    };
                    assert_eq!(v, Ok(7));
                    loop {
                        corio::select! {
                            recv(r) -> v => { assert_eq!(v, Err(RecvError)); break }
                            default => corio::sleep(MS),
                        }
                    }
                }),
                job(move || {
                    go_r.recv().unwrap();
                    corio::select! {
                        send(s, 7) -> res => res.unwrap(),
                    }
                }),
            ],
            || {},
        );
    }

    /// crossbeam: select_macro.rs `recv`.
    pub fn blocking_selects_receive_in_order_then_see_the_close(peers: Peers) {
        let (s, r) = chan::bounded(0);
        with_peers(
            peers,
            vec![
                job(move || {
                    corio::select! {
                        recv(r) -> v => assert_eq!(v, Ok(7)),
                    }
                    corio::sleep(DELAY);
                    corio::select! {
                        recv(r) -> v => assert_eq!(v, Ok(8)),
                    }
                    corio::sleep(DELAY);
                    corio::select! {
                        recv(r) -> v => assert_eq!(v, Ok(9)),
                    }
                    corio::select! {
                        recv(r) -> v => assert_eq!(v, Err(RecvError)),
                    }
                }),
                job(move || {
                    corio::sleep(DELAY * 3 / 2);
                    for v in 7..10 {
                        corio::select! {
                            send(s, v) -> res => res.unwrap(),
                        }
                    }
                }),
            ],
            || {},
        );
    }

    /// crossbeam: select_macro.rs `recv_timeout` (the peer sends after the first timeout, on a
    /// message).
    pub fn receive_selects_with_after(peers: Peers) {
        let (s, r) = chan::bounded::<i32>(0);
        let (go_s, go_r) = chan::bounded::<()>(0);
        with_peers(
            peers,
            vec![
                job(move || {
                    corio::select! {
                        recv(r) -> _ => panic!("nothing was sent yet"),
                        after(DELAY) => {}
                    }
                    go_s.send(()).unwrap();
                    corio::select! {
                        recv(r) -> v => assert_eq!(v, Ok(7)),
                        after(EVENTUALLY) => panic!("the value did not come"),
                    }
                    corio::select! {
                        recv(r) -> v => assert_eq!(v, Err(RecvError)),
                        after(EVENTUALLY) => panic!("the close did not come"),
                    }
                }),
                job(move || {
                    go_r.recv().unwrap();
                    corio::select! {
                        send(s, 7) -> res => res.unwrap(),
                    }
                }),
            ],
            || {},
        );
    }

    /// crossbeam: select_macro.rs `try_send`: a select with `default` sends only to a receiver
    /// already waiting (retried until the peer waits), and then gets the value back once the
    /// receiver is gone.
    pub fn default_selects_send_to_a_waiting_receiver(peers: Peers) {
        let (s, r) = chan::bounded(0);
        let (go_s, go_r) = chan::bounded::<()>(0);
        with_peers(
            peers,
            vec![
                job(move || {
                    corio::select! {
                        send(s, 7) -> _ => panic!("no receiver waits yet"),
                        default => {}
                    }
                    go_s.send(()).unwrap();
                    loop {
                        corio::select! {
                            send(s, 8) -> res => { res.unwrap(); break }
                            default => corio::sleep(MS),
                        }
                    }
                    loop {
                        corio::select! {
                            send(s, 8) -> res => { assert_eq!(res, Err(SendError(8))); break }
                            default => corio::sleep(MS),
                        }
                    }
                }),
                job(move || {
                    go_r.recv().unwrap();
                    corio::select! {
                        recv(r) -> v => assert_eq!(v, Ok(8)),
                    }
                }),
            ],
            || {},
        );
    }

    /// crossbeam: select_macro.rs `send`.
    pub fn blocking_selects_send_in_order(peers: Peers) {
        let (s, r) = chan::bounded(0);
        with_peers(
            peers,
            vec![
                job(move || {
                    corio::select! {
                        send(s, 7) -> res => res.unwrap(),
                    }
                    corio::sleep(DELAY);
                    corio::select! {
                        send(s, 8) -> res => res.unwrap(),
                    }
                    corio::sleep(DELAY);
                    corio::select! {
                        send(s, 9) -> res => res.unwrap(),
                    }
                }),
                job(move || {
                    corio::sleep(DELAY * 3 / 2);
                    for v in 7..10 {
                        corio::select! {
                            recv(r) -> got => assert_eq!(got, Ok(v)),
                        }
                    }
                }),
            ],
            || {},
        );
    }

    /// crossbeam: select_macro.rs `send_timeout` (the peer receives after the first timeout,
    /// on a message).
    pub fn send_selects_with_after(peers: Peers) {
        let (s, r) = chan::bounded(0);
        let (go_s, go_r) = chan::bounded::<()>(0);
        with_peers(
            peers,
            vec![
                job(move || {
                    corio::select! {
                        send(s, 7) -> _ => panic!("no receiver waits yet"),
                        after(DELAY) => {}
                    }
                    go_s.send(()).unwrap();
                    corio::select! {
                        send(s, 8) -> res => res.unwrap(),
                        after(EVENTUALLY) => panic!("the receiver did not come"),
                    }
                    corio::select! {
                        send(s, 9) -> res => assert_eq!(res, Err(SendError(9))),
                        after(EVENTUALLY) => panic!("the close did not come"),
                    }
                }),
                job(move || {
                    go_r.recv().unwrap();
                    corio::select! {
                        recv(r) -> v => assert_eq!(v, Ok(8)),
                    }
                }),
            ],
            || {},
        );
    }

    /// crossbeam: select_macro.rs `disconnect_wakes_sender` and `disconnect_wakes_receiver`.
    pub fn the_last_handle_going_wakes_a_waiting_select(peers: Peers) {
        let (s, r) = chan::bounded(0);
        with_peers(
            peers,
            vec![
                job(move || {
                    corio::select! {
                        send(s, ()) -> res => assert_eq!(res, Err(SendError(()))),
                    }
                }),
                job(move || {
                    corio::sleep(DELAY);
                    drop(r);
                }),
            ],
            || {},
        );
        let (s, r) = chan::bounded::<()>(0);
        with_peers(
            peers,
            vec![
                job(move || {
                    corio::select! {
                        recv(r) -> res => assert_eq!(res, Err(RecvError)),
                    }
                }),
                job(move || {
                    corio::sleep(DELAY);
                    drop(s);
                }),
            ],
            || {},
        );
    }

    /// adversarial: every channel of a waiting select closes (one by a receiver's `close`, one
    /// by the last sender going, one by the last receiver going): the select wakes with exactly
    /// one arm's error, a send arm's value handed back.
    pub fn closing_every_channel_wakes_a_waiting_select_with_one_error(peers: Peers) {
        for _ in 0..20 {
            let (a_tx, a) = chan::bounded::<u8>(0);
            let (b_tx, b) = chan::bounded::<u8>(0);
            let (c_tx, c) = chan::bounded::<u8>(0);
            let closer = a.clone();
            with_peers(
                peers,
                vec![job(move || {
                    corio::sleep(MS);
                    closer.close();
                    drop(b_tx);
                    drop(c);
                })],
                || {
                    corio::select! {
                        recv(a) -> v => assert_eq!(v, Err(RecvError)),
                        recv(b) -> v => assert_eq!(v, Err(RecvError)),
                        send(c_tx, 9) -> res => assert_eq!(res, Err(SendError(9))),
                        after(EVENTUALLY) => panic!("the closes did not wake the select"),
                    }
                },
            );
            assert_eq!(a_tx.try_send(1), Err(TrySendError::Disconnected(1)));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Adversarial cases without peers.

/// adversarial: four ready arms of four kinds (a buffered value, a closed receive, room to
/// send, a closed send) are each chosen about a quarter of the time (at least an eighth: 18σ
/// below the mean).
#[test]
fn ready_arms_of_every_kind_are_chosen_fairly() {
    everywhere(|| {
        const COUNT: usize = 4_000;
        let (a_tx, a) = chan::unbounded::<u16>();
        let (b_tx, b) = chan::unbounded::<u16>();
        let (c_tx, c) = chan::bounded::<u16>(0);
        c_tx.close();
        let (d_tx, d) = chan::bounded::<u16>(0);
        drop(d);
        for _ in 0..COUNT {
            a_tx.send(0).unwrap();
        }
        let mut hits = [0usize; 4];
        for i in 0..COUNT as u16 {
            let k = corio::select! {
                recv(a) -> v => { assert_eq!(v, Ok(0)); 0 },
                send(b_tx, i) -> res => { res.unwrap(); 1 },
                recv(c) -> v => { assert_eq!(v, Err(RecvError)); 2 },
                send(d_tx, i) -> res => { assert_eq!(res, Err(SendError(i))); 3 },
            };
            hits[k] += 1;
        }
        assert!(hits.iter().all(|&h| h >= COUNT / 4 / 2), "{hits:?}");
        assert_eq!((a.len(), b.len()), (COUNT - hits[0], hits[1]));
    });
}

/// adversarial: a select over closed channels only returns at once, each time with one arm's
/// error (a send's value back), each arm chosen sometimes; `default` and `after(0)` never win.
#[test]
fn a_select_over_only_closed_channels_returns_at_once_and_fairly() {
    everywhere(|| {
        const COUNT: usize = 600;
        let (a_tx, a) = chan::bounded::<u16>(0);
        a_tx.close();
        let (b_tx, b) = chan::unbounded::<u16>();
        drop(b_tx);
        let (c_tx, c) = chan::bounded::<u16>(3);
        drop(c);
        let mut hits = [0usize; 3];
        for i in 0..COUNT as u16 {
            let k = match i % 3 {
                0 => corio::select! {
                    recv(a) -> v => { assert_eq!(v, Err(RecvError)); 0 },
                    recv(b) -> v => { assert_eq!(v, Err(RecvError)); 1 },
                    send(c_tx, i) -> res => { assert_eq!(res, Err(SendError(i))); 2 },
                },
                1 => corio::select! {
                    recv(a) -> v => { assert_eq!(v, Err(RecvError)); 0 },
                    recv(b) -> v => { assert_eq!(v, Err(RecvError)); 1 },
                    send(c_tx, i) -> res => { assert_eq!(res, Err(SendError(i))); 2 },
                    default => panic!("default beat closed channels"),
                },
                _ => corio::select! {
                    recv(a) -> v => { assert_eq!(v, Err(RecvError)); 0 },
                    recv(b) -> v => { assert_eq!(v, Err(RecvError)); 1 },
                    send(c_tx, i) -> res => { assert_eq!(res, Err(SendError(i))); 2 },
                    after(Duration::ZERO) => panic!("after(0) beat closed channels"),
                },
            };
            hits[k] += 1;
        }
        assert!(hits.iter().all(|&h| h >= COUNT / 3 / 2), "{hits:?}");
    });
}

/// adversarial: a closed channel with values buffered is drained through a select, in order,
/// before its arm reports the close; a closed empty channel beside it does not hide them.
#[test]
fn a_closed_channel_is_drained_through_a_select_before_it_reports_closed() {
    everywhere(|| {
        let (a_tx, a) = chan::bounded::<u8>(4);
        for v in 1..=3 {
            a_tx.send(v).unwrap();
        }
        drop(a_tx);
        let (_, b) = chan::bounded::<u8>(0);
        let mut got = Vec::new();
        loop {
            corio::select! {
                recv(a) -> v => match v {
                    Ok(v) => got.push(v),
                    Err(RecvError) => break,
                },
                recv(b) -> v => assert_eq!(v, Err(RecvError)),
            }
        }
        assert_eq!(got, [1, 2, 3]);
    });
}

/// adversarial: `after(0)`: alone it returns; with nothing ready it is chosen and leaves no
/// waiter behind (a rendezvous send then finds no receiver, a receive no sender); it never beats
/// a ready or closed arm.
#[test]
fn after_zero_is_chosen_only_when_nothing_is_ready_and_leaves_no_waiter() {
    everywhere(|| {
        corio::select! {
            after(Duration::ZERO) => {}
        }
        let (tx, rx) = chan::bounded::<u32>(0);
        for _ in 0..100 {
            let r = corio::select! {
                recv(rx) -> _ => "recv",
                send(tx, 1) -> _ => "send",
                after(Duration::ZERO) => "after",
            };
            assert_eq!(r, "after");
            assert_eq!(
                tx.try_send(2),
                Err(TrySendError::Full(2)),
                "a receive arm stayed"
            );
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "a send arm stayed");
        }
        let (btx, b) = chan::bounded::<u32>(1);
        for i in 0..1_000 {
            btx.send(i).unwrap();
            corio::select! {
                recv(rx) -> _ => panic!("nothing on rx"),
                recv(b) -> v => assert_eq!(v, Ok(i)),
                after(Duration::ZERO) => panic!("after(0) beat a ready arm"),
            }
        }
        drop(btx);
        corio::select! {
            recv(rx) -> _ => panic!("nothing on rx"),
            recv(b) -> v => assert_eq!(v, Err(RecvError)),
            after(Duration::ZERO) => panic!("after(0) beat a closed arm"),
        }
    });
}

/// adversarial: a select polled once (both arms queued on one rendezvous channel), then
/// completed by a send: a second send must not be swallowed by the select's stale second
/// entry (it finds no receiver), and the select got the first value once.
#[test]
fn a_stale_duplicate_receive_arm_swallows_no_second_send() {
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u32>(0);
        let rx2 = rx.clone();
        let mut fut = Box::pin(async {
            corio::select_async! {
                recv(rx) -> v => v,
                recv(rx2) -> v => v,
            }
        });
        assert!(poll_once(fut.as_mut()).is_pending());
        tx.try_send(1).unwrap();
        assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
        assert_eq!(poll_once(fut.as_mut()), Poll::Ready(Ok(1)));
        drop(fut);
        assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    });
}

/// adversarial: a select with two send arms queued on one rendezvous channel gives a receiver
/// exactly one of its values; the other arm's stale entry gives nothing to a second receive,
/// and its value is dropped (not sent) when the select completes.
#[test]
fn a_stale_duplicate_send_arm_gives_no_second_value() {
    within(EVENTUALLY, || {
        let drops = Drops::new();
        let (tx, rx) = chan::bounded::<(u8, support::DropToken)>(0);
        let mut fut = Box::pin(async {
            corio::select_async! {
                send(tx, (0, drops.token())) -> res => { res.unwrap(); 0 },
                send(tx, (1, drops.token())) -> res => { res.unwrap(); 1 },
            }
        });
        assert!(poll_once(fut.as_mut()).is_pending());
        let (k, token) = rx.try_recv().unwrap();
        assert!(
            rx.try_recv().is_err(),
            "the stale send arm gave a second value"
        );
        assert_eq!(poll_once(fut.as_mut()), Poll::Ready(k));
        assert_eq!(
            drops.dropped(),
            1,
            "the unsent value is dropped when the select completes"
        );
        drop(token);
        drop(fut);
        assert_eq!((drops.made(), drops.dropped()), (2, 2));
        assert!(rx.try_recv().is_err());
    });
}

/// adversarial: when two receive arms on one channel are both queued, which one a sender meets
/// is random (they are queued in the random poll order): each arm is met in at least a
/// quarter of 400 selects.
#[test]
fn duplicate_waiting_arms_are_met_in_random_order() {
    within(EVENTUALLY, || {
        const COUNT: u32 = 400;
        let mut met = [0u32; 2];
        for i in 0..COUNT {
            let (tx, rx) = chan::bounded::<u32>(0);
            let mut fut = Box::pin(async {
                corio::select_async! {
                    recv(rx) -> v => (0, v),
                    recv(rx) -> v => (1, v),
                }
            });
            assert!(poll_once(fut.as_mut()).is_pending());
            tx.try_send(i).unwrap();
            let Poll::Ready((k, v)) = poll_once(fut.as_mut()) else {
                panic!("the select was completed")
            };
            assert_eq!(v, Ok(i));
            met[k] += 1;
        }
        assert!(met.iter().all(|&m| m >= COUNT / 4), "{met:?}");
    });
}

/// adversarial: a select waiting with a send arm and a receive arm on one rendezvous channel
/// is met by others through either arm, and never by itself: a receive takes its value through
/// the send arm, a send hands a value to the receive arm.
#[test]
fn send_and_receive_arms_on_one_rendezvous_channel_meet_others() {
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u32>(0);
        for _ in 0..50 {
            let mut fut = Box::pin(async {
                corio::select_async! {
                    send(tx, 1) -> res => { res.unwrap(); None },
                    recv(rx) -> v => Some(v.unwrap()),
                }
            });
            assert!(poll_once(fut.as_mut()).is_pending());
            assert!(
                poll_once(fut.as_mut()).is_pending(),
                "the select met itself"
            );
            assert_eq!(rx.try_recv(), Ok(1));
            assert_eq!(poll_once(fut.as_mut()), Poll::Ready(None));
            drop(fut);

            let mut fut = Box::pin(async {
                corio::select_async! {
                    send(tx, 1) -> res => { res.unwrap(); None },
                    recv(rx) -> v => Some(v.unwrap()),
                }
            });
            assert!(poll_once(fut.as_mut()).is_pending());
            tx.try_send(5).unwrap();
            assert_eq!(poll_once(fut.as_mut()), Poll::Ready(Some(5)));
            drop(fut);
            assert_eq!(
                rx.try_recv(),
                Err(TryRecvError::Empty),
                "the unsent 1 stayed"
            );
            assert_eq!(
                tx.try_send(6),
                Err(TrySendError::Full(6)),
                "a receive arm stayed"
            );
        }
    });
}

/// adversarial: a select handed a value and then dropped across a close gives the value to a
/// receiver already waiting, which gets it and then the close (H6 with "Closing with values in
/// transit"); with no receiver waiting, the value goes back to the buffer, before the close.
#[test]
fn a_select_dropped_after_a_hand_off_across_a_close_loses_no_value() {
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u32>(0);
        let (_other_tx, other) = chan::bounded::<u32>(0);
        let mut fut = Box::pin(async {
            corio::select_async! {
                recv(other) -> v => v,
                recv(rx) -> v => v,
            }
        });
        assert!(poll_once(fut.as_mut()).is_pending());
        let mut waiting = Box::pin(rx.recv_async());
        assert!(poll_once(waiting.as_mut()).is_pending());
        tx.try_send(11).unwrap(); // to the select, queued first
        drop(tx);
        assert!(
            poll_once(waiting.as_mut()).is_pending(),
            "told closed while a value is in transit"
        );
        drop(fut);
        assert_eq!(poll_once(waiting.as_mut()), Poll::Ready(Ok(11)));
        drop(waiting);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));

        let (tx, rx) = chan::bounded::<u32>(0);
        let mut fut = Box::pin(async {
            corio::select_async! {
                recv(other) -> v => v,
                recv(rx) -> v => v,
            }
        });
        assert!(poll_once(fut.as_mut()).is_pending());
        tx.try_send(12).unwrap();
        drop(tx);
        drop(fut);
        assert_eq!(rx.try_recv(), Ok(12));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    });
}

/// adversarial: a send select dropped after a receiver took its value sent it exactly once
/// (the value is not sent again nor dropped by the select); one dropped before anything
/// happened sent nothing and drops its value.
#[test]
fn a_send_select_dropped_mid_hand_off_sends_exactly_once() {
    within(EVENTUALLY, || {
        let drops = Drops::new();
        let (tx, rx) = chan::bounded::<support::DropToken>(0);
        let (other_tx, _other) = chan::bounded::<support::DropToken>(0);
        let mut fut = Box::pin(async {
            corio::select_async! {
                send(other_tx, drops.token()) -> _ => {},
                send(tx, drops.token()) -> _ => {},
            }
        });
        assert!(poll_once(fut.as_mut()).is_pending());
        let got = rx.try_recv().expect("the send arm offered its value");
        drop(fut);
        assert_eq!(drops.dropped(), 1, "only the other arm's value is dropped");
        assert!(rx.try_recv().is_err(), "sent twice");
        drop(got);
        assert_eq!(drops.dropped(), 2);

        let mut fut = Box::pin(async {
            corio::select_async! {
                send(tx, drops.token()) -> _ => {},
            }
        });
        assert!(poll_once(fut.as_mut()).is_pending());
        drop(fut);
        assert_eq!(drops.dropped(), 3);
        assert!(
            rx.try_recv().is_err(),
            "a cancelled send delivered its value"
        );
    });
}

/// adversarial: a panic in a chosen arm's body (chosen at once, or after waiting), in an
/// `after` body or in a `default` body leaves every channel of the select usable, with no
/// waiter left behind.
#[test]
fn a_panic_in_an_arm_body_leaves_the_channels_usable() {
    quiet_expected_panics();
    everywhere(|| {
        fn still_usable(
            a_tx: &Sender<u32>,
            a: &Receiver<u32>,
            b_tx: &Sender<u32>,
            b: &Receiver<u32>,
        ) {
            assert_eq!(
                a_tx.try_send(90),
                Err(TrySendError::Full(90)),
                "a waiter stayed on a"
            );
            assert_eq!(a.try_recv(), Err(TryRecvError::Empty));
            assert_eq!(b.try_recv(), Err(TryRecvError::Empty));
            b_tx.try_send(91).unwrap();
            let a_tx2 = a_tx.clone();
            let sender = std::thread::spawn(move || a_tx2.send(92).unwrap());
            let mut got = Vec::new();
            for _ in 0..2 {
                corio::select! {
                    recv(a) -> v => got.push(v.unwrap()),
                    recv(b) -> v => got.push(v.unwrap()),
                    after(EVENTUALLY) => panic!("a channel stopped working"),
                }
            }
            got.sort_unstable();
            assert_eq!(got, [91, 92]);
            sender.join().unwrap();
        }
        let (a_tx, a) = chan::bounded::<u32>(0);
        let (b_tx, b) = chan::bounded::<u32>(1);

        b_tx.send(1).unwrap();
        let msg = panic_message(|| {
            corio::select! {
                recv(a) -> _ => unreachable!("nothing on a"),
                recv(b) -> v => panic!("{EXPECTED} at once, {v:?}"),
            }
        });
        assert!(msg.contains("Ok(1)"), "{msg}");
        still_usable(&a_tx, &a, &b_tx, &b);

        let a_tx2 = a_tx.clone();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(MS);
            a_tx2.send(2).unwrap()
        });
        let msg = panic_message(|| {
            corio::select! {
                recv(a) -> v => panic!("{EXPECTED} after waiting, {v:?}"),
                recv(b) -> _ => unreachable!("nothing on b"),
            }
        });
        assert!(msg.contains("Ok(2)"), "{msg}");
        sender.join().unwrap();
        still_usable(&a_tx, &a, &b_tx, &b);

        b_tx.send(30).unwrap();
        let msg = panic_message(|| {
            corio::select! {
                recv(a) -> _ => unreachable!("nothing on a"),
                send(b_tx, 3) -> _ => unreachable!("b is full"),
                after(MS) => panic!("{EXPECTED} in after"),
            }
        });
        assert!(msg.contains("in after"), "{msg}");
        assert_eq!(b.try_recv(), Ok(30), "the full channel kept its value");
        still_usable(&a_tx, &a, &b_tx, &b);

        let msg = panic_message(|| {
            corio::select! {
                recv(a) -> _ => unreachable!("nothing on a"),
                default => panic!("{EXPECTED} in default"),
            }
        });
        assert!(msg.contains("in default"), "{msg}");
        still_usable(&a_tx, &a, &b_tx, &b);
    });
}

/// adversarial: the `Drop` of a send arm's unsent value panics (it runs after the select, before
/// the chosen body): the panic reaches the caller and every channel stays usable.
#[test]
fn a_panicking_drop_of_an_unsent_value_leaves_the_channels_usable() {
    quiet_expected_panics();
    struct Bomb(bool);
    impl Drop for Bomb {
        fn drop(&mut self) {
            if self.0 {
                panic!("{EXPECTED} an unsent value's drop");
            }
        }
    }
    within(EVENTUALLY, || {
        let (a_tx, a) = chan::bounded::<u32>(1);
        let (b_tx, b) = chan::bounded::<Bomb>(0);
        a_tx.send(1).unwrap();
        let msg = panic_message(|| {
            corio::select! {
                recv(a) -> v => assert_eq!(v, Ok(1)),
                send(b_tx, Bomb(true)) -> _ => unreachable!("nobody receives on b"),
            }
        });
        assert!(msg.contains("unsent value's drop"), "{msg}");
        assert_eq!(a.try_recv(), Err(TryRecvError::Empty));
        a_tx.try_send(2).unwrap();
        assert_eq!(a.try_recv(), Ok(2));
        assert!(matches!(
            b_tx.try_send(Bomb(false)),
            Err(TrySendError::Full(_))
        ));
        assert!(b.try_recv().is_err(), "the bomb was sent");
        let b_tx2 = b_tx.clone();
        let sender = std::thread::spawn(move || b_tx2.send(Bomb(false)).is_ok());
        corio::select! {
            recv(b) -> v => assert!(v.is_ok()),
            after(EVENTUALLY) => panic!("b stopped working"),
        }
        assert!(sender.join().unwrap());
    });
}

/// adversarial: "Closing with values in transit" with a select as the other receiver: a receive
/// is handed a value, the channel closes, and a select waiting on it is not told "closed" while
/// the value is in transit; when that receive is dropped the value reaches the select, when it
/// is polled instead the select gets the close.
#[test]
fn a_select_is_not_told_closed_while_a_value_is_in_transit() {
    within(EVENTUALLY, || {
        for give_back in [true, false] {
            let (tx, rx) = chan::bounded::<u32>(0);
            let (_other_tx, other) = chan::bounded::<u32>(0);
            let mut first = Box::pin(rx.recv_async());
            assert!(poll_once(first.as_mut()).is_pending());
            tx.try_send(5).unwrap();
            drop(tx);
            let mut select = Box::pin(async {
                corio::select_async! {
                    recv(other) -> v => (0, v),
                    recv(rx) -> v => (1, v),
                }
            });
            assert!(
                poll_once(select.as_mut()).is_pending(),
                "told closed while a value is in transit"
            );
            if give_back {
                drop(first);
                assert_eq!(poll_once(select.as_mut()), Poll::Ready((1, Ok(5))));
            } else {
                assert_eq!(poll_once(first.as_mut()), Poll::Ready(Ok(5)));
                assert_eq!(poll_once(select.as_mut()), Poll::Ready((1, Err(RecvError))));
            }
        }
    });
}

/// adversarial: a send arm waiting on a full channel gets its own value back when the last
/// receiver goes (the buffered value is dropped then, as documented).
#[test]
fn a_waiting_send_arm_gets_its_value_back_when_the_last_receiver_goes() {
    within(EVENTUALLY, || {
        let drops = Drops::new();
        let (tx, rx) = chan::bounded::<(u8, support::DropToken)>(1);
        tx.try_send((1, drops.token())).unwrap();
        let (_other_tx, other) = chan::bounded::<u8>(0);
        let mut fut = Box::pin(async {
            corio::select_async! {
                recv(other) -> _ => None,
                send(tx, (2, drops.token())) -> res => Some(res),
            }
        });
        assert!(poll_once(fut.as_mut()).is_pending());
        drop(rx);
        assert_eq!(
            drops.dropped(),
            1,
            "the buffered value goes with the last receiver"
        );
        let Poll::Ready(Some(Err(SendError((k, token))))) = poll_once(fut.as_mut()) else {
            panic!("the send arm did not get its value back")
        };
        assert_eq!(k, 2);
        drop(token);
        drop(fut);
        assert_eq!((drops.made(), drops.dropped()), (2, 2));
    });
}

/// A waker whose `clone` (user code, as its `RawWakerVTable` is) runs this thread's `ON_CLONE`.
fn waker_with_a_clone_hook() -> Waker {
    fn clone(_: *const ()) -> RawWaker {
        ON_CLONE.with(|hook| {
            if let Some(hook) = &*hook.borrow() {
                hook();
            }
        });
        RawWaker::new(std::ptr::null(), &VTABLE)
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    // SAFETY: the vtable ignores the data pointer (null here), `clone` returns a waker with the
    // same vtable, and `wake`, `wake_by_ref` and `drop` do nothing: the `RawWaker` contract holds.
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
}

thread_local! {
    static ON_CLONE: std::cell::RefCell<Option<Box<dyn Fn()>>> = const { std::cell::RefCell::new(None) };
}

/// adversarial: a select's first poll clones its task's waker while it holds the locks of its
/// channels; a waker whose `clone` uses one of those channels must not deadlock (corio drops
/// and wakes wakers after unlocking for this reason: "a critical section runs no user code").
#[test]
fn a_waker_whose_clone_uses_the_channel_does_not_deadlock_a_select() {
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u32>(0);
        let tx2 = tx.clone();
        ON_CLONE.with(|hook| {
            *hook.borrow_mut() = Some(Box::new(move || {
                let _ = tx2.try_send(0);
            }))
        });
        let waker = waker_with_a_clone_hook();
        let mut fut = Box::pin(async {
            corio::select_async! {
                recv(rx) -> v => v,
            }
        });
        let pending = fut
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending();
        ON_CLONE.with(|hook| *hook.borrow_mut() = None);
        assert!(pending);
        drop(fut);
        assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    });
}

/// adversarial: a waker whose `clone` panics during a select's first poll must not leave the
/// select's channels locked (the ends are `UnwindSafe` because "a critical section runs no user
/// code, so a panic cannot leave a channel half-changed", docs/chan.md).
#[test]
fn a_waker_whose_clone_panics_leaves_the_selects_channels_usable() {
    quiet_expected_panics();
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u32>(1);
        ON_CLONE
            .with(|hook| *hook.borrow_mut() = Some(Box::new(|| panic!("{EXPECTED} waker clone"))));
        let waker = waker_with_a_clone_hook();
        let msg = panic_message(|| {
            let mut fut = Box::pin(async {
                corio::select_async! {
                    recv(rx) -> v => v,
                }
            });
            let _ = fut.as_mut().poll(&mut Context::from_waker(&waker));
        });
        ON_CLONE.with(|hook| *hook.borrow_mut() = None);
        assert!(msg.contains("waker clone"), "{msg}");
        tx.try_send(1).unwrap();
        assert_eq!(rx.try_recv(), Ok(1));
    });
}

/// A waker like [`waker_with_a_clone_hook`]'s, which does not `will_wake` it (another data
/// pointer): a later poll with it must store it, a clone.
fn other_waker_with_a_clone_hook() -> Waker {
    fn clone(data: *const ()) -> RawWaker {
        ON_CLONE.with(|hook| {
            if let Some(hook) = &*hook.borrow() {
                hook();
            }
        });
        RawWaker::new(data, &VTABLE)
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    static DATA: u8 = 0;
    // SAFETY: as `waker_with_a_clone_hook`'s: the data pointer (a static) is never read.
    unsafe { Waker::from_raw(RawWaker::new((&raw const DATA).cast(), &VTABLE)) }
}

/// adversarial (the lone operations' face of the two above): a receive's, a send's and a
/// stream's first poll, a queued receive's and a select's later poll with a new waker — each
/// stores a clone of its waker; a clone that panics must leave the channel usable, and one
/// that uses the channel must not spin for ever.
#[test]
fn a_waker_whose_clone_panics_or_uses_the_channel_leaves_lone_waits_usable() {
    use futures::StreamExt;
    quiet_expected_panics();
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u32>(0);
        type Step<'a> = (&'a str, Box<dyn Fn() + 'a>);
        let polls: [Step<'_>; 5] = [
            (
                "recv, first poll",
                Box::new(|| {
                    let mut f = Box::pin(rx.recv_async());
                    let _ = f
                        .as_mut()
                        .poll(&mut Context::from_waker(&waker_with_a_clone_hook()));
                }),
            ),
            (
                "send, first poll",
                Box::new(|| {
                    let mut f = Box::pin(tx.send_async(9));
                    let _ = f
                        .as_mut()
                        .poll(&mut Context::from_waker(&waker_with_a_clone_hook()));
                }),
            ),
            (
                "stream, first poll",
                Box::new(|| {
                    let mut s = rx.clone();
                    let _ = s.poll_next_unpin(&mut Context::from_waker(&waker_with_a_clone_hook()));
                }),
            ),
            (
                "recv, a later poll",
                Box::new(|| {
                    let mut f = Box::pin(rx.recv_async());
                    let _ = f.as_mut().poll(&mut Context::from_waker(Waker::noop()));
                    let _ = f
                        .as_mut()
                        .poll(&mut Context::from_waker(&other_waker_with_a_clone_hook()));
                }),
            ),
            (
                "select, a later poll",
                Box::new(|| {
                    let mut f = Box::pin(async {
                        corio::select_async! { recv(rx) -> v => v }
                    });
                    let _ = f.as_mut().poll(&mut Context::from_waker(Waker::noop()));
                    let _ = f
                        .as_mut()
                        .poll(&mut Context::from_waker(&other_waker_with_a_clone_hook()));
                }),
            ),
        ];
        for (what, poll) in &polls {
            ON_CLONE.with(|hook| {
                *hook.borrow_mut() = Some(Box::new(|| panic!("{EXPECTED} waker clone")))
            });
            let msg = panic_message(poll);
            ON_CLONE.with(|hook| *hook.borrow_mut() = None);
            assert!(msg.contains("waker clone"), "{what}: {msg}");
            assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)), "{what}");
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "{what}");

            let (tx2, rx2) = (tx.clone(), rx.clone());
            ON_CLONE.with(|hook| {
                *hook.borrow_mut() = Some(Box::new(move || {
                    let _ = (tx2.is_full(), rx2.len());
                    let _ = tx2.try_send(0);
                }))
            });
            poll();
            ON_CLONE.with(|hook| *hook.borrow_mut() = None);
        }
    });
}

/// One `select!` arm per listed index of `$rs`, each evaluating to `(index, result)`.
macro_rules! select_over {
    ($rs:ident; $($i:literal)*) => {
        corio::select! { $( recv($rs[$i]) -> v => ($i, v), )* }
    };
}

/// adversarial: 64 arms (`MAX_ARMS`) work, the last one ready; 65 panic, as documented.
#[test]
fn sixty_four_arms_work_and_sixty_five_panic() {
    within(EVENTUALLY, || {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..65).map(|_| chan::bounded::<u8>(1)).unzip();
        txs[63].send(7).unwrap();
        let got = select_over!(rxs;
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
            32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60
            61 62 63);
        assert_eq!(got, (63, Ok(7)));
        txs[64].send(8).unwrap();
        let msg = panic_message(|| {
            let _ = select_over!(rxs;
                0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
                31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58
                59 60 61 62 63 64);
        });
        assert!(msg.contains("at most 64"), "{msg}");
        assert_eq!(rxs[64].try_recv(), Ok(8), "the refused select took nothing");
    });
}

/// adversarial: the unsent values of a long run of selects are dropped exactly once each,
/// whichever arm is chosen (no leak, no double drop).
#[test]
fn unsent_values_are_dropped_exactly_once() {
    everywhere(|| {
        let drops = Drops::new();
        let (a_tx, a) = chan::bounded::<support::DropToken>(1);
        let (b_tx, b) = chan::bounded::<support::DropToken>(1);
        for _ in 0..500 {
            corio::select! {
                send(a_tx, drops.token()) -> res => res.unwrap(),
                send(b_tx, drops.token()) -> res => res.unwrap(),
            }
            let _ = a.try_recv();
            let _ = b.try_recv();
        }
        assert_eq!((drops.made(), drops.dropped()), (1_000, 1_000));
    });
}

/// adversarial: a select with no arms waits for ever (Go's `select {}`, as documented): under a
/// timeout it times out, and dropping it is harmless.
#[test]
fn an_empty_select_waits_for_ever() {
    within(EVENTUALLY, || {
        let mut fut = Box::pin(async {
            corio::select_async! {}
        });
        assert!(poll_once(fut.as_mut()).is_pending());
        assert!(poll_once(fut.as_mut()).is_pending());
        drop(fut);
        let r = corio::time::timeout(DELAY, async {
            corio::select_async! {}
        });
        assert!(r.is_err());
    });
}

// ---------------------------------------------------------------------------------------------
// Peers on plain threads (crossbeam's own setting).

mod plain_threads {
    use super::*;

    /// crossbeam: `disconnected`.
    #[test]
    fn a_closed_arm_wakes_a_waiting_select() {
        on_threads(peer_bodies::a_closed_arm_wakes_a_waiting_select);
    }

    /// crossbeam: `timeout`.
    #[test]
    fn after_fires_then_a_later_value_is_received() {
        on_threads(peer_bodies::after_fires_then_a_later_value_is_received);
    }

    /// crossbeam: `unblocks`.
    #[test]
    fn a_waiting_select_is_completed_by_a_late_peer() {
        on_threads(peer_bodies::a_waiting_select_is_completed_by_a_late_peer);
    }

    /// crossbeam: `both_ready`.
    #[test]
    fn a_receive_and_a_send_arm_each_complete_once() {
        on_threads(peer_bodies::a_receive_and_a_send_arm_each_complete_once);
    }

    /// crossbeam: `loop_try`.
    #[test]
    fn busy_loops_of_default_selects_meet_a_blocking_select() {
        on_threads(peer_bodies::busy_loops_of_default_selects_meet_a_blocking_select);
    }

    /// crossbeam: `cloning1`.
    #[test]
    fn dropping_a_sender_clone_does_not_complete_a_select() {
        on_threads(peer_bodies::dropping_a_sender_clone_does_not_complete_a_select);
    }

    /// crossbeam: `cloning2`.
    #[test]
    fn dropping_a_sender_clone_does_not_wake_a_waiting_select() {
        on_threads(peer_bodies::dropping_a_sender_clone_does_not_wake_a_waiting_select);
    }

    /// crossbeam: `stress_recv`.
    #[test]
    fn stress_receive_arms() {
        on_threads(peer_bodies::stress_receive_arms);
    }

    /// crossbeam: `stress_send`.
    #[test]
    fn stress_send_arms() {
        on_threads(peer_bodies::stress_send_arms);
    }

    /// crossbeam: `stress_mixed`, `reuse`.
    #[test]
    fn stress_mixed_arms() {
        on_threads(peer_bodies::stress_mixed_arms);
    }

    /// crossbeam: `stress_timeout_two_threads`.
    #[test]
    fn stress_timeouts() {
        on_threads(peer_bodies::stress_timeouts);
    }

    /// crossbeam: `matching`, `sync_and_clone`, `send_and_clone`.
    #[test]
    fn selects_match_up_in_pairs() {
        on_threads(peer_bodies::selects_match_up_in_pairs);
    }

    /// crossbeam: `matching_with_leftover`.
    #[test]
    fn selects_match_up_with_a_plain_sender_for_the_odd_one() {
        on_threads(peer_bodies::selects_match_up_with_a_plain_sender_for_the_odd_one);
    }

    /// crossbeam: `channel_through_channel`.
    #[test]
    fn channels_sent_through_channels() {
        on_threads(peer_bodies::channels_sent_through_channels);
    }

    /// crossbeam: `linearizable_default`, `linearizable_try`.
    #[test]
    fn linearizable_default() {
        on_threads(peer_bodies::linearizable_default);
    }

    /// crossbeam: `linearizable_timeout`.
    #[test]
    fn linearizable_after_zero() {
        on_threads(peer_bodies::linearizable_after_zero);
    }

    /// crossbeam: `fairness2`.
    #[test]
    fn fairness_with_arms_switched_off() {
        on_threads(peer_bodies::fairness_with_arms_switched_off);
    }

    /// crossbeam: `try_recv`.
    #[test]
    fn default_selects_receive_from_a_waiting_sender() {
        on_threads(peer_bodies::default_selects_receive_from_a_waiting_sender);
    }

    /// crossbeam: `recv`.
    #[test]
    fn blocking_selects_receive_in_order_then_see_the_close() {
        on_threads(peer_bodies::blocking_selects_receive_in_order_then_see_the_close);
    }

    /// crossbeam: `recv_timeout`.
    #[test]
    fn receive_selects_with_after() {
        on_threads(peer_bodies::receive_selects_with_after);
    }

    /// crossbeam: `try_send`.
    #[test]
    fn default_selects_send_to_a_waiting_receiver() {
        on_threads(peer_bodies::default_selects_send_to_a_waiting_receiver);
    }

    /// crossbeam: `send`.
    #[test]
    fn blocking_selects_send_in_order() {
        on_threads(peer_bodies::blocking_selects_send_in_order);
    }

    /// crossbeam: `send_timeout`.
    #[test]
    fn send_selects_with_after() {
        on_threads(peer_bodies::send_selects_with_after);
    }

    /// crossbeam: `disconnect_wakes_sender`, `disconnect_wakes_receiver`.
    #[test]
    fn the_last_handle_going_wakes_a_waiting_select() {
        on_threads(peer_bodies::the_last_handle_going_wakes_a_waiting_select);
    }

    /// adversarial: closing every channel of a waiting select.
    #[test]
    fn closing_every_channel_wakes_a_waiting_select_with_one_error() {
        on_threads(peer_bodies::closing_every_channel_wakes_a_waiting_select_with_one_error);
    }

    /// adversarial: huge `after` durations on a plain thread (with a value sent later).
    #[test]
    fn huge_after_durations_never_fire() {
        within(EVENTUALLY, super::huge_after_durations_never_fire);
    }
}

/// The `after` durations too long to ever fire: `Duration::MAX`, past `Instant`'s range, and
/// long but representable.
const HUGE: [Duration; 5] = [
    Duration::MAX,
    Duration::from_secs(u64::MAX),
    Duration::from_secs(u64::MAX / 2),
    Duration::from_secs(100 * 365 * 24 * 3600),
    Duration::from_secs(1 << 32),
];

/// adversarial: with each huge `after`, a select waits for a value sent later (by a coroutine
/// when in a runtime, else a thread) and for a close; afterwards short timers still fire, and
/// `default` beats a huge `after`.
fn huge_after_durations_never_fire() {
    for d in HUGE {
        let (tx, rx) = chan::bounded::<u32>(0);
        let sender = move || {
            corio::sleep(MS);
            tx.send(1).unwrap();
        };
        let in_runtime = corio::try_current().is_some();
        let thread = if in_runtime {
            corio::go(sender);
            None
        } else {
            Some(std::thread::spawn(sender))
        };
        let r = corio::select! {
            recv(rx) -> v => v,
            after(d) => panic!("after({d:?}) fired"),
        };
        assert_eq!(r, Ok(1));
        let r = corio::select! {
            recv(rx) -> v => v,
            after(d) => panic!("after({d:?}) fired"),
        };
        assert_eq!(r, Err(RecvError), "the sender is gone");
        if let Some(t) = thread {
            t.join().unwrap();
        }
        let (_keep, never) = chan::bounded::<u32>(0);
        let start = Instant::now();
        corio::select! {
            recv(never) -> _ => unreachable!("nothing is sent"),
            after(MS) => {}
        }
        assert!(start.elapsed() >= MS);
        let r = corio::select! {
            recv(never) -> _ => unreachable!("nothing is sent"),
            after(d) => "after",
            default => "default",
        };
        assert_eq!(r, "default");
    }
}

// ---------------------------------------------------------------------------------------------
// On one and two workers.

/// Records one select's outcome in the cancellation tests: a value, or which channel closed.
fn record(
    got: &Mutex<Vec<u32>>,
    closed: &mut [bool; 2],
    outcome: Option<(usize, Result<u32, RecvError>)>,
) {
    match outcome {
        Some((_, Ok(v))) => got.lock().unwrap().push(v),
        Some((k, Err(RecvError))) => closed[k] = true,
        None => {}
    }
}

/// Values `0..n`, sorted, for comparing with what was received.
fn all_of(n: u32) -> Vec<u32> {
    (0..n).collect()
}

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

rt_common! {
    /// crossbeam: `disconnected`.
    #[test]
    fn a_closed_arm_wakes_a_waiting_select() {
        on_coroutines(rt(), peer_bodies::a_closed_arm_wakes_a_waiting_select);
    }

    /// crossbeam: `timeout`.
    #[test]
    fn after_fires_then_a_later_value_is_received() {
        on_coroutines(rt(), peer_bodies::after_fires_then_a_later_value_is_received);
    }

    /// crossbeam: `unblocks`.
    #[test]
    fn a_waiting_select_is_completed_by_a_late_peer() {
        on_coroutines(rt(), peer_bodies::a_waiting_select_is_completed_by_a_late_peer);
    }

    /// crossbeam: `both_ready`.
    #[test]
    fn a_receive_and_a_send_arm_each_complete_once() {
        on_coroutines(rt(), peer_bodies::a_receive_and_a_send_arm_each_complete_once);
    }

    /// crossbeam: `loop_try`.
    #[test]
    fn busy_loops_of_default_selects_meet_a_blocking_select() {
        on_coroutines(rt(), peer_bodies::busy_loops_of_default_selects_meet_a_blocking_select);
    }

    /// crossbeam: `cloning1`.
    #[test]
    fn dropping_a_sender_clone_does_not_complete_a_select() {
        on_coroutines(rt(), peer_bodies::dropping_a_sender_clone_does_not_complete_a_select);
    }

    /// crossbeam: `cloning2`.
    #[test]
    fn dropping_a_sender_clone_does_not_wake_a_waiting_select() {
        on_coroutines(rt(), peer_bodies::dropping_a_sender_clone_does_not_wake_a_waiting_select);
    }

    /// crossbeam: `stress_recv`.
    #[test]
    fn stress_receive_arms() {
        on_coroutines(rt(), peer_bodies::stress_receive_arms);
    }

    /// crossbeam: `stress_send`.
    #[test]
    fn stress_send_arms() {
        on_coroutines(rt(), peer_bodies::stress_send_arms);
    }

    /// crossbeam: `stress_mixed`, `reuse`.
    #[test]
    fn stress_mixed_arms() {
        on_coroutines(rt(), peer_bodies::stress_mixed_arms);
    }

    /// crossbeam: `stress_timeout_two_threads`.
    #[test]
    fn stress_timeouts() {
        on_coroutines(rt(), peer_bodies::stress_timeouts);
    }

    /// crossbeam: `matching`, `sync_and_clone`, `send_and_clone`.
    #[test]
    fn selects_match_up_in_pairs() {
        on_coroutines(rt(), peer_bodies::selects_match_up_in_pairs);
    }

    /// crossbeam: `matching_with_leftover`.
    #[test]
    fn selects_match_up_with_a_plain_sender_for_the_odd_one() {
        on_coroutines(rt(), peer_bodies::selects_match_up_with_a_plain_sender_for_the_odd_one);
    }

    /// crossbeam: `channel_through_channel`.
    #[test]
    fn channels_sent_through_channels() {
        on_coroutines(rt(), peer_bodies::channels_sent_through_channels);
    }

    /// crossbeam: `linearizable_default`, `linearizable_try`.
    #[test]
    fn linearizable_default() {
        on_coroutines(rt(), peer_bodies::linearizable_default);
    }

    /// crossbeam: `linearizable_timeout`.
    #[test]
    fn linearizable_after_zero() {
        on_coroutines(rt(), peer_bodies::linearizable_after_zero);
    }

    /// crossbeam: `fairness2`.
    #[test]
    fn fairness_with_arms_switched_off() {
        on_coroutines(rt(), peer_bodies::fairness_with_arms_switched_off);
    }

    /// crossbeam: `try_recv`.
    #[test]
    fn default_selects_receive_from_a_waiting_sender() {
        on_coroutines(rt(), peer_bodies::default_selects_receive_from_a_waiting_sender);
    }

    /// crossbeam: `recv`.
    #[test]
    fn blocking_selects_receive_in_order_then_see_the_close() {
        on_coroutines(rt(), peer_bodies::blocking_selects_receive_in_order_then_see_the_close);
    }

    /// crossbeam: `recv_timeout`.
    #[test]
    fn receive_selects_with_after() {
        on_coroutines(rt(), peer_bodies::receive_selects_with_after);
    }

    /// crossbeam: `try_send`.
    #[test]
    fn default_selects_send_to_a_waiting_receiver() {
        on_coroutines(rt(), peer_bodies::default_selects_send_to_a_waiting_receiver);
    }

    /// crossbeam: `send`.
    #[test]
    fn blocking_selects_send_in_order() {
        on_coroutines(rt(), peer_bodies::blocking_selects_send_in_order);
    }

    /// crossbeam: `send_timeout`.
    #[test]
    fn send_selects_with_after() {
        on_coroutines(rt(), peer_bodies::send_selects_with_after);
    }

    /// crossbeam: `disconnect_wakes_sender`, `disconnect_wakes_receiver`.
    #[test]
    fn the_last_handle_going_wakes_a_waiting_select() {
        on_coroutines(rt(), peer_bodies::the_last_handle_going_wakes_a_waiting_select);
    }

    /// adversarial: closing every channel of a waiting select.
    #[test]
    fn closing_every_channel_wakes_a_waiting_select_with_one_error() {
        on_coroutines(rt(), peer_bodies::closing_every_channel_wakes_a_waiting_select_with_one_error);
    }

    /// adversarial: huge `after` durations in a coroutine.
    #[test]
    fn huge_after_durations_never_fire() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(super::huge_after_durations_never_fire));
    }

    /// adversarial: huge `after` durations in an async task (`select_async!`).
    #[test]
    fn async_huge_after_durations_never_fire() {
        on_task(rt(), || async {
            for d in HUGE {
                let (tx, rx) = chan::bounded::<u32>(0);
                corio::spawn(async move {
                    corio::time::sleep_async(MS).await;
                    tx.send_async(1).await.unwrap();
                });
                let r = corio::select_async! {
                    recv(rx) -> v => v,
                    after(d) => panic!("after({d:?}) fired"),
                };
                assert_eq!(r, Ok(1));
                let r = corio::select_async! {
                    recv(rx) -> v => v,
                    after(d) => panic!("after({d:?}) fired"),
                };
                assert_eq!(r, Err(RecvError));
            }
            let start = Instant::now();
            corio::select_async! {
                after(MS) => {}
            }
            assert!(start.elapsed() >= MS);
        });
    }

    /// crossbeam: `unblocks`, `both_ready` and `disconnected` as async tasks: a waiting select
    /// completed by a late send, a receive arm and a send arm each completing once, a close
    /// waking a waiting select.
    #[test]
    fn async_tasks_select_over_late_paired_and_closed_channels() {
        on_task(rt(), || async {
            let (s1, r1) = chan::bounded::<i32>(0);
            let (s2, r2) = chan::bounded::<i32>(0);
            let (s3, r3) = chan::bounded::<i32>(0);
            let peer = corio::spawn(async move {
                corio::time::sleep_async(DELAY).await;
                s2.send_async(2).await.unwrap();
                s1.send_async(1).await.unwrap();
                assert_eq!(r3.recv_async().await, Ok(3));
                corio::time::sleep_async(DELAY).await;
                drop(s1);
            });
            corio::select_async! {
                recv(r1) -> _ => panic!("s1 sends second"),
                recv(r2) -> v => assert_eq!(v, Ok(2)),
                after(EVENTUALLY) => panic!("the send did not complete the select"),
            }
            for _ in 0..2 {
                corio::select_async! {
                    recv(r1) -> v => assert_eq!(v, Ok(1)),
                    send(s3, 3) -> res => res.unwrap(),
                }
            }
            corio::select_async! {
                recv(r1) -> v => assert_eq!(v, Err(RecvError)),
                after(EVENTUALLY) => panic!("the close did not wake the select"),
            }
            peer.await.unwrap_or_else(|e| resume_unwind(e.into_panic()));
        });
    }

    /// crossbeam: `stress_mixed` as async tasks.
    #[test]
    fn async_tasks_stress_mixed_arms() {
        on_task(rt(), || async {
            const COUNT: usize = 1_000;
            let (s1, r1) = chan::bounded(0);
            let (s2, r2) = chan::bounded(0);
            let (s3, r3) = chan::bounded(100);
            let peer = corio::spawn(async move {
                for i in 0..COUNT {
                    s1.send_async(i).await.unwrap();
                    assert_eq!(r2.recv_async().await, Ok(i));
                    r3.recv_async().await.unwrap();
                }
            });
            for i in 0..COUNT {
                for _ in 0..2 {
                    corio::select_async! {
                        recv(r1) -> v => assert_eq!(v, Ok(i)),
                        send(s2, i) -> res => res.unwrap(),
                    }
                }
                s3.send_async(()).await.unwrap();
            }
            peer.await.unwrap_or_else(|e| resume_unwind(e.into_panic()));
        });
    }

    /// crossbeam: `matching_with_leftover` as async tasks (55 selects and one plain send).
    #[test]
    fn async_tasks_match_up_in_pairs() {
        on_task(rt(), || async {
            let (s, r) = chan::bounded::<usize>(0);
            let tasks: Vec<_> = (0..55)
                .map(|i| {
                    let (s, r) = (s.clone(), r.clone());
                    corio::spawn(async move {
                        corio::select_async! {
                            recv(r) -> v => assert_ne!(v.unwrap(), i),
                            send(s, i) -> res => res.unwrap(),
                        }
                    })
                })
                .collect();
            s.send_async(!0).await.unwrap();
            for t in tasks {
                t.await.unwrap_or_else(|e| resume_unwind(e.into_panic()));
            }
            assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
        });
    }

    /// crossbeam: `linearizable_timeout` as async tasks (`after(0)` never wins over a ready arm).
    #[test]
    fn async_tasks_linearizable_after_zero() {
        on_task(rt(), || async {
            const COUNT: usize = 1_000;
            let (start_s, start_r) = chan::bounded::<()>(0);
            let (end_s, end_r) = chan::bounded::<()>(0);
            let (s1, r1) = chan::bounded::<i32>(1);
            let (s2, r2) = chan::bounded::<i32>(1);
            let r1_peer = r1.clone();
            let peer = corio::spawn(async move {
                let r1 = r1_peer;
                for _ in 0..COUNT {
                    start_s.send_async(()).await.unwrap();
                    s1.send_async(1).await.unwrap();
                    corio::select_async! {
                        recv(r1) -> v => v.unwrap(),
                        recv(r2) -> v => v.unwrap(),
                        after(Duration::ZERO) => panic!("after(0) chosen with a value ready"),
                    };
                    end_s.send_async(()).await.unwrap();
                    let _ = r2.try_recv();
                }
            });
            for _ in 0..COUNT {
                start_r.recv_async().await.unwrap();
                s2.send_async(1).await.unwrap();
                let _ = r1.try_recv();
                end_r.recv_async().await.unwrap();
            }
            peer.await.unwrap_or_else(|e| resume_unwind(e.into_panic()));
        });
    }

    /// crossbeam: `fairness_recv` as an async task, with a closed arm as a third ready arm.
    #[test]
    fn async_tasks_choose_ready_arms_fairly() {
        on_task(rt(), || async {
            const COUNT: usize = 3_000;
            let (s1, r1) = chan::bounded::<()>(COUNT);
            let (s2, r2) = chan::unbounded::<()>();
            let (_, closed) = chan::unbounded::<()>();
            for _ in 0..COUNT {
                s1.send_async(()).await.unwrap();
                s2.send_async(()).await.unwrap();
            }
            let mut hits = [0usize; 3];
            for _ in 0..COUNT {
                corio::select_async! {
                    recv(r1) -> v => { v.unwrap(); hits[0] += 1 },
                    recv(r2) -> v => { v.unwrap(); hits[1] += 1 },
                    recv(closed) -> v => { assert_eq!(v, Err(RecvError)); hits[2] += 1 },
                }
            }
            assert!(hits.iter().all(|&h| h >= COUNT / 3 / 2), "{hits:?}");
        });
    }

    /// crossbeam: `recv_timeout` and `disconnect_wakes_receiver` as async tasks.
    #[test]
    fn async_tasks_time_out_then_receive_then_see_the_close() {
        on_task(rt(), || async {
            let (s, r) = chan::bounded::<i32>(0);
            let (go_s, go_r) = chan::bounded::<()>(0);
            let peer = corio::spawn(async move {
                go_r.recv_async().await.unwrap();
                corio::select_async! {
                    send(s, 7) -> res => res.unwrap(),
                }
                corio::time::sleep_async(DELAY).await;
            });
            let start = Instant::now();
            corio::select_async! {
                recv(r) -> _ => panic!("nothing was sent yet"),
                after(DELAY) => {}
            }
            assert!(start.elapsed() >= DELAY);
            go_s.send_async(()).await.unwrap();
            corio::select_async! {
                recv(r) -> v => assert_eq!(v, Ok(7)),
                after(EVENTUALLY) => panic!("the value did not come"),
            }
            corio::select_async! {
                recv(r) -> v => assert_eq!(v, Err(RecvError)),
                after(EVENTUALLY) => panic!("the close did not come"),
            }
            peer.await.unwrap_or_else(|e| resume_unwind(e.into_panic()));
        });
    }

    /// crossbeam: `matching`, across waiter kinds: in each round two plain threads (`select!`),
    /// two coroutines (`select!`) and two async tasks (`select_async!`) each offer their id and
    /// wait for a value on one rendezvous channel; they pair off, nobody gets its own id, and
    /// the values received are exactly the ids sent.
    #[test]
    fn selects_of_every_waiter_kind_match_up_on_one_channel() {
        let rt = rt();
        within(EVENTUALLY, move || {
            fn offer(s: &Sender<usize>, r: &Receiver<usize>, id: usize) -> (usize, Option<usize>) {
                corio::select! {
                    recv(r) -> v => (id, Some(v.unwrap())),
                    send(s, id) -> res => { res.unwrap(); (id, None) },
                }
            }
            for _ in 0..30 {
                let (s, r) = chan::bounded::<usize>(0);
                let threads: Vec<_> = (0..2)
                    .map(|id| {
                        let (s, r) = (s.clone(), r.clone());
                        std::thread::spawn(move || offer(&s, &r, id))
                    })
                    .collect();
                let coroutines: Vec<_> = (2..4)
                    .map(|id| {
                        let (s, r) = (s.clone(), r.clone());
                        rt.go(move || offer(&s, &r, id))
                    })
                    .collect();
                let tasks: Vec<_> = (4..6)
                    .map(|id| {
                        let (s, r) = (s.clone(), r.clone());
                        rt.spawn(async move {
                            corio::select_async! {
                                recv(r) -> v => (id, Some(v.unwrap())),
                                send(s, id) -> res => { res.unwrap(); (id, None) },
                            }
                        })
                    })
                    .collect();
                let mut outcomes: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
                for h in coroutines.into_iter().chain(tasks) {
                    outcomes.push(rt.block_on(h).unwrap());
                }
                let sent: HashSet<usize> =
                    outcomes.iter().filter(|o| o.1.is_none()).map(|o| o.0).collect();
                let received: HashSet<usize> = outcomes.iter().filter_map(|o| o.1).collect();
                assert_eq!(sent.len(), 3, "{outcomes:?}");
                assert_eq!(sent, received, "{outcomes:?}");
                assert!(outcomes.iter().all(|o| o.1 != Some(o.0)), "{outcomes:?}");
                assert_eq!(r.try_recv(), Err(TryRecvError::Empty));
            }
        });
    }

    /// adversarial: a loop of selects that never wait (`after(0)` or `default` with nothing
    /// ready) in a coroutine, or in an async task, still lets another coroutine or task of its
    /// worker run (their cooperative budget), even on one worker.
    #[test]
    fn loops_of_selects_that_never_wait_let_others_run() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let (_keep, never) = chan::bounded::<u8>(0);
                for with_default in [false, true] {
                    let flag = Arc::new(AtomicBool::new(false));
                    let f = flag.clone();
                    corio::go(move || f.store(true, SeqCst));
                    while !flag.load(SeqCst) {
                        if with_default {
                            corio::select! {
                                recv(never) -> _ => unreachable!("nothing is sent"),
                                default => {}
                            }
                        } else {
                            corio::select! {
                                recv(never) -> _ => unreachable!("nothing is sent"),
                                after(Duration::ZERO) => {}
                            }
                        }
                    }
                }
            });
            let h = rt.spawn(async {
                let (_keep, never) = chan::bounded::<u8>(0);
                let flag = Arc::new(AtomicBool::new(false));
                let f = flag.clone();
                corio::spawn(async move { f.store(true, SeqCst) });
                while !flag.load(SeqCst) {
                    corio::select_async! {
                        recv(never) -> _ => unreachable!("nothing is sent"),
                        after(Duration::ZERO) => {}
                    }
                }
            });
            rt.block_on(h).unwrap();
        });
    }

    /// adversarial: receiving selects cancelled mid-wait by random short timeouts (their
    /// futures dropped: `timeout_async` in tasks, blocking `timeout` in coroutines) while two
    /// coroutines send 1,000 values on two rendezvous channels: every value is received exactly
    /// once, and the receivers' "closed" comes only after the last one.
    #[test]
    fn receiving_selects_dropped_by_timeouts_lose_no_value() {
        let rt = rt();
        within(EVENTUALLY, move || {
            const N: u32 = 1_000;
            let (a_tx, a) = chan::bounded::<u32>(0);
            let (b_tx, b) = chan::bounded::<u32>(0);
            let got = Arc::new(Mutex::new(Vec::new()));
            let mut receivers = Vec::new();
            for k in 0..4u64 {
                let (a, b, got) = (a.clone(), b.clone(), got.clone());
                receivers.push(if k.is_multiple_of(2) {
                    rt.spawn(async move {
                        let (mut rng, mut closed) = (Rng::new(k), [false; 2]);
                        while !(closed[0] && closed[1]) {
                            let wait = Duration::from_micros(rng.below(40));
                            let r = corio::time::timeout_async(wait, async {
                                corio::select_async! {
                                    recv(a) -> v => (0, v),
                                    recv(b) -> v => (1, v),
                                }
                            })
                            .await;
                            record(&got, &mut closed, r.ok());
                        }
                    })
                } else {
                    rt.go(move || {
                        let (mut rng, mut closed) = (Rng::new(k), [false; 2]);
                        while !(closed[0] && closed[1]) {
                            let wait = Duration::from_micros(rng.below(40));
                            let r = corio::time::timeout(wait, async {
                                corio::select_async! {
                                    recv(a) -> v => (0, v),
                                    recv(b) -> v => (1, v),
                                }
                            });
                            record(&got, &mut closed, r.ok());
                        }
                    })
                });
            }
            let senders = [rt.go(move || (0..N / 2).for_each(|i| a_tx.send(i).unwrap())),
                rt.go(move || (N / 2..N).for_each(|i| b_tx.send(i).unwrap()))];
            for h in senders.into_iter().chain(receivers) {
                rt.block_on(h).unwrap();
            }
            assert_eq!(sorted(got.lock().unwrap().clone()), all_of(N));
            assert_eq!(a.try_recv(), Err(TryRecvError::Disconnected));
            assert_eq!(b.try_recv(), Err(TryRecvError::Disconnected));
        });
    }

    /// adversarial: sending selects (two send arms) cancelled by random short timeouts, in tasks
    /// and coroutines: every send reported done is received exactly once, nothing is received
    /// twice, and nothing is received that was not offered (a select cancelled in the instant
    /// its value was taken may have sent it unreported: allowed).
    #[test]
    fn sending_selects_dropped_by_timeouts_send_at_most_once() {
        let rt = rt();
        within(EVENTUALLY, move || {
            const N: u32 = 1_000;
            let (a_tx, a) = chan::bounded::<u32>(0);
            let (b_tx, b) = chan::bounded::<u32>(0);
            let receivers = [rt.go(move || a.iter().collect::<Vec<_>>()),
                rt.go(move || b.iter().collect::<Vec<_>>())];
            let reported = Arc::new(Mutex::new(Vec::new()));
            let mut senders = Vec::new();
            for k in 0..4u32 {
                let (a_tx, b_tx, reported) = (a_tx.clone(), b_tx.clone(), reported.clone());
                let values = k * N / 4..(k + 1) * N / 4;
                senders.push(if k.is_multiple_of(2) {
                    rt.spawn(async move {
                        let mut rng = Rng::new(u64::from(k));
                        for i in values {
                            let wait = Duration::from_micros(rng.below(40));
                            let r = corio::time::timeout_async(wait, async {
                                corio::select_async! {
                                    send(a_tx, i) -> res => res,
                                    send(b_tx, i) -> res => res,
                                }
                            })
                            .await;
                            if let Ok(res) = r {
                                res.unwrap();
                                reported.lock().unwrap().push(i);
                            }
                        }
                    })
                } else {
                    rt.go(move || {
                        let mut rng = Rng::new(u64::from(k));
                        for i in values {
                            let wait = Duration::from_micros(rng.below(40));
                            let r = corio::time::timeout(wait, async {
                                corio::select_async! {
                                    send(a_tx, i) -> res => res,
                                    send(b_tx, i) -> res => res,
                                }
                            });
                            if let Ok(res) = r {
                                res.unwrap();
                                reported.lock().unwrap().push(i);
                            }
                        }
                    })
                });
            }
            drop((a_tx, b_tx));
            for h in senders {
                rt.block_on(h).unwrap();
            }
            let mut received = Vec::new();
            for h in receivers {
                received.extend(rt.block_on(h).unwrap());
            }
            let unique: HashSet<u32> = received.iter().copied().collect();
            assert_eq!(unique.len(), received.len(), "a value was received twice");
            assert!(received.iter().all(|&v| v < N));
            let reported = reported.lock().unwrap().clone();
            assert!(!reported.is_empty());
            let missing: Vec<_> = reported.iter().filter(|v| !unique.contains(v)).collect();
            assert!(missing.is_empty(), "reported sent, never received: {missing:?}");
        });
    }

    /// adversarial: select loops in tasks (`select_async!`) and coroutines (`select!`) aborted
    /// at random while two coroutines send 1,000 values on two rendezvous channels, each aborted
    /// receiver replaced: every value is received exactly once (an aborted select hands its
    /// value on, H6).
    #[test]
    fn aborted_select_loops_lose_no_value() {
        let rt = rt();
        within(EVENTUALLY, move || {
            const N: u32 = 1_000;
            let (a_tx, a) = chan::bounded::<u32>(0);
            let (b_tx, b) = chan::bounded::<u32>(0);
            let got = Arc::new(Mutex::new(Vec::new()));
            let spawn_receiver = {
                let (a, b, got) = (a.clone(), b.clone(), got.clone());
                let rt = rt.handle().clone();
                move |k: u32| {
                    let (a, b, got) = (a.clone(), b.clone(), got.clone());
                    if k.is_multiple_of(2) {
                        rt.spawn(async move {
                            let mut closed = [false; 2];
                            while !(closed[0] && closed[1]) {
                                let r = corio::select_async! {
                                    recv(a) -> v => (0, v),
                                    recv(b) -> v => (1, v),
                                };
                                record(&got, &mut closed, Some(r));
                            }
                        })
                    } else {
                        rt.go(move || {
                            let mut closed = [false; 2];
                            while !(closed[0] && closed[1]) {
                                let r = corio::select! {
                                    recv(a) -> v => (0, v),
                                    recv(b) -> v => (1, v),
                                };
                                record(&got, &mut closed, Some(r));
                            }
                        })
                    }
                }
            };
            let mut receivers: Vec<_> = (0..4).map(&spawn_receiver).collect();
            let senders = [rt.go(move || (0..N / 2).for_each(|i| a_tx.send(i).unwrap())),
                rt.go(move || (N / 2..N).for_each(|i| b_tx.send(i).unwrap()))];
            let mut rng = Rng::new(7);
            let mut next = 4;
            let mut aborted = 0;
            while !senders.iter().all(|s| s.is_finished()) {
                std::thread::sleep(Duration::from_micros(rng.below(300)));
                let victim = rng.below(receivers.len() as u64) as usize;
                receivers[victim].abort();
                aborted += 1;
                let old = std::mem::replace(&mut receivers[victim], spawn_receiver(next));
                next += 1;
                let _ = rt.block_on(old);
            }
            for h in senders {
                rt.block_on(h).unwrap();
            }
            for h in receivers {
                rt.block_on(h).unwrap();
            }
            assert!(aborted > 0);
            assert_eq!(sorted(got.lock().unwrap().clone()), all_of(N));
            assert_eq!(a.try_recv(), Err(TryRecvError::Disconnected));
        });
    }

    /// adversarial: coroutines waiting in `select!` are cancelled by their runtime's drop while
    /// a plain thread hands them values: every value sent `Ok` was received by a coroutine or is
    /// still in a channel (given back), none twice.
    #[test]
    fn select_coroutines_cancelled_by_the_runtimes_drop_lose_no_value() {
        within(EVENTUALLY, || {
            for round in 0..10u64 {
                let rt = support::rt(WORKERS);
                let (a_tx, a) = chan::bounded::<u32>(0);
                let (b_tx, b) = chan::bounded::<u32>(0);
                let got = Arc::new(Mutex::new(Vec::new()));
                for _ in 0..4 {
                    let (a, b, got) = (a.clone(), b.clone(), got.clone());
                    rt.go(move || loop {
                        let v = corio::select! {
                            recv(a) -> v => v,
                            recv(b) -> v => v,
                        };
                        match v {
                            Ok(v) => got.lock().unwrap().push(v),
                            Err(_) => return,
                        }
                    });
                }
                let stop = Arc::new(AtomicBool::new(false));
                let stop2 = stop.clone();
                let sender = std::thread::spawn(move || {
                    let mut sent = Vec::new();
                    let mut i = 0u32;
                    while !stop2.load(SeqCst) {
                        let tx = if i.is_multiple_of(2) { &a_tx } else { &b_tx };
                        if tx.send_timeout(i, MS).is_ok() {
                            sent.push(i);
                        }
                        i += 1;
                    }
                    sent
                });
                std::thread::sleep(Duration::from_micros(300 + 300 * round));
                drop(rt);
                stop.store(true, SeqCst);
                let sent = sender.join().unwrap();
                let mut all = got.lock().unwrap().clone();
                all.extend(a.try_iter());
                all.extend(b.try_iter());
                assert_eq!(sorted(all), sent, "round {round}");
            }
        });
    }

    /// adversarial: a coroutine and a task that panic in a select arm's body leave the
    /// channels usable for the others (the panic reaches the join handle).
    #[test]
    fn a_panic_in_an_arm_body_of_a_coroutine_or_task_leaves_the_channels_usable() {
        quiet_expected_panics();
        let rt = rt();
        within(EVENTUALLY, move || {
            let (tx, rx) = chan::bounded::<u32>(0);
            let (_other_tx, other) = chan::bounded::<u32>(0);
            let (rx1, other1) = (rx.clone(), other.clone());
            let h = rt.go(move || {
                corio::select! {
                    recv(other1) -> _ => unreachable!("nothing on other"),
                    recv(rx1) -> v => panic!("{EXPECTED} coroutine got {v:?}"),
                }
            });
            let (rx2, other2) = (rx.clone(), other.clone());
            let t = rt.spawn(async move {
                corio::select_async! {
                    recv(other2) -> _ => unreachable!("nothing on other"),
                    recv(rx2) -> v => panic!("{EXPECTED} task got {v:?}"),
                }
            });
            let tx2 = tx.clone();
            rt.run(move || {
                tx2.send(1).unwrap();
                tx2.send(2).unwrap();
            });
            for e in [rt.block_on(h).unwrap_err(), rt.block_on(t).unwrap_err()] {
                assert!(e.is_panic());
                assert!(payload_text(&*e.into_panic()).contains(EXPECTED));
            }
            assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)), "a waiter stayed");
            let h = rt.go(move || {
                corio::select! {
                    recv(other) -> _ => unreachable!("nothing on other"),
                    recv(rx) -> v => v,
                }
            });
            rt.run(move || tx.send(4).unwrap());
            assert_eq!(rt.block_on(h).unwrap(), Ok(4));
        });
    }

    /// adversarial: the blocking `select!` inside an async task panics, as documented, before
    /// anything happens: its send arm's value is not sent, and is dropped once.
    #[test]
    fn blocking_select_in_an_async_task_panics_and_sends_nothing() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let drops = Drops::new();
            let (tx, rx) = chan::bounded::<support::DropToken>(1);
            let token = drops.token();
            let h = rt.spawn(async move {
                corio::select! {
                    send(tx, token) -> _ => {},
                }
            });
            let e = rt.block_on(h).unwrap_err();
            assert!(e.is_panic());
            let msg = payload_text(&*e.into_panic());
            assert!(msg.contains("inside an async task"), "{msg}");
            assert_eq!(drops.dropped(), 1);
            assert!(matches!(rx.try_recv(), Err(TryRecvError::Disconnected)));
        });
    }
}
