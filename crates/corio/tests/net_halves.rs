//! The owned halves of a stream (`into_split`) for both stream types, TCP and Unix: a reader
//! and a writer on two workers or in two tasks at once, the write half's drop that sends the
//! peer EOF, and `reunite`, which gives the stream back from its own two halves and hands
//! both back from halves of different streams. (`net_into_std.rs` checks that a reunited
//! stream is one handle again: `into_std` takes it out of the epoll set.)
//!
//! One body per behaviour, instantiated for each stream type by `halves_tests!`.

#[macro_use]
mod support;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use support::{EVENTUALLY, within};

/// Connected pairs, made without a runtime: a corio stream and its `std` peer.
mod pairs {
    pub fn tcp() -> (corio::net::TcpStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (peer, _) = listener.accept().unwrap();
        (corio::net::TcpStream::from_std(stream).unwrap(), peer)
    }

    pub fn unix() -> (corio::net::UnixStream, std::os::unix::net::UnixStream) {
        let (stream, peer) = std::os::unix::net::UnixStream::pair().unwrap();
        (corio::net::UnixStream::from_std(stream).unwrap(), peer)
    }
}

/// The size of message `i` of a transfer: 1 byte to 48 KiB, so that some writes fill the
/// send buffer and some reads find a part of a message.
fn message_size(i: usize) -> usize {
    1 + (i * 7919) % (48 << 10)
}

/// The bytes of messages `0..n`: message `i` is `message_size(i)` bytes of `i as u8`.
fn messages(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| vec![i as u8; message_size(i)])
        .collect()
}

/// Puts the two coroutines of a test on different workers: coroutine `me` (0 or 1) says it
/// has started, then spins — without a runtime call, so that nothing else can start on its
/// worker (coroutines are not preempted unless asked to be) — until the other has started,
/// which must then be on the other worker (a started coroutine never changes thread).
/// Returns the thread it runs on.
fn meet(started: &[AtomicBool; 2], me: usize) -> std::thread::ThreadId {
    started[me].store(true, SeqCst);
    let since = std::time::Instant::now();
    while !started[1 - me].load(SeqCst) {
        assert!(
            since.elapsed() < EVENTUALLY,
            "the other coroutine never started"
        );
        std::hint::spin_loop();
    }
    std::thread::current().id()
}

/// Echoes what `peer` reads until EOF, on a plain thread, then drops it (the EOF the reader
/// then sees ends its transfer).
fn echo_on_a_thread<P: Send + 'static>(peer: P) -> std::thread::JoinHandle<()>
where
    for<'a> &'a P: Read + Write,
{
    std::thread::spawn(move || {
        std::io::copy(&mut &peer, &mut &peer).unwrap();
    })
}

