//! Stackless coroutines: a [`Generator`] is an `async` block driven by `resume(input)`, with the
//! same resume/yield protocol as the stackful [`Coroutine`](crate::coroutine::Coroutine).
//!
//! # The problem
//!
//! The article's "无栈协程" section shows a compiler turning `async def fetch()` into a state
//! machine object whose `send(value)` runs it to the next `await` and whose locals that cross an
//! `await` live in a heap frame. Rust's compiler does exactly this for every `async` block:
//! the block becomes an enum with one variant per suspension point, holding only what is live
//! across it, and `Future::poll` is `send()`. What `poll` lacks is a channel: it can say
//! `Pending`, but it cannot hand a value out, nor take one in. A generator adds that channel,
//! on stable Rust and without an executor.
//!
//! ```
//! use corio::generator::{CoroutineResult, Generator};
//!
//! // The article's fetch(): each suspension hands out what to wait for and gets the result.
//! let mut fetch = Generator::new(|co, _first: String| async move {
//!     let data: String = co.suspend("read_socket").await;
//!     let result: String = co.suspend("process").await;
//!     format!("{data} -> {result}")
//! });
//! assert_eq!(fetch.resume(String::new()), CoroutineResult::Yield("read_socket"));
//! assert_eq!(fetch.resume("bytes".into()), CoroutineResult::Yield("process"));
//! assert_eq!(
//!     fetch.resume("parsed".into()),
//!     CoroutineResult::Return("bytes -> parsed".to_string())
//! );
//! # let _: Generator<String, &str, String, _> = fetch;
//! ```
//!
//! # Protocol
//!
//! A `Generator` owns one heap *frame*: a slot (`co::Slot`, a `Cell` holding nothing, an
//! input or a yielded value) and beside it the future, which is the user's closure until the
//! first resume and the body's state machine afterwards. The body's [`Co`] points to the slot.
//!
//! 1. [`Generator::new(f)`](Generator::new) allocates the frame, stores `f` and the `Co` in it,
//!    and takes a process-unique id (from the same counter as stackful coroutines'). Nothing
//!    runs.
//! 2. [`resume(input)`](Generator::resume) puts `input` in the slot, publishes the generator's
//!    id for the running execution context (see below), and polls the future once with a no-op waker. The
//!    first poll takes the input out and calls `f(co, input)`; the body runs.
//! 3. [`co.suspend(value).await`](Co::suspend): the [`Suspend`] future puts `value` in the
//!    slot and returns `Pending`, which every enclosing `.await` passes up unchanged: the state
//!    machine records where it stopped and `poll` returns.
//! 4. `resume` takes the value from the slot and returns [`CoroutineResult::Yield`]. If the
//!    slot holds no value, the body returned `Pending` for another reason: it awaited a future
//!    that is not ready, which a generator cannot wait for (see "Misuse").
//! 5. The next `resume(input)` puts `input` in the slot and polls: the state machine jumps
//!    back into the `.await` where it stopped, the pending `Suspend` takes the input and
//!    completes with it.
//! 6. When the body returns, `resume` frees the frame and returns
//!    [`CoroutineResult::Return`].
//!
//! | frame | slot | state |
//! |---|---|---|
//! | `Some` | `Fresh` | created: may be resumed |
//! | `Some` | `Empty` | suspended: may be resumed |
//! | `Some` | `Input`, then `Yield` | running: only inside `resume`, which holds `&mut self` |
//! | `None` | (freed) | finished: returned or panicked |
//!
//! A round trip is therefore two polls of small state machines (the pending `Suspend`
//! completes, the next one starts) and four moves through the slot, with no switch of stack:
//! see `corio-bench gen` for what that costs next to the stackful switch.
//!
//! # How `co.suspend` finds its slot
//!
//! The [`Co`] holds the generator's id and a pointer to the slot in its frame. It may
//! dereference the pointer only while that frame is alive, and the `Co` is the body's to move
//! anywhere (into a global, out as a yielded value) where it may outlive the frame. So
//! `resume` publishes the id of the generator it is polling, and a `Co` uses its pointer only
//! if its id is the published one: then the running code is inside that generator's `resume`,
//! which owns the frame and frees it only after the poll. A drop guard restores the previous
//! id when the poll returns or unwinds, so a generator may resume another from its body.
//!
//! The id is published in a word that is *per execution context*, not per thread
//! ([`corio_context::local`]): a thread-local that every stackful switch saves into the
//! coroutine it leaves and restores from the one it enters (the resumer swaps it around
//! `Coroutine::resume`). That matters because resumes of stackful coroutines do not nest: the
//! coroutine polling a generator may suspend inside the poll (`corio::yield_now`, `sleep`,
//! `join`, `block_on` in the body; or a bare `Coroutine`'s `Yielder` captured by the body),
//! and other coroutines then run on the thread and resume generators of their own. With a
//! plain thread-local, which the first version used, two coroutines on one worker each driving
//! a generator whose body yields found each other's id (a false "polled while generator Y is
//! being resumed"), and a guard closing out of order restored the id of a generator that had
//! meanwhile finished, which let its escaped `Co` write into the freed frame (issue 7). With
//! the per-context word each context's guards nest again, and a guard that finds another id
//! than its own when it closes aborts rather than restore a foreign one.
//!
//! The cost: the word is read and written by `asm!` blocks that compute its address from
//! `%fs` at every access (a thread-local address computed before a switch must not be reused
//! after it, for coroutines the scheduler may move between threads: see `docs/soundness.md`),
//! two instructions each; a round trip (publish, two checks, restore) went from 105 to 112
//! instructions (callgrind, `corio-bench gen`'s child). Each stackful switch swaps the word:
//! 4.5 more instructions per switch (`corio-bench switch --callgrind`: 19.5 to 24).
//! Rejected:
//!
//! - *A thread-local restored by a drop guard* (the first version): unsound, as above.
//! - *Saving and restoring the id in corio's blocking calls only* (`StackfulCtx::suspend`):
//!   cheaper on the switch, but a bare `Coroutine` suspending inside a poll bypasses it.
//! - *`#[inline(never)]` accessors of a `thread_local!`* (tried): as fresh, but a call each;
//!   152 instructions per round trip instead of 112, and 33 per switch instead of 24.
//! - *The slot's address in the published word*: the body then reads its
//!   input through a pointer that `resume` has just stored, which puts a store-to-load
//!   forwarding on every round trip's critical path; it was 10–15% slower in a quick test.
//! - *An `Rc` shared by `Co` and the generator*: safe without a check, but a second allocation
//!   and a reference count per generator.
//! - *The slot's address in the `Waker`*: wakers can be cloned and kept past the generator,
//!   and combinators such as `join!` poll their parts with wakers of their own.
//! - *A lifetime brand*, `for<'co> FnOnce(&'co Co) -> Fut`: `Fut` would have to name `'co`,
//!   which a closure returning an `async` block cannot do on stable Rust (that is what async
//!   closures are for, and their future types cannot be named in a struct). So a foreign `Co`
//!   is a panic at run time, not a compile error.
//!
//! # Why the frame is boxed, and generic
//!
//! The body's state machine may point into itself (a reference to a local held across an
//! `await`) and its `Co` points to the slot, so neither may move once created: they live in a
//! heap frame that the `Generator` owns, and the `Generator` itself (16 bytes) stays movable,
//! with `resume(&mut self)` as on the stackful one. The frame is the only allocation. The
//! future's type is a parameter, so `resume` calls the body directly and the compiler can
//! inline it; [`Generator::boxed`] erases it to `dyn Future` (one indirect call per resume)
//! for code that must name the type. `corio-bench gen` measures both against the stackful
//! coroutine.
//!
//! # Send
//!
//! Unlike the stackful coroutine, whose stack the compiler cannot see, a generator is exactly
//! as `Send` as what its body holds across its suspensions: the compiler checks it, as for any
//! future. A suspended generator whose frame and values are `Send` can be resumed on another
//! thread:
//!
//! ```
//! use corio::generator::Generator;
//!
//! let mut counter = Generator::new(|co, ()| async move {
//!     for n in 0..3u32 {
//!         co.suspend(n).await;
//!     }
//! });
//! assert_eq!(counter.next(), Some(0));
//! let rest: Vec<u32> = std::thread::spawn(move || counter.collect()).join().unwrap();
//! assert_eq!(rest, [1, 2]);
//! ```
//!
//! An `Rc` alive across a suspension makes it `!Send`:
//!
//! ```compile_fail,E0277
//! use std::rc::Rc;
//! use corio::generator::Generator;
//!
//! let holder = Generator::new(|co, ()| async move {
//!     let shared = Rc::new(1);
//!     co.suspend(*shared).await;
//!     drop(shared);
//! });
//! std::thread::spawn(move || drop(holder));
//! ```
//!
//! # Suspending from a plain function
//!
//! A stackful coroutine can suspend from any call depth, because the whole call chain is on its
//! own stack. A generator's suspension points are `.await`s, which the compiler turns into
//! states of *one* state machine; a plain function called from the body returns before the
//! body can suspend, so it has no state to resume and cannot await:
//!
//! ```compile_fail,E0728
//! use corio::generator::{Co, Generator};
//!
//! fn log_and_yield(co: &Co<(), u32>, n: u32) {
//!     println!("{n}");
//!     co.suspend(n).await; // error: `await` is only allowed inside `async` functions
//! }
//! ```
//!
//! The helper must itself be `async`, and so must everything between it and the body: the
//! "function colour" row of the article's table.
//!
//! ```
//! use corio::generator::{Co, Generator};
//!
//! async fn log_and_yield(co: &Co<(), u32>, n: u32) {
//!     co.suspend(n).await;
//! }
//! let numbers = Generator::new(|co, ()| async move {
//!     for n in 0..3 {
//!         log_and_yield(&co, n).await;
//!     }
//! });
//! assert_eq!(numbers.collect::<Vec<_>>(), [0, 1, 2]);
//! ```
//!
//! # Panics and drops
//!
//! A panic in the body unwinds out of the `resume` that runs it; the frame is dropped on the
//! way (so the locals of the panicking state are dropped once, by the unwind) and the generator
//! is finished: resuming it again panics "already finished". Dropping a suspended generator
//! drops its frame, which drops every local alive at the suspension point; no unwinding is
//! needed, unlike a stackful coroutine's, so this also works under `panic = "abort"`.
//!
//! # Misuse
//!
//! Each is a panic whose message says what to do instead:
//!
//! | misuse | detected by |
//! |---|---|
//! | awaiting a future that is not ready (IO, a timer, a channel) in a body: a generator has no executor and no waker | `resume` finds no value in the slot after `Pending` |
//! | `co.suspend` of one generator polled in the body of another (even one it resumes) | id check in `Suspend` |
//! | `co.suspend` polled outside any resume (a `Co` that escaped) | no id published in this context |
//! | two `co.suspend` futures racing in `join!`/`select!` | the slot already holds a value |
//! | resuming a finished generator | `resume` |

