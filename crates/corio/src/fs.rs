//! Files, through the blocking pool: a coroutine never blocks its worker on disk.
//!
//! Linux has no readiness for regular files (epoll refuses them; a "nonblocking" read of a
//! file blocks on the disk anyway), so — as Go does by entering a syscall and tokio by
//! `spawn_blocking` — every call here runs the `std::fs` call on the runtime's blocking pool.
//! The blocking-style forms wait for it as `block_on` waits: only the coroutine is suspended
//! (on a plain thread the call simply runs in place; inside an async task they panic with
//! advice). The `_async` forms are for async tasks, and [`File`] has the ecosystem's async IO
//! traits too ([The async IO traits](#the-async-io-traits)).
//!
//! A pool job must own what it touches, so [`File`] keeps a buffer that travels to the pool
//! thread and back: a read fills it there and copies out here, a write copies in here. The
//! buffer is reused, so a file read in a loop allocates once.
//!
//! ```
//! let rt = corio::Runtime::builder().workers(1).build().unwrap();
//! let path = std::env::temp_dir().join(format!("corio-fs-doc-{}", std::process::id()));
//! let p = path.clone();
//! let text = rt.run(move || {
//!     corio::fs::write(&p, "hello").unwrap();
//!     corio::fs::read_to_string(&p).unwrap()
//! });
//! assert_eq!(text, "hello");
//! std::fs::remove_file(path).unwrap();
//! ```
//!
//! # Paths and directories
//!
//! The `std::fs` calls on paths — [`metadata`], [`symlink_metadata`], [`try_exists`],
//! [`canonicalize`], [`read_link`], [`read_dir`], [`create_dir`], [`create_dir_all`],
//! [`remove_dir`], [`remove_dir_all`], [`remove_file`], [`rename`], [`copy`], [`hard_link`],
//! [`set_permissions`] — are here too, each with an `_async` form, and return `std`'s results
//! and errors. [`read_dir`] returns the entries as a `Vec`, read on the pool, since iterating
//! `std`'s `ReadDir` makes system calls.
//!
//! ```
//! let rt = corio::Runtime::builder().workers(1).build().unwrap();
//! let dir = std::env::temp_dir().join(format!("corio-fs-paths-doc-{}", std::process::id()));
//! let d = dir.clone();
//! let names = rt.run(move || {
//!     corio::fs::create_dir(&d).unwrap();
//!     corio::fs::write(d.join("a"), "a").unwrap();
//!     corio::fs::copy(d.join("a"), d.join("b")).unwrap();
//!     corio::fs::rename(d.join("b"), d.join("c")).unwrap();
//!     assert!(!corio::fs::try_exists(d.join("b")).unwrap());
//!     let mut names: Vec<_> = corio::fs::read_dir(&d)
//!         .unwrap()
//!         .into_iter()
//!         .map(|entry| entry.file_name())
//!         .collect();
//!     names.sort();
//!     names
//! });
//! assert_eq!(names, ["a", "c"]);
//! let d = dir.clone();
//! rt.block_on(async move { corio::fs::remove_dir_all_async(&d).await.unwrap() });
//! assert!(!dir.exists());
//! ```
//!
//! # Calls whose future is dropped
//!
//! A pool job cannot be stopped: when the future of a `File` call is dropped before it
//! finishes (a `select!` or timeout that lost, an aborted task, a coroutine cancelled while it
//! waits), the job still runs to its end. Left alone it would race the calls made after it
//! (a seek overtaken by the read before it, a `set_len` undone by the write before it) and a
//! read's bytes would be lost. So a `File` keeps the job of its last call, and:
//!
//! 1. Every call first waits for that job if it is still running (the previous call's future
//!    was dropped), then keeps what it brought back. Calls on one `File` therefore take effect
//!    in the order they were made, whatever was dropped; `flush` just waits for it (and
//!    returns the error of a [write behind](#writes-behind)).
//! 2. A call's job is the one kept while it runs; the call takes it back when it finishes.
//! 3. A dropped *read* is as if it had not been made: the next call first moves the cursor
//!    back over the bytes its job read, so the cursor is where the caller left it and the next
//!    read sees the file as it is then. A pipe or a terminal cannot seek: there the bytes are
//!    kept and the next read returns them first, so none is lost. That seek back runs in
//!    place, at once, with the bytes kept: an `lseek` from the current position does no IO,
//!    and a pool job for it left a window (the spawn is a preemption point, where a
//!    coroutine can be cancelled) in which the bytes were kept and no seek was on its way,
//!    so the cursor stayed after them (`tests/fs_review_cancellation.rs`).
//! 4. A dropped *write* (or `write_all_async`) happens or not, in part or whole, as a
//!    cancelled write anywhere: the chunk in flight (up to 2 MiB) reaches the file before any
//!    later call, the chunks not started are not written, and how much was written is not
//!    reported — seek or look at the length to know.
//!
//! A `File` dropped with a job running does not wait: the job finishes on the pool, then the
//! descriptor is closed (each job holds it, so its number is never reused under a running
//! job; the write reaches *this* file). A reader that opens the path at once may not see that
//! write yet. That holds for a [write behind](#writes-behind) too, whose error is then lost:
//! flush (or close) a `File` before dropping it to know its writes landed. Jobs still queued
//! when the runtime shuts down are dropped unrun.
//!
//! # Sharing a `File`
//!
//! As with `std`, `Read`, `Write` and `Seek` are implemented for `&File` too, so coroutines
//! can share one `File` (in an `Arc`). A call holds the `File`'s lock ([`crate::sync::Mutex`])
//! until its job is done, so calls are whole and in order. The lock's holder waits for a pool
//! thread: a blocking-style call made *from* a pool job (inside `spawn_blocking`) on a `File`
//! that others use can wait for ever if the pool is at `max_blocking_threads`, as with any
//! lock taken there.
//!
//! # The async IO traits
//!
//! `File` implements `futures_io::AsyncRead`, `AsyncWrite` and `AsyncSeek`, and with the
//! `tokio-io` feature `tokio::io::AsyncRead`, `AsyncWrite` and `AsyncSeek` (tokio without its
//! runtime), so `futures::io::copy`, `tokio::io::copy`, `BufReader`, `tokio_util`'s
//! `FramedRead` and the like work on it, in async tasks, in coroutines (through
//! [`block_on`](crate::block_on())) and on plain threads. Each poll runs its part of the work as
//! a pool job that the `File` keeps in flight between polls, the slot a dropped call's job
//! uses, so calls on one `File` — polls, `_async` and blocking-style calls mixed — take effect
//! in the order they were made, and a read after a write sees it. A read whose poll is left
//! pending for another call is undone as a dropped read is (above); if its caller polls again
//! with a smaller buffer, the bytes the buffer cannot take are given back the same way.
//!
//! A poll cannot tell a caller that polls again from a new call: a `poll_read` or `poll_seek`
//! (to the same position) that finds the job an earlier one left pending takes its result. A
//! relative seek (`SeekFrom::Current`) left pending and then made again therefore moves the
//! cursor once, not twice; a seek to another position runs after the first.
//!
//! ## Writes behind
//!
//! As with tokio's `fs::File`, `poll_write` copies the bytes (up to 2 MiB) into the `File`'s
//! buffer, hands them to a pool job that writes them all, and returns `Ok` at once; a pool
//! thread never sees the caller's slice. The next call on the `File`, of any kind, waits for
//! that job, and if it failed returns its error instead of doing its own work (the error is
//! returned once). `poll_flush` and `poll_close` (tokio's `poll_shutdown`) wait for it and
//! return its error; `Write::flush` does too. A `File` dropped with a write behind still
//! writes it, and its error is lost (above). The `_async` and blocking-style writes still
//! wait for their job and return its result.
//!
//! ```
//! use std::io::SeekFrom;
//!
//! use futures::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
//!
//! let rt = corio::Runtime::builder().workers(2).build().unwrap();
//! let path = std::env::temp_dir().join(format!("corio-fs-traits-doc-{}", std::process::id()));
//! let p = path.clone();
//! let text = rt.block_on(async move {
//!     let mut f = corio::fs::File::options()
//!         .read(true)
//!         .write(true)
//!         .create(true)
//!         .truncate(true)
//!         .open_async(&p)
//!         .await?;
//!     f.write_all(b"hello, world").await?; // behind
//!     f.seek(SeekFrom::Start(7)).await?; // after the write
//!     let mut text = String::new();
//!     f.read_to_string(&mut text).await?;
//!     f.close().await?; // nothing behind any more: the writes' errors, if any
//!     std::io::Result::Ok(text)
//! });
//! assert_eq!(text.unwrap(), "world");
//! std::fs::remove_file(path).unwrap();
//! ```
//!
//! The traits are not implemented for `&File` (unlike `Read`, `Write` and `Seek`): a poll
//! through a shared reference would have nowhere to keep its place in the lock's queue
//! between polls, and the job one sharer's poll started would be taken by whichever sharer
//! polled next — one task's read returned to another, the first left waiting unwoken. tokio
//! has none for `&tokio::fs::File` either. Give each task its own `File`.

