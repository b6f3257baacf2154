//! The byte-stream face shared by `TcpStream` and `UnixStream`: `Read` and
//! `Write` for the type and for a shared reference to it, the `_async` methods, and the
//! `futures_io` (and, with the `tokio-io` feature, `tokio::io`) traits — written once as a
//! macro over the type's `Shared` socket field. The traits are a macro a direction each, so
//! that the halves of `into_split` (`net/split.rs`) take the read or the write side of them.
//!
//! # Zero-length reads and writes
//!
//! A read into an empty buffer or a write of nothing returns at once: its system call alone,
//! with `Ok(0)` where the kernel would say `EAGAIN`, and never a wait for readiness. The
//! readiness protocol (`io/registry.rs`) skips the system call while a direction is not ready,
//! and a zero-length operation cannot make it ready: a `write(&[])` on a socket whose send
//! buffer had filled waited for the peer to read (`send` of 0 bytes says `Ok(0)` at once, and
//! `std`'s `write(&[])` returns it), and a `read(&mut [])` waited for data that might never
//! come. (`std` on Linux waits there too — `recv` of 0 bytes blocks until data arrives —
//! while `read(2)` of 0 bytes on the same socket returns 0; corio answers at once: `Ok(0)`
//! is what the `Read` contract gives an empty buffer, and nothing is consumed either way.)
//! Errors the system call reports (`EPIPE` after `shutdown(Write)`, a reset) are returned.
//! `Source::poll_stream` and `Source::block_stream` answer a zero length (`Source::at_once`).

use std::io;

use crate::io::sys::IOV_MAX;

/// The bytes one `writev(2)` of `bufs` can move: std passes at most `IOV_MAX` (1,024 on
/// Linux) buffers, and a write of all of those is not a short one — counting the rest would
/// take it for a full send buffer and wait for an edge that never comes.
pub(crate) fn writev_len(bufs: &[io::IoSlice<'_>]) -> usize {
    bufs.iter().take(IOV_MAX).map(|b| b.len()).sum()
}

/// The async traits' close (`poll_close`, `poll_shutdown`) from `shutdown(Write)`'s result: a
/// socket the peer reset is already closed, and the kernel's `ENOTCONN` for it is success
/// here, as in tokio (whose users, hyper and tokio-rustls among them, treat a failed close as
/// a failed connection). A socket another handle closed is still `NotConnected` (corio's own
/// error, with no OS code). The inherent `shutdown` keeps `std`'s `ENOTCONN`.
pub(crate) fn closed_for_writing(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => Ok(()),
        result => result,
    }
}

/// A datagram receive's result as the system call gave it (`datagram_face!`'s `$received`
/// for a socket whose receive never mistakes the end for `WouldBlock`).
#[inline]
pub(crate) fn as_received<T, R>(
    _: &T,
    result: io::Result<R>,
    _may_wait: bool,
    _: impl FnOnce() -> R,
) -> io::Result<R> {
    result
}

/// `futures_io::AsyncRead` for `$t` (a stream type, a reference to one, or its read half:
/// anything whose methods, through `Deref`, include the stream's `poll_read_priv`).
macro_rules! futures_read_face {
    ($t:ty) => {
        impl futures_io::AsyncRead for $t {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.poll_read_priv(cx, buf)
            }
        }
    };
}

/// `futures_io::AsyncWrite` for `$t` (a stream type, a reference to one, or its write half).
macro_rules! futures_write_face {
    ($t:ty) => {
        impl futures_io::AsyncWrite for $t {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.poll_write_priv(cx, buf)
            }

            /// One `writev(2)`: all of `bufs` in one system call, as far as the socket takes it.
            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.poll_write_vectored_priv(cx, bufs)
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready($crate::net::stream::closed_for_writing(
                    self.shutdown(std::net::Shutdown::Write),
                ))
            }
        }
    };
}

