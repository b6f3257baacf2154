//! Address resolution (through the blocking pool or `corio::blocking`) and the nonblocking
//! `connect` that `std` lacks.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use crate::io::registry::Direction;
use crate::io::source::{Source, sleep_here};

/// Addresses that corio's `connect`, `bind` and `send_to` accept: every type `std`'s
/// [`ToSocketAddrs`](std::net::ToSocketAddrs) is implemented for, and nothing else (the trait
/// is sealed).
///
/// corio has its own trait, as tokio does, because it must tell *before* calling anything
/// whether a lookup is needed. A host name is resolved by `getaddrinfo`, which blocks its
/// thread (reading `/etc/hosts`, asking a DNS server): corio runs it on the blocking pool,
/// while the calling coroutine (or task) waits without holding its worker. An address written
/// out — a [`SocketAddr`], `"127.0.0.1:80"`, `("::1", 80)`, a slice of addresses — is parsed
/// in place, with no pool job and no allocation, so a `send_to` per datagram costs no more
/// than `std`'s. A lookup copies the name, so a borrowed one (`(host.as_str(), 80)`) is fine
/// for the async forms too.
///
/// Implemented for: [`SocketAddr`], [`SocketAddrV4`](std::net::SocketAddrV4),
/// [`SocketAddrV6`](std::net::SocketAddrV6), `(IpAddr, u16)`, `(Ipv4Addr, u16)`,
/// `(Ipv6Addr, u16)`, `str` (`"host:port"`), `String`, `(&str, u16)`, `(String, u16)`,
/// `&[SocketAddr]`, and references to any of these. A generic `A: std::net::ToSocketAddrs`
/// cannot be passed through: resolve it first (on the blocking pool, with
/// [`spawn_blocking`](crate::spawn_blocking), if it may be a host name) and pass the
/// addresses.
///
/// ```
/// use corio::net::{TcpListener, TcpStream};
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// rt.run(|| {
///     let listener = TcpListener::bind(("localhost", 0)).unwrap(); // looked up on the pool
///     let port = listener.local_addr().unwrap().port();
///     let host = String::from("127.0.0.1");
///     let _client = TcpStream::connect((host.as_str(), port)).unwrap(); // parsed in place
/// });
/// ```
pub trait ToSocketAddrs: sealed::ToSocketAddrsPriv {}

impl<T: sealed::ToSocketAddrsPriv + ?Sized> ToSocketAddrs for T {}

pub(crate) mod sealed {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

    /// What [`ToSocketAddrsPriv::to_addrs`] found: the addresses, a name to look up, or why it
    /// is neither.
    #[derive(Debug)]
    pub enum Addrs {
        Known(Resolved),
        Lookup(Name),
        /// Not an address (`std`'s `InvalidInput` message): no lookup is made.
        Invalid(&'static str),
    }

    /// Addresses: one (no allocation) or several.
    #[derive(Debug)]
    pub enum Resolved {
        One(SocketAddr),
        Many(Vec<SocketAddr>),
    }

    /// A name for `getaddrinfo`, owned so that a pool job can take it.
    #[derive(Debug)]
    pub struct Name(pub String, pub u16);

    /// The sealed half of [`ToSocketAddrs`](super::ToSocketAddrs).
    pub trait ToSocketAddrsPriv {
        /// Parses what needs no lookup; copies the name of what does.
        fn to_addrs(&self) -> Addrs;
    }

    macro_rules! one {
        ($($t:ty),*) => {$(
            impl ToSocketAddrsPriv for $t {
                fn to_addrs(&self) -> Addrs {
                    Addrs::Known(Resolved::One(SocketAddr::from(*self)))
                }
            }
        )*};
    }
    one!(
        SocketAddr,
        SocketAddrV4,
        SocketAddrV6,
        (IpAddr, u16),
        (Ipv4Addr, u16),
        (Ipv6Addr, u16)
    );

    impl ToSocketAddrsPriv for str {
        fn to_addrs(&self) -> Addrs {
            // `std`'s order: a socket address first; else `host:port`, split at the last
            // colon, with a malformed one an error before any lookup (so that no pool job is
            // made for it, and an async task's blocking-style `bind` does not need one).
            if let Ok(addr) = self.parse() {
                return Addrs::Known(Resolved::One(addr));
            }
            let Some((host, port)) = self.rsplit_once(':') else {
                return Addrs::Invalid("invalid socket address");
            };
            match port.parse::<u16>() {
                Ok(port) => (host, port).to_addrs(),
                Err(_) => Addrs::Invalid("invalid port value"),
            }
        }
    }

