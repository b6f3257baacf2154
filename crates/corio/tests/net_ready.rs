//! The readiness fast path of `corio::net` (`io/registry.rs`, "the protocol"): a stream read or
//! write that moves fewer bytes than asked for clears the socket's ready bit, and the next
//! operation waits for an edge without trying its system call. These tests drive exactly the
//! edges of that path — data (or buffer space) arriving after a short read (write), while
//! the reader is between its read and its wait, or long after — and check that no wake-up is
//! lost: every byte arrives, every write completes. (tokio's `tcp_stream` tests of
//! `clear_readiness` after a short read are the model.)

#[macro_use]
mod support;

use std::io::{Read, Write};
use std::time::Duration;

use corio::net::{TcpListener, TcpStream};
use support::{EVENTUALLY, within};

/// A corio socket (server side) and a plain `std` socket connected to it, which a plain thread
/// drives independently of the runtime.
fn corio_and_std() -> (TcpStream, std::net::TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let peer = std::net::TcpStream::connect(addr).unwrap();
    let (server, _) = listener.accept().unwrap();
    (server, peer)
}

/// Message `i` of the streaming tests: `i % 7 + 1` bytes of value `i as u8`.
fn message(i: usize) -> Vec<u8> {
    vec![i as u8; i % 7 + 1]
}

/// Sends `rounds` messages from a plain thread, pausing now and then (so that some arrive after
/// the reader cleared its ready bit and waits, others while it is about to), then closes.
fn send_messages(mut peer: std::net::TcpStream, rounds: usize) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        peer.set_nodelay(true).unwrap();
        for i in 0..rounds {
            peer.write_all(&message(i)).unwrap();
            match i % 10 {
                0 => std::thread::sleep(Duration::from_millis(1)),
                5 => std::thread::yield_now(),
                _ => {}
            }
        }
    })
}

/// What `send_messages` sends, concatenated.
fn expected(rounds: usize) -> Vec<u8> {
    (0..rounds).flat_map(message).collect()
}

const ROUNDS: usize = 2_000;

/// Bytes written into a peer that starts reading only after a pause: the writes fill the
/// socket buffers (a short write, then `EAGAIN`), and the peer's reads must wake the writer.
const FLOOD: usize = 8 << 20;

/// Reads everything `peer` sends until it closes, after a pause long enough for the writer
/// to fill the socket buffers and wait.
fn drain_after_pause(mut peer: std::net::TcpStream) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        let mut got = Vec::new();
        peer.read_to_end(&mut got).unwrap();
        got
    })
}

fn flood() -> Vec<u8> {
    (0..FLOOD).map(|i| (i % 251) as u8).collect()
}

rt_common! {
    #[test]
    fn data_arriving_after_a_short_read_wakes_a_coroutine_reader() {
        within(EVENTUALLY, || {
            let got = rt().run(|| {
                let (server, peer) = corio_and_std();
                let sender = send_messages(peer, ROUNDS);
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    // Every read is short (the peer never sends 4 KiB at once).
                    match (&server).read(&mut buf).unwrap() {
                        0 => break,
                        n => got.extend_from_slice(&buf[..n]),
                    }
                }
                sender.join().unwrap();
                got
            });
            assert_eq!(got, expected(ROUNDS));
        });
    }

    #[test]
    fn data_arriving_after_a_short_read_wakes_an_async_reader() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (server, peer) = rt.run(corio_and_std);
            let sender = send_messages(peer, ROUNDS);
            let got = rt.block_on(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    match server.read_async(&mut buf).await.unwrap() {
                        0 => break,
                        n => got.extend_from_slice(&buf[..n]),
                    }
                }
                got
            });
            sender.join().unwrap();
            assert_eq!(got, expected(ROUNDS));
        });
    }

    #[test]
    fn a_close_that_comes_with_the_last_data_still_ends_the_stream() {
        // The peer's last bytes and its FIN usually reach the poller as one edge: the short
        // read of the bytes must not make the reader wait for an edge that never comes.
        within(EVENTUALLY, || {
            rt().run(|| {
                for _ in 0..200 {
                    let (server, mut peer) = corio_and_std();
                    let closer = std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(1));
                        peer.write_all(b"last").unwrap();
                    });
                    let mut buf = [0u8; 64];
                    let mut got = Vec::new();
                    loop {
                        match (&server).read(&mut buf).unwrap() {
                            0 => break,
                            n => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    assert_eq!(got, b"last");
                    closer.join().unwrap();
                }
            });
        });
    }

    #[test]
    fn a_reply_after_a_short_read_wakes_a_ping_pong_coroutine() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let (server, mut peer) = corio_and_std();
                // The plain thread answers each ping only after the coroutine has read the
                // previous reply short and, usually, gone to wait for the next.
                let echo = std::thread::spawn(move || {
                    let mut byte = [0u8; 1];
                    while peer.read(&mut byte).unwrap() == 1 {
                        peer.write_all(&byte).unwrap();
                    }
                });
                let mut buf = [0u8; 64];
                for i in 0..ROUNDS {
                    (&server).write_all(&[i as u8]).unwrap();
                    let n = (&server).read(&mut buf).unwrap();
                    assert_eq!(&buf[..n], &[i as u8]);
                }
                drop(server);
                echo.join().unwrap();
            });
        });
    }

    #[test]
    fn a_peer_that_starts_reading_late_wakes_a_coroutine_writer() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (server, peer) = rt.run(corio_and_std);
            let reader = drain_after_pause(peer);
            rt.run(move || {
                let data = flood();
                // Short writes, then waits for buffer space, until all of it is taken.
                for chunk in data.chunks(1 << 20) {
                    (&server).write_all(chunk).unwrap();
                }
            });
            assert!(reader.join().unwrap() == flood());
        });
    }

    #[test]
    fn a_peer_that_starts_reading_late_wakes_an_async_writer() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (server, peer) = rt.run(corio_and_std);
            let reader = drain_after_pause(peer);
            rt.block_on(async move {
                let data = flood();
                for chunk in data.chunks(1 << 20) {
                    server.write_all_async(chunk).await.unwrap();
                }
            });
            assert!(reader.join().unwrap() == flood());
        });
    }
}
