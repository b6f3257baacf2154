//! Task memory: task-sized blocks carved from large chunks, reused through per-thread free
//! lists and a shared pool of batches.
//!
//! A task is one allocation made at spawn and freed when its last reference goes. A program
//! that spawns a task per request, or a batch of tasks and joins them, allocates and frees the
//! same few sizes over and over. Going to `malloc` for each costs ~350 instructions per
//! spawn-and-join, and in a fresh process much more: glibc serves every thread but the main one
//! from an arena it grows one page at a time with `mprotect`, so a batch of 100,000 stackful
//! tasks (304 bytes each) made ~8,000 `mprotect` calls (Go: 10 for everything). An earlier
//! version kept up to 4,096 freed blocks per thread in a `Vec` and sent the rest to `malloc`,
//! so a second batch of 100,000 still made 96,000 `malloc` calls.
//!
//! The mechanism is Go's for dead goroutines (`gfput`/`gfget`: a per-P list, spilled to and
//! refilled from `sched.gFree` in batches), with the blocks' memory coming from chunks:
//!
//! 1. **Classes.** Sizes are rounded up to a multiple of 16 bytes, up to 512 (32 classes);
//!    tasks with larger futures go to the global allocator, as do over-aligned layouts.
//! 2. **Allocate:** pop the thread's free list of the class; if it is empty, take a batch from
//!    the shared pool of the class (one lock per [`BATCH`] blocks, none while the pool is
//!    empty: a count of its batches is read first); if that is empty too,
//!    carve the block from the thread's current chunk — [`CHUNK`] bytes from the global
//!    allocator (glibc maps it with one `mmap`), cut in order, so a batch of spawns costs
//!    one system call per 1 MiB instead of one per page.
//! 3. **Free:** push onto the freeing thread's list of the class — whichever thread that is; a
//!    block freed on another thread than the one that carved it simply joins that thread's
//!    list. A list that reaches [`LOCAL_CAP`] blocks hands [`BATCH`] of them to the shared pool,
//!    where any thread can take them; a thread that exits hands over all of its blocks, and
//!    the uncarved rest of its chunk for the next thread that needs a chunk (else a program
//!    that spawns from short-lived threads would reserve 1 MiB per thread).
//! 4. The free lists are intrusive: a free block's first word links to the next, so freeing
//!    allocates nothing.
//!
//! **Huge chunks.** A thread's first chunk is a plain [`CHUNK`]; every later one is a
//! [`HUGE_CHUNK`] of 2 MiB, aligned to 2 MiB and advised `MADV_HUGEPAGE`, so that the kernel
//! backs it with one transparent huge page at its first touch instead of 512 base pages at 512
//! page faults. In a fresh process the faults were most of a batch's cost: 100,000 stackful
//! tasks held at once (304 bytes each then, 128 now; `corio-bench spawn` holds them until its join phase)
//! took ~7,400 faults of 2–3 µs each on the 2-vCPU VM, more than the spawns' CPU work; with
//! huge chunks a process of two such batches takes ~1,100 faults instead of ~9,000. Only
//! *later* chunks are huge because a huge page is resident as a whole from its first touch: a
//! program that spawns ten tasks uses a page or two of its first, plain chunk, as before, and a
//! thread pays 2 MiB at once only after it has filled 1 MiB of blocks (~8,000 stackful tasks
//! with small closures live at once), by which time one more chunk is at most as large as what it already holds.
//! Pre-faulting a plain chunk (`MADV_POPULATE_WRITE`) would save the trap per page but still
//! allocate and map 256 pages one by one, and costs the whole chunk even for a thread that
//! spawns a handful of tasks. Go (1.19) does the same kind of thing for its heap: it asks for
//! huge pages (`MADV_HUGEPAGE`) on heap memory as it puts it to use. Where transparent huge
//! pages are off (`never`, or none free), the advice does nothing and the chunk is faulted in
//! page by page as before.
//!
//! **Memory is kept, not returned.** A chunk is never given back, so task memory stays at the
//! program's peak of live tasks (times the block size) for the life of the process — Go keeps
//! its dead goroutines the same way. Repeating a batch of a million spawn+join cycles reuses
//! the first batch's blocks (`tests/rt_spawn_alloc.rs`). Returning whole chunks would need a
//! live count per chunk on every free, and the blocks of one chunk end up on every thread's
//! list; not done until a program needs it.
//!
//! Under Miri and loom every block comes from the global allocator and goes straight back, so
//! their checkers see each task's memory on its own.