use std::fmt;
use std::future::Future;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::JoinHandle;
use crate::runtime::context::{self, Here};

mod paths;
mod traits;

pub use paths::*;

/// Most bytes one pool job reads or writes (larger requests are served in parts, as
/// `Read`/`Write` allow); tokio's `fs::File` uses 2 MiB too.
const MAX_CHUNK: usize = 2 * 1024 * 1024;

/// Runs `f` blocking-style where this is called: on the blocking pool from a coroutine (only
/// the coroutine waits), in place on a plain thread.
#[track_caller]
fn run<T, F>(f: F) -> io::Result<T>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    match crate::runtime::pool_or_here(f) {
        Some(result) => join(result)?,
        None => panic!(
            "a blocking-style corio::fs call inside an async task would stall its worker: use \
             the `_async` form and `.await` it"
        ),
    }
}

/// Runs `f` on the blocking pool.
async fn run_async<T, F>(f: F) -> io::Result<T>
where
    F: FnOnce() -> io::Result<T> + Send + 'static,
    T: Send + 'static,
{
    join(crate::spawn_blocking(f).await)?
}

/// A pool job's result: its panic goes on in the caller; a job the runtime cancelled before
/// it ran (it is shutting down: a destructor's call, a handle kept past the runtime's drop) is
/// an error, as a name lookup's is (`net/addr.rs`). It was a panic, which in a destructor run
/// at shutdown aborted the process.
fn join<T>(result: Result<T, crate::JoinError>) -> io::Result<T> {
    match result {
        Ok(v) => Ok(v),
        Err(e) => match e.try_into_panic() {
            Ok(payload) => std::panic::resume_unwind(payload),
            Err(e) => Err(io::Error::other(format!(
                "corio::fs: the call did not run, its runtime is shutting down ({e})"
            ))),
        },
    }
}

