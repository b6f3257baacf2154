//! What would an io_uring backend save over epoll for corio's echo load, on this machine?
//!
//! Two minimal single-threaded TCP echo servers that do the same work per message, so that
//! the difference between them is the system-call interface and nothing else:
//!
//! - `epoll`: level-triggered `epoll_wait`, then one `recv` and one `send` per message — the
//!   calls corio's and tokio's servers make per message.
//! - `uring`: one `recv` outstanding per connection; when it completes, a `send` of what came
//!   linked to the connection's next `recv`; everything queued in a batch is submitted by the
//!   one `io_uring_enter` that also waits for the next completions (`SINGLE_ISSUER`,
//!   `DEFER_TASKRUN`: completions are reaped only there). A batch of messages costs one kernel
//!   entry instead of two per message.
//!
//! And two controls, each `epoll` with one thing changed, to say where `uring`'s gain comes
//! from and what a runtime's threads cost (`docs/net-bench.md`, "Seventeenth pass"):
//!
//! - `burst`: the same calls, but every ready socket of a batch is read before any reply is
//!   sent, so the replies leave in one burst, as `uring`'s do;
//! - `epoll-mt`: `epoll` in a process with a second, idle thread. The descriptor table is then
//!   shared, and the kernel's `fdget` takes and drops a reference on every call with a
//!   descriptor (a single-threaded process borrows it), as in every server with a thread
//!   besides the one serving (corio's worker, its sysmon and the main thread; may's).
//!
//! The same two interfaces as minimal HTTP servers for `wrk`'s `GET /plaintext`, to ask whether
//! a backend could move the `http` cells, where `wrk` on the other CPU sets the rate
//! (`docs/net-bench.md`, "Nineteenth pass"):
//!
//! - `http-epoll`: level-triggered `epoll_wait` (blocking), then per ready connection one
//!   `recv` and one `send` of the replies to every request the bytes complete (pipelined
//!   requests too);
//! - `http-epoll-spin`: `http-epoll` polling with a zero timeout, never sleeping (a server
//!   that spins, as corio's only worker does while its sockets are busy);
//! - `http-epoll-drain`: `http-epoll` reading each ready connection until `EAGAIN` (replying
//!   after each read), as may_minihttp's connections do (2 `recvfrom` per request);
//! - `http-uring`: `uring`'s loop with that reply in place of the echo.
//!
//! Settings from the environment: `UX_NODELAY=0` leaves `TCP_NODELAY` off on accepted
//! connections (every mode), as may_minihttp does; `UX_WORK_NS=N` makes the `http-epoll*`
//! servers spend N ns before each reply (`pause` instructions, or arithmetic with
//! `UX_WORK=alu`); `UX_SPIN_PAUSES=K` makes `http-epoll-spin` execute K `pause`s after each
//! poll that found nothing, and `UX_NAP_NS=N` makes it sleep N ns then (with a timer slack of
//! 1 ns).
//!
//! The reply is may_minihttp's byte for byte but for a fixed date (126 bytes). Requests are
//! counted by their `\r\n\r\n`, across reads; nothing else of them is parsed.
//!
//! `uring-echo MODE` prints `@addr HOST:PORT` like `corio-bench __child echo serve`, so
//! `rotate.sh` can put the echo servers beside corio's and the peers' under corio-bench's own
//! echo load. It also takes corio-bench's form, `uring-echo __child GROUP serve MODE`, so that
//! `../pair.sh` can run an HTTP mode as server A against one of corio-bench's (`BIN_A`):
//! `BIN_A=scripts/uring-echo/target/release/uring-echo scripts/pair.sh 16 2 ka 64
//! target/release/corio-bench http-uring may_minihttp`. No server here is a product: no error
//! handling beyond what the measurement needs.

use std::io::Write;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, IntoRawFd};

