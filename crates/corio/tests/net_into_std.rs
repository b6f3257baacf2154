//! Handing a socket back (`into_std`, `IntoRawFd`, `From<_> for OwnedFd`: `net/fd.rs`, "Handing
//! a descriptor back"): the socket leaves the runtime's epoll set, comes back blocking, works
//! with `std` alone or in another runtime, and a socket other handles share stays theirs.
//!
//! Whether a socket is in an epoll set is read from the kernel: `/proc/self/fdinfo/<epoll fd>`
//! lists each entry's descriptor number (`tfd`) and inode (`ino`), for every epoll instance of
//! the process (other tests' runtimes included: an entry is matched by both, and a socket's
//! inode is unique while it is open).

#[macro_use]
mod support;

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::time::Duration;

use corio::net::{TcpListener, TcpStream, UdpSocket, UnixDatagram, UnixListener, UnixStream};
use support::{EVENTUALLY, within};

/// The inode of the socket `fd` (`/proc/self/fd/<fd>` reads `socket:[<inode>]`).
fn socket_ino(fd: RawFd) -> u64 {
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
    let link = link.to_str().unwrap();
    let ino = link
        .strip_prefix("socket:[")
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or_else(|| panic!("fd {fd} is not a socket: {link}"));
    ino.parse().unwrap()
}

/// The epoll instances of this process (their descriptors) with an entry for the socket of
/// inode `ino` added as descriptor `fd`.
fn epolls_holding(fd: RawFd, ino: u64) -> Vec<RawFd> {
    let mut holders = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap() {
        let name = entry.unwrap().file_name();
        let Ok(epfd) = name.to_string_lossy().parse::<RawFd>() else {
            continue;
        };
        // Other tests open and close descriptors meanwhile: a vanished one is skipped.
        let Ok(link) = std::fs::read_link(format!("/proc/self/fd/{epfd}")) else {
            continue;
        };
        if link.to_str() != Some("anon_inode:[eventpoll]") {
            continue;
        }
        let Ok(info) = std::fs::read_to_string(format!("/proc/self/fdinfo/{epfd}")) else {
            continue;
        };
        // `tfd:        4 events:       19 data:                4  pos:0 ino:513e6 sdev:9`
        let holds = info.lines().any(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            words.first() == Some(&"tfd:")
                && words.get(1).and_then(|w| w.parse::<RawFd>().ok()) == Some(fd)
                && words.iter().any(|w| {
                    w.strip_prefix("ino:")
                        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
                        == Some(ino)
                })
        });
        if holds {
            holders.push(epfd);
        }
    }
    holders
}

/// Whether `fd`'s file has `O_NONBLOCK` set.
fn is_nonblocking(fd: RawFd) -> bool {
    // SAFETY: `F_GETFL` on a descriptor the caller holds open reads nothing from our memory.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    assert!(flags >= 0, "{}", std::io::Error::last_os_error());
    flags & libc::O_NONBLOCK != 0
}

/// A connected pair: a corio stream and its `std` peer.
fn tcp_pair() -> (TcpStream, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (peer, _) = listener.accept().unwrap();
    (TcpStream::from_std(client).unwrap(), peer)
}

/// `stream` and its peer after a coroutine on `rt` waited in a read on `stream` until the peer
/// sent `msg`: the stream has registered with `rt` (its epoll set holds it), the message is read.
fn waited_in(
    rt: &corio::Runtime,
    stream: TcpStream,
    peer: std::net::TcpStream,
    msg: &'static [u8],
) -> (TcpStream, std::net::TcpStream) {
    rt.run(move || {
        let reader = corio::go(move || {
            let mut buf = vec![0u8; msg.len()];
            (&stream).read_exact(&mut buf).unwrap();
            stream
        });
        corio::sleep(Duration::from_millis(10));
        (&peer).write_all(msg).unwrap();
        (reader.join().unwrap(), peer)
    })
}

