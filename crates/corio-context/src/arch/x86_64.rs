//! x86_64 System V: the context switch in inline assembly.
//!
//! The SysV ABI makes `rbx`, `rbp`, `r12`–`r15` and `rsp` callee-saved. Inline assembly may
//! declare `r12`–`r15` clobbered, and `clobber_abi("sysv64")` declares every caller-saved
//! register clobbered, so the compiler spills exactly the registers that are live across the
//! switch and nothing else. `rbx` (reserved by LLVM) and `rbp` (the frame pointer) cannot be
//! declared clobbered, so the switch pushes them by hand. MXCSR and the x87 control word are
//! not saved: Rust treats changing them as undefined behaviour, so they are equal on both sides
//! of every switch (saving them would cost ~4 ns per switch for nothing).
//!
//! # A fresh stack
//!
//! ```text
//!  high addresses
//!  ┌──────────────────────────┐ ← base (16-byte aligned; the closure lives above it)
//!  │ link: resumer's rsp      │  base - 8    written by every resume
//!  │ entry fn                 │  base - 16
//!  │ obj (closure pointer)    │  base - 24
//!  │ &trampoline              │  base - 32   ← sp: the first resume "calls" the trampoline
//!  └──────────────────────────┘
//!  low addresses (the stack grows down toward the guard page)
//! ```
//!
//! # A suspended coroutine
//!
//! ```text
//!  │ ... coroutine frames ... │
//!  │ saved rbp                │  sp + 16
//!  │ saved rbx                │  sp + 8
//!  │ resume address (label 2) │  ← sp
//! ```
//!
//! # The resumer during a resume
//!
//! ```text
//!  │ ... resumer frames ...   │
//!  │ saved rbp                │  link + 16
//!  │ saved rbx                │  link + 8
//!  │ return address           │  ← *link (the resumer's rsp after `call`)
//! ```

use core::arch::{asm, naked_asm};

use super::{EntryFn, StackPointer};

/// Alignment of the stack pointer before a `call`.
pub(crate) const STACK_ALIGNMENT: usize = 16;

/// Bytes [`init_stack`] uses below `base`.
pub(crate) const INIT_FRAME_SIZE: usize = 32;

/// Lays out a fresh stack (see the module docs) and returns its stack pointer and link address.
///
/// # Safety
///
/// `base` must be 16-byte aligned, and the [`INIT_FRAME_SIZE`] bytes below it must be writable
/// memory of a stack that nothing else uses. `obj` must stay valid until `entry` has read it.
#[inline]
pub(crate) unsafe fn init_stack(
    base: usize,
    entry: EntryFn,
    obj: *mut u8,
) -> (StackPointer, *mut usize) {
    debug_assert_eq!(base % STACK_ALIGNMENT, 0);
    let words = (base - INIT_FRAME_SIZE) as *mut usize;
    // SAFETY: the caller gives us the 32 writable, aligned bytes below `base`.
    unsafe {
        words.add(0).write(trampoline as *const () as usize);
        words.add(1).write(obj as usize);
        words.add(2).write(entry as usize);
        words.add(3).write(0);
    }
    // SAFETY: `base - 32` is non-zero because `base` is an address inside a stack slot.
    let sp = unsafe { StackPointer::new_unchecked(base - INIT_FRAME_SIZE) };
    (sp, (base - 8) as *mut usize)
}

/// The first code a coroutine runs: the resumer's `call [sp]` lands here.
///
/// On entry: `rsp` = the resumer's stack (return address on top), `rdi` = arg,
/// `rsi` = sp (= base - 32), `rdx` = link (= base - 8).
///
/// The CFI describes the *resumer's* frame: its stack pointer is the link word, so unwinders
/// and debuggers walk from the coroutine's frames into whoever resumed it, and the chain ends
/// where the resumer's own chain ends.
#[unsafe(naked)]
unsafe extern "C" fn trampoline() {
    naked_asm!(
        ".cfi_startproc simple",
        // Before the stack switch the resumer's rsp is the real rsp: CFA = rsp + 24, where 24 is
        // the return address plus the rbx and rbp the resumer pushed before its `call`.
        ".cfi_def_cfa rsp, 24",
        ".cfi_offset rip, -24",
        ".cfi_offset rbx, -16",
        ".cfi_offset rbp, -8",
        // link ← the resumer's rsp (it points at its return address).
        "mov [rdx], rsp",
        // Switch to the coroutine stack: rsp = base - 16, 16-byte aligned for the call below.
        "lea rsp, [rdx - 8]",
        // From here: CFA = *(rsp + 8) + 24, i.e. DW_CFA_def_cfa_expression
        // (0x0f), 5 bytes: DW_OP_breg7 (0x77) rsp+8, DW_OP_deref (0x06), DW_OP_plus_uconst (0x23) 24.
        ".cfi_escape 0x0f, 5, 0x77, 0x08, 0x06, 0x23, 0x18",
        // entry(arg = rdi, link = rsi, obj = rdx)
        "mov rsi, rdx",
        "mov rdx, [rsp - 8]",
        // Pushes the return address over the (already read) obj word at base - 24.
        "call [rsp]",
        // `entry` never returns: it leaves through switch_final.
        "ud2",
        ".cfi_endproc",
    )
}

