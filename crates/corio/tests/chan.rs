//! Channels: capacity, close and error semantics, the three kinds of waiter on one channel
//! (stackful coroutine, async task, plain thread), timeouts, iteration and `Stream`, and no
//! value lost or duplicated when a waiter is cancelled in the middle of a hand-off.
//!
//! Durations are only checked from below; "eventually" is the `within` watchdog.

#[macro_use]
mod support;

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use corio::chan::{
    self, RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
use support::{Drops, EVENTUALLY, within};

const MS: Duration = Duration::from_millis(1);

/// Polls `fut` once with a waker that does nothing.
fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn try_send_fills_the_buffer_up_to_capacity_then_reports_full() {
    for cap in [1usize, 3, 8] {
        let (tx, rx) = chan::bounded(cap);
        for i in 0..cap {
            tx.try_send(i).unwrap();
            assert_eq!(tx.len(), i + 1);
        }
        assert!(tx.is_full());
        assert_eq!(tx.try_send(99), Err(TrySendError::Full(99)));
        assert_eq!(rx.capacity(), Some(cap));
        assert_eq!(
            rx.try_iter().collect::<Vec<_>>(),
            (0..cap).collect::<Vec<_>>()
        );
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    }
}

#[test]
fn a_rendezvous_channel_buffers_nothing() {
    let (tx, rx) = chan::bounded::<u8>(0);
    assert_eq!(tx.capacity(), Some(0));
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert_eq!((tx.len(), rx.is_empty(), rx.is_full()), (0, true, true));
}

#[test]
fn close_lets_receivers_drain_then_reports_disconnected() {
    let (tx, rx) = chan::bounded(4);
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    assert!(rx.close());
    assert!(
        !tx.close(),
        "a second close reports that it was closed already"
    );
    assert!(tx.is_closed() && rx.is_closed());
    assert_eq!(
        tx.send(3),
        Err(SendError(3)),
        "a send on a closed channel hands the value back"
    );
    assert_eq!(tx.try_send(4), Err(TrySendError::Disconnected(4)));
    assert_eq!(rx.recv(), Ok(1));
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.recv(), Err(RecvError));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
}

#[test]
fn dropping_every_sender_closes_the_channel_for_receivers() {
    let (tx, rx) = chan::unbounded();
    let tx2 = tx.clone();
    tx.send(1).unwrap();
    drop(tx);
    assert!(!rx.is_closed(), "one sender is left");
    tx2.send(2).unwrap();
    drop(tx2);
    assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
    assert_eq!(rx.recv(), Err(RecvError));
}

#[test]
fn dropping_every_receiver_fails_later_sends_with_the_value() {
    let (tx, rx) = chan::bounded(1);
    let rx2 = rx.clone();
    drop(rx);
    tx.send(1).unwrap();
    drop(rx2);
    assert_eq!(tx.send(2), Err(SendError(2)));
}

#[test]
fn closing_wakes_a_waiting_sender_with_its_value_and_a_waiting_receiver_with_an_error() {
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u32>(0);
        let tx2 = tx.clone();
        let sender = std::thread::spawn(move || tx2.send(7));
        let (tx3, rx3) = chan::bounded::<u32>(0);
        let receiver = std::thread::spawn(move || rx3.recv());
        // Wait until both really wait (a rendezvous send can only finish with a receiver).
        std::thread::sleep(20 * MS);
        tx.close();
        tx3.close();
        assert_eq!(sender.join().unwrap(), Err(SendError(7)));
        assert_eq!(receiver.join().unwrap(), Err(RecvError));
        drop(rx);
    });
}

