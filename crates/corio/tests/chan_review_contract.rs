//! Review tests for `corio::chan`, `select!` and `corio::sync`: cancellation safety, close
//! semantics, FIFO order, error variants, and stress with cancellations interleaved.
//!
//! Every test is bounded by the `within` watchdog or by timeouts; assertions are about
//! behaviour (what was received, how often), never about timing.

#[macro_use]
mod support;

use std::collections::HashSet;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use corio::chan::{
    self, RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
use support::{Drops, EVENTUALLY, within};

const MS: Duration = Duration::from_millis(1);

/// Polls `fut` once with a waker that does nothing.
fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(Waker::noop()))
}

/// Polls a pinned future once with a waker that does nothing.
fn poll_pinned<F: Future>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

// ---------------------------------------------------------------------------------------------
// Close semantics and H6 (a cancelled receiver gives its value back)
// ---------------------------------------------------------------------------------------------

/// Two receivers wait on a rendezvous channel; a send hands the value to the first; the
/// channel is then closed, which completes the second with `RecvError`; then the first
/// receiver's future is dropped (an aborted task, a `select` in another library, a timeout
/// around the future), and H6 puts the value back into the buffer.
///
/// The sender's `send` returned `Ok`: the value was delivered. The second receiver was told
/// the channel is closed *and drained* (docs/chan.md: "receivers drain what is buffered and
/// then get `Disconnected`"; `Receiver::recv`: "`RecvError` once the channel is closed and
/// drained"), yet a later receive on the same channel returns the value. A consumer that
/// stops at the first `RecvError` (every `for v in rx` loop) never sees it.
#[test]
fn recv_error_is_final_even_when_a_cancelled_receiver_gives_a_value_back() {
    let (tx, rx) = chan::bounded::<u32>(0);
    let rx2 = rx.clone();
    let mut first = rx.recv_async();
    let mut second = rx2.recv_async();
    assert!(poll_once(&mut first).is_pending());
    assert!(poll_once(&mut second).is_pending());
    assert_eq!(
        tx.try_send(7),
        Ok(()),
        "handed to the first waiting receiver"
    );
    drop(tx); // the last sender: the channel closes
    let second_result = poll_once(&mut second);
    drop(first); // cancelled after the hand-off: H6 gives the value back
    // Either the second receiver gets the value, or once it was told "closed and drained"
    // nothing may be received any more.
    match second_result {
        Poll::Ready(Ok(v)) => assert_eq!(v, 7),
        Poll::Ready(Err(RecvError)) => {
            let later = rx2.try_recv();
            assert_eq!(
                later,
                Err(TryRecvError::Disconnected),
                "a receiver was told the channel is closed and drained, then the value \
                 {later:?} came out of it"
            )
        }
        // The close waits for the value in transit (docs/chan.md, "Closing with values in
        // transit"): given back, it goes to this waiting receiver.
        Poll::Pending => assert_eq!(
            poll_once(&mut second),
            Poll::Ready(Ok(7)),
            "the value given back did not reach the receiver waiting on the closed channel"
        ),
    }
}

/// The consequence in a realistic shape: a consumer loop `for v in rx` (coroutine) and a
/// second consumer whose receive is cancelled (an aborted async task) after it was handed the
/// last value; the producer sends it with `Ok(())` and closes. The value must reach the loop
/// that is still running, or at least not be dropped when the last handle goes.
#[test]
fn a_value_sent_ok_before_close_is_not_discarded_when_its_receiver_is_cancelled() {
    within(EVENTUALLY, || {
        let drops = Drops::new();
        let (tx, rx) = chan::bounded(0);
        let rx2 = rx.clone();
        let mut cancelled = rx.recv_async();
        assert!(poll_once(&mut cancelled).is_pending());
        // The surviving consumer: a plain thread draining until "closed and drained".
        let consumer = std::thread::spawn(move || rx2.iter().count());
        // Wait until the consumer is queued behind the cancelled receive (a rendezvous send
        // with try_send would reach `cancelled` first anyway: it is first in the queue).
        std::thread::sleep(20 * MS);
        tx.send(drops.token()).expect("a receiver is waiting");
        drop(tx); // close
        // Give the consumer time to see the close (it used to end here, told "closed and
        // drained" while the value was still on its way), then cancel the receive.
        std::thread::sleep(20 * MS);
        drop(cancelled);
        let received_by_loop = consumer.join().unwrap();
        // What is still buffered goes with the last receiver (documented); count it first.
        let still_buffered = rx.len();
        drop(rx);
        assert_eq!(
            received_by_loop + still_buffered,
            1,
            "the value was neither received nor left"
        );
        assert_eq!(
            received_by_loop, 1,
            "`send` returned Ok and a receiver was still draining the channel, but the value \
             went back to the buffer after that receiver had been told `Disconnected` \
             ({still_buffered} left buffered; it is dropped with the last receiver)"
        );
    });
}

/// A closed bounded channel with senders blocked on the full buffer: the blocked senders get
/// their values back, the values buffered before the close are still received, then
/// `Disconnected`.
#[test]
fn close_with_blocked_senders_keeps_the_buffer_and_returns_the_waiting_values() {
    let (tx, rx) = chan::bounded::<u32>(2);
    tx.try_send(1).unwrap();
    tx.try_send(2).unwrap();
    let mut s3 = tx.send_async(3);
    let mut s4 = tx.send_async(4);
    assert!(poll_once(&mut s3).is_pending());
    assert!(poll_once(&mut s4).is_pending());
    assert!(rx.close());
    assert!(!tx.close(), "closed once");
    assert_eq!(poll_once(&mut s3), Poll::Ready(Err(SendError(3))));
    assert_eq!(poll_once(&mut s4), Poll::Ready(Err(SendError(4))));
    assert_eq!(tx.try_send(5), Err(TrySendError::Disconnected(5)));
    assert_eq!(tx.send(6), Err(SendError(6)));
    assert_eq!(
        tx.send_timeout(7, MS),
        Err(SendTimeoutError::Disconnected(7))
    );
    assert_eq!(rx.len(), 2);
    assert_eq!(rx.recv(), Ok(1));
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    assert_eq!(rx.recv(), Err(RecvError));
    assert_eq!(rx.recv_timeout(MS), Err(RecvTimeoutError::Disconnected));
    assert!(rx.is_closed() && tx.is_closed());
}

/// The same on a rendezvous channel with blocked senders *and* blocked receivers cannot
/// exist at once; closing with blocked receivers (both lone and in a select) wakes them all.
#[test]
fn close_wakes_every_kind_of_waiter_on_a_rendezvous_channel() {
    let (tx, rx) = chan::bounded::<u32>(0);
    let (_other_tx, other_rx) = chan::bounded::<u32>(0);
    let mut r1 = rx.recv_async();
    let mut r2 = rx.recv_async();
    let mut sel = Box::pin(async {
        corio::select_async! {
            recv(rx) -> v => v,
            recv(other_rx) -> v => v.map(|v| v + 100),
        }
    });
    assert!(poll_once(&mut r1).is_pending());
    assert!(poll_once(&mut r2).is_pending());
    assert!(poll_pinned(sel.as_mut()).is_pending());
    assert!(tx.close());
    assert_eq!(poll_once(&mut r1), Poll::Ready(Err(RecvError)));
    assert_eq!(poll_once(&mut r2), Poll::Ready(Err(RecvError)));
    assert_eq!(poll_pinned(sel.as_mut()), Poll::Ready(Err(RecvError)));
    drop(sel);
    // And senders: a new channel, closed by the last receiver going away.
    let (tx, rx) = chan::bounded::<u32>(0);
    let mut s1 = tx.send_async(1);
    assert!(poll_once(&mut s1).is_pending());
    drop(rx);
    assert_eq!(poll_once(&mut s1), Poll::Ready(Err(SendError(1))));
}

