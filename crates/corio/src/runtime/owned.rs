//! Every live task, so that shutdown can find the ones no queue holds (those waiting for a
//! waker) and cancel them.
//!
//! Intrusive doubly linked lists in shards, each behind a mutex on a cache line of its own:
//! binding a task at spawn and releasing it at completion take one uncontended lock each. The
//! shard is chosen by the task id's run (`shard_of`), so threads spawning concurrently mostly
//! hit different shards.

use std::ptr::NonNull;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::task::core::Header;
use crate::task::raw::Task;

pub(crate) struct OwnedTasks {
    shards: Box<[Shard]>,
    mask: usize,
    closed: AtomicBool,
}

struct List {
    head: Option<NonNull<Header>>,
    len: usize,
}

/// A shard on a cache line of its own.
#[repr(align(64))]
struct Shard(Mutex<List>);

// SAFETY: the list only holds pointers to tasks, which are Send and Sync through their
// headers; the links are touched under the shard lock.
unsafe impl Send for List {}

impl OwnedTasks {
    pub(crate) fn new(workers: usize) -> OwnedTasks {
        let n = (workers * 4).next_power_of_two().max(4);
        OwnedTasks {
            shards: (0..n)
                .map(|_| Shard(Mutex::new(List { head: None, len: 0 })))
                .collect(),
            mask: n - 1,
            closed: AtomicBool::new(false),
        }
    }

    fn shard(&self, index: usize) -> std::sync::MutexGuard<'_, List> {
        self.shards[index]
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a task; gives it back if the runtime is shutting down.
    pub(crate) fn bind(&self, task: Task) -> Result<(), Task> {
        let header = task.header();
        let mut list = self.shard(shard_of(header.id) & self.mask);
        // Checked under the lock: `close` sets the flag before it takes each shard's lock.
        if self.closed.load(Ordering::SeqCst) {
            return Err(task);
        }
        let ptr = task.header_ptr();
        // SAFETY: the links of a task being bound are ours; the old head's are guarded by the
        // lock we hold.
        unsafe {
            let links = &mut *header.owned.get();
            links.prev = None;
            links.next = list.head;
            if let Some(head) = list.head {
                (*head.as_ref().owned.get()).prev = Some(ptr);
            }
        }
        list.head = Some(ptr);
        list.len += 1;
        std::mem::forget(task); // the list keeps its reference
        Ok(())
    }

    /// Removes a task; returns the list's reference if the task was in the list.
    /// `ptr` is the task's own pointer (the `Task` handed back is made from it).
    pub(crate) fn remove(&self, ptr: NonNull<Header>) -> Option<Task> {
        // SAFETY: the caller holds a reference to the task.
        let id = unsafe { ptr.as_ref() }.id;
        let mut list = self.shard(shard_of(id) & self.mask);
        // SAFETY: links are guarded by the shard lock we hold.
        unsafe { unlink(&mut list, ptr) }
    }

    /// Closes the list (later binds fail) and returns a new reference to every task that
    /// `take` accepts, leaving them in the list (they leave it when they complete).
    pub(crate) fn close_and_collect(&self, mut take: impl FnMut(&Header) -> bool) -> Vec<Task> {
        self.closed.store(true, Ordering::SeqCst);
        let mut out = Vec::new();
        self.for_each_ptr(|ptr| {
            // SAFETY: a linked task is alive (see `for_each_ptr`).
            let header = unsafe { ptr.as_ref() };
            if take(header) {
                header.state.ref_inc();
                // SAFETY: we just took a reference for this handle; `ptr` is the list's, the
                // task's own pointer (`bind`), not one rebuilt from `header`.
                out.push(unsafe { Task::from_raw(ptr) });
            }
        });
        out
    }

    /// Whether any task in the list satisfies `pred`.
    pub(crate) fn any(&self, mut pred: impl FnMut(&Header) -> bool) -> bool {
        let mut found = false;
        self.for_each(|h| found |= pred(h));
        found
    }

    /// Tasks in the list.
    pub(crate) fn len(&self) -> usize {
        (0..self.shards.len()).map(|i| self.shard(i).len).sum()
    }

    /// Calls `f` on every live task, under each shard's lock in turn.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&Header)) {
        // SAFETY: a linked task is alive while `f` runs (see `for_each_ptr`).
        self.for_each_ptr(|ptr| f(unsafe { ptr.as_ref() }));
    }

    /// Calls `f` on the pointer of every live task (the list's, which is the task's own), under
    /// each shard's lock in turn: the task is alive while `f` runs (the list holds a reference,
    /// which only a removal, under that lock, gives up).
    fn for_each_ptr(&self, mut f: impl FnMut(NonNull<Header>)) {
        for index in 0..self.shards.len() {
            let list = self.shard(index);
            let mut cursor = list.head;
            while let Some(ptr) = cursor {
                f(ptr);
                // SAFETY: a linked task is alive (the list holds a reference) and its links are
                // guarded by the shard lock we hold.
                cursor = unsafe { (*ptr.as_ref().owned.get()).next };
            }
        }
    }
}

/// The shard of task `id` (before masking): its run of ids. A thread takes its ids in runs
/// of `ID_BLOCK`, so a worker's spawns (and, as tasks mostly finish where they started, its
/// removals) stay on one shard for a run, while another worker's run is on another. By the id
/// itself, consecutive spawns went round every shard, and two spawning workers wrote each
/// shard's lock in turn.
fn shard_of(id: u64) -> usize {
    (id / corio_context::coroutine::ID_BLOCK) as usize
}

/// # Safety
/// The caller holds the lock of the shard `list` is, and `ptr` is a live task.
unsafe fn unlink(list: &mut List, ptr: NonNull<Header>) -> Option<Task> {
    // SAFETY: per the contract.
    let links = unsafe { &mut *ptr.as_ref().owned.get() };
    if links.prev.is_none() && list.head != Some(ptr) {
        return None; // not in the list
    }
    // SAFETY: neighbours are linked tasks of this shard, guarded by the same lock.
    unsafe {
        match links.prev {
            Some(prev) => (*prev.as_ref().owned.get()).next = links.next,
            None => list.head = links.next,
        }
        if let Some(next) = links.next {
            (*next.as_ref().owned.get()).prev = links.prev;
        }
    }
    links.prev = None;
    links.next = None;
    list.len -= 1;
    // SAFETY: the list owned one reference, which we hand back.
    Some(unsafe { Task::from_raw(ptr) })
}
