//! Networking: TCP, UDP and Unix-domain sockets whose blocking-style calls suspend only the
//! calling coroutine.
//!
//! The types mirror `std::net` and `std::os::unix::net`. Each works in three places with the
//! same methods: in a stackful coroutine a blocking-style call (`read`, `accept`, ...) suspends
//! the coroutine until the netpoller sees the socket ready; on a plain thread it blocks the
//! thread; in an async task it panics with advice — use the `_async` form there (or the
//! `futures_io` / `tokio::io` traits). `docs/io.md` lists the decisions (timeouts, nonblocking
//! mode, `try_clone`, errors, `accept` back-off); `crate::io` and the driver explain the netpoller. The halves of
//! a split stream, and the error of their `reunite`, are in the modules [`tcp`] and [`unix`]
//! (as tokio's); the socket types are here too.
//!
//! ```
//! use std::io::{BufRead, BufReader, Write};
//! use corio::net::{TcpListener, TcpStream};
//!
//! let rt = corio::Runtime::builder().workers(1).build().unwrap();
//! let line = rt.run(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     corio::go(move || {
//!         // An echo server: one coroutine per connection, plain blocking-style code.
//!         let (stream, _) = listener.accept().unwrap();
//!         let mut reader = BufReader::new(&stream);
//!         let mut line = String::new();
//!         reader.read_line(&mut line).unwrap();
//!         (&stream).write_all(line.as_bytes()).unwrap();
//!     });
//!     let mut client = TcpStream::connect(addr).unwrap();
//!     client.write_all(b"hello\n").unwrap();
//!     let mut line = String::new();
//!     BufReader::new(client).read_line(&mut line).unwrap();
//!     line
//! });
//! assert_eq!(line, "hello\n");
//! ```

#[macro_use]
mod fd;
#[macro_use]
mod stream;
#[macro_use]
mod split;
mod addr;
pub mod tcp;
mod udp;
pub mod unix;

pub use self::addr::ToSocketAddrs;
pub use self::tcp::{Incoming, OwnedReadHalf, OwnedWriteHalf, TcpListener, TcpStream};
pub use self::udp::UdpSocket;
pub use self::unix::{UnixDatagram, UnixListener, UnixStream};