/// Handles counts: the channel closes only when the *last* sender goes; values sent by the
/// others before are drained; clones of receivers each get distinct values.
#[test]
fn dropping_some_senders_does_not_close_and_the_last_one_does() {
    let (tx, rx) = chan::bounded::<u32>(4);
    let tx2 = tx.clone();
    let tx3 = tx2.clone();
    tx.send(1).unwrap();
    drop(tx);
    assert!(!rx.is_closed());
    tx2.send(2).unwrap();
    drop(tx2);
    assert!(!rx.is_closed());
    tx3.send(3).unwrap();
    drop(tx3);
    assert!(rx.is_closed());
    let rx2 = rx.clone();
    assert_eq!(rx.recv(), Ok(1));
    assert_eq!(rx2.recv(), Ok(2));
    assert_eq!(rx.recv(), Ok(3));
    assert_eq!(rx2.recv(), Err(RecvError));
    // And receivers: dropping one of two keeps the channel open for senders.
    let (tx, rx) = chan::bounded::<u32>(1);
    let rx2 = rx.clone();
    drop(rx);
    assert_eq!(tx.try_send(1), Ok(()));
    assert!(!tx.is_closed());
    drop(rx2);
    assert!(tx.is_closed());
    assert_eq!(tx.try_send(2), Err(TrySendError::Disconnected(2)));
}

#[test]
fn len_capacity_and_fullness_at_the_edges() {
    let (tx, rx) = chan::bounded::<u8>(0);
    assert_eq!(
        (tx.capacity(), rx.len(), rx.is_empty(), tx.is_full()),
        (Some(0), 0, true, true)
    );
    assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(rx.recv_timeout(MS), Err(RecvTimeoutError::Timeout));
    assert_eq!(tx.send_timeout(2, MS), Err(SendTimeoutError::Timeout(2)));
    let huge = usize::MAX - 1;
    let (tx, rx) = chan::bounded::<u8>(huge);
    assert_eq!(tx.capacity(), Some(huge));
    for i in 0..10_000u32 {
        tx.try_send(i as u8).unwrap();
    }
    assert_eq!(rx.len(), 10_000);
    assert!(!tx.is_full());
    let (tx, rx) = chan::unbounded::<u8>();
    assert_eq!(tx.capacity(), None);
    assert!(!tx.is_full());
    tx.send(1).unwrap();
    assert!(!rx.is_empty());
    assert!(tx.same_channel(&tx.clone()) && rx.same_channel(&rx.clone()));
    let (tx_other, _rx_other) = chan::unbounded::<u8>();
    assert!(!tx.same_channel(&tx_other));
    let r = std::panic::catch_unwind(|| chan::bounded::<u8>(usize::MAX));
    assert!(r.is_err(), "bounded(usize::MAX) is refused");
}

// ---------------------------------------------------------------------------------------------
// FIFO among waiters
// ---------------------------------------------------------------------------------------------

/// Receivers queued in a known order (futures polled in that order) are served in that order.
#[test]
fn waiting_receivers_are_served_first_come_first_served() {
    let (tx, rx) = chan::bounded::<usize>(0);
    let mut futs: Vec<_> = (0..8).map(|_| rx.recv_async()).collect();
    for f in &mut futs {
        assert!(poll_once(f).is_pending());
    }
    for i in 0..8 {
        tx.try_send(i).unwrap();
    }
    for (i, f) in futs.iter_mut().enumerate() {
        assert_eq!(poll_once(f), Poll::Ready(Ok(i)));
    }
}

/// Senders queued on a full bounded channel are drained in send order, after the buffer.
#[test]
fn waiting_senders_are_drained_in_order_after_the_buffer() {
    let (tx, rx) = chan::bounded::<usize>(2);
    tx.try_send(0).unwrap();
    tx.try_send(1).unwrap();
    let mut futs: Vec<_> = (2..8).map(|i| tx.send_async(i)).collect();
    for f in &mut futs {
        assert!(poll_once(f).is_pending());
    }
    let got: Vec<_> = (0..8).map(|_| rx.try_recv().unwrap()).collect();
    assert_eq!(got, (0..8).collect::<Vec<_>>());
    for f in &mut futs {
        assert_eq!(poll_once(f), Poll::Ready(Ok(())));
    }
}

/// A thread, a coroutine and an async task wait in that order on one rendezvous channel; a
/// plain thread then sends 0, 1, 2: each gets the value of its place in the queue.
#[test]
fn fifo_holds_across_threads_coroutines_and_tasks() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        let (tx, rx) = chan::bounded::<usize>(0);
        // Each waiter is started only after the previous one had time to queue.
        let queued = |_: &chan::Receiver<usize>| std::thread::sleep(30 * MS);
        let r = rx.clone();
        let thread = std::thread::spawn(move || r.recv());
        queued(&rx);
        let r = rx.clone();
        let coroutine = rt.go(move || r.recv());
        queued(&rx);
        let r = rx.clone();
        let task = rt.spawn(async move { r.recv_async().await });
        queued(&rx);
        for i in 0..3 {
            tx.send(i).unwrap();
        }
        assert_eq!(thread.join().unwrap(), Ok(0));
        assert_eq!(rt.block_on(coroutine).unwrap(), Ok(1));
        assert_eq!(rt.block_on(task).unwrap(), Ok(2));
    });
}

// ---------------------------------------------------------------------------------------------
// The Stream face: an abandoned poll
// ---------------------------------------------------------------------------------------------

