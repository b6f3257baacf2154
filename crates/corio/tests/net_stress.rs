//! A randomised bug hunt in the networking layer under concurrency, on both scheduler flavours:
//!
//! - a soak: a few hundred TCP connections from stackful and async clients to a server whose
//!   acceptors and per-connection handlers are both kinds too; each connection runs a random
//!   sequence of echo round trips (1 B to 200 KiB, so that send buffers fill), reads that time
//!   out (`set_read_timeout`, or a `timeout_async` that cancels a `read_async`) and must leave
//!   the socket usable, `into_split` halves used from two coroutines or tasks at once and then
//!   reunited, and an ending: a plain close, a half-close after which the client still reads
//!   the rest, or a drop while another handle is writing. Every byte is checked on both sides
//!   (it is a function of the connection id and its offset), and the server must see every
//!   connection end — with EOF at the right offset where the client closed cleanly.
//! - the same soak cut short: the runtime is dropped a few milliseconds in, with everything in
//!   flight, and must close every socket.
//! - drops racing waits: a reader or writer waiting on one handle (in a coroutine, a task or a
//!   plain thread) while another coroutine drops a `try_clone` handle, drops the other half,
//!   shuts the socket down, closes the peer or hands a clone back with `into_std`, after a
//!   random delay; the waiter must wake with EOF or an error, never hang. And waits that end
//!   (a timeout, a `timeout_async`, an abort) as data arrives: no byte and no wakeup is lost.
//! - after each test, with its runtime dropped, the process has the descriptors it had before.
//!
//! The randomness is seeded (`NET_STRESS_SEED` replays a run's random choices, though not the
//! threads' interleaving; otherwise the seed comes from the clock, so that repeated runs
//! explore different choices). Every assertion message names the seed, and each test prints
//! it first, so that a hang the watchdog reports has it too (in the test's captured output).
//!
//! The tests count the whole process's descriptors, so they run one at a time (`SERIAL`).

#[macro_use]
mod support;

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use corio::net::{TcpListener, TcpStream, UnixStream};
use support::stress::{cut_rounds, hunt, no_fd_leak, nothing_read, pause};
use support::{EVENTUALLY, Rng};

/// Serialises the tests of this file: each compares the process's descriptors before and after
/// its runtime, which another test's sockets would disturb.
static SERIAL: Mutex<()> = Mutex::new(());

/// Set while a soak is cut short by its runtime's drop: the failures that drop causes in the
/// clients, servers and acceptors (their waits end with errors, their joins with
/// cancellations) are then expected, and they stop quietly instead of failing the test.
static CUTTING: AtomicBool = AtomicBool::new(false);

/// The soak's connections: a few hundred, made by this many drivers one after another (so that
/// the listener's backlog never overflows into SYN retries that take a second each).
const DRIVERS: u64 = 16;
const CONNS_PER_DRIVER: u64 = 14;

/// Iterations of the drop-races test per flavour.
const RACES: u64 = 400;

/// The byte at `offset` of connection `id`'s stream (the client's writes and so the server's
/// echo): varies with both, so that a byte from another connection, a repeated or a skipped
/// chunk is caught.
fn byte_at(id: u64, offset: u64) -> u8 {
    let block = (offset / 251).wrapping_add(id.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    ((block.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8) ^ (offset as u8)
}

fn content(id: u64, offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| byte_at(id, offset + i)).collect()
}

/// `Err` with a description if `got` is not connection `id`'s bytes from `offset`.
fn check(id: u64, offset: u64, got: &[u8]) -> Result<(), String> {
    match (0..got.len()).find(|&i| got[i] != byte_at(id, offset + i as u64)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "connection {id}: wrong byte at offset {}: got {:#04x}, expected {:#04x}",
            offset + i as u64,
            got[i],
            byte_at(id, offset + i as u64)
        )),
    }
}

/// A transfer size: mostly small, some past a send buffer's worth.
fn size(rng: &mut Rng) -> usize {
    match rng.below(10) {
        0..=5 => 1 + rng.below(1024) as usize,
        6..=8 => 1024 + rng.below(31 << 10) as usize,
        _ => (32 << 10) + rng.below(168 << 10) as usize,
    }
}

/// A join's value; a panic in the joined task is resumed here, so that its own message (which
/// names the seed) is the test's.
fn joined<T>(r: Result<T, corio::JoinError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Unwinds without the panic hook, so without a message: the runtime is going away.
        Err(_) if CUTTING.load(SeqCst) => std::panic::resume_unwind(Box::new("cancelled")),
        Err(e) => panic!("a task was cancelled: {e:?}"),
    }
}

/// How the server saw a connection end.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// EOF after this many bytes (all of them echoed).
    Eof(u64),
    /// An error (the client dropped its socket with data in flight).
    Error(ErrorKind),
    /// Bytes that were not the connection's, or a protocol failure.
    Bad(String),
}

/// What the client expects the server to have seen, recorded before the connection ends.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Eof(u64),
    /// An abrupt drop: EOF or an error, whichever the race gives.
    EofOrError,
}

/// The soak's shared state.
struct Soak {
    seed: u64,
    outcomes: Mutex<HashMap<u64, Outcome>>,
    expected: Mutex<HashMap<u64, Expect>>,
    /// Connections a server handler has finished with (any outcome).
    served: AtomicUsize,
}

impl Soak {
    fn record(&self, id: u64, outcome: Outcome) {
        let old = self.outcomes.lock().unwrap().insert(id, outcome);
        assert!(
            old.is_none(),
            "seed {}: connection {id} served twice",
            self.seed
        );
        self.served.fetch_add(1, SeqCst);
    }

    fn expect(&self, id: u64, e: Expect) {
        self.expected.lock().unwrap().insert(id, e);
    }
}

