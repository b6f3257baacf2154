//! Coroutine stacks: slots of a guarded arena, cached per thread.
//!
//! A stack is a *slot* of the arena (`arena.rs`): a guard page at the bottom, then the stack,
//! growing down from the slot's top. Physical pages are committed by the kernel on first touch,
//! which is how a stack "grows": a coroutine that never goes deeper than one page costs one page
//! of memory, whatever its stack size. Slots are reused through per-thread caches (`pool.rs`)
//! and the arena's free lists; pages of slots that go cold are given back to the kernel.
//!
//! The top of every slot holds a `SlotHeader` naming the coroutine that owns it, so that the
//! overflow handler (`overflow.rs`) can say which coroutine overflowed from the fault address
//! alone. Below the header, each new stack starts at a rotating offset of 0–1984 bytes in steps
//! of 64 B, so that the top frames of many coroutines do not all map to the same L1 cache sets
//! (Photon measured 13% vs 0.01% L1D misses among 256 coroutines with identically aligned tops).
//!
//! ```text
//!  slot top ─┬────────────────────────────┐
//!            │ SlotHeader (64 B)          │
//!            │ rotating offset (0-1984 B) │
//!  start ────┼────────────────────────────┤
//!            │ the coroutine's frames     │  ≥ stack_size bytes
//!            │            ↓               │
//!            ├────────────────────────────┤
//!            │ guard page                 │
//!  slot base ┴────────────────────────────┘
//! ```
//!
//! Go grows stacks by copying them; Rust cannot (a reference to a local would dangle after the
//! copy, and nothing tells the runtime where such references are), nor share one stack between
//! coroutines by copying it out on every switch, for the same reason. `docs/stacks.md` has the
//! whole argument.

mod arena;
mod os;
mod pool;

use std::io;
use std::panic::Location;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use self::arena::SizeClass;
pub(crate) use self::arena::find_slot;
pub(crate) use self::os::page_size;

/// The stack size a coroutine gets when none is asked for: 256 KiB.
///
/// Only touched pages cost memory, so the size is a limit, not an allocation: a parked
/// coroutine that used one page costs one page. 256 KiB lets a panic with `RUST_BACKTRACE=1`
/// (about 24 KiB) and ordinary library code (formatting, parsers, debug builds) run, while a
/// million such stacks reserve 264 GiB of the 128 TiB of address space and, at one touched page
/// each, about 4 GiB of memory (plus 0.5 KiB of page table each, which RSS does not show).
pub const DEFAULT_STACK_SIZE: usize = 256 << 10;

/// The smallest stack a coroutine can have: 16 KiB (smaller sizes are rounded up to it).
pub const MIN_STACK_SIZE: usize = 16 << 10;

/// The largest stack a coroutine can have: 1 GiB, like Go's default `SetMaxStack`.
pub const MAX_STACK_SIZE: usize = 1 << 30;

/// Bytes at the top of a slot for the header.
const HEADER_SIZE: usize = 64;

/// Steps of the rotating offset, and the size of one step (a cache line).
const ROTATION_STEPS: usize = 32;
const ROTATION_STEP: usize = 64;

/// Bytes of a slot above the coroutine's frames: header plus the largest offset.
const TOP_RESERVE: usize = HEADER_SIZE + (ROTATION_STEPS - 1) * ROTATION_STEP;

/// Who owns a slot, written when a coroutine is created and read by the overflow handler.
///
/// `id` is nonzero exactly while the slot is in use: stored last (Release) when a coroutine is
/// created on the slot, cleared when the slot is released; the handler reads the other fields
/// only after an Acquire load of a nonzero id.
///
/// Atomics with Relaxed ordering: the handler runs on the thread that runs the coroutine, which
/// is the thread that wrote the header or one that received the coroutine through a
/// synchronising hand-off (a run queue), so the values are visible; atomics keep the compiler
/// from assuming the handler's reads cannot observe the stores.
#[repr(C, align(64))]
pub(crate) struct SlotHeader {
    pub(crate) id: AtomicU64,
    pub(crate) name_ptr: AtomicPtr<u8>,
    pub(crate) name_len: AtomicUsize,
    pub(crate) location: AtomicPtr<Location<'static>>,
    pub(crate) stack_size: AtomicUsize,
}

const _: () = assert!(std::mem::size_of::<SlotHeader>() == HEADER_SIZE);

