//! `corio::net` against `std::net` / `std::os::unix::net` on Linux: zero-length reads and
//! writes, shutdown, timeouts and their getters, datagram truncation and refusal, address
//! lists and names, Unix addresses, and sockets used in a runtime other than the one they
//! were registered with. Each test runs where a user would call the method: in a coroutine,
//! in an async task and on a plain thread.

#[macro_use]
mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use corio::net::{TcpListener, TcpStream, UdpSocket, UnixDatagram, UnixListener, UnixStream};
use support::within;

/// The watchdog: a hang is a failure after this long.
const WATCHDOG: Duration = Duration::from_secs(20);

/// "At once": far below any wait a test could mistake for it, far above a loaded machine's
/// scheduling delay.
const AT_ONCE: Duration = Duration::from_secs(2);

/// A connected TCP pair, made with `std`'s blocking calls (so it works in every context).
fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    (
        TcpStream::from_std(client).unwrap(),
        TcpStream::from_std(server).unwrap(),
    )
}

/// An address nobody listens on (a listener bound and dropped).
fn refused_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A fresh socket path in the temp dir (removed first).
fn socket_path(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("corio-review-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// Writes blocking-style until the socket's send buffer is full (the peer never reads): the
/// last write found it full (`TimedOut` after the write timeout), so the socket's write
/// readiness is clear. The write timeout is left at 100 ms.
fn fill_send_buffer(w: &mut impl Write, set_timeout: impl Fn(Option<Duration>)) {
    set_timeout(Some(Duration::from_millis(100)));
    let chunk = vec![7u8; 64 * 1024];
    let e = loop {
        if let Err(e) = w.write(&chunk).map(|n| assert!(n > 0)) {
            break e;
        }
    };
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e:?}");
}

/// Runs `f` and asserts it returned at once.
#[track_caller]
fn at_once<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let v = f();
    assert!(
        start.elapsed() < AT_ONCE,
        "{what} waited {:?}",
        start.elapsed()
    );
    v
}

/// What a socket `a` answers after `a.shutdown(how)`, with one byte from its peer `b` waiting:
/// two reads, a write, and what the peer then reads (a timeout, `WouldBlock` on a `std`
/// thread and `TimedOut` in corio, is `Err(TimedOut)`). The same steps for `std` and corio
/// sockets.
macro_rules! after_shutdown {
    ($a:expr, $b:expr, $how:expr) => {{
        let (a, b) = ($a, $b);
        let norm = |r: std::io::Result<usize>| {
            r.map_err(|e| match e.kind() {
                ErrorKind::WouldBlock => ErrorKind::TimedOut,
                kind => kind,
            })
        };
        a.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        b.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        (&b).write_all(b"p").unwrap();
        std::thread::sleep(Duration::from_millis(20)); // the byte arrives
        a.shutdown($how).unwrap();
        let mut buf = [0u8; 4];
        vec![
            norm((&a).read(&mut buf)),
            norm((&a).read(&mut buf)),
            norm((&a).write(b"x")),
            norm((&b).read(&mut buf)),
            norm((&b).read(&mut buf)),
        ]
    }};
}

