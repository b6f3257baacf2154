//! `AtomicWaker`: one waker slot, registered by a consumer and taken by any producer.
//!
//! # The problem
//!
//! A future that waits for an event from another thread (a timer that a P fires, a readiness bit
//! that the netpoller sets) has to leave its `Waker` where the other thread can find it, and the
//! two sides race: the consumer may be replacing the waker at the very moment a producer wants to
//! wake it. A mutex would do, but a producer must never block (the netpoller and a P firing timers
//! run with other work waiting), and a lock around every `poll` is a cost paid on the hot path.
//!
//! # The mechanism
//!
//! The classic algorithm of `futures::task::AtomicWaker` (futures-rs `futures-core/src/task/
//! __internal/atomic_waker.rs`, also used by tokio `sync/task/atomic_waker.rs`; this file is written
//! from the algorithm, not copied). A state word with two bits guards an
//! `UnsafeCell<Option<Waker>>`:
//!
//! - `REGISTERING`: the consumer holds the slot and is writing a waker into it.
//! - `WAKING`: a producer holds the slot and is taking the waker out of it (or, if it found
//!   `REGISTERING` set, has left a note that a wake-up is owed).
//!
//! ## Protocol
//!
//! 1. `register(w)`: CAS `WAITING -> REGISTERING`. On success the consumer owns the slot; it
//!    stores `w` unless the stored waker already `will_wake(w)` (no clone: the common case of a
//!    task polled again by the same executor costs one load and a compare), then releases with CAS
//!    `REGISTERING -> WAITING`.
//! 2. If that release CAS fails, a producer ran `take` meanwhile and found `REGISTERING`: it set
//!    `WAKING` and went away empty-handed. The consumer takes the waker back out, resets the state to
//!    `WAITING` and wakes the waker itself, so the owed wake-up is delivered.
//! 3. If the first CAS finds `WAKING`, a producer is taking the *previous* waker right now. The new
//!    waker may not be stored (the producer owns the slot), so the consumer wakes `w` directly:
//!    a spurious poll, never a lost one.
//! 4. `take()`: `fetch_or(WAKING)`. If the previous state was `WAITING` the producer owns the slot:
//!    it takes the waker and clears `WAKING`. Any other previous state means somebody else will
//!    deliver the wake-up (a registering consumer by step 2, or another producer), so it returns
//!    `None`.
//!
//! ## The guarantee
//!
//! A producer that makes an event visible (say `fired.store(true, Release)`) and then calls
//! [`AtomicWaker::wake`], and a consumer that calls [`AtomicWaker::register`] and then checks the
//! event (`fired.load(Acquire)`), cannot both miss: every operation above is a read-modify-write of
//! the one state word, so they are totally ordered, and whichever comes second either sees the
//! other's waker or synchronises with the other's event. The orderings below each name their
//! partner.
//!
//! ## Invariants
//!
//! - The `waker` cell is touched only by the holder of `REGISTERING` with `WAKING` clear
//!   (steps 1–2) or by the holder of `WAKING` whose `fetch_or` saw `WAITING` (step 4).
//! - Only one consumer registers at a time (the future that owns the timer or the readiness
//!   slot). Two concurrent `register` calls are a caller bug: the second one is ignored (and
//!   asserts in debug builds). It is not unsound: the cell is still owned by one side.
//!
//! ## Panics
//!
//! `Waker::clone` and `Waker::drop` run foreign code. A panicking clone while `REGISTERING` is held
//! would leave the slot locked forever (every later wake lost), so the release of step 1–2 runs in a
//! drop guard, on unwind too. The replaced waker is dropped only after the slot is released.
//!
//! ## Model checking
//!
//! Atomics and the cell come through `crate::loom`, so `RUSTFLAGS="--cfg loom"` runs the
//! `loom_tests` below under the model checker: a register racing with one or two wakes, where a
//! lost wake-up shows up as a deadlock. The models bound themselves to three preemptions (see
//! `consumer_sees_every_event`; `LOOM_MAX_PREEMPTIONS` overrides), as tokio's CI does:
//! `RUSTFLAGS="--cfg loom" cargo test --release -p corio --lib atomic_waker` takes about a
//! second; unbounded, the two-producer model runs for more than eight minutes.
//! (Checked: deleting the `wake_by_ref` of step 3 makes the two-producer model deadlock.)

