//! tokio 1.54's file-system test suite, ported to `corio::fs`.
//!
//! From `tokio-1.54.1/tests/`: `fs.rs`, `fs_file.rs`, `fs_dir.rs`, `fs_copy.rs`, `fs_link.rs`,
//! `fs_open_options.rs`, `fs_remove_dir_all.rs`, `fs_remove_file.rs`, `fs_rename.rs`,
//! `fs_write.rs`, `fs_try_exists.rs`, `fs_canonicalize_dir.rs` and `fs_file_join_error.rs`; and,
//! moved onto a `File`, three tests of `io_buf_reader.rs` / `io_buf_writer.rs` (which run them
//! on in-memory readers) that seek or read through a buffer over the file.
//!
//! Where tokio's test is async, the port runs it in an async task on a corio worker with the
//! `_async` forms or the `futures_io` traits on `File`; where it is cheap, the same behaviour
//! runs blocking-style in a coroutine too. The tests that need `tokio::io`'s traits on `File`
//! are in `tokio_traits`, behind the `tokio-io` feature. Each test's `///` line names the tokio
//! test it ports.
//!
//! # Not ported
//!
//! - `fs.rs` `try_clone_should_preserve_max_buf_size`: no `File::try_clone`, no `max_buf_size`.
//! - `fs_file.rs` `write_to_clone`: no `File::try_clone`.
//! - `fs_file.rs` `write_into_std`, `write_into_std_immediate`: no `File::into_std` or
//!   `try_into_std`.
//! - `fs_file.rs` `read_file_from_unix_fd`: no `File::into_std`, no `FromRawFd`/`IntoRawFd`.
//! - `fs_file.rs` `set_times`: no `File::set_times` (nor `FileTimes`).
//! - `fs_file.rs` `set_max_buf_size_read`, `set_max_buf_size_write`,
//!   `set_max_buf_size_panics_on_zero`: no `set_max_buf_size` (the chunk is a fixed 2 MiB).
//! - `fs_file.rs` `unix_fd_is_valid`: in `fs_review.rs` already
//!   (`a_file_lends_its_descriptor_as_a_std_file_does`).
//! - `fs_file.rs` `windows_handle`, `file_debug_fmt` (Windows form): Windows only.
//! - `fs_dir.rs` `build_dir_mode_read_only`: no `DirBuilder`, so no mode for a new directory.
//! - `fs_canonicalize_dir.rs` `canonicalize_root_dir_windows`: Windows only.
//! - `fs_uring*.rs`, `fs_open_options_windows.rs`, `fs_symlink_*_windows.rs`: io_uring, Windows.
//! - `io_buf_reader.rs`, `io_buf_writer.rs`: no test there uses a `File`. Three are moved onto
//!   one (`test_buffered_reader`, `test_buffered_reader_seek`, `buf_writer_seek`); the rest test
//!   the buffers themselves against mocks (pending polls, short reads, vectored writes).
//!
//! Ported with a substitute for a missing API: `fs_file.rs` `read_file_from_std` (no
//! `From<std::fs::File>`: `File::from_std`), `fs_copy.rs` `copy_permissions` (no
//! `File::set_permissions`: the path call), `fs_dir.rs` `build_dir` (no `DirBuilder`:
//! `create_dir_all` and `create_dir`), `fs_dir.rs` `read_dir_entry_info` (no async
//! `DirEntry::metadata`: `symlink_metadata_async` on its path, as `read_dir`'s doc advises),
//! `fs_link.rs` `test_symlink` (no `corio::fs::symlink`: the link is made with `std`).

#[macro_use]
mod support;

use std::future::Future;
use std::io::{IoSlice, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, mpsc};
use std::task::{Context, Waker};

use corio::fs::{File, OpenOptions};
use futures::FutureExt;
use futures::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use support::{EVENTUALLY, TempDir, within};

const HELLO: &[u8] = b"hello world...";

/// Runs `fut` as an async task on `rt`'s workers and returns its output; its panic is resumed
/// here.
fn in_task<T, F>(rt: &corio::Runtime, fut: F) -> T
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    match rt.block_on(rt.spawn(fut)) {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("the task did not finish: {e}"),
    }
}

/// A `std` file at `path`, created empty, open for reading and writing (tokio's tests use a
/// `NamedTempFile`, which is).
fn std_rw(path: &Path) -> std::fs::File {
    std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .unwrap()
}

/// `path` holding `HELLO`.
fn hello_at(path: &Path) -> PathBuf {
    std::fs::write(path, HELLO).unwrap();
    path.to_owned()
}

