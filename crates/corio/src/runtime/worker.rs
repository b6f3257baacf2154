//! A worker: an OS thread (M) with its processor (P), running the scheduling loop.
//!
//! The P is split by who may touch it. [`Remote`] (in `Shared::workers`) is what other threads
//! use: the steal end of the run queue, the inbox for this worker's pinned coroutines woken
//! elsewhere, the timer heap, the parking word and the counters sysmon watches. `Core` (inside
//! [`WorkerCtx`], on this thread's stack) is the owner's: the push/pop end of the run queue, the
//! next-task slot and the pinned queue. The loop itself is described in `runtime/mod.rs` ("How a
//! worker finds work").

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Shared;
use super::context;
use super::park::Unparker;
use super::sched::placement::{Placement, Progress};
use super::sched::queue::{self, Local, Steal};
use super::sched::ring::Ring;
use super::sched::slot::SpawnSlot;
use super::thread_clock::ThreadClock;
use crate::task::core::{Kind, RunResult, TaskRef};
use crate::task::raw::{Notified, Running};
use crate::task::stackful::StackfulCtx;
use crate::time::heap::TimerHeap;
use corio_context::coroutine::RawCoroutine;

/// Every this many rounds a worker takes a task from the global queue before its own (Go's
/// `schedtick%61 == 0` in `findRunnable`: a prime, so it does not beat with other periods).
const GLOBAL_POLL_INTERVAL: u32 = 61;

/// `Core::lifo_polls` once sysmon ended the time slice: the task in the next-task slot goes to
/// the back of its queue instead of running (at once; a sleeper the next round's timers wake
/// into the slot still runs next). A task run from the slot inherits the time slice
/// of the task that woke it (Go's `inheritTime`), so a ping-pong pair keeps its worker for one
/// slice and then yields it, however little or much each of its turns does. (A cap of 3 runs
/// in a row, tokio's, bounds turns, not time: a pair whose turns are short got ~1/1000 of the
/// worker beside a pair whose turns are long, Go's `TestPingPongHog`.)
const SLICE_OVER: u32 = u32::MAX;

/// At most this many rounds apart a worker reads the clock to fire its due timers: in the
/// rounds that leave the global queue's countdown at a multiple of it (a clock read costs
/// 20–85 ns on the VMs corio is measured on; sysmon fires timers a busy worker is late on).
/// Counted on the countdown, which every round updates anyway, not on a round number of its
/// own (one load, increment and store less per round and per direct switch).
const TIMER_CHECK_INTERVAL: u32 = 16;

/// How long a worker keeps running the coroutines it cancels at shutdown (their destructors
/// may block or yield while they unwind) before it leaks those that still block.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Most tasks taken from the global queue at once (Go's `globrunqget` takes up to half the
/// local queue, 128).
const GLOBAL_BATCH: usize = 128;

/// How long a worker out of work keeps watching for some before it parks (Go's spinning M;
/// `spin`). A futex sleep and wake-up cost the sleeper and its waker 5–50 µs
/// between them on the VMs corio is measured on; 2-worker channel programs ran out of local
/// work for a few microseconds at a time and parked thousands of times per run.
const SPIN_BEFORE_PARK: Duration = Duration::from_micros(50);

/// A spin whose `sched_yield` kept the thread off its CPU for this long lost a time slice to
/// another thread of the machine: the CPUs are oversubscribed (`spin`, "When the
/// CPUs are oversubscribed"). Far above a spin and a worker's turn, below a scheduler tick.
const SPIN_LOST_SLICE: Duration = Duration::from_millis(1);

/// The most out-of-work episodes a worker parks in without spinning after its spins kept
/// losing slices (the back-off doubles per lost slice, from 1).
const SPIN_SKIP_MAX: u32 = 1024;

/// Looks at the queues between two clock reads while spinning (a clock read costs 20–85 ns
/// here, a look a few loads).
const SPIN_LOOKS_PER_CLOCK_READ: u32 = 32;

/// How long the only worker's spin waits before its first poll, times the square of the
/// sockets active in the last [`ACTIVE_WINDOW`] (`spin`, "The first poll waits"): 8 ns for
/// one, 2 µs for 16, [`FIRST_POLL_WAIT_MAX`] from 50.
const FIRST_POLL_WAIT_UNIT: Duration = Duration::from_nanos(8);

/// The only worker's first poll waits only after a window in which it spent at least this
/// share of its time spinning (the waits included): a worker with less slack would leave
/// ready requests waiting (`spin`, "The first poll waits").
const FIRST_POLL_WAIT_SLACK: f64 = 0.125;

/// The longest wait before the first poll, whatever the number of active sockets.
const FIRST_POLL_WAIT_MAX: Duration = Duration::from_micros(20);

/// How long a window of the count of active sockets lasts (at least: it ends at the first
/// spin after this).
const ACTIVE_WINDOW: Duration = Duration::from_millis(1);

/// Which spin a worker out of work makes before it parks (`WorkerCtx::spin`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum SpinKind {
    /// A worker of a runtime with more than one: watches for work other threads make.
    Worker,
    /// The only worker of a `workers(1)` runtime, while its sockets are busy.
    OnlyWorker,
}

/// What a worker is doing, for sysmon.
pub(crate) const STATUS_IDLE: u8 = 0;
pub(crate) const STATUS_RUNNING: u8 = 1;
pub(crate) const STATUS_BLOCKING: u8 = 2;

/// The parts of a worker other threads may touch.
pub(crate) struct Remote {
    pub(crate) steal: Steal<Notified>,
    /// The task this worker spawned last: run next here, stolen only after a grace period
    /// (`sched/slot.rs`).
    pub(crate) spawned: SpawnSlot,
    /// The owner's end of the run queue, until the worker thread takes it.
    local: Mutex<Option<Local<Notified>>>,
    /// Pinned coroutines of this worker woken on other threads (and, at shutdown, started
    /// ones whose cancellation another thread won: `push_inbox_running`), and the coroutines
    /// placed here to start (`push_placed`).
    inbox: Mutex<Inbox>,
    inbox_len: AtomicUsize,
    /// Live coroutines spawned with `TaskBuilder::spread` and homed here (`spawn.rs`,
    /// `spread_home`): incremented by their spawner, decremented when the task completes
    /// (`Shared::spread_done`, from `harness::finish`, before COMPLETE is published).
    pub(crate) spread_live: AtomicUsize,
    /// Set when a started coroutine pinned here was leaked (it kept blocking while it unwound
    /// at shutdown): its frames never end, so what they borrowed from this worker thread's
    /// thread-locals stays borrowed, and the thread must never exit (see [`Exit`]).
    pub(crate) leaked_coroutine: AtomicBool,
    /// How this worker's thread ended its `run`: [`EXIT_RUNNING`], [`EXIT_LEFT`] (the thread
    /// returns) or [`EXIT_STAYS`] (parked for good); read by the runtime's drop, which joins
    /// only the threads that return (`Handle::shutdown_and_join_within`).
    pub(crate) exit: AtomicU8,
    pub(crate) unparker: Unparker,
    /// Timers of tasks that slept on this worker.
    pub(crate) timers: Mutex<TimerHeap>,
    /// The heap's nearest deadline (`u64::MAX` if empty), readable without the lock.
    pub(crate) next_timer: AtomicU64,
    /// Tasks run so far (written by the owner only): the `polls` metric.
    pub(crate) ticks: AtomicU64,
    /// Of `ticks`, the tasks run from the next-task slot, which inherit the time slice
    /// (written by the owner only; see [`Remote::slices`]).
    inherited: AtomicU64,
    pub(crate) status: AtomicU8,
    /// Set by sysmon when a task ran for a whole time slice: the slice it is for, as
    /// [`Remote::slice_tag`] (0: no request). Honoured by the next runtime operation of that
    /// slice only (see `context::budget_proceed`), cleared after each task. A request that
    /// lands after its slice ended (sysmon lost its CPU between reading the slice and asking)
    /// names a slice that is over, and the next task ignores it.
    pub(crate) preempt: AtomicU64,
    /// The running task, for sysmon's report.
    pub(crate) current_id: AtomicU64,
    /// A spare worker: started by sysmon, not counted in `Idle`.
    pub(crate) spare: bool,
    pub(crate) started: AtomicBool,
    /// For spares: whether sysmon wants it to look for work.
    pub(crate) active: AtomicBool,
    /// The worker's thread and its CPU clock, for sysmon (`thread_clock.rs`).
    pub(crate) clock: ThreadClock,
    /// The time slice (`slices()`) in which a task of this worker last panicked, set by
    /// corio's panic hook (`sysmon::note_panic`): sysmon does not report that slice, as the
    /// time it takes to print a panic (a backtrace can take longer than a report's threshold)
    /// is not a hog's. Costs the task path nothing: a new slice simply differs.
    pub(crate) panicked_in: AtomicU64,
    /// Signal preemption: this worker's thread and counters (`preempt.rs`).
    pub(crate) preempt_signal: super::preempt::WorkerSlot,
    /// Direct switches between coroutines (`direct_yield`; written by the owner only).
    pub(crate) direct_switches: AtomicU64,
    /// Direct hand-offs from a coroutine blocking in `block_on` to the one in the next-task
    /// slot (`direct_block`; written by the owner only).
    pub(crate) direct_handoffs: AtomicU64,
    /// Direct hand-offs from a coroutine blocking in `block_on` to the one at the front of
    /// the pinned queue (`direct_block`, a queue pick; written by the owner only).
    pub(crate) direct_queue_handoffs: AtomicU64,
    /// Tasks spawned on this worker (written by the owner only: a runtime-wide counter was a
    /// cache line that every worker's spawns wrote, `Counters::spawned`).
    pub(crate) spawns: AtomicU64,
    /// Spins that lost a time slice (`spin`; written by the owner only).
    pub(crate) spin_slices_lost: AtomicU64,
    /// Out-of-work episodes that skipped the spin after lost slices (written by the owner
    /// only).
    pub(crate) spins_skipped: AtomicU64,
    /// Netpoller polls made while spinning before a park (`spin`; written by the owner only).
    pub(crate) io_spin_polls: AtomicU64,
    /// Spins of the only worker whose first poll waited, and the nanoseconds they waited
    /// (`spin`, "The first poll waits"; written by the owner only).
    pub(crate) first_poll_waits: AtomicU64,
    pub(crate) first_poll_wait_ns: AtomicU64,
    /// Tasks other threads queued here (`push_inbox`): the cross-thread wake-ups and
    /// placements this worker received (the `worker_inbox_pushes` metric).
    pub(crate) inbox_pushes: AtomicU64,
    /// Set while the worker's loop has run out of local work (it polls IO, searches, spins
    /// or sleeps); cleared when it has a task again. Read by spawners choosing where a new
    /// task starts (`sched/placement.rs`); a hint, never a correctness condition.
    pub(crate) out_of_work: AtomicBool,
    /// The runtime clock when `out_of_work` was last set (written by the owner only).
    idle_since: AtomicU64,
    /// Time out of work (ns) in the episodes that ended (written by the owner only).
    idle_ns: AtomicU64,
}

impl Remote {
    /// Time slices started so far: tasks run, less those run from the next-task slot, which
    /// inherit the slice. sysmon compares it between its ticks to see whether one task, or one
    /// next-task chain, has been running all along (Go's `schedtick`, which `inheritTime`
    /// leaves alone). Kept as a difference so that the yield path, which never uses the slot,
    /// pays nothing for it. The two counters are read apart, so a read between the owner's
    /// two increments can see one slice fewer: at worst sysmon ends a slice one of its ticks
    /// early or late, never anything worse.
    pub(crate) fn slices(&self) -> u64 {
        let inherited = self.inherited.load(Ordering::Relaxed);
        self.ticks.load(Ordering::Relaxed).wrapping_sub(inherited)
    }

    /// How a preempt request names slice `slices` (never 0, which means no request).
    #[inline]
    pub(crate) fn slice_tag(slices: u64) -> u64 {
        slices.wrapping_add(1).max(1)
    }

    /// Whether sysmon's request (`preempt`) is for the slice running now; on the owner's
    /// thread, which reads its own counters only when a request is there. Relaxed: a hint,
    /// as in `budget_proceed`; sysmon's store needs no ordering.
    #[inline]
    pub(crate) fn preempt_for_this_slice(&self) -> bool {
        let request = self.preempt.load(Ordering::Relaxed);
        request != 0 && self.names_this_slice(request)
    }

    /// Whether `request`, a non-zero preempt request, is for the slice running now.
    #[inline]
    fn names_this_slice(&self, request: u64) -> bool {
        request == Self::slice_tag(self.slices())
    }

