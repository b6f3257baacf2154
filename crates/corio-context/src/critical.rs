//! Sections of this crate's code that must not be interrupted by a switch to another
//! coroutine of the same thread.
//!
//! A stack slot is taken from and given back to the calling thread's cache (a `RefCell`) and,
//! when the cache runs dry or over, the arena's size class (a `Mutex`). A runtime that
//! preempts coroutines by signal (corio's opt-in asynchronous preemption) could stop a
//! coroutine inside one of those sections and run another coroutine on the same thread, which
//! would find the cache already borrowed (a panic) or the lock held by a coroutine that cannot
//! run until it gives it back (a deadlock). The stack functions therefore count themselves in
//! a per-thread depth while they run, and such a runtime asks [`active`] before it switches
//! away from interrupted code, as it checks its own critical sections.

use std::cell::Cell;
use std::sync::atomic::{Ordering, compiler_fence};

thread_local! {
    /// How many of this crate's critical sections the thread is inside. `const`-initialised
    /// and without a destructor, so reading it from a signal handler takes no lock, allocates
    /// nothing and cannot fail.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether the calling thread is inside one of this crate's critical sections (see the module
/// docs). Async-signal-safe: for a signal handler that asks whether the code it interrupted
/// may be switched away from.
#[inline]
pub fn active() -> bool {
    DEPTH.with(|d| d.get() != 0)
}

/// A critical section of this crate, for as long as it lives (not `Send`: it is the thread's).
pub(crate) struct Section(std::marker::PhantomData<*const ()>);

impl Section {
    #[inline]
    pub(crate) fn enter() -> Section {
        DEPTH.with(|d| d.set(d.get() + 1));
        // The section's accesses stay after the raised depth, as a signal handler on this
        // thread sees the program order (a compiler fence: the handler is on this thread).
        compiler_fence(Ordering::SeqCst);
        Section(std::marker::PhantomData)
    }
}

impl Drop for Section {
    #[inline]
    fn drop(&mut self) {
        compiler_fence(Ordering::SeqCst);
        DEPTH.with(|d| d.set(d.get() - 1));
    }
}

/// Enters a critical section that ends on another stack, by [`lower`] (no guard can cross the
/// switch): the sanitizers' switch annotations (`crate::sanitizer`) must not be interrupted by another
/// switch between the start of one and its finish on the other side.
#[cfg(any(corio_asan, corio_tsan))]
#[inline(never)] // reads a thread-local around a switch: see `crate::local`
pub(crate) fn raise() {
    DEPTH.with(|d| d.set(d.get() + 1));
    compiler_fence(Ordering::SeqCst);
}

/// Ends a section begun by [`raise`], on the thread that raised it.
#[cfg(any(corio_asan, corio_tsan))]
#[inline(never)] // as `raise`
pub(crate) fn lower() {
    compiler_fence(Ordering::SeqCst);
    DEPTH.with(|d| d.set(d.get() - 1));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_nest_and_end() {
        assert!(!active());
        let outer = Section::enter();
        let inner = Section::enter();
        assert!(active());
        drop(inner);
        assert!(active());
        drop(outer);
        assert!(!active());
    }
}
