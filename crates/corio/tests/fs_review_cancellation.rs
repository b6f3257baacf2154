//! Review 3 (2026-12-07): the ecosystem IO traits on `corio::fs::File` (and its
//! blocking-style and `_async` calls, which share its job protocol).
//!
//! - `a_coroutine_cancelled_inside_the_seek_back_of_a_dropped_read_leaves_the_cursor_right`
//!   and `a_coroutine_cancelled_inside_a_poll_reads_give_back_leaves_the_cursor_right` failed
//!   on the code they were written against (`724f6da`; fixed since, docs/soundness.md, "The
//!   reviews of 2026-12-07, night"): `State::give_back` (`fs.rs`) keeps a read's unseen
//!   bytes as `unread` and only then calls `spawn_blocking` for the seek back over them;
//!   `spawn_blocking` starts with a preemption point, where a coroutine whose budget is spent
//!   yields and a pending cancellation (an abort, a runtime shutdown) unwinds it. Unwound
//!   there, the `File` keeps the unread bytes with no seek back in flight: the cursor stays
//!   after bytes no caller saw, the next write lands there, and the read after it returns the
//!   stale bytes from before the write.
//! - The `random_scripts_*` tests pass: they run seeded scripts of every face (futures and,
//!   with `tokio-io`, tokio traits; `_async` calls; blocking-style `Read`/`Write`/`Seek`; calls
//!   and polls left pending and abandoned; polls taken again with a smaller buffer) against a
//!   model of the file (regular file: bytes and cursor; pipe: no byte lost or reordered).
//! - `tokio_read_buf::*` (feature `tokio-io`) passes: `ReadBuf` accounting through the tokio
//!   `AsyncRead` of sockets, halves and `File` on uninitialised storage.

#[macro_use]
mod support;

use std::future::{Future, poll_fn};
use std::io::SeekFrom;
use std::pin::{Pin, pin};
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};

use corio::fs::File;
use futures::io::{AsyncRead, AsyncReadExt, AsyncSeek, AsyncSeekExt, AsyncWriteExt};
use support::{EVENTUALLY, Rng, TempDir, within};

fn rt_one_pool_thread() -> corio::Runtime {
    corio::Runtime::builder()
        .workers(1)
        .max_blocking_threads(1)
        .hog_report(false)
        .build()
        .unwrap()
}

fn hold_the_pool() -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    drop(corio::spawn_blocking(move || {
        let _ = rx.recv();
    }));
    tx
}

fn noop_cx() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

struct Model {
    data: Vec<u8>,
    pos: u64,
}