use std::alloc::Layout;
use std::ptr::NonNull;

const GRANULE: usize = 16;
const CLASSES: usize = 32; // 16..=512 bytes

/// The class of a layout, if it is pooled.
#[inline]
const fn class_of(layout: Layout) -> Option<usize> {
    if layout.align() > GRANULE || layout.size() == 0 || layout.size() > GRANULE * CLASSES {
        return None;
    }
    Some((layout.size() - 1) / GRANULE)
}

#[cfg_attr(any(miri, loom), allow(dead_code))]
#[inline]
fn class_size(class: usize) -> usize {
    (class + 1) * GRANULE
}

/// Blocks a thread keeps per class before it hands [`BATCH`] to the shared pool: 1,024
/// blocks of a 304-byte stackful task are 304 KiB. Go's per-P list holds 64 before it spills
/// 32; corio's blocks are smaller than a goroutine with its stack, and a larger list means
/// fewer trips to the pool's lock in a spawning loop.
#[cfg(not(any(miri, loom)))]
const LOCAL_CAP: usize = 1024;
/// Blocks moved between a thread's list and the shared pool at once.
#[cfg(not(any(miri, loom)))]
const BATCH: usize = LOCAL_CAP / 2;
/// Bytes of one chunk: large enough that glibc maps it on its own (its threshold is 128 KiB)
/// and that a burst of spawns makes few system calls; small enough that a thread that spawns
/// a handful of tasks reserves little (pages are touched only as blocks are carved).
#[cfg(not(any(miri, loom)))]
const CHUNK: usize = 1 << 20;
/// Bytes of every chunk after a thread's first: one transparent huge page (2 MiB with 4 KiB
/// base pages, x86-64's and aarch64's), aligned to its size and advised `MADV_HUGEPAGE`, so
/// that the kernel backs it with one page fault instead of 512 (see "Huge chunks" above).
#[cfg(not(any(miri, loom)))]
const HUGE_CHUNK: usize = 2 << 20;

