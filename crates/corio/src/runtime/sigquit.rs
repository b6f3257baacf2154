//! The task dump on SIGQUIT (Go prints every goroutine on SIGQUIT; DESIGN.md decision 8), when
//! `CORIO_DUMP_ON_SIGQUIT=1` asks for it.
//!
//! # Why opt-in
//!
//! A signal's handler belongs to the process, not to a library: corio installs one only when
//! the environment asks, and only over the default action (a program that handles or ignores
//! SIGQUIT keeps that, and corio says so on stderr once; a shell without job control starts
//! background commands with SIGQUIT ignored).
//!
//! # How
//!
//! 1. The handler does only what is safe in a handler: it sets [`REQUESTED`] and wakes the
//!    futex on it. It touches no descriptor, because the thread it interrupts may be sysmon
//!    with a descriptor table of its own (`fd_table.rs`), where a number of the program's
//!    names another file or none.
//! 2. A thread started with the handler (`corio-sigquit`), waiting on that futex, writes the
//!    dump: for every runtime alive in the process, its trace line and its live tasks
//!    ([`trace::render`](super::trace::render)).
//! 3. It then puts the default action back and raises SIGQUIT again, so that the program ends
//!    as SIGQUIT would have ended it (terminated, with a core dump where they are enabled).
//!
//! The thread leaves the program's descriptor table first, keeping none of it, and writes to
//! the program's stderr through `pidfd_getfd` as sysmon's reports do, so that a one-worker
//! `run_here` runtime keeps a table with one user (`Builder::run_here`). It blocks every
//! signal, so that SIGQUIT and the others go to the program's threads.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Once, Weak};

use super::park::{futex_wait, futex_wake};
use super::{Handle, Shared, fd_table, trace};

/// Set to 1 by the handler, back to 0 by the dump thread before it dumps.
static REQUESTED: AtomicU32 = AtomicU32::new(0);

/// The runtimes to dump: every runtime built since the dump was switched on.
static RUNTIMES: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Whether `CORIO_DUMP_ON_SIGQUIT` asks for the dump (`1`), read when the first runtime starts.
fn wanted() -> bool {
    static WANTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WANTED.get_or_init(|| std::env::var("CORIO_DUMP_ON_SIGQUIT").is_ok_and(|v| v.trim() == "1"))
}

/// Adds a runtime to the dump, installing the handler and starting the dump thread with the
/// first one; nothing unless `CORIO_DUMP_ON_SIGQUIT=1`.
pub(crate) fn register(shared: &Arc<Shared>) {
    if !wanted() {
        return;
    }
    static INSTALL: Once = Once::new();
    INSTALL.call_once(install);
    let mut runtimes = RUNTIMES.lock().unwrap_or_else(|e| e.into_inner());
    runtimes.retain(|r| r.strong_count() > 0);
    runtimes.push(Arc::downgrade(shared));
}

fn install() {
    // SAFETY: a zeroed `sigaction` is a valid out-parameter; a null new action only queries.
    let current = unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGQUIT, std::ptr::null(), &mut current) != 0 {
            return;
        }
        current
    };
    if current.sa_sigaction != libc::SIG_DFL {
        eprintln!(
            "corio: CORIO_DUMP_ON_SIGQUIT=1, but SIGQUIT is not at its default action (the program \
             handles or ignores it): no task dump on SIGQUIT"
        );
        return;
    }
    let (ready_tx, ready) = std::sync::mpsc::sync_channel(1);
    let started = std::thread::Builder::new()
        .name("corio-sigquit".into())
        .spawn(move || dump_thread(ready_tx));
    if started.is_err() {
        return;
    }
    // Once the thread has left the program's descriptor table: its copy holds the program's
    // files only for that moment (as sysmon's, `fd_table.rs`).
    let _ = ready.recv();
    // SAFETY: a zeroed `sigaction` with a handler that only stores to an atomic and makes a
    // futex system call (both async-signal-safe) and restores `errno`.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGQUIT, &action, std::ptr::null_mut());
    }
}

extern "C" fn handler(_signal: libc::c_int) {
    // SAFETY: `__errno_location` gives this thread's `errno`, which the futex call below may
    // change under the interrupted code: it is put back before returning.
    let errno = unsafe { *libc::__errno_location() };
    REQUESTED.store(1, Ordering::SeqCst);
    futex_wake(&REQUESTED);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

fn dump_thread(ready: std::sync::mpsc::SyncSender<()>) {
    // SAFETY: a full signal set, initialised by `sigfillset`, blocked for this thread only.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
    }
    let own_table = fd_table::unshare_keeping(&[]);
    let _ = ready.send(());
    loop {
        // Pairs with the handler's store: a wake-up between the load and the wait is seen by
        // the wait (the futex compares the word with 0 first).
        while REQUESTED.swap(0, Ordering::SeqCst) == 0 {
            futex_wait(&REQUESTED, 0);
        }
        let text = dump();
        if own_table {
            let _ = fd_table::write_program_stderr(&text);
        } else {
            use std::io::Write as _;
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
        // SAFETY: puts the default action back and raises the signal at the process, which
        // the default action ends.
        unsafe {
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            libc::kill(libc::getpid(), libc::SIGQUIT);
        }
    }
}

/// The dump's text: a header, then each live runtime's trace line and tasks.
fn dump() -> String {
    let runtimes: Vec<Arc<Shared>> = RUNTIMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    let mut text = format!(
        "corio: SIGQUIT: {} runtime(s), their counters and live tasks:\n",
        runtimes.len()
    );
    for shared in runtimes {
        text.push_str(&trace::render(&Handle { shared }, true));
    }
    text
}
