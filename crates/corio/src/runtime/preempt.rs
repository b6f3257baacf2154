//! Signal-based asynchronous preemption of stackful coroutines (Go's `asyncPreempt`), opt-in.
//!
//! A started stackful coroutine is pinned to its thread, so one that never reaches a runtime
//! operation starves every coroutine pinned to the same worker; sysmon's preempt flag is only
//! read at runtime operations. For coroutines marked preemptible (`TaskBuilder::preemptible`,
//! `Builder::preemptible_coroutines`) corio does what Go does since 1.14:
//!
//! 1. **sysmon signals.** At the tick at which it sets the preempt flag for a running
//!    preemptible coroutine ([`nudge`]) — together, as Go's `preemptone` — sysmon records the
//!    coroutine's id as the target of the worker's [`WorkerSlot`] and sends `SIGURG` to the
//!    worker's thread with `tgkill` (SIGURG, as Go, because programs rarely use it and
//!    its default action is to ignore it). While a preemptible coroutine runs, sysmon ticks at
//!    least every [`WATCH`], so the slice's end is seen within that; after a signal it looks
//!    again within [`RETRY_FIRST`], doubling, in case the handler found no safe point.
//! 2. **The handler checks** ([`handler`]), on the coroutine's own stack (no `SA_ONSTACK`),
//!    that the signal is corio's (the slot has one pending: otherwise it chains to the handler
//!    installed before corio's), and that it interrupted a safe point:
//!    - this thread is a worker and runs the coroutine sysmon meant (its id equals the slot's
//!      target: a coroutine that yielded in the meantime is left alone);
//!    - the coroutine's no-preempt counter is zero (see "The rule" below);
//!    - no thread is panicking, or this one is not (`std::thread::panicking()`; see "Unwinding");
//!    - the interrupted instruction is not in libc, libpthread, the dynamic loader, libgcc_s
//!      (the unwinder), libm, or the vDSO — their text ranges are found once, at installation,
//!      with `dl_iterate_phdr`, by object name — nor in the trampoline below;
//!    - the stack pointer lies on the coroutine's stack, at least [`headroom`] bytes above its
//!      guard page: the red zone, the trampoline's save area, and the yield path's frames.
//!
//!    If any check fails it returns and sysmon tries again at its next tick.
//! 3. **The handler redirects**, as Go's `sigctxt.pushCall`, but in two halves because the
//!    kernel's signal frame lies just below the red zone (Go's handler runs on another stack):
//!    it keeps the interrupted `rip` in the coroutine's state, raises its no-preempt counter,
//!    steps the stack pointer down over the 128-byte red zone and sets `rip` to the
//!    trampoline. No switch happens in the handler.
//! 4. **The trampoline** (assembly below), entered as if the coroutine had called it, pushes
//!    the flags and every general-purpose register, saves the vector, x87 and MXCSR state with
//!    `XSAVE` (or `FXSAVE` where the OS has not enabled `XSAVE`; `cpuid` is read once) into a
//!    64-byte-aligned area below, resets the x87 and MXCSR control state and the direction flag
//!    to what the ABI promises a callee, and calls [`preempted`], which yields like
//!    `corio::yield_now` through the ordinary scheduler path. When the coroutine is resumed,
//!    `preempted` lowers the counter and returns the interrupted `rip`, which the trampoline
//!    stores as its return address (in a slot it reserved first); it restores everything and
//!    returns with `ret 128`, to the interrupted instruction and stack pointer.
//!
//! # The rule: corio's code on a coroutine stack is never preempted
//!
//! corio's own code that runs on a coroutine's stack touches state that other coroutines of the
//! thread touch too: the worker's run queue (a wake, a spawn), the task allocator's per-thread
//! cache, the channel and sync primitives' locks (a coroutine preempted while holding a spin lock
//! would be spun on for ever by the next coroutine of its thread). Its text cannot be told apart
//! by address — corio is compiled into the program, and its generic code into the user's crates
//! — so each coroutine carries a **no-preempt counter** ([`PreemptState::no_preempt`]), raised
//! by a [`NoPreempt`] guard at every entry point through which a coroutine enters corio's code:
//! `block_on` (and through it every blocking-style call: channels, sync, timers, IO, `join`),
//! `yield_now`, the spawn functions, the task waker's vtable, the task allocator, the
//! channel and sync locks, and `scope`'s wait for its children and a scoped child's end
//! (each takes a std mutex the other may take on the same thread). `corio_context`, below the
//! runtime, has critical sections of its own (a bare `Coroutine`'s stack taken from and given
//! back to the thread's stack cache and the arena): it counts them per thread, and the handler
//! refuses while `corio_context::critical::active()`. The counter lives in the coroutine (its
//! task's `Live` block), not in a thread-local, because a coroutine suspended inside `block_on` keeps it raised while other
//! coroutines of the thread run. It is also raised from the coroutine's creation until its
//! closure starts, and again once it returns, which covers the first and last switches.
//! A guard costs one relaxed load of a process-wide flag when no preemptible coroutine was ever
//! spawned.
//!
//! # Unwinding
//!
//! A coroutine preempted in the middle of an unwind would leave the thread's panic count raised
//! while other coroutines run (a panic in one of them would then abort as a double panic). The
//! handler therefore refuses while `std::thread::panicking()` is true. That call is not
//! documented as async-signal-safe; in std it is a relaxed load of a global atomic, then (only if
//! some thread is panicking) a read of a `const`-initialised thread-local `Cell` without a
//! destructor: no lock, no allocation, no lazy initialisation. corio relies on that.
//!
//! # Chaining, and handlers installed later
//!
//! The handler installed before corio's is kept and called for every `SIGURG` that is not
//! corio's own (the kernel's out-of-band notifications, the program's `kill`). A `SIGURG` the
//! program sends to a worker while corio's is pending merges with it (ordinary signals do not
//! queue) and is taken as corio's. A handler installed *after* corio's replaces it: that
//! handler then receives corio's signals (harmless to a handler that treats SIGURG as "go and
//! look"). sysmon notices when its signal to a worker goes untaken, asks the kernel which
//! handler is in place and, if it is not corio's, stops signalling for good and says so once
//! on stderr: preemptible coroutines fall back to cooperative scheduling, and the program's
//! handler gets one of corio's signals.
//!
//! # Limits
//!
//! - x86_64 Linux only (with a dynamically linked libc); elsewhere the options have no effect.
//! - The kernel writes its signal frame (a few KiB with AVX-512 state) on the coroutine's stack
//!   before the handler can check anything: a coroutine that runs within that distance of its
//!   guard page when the signal arrives overflows its stack (and is reported as such).
//! - Objects loaded later with `dlopen` are not in the excluded ranges.
//! - A system call interrupted by the signal may fail with `EINTR` (handlers are installed with
//!   `SA_RESTART`, but some calls, such as `nanosleep`, are never restarted): as in Go.
//! - A migratable coroutine is never preempted: its code may then have cached a thread-local's
//!   address in a register at any instruction (llvm#98479).
//! - A signal handler of the program's that runs on the coroutine's stack (no `SA_ONSTACK`)
//!   is never preempted: it blocks its own signal (and its `sa_mask`) while it runs, and the
//!   handler refuses an interrupted context that blocks a signal the worker does not
//!   (`tests/rt_preempt_handler.rs`; before 2026-12-07 a handler was preempted like any code,
//!   and what it had interrupted — glibc's `malloc`, holding its arena lock — with it, which
//!   deadlocked the worker). A handler installed with `SA_NODEFER` and an empty `sa_mask`
//!   blocks nothing and is not recognised: it must not run on a preemptible coroutine's stack.
//!   A coroutine that blocks signals itself (`pthread_sigmask`) is not preempted meanwhile.

