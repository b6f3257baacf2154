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
    /// The stack size last asked of [`ensure_available`] whose class is `classes[0]`, or
    /// `NO_SIZE`: a spawner asking again for that size skips computing the slot geometry.
    checked_size: usize,
}

/// No size: above `MAX_STACK_SIZE`, so never a size that was checked.
const NO_SIZE: usize = usize::MAX;

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
        // Another class is first now.
        self.checked_size = NO_SIZE;
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
        RefCell::new(ThreadCache {
            classes: Vec::new(),
            rotation: 0,
            ready: false,
            checked_size: NO_SIZE,
        })
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

/// Whether the thread's cache holds a free slot for a stack of `size` bytes, known without
/// computing the slot geometry: `size` is the size last checked by [`ensure_available`] and
/// its class still comes first. `false` means "not known", not "none".
#[inline(never)] // reads the thread's cache: see `alloc`
pub(crate) fn known_available(size: usize) -> bool {
    CACHE
        .try_with(|cache| {
            let cache = cache.borrow();
            cache.checked_size == size && cache.classes.first().is_some_and(|c| !c.slots.is_empty())
        })
        .unwrap_or(false)
}

/// See `stack::ensure_available`; `size` is the size asked for, `stack_size` and `slot_size`
/// its geometry.
#[inline(never)] // reads the thread's cache: see `alloc`
pub(crate) fn ensure_available(size: usize, stack_size: usize, slot_size: usize) -> io::Result<()> {
    let checked = CACHE.try_with(|cache| {
        let mut cache = cache.borrow_mut();
        let local = cache.class(stack_size, slot_size);
        if local.slots.is_empty() {
            local.class.refill(&mut local.slots, REFILL)?;
            local.publish();
        }
        // `class` has put this size's class first.
        cache.checked_size = size;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::slot_geometry;

    /// Free slots of the class of `slot_size` in this thread's cache.
    fn cached(slot_size: usize) -> usize {
        CACHE.with(|cache| {
            let cache = cache.borrow();
            let class = cache
                .classes
                .iter()
                .find(|c| c.class.slot_size == slot_size);
            class.map_or(0, |c| c.slots.len())
        })
    }

    #[test]
    #[cfg_attr(miri, ignore)] // maps stacks
    fn a_size_is_checked_again_once_another_class_has_come_first() {
        std::thread::spawn(|| {
            // Sizes no other test of this crate uses.
            let a = 200 << 10;
            let b = 328 << 10;
            let (stack_a, slot_a) = slot_geometry(a).unwrap();
            let (stack_b, slot_b) = slot_geometry(b).unwrap();
            ensure_available(a, stack_a, slot_a).unwrap();
            assert!(known_available(a));
            // Take every cached slot of `a`, then use a `b` stack: its class comes first.
            let mut taken = Vec::new();
            while cached(slot_a) > 0 {
                taken.push(alloc(stack_a, slot_a).unwrap());
            }
            let (class_b, top_b, _) = alloc(stack_b, slot_b).unwrap();
            free(class_b, top_b);
            assert!(!known_available(a), "answered for `a` from `b`'s slots");
            ensure_available(a, stack_a, slot_a).unwrap();
            assert!(cached(slot_a) > 0, "no `a` slot after ensure_available");
            for (class, top, _) in taken {
                free(class, top);
            }
        })
        .join()
        .unwrap();
    }
}
