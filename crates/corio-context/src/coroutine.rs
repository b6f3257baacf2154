//! The bare stackful coroutine: Lua-style asymmetric `resume`/`suspend`, no scheduler.
//!
//! # Protocol
//!
//! A [`Coroutine`] owns a stack slot. Creating it moves the closure to the top of that stack and
//! lays out an entry frame (`arch::init_stack`); nothing runs yet. Then:
//!
//! 1. [`Coroutine::resume(input)`](Coroutine::resume) switches to the coroutine's stack, passing
//!    a pointer to `input` (kept in a `ManuallyDrop` on the resumer's stack; the coroutine moves
//!    it out). The first resume starts the closure with `input`; later ones make the pending
//!    [`Yielder::suspend`] return it.
//! 2. [`Yielder::suspend(value)`](Yielder::suspend) switches back, passing a pointer to `value`
//!    on the coroutine's stack; `resume` moves it out and returns
//!    [`CoroutineResult::Yield`]. Suspending works at any call depth: the whole call chain
//!    stays on the coroutine's stack.
//! 3. When the closure returns, the entry function switches back for the last time with a
//!    pointer to a `Finish` message (return value, panic payload, or "unwound"); `resume`
//!    moves it out, hands the stack back to the thread's cache and returns
//!    [`CoroutineResult::Return`], or resumes the panic in the caller.
//!
//! Around every switch, `resume` also swaps one word of per-context state (`crate::local`):
//! the coroutine's value while it runs, the resumer's again when it suspends or finishes.
//!
//! A scheduler may also hand the running turn from one coroutine straight to another:
//! [`Yielder::transfer`] suspends the running coroutine and enters a suspended one in a single
//! switch, moving the resumer's stack pointer from the first one's link word to the second's,
//! so the second's suspension (or end) returns to the frame that resumed the first. That frame
//! resumes with [`Coroutine::resume_detached`], learns from its own bookkeeping which coroutine
//! came back, and hands the switch to that one's [`Coroutine::claim`]: the values that cross
//! are typed per coroutine, so only the one that switched back can read its message. The
//! per-context word moves with the turn: the leaving coroutine keeps its own value, the
//! arriving one's is installed, and the resumer's waits in the frame (`resume_detached` keeps
//! it in the [`Detached`] it returns) until `claim` puts it back.
//!
//! A pointer of 0 instead of an input means "unwind": [`Yielder::suspend`] then starts a
//! panic with a private payload, [`ForcedUnwind`], that runs every destructor on the stack and
//! is caught by the entry function. Dropping a suspended coroutine does this. If user code
//! catches that payload with `catch_unwind` and carries on, its next `suspend` raises it again.
//!
//! # State
//!
//! | `sp` | `stack` | state |
//! |---|---|---|
//! | `Some` | `Some` | created or suspended: may be resumed |
//! | `None` | `Some` | running (its `resume` is on the call stack) |
//! | `None` | `None` | finished: returned, panicked or unwound; the stack is back in the cache |
//!
//! # Why a coroutine is `!Send`
//!
//! The compiler knows nothing of what is on a coroutine's stack: an `Rc`, a `MutexGuard`, a
//! reference to a thread-local (whose address LLVM may keep in a register across the switch)
//! can all be live at a suspension point. Moving a suspended coroutine to another thread could
//! therefore break any of them, so `Coroutine` is neither `Send` nor `Sync`. The corio runtime
//! moves coroutines between threads only before they first run, when their stack holds nothing
//! but a closure that it has required to be `Send`.

use std::any::Any;
use std::cell::Cell;
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, Location, catch_unwind, resume_unwind};
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::arch::{self, StackPointer};
use crate::stack::{DEFAULT_STACK_SIZE, Stack};

/// What [`Coroutine::resume`] reports: the coroutine suspended with a value, or returned one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoroutineResult<Yield, Return> {
    /// The coroutine called [`Yielder::suspend`] with this value; it can be resumed again.
    Yield(Yield),
    /// The coroutine's closure returned this value; it is finished.
    Return(Return),
}

impl<Y, R> CoroutineResult<Y, R> {
    /// The yielded value, if the coroutine suspended.
    pub fn as_yield(self) -> Option<Y> {
        match self {
            CoroutineResult::Yield(y) => Some(y),
            CoroutineResult::Return(_) => None,
        }
    }

    /// The returned value, if the coroutine finished.
    pub fn as_return(self) -> Option<R> {
        match self {
            CoroutineResult::Yield(_) => None,
            CoroutineResult::Return(r) => Some(r),
        }
    }

    /// Whether the coroutine suspended.
    pub fn is_yield(&self) -> bool {
        matches!(self, CoroutineResult::Yield(_))
    }

    /// Whether the coroutine finished.
    pub fn is_return(&self) -> bool {
        matches!(self, CoroutineResult::Return(_))
    }
}

/// The payload of the panic that unwinds a coroutine being dropped.
///
/// It is public so that code which catches panics inside a coroutine can recognise it and let
/// it continue (`std::panic::resume_unwind`); if such code swallows it anyway, the coroutine's
/// next [`Yielder::suspend`] raises it again.
#[derive(Debug)]
#[non_exhaustive]
pub struct ForcedUnwind;

