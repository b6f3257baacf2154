//! The memory of a task: one allocation holding a header, the future (or its output) and a
//! trailer.
//!
//! ```text
//!  Cell<B> (#[repr(C)], one Box)
//!  ┌────────────────────────────┐ ← NonNull<Header>: what every handle points to
//!  │ Header                     │  state word, vtable, id, kind, home worker, scheduler,
//!  │                            │  owned-list links, name, spawn location
//!  ├────────────────────────────┤
//!  │ Core<B>: Stage             │  Running(body) → Finished(Result<Output, JoinError>) → Consumed
//!  ├────────────────────────────┤
//!  │ Trailer                    │  the JoinHandle's waker
//!  └────────────────────────────┘
//! ```
//!
//! The header is not generic, so schedulers, wakers and lists handle every task the same way;
//! the vtable reaches the generic parts. Stackless and stackful tasks differ only in their body
//! (`B`): a future, or a coroutine whose poll resumes its stack (`stackful.rs`).

use std::any::Any;
use std::cell::UnsafeCell;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};

use super::JoinError;
use super::state::State;
use crate::runtime::Anchor;

/// A panic payload.
pub(crate) type Payload = Box<dyn Any + Send + 'static>;

/// What kind of coroutine a task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A future, polled on any worker.
    Stackless,
    /// A future pinned to its spawning worker from birth (`spawn_local`; `home` is set at
    /// spawn).
    LocalStackless,
    /// A coroutine with its own stack; pinned to the worker that first resumes it unless
    /// `migratable`.
    Stackful { migratable: bool },
    /// A closure for the blocking pool.
    Blocking,
}

/// No home worker yet.
pub(crate) const NO_HOME: u32 = u32::MAX;

/// The non-generic part of every task (80 bytes: it is in every task's allocation).
#[repr(C)]
pub(crate) struct Header {
    pub(crate) state: State,
    pub(crate) vtable: &'static Vtable,
    pub(crate) id: u64,
    /// The runtime that schedules this task, through the anchor of the worker that spawned it
    /// (`runtime::Anchor`).
    pub(crate) scheduler: Arc<Anchor>,
    /// Links in the owned-tasks list (the shard of the id's run, `owned::shard_of`); guarded by
    /// that shard's lock.
    pub(crate) owned: UnsafeCell<Links>,
    /// The worker a started stackful coroutine is pinned to, or `NO_HOME`. Written once, by
    /// the worker that first resumes it, before the resume (Release) — or, for a local task,
    /// by `spawn` before the task is published (`runtime/local.rs`); read by `schedule`
    /// (Acquire). Every `Notified` created after that first poll is ordered after the write by
    /// the state word's AcqRel transitions.
    pub(crate) home: AtomicU32,
    pub(crate) kind: Kind,
    /// A [`TaskBuilder::spread`](crate::TaskBuilder::spread) coroutine: counted in its home
    /// worker's `spread_live` until it completes (`harness::complete`).
    pub(crate) spread: bool,
    pub(crate) name: Option<Arc<str>>,
    pub(crate) location: &'static Location<'static>,
}

/// A task, borrowed for `'a` through its own pointer: what a poll hands the body, the task's
/// waker and the thread's task context. It reads as a `&Header` (it derefs to one), but
/// [`TaskRef::ptr`] keeps the pointer every handle of the task holds, whose provenance is the
/// whole task's (`Cell::allocate`'s block). A pointer rebuilt from a `&Header` would cover
/// the header's bytes alone (Stacked Borrows), and a waker or a direct switch made from it
/// would reach the body and the trailer through it: undefined behaviour (docs/soundness.md,
/// "Task pointers"; `task/tests.rs` runs the harness under Miri).
#[derive(Clone, Copy)]
pub(crate) struct TaskRef<'a> {
    ptr: NonNull<Header>,
    _task: std::marker::PhantomData<&'a Header>,
}

impl<'a> TaskRef<'a> {
    /// # Safety
    /// `ptr` must be a live task's pointer as its handles hold it, and the task must stay
    /// alive for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn new(ptr: NonNull<Header>) -> TaskRef<'a> {
        TaskRef {
            ptr,
            _task: std::marker::PhantomData,
        }
    }

    /// The task's pointer, with the whole task's provenance.
    #[inline(always)]
    pub(crate) fn ptr(self) -> NonNull<Header> {
        self.ptr
    }

    /// The header, for as long as the task is borrowed.
    #[inline(always)]
    pub(crate) fn header(self) -> &'a Header {
        // SAFETY: alive for `'a`, per `new`'s contract.
        unsafe { self.ptr.as_ref() }
    }
}

impl std::ops::Deref for TaskRef<'_> {
    type Target = Header;

    #[inline(always)]
    fn deref(&self) -> &Header {
        self.header()
    }
}

