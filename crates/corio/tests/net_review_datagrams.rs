//! Review 3 of `corio::net` (UDP, Unix sockets, addresses, TCP, descriptors, timeouts).
//!
//! Failed on the code reviewed (`724f6da`, 2026-12-07), and pass since the fixes
//! (docs/soundness.md, "The reviews of 2026-12-07, night"): the two `..._waits_without_spinning` tests
//! (an unconnected Unix datagram send to a full receiver busy-loops through the netpoller),
//! `a_malformed_address_is_an_invalid_input_error_not_a_panic_in_an_async_task`,
//! `a_nonblocking_unix_datagram_whose_read_side_is_shut_down_says_would_block_as_std` and
//! `adopting_an_owned_fd_that_refuses_fionbio_does_not_panic`. The others pass: they cover
//! boundaries no other test did.

#[macro_use]
mod support;

use std::io::ErrorKind;
use std::net::Shutdown;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net as std_unix;
use std::time::Duration;

use corio::net::{TcpListener, UdpSocket, UnixDatagram, UnixListener, UnixStream};
use support::{TempDir, within};

/// The hang guard (a wait that never ends fails the test).
const GUARD: Duration = Duration::from_secs(20);

/// Fills `path`'s receive queue with datagrams `b"filler"` from `sender` (in nonblocking mode
/// for the while), until a further send says `WouldBlock`; returns how many it queued.
fn fill_with(sender: &UnixDatagram, path: &std::path::Path) -> usize {
    sender.set_nonblocking(true).unwrap();
    let mut sent = 0;
    loop {
        match sender.send_to(b"filler", path) {
            Ok(_) => sent += 1,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::WouldBlock, "{e:?}");
                break;
            }
        }
    }
    sender.set_nonblocking(false).unwrap();
    assert!(sent > 0);
    sent
}