/// Reads a whole file (`std::fs::read` on the blocking pool).
///
/// # Panics
///
/// Inside an async task, whose worker it would stall: `.await` the `_async` form there.
#[track_caller]
pub fn read<P: AsRef<Path>>(path: P) -> io::Result<Vec<u8>> {
    let path = path.as_ref().to_owned();
    run(move || std::fs::read(path))
}

/// Reads a whole file.
pub async fn read_async<P: AsRef<Path>>(path: P) -> io::Result<Vec<u8>> {
    let path = path.as_ref().to_owned();
    run_async(move || std::fs::read(path)).await
}

/// Reads a whole UTF-8 file (`std::fs::read_to_string` on the blocking pool).
///
/// # Panics
///
/// Inside an async task, whose worker it would stall: `.await` the `_async` form there.
#[track_caller]
pub fn read_to_string<P: AsRef<Path>>(path: P) -> io::Result<String> {
    let path = path.as_ref().to_owned();
    run(move || std::fs::read_to_string(path))
}

/// Reads a whole UTF-8 file.
pub async fn read_to_string_async<P: AsRef<Path>>(path: P) -> io::Result<String> {
    let path = path.as_ref().to_owned();
    run_async(move || std::fs::read_to_string(path)).await
}

/// Writes a whole file, creating or truncating it (`std::fs::write` on the blocking pool).
///
/// # Panics
///
/// Inside an async task, whose worker it would stall: `.await` the `_async` form there.
#[track_caller]
pub fn write<P: AsRef<Path>, C: AsRef<[u8]>>(path: P, contents: C) -> io::Result<()> {
    let (path, contents) = (path.as_ref().to_owned(), contents.as_ref().to_owned());
    run(move || std::fs::write(path, contents))
}

/// Writes a whole file, creating or truncating it.
pub async fn write_async<P: AsRef<Path>, C: AsRef<[u8]>>(path: P, contents: C) -> io::Result<()> {
    let (path, contents) = (path.as_ref().to_owned(), contents.as_ref().to_owned());
    run_async(move || std::fs::write(path, contents)).await
}

/// An open file whose calls run on the blocking pool (see the module doc).
///
/// `Read`, `Write` and `Seek` (for `File` and, as `std`, for `&File`) are blocking-style;
/// `read_async`, `write_async`, `write_all_async` and `seek_async` are the async forms; and
/// `futures_io::AsyncRead`/`AsyncWrite`/`AsyncSeek` (with the `tokio-io` feature, `tokio::io`'s
/// too) are the ecosystem's ([The async IO traits](self#the-async-io-traits)). The
/// blocking-style and `_async` writes go straight to the file; the traits' `poll_write` goes
/// [behind](self#writes-behind), and then `flush` (any of them) waits for it and returns its
/// error.
///
/// Calls take effect in the order they were made, even when the future of one was dropped
/// before it finished: see [Calls whose future is dropped](self#calls-whose-future-is-dropped).
///
/// # Panics
///
/// The blocking-style calls (`Read`, `Write` and `Seek` included) panic inside an async task,
/// whose worker they would stall: `.await` the `_async` forms there.
///
/// ```
/// use std::io::SeekFrom;
///
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let path = std::env::temp_dir().join(format!("corio-fs-file-doc-{}", std::process::id()));
/// let p = path.clone();
/// let len = rt.block_on(async move {
///     let mut f = corio::fs::File::create_async(&p).await.unwrap();
///     f.write_all_async(b"0123456789").await.unwrap();
///     f.set_len_async(4).await.unwrap();
///     f.seek_async(SeekFrom::End(0)).await.unwrap();
///     f.write_all_async(b"!").await.unwrap();
///     f.sync_data_async().await.unwrap();
///     f.metadata_async().await.unwrap().len()
/// });
/// assert_eq!(len, 5);
/// assert_eq!(std::fs::read(&path).unwrap(), b"0123!");
/// std::fs::remove_file(path).unwrap();
/// ```
pub struct File {
    /// The file. Each pool job holds a clone, so the descriptor stays open until the last job
    /// that uses it has finished, even after the `File` is dropped: its number cannot be reused
    /// by another `open` while a job may still read or write through it.
    std: Arc<std::fs::File>,
    /// Guarded by this (corio) mutex for the `&self` calls; the `&mut self` calls reach it
    /// with `get_mut`.
    state: crate::sync::Mutex<State>,
}

