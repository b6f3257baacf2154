//! Per-thread LIFO caches of free stack slots.
//!
//! Creating a coroutine takes a slot from the calling thread's cache and finishing one puts the
//! slot back, so in the steady state neither makes a system call nor takes a lock, and the slot
//! reused is the one freed last, whose top pages are still in the cache and TLB.
//!
//! A cache holds at most [`CACHE_CAP`] slots per size class. When a free overflows it, the
//! older half goes back to the arena in one batch (one `process_madvise` for all their pages,
//! see `arena.rs`); when it runs dry, it takes [`REFILL`] slots from the arena at once. A
//! thread's cache is given back to the arena when the thread exits.
//!
//! Each cache publishes its length in an atomic that only its thread writes, so that
//! [`stats`](super::stats) can count slots in use without the hot path touching shared lines.

use std::cell::RefCell;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::arena::{CARVE_BATCH, SizeClass};

/// Free slots a thread keeps per size class. 64 × a 4 KiB top page = 256 KiB warm per thread;
/// more slots than that in flight on one thread is a burst the arena can absorb.
const CACHE_CAP: usize = 64;

/// Slots taken from the arena when a cache runs dry.
const REFILL: usize = CARVE_BATCH;

/// The lengths of every live thread cache, by size class, for [`cached_count`].
static PUBLISHED: Mutex<Vec<(&'static SizeClass, Arc<AtomicUsize>)>> = Mutex::new(Vec::new());

struct ClassCache {
    class: &'static SizeClass,
    /// Free slot tops; the last one is the most recently freed.
    slots: Vec<usize>,
    /// `slots.len()`, for other threads to read.
    published: Arc<AtomicUsize>,
}

impl ClassCache {
    fn publish(&self) {
        self.published.store(self.slots.len(), Ordering::Relaxed);
    }
}

struct ThreadCache {
    classes: Vec<ClassCache>,
    /// Counts allocations, to rotate stack tops (see `Stack::rotation`).
    rotation: usize,
    /// Whether this thread has been made ready to run coroutines (see `overflow.rs`).
    ready: bool,
}

impl ThreadCache {
    /// The cache for slots of `slot_size` bytes, created on first use.
    #[inline]
    fn class(&mut self, stack_size: usize, slot_size: usize) -> &mut ClassCache {
        // The first entry is the size used most recently, so the common case is one compare.
        if self
            .classes
            .first()
            .is_some_and(|c| c.class.slot_size == slot_size)
        {
            return &mut self.classes[0];
        }
        self.class_slow(stack_size, slot_size)
    }

    #[cold]
    fn class_slow(&mut self, stack_size: usize, slot_size: usize) -> &mut ClassCache {
        // A linear scan: a thread rarely uses more than one or two stack sizes. The hit (or
        // the new entry) moves to the front.
        let i = match self
            .classes
            .iter()
            .position(|c| c.class.slot_size == slot_size)
        {
            Some(i) => i,
            None => {
                self.add_class(SizeClass::get(stack_size, slot_size));
                self.classes.len() - 1
            }
        };
        self.classes.swap(0, i);
        &mut self.classes[0]
    }

    fn add_class(&mut self, class: &'static SizeClass) {
        let published = Arc::new(AtomicUsize::new(0));
        PUBLISHED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((class, published.clone()));
        self.classes.push(ClassCache {
            class,
            slots: Vec::with_capacity(CACHE_CAP),
            published,
        });
    }
}

impl Drop for ThreadCache {
    fn drop(&mut self) {
        let mut published = PUBLISHED.lock().unwrap_or_else(|e| e.into_inner());
        for cache in self.classes.drain(..) {
            cache.class.give_back(&cache.slots);
            published.retain(|(_, p)| !Arc::ptr_eq(p, &cache.published));
        }
    }
}

thread_local! {
    static CACHE: RefCell<ThreadCache> = const {
        RefCell::new(ThreadCache { classes: Vec::new(), rotation: 0, ready: false })
    };
}

/// Takes a free slot of `slot_size` bytes (for stacks of `stack_size`); returns its class, its
/// top and a rotation counter for this thread.
///
/// Not inlined, like every function here that reads the thread's cache: a coroutine may create
/// or finish a bare coroutine on either side of its own switch, and after a switch LLVM may
/// reuse a thread-local address computed before it (see `crate::local`).
#[inline(never)]
pub(crate) fn alloc(
    stack_size: usize,
    slot_size: usize,
) -> io::Result<(&'static SizeClass, usize, usize)> {
    let fast = CACHE.try_with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.ready {
            crate::overflow::prepare_thread();
            cache.ready = true;
        }
        cache.rotation = cache.rotation.wrapping_add(1);
        let rotation = cache.rotation;
        let local = cache.class(stack_size, slot_size);
        let class = local.class;
        if let Some(top) = local.slots.pop() {
            local.publish();
            return Ok((class, top, rotation));
        }
        alloc_slow(local).map(|top| (class, top, rotation))
    });
    match fast {
        Ok(result) => result,
        // The thread is exiting and its cache is gone: go to the arena directly.
        Err(_) => {
            crate::overflow::prepare_thread();
            let class = SizeClass::get(stack_size, slot_size);
            let mut one = Vec::with_capacity(1);
            class.refill(&mut one, 1)?;
            Ok((class, one[0], 0))
        }
    }
}

