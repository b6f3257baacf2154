//! `corio::fs`'s path calls (`metadata`, `rename`, `read_dir`, ...) against `std::fs`: one
//! script of calls, successes and errors, gives the same log when made with `std`, with the
//! blocking-style forms in a coroutine and on a plain thread, and with the `_async` forms in an
//! async task; the blocking-style forms panic inside an async task.

#[macro_use]
mod support;

use std::io::{self, ErrorKind};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use support::{TempDir, within};

/// A hang is a failure well before the harness would notice.
const LIMIT: Duration = Duration::from_secs(30);

/// `std::fs` under `corio::fs`'s names and result types, for the reference run.
mod std_fs {
    pub use std::fs::*;

    use std::io;
    use std::path::Path;

    pub fn try_exists<P: AsRef<Path>>(path: P) -> io::Result<bool> {
        std::fs::exists(path)
    }

    pub fn read_dir<P: AsRef<Path>>(path: P) -> io::Result<Vec<DirEntry>> {
        std::fs::read_dir(path)?.collect()
    }
}

/// The reference: the `std::fs` call.
macro_rules! with_std {
    ($name:ident / $name_async:ident($($arg:expr),*)) => {
        std_fs::$name($($arg),*)
    };
}

/// The blocking-style `corio::fs` call.
macro_rules! blocking_style {
    ($name:ident / $name_async:ident($($arg:expr),*)) => {
        corio::fs::$name($($arg),*)
    };
}

/// The `_async` `corio::fs` call, awaited (inside an `async` block).
macro_rules! awaited {
    ($name:ident / $name_async:ident($($arg:expr),*)) => {
        corio::fs::$name_async($($arg),*).await
    };
}

/// What each call of the script returned, a line each.
#[derive(Debug, Default, PartialEq)]
struct Log(Vec<String>);

impl Log {
    /// Logs `r` as `what: value` (the value through `show`) or `what: error Kind`.
    fn note<T>(&mut self, what: &str, r: io::Result<T>, show: impl FnOnce(T) -> String) {
        let line = match r {
            Ok(v) => show(v),
            Err(e) => format!("error {:?}", e.kind()),
        };
        self.0.push(format!("{what}: {line}"));
    }

    fn has(&self, line: &str) -> bool {
        self.0.iter().any(|l| l == line)
    }
}

/// What a test can compare of a `Metadata` across runs in different directories.
fn summary(m: std::fs::Metadata) -> String {
    let t = m.file_type();
    format!(
        "dir {} file {} symlink {} len {} mode {:o} links {}",
        t.is_dir(),
        t.is_file(),
        t.is_symlink(),
        if t.is_file() { m.len() } else { 0 },
        m.permissions().mode() & 0o777,
        if t.is_dir() { 0 } else { m.nlink() },
    )
}

fn unit(_: ()) -> String {
    "ok".to_string()
}

fn yes_no(b: bool) -> String {
    b.to_string()
}

fn count(n: u64) -> String {
    n.to_string()
}

fn path(p: PathBuf) -> String {
    format!("{p:?}")
}

/// The names of `entries`, sorted (a directory lists them in no set order).
fn names(entries: Vec<std::fs::DirEntry>) -> String {
    let mut names: Vec<_> = entries.iter().map(|e| e.file_name()).collect();
    names.sort();
    format!("{names:?}")
}