/// What a [`File`] keeps between calls.
struct State {
    /// The buffer that goes to the pool and back; empty while a job has it.
    buf: Vec<u8>,
    /// Bytes that the job of a dropped read brought in from a file that cannot seek back (a
    /// pipe), which the caller never saw: the next read returns them first.
    /// `unread[unread_at..]` are still due.
    unread: Vec<u8>,
    unread_at: usize,
    /// The job of the call being made, or of one whose future was dropped, or of an async
    /// trait's poll (`fs/traits.rs`): the next call waits for it first ([`State::settle`]).
    in_flight: Option<InFlight>,
    /// The error of a write behind (`poll_write`, which returned before its job ran), kept
    /// when a call settled that job: the next call returns it instead of doing its own work
    /// ([Writes behind](self#writes-behind)).
    write_error: Option<io::Error>,
}

/// A job on the pool, and who takes what it brings back.
struct InFlight {
    job: JoinHandle<Done>,
    by: By,
}

/// Who takes the result of the job in flight.
///
/// A call that finds a job it did not start settles it ([`State::poll_settle`]): as the job
/// of a dropped call, except a write behind, whose error it keeps. An async trait's poll that
/// finds the job an earlier poll of the same kind started takes its result instead.
#[derive(Clone, Copy, Debug, PartialEq)]
enum By {
    /// An `_async` or blocking-style call, which awaits it; found by another call, it is the
    /// job of a call whose future was dropped.
    Call,
    /// `poll_read`: the next `poll_read` returns what it read.
    PollRead,
    /// `poll_write`: a write behind, already reported written.
    PollWrite,
    /// `poll_seek` to this position (`start_seek`, in tokio's trait): the next `poll_seek`
    /// to the same position (`poll_complete`) returns where it went.
    PollSeek(SeekFrom),
}

/// What a pool job hands back.
enum Done {
    /// A read, and the buffer holding what it read.
    Read(io::Result<usize>, Vec<u8>),
    /// A write, and its buffer.
    Write(io::Result<usize>, Vec<u8>),
    Seek(io::Result<u64>),
    Unit(io::Result<()>),
    Metadata(io::Result<std::fs::Metadata>),
}

/// Where a call's job runs: on the pool (coroutines, async tasks) or in place (a plain thread).
#[derive(Clone, Copy)]
enum Via {
    Pool,
    InPlace,
}

// A panic cannot leave `State` half-updated: each call changes it only after its job's result
// is in hand, in steps that do not panic (a job's own panic is resumed after `in_flight` is
// cleared). So, as `std::fs::File`, a `File` may be used after a caught panic; the `UnsafeCell`
// inside the corio `Mutex` would otherwise remove these.
impl std::panic::UnwindSafe for File {}
impl std::panic::RefUnwindSafe for File {}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the buffer: after a large read it holds megabytes.
        f.debug_tuple("File").field(&*self.std).finish()
    }
}

/// The opening mode, as `std::fs::OpenOptions`; [`open`](Self::open) runs on the pool.
#[derive(Clone, Debug)]
pub struct OpenOptions(std::fs::OpenOptions);

impl OpenOptions {
    /// Options with nothing set (`std::fs::OpenOptions::new`).
    #[allow(clippy::new_without_default)]
    pub fn new() -> OpenOptions {
        OpenOptions(std::fs::OpenOptions::new())
    }

    /// Opens for reading.
    pub fn read(&mut self, on: bool) -> &mut OpenOptions {
        self.0.read(on);
        self
    }

    /// Opens for writing.
    pub fn write(&mut self, on: bool) -> &mut OpenOptions {
        self.0.write(on);
        self
    }

    /// Appends.
    pub fn append(&mut self, on: bool) -> &mut OpenOptions {
        self.0.append(on);
        self
    }

    /// Truncates.
    pub fn truncate(&mut self, on: bool) -> &mut OpenOptions {
        self.0.truncate(on);
        self
    }

    /// Creates if missing.
    pub fn create(&mut self, on: bool) -> &mut OpenOptions {
        self.0.create(on);
        self
    }

    /// Creates, failing if it exists.
    pub fn create_new(&mut self, on: bool) -> &mut OpenOptions {
        self.0.create_new(on);
        self
    }