/// `tokio::io::AsyncRead` for `$t` (a stream type or its read half), with the `tokio-io`
/// feature.
macro_rules! tokio_read_face {
    ($t:ty) => {
        #[cfg(feature = "tokio-io")]
        impl tokio::io::AsyncRead for $t {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut tokio::io::ReadBuf<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                // SAFETY: `poll_read_uninit` only writes into the unfilled part (it never
                // de-initialises a byte), and the first `n` bytes it reports are initialised.
                let unfilled = unsafe { buf.unfilled_mut() };
                let n = std::task::ready!(self.poll_read_uninit(cx, unfilled))?;
                // SAFETY: as above: the read initialised `n` bytes of the unfilled part.
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                std::task::Poll::Ready(Ok(()))
            }
        }
    };
}

/// `tokio::io::AsyncWrite` for `$t` (a stream type or its write half), with the `tokio-io`
/// feature.
macro_rules! tokio_write_face {
    ($t:ty) => {
        #[cfg(feature = "tokio-io")]
        impl tokio::io::AsyncWrite for $t {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.poll_write_priv(cx, buf)
            }

            /// One `writev(2)`, as tokio's `TcpStream` (hyper then sends a response's head and
            /// body without copying them into one buffer, unless told to flatten).
            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.poll_write_vectored_priv(cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(Ok(()))
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready($crate::net::stream::closed_for_writing(
                    self.shutdown(std::net::Shutdown::Write),
                ))
            }
        }
    };
}