impl Model {
    fn write(&mut self, bytes: &[u8]) {
        let p = self.pos as usize;
        if self.data.len() < p + bytes.len() {
            self.data.resize(p + bytes.len(), 0);
        }
        self.data[p..p + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len() as u64;
    }
    fn read(&mut self, k: usize) -> Vec<u8> {
        let p = (self.pos as usize).min(self.data.len());
        let n = k.min(self.data.len() - p);
        self.pos += n as u64;
        self.data[p..p + n].to_vec()
    }
    /// A read of `k` that returned `got`: a correct partial read of the model.
    fn check_read(&mut self, k: usize, got: &[u8], log: &[String]) {
        let rem = self.data.len().saturating_sub(self.pos as usize);
        assert!(got.len() <= k, "{:#?}", tail(log));
        assert_eq!(got.is_empty(), rem == 0, "{:#?}", tail(log));
        let want = self.read(got.len());
        assert_eq!(got, &want[..], "{:#?}", tail(log));
    }
    fn seek(&mut self, pos: SeekFrom) -> u64 {
        self.pos = match pos {
            SeekFrom::Start(n) => n,
            SeekFrom::Current(d) => (self.pos as i64 + d) as u64,
            SeekFrom::End(d) => (self.data.len() as i64 + d) as u64,
        };
        self.pos
    }
}

fn fresh(counter: &mut u8, k: usize) -> Vec<u8> {
    (0..k)
        .map(|_| {
            *counter = counter.wrapping_add(1);
            b'0' + *counter % 64
        })
        .collect()
}

fn tail(log: &[String]) -> &[String] {
    &log[log.len().saturating_sub(12)..]
}

fn pick_seek(rng: &mut Rng, m: &Model) -> SeekFrom {
    let len = m.data.len() as i64;
    match rng.below(3) {
        0 => SeekFrom::Start(rng.below(len as u64 + 8)),
        1 => {
            let lo = -(m.pos as i64);
            SeekFrom::Current(lo + rng.below((len + 8 - lo).max(1) as u64) as i64)
        }
        _ => SeekFrom::End(-(rng.below(len as u64 + 1) as i64) + rng.below(4) as i64),
    }
}

async fn one_script(
    f: &mut File,
    rng: &mut Rng,
    m: &mut Model,
    steps: usize,
    log: &mut Vec<String>,
    gated: bool,
) {
    let hold_the_pool = || gated.then(hold_the_pool);
    let mut counter = 0u8;
    for step in 0..steps {
        let op = rng.below(22);
        log.push(format!(
            "{step}: op {op} pos {} len {}",
            m.pos,
            m.data.len()
        ));
        match op {
            0 => {
                let k = 1 + rng.below(9) as usize;
                let bytes: Vec<u8> = (0..k)
                    .map(|_| {
                        counter = counter.wrapping_add(1);
                        b'A' + counter % 26
                    })
                    .collect();
                f.write_all(&bytes).await.unwrap();
                m.write(&bytes);
            }
            1 => {
                let k = 1 + rng.below(9) as usize;
                let mut buf = vec![0u8; k];
                let n = f.read(&mut buf).await.unwrap();
                m.check_read(k, &buf[..n], log);
            }
            2 => {
                let pos = pick_seek(rng, m);
                let got = f.seek(pos).await.unwrap();
                assert_eq!(got, m.seek(pos), "{pos:?} {:#?}", tail(log));
            }
            3 => {
                let pos = pick_seek(rng, m);
                let got = f.seek_async(pos).await.unwrap();
                assert_eq!(got, m.seek(pos), "{pos:?} {:#?}", tail(log));
            }
            4 => {
                let k = 1 + rng.below(9) as usize;
                let mut buf = vec![0u8; k];
                let n = f.read_async(&mut buf).await.unwrap();
                m.check_read(k, &buf[..n], log);
            }
            5 => {
                let k = 1 + rng.below(9) as usize;
                let bytes: Vec<u8> = (0..k)
                    .map(|_| {
                        counter = counter.wrapping_add(1);
                        b'a' + counter % 26
                    })
                    .collect();
                f.write_all_async(&bytes).await.unwrap();
                m.write(&bytes);
            }
            6 => {
                // A poll_read left pending: as if not made.
                let gate = hold_the_pool();
                let mut buf = vec![0u8; 1 + rng.below(9) as usize];
                let k = buf.len();
                match Pin::new(&mut *f).poll_read(&mut noop_cx(), &mut buf) {
                    // It took the job an abandoned poll_read left: a re-poll.
                    Poll::Ready(r) => m.check_read(k, &buf[..r.unwrap()], log),
                    Poll::Pending => log.push("  abandoned poll_read".into()),
                }
                drop(gate);
            }
            7 => {
                let gate = hold_the_pool();
                let mut buf = vec![0u8; 1 + rng.below(9) as usize];
                let k = buf.len();
                let ready = {
                    let mut fut = pin!(f.read_async(&mut buf));
                    match fut.as_mut().poll(&mut noop_cx()) {
                        Poll::Ready(r) => Some(r.unwrap()),
                        Poll::Pending => None,
                    }
                };
                assert!(!gated || ready.is_none());
                if let Some(n) = ready {
                    m.check_read(k, &buf[..n], log);
                }
                drop(gate);
                log.push("  abandoned read_async".into());
            }
            8 => {
                // A poll_read polled again with a smaller buffer.
                let gate = hold_the_pool();
                let k1 = 2 + rng.below(8) as usize;
                let mut buf = vec![0u8; k1];
                if let Poll::Ready(r) = Pin::new(&mut *f).poll_read(&mut noop_cx(), &mut buf) {
                    m.check_read(k1, &buf[..r.unwrap()], log);
                }
                drop(gate);
                let k2 = 1 + rng.below(k1 as u64 - 1) as usize;
                let mut small = vec![0u8; k2];
                let n = poll_fn(|cx| Pin::new(&mut *f).poll_read(cx, &mut small))
                    .await
                    .unwrap();
                m.check_read(k2, &small[..n], log);
            }
            9 => {
                let n = rng.below(m.data.len() as u64 + 6);
                f.set_len_async(n).await.unwrap();
                m.data.resize(n as usize, 0);
            }
            10 => {
                f.flush().await.unwrap();
            }
            11 => {
                let len = f.metadata_async().await.unwrap().len();
                assert_eq!(len, m.data.len() as u64, "{:#?}", tail(log));
            }
            12 => {
                // A seek left pending; it happens (its job started: nothing was in flight).
                f.flush().await.unwrap();
                let gate = hold_the_pool();
                let pos = pick_seek(rng, m);
                let r = Pin::new(&mut *f).poll_seek(&mut noop_cx(), pos);
                assert!(!gated || r.is_pending());
                drop(gate);
                let want = m.seek(pos);
                if let Poll::Ready(r) = r {
                    assert_eq!(r.unwrap(), want);
                }
                log.push(format!("  abandoned seek {pos:?}"));
                // The next op must not be a poll_seek to the same position: write something.
                let bytes = [b'#'];
                f.write_all(&bytes).await.unwrap();
                m.write(&bytes);
            }
            14 => {
                let k = 1 + rng.below(40) as usize;
                let mut buf = vec![0u8; k];
                let n = std::io::Read::read(f, &mut buf).unwrap();
                m.check_read(k, &buf[..n], log);
            }
            15 => {
                let bytes = fresh(&mut counter, 1 + rng.below(9) as usize);
                std::io::Write::write_all(f, &bytes).unwrap();
                m.write(&bytes);
            }
            16 => {
                let pos = pick_seek(rng, m);
                let got = std::io::Seek::seek(f, pos).unwrap();
                assert_eq!(got, m.seek(pos), "{pos:?} {:#?}", tail(log));
            }
            17 => std::io::Write::flush(f).unwrap(),
            18 => {
                let a = fresh(&mut counter, 1 + rng.below(5) as usize);
                let b = fresh(&mut counter, rng.below(5) as usize);
                let n = f
                    .write_vectored(&[std::io::IoSlice::new(&a), std::io::IoSlice::new(&b)])
                    .await
                    .unwrap();
                let all = [a, b].concat();
                assert!(n >= 1 && n <= all.len());
                m.write(&all[..n]);
            }
            19 => {
                let k = 1 + rng.below(40) as usize;
                let mut buf = vec![0u8; k];
                let n = f.read(&mut buf).await.unwrap();
                m.check_read(k, &buf[..n], log);
            }
            #[cfg(feature = "tokio-io")]
            20 => {
                let k = 1 + rng.below(20) as usize;
                let mut buf = Vec::with_capacity(k);
                let n = tokio::io::AsyncReadExt::read_buf(f, &mut buf)
                    .await
                    .unwrap();
                assert_eq!(n, buf.len());
                m.check_read(k.max(buf.capacity()), &buf, log);
            }
            #[cfg(feature = "tokio-io")]
            21 => {
                let pos = pick_seek(rng, m);
                let got = tokio::io::AsyncSeekExt::seek(f, pos).await.unwrap();
                assert_eq!(got, m.seek(pos), "{pos:?} {:#?}", tail(log));
                let bytes = fresh(&mut counter, 1 + rng.below(5) as usize);
                tokio::io::AsyncWriteExt::write_all(f, &bytes)
                    .await
                    .unwrap();
                m.write(&bytes);
            }
            #[cfg(not(feature = "tokio-io"))]
            20 | 21 => {}
            _ => {
                // A write_async left pending: it happens (small, so whole; its job started:
                // nothing was in flight).
                f.flush().await.unwrap();
                let gate = hold_the_pool();
                let bytes = [b'%', b'%'];
                let ready = {
                    let mut fut = pin!(f.write_async(&bytes));
                    match fut.as_mut().poll(&mut noop_cx()) {
                        Poll::Ready(r) => Some(r.unwrap()),
                        Poll::Pending => None,
                    }
                };
                assert!(!gated || ready.is_none());
                drop(gate);
                // Pending: its job runs whole anyway (nothing was in flight before it).
                m.write(&bytes[..ready.unwrap_or(2)]);
                log.push("  abandoned write_async".into());
            }
        }
    }
    f.close().await.unwrap();
}

#[test]
fn random_scripts_of_polls_calls_and_abandoned_calls_agree_with_a_model() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("fs-review-model");
        for seed in 1..=40u64 {
            let path = dir.join(&format!("f{seed}"));
            let p = path.clone();
            let data = rt_one_pool_thread().block_on(async move {
                let mut f = File::options()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open_async(&p)
                    .await
                    .unwrap();
                let mut rng = Rng::new(seed);
                let mut m = Model {
                    data: Vec::new(),
                    pos: 0,
                };
                let mut log = Vec::new();
                one_script(&mut f, &mut rng, &mut m, 300, &mut log, true).await;
                m.data
            });
            assert_eq!(std::fs::read(&path).unwrap(), data, "seed {seed}");
        }
    });
}

