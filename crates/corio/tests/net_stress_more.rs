//! More of `net_stress.rs`'s randomised bug hunt, on what that file leaves out: datagram
//! sockets, Unix streams, and waiters woken from the other worker. On both scheduler flavours:
//!
//! - a datagram soak: links of two sockets — UDP connected (`send`/`recv`) or not
//!   (`send_to`/`recv_from`, the sender's address checked), a `UnixDatagram` pair, or two
//!   `UnixDatagram`s bound to paths — whose client and echo ends are each a stackful coroutine,
//!   an async task or a plain thread. The client sends numbered datagrams of random sizes (up to
//!   60 KB) and checks every echo's id, sequence number, length and bytes (Unix datagrams in
//!   order; UDP ones in any order, which loopback does not promise); now and then, with nothing
//!   in flight, it makes a receive that must time out (`set_read_timeout`, or `timeout_async`
//!   around `recv_async`) and then goes on using the socket. Loopback drops a datagram only when
//!   a receive buffer or the per-CPU backlog overflows, so each link keeps at most a few
//!   datagrams and half a default receive buffer's worth of bytes in flight, and all the links
//!   together far fewer packets than `netdev_max_backlog`: no datagram may be lost, and a
//!   missing echo is a failure (after a generous limit, as a missed wakeup would look the same).
//! - the same soak cut short (coroutines and tasks only): the runtime is dropped a few
//!   milliseconds in, with datagrams in flight and ends waiting, and must close every socket.
//! - races: a waiter (a coroutine, a task or a plain thread) in `recv`/`recv_from` on a UDP or
//!   Unix datagram socket, or in `read`/`write` on a Unix stream or a TCP stream (whose waits
//!   `net_stress` races in coroutines only), or in `accept` on a TCP or Unix listener (raced
//!   against a clone's drop, or a connection), while another coroutine drops a `try_clone`, shuts
//!   the socket down, drops the peer (not for a datagram socket's reader, which its peer's close
//!   does not wake, in the kernel either) or hands a clone back with `into_std`, after a random
//!   pause; or while datagrams/bytes arrive at random moments for a waiter that times out again
//!   and again, or that is aborted; a write that times out again and again under a slow drain;
//!   the halves of `into_split` (a read half's wait against the write half's drop, a write
//!   half's transfer against the read half's); and ping-pongs of random sizes. The waiter must
//!   wake (with data, EOF or an error as the race allows), never hang, and never lose what was
//!   sent.
//! - the same races across workers: on the 2-worker runtime each side runs on a worker of its
//!   own — the waiter on one, the dropper, shutter or sender on the other — plus ping-pongs
//!   (TCP, Unix stream, UDP, Unix datagram) whose two ends sit on different workers, so every
//!   wakeup crosses them. A started coroutine never changes thread, and `go_local`/`spawn_local`
//!   keep a child on its spawner's worker, so the test starts one "anchor" coroutine on each
//!   worker (spawning probes until each worker has one) and has the anchors spawn the sides.
//!   On the 1-worker runtime both anchors are the one worker, and the races run there.
//! - after each test, with its runtime dropped, the process has the descriptors it had before.
//!
//! The randomness is seeded as in `net_stress.rs`: `NET_STRESS_SEED` replays a run's random
//! choices (not the threads' interleaving); every assertion message names the seed, and each
//! test prints it first. The tests count the process's descriptors, so they run one at a time
//! (`SERIAL`).

#[macro_use]
mod support;

use std::collections::BTreeMap;
use std::future::Future;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use corio::net::{TcpStream, UdpSocket, UnixDatagram, UnixStream};
use support::stress::{cut_rounds, hunt, no_fd_leak, nothing_read, pause};
use support::{EVENTUALLY, Rng, TempDir, within};

/// Serialises the tests of this file: each compares the process's descriptors before and after
/// its runtime, which another test's sockets would disturb.
static SERIAL: Mutex<()> = Mutex::new(());

/// The datagram soak's links per flavour, and datagrams per link (at most).
const LINKS: u64 = 32;
const DATAGRAMS: u64 = 60;

/// Datagrams one link keeps in flight at most (below `max_dgram_qlen`'s default of 10, so that a
/// Unix sender is not held up by its peer's queue; 32 links of this many are far below
/// `netdev_max_backlog`'s 1000 packets).
const WINDOW: u64 = 8;

/// Races per flavour in each of the race tests.
const RACES: u64 = 600;

/// How long a soak waits for an echo before calling it lost: generous, as a lost wakeup looks
/// the same (and the watchdog's limit is longer).
const ECHO_LIMIT: Duration = Duration::from_secs(20);

/// The sequence number of the datagram that ends a link (the echo end replies and stops).
const END: u64 = u64::MAX;

/// A join's value; a panic in the joined task is resumed here, so that its own message (which
/// names the seed) is the test's.
fn joined<T>(r: Result<T, corio::JoinError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("a task was cancelled: {e:?}"),
    }
}

/// Where a side of a test runs.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Style {
    Coroutine,
    Task,
    /// A plain thread outside the runtime, with the blocking-style calls.
    Thread,
}

const STYLES: [Style; 3] = [Style::Coroutine, Style::Task, Style::Thread];

fn style(rng: &mut Rng) -> Style {
    STYLES[rng.below(3) as usize]
}

/// A running side: a coroutine or task, or a plain thread (joined by polling, so that a
/// coroutine joining it does not block its worker, and a hang is reported rather than waited).
enum Side<T> {
    Corio(corio::JoinHandle<T>),
    Thread(std::thread::JoinHandle<T>),
}

