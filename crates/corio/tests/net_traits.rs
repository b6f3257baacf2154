//! The ecosystem's IO traits on corio's streams: `futures_io::AsyncRead`/`AsyncWrite` always,
//! `tokio::io::AsyncRead`/`AsyncWrite` with the `tokio-io` feature.

mod support;

use std::future::poll_fn;
use std::pin::Pin;

use corio::net::{TcpListener, TcpStream};
use support::{EVENTUALLY, within};

/// A connected pair, made from an async task.
async fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect_async(listener.local_addr().unwrap());
    let client = corio::spawn(client);
    let (server, _) = listener.accept_async().await.unwrap();
    (client.await.unwrap().unwrap(), server)
}

#[test]
fn futures_io_traits_move_bytes_and_close_the_write_side() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).block_on(async {
                use futures_io::{AsyncRead, AsyncWrite};
                let (mut client, mut server) = pair().await;
                let n = poll_fn(|cx| Pin::new(&mut client).poll_write(cx, b"futures"))
                    .await
                    .unwrap();
                assert_eq!(n, 7);
                poll_fn(|cx| Pin::new(&mut client).poll_close(cx))
                    .await
                    .unwrap();
                let mut got = Vec::new();
                let mut buf = [0u8; 4];
                loop {
                    match poll_fn(|cx| Pin::new(&mut server).poll_read(cx, &mut buf)).await {
                        Ok(0) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                        Err(e) => panic!("{e}"),
                    }
                }
                assert_eq!(got, b"futures");
            });
        }
    });
}

#[cfg(feature = "tokio-io")]
#[test]
fn tokio_io_traits_move_bytes_and_shut_down_the_write_side() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).block_on(async {
                use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
                let (mut client, mut server) = pair().await;
                poll_fn(|cx| Pin::new(&mut client).poll_write(cx, b"tokio"))
                    .await
                    .unwrap();
                poll_fn(|cx| Pin::new(&mut client).poll_shutdown(cx))
                    .await
                    .unwrap();
                let mut storage = [0u8; 16];
                let mut filled = 0;
                loop {
                    let mut rb = ReadBuf::new(&mut storage[filled..]);
                    poll_fn(|cx| Pin::new(&mut server).poll_read(cx, &mut rb))
                        .await
                        .unwrap();
                    let n = rb.filled().len();
                    if n == 0 {
                        break;
                    }
                    filled += n;
                }
                assert_eq!(&storage[..filled], b"tokio");
            });
        }
    });
}

