//! [`Source`]: a nonblocking socket with its (lazy) netpoller registration, its timeouts, its
//! user-visible nonblocking mode and the shared-handle close of `docs/io.md` ("`try_clone`
//! shares the socket").
//!
//! Handles ([`Shared`]) share one `Source` through an `Arc`. Dropping a handle while others
//! remain closes the socket for all of them (Go's `Close`; `into_split`'s halves behave as
//! tokio's instead — the read half's drop does nothing, the write half's shuts the write
//! direction down — and `reunite` makes them one whole handle again: [`OnDrop`], and
//! `docs/io.md`): `closed` is set, the waiters are
//! woken (`ScheduledIo::close`) and the socket is shut down, which also wakes plain threads
//! waiting in `poll(2)` and tells the peer. The fd itself is closed by the last handle, so its
//! number cannot be reused while another handle still names it.
//!
//! # Handing the socket back
//!
//! `into_std` and `IntoRawFd` (`net/fd.rs` has the public contract) end corio's hold on a
//! socket: [`Shared::into_std`] takes the `Source` out of its `Arc` — only the last handle
//! can, since other handles may be waiting on it — removes the socket from its runtime's epoll
//! set and releases its registration (`Registration::deregister`), and hands the socket back
//! in blocking mode (nonblocking if `set_nonblocking` said so: "Nonblocking mode"). With other
//! handles left it refuses, and the handle it consumed goes
//! quietly (as `Arc::into_inner`: the others keep the socket open and working).
//! [`Shared::into_fd`], which cannot refuse, hands out a duplicate of the descriptor then; the
//! socket then outlives this `Source`'s fd, and epoll drops an entry only when the socket's
//! last descriptor closes, so the `Source`'s drop removes a registered socket from the epoll
//! set before it closes its fd — always, since a duplicate the user made is as invisible to
//! corio as it is to epoll.
//!
//! # Nonblocking mode
//!
//! Every socket is nonblocking underneath (`O_NONBLOCK`): waiting is corio's business. The
//! *user's* nonblocking mode (`set_nonblocking`, `std`'s semantics) makes the blocking-style
//! calls (`block_op`, `block_stream`) return the system call's `WouldBlock` instead of
//! waiting: in a coroutine, on a plain thread, and in an async task (where a call that may
//! wait panics, a call that never waits is allowed). The async faces (`poll_op`,
//! `poll_stream`) ignore it, as they ignore the timeouts: a task waits by returning
//! `Pending`, which blocks nothing, and tokio has no such mode.
//!
//! The mode must cost nothing on the hot path, where a call that finds its socket ready
//! never looks at it, and a call that must wait with no timeout pays nothing either. So it is
//! not a flag of its own: it is the top bit ([`NONBLOCKING`]) of each direction's `limits`
//! word, which holds that direction's timeout in the bits below and which every
//! blocking-style call already loads. Decoded ([`Limit`]), 0 is `Forever` — one comparison,
//! as when the word held the timeout alone — and a word with the bit set is `NoWait`, which
//! takes the path a timeout takes: past the ready-socket fast path and the no-timeout wait
//! (`block_drains`), it returns the system call's own answer (`Source::once`) instead of
//! building a future; on a plain thread, `block_thread` returns a `WouldBlock` instead of
//! calling `poll(2)`.
//!
//! That answer is a system call's, never the readiness state's. The state says "not ready"
//! until a poller applies the socket's next edge, and the data that edge announces may
//! already be there: a nonblocking read must find it, as `std`'s does. So a call in
//! nonblocking mode that `attempt` answered with "not ready" makes its system call anyway;
//! when `attempt` had made one already (the state said ready), that is two `EAGAIN`s for the
//! call, one for each later call until the next edge (the state is not ready then, and
//! `attempt` skips its system call). A nonblocking call never registers the socket: it never
//! waits.
//!
//! The mode belongs to the socket (`std`'s `O_NONBLOCK` belongs to the open file): every
//! handle sees it, and a socket handed back keeps it. The timeouts stay set under it, for
//! when it is turned off.

use std::future::poll_fn;
use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::registry::{Direction, Registration, ScheduledIo, Wait, may_be_ready};
use super::slot::Ticket;
use crate::runtime::context::{self, Here};

/// The bit of a `Source`'s `limits` words that says nonblocking mode ("Nonblocking mode");
/// the bits below it hold the timeout in ns.
const NONBLOCKING: u64 = 1 << 63;

/// `block_thread`'s `write_shut` for a socket that needs no eventfd (a TCP one): a
/// negative descriptor, which `poll(2)` skips.
const NOT_NEEDED: libc::c_int = -2;

/// How long a blocking-style call may wait for the socket (decoded from `Source::limits`).
#[derive(Clone, Copy, Debug)]
enum Limit {
    /// Until the socket is ready: no timeout.
    Forever,
    /// Until the socket's timeout expires (then `ErrorKind::TimedOut`).
    For(Duration),
    /// Not at all (then `ErrorKind::WouldBlock`): nonblocking mode.
    NoWait,
}

impl Limit {
    /// When a wait with this limit times out, from now. A deadline past what an `Instant` can
    /// hold is none (`connect_timeout` with `Duration::MAX`; a coroutine's wait saturates the
    /// same way).
    fn deadline(&self) -> Option<Instant> {
        match self {
            Limit::For(d) => Instant::now().checked_add(*d),
            _ => None,
        }
    }
}

/// The time left before `deadline`, `None` for no deadline; `TimedOut` once it has passed.
fn time_left(deadline: Option<Instant>) -> io::Result<Option<Duration>> {
    match deadline {
        None => Ok(None),
        Some(deadline) => match deadline.saturating_duration_since(Instant::now()) {
            left if left.is_zero() => Err(timed_out()),
            left => Ok(Some(left)),
        },
    }
}

/// The shortest and longest sleep between two tries of a call that said `WouldBlock` although
/// its socket was reported ready (`block_thread`, `block_retrying`): a receiver that drains
/// at once is met within 50 µs; one that stays full costs a try every 10 ms.
const RETRY_MIN: Duration = Duration::from_micros(50);
const RETRY_MAX: Duration = Duration::from_millis(10);

