//! The netpoller's readiness and registration protocol under races (`io/registry.rs`,
//! `io/slot.rs`, `io/source.rs`), on real sockets of 127.0.0.1 and socket pairs: a handle
//! dropped while waiters on other workers wait (or are just registering), registrations reused
//! while stale events for the old socket are in flight, a read timeout racing with the data,
//! the two halves of one stream used from two workers, and waiters that give up while queued
//! (the wakers they leave must go with the next edge, the socket or the runtime).
//!
//! Each test is bounded by a watchdog ([`LIMIT`]): a lost wake-up is a failure, not a hang.

#[macro_use]
mod support;

use std::future::Future;
use std::io::{ErrorKind, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use corio::net::{TcpListener, TcpStream, UdpSocket, UnixStream};
use support::{Rng, tcp_pair as pair, wait_until, within};

/// The watchdog's limit for one test (a hang fails the test after it).
const LIMIT: Duration = Duration::from_secs(20);

/// Spins (without yielding the worker) for about `d`, to place a racing step in time.
fn spin_for(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// What a call racing with the drop of another handle to its socket may end with: the
/// documented `NotConnected`.
#[track_caller]
fn assert_closed<T: std::fmt::Debug>(what: &str, round: usize, r: std::io::Result<T>) {
    match r {
        Err(e) if e.kind() == ErrorKind::NotConnected => {}
        other => panic!("round {round}: {what} ended with {other:?}, not NotConnected"),
    }
}

/// Writes `chunk` to `s` over and over until a write fails; that error.
fn write_until_error(mut s: &TcpStream, chunk: &[u8]) -> std::io::Error {
    loop {
        if let Err(e) = s.write(chunk) {
            return e;
        }
    }
}

/// `handle`'s result, waited for on a plain thread; fails naming `what` and the round if it
/// has not finished [`AFTER_THE_DROP`] after the drop that should have ended it.
#[track_caller]
fn finished<T>(handle: corio::JoinHandle<T>, what: &str, round: usize) -> T {
    let start = Instant::now();
    while !handle.is_finished() {
        assert!(
            start.elapsed() < AFTER_THE_DROP,
            "round {round}: {what} still waits {AFTER_THE_DROP:?} after its socket was closed"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    handle.join().unwrap()
}

/// How long a waiter may take to notice its socket was closed (generous: a loaded machine).
const AFTER_THE_DROP: Duration = Duration::from_secs(5);

/// The size of message `i` of the split-stream tests: mostly small, every hundredth big enough
/// to fill the socket buffers (the writer then waits for the echo to read).
fn message_size(i: usize) -> usize {
    if i.is_multiple_of(100) {
        256 << 10
    } else {
        1 + i % 97
    }
}

/// Messages `0..messages` as sent: message `i` is `message_size(i)` bytes of `i as u8`.
fn messages_sent(messages: usize) -> Vec<u8> {
    (0..messages)
        .flat_map(|i| vec![i as u8; message_size(i)])
        .collect()
}

/// A waker that counts its wakes; its `Arc`'s strong count says how many copies of it corio
/// keeps.
struct CountWakes(AtomicUsize);

impl std::task::Wake for CountWakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl CountWakes {
    fn new() -> Arc<CountWakes> {
        Arc::new(CountWakes(AtomicUsize::new(0)))
    }

    fn wakes(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A waiter that gives up: polls a read of `s` once with `waker`, in `rt`'s context (so that
/// `s` is registered there), checks that it waits, and drops it — its waker stays queued.
///
/// Through the poll-based trait (`futures_io::AsyncRead::poll_read`), which has no future to
/// take the waker back when its caller gives up, so the waker stays until the next edge, the
/// socket's drop or the runtime's. (A `read_async` future does take it back when dropped:
/// `a_dropped_read_future_takes_its_waker_back`.)
fn give_up_reading(rt: &corio::Runtime, s: &UnixStream, waker: &Arc<CountWakes>) {
    let _enter = rt.enter();
    let mut buf = [0u8; 8];
    let waker = Waker::from(waker.clone());
    let poll = futures_io::AsyncRead::poll_read(
        std::pin::Pin::new(&mut &*s),
        &mut Context::from_waker(&waker),
        &mut buf,
    );
    assert!(poll.is_pending(), "nothing was sent yet: {poll:?}");
}

rt_common! {
    /// A reader and a writer (coroutines) and an async reader wait on clones of one socket,
    /// usually on another worker than the coroutine that drops the original — at random
    /// moments, some before the waiters have registered the socket with the netpoller. Each
    /// must end with `NotConnected`: never a hang, never a false end of stream. (Before
    /// `Source::error_unless_closed`, a writer whose first `send` came just after the close's
    /// `shutdown(2)` ended with `BrokenPipe`: about one run in four.)
    #[test]
    fn dropping_a_handle_ends_every_waiter_on_its_clones_with_not_connected() {
        within(LIMIT, || {
            let rt = rt();
            let mut rng = Rng::new(7);
            for round in 0..300 {
                let delay = Duration::from_micros(rng.below(300));
                let (client, _server) = rt.run(pair);
                let reader = {
                    let s = client.try_clone().unwrap();
                    rt.go(move || {
                        let mut buf = [0u8; 16];
                        (&s).read(&mut buf)
                    })
                };
                let writer = {
                    let s = client.try_clone().unwrap();
                    rt.go(move || {
                        // Fills the socket's buffers (nobody reads the peer), then waits.
                        let chunk = vec![1u8; 64 << 10];
                        Err::<(), _>(write_until_error(&s, &chunk))
                    })
                };
                let task = {
                    let s = client.try_clone().unwrap();
                    rt.spawn(async move {
                        let mut buf = [0u8; 16];
                        s.read_async(&mut buf).await
                    })
                };
                rt.go(move || {
                    spin_for(delay);
                    drop(client);
                })
                .join()
                .unwrap();
                assert_closed("the reader", round, finished(reader, "the reader", round));
                assert_closed("the writer", round, finished(writer, "the writer", round));
                assert_closed("the async reader", round, finished(task, "the async reader", round));
            }
        });
    }

    /// A reader and a writer busy on clones of one socket — the peer streams data to the one
    /// and drains the other, so their calls are mostly in progress rather than waiting — while
    /// another coroutine drops the original at a random moment. The close shuts the socket down,
    /// and a call in progress sees that: each must still end with `NotConnected`, never with
    /// `Ok(0)` (a false end of stream: the peer sent no FIN) or `BrokenPipe` (the peer did not
    /// go away). (Before `Source::error_unless_closed`: `BrokenPipe` in one run in three.)
    #[test]
    fn a_call_in_progress_when_a_handle_is_dropped_ends_with_not_connected() {
        within(LIMIT, || {
            let rt = rt();
            let mut rng = Rng::new(5);
            for round in 0..500 {
                let delay = Duration::from_micros(rng.below(200));
                let (client, server) = rt.run(pair);
                // The peer's own end: the feeder may outlive the client's close by a minute.
                // The client's kernel socket, closed with nothing unread after advertising a
                // zero window, lingers in FIN-WAIT-2 (`tcp_fin_timeout`, 60 s) without a
                // reset, and the feeder's write waits in the persist state until then (seen
                // with `ss` in about one run of this test in 60 under load: the server end in
                // CLOSE-WAIT with 3.8 MB unsent, `rwnd_limited` 100 %). Closing this handle
                // ends the feeder and the drainer instead.
                let peer = server.try_clone().unwrap();
                let server = Arc::new(server);
                let feeder = {
                    let server = server.clone();
                    rt.go(move || {
                        let chunk = [9u8; 1024];
                        while (&*server).write(&chunk).is_ok() {}
                    })
                };
                let drainer = rt.go(move || {
                    let mut buf = [0u8; 64 << 10];
                    while matches!((&*server).read(&mut buf), Ok(n) if n > 0) {}
                });
                let reader = {
                    let s = client.try_clone().unwrap();
                    rt.go(move || {
                        let mut buf = [0u8; 512];
                        loop {
                            match (&s).read(&mut buf) {
                                Ok(0) => return Ok(0),
                                Ok(_) => {}
                                Err(e) => return Err(e),
                            }
                        }
                    })
                };
                let writer = {
                    let s = client.try_clone().unwrap();
                    rt.go(move || {
                        let chunk = [1u8; 512];
                        Err::<(), _>(write_until_error(&s, &chunk))
                    })
                };
                rt.go(move || {
                    spin_for(delay);
                    drop(client);
                })
                .join()
                .unwrap();
                assert_closed("the reader", round, finished(reader, "the reader", round));
                assert_closed("the writer", round, finished(writer, "the writer", round));
                drop(peer);
                finished(feeder, "the feeder", round);
                finished(drainer, "the drainer", round);
            }
        });
    }

    /// Receivers (a coroutine and an async task) on clones of a UDP socket, usually on another
    /// worker than the coroutine that drops the original, at random moments — some while a
    /// receiver is registering the socket with the netpoller. Each must end with
    /// `NotConnected`. An unconnected UDP socket's shutdown(2) sends one hang-up edge and its
    /// reads say `EAGAIN` for ever after, so a receiver whose registration the close missed
    /// waited for ever (one round in ~100 on two workers, before `Source::register` checked
    /// for the close under the lock `close` takes).
    #[test]
    fn dropping_a_udp_handle_ends_a_receiver_registering_at_that_moment() {
        within(LIMIT, || {
            let rt = rt();
            let mut rng = Rng::new(11);
            for round in 0..500 {
                let delay = Duration::from_micros(rng.below(60));
                let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
                let receiver = {
                    let s = socket.try_clone().unwrap();
                    rt.go(move || {
                        let mut buf = [0u8; 16];
                        s.recv_from(&mut buf).map(|(n, _)| n)
                    })
                };
                let async_receiver = {
                    let s = socket.try_clone().unwrap();
                    rt.spawn(async move {
                        let mut buf = [0u8; 16];
                        s.recv_from_async(&mut buf).await.map(|(n, _)| n)
                    })
                };
                rt.go(move || {
                    spin_for(delay);
                    drop(socket);
                })
                .join()
                .unwrap();
                assert_closed("the receiver", round, finished(receiver, "the receiver", round));
                let async_receiver = finished(async_receiver, "the async receiver", round);
                assert_closed("the async receiver", round, async_receiver);
            }
        });
    }

    /// Sockets opened, used and dropped in a loop — each release hands its registration to
    /// the next socket while the old one's events (connect, data, hang-up) may still be in a
    /// poller's hands — while two coroutines play ping-pong on a long-lived pair: no stale
    /// event may make a read or write of the pair fail, return `WouldBlock` or wait for ever.
    #[test]
    fn churning_sockets_never_disturb_a_long_lived_pair() {
        within(LIMIT, || {
            let rt = rt();
            let (a, b) = rt.run(pair);
            let rounds = 5_000;
            let echo = rt.go(move || {
                let mut byte = [0u8; 1];
                for _ in 0..rounds {
                    (&b).read_exact(&mut byte)?;
                    (&b).write_all(&byte)?;
                }
                Ok::<(), std::io::Error>(())
            });
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let churned = Arc::new(AtomicUsize::new(0));
            let churners: Vec<_> = (0..2)
                .map(|_| {
                    let (stop, churned) = (stop.clone(), churned.clone());
                    rt.go(move || {
                        while !stop.load(Ordering::Relaxed) {
                            let (x, y) = UnixStream::pair().unwrap();
                            let reader = corio::go(move || {
                                let mut buf = [0u8; 4];
                                let n = (&y).read(&mut buf).unwrap();
                                assert_eq!(n, 4, "a churned socket lost its data");
                                // Then a hang-up for a socket about to be dropped.
                                assert_eq!((&y).read(&mut buf).unwrap(), 0);
                            });
                            corio::yield_now();
                            (&x).write_all(b"ping").unwrap();
                            drop(x);
                            reader.join().unwrap();
                            churned.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            rt.run(move || {
                let mut byte = [0u8; 1];
                for i in 0..rounds {
                    (&a).write_all(&[i as u8]).unwrap();
                    (&a).read_exact(&mut byte).unwrap();
                    assert_eq!(byte[0], i as u8);
                }
            });
            stop.store(true, Ordering::Relaxed);
            echo.join().unwrap().unwrap();
            for c in churners {
                c.join().unwrap();
            }
            assert!(churned.load(Ordering::Relaxed) > 0);
        });
    }

    /// A read with a short timeout against data sent at about that moment (by a plain thread,
    /// so that the sender's pace does not depend on the workers): each read ends either with
    /// the data or `TimedOut` — never both, never `WouldBlock` — and data that came after a
    /// timeout is read by the next call: every byte arrives once, in order.
    #[test]
    fn a_read_timeout_racing_with_the_data_has_one_outcome_and_loses_nothing() {
        within(LIMIT, || {
            let rt = rt();
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let rounds = 600usize;
            let sender = std::thread::spawn(move || {
                let mut peer = std::net::TcpStream::connect(addr).unwrap();
                peer.set_nodelay(true).unwrap();
                let mut rng = Rng::new(3);
                for i in 0..rounds {
                    // Around the reader's 1 ms timeout: some bytes come before it expires,
                    // some just after, some as it expires.
                    std::thread::sleep(Duration::from_micros(500 + rng.below(1_000)));
                    peer.write_all(&[i as u8]).unwrap();
                }
                // The close ends the stream.
            });
            let (got, timeouts) = rt.run(move || {
                let (server, _) = listener.accept().unwrap();
                server.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
                let mut got = Vec::new();
                let mut timeouts = 0;
                let mut buf = [0u8; 64];
                loop {
                    match (&server).read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                        Err(e) if e.kind() == ErrorKind::TimedOut => timeouts += 1,
                        Err(e) => panic!("after {} bytes: {e:?}", got.len()),
                    }
                }
                (got, timeouts)
            });
            sender.join().unwrap();
            let expected: Vec<u8> = (0..rounds).map(|i| i as u8).collect();
            assert_eq!(got, expected);
            assert!(timeouts > 0, "no read timed out: the race was not exercised");
        });
    }

    /// The read half and the write half of one stream in two coroutines (on two workers where
    /// there are two), against an echo: many round trips of varying sizes, some filling the
    /// buffers, with no lost wake-up on either side.
    #[test]
    fn the_two_halves_of_a_stream_in_two_coroutines_lose_no_wake_up() {
        within(LIMIT, || {
            let rt = rt();
            let (client, server) = rt.run(pair);
            let echo = rt.go(move || {
                let mut buf = vec![0u8; 32 << 10];
                loop {
                    match (&server).read(&mut buf)? {
                        0 => return Ok::<(), std::io::Error>(()),
                        n => (&server).write_all(&buf[..n])?,
                    }
                }
            });
            let (mut read_half, mut write_half) = client.into_split();
            let messages = 3_000usize;
            let size = message_size;
            let total: usize = (0..messages).map(size).sum();
            let writer = rt.go(move || {
                for i in 0..messages {
                    write_half.write_all(&vec![i as u8; size(i)])?;
                }
                Ok::<(), std::io::Error>(())
            });
            let reader = rt.go(move || {
                let mut got = Vec::with_capacity(total);
                let mut buf = vec![0u8; 64 << 10];
                while got.len() < total {
                    match read_half.read(&mut buf)? {
                        0 => break,
                        n => got.extend_from_slice(&buf[..n]),
                    }
                }
                Ok::<Vec<u8>, std::io::Error>(got)
            });
            writer.join().unwrap().unwrap();
            let got = reader.join().unwrap().unwrap();
            assert_eq!(got.len(), total);
            assert!(got == messages_sent(messages), "the echoed bytes differ");
            echo.join().unwrap().unwrap();
        });
    }

    /// The same with async tasks, which may run on any worker (and move between them).
    #[test]
    fn the_two_halves_of_a_stream_in_two_tasks_lose_no_wake_up() {
        use support::futures_io_compat::*;
        within(LIMIT, || {
            let rt = rt();
            let (client, server) = rt.run(pair);
            let echo = rt.spawn(async move {
                let mut buf = vec![0u8; 32 << 10];
                loop {
                    match server.read_async(&mut buf).await? {
                        0 => return Ok::<(), std::io::Error>(()),
                        n => server.write_all_async(&buf[..n]).await?,
                    }
                }
            });
            let (mut read_half, mut write_half) = client.into_split();
            let messages = 3_000usize;
            let size = message_size;
            let total: usize = (0..messages).map(size).sum();
            let writer = rt.spawn(async move {
                for i in 0..messages {
                    write_all(&mut write_half, &vec![i as u8; size(i)]).await?;
                }
                Ok::<(), std::io::Error>(())
            });
            let reader = rt.spawn(async move {
                let mut got = Vec::with_capacity(total);
                let mut buf = vec![0u8; 64 << 10];
                while got.len() < total {
                    match read(&mut read_half, &mut buf).await? {
                        0 => break,
                        n => got.extend_from_slice(&buf[..n]),
                    }
                }
                Ok::<Vec<u8>, std::io::Error>(got)
            });
            rt.block_on(writer).unwrap().unwrap();
            let got = rt.block_on(reader).unwrap().unwrap();
            assert_eq!(got.len(), total);
            assert!(got == messages_sent(messages), "the echoed bytes differ");
            rt.block_on(echo).unwrap().unwrap();
        });
    }
    /// Waiters on one socket — coroutines and tasks, in the slot and in the list — of which
    /// some are aborted while the socket's data arrives and, in some rounds, while another
    /// handle closes it, in random orders on the workers. Every waiter that is not aborted
    /// ends with its data or `NotConnected`; none hangs; the aborted ones end cancelled; and
    /// no task outlives its round.
    #[test]
    fn aborting_waiters_while_data_and_a_close_arrive_loses_no_wake_up() {
        within(LIMIT, || {
            let rt = rt();
            let mut rng = Rng::new(13);
            for round in 0..150 {
                let (client, server) = rt.run(pair);
                let client = Arc::new(client);
                let waiters: Vec<_> = (0..4)
                    .map(|i| {
                        // Shared by `Arc`: an aborted waiter's drop of a `try_clone` handle
                        // would close the socket for all.
                        let s = client.clone();
                        if i % 2 == 0 {
                            rt.go(move || {
                                let mut byte = [0u8; 1];
                                (&*s).read(&mut byte).map(|n| (n, byte[0]))
                            })
                        } else {
                            rt.spawn(async move {
                                let mut byte = [0u8; 1];
                                s.read_async(&mut byte).await.map(|n| (n, byte[0]))
                            })
                        }
                    })
                    .collect();
                let aborted: Vec<bool> = (0..4).map(|_| rng.chance(50)).collect();
                let close = rng.chance(30);
                let delay = Duration::from_micros(rng.below(200));
                let steps = {
                    let aborts: Vec<_> = waiters
                        .iter()
                        .zip(&aborted)
                        .filter(|&(_, &a)| a)
                        .map(|(w, _)| w.abort_handle())
                        .collect();
                    let client = client.clone();
                    rt.go(move || {
                        spin_for(delay);
                        for a in aborts {
                            a.abort();
                        }
                        // One byte per waiter: each that is not aborted can get one.
                        (&server).write_all(&[7u8; 4]).unwrap();
                        if close {
                            drop(client.try_clone().unwrap());
                        }
                        server
                    })
                };
                let _server = steps.join().unwrap();
                for (i, (w, &was_aborted)) in waiters.into_iter().zip(&aborted).enumerate() {
                    let what = format!("waiter {i}");
                    let start = Instant::now();
                    while !w.is_finished() {
                        assert!(
                            start.elapsed() < AFTER_THE_DROP,
                            "round {round}: {what} (aborted: {was_aborted}, close: {close}) hangs"
                        );
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    match w.join() {
                        Err(e) => assert!(
                            was_aborted && e.is_cancelled(),
                            "round {round}: {what}: {e:?}"
                        ),
                        Ok(Ok((1, 7))) => {}
                        Ok(Err(e)) if close && e.kind() == ErrorKind::NotConnected => {}
                        Ok(other) => panic!("round {round}: {what} (close: {close}): {other:?}"),
                    }
                }
                drop(client);
                wait_until("every task of the round is gone", || rt.metrics().live_tasks == 0);
            }
        });
    }

    /// Two waiters on one direction (the slot's and the list's) give up: their wakers stay
    /// until the socket goes, which drops them without waking them.
    #[test]
    fn wakers_left_by_waiters_that_gave_up_go_with_their_socket() {
        within(LIMIT, || {
            let rt = rt();
            let (a, _b) = UnixStream::pair().unwrap();
            let (first, second) = (CountWakes::new(), CountWakes::new());
            give_up_reading(&rt, &a, &first);
            give_up_reading(&rt, &a, &second);
            assert_eq!(Arc::strong_count(&first), 2, "the slot keeps the first waker");
            assert_eq!(Arc::strong_count(&second), 2, "the list keeps the second waker");
            drop(a);
            assert_eq!(Arc::strong_count(&first), 1, "the slot's waker outlived its socket");
            assert_eq!(Arc::strong_count(&second), 1, "the list's waker outlived its socket");
            assert_eq!(first.wakes() + second.wakes(), 0);
        });
    }

    /// A `read_async` future dropped while it waits takes its waker back at once — from the
    /// slot and from the list — without waking it. (Until 2026-12-06 it woke it, in case
    /// another future of the task shared it; entries now count the futures behind them:
    /// `tests/net_waiters.rs`, `a_future_dropped_beside_another_of_its_task_leaves_it_the_wake_up`.)
    #[test]
    fn a_dropped_read_future_takes_its_waker_back() {
        within(LIMIT, || {
            let rt = rt();
            let _enter = rt.enter();
            let (a, _b) = UnixStream::pair().unwrap();
            let (first, second) = (CountWakes::new(), CountWakes::new());
            let mut first_buf = [0u8; 8];
            let mut first_read = Box::pin(a.read_async(&mut first_buf));
            let first_waker = Waker::from(first.clone());
            let poll = first_read.as_mut().poll(&mut Context::from_waker(&first_waker));
            assert!(poll.is_pending());
            {
                let mut buf = [0u8; 8];
                let mut read = std::pin::pin!(a.read_async(&mut buf));
                let waker = Waker::from(second.clone());
                assert!(read.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
                assert_eq!(Arc::strong_count(&second), 3, "the list holds the second waker");
            }
            assert_eq!(Arc::strong_count(&second), 1, "the list kept the second waker");
            assert_eq!(second.wakes(), 0);
            assert_eq!(Arc::strong_count(&first), 3, "the slot holds the first waker");
            drop(first_read);
            assert_eq!(Arc::strong_count(&first), 2, "the slot kept the first waker");
            assert_eq!(first.wakes(), 0);
        });
    }

    /// The same wakers go at the socket's next edge (woken once, for nothing), and the socket
    /// still serves a reader that waits after them.
    #[test]
    fn wakers_left_by_waiters_that_gave_up_go_at_the_next_edge() {
        within(LIMIT, || {
            let rt = rt();
            let (a, b) = UnixStream::pair().unwrap();
            let (first, second) = (CountWakes::new(), CountWakes::new());
            give_up_reading(&rt, &a, &first);
            give_up_reading(&rt, &a, &second);
            let a = Arc::new(a);
            let reader = {
                let a = a.clone();
                rt.spawn(async move {
                    let mut buf = [0u8; 4];
                    a.read_exact_async(&mut buf).await.map(|()| buf)
                })
            };
            std::thread::sleep(Duration::from_millis(20));
            rt.block_on(async { b.write_all_async(b"edge").await }).unwrap();
            assert_eq!(&rt.block_on(reader).unwrap().unwrap(), b"edge");
            wait_until("the edge took the wakers", || {
                Arc::strong_count(&first) == 1 && Arc::strong_count(&second) == 1
            });
            assert_eq!((first.wakes(), second.wakes()), (1, 1));
        });
    }

    /// A runtime shut down while wakers of waiters that gave up are queued on a socket that
    /// outlives it drops them, and the socket keeps working on a plain thread.
    #[test]
    fn wakers_left_by_waiters_that_gave_up_go_with_their_runtime() {
        within(LIMIT, || {
            let rt = rt();
            let (a, b) = UnixStream::pair().unwrap();
            let (first, second) = (CountWakes::new(), CountWakes::new());
            give_up_reading(&rt, &a, &first);
            give_up_reading(&rt, &a, &second);
            drop(rt);
            assert_eq!(Arc::strong_count(&first), 1, "the slot's waker outlived the runtime");
            assert_eq!(Arc::strong_count(&second), 1, "the list's waker outlived the runtime");
            (&b).write_all(b"after").unwrap();
            let mut buf = [0u8; 5];
            (&a).read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"after");
        });
    }
}

/// A socket first used after its runtime shut down — through a `Handle` that outlived it —
/// gets the runtime's shut-down error from a wait, as a socket registered before the shutdown
/// does (`docs/io.md`, "Closing"). Before, it was registered in the dead runtime's epoll set,
/// which nobody polls any more, and waited for ever although its data had come.
#[test]
fn a_socket_first_used_after_its_runtime_shut_down_gets_an_error_not_a_hang() {
    for workers in support::FLAVOURS {
        let rt = support::rt(workers);
        let handle = rt.handle().clone();
        drop(rt);
        let (a, b) = UnixStream::pair().unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            // Fails (the reader has gone) once the read returns its error at once.
            let _ = (&b).write_all(b"late");
            b
        });
        let read = within(LIMIT, move || {
            handle.block_on(async move {
                let mut buf = [0u8; 4];
                a.read_exact_async(&mut buf).await.map(|()| buf)
            })
        });
        let e = read.unwrap_err();
        assert!(
            e.to_string().contains("shut down"),
            "workers {workers}: {e:?}"
        );
        drop(writer.join().unwrap());
    }
}

/// A wait on a socket whose runtime shut down ends with the shut-down error at once; the waker
/// it queued on the way must not stay behind (it holds its task, and through it that task's
/// runtime, for as long as the socket lives).
#[test]
fn a_wait_that_finds_its_runtime_shut_down_leaves_no_waker_behind() {
    for workers in support::FLAVOURS {
        let rt = support::rt(workers);
        let (a, _b) = UnixStream::pair().unwrap();
        let gave_up = CountWakes::new();
        give_up_reading(&rt, &a, &gave_up);
        drop(rt);
        assert_eq!(Arc::strong_count(&gave_up), 1, "workers {workers}");
        let waker = CountWakes::new();
        let mut buf = [0u8; 8];
        let mut read = std::pin::pin!(a.read_async(&mut buf));
        let poll = std::future::Future::poll(
            read.as_mut(),
            &mut Context::from_waker(&Waker::from(waker.clone())),
        );
        match poll {
            std::task::Poll::Ready(Err(e)) => {
                assert!(
                    e.to_string().contains("shut down"),
                    "workers {workers}: {e:?}"
                )
            }
            other => panic!("workers {workers}: {other:?}"),
        }
        assert_eq!(
            Arc::strong_count(&waker),
            1,
            "workers {workers}: the closed registration kept the waker"
        );
    }
}

/// TCP urgent data (a peer's `send(MSG_OOB)`) between two writes: the read stops short at the
/// urgent mark with the second write already behind it, in the same edge. The short read must
/// not make the reader wait for an edge that will not come (the short-read rule of
/// `io/registry.rs`): it hung, before `EPOLLPRI` set the final bit, until the peer sent more —
/// here never, as the peer waits for the answer.
#[test]
fn urgent_data_does_not_strand_the_data_behind_it() {
    within(LIMIT, || {
        for workers in support::FLAVOURS {
            let rt = support::rt(workers);
            for round in 0..5 {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let peer = std::thread::spawn(move || {
                    use std::os::fd::AsRawFd;
                    let mut s = std::net::TcpStream::connect(addr).unwrap();
                    s.set_nodelay(true).unwrap();
                    // Let the reader wait first.
                    std::thread::sleep(Duration::from_millis(20));
                    s.write_all(b"abc").unwrap();
                    // SAFETY: a one-byte buffer that lives across the call; an open socket.
                    let sent = unsafe {
                        libc::send(s.as_raw_fd(), b"!".as_ptr().cast(), 1, libc::MSG_OOB)
                    };
                    assert_eq!(sent, 1);
                    s.write_all(b"def").unwrap();
                    let mut answer = [0u8; 2];
                    s.read_exact(&mut answer).unwrap();
                    answer
                });
                let got = rt.run(move || {
                    let (s, _) = listener.accept().unwrap();
                    let mut got = Vec::new();
                    let mut buf = [0u8; 64];
                    // The urgent byte is out of band (no `SO_OOBINLINE`): six bytes in line.
                    while got.len() < 6 {
                        match (&s).read(&mut buf).unwrap() {
                            0 => break,
                            n => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    (&s).write_all(b"ok").unwrap();
                    got
                });
                assert_eq!(got, b"abcdef", "workers {workers}, round {round}");
                assert_eq!(&peer.join().unwrap(), b"ok");
            }
        }
    });
}
