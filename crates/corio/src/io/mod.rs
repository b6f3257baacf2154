//! The netpoller's half outside the driver: registrations ([`registry`]) and the socket
//! wrapper every `corio::net` type is built on ([`source`]).
//!
//! # The problem
//!
//! A coroutine that reads a socket must suspend — only the coroutine, never its worker — until
//! the socket is readable, and an async task must get `Pending` and a wake-up. The same
//! `read` call on a plain thread must simply block. corio implements the wait once, as a
//! future (`Source::poll_op`), and picks the face by where the call runs (`Source::block_op`):
//! `block_on` in a coroutine, `poll(2)` on a plain thread, a panic with advice in an async task
//! (blocking there would stall the worker).
//!
//! # The mechanism
//!
//! Every socket is nonblocking. An operation tries its system call first (data is often
//! already there: no registration, no wait — Go's `pollDesc` does the same); on `EAGAIN` it
//! registers its waker with the socket's [`registry::ScheduledIo`] (the protocol that makes
//! that race-free with edge-triggered epoll is in `registry.rs`) and waits. A socket is added
//! to the driver's epoll set once, edge-triggered for both directions, the first time it must
//! wait inside a runtime; a socket only ever used from plain threads is never registered.
//! Who takes the events from epoll is `runtime/driver.rs`'s "Netpoller".
//!
//! # Rejected alternatives
//!
//! - *mio*: it would own the epoll instance, which the driver shares with its eventfd and
//!   timerfd (the holder sleeps in one `epoll_wait` for time, wake-ups and IO), and its
//!   `Registry`/`Token` layer duplicates the slab here. *rustix*: safer syscall wrappers, but
//!   corio already speaks `libc` throughout and needs only `epoll_ctl`, `epoll_wait`,
//!   `socket`, `connect` and `poll` beyond what `std::net` does. See `docs/io.md`.
//! - *Level-triggered* registration would make every poller see an unread socket again and
//!   again; *one-shot* would need an `epoll_ctl` per wait (Go and tokio chose edge-triggered).

pub(crate) mod registry;
pub(crate) mod slot;
pub(crate) mod source;
pub(crate) mod sys;