/// The same scripts with a pool of many threads and no gate: calls left pending race the
/// pool for real.
#[test]
fn random_scripts_without_a_gate_on_a_many_thread_pool_agree_with_a_model() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("fs-review-model-free");
        for seed in 100..=140u64 {
            let path = dir.join(&format!("f{seed}"));
            let p = path.clone();
            let data = support::rt(2).block_on(async move {
                let mut f = File::options()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open_async(&p)
                    .await
                    .unwrap();
                let mut rng = Rng::new(seed);
                let mut m = Model {
                    data: Vec::new(),
                    pos: 0,
                };
                let mut log = Vec::new();
                one_script(&mut f, &mut rng, &mut m, 300, &mut log, false).await;
                m.data
            });
            assert_eq!(std::fs::read(&path).unwrap(), data, "seed {seed}");
        }
    });
}

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn random_scripts_on_a_pipe_lose_no_byte_and_reorder_none() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("fs-review-pipe-model");
        for seed in 1..=20u64 {
            let path = dir.join(&format!("fifo{seed}"));
            mkfifo(&path);
            let reader = std::fs::File::options()
                .read(true)
                .write(true)
                .open(&path)
                .unwrap();
            let mut writer = std::fs::File::options().write(true).open(&path).unwrap();
            let total = 16 * 1024;
            let all: Vec<u8> = (0..total).map(|i| (i % 251) as u8).collect();
            std::io::Write::write_all(&mut writer, &all[..]).unwrap_or(());
            let got = rt_one_pool_thread().block_on(async move {
                let mut f = File::from_std(reader);
                let mut rng = Rng::new(seed);
                let mut got: Vec<u8> = Vec::new();
                let mut log: Vec<String> = Vec::new();
                // Reads stop well before the pipe runs dry (no read may wait for a writer).
                while got.len() < total - 200 {
                    let op = rng.below(9);
                    log.push(format!("op {op} got {}", got.len()));
                    match op {
                        0 => {
                            let mut buf = vec![0u8; 1 + rng.below(40) as usize];
                            let n = f.read(&mut buf).await.unwrap();
                            got.extend_from_slice(&buf[..n]);
                        }
                        1 => {
                            let mut buf = vec![0u8; 1 + rng.below(40) as usize];
                            let n = f.read_async(&mut buf).await.unwrap();
                            got.extend_from_slice(&buf[..n]);
                        }
                        2 => {
                            let gate = hold_the_pool();
                            let mut buf = vec![0u8; 1 + rng.below(40) as usize];
                            if let Poll::Ready(r) =
                                Pin::new(&mut f).poll_read(&mut noop_cx(), &mut buf)
                            {
                                got.extend_from_slice(&buf[..r.unwrap()]);
                            }
                            drop(gate);
                        }
                        3 => {
                            let gate = hold_the_pool();
                            let mut buf = vec![0u8; 1 + rng.below(40) as usize];
                            let ready = {
                                let mut fut = pin!(f.read_async(&mut buf));
                                match fut.as_mut().poll(&mut noop_cx()) {
                                    Poll::Ready(r) => Some(r.unwrap()),
                                    Poll::Pending => None,
                                }
                            };
                            if let Some(n) = ready {
                                got.extend_from_slice(&buf[..n]);
                            }
                            drop(gate);
                        }
                        4 => {
                            let gate = hold_the_pool();
                            let k1 = 2 + rng.below(40) as usize;
                            let mut buf = vec![0u8; k1];
                            if let Poll::Ready(r) =
                                Pin::new(&mut f).poll_read(&mut noop_cx(), &mut buf)
                            {
                                got.extend_from_slice(&buf[..r.unwrap()]);
                            }
                            drop(gate);
                            let mut small = vec![0u8; 1 + rng.below(k1 as u64 - 1) as usize];
                            let n = poll_fn(|cx| Pin::new(&mut f).poll_read(cx, &mut small))
                                .await
                                .unwrap();
                            got.extend_from_slice(&small[..n]);
                        }
                        5 => {
                            let e = f.stream_position().await.unwrap_err();
                            assert_eq!(e.raw_os_error(), Some(libc::ESPIPE));
                        }
                        6 => {
                            let mut buf = vec![0u8; 1 + rng.below(40) as usize];
                            let n = std::io::Read::read(&mut f, &mut buf).unwrap();
                            got.extend_from_slice(&buf[..n]);
                        }
                        7 => f.flush().await.unwrap(),
                        _ => {
                            let e = f.seek_async(SeekFrom::Current(0)).await.unwrap_err();
                            assert_eq!(e.raw_os_error(), Some(libc::ESPIPE));
                        }
                    }
                    assert!(
                        got[..] == (0..got.len()).map(|i| (i % 251) as u8).collect::<Vec<_>>()[..],
                        "seed {seed}: bytes lost or reordered after {:#?}",
                        tail(&log)
                    );
                }
                drop(writer);
                got.len()
            });
            assert!(got > 0);
        }
    });
}

