//! The task state word: lifecycle bits and a reference count in one `AtomicUsize`.
//!
//! Every change of a task's lifecycle is one atomic read-modify-write on this word, made by a
//! `transition_to_*` function that returns a `#[must_use]` outcome telling the caller what it
//! now owns and must do (submit the task to a queue, drop a reference, deallocate). The design
//! follows tokio's `runtime/task/state.rs`; the bits are the same idea, the set is smaller
//! (no separate LIFO or "ref count of the join waker" bits).
//!
//! # Bits
//!
//! | bit | meaning | set by | cleared by |
//! |---|---|---|---|
//! | `RUNNING` | a worker is polling (or resuming) the task | `transition_to_running` | `transition_to_idle`, `transition_to_complete` |
//! | `COMPLETE` | the output (or a `JoinError`) is stored | `transition_to_complete` | never |
//! | `NOTIFIED` | a `Notified` reference exists, or must be created when the poll ends | wakers, `abort` | `transition_to_running` |
//! | `JOIN_INTEREST` | a `JoinHandle` exists | spawn | the `JoinHandle`'s drop |
//! | `JOIN_WAKER` | the trailer's join waker is set and owned by the task side | `JoinHandle` poll | `JoinHandle` poll (before replacing it), completion |
//! | `CANCELLED` | the task must be cancelled instead of polled | `abort`, shutdown | never |
//!
//! The rest of the word counts references: the owned-tasks list, a `Notified` in a queue, the
//! `JoinHandle`, and every `Waker`. A task starts with three (list, queue, handle).
//!
//! # Who may touch what
//!
//! - The *stage* (future or output) belongs to whoever set `RUNNING`, until `COMPLETE`; after
//!   `COMPLETE` it belongs to the `JoinHandle` if `JOIN_INTEREST` is set, else to the worker
//!   that completed the task (which drops the output).
//! - The trailer's *join waker* belongs to the `JoinHandle` while `JOIN_WAKER` is clear and to
//!   the task side while it is set.

use std::fmt;

use crate::loom::sync::atomic::AtomicUsize;
use crate::loom::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};

const RUNNING: usize = 1 << 0;
const COMPLETE: usize = 1 << 1;
const NOTIFIED: usize = 1 << 2;
const JOIN_INTEREST: usize = 1 << 3;
const JOIN_WAKER: usize = 1 << 4;
const CANCELLED: usize = 1 << 5;

const LIFECYCLE_MASK: usize = RUNNING | COMPLETE;
const REF_SHIFT: u32 = 6;
const REF_ONE: usize = 1 << REF_SHIFT;

/// Three references (owned list, run queue, join handle), a join handle, and a pending poll.
const INITIAL: usize = (REF_ONE * 3) | JOIN_INTEREST | NOTIFIED;

/// The state word.
pub(crate) struct State {
    val: AtomicUsize,
}

/// A copy of the state word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Snapshot(usize);

#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TransitionToRunning {
    /// The caller may poll; it owns the stage.
    Success,
    /// The caller must cancel the task (it owns the stage).
    Cancelled,
    /// Someone else is running or has completed the task; the caller's reference was dropped.
    Failed,
    /// As `Failed`, and that was the last reference: the caller must deallocate.
    Dealloc,
}

#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TransitionToIdle {
    /// The poll's reference was dropped; the task waits for a waker.
    Ok,
    /// The task was woken while running: the caller's reference is now a `Notified` that it
    /// must submit.
    OkNotified,
    /// The poll's reference was the last: deallocate.
    OkDealloc,
    /// The task was cancelled while running; it is still running and the caller must cancel it.
    Cancelled,
}

#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TransitionToNotifiedByVal {
    /// Nothing to do (the waker's reference was consumed or dropped).
    DoNothing,
    /// The waker's reference is now a `Notified`: submit it.
    Submit,
    /// The waker's reference was the last: deallocate.
    Dealloc,
}

#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TransitionToNotifiedByRef {
    DoNothing,
    /// A new reference was taken for a `Notified`: submit it.
    Submit,
}

/// What the `JoinHandle`'s drop must clean up.
#[must_use]
pub(crate) struct TransitionToJoinHandleDrop {
    pub(crate) drop_waker: bool,
    pub(crate) drop_output: bool,
}