use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering, compiler_fence};

/// What the handler needs to know about one preemptible coroutine; lives in its task's `Live` block
/// (`task/stackful.rs`).
pub(crate) struct PreemptState {
    /// The coroutine's task id (what sysmon names as its target).
    id: u64,
    /// Non-zero while corio's code runs on the coroutine's stack (see "The rule"). Written only
    /// by the coroutine's thread; read by the handler on the same thread.
    no_preempt: AtomicU32,
    /// The lowest usable address of the coroutine's stack (just above its guard).
    limit: AtomicUsize,
    /// An address above every frame of the coroutine's code (its entry frame).
    top: AtomicUsize,
    /// The interrupted instruction, from the handler to the trampoline.
    resume_pc: AtomicUsize,
}

impl PreemptState {
    /// The state of a new coroutine: not preemptible until its closure starts.
    pub(crate) fn new(id: u64) -> PreemptState {
        PreemptState {
            id,
            no_preempt: AtomicU32::new(1),
            limit: AtomicUsize::new(0),
            top: AtomicUsize::new(0),
            resume_pc: AtomicUsize::new(0),
        }
    }

    /// Called on the coroutine's stack as its closure starts: records the stack's bounds and
    /// lowers the counter raised since its creation.
    pub(crate) fn start(&self, limit: usize, top: usize) {
        self.limit.store(limit, Ordering::Relaxed);
        self.top.store(top, Ordering::Relaxed);
        self.leave();
    }

    /// Called on the coroutine's stack when its closure has returned (or unwound).
    pub(crate) fn finish(&self) {
        self.enter();
    }

