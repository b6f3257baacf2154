//! UDP: [`UdpSocket`].

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use super::addr::{self, ToSocketAddrs};
use crate::io::registry::Direction;
use crate::io::source::Shared;

/// A UDP socket. The blocking-style calls suspend only the calling coroutine (block a plain
/// thread, panic in an async task); the `_async` forms are for async tasks.
///
/// ```
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let a = corio::net::UdpSocket::bind("127.0.0.1:0").unwrap();
///     let b = corio::net::UdpSocket::bind("127.0.0.1:0").unwrap();
///     let to = b.local_addr().unwrap();
///     let receiver = corio::go(move || {
///         let mut buf = [0; 8];
///         let (n, _) = b.recv_from(&mut buf).unwrap();
///         buf[..n].to_vec()
///     });
///     a.send_to(b"hi", to).unwrap();
///     assert_eq!(receiver.join().unwrap(), b"hi");
/// });
/// ```
#[derive(Debug)]
pub struct UdpSocket {
    sock: Shared<std::net::UdpSocket>,
}

impl UdpSocket {
    /// Binds a socket to the first address `addr` resolves to that it can bind (a host name
    /// is looked up on the blocking pool in a coroutine: [`ToSocketAddrs`]).
    #[track_caller]
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        let addrs = addr::resolve(&addr, "bind")?;
        UdpSocket::from_std(addr::each_addr(addrs, |a| std::net::UdpSocket::bind(a))?)
    }

    /// [`bind`](Self::bind) for async tasks: a host name is looked up on the blocking pool
    /// while the task waits.
    pub async fn bind_async<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        let addrs = addr::resolve_async(&addr).await?;
        UdpSocket::from_std(addr::each_addr(addrs, |a| std::net::UdpSocket::bind(a))?)
    }

    /// Wraps a `std` socket (made nonblocking here).
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        Ok(UdpSocket {
            sock: Shared::new(socket),
        })
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
    /// let socket = corio::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    /// let socket = socket.into_std().unwrap();
    /// socket.send_to(b"to myself", socket.local_addr().unwrap()).unwrap();
    /// let mut buf = [0; 16];
    /// let (n, _) = socket.recv_from(&mut buf).unwrap(); // std's receive, blocking
    /// assert_eq!(&buf[..n], b"to myself");
    /// ```
    pub fn into_std(self) -> io::Result<std::net::UdpSocket> {
        self.sock.into_std()
    }

    /// Sends to `target` (its first address), blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`send_to_async`](Self::send_to_async).
    #[track_caller]
    pub fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], target: A) -> io::Result<usize> {
        let to = addr::resolve(&target, "send_to")?.first()?;
        self.sock.block_op(Direction::Write, |s| s.send_to(buf, to))
    }

    /// Receives a datagram without consuming it, blocking-style.
    #[track_caller]
    pub fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.sock.block_op(Direction::Read, |s| s.peek_from(buf))
    }

    /// Receives a datagram without consuming it.
    pub async fn peek_from_async(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.sock
            .op_async(Direction::Read, |s| s.peek_from(buf))
            .await
    }

    /// Receives a datagram from the connected peer without consuming it, blocking-style.
    #[track_caller]
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.sock.block_op(Direction::Read, |s| s.peek(buf))
    }

    /// Receives a datagram from the connected peer without consuming it.
    pub async fn peek_async(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.sock.op_async(Direction::Read, |s| s.peek(buf)).await
    }

    /// Sets the peer for `send` and `recv` (never waits).
    #[track_caller]
    pub fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        addr::each_addr(addr::resolve(&addr, "connect")?, |a| {
            self.sock.open()?.connect(a)
        })
    }

    /// [`connect`](Self::connect) for async tasks: a host name is looked up on the blocking
    /// pool while the task waits.
    pub async fn connect_async<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        let addrs = addr::resolve_async(&addr).await?;
        addr::each_addr(addrs, |a| self.sock.open()?.connect(a))
    }

    /// Sends to `target` (its first address; a host name is looked up on the blocking pool,
    /// an address is not: [`ToSocketAddrs`]).
    pub async fn send_to_async<A: ToSocketAddrs>(
        &self,
        buf: &[u8],
        target: A,
    ) -> io::Result<usize> {
        let target = addr::resolve_async(&target).await?.first()?;
        self.sock
            .op_async(Direction::Write, |s| s.send_to(buf, target))
            .await
    }

    /// Sets `SO_BROADCAST`.
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        self.sock.open()?.set_broadcast(on)
    }

    /// Reads `SO_BROADCAST`.
    pub fn broadcast(&self) -> io::Result<bool> {
        self.sock.open()?.broadcast()
    }

    /// Sets the IP TTL.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.sock.open()?.set_ttl(ttl)
    }

    /// Reads the IP TTL.
    pub fn ttl(&self) -> io::Result<u32> {
        self.sock.open()?.ttl()
    }

    /// Takes the socket's pending error (`SO_ERROR`; a refused datagram's `ECONNREFUSED`).
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.sock.open()?.take_error()
    }

    /// Joins an IPv4 multicast group (`IP_ADD_MEMBERSHIP`).
    pub fn join_multicast_v4(&self, multiaddr: &Ipv4Addr, interface: &Ipv4Addr) -> io::Result<()> {
        self.sock.open()?.join_multicast_v4(multiaddr, interface)
    }

    /// Joins an IPv6 multicast group (`IPV6_ADD_MEMBERSHIP`).
    pub fn join_multicast_v6(&self, multiaddr: &Ipv6Addr, interface: u32) -> io::Result<()> {
        self.sock.open()?.join_multicast_v6(multiaddr, interface)
    }

    /// Leaves an IPv4 multicast group.
    pub fn leave_multicast_v4(&self, multiaddr: &Ipv4Addr, interface: &Ipv4Addr) -> io::Result<()> {
        self.sock.open()?.leave_multicast_v4(multiaddr, interface)
    }

    /// Leaves an IPv6 multicast group.
    pub fn leave_multicast_v6(&self, multiaddr: &Ipv6Addr, interface: u32) -> io::Result<()> {
        self.sock.open()?.leave_multicast_v6(multiaddr, interface)
    }

    /// Sets `IP_MULTICAST_LOOP`.
    pub fn set_multicast_loop_v4(&self, on: bool) -> io::Result<()> {
        self.sock.open()?.set_multicast_loop_v4(on)
    }

    /// Reads `IP_MULTICAST_LOOP`.
    pub fn multicast_loop_v4(&self) -> io::Result<bool> {
        self.sock.open()?.multicast_loop_v4()
    }

    /// Sets `IP_MULTICAST_TTL`.
    pub fn set_multicast_ttl_v4(&self, ttl: u32) -> io::Result<()> {
        self.sock.open()?.set_multicast_ttl_v4(ttl)
    }

    /// Reads `IP_MULTICAST_TTL`.
    pub fn multicast_ttl_v4(&self) -> io::Result<u32> {
        self.sock.open()?.multicast_ttl_v4()
    }

    /// Sets `IPV6_MULTICAST_LOOP`.
    pub fn set_multicast_loop_v6(&self, on: bool) -> io::Result<()> {
        self.sock.open()?.set_multicast_loop_v6(on)
    }

    /// Reads `IPV6_MULTICAST_LOOP`.
    pub fn multicast_loop_v6(&self) -> io::Result<bool> {
        self.sock.open()?.multicast_loop_v6()
    }

    datagram_face!(
        sock,
        SocketAddr,
        super::stream::as_received,
        SocketAddr::from(([0, 0, 0, 0], 0))
    );

    nonblocking_method!(
        sock,
        "let socket = corio::net::UdpSocket::bind(\"127.0.0.1:0\").unwrap();",
        "socket.recv_from(&mut [0; 8])"
    );
}

fd_traits!(UdpSocket, sock, std::net::UdpSocket);