/// The server's side of a connection, blocking-style: reads the client's id, acknowledges it
/// with one byte, then checks and echoes every byte until EOF or an error.
fn serve_blocking(soak: Arc<Soak>, s: TcpStream, buf_len: usize) {
    let mut id = [0u8; 8];
    if let Err(e) = (&s).read_exact(&mut id) {
        if CUTTING.load(SeqCst) {
            return;
        }
        // Every client waits for the acknowledgement before anything else: no way to lose it.
        panic!("seed {}: the server could not read an id: {e}", soak.seed);
    }
    let id = u64::from_le_bytes(id);
    let outcome = (|| {
        (&s).write_all(&[1]).map_err(|e| Outcome::Error(e.kind()))?;
        let mut buf = vec![0u8; buf_len];
        let mut offset = 0u64;
        loop {
            match (&s).read(&mut buf) {
                Ok(0) => return Ok(Outcome::Eof(offset)),
                Ok(n) => {
                    check(id, offset, &buf[..n]).map_err(Outcome::Bad)?;
                    (&s).write_all(&buf[..n])
                        .map_err(|e| Outcome::Error(e.kind()))?;
                    offset += n as u64;
                }
                Err(e) => return Err(Outcome::Error(e.kind())),
            }
        }
    })();
    soak.record(id, outcome.unwrap_or_else(|o| o));
}

/// `serve_blocking` in an async task.
async fn serve_async(soak: Arc<Soak>, s: TcpStream, buf_len: usize) {
    let mut id = [0u8; 8];
    if let Err(e) = s.read_exact_async(&mut id).await {
        if CUTTING.load(SeqCst) {
            return;
        }
        panic!("seed {}: the server could not read an id: {e}", soak.seed);
    }
    let id = u64::from_le_bytes(id);
    let outcome = async {
        s.write_all_async(&[1])
            .await
            .map_err(|e| Outcome::Error(e.kind()))?;
        let mut buf = vec![0u8; buf_len];
        let mut offset = 0u64;
        loop {
            match s.read_async(&mut buf).await {
                Ok(0) => return Ok(Outcome::Eof(offset)),
                Ok(n) => {
                    check(id, offset, &buf[..n]).map_err(Outcome::Bad)?;
                    s.write_all_async(&buf[..n])
                        .await
                        .map_err(|e| Outcome::Error(e.kind()))?;
                    offset += n as u64;
                }
                Err(e) => return Err(Outcome::Error(e.kind())),
            }
        }
    }
    .await;
    soak.record(id, outcome.unwrap_or_else(|o| o));
}

/// Hands an accepted connection to a coroutine or a task, at random.
fn serve(soak: &Arc<Soak>, s: TcpStream, rng: &mut Rng) {
    let soak = soak.clone();
    let buf_len = 1 + rng.below(64 << 10) as usize;
    if rng.chance(50) {
        corio::go(move || serve_blocking(soak, s, buf_len));
    } else {
        corio::spawn(serve_async(soak, s, buf_len));
    }
}

/// The operations of a connection.
#[derive(Debug, Clone, Copy)]
enum Op {
    RoundTrip(usize),
    Halves(usize),
    TimedOutRead,
}

/// The end of a connection.
#[derive(Debug, Clone, Copy)]
enum End {
    /// Drop after reading every echoed byte: the server reads EOF at the total.
    Close,
    /// Write, `shutdown(Write)`, then read the whole echo and EOF.
    HalfClose(usize),
    /// Drop one handle while a `try_clone` handle is writing a large transfer.
    DropWhileWriting(usize),
}

/// A connection's script, chosen before it starts so that a failure can name it.
fn script(rng: &mut Rng) -> (Vec<Op>, End) {
    let ops = (0..rng.below(5))
        .map(|_| match rng.below(3) {
            0 => Op::RoundTrip(size(rng)),
            1 => Op::Halves(size(rng)),
            _ => Op::TimedOutRead,
        })
        .collect();
    let end = match rng.below(3) {
        0 => End::Close,
        1 => End::HalfClose(size(rng)),
        _ => End::DropWhileWriting((64 << 10) + rng.below(1 << 20) as usize),
    };
    (ops, end)
}

/// Reads connection `id`'s bytes `offset..offset + len` from `r`, checking each, in chunks of at
/// most `chunk` bytes.
fn read_checked(
    mut r: impl Read,
    id: u64,
    offset: u64,
    len: usize,
    chunk: usize,
    what: &str,
) -> Result<(), String> {
    let mut buf = vec![0u8; chunk.min(len).max(1)];
    let mut done = 0;
    while done < len {
        let want = buf.len().min(len - done);
        match r.read(&mut buf[..want]) {
            Ok(0) => return Err(format!("{what}: EOF after {done} of {len} bytes")),
            Ok(n) => {
                check(id, offset + done as u64, &buf[..n]).map_err(|e| format!("{what}: {e}"))?;
                done += n;
            }
            Err(e) => return Err(format!("{what}: read error after {done} of {len}: {e}")),
        }
    }
    Ok(())
}

/// What `read_checked_async` reads from: a stream through `read_async`, or a read half through
/// `futures_io::AsyncRead`.
enum AsyncReader<'s> {
    Stream(&'s TcpStream),
    Half(&'s mut corio::net::tcp::OwnedReadHalf),
}

impl AsyncReader<'_> {
    async fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            AsyncReader::Stream(s) => s.read_async(buf).await,
            AsyncReader::Half(h) => support::futures_io_compat::read(*h, buf).await,
        }
    }
}