    #[inline]
    pub(crate) fn enter(&self) {
        // Only this thread writes the counter; the handler that reads it runs on this thread, so
        // plain load/store suffice, and the signal fence keeps the compiler from moving the
        // critical section's accesses above the store (C's `atomic_signal_fence`).
        let n = self.no_preempt.load(Ordering::Relaxed);
        self.no_preempt.store(n + 1, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
    }

    #[inline]
    fn leave(&self) {
        compiler_fence(Ordering::SeqCst);
        let n = self.no_preempt.load(Ordering::Relaxed);
        self.no_preempt.store(n - 1, Ordering::Relaxed);
    }

    /// Raises the counter until the guard drops.
    #[inline]
    pub(crate) fn no_preempt(&self) -> NoPreempt {
        self.enter();
        NoPreempt(self)
    }

    /// The guard of a count raised earlier with [`enter`](Self::enter) (by a caller that keeps
    /// its own guard, `StackfulCtx::no_preempt_here`): lowers the counter when it drops.
    #[inline]
    pub(crate) fn adopt(&self) -> NoPreempt {
        NoPreempt(self)
    }
}

/// Keeps the running coroutine from being preempted while it lives (see "The rule").
pub(crate) struct NoPreempt(*const PreemptState);

impl NoPreempt {
    /// A guard that does nothing (a non-preemptible coroutine, or not a coroutine at all).
    pub(crate) const NONE: NoPreempt = NoPreempt(std::ptr::null());
}

impl Drop for NoPreempt {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a non-null pointer came from `no_preempt` on a state that lives in its
        // coroutine's `Live` block, which outlives the coroutine's code (the guard lives on its
        // stack, or in a value on it, and is dropped before the coroutine finishes).
        if let Some(state) = unsafe { self.0.as_ref() } {
            state.leave();
        }
    }
}

/// Whether any coroutine was ever made preemptible in this process: until then the guards
/// cost one relaxed load.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Raises the no-preempt counter of the preemptible coroutine running on this thread, if any,
/// until the guard drops. For corio's entry points that do not already hold the coroutine's
/// context (see "The rule").
#[inline]
pub(crate) fn guard() -> NoPreempt {
    if !ENABLED.load(Ordering::Relaxed) {
        return NoPreempt::NONE;
    }
    guard_slow()
}

#[inline(never)]
fn guard_slow() -> NoPreempt {
    // SAFETY: CURRENT is set only while the coroutine whose state it names is being resumed on
    // this thread; the state lives in its `Live` block.
    match unsafe { THREAD.with(|t| t.current.get()).as_ref() } {
        Some(state) if on_stack(state) => state.no_preempt(),
        _ => NoPreempt::NONE,
    }
}

/// Raises the no-preempt counter like [`guard`], without a guard: for a lock whose `unlock` is a
/// separate call, which must call [`release`] on the same coroutine with no suspension between.
/// (Its one user, the spinning `chan::core::RawLock`, blocks instead under loom and does not
/// call it there.)
#[cfg(not(loom))]
#[inline]
pub(crate) fn hold() {
    std::mem::forget(guard());
}

/// Lowers what [`hold`] raised. (A coroutine whose state `hold` could find was marked
/// preemptible after `ENABLED` was set, so `hold` raised the counter exactly when this finds it.)
#[cfg(not(loom))]
#[inline]
pub(crate) fn release() {
    if ENABLED.load(Ordering::Relaxed) {
        release_slow();
    }
}

#[cfg(not(loom))]
#[inline(never)]
fn release_slow() {
    // SAFETY: as in `guard_slow`.
    if let Some(state) = unsafe { THREAD.with(|t| t.current.get()).as_ref() }
        && on_stack(state)
    {
        state.leave();
    }
}

/// Whether the caller runs on the stack of the coroutine `state` describes (not on a bare
/// `Coroutine` it resumed, nor on the worker's stack between resumes).
#[inline]
fn on_stack(state: &PreemptState) -> bool {
    let here = 0u8;
    let sp = std::ptr::from_ref(&here) as usize;
    state.limit.load(Ordering::Relaxed) <= sp && sp < state.top.load(Ordering::Relaxed)
}

/// The per-worker half: what sysmon and the handler share.
#[derive(Default)]
pub(crate) struct WorkerSlot {
    /// The worker's thread while it runs, as the process id and kernel thread id `tgkill`
    /// takes (cleared before it exits, under the lock that sysmon holds while it signals, so
    /// sysmon never signals a thread that is gone, nor a recycled id).
    thread: Mutex<Option<(libc::pid_t, libc::pid_t)>>,
    /// The id of the preemptible coroutine being resumed on this worker now, 0 if none.
    running: AtomicU64,
    /// The coroutine sysmon wants preempted (taken by the handler).
    target: AtomicU64,
    /// 1 while a signal sent is not yet seen by the handler (see "Chaining"; never more:
    /// `signal`).
    pending: AtomicU32,
    /// Signals sysmon sent to this worker.
    pub(crate) signals: AtomicU64,
    /// Preemptions: times a coroutine of this worker yielded through the trampoline.
    pub(crate) preemptions: AtomicU64,
    /// corio's signals that found no preemptible coroutine running (it had yielded, or a
    /// non-preemptible one ran in its place).
    pub(crate) stray: AtomicU64,
}

