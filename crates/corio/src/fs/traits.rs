//! The async IO traits on [`File`]: `futures_io::AsyncRead`, `AsyncWrite` and `AsyncSeek`,
//! and with the `tokio-io` feature `tokio::io`'s three.
//!
//! # The problem
//!
//! A trait's `poll_*` method cannot keep a future between polls: each poll starts from the
//! `File` alone, and the caller may poll again with another buffer, or make another call
//! instead. The `_async` methods own their job while it runs (`State::call`); a poll has to
//! leave its job in the `File` and find it there next time.
//!
//! # The mechanism
//!
//! The job a poll starts is the `File`'s job in flight, tagged with who takes its result
//! ([`By`]), the slot the `_async` methods use for the job of a dropped call. So the ordering
//! of [Calls whose future is dropped](super#calls-whose-future-is-dropped) holds as it is:
//! every call, poll or not, first waits for the job in flight (`State::poll_settle`).
//!
//! 1. `poll_read` finds its own job (`By::PollRead`) and returns what it read; else it settles
//!    what is there, returns unread bytes if a pipe left some, or starts a read of at most
//!    the caller's length (and `MAX_CHUNK`) into the `File`'s buffer. If the caller polls
//!    again with a smaller buffer than the job read into, the bytes it cannot take are given
//!    back as a dropped read's are (step 3 there): the cursor moves back over them, a pipe
//!    keeps them for the next read.
//! 2. `poll_write` settles what is there, returns the error of an earlier write behind if one
//!    failed, copies up to `MAX_CHUNK` bytes into the `File`'s buffer, starts a job that
//!    writes them all (`write_all`) and is ready at once: the write goes *behind*
//!    (`By::PollWrite`). A pool thread never sees the caller's slice.
//! 3. `poll_flush` (and `poll_close`, tokio's `poll_shutdown`) settles what is there and
//!    returns the error of a write behind.
//! 4. `poll_seek(pos)` finds its own job (`By::PollSeek(pos)`, the same position) and returns
//!    where it went; else it settles what is there (a seek to another position included: it
//!    happened, nobody took its result) and starts one. tokio splits this in two:
//!    `start_seek` starts the job only when none is in flight (else it is an error, as
//!    tokio's `File` says), and `poll_complete` takes its result — or, with no seek started,
//!    settles what is there and returns 0, a placeholder tokio's trait allows.
//!
//! A poll that returns `Pending` has left the task's waker with the job's `JoinHandle`. Zero
//! length reads and writes are ready at once with `Ok(0)` and touch nothing. A poll cannot
//! tell a caller polling again from a new call, so a `poll_read` (or a `poll_seek` to the same
//! position) that finds a job an earlier one left takes its result: a `SeekFrom::Current`
//! seek given up and made again moves the cursor once.
//!
//! A poll allocates nothing but its job (the pool task): the bytes travel in the `File`'s
//! buffer, which comes back with each job and is reused, as tokio's `File` reuses its `Buf`.
//!
//! # Why writes go behind
//!
//! As tokio's `File` does: the caller prepares its next chunk while the pool writes this one,
//! so `tokio::io::copy` or a `BufWriter` over a `File` keeps a job running instead of waiting
//! out a round trip to the pool per chunk. The rejected alternative, `poll_write` waiting for
//! its job, would report each error at its own write; with writes behind an error comes one
//! call late, and is lost if the `File` is dropped unflushed. Code written for tokio's `File`
//! flushes already (`tokio::io::copy` and `futures::io::copy` do at their end).
//!
//! # Not for `&File`
//!
//! `std`'s `Read`/`Write`/`Seek` (and corio's blocking-style ones) exist for `&File`: a call
//! holds the `File`'s lock until its job is done. A poll through a shared reference has
//! nowhere to keep its place in the lock's queue between polls, and the job it started would
//! be taken by whichever sharer polls next — one task's read returned to another — while the
//! `JoinHandle` keeps one waker, so the first task could wait for ever. tokio has no such
//! impls for `&tokio::fs::File` either.

