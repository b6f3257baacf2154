//! Several waiters on one socket: the single-waiter slot in front of each direction's waker
//! list (`io/slot.rs`) must serve the common case and hand every other waiter to the list —
//! the two halves of one socket waiting at once, a second and third reader on one direction,
//! a reader after one that gave up (its waker left in the slot: timed out, or aborted), and a
//! close while a slot waiter and list waiters wait together.

#[macro_use]
mod support;

use std::io::{ErrorKind, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use corio::net::TcpStream;
use support::{EVENTUALLY, tcp_pair as pair, within};

/// One socket shared by `Arc` (a dropped `try_clone` handle would close it for all).
fn shared(s: TcpStream) -> Arc<TcpStream> {
    Arc::new(s)
}

/// Lets the coroutines just started reach their wait (not needed for correctness: a call that
/// has not waited yet simply finds its data).
fn let_them_wait() {
    corio::sleep(Duration::from_millis(100));
}

rt_common! {
    #[test]
    fn a_reader_and_a_writer_waiting_on_the_two_halves_of_one_socket_both_wake() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let (client, server) = pair();
                let client = shared(client);
                let writer_side = client.clone();
                // The reader waits for data; the writer fills the socket's buffers and waits
                // for the peer to read.
                let reader = corio::go(move || {
                    let mut buf = [0u8; 4];
                    (&*client).read_exact(&mut buf).map(|()| buf)
                });
                let total = 8 << 20;
                let writer = corio::go(move || {
                    let chunk = vec![7u8; 64 << 10];
                    let mut sent = 0;
                    while sent < total {
                        sent += (&*writer_side).write(&chunk[..(total - sent).min(chunk.len())])?;
                    }
                    Ok::<usize, std::io::Error>(sent)
                });
                let_them_wait();
                (&server).write_all(b"ping").unwrap();
                let mut buf = vec![0u8; 64 << 10];
                let mut got = 0;
                while got < total {
                    let n = (&server).read(&mut buf).unwrap();
                    assert!(n > 0 && buf[..n].iter().all(|&b| b == 7));
                    got += n;
                }
                assert_eq!(&reader.join().unwrap().unwrap(), b"ping");
                assert_eq!(writer.join().unwrap().unwrap(), total);
            });
        });
    }

    #[test]
    fn three_readers_of_one_socket_each_wake_for_their_byte() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let (client, server) = pair();
                let client = shared(client);
                // The first to wait takes the slot, the other two go to the list.
                let readers: Vec<_> = (0..3)
                    .map(|_| {
                        let handle = client.clone();
                        corio::go(move || {
                            let mut byte = [0u8; 1];
                            (&*handle).read_exact(&mut byte).map(|()| byte[0])
                        })
                    })
                    .collect();
                let_them_wait();
                for b in [1u8, 2, 3] {
                    (&server).write_all(&[b]).unwrap();
                    let_them_wait();
                }
                let mut got: Vec<u8> = readers
                    .into_iter()
                    .map(|r| r.join().unwrap().unwrap())
                    .collect();
                got.sort_unstable();
                assert_eq!(got, [1, 2, 3]);
            });
        });
    }

    #[test]
    fn a_reader_after_one_that_timed_out_still_wakes() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let (client, server) = pair();
                let client = shared(client);
                let first = client.clone();
                // The first reader gives up: its coroutine's waker stays in the slot.
                let gave_up = corio::go(move || {
                    first
                        .set_read_timeout(Some(Duration::from_millis(20)))
                        .unwrap();
                    let mut buf = [0u8; 1];
                    (&*first).read(&mut buf).map(|_| ())
                });
                let e = gave_up.join().unwrap().unwrap_err();
                assert!(matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock));
                client.set_read_timeout(None).unwrap(); // the timeout is the socket's
                // Another coroutine waits on the same direction and must still be woken.
                let second = corio::go(move || {
                    let mut buf = [0u8; 5];
                    (&*client).read_exact(&mut buf).map(|()| buf)
                });
                let_them_wait();
                (&server).write_all(b"hello").unwrap();
                assert_eq!(&second.join().unwrap().unwrap(), b"hello");
            });
        });
    }

    #[test]
    fn a_reader_aborted_while_it_waits_leaves_the_socket_to_the_next_reader() {
        // A read with no timeout waits in `Source::wait_stackful`, without a future: an abort
        // must still unwind it, and the waker it leaves must not swallow the next reader's
        // wake-up.
        within(EVENTUALLY, || {
            rt().run(|| {
                let (client, server) = pair();
                let client = shared(client);
                let first = client.clone();
                let aborted = corio::go(move || {
                    let mut buf = [0u8; 1];
                    (&*first).read(&mut buf).map(|_| ())
                });
                let_them_wait();
                aborted.abort();
                assert!(aborted.join().is_err(), "the aborted read returned");
                let second = corio::go(move || {
                    let mut buf = [0u8; 5];
                    (&*client).read_exact(&mut buf).map(|()| buf)
                });
                let_them_wait();
                (&server).write_all(b"hello").unwrap();
                assert_eq!(&second.join().unwrap().unwrap(), b"hello");
            });
        });
    }

    #[test]
    fn dropping_a_socket_wakes_every_waiter_on_one_direction_with_an_error() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let (client, _server) = pair();
                let waiters: Vec<_> = (0..3)
                    .map(|_| {
                        let clone = client.try_clone().unwrap();
                        corio::go(move || {
                            let mut buf = [0u8; 8];
                            (&clone).read(&mut buf)
                        })
                    })
                    .collect();
                let_them_wait();
                drop(client);
                for w in waiters {
                    assert_eq!(w.join().unwrap().unwrap_err().kind(), ErrorKind::NotConnected);
                }
            });
        });
    }
}

