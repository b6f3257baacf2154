//! `task_local!`: a value per coroutine or task, set for the length of a scope.
//!
//! # The problem
//!
//! Libraries keep per-request state (a trace id, a deadline, a transaction) in a thread-local.
//! Under corio that is wrong twice over: many coroutines share one worker thread, and resumes
//! do not nest — coroutine A may suspend in the middle of a scope and coroutine B then runs on
//! the same thread, where a thread-local that A set (and a drop guard would restore only when
//! A resumes) would show B A's value. The value has to belong to the task, not to the thread.
//!
//! # The mechanism
//!
//! A scope pushes an entry `(key id, pointer to the value, execution context)` on a *scope
//! stack*, and pops it when the scope ends (by return or unwind); [`LocalKey::with`] reads the
//! newest entry of its key opened in the execution context that reads (see "Execution
//! contexts" below). Which scope stack depends on what is running ([`context::here`]):
//!
//! | running | scope stack | why it is per task |
//! |---|---|---|
//! | a task's stackful coroutine, on its own stack | in its `StackfulCtx`, in the started coroutine's `Live` block | the context the worker publishes while the coroutine runs is the coroutine's own, and it is unpublished when the coroutine suspends: another coroutine of the thread sees its own stack |
//! | an async task's poll, a plain thread, a blocking-pool closure | a thread-local | nothing else runs on the thread until the poll (or the thread's code) returns, and every entry pushed during a poll is popped before it returns |
//! | a bare `Coroutine`, whoever resumes it | the same thread-local | its entries carry its own stack slot (below), and it never leaves its thread (it is `!Send`): wherever it is resumed from, it finds the scopes it left open |
//!
//! [`LocalKey::sync_scope`] keeps its value on the caller's stack (a coroutine's stack
//! outlives its suspensions, and the entry is popped before the frame ends).
//! [`LocalKey::scope`] returns a future that keeps its value inside itself and pushes the
//! entry only for the length of each poll of the inner future, so a task that moves between
//! workers takes its value with it. Polled inside a stackful coroutine (`corio::block_on`), it
//! pushes onto that coroutine's stack of scopes; if the inner future suspends the coroutine
//! mid-poll (a blocking-style call inside a poll), the entry stays with the coroutine.
//!
//! Rejected: a thread-local per key restored by a guard (tokio's form, correct only where
//! polls cannot be interrupted: here it leaks a value to every coroutine that runs while the
//! owner is suspended inside the scope); a map in every task header (it would grow the
//! 80-byte header that every spawn pays for, for a feature few tasks use).
//!
//! # Execution contexts
//!
//! A bare `corio::coroutine::Coroutine` is not a task, but it is another *stack*, and resumes
//! do not nest: it may suspend inside a scope, or inside [`LocalKey::with`],
//! and be resumed (or dropped) after its resumer's code has moved on. `with` lends a plain
//! `&T`, which is sound only if the scope owning the value cannot end while the closure runs,
//! i.e. if the scope is an outer frame *of the same stack*. So each entry records the
//! execution context that opened it (`corio_context::stack::current_context`: the coroutine
//! stack slot of the opening frame, or 0 for a thread's own stack), and `with` sees only the
//! entries of the context it runs in. A bare coroutine therefore sees only its own scopes, and
//! its resumer does not see those it leaves open while suspended. (Sharing them, the first
//! version, let either side read the other's value after it was dropped: a coroutine
//! suspended inside `with` while its resumer ended the scope, or a resumer inside `with` while
//! the coroutine it resumed ended its own; `tests/rt_task_local.rs`,
//! `a_bare_coroutine_suspended_inside_with_*` and `a_scope_a_bare_coroutine_left_open_cannot_*`.)
//! A bare coroutine keeps its entries on its thread's stack of scopes, whoever resumes it:
//! until 2026-12-07 they went on the stack of the task that resumed it when it opened them,
//! and inside its own open scope `with` said "not set" once another task resumed it
//! (`a_bare_coroutine_sees_the_scope_it_left_open_whoever_resumes_it`).
//!
//! # Invariants
//!
//! - An entry's pointer is valid while the entry is on a stack: the scope that pushed it
//!   outlives it and pops it (by identity) before the value moves or drops.
//! - An entry is visible only to code running on the stack of the frame that opened it; since
//!   the entry is popped before that frame ends, such code runs in a frame nested inside it,
//!   and the value outlives whatever `with` lends.
//! - A scope pops its entry from the scope stack it pushed it on, which its guard keeps (an
//!   `Rc`), not from whatever stack belongs to the code that runs when it closes. The two
//!   differed, before bare coroutines' entries went to the thread's stack, for a bare
//!   coroutine that left a scope open while suspended and was then resumed or dropped (its
//!   stack unwound) by another task of the thread, or by an async task's poll: popping from
//!   the closer's stack left the entry on the opener's, where a later coroutine given the same
//!   stack slot would have found it pointing to a dropped value
//!   (`a_scope_a_bare_coroutine_left_open_*`). The guard keeps the rule that holds either way.
//! - A scope stack is only touched by code of the thread it belongs to (a `migratable`
//!   coroutine's, by the thread that runs it at the time): the caller of the `unsafe`
//!   `migratable` promises not to leave a bare coroutine that has a task-local scope open on
//!   the thread it leaves.