#[test]
fn timeouts_hand_the_value_back_and_last_at_least_their_duration() {
    let (tx, rx) = chan::bounded::<u32>(0);
    let start = Instant::now();
    assert_eq!(rx.recv_timeout(5 * MS), Err(RecvTimeoutError::Timeout));
    assert!(start.elapsed() >= 5 * MS);
    let start = Instant::now();
    assert_eq!(
        tx.send_timeout(3, 5 * MS),
        Err(SendTimeoutError::Timeout(3))
    );
    assert!(start.elapsed() >= 5 * MS);
    assert_eq!(
        rx.try_recv(),
        Err(TryRecvError::Empty),
        "a timed-out send left nothing"
    );
    drop(tx);
    assert_eq!(
        rx.recv_timeout(EVENTUALLY),
        Err(RecvTimeoutError::Disconnected)
    );
}

#[test]
fn a_send_timeout_succeeds_when_a_receiver_comes_in_time() {
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u32>(0);
        let h = std::thread::spawn(move || {
            std::thread::sleep(10 * MS);
            rx.recv()
        });
        assert_eq!(tx.send_timeout(5, EVENTUALLY), Ok(()));
        assert_eq!(h.join().unwrap(), Ok(5));
    });
}

#[test]
fn a_receiver_future_dropped_after_a_hand_off_gives_the_value_back() {
    // H6 of the module essay, step by step: the receive is queued, a send hands it the value,
    // and the future is dropped before it is polled again.
    let (tx, rx) = chan::bounded::<u32>(0);
    let mut fut = rx.recv_async();
    assert!(poll_once(&mut fut).is_pending());
    assert_eq!(
        tx.try_send(42),
        Ok(()),
        "the send completes: a receiver was waiting"
    );
    drop(fut);
    assert_eq!(rx.len(), 1, "the value is back in the channel");
    assert_eq!(rx.try_recv(), Ok(42));
}

#[test]
fn a_value_given_back_goes_to_the_next_waiting_receiver() {
    let (tx, rx) = chan::bounded::<u32>(0);
    let mut first = rx.recv_async();
    let mut second = rx.recv_async();
    assert!(poll_once(&mut first).is_pending());
    assert!(poll_once(&mut second).is_pending());
    tx.try_send(1).unwrap();
    drop(first);
    assert_eq!(poll_once(&mut second), Poll::Ready(Ok(1)));
    assert_eq!(rx.len(), 0);
}

#[test]
fn a_send_future_dropped_while_queued_withdraws_its_value() {
    let drops = Drops::new();
    let (tx, rx) = chan::bounded(0);
    let mut fut = tx.send_async(drops.token());
    assert!(poll_once(&mut fut).is_pending());
    drop(fut);
    assert_eq!(
        drops.dropped(),
        1,
        "the withdrawn value was dropped with its future"
    );
    assert!(rx.try_recv().is_err(), "nothing reached the channel");
}

#[test]
fn a_receive_timeout_that_races_a_hand_off_returns_the_value() {
    // Many short timeouts against a steady sender: every value sent is either received by a
    // receive that then reports it, or still in the channel. None is lost, none is duplicated.
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u32>(0);
        const N: u32 = 2000;
        let sender = std::thread::spawn(move || {
            let mut sent = 0;
            for i in 0..N {
                if tx.send_timeout(i, Duration::from_micros(50)).is_ok() {
                    sent += 1;
                }
            }
            sent
        });
        let mut got = Vec::new();
        while !sender.is_finished() {
            if let Ok(v) = rx.recv_timeout(Duration::from_micros(30)) {
                got.push(v);
            }
        }
        let sent = sender.join().unwrap();
        got.extend(rx.try_iter());
        let unique: HashSet<_> = got.iter().copied().collect();
        assert_eq!(unique.len(), got.len(), "a value was received twice");
        assert_eq!(got.len(), sent, "sent {sent}, received {}", got.len());
    });
}

#[test]
fn a_receiver_is_a_stream_and_an_iterator() {
    let (tx, rx) = chan::bounded(2);
    let mut rx2 = rx.clone();
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    drop(tx);
    let mut next =
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut rx2), cx));
    assert_eq!(poll_once(&mut next), Poll::Ready(Some(1)));
    let mut next =
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut rx2), cx));
    assert_eq!(poll_once(&mut next), Poll::Ready(Some(2)));
    let mut next =
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut rx2), cx));
    assert_eq!(poll_once(&mut next), Poll::Ready(None));
    assert_eq!(rx.into_iter().count(), 0);
}

