//! Review of the netpoller and the sockets (`io/registry.rs`, `io/source.rs`, `net/unix.rs`):
//! a Unix stream read that the kernel ends early with data behind it, a blocking-style Unix
//! `connect` in an async task at a full backlog, and a waker whose drop drops a socket,
//! left in a socket that is then dropped.
//!
//! Each test is bounded ([`LIMIT`]): a hang is a failure, not a stalled run.

#[macro_use]
mod support;

use std::io::{ErrorKind, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};

use corio::net::{UdpSocket, UnixListener, UnixStream};
use support::{TempDir, within};

/// The watchdog's limit for one test.
const LIMIT: Duration = Duration::from_secs(30);

/// Sends `data` on the Unix stream socket `sock` with the descriptor `fd` attached
/// (`SCM_RIGHTS`), as a peer that passes descriptors does.
fn send_with_fd(sock: RawFd, data: &[u8], fd: RawFd) {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // 8-byte aligned, as a `cmsghdr` must be, and larger than `CMSG_SPACE` of one descriptor.
    let mut control = [0u64; 4];
    // SAFETY: a pure computation on a constant.
    let space = unsafe { libc::CMSG_SPACE(size_of::<RawFd>() as u32) } as usize;
    assert!(space <= size_of_val(&control));
    // SAFETY: all-zero is a valid `msghdr` (null pointers, zero lengths).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: `msg` describes `control`, which has room for one header and one descriptor;
    // `CMSG_FIRSTHDR` of it is non-null and aligned, `CMSG_DATA` points inside `control`.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
    }
    // SAFETY: `msg` and everything it points to are valid for the call.
    let sent = unsafe { libc::sendmsg(sock, &msg, 0) };
    assert_eq!(
        sent,
        data.len() as isize,
        "{}",
        std::io::Error::last_os_error()
    );
}

/// The kernel ends a Unix stream read at a message that carried descriptors (`SCM_RIGHTS`),
/// however much data follows it: that read is short with data left in the socket. The
/// short-read rule (`io/registry.rs`, "the protocol") took it for a drained socket and
/// cleared the ready bit; the data behind it had announced itself with an edge already
/// applied, and no other edge comes, so the next read waited until the peer sent more (for
/// ever, if the peer waits for a reply).
#[test]
fn a_unix_stream_read_finds_the_data_behind_a_message_that_carried_descriptors() {
    within(LIMIT, || {
        let rt = support::rt(1);
        // Stackful, then async.
        for flavour in ["coroutine", "task"] {
            let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
            let reader = UnixStream::from_std(a).unwrap();
            let got = rt.run(move || {
                // Registered, and drained (an `EAGAIN` cleared the ready bit): a read that
                // times out.
                reader
                    .set_read_timeout(Some(Duration::from_millis(20)))
                    .unwrap();
                let mut buf = [0u8; 64];
                let e = (&reader).read(&mut buf).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::TimedOut);
                // One byte with a descriptor, then four bytes, both queued before any read.
                send_with_fd(b.as_raw_fd(), b"A", b.as_raw_fd());
                (&b).write_all(b"BBBB").unwrap();
                // The only worker parks: its poll applies the edges.
                corio::sleep(Duration::from_millis(100));
                reader
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let mut got = Vec::new();
                if flavour == "coroutine" {
                    while got.len() < 5 {
                        match (&reader).read(&mut buf) {
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                            Err(e) => return Err(format!("{flavour}: after {got:?}: {e}")),
                        }
                    }
                } else {
                    let reader = Arc::new(reader);
                    let task = corio::spawn(async move {
                        let mut got = Vec::new();
                        let mut buf = [0u8; 64];
                        while got.len() < 5 {
                            let read = corio::time::timeout_async(
                                Duration::from_secs(5),
                                reader.read_async(&mut buf),
                            )
                            .await;
                            match read {
                                Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
                                other => return Err(format!("after {got:?}: {other:?}")),
                            }
                        }
                        Ok(got)
                    });
                    got = task
                        .join()
                        .unwrap()
                        .map_err(|e| format!("{flavour}: {e}"))?;
                }
                drop(b);
                Ok(got)
            });
            assert_eq!(got.unwrap(), b"ABBBB", "{flavour}");
        }
    });
}