use std::fmt;
use std::task::Waker;

use crate::loom::cell::UnsafeCell;
use crate::loom::hint;
use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Release};

/// Nobody holds the slot.
const WAITING: usize = 0;
/// The consumer holds the slot and is storing a waker (protocol step 1).
const REGISTERING: usize = 0b01;
/// A producer holds the slot, or has left a note that a wake-up is owed (step 4).
const WAKING: usize = 0b10;

/// A single waker slot: [`register`](Self::register) from the one consumer,
/// [`wake`](Self::wake)/[`take`](Self::take) from any number of producers.
///
/// See the module documentation for the protocol.
pub(crate) struct AtomicWaker {
    /// `WAITING`, `REGISTERING`, `WAKING` or `REGISTERING | WAKING`.
    state: AtomicUsize,
    /// Guarded by `state`: see "Invariants" in the module documentation.
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: the only non-`Sync` part is the `UnsafeCell`, and every access to it happens while the
// accessing thread owns the slot through `state` (module documentation, "Invariants"); ownership
// is handed over with Acquire/Release pairs named at each use. `Option<Waker>` is `Send`, so the
// waker may be taken out on another thread than the one that stored it.
unsafe impl Sync for AtomicWaker {}

impl AtomicWaker {
    /// An empty slot. (Not `const`: loom's atomics cannot be built in a constant.)
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicUsize::new(WAITING),
            waker: UnsafeCell::new(None),
        }
    }

    /// Registers `waker` to be woken by the next [`wake`](Self::wake).
    ///
    /// Called by the consumer (the future being polled) *before* it checks the condition it waits
    /// for; see "The guarantee" in the module documentation. Does not clone `waker` when the stored
    /// one `will_wake` it. If a producer is waking concurrently, `waker` is woken at once (step 3).
    pub(crate) fn register(&self, waker: &Waker) {
        // Acquire pairs with the Release of `take`'s clearing `fetch_and` and with the releasing CAS
        // of an earlier `register` (`Unlock::drop`): whatever they left in the cell is visible.
        // On failure, Acquire pairs with the AcqRel `fetch_or` of a concurrent `take`, so the
        // producer's event is visible once the consumer re-checks it.
        match self
            .state
            .compare_exchange(WAITING, REGISTERING, Acquire, Acquire)
        {
            Ok(_) => {
                // Step 1: we own the cell until `unlock` releases it (also on unwind, should the
                // waker's `clone` panic).
                let unlock = Unlock(self);
                let replaced = self.waker.with_mut(|slot| {
                    // SAFETY: the successful CAS to `REGISTERING` made this thread the cell's only
                    // user; a producer that comes now sees `REGISTERING` and does not touch it.
                    let slot = unsafe { &mut *slot };
                    match slot {
                        Some(old) if old.will_wake(waker) => None,
                        _ => slot.replace(waker.clone()),
                    }
                });
                drop(unlock);
                // Dropped only after the slot is released: a waker's drop is foreign code.
                drop(replaced);
            }
            Err(WAKING) => {
                // Step 3: a producer is taking the previous waker. Wake this one directly.
                waker.wake_by_ref();
                // The producer is about to clear `WAKING`; a consumer that re-polls in a tight loop
                // would otherwise keep landing here.
                hint::spin_loop();
            }
            Err(state) => {
                // Another `register` holds the slot: the single-consumer rule was broken. Ignoring
                // the call is memory-safe (the cell stays owned by the other side).
                debug_assert!(
                    state == REGISTERING || state == REGISTERING | WAKING,
                    "AtomicWaker: concurrent register calls (state {state:#b})"
                );
            }
        }
    }

    /// Takes the registered waker and wakes it. Does nothing if none is registered.
    ///
    /// Called by producers, from any thread, *after* they made the awaited event visible.
    pub(crate) fn wake(&self) {
        if let Some(waker) = self.take() {
            waker.wake();
        }
    }

    /// Takes the registered waker out, for the caller to wake later (for example after releasing
    /// a lock). `None` if none is registered, or if a concurrent `register` or `take` will deliver
    /// the wake-up instead (step 4).
    pub(crate) fn take(&self) -> Option<Waker> {
        // AcqRel: Acquire pairs with the releasing CAS in `Unlock::drop` (the new waker is visible
        // to us); Release pairs with the Acquire of `register`'s first CAS and of the failed
        // releasing CAS in `Unlock::drop`, so a consumer that sees `WAKING` also sees the event
        // this producer published before calling `take`.
        match self.state.fetch_or(WAKING, AcqRel) {
            WAITING => {
                // SAFETY: `fetch_or` saw `WAITING`, so this thread set `WAKING` on an idle slot and
                // owns the cell: `register` now fails its first CAS, other producers return `None`.
                let waker = self.waker.with_mut(|slot| unsafe { (*slot).take() });
                // Release pairs with the Acquire of `register`'s first CAS: the emptied cell is
                // visible to the next owner.
                self.state.fetch_and(!WAKING, Release);
                waker
            }
            state => {
                debug_assert!(
                    state == REGISTERING || state == REGISTERING | WAKING || state == WAKING,
                    "AtomicWaker: bad state {state:#b}"
                );
                None
            }
        }
    }
}