#[test]
#[should_panic(expected = "inside an async task")]
fn a_blocking_recv_inside_an_async_task_panics_with_advice() {
    let rt = support::rt(1);
    let (_tx, rx) = chan::bounded::<u8>(1);
    rt.block_on(async move {
        corio::spawn(async move { rx.recv() })
            .await
            .map_err(|e| std::panic::resume_unwind(e.into_panic()))
            .unwrap()
    })
    .unwrap();
}

/// Counts every value: `n` sent, each received exactly once, by whichever world took it.
fn assert_each_value_once(values: &Mutex<Vec<u64>>, n: u64) {
    let mut v = values.lock().unwrap().clone();
    v.sort_unstable();
    assert_eq!(v, (0..n).collect::<Vec<_>>());
}

rt_common! {
    #[test]
    fn coroutines_ping_pong_over_a_rendezvous_channel() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let (ping_tx, ping_rx) = chan::bounded::<u32>(0);
                let (pong_tx, pong_rx) = chan::bounded::<u32>(0);
                let echo = corio::go(move || {
                    for v in ping_rx {
                        pong_tx.send(v + 1).unwrap();
                    }
                });
                for i in 0..1000 {
                    ping_tx.send(i).unwrap();
                    assert_eq!(pong_rx.recv(), Ok(i + 1));
                }
                drop(ping_tx);
                echo.join().unwrap();
            })
        });
    }

    #[test]
    fn async_tasks_ping_pong_over_a_rendezvous_channel() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.block_on(async {
                let (ping_tx, ping_rx) = chan::bounded::<u32>(0);
                let (pong_tx, pong_rx) = chan::bounded::<u32>(0);
                let echo = corio::spawn(async move {
                    while let Ok(v) = ping_rx.recv_async().await {
                        pong_tx.send_async(v + 1).await.unwrap();
                    }
                });
                for i in 0..1000 {
                    ping_tx.send_async(i).await.unwrap();
                    assert_eq!(pong_rx.recv_async().await, Ok(i + 1));
                }
                drop(ping_tx);
                echo.await.unwrap();
            })
        });
    }

    #[test]
    fn a_stackful_sender_an_async_receiver_and_a_thread_receiver_share_one_channel() {
        // Mixed worlds: every value crosses from a coroutine to a task or a thread, and each is
        // received exactly once.
        const N: u64 = 3000;
        for cap in [0, 1, 16] {
            let rt = rt();
            within(EVENTUALLY, move || {
                let (tx, rx) = chan::bounded::<u64>(cap);
                let got = Arc::new(Mutex::new(Vec::new()));
                let (by_task, by_thread) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
                let (rx_t, got_t, n_t) = (rx.clone(), got.clone(), by_thread.clone());
                let thread = std::thread::spawn(move || {
                    for v in rx_t.iter() {
                        got_t.lock().unwrap().push(v);
                        n_t.fetch_add(1, SeqCst);
                    }
                });
                let (got_a, n_a) = (got.clone(), by_task.clone());
                let task = rt.spawn(async move {
                    while let Ok(v) = rx.recv_async().await {
                        got_a.lock().unwrap().push(v);
                        n_a.fetch_add(1, SeqCst);
                    }
                });
                let sender = rt.go(move || {
                    for i in 0..N {
                        tx.send(i).unwrap();
                        if i % 64 == 0 {
                            corio::yield_now();
                        }
                    }
                });
                rt.block_on(async {
                    sender.await.unwrap();
                    task.await.unwrap();
                });
                thread.join().unwrap();
                assert_each_value_once(&got, N);
                assert_eq!(by_task.load(SeqCst) + by_thread.load(SeqCst), N as usize);
            });
        }
    }

    #[test]
    fn aborted_async_receivers_lose_and_duplicate_no_value() {
        // Cancellation mid-hand-off: receivers are aborted while senders hand them values over
        // a rendezvous channel. Every value sent is received once or is still in the channel.
        let rt = rt();
        within(EVENTUALLY, move || {
            const N: u64 = 4000;
            let (tx, rx) = chan::bounded::<u64>(0);
            let got = Arc::new(Mutex::new(Vec::new()));
            let sent = Arc::new(AtomicUsize::new(0));
            let sender = {
                let sent = sent.clone();
                rt.go(move || {
                    for i in 0..N {
                        if tx.send_timeout(i, 200 * MS).is_ok() {
                            sent.fetch_add(1, SeqCst);
                        }
                    }
                })
            };
            let mut aborted = 0;
            while !sender.is_finished() {
                let receivers: Vec<_> = (0..4)
                    .map(|_| {
                        let (rx, got) = (rx.clone(), got.clone());
                        rt.spawn(async move {
                            // No await between the receive and the push: an abort can only
                            // land while the receive waits.
                            while let Ok(v) = rx.recv_async().await {
                                got.lock().unwrap().push(v);
                            }
                        })
                    })
                    .collect();
                std::thread::sleep(Duration::from_micros(300));
                for r in receivers {
                    r.abort();
                    aborted += 1;
                }
            }
            rt.block_on(sender).unwrap();
            // Let the aborted tasks finish dropping their futures.
            drop(rt);
            let mut all = got.lock().unwrap().clone();
            all.extend(rx.try_iter());
            let unique: HashSet<_> = all.iter().copied().collect();
            assert_eq!(unique.len(), all.len(), "a value was received twice");
            assert_eq!(all.len(), sent.load(SeqCst), "values lost ({aborted} receivers aborted)");
        });
    }

    #[test]
    fn coroutines_waiting_in_recv_when_their_runtime_drops_lose_no_value() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let (tx, rx) = chan::bounded::<u64>(0);
            let got = Arc::new(Mutex::new(Vec::new()));
            for _ in 0..8 {
                let (rx, got) = (rx.clone(), got.clone());
                rt.go(move || {
                    while let Ok(v) = rx.recv() {
                        got.lock().unwrap().push(v);
                        corio::yield_now();
                    }
                });
            }
            let sender = std::thread::spawn(move || {
                let mut sent = 0;
                for i in 0.. {
                    match tx.send_timeout(i, 100 * MS) {
                        Ok(()) => sent += 1,
                        Err(_) => break,
                    }
                }
                sent
            });
            std::thread::sleep(20 * MS);
            drop(rt);
            let sent = sender.join().unwrap();
            let mut all = got.lock().unwrap().clone();
            all.extend(rx.try_iter());
            let unique: HashSet<_> = all.iter().copied().collect();
            assert_eq!(unique.len(), all.len(), "a value was received twice");
            assert_eq!(all.len(), sent, "sent {sent}, accounted {}", all.len());
        });
    }

    /// Sends and receives that complete at once take `block_on_ready_first`'s direct path
    /// (no future built); closing the channel while four producers and four consumers run
    /// through it must still lose and duplicate no value: every send that returned `Ok` is
    /// received exactly once, and every send that failed handed its own value back.
    #[test]
    fn direct_path_sends_and_receives_racing_close_lose_and_duplicate_no_value() {
        let rt = rt();
        within(EVENTUALLY, move || {
            for round in 0..20u64 {
                let (tx, rx) = chan::bounded::<u64>(8);
                let producers: Vec<_> = (0..4u64)
                    .map(|p| {
                        let tx = tx.clone();
                        rt.go(move || {
                            let mut sent = Vec::new();
                            for i in 0.. {
                                let v = p << 32 | i;
                                match tx.send(v) {
                                    Ok(()) => sent.push(v),
                                    Err(SendError(back)) => {
                                        assert_eq!(back, v, "a failed send handed back another value");
                                        break;
                                    }
                                }
                            }
                            sent
                        })
                    })
                    .collect();
                let consumers: Vec<_> = (0..4)
                    .map(|_| {
                        let rx = rx.clone();
                        rt.go(move || rx.iter().collect::<Vec<u64>>())
                    })
                    .collect();
                // Close once values flow (or at once, every third round).
                if round % 3 != 0 {
                    std::thread::sleep(MS);
                }
                assert!(tx.close());
                let mut sent: Vec<u64> = producers.into_iter().flat_map(|p| p.join().unwrap()).collect();
                let mut got: Vec<u64> = consumers.into_iter().flat_map(|c| c.join().unwrap()).collect();
                sent.sort_unstable();
                got.sort_unstable();
                assert_eq!(got.len(), sent.len(), "round {round}: values lost or duplicated");
                assert_eq!(got, sent, "round {round}");
            }
        });
    }
}