#[cfg(not(any(miri, loom)))]
mod pooled {
    use std::alloc::{Layout, alloc, handle_alloc_error};
    use std::cell::RefCell;
    use std::ptr::{self, NonNull};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Mutex, PoisonError};

    use super::{BATCH, CHUNK, CLASSES, GRANULE, HUGE_CHUNK, LOCAL_CAP, class_size};

    /// A free block: its first word links to the next free block of its list.
    struct FreeBlock {
        next: *mut FreeBlock,
    }

    /// An intrusive list of free blocks of one class.
    struct List {
        head: *mut FreeBlock,
        len: usize,
    }

    // SAFETY: a list owns its blocks (free memory of no one else); moving it to another thread
    // moves that ownership.
    unsafe impl Send for List {}

    impl List {
        const EMPTY: List = List {
            head: ptr::null_mut(),
            len: 0,
        };

        /// # Safety
        /// `block` is a free block of this list's class, owned by the caller.
        #[inline]
        unsafe fn push(&mut self, block: NonNull<u8>) {
            let block = block.cast::<FreeBlock>();
            // SAFETY: the block is free, at least 16 bytes and 16-aligned, so it holds a link.
            unsafe {
                block.as_ptr().write(FreeBlock { next: self.head });
            }
            self.head = block.as_ptr();
            self.len += 1;
        }

        #[inline]
        fn pop(&mut self) -> Option<NonNull<u8>> {
            let block = NonNull::new(self.head)?;
            // SAFETY: every block in the list was written by `push` and is owned by the list.
            self.head = unsafe { (*block.as_ptr()).next };
            self.len -= 1;
            Some(block.cast())
        }

        /// Splits off the first `n` blocks (`n <= len`) as a list of their own.
        fn split_off(&mut self, n: usize) -> List {
            debug_assert!(n > 0 && n <= self.len);
            let head = self.head;
            let mut last = head;
            for _ in 1..n {
                // SAFETY: `last` is one of the first `n` blocks, all in the list.
                last = unsafe { (*last).next };
            }
            // SAFETY: as above; the link is cut so that the two lists share no block.
            unsafe {
                self.head = (*last).next;
                (*last).next = ptr::null_mut();
            }
            self.len -= n;
            List { head, len: n }
        }
    }

    /// Batches of free blocks that any thread may take, per class. Touched once per
    /// [`BATCH`] frees or allocations of a thread, and when a thread exits.
    static POOL: [Mutex<Vec<List>>; CLASSES] = [const { Mutex::new(Vec::new()) }; CLASSES];

    /// The number of batches in each class's pool, written under its lock, read without it:
    /// a thread that carves a fresh batch of blocks (every allocation of a first batch of
    /// spawns) looks here instead of taking an empty pool's lock for each block.
    static POOLED: [AtomicUsize; CLASSES] = [const { AtomicUsize::new(0) }; CLASSES];

    fn give_to_pool(class: usize, list: List) {
        if list.len > 0 {
            let mut pool = POOL[class].lock().unwrap_or_else(PoisonError::into_inner);
            pool.push(list);
            // Relaxed: the batch itself is handed over by the lock; a reader that misses
            // this store carves a block instead of taking the batch (memory, not safety).
            POOLED[class].store(pool.len(), Ordering::Relaxed);
        }
    }

    fn take_from_pool(class: usize) -> Option<List> {
        // Relaxed, paired with the store in `give_to_pool`: only a hint, the lock decides.
        if POOLED[class].load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut pool = POOL[class].lock().unwrap_or_else(PoisonError::into_inner);
        let batch = pool.pop();
        POOLED[class].store(pool.len(), Ordering::Relaxed);
        batch
    }

    /// A thread's blocks: a free list per class and the unused end of its current chunk.
    pub(super) struct Local {
        lists: [List; CLASSES],
        /// The next uncarved byte of the current chunk, and its end (both null before the
        /// first chunk).
        bump: *mut u8,
        end: *mut u8,
        /// Chunks this thread has taken from the global allocator: the first is a plain one,
        /// the later ones huge.
        chunks: usize,
    }

    /// The uncarved ends of the chunks of exited threads, for the next thread that needs a
    /// chunk. Without them a program that spawns from short-lived threads would reserve a
    /// chunk per thread and use a block of each.
    static LEFTOVERS: Mutex<Vec<Leftover>> = Mutex::new(Vec::new());

    /// An uncarved range `[start, end)` of a chunk.
    struct Leftover {
        start: *mut u8,
        end: *mut u8,
    }

    // SAFETY: the range is memory no one uses; whoever holds the `Leftover` owns it.
    unsafe impl Send for Leftover {}

    impl Drop for Local {
        fn drop(&mut self) {
            // The blocks outlive the thread: other threads take them from the pool, and the
            // rest of the chunk from the leftovers.
            for (class, list) in self.lists.iter_mut().enumerate() {
                give_to_pool(class, std::mem::replace(list, List::EMPTY));
            }
            // From here on a block freed on this thread (by a thread-local destroyed after
            // this one) goes to the pool through `free`, and none is kept as the spare, which
            // has no destructor: it would leak.
            let spare = SPARE.replace(Spare::EXITED);
            if let Some(block) = NonNull::new(spare.block) {
                let mut list = List::EMPTY;
                // SAFETY: the spare is a free block of its class that nothing else holds.
                unsafe { list.push(block) };
                give_to_pool(spare.class, list);
            }
            if (self.end as usize) - (self.bump as usize) >= GRANULE * CLASSES {
                LEFTOVERS
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Leftover {
                        start: self.bump,
                        end: self.end,
                    });
            }
        }
    }

    thread_local! {
        static LOCAL: RefCell<Local> = const {
            RefCell::new(Local {
                lists: [List::EMPTY; CLASSES],
                bump: ptr::null_mut(),
                end: ptr::null_mut(),
                chunks: 0,
            })
        };
    }

    impl Local {
        #[inline]
        fn allocate(&mut self, class: usize) -> NonNull<u8> {
            if let Some(block) = self.lists[class].pop() {
                return block;
            }
            self.allocate_slow(class)
        }

        #[cold]
        fn allocate_slow(&mut self, class: usize) -> NonNull<u8> {
            if let Some(batch) = take_from_pool(class) {
                self.lists[class] = batch;
                if let Some(block) = self.lists[class].pop() {
                    return block;
                }
            }
            self.carve(class_size(class))
        }

        /// Cuts `size` bytes from the current chunk, or from a new one.
        pub(super) fn carve(&mut self, size: usize) -> NonNull<u8> {
            if (self.end as usize) - (self.bump as usize) < size {
                // An exited thread's leftover first (at least 512 bytes: fits every class).
                let leftover = LEFTOVERS
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pop();
                if let Some(Leftover { start, end }) = leftover {
                    self.bump = start;
                    self.end = end;
                } else {
                    let (chunk, len) = new_chunk(self.chunks == 0);
                    self.chunks += 1;
                    self.bump = chunk;
                    // SAFETY: the end of the chunk's allocation.
                    self.end = unsafe { chunk.add(len) };
                }
            }
            let block = self.bump;
            // SAFETY: at least `size` bytes are left before `end` (checked above); the chunk
            // is 16-aligned and every class size is a multiple of 16.
            self.bump = unsafe { block.add(size) };
            // SAFETY: inside a live allocation, so not null.
            unsafe { NonNull::new_unchecked(block) }
        }

        /// # Safety
        /// As for [`super::free`].
        #[inline]
        unsafe fn free(&mut self, class: usize, block: NonNull<u8>) {
            let list = &mut self.lists[class];
            // SAFETY: per the contract, a free block of this class.
            unsafe { list.push(block) };
            if list.len >= LOCAL_CAP {
                give_to_pool(class, list.split_off(BATCH));
            }
        }
    }

    /// A new chunk from the global allocator, and its length: a thread's first is a plain
    /// [`CHUNK`], faulted in a page at a time as blocks are carved; every later one a
    /// [`HUGE_CHUNK`] aligned to its size and advised to be backed by a huge page.
    #[cold]
    fn new_chunk(first: bool) -> (*mut u8, usize) {
        let (len, align) = if first {
            (CHUNK, GRANULE)
        } else {
            (HUGE_CHUNK, HUGE_CHUNK)
        };
        let layout = Layout::from_size_align(len, align).expect("chunk layout");
        // SAFETY: a non-zero size.
        let chunk = unsafe { alloc(layout) };
        if chunk.is_null() {
            handle_alloc_error(layout);
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if !first {
            // Advice only: where the kernel has no transparent huge page for it (disabled,
            // none free), the range is backed by base pages as before; its result is not
            // needed. It may split the global allocator's mapping in two or three, once per
            // 2 MiB.
            // SAFETY: the range is a live allocation of ours; `MADV_HUGEPAGE` changes how it
            // is backed, never its contents.
            unsafe { libc::madvise(chunk.cast(), len, libc::MADV_HUGEPAGE) };
        }
        (chunk, len)
    }

    /// One free block and its class, in front of the thread's lists, for [`super::PoolBox`]: a
    /// started coroutine's `Live` block is taken and freed once per coroutine on its worker,
    /// and the lists' path (a `RefCell` borrow of the lists, the class's list) cost ~80
    /// instructions per pair, 4 % of a skynet leaf. A `Cell` without a destructor is the
    /// cheapest thread-local there is; `Local`'s destructor gives its block to the pool.
    #[derive(Clone, Copy)]
    struct Spare {
        block: *mut u8,
        class: usize,
    }

    impl Spare {
        /// The spare once the thread's lists are destroyed: not null, so `free_spare` does not
        /// keep a block, and of no class, so `allocate_spare` never hands it out.
        const EXITED: Spare = Spare {
            block: NonNull::dangling().as_ptr(),
            class: usize::MAX,
        };
    }

    thread_local! {
        static SPARE: std::cell::Cell<Spare> = const {
            std::cell::Cell::new(Spare {
                block: ptr::null_mut(),
                class: 0,
            })
        };
    }

    /// Takes the thread's spare block if it is of `class`, else a block as `allocate` does.
    #[inline]
    pub(super) fn allocate_spare(class: usize) -> NonNull<u8> {
        let spare = SPARE.get();
        if spare.class == class
            && let Some(block) = NonNull::new(spare.block)
        {
            SPARE.set(Spare {
                block: ptr::null_mut(),
                class,
            });
            return block;
        }
        allocate(class)
    }

    /// Keeps `block` as the thread's spare if there is none, else frees it as `free` does
    /// (always once the thread's lists are gone: `Spare::EXITED`).
    ///
    /// # Safety
    /// As for [`super::free`].
    #[inline]
    pub(super) unsafe fn free_spare(class: usize, block: NonNull<u8>) {
        if SPARE.get().block.is_null() {
            SPARE.set(Spare {
                block: block.as_ptr(),
                class,
            });
        } else {
            // SAFETY: per the contract.
            unsafe { free(class, block) };
        }
    }

    /// Runs `f` on this thread's blocks (tests only).
    #[cfg(test)]
    pub(super) fn with_local<R>(f: impl FnOnce(&mut Local) -> R) -> R {
        LOCAL.with(|l| f(&mut l.borrow_mut()))
    }

    #[cfg(test)]
    impl Local {
        /// Chunks taken from the global allocator so far.
        pub(super) fn chunks(&self) -> usize {
            self.chunks
        }
    }

    pub(super) fn allocate(class: usize) -> NonNull<u8> {
        LOCAL
            .try_with(|l| l.borrow_mut().allocate(class))
            // The thread is exiting (a task spawned from a thread-local's destructor): a block
            // from the global allocator. It joins a free list like any other when it is freed.
            .unwrap_or_else(|_| {
                let layout = Layout::from_size_align(class_size(class), GRANULE).expect("class");
                // SAFETY: a non-zero size.
                NonNull::new(unsafe { alloc(layout) }).unwrap_or_else(|| handle_alloc_error(layout))
            })
    }

    /// # Safety
    /// As for [`super::free`].
    pub(super) unsafe fn free(class: usize, block: NonNull<u8>) {
        // SAFETY: per the contract.
        let freed = LOCAL.try_with(|l| unsafe { l.borrow_mut().free(class, block) });
        if freed.is_err() {
            // The thread's lists are gone (it is exiting): straight to the pool.
            let mut list = List::EMPTY;
            // SAFETY: per the contract.
            unsafe { list.push(block) };
            give_to_pool(class, list);
        }
    }
}