/// Per-thread pointers the handler reads (const-initialised, no destructor: a plain TLS load).
struct ThreadState {
    /// This thread's worker slot while it runs its loop.
    slot: Cell<*const WorkerSlot>,
    /// The worker thread's signal mask, recorded when it registers: an interrupted context
    /// that blocks a signal this does not is inside a signal handler (see `try_preempt`).
    mask: Cell<libc::sigset_t>,
    /// The preemptible coroutine being resumed on this thread (set on the worker's stack around
    /// the resume, so it never outlives it).
    current: Cell<*const PreemptState>,
}

thread_local! {
    static THREAD: ThreadState = const {
        ThreadState {
            slot: Cell::new(std::ptr::null()),
            // SAFETY: an all-zero `sigset_t` is the empty set.
            mask: Cell::new(unsafe { std::mem::zeroed() }),
            current: Cell::new(std::ptr::null()),
        }
    };
}

/// Registers the calling worker thread with its slot until the guard drops.
pub(crate) fn register_worker(slot: &WorkerSlot) -> WorkerRegistration<'_> {
    // SAFETY: getpid and gettid have no preconditions.
    let me = unsafe { (libc::getpid(), libc::gettid()) };
    *slot.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(me);
    // SAFETY: an all-zero `sigset_t` is the empty set; the call only reads this thread's mask
    // into it.
    let mask = unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
        mask
    };
    THREAD.with(|t| {
        t.mask.set(mask);
        t.slot.set(slot);
    });
    WorkerRegistration(slot)
}

/// Unregisters the worker thread (see [`register_worker`]).
pub(crate) struct WorkerRegistration<'a>(&'a WorkerSlot);

impl Drop for WorkerRegistration<'_> {
    fn drop(&mut self) {
        THREAD.with(|t| t.slot.set(std::ptr::null()));
        *self.0.thread.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Marks `state`'s coroutine as running on this worker until the guard drops. Called on the
/// worker's stack around the resume.
#[inline]
pub(crate) fn enter_resume(state: &PreemptState) -> ResumeGuard {
    let slot = THREAD.with(|t| {
        t.current.set(state);
        t.slot.get()
    });
    // SAFETY: the slot lives in the runtime's `Shared`, which the worker holds while its
    // registration (which set the pointer) lives.
    if let Some(slot) = unsafe { slot.as_ref() } {
        // Relaxed: sysmon only compares ids; the handler runs on this thread.
        slot.running.store(state.id, Ordering::Relaxed);
    }
    ResumeGuard(slot)
}

/// Clears what [`enter_resume`] set.
pub(crate) struct ResumeGuard(*const WorkerSlot);

impl Drop for ResumeGuard {
    #[inline]
    fn drop(&mut self) {
        THREAD.with(|t| t.current.set(std::ptr::null()));
        // SAFETY: as in `enter_resume`.
        if let Some(slot) = unsafe { self.0.as_ref() } {
            slot.running.store(0, Ordering::Relaxed);
        }
    }
}

/// How often sysmon looks at a worker while a preemptible coroutine runs on it: the end of
/// its 10 ms slice is seen within this (sysmon's back-off delay, up to 10 ms, made slices of
/// 10–20 ms), and the signal goes at once. One tick costs sysmon a few clock reads.
pub(crate) const WATCH: std::time::Duration = std::time::Duration::from_millis(1);

/// The first retry after a signal whose handler found no safe point (the hog was inside libc
/// or the vDSO: a hog that reads the clock spends most of its time there). It doubles with
/// every signal of the same slice up to [`WATCH`], so that a hog inside a long libc call is
/// not signalled more than about a thousand times a second.
const RETRY_FIRST: std::time::Duration = std::time::Duration::from_micros(50);

/// Whether a preemptible coroutine is being resumed on `slot`'s worker now.
pub(crate) fn runs_preemptible(slot: &WorkerSlot) -> bool {
    // Relaxed: a hint for sysmon's next tick.
    slot.running.load(Ordering::Relaxed) != 0
}

/// Called by sysmon each tick at which it finds the worker of `slot` running one task for a
/// whole time slice, after setting the worker's preempt flag: if that task is a preemptible
/// coroutine, signals it at once (Go's `preemptone` sets the flag and signals together) and
/// returns when sysmon should look again, which is sooner the fewer `signals` this slice has
/// had (see [`RETRY_FIRST`]); `None` for any other task.
pub(crate) fn nudge(slot: &WorkerSlot, signals: u32) -> Option<std::time::Duration> {
    let id = slot.running.load(Ordering::Relaxed);
    if id == 0 || !handler_in_place(slot) {
        return None;
    }
    signal(slot, id);
    Some(RETRY_FIRST.saturating_mul(1 << signals.min(8)).min(WATCH))
}

/// Set once sysmon found corio's handler replaced (see "Chaining, and handlers installed
/// later"): no more preemption signals.
static REPLACED: AtomicBool = AtomicBool::new(false);

/// Whether corio's handler still receives SIGURG. Asked of the kernel only when the last
/// signal to `slot`'s worker is still pending (not taken by corio's handler: it was replaced,
/// or the thread has not run since), so that an ordinary signal costs no extra system call.
/// The first time it finds the handler replaced it says so on stderr, once.
fn handler_in_place(slot: &WorkerSlot) -> bool {
    if REPLACED.load(Ordering::Relaxed) {
        return false;
    }
    // Relaxed: a heuristic; a false "pending" only costs one `sigaction` query.
    if slot.pending.load(Ordering::Relaxed) == 0 || imp::installed() {
        return true;
    }
    if !REPLACED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "corio: the SIGURG handler was replaced after the runtime installed its own; \
             signal preemption is off from now on (preemptible coroutines are scheduled \
             cooperatively). Install the handler before building the runtime, so that corio \
             chains to it."
        );
    }
    false
}

