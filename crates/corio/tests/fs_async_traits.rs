//! The ecosystem's IO traits on `corio::fs::File`: `futures_io::AsyncRead`/`AsyncWrite`/
//! `AsyncSeek` always, `tokio::io`'s with the `tokio-io` feature (tokio without its runtime).
//!
//! The round trips run where a `File` is used: under `Runtime::block_on` (a plain thread), in
//! async tasks on two workers, in a coroutine through `corio::block_on`. The rest checks the
//! semantics `File` documents for them: writes go behind (`poll_write` is ready once its job
//! has the data), the next call waits for them and reports their error, reads see them, seeks
//! land after them, and a `File` dropped with one in flight still writes it.
//!
//! Tests that need a deterministic job order use a runtime whose blocking pool has one thread,
//! which a gate job occupies while the test queues the call (as `fs_review.rs` does).

#[macro_use]
mod support;

use std::future::poll_fn;
use std::io::SeekFrom;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};

use corio::fs::File;
use futures::io::{AsyncRead, AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use support::{EVENTUALLY, TempDir, within};

/// One worker and a blocking pool of one thread: pool jobs run one at a time, in the order
/// they were queued.
fn rt_one_pool_thread() -> corio::Runtime {
    corio::Runtime::builder()
        .workers(1)
        .max_blocking_threads(1)
        .hog_report(false)
        .build()
        .unwrap()
}

/// Occupies the (single) pool thread until the returned sender sends or is dropped. Call it
/// inside the runtime.
fn hold_the_pool() -> mpsc::Sender<()> {
    let (tx, rx) = mpsc::channel::<()>();
    drop(corio::spawn_blocking(move || {
        let _ = rx.recv();
    }));
    tx
}

/// A context whose waker does nothing (the caller polls again itself).
fn noop_cx() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

fn digits(n: usize) -> Vec<u8> {
    (0..n).map(|i| b"0123456789abcdef"[i % 16]).collect()
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Opens `path` for reading and writing, created empty.
async fn create_rw(path: &Path) -> File {
    File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open_async(path)
        .await
        .unwrap()
}

/// Opens an existing `path` for reading and writing.
async fn open_rw(path: &Path) -> File {
    File::options()
        .read(true)
        .write(true)
        .open_async(path)
        .await
        .unwrap()
}

/// Writes `len` bytes through the futures traits, seeks about, reads them back, overwrites two
/// and closes; the file then holds what `std` would have left.
async fn futures_round_trip(path: PathBuf, len: usize) {
    let data = digits(len);
    let mut f = create_rw(&path).await;
    f.write_all(&data).await.unwrap();
    // No flush: a seek waits for the writes behind, and Current counts them.
    assert_eq!(f.stream_position().await.unwrap(), len as u64);
    assert_eq!(f.seek(SeekFrom::Start(0)).await.unwrap(), 0);
    let mut back = Vec::new();
    assert_eq!(f.read_to_end(&mut back).await.unwrap(), len);
    assert!(back == data, "read back other bytes than were written");
    assert_eq!(f.seek(SeekFrom::End(-5)).await.unwrap(), len as u64 - 5);
    let mut tail = [0u8; 5];
    f.read_exact(&mut tail).await.unwrap();
    assert_eq!(tail, data[len - 5..]);
    assert_eq!(f.seek(SeekFrom::Start(1)).await.unwrap(), 1);
    f.write_all(b"XY").await.unwrap();
    f.close().await.unwrap();
    drop(f);
    let mut expected = data;
    expected[1..3].copy_from_slice(b"XY");
    assert!(std::fs::read(&path).unwrap() == expected);
}

rt_common! {
    #[test]
    fn futures_traits_write_seek_and_read_back_under_block_on() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("traits-block-on-{WORKERS}"));
            // More than one 2 MiB job each way.
            let path = dir.join("f");
            rt().block_on(futures_round_trip(path, 3 * 1024 * 1024 + 7));
        });
    }

    #[test]
    fn futures_traits_write_seek_and_read_back_in_a_coroutine() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("traits-coroutine-{WORKERS}"));
            let path = dir.join("f");
            rt().run(move || corio::block_on(futures_round_trip(path, 100_003)));
        });
    }

    #[test]
    fn futures_copy_moves_a_file_into_a_vec_and_into_another_file() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("traits-copy-{WORKERS}"));
            let (from, to) = (dir.join("from"), dir.join("to"));
            let data = digits(1024 * 1024 + 11);
            std::fs::write(&from, &data).unwrap();
            let (f, t) = (from.clone(), to.clone());
            let copied = rt().block_on(async move {
                let mut src = File::open_async(&f).await.unwrap();
                let mut out = Vec::new();
                let n = futures::io::copy(&mut src, &mut out).await.unwrap();
                assert_eq!(n, out.len() as u64);
                src.seek(SeekFrom::Start(0)).await.unwrap();
                let mut dst = File::create_async(&t).await.unwrap();
                // `copy` flushes at the end: the writes behind are done when it returns.
                futures::io::copy(&mut src, &mut dst).await.unwrap();
                assert_eq!(dst.metadata_async().await.unwrap().len(), n);
                out
            });
            assert!(copied == data);
            assert!(std::fs::read(&to).unwrap() == data);
        });
    }

    #[test]
    fn a_read_after_a_write_behind_sees_the_file_after_it() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("traits-read-after-write-{WORKERS}"));
            let path = dir.join("f");
            std::fs::write(&path, b"0123456789").unwrap();
            rt().block_on(async move {
                let mut f = open_rw(&path).await;
                f.write_all(b"ab").await.unwrap();
                let mut three = [0u8; 3];
                f.read_exact(&mut three).await.unwrap();
                assert_eq!(&three, b"234", "the read ran before the write, or at its cursor");
                f.seek(SeekFrom::Start(0)).await.unwrap();
                let mut all = String::new();
                f.read_to_string(&mut all).await.unwrap();
                assert_eq!(all, "ab23456789");
            });
        });
    }

    #[test]
    fn calls_after_a_write_behind_wait_for_it() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("traits-set-len-after-write-{WORKERS}"));
            let path = dir.join("f");
            rt().block_on(async move {
                let mut f = create_rw(&path).await;
                // A large write behind, then a call that would undo it if it ran first.
                f.write_all(&digits(1024 * 1024)).await.unwrap();
                f.set_len_async(3).await.unwrap();
                assert_eq!(f.metadata_async().await.unwrap().len(), 3);
                f.write_all(b"!").await.unwrap();
                f.sync_all_async().await.unwrap();
                // The cursor was at 1 MiB: the file now has a hole up to it.
                assert_eq!(f.metadata_async().await.unwrap().len(), 1024 * 1024 + 1);
            });
        });
    }

    #[test]
    fn a_write_behind_error_is_reported_once_by_flush() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("traits-write-error-{WORKERS}"));
            let path = dir.join("f");
            std::fs::write(&path, b"read-only").unwrap();
            let p = path.clone();
            rt().block_on(async move {
                let mut f = File::open_async(&p).await.unwrap();
                // Written behind: ready once the job has the byte.
                assert_eq!(f.write(b"x").await.unwrap(), 1);
                let e = f.flush().await.unwrap_err();
                assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
                f.flush().await.unwrap();
                let mut text = String::new();
                f.read_to_string(&mut text).await.unwrap();
                assert_eq!(text, "read-only");
                // write_all's error surfaces at close.
                f.write_all(b"xyz").await.unwrap();
                assert_eq!(f.close().await.unwrap_err().raw_os_error(), Some(libc::EBADF));
            });
            assert_eq!(std::fs::read(&path).unwrap(), b"read-only");
        });
    }
}