/// How a coroutine's closure ended, passed by pointer in the final switch.
enum Finish<R> {
    Return(R),
    Panic(Box<dyn Any + Send>),
    Unwound,
}

/// A stackful coroutine: a closure running on its own stack, which can suspend at any call
/// depth and be resumed later, on the same thread.
///
/// `Input` is what [`resume`](Coroutine::resume) passes in, `Yield` what
/// [`Yielder::suspend`] passes out, `Return` what the closure finally returns.
///
/// ```
/// use corio_context::coroutine::{Coroutine, CoroutineResult, Yielder};
///
/// // Suspends from a nested plain function: the whole call chain is on the coroutine's stack.
/// fn countdown(y: &Yielder<i32, i32>, from: i32) -> i32 {
///     let mut sum = 0;
///     for n in (1..=from).rev() {
///         sum += y.suspend(n);
///     }
///     sum
/// }
///
/// let mut co = Coroutine::new(|y, from: i32| countdown(y, from));
/// assert_eq!(co.resume(3), CoroutineResult::Yield(3));
/// assert_eq!(co.resume(10), CoroutineResult::Yield(2));
/// assert_eq!(co.resume(20), CoroutineResult::Yield(1));
/// assert_eq!(co.resume(30), CoroutineResult::Return(60));
/// assert!(co.is_done());
/// ```
///
/// A coroutine cannot be sent to another thread (see the module docs for why):
///
/// ```compile_fail
/// use corio_context::coroutine::Coroutine;
///
/// let co: Coroutine<(), (), ()> = Coroutine::new(|_, ()| {});
/// std::thread::spawn(move || drop(co));
/// ```
///
/// # Panics and drops
///
/// A panic inside the coroutine propagates out of the `resume` that was running it, and the
/// coroutine is finished. Dropping a coroutine that is suspended unwinds its stack, so every
/// destructor on it runs, and returns the stack to the thread's cache. Under `panic = "abort"`
/// nothing can unwind, so dropping a suspended coroutine leaks its stack slot instead (its
/// destructors never run, and its memory is never reused).
///
/// # Thread-locals
///
/// A coroutine suspended inside a thread-local's `LocalKey::with` holds its borrow, and std
/// destroys thread-locals when the thread exits, expecting no `with` to be running by then. So
/// a coroutine suspended inside `with` must end (return, or be dropped) before its thread
/// begins to exit: do not keep it in a thread-local whose destructor would resume or drop it,
/// and do not `mem::forget` it while a thread it started in a `std::thread::scope` inside
/// that `with` still runs. Otherwise its code runs with, or that thread reads through, a
/// reference to a destroyed value (`tests/thread_locals.rs`; corosensei's coroutines share
/// this; corio's runtime keeps a worker's thread alive for a coroutine it had to leak).
pub struct Coroutine<Input, Yield, Return> {
    /// What a switch reads and writes, the same for every `Coroutine` type (see [`RawCoroutine`]).
    raw: RawCoroutine,
    /// The stack slot; `None` once finished.
    stack: Option<Stack>,
    id: u64,
    name: Option<Arc<str>>,
    /// `Input` flows in and `Yield`/`Return` flow out.
    _values: PhantomData<fn(Input) -> CoroutineResult<Yield, Return>>,
    /// Makes the type `!Send + !Sync` (see the module docs).
    _not_send: PhantomData<*mut ()>,
}

/// What a switch reads and writes of a [`Coroutine`], whatever its types: its stack pointer,
/// its link word's address and the per-context word (see [`Coroutine::as_raw`] and
/// [`Yielder::transfer`]).
#[derive(Debug)]
pub struct RawCoroutine {
    /// Stack pointer of the suspended coroutine; `None` while it runs or once it is finished.
    sp: Option<StackPointer>,
    /// Address of the link word at the top of its stack (see `arch`).
    link: *mut usize,
    /// The coroutine's value of the per-context word (see [`crate::local`]) while it is not
    /// running; swapped with the resumer's around every switch by `resume`.
    local: u64,
    /// The resumer's value of the word while the coroutine runs, when `resume` resumed it
    /// (`resume_detached` keeps it in its frame instead: see [`Detached`]).
    outer: u64,
    /// The sanitizers' record of the coroutine, at the top of its stack (see `crate::sanitizer`).
    #[cfg(any(corio_asan, corio_tsan))]
    fiber: *mut crate::sanitizer::Fiber,
}

/// A switch back to a scheduler's frame that some coroutine has yet to claim (see
/// [`Coroutine::resume_detached`]).
#[derive(Debug)]
#[must_use = "the coroutine that switched back counts as running until it claims this"]
pub struct Detached {
    arg: usize,
    sp: Option<StackPointer>,
    /// The frame's value of the per-context word, for whichever coroutine claims this: a
    /// transfer passes the turn on without carrying it from handle to handle.
    outer: u64,
}