/// Allocates a block for `layout`.
///
/// Not inlined, like every corio function that reads a thread-local from code a coroutine may
/// run: see "Fresh addresses after a switch" in `runtime::context`.
#[inline(never)]
pub(crate) fn allocate(layout: Layout) -> NonNull<u8> {
    // The per-thread lists are shared by the coroutines of the thread.
    let _no_preempt = crate::runtime::preempt::guard();
    match class_of(layout) {
        #[cfg(not(any(miri, loom)))]
        Some(class) => pooled::allocate(class),
        // SAFETY: `layout` has a non-zero size (tasks always have a header).
        _ => unsafe { global_alloc(layout) },
    }
}

/// Frees a block that `allocate(layout)` returned.
///
/// # Safety
///
/// `ptr` must come from `allocate` with the same `layout`, and must not be used afterwards.
#[inline(never)] // reads a thread-local: see `allocate`
pub(crate) unsafe fn free(ptr: NonNull<u8>, layout: Layout) {
    let _no_preempt = crate::runtime::preempt::guard();
    match class_of(layout) {
        // SAFETY: per the contract, a block of this class from `pooled::allocate`.
        #[cfg(not(any(miri, loom)))]
        Some(class) => unsafe { pooled::free(class, ptr) },
        // SAFETY: per the contract, allocated with `layout` by the global allocator.
        _ => unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) },
    }
}