/// A coroutine cancelled while it yields inside the seek back of a dropped read (the budget
/// runs out at `spawn_blocking`'s preemption point, and another task aborts it there) must
/// leave the shared `File` consistent: either its write happened at the caller's cursor, or
/// nothing did. The sweep over `k` (budget-consuming polls before the call) puts the budget's
/// end at each point of the call in turn, one of which is that seek back's spawn (`k` = 127
/// with a budget of 128: one unit left for the job's `JoinHandle` poll, none for the spawn).
#[test]
fn a_coroutine_cancelled_inside_the_seek_back_of_a_dropped_read_leaves_the_cursor_right() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("fs-review-cancel-giveback");
        for k in 0..=300usize {
            let path = dir.join(&format!("f{k}"));
            std::fs::write(&path, b"0123456789").unwrap();
            let rt = rt_one_pool_thread();
            let p = path.clone();
            let f = rt.block_on(async move {
                let mut f = File::options()
                    .read(true)
                    .write(true)
                    .open_async(&p)
                    .await
                    .unwrap();
                // A poll_read left pending; its job reads four bytes.
                let gate = hold_the_pool();
                let mut four = [0u8; 4];
                assert!(
                    Pin::new(&mut f)
                        .poll_read(&mut noop_cx(), &mut four)
                        .is_pending()
                );
                drop(gate);
                corio::spawn_blocking(|| ()).await.unwrap(); // the read job has run
                std::sync::Arc::new(f)
            });
            let (tx, rx) = mpsc::channel::<corio::AbortHandle>();
            let shared = f.clone();
            let a = rt.go(move || {
                let me = rx.recv().unwrap();
                corio::go(move || me.abort());
                for _ in 0..k {
                    let mut s = pin!(corio::time::sleep_async(std::time::Duration::ZERO));
                    let _ = s.as_mut().poll(&mut noop_cx());
                }
                std::io::Write::write(&mut &*shared, b"Z").unwrap();
            });
            tx.send(a.abort_handle()).unwrap();
            let _ = a.join();
            // On this (plain) thread: a write at the cursor, a read after it, and the file.
            std::io::Write::write_all(&mut &*f, b"W").unwrap();
            let mut three = [0u8; 3];
            std::io::Read::read_exact(&mut &*f, &mut three).unwrap();
            let data = std::fs::read(&path).unwrap();
            // Either the cancelled write did not happen, or it happened at the cursor (0).
            let (expect_data, expect_read): (&[u8], &[u8]) = if data.starts_with(b"Z") {
                (b"ZW23456789", b"234")
            } else {
                (b"W123456789", b"123")
            };
            assert!(
                data == expect_data && three == expect_read,
                "k {k}: the file holds {:?} (expected {:?}) and the read after the write \
                 returned {:?} (expected {:?})",
                String::from_utf8_lossy(&data),
                String::from_utf8_lossy(expect_data),
                String::from_utf8_lossy(&three),
                String::from_utf8_lossy(expect_read),
            );
            drop(f);
            drop(rt);
        }
    });
}