/// The handle a coroutine's closure uses to suspend itself.
///
/// It lives on the coroutine's own stack and is only lent to the closure, so it cannot leave
/// the coroutine, nor another thread see it (it is `!Send + !Sync`).
pub struct Yielder<Input, Yield> {
    link: *mut usize,
    /// The lowest usable address of the coroutine's stack.
    limit: usize,
    /// Set once the coroutine is being unwound by its owner's drop.
    unwinding: Cell<bool>,
    /// The sanitizers' record of the coroutine, at the top of its stack (see `crate::sanitizer`).
    #[cfg(any(corio_asan, corio_tsan))]
    fiber: *mut crate::sanitizer::Fiber,
    _marker: PhantomData<fn(Yield) -> Input>,
}

/// Configures and creates a [`Coroutine`]: name and stack size.
///
/// ```
/// use corio_context::coroutine::{Builder, Coroutine};
///
/// let mut co: Coroutine<(), (), u32> = Builder::new()
///     .name("worker")
///     .stack_size(64 << 10)
///     .build(|_, ()| 7)
///     .expect("stack available");
/// assert_eq!(co.name(), Some("worker"));
/// assert_eq!(co.resume(()).as_return(), Some(7));
/// ```
#[derive(Debug, Default)]
#[must_use = "a Builder does nothing until `build` is called"]
pub struct Builder {
    name: Option<Arc<str>>,
    stack_size: Option<usize>,
    id: Option<u64>,
    location: Option<&'static Location<'static>>,
}

impl Builder {
    /// A builder with no name and the default stack size ([`DEFAULT_STACK_SIZE`]).
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Names the coroutine; the name appears in the stack-overflow message.
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Builder {
        self.name = Some(name.into());
        self
    }

    /// Sets the stack size in bytes: rounded up to whole pages and to at least
    /// [`MIN_STACK_SIZE`](crate::stack::MIN_STACK_SIZE). Pages are committed only when touched.
    pub fn stack_size(mut self, size: usize) -> Builder {
        self.stack_size = Some(size);
        self
    }

    /// Gives the coroutine an id from [`next_id`] instead of a fresh one (a scheduler that
    /// numbers its tasks from the same counter uses this so both agree).
    #[doc(hidden)]
    pub fn id(mut self, id: u64) -> Builder {
        self.id = Some(id);
        self
    }

    /// Records `location` as where the coroutine was created (shown by the stack-overflow
    /// message) instead of the caller of `build` (a scheduler passes its spawn site).
    #[doc(hidden)]
    pub fn location(mut self, location: &'static Location<'static>) -> Builder {
        self.location = Some(location);
        self
    }

    /// Creates the coroutine; it starts running at its first [`resume`](Coroutine::resume).
    ///
    /// # Errors
    ///
    /// A stack size above [`MAX_STACK_SIZE`](crate::stack::MAX_STACK_SIZE) is
    /// `ErrorKind::InvalidInput`, as is a closure larger than half the stack (it is moved
    /// onto the stack to run); running out of address space, or of `vm.max_map_count` when
    /// guard pages need `mprotect`, is an error whose message says which and what to do.
    ///
    /// A closure larger than [`BOX_CLOSURES_ABOVE`] bytes is kept in a box until it runs.
    #[track_caller]
    pub fn build<Input, Yield, Return, F>(self, f: F) -> io::Result<Coroutine<Input, Yield, Return>>
    where
        F: FnOnce(&Yielder<Input, Yield>, Input) -> Return + 'static,
        Input: 'static,
        Yield: 'static,
        Return: 'static,
    {
        // Not `unwrap_or_else(Location::caller)`: called through a function pointer,
        // `Location::caller` would name that call, not our caller.
        let location = match self.location {
            Some(location) => location,
            None => Location::caller(),
        };
        let stack = Stack::new(self.stack_size.unwrap_or(DEFAULT_STACK_SIZE))?;
        // A constant branch (`const`): the compiler instantiates only the arm taken, not both
        // (`entry` and `on_stack` for `F` and for `Box<F>`, for every closure type).
        if const { size_of::<F>() > BOX_CLOSURES_ABOVE } {
            // (A smaller closure fits in half of any stack; `on_stack` checks its layout.)
            check_closure_size(size_of::<F>(), stack.size())?;
            Coroutine::on_stack(stack, self.name, self.id, location, Box::new(f))
        } else {
            Coroutine::on_stack(stack, self.name, self.id, location, f)
        }
    }
}

impl<Input, Yield, Return> Coroutine<Input, Yield, Return> {
    /// Creates a coroutine with the default stack size that will run `f` at its first resume.
    ///
    /// # Panics
    ///
    /// If no stack can be had (see [`Builder::build`] for the errors); use the builder to
    /// handle that case.
    #[track_caller]
    pub fn new<F>(f: F) -> Self
    where
        F: FnOnce(&Yielder<Input, Yield>, Input) -> Return + 'static,
        Input: 'static,
        Yield: 'static,
        Return: 'static,
    {
        match Builder::new().build(f) {
            Ok(co) => co,
            Err(e) => panic!("{e}"),
        }
    }

