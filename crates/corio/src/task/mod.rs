//! Tasks: one header for stackful coroutines and stackless futures.
//!
//! A task is one heap allocation (`core.rs`) reached through typed references (`raw.rs`),
//! whose lifecycle is a state word (`state.rs`) and whose polls follow one protocol
//! (`harness.rs`). Its body is a future (`stackless.rs`) or a coroutine (`stackful.rs`); the
//! scheduler never needs to know which, except to keep a started coroutine on its thread.

mod abort;
mod alloc;
pub(crate) mod core;
pub(crate) mod error;
mod harness;
mod join;
pub(crate) mod raw;
pub(crate) mod stackful;
pub(crate) mod stackless;
pub(crate) mod state;
pub(crate) mod waker;

#[cfg(all(test, not(loom)))]
mod tests;

pub use self::abort::AbortHandle;
pub use self::error::JoinError;
pub use self::join::JoinHandle;