rt_common! {
    /// tokio `fs.rs` `path_read_write`.
    #[test]
    fn path_read_write() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("path-read-write-{WORKERS}"));
            let rt = rt();
            let p = dir.join("bar");
            let out = in_task(&rt, async move {
                corio::fs::write_async(&p, b"bytes").await.unwrap();
                corio::fs::read_async(&p).await.unwrap()
            });
            assert_eq!(out, b"bytes");
            let p = dir.join("baz");
            let out = rt.run(move || {
                corio::fs::write(&p, b"bytes").unwrap();
                corio::fs::read(&p).unwrap()
            });
            assert_eq!(out, b"bytes");
        });
    }

    /// tokio `fs_file.rs` `basic_read`.
    #[test]
    fn basic_read() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("basic-read-{WORKERS}"));
            let rt = rt();
            let p = hello_at(&dir.join("f"));
            in_task(&rt, async move {
                let mut file = File::open_async(&p).await.unwrap();
                let mut buf = [0u8; 1024];
                let n = file.read_async(&mut buf).await.unwrap();
                assert_eq!(&buf[..n], HELLO);
                // Through the futures trait, from a fresh `File`.
                let mut file = File::open_async(&p).await.unwrap();
                let n = AsyncReadExt::read(&mut file, &mut buf).await.unwrap();
                assert_eq!(&buf[..n], HELLO);
            });
            let p = dir.join("f");
            rt.run(move || {
                let mut file = File::open(&p).unwrap();
                let mut buf = [0u8; 1024];
                let n = Read::read(&mut file, &mut buf).unwrap();
                assert_eq!(&buf[..n], HELLO);
            });
        });
    }

    /// tokio `fs_file.rs` `basic_write`.
    #[test]
    fn basic_write() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("basic-write-{WORKERS}"));
            let rt = rt();
            let (a, b, c) = (dir.join("a"), dir.join("b"), dir.join("c"));
            let (pa, pb) = (a.clone(), b.clone());
            in_task(&rt, async move {
                // The futures trait: the write goes behind, the flush waits for it.
                let mut file = File::create_async(&pa).await.unwrap();
                AsyncWriteExt::write_all(&mut file, HELLO).await.unwrap();
                AsyncWriteExt::flush(&mut file).await.unwrap();
                // The `_async` form, which waits for its own job.
                let mut file = File::create_async(&pb).await.unwrap();
                file.write_all_async(HELLO).await.unwrap();
            });
            assert_eq!(std::fs::read(&a).unwrap(), HELLO);
            assert_eq!(std::fs::read(&b).unwrap(), HELLO);
            let pc = c.clone();
            rt.run(move || {
                let mut file = File::create(&pc).unwrap();
                Write::write_all(&mut file, HELLO).unwrap();
                Write::flush(&mut file).unwrap();
            });
            assert_eq!(std::fs::read(&c).unwrap(), HELLO);
        });
    }

    /// tokio `fs_file.rs` `basic_write_and_shutdown` (futures' `close` is tokio's `shutdown`).
    #[test]
    fn basic_write_and_shutdown() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("basic-write-shutdown-{WORKERS}"));
            let path = dir.join("f");
            let p = path.clone();
            in_task(&rt(), async move {
                let mut file = File::create_async(&p).await.unwrap();
                AsyncWriteExt::write_all(&mut file, HELLO).await.unwrap();
                AsyncWriteExt::close(&mut file).await.unwrap();
            });
            assert_eq!(std::fs::read(&path).unwrap(), HELLO);
        });
    }

    /// tokio `fs_file.rs` `write_vectored`.
    #[test]
    fn write_vectored() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("write-vectored-{WORKERS}"));
            let path = dir.join("f");
            let p = path.clone();
            in_task(&rt(), async move {
                let mut file = File::create_async(&p).await.unwrap();
                let bufs = [IoSlice::new(HELLO), IoSlice::new(HELLO)];
                let n = AsyncWriteExt::write_vectored(&mut file, &bufs).await.unwrap();
                assert_eq!(n, HELLO.len() * 2);
                AsyncWriteExt::flush(&mut file).await.unwrap();
            });
            assert_eq!(std::fs::read(&path).unwrap(), [HELLO, HELLO].concat());
        });
    }

    /// tokio `fs_file.rs` `write_vectored_and_shutdown`.
    #[test]
    fn write_vectored_and_shutdown() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("write-vectored-shutdown-{WORKERS}"));
            let path = dir.join("f");
            let p = path.clone();
            in_task(&rt(), async move {
                let mut file = File::create_async(&p).await.unwrap();
                let bufs = [IoSlice::new(HELLO), IoSlice::new(HELLO)];
                let n = AsyncWriteExt::write_vectored(&mut file, &bufs).await.unwrap();
                assert_eq!(n, HELLO.len() * 2);
                AsyncWriteExt::close(&mut file).await.unwrap();
            });
            assert_eq!(std::fs::read(&path).unwrap(), [HELLO, HELLO].concat());
        });
    }

    /// tokio `fs_file.rs` `rewind_seek_position`.
    #[test]
    fn rewind_seek_position() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("rewind-{WORKERS}"));
            let rt = rt();
            let p = dir.join("f");
            in_task(&rt, async move {
                let mut file = File::create_async(&p).await.unwrap();
                AsyncSeekExt::seek(&mut file, SeekFrom::Current(10)).await.unwrap();
                AsyncSeekExt::seek(&mut file, SeekFrom::Start(0)).await.unwrap();
                assert_eq!(AsyncSeekExt::stream_position(&mut file).await.unwrap(), 0);
                // The `_async` form.
                assert_eq!(file.seek_async(SeekFrom::Current(10)).await.unwrap(), 10);
                assert_eq!(file.seek_async(SeekFrom::Start(0)).await.unwrap(), 0);
                assert_eq!(file.seek_async(SeekFrom::Current(0)).await.unwrap(), 0);
            });
            let p = dir.join("g");
            rt.run(move || {
                let mut file = File::create(&p).unwrap();
                Seek::seek(&mut file, SeekFrom::Current(10)).unwrap();
                Seek::rewind(&mut file).unwrap();
                assert_eq!(Seek::stream_position(&mut file).unwrap(), 0);
            });
        });
    }

    /// tokio `fs_file.rs` `buf_reader_seek_after_write`, with futures' `BufReader`.
    #[test]
    fn buf_reader_seek_after_write() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("buf-reader-seek-after-write-{WORKERS}"));
            let cases = [
                (SeekFrom::Start(0), 0),
                (SeekFrom::End(-2), HELLO.len() - 2),
                (SeekFrom::Current(-2), HELLO.len() - 2),
            ];
            let rt = rt();
            for (i, (seek, expected)) in cases.into_iter().enumerate() {
                let file = File::from_std(std_rw(&dir.join(&format!("f{i}"))));
                in_task(&rt, async move {
                    let mut reader = futures::io::BufReader::new(file);
                    AsyncWriteExt::write_all(&mut reader, HELLO).await.unwrap();
                    let at = AsyncSeekExt::seek(&mut reader, seek).await.unwrap();
                    assert_eq!(at, expected as u64, "{seek:?}");
                    let mut contents = Vec::new();
                    AsyncReadExt::read_to_end(&mut reader, &mut contents).await.unwrap();
                    assert_eq!(contents, &HELLO[expected..], "{seek:?}");
                });
            }
        });
    }

    /// tokio `fs_file.rs` `read_file_from_std` (`File::from_std` for tokio's `File::from`).
    #[test]
    fn read_file_from_std() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("from-std-{WORKERS}"));
            let rt = rt();
            let p = hello_at(&dir.join("f"));
            let std_file = std::fs::File::open(&p).unwrap();
            in_task(&rt, async move {
                let mut file = File::from_std(std_file);
                let mut buf = [0u8; 1024];
                let n = file.read_async(&mut buf).await.unwrap();
                assert_eq!(&buf[..n], HELLO);
            });
            let std_file = std::fs::File::open(&p).unwrap();
            rt.run(move || {
                let mut file = File::from_std(std_file);
                let mut buf = [0u8; 1024];
                let n = Read::read(&mut file, &mut buf).unwrap();
                assert_eq!(&buf[..n], HELLO);
            });
        });
    }

    /// tokio `fs_file.rs` `empty_read`.
    #[test]
    fn empty_read() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("empty-read-{WORKERS}"));
            let rt = rt();
            let p = hello_at(&dir.join("f"));
            in_task(&rt, async move {
                let mut file = File::open_async(&p).await.unwrap();
                // The trait's empty read is ready at once and is not an end of file.
                let empty = AsyncReadExt::read(&mut file, &mut []).now_or_never();
                assert!(matches!(empty, Some(Ok(0))), "{empty:?}");
                let mut buf = [0u8; 1024];
                let n = AsyncReadExt::read(&mut file, &mut buf).await.unwrap();
                assert_eq!(&buf[..n], HELLO);
                // The `_async` form: 0 too, and the next read still gets everything.
                let mut file = File::open_async(&p).await.unwrap();
                assert_eq!(file.read_async(&mut []).await.unwrap(), 0);
                let n = file.read_async(&mut buf).await.unwrap();
                assert_eq!(&buf[..n], HELLO);
            });
            let p = dir.join("f");
            rt.run(move || {
                let mut file = File::open(&p).unwrap();
                assert_eq!(Read::read(&mut file, &mut []).unwrap(), 0);
                let mut buf = [0u8; 1024];
                let n = Read::read(&mut file, &mut buf).unwrap();
                assert_eq!(&buf[..n], HELLO);
            });
        });
    }

    /// tokio `fs_file.rs` `file_debug_fmt` (Unix form): the `std` file's fields show.
    #[test]
    fn file_debug_fmt() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("debug-fmt-{WORKERS}"));
            let p = hello_at(&dir.join("f"));
            let shown = in_task(&rt(), async move {
                format!("{:?}", File::open_async(&p).await.unwrap())
            });
            assert!(shown.contains("File { fd:"), "{shown}");
        });
    }

    /// tokio `fs_dir.rs` `create_dir`.
    #[test]
    fn create_dir() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("create-dir-{WORKERS}"));
            let rt = rt();
            let p = dir.join("foo");
            in_task(&rt, async move { corio::fs::create_dir_async(&p).await.unwrap() });
            assert!(dir.join("foo").is_dir());
            let p = dir.join("bar");
            rt.run(move || corio::fs::create_dir(&p).unwrap());
            assert!(dir.join("bar").is_dir());
        });
    }

    /// tokio `fs_dir.rs` `create_all`.
    #[test]
    fn create_all() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("create-all-{WORKERS}"));
            let rt = rt();
            let p = dir.join("foo").join("bar");
            in_task(&rt, async move { corio::fs::create_dir_all_async(&p).await.unwrap() });
            assert!(dir.join("foo").join("bar").is_dir());
            let p = dir.join("baz").join("qux");
            rt.run(move || corio::fs::create_dir_all(&p).unwrap());
            assert!(dir.join("baz").join("qux").is_dir());
        });
    }

    /// tokio `fs_dir.rs` `build_dir`: `create_dir_all` for the recursive builder, `create_dir`
    /// (an error on an existing directory) for the non-recursive one.
    #[test]
    fn build_dir() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("build-dir-{WORKERS}"));
            let p = dir.join("foo").join("bar");
            in_task(&rt(), async move {
                corio::fs::create_dir_all_async(&p).await.unwrap();
                assert!(p.is_dir());
                let e = corio::fs::create_dir_async(&p).await.unwrap_err();
                assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
                // A recursive create of what exists is not an error.
                corio::fs::create_dir_all_async(&p).await.unwrap();
            });
        });
    }

    /// tokio `fs_dir.rs` `remove`.
    #[test]
    fn remove() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("remove-dir-{WORKERS}"));
            let rt = rt();
            let (a, b) = (dir.join("foo"), dir.join("bar"));
            std::fs::create_dir(&a).unwrap();
            std::fs::create_dir(&b).unwrap();
            let p = a.clone();
            in_task(&rt, async move { corio::fs::remove_dir_async(&p).await.unwrap() });
            assert!(!a.exists());
            let p = b.clone();
            rt.run(move || corio::fs::remove_dir(&p).unwrap());
            assert!(!b.exists());
        });
    }

    /// tokio `fs_dir.rs` `read_inherent`.
    #[test]
    fn read_inherent() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("read-inherent-{WORKERS}"));
            for name in ["aa", "bb", "cc"] {
                std::fs::create_dir(dir.join(name)).unwrap();
            }
            let names = |entries: Vec<std::fs::DirEntry>| {
                let mut names: Vec<String> = entries
                    .into_iter()
                    .map(|e| e.file_name().into_string().unwrap())
                    .collect();
                names.sort(); // the order is the file system's
                names
            };
            let rt = rt();
            let p = dir.path();
            let listed = in_task(&rt, async move { corio::fs::read_dir_async(&p).await.unwrap() });
            assert_eq!(names(listed), ["aa", "bb", "cc"]);
            let p = dir.path();
            let listed = rt.run(move || corio::fs::read_dir(&p).unwrap());
            assert_eq!(names(listed), ["aa", "bb", "cc"]);
        });
    }

    /// tokio `fs_dir.rs` `read_dir_entry_info`.
    #[test]
    fn read_dir_entry_info() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("read-dir-entry-info-{WORKERS}"));
            let rt = rt();
            let (d, file_path) = (dir.path(), dir.join("a.txt"));
            let fp = file_path.clone();
            in_task(&rt, async move {
                corio::fs::write_async(&fp, b"Hello File!").await.unwrap();
                let entries = corio::fs::read_dir_async(&d).await.unwrap();
                assert_eq!(entries.len(), 1);
                let first = &entries[0];
                assert_eq!(first.path(), fp);
                assert_eq!(first.file_name(), "a.txt");
                let meta = corio::fs::symlink_metadata_async(first.path()).await.unwrap();
                assert!(meta.is_file());
                assert!(first.file_type().unwrap().is_file());
            });
            let d = dir.path();
            rt.run(move || {
                let entries = corio::fs::read_dir(&d).unwrap();
                assert_eq!(entries.len(), 1);
                assert_eq!(entries[0].path(), file_path);
                assert!(corio::fs::metadata(entries[0].path()).unwrap().is_file());
            });
        });
    }

    /// tokio `fs_copy.rs` `copy`.
    #[test]
    fn copy() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("copy-{WORKERS}"));
            let rt = rt();
            let (src, dst) = (dir.join("foo.txt"), dir.join("bar.txt"));
            let (s, d) = (src.clone(), dst.clone());
            in_task(&rt, async move {
                corio::fs::write_async(&s, b"Hello File!").await.unwrap();
                assert_eq!(corio::fs::copy_async(&s, &d).await.unwrap(), 11);
                let from = corio::fs::read_async(&s).await.unwrap();
                let to = corio::fs::read_async(&d).await.unwrap();
                assert_eq!(from, to);
            });
            let again = dir.join("baz.txt");
            rt.run(move || {
                assert_eq!(corio::fs::copy(&src, &again).unwrap(), 11);
                assert_eq!(corio::fs::read(&again).unwrap(), corio::fs::read(&dst).unwrap());
            });
        });
    }

    /// tokio `fs_copy.rs` `copy_permissions` (`corio::fs::set_permissions_async` on the path:
    /// `File` has no `set_permissions`).
    #[test]
    fn copy_permissions() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("copy-permissions-{WORKERS}"));
            let (from_path, to_path) = (dir.join("foo.txt"), dir.join("bar.txt"));
            in_task(&rt(), async move {
                let from = File::create_async(&from_path).await.unwrap();
                let mut from_perms = from.metadata_async().await.unwrap().permissions();
                from_perms.set_readonly(true);
                corio::fs::set_permissions_async(&from_path, from_perms.clone()).await.unwrap();
                corio::fs::copy_async(&from_path, &to_path).await.unwrap();
                let to_perms = corio::fs::metadata_async(&to_path).await.unwrap().permissions();
                assert_eq!(from_perms, to_perms);
            });
        });
    }

    /// tokio `fs_link.rs` `test_hard_link`.
    #[test]
    fn test_hard_link() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("hard-link-{WORKERS}"));
            let rt = rt();
            let (src, dst) = (dir.join("src.txt"), dir.join("dst.txt"));
            std::fs::write(&src, b"hello").unwrap();
            let (s, d) = (src.clone(), dst.clone());
            in_task(&rt, async move {
                corio::fs::hard_link_async(&s, &d).await.unwrap();
                // Rewritten in place (truncated, not replaced): both names see it.
                std::fs::File::create(&s).unwrap().write_all(b"new-data").unwrap();
                assert_eq!(corio::fs::read_async(&d).await.unwrap(), b"new-data");
                assert!(corio::fs::read_link_async(&d).await.is_err(), "not a symbolic link");
            });
            let other = dir.join("other.txt");
            rt.run(move || {
                corio::fs::hard_link(&src, &other).unwrap();
                assert_eq!(corio::fs::read(&other).unwrap(), b"new-data");
                assert!(corio::fs::read_link(&other).is_err());
                assert_eq!(std::fs::read(&dst).unwrap(), b"new-data");
            });
        });
    }

    /// tokio `fs_link.rs` `test_symlink` (the link is made with `std`: corio has no `symlink`).
    #[test]
    fn test_symlink() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("symlink-{WORKERS}"));
            let (src, dst) = (dir.join("src.txt"), dir.join("dst.txt"));
            std::fs::write(&src, b"hello").unwrap();
            std::os::unix::fs::symlink(&src, &dst).unwrap();
            std::fs::File::create(&src).unwrap().write_all(b"new-data").unwrap();
            in_task(&rt(), async move {
                assert_eq!(corio::fs::read_async(&dst).await.unwrap(), b"new-data");
                assert_eq!(corio::fs::read_link_async(&dst).await.unwrap(), src);
                let link = corio::fs::symlink_metadata_async(&dst).await.unwrap();
                assert!(link.file_type().is_symlink());
                assert!(corio::fs::metadata_async(&dst).await.unwrap().is_file());
            });
        });
    }

    /// tokio `fs_link.rs` `test_hard_link_error_source_not_found`.
    #[test]
    fn test_hard_link_error_source_not_found() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("hard-link-no-source-{WORKERS}"));
            let rt = rt();
            let (src, dst) = (dir.join("nonexistent.txt"), dir.join("dst.txt"));
            let (s, d) = (src.clone(), dst.clone());
            let e = in_task(&rt, async move { corio::fs::hard_link_async(&s, &d).await });
            assert_eq!(e.unwrap_err().kind(), std::io::ErrorKind::NotFound);
            let e = rt.run(move || corio::fs::hard_link(&src, &dst));
            assert_eq!(e.unwrap_err().kind(), std::io::ErrorKind::NotFound);
        });
    }

    /// tokio `fs_link.rs` `test_hard_link_error_destination_already_exists`.
    #[test]
    fn test_hard_link_error_destination_already_exists() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("hard-link-dst-exists-{WORKERS}"));
            let rt = rt();
            let (src, dst) = (dir.join("src.txt"), dir.join("dst.txt"));
            std::fs::write(&src, b"source content").unwrap();
            std::fs::write(&dst, b"destination content").unwrap();
            let (s, d) = (src.clone(), dst.clone());
            let e = in_task(&rt, async move { corio::fs::hard_link_async(&s, &d).await });
            assert_eq!(e.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
            let e = rt.run(move || corio::fs::hard_link(&src, &dst));
            assert_eq!(e.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
            assert_eq!(std::fs::read(dir.join("dst.txt")).unwrap(), b"destination content");
        });
    }

    /// tokio `fs_link.rs` `test_hard_link_error_source_is_directory`.
    #[test]
    fn test_hard_link_error_source_is_directory() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("hard-link-dir-{WORKERS}"));
            let (src, dst) = (dir.join("src_directory"), dir.join("dst.txt"));
            let e = in_task(&rt(), async move {
                corio::fs::create_dir_async(&src).await.unwrap();
                corio::fs::hard_link_async(&src, &dst).await.unwrap_err()
            });
            // Linux refuses a hard link to a directory with EPERM.
            assert!(
                matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::Other
                ),
                "{e:?}"
            );
        });
    }

    /// tokio `fs_open_options.rs` `open_with_open_options_and_read`.
    #[test]
    fn open_with_open_options_and_read() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("open-options-read-{WORKERS}"));
            let rt = rt();
            let p = hello_at(&dir.join("f"));
            in_task(&rt, async move {
                let mut file = OpenOptions::new().read(true).open_async(&p).await.unwrap();
                let mut buf = [0u8; 1024];
                let n = AsyncReadExt::read(&mut file, &mut buf).await.unwrap();
                assert_eq!(&buf[..n], HELLO);
            });
            let p = dir.join("f");
            rt.run(move || {
                let mut file = OpenOptions::new().read(true).open(&p).unwrap();
                let mut buf = [0u8; 1024];
                let n = Read::read(&mut file, &mut buf).unwrap();
                assert_eq!(&buf[..n], HELLO);
            });
        });
    }

    /// tokio `fs_remove_dir_all.rs` `remove_dir_all`.
    #[test]
    fn remove_dir_all() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("remove-dir-all-{WORKERS}"));
            let rt = rt();
            let test_dir = dir.join("test");
            let file_path = test_dir.join("a.txt");
            let (t, f) = (test_dir.clone(), file_path.clone());
            in_task(&rt, async move {
                corio::fs::create_dir_async(&t).await.unwrap();
                corio::fs::write_async(&f, b"Hello File!").await.unwrap();
                corio::fs::remove_dir_all_async(&t).await.unwrap();
                assert!(!corio::fs::try_exists_async(&t).await.unwrap());
                assert!(!corio::fs::try_exists_async(&f).await.unwrap());
            });
            rt.run(move || {
                corio::fs::create_dir(&test_dir).unwrap();
                corio::fs::write(&file_path, b"Hello File!").unwrap();
                corio::fs::remove_dir_all(&test_dir).unwrap();
                assert!(!corio::fs::try_exists(&test_dir).unwrap());
                assert!(!corio::fs::try_exists(&file_path).unwrap());
            });
        });
    }

    /// tokio `fs_remove_file.rs` `remove_file`.
    #[test]
    fn remove_file() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("remove-file-{WORKERS}"));
            let rt = rt();
            let file_path = dir.join("a.txt");
            let f = file_path.clone();
            in_task(&rt, async move {
                corio::fs::write_async(&f, b"Hello File!").await.unwrap();
                assert!(corio::fs::try_exists_async(&f).await.unwrap());
                corio::fs::remove_file_async(&f).await.unwrap();
                assert!(!corio::fs::try_exists_async(&f).await.unwrap());
            });
            rt.run(move || {
                corio::fs::write(&file_path, b"Hello File!").unwrap();
                assert!(corio::fs::try_exists(&file_path).unwrap());
                corio::fs::remove_file(&file_path).unwrap();
                assert!(!corio::fs::try_exists(&file_path).unwrap());
            });
        });
    }

    /// tokio `fs_rename.rs` `rename_file`.
    #[test]
    fn rename_file() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("rename-{WORKERS}"));
            let rt = rt();
            let (a, b, c) = (dir.join("a.txt"), dir.join("b.txt"), dir.join("c.txt"));
            let (pa, pb) = (a.clone(), b.clone());
            in_task(&rt, async move {
                corio::fs::write_async(&pa, b"Hello File!").await.unwrap();
                assert!(corio::fs::try_exists_async(&pa).await.unwrap());
                corio::fs::rename_async(&pa, &pb).await.unwrap();
                assert!(corio::fs::try_exists_async(&pb).await.unwrap());
                assert!(!corio::fs::try_exists_async(&pa).await.unwrap());
            });
            rt.run(move || {
                corio::fs::rename(&b, &c).unwrap();
                assert!(corio::fs::try_exists(&c).unwrap());
                assert!(!corio::fs::try_exists(&b).unwrap());
                assert!(!corio::fs::try_exists(&a).unwrap());
                assert_eq!(corio::fs::read(&c).unwrap(), b"Hello File!");
            });
        });
    }

    /// tokio `fs_write.rs` `write`.
    #[test]
    fn write() {
        within(EVENTUALLY, || {
            let dir = TempDir::new(&format!("write-{WORKERS}"));
            let rt = rt();
            let path = dir.join("test.txt");
            let p = path.clone();
            let contents = in_task(&rt, async move {
                corio::fs::write_async(&p, "Hello, World!").await.unwrap();
                corio::fs::read_to_string_async(&p).await.unwrap()
            });
            assert_eq!(contents, "Hello, World!");
            let contents = rt.run(move || {
                corio::fs::write(&path, "Hello again").unwrap();
                corio::fs::read_to_string(&path).unwrap()
            });
            assert_eq!(contents, "Hello again");
        });
    }

    /// tokio `fs_canonicalize_dir.rs` `canonicalize_root_dir_unix`.
    #[test]
    fn canonicalize_root_dir_unix() {
        within(EVENTUALLY, || {
            let rt = rt();
            let root = in_task(&rt, async { corio::fs::canonicalize_async("/.").await.unwrap() });
            assert_eq!(root.to_str().unwrap(), "/");
            let root = rt.run(|| corio::fs::canonicalize("/.").unwrap());
            assert_eq!(root.to_str().unwrap(), "/");
        });
    }
}