/// A nonblocking socket `T` (a `std` socket type) as corio waits on it.
pub(crate) struct Source<T: AsRawFd> {
    inner: T,
    /// Set once, the first time an operation must wait inside a runtime; `init` serialises
    /// the registration, and a `close` that finds none yet with it (see `register`).
    registration: OnceLock<Registration>,
    init: Mutex<()>,
    /// Set when a handle was dropped while others remain (see the module doc).
    closed: AtomicBool,
    /// Per direction, how long a blocking-style call may wait: the timeout in ns (0: none)
    /// and, in the top bit, nonblocking mode ([`NONBLOCKING`]; "Nonblocking mode").
    limits: [AtomicU64; 2],
    /// An eventfd that [`shutdown`](Self::shutdown) of the write side signals, made the first
    /// time a plain thread waits to write ([`block_thread`](Self::block_thread) says why).
    write_shut: OnceLock<OwnedFd>,
}

impl<T: AsRawFd> Source<T> {
    /// Wraps `inner`, which the caller has made nonblocking.
    pub(crate) fn new(inner: T) -> Source<T> {
        Source {
            inner,
            registration: OnceLock::new(),
            init: Mutex::new(()),
            closed: AtomicBool::new(false),
            limits: [AtomicU64::new(0), AtomicU64::new(0)],
            write_shut: OnceLock::new(),
        }
    }

    /// The socket, out of the epoll set and with its registration released, for its owner to
    /// use without corio (still nonblocking).
    fn into_inner(self) -> T {
        let mut this = ManuallyDrop::new(self);
        this.leave_epoll();
        drop(this.write_shut.take());
        // SAFETY: `inner` is read once and `this` is never used or dropped after it, so the
        // socket has one owner. The fields left behind need no drop: the registration and
        // the eventfd were taken above, `init` is a `Mutex<()>` and the rest are atomics
        // (forgetting them would at worst leak, never be unsound).
        unsafe { std::ptr::read(&this.inner) }
    }

    /// Takes a registered socket out of its runtime's epoll set and releases its registration
    /// (`Registration::deregister`); the fd stays open. What the drop and `into_inner` do
    /// first.
    fn leave_epoll(&mut self) {
        if let Some(registration) = self.registration.take() {
            registration.deregister(self.inner.as_raw_fd());
        }
    }

    /// The socket, for the calls that never wait (addresses, options).
    #[inline]
    pub(crate) fn get(&self) -> &T {
        &self.inner
    }

    /// [`get`](Self::get) for a user's call: `NotConnected` once another handle closed the
    /// socket, as every other call then (`docs/io.md`, "`try_clone` shares the socket").
    #[inline]
    pub(crate) fn open(&self) -> io::Result<&T> {
        self.check_open()?;
        Ok(&self.inner)
    }