impl<T> Side<T> {
    fn join(self) -> Result<T, String> {
        match self {
            Side::Corio(h) => Ok(joined(h.join())),
            Side::Thread(t) => {
                let since = Instant::now();
                while !t.is_finished() {
                    if since.elapsed() > EVENTUALLY {
                        return Err("a plain thread's wait never ended".into());
                    }
                    corio::sleep(Duration::from_millis(1));
                }
                Ok(t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Placement: anchors, one coroutine per worker, through which the sides are spawned.

type Job = Box<dyn FnOnce() + Send>;

/// A coroutine that runs jobs on its worker's thread (it never leaves it once started); the
/// jobs spawn with `go_local`/`spawn_local`, which keep the children on that worker.
struct Anchor {
    thread: ThreadId,
    jobs: corio::chan::Sender<Job>,
}

/// Where the sides of a race are spawned: anywhere (`corio::go`/`corio::spawn`), or on the
/// anchors, side `k` on anchor `k % anchors.len()`.
struct Places {
    anchors: Vec<Anchor>,
}

impl Places {
    fn anywhere() -> Places {
        Places {
            anchors: Vec::new(),
        }
    }

    /// An anchor on each of the runtime's `workers` workers. Probes are spawned in batches, each
    /// holding its worker's thread for a moment before it reports it, so that the other worker
    /// steals some; the first probe seen on each thread stays as its anchor, the others end.
    fn apart(workers: usize, seed: u64) -> Places {
        let mut anchors: Vec<Anchor> = Vec::new();
        let mut batches = 0;
        while anchors.len() < workers {
            batches += 1;
            assert!(
                batches <= 200,
                "seed {seed}: no coroutine started on each of {workers} workers in 200 batches"
            );
            let probes: Vec<_> = (0..8)
                .map(|_| {
                    let (tx, rx) = corio::chan::bounded::<Job>(0);
                    let (ttx, trx) = corio::chan::bounded(1);
                    corio::go(move || {
                        std::thread::sleep(Duration::from_micros(300));
                        let _ = ttx.send(std::thread::current().id());
                        for job in rx {
                            job();
                        }
                    });
                    (tx, trx)
                })
                .collect();
            for (jobs, trx) in probes {
                let thread = trx.recv().expect("a probe reports its thread");
                if anchors.len() < workers && !anchors.iter().any(|a| a.thread == thread) {
                    anchors.push(Anchor { thread, jobs });
                }
            }
        }
        eprintln!("anchors on {workers} worker threads after {batches} batches of probes");
        let places = Places { anchors };
        // The children stay on their anchor's thread.
        for (k, a) in places.anchors.iter().enumerate() {
            let there = places.go(k, || std::thread::current().id());
            assert_eq!(
                joined(there.join()),
                a.thread,
                "seed {seed}: go_local left its anchor's worker"
            );
        }
        places
    }

    /// Runs `job` on side `k`'s anchor and returns what it returns.
    fn on_anchor<R: Send + 'static>(
        &self,
        k: usize,
        job: impl FnOnce() -> R + Send + 'static,
    ) -> R {
        let anchor = &self.anchors[k % self.anchors.len()];
        let (tx, rx) = corio::chan::bounded(1);
        anchor
            .jobs
            .send(Box::new(move || {
                let _ = tx.send(job());
            }))
            .unwrap_or_else(|_| panic!("an anchor is gone"));
        rx.recv().expect("an anchor ran the job")
    }

    /// A coroutine for side `k`.
    fn go<T: Send + 'static>(
        &self,
        k: usize,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> corio::JoinHandle<T> {
        if self.anchors.is_empty() {
            corio::go(f)
        } else {
            self.on_anchor(k, move || corio::go_local(f))
        }
    }

    /// A task for side `k`.
    fn spawn<F>(&self, k: usize, fut: F) -> corio::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if self.anchors.is_empty() {
            corio::spawn(fut)
        } else {
            self.on_anchor(k, move || corio::spawn_local(fut))
        }
    }

    /// Side `k` in `style`: `blocking` in a coroutine or a plain thread, else `fut` in a task.
    fn side<T: Send + 'static, F>(
        &self,
        k: usize,
        style: Style,
        blocking: impl FnOnce() -> T + Send + 'static,
        fut: impl FnOnce() -> F + Send + 'static,
    ) -> Side<T>
    where
        F: Future<Output = T> + Send + 'static,
    {
        match style {
            Style::Coroutine => Side::Corio(self.go(k, blocking)),
            Style::Task => Side::Corio(self.spawn(k, async move { fut().await })),
            Style::Thread => Side::Thread(std::thread::spawn(blocking)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The datagram soak.

/// The byte at `offset` of datagram `seq` of link `id`.
fn byte_at(id: u64, seq: u64, offset: u64) -> u8 {
    let x = ((id << 32) ^ seq ^ (offset / 97)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8) ^ (offset as u8)
}

/// Datagram `seq` of link `id`: its id and sequence number (16 bytes), then its bytes.
fn datagram(id: u64, seq: u64, len: usize) -> Vec<u8> {
    let mut d: Vec<u8> = (0..len as u64).map(|i| byte_at(id, seq, i)).collect();
    d[..8].copy_from_slice(&id.to_le_bytes());
    d[8..16].copy_from_slice(&seq.to_le_bytes());
    d
}

/// The sequence number of `d`, a datagram of link `id`, or what is wrong with it.
fn parse(id: u64, d: &[u8]) -> Result<u64, String> {
    if d.len() < 16 {
        return Err(format!("a datagram of {} bytes", d.len()));
    }
    let got_id = u64::from_le_bytes(d[..8].try_into().unwrap());
    let seq = u64::from_le_bytes(d[8..16].try_into().unwrap());
    if got_id != id {
        return Err(format!("a datagram of link {got_id} (seq {seq})"));
    }
    match (16..d.len()).find(|&i| d[i] != byte_at(id, seq, i as u64)) {
        None => Ok(seq),
        Some(i) => Err(format!("datagram {seq}: wrong byte at {i}")),
    }
}

/// A datagram's size: mostly small, some large (a UDP datagram on loopback fits in one
/// 64 KiB packet).
fn dgram_size(rng: &mut Rng) -> usize {
    match rng.below(10) {
        0..=5 => 16 + rng.below(1024) as usize,
        6..=8 => 1024 + rng.below(15 << 10) as usize,
        _ => (16 << 10) + rng.below(44 << 10) as usize,
    }
}

/// The bytes a link keeps in flight at most: half the smaller of the default receive and send
/// buffers (a datagram is charged about twice its size at worst).
fn byte_budget() -> usize {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(212_992)
    };
    read("/proc/sys/net/core/rmem_default").min(read("/proc/sys/net/core/wmem_default")) / 2
}

/// What a datagram counts against the budget.
fn cost(len: usize) -> usize {
    2 * len + 1024
}

/// A datagram socket of either family.
enum Dgram {
    Udp(UdpSocket),
    Unix(UnixDatagram),
}

/// Where a datagram goes, or where one came from.
#[derive(Debug, Clone, PartialEq)]
enum Peer {
    /// The connected peer (`send`/`recv`).
    Connected,
    Udp(SocketAddr),
    Unix(PathBuf),
}

impl Dgram {
    fn send(&self, buf: &[u8], to: &Peer) -> std::io::Result<usize> {
        match (self, to) {
            (Dgram::Udp(s), Peer::Connected) => s.send(buf),
            (Dgram::Unix(s), Peer::Connected) => s.send(buf),
            (Dgram::Udp(s), Peer::Udp(a)) => s.send_to(buf, *a),
            (Dgram::Unix(s), Peer::Unix(p)) => s.send_to(buf, p),
            _ => unreachable!("a peer of the other family"),
        }
    }

    async fn send_async(&self, buf: &[u8], to: &Peer) -> std::io::Result<usize> {
        match (self, to) {
            (Dgram::Udp(s), Peer::Connected) => s.send_async(buf).await,
            (Dgram::Unix(s), Peer::Connected) => s.send_async(buf).await,
            (Dgram::Udp(s), Peer::Udp(a)) => s.send_to_async(buf, *a).await,
            (Dgram::Unix(s), Peer::Unix(p)) => s.send_to_async(buf, p).await,
            _ => unreachable!("a peer of the other family"),
        }
    }

    /// A receive: with `from`, `recv_from` and the sender.
    fn recv(&self, buf: &mut [u8], from: bool) -> std::io::Result<(usize, Peer)> {
        match (self, from) {
            (Dgram::Udp(s), false) => s.recv(buf).map(|n| (n, Peer::Connected)),
            (Dgram::Unix(s), false) => s.recv(buf).map(|n| (n, Peer::Connected)),
            (Dgram::Udp(s), true) => s.recv_from(buf).map(|(n, a)| (n, Peer::Udp(a))),
            (Dgram::Unix(s), true) => s.recv_from(buf).map(|(n, a)| (n, unix_peer(&a))),
        }
    }

    async fn recv_async(&self, buf: &mut [u8], from: bool) -> std::io::Result<(usize, Peer)> {
        match (self, from) {
            (Dgram::Udp(s), false) => s.recv_async(buf).await.map(|n| (n, Peer::Connected)),
            (Dgram::Unix(s), false) => s.recv_async(buf).await.map(|n| (n, Peer::Connected)),
            (Dgram::Udp(s), true) => s.recv_from_async(buf).await.map(|(n, a)| (n, Peer::Udp(a))),
            (Dgram::Unix(s), true) => {
                let (n, a) = s.recv_from_async(buf).await?;
                Ok((n, unix_peer(&a)))
            }
        }
    }

    fn set_read_timeout(&self, t: Option<Duration>) {
        match self {
            Dgram::Udp(s) => s.set_read_timeout(t).unwrap(),
            Dgram::Unix(s) => s.set_read_timeout(t).unwrap(),
        }
    }
}

fn unix_peer(a: &std::os::unix::net::SocketAddr) -> Peer {
    Peer::Unix(a.as_pathname().unwrap_or(Path::new("<unnamed>")).to_owned())
}

/// The kinds of link in the soak.
#[derive(Debug, Clone, Copy)]
enum LinkKind {
    UdpConnected,
    UdpUnconnected,
    UnixPair,
    UnixPaths,
}

/// A link's plan, chosen before it starts so that a failure can name it.
#[derive(Debug)]
struct Plan {
    id: u64,
    kind: LinkKind,
    client: Style,
    echo: Style,
    sizes: Vec<usize>,
    window: u64,
    /// Before which datagrams the client first makes a receive that must time out, and how
    /// long that receive's timeout is.
    timeouts: BTreeMap<u64, Duration>,
    /// Whether the receives are `recv_from`s (on a connected socket too).
    from: bool,
}

fn plan(id: u64, rng: &mut Rng) -> Plan {
    let kind = [
        LinkKind::UdpConnected,
        LinkKind::UdpUnconnected,
        LinkKind::UnixPair,
        LinkKind::UnixPaths,
    ][rng.below(4) as usize];
    let n = 1 + rng.below(DATAGRAMS);
    let timeouts = (0..rng.below(3))
        .map(|_| (rng.below(n), Duration::from_millis(1 + rng.below(15))))
        .collect();
    Plan {
        id,
        kind,
        client: style(rng),
        echo: style(rng),
        sizes: (0..n).map(|_| dgram_size(rng)).collect(),
        window: 1 + rng.below(WINDOW),
        timeouts,
        from: rng.chance(50),
    }
}

/// A link's two ends, made: (client socket, where it sends, echo socket, where the echo
/// replies: `None` for the sender of each datagram).
fn link_sockets(plan: &Plan, dir: &TempDir) -> (Dgram, Peer, Dgram, Option<Peer>) {
    match plan.kind {
        LinkKind::UdpConnected | LinkKind::UdpUnconnected => {
            let c = UdpSocket::bind("127.0.0.1:0").unwrap();
            let e = UdpSocket::bind("127.0.0.1:0").unwrap();
            let (ca, ea) = (c.local_addr().unwrap(), e.local_addr().unwrap());
            if let LinkKind::UdpConnected = plan.kind {
                c.connect(ea).unwrap();
                e.connect(ca).unwrap();
                (
                    Dgram::Udp(c),
                    Peer::Connected,
                    Dgram::Udp(e),
                    Some(Peer::Connected),
                )
            } else {
                (Dgram::Udp(c), Peer::Udp(ea), Dgram::Udp(e), None)
            }
        }
        LinkKind::UnixPair => {
            let (c, e) = UnixDatagram::pair().unwrap();
            (
                Dgram::Unix(c),
                Peer::Connected,
                Dgram::Unix(e),
                Some(Peer::Connected),
            )
        }
        LinkKind::UnixPaths => {
            let (cp, ep) = (
                dir.join(&format!("c{}", plan.id)),
                dir.join(&format!("e{}", plan.id)),
            );
            let c = UnixDatagram::bind(&cp).unwrap();
            let e = UnixDatagram::bind(&ep).unwrap();
            (Dgram::Unix(c), Peer::Unix(ep), Dgram::Unix(e), None)
        }
    }
}

/// The client's bookkeeping: what is in flight, what it may send next.
struct Flight {
    outstanding: BTreeMap<u64, usize>,
    bytes: usize,
    next: u64,
    budget: usize,
}

impl Flight {
    fn new(budget: usize) -> Flight {
        Flight {
            outstanding: BTreeMap::new(),
            bytes: 0,
            next: 0,
            budget,
        }
    }

    /// The next datagram to send, if the window and the budget allow one.
    fn may_send(&self, plan: &Plan) -> Option<u64> {
        let seq = self.next;
        let len = *plan.sizes.get(seq as usize)?;
        let room = self.outstanding.is_empty()
            || (self.outstanding.len() < plan.window as usize
                && self.bytes + cost(len) <= self.budget);
        room.then_some(seq)
    }

    fn sent(&mut self, seq: u64, len: usize) {
        self.outstanding.insert(seq, len);
        self.bytes += cost(len);
        self.next = seq + 1;
    }

    /// Checks an echo (`n` bytes of `buf`, from `peer`) and takes it out of flight.
    fn echoed(&mut self, plan: &Plan, buf: &[u8], peer: &Peer, to: &Peer) -> Result<(), String> {
        if plan.from && *to != Peer::Connected && peer != to {
            return Err(format!("an echo from {peer:?}, not {to:?}"));
        }
        let seq = parse(plan.id, buf)?;
        let Some(&len) = self.outstanding.get(&seq) else {
            return Err(format!("an echo of datagram {seq}, not in flight"));
        };
        if len != buf.len() {
            return Err(format!(
                "the echo of datagram {seq}: {} bytes, not {len}",
                buf.len()
            ));
        }
        let first = *self.outstanding.keys().next().unwrap();
        if matches!(plan.kind, LinkKind::UnixPair | LinkKind::UnixPaths) && seq != first {
            return Err(format!("datagram {seq} echoed before {first}"));
        }
        self.outstanding.remove(&seq);
        self.bytes -= cost(len);
        Ok(())
    }

    fn done(&self, plan: &Plan) -> bool {
        self.next as usize == plan.sizes.len() && self.outstanding.is_empty()
    }
}

/// The receive that must time out (nothing is in flight, and the echo end sends nothing
/// unasked), blocking-style; the socket is left with the generous echo limit.
fn timed_out_recv(s: &Dgram, limit: Duration, from: bool) -> Result<(), String> {
    s.set_read_timeout(Some(limit));
    let mut buf = [0u8; 64];
    let r = s.recv(&mut buf, from);
    s.set_read_timeout(Some(ECHO_LIMIT));
    match r {
        Err(e) if e.kind() == ErrorKind::TimedOut => Ok(()),
        other => Err(format!("a receive that should time out: {other:?}")),
    }
}

/// A link's client, blocking-style: every datagram, then the end, whose echo it waits for.
fn client_blocking(plan: &Plan, s: &Dgram, to: &Peer, budget: usize) -> Result<(), String> {
    s.set_read_timeout(Some(ECHO_LIMIT));
    let mut flight = Flight::new(budget);
    let mut buf = vec![0u8; 64 << 10];
    while !flight.done(plan) {
        if let Some(seq) = flight.may_send(plan) {
            if let (Some(&limit), true) = (plan.timeouts.get(&seq), flight.outstanding.is_empty()) {
                timed_out_recv(s, limit, plan.from).map_err(|e| format!("before {seq}: {e}"))?;
            }
            let len = plan.sizes[seq as usize];
            match s.send(&datagram(plan.id, seq, len), to) {
                Ok(n) if n == len => flight.sent(seq, len),
                other => return Err(format!("send of datagram {seq}: {other:?}")),
            }
            continue;
        }
        let (n, peer) = s
            .recv(&mut buf, plan.from)
            .map_err(|e| format!("waiting for an echo of {:?}: {e}", flight.outstanding))?;
        flight.echoed(plan, &buf[..n], &peer, to)?;
    }
    s.send(&datagram(plan.id, END, 16), to)
        .map_err(|e| format!("send of the end: {e}"))?;
    let (n, _) = s
        .recv(&mut buf, plan.from)
        .map_err(|e| format!("waiting for the end's echo: {e}"))?;
    match parse(plan.id, &buf[..n]) {
        Ok(END) => Ok(()),
        other => Err(format!("the end's echo: {other:?}")),
    }
}

/// A receive with the echo limit, in a task.
async fn recv_limited(s: &Dgram, buf: &mut [u8], from: bool) -> Result<(usize, Peer), String> {
    match corio::time::timeout_async(ECHO_LIMIT, s.recv_async(buf, from)).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!("no datagram within {ECHO_LIMIT:?}")),
    }
}

/// `client_blocking` in a task, with `timeout_async` for the limits.
async fn client_async(plan: &Plan, s: &Dgram, to: &Peer, budget: usize) -> Result<(), String> {
    let mut flight = Flight::new(budget);
    let mut buf = vec![0u8; 64 << 10];
    while !flight.done(plan) {
        if let Some(seq) = flight.may_send(plan) {
            if let (Some(&limit), true) = (plan.timeouts.get(&seq), flight.outstanding.is_empty()) {
                let mut small = [0u8; 64];
                let r = corio::time::timeout_async(limit, s.recv_async(&mut small, plan.from));
                if let Ok(r) = r.await {
                    return Err(format!(
                        "before {seq}: a receive that should time out: {r:?}"
                    ));
                }
            }
            let len = plan.sizes[seq as usize];
            match s.send_async(&datagram(plan.id, seq, len), to).await {
                Ok(n) if n == len => flight.sent(seq, len),
                other => return Err(format!("send of datagram {seq}: {other:?}")),
            }
            continue;
        }
        let (n, peer) = recv_limited(s, &mut buf, plan.from)
            .await
            .map_err(|e| format!("waiting for an echo of {:?}: {e}", flight.outstanding))?;
        flight.echoed(plan, &buf[..n], &peer, to)?;
    }
    s.send_async(&datagram(plan.id, END, 16), to)
        .await
        .map_err(|e| format!("send of the end: {e}"))?;
    let (n, _) = recv_limited(s, &mut buf, plan.from)
        .await
        .map_err(|e| format!("waiting for the end's echo: {e}"))?;
    match parse(plan.id, &buf[..n]) {
        Ok(END) => Ok(()),
        other => Err(format!("the end's echo: {other:?}")),
    }
}

/// A link's echo end, blocking-style: checks each datagram and sends it back (to `reply`, or
/// its sender), until the end; returns how many it echoed before the end.
fn echo_blocking(id: u64, s: &Dgram, reply: Option<Peer>) -> Result<u64, String> {
    let mut buf = vec![0u8; 64 << 10];
    let mut count = 0;
    loop {
        let (n, from) = s
            .recv(&mut buf, reply.is_none())
            .map_err(|e| format!("echo: {e}"))?;
        let seq = parse(id, &buf[..n]).map_err(|e| format!("echo: {e}"))?;
        let to = reply.clone().unwrap_or(from);
        s.send(&buf[..n], &to)
            .map_err(|e| format!("echo of {seq} to {to:?}: {e}"))?;
        if seq == END {
            return Ok(count);
        }
        count += 1;
    }
}

async fn echo_async(id: u64, s: &Dgram, reply: Option<Peer>) -> Result<u64, String> {
    let mut buf = vec![0u8; 64 << 10];
    let mut count = 0;
    loop {
        let (n, from) = s
            .recv_async(&mut buf, reply.is_none())
            .await
            .map_err(|e| format!("echo: {e}"))?;
        let seq = parse(id, &buf[..n]).map_err(|e| format!("echo: {e}"))?;
        let to = reply.clone().unwrap_or(from);
        s.send_async(&buf[..n], &to)
            .await
            .map_err(|e| format!("echo of {seq} to {to:?}: {e}"))?;
        if seq == END {
            return Ok(count);
        }
        count += 1;
    }
}

/// The soak on a runtime of `workers` workers; with `cut`, the runtime is dropped that long
/// after the links start, with everything in flight (and no plain threads, which would wait
/// out the echo limit; the test then checks only that no descriptor is left open).
fn dgram_soak(workers: usize, seed: u64, cut: Option<Duration>) {
    let dir = TempDir::new(&format!("net_stress_more_{workers}"));
    let rt = support::rt(workers);
    rt.run(move || {
        let budget = byte_budget();
        let places = Places::anywhere();
        let links: Vec<_> = (0..LINKS)
            .map(|id| {
                let mut rng = Rng::new(seed ^ id.wrapping_mul(0x1_0000_0001));
                let mut plan = plan(id, &mut rng);
                if cut.is_some() {
                    for style in [&mut plan.client, &mut plan.echo] {
                        if *style == Style::Thread {
                            *style = Style::Coroutine;
                        }
                    }
                }
                let plan = Arc::new(plan);
                let (c, to, e, reply) = link_sockets(&plan, &dir);
                let e = Arc::new(e);
                let (e2, reply2) = (e.clone(), reply.clone());
                let echo = places.side(
                    2 * id as usize,
                    plan.echo,
                    move || echo_blocking(id, &e, reply),
                    move || async move { echo_async(id, &e2, reply2).await },
                );
                let c = Arc::new(c);
                let (p1, p2, c2, to2) = (plan.clone(), plan.clone(), c.clone(), to.clone());
                let client = places.side(
                    2 * id as usize + 1,
                    plan.client,
                    move || client_blocking(&p1, &c, &to, budget),
                    move || async move { client_async(&p2, &c2, &to2, budget).await },
                );
                (plan, client, echo)
            })
            .collect();
        if let Some(cut) = cut {
            corio::sleep(cut);
            return;
        }
        for (plan, client, echo) in links {
            let ctx = format!("seed {seed}, {workers} workers, link {plan:?}");
            let c = client
                .join()
                .unwrap_or_else(|e| panic!("{ctx}: the client: {e}"));
            c.unwrap_or_else(|e| panic!("{ctx}: the client: {e}"));
            let count = echo
                .join()
                .unwrap_or_else(|e| panic!("{ctx}: the echo end: {e}"))
                .unwrap_or_else(|e| panic!("{ctx}: the echo end: {e}"));
            assert_eq!(
                count,
                plan.sizes.len() as u64,
                "{ctx}: the echo end echoed {count} datagrams"
            );
        }
    });
    drop(rt);
}

// ---------------------------------------------------------------------------------------------
// The races.

/// The socket types the races use.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Family {
    Udp,
    UnixDgram,
    UnixStream,
    /// `net_stress` races TCP's waits in coroutines; here its tasks and plain threads too.
    Tcp,
}

/// A socket of any family, with what a race does to it.
enum Sock {
    /// A UDP socket and where its writes go (`send_to`; the socket may be unconnected).
    Udp(UdpSocket, SocketAddr),
    UDgram(UnixDatagram),
    UStream(UnixStream),
    Tcp(TcpStream),
    /// The halves of `into_split`, for the halves' races (reads only, writes only).
    UnixRead(corio::net::unix::OwnedReadHalf),
    UnixWrite(corio::net::unix::OwnedWriteHalf),
    TcpRead(corio::net::tcp::OwnedReadHalf),
    TcpWrite(corio::net::tcp::OwnedWriteHalf),
}

impl Sock {
    fn is_dgram(&self) -> bool {
        matches!(self, Sock::Udp(..) | Sock::UDgram(_))
    }

    /// A read: a datagram (`recv_from` with `from`), or bytes.
    fn read(&self, buf: &mut [u8], from: bool) -> std::io::Result<usize> {
        match (self, from) {
            (Sock::Udp(s, _), false) => s.recv(buf),
            (Sock::Udp(s, _), true) => s.recv_from(buf).map(|(n, _)| n),
            (Sock::UDgram(s), false) => s.recv(buf),
            (Sock::UDgram(s), true) => s.recv_from(buf).map(|(n, _)| n),
            (Sock::UStream(s), _) => (&*s).read(buf),
            (Sock::Tcp(s), _) => (&*s).read(buf),
            (Sock::UnixRead(h), _) => (&**h).read(buf),
            (Sock::TcpRead(h), _) => (&**h).read(buf),
            _ => unreachable!("a read on a write half"),
        }
    }

    async fn read_async(&self, buf: &mut [u8], from: bool) -> std::io::Result<usize> {
        match (self, from) {
            (Sock::Udp(s, _), false) => s.recv_async(buf).await,
            (Sock::Udp(s, _), true) => s.recv_from_async(buf).await.map(|(n, _)| n),
            (Sock::UDgram(s), false) => s.recv_async(buf).await,
            (Sock::UDgram(s), true) => s.recv_from_async(buf).await.map(|(n, _)| n),
            (Sock::UStream(s), _) => s.read_async(buf).await,
            (Sock::Tcp(s), _) => s.read_async(buf).await,
            (Sock::UnixRead(h), _) => h.read_async(buf).await,
            (Sock::TcpRead(h), _) => h.read_async(buf).await,
            _ => unreachable!("a read on a write half"),
        }
    }

    /// A write: a datagram, or bytes.
    fn write(&self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sock::Udp(s, to) => s.send_to(buf, *to),
            Sock::UDgram(s) => s.send(buf),
            Sock::UStream(s) => (&*s).write(buf),
            Sock::Tcp(s) => (&*s).write(buf),
            Sock::UnixWrite(h) => (&**h).write(buf),
            Sock::TcpWrite(h) => (&**h).write(buf),
            _ => unreachable!("a write on a read half"),
        }
    }

    async fn write_async(&self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sock::Udp(s, to) => s.send_to_async(buf, *to).await,
            Sock::UDgram(s) => s.send_async(buf).await,
            Sock::UStream(s) => s.write_async(buf).await,
            Sock::Tcp(s) => s.write_async(buf).await,
            Sock::UnixWrite(h) => h.write_async(buf).await,
            Sock::TcpWrite(h) => h.write_async(buf).await,
            _ => unreachable!("a write on a read half"),
        }
    }