#[test]
fn futures_traits_write_seek_and_read_back_in_async_tasks_on_two_workers() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("traits-tasks");
        let paths: Vec<_> = (0..8).map(|i| dir.join(&format!("f{i}"))).collect();
        support::rt(2).block_on(async move {
            let tasks: Vec<_> = paths
                .into_iter()
                .enumerate()
                .map(|(i, path)| corio::spawn(futures_round_trip(path, 64 * 1024 + i)))
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        });
    });
}

/// What a call after a failed write behind does: returns that error instead of its own work.
#[test]
fn a_write_behind_error_is_the_next_calls_error_whatever_the_call() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("traits-next-call-error");
        let path = dir.join("f");
        std::fs::write(&path, b"0123").unwrap();
        let rt = support::rt(2);
        for call in [
            "read",
            "write",
            "seek",
            "sync_all_async",
            "read_async",
            "metadata",
        ] {
            let p = path.clone();
            rt.block_on(async move {
                let mut f = File::open_async(&p).await.unwrap();
                f.write_all(b"x").await.unwrap();
                let mut buf = [0u8; 2];
                let e = match call {
                    "read" => f.read(&mut buf).await.map(drop),
                    "write" => f.write(b"y").await.map(drop),
                    "seek" => f.seek(SeekFrom::Start(2)).await.map(drop),
                    "sync_all_async" => f.sync_all_async().await,
                    "read_async" => f.read_async(&mut buf).await.map(drop),
                    "metadata" => f.metadata_async().await.map(drop),
                    _ => unreachable!(),
                }
                .unwrap_err();
                assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{call}: {e}");
                // The call did nothing else: the cursor has not moved.
                assert_eq!(f.stream_position().await.unwrap(), 0, "{call}");
                assert_eq!(f.read(&mut buf).await.unwrap(), 2, "{call}");
                assert_eq!(&buf, b"01", "{call}");
            });
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"0123");
    });
}

