//! The stack arena: large reservations carved into guarded slots, one free list per slot size.
//!
//! # Layout
//!
//! A *size class* owns every slot of one size. Its slots come from *chunks*: single
//! `MAP_NORESERVE` reservations (one VMA each) of 64 slots at first, doubling per chunk up to
//! [`MAX_CHUNK_BYTES`], so a million coroutines need a couple of dozen VMAs, not two million.
//! Slots are carved from the newest chunk by bumping a cursor, [`CARVE_BATCH`] at a time; the
//! guard page at the bottom of each carved slot is installed then, once, in one batched
//! `MADV_GUARD_INSTALL` (the guard marker survives `MADV_DONTNEED`, so it is never redone).
//!
//! ```text
//!  chunk base                                                          chunk end
//!  ┌───────┬──────────────────────────┬───────┬──────────────────────────┬───
//!  │ guard │ stack (grows ←) ... top  │ guard │ stack (grows ←) ... top  │ ...
//!  └───────┴──────────────────────────┴───────┴──────────────────────────┴───
//!  ← slot 0 ─────────────────────────→ ← slot 1 ─────────────────────────→
//! ```
//!
//! # Free slots
//!
//! Freed slots go first to a per-thread cache (see `pool.rs`), then, when that overflows, here,
//! in three lists that allocation prefers in this order:
//!
//! - `dirty`: as the coroutine left them, every touched page still resident. Up to
//!   [`DIRTY_CAP`] slots wait here so that the next burst of coroutines reuses them without a
//!   fault or a system call.
//! - `warm`: pages released but for the top one (which holds the slot header and the first
//!   frames, so reuse does not fault), up to [`GLOBAL_WARM_CAP`] slots.
//! - `cold`: every page released.
//!
//! When `dirty` grows past twice its cap, the oldest half is released in one batch (one
//! `process_madvise` for up to 1,024 slots), so a thread that finishes coroutines pays a system
//! call per few hundred of them, not per batch of 32.
//!
//! # The chunk table
//!
//! The overflow handler runs inside a signal handler and must map a fault address to its slot
//! without locks or allocation. Every chunk is published in the fixed table [`CHUNKS`]: its
//! fields are written first and its `len` last (Release), and the handler reads `len` first
//! (Acquire), so a non-zero `len` means the other fields are valid. Entries are never removed:
//! reservations live as long as the process.
//!
//! # Guard fallback
//!
//! Before Linux 6.13 guards are `mprotect(PROT_NONE)` pages. Each splits its reservation's VMA,
//! costing two VMAs, and the kernel refuses new mappings past `vm.max_map_count` (65530 by
//! default). The arena budgets guards against that limit (leaving room for the rest of the
//! process) and reports exhaustion as an `io::Error` that names the sysctl.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use super::os::{self, GuardMode};

/// Most address space one chunk reserves. Bounded so that a burst does not reserve far more
/// address space than it needs; 32 GiB keeps a million default stacks within ~20 chunks.
const MAX_CHUNK_BYTES: usize = 32 << 30;

/// Slots in a class's first chunk; each further chunk doubles it.
const FIRST_CHUNK_SLOTS: usize = 64;

/// Slots carved (and guarded, in one system call) at a time.
pub(crate) const CARVE_BATCH: usize = 32;

/// Freed slots per class that keep their top page; more are released entirely.
/// 1024 slots × 4 KiB = 4 MiB of RSS kept warm per size class at most.
const GLOBAL_WARM_CAP: usize = 1024;

/// Freed slots per class kept with all their pages. 256 coroutines that used one page each
/// is 1 MiB; the cost of the cap is what deep coroutines leave behind, 256 × their depth.
const DIRTY_CAP: usize = 256;

/// Size of the chunk table. Chunks double, so 1024 is far beyond any address space.
const MAX_CHUNKS: usize = 1024;

/// One published chunk, readable from the overflow handler.
pub(crate) struct ChunkEntry {
    base: AtomicUsize,
    slot_size: AtomicUsize,
    guard_size: AtomicUsize,
    /// Bytes reserved; 0 until the entry is published. Written last (Release).
    len: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)] // used only to initialise the array below
