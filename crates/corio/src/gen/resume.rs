//! [`Resume`]: the resume/yield protocol shared by the stackful [`Coroutine`] and the stackless
//! [`Generator`], so that code and benchmarks can take either kind.

use std::future::Future;

use corio_context::coroutine::{Coroutine, CoroutineResult};

use super::Generator;

/// A coroutine that can be resumed with an `Input`: it runs until it yields a
/// [`Yield`](Resume::Yield) or returns its [`Return`](Resume::Return).
///
/// Implemented by the stackful [`Coroutine`] and the stackless [`Generator`], which follow the
/// same protocol: the first `resume` starts the body with its input; each later one makes the
/// pending suspension return its input; a panic in the body propagates out of `resume` and
/// finishes the coroutine; resuming a finished coroutine panics.
///
/// ```
/// use corio::coroutine::{Coroutine, CoroutineResult};
/// use corio::generator::{Generator, Resume};
///
/// /// Sends 1, 2, 3, .. and adds up the replies until the coroutine returns.
/// fn drive(co: &mut impl Resume<u64, Yield = u64, Return = &'static str>) -> u64 {
///     let (mut total, mut input) = (0, 1);
///     loop {
///         match co.resume(input) {
///             CoroutineResult::Yield(y) => total += y,
///             CoroutineResult::Return(_) => return total,
///         }
///         input += 1;
///     }
/// }
///
/// let mut stackful = Coroutine::new(|y, mut x: u64| {
///     while x < 4 {
///         x = y.suspend(x * 10);
///     }
///     "done"
/// });
/// let mut stackless = Generator::new(|co, mut x: u64| async move {
///     while x < 4 {
///         x = co.suspend(x * 10).await;
///     }
///     "done"
/// });
/// assert_eq!(drive(&mut stackful), 60);
/// assert_eq!(drive(&mut stackless), 60);
///
/// // Both kinds behind one type:
/// let mut both: Vec<Box<dyn Resume<u64, Yield = u64, Return = ()>>> = vec![
///     Box::new(Coroutine::new(|y, x: u64| {
///         y.suspend(x + 1);
///     })),
///     Box::new(Generator::new(|co, x: u64| async move {
///         co.suspend(x + 1).await;
///     })),
/// ];
/// for co in &mut both {
///     assert_eq!(co.resume(1), CoroutineResult::Yield(2));
///     assert_eq!(co.resume(0), CoroutineResult::Return(()));
///     assert!(co.is_done());
/// }
/// ```
pub trait Resume<Input> {
    /// What the coroutine hands out when it suspends.
    type Yield;
    /// What the coroutine returns when it finishes.
    type Return;

    /// Runs the coroutine until it suspends or finishes.
    ///
    /// # Panics
    ///
    /// If the coroutine has finished, or with the coroutine's own panic.
    fn resume(&mut self, input: Input) -> CoroutineResult<Self::Yield, Self::Return>;

    /// Whether the coroutine has returned or panicked (it must not be resumed again).
    fn is_done(&self) -> bool;
}

impl<Input, Yield, Return> Resume<Input> for Coroutine<Input, Yield, Return> {
    type Yield = Yield;
    type Return = Return;

    #[inline]
    fn resume(&mut self, input: Input) -> CoroutineResult<Yield, Return> {
        Coroutine::resume(self, input)
    }

    #[inline]
    fn is_done(&self) -> bool {
        Coroutine::is_done(self)
    }
}

impl<Input, Yield, Return, F> Resume<Input> for Generator<Input, Yield, Return, F>
where
    F: Future<Output = Return> + ?Sized,
{
    type Yield = Yield;
    type Return = Return;

    #[inline]
    fn resume(&mut self, input: Input) -> CoroutineResult<Yield, Return> {
        Generator::resume(self, input)
    }

    #[inline]
    fn is_done(&self) -> bool {
        Generator::is_done(self)
    }
}

impl<Input, T: Resume<Input> + ?Sized> Resume<Input> for &mut T {
    type Yield = T::Yield;
    type Return = T::Return;

    #[inline]
    fn resume(&mut self, input: Input) -> CoroutineResult<T::Yield, T::Return> {
        (**self).resume(input)
    }

    #[inline]
    fn is_done(&self) -> bool {
        (**self).is_done()
    }
}

impl<Input, T: Resume<Input> + ?Sized> Resume<Input> for Box<T> {
    type Yield = T::Yield;
    type Return = T::Return;

    #[inline]
    fn resume(&mut self, input: Input) -> CoroutineResult<T::Yield, T::Return> {
        (**self).resume(input)
    }

    #[inline]
    fn is_done(&self) -> bool {
        (**self).is_done()
    }
}