#[test]
fn blocking_style_flush_reports_a_write_behind_error() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("traits-blocking-flush");
        let path = dir.join("f");
        std::fs::write(&path, b"ro").unwrap();
        support::rt(2).run(move || {
            let mut f = File::open(&path).unwrap();
            corio::block_on(f.write_all(b"x")).unwrap();
            let e = std::io::Write::flush(&mut f).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
            std::io::Write::flush(&mut f).unwrap();
        });
    });
}

#[test]
fn a_file_dropped_with_a_write_behind_still_writes_it() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("traits-dropped-write");
        let path = dir.join("f");
        let rt = rt_one_pool_thread();
        rt.block_on(async move {
            let mut f = File::create_async(&path).await.unwrap();
            let gate = hold_the_pool();
            f.write_all(b"behind").await.unwrap(); // queued behind the gate
            drop(f);
            assert_eq!(
                std::fs::read(&path).unwrap(),
                b"",
                "the write ran before the gate"
            );
            drop(gate);
            // One pool thread, first in first out: the write has run when this has.
            corio::spawn_blocking(|| ()).await.unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"behind");
        });
    });
}

#[test]
fn a_read_polled_again_with_a_smaller_buffer_leaves_the_cursor_after_what_it_returned() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("traits-smaller-buffer");
        let path = dir.join("f");
        std::fs::write(&path, digits(16)).unwrap();
        rt_one_pool_thread().block_on(async move {
            let mut f = File::open_async(&path).await.unwrap();
            let gate = hold_the_pool();
            let mut eight = [0u8; 8];
            let first = Pin::new(&mut f).poll_read(&mut noop_cx(), &mut eight);
            assert!(first.is_pending(), "queued behind the gate");
            drop(gate);
            // The job reads eight bytes; the caller now asks for three.
            let mut three = [0u8; 3];
            let n = poll_fn(|cx| Pin::new(&mut f).poll_read(cx, &mut three))
                .await
                .unwrap();
            assert_eq!(n, 3);
            assert_eq!(&three, b"012");
            assert_eq!(f.stream_position().await.unwrap(), 3);
            let mut rest = Vec::new();
            f.read_to_end(&mut rest).await.unwrap();
            assert!(rest == digits(16)[3..]);
        });
    });
}

#[test]
fn a_pipe_read_polled_again_with_a_smaller_buffer_loses_no_bytes() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("traits-smaller-buffer-fifo");
        let path = dir.join("fifo");
        mkfifo(&path);
        // Read-write: opening does not wait for a writer (Linux), and the pipe stays open.
        let reader = std::fs::File::options()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut writer = std::fs::File::options().write(true).open(&path).unwrap();
        std::io::Write::write_all(&mut writer, b"0123456789").unwrap();
        let got = rt_one_pool_thread().block_on(async move {
            let mut f = File::from_std(reader);
            let gate = hold_the_pool();
            let mut eight = [0u8; 8];
            let first = Pin::new(&mut f).poll_read(&mut noop_cx(), &mut eight);
            assert!(first.is_pending(), "queued behind the gate");
            drop(gate);
            let mut got = Vec::new();
            let mut three = [0u8; 3];
            let n = poll_fn(|cx| Pin::new(&mut f).poll_read(cx, &mut three))
                .await
                .unwrap();
            got.extend_from_slice(&three[..n]);
            let mut buf = [0u8; 16];
            while got.len() < 10 {
                let n = f.read(&mut buf).await.unwrap();
                got.extend_from_slice(&buf[..n]);
            }
            got
        });
        assert_eq!(got, b"0123456789");
    });
}

#[test]
fn a_zero_length_read_or_write_is_ready_at_once() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("traits-zero-length");
        let path = dir.join("f");
        std::fs::write(&path, b"abc").unwrap();
        rt_one_pool_thread().block_on(async move {
            let mut f = open_rw(&path).await;
            let gate = hold_the_pool(); // no job can run: these must not need one
            let read = Pin::new(&mut f).poll_read(&mut noop_cx(), &mut []);
            assert!(matches!(read, Poll::Ready(Ok(0))));
            let write = futures::io::AsyncWrite::poll_write(Pin::new(&mut f), &mut noop_cx(), &[]);
            assert!(matches!(write, Poll::Ready(Ok(0))));
            drop(gate);
            let mut all = Vec::new();
            f.read_to_end(&mut all).await.unwrap();
            assert_eq!(all, b"abc");
        });
    });
}