const EMPTY_CHUNK: ChunkEntry = ChunkEntry {
    base: AtomicUsize::new(0),
    slot_size: AtomicUsize::new(0),
    guard_size: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
};

static CHUNKS: [ChunkEntry; MAX_CHUNKS] = [EMPTY_CHUNK; MAX_CHUNKS];

/// Entries of [`CHUNKS`] handed out so far (some may not be published yet).
static CHUNK_COUNT: AtomicUsize = AtomicUsize::new(0);

/// Where a fault address lies, as found by [`find_slot`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotHit {
    /// One past the slot's highest address.
    pub(crate) slot_top: usize,
    /// Whether the address is inside the slot's guard page(s).
    pub(crate) in_guard: bool,
}

/// Maps an address to the slot that contains it. Async-signal-safe: atomics only.
pub(crate) fn find_slot(addr: usize) -> Option<SlotHit> {
    let n = CHUNK_COUNT.load(Ordering::Acquire).min(MAX_CHUNKS);
    for entry in &CHUNKS[..n] {
        // Pairs with the Release store of `len` in `publish_chunk`.
        let len = entry.len.load(Ordering::Acquire);
        if len == 0 {
            continue;
        }
        let base = entry.base.load(Ordering::Relaxed);
        if addr < base || addr - base >= len {
            continue;
        }
        let slot_size = entry.slot_size.load(Ordering::Relaxed);
        let guard = entry.guard_size.load(Ordering::Relaxed);
        let slot_base = base + (addr - base) / slot_size * slot_size;
        return Some(SlotHit {
            slot_top: slot_base + slot_size,
            in_guard: addr < slot_base + guard,
        });
    }
    None
}

fn publish_chunk(base: usize, len: usize, slot_size: usize, guard_size: usize) -> io::Result<()> {
    let index = CHUNK_COUNT.fetch_add(1, Ordering::AcqRel);
    if index >= MAX_CHUNKS {
        return Err(io::Error::other(
            "corio: the stack arena's chunk table is full",
        ));
    }
    let entry = &CHUNKS[index];
    entry.base.store(base, Ordering::Relaxed);
    entry.slot_size.store(slot_size, Ordering::Relaxed);
    entry.guard_size.store(guard_size, Ordering::Relaxed);
    // Pairs with the Acquire load in `find_slot`.
    entry.len.store(len, Ordering::Release);
    Ok(())
}

/// How this process makes guard pages, decided once.
struct Guards {
    mode: GuardMode,
    /// With `mprotect` guards: how many more guards fit under `vm.max_map_count`.
    budget: AtomicUsize,
    max_map_count: usize,
}

/// Takes one unit of `budget` if any is left (a compare-exchange loop rather than
/// `fetch_update`, deprecated on nightly for `try_update`, which is newer than the MSRV).
fn take_one(budget: &AtomicUsize) -> bool {
    let mut n = budget.load(Ordering::Relaxed);
    while n > 0 {
        match budget.compare_exchange_weak(n, n - 1, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => n = now,
        }
    }
    false
}

fn guards() -> &'static Guards {
    static GUARDS: OnceLock<Guards> = OnceLock::new();
    GUARDS.get_or_init(|| {
        let forced = std::env::var("CORIO_STACK_GUARD").ok();
        let mode = match forced.as_deref() {
            Some("mprotect") => GuardMode::Mprotect,
            _ if probe_guard_install() => GuardMode::Madvise,
            _ => GuardMode::Mprotect,
        };
        let max_map_count = os::max_map_count();
        // Leave an eighth of the limit (at least 1024 mappings) to the rest of the process;
        // each mprotect guard costs two mappings.
        let headroom = (max_map_count / 8).max(1024);
        let budget = max_map_count.saturating_sub(os::map_count() + headroom) / 2;
        Guards {
            mode,
            budget: AtomicUsize::new(budget),
            max_map_count,
        }
    })
}