impl State {
    pub(crate) fn new() -> State {
        State {
            val: AtomicUsize::new(INITIAL),
        }
    }

    /// Loads the word (Acquire: pairs with the Release half of every transition, so that what
    /// the previous owner wrote to the stage is visible).
    pub(crate) fn load(&self) -> Snapshot {
        Snapshot(self.val.load(Acquire))
    }

    /// Runs `f` on the current value until the CAS succeeds; `f` returns the outcome and the
    /// new value, or `None` to leave the word unchanged.
    fn fetch_update_action<T>(&self, mut f: impl FnMut(Snapshot) -> (T, Option<Snapshot>)) -> T {
        let mut curr = self.load();
        loop {
            let (output, next) = f(curr);
            let Some(next) = next else { return output };
            // AcqRel: acquire what the previous owner published, release ours.
            match self
                .val
                .compare_exchange_weak(curr.0, next.0, AcqRel, Acquire)
            {
                Ok(_) => return output,
                Err(actual) => curr = Snapshot(actual),
            }
        }
    }

    /// Notified → running. Consumes the `Notified` reference, which becomes the poll's.
    pub(crate) fn transition_to_running(&self) -> TransitionToRunning {
        self.fetch_update_action(|mut s| {
            if !s.is_idle() || !s.is_notified() {
                // Running elsewhere or complete, or a stale Notified (shutdown took the task
                // and cleared NOTIFIED while this one was queued; a later wake queued another):
                // drop the Notified's reference.
                s.ref_dec();
                let action = if s.ref_count() == 0 {
                    TransitionToRunning::Dealloc
                } else {
                    TransitionToRunning::Failed
                };
                return (action, Some(s));
            }
            s.0 = (s.0 | RUNNING) & !NOTIFIED;
            let action = if s.is_cancelled() {
                TransitionToRunning::Cancelled
            } else {
                TransitionToRunning::Success
            };
            (action, Some(s))
        })
    }

    /// Running → idle after a poll that returned `Pending`. `cancel_delivered`: the poll was a
    /// cancellation that blocked (a coroutine unwinding), so CANCELLED does not ask for another.
    pub(crate) fn transition_to_idle(&self, cancel_delivered: bool) -> TransitionToIdle {
        self.fetch_update_action(|mut s| {
            debug_assert!(s.is_running());
            if s.is_cancelled() && !cancel_delivered {
                return (TransitionToIdle::Cancelled, None);
            }
            s.0 &= !RUNNING;
            let action = if s.is_notified() {
                // The poll's reference becomes the new Notified's.
                TransitionToIdle::OkNotified
            } else {
                s.ref_dec();
                if s.ref_count() == 0 {
                    TransitionToIdle::OkDealloc
                } else {
                    TransitionToIdle::Ok
                }
            };
            (action, Some(s))
        })
    }

    /// Notified → running for a direct hand-off (`WorkerCtx::direct_block`): only when
    /// [`transition_to_running`](Self::transition_to_running) would return `Success` (idle,
    /// notified, not cancelled); then the `Notified` reference becomes the poll's and true is
    /// returned. Otherwise the word is left as it was.
    pub(crate) fn transition_to_running_if_plain(&self) -> bool {
        self.fetch_update_action(|mut s| {
            if !s.is_idle() || !s.is_notified() || s.is_cancelled() {
                return (false, None);
            }
            s.0 = (s.0 | RUNNING) & !NOTIFIED;
            (true, Some(s))
        })
    }

    /// Undoes [`transition_to_running_if_plain`](Self::transition_to_running_if_plain) before
    /// anything ran: running → idle and notified, the poll's reference a `Notified` again. A
    /// wake or a cancel that arrived meanwhile stays recorded (they only set bits while the task
    /// runs).
    pub(crate) fn transition_back_to_notified(&self) {
        self.fetch_update_action(|mut s| {
            debug_assert!(s.is_running());
            s.0 = (s.0 & !RUNNING) | NOTIFIED;
            ((), Some(s))
        })
    }