/// A seek polled again with another position: the first one is a call whose result nobody
/// took (it happened); the second runs after it.
#[test]
fn a_seek_polled_again_with_another_position_runs_after_the_first() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("traits-seek-repoll");
        let path = dir.join("f");
        std::fs::write(&path, digits(16)).unwrap();
        rt_one_pool_thread().block_on(async move {
            use futures::io::AsyncSeek;
            let mut f = File::open_async(&path).await.unwrap();
            let gate = hold_the_pool();
            let first = Pin::new(&mut f).poll_seek(&mut noop_cx(), SeekFrom::Start(10));
            assert!(first.is_pending(), "queued behind the gate");
            drop(gate);
            let pos = poll_fn(|cx| Pin::new(&mut f).poll_seek(cx, SeekFrom::Current(-4)))
                .await
                .unwrap();
            assert_eq!(pos, 6);
            let mut two = [0u8; 2];
            f.read_exact(&mut two).await.unwrap();
            assert_eq!(&two, b"67");
        });
    });
}

/// A poll_read left pending, then a write: the read is a call whose future was dropped, so
/// the write lands where the caller's cursor was.
#[test]
fn a_write_after_a_read_left_pending_lands_at_the_callers_cursor() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("traits-read-then-write");
        let path = dir.join("f");
        std::fs::write(&path, digits(8)).unwrap();
        let p = path.clone();
        rt_one_pool_thread().block_on(async move {
            let mut f = open_rw(&p).await;
            let gate = hold_the_pool();
            let mut four = [0u8; 4];
            assert!(
                Pin::new(&mut f)
                    .poll_read(&mut noop_cx(), &mut four)
                    .is_pending()
            );
            drop(gate);
            f.write_all(b"AB").await.unwrap();
            f.close().await.unwrap();
        });
        assert_eq!(std::fs::read(&path).unwrap(), b"AB234567");
    });
}

/// A pipe cannot seek: `std`'s error comes back.
#[test]
fn seeking_a_pipe_is_an_error_not_a_hang() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("traits-seek-fifo");
        let path = dir.join("fifo");
        mkfifo(&path);
        let reader = std::fs::File::options()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        support::rt(1).block_on(async move {
            let mut f = File::from_std(reader);
            let e = f.seek(SeekFrom::Start(1)).await.unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ESPIPE), "{e}");
        });
    });
}

/// The extension traits' futures borrow the `File` mutably and need it `Unpin`; spawning them
/// needs it `Send`.
const _: () = {
    const fn traits_need<T: Send + Sync + Unpin>() {}
    traits_need::<File>()
};

#[cfg(feature = "tokio-io")]
mod tokio_io {
    use std::future::poll_fn;
    use std::io::SeekFrom;
    use std::path::PathBuf;
    use std::pin::Pin;

    use corio::fs::File;
    use futures::StreamExt;
    use tokio::io::{AsyncReadExt, AsyncSeek, AsyncSeekExt, AsyncWrite, AsyncWriteExt};

    use super::{create_rw, digits, support};
    use support::{EVENTUALLY, TempDir, within};

    async fn tokio_round_trip(path: PathBuf, len: usize) {
        let data = digits(len);
        let mut f = create_rw(&path).await;
        f.write_all(&data).await.unwrap();
        assert_eq!(f.stream_position().await.unwrap(), len as u64);
        assert_eq!(f.seek(SeekFrom::Start(0)).await.unwrap(), 0);
        let mut back = Vec::new();
        assert_eq!(f.read_to_end(&mut back).await.unwrap(), len);
        assert!(back == data, "read back other bytes than were written");
        assert_eq!(f.seek(SeekFrom::End(-5)).await.unwrap(), len as u64 - 5);
        let mut tail = [0u8; 5];
        f.read_exact(&mut tail).await.unwrap();
        assert_eq!(tail, data[len - 5..]);
        f.seek(SeekFrom::Start(1)).await.unwrap();
        f.write_all(b"XY").await.unwrap();
        f.shutdown().await.unwrap();
        drop(f);
        let mut expected = data;
        expected[1..3].copy_from_slice(b"XY");
        assert!(std::fs::read(&path).unwrap() == expected);
    }

