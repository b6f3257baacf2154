//! `List`: the intrusive wait list every `corio::sync` primitive queues its waiters on.
//!
//! # The problem
//!
//! A primitive that makes callers wait (a locked `Mutex`, a `Semaphore` out of permits, a
//! `Notify` with nothing to hand out) keeps a queue of waiters, and each waiter is one of three
//! kinds — a stackful coroutine, an async task, a parked thread. All three wait through a future
//! (`DESIGN.md`, "Everything blocks on futures"), so a waiter is a `Waker` plus a little state
//! that the primitive hands over ("you have the lock", "you have 3 of your 5 permits",
//! "you were notified"). Allocating a queue entry per wait would put `malloc` on every contended
//! operation, and a `VecDeque` of wakers cannot be unlinked from the middle when a waiter is
//! cancelled.
//!
//! # The mechanism
//!
//! The waiter's [`Node`] lives *inside the future* that waits, which is pinned while it is
//! polled; the primitive's list links these nodes (a doubly linked, intrusive list, as tokio's
//! `util/linked_list.rs` under `batch_semaphore.rs` and `notify.rs`; written from that design,
//! not copied). No allocation per wait, and unlinking from the middle is O(1).
//!
//! Every primitive puts its `List` behind its own lock (a `std::sync::Mutex` through the loom
//! shim) together with whatever state the waiters wait for, so "check the state, else queue"
//! is one critical section and a wake-up cannot slip between the check and the queueing. The
//! lock is held only for pointer updates and never across a suspension or a user callback;
//! wakers are taken out under the lock and woken after it is released.
//!
//! ## Protocol
//!
//! 1. **Wait.** A future's first poll takes the primitive's lock and checks the state; if it
//!    cannot proceed it stores its waker in its node and links the node at the tail
//!    ([`List::push_back`]), then returns `Pending`.
//! 2. **Hand over.** Whoever makes progress possible (an unlock, a release, a notify) takes the
//!    lock, looks at the head ([`List::front`]) or unlinks it ([`List::pop_front`]), writes the
//!    hand-over into the node's data ("granted"), takes its waker and wakes it after unlocking.
//! 3. **Wake.** The woken future takes the lock and reads its node ([`List::entry`]): granted
//!    means done; otherwise it refreshes its waker and waits again (a spurious wake-up is
//!    harmless).
//! 4. **Cancel.** A future dropped while waiting takes the lock and unlinks its node
//!    ([`List::remove`]). If a hand-over was already written into its node (a lock, permits, a
//!    notification it never observed), it passes that on exactly as step 2 would, so nothing is
//!    lost.
//!
//! ## Invariants
//!
//! - A node's links, waker and data are read and written only under the lock of the one list it
//!   is ever pushed to. The `unsafe` methods below say so in their `# Safety`; the primitives keep
//!   one list per lock and one lock per list.
//! - A linked node is alive: its future is pinned (it is `!Unpin` through [`Node`]), and its
//!   `Drop` unlinks it under the lock before the memory can go (`Pin`'s drop guarantee). A list
//!   is empty when it is dropped (every waiter borrows the primitive, so the primitive outlives
//!   the waiters) — unless a boxed waiter was leaked with `mem::forget`, whose node then stays
//!   allocated for good; the list never touches its nodes when it is dropped, so that is sound.
//! - `linked` is true exactly while the node is in the list; unlinking clears both links.

use std::marker::{PhantomData, PhantomPinned};
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::Waker;

use crate::loom::cell::UnsafeCell;

/// A waiter's entry, embedded in the future that waits. `T` is the hand-over the primitive writes
/// into it (see the module docs, "Protocol").
pub(crate) struct Node<T> {
    inner: UnsafeCell<NodeInner<T>>,
    /// Linked nodes are pointed to by their neighbours: a node must not move while linked.
    _pinned: PhantomPinned,
}

struct NodeInner<T> {
    prev: Option<NonNull<Node<T>>>,
    next: Option<NonNull<Node<T>>>,
    linked: bool,
    waker: Option<Waker>,
    data: T,
}

// SAFETY: every field is touched only under the lock of the node's list (module invariants), so
// moving the future that holds the node to another thread, or sharing it, races with nothing the
// lock does not order. The raw links are what make the auto traits fall away.
unsafe impl<T: Send> Send for Node<T> {}
// SAFETY: as for `Send`: a `&Node` gives no access outside the list's lock.
unsafe impl<T: Send> Sync for Node<T> {}