    /// Running → idle after a poll that returned `Pending`, for a direct hand-off: only when
    /// [`transition_to_idle`](Self::transition_to_idle)`(false)` would return `Ok` (not
    /// notified, not cancelled, not the last reference); then the poll's reference is dropped
    /// and true is returned. Otherwise the word is left as it was, still RUNNING.
    pub(crate) fn transition_to_idle_if_plain(&self) -> bool {
        self.fetch_update_action(|mut s| {
            debug_assert!(s.is_running());
            if s.is_notified() || s.is_cancelled() || s.ref_count() < 2 {
                return (false, None);
            }
            s.0 &= !RUNNING;
            s.ref_dec();
            (true, Some(s))
        })
    }

    /// Running → complete. Returns the new state.
    pub(crate) fn transition_to_complete(&self) -> Snapshot {
        // AcqRel: release the output to the JoinHandle, acquire its JOIN_* changes.
        let prev = Snapshot(self.val.fetch_xor(RUNNING | COMPLETE, AcqRel));
        debug_assert!(prev.is_running() && !prev.is_complete());
        Snapshot(prev.0 ^ (RUNNING | COMPLETE))
    }

    /// Drops `count` references after completion; true if they were the last.
    pub(crate) fn transition_to_terminal(&self, count: usize) -> bool {
        let prev = Snapshot(self.val.fetch_sub(count * REF_ONE, AcqRel));
        assert!(prev.ref_count() >= count, "task reference count underflow");
        prev.ref_count() == count
    }

    /// A waker is woken by value: its reference is consumed.
    pub(crate) fn transition_to_notified_by_val(&self) -> TransitionToNotifiedByVal {
        self.fetch_update_action(|mut s| {
            if s.is_running() {
                // The worker will see NOTIFIED when the poll ends and resubmit; the running
                // poll holds a reference, so dropping the waker's cannot reach zero.
                s.0 |= NOTIFIED;
                s.ref_dec();
                debug_assert!(s.ref_count() > 0);
                (TransitionToNotifiedByVal::DoNothing, Some(s))
            } else if s.is_complete() || s.is_notified() {
                s.ref_dec();
                let action = if s.ref_count() == 0 {
                    TransitionToNotifiedByVal::Dealloc
                } else {
                    TransitionToNotifiedByVal::DoNothing
                };
                (action, Some(s))
            } else {
                s.0 |= NOTIFIED; // the waker's reference becomes the Notified's
                (TransitionToNotifiedByVal::Submit, Some(s))
            }
        })
    }

    /// A waker is woken by reference.
    pub(crate) fn transition_to_notified_by_ref(&self) -> TransitionToNotifiedByRef {
        self.fetch_update_action(|mut s| {
            if s.is_complete() || s.is_notified() {
                (TransitionToNotifiedByRef::DoNothing, None)
            } else if s.is_running() {
                s.0 |= NOTIFIED;
                (TransitionToNotifiedByRef::DoNothing, Some(s))
            } else {
                s.0 |= NOTIFIED;
                s.ref_inc();
                (TransitionToNotifiedByRef::Submit, Some(s))
            }
        })
    }

    /// Requests cancellation (`abort`). True if the caller took a new reference for a
    /// `Notified` and must submit it so that a worker cancels the task.
    pub(crate) fn transition_to_notified_and_cancel(&self) -> bool {
        self.fetch_update_action(|mut s| {
            if s.is_cancelled() || s.is_complete() {
                (false, None)
            } else if s.is_running() || s.is_notified() {
                // Whoever runs it next (or the running poll, when it ends) sees CANCELLED.
                s.0 |= CANCELLED | NOTIFIED;
                (false, Some(s))
            } else {
                s.0 |= CANCELLED | NOTIFIED;
                s.ref_inc();
                (true, Some(s))
            }
        })
    }

    /// Marks the task cancelled for shutdown. True if it was idle: the caller now owns it as
    /// if it had set RUNNING, and must cancel it.
    pub(crate) fn transition_to_shutdown(&self) -> bool {
        self.fetch_update_action(|mut s| {
            let idle = s.is_idle();
            if idle {
                // Shutdown runs the task itself: a Notified still queued from an earlier wake
                // is stale now. Clearing NOTIFIED makes it drop its reference when it is run
                // (`transition_to_running`), and keeps it from being read as a fresh wake when
                // the cancellation blocks (`transition_to_idle` would queue a second one).
                s.0 = (s.0 | RUNNING) & !NOTIFIED;
            }
            s.0 |= CANCELLED;
            (idle, Some(s))
        })
    }