/// The resumer's side of a switch: `call`s into the coroutine whose stack pointer is in rsi,
/// with rdi = arg and rdx = its link, and gets back rdi = its arg and rsi = its sp (or 0).
/// Extra operands (after the `;`) are passed to the `asm!` as they are.
macro_rules! resume_asm {
    ($arg:expr, $sp:expr, $link:expr => $ret_arg:ident, $ret_sp:ident; $($extra:tt)*) => {
        asm!(
            // rbp and rbx cannot be declared clobbered: save them by hand.
            "push rbp",
            "push rbx",
            // Push our return address and jump to the coroutine's resume address. The
            // coroutine stores our rsp in *link and switches to its own stack.
            "call [rsi]",
            // Back here when the coroutine `ret`s: rdi = its arg, rsi = its sp or 0.
            "pop rbx",
            "pop rbp",
            inlateout("rdi") $arg => $ret_arg,
            inlateout("rsi") $sp => $ret_sp,
            in("rdx") $link,
            $($extra)*
            lateout("r12") _, lateout("r13") _, lateout("r14") _, lateout("r15") _,
            clobber_abi("sysv64"),
        )
    };
}

/// Resumes the coroutine whose stack pointer is `sp`, passing `arg`.
///
/// Returns when the coroutine suspends (`(arg, Some(sp))` with its new stack pointer) or
/// finishes (`(arg, None)`).
///
/// # Safety
///
/// `sp` must be the stack pointer of a suspended coroutine (or a fresh one from [`init_stack`])
/// that is not running, and `link` its link address. The coroutine's stack must stay mapped.
#[inline(always)]
pub(crate) unsafe fn switch_and_link(
    arg: usize,
    sp: StackPointer,
    link: *mut usize,
) -> (usize, Option<StackPointer>) {
    let ret_arg: usize;
    let ret_sp: usize;
    // SAFETY: the caller guarantees `sp` describes a suspended context; the asm preserves
    // rbx and rbp by hand and declares every other register clobbered.
    unsafe {
        resume_asm!(arg, sp.get(), link => ret_arg, ret_sp;);
    }
    (ret_arg, StackPointer::new(ret_sp))
}

/// [`switch_and_link`] that also hands the switch `handle`, a pointer the compiler must then
/// assume the switch reads and writes (so it keeps nothing it points to in registers across
/// the switch): for a resumer whose coroutine may write its own handle while it runs
/// (`switch_transfer`).
///
/// # Safety
///
/// As [`switch_and_link`].
#[inline(always)]
pub(crate) unsafe fn switch_and_link_escaping(
    arg: usize,
    sp: StackPointer,
    link: *mut usize,
    handle: *mut u8,
) -> (usize, Option<StackPointer>) {
    let ret_arg: usize;
    let ret_sp: usize;
    // SAFETY: as in `switch_and_link`; `handle` is only passed along (in rcx, which the
    // switch clobbers anyway).
    unsafe {
        resume_asm!(arg, sp.get(), link => ret_arg, ret_sp; in("rcx") handle,);
    }
    (ret_arg, StackPointer::new(ret_sp))
}