/// The tests, in a module per stream type named as its `corio::net` module (`tcp`, `unix`),
/// whose halves they use; `pairs::$kind` makes the connected pairs.
macro_rules! halves_tests {
    ($($kind:ident),*) => {$(
        mod $kind {
            use super::*;
            use corio::net::$kind::{OwnedReadHalf, OwnedWriteHalf, ReuniteError};

            /// A round trip between a corio stream and its `std` peer: each writes four bytes,
            /// the other reads them (a write after the write side was shut down would fail).
            macro_rules! round_trip {
                ($stream:expr, $peer:expr) => {{
                    let mut buf = [0u8; 4];
                    (&$stream).write_all(b"ping").unwrap();
                    (&$peer).read_exact(&mut buf).unwrap();
                    assert_eq!(&buf, b"ping");
                    (&$peer).write_all(b"pong").unwrap();
                    (&$stream).read_exact(&mut buf).unwrap();
                    assert_eq!(&buf, b"pong");
                }};
            }

            #[test]
            fn reunite_gives_back_a_working_stream_whichever_half_asks() {
                within(EVENTUALLY, || {
                    for workers in support::FLAVOURS {
                        support::rt(workers).run(|| {
                            let (stream, peer) = super::pairs::$kind();
                            round_trip!(stream, peer); // registered in the runtime now
                            let (read, write) = stream.into_split();
                            let stream = read.reunite(write).unwrap();
                            round_trip!(stream, peer);
                            let (read, write) = stream.into_split();
                            let stream = write.reunite(read).unwrap();
                            round_trip!(stream, peer);
                            // The reunited stream closes the socket when dropped, as any.
                            drop(stream);
                            let mut buf = [0u8; 1];
                            assert_eq!((&peer).read(&mut buf).unwrap(), 0);
                        });
                    }
                });
            }

            #[test]
            fn halves_of_two_streams_do_not_reunite_and_come_back_working() {
                within(EVENTUALLY, || {
                    for workers in support::FLAVOURS {
                        support::rt(workers).run(|| {
                            let (one, peer_one) = super::pairs::$kind();
                            let (two, peer_two) = super::pairs::$kind();
                            let (read_one, write_one) = one.into_split();
                            let (read_two, write_two) = two.into_split();

                            let err: ReuniteError = read_one.reunite(write_two).unwrap_err();
                            assert!(err.to_string().contains("same"), "{err}");
                            let _: &dyn std::error::Error = &err;
                            let ReuniteError(read_one, write_two) = err;
                            let err = write_one.reunite(read_two).unwrap_err();
                            let ReuniteError(read_two, write_one) = err;

                            // Every half still works, and no write side was shut down: the
                            // halves handed back were not dropped.
                            let (read_one, write_one): (OwnedReadHalf, OwnedWriteHalf) =
                                (read_one, write_one);
                            round_trip!(*write_one, peer_one);
                            round_trip!(*read_two, peer_two);

                            let one = read_one.reunite(write_one).unwrap();
                            let two = write_two.reunite(read_two).unwrap();
                            round_trip!(one, peer_one);
                            round_trip!(two, peer_two);
                        });
                    }
                });
            }

            #[test]
            fn dropping_the_write_half_sends_eof_and_the_read_half_keeps_reading() {
                within(EVENTUALLY, || {
                    for workers in support::FLAVOURS {
                        support::rt(workers).run(|| {
                            let (stream, peer) = super::pairs::$kind();
                            let (mut read, mut write) = stream.into_split();
                            write.write_all(b"bye").unwrap();
                            drop(write);
                            let mut got = Vec::new();
                            (&peer).read_to_end(&mut got).unwrap(); // ends: EOF
                            assert_eq!(got, b"bye");
                            (&peer).write_all(b"still").unwrap();
                            let mut reply = [0u8; 5];
                            read.read_exact(&mut reply).unwrap();
                            assert_eq!(&reply, b"still");
                        });
                    }
                });
            }

            /// A reader coroutine and a writer coroutine on the two halves, on different
            /// workers (`meet`), with the peer echoing on a plain thread; every byte checked.
            #[test]
            fn a_reader_and_a_writer_coroutine_on_two_workers_move_every_byte() {
                const MESSAGES: usize = 400;
                within(EVENTUALLY, || {
                    let rt = support::rt(2);
                    let expected = Arc::new(messages(MESSAGES));
                    for _round in 0..3 {
                        let (stream, peer) = super::pairs::$kind();
                        let echo = echo_on_a_thread(peer);
                        let (mut read, mut write) = stream.into_split();
                        let started = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
                        let reader = rt.go({
                            let (expected, started) = (expected.clone(), started.clone());
                            move || {
                                let thread = meet(&started, 0);
                                let mut got = Vec::with_capacity(expected.len());
                                let mut buf = vec![0u8; 64 << 10];
                                loop {
                                    match read.read(&mut buf).unwrap() {
                                        0 => break,
                                        n => got.extend_from_slice(&buf[..n]),
                                    }
                                }
                                assert!(got == *expected, "the echoed bytes differ");
                                thread
                            }
                        });
                        let writer = rt.go(move || {
                            let thread = meet(&started, 1);
                            for i in 0..MESSAGES {
                                write.write_all(&vec![i as u8; message_size(i)]).unwrap();
                            }
                            thread // the write half drops here: the echo ends, then the read
                        });
                        let writer_thread = writer.join().unwrap();
                        let reader_thread = reader.join().unwrap();
                        echo.join().unwrap();
                        assert_ne!(writer_thread, reader_thread);
                    }
                });
            }

            /// The same with two async tasks through the halves' `futures_io` traits (tasks
            /// may run on either worker, and move between them at each wait).
            #[test]
            fn a_reader_and_a_writer_task_move_every_byte() {
                use support::futures_io_compat::*;
                const MESSAGES: usize = 400;
                within(EVENTUALLY, || {
                    for workers in support::FLAVOURS {
                        let rt = support::rt(workers);
                        let expected = messages(MESSAGES);
                        let (stream, peer) = super::pairs::$kind();
                        let echo = echo_on_a_thread(peer);
                        let (mut read_half, mut write) = stream.into_split();
                        let reader = rt.spawn(async move {
                            let mut got = Vec::new();
                            let mut buf = vec![0u8; 64 << 10];
                            loop {
                                match read(&mut read_half, &mut buf).await.unwrap() {
                                    0 => return got,
                                    n => got.extend_from_slice(&buf[..n]),
                                }
                            }
                        });
                        let writer = rt.spawn(async move {
                            for i in 0..MESSAGES {
                                write_all(&mut write, &vec![i as u8; message_size(i)])
                                    .await
                                    .unwrap();
                            }
                            close(&mut write).await.unwrap(); // EOF for the echo, then the reader
                            write
                        });
                        let _write = rt.block_on(writer).unwrap();
                        let got = rt.block_on(reader).unwrap();
                        assert!(got == expected, "the echoed bytes differ");
                        echo.join().unwrap();
                    }
                });
            }

            #[cfg(feature = "tokio-io")]
            #[test]
            fn the_halves_implement_tokio_io() {
                use std::future::poll_fn;
                use std::pin::Pin;
                use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
                within(EVENTUALLY, || {
                    for workers in support::FLAVOURS {
                        let (stream, peer) = super::pairs::$kind();
                        let echo = echo_on_a_thread(peer);
                        support::rt(workers).block_on(async move {
                            let (mut read, mut write) = stream.into_split();
                            assert!(AsyncWrite::is_write_vectored(&write));
                            let n = poll_fn(|cx| Pin::new(&mut write).poll_write(cx, b"tokio"))
                                .await
                                .unwrap();
                            assert_eq!(n, 5);
                            poll_fn(|cx| Pin::new(&mut write).poll_shutdown(cx)).await.unwrap();
                            let mut storage = [0u8; 16];
                            let mut filled = 0;
                            loop {
                                let mut rb = ReadBuf::new(&mut storage[filled..]);
                                poll_fn(|cx| Pin::new(&mut read).poll_read(cx, &mut rb))
                                    .await
                                    .unwrap();
                                match rb.filled().len() {
                                    0 => break,
                                    n => filled += n,
                                }
                            }
                            assert_eq!(&storage[..filled], b"tokio");
                        });
                        echo.join().unwrap();
                    }
                });
            }
        }
    )*};
}

halves_tests!(tcp, unix);

/// The halves are `Send` and `Sync` (a half moves to its own coroutine or task), and a
/// `ReuniteError` carries them (`Send`, `'static`: it can cross threads as any error).
#[test]
fn halves_and_their_error_are_send_and_sync() {
    fn send_sync<T: Send + Sync + 'static>() {}
    send_sync::<corio::net::tcp::OwnedReadHalf>();
    send_sync::<corio::net::tcp::OwnedWriteHalf>();
    send_sync::<corio::net::tcp::ReuniteError>();
    send_sync::<corio::net::unix::OwnedReadHalf>();
    send_sync::<corio::net::unix::OwnedWriteHalf>();
    send_sync::<corio::net::unix::ReuniteError>();
}