    /// The fast path of dropping a `JoinHandle` of a task nobody has touched yet.
    pub(crate) fn drop_join_handle_fast(&self) -> Result<(), ()> {
        self.val
            .compare_exchange(
                INITIAL,
                (INITIAL - REF_ONE) & !JOIN_INTEREST,
                Release,
                Acquire,
            )
            .map(|_| ())
            .map_err(|_| ())
    }

    /// Clears `JOIN_INTEREST` (and `JOIN_WAKER` if the task is not complete).
    pub(crate) fn transition_to_join_handle_dropped(&self) -> TransitionToJoinHandleDrop {
        self.fetch_update_action(|mut s| {
            debug_assert!(s.is_join_interested());
            let mut t = TransitionToJoinHandleDrop {
                drop_waker: false,
                drop_output: false,
            };
            s.0 &= !JOIN_INTEREST;
            if s.is_complete() {
                // The completed output is ours to drop; the waker field was left to us too
                // unless JOIN_WAKER is still set, in which case the task side clears it.
                t.drop_output = true;
                t.drop_waker = !s.is_join_waker_set();
            } else {
                // Not complete: take the waker back so the task side never touches it.
                s.0 &= !JOIN_WAKER;
                t.drop_waker = true;
            }
            (t, Some(s))
        })
    }

    /// Hands the join waker to the task side. Fails (returning the state) if the task is
    /// complete, in which case the `JoinHandle` keeps the waker and reads the output.
    pub(crate) fn set_join_waker(&self) -> Result<Snapshot, Snapshot> {
        self.fetch_update_action(|s| {
            debug_assert!(s.is_join_interested() && !s.is_join_waker_set());
            if s.is_complete() {
                return (Err(s), None);
            }
            let next = Snapshot(s.0 | JOIN_WAKER);
            (Ok(next), Some(next))
        })
    }

    /// Takes the join waker back from the task side so it can be replaced. Fails if the task
    /// completed (the task side may be waking it).
    pub(crate) fn unset_waker(&self) -> Result<Snapshot, Snapshot> {
        self.fetch_update_action(|s| {
            debug_assert!(s.is_join_interested());
            // Completion first: the caller saw JOIN_WAKER set, but a task that completed since
            // may already have woken the waker and cleared the bit
            // (`unset_waker_after_complete`). Only a task still running must have it set.
            if s.is_complete() {
                return (Err(s), None);
            }
            debug_assert!(s.is_join_waker_set());
            let next = Snapshot(s.0 & !JOIN_WAKER);
            (Ok(next), Some(next))
        })
    }

    /// After completion and waking the joiner, the task side gives the waker field back.
    pub(crate) fn unset_waker_after_complete(&self) -> Snapshot {
        let prev = Snapshot(self.val.fetch_and(!JOIN_WAKER, AcqRel));
        debug_assert!(prev.is_complete() && prev.is_join_waker_set());
        Snapshot(prev.0 & !JOIN_WAKER)
    }

    pub(crate) fn ref_inc(&self) {
        // Relaxed is enough to create a reference from an existing one (as Arc::clone).
        let prev = self.val.fetch_add(REF_ONE, Relaxed);
        assert!(prev < usize::MAX / 2, "task reference count overflow");
    }

    /// Drops a reference; true if it was the last.
    pub(crate) fn ref_dec(&self) -> bool {
        // AcqRel: the last dropper must see every other owner's writes (as Arc's drop).
        let prev = Snapshot(self.val.fetch_sub(REF_ONE, AcqRel));
        assert!(prev.ref_count() >= 1, "task reference count underflow");
        prev.ref_count() == 1
    }
}

