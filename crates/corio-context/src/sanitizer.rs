//! The sanitizers' fiber annotations: AddressSanitizer's, compiled in only under
//! `--cfg corio_asan`, and ThreadSanitizer's, only under `--cfg corio_tsan` (normal builds
//! have neither; `docs/asan.md`, `docs/tsan.md`).
//!
//! # ThreadSanitizer
//!
//! TSan keeps, per thread, the clock and shadow state that tell it which accesses happen
//! before which. A coroutine is a thread of control of its own: without being told of its
//! switches, TSan takes a coroutine's accesses for those of whichever thread runs it, so it
//! cannot tell a coroutine resumed on another thread from a data race, nor keep its reports'
//! stacks apart. LLVM's interface (`compiler-rt/include/sanitizer/tsan_interface.h`) gives
//! each coroutine a *fiber*: created with the coroutine ([`Fiber::new`]), switched to just
//! before every switch into it (`__tsan_switch_to_fiber`, with synchronisation: what ran
//! before the switch happens before what runs after it), and destroyed once its stack is
//! given back ([`release`]). A switch back goes to the fiber that resumed the coroutine,
//! which the switch into it records ([`start_switch_into`]); a transfer hands the arriving
//! coroutine the leaving one's resumer, as for ASan below.
//!
//! TSan also keeps a shadow call stack per fiber, pushed at every instrumented function's
//! entry and popped at its exit. The fiber must therefore change inside the very frame that
//! switches stacks: a helper that changed it and returned would pop its own entry off the
//! other fiber's shadow stack (an unoptimised build's first coroutine then crashed in
//! `__tsan_func_entry`, below the bottom of its shadow stack). The `start_*` functions that
//! switch fibers are `#[inline(always)]`, which debug builds honour too, as are the switches.
//!
//! # AddressSanitizer
//!
//! ASan keeps, per thread, the bounds of "the" stack and (with
//! `detect_stack_use_after_return`) a *fake stack* that instrumented frames take their locals
//! from. A coroutine switch moves the stack pointer somewhere ASan does not know, and without
//! being told ASan misreads three things: `__asan_handle_no_return` (called before every panic
//! unwinds) finds the stack pointer outside the thread's stack and refuses to clear the shadow
//! of the frames the unwind abandons ("ASan is ignoring requested __asan_handle_no_return"),
//! which leaves stale poison behind for later frames to trip on; reports cannot describe
//! addresses on a coroutine stack; and every context shares one fake stack, whose frames then
//! outlive or are reused under the coroutines that own them.
//!
//! The fix is LLVM's fiber interface (`compiler-rt/include/sanitizer/common_interface_defs.h`):
//!
//! 1. Just before a switch, the leaving side calls [`start_switch`] with the bounds of the
//!    stack it is switching to and a place (on its own stack) to keep its fake stack in; a
//!    context that will never run again passes no place, and ASan frees its fake stack.
//! 2. Just after control arrives, the arriving side calls [`finish_switch`] with the fake stack
//!    it kept when it left (none on a coroutine's first entry) and learns the bounds of the
//!    stack it came from.
//!
//! Nothing may run on the thread between the two calls but the switch itself. In particular
//! no other switch: ASan aborts ("starting fiber switch while in fiber switch"). corio's signal
//! preemption could make one, preempting a task's coroutine on its own stack between the start
//! and a bare `Coroutine`'s switch, so every start raises the thread's critical depth
//! (`crate::critical`, which the preemption handler respects) and the finish on the other side
//! lowers it.
//!
//! # Who knows which bounds
//!
//! A resumer switching into a coroutine needs the coroutine's bounds: they are fixed and kept
//! in the coroutine's [`Fiber`] record. A coroutine switching back (suspending or finishing)
//! needs its *resumer's* bounds, which only [`finish_switch`] tells it, on arrival: the record
//! keeps what the last arrival learned. A transfer (`Yielder::transfer`) is the exception: the
//! arriving coroutine came from the transferring one, but returns to that one's resumer, so the
//! transferring side writes its own resumer's bounds into the arriving coroutine's record and
//! marks them *handed*, and the arrival keeps them instead of what ASan reports.
//!
//! The record lives at the top of the coroutine's stack, beside the closure (`Start` in
//! `coroutine.rs`): both the `Coroutine` handle (`RawCoroutine`) and the `Yielder` point to it.
//!
//! # Stale shadow
//!
//! A finished coroutine's stack is abandoned with its last frames' redzones still poisoned, and
//! the slot goes back to the cache for the next coroutine. Instrumented frames rewrite the
//! shadow of their own frame, but ASan's own runtime frames and libc's do not, so a later
//! interceptor (`sigaltstack`, called by `__asan_handle_no_return` with a local of its own)
//! can hit the stale poison: a false "stack-use-after-scope". [`unpoison`] clears a slot's
//! stack when it is released (`Stack`'s drop).

