//! Stacks, the context switch and a bare stackful coroutine: the bottom layer of corio.
//!
//! This crate has no scheduler and does no IO. It gives the rest of corio (and anyone who wants
//! the mechanism alone) three things:
//!
//! - [`arch`-level context switching](coroutine#protocol): inline `asm!` that saves only what
//!   the ABI makes callee-saved and lets the compiler spill the rest only where it is live, with
//!   matched call/return pairs and CFI so backtraces cross from a coroutine into its resumer;
//! - [`stack`]: an arena of guarded stack slots, committed on first touch, cached per thread;
//!   an overflow into a guard page is reported with the coroutine's name, id and stack size;
//! - [`coroutine::Coroutine`]: asymmetric, Lua-style `resume`/`suspend`.
//!
//! ```
//! use corio_context::coroutine::{Coroutine, CoroutineResult};
//!
//! let mut fib = Coroutine::new(|y, ()| {
//!     let (mut a, mut b) = (0u64, 1u64);
//!     loop {
//!         y.suspend(a);
//!         (a, b) = (b, a + b);
//!     }
//! });
//! let first: Vec<u64> = (0..8).map(|_| fib.resume(()).as_yield().unwrap()).collect();
//! assert_eq!(first, [0, 1, 1, 2, 3, 5, 8, 13]);
//! # let _: Option<CoroutineResult<u64, ()>> = None;
//! ```
//!
//! Supported: x86_64 Linux. Other targets fail to compile with a message saying so.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

mod arch;
pub mod coroutine;
pub mod critical;
#[doc(hidden)]
pub mod local;
mod overflow;
#[cfg(any(corio_asan, corio_tsan))]
mod sanitizer;
pub mod stack;
