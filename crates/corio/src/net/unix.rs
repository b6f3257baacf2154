//! Unix-domain sockets: [`UnixListener`], [`UnixStream`], [`UnixDatagram`].

use std::io;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::os::unix::net::{self as std_unix, SocketAddr};
use std::path::Path;

use super::addr;
use crate::io::registry::Direction;
use crate::io::source::Shared;
use crate::runtime::context::{self, Here};

/// A Unix-domain stream server socket; `accept` backs off at descriptor exhaustion, and passes
/// over aborted connections, as [`TcpListener`](super::TcpListener)'s does.
///
/// ```
/// use std::io::{Read, Write};
///
/// let dir = std::env::temp_dir().join(format!("corio-doc-unix-{}", std::process::id()));
/// let _ = std::fs::remove_file(&dir);
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let path = dir.clone();
/// rt.run(move || {
///     let listener = corio::net::UnixListener::bind(&path).unwrap();
///     let client = corio::go(move || {
///         let mut s = corio::net::UnixStream::connect(&path).unwrap();
///         s.write_all(b"hi").unwrap();
///     });
///     let (mut s, _) = listener.accept().unwrap();
///     let mut buf = [0; 2];
///     s.read_exact(&mut buf).unwrap();
///     assert_eq!(&buf, b"hi");
///     client.join().unwrap();
/// });
/// std::fs::remove_file(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct UnixListener {
    sock: Shared<std_unix::UnixListener>,
}

impl UnixListener {
    /// Binds a listening socket at `path` (`AddrInUse` if something is there, as `std`).
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixListener> {
        UnixListener::from_std(std_unix::UnixListener::bind(path)?)
    }

    /// Binds a listening socket at `addr` (a path or, on Linux, an abstract name).
    pub fn bind_addr(addr: &SocketAddr) -> io::Result<UnixListener> {
        UnixListener::from_std(std_unix::UnixListener::bind_addr(addr)?)
    }

    /// Wraps a `std` listener (made nonblocking here).
    pub fn from_std(listener: std_unix::UnixListener) -> io::Result<UnixListener> {
        listener.set_nonblocking(true)?;
        Ok(UnixListener {
            sock: Shared::new(listener),
        })
    }

    /// Accepts a connection, blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`accept_async`](Self::accept_async).
    #[track_caller]
    pub fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let (stream, peer) = addr::accept(&self.sock, |l| l.accept())?;
        Ok((UnixStream::from_std(stream)?, peer))
    }

    /// Accepts a connection.
    pub async fn accept_async(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let (stream, peer) = addr::accept_async(&self.sock, |l| l.accept()).await?;
        Ok((UnixStream::from_std(stream)?, peer))
    }

    /// An iterator over accepted connections, as [`accept`](Self::accept)'s; it ends when the
    /// listener is closed through another handle, as
    /// [`TcpListener::incoming`](crate::net::TcpListener::incoming)'s.
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.open()?.local_addr()
    }

    /// Takes the socket's pending error (`SO_ERROR`).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.sock.open()?.take_error()
    }

    nonblocking_method!(
        sock,
        "use std::os::linux::net::SocketAddrExt;
let name = format!(\"corio-doc-nonblocking-{}\", std::process::id());
let addr = std::os::unix::net::SocketAddr::from_abstract_name(name).unwrap();
let socket = corio::net::UnixListener::bind_addr(&addr).unwrap();",
        "socket.accept()"
    );

    /// Hands the socket back as a `std` listener, in blocking mode (as `std` makes its sockets;
    /// tokio's `into_std` leaves them nonblocking), out of every corio epoll set: a socket that
    /// waited inside a runtime is removed from that runtime's. It can be adopted again with
    /// [`from_std`](Self::from_std), by any runtime. Timeouts set with corio do not carry over;
    /// nonblocking mode ([`set_nonblocking`](Self::set_nonblocking)) does.
    ///
    /// # Errors
    ///
    /// `ErrorKind::ResourceBusy` if other handles share the socket
    /// ([`try_clone`](Self::try_clone)): this handle is given up quietly, and the others keep
    /// the socket open and working (the descriptor cannot be taken from them; `IntoRawFd`
    /// hands out a duplicate instead).
    /// `ErrorKind::NotConnected` if another handle closed the socket.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("corio-doc-into-std-{}", std::process::id()));
    /// let _ = std::fs::remove_file(&path);
    /// let listener = corio::net::UnixListener::bind(&path).unwrap().into_std().unwrap();
    /// let to = path.clone();
    /// let client = std::thread::spawn(move || std::os::unix::net::UnixStream::connect(to));
    /// let (_connection, _) = listener.accept().unwrap(); // std's accept, blocking
    /// client.join().unwrap().unwrap();
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn into_std(self) -> io::Result<std_unix::UnixListener> {
        self.sock.into_std()
    }

    /// A second handle to the same listener (see `docs/io.md`: dropping either closes it).
    pub fn try_clone(&self) -> io::Result<UnixListener> {
        Ok(UnixListener {
            sock: self.sock.share()?,
        })
    }
}