rt_common! {
    #[test]
    fn a_zero_length_write_returns_at_once_even_when_the_send_buffer_is_full() {
        within(WATCHDOG, || {
            rt().run(|| {
                let (mut client, _server) = tcp_pair();
                let c = client.try_clone().unwrap();
                fill_send_buffer(&mut client, |t| c.set_write_timeout(t).unwrap());
                client.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
                let n = at_once("write(&[])", || client.write(&[]));
                assert_eq!(n.unwrap(), 0);
                let (mut a, _b) = UnixStream::pair().unwrap();
                let a2 = a.try_clone().unwrap();
                fill_send_buffer(&mut a, |t| a2.set_write_timeout(t).unwrap());
                a.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
                let n = at_once("unix write(&[])", || a.write(&[]));
                assert_eq!(n.unwrap(), 0);
                drop(a2);
                drop(c);
            });
        });
    }

    #[test]
    fn a_zero_length_write_async_returns_at_once_even_when_the_send_buffer_is_full() {
        within(WATCHDOG, || {
            rt().block_on(async {
                let (client, _server) = tcp_pair();
                let chunk = vec![7u8; 64 * 1024];
                // Fill the send buffer: a write that does not finish within 100 ms found it full.
                let wait = Duration::from_millis(100);
                while corio::time::timeout_async(wait, client.write_async(&chunk))
                    .await
                    .is_ok()
                {}
                let start = Instant::now();
                let n = corio::time::timeout_async(Duration::from_secs(5), client.write_async(&[]))
                    .await
                    .expect("write_async(&[]) waited for the send buffer to drain");
                assert_eq!(n.unwrap(), 0);
                assert!(start.elapsed() < AT_ONCE);
            });
        });
    }

    #[test]
    fn a_zero_length_read_or_peek_returns_at_once_when_no_data_is_there() {
        within(WATCHDOG, || {
            rt().run(|| {
                let (client, server) = tcp_pair();
                client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                // Once with the socket's read readiness unknown, once after a read cleared it.
                for _ in 0..2 {
                    let n = at_once("read(&mut [])", || (&client).read(&mut []));
                    assert_eq!(n.unwrap(), 0);
                    let n = at_once("peek(&mut [])", || client.peek(&mut []));
                    assert_eq!(n.unwrap(), 0);
                    (&server).write_all(b"x").unwrap();
                    let mut one = [0u8; 8];
                    assert_eq!((&client).read(&mut one).unwrap(), 1);
                }
                let (a, _b) = UnixStream::pair().unwrap();
                a.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let n = at_once("unix read(&mut [])", || (&a).read(&mut []));
                assert_eq!(n.unwrap(), 0);
            });
        });
    }

    #[test]
    fn a_zero_length_read_async_returns_at_once_when_no_data_is_there() {
        within(WATCHDOG, || {
            rt().block_on(async {
                let (client, _server) = tcp_pair();
                let limit = Duration::from_secs(5);
                let n = corio::time::timeout_async(limit, client.read_async(&mut []))
                    .await
                    .expect("read_async(&mut []) waited for data");
                assert_eq!(n.unwrap(), 0);
                let n = corio::time::timeout_async(limit, client.peek_async(&mut []))
                    .await
                    .expect("peek_async(&mut []) waited for data");
                assert_eq!(n.unwrap(), 0);
            });
        });
    }

    #[test]
    fn a_zero_length_call_on_a_handle_another_handle_closed_is_not_connected() {
        within(WATCHDOG, || {
            rt().run(|| {
                let (client, _server) = tcp_pair();
                let clone = client.try_clone().unwrap();
                drop(client);
                let kind = |r: std::io::Result<usize>| r.unwrap_err().kind();
                assert_eq!(kind((&clone).read(&mut [])), ErrorKind::NotConnected);
                assert_eq!(kind((&clone).write(&[])), ErrorKind::NotConnected);
                assert_eq!(kind(clone.peek(&mut [])), ErrorKind::NotConnected);
                let (a, _b) = UnixStream::pair().unwrap();
                let a2 = a.try_clone().unwrap();
                drop(a);
                assert_eq!(kind((&a2).write(&[])), ErrorKind::NotConnected);
            });
        });
    }

    #[test]
    fn read_exact_and_read_to_end_end_at_the_peers_half_close() {
        within(WATCHDOG, || {
            rt().run(|| {
                let (client, server) = tcp_pair();
                (&client).write_all(b"abc").unwrap();
                client.shutdown(Shutdown::Write).unwrap();
                let mut four = [0u8; 4];
                let e = (&server).read_exact(&mut four).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
                let mut rest = Vec::new();
                assert_eq!((&server).read_to_end(&mut rest).unwrap(), 0);
                // Reads after EOF keep returning 0.
                assert_eq!((&server).read(&mut four).unwrap(), 0);
                // Writing on the half-closed side is refused, as in std.
                let e = (&client).write(b"more").unwrap_err();
                assert_eq!(e.kind(), ErrorKind::BrokenPipe);
            });
        });
    }

    #[test]
    fn a_read_after_shutdown_read_returns_eof_even_after_a_read_found_no_data() {
        within(WATCHDOG, || {
            rt().run(|| {
                let (client, _server) = tcp_pair();
                client.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                let mut buf = [0u8; 8];
                // Clears the read readiness.
                assert_eq!((&client).read(&mut buf).unwrap_err().kind(), ErrorKind::TimedOut);
                client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                client.shutdown(Shutdown::Read).unwrap();
                let n = at_once("read after shutdown(Read)", || (&client).read(&mut buf));
                assert_eq!(n.unwrap(), 0);

                let (a, _b) = UnixStream::pair().unwrap();
                a.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                assert_eq!((&a).read(&mut buf).unwrap_err().kind(), ErrorKind::TimedOut);
                a.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                a.shutdown(Shutdown::Read).unwrap();
                let n = at_once("unix read after shutdown(Read)", || (&a).read(&mut buf));
                assert_eq!(n.unwrap(), 0);
            });
        });
    }

    #[test]
    fn a_write_after_shutdown_write_is_a_broken_pipe_even_when_the_send_buffer_is_full() {
        within(WATCHDOG, || {
            rt().run(|| {
                let (mut client, _server) = tcp_pair();
                let c = client.try_clone().unwrap();
                fill_send_buffer(&mut client, |t| c.set_write_timeout(t).unwrap());
                client.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
                client.shutdown(Shutdown::Write).unwrap();
                let e = at_once("write after shutdown(Write)", || client.write(b"x")).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e:?}");
                drop(c);
            });
        });
    }

    // A Unix stream's `shutdown(Write)` sends no EPOLLOUT edge while its send buffer is full
    // (`unix_poll` reports EPOLLOUT only for free buffer space), so a write that found the
    // write readiness clear waited for ever instead of trying `send`, which says EPIPE. Now
    // `Source::shutdown` marks the direction final.
    #[test]
    fn a_unix_write_after_shutdown_write_is_a_broken_pipe_even_when_the_send_buffer_is_full() {
        within(WATCHDOG, || {
            rt().run(|| {
                let (mut a, _b) = UnixStream::pair().unwrap();
                let a2 = a.try_clone().unwrap();
                fill_send_buffer(&mut a, |t| a2.set_write_timeout(t).unwrap());
                a.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
                a.shutdown(Shutdown::Write).unwrap();
                let e = at_once("unix write after shutdown(Write)", || a.write(b"x")).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e:?}");
                drop(a2);
            });
        });
    }

    #[test]
    fn a_unix_write_async_after_shutdown_write_is_a_broken_pipe_even_with_a_full_send_buffer() {
        within(WATCHDOG, || {
            rt().block_on(async {
                let (a, _b) = UnixStream::pair().unwrap();
                let chunk = vec![7u8; 64 * 1024];
                while corio::time::timeout_async(Duration::from_millis(100), a.write_async(&chunk))
                    .await
                    .is_ok()
                {}
                a.shutdown(Shutdown::Write).unwrap();
                let e = corio::time::timeout_async(Duration::from_secs(5), a.write_async(b"x"))
                    .await
                    .expect("write_async after shutdown(Write) waited")
                    .unwrap_err();
                assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e:?}");
            });
        });
    }

    #[test]
    fn a_connected_udp_socket_reports_a_refused_datagram_on_recv() {
        within(WATCHDOG, || {
            let rt = rt();
            rt.run(|| {
                let dead = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
                let s = UdpSocket::bind("127.0.0.1:0").unwrap();
                s.connect(dead).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                s.send(b"anyone?").unwrap();
                let e = s.recv(&mut [0u8; 8]).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e:?}");
            });
            rt.block_on(async {
                let dead = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
                let s = UdpSocket::bind("127.0.0.1:0").unwrap();
                s.connect(dead).unwrap();
                s.send_async(b"anyone?").await.unwrap();
                let mut buf = [0u8; 8];
                let e = corio::time::timeout_async(Duration::from_secs(5), s.recv_async(&mut buf))
                    .await
                    .expect("recv_async never saw the refusal")
                    .unwrap_err();
                assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e:?}");
            });
        });
    }

    #[test]
    fn udp_reads_into_a_short_buffer_truncate_the_datagram_as_std() {
        within(WATCHDOG, || {
            rt().run(|| {
                let a = UdpSocket::bind("127.0.0.1:0").unwrap();
                let b = UdpSocket::bind("127.0.0.1:0").unwrap();
                let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
                a.send_to(b"hello", b_addr).unwrap();
                a.send_to(b"world", b_addr).unwrap();
                a.send_to(b"again", b_addr).unwrap();
                let mut two = [0u8; 2];
                assert_eq!(b.peek_from(&mut two).unwrap(), (2, a_addr));
                assert_eq!(&two, b"he");
                assert_eq!(b.recv_from(&mut two).unwrap(), (2, a_addr));
                assert_eq!(&two, b"he");
                // The rest of "hello" is gone: the next datagram is "world".
                b.connect(a_addr).unwrap();
                assert_eq!(b.recv(&mut two).unwrap(), 2);
                assert_eq!(&two, b"wo");
                assert_eq!(b.recv(&mut []).unwrap(), 0); // consumes "again"
                b.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                assert_eq!(b.recv(&mut two).unwrap_err().kind(), ErrorKind::TimedOut);
                // A zero-length datagram is a datagram.
                a.send_to(&[], b_addr).unwrap();
                b.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                assert_eq!(b.recv_from(&mut two).unwrap(), (0, a_addr));
            });
        });
    }

    #[test]
    fn connect_tries_the_next_address_after_a_refused_one() {
        within(WATCHDOG, || {
            let rt = rt();
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let good = listener.local_addr().unwrap();
            let addrs = [refused_addr(), good];
            let s = rt.run(move || TcpStream::connect(&addrs[..]).unwrap());
            assert_eq!(s.peer_addr().unwrap(), good);
            // `connect_async` wants an owned (or 'static) argument.
            let list: &'static [SocketAddr] = Box::leak(Box::new(addrs));
            let s = rt.block_on(TcpStream::connect_async(list));
            assert_eq!(s.unwrap().peer_addr().unwrap(), good);
            let e = rt.run(|| TcpStream::connect(&[][..]).unwrap_err());
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
        });
    }

    #[test]
    fn a_host_name_that_does_not_resolve_is_an_error() {
        within(WATCHDOG, || {
            let rt = rt();
            assert!(rt.run(|| TcpStream::connect("nonexistent.invalid:80")).is_err());
            assert!(rt.block_on(TcpStream::connect_async("nonexistent.invalid:80")).is_err());
            let udp = rt.run(|| {
                let s = UdpSocket::bind("127.0.0.1:0").unwrap();
                s.send_to(b"x", "nonexistent.invalid:80")
            });
            assert!(udp.is_err());
        });
    }

    #[test]
    fn timeouts_reject_zero_and_the_getters_return_what_was_set() {
        within(WATCHDOG, || {
            rt().run(|| {
                let (client, server) = tcp_pair();
                let e = client.set_read_timeout(Some(Duration::ZERO)).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidInput);
                let e = client.set_write_timeout(Some(Duration::ZERO)).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidInput);
                assert_eq!(client.read_timeout().unwrap(), None);
                client.set_read_timeout(Some(Duration::from_millis(1500))).unwrap();
                client.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
                assert_eq!(client.read_timeout().unwrap(), Some(Duration::from_millis(1500)));
                assert_eq!(client.write_timeout().unwrap(), Some(Duration::from_secs(3)));
                client.set_read_timeout(None).unwrap();
                assert_eq!(client.read_timeout().unwrap(), None);
                let e = TcpStream::connect_timeout(&refused_addr(), Duration::ZERO).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidInput);
                // The longest timeout waits like none.
                client.set_read_timeout(Some(Duration::MAX)).unwrap();
                let writer = corio::go(move || {
                    corio::sleep(Duration::from_millis(20));
                    (&server).write_all(b"late").unwrap();
                    server
                });
                let mut buf = [0u8; 4];
                (&client).read_exact(&mut buf).unwrap();
                assert_eq!(&buf, b"late");
                drop(writer.join().unwrap());
                let u = UdpSocket::bind("127.0.0.1:0").unwrap();
                let e = u.set_read_timeout(Some(Duration::ZERO)).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidInput);
            });
        });
    }

    #[test]
    fn a_socket_registered_with_one_runtime_works_in_another() {
        within(WATCHDOG, || {
            let first = rt();
            let second = rt();
            let (client, server) = tcp_pair();
            // Registered with `first`: a coroutine there waited for data.
            let (client, server) = first.run(move || {
                let reader = corio::go(move || {
                    let mut buf = [0u8; 4];
                    (&client).read_exact(&mut buf).unwrap();
                    client
                });
                corio::sleep(Duration::from_millis(20));
                (&server).write_all(b"one!").unwrap();
                (reader.join().unwrap(), server)
            });
            // Waited on from `second`, while `first` idles.
            let (client, server) = second.run(move || {
                let reader = corio::go(move || {
                    let mut buf = [0u8; 4];
                    (&client).read_exact(&mut buf).unwrap();
                    assert_eq!(&buf, b"two!");
                    client
                });
                corio::sleep(Duration::from_millis(20));
                (&server).write_all(b"two!").unwrap();
                (reader.join().unwrap(), server)
            });
            // `first` gone: a call that must wait fails at once with an error rather than
            // hanging, and a plain thread still blocks as std.
            drop(first);
            let got = second.run(move || {
                let mut buf = [0u8; 4];
                let what = "read on a socket whose runtime is gone";
                let r = at_once(what, || (&client).read(&mut buf));
                (r.map_err(|e| e.kind()), client)
            });
            assert!(got.0.is_err(), "{:?}", got.0);
            let client = got.1;
            (&server).write_all(b"thr!").unwrap();
            let mut buf = [0u8; 4];
            (&client).read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"thr!");
        });
    }

    #[test]
    fn an_unconnected_unix_datagram_send_to_a_full_receiver_completes_when_it_drains() {
        within(WATCHDOG, || {
            let path = socket_path(&format!("dgram-full{WORKERS}"));
            let p = path.clone();
            rt().run(move || {
                let receiver = UnixDatagram::bind(&p).unwrap();
                let sender = UnixDatagram::unbound().unwrap();
                sender.set_write_timeout(Some(Duration::from_millis(100))).unwrap();
                let mut sent = 0usize;
                loop {
                    match sender.send_to(b"datagram", &p) {
                        Ok(_) => sent += 1,
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::TimedOut, "{e:?}");
                            break;
                        }
                    }
                }
                sender.set_write_timeout(None).unwrap();
                let drain = corio::go(move || {
                    corio::sleep(Duration::from_millis(50));
                    let mut buf = [0u8; 16];
                    for _ in 0..sent + 1 {
                        receiver.recv(&mut buf).unwrap();
                    }
                });
                sender.send_to(b"datagram", &p).unwrap();
                drain.join().unwrap();
            });
            std::fs::remove_file(&path).unwrap();
        });
    }

    #[test]
    fn a_connected_unix_datagram_send_to_a_full_receiver_completes_when_it_drains() {
        within(WATCHDOG, || {
            rt().run(move || {
                let (sender, receiver) = UnixDatagram::pair().unwrap();
                sender.set_write_timeout(Some(Duration::from_millis(100))).unwrap();
                let mut sent = 0usize;
                loop {
                    match sender.send(b"datagram") {
                        Ok(_) => sent += 1,
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::TimedOut, "{e:?}");
                            break;
                        }
                    }
                }
                sender.set_write_timeout(None).unwrap();
                let drain = corio::go(move || {
                    corio::sleep(Duration::from_millis(50));
                    let mut buf = [0u8; 16];
                    for _ in 0..sent + 1 {
                        receiver.recv(&mut buf).unwrap();
                    }
                });
                sender.send(b"datagram").unwrap();
                drain.join().unwrap();
            });
        });
    }

    #[test]
    fn shutdown_read_from_another_coroutine_wakes_a_waiting_reader_with_eof() {
        within(WATCHDOG, || {
            rt().run(move || {
                let (client, _server) = tcp_pair();
                let client = std::sync::Arc::new(client);
                let c = client.clone();
                let reader = corio::go(move || (&*c).read(&mut [0u8; 8]).unwrap());
                corio::sleep(Duration::from_millis(30));
                client.shutdown(Shutdown::Read).unwrap();
                assert_eq!(reader.join().unwrap(), 0);
                let (a, _b) = UnixStream::pair().unwrap();
                let a = std::sync::Arc::new(a);
                let c = a.clone();
                let reader = corio::go(move || (&*c).read(&mut [0u8; 8]).unwrap());
                corio::sleep(Duration::from_millis(30));
                a.shutdown(Shutdown::Read).unwrap();
                assert_eq!(reader.join().unwrap(), 0);
            });
        });
    }

    #[test]
    fn connect_timeout_to_a_closed_port_is_refused_and_ipv6_connects() {
        within(WATCHDOG, || {
            rt().run(move || {
                let limit = Duration::from_secs(5);
                let e = TcpStream::connect_timeout(&refused_addr(), limit).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
                if let Ok(l) = std::net::TcpListener::bind("[::1]:0") {
                    let addr = l.local_addr().unwrap();
                    let s = TcpStream::connect(addr).unwrap();
                    assert_eq!(s.peer_addr().unwrap(), addr);
                    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
                    assert_eq!(s.peer_addr().unwrap(), addr);
                }
            });
        });
    }

    #[test]
    fn socket_options_and_pending_errors_read_back_as_std() {
        within(WATCHDOG, || {
            rt().run(|| {
                let (client, _server) = tcp_pair();
                client.set_ttl(33).unwrap();
                assert_eq!(client.ttl().unwrap(), 33);
                client.set_nodelay(true).unwrap();
                assert!(client.nodelay().unwrap());
                assert!(client.take_error().unwrap().is_none());
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                listener.set_ttl(44).unwrap();
                assert_eq!(listener.ttl().unwrap(), 44);
                assert!(listener.take_error().unwrap().is_none());

                let u = UdpSocket::bind("127.0.0.1:0").unwrap();
                u.set_ttl(55).unwrap();
                assert_eq!(u.ttl().unwrap(), 55);
                u.set_broadcast(true).unwrap();
                assert!(u.broadcast().unwrap());
                u.set_multicast_ttl_v4(3).unwrap();
                assert_eq!(u.multicast_ttl_v4().unwrap(), 3);
                u.set_multicast_loop_v4(false).unwrap();
                assert!(!u.multicast_loop_v4().unwrap());
                // A datagram to a closed port leaves ECONNREFUSED pending on a connected socket.
                let dead = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
                u.connect(dead).unwrap();
                u.send(b"x").unwrap();
                let start = Instant::now();
                let e = loop {
                    if let Some(e) = u.take_error().unwrap() {
                        break e;
                    }
                    assert!(start.elapsed() < AT_ONCE, "no pending error");
                    corio::sleep(Duration::from_millis(1));
                };
                assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
                assert!(u.take_error().unwrap().is_none()); // taken

                let (a, _b) = UnixStream::pair().unwrap();
                assert!(a.take_error().unwrap().is_none());
            });
        });
    }

    #[test]
    fn udp_peek_leaves_the_datagram_for_recv() {
        within(WATCHDOG, || {
            let rt = rt();
            rt.run(|| {
                let a = UdpSocket::bind("127.0.0.1:0").unwrap();
                let b = UdpSocket::bind("127.0.0.1:0").unwrap();
                a.connect(b.local_addr().unwrap()).unwrap();
                b.connect(a.local_addr().unwrap()).unwrap();
                let peeker = corio::go(move || {
                    let mut buf = [0u8; 8];
                    let n = b.peek(&mut buf).unwrap(); // waits for the datagram
                    assert_eq!(&buf[..n], b"peek");
                    let n = b.recv(&mut buf).unwrap();
                    assert_eq!(&buf[..n], b"peek");
                });
                corio::sleep(Duration::from_millis(20));
                a.send(b"peek").unwrap();
                peeker.join().unwrap();
            });
            rt.block_on(async {
                let a = UdpSocket::bind("127.0.0.1:0").unwrap();
                let b = UdpSocket::bind("127.0.0.1:0").unwrap();
                let a_addr = a.local_addr().unwrap();
                a.connect(b.local_addr().unwrap()).unwrap();
                b.connect(a_addr).unwrap();
                a.send_async(b"peek").await.unwrap();
                let mut buf = [0u8; 8];
                assert_eq!(b.peek_async(&mut buf).await.unwrap(), 4);
                assert_eq!(b.peek_from_async(&mut buf).await.unwrap(), (4, a_addr));
                assert_eq!(b.recv_async(&mut buf).await.unwrap(), 4);
                assert_eq!(&buf[..4], b"peek");
            });
        });
    }

    #[test]
    fn sockets_adopted_from_raw_or_owned_fds_wait_like_any_other() {
        use std::os::fd::{AsFd, AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
        within(WATCHDOG, || {
            let rt = rt();
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let std_client = std::net::TcpStream::connect(addr).unwrap();
            let (mut peer, _) = listener.accept().unwrap();
            // SAFETY: a connected TCP socket whose ownership `into_raw_fd` gave up.
            let client = unsafe { TcpStream::from_raw_fd(std_client.into_raw_fd()) };
            assert_eq!(client.as_fd().as_raw_fd(), client.as_raw_fd());
            let reader = rt.go(move || {
                let mut buf = [0u8; 4];
                (&client).read_exact(&mut buf).unwrap();
                buf
            });
            std::thread::sleep(Duration::from_millis(30)); // it waits in the runtime
            peer.write_all(b"raw!").unwrap();
            assert_eq!(&reader.join().unwrap(), b"raw!");

            let (x, y) = std::os::unix::net::UnixStream::pair().unwrap();
            let x = UnixStream::from(OwnedFd::from(x));
            let mut y = y;
            let task = rt.spawn(async move {
                let mut buf = [0u8; 5];
                x.read_exact_async(&mut buf).await.unwrap();
                buf
            });
            std::thread::sleep(Duration::from_millis(30));
            y.write_all(b"owned").unwrap();
            assert_eq!(&rt.block_on(task).unwrap(), b"owned");

            let l = TcpListener::from(OwnedFd::from(listener));
            assert_eq!(l.local_addr().unwrap(), addr);
            let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let u = UdpSocket::from(OwnedFd::from(u));
            assert!(u.local_addr().is_ok());
        });
    }

    #[test]
    fn a_unix_datagram_shut_down_refuses_sends_and_reads_eof() {
        within(WATCHDOG, || {
            rt().run(|| {
                let (a, b) = UnixDatagram::pair().unwrap();
                a.shutdown(Shutdown::Write).unwrap();
                assert_eq!(a.send(b"x").unwrap_err().kind(), ErrorKind::BrokenPipe);
                b.shutdown(Shutdown::Read).unwrap();
                b.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let n = at_once("recv after shutdown(Read)", || b.recv(&mut [0u8; 4]));
                assert_eq!(n.unwrap(), 0);
                let (n, from) = at_once("recv_from after shutdown(Read)", || {
                    b.recv_from(&mut [0u8; 4])
                })
                .unwrap();
                assert!(n == 0 && from.is_unnamed(), "{n} {from:?}");
                // Async too, and a waiter that was already there.
                let (c, d) = UnixDatagram::pair().unwrap();
                let d = std::sync::Arc::new(d);
                let waiter = corio::spawn({
                    let d = d.clone();
                    async move { d.recv_async(&mut [0u8; 4]).await }
                });
                corio::sleep(Duration::from_millis(20));
                d.shutdown(Shutdown::Read).unwrap();
                let n = corio::block_on(corio::time::timeout_async(Duration::from_secs(5), waiter))
                    .expect("recv_async did not see shutdown(Read)");
                assert_eq!(n.unwrap().unwrap(), 0);
                drop(c);
            });
        });
    }

    #[test]
    fn unix_connects_to_a_full_backlog_wait_without_blocking_the_worker() {
        use std::os::fd::AsRawFd;
        within(WATCHDOG, || {
            let path = socket_path(&format!("backlog{WORKERS}"));
            let rt = rt();
            let p = path.clone();
            rt.run(move || {
                let listener = UnixListener::bind(&p).unwrap();
                // SAFETY: `listen` on our listening socket only lowers its backlog.
                assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
                // More clients than the backlog holds, coroutines and tasks: the ones that
                // find it full must wait for the acceptor — who runs on the same workers.
                let clients: Vec<_> = (0..2 * (WORKERS + 3))
                    .map(|i| {
                        let p = p.clone();
                        if i % 2 == 0 {
                            corio::go(move || {
                                let mut s = UnixStream::connect(&p).unwrap();
                                s.write_all(&[i as u8]).unwrap();
                            })
                        } else {
                            corio::spawn(async move {
                                let s = UnixStream::connect_async(&p).await.unwrap();
                                s.write_all_async(&[i as u8]).await.unwrap();
                            })
                        }
                    })
                    .collect();
                corio::sleep(Duration::from_millis(100)); // let them fill the backlog
                let mut seen = Vec::new();
                for _ in 0..clients.len() {
                    let (mut s, _) = listener.accept().unwrap();
                    let mut b = [0u8; 1];
                    s.read_exact(&mut b).unwrap();
                    seen.push(b[0]);
                }
                for c in clients {
                    c.join().unwrap();
                }
                seen.sort();
                assert_eq!(seen, (0..seen.len() as u8).collect::<Vec<_>>());
            });
            std::fs::remove_file(&path).unwrap();
        });
    }

    #[test]
    fn unix_connect_refuses_bad_paths_as_std() {
        within(WATCHDOG, || {
            let bad = [
                "\0abstract".to_string(),
                "x".repeat(108),
                socket_path("nobody-here").to_string_lossy().into_owned(),
                String::new(),
            ];
            let expected: Vec<_> = bad
                .iter()
                .map(|p| std::os::unix::net::UnixStream::connect(p).unwrap_err().kind())
                .collect();
            let rt = rt();
            let b = bad.clone();
            let got: Vec<_> = rt.run(move || {
                b.iter()
                    .map(|p| UnixStream::connect(p).unwrap_err().kind())
                    .collect()
            });
            assert_eq!(got, expected);
            let got: Vec<_> = rt.block_on(async move {
                let mut kinds = Vec::new();
                for p in &bad {
                    kinds.push(UnixStream::connect_async(p).await.unwrap_err().kind());
                }
                kinds
            });
            assert_eq!(got, expected);
        });
    }

    #[test]
    fn a_blocking_vectored_write_sends_every_buffer_in_one_call_as_std() {
        within(WATCHDOG, || {
            rt().run(|| {
                use std::io::IoSlice;
                let (client, server) = tcp_pair();
                let (head, body) = (vec![1u8; 1000], vec![2u8; 3000]);
                let bufs = [IoSlice::new(&head), IoSlice::new(&[]), IoSlice::new(&body)];
                assert_eq!((&client).write_vectored(&bufs).unwrap(), 4000);
                let mut got = vec![0u8; 4000];
                (&server).read_exact(&mut got).unwrap();
                assert!(got[..1000].iter().all(|&b| b == 1) && got[1000..].iter().all(|&b| b == 2));
                let (a, b) = UnixStream::pair().unwrap();
                assert_eq!((&a).write_vectored(&bufs).unwrap(), 4000);
                let mut got = vec![0u8; 4000];
                (&b).read_exact(&mut got).unwrap();
                let (_read, write) = client.into_split();
                let mut write = write;
                assert_eq!(write.write_vectored(&bufs).unwrap(), 4000);
            });
        });
    }

    #[test]
    fn reads_and_writes_after_each_kind_of_shutdown_answer_as_std() {
        within(WATCHDOG, || {
            let rt = rt();
            for how in [Shutdown::Read, Shutdown::Write, Shutdown::Both] {
                let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let a = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
                let b = listener.accept().unwrap().0;
                let expected = after_shutdown!(a, b, how);
                let got = rt.run(move || {
                    let (a, b) = tcp_pair();
                    after_shutdown!(a, b, how)
                });
                assert_eq!(got, expected, "TCP, {how:?}, in a coroutine");
                let (a, b) = tcp_pair();
                assert_eq!(after_shutdown!(a, b, how), expected, "TCP, {how:?}, on a thread");

                let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
                let expected = after_shutdown!(a, b, how);
                let got = rt.run(move || {
                    let (a, b) = UnixStream::pair().unwrap();
                    after_shutdown!(a, b, how)
                });
                assert_eq!(got, expected, "Unix, {how:?}, in a coroutine");
            }
        });
    }

    #[test]
    fn dropping_the_runtime_a_socket_is_registered_with_wakes_its_waiter_in_another() {
        within(WATCHDOG, || {
            let first = rt();
            let second = rt();
            let (client, server) = tcp_pair();
            let client = first.run(move || {
                client.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
                let _ = (&client).read(&mut [0u8; 4]); // registers it with `first`
                client.set_read_timeout(None).unwrap();
                client
            });
            let waiter = second.go(move || (&client).read(&mut [0u8; 4]).map_err(|e| e.kind()));
            std::thread::sleep(Duration::from_millis(50)); // it waits
            drop(first);
            let r = waiter.join().unwrap();
            assert!(r.is_err(), "{r:?}");
            drop(server);
        });
    }

    #[test]
    fn async_reads_ignore_the_read_timeout_as_documented() {
        within(WATCHDOG, || {
            rt().block_on(async {
                let (client, _server) = tcp_pair();
                client.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
                let mut buf = [0u8; 4];
                let limit = Duration::from_millis(200);
                let r = corio::time::timeout_async(limit, client.read_async(&mut buf)).await;
                assert!(r.is_err(), "read_async returned {r:?} instead of waiting");
            });
        });
    }

    #[test]
    fn abstract_unix_addresses_bind_connect_and_send_as_std() {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::SocketAddr as UnixAddr;
        within(WATCHDOG, || {
            let name = format!("corio-review-{}-{WORKERS}", std::process::id());
            let addr = UnixAddr::from_abstract_name(name.as_bytes()).unwrap();
            let rt = rt();
            let listener = UnixListener::bind_addr(&addr).unwrap();
            assert_eq!(
                listener.local_addr().unwrap().as_abstract_name(),
                Some(name.as_bytes())
            );
            let a = addr.clone();
            let from_coroutine = rt.go(move || {
                let mut s = UnixStream::connect_addr(&a).unwrap();
                s.write_all(b"c").unwrap();
            });
            let mut from_thread = UnixStream::connect_addr(&addr).unwrap();
            from_thread.write_all(b"t").unwrap();
            let mut seen = rt.run(move || {
                (0..2)
                    .map(|_| {
                        let (mut s, _) = listener.accept().unwrap();
                        let mut b = [0u8; 1];
                        s.read_exact(&mut b).unwrap();
                        b[0]
                    })
                    .collect::<Vec<_>>()
            });
            from_coroutine.join().unwrap();
            seen.sort();
            assert_eq!(seen, b"ct");

            let dname = format!("{name}-dgram");
            let daddr = UnixAddr::from_abstract_name(dname.as_bytes()).unwrap();
            let got = rt.run(move || {
                let receiver = UnixDatagram::bind_addr(&daddr).unwrap();
                let sender = UnixDatagram::unbound().unwrap();
                sender.send_to_addr(b"abstract", &daddr).unwrap();
                let mut buf = [0u8; 16];
                let (n, _) = receiver.recv_from(&mut buf).unwrap();
                sender.connect_addr(&daddr).unwrap();
                sender.send(b"again").unwrap();
                let (m, _) = receiver.recv_from(&mut buf[n..]).unwrap();
                buf[..n + m].to_vec()
            });
            assert_eq!(got, b"abstractagain");
            let too_long = vec![b'x'; 108];
            assert_eq!(
                UnixAddr::from_abstract_name(&too_long).unwrap_err().kind(),
                ErrorKind::InvalidInput
            );
        });
    }
}

