//! Nonblocking mode (`set_nonblocking`) on all six socket types: a blocking-style call that
//! would wait returns `ErrorKind::WouldBlock` at once instead — in a coroutine, on a plain
//! thread and (where such calls otherwise panic) in an async task — and turning the mode off
//! makes the calls wait again, timeouts included. The `_async` forms wait in either mode.
//!
//! "At once" is checked with a generous bound (1 s) against a read timeout ten times as long,
//! which a call that waited would run into; nothing asserts a speed.

mod support;

use std::io::{self, ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use corio::net::{TcpListener, TcpStream, UdpSocket, UnixDatagram, UnixListener, UnixStream};
use support::{EVENTUALLY, within};

/// What "at once" allows: far more than a system call takes, far less than `LONG`.
const AT_ONCE: Duration = Duration::from_secs(1);
/// A timeout no call of these tests may run into.
const LONG: Duration = Duration::from_secs(10);

/// Asserts that `call` returns `WouldBlock`, and at once.
#[track_caller]
fn would_block<T: std::fmt::Debug>(what: &str, call: impl FnOnce() -> io::Result<T>) {
    let start = Instant::now();
    let result = call();
    let took = start.elapsed();
    match result {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("{what}: expected WouldBlock, got {other:?}"),
    }
    assert!(took < AT_ONCE, "{what}: WouldBlock came after {took:?}");
}

/// Runs `body` in each place a blocking-style call waits: on a plain thread, and in a
/// coroutine of a one-worker and a two-worker runtime.
fn on_threads_and_in_coroutines(body: fn()) {
    within(EVENTUALLY, move || {
        std::thread::spawn(body).join().unwrap();
        for workers in support::FLAVOURS {
            support::rt(workers).run(body);
        }
    });
}

/// A connected TCP pair: a corio stream and its `std` peer.
fn tcp_pair() -> (TcpStream, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let stream = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (peer, _) = listener.accept().unwrap();
    (TcpStream::from_std(stream).unwrap(), peer)
}

/// A connected Unix stream pair: a corio stream and its `std` peer.
fn unix_pair() -> (UnixStream, std::os::unix::net::UnixStream) {
    let (stream, peer) = std::os::unix::net::UnixStream::pair().unwrap();
    (UnixStream::from_std(stream).unwrap(), peer)
}

/// A fresh socket path in the temp dir (removed first), unique per call.
fn socket_path(name: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, SeqCst);
    let path = std::env::temp_dir().join(format!(
        "corio-nonblocking-{}-{name}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

/// Calls `call` until it stops saying `WouldBlock` (for data on its way through TCP or UDP on
/// the loopback, which the kernel may deliver a moment after the send returned).
fn until_ready<T>(mut call: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let start = Instant::now();
    loop {
        match call() {
            Err(e) if e.kind() == ErrorKind::WouldBlock && start.elapsed() < EVENTUALLY => {
                std::thread::sleep(Duration::from_millis(1));
            }
            result => return result,
        }
    }
}

/// Writes `chunk` with `write` until it says `WouldBlock` (the send buffer is full); fails if
/// it never does.
fn fill(what: &str, mut write: impl FnMut() -> io::Result<usize>) {
    for _ in 0..1_000_000 {
        match write() {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                would_block(what, &mut write); // and again, at once
                return;
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
    panic!("{what}: the send buffer never filled");
}

#[test]
fn a_nonblocking_tcp_stream_says_would_block_instead_of_waiting() {
    on_threads_and_in_coroutines(|| {
        let (stream, peer) = tcp_pair();
        stream.set_read_timeout(Some(LONG)).unwrap(); // the mode wins over a timeout
        stream.set_write_timeout(Some(LONG)).unwrap();
        stream.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 8];
        would_block("read", || (&stream).read(&mut buf));
        would_block("peek", || stream.peek(&mut buf));
        (&peer).write_all(b"data").unwrap();
        assert_eq!(until_ready(|| (&stream).read(&mut buf)).unwrap(), 4);
        assert_eq!(&buf[..4], b"data");
        would_block("read after the data", || (&stream).read(&mut buf));
        // The timeouts are kept, for when the mode is off again.
        assert_eq!(stream.read_timeout().unwrap(), Some(LONG));
        let chunk = vec![0u8; 64 << 10];
        fill("write", || (&stream).write(&chunk));
    });
}

#[test]
fn a_nonblocking_unix_stream_says_would_block_instead_of_waiting() {
    on_threads_and_in_coroutines(|| {
        let (stream, peer) = unix_pair();
        stream.set_read_timeout(Some(LONG)).unwrap();
        stream.set_write_timeout(Some(LONG)).unwrap();
        stream.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 8];
        would_block("read", || (&stream).read(&mut buf));
        (&peer).write_all(b"data").unwrap();
        assert_eq!((&stream).read(&mut buf).unwrap(), 4); // a Unix send is there at once
        would_block("read after the data", || (&stream).read(&mut buf));
        let chunk = vec![0u8; 64 << 10];
        fill("write", || (&stream).write(&chunk));
    });
}

#[test]
fn a_nonblocking_tcp_listener_says_would_block_instead_of_waiting() {
    on_threads_and_in_coroutines(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        would_block("accept", || listener.accept());
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, peer) = until_ready(|| listener.accept()).unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        would_block("accept after the connection", || listener.accept());
        // The accepted stream is in blocking mode, whatever its listener's (as `std`'s on
        // Linux): its read waits, here until its timeout.
        accepted
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let e = (&accepted).read(&mut [0u8; 1]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    });
}

#[test]
fn a_nonblocking_unix_listener_says_would_block_instead_of_waiting() {
    on_threads_and_in_coroutines(|| {
        let path = socket_path("listener");
        let listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        would_block("accept", || listener.accept());
        let _client = std::os::unix::net::UnixStream::connect(&path).unwrap();
        listener.accept().unwrap(); // a Unix connect is queued at once
        would_block("accept after the connection", || listener.accept());
        std::fs::remove_file(&path).unwrap();
    });
}

#[test]
fn a_nonblocking_udp_socket_says_would_block_instead_of_waiting() {
    on_threads_and_in_coroutines(|| {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.connect(peer.local_addr().unwrap()).unwrap();
        peer.connect(socket.local_addr().unwrap()).unwrap();
        socket.set_read_timeout(Some(LONG)).unwrap();
        socket.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 8];
        would_block("recv_from", || socket.recv_from(&mut buf));
        would_block("recv", || socket.recv(&mut buf));
        would_block("peek_from", || socket.peek_from(&mut buf));
        would_block("peek", || socket.peek(&mut buf));
        peer.send(b"dgram").unwrap();
        assert_eq!(until_ready(|| socket.peek(&mut buf)).unwrap(), 5);
        assert_eq!(socket.recv(&mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"dgram");
        would_block("recv after the datagram", || socket.recv(&mut buf));
        assert_eq!(socket.send(b"back").unwrap(), 4); // a send that need not wait
    });
}

#[test]
fn a_nonblocking_unix_datagram_socket_says_would_block_instead_of_waiting() {
    on_threads_and_in_coroutines(|| {
        let (socket, peer) = UnixDatagram::pair().unwrap();
        socket.set_read_timeout(Some(LONG)).unwrap();
        socket.set_write_timeout(Some(LONG)).unwrap();
        socket.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 8];
        would_block("recv_from", || socket.recv_from(&mut buf));
        would_block("recv", || socket.recv(&mut buf));
        peer.send(b"dgram").unwrap();
        assert_eq!(socket.recv(&mut buf).unwrap(), 5);
        // The peer reads nothing: its queue fills, and the send would wait.
        fill("send", || socket.send(b"a datagram"));
        drop(peer);
    });
}

/// Turning the mode off makes each type's calls wait again: until their timeout, which still
/// works, or until what they wait for comes.
#[test]
fn turning_nonblocking_off_makes_the_calls_wait_again() {
    on_threads_and_in_coroutines(|| {
        const SHORT: Duration = Duration::from_millis(30);
        let timed_out = |what: &str, e: io::Error| {
            assert_eq!(e.kind(), ErrorKind::TimedOut, "{what}: {e}");
        };
        let mut buf = [0u8; 8];

        let (tcp, tcp_peer) = tcp_pair();
        let (unix, unix_peer) = unix_pair();
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (dgram, dgram_peer) = UnixDatagram::pair().unwrap();
        tcp.set_nonblocking(true).unwrap();
        unix.set_nonblocking(true).unwrap();
        udp.set_nonblocking(true).unwrap();
        dgram.set_nonblocking(true).unwrap();
        would_block("tcp read", || (&tcp).read(&mut buf));
        would_block("unix read", || (&unix).read(&mut buf));
        would_block("udp recv_from", || udp.recv_from(&mut buf));
        would_block("unix datagram recv", || dgram.recv(&mut buf));
        tcp.set_nonblocking(false).unwrap();
        unix.set_nonblocking(false).unwrap();
        udp.set_nonblocking(false).unwrap();
        dgram.set_nonblocking(false).unwrap();
        tcp.set_read_timeout(Some(SHORT)).unwrap();
        unix.set_read_timeout(Some(SHORT)).unwrap();
        udp.set_read_timeout(Some(SHORT)).unwrap();
        dgram.set_read_timeout(Some(SHORT)).unwrap();
        timed_out("tcp read", (&tcp).read(&mut buf).unwrap_err());
        timed_out("unix read", (&unix).read(&mut buf).unwrap_err());
        timed_out("udp recv_from", udp.recv_from(&mut buf).unwrap_err());
        timed_out("unix datagram recv", dgram.recv(&mut buf).unwrap_err());

        // Without a timeout, each waits for its data, sent a moment later by a thread.
        tcp.set_read_timeout(None).unwrap();
        unix.set_read_timeout(None).unwrap();
        udp.set_read_timeout(None).unwrap();
        dgram.set_read_timeout(None).unwrap();
        let udp_addr = udp.local_addr().unwrap();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            (&tcp_peer).write_all(b"tcp").unwrap();
            (&unix_peer).write_all(b"unix").unwrap();
            let from = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            from.send_to(b"udp", udp_addr).unwrap();
            dgram_peer.send(b"dgram").unwrap();
            (tcp_peer, unix_peer, dgram_peer)
        });
        assert_eq!((&tcp).read(&mut buf).unwrap(), 3);
        assert_eq!((&unix).read(&mut buf).unwrap(), 4);
        assert_eq!(udp.recv_from(&mut buf).unwrap().0, 3);
        assert_eq!(dgram.recv(&mut buf).unwrap(), 5);
        let _peers = sender.join().unwrap();

        // The listeners: `accept` waits for a connection made a moment later.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let path = socket_path("off");
        let unix_listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        unix_listener.set_nonblocking(true).unwrap();
        would_block("tcp accept", || listener.accept());
        would_block("unix accept", || unix_listener.accept());
        listener.set_nonblocking(false).unwrap();
        unix_listener.set_nonblocking(false).unwrap();
        let addr = listener.local_addr().unwrap();
        let to = path.clone();
        let client = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let tcp = std::net::TcpStream::connect(addr).unwrap();
            let unix = std::os::unix::net::UnixStream::connect(to).unwrap();
            (tcp, unix)
        });
        listener.accept().unwrap();
        unix_listener.accept().unwrap();
        let _clients = client.join().unwrap();
        std::fs::remove_file(&path).unwrap();
    });
}