fd_traits!(UnixListener, sock, std_unix::UnixListener);

/// The iterator of [`UnixListener::incoming`].
#[derive(Debug)]
pub struct Incoming<'a> {
    listener: &'a UnixListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<UnixStream>;

    fn next(&mut self) -> Option<io::Result<UnixStream>> {
        match self.listener.accept() {
            Err(_) if self.listener.sock.is_closed() => None,
            accepted => Some(accepted.map(|(stream, _)| stream)),
        }
    }
}

/// A Unix-domain stream connection: `Read`/`Write` blocking-style, `_async` methods and the
/// `futures_io` (and `tokio::io`) traits, as [`TcpStream`](super::TcpStream).
#[derive(Debug)]
pub struct UnixStream {
    sock: Shared<std_unix::UnixStream>,
}

impl UnixStream {
    /// Connects to the socket at `path`. A Unix connect does not wait for the server, unless
    /// its backlog is full: then, as `std`'s, it waits until the server accepts enough — in a
    /// coroutine by sleeping and trying again (1 ms, doubling to 100 ms: a full backlog gives
    /// a nonblocking connect `EAGAIN` and nothing to wait on), on a plain thread in the
    /// kernel, as `std`'s.
    ///
    /// # Panics
    ///
    /// Inside an async task, if the connect would wait (a full backlog): use
    /// [`connect_async`](Self::connect_async) there. (It held the task's worker in the
    /// kernel's connect before: for ever, when the acceptor runs on that worker.)
    #[track_caller]
    pub fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        match context::here() {
            Here::Stackful(_) => UnixStream::connect_retrying(addr::UnixName::Path(path.as_ref())),
            Here::Stackless => UnixStream::connect_in_task(addr::UnixName::Path(path.as_ref())),
            Here::Thread => UnixStream::from_std(std_unix::UnixStream::connect(path)?),
        }
    }

    /// Connects to the socket at `addr` (a path or, on Linux, an abstract name), as
    /// [`connect`](Self::connect).
    ///
    /// # Panics
    ///
    /// As [`connect`](Self::connect): inside an async task, if the connect would wait.
    #[track_caller]
    pub fn connect_addr(addr: &SocketAddr) -> io::Result<UnixStream> {
        match context::here() {
            Here::Stackful(_) => UnixStream::connect_retrying(addr::UnixName::of(addr)),
            Here::Stackless => UnixStream::connect_in_task(addr::UnixName::of(addr)),
            Here::Thread => UnixStream::from_std(std_unix::UnixStream::connect_addr(addr)?),
        }
    }

    /// `connect` in an async task: one nonblocking try, which never waits (a call that never
    /// waits cannot stall the worker); at a full backlog, the panic every blocking-style call
    /// that would wait makes there.
    #[track_caller]
    fn connect_in_task(name: addr::UnixName<'_>) -> io::Result<UnixStream> {
        let (fd, addr, len) = addr::unix_socket(name)?;
        match addr::unix_connect(&fd, &addr, len) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => panic!(
                "a blocking-style corio::net::UnixStream::connect inside an async task would \
                 stall its worker (the listener's backlog is full): use `connect_async` and \
                 `.await` it"
            ),
            result => result.and_then(|()| UnixStream::from_fd(fd)),
        }
    }

    /// `connect` in a coroutine: at a full backlog, sleep and try again.
    fn connect_retrying(name: addr::UnixName<'_>) -> io::Result<UnixStream> {
        let (fd, addr, len) = addr::unix_socket(name)?;
        let mut backoff = addr::CONNECT_BACKOFF_MIN;
        loop {
            match addr::unix_connect(&fd, &addr, len) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    crate::sleep(backoff);
                    backoff = (backoff * 2).min(addr::CONNECT_BACKOFF_MAX);
                }
                result => return result.and_then(|()| UnixStream::from_fd(fd)),
            }
        }
    }

    /// Connects to the socket at `path`; at a full backlog the task sleeps and tries again
    /// (see [`connect`](Self::connect)).
    pub async fn connect_async<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        UnixStream::connect_name_async(addr::UnixName::Path(path.as_ref())).await
    }

    /// Connects to the socket at `addr` (a path or, on Linux, an abstract name), as
    /// [`connect_async`](Self::connect_async).
    ///
    /// ```
    /// # #[cfg(target_os = "linux")] {
    /// use std::os::linux::net::SocketAddrExt;
    /// use std::os::unix::net::SocketAddr;
    /// use corio::net::{UnixListener, UnixStream};
    ///
    /// let name = format!("corio-doc-{}", std::process::id());
    /// let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    /// corio::Runtime::new().unwrap().block_on(async {
    ///     let listener = UnixListener::bind_addr(&addr).unwrap();
    ///     let client = UnixStream::connect_addr_async(&addr).await.unwrap();
    ///     let (server, _) = listener.accept_async().await.unwrap();
    ///     client.write_all_async(b"hi").await.unwrap();
    ///     let mut buf = [0; 2];
    ///     server.read_exact_async(&mut buf).await.unwrap();
    ///     assert_eq!(&buf, b"hi");
    /// });
    /// # }
    /// ```
    pub async fn connect_addr_async(addr: &SocketAddr) -> io::Result<UnixStream> {
        UnixStream::connect_name_async(addr::UnixName::of(addr)).await
    }

    /// The two `_async` connects: at a full backlog, sleep and try again.
    async fn connect_name_async(name: addr::UnixName<'_>) -> io::Result<UnixStream> {
        let (fd, addr, len) = addr::unix_socket(name)?;
        let mut backoff = addr::CONNECT_BACKOFF_MIN;
        loop {
            match addr::unix_connect(&fd, &addr, len) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    crate::time::sleep_async(backoff).await;
                    backoff = (backoff * 2).min(addr::CONNECT_BACKOFF_MAX);
                }
                result => return result.and_then(|()| UnixStream::from_fd(fd)),
            }
        }
    }

    /// Wraps a connected socket from `addr::unix_socket`.
    fn from_fd(fd: std::os::fd::OwnedFd) -> io::Result<UnixStream> {
        UnixStream::from_std(std_unix::UnixStream::from(fd))
    }

    /// A connected pair.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = std_unix::UnixStream::pair()?;
        Ok((UnixStream::from_std(a)?, UnixStream::from_std(b)?))
    }

    /// Wraps a `std` stream (made nonblocking here).
    pub fn from_std(stream: std_unix::UnixStream) -> io::Result<UnixStream> {
        stream.set_nonblocking(true)?;
        Ok(UnixStream {
            sock: Shared::new(stream),
        })
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.open()?.local_addr()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.sock.open()?.peer_addr()
    }

    /// Shuts down the read, write or both halves.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.sock.shutdown(how)
    }

    /// Takes the socket's pending error (`SO_ERROR`).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.sock.open()?.take_error()
    }

    timeout_methods!(sock);

    nonblocking_method!(
        sock,
        "let (socket, _peer) = corio::net::UnixStream::pair().unwrap();",
        "std::io::Read::read(&mut &socket, &mut [0; 8])"
    );

    /// Hands the socket back as a `std` stream, in blocking mode (as `std` makes its sockets;
    /// tokio's `into_std` leaves them nonblocking), out of every corio epoll set: a socket that
    /// waited inside a runtime is removed from that runtime's. It can be adopted again with
    /// [`from_std`](Self::from_std), by any runtime. Timeouts set with corio do not carry over;
    /// nonblocking mode ([`set_nonblocking`](Self::set_nonblocking)) does.
    ///
    /// # Errors
    ///
    /// `ErrorKind::ResourceBusy` if other handles share the socket
    /// ([`try_clone`](Self::try_clone)): this handle is given up quietly, and the others keep
    /// the socket open and working (the descriptor cannot be taken from them; `IntoRawFd`
    /// hands out a duplicate instead).
    /// `ErrorKind::NotConnected` if another handle closed the socket.
    ///
    /// ```
    /// use std::io::{Read, Write};
    ///
    /// let (a, mut b) = corio::net::UnixStream::pair().unwrap();
    /// let mut a = a.into_std().unwrap();
    /// b.write_all(b"hi").unwrap();
    /// let mut buf = [0; 2];
    /// a.read_exact(&mut buf).unwrap(); // std's read, blocking
    /// assert_eq!(&buf, b"hi");
    /// ```
    pub fn into_std(self) -> io::Result<std_unix::UnixStream> {
        self.sock.into_std()
    }

    /// A second handle to the same socket (see `docs/io.md`: dropping either closes it).
    pub fn try_clone(&self) -> io::Result<UnixStream> {
        Ok(UnixStream {
            sock: self.sock.share()?,
        })
    }
}