/// Implements the stream face for `$ty`, whose socket is `self.$sock` (a `Shared<$std>` where
/// `&$std` implements `Read` and `Write`); its reads call `$recv` (`io::sys::recv`, or for a
/// Unix stream `io::sys::recv_unix_stream`, which reads past a message with descriptors).
macro_rules! stream_face {
    ($ty:ty, $sock:ident, $std:ty, $recv:path) => {
        impl $ty {
            /// Reads into `buf`, suspending the task until data arrives (`Ok(0)`: the peer
            /// closed its side).
            pub async fn read_async(&self, buf: &mut [u8]) -> std::io::Result<usize> {
                let len = buf.len();
                self.$sock
                    .stream_async($crate::io::registry::Direction::Read, len, |s: &$std| {
                        // SAFETY: `buf` is writable for `len` bytes, borrowed for this call.
                        unsafe { $recv(std::os::fd::AsRawFd::as_raw_fd(s), buf.as_mut_ptr(), len) }
                    })
                    .await
            }

            /// Writes some of `buf`, suspending the task until the socket can take data.
            pub async fn write_async(&self, buf: &[u8]) -> std::io::Result<usize> {
                self.$sock
                    .stream_async(
                        $crate::io::registry::Direction::Write,
                        buf.len(),
                        |s: &$std| $crate::io::sys::send(std::os::fd::AsRawFd::as_raw_fd(s), buf),
                    )
                    .await
            }

            /// Writes all of `buf`.
            pub async fn write_all_async(&self, mut buf: &[u8]) -> std::io::Result<()> {
                while !buf.is_empty() {
                    match self.write_async(buf).await? {
                        0 => return Err(std::io::ErrorKind::WriteZero.into()),
                        n => buf = &buf[n..],
                    }
                }
                Ok(())
            }

            /// Reads exactly `buf.len()` bytes (`UnexpectedEof` if the peer closes first).
            pub async fn read_exact_async(&self, mut buf: &mut [u8]) -> std::io::Result<()> {
                while !buf.is_empty() {
                    match self.read_async(buf).await? {
                        0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                        n => buf = &mut buf[n..],
                    }
                }
                Ok(())
            }

            /// Polls a read into uninitialised memory — the spare capacity of a buffer, as
            /// hyper's `rt::Read` and tokio's `ReadBuf` hand it out — so that nothing has to
            /// be zeroed first. `Ready(Ok(n))`: the first `n` elements of `buf` are
            /// initialised (`n == 0`: the peer closed its side); the others are untouched.
            /// `Pending`: the task is woken when data arrives.
            ///
            /// ```
            /// use std::mem::MaybeUninit;
            /// use std::future::poll_fn;
            /// use corio::net::{TcpListener, TcpStream};
            ///
            /// corio::Runtime::new().unwrap().block_on(async {
            ///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            ///     let addr = listener.local_addr().unwrap();
            ///     let client = TcpStream::connect_async(addr).await.unwrap();
            ///     let (server, _) = listener.accept_async().await.unwrap();
            ///     client.write_all_async(b"hi").await.unwrap();
            ///     let mut buf = [MaybeUninit::<u8>::uninit(); 16];
            ///     let n = poll_fn(|cx| server.poll_read_uninit(cx, &mut buf)).await.unwrap();
            ///     // SAFETY: `poll_read_uninit` initialised the first `n` bytes.
            ///     let got = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n) };
            ///     assert_eq!(got, b"hi");
            /// });
            /// ```
            pub fn poll_read_uninit(
                &self,
                cx: &mut std::task::Context<'_>,
                buf: &mut [std::mem::MaybeUninit<u8>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let len = buf.len();
                let ptr = buf.as_mut_ptr().cast::<u8>();
                self.$sock.poll_stream(
                    $crate::io::registry::Direction::Read,
                    cx,
                    &mut None, // the poll-based traits keep no ticket (docs/io.md, "Waiters")
                    len,
                    |s: &$std| {
                        // SAFETY: `ptr` is valid for writes of `len` bytes (it is `buf`,
                        // borrowed mutably for this call); `recv` writes only its first `n`
                        // bytes, which the caller may then treat as initialised.
                        unsafe { $recv(std::os::fd::AsRawFd::as_raw_fd(s), ptr, len) }
                    },
                )
            }

            fn poll_read_priv(
                &self,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let len = buf.len();
                self.$sock.poll_stream(
                    $crate::io::registry::Direction::Read,
                    cx,
                    &mut None, // the poll-based traits keep no ticket (docs/io.md, "Waiters")
                    len,
                    |s: &$std| {
                        // SAFETY: `buf` is writable for `len` bytes, borrowed for this call.
                        unsafe { $recv(std::os::fd::AsRawFd::as_raw_fd(s), buf.as_mut_ptr(), len) }
                    },
                )
            }

            fn poll_write_priv(
                &self,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.$sock.poll_stream(
                    $crate::io::registry::Direction::Write,
                    cx,
                    &mut None, // the poll-based traits keep no ticket (docs/io.md, "Waiters")
                    buf.len(),
                    |s: &$std| $crate::io::sys::send(std::os::fd::AsRawFd::as_raw_fd(s), buf),
                )
            }

            /// `poll_write_priv` for several buffers, with one `writev(2)`. A write shorter
            /// than all of them left the socket's send buffer full (the readiness protocol's
            /// "drained", as for a short `write`); the caller continues from where it stopped.
            fn poll_write_vectored_priv(
                &self,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let len = $crate::net::stream::writev_len(bufs);
                self.$sock.poll_stream(
                    $crate::io::registry::Direction::Write,
                    cx,
                    &mut None, // the poll-based traits keep no ticket (docs/io.md, "Waiters")
                    len,
                    |s: &$std| {
                        $crate::io::sys::send_vectored(std::os::fd::AsRawFd::as_raw_fd(s), bufs)
                    },
                )
            }
        }

        impl std::io::Read for &$ty {
            /// Blocking-style: suspends the coroutine (or blocks the thread) until data arrives.
            /// An empty `buf` returns `Ok(0)` at once (`net/stream.rs`, "Zero-length reads and
            /// writes").
            ///
            /// # Panics
            ///
            /// Inside an async task (use `read_async` there).
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let len = buf.len();
                self.$sock
                    .block_stream($crate::io::registry::Direction::Read, len, |s: &$std| {
                        // SAFETY: `buf` is writable for `len` bytes, borrowed for this call.
                        unsafe { $recv(std::os::fd::AsRawFd::as_raw_fd(s), buf.as_mut_ptr(), len) }
                    })
            }
        }

        impl std::io::Write for &$ty {
            /// Blocking-style: suspends the coroutine (or blocks the thread) until the socket
            /// takes some of `buf`. An empty `buf` returns at once.
            ///
            /// # Panics
            ///
            /// Inside an async task (use `write_async` there).
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.$sock.block_stream(
                    $crate::io::registry::Direction::Write,
                    buf.len(),
                    |s: &$std| $crate::io::sys::send(std::os::fd::AsRawFd::as_raw_fd(s), buf),
                )
            }

            /// One `writev(2)`, blocking-style, as `std`'s: all of `bufs` as far as the socket
            /// takes them.
            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                self.$sock.block_stream(
                    $crate::io::registry::Direction::Write,
                    $crate::net::stream::writev_len(bufs),
                    |s: &$std| {
                        $crate::io::sys::send_vectored(std::os::fd::AsRawFd::as_raw_fd(s), bufs)
                    },
                )
            }

            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }

        impl std::io::Read for $ty {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                (&*self).read(buf)
            }
        }

        impl std::io::Write for $ty {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                (&*self).write(buf)
            }

            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                (&*self).write_vectored(bufs)
            }

            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }

        futures_read_face!(&$ty);
        futures_write_face!(&$ty);
        futures_read_face!($ty);
        futures_write_face!($ty);
        tokio_read_face!($ty);
        tokio_write_face!($ty);
    };
}