/// tokio `fs_file.rs` `coop`: a task whose every call is a file read or seek still lets
/// the other tasks of its worker run (tokio checks that it yields). With one worker, the other
/// task runs only when the looping one yields, and it stops the loop only after it has seen
/// ten rounds of it: finishing is the assertion.
#[test]
fn coop() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("coop");
        let p = hello_at(&dir.join("f"));
        let rt = support::rt(1); // one worker: the looping task and the other share it
        let (stop, rounds) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicU64::new(0)),
        );
        let (s, r, p2) = (stop.clone(), rounds.clone(), p.clone());
        rt.block_on(async move {
            let looping = corio::spawn(async move {
                let mut file = File::open_async(&p2).await.unwrap();
                let mut buf = [0u8; 1024];
                while !s.load(SeqCst) {
                    let _ = file.read_async(&mut buf).await.unwrap();
                    file.seek_async(SeekFrom::Start(0)).await.unwrap();
                    // The traits' forms too.
                    let _ = AsyncReadExt::read(&mut file, &mut buf).await.unwrap();
                    AsyncSeekExt::seek(&mut file, SeekFrom::Start(0))
                        .await
                        .unwrap();
                    r.fetch_add(1, SeqCst);
                }
            });
            let stopper = corio::spawn(async move {
                while rounds.load(SeqCst) < 10 {
                    corio::yield_now_async().await;
                }
                stop.store(true, SeqCst);
            });
            stopper.await.unwrap();
            looping.await.unwrap();
        });
        // Blocking-style, in coroutines.
        rt.run(move || {
            let (stop, rounds) = (
                Arc::new(AtomicBool::new(false)),
                Arc::new(AtomicU64::new(0)),
            );
            let (s, r) = (stop.clone(), rounds.clone());
            let looping = corio::go(move || {
                let mut file = File::open(&p).unwrap();
                let mut buf = [0u8; 1024];
                while !s.load(SeqCst) {
                    let _ = Read::read(&mut file, &mut buf).unwrap();
                    Seek::rewind(&mut file).unwrap();
                    r.fetch_add(1, SeqCst);
                }
            });
            let stopper = corio::go(move || {
                while rounds.load(SeqCst) < 10 {
                    corio::yield_now();
                }
                stop.store(true, SeqCst);
            });
            stopper.join().unwrap();
            looping.join().unwrap();
        });
    });
}

