//! `select!` and `select_async!`: readiness, `default`, `after`, closed channels, mixed
//! element types, stackful coroutines, async tasks and plain threads, no trace left by arms not
//! chosen, and no value lost when a select is cancelled mid-hand-off.

#[macro_use]
mod support;

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use corio::chan::{self, RecvError, SendError};
use support::{EVENTUALLY, within};

const MS: Duration = Duration::from_millis(1);

fn poll_once<F: Future>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_ready_arm_is_chosen_and_the_other_keeps_its_value() {
    for _ in 0..100 {
        let (a_tx, a) = chan::bounded::<u8>(1);
        let (b_tx, b) = chan::bounded::<&str>(1);
        a_tx.send(1).unwrap();
        b_tx.send("b").unwrap();
        let chose_a = corio::select! {
            recv(a) -> v => { assert_eq!(v, Ok(1)); true },
            recv(b) -> v => { assert_eq!(v, Ok("b")); false },
        };
        // The arm not chosen took nothing.
        if chose_a {
            assert_eq!((a.len(), b.len()), (0, 1));
        } else {
            assert_eq!((a.len(), b.len()), (1, 0));
        }
    }
}

#[test]
fn of_two_possible_sends_exactly_one_happens() {
    let mut seen = [0; 2];
    for _ in 0..200 {
        let (a_tx, a) = chan::bounded::<u8>(1);
        let (b_tx, b) = chan::bounded::<u8>(1);
        let k = corio::select! {
            send(a_tx, 1) -> r => { r.unwrap(); 0 },
            send(b_tx, 2) -> r => { r.unwrap(); 1 },
        };
        seen[k] += 1;
        assert_eq!(a.len() + b.len(), 1, "exactly one send happened");
    }
    assert!(
        seen[0] > 0 && seen[1] > 0,
        "both arms are chosen sometimes: {seen:?}"
    );
}

#[test]
fn default_runs_when_nothing_is_ready() {
    let (_tx, rx) = chan::bounded::<u8>(0);
    let (tx2, _rx2) = chan::bounded::<u8>(0);
    let r = corio::select! {
        recv(rx) -> _ => "recv",
        send(tx2, 1) -> _ => "send",
        default => "default",
    };
    assert_eq!(r, "default");
}

#[test]
fn after_fires_when_nothing_happens_within_its_duration() {
    let (_tx, rx) = chan::bounded::<u8>(0);
    let start = Instant::now();
    let r = corio::select! {
        recv(rx) -> _ => "recv",
        after(10 * MS) => "after",
    };
    assert_eq!(r, "after");
    assert!(start.elapsed() >= 10 * MS);
}

#[test]
fn a_select_with_only_after_sleeps() {
    let start = Instant::now();
    corio::select! { after(5 * MS) => {} }
    assert!(start.elapsed() >= 5 * MS);
}

#[test]
fn closed_channels_make_arms_ready_with_errors() {
    let (tx, rx) = chan::bounded::<u8>(0);
    tx.close();
    let r = corio::select! {
        recv(rx) -> v => v,
        after(EVENTUALLY) => Ok(0),
    };
    assert_eq!(r, Err(RecvError));
    let r = corio::select! {
        send(tx, 5) -> res => res,
        after(EVENTUALLY) => Ok(()),
    };
    assert_eq!(
        r,
        Err(SendError(5)),
        "a send arm on a closed channel hands the value back"
    );
}

#[test]
fn a_select_dropped_after_a_hand_off_gives_the_value_back() {
    let (tx, rx) = chan::bounded::<u32>(0);
    let (_tx2, rx2) = chan::bounded::<u32>(0);
    let mut fut = Box::pin(async {
        corio::select_async! {
            recv(rx2) -> v => v,
            recv(rx) -> v => v,
        }
    });
    assert!(poll_once(fut.as_mut()).is_pending());
    tx.try_send(11).unwrap();
    drop(fut);
    assert_eq!(rx.try_recv(), Ok(11), "the value came back");
}

#[test]
fn select_on_plain_threads_meets_a_sender_on_another_thread() {
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u64>(0);
        let (_never_tx, never) = chan::bounded::<u64>(0);
        let h = std::thread::spawn(move || (0..100).for_each(|i| tx.send(i).unwrap()));
        let mut sum = 0;
        for _ in 0..100 {
            corio::select! {
                recv(never) -> _ => unreachable!(),
                recv(rx) -> v => sum += v.unwrap(),
            }
        }
        h.join().unwrap();
        assert_eq!(sum, 4950);
    });
}