/// A waker that counts its wakes; `Arc::strong_count` tells who still holds it.
struct Count(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Polls `fut` once with `waker`; it must be waiting.
fn poll_pending<F: std::future::Future>(fut: std::pin::Pin<&mut F>, waker: &std::task::Waker) {
    let mut cx = std::task::Context::from_waker(waker);
    assert!(
        fut.poll(&mut cx).is_pending(),
        "the socket has nothing to read"
    );
}

/// A future that waited and is dropped (a `select`, a timeout) takes its waker back: the
/// socket does not hold the task until its next edge. Before, the slot kept the first
/// waiter's waker and the list every later one's — a list that grew with every task that
/// gave up on a socket that saw no traffic.
#[test]
fn a_dropped_read_future_leaves_no_waker_behind() {
    let socket = corio::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let wakers: Vec<Arc<Count>> = (0..3)
        .map(|_| Arc::new(Count(std::sync::atomic::AtomicUsize::new(0))))
        .collect();
    for round in 0..2 {
        // The first waiter takes the slot, the others the list; all give up.
        for count in &wakers {
            let waker = std::task::Waker::from(count.clone());
            let mut buf = [0u8; 8];
            let mut fut = std::pin::pin!(socket.recv_async(&mut buf));
            poll_pending(fut.as_mut(), &waker);
        }
        for (i, count) in wakers.iter().enumerate() {
            assert_eq!(
                Arc::strong_count(count),
                1,
                "round {round}: waiter {i}'s waker is still held by the socket"
            );
        }
    }
    // The socket still works, and wakes a waiter that stays.
    let keep = &wakers[0];
    let waker = std::task::Waker::from(keep.clone());
    let mut buf = [0u8; 8];
    let mut fut = std::pin::pin!(socket.recv_async(&mut buf));
    poll_pending(fut.as_mut(), &waker);
    let before = keep.0.load(std::sync::atomic::Ordering::SeqCst);
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sender.send_to(b"hi", socket.local_addr().unwrap()).unwrap();
    support::wait_until("the waiter that stayed is woken", || {
        keep.0.load(std::sync::atomic::Ordering::SeqCst) > before
    });
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(matches!(
        fut.as_mut().poll(&mut cx),
        std::task::Poll::Ready(Ok(2))
    ));
}

/// A future polled again with another waker (moved to another task, or polled by a combinator
/// that makes a waker per poll) keeps only its latest waker with the socket, as it would with
/// tokio's per-future waiter. Before 2026-12-06 each poll with a new waker while no data came
/// added one to the direction's list (50 of 50 held here), which grew until the next edge,
/// holding every earlier task: the list kept one entry per task waker, shared by every future
/// of that task, so a future could not take its old waker back without waking it or robbing
/// another future of the old task. Entries now count their futures (docs/io.md, "Waiters").
#[test]
fn a_read_future_polled_with_ever_new_wakers_leaves_only_the_latest_with_the_socket() {
    let socket = corio::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let wakers: Vec<Arc<Count>> = (0..50)
        .map(|_| Arc::new(Count(std::sync::atomic::AtomicUsize::new(0))))
        .collect();
    {
        let mut buf = [0u8; 8];
        let mut fut = std::pin::pin!(socket.recv_async(&mut buf));
        for count in &wakers {
            poll_pending(fut.as_mut(), &std::task::Waker::from(count.clone()));
        }
        let held: Vec<usize> = (0..wakers.len())
            .filter(|&i| Arc::strong_count(&wakers[i]) > 1)
            .collect();
        assert_eq!(
            held,
            [wakers.len() - 1],
            "the wakers the socket still holds (only the latest should be)"
        );
        // The latest is woken by data.
        let latest = wakers.last().unwrap();
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sender.send_to(b"hi", socket.local_addr().unwrap()).unwrap();
        support::wait_until("the latest waker is woken", || {
            latest.0.load(std::sync::atomic::Ordering::SeqCst) > 0
        });
    }
    assert!(
        wakers.iter().all(|w| Arc::strong_count(w) == 1),
        "a waker is still held after the future went"
    );
}

/// Two futures of one task wait to read one socket, with the task's one waker: the socket
/// keeps one entry for both. The first is dropped (a `select` that chose another branch); the
/// second, which returned `Pending` and will be polled again only when woken, must still be
/// woken by the data. (Before entries counted their futures, the first one's drop took the
/// entry back and woke it for this reason.)
#[test]
fn a_future_dropped_beside_another_of_its_task_leaves_it_the_wake_up() {
    let socket = corio::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let task = Arc::new(Count(std::sync::atomic::AtomicUsize::new(0)));
    let waker = std::task::Waker::from(task.clone());
    let (mut first_buf, mut second_buf) = ([0u8; 8], [0u8; 8]);
    let mut second = Box::pin(socket.recv_async(&mut second_buf));
    {
        let mut first = std::pin::pin!(socket.recv_async(&mut first_buf));
        poll_pending(first.as_mut(), &waker);
        poll_pending(second.as_mut(), &waker);
        poll_pending(second.as_mut(), &waker); // polled again: still counted once
    }
    assert_eq!(
        task.0.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the first future's drop woke the task"
    );
    assert_eq!(
        Arc::strong_count(&task),
        3,
        "the second future's entry is gone"
    );
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sender.send_to(b"hi", socket.local_addr().unwrap()).unwrap();
    support::wait_until("the remaining future is woken", || {
        task.0.load(std::sync::atomic::Ordering::SeqCst) > 0
    });
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(matches!(
        second.as_mut().poll(&mut cx),
        std::task::Poll::Ready(Ok(2))
    ));
    drop(second);
    assert_eq!(
        Arc::strong_count(&task),
        2,
        "a waker is still held by the socket"
    );
}

/// A `read_async` future dropped before its wake-up takes its waker back even while another
/// task of the socket's direction is registering at that moment (it holds the direction's slot
/// for a few instructions, to find it taken and go to the list). The give-up used to try once
/// and leave the waker with the socket (until the next edge or the socket's drop) in about 1
/// case in 20 here.
#[test]
fn a_dropped_read_future_takes_its_waker_back_while_another_waiter_registers() {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::task::{Context, Wake, Waker};
    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let _entered = rt.enter();
        let mut left = Vec::new();
        const ROUNDS: usize = 2_000;
        for round in 0..ROUNDS {
            let (a, _peer) = corio::net::UnixStream::pair().unwrap();
            let mine = Arc::new(Noop);
            let go = AtomicBool::new(true);
            let polls = AtomicUsize::new(0);
            std::thread::scope(|s| {
                let waker = Waker::from(mine.clone());
                let mut buf = [0u8; 8];
                let mut read = Box::pin(a.read_async(&mut buf));
                // Registers the socket and leaves `mine` in the read slot.
                assert!(
                    read.as_mut()
                        .poll(&mut Context::from_waker(&waker))
                        .is_pending()
                );
                drop(waker);
                s.spawn(|| {
                    let other = Waker::from(Arc::new(Noop));
                    let mut cx = Context::from_waker(&other);
                    let mut buf = [0u8; 8];
                    while go.load(SeqCst) {
                        let polled =
                            futures_io::AsyncRead::poll_read(Pin::new(&mut &a), &mut cx, &mut buf);
                        assert!(polled.is_pending());
                        polls.fetch_add(1, SeqCst);
                    }
                });
                while polls.load(SeqCst) < round % 50 {
                    std::hint::spin_loop();
                }
                drop(read);
                go.store(false, SeqCst);
            });
            if Arc::strong_count(&mine) != 1 {
                left.push(round);
            }
        }
        assert!(
            left.is_empty(),
            "{} of {ROUNDS} dropped read futures left their waker with the socket (first: {:?})",
            left.len(),
            &left[..left.len().min(5)]
        );
    });
}