/// tokio `fs_open_options.rs` `open_options_write`: the option is kept (tokio reads it from
/// `Debug`), and a file opened with it can be written in place, one opened without cannot.
#[test]
fn open_options_write() {
    assert!(format!("{:?}", OpenOptions::new().write(true)).contains("write: true"));
    within(EVENTUALLY, || {
        let dir = TempDir::new("open-options-write");
        let path = dir.join("f");
        std::fs::write(&path, "abc").unwrap();
        let p = path.clone();
        in_task(&support::rt(2), async move {
            let mut f = OpenOptions::new().write(true).open_async(&p).await.unwrap();
            f.write_all_async(b"X").await.unwrap();
            let mut f = OpenOptions::new().read(true).open_async(&p).await.unwrap();
            let e = f.write_async(b"Y").await.unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EBADF));
        });
        assert_eq!(std::fs::read(&path).unwrap(), b"Xbc");
    });
}

/// tokio `fs_open_options.rs` `open_options_append`: kept, and every write goes to the end,
/// wherever the cursor was moved.
#[test]
fn open_options_append() {
    assert!(format!("{:?}", OpenOptions::new().append(true)).contains("append: true"));
    within(EVENTUALLY, || {
        let dir = TempDir::new("open-options-append");
        let path = dir.join("f");
        std::fs::write(&path, "abc").unwrap();
        let p = path.clone();
        in_task(&support::rt(2), async move {
            let mut f = OpenOptions::new()
                .append(true)
                .open_async(&p)
                .await
                .unwrap();
            f.seek_async(SeekFrom::Start(0)).await.unwrap();
            f.write_all_async(b"Z").await.unwrap();
            AsyncSeekExt::seek(&mut f, SeekFrom::Start(1))
                .await
                .unwrap();
            AsyncWriteExt::write_all(&mut f, b"W").await.unwrap();
            AsyncWriteExt::close(&mut f).await.unwrap();
        });
        assert_eq!(std::fs::read(&path).unwrap(), b"abcZW");
    });
}