/// The async form of `read_checked`.
async fn read_checked_async(
    mut r: AsyncReader<'_>,
    id: u64,
    offset: u64,
    len: usize,
    chunk: usize,
    what: &str,
) -> Result<(), String> {
    let mut buf = vec![0u8; chunk.min(len).max(1)];
    let mut done = 0;
    while done < len {
        let want = buf.len().min(len - done);
        match r.read(&mut buf[..want]).await {
            Ok(0) => return Err(format!("{what}: EOF after {done} of {len} bytes")),
            Ok(n) => {
                check(id, offset + done as u64, &buf[..n]).map_err(|e| format!("{what}: {e}"))?;
                done += n;
            }
            Err(e) => return Err(format!("{what}: read error after {done} of {len}: {e}")),
        }
    }
    Ok(())
}

/// Reads the one byte with which the server acknowledges a connection's id.
fn hello_blocking(s: &TcpStream, id: u64) -> Result<(), String> {
    (&*s)
        .write_all(&id.to_le_bytes())
        .map_err(|e| format!("id: {e}"))?;
    let mut ack = [0u8; 1];
    (&*s).read_exact(&mut ack).map_err(|e| format!("ack: {e}"))
}

/// One connection of a stackful client: its script, blocking-style.
fn client_blocking(soak: &Soak, addr: SocketAddr, id: u64, rng: &mut Rng) -> Result<(), String> {
    let (ops, end) = script(rng);
    let ctx = format!("connection {id} (stackful; {ops:?}, {end:?})");
    let s = TcpStream::connect(addr).map_err(|e| format!("{ctx}: connect: {e}"))?;
    hello_blocking(&s, id).map_err(|e| format!("{ctx}: {e}"))?;
    let mut s = Arc::new(s);
    let mut offset = 0u64;
    for (i, op) in ops.iter().enumerate() {
        let what = format!("{ctx}: op {i}");
        match *op {
            Op::RoundTrip(n) => {
                // A writer coroutine sends while this one reads the echo: one after the other
                // they would deadlock once the transfer outgrows the socket buffers.
                let w = s.clone();
                let data = content(id, offset, n);
                let writer = corio::go(move || (&*w).write_all(&data));
                read_checked(&*s, id, offset, n, 1 + rng.below(64 << 10) as usize, &what)?;
                joined(writer.join()).map_err(|e| format!("{what}: write: {e}"))?;
                offset += n as u64;
            }
            Op::Halves(n) => {
                let stream = Arc::try_unwrap(s).expect("the writer's handle is gone");
                let (mut read, mut write) = stream.into_split();
                let data = content(id, offset, n);
                let writer = corio::go(move || write.write_all(&data).map(|()| write));
                let chunk = 1 + rng.below(64 << 10) as usize;
                read_checked(&mut read, id, offset, n, chunk, &what)?;
                let write = joined(writer.join()).map_err(|e| format!("{what}: write: {e}"))?;
                let stream = if rng.chance(50) {
                    read.reunite(write)
                } else {
                    write.reunite(read)
                };
                s = Arc::new(stream.map_err(|e| format!("{what}: reunite: {e}"))?);
                offset += n as u64;
            }
            Op::TimedOutRead => {
                // The server sends nothing unasked: the read must time out, and the socket
                // must work after it (the abandoned wait left behind must not steal a wakeup).
                let limit = Duration::from_millis(1 + rng.below(15));
                s.set_read_timeout(Some(limit)).unwrap();
                let mut buf = [0u8; 64];
                match (&*s).read(&mut buf) {
                    Err(e) if e.kind() == ErrorKind::TimedOut => {}
                    other => return Err(format!("{what}: a read that should time out: {other:?}")),
                }
                // Sometimes leave a (generous) timeout in place for the round trip.
                if rng.chance(50) {
                    s.set_read_timeout(None).unwrap();
                } else {
                    s.set_read_timeout(Some(EVENTUALLY)).unwrap();
                }
                let n = size(rng);
                let w = s.clone();
                let data = content(id, offset, n);
                let writer = corio::go(move || (&*w).write_all(&data));
                read_checked(&*s, id, offset, n, 4096, &what)?;
                joined(writer.join()).map_err(|e| format!("{what}: write: {e}"))?;
                offset += n as u64;
                s.set_read_timeout(None).unwrap();
            }
        }
    }
    let s = Arc::try_unwrap(s).expect("every writer's handle is gone");
    match end {
        End::Close => {
            soak.expect(id, Expect::Eof(offset));
            drop(s);
        }
        End::HalfClose(n) => {
            soak.expect(id, Expect::Eof(offset + n as u64));
            let w = s.try_clone().unwrap();
            let data = content(id, offset, n);
            // The writer half-closes and keeps its handle until the reader is done: dropping
            // a `try_clone` handle would close the socket for both.
            let writer = corio::go(move || {
                (&w).write_all(&data)?;
                w.shutdown(Shutdown::Write)?;
                Ok::<_, std::io::Error>(w)
            });
            let what = format!("{ctx}: half-close");
            read_checked(&s, id, offset, n, 1 + rng.below(64 << 10) as usize, &what)?;
            let w = joined(writer.join()).map_err(|e| format!("{what}: write: {e}"))?;
            let mut buf = [0u8; 16];
            match (&s).read(&mut buf) {
                Ok(0) => {}
                other => return Err(format!("{what}: expected EOF after the echo: {other:?}")),
            }
            drop(w);
        }
        End::DropWhileWriting(n) => {
            soak.expect(id, Expect::EofOrError);
            let w = s.try_clone().unwrap();
            let data = content(id, offset, n);
            let writer = corio::go(move || (&w).write_all(&data));
            // Read a little of the echo, perhaps, then drop this handle under the writer: it
            // must wake (with an error, or done) rather than wait for ever.
            let k = rng.below(4096) as usize;
            let _ = read_checked(&s, id, offset, k, 1024, &ctx);
            if rng.chance(50) {
                corio::sleep(Duration::from_micros(rng.below(2000)));
            }
            drop(s);
            let _ = joined(writer.join());
        }
    }
    Ok(())
}