/// `UnixStream::connect` inside an async task, at a full backlog: a blocking-style call that
/// would wait must panic with advice (`docs/io.md`: the `_async` form), as `TcpStream::connect`
/// does when its connect is in progress. It called `std`'s blocking `connect`, which held the
/// worker in the kernel until a server accepted — for ever when the acceptor runs on that
/// worker.
#[test]
fn a_unix_connect_in_an_async_task_at_a_full_backlog_panics_instead_of_stalling_the_worker() {
    within(LIMIT, || {
        let dir = TempDir::new("unix-connect-task");
        let path = dir.join("sock");
        let rt = support::rt(1);
        let listener = UnixListener::bind(&path).unwrap();
        // SAFETY: `listen` on our listening socket only lowers its backlog.
        assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
        // Fills the backlog (one connection, never accepted yet).
        let _queued = std::os::unix::net::UnixStream::connect(&path).unwrap();
        let p = path.clone();
        let task = rt.spawn(async move { UnixStream::connect(&p).map(drop) });
        let start = Instant::now();
        while !task.is_finished() && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let stalled = !task.is_finished();
        if stalled {
            // Frees the worker held in the kernel's connect, so the runtime can go.
            let _accepted = listener.accept().unwrap();
        }
        let result = task.join();
        assert!(
            !stalled,
            "the task held its worker in connect for 5 s (then: {result:?})"
        );
        let e = result.expect_err("a connect that must wait returned");
        assert!(e.is_panic(), "{e:?}");
        let message = support::payload_text(&*e.into_panic());
        assert!(message.contains("connect_async"), "{message}");
    });
}

