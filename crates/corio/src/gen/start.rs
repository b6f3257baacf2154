//! [`Start`]: the future a generator owns, which calls the user's closure at the first resume.
//!
//! Calling the closure lazily gives the body the first resume's input as an argument, as the
//! stackful `Coroutine` does. Doing it in a hand-written two-stage enum rather than in a
//! wrapping `async move { f(co, input).await }` keeps the frame small: rustc stores an async
//! block's captures in a prefix that every state keeps, so the wrapper would carry the
//! closure's captures twice, once in the prefix and once inside the body's own frame (with a
//! 256-byte capture: 800 bytes instead of 536, measured with rustc 1.95). In an enum, the
//! closure and the body's frame share the same bytes.

use std::future::Future;
use std::marker::PhantomData;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::co::Co;

/// The generator's future: the user's closure until the first poll, then the body's future.
pub(super) struct Start<I, Y, C, Fut> {
    stage: Stage<I, Y, C, Fut>,
    /// The closure takes the first `I`; `Start` holds none.
    _input: PhantomData<fn(I)>,
}

enum Stage<I, Y, C, Fut> {
    /// Not resumed yet: the closure and the body's `Co`.
    Created { f: C, co: Co<I, Y> },
    /// Only while the closure runs; if it panics the generator is finished and this is what
    /// gets dropped.
    Starting,
    /// The body. Structurally pinned: never moved out of once written.
    Running(Fut),
}

impl<I, Y, C, Fut> Start<I, Y, C, Fut>
where
    C: FnOnce(Co<I, Y>, I) -> Fut,
    Fut: Future,
{
    pub(super) fn new(f: C, co: Co<I, Y>) -> Self {
        Start {
            stage: Stage::Created { f, co },
            _input: PhantomData,
        }
    }

    /// Step 2 of the protocol: the first poll takes the input and calls the closure.
    #[cold]
    fn start(&mut self) {
        let Stage::Created { f, co } = mem::replace(&mut self.stage, Stage::Starting) else {
            unreachable!("corio: a generator was started twice");
        };
        let input = co.take_first_input();
        self.stage = Stage::Running(f(co, input));
    }
}

impl<I, Y, C, Fut> Future for Start<I, Y, C, Fut>
where
    C: FnOnce(Co<I, Y>, I) -> Fut,
    Fut: Future,
{
    type Output = Fut::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fut::Output> {
        // SAFETY: only `Running(fut)` is structurally pinned, and `fut` is never moved: `start`
        // moves the closure out of `Created` (never pinned) and writes `Running` in place; the
        // enum is dropped in place.
        let this = unsafe { self.get_unchecked_mut() };
        if let Stage::Created { .. } = this.stage {
            this.start();
        }
        match &mut this.stage {
            // SAFETY: see above: `fut` stays where it is until it is dropped.
            Stage::Running(fut) => unsafe { Pin::new_unchecked(fut) }.poll(cx),
            _ => unreachable!("corio: a generator's body was polled after its closure panicked"),
        }
    }
}