/// The same window on the async traits' side: a `poll_read` that takes the job an abandoned
/// one left, with a smaller buffer, gives the rest back (`deliver` → `give_back`); a coroutine
/// polling it through `corio::block_on` and cancelled at that spawn's preemption point leaves
/// the cursor after bytes nobody read, and the next read returns them after a later write.
#[test]
fn a_coroutine_cancelled_inside_a_poll_reads_give_back_leaves_the_cursor_right() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("fs-review-cancel-deliver");
        for k in 0..=300usize {
            let path = dir.join(&format!("f{k}"));
            std::fs::write(&path, b"0123456789").unwrap();
            let rt = rt_one_pool_thread();
            let p = path.clone();
            let f = rt.block_on(async move {
                let mut f = File::options()
                    .read(true)
                    .write(true)
                    .open_async(&p)
                    .await
                    .unwrap();
                let gate = hold_the_pool();
                let mut eight = [0u8; 8];
                assert!(
                    Pin::new(&mut f)
                        .poll_read(&mut noop_cx(), &mut eight)
                        .is_pending()
                );
                drop(gate);
                corio::spawn_blocking(|| ()).await.unwrap(); // the read job has run
                std::sync::Arc::new(std::sync::Mutex::new(f))
            });
            let (tx, rx) = mpsc::channel::<corio::AbortHandle>();
            let shared = f.clone();
            let a = rt.go(move || {
                let me = rx.recv().unwrap();
                corio::go(move || me.abort());
                for _ in 0..k {
                    let mut s = pin!(corio::time::sleep_async(std::time::Duration::ZERO));
                    let _ = s.as_mut().poll(&mut noop_cx());
                }
                let mut g = shared.lock().unwrap();
                let mut three = [0u8; 3];
                corio::block_on(poll_fn(|cx| Pin::new(&mut *g).poll_read(cx, &mut three))).unwrap();
            });
            tx.send(a.abort_handle()).unwrap();
            let _ = a.join();
            let mut f = match std::sync::Arc::try_unwrap(f) {
                Ok(m) => m.into_inner().unwrap_or_else(|e| e.into_inner()),
                Err(_) => panic!("the coroutine still holds the file"),
            };
            std::io::Write::write_all(&mut f, b"W").unwrap();
            let mut three = [0u8; 3];
            std::io::Read::read_exact(&mut f, &mut three).unwrap();
            let data = std::fs::read(&path).unwrap();
            // The cancelled read was undone (cursor 0) or happened (cursor 3).
            let ok = (data == b"W123456789" && three == *b"123")
                || (data == b"012W456789" && three == *b"456");
            assert!(
                ok,
                "k {k}: the file holds {:?} and the read after the write returned {:?}",
                String::from_utf8_lossy(&data),
                String::from_utf8_lossy(&three),
            );
            drop(f);
            drop(rt);
        }
    });
}

