//! A hierarchical timing wheel, built only to measure against [`TimerHeap`](super::TimerHeap).
//!
//! DESIGN.md asks for per-P timers, "a 4-ary heap as Go, or a wheel: choose by measurement". This
//! is the wheel side of that measurement: close enough to tokio's (`runtime/time/wheel/`) that its
//! numbers are honest, simple enough to be a test-only file. It is compiled in test builds only;
//! the benchmark is `timer_bench` at the bottom. Run it with
//!
//! ```text
//! CORIO_TIMER_BENCH=1 cargo test --release -p corio --lib timer_bench -- --nocapture
//! ```
//!
//! (without the variable it runs a small smoke version and prints nothing).
//!
//! # The wheel
//!
//! Six levels of 64 slots. A level-0 slot is 1 ms, a level-`l` slot is 64^l ms, so the levels
//! cover 64 ms, 4.1 s, 4.4 min, 4.7 h, 12.4 days and 2.2 years. Deadlines are rounded *up* to the
//! next millisecond (never fire early). A timer goes to the level of the highest 6-bit group in
//! which its deadline differs from the wheel's current time (`elapsed`), at the slot given by its
//! deadline's bits in that group (tokio's `level_for`). Each level keeps a 64-bit occupancy mask,
//! so the next non-empty slot is one rotate and one `trailing_zeros`.
//!
//! When time reaches a slot of level `l > 0`, its timers *cascade*: each is re-inserted at a lower
//! level relative to the new `elapsed`. When time reaches a level-0 slot, its timers are due and
//! move to a `pending` list that `pop_expired` hands out.
//!
//! Slots are `Vec`s rather than tokio's intrusive lists: each timer records (level, slot, position)
//! in its `TimerEntry::index` word, and cancellation is a `swap_remove` plus one position update
//! of the timer moved into the hole, O(1) like unlinking. The entries are the heap's own
//! `Arc<TimerEntry>` (this module is a child of `heap` to reach that word), so both structures pay
//! the same allocation and the same shared-entry writes, and differ only in their algorithm.
//!
//! # What `next_deadline` is for a wheel
//!
//! The start of the first occupied slot of the lowest occupied level: O(levels) (at most six
//! mask tests, one rotate, one `trailing_zeros`). For level 0 this is the exact millisecond of
//! the earliest timer; for higher levels it is only a lower bound (the start of a slot that spans
//! 64^l ms), so an idle M sleeping "until the nearest timer" wakes at that bound to cascade,
//! finds nothing due, and sleeps again: one spurious wake-up per level a timer crosses.
//!
//! # Measured
//!
//! ns per operation, thread CPU time, each cell the range of three `timer_bench` runs (each run
//! itself the median of 5), on the 2-vCPU AMD EPYC VM while other builds ran (load 3.5–5):
//!
//! | live  | structure | insert  | cancel  | expire    | next_deadline | mixed (server) |
//! |-------|-----------|---------|---------|-----------|---------------|----------------|
//! | 1k    | heap      | 10–12   | 22–30   | 44–49     | 1.7           | 78–99          |
//! | 1k    | wheel     | 21–23   | 20–27   | 38–42     | 4.9–5.3       | 102–118        |
//! | 100k  | heap      | 21–49   | 156–274 | 311–428   | 1.5–1.7       | 255–652        |
//! | 100k  | wheel     | 59–77   | 220–260 | 93–110    | 4.8–5.3       | 189–507        |
//! | 1M    | heap      | 158–169 | 361–436 | 919–1099  | 1.6–1.8       | 933–1111       |
//! | 1M    | wheel     | 144–210 | 365–440 | 133–173   | 3.6–5.1       | 713–874        |
//!
//! Within a run the mixed-pattern ratio wheel/heap was 1.17–1.40 at 1k, 0.74–0.91 at 100k and
//! 0.73–0.79 at 1M. The heap stays (see `heap.rs`, "Rejected alternatives"): within ±30% in the
//! server pattern, exact deadlines and an exact `next_deadline` outweigh the wheel's 3–7× cheaper
//! mass expiry at 100k+ timers on one P.

use std::mem;
use std::sync::Arc;

use super::{NOT_QUEUED, TimerEntry};
use crate::loom::sync::atomic::Ordering::Relaxed;

