//! corio: Go-style concurrency for Rust.
//!
//! The runtime is being built; today this crate re-exports the bare mechanism of
//! [`corio_context`]: stackful coroutines with their own guarded stacks.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

pub use corio_context::coroutine;
pub use corio_context::stack;
#[path = "gen/mod.rs"]
pub mod generator;

// Module tree (being filled in; helpers add their files under these).
#[allow(dead_code)]
mod loom;
#[allow(dead_code)]
pub(crate) mod runtime;
#[allow(dead_code)]
pub(crate) mod sync;
#[allow(dead_code)]
pub(crate) mod time;