/// One connection of an async client: its script with the `_async` forms, `futures_io` on the
/// halves, and `timeout_async` for the read that must time out.
async fn client_async(soak: &Soak, addr: SocketAddr, id: u64, rng: &mut Rng) -> Result<(), String> {
    let (ops, end) = script(rng);
    let ctx = format!("connection {id} (async; {ops:?}, {end:?})");
    let s = TcpStream::connect_async(addr)
        .await
        .map_err(|e| format!("{ctx}: connect: {e}"))?;
    s.write_all_async(&id.to_le_bytes())
        .await
        .map_err(|e| format!("{ctx}: id: {e}"))?;
    let mut ack = [0u8; 1];
    s.read_exact_async(&mut ack)
        .await
        .map_err(|e| format!("{ctx}: ack: {e}"))?;
    let mut s = Arc::new(s);
    let mut offset = 0u64;
    for (i, op) in ops.iter().enumerate() {
        let what = format!("{ctx}: op {i}");
        match *op {
            Op::RoundTrip(n) => {
                let w = s.clone();
                let data = content(id, offset, n);
                let writer = corio::spawn(async move { w.write_all_async(&data).await });
                let chunk = 1 + rng.below(64 << 10) as usize;
                read_checked_async(AsyncReader::Stream(&s), id, offset, n, chunk, &what).await?;
                joined(writer.await).map_err(|e| format!("{what}: write: {e}"))?;
                offset += n as u64;
            }
            Op::Halves(n) => {
                let stream = Arc::try_unwrap(s).expect("the writer's handle is gone");
                let (mut read, mut write) = stream.into_split();
                let data = content(id, offset, n);
                // The write half in a task of its own, through `futures_io`.
                let writer = corio::spawn(async move {
                    support::futures_io_compat::write_all(&mut write, &data)
                        .await
                        .map(|()| write)
                });
                let chunk = 1 + rng.below(64 << 10) as usize;
                read_checked_async(AsyncReader::Half(&mut read), id, offset, n, chunk, &what)
                    .await?;
                let write = joined(writer.await).map_err(|e| format!("{what}: write: {e}"))?;
                let stream = if rng.chance(50) {
                    read.reunite(write)
                } else {
                    write.reunite(read)
                };
                s = Arc::new(stream.map_err(|e| format!("{what}: reunite: {e}"))?);
                offset += n as u64;
            }
            Op::TimedOutRead => {
                // A `read_async` cancelled by its timeout: the socket must work after it.
                let limit = Duration::from_millis(1 + rng.below(15));
                let mut buf = [0u8; 64];
                let r = corio::time::timeout_async(limit, s.read_async(&mut buf)).await;
                if let Ok(r) = r {
                    return Err(format!("{what}: a read that should time out: {r:?}"));
                }
                let n = size(rng);
                let w = s.clone();
                let data = content(id, offset, n);
                let writer = corio::spawn(async move { w.write_all_async(&data).await });
                read_checked_async(AsyncReader::Stream(&s), id, offset, n, 4096, &what).await?;
                joined(writer.await).map_err(|e| format!("{what}: write: {e}"))?;
                offset += n as u64;
            }
        }
    }
    let s = Arc::try_unwrap(s).expect("every writer's handle is gone");
    match end {
        End::Close => {
            soak.expect(id, Expect::Eof(offset));
            drop(s);
        }
        End::HalfClose(n) => {
            soak.expect(id, Expect::Eof(offset + n as u64));
            let s = Arc::new(s);
            let w = s.clone();
            let data = content(id, offset, n);
            let writer = corio::spawn(async move {
                w.write_all_async(&data).await?;
                w.shutdown(Shutdown::Write)
            });
            let what = format!("{ctx}: half-close");
            let chunk = 1 + rng.below(64 << 10) as usize;
            read_checked_async(AsyncReader::Stream(&s), id, offset, n, chunk, &what).await?;
            joined(writer.await).map_err(|e| format!("{what}: write: {e}"))?;
            let mut buf = [0u8; 16];
            match s.read_async(&mut buf).await {
                Ok(0) => {}
                other => return Err(format!("{what}: expected EOF after the echo: {other:?}")),
            }
        }
        End::DropWhileWriting(n) => {
            soak.expect(id, Expect::EofOrError);
            let w = s.try_clone().unwrap();
            let data = content(id, offset, n);
            let writer = corio::spawn(async move { w.write_all_async(&data).await });
            let k = rng.below(4096) as usize;
            let _ = read_checked_async(AsyncReader::Stream(&s), id, offset, k, 1024, &ctx).await;
            if rng.chance(50) {
                corio::time::sleep_async(Duration::from_micros(rng.below(2000))).await;
            }
            drop(s);
            let _ = joined(writer.await);
        }
    }
    Ok(())
}

