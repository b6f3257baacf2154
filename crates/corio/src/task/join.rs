//! `JoinHandle`: waiting for a task's output, in blocking style or as a future.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use super::JoinError;
use super::core::Header;

/// An owned permission to wait for a task (stackful or stackless) and take its output.
///
/// `join()` waits in blocking style: inside a stackful coroutine it suspends only that
/// coroutine, on a plain thread it parks the thread; inside an async task, `.await` the handle
/// instead (it is a `Future`). Dropping the handle detaches the task, as with
/// `std::thread::JoinHandle`: it keeps running and its output is dropped.
///
/// ```
/// let rt = corio::Runtime::builder().workers(2).build().unwrap();
/// let sum = rt.run(|| {
///     let handles: Vec<_> = (1..=10u64).map(|i| corio::go(move || i * i)).collect();
///     handles.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
/// });
/// assert_eq!(sum, 385);
/// ```
pub struct JoinHandle<T> {
    raw: NonNull<Header>,
    _output: PhantomData<T>,
}

// SAFETY: the handle only moves the output (`T: Send`) and touches the task through its
// thread-safe state word.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// The handle holds no `T` inline (the output lives in the task's cell): moving it is fine.
impl<T> Unpin for JoinHandle<T> {}

// SAFETY: `&JoinHandle` allows only `is_finished`, `abort` and `id`, all thread-safe.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

// Unwind safety, as tokio's handles: a panic cannot leave the task half-changed for a handle
// used after a `catch_unwind`, since the handle sees it only through atomic transitions of
// its state word (the output moves out whole).
impl<T> std::panic::UnwindSafe for JoinHandle<T> {}
impl<T> std::panic::RefUnwindSafe for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// # Safety
    /// `raw` must be a task whose output type is `T`, and the caller gives its JoinHandle
    /// reference to the new handle.
    pub(crate) unsafe fn from_raw(raw: NonNull<Header>) -> JoinHandle<T> {
        JoinHandle {
            raw,
            _output: PhantomData,
        }
    }

    fn header(&self) -> &Header {
        // SAFETY: the handle holds a reference.
        unsafe { self.raw.as_ref() }
    }

    /// Waits for the task and returns its output, or why there is none.
    ///
    /// # Panics
    ///
    /// Inside an async task (it would stall the worker): `.await` the handle there.
    #[track_caller]
    pub fn join(self) -> Result<T, JoinError> {
        crate::block_on(self)
    }

    /// Whether the task has finished (returned, panicked or been cancelled).
    pub fn is_finished(&self) -> bool {
        self.header().state.load().is_complete()
    }

    /// Cancels the task. A stackless task is dropped the next time a worker picks it up; a
    /// stackful coroutine is resumed with a cancellation that unwinds its stack, running its
    /// destructors, on its own thread. The handle then returns `Err(JoinError)` with
    /// `is_cancelled()`. A task that already finished keeps its result.
    ///
    /// # Destructors that panic
    ///
    /// Cancelling a coroutine *unwinds* its stack (a panic with a private payload), so a
    /// destructor on it that panics during that unwind panics inside a panic, and Rust aborts
    /// the process ("panic in a destructor during cleanup"), as it would on a thread. An async
    /// task is dropped, not unwound: a destructor that panics there is caught and the handle
    /// returns `Err(JoinError)` with `is_panic()`.
    ///
    /// # Under `panic = "abort"`
    ///
    /// There is no unwinding, so a coroutine that has started is not resumed at all: its
    /// stack is leaked (never reused; the destructors on it never run), one line on stderr says
    /// so, and the handle returns the cancellation as usual. A coroutine that has not started
    /// yet, and any async task, is dropped normally.
    pub fn abort(&self) {
        super::abort::abort_task(self.raw);
    }

    /// A handle that can cancel the task but not take its output.
    pub fn abort_handle(&self) -> super::AbortHandle {
        self.header().state.ref_inc();
        // SAFETY: we just took a reference for it.
        unsafe { super::AbortHandle::from_raw(self.raw) }
    }

    /// The task's id (the same as `corio::current().id()` inside it).
    pub fn id(&self) -> u64 {
        self.header().id
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if !crate::runtime::context::budget_proceed() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let mut out: Poll<Result<T, JoinError>> = Poll::Pending;
        // SAFETY: the vtable belongs to a task whose output is T, and `out` has the type it
        // writes.
        unsafe {
            (self.header().vtable.try_read_output)(self.raw, (&raw mut out).cast(), cx.waker());
        }
        out
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        let header = self.header();
        if header.state.drop_join_handle_fast().is_ok() {
            return;
        }
        // SAFETY: we give up our reference.
        unsafe { super::harness::drop_join_handle_slow(self.raw) }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id())
            .field("finished", &self.is_finished())
            .finish()
    }
}
