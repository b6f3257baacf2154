//! TCP behaviour on 127.0.0.1: error kinds (refused, reset, half-close), timeouts, closing a
//! socket another coroutine waits on, and the three places a call can run (coroutine, async
//! task, plain thread).

#[macro_use]
mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::time::{Duration, Instant};

use corio::net::{TcpListener, TcpStream};
use support::{EVENTUALLY, tcp_pair as pair, within};

/// An address nobody listens on (a listener bound and dropped).
fn refused_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

rt_common! {
    #[test]
    fn io_copy_bufreader_and_bufwriter_work_in_coroutines() {
        use std::io::{BufRead, BufReader, BufWriter};
        within(EVENTUALLY, || {
            let lines = rt().run(|| {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                corio::go(move || {
                    // An echo server in one line of std.
                    let s = listener.incoming().next().unwrap().unwrap();
                    std::io::copy(&mut &s, &mut &s).unwrap();
                });
                let s = TcpStream::connect(addr).unwrap();
                let mut w = BufWriter::new(&s);
                for i in 0..1000 {
                    writeln!(w, "line {i}").unwrap();
                }
                w.flush().unwrap();
                drop(w);
                s.shutdown(Shutdown::Write).unwrap();
                BufReader::new(&s).lines().map(Result::unwrap).collect::<Vec<_>>()
            });
            assert_eq!(lines.len(), 1000);
            assert!(lines.iter().enumerate().all(|(i, l)| *l == format!("line {i}")));
        });
    }

    #[test]
    fn connecting_to_a_closed_port_is_refused() {
        within(EVENTUALLY, || {
            let rt = rt();
            let addr = refused_addr();
            let e = rt.run(move || TcpStream::connect(addr).unwrap_err());
            assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
            let e = rt.block_on(async move { TcpStream::connect_async(addr).await.unwrap_err() });
            assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
        });
    }

    #[test]
    fn a_peer_that_resets_gives_connection_reset() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let (client, server) = pair();
                (&client).write_all(b"unread").unwrap();
                // The server sees the data and closes without reading it: the kernel resets.
                let mut peek = [0u8; 1];
                server.peek(&mut peek).unwrap();
                drop(server);
                let mut buf = [0u8; 16];
                let e = (&client).read(&mut buf).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::ConnectionReset);
                let e = (&client).write_all(&[0; 1024]).unwrap_err();
                assert!(
                    matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
                    "{e:?}"
                );
            });
        });
    }

    #[test]
    fn half_close_reads_eof_and_the_other_direction_still_works() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let (client, server) = pair();
                (&client).write_all(b"request").unwrap();
                client.shutdown(Shutdown::Write).unwrap();
                let mut got = Vec::new();
                (&server).read_to_end(&mut got).unwrap(); // ends at the half-close
                assert_eq!(got, b"request");
                (&server).write_all(b"reply").unwrap();
                drop(server);
                let mut reply = Vec::new();
                (&client).read_to_end(&mut reply).unwrap();
                assert_eq!(reply, b"reply");
            });
        });
    }

    #[test]
    fn a_read_timeout_fires_and_leaves_the_stream_usable() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let (client, server) = pair();
                client.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                let start = Instant::now();
                let mut buf = [0u8; 8];
                let e = (&client).read(&mut buf).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::TimedOut);
                assert!(start.elapsed() >= Duration::from_millis(50));
                (&server).write_all(b"late").unwrap();
                let n = (&client).read(&mut buf).unwrap();
                assert_eq!(&buf[..n], b"late");
            });
        });
    }

    #[test]
    fn a_write_timeout_fires_when_the_peer_does_not_read_and_the_stream_stays_usable() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let (client, server) = pair();
                client.set_write_timeout(Some(Duration::from_millis(100))).unwrap();
                let chunk = vec![1u8; 64 * 1024];
                let mut written = 0usize;
                let e = loop {
                    match (&client).write(&chunk) {
                        Ok(n) => written += n,
                        Err(e) => break e,
                    }
                };
                assert_eq!(e.kind(), ErrorKind::TimedOut);
                // Drain what was written; then the stream takes data again.
                let reader = corio::go(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut total = 0;
                    while total < written + 5 {
                        total += (&server).read(&mut buf).unwrap();
                    }
                    total
                });
                (&client).write_all(b"again").unwrap();
                assert_eq!(reader.join().unwrap(), written + 5);
            });
        });
    }

    #[test]
    fn a_connect_timeout_fires_against_a_full_backlog() {
        within(EVENTUALLY, || {
            rt().run(|| {
                // A listener that never accepts, with the smallest backlog: once its queue is
                // full the kernel drops further SYNs, so a connect hangs.
                let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                use std::os::fd::AsRawFd;
                // SAFETY: `listen` on a listening socket we own only lowers its backlog.
                assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
                let addr = listener.local_addr().unwrap();
                let mut held = Vec::new();
                let e = loop {
                    match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                        Ok(s) => held.push(s),
                        Err(e) => break e,
                    }
                    assert!(held.len() < 64, "the backlog never filled");
                };
                assert_eq!(e.kind(), ErrorKind::TimedOut);
            });
        });
    }

    #[test]
    fn dropping_a_socket_wakes_a_coroutine_waiting_on_its_clone_with_an_error() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let (client, _server) = pair();
                let clone = client.try_clone().unwrap();
                let waiter = corio::go(move || {
                    let mut buf = [0u8; 8];
                    (&clone).read(&mut buf)
                });
                corio::sleep(Duration::from_millis(50)); // let it wait
                drop(client);
                let e = waiter.join().unwrap().unwrap_err();
                assert_eq!(e.kind(), ErrorKind::NotConnected);
            });
        });
    }

    #[test]
    fn dropping_a_socket_wakes_an_async_task_waiting_on_its_clone_with_an_error() {
        within(EVENTUALLY, || {
            rt().block_on(async {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let client = TcpStream::connect_async(addr).await.unwrap();
                let _server = listener.accept_async().await.unwrap();
                let clone = client.try_clone().unwrap();
                let waiter = corio::spawn(async move {
                    let mut buf = [0u8; 8];
                    clone.read_async(&mut buf).await
                });
                corio::time::sleep_async(Duration::from_millis(50)).await;
                drop(client);
                let e = waiter.await.unwrap().unwrap_err();
                assert_eq!(e.kind(), ErrorKind::NotConnected);
            });
        });
    }

    #[test]
    fn dropping_the_write_half_sends_eof_and_the_read_half_keeps_reading() {
        within(EVENTUALLY, || {
            rt().block_on(async {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let client = TcpStream::connect_async(addr).await.unwrap();
                let (server, _) = listener.accept_async().await.unwrap();
                let (read_half, write_half) = client.into_split();
                write_half.write_all_async(b"bye").await.unwrap();
                drop(write_half);
                let mut got = [0u8; 3];
                server.read_exact_async(&mut got).await.unwrap();
                assert_eq!(&got, b"bye");
                assert_eq!(server.read_async(&mut got).await.unwrap(), 0); // EOF
                server.write_all_async(b"still").await.unwrap();
                let mut reply = [0u8; 5];
                read_half.read_exact_async(&mut reply).await.unwrap();
                assert_eq!(&reply, b"still");
            });
        });
    }

    #[test]
    fn an_accept_waiter_wakes_with_an_error_when_its_listener_is_dropped() {
        within(EVENTUALLY, || {
            rt().run(|| {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let clone = listener.try_clone().unwrap();
                let waiter = corio::go(move || clone.accept().map(|_| ()));
                corio::sleep(Duration::from_millis(50));
                drop(listener);
                assert_eq!(waiter.join().unwrap().unwrap_err().kind(), ErrorKind::NotConnected);
            });
        });
    }

    #[test]
    fn a_blocking_style_read_in_an_async_task_panics_with_advice() {
        within(EVENTUALLY, || {
            support::quiet_expected_panics();
            let rt = rt();
            let err = rt.block_on(async {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let client = TcpStream::connect_async(addr).await.unwrap();
                corio::spawn(async move {
                    let _keep = listener;
                    let mut buf = [0u8; 1];
                    let _ = (&client).read(&mut buf);
                })
                .await
                .unwrap_err()
            });
            let msg = support::payload_text(&*err.into_panic());
            assert!(msg.contains("read_async") || msg.contains("_async"), "{msg}");
        });
    }
}

