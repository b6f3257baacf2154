//! Stack overflow inside a coroutine: a message naming the coroutine, then abort.
//!
//! A coroutine that runs past the bottom of its stack touches the guard page below it and the
//! kernel raises `SIGSEGV` (or `SIGBUS`). Without help that is a bare segfault. corio installs
//! a handler that:
//!
//! 1. runs on an alternate signal stack, because the faulting stack is exhausted (Rust's
//!    runtime gives its own threads one; [`prepare_thread`] adds one to any other thread before
//!    it runs its first coroutine, and frees it when the thread exits);
//! 2. maps the fault address to a stack slot by arithmetic over the arena's chunk table
//!    (`arena::find_slot`: atomics only, no lock, no allocation);
//! 3. if the address is in a slot's guard page, formats one line from the slot's header into a
//!    buffer on the signal stack — `coroutine '<name>' (id N) has overflowed its stack of K KiB`,
//!    the fault address and where the coroutine was created — writes it to stderr with
//!    `write(2)` and calls `abort(3)`, both async-signal-safe;
//! 4. otherwise chains to the handler that was installed before it, so Rust's own "thread has
//!    overflowed its stack" and any other handler keep working; if that was the default
//!    action, it restores the default and returns, and the fault repeats and kills the process
//!    with the original signal.
//!
//! The header is trusted only while its slot is in use: a coroutine's creation stores its id
//! last, and releasing the slot clears it, so a fault in the guard of a free slot (a stray
//! pointer into a finished coroutine's stack, say) finds id 0 and is passed on like any other
//! fault instead of being reported with a stale name.
//!
//! Rust inserts stack probes in functions whose frames exceed a page, so even a frame larger
//! than the guard touches the guard before anything below it. C code compiled without
//! `-fstack-clash-protection` does not: a single frame larger than the guard (4 KiB, one page)
//! can skip over it and write into the top of the slot below, which belongs to another
//! coroutine, without any fault. corio cannot catch that; C libraries called from coroutines
//! that allocate large frames (big local arrays, `alloca`) should be built with stack-clash
//! protection, or called through `corio::blocking` on the thread's own stack. See
//! `docs/soundness.md`, "Overflow handler".

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::Once;

use crate::stack::{SlotHeader, find_slot};

/// Size of the alternate signal stack corio gives threads that have none.
const ALT_STACK_SIZE: usize = 64 << 10;

/// The handlers that were installed before ours, written once before ours is installed.
struct Previous(UnsafeCell<[MaybeUninit<libc::sigaction>; 2]>);

// SAFETY: written only inside `INSTALL.call_once`, before the handler that reads it exists.
unsafe impl Sync for Previous {}

static PREVIOUS: Previous = Previous(UnsafeCell::new([MaybeUninit::uninit(); 2]));
static INSTALL: Once = Once::new();

const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// Makes the calling thread ready to run coroutines: installs the process-wide fault handler
/// (once) and gives the thread an alternate signal stack if it has none.
pub(crate) fn prepare_thread() {
    INSTALL.call_once(install_handler);
    if ALT_STACK.try_with(AltStack::ensure).is_err() {
        // The thread is exiting and `ALT_STACK` is gone (a coroutine made in another
        // thread-local's destructor; `with` panicked there, and a panic in a thread-local's
        // destructor aborts the process). If the thread has no alternate stack left (std
        // removes its own in a destructor too), it gets one that is never unmapped: the
        // thread ends soon, and nothing could disable it before the unmap any more.
        let _never_unmapped = map_alt_stack();
    }
}