    pub(crate) fn new(spare: bool) -> Remote {
        let (local, steal) = queue::local();
        Remote {
            steal,
            spawned: SpawnSlot::new(),
            local: Mutex::new(Some(local)),
            inbox: Mutex::new(Inbox {
                entries: Vec::new(),
                placed: VecDeque::new(),
                drained: false,
            }),
            inbox_len: AtomicUsize::new(0),
            spread_live: AtomicUsize::new(0),
            leaked_coroutine: AtomicBool::new(false),
            exit: AtomicU8::new(EXIT_RUNNING),
            unparker: Unparker::new(),
            timers: Mutex::new(TimerHeap::new()),
            next_timer: AtomicU64::new(u64::MAX),
            ticks: AtomicU64::new(0),
            inherited: AtomicU64::new(0),
            status: AtomicU8::new(STATUS_IDLE),
            preempt: AtomicU64::new(0),
            current_id: AtomicU64::new(0),
            spare,
            started: AtomicBool::new(false),
            active: AtomicBool::new(false),
            clock: ThreadClock::new(),
            panicked_in: AtomicU64::new(u64::MAX),
            preempt_signal: Default::default(),
            direct_switches: AtomicU64::new(0),
            direct_handoffs: AtomicU64::new(0),
            direct_queue_handoffs: AtomicU64::new(0),
            spawns: AtomicU64::new(0),
            spin_slices_lost: AtomicU64::new(0),
            spins_skipped: AtomicU64::new(0),
            io_spin_polls: AtomicU64::new(0),
            first_poll_waits: AtomicU64::new(0),
            first_poll_wait_ns: AtomicU64::new(0),
            inbox_pushes: AtomicU64::new(0),
            out_of_work: AtomicBool::new(false),
            idle_since: AtomicU64::new(0),
            idle_ns: AtomicU64::new(0),
        }
    }

    pub(crate) fn push_inbox(&self, task: Notified) {
        self.push_inbox_entry(Pinned::Task(Runnable::Notified(task)), None);
    }

    /// Sends this worker a started coroutine of its own that another thread owns as RUNNING
    /// for its shutdown (`Shared::begin_shutdown`): only its home may cancel it.
    pub(crate) fn push_inbox_running(&self, task: Running) {
        self.push_inbox_entry(Pinned::Task(Runnable::Running(task)), None);
    }

    /// Sends this worker a new movable coroutine to start (`sched/placement.rs`). It waits in
    /// the inbox, not in the owner's queues, until the owner picks its turn (the
    /// `Pinned::Placed` entry queued with it), so that sysmon can still send it elsewhere if
    /// this worker gets stuck first (`release_placed`).
    pub(crate) fn push_placed(&self, task: Notified) {
        self.push_inbox_entry(Pinned::Placed, Some(task));
    }

    fn push_inbox_entry(&self, entry: Pinned, placed: Option<Notified>) {
        let mut inbox = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
        if inbox.drained {
            // The runtime has finished its shutdown: nobody takes entries any more. A wake
            // from another thread marks the task notified and then pushes it here; when the
            // mark came just before the shutdown took the task, the task has finished since
            // (every task has, by the last drain), and this push is the last of its
            // references. Kept here, it held the task, and through it the runtime, for ever.
            drop(inbox);
            drop(placed);
            discard(entry);
            return;
        }
        inbox.entries.push(InboxEntry(entry));
        inbox.placed.extend(placed);
        self.inbox_pushes.fetch_add(1, Ordering::Relaxed);
        // Release: pairs with the Acquire load in `next_task`.
        self.inbox_len.store(inbox.entries.len(), Ordering::Release);
    }

    fn take_inbox(&self, into: &mut VecDeque<Pinned>) {
        let mut inbox = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
        into.extend(inbox.entries.drain(..).map(|entry| entry.0));
        self.inbox_len.store(0, Ordering::Release);
    }

    /// The oldest coroutine placed here and still waiting (for the owner, at a
    /// `Pinned::Placed` entry).
    fn take_placed(&self) -> Option<Notified> {
        let mut inbox = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
        inbox.placed.pop_front()
    }

    /// Takes every coroutine placed here and not started yet, for another worker to start:
    /// called by sysmon when this worker has been stuck for a hand-off period, and by the
    /// owner as it enters `corio::blocking`. They are new tasks, bound to no thread. Their
    /// `Pinned::Placed` entries stay and find nothing. The inbox keeps its buffer: taking it
    /// (`mem::take`, empty or not) made the placements after every `corio::blocking` entry or
    /// sysmon release regrow it from nothing, a doubling at a time (seen by a helper tracing
    /// `rt_spawn_alloc`'s allocations under load); now nothing is allocated when nothing is
    /// placed, and one block for the caller's copy otherwise.
    pub(crate) fn release_placed(&self) -> VecDeque<Notified> {
        let mut inbox = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
        if inbox.placed.is_empty() {
            return VecDeque::new();
        }
        inbox.placed.drain(..).collect()
    }

    /// Time out of work (ns of the runtime clock) up to `now`, the current episode included.
    /// Racy by design (three owner-written fields read apart): a placement hint.
    pub(crate) fn idle_until(&self, now: u64) -> u64 {
        let ended = self.idle_ns.load(Ordering::Relaxed);
        if self.out_of_work.load(Ordering::Relaxed) {
            ended + now.saturating_sub(self.idle_since.load(Ordering::Relaxed))
        } else {
            ended
        }
    }

    /// Work queued on this worker that another could run (for parking decisions).
    pub(crate) fn has_stealable_work(&self) -> bool {
        !self.steal.is_empty() || !self.spawned.is_empty()
    }

    /// Drops whatever is still queued here (shutdown); pending timers go to the fallback timer
    /// thread (`epoch` is the runtime clock's origin).
    pub(crate) fn drain(&self, epoch: std::time::Instant) {
        let mut inbox = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
        let entries = std::mem::take(&mut inbox.entries);
        let placed = std::mem::take(&mut inbox.placed);
        // Later pushes are discarded at once (`push_inbox_entry`).
        inbox.drained = true;
        self.inbox_len.store(0, Ordering::Relaxed);
        drop(inbox);
        drop(placed);
        for entry in entries {
            discard(entry.0);
        }
        drop(self.spawned.take());
        if let Some(mut local) = self.local.lock().unwrap_or_else(|e| e.into_inner()).take() {
            while let Some(task) = local.pop() {
                drop(task);
            }
        }
        // Sleepers outside the runtime (a thread in `Runtime::enter`) still wake at their
        // deadline: the fallback timer thread takes their timers over. Under this heap's lock,
        // so that an owner's cancel (`Sleep::cancel`, which takes it first) finds its timer in
        // one heap or the other, never in between.
        let mut timers = self.timers.lock().unwrap_or_else(|e| e.into_inner());
        for entry in timers.drain() {
            crate::time::adopt(epoch, entry);
        }
        self.next_timer.store(u64::MAX, Ordering::SeqCst);
    }
}

/// An inbox entry nobody will run (the runtime has finished its shutdown).
fn discard(entry: Pinned) {
    match entry {
        Pinned::Task(Runnable::Notified(task)) => drop(task),
        // Its home has exited (after its grace period) and this may be any thread: it cannot
        // be cancelled here, only leaked.
        Pinned::Task(Runnable::Running(task)) => task.leak(),
        Pinned::Placed => {}
    }
}

/// A worker's inbox: what other threads send it.
struct Inbox {
    entries: Vec<InboxEntry>,
    /// Coroutines placed on this worker, not started yet, oldest first. Each has a
    /// `Pinned::Placed` entry, in `entries` or in the owner's pinned queue, at whose turn the
    /// owner takes the oldest one still here; there are never fewer entries than coroutines
    /// (a pick takes at most one, a release takes coroutines only), so none is left behind.
    placed: VecDeque<Notified>,
    /// Set by the shutdown's last drain (`Remote::drain`).
    drained: bool,
}

/// A task in a worker's inbox, on its way to the worker.
struct InboxEntry(Pinned);

// SAFETY: a `Notified` is Send; a `Running` is put in an inbox only by
// `push_inbox_running`, on its home worker's inbox, and leaves it only to be run by that
// worker (`take_inbox`) or leaked without running (`drain`).
unsafe impl Send for InboxEntry {}

/// An entry of a worker's pinned queue.
enum Pinned {
    Task(Runnable),
    /// The turn of a coroutine placed on this worker: the oldest still in the inbox
    /// (`Inbox::placed`) runs, if sysmon has not sent them all elsewhere.
    Placed,
}

/// A task a worker may run next.
pub(crate) enum Runnable {
    /// Woken through the state word (consumes a `Notified` reference).
    Notified(Notified),
    /// A pinned coroutine that yielded and is still RUNNING (see `raw::Running`).
    Running(Running),
}

impl Runnable {
    #[inline]
    fn header_ptr(&self) -> std::ptr::NonNull<crate::task::core::Header> {
        match self {
            Runnable::Notified(t) => t.ptr(),
            Runnable::Running(t) => t.ptr(),
        }
    }

    #[inline]
    fn run(self) -> RunResult {
        match self {
            Runnable::Notified(t) => t.run(),
            Runnable::Running(t) => t.run(),
        }
    }
}

/// A pinned coroutine in the yielded queue, with its context: the direct switch to it
/// (`direct_yield`) reads the context here instead of through its task's vtable.
struct Yielded {
    task: Running,
    /// The coroutine's context (in its `Live` block, alive while the started coroutine is), or null.
    ctx: *const StackfulCtx,
}

impl Yielded {
    /// `task`, with its context looked up through the vtable.
    fn new(task: Running) -> Yielded {
        let ptr = task.ptr();
        // SAFETY: a `Running` is owned as RUNNING by this thread's worker; the context lives
        // in its `Live` block.
        let ctx = unsafe { (task.header().vtable.stackful_ctx)(ptr) };
        Yielded { task, ctx }
    }
}

/// The owner-only half of a P.
struct Core {
    run_queue: Local<Notified>,
    /// The next-task slot (LIFO): the task woken last runs next, owner only, never stolen.
    next: Option<Notified>,
    /// Runs from the next-task slot since a task was taken from a queue (0: the running task
    /// started a time slice), or `SLICE_OVER`.
    lifo_polls: u32,
    /// Which queue the next pick from the local queues tries first: the one the last such pick
    /// did not take from (set by each pick from the pinned or the run queue, by nothing
    /// else), so that while both hold tasks they take strict turns, whatever the rounds in
    /// between do. (It used to be flipped at each pick, and by the spawn slot's and the
    /// yielded queue's picks too: a task that spawned a child on every turn made every queue
    /// pick find it where the last one had left it, and the other queue never ran;
    /// `tests/rt_starvation_review.rs`.)
    pinned_first: bool,
    /// Started coroutines pinned here, woken, and the turns of coroutines placed here.
    pinned: VecDeque<Pinned>,
    /// Whether the spawn slot may hold a task (set when this worker fills it; a thief may
    /// have emptied it since). Spares the loop an atomic load of the slot on every round.
    spawn_slot_used: bool,
    /// Pinned coroutines that yielded, still RUNNING (see `raw::Running`): they run after
    /// everything else runnable here and a batch of the global queue (step 4), as Go's
    /// `Gosched` puts a goroutine behind the global queue, except at every other 61st round
    /// (step 1, taking turns with the global queue), so neither a busy run queue nor a busy
    /// global queue can starve them.
    yielded: Ring<Yielded>,
    /// Set by a round that picked from the yielded queue with everything `next_task` looks at
    /// before it empty (`only_yielded_left`) and another coroutine left in `yielded`; cleared
    /// by every producer of local work and at the start of every round. While set, the direct
    /// yield's next round is a plain pick of `yielded`'s front as far as the core's own
    /// queues, slots and slice go (docs/scheduler.md, "The yield toward 150, fourth pass"):
    /// one load instead of six tests. (Only the loop and shutdown take from `yielded`, and
    /// shutdown clears the flag first; a direct yield rotates it, keeping its length.)
    only_yielded: bool,
    /// Set when a preempted coroutine's movable work went to an idle worker
    /// (`WorkerCtx::pass_movable_work_on`): the next round runs that coroutine, the yielded
    /// queue's back.
    resume_yielded: bool,
    /// The task id of the last preempted coroutine given one more slice with no worker idle,
    /// its spawned child sent to the global queue (`WorkerCtx::pass_movable_work_on`); 0 when
    /// none. Preempted again with this set, it waits its turn as usual.
    extra_slice: u64,
    /// Rounds until the global queue is looked at first.
    global_countdown: u32,
    /// Whether the yielded queue, not the global queue, goes first at the last such look
    /// (flipped at each).
    yielded_turn: bool,
    /// The runtime clock at the last timer check.
    now: u64,
    rng: u64,
    /// Where the last spawner here starts its stackful children (`sched/placement.rs`).
    placement: Placement,
}