/// Whether `MADV_GUARD_INSTALL` works here: tried once on a scratch page.
fn probe_guard_install() -> bool {
    let page = os::page_size();
    let Ok(addr) = os::reserve(page) else {
        return false;
    };
    let ok = os::guard_install(&[(addr, page)]).is_ok();
    // SAFETY: the scratch page was mapped above and nothing refers to it.
    unsafe { libc::munmap(addr as *mut libc::c_void, page) };
    ok
}

/// The guard mode in use (for reports and tests).
pub(crate) fn guard_mode() -> GuardMode {
    guards().mode
}

/// All slots of one size.
pub(crate) struct SizeClass {
    /// Bytes per slot, guard included; a multiple of the page size.
    pub(crate) slot_size: usize,
    /// Bytes of guard at the bottom of each slot.
    pub(crate) guard_size: usize,
    /// The stack size users asked for, rounded to pages (what error messages report).
    pub(crate) stack_size: usize,
    /// Slots ever carved (for stats).
    pub(crate) carved: AtomicUsize,
    /// Free lists and the carving cursor.
    state: Mutex<ClassState>,
}

struct ClassState {
    /// Free slot tops with their pages as their last coroutine left them (oldest first).
    dirty: Vec<usize>,
    /// Free slot tops whose top page is still committed.
    warm: Vec<usize>,
    /// Free slot tops with every page released.
    cold: Vec<usize>,
    /// Next slot base to carve in the newest chunk, and the chunk's end.
    cursor: usize,
    end: usize,
    /// Slots in the next chunk to reserve.
    next_chunk_slots: usize,
}

/// Every size class, created on demand and never freed.
static CLASSES: Mutex<Vec<&'static SizeClass>> = Mutex::new(Vec::new());

