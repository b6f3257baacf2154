//! TCP: [`TcpListener`] and [`TcpStream`].

use std::io;
use std::net::{Shutdown, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Duration;

use super::addr::{self, ToSocketAddrs};
use crate::io::registry::Direction;
use crate::io::source::Shared;

/// The listen backlog (the kernel caps it at `net.core.somaxconn`; Go asks for that, `std` for
/// 128, too few for a burst of connections such as the c10k benchmark's).
const BACKLOG: libc::c_int = 4096;

/// A TCP server socket.
///
/// `accept` suspends only the calling coroutine (blocks a plain thread); `accept_async` is the
/// async form. When the process or system runs out of descriptors (`EMFILE`, `ENFILE`) it waits
/// and tries again — 5 ms, doubling to 1 s, as Go's `net/http` server — rather than failing or
/// spinning. A connection reset before it was accepted (`ECONNABORTED`) is passed over, as
/// Go's is, rather than returned.
///
/// ```
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let listener = corio::net::TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     let client = corio::go(move || corio::net::TcpStream::connect(addr).unwrap());
///     let (_server_side, peer) = listener.accept().unwrap();
///     assert_eq!(peer, client.join().unwrap().local_addr().unwrap());
/// });
/// ```
#[derive(Debug)]
pub struct TcpListener {
    sock: Shared<std::net::TcpListener>,
}

impl TcpListener {
    /// Binds a listening socket to the first address `addr` resolves to that it can bind (a
    /// host name is looked up on the blocking pool in a coroutine: [`ToSocketAddrs`]).
    #[track_caller]
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        let addrs = addr::resolve(&addr, "bind")?;
        TcpListener::bound(addr::each_addr(addrs, |a| std::net::TcpListener::bind(a))?)
    }

    /// [`bind`](Self::bind) for async tasks: a host name is looked up on the blocking pool
    /// while the task waits.
    ///
    /// ```
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// rt.block_on(async {
    ///     let listener = corio::net::TcpListener::bind_async("localhost:0").await.unwrap();
    ///     assert!(listener.local_addr().unwrap().ip().is_loopback());
    /// });
    /// ```
    pub async fn bind_async<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        let addrs = addr::resolve_async(&addr).await?;
        TcpListener::bound(addr::each_addr(addrs, |a| std::net::TcpListener::bind(a))?)
    }

    /// Wraps a `std` listener (made nonblocking here). Its backlog stays as its maker chose
    /// ([`bind`](Self::bind) asks for 4,096; before 2026-12-06 this raised every listener's
    /// backlog to that).
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        listener.set_nonblocking(true)?;
        Ok(TcpListener {
            sock: Shared::new(listener),
        })
    }

    /// `from_std` for a listener `bind` just made with `std`'s backlog of 128: raised to
    /// [`BACKLOG`].
    fn bound(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        // SAFETY: `listen` on a listening socket we own only changes its backlog.
        if unsafe { libc::listen(listener.as_raw_fd(), BACKLOG) } != 0 {
            return Err(io::Error::last_os_error());
        }
        TcpListener::from_std(listener)
    }

    /// Accepts a connection, blocking-style (see the type's doc on descriptor exhaustion).
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`accept_async`](Self::accept_async).
    #[track_caller]
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        accepted(addr::accept(&self.sock, |l| l.accept())?)
    }

    /// Accepts a connection.
    pub async fn accept_async(&self) -> io::Result<(TcpStream, SocketAddr)> {
        accepted(addr::accept_async(&self.sock, |l| l.accept()).await?)
    }

    /// An iterator over accepted connections, as [`accept`](Self::accept)'s. It ends when
    /// the listener is closed through another handle (`try_clone`: dropping any handle
    /// closes it for all), so the usual accept loop stops then, as Go's stop at `ErrClosed`;
    /// it never ends otherwise.
    ///
    /// ```
    /// use corio::net::{TcpListener, TcpStream};
    ///
    /// corio::Runtime::new().unwrap().run(|| {
    ///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let addr = listener.local_addr().unwrap();
    ///     let handle = listener.try_clone().unwrap();
    ///     let server = corio::go(move || {
    ///         let mut served = 0;
    ///         for conn in handle.incoming() {
    ///             match conn {
    ///                 Ok(_conn) => served += 1,
    ///                 Err(e) => eprintln!("accept: {e}"), // and go on
    ///             }
    ///         }
    ///         served // the loop ended: the listener was closed
    ///     });
    ///     let _client = TcpStream::connect(addr).unwrap();
    ///     corio::time::sleep(std::time::Duration::from_millis(10));
    ///     drop(listener); // closes it for `handle` too
    ///     assert_eq!(server.join().unwrap(), 1);
    /// });
    /// ```
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.open()?.local_addr()
    }

    /// Sets the IP TTL of the accepted connections' packets.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.sock.open()?.set_ttl(ttl)
    }

    /// Reads the IP TTL.
    pub fn ttl(&self) -> io::Result<u32> {
        self.sock.open()?.ttl()
    }

    /// Takes the socket's pending error (`SO_ERROR`).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.sock.open()?.take_error()
    }

    nonblocking_method!(
        sock,
        "let socket = corio::net::TcpListener::bind(\"127.0.0.1:0\").unwrap();",
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
    /// let listener = corio::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let listener = listener.into_std().unwrap();
    /// let addr = listener.local_addr().unwrap();
    /// let client = std::thread::spawn(move || std::net::TcpStream::connect(addr).unwrap());
    /// let (_connection, _) = listener.accept().unwrap(); // std's accept, blocking
    /// client.join().unwrap();
    /// ```
    pub fn into_std(self) -> io::Result<std::net::TcpListener> {
        self.sock.into_std()
    }

    /// A second handle to the same listener (see `docs/io.md`: dropping either closes it).
    pub fn try_clone(&self) -> io::Result<TcpListener> {
        Ok(TcpListener {
            sock: self.sock.share()?,
        })
    }
}