/// Bits of the deadline (in ms) that one level resolves.
const BITS: u32 = 6;
/// Slots per level.
const SLOTS: usize = 1 << BITS;
/// Levels, as tokio: 64^6 ms is about 2.2 years.
const LEVELS: usize = 6;
/// The wheel's resolution: 1 ms, as tokio.
const RESOLUTION_NS: u64 = 1_000_000;
/// The farthest deadline the wheel can place exactly; later ones are parked at this distance and
/// re-placed when it is reached.
const MAX_MS: u64 = (1 << (BITS * LEVELS as u32)) - 1;
/// The pseudo-level of the `pending` list in a packed position.
const PENDING: usize = LEVELS;

/// A timer in a slot, with its deadline in ms (rounded up) next to it.
struct WSlot {
    when_ms: u64,
    entry: Arc<TimerEntry>,
}

/// Position packing in `TimerEntry::index`: level (0..=6) in bits 40..43, slot in 32..38, index
/// within the slot's `Vec` in 0..32. Never equal to `NOT_QUEUED`.
fn pack(level: usize, slot: usize, pos: usize) -> usize {
    debug_assert!(pos < 1 << 32);
    (level << 40) | (slot << 32) | pos
}

fn unpack(word: usize) -> (usize, usize, usize) {
    (word >> 40, (word >> 32) & (SLOTS - 1), word & 0xffff_ffff)
}

/// Level of a timer due at `when` ms when the wheel stands at `elapsed` ms (tokio's `level_for`):
/// the highest 6-bit group in which the two differ.
fn level_for(elapsed: u64, when: u64) -> usize {
    // `| (SLOTS - 1)`: a difference in the lowest group only still means level 0.
    let masked = ((elapsed ^ when) | (SLOTS as u64 - 1)).min(MAX_MS);
    let significant = 63 - masked.leading_zeros();
    (significant / BITS) as usize
}

/// A six-level, 64-slot hierarchical timing wheel with 1 ms resolution.
pub(super) struct TimerWheel {
    /// Current time, ms. Advanced by `pop_expired` only.
    elapsed: u64,
    /// `levels[l][s]`: timers of level `l`, slot `s`.
    levels: Vec<Vec<Vec<WSlot>>>,
    /// Bit `s` of `occupied[l]` is set iff `levels[l][s]` is non-empty.
    occupied: [u64; LEVELS],
    /// Due timers not yet handed out by `pop_expired`.
    pending: Vec<WSlot>,
    len: usize,
}