use std::future::Future;
use std::io::{self, IoSlice, Read, SeekFrom, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use super::{By, Done, File, InFlight, MAX_CHUNK, State, join};

impl State {
    /// Step 1: reads at most `room` bytes, handing them to `put` (called once, with at most
    /// `room` bytes, when the result is `Ok` and not 0).
    fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        file: &Arc<std::fs::File>,
        room: usize,
        put: impl FnOnce(&[u8]),
    ) -> Poll<io::Result<usize>> {
        if room == 0 {
            return Poll::Ready(Ok(0));
        }
        loop {
            if let Some(InFlight {
                job,
                by: By::PollRead,
            }) = &mut self.in_flight
            {
                let done = ready!(Pin::new(job).poll(cx));
                self.in_flight = None;
                let Done::Read(r, buf) = join(done)? else {
                    unreachable!("a read job reads")
                };
                return Poll::Ready(self.deliver(file, r, buf, room, put));
            }
            ready!(self.poll_settle(cx, file));
            if let Err(e) = self.take_write_error() {
                return Poll::Ready(Err(e));
            }
            if self.unread_len() > 0 {
                let n = self.unread_len().min(room);
                put(&self.unread[self.unread_at..][..n]);
                self.unread_at += n;
                if self.unread_len() == 0 {
                    self.forget_unread();
                }
                return Poll::Ready(Ok(n));
            }
            let (file, mut buf) = (file.clone(), std::mem::take(&mut self.buf));
            buf.resize(room.min(MAX_CHUNK), 0);
            let job = move || {
                let r = (&*file).read(&mut buf);
                Done::Read(r, buf)
            };
            self.in_flight = Some(InFlight {
                job: crate::spawn_blocking(job),
                by: By::PollRead,
            });
        }
    }

    /// Hands what a read job read to `put`, as much as `room` takes; the rest is given back
    /// (step 1).
    fn deliver(
        &mut self,
        file: &Arc<std::fs::File>,
        r: io::Result<usize>,
        mut buf: Vec<u8>,
        room: usize,
        put: impl FnOnce(&[u8]),
    ) -> io::Result<usize> {
        let n = match r {
            Ok(n) => n,
            Err(e) => {
                self.buf = buf;
                return Err(e);
            }
        };
        let taken = n.min(room);
        put(&buf[..taken]);
        if taken < n {
            buf.truncate(n);
            self.give_back(file, buf, taken);
        } else {
            self.buf = buf;
        }
        Ok(taken)
    }

    /// Step 2: copies up to `MAX_CHUNK` bytes of `bufs` and writes them behind.
    fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        file: &Arc<std::fs::File>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if bufs.iter().all(|b| b.is_empty()) {
            return Poll::Ready(Ok(0));
        }
        ready!(self.poll_settle(cx, file));
        if let Err(e) = self.take_write_error() {
            return Poll::Ready(Err(e));
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        for b in bufs {
            let room = MAX_CHUNK - buf.len();
            if room == 0 {
                break;
            }
            buf.extend_from_slice(&b[..b.len().min(room)]);
        }
        let (n, file) = (buf.len(), file.clone());
        let job = move || {
            let r = (&*file).write_all(&buf).map(|()| n);
            Done::Write(r, buf)
        };
        self.in_flight = Some(InFlight {
            job: crate::spawn_blocking(job),
            by: By::PollWrite,
        });
        Poll::Ready(Ok(n))
    }

    /// Step 3: waits for what is in flight; the error of a write behind, if one failed.
    fn poll_flush(
        &mut self,
        cx: &mut Context<'_>,
        file: &Arc<std::fs::File>,
    ) -> Poll<io::Result<()>> {
        ready!(self.poll_settle(cx, file));
        Poll::Ready(self.take_write_error())
    }

    /// Step 4, `futures_io`'s form.
    fn poll_seek(
        &mut self,
        cx: &mut Context<'_>,
        file: &Arc<std::fs::File>,
        pos: SeekFrom,
    ) -> Poll<io::Result<u64>> {
        loop {
            if matches!(self.in_flight, Some(InFlight { by: By::PollSeek(at), .. }) if at == pos) {
                return self.poll_seek_done(cx);
            }
            ready!(self.poll_settle(cx, file));
            if let Err(e) = self.take_write_error() {
                return Poll::Ready(Err(e));
            }
            self.start_seek_job(file, pos);
        }
    }

    /// Step 4, tokio's `start_seek`.
    #[cfg(feature = "tokio-io")]
    fn start_seek(&mut self, file: &Arc<std::fs::File>, pos: SeekFrom) -> io::Result<()> {
        if self.in_flight.is_some() {
            return Err(io::Error::other(
                "corio::fs::File: another call is in flight; call poll_complete before start_seek",
            ));
        }
        self.take_write_error()?;
        self.start_seek_job(file, pos);
        Ok(())
    }

    /// Step 4, tokio's `poll_complete`.
    #[cfg(feature = "tokio-io")]
    fn poll_complete(
        &mut self,
        cx: &mut Context<'_>,
        file: &Arc<std::fs::File>,
    ) -> Poll<io::Result<u64>> {
        if matches!(
            self.in_flight,
            Some(InFlight {
                by: By::PollSeek(_),
                ..
            })
        ) {
            return self.poll_seek_done(cx);
        }
        ready!(self.poll_settle(cx, file));
        if let Err(e) = self.take_write_error() {
            return Poll::Ready(Err(e));
        }
        // No seek was started: tokio's trait leaves the position returned unspecified.
        Poll::Ready(Ok(0))
    }

    fn start_seek_job(&mut self, file: &Arc<std::fs::File>, pos: SeekFrom) {
        let file = file.clone();
        let job = move || Done::Seek(std::io::Seek::seek(&mut &*file, pos));
        self.in_flight = Some(InFlight {
            job: crate::spawn_blocking(job),
            by: By::PollSeek(pos),
        });
    }

    /// Waits for the seek in flight, which a poll started, and returns where it went.
    fn poll_seek_done(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let Some(InFlight { job, .. }) = &mut self.in_flight else {
            unreachable!("a seek is in flight")
        };
        let done = ready!(Pin::new(job).poll(cx));
        self.in_flight = None;
        let Done::Seek(r) = join(done)? else {
            unreachable!("a seek job seeks")
        };
        if r.is_ok() {
            self.forget_unread();
        }
        Poll::Ready(r)
    }
}

