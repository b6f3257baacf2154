//! Creating tasks: `go` (stackful), `spawn` (stackless), and the task [`TaskBuilder`].

use std::future::Future;
use std::io;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Shared;
use crate::task::JoinHandle;
use crate::task::core::{Body, Cell, Header, Kind, Vtable};
use crate::task::raw::{Notified, Task};
use crate::task::stackful::{StackConfig, Stackful};
use crate::task::stackless::Stackless;

/// Configures a task before spawning it: name, stack size, migration.
///
/// `spawn` makes a stackful coroutine (blocking-style code); `spawn_async` a stackless task.
///
/// ```
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let name = rt.run(|| {
///     corio::Builder::new()
///         .name("parser")
///         .stack_size(64 << 10)
///         .spawn(|| corio::current().name().unwrap().to_string())
///         .unwrap()
///         .join()
///         .unwrap()
/// });
/// assert_eq!(name, "parser");
/// ```
#[derive(Debug, Default, Clone)]
#[must_use = "a Builder does nothing until it spawns"]
pub struct TaskBuilder {
    pub(crate) name: Option<Arc<str>>,
    pub(crate) stack_size: Option<usize>,
    pub(crate) migratable: bool,
    pub(crate) preemptible: bool,
    pub(crate) spread: bool,
}

impl TaskBuilder {
    /// A builder with no name and the runtime's default stack size.
    pub fn new() -> TaskBuilder {
        TaskBuilder::default()
    }

    /// Names the task (shown by `corio::current()`, sysmon's hog report, the stack-overflow
    /// message and task dumps).
    pub fn name(mut self, name: impl Into<Arc<str>>) -> TaskBuilder {
        self.name = Some(name.into());
        self
    }

    /// The coroutine's stack size in bytes (stackful only; rounded up to pages, at least
    /// [`MIN_STACK_SIZE`](crate::stack::MIN_STACK_SIZE)). Pages are committed only when
    /// touched, so a large size costs address space, not memory.
    pub fn stack_size(mut self, size: usize) -> TaskBuilder {
        self.stack_size = Some(size);
        self
    }

    /// Lets the scheduler move this coroutine to another worker thread even after it has
    /// started.
    ///
    /// # Safety
    ///
    /// Every value on the coroutine's stack at every suspension point must be `Send`, and the
    /// coroutine must not rely on the identity of its thread: no thread-local whose address is
    /// taken before and used after a suspension (LLVM may cache it, llvm#98479), no
    /// `MutexGuard` or other guard held across a suspension, no `Rc`/`RefCell` shared with
    /// code that stays on the first thread.
    ///
    /// corio's own thread-locals are not the caller's concern: every corio and corio-context
    /// function that reads a thread-local from code a coroutine runs is `#[inline(never)]`, so
    /// it computes the thread-local's address afresh on each call, in a function that contains
    /// no switch, and a coroutine that moved reads the state of the thread it runs on now
    /// (checked in the generated code; see `docs/soundness.md`, "Thread-locals across
    /// switches"). State that must follow the coroutine (the generator it is polling) is saved
    /// and restored with its stack by every switch.
    pub unsafe fn migratable(mut self) -> TaskBuilder {
        self.migratable = true;
        self
    }

    /// Lets sysmon preempt this coroutine with a signal when it runs for more than a time
    /// slice (10 ms) without reaching a runtime operation, so that a coroutine spinning in a
    /// pure loop does not starve the other coroutines pinned to its thread (Go's asynchronous
    /// preemption; `docs/scheduler.md`, "Signal preemption"). Stackful only; ignored for a
    /// `migratable` coroutine and on targets other than x86_64 Linux.
    ///
    /// ```
    /// let rt = corio::Runtime::builder().workers(1).build().unwrap();
    /// rt.run(|| {
    ///     // SAFETY: the loop holds no thread-local borrow, lock or guard (see below).
    ///     let spinner = unsafe { corio::Builder::new().preemptible() }
    ///         .spawn(|| {
    ///             let start = std::time::Instant::now();
    ///             while start.elapsed() < std::time::Duration::from_millis(100) {
    ///                 std::hint::spin_loop();
    ///             }
    ///         })
    ///         .unwrap();
    ///     corio::go(|| ()).join().unwrap(); // runs while the spinner spins
    ///     spinner.join().unwrap();
    /// });
    /// ```
    ///
    /// # Safety
    ///
    /// At any instruction of the coroutine's own code (and of the Rust code it calls, std
    /// included) other than inside corio's operations, libc, the dynamic loader, the unwinder
    /// and the vDSO, the coroutine may be suspended and the other coroutines of its thread run
    /// before it continues. So between any two of its instructions it must not hold anything
    /// that another coroutine of its thread could touch and that is not made for that:
    ///
    /// - a borrow of a thread-local `RefCell` (another coroutine's `borrow_mut` panics), or
    ///   any thread-local state it expects to stay unchanged over a few instructions;
    /// - a re-entrant lock, such as `std::io::Stdout`'s: a `println!` preempted while it holds
    ///   the lock lets another coroutine of the same thread take it too (it is re-entrant on
    ///   the same thread) and interleave its output, and `RefCell` inside it then panics;
    /// - a `std::sync::Mutex` (or `RwLock`) guard, or a spin lock: another coroutine of the
    ///   same thread that takes it blocks the thread, for ever;
    /// - a non-libc global allocator with thread caches (jemalloc, mimalloc, …): its
    ///   allocation path may be preempted half-way through updating the thread's cache;
    ///   libc's `malloc` is safe, as it is never preempted;
    /// - anything else not written to be interrupted and re-entered on the same thread
    ///   (C libraries other than libc, code that reads the thread's panic count, …);
    /// - a signal handler installed with `SA_NODEFER` and an empty `sa_mask` that may run on
    ///   its stack (other handlers, which block their own signal, are never preempted).
    ///
    /// These are the same hazards as a signal handler's, reversed: here the *other*
    /// coroutines are the handler. Go can preempt anywhere because it owns its compiler (which
    /// marks unsafe points) and its allocator; Rust's compiler and std make no such promise.
    pub unsafe fn preemptible(mut self) -> TaskBuilder {
        self.preemptible = true;
        self
    }

    /// Starts the coroutine on the worker that holds the fewest live coroutines spawned with
    /// `spread` (the spawner's own worker on a tie), for coroutines that live long and run
    /// independently of their spawner, such as a server's connections.
    ///
    /// A stackful coroutine never changes thread once started, so the worker it starts on
    /// serves it for life. By default a child starts next to its spawner, and moves to another
    /// worker only when that one has been idle while the spawner's was busy
    /// (`docs/scheduler.md`, "Spawn: where a new task goes"): right for a chain of coroutines
    /// that pass values along, but connections that arrive while the server is idle all stay
    /// on the acceptor's worker, and share one core when they get busy together. `spread`
    /// balances them by count instead.
    ///
    /// Stackful only (async tasks move between workers at any `.await`); ignored for a
    /// `migratable` coroutine and on a runtime with one worker.
    ///
    /// ```
    /// let rt = corio::Runtime::builder().workers(2).build().unwrap();
    /// rt.run(|| {
    ///     let (tx, rx) = corio::chan::bounded::<()>(0);
    ///     let connections: Vec<_> = (0..4)
    ///         .map(|_| {
    ///             let rx = rx.clone();
    ///             corio::Builder::new()
    ///                 .spread()
    ///                 .spawn(move || {
    ///                     let _ = rx.recv(); // a long life
    ///                     std::thread::current().id()
    ///                 })
    ///                 .unwrap()
    ///         })
    ///         .collect();
    ///     drop(tx);
    ///     let threads: Vec<_> = connections.into_iter().map(|c| c.join().unwrap()).collect();
    ///     assert_eq!(threads.iter().filter(|&&t| t == threads[0]).count(), 2, "2 per worker");
    /// });
    /// ```
    pub fn spread(mut self) -> TaskBuilder {
        self.spread = true;
        self
    }

    /// Spawns a stackful coroutine running `f` on the current runtime (or the default one).
    ///
    /// # Errors
    ///
    /// If its stack cannot be had: a stack size above the maximum, the address space
    /// exhausted, or `vm.max_map_count` reached on kernels that need `mprotect` guards. The
    /// stack itself is taken when the coroutine first runs, on the worker that runs it; if
    /// stacks run out between this check and then, the coroutine fails and its `JoinHandle`
    /// returns a `JoinError` whose panic payload says why.
    #[track_caller]
    pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let location = Location::caller();
        super::with_current_or_default(|shared| spawn_stackful_at(shared, f, self, None, location))
    }

    /// Spawns a stackless task running `fut` on the current runtime (or the default one).
    /// The stack size, `migratable` and `spread` settings do not apply.
    #[track_caller]
    pub fn spawn_async<F>(self, fut: F) -> io::Result<JoinHandle<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let location = Location::caller();
        Ok(super::with_current_or_default(|shared| {
            spawn_stackless_at(shared, fut, self.name, None, location)
        }))
    }
}