    #[test]
    fn tokio_traits_write_seek_and_read_back_on_every_flavour_and_in_tasks() {
        within(EVENTUALLY, || {
            let dir = TempDir::new("tokio-round-trip");
            for workers in support::FLAVOURS {
                let path = dir.join(&format!("f{workers}"));
                support::rt(workers).block_on(tokio_round_trip(path, 3 * 1024 * 1024 + 7));
            }
            let paths: Vec<_> = (0..8).map(|i| dir.join(&format!("t{i}"))).collect();
            support::rt(2).block_on(async move {
                let tasks: Vec<_> = paths
                    .into_iter()
                    .enumerate()
                    .map(|(i, path)| corio::spawn(tokio_round_trip(path, 64 * 1024 + i)))
                    .collect();
                for task in tasks {
                    task.await.unwrap();
                }
            });
        });
    }

    #[test]
    fn tokio_copy_moves_a_file_into_a_vec_and_into_another_file() {
        within(EVENTUALLY, || {
            let dir = TempDir::new("tokio-copy");
            let (from, to) = (dir.join("from"), dir.join("to"));
            let data = digits(1024 * 1024 + 11);
            std::fs::write(&from, &data).unwrap();
            let (f, t) = (from.clone(), to.clone());
            let copied = support::rt(2).block_on(async move {
                let mut src = File::open_async(&f).await.unwrap();
                let mut out = Vec::new();
                let n = tokio::io::copy(&mut src, &mut out).await.unwrap();
                assert_eq!(n, out.len() as u64);
                src.seek(SeekFrom::Start(0)).await.unwrap();
                let mut dst = File::create_async(&t).await.unwrap();
                tokio::io::copy(&mut src, &mut dst).await.unwrap();
                dst.flush().await.unwrap();
                out
            });
            assert!(copied == data);
            assert!(std::fs::read(&to).unwrap() == data);
        });
    }

    #[test]
    fn tokio_util_framed_read_splits_a_file_into_lines() {
        within(EVENTUALLY, || {
            let dir = TempDir::new("tokio-framed");
            let path = dir.join("lines");
            let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
            std::fs::write(&path, &text).unwrap();
            let lines = support::rt(2).block_on(async move {
                let f = File::open_async(&path).await.unwrap();
                let mut framed =
                    tokio_util::codec::FramedRead::new(f, tokio_util::codec::LinesCodec::new());
                let mut lines = Vec::new();
                while let Some(line) = framed.next().await {
                    lines.push(line.unwrap());
                }
                lines
            });
            assert_eq!(lines.len(), 10_000);
            assert!(
                lines
                    .iter()
                    .enumerate()
                    .all(|(i, l)| *l == format!("line {i}"))
            );
        });
    }

    #[test]
    fn tokio_write_behind_error_is_reported_by_flush_and_shutdown() {
        within(EVENTUALLY, || {
            let dir = TempDir::new("tokio-write-error");
            let path = dir.join("f");
            std::fs::write(&path, b"ro").unwrap();
            support::rt(2).block_on(async move {
                let mut f = File::open_async(&path).await.unwrap();
                f.write_all(b"x").await.unwrap();
                let e = f.flush().await.unwrap_err();
                assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
                f.write_all(b"x").await.unwrap();
                let e = f.shutdown().await.unwrap_err();
                assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
                f.shutdown().await.unwrap();
            });
        });
    }

    /// As tokio's `File`: `start_seek` while a call's job is still out is an error; after
    /// `poll_complete` it starts.
    #[test]
    fn tokio_start_seek_waits_for_poll_complete_after_a_write() {
        within(EVENTUALLY, || {
            let dir = TempDir::new("tokio-start-seek");
            let path = dir.join("f");
            support::rt(1).block_on(async move {
                let mut f = create_rw(&path).await;
                let n = poll_fn(|cx| Pin::new(&mut f).poll_write(cx, b"0123"))
                    .await
                    .unwrap();
                assert_eq!(n, 4);
                assert!(Pin::new(&mut f).start_seek(SeekFrom::Start(1)).is_err());
                poll_fn(|cx| Pin::new(&mut f).poll_complete(cx))
                    .await
                    .unwrap();
                Pin::new(&mut f).start_seek(SeekFrom::Start(1)).unwrap();
                let pos = poll_fn(|cx| Pin::new(&mut f).poll_complete(cx))
                    .await
                    .unwrap();
                assert_eq!(pos, 1);
                let mut rest = String::new();
                f.read_to_string(&mut rest).await.unwrap();
                assert_eq!(rest, "123");
            });
        });
    }
}