impl File {
    /// The `File`'s state and its file, for a poll that has it exclusively.
    fn parts(self: Pin<&mut Self>) -> (&mut State, &Arc<std::fs::File>) {
        let this = self.get_mut();
        (this.state.get_mut(), &this.std)
    }
}

/// Reads on the blocking pool: a poll starts a job that reads at most the buffer's length
/// (and 2 MiB), and a later poll returns what it read. Calls on one `File` run in the order
/// they were made, so a read after a write sees it
/// ([The async IO traits](crate::fs#the-async-io-traits)).
///
/// ```
/// use futures::io::AsyncReadExt;
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let path = std::env::temp_dir().join(format!("corio-fs-async-read-doc-{}", std::process::id()));
/// std::fs::write(&path, "hello").unwrap();
/// let p = path.clone();
/// let text = rt.block_on(async move {
///     let mut f = corio::fs::File::open_async(&p).await?;
///     let mut text = String::new();
///     f.read_to_string(&mut text).await?;
///     std::io::Result::Ok(text)
/// });
/// assert_eq!(text.unwrap(), "hello");
/// std::fs::remove_file(path).unwrap();
/// ```
impl futures_io::AsyncRead for File {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let (state, file) = self.parts();
        let room = buf.len();
        state.poll_read(cx, file, room, |bytes| {
            buf[..bytes.len()].copy_from_slice(bytes)
        })
    }
}

/// Writes behind: `poll_write` copies the bytes (up to 2 MiB) into the `File`'s buffer, hands
/// them to a pool job and is ready at once; the next call on the `File` waits for that job,
/// and if it failed returns its error instead of doing its own work. `poll_flush` and
/// `poll_close` wait for it and return its error. A `File` dropped with a write behind in
/// flight still writes it, and its error is lost: flush or close first
/// ([Writes behind](crate::fs#writes-behind)).
///
/// ```
/// use futures::io::AsyncWriteExt;
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let path = std::env::temp_dir().join(format!("corio-fs-async-write-doc-{}", std::process::id()));
/// let p = path.clone();
/// rt.block_on(async move {
///     let mut f = corio::fs::File::create_async(&p).await?;
///     f.write_all(b"hello").await?; // behind
///     f.close().await // written, or its error
/// })
/// .unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"hello");
///
/// // A write's error comes one call late: here at the flush.
/// let p = path.clone();
/// let e = rt.block_on(async move {
///     let mut f = corio::fs::File::open_async(&p).await.unwrap(); // read-only
///     f.write_all(b"x").await.unwrap();
///     f.flush().await.unwrap_err()
/// });
/// assert_eq!(e.raw_os_error(), Some(libc::EBADF));
/// std::fs::remove_file(path).unwrap();
/// ```
impl futures_io::AsyncWrite for File {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let (state, file) = self.parts();
        state.poll_write(cx, file, &[IoSlice::new(buf)])
    }

    /// The buffers are copied into one job (up to 2 MiB in all).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let (state, file) = self.parts();
        state.poll_write(cx, file, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let (state, file) = self.parts();
        state.poll_flush(cx, file)
    }

    /// As `poll_flush`: the file stays open until the `File` is dropped.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let (state, file) = self.parts();
        state.poll_flush(cx, file)
    }
}