/// Writes all of `bufs` with `write` (one vectored write per call), continuing a partial write
/// where it stopped; returns how many calls wrote less than what was left.
async fn write_all_vectored(
    mut bufs: &mut [std::io::IoSlice<'_>],
    mut write: impl FnMut(
        &mut std::task::Context<'_>,
        &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>>,
) -> usize {
    let mut partial = 0;
    while !bufs.is_empty() {
        let left: usize = bufs.iter().map(|b| b.len()).sum();
        let n = poll_fn(|cx| write(cx, bufs)).await.unwrap();
        assert!(n > 0, "a vectored write wrote nothing");
        if n < left {
            partial += 1;
        }
        std::io::IoSlice::advance_slices(&mut bufs, n);
    }
    partial
}

/// Reads `server` to the end with `read`, returning every byte.
async fn read_to_end(server: &TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match server.read_async(&mut buf).await.unwrap() {
            0 => return got,
            n => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// Fixes `stream`'s receive buffer at 64 KiB. Left to autotuning, a loopback receiver whose
/// reader keeps up on the other worker may grow to `tcp_rmem`'s maximum (32 MiB here), and then
/// one 16 MiB write can fit whole; a fixed buffer bounds what one write takes to the send
/// buffer plus 64 KiB.
fn cap_receive_buffer(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let size: libc::c_int = 64 * 1024;
    // SAFETY: `stream` owns an open socket for the duration of the call, and `size` is a live
    // c_int whose address and length are passed together.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_RCVBUF: {}", std::io::Error::last_os_error());
}

/// Sends a big buffer (more than a loopback socket's buffers take at once, so the first
/// vectored write is partial) and a small one through `writer` with `write`, one vectored
/// write per call; closes `writer` and checks that `server` reads both whole and in order.
/// Returns how many of the writes were partial.
async fn send_big_and_small<W>(
    mut writer: W,
    server: TcpStream,
    mut write: impl FnMut(
        &mut W,
        &mut std::task::Context<'_>,
        &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>>,
) -> usize {
    cap_receive_buffer(&server);
    let big: Vec<u8> = (0..16 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let small = b"and the tail";
    let reader = corio::spawn(async move { read_to_end(&server).await });
    let mut bufs = [std::io::IoSlice::new(&big), std::io::IoSlice::new(small)];
    let partial = write_all_vectored(&mut bufs, |cx, bufs| write(&mut writer, cx, bufs)).await;
    drop(writer);
    let got = reader.await.unwrap();
    assert_eq!(got.len(), big.len() + small.len());
    assert!(
        got[..big.len()] == big[..],
        "the big buffer arrived changed"
    );
    assert_eq!(&got[big.len()..], &small[..]);
    partial
}

#[test]
fn futures_io_vectored_write_sends_two_buffers_whole_and_in_order() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).block_on(async {
                use futures_io::AsyncWrite;
                let (mut client, server) = pair().await;
                let bufs = [
                    std::io::IoSlice::new(b"head "),
                    std::io::IoSlice::new(b"body"),
                ];
                let n = poll_fn(|cx| Pin::new(&mut client).poll_write_vectored(cx, &bufs))
                    .await
                    .unwrap();
                assert_eq!(n, 9, "one vectored write takes both buffers");
                drop(client);
                assert_eq!(read_to_end(&server).await, b"head body");
            });
        }
    });
}

/// More buffers than one `writev` takes (std passes at most 1,024): the first write takes
/// 1,024 bytes of an empty send buffer, which is not a full one, so the next write must not
/// wait for writability (an edge-triggered wait there never ends).
#[test]
fn futures_io_vectored_write_of_more_buffers_than_writev_takes_completes() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).block_on(async {
                use futures_io::AsyncWrite;
                let (mut client, server) = pair().await;
                let bytes: Vec<u8> = (0..2000u32).map(|i| i as u8).collect();
                let mut bufs: Vec<_> = bytes.chunks(1).map(std::io::IoSlice::new).collect();
                write_all_vectored(&mut bufs, |cx, bufs| {
                    Pin::new(&mut client).poll_write_vectored(cx, bufs)
                })
                .await;
                drop(client);
                assert_eq!(read_to_end(&server).await, bytes);
            });
        }
    });
}

#[test]
fn futures_io_partial_vectored_write_is_continued_where_it_stopped() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).block_on(async {
                use futures_io::AsyncWrite;
                let (client, server) = pair().await;
                let partial = send_big_and_small(client, server, |c, cx, bufs| {
                    Pin::new(c).poll_write_vectored(cx, bufs)
                })
                .await;
                assert!(partial > 0, "16 MiB went into the socket in one write");
            });
        }
    });
}

#[cfg(feature = "tokio-io")]
#[test]
fn tokio_io_vectored_write_is_vectored_and_sends_two_buffers_whole_and_in_order() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).block_on(async {
                use tokio::io::AsyncWrite;
                let (client, server) = pair().await;
                assert!(client.is_write_vectored());
                let partial = send_big_and_small(client, server, |c, cx, bufs| {
                    Pin::new(c).poll_write_vectored(cx, bufs)
                })
                .await;
                assert!(partial > 0, "16 MiB went into the socket in one write");
            });
        }
    });
}

#[test]
fn owned_write_half_vectored_write_sends_two_buffers_whole_and_in_order() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).block_on(async {
                use futures_io::AsyncWrite;
                let (client, server) = pair().await;
                let (_read, write) = client.into_split();
                send_big_and_small(write, server, |w, cx, bufs| {
                    Pin::new(w).poll_write_vectored(cx, bufs)
                })
                .await;
            });
        }
    });
}
