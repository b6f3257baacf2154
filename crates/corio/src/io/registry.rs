//! The netpoller's registrations: which socket an epoll event is for, and who waits on it.
//!
//! Each registered socket has a [`ScheduledIo`]: per direction (read, write) a readiness
//! *sequence number* and a list of waiting wakers. The [`Registry`] maps an epoll token to it.
//!
//! # Tokens
//!
//! An epoll event carries a `u64` chosen at `EPOLL_CTL_ADD`. corio's is a slab index (offset
//! by [`TOKEN_BASE`], below which the driver's eventfd and timerfd tokens live) and, in the
//! high 32 bits, the slot's generation: an event that a poller took from the kernel just
//! before its socket was deregistered finds the generation changed and is ignored, so it can
//! never wake the socket that reuses the slot. (A raw pointer as the token, as in Go's
//! `pollDesc`, would need Go's type-stable allocation to be safe against exactly that race.)
//!
//! # Waiting without losing an edge (the protocol)
//!
//! Sockets are registered edge-triggered: the kernel reports a transition to ready once. Each
//! direction has a *state*: a sequence number of the edges seen and a *ready* bit (`READY`),
//! set by every edge and cleared when an operation learns the socket is drained. An operation
//! on a socket therefore:
//!
//! 1. reads the direction's state;
//! 2. if the ready bit is set, tries the system call; anything but `EAGAIN` is its result —
//!    and a stream read or write that moved fewer bytes than asked for drained the socket, so
//!    it clears the ready bit ([`ScheduledIo::clear`], only if the state is still the one read
//!    in step 1) and the *next* operation waits without a system call that would only say
//!    `EAGAIN` (tokio's "short read clears readiness");
//! 3. on `EAGAIN` clears the ready bit the same way; then, or when the bit was clear in step
//!    2, calls [`ScheduledIo::wait`] with the cleared state: it leaves the waker in the
//!    direction's single-waiter slot (`slot.rs`; or, if another task's waker holds the slot,
//!    in the direction's list, under the waiter lock), then re-checks: if the state moved, an
//!    edge arrived after step 1 — go back to 1; else the operation returns `Pending`.
//!
//! The poller that receives an edge bumps the sequence number and sets the ready bit in one
//! atomic update *before* it wakes the slot and the list. Either the waiter's re-check sees
//! the new state, or the poller finds the waker the waiter left and wakes it: an edge is never
//! lost, at worst a waiter is woken once for nothing. Both sides make the decision with
//! read-modify-writes of the state word (the waiter's re-check is a `fetch_add(0)`), which
//! are totally ordered: if the waiter's comes first, its Release carries the slot's `FULL`
//! bit (or the list's `waiting` flag) to the poller, which then looks at the slot (takes the
//! lock); if it comes second it reads the edge. So the poller skips the slot when it is empty
//! and the lock when no list waiter announced itself — almost every edge (`slot.rs`, "The
//! guarantee"; the loom models below check the argument). A clear is a compare-and-swap from the state read in step 1, so it never erases an
//! edge that came after that read: data that arrives after a short read (or during it) leaves
//! the bit set, because its edge moved the state. The ready bit starts set: a socket may be
//! ready before it is registered, and the first operation finds out with its system call.
//!
//! A clear never touches the *final* bit, which an edge with `EPOLLRDHUP`/`EPOLLHUP`/`EPOLLERR`
//! sets: the peer's FIN often arrives in the same edge as its last data (epoll merges events
//! not yet taken), so the short read of that data says nothing about the end of the stream,
//! which no later edge will announce (tokio's "closed states are final" rule; the test
//! `data_arriving_after_a_short_read_wakes_a_coroutine_reader` hung at EOF without it).
//!
//! Waker lists keep their capacity, so after a socket's first wait its waits do not allocate.
//! A waiter that gives up (its future dropped, a timeout) leaves its waker in the slot or the
//! list; the next edge wakes it for nothing and empties them (until then, a different task
//! waiting on that direction finds the slot taken and uses the list).

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::task::Waker;

use super::slot::{Register, WaiterSlot};
use crate::loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
// The waker lists' lock: loom's under the model checker (a std lock held by a thread loom
// switched away from would block the model for real), std's otherwise.
#[cfg(loom)]
use loom::sync::Mutex as ListLock;
#[cfg(not(loom))]
use std::sync::Mutex as ListLock;