    /// Creates a coroutine whose stack has at least `size` bytes.
    ///
    /// # Panics
    ///
    /// As [`Coroutine::new`], and if `size` exceeds
    /// [`MAX_STACK_SIZE`](crate::stack::MAX_STACK_SIZE).
    #[track_caller]
    pub fn with_stack_size<F>(size: usize, f: F) -> Self
    where
        F: FnOnce(&Yielder<Input, Yield>, Input) -> Return + 'static,
        Input: 'static,
        Yield: 'static,
        Return: 'static,
    {
        match Builder::new().stack_size(size).build(f) {
            Ok(co) => co,
            Err(e) => panic!("{e}"),
        }
    }

    /// Moves `f` to the top of `stack` and lays out the entry frame.
    fn on_stack<F>(
        stack: Stack,
        name: Option<Arc<str>>,
        id: Option<u64>,
        location: &'static Location<'static>,
        f: F,
    ) -> io::Result<Self>
    where
        F: FnOnce(&Yielder<Input, Yield>, Input) -> Return + 'static,
    {
        let start = Start {
            f,
            limit: stack.limit(),
            #[cfg(any(corio_asan, corio_tsan))]
            fiber: crate::sanitizer::Fiber::new(crate::sanitizer::Bounds::new(
                stack.limit(),
                stack.start(),
            )),
        };
        let obj = (stack.start() - size_of::<Start<F>>()) & !(align_of::<Start<F>>() - 1);
        let base = obj & !(arch::STACK_ALIGNMENT - 1);
        // The closure and the entry frame must leave the coroutine most of its stack.
        if base < stack.limit() + stack.size() / 2 {
            return Err(closure_too_large(size_of::<F>(), stack.size()));
        }
        let id = id.unwrap_or_else(next_id);
        let header = stack.header();
        let (name_ptr, name_len) = match &name {
            Some(name) => (name.as_ptr().cast_mut(), name.len()),
            None => (ptr::null_mut(), 0),
        };
        header.name_ptr.store(name_ptr, Ordering::Relaxed);
        header.name_len.store(name_len, Ordering::Relaxed);
        header
            .location
            .store(ptr::from_ref(location).cast_mut(), Ordering::Relaxed);
        header.stack_size.store(stack.size(), Ordering::Relaxed);
        // Last, and Release: a nonzero id marks the slot in use and its other fields valid for
        // the overflow handler (pairs with the Acquire load in `overflow::handler`).
        header.id.store(id, Ordering::Release);
        // SAFETY: `obj..obj + size_of::<Start<F>>()` lies below the slot's header, inside the
        // slot we own, suitably aligned; the entry function reads it exactly once. `base` is
        // 16-byte aligned with the init frame's 32 bytes free below it.
        let (sp, link) = unsafe {
            ptr::write(obj as *mut Start<F>, start);
            arch::init_stack(base, entry::<F, Input, Yield, Return>, obj as *mut u8)
        };
        Ok(Coroutine {
            raw: RawCoroutine {
                sp: Some(sp),
                link,
                local: 0,
                outer: 0,
                #[cfg(any(corio_asan, corio_tsan))]
                // SAFETY: `obj` holds the `Start<F>` just written; the record stays there, at
                // the top of the stack, for as long as the stack is this coroutine's.
                fiber: unsafe { &raw mut (*(obj as *mut Start<F>)).fiber },
            },
            stack: Some(stack),
            id,
            name,
            _values: PhantomData,
            _not_send: PhantomData,
        })
    }