/// A waiter's waker is user code: a receive future withdrawn while it waits drops the waker it
/// stored outside the channel's lock. Here the waker owns the channel's last sender, whose drop
/// closes the channel (under the lock, the close spun for ever on it).
#[test]
fn a_withdrawn_receive_drops_its_waker_outside_the_channels_lock() {
    struct OwnsSender(#[allow(dead_code)] chan::Sender<u8>);
    impl std::task::Wake for OwnsSender {
        fn wake(self: Arc<Self>) {}
    }
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u8>(0);
        let waker = Waker::from(Arc::new(OwnsSender(tx)));
        let mut fut = rx.recv_async();
        assert!(
            Pin::new(&mut fut)
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        drop(waker); // the entry's clone is the last
        drop(fut);
        assert!(rx.is_closed(), "the last sender went with the waker");
    });
}

/// As above, for a waker replaced by a later poll with another one: the old one is dropped
/// outside the lock.
#[test]
fn a_receive_polled_with_a_new_waker_drops_the_old_one_outside_the_channels_lock() {
    struct OwnsSender(#[allow(dead_code)] chan::Sender<u8>);
    impl std::task::Wake for OwnsSender {
        fn wake(self: Arc<Self>) {}
    }
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u8>(0);
        let waker = Waker::from(Arc::new(OwnsSender(tx)));
        let mut fut = rx.recv_async();
        assert!(
            Pin::new(&mut fut)
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        drop(waker); // the entry's clone is the last
        // The poll stores the new waker, then the old one's drop closes the channel.
        assert!(poll_once(&mut fut).is_pending());
        assert!(rx.is_closed(), "the last sender went with the old waker");
        assert_eq!(poll_once(&mut fut), Poll::Ready(Err(RecvError)));
    });
}