impl Core {
    /// The front of the pinned queue, a placed coroutine's turn resolved to the oldest one
    /// still waiting in the inbox (skipped if there is none: sysmon released them). Inline:
    /// it is the loop's pick (out of line it cost ~10 instructions per pick).
    #[inline(always)]
    fn pop_pinned(&mut self, remote: &Remote) -> Option<Runnable> {
        match self.pinned.pop_front()? {
            Pinned::Task(task) => Some(task),
            Pinned::Placed => self.pop_placed(remote),
        }
    }

    /// `pop_pinned` at a placed coroutine's turn.
    #[cold]
    #[inline(never)]
    fn pop_placed(&mut self, remote: &Remote) -> Option<Runnable> {
        // A loop, not a recursion through `pop_pinned`: a target stuck for a while can have
        // thousands of markers whose coroutines sysmon released, one frame each otherwise.
        loop {
            if let Some(task) = remote.take_placed() {
                return Some(Runnable::Notified(task));
            }
            match self.pinned.pop_front()? {
                Pinned::Task(task) => return Some(task),
                Pinned::Placed => {}
            }
        }
    }

    /// Whether `next_task` would find nothing before the yielded queue: the next-task slot,
    /// the pinned and run queues empty, the spawn slot unused, and a slice started by a
    /// pick from a queue (`lifo_polls` 0: not over, and nothing to reset). What
    /// `only_yielded` stands for.
    fn only_yielded_left(&self) -> bool {
        self.next.is_none()
            && self.pinned.is_empty()
            && self.run_queue.is_empty()
            && !self.spawn_slot_used
            && self.lifo_polls == 0
    }

    /// Whether step 1's periodic part (`maintenance`) is due in the round that leaves the
    /// global queue's countdown at `countdown`: the one condition `next_task` runs maintenance
    /// on and `direct_yield`/`direct_block` fall back to the loop on. The timer check of a
    /// round whose countdown is a multiple of `TIMER_CHECK_INTERVAL` is due only when this
    /// worker has a timer: without one, `maintenance` would do nothing in it.
    #[inline(always)]
    fn maintenance_due(&self, remote: &Remote, countdown: u32) -> bool {
        let next_timer = remote.next_timer.load(Ordering::Relaxed);
        // Both timer conditions in one comparison: a timer is due by the last clock reading
        // (`next_timer <= now`), or, in a timer-check round, there is one at all (`next_timer
        // != u64::MAX`, that is `<= u64::MAX - 1`; the clock never reaches that value).
        let timer_limit = if countdown.is_multiple_of(TIMER_CHECK_INTERVAL) {
            u64::MAX - 1
        } else {
            self.now
        };
        countdown == 0 || remote.inbox_len.load(Ordering::Relaxed) != 0 || next_timer <= timer_limit
    }
}

/// A worker thread's context, on its stack for the life of the loop.
pub(crate) struct WorkerCtx {
    index: usize,
    shared: Arc<Shared>,
    /// The runtime reference that tasks spawned here take (`Anchor`): a counter this worker's
    /// spawns write, not the runtime's own.
    anchor: Arc<super::Anchor>,
    /// `&shared.workers[index]`, computed once: the run path reads it several times per task,
    /// and each indexing is a load, a bounds check and an address computation.
    remote: *const Remote,
    core: RefCell<Core>,
    /// Set while this worker fires timers: the tasks they wake go to the back of the run
    /// queue, where others can steal them, not to the next-task slot — a slot the worker may
    /// not come back to for a long time if the task it runs next hogs it.
    firing: std::cell::Cell<bool>,
    /// Set while step 1 fires this worker's own due timers between two tasks: the first task
    /// they wake takes the next-task slot if it is empty (`schedule_local`).
    own_timer_wake: std::cell::Cell<bool>,
    /// Whether this worker counts as searching in `Idle`.
    searching: std::cell::Cell<bool>,
    /// Set when the running task, a movable one whose slice sysmon ended, went to the global
    /// queue (`schedule_local`); read and cleared by `run_task` at the slice's end, which then
    /// does not let the global queue go first (that would be the same task again).
    preempted_to_global: std::cell::Cell<bool>,
    /// Out-of-work episodes in which `spin` parks at once, and the back-off it
    /// starts from after its next lost slice ("When the CPUs are oversubscribed").
    spin_skip: std::cell::Cell<u32>,
    spin_backoff: std::cell::Cell<u32>,
    /// The driver's count of socket events when this worker's last `spin` as the only
    /// worker ([`SpinKind::OnlyWorker`]) ended with nothing found: it watches its sockets
    /// again only once more have been ready since. Unused by other workers.
    io_spin_mark: std::cell::Cell<u64>,
    /// When the current window of the driver's count of active sockets began
    /// ([`Registry::end_window`]), and how long the only worker's first poll waits after the
    /// last one that ended ("The first poll waits").
    ///
    /// [`Registry::end_window`]: crate::io::registry::Registry::end_window
    active_window: std::cell::Cell<(Option<std::time::Instant>, Duration)>,
    /// Time the only worker spent in `spin` in the current window.
    spun: std::cell::Cell<Duration>,
    /// The task the last direct switch (`direct_yield`) started, if one happened during the
    /// task `run_task` runs: the one whose poll ended in its frame.
    switched: std::cell::Cell<Option<std::ptr::NonNull<crate::task::core::Header>>>,
    /// The context of the coroutine whose poll frame `run_task` is in, as that frame derived
    /// it (the pointer the coroutine itself was given), with its task: recorded by the first
    /// direct switch of a frame (`note_frame`), read by `direct_block` when the frame's own
    /// coroutine is the one to switch to. Deriving it again from the task's header would make
    /// a new reference into a stage the waiting frame still borrows mutably.
    frame_ctx: std::cell::Cell<(*const crate::task::core::Header, *const StackfulCtx)>,
}

/// The worker thread's entry point.
pub(crate) fn run(shared: Arc<Shared>, index: usize) {
    let run_queue = shared.workers[index]
        .local
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    // Counts this worker out however it leaves: at the end, early, or by a panic.
    let exit = Exit {
        shared: shared.clone(),
        index,
    };
    let Some(run_queue) = run_queue else { return };
    let remote = ptr::from_ref(&shared.workers[index]);
    let ctx = WorkerCtx {
        index,
        remote,
        firing: std::cell::Cell::new(false),
        own_timer_wake: std::cell::Cell::new(false),
        searching: std::cell::Cell::new(false),
        preempted_to_global: std::cell::Cell::new(false),
        spin_skip: std::cell::Cell::new(0),
        spin_backoff: std::cell::Cell::new(0),
        io_spin_mark: std::cell::Cell::new(0),
        active_window: std::cell::Cell::new((None, Duration::ZERO)),
        spun: std::cell::Cell::new(Duration::ZERO),
        switched: std::cell::Cell::new(None),
        frame_ctx: std::cell::Cell::new((ptr::null(), ptr::null())),
        core: RefCell::new(Core {
            run_queue,
            next: None,
            lifo_polls: 0,
            pinned_first: false,
            pinned: VecDeque::new(),
            spawn_slot_used: false,
            yielded: Ring::new(),
            only_yielded: false,
            resume_yielded: false,
            extra_slice: 0,
            global_countdown: GLOBAL_POLL_INTERVAL,
            yielded_turn: false,
            now: 0,
            rng: 0x9e37_79b9_7f4a_7c15 ^ (index as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9),
            placement: Placement::new(),
        }),
        anchor: super::Anchor::new(shared.clone()),
        shared,
    };
    {
        let _worker = context::enter_worker(&ctx);
        ctx.remote().clock.set_current();
        let _preempt = super::preempt::register_worker(&ctx.remote().preempt_signal);
        ctx.remote().status.store(STATUS_RUNNING, Ordering::Release);
        // sysmon may have gone to sleep seeing every worker idle before this one started.
        ctx.shared.sysmon.wake_if_sleeping();
        ctx.run_loop();
        ctx.shut_down();
        ctx.remote().clock.clear();
        ctx.remote().status.store(STATUS_IDLE, Ordering::Release);
    }
    drop(ctx);
    exit.finish();
}

/// Worker exit states (`Remote::exit`).
pub(crate) const EXIT_RUNNING: u8 = 0;
/// The worker left its loop and its thread returns.
pub(crate) const EXIT_LEFT: u8 = 1;
/// The worker left its loop and its thread stays, parked for good.
pub(crate) const EXIT_STAYS: u8 = 2;

/// Counts a worker out of `Shared::running` when its thread's `run` returns or
/// unwinds (after the worker's own context is gone), and tells the runtime's drop.
struct Exit {
    shared: Arc<Shared>,
    index: usize,
}

impl Exit {
    /// Leaves at the end of `run`; if a coroutine pinned to this worker was leaked (by its
    /// shutdown, or by the shutdown's end, which `leave` may run), keeps the thread for good.
    ///
    /// A leaked coroutine's frames never end, and `LocalKey::with` lends a thread-local for as
    /// long as its closure runs: a frame suspended inside `with` (or a thread it started in a
    /// `std::thread::scope` there) holds the borrow for ever. Were the thread to exit, it would
    /// destroy its thread-locals under that borrow, a use after free reachable from safe code
    /// (`tests/rt_shutdown.rs`, `a_worker_that_leaked_a_coroutine_at_shutdown_keeps_*`). So
    /// the thread parks instead, as the leaked stack stays mapped; both are the price of a
    /// coroutine that would not unwind.
    fn finish(self) {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; the `Arc` is moved out once.
        let shared = unsafe { std::ptr::read(&this.shared) };
        shared.leave();
        // The caller's thread (`Builder::run_here`) is not the runtime's to keep: it returns
        // (docs/soundness.md, "Leaked coroutines and thread-locals").
        let callers = shared.config.caller_worker && this.index == 0;
        if callers
            || !shared.workers[this.index]
                .leaked_coroutine
                .load(Ordering::Acquire)
        {
            shared.worker_exited(this.index, EXIT_LEFT);
            return;
        }
        shared.worker_exited(this.index, EXIT_STAYS);
        // Whatever this thread still owns of the runtime stays with it (the runtime's memory
        // is freed by the last owner otherwise).
        drop(shared);
        eprintln!(
            "corio: a worker thread stays parked for good: a coroutine it ran was leaked at \
             shutdown, and its frames may borrow the thread's thread-locals"
        );
        loop {
            std::thread::park();
        }
    }
}

impl Drop for Exit {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.leave_after_panic();
        } else {
            self.shared.leave();
        }
        self.shared.worker_exited(self.index, EXIT_LEFT);
    }
}

impl WorkerCtx {
    #[inline]
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    #[inline]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The anchor tasks spawned on this worker refer to their runtime through.
    pub(crate) fn anchor(&self) -> &Arc<super::Anchor> {
        &self.anchor
    }

