//! The yield channel: the [`Slot`] in a generator's frame, the [`Co`] handle that points to it,
//! the published id that says when the handle may use it, and the [`Suspend`] future.
//!
//! See "How `co.suspend` finds its slot" in the module docs of [`super`] for the reasoning.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::mem;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// What a generator's slot holds (see "Protocol" in the module docs).
pub(super) enum Message<I, Y> {
    /// The generator has never been resumed.
    Fresh,
    /// Between hand-overs: the body is running, or the generator is suspended and its last
    /// yield has been taken by `resume`.
    Empty,
    /// Put by `resume` just before it polls the body; taken by the body's first poll or by the
    /// pending [`Suspend`].
    Input(I),
    /// Put by a [`Suspend`] on its first poll; taken by `resume` when the body returns
    /// `Pending`.
    Yield(Y),
}

/// The yield channel of one generator, in its heap frame beside the body's future.
///
/// Who touches it: the `Generator` (through shared references to this field only, never to
/// the whole frame) before and after it polls the body; the body, through its [`Co`]'s
/// pointer, only while that poll runs, in the same execution context (checked: see
/// [`Co::with_slot`]).
/// Everything goes through the `Cell`; no reference into the message is ever made.
pub(super) struct Slot<I, Y> {
    msg: Cell<Message<I, Y>>,
}

impl<I, Y> Slot<I, Y> {
    pub(super) fn new() -> Slot<I, Y> {
        Slot {
            msg: Cell::new(Message::Fresh),
        }
    }

    /// Puts `msg` in the slot and returns what was there.
    #[inline]
    pub(super) fn replace(&self, msg: Message<I, Y>) -> Message<I, Y> {
        self.msg.replace(msg)
    }

    /// Puts `msg` in the slot, dropping what was there.
    #[inline]
    pub(super) fn put(&self, msg: Message<I, Y>) {
        self.msg.set(msg);
    }

    /// Takes what is in the slot, leaving it `Empty`.
    #[inline]
    pub(super) fn take(&self) -> Message<I, Y> {
        self.msg.replace(Message::Empty)
    }

    /// Whether the slot has ever held an input.
    pub(super) fn is_fresh(&self) -> bool {
        let msg = self.take();
        let fresh = matches!(msg, Message::Fresh);
        self.msg.set(msg);
        fresh
    }
}

/// Publishes a generator's id as the running context's generator (corio-context's
/// per-context word, [`corio_context::local`]) for the duration of one poll, and restores the
/// previous value when dropped, also when the poll unwinds (a generator may resume another one
/// from its body: the inner resume must give the outer generator its id back).
///
/// The word is saved and restored by every stackful switch, so the scopes of `Enter`s nest
/// even when the coroutine that polls a generator suspends inside the poll and another runs on
/// the thread meanwhile. A drop that finds another id than its own published would restore an
/// id that is not its own (the failure issue 7 describes): it aborts instead.
pub(super) struct Enter {
    id: u64,
    prev: u64,
}

impl Enter {
    #[inline]
    pub(super) fn new(id: u64) -> Enter {
        Enter {
            id,
            // SAFETY: `id` is the generator this scope polls, true while the `Enter` lives;
            // its drop, in this same context, puts the previous value back.
            prev: unsafe { corio_context::local::replace(id) },
        }
    }
}

impl Drop for Enter {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the value `new` found, put back as the scope ends, in the same context
        // (scopes within one context nest).
        let published = unsafe { corio_context::local::replace(self.prev) };
        if published != self.id {
            enter_mismatch(self.id, published);
        }
    }
}

/// A generator's scope found another id published when it closed: a bug in corio (the per-
/// context word was not switched with a stack). Continuing could let a `Co` reach a freed frame.
#[cold]
#[inline(never)]
fn enter_mismatch(id: u64, published: u64) -> ! {
    eprintln!(
        "fatal runtime error: corio: generator {id} ended its resume while generator \
         {published} was published for this context; aborting"
    );
    std::process::abort()
}

/// The handle a generator's body uses to suspend itself: [`co.suspend(value).await`](Co::suspend).
///
/// A `Co` is given to the body once, by value, at the first resume. Pass it to nested
/// `async fn`s as `&co`. It works only inside the body of the generator it was given to, while
/// that generator is being resumed; anywhere else [`suspend`](Co::suspend) panics (see
/// "Misuse" in the module docs).
pub struct Co<Input, Yield> {
    /// The slot in this generator's frame. Dereferenced only after checking that this thread
    /// is resuming the generator, which proves the frame is alive.
    slot: NonNull<Slot<Input, Yield>>,
    id: u64,
}

// SAFETY: a `Co` dereferences its pointer only inside `with_slot`, after checking that the
// calling thread is polling this very generator, which then owns the slot and cannot free it
// during the poll; on any other thread, or at any other time, the check fails and it panics
// without touching the slot. Holding or sharing a `Co` therefore gives no thread access to the
// slot, and whether a generator may cross threads is decided by what its body holds across a
// suspension, as for any future.
unsafe impl<Input, Yield> Send for Co<Input, Yield> {}
// SAFETY: as above; `&Co` gives nothing more than `Co`.
unsafe impl<Input, Yield> Sync for Co<Input, Yield> {}

impl<Input, Yield> Co<Input, Yield> {
    pub(super) fn new(id: u64, slot: NonNull<Slot<Input, Yield>>) -> Co<Input, Yield> {
        Co { slot, id }
    }