/// tokio `fs_open_options.rs` `open_options_truncate`: kept, and the file opens empty.
#[test]
fn open_options_truncate() {
    assert!(format!("{:?}", OpenOptions::new().truncate(true)).contains("truncate: true"));
    within(EVENTUALLY, || {
        let dir = TempDir::new("open-options-truncate");
        let path = dir.join("f");
        std::fs::write(&path, "abc").unwrap();
        let p = path.clone();
        let len = in_task(&support::rt(2), async move {
            let f = OpenOptions::new()
                .write(true)
                .truncate(true)
                .open_async(&p)
                .await;
            f.unwrap().metadata_async().await.unwrap().len()
        });
        assert_eq!(len, 0);
        assert_eq!(std::fs::read(&path).unwrap(), b"");
    });
}

/// tokio `fs_open_options.rs` `open_options_create`: kept, and a missing file is created (and
/// without it, not found).
#[test]
fn open_options_create() {
    assert!(format!("{:?}", OpenOptions::new().create(true)).contains("create: true"));
    within(EVENTUALLY, || {
        let dir = TempDir::new("open-options-create");
        let path = dir.join("f");
        let p = path.clone();
        in_task(&support::rt(2), async move {
            let e = OpenOptions::new()
                .write(true)
                .open_async(&p)
                .await
                .unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
            OpenOptions::new()
                .write(true)
                .create(true)
                .open_async(&p)
                .await
                .unwrap();
        });
        assert!(path.is_file());
    });
}

/// tokio `fs_open_options.rs` `open_options_create_new`: kept, and an existing file is an
/// error.
#[test]
fn open_options_create_new() {
    assert!(format!("{:?}", OpenOptions::new().create_new(true)).contains("create_new: true"));
    within(EVENTUALLY, || {
        let dir = TempDir::new("open-options-create-new");
        let path = dir.join("f");
        let p = path.clone();
        in_task(&support::rt(2), async move {
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            let mut f = options.open_async(&p).await.unwrap();
            f.write_all_async(b"first").await.unwrap();
            let e = options.open_async(&p).await.unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        });
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
    });
}

/// tokio `fs_open_options.rs` `open_options_mode` (what the mode does to a new file is in
/// `fs_review.rs`).
#[test]
fn open_options_mode() {
    let mode = format!("{:?}", OpenOptions::new().mode(0o644));
    assert!(
        mode.contains("mode: 420") || mode.contains("mode: 0o000644"),
        "mode is: {mode}"
    );
}

/// tokio `fs_open_options.rs` `open_options_custom_flags_linux`: kept, and `O_TRUNC` given as
/// a custom flag truncates.
#[test]
fn open_options_custom_flags_linux() {
    let shown = format!("{:?}", OpenOptions::new().custom_flags(libc::O_TRUNC));
    assert!(shown.contains("custom_flags: 512"), "{shown}");
    within(EVENTUALLY, || {
        let dir = TempDir::new("open-options-custom-flags");
        let path = dir.join("f");
        std::fs::write(&path, "abc").unwrap();
        let p = path.clone();
        in_task(&support::rt(2), async move {
            let mut options = OpenOptions::new();
            options.write(true).custom_flags(libc::O_TRUNC);
            options.open_async(&p).await.unwrap();
        });
        assert_eq!(std::fs::read(&path).unwrap(), b"");
    });
}

/// tokio `fs_try_exists.rs` `try_exists`.
#[test]
fn try_exists() {
    use std::os::unix::fs::PermissionsExt;
    within(EVENTUALLY, || {
        let dir = TempDir::new("try-exists");
        let d = dir.path();
        in_task(&support::rt(2), async move {
            let existing = d.join("foo.txt");
            corio::fs::write_async(&existing, b"Hello File!")
                .await
                .unwrap();
            assert!(corio::fs::try_exists_async(&existing).await.unwrap());
            assert!(
                !corio::fs::try_exists_async(d.join("bar.txt"))
                    .await
                    .unwrap()
            );
            // A directory that may not be searched: whether its file exists cannot be told.
            // root may search any directory (tokio skips this as root on FreeBSD for the same
            // reason), so only another user sees the error.
            let locked = d.join("baz");
            corio::fs::create_dir_async(&locked).await.unwrap();
            let inside = locked.join("baz.txt");
            corio::fs::write_async(&inside, b"Hello File!")
                .await
                .unwrap();
            let mut perms = corio::fs::metadata_async(&locked)
                .await
                .unwrap()
                .permissions();
            perms.set_mode(0o244);
            corio::fs::set_permissions_async(&locked, perms)
                .await
                .unwrap();
            let r = corio::fs::try_exists_async(&inside).await;
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } != 0 {
                assert_eq!(r.unwrap_err().kind(), std::io::ErrorKind::PermissionDenied);
            }
            let perms = std::fs::Permissions::from_mode(0o755);
            corio::fs::set_permissions_async(&locked, perms)
                .await
                .unwrap();
            // What any user can see: a loop of symbolic links cannot be followed.
            let looped = d.join("loop");
            std::os::unix::fs::symlink(&looped, &looped).unwrap();
            let e = corio::fs::try_exists_async(&looped).await.unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        });
    });
}

/// A runtime's handle after the runtime was shut down: its blocking pool takes no more jobs,
/// so every call's job is cancelled unrun (tokio's test shuts its runtime down the same way).
fn dead_pool_handle() -> corio::Handle {
    let rt = support::rt(1);
    let handle = rt.handle().clone();
    rt.shutdown_timeout(std::time::Duration::ZERO);
    handle
}