/// `Receiver` is a `Stream`. A `next()` that is abandoned (a timeout around it, a
/// `futures::select!` that took another branch) leaves the stream's receive queued on the
/// channel; a value sent then is handed to that abandoned receive. Another receiver *handle*
/// (a clone) that waits for the value never gets it while the first handle is alive and
/// unused: `Send` returned `Ok`, a receiver is waiting, nothing arrives.
#[test]
fn a_value_handed_to_an_abandoned_stream_poll_reaches_another_waiting_receiver() {
    within(EVENTUALLY, || {
        let (tx, mut rx) = chan::bounded::<u8>(0);
        let rx2 = rx.clone();
        {
            // `StreamExt::next(&mut rx)` polled once and dropped (what `timeout(d, rx.next())`
            // does when it times out).
            let mut next =
                std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut rx), cx));
            assert!(poll_once(&mut next).is_pending());
        }
        // A second consumer waits on a clone, from another thread.
        let waiter = std::thread::spawn(move || rx2.recv_timeout(Duration::from_secs(2)));
        std::thread::sleep(20 * MS);
        tx.send(1).expect("a receiver is waiting");
        let got = waiter.join().unwrap();
        // rx is alive, unused (kept in a struct, say).
        let _keep = &rx;
        assert_eq!(
            got,
            Ok(1),
            "the value went to the abandoned stream poll of another handle; the waiting \
             receiver timed out"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// select
// ---------------------------------------------------------------------------------------------

/// With several arms ready at once (two receives with a value each, two sends with room), a
/// select performs exactly one, and the others leave their channels exactly as they were.
#[test]
fn a_select_with_several_ready_arms_performs_exactly_one() {
    let mut seen = [0usize; 4];
    for _ in 0..400 {
        let (a_tx, a) = chan::bounded::<u32>(1);
        let (b_tx, b) = chan::bounded::<u32>(1);
        let (c, c_rx) = chan::bounded::<u32>(1);
        let (d, d_rx) = chan::bounded::<u32>(0);
        let _d_waiter = {
            // A receiver waiting on the rendezvous channel makes `send(d)` ready.
            let mut f = Box::pin(d_rx.recv_async());
            assert!(poll_pinned(f.as_mut()).is_pending());
            f
        };
        a_tx.try_send(1).unwrap();
        b_tx.try_send(2).unwrap();
        let which = corio::select! {
            recv(a) -> v => { assert_eq!(v, Ok(1)); 0 },
            recv(b) -> v => { assert_eq!(v, Ok(2)); 1 },
            send(c, 3) -> r => { assert_eq!(r, Ok(())); 2 },
            send(d, 4) -> r => { assert_eq!(r, Ok(())); 3 },
        };
        seen[which] += 1;
        let effects = [
            usize::from(a.is_empty()),
            usize::from(b.is_empty()),
            c_rx.len(),
            usize::from(
                d_rx.is_empty() && {
                    let mut f = _d_waiter;
                    poll_pinned(f.as_mut()) == Poll::Ready(Ok(4))
                },
            ),
        ];
        assert_eq!(
            effects.iter().sum::<usize>(),
            1,
            "effects {effects:?}, chose {which}"
        );
        assert_eq!(effects[which], 1);
    }
    assert!(
        seen.iter().all(|&n| n > 40),
        "every ready arm is chosen sometimes: {seen:?}"
    );
}

/// A select waiting on a send arm (rendezvous) and a receive arm; a receiver takes the send
/// arm's value; the select future is then dropped before it observed that. The value was
/// sent exactly once and the receive arm took nothing.
#[test]
fn a_select_dropped_after_its_send_arm_happened_does_not_undo_or_repeat_it() {
    let drops = Drops::new();
    let (tx, rx) = chan::bounded(0);
    let (other_tx, other_rx) = chan::bounded::<u32>(1);
    let token = drops.token();
    {
        let mut sel = Box::pin(async {
            corio::select_async! {
                send(tx, token) -> r => r.is_ok(),
                recv(other_rx) -> _ => false,
            }
        });
        assert!(poll_pinned(sel.as_mut()).is_pending());
        let got = rx.try_recv();
        assert!(got.is_ok(), "the select's send arm is taken");
        drop(got);
        other_tx.try_send(9).unwrap();
    }
    assert_eq!(
        drops.dropped(),
        1,
        "the value was dropped once, by the receiver"
    );
    assert_eq!(other_rx.try_recv(), Ok(9), "the receive arm took nothing");
    assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
}

/// A select whose two receive arms are on the *same* channel, and a select with a send and a
/// receive on the same rendezvous channel (which must not meet itself): Go semantics.
#[test]
fn select_arms_on_one_channel_and_self_meeting() {
    let (tx, rx) = chan::bounded::<u32>(0);
    let got = corio::select! {
        send(tx, 1) -> _ => "sent",
        recv(rx) -> _ => "received",
        default => "default",
    };
    assert_eq!(got, "default", "a select never matches itself");
    let got = corio::select! {
        send(tx, 1) -> _ => "sent",
        recv(rx) -> _ => "received",
        after(5 * MS) => "after",
    };
    assert_eq!(got, "after");
    let (tx, rx) = chan::bounded::<u32>(1);
    tx.send(5).unwrap();
    let v = corio::select! {
        recv(rx) -> v => v,
        recv(rx) -> v => v,
    };
    assert_eq!(v, Ok(5));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

// ---------------------------------------------------------------------------------------------
// sync: cancellation passes things on
// ---------------------------------------------------------------------------------------------

/// An acquire that was fully satisfied by a release (unlinked, permits assigned) and is then
/// dropped before it observed that returns every permit.
#[test]
fn a_satisfied_but_unobserved_acquire_returns_its_permits_when_dropped() {
    let sem = corio::sync::Semaphore::new(0);
    {
        let mut a = pin!(sem.acquire_many_async(3));
        assert!(poll_pinned(a.as_mut()).is_pending());
        sem.add_permits(5);
        assert_eq!(sem.available_permits(), 2);
    }
    assert_eq!(sem.available_permits(), 5);
    // And a waiter behind it gets them.
    let mut first = Box::pin(sem.acquire_many_async(6));
    let mut second = Box::pin(sem.acquire_many_async(1));
    assert!(poll_once(&mut first).is_pending());
    assert!(
        poll_pinned(second.as_mut()).is_pending(),
        "FIFO: behind the large one"
    );
    assert_eq!(sem.available_permits(), 0);
    drop(first); // returns the 5 it had collected; the second gets one
    let held = match poll_pinned(second.as_mut()) {
        Poll::Ready(Ok(p)) => p,
        other => panic!("the second waiter got nothing: {:?}", other.is_ready()),
    };
    assert_eq!(held.num_permits(), 1);
    assert_eq!(sem.available_permits(), 4);
    drop(held);
    assert_eq!(sem.available_permits(), 5);
}

/// A `Lock` future that was handed the lock in starvation mode and dropped unpolled passes it
/// on to the next waiter; a `Notified` that was handed `notify_one` and dropped passes it on.
#[test]
fn dropped_lock_and_notified_futures_pass_on_what_they_were_handed() {
    let m = corio::sync::Mutex::new(0);
    let g = m.try_lock().unwrap();
    let mut a = Box::pin(m.lock_async());
    let mut b = Box::pin(m.lock_async());
    assert!(poll_pinned(a.as_mut()).is_pending());
    assert!(poll_pinned(b.as_mut()).is_pending());
    std::thread::sleep(3 * corio::sync::STARVATION);
    drop(g); // starving head: handed directly to `a`
    assert!(m.try_lock().is_none(), "handed over, not released");
    drop(a);
    assert!(poll_pinned(b.as_mut()).is_ready(), "passed on to b");
    drop(b);
    assert!(m.try_lock().is_some());

    let n = corio::sync::Notify::new();
    let mut x = Box::pin(n.notified_async());
    let mut y = Box::pin(n.notified_async());
    assert!(poll_pinned(x.as_mut()).is_pending());
    assert!(poll_pinned(y.as_mut()).is_pending());
    n.notify_one();
    drop(x);
    assert!(poll_pinned(y.as_mut()).is_ready());
}

/// WaitGroup misuse: `done` past zero panics (Go), and the group stays usable.
#[test]
fn wait_group_done_past_zero_panics_and_leaves_the_count_at_zero() {
    let wg = corio::sync::WaitGroup::new();
    wg.add(1);
    wg.done();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| wg.done()));
    assert!(r.is_err());
    assert_eq!(wg.count(), 0);
    wg.wait();
}

/// Semaphore try variants and close.
#[test]
fn semaphore_try_variants_close_and_held_permits() {
    let sem = Arc::new(corio::sync::Semaphore::new(2));
    let p = sem.try_acquire_many(2).unwrap();
    assert!(sem.try_acquire().is_none());
    let mut w = Box::pin(sem.acquire_async());
    assert!(poll_pinned(w.as_mut()).is_pending());
    sem.close();
    assert!(matches!(poll_pinned(w.as_mut()), Poll::Ready(Err(_))));
    drop(w);
    drop(p);
    assert_eq!(
        sem.available_permits(),
        2,
        "held permits come back after close"
    );
    assert!(sem.try_acquire().is_none(), "closed");
    assert!(sem.clone().try_acquire_owned().is_none());
}