rt_common! {
    #[test]
    fn coroutines_and_tasks_select_over_channels_of_different_types() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let (num_tx, num) = chan::bounded::<u64>(0);
            let (word_tx, word) = chan::bounded::<String>(0);
            let counted = rt.spawn(async move {
                let (mut n, mut w) = (0, 0);
                loop {
                    corio::select_async! {
                        recv(num) -> v => match v { Ok(v) => n += v, Err(_) => break },
                        recv(word) -> v => match v { Ok(v) => w += v.len(), Err(_) => break },
                    }
                }
                (n, w)
            });
            rt.run(move || {
                for i in 0..100 {
                    corio::select! {
                        send(num_tx, i) -> r => r.unwrap(),
                        after(EVENTUALLY) => panic!("the task stopped receiving"),
                    }
                    word_tx.send("ab".to_string()).unwrap();
                }
            });
            let (n, w) = rt.block_on(counted).unwrap();
            assert_eq!((n, w), (4950, 200));
        });
    }

    #[test]
    fn select_timeouts_racing_hand_offs_lose_and_duplicate_no_value() {
        let rt = rt();
        within(EVENTUALLY, move || {
            const N: u64 = 2000;
            let (tx, rx) = chan::bounded::<u64>(0);
            let got = Arc::new(Mutex::new(Vec::new()));
            let receivers: Vec<_> = (0..2)
                .map(|_| {
                    let (rx, got) = (rx.clone(), got.clone());
                    rt.go(move || loop {
                        corio::select! {
                            recv(rx) -> v => match v {
                                Ok(v) => got.lock().unwrap().push(v),
                                Err(_) => break,
                            },
                            after(Duration::from_micros(20)) => {}
                        }
                    })
                })
                .collect();
            let sent = rt.run(move || {
                let mut sent = 0;
                for i in 0..N {
                    corio::select! {
                        send(tx, i) -> r => { r.unwrap(); sent += 1 },
                        after(Duration::from_micros(30)) => {}
                    }
                }
                sent
            });
            for r in receivers {
                rt.block_on(r).unwrap();
            }
            let mut all = got.lock().unwrap().clone();
            all.extend(rx.try_iter());
            let unique: HashSet<_> = all.iter().copied().collect();
            assert_eq!(unique.len(), all.len(), "a value was received twice");
            assert_eq!(all.len(), sent, "sent {sent}, received {}", all.len());
        });
    }

    #[test]
    fn two_selects_meet_on_a_rendezvous_channel() {
        // One select only sends and one only receives: they must complete each other (a
        // notify-only design would deadlock here).
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let (tx, rx) = chan::bounded::<u32>(0);
                let (_t2, idle) = chan::bounded::<u32>(0);
                let (idle_tx, _r2) = chan::bounded::<u32>(0);
                let h = corio::go(move || {
                    (0..500)
                        .map(|_| corio::select! {
                            recv(rx) -> v => v.unwrap(),
                            recv(idle) -> _ => unreachable!(),
                        })
                        .sum::<u32>()
                });
                for i in 0..500 {
                    corio::select! {
                        send(tx, i) -> r => r.unwrap(),
                        send(idle_tx, 0) -> _ => unreachable!(),
                    }
                }
                assert_eq!(h.join().unwrap(), (0..500).sum::<u32>());
            })
        });
    }
}

/// A send arm's value that was not sent (another arm was chosen) is dropped outside its
/// channel's lock: its `Drop` may use that channel, as an object that returns a replacement
/// to its pool does. (Dropped under the lock, the `try_send` below spun for ever on it.)
#[test]
fn an_unchosen_send_arms_value_is_dropped_outside_its_channels_lock() {
    struct Pooled {
        pool: Option<chan::Sender<Pooled>>,
    }
    impl Drop for Pooled {
        fn drop(&mut self) {
            if let Some(pool) = self.pool.take() {
                let _ = pool.try_send(Pooled { pool: None });
            }
        }
    }
    within(EVENTUALLY, || {
        let (a_tx, a) = chan::bounded::<u8>(0);
        let (pool_tx, pool_rx) = chan::bounded::<Pooled>(1);
        pool_tx.try_send(Pooled { pool: None }).unwrap(); // full: the send arm waits
        let offered = Pooled {
            pool: Some(pool_tx.clone()),
        };
        let mut fut = Box::pin(async {
            corio::select_async! {
                recv(a) -> v => v.unwrap(),
                send(pool_tx, offered) -> _ => 0,
            }
        });
        assert!(poll_once(fut.as_mut()).is_pending());
        a_tx.try_send(7).unwrap();
        assert_eq!(poll_once(fut.as_mut()), Poll::Ready(7));
        drop(fut);
        assert_eq!(pool_rx.len(), 1, "the pool stayed full");
    });
}

/// As above, for a select whose `after` arm fired: the send arm's value is dropped outside the
/// lock.
#[test]
fn a_timed_out_selects_send_value_is_dropped_outside_its_channels_lock() {
    struct Pooled {
        pool: Option<chan::Sender<Pooled>>,
    }
    impl Drop for Pooled {
        fn drop(&mut self) {
            if let Some(pool) = self.pool.take() {
                let _ = pool.try_send(Pooled { pool: None });
            }
        }
    }
    within(EVENTUALLY, || {
        let (pool_tx, pool_rx) = chan::bounded::<Pooled>(0);
        let offered = Pooled {
            pool: Some(pool_tx.clone()),
        };
        let timed_out = corio::select! {
            send(pool_tx, offered) -> _ => false,
            after(MS) => true,
        };
        assert!(timed_out);
        drop(pool_rx);
    });
}

