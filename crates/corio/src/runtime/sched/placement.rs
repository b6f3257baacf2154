//! Where a spawner's new task starts: next to its previous child, moving to another worker
//! only when that is where spare capacity has been for several spawns in a row.
//!
//! # The problem
//!
//! A stackful coroutine that has started never changes thread (DESIGN decision 2), so the
//! worker that *starts* a coroutine runs it for life, and a chain of coroutines linked by
//! channels — Go's prime sieve: the caller spawns one filter per prime and at once blocks on
//! the new filter's channel — uses only the cores its coroutines started on. With the spawn
//! slot alone (`slot.rs`) every filter starts on the spawner's worker: the spawner blocks a
//! microsecond after each spawn and its worker takes the child first, every time, so a second
//! worker never gets any of the chain (polls per worker 518,383 / 0 for the 1,000th prime).
//!
//! Two placements were tried and dropped before this one (`docs/chan.md`, "The sieve on 2
//! workers"): spawning into the run queue for a searching worker to steal moved the whole
//! chain at once, and sending a spawn to an idle worker whenever the spawner's worker had
//! other work scattered the filters along the chain, so that numbers crossed threads at every
//! other link (each crossing costs both sides a suspension and a cross-thread wake-up).
//!
//! # The rule
//!
//! Each worker remembers, for the task that spawned there last, the worker its children go
//! to (the *target*; at first the spawner's own worker), how many children it has placed and
//! how long each worker had spent out of work (its loop found nothing to run: it searched,
//! spun or slept) when the target last moved. A child goes to the target. The target moves
//! only after a *run* of children there — at least [`MIN_RUN`], and at least an eighth of all
//! the spawner's children so far — and only to the worker that has been out of work
//! [`MARGIN`] longer than the target since the target last moved. It leaves the spawner's
//! own worker only while that worker has other started coroutines to run (it is saturated).
//!
//! So the children of one spawner form long runs of consecutive children per worker — for the
//! sieve, a split of the chain into a few contiguous pieces, crossed by a number once per
//! boundary it reaches — and spare capacity attracts new work. The runs grow with the
//! spawner's family, so a chain of n children has O(log n) boundaries. A spawner that blocks
//! on each child (spawn and join) leaves its worker with nothing else to run, so its children
//! stay home, in the spawn slot, as before. On one worker nothing changes.
//!
//! **A target that stalls.** A split chain runs only as fast as the slower of its threads gets
//! a CPU. When other processes' threads hold the CPUs, a target can go without running a task
//! for whole scheduler ticks while what was sent to it waits in its inbox; then the children
//! go home instead: the target moves back to the spawner's worker when, at a placement, it
//! has run no task for [`STALL`] while its inbox held work (its task count, read at each
//! placement there, is unchanged). On a machine with CPUs to spare a target takes its inbox
//! within microseconds, so this does not move it; and a target stuck in a hog gets no more
//! children either (those it has are released by sysmon, `docs/chan.md`).
//!
//! **Children far apart.** A server's accept loop is a spawner too, whose children (the
//! connections) arrive milliseconds apart and live long. The rule above keeps the first
//! [`MIN_RUN`] of them home, and leaves home only while home has other coroutines runnable at
//! the instant of a spawn, which a worker serving a few connections seldom has: 4 busy
//! connections 200 ms apart all started on the acceptor's thread, and the other worker slept
//! through their lives (an echo rate of half what 2 threads gave). So when the spawner's
//! worker has run [`SPACED_TICKS`] tasks or more since the spawner's previous child (the
//! children are spaced out; a spawn-and-join loop runs two or three), the placement also
//! looks at what the workers did since its previous look, if that was [`SPACED_NS`] or more
//! ago: a worker that was out of work for [`MARGIN`] and an eighth of the time between the
//! looks longer than the target becomes the target at once, with no run first. A spaced child of a
//! busy worker so goes to the worker that sat idle while it was busy; where both were idle,
//! or both busy, it stays. Children closer together (the sieve's chain; a burst of
//! connections) are left to the run rule: with a
//! look at every one of them, the sieve's chain was cut at 38–118 places instead of 13–22
//! (3,000 filters, a loaded host), since the worker holding the chain's quiet tail is out of
//! work most of the time.
//!
//! Connections that arrive while every worker is idle are idle when placed, and all stay home
//! by both rules; a server that knows its connections live apart spawns them with
//! `TaskBuilder::spread`, which places by count instead (`spawn.rs`).
//!
//! The memory is one entry per worker, keyed by the spawner's task id: a spawner that shares
//! its worker with another spawner starts again from home when the other one spawned in
//! between. It costs no field in the task.
//!
//! Go does not need this: its goroutines move between Ps at every wake-up (`runnext` on the
//! waker's P, stealing by an idle P), so its sieve spreads over both Ps whatever the spawn.