/// Seeks on the blocking pool, after every call made before it (writes behind included, whose
/// error it returns instead of seeking). Polled again with another position, the first seek
/// still happens, and the second runs after it; polled again with the same one, it is the same
/// seek, so a `SeekFrom::Current` seek left pending and made again moves the cursor once.
///
/// ```
/// use std::io::SeekFrom;
///
/// use futures::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let path = std::env::temp_dir().join(format!("corio-fs-async-seek-doc-{}", std::process::id()));
/// let p = path.clone();
/// let tail = rt.block_on(async move {
///     let mut f = corio::fs::File::options()
///         .read(true)
///         .write(true)
///         .create(true)
///         .truncate(true)
///         .open_async(&p)
///         .await?;
///     f.write_all(b"0123456789").await?;
///     assert_eq!(f.seek(SeekFrom::End(-3)).await?, 7);
///     let mut tail = String::new();
///     f.read_to_string(&mut tail).await?;
///     std::io::Result::Ok(tail)
/// });
/// assert_eq!(tail.unwrap(), "789");
/// std::fs::remove_file(path).unwrap();
/// ```
impl futures_io::AsyncSeek for File {
    fn poll_seek(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        pos: SeekFrom,
    ) -> Poll<io::Result<u64>> {
        let (state, file) = self.parts();
        state.poll_seek(cx, file, pos)
    }
}

/// As the `futures_io::AsyncRead` impl; the bytes are copied into the unfilled part of the
/// `ReadBuf`, never zeroed first.
///
/// ```
/// use tokio::io::AsyncReadExt;
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let path = std::env::temp_dir().join(format!("corio-fs-tokio-read-doc-{}", std::process::id()));
/// std::fs::write(&path, "hello").unwrap();
/// let p = path.clone();
/// let text = rt.block_on(async move {
///     let mut f = corio::fs::File::open_async(&p).await?;
///     let mut text = String::new();
///     f.read_to_string(&mut text).await?;
///     std::io::Result::Ok(text)
/// });
/// assert_eq!(text.unwrap(), "hello");
/// std::fs::remove_file(path).unwrap();
/// ```
#[cfg(feature = "tokio-io")]
impl tokio::io::AsyncRead for File {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let (state, file) = self.parts();
        let room = buf.remaining();
        ready!(state.poll_read(cx, file, room, |bytes| buf.put_slice(bytes)))?;
        Poll::Ready(Ok(()))
    }
}

/// As the `futures_io::AsyncWrite` impl: writes go behind, and `poll_flush` and
/// `poll_shutdown` wait for them and return their error (as tokio's `fs::File`).
///
/// ```
/// use tokio::io::AsyncWriteExt;
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let path = std::env::temp_dir().join(format!("corio-fs-tokio-write-doc-{}", std::process::id()));
/// let p = path.clone();
/// rt.block_on(async move {
///     let mut f = corio::fs::File::create_async(&p).await?;
///     tokio::io::copy(&mut &b"hello"[..], &mut f).await?;
///     f.flush().await
/// })
/// .unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"hello");
/// std::fs::remove_file(path).unwrap();
/// ```
#[cfg(feature = "tokio-io")]
impl tokio::io::AsyncWrite for File {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let (state, file) = self.parts();
        state.poll_write(cx, file, &[IoSlice::new(buf)])
    }

    /// The buffers are copied into one job (up to 2 MiB in all).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let (state, file) = self.parts();
        state.poll_write(cx, file, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let (state, file) = self.parts();
        state.poll_flush(cx, file)
    }

    /// As `poll_flush`: the file stays open until the `File` is dropped.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let (state, file) = self.parts();
        state.poll_flush(cx, file)
    }
}

/// As tokio's `fs::File`: `start_seek` is an error while another call's job is in flight
/// (`poll_complete` first; `AsyncSeekExt::seek` does), and returns a write behind's error;
/// `poll_complete` with no seek started waits for what is in flight and returns 0.
///
/// ```
/// use std::io::SeekFrom;
///
/// use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let path = std::env::temp_dir().join(format!("corio-fs-tokio-seek-doc-{}", std::process::id()));
/// let p = path.clone();
/// let tail = rt.block_on(async move {
///     let mut f = corio::fs::File::options()
///         .read(true)
///         .write(true)
///         .create(true)
///         .truncate(true)
///         .open_async(&p)
///         .await?;
///     f.write_all(b"0123456789").await?;
///     assert_eq!(f.seek(SeekFrom::End(-3)).await?, 7);
///     let mut tail = String::new();
///     f.read_to_string(&mut tail).await?;
///     std::io::Result::Ok(tail)
/// });
/// assert_eq!(tail.unwrap(), "789");
/// std::fs::remove_file(path).unwrap();
/// ```
#[cfg(feature = "tokio-io")]
impl tokio::io::AsyncSeek for File {
    fn start_seek(self: Pin<&mut Self>, pos: SeekFrom) -> io::Result<()> {
        let (state, file) = self.parts();
        state.start_seek(file, pos)
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let (state, file) = self.parts();
        state.poll_complete(cx, file)
    }
}