/// Spawns a stackless task on `shared`.
#[track_caller]
pub(crate) fn spawn_stackless<F>(
    shared: &Arc<Shared>,
    fut: F,
    name: Option<Arc<str>>,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    spawn_stackless_at(shared, fut, name, None, Location::caller())
}

/// Spawns a stackless task on `shared`, as spawned at `location`; with `home`, pinned to that
/// worker from birth (a local task, `local.rs`).
pub(crate) fn spawn_stackless_at<F>(
    shared: &Arc<Shared>,
    fut: F,
    name: Option<Arc<str>>,
    home: Option<usize>,
    location: &'static Location<'static>,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let _no_preempt = super::preempt::guard();
    let id = corio_context::coroutine::next_id();
    bind_and_schedule(
        shared,
        Stackless::Pending(fut),
        if home.is_some() {
            Kind::LocalStackless
        } else {
            Kind::Stackless
        },
        id,
        name,
        location,
        home.map(Birth::home),
    )
}

/// Spawns a stackful coroutine on `shared`.
#[track_caller]
pub(crate) fn spawn_stackful<F, T>(
    shared: &Arc<Shared>,
    f: F,
    builder: TaskBuilder,
) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn_stackful_at(shared, f, builder, None, Location::caller())
}

/// Spawns a stackful coroutine on `shared`, as spawned at `location`; with `home`, pinned to
/// that worker from birth (a local coroutine, `local.rs`).
///
/// A closure larger than `corio_context::coroutine::BOX_CLOSURES_ABOVE` is boxed here, so
/// that the task and the wrappers it passes through on its way to running move a pointer
/// (see there: an unoptimised build copies a closure onto the coroutine's stack at every
/// move, and a 24 KiB capture overflowed the default 256 KiB stack).
pub(crate) fn spawn_stackful_at<F, T>(
    shared: &Arc<Shared>,
    f: F,
    builder: TaskBuilder,
    home: Option<usize>,
    location: &'static Location<'static>,
) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let stack_size = builder.stack_size.unwrap_or(shared.config.stack_size);
    // A constant branch: only the arm taken is instantiated (a task's whole machinery, per
    // closure type).
    if const { size_of::<F>() > corio_context::coroutine::BOX_CLOSURES_ABOVE } {
        // (A smaller closure fits in half of any stack.)
        corio_context::coroutine::check_closure_size(size_of::<F>(), stack_size)?;
        spawn_stackful_sized(shared, Box::new(f), builder, stack_size, home, location)
    } else {
        spawn_stackful_sized(shared, f, builder, stack_size, home, location)
    }
}