    /// The permission bits of a file this creates (before the umask), as
    /// `std::os::unix::fs::OpenOptionsExt::mode`; 0o666 unless set.
    ///
    /// ```
    /// use std::os::unix::fs::PermissionsExt;
    ///
    /// let path = std::env::temp_dir().join(format!("corio-fs-mode-doc-{}", std::process::id()));
    /// let f = corio::fs::File::options().write(true).create_new(true).mode(0o600).open(&path);
    /// assert_eq!(f.unwrap().metadata().unwrap().permissions().mode() & 0o777, 0o600);
    /// std::fs::remove_file(path).unwrap();
    /// ```
    pub fn mode(&mut self, mode: u32) -> &mut OpenOptions {
        std::os::unix::fs::OpenOptionsExt::mode(&mut self.0, mode);
        self
    }

    /// Extra `open(2)` flags (`libc::O_NOFOLLOW`, `O_DIRECT`, ...), as
    /// `std::os::unix::fs::OpenOptionsExt::custom_flags`.
    pub fn custom_flags(&mut self, flags: i32) -> &mut OpenOptions {
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut self.0, flags);
        self
    }

    /// Opens `path`, blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task, whose worker it would stall: `.await` the `_async` form there.
    #[track_caller]
    pub fn open<P: AsRef<Path>>(&self, path: P) -> io::Result<File> {
        let (options, path) = (self.0.clone(), path.as_ref().to_owned());
        run(move || options.open(path)).map(File::from_std)
    }

    /// Opens `path`.
    pub async fn open_async<P: AsRef<Path>>(&self, path: P) -> io::Result<File> {
        let (options, path) = (self.0.clone(), path.as_ref().to_owned());
        run_async(move || options.open(path))
            .await
            .map(File::from_std)
    }
}

/// The descriptor, as `std::fs::File`'s. A job of a dropped call may still be using it (see
/// [Calls whose future is dropped](self#calls-whose-future-is-dropped)).
impl std::os::fd::AsFd for File {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.std.as_fd()
    }
}

impl std::os::fd::AsRawFd for File {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.std.as_raw_fd()
    }
}

/// Options set on a `std` value (any `OpenOptionsExt` setting included).
impl From<std::fs::OpenOptions> for OpenOptions {
    fn from(options: std::fs::OpenOptions) -> OpenOptions {
        OpenOptions(options)
    }
}

impl State {
    fn new() -> State {
        State {
            buf: Vec::new(),
            unread: Vec::new(),
            unread_at: 0,
            in_flight: None,
            write_error: None,
        }
    }

    /// How many read bytes the caller has not seen (see `unread`).
    fn unread_len(&self) -> usize {
        self.unread.len() - self.unread_at
    }