/// A nonblocking call makes its system call even when no edge has announced the data yet:
/// here the socket waited (and timed out) in a one-worker runtime, which then ran only this
/// coroutine, so no poller need have seen the peer's data by the time of the read.
#[test]
fn a_nonblocking_read_finds_data_that_no_poller_has_announced_yet() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).run(|| {
                for _ in 0..100 {
                    let (stream, peer) = unix_pair();
                    stream
                        .set_read_timeout(Some(Duration::from_millis(1)))
                        .unwrap();
                    let mut buf = [0u8; 8];
                    let e = (&stream).read(&mut buf).unwrap_err(); // registered, not ready
                    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
                    stream.set_nonblocking(true).unwrap();
                    (&peer).write_all(b"here").unwrap();
                    assert_eq!((&stream).read(&mut buf).unwrap(), 4);
                    let (dgram, dgram_peer) = UnixDatagram::pair().unwrap();
                    dgram
                        .set_read_timeout(Some(Duration::from_millis(1)))
                        .unwrap();
                    let e = dgram.recv(&mut buf).unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
                    dgram.set_nonblocking(true).unwrap();
                    dgram_peer.send(b"here").unwrap();
                    assert_eq!(dgram.recv(&mut buf).unwrap(), 4);
                }
            });
        }
    });
}