    /// Whether another handle closed the socket (every call now fails with `NotConnected`).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    #[inline]
    fn check_open(&self) -> io::Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(closed_error())
        } else {
            Ok(())
        }
    }

    /// The error `e` of an operation that ran while another handle may have been closing the
    /// socket: `NotConnected` if it was closed, as for every call that starts after the close,
    /// since `e` may be the close's own `shutdown(2)` (`EPIPE` for a write, `EINVAL` for an
    /// accept) rather than anything the peer did.
    #[cold]
    #[inline(never)]
    fn error_unless_closed(&self, e: io::Error) -> io::Error {
        // Acquire: pairs with the Release store in `close`, made before its `shutdown(2)`; an
        // operation that saw the shutdown ran after it (the kernel's socket lock orders them).
        if self.closed.load(Ordering::Acquire) {
            closed_error()
        } else {
            e
        }
    }

    /// An operation's `result`, its error as `error_unless_closed` would have it. Applied by
    /// the public faces (`poll_op`, `block_op_timeout`), not in the retry loop, whose
    /// registers the call would cost (callgrind: ~10 instructions per operation).
    #[inline(always)]
    fn op_unless_closed<R>(&self, result: io::Result<R>) -> io::Result<R> {
        match result {
            Ok(r) => Ok(r),
            Err(e) => Err(self.error_unless_closed(e)),
        }
    }

    /// A stream read or write's `result` for a buffer of `len` bytes, as `op_unless_closed`
    /// would have it; its `Ok(0)` too, when another handle closed the socket: a read's end of
    /// stream that the close's `shutdown(SHUT_RD)` made up, not a FIN from the peer.
    #[inline(always)]
    fn stream_unless_closed(&self, len: usize, result: io::Result<usize>) -> io::Result<usize> {
        match result {
            Ok(n) if n > 0 || len == 0 => Ok(n),
            result => self.stream_end_unless_closed(result),
        }
    }

    /// `stream_unless_closed`'s rare half: an error, or `Ok(0)` for a non-empty buffer.
    #[cold]
    #[inline(never)]
    fn stream_end_unless_closed(&self, result: io::Result<usize>) -> io::Result<usize> {
        // Acquire: as in `error_unless_closed`.
        match result {
            Ok(0) if self.closed.load(Ordering::Acquire) => Err(closed_error()),
            Err(e) => Err(self.error_unless_closed(e)),
            result => result,
        }
    }

    /// `op` once, never waiting: a zero-length stream read or write (`net/stream.rs`, "Zero-length
    /// reads and writes"), `Ok(0)` for `WouldBlock`. On a socket another handle closed it is
    /// `NotConnected`, as every other call.
    #[cold]
    pub(crate) fn at_once(&self, op: impl FnMut(&T) -> io::Result<usize>) -> io::Result<usize> {
        match self.once(op) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(self.error_unless_closed(e)),
            ok => ok,
        }
    }

    /// `op` once (again after `EINTR`), on an open socket, whatever the readiness state says;
    /// its result raw, `WouldBlock` included (`at_once`, and a call in nonblocking mode).
    #[cold]
    fn once<R>(&self, mut op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        self.check_open()?;
        loop {
            match op(&self.inner) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                result => return result,
            }
        }
    }

    /// The timeout of `dir`'s blocking-style calls (`read_timeout`, `write_timeout`), which
    /// nonblocking mode keeps for when it is turned off.
    pub(crate) fn timeout(&self, dir: Direction) -> io::Result<Option<Duration>> {
        self.check_open()?;
        Ok(
            match self.limits[dir as usize].load(Ordering::Relaxed) & !NONBLOCKING {
                0 => None,
                ns => Some(Duration::from_nanos(ns)),
            },
        )
    }

    /// How long a blocking-style call for `dir` may wait: one load, whose common value (0)
    /// decodes with one comparison, as the bare timeout did ("Nonblocking mode").
    fn limit(&self, dir: Direction) -> Limit {
        match self.limits[dir as usize].load(Ordering::Relaxed) {
            0 => Limit::Forever,
            NONBLOCKING.. => Limit::NoWait,
            ns => Limit::For(Duration::from_nanos(ns)),
        }
    }

    /// `set_nonblocking`: the mode of both directions ("Nonblocking mode"); the timeouts are
    /// kept.
    pub(crate) fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        // A setting on a closed socket fails, as every call after the close does.
        self.check_open()?;
        // Relaxed, as the timeouts: a setting publishes no data, and a call that runs at the
        // same time on another thread may see the old mode or the new one.
        for limit in &self.limits {
            if nonblocking {
                limit.fetch_or(NONBLOCKING, Ordering::Relaxed);
            } else {
                limit.fetch_and(!NONBLOCKING, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Whether the socket is in nonblocking mode.
    pub(crate) fn is_nonblocking(&self) -> bool {
        self.limits[Direction::Read as usize].load(Ordering::Relaxed) & NONBLOCKING != 0
    }

    /// `set_read_timeout`/`set_write_timeout`: `Some(0)` is an error, as in `std`.
    pub(crate) fn set_timeout(&self, dir: Direction, timeout: Option<Duration>) -> io::Result<()> {
        let ns = match timeout {
            Some(d) if d.is_zero() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "cannot set a 0 duration timeout",
                ));
            }
            // Below the mode's bit: 2^63 ns is 292 years.
            Some(d) => u64::try_from(d.as_nanos())
                .map_or(NONBLOCKING - 1, |ns| ns.clamp(1, NONBLOCKING - 1)),
            None => 0,
        };
        self.check_open()?; // as `set_nonblocking`
        // The mode's bit as it is (a compare-exchange loop: `set_nonblocking` may run at the
        // same time; `fetch_update` is deprecated on nightly).
        let limit = &self.limits[dir as usize];
        let mut old = limit.load(Ordering::Relaxed);
        while let Err(now) = limit.compare_exchange_weak(
            old,
            (old & NONBLOCKING) | ns,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            old = now;
        }
        Ok(())
    }

    /// The registration, made on first use with the current runtime (else the default one).
    #[inline]
    fn registration(&self) -> io::Result<&Registration> {
        match self.registration.get() {
            Some(registration) => Ok(registration),
            None => self.register(),
        }
    }

    /// The first use's half of `registration`.
    ///
    /// A socket another handle closed is never registered: `close` reads the registration
    /// under `init` too, so a close either comes first — and its `closed` (stored before it
    /// took the lock) is seen here — or finds the registration made here and closes its
    /// `ScheduledIo`. Without that, a close between an operation's `check_open` and the
    /// registration left the new `ScheduledIo` open, and a waiter on a socket whose shutdown
    /// sends no further edge (an unconnected UDP socket reads `EAGAIN` for ever after it)
    /// waited for ever.
    #[cold]
    #[inline(never)]
    fn register(&self) -> io::Result<&Registration> {
        // Not preempted while `init` is held (`runtime/preempt.rs`, "The rule"): another
        // handle of this socket on the same thread would block on it for ever.
        let _no_preempt = crate::runtime::preempt::guard();
        let _init = self.init.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(registration) = self.registration.get() {
            return Ok(registration);
        }
        self.check_open()?;
        let shared = crate::runtime::current_or_default();
        let registration = shared.driver.register(self.inner.as_raw_fd())?;
        Ok(self.registration.get_or_init(|| registration))
    }

    /// Runs `op` (a nonblocking system call on the socket) until it does not return
    /// `WouldBlock`; `Pending` while the socket is not ready for `dir` (the protocol in
    /// `registry.rs`). `ticket`: where the caller's waker waits (`ScheduledIo::wait`); a
    /// caller with nowhere to keep it between polls passes a `None` of its own.
    pub(crate) fn poll_op<R>(
        &self,
        dir: Direction,
        cx: &mut Context<'_>,
        ticket: &mut Option<Ticket>,
        op: impl FnMut(&T) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_op_drains(dir, cx, ticket, op, |_| false)
            .map(|result| self.op_unless_closed(result))
    }

    /// `poll_op` for a stream read or write of `len` bytes: a result short of `len` drained
    /// the socket (step 2 of the protocol in `registry.rs`).
    pub(crate) fn poll_stream(
        &self,
        dir: Direction,
        cx: &mut Context<'_>,
        ticket: &mut Option<Ticket>,
        len: usize,
        op: impl FnMut(&T) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        if len == 0 {
            return Poll::Ready(self.at_once(op)); // `net/stream.rs`, "Zero-length reads..."
        }
        self.poll_op_drains(dir, cx, ticket, op, |&n| n > 0 && n < len)
            .map(|result| self.stream_unless_closed(len, result))
    }

    /// `poll_op`, where `drained(result)` says that a successful `op` left the socket not
    /// ready for `dir`.
    fn poll_op_drains<R>(
        &self,
        dir: Direction,
        cx: &mut Context<'_>,
        ticket: &mut Option<Ticket>,
        mut op: impl FnMut(&T) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        if let Err(e) = self.check_open() {
            return Poll::Ready(Err(e));
        }
        let io = match self.registration() {
            Ok(registration) => registration.io(),
            Err(e) => return Poll::Ready(Err(e)),
        };
        // The coop budget (tokio's `coop::poll_proceed`): a socket that is always ready (a
        // pipelining client, a fast sender) must not let one task hold its worker.
        if !context::budget_proceed() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.poll_registered(io, dir, cx, ticket, &mut op, &drained)
    }

    /// `poll_op_drains` past its budget check, for a registered socket.
    fn poll_registered<R>(
        &self,
        io: &ScheduledIo,
        dir: Direction,
        cx: &mut Context<'_>,
        ticket: &mut Option<Ticket>,
        mut op: impl FnMut(&T) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        loop {
            let state = match self.attempt(io, dir, &mut op, &drained) {
                Ok(result) => return Poll::Ready(result),
                Err(state) => state,
            };
            match io.wait(dir, state, cx.waker(), ticket) {
                Wait::Queued => return Poll::Pending,
                Wait::Retry => continue,
                Wait::Closed => {
                    self.check_open()?;
                    return Poll::Ready(Err(shut_down()));
                }
            }
        }
    }

    /// Steps 1 and 2 of the protocol: the system call if the socket may be ready for `dir`.
    /// `Ok(result)`, or `Err(state)` (the state to wait with) if it would block.
    #[inline]
    fn attempt<R>(
        &self,
        io: &ScheduledIo,
        dir: Direction,
        op: &mut impl FnMut(&T) -> io::Result<R>,
        drained: &impl Fn(&R) -> bool,
    ) -> Result<io::Result<R>, u64> {
        let state = io.state(dir);
        if !may_be_ready(state) {
            return Err(state);
        }
        loop {
            match op(&self.inner) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(io.clear(dir, state)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(r) => {
                    if drained(&r) {
                        io.clear(dir, state);
                    }
                    return Ok(Ok(r));
                }
                // Raw: the public faces map an error of a socket closed meanwhile
                // (`op_unless_closed`), out of this loop's way.
                result => return Ok(result),
            }
        }
    }

    /// `poll_op` as a future.
    pub(crate) async fn op_async<R>(
        &self,
        dir: Direction,
        mut op: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        let mut left = Left::new(self, dir);
        poll_fn(|cx| {
            let poll = self.poll_op(dir, cx, &mut left.ticket, &mut op);
            left.note(poll)
        })
        .await
    }

    /// `poll_stream` as a future.
    pub(crate) async fn stream_async(
        &self,
        dir: Direction,
        len: usize,
        mut op: impl FnMut(&T) -> io::Result<usize>,
    ) -> io::Result<usize> {
        let mut left = Left::new(self, dir);
        poll_fn(|cx| {
            let poll = self.poll_stream(dir, cx, &mut left.ticket, len, &mut op);
            left.note(poll)
        })
        .await
    }

    /// The blocking-style face of `poll_op`, with the socket's timeout and mode for `dir`.
    #[track_caller]
    pub(crate) fn block_op<R>(
        &self,
        dir: Direction,
        op: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        let result = self.block_drains(dir, self.limit(dir), op, |_| false);
        self.op_unless_closed(result)
    }

    /// The blocking-style face of `poll_stream`, with the socket's timeout and mode for `dir`.
    #[track_caller]
    pub(crate) fn block_stream(
        &self,
        dir: Direction,
        len: usize,
        op: impl FnMut(&T) -> io::Result<usize>,
    ) -> io::Result<usize> {
        if len == 0 {
            return self.at_once(op); // `net/stream.rs`, "Zero-length reads and writes"
        }
        let result = self.block_drains(dir, self.limit(dir), op, |&n| n > 0 && n < len);
        self.stream_unless_closed(len, result)
    }

    /// `block_op` with an explicit timeout (`connect_timeout`).
    #[track_caller]
    pub(crate) fn block_op_timeout<R>(
        &self,
        dir: Direction,
        timeout: Option<Duration>,
        op: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        let limit = timeout.map_or(Limit::Forever, Limit::For);
        let result = self.block_drains(dir, limit, op, |_| false);
        self.op_unless_closed(result)
    }

    /// `block_op` for a call whose readiness is not its socket's: an unconnected Unix datagram
    /// socket's `send_to`, which says `EAGAIN` while the *destination's* queue is full. Such a
    /// socket is always writable to `poll(2)` and epoll, and each refused send makes a fresh
    /// `EPOLLOUT` edge (the kernel frees the buffer it had allocated for the datagram, which
    /// wakes the sender's own wait queue), so waiting for an edge woke the coroutine at once,
    /// for ever: 25,000 fruitless resumes in 200 ms (`tests/net_review_datagrams.rs`). `std`'s
    /// blocking send sleeps in the kernel until the receiver reads, a wait nothing outside the
    /// kernel can join. So the call is tried, and while it would block tried again after a
    /// sleep of [`RETRY_MIN`] doubling to [`RETRY_MAX`] (the plain thread's back-off in
    /// `block_thread`), within the socket's write timeout; in nonblocking mode it is tried
    /// once.
    ///
    /// # Panics
    ///
    /// Inside an async task, unless in nonblocking mode (as every blocking-style call).
    #[track_caller]
    pub(crate) fn block_retrying<R>(
        &self,
        dir: Direction,
        mut op: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        let limit = self.limit(dir);
        match context::here() {
            // Its own back-off already (the readiness `poll(2)` gives is as useless).
            Here::Thread => return self.block_op(dir, op),
            Here::Stackless if !matches!(limit, Limit::NoWait) => panic!(
                "a blocking-style corio::net call (read, write, accept, connect...) inside an \
                 async task would stall its worker: use the `_async` form (or the AsyncRead / \
                 AsyncWrite traits) and `.await` it"
            ),
            _ => {}
        }
        let deadline = limit.deadline();
        let mut backoff = RETRY_MIN;
        loop {
            match self.once(&mut op) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if matches!(limit, Limit::NoWait) {
                        return Err(e);
                    }
                }
                result => return self.op_unless_closed(result),
            }
            crate::sleep(time_left(deadline)?.map_or(backoff, |left| left.min(backoff)));
            backoff = (backoff * 2).min(RETRY_MAX);
        }
    }

    /// [`block_retrying`](Self::block_retrying) in an async task: no timeout and no
    /// nonblocking mode, as every async face.
    pub(crate) async fn retrying_async<R>(
        &self,
        mut op: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        let mut backoff = RETRY_MIN;
        loop {
            match self.once(&mut op) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                result => return self.op_unless_closed(result),
            }
            crate::time::sleep_async(backoff).await;
            backoff = (backoff * 2).min(RETRY_MAX);
        }
    }

    /// The blocking-style face of `poll_op_drains`, waiting as long as `limit` allows.
    #[track_caller]
    fn block_drains<R>(
        &self,
        dir: Direction,
        limit: Limit,
        mut op: impl FnMut(&T) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> io::Result<R> {
        // A coroutine with budget left, found with one thread-local access; else where this
        // runs (a coroutine out of budget takes the future's path, which yields first).
        let (ctx, budget) = match context::stackful_budget_proceed() {
            Some(ctx) => (ctx, true),
            None => match context::here() {
                Here::Stackful(ctx) => (ctx, false),
                // A call that never waits cannot stall the task's worker.
                Here::Stackless if matches!(limit, Limit::NoWait) => return self.once(op),
                Here::Stackless => panic!(
                    "a blocking-style corio::net call (read, write, accept, connect...) inside an \
                     async task would stall its worker: use the `_async` form (or the AsyncRead / \
                     AsyncWrite traits) and `.await` it"
                ),
                Here::Thread => return self.block_thread(dir, limit, op),
            },
        };
        // A registered socket that is ready completes here, without building and
        // polling a future under `block_on` (most writes, and reads after a wake-up).
        // It takes a unit of the coop budget as the future would; with none left, the
        // slow path below yields first (`block_on`'s preemption point).
        // The registration and, until the future's first poll has used it, the state
        // to wait with.
        let mut waiting = None;
        if budget
            && self.check_open().is_ok()
            && let Some(registration) = self.registration.get()
        {
            let io = registration.io();
            match self.attempt(io, dir, &mut op, &drained) {
                Ok(result) => return result,
                // Not ready, and no timeout: wait without a future.
                Err(state) if matches!(limit, Limit::Forever) => {
                    return self.wait_stackful(ctx, io, dir, state, &mut op, &drained);
                }
                // Not ready: the future's first poll queues the waker with this state
                // at once (step 3), rather than repeat steps 1 and 2 — or, in nonblocking
                // mode, no wait (below).
                Err(state) => waiting = Some((io, Some(state))),
            }
        }
        // Nonblocking mode: the system call's own answer, without a wait or a registration.
        // Not the readiness state's: an edge for data already there may be waiting for a
        // poller, and `attempt` then skipped the system call ("Nonblocking mode").
        if matches!(limit, Limit::NoWait) {
            return self.once(op);
        }
        self.block_future(ctx, dir, limit, waiting, op, drained)
    }

    /// `block_drains` through a future under `block_on` (or `time::timeout`): a socket not
    /// registered yet, a coroutine out of budget, a wait with a timeout. Out of line, so that
    /// the fast path above stays small enough to be inlined into its callers.
    #[inline(never)]
    fn block_future<R>(
        &self,
        ctx: &crate::task::stackful::StackfulCtx,
        dir: Direction,
        limit: Limit,
        mut waiting: Option<(&ScheduledIo, Option<u64>)>,
        mut op: impl FnMut(&T) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> io::Result<R> {
        // The waker a timed-out wait leaves, taken back when this frame returns.
        let mut left = Left::new(self, dir);
        let mut poll = |cx: &mut Context<'_>, ticket: &mut Option<Ticket>| match &mut waiting {
            Some((io, first)) => {
                if let Some(state) = first.take()
                    && io.wait(dir, state, cx.waker(), ticket) == Wait::Queued
                {
                    return Poll::Pending;
                }
                // A wake-up, a retry (an edge came after the attempt) or a closed
                // registration: the protocol from step 1, without the budget. A poll
                // after the first follows a resume, which starts the task's budget
                // afresh (`context::enter_task`), and the fast path above took this
                // operation's unit.
                if let Err(e) = self.check_open() {
                    return Poll::Ready(Err(e));
                }
                self.poll_registered(io, dir, cx, ticket, &mut op, &drained)
            }
            // Not registered yet, or out of budget (`block_on_stackful` yields first;
            // the poll after the resume takes a unit of the new budget).
            None => self.poll_op_drains(dir, cx, ticket, &mut op, &drained),
        };
        let fut = poll_fn(|cx| {
            let result = poll(cx, &mut left.ticket);
            left.note(result)
        });
        match limit {
            Limit::For(d) => match crate::time::timeout(d, fut) {
                Ok(result) => result,
                // The deadline passed while the readiness state said "not ready". That state
                // may be stale: an edge for data (or room) already there waits in the epoll
                // set until a poller takes it, and a busy worker polls only every so many
                // rounds, while its timers fire every round. So the system call decides, as
                // in nonblocking mode: `std`'s `SO_RCVTIMEO` read returns what is there.
                Err(_) => match self.once(&mut op) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(timed_out()),
                    result => result,
                },
            },
            _ => crate::block_on::block_on_stackful(ctx, fut),
        }
    }

    /// A coroutine's wait for `dir` without a timeout, once the fast path in `block_drains`
    /// found the socket not ready (`state`: the state to wait with): step 3 of the protocol,
    /// suspending while the waker is queued, then steps 1 and 2 again, until the operation
    /// completes. This is what `block_on_stackful` of `block_drains`'s future does (the same
    /// calls in the same order, under the same no-preempt guard), without building, pinning
    /// and polling a future and a `Context` around them. A coroutine that was over its budget
    /// does not get here: it took the future's path, which yields first.
    fn wait_stackful<R>(
        &self,
        ctx: &crate::task::stackful::StackfulCtx,
        io: &ScheduledIo,
        dir: Direction,
        mut state: u64,
        op: &mut impl FnMut(&T) -> io::Result<R>,
        drained: &impl Fn(&R) -> bool,
    ) -> io::Result<R> {
        let _no_preempt = ctx.no_preempt();
        // Where the coroutine's waker waits: kept across spurious resumes, so that it is
        // counted once, and taken back by an abort.
        let mut ticket = None;
        loop {
            match io.wait(dir, state, ctx.waker(), &mut ticket) {
                // Resumed by the wake-up (or spuriously): the protocol from step 1. An abort
                // unwinds from the suspension, taking the waker back first.
                Wait::Queued => ctx.suspend_blocked_on_io(io, dir, ticket),
                Wait::Retry => {}
                Wait::Closed => {
                    self.check_open()?;
                    return Err(shut_down());
                }
            }
            self.check_open()?;
            match self.attempt(io, dir, op, drained) {
                Ok(result) => return result,
                Err(next) => state = next,
            }
        }
    }

    /// On a plain thread: the system call, and `poll(2)` while it would block.
    ///
    /// `poll(2)` can say ready while the call still would block: an unconnected Unix datagram
    /// socket is always writable to `poll`, whatever its destination's queue holds (epoll's
    /// edge comes from the destination when it drains, which `poll` does not wait for). After
    /// a ready `poll` the call found nothing to do, the thread sleeps before polling again,
    /// 50 µs doubling to 10 ms (within the deadline), instead of spinning.
    ///
    /// # A write and the shutdown of its direction
    ///
    /// `poll(2)` does not report a Unix socket's own `shutdown(Write)`: its `POLLOUT` follows
    /// the send buffer's space alone, and no `POLLHUP` comes until both directions are shut.
    /// So a plain thread waiting to write into a full Unix stream or datagram socket would
    /// sleep for ever when another handle shuts the write side down (or drops an
    /// `OwnedWriteHalf`, which does that), where `std`'s blocking write wakes with `EPIPE`.
    /// A writer therefore also polls the source's `write_shut` eventfd, which
    /// [`shutdown`](Self::shutdown) signals. The eventfd is made when a plain thread first
    /// has to wait to write, and the writer then tries its call once more before it polls: a
    /// shutdown that came before the eventfd existed (and so could not signal it) is seen by
    /// that call (`EPIPE`). The order that makes this hold: the writer publishes the eventfd,
    /// then makes its system call; the shutdown makes its system call, then looks for the
    /// eventfd; so either the shutdown finds the eventfd or the writer's call comes after the
    /// shutdown's. If no eventfd can be made (out of descriptors), the writer polls for at
    /// most 10 ms at a time and tries again.
    ///
    /// A TCP socket needs none: its `poll` reports its own `shutdown(Write)` (`POLLOUT`), so a
    /// writer on one polls the socket alone, and the socket holds no second descriptor for its
    /// life (it did, whenever a plain thread had waited to connect or to write:
    /// `tests/net_review_fds.rs`).
    fn block_thread<R>(
        &self,
        dir: Direction,
        limit: Limit,
        mut op: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        let deadline = limit.deadline();
        let left = || time_left(deadline);
        let events = match dir {
            Direction::Read => libc::POLLIN | libc::POLLRDHUP,
            Direction::Write => libc::POLLOUT,
        };
        // Zero until a ready `poll` is followed by a call that would block.
        let mut backoff = Duration::ZERO;
        // A writer's view of `write_shut`: `None` until it has had to wait, then the eventfd,
        // -1 if none could be made, or `NOT_NEEDED` (a TCP socket).
        let mut write_shut: Option<libc::c_int> = None;
        loop {
            self.check_open()?;
            match op(&self.inner) {
                // Nonblocking mode: no `poll`.
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock && !matches!(limit, Limit::NoWait) => {
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Raw, as `attempt`'s: the faces map a closed socket's error.
                result => return result,
            }
            if dir == Direction::Write && write_shut.is_none() {
                if self.is_tcp() {
                    write_shut = Some(NOT_NEEDED);
                } else {
                    // Made, then the call tried again before any poll (see the doc above).
                    write_shut = Some(self.write_shut_fd().unwrap_or(-1));
                    // Orders the publication before the call tried next; pairs with the fence
                    // in `shutdown` (the two sides of a Dekker pattern, the kernel's socket
                    // state the other variable).
                    std::sync::atomic::fence(Ordering::SeqCst);
                    continue;
                }
            }
            if !backoff.is_zero() {
                std::thread::sleep(left()?.map_or(backoff, |left| left.min(backoff)));
            }
            let mut timeout_ms = match left()? {
                None => -1,
                // Rounded up: a 0 would spin until the deadline.
                Some(left) => {
                    left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int
                }
            };
            if write_shut == Some(-1) && !(0..=10).contains(&timeout_ms) {
                timeout_ms = 10;
            }
            // The socket, and for a writer the eventfd a shutdown signals (skipped by `poll`
            // when it is -1, or absent for a reader).
            let mut pfds = [
                libc::pollfd {
                    fd: self.inner.as_raw_fd(),
                    events,
                    revents: 0,
                },
                libc::pollfd {
                    fd: write_shut.unwrap_or(-1),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two valid pollfds; EINTR and timeouts are handled by the loop. The
            // eventfd, if any, lives as long as `self`.
            let ready = unsafe { libc::poll(pfds.as_mut_ptr(), 2, timeout_ms) };
            backoff = if ready > 0 {
                (backoff * 2).clamp(RETRY_MIN, RETRY_MAX)
            } else {
                Duration::ZERO
            };
        }
    }

    /// `shutdown(2)`, then the directions it shut marked final, waking their waiters: the
    /// kernel may announce a shutdown with no edge (a Unix stream's `shutdown(Write)` with a
    /// full send buffer reports no `EPOLLOUT`, so a write that found the buffer full waited
    /// for ever instead of trying `send`, which says `EPIPE`). A shut direction stays shut, so
    /// its final bit is true for good; it only makes operations try their system call.
    pub(crate) fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
        use std::net::Shutdown;
        // Another handle's close shut the socket down already: this is `NotConnected`, as
        // every call then (Linux would accept a second `shutdown`).
        self.check_open()?;
        let (how_c, dirs): (_, &[Direction]) = match how {
            Shutdown::Read => (libc::SHUT_RD, &[Direction::Read]),
            Shutdown::Write => (libc::SHUT_WR, &[Direction::Write]),
            Shutdown::Both => (libc::SHUT_RDWR, &[Direction::Read, Direction::Write]),
        };
        // SAFETY: the fd is open (we hold it); `shutdown` reads nothing from our memory.
        if unsafe { libc::shutdown(self.inner.as_raw_fd(), how_c) } == -1 {
            return Err(io::Error::last_os_error());
        }
        // After the system call, so a waiter woken here finds the socket shut.
        if let Some(registration) = self.registration.get() {
            for &dir in dirs {
                registration.shut_down(dir);
            }
        }
        // And plain threads waiting to write (`block_thread`, "A write and the shutdown of
        // its direction"): looked for after the system call, which the fence orders before
        // the load (pairs with the fence in `block_thread`).
        std::sync::atomic::fence(Ordering::SeqCst);
        if let (Some(fd), true) = (self.write_shut.get(), how != Shutdown::Read) {
            let one = 1u64;
            // SAFETY: an eventfd this source owns; an 8-byte write of a valid u64. It cannot
            // fail but at a counter near u64::MAX, which one write per shutdown never reaches.
            unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
        Ok(())
    }

    /// Whether the socket is a TCP one (`SO_PROTOCOL`), whose `poll` reports its own
    /// `shutdown(Write)` (`block_thread`); a socket whose protocol cannot be read is not.
    fn is_tcp(&self) -> bool {
        let mut protocol: libc::c_int = 0;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `protocol` and `len` are valid out-pointers for an `int` option; the fd is
        // open (we hold it).
        let r = unsafe {
            libc::getsockopt(
                self.inner.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PROTOCOL,
                (&raw mut protocol).cast(),
                &mut len,
            )
        };
        r == 0 && protocol == libc::IPPROTO_TCP
    }

    /// The eventfd a write-side [`shutdown`](Self::shutdown) signals, made on first use; an
    /// error if none can be made.
    fn write_shut_fd(&self) -> io::Result<libc::c_int> {
        if let Some(fd) = self.write_shut.get() {
            return Ok(fd.as_raw_fd());
        }
        // SAFETY: a plain system call with no pointer arguments.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a descriptor eventfd just returned, owned by nothing else.
        let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        // Two writers racing: one eventfd wins and the other is closed; both poll the winner.
        Ok(self.write_shut.get_or_init(|| fd).as_raw_fd())
    }

    /// Closes the socket for every handle (see the module doc).
    fn close(&self) {
        // Release: pairs with the Acquire load in `check_open` (and, through `init`, with the
        // one in `register`).
        self.closed.store(true, Ordering::Release);
        // A registration being made right now is waited for (`register` explains why).
        let registration = match self.registration.get() {
            Some(registration) => Some(registration),
            None => {
                // As in `register`.
                let _no_preempt = crate::runtime::preempt::guard();
                let _init = self.init.lock().unwrap_or_else(|e| e.into_inner());
                self.registration.get()
            }
        };
        if let Some(registration) = registration {
            registration.io().close();
        }
        // SAFETY: the fd is open (we hold it); shutting down a socket that is not connected
        // fails harmlessly (ENOTCONN), which is ignored.
        unsafe { libc::shutdown(self.inner.as_raw_fd(), libc::SHUT_RDWR) };
    }
}

impl<T: AsRawFd> Drop for Source<T> {
    fn drop(&mut self) {
        // Before `inner` closes: epoll drops an entry only when the socket's *last* descriptor
        // closes, and this one may not be the last — `into_raw_fd` handed out a duplicate
        // (`Shared::into_fd`), or the user made one (`as_fd().try_clone_to_owned()`, a `fork`,
        // `SCM_RIGHTS`), which corio cannot know of. Left in the set, the socket's every edge
        // would wake the runtime for nothing while the duplicate lives ("Handing the socket
        // back"). One system call per registered socket, as Go's and tokio's close.
        self.leave_epoll();
    }
}

/// One handle to a shared [`Source`]; what its drop does to the socket depends on what kind of
/// handle it is ([`OnDrop`]).
pub(crate) struct Shared<T: AsRawFd> {
    source: Arc<Source<T>>,
    /// Changed only by the owner of the handle (`split`, `reunite`), which holds it by value
    /// or `&mut`.
    on_drop: OnDrop,
}

/// What dropping a [`Shared`] handle does while other handles remain (the last handle's drop
/// closes the descriptor, whatever its kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OnDrop {
    /// A whole handle (`new`, `try_clone`, a reunited stream): close the socket for all of
    /// them (the module doc).
    CloseAll,
    /// `into_split`'s read half: nothing.
    Nothing,
    /// `into_split`'s write half: shut the write direction down (the peer reads EOF), as
    /// tokio's `OwnedWriteHalf`.
    ShutdownWrite,
}

impl<T: AsRawFd> Shared<T> {
    pub(crate) fn new(inner: T) -> Shared<T> {
        Shared {
            source: Arc::new(Source::new(inner)),
            on_drop: OnDrop::CloseAll,
        }
    }

    /// A second handle to the same socket (`try_clone`); `NotConnected` once the socket was
    /// closed, as every call after the close.
    pub(crate) fn share(&self) -> io::Result<Shared<T>> {
        self.source.check_open()?;
        Ok(Shared {
            source: self.source.clone(),
            on_drop: OnDrop::CloseAll,
        })
    }

    /// Makes this handle the read half of `into_split` and returns the write half: dropping
    /// either leaves the other working (the write half's drop shuts the write direction
    /// down); the socket closes when both are gone.
    pub(crate) fn split(&mut self) -> Shared<T> {
        self.on_drop = OnDrop::Nothing;
        Shared {
            source: self.source.clone(),
            on_drop: OnDrop::ShutdownWrite,
        }
    }

    /// Whether `self` and `other` are handles to the same socket (`reunite`'s test).
    pub(crate) fn same_socket(&self, other: &Shared<T>) -> bool {
        Arc::ptr_eq(&self.source, &other.source)
    }

    /// Undoes `split`: makes this handle whole again and lets `other`, a handle to the same
    /// socket, go without its drop's effect — the two count as one handle from here on, so
    /// the last-handle rules (`into_std`, the fd's close) see one handle where `split` made
    /// two.
    pub(crate) fn reunite(&mut self, mut other: Shared<T>) {
        debug_assert!(
            self.same_socket(&other),
            "reunite: halves of different sockets"
        );
        other.on_drop = OnDrop::Nothing;
        drop(other);
        self.on_drop = OnDrop::CloseAll;
    }
}

impl<T: AsRawFd + AsFd> Shared<T> {
    /// The `Source`, if this is the last handle; else the `Arc`, whose drop is quiet (it does
    /// not close the socket for the handles left).
    fn into_source(self) -> Result<Source<T>, Arc<Source<T>>> {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped after the `Arc` is read out of it, so the
        // reference it counts moves here once.
        let source = unsafe { std::ptr::read(&this.source) };
        Arc::try_unwrap(source)
    }

    /// `into_std` (`net/fd.rs`): the socket in blocking mode (unless in nonblocking mode), out
    /// of corio's epoll sets;
    /// `ResourceBusy` if other handles share it (this one goes quietly), `NotConnected` if
    /// another handle closed it (it is closed now).
    pub(crate) fn into_std(self) -> io::Result<T> {
        let source = self.into_source().map_err(|_| shared_error())?;
        // Acquire: as in `check_open`.
        if source.closed.load(Ordering::Acquire) {
            return Err(closed_error());
        }
        let nonblocking = source.is_nonblocking();
        let socket = source.into_inner();
        if !nonblocking {
            set_blocking(socket.as_fd())?;
        }
        Ok(socket)
    }

    /// `IntoRawFd` and `From<_> for OwnedFd` (`net/fd.rs`): as `into_std` for the last handle
    /// (also for a closed socket, whose descriptor stays shut down); with other handles left,
    /// a duplicate of the descriptor, nonblocking as the file it shares with them.
    ///
    /// # Panics
    ///
    /// If a duplicate is needed and the process has no descriptor left for it.
    pub(crate) fn into_fd(self) -> OwnedFd
    where
        T: Into<OwnedFd>,
    {
        match self.into_source() {
            Ok(source) => {
                let nonblocking = source.is_nonblocking();
                let fd: OwnedFd = source.into_inner().into();
                if !nonblocking {
                    set_blocking(fd.as_fd()).expect("FIONBIO on an open descriptor cannot fail");
                }
                fd
            }
            Err(source) => {
                let fd = source.inner.as_fd().try_clone_to_owned().expect(
                    "into_raw_fd on a socket other handles share must duplicate its descriptor",
                );
                // Whichever handle drops last takes the socket out of the epoll set.
                fd
            }
        }
    }
}

/// Clears `O_NONBLOCK` (the file's, shared by every duplicate of the descriptor).
fn set_blocking(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<()> {
    let mut off: libc::c_int = 0;
    // SAFETY: `FIONBIO` reads one `c_int` from a valid pointer; `fd` is open (borrowed).
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONBIO, &mut off) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl<T: AsRawFd> std::ops::Deref for Shared<T> {
    type Target = Source<T>;

    #[inline]
    fn deref(&self) -> &Source<T> {
        &self.source
    }
}

impl<T: AsRawFd> Drop for Shared<T> {
    fn drop(&mut self) {
        match self.on_drop {
            OnDrop::CloseAll if Arc::strong_count(&self.source) > 1 => self.source.close(),
            OnDrop::ShutdownWrite => {
                let _ = self.source.shutdown(std::net::Shutdown::Write); // the peer may be gone
            }
            _ => {}
        }
    }
}

impl<T: AsRawFd + std::fmt::Debug> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.source.inner.fmt(f)
    }
}