/// `corio::sync::Mutex` does not poison (tokio's choice; docs/sync.md says nothing of
/// poisoning): a coroutine that panics while holding the guard releases the lock on unwind.
#[test]
fn a_coroutine_panicking_with_the_guard_releases_the_lock() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        let m = Arc::new(corio::sync::Mutex::new(0));
        let m2 = m.clone();
        let waiter_started = Arc::new(AtomicBool::new(false));
        let h = rt.go(move || {
            let mut g = m2.lock();
            *g += 1;
            corio::sleep(5 * MS);
            panic!("{} holding the guard", support::EXPECTED);
        });
        support::quiet_expected_panics();
        let m3 = m.clone();
        let ws = waiter_started.clone();
        let w = rt.go(move || {
            ws.store(true, SeqCst);
            *m3.lock() += 10;
        });
        assert!(rt.block_on(h).is_err());
        rt.block_on(w).unwrap();
        assert_eq!(*m.try_lock().unwrap(), 11);
    });
}

/// An `acquire_many` for more permits than a semaphore can ever hold. tokio panics ("a
/// semaphore may not have more than MAX_PERMITS permits"). Here the request is queued: it
/// takes every free permit and waits for ever, and FIFO then holds back every later
/// acquirer, so one impossible request silently stalls the whole semaphore.
#[test]
fn an_acquire_of_more_than_max_permits_is_refused_rather_than_stalling_everyone() {
    let sem = corio::sync::Semaphore::new(2);
    let n = corio::sync::Semaphore::MAX_PERMITS + 1;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut big = Box::pin(sem.acquire_many_async(n));
        let polled = poll_pinned(big.as_mut());
        // Not refused: is everybody else now stuck behind it?
        let small_ok = sem.try_acquire().is_some();
        (polled.is_pending(), small_ok)
    }));
    match r {
        Err(_) => {} // refused with a panic, as tokio
        Ok((pending, small_ok)) => panic!(
            "acquire_many(MAX_PERMITS + 1) pending = {pending}, and meanwhile a 1-permit \
             try_acquire on a semaphore of 2 free permits succeeded = {small_ok}"
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// oneshot
// ---------------------------------------------------------------------------------------------

#[test]
fn oneshot_send_after_receiver_dropped_returns_the_value() {
    let (tx, rx) = corio::sync::oneshot::channel::<u32>();
    assert!(!tx.is_closed());
    drop(rx);
    assert!(tx.is_closed());
    assert_eq!(tx.send(3), Err(3));
    let (tx, mut rx) = corio::sync::oneshot::channel::<u32>();
    assert_eq!(
        rx.try_recv(),
        Err(corio::sync::oneshot::TryRecvError::Empty)
    );
    tx.send(4).unwrap();
    assert_eq!(rx.try_recv(), Ok(4));
    assert_eq!(
        rx.try_recv(),
        Err(corio::sync::oneshot::TryRecvError::Closed)
    );
}

// ---------------------------------------------------------------------------------------------
// Stress: every value received exactly once, with cancellations interleaved
// ---------------------------------------------------------------------------------------------

fn check_once(all: &[u64], sent: u64) {
    let unique: HashSet<_> = all.iter().copied().collect();
    assert_eq!(unique.len(), all.len(), "a value was received twice");
    assert_eq!(all.len() as u64, sent, "values lost");
    let expected: u64 = (0..sent).sum();
    assert_eq!(all.iter().sum::<u64>(), expected, "wrong values");
}

rt_common! {
    /// 3 coroutine senders and 1 async sender; receivers of every kind that cancel often:
    /// coroutines with `recv_timeout`, coroutines with `corio::time::timeout(recv_async)`
    /// (the future is dropped), async tasks with `timeout_async(recv_async)`, async tasks with
    /// `select_async!` + `after`. Capacities 0, 1 and 4. Every value sent is received exactly
    /// once (or is still buffered at the end).
    #[test]
    fn mpmc_with_cancelling_receivers_of_every_kind_loses_and_duplicates_nothing() {
        for cap in [0usize, 1, 4] {
            let rt = rt();
            within(EVENTUALLY * 2, move || {
                const PER_SENDER: u64 = 1500;
                const SENDERS: u64 = 4;
                let (tx, rx) = chan::bounded::<u64>(cap);
                let got = Arc::new(Mutex::new(Vec::new()));
                let mut senders = Vec::new();
                for s in 0..SENDERS {
                    let tx = tx.clone();
                    if s == 3 {
                        senders.push(rt.spawn(async move {
                            for i in 0..PER_SENDER {
                                tx.send_async(s * PER_SENDER + i).await.unwrap();
                            }
                        }));
                    } else {
                        senders.push(rt.go(move || {
                            for i in 0..PER_SENDER {
                                tx.send(s * PER_SENDER + i).unwrap();
                            }
                        }));
                    }
                }
                drop(tx);
                let mut receivers = Vec::new();
                for k in 0..8u32 {
                    let (rx, got) = (rx.clone(), got.clone());
                    let short = Duration::from_micros(20 + 10 * u64::from(k));
                    receivers.push(match k % 4 {
                        0 => rt.go(move || loop {
                            match rx.recv_timeout(short) {
                                Ok(v) => got.lock().unwrap().push(v),
                                Err(RecvTimeoutError::Timeout) => {}
                                Err(RecvTimeoutError::Disconnected) => break,
                            }
                        }),
                        1 => rt.go(move || loop {
                            match corio::time::timeout(short, rx.recv_async()) {
                                Ok(Ok(v)) => got.lock().unwrap().push(v),
                                Ok(Err(_)) => break,
                                Err(_) => {}
                            }
                        }),
                        2 => rt.spawn(async move {
                            loop {
                                match corio::time::timeout_async(short, rx.recv_async()).await {
                                    Ok(Ok(v)) => got.lock().unwrap().push(v),
                                    Ok(Err(_)) => break,
                                    Err(_) => {}
                                }
                            }
                        }),
                        _ => rt.spawn(async move {
                            loop {
                                let stop = corio::select_async! {
                                    recv(rx) -> v => match v {
                                        Ok(v) => { got.lock().unwrap().push(v); false }
                                        Err(_) => true,
                                    },
                                    after(short) => false,
                                };
                                if stop {
                                    break;
                                }
                            }
                        }),
                    });
                }
                for s in senders {
                    rt.block_on(s).unwrap();
                }
                for r in receivers {
                    rt.block_on(r).unwrap();
                }
                let mut all = got.lock().unwrap().clone();
                all.extend(rx.try_iter());
                check_once(&all, SENDERS * PER_SENDER);
            });
        }
    }

    /// Selects that send on one of two channels (with `after`) against selects that receive
    /// from either, plus blocking receivers; some receivers are aborted tasks. Every value a
    /// select reported sent is received exactly once.
    #[test]
    fn selects_sending_and_receiving_with_timeouts_and_aborts_lose_nothing() {
        let rt = rt();
        within(EVENTUALLY * 2, move || {
            const N: u64 = 3000;
            let (a_tx, a_rx) = chan::bounded::<u64>(0);
            let (b_tx, b_rx) = chan::bounded::<u64>(1);
            let sent = Arc::new(Mutex::new(Vec::new()));
            let got = Arc::new(Mutex::new(Vec::new()));
            let producers: Vec<_> = (0..2u64)
                .map(|p| {
                    let (a_tx, b_tx, sent) = (a_tx.clone(), b_tx.clone(), sent.clone());
                    rt.go(move || {
                        let mut i = p;
                        while i < N {
                            let ok = corio::select! {
                                send(a_tx, i) -> r => r.is_ok(),
                                send(b_tx, i) -> r => r.is_ok(),
                                after(Duration::from_micros(50)) => false,
                            };
                            if ok {
                                sent.lock().unwrap().push(i);
                                i += 2;
                            }
                        }
                    })
                })
                .collect();
            drop((a_tx, b_tx));
            let done = Arc::new(AtomicBool::new(false));
            let consumers: Vec<_> = (0..3)
                .map(|c| {
                    let (a_rx, b_rx, got) = (a_rx.clone(), b_rx.clone(), got.clone());
                    let short = Duration::from_micros(30 + 20 * c);
                    rt.go(move || {
                        let (mut a_open, mut b_open) = (true, true);
                        while a_open || b_open {
                            corio::select! {
                                recv(a_rx) -> v => match v {
                                    Ok(v) => got.lock().unwrap().push(v),
                                    Err(_) => a_open = false,
                                },
                                recv(b_rx) -> v => match v {
                                    Ok(v) => got.lock().unwrap().push(v),
                                    Err(_) => b_open = false,
                                },
                                after(short) => {},
                            }
                            if !a_open {
                                // Keep draining b alone.
                                while let Ok(v) = b_rx.recv() {
                                    got.lock().unwrap().push(v);
                                }
                                b_open = false;
                            }
                        }
                    })
                })
                .collect();
            // Async receivers that get aborted repeatedly while waiting.
            let mut aborted = 0;
            while !producers.iter().all(|p| p.is_finished()) {
                let tasks: Vec<_> = (0..2)
                    .map(|_| {
                        let (a_rx, b_rx, got) = (a_rx.clone(), b_rx.clone(), got.clone());
                        rt.spawn(async move {
                            loop {
                                let v = corio::select_async! {
                                    recv(a_rx) -> v => v,
                                    recv(b_rx) -> v => v,
                                };
                                match v {
                                    Ok(v) => got.lock().unwrap().push(v),
                                    Err(_) => break,
                                }
                            }
                        })
                    })
                    .collect();
                std::thread::sleep(Duration::from_micros(400));
                for t in tasks {
                    t.abort();
                    aborted += 1;
                }
            }
            done.store(true, SeqCst);
            for p in producers {
                rt.block_on(p).unwrap();
            }
            for c in consumers {
                rt.block_on(c).unwrap();
            }
            drop(rt);
            let mut all = got.lock().unwrap().clone();
            all.extend(a_rx.try_iter());
            all.extend(b_rx.try_iter());
            let mut sent = sent.lock().unwrap().clone();
            sent.sort_unstable();
            all.sort_unstable();
            assert_eq!(sent.len() as u64, N, "every value was eventually sent");
            assert_eq!(all, sent, "received != sent ({aborted} tasks aborted)");
        });
    }

    /// Semaphore with acquirers that time out (dropping their futures mid-wait, perhaps after
    /// being assigned permits) from coroutines and tasks: never more than `P` holders at
    /// once, and at the end every permit is back.
    #[test]
    fn semaphore_acquires_cancelled_by_timeouts_lose_no_permit() {
        let rt = rt();
        within(EVENTUALLY, move || {
            const P: usize = 3;
            let sem = Arc::new(corio::sync::Semaphore::new(P));
            let inside = Arc::new(AtomicUsize::new(0));
            let entered = Arc::new(AtomicU64::new(0));
            let mut hs = Vec::new();
            for k in 0..6u64 {
                let (sem, inside, entered) = (sem.clone(), inside.clone(), entered.clone());
                let n = 1 + (k as usize % 2);
                let short = Duration::from_micros(30 + 15 * k);
                let body = move |p: corio::sync::SemaphorePermit<'_>| {
                    let now = inside.fetch_add(p.num_permits(), SeqCst) + p.num_permits();
                    assert!(now <= P, "{now} permits held at once");
                    entered.fetch_add(1, SeqCst);
                    inside.fetch_sub(p.num_permits(), SeqCst);
                };
                if k % 2 == 0 {
                    hs.push(rt.go(move || {
                        for _ in 0..400 {
                            if let Ok(Ok(p)) =
                                corio::time::timeout(short, sem.acquire_many_async(n))
                            {
                                body(p);
                                corio::yield_now();
                            }
                        }
                    }));
                } else {
                    hs.push(rt.spawn(async move {
                        for _ in 0..400 {
                            if let Ok(Ok(p)) =
                                corio::time::timeout_async(short, sem.acquire_many_async(n)).await
                            {
                                body(p);
                                corio::yield_now_async().await;
                            }
                        }
                    }));
                }
            }
            for h in hs {
                rt.block_on(h).unwrap();
            }
            assert_eq!(sem.available_permits(), P, "permits lost or duplicated");
            assert!(entered.load(SeqCst) > 0);
        });
    }

    /// Mutex lock futures cancelled by timeouts from coroutines, tasks and a thread: mutual
    /// exclusion holds, and the lock ends free.
    #[test]
    fn mutex_lock_waits_cancelled_by_timeouts_keep_exclusion_and_end_free() {
        let rt = rt();
        within(EVENTUALLY, move || {
            let m = Arc::new(corio::sync::Mutex::new(0u64));
            let inside = Arc::new(AtomicUsize::new(0));
            let done_incs = Arc::new(AtomicU64::new(0));
            let mut hs = Vec::new();
            for k in 0..6u64 {
                let (m, inside, done_incs) = (m.clone(), inside.clone(), done_incs.clone());
                let short = Duration::from_micros(20 + 10 * k);
                if k % 2 == 0 {
                    hs.push(rt.go(move || {
                        for _ in 0..500 {
                            if let Ok(mut g) = corio::time::timeout(short, m.lock_async()) {
                                assert_eq!(inside.fetch_add(1, SeqCst), 0, "two owners");
                                *g += 1;
                                done_incs.fetch_add(1, SeqCst);
                                corio::yield_now();
                                inside.fetch_sub(1, SeqCst);
                            }
                        }
                    }));
                } else {
                    hs.push(rt.spawn(async move {
                        for _ in 0..500 {
                            if let Ok(mut g) =
                                corio::time::timeout_async(short, m.lock_async()).await
                            {
                                assert_eq!(inside.fetch_add(1, SeqCst), 0, "two owners");
                                *g += 1;
                                done_incs.fetch_add(1, SeqCst);
                                corio::yield_now_async().await;
                                inside.fetch_sub(1, SeqCst);
                            }
                        }
                    }));
                }
            }
            let m2 = m.clone();
            let th = std::thread::spawn(move || {
                for _ in 0..200 {
                    let mut g = m2.lock();
                    *g += 1;
                }
            });
            th.join().unwrap();
            for h in hs {
                rt.block_on(h).unwrap();
            }
            let v = *m.try_lock().expect("the lock ends free");
            assert_eq!(v, done_incs.load(SeqCst) + 200);
        });
    }

    /// Notify with `notify_one` from a thread and waiters that time out: every notification
    /// is consumed by exactly one waiter or left as the single permit; none is lost. We send
    /// N notifications one at a time, each only after the previous one was consumed.
    #[test]
    fn notify_one_with_cancelling_waiters_loses_no_notification() {
        let rt = rt();
        within(EVENTUALLY, move || {
            const N: u64 = 500;
            let notify = Arc::new(corio::sync::Notify::new());
            let consumed = Arc::new(AtomicU64::new(0));
            let stop = Arc::new(AtomicBool::new(false));
            let mut hs = Vec::new();
            for k in 0..4u64 {
                let (notify, consumed, stop) = (notify.clone(), consumed.clone(), stop.clone());
                let short = Duration::from_micros(20 + 15 * k);
                if k % 2 == 0 {
                    hs.push(rt.go(move || {
                        while !stop.load(SeqCst) {
                            if corio::time::timeout(short, notify.notified_async()).is_ok() {
                                consumed.fetch_add(1, SeqCst);
                            }
                        }
                    }));
                } else {
                    hs.push(rt.spawn(async move {
                        while !stop.load(SeqCst) {
                            if corio::time::timeout_async(short, notify.notified_async())
                                .await
                                .is_ok()
                            {
                                consumed.fetch_add(1, SeqCst);
                            }
                        }
                    }));
                }
            }
            for i in 0..N {
                notify.notify_one();
                support::wait_until("the notification is consumed", || {
                    consumed.load(SeqCst) > i
                });
            }
            stop.store(true, SeqCst);
            for h in hs {
                rt.block_on(h).unwrap();
            }
            assert_eq!(consumed.load(SeqCst), N, "a notification was consumed twice");
        });
    }

    /// The realistic shape of `recv_error_is_final_even_when_a_cancelled_receiver_gives_a_value_back`:
    /// two coroutines drain a rendezvous channel with `for v in rx.iter()` while async
    /// receivers are spawned and aborted around them; the producer sends N values (every
    /// `send` returns `Ok`) and then drops its sender. When the draining loops have ended
    /// (they saw "closed and drained"), every value must have been received by someone.
    #[test]
    fn draining_loops_end_only_after_every_value_sent_ok_was_received() {
        let rt = rt();
        within(EVENTUALLY * 2, move || {
            let mut left_behind_runs = 0;
            let mut left_behind_values = 0;
            const ROUNDS: usize = 30;
            for _ in 0..ROUNDS {
                const N: u64 = 300;
                let (tx, rx) = chan::bounded::<u64>(0);
                let got = Arc::new(Mutex::new(Vec::new()));
                let loops: Vec<_> = (0..2)
                    .map(|_| {
                        let (rx, got) = (rx.clone(), got.clone());
                        rt.go(move || {
                            for v in rx.iter() {
                                got.lock().unwrap().push(v);
                            }
                        })
                    })
                    .collect();
                let producer = rt.go(move || {
                    for i in 0..N {
                        tx.send(i).unwrap();
                    }
                });
                while !producer.is_finished() {
                    let tasks: Vec<_> = (0..3)
                        .map(|_| {
                            let (rx, got) = (rx.clone(), got.clone());
                            rt.spawn(async move {
                                while let Ok(v) = rx.recv_async().await {
                                    got.lock().unwrap().push(v);
                                }
                            })
                        })
                        .collect();
                    std::thread::sleep(Duration::from_micros(100));
                    for t in tasks {
                        t.abort();
                    }
                }
                rt.block_on(producer).unwrap();
                for l in loops {
                    rt.block_on(l).unwrap();
                }
                // Let aborted tasks finish dropping their futures (they give values back).
                std::thread::sleep(5 * MS);
                let received = got.lock().unwrap().len() as u64;
                let behind: Vec<_> = rx.try_iter().collect();
                assert_eq!(received + behind.len() as u64, N, "lost or duplicated");
                if !behind.is_empty() {
                    left_behind_runs += 1;
                    left_behind_values += behind.len();
                }
            }
            assert_eq!(
                left_behind_runs, 0,
                "in {left_behind_runs} of {ROUNDS} runs, {left_behind_values} value(s) sent with \
                 Ok were still in the channel after every draining loop had seen RecvError"
            );
        });
    }

    /// The close/abort race made likely: an async receiver task is queued first, two
    /// coroutines drain with `for v in rx.iter()` behind it; a plain thread sends one value
    /// (handed to the task: it is first), drops the sender (close) and aborts the task at
    /// once. If the abort wins against the task's poll, the value goes back to the buffer
    /// after both loops were told "closed and drained".
    #[test]
    fn a_receiver_aborted_as_the_channel_closes_leaves_no_value_behind_the_draining_loops() {
        let rt = rt();
        within(EVENTUALLY * 2, move || {
            const ROUNDS: usize = 200;
            let mut left_behind = 0;
            for _ in 0..ROUNDS {
                let (tx, rx) = chan::bounded::<u64>(0);
                let got = Arc::new(AtomicUsize::new(0));
                let task = {
                    let (rx, got) = (rx.clone(), got.clone());
                    rt.spawn(async move {
                        if rx.recv_async().await.is_ok() {
                            got.fetch_add(1, SeqCst);
                        }
                    })
                };
                std::thread::sleep(Duration::from_micros(300));
                let loops: Vec<_> = (0..2)
                    .map(|_| {
                        let (rx, got) = (rx.clone(), got.clone());
                        rt.go(move || {
                            for _ in rx.iter() {
                                got.fetch_add(1, SeqCst);
                            }
                        })
                    })
                    .collect();
                std::thread::sleep(Duration::from_micros(300));
                tx.send(1).unwrap();
                drop(tx);
                task.abort();
                for l in loops {
                    rt.block_on(l).unwrap();
                }
                let _ = rt.block_on(task);
                let behind = rx.try_iter().count();
                assert_eq!(got.load(SeqCst) + behind, 1, "lost or duplicated");
                left_behind += behind;
            }
            assert_eq!(
                left_behind, 0,
                "in {left_behind} of {ROUNDS} rounds the value sent with Ok was back in the \
                 channel after both draining loops had seen RecvError"
            );
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Values moved in place (ef8b75b, 5a15aa4): raw copies into the caller's `MaybeUninit`, a
// send's value kept in its op, a `select!` receive arm's `Received<T>` with a `Drop`
// ---------------------------------------------------------------------------------------------

/// A value for the move paths: heap-owning, its drops counted, and able to say which it is
/// (a torn or stale copy fails `id`). Implemented below and above the channel's 256-byte
/// "large value" size, so both the inlined paths and the calls of their own are taken.
trait Moved: Send + 'static {
    fn make(drops: &Drops, i: usize) -> Self;
    fn id(&self) -> usize;
}

struct Small {
    _token: support::DropToken,
    text: String,
}

struct Big {
    _token: support::DropToken,
    text: String,
    pad: [u8; 1024],
}

const _: () = assert!(size_of::<Small>() <= 256 && size_of::<Big>() > 256);

impl Moved for Small {
    fn make(drops: &Drops, i: usize) -> Small {
        Small {
            _token: drops.token(),
            text: i.to_string(),
        }
    }

    fn id(&self) -> usize {
        self.text.parse().unwrap()
    }
}

impl Moved for Big {
    fn make(drops: &Drops, i: usize) -> Big {
        Big {
            _token: drops.token(),
            text: i.to_string(),
            pad: [i as u8; 1024],
        }
    }

    fn id(&self) -> usize {
        let i: usize = self.text.parse().unwrap();
        assert!(self.pad.iter().all(|&b| b == i as u8), "a torn value");
        i
    }
}

/// A waker whose `wake` panics (another executor's, with a bug of its own).
struct PanicOnWake;

impl std::task::Wake for PanicOnWake {
    fn wake(self: Arc<Self>) {
        panic!("{} a waker's wake", support::EXPECTED);
    }
}

/// Polls `fut` once with a waker whose `wake` panics.
fn poll_with_panicking_waker<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(PanicOnWake));
    Pin::new(fut).poll(&mut Context::from_waker(&waker))
}

/// Every drop counted once: nothing leaked, nothing dropped twice.
#[track_caller]
fn all_dropped_once(drops: &Drops, what: &str) {
    assert_eq!(
        (drops.made(), drops.dropped()),
        (drops.made(), drops.made()),
        "{what}: (values made, values dropped)"
    );
}

/// A receive takes a value from a queued sender (rendezvous) or from the buffer, refilled from
/// a queued sender (capacity 1), and then wakes that sender, whose waker panics. The panic
/// reaches the receiver's caller (as before); the value it had received must then be dropped
/// with its frame, as it was when `try_recv` returned it through `TryRecv::Got(v, _)`. Now it
/// sits in a `MaybeUninit` (`out`) when the wake runs, and is never dropped.
///
/// The same for a queued receive that counts its value out of transit on a closed channel
/// (`Chan::settle_seen`) and so completes another receiver, whose waker panics: the value was
/// already moved into `out` (`RecvOp::poll_queued`) or into the arm's `Received`, whose
/// outcome is not `Got` yet (`RecvArm::complete`).
#[test]

fn a_value_received_when_a_waker_it_wakes_panics_is_dropped_not_leaked() {
    support::quiet_expected_panics();
    within(EVENTUALLY, || {
        type Face<T> = (&'static str, fn(&chan::Receiver<T>));
        fn faces<T: Moved>() -> Vec<Face<T>> {
            vec![
                ("try_recv", |rx| drop(rx.try_recv())),
                ("recv", |rx| drop(rx.recv())),
                ("recv_timeout", |rx| drop(rx.recv_timeout(EVENTUALLY))),
                ("recv_async", |rx| drop(poll_once(&mut rx.recv_async()))),
                ("Stream::poll_next", |rx| {
                    let mut rx = rx.clone();
                    drop(poll_once(&mut futures::StreamExt::next(&mut rx)));
                }),
            ]
        }
        fn run<T: Moved>(leaks: &mut Vec<String>) {
            for cap in [0, 1] {
                for (face, receive) in faces::<T>() {
                    let drops = Drops::new();
                    let (tx, rx) = chan::bounded::<T>(cap);
                    if cap == 1 {
                        tx.try_send(T::make(&drops, 0)).ok().unwrap();
                    }
                    let mut send = tx.send_async(T::make(&drops, 1));
                    assert!(poll_with_panicking_waker(&mut send).is_pending());
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| receive(&rx)));
                    assert!(r.is_err(), "{face}: the wake's panic reaches the caller");
                    assert!(matches!(poll_once(&mut send), Poll::Ready(Ok(()))));
                    drop(send);
                    rx.try_iter().for_each(drop);
                    drop((tx, rx));
                    if drops.dropped() != drops.made() {
                        leaks.push(format!(
                            "{face} ({} bytes, capacity {cap}): {} of {} dropped",
                            size_of::<T>(),
                            drops.dropped(),
                            drops.made()
                        ));
                    }
                }
            }
            // A queued receive (lone, or a select arm) is handed the value, the last sender
            // goes (the close waits for the value in transit), a second receiver with a
            // panicking waker waits; the queued receive's poll counts its value out of
            // transit and completes the second one, whose wake panics.
            for face in ["queued recv_async", "queued select_async! arm"] {
                let drops = Drops::new();
                let (tx, rx) = chan::bounded::<T>(0);
                let mut first: Pin<Box<dyn Future<Output = ()>>> = if face == "queued recv_async" {
                    Box::pin(async {
                        drop(rx.recv_async().await);
                    })
                } else {
                    Box::pin(async {
                        corio::select_async! { recv(rx) -> v => drop(v) }
                    })
                };
                assert!(poll_once(&mut first).is_pending());
                let mut second = rx.recv_async();
                assert!(poll_with_panicking_waker(&mut second).is_pending());
                tx.send(T::make(&drops, 1)).ok().unwrap();
                drop(tx);
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    poll_once(&mut first)
                }));
                assert!(r.is_err(), "{face}: the wake's panic reaches the caller");
                drop(first);
                assert!(matches!(
                    poll_once(&mut second),
                    Poll::Ready(Err(RecvError))
                ));
                drop(second);
                drop(rx);
                if drops.dropped() != drops.made() {
                    leaks.push(format!(
                        "{face} ({} bytes): {} of {} dropped",
                        size_of::<T>(),
                        drops.dropped(),
                        drops.made()
                    ));
                }
            }
        }
        let mut leaks = Vec::new();
        run::<Small>(&mut leaks);
        run::<Big>(&mut leaks);
        assert!(leaks.is_empty(), "values leaked: {leaks:#?}");
    });
}

