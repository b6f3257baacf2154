//! UDP and Unix-domain sockets: each kind from coroutines and from async tasks.

#[macro_use]
mod support;

use std::io::{ErrorKind, Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use corio::net::{UdpSocket, UnixDatagram, UnixListener, UnixStream};
use support::{EVENTUALLY, within};

/// A fresh socket path in the temp dir (removed first).
fn socket_path(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("corio-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

rt_common! {
    #[test]
    fn udp_datagrams_round_trip_between_coroutines_and_tasks() {
        within(EVENTUALLY, || {
            let rt = rt();
            rt.run(|| {
                let server = UdpSocket::bind("127.0.0.1:0").unwrap();
                let addr = server.local_addr().unwrap();
                // An async echo server; coroutine clients.
                corio::spawn(async move {
                    let mut buf = [0u8; 64];
                    loop {
                        let (n, from) = server.recv_from_async(&mut buf).await.unwrap();
                        server.send_to_async(&buf[..n], from).await.unwrap();
                    }
                });
                let clients: Vec<_> = (0..20u8)
                    .map(|i| {
                        corio::go(move || {
                            let c = UdpSocket::bind("127.0.0.1:0").unwrap();
                            c.connect(addr).unwrap();
                            c.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
                            let mut buf = [0u8; 64];
                            // UDP may drop a datagram under load: retry on a timeout.
                            loop {
                                c.send(&[i; 10]).unwrap();
                                match c.recv(&mut buf) {
                                    Ok(n) => return buf[..n].to_vec(),
                                    Err(e) => assert_eq!(e.kind(), ErrorKind::TimedOut),
                                }
                            }
                        })
                    })
                    .collect();
                for (i, c) in clients.into_iter().enumerate() {
                    assert_eq!(c.join().unwrap(), vec![i as u8; 10]);
                }
            });
        });
    }

    #[test]
    fn a_udp_read_timeout_fires() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let s = UdpSocket::bind("127.0.0.1:0").unwrap();
                s.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
                let mut buf = [0u8; 4];
                assert_eq!(s.recv_from(&mut buf).unwrap_err().kind(), ErrorKind::TimedOut);
            });
        });
    }

    #[test]
    fn unix_streams_echo_from_coroutines_and_tasks() {
        within(EVENTUALLY, || {
            let path = socket_path(&format!("echo{WORKERS}"));
            let rt = rt();
            let p = path.clone();
            rt.run(move || {
                let listener = UnixListener::bind(&p).unwrap();
                corio::go(move || {
                    for s in listener.incoming() {
                        let s = s.unwrap();
                        corio::go(move || {
                            let mut buf = [0u8; 256];
                            while let Ok(n @ 1..) = (&s).read(&mut buf) {
                                (&s).write_all(&buf[..n]).unwrap();
                            }
                        });
                    }
                });
                let p2 = p.clone();
                let task = corio::spawn(async move {
                    let s = UnixStream::connect_async(&p2).await.unwrap();
                    s.write_all_async(b"from a task").await.unwrap();
                    let mut buf = [0u8; 11];
                    s.read_exact_async(&mut buf).await.unwrap();
                    buf
                });
                let mut s = UnixStream::connect(&p).unwrap();
                s.write_all(b"from a coroutine").unwrap();
                let mut buf = [0u8; 16];
                s.read_exact(&mut buf).unwrap();
                assert_eq!(&buf, b"from a coroutine");
                assert_eq!(&corio::block_on(task).unwrap(), b"from a task");
            });
            std::fs::remove_file(&path).unwrap();
        });
    }

    #[test]
    fn unix_datagrams_and_pairs_work_both_ways() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let (a, b) = UnixDatagram::pair().unwrap();
                let reader = corio::go(move || {
                    let mut buf = [0u8; 8];
                    let n = b.recv(&mut buf).unwrap();
                    buf[..n].to_vec()
                });
                corio::sleep(Duration::from_millis(10));
                a.send(b"dgram").unwrap();
                assert_eq!(reader.join().unwrap(), b"dgram");

                let (x, y) = UnixStream::pair().unwrap();
                let task = corio::spawn(async move {
                    let mut buf = [0u8; 4];
                    y.read_exact_async(&mut buf).await.unwrap();
                    buf
                });
                (&x).write_all(b"pair").unwrap();
                assert_eq!(&corio::block_on(task).unwrap(), b"pair");
            });
        });
    }
}