    /// Suspends the generator, handing `value` to the `resume` that is running it; the future
    /// completes with the input of the next `resume`.
    ///
    /// This is the only way a generator suspends: it is the `yield` of a generator and the
    /// `await` on the article's `send()`. It does nothing until awaited.
    ///
    /// # Panics
    ///
    /// When polled anywhere but in the body of the generator this `Co` was given to, while
    /// that generator is being resumed; when two suspensions overlap (two `co.suspend` futures
    /// raced in `join!`/`select!`); see "Misuse" in the module docs.
    #[inline]
    pub fn suspend(&self, value: Yield) -> Suspend<'_, Input, Yield> {
        Suspend {
            co: self,
            state: SuspendState::Yield(value),
        }
    }

    /// The id of the generator this handle suspends (the same as `Generator::id`).
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Takes the input of the first resume: called once, by the generator's start, when its
    /// body is polled for the first time.
    #[inline]
    pub(super) fn take_first_input(&self) -> Input {
        self.with_slot(|slot| match slot.take() {
            Message::Input(input) => input,
            _ => unreachable!("corio: a generator was started without an input"),
        })
    }

    /// Runs `f` on this generator's slot, after checking that this thread is polling that
    /// generator's body.
    #[inline]
    fn with_slot<T>(&self, f: impl FnOnce(&Slot<Input, Yield>) -> T) -> T {
        let current = corio_context::local::get();
        if current != self.id {
            wrong_generator(self.id, current);
        }
        // SAFETY: ids are process-unique and never 0, so the running execution context (this
        // thread's stack or the coroutine running on it) is inside the `resume` of the
        // generator that made this `Co`: the word is per context (every switch saves and
        // restores it), and `Enter` restores it before that resume returns or unwinds. That generator owns the frame the pointer points into and frees
        // it only after the poll; the slot is a `Slot<Input, Yield>` and is only ever accessed
        // through shared references, so this one aliases nothing mutable.
        f(unsafe { self.slot.as_ref() })
    }
}

impl<Input, Yield> fmt::Debug for Co<Input, Yield> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Co").field("generator", &self.id).finish()
    }
}

#[cold]
#[track_caller]
fn wrong_generator(id: u64, current: u64) -> ! {
    if current == 0 {
        panic!(
            "corio: co.suspend of generator {id} was polled while no generator is being \
             resumed on this thread: a Co works only inside the body of its own generator, \
             during a resume"
        );
    }
    panic!(
        "corio: co.suspend of generator {id} was polled while generator {current} is being \
         resumed: a Co suspends only the generator it was given to (resume the other \
         generator from outside instead)"
    );
}

/// The future returned by [`Co::suspend`]: `Pending` once, after handing its value to the
/// slot; `Ready(input)` when polled again after the next `resume` has put an input there.
#[must_use = "a generator suspends only when the future is awaited: `co.suspend(value).await`"]
pub struct Suspend<'co, Input, Yield> {
    co: &'co Co<Input, Yield>,
    state: SuspendState<Yield>,
}

enum SuspendState<Y> {
    /// Not polled yet: holds the value to hand out.
    Yield(Y),
    /// The value is in the slot (or taken by `resume`); waiting for the next input.
    Waiting,
    /// Completed.
    Done,
}

// The yielded value is moved, never pinned: `Suspend` is `Unpin` whatever `Yield` is.
impl<Input, Yield> Unpin for Suspend<'_, Input, Yield> {}

impl<Input, Yield> Future for Suspend<'_, Input, Yield> {
    type Output = Input;

    #[inline]
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Input> {
        let this = self.get_mut();
        let co = this.co;
        let state = mem::replace(&mut this.state, SuspendState::Waiting);
        co.with_slot(|slot| match state {
            // Step 3 of the protocol: hand the value out and return `Pending`.
            SuspendState::Yield(value) => match slot.replace(Message::Yield(value)) {
                Message::Empty => Poll::Pending,
                other => {
                    this.state = SuspendState::Done;
                    overlapping_suspend(other)
                }
            },
            // Step 5: the next resume has put an input; take it.
            SuspendState::Waiting => match slot.replace(Message::Empty) {
                Message::Input(input) => {
                    this.state = SuspendState::Done;
                    Poll::Ready(input)
                }
                // Polled again within the same resume (by a combinator): still waiting.
                Message::Yield(value) => {
                    slot.put(Message::Yield(value));
                    Poll::Pending
                }
                Message::Empty | Message::Fresh => {
                    this.state = SuspendState::Done;
                    panic!(
                        "corio: a co.suspend future found no input: another co.suspend of the \
                         same generator took it (do not race co.suspend in join!/select!)"
                    )
                }
            },
            SuspendState::Done => {
                this.state = SuspendState::Done;
                panic!("corio: a co.suspend future was polled after it completed")
            }
        })
    }
}

impl<Input, Yield> fmt::Debug for Suspend<'_, Input, Yield> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            SuspendState::Yield(_) => "not yet polled",
            SuspendState::Waiting => "waiting for resume",
            SuspendState::Done => "done",
        };
        f.debug_struct("Suspend")
            .field("generator", &self.co.id)
            .field("state", &state)
            .finish()
    }
}

#[cold]
#[track_caller]
fn overlapping_suspend<I, Y>(found: Message<I, Y>) -> ! {
    match found {
        Message::Yield(_) => panic!(
            "corio: two co.suspend futures of one generator were polled in the same resume \
             (raced in join!/select!?): a generator suspends at one point at a time"
        ),
        _ => panic!(
            "corio: co.suspend was polled while the input of the last resume was still \
             unclaimed: the co.suspend that yielded was dropped before it completed (lost a \
             select!?)"
        ),
    }
}