impl Snapshot {
    pub(crate) fn is_idle(self) -> bool {
        self.0 & LIFECYCLE_MASK == 0
    }
    pub(crate) fn is_running(self) -> bool {
        self.0 & RUNNING != 0
    }
    pub(crate) fn is_complete(self) -> bool {
        self.0 & COMPLETE != 0
    }
    pub(crate) fn is_notified(self) -> bool {
        self.0 & NOTIFIED != 0
    }
    pub(crate) fn is_join_interested(self) -> bool {
        self.0 & JOIN_INTEREST != 0
    }
    pub(crate) fn is_join_waker_set(self) -> bool {
        self.0 & JOIN_WAKER != 0
    }
    pub(crate) fn is_cancelled(self) -> bool {
        self.0 & CANCELLED != 0
    }
    pub(crate) fn ref_count(self) -> usize {
        self.0 >> REF_SHIFT
    }
    fn ref_inc(&mut self) {
        self.0 += REF_ONE;
    }
    fn ref_dec(&mut self) {
        self.0 -= REF_ONE;
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("running", &self.is_running())
            .field("complete", &self.is_complete())
            .field("notified", &self.is_notified())
            .field("join_interest", &self.is_join_interested())
            .field("join_waker", &self.is_join_waker_set())
            .field("cancelled", &self.is_cancelled())
            .field("refs", &self.ref_count())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_task_is_notified_with_three_references() {
        let s = State::new().load();
        assert!(s.is_notified() && s.is_join_interested() && s.is_idle());
        assert_eq!(s.ref_count(), 3);
    }

    #[test]
    fn a_wake_while_running_resubmits_when_the_poll_ends() {
        let state = State::new();
        assert_eq!(state.transition_to_running(), TransitionToRunning::Success);
        assert_eq!(
            state.transition_to_notified_by_ref(),
            TransitionToNotifiedByRef::DoNothing
        );
        assert_eq!(
            state.transition_to_idle(false),
            TransitionToIdle::OkNotified
        );
        assert_eq!(state.load().ref_count(), 3);
        assert_eq!(state.transition_to_running(), TransitionToRunning::Success);
        assert_eq!(state.transition_to_idle(false), TransitionToIdle::Ok);
        assert_eq!(state.load().ref_count(), 2);
    }

    #[test]
    fn waking_an_idle_task_takes_a_reference_for_the_queue() {
        let state = State::new();
        let _ = state.transition_to_running();
        let _ = state.transition_to_idle(false); // 2 refs left
        assert_eq!(
            state.transition_to_notified_by_ref(),
            TransitionToNotifiedByRef::Submit
        );
        assert_eq!(state.load().ref_count(), 3);
        assert_eq!(
            state.transition_to_notified_by_ref(),
            TransitionToNotifiedByRef::DoNothing
        );
        assert_eq!(state.load().ref_count(), 3);
    }

    #[test]
    fn cancelling_an_idle_task_submits_it_once() {
        let state = State::new();
        let _ = state.transition_to_running();
        let _ = state.transition_to_idle(false);
        assert!(state.transition_to_notified_and_cancel());
        assert!(!state.transition_to_notified_and_cancel());
        assert_eq!(
            state.transition_to_running(),
            TransitionToRunning::Cancelled
        );
    }

    #[test]
    fn the_join_waker_cannot_be_set_after_completion() {
        let state = State::new();
        let _ = state.transition_to_running();
        let done = state.transition_to_complete();
        assert!(done.is_complete() && !done.is_running());
        assert!(state.set_join_waker().is_err());
    }

    /// The race the `JoinHandle` loses when it replaces its waker: it saw `JOIN_WAKER` set and
    /// the task running, then the task completed, woke the old waker and gave the field back
    /// (`unset_waker_after_complete`) before the handle's `unset_waker` ran. `unset_waker`
    /// must then report the completion (the handle reads the output), not assert that the
    /// bit it saw is still set: a debug build panicked in the joiner's poll
    /// (`fs_async_traits`, under CI's load).
    #[test]
    fn taking_the_join_waker_back_after_the_task_completed_and_gave_it_back_reports_completion() {
        let state = State::new();
        assert!(state.set_join_waker().is_ok());
        let _ = state.transition_to_running();
        assert!(state.transition_to_complete().is_join_waker_set());
        let after = state.unset_waker_after_complete();
        assert!(after.is_complete() && !after.is_join_waker_set());
        let taken = state.unset_waker();
        assert!(taken.is_err_and(|s| s.is_complete()));
    }

    /// The direct hand-off's transitions (`WorkerCtx::direct_block`) take only the plain
    /// outcome and otherwise leave the word as it was.
    #[test]
    fn the_plain_transitions_of_a_direct_hand_off_change_nothing_unless_plain() {
        // A plain poll: notified → running, then running → idle with the poll's reference
        // dropped, as `transition_to_running` and `transition_to_idle` would.
        let state = State::new();
        assert!(state.transition_to_running_if_plain());
        let running = state.load();
        assert!(running.is_running() && !running.is_notified());
        assert!(state.transition_to_idle_if_plain());
        assert!(state.load().is_idle());
        assert_eq!(state.load().ref_count(), 2);
        // Not notified: no poll to start.
        assert!(!state.transition_to_running_if_plain());
        assert_eq!(state.load().0, (REF_ONE * 2) | JOIN_INTEREST);

        // Woken during its poll: the poll does not end here (the loop requeues it).
        let state = State::new();
        assert_eq!(state.transition_to_running(), TransitionToRunning::Success);
        let _ = state.transition_to_notified_by_ref();
        let before = state.load().0;
        assert!(!state.transition_to_idle_if_plain());
        assert_eq!(state.load().0, before);

        // Cancelled during its poll, or while queued: neither transition is plain.
        let state = State::new();
        assert_eq!(state.transition_to_running(), TransitionToRunning::Success);
        assert!(!state.transition_to_notified_and_cancel());
        let before = state.load().0;
        assert!(!state.transition_to_idle_if_plain());
        assert_eq!(state.load().0, before);
        let state = State::new();
        assert!(!state.transition_to_notified_and_cancel());
        let before = state.load().0;
        assert!(!state.transition_to_running_if_plain());
        assert_eq!(state.load().0, before);

        // The poll's reference is the last: `transition_to_idle` would deallocate.
        let state = State::new();
        assert_eq!(state.transition_to_running(), TransitionToRunning::Success);
        assert!(!state.ref_dec());
        assert!(!state.ref_dec());
        assert_eq!(state.load().ref_count(), 1);
        assert!(!state.transition_to_idle_if_plain());
        assert!(state.load().is_running());
    }

    /// Undoing a plain start gives the `Notified` back, with a wake or a cancel that came in
    /// meanwhile still recorded.
    #[test]
    fn a_plain_start_undone_is_notified_again_with_what_came_meanwhile() {
        let state = State::new();
        let fresh = state.load().0;
        assert!(state.transition_to_running_if_plain());
        state.transition_back_to_notified();
        assert_eq!(state.load().0, fresh);

        assert!(state.transition_to_running_if_plain());
        let _ = state.transition_to_notified_by_ref();
        state.transition_back_to_notified();
        assert_eq!(state.load().0, fresh);

        assert!(state.transition_to_running_if_plain());
        assert!(!state.transition_to_notified_and_cancel());
        state.transition_back_to_notified();
        assert_eq!(state.load().0, fresh | CANCELLED);
        assert_eq!(
            state.transition_to_running(),
            TransitionToRunning::Cancelled
        );
    }
}

/// Model checks of the transitions that race: a wake against the end of a poll, an abort
/// against the end of a poll, the join waker against completion, and a `JoinHandle` drop
/// against completion. Run with
/// `RUSTFLAGS="--cfg loom" cargo test -p corio --release --lib loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use loom::thread;