/// The soak on a runtime of `workers` workers; with `cut`, the runtime is dropped that long
/// after the clients start, with everything in flight (the test then checks only that no
/// descriptor is left open).
fn soak(workers: usize, seed: u64, cut: Option<Duration>) {
    let rt = support::rt(workers);
    rt.run(move || {
        let listener = Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
        let addr = listener.local_addr().unwrap();
        let soak = Arc::new(Soak {
            seed,
            outcomes: Mutex::new(HashMap::new()),
            expected: Mutex::new(HashMap::new()),
            served: AtomicUsize::new(0),
        });
        // Two acceptors on one listener, a coroutine and a task; they run until the runtime's
        // drop cancels them.
        let (l, sk) = (listener.clone(), soak.clone());
        corio::go(move || {
            let mut rng = Rng::new(seed ^ 0xacce);
            loop {
                let s = match l.accept() {
                    Ok((s, _)) => s,
                    Err(_) if CUTTING.load(SeqCst) => return,
                    Err(e) => panic!("seed {seed}: accept: {e}"),
                };
                serve(&sk, s, &mut rng);
            }
        });
        let (l, sk) = (listener.clone(), soak.clone());
        corio::spawn(async move {
            let mut rng = Rng::new(seed ^ 0xa5c);
            loop {
                let s = match l.accept_async().await {
                    Ok((s, _)) => s,
                    Err(_) if CUTTING.load(SeqCst) => return,
                    Err(e) => panic!("seed {seed}: accept_async: {e}"),
                };
                serve(&sk, s, &mut rng);
            }
        });
        let drivers: Vec<_> = (0..DRIVERS)
            .map(|d| {
                let soak = soak.clone();
                let ids = d * CONNS_PER_DRIVER..(d + 1) * CONNS_PER_DRIVER;
                if d % 2 == 0 {
                    corio::go(move || {
                        for id in ids {
                            let mut rng = Rng::new(seed ^ id.wrapping_mul(0x1_0000_0001));
                            if let Err(e) = client_blocking(&soak, addr, id, &mut rng) {
                                if CUTTING.load(SeqCst) {
                                    return;
                                }
                                panic!("seed {seed}, {workers} workers: {e}");
                            }
                        }
                    })
                } else {
                    corio::spawn(async move {
                        for id in ids {
                            let mut rng = Rng::new(seed ^ id.wrapping_mul(0x1_0000_0001));
                            if let Err(e) = client_async(&soak, addr, id, &mut rng).await {
                                if CUTTING.load(SeqCst) {
                                    return;
                                }
                                panic!("seed {seed}, {workers} workers: {e}");
                            }
                        }
                    })
                }
            })
            .collect();
        if let Some(cut) = cut {
            corio::sleep(cut);
            CUTTING.store(true, SeqCst);
            return;
        }
        for d in drivers {
            joined(d.join());
        }
        let total = (DRIVERS * CONNS_PER_DRIVER) as usize;
        let deadline = Instant::now() + EVENTUALLY;
        while soak.served.load(SeqCst) < total {
            if Instant::now() > deadline {
                let outcomes = soak.outcomes.lock().unwrap();
                let missing: Vec<u64> = (0..total as u64)
                    .filter(|id| !outcomes.contains_key(id))
                    .collect();
                panic!(
                    "seed {seed}, {workers} workers: the server never finished connections \
                     {missing:?} (their clients are done)"
                );
            }
            corio::sleep(Duration::from_millis(1));
        }
        let outcomes = soak.outcomes.lock().unwrap();
        let expected = soak.expected.lock().unwrap();
        for id in 0..total as u64 {
            let (got, want) = (&outcomes[&id], &expected[&id]);
            let ok = match (want, got) {
                (_, Outcome::Bad(_)) => false,
                (Expect::Eof(n), got) => *got == Outcome::Eof(*n),
                (Expect::EofOrError, _) => true,
            };
            assert!(
                ok,
                "seed {seed}, {workers} workers: connection {id}: the server saw {got:?}, \
                 expected {want:?}"
            );
        }
    });
    drop(rt);
    CUTTING.store(false, SeqCst);
}

/// The ways a wait is ended by another coroutine in `races`.
#[derive(Debug, Clone, Copy)]
enum Race {
    /// A coroutine reads one handle; another drops a `try_clone` of it.
    ReadVsCloneDrop,
    /// An async task reads one handle; a coroutine drops a `try_clone` of it.
    AsyncReadVsCloneDrop,
    /// A coroutine reads with a short read timeout; another drops a `try_clone` of it.
    TimedReadVsCloneDrop,
    /// A `timeout_async` around a `read_async`; a coroutine drops a `try_clone` of it.
    AsyncTimeoutVsCloneDrop,
    /// A coroutine reads the read half; another drops the write half, and the peer, which
    /// reads until EOF and then closes, makes the reader's EOF.
    ReadHalfVsWriteHalfDrop,
    /// A coroutine reads; another shuts the socket down (read, or both).
    ReadVsShutdown,
    /// A coroutine writes until the send buffer is full; another drops a `try_clone` of it.
    WriteVsCloneDrop,
    /// A coroutine reads; the peer is dropped by another.
    ReadVsPeerDrop,
    /// A coroutine reads with a short read timeout, again and again, while the peer sends a
    /// few bytes at random moments: a read that times out as a byte arrives must leave it for
    /// the next read (every byte arrives, in order).
    TimedReadVsData,
    /// As `TimedReadVsData`, with `timeout_async` cancelling `read_async`s in a task.
    AsyncTimeoutVsData,
    /// A coroutine writes until the send buffer is full; another shuts the write side down:
    /// the writer must wake with an error (`EPIPE`).
    WriteVsShutdownWrite,
    /// A coroutine writes a large transfer through the write half while another drops the
    /// read half, which must change nothing: the peer reads every byte.
    WriteHalfVsReadHalfDrop,
    /// Two coroutines (on both workers, when there are two) read one socket; another drops a
    /// `try_clone` of it: both readers must wake.
    TwoReadersVsCloneDrop,
    /// A task waits in `read_async` beside a coroutine waiting in `read`; the task is aborted
    /// as a byte arrives: whichever way the race goes, nobody is left waiting for a byte that
    /// the aborted one took the wakeup of.
    AbortedReaderVsData,
    /// A reader with a short timeout beside one without, as bytes arrive: as
    /// `AbortedReaderVsData`, with a timeout instead of an abort.
    TimedReaderBesideReaderVsData,
    /// A plain thread (outside the runtime) waits in `read`; a coroutine drops a `try_clone`.
    ThreadReadVsCloneDrop,
    /// Two coroutines wait to write on a full send buffer; the peer drains it: both finish.
    TwoWritersVsDrain,
    /// A coroutine reads one handle while another hands a `try_clone` of it back with
    /// `into_std` (refused, `ResourceBusy`, quietly) or `into_raw_fd` (a duplicate): the reader
    /// must still get the byte the peer then sends.
    ReadVsIntoStdOfClone,
}

