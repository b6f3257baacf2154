//! corio: Go-style concurrency for Rust.
//!
//! The runtime is being built; today this crate re-exports the bare mechanism of
//! [`corio_context`]: stackful coroutines with their own guarded stacks.

pub use corio_context::coroutine;
pub use corio_context::stack;