/// Like [`allocate`] for a `T`, trying the thread's one spare block first (see
/// `pooled::Spare`). Generic, so that the class is a constant.
#[inline(never)] // reads a thread-local: see `allocate`
fn allocate_spare<T>() -> NonNull<u8> {
    let layout = Layout::new::<T>();
    let _no_preempt = crate::runtime::preempt::guard();
    match const { class_of(Layout::new::<T>()) } {
        #[cfg(not(any(miri, loom)))]
        Some(class) => pooled::allocate_spare(class),
        // SAFETY: `PoolBox` allocates no zero-sized layout.
        _ => unsafe { global_alloc(layout) },
    }
}

/// Like [`free`] for a `T`'s block, keeping it as the thread's spare if it has none.
///
/// # Safety
///
/// As for [`free`], with `T`'s layout.
#[inline(never)] // reads a thread-local: see `allocate`
unsafe fn free_spare<T>(ptr: NonNull<u8>) {
    let layout = Layout::new::<T>();
    let _no_preempt = crate::runtime::preempt::guard();
    match const { class_of(Layout::new::<T>()) } {
        // SAFETY: per the contract, a block of this class from `pooled`.
        #[cfg(not(any(miri, loom)))]
        Some(class) => unsafe { pooled::free_spare(class, ptr) },
        // SAFETY: per the contract, allocated with `layout` by the global allocator.
        _ => unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) },
    }
}