    /// Runs the coroutine until it suspends or finishes.
    ///
    /// The first call starts the closure with `input`; later calls make the pending
    /// [`Yielder::suspend`] return `input`.
    ///
    /// # Panics
    ///
    /// If the coroutine has finished, if it is already running (resumed from inside itself),
    /// or with the coroutine's own panic if it panics.
    #[inline(always)] // a caller that inlines the switch saves its registers once, not twice
    pub fn resume(&mut self, input: Input) -> CoroutineResult<Yield, Return> {
        let Some(sp) = self.raw.sp.take() else {
            self.resume_misuse()
        };
        let input = ManuallyDrop::new(input);
        // Swap the per-context word (see `crate::local`). Nothing is kept in a local across
        // the switch (it would be spilled): the resumer's word waits in `self.raw.outer`.
        self.raw.outer = crate::local::swap(self.raw.local);
        #[cfg(any(corio_asan, corio_tsan))]
        let mut fake = std::ptr::null_mut();
        // SAFETY: the record is this coroutine's, and the switch into it follows.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::start_switch_into(&mut fake, self.raw.fiber)
        };
        // SAFETY: `sp` and `link` describe this coroutine, suspended (or fresh) on a stack we
        // own; the coroutine moves `input` out before it switches back.
        let (arg, sp) =
            unsafe { arch::switch_and_link(ptr::from_ref(&*input) as usize, sp, self.raw.link) };
        // SAFETY: control just came back to the frame that started the switch.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::finish_switch_in_resumer(fake)
        };
        self.raw.local = crate::local::swap(self.raw.outer);
        match sp {
            Some(sp) => {
                self.raw.sp = Some(sp);
                // SAFETY: a suspending coroutine passes a pointer to its `Yield` value, which
                // stays valid and untouched until it runs again; we move it out.
                CoroutineResult::Yield(unsafe { ptr::read(arg as *const Yield) })
            }
            None => self.finish(arg),
        }
    }

    /// [`resume`](Coroutine::resume) for a scheduler whose coroutines hand the running turn
    /// to each other with [`Yielder::transfer`]: switches in and returns when *a* coroutine
    /// switches back to this frame — this one, or the last one a chain of transfers started
    /// from it passed the turn to. The caller finds out which (it knows what it transferred
    /// to) and gives the result to that coroutine's [`claim`](Coroutine::claim).
    ///
    /// # Safety
    ///
    /// The result must be claimed, by the coroutine that switched back: until then that
    /// coroutine counts as running, and neither resuming nor dropping it is allowed.
    ///
    /// # Panics
    ///
    /// As [`resume`](Coroutine::resume), before switching.
    #[inline(always)]
    pub unsafe fn resume_detached(&mut self, input: Input) -> Detached {
        let Some(sp) = self.raw.sp.take() else {
            self.resume_misuse()
        };
        let input = ManuallyDrop::new(input);
        // The frame's word stays here, for `claim`, not in the handle (`outer`): the coroutine
        // that comes back may be another one, and a transfer then need not move it.
        let outer = crate::local::swap(self.raw.local);
        #[cfg(any(corio_asan, corio_tsan))]
        let mut fake = std::ptr::null_mut();
        // SAFETY: as in `resume`.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::start_switch_into(&mut fake, self.raw.fiber)
        };
        // SAFETY: as in `resume`. The handle's address goes to the switch as well, so the
        // compiler assumes the switch may read and write it: a transfer from this coroutine
        // writes its stack pointer and word into it while this frame waits.
        let (arg, sp) = unsafe {
            arch::switch_and_link_escaping(
                ptr::from_ref(&*input) as usize,
                sp,
                self.raw.link,
                ptr::from_mut(&mut self.raw).cast(),
            )
        };
        // SAFETY: as in `resume`: whichever coroutine came back announced this frame's stack.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::finish_switch_in_resumer(fake)
        };
        Detached { arg, sp, outer }
    }

    /// Takes what [`resume_detached`](Coroutine::resume_detached) returned, as `resume` does
    /// after its switch: the coroutine's word, its stack pointer or its final message.
    ///
    /// # Safety
    ///
    /// `self` must be the coroutine that switched back with `back` (the one resumed, or the
    /// last one a transfer passed the turn to), and `back` claimed only once.
    ///
    /// # Panics
    ///
    /// With the coroutine's own panic if it panicked.
    #[inline(always)]
    pub unsafe fn claim(&mut self, back: Detached) -> CoroutineResult<Yield, Return> {
        self.raw.local = crate::local::swap(back.outer);
        match back.sp {
            Some(sp) => {
                self.raw.sp = Some(sp);
                // SAFETY: as in `resume`.
                CoroutineResult::Yield(unsafe { ptr::read(back.arg as *const Yield) })
            }
            None => self.finish(back.arg),
        }
    }

    /// The type-erased switch state of this coroutine, for [`Yielder::transfer`]. Valid as
    /// long as the `Coroutine` is neither moved nor dropped.
    #[inline]
    pub fn as_raw(&mut self) -> *mut RawCoroutine {
        ptr::from_mut(&mut self.raw)
    }

    #[cold]
    #[track_caller]
    fn resume_misuse(&self) -> ! {
        if self.stack.is_none() {
            panic!("corio: resumed a coroutine that has already finished");
        }
        panic!("corio: resumed a coroutine that is running (a coroutine cannot resume itself)");
    }

    /// Takes the final message from a coroutine that just finished and releases its stack.
    #[inline]
    fn finish(&mut self, arg: usize) -> CoroutineResult<Yield, Return> {
        // SAFETY: a finishing coroutine passes a pointer to its `Finish` on its dead stack,
        // which stays mapped until `self.stack` is dropped below; we move it out first.
        let finish = unsafe { ptr::read(arg as *const Finish<Return>) };
        // SAFETY: the coroutine finished; its record is on the stack released next.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::release(self.raw.fiber)
        };
        self.stack = None;
        match finish {
            Finish::Return(r) => CoroutineResult::Return(r),
            Finish::Panic(payload) => resume_unwind(payload),
            Finish::Unwound => unreachable!("corio: a coroutine unwound without being dropped"),
        }
    }

    /// Whether the closure has returned (or panicked, or been unwound).
    #[inline]
    pub fn is_done(&self) -> bool {
        self.stack.is_none()
    }

    /// Whether the coroutine has been resumed at least once.
    #[inline]
    pub fn is_started(&self) -> bool {
        // The link word is 0 from `init_stack` until the first resume stores the resumer's
        // stack pointer in it, and never 0 afterwards.
        // SAFETY: the link word lies in the top page of our stack slot, mapped while
        // `self.stack` is `Some`; only a switch into this coroutine, on this thread, writes it.
        self.stack.is_none() || unsafe { self.raw.link.read_volatile() } != 0
    }

    /// This coroutine's process-unique id.
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// This coroutine's name, if it was given one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The size of its stack, in bytes (as asked for, rounded to pages); 0 once finished.
    pub fn stack_size(&self) -> usize {
        self.stack.as_ref().map_or(0, Stack::size)
    }

    /// Bytes of stack in use below the top at the point where the coroutine is suspended;
    /// 0 if it is running, finished or has not started.
    pub fn stack_in_use(&self) -> usize {
        match (&self.stack, self.raw.sp) {
            (Some(stack), Some(sp)) if self.is_started() => stack.start() - sp.get(),
            _ => 0,
        }
    }

    /// Unwinds a suspended coroutine's stack (running its destructors) and frees it.
    #[cold]
    fn force_unwind(&mut self, sp: StackPointer) {
        if cfg!(panic = "abort") && self.is_started() {
            // Nothing can unwind: leak the slot rather than reuse memory that values pinned
            // on it may still be registered by (Pin's drop guarantee).
            std::mem::forget(self.stack.take());
            return;
        }
        let outer = crate::local::swap(self.raw.local);
        #[cfg(any(corio_asan, corio_tsan))]
        let mut fake = std::ptr::null_mut();
        // SAFETY: as in `resume`.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::start_switch_into(&mut fake, self.raw.fiber)
        };
        // SAFETY: as in `resume`; a 0 argument asks the coroutine to unwind.
        let (arg, sp) = unsafe { arch::switch_and_link(0, sp, self.raw.link) };
        // SAFETY: as in `resume`.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::finish_switch_in_resumer(fake)
        };
        crate::local::swap(outer);
        assert!(
            sp.is_none(),
            "corio: a coroutine suspended while being unwound"
        );
        // SAFETY: as in `finish`.
        let finish = unsafe { ptr::read(arg as *const Finish<Return>) };
        // SAFETY: as in `finish`.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::release(self.raw.fiber)
        };
        self.stack = None;
        match finish {
            Finish::Return(_) | Finish::Unwound => {}
            // A destructor on the coroutine's stack panicked: behave as a panicking drop.
            Finish::Panic(payload) if !std::thread::panicking() => resume_unwind(payload),
            Finish::Panic(_) => {}
        }
    }
}

