//! Helpers shared by the runtime's integration tests (`rt_*.rs`): runtimes of each scheduler
//! flavour, a watchdog so that a hang is a failure rather than a stuck CI job, drop counters, a
//! one-shot gate future, panic-message helpers, temporary directories and a small
//! deterministic PRNG; `stress` holds what the randomised networking hunts share.
//!
//! Each test binary uses a different subset of these.
#![allow(dead_code)]

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use corio::Runtime;

pub mod stress;

/// Instantiates the test items once per scheduler flavour, in modules `one_worker` and
/// `two_workers`; inside, `rt()` builds a runtime of that flavour and `WORKERS` is its size.
/// (Declare the helpers with `#[macro_use] mod support;`.)
#[allow(unused_macros)] // not every test binary has tests for both flavours
macro_rules! rt_common {
    ($($item:item)*) => {
        /// The 1:N scheduler: one worker thread runs every coroutine.
        mod one_worker {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            const WORKERS: usize = 1;
            #[allow(dead_code)]
            fn rt() -> corio::Runtime {
                support::rt(WORKERS)
            }
            $($item)*
        }
        /// The M:N scheduler with two workers (the CI machine has two cores).
        mod two_workers {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            const WORKERS: usize = 2;
            #[allow(dead_code)]
            fn rt() -> corio::Runtime {
                support::rt(WORKERS)
            }
            $($item)*
        }
    };
}

/// The scheduler flavours every common test body runs on: the 1:N scheduler (one worker) and
/// the M:N scheduler (two workers, the size of the CI machine).
pub const FLAVOURS: [usize; 2] = [1, 2];

/// A runtime with `workers` workers and hog reports off (a loaded CI machine can make any
/// task look like a hog; the reports would only be noise).
pub fn rt(workers: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .hog_report(false)
        .build()
        .expect("cannot build a runtime")
}

/// The process's open descriptors (the names in `/proc/self/fd`), sorted: compared before and
/// after a runtime's life to find the ones it left open.
pub fn open_fds() -> Vec<String> {
    let mut fds: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    fds.sort();
    fds
}

/// A generous limit for "finishes eventually" on a loaded 2-core machine.
pub const EVENTUALLY: Duration = Duration::from_secs(30);

/// Runs `f` on a fresh thread and returns its result, failing the test if it has not finished
/// within `limit` (a hang is reported instead of stalling the whole test run). A panic in `f`
/// is resumed here.
///
/// Generic only in this shim: the thread and the channel are [`within_dyn`]'s, compiled once.
/// (Generic, they were ~830 lines of LLVM IR per call site — 11 % of a suite's release build.)
#[track_caller]
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let out = within_dyn(
        limit,
        Box::new(move || Box::new(f()) as Box<dyn Any + Send>),
    );
    *out.downcast::<T>()
        .expect("`within_dyn` returns what `f` returned")
}

/// [`within`] for a boxed closure.
#[track_caller]
fn within_dyn(
    limit: Duration,
    f: Box<dyn FnOnce() -> Box<dyn Any + Send> + Send>,
) -> Box<dyn Any + Send> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("within".into())
        .spawn(move || {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
        })
        .expect("cannot start the watchdog's thread");
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => v,
        Ok(Err(payload)) => std::panic::resume_unwind(payload),
        Err(_) => panic!("did not finish within {limit:?}: the runtime hangs"),
    }
}

/// Polls `cond` (sleeping 1 ms between tries, on a plain thread) until it holds; fails after
/// [`EVENTUALLY`].
#[track_caller]
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < EVENTUALLY,
            "timed out waiting until {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Counts drops of the [`DropToken`]s it hands out, and how many it handed out.
#[derive(Clone, Default)]
pub struct Drops {
    made: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
}

impl Drops {
    pub fn new() -> Drops {
        Drops::default()
    }

    /// A value whose drop is counted.
    pub fn token(&self) -> DropToken {
        self.made.fetch_add(1, SeqCst);
        DropToken(self.dropped.clone())
    }

    /// Tokens dropped so far.
    pub fn dropped(&self) -> usize {
        self.dropped.load(SeqCst)
    }

    /// Tokens made so far.
    pub fn made(&self) -> usize {
        self.made.load(SeqCst)
    }
}

/// Counts one drop in its [`Drops`].
pub struct DropToken(Arc<AtomicUsize>);

impl Drop for DropToken {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A one-shot flag that futures can wait for: closed until [`Gate::open`], then open for
/// good. A gate that is never opened is a future that never completes.
#[derive(Clone, Default)]
pub struct Gate(Arc<GateInner>);

#[derive(Default)]
struct GateInner {
    open: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Opens the gate and wakes every waiter.
    pub fn open(&self) {
        self.0.open.store(true, SeqCst);
        let wakers = std::mem::take(&mut *self.0.wakers.lock().unwrap());
        for w in wakers {
            w.wake();
        }
    }

    pub fn is_open(&self) -> bool {
        self.0.open.load(SeqCst)
    }

    /// A future that completes when the gate is open.
    pub fn wait(&self) -> GateWait {
        GateWait(self.0.clone())
    }
}

/// The future of [`Gate::wait`].
pub struct GateWait(Arc<GateInner>);

impl Future for GateWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.open.load(SeqCst) {
            return Poll::Ready(());
        }
        let mut wakers = self.0.wakers.lock().unwrap();
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        drop(wakers);
        if self.0.open.load(SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// A future wrapper that counts its polls.
pub struct CountPolls<F> {
    pub polls: Arc<AtomicUsize>,
    pub inner: Pin<Box<F>>,
}

impl<F: Future> CountPolls<F> {
    pub fn new(polls: Arc<AtomicUsize>, inner: F) -> CountPolls<F> {
        CountPolls {
            polls,
            inner: Box::pin(inner),
        }
    }
}

impl<F: Future> Future for CountPolls<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.fetch_add(1, SeqCst);
        self.inner.as_mut().poll(cx)
    }
}

