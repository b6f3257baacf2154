//! UDP: [`UdpSocket`].

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};

use super::addr;
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
    /// Binds a socket (never waits: a host name is resolved as `std` does).
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        UdpSocket::from_std(std::net::UdpSocket::bind(addr)?)
    }

    /// Wraps a `std` socket (made nonblocking here).
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        socket.set_nonblocking(true)?;
        Ok(UdpSocket {
            sock: Shared::new(socket),
        })
    }

    /// Sends to `target` (its first address), blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task: use [`send_to_async`](Self::send_to_async).
    #[track_caller]
    pub fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], target: A) -> io::Result<usize> {
        let to = *addr::resolve(target)?
            .first()
            .ok_or_else(addr::no_addresses)?;
        self.sock.block_op(Direction::Write, |s| s.send_to(buf, to))
    }

    /// Receives a datagram without consuming it, blocking-style.
    #[track_caller]
    pub fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.sock.block_op(Direction::Read, |s| s.peek_from(buf))
    }

    /// Sets the peer for `send` and `recv` (never waits).
    #[track_caller]
    pub fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        addr::each_addr(addr::resolve(addr)?, |a| self.sock.get().connect(a))
    }

    /// Sends to `target`.
    pub async fn send_to_async(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        self.sock
            .op_async(Direction::Write, |s| s.send_to(buf, target))
            .await
    }

    /// Sets `SO_BROADCAST`.
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        self.sock.get().set_broadcast(on)
    }

    datagram_face!(sock, SocketAddr);
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.get().as_raw_fd()
    }
}
