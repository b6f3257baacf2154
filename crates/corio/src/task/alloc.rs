//! Task memory: per-thread free lists of task-sized blocks.
//!
//! A task is one allocation made at spawn and freed when its last reference goes. In a server
//! that spawns a task per request the same few sizes are allocated and freed over and over;
//! going to `malloc` each time costs ~350 instructions per spawn-and-join here (glibc's
//! `_int_malloc`/`_int_free`, and its per-thread arenas when a task is freed on another thread
//! than the one that made it). Like Go's per-P lists of dead goroutines (`gfget`/`gfput`), each
//! thread keeps freed task blocks by size class and reuses them for its next spawns.
//!
//! Classes are multiples of 16 bytes up to 512 (tasks with larger futures go to the global
//! allocator); a thread keeps at most [`CAP`] blocks per class and gives the rest back, and
//! frees all of its blocks when it exits. A block may be freed on another thread than the one
//! that allocated it: it simply joins that thread's list.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::cell::RefCell;
use std::ptr::NonNull;

const GRANULE: usize = 16;
const CLASSES: usize = 32; // 16..=512 bytes
/// Blocks a thread keeps per class: 4096 × a 128-byte task is 512 KiB.
const CAP: usize = 4096;

struct FreeLists {
    lists: [Vec<NonNull<u8>>; CLASSES],
}

impl Drop for FreeLists {
    fn drop(&mut self) {
        for (class, list) in self.lists.iter_mut().enumerate() {
            for block in list.drain(..) {
                // SAFETY: every block in list `class` was allocated with `class_layout(class)`.
                unsafe { dealloc(block.as_ptr(), class_layout(class)) };
            }
        }
    }
}

thread_local! {
    static FREE: RefCell<FreeLists> = const {
        RefCell::new(FreeLists { lists: [const { Vec::new() }; CLASSES] })
    };
}

/// The class of a layout, if it is pooled.
#[inline]
fn class_of(layout: Layout) -> Option<usize> {
    if layout.align() > GRANULE || layout.size() == 0 || layout.size() > GRANULE * CLASSES {
        return None;
    }
    Some((layout.size() - 1) / GRANULE)
}

#[inline]
fn class_layout(class: usize) -> Layout {
    // SAFETY: a non-zero multiple of 16 with alignment 16 is a valid layout.
    unsafe { Layout::from_size_align_unchecked((class + 1) * GRANULE, GRANULE) }
}

/// Allocates a block for `layout`.
///
/// Not inlined, like every corio function that reads a thread-local from code a coroutine may
/// run: see "Fresh addresses after a switch" in `runtime::context`.
#[inline(never)]
pub(crate) fn allocate(layout: Layout) -> NonNull<u8> {
    // The per-thread cache is shared by the coroutines of the thread.
    let _no_preempt = crate::runtime::preempt::guard();
    let (layout, class) = match class_of(layout) {
        Some(class) => (class_layout(class), Some(class)),
        None => (layout, None),
    };
    if let Some(class) = class {
        let reused = FREE
            .try_with(|f| f.borrow_mut().lists[class].pop())
            .ok()
            .flatten();
        if let Some(block) = reused {
            return block;
        }
    }
    // SAFETY: `layout` has a non-zero size (tasks always have a header).
    let ptr = unsafe { alloc(layout) };
    NonNull::new(ptr).unwrap_or_else(|| handle_alloc_error(layout))
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
        Some(class) => {
            let kept = FREE
                .try_with(|f| {
                    let mut f = f.borrow_mut();
                    let list = &mut f.lists[class];
                    if list.len() < CAP {
                        list.push(ptr);
                        true
                    } else {
                        false
                    }
                })
                .unwrap_or(false);
            if !kept {
                // SAFETY: per the contract, allocated with this class's layout.
                unsafe { dealloc(ptr.as_ptr(), class_layout(class)) };
            }
        }
        // SAFETY: per the contract, allocated with `layout` by the global allocator.
        None => unsafe { dealloc(ptr.as_ptr(), layout) },
    }
}