/// Where a task is pinned from birth, if anywhere: a local task's or coroutine's home, or a
/// [`TaskBuilder::spread`] coroutine's, which is counted there until it completes
/// (`Header::spread`).
#[derive(Clone, Copy)]
pub(crate) struct Birth {
    home: usize,
    spread: bool,
}

impl Birth {
    /// Pinned to `home` (a local task).
    pub(crate) fn home(home: usize) -> Birth {
        Birth {
            home,
            spread: false,
        }
    }
}

/// The home of a new `spread` coroutine: the worker with the fewest live ones (the spawner's
/// own on a tie), counted there from now until the task completes (`Shared::spread_done`).
/// Two spawners racing may both pick the same worker; the counts stay right and the next
/// spawns even it out.
fn spread_home(shared: &Arc<Shared>) -> Birth {
    let workers = &shared.workers[..shared.config.workers];
    let own = super::context::with_worker(|w| {
        w.filter(|w| Arc::ptr_eq(w.shared(), shared))
            .map(|w| w.index())
            .filter(|&i| i < workers.len())
    });
    let live = |i: usize| workers[i].spread_live.load(Ordering::Relaxed);
    let mut home = own.unwrap_or(0);
    for i in 0..workers.len() {
        if live(i) < live(home) {
            home = i;
        }
    }
    workers[home].spread_live.fetch_add(1, Ordering::Relaxed);
    Birth { home, spread: true }
}

/// [`spawn_stackful_at`] with the closure boxed or not, and the stack size decided.
fn spawn_stackful_sized<F, T>(
    shared: &Arc<Shared>,
    f: F,
    builder: TaskBuilder,
    stack_size: usize,
    home: Option<usize>,
    location: &'static Location<'static>,
) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let _no_preempt = super::preempt::guard();
    // The stack is taken when the coroutine first runs (see `Stackful`); check now that one
    // can be had, so that exhaustion is an error here rather than a failed task later.
    corio_context::stack::ensure_available(stack_size)?;
    let id = corio_context::coroutine::next_id();
    let config = StackConfig {
        stack_size,
        preemptible: (builder.preemptible && super::preempt::enable()) || shared.config.preemptible,
    };
    let kind = Kind::Stackful {
        migratable: builder.migratable,
    };
    // `spread` is decided here, after a large closure was boxed, and kept in the task's
    // header rather than in a wrapper around the closure: a wrapper made before the boxing
    // overflowed a spawner's stack in an unoptimised build (a 24 KiB capture,
    // `may_review_contract`), and one made here instantiated the task's whole machinery a
    // second time for every closure type.
    let birth =
        if builder.spread && home.is_none() && !builder.migratable && shared.config.workers > 1 {
            Some(spread_home(shared))
        } else {
            home.map(Birth::home)
        };
    let body = Stackful::new(f, config);
    Ok(bind_and_schedule(
        shared,
        body,
        kind,
        id,
        builder.name,
        location,
        birth,
    ))
}

