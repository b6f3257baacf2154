//! A stackless task's body: a future, polled in place.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::core::{Body, Payload, TaskRef};

/// The future, until it completes or is cancelled.
pub(crate) enum Stackless<F> {
    Pending(F),
    Done,
}

impl<F> Body for Stackless<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    type Output = F::Output;

    #[inline]
    fn poll_body(
        &mut self,
        _: TaskRef<'_>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<F::Output, Payload>> {
        let Stackless::Pending(fut) = self else {
            unreachable!("corio: polled a finished future");
        };
        // SAFETY: the body lives in its task's heap cell and is never moved: it is dropped in
        // place (`*self = Done`), so the future stays pinned.
        let fut = unsafe { Pin::new_unchecked(fut) };
        match catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }

    fn poll_cancel(&mut self, _: TaskRef<'_>, _: &mut Context<'_>) -> Poll<Option<Payload>> {
        // Dropping in place keeps the pin promise.
        Poll::Ready(catch_unwind(AssertUnwindSafe(|| *self = Stackless::Done)).err())
    }
}

/// A closure for the blocking pool, run to completion in one poll.
pub(crate) struct Blocking<F>(pub(crate) Option<F>);

impl<F, T> Body for Blocking<F>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    type Output = T;

    fn poll_body(&mut self, _: TaskRef<'_>, _: &mut Context<'_>) -> Poll<Result<T, Payload>> {
        let f = self.0.take().expect("corio: a blocking task ran twice");
        Poll::Ready(catch_unwind(AssertUnwindSafe(f)))
    }

    fn poll_cancel(&mut self, _: TaskRef<'_>, _: &mut Context<'_>) -> Poll<Option<Payload>> {
        Poll::Ready(catch_unwind(AssertUnwindSafe(|| drop(self.0.take()))).err())
    }
}