/// Receive buffer per connection.
const BUF: usize = 4096;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `MODE`, or corio-bench's `__child GROUP serve MODE`.
    let mode = match args.get(1).map(String::as_str) {
        Some("__child") => args.get(4).cloned().unwrap_or_default(),
        _ => args.get(1).cloned().unwrap_or_default(),
    };
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    println!("@addr {}", listener.local_addr().expect("local_addr"));
    std::io::stdout().flush().expect("stdout");
    match mode.as_str() {
        "epoll" => epoll(listener, false),
        "http-epoll" => http_epoll(listener, false, false),
        "http-epoll-spin" => http_epoll(listener, true, false),
        "http-epoll-drain" => http_epoll(listener, false, true),
        "http-uring" => uring(listener, true),
        "uring" => uring(listener, false),
        "burst" => epoll(listener, true),
        "epoll-mt" => {
            // A second thread that does nothing: the process's descriptor table is shared,
            // so the kernel's `fdget` takes a reference on every call.
            std::thread::spawn(|| {
                loop {
                    std::thread::park();
                }
            });
            epoll(listener, false)
        }
        _ => {
            eprintln!(
                "usage: uring-echo [__child GROUP serve] \
                 epoll|uring|burst|epoll-mt|http-epoll|http-epoll-spin|http-epoll-drain|http-uring"
            );
            std::process::exit(2);
        }
    }
}

/// Sets `TCP_NODELAY` on `fd`, as corio's and the peers' echo servers do.
fn nodelay(fd: i32) {
    if std::env::var_os("UX_NODELAY").is_some_and(|v| v == "0") {
        return;
    }
    let one: libc::c_int = 1;
    // SAFETY: `fd` is an open socket; the option value is a valid c_int of the length passed.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

/// Watches `fd` for input on `ep`, tagged `tag`.
fn watch(ep: i32, fd: i32, tag: u64) {
    let mut ev = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: tag,
    };
    // SAFETY: both descriptors are open and `ev` is a valid event.
    let r = unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
    assert_eq!(r, 0, "epoll_ctl: {}", std::io::Error::last_os_error());
}

/// A new epoll instance watching `listener`, made nonblocking, tagged `u64::MAX`: (epoll,
/// listener) descriptors.
fn listening_epoll(listener: &TcpListener) -> (i32, i32) {
    listener.set_nonblocking(true).expect("nonblocking");
    let lfd = listener.as_raw_fd();
    // SAFETY: a plain system call with no pointer arguments.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    assert!(
        ep >= 0,
        "epoll_create1: {}",
        std::io::Error::last_os_error()
    );
    watch(ep, lfd, u64::MAX);
    (ep, lfd)
}

/// The `epoll` server, or with `burst` the `burst` control: the same calls, but every ready
/// socket of a batch is read before any reply is sent.
fn epoll(listener: TcpListener, burst: bool) {
    let (ep, lfd) = listening_epoll(&listener);
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    // One buffer per event of a batch; without `burst` only the first is used.
    let mut bufs = vec![[0u8; BUF]; 256];
    // With `burst`: the batch's received echoes (descriptor, length), `bufs[i]` holding the i-th.
    let mut held: Vec<(i32, usize)> = Vec::with_capacity(256);
    loop {
        // SAFETY: `events` has room for the 256 entries passed.
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), 256, -1) };
        for e in &events[..n.max(0) as usize] {
            if e.u64 == u64::MAX {
                accept_all(ep, lfd);
                continue;
            }
            let fd = e.u64 as i32;
            let buf = &mut bufs[held.len()];
            // SAFETY: `buf` is valid for `BUF` bytes of writes.
            let got = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), BUF, 0) };
            if got > 0 {
                if burst {
                    held.push((fd, got as usize));
                } else {
                    send_echo(fd, &buf[..got as usize]);
                }
            } else if got == 0
                || std::io::Error::last_os_error().raw_os_error() != Some(libc::EAGAIN)
            {
                // SAFETY: `fd` is a connection this loop accepted and closes once (closing
                // also removes it from the epoll set).
                unsafe { libc::close(fd) };
            }
        }
        for (i, (fd, len)) in held.drain(..).enumerate() {
            send_echo(fd, &bufs[i][..len]);
        }
    }
}

/// Accepts every pending connection of the listener `lfd` and watches it on `ep`.
fn accept_all(ep: i32, lfd: i32) {
    // SAFETY: `lfd` is the listener; no address is asked for.
    while let fd @ 0.. = unsafe {
        libc::accept4(
            lfd,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    } {
        nodelay(fd);
        watch(ep, fd, fd as u64);
    }
}

/// The reply to one `GET /plaintext`: may_minihttp's, with a fixed date.
const REPLY: &[u8] = b"HTTP/1.1 200 Ok\r\nServer: M\r\nDate: Sat, 05 Dec 2026 09:05:50 GMT\r\n\
Content-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, World!";

/// The most requests one read may complete (`wrk`'s pipelining sends 16 at a time).
const MAX_BATCH: usize = 64;

/// `MAX_BATCH` replies back to back: the reply to `n` requests is its first `n * REPLY.len()`
/// bytes.
fn replies() -> &'static [u8] {
    static R: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    R.get_or_init(|| REPLY.repeat(MAX_BATCH))
}