    fn try_clone(&self) -> Sock {
        match self {
            Sock::Udp(s, to) => Sock::Udp(s.try_clone().unwrap(), *to),
            Sock::UDgram(s) => Sock::UDgram(s.try_clone().unwrap()),
            Sock::UStream(s) => Sock::UStream(s.try_clone().unwrap()),
            Sock::Tcp(s) => Sock::Tcp(s.try_clone().unwrap()),
            _ => unreachable!("not on a half"),
        }
    }

    fn set_write_timeout(&self, t: Option<Duration>) {
        match self {
            Sock::Udp(s, _) => s.set_write_timeout(t).unwrap(),
            Sock::UDgram(s) => s.set_write_timeout(t).unwrap(),
            Sock::UStream(s) => s.set_write_timeout(t).unwrap(),
            Sock::Tcp(s) => s.set_write_timeout(t).unwrap(),
            Sock::UnixWrite(h) => h.set_write_timeout(t).unwrap(),
            Sock::TcpWrite(h) => h.set_write_timeout(t).unwrap(),
            _ => unreachable!("not on a read half"),
        }
    }

    fn set_read_timeout(&self, t: Option<Duration>) {
        match self {
            Sock::Udp(s, _) => s.set_read_timeout(t).unwrap(),
            Sock::UDgram(s) => s.set_read_timeout(t).unwrap(),
            Sock::UStream(s) => s.set_read_timeout(t).unwrap(),
            Sock::Tcp(s) => s.set_read_timeout(t).unwrap(),
            Sock::UnixRead(h) => h.set_read_timeout(t).unwrap(),
            Sock::TcpRead(h) => h.set_read_timeout(t).unwrap(),
            _ => unreachable!("not on a write half"),
        }
    }