    impl ToSocketAddrsPriv for String {
        fn to_addrs(&self) -> Addrs {
            self.as_str().to_addrs()
        }
    }

    impl ToSocketAddrsPriv for (&str, u16) {
        fn to_addrs(&self) -> Addrs {
            let (host, port) = *self;
            match host.parse::<IpAddr>() {
                Ok(ip) => Addrs::Known(Resolved::One(SocketAddr::new(ip, port))),
                Err(_) => Addrs::Lookup(Name(host.to_owned(), port)),
            }
        }
    }

    impl ToSocketAddrsPriv for (String, u16) {
        fn to_addrs(&self) -> Addrs {
            (self.0.as_str(), self.1).to_addrs()
        }
    }

    impl ToSocketAddrsPriv for [SocketAddr] {
        fn to_addrs(&self) -> Addrs {
            match self {
                [one] => Addrs::Known(Resolved::One(*one)),
                many => Addrs::Known(Resolved::Many(many.to_vec())),
            }
        }
    }

    impl<T: ToSocketAddrsPriv + ?Sized> ToSocketAddrsPriv for &T {
        fn to_addrs(&self) -> Addrs {
            (**self).to_addrs()
        }
    }
}

pub(crate) use sealed::Resolved;
use sealed::{Addrs, Name};

impl Resolved {
    pub(crate) fn as_slice(&self) -> &[SocketAddr] {
        match self {
            Resolved::One(addr) => std::slice::from_ref(addr),
            Resolved::Many(addrs) => addrs,
        }
    }

    /// The first address (`send_to`'s target), or the "no addresses" error.
    pub(crate) fn first(&self) -> io::Result<SocketAddr> {
        self.as_slice().first().copied().ok_or_else(no_addresses)
    }
}

impl Name {
    /// `getaddrinfo`, blocking the thread (a pool job's).
    fn lookup(self) -> io::Result<Resolved> {
        let Name(host, port) = self;
        Ok(Resolved::Many(
            (host.as_str(), port).to_socket_addrs()?.collect(),
        ))
    }
}

/// Resolves `addr` blocking-style: a host name on the blocking pool from a coroutine (which
/// suspends meanwhile), in place on a plain thread.
///
/// # Panics
///
/// A host name inside an async task: the lookup would stall the worker (`what` names the
/// call, whose `_async` form the message suggests).
#[track_caller]
pub(crate) fn resolve<A: ToSocketAddrs + ?Sized>(addr: &A, what: &str) -> io::Result<Resolved> {
    match addr.to_addrs() {
        Addrs::Known(known) => Ok(known),
        Addrs::Invalid(what) => Err(invalid(what)),
        Addrs::Lookup(name) => match crate::runtime::pool_or_here(move || name.lookup()) {
            Some(joined) => join_lookup(joined),
            None => panic!(
                "corio::net: `{what}` with a host name inside an async task would stall its \
                 worker on the lookup: use `{what}_async` and `.await` it (or pass an address)"
            ),
        },
    }
}

/// Resolves `addr`, a host name on the blocking pool.
pub(crate) async fn resolve_async<A: ToSocketAddrs + ?Sized>(addr: &A) -> io::Result<Resolved> {
    match addr.to_addrs() {
        Addrs::Known(known) => Ok(known),
        Addrs::Invalid(what) => Err(invalid(what)),
        Addrs::Lookup(name) => join_lookup(crate::spawn_blocking(move || name.lookup()).await),
    }
}

/// A lookup job's result (its panic, or the runtime's shutting down, as an error).
fn join_lookup(joined: Result<io::Result<Resolved>, crate::JoinError>) -> io::Result<Resolved> {
    joined.unwrap_or_else(|e| Err(io::Error::other(e.to_string())))
}

/// Tries `connect` on each address in turn; the last error if none answers.
pub(crate) fn each_addr<T>(
    addrs: Resolved,
    mut connect: impl FnMut(&SocketAddr) -> io::Result<T>,
) -> io::Result<T> {
    let mut last = None;
    for addr in addrs.as_slice() {
        match connect(addr) {
            Ok(v) => return Ok(v),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(no_addresses))
}

pub(crate) fn no_addresses() -> io::Error {
    invalid("could not resolve to any addresses")
}

fn invalid(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
}

/// A nonblocking TCP socket with `connect` started: `(socket, connected already)`.
pub(crate) fn start_connect(addr: &SocketAddr) -> io::Result<(std::net::TcpStream, bool)> {
    // SAFETY: a plain `socket(2)`: all-zero sockaddr storage is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let (family, len) = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin) };
            (libc::AF_INET, size_of::<libc::sockaddr_in>())
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin6) };
            (libc::AF_INET6, size_of::<libc::sockaddr_in6>())
        }
    };
    // SAFETY: a plain system call; the result is checked.
    let fd = unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket nothing else owns.
    let stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
    loop {
        // SAFETY: `storage` holds a sockaddr of `len` bytes.
        let r = unsafe { libc::connect(fd, (&raw const storage).cast(), len as libc::socklen_t) };
        if r == 0 {
            return Ok((stream, true));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINPROGRESS) => return Ok((stream, false)),
            Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
    }
}