/// A waker whose `clone` panics, met by a socket's read while its slot was empty: the panic
/// reaches the poller of the future, and the slot is let go. It stayed held before, and after
/// the next edge every waiter of that direction was woken at once by its own registration, for
/// ever (a poll loop that spun on an idle socket).
#[test]
fn a_waker_whose_clone_panics_does_not_wedge_the_sockets_waiter_slot() {
    use std::future::Future;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::task::{Context, RawWaker, RawWakerVTable, Wake, Waker};

    const PANICS: RawWakerVTable = RawWakerVTable::new(
        |_| panic!("[expected panic] this waker's clone panics"),
        |_| {},
        |_| {},
        |_| {},
    );
    struct Counts(AtomicUsize);
    impl Wake for Counts {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    support::quiet_expected_panics();
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let _entered = rt.enter();
        let (a, peer) = corio::net::UnixStream::pair().unwrap();
        let mut buf = [0u8; 8];
        {
            // SAFETY: the vtable's functions ignore the data pointer.
            let panics = unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &PANICS)) };
            let mut read = Box::pin(a.read_async(&mut buf));
            let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                read.as_mut().poll(&mut Context::from_waker(&panics))
            }));
            assert!(polled.is_err(), "the clone's panic reaches the poller");
        }
        // An edge, dispatched by the runtime's poller, then read.
        (&peer).write_all(b"x").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!((&a).read(&mut buf).unwrap(), 1);
        // With nothing to read, a waiter waits, and is not woken until there is.
        let counts = Arc::new(Counts(AtomicUsize::new(0)));
        let waker = Waker::from(counts.clone());
        let mut read = Box::pin(a.read_async(&mut buf));
        for _ in 0..3 {
            assert!(
                read.as_mut()
                    .poll(&mut Context::from_waker(&waker))
                    .is_pending()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(counts.0.load(SeqCst), 0, "woken with nothing to read");
        (&peer).write_all(b"y").unwrap();
        support::wait_until("the waiter is woken by the byte", || {
            counts.0.load(SeqCst) > 0
        });
        assert!(matches!(
            read.as_mut().poll(&mut Context::from_waker(&waker)),
            std::task::Poll::Ready(Ok(1))
        ));
    });
}