#[test]
fn the_same_types_block_a_plain_thread() {
    within(EVENTUALLY, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
        });
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
        let mut buf = [0u8; 5];
        assert_eq!(c.read(&mut buf).unwrap_err().kind(), ErrorKind::TimedOut);
        c.write_all(b"hello").unwrap();
        c.set_read_timeout(None).unwrap();
        c.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"hello");
        server.join().unwrap();
    });
}

#[test]
fn a_host_name_is_resolved() {
    within(EVENTUALLY, || {
        let rt = support::rt(2);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        rt.run(move || TcpStream::connect(("localhost", port)).unwrap());
        rt.block_on(async move { TcpStream::connect_async(("localhost", port)).await.unwrap() });
    });
}

/// Go's sysmon `netpoll`: with every worker busy (two coroutines that never yield), no worker
/// polls the netpoller and no holder waits in it; sysmon polls after 10 ms, the woken task goes
/// to the global queue and a spare worker runs it — long before the hogs stop.
#[test]
fn sysmon_polls_sockets_while_every_worker_is_busy() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

    const HOG_FOR: Duration = Duration::from_secs(5);
    within(EVENTUALLY, || {
        let rt = support::rt(2);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let read = rt.spawn(async move {
            let s = TcpStream::connect_async(addr).await.unwrap();
            let mut buf = [0u8; 4];
            s.read_exact_async(&mut buf).await.unwrap();
            (buf, Instant::now())
        });
        let (mut peer, _) = listener.accept().unwrap();
        std::thread::sleep(Duration::from_millis(50)); // the task waits in `read_exact_async`
        let running = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let hogs: Vec<_> = (0..2)
            .map(|_| {
                let (running, stop) = (running.clone(), stop.clone());
                rt.go(move || {
                    running.fetch_add(1, SeqCst);
                    let start = Instant::now();
                    while !stop.load(SeqCst) && start.elapsed() < HOG_FOR {
                        std::hint::spin_loop();
                    }
                    start + HOG_FOR
                })
            })
            .collect();
        while running.load(SeqCst) < 2 {
            std::thread::yield_now();
        }
        peer.write_all(b"ping").unwrap();
        let (buf, read_at) = read.join().unwrap();
        stop.store(true, SeqCst);
        let hog_deadline = hogs.into_iter().map(|h| h.join().unwrap()).min().unwrap();
        assert_eq!(&buf, b"ping");
        assert!(
            read_at < hog_deadline,
            "the read finished only when the busy workers stopped"
        );
    });
}