/// Makes every path call on a fresh directory `$dir` (a `PathBuf`), each through `$call` (one
/// of the macros above), and returns the [`Log`] of what each returned. Setup that is not
/// under test uses `std::fs` directly.
macro_rules! script {
    ($call:ident, $dir:expr) => {{
        let d: PathBuf = $dir;
        let (sub, f, missing) = (d.join("sub"), d.join("sub/f"), d.join("missing"));
        let mut log = Log::default();

        let r = $call!(create_dir / create_dir_async(&sub));
        log.note("create_dir", r, unit);
        let r = $call!(create_dir / create_dir_async(&sub));
        log.note("create_dir again", r, unit);
        let r = $call!(create_dir / create_dir_async(d.join("x/y")));
        log.note("create_dir orphan", r, unit);
        std::fs::write(&f, "hello").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();

        let r = $call!(metadata / metadata_async(&f));
        log.note("metadata", r, summary);
        let r = $call!(metadata / metadata_async(&sub));
        log.note("metadata dir", r, summary);
        let r = $call!(metadata / metadata_async(&missing));
        log.note("metadata missing", r, summary);

        let (link, broken) = (d.join("link"), d.join("broken"));
        std::os::unix::fs::symlink("sub/f", &link).unwrap();
        std::os::unix::fs::symlink("missing", &broken).unwrap();
        let r = $call!(metadata / metadata_async(&link));
        log.note("metadata link", r, summary);
        let r = $call!(metadata / metadata_async(&broken));
        log.note("metadata broken", r, summary);
        let r = $call!(symlink_metadata / symlink_metadata_async(&link));
        log.note("symlink_metadata link", r, summary);
        let r = $call!(symlink_metadata / symlink_metadata_async(&f));
        log.note("symlink_metadata file", r, summary);
        let r = $call!(symlink_metadata / symlink_metadata_async(&missing));
        log.note("symlink_metadata missing", r, summary);

        let r = $call!(read_link / read_link_async(&link));
        log.note("read_link", r, path);
        let r = $call!(read_link / read_link_async(&f));
        log.note("read_link file", r, path);

        let base = $call!(canonicalize / canonicalize_async(&d)).unwrap();
        let inside = |p: PathBuf| format!("{:?}", p.strip_prefix(&base).unwrap());
        let r = $call!(canonicalize / canonicalize_async(d.join("sub/../link")));
        log.note("canonicalize", r, inside);
        let r = $call!(canonicalize / canonicalize_async(&broken));
        log.note("canonicalize broken", r, inside);

        let r = $call!(try_exists / try_exists_async(&f));
        log.note("try_exists", r, yes_no);
        let r = $call!(try_exists / try_exists_async(&missing));
        log.note("try_exists missing", r, yes_no);
        let r = $call!(try_exists / try_exists_async(&broken));
        log.note("try_exists broken", r, yes_no);

        let g = d.join("g");
        let r = $call!(copy / copy_async(&f, &g));
        log.note("copy", r, count);
        log.note("copied", std::fs::read_to_string(&g), |s| s);
        let r = $call!(copy / copy_async(&missing, &g));
        log.note("copy missing", r, count);

        let h = d.join("h");
        let r = $call!(hard_link / hard_link_async(&f, &h));
        log.note("hard_link", r, unit);
        let r = $call!(hard_link / hard_link_async(&f, &h));
        log.note("hard_link again", r, unit);
        let r = $call!(metadata / metadata_async(&f));
        log.note("linked", r, summary);

        let g2 = sub.join("g2");
        let r = $call!(rename / rename_async(&g, &g2));
        log.note("rename", r, unit);
        let r = $call!(try_exists / try_exists_async(&g));
        log.note("renamed from", r, yes_no);
        let r = $call!(try_exists / try_exists_async(&g2));
        log.note("renamed to", r, yes_no);
        let r = $call!(rename / rename_async(&missing, &g));
        log.note("rename missing", r, unit);

        let perm = std::fs::Permissions::from_mode(0o600);
        let r = $call!(set_permissions / set_permissions_async(&f, perm.clone()));
        log.note("set_permissions", r, unit);
        let r = $call!(metadata / metadata_async(&f));
        log.note("set", r, summary);
        let r = $call!(set_permissions / set_permissions_async(&missing, perm));
        log.note("set_permissions missing", r, unit);

        let r = $call!(read_dir / read_dir_async(&sub));
        log.note("read_dir", r, names);
        let r = $call!(read_dir / read_dir_async(&d));
        log.note("read_dir top", r, names);
        let r = $call!(read_dir / read_dir_async(&missing));
        log.note("read_dir missing", r, names);
        let r = $call!(read_dir / read_dir_async(&f));
        log.note("read_dir file", r, names);

        let r = $call!(remove_dir / remove_dir_async(&sub));
        log.note("remove_dir full", r, unit);
        let r = $call!(remove_dir / remove_dir_async(&f));
        log.note("remove_dir file", r, unit);
        let deep = d.join("a/b/c");
        let r = $call!(create_dir_all / create_dir_all_async(&deep));
        log.note("create_dir_all", r, unit);
        let r = $call!(remove_dir / remove_dir_async(&deep));
        log.note("remove_dir", r, unit);
        let r = $call!(try_exists / try_exists_async(&deep));
        log.note("removed", r, yes_no);
        let a = d.join("a");
        let r = $call!(remove_dir_all / remove_dir_all_async(&a));
        log.note("remove_dir_all", r, unit);
        let r = $call!(try_exists / try_exists_async(&a));
        log.note("removed all", r, yes_no);
        let r = $call!(remove_dir_all / remove_dir_all_async(&missing));
        log.note("remove_dir_all missing", r, unit);

        let r = $call!(remove_file / remove_file_async(&h));
        log.note("remove_file", r, unit);
        let r = $call!(remove_file / remove_file_async(&h));
        log.note("remove_file again", r, unit);
        let r = $call!(remove_file / remove_file_async(&sub));
        log.note("remove_file dir", r, unit);
        // A link to a directory is removed, not followed.
        std::os::unix::fs::symlink("sub", d.join("dirlink")).unwrap();
        let r = $call!(remove_dir_all / remove_dir_all_async(d.join("dirlink")));
        log.note("remove_dir_all link", r, unit);
        let r = $call!(read_dir / read_dir_async(&sub));
        log.note("link target kept", r, names);
        let r = $call!(remove_dir_all / remove_dir_all_async(&sub));
        log.note("remove_dir_all sub", r, unit);
        let r = $call!(read_dir / read_dir_async(&d));
        log.note("left", r, names);
        log
    }};
}