/// Values still buffered when the last receiver goes can never be received: they are dropped
/// then (as crossbeam-channel and std's mpmc do), not kept until the last sender goes. A value
/// that holds a sender of its own channel (a reply address, an actor's own mailbox) otherwise
/// keeps the channel, and itself, alive for ever.
#[test]
fn values_buffered_when_the_last_receiver_goes_are_dropped() {
    struct Msg {
        _token: support::DropToken,
        _reply_to: Option<chan::Sender<Msg>>,
    }
    let drops = Drops::new();
    let (tx, rx) = chan::unbounded::<Msg>();
    let (tx2, rx2) = chan::bounded::<Msg>(4);
    for tx in [&tx, &tx2] {
        tx.send(Msg {
            _token: drops.token(),
            _reply_to: None,
        })
        .unwrap();
        tx.send(Msg {
            _token: drops.token(),
            _reply_to: Some(tx.clone()),
        })
        .unwrap();
    }
    let rx_clone = rx.clone();
    drop(rx);
    assert_eq!(drops.dropped(), 0, "a receiver is left: the values stay");
    assert_eq!(rx_clone.len(), 2);
    drop(rx_clone);
    drop(rx2);
    assert_eq!(
        drops.dropped(),
        4,
        "the buffered values went with the last receiver (the senders are alive)"
    );
    assert!(tx.is_closed() && tx.is_empty());
    assert_eq!(
        tx2.try_send(Msg {
            _token: drops.token(),
            _reply_to: None
        })
        .map_err(|e| e.is_disconnected()),
        Err(true)
    );
}