/// A Unix socket address to connect to: a path, or (Linux) a name in the abstract namespace.
pub(crate) enum UnixName<'a> {
    Path(&'a Path),
    Abstract(&'a [u8]),
}

impl<'a> UnixName<'a> {
    /// The name `addr` holds; an unnamed address is the empty path, which `connect` refuses
    /// (`EINVAL`), as `std`'s `connect_addr` does.
    pub(crate) fn of(addr: &'a std::os::unix::net::SocketAddr) -> UnixName<'a> {
        use std::os::linux::net::SocketAddrExt;
        match (addr.as_pathname(), addr.as_abstract_name()) {
            (Some(path), _) => UnixName::Path(path),
            (None, Some(name)) => UnixName::Abstract(name),
            (None, None) => UnixName::Path(Path::new("")),
        }
    }
}

/// A nonblocking Unix stream socket and the address of `name`, checked as `std` checks it (a
/// path without NUL, shorter than `sun_path`; an abstract name shorter than `sun_path` after
/// its leading NUL).
pub(crate) fn unix_socket(
    name: UnixName<'_>,
) -> io::Result<(OwnedFd, libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: all-zero is a valid `sockaddr_un` (and NUL-terminates the path copied below).
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    // The bytes of `sun_path` and the length they count (the terminating NUL of a path, but
    // not of an empty one; the leading NUL of an abstract name).
    let (bytes, len) = match name {
        UnixName::Path(path) => {
            let bytes = path.as_os_str().as_bytes();
            if bytes.contains(&0) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "paths must not contain interior null bytes",
                ));
            }
            if bytes.len() >= addr.sun_path.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "path must be shorter than SUN_LEN",
                ));
            }
            (bytes.to_vec(), bytes.len() + usize::from(!bytes.is_empty()))
        }
        UnixName::Abstract(name) => {
            if name.len() + 1 > addr.sun_path.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "abstract socket name must be shorter than SUN_LEN",
                ));
            }
            let bytes = [&[0][..], name].concat();
            let len = bytes.len();
            (bytes, len)
        }
    };
    for (to, &from) in addr.sun_path.iter_mut().zip(&bytes) {
        *to = from as libc::c_char;
    }
    let len = std::mem::offset_of!(libc::sockaddr_un, sun_path) + len;
    // SAFETY: a plain system call; the result is checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok((fd, addr, len as libc::socklen_t))
}