/// The log of the script made with `std::fs` in `dir`.
fn with_std_in(dir: PathBuf) -> Log {
    script!(with_std, dir)
}

/// The log of the script made with the blocking-style forms in `dir`.
fn blocking_style_in(dir: PathBuf) -> Log {
    script!(blocking_style, dir)
}

/// The log of the script made with the `_async` forms in `dir`.
async fn awaited_in(dir: PathBuf) -> Log {
    script!(awaited, dir)
}

/// What `std` logs, made in a directory of its own (`name` tells it from other tests').
fn std_log(name: &str) -> Log {
    let dir = TempDir::new(&format!("std-{name}"));
    let log = with_std_in(dir.path());
    assert!(log.0.len() > 40, "the script ran: {log:#?}");
    for line in [
        "metadata missing: error NotFound",
        "remove_dir full: error DirectoryNotEmpty",
        "read_dir top: [\"broken\", \"h\", \"link\", \"sub\"]",
        "canonicalize: \"sub/f\"",
    ] {
        assert!(log.has(line), "{line} is not in {log:#?}");
    }
    log
}

rt_common! {
    #[test]
    fn blocking_style_calls_in_a_coroutine_agree_with_std() {
        within(LIMIT, || {
            let dir = TempDir::new(&format!("coroutine{WORKERS}"));
            let d = dir.path();
            let log = rt().run(move || blocking_style_in(d));
            assert_eq!(log, std_log(&format!("coroutine{WORKERS}")));
        });
    }

    #[test]
    fn async_forms_in_an_async_task_agree_with_std() {
        within(LIMIT, || {
            let dir = TempDir::new(&format!("task{WORKERS}"));
            let want = std_log(&format!("task{WORKERS}"));
            let rt = rt();
            let d = dir.path();
            let log = rt.block_on(async move { awaited_in(d).await });
            assert_eq!(log, want);
            // On a worker, not just in `block_on`'s own future.
            let dir = TempDir::new(&format!("spawned{WORKERS}"));
            let d = dir.path();
            let log = rt.block_on(corio::spawn(async move { awaited_in(d).await }));
            assert_eq!(log.unwrap(), want);
        });
    }
}

#[test]
fn blocking_style_calls_on_a_plain_thread_agree_with_std() {
    within(LIMIT, || {
        let dir = TempDir::new("thread");
        assert_eq!(blocking_style_in(dir.path()), std_log("thread"));
    });
}

#[test]
fn errors_come_back_as_stds_kinds() {
    within(LIMIT, || {
        let dir = TempDir::new("errors");
        let (missing, full) = (dir.join("missing"), dir.join("full"));
        std::fs::create_dir(&full).unwrap();
        std::fs::write(full.join("f"), "x").unwrap();
        let std_kinds = (
            std::fs::metadata(&missing).unwrap_err().kind(),
            std::fs::remove_dir(&full).unwrap_err().kind(),
        );
        assert_eq!(
            std_kinds,
            (ErrorKind::NotFound, ErrorKind::DirectoryNotEmpty)
        );

        let kinds = |m: &Path, f: &Path| {
            (
                corio::fs::metadata(m).unwrap_err().kind(),
                corio::fs::remove_dir(f).unwrap_err().kind(),
            )
        };
        assert_eq!(kinds(&missing, &full), std_kinds, "on a plain thread");
        let (m, f) = (missing.clone(), full.clone());
        let in_coroutine = support::rt(1).run(move || kinds(&m, &f));
        assert_eq!(in_coroutine, std_kinds, "in a coroutine");
        let in_task = support::rt(1).block_on(corio::spawn(async move {
            (
                corio::fs::metadata_async(&missing)
                    .await
                    .unwrap_err()
                    .kind(),
                corio::fs::remove_dir_async(&full).await.unwrap_err().kind(),
            )
        }));
        assert_eq!(in_task.unwrap(), std_kinds, "in an async task");
        assert!(dir.join("full/f").exists());
    });
}