/// tokio `fs_file_join_error.rs` `file_ops_survive_join_error`: every call on a `File` whose
/// job never runs fails with an `io::Error` (no panic), and the `File` stays usable: its cursor
/// and contents are as before, and calls made where they can run succeed.
#[test]
fn file_ops_survive_join_error() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("join-error");
        let path = dir.join("f");
        std::fs::write(&path, vec![b'x'; 4096]).unwrap();
        let open = {
            let path = path.clone();
            move || {
                let f = std::fs::File::options().read(true).write(true).open(&path);
                File::from_std(f.unwrap())
            }
        };
        let handle = dead_pool_handle();
        let p = path.clone();
        let files = handle.block_on(async move {
            let mut buf = [0u8; 8];
            // The `_async` forms, each twice on its own `File`.
            let mut reads = open();
            assert!(reads.read_async(&mut buf).await.is_err());
            assert!(reads.read_async(&mut buf).await.is_err());
            let mut seeks = open();
            assert!(seeks.seek_async(SeekFrom::Start(1)).await.is_err());
            assert!(seeks.seek_async(SeekFrom::Start(1)).await.is_err());
            let lens = open();
            assert!(lens.set_len_async(0).await.is_err());
            assert!(lens.set_len_async(0).await.is_err());
            let mut writes = open();
            assert!(writes.write_async(b"z").await.is_err());
            assert!(writes.write_async(b"z").await.is_err());
            // The traits' forms: a read then a flush; a seek then a seek.
            let mut polled = open();
            assert!(AsyncReadExt::read(&mut polled, &mut buf).await.is_err());
            AsyncWriteExt::flush(&mut polled).await.unwrap(); // nothing behind
            assert!(
                AsyncSeekExt::seek(&mut polled, SeekFrom::Start(1))
                    .await
                    .is_err()
            );
            assert!(
                AsyncSeekExt::seek(&mut polled, SeekFrom::Start(1))
                    .await
                    .is_err()
            );
            // A write behind is taken (it reports its bytes at once); its job never ran, so
            // the flush after it is the error, once.
            let mut behind = open();
            assert_eq!(AsyncWriteExt::write(&mut behind, b"z").await.unwrap(), 1);
            assert!(AsyncWriteExt::flush(&mut behind).await.is_err());
            AsyncWriteExt::flush(&mut behind).await.unwrap();
            // The path calls too.
            assert!(corio::fs::read_async(&p).await.is_err());
            assert!(corio::fs::metadata_async(&p).await.is_err());
            [reads, seeks, lens, writes, polled, behind]
        });
        // Nothing ran: the contents are whole, and on this thread (where the calls run in
        // place) each `File` reads from where its cursor was, the start.
        assert_eq!(std::fs::read(&path).unwrap(), vec![b'x'; 4096]);
        let mut files = files;
        for (i, f) in files.iter_mut().enumerate() {
            let mut buf = [0u8; 8];
            assert_eq!(Read::read(f, &mut buf).unwrap(), 8, "file {i}");
            assert_eq!(&buf, b"xxxxxxxx", "file {i}");
            assert_eq!(Seek::stream_position(f).unwrap(), 8, "file {i}");
        }
        // And a live runtime's async task can use them.
        in_task(&support::rt(2), async move {
            for (i, mut f) in files.into_iter().enumerate() {
                let mut buf = [0u8; 8];
                assert_eq!(f.read_async(&mut buf).await.unwrap(), 8, "file {i}");
                assert_eq!(
                    f.seek_async(SeekFrom::Current(0)).await.unwrap(),
                    16,
                    "file {i}"
                );
            }
        });
    });
}

/// One worker and a blocking pool of one thread, so that pool jobs run one at a time in the
/// order they were queued.
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

/// Polls `fut` once with a waker that does nothing (true if it was pending); the caller then
/// drops it, as tokio's `poll_once` does.
fn poll_once<F: Future>(fut: F) -> bool {
    let mut fut = pin!(fut);
    fut.as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_pending()
}

/// tokio `fs_file_join_error.rs` `file_ops_survive_join_error`, with the jobs cancelled while
/// they wait in the pool's queue (the runtime shuts down under them) rather than at spawn:
/// each call is polled once and dropped, as tokio's are, and the `File` must stay usable.
#[test]
fn file_ops_survive_join_error_of_a_queued_job() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("join-error-queued");
        let path = dir.join("f");
        std::fs::write(&path, vec![b'x'; 4096]).unwrap();
        let open = {
            let path = path.clone();
            move || {
                let f = std::fs::File::options().read(true).write(true).open(&path);
                File::from_std(f.unwrap())
            }
        };
        let rt = rt_one_pool_thread();
        let (files, gate) = rt.block_on(async {
            let gate = hold_the_pool(); // every job below waits behind this one
            let mut buf = [0u8; 8];
            let mut read = open();
            poll_once(read.read_async(&mut buf));
            let mut seek = open();
            poll_once(seek.seek_async(SeekFrom::Start(1)));
            let set_len = open();
            poll_once(set_len.set_len_async(0));
            let mut write = open();
            poll_once(write.write_async(b"z"));
            let mut polled_read = open();
            poll_once(AsyncReadExt::read(&mut polled_read, &mut buf));
            let mut polled_seek = open();
            poll_once(AsyncSeekExt::seek(&mut polled_seek, SeekFrom::Start(1)));
            let files = [read, seek, set_len, write, polled_read, polled_seek];
            (files, gate)
        });
        let behind = rt.block_on(async {
            let mut behind = open();
            // Taken at once: the bytes go behind, in a job queued behind the gate.
            assert_eq!(AsyncWriteExt::write(&mut behind, b"z").await.unwrap(), 1);
            behind
        });
        rt.shutdown_timeout(std::time::Duration::ZERO); // the queued jobs are dropped unrun
        drop(gate);
        // On this thread the calls run in place. None of the jobs ran: each `File` reads
        // from the start, and the contents are whole.
        for (i, mut f) in files.into_iter().enumerate() {
            let mut buf = [0u8; 8];
            assert_eq!(Read::read(&mut f, &mut buf).unwrap(), 8, "file {i}");
            assert_eq!(&buf, b"xxxxxxxx", "file {i}");
            assert_eq!(Seek::stream_position(&mut f).unwrap(), 8, "file {i}");
        }
        // The write behind never ran: the next call reports it, once.
        let mut behind = behind;
        assert!(Write::flush(&mut behind).is_err());
        Write::flush(&mut behind).unwrap();
        assert_eq!(Seek::stream_position(&mut behind).unwrap(), 0);
        assert_eq!(std::fs::read(&path).unwrap(), vec![b'x'; 4096]);
    });
}

/// tokio `fs_file_join_error.rs` `file_ops_survive_join_error`, where the job that cannot run
/// is the one that gives a dropped read's bytes back: a read's job ran and its future was
/// dropped, and the next call (which must first move the cursor back over those bytes) is
/// made where no job can run. That call fails; the `File` must still be as the module doc
/// promises, "a dropped read is as if it had not been made": its cursor where the caller
/// left it, so a later write lands there and a later relative seek counts from there.
#[test]
fn file_ops_survive_join_error_after_a_dropped_read() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("join-error-dropped-read");
        let path = dir.join("f");
        std::fs::write(&path, b"0123456789abcdef").unwrap();
        let f = std::fs::File::options().read(true).write(true).open(&path);
        let mut f = File::from_std(f.unwrap());
        let rt = rt_one_pool_thread();
        let f = rt.block_on(async move {
            // The read's job waits behind this one, so its call is still pending when dropped
            // (unheld, the pool thread could finish the read within that one poll: a completed
            // read, whose cursor rightly stays after its bytes).
            let gate = hold_the_pool();
            let mut buf = [0u8; 8];
            assert!(poll_once(f.read_async(&mut buf)), "pending"); // its job reads 8 bytes
            drop(gate);
            corio::spawn_blocking(|| ()).await.unwrap(); // one pool thread: the read has run
            f
        });
        drop(rt);
        // The next call must give the 8 bytes back first; here its jobs cannot run.
        let mut f = dead_pool_handle().block_on(async move {
            assert!(f.metadata_async().await.is_err());
            f
        });
        // On this thread the calls run in place: the caller's cursor is still at 0.
        assert_eq!(
            Seek::stream_position(&mut f).unwrap(),
            0,
            "the cursor moved"
        );
        Write::write_all(&mut f, b"AB").unwrap();
        let mut rest = String::new();
        Read::read_to_string(&mut f, &mut rest).unwrap();
        assert_eq!(rest, "23456789abcdef");
        assert_eq!(std::fs::read(&path).unwrap(), b"AB23456789abcdef");
    });
}