    /// Waits for the job of a call whose future was dropped, if any, and keeps what it
    /// brought back (step 1 in [Calls whose future is dropped](self#calls-whose-future-is-dropped)),
    /// then returns the error of a write behind, if one failed.
    async fn settle(&mut self, file: &Arc<std::fs::File>) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_settle(cx, file)).await;
        self.take_write_error()
    }

    /// Waits for the job in flight, whoever started it, and keeps what it brought back: the
    /// buffer for reuse; a read's bytes, over which it then moves the cursor back (step 3);
    /// a write behind's error, for the next call ([Writes behind](self#writes-behind)).
    fn poll_settle(&mut self, cx: &mut Context<'_>, file: &Arc<std::fs::File>) -> Poll<()> {
        while let Some(in_flight) = &mut self.in_flight {
            let done = std::task::ready!(Pin::new(&mut in_flight.job).poll(cx));
            let by = in_flight.by;
            self.in_flight = None;
            match (done, by) {
                (Ok(Done::Write(r, buf)), By::PollWrite) => {
                    self.buf = buf;
                    if let Err(e) = r {
                        self.keep_write_error(e);
                    }
                }
                // Cancelled at runtime shutdown before it ran (or, never seen, a panic): the
                // caller was told its bytes were taken, so this is its error.
                (Err(e), By::PollWrite) => self.keep_write_error(io::Error::other(format!(
                    "corio::fs: a write behind did not run to its end: {e}"
                ))),
                (Ok(Done::Read(Ok(n), mut buf)), _) if n > 0 => {
                    buf.truncate(n);
                    self.give_back(file, buf, 0);
                }
                (Ok(done), _) => self.settled(done),
                // Its panic went unseen (as its result); cancelled only at runtime shutdown.
                (Err(_), _) => {}
            }
        }
        Poll::Ready(())
    }

    /// Keeps `buf[at..]`, read from the file but never returned, as the unread bytes and
    /// moves the cursor back over them (step 3), in place: `lseek` by an offset from the
    /// current position does no IO. Nothing between the two can stop half-way (no pool job,
    /// so no spawn, whose preemption point could cancel a coroutine there); a file that
    /// cannot seek keeps the bytes for the next read (`settled`).
    fn give_back(&mut self, file: &std::fs::File, buf: Vec<u8>, at: usize) {
        let back = (buf.len() - at) as i64; // <= MAX_CHUNK
        let spare = std::mem::replace(&mut self.unread, buf);
        if self.buf.capacity() < spare.capacity() {
            self.buf = spare;
        }
        self.unread_at = at;
        let mut file = file;
        self.settled(Done::Seek(file.seek(SeekFrom::Current(-back))));
    }

    /// Keeps a write behind's error for the next call (there is at most one: a write behind
    /// starts only after the last one's error was taken).
    fn keep_write_error(&mut self, e: io::Error) {
        self.write_error.get_or_insert(e);
    }

    /// The error of a write behind that failed, once.
    fn take_write_error(&mut self) -> io::Result<()> {
        self.write_error.take().map_or(Ok(()), Err)
    }

    /// Drops the unread bytes (the cursor is no longer after them); their vector becomes the
    /// buffer if that has none.
    fn forget_unread(&mut self) {
        if self.buf.capacity() < self.unread.capacity() {
            self.buf = std::mem::take(&mut self.unread);
        }
        self.unread.clear();
        self.unread_at = 0;
    }

    /// Keeps what the finished job of a dropped call (other than a read that read something)
    /// brought back.
    fn settled(&mut self, done: Done) {
        match done {
            Done::Read(_, buf) | Done::Write(_, buf) => self.buf = buf,
            // The cursor is where the seek put it (or back over the unread bytes): they are
            // not due any more.
            Done::Seek(Ok(_)) => self.forget_unread(),
            // A pipe or a terminal cannot seek (nor, rarely, a seek back that failed): its
            // unread bytes stay due to the next read.
            Done::Seek(Err(_)) | Done::Unit(_) | Done::Metadata(_) => {}
        }
    }

    /// Runs `job` (step 2): on the pool it is the call in flight until it finishes, so
    /// that if this future is dropped meanwhile the next call waits for it.
    async fn call<F>(&mut self, via: Via, job: F) -> io::Result<Done>
    where
        F: FnOnce() -> Done + Send + 'static,
    {
        match via {
            Via::InPlace => Ok(job()),
            Via::Pool => {
                debug_assert!(self.in_flight.is_none(), "settle first");
                let in_flight = self.in_flight.insert(InFlight {
                    job: crate::spawn_blocking(job),
                    by: By::Call,
                });
                let done = (&mut in_flight.job).await;
                self.in_flight = None;
                join(done)
            }
        }
    }

    async fn read(
        &mut self,
        via: Via,
        file: &Arc<std::fs::File>,
        out: &mut [u8],
    ) -> io::Result<usize> {
        self.settle(file).await?;
        if self.unread_len() > 0 {
            let n = self.unread_len().min(out.len());
            out[..n].copy_from_slice(&self.unread[self.unread_at..][..n]);
            self.unread_at += n;
            if self.unread_len() == 0 {
                self.forget_unread();
            }
            return Ok(n);
        }
        let (file, mut buf) = (file.clone(), std::mem::take(&mut self.buf));
        buf.resize(out.len().min(MAX_CHUNK), 0);
        let job = move || {
            let r = (&*file).read(&mut buf);
            Done::Read(r, buf)
        };
        let Done::Read(r, buf) = self.call(via, job).await? else {
            unreachable!("a read job reads")
        };
        self.buf = buf;
        let n = r?;
        out[..n].copy_from_slice(&self.buf[..n]);
        Ok(n)
    }

    async fn write(
        &mut self,
        via: Via,
        file: &Arc<std::fs::File>,
        data: &[u8],
    ) -> io::Result<usize> {
        self.settle(file).await?;
        let (file, mut buf) = (file.clone(), std::mem::take(&mut self.buf));
        buf.clear();
        buf.extend_from_slice(&data[..data.len().min(MAX_CHUNK)]);
        let job = move || {
            let r = (&*file).write(&buf);
            Done::Write(r, buf)
        };
        let Done::Write(r, buf) = self.call(via, job).await? else {
            unreachable!("a write job writes")
        };
        self.buf = buf;
        r
    }

    async fn seek(
        &mut self,
        via: Via,
        file: &Arc<std::fs::File>,
        pos: SeekFrom,
    ) -> io::Result<u64> {
        self.settle(file).await?;
        let file = file.clone();
        let Done::Seek(r) = self
            .call(via, move || Done::Seek((&*file).seek(pos)))
            .await?
        else {
            unreachable!("a seek job seeks")
        };
        if r.is_ok() {
            self.forget_unread();
        }
        r
    }

    /// A call that neither moves the cursor nor reads: `sync_all`, `set_len`, ...
    async fn unit(
        &mut self,
        via: Via,
        file: &Arc<std::fs::File>,
        f: fn(&std::fs::File) -> io::Result<()>,
    ) -> io::Result<()> {
        self.settle(file).await?;
        let file = file.clone();
        let Done::Unit(r) = self.call(via, move || Done::Unit(f(&file))).await? else {
            unreachable!("a unit job")
        };
        r
    }

    async fn set_len(&mut self, via: Via, file: &Arc<std::fs::File>, size: u64) -> io::Result<()> {
        self.settle(file).await?;
        let file = file.clone();
        let Done::Unit(r) = self
            .call(via, move || Done::Unit(file.set_len(size)))
            .await?
        else {
            unreachable!("a set_len job")
        };
        r
    }

    async fn metadata(
        &mut self,
        via: Via,
        file: &Arc<std::fs::File>,
    ) -> io::Result<std::fs::Metadata> {
        self.settle(file).await?;
        let file = file.clone();
        let Done::Metadata(r) = self
            .call(via, move || Done::Metadata(file.metadata()))
            .await?
        else {
            unreachable!("a metadata job")
        };
        r
    }
}