const RACE_KINDS: [Race; 18] = [
    Race::ReadVsCloneDrop,
    Race::AsyncReadVsCloneDrop,
    Race::TimedReadVsCloneDrop,
    Race::AsyncTimeoutVsCloneDrop,
    Race::ReadHalfVsWriteHalfDrop,
    Race::ReadVsShutdown,
    Race::WriteVsCloneDrop,
    Race::ReadVsPeerDrop,
    Race::TimedReadVsData,
    Race::AsyncTimeoutVsData,
    Race::WriteVsShutdownWrite,
    Race::WriteHalfVsReadHalfDrop,
    Race::TwoReadersVsCloneDrop,
    Race::AbortedReaderVsData,
    Race::TimedReaderBesideReaderVsData,
    Race::ThreadReadVsCloneDrop,
    Race::TwoWritersVsDrain,
    Race::ReadVsIntoStdOfClone,
];

/// The bytes the peer sends in the `...VsData` races, one write each.
const DATA: &[u8] = b"corio";

/// The waiting side of a race: a random pause, then a read of up to 16 bytes.
fn read_after_pause(rng: &mut Rng, mut s: impl Read) -> std::io::Result<usize> {
    pause(rng);
    let mut buf = [0u8; 16];
    s.read(&mut buf)
}

/// The other side of a race: a coroutine that drops `what` after a random pause.
fn drop_after_pause<T: Send + 'static>(mut rng: Rng, what: T) -> corio::JoinHandle<()> {
    corio::go(move || {
        pause(&mut rng);
        drop(what);
    })
}

/// Writes to a peer that never reads until a write fails: the bytes sent and the error's
/// kind, or `ErrorKind::Other` if 256 MiB went through (nothing stopped the writer).
fn write_until_error(mut s: impl Write) -> (usize, ErrorKind) {
    let chunk = vec![7u8; 256 << 10];
    let mut sent = 0usize;
    loop {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(e) => return (sent, e.kind()),
        }
        if sent > 256 << 20 {
            return (sent, ErrorKind::Other);
        }
    }
}