/// The bytes 0..n, as the io_buf tests' readers hold.
fn bytes_file(path: &Path, bytes: &[u8]) -> File {
    let mut f = std_rw(path);
    f.write_all(bytes).unwrap();
    f.rewind().unwrap();
    File::from_std(f)
}

/// tokio `io_buf_reader.rs` `test_buffered_reader`, over a `File` with futures' `BufReader`.
#[test]
fn test_buffered_reader() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("buffered-reader");
        let file = bytes_file(&dir.join("f"), &[5, 6, 7, 0, 1, 2, 3, 4]);
        in_task(&support::rt(2), async move {
            let mut reader = futures::io::BufReader::with_capacity(2, file);
            let mut buf = [0u8; 3];
            assert_eq!(reader.read(&mut buf).await.unwrap(), 3);
            assert_eq!(buf, [5, 6, 7]);
            assert_eq!(reader.buffer(), []);
            let mut buf = [0u8; 2];
            assert_eq!(reader.read(&mut buf).await.unwrap(), 2);
            assert_eq!(buf, [0, 1]);
            assert_eq!(reader.buffer(), []);
            let mut buf = [0u8; 1];
            assert_eq!(reader.read(&mut buf).await.unwrap(), 1);
            assert_eq!(buf, [2]);
            assert_eq!(reader.buffer(), [3]);
            let mut buf = [0u8; 3];
            assert_eq!(reader.read(&mut buf).await.unwrap(), 1);
            assert_eq!(buf, [3, 0, 0]);
            assert_eq!(reader.buffer(), []);
            assert_eq!(reader.read(&mut buf).await.unwrap(), 1);
            assert_eq!(buf, [4, 0, 0]);
            assert_eq!(reader.buffer(), []);
            assert_eq!(reader.read(&mut buf).await.unwrap(), 0);
        });
    });
}

/// tokio `io_buf_reader.rs` `test_buffered_reader_seek`, over a `File` with futures'
/// `BufReader`: a seek the file refuses (before its start) leaves the cursor where it was.
#[test]
fn test_buffered_reader_seek() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("buffered-reader-seek");
        let file = bytes_file(&dir.join("f"), &[5, 6, 7, 0, 1, 2, 3, 4]);
        in_task(&support::rt(2), async move {
            let mut reader = futures::io::BufReader::with_capacity(2, file);
            assert_eq!(reader.seek(SeekFrom::Start(3)).await.unwrap(), 3);
            assert_eq!(reader.fill_buf().await.unwrap(), [0, 1]);
            assert!(reader.seek(SeekFrom::Current(i64::MIN)).await.is_err());
            assert_eq!(reader.fill_buf().await.unwrap(), [0, 1]);
            assert_eq!(reader.seek(SeekFrom::Current(1)).await.unwrap(), 4);
            assert_eq!(reader.fill_buf().await.unwrap(), [1, 2]);
            reader.consume_unpin(1);
            assert_eq!(reader.seek(SeekFrom::Current(-2)).await.unwrap(), 3);
        });
    });
}

/// tokio `io_buf_writer.rs` `buf_writer_seek`, over a `File` with futures' `BufWriter`: a seek
/// writes the buffer out first, and lands after it.
#[test]
fn buf_writer_seek() {
    within(EVENTUALLY, || {
        let dir = TempDir::new("buf-writer-seek");
        let path = dir.join("f");
        let file = File::from_std(std_rw(&path));
        let p = path.clone();
        in_task(&support::rt(2), async move {
            let mut w = futures::io::BufWriter::with_capacity(3, file);
            w.write_all(&[0, 1, 2, 3, 4, 5]).await.unwrap();
            w.write_all(&[6, 7]).await.unwrap();
            assert_eq!(w.seek(SeekFrom::Current(0)).await.unwrap(), 8);
            assert_eq!(std::fs::read(&p).unwrap(), [0, 1, 2, 3, 4, 5, 6, 7]);
            assert_eq!(w.seek(SeekFrom::Start(2)).await.unwrap(), 2);
            w.write_all(&[8, 9]).await.unwrap();
            w.flush().await.unwrap();
        });
        assert_eq!(std::fs::read(&path).unwrap(), [0, 1, 8, 9, 4, 5, 6, 7]);
    });
}

/// The tests that need `tokio::io`'s traits on `File` (feature `tokio-io`).
#[cfg(feature = "tokio-io")]
mod tokio_traits {
    use std::io::{IoSlice, SeekFrom};

    use corio::fs::{File, OpenOptions};
    use futures::FutureExt;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

    use super::{HELLO, bytes_file, hello_at, in_task, std_rw, support};
    use support::{EVENTUALLY, TempDir, within};