/// A task's cell, borrowed for `'a` through the task's own pointer, for the harness's
/// functions: it derefs to `&Cell<B>` for each use, but is not itself a reference. A
/// reference passed as an argument must stay valid until the function returns (Stacked and
/// Tree Borrows "protect" it), and a harness function may free the task before it returns:
/// the completion of a task nobody else refers to any more (a dropped `JoinHandle`, a detached
/// task aborted or shut down) deallocates it in `finish`, under the frames of `poll`,
/// `end_poll` and `complete`. With `&Cell<B>` and `&Header` arguments that was undefined
/// behaviour, reported by Miri in `task/tests.rs` (`review_a_detached_task_*`; found by the
/// review of 2026-12-07). So no harness function takes the cell or its header by reference;
/// each derefs for as long as one use lasts, and never after the task may have been freed.
pub(crate) struct CellRef<'a, B: Body> {
    ptr: NonNull<Cell<B>>,
    _task: std::marker::PhantomData<&'a Cell<B>>,
}

impl<B: Body> Clone for CellRef<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B: Body> Copy for CellRef<'_, B> {}

impl<'a, B: Body> CellRef<'a, B> {
    /// # Safety
    /// `ptr` must be a live `Cell<B>`'s pointer as its handles hold it, alive while the
    /// `CellRef` is dereferenced (the caller's reference to the task keeps it so until it is
    /// given up).
    #[inline(always)]
    pub(crate) unsafe fn new(ptr: NonNull<Header>) -> CellRef<'a, B> {
        CellRef {
            ptr: ptr.cast(),
            _task: std::marker::PhantomData,
        }
    }
}

impl<B: Body> std::ops::Deref for CellRef<'_, B> {
    type Target = Cell<B>;

    #[inline(always)]
    fn deref(&self) -> &Cell<B> {
        // SAFETY: alive while dereferenced, per `new`'s contract.
        unsafe { self.ptr.as_ref() }
    }
}

/// Intrusive doubly linked list pointers. A task is in its shard's list iff `prev` is set or
/// it is the list's head.
#[derive(Default)]
pub(crate) struct Links {
    pub(crate) prev: Option<NonNull<Header>>,
    pub(crate) next: Option<NonNull<Header>>,
}

/// What a task runs: a future (stackless) or a coroutine (stackful), behind one interface.
pub(crate) trait Body: Send + 'static {
    type Output: Send + 'static;

    /// Makes progress. A panic is caught inside and reported as `Err(payload)`.
    fn poll_body(
        &mut self,
        task: TaskRef<'_>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::Output, Payload>>;

    /// Cancels the body. `Ready` once it is gone (dropped, or its stack unwound); `Pending` if
    /// it blocked while unwinding and must be polled again when woken. `Some(payload)` if a
    /// destructor panicked.
    fn poll_cancel(&mut self, task: TaskRef<'_>, cx: &mut Context<'_>) -> Poll<Option<Payload>>;

    /// After a `Pending` poll: whether the body only yielded (`corio::yield_now` in a pinned
    /// coroutine) and should run again after the others, without going through the waker.
    #[inline]
    fn take_yielded(&mut self) -> bool {
        false
    }

    /// After a `Pending` poll of a stackful body: `Some` if a direct switch
    /// (`WorkerCtx::direct_yield`) handed the turn to other coroutines and the last of them,
    /// not this one, switched back to the poll's frame; that task's `claim_switched` takes it.
    #[inline]
    fn take_switched(&mut self) -> Option<super::stackful::Switched> {
        None
    }

    /// Takes the switch back of a coroutine that a direct switch resumed (see
    /// `take_switched`), as its own poll would have.
    fn claim_switched(
        &mut self,
        _back: corio_context::coroutine::Detached,
    ) -> Poll<Result<Self::Output, Payload>> {
        unreachable!("corio: only a stackful task is switched to directly")
    }

    /// For a started stackful body: its coroutine's context (what a direct switch to it needs).
    fn stackful_ctx(&self) -> Option<&super::stackful::StackfulCtx> {
        None
    }
}

pub(crate) enum Stage<B: Body> {
    Running(B),
    Finished(Result<B::Output, JoinError>),
    Consumed,
}

#[repr(C)]
pub(crate) struct Cell<B: Body> {
    pub(crate) header: Header,
    pub(crate) core: Core<B>,
    pub(crate) trailer: Trailer,
}

pub(crate) struct Core<B: Body> {
    /// Owned by whoever holds RUNNING, or after COMPLETE as described in `state.rs`.
    pub(crate) stage: UnsafeCell<Stage<B>>,
}

pub(crate) struct Trailer {
    /// The JoinHandle's waker; owned as described in `state.rs` (`JOIN_WAKER`).
    pub(crate) waker: UnsafeCell<Option<Waker>>,
}