#[test]
fn a_zero_length_read_or_write_on_a_plain_thread_returns_at_once() {
    within(WATCHDOG, || {
        let (client, _server) = tcp_pair();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let n = at_once("read(&mut [])", || (&client).read(&mut []));
        assert_eq!(n.unwrap(), 0);
        assert_eq!(at_once("write(&[])", || (&client).write(&[])).unwrap(), 0);
    });
}

#[test]
fn a_read_timeout_on_a_plain_thread_is_timed_out_as_in_a_coroutine() {
    within(WATCHDOG, || {
        let (client, _server) = tcp_pair();
        client
            .set_read_timeout(Some(Duration::from_millis(30)))
            .unwrap();
        let e = (&client).read(&mut [0u8; 4]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        let e = support::rt(1).run(move || (&client).read(&mut [0u8; 4]).unwrap_err());
        assert_eq!(e.kind(), ErrorKind::TimedOut);
    });
}

#[test]
fn unix_sockets_report_their_addresses_and_refuse_a_bound_path() {
    within(WATCHDOG, || {
        let path = socket_path("addrs");
        support::rt(1).run({
            let path = path.clone();
            move || {
                let listener = UnixListener::bind(&path).unwrap();
                let e = UnixListener::bind(&path).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::AddrInUse);
                assert_eq!(
                    listener.local_addr().unwrap().as_pathname(),
                    Some(path.as_path())
                );
                let client = UnixStream::connect(&path).unwrap();
                let (server, peer) = listener.accept().unwrap();
                assert!(peer.is_unnamed());
                assert!(client.local_addr().unwrap().is_unnamed());
                assert_eq!(
                    client.peer_addr().unwrap().as_pathname(),
                    Some(path.as_path())
                );
                assert_eq!(
                    server.local_addr().unwrap().as_pathname(),
                    Some(path.as_path())
                );
                let (a, _b) = UnixStream::pair().unwrap();
                assert!(a.local_addr().unwrap().is_unnamed());
                assert!(a.peer_addr().unwrap().is_unnamed());
                let d = UnixDatagram::unbound().unwrap();
                assert!(d.local_addr().unwrap().is_unnamed());
                assert_eq!(d.peer_addr().unwrap_err().kind(), ErrorKind::NotConnected);
            }
        });
        std::fs::remove_file(&path).unwrap();
    });
}