/// In an async task a blocking-style call panics (it would stall the worker), unless the
/// socket is nonblocking: then it never waits, and says `WouldBlock`.
#[test]
fn blocking_style_calls_on_a_nonblocking_socket_say_would_block_in_an_async_task() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            let rt = support::rt(workers);
            rt.block_on(rt.spawn(async {
                let (stream, peer) = tcp_pair();
                let listener = UnixListener::bind(socket_path("task")).unwrap();
                let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
                stream.set_nonblocking(true).unwrap();
                listener.set_nonblocking(true).unwrap();
                udp.set_nonblocking(true).unwrap();
                let mut buf = [0u8; 8];
                would_block("read", || (&stream).read(&mut buf));
                would_block("accept", || listener.accept());
                would_block("recv_from", || udp.recv_from(&mut buf));
                (&peer).write_all(b"data").unwrap();
                assert_eq!(until_ready(|| (&stream).read(&mut buf)).unwrap(), 4);
                let path = listener.local_addr().unwrap();
                std::fs::remove_file(path.as_pathname().unwrap()).unwrap();
            }))
            .unwrap();
        }
    });
}

/// The `_async` forms (and so the `AsyncRead`/`AsyncWrite` traits) wait in either mode, as
/// tokio's, which has no nonblocking mode: a task waits by returning `Pending`, which blocks
/// nothing.
#[test]
fn async_forms_wait_on_a_nonblocking_socket() {
    within(EVENTUALLY, || {
        for workers in support::FLAVOURS {
            support::rt(workers).block_on(async {
                let (stream, peer) = unix_pair();
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let (dgram, dgram_peer) = UnixDatagram::pair().unwrap();
                stream.set_nonblocking(true).unwrap();
                listener.set_nonblocking(true).unwrap();
                dgram.set_nonblocking(true).unwrap();
                let addr = listener.local_addr().unwrap();
                let later = std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(20));
                    (&peer).write_all(b"data").unwrap();
                    dgram_peer.send(b"dgram").unwrap();
                    let client = std::net::TcpStream::connect(addr).unwrap();
                    (peer, dgram_peer, client)
                });
                let mut buf = [0u8; 8];
                assert_eq!(stream.read_async(&mut buf).await.unwrap(), 4);
                assert_eq!(dgram.recv_async(&mut buf).await.unwrap(), 5);
                listener.accept_async().await.unwrap();
                later.join().unwrap();
            });
        }
    });
}