fn install_handler() {
    for (i, &sig) in SIGNALS.iter().enumerate() {
        // SAFETY: a zeroed sigaction is a valid value; the handler is async-signal-safe and
        // PREVIOUS is written before sigaction makes the handler reachable.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let previous = (*PREVIOUS.0.get())[i].as_mut_ptr();
            libc::sigaction(sig, std::ptr::null(), previous);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// The SIGSEGV/SIGBUS handler.
extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    if let Some(hit) = find_slot(addr).filter(|hit| hit.in_guard) {
        // SAFETY: every carved slot's top page is mapped read-write for as long as the arena
        // lives (released pages read as zeros), 64-byte aligned, and the header's fields are
        // atomics, so reading it is sound whoever owns the slot.
        let header =
            unsafe { &*((hit.slot_top - std::mem::size_of::<SlotHeader>()) as *const SlotHeader) };
        // Trust the rest of the header only for a slot in use (a nonzero id): a free slot's
        // name pointer may point to a freed name. Acquire: pairs with the Release store of the
        // id in `Coroutine::on_stack`, after the other fields.
        let id = header.id.load(std::sync::atomic::Ordering::Acquire);
        if id != 0 {
            report(header, id, addr);
        }
    }
    // SAFETY: we are inside a handler for `sig` with the kernel's arguments.
    unsafe { chain(sig, info, ctx) }
}

/// Writes the overflow line for the coroutine described by `header` and aborts.
fn report(header: &SlotHeader, id: u64, addr: usize) -> ! {
    use std::sync::atomic::Ordering::Relaxed;
    let mut line = Line::new();
    line.push(b"\ncoroutine '");
    let (ptr, len) = (header.name_ptr.load(Relaxed), header.name_len.load(Relaxed));
    if ptr.is_null() {
        line.push(b"<unnamed>");
    } else {
        // SAFETY: the owner keeps the name alive and unchanged while it owns the slot.
        line.push(unsafe { std::slice::from_raw_parts(ptr, len.min(200)) });
    }
    line.push(b"' (id ");
    line.push_dec(id);
    line.push(b") has overflowed its stack of ");
    line.push_dec((header.stack_size.load(Relaxed) >> 10) as u64);
    line.push(b" KiB (fault address 0x");
    line.push_hex(addr as u64);
    let location = header.location.load(Relaxed);
    if !location.is_null() {
        // SAFETY: locations are `&'static Location`s.
        let location = unsafe { &*location };
        line.push(b", created at ");
        line.push(location.file().as_bytes());
        line.push(b":");
        line.push_dec(location.line().into());
        line.push(b":");
        line.push_dec(location.column().into());
    }
    line.push(b")\nfatal runtime error: coroutine stack overflow, aborting\n");
    // SAFETY: write and abort are async-signal-safe.
    unsafe {
        libc::write(libc::STDERR_FILENO, line.buf.as_ptr().cast(), line.len);
        libc::abort()
    }
}

/// Passes a fault that is not a coroutine overflow to the handler installed before ours.
///
/// # Safety
///
/// Must be called from the handler for `sig`, with the kernel's `info` and `ctx`.
unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let i = SIGNALS.iter().position(|&s| s == sig).unwrap_or(0);
    // SAFETY: PREVIOUS was initialised before our handler was installed and is never written
    // again.
    let previous = unsafe { (*PREVIOUS.0.get())[i].assume_init_ref() };
    let action = previous.sa_sigaction;
    if action == libc::SIG_DFL || action == libc::SIG_IGN {
        // Restore the default action and return: the faulting instruction runs again and the
        // kernel kills the process with `sig`, as if we had never been installed.
        // SAFETY: a zeroed sigaction with SIG_DFL is valid.
        unsafe {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &default, std::ptr::null_mut());
        }
    } else if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: with SA_SIGINFO, sa_sigaction holds a three-argument handler.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(action) };
        f(sig, info, ctx);
    } else {
        // SAFETY: without SA_SIGINFO, sa_sigaction holds a one-argument handler.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(action) };
        f(sig);
    }
}

/// A fixed buffer for building the report without allocating.
struct Line {
    buf: [u8; 768],
    len: usize,
}