/// The timeout setters and getters every socket type has (`self.$sock` is its `Shared`).
macro_rules! timeout_methods {
    ($sock:ident) => {
        /// The blocking-style reads' timeout (`None`: wait for ever; `Some(0)` is an error).
        /// An expired timeout is `ErrorKind::TimedOut` and leaves the socket usable.
        pub fn set_read_timeout(
            &self,
            timeout: Option<std::time::Duration>,
        ) -> std::io::Result<()> {
            self.$sock
                .set_timeout($crate::io::registry::Direction::Read, timeout)
        }

        /// The blocking-style writes' timeout (`None`: wait for ever; `Some(0)` is an error).
        pub fn set_write_timeout(
            &self,
            timeout: Option<std::time::Duration>,
        ) -> std::io::Result<()> {
            self.$sock
                .set_timeout($crate::io::registry::Direction::Write, timeout)
        }

        /// The read timeout.
        pub fn read_timeout(&self) -> std::io::Result<Option<std::time::Duration>> {
            self.$sock.timeout($crate::io::registry::Direction::Read)
        }

        /// The write timeout.
        pub fn write_timeout(&self) -> std::io::Result<Option<std::time::Duration>> {
            self.$sock.timeout($crate::io::registry::Direction::Write)
        }
    };
}

/// `set_nonblocking`, which every socket type has (`self.$sock` is its `Shared`). `$socket`
/// is the doc example's code that makes a `socket` of the type, `$call` a call on it that
/// would wait.
macro_rules! nonblocking_method {
    ($sock:ident, $socket:literal, $call:literal) => {
        /// Moves the socket into or out of nonblocking mode, as `std`'s `set_nonblocking`: in
        /// nonblocking mode a blocking-style call (`read`, `write`, `accept`, `recv_from`,
        /// ...) that would wait returns `ErrorKind::WouldBlock` at once instead — in a
        /// coroutine, on a plain thread, and in an async task, where a blocking-style call
        /// otherwise panics. The timeouts stay set, for when the mode is turned off.
        ///
        /// The `_async` forms and the `AsyncRead`/`AsyncWrite` traits ignore the mode (as
        /// tokio, which has none): a task that waits returns `Pending`, which blocks nothing.
        /// The mode belongs to the socket, as `O_NONBLOCK` to an open file: every handle
        /// (`try_clone`, the halves of `into_split`) shares it, and `into_std` hands a
        /// nonblocking socket back nonblocking. (corio's sockets are nonblocking
        /// underneath in either mode; this only says whether a call may wait.)
        ///
        #[doc = concat!(
                            "```
",
                            $socket, "
",
                            "socket.set_nonblocking(true).unwrap();
",
                            "let e = ", $call, ".unwrap_err(); // nothing there: no wait
",
                            "assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
",
                            "socket.set_nonblocking(false).unwrap(); // the call would wait again
",
                            "```"
                        )]
        pub fn set_nonblocking(&self, nonblocking: bool) -> std::io::Result<()> {
            self.$sock.set_nonblocking(nonblocking)
        }
    };
}

