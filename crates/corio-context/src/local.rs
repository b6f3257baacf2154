//! One word of state per execution context, saved and restored by every switch.
//!
//! # The problem
//!
//! Code above this crate sometimes needs to know "what is this stack doing right now": corio's
//! stackless generators publish the id of the generator whose body is being polled, so that a
//! `Co` handle may touch its generator's frame only during that generator's resume. A plain
//! thread-local restored by a drop guard assumes that such scopes nest on a thread, and
//! stackful coroutines break that assumption: coroutine A may suspend inside a scope, B then
//! runs on the same thread, opens and suspends in a scope of its own, and A resumes inside its
//! scope to find B's value — or, when the scopes close out of order, a guard restores a value
//! that belongs to a scope that has ended (issue 7: a freed generator's id published again,
//! which let an escaped `Co` write into freed memory).
//!
//! # The mechanism
//!
//! Each execution context — a thread's own stack, and each [`Coroutine`] — has its own value of
//! the word. The thread-local `WORD` holds the value of the context that runs now.
//! [`Coroutine::resume`] swaps it around the switch: it installs the coroutine's saved value
//! (0 for a coroutine that has not run) and keeps the resumer's; when the coroutine suspends,
//! returns, panics or is unwound, resume saves the coroutine's value back into the coroutine and
//! reinstalls the resumer's. Scopes within one context nest (they are ordinary Rust scopes on
//! one stack), so a drop guard that restores the previous value is now correct.
//!
//! Until some context first sets its word (see `in_use`) every word is 0, and resume skips
//! the swap; it checks again after the switch, in case the coroutine set its word meanwhile.
//!
//! The swap is done by the resumer alone, on its own stack: a coroutine's side of the switch
//! touches no thread-local, so a coroutine that the scheduler moves to another thread between
//! two resumes (corio's `unsafe` `migratable` option) carries its value with it.
//!
//! # Fresh addresses
//!
//! LLVM may compute a thread-local's address once and reuse it after a call in the same
//! function (llvm#98479), and a stackful switch is such a call. For a coroutine that may move
//! between threads, an address computed before a switch would name the previous thread's word.
//! The accessors are therefore `#[inline(never)]`: each computes the address afresh in a
//! function that contains no switch, whatever its callers inline (see `docs/soundness.md`,
//! "Thread-locals across switches").
//!
//! [`Coroutine`]: crate::coroutine::Coroutine
//! [`Coroutine::resume`]: crate::coroutine::Coroutine::resume

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether any context of the process has ever set its word to nonzero (set by [`replace`],
/// never cleared). Until then every word is 0 and a switch need not swap it: the swap costs two
/// calls (13 instructions per switch, measured with callgrind), which a program that never
/// polls a generator should not pay.
///
/// Relaxed is enough: a thread's words can become nonzero only through its own `replace`,
/// which stores the flag first, and a thread always sees its own earlier store; another
/// thread's store only tells this one to start swapping a word that is still 0 here.
static IN_USE: AtomicBool = AtomicBool::new(false);

/// Whether some word may be nonzero, so that a switch must swap the word (see [`IN_USE`]).
#[inline]
pub(crate) fn in_use() -> bool {
    IN_USE.load(Ordering::Relaxed)
}

thread_local! {
    /// The running context's word; 0 in a context that never set it. `const`-initialised
    /// without a destructor: reading it is a plain TLS load.
    static WORD: Cell<u64> = const { Cell::new(0) };
}

/// The running execution context's word.
#[inline(never)]
pub fn get() -> u64 {
    WORD.get()
}

/// Sets the running execution context's word to `value` and returns the previous value.
#[inline(never)]
pub fn replace(value: u64) -> u64 {
    if value != 0 && !IN_USE.load(Ordering::Relaxed) {
        IN_USE.store(true, Ordering::Relaxed);
    }
    WORD.replace(value)
}