/// Runs a `File` call blocking-style: `call` gets where its job runs (the pool in a coroutine,
/// in place on a plain thread) and the returned future is waited for as `block_on` waits.
///
/// On a thread the future is ready at its first poll unless the job of a dropped call is
/// still running, so it is polled once first: only that rare case parks the thread (through
/// `block_on`, which refuses a runtime worker's own thread, where the old in-place call
/// worked and still does).
#[track_caller]
fn blocking_style<F: Future>(call: impl FnOnce(Via) -> F) -> F::Output {
    match context::here() {
        Here::Stackful(_) => crate::block_on(call(Via::Pool)),
        Here::Stackless => panic!(
            "a blocking-style corio::fs call inside an async task would stall its worker: use \
             the `_async` form and `.await` it"
        ),
        Here::Thread => {
            let mut fut = pin!(call(Via::InPlace));
            match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
                Poll::Ready(v) => v,
                Poll::Pending => crate::block_on(fut),
            }
        }
    }
}

impl File {
    /// Opens `path` for reading.
    ///
    /// # Panics
    ///
    /// Inside an async task, whose worker it would stall: `.await` the `_async` form there.
    #[track_caller]
    pub fn open<P: AsRef<Path>>(path: P) -> io::Result<File> {
        OpenOptions::new().read(true).open(path)
    }

    /// Opens `path` for reading.
    pub async fn open_async<P: AsRef<Path>>(path: P) -> io::Result<File> {
        OpenOptions::new().read(true).open_async(path).await
    }

    /// Creates (or truncates) `path` for writing.
    ///
    /// # Panics
    ///
    /// Inside an async task, whose worker it would stall: `.await` the `_async` form there.
    #[track_caller]
    pub fn create<P: AsRef<Path>>(path: P) -> io::Result<File> {
        File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
    }

    /// Creates (or truncates) `path` for writing.
    pub async fn create_async<P: AsRef<Path>>(path: P) -> io::Result<File> {
        let mut options = File::options();
        options.write(true).create(true).truncate(true);
        options.open_async(path).await
    }

    /// Opening options.
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// Wraps an open `std` file.
    pub fn from_std(file: std::fs::File) -> File {
        File {
            std: Arc::new(file),
            state: crate::sync::Mutex::new(State::new()),
        }
    }

    /// Reads into `buf`.
    pub async fn read_async(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.state.get_mut().read(Via::Pool, &self.std, buf).await
    }

    /// Writes (part of) `buf`.
    pub async fn write_async(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.state.get_mut().write(Via::Pool, &self.std, buf).await
    }