/// The shortest run of children on one worker before the target may move.
pub(crate) const MIN_RUN: u64 = 8;

/// How much longer (ns) a worker must have been out of work than the target, since the
/// target last moved, to become the target.
pub(crate) const MARGIN: u64 = 200_000;

/// How long (ns) a target may run no task while its inbox holds work before its spawner's
/// children go home instead (see "A target that stalls"): a few times a task's turn on a
/// quiet machine, a fraction of a scheduler tick (4 ms here).
pub(crate) const STALL: u64 = 1_000_000;

/// Tasks the spawner's worker must have run since the spawner's previous child for the
/// placement to look at the workers' idle times before the run rule ("Children far apart"):
/// a spawn-and-join loop runs 2–3 between its spawns (the child, the spawner), so it reads no
/// clock; a worker with other work reaches 16 within microseconds.
pub(crate) const SPACED_TICKS: u64 = 16;

/// The shortest time (ns) between two looks of "Children far apart" that may move the
/// target: over a hundred times the sieve's mean spawn gap on a quiet host (3,000 filters in
/// about 0.4 s, docs/measurements.md), a tenth of the 200 ms between the connections that
/// showed the problem.
pub(crate) const SPACED_NS: u64 = 20_000_000;

/// What a placement reads of its target's progress (see "A target that stalls").
#[derive(Clone, Copy, Debug)]
pub(crate) struct Progress {
    /// Tasks the target has run so far.
    pub(crate) ticks: u64,
    /// Whether its inbox holds work it has not taken.
    pub(crate) waiting: bool,
    /// The runtime clock now (ns).
    pub(crate) now: u64,
}

/// One worker's memory of where its last spawner's children go.
#[derive(Debug)]
pub(crate) struct Placement {
    /// The task id of the spawner this entry is about (0: none yet; task ids start at 1).
    spawner: u64,
    /// Where its children start.
    target: usize,
    /// Children placed since this entry is about `spawner`.
    children: u64,
    /// Children placed on `target` since it last moved.
    run: u64,
    /// Each worker's time out of work (ns) when the target last moved (empty: not read yet
    /// for this spawner).
    idle_then: Vec<u64>,
    /// Each worker's time out of work now (scratch space, kept to spare an allocation).
    idle_now: Vec<u64>,
    /// The target's task count at the last placement there (`u64::MAX`: not read yet).
    target_ticks: u64,
    /// The runtime clock when the target was last seen making progress.
    progress_at: u64,
    /// The spawner's worker's task count at the spawner's previous child.
    own_ticks: u64,
    /// Each worker's time out of work at the last look for spaced children ("Children far
    /// apart"; empty: no look yet for this spawner), and the runtime clock then.
    idle_looked: Vec<u64>,
    looked_at: u64,
}

impl Placement {
    /// An empty memory.
    pub(crate) const fn new() -> Placement {
        Placement {
            spawner: 0,
            target: usize::MAX,
            children: 0,
            run: 0,
            idle_then: Vec::new(),
            idle_now: Vec::new(),
            target_ticks: u64::MAX,
            progress_at: 0,
            own_ticks: 0,
            idle_looked: Vec::new(),
            looked_at: 0,
        }
    }