/// One race; `Err` describes a waiter that woke wrongly (a hang is the watchdog's to catch).
fn race(kind: Race, rng: &mut Rng) -> Result<(), String> {
    // A connected TCP pair (the Unix races are in `races`).
    let (mut a, mut peer) = support::tcp_pair();
    // Either end: the accepted one has not waited yet, so its first wait registers it with
    // the netpoller, racing the other coroutine's close.
    if rng.chance(50) {
        std::mem::swap(&mut a, &mut peer);
    }
    let (mut r1, mut r2) = (rng.clone(), rng.clone());
    r2.next_u64();
    rng.next_u64();
    rng.next_u64();
    match kind {
        Race::ReadVsCloneDrop | Race::TimedReadVsCloneDrop => {
            if let Race::TimedReadVsCloneDrop = kind {
                a.set_read_timeout(Some(Duration::from_micros(1 + r1.below(3000))))
                    .unwrap();
            }
            let b = a.try_clone().unwrap();
            let reader = corio::go(move || read_after_pause(&mut r1, &a));
            let dropper = drop_after_pause(r2, b);
            joined(dropper.join());
            let r = joined(reader.join());
            if !nothing_read(&r) {
                return Err(format!("the reader got {r:?}"));
            }
        }
        Race::AsyncReadVsCloneDrop | Race::AsyncTimeoutVsCloneDrop => {
            let b = a.try_clone().unwrap();
            let timed = matches!(kind, Race::AsyncTimeoutVsCloneDrop);
            let limit = Duration::from_micros(1 + r1.below(3000));
            let reader = corio::spawn(async move {
                for _ in 0..r1.below(4) {
                    corio::yield_now_async().await;
                }
                let mut buf = [0u8; 16];
                if timed {
                    corio::time::timeout_async(limit, a.read_async(&mut buf))
                        .await
                        .unwrap_or(Ok(0))
                } else {
                    a.read_async(&mut buf).await
                }
            });
            let dropper = drop_after_pause(r2, b);
            joined(dropper.join());
            let r = joined(reader.join());
            if !nothing_read(&r) {
                return Err(format!("the reader got {r:?}"));
            }
        }
        Race::ReadHalfVsWriteHalfDrop => {
            let (read, write) = a.into_split();
            // The peer closes once it reads EOF, which the write half's drop sends.
            let closer = corio::go(move || {
                let mut buf = [0u8; 16];
                let r = (&peer).read(&mut buf);
                drop(peer);
                r
            });
            let reader = corio::go(move || read_after_pause(&mut r1, &*read));
            let dropper = drop_after_pause(r2, write);
            joined(dropper.join());
            match joined(closer.join()) {
                Ok(0) => {}
                other => return Err(format!("the peer got {other:?}, not EOF")),
            }
            match joined(reader.join()) {
                Ok(0) => {}
                other => return Err(format!("the reader got {other:?}, not EOF")),
            }
            return Ok(());
        }
        Race::ReadVsShutdown => {
            let a = Arc::new(a);
            let b = a.clone();
            let how = if r2.chance(50) {
                Shutdown::Read
            } else {
                Shutdown::Both
            };
            let reader = corio::go(move || read_after_pause(&mut r1, &*a));
            let shutter = corio::go(move || {
                pause(&mut r2);
                b.shutdown(how)
            });
            joined(shutter.join()).map_err(|e| format!("shutdown({how:?}): {e}"))?;
            let r = joined(reader.join());
            if !nothing_read(&r) {
                return Err(format!("the reader got {r:?} after shutdown({how:?})"));
            }
        }
        Race::WriteVsCloneDrop => {
            let b = a.try_clone().unwrap();
            let writer = corio::go(move || {
                pause(&mut r1);
                // The peer never reads: the send buffer fills and the writer waits, until the
                // other handle's drop wakes it with an error.
                write_until_error(&a)
            });
            let dropper = corio::go(move || {
                pause(&mut r2);
                // Sometimes let the writer fill the buffer and wait first.
                if r2.chance(50) {
                    corio::sleep(Duration::from_millis(2));
                }
                drop(b);
            });
            joined(dropper.join());
            let (sent, kind) = joined(writer.join());
            if kind == ErrorKind::Other {
                return Err(format!(
                    "the writer sent {sent} bytes to a peer that never reads"
                ));
            }
            drop(peer);
            return Ok(());
        }
        Race::ReadVsPeerDrop => {
            let reader = corio::go(move || read_after_pause(&mut r1, &a));
            let dropper = drop_after_pause(r2, peer);
            joined(dropper.join());
            let r = joined(reader.join());
            if !nothing_read(&r) {
                return Err(format!("the reader got {r:?}"));
            }
            return Ok(());
        }
        Race::WriteVsShutdownWrite => {
            let a = Arc::new(a);
            let b = a.clone();
            let writer = corio::go(move || {
                pause(&mut r1);
                write_until_error(&*a)
            });
            let shutter = corio::go(move || {
                pause(&mut r2);
                if r2.chance(50) {
                    corio::sleep(Duration::from_millis(2));
                }
                b.shutdown(Shutdown::Write)
            });
            joined(shutter.join()).map_err(|e| format!("shutdown(Write): {e}"))?;
            let (sent, kind) = joined(writer.join());
            if kind == ErrorKind::Other {
                return Err(format!(
                    "the writer sent {sent} bytes past a shutdown(Write)"
                ));
            }
            drop(peer);
            return Ok(());
        }
        Race::WriteHalfVsReadHalfDrop => {
            let (read, write) = a.into_split();
            let n = 1 + r1.below(512 << 10) as usize;
            let writer = corio::go(move || {
                pause(&mut r1);
                (&*write).write_all(&content(0, 0, n))?;
                Ok::<_, std::io::Error>(write)
            });
            let dropper = drop_after_pause(r2, read);
            let reader = corio::go(move || read_checked(&peer, 0, 0, n, 64 << 10, "the peer"));
            joined(dropper.join());
            joined(reader.join())?;
            joined(writer.join()).map_err(|e| format!("the writer: {e}"))?;
            return Ok(());
        }
        Race::TwoReadersVsCloneDrop => {
            let a = Arc::new(a);
            let b = a.try_clone().unwrap();
            let readers: Vec<_> = (0..2)
                .map(|_| {
                    let a = a.clone();
                    let mut r = Rng::new(r1.next_u64());
                    corio::go(move || read_after_pause(&mut r, &*a))
                })
                .collect();
            let dropper = drop_after_pause(r2, b);
            joined(dropper.join());
            for reader in readers {
                let r = joined(reader.join());
                if !nothing_read(&r) {
                    return Err(format!("a reader got {r:?}"));
                }
            }
        }
        Race::AbortedReaderVsData | Race::TimedReaderBesideReaderVsData => {
            let a = Arc::new(a);
            let a2 = a.clone();
            let second = corio::go(move || {
                let mut buf = [0u8; 1];
                (&*a2).read(&mut buf)
            });
            let sender = corio::go(move || {
                pause(&mut r2);
                (&peer).write_all(b"x").map(|()| peer)
            });
            // The first reader's result: `Some(read)` if it finished its read, `None` if it
            // was aborted or timed out first.
            let first = if let Race::AbortedReaderVsData = kind {
                let a1 = a.clone();
                let task = corio::spawn(async move {
                    let mut buf = [0u8; 1];
                    a1.read_async(&mut buf).await
                });
                pause(&mut r1);
                task.abort();
                task.join().ok()
            } else {
                let a1 = a.clone();
                let limit = Duration::from_micros(1 + r1.below(3000));
                let reader = corio::go(move || {
                    let mut buf = [0u8; 1];
                    corio::time::timeout(limit, a1.read_async(&mut buf)).ok()
                });
                joined(reader.join())
            };
            let peer = joined(sender.join()).map_err(|e| format!("the sender: {e}"))?;
            match first {
                // The first took the byte: one more for the second.
                Some(Ok(1)) => (&peer)
                    .write_all(b"y")
                    .map_err(|e| format!("the sender: {e}"))?,
                None => {}
                Some(other) => return Err(format!("the first reader got {other:?}")),
            }
            match joined(second.join()) {
                Ok(1) => {}
                other => {
                    return Err(format!(
                        "the second reader got {other:?} (first: {first:?})"
                    ));
                }
            }
            drop(peer);
            return Ok(());
        }
        Race::ThreadReadVsCloneDrop => {
            let b = a.try_clone().unwrap();
            let reader = std::thread::spawn(move || {
                let mut buf = [0u8; 16];
                (&a).read(&mut buf)
            });
            pause(&mut r2);
            drop(b);
            let since = Instant::now();
            while !reader.is_finished() {
                if since.elapsed() > EVENTUALLY {
                    return Err("the thread's read never woke".into());
                }
                corio::sleep(Duration::from_millis(1));
            }
            let r = reader.join().unwrap();
            if !nothing_read(&r) {
                return Err(format!("the thread's read got {r:?}"));
            }
        }
        Race::TwoWritersVsDrain => {
            let a = Arc::new(a);
            let n = (256 << 10) + r1.below(1 << 20) as usize;
            let writers: Vec<_> = (0..2u8)
                .map(|w| {
                    let a = a.clone();
                    let mut r = Rng::new(r1.next_u64());
                    corio::go(move || {
                        pause(&mut r);
                        (&*a).write_all(&vec![w; n])
                    })
                })
                .collect();
            let drainer = corio::go(move || {
                pause(&mut r2);
                let mut buf = vec![0u8; 64 << 10];
                let mut got = 0;
                while got < 2 * n {
                    match (&peer).read(&mut buf) {
                        Ok(0) => return Err(format!("EOF after {got} bytes")),
                        Ok(k) => got += k,
                        Err(e) => return Err(format!("after {got} bytes: {e}")),
                    }
                }
                Ok(peer)
            });
            for w in writers {
                joined(w.join()).map_err(|e| format!("a writer: {e}"))?;
            }
            let peer = joined(drainer.join())?;
            drop(peer);
            return Ok(());
        }
        Race::ReadVsIntoStdOfClone => {
            let b = a.try_clone().unwrap();
            let reader = corio::go(move || read_after_pause(&mut r1, &a).map(|n| (n, a)));
            pause(&mut r2);
            if r2.chance(50) {
                match b.into_std() {
                    Err(e) if e.kind() == ErrorKind::ResourceBusy => {}
                    other => return Err(format!("into_std of a clone: {other:?}")),
                }
            } else {
                // A duplicate of the descriptor, closed here: the reader's socket stays open.
                drop(std::os::fd::OwnedFd::from(b));
            }
            (&peer)
                .write_all(b"z")
                .map_err(|e| format!("the peer: {e}"))?;
            let a = match joined(reader.join()) {
                Ok((1, a)) => a,
                other => return Err(format!("the reader got {:?}", other.map(|(n, _)| n))),
            };
            // The last handle hands the socket back, working.
            let mut std_a = a
                .into_std()
                .map_err(|e| format!("into_std of the last: {e}"))?;
            std_a
                .write_all(b"!")
                .map_err(|e| format!("the std socket: {e}"))?;
            let mut buf = [0u8; 1];
            (&peer)
                .read_exact(&mut buf)
                .map_err(|e| format!("the peer: {e}"))?;
            drop(peer);
            return Ok(());
        }
        Race::TimedReadVsData | Race::AsyncTimeoutVsData => {
            let limit = Duration::from_micros(1 + r1.below(2000));
            let sender = corio::go(move || {
                for &b in DATA {
                    pause(&mut r2);
                    (&peer).write_all(&[b])?;
                }
                Ok::<_, std::io::Error>(peer)
            });
            let got = if let Race::TimedReadVsData = kind {
                a.set_read_timeout(Some(limit)).unwrap();
                let reader = corio::go(move || {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 16];
                    while got.len() < DATA.len() {
                        match (&a).read(&mut buf) {
                            Ok(0) => return Err("EOF".to_string()),
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                            Err(e) if e.kind() == ErrorKind::TimedOut => {}
                            Err(e) => return Err(e.to_string()),
                        }
                    }
                    Ok(got)
                });
                joined(reader.join())
            } else {
                let reader = corio::spawn(async move {
                    let mut got = Vec::new();
                    let mut buf = [0u8; 16];
                    while got.len() < DATA.len() {
                        match corio::time::timeout_async(limit, a.read_async(&mut buf)).await {
                            Ok(Ok(0)) => return Err("EOF".to_string()),
                            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
                            Ok(Err(e)) => return Err(e.to_string()),
                            Err(_) => {}
                        }
                    }
                    Ok(got)
                });
                joined(reader.join())
            };
            let peer = joined(sender.join()).map_err(|e| format!("the sender: {e}"))?;
            match got {
                Ok(got) if got == DATA => {}
                other => return Err(format!("the reader got {other:?}, expected {DATA:?}")),
            }
            drop(peer);
            return Ok(());
        }
    }
    drop(peer);
    Ok(())
}