/// # Safety
/// `layout` has a non-zero size.
unsafe fn global_alloc(layout: Layout) -> NonNull<u8> {
    // SAFETY: per the contract.
    let ptr = unsafe { std::alloc::alloc(layout) };
    NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
}

/// A value in a block of the task pools: a `Box` whose memory comes from [`allocate`] and goes
/// back with [`free`], never through `malloc`, through a one-block spare per thread in front. For the parts of a task that live only while
/// it runs — a started coroutine's handle and context (`stackful.rs`, "The cell") — so that
/// the task's cell, which lives until its `JoinHandle` is done with it, stays small.
pub(crate) struct PoolBox<T>(NonNull<T>);

// SAFETY: a `PoolBox<T>` owns its `T` as a `Box<T>` does; its block may be freed on any
// thread (a block joins the freeing thread's list).
unsafe impl<T: Send> Send for PoolBox<T> {}
// SAFETY: as for `Box<T>`: shared access to the box is shared access to the `T`.
unsafe impl<T: Sync> Sync for PoolBox<T> {}

impl<T> PoolBox<T> {
    /// Moves `value` into a block of its own.
    #[inline]
    pub(crate) fn new(value: T) -> Self {
        // `allocate` takes no zero-sized layout.
        const { assert!(size_of::<T>() > 0) };
        let ptr = allocate_spare::<T>().cast::<T>();
        // SAFETY: a fresh block with `T`'s layout, written once.
        unsafe { ptr.as_ptr().write(value) };
        PoolBox(ptr)
    }
}

impl<T> std::ops::Deref for PoolBox<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the block holds a live `T` until `drop`, and the box owns it.
        unsafe { self.0.as_ref() }
    }
}