use std::cell::{OnceCell, RefCell};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use crate::runtime::context::{self, Here};

/// One open scope: the key's id, the address of its value, and the execution context that
/// opened it (module docs, "Execution contexts").
pub(crate) type ScopeEntry = (usize, *const (), usize);

/// The entries of one scope stack, shared with the guards of the scopes open on it (see the
/// module docs, "Invariants").
type Entries = Rc<RefCell<Vec<ScopeEntry>>>;

/// The scope stack of a coroutine or of a thread, made on its first scope (see the module
/// docs): one pointer in every coroutine's context, and no allocation for one that never opens
/// a scope.
pub(crate) type ScopeStack = OnceCell<Entries>;

thread_local! {
    /// The scope stack of whatever runs on this thread that is not a stackful coroutine.
    static THREAD_SCOPES: ScopeStack = const { OnceCell::new() };
}

/// Runs `f` with the scope stack of the code running here.
///
/// While the thread's thread-locals are being destroyed (a scoped future kept in another
/// thread-local is dropped then), the thread's stack may be gone: `f` then gets an empty stack
/// of its own, so a scope opened there is seen by nobody but does not panic, which in a
/// thread-local's destructor would abort the process.
fn with_scopes<R>(f: impl FnOnce(&ScopeStack) -> R) -> R {
    match context::here() {
        Here::Stackful(ctx) if ctx.runs_on_own_stack() => f(ctx.task_locals()),
        // An async task's poll, a plain thread, or a bare coroutine, whoever resumed it.
        Here::Stackful(_) | Here::Stackless | Here::Thread => {
            let mut f = Some(f);
            match THREAD_SCOPES.try_with(|scopes| (f.take().expect("called once"))(scopes)) {
                Ok(r) => r,
                Err(_) => (f.take().expect("not called"))(&ScopeStack::new()),
            }
        }
    }
}

/// Ids of keys; 0 means "not assigned yet".
static NEXT_KEY_ID: AtomicUsize = AtomicUsize::new(1);