/// A waker that holds a socket: its last reference's drop drops that socket (a hand-written
/// executor's waker that owns its task's future does this, and so may any `Waker`).
struct HoldsSocket(#[allow(dead_code)] Mutex<Option<UdpSocket>>);

impl Wake for HoldsSocket {
    fn wake(self: Arc<Self>) {}
}

/// A socket released with a waker still in its slot (a `poll_read` whose caller stopped
/// polling) drops that waker. It did so under the registry's lock (`Registry::remove` →
/// `ScheduledIo::reset`); a waker whose drop drops another socket of the same runtime
/// then took that lock again on the same thread (the second socket's release): a deadlock.
#[test]
fn dropping_a_socket_whose_leftover_waker_holds_another_socket_does_not_deadlock() {
    within(LIMIT, || {
        let rt = support::rt(1);
        let (first, _peer) = UnixStream::pair().unwrap();
        let second = UdpSocket::bind("127.0.0.1:0").unwrap();
        // Both registered with `rt`, and drained: a read that times out on each.
        let (first, second) = rt.run(move || {
            let mut buf = [0u8; 8];
            first
                .set_read_timeout(Some(Duration::from_millis(20)))
                .unwrap();
            let e = (&first).read(&mut buf).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
            second
                .set_read_timeout(Some(Duration::from_millis(20)))
                .unwrap();
            let e = second.recv(&mut buf).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
            (first, second)
        });
        let waker = Waker::from(Arc::new(HoldsSocket(Mutex::new(Some(second)))));
        let mut cx = Context::from_waker(&waker);
        let mut buf = [MaybeUninit::<u8>::uninit(); 8];
        assert!(first.poll_read_uninit(&mut cx, &mut buf).is_pending());
        // `first`'s slot holds the only reference left.
        drop(waker);
        drop(first);
        drop(rt);
    });
}

/// A waker that holds a handle to a socket: its wake drops that handle, which closes the
/// socket for the other handles (`try_clone`), as a hand-written executor's task owning such a
/// handle would when its waker is woken after the executor has gone; then it sets `closed`.
struct HoldsHandle {
    handle: Mutex<Option<UnixStream>>,
    closed: Arc<AtomicBool>,
}

impl Wake for HoldsHandle {
    /// Consumes the reference: the executor has gone, nothing takes the task.
    fn wake(self: Arc<Self>) {
        drop(self.handle.lock().unwrap().take());
        self.closed.store(true, SeqCst);
    }
}

/// A waker with nothing behind it.
struct Nothing;

impl Wake for Nothing {
    fn wake(self: Arc<Self>) {}
}

/// An edge wakes the second waiter on a direction (the one in the list behind the slot). It
/// woke the list's wakers under the list's lock; a waker whose wake dropped a handle to the
/// same socket closed it for the others there (`ScheduledIo::close` takes that lock): the
/// poller deadlocked, and with it the runtime's IO.
#[test]
fn a_listed_waker_whose_wake_closes_its_socket_does_not_deadlock_the_poller() {
    within(LIMIT, || {
        let rt = support::rt(1);
        let (socket, peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let socket = UnixStream::from_std(socket).unwrap();
        // Registered with `rt`, and drained.
        let socket = rt.run(move || {
            socket
                .set_read_timeout(Some(Duration::from_millis(20)))
                .unwrap();
            let e = (&socket).read(&mut [0u8; 8]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
            socket
        });
        let mut buf = [MaybeUninit::<u8>::uninit(); 8];
        // The slot's waiter, then the list's, whose waker holds the only other handle.
        let first = Waker::from(Arc::new(Nothing));
        assert!(
            socket
                .poll_read_uninit(&mut Context::from_waker(&first), &mut buf)
                .is_pending()
        );
        let closed = Arc::new(AtomicBool::new(false));
        let second = Waker::from(Arc::new(HoldsHandle {
            handle: Mutex::new(Some(socket.try_clone().unwrap())),
            closed: closed.clone(),
        }));
        assert!(
            socket
                .poll_read_uninit(&mut Context::from_waker(&second), &mut buf)
                .is_pending()
        );
        drop(second);
        // The edge: the runtime's poller wakes both.
        (&peer).write_all(b"x").unwrap();
        // The wake closes the other handle (a poller deadlocked by it never returns from it),
        // and only then is the socket looked at: a look before would read the byte.
        let start = Instant::now();
        while !closed.load(SeqCst) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the edge did not wake the listed waiter, or its wake did not return"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        match socket.poll_read_uninit(&mut Context::from_waker(&first), &mut buf) {
            std::task::Poll::Ready(r) => {
                assert_eq!(r.unwrap_err().kind(), ErrorKind::NotConnected)
            }
            std::task::Poll::Pending => panic!("a closed socket's read is pending"),
        }
        // The runtime still polls.
        let (a, b) = UnixStream::pair().unwrap();
        let echoed = rt.run(move || {
            (&a).write_all(b"y").unwrap();
            let mut got = [0u8; 1];
            (&b).read_exact(&mut got).unwrap();
            got
        });
        assert_eq!(&echoed, b"y");
    });
}

/// A coroutine cancelled by the runtime's drop whose destructor talks to a peer (a request,
/// then a blocking-style read of the reply, as a graceful close does): the drain that unwinds
/// it must still deliver its socket's readiness, or the coroutine is leaked with its socket
/// after the grace period.
#[test]
fn a_destructor_that_reads_a_reply_while_the_runtime_drops_gets_it() {
    within(LIMIT, || {
        let rt = support::rt(1);
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let a = UnixStream::from_std(a).unwrap();
        // The peer answers each byte with one.
        let peer = std::thread::spawn(move || {
            let mut byte = [0u8; 1];
            while (&b).read(&mut byte).is_ok_and(|n| n == 1) {
                (&b).write_all(&byte).unwrap();
            }
        });
        let (tx, rx) = std::sync::mpsc::channel();
        struct Goodbye(UnixStream, std::sync::mpsc::Sender<std::io::Result<usize>>);
        impl Drop for Goodbye {
            fn drop(&mut self) {
                let mut reply = [0u8; 1];
                let got = (&self.0)
                    .write_all(b"q")
                    .and_then(|()| (&self.0).read(&mut reply));
                let _ = self.1.send(got);
            }
        }
        let started = Arc::new(std::sync::Barrier::new(2));
        let s = started.clone();
        rt.go(move || {
            let goodbye = Goodbye(a, tx);
            // Registered: one exchange.
            (&goodbye.0).write_all(b"h").unwrap();
            (&goodbye.0).read_exact(&mut [0u8; 1]).unwrap();
            s.wait();
            corio::sleep(Duration::from_secs(3600));
            drop(goodbye);
        });
        started.wait();
        drop(rt);
        let got = rx.try_recv();
        assert!(
            matches!(got, Ok(Ok(1))),
            "the destructor's read during the drop: {got:?}"
        );
        // The destructor ran to its end, and dropped the socket: the peer reads the end.
        peer.join().unwrap();
    });
}

/// A plain thread waiting to write into a full TCP socket polls the socket alone (it needs no
/// eventfd: `tests/net_review_fds.rs`), and that wakes it when another handle shuts the write
/// side down: the write ends with `BrokenPipe`, as `std`'s blocking write.
#[test]
fn a_plain_thread_waiting_to_write_into_tcp_wakes_at_the_shutdown_of_its_write_side() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let std_client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (_server, _) = listener.accept().unwrap();
    let client = corio::net::TcpStream::from_std(std_client).unwrap();
    let other = client.try_clone().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        let chunk = [7u8; 64 * 1024];
        let e = loop {
            if let Err(e) = (&client).write(&chunk) {
                break e;
            }
        };
        tx.send(e.kind()).unwrap();
        client
    });
    // Most likely waiting in `poll` by then (if not, its next write finds the shutdown).
    std::thread::sleep(Duration::from_millis(200));
    other.shutdown(std::net::Shutdown::Write).unwrap();
    let kind = rx
        .recv_timeout(support::EVENTUALLY)
        .expect("the writer did not wake at the shutdown");
    assert_eq!(kind, ErrorKind::BrokenPipe);
    drop(writer.join().unwrap());
}