    /// A task that has been polled once and is idle, with its JoinHandle and list refs (2).
    fn idle_task() -> Arc<State> {
        let state = Arc::new(State::new());
        assert_eq!(state.transition_to_running(), TransitionToRunning::Success);
        assert_eq!(state.transition_to_idle(false), TransitionToIdle::Ok);
        state
    }

    /// A woken task is polled while another thread wakes it again; `end_poll` ends the poll
    /// and says whether the ending submitted the task. The wake is submitted exactly once,
    /// by the waker or by the poll's end, and the task is left notified and idle.
    fn poll_racing_a_wake(end_poll: impl FnOnce(&State) -> bool) {
        let state = idle_task();
        state.ref_inc(); // the waker's reference
        // The task is woken (by its own first notification) and polled.
        assert_eq!(
            state.transition_to_notified_by_ref(),
            TransitionToNotifiedByRef::Submit
        );
        assert_eq!(state.transition_to_running(), TransitionToRunning::Success);
        let submits = Arc::new(AtomicUsize::new(0));
        let waker = {
            let (state, submits) = (state.clone(), submits.clone());
            thread::spawn(move || {
                if state.transition_to_notified_by_val() == TransitionToNotifiedByVal::Submit {
                    submits.fetch_add(1, SeqCst);
                }
            })
        };
        if end_poll(&state) {
            submits.fetch_add(1, SeqCst);
        }
        waker.join().unwrap();
        assert_eq!(
            submits.load(SeqCst),
            1,
            "the wake was lost or submitted twice"
        );
        let s = state.load();
        assert!(s.is_notified() && !s.is_running());
        // list + handle + the one Notified
        assert_eq!(s.ref_count(), 3);
    }

