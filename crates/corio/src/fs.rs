//! Files, through the blocking pool: a coroutine never blocks its worker on disk.
//!
//! Linux has no readiness for regular files (epoll refuses them; a "nonblocking" read of a
//! file blocks on the disk anyway), so — as Go does by entering a syscall and tokio by
//! `spawn_blocking` — every call here runs the `std::fs` call on the runtime's blocking pool.
//! The blocking-style forms wait for it as `block_on` waits: only the coroutine is suspended
//! (on a plain thread the call simply runs in place; inside an async task they panic with
//! advice). The `_async` forms are for async tasks.
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

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::runtime::context::{self, Here};

/// Most bytes one pool job reads or writes (larger requests are served in parts, as
/// `Read`/`Write` allow); tokio's `fs::File` uses 2 MiB too.
const MAX_CHUNK: usize = 2 * 1024 * 1024;

/// Runs `f` blocking-style where this is called: on the blocking pool from a coroutine (only
/// the coroutine waits), in place on a plain thread.
#[track_caller]
fn run<T, F>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match context::here() {
        Here::Stackful(_) => join(crate::block_on(crate::spawn_blocking(f))),
        Here::Stackless => panic!(
            "a blocking-style corio::fs call inside an async task would stall its worker: use \
             the `_async` form and `.await` it"
        ),
        Here::Thread => f(),
    }
}

/// Runs `f` on the blocking pool.
async fn run_async<T, F>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    join(crate::spawn_blocking(f).await)
}

/// A pool job's result: its panic goes on in the caller.
fn join<T>(result: Result<T, crate::JoinError>) -> T {
    match result {
        Ok(v) => v,
        Err(e) => match e.try_into_panic() {
            Ok(payload) => std::panic::resume_unwind(payload),
            Err(e) => panic!("corio::fs: the blocking pool dropped the call: {e}"),
        },
    }
}

/// Reads a whole file (`std::fs::read` on the blocking pool).
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
/// `Read`, `Write` and `Seek` are blocking-style; `read_async`, `write_async`,
/// `write_all_async` and `seek_async` are the async forms. Writes go straight to the file (no
/// write-behind), so `flush` has nothing to do.
#[derive(Debug)]
pub struct File {
    file: Arc<std::fs::File>,
    /// The buffer that goes to the pool and back; empty while a call has it.
    buf: Vec<u8>,
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

    /// Opens `path`, blocking-style.
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

impl File {
    /// Opens `path` for reading.
    #[track_caller]
    pub fn open<P: AsRef<Path>>(path: P) -> io::Result<File> {
        OpenOptions::new().read(true).open(path)
    }

    /// Opens `path` for reading.
    pub async fn open_async<P: AsRef<Path>>(path: P) -> io::Result<File> {
        OpenOptions::new().read(true).open_async(path).await
    }

    /// Creates (or truncates) `path` for writing.
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
            file: Arc::new(file),
            buf: Vec::new(),
        }
    }

    /// The job of a read of up to `len` bytes: returns the buffer holding what was read.
    fn read_job(
        &mut self,
        len: usize,
    ) -> impl FnOnce() -> (io::Result<usize>, Vec<u8>) + Send + 'static {
        let (file, mut buf) = (self.file.clone(), std::mem::take(&mut self.buf));
        buf.resize(len.min(MAX_CHUNK), 0);
        move || {
            let r = (&*file).read(&mut buf);
            (r, buf)
        }
    }

    /// Copies a finished read out and keeps the buffer.
    fn read_done(
        &mut self,
        (r, buf): (io::Result<usize>, Vec<u8>),
        out: &mut [u8],
    ) -> io::Result<usize> {
        self.buf = buf;
        let n = r?;
        out[..n].copy_from_slice(&self.buf[..n]);
        Ok(n)
    }

    /// The job of a write of (a first part of) `data`.
    fn write_job(
        &mut self,
        data: &[u8],
    ) -> impl FnOnce() -> (io::Result<usize>, Vec<u8>) + Send + 'static {
        let (file, mut buf) = (self.file.clone(), std::mem::take(&mut self.buf));
        buf.clear();
        buf.extend_from_slice(&data[..data.len().min(MAX_CHUNK)]);
        move || {
            let r = (&*file).write(&buf);
            (r, buf)
        }
    }

    fn write_done(&mut self, (r, buf): (io::Result<usize>, Vec<u8>)) -> io::Result<usize> {
        self.buf = buf;
        r
    }

    /// Reads into `buf`.
    pub async fn read_async(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let done = run_async(self.read_job(buf.len())).await;
        self.read_done(done, buf)
    }

    /// Writes (part of) `buf`.
    pub async fn write_async(&mut self, buf: &[u8]) -> io::Result<usize> {
        let done = run_async(self.write_job(buf)).await;
        self.write_done(done)
    }

    /// Writes all of `buf`.
    pub async fn write_all_async(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write_async(buf).await? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => buf = &buf[n..],
            }
        }
        Ok(())
    }

    /// Moves the cursor.
    pub async fn seek_async(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let file = self.file.clone();
        run_async(move || (&*file).seek(pos)).await
    }

    /// `fsync`, blocking-style.
    #[track_caller]
    pub fn sync_all(&self) -> io::Result<()> {
        let file = self.file.clone();
        run(move || file.sync_all())
    }

    /// `fsync`.
    pub async fn sync_all_async(&self) -> io::Result<()> {
        let file = self.file.clone();
        run_async(move || file.sync_all()).await
    }

    /// The file's metadata, blocking-style.
    #[track_caller]
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        let file = self.file.clone();
        run(move || file.metadata())
    }

    /// Truncates or extends the file to `size` bytes, blocking-style.
    #[track_caller]
    pub fn set_len(&self, size: u64) -> io::Result<()> {
        let file = self.file.clone();
        run(move || file.set_len(size))
    }
}

impl Read for File {
    /// Blocking-style (see the module doc).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let done = run(self.read_job(buf.len()));
        self.read_done(done, buf)
    }
}

impl Write for File {
    /// Blocking-style (see the module doc).
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let done = run(self.write_job(buf));
        self.write_done(done)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for File {
    /// Blocking-style (see the module doc).
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let file = self.file.clone();
        run(move || (&*file).seek(pos))
    }
}

/// Creates a directory and its parents, blocking-style (on the pool in a coroutine).
#[track_caller]
pub fn create_dir_all<P: AsRef<Path>>(path: P) -> io::Result<()> {
    let path: PathBuf = path.as_ref().to_owned();
    run(move || std::fs::create_dir_all(path))
}

/// Removes a file, blocking-style (on the pool in a coroutine).
#[track_caller]
pub fn remove_file<P: AsRef<Path>>(path: P) -> io::Result<()> {
    let path: PathBuf = path.as_ref().to_owned();
    run(move || std::fs::remove_file(path))
}