    /// The worker a new task of `spawner`, spawned on worker `own`, starts on. `own_busy`:
    /// whether `own` has started coroutines to run other than the spawner; `own_ticks`: the
    /// tasks `own` has run so far; `idle` reads each worker's total time out of work so far
    /// into the vector it is given, emptied, and returns the runtime clock (called only when
    /// the target may move); `progress` reads a worker's progress (called only when the
    /// target is another worker).
    #[inline]
    pub(crate) fn choose(
        &mut self,
        spawner: u64,
        own: usize,
        own_busy: bool,
        own_ticks: u64,
        idle: impl FnOnce(&mut Vec<u64>) -> u64,
        progress: impl FnOnce(usize) -> Progress,
    ) -> usize {
        // The common case, inline: a spawner whose children stay home, whose worker has
        // nothing else to run (spawn and join) and ran few tasks since its previous child.
        // Its children are not counted: a run is then measured in the children placed while
        // the target could move.
        let spaced = own_ticks.wrapping_sub(self.own_ticks) >= SPACED_TICKS;
        self.own_ticks = own_ticks;
        if !own_busy && !spaced && self.target == own && self.spawner == spawner {
            return own;
        }
        self.choose_slow(spawner, own, own_busy, spaced, idle, progress)
    }

    #[inline(never)]
    fn choose_slow(
        &mut self,
        spawner: u64,
        own: usize,
        own_busy: bool,
        spaced: bool,
        idle: impl FnOnce(&mut Vec<u64>) -> u64,
        progress: impl FnOnce(usize) -> Progress,
    ) -> usize {
        let first = self.spawner != spawner;
        if first {
            self.spawner = spawner;
            self.move_to(own);
            self.children = 0;
            self.idle_looked.clear();
        }
        if self.target != own {
            let seen = progress(self.target);
            if seen.ticks != self.target_ticks || !seen.waiting {
                self.target_ticks = seen.ticks;
                self.progress_at = seen.now;
            } else if seen.now.saturating_sub(self.progress_at) >= STALL {
                // Stalled: home, and the idle times are measured afresh from here.
                self.move_to(own);
            }
        }
        let mut idle = Some(idle);
        // A spawner's first child takes the first look, so that its second, if spaced, can
        // already be compared with it (a server's second connection).
        if spaced || first {
            self.idle_now.clear();
            let now = (idle.take().expect("read once"))(&mut self.idle_now);
            if let Some(w) = self.idler_since_look(now) {
                self.move_to(w);
                self.children += 1;
                self.run = 1;
                return w;
            }
            if !first && !own_busy && self.target == own {
                return own; // what the inline path returns, uncounted as there
            }
        }
        self.children += 1;
        self.run += 1;
        if self.run < MIN_RUN.max(self.children / 8) || (self.target == own && !own_busy) {
            return self.target;
        }
        if let Some(idle) = idle {
            self.idle_now.clear();
            idle(&mut self.idle_now);
        }
        if self.idle_then.len() != self.idle_now.len() {
            // The first look: what follows is measured from here.
            std::mem::swap(&mut self.idle_then, &mut self.idle_now);
            return self.target;
        }
        let (now, then) = (&self.idle_now, &self.idle_then);
        let since = |w: usize| now[w].saturating_sub(then[w]);
        let most_idle = (0..now.len())
            .filter(|&w| w != self.target)
            .max_by_key(|&w| since(w));
        if let Some(w) = most_idle
            && since(w) >= since(self.target) + MARGIN
        {
            self.move_to(w);
            std::mem::swap(&mut self.idle_then, &mut self.idle_now);
        }
        self.target
    }

    /// "Children far apart": the worker that was out of work, since the last look, for
    /// [`MARGIN`] and an eighth of the time between the looks longer than the target, if one
    /// was (a worker serving one connection's ping-pong waits for the peer about half the
    /// time, so a half missed it; the spawn-and-sleep loop of an idle runtime differs by far
    /// less than an eighth);
    /// `idle_now` holds the workers' idle times read at `now`, kept for the next look.
    fn idler_since_look(&mut self, now: u64) -> Option<usize> {
        let looked = std::mem::replace(&mut self.looked_at, now);
        if self.idle_looked.len() != self.idle_now.len() || now.saturating_sub(looked) < SPACED_NS {
            // The first look (what follows is measured from here), or too soon after the last.
            self.idle_looked.clone_from(&self.idle_now);
            return None;
        }
        let (fresh, then) = (&self.idle_now, &self.idle_looked);
        let since = |w: usize| fresh[w].saturating_sub(then[w]);
        let margin = MARGIN + now.saturating_sub(looked) / 8;
        let idler = (0..fresh.len())
            .filter(|&w| w != self.target)
            .max_by_key(|&w| since(w))
            .filter(|&w| since(w) >= since(self.target) + margin);
        self.idle_looked.clone_from(&self.idle_now);
        idler
    }