/// The lowest token of a socket; the driver's own descriptors use tokens below it.
pub(crate) const TOKEN_BASE: u64 = 16;

/// The ready bit of a direction's state: set by every edge, cleared when an operation finds
/// the socket drained.
const READY: u32 = 1;
/// The *final* bit: the direction is closed (`EPOLLRDHUP`, `EPOLLHUP`, `EPOLLERR`). Never
/// cleared: a closed socket stays ready (its reads return 0 or the error) and closing sends no
/// second edge. The bits above it count edges.
const FINAL: u32 = 2;
/// What one edge adds to a direction's state.
const EDGE: u32 = 4;

/// Whether an operation with direction state `state` should try its system call (step 2).
#[inline]
pub(crate) fn may_be_ready(state: u32) -> bool {
    state & (READY | FINAL) != 0
}

/// A direction of readiness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

/// What [`ScheduledIo::wait`] decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// The waker is queued: return `Pending`.
    Queued,
    /// Readiness arrived since the sequence number was read: try again.
    Retry,
    /// The registration is gone (the runtime shut down, or the socket was closed).
    Closed,
}

/// The readiness state and waiters of one registered socket.
pub(crate) struct ScheduledIo {
    /// Per direction (index: `Direction as usize`): edges seen times [`EDGE`], plus [`READY`]
    /// while the socket may be ready. Moved (Release) by the poller before it takes `waiters`;
    /// read (Acquire) by an operation before its system call.
    state: [AtomicU32; 2],
    /// Set when the registration ends while handles may still wait on it.
    closed: AtomicBool,
    /// Per direction: the first waiter's waker (`slot.rs`), taken without a lock.
    slots: [WaiterSlot; 2],
    /// Per direction: set (under the lock) by `wait` before it re-checks the state, cleared
    /// (under the lock) by `ready` when it empties the list. `ready` skips the lock while it
    /// is clear — almost every edge, now that a single waiter uses the slot.
    waiting: [AtomicBool; 2],
    /// Wakers waiting for each direction behind the slot's; guarded by the mutex.
    waiters: ListLock<[Vec<Waker>; 2]>,
}

impl ScheduledIo {
    fn new() -> ScheduledIo {
        ScheduledIo {
            state: [AtomicU32::new(READY), AtomicU32::new(READY)],
            closed: AtomicBool::new(false),
            slots: [WaiterSlot::new(), WaiterSlot::new()],
            waiting: [AtomicBool::new(false), AtomicBool::new(false)],
            waiters: ListLock::new([Vec::new(), Vec::new()]),
        }
    }

    /// Step 1 of the protocol: the direction's state (test it with [`may_be_ready`]).
    #[inline]
    pub(crate) fn state(&self, dir: Direction) -> u32 {
        // Acquire: pairs with the Release update in `ready`, so the data the edge announced
        // is visible to the system call that follows.
        self.state[dir as usize].load(Ordering::Acquire)
    }