    rt_common! {
        /// tokio `fs_file.rs` `basic_read`, with tokio's `AsyncReadExt`.
        #[test]
        fn basic_read() {
            within(EVENTUALLY, || {
                let dir = TempDir::new(&format!("tokio-basic-read-{WORKERS}"));
                let p = hello_at(&dir.join("f"));
                in_task(&rt(), async move {
                    let mut file = File::open_async(&p).await.unwrap();
                    let mut buf = [0u8; 1024];
                    let n = file.read(&mut buf).await.unwrap();
                    assert_eq!(&buf[..n], HELLO);
                });
            });
        }

        /// tokio `fs_file.rs` `basic_write`, with tokio's `AsyncWriteExt`.
        #[test]
        fn basic_write() {
            within(EVENTUALLY, || {
                let dir = TempDir::new(&format!("tokio-basic-write-{WORKERS}"));
                let path = dir.join("f");
                let p = path.clone();
                in_task(&rt(), async move {
                    let mut file = File::create_async(&p).await.unwrap();
                    file.write_all(HELLO).await.unwrap();
                    file.flush().await.unwrap();
                });
                assert_eq!(std::fs::read(&path).unwrap(), HELLO);
            });
        }

        /// tokio `fs_file.rs` `basic_write_and_shutdown`.
        #[test]
        fn basic_write_and_shutdown() {
            within(EVENTUALLY, || {
                let dir = TempDir::new(&format!("tokio-basic-write-shutdown-{WORKERS}"));
                let path = dir.join("f");
                let p = path.clone();
                in_task(&rt(), async move {
                    let mut file = File::create_async(&p).await.unwrap();
                    file.write_all(HELLO).await.unwrap();
                    file.shutdown().await.unwrap();
                });
                assert_eq!(std::fs::read(&path).unwrap(), HELLO);
            });
        }

        /// tokio `fs_file.rs` `write_vectored`.
        #[test]
        fn write_vectored() {
            within(EVENTUALLY, || {
                let dir = TempDir::new(&format!("tokio-write-vectored-{WORKERS}"));
                let path = dir.join("f");
                let p = path.clone();
                in_task(&rt(), async move {
                    let mut file = File::create_async(&p).await.unwrap();
                    let bufs = [IoSlice::new(HELLO), IoSlice::new(HELLO)];
                    assert_eq!(file.write_vectored(&bufs).await.unwrap(), HELLO.len() * 2);
                    file.flush().await.unwrap();
                });
                assert_eq!(std::fs::read(&path).unwrap(), [HELLO, HELLO].concat());
            });
        }

        /// tokio `fs_file.rs` `write_vectored_and_shutdown`.
        #[test]
        fn write_vectored_and_shutdown() {
            within(EVENTUALLY, || {
                let dir = TempDir::new(&format!("tokio-write-vectored-shutdown-{WORKERS}"));
                let path = dir.join("f");
                let p = path.clone();
                in_task(&rt(), async move {
                    let mut file = File::create_async(&p).await.unwrap();
                    let bufs = [IoSlice::new(HELLO), IoSlice::new(HELLO)];
                    assert_eq!(file.write_vectored(&bufs).await.unwrap(), HELLO.len() * 2);
                    file.shutdown().await.unwrap();
                });
                assert_eq!(std::fs::read(&path).unwrap(), [HELLO, HELLO].concat());
            });
        }

        /// tokio `fs_file.rs` `rewind_seek_position`.
        #[test]
        fn rewind_seek_position() {
            within(EVENTUALLY, || {
                let dir = TempDir::new(&format!("tokio-rewind-{WORKERS}"));
                let p = dir.join("f");
                in_task(&rt(), async move {
                    let mut file = File::create_async(&p).await.unwrap();
                    file.seek(SeekFrom::Current(10)).await.unwrap();
                    file.rewind().await.unwrap();
                    assert_eq!(file.stream_position().await.unwrap(), 0);
                });
            });
        }

        /// tokio `fs_file.rs` `buf_reader_seek_after_write`, with tokio's `BufReader`.
        #[test]
        fn buf_reader_seek_after_write() {
            within(EVENTUALLY, || {
                let dir = TempDir::new(&format!("tokio-buf-reader-seek-{WORKERS}"));
                let cases = [
                    (SeekFrom::Start(0), 0),
                    (SeekFrom::End(-2), HELLO.len() - 2),
                    (SeekFrom::Current(-2), HELLO.len() - 2),
                ];
                let rt = rt();
                for (i, (seek, expected)) in cases.into_iter().enumerate() {
                    let file = File::from_std(std_rw(&dir.join(&format!("f{i}"))));
                    in_task(&rt, async move {
                        let mut reader = tokio::io::BufReader::new(file);
                        reader.write_all(HELLO).await.unwrap();
                        assert_eq!(reader.seek(seek).await.unwrap(), expected as u64, "{seek:?}");
                        let mut contents = Vec::new();
                        reader.read_to_end(&mut contents).await.unwrap();
                        assert_eq!(contents, &HELLO[expected..], "{seek:?}");
                    });
                }
            });
        }

        /// tokio `fs_file.rs` `empty_read`, with tokio's `AsyncReadExt`.
        #[test]
        fn empty_read() {
            within(EVENTUALLY, || {
                let dir = TempDir::new(&format!("tokio-empty-read-{WORKERS}"));
                let p = hello_at(&dir.join("f"));
                in_task(&rt(), async move {
                    let mut file = File::open_async(&p).await.unwrap();
                    let empty = file.read(&mut []).now_or_never();
                    assert!(matches!(empty, Some(Ok(0))), "{empty:?}");
                    let mut buf = [0u8; 1024];
                    let n = file.read(&mut buf).await.unwrap();
                    assert_eq!(&buf[..n], HELLO);
                });
            });
        }

        /// tokio `fs_open_options.rs` `open_with_open_options_and_read`, with tokio's
        /// `AsyncReadExt`.
        #[test]
        fn open_with_open_options_and_read() {
            within(EVENTUALLY, || {
                let dir = TempDir::new(&format!("tokio-open-options-read-{WORKERS}"));
                let p = hello_at(&dir.join("f"));
                in_task(&rt(), async move {
                    let mut file = OpenOptions::new().read(true).open_async(&p).await.unwrap();
                    let mut buf = [0u8; 1024];
                    let n = file.read(&mut buf).await.unwrap();
                    assert_eq!(&buf[..n], HELLO);
                });
            });
        }
    }

    /// tokio `io_buf_reader.rs` `test_buffered_reader`, over a `File` with tokio's `BufReader`.
    #[test]
    fn test_buffered_reader() {
        within(EVENTUALLY, || {
            let dir = TempDir::new("tokio-buffered-reader");
            let file = bytes_file(&dir.join("f"), &[5, 6, 7, 0, 1, 2, 3, 4]);
            in_task(&support::rt(2), async move {
                let mut reader = tokio::io::BufReader::with_capacity(2, file);
                let mut buf = [0u8; 3];
                assert_eq!(reader.read(&mut buf).await.unwrap(), 3);
                assert_eq!(buf, [5, 6, 7]);
                assert_eq!(reader.buffer(), []);
                let mut buf = [0u8; 2];
                assert_eq!(reader.read(&mut buf).await.unwrap(), 2);
                assert_eq!(buf, [0, 1]);
                assert_eq!(reader.buffer(), []);
                let mut buf = [0u8; 1];
                assert_eq!(reader.read(&mut buf).await.unwrap(), 1);
                assert_eq!(buf, [2]);
                assert_eq!(reader.buffer(), [3]);
                let mut buf = [0u8; 3];
                assert_eq!(reader.read(&mut buf).await.unwrap(), 1);
                assert_eq!(buf, [3, 0, 0]);
                assert_eq!(reader.buffer(), []);
                assert_eq!(reader.read(&mut buf).await.unwrap(), 1);
                assert_eq!(buf, [4, 0, 0]);
                assert_eq!(reader.buffer(), []);
                assert_eq!(reader.read(&mut buf).await.unwrap(), 0);
            });
        });
    }

    /// tokio `io_buf_reader.rs` `test_buffered_reader_seek`, over a `File` with tokio's
    /// `BufReader` (whose `Current(i64::MIN)` seek is two seeks of the `File`).
    #[test]
    fn test_buffered_reader_seek() {
        within(EVENTUALLY, || {
            let dir = TempDir::new("tokio-buffered-reader-seek");
            let file = bytes_file(&dir.join("f"), &[5, 6, 7, 0, 1, 2, 3, 4]);
            in_task(&support::rt(2), async move {
                let mut reader = tokio::io::BufReader::with_capacity(2, file);
                assert_eq!(reader.seek(SeekFrom::Start(3)).await.unwrap(), 3);
                assert_eq!(reader.fill_buf().await.unwrap(), [0, 1]);
                assert!(reader.seek(SeekFrom::Current(i64::MIN)).await.is_err());
                assert_eq!(reader.fill_buf().await.unwrap(), [0, 1]);
                assert_eq!(reader.seek(SeekFrom::Current(1)).await.unwrap(), 4);
                assert_eq!(reader.fill_buf().await.unwrap(), [1, 2]);
                reader.consume(1);
                assert_eq!(reader.seek(SeekFrom::Current(-2)).await.unwrap(), 3);
            });
        });
    }

    /// tokio `io_buf_writer.rs` `buf_writer_seek`, over a `File` with tokio's `BufWriter`.
    #[test]
    fn buf_writer_seek() {
        within(EVENTUALLY, || {
            let dir = TempDir::new("tokio-buf-writer-seek");
            let path = dir.join("f");
            let file = File::from_std(std_rw(&path));
            let p = path.clone();
            in_task(&support::rt(2), async move {
                let mut w = tokio::io::BufWriter::with_capacity(3, file);
                w.write_all(&[0, 1, 2, 3, 4, 5]).await.unwrap();
                w.write_all(&[6, 7]).await.unwrap();
                assert_eq!(w.seek(SeekFrom::Current(0)).await.unwrap(), 8);
                assert_eq!(std::fs::read(&p).unwrap(), [0, 1, 2, 3, 4, 5, 6, 7]);
                assert_eq!(w.seek(SeekFrom::Start(2)).await.unwrap(), 2);
                w.write_all(&[8, 9]).await.unwrap();
                w.flush().await.unwrap();
            });
            assert_eq!(std::fs::read(&path).unwrap(), [0, 1, 8, 9, 4, 5, 6, 7]);
        });
    }
}