/// One nonblocking `connect` of a socket from [`unix_socket`]: `WouldBlock` while the
/// listener's backlog is full (a Unix `connect` completes at once or not at all: there is no
/// `EINPROGRESS`, and nothing wakes the socket when the backlog drains — the caller tries
/// again later).
pub(crate) fn unix_connect(
    fd: &OwnedFd,
    addr: &libc::sockaddr_un,
    len: libc::socklen_t,
) -> io::Result<()> {
    loop {
        // SAFETY: `addr` is a `sockaddr_un` whose first `len` bytes are the address.
        let r = unsafe { libc::connect(fd.as_raw_fd(), (&raw const *addr).cast(), len) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The first and the longest wait between a Unix `connect`'s tries at a full backlog: a
/// backlog drains as fast as its server accepts, so the first retry comes soon; doubling to
/// 100 ms bounds what a client waits past the moment a slot frees (Go's `accept` back-off
/// caps at 1 s, for descriptor exhaustion, which lasts longer).
pub(crate) const CONNECT_BACKOFF_MIN: Duration = Duration::from_millis(1);
pub(crate) const CONNECT_BACKOFF_MAX: Duration = Duration::from_millis(100);

/// The check that a started `connect` finished: `WouldBlock` while it is in progress.
pub(crate) fn finish_connect(stream: &std::net::TcpStream) -> io::Result<()> {
    if let Some(e) = stream.take_error()? {
        return Err(e);
    }
    match stream.peer_addr() {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Err(io::ErrorKind::WouldBlock.into()),
        Err(e) => Err(e),
    }
}

/// Whether an `accept` error means the process or system is out of descriptors or memory,
/// which `accept` waits out (Go's `net/http` server: 5 ms doubling to 1 s).
pub(crate) fn is_exhaustion(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Whether an `accept` error is a connection that was reset while it waited in the listen
/// queue (`ECONNABORTED`): that connection is gone, the listener is fine, and `accept` takes
/// the next one, as Go's does (`internal/poll`'s `FD.Accept`). Left to the caller, an accept
/// loop that stops at its first error would stop serving because one client gave up.
fn is_aborted(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ECONNABORTED)
}

/// The first and the longest `accept` back-off (Go's `net/http` `Server.Serve`).
const BACKOFF_MIN: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// `accept` blocking-style on `sock` (`op`: the nonblocking accept), passing over aborted
/// connections ([`is_aborted`]) and sleeping out descriptor exhaustion with a doubling
/// back-off instead of returning it or spinning — except in nonblocking mode, which never
/// waits: there the exhaustion is returned, as `std`'s.
#[track_caller]
pub(crate) fn accept<T: AsRawFd, R>(
    sock: &Source<T>,
    mut op: impl FnMut(&T) -> io::Result<R>,
) -> io::Result<R> {
    let mut backoff = BACKOFF_MIN;
    loop {
        match sock.block_op(Direction::Read, &mut op) {
            Err(e) if is_aborted(&e) => {}
            Err(e) if is_exhaustion(&e) && !sock.is_nonblocking() => {
                sleep_here(backoff);
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
            result => return result,
        }
    }
}

/// The async form of [`accept`].
pub(crate) async fn accept_async<T: AsRawFd, R>(
    sock: &Source<T>,
    mut op: impl FnMut(&T) -> io::Result<R>,
) -> io::Result<R> {
    let mut backoff = BACKOFF_MIN;
    loop {
        match sock.op_async(Direction::Read, &mut op).await {
            Err(e) if is_aborted(&e) => {}
            Err(e) if is_exhaustion(&e) => {
                crate::time::sleep_async(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
            result => return result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection reset while it waited in the listen queue makes Linux's `accept` fail
    /// with `ECONNABORTED`; the listener itself is fine, so `accept` takes the next one, as
    /// Go's does. (The kernel cannot be made to do this on demand: the first try here fails
    /// as it would.)
    #[test]
    #[cfg_attr(miri, ignore)] // sockets
    fn accept_takes_the_next_connection_after_an_aborted_one() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let sock = Source::new(listener);
        let client = std::net::TcpStream::connect(addr).unwrap();
        let aborted = || io::Error::from_raw_os_error(libc::ECONNABORTED);

        let mut tries = 0;
        let accepted = accept(&sock, |l| {
            tries += 1;
            if tries == 1 {
                Err(aborted())
            } else {
                l.accept()
            }
        });
        assert_eq!(accepted.unwrap().1, client.local_addr().unwrap());

        let rt = crate::Runtime::builder().workers(1).build().unwrap();
        let second = std::net::TcpStream::connect(addr).unwrap();
        let mut tries = 0;
        let accepted = rt.block_on(accept_async(&sock, |l| {
            tries += 1;
            if tries == 1 {
                Err(aborted())
            } else {
                l.accept()
            }
        }));
        assert_eq!(accepted.unwrap().1, second.local_addr().unwrap());
    }
}