use std::fmt;
use std::future::Future;
use std::iter::FusedIterator;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};

pub use corio_context::coroutine::CoroutineResult;

mod co;
mod resume;
mod start;

pub use co::{Co, Suspend};
pub use resume::Resume;

use co::{Enter, Message, Slot};
use start::Start;

/// A stackless coroutine: an `async` body that suspends at `co.suspend(value).await` and is
/// driven by [`resume(input)`](Generator::resume), the article's `send()`.
///
/// `Input` is what `resume` passes in, `Yield` what [`Co::suspend`] passes out, `Return` what
/// the body finally returns; `F` is the type of the body's future, named only by
/// [`Generator::new`]'s return type, or `dyn Future` after [`boxed`](Generator::boxed).
///
/// ```
/// use corio::generator::{Co, CoroutineResult, Generator};
///
/// // Suspends from a nested async fn: every function on the way must be async.
/// async fn countdown(co: &Co<i32, i32>, from: i32) -> i32 {
///     let mut sum = 0;
///     for n in (1..=from).rev() {
///         sum += co.suspend(n).await;
///     }
///     sum
/// }
///
/// let mut g = Generator::new(|co, from: i32| async move { countdown(&co, from).await });
/// assert_eq!(g.resume(3), CoroutineResult::Yield(3));
/// assert_eq!(g.resume(10), CoroutineResult::Yield(2));
/// assert_eq!(g.resume(20), CoroutineResult::Yield(1));
/// assert_eq!(g.resume(30), CoroutineResult::Return(60));
/// assert!(g.is_done());
/// ```
///
/// With `Input = ()` and `Return = ()` a generator is an [`Iterator`] over its yields.
///
/// See the [module docs](self) for the protocol, why a generator is `Send` exactly when its
/// body's state is, and what happens on panics and misuse.
pub struct Generator<Input, Yield, Return, F: ?Sized = dyn Future<Output = Return>> {
    /// The heap frame (slot and body), allocated by `new` and freed by `free`; `None` once
    /// finished. Only this `Generator` and, during a poll, the body's `Co` (slot only) reach it.
    frame: Option<NonNull<Frame<Input, Yield, F>>>,
    id: u64,
    /// Owns a `Frame`, as a `Box` would (for the drop check).
    _owns: PhantomData<Box<Frame<Input, Yield, F>>>,
    /// `Return` flows out.
    _return: PhantomData<fn() -> Return>,
}