/// Suspends the running coroutine and resumes another in one switch: stores the running
/// coroutine's stack pointer at `from_sp`, then enters the coroutine `to_sp` describes as if
/// its resumer were the one waiting for the running coroutine (whose stack pointer the link
/// word `from_link` holds). Returns the `arg` of the running coroutine's next resume.
///
/// ```text
///  resumer ──call──▶ from ──transfer──▶ to ──ret──▶ resumer (its `call` returns)
/// ```
///
/// The resumer's stack pointer moves from `from`'s link word to `to`'s, so `to`'s suspension
/// (or final switch) returns to the resumer, and the unwinder walks from `to`'s frames into it.
///
/// # Safety
///
/// Must run on the running coroutine's stack with `from_link` its link address and `from_sp`
/// the place its stack pointer belongs; `to_sp` and `to_link` must describe a suspended (or
/// fresh) coroutine of this thread other than the running one, whose stack stays mapped.
#[inline(always)]
pub(crate) unsafe fn switch_transfer(
    arg: usize,
    from_link: *mut usize,
    from_sp: *mut usize,
    to_sp: StackPointer,
    to_link: *mut usize,
) -> usize {
    let ret_arg: usize;
    // SAFETY: our side is switch_yield's, storing the stack pointer at `from_sp` instead of
    // handing it to the resumer; the other side enters `to` exactly as switch_and_link's
    // `call [rsi]` would, with the resumer's stack pointer (and return address on top of it)
    // taken from our link word.
    unsafe {
        asm!(
            "push rbp",
            "push rbx",
            "lea rax, [rip + 2f]",
            "push rax",
            "mov [r8], rsp",
            // The resumer's stack, its return address on top, as after its `call`.
            "mov rsp, [rcx]",
            // Enter `to`: rdi = arg, rsi = its sp, rdx = its link (it stores rsp there).
            "jmp [rsi]",
            // Resumed like switch_yield's label: rsp = the resumer's stack, rdi = arg,
            // rsi = our sp, rdx = our link.
            "2:",
            "mov [rdx], rsp",
            "lea rsp, [rsi + 8]",
            "pop rbx",
            "pop rbp",
            inlateout("rdi") arg => ret_arg,
            inlateout("rsi") to_sp.get() => _,
            inlateout("rdx") to_link => _,
            inlateout("rcx") from_link => _,
            inlateout("r8") from_sp => _,
            out("rax") _,
            lateout("r12") _, lateout("r13") _, lateout("r14") _, lateout("r15") _,
            clobber_abi("sysv64"),
        );
    }
    ret_arg
}

/// Suspends the running coroutine, passing `arg` to its resumer; returns the `arg` of the
/// next resume.
///
/// # Safety
///
/// Must run on the coroutine's own stack, and `link` must be that coroutine's link address.
#[inline(always)]
pub(crate) unsafe fn switch_yield(arg: usize, link: *mut usize) -> usize {
    let ret_arg: usize;
    // SAFETY: on a coroutine stack the link word holds the resumer's rsp, which points at the
    // return address of its `call`; the asm preserves rbx and rbp by hand.
    unsafe {
        asm!(
            "push rbp",
            "push rbx",
            // Our resume address, then rsi = sp, which the resumer receives.
            "lea rax, [rip + 2f]",
            "push rax",
            "mov rsi, rsp",
            // Back to the resumer's stack and `ret` to the instruction after its `call`.
            "mov rsp, [rdx]",
            "ret",
            // Resumed by switch_and_link's `call [rsi]`: rsp = the resumer's stack,
            // rdi = arg, rsi = our sp, rdx = our link.
            "2:",
            "mov [rdx], rsp",
            "lea rsp, [rsi + 8]",
            "pop rbx",
            "pop rbp",
            inlateout("rdi") arg => ret_arg,
            in("rdx") link,
            out("rsi") _, out("rax") _,
            lateout("r12") _, lateout("r13") _, lateout("r14") _, lateout("r15") _,
            clobber_abi("sysv64"),
        );
    }
    ret_arg
}

/// Leaves a coroutine for the last time, passing `arg`; the resumer sees a `None` sp.
///
/// # Safety
///
/// Must run on the coroutine's own stack with `link` its link address. Nothing on this stack
/// may be used afterwards: no destructor on it will run.
#[inline(always)]
pub(crate) unsafe fn switch_final(arg: usize, link: *mut usize) -> ! {
    // SAFETY: as in switch_yield; the coroutine's stack is abandoned.
    unsafe {
        asm!(
            "mov rsp, [rdx]",
            "ret",
            in("rdi") arg,
            in("rsi") 0usize,
            in("rdx") link,
            options(noreturn),
        )
    }
}