fd_traits!(UnixStream, sock, std_unix::UnixStream);

stream_face!(
    UnixStream,
    sock,
    std_unix::UnixStream,
    crate::io::sys::recv_unix_stream
);

owned_halves!(
    UnixStream,
    sock,
    "let (stream, peer) = std::os::unix::net::UnixStream::pair().unwrap();
(corio::net::UnixStream::from_std(stream).unwrap(), peer)"
);

/// A Unix-domain datagram receive's result, with a `WouldBlock` turned into the end `at_eof()`
/// once the socket's read side is shut down: the kernel's *blocking* receive then returns 0
/// at once (what `std` gives), its nonblocking one says `EAGAIN` — and the shutdown's
/// `EPOLLRDHUP` edge has come and gone, so a coroutine or task would wait for ever. `poll(2)`
/// tells (`POLLRDHUP`); it runs only on the way to a wait. A call that may not wait
/// (`may_wait` false: nonblocking mode) keeps the `WouldBlock`, as `std`'s nonblocking
/// socket does (the kernel reports the end without waiting only for `SOCK_SEQPACKET`).
fn received<R>(
    socket: &std_unix::UnixDatagram,
    result: io::Result<R>,
    may_wait: bool,
    at_eof: impl FnOnce() -> R,
) -> io::Result<R> {
    match result {
        Err(e) if may_wait && e.kind() == io::ErrorKind::WouldBlock && read_shut_down(socket) => {
            Ok(at_eof())
        }
        result => result,
    }
}