/// The datagram calls `UdpSocket` and `UnixDatagram` share (`self.$sock` is the `Shared`
/// socket, `$addr` the address type): blocking-style and async receive and connected send.
/// Every receive's result passes through `$received(socket, result, may_wait, at_eof)`, which
/// may turn a `WouldBlock` of a call that may wait (not one in nonblocking mode) into the end
/// of the stream `at_eof()` (`UnixDatagram`: a receive after `shutdown(Read)`); `$eof_addr` is
/// the sender address such an end reports.
macro_rules! datagram_face {
    ($sock:ident, $addr:ty, $received:path, $eof_addr:expr) => {
        /// Receives a datagram, blocking-style.
        ///
        /// # Panics
        ///
        /// Inside an async task: use `recv_from_async`.
        #[track_caller]
        pub fn recv_from(&self, buf: &mut [u8]) -> std::io::Result<(usize, $addr)> {
            let may_wait = !self.$sock.is_nonblocking();
            self.$sock
                .block_op($crate::io::registry::Direction::Read, |s| {
                    $received(s, s.recv_from(buf), may_wait, || (0, $eof_addr))
                })
        }

        /// Sends to the connected peer, blocking-style.
        #[track_caller]
        pub fn send(&self, buf: &[u8]) -> std::io::Result<usize> {
            self.$sock
                .block_op($crate::io::registry::Direction::Write, |s| s.send(buf))
        }

        /// Receives from the connected peer, blocking-style.
        #[track_caller]
        pub fn recv(&self, buf: &mut [u8]) -> std::io::Result<usize> {
            let may_wait = !self.$sock.is_nonblocking();
            self.$sock
                .block_op($crate::io::registry::Direction::Read, |s| {
                    $received(s, s.recv(buf), may_wait, || 0)
                })
        }

        /// Receives a datagram.
        pub async fn recv_from_async(&self, buf: &mut [u8]) -> std::io::Result<(usize, $addr)> {
            self.$sock
                .op_async($crate::io::registry::Direction::Read, |s| {
                    $received(s, s.recv_from(buf), true, || (0, $eof_addr))
                })
                .await
        }

        /// Sends to the connected peer.
        pub async fn send_async(&self, buf: &[u8]) -> std::io::Result<usize> {
            self.$sock
                .op_async($crate::io::registry::Direction::Write, |s| s.send(buf))
                .await
        }

        /// Receives from the connected peer.
        pub async fn recv_async(&self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.$sock
                .op_async($crate::io::registry::Direction::Read, |s| {
                    $received(s, s.recv(buf), true, || 0)
                })
                .await
        }

        /// The local address.
        pub fn local_addr(&self) -> std::io::Result<$addr> {
            self.$sock.open()?.local_addr()
        }

        /// The connected peer's address.
        pub fn peer_addr(&self) -> std::io::Result<$addr> {
            self.$sock.open()?.peer_addr()
        }

        timeout_methods!($sock);

        /// A second handle to the same socket (see `docs/io.md`: dropping either closes it).
        pub fn try_clone(&self) -> std::io::Result<Self> {
            Ok(Self {
                $sock: self.$sock.share()?,
            })
        }
    };
}