fn accepted(
    (stream, peer): (std::net::TcpStream, SocketAddr),
) -> io::Result<(TcpStream, SocketAddr)> {
    Ok((TcpStream::from_std(stream)?, peer))
}

fd_traits!(TcpListener, sock, std::net::TcpListener);

/// The iterator of [`TcpListener::incoming`].
#[derive(Debug)]
pub struct Incoming<'a> {
    listener: &'a TcpListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<TcpStream>;

    fn next(&mut self) -> Option<io::Result<TcpStream>> {
        match self.listener.accept() {
            Err(_) if self.listener.sock.is_closed() => None,
            accepted => Some(accepted.map(|(stream, _)| stream)),
        }
    }
}

/// A TCP connection.
///
/// `Read` and `Write` (for `TcpStream` and `&TcpStream`) are blocking-style: in a coroutine they
/// suspend only the coroutine, on a plain thread they block it, and they honour
/// [`set_read_timeout`](Self::set_read_timeout) / [`set_write_timeout`](Self::set_write_timeout)
/// (an expired timeout is `ErrorKind::TimedOut` and leaves the stream usable). Async tasks use
/// [`read_async`](Self::read_async), [`write_async`](Self::write_async) or the
/// `futures_io::AsyncRead`/`AsyncWrite` traits (and `tokio::io`'s with the `tokio-io` feature).
///
/// ```
/// use std::io::{Read, Write};
///
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let reply = rt.block_on(async {
///     let listener = corio::net::TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     // A coroutine serves, blocking-style; this async task is the client.
///     corio::go(move || {
///         let (mut s, _) = listener.accept().unwrap();
///         let mut buf = [0; 4];
///         s.read_exact(&mut buf).unwrap();
///         s.write_all(&buf).unwrap();
///     });
///     let client = corio::net::TcpStream::connect_async(addr).await.unwrap();
///     client.write_all_async(b"ping").await.unwrap();
///     let mut buf = [0; 4];
///     client.read_exact_async(&mut buf).await.unwrap();
///     buf
/// });
/// assert_eq!(&reply, b"ping");
/// ```
#[derive(Debug)]
pub struct TcpStream {
    sock: Shared<std::net::TcpStream>,
}

impl TcpStream {
    /// Connects, blocking-style, trying each address `addr` resolves to (a host name is
    /// looked up on the blocking pool in a coroutine, which waits meanwhile: [`ToSocketAddrs`]).
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`connect_async`](Self::connect_async).
    #[track_caller]
    pub fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        // `addr::each_addr`'s loop, written out: a call made from inside a closure reports
        // the closure's location, not this function's caller (`#[track_caller]` stops at a
        // closure), and the misuse panic is to name the caller's line.
        let mut last = None;
        for a in addr::resolve(&addr, "connect")?.as_slice() {
            match TcpStream::connect_one(a, None) {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(addr::no_addresses))
    }

    /// Connects to one address, giving up after `timeout` (`ErrorKind::TimedOut`; the
    /// half-open socket is closed).
    #[track_caller]
    pub fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        if timeout.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot set a 0 duration timeout",
            ));
        }
        TcpStream::connect_one(addr, Some(timeout))
    }

    #[track_caller]
    fn connect_one(addr: &SocketAddr, timeout: Option<Duration>) -> io::Result<TcpStream> {
        let (stream, connected) = addr::start_connect(addr)?;
        let sock = Shared::new(stream);
        if !connected {
            sock.block_op_timeout(Direction::Write, timeout, addr::finish_connect)?;
        }
        Ok(TcpStream { sock })
    }

    /// Connects, trying each address `addr` resolves to (a host name is looked up on the
    /// blocking pool: [`ToSocketAddrs`]).
    pub async fn connect_async<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        let mut last = None;
        for a in addr::resolve_async(&addr).await?.as_slice() {
            match TcpStream::connect_one_async(a).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(addr::no_addresses))
    }

    async fn connect_one_async(addr: &SocketAddr) -> io::Result<TcpStream> {
        let (stream, connected) = addr::start_connect(addr)?;
        let sock = Shared::new(stream);
        if !connected {
            sock.op_async(Direction::Write, addr::finish_connect)
                .await?;
        }
        Ok(TcpStream { sock })
    }

    /// Wraps a connected `std` stream (made nonblocking here).
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        stream.set_nonblocking(true)?;
        Ok(TcpStream {
            sock: Shared::new(stream),
        })
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.sock.open()?.peer_addr()
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.open()?.local_addr()
    }

    /// Shuts down the read, write or both halves (a reader waiting on this socket wakes with
    /// `Ok(0)` after `Shutdown::Read`).
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.sock.shutdown(how)
    }

    /// Sets `TCP_NODELAY`.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.sock.open()?.set_nodelay(nodelay)
    }

    /// Reads `TCP_NODELAY`.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.sock.open()?.nodelay()
    }

    /// Sets the IP TTL.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.sock.open()?.set_ttl(ttl)
    }

    /// Reads the IP TTL.
    pub fn ttl(&self) -> io::Result<u32> {
        self.sock.open()?.ttl()
    }

    /// Takes the socket's pending error (`SO_ERROR`).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.sock.open()?.take_error()
    }

    timeout_methods!(sock);

    nonblocking_method!(
        sock,
        "let listener = std::net::TcpListener::bind(\"127.0.0.1:0\").unwrap();
let socket = corio::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();",
        "socket.peek(&mut [0; 8])"
    );

    /// Reads without consuming, blocking-style (an empty `buf` returns `Ok(0)` at once).
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`peek_async`](Self::peek_async).
    #[track_caller]
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return self.sock.at_once(|s| s.peek(buf));
        }
        self.sock.block_op(Direction::Read, |s| s.peek(buf))
    }

    /// Reads without consuming (an empty `buf` returns `Ok(0)` at once).
    pub async fn peek_async(&self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return self.sock.at_once(|s| s.peek(buf));
        }
        self.sock.op_async(Direction::Read, |s| s.peek(buf)).await
    }

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
    /// use std::io::{ErrorKind, Read, Write};
    ///
    /// let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let addr = listener.local_addr().unwrap();
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// let stream = rt.run(move || {
    ///     let mut stream = corio::net::TcpStream::connect(addr).unwrap();
    ///     stream.write_all(b"hi from corio, ").unwrap(); // in the runtime's epoll set now
    ///     stream
    /// });
    /// // Shared with a second handle: refused, and the second handle keeps the socket.
    /// let other = stream.try_clone().unwrap();
    /// assert_eq!(stream.into_std().unwrap_err().kind(), ErrorKind::ResourceBusy);
    /// // The last handle hands it back.
    /// let mut stream = other.into_std().unwrap();
    /// stream.write_all(b"and from std").unwrap();
    /// drop(stream);
    /// let (mut peer, _) = listener.accept().unwrap();
    /// let mut got = String::new();
    /// peer.read_to_string(&mut got).unwrap();
    /// assert_eq!(got, "hi from corio, and from std");
    /// ```
    pub fn into_std(self) -> io::Result<std::net::TcpStream> {
        self.sock.into_std()
    }

    /// A second handle to the same socket, to use it from two coroutines or tasks at once.
    /// Unlike `std`'s, dropping either handle closes the socket for both (a waiter on the other
    /// wakes with `ErrorKind::NotConnected`): see `docs/io.md`.
    pub fn try_clone(&self) -> io::Result<TcpStream> {
        Ok(TcpStream {
            sock: self.sock.share()?,
        })
    }
}

fd_traits!(TcpStream, sock, std::net::TcpStream);

stream_face!(TcpStream, sock, std::net::TcpStream, crate::io::sys::recv);

owned_halves!(
    TcpStream,
    sock,
    "let listener = std::net::TcpListener::bind(\"127.0.0.1:0\").unwrap();
let stream = corio::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
let (peer, _) = listener.accept().unwrap();
(stream, peer)"
);