impl<T> Node<T> {
    /// An unlinked node holding `data`.
    pub(crate) fn new(data: T) -> Node<T> {
        Node {
            inner: UnsafeCell::new(NodeInner {
                prev: None,
                next: None,
                linked: false,
                waker: None,
                data,
            }),
            _pinned: PhantomPinned,
        }
    }
}

/// The list of waiting nodes; lives behind the primitive's lock.
pub(crate) struct List<T> {
    head: Option<NonNull<Node<T>>>,
    tail: Option<NonNull<Node<T>>>,
}

// SAFETY: the list owns no node; it points at nodes that are only touched under the lock the
// list itself lives behind (module invariants), so sending the list with its lock is sound.
unsafe impl<T: Send> Send for List<T> {}

impl<T> Default for List<T> {
    fn default() -> Self {
        List::new()
    }
}

impl<T> List<T> {
    /// An empty list.
    pub(crate) const fn new() -> List<T> {
        List {
            head: None,
            tail: None,
        }
    }

    /// Whether no node is linked.
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Links `node` at the tail.
    ///
    /// # Safety
    ///
    /// The caller holds the lock this list lives behind, `node` is not linked, and `node` is only
    /// ever used with this list (its fields are guarded by this list's lock); the node's owner
    /// unlinks it ([`remove`](Self::remove)) before the node is dropped.
    pub(crate) unsafe fn push_back(&mut self, node: Pin<&Node<T>>) {
        let ptr = NonNull::from(node.get_ref());
        let tail = self.tail;
        node.inner.with_mut(|n| {
            // SAFETY: guarded by this list's lock, which the caller holds (# Safety).
            let n = unsafe { &mut *n };
            debug_assert!(!n.linked, "a node is linked twice");
            n.prev = tail;
            n.next = None;
            n.linked = true;
        });
        match tail {
            // SAFETY: a linked node is alive and guarded by this list's lock (module invariants).
            Some(t) => unsafe { t.as_ref() }
                .inner
                .with_mut(|t| unsafe { (*t).next = Some(ptr) }),
            None => self.head = Some(ptr),
        }
        self.tail = Some(ptr);
    }

    /// Unlinks `node` if it is linked; returns whether it was.
    ///
    /// # Safety
    ///
    /// The caller holds this list's lock and `node` is only ever used with this list.
    pub(crate) unsafe fn remove(&mut self, node: Pin<&Node<T>>) -> bool {
        // SAFETY: the caller's contract.
        let (prev, next, linked) = node.inner.with_mut(|n| unsafe {
            let n = &mut *n;
            let out = (n.prev.take(), n.next.take(), n.linked);
            n.linked = false;
            out
        });
        if !linked {
            return false;
        }
        self.unlink_between(prev, next);
        true
    }

    /// Joins `prev` and `next` around a node that was between them.
    fn unlink_between(&mut self, prev: Option<NonNull<Node<T>>>, next: Option<NonNull<Node<T>>>) {
        match prev {
            // SAFETY: `prev` is linked, hence alive and guarded by our lock.
            Some(p) => unsafe { p.as_ref() }
                .inner
                .with_mut(|p| unsafe { (*p).next = next }),
            None => self.head = next,
        }
        match next {
            // SAFETY: `next` is linked, hence alive and guarded by our lock.
            Some(n) => unsafe { n.as_ref() }
                .inner
                .with_mut(|n| unsafe { (*n).prev = prev }),
            None => self.tail = prev,
        }
    }

    /// The head node, still linked.
    pub(crate) fn front(&mut self) -> Option<Entry<'_, T>> {
        self.head.map(|node| Entry {
            node,
            _list: PhantomData,
        })
    }

    /// Unlinks the head node and returns it (the borrow of the list, that is of its lock, keeps
    /// the entry usable: its owner cannot drop it without that lock).
    pub(crate) fn pop_front(&mut self) -> Option<Entry<'_, T>> {
        let node = self.head?;
        // SAFETY: the head is linked, hence alive and guarded by our lock.
        let next = unsafe { node.as_ref() }.inner.with_mut(|n| unsafe {
            let n = &mut *n;
            n.linked = false;
            n.prev = None;
            n.next.take()
        });
        self.unlink_between(None, next);
        Some(Entry {
            node,
            _list: PhantomData,
        })
    }

    /// The owner's access to its own node, linked or not.
    ///
    /// # Safety
    ///
    /// The caller holds this list's lock and `node` is only ever used with this list.
    pub(crate) unsafe fn entry<'a>(&'a mut self, node: Pin<&'a Node<T>>) -> Entry<'a, T> {
        Entry {
            node: NonNull::from(node.get_ref()),
            _list: PhantomData,
        }
    }
}