    /// Makes `target` the target, with a run of no children and its progress not read yet.
    fn move_to(&mut self, target: usize) {
        self.target = target;
        self.run = 0;
        self.idle_then.clear();
        self.target_ticks = u64::MAX;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A target whose inbox is empty: never stalled.
    fn nothing_waits(_: usize) -> Progress {
        Progress {
            ticks: 0,
            waiting: false,
            now: 0,
        }
    }

    /// Places `n` children of spawner 7 from worker 0 of 2, worker `idle_worker` gaining
    /// `MARGIN` of idle time per child; returns where each went.
    fn place(p: &mut Placement, n: usize, own_busy: bool, idle_worker: usize) -> Vec<usize> {
        let mut idle = [0u64; 2];
        (0..n)
            .map(|_| {
                idle[idle_worker] += MARGIN;
                p.choose(
                    7,
                    0,
                    own_busy,
                    0,
                    |v| {
                        v.extend(idle);
                        0
                    },
                    nothing_waits,
                )
            })
            .collect()
    }

    #[test]
    fn a_spawner_whose_worker_has_nothing_else_keeps_its_children_home() {
        let mut p = Placement::new();
        assert!(place(&mut p, 1000, false, 1).iter().all(|&w| w == 0));
    }

    #[test]
    fn children_move_to_an_idle_worker_in_one_contiguous_run() {
        let mut p = Placement::new();
        let at = place(&mut p, 100, true, 1);
        let first_away = at
            .iter()
            .position(|&w| w == 1)
            .expect("some children moved");
        assert!(first_away >= MIN_RUN as usize, "{at:?}");
        assert!(at[first_away..].iter().all(|&w| w == 1), "{at:?}");
    }

    #[test]
    fn children_come_home_when_home_is_the_idle_one() {
        let mut p = Placement::new();
        place(&mut p, 100, true, 1);
        let at = place(&mut p, 100, true, 0);
        let home = at.iter().position(|&w| w == 0).expect("children came home");
        assert!(at[home..].iter().all(|&w| w == 0), "{at:?}");
    }

    #[test]
    fn runs_grow_with_the_family_so_boundaries_stay_few() {
        let mut p = Placement::new();
        let mut idle = [0u64; 2];
        // The other worker is always the idle one: the target alternates as fast as allowed.
        let at: Vec<usize> = (0..10_000)
            .map(|_| {
                let t = p.target;
                if t < 2 {
                    idle[1 - t] += MARGIN;
                }
                p.choose(
                    7,
                    0,
                    true,
                    0,
                    |v| {
                        v.extend(idle);
                        0
                    },
                    nothing_waits,
                )
            })
            .collect();
        let boundaries = at.windows(2).filter(|w| w[0] != w[1]).count();
        assert!((2..=80).contains(&boundaries), "{boundaries} boundaries");
    }

    #[test]
    fn another_spawner_starts_from_its_own_worker() {
        let mut p = Placement::new();
        place(&mut p, 100, true, 1);
        assert_eq!(
            p.choose(
                8,
                0,
                true,
                0,
                |v| {
                    v.extend([0, 0]);
                    0
                },
                nothing_waits
            ),
            0
        );
    }

    #[test]
    fn children_go_home_when_the_target_runs_nothing_while_work_waits_for_it() {
        let mut p = Placement::new();
        place(&mut p, 100, true, 1);
        assert_eq!(p.target, 1, "the children moved to the idle worker");
        // The target runs tasks: it keeps the children, whatever the time.
        let mut ticks = 0;
        for now in 0..20 {
            ticks += 1;
            let progress = |_| Progress {
                ticks,
                waiting: true,
                now: now * STALL,
            };
            assert_eq!(
                p.choose(
                    7,
                    0,
                    true,
                    0,
                    |v| {
                        v.extend([0, 0]);
                        0
                    },
                    progress
                ),
                1
            );
        }
        // Its task count stops while its inbox holds work: home once `STALL` has passed.
        // (It last ran one at `19 * STALL`.)
        let start = 19 * STALL;
        let stalled = |now| {
            move |_| Progress {
                ticks,
                waiting: true,
                now,
            }
        };
        assert_eq!(
            p.choose(
                7,
                0,
                true,
                0,
                |v| {
                    v.extend([0, 0]);
                    0
                },
                stalled(start + STALL / 2)
            ),
            1
        );
        assert_eq!(
            p.choose(
                7,
                0,
                true,
                0,
                |v| {
                    v.extend([0, 0]);
                    0
                },
                stalled(start + STALL)
            ),
            0
        );
    }

    /// Places one child of spawner 7 from worker 0 of 2 after its worker ran `ticks` tasks
    /// since the previous child and `gap` ns passed, in which worker `w` was out of work for
    /// `idle_gain[w]`; `clock`, `ticks` and `idle` carry the state between calls.
    fn place_spaced(
        p: &mut Placement,
        clock: &mut (u64, u64, [u64; 2]),
        gap: u64,
        idle_gain: [u64; 2],
        own_busy: bool,
    ) -> usize {
        clock.0 += gap;
        clock.1 += SPACED_TICKS;
        clock.2[0] += idle_gain[0];
        clock.2[1] += idle_gain[1];
        let (now, ticks, idle) = *clock;
        p.choose(
            7,
            0,
            own_busy,
            ticks,
            |v| {
                v.extend(idle);
                now
            },
            nothing_waits,
        )
    }

    #[test]
    fn a_spaced_child_of_a_busy_worker_goes_at_once_to_the_worker_that_sat_idle() {
        let mut p = Placement::new();
        let mut clock = (0, 0, [0; 2]);
        const MS: u64 = 1_000_000;
        // The first look only measures.
        assert_eq!(
            place_spaced(&mut p, &mut clock, 200 * MS, [0, 200 * MS], false),
            0
        );
        // Worker 0 was busy the whole 200 ms, worker 1 idle: the second child goes there,
        // not after a run of `MIN_RUN` (even with nothing runnable on 0 at that instant).
        assert_eq!(
            place_spaced(&mut p, &mut clock, 200 * MS, [0, 200 * MS], false),
            1
        );
        // Both now about as busy: the children stay where the target is.
        assert_eq!(
            place_spaced(&mut p, &mut clock, 200 * MS, [50 * MS, 40 * MS], false),
            1
        );
        // Worker 0 was idle far longer: back.
        assert_eq!(
            place_spaced(&mut p, &mut clock, 200 * MS, [150 * MS, 0], true),
            0
        );
    }

    #[test]
    fn spaced_children_stay_home_when_every_worker_was_as_idle() {
        let mut p = Placement::new();
        let mut clock = (0, 0, [0; 2]);
        const MS: u64 = 1_000_000;
        for _ in 0..20 {
            // A spawner that sleeps between spawns on an otherwise quiet runtime: both
            // workers idle about the whole gap (worker 1 a little more).
            let at = place_spaced(&mut p, &mut clock, 10 * MS, [9 * MS, 10 * MS], false);
            assert_eq!(at, 0);
        }
    }

    #[test]
    fn children_closer_than_spaced_ns_are_left_to_the_run_rule() {
        let mut p = Placement::new();
        let mut clock = (0, 0, [0; 2]);
        // A busy spawner's worker, the other idle all the time, children 2 ms apart (a sieve
        // on a loaded host): under `SPACED_NS` between two looks, so the run rule decides
        // (home for `MIN_RUN`).
        const GAP: u64 = 2_000_000;
        let at: Vec<usize> = (0..MIN_RUN)
            .map(|_| place_spaced(&mut p, &mut clock, GAP, [0, GAP], true))
            .collect();
        assert!(at.iter().all(|&w| w == 0), "{at:?}");
    }
}