rt_common! {
    /// An unconnected Unix datagram `send_to` from a coroutine to a receiver whose queue is
    /// full must wait for the receiver without spinning. Each failed `sendto` frees the
    /// buffer it allocated, which wakes the sender's own wait queue with `EPOLLOUT`, and
    /// `epoll` calls an unconnected datagram socket writable whatever its destination holds:
    /// so every retry brings the next edge, and the coroutine is resumed in a loop (about
    /// 10,000 resumes per 100 ms the receiver waits here) until the receiver reads.
    /// `std` sleeps in the kernel; a plain thread here backs off (`Source::block_thread`).
    #[test]
    fn an_unconnected_unix_send_to_a_full_receiver_waits_without_spinning_in_a_coroutine() {
        within(GUARD, || {
            let dir = TempDir::new(&format!("r3-dgram-spin-{WORKERS}"));
            let path = dir.join("rx");
            let receiver = UnixDatagram::bind(&path).unwrap();
            let rt = rt();
            let before = rt.metrics().polls;
            rt.run(move || {
                let sender = UnixDatagram::unbound().unwrap();
                let queued = fill_with(&sender, &path);
                let drain = corio::go(move || {
                    corio::sleep(Duration::from_millis(200));
                    let mut buf = [0u8; 16];
                    for _ in 0..queued {
                        assert_eq!(receiver.recv(&mut buf).unwrap(), 6);
                    }
                    let n = receiver.recv(&mut buf).unwrap();
                    assert_eq!(&buf[..n], b"last");
                });
                assert_eq!(sender.send_to(b"last", &path).unwrap(), 4);
                drain.join().unwrap();
            });
            let polls = rt.metrics().polls - before;
            assert!(
                polls < 1000,
                "the coroutine waiting to send was resumed {polls} times in ~200 ms: it spins"
            );
        });
    }

    /// The same with `send_to_async` in an async task: the future is polled in a loop.
    #[test]
    fn an_unconnected_unix_send_to_async_a_full_receiver_waits_without_spinning() {
        within(GUARD, || {
            let dir = TempDir::new(&format!("r3-dgram-spin-async-{WORKERS}"));
            let path = dir.join("rx");
            let receiver = UnixDatagram::bind(&path).unwrap();
            let polls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let counted = polls.clone();
            let rt = rt();
            rt.block_on(corio::spawn(async move {
                let sender = UnixDatagram::unbound().unwrap();
                let queued = fill_with(&sender, &path);
                let drain = corio::spawn(async move {
                    corio::time::sleep_async(Duration::from_millis(200)).await;
                    let mut buf = [0u8; 16];
                    for _ in 0..queued {
                        assert_eq!(receiver.recv_async(&mut buf).await.unwrap(), 6);
                    }
                    let n = receiver.recv_async(&mut buf).await.unwrap();
                    assert_eq!(&buf[..n], b"last");
                });
                let send = support::CountPolls::new(counted, sender.send_to_async(b"last", &path));
                assert_eq!(send.await.unwrap(), 4);
                drain.await.unwrap();
            }))
            .unwrap();
            let polls = polls.load(std::sync::atomic::Ordering::SeqCst);
            assert!(
                polls < 1000,
                "the send_to_async future was polled {polls} times in ~200 ms: it spins"
            );
        });
    }

    /// `connect` twice: the second peer replaces the first, for a coroutine receiving from
    /// the socket (a datagram from the first peer is filtered out). (Held up.)
    #[test]
    fn udp_connect_twice_receives_from_the_second_peer_only() {
        within(GUARD, || {
            rt().run(|| {
                let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
                let p1 = UdpSocket::bind("127.0.0.1:0").unwrap();
                let p2 = UdpSocket::bind("127.0.0.1:0").unwrap();
                rx.connect(p1.local_addr().unwrap()).unwrap();
                rx.connect(p2.local_addr().unwrap()).unwrap();
                assert_eq!(rx.peer_addr().unwrap(), p2.local_addr().unwrap());
                let to = rx.local_addr().unwrap();
                let r = corio::go(move || {
                    let mut buf = [0; 8];
                    let (n, from) = rx.recv_from(&mut buf).unwrap();
                    (buf[..n].to_vec(), from)
                });
                corio::sleep(Duration::from_millis(20));
                p1.send_to(b"one", to).unwrap();
                p2.send_to(b"two", to).unwrap();
                assert_eq!(r.join().unwrap(), (b"two".to_vec(), p2.local_addr().unwrap()));
            });
        });
    }

    /// A path of 107 bytes (the longest `sun_path` holds with its NUL), none of them UTF-8:
    /// bound, reported back by `local_addr`/`peer_addr`, and connected from a coroutine and an
    /// async task (corio builds that `sockaddr_un` itself, `net/addr.rs`, `unix_socket`); one
    /// byte more is refused as `std` refuses it. (Held up; the boundary was not covered.)
    #[test]
    fn a_unix_path_of_107_non_utf8_bytes_connects_in_every_face() {
        within(GUARD, || {
            let dir = TempDir::new(&format!("r3-long-{WORKERS}"));
            let base = dir.path();
            let base_len = base.as_os_str().len() + 1;
            assert!(base_len < 100, "temp dir too long: {base:?}");
            let name = std::ffi::OsStr::from_bytes(&vec![0xffu8; 107 - base_len]).to_owned();
            let path = base.join(name);
            assert_eq!(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).len(), 107);
            let listener = UnixListener::bind(&path).unwrap();
            assert_eq!(listener.local_addr().unwrap().as_pathname(), Some(path.as_path()));
            let p = path.clone();
            let too_long = base.join("x".repeat(108 - base_len));
            rt().run(move || {
                let p2 = p.clone();
                let c = corio::go(move || UnixStream::connect(&p2).unwrap());
                let (_s, _) = listener.accept().unwrap();
                let c = c.join().unwrap();
                assert_eq!(c.peer_addr().unwrap().as_pathname(), Some(p.as_path()));
                let p3 = p.clone();
                let t = corio::spawn(async move { UnixStream::connect_async(&p3).await.unwrap() });
                let (_s2, _) = listener.accept().unwrap();
                corio::block_on(t).unwrap();
                let e = UnixStream::connect(&too_long).unwrap_err();
                let std_e = std_unix::UnixStream::connect(&too_long).unwrap_err();
                assert_eq!(e.kind(), std_e.kind());
            });
        });
    }
}