/// A node, seen under its list's lock (the `'a` borrow of the list).
pub(crate) struct Entry<'a, T> {
    node: NonNull<Node<T>>,
    _list: PhantomData<&'a mut List<T>>,
}

impl<T> Entry<'_, T> {
    fn with<R>(&mut self, f: impl FnOnce(&mut NodeInner<T>) -> R) -> R {
        // SAFETY: an entry exists only while its list's lock is held (the `'a` borrow), and the
        // node is alive: linked (module invariants) or its owner's own (`List::entry`).
        unsafe { self.node.as_ref() }
            .inner
            .with_mut(|n| f(unsafe { &mut *n }))
    }

    /// Runs `f` on the node's hand-over data.
    pub(crate) fn data<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        self.with(|n| f(&mut n.data))
    }

    /// Whether the node is in the list.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_linked(&mut self) -> bool {
        self.with(|n| n.linked)
    }

    /// Stores `waker` to be woken at the hand-over (no clone if the stored one wakes the same
    /// task). Returns the waker it replaced, for the caller to drop once the lock is released:
    /// a waker's `Drop` is user code, which may use this very primitive.
    #[must_use = "drop the replaced waker after unlocking"]
    pub(crate) fn set_waker(&mut self, waker: &Waker) -> Option<Waker> {
        self.with(|n| match &mut n.waker {
            Some(w) if w.will_wake(waker) => None,
            slot => slot.replace(waker.clone()),
        })
    }

    /// Takes the stored waker, to be woken once the lock is released.
    pub(crate) fn take_waker(&mut self) -> Option<Waker> {
        self.with(|n| n.waker.take())
    }
}

/// Wakers taken out under a lock, to be woken after it is released (module docs, "Protocol"
/// step 2). The usual hand-over wakes one waiter, which costs no allocation.
#[derive(Default)]
pub(crate) struct Wakers {
    first: Option<Waker>,
    rest: Vec<Waker>,
}

impl Wakers {
    /// Adds `waker` (if the node had one) to be woken.
    pub(crate) fn push(&mut self, waker: Option<Waker>) {
        let Some(waker) = waker else { return };
        match self.first {
            None => self.first = Some(waker),
            Some(_) => self.rest.push(waker),
        }
    }

    /// Wakes every waker collected. Call with no lock held.
    pub(crate) fn wake(self) {
        self.first
            .into_iter()
            .chain(self.rest)
            .for_each(Waker::wake);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{List, Node};
    use std::pin::pin;

    fn order(list: &mut List<u32>) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(mut e) = list.pop_front() {
            out.push(e.data(|d| *d));
        }
        out
    }

    #[test]
    fn nodes_come_out_in_fifo_order_and_unlink_from_the_middle() {
        let (a, b, c) = (pin!(Node::new(1)), pin!(Node::new(2)), pin!(Node::new(3)));
        let mut list = List::new();
        // SAFETY: one list, one thread (the "lock" is `&mut list`), nodes outlive the list use.
        unsafe {
            list.push_back(a.as_ref());
            list.push_back(b.as_ref());
            list.push_back(c.as_ref());
            assert!(list.remove(b.as_ref()));
            assert!(
                !list.remove(b.as_ref()),
                "removing twice reports the second as a no-op"
            );
            assert!(list.entry(a.as_ref()).is_linked());
        }
        assert_eq!(order(&mut list), [1, 3]);
        assert!(list.is_empty());
        // SAFETY: as above.
        unsafe {
            list.push_back(c.as_ref());
            list.push_back(a.as_ref());
            assert!(list.remove(a.as_ref()), "the tail unlinks");
            list.push_back(b.as_ref());
        }
        assert_eq!(order(&mut list), [3, 2]);
    }
}
