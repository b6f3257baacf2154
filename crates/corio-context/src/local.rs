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
//! The swap is done by the resumer alone, on its own stack: a coroutine's side of the switch
//! touches no thread-local, so a coroutine that the scheduler moves to another thread between
//! two resumes (corio's `unsafe` `migratable` option) carries its value with it.
//!
//! # Fresh addresses
//!
//! LLVM may compute a thread-local's address once and reuse it after a call in the same
//! function (llvm#98479), and a stackful switch is such a call. For a coroutine that may move
//! between threads, an address computed before a switch would name the previous thread's word.
//! On x86-64 Linux the word is therefore read and written by `asm!` blocks that compute its
//! address from `%fs` at every access, which the compiler can neither merge nor move (see
//! `word`); elsewhere, through `#[inline(never)]` functions that contain no switch. See
//! `docs/soundness.md`, "Thread-locals across switches".
//!
//! [`Coroutine`]: crate::coroutine::Coroutine
//! [`Coroutine::resume`]: crate::coroutine::Coroutine::resume

/// Sets the running execution context's word to `value` and returns the previous value.
///
/// Writes only when the value changes. Every resume replaces the word twice, and nearly always
/// with the value already there (no generator runs): skipping those writes took the bare
/// switch from 1.86 to 1.61 ns (one compare more; `docs/scheduler.md`, "The word written only
/// when it changes").
#[inline]
pub(crate) fn swap(value: u64) -> u64 {
    let previous = word::get();
    if previous != value {
        word::set(value);
    }
    previous
}

/// Sets the running execution context's word to `value` and returns the previous value, for
/// code above this crate that publishes what its context is doing (corio's generators).
///
/// # Safety
///
/// The word is a capability: other code trusts what it says (a generator's `Co` touches its
/// generator's frame only while the word names that generator), so safe code that could set
/// it to any value could make that code reach freed memory (a review found exactly that, with
/// the word's former safe setter and a `Co` that outlived its generator). The caller publishes
/// only a value that is true for as long as it stays published — for a generator, its own id
/// while it polls that generator's body — and puts the previous value back when that ends, in
/// the same execution context.
#[inline]
pub unsafe fn replace(value: u64) -> u64 {
    swap(value)
}

/// The running execution context's word.
#[inline]
pub fn get() -> u64 {
    word::get()
}

/// The word on x86-64 Linux: an 8-byte thread-local defined in assembly and read or written
/// `%fs`-relative by inline `asm!` (the initial-exec TLS model: the linker turns the GOT load
/// of its offset into an immediate in an executable). An `asm!` block that is not `pure` is
/// never merged with another or moved across a call, so every access computes the address
/// from the current thread's `%fs`, even after a switch in the same function, at the cost of
/// a plain TLS access (two instructions) rather than a call.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
mod word {
    use std::arch::{asm, global_asm};

    // `.hidden`: one definition per linked program, not exported from a shared object. The
    // version in the name keeps two versions of this crate in one program apart.
    global_asm!(
        ".pushsection .tbss.corio_context_local_word_v1,\"awT\",@nobits",
        ".p2align 3",
        ".globl corio_context_local_word_v1",
        ".hidden corio_context_local_word_v1",
        ".type corio_context_local_word_v1, @object",
        ".size corio_context_local_word_v1, 8",
        "corio_context_local_word_v1:",
        ".zero 8",
        ".popsection",
    );

    /// The word's offset from the thread pointer: the same for every thread (it is fixed when
    /// the program is linked or loaded), so this block is `pure` and `nomem`: the compiler may compute it
    /// once and keep it, even across a switch, which saves reloading it at every access. Only
    /// the `%fs`-relative access (`get_at`/`set_at`) must be done afresh each time.
    #[inline(always)]
    pub(super) fn offset() -> usize {
        let off: usize;
        // SAFETY: reads the GOT entry the linker (or loader) filled with the word's
        // thread-pointer offset; it never changes after start-up.
        unsafe {
            asm!(
                "mov {off}, qword ptr [rip + corio_context_local_word_v1@GOTTPOFF]",
                off = out(reg) off,
                // `nomem`: the GOT entry is constant once the program runs, so the compiler
                // may treat the result as a function of nothing.
                options(nostack, preserves_flags, pure, nomem),
            );
        }
        off
    }

    #[inline(always)]
    pub(super) fn get() -> u64 {
        get_at(offset())
    }

    #[inline(always)]
    pub(super) fn set(value: u64) {
        set_at(offset(), value)
    }

    /// Reads the calling thread's word; `off` must come from [`offset`].
    #[inline(always)]
    pub(super) fn get_at(off: usize) -> u64 {
        let value: u64;
        // SAFETY: `off` is the word's thread-pointer offset (from `offset`): this reads the
        // calling thread's copy of the 8-byte, 8-aligned thread-local defined above, and no
        // other memory.
        unsafe {
            asm!(
                "mov {value}, qword ptr fs:[{off}]",
                off = in(reg) off,
                value = lateout(reg) value,
                options(nostack, preserves_flags, readonly),
            );
        }
        value
    }

    /// Writes the calling thread's word; `off` must come from [`offset`].
    #[inline(always)]
    pub(super) fn set_at(off: usize, value: u64) {
        // SAFETY: writes the calling thread's copy of the thread-local defined above (`off` is
        // its offset); only this module touches it, and a thread's copy only from that thread.
        unsafe {
            asm!(
                "mov qword ptr fs:[{off}], {value}",
                off = in(reg) off,
                value = in(reg) value,
                options(nostack, preserves_flags),
            );
        }
    }
}

/// The word elsewhere (and under Miri): a `thread_local!` read through functions that are
/// never inlined, so that each call computes the address afresh (llvm#98479).
#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri))))]
mod word {
    use std::cell::Cell;

    thread_local! {
        /// The running context's word; 0 in a context that never set it.
        static WORD: Cell<u64> = const { Cell::new(0) };
    }

    #[inline(never)]
    pub(super) fn get() -> u64 {
        WORD.get()
    }

    #[inline(never)]
    pub(super) fn set(value: u64) {
        WORD.set(value);
    }
}

#[cfg(test)]
mod tests {
    use super::{get, swap};

    #[test]
    fn each_thread_has_its_own_word() {
        assert_eq!(swap(7), 0);
        let other = std::thread::spawn(|| {
            let seen = get();
            swap(9);
            (seen, get())
        })
        .join()
        .unwrap();
        assert_eq!(other, (0, 9));
        assert_eq!(swap(0), 7);
        assert_eq!(get(), 0);
    }
}