/// `TcpListener::from_std` keeps the backlog its caller chose. It re-listened with corio's
/// own 4,096, which `bind` asks for: a server that set a small backlog to shed load (or a
/// large one, above 4,096) got corio's. With a backlog of 1 the accept queue holds two
/// connections; a third SYN is dropped and that connect times out.
#[test]
fn from_std_keeps_the_callers_backlog() {
    use std::os::fd::FromRawFd;
    within(EVENTUALLY, || {
        // SAFETY: plain socket calls on a descriptor this block creates and then hands to
        // the `std` listener, which owns it from there.
        let std_listener = unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0);
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            assert_eq!(libc::bind(fd, (&raw const addr).cast(), len), 0);
            assert_eq!(libc::listen(fd, 1), 0);
            std::net::TcpListener::from_raw_fd(fd)
        };
        let listener = TcpListener::from_std(std_listener).unwrap();
        let addr = listener.local_addr().unwrap();
        let connected: Vec<bool> = (0..4)
            .map(|_| std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)))
            .map(|c| c.map(std::mem::forget).is_ok()) // kept open: they fill the queue
            .collect();
        assert!(
            connected.iter().any(|&c| !c),
            "four connects to a listener with a backlog of 1, nothing accepted: {connected:?}"
        );
        drop(listener);
    });
}