    #[test]
    fn a_wake_racing_the_end_of_a_poll_resubmits_exactly_once() {
        loom::model(|| {
            poll_racing_a_wake(|state| {
                state.transition_to_idle(false) == TransitionToIdle::OkNotified
            })
        });
    }

    /// The direct hand-off (`WorkerCtx::direct_block`): the leaving coroutine's plain idle
    /// transition, else the loop's `transition_to_idle`, racing a wake from another thread.
    /// The wake is submitted exactly once: by the waker (the hand-off went idle first) or by
    /// the loop's requeue (the hand-off saw NOTIFIED and left the word alone).
    #[test]
    fn a_wake_racing_a_direct_hand_off_is_submitted_exactly_once() {
        loom::model(|| {
            poll_racing_a_wake(|state| {
                !state.transition_to_idle_if_plain()
                    && state.transition_to_idle(false) == TransitionToIdle::OkNotified
            })
        });
    }

    #[test]
    fn an_abort_racing_the_end_of_a_poll_is_never_lost() {
        loom::model(|| {
            let state = idle_task();
            assert_eq!(
                state.transition_to_notified_by_ref(),
                TransitionToNotifiedByRef::Submit
            );
            assert_eq!(state.transition_to_running(), TransitionToRunning::Success);
            let aborter = {
                let state = state.clone();
                thread::spawn(move || state.transition_to_notified_and_cancel())
            };
            let after_poll = state.transition_to_idle(false);
            let submitted_by_abort = aborter.join().unwrap();
            // Either the poll saw the cancellation (and cancels), or the abort submitted the
            // task to be cancelled; never neither, never both.
            let poll_cancels = after_poll == TransitionToIdle::Cancelled;
            let requeued = after_poll == TransitionToIdle::OkNotified;
            assert_eq!(
                [poll_cancels, requeued, submitted_by_abort]
                    .iter()
                    .filter(|&&b| b)
                    .count(),
                1,
                "{after_poll:?} submitted_by_abort={submitted_by_abort}"
            );
            assert!(state.load().is_cancelled());
        });
    }

    #[test]
    fn the_join_waker_is_either_woken_or_the_output_is_read() {
        loom::model(|| {
            let state = Arc::new(State::new());
            assert_eq!(state.transition_to_running(), TransitionToRunning::Success);
            let completer = {
                let state = state.clone();
                // The worker completes the task; true if it must wake the JoinHandle.
                thread::spawn(move || state.transition_to_complete().is_join_waker_set())
            };
            // The JoinHandle registers its waker unless the task is complete.
            let registered = state.set_join_waker().is_ok();
            let woken = completer.join().unwrap();
            // A registered waker must be woken; an unregistered one means the JoinHandle saw
            // the task complete and reads the output itself.
            assert_eq!(registered, woken);
        });
    }

    #[test]
    fn a_join_handle_dropped_during_completion_drops_the_output_once() {
        loom::model(|| {
            let state = Arc::new(State::new());
            assert_eq!(state.transition_to_running(), TransitionToRunning::Success);
            let drops = Arc::new(AtomicUsize::new(0));
            let completer = {
                let (state, drops) = (state.clone(), drops.clone());
                thread::spawn(move || {
                    if !state.transition_to_complete().is_join_interested() {
                        drops.fetch_add(1, SeqCst);
                    }
                })
            };
            if state.transition_to_join_handle_dropped().drop_output {
                drops.fetch_add(1, SeqCst);
            }
            completer.join().unwrap();
            assert_eq!(drops.load(SeqCst), 1);
        });
    }
}