    /// Writes all of `buf`.
    ///
    /// As `std::io::Write::write_all`: a write interrupted by a signal (`Interrupted`) is
    /// retried, one that writes nothing is `WriteZero`.
    pub async fn write_all_async(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write_async(buf).await {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Moves the cursor.
    pub async fn seek_async(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.state.get_mut().seek(Via::Pool, &self.std, pos).await
    }

    /// `fsync`: data and metadata reach the disk, blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task, whose worker it would stall: `.await` the `_async` form there.
    #[track_caller]
    pub fn sync_all(&self) -> io::Result<()> {
        blocking_style(|via| async move {
            let mut state = self.state.lock_async().await;
            state.unit(via, &self.std, std::fs::File::sync_all).await
        })
    }

    /// `fsync`: data and metadata reach the disk.
    pub async fn sync_all_async(&self) -> io::Result<()> {
        let mut state = self.state.lock_async().await;
        state
            .unit(Via::Pool, &self.std, std::fs::File::sync_all)
            .await
    }

    /// `fdatasync`: data (and the metadata needed to read it back) reach the disk,
    /// blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task, whose worker it would stall: `.await` the `_async` form there.
    #[track_caller]
    pub fn sync_data(&self) -> io::Result<()> {
        blocking_style(|via| async move {
            let mut state = self.state.lock_async().await;
            state.unit(via, &self.std, std::fs::File::sync_data).await
        })
    }

    /// `fdatasync`: data (and the metadata needed to read it back) reach the disk.
    pub async fn sync_data_async(&self) -> io::Result<()> {
        let mut state = self.state.lock_async().await;
        state
            .unit(Via::Pool, &self.std, std::fs::File::sync_data)
            .await
    }

    /// The file's metadata, blocking-style.
    ///
    /// # Panics
    ///
    /// Inside an async task, whose worker it would stall: `.await` the `_async` form there.
    #[track_caller]
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        blocking_style(|via| async move {
            let mut state = self.state.lock_async().await;
            state.metadata(via, &self.std).await
        })
    }

    /// The file's metadata.
    pub async fn metadata_async(&self) -> io::Result<std::fs::Metadata> {
        let mut state = self.state.lock_async().await;
        state.metadata(Via::Pool, &self.std).await
    }

    /// Truncates or extends the file to `size` bytes, blocking-style. The cursor does not
    /// move (as `std`).
    ///
    /// # Panics
    ///
    /// Inside an async task, whose worker it would stall: `.await` the `_async` form there.
    #[track_caller]
    pub fn set_len(&self, size: u64) -> io::Result<()> {
        blocking_style(|via| async move {
            let mut state = self.state.lock_async().await;
            state.set_len(via, &self.std, size).await
        })
    }

    /// Truncates or extends the file to `size` bytes. The cursor does not move (as `std`).
    pub async fn set_len_async(&self, size: u64) -> io::Result<()> {
        let mut state = self.state.lock_async().await;
        state.set_len(Via::Pool, &self.std, size).await
    }
}

impl Read for File {
    /// Blocking-style (see the module doc).
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (state, file) = (self.state.get_mut(), &self.std);
        blocking_style(|via| state.read(via, file, buf))
    }
}

impl Write for File {
    /// Blocking-style (see the module doc).
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (state, file) = (self.state.get_mut(), &self.std);
        blocking_style(|via| state.write(via, file, buf))
    }

    /// Waits for the job of a call whose future was dropped or of a write behind (the async
    /// traits' `poll_write`), and returns the error of a write behind that failed. (`write`
    /// itself goes straight to the file.)
    #[track_caller]
    fn flush(&mut self) -> io::Result<()> {
        let (state, file) = (self.state.get_mut(), &self.std);
        blocking_style(|_| state.settle(file))
    }
}

impl Seek for File {
    /// Blocking-style (see the module doc).
    #[track_caller]
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let (state, file) = (self.state.get_mut(), &self.std);
        blocking_style(|via| state.seek(via, file, pos))
    }
}

/// As `std`'s `impl Read for &File`: several coroutines may share one `File`. Each call holds
/// the `File`'s lock until its job is done, so calls do not interleave inside one another.
///
/// ```
/// use std::io::{Read, Write};
/// use std::sync::Arc;
///
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let path = std::env::temp_dir().join(format!("corio-fs-shared-doc-{}", std::process::id()));
/// let p = path.clone();
/// let len = rt.run(move || {
///     let f = Arc::new(corio::fs::File::create(&p).unwrap());
///     let writers: Vec<_> = (0..2)
///         .map(|_| {
///             let f = f.clone();
///             corio::go(move || (&*f).write_all(b"0123456789").unwrap())
///         })
///         .collect();
///     writers.into_iter().for_each(|w| w.join().unwrap());
///     f.metadata().unwrap().len()
/// });
/// assert_eq!(len, 20);
/// std::fs::remove_file(path).unwrap();
/// ```
impl Read for &File {
    /// Blocking-style (see the module doc).
    #[track_caller]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let file = *self;
        blocking_style(|via| async move {
            let mut state = file.state.lock_async().await;
            state.read(via, &file.std, buf).await
        })
    }
}

/// As `std`'s `impl Write for &File` (see `Read for &File`).
impl Write for &File {
    /// Blocking-style (see the module doc).
    #[track_caller]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let file = *self;
        blocking_style(|via| async move {
            let mut state = file.state.lock_async().await;
            state.write(via, &file.std, buf).await
        })
    }

    /// As `File`'s: waits for the job of a call whose future was dropped or of a write
    /// behind, and returns the error of a write behind that failed.
    #[track_caller]
    fn flush(&mut self) -> io::Result<()> {
        let file = *self;
        blocking_style(|_| async move {
            let mut state = file.state.lock_async().await;
            state.settle(&file.std).await
        })
    }
}

/// As `std`'s `impl Seek for &File` (see `Read for &File`).
impl Seek for &File {
    /// Blocking-style (see the module doc).
    #[track_caller]
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let file = *self;
        blocking_style(|via| async move {
            let mut state = file.state.lock_async().await;
            state.seek(via, &file.std, pos).await
        })
    }
}