/// `set_nonblocking(true)` promises `std`'s semantics. A nonblocking `std` Unix datagram
/// socket whose read side is shut down says `WouldBlock` on an empty queue (only the blocking
/// receive returns 0: `unix_dgram_recvmsg` signals EOF only for `SOCK_SEQPACKET`); corio's
/// `received` (`net/unix.rs`) turns that `WouldBlock` into `Ok(0)` in every mode, so a
/// nonblocking caller reads an empty datagram that was never sent.
#[test]
fn a_nonblocking_unix_datagram_whose_read_side_is_shut_down_says_would_block_as_std() {
    let (a, _b) = std_unix::UnixDatagram::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    a.shutdown(Shutdown::Read).unwrap();
    let std_result = a.recv(&mut [0; 8]).map_err(|e| e.kind());
    let (c, _d) = UnixDatagram::pair().unwrap();
    c.set_nonblocking(true).unwrap();
    c.shutdown(Shutdown::Read).unwrap();
    let corio_result = c.recv(&mut [0; 8]).map_err(|e| e.kind());
    assert_eq!(corio_result, std_result);
}

/// A malformed address string (no port, a port out of range, a port that is no number) is
/// an `InvalidInput` error in `std`, found without a lookup (`LookupHost::try_from`). corio's
/// `str` impl (`net/addr.rs`) sends every string that does not parse as a `SocketAddr` to
/// `getaddrinfo`, so in an async task `bind` and UDP `connect` — which never wait, and which
/// async tasks may call — panic ("`bind` with a host name inside an async task would stall
/// its worker") instead of returning the error.
#[test]
fn a_malformed_address_is_an_invalid_input_error_not_a_panic_in_an_async_task() {
    within(GUARD, || {
        let rt = support::rt(1);
        for bad in ["127.0.0.1", "127.0.0.1:99999", "127.0.0.1:port"] {
            let std_kind = std::net::TcpListener::bind(bad).unwrap_err().kind();
            assert_eq!(std_kind, ErrorKind::InvalidInput, "{bad}");
            let task = rt.spawn(async move {
                let tcp = TcpListener::bind(bad).map(|_| ()).map_err(|e| e.kind());
                let udp = UdpSocket::bind(bad).map(|_| ()).map_err(|e| e.kind());
                let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
                let connect = socket.connect(bad).map_err(|e| e.kind());
                (tcp, udp, connect)
            });
            let got = rt.block_on(task).map_err(|e| e.to_string());
            let want = (Err(std_kind), Err(std_kind), Err(std_kind));
            assert_eq!(got, Ok(want), "{bad}");
        }
    });
}

/// `From<OwnedFd>` of a descriptor that `FIONBIO` refuses (`EBADF` for an `O_PATH` one, which
/// safe code opens with `OpenOptionsExt::custom_flags`): `std`'s conversion cannot fail (the
/// socket's later calls do), corio's panics ("FIONBIO on an open descriptor cannot fail",
/// `net/fd.rs`).
#[test]
fn adopting_an_owned_fd_that_refuses_fionbio_does_not_panic() {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(std::env::temp_dir())
        .unwrap();
    let fd = std::os::fd::OwnedFd::from(file);
    let std_sock = std::net::UdpSocket::from(fd.try_clone().unwrap());
    assert!(std_sock.local_addr().is_err());
    let r = std::panic::catch_unwind(move || UdpSocket::from(fd).local_addr().is_err());
    assert!(matches!(r, Ok(true)), "corio's From<OwnedFd> panicked");
}