/// See `stack::ensure_available`.
#[inline(never)] // reads the thread's cache: see `alloc`
pub(crate) fn ensure_available(stack_size: usize, slot_size: usize) -> io::Result<()> {
    let checked = CACHE.try_with(|cache| {
        let mut cache = cache.borrow_mut();
        let local = cache.class(stack_size, slot_size);
        if local.slots.is_empty() {
            local.class.refill(&mut local.slots, REFILL)?;
            local.publish();
        }
        Ok(())
    });
    checked.unwrap_or(Ok(()))
}

#[cold]
fn alloc_slow(local: &mut ClassCache) -> io::Result<usize> {
    local.class.refill(&mut local.slots, REFILL)?;
    let top = local
        .slots
        .pop()
        .expect("refill adds at least one slot or fails");
    local.publish();
    Ok(top)
}

/// Returns the slot at `top` to `class`.
#[inline(never)] // reads the thread's cache: see `alloc`
pub(crate) fn free(class: &'static SizeClass, top: usize) {
    let done = CACHE.try_with(|cache| {
        let mut cache = cache.borrow_mut();
        let local = cache.class(class.stack_size, class.slot_size);
        if local.slots.len() == CACHE_CAP {
            free_slow(local);
        }
        local.slots.push(top);
        local.publish();
    });
    if done.is_err() {
        class.give_back(&[top]);
    }
}

/// Gives the older half of a full cache back to the arena, in one batch.
#[cold]
fn free_slow(local: &mut ClassCache) {
    let older: Vec<usize> = local.slots.drain(..CACHE_CAP / 2).collect();
    local.class.give_back(&older);
}

/// Free slots of `class` sitting in thread caches.
pub(crate) fn cached_count(class: &'static SizeClass) -> usize {
    PUBLISHED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(c, _)| std::ptr::eq(*c, class))
        .map(|(_, p)| p.load(Ordering::Relaxed))
        .sum()
}

/// Gives every slot in the calling thread's cache back to the arena and releases the pages
/// of every dirty slot there.
#[inline(never)] // reads the thread's cache: see `alloc`
pub(crate) fn trim_thread_cache() {
    let _ = CACHE.try_with(|cache| {
        for local in &mut cache.borrow_mut().classes {
            let slots: Vec<usize> = local.slots.drain(..).collect();
            local.class.give_back(&slots);
            local.class.release_dirty();
            local.publish();
        }
    });
}
