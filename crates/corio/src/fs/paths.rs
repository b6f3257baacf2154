//! The `std::fs` calls that name paths rather than an open file: metadata, renames, copies,
//! links, directories, permissions.
//!
//! Each is one `std::fs` call with no state of its own, so — unlike [`File`](super::File),
//! which must order its jobs — every one has the same two bodies: the paths are copied into
//! owned `PathBuf`s (a pool job must own what it touches), the `std` call runs through
//! [`run`] (blocking-style) or [`run_async`], and its result comes back unchanged, error kind
//! included. [`path_calls!`] writes both forms from one line so that none can drift from the
//! others; each call's line carries its own rustdoc, to which the macro adds the blocking-style
//! note and `# Panics` section.
//!
//! # `read_dir` collects on the pool
//!
//! `std::fs::ReadDir` is an iterator whose `next` calls `getdents64`, so it cannot be handed
//! to a coroutine to iterate: each step would block its worker on the disk. `read_dir` here
//! iterates it inside the pool job and returns the entries as a `Vec<DirEntry>`; the first
//! entry error ends the job and is the call's error (the entries read before it are dropped),
//! as `collect::<io::Result<Vec<_>>>()` on `std`'s iterator would be.
//!
//! Rejected: a corio `ReadDir` whose `next` runs one pool job per entry (a pool round trip per
//! file name), or per batch, as tokio's does with 32 entries — a stream type to keep and
//! document for a gain only on directories too large to hold in memory, which can use
//! `spawn_blocking` with `std::fs::read_dir` directly.

use std::fs::{DirEntry, Metadata, Permissions};
use std::io;
use std::path::{Path, PathBuf};

use super::{run, run_async};

/// Writes a blocking-style call and its `_async` twin for each line of the form
///
/// ```text
/// /// docs
/// fn name / name_async(path: P, ...; extra: Type) -> T = std_call;
/// ```
///
/// Each `path: P` becomes a generic `P: AsRef<Path>` argument, copied into a `PathBuf` before
/// the job; an `extra` argument (at most one, after `;`) is moved into it as it is. The job is
/// `std_call(paths..., extra)`, which returns `io::Result<T>`.
macro_rules! path_calls {
    ($(
        $(#[doc = $doc:expr])*
        fn $name:ident / $name_async:ident(
            $($path:ident: $P:ident),+ $(; $extra:ident: $extra_ty:ty)?
        ) -> $ret:ty = $call:expr;
    )*) => {$(
        $(#[doc = $doc])*
        ///
        /// Blocking-style: on the blocking pool in a coroutine (only the coroutine waits), in
        /// place on a plain thread.
        ///
        /// # Panics
        ///
        #[doc = concat!(
            "Inside an async task, whose worker it would stall: `.await` [`",
            stringify!($name_async),
            "`] there."
        )]
        #[track_caller]
        pub fn $name<$($P: AsRef<Path>),+>(
            $($path: $P,)+ $($extra: $extra_ty)?
        ) -> io::Result<$ret> {
            $(let $path: PathBuf = $path.as_ref().to_owned();)+
            run(move || $call($($path,)+ $($extra)?))
        }

        $(#[doc = $doc])*
        ///
        #[doc = concat!("The async form of [`", stringify!($name), "`], for async tasks.")]
        pub async fn $name_async<$($P: AsRef<Path>),+>(
            $($path: $P,)+ $($extra: $extra_ty)?
        ) -> io::Result<$ret> {
            $(let $path: PathBuf = $path.as_ref().to_owned();)+
            run_async(move || $call($($path,)+ $($extra)?)).await
        }
    )*};
}

path_calls! {
    /// The metadata of `path`, following symbolic links (`std::fs::metadata`).
    fn metadata / metadata_async(path: P) -> Metadata = std::fs::metadata;

    /// The metadata of `path` itself, not following a symbolic link
    /// (`std::fs::symlink_metadata`).
    fn symlink_metadata / symlink_metadata_async(path: P) -> Metadata = std::fs::symlink_metadata;

    /// Whether `path` exists, following symbolic links (`std::fs::exists`): `Ok(false)` for a
    /// missing path or a broken link, an error when that cannot be told (a directory on the way
    /// that may not be searched).
    fn try_exists / try_exists_async(path: P) -> bool = std::fs::exists;

    /// The absolute form of `path`, with every `.`, `..` and symbolic link resolved
    /// (`std::fs::canonicalize`). It must exist.
    fn canonicalize / canonicalize_async(path: P) -> PathBuf = std::fs::canonicalize;

    /// What the symbolic link `path` points to, as written in it (`std::fs::read_link`).
    fn read_link / read_link_async(path: P) -> PathBuf = std::fs::read_link;

    /// The entries of the directory `path`, without `.` and `..`, in the order the file system
    /// gives them (`std::fs::read_dir`, iterated on the pool).
    ///
    /// Unlike `std`'s, this returns all the entries at once: iterating a `std::fs::ReadDir`
    /// makes system calls, so the pool job collects them. The first error reading an entry
    /// ends it and is returned (the entries read before it are dropped). `DirEntry::metadata`,
    /// and `DirEntry::file_type` where the file system does not report types, also make a
    /// system call on the calling thread: call [`symlink_metadata`] (or its `_async` form) on
    /// `entry.path()` instead.
    fn read_dir / read_dir_async(path: P) -> Vec<DirEntry> = collect_dir;

    /// Creates the directory `path`; its parent must exist (`std::fs::create_dir`).
    fn create_dir / create_dir_async(path: P) -> () = std::fs::create_dir;

    /// Creates a directory and its parents (`std::fs::create_dir_all`).
    fn create_dir_all / create_dir_all_async(path: P) -> () = std::fs::create_dir_all;

    /// Removes the empty directory `path` (`std::fs::remove_dir`).
    fn remove_dir / remove_dir_async(path: P) -> () = std::fs::remove_dir;

    /// Removes the directory `path` and everything in it, without following symbolic links
    /// (`std::fs::remove_dir_all`).
    fn remove_dir_all / remove_dir_all_async(path: P) -> () = std::fs::remove_dir_all;

    /// Removes a file (`std::fs::remove_file`).
    fn remove_file / remove_file_async(path: P) -> () = std::fs::remove_file;

    /// Renames `from` to `to`, replacing `to` if it is a file (`std::fs::rename`). Both must be
    /// on one file system.
    fn rename / rename_async(from: P, to: Q) -> () = std::fs::rename;

    /// Copies the contents and permission bits of the file `from` to `to`, creating or
    /// truncating it, and returns the number of bytes copied (`std::fs::copy`).
    fn copy / copy_async(from: P, to: Q) -> u64 = std::fs::copy;

    /// Makes `link` a new name for the file `original` (`std::fs::hard_link`).
    fn hard_link / hard_link_async(original: P, link: Q) -> () = std::fs::hard_link;

    /// Sets the permissions of `path`, following symbolic links (`std::fs::set_permissions`).
    fn set_permissions / set_permissions_async(path: P; perm: Permissions) -> () =
        std::fs::set_permissions;
}

/// `read_dir`'s pool job: every entry, or the first error (see the module doc).
fn collect_dir(path: PathBuf) -> io::Result<Vec<DirEntry>> {
    std::fs::read_dir(path)?.collect()
}