/// The error of an operation on a socket another handle closed.
/// Where a waiting future left its waker — a direction of `source` and the entry it is
/// counted in (`ScheduledIo::wait`'s [`Ticket`]) — so that a future dropped before its
/// wake-up (a `select`, a timeout) takes it back (`ScheduledIo::withdraw`) instead of leaving
/// it, and its task, held by the socket until the next edge; `wait` also reads it, to count a
/// future polled again once and to take back the old waker of one polled with a new waker.
/// Costs a store per `Ready` and a test when it goes.
struct Left<'a, T: AsRawFd> {
    source: &'a Source<T>,
    dir: Direction,
    ticket: Option<Ticket>,
}

impl<'a, T: AsRawFd> Left<'a, T> {
    fn new(source: &'a Source<T>, dir: Direction) -> Left<'a, T> {
        Left {
            source,
            dir,
            ticket: None,
        }
    }

    /// Notes `poll`, the result of a poll for this direction that passed `self.ticket` to
    /// `wait`: a `Ready` future waits no more. (A `Pending` leaves the ticket as `wait` set
    /// it; after a budget yield, as the last wait left it.)
    #[inline]
    fn note<R>(&mut self, poll: Poll<R>) -> Poll<R> {
        if poll.is_ready() {
            self.ticket = None;
        }
        poll
    }
}

impl<T: AsRawFd> Drop for Left<'_, T> {
    /// Inline: almost every future goes after its wake-up (or without waiting), with nothing
    /// to take back — a test and no call.
    #[inline]
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket {
            self.source.withdraw(self.dir, ticket);
        }
    }
}