/// Spawns a closure on the blocking pool of `shared`.
#[track_caller]
pub(crate) fn spawn_blocking_task<F, T>(shared: &Arc<Shared>, f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let _no_preempt = super::preempt::guard();
    let id = corio_context::coroutine::next_id();
    let location = Location::caller();
    let body = crate::task::stackless::Blocking(Some(f));
    bind_and_schedule(shared, body, Kind::Blocking, id, None, location, None)
}

fn bind_and_schedule<B: Body>(
    shared: &Arc<Shared>,
    body: B,
    kind: Kind,
    id: u64,
    name: Option<Arc<str>>,
    location: &'static Location<'static>,
    birth: Option<Birth>,
) -> JoinHandle<B::Output> {
    // Spawning is a preemption point, before the task exists (a cancellation raised here
    // leaves nothing half-spawned).
    crate::block_on::preemption_point();
    // Only the body's move into its block depends on the task's type; the rest is
    // `bind_new`'s, compiled once.
    let ptr = Cell::allocate(body);
    // SAFETY: a block `Cell::<B>::allocate` just made, with its vtable.
    unsafe {
        bind_new(
            shared,
            ptr,
            Cell::<B>::vtable(),
            kind,
            id,
            name,
            location,
            birth,
        )
    };
    // SAFETY: a new task has three references (see `state.rs`): one each for the list, the
    // queue and the join handle, which is ours; `queue_new` took the other two.
    unsafe { JoinHandle::from_raw(ptr) }
}

/// Writes a new task's header, binds it to the owned-tasks list and queues it; cancels it if
/// the runtime refused it (shutting down).
///
/// # Safety
/// As [`Header::init`]'s.
#[allow(
    clippy::too_many_arguments,
    reason = "bind_and_schedule's arguments, passed on"
)]
unsafe fn bind_new(
    shared: &Arc<Shared>,
    ptr: NonNull<Header>,
    vtable: &'static Vtable,
    kind: Kind,
    id: u64,
    name: Option<Arc<str>>,
    location: &'static Location<'static>,
    birth: Option<Birth>,
) {
    let spread = birth.is_some_and(|b| b.spread);
    // One look at this thread's worker: the anchor the task takes (`Anchor`) and, below,
    // where it is queued.
    let refused = super::context::with_worker(|worker| {
        let worker = worker.filter(|w| Arc::ptr_eq(w.shared(), shared));
        let anchor = match worker {
            Some(w) => w.anchor().clone(),
            None => shared.outside_anchor(),
        };
        // SAFETY: per the caller.
        unsafe { Header::init(ptr, vtable, kind, spread, id, anchor, name, location) };
        queue_new(shared, worker, ptr, kind, birth)
    });
    if let Some(task) = refused {
        // The runtime is shutting down: the task is cancelled without running. Outside the
        // look at the worker: dropping the body runs the user's destructors, which may suspend.
        let _ = task.shutdown(); // it never ran: it cannot yield
    }
}

/// The part of [`bind_new`] after the header is written.
fn queue_new(
    shared: &Arc<Shared>,
    worker: Option<&super::worker::WorkerCtx>,
    ptr: NonNull<Header>,
    kind: Kind,
    birth: Option<Birth>,
) -> Option<Task> {
    // Counted where the anchor is: on the spawning worker, else runtime-wide.
    match worker {
        Some(w) => w.count_spawn(),
        None => {
            shared.metrics.spawned.fetch_add(1, Ordering::Relaxed);
        }
    }
    if let Some(Birth { home, .. }) = birth {
        // SAFETY: the task was just allocated and nobody else has it yet.
        let header = unsafe { ptr.as_ref() };
        // Release: pairs with the Acquire in `Header::pinned_home` (the owned list's lock and
        // the queue that publish the task order it as well).
        header.home.store(home as u32, Ordering::Release);
    }
    // SAFETY: the list's and the queue's references of the new task (see `bind_and_schedule`).
    let (task, notified) = unsafe { (Task::from_raw(ptr), Notified::from_raw(ptr)) };
    match shared.owned.bind(task) {
        Ok(()) => match kind {
            Kind::Blocking => shared.blocking.push(shared, notified),
            // A new task goes to the spawning worker's spawn slot (`sched/slot.rs`): run there
            // when the spawner blocks, stolen by others only after a grace period; from
            // elsewhere, to the global queue (or the home's inbox of a local task).
            _ => match worker {
                Some(w) => w.schedule_spawned(notified),
                None => shared.schedule_remote(notified),
            },
        },
        Err(task) => {
            drop(notified);
            return Some(task);
        }
    }
    None
}
