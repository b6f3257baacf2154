//! Echo over real TCP sockets on 127.0.0.1: 1,000 concurrent clients as stackful coroutines
//! and as async tasks, every byte checked, on one and two workers; and a client that stops
//! reading does not stall the others.

#[macro_use]
mod support;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use corio::net::{TcpListener, TcpStream};
use support::{EVENTUALLY, within};

/// Concurrent clients (`CORIO_TEST_CLIENTS` lowers it, e.g. under a debugger).
fn clients() -> usize {
    std::env::var("CORIO_TEST_CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// Bytes each client sends and expects back: more than one socket buffer's worth would make
/// the test slow with 1,000 clients; 16 KiB in uneven chunks crosses many partial reads.
const BYTES: usize = 16 * 1024;

/// The byte a client sends at `offset` (each client a different stream).
fn pattern(client: usize, offset: usize) -> u8 {
    (client.wrapping_mul(131) ^ offset.wrapping_mul(7) ^ (offset >> 8)) as u8
}

/// A server: one coroutine per connection copying what it reads back.
fn serve_stackful(listener: TcpListener) {
    for stream in listener.incoming() {
        let stream = stream.unwrap();
        corio::go(move || {
            let mut buf = [0u8; 4096];
            loop {
                match (&stream).read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => (&stream).write_all(&buf[..n]).unwrap(),
                }
            }
        });
    }
}

/// A stackful client: writes its pattern in uneven chunks while reading the echo back.
fn client_stackful(addr: SocketAddr, id: usize) -> usize {
    let stream = TcpStream::connect(addr).unwrap();
    let writer = stream.try_clone().unwrap();
    let sent = corio::go(move || {
        let data: Vec<u8> = (0..BYTES).map(|i| pattern(id, i)).collect();
        for chunk in data.chunks(1000 + id % 77) {
            (&writer).write_all(chunk).unwrap();
        }
        writer
    });
    let mut got = vec![0u8; BYTES];
    (&stream).read_exact(&mut got).unwrap();
    let writer = sent.join().unwrap();
    drop(writer);
    for (i, b) in got.iter().enumerate() {
        assert_eq!(*b, pattern(id, i), "client {id}: byte {i} differs");
    }
    got.len()
}

async fn serve_async(listener: TcpListener) {
    loop {
        let (stream, _) = listener.accept_async().await.unwrap();
        corio::spawn(async move {
            let mut buf = [0u8; 4096];
            loop {
                match stream.read_async(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => stream.write_all_async(&buf[..n]).await.unwrap(),
                }
            }
        });
    }
}

async fn client_async(addr: SocketAddr, id: usize) -> usize {
    let stream = Arc::new(TcpStream::connect_async(addr).await.unwrap());
    let writer = stream.clone();
    let sent = corio::spawn(async move {
        let data: Vec<u8> = (0..BYTES).map(|i| pattern(id, i)).collect();
        for chunk in data.chunks(1000 + id % 77) {
            writer.write_all_async(chunk).await.unwrap();
        }
    });
    let mut got = vec![0u8; BYTES];
    stream.read_exact_async(&mut got).await.unwrap();
    sent.await.unwrap();
    for (i, b) in got.iter().enumerate() {
        assert_eq!(*b, pattern(id, i), "client {id}: byte {i} differs");
    }
    got.len()
}

rt_common! {
    #[test]
    fn a_thousand_coroutine_clients_get_every_byte_back() {
        let total = within(EVENTUALLY * 4, || {
            let rt = rt();
            rt.run(|| {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                corio::go(move || serve_stackful(listener));
                let handles: Vec<_> = (0..clients())
                    .map(|id| corio::go(move || client_stackful(addr, id)))
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
            })
        });
        assert_eq!(total, clients() * BYTES);
    }

    #[test]
    fn a_thousand_async_clients_get_every_byte_back() {
        let total = within(EVENTUALLY * 4, || {
            let rt = rt();
            rt.block_on(async {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                corio::spawn(serve_async(listener));
                let handles: Vec<_> = (0..clients())
                    .map(|id| corio::spawn(client_async(addr, id)))
                    .collect();
                let mut total = 0;
                for h in handles {
                    total += h.await.unwrap();
                }
                total
            })
        });
        assert_eq!(total, clients() * BYTES);
    }

    #[test]
    fn a_client_that_stops_reading_does_not_stall_the_others() {
        within(EVENTUALLY * 2, || {
            let rt = rt();
            rt.run(|| {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                corio::go(move || serve_stackful(listener));
                // This client writes far more than the socket buffers hold and never reads:
                // its server coroutine blocks in `write_all`.
                let stuck = TcpStream::connect(addr).unwrap();
                let pushed = Arc::new(AtomicUsize::new(0));
                let p = pushed.clone();
                let writer = stuck.try_clone().unwrap();
                corio::go(move || {
                    let chunk = [7u8; 64 * 1024];
                    while (&writer).write_all(&chunk).is_ok() {
                        p.fetch_add(chunk.len(), SeqCst);
                    }
                });
                // Wait until the stuck pair's buffers are full (the writer stops advancing).
                let mut last = usize::MAX;
                loop {
                    corio::sleep(std::time::Duration::from_millis(50));
                    let now = pushed.load(SeqCst);
                    if now == last && now > 0 {
                        break;
                    }
                    last = now;
                }
                let handles: Vec<_> = (0..50)
                    .map(|id| corio::go(move || client_stackful(addr, id)))
                    .collect();
                for h in handles {
                    assert_eq!(h.join().unwrap(), BYTES);
                }
                drop(stuck);
            });
        });
    }
}
