//! The machine-level context switch, one file per target.
//!
//! Every target file exports the same items:
//!
//! | item | what it does |
//! |---|---|
//! | `STACK_ALIGNMENT` | alignment the ABI requires of a stack pointer at a call |
//! | `init_stack(base, entry, obj)` | lays out a fresh stack so that the first resume enters `entry(arg, link, obj)` |
//! | `switch_and_link(arg, sp, link)` | resumer → coroutine; returns the coroutine's `(arg, sp)` when it switches back |
//! | `switch_yield(arg, link)` | coroutine → resumer; returns the next resume's `arg` |
//! | `switch_and_link_escaping(arg, sp, link, handle)` | `switch_and_link`, telling the compiler the switch may touch `*handle` |
//! | `switch_transfer(arg, from_link, from_sp, to_sp, to_link)` | coroutine → coroutine: the second takes over the first one's resumer |
//! | `switch_final(arg, link)` | coroutine → resumer for the last time; the coroutine's stack is dead afterwards |
//!
//! # The protocol
//!
//! A suspended coroutine is described by one word, its *stack pointer* `sp`. The word at `sp` is
//! the address to continue at; the coroutine's frame-pointer and `rbx`-like registers (whatever
//! the compiler will not let inline assembly clobber) sit just above it. Everything else the
//! coroutine had live in registers was spilled by the compiler, because the switch declares it
//! clobbered (`clobber_abi`): only live registers cost anything.
//!
//! The resumer *calls* into the coroutine (`call [sp]`), and the coroutine *returns* to the
//! resumer (`ret`) when it suspends. Every switch is therefore a matched call/return pair and
//! the CPU's return-stack predictor stays correct in both directions.
//!
//! The resumer's stack pointer at that call is stored in the *link* word at the top of the
//! coroutine's stack. Suspending loads it back; the unwinder reads it through the CFI of the
//! entry trampoline, so a backtrace taken inside a coroutine continues into its resumer.
//!
//! Values cross a switch as one machine word, `arg`: corio passes a pointer to a message that
//! lives on the sender's stack and that the receiver moves out of before the sender runs again.

#[cfg(target_arch = "x86_64")]
mod x86_64;
#[cfg(target_arch = "x86_64")]
pub(crate) use self::x86_64::*;

#[cfg(not(target_arch = "x86_64"))]
compile_error!(
    "corio-context supports x86_64 only for now; an aarch64 port belongs in src/arch/aarch64.rs"
);

#[cfg(not(target_os = "linux"))]
compile_error!("corio-context supports Linux only (stack guards, overflow handling, epoll)");

/// The stack pointer of a suspended context: the address of the word holding its resume address.
pub(crate) type StackPointer = core::num::NonZeroUsize;

/// The entry point a fresh stack starts in: `entry(arg, link, obj)`. It never returns; it ends
/// with [`switch_final`].
pub(crate) type EntryFn = unsafe extern "C" fn(arg: usize, link: *mut usize, obj: *mut u8) -> !;