/// Whether `socket`'s read side is shut down.
fn read_shut_down(socket: &std_unix::UnixDatagram) -> bool {
    let mut pfd = libc::pollfd {
        fd: socket.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no timeout; an error leaves `revents` 0.
    let ready = unsafe { libc::poll(&mut pfd, 1, 0) };
    ready == 1 && pfd.revents & libc::POLLRDHUP != 0
}

/// The address of an unnamed socket: the sender a receive at the end reports, as `std`'s.
fn unnamed() -> SocketAddr {
    SocketAddr::from_pathname("").expect("an empty path is the unnamed address")
}

/// A Unix-domain datagram socket.
#[derive(Debug)]
pub struct UnixDatagram {
    sock: Shared<std_unix::UnixDatagram>,
}

impl UnixDatagram {
    /// Wraps a `std` socket (made nonblocking here).
    pub fn from_std(socket: std_unix::UnixDatagram) -> io::Result<UnixDatagram> {
        socket.set_nonblocking(true)?;
        Ok(UnixDatagram {
            sock: Shared::new(socket),
        })
    }

    /// Binds a socket at `path`.
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixDatagram> {
        UnixDatagram::from_std(std_unix::UnixDatagram::bind(path)?)
    }

    /// Binds a socket at `addr` (a path or, on Linux, an abstract name).
    pub fn bind_addr(addr: &SocketAddr) -> io::Result<UnixDatagram> {
        UnixDatagram::from_std(std_unix::UnixDatagram::bind_addr(addr)?)
    }

    /// A socket bound to no address.
    pub fn unbound() -> io::Result<UnixDatagram> {
        UnixDatagram::from_std(std_unix::UnixDatagram::unbound()?)
    }

    /// A connected pair.
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let (a, b) = std_unix::UnixDatagram::pair()?;
        Ok((UnixDatagram::from_std(a)?, UnixDatagram::from_std(b)?))
    }

    /// Hands the socket back as a `std` socket, in blocking mode (as `std` makes its sockets;
    /// tokio's `into_std` leaves them nonblocking), out of every corio epoll set: a socket that
    /// waited inside a runtime is removed from that runtime's. It can be adopted again with
    /// [`from_std`](Self::from_std), by any runtime. Timeouts set with corio do not carry over;
    /// nonblocking mode ([`set_nonblocking`](Self::set_nonblocking)) does.
    ///
    /// # Errors
    ///
    /// `ErrorKind::ResourceBusy` if other handles share the socket
    /// ([`try_clone`](Self::try_clone)): this handle is given up quietly, and the others keep
    /// the socket open and working (the descriptor cannot be taken from them; `IntoRawFd`
    /// hands out a duplicate instead).
    /// `ErrorKind::NotConnected` if another handle closed the socket.
    ///
    /// ```
    /// let (a, b) = corio::net::UnixDatagram::pair().unwrap();
    /// let a = a.into_std().unwrap();
    /// b.send(b"hi").unwrap();
    /// let mut buf = [0; 2];
    /// assert_eq!(a.recv(&mut buf).unwrap(), 2); // std's receive, blocking
    /// ```
    pub fn into_std(self) -> io::Result<std_unix::UnixDatagram> {
        self.sock.into_std()
    }

    /// Sets the peer for `send` and `recv`.
    pub fn connect<P: AsRef<Path>>(&self, path: P) -> io::Result<()> {
        self.sock.open()?.connect(path)
    }

    /// Sets the peer for `send` and `recv` to `addr` (a path or an abstract name).
    pub fn connect_addr(&self, addr: &SocketAddr) -> io::Result<()> {
        self.sock.open()?.connect_addr(addr)
    }

    /// Sends to `addr` (a path or an abstract name), blocking-style.
    ///
    /// While the destination's queue is full the call tries again after sleeping 50 µs,
    /// doubling to 10 ms: nothing tells a sender when another socket's queue drains (`std`'s
    /// blocking send waits inside the kernel, which corio cannot join).
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`send_to_addr_async`](Self::send_to_addr_async).
    #[track_caller]
    pub fn send_to_addr(&self, buf: &[u8], addr: &SocketAddr) -> io::Result<usize> {
        // The destination's queue decides, not this socket's readiness (`block_retrying`).
        self.sock
            .block_retrying(Direction::Write, |s| s.send_to_addr(buf, addr))
    }

    /// Sends to `addr` (a path or an abstract name).
    ///
    /// While the destination's queue is full the call tries again after sleeping 50 µs,
    /// doubling to 10 ms: nothing tells a sender when another socket's queue drains (`std`'s
    /// blocking send waits inside the kernel, which corio cannot join).
    pub async fn send_to_addr_async(&self, buf: &[u8], addr: &SocketAddr) -> io::Result<usize> {
        self.sock
            .retrying_async(|s| s.send_to_addr(buf, addr))
            .await
    }

    /// Shuts down the read, write or both halves (a later `send` is `BrokenPipe`, a `recv`
    /// returns `Ok(0)`), as `std`'s.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.sock.shutdown(how)
    }

    /// Takes the socket's pending error (`SO_ERROR`).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.sock.open()?.take_error()
    }

    /// Sends to the socket at `path`, blocking-style.
    ///
    /// While the destination's queue is full the call tries again after sleeping 50 µs,
    /// doubling to 10 ms: nothing tells a sender when another socket's queue drains (`std`'s
    /// blocking send waits inside the kernel, which corio cannot join).
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`send_to_async`](Self::send_to_async).
    #[track_caller]
    pub fn send_to<P: AsRef<Path>>(&self, buf: &[u8], path: P) -> io::Result<usize> {
        let path = path.as_ref();
        // The destination's queue decides, not this socket's readiness (`block_retrying`).
        self.sock
            .block_retrying(Direction::Write, |s| s.send_to(buf, path))
    }

    /// Sends to the socket at `path`.
    ///
    /// While the destination's queue is full the call tries again after sleeping 50 µs,
    /// doubling to 10 ms: nothing tells a sender when another socket's queue drains (`std`'s
    /// blocking send waits inside the kernel, which corio cannot join).
    pub async fn send_to_async<P: AsRef<Path>>(&self, buf: &[u8], path: P) -> io::Result<usize> {
        let path = path.as_ref();
        self.sock.retrying_async(|s| s.send_to(buf, path)).await
    }

    datagram_face!(sock, SocketAddr, received, unnamed());

    nonblocking_method!(
        sock,
        "let (socket, _peer) = corio::net::UnixDatagram::pair().unwrap();",
        "socket.recv(&mut [0; 8])"
    );
}

fd_traits!(UnixDatagram, sock, std_unix::UnixDatagram);