/// A stack slot owned by one coroutine; dropping it returns the slot to the thread's cache.
pub(crate) struct Stack {
    class: &'static SizeClass,
    /// One past the slot's highest address (page aligned).
    top: usize,
    /// Where the coroutine's frames start: below the header and the rotating offset.
    start: usize,
}

/// Rounds `size` up to a multiple of `to` (a power of two).
const fn round_up(size: usize, to: usize) -> usize {
    (size + to - 1) & !(to - 1)
}

/// The page-rounded stack size and the slot size for a requested stack size.
pub(crate) fn slot_geometry(size: usize) -> io::Result<(usize, usize)> {
    if size > MAX_STACK_SIZE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "corio: a coroutine stack of {size} bytes was asked for; the largest is {} MiB",
                MAX_STACK_SIZE >> 20
            ),
        ));
    }
    let page = os::page_size();
    let stack = round_up(size.max(MIN_STACK_SIZE), page);
    Ok((stack, page + round_up(stack + TOP_RESERVE, page)))
}

impl Stack {
    /// Takes a slot for a stack of at least `size` bytes.
    #[inline]
    pub(crate) fn new(size: usize) -> io::Result<Stack> {
        let (stack_size, slot_size) = slot_geometry(size)?;
        let (class, top, rotation) = {
            let _section = crate::critical::Section::enter();
            pool::alloc(stack_size, slot_size)?
        };
        let offset = (rotation % ROTATION_STEPS) * ROTATION_STEP;
        Ok(Stack {
            class,
            top,
            start: top - HEADER_SIZE - offset,
        })
    }

    /// The slot's header.
    #[inline]
    pub(crate) fn header(&self) -> &SlotHeader {
        // SAFETY: the top HEADER_SIZE bytes of a slot we own are readable and writable memory,
        // aligned to 64 (slot tops are page aligned), and only this slot's owner uses them.
        unsafe { &*((self.top - HEADER_SIZE) as *const SlotHeader) }
    }

    /// Where the coroutine's frames start (the highest usable address, exclusive).
    #[inline]
    pub(crate) fn start(&self) -> usize {
        self.start
    }

    /// The lowest usable address (just above the guard).
    #[inline]
    pub(crate) fn limit(&self) -> usize {
        self.top - self.class.slot_size + self.class.guard_size
    }

    /// The stack size, as asked for, rounded to pages.
    #[inline]
    pub(crate) fn size(&self) -> usize {
        self.class.stack_size
    }
}

impl Drop for Stack {
    #[inline]
    fn drop(&mut self) {
        // The slot is no longer in use: the overflow handler ignores its header from now on.
        self.header().id.store(0, Ordering::Relaxed);
        // SAFETY: the frames of the slot's coroutine are gone (finished, unwound or never
        // started); the next owner starts from clean shadow (see `crate::sanitizer`).
        #[cfg(corio_asan)]
        unsafe {
            crate::sanitizer::unpoison(self.limit(), self.top - HEADER_SIZE)
        };
        let _section = crate::critical::Section::enter();
        pool::free(self.class, self.top);
    }
}

/// How guard pages are made in this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GuardKind {
    /// `madvise(MADV_GUARD_INSTALL)` (Linux 6.13+): no extra mapping per stack.
    GuardInstall,
    /// `mprotect(PROT_NONE)`: two mappings per stack, limited by `vm.max_map_count`.
    Mprotect,
}

/// A snapshot of the stack arena, for reports and leak checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StackStats {
    /// Slots ever carved from reservations.
    pub carved: usize,
    /// Free slots in thread caches.
    pub cached: usize,
    /// Free slots in the arena's shared free lists.
    pub free: usize,
    /// Slots owned by coroutines now (`carved - cached - free`).
    pub in_use: usize,
}

/// Counts the arena's slots, over every stack size.
///
/// Thread caches publish their lengths without synchronising with each other, so while other
/// threads create and finish coroutines the counts are approximate; when they are quiet the
/// snapshot is exact.
///
/// ```
/// use corio_context::{coroutine::Coroutine, stack};
///
/// let mut co: Coroutine<(), (), ()> = Coroutine::new(|_, ()| {});
/// assert_eq!(stack::stats().in_use, 1);
/// co.resume(()); // finished: its stack is back in this thread's cache
/// assert_eq!(stack::stats().in_use, 0);
/// assert!(stack::stats().cached >= 1);
/// ```
pub fn stats() -> StackStats {
    let _section = crate::critical::Section::enter();
    let mut stats = StackStats::default();
    SizeClass::for_each(|class| {
        stats.carved += class.carved.load(Ordering::Relaxed);
        stats.cached += pool::cached_count(class);
        stats.free += class.free_count();
    });
    stats.in_use = stats.carved.saturating_sub(stats.cached + stats.free);
    stats
}