/// A `select!` receive arm keeps its value in `Received<T>`, whose `Drop` drops a value not
/// taken: when the wake of the sender it took from panics (chosen at once), and when a send
/// arm's unsent value panics as it is dropped before the chosen arm's body runs, the value is
/// dropped once, with the arm. And a body that panics holding the value drops it once.
#[test]
fn a_select_receive_arms_value_is_dropped_once_when_a_panic_cuts_the_select_short() {
    support::quiet_expected_panics();
    struct PanicOnDrop(#[allow(dead_code)] support::DropToken);
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("{} a value's drop", support::EXPECTED);
        }
    }
    within(EVENTUALLY, || {
        fn run<T: Moved>() {
            // The sender's wake panics.
            for cap in [0, 1] {
                let drops = Drops::new();
                let (tx, rx) = chan::bounded::<T>(cap);
                if cap == 1 {
                    tx.try_send(T::make(&drops, 0)).ok().unwrap();
                }
                let mut send = tx.send_async(T::make(&drops, 1));
                assert!(poll_with_panicking_waker(&mut send).is_pending());
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    corio::select! { recv(rx) -> v => v.unwrap().id() }
                }));
                assert!(r.is_err(), "the wake's panic reaches the caller");
                assert!(matches!(poll_once(&mut send), Poll::Ready(Ok(()))));
                drop(send);
                let rest: Vec<usize> = rx.try_iter().map(|v| v.id()).collect();
                assert_eq!(rest, if cap == 1 { vec![1] } else { vec![] });
                drop((tx, rx));
                all_dropped_once(&drops, "the sender's wake panicked");
            }
            // An unsent value's drop panics; the chosen receive arm still holds its value.
            let drops = Drops::new();
            let (tx, rx) = chan::bounded::<T>(1);
            let (full_tx, _full_rx) = chan::bounded::<PanicOnDrop>(0);
            tx.try_send(T::make(&drops, 3)).ok().unwrap();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                corio::select! {
                    recv(rx) -> v => v.unwrap().id(),
                    send(full_tx, PanicOnDrop(drops.token())) -> _ => usize::MAX,
                }
            }));
            assert!(r.is_err(), "the unsent value's drop panicked");
            assert!(rx.is_empty(), "the value was received, not left");
            drop((tx, rx));
            all_dropped_once(&drops, "an unsent value's drop panicked");
            // The chosen arm's body panics with the value.
            let drops = Drops::new();
            let (tx, rx) = chan::bounded::<T>(1);
            tx.try_send(T::make(&drops, 4)).ok().unwrap();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                corio::select! {
                    recv(rx) -> v => {
                        let v = v.unwrap();
                        assert_eq!(v.id(), 4);
                        panic!("{} the body", support::EXPECTED);
                    }
                }
            }));
            assert!(r.is_err());
            drop((tx, rx));
            all_dropped_once(&drops, "the body panicked");
        }
        run::<Small>();
        run::<Big>();
    });
}