    /// Clears the ready bit of `dir` if its state is still `state` (no edge since it was
    /// read); returns the state to wait with.
    #[inline]
    pub(crate) fn clear(&self, dir: Direction, state: u32) -> u32 {
        let cleared = state & !READY;
        if state != cleared {
            // Relaxed: a failure means an edge moved the state, which `wait` then sees (under
            // the lock) and answers with `Retry`; a success publishes nothing.
            let _ = self.state[dir as usize].compare_exchange(
                state,
                cleared,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        cleared
    }

    /// Step 3 of the protocol: queue `waker` unless the state moved from `state` (the cleared
    /// state `clear` returned) — in the direction's slot, or in its list if another task's
    /// waker holds the slot.
    #[inline]
    pub(crate) fn wait(&self, dir: Direction, state: u32, waker: &Waker) -> Wait {
        match self.slots[dir as usize].register(waker) {
            Register::Stored => {
                // Read-modify-writes that change nothing, AcqRel: each is ordered with the
                // poller's (or closer's) read-modify-write of the same word, so either it reads
                // the edge (the close), or its Release carries the slot's `FULL` to that
                // poller's later load of the slot (`slot.rs`, "The guarantee"). Plain loads
                // would need a SeqCst store-load pair, which loom cannot check.
                if self.closed.fetch_or(false, Ordering::AcqRel) {
                    Wait::Closed
                } else if self.state[dir as usize].fetch_add(0, Ordering::AcqRel) != state {
                    Wait::Retry
                } else {
                    Wait::Queued
                }
            }
            Register::Woken => Wait::Queued,
            Register::Retry => Wait::Retry,
            Register::Occupied => self.wait_in_list(dir, state, waker),
        }
    }

    /// `wait` for a second waiter on one direction: the waker list.
    #[inline(never)]
    fn wait_in_list(&self, dir: Direction, state: u32, waker: &Waker) -> Wait {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if self.closed.load(Ordering::Acquire) {
            return Wait::Closed;
        }
        // The flag, then a read-modify-write of the state that changes nothing (AcqRel): it
        // is ordered with `ready`'s update of the state; either it reads that edge and we
        // retry, or its Release carries the flag to `ready`, whose Acquire update is then
        // followed by a load of `waiting` that sees it, and `ready` takes the lock (after we
        // queue, since we hold it).
        self.waiting[dir as usize].store(true, Ordering::Relaxed);
        if self.state[dir as usize].fetch_add(0, Ordering::AcqRel) != state {
            return Wait::Retry;
        }
        let list = &mut waiters[dir as usize];
        if !list.iter().any(|w| w.will_wake(waker)) {
            list.push(waker.clone());
        }
        Wait::Queued
    }

    /// An edge for `dir`: bump its sequence number, set its ready bit (and with `closed` its
    /// final bit), and wake its waiters.
    ///
    /// The wakers are woken under the lock, which keeps the list's capacity without a second
    /// lock round: corio's wakers (and `block_on`'s) only queue their task, never poll it, so
    /// nothing re-enters this lock. (An executor whose waker polled inline would deadlock
    /// here; none of the common ones does.)
    #[inline]
    pub(crate) fn ready(&self, dir: Direction, closed: bool) {
        let set = if closed { READY | FINAL } else { READY };
        // One update for both, so that no operation sees the new edge count without the ready
        // bit. AcqRel: Release for the Acquire load in `state` and for `wait`'s re-check;
        // Acquire for the slot's `FULL` and the `waiting` flag a waiter's re-check carried
        // (see `wait`), which the loads below must see.
        let _ = self.state[dir as usize].fetch_update(Ordering::AcqRel, Ordering::Relaxed, |s| {
            Some(s.wrapping_add(EDGE) | set)
        });
        // The slot first (its load pairs with the update above: `slot.rs`), then the list.
        self.slots[dir as usize].wake();
        if self.waiting[dir as usize].load(Ordering::Relaxed) {
            self.wake_waiters(dir);
        }
        // Else nobody waits, and whoever comes next sees the new state.
    }

    /// The part of `ready` with waiters to wake (kept out of line: `ready` runs for both
    /// directions of every event, and most edges find nobody waiting in one of them).
    #[inline(never)]
    fn wake_waiters(&self, dir: Direction) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        self.waiting[dir as usize].store(false, Ordering::Relaxed); // under the lock
        for waker in waiters[dir as usize].drain(..) {
            waker.wake();
        }
    }

    /// Ends the registration: every waiter wakes and finds it closed.
    pub(crate) fn close(&self) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        // A read-modify-write, AcqRel: Release for the list's waiters (their load under the
        // lock) and for a slot waiter's re-check of `closed`; Acquire for the `FULL` such a
        // re-check carried, which the slots' loads below must see (`wait`).
        self.closed.swap(true, Ordering::AcqRel);
        for slot in &self.slots {
            slot.wake();
        }
        for list in waiters.iter_mut() {
            for waker in list.drain(..) {
                waker.wake();
            }
        }
    }
}

struct Slot {
    generation: u32,
    io: Option<Arc<ScheduledIo>>,
}

#[derive(Default)]
struct Slab {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

/// Token → [`ScheduledIo`] for every socket registered with one driver.
#[derive(Default)]
pub(crate) struct Registry {
    slab: Mutex<Slab>,
    /// Registered sockets (read without the lock by pollers deciding whether to poll).
    count: AtomicUsize,
}

impl Registry {
    /// Adds a slot; returns its token and state (the caller then adds the fd to epoll).
    pub(crate) fn insert(&self) -> (u64, Arc<ScheduledIo>) {
        let io = Arc::new(ScheduledIo::new());
        let mut slab = self.slab.lock().unwrap_or_else(|e| e.into_inner());
        let index = match slab.free.pop() {
            Some(index) => index,
            None => {
                slab.slots.push(Slot {
                    generation: 0,
                    io: None,
                });
                (slab.slots.len() - 1) as u32
            }
        };
        let slot = &mut slab.slots[index as usize];
        slot.io = Some(io.clone());
        let token = (u64::from(slot.generation) << 32) | (u64::from(index) + TOKEN_BASE);
        self.count.fetch_add(1, Ordering::Relaxed);
        (token, io)
    }