/// A timeout too long for `Instant` to represent (`Duration::MAX`, "no limit") is a wait without
/// a limit, as for std's and crossbeam's `recv_timeout` and corio's own `sleep`: not a panic.
#[test]
fn timeouts_too_long_for_an_instant_mean_no_limit() {
    let (tx, rx) = chan::bounded::<u8>(1);
    assert_eq!(tx.send_timeout(1, Duration::MAX), Ok(()));
    assert_eq!(rx.recv_timeout(Duration::MAX), Ok(1));
    let rt = support::rt(1);
    let got = rt.block_on(async {
        tx.send_timeout_async(2, Duration::MAX).await.unwrap();
        rx.recv_timeout_async(Duration::MAX).await
    });
    assert_eq!(got, Ok(2));
}

/// A `Stream` poll that was abandoned (its `next()` future dropped by a timeout or a
/// `select`) leaves the receiver's stream wait queued, and the next send completes through
/// it. That value must still reach the receiver's other ways to receive: once, `try_recv` on
/// the same handle found nothing (the value sat in the stream's slot, counted nowhere, until
/// the next `poll_next` or the receiver's drop), and a blocking `recv` would wait for ever
/// although the send succeeded and nobody else receives. A stream wait now holds no value:
/// the send leaves it in the buffer and tells the stream.
#[test]
fn a_value_handed_to_an_abandoned_stream_poll_is_still_received_by_try_recv() {
    let (tx, mut rx) = chan::bounded::<u8>(0);
    {
        let mut next =
            std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut rx), cx));
        assert!(poll_once(&mut next).is_pending());
        // Dropped: the caller stopped waiting for the next item.
    }
    assert_eq!(tx.try_send(7), Ok(()), "a receiver was waiting");
    assert_eq!(rx.try_recv(), Ok(7), "the value sent is there to receive");
}

/// The same for the handle's other receives (a blocking `recv`, `recv_async`, a `select!`
/// arm), and the stream goes on working after its receive was taken back.
#[test]
fn every_receive_of_the_handle_sees_what_an_abandoned_stream_poll_was_handed() {
    // A blocking `recv` that misses the value waits for ever: a failure, not a hang.
    support::within(Duration::from_secs(60), || {
        fn abandon_a_poll(rx: &mut chan::Receiver<u8>) {
            let mut next =
                std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut *rx), cx));
            assert!(poll_once(&mut next).is_pending());
        }
        let (tx, mut rx) = chan::bounded::<u8>(0);
        abandon_a_poll(&mut rx);
        assert_eq!(tx.try_send(1), Ok(()));
        assert_eq!(rx.recv(), Ok(1), "blocking recv");

        abandon_a_poll(&mut rx);
        assert_eq!(tx.try_send(2), Ok(()));
        let rt = support::rt(1);
        assert_eq!(rt.block_on(rx.recv_async()), Ok(2), "recv_async");

        abandon_a_poll(&mut rx);
        assert_eq!(tx.try_send(3), Ok(()));
        let got = corio::select! {
            recv(rx) -> v => v,
            default => Err(chan::RecvError),
        };
        assert_eq!(got, Ok(3), "a select arm");

        // The stream itself, polled again, receives the next value.
        abandon_a_poll(&mut rx);
        assert_eq!(tx.try_send(4), Ok(()));
        let mut next =
            std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut rx), cx));
        assert_eq!(poll_once(&mut next), std::task::Poll::Ready(Some(4)));
    });
}