impl<Input, Yield, Return> Drop for Coroutine<Input, Yield, Return> {
    fn drop(&mut self) {
        if let Some(sp) = self.raw.sp.take() {
            self.force_unwind(sp);
        }
    }
}

impl<Input, Yield, Return> fmt::Debug for Coroutine<Input, Yield, Return> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match (self.raw.sp.is_some(), self.stack.is_some()) {
            (_, false) => "finished",
            (false, true) => "running",
            (true, true) if self.is_started() => "suspended",
            (true, true) => "created",
        };
        f.debug_struct("Coroutine")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("state", &state)
            .field("stack_size", &self.stack_size())
            .finish()
    }
}

impl<Input, Yield> Yielder<Input, Yield> {
    /// Suspends the coroutine, handing `value` to the `resume` that is running it, and returns
    /// the input of the next `resume`.
    ///
    /// If the coroutine is dropped instead of resumed, this does not return: it starts an
    /// unwind (payload [`ForcedUnwind`]) that runs the destructors on the coroutine's stack.
    #[inline]
    pub fn suspend(&self, value: Yield) -> Input {
        if self.unwinding.get() {
            forced_unwind();
        }
        let value = ManuallyDrop::new(value);
        #[cfg(any(corio_asan, corio_tsan))]
        let mut fake = std::ptr::null_mut();
        // SAFETY: the record is this running coroutine's; the switch back follows.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::start_switch_back(Some(&mut fake), self.fiber)
        };
        // SAFETY: this Yielder was lent by the entry function of the coroutine that is running
        // (it cannot leave it), so we are on that coroutine's stack and `link` is its link. The
        // resumer moves `value` out before we run again.
        let arg = unsafe { arch::switch_yield(ptr::from_ref(&*value) as usize, self.link) };
        // SAFETY: control just came back to this coroutine, with the fake stack it kept.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::finish_switch_in_coroutine(fake, self.fiber)
        };
        if arg == 0 {
            self.unwinding.set(true);
            forced_unwind();
        }
        // SAFETY: a non-zero argument points to the resumer's `Input`, which it will not touch
        // again; we move it out.
        unsafe { ptr::read(arg as *const Input) }
    }
}

