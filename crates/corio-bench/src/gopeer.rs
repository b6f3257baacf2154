//! The Go peer: `peers/go/corio-peers/main.go`, built with the installed `go` at run time.
//!
//! The source is compiled into this binary (`include_str!`), so a `corio-bench` moved away from
//! its checkout still has it. On first use it is written to a cache directory next to the
//! target directory (`target/corio-bench-go/`, else the temporary directory) — only when its
//! content changed, so the file's mtime says when the source last changed — and built there
//! with `go build` when the binary is missing or older than the source. Standard library only,
//! GOPATH mode, `GOPROXY=off`: nothing is downloaded.
//!
//! Without `go` on `PATH` every Go row is skipped ("go not installed"); a failed build makes
//! them failures, with the compiler's first error line.
//!
//! The program speaks the children's protocol (`@key value` lines on stdout), so it runs as a
//! [`ChildCommand::program`] and its output is read like a Rust child's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::child::ChildCommand;
use crate::report::Outcome;

/// The Go source, as built.
const SOURCE: &str = include_str!("../peers/go/corio-peers/main.go");

/// The path of `go` if it is on `PATH`.
fn go_tool() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("go"))
        .find(|p| p.is_file())
}

/// Where the source and binary live: `<target>/corio-bench-go/` when this binary runs from
/// `<target>/<profile>/`, else `<tmp>/corio-bench-go/`.
fn cache_dir() -> PathBuf {
    let exe = std::env::current_exe().ok();
    let target = exe
        .as_deref()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .filter(|t| t.is_dir());
    match target {
        Some(t) => t.join("corio-bench-go"),
        None => std::env::temp_dir().join("corio-bench-go"),
    }
}

/// The built peer, once per process: its path, or why there is none.
fn binary() -> Result<PathBuf, Outcome> {
    static BUILT: OnceLock<Result<PathBuf, Outcome>> = OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> Result<PathBuf, Outcome> {
    let go = go_tool().ok_or_else(|| Outcome::Skipped("go not installed".into()))?;
    let fail = |what: &str, e: &dyn std::fmt::Display| Outcome::Failed(format!("{what}: {e}"));
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).map_err(|e| fail("creating the Go cache dir", &e))?;
    let src = dir.join("main.go");
    let bin = dir.join("corio-peers");
    if std::fs::read_to_string(&src).ok().as_deref() != Some(SOURCE) {
        std::fs::write(&src, SOURCE).map_err(|e| fail("writing main.go", &e))?;
    }
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = matches!((mtime(&bin), mtime(&src)), (Some(b), Some(s)) if b >= s);
    if fresh {
        return Ok(bin);
    }
    // Build to a temporary name and rename, so that a concurrent run never starts a
    // half-written binary.
    let tmp = dir.join(format!("corio-peers.{}.tmp", std::process::id()));
    let mut cmd = Command::new(go);
    cmd.arg("build")
        .arg("-o")
        .arg(&tmp)
        .arg("main.go")
        .current_dir(&dir)
        .env("GO111MODULE", "off")
        .env("GOPROXY", "off")
        .env("GOFLAGS", "");
    if std::env::var_os("GOCACHE").is_none() && std::env::var_os("HOME").is_none() {
        cmd.env("GOCACHE", dir.join("gocache"));
    }
    eprintln!("corio-bench: building the Go peer in {} ...", dir.display());
    let out = cmd.output().map_err(|e| fail("running go build", &e))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output");
        return Err(Outcome::Failed(format!("go build failed: {first}")));
    }
    std::fs::rename(&tmp, &bin).map_err(|e| fail("installing the Go peer", &e))?;
    Ok(bin)
}

/// A run of the Go peer with these arguments (`yield 1 1000 100`), or why it cannot run.
pub fn command<I, S>(args: I) -> Result<ChildCommand, Outcome>
where
    I: IntoIterator<Item = S>,
    S: ToString,
{
    Ok(ChildCommand::program(binary()?).args(args))
}
