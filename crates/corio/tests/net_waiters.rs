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