/// `RACES` random races on a runtime of `workers` workers, plus the same on Unix pairs for a
/// read racing a clone's drop.
fn races(workers: usize, seed: u64) {
    let rt = support::rt(workers);
    rt.run(move || {
        let mut rng = Rng::new(seed ^ 0x7ace);
        for i in 0..RACES {
            let kind = RACE_KINDS[rng.below(RACE_KINDS.len() as u64) as usize];
            if let Err(e) = race(kind, &mut rng) {
                panic!("seed {seed}, {workers} workers, race {i} ({kind:?}): {e}");
            }
        }
        // A Unix pair: the same race, on the other stream type.
        for i in 0..RACES / 4 {
            let (a, peer) = UnixStream::pair().unwrap();
            let b = a.try_clone().unwrap();
            let (mut r1, r2) = (Rng::new(seed ^ i), Rng::new(seed ^ i ^ 1));
            let reader = corio::go(move || read_after_pause(&mut r1, &a));
            let dropper = drop_after_pause(r2, b);
            joined(dropper.join());
            let r = joined(reader.join());
            assert!(
                nothing_read(&r),
                "seed {seed}, {workers} workers, unix race {i}: the reader got {r:?}"
            );
            drop(peer);
        }
    });
    drop(rt);
}

rt_common! {
    #[test]
    #[cfg_attr(miri, ignore)]
    fn a_soak_of_mixed_connections_checks_every_byte_and_every_end() {
        hunt(&SERIAL, "net_stress soak", WORKERS, |seed| {
            no_fd_leak("soak", seed, || soak(WORKERS, seed, None));
        });
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn dropping_the_runtime_mid_soak_closes_every_socket() {
        hunt(&SERIAL, "net_stress cut soak", WORKERS, |seed| {
            cut_rounds("cut soak", seed, Rng::new(seed), 60, |seed, cut| {
                soak(WORKERS, seed, Some(cut))
            });
        });
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn drops_and_shutdowns_racing_waits_always_wake_the_waiter() {
        hunt(&SERIAL, "net_stress races", WORKERS, |seed| {
            no_fd_leak("races", seed, || races(WORKERS, seed));
        });
    }
}