/// Asks the handler on `slot`'s thread to preempt coroutine `id`.
fn signal(slot: &WorkerSlot, id: u64) -> bool {
    let thread = slot.thread.lock().unwrap_or_else(|e| e.into_inner());
    let Some((pid, tid)) = *thread else {
        return false;
    };
    // Looked at again, now that the lock is taken: the coroutine may have suspended since the
    // caller read `running` (sysmon's thread may have been descheduled in between). A signal
    // can still arrive after it suspends — the look and the arrival are never one step — and
    // the handler counts it as a stray and ignores it; this only keeps the window short.
    if slot.running.load(Ordering::Relaxed) != id {
        return false;
    }
    slot.target.store(id, Ordering::Relaxed);
    // One signal in flight at a time (senders hold the `thread` lock): a second one sent
    // before the thread took the first merges with it (ordinary signals do not queue), and a
    // count of two would leave one the handler never takes, so that a later SIGURG of the
    // program's own would be taken for corio's. Release: pairs with the Acquire in the
    // handler's `take_pending`, which then sees `target`.
    if slot
        .pending
        .compare_exchange(0, 1, Ordering::Release, Ordering::Relaxed)
        .is_err()
    {
        return false;
    }
    // A raw `tgkill`, not `pthread_kill`: glibc's wraps it in `getpid` and two
    // `rt_sigprocmask` calls, four system calls per signal on sysmon's tick instead of one.
    // SAFETY: the thread is registered, so alive and its id not recycled: it clears its
    // registration under the lock we hold before it exits. tgkill takes three integers.
    if unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGURG) } == 0 {
        slot.signals.fetch_add(1, Ordering::Relaxed);
        true
    } else {
        slot.pending.store(0, Ordering::Relaxed);
        false
    }
}

impl super::Runtime {
    /// Sends the preemption signal now to every worker running a preemptible coroutine,
    /// without waiting for a time slice to pass; how many were signalled. For tests and
    /// benchmarks that need many preemptions (the handler's checks all apply).
    #[doc(hidden)]
    pub fn preempt_running_coroutines(&self) -> usize {
        self.handle
            .shared
            .workers
            .iter()
            .map(|w| &w.preempt_signal)
            .filter(|slot| {
                let id = slot.running.load(Ordering::Relaxed);
                id != 0 && signal(slot, id)
            })
            .count()
    }
}

/// Installs the handler (once) and turns the guards on; whether preemption is available.
pub(crate) fn enable() -> bool {
    let ok = imp::install();
    if ok {
        ENABLED.store(true, Ordering::Relaxed);
    }
    ok
}

/// How many bytes of stack the handler wants between the interrupted stack pointer and the
/// guard page: the red zone, the return address, the trampoline's registers and save area
/// (with its alignment), and frames for the yield path.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
fn headroom(save_area: usize) -> usize {
    const RED_ZONE: usize = 128;
    const PUSHED: usize = 8 + 16 * 8; // return address, flags and 15 registers
    const YIELD_FRAMES: usize = 12 << 10;
    RED_ZONE + PUSHED + save_area + 64 + YIELD_FRAMES
}