/// Counts the requests `bytes` complete: the `\r\n\r\n`s, with `state` (how much of one the
/// connection's last read ended in) carried across reads.
fn requests_in(state: &mut u8, bytes: &[u8]) -> usize {
    let mut n = 0;
    for &b in bytes {
        *state = match (*state, b) {
            (0 | 2, b'\r') => *state + 1,
            (1, b'\n') => 2,
            (3, b'\n') => {
                n += 1;
                0
            }
            (_, b'\r') => 1,
            _ => 0,
        };
    }
    assert!(n <= MAX_BATCH, "more than {MAX_BATCH} requests in one read");
    n
}

/// The `http-epoll` server: level-triggered `epoll_wait`, then per ready connection one `recv`
/// and one `send` of the replies to the requests it completed.
fn http_epoll(listener: TcpListener, spin: bool, drain: bool) {
    let (ep, lfd) = listening_epoll(&listener);
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut buf = [0u8; BUF];
    let mut states: Vec<u8> = Vec::new();
    loop {
        let timeout = if spin { 0 } else { -1 };
        // SAFETY: `events` has room for the 256 entries passed.
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), 256, timeout) };
        if spin && n == 0 {
            static P: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
            let p = *P.get_or_init(|| {
                std::env::var("UX_SPIN_PAUSES")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0)
            });
            for _ in 0..p {
                std::hint::spin_loop();
            }
            static NAP: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
            let nap = *NAP.get_or_init(|| {
                let ns = std::env::var("UX_NAP_NS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                // SAFETY: a plain prctl with integer arguments.
                unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
                ns
            });
            if nap > 0 {
                let ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: nap,
                };
                // SAFETY: `ts` is a valid timespec; no remainder is asked for.
                unsafe {
                    libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, std::ptr::null_mut())
                };
            }
        }
        for e in &events[..n.max(0) as usize] {
            if e.u64 == u64::MAX {
                accept_all(ep, lfd);
                continue;
            }
            let fd = e.u64 as i32;
            loop {
                // SAFETY: `buf` is valid for `BUF` bytes of writes.
                let got = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), BUF, 0) };
                if got > 0 {
                    if states.len() <= fd as usize {
                        states.resize(fd as usize + 1, 0);
                    }
                    let n = requests_in(&mut states[fd as usize], &buf[..got as usize]);
                    if n > 0 {
                        work_before_reply();
                        send_echo(fd, &replies()[..n * REPLY.len()]);
                    }
                    if drain {
                        continue; // read again, until `EAGAIN`
                    }
                } else if got == 0
                    || std::io::Error::last_os_error().raw_os_error() != Some(libc::EAGAIN)
                {
                    if let Some(state) = states.get_mut(fd as usize) {
                        *state = 0;
                    }
                    // SAFETY: `fd` is a connection this loop accepted and closes once (closing
                    // also removes it from the epoll set).
                    unsafe { libc::close(fd) };
                }
                break;
            }
        }
    }
}

/// Sends `echo` back on `fd` in one call.
fn send_echo(fd: i32, echo: &[u8]) {
    // SAFETY: `echo` is valid for reads of its length.
    let sent = unsafe { libc::send(fd, echo.as_ptr().cast(), echo.len(), libc::MSG_NOSIGNAL) };
    assert_eq!(sent, echo.len() as isize, "a short send of an echo");
}

/// What a completion was for: the low two bits of its `user_data` (the connection's fd above).
const ACCEPT: u64 = 0;
const RECV: u64 = 1;
const SEND: u64 = 2;