    /// Removes the slot of `token` (a stale token is ignored).
    pub(crate) fn remove(&self, token: u64) {
        let mut slab = self.slab.lock().unwrap_or_else(|e| e.into_inner());
        let (index, generation) = split(token);
        if let Some(slot) = slab.slots.get_mut(index)
            && slot.generation == generation
            && slot.io.take().is_some()
        {
            slot.generation = slot.generation.wrapping_add(1);
            slab.free.push(index as u32);
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Delivers a batch of epoll events to their sockets; events with the driver's own tokens
    /// (below [`TOKEN_BASE`]) and stale tokens are skipped. Overwrites the events' data.
    ///
    /// The slab lock is taken once per batch, not once per event: under it each socket
    /// event's token is replaced by a strong reference to its `ScheduledIo` (a raw `Arc`, 0
    /// for none); then, with the lock released, each is delivered and released. The wakes run
    /// without the slab lock held, because a wake can drop a task and with it a socket, whose
    /// `Registration` takes the slab lock to remove itself.
    pub(crate) fn dispatch(&self, events: &mut [libc::epoll_event]) {
        {
            let slab = self.slab.lock().unwrap_or_else(|e| e.into_inner());
            for ev in events.iter_mut() {
                let token = ev.u64;
                let (index, generation) = split(token);
                ev.u64 = match slab.slots.get(index) {
                    Some(Slot {
                        generation: g,
                        io: Some(io),
                    }) if token >= TOKEN_BASE && *g == generation => {
                        Arc::into_raw(io.clone()) as u64
                    }
                    _ => 0,
                };
            }
        }
        for ev in events.iter() {
            let (raw, bits) = (ev.u64, ev.events);
            if raw == 0 {
                continue;
            }
            // SAFETY: `raw` was made by `Arc::into_raw` in the loop above, and each is turned
            // back into its `Arc` exactly once, here (it is released at the end of the body).
            let io = unsafe { Arc::from_raw(raw as *const ScheduledIo) };
            deliver(&io, bits);
        }
    }
    /// Whether any socket is registered.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.count.load(Ordering::Relaxed) == 0
    }

    /// Closes every registration (runtime shutdown): waiters wake with an error, and the
    /// wakers they left behind — which hold their tasks — are dropped.
    pub(crate) fn close_all(&self) {
        let ios: Vec<Arc<ScheduledIo>> = {
            let mut slab = self.slab.lock().unwrap_or_else(|e| e.into_inner());
            let Slab { slots, free } = &mut *slab;
            let mut ios = Vec::new();
            for (index, slot) in slots.iter_mut().enumerate() {
                if let Some(io) = slot.io.take() {
                    slot.generation = slot.generation.wrapping_add(1);
                    free.push(index as u32);
                    ios.push(io);
                }
            }
            self.count.store(0, Ordering::Relaxed);
            ios
        };
        for io in ios {
            io.close();
        }
    }
}

/// Delivers one epoll event (`events`: its `EPOLL*` bits) to `io`.
fn deliver(io: &ScheduledIo, events: u32) {
    let hangup = (libc::EPOLLHUP | libc::EPOLLERR) as u32;
    let read_closed = libc::EPOLLRDHUP as u32 | hangup;
    if events & (libc::EPOLLIN as u32 | read_closed) != 0 {
        io.ready(Direction::Read, events & read_closed != 0);
    }
    if events & (libc::EPOLLOUT as u32 | hangup) != 0 {
        io.ready(Direction::Write, events & hangup != 0);
    }
}

fn split(token: u64) -> (usize, u32) {
    let low = token & 0xffff_ffff;
    (low.wrapping_sub(TOKEN_BASE) as usize, (token >> 32) as u32)
}

/// A socket's registration with one runtime's driver: removed from the registry when dropped.
/// (Closing the socket's fd removes it from the epoll set.) Holds the registry weakly, so that
/// sockets outliving their runtime do not keep it alive.
pub(crate) struct Registration {
    registry: std::sync::Weak<Registry>,
    token: u64,
    pub(crate) io: Arc<ScheduledIo>,
}

impl Registration {
    pub(crate) fn new(registry: &Arc<Registry>, token: u64, io: Arc<ScheduledIo>) -> Self {
        Registration {
            registry: Arc::downgrade(registry),
            token,
            io,
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.upgrade() {
            registry.remove(self.token);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    /// A waker that counts its wakes.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn event(token: u64) -> libc::epoll_event {
        libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        }
    }

    #[test]
    fn a_batch_wakes_its_sockets_and_skips_stale_and_driver_tokens() {
        let registry = Registry::default();
        let (old, _) = registry.insert();
        registry.remove(old);
        // The slot is reused with a new generation: the old token is stale.
        let (token, io) = registry.insert();
        assert_eq!(split(token).0, split(old).0);
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let state = io.clear(Direction::Read, io.state(Direction::Read));
        assert_eq!(io.wait(Direction::Read, state, &waker), Wait::Queued);

        registry.dispatch(&mut [event(old), event(1), event(2)]);
        assert_eq!(count.0.load(Ordering::SeqCst), 0, "a stale token woke");
        assert!(!may_be_ready(io.state(Direction::Read)));

        registry.dispatch(&mut [event(1), event(old), event(token)]);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(may_be_ready(io.state(Direction::Read)));
        // Every reference the batch took was given back.
        assert_eq!(Arc::strong_count(&io), 2);
    }
}

/// The wait/ready/close protocol with the single-waiter slot (`slot.rs`) under loom: a lost
/// wake-up leaves a waiter blocked for ever, which loom reports as a deadlock.
/// `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p corio --release --lib
/// --target-dir target/loom -- loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::atomic_waker::loom_tests::Signal;