impl Default for AtomicWaker {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for AtomicWaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The cell cannot be read without owning the slot; show the state word only.
        f.debug_struct("AtomicWaker")
            .field("state", &self.state.load(Acquire))
            .finish_non_exhaustive()
    }
}

/// Releases the slot that `register` holds (protocol steps 1–2); a guard so that it also runs
/// when `Waker::clone` unwinds.
struct Unlock<'a>(&'a AtomicWaker);

impl Drop for Unlock<'_> {
    fn drop(&mut self) {
        let aw = self.0;
        // Success: Release pairs with the AcqRel `fetch_or` of the next `take`, which must see the
        // waker just stored. Failure: Acquire pairs with the AcqRel `fetch_or` of the `take` that
        // set `WAKING`, so its event is visible before we wake on its behalf.
        if let Err(actual) = aw
            .state
            .compare_exchange(REGISTERING, WAITING, AcqRel, Acquire)
        {
            // Step 2: a producer came while we held the slot and left `WAKING` for us.
            debug_assert_eq!(actual, REGISTERING | WAKING);
            // SAFETY: the state is `REGISTERING | WAKING`: producers that see it do not touch the
            // cell, and no other register can take the slot, so this thread still owns it.
            let waker = aw.waker.with_mut(|slot| unsafe { (*slot).take() });
            // AcqRel: Release hands the (now empty) cell to the next owner, pairing with
            // `register`'s first CAS and `take`'s `fetch_or`.
            aw.state.swap(WAITING, AcqRel);
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::Ordering::{Relaxed, SeqCst};
    use std::task::Wake;
    use std::thread;
    use std::time::{Duration, Instant};

    /// A waker that counts its wake-ups and unparks a thread.
    struct CountingWaker {
        wakes: AtomicUsize,
        thread: thread::Thread,
    }

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.wakes.fetch_add(1, SeqCst);
            self.thread.unpark();
        }
    }

    fn counting_waker() -> (Arc<CountingWaker>, Waker) {
        let inner = Arc::new(CountingWaker {
            wakes: AtomicUsize::new(0),
            thread: thread::current(),
        });
        (inner.clone(), Waker::from(inner))
    }

    #[test]
    fn wake_reaches_the_registered_waker_once() {
        let aw = AtomicWaker::new();
        let (count, waker) = counting_waker();
        aw.register(&waker);
        aw.wake();
        aw.wake();
        assert_eq!(count.wakes.load(SeqCst), 1);
    }

    #[test]
    fn wake_without_a_registered_waker_does_nothing() {
        let aw = AtomicWaker::new();
        aw.wake();
        assert!(aw.take().is_none());
    }

    #[test]
    fn registering_a_waker_that_will_wake_the_stored_one_does_not_clone_it() {
        let aw = AtomicWaker::new();
        let (count, waker) = counting_waker();
        // `count` and `waker` hold two references.
        aw.register(&waker);
        assert_eq!(
            Arc::strong_count(&count),
            3,
            "first register stores a clone"
        );
        for _ in 0..10 {
            aw.register(&waker.clone());
        }
        // The temporaries are gone; the stored waker is still the first clone.
        assert_eq!(
            Arc::strong_count(&count),
            3,
            "re-registering cloned the waker"
        );
    }

    #[test]
    fn registering_a_different_waker_replaces_and_drops_the_old_one() {
        let aw = AtomicWaker::new();
        let (first, w1) = counting_waker();
        let (second, w2) = counting_waker();
        aw.register(&w1);
        aw.register(&w2);
        assert_eq!(Arc::strong_count(&first), 2, "old waker not dropped");
        aw.wake();
        assert_eq!(first.wakes.load(SeqCst), 0);
        assert_eq!(second.wakes.load(SeqCst), 1);
    }

    #[test]
    fn a_wake_after_register_is_never_lost_under_contention() {
        // One consumer, two producers. Round `r`: a producer publishes `r` and wakes; the
        // consumer registers, checks, and parks until it sees `r`. A lost wake-up leaves the
        // consumer parked: park_timeout turns that into a failure instead of a hang.
        // Miri (data-race and weak-memory checking) runs a smaller instance: every round is
        // thousands of interpreted spins.
        const ROUNDS: usize = if cfg!(miri) { 200 } else { 20_000 };
        let aw = Arc::new(AtomicWaker::new());
        let published = Arc::new(AtomicUsize::new(0));
        let acked = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let (_count, waker_a) = counting_waker();
        let (_count_b, waker_b) = counting_waker();

        let producers: Vec<_> = (0..2)
            .map(|p| {
                let (aw, published, acked, done) =
                    (aw.clone(), published.clone(), acked.clone(), done.clone());
                thread::spawn(move || {
                    // Producers take turns on rounds: producer p publishes the rounds r with
                    // r % 2 == p, once the consumer has acknowledged r - 1 by starting to wait
                    // for r, so that every publish races with the consumer's register.
                    let mut r = p + 1;
                    while r <= ROUNDS && !done.load(Relaxed) {
                        if acked.load(SeqCst) == r - 1 {
                            published.store(r, SeqCst);
                            aw.wake();
                            r += 2;
                        } else {
                            hint::spin_loop();
                        }
                    }
                })
            })
            .collect();

        for r in 1..=ROUNDS {
            // Alternate wakers so both the replace path and the will_wake path are exercised.
            let waker = if r % 3 == 0 { &waker_b } else { &waker_a };
            let started = Instant::now();
            acked.store(r - 1, SeqCst);
            loop {
                aw.register(waker);
                if published.load(SeqCst) >= r {
                    break;
                }
                thread::park_timeout(Duration::from_secs(5));
                if published.load(SeqCst) < r && started.elapsed() >= Duration::from_secs(5) {
                    done.store(true, Relaxed);
                    panic!("lost wake-up in round {r}");
                }
            }
        }
        for p in producers {
            p.join().unwrap();
        }
    }

    #[test]
    fn a_wake_racing_with_register_wakes_some_waker() {
        // Many short races between one register and one wake. After both finish the event
        // (here: "wake was called") must be observed either by the consumer's check or by a
        // delivered wake-up. (Fewer under Miri, where a thread spawn costs milliseconds.)
        for _ in 0..if cfg!(miri) { 50 } else { 2_000 } {
            let aw = Arc::new(AtomicWaker::new());
            let fired = Arc::new(AtomicBool::new(false));
            let (count, waker) = counting_waker();
            let producer = {
                let (aw, fired) = (aw.clone(), fired.clone());
                thread::spawn(move || {
                    fired.store(true, Release);
                    aw.wake();
                })
            };
            aw.register(&waker);
            let seen = fired.load(Acquire);
            producer.join().unwrap();
            assert!(
                seen || count.wakes.load(SeqCst) >= 1,
                "neither the event nor a wake-up was observed"
            );
        }
    }

    #[test]
    fn a_panicking_clone_does_not_leave_the_slot_locked() {
        use std::task::{RawWaker, RawWakerVTable};
        fn clone_panics(_: *const ()) -> RawWaker {
            panic!("clone");
        }
        fn noop(_: *const ()) {}
        static VTABLE: RawWakerVTable = RawWakerVTable::new(clone_panics, noop, noop, noop);
        // SAFETY: the vtable's functions ignore the data pointer, and none of them is unsound
        // for any pointer (clone panics, the others do nothing).
        let bad = unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) };
        let aw = AtomicWaker::new();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| aw.register(&bad)));
        assert!(r.is_err());
        let (count, waker) = counting_waker();
        aw.register(&waker);
        aw.wake();
        assert_eq!(
            count.wakes.load(SeqCst),
            1,
            "slot stayed locked after the panic"
        );
    }
}