impl Line {
    fn new() -> Line {
        Line {
            buf: [0; 768],
            len: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
    }

    fn push_dec(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }

    fn push_hex(&mut self, mut v: u64) {
        let mut digits = [0u8; 16];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b"0123456789abcdef"[(v & 15) as usize];
            v >>= 4;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
}

/// This thread's alternate signal stack, if corio had to make one.
struct AltStack {
    /// Base of the mapping (guard page included), or 0.
    map: std::cell::Cell<usize>,
    checked: std::cell::Cell<bool>,
}

impl AltStack {
    fn ensure(&self) {
        if self.checked.replace(true) {
            return;
        }
        if let Some(map) = map_alt_stack() {
            self.map.set(map);
        }
    }
}

/// Gives the calling thread an alternate signal stack if it has none: the mapping's base (to
/// unmap), or `None` if it had one already (Rust's runtime gives every thread it starts one)
/// or none could be made (then an overflow is a plain SIGSEGV: not fatal here).
fn map_alt_stack() -> Option<usize> {
    // SAFETY: querying the current alternate stack has no preconditions.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: `current` is a valid out-pointer.
    unsafe { libc::sigaltstack(std::ptr::null(), &mut current) };
    if current.ss_flags & libc::SS_DISABLE == 0 {
        return None; // Rust's runtime (or someone else) gave this thread one.
    }
    let page = crate::stack::page_size();
    let size = ALT_STACK_SIZE.max(libc::SIGSTKSZ) + page;
    // SAFETY: a fresh anonymous mapping aliases nothing.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return None; // Without an alternate stack an overflow is a plain SIGSEGV.
    }
    // SAFETY: `map` is ours; the low page becomes the signal stack's guard.
    unsafe { libc::mprotect(map, page, libc::PROT_NONE) };
    let stack = libc::stack_t {
        ss_sp: (map as usize + page) as *mut libc::c_void,
        ss_flags: 0,
        ss_size: size - page,
    };
    // SAFETY: `stack` describes memory the caller owns until it disables the stack
    // (`AltStack`'s drop), or for ever (`prepare_thread` on an exiting thread).
    unsafe { libc::sigaltstack(&stack, std::ptr::null_mut()) };
    Some(map as usize)
}

impl Drop for AltStack {
    fn drop(&mut self) {
        let map = self.map.get();
        if map == 0 {
            return;
        }
        let page = crate::stack::page_size();
        let size = ALT_STACK_SIZE.max(libc::SIGSTKSZ) + page;
        let disable = libc::stack_t {
            ss_sp: std::ptr::null_mut(),
            ss_flags: libc::SS_DISABLE,
            ss_size: 0,
        };
        // SAFETY: we disable the alternate stack before unmapping it; no signal handler can be
        // running on it here, because this destructor runs on the thread's normal stack.
        unsafe {
            libc::sigaltstack(&disable, std::ptr::null_mut());
            libc::munmap(map as *mut libc::c_void, size);
        }
    }
}

thread_local! {
    static ALT_STACK: AltStack = const {
        AltStack { map: std::cell::Cell::new(0), checked: std::cell::Cell::new(false) }
    };
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    use crate::stack::Stack;

    /// Set in the child process that a test re-executes this binary as.
    const CHILD: &str = "CORIO_TEST_OVERFLOW_CHILD";

    /// A fault in the guard page of a slot that no coroutine owns is not an overflow: the
    /// handler must not read (and print) that slot's stale or empty header, but pass the fault
    /// on, so that it kills with SIGSEGV as any stray access does.
    #[test]
    fn a_fault_in_the_guard_of_a_slot_not_in_use_is_not_reported_as_an_overflow() {
        let name = "overflow::tests::a_fault_in_the_guard_of_a_slot_not_in_use_is_not_reported_as_an_overflow";
        if std::env::var_os(CHILD).is_some() {
            super::prepare_thread();
            let stack = Stack::new(64 << 10).unwrap();
            let in_guard = stack.limit() - 64;
            drop(stack);
            // SAFETY: none: this deliberately writes into a guard page to fault.
            unsafe { std::ptr::write_volatile(in_guard as *mut u64, 1) };
            unreachable!("the guard page did not fault");
        }
        let out = Command::new(std::env::current_exe().unwrap())
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("overflowed"), "{err}");
        assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{err}");
    }
}