    fn shutdown(&self, how: Shutdown) -> std::io::Result<()> {
        match self {
            Sock::UDgram(s) => s.shutdown(how),
            Sock::UStream(s) => s.shutdown(how),
            Sock::Tcp(s) => s.shutdown(how),
            _ => unreachable!("no race shuts a UDP socket or a half down"),
        }
    }

    /// `into_std`, then a write of `msg` through the `std` socket.
    fn into_std_and_write(self, msg: &[u8]) -> std::io::Result<()> {
        match self {
            Sock::Udp(s, to) => s.into_std()?.send_to(msg, to).map(drop),
            Sock::UDgram(s) => s.into_std()?.send(msg).map(drop),
            Sock::UStream(s) => s.into_std()?.write_all(msg),
            Sock::Tcp(s) => s.into_std()?.write_all(msg),
            _ => unreachable!("not on a half"),
        }
    }

    /// `into_std` of a handle that shares its socket: refused, the handle given up.
    fn into_std_refused(self) -> Result<(), String> {
        let r = match self {
            Sock::Udp(s, _) => s.into_std().map(drop),
            Sock::UDgram(s) => s.into_std().map(drop),
            Sock::UStream(s) => s.into_std().map(drop),
            Sock::Tcp(s) => s.into_std().map(drop),
            _ => unreachable!("not on a half"),
        };
        match r {
            Err(e) if e.kind() == ErrorKind::ResourceBusy => Ok(()),
            other => Err(format!("into_std of a clone: {other:?}")),
        }
    }

    /// The handle as a duplicate of its descriptor (`From<_> for OwnedFd`).
    fn into_fd(self) -> std::os::fd::OwnedFd {
        match self {
            Sock::Udp(s, _) => s.into(),
            Sock::UDgram(s) => s.into(),
            Sock::UStream(s) => s.into(),
            Sock::Tcp(s) => s.into(),
            _ => unreachable!("not on a half"),
        }
    }
}

/// A connected pair of `family`: (the waiter's end, the peer). A UDP waiter's socket is
/// connected to the peer or not, at random (its writes go to the peer either way).
fn pair(family: Family, rng: &mut Rng) -> (Sock, Sock) {
    match family {
        Family::Udp => {
            let a = UdpSocket::bind("127.0.0.1:0").unwrap();
            let p = UdpSocket::bind("127.0.0.1:0").unwrap();
            let (aa, pa) = (a.local_addr().unwrap(), p.local_addr().unwrap());
            p.connect(aa).unwrap();
            if rng.chance(50) {
                a.connect(pa).unwrap();
            }
            (Sock::Udp(a, pa), Sock::Udp(p, aa))
        }
        Family::UnixDgram => {
            let (a, p) = UnixDatagram::pair().unwrap();
            (Sock::UDgram(a), Sock::UDgram(p))
        }
        Family::UnixStream => {
            let (a, p) = UnixStream::pair().unwrap();
            (Sock::UStream(a), Sock::UStream(p))
        }
        Family::Tcp => {
            let (a, p) = support::tcp_pair();
            (Sock::Tcp(a), Sock::Tcp(p))
        }
    }
}