/// Every blocking-style path call, by name.
const BLOCKING_STYLE_CALLS: [&str; 15] = [
    "metadata",
    "symlink_metadata",
    "try_exists",
    "canonicalize",
    "read_link",
    "read_dir",
    "create_dir",
    "create_dir_all",
    "remove_dir",
    "remove_dir_all",
    "remove_file",
    "rename",
    "copy",
    "hard_link",
    "set_permissions",
];

/// Makes the blocking-style call `name` in `dir`, which holds only the file `f`; were it
/// allowed to run, each would succeed or fail without changing `f`.
#[track_caller]
fn blocking_style_call(name: &str, dir: &Path) {
    let (f, new) = (dir.join("f"), dir.join("new"));
    let _ = match name {
        "metadata" => corio::fs::metadata(&f).map(drop),
        "symlink_metadata" => corio::fs::symlink_metadata(&f).map(drop),
        "try_exists" => corio::fs::try_exists(&f).map(drop),
        "canonicalize" => corio::fs::canonicalize(&f).map(drop),
        "read_link" => corio::fs::read_link(&f).map(drop),
        "read_dir" => corio::fs::read_dir(dir).map(drop),
        "create_dir" => corio::fs::create_dir(&new),
        "create_dir_all" => corio::fs::create_dir_all(&new),
        "remove_dir" => corio::fs::remove_dir(&new),
        "remove_dir_all" => corio::fs::remove_dir_all(&new),
        "remove_file" => corio::fs::remove_file(&new),
        "rename" => corio::fs::rename(&new, &f),
        "copy" => corio::fs::copy(&new, &f).map(drop),
        "hard_link" => corio::fs::hard_link(&new, &f),
        "set_permissions" => {
            corio::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o600))
        }
        _ => unreachable!("{name} is not a path call"),
    };
}

#[test]
fn every_blocking_style_call_in_an_async_task_panics_with_advice() {
    within(LIMIT, || {
        let dir = TempDir::new("stackless");
        std::fs::write(dir.join("f"), "x").unwrap();
        let rt = support::rt(1);
        for name in BLOCKING_STYLE_CALLS {
            let d = dir.path();
            let joined = rt.block_on(corio::spawn(async move { blocking_style_call(name, &d) }));
            let payload = joined.expect_err(name).into_panic();
            let msg = support::payload_text(&*payload);
            assert!(msg.contains("_async"), "{name}: {msg}");
        }
        // None ran.
        assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"x");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["f"]);
    });
}

#[test]
fn the_same_calls_run_in_place_in_block_ons_own_future() {
    // `Runtime::block_on`'s future runs on the calling thread, which may block: there the
    // blocking-style forms run in place, as on any plain thread.
    within(LIMIT, || {
        let dir = TempDir::new("block-on");
        std::fs::write(dir.join("f"), "x").unwrap();
        let rt = support::rt(1);
        for name in BLOCKING_STYLE_CALLS {
            let d = dir.path();
            rt.block_on(async move { blocking_style_call(name, &d) });
        }
        assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"x");
    });
}

#[test]
fn the_async_forms_are_send() {
    fn send<T: Send>(_: T) {}
    let perm = std::fs::Permissions::from_mode(0o644);
    send(corio::fs::metadata_async("/"));
    send(corio::fs::symlink_metadata_async("/"));
    send(corio::fs::try_exists_async("/"));
    send(corio::fs::canonicalize_async("/"));
    send(corio::fs::read_link_async("/"));
    send(corio::fs::read_dir_async("/"));
    send(corio::fs::create_dir_async("/"));
    send(corio::fs::create_dir_all_async("/"));
    send(corio::fs::remove_dir_async("/"));
    send(corio::fs::remove_dir_all_async("/"));
    send(corio::fs::remove_file_async("/"));
    send(corio::fs::rename_async("/", "/"));
    send(corio::fs::copy_async("/", "/"));
    send(corio::fs::hard_link_async("/", "/"));
    send(corio::fs::set_permissions_async("/", perm));
}