impl Trailer {
    /// # Safety
    /// The caller must own the waker field (see `state.rs`).
    pub(crate) unsafe fn set_waker(&self, waker: Option<Waker>) {
        // SAFETY: per the caller's contract nobody else touches the field now.
        unsafe { *self.waker.get() = waker };
    }

    /// # Safety
    /// The caller must own the waker field.
    pub(crate) unsafe fn will_wake(&self, waker: &Waker) -> bool {
        // SAFETY: per the caller's contract.
        unsafe {
            (*self.waker.get())
                .as_ref()
                .is_some_and(|w| w.will_wake(waker))
        }
    }

    /// # Safety
    /// The caller must own the waker field (the task side, with JOIN_WAKER set).
    pub(crate) unsafe fn wake_join(&self) {
        // SAFETY: per the caller's contract.
        match unsafe { &*self.waker.get() } {
            Some(waker) => waker.wake_by_ref(),
            None => panic!("corio: the join waker is missing"),
        }
    }
}

/// How a run of a task ended, for the worker that ran it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub(crate) enum RunResult {
    /// Nothing more for the worker to do: the task completed, went idle, or was requeued.
    Done,
    /// A pinned coroutine yielded: the worker must queue it back as `Runnable::Running` (the
    /// caller's reference is now that `Running`'s).
    Yielded,
}

/// The generic operations of a task, reached from its header.
pub(crate) struct Vtable {
    /// Runs the task once (see `harness.rs`); consumes a `Notified` reference.
    pub(crate) poll: unsafe fn(NonNull<Header>) -> RunResult,
    /// Frees the allocation.
    pub(crate) dealloc: unsafe fn(NonNull<Header>),
    /// Moves the output into `*dst` (a `Poll<Result<T, JoinError>>`) if it is ready,
    /// registering the waker otherwise.
    pub(crate) try_read_output: unsafe fn(NonNull<Header>, *mut (), &Waker),
    /// Drops what the stage holds (the body or the output), catching a panicking `Drop`;
    /// for the task-independent parts of `harness.rs`, which cannot name the stage's type.
    pub(crate) drop_stage: unsafe fn(NonNull<Header>),
    /// Where the [`Trailer`] is, in bytes from the header (it follows the body, whose size
    /// depends on the task's type).
    pub(crate) trailer_offset: usize,
    /// Cancels the task for shutdown, hands a started pinned coroutine back for its home, or
    /// leaks what is left of it (see `harness::shutdown`).
    pub(crate) shutdown: unsafe fn(NonNull<Header>, super::harness::ShutdownMode) -> RunResult,
    /// Runs a task that yielded and is still RUNNING (see `raw::Running`).
    pub(crate) resume_running: unsafe fn(NonNull<Header>) -> RunResult,
    /// Cancels a task that yielded and is still RUNNING, for shutdown; with `true` leaks it
    /// instead (it is not on its home thread).
    pub(crate) shutdown_running: unsafe fn(NonNull<Header>, bool),
    /// Finishes the poll of a coroutine a direct switch resumed, when it switched back to
    /// another task's poll frame (see `harness::claim_switched`).
    pub(crate) claim_switched:
        unsafe fn(NonNull<Header>, corio_context::coroutine::Detached) -> RunResult,
    /// The context of a started stackful coroutine, or null (see `Body::stackful_ctx`).
    pub(crate) stackful_ctx: unsafe fn(NonNull<Header>) -> *const super::stackful::StackfulCtx,
}

impl<B: Body> Cell<B> {
    /// Allocates a task's block and writes its body and trailer; the header is left for
    /// [`Header::init`], which does not depend on the task's type (compiled once, not once per
    /// spawned closure or future type).
    pub(crate) fn allocate(body: B) -> NonNull<Header> {
        // The block first, then the fields written into it in place: building the cell on the
        // stack and moving it in cost one more `memcpy` of the cell per spawn (callgrind:
        // ~30 instructions of 2,430 per stackful spawn+join).
        let ptr = super::alloc::allocate(std::alloc::Layout::new::<Cell<B>>()).cast::<Cell<B>>();
        let cell = ptr.as_ptr();
        // SAFETY: a fresh block with the layout of `Cell<B>`; each field is written once
        // through a raw pointer, never read before.
        unsafe {
            (&raw mut (*cell).core).write(Core {
                stage: UnsafeCell::new(Stage::Running(body)),
            });
            (&raw mut (*cell).trailer).write(Trailer {
                waker: UnsafeCell::new(None),
            });
        }
        ptr.cast()
    }

    /// The vtable of tasks of this type.
    pub(crate) fn vtable() -> &'static Vtable {
        vtable::<B>()
    }
}