/// A generator's one allocation. The body's future points into the slot (its `Co` does), so
/// neither may move: the frame is pinned in place from `new` until it is freed.
///
/// Never borrowed whole: the generator makes shared references to `slot` and a pinned mutable
/// one to `future`, from the raw pointer, so that the `Co` inside `future` may use `slot`.
struct Frame<I, Y, F: ?Sized> {
    slot: Slot<I, Y>,
    /// Last, so that `Frame<I, Y, F>` can be unsized to `Frame<I, Y, dyn Future>`.
    future: F,
}

// SAFETY: a `Generator` owns its frame as a `Box` would, and the frame holds `Input` and
// `Yield` values (in the slot) and `F`; nothing in it refers to the thread it was created or
// last resumed on (its id is published only while `resume` borrows the generator). So it may move to another thread when those may; the compiler has checked `F`
// for everything the body holds across a suspension. Not `Sync`: `is_started(&self)` uses the
// slot's `Cell`.
unsafe impl<Input: Send, Yield: Send, Return, F: Send + ?Sized> Send
    for Generator<Input, Yield, Return, F>
{
}

impl<Input, Yield, Return> Generator<Input, Yield, Return> {
    /// Creates a generator that will call `f(co, input)` at its first [`resume`](Self::resume)
    /// and run the future it returns: `Generator::new(|co, input| async move { .. })`.
    ///
    /// Allocates the frame once, with room for the slot and for the closure or the body's
    /// future, whichever is larger. Nothing runs until the first resume.
    pub fn new<C, Fut>(f: C) -> Generator<Input, Yield, Return, impl Future<Output = Return>>
    where
        C: FnOnce(Co<Input, Yield>, Input) -> Fut,
        Fut: Future<Output = Return>,
    {
        let id = corio_context::coroutine::next_id();
        let frame =
            Box::into_raw(Box::<Frame<Input, Yield, Start<Input, Yield, C, Fut>>>::new_uninit())
                .cast::<Frame<Input, Yield, Start<Input, Yield, C, Fut>>>();
        // SAFETY: `frame` is a fresh allocation for a `Frame`, written field by field before
        // anything reads it; the `Co` points into it, where the slot stays until the frame is
        // freed (it never moves).
        let frame = unsafe {
            let slot = &raw mut (*frame).slot;
            slot.write(Slot::new());
            let co = Co::new(id, NonNull::new_unchecked(slot));
            (&raw mut (*frame).future).write(Start::new(f, co));
            NonNull::new_unchecked(frame)
        };
        Generator {
            frame: Some(frame),
            id,
            _owns: PhantomData,
            _return: PhantomData,
        }
    }
}

