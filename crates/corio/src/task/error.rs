//! `JoinError`: why a task produced no output.

use std::any::Any;
use std::fmt;

use super::core::Payload;

/// A task did not return a value: it panicked, or it was cancelled (`JoinHandle::abort`, or the
/// runtime shut down).
///
/// ```
/// let rt = corio::Runtime::builder().workers(1).build().unwrap();
/// let err = rt.block_on(async {
///     corio::spawn(async { panic!("boom") }).await.unwrap_err()
/// });
/// assert!(err.is_panic());
/// assert_eq!(err.into_panic().downcast_ref::<&str>(), Some(&"boom"));
/// ```
pub struct JoinError {
    id: u64,
    repr: Repr,
}

enum Repr {
    Cancelled,
    Panic(SyncPayload),
}

/// A panic payload that is `Sync` because it is only reachable by value or `&mut`.
struct SyncPayload(Payload);

// SAFETY: through a shared `&JoinError` the payload is only asked for its `TypeId` (a constant
// of its type) and, if it is a `&'static str` or a `String`, read as that type, which is Sync.
// Everything else reaches the payload by value (`into_panic`).
unsafe impl Sync for SyncPayload {}

/// The payload the runtime raises inside a coroutine to unwind it on cancellation.
///
/// It carries the coroutine's "unwinding" flag and clears it when dropped: if user code
/// catches the payload and drops it, the coroutine is no longer unwinding, and its next
/// suspension raises the cancellation again (`StackfulCtx::suspend`).
pub(crate) struct Cancelled {
    pub(crate) unwinding: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Drop for Cancelled {
    fn drop(&mut self) {
        if let Some(flag) = &self.unwinding {
            flag.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

impl JoinError {
    pub(crate) fn cancelled(id: u64) -> JoinError {
        JoinError {
            id,
            repr: Repr::Cancelled,
        }
    }

    /// A task's panic payload; the runtime's own cancellation payload means "cancelled".
    pub(crate) fn from_payload(id: u64, payload: Payload) -> JoinError {
        if payload.is::<Cancelled>() {
            return JoinError::cancelled(id);
        }
        JoinError {
            id,
            repr: Repr::Panic(SyncPayload(payload)),
        }
    }

    /// Whether the task was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.repr, Repr::Cancelled)
    }

    /// Whether the task panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.repr, Repr::Panic(_))
    }

    /// The panic payload, to inspect or to continue the panic with
    /// `std::panic::resume_unwind`.
    ///
    /// # Panics
    ///
    /// If the task was cancelled rather than panicked.
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic()
            .expect("corio: `JoinError::into_panic` on a cancelled task")
    }

    /// The panic payload, or the error back if the task was cancelled.
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, JoinError> {
        match self.repr {
            Repr::Panic(p) => Ok(p.0),
            Repr::Cancelled => Err(self),
        }
    }

    /// The id of the task.
    pub fn id(&self) -> u64 {
        self.id
    }

    fn message(&self) -> Option<&str> {
        match &self.repr {
            Repr::Panic(SyncPayload(p)) => payload_text(&**p),
            Repr::Cancelled => None,
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.repr, self.message()) {
            (Repr::Cancelled, _) => write!(f, "task {} was cancelled", self.id),
            (Repr::Panic(_), Some(msg)) => {
                write!(f, "task {} panicked with message {msg:?}", self.id)
            }
            (Repr::Panic(_), None) => write!(f, "task {} panicked", self.id),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.repr, self.message()) {
            (Repr::Cancelled, _) => write!(f, "JoinError::Cancelled({})", self.id),
            (Repr::Panic(_), Some(msg)) => write!(f, "JoinError::Panic({}, {msg:?})", self.id),
            (Repr::Panic(_), None) => write!(f, "JoinError::Panic({}, ..)", self.id),
        }
    }
}

impl std::error::Error for JoinError {}

impl From<JoinError> for std::io::Error {
    fn from(e: JoinError) -> std::io::Error {
        std::io::Error::other(e.to_string())
    }
}

/// A panic payload's message, if it is a string (`&str` or `String`, what `panic!` makes).
pub(crate) fn payload_text(p: &(dyn Any + Send)) -> Option<&str> {
    p.downcast_ref::<&str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
}

/// Drops a caught panic's payload. Its own drop may panic too (a payload is any type): that
/// panic's payload is forgotten, so that nothing unwinds from here into the runtime (a
/// worker died of it: `tests/rt_review_lifecycle.rs`). std aborts in the like case ("thread
/// result panicked on drop").
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(payload)))
    {
        std::mem::forget(again);
    }
}