use std::ffi::c_void;
use std::ptr;

#[cfg(corio_tsan)]
unsafe extern "C" {
    fn __tsan_get_current_fiber() -> *mut c_void;
    fn __tsan_create_fiber(flags: u32) -> *mut c_void;
    fn __tsan_destroy_fiber(fiber: *mut c_void);
    fn __tsan_switch_to_fiber(fiber: *mut c_void, flags: u32);
}

#[cfg(corio_asan)]
unsafe extern "C" {
    fn __sanitizer_start_switch_fiber(
        fake_stack_save: *mut *mut c_void,
        bottom: *const c_void,
        size: usize,
    );
    fn __sanitizer_finish_switch_fiber(
        fake_stack_save: *mut c_void,
        bottom_old: *mut *const c_void,
        size_old: *mut usize,
    );
    fn __asan_unpoison_memory_region(addr: *const c_void, size: usize);
}

/// A stack's address range as ASan takes it: the lowest address and the length.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(corio_asan), allow(dead_code))]
pub(crate) struct Bounds {
    bottom: *const c_void,
    size: usize,
}

impl Bounds {
    /// The bounds `[bottom, top)`.
    pub(crate) fn new(bottom: usize, top: usize) -> Bounds {
        Bounds {
            bottom: bottom as *const c_void,
            size: top - bottom,
        }
    }

    /// No bounds yet: a coroutine's record before its first arrival.
    const NONE: Bounds = Bounds {
        bottom: ptr::null(),
        size: 0,
    };
}

/// One coroutine's annotation state (see the module docs). Only the thread running or
/// resuming the coroutine touches it, and only around a switch.
#[derive(Debug)]
pub(crate) struct Fiber {
    /// The coroutine's own stack: what a switch into it announces.
    own: Bounds,
    /// The stack it returns to when it suspends or finishes: its resumer's.
    resumer: Bounds,
    /// Whether `resumer` was written by a transfer for the next arrival to keep.
    handed: bool,
    /// The coroutine's TSan fiber.
    #[cfg(corio_tsan)]
    tsan_own: *mut c_void,
    /// The TSan fiber that resumed it (the thread's, or another coroutine's).
    #[cfg(corio_tsan)]
    tsan_resumer: *mut c_void,
}

impl Fiber {
    /// The record of a coroutine whose stack is `own`.
    pub(crate) fn new(own: Bounds) -> Fiber {
        Fiber {
            own,
            resumer: Bounds::NONE,
            handed: false,
            // SAFETY: creating a fiber has no precondition; it is destroyed by `release`.
            #[cfg(corio_tsan)]
            tsan_own: unsafe { __tsan_create_fiber(0) },
            #[cfg(corio_tsan)]
            tsan_resumer: ptr::null_mut(),
        }
    }

    /// The coroutine's TSan fiber (nothing without TSan).
    #[inline(always)]
    fn tsan_own(&self) -> TsanFiber {
        #[cfg(corio_tsan)]
        return self.tsan_own;
    }