/// An unconnected Unix datagram `send_to` a receiver whose queue is full: `sendto` says
/// `EAGAIN`, while `poll(2)` calls the sender writable (its own send buffer has room), so the
/// plain thread's wait (`Source::block_thread`: the call, then `poll`) spun on a core until
/// the receiver drained or the timeout expired (299.7 ms of CPU in a 300 ms wait). `std`
/// sleeps in the kernel; `block_thread` backs off once `poll` has said ready for nothing.
#[test]
fn a_plain_thread_waiting_to_send_to_a_full_unix_datagram_receiver_does_not_spin() {
    within(WATCHDOG, || {
        let path = socket_path("dgram-full-thread");
        let _receiver = UnixDatagram::bind(&path).unwrap();
        // Fill the receiver's queue with a nonblocking std socket.
        let filler = std::os::unix::net::UnixDatagram::unbound().unwrap();
        filler.set_nonblocking(true).unwrap();
        while filler.send_to(b"datagram", &path).is_ok() {}
        let sender = UnixDatagram::unbound().unwrap();
        sender
            .set_write_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let (cpu, start) = (cpu_time(), Instant::now());
        let e = sender.send_to(b"datagram", &path).unwrap_err();
        let (cpu, wall) = (cpu_time() - cpu, start.elapsed());
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        std::fs::remove_file(&path).unwrap();
        assert!(
            cpu < wall / 2,
            "the wait for the receiver spun: {cpu:?} of CPU in {wall:?}"
        );
    });
}