/// Declares task-local keys: values that each coroutine or task sets for a scope of its own
/// code, like tokio's `task_local!`.
///
/// ```
/// corio::task_local! {
///     static REQUEST_ID: u64;
/// }
///
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// rt.run(|| {
///     REQUEST_ID.sync_scope(7, || {
///         corio::yield_now(); // other coroutines run here and do not see 7
///         assert_eq!(REQUEST_ID.get(), 7);
///     });
///     assert!(REQUEST_ID.try_with(|_| ()).is_err());
/// });
/// let v = rt.block_on(REQUEST_ID.scope(9, async { REQUEST_ID.with(|id| *id) }));
/// assert_eq!(v, 9);
/// ```
#[macro_export]
macro_rules! task_local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty; $($rest:tt)*) => {
        $(#[$attr])*
        $vis static $name: $crate::LocalKey<$t> = $crate::LocalKey::new();
        $crate::task_local!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty) => {
        $(#[$attr])*
        $vis static $name: $crate::LocalKey<$t> = $crate::LocalKey::new();
    };
}

/// A key for a task-local value, declared with [`task_local!`](crate::task_local).
///
/// The value is set for the length of [`scope`](LocalKey::scope) (async) or
/// [`sync_scope`](LocalKey::sync_scope) (blocking-style) and seen only by the coroutine or
/// task that set it — never by others that run on the same thread meanwhile. A bare
/// [`Coroutine`](crate::coroutine::Coroutine) is a context of its own here: it does not see
/// the scopes of the code that resumes it, nor that code the scopes it leaves open while
/// suspended (module docs of `task_local.rs`, "Execution contexts").
pub struct LocalKey<T: 'static> {
    /// Assigned on first use from `NEXT_KEY_ID`; the address of a static is not used because
    /// the key's type carries no data of its own.
    id: AtomicUsize,
    /// The key names values of type `T`; `fn() -> T` keeps the key `Send + Sync` for any `T`
    /// (it holds no `T`).
    _value: PhantomData<fn() -> T>,
}

/// The error of [`LocalKey::try_with`]: no scope of this key is open in the running task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessError(());

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("task-local value not set in this coroutine or task")
    }
}

impl std::error::Error for AccessError {}

impl<T: 'static> LocalKey<T> {
    #[doc(hidden)]
    pub const fn new() -> LocalKey<T> {
        LocalKey {
            id: AtomicUsize::new(0),
            _value: PhantomData,
        }
    }

    fn id(&self) -> usize {
        // Relaxed: the id is the only datum, and the compare-exchange picks one winner that
        // every later load sees (coherence of a single location).
        let id = self.id.load(Ordering::Relaxed);
        if id != 0 {
            return id;
        }
        let new = NEXT_KEY_ID.fetch_add(1, Ordering::Relaxed);
        match self
            .id
            .compare_exchange(0, new, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => new,
            Err(existing) => existing,
        }
    }

    /// Runs `f` with `value` set for the running coroutine (or thread) and returns its result.
    /// `f` may suspend (blocking-style calls): the value stays with this coroutine.
    ///
    /// ```
    /// corio::task_local! { static DEPTH: u32; }
    ///
    /// let outer = DEPTH.sync_scope(1, || {
    ///     let inner = DEPTH.sync_scope(2, || DEPTH.get());
    ///     (DEPTH.get(), inner)
    /// });
    /// assert_eq!(outer, (1, 2));
    /// ```
    pub fn sync_scope<F, R>(&'static self, value: T, f: F) -> R
    where
        F: FnOnce() -> R,
    {
        let _open = ScopeGuard::open(self.id(), (&raw const value).cast());
        f()
    }

    /// Wraps `future` so that `value` is set while it is polled, in whichever task polls it.
    ///
    /// ```
    /// corio::task_local! { static USER: &'static str; }
    ///
    /// let rt = corio::Runtime::builder().workers(2).build().unwrap();
    /// let name = rt.block_on(async {
    ///     corio::spawn(USER.scope("ann", async {
    ///         corio::yield_now_async().await; // may move to another worker
    ///         USER.get()
    ///     }))
    ///     .await
    ///     .unwrap()
    /// });
    /// assert_eq!(name, "ann");
    /// ```
    pub fn scope<F: Future>(&'static self, value: T, future: F) -> TaskLocalFuture<T, F> {
        TaskLocalFuture {
            key: self,
            value,
            future: ManuallyDrop::new(future),
        }
    }

    /// Runs `f` with a reference to the value of the innermost open scope.
    ///
    /// # Panics
    ///
    /// If no scope of this key is open in the running coroutine or task; see
    /// [`try_with`](LocalKey::try_with).
    #[track_caller]
    pub fn with<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&T) -> R,
    {
        match self.try_with(f) {
            Ok(r) => r,
            Err(_) => panic!(
                "corio: task-local value not set: call this inside `KEY.scope(value, future)` or \
                 `KEY.sync_scope(value, || ..)` in the same coroutine or task"
            ),
        }
    }

    /// Like [`with`](LocalKey::with), or `Err` if no scope of this key is open here.
    pub fn try_with<F, R>(&'static self, f: F) -> Result<R, AccessError>
    where
        F: FnOnce(&T) -> R,
    {
        let id = self.id();
        let found = with_scopes(|scopes| {
            let scopes = scopes.get()?;
            let here = corio_context::stack::current_context();
            scopes
                .borrow()
                .iter()
                .rev()
                .find(|&&(key, _, context)| key == id && context == here)
                .map(|&(_, ptr, _)| ptr)
        });
        match found {
            // SAFETY: entries of `id` point to a `T` (only this key, whose values are `T`,
            // pushes them) that lives until its scope pops the entry, which happens after
            // `f` returns: the entry was opened on the stack this runs on, so the scope is an
            // outer frame of this call (module docs, "Invariants").
            Some(ptr) => Ok(f(unsafe { &*ptr.cast::<T>() })),
            None => Err(AccessError(())),
        }
    }

    /// A clone of the value of the innermost open scope.
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with).
    #[track_caller]
    pub fn get(&'static self) -> T
    where
        T: Clone,
    {
        self.with(T::clone)
    }
}