/// tokio's `ReadBuf` through every `tokio::io::AsyncRead` of the area (the only `unsafe` on
/// its path: `unfilled_mut` and `assume_init` in `net/stream.rs`): a read appends after what
/// is filled, leaves `initialized` at least what it was, never past the buffer, and a full
/// `ReadBuf` is answered at once. Passes; no test checked the counts on uninitialised storage
/// with an initialised but unfilled part before.
#[cfg(feature = "tokio-io")]
mod tokio_read_buf {
    use std::future::poll_fn;
    use std::mem::MaybeUninit;
    use std::pin::Pin;

    use tokio::io::{AsyncRead, ReadBuf};

    use super::*;

    /// Reads "hello" through `r` into a `ReadBuf` over uninitialised storage holding "ab"
    /// filled and 10 bytes initialised; then reads into a full one.
    async fn check<R: AsyncRead + Unpin>(r: &mut R, what: &str) {
        let mut storage = [MaybeUninit::<u8>::uninit(); 16];
        let mut rb = ReadBuf::uninit(&mut storage);
        rb.put_slice(b"ab");
        rb.initialize_unfilled_to(8); // initialised up to 10
        assert_eq!((rb.filled().len(), rb.initialized().len()), (2, 10));
        while rb.filled().len() < 7 {
            let before = rb.filled().len();
            poll_fn(|cx| Pin::new(&mut *r).poll_read(cx, &mut rb))
                .await
                .unwrap();
            assert!(rb.filled().len() > before, "{what}: end of stream");
        }
        assert_eq!(rb.filled(), b"abhello", "{what}");
        assert_eq!(rb.initialized().len(), 10, "{what}");
        let mut full: [u8; 0] = [];
        let mut rb = ReadBuf::new(&mut full);
        poll_fn(|cx| Pin::new(&mut *r).poll_read(cx, &mut rb))
            .await
            .unwrap();
        assert_eq!(rb.filled().len(), 0, "{what}");
    }

    #[test]
    fn read_bufs_are_filled_after_their_filled_part_on_sockets_halves_and_files() {
        within(EVENTUALLY, || {
            let dir = TempDir::new("fs-review-read-buf");
            let path = dir.join("f");
            std::fs::write(&path, b"hello").unwrap();
            support::rt(2).block_on(async move {
                let listener = corio::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let client = corio::net::TcpStream::connect_async(addr).await.unwrap();
                let (mut server, _) = listener.accept_async().await.unwrap();
                client.write_all_async(b"hello").await.unwrap();
                check(&mut server, "TcpStream").await;
                client.write_all_async(b"hello").await.unwrap();
                let (mut read, _write) = server.into_split();
                check(&mut read, "tcp::OwnedReadHalf").await;

                let (a, mut b) = corio::net::UnixStream::pair().unwrap();
                a.write_all_async(b"hello").await.unwrap();
                check(&mut b, "UnixStream").await;
                a.write_all_async(b"hello").await.unwrap();
                let (mut read, _write) = b.into_split();
                check(&mut read, "unix::OwnedReadHalf").await;

                let mut f = File::open_async(&path).await.unwrap();
                check(&mut f, "File").await;
            });
        });
    }
}