/// What the trampoline calls, on the coroutine's stack with its registers saved: yields the
/// coroutine like `corio::yield_now`, then lowers the no-preempt counter that the handler
/// raised, and returns the interrupted instruction's address for the trampoline to return to.
/// Never unwinds (a cancellation that arrives meanwhile is recorded and raised at the
/// coroutine's next ordinary suspension).
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
extern "C" fn preempted() -> usize {
    let (slot, state) = THREAD.with(|t| (t.slot.get(), t.current.get()));
    // SAFETY: both were set for this thread and this coroutine by `register_worker` and
    // `enter_resume`, whose guards live in the worker's frame that resumed us: the handler
    // that sent us here checked that they are set.
    let (slot, state) = unsafe { (&*slot, &*state) };
    // Read before anything else: the counter the handler raised keeps other signals away
    // until `leave` below.
    let pc = state.resume_pc.load(Ordering::Relaxed);
    slot.preemptions.fetch_add(1, Ordering::Relaxed);
    if let super::context::Here::Stackful(ctx) = super::context::here() {
        ctx.preempt_yield();
    }
    state.leave();
    pc
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imp {
    //! The x86_64 Linux half: the handler, the trampoline, the excluded ranges.

    use std::mem::MaybeUninit;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{PreemptState, THREAD, WorkerSlot, headroom};

    /// Bytes the trampoline reserves for XSAVE/FXSAVE (a multiple of 64), read by its code.
    static CORIO_PREEMPT_SAVE_SIZE: AtomicUsize = AtomicUsize::new(4096);
    /// 1 if the trampoline uses XSAVE, 0 for FXSAVE; read by its code.
    static CORIO_PREEMPT_USE_XSAVE: AtomicUsize = AtomicUsize::new(0);

    /// Text ranges where the handler never preempts.
    const MAX_RANGES: usize = 32;
    static RANGES: [(AtomicUsize, AtomicUsize); MAX_RANGES] =
        [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; MAX_RANGES];
    static RANGE_COUNT: AtomicUsize = AtomicUsize::new(0);

    /// The handler that was installed before ours (written before ours is installed).
    struct Previous(std::cell::UnsafeCell<MaybeUninit<libc::sigaction>>);
    // SAFETY: written only inside `INSTALLED`'s initialisation, before the handler that reads
    // it exists; read-only afterwards.
    unsafe impl Sync for Previous {}
    static PREVIOUS: Previous = Previous(std::cell::UnsafeCell::new(MaybeUninit::uninit()));

    static INSTALLED: OnceLock<bool> = OnceLock::new();

    pub(super) fn install() -> bool {
        *INSTALLED.get_or_init(|| {
            init_save_area();
            find_excluded_ranges();
            if RANGE_COUNT.load(Ordering::Relaxed) == 0 {
                // No libc found by name (a static build): its code cannot be told apart.
                return false;
            }
            // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe; PREVIOUS
            // is written before the handler that reads it is installed.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                let previous = (*PREVIOUS.0.get()).as_mut_ptr();
                libc::sigaction(libc::SIGURG, std::ptr::null(), previous);
                libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut()) == 0
            }
        })
    }

    /// Whether the SIGURG handler in place is still corio's (see `handler_in_place`).
    pub(super) fn installed() -> bool {
        // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only queries.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGURG, std::ptr::null(), &mut current) == 0
                && current.sa_sigaction == handler as *const () as usize
        }
    }

    /// Reads with `cpuid` whether the OS enabled XSAVE, and how large its area is.
    fn init_save_area() {
        use std::arch::x86_64::__cpuid_count;
        // cpuid exists on every x86_64 CPU; leaf 0xD is read only when XSAVE is on.
        let (xsave, size) = {
            let leaf1 = __cpuid_count(1, 0);
            let osxsave = leaf1.ecx & (1 << 26) != 0 && leaf1.ecx & (1 << 27) != 0;
            if osxsave {
                // EBX: the size the enabled features (XCR0) need.
                (true, __cpuid_count(0xD, 0).ebx as usize)
            } else {
                (false, 512)
            }
        };
        CORIO_PREEMPT_SAVE_SIZE.store(size.max(576).next_multiple_of(64), Ordering::Relaxed);
        CORIO_PREEMPT_USE_XSAVE.store(usize::from(xsave), Ordering::Relaxed);
    }

    /// Objects whose code is never preempted, matched against `dl_iterate_phdr` names.
    const EXCLUDED: [&[u8]; 9] = [
        b"libc.so",
        b"libpthread",
        b"ld-linux",
        b"ld64.so",
        b"linux-vdso",
        b"linux-gate",
        b"libgcc_s",
        b"libm.so",
        b"librt",
    ];

    fn find_excluded_ranges() {
        unsafe extern "C" fn each(
            info: *mut libc::dl_phdr_info,
            _size: libc::size_t,
            _data: *mut libc::c_void,
        ) -> libc::c_int {
            // SAFETY: dl_iterate_phdr passes a valid info for the duration of the call; its
            // name is a NUL-terminated string or null, its headers an array of dlpi_phnum.
            unsafe {
                let info = &*info;
                if info.dlpi_name.is_null() {
                    return 0;
                }
                let name = std::ffi::CStr::from_ptr(info.dlpi_name).to_bytes();
                let base = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
                if !EXCLUDED.iter().any(|e| base.starts_with(e)) {
                    return 0;
                }
                for i in 0..usize::from(info.dlpi_phnum) {
                    let ph = &*info.dlpi_phdr.add(i);
                    if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
                        let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
                        add_range(start, start + ph.p_memsz as usize);
                    }
                }
            }
            0
        }
        // SAFETY: the callback only reads what it is given.
        unsafe { libc::dl_iterate_phdr(Some(each), std::ptr::null_mut()) };
    }

    fn add_range(start: usize, end: usize) {
        let n = RANGE_COUNT.load(Ordering::Relaxed);
        if n < MAX_RANGES {
            RANGES[n].0.store(start, Ordering::Relaxed);
            RANGES[n].1.store(end, Ordering::Relaxed);
            // Release: pairs with the Acquire in `excluded` (the handler is installed later
            // anyway, by the same thread).
            RANGE_COUNT.store(n + 1, Ordering::Release);
        }
    }

    fn excluded(pc: usize) -> bool {
        let trampoline = corio_preempt_trampoline as *const () as usize;
        let trampoline_end = corio_preempt_trampoline_end as *const () as usize;
        if (trampoline..trampoline_end).contains(&pc) {
            return true;
        }
        let n = RANGE_COUNT.load(Ordering::Acquire);
        RANGES[..n].iter().any(|(start, end)| {
            (start.load(Ordering::Relaxed)..end.load(Ordering::Relaxed)).contains(&pc)
        })
    }

    unsafe extern "C" {
        fn corio_preempt_trampoline();
        fn corio_preempt_trampoline_end();
    }

    /// The SIGURG handler (see the module docs, steps 2 and 3).
    extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
        // SAFETY: errno is this thread's; saved and restored so the interrupted code never sees
        // a change.
        let errno = unsafe { *libc::__errno_location() };
        let slot = THREAD.with(|t| t.slot.get());
        // SAFETY: set only while this thread runs its worker loop, which holds the runtime.
        let ours = match unsafe { slot.as_ref() } {
            // Acquire: pairs with the Release increment in `nudge`.
            Some(slot) => take_pending(slot).then(|| {
                // SAFETY: the kernel passes a valid ucontext to an SA_SIGINFO handler.
                unsafe { try_preempt(slot, &mut *(uctx as *mut libc::ucontext_t)) }
            }),
            None => None,
        };
        if ours.is_none() {
            // SAFETY: as documented on `chain`.
            unsafe { chain(sig, info, uctx) };
        }
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }

    fn take_pending(slot: &WorkerSlot) -> bool {
        // A compare-exchange loop rather than `fetch_update` (deprecated on nightly for
        // `try_update`, which is newer than the crate's MSRV).
        let mut n = slot.pending.load(Ordering::Relaxed);
        while n > 0 {
            match slot
                .pending
                .compare_exchange_weak(n, n - 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    /// The checks and the redirection, for a signal that is corio's.
    ///
    /// # Safety
    ///
    /// `uc` is the interrupted context of this thread, passed to its SIGURG handler.
    unsafe fn try_preempt(slot: &WorkerSlot, uc: &mut libc::ucontext_t) {
        let target = slot.target.swap(0, Ordering::Relaxed);
        // SAFETY: CURRENT is set only around a resume on this thread; the state lives in the
        // coroutine's `Live` block for that long.
        let Some(state): Option<&PreemptState> =
            (unsafe { THREAD.with(|t| t.current.get()).as_ref() })
        else {
            slot.stray.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if state.id != target {
            slot.stray.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if state.no_preempt.load(Ordering::Relaxed) != 0
            || std::thread::panicking()
            || corio_context::critical::active()
        {
            return;
        }
        // Inside a signal handler of the program's that runs on the coroutine's stack: the
        // code it interrupted (glibc's `malloc`, say) would stay suspended with it. A running
        // handler blocks its own signal and its `sa_mask` beyond the worker's mask.
        if in_signal_handler(&uc.uc_sigmask) {
            return;
        }
        let regs = &mut uc.uc_mcontext.gregs;
        let pc = regs[libc::REG_RIP as usize] as usize;
        let sp = regs[libc::REG_RSP as usize] as usize;
        if excluded(pc) {
            return;
        }
        let need = headroom(super::imp::CORIO_PREEMPT_SAVE_SIZE.load(Ordering::Relaxed));
        let limit = state.limit.load(Ordering::Relaxed);
        let top = state.top.load(Ordering::Relaxed);
        if sp >= top || sp < limit.saturating_add(need) {
            return;
        }
        // Go's pushCall, in two halves: the kernel's signal frame lies just below the red zone,
        // so nothing may be written there now. The handler steps the stack pointer over the
        // red zone and leaves the interrupted pc in the coroutine's state; the trampoline
        // writes it as its return address once the frame is gone, and returns with `ret 128`.
        // The counter raised here keeps further signals away until `preempted` lowers it.
        state.resume_pc.store(pc, Ordering::Relaxed);
        state.enter();
        regs[libc::REG_RSP as usize] = (sp - 128) as i64;
        regs[libc::REG_RIP as usize] = corio_preempt_trampoline as *const () as usize as i64;
    }

    /// Whether `interrupted`, the signal mask of the interrupted context, blocks a signal that
    /// the worker's own mask does not: then a signal handler was running (the kernel adds the
    /// handler's signal and its `sa_mask` while it runs), or the coroutine blocked signals
    /// itself; either way it is no place to suspend. A handler installed with `SA_NODEFER`
    /// and an empty `sa_mask` blocks nothing, and is not seen (module docs, "Limits").
    fn in_signal_handler(interrupted: &libc::sigset_t) -> bool {
        let worker = THREAD.with(|t| t.mask.get());
        // The kernel's signals are 1 to 64 (`_NSIG - 1`); `sigismember` is async-signal-safe.
        // SAFETY: both sets are initialised; `sigismember` only reads them.
        (1..=64).any(|signal| unsafe {
            libc::sigismember(interrupted, signal) == 1 && libc::sigismember(&worker, signal) != 1
        })
    }

    /// Passes a signal that is not corio's to the handler installed before ours.
    ///
    /// # Safety
    ///
    /// Called from our SIGURG handler with the arguments it received.
    unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
        // SAFETY: PREVIOUS was written before our handler was installed.
        let previous = unsafe { (*PREVIOUS.0.get()).assume_init_ref() };
        let action = previous.sa_sigaction;
        if action == libc::SIG_DFL || action == libc::SIG_IGN {
            return; // SIGURG's default action is to ignore it
        }
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the previous handler was installed as a three-argument handler.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(action) };
            f(sig, info, uctx);
        } else {
            // SAFETY: the previous handler was installed as a one-argument handler.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(action) };
            f(sig);
        }
    }

    // The trampoline (module docs, step 4). Entered with rsp = the interrupted rsp - 128 (below
    // the red zone), at any alignment; leaves every register, the flags and the vector/x87
    // state as it found them.
    std::arch::global_asm!(
        ".text",
        ".p2align 4",
        ".globl corio_preempt_trampoline",
        ".type corio_preempt_trampoline,@function",
        "corio_preempt_trampoline:",
        // The slot for the return address (lea: the flags are not saved yet).
        "lea rsp, [rsp - 8]",
        "pushfq",
        "push rax",
        "push rcx",
        "push rdx",
        "push rbx",
        "push rbp",
        "push rsi",
        "push rdi",
        "push r8",
        "push r9",
        "push r10",
        "push r11",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "mov rbp, rsp",
        "cld",
        "sub rsp, qword ptr [rip + {save_size}]",
        "and rsp, -64",
        // The XSAVE header must be zero before the first XSAVE into the area.
        "xor eax, eax",
        "mov qword ptr [rsp + 512], rax",
        "mov qword ptr [rsp + 520], rax",
        "mov qword ptr [rsp + 528], rax",
        "mov qword ptr [rsp + 536], rax",
        "mov qword ptr [rsp + 544], rax",
        "mov qword ptr [rsp + 552], rax",
        "mov qword ptr [rsp + 560], rax",
        "mov qword ptr [rsp + 568], rax",
        "mov eax, -1",
        "mov edx, -1",
        "cmp qword ptr [rip + {use_xsave}], 0",
        "je 2f",
        "xsave64 [rsp]",
        "jmp 3f",
        "2:",
        "fxsave64 [rsp]",
        "3:",
        // What the ABI promises a callee: an empty x87 stack with the default control word,
        // MXCSR's default control bits (the state above holds the interrupted values).
        "fninit",
        "sub rsp, 16",
        "mov dword ptr [rsp], 0x1f80",
        "ldmxcsr dword ptr [rsp]",
        "add rsp, 16",
        "call {preempted}",
        // The interrupted pc, into the return-address slot above the 16 saved words.
        "mov qword ptr [rbp + 128], rax",
        "mov eax, -1",
        "mov edx, -1",
        "cmp qword ptr [rip + {use_xsave}], 0",
        "je 4f",
        "xrstor64 [rsp]",
        "jmp 5f",
        "4:",
        "fxrstor64 [rsp]",
        "5:",
        "mov rsp, rbp",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop r11",
        "pop r10",
        "pop r9",
        "pop r8",
        "pop rdi",
        "pop rsi",
        "pop rbp",
        "pop rbx",
        "pop rdx",
        "pop rcx",
        "pop rax",
        "popfq",
        // Back to the interrupted instruction, and back over the red zone.
        "ret 128",
        ".globl corio_preempt_trampoline_end",
        "corio_preempt_trampoline_end:",
        "ud2",
        ".size corio_preempt_trampoline, . - corio_preempt_trampoline",
        preempted = sym super::preempted,
        save_size = sym CORIO_PREEMPT_SAVE_SIZE,
        use_xsave = sym CORIO_PREEMPT_USE_XSAVE,
    );
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod imp {
    //! Other targets: preemption is unsupported and the options have no effect.

    pub(super) fn install() -> bool {
        false
    }

    pub(super) fn installed() -> bool {
        false
    }
}