/// A select polled again with another waker drops the one it had stored outside the channels'
/// locks (a waker is user code: this one owns a channel's last sender, whose drop closes it).
#[test]
fn a_select_polled_with_a_new_waker_drops_the_old_one_outside_the_channels_locks() {
    struct OwnsSender(#[allow(dead_code)] chan::Sender<u8>);
    impl std::task::Wake for OwnsSender {
        fn wake(self: Arc<Self>) {}
    }
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u8>(0);
        let (_tx2, rx2) = chan::bounded::<u8>(0);
        let waker = Waker::from(Arc::new(OwnsSender(tx)));
        let mut fut = Box::pin(async {
            corio::select_async! {
                recv(rx) -> v => v,
                recv(rx2) -> v => v,
            }
        });
        assert!(
            fut.as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        drop(waker); // the signal's clone is the last
        // The poll stores the new waker, then the old one's drop closes `rx`'s channel.
        assert!(poll_once(fut.as_mut()).is_pending());
        assert_eq!(poll_once(fut.as_mut()), Poll::Ready(Err(RecvError)));
    });
}

/// An `after` too long for `Instant` to represent (`Duration::MAX`) never fires: the other arms
/// decide, as a plain `select!` without it would.
#[test]
fn an_after_too_long_for_an_instant_never_fires() {
    let (tx, rx) = chan::bounded::<u8>(1);
    tx.send(3).unwrap();
    let r = corio::select! {
        recv(rx) -> v => v,
        after(Duration::MAX) => Ok(0),
    };
    assert_eq!(r, Ok(3));
}

/// A send arm's value that was not sent is dropped before the chosen arm's body runs, whether
/// the select chose at once or after waiting: a body may wait for what that value holds (a
/// permit, a sender whose drop closes a channel).
#[test]
fn an_unsent_value_is_dropped_before_the_chosen_arms_body_runs() {
    let drops = support::Drops::new();
    // Chosen at once: `a` has a value, `b` has no room.
    let (a_tx, a) = chan::bounded::<u8>(1);
    let (b_tx, _b) = chan::bounded::<support::DropToken>(0);
    a_tx.send(1).unwrap();
    corio::select! {
        recv(a) -> v => assert_eq!((v, drops.dropped()), (Ok(1), 1)),
        send(b_tx, drops.token()) -> _ => unreachable!(),
    }
    // Chosen after waiting.
    let (a_tx, a) = chan::bounded::<u8>(0);
    let sender = std::thread::spawn(move || a_tx.send(2).unwrap());
    corio::select! {
        recv(a) -> v => assert_eq!((v, drops.dropped()), (Ok(2), 2)),
        send(b_tx, drops.token()) -> _ => unreachable!(),
    }
    sender.join().unwrap();
}

/// An async select over a channel that is always ready takes the task's coop budget, as the
/// channel futures do (tokio's `coop` test, `tests/rt_tokio_suite.rs`): within 1,000 ready
/// selects in one poll of a task, one returns `Pending` (and wakes the task). Without it, a
/// loop of selects held its worker for as long as the channel had values.
#[test]
fn a_loop_of_ready_async_selects_runs_out_of_budget() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let yielded = rt.block_on(async {
            corio::spawn(async {
                let (tx, rx) = chan::unbounded::<u32>();
                for i in 0..1000 {
                    tx.try_send(i).unwrap();
                }
                std::future::poll_fn(|cx| {
                    for _ in 0..1000 {
                        let select = std::pin::pin!(async {
                            corio::select_async! {
                                recv(rx) -> v => v.is_ok(),
                            }
                        });
                        if select.poll(cx).is_pending() {
                            return Poll::Ready(true);
                        }
                    }
                    Poll::Ready(false)
                })
                .await
            })
            .await
            .unwrap()
        });
        assert!(yielded, "1,000 ready selects in one poll never yielded");
    });
}

/// A channel operand may be a temporary (`rx.clone()`) or an `if` whose branches borrow
/// channels, as in crossbeam's `select!` and Go (found by the port of Go's channel programs,
/// `chan_go_programs_suite.rs`: they failed to compile, E0716 and E0308).
#[test]
fn channel_operands_may_be_temporaries_and_ifs() {
    let (tx, rx) = chan::bounded::<u8>(1);
    let (tx2, rx2) = chan::bounded::<u8>(1);
    let first = std::hint::black_box(true);
    corio::select! {
        send(tx.clone(), 1) -> r => r.unwrap(),
        default => panic!("a buffered send with room is ready"),
    }
    let v = corio::select! {
        recv(if first { &rx } else { &rx2 }) -> v => v.unwrap(),
        default => panic!("a receive with a value is ready"),
    };
    assert_eq!(v, 1);
    corio::select! {
        send(if first { &tx2 } else { &tx }, 2) -> r => r.unwrap(),
        default => panic!("a buffered send with room is ready"),
    }
    let v = corio::block_on(async {
        corio::select_async! {
            recv(rx2.clone()) -> v => v.unwrap(),
            default => panic!("a receive with a value is ready"),
        }
    });
    assert_eq!(v, 2);
}
