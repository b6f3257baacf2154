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