/// A send future polled again after it resolved (a misuse the `Future` contract allows to
/// panic, as it did: "a send polled after it completed"). Now only a `debug_assert!` guards
/// it, and in a release build the poll sends the op's empty value slot: a waiting receiver is
/// completed with nothing (it reports `RecvError` on an open channel), and the hand-off it
/// counted is never settled, so once the channel is closed it is never "closed and drained"
/// (`try_recv` says `Empty` for ever, a `recv` waits for ever). Whatever the second poll
/// does, other users of the channel must not see it.
#[test]

fn polling_a_completed_send_again_does_not_disturb_other_receivers() {
    support::quiet_expected_panics();
    within(EVENTUALLY, || {
        fn run<T: Moved>() {
            let drops = Drops::new();
            let (tx, rx) = chan::bounded::<T>(0);
            let mut first = rx.recv_async();
            assert!(poll_once(&mut first).is_pending());
            let mut send = tx.send_async(T::make(&drops, 1));
            assert!(matches!(poll_once(&mut send), Poll::Ready(Ok(()))));
            let Poll::Ready(Ok(v)) = poll_once(&mut first) else {
                panic!("the first receiver was handed the value");
            };
            assert_eq!(v.id(), 1);
            drop((v, first));
            let mut second = rx.recv_async();
            assert!(poll_once(&mut second).is_pending());
            // The misuse: panicking is fine, completing `second` is not.
            let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                drop(poll_once(&mut send));
            }));
            drop(send);
            let second_now = poll_once(&mut second);
            assert!(
                second_now.is_pending(),
                "a receiver on an open channel was completed by nothing (the re-poll {}): {:?}",
                if again.is_err() {
                    "panicked"
                } else {
                    "returned"
                },
                second_now.map(|r| r.map(|v| v.id())),
            );
            drop(second);
            drop(tx);
            assert!(
                matches!(rx.try_recv(), Err(TryRecvError::Disconnected)),
                "the closed, empty channel is not drained"
            );
            drop(rx);
            all_dropped_once(&drops, "re-polled send");
        }
        run::<Small>();
        run::<Big>();
    });
}