/// The mode belongs to the socket, as `O_NONBLOCK` to an open file in `std`: every handle
/// (`try_clone`, the halves of `into_split`) sees it, and `into_std` hands a nonblocking
/// socket back nonblocking (a blocking one blocking, as before).
#[test]
fn the_mode_is_the_sockets_and_into_std_keeps_it() {
    fn is_nonblocking(fd: std::os::fd::RawFd) -> bool {
        // SAFETY: `F_GETFL` on a descriptor the caller holds open reads nothing from our memory.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        assert!(flags >= 0, "{}", io::Error::last_os_error());
        flags & libc::O_NONBLOCK != 0
    }
    use std::os::fd::AsRawFd;
    within(EVENTUALLY, || {
        let (stream, _peer) = unix_pair();
        let clone = stream.try_clone().unwrap();
        stream.set_nonblocking(true).unwrap();
        would_block("a clone's read", || (&clone).read(&mut [0u8; 1]));
        drop(clone); // (closes the socket for `stream` too: a fresh pair below)

        let (stream, _peer) = tcp_pair();
        stream.set_nonblocking(true).unwrap();
        let (mut read, write) = stream.into_split();
        would_block("the read half's read", || read.read(&mut [0u8; 1]));
        let stream = read.reunite(write).unwrap();
        let std_stream = stream.into_std().unwrap();
        assert!(is_nonblocking(std_stream.as_raw_fd()));
        would_block("std's read", || (&std_stream).read(&mut [0u8; 1]));

        let (stream, _peer) = unix_pair();
        stream.set_nonblocking(true).unwrap();
        stream.set_nonblocking(false).unwrap();
        assert!(!is_nonblocking(stream.into_std().unwrap().as_raw_fd()));

        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let fd = std::os::fd::OwnedFd::from(listener);
        assert!(
            is_nonblocking(fd.as_raw_fd()),
            "into_raw_fd keeps the mode as into_std"
        );
    });
}