/// Counts the arena's slots for one stack size (as passed to
/// [`Builder::stack_size`](crate::coroutine::Builder::stack_size)); all zero if no coroutine of
/// that size was ever created. The same caveat as for [`stats`] applies.
pub fn stats_for_size(size: usize) -> StackStats {
    let _section = crate::critical::Section::enter();
    let mut stats = StackStats::default();
    let Ok((_, slot_size)) = slot_geometry(size) else {
        return stats;
    };
    SizeClass::for_each(|class| {
        if class.slot_size == slot_size {
            stats.carved = class.carved.load(Ordering::Relaxed);
            stats.cached = pool::cached_count(class);
            stats.free = class.free_count();
        }
    });
    stats.in_use = stats.carved.saturating_sub(stats.cached + stats.free);
    stats
}

/// Checks that a stack of `size` bytes can be created (not above [`MAX_STACK_SIZE`]).
///
/// # Errors
///
/// `ErrorKind::InvalidInput` with a message naming the limit.
pub fn validate_size(size: usize) -> io::Result<()> {
    slot_geometry(size).map(|_| ())
}

/// Makes sure a stack of `size` bytes can be had on this thread right now: the thread's cache
/// holds a free slot of that size, or the arena can provide one (which then goes to the cache).
/// Nothing is taken: a scheduler that creates stacks lazily uses this to report exhaustion when
/// a coroutine is spawned rather than when it first runs.
///
/// # Errors
///
/// As [`Builder::build`](crate::coroutine::Builder::build).
pub fn ensure_available(size: usize) -> io::Result<()> {
    let _section = crate::critical::Section::enter();
    // A spawning loop asks for the same size each time: one look at the thread's cache.
    if pool::known_available(size) {
        return Ok(());
    }
    let (stack_size, slot_size) = slot_geometry(size)?;
    pool::ensure_available(size, stack_size, slot_size)
}

/// How this process makes guard pages (probed on first use; `CORIO_STACK_GUARD=mprotect`
/// forces the fallback, for testing it).
pub fn guard_kind() -> GuardKind {
    match arena::guard_mode() {
        os::GuardMode::Madvise => GuardKind::GuardInstall,
        os::GuardMode::Mprotect => GuardKind::Mprotect,
    }
}

/// Gives the calling thread's cached free slots back to the arena, releasing their memory.
///
/// Threads do this themselves when they exit; a long-lived thread that ran a burst of
/// coroutines can call it to hand back the memory sooner.
pub fn trim_thread_cache() {
    let _section = crate::critical::Section::enter();
    pool::trim_thread_cache();
}

/// Which execution context the calling code runs in, by its stack: the top of the coroutine
/// stack slot that holds the caller's frame, or 0 on a stack that is not a coroutine's (a
/// thread's own). Two pieces of code running at the same time with the same value share one
/// stack, so one's frame is an outer frame of the other's: what corio's task-locals need to
/// lend a reference into a scope's frame only to code that cannot outlive it.
///
/// A slot's value is reused once the coroutine that had it has finished (or been dropped),
/// so a caller must not keep a value past the end of the frames it describes. Costs a scan
/// of the arena's chunk table (a few entries; no lock, no system call).
///
/// ```
/// use corio_context::{coroutine::Coroutine, stack};
///
/// let here = stack::current_context();
/// assert_eq!(here, 0, "a thread's own stack");
/// let mut co: Coroutine<(), (), usize> = Coroutine::new(|_, ()| stack::current_context());
/// let inside = co.resume(()).as_return().unwrap();
/// assert_ne!(inside, 0);
/// assert_eq!(stack::current_context(), here);
/// ```
#[inline(never)]
pub fn current_context() -> usize {
    let here = 0u8;
    let sp = std::ptr::from_ref(&here) as usize;
    arena::find_slot(sp).map_or(0, |hit| hit.slot_top)
}