impl<Input, Yield, Return, F> Generator<Input, Yield, Return, F>
where
    F: Future<Output = Return> + ?Sized,
{
    /// Runs the body until it suspends or returns.
    ///
    /// The first call starts the body with `input` as the closure's second argument; later
    /// calls make the pending `co.suspend(..).await` return `input`.
    ///
    /// # Panics
    ///
    /// If the generator has finished; if the body awaits a future that is not ready (a
    /// generator has no executor: see "Misuse" in the module docs), after which it is
    /// finished; or with the body's own panic, after which it is finished.
    #[inline]
    pub fn resume(&mut self, input: Input) -> CoroutineResult<Yield, Return> {
        let Some(frame) = self.frame else { finished() };
        let frame = frame.as_ptr();
        // SAFETY: the frame is ours and alive while `self.frame` is `Some`; the two references
        // are to disjoint fields (see `Frame`), the future's is pinned because the frame never
        // moves, and both are dead before the frame can be freed below.
        let (slot, future) = unsafe { (&(*frame).slot, Pin::new_unchecked(&mut (*frame).future)) };
        // Protocol steps 2 and 5: hand in the input, poll once.
        slot.put(Message::Input(input));
        let poll = {
            // If the body panics: restore the published id, then free the frame (dropping the
            // body's locals) on the way out; the generator is finished.
            let on_unwind = FreeOnUnwind(self);
            let _enter = Enter::new(on_unwind.0.id);
            let poll = future.poll(&mut Context::from_waker(Waker::noop()));
            drop(_enter);
            std::mem::forget(on_unwind);
            poll
        };
        match poll {
            // Step 4: the body suspended; its value is in the slot.
            Poll::Pending => match slot.take() {
                Message::Yield(value) => CoroutineResult::Yield(value),
                _ => {
                    self.free();
                    not_ready()
                }
            },
            // Step 6. An unclaimed input or a yield raced out of a `select!` goes with it.
            Poll::Ready(value) => {
                self.free();
                CoroutineResult::Return(value)
            }
        }
    }

    /// Whether the body has returned or panicked.
    #[inline]
    pub fn is_done(&self) -> bool {
        self.frame.is_none()
    }

    /// Whether the generator has been resumed at least once.
    pub fn is_started(&self) -> bool {
        match self.frame {
            // SAFETY: the frame is alive while `self.frame` is `Some`, and no poll is running
            // (that would need `&mut self`); a shared reference to the slot aliases nothing.
            Some(frame) => !unsafe { &(*frame.as_ptr()).slot }.is_fresh(),
            None => true,
        }
    }

    /// This generator's process-unique id (from the same counter as stackful coroutines' ids).
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The size of the heap frame in bytes: the slot, plus the closure before the first resume
    /// or the body's state machine afterwards (which holds only what is alive across a
    /// suspension); 0 once finished. The `Generator` value itself adds
    /// `size_of::<Generator<..>>()` (16 bytes, 24 when boxed).
    pub fn frame_size(&self) -> usize {
        // SAFETY: `size_of_val_raw` is unstable; a shared reference to the whole frame is fine
        // here: the frame is alive and no poll is running (that would need `&mut self`).
        self.frame
            .map_or(0, |frame| size_of_val(unsafe { frame.as_ref() }))
    }

    /// Frees the frame, dropping the slot's contents and the body's future (and with it
    /// every local alive at the suspension point). The generator is finished.
    fn free(&mut self) {
        if let Some(frame) = self.frame.take() {
            // SAFETY: the frame was allocated by `Box` in `new` (possibly unsized since), is
            // freed only here, and `self.frame` no longer points to it.
            drop(unsafe { Box::from_raw(frame.as_ptr()) });
        }
    }
}