impl<T> std::ops::DerefMut for PoolBox<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` is exclusive access to the box and so to the `T`.
        unsafe { self.0.as_mut() }
    }
}

impl<T> Drop for PoolBox<T> {
    fn drop(&mut self) {
        // SAFETY: the `T` is live and dropped once, here; the block came from `allocate` with
        // `T`'s layout and is not used after the `free`. (If the `T`'s destructor panics the
        // block leaks, which is safe.)
        unsafe {
            std::ptr::drop_in_place(self.0.as_ptr());
            free_spare::<T>(self.0.cast());
        }
    }
}

/// `PoolBox` under Miri too (there its blocks come from the global allocator; natively from
/// the spare and the lists).
#[cfg(all(test, not(loom)))]
mod pool_box_tests {
    use super::PoolBox;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted(Arc<AtomicUsize>, [u64; 20]);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn pool_boxes_dropped_on_another_thread_drop_their_values_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut boxes: Vec<_> = (0..4)
            .map(|i| PoolBox::new(Counted(drops.clone(), [i; 20])))
            .collect();
        boxes[3].1[0] = 9;
        assert_eq!(boxes[3].1[..2], [9, 3]);
        drop(boxes.pop()); // the spare
        std::thread::spawn(move || drop(boxes)).join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 4);
        // The thread's spare (and the other thread's) are handed out again without harm.
        let again = PoolBox::new(Counted(drops.clone(), [5; 20]));
        assert_eq!(again.1[19], 5);
        drop(again);
        assert_eq!(drops.load(Ordering::Relaxed), 5);
    }
}

#[cfg(all(test, not(any(miri, loom))))]
mod tests {
    use super::*;

    /// The largest class: no task of the library's tests is that large, so no other test
    /// touches its pool meanwhile.
    const LAYOUT: Layout = match Layout::from_size_align(512, 16) {
        Ok(layout) => layout,
        Err(_) => panic!(),
    };

    /// A `PoolBox`'s value is dropped once, when the box is, and its block goes back to the
    /// thread's list: the next box of the class gets the same block.
    #[test]
    fn a_pool_box_drops_its_value_once_and_its_block_is_reused() {
        struct Counted {
            data: [u64; 60],
            drops: std::rc::Rc<std::cell::Cell<u32>>,
        }
        impl Drop for Counted {
            fn drop(&mut self) {
                self.drops.set(self.drops.get() + 1);
            }
        }
        let drops = std::rc::Rc::new(std::cell::Cell::new(0));
        let boxed = PoolBox::new(Counted {
            data: [7; 60],
            drops: drops.clone(),
        });
        let at = std::ptr::from_ref(&*boxed) as usize;
        assert_eq!(boxed.data[59], 7);
        drop(boxed);
        assert_eq!(drops.get(), 1);
        let again = PoolBox::new(Counted {
            data: [8; 60],
            drops: drops.clone(),
        });
        assert_eq!(
            std::ptr::from_ref(&*again) as usize,
            at,
            "the block was not reused"
        );
        assert_eq!(again.data[0], 8);
        drop(again);
        assert_eq!(drops.get(), 2);
    }

    /// A thread's spare block is not lost when the thread exits: its lists' destructor gives
    /// it to the pool, where the next thread that needs a block of its class finds it. (A
    /// class of its own, 464 bytes, that no other test uses.)
    #[test]
    fn a_threads_spare_block_goes_to_the_pool_when_it_exits() {
        const LAYOUT_464: Layout = match Layout::from_size_align(464, 16) {
            Ok(layout) => layout,
            Err(_) => panic!(),
        };
        let spare = std::thread::spawn(|| {
            let boxed = PoolBox::new([3u8; 464]);
            let at = std::ptr::from_ref(&*boxed) as usize;
            drop(boxed); // kept as the thread's spare
            at
        })
        .join()
        .unwrap();
        let next = std::thread::spawn(|| allocate(LAYOUT_464).as_ptr() as usize)
            .join()
            .unwrap();
        assert_eq!(
            next, spare,
            "the exited thread's spare block was not reused"
        );
    }

    /// A block freed as a thread's spare after the thread's lists were destroyed (by a
    /// thread-local destroyed after them, as thread-locals go in the reverse order of their
    /// first use) goes to the pool as well. (A class of its own, 432 bytes, that no other test
    /// uses.)
    #[test]
    fn a_spare_freed_after_the_threads_lists_are_gone_goes_to_the_pool() {
        const LAYOUT_432: Layout = match Layout::from_size_align(432, 16) {
            Ok(layout) => layout,
            Err(_) => panic!(),
        };
        thread_local! {
            static HELD: std::cell::RefCell<Option<PoolBox<[u8; 432]>>> =
                const { std::cell::RefCell::new(None) };
        }
        let freed_late = std::thread::spawn(|| {
            // First used before the lists (which `PoolBox::new` uses first), so destroyed
            // after them: the box is freed when the lists are gone.
            HELD.with(|_| {});
            let boxed = PoolBox::new([5u8; 432]);
            let at = std::ptr::from_ref(&*boxed) as usize;
            HELD.with(|held| *held.borrow_mut() = Some(boxed));
            at
        })
        .join()
        .unwrap();
        let next = std::thread::spawn(|| allocate(LAYOUT_432).as_ptr() as usize)
            .join()
            .unwrap();
        assert_eq!(
            next, freed_late,
            "the block freed after the thread's lists was not reused"
        );
    }

    #[test]
    fn blocks_freed_on_another_thread_are_reused_by_a_third() {
        let n = 2 * LOCAL_CAP;
        // Thread A allocates, thread B frees (and exits: its list goes to the pool).
        let made: Vec<usize> = std::thread::spawn(move || {
            (0..n).map(|_| allocate(LAYOUT).as_ptr() as usize).collect()
        })
        .join()
        .unwrap();
        let to_free = made.clone();
        std::thread::spawn(move || {
            for block in to_free {
                let block = NonNull::new(block as *mut u8).unwrap();
                // SAFETY: allocated above with `LAYOUT`, not used since.
                unsafe { free(block, LAYOUT) };
            }
        })
        .join()
        .unwrap();
        // Thread C allocates as many: every block is one that B freed, none is carved anew.
        let reused: Vec<usize> = std::thread::spawn(move || {
            (0..n).map(|_| allocate(LAYOUT).as_ptr() as usize).collect()
        })
        .join()
        .unwrap();
        let made: std::collections::HashSet<usize> = made.into_iter().collect();
        assert_eq!(made.len(), n, "a block was handed out twice");
        let fresh = reused.iter().filter(|b| !made.contains(b)).count();
        assert_eq!(fresh, 0, "{fresh} of {n} blocks were carved anew");
    }
}

#[cfg(all(
    test,
    not(any(miri, loom)),
    any(target_os = "linux", target_os = "android")
))]
mod huge_tests {
    use super::*;

    /// The `VmFlags` of the mapping of `/proc/self/smaps` that holds `addr`.
    fn vm_flags(addr: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&addr);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.trim().to_string();
            }
        }
        panic!("no mapping holds {addr:#x}");
    }

    #[test]
    fn a_threads_first_chunk_is_plain_and_later_ones_are_aligned_huge_pages() {
        std::thread::spawn(|| {
            pooled::with_local(|local| {
                // Carve until the thread has taken two chunks of its own (an exited thread's
                // leftover may come first), keeping the first block of each.
                let mut firsts = Vec::new();
                for _ in 0..1 << 16 {
                    let before = local.chunks();
                    let block = local.carve(512).as_ptr() as usize;
                    if local.chunks() > before {
                        firsts.push(block);
                    }
                    if firsts.len() == 2 {
                        break;
                    }
                }
                let [plain, huge] = firsts[..] else {
                    panic!("took {} chunks in 32 MiB of blocks", firsts.len())
                };
                // `hg` is the mapping flag `MADV_HUGEPAGE` sets.
                let hg = |flags: String| flags.split_whitespace().any(|f| f == "hg");
                assert!(!hg(vm_flags(plain)), "the first chunk was advised huge");
                assert_eq!(huge % HUGE_CHUNK, 0, "a huge chunk at {huge:#x}");
                assert!(hg(vm_flags(huge)), "flags {}", vm_flags(huge));
            })
        })
        .join()
        .unwrap();
    }
}