/// A fresh socket path in the temp dir (removed first).
fn socket_path(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("corio-into-std-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

rt_common! {
    #[test]
    fn a_tcp_stream_that_waited_in_a_runtime_works_as_a_blocking_std_stream() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (stream, mut peer) = tcp_pair();
            // A coroutine waits for data: the stream is in the runtime's epoll set.
            let (stream, peer) = rt.run(move || {
                let reader = corio::go(move || {
                    let mut buf = [0u8; 4];
                    (&stream).read_exact(&mut buf).unwrap();
                    assert_eq!(&buf, b"ping");
                    stream
                });
                corio::sleep(Duration::from_millis(10)); // (let it wait; not required)
                peer.write_all(b"ping").unwrap();
                (reader.join().unwrap(), peer)
            });
            let fd = stream.as_raw_fd();
            let ino = socket_ino(fd);
            assert_eq!(epolls_holding(fd, ino).len(), 1, "the stream was not registered");

            let stream = stream.into_std().unwrap();
            assert_eq!(stream.as_raw_fd(), fd, "the same descriptor comes back");
            assert_eq!(epolls_holding(fd, ino), Vec::<RawFd>::new());
            assert!(!is_nonblocking(fd), "into_std leaves the stream nonblocking");

            // `std`'s blocking calls on a plain thread, whichever comes first: the reader or
            // the data (a nonblocking stream would fail the first way with `WouldBlock`).
            let mut stream = stream;
            let reader = std::thread::spawn(move || {
                let mut buf = [0u8; 5];
                stream.read_exact(&mut buf).unwrap();
                stream.write_all(b"reply").unwrap();
                buf
            });
            let mut peer = peer;
            peer.write_all(b"hello").unwrap();
            assert_eq!(&reader.join().unwrap(), b"hello");
            let mut buf = [0u8; 5];
            peer.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"reply");
            // The runtime is still alive: nothing of the socket is left in it.
            rt.run(|| corio::sleep(Duration::from_millis(1)));
        });
    }

    #[test]
    fn a_tcp_listener_that_waited_in_a_runtime_accepts_with_std_after() {
        within(EVENTUALLY, || {
            let rt = rt();
            let listener = rt.run(|| {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let server = corio::go(move || {
                    let (mut s, _) = listener.accept().unwrap();
                    s.write_all(b"one").unwrap();
                    listener
                });
                let mut client = TcpStream::connect(addr).unwrap();
                let mut buf = [0u8; 3];
                client.read_exact(&mut buf).unwrap();
                assert_eq!(&buf, b"one");
                server.join().unwrap()
            });
            let fd = listener.as_raw_fd();
            let ino = socket_ino(fd);
            assert_eq!(epolls_holding(fd, ino).len(), 1, "the listener was not registered");

            let listener = listener.into_std().unwrap();
            assert_eq!(epolls_holding(fd, ino), Vec::<RawFd>::new());
            assert!(!is_nonblocking(fd));
            let addr = listener.local_addr().unwrap();
            // `std`'s accept, blocking on a plain thread until the client comes.
            let server = std::thread::spawn(move || {
                let (mut s, _) = listener.accept().unwrap();
                s.write_all(b"two").unwrap();
            });
            let mut client = std::net::TcpStream::connect(addr).unwrap();
            let mut buf = [0u8; 3];
            client.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"two");
            server.join().unwrap();
        });
    }

    #[test]
    fn a_udp_socket_that_waited_in_a_runtime_receives_with_std_after() {
        within(EVENTUALLY, || {
            let rt = rt();
            let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            let to = socket.local_addr().unwrap();
            let (socket, sender) = rt.run(move || {
                let receiver = corio::go(move || {
                    let mut buf = [0u8; 8];
                    let (n, _) = socket.recv_from(&mut buf).unwrap();
                    assert_eq!(&buf[..n], b"corio");
                    socket
                });
                corio::sleep(Duration::from_millis(10));
                sender.send_to(b"corio", to).unwrap();
                (receiver.join().unwrap(), sender)
            });
            let fd = socket.as_raw_fd();
            let ino = socket_ino(fd);
            assert_eq!(epolls_holding(fd, ino).len(), 1, "the socket was not registered");

            let socket = socket.into_std().unwrap();
            assert_eq!(epolls_holding(fd, ino), Vec::<RawFd>::new());
            assert!(!is_nonblocking(fd));
            let receiver = std::thread::spawn(move || {
                let mut buf = [0u8; 8];
                let (n, from) = socket.recv_from(&mut buf).unwrap();
                socket.send_to(&buf[..n], from).unwrap();
            });
            sender.send_to(b"std", to).unwrap();
            let mut buf = [0u8; 8];
            let n = sender.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"std");
            receiver.join().unwrap();
        });
    }

    #[test]
    fn a_unix_stream_that_waited_in_a_runtime_works_as_a_blocking_std_stream() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (ours, peer) = UnixStream::pair().unwrap();
            let (ours, peer) = rt.run(move || {
                let reader = corio::go(move || {
                    let mut buf = [0u8; 4];
                    (&ours).read_exact(&mut buf).unwrap();
                    assert_eq!(&buf, b"unix");
                    ours
                });
                corio::sleep(Duration::from_millis(10));
                (&peer).write_all(b"unix").unwrap();
                (reader.join().unwrap(), peer)
            });
            let fd = ours.as_raw_fd();
            let ino = socket_ino(fd);
            assert_eq!(epolls_holding(fd, ino).len(), 1, "the stream was not registered");

            let mut ours = ours.into_std().unwrap();
            assert_eq!(epolls_holding(fd, ino), Vec::<RawFd>::new());
            assert!(!is_nonblocking(fd));
            let reader = std::thread::spawn(move || {
                let mut buf = [0u8; 3];
                ours.read_exact(&mut buf).unwrap();
                ours.write_all(b"ack").unwrap();
                buf
            });
            // The peer stays a corio stream, used from this plain thread.
            (&peer).write_all(b"std").unwrap();
            assert_eq!(&reader.join().unwrap(), b"std");
            let mut buf = [0u8; 3];
            (&peer).read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"ack");
        });
    }

    #[test]
    fn a_raw_fd_handed_back_is_registered_again_by_another_runtime_after_the_first_is_gone() {
        within(EVENTUALLY, || {
            let first = rt();
            let second = rt();
            let (stream, peer) = tcp_pair();
            let (stream, mut peer) = waited_in(&first, stream, peer, b"one");
            let ino = socket_ino(stream.as_raw_fd());
            let in_first = epolls_holding(stream.as_raw_fd(), ino);
            assert_eq!(in_first.len(), 1, "the stream was not registered");

            let fd = stream.into_raw_fd();
            assert_eq!(epolls_holding(fd, ino), Vec::<RawFd>::new());
            assert!(!is_nonblocking(fd));
            // A socket left registered with a runtime that is gone fails its waits
            // (`net_review_api.rs`, `a_socket_registered_with_one_runtime_works_in_another`);
            // this one registers again where it is adopted.
            drop(first);
            // SAFETY: `fd` is the open TCP socket `into_raw_fd` gave up; adopted once.
            let stream = unsafe { TcpStream::from_raw_fd(fd) };
            assert!(is_nonblocking(fd), "from_raw_fd makes it nonblocking again");
            let (stream, in_second) = second.run(move || {
                let reader = corio::go(move || {
                    let mut buf = [0u8; 3];
                    (&stream).read_exact(&mut buf).unwrap();
                    assert_eq!(&buf, b"two");
                    stream
                });
                corio::sleep(Duration::from_millis(10));
                peer.write_all(b"two").unwrap();
                let stream = reader.join().unwrap();
                let in_second = epolls_holding(stream.as_raw_fd(), ino);
                (stream, in_second)
            });
            assert_eq!(in_second.len(), 1, "not registered with the second runtime");
            drop(stream);
        });
    }

    #[test]
    fn into_std_on_a_shared_socket_is_refused_and_leaves_the_other_handles_working() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (stream, mut peer) = tcp_pair();
            let clone = stream.try_clone().unwrap();
            let thread_clone = stream.try_clone().unwrap();
            // A plain thread waits on one clone (in `poll(2)`; a peek, which takes nothing),
            // a coroutine on another.
            let on_thread = std::thread::spawn(move || {
                let mut buf = [0u8; 1];
                let n = thread_clone.peek(&mut buf);
                (n, thread_clone)
            });
            let (last, peer) = rt.run(move || {
                let reader = corio::go(move || {
                    let mut buf = [0u8; 4];
                    (&clone).read_exact(&mut buf).unwrap();
                    assert_eq!(&buf, b"data");
                    clone
                });
                corio::sleep(Duration::from_millis(10));
                let e = stream.into_std().unwrap_err();
                assert_eq!(e.kind(), ErrorKind::ResourceBusy, "{e}");
                // The waiters were left alone: they get the data, not an error.
                peer.write_all(b"data!").unwrap();
                (reader.join().unwrap(), peer)
            });
            let (peeked, thread_clone) = on_thread.join().unwrap();
            assert_eq!(peeked.unwrap(), 1);
            // Refused again, and quietly: dropping the handle would close the socket for the
            // other one, this leaves it open.
            let e = thread_clone.into_std().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ResourceBusy, "{e}");
            // The coroutine's clone is the last handle: it can be handed back.
            let mut last = last.into_std().unwrap();
            let mut peer = peer;
            peer.write_all(b"more").unwrap();
            let mut buf = [0u8; 5];
            last.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"!more");
        });
    }

    /// `into_split`'s halves are two handles to one socket; `reunite` makes them one again,
    /// so the stream it gives back can be handed back as an unsplit one can.
    #[test]
    fn a_reunited_stream_is_one_handle_again_and_into_std_hands_it_back() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (stream, mut peer) = tcp_pair();
            let (stream, peer) = rt.run(move || {
                let (mut read, write) = stream.into_split();
                // A coroutine waits on the read half: the socket is in the epoll set.
                let reader = corio::go(move || {
                    let mut buf = [0u8; 4];
                    read.read_exact(&mut buf).unwrap();
                    assert_eq!(&buf, b"ping");
                    read
                });
                corio::sleep(Duration::from_millis(10)); // (let it wait; not required)
                peer.write_all(b"ping").unwrap();
                let read = reader.join().unwrap();
                (read.reunite(write).unwrap(), peer)
            });
            let fd = stream.as_raw_fd();
            let ino = socket_ino(fd);
            assert_eq!(epolls_holding(fd, ino).len(), 1, "the stream was not registered");

            let mut stream = stream.into_std().unwrap();
            assert_eq!(epolls_holding(fd, ino), Vec::<RawFd>::new());
            assert!(!is_nonblocking(fd), "into_std leaves the stream nonblocking");
            // Reuniting did not shut the write side down; `std` writes on it.
            stream.write_all(b"from std").unwrap();
            drop(stream);
            let mut got = Vec::new();
            let mut peer = peer;
            peer.read_to_end(&mut got).unwrap();
            assert_eq!(got, b"from std");
        });
    }

    /// A stream whose socket another handle shares (`try_clone` before the split) is still
    /// shared once reunited: `into_std` refuses, quietly, and the other handle keeps working.
    #[test]
    fn a_reunited_stream_that_another_handle_shares_is_refused_by_into_std() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (stream, peer) = UnixStream::pair().unwrap();
            let clone = stream.try_clone().unwrap();
            let (read, write) = stream.into_split();
            let stream = write.reunite(read).unwrap();
            let e = stream.into_std().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ResourceBusy, "{e}");
            let clone = rt.run(move || {
                let reader = corio::go(move || {
                    let mut buf = [0u8; 4];
                    (&clone).read_exact(&mut buf).unwrap();
                    assert_eq!(&buf, b"open");
                    clone
                });
                (&peer).write_all(b"open").unwrap();
                let clone = reader.join().unwrap();
                (&clone).write_all(b"back").unwrap();
                let mut buf = [0u8; 4];
                (&peer).read_exact(&mut buf).unwrap();
                assert_eq!(&buf, b"back");
                clone
            });
            // The clone is the last handle now.
            clone.into_std().unwrap();
        });
    }

    #[test]
    fn into_raw_fd_on_a_shared_socket_hands_out_a_duplicate_that_outlives_the_others() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (stream, peer) = tcp_pair();
            let clone = stream.try_clone().unwrap();
            let (stream, clone, mut peer) = rt.run(move || {
                let reader = corio::go(move || {
                    let mut buf = [0u8; 1];
                    (&clone).read_exact(&mut buf).unwrap();
                    clone
                });
                corio::sleep(Duration::from_millis(10));
                (&peer).write_all(b"1").unwrap();
                (stream, reader.join().unwrap(), peer)
            });
            let original = clone.as_raw_fd();
            let ino = socket_ino(original);
            assert_eq!(epolls_holding(original, ino).len(), 1, "not registered");

            let dup = OwnedFd::from(stream);
            assert_ne!(dup.as_raw_fd(), original, "not a duplicate");
            assert_eq!(socket_ino(dup.as_raw_fd()), ino, "not the same socket");
            // The file's mode is the clone's too, which still waits in the runtime.
            assert!(is_nonblocking(dup.as_raw_fd()));
            assert_eq!(epolls_holding(original, ino).len(), 1);
            let clone = rt.run(move || {
                let reader = corio::go(move || {
                    let mut buf = [0u8; 1];
                    (&clone).read_exact(&mut buf).unwrap();
                    assert_eq!(&buf, b"2");
                    clone
                });
                corio::sleep(Duration::from_millis(10));
                peer.write_all(b"2").unwrap();
                (reader.join().unwrap(), peer)
            });
            let (clone, mut peer) = clone;
            // The last corio handle goes: its descriptor closes, the socket lives on in the
            // duplicate, and must not stay in the epoll set (epoll would keep it there).
            drop(clone);
            assert_eq!(epolls_holding(original, ino), Vec::<RawFd>::new());
            let mut std_stream = std::net::TcpStream::from(dup);
            std_stream.set_nonblocking(false).unwrap();
            peer.write_all(b"3").unwrap();
            let mut buf = [0u8; 1];
            std_stream.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"3");
        });
    }

    /// A socket whose descriptor its user duplicated (`as_fd().try_clone_to_owned()`; a
    /// `fork` or `SCM_RIGHTS` do the same) leaves the runtime's epoll set when its last corio
    /// handle drops. epoll drops an entry only when the socket's last descriptor closes: before,
    /// the entry stayed while the duplicate lived, and every edge on the socket woke the idle
    /// runtime for nothing (a stale token, ignored).
    #[test]
    fn a_socket_dropped_while_its_user_holds_a_duplicate_leaves_the_epoll_set() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (stream, peer) = tcp_pair();
            let (stream, mut peer) = waited_in(&rt, stream, peer, b"1");
            let fd = stream.as_raw_fd();
            let ino = socket_ino(fd);
            assert_eq!(epolls_holding(fd, ino).len(), 1, "not registered");

            let dup = stream.as_fd().try_clone_to_owned().unwrap();
            drop(stream);
            assert_eq!(
                epolls_holding(fd, ino),
                Vec::<RawFd>::new(),
                "the socket stayed in the epoll set behind its duplicate"
            );

            // The runtime sleeps through the duplicate's traffic.
            std::thread::sleep(Duration::from_millis(50)); // (a worker's spin ends)
            let polls = rt.metrics().io_polls;
            const WRITES: u64 = 20;
            for _ in 0..WRITES {
                peer.write_all(b"x").unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
            let mut dup = std::net::TcpStream::from(dup);
            dup.set_nonblocking(false).unwrap();
            let mut buf = [0u8; WRITES as usize];
            dup.read_exact(&mut buf).unwrap();
            assert_eq!(buf, [b'x'; WRITES as usize]);
            let polls = rt.metrics().io_polls - polls;
            assert!(
                polls < WRITES / 2,
                "{polls} netpoller polls while only a dropped socket's duplicate saw {WRITES} writes"
            );
        });
    }

    #[test]
    fn a_socket_whose_runtime_is_gone_is_handed_back_working() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (stream, peer) = tcp_pair();
            let (stream, mut peer) = waited_in(&rt, stream, peer, b"1");
            let ino = socket_ino(stream.as_raw_fd());
            drop(rt);
            let mut stream = stream.into_std().unwrap();
            assert_eq!(epolls_holding(stream.as_raw_fd(), ino), Vec::<RawFd>::new());
            peer.write_all(b"2").unwrap();
            let mut buf = [0u8; 1];
            stream.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"2");
        });
    }
}