#[cfg(all(test, loom))]
pub(crate) mod loom_tests {
    use super::AtomicWaker;
    use crate::loom::sync::atomic::AtomicUsize;
    use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire};
    use crate::loom::sync::{Arc, Mutex};
    use loom::sync::Condvar;
    use std::task::{Wake, Waker};

    /// A one-bit semaphore as the waker: `wake` sets the bit, `wait` blocks until it is set and
    /// clears it. Not loom's `thread::park`: loom 0.7 drops a pending unpark token when the thread
    /// yields (as `hint::spin_loop` does under loom) and trips an assertion when a joining thread
    /// is unparked (tokio-rs/loom#249); nor loom's `block_on`, which needs a cargo feature corio
    /// does not enable.
    pub(crate) struct Signal {
        set: Mutex<bool>,
        cond: Condvar,
    }

    impl Wake for Signal {
        fn wake(self: std::sync::Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            *self.set.lock().unwrap() = true;
            self.cond.notify_one();
        }
    }

    impl Signal {
        pub(crate) fn new() -> Signal {
            Signal {
                set: Mutex::new(false),
                cond: Condvar::new(),
            }
        }

        pub(crate) fn wait(&self) {
            let mut set = self.set.lock().unwrap();
            while !*set {
                set = self.cond.wait(set).unwrap();
            }
            *set = false;
        }
    }

    /// Producers each add one to `events` and wake; the consumer registers, checks and waits
    /// until it has seen them all. A lost wake-up leaves it waiting forever, which loom reports
    /// as a deadlock.
    fn consumer_sees_every_event(producers: usize) {
        // Bounded explicitly, unless LOOM_MAX_PREEMPTIONS sets a bound: unbounded, the
        // two-producer model explores every schedule of three threads over a retry loop and
        // runs for more than eight minutes. Three preemptions finish in about a second and
        // still find the one lost wake-up this protocol has to prevent (deleting step 3's
        // `wake_by_ref` deadlocks the two-producer model at this bound; tokio's CI checks its
        // AtomicWaker with the same kind of bound).
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(3);
        }
        builder.check(move || {
            let aw = Arc::new(AtomicWaker::new());
            let events = Arc::new(AtomicUsize::new(0));
            let threads: Vec<_> = (0..producers)
                .map(|_| {
                    let (aw, events) = (aw.clone(), events.clone());
                    loom::thread::spawn(move || {
                        events.fetch_add(1, AcqRel);
                        aw.wake();
                    })
                })
                .collect();
            let signal = std::sync::Arc::new(Signal {
                set: Mutex::new(false),
                cond: Condvar::new(),
            });
            let waker = Waker::from(signal.clone());
            loop {
                aw.register(&waker);
                if events.load(Acquire) == producers {
                    break;
                }
                signal.wait();
            }
            for t in threads {
                t.join().unwrap();
            }
        });
    }

    #[test]
    fn a_wake_racing_with_register_is_never_lost() {
        consumer_sees_every_event(1);
    }

    #[test]
    fn two_wakes_racing_with_register_are_never_lost() {
        consumer_sees_every_event(2);
    }
}