/// Polls `rx`'s `Stream` once with a waker that does nothing and drops the `next()` future,
/// as `timeout(d, rx.next())` does when it expires: the stream's wait stays queued.
fn abandon_a_stream_poll(rx: &mut chan::Receiver<u8>) {
    let mut next =
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut *rx), cx));
    assert!(poll_once(&mut next).is_pending());
}

/// A waker that records that it was woken.
struct Flag(std::sync::atomic::AtomicBool);

impl std::task::Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, SeqCst);
    }
}

/// Several handles' streams wait on one channel and the first of them was abandoned: a value
/// sent must still reach a stream that is being awaited. (Told one at a time, the abandoned
/// stream would take the wake-up and the live one would sleep with the value buffered; handed
/// the value, the abandoned one would keep it from the live one.)
#[test]
fn a_live_stream_gets_the_value_while_another_handles_stream_poll_is_abandoned() {
    for cap in [0, 1] {
        let (tx, mut rx) = chan::bounded::<u8>(cap);
        let mut live = rx.clone();
        abandon_a_stream_poll(&mut rx); // queued first
        let flag = Arc::new(Flag(std::sync::atomic::AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let mut next = Pin::new(&mut live);
        assert!(futures_core::Stream::poll_next(next.as_mut(), &mut cx).is_pending());
        assert_eq!(tx.try_send(9), Ok(()), "capacity {cap}: streams wait");
        assert!(
            flag.0.load(SeqCst),
            "capacity {cap}: the live stream was not woken"
        );
        assert_eq!(
            futures_core::Stream::poll_next(next.as_mut(), &mut cx),
            Poll::Ready(Some(9)),
            "capacity {cap}"
        );
    }
}

/// A send to a rendezvous channel completes at once (`try_send`, a `select!` `default`)
/// when the receiver waiting for it is a `Stream` being awaited, as for any waiting receive;
/// and the stream ends with `None` when the channel is closed and drained.
#[test]
fn try_send_reaches_a_stream_that_waits_on_a_rendezvous_channel() {
    within(EVENTUALLY, || {
        let rt = support::rt(2);
        let (tx, rx) = chan::bounded::<u32>(0);
        let consumer = rt.spawn(async move {
            let mut rx = rx;
            let mut got = Vec::new();
            while let Some(v) =
                std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut rx), cx))
                    .await
            {
                got.push(v);
            }
            got
        });
        let mut next = 0;
        let mut misses = 0u64;
        while next < 200 {
            // Non-blocking on purpose: each send succeeds only while the stream waits.
            let sent = if next % 2 == 0 {
                tx.try_send(next).is_ok()
            } else {
                corio::select! {
                    send(tx, next) -> r => r.is_ok(),
                    default => false,
                }
            };
            if sent {
                next += 1;
            } else {
                misses += 1;
                std::thread::yield_now();
            }
        }
        drop(tx);
        let got = consumer.join().unwrap();
        assert_eq!(got, (0..200).collect::<Vec<_>>(), "after {misses} misses");
    });
}

/// After a value reached another handle past an abandoned stream poll, the close reaches
/// that handle at once: nothing is left in transit in the abandoned poll to hold its
/// "closed" back.
#[test]
fn a_close_is_not_held_back_by_an_abandoned_stream_poll() {
    within(EVENTUALLY, || {
        let (tx, mut rx) = chan::bounded::<u8>(0);
        let other = rx.clone();
        abandon_a_stream_poll(&mut rx);
        let waiter = std::thread::spawn(move || {
            let first = other.recv_timeout(Duration::from_secs(10));
            let second = other.recv_timeout(Duration::from_secs(10));
            (first, second)
        });
        std::thread::sleep(20 * MS);
        tx.send(1).unwrap();
        drop(tx);
        let (first, second) = waiter.join().unwrap();
        assert_eq!(first, Ok(1));
        assert_eq!(second, Err(RecvTimeoutError::Disconnected));
        drop(rx);
    });
}