/// The ways a wait is ended, or data delivered, in the races.
#[derive(Debug, Clone, Copy)]
enum Race {
    /// A waiter reads (perhaps with a short timeout); a coroutine drops a `try_clone`.
    ReadVsCloneDrop,
    /// A waiter reads; a coroutine shuts the socket down (read, or both).
    ReadVsShutdown,
    /// A waiter reads a Unix stream; the peer is dropped.
    ReadVsPeerDrop,
    /// A waiter reads; a coroutine hands a `try_clone` back (`into_std`, refused; or as an
    /// `OwnedFd`, a duplicate), then the peer sends: the waiter gets it, and the last handle's
    /// `into_std` gives a working `std` socket.
    ReadVsIntoStdOfClone,
    /// Two waiters (of random styles, on both workers when placed apart) read; a coroutine
    /// drops a `try_clone`: both wake.
    TwoReadersVsCloneDrop,
    /// A writer fills the peer's queue (which nobody reads); a coroutine drops a `try_clone`.
    WriteVsCloneDrop,
    /// A writer fills the peer's queue; a coroutine shuts the writer's socket down (write, or
    /// both): it wakes with an error.
    WriteVsShutdown,
    /// A writer fills the peer's queue; the peer is dropped: the writer wakes with an error.
    WriteVsPeerDrop,
    /// A waiter reads with a short timeout, again and again (a timeout or a `timeout_async`),
    /// while the peer sends a few messages at random moments: every one arrives, once.
    TimedReadsVsData,
    /// A task reads and is aborted as a message arrives, beside a second waiter: whichever way
    /// the race goes, the second is not left waiting for a message the first took the wakeup of.
    AbortedReadVsData,
    /// A writer with a short timeout (a write timeout, or `timeout_async` around
    /// `write_async`) sends a large transfer, retrying after each timeout, while the peer drains
    /// it slowly: every byte or datagram arrives once, in order (a write that timed out wrote
    /// nothing).
    TimedWritesVsDrain,
    /// A waiter reads the read half; a coroutine drops the write half, and the peer, which
    /// reads until EOF and then closes, makes the reader's EOF.
    ReadHalfVsWriteHalfDrop,
    /// A writer sends a large transfer through the write half while a coroutine drops the read
    /// half, which changes nothing: the peer reads every byte.
    WriteHalfVsReadHalfDrop,
    /// A waiter accepts on a listener (TCP, or Unix at an abstract address); a coroutine drops a
    /// `try_clone` of it: the waiter wakes with an error.
    AcceptVsCloneDrop,
    /// A waiter accepts; a coroutine connects after a pause and sends a byte: the waiter gets
    /// the connection, and the byte arrives through it.
    AcceptVsConnect,
    /// Round trips of random sizes between two sides (placed apart: every wakeup crosses the
    /// workers).
    PingPong,
}

const RACE_KINDS: [Race; 16] = [
    Race::ReadVsCloneDrop,
    Race::ReadVsShutdown,
    Race::ReadVsPeerDrop,
    Race::ReadVsIntoStdOfClone,
    Race::TwoReadersVsCloneDrop,
    Race::WriteVsCloneDrop,
    Race::WriteVsShutdown,
    Race::WriteVsPeerDrop,
    Race::TimedReadsVsData,
    Race::AbortedReadVsData,
    Race::TimedWritesVsDrain,
    Race::AcceptVsCloneDrop,
    Race::AcceptVsConnect,
    Race::ReadHalfVsWriteHalfDrop,
    Race::WriteHalfVsReadHalfDrop,
    Race::PingPong,
];

impl Race {
    /// The families a race makes sense on: UDP has no shutdown here, no peer whose close
    /// anyone sees, and never makes a writer wait; a datagram socket's waiter is not woken by
    /// its peer's close (by the kernel either).
    fn families(self) -> &'static [Family] {
        use Family::*;
        match self {
            Race::ReadVsCloneDrop
            | Race::ReadVsIntoStdOfClone
            | Race::TwoReadersVsCloneDrop
            | Race::TimedReadsVsData
            | Race::AbortedReadVsData
            | Race::PingPong => &[Udp, UnixDgram, UnixStream, Tcp],
            Race::ReadVsShutdown
            | Race::WriteVsCloneDrop
            | Race::WriteVsShutdown
            | Race::WriteVsPeerDrop
            | Race::TimedWritesVsDrain => &[UnixDgram, UnixStream, Tcp],
            Race::ReadVsPeerDrop
            | Race::AcceptVsCloneDrop
            | Race::AcceptVsConnect
            | Race::ReadHalfVsWriteHalfDrop
            | Race::WriteHalfVsReadHalfDrop => &[UnixStream, Tcp],
        }
    }
}

/// The messages the peer sends in the `...VsData` races, one write each.
const MSGS: [&[u8]; 4] = [b"co", b"ri", b"o", b"!"];

/// `pause` in a task.
async fn pause_async(rng: &mut Rng) {
    match rng.below(3) {
        0 => {}
        1 => {
            for _ in 0..rng.below(8) {
                corio::yield_now_async().await;
            }
        }
        _ => corio::time::sleep_async(Duration::from_micros(rng.below(2000))).await,
    }
}

/// `pause` on a plain thread: none, or a sleep of up to 2 ms.
fn pause_thread(rng: &mut Rng) {
    if rng.chance(50) {
        std::thread::sleep(Duration::from_micros(rng.below(2000)));
    }
}

/// A waiter on side `k`, in `style`: a random pause, then one read of up to 16 bytes (a
/// datagram's receive, `recv_from` or `recv` at random), with the read timeout `limit` if any
/// (`timeout_async` in a task, where an expired limit is `TimedOut` too).
fn read_side(
    places: &Places,
    k: usize,
    style: Style,
    s: Arc<Sock>,
    mut rng: Rng,
    limit: Option<Duration>,
) -> Side<std::io::Result<usize>> {
    let from = rng.chance(50);
    if style != Style::Task && limit.is_some() {
        s.set_read_timeout(limit);
    }
    let (s2, mut rng2) = (s.clone(), rng.clone());
    places.side(
        k,
        style,
        move || {
            if style == Style::Thread {
                pause_thread(&mut rng);
            } else {
                pause(&mut rng);
            }
            let mut buf = [0u8; 16];
            s.read(&mut buf, from)
        },
        move || async move {
            pause_async(&mut rng2).await;
            let mut buf = [0u8; 16];
            match limit {
                None => s2.read_async(&mut buf, from).await,
                Some(limit) => {
                    match corio::time::timeout_async(limit, s2.read_async(&mut buf, from)).await {
                        Ok(r) => r,
                        Err(_) => Err(ErrorKind::TimedOut.into()),
                    }
                }
            }
        },
    )
}

/// A coroutine on side `k` that runs `f` after a random pause.
fn act_after_pause<T: Send + 'static>(
    places: &Places,
    k: usize,
    mut rng: Rng,
    f: impl FnOnce() -> T + Send + 'static,
) -> corio::JoinHandle<T> {
    places.go(k, move || {
        pause(&mut rng);
        f()
    })
}

/// A writer on side `k`, in `style`, to a peer that never reads, until a write fails: the
/// bytes sent and the error's kind, or `ErrorKind::Other` if 256 MiB went through.
fn write_side(places: &Places, k: usize, style: Style, s: Arc<Sock>) -> Side<(usize, ErrorKind)> {
    let chunk = if s.is_dgram() { 4096 } else { 256 << 10 };
    let s2 = s.clone();
    places.side(
        k,
        style,
        move || {
            let buf = vec![7u8; chunk];
            let mut sent = 0usize;
            loop {
                match s.write(&buf) {
                    Ok(n) => sent += n,
                    Err(e) => return (sent, e.kind()),
                }
                if sent > 256 << 20 {
                    return (sent, ErrorKind::Other);
                }
            }
        },
        move || async move {
            let buf = vec![7u8; chunk];
            let mut sent = 0usize;
            loop {
                match s2.write_async(&buf).await {
                    Ok(n) => sent += n,
                    Err(e) => return (sent, e.kind()),
                }
                if sent > 256 << 20 {
                    return (sent, ErrorKind::Other);
                }
            }
        },
    )
}