impl TimerWheel {
    /// An empty wheel whose clock starts at `now` (ns).
    pub(super) fn new(now: u64) -> Self {
        Self {
            elapsed: now / RESOLUTION_NS,
            levels: (0..LEVELS)
                .map(|_| (0..SLOTS).map(|_| Vec::new()).collect())
                .collect(),
            occupied: [0; LEVELS],
            pending: Vec::new(),
            len: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Queues `entry`; its deadline is rounded up to the next millisecond.
    pub(super) fn insert(&mut self, entry: Arc<TimerEntry>) {
        assert!(!entry.is_queued(), "TimerWheel::insert: already queued");
        let when_ms = entry.deadline().div_ceil(RESOLUTION_NS);
        self.len += 1;
        if when_ms <= self.elapsed {
            self.push_pending(WSlot { when_ms, entry });
        } else {
            self.place(WSlot { when_ms, entry });
        }
    }

    /// Removes `entry` if this wheel holds it.
    pub(super) fn remove(&mut self, entry: &TimerEntry) -> bool {
        let word = entry.index.load(Relaxed);
        if word == NOT_QUEUED {
            return false;
        }
        let (level, slot, pos) = unpack(word);
        let list = if level == PENDING {
            &mut self.pending
        } else {
            &mut self.levels[level][slot]
        };
        match list.get(pos) {
            Some(s) if std::ptr::eq(&*s.entry, entry) => {}
            _ => return false,
        }
        let removed = list.swap_remove(pos);
        if let Some(moved) = list.get(pos) {
            moved.entry.index.store(pack(level, slot, pos), Relaxed);
        }
        if level != PENDING && list.is_empty() {
            self.occupied[level] &= !(1 << slot);
        }
        removed.entry.index.store(NOT_QUEUED, Relaxed);
        self.len -= 1;
        true
    }

    /// A lower bound on the earliest deadline (ns): exact for timers within the current 64 ms,
    /// the start of a coarser slot otherwise (see the module documentation).
    pub(super) fn next_deadline(&self) -> Option<u64> {
        if !self.pending.is_empty() {
            return Some(self.elapsed * RESOLUTION_NS);
        }
        self.next_expiration()
            .map(|(_, _, at_ms)| at_ms * RESOLUTION_NS)
    }

    /// Hands out one timer due at `now` (ns), advancing the wheel (and cascading) as far as `now`.
    pub(super) fn pop_expired(&mut self, now: u64) -> Option<Arc<TimerEntry>> {
        let now_ms = now / RESOLUTION_NS;
        loop {
            if let Some(s) = self.pending.pop() {
                s.entry.index.store(NOT_QUEUED, Relaxed);
                self.len -= 1;
                return Some(s.entry);
            }
            match self.next_expiration() {
                Some((level, slot, at_ms)) if at_ms <= now_ms => self.process(level, slot, at_ms),
                _ => {
                    self.elapsed = self.elapsed.max(now_ms);
                    return None;
                }
            }
        }
    }

    /// (level, slot, start in ms) of the next slot to process. Lower levels always expire first:
    /// a level-`l` timer differs from `elapsed` in group `l`, so it lies beyond the current
    /// group-`l` span that contains every lower-level timer.
    fn next_expiration(&self) -> Option<(usize, usize, u64)> {
        for level in 0..LEVELS {
            let occupied = self.occupied[level];
            if occupied == 0 {
                continue;
            }
            let shift = BITS * level as u32;
            let slot_range = 1u64 << shift;
            let level_range = slot_range << BITS;
            let now_slot = (self.elapsed >> shift) as u32 % SLOTS as u32;
            let slot =
                (occupied.rotate_right(now_slot).trailing_zeros() + now_slot) as usize % SLOTS;
            let level_start = self.elapsed & !(level_range - 1);
            let mut at = level_start + slot as u64 * slot_range;
            if at <= self.elapsed {
                // The slot is behind the current one: it is in the next turn of this level.
                at += level_range;
            }
            return Some((level, slot, at));
        }
        None
    }

    /// Time reached slot `slot` of `level` at `at_ms`: due timers go to `pending`, the rest cascade.
    #[cold]
    fn process(&mut self, level: usize, slot: usize, at_ms: u64) {
        self.elapsed = at_ms;
        self.occupied[level] &= !(1 << slot);
        let mut list = mem::take(&mut self.levels[level][slot]);
        for s in list.drain(..) {
            if s.when_ms <= self.elapsed {
                self.push_pending(s);
            } else {
                self.place(s);
            }
        }
        // Keep the allocation unless a far-future timer was re-placed into this very slot.
        if self.levels[level][slot].is_empty() {
            self.levels[level][slot] = list;
        }
    }

    fn place(&mut self, s: WSlot) {
        let when = s.when_ms.min(self.elapsed + MAX_MS);
        let level = level_for(self.elapsed, when);
        let slot = ((when >> (BITS * level as u32)) as usize) % SLOTS;
        let list = &mut self.levels[level][slot];
        s.entry.index.store(pack(level, slot, list.len()), Relaxed);
        list.push(s);
        self.occupied[level] |= 1 << slot;
    }

    fn push_pending(&mut self, s: WSlot) {
        s.entry
            .index
            .store(pack(PENDING, 0, self.pending.len()), Relaxed);
        self.pending.push(s);
    }
}

impl Drop for TimerWheel {
    fn drop(&mut self) {
        for s in self.levels.iter().flatten().flatten().chain(&self.pending) {
            s.entry.index.store(NOT_QUEUED, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_rng::Rng;
    use super::*;
    use std::collections::BTreeMap;

    const MS: u64 = RESOLUTION_NS;

    #[test]
    fn the_wheel_never_fires_early_and_at_most_one_millisecond_late() {
        let mut rng = Rng::new(11);
        let start = 5 * MS + 123;
        let mut wheel = TimerWheel::new(start);
        let mut entries = Vec::new();
        for _ in 0..20_000 {
            // Up to about 3 hours ahead, so several levels and cascades are used.
            let d = start + rng.range(0, 10_000_000) * rng.range(1, 1_000);
            let e = TimerEntry::new(d);
            wheel.insert(e.clone());
            entries.push(e);
        }
        let mut now = start;
        let mut fired = 0;
        let last = entries.iter().map(|e| e.deadline()).max().unwrap();
        while now <= last + 2 * MS {
            while let Some(e) = wheel.pop_expired(now) {
                assert!(e.deadline() <= now, "early: {} > {now}", e.deadline());
                assert!(
                    now - e.deadline() < 2 * MS,
                    "late by {} ns",
                    now - e.deadline()
                );
                fired += 1;
            }
            // Jump to the wheel's next deadline if it is ahead, as an idle M would, else 1 ms.
            now = match wheel.next_deadline() {
                Some(d) if d > now => d.max(now + 1),
                _ => now + MS,
            };
        }
        assert_eq!(fired, entries.len());
        assert_eq!(wheel.len(), 0);
    }

    #[test]
    fn random_operations_agree_with_a_btreemap_model() {
        let mut rng = Rng::new(12);
        let mut wheel = TimerWheel::new(0);
        let mut model: BTreeMap<usize, Arc<TimerEntry>> = BTreeMap::new();
        let mut now = 0u64;
        for op in 0..100_000usize {
            match rng.range(0, 100) {
                0..50 => {
                    let e = TimerEntry::new(now + rng.range(0, 300 * MS));
                    wheel.insert(e.clone());
                    model.insert(op, e);
                }
                50..80 if !model.is_empty() => {
                    let k = *model
                        .keys()
                        .nth(rng.range(0, model.len().min(64) as u64) as usize)
                        .unwrap();
                    let e = model.remove(&k).unwrap();
                    assert!(wheel.remove(&e));
                    assert!(!wheel.remove(&e));
                }
                _ => {
                    now += rng.range(0, 3 * MS);
                    while let Some(e) = wheel.pop_expired(now) {
                        assert!(e.deadline() <= now);
                        let k = model
                            .iter()
                            .find(|(_, m)| Arc::ptr_eq(m, &e))
                            .map(|(k, _)| *k)
                            .expect("popped a timer not in the model");
                        model.remove(&k);
                    }
                    // Everything due a full millisecond ago has been handed out.
                    let now_ms = now / MS;
                    assert!(model.values().all(|e| e.deadline().div_ceil(MS) > now_ms));
                }
            }
            assert_eq!(wheel.len(), model.len());
        }
    }
}

/// Heap vs wheel, at 1k, 100k and 1M live timers. See the module documentation for how to run it.
#[cfg(test)]
mod timer_bench {
    use super::super::TimerHeap;
    use super::super::test_rng::Rng;
    use super::*;
    use std::hint::black_box;

    const MS: u64 = RESOLUTION_NS;
    /// Clock origin for the benchmarks (any value far from 0).
    const T0: u64 = 1_000 * MS;

    /// The operations both structures offer.
    trait Timers {
        fn create(now: u64) -> Self;
        fn insert(&mut self, e: Arc<TimerEntry>);
        fn remove(&mut self, e: &TimerEntry) -> bool;
        fn next_deadline(&self) -> Option<u64>;
        fn pop_expired(&mut self, now: u64) -> Option<Arc<TimerEntry>>;
        fn size(&self) -> usize;
    }

    impl Timers for TimerHeap {
        fn create(_: u64) -> Self {
            TimerHeap::new()
        }
        fn insert(&mut self, e: Arc<TimerEntry>) {
            TimerHeap::insert(self, e)
        }
        fn remove(&mut self, e: &TimerEntry) -> bool {
            TimerHeap::remove(self, e)
        }
        fn next_deadline(&self) -> Option<u64> {
            TimerHeap::next_deadline(self)
        }
        fn pop_expired(&mut self, now: u64) -> Option<Arc<TimerEntry>> {
            TimerHeap::pop_expired(self, now)
        }
        fn size(&self) -> usize {
            self.len()
        }
    }

    impl Timers for TimerWheel {
        fn create(now: u64) -> Self {
            TimerWheel::new(now)
        }
        fn insert(&mut self, e: Arc<TimerEntry>) {
            TimerWheel::insert(self, e)
        }
        fn remove(&mut self, e: &TimerEntry) -> bool {
            TimerWheel::remove(self, e)
        }
        fn next_deadline(&self) -> Option<u64> {
            TimerWheel::next_deadline(self)
        }
        fn pop_expired(&mut self, now: u64) -> Option<Arc<TimerEntry>> {
            TimerWheel::pop_expired(self, now)
        }
        fn size(&self) -> usize {
            self.len()
        }
    }

    /// This thread's CPU time in ns. The benchmark shares a 2-vCPU machine with builds and tests;
    /// wall-clock time would charge it for the time it spends descheduled.
    fn cpu_ns() -> u128 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable `timespec`; CLOCK_THREAD_CPUTIME_ID exists on every
        // Linux this crate supports.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
        ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
    }

    /// The cost of one `cpu_ns()` pair, subtracted from every timed batch (it is a system call,
    /// a few hundred ns: too much to leave in a batch of 100 inserts).
    fn clock_overhead() -> u128 {
        let start = cpu_ns();
        for _ in 0..1_000 {
            black_box(cpu_ns());
        }
        (cpu_ns() - start) / 1_000
    }

    /// Times `f` in this thread's CPU ns, less the clock's own cost.
    fn timed(overhead: u128, f: impl FnOnce()) -> u128 {
        let start = cpu_ns();
        f();
        (cpu_ns() - start).saturating_sub(overhead)
    }

    /// A timeout as a server sets one: 1–100 ms from `now`, nanosecond-precise.
    fn timeout(rng: &mut Rng, now: u64) -> u64 {
        now + rng.range(MS, 100 * MS + 1)
    }

    fn filled<T: Timers>(n: usize, rng: &mut Rng) -> (T, Vec<Arc<TimerEntry>>) {
        let mut t = T::create(T0);
        let live: Vec<_> = (0..n).map(|_| TimerEntry::new(timeout(rng, T0))).collect();
        for e in &live {
            t.insert(e.clone());
        }
        (t, live)
    }

    /// ns per operation for (insert, cancel): with `n` live timers, insert a batch of `n/10` new
    /// timeouts (entries allocated beforehand, untimed), then cancel `n/10` random live timers.
    fn insert_cancel<T: Timers>(n: usize, seed: u64) -> (f64, f64) {
        let mut rng = Rng::new(seed);
        let (mut t, mut live) = filled::<T>(n, &mut rng);
        let batch = (n / 10).max(1);
        let rounds = (200_000 / batch).max(2);
        let (mut ins_ns, mut cancel_ns) = (0u128, 0u128);
        let overhead = clock_overhead();
        for _ in 0..rounds {
            // Allocated and cloned outside the timed loop: only the structure is measured.
            let fresh: Vec<_> = (0..batch)
                .map(|_| TimerEntry::new(timeout(&mut rng, T0)))
                .collect();
            let mut clones = fresh.clone();
            ins_ns += timed(overhead, || {
                for e in clones.drain(..) {
                    t.insert(e);
                }
            });
            live.extend(fresh);

            let victims: Vec<_> = (0..batch)
                .map(|_| live.swap_remove(rng.range(0, live.len() as u64) as usize))
                .collect();
            cancel_ns += timed(overhead, || {
                for v in &victims {
                    black_box(t.remove(v));
                }
            });
        }
        assert_eq!(t.size(), n);
        let ops = (rounds * batch) as f64;
        (ins_ns as f64 / ops, cancel_ns as f64 / ops)
    }

    /// ns per fired timer: `n` timeouts, then the clock advances in 1 ms steps (a scheduler
    /// checking its timers between tasks) and every due timer is popped.
    fn expire<T: Timers>(n: usize, seed: u64) -> f64 {
        let mut rng = Rng::new(seed);
        let rounds = (200_000 / n).max(1);
        let mut ns = 0u128;
        let overhead = clock_overhead();
        for _ in 0..rounds {
            let (mut t, live) = filled::<T>(n, &mut rng);
            // Popped entries are kept, not dropped, inside the timed loop: `live` holds the other
            // reference, so dropping would only decrement a count, but keep it out all the same.
            let mut popped = Vec::with_capacity(n);
            ns += timed(overhead, || {
                for step in 1..=101 {
                    let now = T0 + step * MS;
                    black_box(t.next_deadline());
                    while let Some(e) = t.pop_expired(now) {
                        popped.push(e);
                    }
                }
            });
            assert_eq!(popped.len(), live.len());
        }
        ns as f64 / (rounds * n) as f64
    }

    /// ns per `next_deadline` with `n` live timers.
    fn next_deadline<T: Timers>(n: usize, seed: u64) -> f64 {
        let mut rng = Rng::new(seed);
        let (t, _live) = filled::<T>(n, &mut rng);
        const CALLS: usize = 1_000_000;
        let ns = timed(clock_overhead(), || {
            for _ in 0..CALLS {
                black_box(black_box(&t).next_deadline());
            }
        });
        ns as f64 / CALLS as f64
    }

    /// ns per request of a server with about `n` live timeouts. Each request: allocate a
    /// timeout of 1–100 ms and insert it; 90% of requests finish 0.5 ms later and cancel their
    /// timeout, 10% let it fire. Between requests the simulated clock advances by `dt`, and the
    /// scheduler pops what is due and asks for the next deadline. Live timers in steady state:
    /// (0.9 × 0.5 ms + 0.1 × 50.5 ms) / dt = 5.5 ms / dt, so `dt = 5.5 ms / n`. Warm-up runs
    /// 110 ms of simulated time (every timer of the start-up transient has fired) before timing.
    fn mixed<T: Timers>(n: usize, seed: u64) -> (f64, usize) {
        let mut rng = Rng::new(seed);
        let mut t = T::create(T0);
        // Requests live 0.5 ms = n / 11 request intervals.
        let lag = (n / 11).max(1);
        let mut ring: Vec<Option<(Arc<TimerEntry>, bool)>> = (0..lag).map(|_| None).collect();
        let clock = |i: u64| T0 + i * 5_500_000 / n as u64;
        let warm = (110 * MS * n as u64 / 5_500_000).max(10_000);
        let ops = (n as u64 * 2).max(500_000);
        let mut i = 0u64;
        let mut run = |t: &mut T, ops: u64, i: &mut u64| {
            for _ in 0..ops {
                let now = clock(*i);
                while let Some(e) = t.pop_expired(now) {
                    black_box(e);
                }
                black_box(t.next_deadline());
                let r = (*i % lag as u64) as usize;
                // The request that started 0.5 ms ago finishes; 90% of them cancel their timeout
                // (it cannot have fired: every timeout is at least 1 ms).
                if let Some((e, true)) = ring[r].take() {
                    let removed = t.remove(&e);
                    debug_assert!(removed);
                }
                let e = TimerEntry::new(timeout(&mut rng, now));
                t.insert(e.clone());
                ring[r] = Some((e, rng.chance(90)));
                *i += 1;
            }
        };
        run(&mut t, warm, &mut i);
        let start = cpu_ns();
        run(&mut t, ops, &mut i);
        let ns = (cpu_ns() - start) as f64 / ops as f64;
        (ns, t.size())
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    /// One run of every measurement: [insert, cancel, expire, next_deadline, mixed] in ns/op, and
    /// the live timers at the end of the mixed pattern.
    fn measure<T: Timers>(n: usize, seed: u64) -> ([f64; 5], usize) {
        let (insert, cancel) = insert_cancel::<T>(n, seed);
        let (mix, live) = mixed::<T>(n, seed);
        (
            [
                insert,
                cancel,
                expire::<T>(n, seed),
                next_deadline::<T>(n, seed),
                mix,
            ],
            live,
        )
    }

    #[test]
    fn timer_bench() {
        let full = std::env::var_os("CORIO_TIMER_BENCH").is_some();
        let (sizes, runs): (&[usize], u64) = if full {
            (&[1_000, 100_000, 1_000_000], 5)
        } else {
            (&[1_000], 1)
        };
        if full {
            println!("ns/op, median of {runs} runs");
            println!(
                "{:>9} {:>5} | {:>7} {:>7} {:>7} {:>9} {:>7} | live in mixed",
                "timers", "", "insert", "cancel", "expire", "next_dl", "mixed"
            );
        }
        for &n in sizes {
            // Runs alternate between the structures so that both see the same machine noise.
            let mut rows: [[Vec<f64>; 5]; 2] = Default::default();
            let mut live = [0; 2];
            for run in 0..runs {
                for (k, (row, live)) in rows.iter_mut().zip(&mut live).enumerate() {
                    let (r, l) = if k == 0 {
                        measure::<TimerHeap>(n, 100 + run)
                    } else {
                        measure::<TimerWheel>(n, 100 + run)
                    };
                    for (col, v) in row.iter_mut().zip(r) {
                        col.push(v);
                    }
                    *live = l;
                }
            }
            if full {
                for (kind, (row, live)) in ["heap", "wheel"].iter().zip(rows.into_iter().zip(live))
                {
                    let [a, b, c, d, e] = row.map(median);
                    println!(
                        "{n:>9} {kind:>5} | {a:>7.1} {b:>7.1} {c:>7.1} {d:>9.2} {e:>7.1} | {live}"
                    );
                }
            }
        }
    }
}