/// The CPU time this thread has used.
fn cpu_time() -> Duration {
    // SAFETY: all-zero is a valid rusage; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    Duration::from_secs(ru.ru_utime.tv_sec as u64 + ru.ru_stime.tv_sec as u64)
        + Duration::from_micros(ru.ru_utime.tv_usec as u64 + ru.ru_stime.tv_usec as u64)
}

#[test]
fn async_forms_work_from_a_plain_threads_block_on_outside_any_runtime() {
    within(WATCHDOG, || {
        let (client, server) = tcp_pair();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            (&server).write_all(b"late").unwrap();
            server
        });
        let mut buf = [0u8; 4];
        corio::block_on(client.read_exact_async(&mut buf)).unwrap();
        assert_eq!(&buf, b"late");
        drop(writer.join().unwrap());
    });
}

/// The peer's `shutdown(Read)` of a Unix stream marks this side's write direction shut down
/// (a `send` says `EPIPE`, and `std`'s blocked writer wakes with it), but `unix_poll` reports
/// no `EPOLLOUT` while the send buffer is full, so epoll sends no edge: a coroutine that finds
/// its write readiness clear waits until the peer reads or closes. Not fixable by marking our
/// own shutdowns final (the other ignored tests): the kernel says nothing here. tokio and Go
/// wait the same way; see the review report.
#[test]
#[ignore = "no epoll edge for a Unix peer's shutdown(Read) while the send buffer is full"]
fn a_unix_write_after_the_peers_shutdown_read_is_a_broken_pipe_even_when_the_send_buffer_is_full() {
    within(WATCHDOG, || {
        support::rt(1).run(|| {
            let (mut a, b) = UnixStream::pair().unwrap();
            let a2 = a.try_clone().unwrap();
            fill_send_buffer(&mut a, |t| a2.set_write_timeout(t).unwrap());
            a.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
            b.shutdown(Shutdown::Read).unwrap();
            let e = at_once("unix write after the peer's shutdown(Read)", || {
                a.write(b"x")
            })
            .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e:?}");
            drop(a2);
        });
    });
}