/// A waiter on side `k`, in `style`, that reads with the timeout `limit` again and again until
/// it has every message of `MSGS` (as datagrams, or as a stream's bytes): what it read.
fn collect_side(
    places: &Places,
    k: usize,
    style: Style,
    s: Arc<Sock>,
    limit: Duration,
) -> Side<Result<Vec<Vec<u8>>, String>> {
    let dgram = s.is_dgram();
    let total: usize = MSGS.iter().map(|m| m.len()).sum();
    let enough = move |got: &Vec<Vec<u8>>| {
        if dgram {
            got.len() == MSGS.len()
        } else {
            got.iter().map(|m| m.len()).sum::<usize>() == total
        }
    };
    if style != Style::Task {
        s.set_read_timeout(Some(limit));
    }
    let s2 = s.clone();
    places.side(
        k,
        style,
        move || {
            let mut got = Vec::new();
            let mut buf = [0u8; 16];
            while !enough(&got) {
                match s.read(&mut buf, false) {
                    Ok(0) if !dgram => return Err("EOF".to_string()),
                    Ok(n) => got.push(buf[..n].to_vec()),
                    Err(e) if e.kind() == ErrorKind::TimedOut => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok(got)
        },
        move || async move {
            let mut got = Vec::new();
            let mut buf = [0u8; 16];
            while !enough(&got) {
                match corio::time::timeout_async(limit, s2.read_async(&mut buf, true)).await {
                    Ok(Ok(0)) if !dgram => return Err("EOF".to_string()),
                    Ok(Ok(n)) => got.push(buf[..n].to_vec()),
                    Ok(Err(e)) => return Err(e.to_string()),
                    Err(_) => {}
                }
            }
            Ok(got)
        },
    )
}

/// Whether `got` is `MSGS`: in order for Unix sockets and TCP, in any order for UDP (loopback
/// does not promise the order), each once.
fn all_messages(family: Family, got: &[Vec<u8>]) -> bool {
    match family {
        Family::Udp => {
            let mut got: Vec<&[u8]> = got.iter().map(|m| &m[..]).collect();
            let mut want = MSGS.to_vec();
            got.sort();
            want.sort();
            got == want
        }
        Family::UnixDgram => got.iter().map(|m| &m[..]).eq(MSGS.iter().copied()),
        _ => got.concat() == MSGS.concat(),
    }
}

/// One side of a ping-pong, blocking-style: `rounds` messages of the given sizes written and
/// read back (`first`: this side writes first, else it echoes).
fn ping_pong_blocking(s: &Sock, sizes: &[usize], first: bool) -> Result<(), String> {
    let mut buf = vec![0u8; 64 << 10];
    for (i, &n) in sizes.iter().enumerate() {
        let msg: Vec<u8> = (0..n).map(|j| (i * 31 + j) as u8).collect();
        if first {
            write_msg(s, &msg).map_err(|e| format!("round {i}: write: {e}"))?;
        }
        let mut got = 0;
        while got < n {
            match s.read(&mut buf[got..], false) {
                Ok(0) => return Err(format!("round {i}: EOF after {got} of {n}")),
                Ok(k) => got += k,
                Err(e) => return Err(format!("round {i}: read after {got} of {n}: {e}")),
            }
            if s.is_dgram() && got != n {
                return Err(format!("round {i}: a datagram of {got} bytes, not {n}"));
            }
        }
        if buf[..n] != msg[..] {
            return Err(format!("round {i}: wrong bytes"));
        }
        if !first {
            write_msg(s, &msg).map_err(|e| format!("round {i}: write: {e}"))?;
        }
    }
    Ok(())
}

/// A whole message: one datagram, or all the bytes.
fn write_msg(s: &Sock, msg: &[u8]) -> std::io::Result<()> {
    let mut done = 0;
    while done < msg.len() {
        done += s.write(&msg[done..])?;
    }
    Ok(())
}

async fn write_msg_async(s: &Sock, msg: &[u8]) -> std::io::Result<()> {
    let mut done = 0;
    while done < msg.len() {
        done += s.write_async(&msg[done..]).await?;
    }
    Ok(())
}

/// `ping_pong_blocking` in a task.
async fn ping_pong_async(s: &Sock, sizes: &[usize], first: bool) -> Result<(), String> {
    let mut buf = vec![0u8; 64 << 10];
    for (i, &n) in sizes.iter().enumerate() {
        let msg: Vec<u8> = (0..n).map(|j| (i * 31 + j) as u8).collect();
        if first {
            write_msg_async(s, &msg)
                .await
                .map_err(|e| format!("round {i}: write: {e}"))?;
        }
        let mut got = 0;
        while got < n {
            match s.read_async(&mut buf[got..], false).await {
                Ok(0) => return Err(format!("round {i}: EOF after {got} of {n}")),
                Ok(k) => got += k,
                Err(e) => return Err(format!("round {i}: read after {got} of {n}: {e}")),
            }
            if s.is_dgram() && got != n {
                return Err(format!("round {i}: a datagram of {got} bytes, not {n}"));
            }
        }
        if buf[..n] != msg[..] {
            return Err(format!("round {i}: wrong bytes"));
        }
        if !first {
            write_msg_async(s, &msg)
                .await
                .map_err(|e| format!("round {i}: write: {e}"))?;
        }
    }
    Ok(())
}

/// A ping-pong side on side `k`, in `style`.
fn ping_pong_side(
    places: &Places,
    k: usize,
    style: Style,
    s: Sock,
    sizes: Arc<Vec<usize>>,
    first: bool,
) -> Side<Result<(), String>> {
    let s = Arc::new(s);
    let (s2, sizes2) = (s.clone(), sizes.clone());
    places.side(
        k,
        style,
        move || ping_pong_blocking(&s, &sizes, first),
        move || async move { ping_pong_async(&s2, &sizes2, first).await },
    )
}

/// The byte at `offset` of message `m` of a `TimedWritesVsDrain` transfer.
fn transfer_byte(m: usize, offset: usize) -> u8 {
    (m * 7 + offset % 251) as u8
}

/// A writer on side `k`, in `style`, with the timeout `limit`, sending `msgs` messages of
/// `len` bytes (datagrams, or one run of a stream's bytes), retrying each write that times
/// out: the number of timeouts, or what went wrong.
fn timed_write_side(
    places: &Places,
    k: usize,
    style: Style,
    s: Arc<Sock>,
    limit: Duration,
    msgs: usize,
    len: usize,
) -> Side<Result<usize, String>> {
    if style != Style::Task {
        s.set_write_timeout(Some(limit));
    }
    let s2 = s.clone();
    let message = move |m: usize| (0..len).map(|i| transfer_byte(m, i)).collect::<Vec<u8>>();
    places.side(
        k,
        style,
        move || {
            let mut timeouts = 0;
            for m in 0..msgs {
                let msg = message(m);
                let mut done = 0;
                while done < len {
                    match s.write(&msg[done..]) {
                        Ok(n) if s.is_dgram() && n != len => {
                            return Err(format!("datagram {m}: {n} of {len} bytes sent"));
                        }
                        Ok(n) => done += n,
                        Err(e) if e.kind() == ErrorKind::TimedOut => timeouts += 1,
                        Err(e) => return Err(format!("message {m} after {done}: {e}")),
                    }
                }
            }
            Ok(timeouts)
        },
        move || async move {
            let mut timeouts = 0;
            for m in 0..msgs {
                let msg = message(m);
                let mut done = 0;
                while done < len {
                    match corio::time::timeout_async(limit, s2.write_async(&msg[done..])).await {
                        Ok(Ok(n)) if s2.is_dgram() && n != len => {
                            return Err(format!("datagram {m}: {n} of {len} bytes sent"));
                        }
                        Ok(Ok(n)) => done += n,
                        Ok(Err(e)) => return Err(format!("message {m} after {done}: {e}")),
                        Err(_) => timeouts += 1,
                    }
                }
            }
            Ok(timeouts)
        },
    )
}

/// The peer of `TimedWritesVsDrain`: reads the `msgs` messages of `len` bytes in reads of
/// random sizes with random pauses between them, checking every byte.
fn drain_slowly(s: &Sock, rng: &mut Rng, msgs: usize, len: usize) -> Result<(), String> {
    let mut buf = vec![0u8; 64 << 10];
    for m in 0..msgs {
        let mut got = 0;
        while got < len {
            if rng.chance(10) {
                pause(rng);
            }
            let want = if s.is_dgram() {
                buf.len()
            } else {
                (1 + rng.below(64 << 10) as usize).min(len - got)
            };
            let n = match s.read(&mut buf[..want], false) {
                Ok(0) => return Err(format!("message {m}: EOF after {got} of {len}")),
                Ok(n) => n,
                Err(e) => return Err(format!("message {m}: after {got} of {len}: {e}")),
            };
            if s.is_dgram() && n != len {
                return Err(format!("datagram {m}: {n} bytes, not {len}"));
            }
            if let Some(i) = (0..n).find(|&i| buf[i] != transfer_byte(m, got + i)) {
                return Err(format!("message {m}: wrong byte at {}", got + i));
            }
            got += n;
        }
    }
    Ok(())
}

/// `into_split` of a stream: (read half, write half).
fn split(s: Sock) -> (Sock, Sock) {
    match s {
        Sock::UStream(s) => {
            let (r, w) = s.into_split();
            (Sock::UnixRead(r), Sock::UnixWrite(w))
        }
        Sock::Tcp(s) => {
            let (r, w) = s.into_split();
            (Sock::TcpRead(r), Sock::TcpWrite(w))
        }
        _ => unreachable!("only streams split"),
    }
}

/// `Arc::try_unwrap`, once every other side has let its handle go.
fn unwrap_arc<T>(a: Arc<T>) -> T {
    Arc::try_unwrap(a).unwrap_or_else(|_| panic!("a side still holds the socket"))
}

/// One race; `Err` describes a waiter that woke wrongly (a hang is the watchdog's to catch).
/// The waiter is side 0 and the other coroutine side 1 (different workers, when placed apart).
fn race(kind: Race, family: Family, rng: &mut Rng, places: &Places) -> Result<(), String> {
    if let Race::AcceptVsCloneDrop | Race::AcceptVsConnect = kind {
        return accept_race(kind, family, rng, places);
    }
    let (a, peer) = pair(family, rng);
    let (mut r1, mut r2) = (rng.clone(), rng.clone());
    r1.next_u64();
    r2.next_u64();
    r2.next_u64();
    rng.next_u64();
    rng.next_u64();
    rng.next_u64();
    let waiter_style = style(&mut r1);
    let a = Arc::new(a);
    match kind {
        Race::ReadVsCloneDrop => {
            let limit = r1
                .chance(30)
                .then(|| Duration::from_micros(1 + r1.below(3000)));
            let b = a.try_clone();
            let reader = read_side(places, 0, waiter_style, a, r1, limit);
            joined(act_after_pause(places, 1, r2, move || drop(b)).join());
            let r = reader.join()?;
            if !nothing_read(&r) {
                return Err(format!("the {waiter_style:?} reader got {r:?}"));
            }
        }
        Race::ReadVsShutdown => {
            let how = if r2.chance(50) {
                Shutdown::Read
            } else {
                Shutdown::Both
            };
            let reader = read_side(places, 0, waiter_style, a.clone(), r1, None);
            let b = a.clone();
            joined(act_after_pause(places, 1, r2, move || b.shutdown(how)).join())
                .map_err(|e| format!("shutdown({how:?}): {e}"))?;
            let r = reader.join()?;
            if !nothing_read(&r) {
                return Err(format!(
                    "the {waiter_style:?} reader got {r:?} after {how:?}"
                ));
            }
        }
        Race::ReadVsPeerDrop => {
            let reader = read_side(places, 0, waiter_style, a, r1, None);
            joined(act_after_pause(places, 1, r2, move || drop(peer)).join());
            let r = reader.join()?;
            if !nothing_read(&r) {
                return Err(format!("the {waiter_style:?} reader got {r:?}"));
            }
            return Ok(());
        }
        Race::ReadVsIntoStdOfClone => {
            let b = a.try_clone();
            let reader = read_side(places, 0, waiter_style, a.clone(), r1, None);
            let refuse = r2.chance(50);
            joined(
                act_after_pause(places, 1, r2, move || {
                    if refuse {
                        b.into_std_refused()
                    } else {
                        // A duplicate of the descriptor, closed here: the socket stays open.
                        drop(b.into_fd());
                        Ok(())
                    }
                })
                .join(),
            )?;
            write_msg(&peer, b"z").map_err(|e| format!("the peer: {e}"))?;
            match reader.join()? {
                Ok(1) => {}
                other => return Err(format!("the {waiter_style:?} reader got {other:?}")),
            }
            // The last handle hands the socket back, working.
            unwrap_arc(a)
                .into_std_and_write(b"!")
                .map_err(|e| format!("the last handle's std socket: {e}"))?;
            let mut buf = [0u8; 16];
            match peer.read(&mut buf, false) {
                Ok(1) if buf[0] == b'!' => {}
                other => return Err(format!("the peer read {other:?} from the std socket")),
            }
            return Ok(());
        }
        Race::TwoReadersVsCloneDrop => {
            let b = a.try_clone();
            let second_style = style(&mut r1);
            let r3 = Rng::new(r1.next_u64());
            let first = read_side(places, 0, waiter_style, a.clone(), r1, None);
            let second = read_side(places, 1, second_style, a, r3, None);
            let k = r2.below(2) as usize;
            joined(act_after_pause(places, k, r2, move || drop(b)).join());
            for (which, reader) in [(waiter_style, first), (second_style, second)] {
                let r = reader.join()?;
                if !nothing_read(&r) {
                    return Err(format!("a {which:?} reader got {r:?}"));
                }
            }
        }
        Race::WriteVsCloneDrop => {
            let b = a.try_clone();
            let writer = write_side(places, 0, waiter_style, a);
            joined(
                act_after_pause(places, 1, r2.clone(), move || {
                    // Sometimes let the writer fill the queue and wait first.
                    if r2.chance(50) {
                        corio::sleep(Duration::from_millis(2));
                    }
                    drop(b)
                })
                .join(),
            );
            let (sent, kind) = writer.join()?;
            if kind == ErrorKind::Other {
                return Err(format!("the {waiter_style:?} writer sent {sent} bytes"));
            }
        }
        Race::WriteVsShutdown => {
            let how = if r2.chance(50) {
                Shutdown::Write
            } else {
                Shutdown::Both
            };
            let writer = write_side(places, 0, waiter_style, a.clone());
            let b = a.clone();
            joined(
                act_after_pause(places, 1, r2.clone(), move || {
                    if r2.chance(50) {
                        corio::sleep(Duration::from_millis(2));
                    }
                    b.shutdown(how)
                })
                .join(),
            )
            .map_err(|e| format!("shutdown({how:?}): {e}"))?;
            let (sent, kind) = writer.join()?;
            if kind == ErrorKind::Other {
                return Err(format!(
                    "the {waiter_style:?} writer sent {sent} bytes past a shutdown({how:?})"
                ));
            }
        }
        Race::WriteVsPeerDrop => {
            let writer = write_side(places, 0, waiter_style, a);
            joined(
                act_after_pause(places, 1, r2.clone(), move || {
                    if r2.chance(50) {
                        corio::sleep(Duration::from_millis(2));
                    }
                    drop(peer)
                })
                .join(),
            );
            let (sent, kind) = writer.join()?;
            if kind == ErrorKind::Other {
                return Err(format!("the {waiter_style:?} writer sent {sent} bytes"));
            }
            return Ok(());
        }
        Race::TimedReadsVsData => {
            let limit = Duration::from_micros(1 + r1.below(2000));
            let reader = collect_side(places, 0, waiter_style, a, limit);
            let peer = joined(
                act_after_pause(places, 1, r2.clone(), move || {
                    for m in MSGS {
                        pause(&mut r2);
                        write_msg(&peer, m)?;
                    }
                    Ok::<_, std::io::Error>(peer)
                })
                .join(),
            )
            .map_err(|e| format!("the sender: {e}"))?;
            match reader.join()? {
                Ok(got) if all_messages(family, &got) => {}
                other => return Err(format!("the {waiter_style:?} reader got {other:?}")),
            }
            drop(peer);
            return Ok(());
        }
        Race::AbortedReadVsData => {
            // The second waiter, in a coroutine or on a plain thread, waits for one message.
            let second_style = if r1.chance(50) {
                Style::Coroutine
            } else {
                Style::Thread
            };
            let r3 = Rng::new(r1.next_u64());
            let second = read_side(places, 1, second_style, a.clone(), r3, None);
            let a1 = a.clone();
            let first = places.spawn(0, async move {
                let mut buf = [0u8; 16];
                a1.read_async(&mut buf, false).await
            });
            let sender =
                act_after_pause(places, 1, r2, move || write_msg(&peer, b"x").map(|()| peer));
            pause(&mut r1);
            first.abort();
            let first = first.join().ok();
            let peer = joined(sender.join()).map_err(|e| format!("the sender: {e}"))?;
            match first {
                // The first took the message: one more for the second.
                Some(Ok(1)) => write_msg(&peer, b"y").map_err(|e| format!("the sender: {e}"))?,
                None => {}
                Some(other) => return Err(format!("the aborted reader got {other:?}")),
            }
            match second.join()? {
                Ok(1) => {}
                other => {
                    return Err(format!(
                        "the {second_style:?} reader got {other:?} (the aborted one: {first:?})"
                    ));
                }
            }
            drop(peer);
            return Ok(());
        }
        Race::TimedWritesVsDrain => {
            let limit = Duration::from_micros(1 + r1.below(2000));
            let (msgs, len) = if a.is_dgram() {
                (16 + r1.below(48) as usize, 4096)
            } else {
                (1, (256 << 10) + r1.below(1 << 20) as usize)
            };
            let writer = timed_write_side(places, 0, waiter_style, a, limit, msgs, len);
            let drainer = act_after_pause(places, 1, r2.clone(), move || {
                drain_slowly(&peer, &mut r2, msgs, len).map(|()| peer)
            });
            let peer = joined(drainer.join()).map_err(|e| format!("the drainer: {e}"))?;
            writer
                .join()?
                .map_err(|e| format!("the {waiter_style:?} writer: {e}"))?;
            drop(peer);
            return Ok(());
        }
        Race::ReadHalfVsWriteHalfDrop => {
            let (read, write) = split(unwrap_arc(a));
            // The peer closes once it reads EOF, which the write half's drop sends.
            let closer = places.go(1, move || {
                let mut buf = [0u8; 16];
                let r = peer.read(&mut buf, false);
                drop(peer);
                r
            });
            let reader = read_side(places, 0, waiter_style, Arc::new(read), r1, None);
            joined(act_after_pause(places, 1, r2, move || drop(write)).join());
            match joined(closer.join()) {
                Ok(0) => {}
                other => return Err(format!("the peer got {other:?}, not EOF")),
            }
            match reader.join()? {
                Ok(0) => {}
                other => {
                    return Err(format!(
                        "the {waiter_style:?} reader got {other:?}, not EOF"
                    ));
                }
            }
            return Ok(());
        }
        Race::WriteHalfVsReadHalfDrop => {
            let (read, write) = split(unwrap_arc(a));
            let len = 1 + r1.below(512 << 10) as usize;
            let writer =
                timed_write_side(places, 0, waiter_style, Arc::new(write), EVENTUALLY, 1, len);
            joined(act_after_pause(places, 1, r2.clone(), move || drop(read)).join());
            drain_slowly(&peer, &mut r2, 1, len).map_err(|e| format!("the peer: {e}"))?;
            writer
                .join()?
                .map_err(|e| format!("the {waiter_style:?} writer: {e}"))?;
        }
        Race::AcceptVsCloneDrop | Race::AcceptVsConnect => unreachable!("in accept_race"),
        Race::PingPong => {
            let max = if family == Family::Udp || family == Family::UnixDgram {
                4096
            } else {
                64 << 10
            };
            let sizes: Arc<Vec<usize>> =
                Arc::new((0..20).map(|_| 1 + r2.below(max) as usize).collect());
            let other_style = style(&mut r2);
            let a = unwrap_arc(a);
            let first = ping_pong_side(places, 0, waiter_style, a, sizes.clone(), true);
            let second = ping_pong_side(places, 1, other_style, peer, sizes, false);
            first
                .join()?
                .map_err(|e| format!("the {waiter_style:?} pinger: {e}"))?;
            second
                .join()?
                .map_err(|e| format!("the {other_style:?} ponger: {e}"))?;
            return Ok(());
        }
    }
    drop(peer);
    Ok(())
}

/// A listener of either stream family.
enum Listener {
    Tcp(corio::net::TcpListener),
    Unix(corio::net::UnixListener),
}

impl Listener {
    /// A listener on 127.0.0.1, or at a fresh abstract Unix address (no file to remove).
    fn bind(family: Family) -> Listener {
        use std::os::linux::net::SocketAddrExt;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        match family {
            Family::Tcp => Listener::Tcp(corio::net::TcpListener::bind("127.0.0.1:0").unwrap()),
            _ => {
                let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let name = format!("corio-net-stress-more-{}-{n}", std::process::id());
                let addr = std::os::unix::net::SocketAddr::from_abstract_name(name).unwrap();
                Listener::Unix(corio::net::UnixListener::bind_addr(&addr).unwrap())
            }
        }
    }

    fn accept(&self) -> std::io::Result<Sock> {
        match self {
            Listener::Tcp(l) => l.accept().map(|(s, _)| Sock::Tcp(s)),
            Listener::Unix(l) => l.accept().map(|(s, _)| Sock::UStream(s)),
        }
    }

    async fn accept_async(&self) -> std::io::Result<Sock> {
        match self {
            Listener::Tcp(l) => l.accept_async().await.map(|(s, _)| Sock::Tcp(s)),
            Listener::Unix(l) => l.accept_async().await.map(|(s, _)| Sock::UStream(s)),
        }
    }

    fn try_clone(&self) -> Listener {
        match self {
            Listener::Tcp(l) => Listener::Tcp(l.try_clone().unwrap()),
            Listener::Unix(l) => Listener::Unix(l.try_clone().unwrap()),
        }
    }

    /// A connection to the listener, blocking-style.
    fn connect(&self) -> std::io::Result<Sock> {
        match self {
            Listener::Tcp(l) => TcpStream::connect(l.local_addr()?).map(Sock::Tcp),
            Listener::Unix(l) => UnixStream::connect_addr(&l.local_addr()?).map(Sock::UStream),
        }
    }
}

/// The accept races (`AcceptVsCloneDrop`, `AcceptVsConnect`): the waiter, side 0, accepts.
fn accept_race(kind: Race, family: Family, rng: &mut Rng, places: &Places) -> Result<(), String> {
    let (mut r1, mut r2) = (rng.clone(), rng.clone());
    r1.next_u64();
    r2.next_u64();
    r2.next_u64();
    rng.next_u64();
    rng.next_u64();
    rng.next_u64();
    let waiter_style = style(&mut r1);
    let l = Arc::new(Listener::bind(family));
    // A second handle: dropped under the waiter, or the connector's way to the address.
    let clone = l.try_clone();
    let l2 = l.clone();
    let mut r3 = r1.clone();
    let waiter = places.side(
        0,
        waiter_style,
        move || {
            if waiter_style == Style::Thread {
                pause_thread(&mut r1);
            } else {
                pause(&mut r1);
            }
            l.accept()
        },
        move || async move {
            pause_async(&mut r3).await;
            l2.accept_async().await
        },
    );
    if let Race::AcceptVsCloneDrop = kind {
        joined(act_after_pause(places, 1, r2, move || drop(clone)).join());
        if waiter.join()?.is_ok() {
            return Err(format!(
                "the {waiter_style:?} acceptor got a connection nobody made"
            ));
        }
        return Ok(());
    }
    let clone = Arc::new(clone);
    let c2 = clone.clone();
    let connector = act_after_pause(places, 1, r2, move || {
        let s = c2.connect()?;
        write_msg(&s, b"a")?;
        Ok::<_, std::io::Error>(s)
    });
    let client = joined(connector.join()).map_err(|e| format!("the connector: {e}"))?;
    let accepted = waiter
        .join()?
        .map_err(|e| format!("the {waiter_style:?} acceptor: {e}"))?;
    let mut buf = [0u8; 4];
    match accepted.read(&mut buf, false) {
        Ok(1) if buf[0] == b'a' => {}
        other => return Err(format!("the accepted connection read {other:?}")),
    }
    drop((client, accepted, clone));
    Ok(())
}

/// `RACES` random races on a runtime of `workers` workers; with `apart`, each race's sides run
/// on the anchors of different workers.
fn races(workers: usize, seed: u64, apart: bool) {
    let rt = support::rt(workers);
    rt.run(move || {
        let places = if apart {
            Places::apart(workers, seed)
        } else {
            Places::anywhere()
        };
        let mut rng = Rng::new(seed ^ if apart { 0xc055 } else { 0x7ace });
        // How many races of each kind ran, printed at the end (the same for the same seed).
        let mut tally = BTreeMap::new();
        for i in 0..RACES {
            let kind = RACE_KINDS[rng.below(RACE_KINDS.len() as u64) as usize];
            let families = kind.families();
            let family = families[rng.below(families.len() as u64) as usize];
            if let Err(e) = race(kind, family, &mut rng, &places) {
                panic!("seed {seed}, {workers} workers, race {i} ({kind:?} on {family:?}): {e}");
            }
            *tally.entry(format!("{kind:?}")).or_insert(0) += 1;
        }
        eprintln!("seed {seed}, {workers} workers: races run {tally:?}");
    });
    drop(rt);
}

rt_common! {
    #[test]
    #[cfg_attr(miri, ignore)]
    fn a_soak_of_datagram_links_checks_every_datagram() {
        hunt(&SERIAL, "net_stress_more datagram soak", WORKERS, |seed| {
            no_fd_leak("datagram soak", seed, || dgram_soak(WORKERS, seed, None));
        });
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn dropping_the_runtime_mid_datagram_soak_closes_every_socket() {
        hunt(&SERIAL, "net_stress_more cut datagram soak", WORKERS, |seed| {
            let rng = Rng::new(seed ^ 0xc07);
            cut_rounds("cut datagram soak", seed, rng, 30, |seed, cut| {
                dgram_soak(WORKERS, seed, Some(cut))
            });
        });
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn datagram_and_unix_waiters_always_wake() {
        hunt(&SERIAL, "net_stress_more races", WORKERS, |seed| {
            no_fd_leak("races", seed, || races(WORKERS, seed, false));
        });
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn waiters_woken_from_the_other_worker_always_wake() {
        hunt(&SERIAL, "net_stress_more cross-worker races", WORKERS, |seed| {
            no_fd_leak("cross-worker races", seed, || races(WORKERS, seed, true));
        });
    }
}

/// A plain thread waiting in a write on a full Unix socket (stream or datagram) while another
/// thread shuts the socket down for writing: `std`'s blocking write wakes with `EPIPE` (the
/// kernel's wait for buffer space checks `SEND_SHUTDOWN`), corio's must too. On a plain thread
/// corio waits in `poll(2)`, and a Unix socket's `shutdown(SHUT_WR)` raises neither `POLLOUT`
/// nor `POLLHUP` (`unix_poll` and `unix_dgram_poll` look at the space left, not at the
/// shutdown; `Shutdown::Both` raises `POLLHUP`, and TCP's poll reports a shut send side
/// writable). These waits lasted for ever until the writer also polled an eventfd that
/// `Source::shutdown` signals (`Source::block_thread`, "A write and the shutdown of its
/// direction"). Found by `WriteVsShutdown` in the races above. The write direction may also be
/// shut down by the drop of an `OwnedWriteHalf` (of a `try_clone` of the writer's stream).
///
/// `shut` shuts `a` down for writing, one way or another, while a plain thread writes to it.
fn plain_thread_write_vs_shutdown_write(a: Sock, shut: impl FnOnce(&Sock)) {
    let a = Arc::new(a);
    let w = a.clone();
    let chunk = if a.is_dgram() { 4096 } else { 64 << 10 };
    let writer = std::thread::spawn(move || {
        loop {
            if let Err(e) = w.write(&vec![0u8; chunk]) {
                return e.kind();
            }
        }
    });
    // The buffer fills within microseconds; the writer then waits.
    std::thread::sleep(Duration::from_millis(100));
    shut(&a);
    let woke = support::holds_within(Duration::from_secs(10), || writer.is_finished());
    assert!(
        woke,
        "a plain thread's write did not wake within 10 s of shutdown(Write)"
    );
    assert_eq!(writer.join().unwrap(), ErrorKind::BrokenPipe);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_plain_threads_write_wakes_when_its_unix_stream_is_shut_for_writing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    within(EVENTUALLY, || {
        let (a, _peer) = UnixStream::pair().unwrap();
        plain_thread_write_vs_shutdown_write(Sock::UStream(a), |a| {
            a.shutdown(Shutdown::Write).unwrap()
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_plain_threads_send_wakes_when_its_unix_datagram_socket_is_shut_for_writing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    within(EVENTUALLY, || {
        let (a, _peer) = UnixDatagram::pair().unwrap();
        plain_thread_write_vs_shutdown_write(Sock::UDgram(a), |a| {
            a.shutdown(Shutdown::Write).unwrap()
        });
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_plain_threads_write_wakes_when_a_write_half_of_its_unix_stream_is_dropped() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    within(EVENTUALLY, || {
        let (a, _peer) = UnixStream::pair().unwrap();
        let (_read, write) = a.try_clone().unwrap().into_split();
        plain_thread_write_vs_shutdown_write(Sock::UStream(a), move |_| drop(write));
    });
}