/// Every face, in coroutines, with a value above and one below the "large value" size: what
/// is delivered is the very value sent, and what a failed send hands back is its own value
/// (`TrySendError`, `SendError` found closed at once or while queued, `SendTimeoutError`'s
/// `Timeout` from the withdrawal and `Disconnected` from the close, a `select!` send arm
/// closed at once or while queued); a dropped queued send drops its value, a dropped receive
/// that was handed one gives it back; `RecvTimeoutError` is `Timeout` on an open empty
/// channel and `Disconnected` on a closed drained one. Nothing leaks, nothing drops twice.
#[test]
fn every_face_delivers_or_hands_back_its_own_value_large_or_small() {
    fn run<T: Moved>(rt: &corio::Runtime) {
        let drops = Drops::new();
        let d = drops.clone();
        rt.run(move || {
            let make = |i| T::make(&d, i);
            // Buffer in (pushes, refills from queued senders) and out, in order.
            let (tx, rx) = chan::bounded::<T>(2);
            let producer = corio::go({
                let (tx, d) = (tx.clone(), d.clone());
                move || {
                    for i in 0..6 {
                        tx.send(T::make(&d, i)).ok().unwrap();
                    }
                    tx.send_timeout(T::make(&d, 6), EVENTUALLY).ok().unwrap();
                }
            });
            corio::sleep(5 * MS); // the producer waits on the full buffer
            let mut got = vec![rx.recv().unwrap().id(), rx.try_recv().unwrap().id()];
            got.push(rx.recv_timeout(EVENTUALLY).unwrap().id());
            got.push(corio::select! { recv(rx) -> v => v.unwrap().id() });
            got.extend(rx.iter().take(3).map(|v| v.id()));
            assert_eq!(got, [0, 1, 2, 3, 4, 5, 6]);
            producer.join().unwrap();
            // Full: handed back.
            tx.try_send(make(10)).ok().unwrap();
            tx.try_send(make(11)).ok().unwrap();
            let Err(TrySendError::Full(v)) = tx.try_send(make(12)) else {
                panic!("full")
            };
            assert_eq!(v.id(), 12);
            let Err(SendTimeoutError::Timeout(v)) = tx.send_timeout(make(13), 2 * MS) else {
                panic!("timed out")
            };
            assert_eq!(v.id(), 13);
            let chosen = corio::select! { send(tx, make(14)) -> r => Some(r), default => None };
            assert!(chosen.is_none(), "the full channel took the value");
            // Queued, then closed: each queued send hands its own value back.
            let waiting: Vec<_> = (0..3)
                .map(|k| {
                    let (tx, d) = (tx.clone(), d.clone());
                    corio::go(move || match k {
                        0 => tx.send(T::make(&d, 20)).unwrap_err().into_inner().id(),
                        1 => match tx.send_timeout(T::make(&d, 21), EVENTUALLY) {
                            Err(SendTimeoutError::Disconnected(v)) => v.id(),
                            _ => panic!("disconnected"),
                        },
                        _ => corio::select! {
                            send(tx, T::make(&d, 22)) -> r => r.unwrap_err().into_inner().id(),
                        },
                    })
                })
                .collect();
            corio::sleep(10 * MS);
            assert!(tx.close());
            let back: Vec<usize> = waiting.into_iter().map(|w| w.join().unwrap()).collect();
            assert_eq!(back, [20, 21, 22]);
            // Closed at once.
            assert_eq!(tx.send(make(30)).unwrap_err().into_inner().id(), 30);
            let Err(TrySendError::Disconnected(v)) = tx.try_send(make(31)) else {
                panic!("disconnected")
            };
            assert_eq!(v.id(), 31);
            let Err(SendTimeoutError::Disconnected(v)) = tx.send_timeout(make(32), EVENTUALLY)
            else {
                panic!("disconnected")
            };
            assert_eq!(v.id(), 32);
            let back = corio::select! { send(tx, make(33)) -> r => r.unwrap_err().into_inner() };
            assert_eq!(back.id(), 33);
            // Drained, then disconnected.
            assert_eq!(rx.recv_timeout(EVENTUALLY).unwrap().id(), 10);
            assert_eq!(rx.recv().unwrap().id(), 11);
            assert_eq!(
                rx.recv_timeout(MS).map(|v| v.id()),
                Err(RecvTimeoutError::Disconnected)
            );
            assert!(rx.recv().is_err());
            // An open empty channel: a timeout.
            let (tx, rx) = chan::bounded::<T>(0);
            assert_eq!(
                rx.recv_timeout(2 * MS).map(|v| v.id()),
                Err(RecvTimeoutError::Timeout)
            );
            // A queued send dropped: its value goes with it. A handed receive dropped: its
            // value goes back.
            let mut send = tx.send_async(make(40));
            assert!(poll_once(&mut send).is_pending());
            drop(send);
            assert!(matches!(rx.try_recv(), Err(TryRecvError::Empty)));
            let mut recv = rx.recv_async();
            assert!(poll_once(&mut recv).is_pending());
            tx.try_send(make(41)).ok().unwrap();
            drop(recv);
            assert_eq!(rx.try_recv().unwrap().id(), 41);
        });
        all_dropped_once(&drops, std::any::type_name::<T>());
    }
    within(EVENTUALLY, || {
        let rt = support::rt(2);
        run::<Small>(&rt);
        run::<Big>(&rt);
    });
}

/// A `select!` whose body moves or drops the receiver of borrowed values compiles (found by
/// review: a receive arm holding its value in a `MaybeUninit` with a `Drop` of its own made
/// every lifetime in the element type outlive the arm, E0505 here). A compile-time contract:
/// this file does not build if it breaks.
#[test]
fn a_select_body_may_drop_the_receiver_of_borrowed_values() {
    let s = String::from("hi");
    let (tx, rx) = corio::chan::bounded::<&str>(1);
    tx.send(&s).unwrap();
    let n = corio::select! {
        recv(rx) -> v => {
            let n = v.unwrap().len();
            drop(tx);
            drop(rx);
            drop(s);
            n
        }
    };
    assert_eq!(n, 2);
}