/// The `uring` server, or with `http` the `http-uring` one (the replies to the requests a
/// receive completed in place of its echo).
fn uring(listener: TcpListener, http: bool) {
    use io_uring::{IoUring, opcode, squeue, types};

    let lfd = listener.into_raw_fd();
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_coop_taskrun()
        .build(4096)
        .expect("io_uring_setup (needs Linux 6.1 for DEFER_TASKRUN)");
    // One buffer per descriptor number, boxed so that it never moves while the kernel holds
    // a pointer into it (the Vec of boxes may reallocate; the boxes stay put).
    let mut bufs: Vec<Box<[u8; BUF]>> = Vec::new();
    let mut buf_of = |fd: usize| -> *mut u8 {
        while bufs.len() <= fd {
            bufs.push(Box::new([0; BUF]));
        }
        bufs[fd].as_mut_ptr()
    };
    let recv = |fd: usize, buf: *mut u8| {
        opcode::Recv::new(types::Fd(fd as i32), buf, BUF as u32)
            .build()
            .user_data((fd as u64) << 2 | RECV)
    };
    let accept = opcode::Accept::new(types::Fd(lfd), std::ptr::null_mut(), std::ptr::null_mut())
        .build()
        .user_data(ACCEPT);
    let mut queue = vec![accept.clone()];
    let mut done: Vec<(u64, i32)> = Vec::with_capacity(1024);
    // `http`: per descriptor, how much of a `\r\n\r\n` its last receive ended in.
    let mut states: Vec<u8> = Vec::new();
    loop {
        for sqe in queue.drain(..) {
            // SAFETY: every buffer an entry points into is a box in `bufs`, which lives for
            // the whole loop, or (an `http` reply) the static `replies()`; a connection's box
            // is used by one operation at a time (its send, then the recv linked after it).
            unsafe { ring.submission().push(&sqe) }.expect("the submission queue is full");
        }
        ring.submit_and_wait(1).expect("io_uring_enter");
        done.clear();
        done.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        for &(user_data, res) in &done {
            let fd = (user_data >> 2) as usize;
            match user_data & 3 {
                ACCEPT => {
                    assert!(
                        res >= 0,
                        "accept: {}",
                        std::io::Error::from_raw_os_error(-res)
                    );
                    let conn = res as usize;
                    nodelay(conn as i32);
                    queue.push(recv(conn, buf_of(conn)));
                    queue.push(accept.clone());
                }
                RECV if res > 0 => {
                    let buf = buf_of(fd);
                    let (reply, len) = if http {
                        while states.len() <= fd {
                            states.push(0);
                        }
                        // SAFETY: the receive into `buf` completed with `res` bytes, and no
                        // operation of this connection is in flight.
                        let got = unsafe { std::slice::from_raw_parts(buf, res as usize) };
                        let n = requests_in(&mut states[fd], got);
                        if n == 0 {
                            queue.push(recv(fd, buf));
                            continue;
                        }
                        // `replies()` is static: it outlives the send.
                        (replies().as_ptr(), n * REPLY.len())
                    } else {
                        (buf.cast_const(), res as usize)
                    };
                    // A send that succeeds posts no completion (SKIP_SUCCESS); the next recv
                    // runs once it has (IO_LINK), into the same buffer.
                    queue.push(
                        opcode::Send::new(types::Fd(fd as i32), reply, len as u32)
                            .flags(libc::MSG_NOSIGNAL)
                            .build()
                            .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
                            .user_data((fd as u64) << 2 | SEND),
                    );
                    queue.push(recv(fd, buf));
                }
                // The recv after a failed send, cancelled: the send's completion closes.
                RECV if res == -libc::ECANCELED => {}
                // End of stream, an error, or a failed send.
                _ => {
                    if let Some(state) = states.get_mut(fd) {
                        *state = 0;
                    }
                    // SAFETY: `fd` is a connection this loop accepted; nothing of it is in
                    // flight any more (its recv completed, or its send failed and the linked
                    // recv was cancelled), and it is closed once.
                    unsafe { libc::close(fd as i32) };
                }
            }
        }
    }
}

/// `http-epoll*`: `UX_WORK_NS` nanoseconds of `pause` instructions (or of arithmetic, with
/// `UX_WORK=alu`) before each reply, a server made slower on purpose.
fn work_before_reply() {
    static CFG: std::sync::OnceLock<(u64, bool)> = std::sync::OnceLock::new();
    let &(ns, pause) = CFG.get_or_init(|| {
        let ns = std::env::var("UX_WORK_NS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        (ns, std::env::var("UX_WORK").as_deref() != Ok("alu"))
    });
    if ns == 0 {
        return;
    }
    let start = std::time::Instant::now();
    let mut x = 1u64;
    while start.elapsed().as_nanos() < ns as u128 {
        for _ in 0..16 {
            if pause {
                std::hint::spin_loop();
            } else {
                x = std::hint::black_box(
                    x.wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407),
                );
            }
        }
    }
    std::hint::black_box(x);
}