impl Header {
    /// Writes the header of a task [`Cell::allocate`] made, with three references (see
    /// `state.rs`).
    ///
    /// # Safety
    /// `ptr` must be a block from `Cell::<B>::allocate` whose header was never written, and
    /// `vtable` must be `Cell::<B>::vtable()`.
    #[allow(
        clippy::too_many_arguments,
        reason = "the header's fields, each given once"
    )]
    pub(crate) unsafe fn init(
        ptr: NonNull<Header>,
        vtable: &'static Vtable,
        kind: Kind,
        spread: bool,
        id: u64,
        scheduler: Arc<Anchor>,
        name: Option<Arc<str>>,
        location: &'static Location<'static>,
    ) {
        // SAFETY: per the caller, the header's place (the cell's first field: `repr(C)`) is
        // allocated and unwritten.
        unsafe {
            ptr.as_ptr().write(Header {
                state: State::new(),
                vtable,
                id,
                kind,
                spread,
                home: AtomicU32::new(NO_HOME),
                scheduler,
                owned: UnsafeCell::new(Links::default()),
                name,
                location,
            });
        }
    }

    /// The trailer of the task `ptr` points to. From the task's pointer, not from a `&Header`:
    /// a reference to the header covers only the header's bytes, and reaching past them through
    /// it would be undefined behaviour (Stacked Borrows); the pointer's provenance is the whole
    /// cell's (`Cell::allocate`'s block).
    ///
    /// # Safety
    /// `ptr` must be a live task with that provenance (every `NonNull<Header>` the task's
    /// handles hold), and the trailer must not be used after the task is deallocated.
    #[inline]
    pub(crate) unsafe fn trailer<'a>(ptr: NonNull<Header>) -> &'a Trailer {
        // SAFETY: a header is the first field of a `repr(C)` `Cell<B>`, whose trailer is
        // `vtable.trailer_offset` bytes further (`offset_of!` on that `Cell<B>`), inside the
        // allocation `ptr` may reach; alive per the caller.
        unsafe {
            let offset = ptr.as_ref().vtable.trailer_offset;
            &*ptr.as_ptr().cast::<u8>().add(offset).cast::<Trailer>()
        }
    }
}

fn vtable<B: Body>() -> &'static Vtable {
    &Vtable {
        poll: super::harness::poll::<B>,
        dealloc: super::harness::dealloc::<B>,
        try_read_output: super::harness::try_read_output::<B>,
        drop_stage: super::harness::drop_stage::<B>,
        trailer_offset: std::mem::offset_of!(Cell<B>, trailer),
        shutdown: super::harness::shutdown::<B>,
        resume_running: super::harness::resume_running::<B>,
        shutdown_running: super::harness::shutdown_running::<B>,
        claim_switched: super::harness::claim_switched::<B>,
        stackful_ctx: super::harness::stackful_ctx::<B>,
    }
}

impl Header {
    /// The home worker of a pinned task: a coroutine that has started and is not migratable,
    /// or a local task (`go_local`/`spawn_local`, pinned from birth).
    #[inline]
    pub(crate) fn pinned_home(&self) -> Option<usize> {
        match self.kind {
            Kind::Stackless | Kind::Stackful { migratable: true } | Kind::Blocking => None,
            Kind::Stackful { migratable: false } | Kind::LocalStackless => {
                let home = self.home.load(Ordering::Acquire);
                (home != NO_HOME).then_some(home as usize)
            }
        }
    }

    /// The task's runtime, for a call that hands the task's last reference of the caller's
    /// to a run queue (a wake by value, a poll that ends in a yield): an `Arc` on the caller's
    /// stack that owns no count. Once the task is queued another worker may run it to the end
    /// and free it, and with it its `Anchor` if the task held the anchor's last count (a task
    /// spawned through a `Handle` after its `Runtime` was dropped takes an anchor of its own):
    /// a `&Arc<Shared>` into the anchor, passed as `self`, must stay valid until the call
    /// returns (Stacked and Tree Borrows protect it), and would not. The runtime itself outlives
    /// the call, as before: the scheduling functions clone the `Arc` before they queue off a
    /// worker, and a worker holds its own (`Shared::schedule_woken`).
    #[inline(always)]
    pub(crate) fn runtime_for_handoff(
        &self,
    ) -> std::mem::ManuallyDrop<Arc<crate::runtime::Shared>> {
        // SAFETY: a bitwise copy of the anchor's `Arc`, never dropped: it takes no count and
        // gives none back; its clones take their own. The `Shared` it points to is kept alive
        // as described above for as long as the copy is used.
        std::mem::ManuallyDrop::new(unsafe { std::ptr::read(&self.scheduler.shared) })
    }
}

#[cfg(all(test, not(loom)))]
mod size_tests {
    use super::*;

    #[test]
    fn the_header_stays_small() {
        assert!(
            size_of::<Header>() <= 80,
            "Header is {} bytes",
            size_of::<Header>()
        );
    }
}