    /// The TSan fiber that resumed the coroutine (nothing without TSan).
    #[inline(always)]
    fn tsan_resumer(&self) -> TsanFiber {
        #[cfg(corio_tsan)]
        return self.tsan_resumer;
    }
}

/// Gives back what the record of a coroutine that will never run again holds (its TSan
/// fiber), before its stack, where the record lives, is released.
///
/// # Safety
///
/// `fiber` must be the record of a coroutine that has finished (or been unwound), called once,
/// on the thread it last switched back to.
#[inline]
pub(crate) unsafe fn release(fiber: *mut Fiber) {
    #[cfg(corio_tsan)]
    // SAFETY: per the contract, the fiber is not running and never runs again.
    unsafe {
        __tsan_destroy_fiber((*fiber).tsan_own)
    };
    #[cfg(not(corio_tsan))]
    let _ = fiber;
}

/// Where a context keeps its fake stack while another runs: a local of the switching frame.
pub(crate) type FakeStack = *mut c_void;

/// A TSan fiber, or nothing in a build without TSan.
#[cfg(corio_tsan)]
type TsanFiber = *mut c_void;
/// A TSan fiber, or nothing in a build without TSan.
#[cfg(not(corio_tsan))]
type TsanFiber = ();

/// What every switch announces just before it happens: to ASan, the stack it goes to and where
/// to keep the leaving context's fake stack (null if that context never runs again); to TSan,
/// the fiber it goes to. `#[inline(always)]`, as its callers: TSan's fiber must change in the
/// frame that switches (see the module docs).
///
/// # Safety
///
/// `fake` must be null or a valid place for a pointer, `to` a live stack's bounds and
/// `to_fiber` a live TSan fiber, those of the context the caller switches to right after.
#[inline(always)]
#[cfg_attr(not(corio_tsan), allow(unused_variables))]
unsafe fn announce(fake: *mut FakeStack, to: Bounds, to_fiber: TsanFiber) {
    crate::critical::raise();
    #[cfg(corio_asan)]
    // SAFETY: per this function's contract.
    unsafe {
        __sanitizer_start_switch_fiber(fake, to.bottom, to.size)
    };
    #[cfg(not(corio_asan))]
    let _ = (fake, to);
    #[cfg(corio_tsan)]
    // SAFETY: per this function's contract.
    unsafe {
        __tsan_switch_to_fiber(to_fiber, 0)
    };
}

/// Announces a switch into the coroutine of `fiber`, from a resumer that will get control back
/// (it passes the returned fake stack to [`finish_switch`] then).
///
/// # Safety
///
/// `fiber` must point to a live coroutine's record, and the caller must switch into that
/// coroutine right after, on this thread.
#[inline(always)] // TSan: in the frame that switches (see the module docs)
pub(crate) unsafe fn start_switch_into(fake: &mut FakeStack, fiber: *const Fiber) {
    // SAFETY: per the contract, the record is alive and only this thread uses it now; the
    // switch back to the running fiber, recorded as its resumer, is how it will return.
    let (own, own_fiber) = unsafe {
        #[cfg(corio_tsan)]
        {
            (*fiber.cast_mut()).tsan_resumer = __tsan_get_current_fiber();
        }
        ((*fiber).own, (*fiber).tsan_own())
    };
    // SAFETY: `fake` is a local of the caller's; the coroutine is alive, switched to next.
    unsafe { announce(fake, own, own_fiber) };
}