impl<Input, Yield> Yielder<Input, Yield> {
    /// Suspends the running coroutine and resumes another suspended one, `to`, with `input`,
    /// in one switch: `to` takes over the frame that resumed this coroutine, so its next
    /// suspension (or its end) switches back to that frame, whose
    /// [`resume_detached`](Coroutine::resume_detached) must then be claimed by `to`. Returns
    /// the input of this coroutine's next resume, which may come from that frame's next
    /// `resume_detached` or from another transfer.
    ///
    /// If this coroutine is dropped instead of resumed, this does not return, as in
    /// [`suspend`](Yielder::suspend).
    ///
    /// # Safety
    ///
    /// `from` must be this yielder's coroutine (see [`Coroutine::as_raw`]), which the caller
    /// runs on (see [`is_on_own_stack`](Yielder::is_on_own_stack)) and which was resumed by
    /// `resume_detached` or by a transfer; `to` a suspended or fresh coroutine of this thread,
    /// other than `from`, whose `Input` type is `I2`. Both handles must stay in place until
    /// they are next claimed or resumed.
    ///
    /// # Panics
    ///
    /// If `to` is running or finished (before switching).
    #[inline]
    pub unsafe fn transfer<I2>(
        &self,
        from: *mut RawCoroutine,
        to: *mut RawCoroutine,
        input: I2,
    ) -> Input {
        if self.unwinding.get() {
            forced_unwind();
        }
        // SAFETY: per the contract both handles are alive and only this thread touches them;
        // `to` is not running, so nothing else refers to it now.
        let (from, to) = unsafe { (&mut *from, &mut *to) };
        let Some(to_sp) = to.sp.take() else {
            panic!("corio: transferred to a coroutine that is running or finished")
        };
        // `from` keeps its own word and `to`'s is installed. The resumer's waits in its frame
        // (`Detached`): a coroutine resumed by `resume_detached` needs no `outer`.
        from.local = crate::local::swap(to.local);
        let input = ManuallyDrop::new(input);
        #[cfg(any(corio_asan, corio_tsan))]
        let mut fake = std::ptr::null_mut();
        // SAFETY: `self.fiber` is the running coroutine's record (`from`'s), `to.fiber` that of
        // another live coroutine (per the contract); the transfer follows.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::start_transfer(&mut fake, self.fiber, to.fiber)
        };
        // SAFETY: we run on `from`'s stack with its link (per the contract), `to_sp` and
        // `to.link` describe a suspended coroutine of this thread, and `from.sp` is where
        // `from`'s stack pointer belongs. `to` moves `input` out before this stack runs again.
        let arg = unsafe {
            arch::switch_transfer(
                ptr::from_ref(&*input) as usize,
                self.link,
                ptr::from_mut(&mut from.sp).cast(),
                to_sp,
                to.link,
            )
        };
        // SAFETY: as in `suspend`.
        #[cfg(any(corio_asan, corio_tsan))]
        unsafe {
            crate::sanitizer::finish_switch_in_coroutine(fake, self.fiber)
        };
        if arg == 0 {
            self.unwinding.set(true);
            forced_unwind();
        }
        // SAFETY: as in `suspend`.
        unsafe { ptr::read(arg as *const Input) }
    }

    /// Whether the calling code runs on this yielder's coroutine stack (and not, say, on the
    /// stack of another coroutine that this one resumed). Only then may it call
    /// [`suspend`](Yielder::suspend) — a rule safe code cannot break, but code that reaches a
    /// yielder through a raw pointer (as a scheduler does) should check.
    #[inline]
    pub fn is_on_own_stack(&self) -> bool {
        let here = 0u8;
        let sp = ptr::from_ref(&here) as usize;
        self.limit <= sp && sp < self.link as usize
    }

    /// The coroutine's stack as an address range: its lowest usable address (just above the
    /// guard page) and the top of its frames (exclusive). For code that must check, from a
    /// signal handler say, whether a stack pointer lies on this coroutine's stack and how far
    /// above the guard it is.
    #[inline]
    pub fn stack_bounds(&self) -> (usize, usize) {
        (self.limit, self.link as usize)
    }
}

impl<Input, Yield> fmt::Debug for Yielder<Input, Yield> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Yielder").finish_non_exhaustive()
    }
}

#[cold]
fn forced_unwind() -> ! {
    resume_unwind(Box::new(ForcedUnwind))
}

/// Closures larger than this many bytes are boxed by [`Builder::build`] (and by corio's
/// spawn) instead of being placed at the top of the coroutine's stack.
///
/// Why: a closure is moved by value several times on its way into the user's code
/// (`catch_unwind` and its wrappers, `FnOnce::call_once`), and an unoptimised build makes a
/// full copy on the coroutine's stack at each move: a 12 KiB capture started 148 KB below the
/// top of its stack in a debug build (12 copies), against 12 KB in a release build, and a
/// 16 KiB capture overflowed a 64 KiB stack that it fits in four times over. A box moves as a
/// pointer; the one copy left is the closure's move out of the box when it is called. 256
/// bytes: 32 words, above what most closures capture, so that their spawns allocate nothing.
pub const BOX_CLOSURES_ABOVE: usize = 256;

/// The closure must leave the coroutine half its stack: it is moved onto the stack to run.
/// (A closure of at most [`BOX_CLOSURES_ABOVE`] bytes always does: the smallest stack is
/// [`MIN_STACK_SIZE`](crate::stack::MIN_STACK_SIZE).)
///
/// # Errors
///
/// `ErrorKind::InvalidInput` if a closure of `closure` bytes does not fit in half of a stack
/// of `stack` bytes.
#[inline] // on every spawn: a compare, the message out of line
pub fn check_closure_size(closure: usize, stack: usize) -> io::Result<()> {
    if closure > stack / 2 {
        return Err(closure_too_large(closure, stack));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn closure_too_large(closure: usize, stack: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "corio: the coroutine's closure ({closure} bytes) does not fit in half of its {} KiB stack",
            stack >> 10
        ),
    )
}