/// Frees the generator's frame if dropped, i.e. if the poll it guards unwinds.
struct FreeOnUnwind<'g, I, Y, R, F: Future<Output = R> + ?Sized>(&'g mut Generator<I, Y, R, F>);

impl<I, Y, R, F: Future<Output = R> + ?Sized> Drop for FreeOnUnwind<'_, I, Y, R, F> {
    #[cold]
    fn drop(&mut self) {
        self.0.free();
    }
}

impl<Input, Yield, Return, F: ?Sized> Drop for Generator<Input, Yield, Return, F> {
    fn drop(&mut self) {
        if let Some(frame) = self.frame.take() {
            // SAFETY: as in `free`.
            drop(unsafe { Box::from_raw(frame.as_ptr()) });
        }
    }
}

impl<Input, Yield, Return, F> Generator<Input, Yield, Return, F>
where
    F: Future<Output = Return>,
{
    /// Erases the body's type, so that the generator's type can be named, e.g. as a struct
    /// field: `Generator<Input, Yield, Return>`. Costs one indirect call per resume; no
    /// allocation (the frame stays where it is).
    pub fn boxed<'a>(self) -> Generator<Input, Yield, Return, dyn Future<Output = Return> + 'a>
    where
        F: 'a,
    {
        let this = ManuallyDrop::new(self);
        Generator {
            frame: this
                .frame
                .map(|f| -> NonNull<Frame<Input, Yield, dyn Future<Output = Return> + 'a>> { f }),
            id: this.id,
            _owns: PhantomData,
            _return: PhantomData,
        }
    }
}

#[cold]
#[track_caller]
fn finished() -> ! {
    panic!("corio: resumed a generator that has already finished");
}

#[cold]
#[track_caller]
fn not_ready() -> ! {
    panic!(
        "corio: a generator's body awaited a future that is not ready. A generator has no \
         executor: it suspends only at `co.suspend(..).await`, and nothing would wake it for \
         IO, a timer or a channel. Run such code in a corio task or stackful coroutine, or \
         yield what to wait for and let the code that resumes the generator wait for it"
    );
}

/// The values a generator yields, until it returns.
///
/// Only for `Return = ()`, so that no return value is silently dropped: for a generator that
/// returns something, call [`resume`](Generator::resume) and match
/// [`CoroutineResult::Return`]. Fused: after the last value, `next` keeps returning `None`.
///
/// ```compile_fail,E0277
/// use corio::generator::Generator;
///
/// let returns = Generator::new(|co, ()| async move {
///     co.suspend(1).await;
///     "a return value that iteration would lose"
/// });
/// for _ in returns {}
/// ```
impl<Yield, F> Iterator for Generator<(), Yield, (), F>
where
    F: Future<Output = ()> + ?Sized,
{
    type Item = Yield;

    #[inline]
    fn next(&mut self) -> Option<Yield> {
        if self.is_done() {
            return None;
        }
        self.resume(()).as_yield()
    }
}

impl<Yield, F> FusedIterator for Generator<(), Yield, (), F> where F: Future<Output = ()> + ?Sized {}

// The slot's values are moved in and out, never pinned; the frame is pinned in its own box.
impl<Input, Yield, Return, F: ?Sized> Unpin for Generator<Input, Yield, Return, F> {}

impl<Input, Yield, Return, F> fmt::Debug for Generator<Input, Yield, Return, F>
where
    F: Future<Output = Return> + ?Sized,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match (self.is_done(), self.is_started()) {
            (true, _) => "finished",
            (false, true) => "suspended",
            (false, false) => "created",
        };
        f.debug_struct("Generator")
            .field("id", &self.id)
            .field("state", &state)
            .field("frame_size", &self.frame_size())
            .finish()
    }
}