impl SizeClass {
    /// The class for stacks of `stack_size` bytes (already validated and page-rounded), whose
    /// slots are `slot_size` bytes.
    pub(crate) fn get(stack_size: usize, slot_size: usize) -> &'static SizeClass {
        let mut classes = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(class) = classes.iter().find(|c| c.slot_size == slot_size) {
            return class;
        }
        let class: &'static SizeClass = Box::leak(Box::new(SizeClass {
            slot_size,
            guard_size: os::page_size(),
            stack_size,
            carved: AtomicUsize::new(0),
            state: Mutex::new(ClassState {
                dirty: Vec::new(),
                warm: Vec::new(),
                cold: Vec::new(),
                cursor: 0,
                end: 0,
                next_chunk_slots: FIRST_CHUNK_SLOTS,
            }),
        }));
        classes.push(class);
        class
    }

    /// Calls `f` on every size class created so far.
    pub(crate) fn for_each(mut f: impl FnMut(&'static SizeClass)) {
        let classes = CLASSES.lock().unwrap_or_else(|e| e.into_inner());
        classes.iter().for_each(|c| f(c));
    }

    /// Free slots held here (not in thread caches).
    pub(crate) fn free_count(&self) -> usize {
        let state = self.lock();
        state.dirty.len() + state.warm.len() + state.cold.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ClassState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves up to `n` (at least one) free slot tops into `out`: warm ones first, then cold
    /// ones, then freshly carved ones.
    pub(crate) fn refill(&self, out: &mut Vec<usize>, n: usize) -> io::Result<()> {
        let mut guard = self.lock();
        let state = &mut *guard;
        for list in [&mut state.dirty, &mut state.warm, &mut state.cold] {
            let take = list.len().min(n);
            if take > 0 {
                let from = list.len() - take;
                out.extend(list.drain(from..));
                return Ok(());
            }
        }
        self.carve(state, out, n.min(CARVE_BATCH))
    }

    /// Carves up to `n` new slots from the newest chunk (reserving a new one if it is used
    /// up), installs their guards, and appends their tops to `out`.
    #[cold]
    fn carve(&self, state: &mut ClassState, out: &mut Vec<usize>, n: usize) -> io::Result<()> {
        if state.cursor == state.end {
            let max_slots = (MAX_CHUNK_BYTES / self.slot_size).max(1);
            let slots = state.next_chunk_slots.min(max_slots);
            let len = slots * self.slot_size;
            let base = os::reserve(len).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "corio: cannot reserve {} MiB of address space for coroutine stacks: {e}",
                        len >> 20
                    ),
                )
            })?;
            publish_chunk(base, len, self.slot_size, self.guard_size)?;
            state.cursor = base;
            state.end = base + len;
            state.next_chunk_slots = (slots * 2).min(max_slots);
        }
        let n = n.min((state.end - state.cursor) / self.slot_size);
        let bases: Vec<usize> = (0..n).map(|i| state.cursor + i * self.slot_size).collect();
        let guarded = self.install_guards(&bases)?;
        state.cursor += guarded * self.slot_size;
        self.carved.fetch_add(guarded, Ordering::Relaxed);
        out.extend(bases[..guarded].iter().map(|b| b + self.slot_size));
        Ok(())
    }

    /// Guards the slots at `bases`, in order; returns how many are guarded (an error only if
    /// none could be).
    fn install_guards(&self, bases: &[usize]) -> io::Result<usize> {
        let guards = guards();
        match guards.mode {
            GuardMode::Madvise => {
                let ranges: Vec<_> = bases.iter().map(|&b| (b, self.guard_size)).collect();
                os::guard_install(&ranges)?;
                Ok(bases.len())
            }
            GuardMode::Mprotect => {
                for (done, &base) in bases.iter().enumerate() {
                    let result = if take_one(&guards.budget) {
                        os::guard_mprotect(base, self.guard_size)
                    } else {
                        Err(io::Error::from_raw_os_error(libc::ENOMEM))
                    };
                    if let Err(e) = result {
                        if done > 0 {
                            return Ok(done);
                        }
                        return Err(map_count_error(guards.max_map_count, e));
                    }
                }
                Ok(bases.len())
            }
        }
    }

    /// Takes back free slots from a thread cache (oldest first). They join the dirty list;
    /// if that grows past twice its cap, its oldest half has its pages released (see the
    /// module docs).
    pub(crate) fn give_back(&self, tops: &[usize]) {
        if tops.is_empty() {
            return;
        }
        let excess: Vec<usize> = {
            let mut state = self.lock();
            state.dirty.extend_from_slice(tops);
            if state.dirty.len() <= 2 * DIRTY_CAP {
                return;
            }
            let n = state.dirty.len() - DIRTY_CAP;
            state.dirty.drain(..n).collect()
        };
        self.release(&excess);
    }

    /// Releases the pages of free slots and lists them as warm (top page kept) while the warm
    /// list has room, else cold.
    fn release(&self, tops: &[usize]) {
        let page = os::page_size();
        let room = GLOBAL_WARM_CAP.saturating_sub(self.lock().warm.len());
        let (warm, cold) = tops.split_at(room.min(tops.len()));
        let bottom = |top: usize| top - self.slot_size + self.guard_size;
        let usable = self.slot_size - self.guard_size;
        let ranges: Vec<(usize, usize)> = warm
            .iter()
            .map(|&top| (bottom(top), usable - page))
            .chain(cold.iter().map(|&top| (bottom(top), usable)))
            .collect();
        // Releasing can only fail on a range that is not ours; ours are. If it ever did, the
        // slots would merely keep their pages.
        let _ = os::release(&ranges);
        let mut state = self.lock();
        state.warm.extend_from_slice(warm);
        state.cold.extend_from_slice(cold);
    }

    /// Releases the pages of every dirty slot now (for `trim_thread_cache`).
    pub(crate) fn release_dirty(&self) {
        let dirty: Vec<usize> = std::mem::take(&mut self.lock().dirty);
        self.release(&dirty);
    }
}

/// The error for a guard that `vm.max_map_count` does not allow.
fn map_count_error(max_map_count: usize, cause: io::Error) -> io::Error {
    io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!(
            "corio: cannot guard another coroutine stack: guard pages made with mprotect (this \
             kernel lacks MADV_GUARD_INSTALL, Linux 6.13+) cost two mappings each and the process \
             is at the limit set by vm.max_map_count ({max_map_count}); raise it \
             (`sysctl -w vm.max_map_count=1048576`) or run on Linux 6.13 or later ({cause})"
        ),
    )
}