/// What `Coroutine::on_stack` writes at the top of a new stack for `entry` to read.
struct Start<F> {
    f: F,
    limit: usize,
    /// The sanitizers' record of the coroutine (see `crate::sanitizer`); it stays here while
    /// the stack is the coroutine's.
    #[cfg(any(corio_asan, corio_tsan))]
    fiber: crate::sanitizer::Fiber,
}

/// The first Rust code on a coroutine's stack: runs the closure, then leaves for good.
///
/// # Safety
///
/// Called only by the trampoline of a stack laid out by `Coroutine::on_stack::<F, ..>`: `obj`
/// points to its `Start<F>`, and `arg` is 0 or points to an `Input` the resumer has given up.
unsafe extern "C" fn entry<F, Input, Yield, Return>(arg: usize, link: *mut usize, obj: *mut u8) -> !
where
    F: FnOnce(&Yielder<Input, Yield>, Input) -> Return,
{
    let start = obj as *mut Start<F>;
    #[cfg(any(corio_asan, corio_tsan))]
    let fiber = {
        // SAFETY: per this function's contract `start` is this coroutine's `Start<F>`.
        let fiber = unsafe { &raw mut (*start).fiber };
        // SAFETY: this is the first arrival on the coroutine's stack, with no fake stack yet.
        unsafe { crate::sanitizer::finish_switch_in_coroutine(ptr::null_mut(), fiber) };
        fiber
    };
    // SAFETY: per this function's contract; read once. The closure stays where it is until
    // it is used (each move of it is a copy on this stack in an unoptimised build).
    let limit = unsafe { ptr::read(&raw const (*start).limit) };
    let finish = if arg == 0 {
        // Dropped before it ever ran: drop the closure, nothing else is on the stack.
        // SAFETY: per this function's contract; the closure is dropped exactly once.
        match catch_unwind(AssertUnwindSafe(|| unsafe {
            ptr::drop_in_place(&raw mut (*start).f)
        })) {
            Ok(()) => Finish::Unwound,
            Err(payload) => Finish::Panic(payload),
        }
    } else {
        // SAFETY: per this function's contract.
        let input = unsafe { ptr::read(arg as *const Input) };
        let yielder = Yielder {
            link,
            limit,
            unwinding: Cell::new(false),
            #[cfg(any(corio_asan, corio_tsan))]
            fiber,
            _marker: PhantomData,
        };
        // SAFETY: per this function's contract; the closure is read exactly once, here.
        let run = || unsafe { ptr::read(&raw const (*start).f) }(&yielder, input);
        match catch_unwind(AssertUnwindSafe(run)) {
            Ok(r) => Finish::Return(r),
            // Only this coroutine's own forced unwind (it is being dropped): a `ForcedUnwind`
            // another coroutine's code caught and this one's raised again is a panic like any
            // other, for the resumer (corosensei tells them apart the same way). It was taken
            // for an unwind, and the resumer hit `unreachable!`.
            Err(payload) if payload.is::<ForcedUnwind>() && yielder.unwinding.get() => {
                Finish::Unwound
            }
            Err(payload) => Finish::Panic(payload),
        }
    };
    let finish = ManuallyDrop::new(finish);
    // SAFETY: the record is this coroutine's; its final switch follows, so ASan may free its
    // fake stack. `finish`, which the resumer reads afterwards, is not on it: this frame was
    // made during the first switch, while ASan hands out no fake frames.
    #[cfg(any(corio_asan, corio_tsan))]
    unsafe {
        crate::sanitizer::start_switch_back(None, fiber)
    };
    // SAFETY: we are on the coroutine's stack with its link; everything on the stack has been
    // dropped or moved into `finish`, which the resumer moves out.
    unsafe { arch::switch_final(ptr::from_ref(&*finish) as usize, link) }
}

/// How many ids [`next_id`] hands a thread at a time: a thread's ids come in runs of this many
/// consecutive numbers, so `id / ID_BLOCK` mostly names one thread's run (corio shards its
/// list of live tasks by it, so that each worker's spawns mostly stay on one shard).
#[doc(hidden)]
pub const ID_BLOCK: u64 = 1024;

/// Hands out process-unique ids in blocks of 1024 per thread, so that creating coroutines on
/// many threads does not contend on one counter.
#[doc(hidden)]
#[inline(never)] // reads a thread-local: see `crate::local`
pub fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    const BLOCK: u64 = ID_BLOCK;
    thread_local! {
        static RANGE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }
    RANGE
        .try_with(|range| {
            let (next, end) = range.get();
            if next < end {
                range.set((next + 1, end));
                next
            } else {
                let start = NEXT.fetch_add(BLOCK, Ordering::Relaxed);
                range.set((start + 1, start + BLOCK));
                start
            }
        })
        .unwrap_or_else(|_| NEXT.fetch_add(1, Ordering::Relaxed))
}