    /// A reader that found the socket drained (its `EAGAIN` cleared the ready bit) waits as
    /// `Source::poll_registered` does until the socket may be ready: `Ok` once an edge is
    /// visible, `Err` if the registration closed.
    fn wait_for_edge(io: &ScheduledIo) -> Result<(), ()> {
        let signal = std::sync::Arc::new(Signal::new());
        let waker = Waker::from(signal.clone());
        let dir = Direction::Read;
        // The socket's data is the edge: a read after it finds the data, one before it finds
        // the socket drained and clears the ready bit (the state starts ready, edge count 0).
        let first = io.state(dir);
        if first >= EDGE {
            return Ok(());
        }
        let mut state = io.clear(dir, first);
        loop {
            match io.wait(dir, state, &waker) {
                Wait::Queued => signal.wait(),
                Wait::Retry => {}
                Wait::Closed => return Err(()),
            }
            state = io.state(dir);
            if may_be_ready(state) {
                return Ok(());
            }
        }
    }

    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(2);
        }
        builder.check(f);
    }

    #[test]
    fn loom_an_edge_racing_with_a_slot_wait_is_never_lost() {
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let poller = {
                let io = io.clone();
                loom::thread::spawn(move || io.ready(Direction::Read, false))
            };
            assert_eq!(wait_for_edge(&io), Ok(()));
            poller.join().unwrap();
        });
    }

    #[test]
    fn loom_two_waiters_on_one_direction_both_see_the_edge() {
        // One takes the slot, the other the list (or both the slot, in turn, after a wake).
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let other = {
                let io = io.clone();
                loom::thread::spawn(move || wait_for_edge(&io))
            };
            let poller = {
                let io = io.clone();
                loom::thread::spawn(move || io.ready(Direction::Read, false))
            };
            assert_eq!(wait_for_edge(&io), Ok(()));
            assert_eq!(other.join().unwrap(), Ok(()));
            poller.join().unwrap();
        });
    }

    #[test]
    fn loom_a_close_racing_with_a_slot_wait_wakes_the_waiter_with_an_error() {
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let closer = {
                let io = io.clone();
                loom::thread::spawn(move || io.close())
            };
            assert_eq!(wait_for_edge(&io), Err(()));
            closer.join().unwrap();
        });
    }

    #[test]
    fn loom_an_edge_and_a_close_racing_with_a_wait_end_it() {
        model(|| {
            let io = Arc::new(ScheduledIo::new());
            let poller = {
                let io = io.clone();
                loom::thread::spawn(move || io.ready(Direction::Read, false))
            };
            let closer = {
                let io = io.clone();
                loom::thread::spawn(move || io.close())
            };
            // Either ending is right; waiting for ever is not.
            let _ = wait_for_edge(&io);
            poller.join().unwrap();
            closer.join().unwrap();
        });
    }
}