/// The text of a panic payload (`&str` or `String`), or a placeholder.
pub fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::from("<non-string payload>")
    }
}

/// Runs `f`, expects it to panic, and returns the panic message.
#[track_caller]
pub fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    payload_text(&*payload)
}

/// Put in the message of panics a test causes on purpose; [`quiet_expected_panics`] keeps
/// them off stderr.
pub const EXPECTED: &str = "[expected panic]";

/// Installs (once per process) a panic hook that stays silent for panics whose message
/// contains [`EXPECTED`] and defers to the previous hook for every other panic.
pub fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if payload_text(info.payload()).contains(EXPECTED) {
                return;
            }
            previous(info);
        }));
    });
}

/// xorshift64*: a small deterministic PRNG, so that a failing stress run can be repeated.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Like [`wait_until`] with its own limit; false if `cond` never held.
pub fn holds_within(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !cond() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// One thread of this process, from `/proc/self/task`.
#[derive(Clone, Debug)]
pub struct ThreadInfo {
    pub tid: u32,
    /// The thread's name as the kernel keeps it (at most 15 bytes).
    pub comm: String,
    /// Voluntary plus involuntary context switches so far.
    pub switches: u64,
    /// Of those, the involuntary ones: the thread lost its CPU while it could still run.
    pub involuntary: u64,
    /// The scheduler state (`State:` in `status`): `S` asleep, `R` running or waiting for a
    /// CPU, `D` in an uninterruptible wait, ... (`?` if the line was missing).
    pub state: char,
}

/// Every thread of this process (Linux only).
pub fn threads() -> Vec<ThreadInfo> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(tid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let path = entry.path();
        // A thread may exit between the listing and the reads: skip it then.
        let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(path.join("status")) else {
            continue;
        };
        let count = |key: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or(0)
        };
        let involuntary = count("nonvoluntary_ctxt_switches:");
        let state = status
            .lines()
            .find_map(|l| l.strip_prefix("State:")?.trim().chars().next())
            .unwrap_or('?');
        out.push(ThreadInfo {
            tid,
            comm: comm.trim_end().to_string(),
            switches: count("voluntary_ctxt_switches:") + involuntary,
            involuntary,
            state,
        });
    }
    out
}

/// The calling thread's kernel id.
pub fn current_tid() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// The threads of a runtime whose `thread_name` is `prefix` (named `prefix-N`,
/// `prefix-sysmon`, `prefix-blocking`), never the calling thread.
pub fn threads_named(prefix: &str) -> Vec<ThreadInfo> {
    let me = current_tid();
    let prefix = format!("{prefix}-");
    threads()
        .into_iter()
        .filter(|t| t.comm.starts_with(&prefix) && Some(t.tid) != me)
        .collect()
}

/// A connected `corio::net` TCP pair on 127.0.0.1, made in a coroutine of the current runtime:
/// (client, server side).
pub fn tcp_pair() -> (corio::net::TcpStream, corio::net::TcpStream) {
    let listener = corio::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let client = corio::go(move || corio::net::TcpStream::connect(addr).unwrap());
    let (server, _) = listener.accept().unwrap();
    (client.join().unwrap(), server)
}

/// A fresh directory under the system's temporary directory, named for this process and
/// `name` (unique within a test binary), removed with all it holds when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("corio-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> PathBuf {
        self.0.clone()
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Small `futures_io` helpers (the crate has no `futures` dependency): `read`, `write_all`
/// and `close` over the `AsyncRead`/`AsyncWrite` polls.
pub mod futures_io_compat {
    use std::future::poll_fn;
    use std::pin::Pin;

    pub async fn read<R: futures_io::AsyncRead + Unpin>(
        r: &mut R,
        buf: &mut [u8],
    ) -> std::io::Result<usize> {
        poll_fn(|cx| Pin::new(&mut *r).poll_read(cx, buf)).await
    }

    pub async fn write_all<W: futures_io::AsyncWrite + Unpin>(
        w: &mut W,
        mut buf: &[u8],
    ) -> std::io::Result<()> {
        while !buf.is_empty() {
            let n = poll_fn(|cx| Pin::new(&mut *w).poll_write(cx, buf)).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            buf = &buf[n..];
        }
        Ok(())
    }

    pub async fn close<W: futures_io::AsyncWrite + Unpin>(w: &mut W) -> std::io::Result<()> {
        poll_fn(|cx| Pin::new(&mut *w).poll_close(cx)).await
    }
}

/// Runs a future to completion on this thread with a waker that unparks it: an executor that
/// knows nothing of corio (tokio's tests use `futures::executor::block_on`).
pub fn foreign_block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// A baton made of a `std` mutex and a waker, so that nothing but the scheduler's own wake
/// path is involved: `pass` sets it and wakes the waiter (from any thread); `take` waits until
/// it is set, and clears it.
#[derive(Default)]
pub struct Baton(Mutex<(bool, Option<Waker>)>);

impl Baton {
    pub fn pass(&self) {
        let waker = {
            let mut slot = self.0.lock().unwrap();
            slot.0 = true;
            slot.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    pub fn take(&self) -> BatonTake<'_> {
        BatonTake(self)
    }
}

/// [`Baton::take`]'s future.
pub struct BatonTake<'a>(&'a Baton);

impl Future for BatonTake<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut slot = self.0.0.lock().unwrap();
        if std::mem::take(&mut slot.0) {
            Poll::Ready(())
        } else {
            slot.1 = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}