#[test]
fn a_socket_never_registered_converts_too() {
    within(EVENTUALLY, || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        // Connected and written on a plain thread: it waits in `poll(2)`, never in epoll.
        let mut stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        stream.write_all(b"plain").unwrap();
        let ino = socket_ino(stream.as_raw_fd());
        assert_eq!(epolls_holding(stream.as_raw_fd(), ino), Vec::<RawFd>::new());
        let mut stream = stream.into_std().unwrap();
        assert!(!is_nonblocking(stream.as_raw_fd()));
        let (mut peer, _) = listener.accept().unwrap();
        let mut buf = [0u8; 5];
        peer.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"plain");
        peer.write_all(b"back").unwrap();
        let mut buf = [0u8; 4];
        stream.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"back");
    });
}

#[test]
fn every_socket_type_comes_back_blocking_by_into_std_and_into_raw_fd() {
    within(EVENTUALLY, || {
        fn check(what: &str, fd: OwnedFd) {
            assert!(
                !is_nonblocking(fd.as_raw_fd()),
                "{what} came back nonblocking"
            );
        }
        let tcp = || {
            let (stream, peer) = tcp_pair();
            (stream, peer)
        };
        check("TcpStream::into_std", tcp().0.into_std().unwrap().into());
        check("TcpStream → OwnedFd", tcp().0.into());
        let listener = || TcpListener::bind("127.0.0.1:0").unwrap();
        check(
            "TcpListener::into_std",
            listener().into_std().unwrap().into(),
        );
        check("TcpListener → OwnedFd", listener().into());
        let udp = || UdpSocket::bind("127.0.0.1:0").unwrap();
        check("UdpSocket::into_std", udp().into_std().unwrap().into());
        check("UdpSocket → OwnedFd", udp().into());
        check(
            "UnixStream::into_std",
            UnixStream::pair().unwrap().0.into_std().unwrap().into(),
        );
        check("UnixStream → OwnedFd", UnixStream::pair().unwrap().0.into());
        let path = socket_path("listener");
        check(
            "UnixListener::into_std",
            UnixListener::bind(&path)
                .unwrap()
                .into_std()
                .unwrap()
                .into(),
        );
        std::fs::remove_file(&path).unwrap();
        check(
            "UnixListener → OwnedFd",
            UnixListener::bind(&path).unwrap().into(),
        );
        std::fs::remove_file(&path).unwrap();
        let datagram = || UnixDatagram::pair().unwrap().0;
        check(
            "UnixDatagram::into_std",
            datagram().into_std().unwrap().into(),
        );
        // SAFETY: the descriptor `into_raw_fd` gave up, adopted once.
        check("UnixDatagram::into_raw_fd", unsafe {
            OwnedFd::from_raw_fd(datagram().into_raw_fd())
        });
    });
}

#[test]
fn into_std_on_a_socket_another_handle_closed_is_not_connected() {
    within(EVENTUALLY, || {
        let (stream, _peer) = tcp_pair();
        let other = stream.try_clone().unwrap();
        drop(stream); // closes the socket for `other`
        let e = other.into_std().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotConnected, "{e}");
    });
}