    /// Counts a task spawned on this worker (`Remote::spawns`).
    pub(crate) fn count_spawn(&self) {
        let spawns = &self.remote().spawns;
        spawns.store(spawns.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    #[inline]
    fn remote(&self) -> &Remote {
        // SAFETY: `remote` points into `self.shared.workers`, which the `Arc` in `self` keeps
        // alive and never resizes (set once in `run`).
        unsafe { &*self.remote }
    }

    /// Runs `f` (which fires timers) with timer wake-ups sent to the run queue.
    fn firing_timers<R>(&self, f: impl FnOnce() -> R) -> R {
        let was = self.firing.replace(true);
        let r = f();
        self.firing.set(was);
        r
    }

    /// Whether sysmon asked the running task to yield.
    #[inline]
    pub(crate) fn preempt_requested(&self) -> bool {
        self.remote().preempt_for_this_slice()
    }

    fn run_loop(&self) {
        while !self.shared.is_shutdown() {
            if let Some(task) = self.next_task() {
                self.set_out_of_work(false);
                self.run_task(task);
                continue;
            }
            self.set_out_of_work(true);
            // Out of local work: sockets that became ready first, then stealing (Go's
            // `findRunnable` order). The tasks they wake go to the run queue, as timers' do.
            // A worker about to park in the driver defers the poll to there ("The deferred
            // poll", below).
            let deferred = self.parks_in_driver_next();
            if !deferred && self.poll_io() > 0 {
                continue;
            }
            if let Some(task) = self.search() {
                if deferred {
                    self.poll_io();
                }
                self.run_task(task);
                continue;
            }
            if self.spin(deferred) {
                continue;
            }
            if !self.park() && deferred {
                self.poll_io();
            }
        }
    }

    /// Takes the sockets that are ready now (without blocking); how many were.
    fn poll_io(&self) -> usize {
        self.firing_timers(|| self.shared.driver.poll_io())
    }

    /// Whether this worker, out of local work, will park without spinning and probably take
    /// the driver when it does: then it defers its non-blocking poll of the netpoller.
    ///
    /// # The deferred poll
    ///
    /// A worker out of local work polls the netpoller without blocking before it steals
    /// (step 5 of "How a worker finds work", `runtime/mod.rs`). If it then finds nothing and
    /// parks, and the driver is free, it takes the driver and polls again, blocking — two
    /// `epoll_wait`s per park, the first of which found nothing (a single-worker server parked
    /// at every lull: 0.08–0.12 `epoll_wait` per keep-alive request against may_minihttp's
    /// 0.04, `docs/net-bench.md`, "Fifth pass"). An `epoll_wait` that blocks returns at once
    /// with the events that are ready, so the blocking poll alone sees what the non-blocking
    /// one would have.
    ///
    /// So a worker that does not spin for other threads' work (`spins`: the only worker, or
    /// a spare) and finds the driver free skips the non-blocking poll, and makes it up
    /// wherever it turns out not to block in the driver after all:
    /// 1. the search found a task: poll before running it (as before: a worker fed from
    ///    outside never parks, and must not leave sockets to sysmon's 10 ms poll);
    /// 2. `park` did not wait in the driver (it found work before it slept, was notified, or
    ///    another thread took the driver meanwhile and this worker slept on its futex): poll
    ///    after it;
    /// 3. the only worker watches its busy sockets before it parks (`spin`,
    ///    [`SpinKind::OnlyWorker`]): its spin polls first.
    ///
    /// A worker that spins for other threads' work polls in its spin, at each clock read,
    /// and keeps the poll in the loop.
    /// The driver being free is only a hint (another thread may take it before this one
    /// parks); either way, case 2 covers it.
    fn parks_in_driver_next(&self) -> bool {
        !self.spins() && !self.shared.driver.is_held()
    }

    /// Whether this worker spins for other threads' work before it parks (`spin`,
    /// [`SpinKind::Worker`]): not the only worker of a `workers(1)` runtime, not a spare.
    fn spins(&self) -> bool {
        !self.remote().spare && self.shared.config.workers != 1
    }

    #[inline(always)] // into the loop, as before `switched` made it too large to inline
    fn run_task(&self, task: Runnable) {
        let remote = self.remote();
        if self.searching.get() {
            self.stop_searching();
        }
        // Owner-only counters: a plain store is enough (sysmon only reads).
        remote
            .ticks
            .store(remote.ticks.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        let ptr = task.header_ptr();
        // SAFETY: the task is alive: `task` holds a reference until it runs.
        let id = unsafe { ptr.as_ref() }.id;
        remote.current_id.store(id, Ordering::Relaxed);
        let result = task.run();
        // A direct switch passed the turn on: the result is the last started task's.
        let ptr = self.switched.take().unwrap_or(ptr);
        if result == RunResult::Yielded {
            // SAFETY: on `Yielded` the reference we handed over (or the direct switch handed
            // to this frame) became a Running's.
            let running = unsafe { Running::from_raw(ptr) };
            self.core
                .borrow_mut()
                .yielded
                .push_back(Yielded::new(running));
        }
        let request = remote.preempt.load(Ordering::Relaxed);
        if request != 0 {
            remote.preempt.store(0, Ordering::Relaxed);
            if !remote.names_this_slice(request) {
                return; // a request for a slice that had ended
            }
            // A task that ran a whole time slice went back to a local queue (a started
            // coroutine cannot go anywhere else); let the global queue go first now, as Go
            // does by putting a preempted goroutine on the global queue. The slice is over for
            // the task in the next-task slot too.
            let mut core = self.core.borrow_mut();
            let to_global = self.preempted_to_global.replace(false);
            core.lifo_polls = SLICE_OVER;
            // Now, not at the next pick: by then the timers that round fires may have put a
            // sleeper in the slot, which then queued behind every task (140–250 turns late
            // behind 400 yielders, `rt_fairness_timers`).
            if let Some(task) = core.next.take() {
                self.push_back(&mut core, task);
            }
            if result == RunResult::Yielded && self.pass_movable_work_on(&mut core) {
                return;
            }
            // Only when the global queue has work: otherwise the check would hand the
            // yielded-queue's turn straight back to the task that was just preempted, ahead
            // of the run queue. And the global queue's turn, not the yielded queue's (a
            // preempted coroutine is there now); not at all when the task itself went to the
            // global queue (a movable one, `schedule_local`): it would run again at once.
            if !to_global && !self.shared.inject.is_empty() {
                core.global_countdown = 1;
                // Flipped at the look: the global queue goes first.
                core.yielded_turn = true;
            }
        }
    }

    /// A pinned coroutine whose slice sysmon ended has just yielded (it is at the back of the
    /// yielded queue). If movable work is queued ahead of it here — tasks not started yet, in
    /// the spawn slot and the run queue — and another worker is idle, that work goes to the
    /// global queue for the idle worker; and if no pinned work is queued here either (no
    /// coroutine woken or yielded before it), the coroutine runs again at once, in a new
    /// slice. Go's preempted goroutine goes to the global queue, where an idle P takes it,
    /// while its own P runs the work behind it; a started coroutine here cannot move, so the
    /// work moves instead. Run here first, a movable task that spins waiting for what the
    /// preempted coroutine does next (a child waiting for its sibling, which the coroutine was
    /// about to spawn) kept the worker for good, and the coroutine was stranded behind it
    /// while the other worker slept (`rt_preempt`,
    /// `a_preempted_coroutine_is_not_stranded_behind_movable_work_while_a_worker_is_idle`).
    ///
    /// With no worker idle, the same holds for the coroutine's own child, once: when the
    /// spawn slot's task is the only work queued here, it goes to the global queue and the
    /// coroutine runs one more slice, so that a coroutine preempted at a spawn is not stranded
    /// behind the child it spawned before (one that spins waiting for its next sibling,
    /// `a_coroutine_preempted_at_a_spawn_is_not_stranded_behind_its_child_while_no_worker_is_idle`);
    /// a worker that comes free takes the child meanwhile. Preempted again, the coroutine waits
    /// its turn, and the global queue goes first: the child waits a slice at most. Otherwise,
    /// with no worker idle, the slice's end goes on as usual (false): the coroutine waits its
    /// turn behind the work.
    #[cold]
    #[inline(never)]
    fn pass_movable_work_on(&self, core: &mut Core) -> bool {
        let movable = core.spawn_slot_used || !core.run_queue.is_empty();
        if !movable {
            return false;
        }
        if !self.shared.idle.has_idle_worker() {
            return self.give_one_more_slice(core);
        }
        // The spawn slot's task was spawned before those in the run queue.
        let spawned = if core.spawn_slot_used {
            self.take_spawned(core)
        } else {
            None
        };
        let queued = std::iter::from_fn(|| core.run_queue.pop());
        // Shutting down: the tasks are dropped, and the owned list cancels them.
        let _ = self
            .shared
            .inject
            .push_batch(spawned.into_iter().chain(queued));
        // Pinned work queued here has its turn first, as at any slice's end, and so do
        // coroutines that yielded before this one; else the next round runs the coroutine
        // (`next_task`). Either way not the global queue's turn, which would take the work back
        // before the idle worker comes for it.
        core.resume_yielded = core.pinned.is_empty() && core.yielded.len() == 1;
        core.global_countdown = core.global_countdown.max(2);
        self.shared.notify_work();
        true
    }

    /// `pass_movable_work_on` with no worker idle: the spawn slot's child to the global queue
    /// and one more slice for the coroutine, if the child is the only work queued here and the
    /// coroutine did not have its extra slice just before.
    fn give_one_more_slice(&self, core: &mut Core) -> bool {
        let id = self.remote().current_id.load(Ordering::Relaxed);
        let only_the_child = core.spawn_slot_used
            && core.run_queue.is_empty()
            && core.pinned.is_empty()
            && core.next.is_none()
            && core.yielded.len() == 1;
        if !only_the_child || std::mem::replace(&mut core.extra_slice, 0) == id {
            return false;
        }
        let child = self.take_spawned(core);
        // Shutting down: the task is dropped, and the owned list cancels it.
        let _ = self.shared.inject.push_batch(child);
        core.extra_slice = id;
        core.resume_yielded = true;
        core.global_countdown = core.global_countdown.max(2);
        // For a worker that went idle since the look.
        self.shared.notify_work();
        true
    }

    /// The checks both direct paths begin with: not shutting down; `run_task`'s end for the
    /// leaving coroutine (the slice bookkeeping of a preempt request is the loop's) and start
    /// for the next one (no searching to stop: never while a task runs); `next_task`'s round
    /// with no maintenance due. Returns the core, borrowed, or `None` to leave it to the loop.
    /// (The slice and the spawn slot are each path's own checks.)
    #[inline(always)]
    fn direct_round(&self) -> Option<std::cell::RefMut<'_, Core>> {
        let remote = self.remote();
        // Not searching: `run_task` stopped the search before it ran the task that called
        // this, and only the loop's `search` and `park`, never a task, start one.
        debug_assert!(!self.searching.get());
        if self.shared.is_shutdown() || remote.preempt.load(Ordering::Relaxed) != 0 {
            return None;
        }
        let core = self.core.try_borrow_mut().ok()?;
        // The countdown is at least 1 between rounds: the round that takes it to 0 runs
        // `maintenance`, which sets it again (and the direct paths never take it to 0).
        if core.maintenance_due(remote, core.global_countdown - 1) {
            return None;
        }
        Some(core)
    }

    /// A direct switch (docs/scheduler.md, "Yield path"): called by the pinned coroutine
    /// `from`, running on this worker, as it yields. If the loop, after queueing `from` as
    /// yielded, would run a yielded pinned coroutine next, without a maintenance round and
    /// with nothing unusual about either, this does the loop's bookkeeping for both — the end
    /// of `from`'s run (`run_task`), the round of `next_task`, the start of the next one's run
    /// and its poll's thread-local state — and returns the next one's switch state, for
    /// `from` to transfer to. `None`: nothing was changed, `from` yields to the loop.
    /// `preemptible` is `from.is_preemptible()`, as the caller knows it (a constant).
    #[inline(always)] // into the yield, whose switch saves the callee-saved registers anyway
    pub(crate) fn direct_yield(
        &self,
        from: &StackfulCtx,
        preemptible: bool,
    ) -> Option<*mut RawCoroutine> {
        self.note_frame(from);
        let remote = self.remote();
        let mut core = self.direct_round()?;
        // ... the slice not over, the spawn slot unused, the next-task slot and the queues
        // `next_task` looks at before the yielded queue empty and a coroutine in that queue
        // (what `only_yielded` says: set by the last round's yielded pick, cleared by any
        // local work since), the global queue empty (`next_task` takes from it before the
        // yielded queue: one relaxed load, a hint as there), and the front of the yielded
        // queue...
        if !core.only_yielded || !self.shared.inject.is_empty() {
            return None;
        }
        debug_assert!(core.only_yielded_left());
        // ... a started coroutine like `from` (both preemptible or neither: the poll frame's
        // guard clears what the last one set), not cancelled (the loop cancels it instead).
        // SAFETY: not empty, as `only_yielded` says.
        let to = unsafe { core.yielded.front_unchecked() };
        let to_ptr = to.task.ptr();
        if to.task.header().state.load().is_cancelled() {
            return None;
        }
        // SAFETY: a yielded task is this worker's, owned as RUNNING; the context lives in its
        // cell.
        let to_ctx = unsafe { to.ctx.as_ref() }?;
        if to_ctx.is_preemptible() != preemptible {
            return None;
        }
        // Commit: the same changes as the loop's, in its order. (`lifo_polls` is 0 already,
        // as `only_yielded` says: only a direct hand-off raises it without a round, and a
        // hand-off needs the next-task slot filled, which cleared `only_yielded`.)
        core.global_countdown -= 1;
        let from_running = Yielded {
            // SAFETY: `from` is RUNNING, owned by this worker, and the reference its poll
            // frame holds is now the yielded queue's: the frame will end the poll of the task
            // it returns to (`switched`), not `from`'s.
            task: unsafe { Running::from_raw(from.header_ptr()) },
            ctx: from,
        };
        // `from` to the back of the queue, `to` off its front, in one step.
        // SAFETY: the queue is not empty: `to` is its front.
        let to = unsafe { core.yielded.rotate(from_running) };
        drop(core);
        // `run_task`'s start for `to`: its poll reference is now the frame's.
        std::mem::forget(to);
        Some(self.start_switched(remote, to_ptr, to_ctx, preemptible, &remote.direct_switches))
    }

    /// Records `from` as the poll frame's coroutine if no direct switch has happened in this
    /// frame yet (`switched` is empty from `run_task`'s start to the first one): a chain of
    /// direct switches always starts from the frame's own coroutine, with the context pointer
    /// the frame gave it.
    #[inline(always)]
    fn note_frame(&self, from: &StackfulCtx) {
        if self.switched.get().is_none() {
            self.frame_ctx
                .set((from.header_ptr().as_ptr(), ptr::from_ref(from)));
        }
    }

    /// The end of both direct paths: `run_task`'s start for `to` (whose poll reference the
    /// frame now holds: `switched`), one more on the path's `counter`, and `to`'s poll
    /// thread-local state. Returns `to`'s switch state. `remote` is this worker's, as the
    /// caller read it (read again here, it was reloaded: the core's stores may alias it);
    /// `preemptible` is `to_ctx.is_preemptible()`, as the caller knows it.
    #[inline(always)]
    fn start_switched(
        &self,
        remote: &Remote,
        to_ptr: std::ptr::NonNull<crate::task::core::Header>,
        to_ctx: &StackfulCtx,
        preemptible: bool,
        counter: &AtomicU64,
    ) -> *mut RawCoroutine {
        // Owner-only counters: a plain store is enough (sysmon and metrics only read).
        remote
            .ticks
            .store(remote.ticks.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        // SAFETY: alive: the frame holds its poll reference.
        remote
            .current_id
            .store(unsafe { to_ptr.as_ref() }.id, Ordering::Relaxed);
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        self.switched.set(Some(to_ptr));
        // SAFETY: `to_ptr` is `to_ctx`'s task (the caller's `to`), its own pointer as the queue
        // held it, alive as above.
        to_ctx.enter_direct(unsafe { TaskRef::new(to_ptr) }, self.index, preemptible)
    }

    /// A direct hand-off (docs/scheduler.md, "The direct switch on a `block_on` suspension"):
    /// called by the pinned coroutine `from`, running on this worker, as it suspends in
    /// `block_on` (its future returned `Pending`). If the loop, after `from`'s poll went idle,
    /// would run the task in the next-task slot without a maintenance round, and that task is
    /// a started coroutine pinned here, this ends `from`'s poll as `after_pending` would
    /// (`transition_to_idle`), starts the other one's as `harness::poll` would
    /// (`transition_to_running`), does the loop's bookkeeping in between (`run_task`'s end and
    /// start, the slot pick of `next_task`: the slice is inherited) and returns the other
    /// one's switch state, for `from` to transfer to. `None`: nothing was changed, `from`
    /// suspends to the loop.
    ///
    /// With the slot empty, the same for the task at the front of the pinned queue when
    /// `next_task` would pick it (docs/scheduler.md, "The direct switch to a queued
    /// coroutine"): the bookkeeping is then that of a queue pick (a new slice, the alternation
    /// of step 3 moved on). A server's coroutines woken by one poll of the sockets queue there
    /// in turn, and each hands the worker to the next as it blocks again.
    ///
    /// Only the plain outcomes of the two transitions are taken: a wake or a cancel of `from`
    /// that raced in during its poll (NOTIFIED or CANCELLED set), or a cancelled next task,
    /// falls back to the loop, which handles them. A wake of `from` after its transition
    /// finds it idle and queues it as any wake of an idle pinned coroutine does (on this
    /// thread's inbox or slot, which this thread looks at only after the switch).
    #[inline(always)] // into the suspension, whose switch saves the callee-saved registers anyway
    pub(crate) fn direct_block(&self, from: &StackfulCtx) -> Option<*mut RawCoroutine> {
        self.note_frame(from);
        let remote = self.remote();
        let mut core = self.direct_round()?;
        // ... the slice not over, the spawn slot (which goes first) unused, and a started
        // coroutine pinned here in the next-task slot, or, with the slot empty, at the front
        // of the pinned queue when `next_task`'s pick would take it (the queue pick: the
        // run queue empty, or the pinned queue's turn; see "The direct switch to a queued
        // coroutine").
        if core.lifo_polls == SLICE_OVER || core.spawn_slot_used {
            return None;
        }
        let (to, to_ptr, queued) = match &core.next {
            Some(next) => (next.header(), next.ptr(), false),
            None if core.pinned_first || core.run_queue.is_empty() => match core.pinned.front()? {
                Pinned::Task(Runnable::Notified(task)) => (task.header(), task.ptr(), true),
                _ => return None,
            },
            None => return None,
        };
        if to.kind != (Kind::Stackful { migratable: false }) || to.pinned_home() != Some(self.index)
        {
            return None;
        }
        // `harness::poll`'s start for `to`, the plain case only.
        if !to.state.transition_to_running_if_plain() {
            return None;
        }
        let (frame_task, frame_ctx) = self.frame_ctx.get();
        let to_ctx = if ptr::eq(frame_task, to_ptr.as_ptr()) {
            // SAFETY: `to` is the coroutine of the poll frame waiting in `run_task` (its first
            // direct switch recorded it, in this frame: `note_frame`); the pointer is the
            // frame's own, valid while the frame waits.
            Some(unsafe { &*frame_ctx })
        } else {
            // SAFETY: we own `to` as RUNNING now (a started coroutine pinned here, not the
            // frame's: no live borrow of its stage); the context lives in its `Live` block.
            unsafe { (to.vtable.stackful_ctx)(to_ptr).as_ref() }
        };
        // As preemptible as `from` (the poll frame's guard clears what the last one set), and
        // `after_pending`'s end for `from`, the plain case only.
        let to_ctx = match to_ctx {
            Some(to_ctx)
                if to_ctx.is_preemptible() == from.is_preemptible()
                    // SAFETY: `from` runs: its task is alive.
                    && unsafe { from.header_ptr().as_ref() }
                        .state
                        .transition_to_idle_if_plain() =>
            {
                to_ctx
            }
            _ => {
                // Nothing ran: `to` is back in the slot as it was (with any wake or cancel
                // that came meanwhile).
                to.state.transition_back_to_notified();
                return None;
            }
        };
        // Commit: the loop's changes, in its order. `to`'s `Notified` reference is now its
        // poll's, which the frame `from` was resumed by owns (`switched`).
        core.global_countdown -= 1;
        let counter = if queued {
            // The queue pick: a new slice, the run queue's turn next (step 3).
            std::mem::forget(core.pinned.pop_front());
            core.only_yielded = false;
            core.lifo_polls = 0;
            core.pinned_first = false;
            &remote.direct_queue_handoffs
        } else {
            // The slot pick: the slice is inherited.
            std::mem::forget(core.next.take());
            core.lifo_polls += 1;
            let inherited = remote.inherited.load(Ordering::Relaxed);
            remote.inherited.store(inherited + 1, Ordering::Relaxed);
            &remote.direct_handoffs
        };
        drop(core);
        let preemptible = to_ctx.is_preemptible();
        Some(self.start_switched(remote, to_ptr, to_ctx, preemptible, counter))
    }

    /// The next task from this worker's own queues (steps 1–4 of the loop).
    #[inline]
    fn next_task(&self) -> Option<Runnable> {
        let remote = self.remote();
        let mut core = self.core.borrow_mut();
        core.only_yielded = false;
        core.global_countdown -= 1;
        if core.maintenance_due(remote, core.global_countdown) {
            drop(core);
            if let Some(task) = self.maintenance() {
                return Some(task);
            }
            core = self.core.borrow_mut();
        }
        if core.lifo_polls != SLICE_OVER {
            // The spawn slot (others may steal from it after a grace period: it goes first),
            // else the next-task slot. A task run from either inherits the slice.
            let spawned = if core.spawn_slot_used {
                self.take_spawned(&mut core)
            } else {
                None
            };
            if let Some(task) = spawned.or_else(|| core.next.take()) {
                core.lifo_polls += 1;
                // Owner only: a plain store is enough (sysmon only reads).
                let inherited = remote.inherited.load(Ordering::Relaxed);
                remote.inherited.store(inherited + 1, Ordering::Relaxed);
                return Some(Runnable::Notified(task));
            }
        } else {
            // A preempted coroutine whose movable work went to an idle worker goes on, in a
            // new slice (`pass_movable_work_on`): it is at the back of the yielded queue.
            if core.resume_yielded {
                core.resume_yielded = false;
                if let Some(yielded) = core.yielded.pop_back() {
                    core.lifo_polls = 0;
                    return Some(Runnable::Running(yielded.task));
                }
            }
            // The slot's task when the slice ended went to the back then (`run_task`); one
            // there now was woken by this round's timers, and runs next, in a slice of its own
            // (Go's `checkTimers` readies into `runnext` before `runqget`).
            if let Some(task) = core.next.take() {
                core.lifo_polls = 0;
                return Some(Runnable::Notified(task));
            }
            if core.spawn_slot_used {
                // The slice is over: the queues go first, with the spawn slot's task as the
                // back of the run queue (not moved there, where a thief could take it at once).
                core.lifo_polls = 0;
                if let Some(task) = self.pick_after_slice_end(&mut core) {
                    return Some(task);
                }
                // Step 4 before the yielded queue, as below.
                drop(core);
                if let Some(task) = self.take_global() {
                    return Some(Runnable::Notified(task));
                }
                let yielded = self.core.borrow_mut().yielded.pop_front();
                return yielded.map(|y| Runnable::Running(y.task));
            }
        }
        core.lifo_polls = 0;
        // The queue the last pick did not take from goes first: by pick, not by round (with
        // the round's parity, a next-task chain of a fixed length landed every pick on the
        // same queue, issue 8, bug 5), and set by the pick, not flipped (a flip by other
        // picks in between, the spawn slot's, put every pick on the same queue,
        // `rt_starvation_review`). A pick from the other queue, the first being empty, leaves
        // the turn where it was: the same queue was not served.
        if core.pinned_first {
            if let Some(task) = core.pop_pinned(remote) {
                core.pinned_first = false;
                return Some(task);
            }
            if let Some(task) = core.run_queue.pop() {
                return Some(Runnable::Notified(task));
            }
        } else {
            if let Some(task) = core.run_queue.pop() {
                core.pinned_first = true;
                return Some(Runnable::Notified(task));
            }
            if let Some(task) = core.pop_pinned(remote) {
                return Some(task);
            }
        }
        // Step 4, a batch from the global queue, before the yielded queue: a yield lets the
        // work queued before it run, as Go's `Gosched` puts the goroutine behind the global
        // queue. (After it, the global queue was served only at step 1, every other 61st
        // round: 100 tasks spawned from a plain thread waited ~12,000 yields of one coroutine,
        // `rt_starvation_review`.)
        if core.yielded.is_empty() || !self.shared.inject.is_empty() {
            drop(core);
            if let Some(task) = self.take_global() {
                return Some(Runnable::Notified(task));
            }
            core = self.core.borrow_mut();
        }
        if let Some(yielded) = core.yielded.pop_front() {
            // Step 3 found every queue empty (with the slots, as above), and step 4 the
            // global queue.
            debug_assert!(core.only_yielded_left());
            core.only_yielded = !core.yielded.is_empty();
            return Some(Runnable::Running(yielded.task));
        }
        None
    }

    /// Takes the spawn slot's task. It leaves the alternation of step 3 alone, as the
    /// next-task slot's pick does: the queues' turns are set by their own picks only
    /// (`Core::pinned_first`). (It used to flip it, as the run-queue pick it replaced did;
    /// the flip made the phase in which one queue got every pick, `rt_starvation_review`.)
    fn take_spawned(&self, core: &mut Core) -> Option<Notified> {
        core.spawn_slot_used = false;
        self.remote().spawned.take()
    }

    /// Step 3 after a slice ended with a task in the spawn slot: that task counts as the back
    /// of the run queue. (The yielded queue is the caller's, after the global queue.)
    #[cold]
    #[inline(never)]
    fn pick_after_slice_end(&self, core: &mut Core) -> Option<Runnable> {
        let movable = |core: &mut Core| {
            core.run_queue
                .pop()
                .or_else(|| {
                    core.spawn_slot_used = false;
                    self.remote().spawned.take()
                })
                .map(Runnable::Notified)
        };
        let remote = self.remote();
        // As `next_task`'s pick: the queue the last pick did not take from goes first.
        if core.pinned_first {
            core.pop_pinned(remote)
                .inspect(|_| core.pinned_first = false)
                .or_else(|| movable(core))
        } else {
            movable(core)
                .inspect(|_| core.pinned_first = true)
                .or_else(|| core.pop_pinned(remote))
        }
    }

    /// The periodic part of step 1: the global queue and the sockets every 61 rounds, the
    /// inbox, due timers (the clock is read at most every `TIMER_CHECK_INTERVAL` rounds: on
    /// this kind of machine a clock read costs as much as a task switch).
    ///
    /// # A busy worker polls its sockets
    ///
    /// Every 61 rounds a worker polls the netpoller without blocking (tokio's
    /// `event_interval`), whether or not it ran out of work. Go polls only in `findRunnable`,
    /// when a P has run dry, and leaves busy Ps to sysmon's 10 ms `netpoll`; corio did the same
    /// and a server that never ran dry paid for it twice. Its sockets were polled by sysmon
    /// only, every 10–20 ms, and the tasks that poll woke went to the global queue (sysmon is
    /// not a worker), which a busy worker takes from once per 61 rounds: hyper on one worker
    /// under 256 pipelined connections left connections unserved for 100–270 ms while it kept
    /// answering the others (`docs/net-bench.md`, "Tenth pass"). Polled here, the tasks
    /// woken queue at the back of this worker's own queues, in the order their sockets became
    /// ready, and sysmon's poll is left for a worker held by one task.
    /// The poll costs one `epoll_wait` per 61 rounds, and none when no socket is registered or
    /// when a parked worker waits in the driver (it takes the events itself).
    #[cold]
    #[inline(never)]
    fn maintenance(&self) -> Option<Runnable> {
        let remote = self.remote();
        let mut first = None;
        let mut poll_sockets = false;
        {
            let mut core = self.core.borrow_mut();
            if core.global_countdown == 0 {
                core.global_countdown = GLOBAL_POLL_INTERVAL;
                poll_sockets = true;
                // The global queue and the yielded queue take turns at this pick: the yielded
                // queue is this worker's part of what Go's `Gosched` puts on the global
                // queue, and while the global queue is never empty (tasks overflowing the run
                // queue) a yielded coroutine taken only after it never ran again.
                core.yielded_turn = !core.yielded_turn;
                let yielded =
                    |core: &mut Core| core.yielded.pop_front().map(|y| Runnable::Running(y.task));
                first = if core.yielded_turn {
                    yielded(&mut core).or_else(|| self.shared.inject.pop().map(Runnable::Notified))
                } else {
                    self.shared
                        .inject
                        .pop()
                        .map(Runnable::Notified)
                        .or_else(|| yielded(&mut core))
                };
                // A pick in the middle of a chain of runs from the slots (a ping-pong pair)
                // goes on with the chain's time slice, as the slot's task after it will: a
                // new slice here, which the slot's next task inherited, hid the chain from
                // sysmon, and a pair beside a yielding coroutine (or a global queue that
                // never empties) kept the worker for good, its queues never picked
                // (`rt_starvation_review`). Go's every-61st pick does not fall inside a
                // `runnext` chain: its `schedtick` stands still there.
                if first.is_some() && core.lifo_polls != 0 && core.lifo_polls != SLICE_OVER {
                    // Owner only: a plain store is enough (sysmon only reads).
                    let inherited = remote.inherited.load(Ordering::Relaxed);
                    remote.inherited.store(inherited + 1, Ordering::Relaxed);
                }
            }
            // Acquire: pairs with the Release store in `push_inbox`.
            if remote.inbox_len.load(Ordering::Acquire) > 0 {
                remote.take_inbox(&mut core.pinned);
            }
            // A yielded pick, with the inbox taken (the timers' wakes below clear it again).
            if matches!(first, Some(Runnable::Running(_))) {
                core.only_yielded = core.only_yielded_left() && !core.yielded.is_empty();
            }
        }
        if poll_sockets {
            // "A busy worker polls its sockets": the tasks this wakes queue at the back.
            self.poll_io();
        }
        let next_timer = remote.next_timer.load(Ordering::Relaxed);
        if next_timer != u64::MAX {
            let now = self.shared.now_ns();
            self.core.borrow_mut().now = now;
            if next_timer <= now {
                // Firing wakes tasks, which schedules them into our core: not while borrowed.
                self.own_timer_wake.set(true);
                self.firing_timers(|| self.shared.fire_timers(self.index, now));
                self.own_timer_wake.set(false);
            }
        }
        first
    }

    /// Puts a task at the back of the queue it belongs in.
    fn push_back(&self, core: &mut Core, task: Notified) {
        let movable = task.is_movable();
        self.push_back_known(core, task, movable);
    }

    /// `push_back` for a task whose movability the caller already knows.
    fn push_back_known(&self, core: &mut Core, task: Notified, movable: bool) {
        core.only_yielded = false;
        if movable {
            core.run_queue.push_back(task, &self.shared.inject);
        } else {
            core.pinned
                .push_back(Pinned::Task(Runnable::Notified(task)));
        }
    }

    /// Queues a task woken on this worker (`is_yield`: behind the others).
    pub(crate) fn schedule_local(&self, task: Notified, is_yield: bool) {
        let home = task.header().pinned_home();
        if home.is_some_and(|home| home != self.index) {
            self.shared.schedule_remote(task);
            return;
        }
        let Ok(mut core) = self.core.try_borrow_mut() else {
            // Re-entered while the loop holds the core (a waker fired from inside the
            // scheduler itself): take the slow, always-correct path.
            self.shared.schedule_remote(task);
            return;
        };
        if home.is_none() && self.shared.is_shutdown() {
            return; // dropped: shutdown cancels it through the owned list
        }
        if is_yield && home.is_none() && self.remote().preempt_for_this_slice() {
            // A movable task whose time slice sysmon ended (it yielded at a budgeted call):
            // to the global queue, as Go's preempted goroutine goes, behind this worker's
            // local work. At the back of the run queue, alone there beside coroutines in
            // the pinned queue, it took every other pick from the local queues, a whole slice
            // each: one turn of theirs per slice (`rt_starvation_review`).
            drop(core);
            match self.shared.inject.push(task) {
                Ok(()) => {
                    self.preempted_to_global.set(true);
                    self.shared.notify_work();
                }
                Err(task) => drop(task), // shutting down: cancelled through the owned list
            }
            return;
        }
        // The task that goes to the back of a queue: this one, or the one it displaces from
        // the next-task slot. A task woken by one of this worker's own timers, fired between
        // two of its tasks, takes the slot only if it is empty, so that of a batch fired
        // together the first runs next and the rest keep their order: a sleeper is late by one
        // turn, not by a turn of every task queued ahead of it (Go's `ready` puts it in
        // `runnext`). Other firings (while searching, parking, shutting down) queue at the back.
        core.only_yielded = false;
        let to_back = self.firing.get() && !(self.own_timer_wake.get() && core.next.is_none());
        let (pushed, movable) = if is_yield || to_back {
            (task, home.is_none())
        } else if let Some(previous) = core.next.replace(task) {
            let movable = previous.is_movable();
            (previous, movable)
        } else {
            return;
        };
        self.push_back_known(&mut core, pushed, movable);
        // Work others could steal appeared in our run queue.
        if movable || !core.run_queue.is_empty() {
            drop(core);
            self.shared.notify_work();
        }
    }

    /// Puts a task spawned on this worker in its spawn slot if that is empty (`sched/slot.rs`),
    /// else at the back of the run queue, where others may steal it at once.
    pub(crate) fn schedule_spawned(&self, task: Notified) {
        if !task.is_movable() {
            // A local task: pinned here from birth, it queues as before.
            self.schedule_local(task, true);
            return;
        }
        if self.shared.is_shutdown() {
            return; // dropped: shutdown cancels it through the owned list
        }
        let Ok(mut core) = self.core.try_borrow_mut() else {
            // Spawned from inside the scheduler itself: the slow, always-correct path.
            self.shared.schedule_remote(task);
            return;
        };
        let Some(task) = self.place_elsewhere(&mut core, task) else {
            return;
        };
        core.only_yielded = false;
        match self.remote().spawned.put(task) {
            Ok(()) => core.spawn_slot_used = true,
            Err(task) => core.run_queue.push_back(task, &self.shared.inject),
        }
        drop(core);
        // Work others could steal appeared: in the run queue now, in the slot after the grace.
        self.shared.notify_work();
    }

    /// Starts a new stackful coroutine on the worker its spawner's children go to now
    /// (`sched/placement.rs`), if that is another worker; else gives it back.
    fn place_elsewhere(&self, core: &mut Core, task: Notified) -> Option<Notified> {
        let shared = &self.shared;
        let workers = shared.config.workers;
        // A spare worker (its index is past the placement's per-worker view) keeps its
        // spawners' children, as does a spawn made before this worker ran any task (no
        // spawner id to remember).
        let remote = self.remote();
        let spawner = remote.current_id.load(Ordering::Relaxed);
        if workers == 1
            || self.index >= workers
            || spawner == 0
            || !matches!(task.header().kind, Kind::Stackful { .. })
        {
            return Some(task);
        }
        // Started coroutines runnable here (not new tasks, which others may steal).
        let own_busy = core.next.is_some()
            || !core.pinned.is_empty()
            || !core.yielded.is_empty()
            || remote.inbox_len.load(Ordering::Relaxed) != 0;
        let target = core.placement.choose(
            spawner,
            self.index,
            own_busy,
            remote.ticks.load(Ordering::Relaxed),
            |idle| {
                let now = shared.now_ns();
                idle.extend(shared.workers[..workers].iter().map(|w| w.idle_until(now)));
                now
            },
            |target| {
                let there = &shared.workers[target];
                Progress {
                    ticks: there.ticks.load(Ordering::Relaxed),
                    waiting: there.inbox_len.load(Ordering::Relaxed) != 0,
                    now: shared.now_ns(),
                }
            },
        );
        if target == self.index {
            return Some(task);
        }
        let there = &shared.workers[target];
        there.push_placed(task);
        there.unparker.unpark(&shared.driver);
        None
    }

    /// Records whether the loop ran out of local work, and for how long (read by spawners on
    /// other workers: `sched/placement.rs`). A clock read per change, none per task.
    #[inline(always)]
    fn set_out_of_work(&self, out: bool) {
        let remote = self.remote();
        if remote.out_of_work.load(Ordering::Relaxed) == out {
            return;
        }
        let now = self.shared.now_ns();
        if out {
            remote.idle_since.store(now, Ordering::Relaxed);
        } else {
            let since = remote.idle_since.load(Ordering::Relaxed);
            let total = remote.idle_ns.load(Ordering::Relaxed) + now.saturating_sub(since);
            remote.idle_ns.store(total, Ordering::Relaxed);
        }
        remote.out_of_work.store(out, Ordering::Relaxed);
    }

    /// Step 5: steal, take from the global queue, run others' due timers.
    fn search(&self) -> Option<Runnable> {
        let shared = &self.shared;
        let remote = self.remote();
        if remote.spare && !remote.active.load(Ordering::Acquire) {
            return None;
        }
        if !self.searching.get() {
            if !remote.spare && !shared.idle.transition_worker_to_searching() {
                return self.take_global().map(Runnable::Notified);
            }
            self.searching.set(!remote.spare);
        }
        let n = shared.workers.len();
        let start = {
            let mut core = self.core.borrow_mut();
            core.rng ^= core.rng << 13;
            core.rng ^= core.rng >> 7;
            core.rng ^= core.rng << 17;
            core.rng as usize % n
        };
        for i in 0..n {
            let victim = (start + i) % n;
            if victim == self.index {
                continue;
            }
            let mut core = self.core.borrow_mut();
            if let Some(task) = shared.workers[victim].steal.steal_into(&mut core.run_queue) {
                shared.metrics.steals.fetch_add(1, Ordering::Relaxed);
                return Some(Runnable::Notified(task));
            }
        }
        if let Some(task) = self.take_global() {
            return Some(Runnable::Notified(task));
        }
        if self.firing_timers(|| shared.fire_all_timers()) > 0 {
            return self.next_task();
        }
        self.steal_spawned(start)
    }

    /// Step 5½, between finding nothing and parking: keeps watching for work for up to
    /// [`SPIN_BEFORE_PARK`], as Go's spinning M does, so that work that appears a moment
    /// later costs neither this worker a sleep nor its waker a wake-up (`unpark` of a worker
    /// that is not parked is one swap). `deferred`: this worker skipped its non-blocking poll
    /// ("The deferred poll"), so the spin polls first. Returns whether work may be there (the
    /// loop looks again); false: park.
    ///
    /// Which workers spin ([`SpinKind`]): every worker of a runtime with more than one, and
    /// the only worker of a `workers(1)` runtime while its sockets are busy ("The only worker
    /// spins while its sockets are busy"). Not spares, which park as soon as they find
    /// nothing. What a spin watches:
    ///
    /// - its inbox, always: a pinned coroutine of this worker woken on another thread can run
    ///   nowhere else, and its waker unparks this worker unconditionally. This is why a
    ///   worker that may not search spins too: with two workers only one may search, and in
    ///   a ping-pong between coroutines pinned on each, the one that went idle second found
    ///   the other still counted as searching (it was just leaving its spin to run the
    ///   wake-up) and parked — 2 parks and 2 futex wakes per round trip (`tests/rt_spin.rs`).
    ///   Watching its own inbox reads one line of its own, so the spinners do not contend
    ///   with each other, which is what the half rule is for;
    /// - if it counts as searching (`Idle`: at most half the unparked workers do), or is the
    ///   only worker, also the global queue and the other workers' run queues: while it
    ///   searches, `notify_work` wakes nobody, so a searcher that spins is what saves the
    ///   futex wake of a parked worker for movable work;
    /// - due timers and ready sockets, at each clock read. Sockets end the spin only when
    ///   their events gave this worker something to run: events that woke only other threads
    ///   (a coroutine pinned elsewhere, a `block_on` on the main thread) neither end the spin
    ///   nor restart its budget, or a stream of them would keep this worker from ever
    ///   sleeping while it has nothing to run (and make sysmon report its last task as a hog).
    ///
    /// # The only worker spins while its sockets are busy
    ///
    /// The only worker of a `workers(1)` runtime does not spin for other threads' work: only
    /// other threads could make it, and its thread is the whole of the runtime's CPU (a
    /// single-worker server's CPU is measured with the server: `corio-bench http`). But a
    /// `workers(1)` server under `wrk` ran dry between batches of requests and blocked in
    /// `epoll_wait` ~0.03 times per request (1.7 times as often as may_minihttp); the next
    /// request then had to wake it, on the client's CPU (`docs/net-bench.md`, "Seventh
    /// pass"). Polling for the next request a few tens of microseconds answers it without a
    /// sleep and a wake-up.
    ///
    /// Only while sockets are busy: when such a spin ends with nothing found, the worker
    /// records the driver's count of socket events ([`Driver::socket_events`]) and spins
    /// again only once that count has moved, i.e. after a socket was ready. An idle runtime
    /// therefore spins at most once after its last IO and then sleeps without wake-ups; a
    /// runtime without sockets never spins, and neither does one whose driver another thread
    /// holds (its polls would find nothing). `Builder::io_spin(false)` turns it off.
    ///
    /// # The first poll waits
    ///
    /// An only worker that polled as soon as it ran dry polled 0.7 times per request under
    /// `wrk` against may_minihttp's 0.07, and wrk spent 2–5 % more CPU per request on it;
    /// wrk's CPU set the rate (`docs/net-bench.md`, "Twentieth pass"). The likely reason,
    /// not proven without hardware counters: each `epoll_wait` pulls the epoll instance's
    /// shared state to the server's CPU, and each request the client sends must fetch it
    /// back. So while the worker has slack, its spin first looks at its queues for a while,
    /// and more requests are ready when it polls: 8 ns times the square of the sockets that
    /// were active in the last millisecond ([`Registry::end_window`]), at most 20 µs —
    /// nothing to speak of for a few clients, 2 µs for 16, 20 µs from 50. Timers due
    /// meanwhile fire after it. Every window of a millisecond decides for the next, as
    /// [`first_poll_wait`](Self::first_poll_wait) says.
    ///
    /// Only with slack: a worker that spent less than an eighth of the last window spinning
    /// (the waits included) does not wait, since requests are then ready when it runs dry
    /// and a wait only idles it (`hyper_hello` spent 0–8 % of its time spinning and lost 8 %
    /// of its requests a second to an unconditional wait; `http_hello`, 14–20 % without the
    /// wait and 16–23 % with it, gained 3–4 %).
    ///
    /// The waits are counted in `Metrics::first_poll_waits` and `first_poll_wait_time`. A
    /// lone busy socket counts as none (the count is scaled to a millisecond and rounded
    /// down), so a single client's ping-pong never waits.
    ///
    /// [`Registry::end_window`]: crate::io::registry::Registry::end_window
    ///
    /// # When the CPUs are oversubscribed
    ///
    /// The spin waits for work without sleeping, and a thread that never sleeps gets no
    /// wake-up preemption from the kernel: the `unpark` of a spinning worker is a swap that
    /// the worker sees only when it next gets a CPU. With more runnable threads than CPUs
    /// (another process's busy threads), its `sched_yield` hands the CPU to one of them for
    /// the rest of a scheduler tick (4 ms here). Two workers in a cross-worker ping-pong then
    /// fell into a lockstep in which both always spun and neither ever slept: each hand-off
    /// waited for a busy thread's tick, 250 hand-offs a second instead of hundreds of
    /// thousands (`tests/chan_pair_hang.rs`: 10,000 values took minutes, 1 run in 50-100
    /// under load). A worker parked on its futex is woken by the `unpark` at once.
    ///
    /// So a spin whose yield lost a slice ([`SPIN_LOST_SLICE`]) makes the worker park without
    /// spinning in its next out-of-work episodes, 1, 2, 4, .. up to [`SPIN_SKIP_MAX`] of them
    /// as slices keep being lost; a spin that finds work without losing one resets that.
    ///
    /// [`Driver::socket_events`]: super::driver::Driver::socket_events
    fn spin(&self, deferred: bool) -> bool {
        let Some(kind) = self.spin_kind(deferred) else {
            return false;
        };
        let start = std::time::Instant::now();
        let found = self.spin_from(start, kind, deferred);
        if kind == SpinKind::OnlyWorker {
            self.spun.set(self.spun.get() + start.elapsed());
        }
        found
    }

    /// [`spin`](Self::spin), from `start`.
    fn spin_from(&self, start: std::time::Instant, kind: SpinKind, deferred: bool) -> bool {
        let shared = &self.shared;
        let remote = self.remote();
        let others = kind == SpinKind::OnlyWorker || self.searching.get();
        let visible = || {
            remote.inbox_len.load(Ordering::Relaxed) != 0
                || (others
                    && (!shared.inject.is_empty()
                        || shared
                            .workers
                            .iter()
                            .enumerate()
                            .any(|(i, w)| i != self.index && !w.steal.is_empty())))
        };
        // `n` looks, a `pause` after each that saw nothing: whether one saw work.
        let look = |n: u32| {
            (0..n).any(|_| {
                let seen = visible();
                if !seen {
                    std::hint::spin_loop();
                }
                seen
            })
        };
        let found = || {
            remote.unparker.clear_notified();
            self.spin_backoff.set(0);
            true
        };
        // A poll's verdict, if it ends the spin.
        let poll = || {
            if kind == SpinKind::OnlyWorker && shared.driver.registry.is_empty() {
                // The last socket closed (its hang-up moved the count): nothing to watch.
                return Some(self.spin_ends(kind));
            }
            (self.spin_poll() > 0 && self.has_local_work()).then(&found)
        };
        // The deferred poll first (the only worker: a request that came meanwhile is answered
        // now); then rounds of looks, a yield (the only worker: more looks), a poll, the
        // timers and the clock, in that order: nothing returns before the round's yield, so a
        // timer that another worker must fire cannot keep this one spinning without giving up
        // its CPU.
        if deferred && kind == SpinKind::OnlyWorker {
            // The first poll waits ("The first poll waits"), looking at the queues meanwhile.
            let wait = self.first_poll_wait(start);
            if !wait.is_zero() {
                let mut seen = false;
                let mut waited = start.elapsed();
                while waited < wait {
                    seen = look(SPIN_LOOKS_PER_CLOCK_READ);
                    waited = start.elapsed();
                    if seen {
                        break;
                    }
                }
                self.first_poll_waited(waited);
                if seen {
                    return found();
                }
            }
        }
        if deferred && let Some(verdict) = poll() {
            return verdict;
        }
        // The only worker makes more looks per round in place of the yield (below).
        let looks = if kind == SpinKind::OnlyWorker {
            SPIN_LOOKS_PER_CLOCK_READ * 3
        } else {
            SPIN_LOOKS_PER_CLOCK_READ
        };
        loop {
            if look(looks) {
                return found();
            }
            // A worker spinning for other workers' work lets a thread waiting for this CPU
            // run: the kernel tends to queue a thread woken by this one on this one's CPU
            // (wake-affine), and a spinner that kept the CPU kept its own work's producer off
            // it. Without this, two workers in a cross-worker ping-pong on a loaded machine
            // fell into a lockstep of spins that expired and futex wakes (2 parks per round
            // trip, `tests/rt_spin.rs`); with it, none.
            //
            // The only worker, watching its sockets, must not: its work comes from other
            // processes, and a yield hands the CPU to whatever else is runnable there — even
            // a batch job at idle priority, which then keeps it until the next tick, since a
            // yielded thread is runnable and no wake-up preempts the job. With such a job on
            // the server's CPU, `http_hello` served 0.634 of may_minihttp's requests/s with a
            // p99 of 4.5 ms; with these looks in place of the yield, 1.031 ("Eighteenth
            // pass", `docs/net-bench.md`). Its rounds have three times the looks instead, which
            // space its polls as the yield did (level with it on an idle machine).
            if kind != SpinKind::OnlyWorker {
                std::thread::yield_now();
            }
            if let Some(verdict) = poll() {
                return verdict;
            }
            if shared.is_shutdown() || shared.next_timer() <= shared.now_ns() {
                return true;
            }
            let spun = start.elapsed();
            if spun >= SPIN_LOST_SLICE {
                self.lost_slice();
                return self.spin_ends(kind);
            }
            if spun >= SPIN_BEFORE_PARK {
                return self.spin_ends(kind);
            }
        }
    }

    /// Whether and how this worker spins before it parks ([`SpinKind`]; `spin` says which
    /// workers spin).
    fn spin_kind(&self, deferred: bool) -> Option<SpinKind> {
        let shared = &self.shared;
        let kind = if self.spins() {
            SpinKind::Worker
        } else if !self.remote().spare
            && deferred
            && shared.config.io_spin
            && shared.driver.socket_events.load(Ordering::Relaxed) != self.io_spin_mark.get()
            && !shared.driver.registry.is_empty()
        {
            SpinKind::OnlyWorker
        } else {
            return None;
        };
        // Last, so that only an episode that would have spun counts as skipped.
        (!self.skip_spin()).then_some(kind)
    }

    /// How long the only worker's spin that began at `now` waits before its first poll
    /// ("The first poll waits"). Ends the window if it has lasted [`ACTIVE_WINDOW`], and
    /// decides from it: no wait if the worker spent less than [`FIRST_POLL_WAIT_SLACK`] of it
    /// spinning; else [`FIRST_POLL_WAIT_UNIT`] times the square of the sockets active in it,
    /// at most [`FIRST_POLL_WAIT_MAX`]. A window longer than [`ACTIVE_WINDOW`] (the worker
    /// slept, or ran one long task) counts its sockets in proportion, so that connections
    /// active once each over a quiet minute do not count as active together.
    fn first_poll_wait(&self, now: std::time::Instant) -> Duration {
        let (began, wait) = self.active_window.get();
        let lasted = began.map_or(Duration::ZERO, |began| now.saturating_duration_since(began));
        if began.is_some() && lasted < ACTIVE_WINDOW {
            return wait;
        }
        let counted = u128::from(self.shared.driver.registry.end_window());
        let spun = self.spun.replace(Duration::ZERO);
        let wait = if began.is_none()
            || spun.as_secs_f64() < lasted.as_secs_f64() * FIRST_POLL_WAIT_SLACK
        {
            Duration::ZERO
        } else {
            let active = counted * ACTIVE_WINDOW.as_nanos() / lasted.as_nanos();
            let wait = FIRST_POLL_WAIT_UNIT.as_nanos() * active * active;
            Duration::from_nanos(wait.min(FIRST_POLL_WAIT_MAX.as_nanos()) as u64)
        };
        self.active_window.set((Some(now), wait));
        wait
    }

    /// Counts a first poll's wait that lasted `waited` (the `first_poll_waits` metrics).
    fn first_poll_waited(&self, waited: Duration) {
        let remote = self.remote();
        let waits = remote.first_poll_waits.load(Ordering::Relaxed);
        remote.first_poll_waits.store(waits + 1, Ordering::Relaxed);
        let ns = remote.first_poll_wait_ns.load(Ordering::Relaxed);
        let add = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        remote
            .first_poll_wait_ns
            .store(ns.saturating_add(add), Ordering::Relaxed);
    }

    /// A spin found nothing: the only worker remembers the socket events it has seen, so
    /// that it spins again only after more (`spin`). Returns false (park).
    fn spin_ends(&self, kind: SpinKind) -> bool {
        if kind == SpinKind::OnlyWorker {
            let events = self.shared.driver.socket_events.load(Ordering::Relaxed);
            self.io_spin_mark.set(events);
        }
        false
    }

    /// A spin's non-blocking poll of the netpoller: the tasks it wakes go to the run queue, as
    /// the loop's own poll's do, not one by one through the next-task slot. Counted in
    /// `io_spin_polls` if it polled (another thread may hold the driver). How many sockets
    /// were ready.
    fn spin_poll(&self) -> usize {
        let Some(ready) = self.firing_timers(|| self.shared.driver.try_poll_io()) else {
            return 0;
        };
        let remote = self.remote();
        let polls = remote.io_spin_polls.load(Ordering::Relaxed);
        remote.io_spin_polls.store(polls + 1, Ordering::Relaxed);
        ready
    }

    /// A spin's `sched_yield` lost a time slice: park without spinning in the next 1, 2, 4,
    /// .. out-of-work episodes ("When the CPUs are oversubscribed").
    fn lost_slice(&self) {
        let remote = self.remote();
        let backoff = (self.spin_backoff.get() * 2).clamp(1, SPIN_SKIP_MAX);
        self.spin_backoff.set(backoff);
        self.spin_skip.set(backoff);
        let lost = remote.spin_slices_lost.load(Ordering::Relaxed);
        remote.spin_slices_lost.store(lost + 1, Ordering::Relaxed);
    }

    /// Whether this worker should skip this out-of-work episode's spin after lost slices
    /// (and count it); written by the owner only.
    fn skip_spin(&self) -> bool {
        let skip = self.spin_skip.get();
        if skip == 0 {
            return false;
        }
        self.spin_skip.set(skip - 1);
        let remote = self.remote();
        let skipped = remote.spins_skipped.load(Ordering::Relaxed);
        remote.spins_skipped.store(skipped + 1, Ordering::Relaxed);
        true
    }

    /// The last resort of step 5: a task left in another worker's spawn slot while that
    /// worker ran for a grace period (Go's `runqgrab` stealing `runnext` after `usleep(3)`).
    #[cold]
    fn steal_spawned(&self, start: usize) -> Option<Runnable> {
        let shared = &self.shared;
        let own = self.remote();
        let n = shared.workers.len();
        let task = (0..n)
            .map(|i| (start + i) % n)
            .filter(|&v| v != self.index && !shared.workers[v].spawned.is_empty())
            .find_map(|v| {
                // Work of its own ends the wait too: a coroutine pinned here woken meanwhile
                // (the inbox), a timer of this worker come due, the runtime shutting down. The
                // wait lasts up to ~3 ms, and without these a woken coroutine waited it out
                // (`tests/rt_go_proc_suite.rs`'s author saw ~3 ms wake-ups on 2 workers).
                let other_work = || {
                    !shared.workers[v].steal.is_empty()
                        || !shared.inject.is_empty()
                        || own.inbox_len.load(Ordering::Relaxed) != 0
                        || own.next_timer.load(Ordering::Relaxed) <= shared.now_ns()
                        || shared.is_shutdown()
                };
                shared.workers[v]
                    .spawned
                    .steal_after_grace(&shared.workers[v].clock, other_work)
            })?;
        shared.metrics.steals.fetch_add(1, Ordering::Relaxed);
        Some(Runnable::Notified(task))
    }

    fn take_global(&self) -> Option<Notified> {
        if self.shared.inject.is_empty() {
            return None;
        }
        let mut core = self.core.borrow_mut();
        self.shared
            .inject
            .pop_batch_into(&mut core.run_queue, GLOBAL_BATCH)
    }

    fn stop_searching(&self) {
        self.searching.set(false);
        // The last searcher found work: if more is queued where others could take it, wake
        // another to look (Go's `resetspinning`). Only then: the work found is often a pinned
        // coroutine of this worker's own inbox, which says nothing about more work, and an
        // unconditional wake cost a futex wake and a parked worker's round for nothing at
        // every such find. Sound: pushers that saw us searching did not wake anybody, and
        // their work is visible to the look below, which follows our decrement (the `SeqCst`
        // read-modify-write in `Idle` and the fence in `notify_work` pair up); pushers after
        // the decrement see no searcher and wake a worker themselves.
        if self.shared.idle.transition_worker_from_searching() && self.stealable_work_queued() {
            self.shared.notify_work();
        }
    }

    /// Whether movable work is queued anywhere another worker could take it.
    fn stealable_work_queued(&self) -> bool {
        let shared = &self.shared;
        // Pairs with the fence in `Shared::notify_work`: either the pusher saw the searcher
        // count we just decremented as zero (and woke someone), or we see its work.
        std::sync::atomic::fence(Ordering::SeqCst);
        !shared.inject.is_empty() || shared.workers.iter().any(Remote::has_stealable_work)
    }

    /// Step 6: sleep until there is work. Returns whether this worker waited in the driver
    /// (and so polled the netpoller; "The deferred poll").
    fn park(&self) -> bool {
        let shared = &self.shared;
        let remote = self.remote();
        let was_searching = self.searching.replace(false);
        if !remote.spare {
            // If we were the last searcher, the re-check below covers the queues.
            let _ = shared
                .idle
                .transition_worker_to_parked(self.index, was_searching);
        }
        if remote.spare {
            remote.active.store(false, Ordering::Release);
        }
        // Pairs with the fence in `Shared::notify_work`.
        std::sync::atomic::fence(Ordering::SeqCst);
        let mut polled = false;
        if !self.has_work() {
            shared.metrics.parks.fetch_add(1, Ordering::Relaxed);
            remote.status.store(STATUS_IDLE, Ordering::Release);
            // Between the store of `IDLE` and `sleep`'s look at the driver (`try_acquire`):
            // a store and a later load of another location may be reordered (x86's store
            // buffer), and the holder does the mirror image (`release`, then
            // `pass_driver_on`'s look at `status`, with the fence there). Without the pair,
            // each could miss the other's store: this worker parks on its futex because the
            // driver looked held, the holder passes the driver to nobody because this worker
            // looked busy, and this worker's timers wait until the holder next parks.
            std::sync::atomic::fence(Ordering::SeqCst);
            polled = self.sleep();
            remote.status.store(STATUS_RUNNING, Ordering::Release);
        }
        if !remote.spare && !shared.idle.unpark_worker_by_id(self.index) {
            // `notify_work` took us off the list and counted us as searching.
            self.searching.set(true);
        }
        shared.sysmon.wake_if_sleeping();
        polled
    }

    /// Whether this worker's own queues hold anything to run.
    fn has_local_work(&self) -> bool {
        let core = self.core.borrow();
        core.next.is_some()
            || !self.remote().spawned.is_empty()
            || !core.pinned.is_empty()
            || !core.yielded.is_empty()
            || !core.run_queue.is_empty()
    }

    /// Whether any work is visible that this worker could run (re-check before sleeping).
    fn has_work(&self) -> bool {
        let shared = &self.shared;
        let remote = self.remote();
        if shared.is_shutdown() || remote.inbox_len.load(Ordering::SeqCst) > 0 {
            return true;
        }
        if self.has_local_work() {
            return true;
        }
        if remote.spare {
            return false;
        }
        !shared.inject.is_empty() || shared.workers.iter().any(Remote::has_stealable_work)
    }

    /// Sleeps in the driver (until the nearest timer) if it is free, else on the futex.
    /// Returns whether it waited in the driver.
    fn sleep(&self) -> bool {
        let shared = &self.shared;
        let remote = self.remote();
        if shared.driver.try_acquire() {
            // A timer added after this read arms the driver itself (`Shared::timer_added`).
            shared
                .driver
                .arm_for_wait(|| shared.next_timer(), || shared.now_ns());
            let waited = remote.unparker.park_driver(&shared.driver);
            shared.driver.release();
            self.firing_timers(|| shared.fire_all_timers());
            self.pass_driver_on();
            waited
        } else {
            // The holder must also wake for our timers.
            shared
                .driver
                .arm_earlier(remote.next_timer.load(Ordering::SeqCst));
            remote.unparker.park();
            false
        }
    }

    /// After leaving the driver: if a parked worker still has timers, wake it so that
    /// someone watches them.
    fn pass_driver_on(&self) {
        let shared = &self.shared;
        // Pairs with the fence in `park` (see there): after this worker's `release`.
        std::sync::atomic::fence(Ordering::SeqCst);
        for (index, remote) in shared.workers.iter().enumerate() {
            if index != self.index
                && remote.next_timer.load(Ordering::SeqCst) != u64::MAX
                && remote.status.load(Ordering::Acquire) == STATUS_IDLE
            {
                remote.unparker.unpark(&shared.driver);
                return;
            }
        }
    }

    /// Flushes the next-task slot into the run queue so others can steal it while this
    /// worker blocks (`corio::blocking`), and tells sysmon so. `false` if it is blocking
    /// already (a `blocking` inside another's `f`): then only the outer call's end may tell
    /// sysmon the worker runs again, or sysmon took the rest of the outer call for a hog's.
    pub(crate) fn enter_blocking(&self) -> bool {
        // Relaxed: only this thread writes the status.
        if self.remote().status.load(Ordering::Relaxed) == STATUS_BLOCKING {
            return false;
        }
        // Called by a coroutine's own code (`corio::blocking`): not preempted while it holds
        // the core (the loop, back from the preempted coroutine, would borrow it again) or the
        // inbox's lock (`runtime/preempt.rs`, "The rule").
        let _no_preempt = super::preempt::guard();
        if let Ok(mut core) = self.core.try_borrow_mut() {
            if let Some(task) = core.next.take() {
                self.push_back(&mut core, task);
            }
            if let Some(task) = self.remote().spawned.take() {
                self.push_back(&mut core, task);
            }
            // Coroutines placed here and not started: others may start them meanwhile.
            let placed = self.remote().release_placed();
            if !placed.is_empty() {
                for task in placed {
                    self.push_back(&mut core, task);
                }
                drop(core);
                self.shared.notify_work();
            }
        }
        self.remote()
            .status
            .store(STATUS_BLOCKING, Ordering::Release);
        true
    }

    pub(crate) fn exit_blocking(&self) {
        self.remote()
            .status
            .store(STATUS_RUNNING, Ordering::Release);
    }

    /// Shutdown on this thread: cancel the coroutines pinned here (their stacks must unwind on
    /// this thread), then keep running them — destructors may block or yield while they
    /// unwind — until none is left or `SHUTDOWN_GRACE` has passed, then leak what still
    /// blocks. Movable work is cancelled by `Shared::finish_shutdown`.
    fn shut_down(&self) {
        let shared = &self.shared;
        // Shutdown takes from `yielded` outside a round: the direct paths also refuse once
        // shutdown is set, but the flag must not outlive what it says either way.
        self.core.borrow_mut().only_yielded = false;
        let mine = |h: &crate::task::core::Header| h.pinned_home() == Some(self.index);
        for task in shared.owned.close_and_collect(mine) {
            let ptr = task.header_ptr();
            if task.shutdown() == RunResult::Yielded {
                // SAFETY: on `Yielded` our reference became a Running's.
                let running = unsafe { Running::from_raw(ptr) };
                self.core
                    .borrow_mut()
                    .yielded
                    .push_back(Yielded::new(running));
            }
        }
        let deadline = std::time::Instant::now() + SHUTDOWN_GRACE;
        loop {
            while let Some(task) = self.next_pinned() {
                self.run_task(task);
                // A preemptible coroutine that never reaches an ordinary suspension comes back
                // preempted, never cancelled (nothing unwinds through the preemption
                // trampoline): it must not be resumed for ever.
                if std::time::Instant::now() >= deadline {
                    break;
                }
            }
            self.firing_timers(|| shared.fire_all_timers());
            let expired = std::time::Instant::now() >= deadline;
            if self.has_pinned_work() && !expired {
                continue;
            }
            if !shared.owned.any(mine) {
                break;
            }
            if expired {
                shared
                    .owned
                    .close_and_collect(mine)
                    .into_iter()
                    .for_each(|t| t.leak());
                break;
            }
            // Wait for the wakes and timers the unwinding coroutines wait for.
            std::thread::sleep(Duration::from_micros(500));
        }
        // Yielded coroutines left (after a leak) are still RUNNING here: dropping their
        // `Running` cancels or leaks them on this thread (see `raw::Running`).
        let (yielded, pinned): (Vec<Running>, Vec<Pinned>) = {
            let mut core = self.core.borrow_mut();
            core.next = None;
            (
                std::iter::from_fn(|| core.yielded.pop_front().map(|y| y.task)).collect(),
                core.pinned.drain(..).collect(),
            )
        };
        drop((yielded, pinned));
        drop(self.remote().spawned.take());
        let mut core = self.core.borrow_mut();
        while let Some(task) = core.run_queue.pop() {
            drop(task);
        }
    }

    /// A pinned task of this worker to run during the shutdown drain; movable ones met on the
    /// way are dropped (`finish_shutdown` cancels them).
    fn next_pinned(&self) -> Option<Runnable> {
        let remote = self.remote();
        let mut core = self.core.borrow_mut();
        if remote.inbox_len.load(Ordering::Acquire) > 0 {
            remote.take_inbox(&mut core.pinned);
        }
        if let Some(task) = core.next.take()
            && !task.is_movable()
        {
            return Some(Runnable::Notified(task));
        }
        if let Some(task) = core.pop_pinned(remote) {
            return Some(task);
        }
        core.yielded.pop_front().map(|y| Runnable::Running(y.task))
    }

    fn has_pinned_work(&self) -> bool {
        let core = self.core.borrow();
        !core.pinned.is_empty()
            || !core.yielded.is_empty()
            || self.remote().inbox_len.load(Ordering::Acquire) > 0
    }
}