impl<T: 'static> fmt::Debug for LocalKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalKey").finish_non_exhaustive()
    }
}

/// An open scope: pushed by `open`, popped (by identity) on drop, including during an unwind,
/// from the scope stack it was pushed on.
struct ScopeGuard {
    entry: ScopeEntry,
    /// The stack `open` pushed on. Not the one of the code that runs at drop: a bare coroutine
    /// may close the scope while another task (or a poll) resumes or drops it (module docs,
    /// "Invariants").
    scopes: Entries,
}

impl ScopeGuard {
    fn open(id: usize, value: *const ()) -> ScopeGuard {
        let entry = (id, value, corio_context::stack::current_context());
        let scopes = with_scopes(|scopes| scopes.get_or_init(Entries::default).clone());
        scopes.borrow_mut().push(entry);
        ScopeGuard { entry, scopes }
    }
}

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        let mut scopes = self.scopes.borrow_mut();
        if let Some(i) = scopes.iter().rposition(|e| *e == self.entry) {
            scopes.remove(i);
        }
    }
}

/// The future of [`LocalKey::scope`]: `future` with the key's value set during its polls and
/// while it is dropped (so its destructors see the value too).
pub struct TaskLocalFuture<T: 'static, F> {
    key: &'static LocalKey<T>,
    value: T,
    /// Dropped in place by `Drop`, inside the scope.
    future: ManuallyDrop<F>,
}

impl<T: 'static, F> Drop for TaskLocalFuture<T, F> {
    fn drop(&mut self) {
        let _open = ScopeGuard::open(self.key.id(), (&raw const self.value).cast());
        // SAFETY: dropped once, here, in place (it may be pinned); never used afterwards.
        unsafe { ManuallyDrop::drop(&mut self.future) };
    }
}

impl<T: 'static, F: Future> Future for TaskLocalFuture<T, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `future` is structurally pinned (never moved out, dropped in place with the
        // struct); `value` and `key` are not pinned and only read through `&`.
        let this = unsafe { self.get_unchecked_mut() };
        let _open = ScopeGuard::open(this.key.id(), (&raw const this.value).cast());
        // SAFETY: as above: `future` stays where it is until the struct drops.
        unsafe { Pin::new_unchecked(&mut *this.future) }.poll(cx)
    }
}

impl<T: 'static, F> fmt::Debug for TaskLocalFuture<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskLocalFuture").finish_non_exhaustive()
    }
}