impl<T: AsRawFd> Source<T> {
    /// `Left`'s drop for a waiting future (out of line: rare).
    #[cold]
    #[inline(never)]
    fn withdraw(&self, dir: Direction, ticket: Ticket) {
        if let Some(registration) = self.registration.get() {
            registration.io().withdraw(dir, ticket);
        }
    }
}

pub(crate) fn closed_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotConnected,
        "the socket was closed (another handle to it was dropped)",
    )
}

/// `into_std`'s error on a socket other handles share.
fn shared_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ResourceBusy,
        "into_std: other handles share this socket (try_clone); it stays theirs",
    )
}

/// The error of an operation on a socket whose runtime shut down.
fn shut_down() -> io::Error {
    io::Error::other("the corio runtime this socket was registered with has shut down")
}

pub(crate) fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "the socket's timeout expired")
}

/// Sleeps blocking-style where this runs: the coroutine in a coroutine, else the thread.
pub(crate) fn sleep_here(d: Duration) {
    match context::here() {
        Here::Stackful(_) => crate::sleep(d),
        _ => std::thread::sleep(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a waker waits on `source`'s reads (taking the slot's, if any, and waking it).
    fn holds_wakers(source: &Source<std::net::UdpSocket>) -> bool {
        let registration = source.registration.get().expect("the socket waited");
        registration.io().holds_wakers(Direction::Read)
    }

    /// A coroutine whose read timed out, or that was aborted while it waited, takes its waker
    /// back: the socket does not hold the finished task until its next edge. Before, both
    /// left it in the slot.
    #[test]
    #[cfg_attr(miri, ignore)] // a runtime: epoll, timerfd, sockets
    fn a_coroutine_that_gives_up_a_wait_takes_its_waker_back() {
        let rt = crate::Runtime::builder().workers(1).build().unwrap();
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_nonblocking(true).unwrap();
        let source = Arc::new(Source::new(socket));
        rt.run(move || {
            let recv = |s: &std::net::UdpSocket| s.recv(&mut [0; 8]);
            source
                .set_timeout(Direction::Read, Some(Duration::from_millis(20)))
                .unwrap();
            // The first registers the socket (the future's path), the second waits from the
            // fast path's attempt.
            for read in ["first", "second"] {
                let e = source.block_op(Direction::Read, recv).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::TimedOut);
                assert!(
                    !holds_wakers(&source),
                    "the {read} timed-out read left its waker"
                );
            }

            source.set_timeout(Direction::Read, None).unwrap();
            let waiting = source.clone();
            let reader = crate::go(move || waiting.block_op(Direction::Read, recv));
            // One worker: the reader runs and waits while this coroutine sleeps.
            crate::sleep(Duration::from_millis(50));
            reader.abort();
            assert!(reader.join().is_err());
            assert!(!holds_wakers(&source), "the aborted read left its waker");
        });
    }
}