/// Announces a switch from the running coroutine of `fiber` back to its resumer. `fake` is
/// where it keeps its fake stack until it runs again, or `None` if it never will (its final
/// switch: ASan then frees the fake stack).
///
/// # Safety
///
/// `fiber` must be the running coroutine's record, and the caller must switch to its resumer
/// right after.
#[inline(always)] // TSan: in the frame that switches (see the module docs)
pub(crate) unsafe fn start_switch_back(fake: Option<&mut FakeStack>, fiber: *const Fiber) {
    // SAFETY: per the contract, the record is alive and only this thread uses it now.
    let (resumer, resumer_fiber) = unsafe { ((*fiber).resumer, (*fiber).tsan_resumer()) };
    let fake = fake.map_or(ptr::null_mut(), ptr::from_mut);
    // SAFETY: `fake` is null or a local of the caller's; the resumer waits for this switch.
    unsafe { announce(fake, resumer, resumer_fiber) };
}

/// Announces a transfer from the running coroutine of `from` to the coroutine of `to`, which
/// takes over `from`'s resumer.
///
/// # Safety
///
/// `from` must be the running coroutine's record and `to` another live coroutine's, and the
/// caller must transfer to `to` right after.
#[inline(always)] // TSan: in the frame that switches (see the module docs)
pub(crate) unsafe fn start_transfer(fake: &mut FakeStack, from: *const Fiber, to: *mut Fiber) {
    // SAFETY: per the contract, both records are alive, distinct and only this thread uses them.
    let (own, own_fiber) = unsafe {
        (*to).resumer = (*from).resumer;
        (*to).handed = true;
        #[cfg(corio_tsan)]
        {
            (*to).tsan_resumer = (*from).tsan_resumer;
        }
        ((*to).own, (*to).tsan_own())
    };
    // SAFETY: `fake` is a local of the caller's; `to` is alive, transferred to next.
    unsafe { announce(fake, own, own_fiber) };
}

/// Completes a switch on the resumer's side (after a coroutine suspended, finished, or a
/// coroutine a transfer passed the turn to switched back).
///
/// # Safety
///
/// Must be called right after control arrived back in the frame that called
/// [`start_switch_into`], with the fake stack it stored.
#[inline]
pub(crate) unsafe fn finish_switch_in_resumer(fake: FakeStack) {
    #[cfg(corio_asan)]
    // SAFETY: a switch was started (by whoever switched back here); `fake` is what ASan
    // stored when this frame left, or null.
    unsafe {
        __sanitizer_finish_switch_fiber(fake, ptr::null_mut(), ptr::null_mut())
    };
    #[cfg(not(corio_asan))]
    let _ = fake;
    crate::critical::lower();
}

/// Completes a switch on the coroutine's side (first entry, or the return of a suspension or
/// transfer), recording where it came from as its resumer unless a transfer handed it one.
///
/// # Safety
///
/// Must be called right after control arrived on the coroutine of `fiber`, with the fake stack
/// it stored when it left (null on its first entry).
#[inline]
pub(crate) unsafe fn finish_switch_in_coroutine(fake: FakeStack, fiber: *mut Fiber) {
    #[cfg_attr(not(corio_asan), allow(unused_mut))]
    let mut old = Bounds::NONE;
    #[cfg(corio_asan)]
    // SAFETY: a switch into this coroutine was started; the out-pointers are valid.
    unsafe {
        __sanitizer_finish_switch_fiber(fake, &mut old.bottom, &mut old.size)
    };
    #[cfg(not(corio_asan))]
    let _ = fake;
    crate::critical::lower();
    // SAFETY: per the contract, the record is alive and only this thread uses it now.
    unsafe {
        if (*fiber).handed {
            (*fiber).handed = false;
        } else {
            (*fiber).resumer = old;
        }
    }
}

/// Clears the shadow of `bottom..top`, a stack slot's frames given back (see the module docs).
///
/// # Safety
///
/// The range must be memory that nothing uses any more.
#[cfg(corio_asan)]
pub(crate) unsafe fn unpoison(bottom: usize, top: usize) {
    // SAFETY: per the contract; clearing shadow has no other effect.
    unsafe { __asan_unpoison_memory_region(bottom as *const c_void, top - bottom) };
}
