//! Loom models of the channel core (send/recv/close/cancel races) and of select
//! registration. Each model is two or three threads over one or two rendezvous channels, small
//! enough to finish in seconds with `LOOM_MAX_PREEMPTIONS=2` (.ci/run).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use loom::future::block_on;
use loom::thread;

use super::select::{Arm, RecvArm, SelectFuture, Selected};
use super::{TryRecvError, TrySendError, bounded};

fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    Pin::new(fut).poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn loom_rendezvous_send_meets_recv_or_close() {
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let tx2 = tx.clone();
        let sender = thread::spawn(move || block_on(tx2.send_async(1)));
        let receiver = thread::spawn(move || block_on(rx.recv_async()));
        tx.close();
        let sent = sender.join().unwrap();
        let got = receiver.join().unwrap();
        // Either the hand-off happened (both sides agree) or close stopped both.
        match sent {
            Ok(()) => assert_eq!(got, Ok(1)),
            Err(e) => {
                assert_eq!(e.0, 1, "a failed send hands its value back");
                assert!(got.is_err());
            }
        }
    });
}

#[test]
fn loom_a_buffered_value_and_a_waiting_sender_keep_fifo_order() {
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(1);
        tx.try_send(1).unwrap();
        let sender = thread::spawn(move || block_on(tx.send_async(2)));
        let a = block_on(rx.recv_async());
        let b = block_on(rx.recv_async());
        sender.join().unwrap().unwrap();
        assert_eq!((a, b), (Ok(1), Ok(2)));
    });
}

#[test]
fn loom_a_receive_cancelled_during_a_hand_off_loses_no_value() {
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let mut fut = rx.recv_async();
        assert!(poll_once(&mut fut).is_pending());
        let sender = thread::spawn(move || tx.try_send(7).map_err(TrySendError::into_inner));
        drop(fut); // cancel, racing the hand-off
        match sender.join().unwrap() {
            Ok(()) => assert_eq!(rx.try_recv(), Ok(7), "a handed-off value is given back"),
            Err(v) => {
                assert_eq!(v, 7);
                assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
            }
        }
        assert_eq!(rx.chan.lock().state().waiting(), (0, 0));
    });
}

#[test]
fn loom_a_send_cancelled_during_a_hand_off_is_done_or_withdrawn() {
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let mut fut = tx.send_async(9);
        assert!(poll_once(&mut fut).is_pending());
        let receiver = thread::spawn(move || rx.try_recv());
        drop(fut);
        let got = receiver.join().unwrap();
        // The receiver got the value (the send happened) or it found nothing (withdrawn).
        assert!(matches!(got, Ok(9) | Err(TryRecvError::Empty)), "{got:?}");
        assert_eq!(tx.chan.lock().state().waiting(), (0, 0));
    });
}

#[test]
fn loom_select_registration_completes_exactly_one_arm() {
    loom::model(|| {
        let (tx_a, rx_a) = bounded::<u32>(0);
        let (tx_b, rx_b) = bounded::<u32>(0);
        let selector = thread::spawn(move || {
            let mut a = RecvArm::new(&rx_a);
            let mut b = RecvArm::new(&rx_b);
            let got = {
                let arms: &mut [&mut dyn Arm] = &mut [&mut a, &mut b];
                block_on(SelectFuture::new(arms, None, false))
            };
            let value = match got {
                Selected::Arm(0) => a.take(),
                Selected::Arm(1) => b.take(),
                other => panic!("{other:?}"),
            };
            // The arm not chosen left no entry behind.
            assert_eq!(rx_a.chan.lock().state().waiting(), (0, 0));
            assert_eq!(rx_b.chan.lock().state().waiting(), (0, 0));
            value
        });
        let tx_b2 = tx_b.clone();
        let other = thread::spawn(move || tx_b2.try_send(2).is_ok());
        let sent_a = tx_a.try_send(1).is_ok();
        let sent_b = other.join().unwrap();
        assert!(!(sent_a && sent_b), "two arms of one select completed");
        if !sent_a && !sent_b {
            tx_a.close();
        }
        let value = selector.join().unwrap();
        match (sent_a, sent_b) {
            (true, false) => assert_eq!(value, Ok(1)),
            (false, true) => assert_eq!(value, Ok(2)),
            _ => assert!(value.is_err()),
        }
    });
}

#[test]
fn loom_a_ping_pong_reuses_spare_entries_safely() {
    // Two round trips: the second wait on each channel takes the entry the first one left as
    // the channel's spare, racing the completer that may still hold its clone.
    loom::model(|| {
        let (ping_tx, ping_rx) = bounded::<u32>(0);
        let (pong_tx, pong_rx) = bounded::<u32>(0);
        let echo = thread::spawn(move || {
            for _ in 0..2 {
                let v = block_on(ping_rx.recv_async()).unwrap();
                block_on(pong_tx.send_async(v + 1)).unwrap();
            }
        });
        for i in 0..2 {
            block_on(ping_tx.send_async(i)).unwrap();
            assert_eq!(block_on(pong_rx.recv_async()), Ok(i + 1));
        }
        echo.join().unwrap();
    });
}

/// A waker that records that it was woken.
struct Flag(loom::sync::atomic::AtomicBool);

impl std::task::Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        // SeqCst: a model-checked flag; pairs with the load in the test body.
        self.0.store(true, loom::sync::atomic::Ordering::SeqCst);
    }
}

fn flag() -> (std::sync::Arc<Flag>, Waker) {
    let f = std::sync::Arc::new(Flag(loom::sync::atomic::AtomicBool::new(false)));
    (f.clone(), Waker::from(f))
}

fn woken(f: &Flag) -> bool {
    f.0.load(loom::sync::atomic::Ordering::SeqCst)
}

/// Polls `fut` (queued by a first poll) again with a new waker while `sender` completes it,
/// and returns its output: from that poll if it saw DONE, else from a third poll, once it is
/// checked that the completer woke the new waker.
fn repoll_racing<F: Future + Unpin>(fut: &mut F, sender: thread::JoinHandle<bool>) -> F::Output {
    let (flag, waker) = flag();
    let second = Pin::new(&mut *fut).poll(&mut Context::from_waker(&waker));
    assert!(
        sender.join().unwrap(),
        "the operation was queued before the send"
    );
    match second {
        Poll::Ready(v) => v,
        Poll::Pending => {
            assert!(woken(&flag), "the completer woke the waker stored last");
            match poll_once(fut) {
                Poll::Ready(v) => v,
                Poll::Pending => panic!("woken but not done"),
            }
        }
    }
}

#[test]
fn loom_a_waker_replaced_while_a_sender_completes_is_the_one_woken() {
    // The owner re-polls with a new waker (stored under the channel lock) while a sender
    // completes it: it either sees DONE on that poll, or the new waker is the one woken.
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let mut fut = rx.recv_async();
        assert!(poll_once(&mut fut).is_pending());
        let sender = thread::spawn(move || tx.try_send(5).is_ok());
        assert_eq!(repoll_racing(&mut fut, sender), Ok(5));
    });
}

#[test]
fn loom_a_select_repolled_with_a_new_waker_is_woken_through_it() {
    // As above for a select of two arms: its re-poll stores the waker under both locks.
    loom::model(|| {
        let (tx_a, rx_a) = bounded::<u32>(0);
        let (_tx_b, rx_b) = bounded::<u32>(0);
        let mut a = RecvArm::new(&rx_a);
        let mut b = RecvArm::new(&rx_b);
        let got = {
            let arms: &mut [&mut dyn Arm] = &mut [&mut a, &mut b];
            let mut select = SelectFuture::new(arms, None, false);
            assert!(poll_once(&mut select).is_pending());
            let sender = thread::spawn(move || tx_a.try_send(3).is_ok());
            repoll_racing(&mut select, sender)
        };
        assert_eq!(got, Selected::Arm(0));
        assert_eq!(a.take(), Ok(3));
        assert_eq!(rx_b.chan.lock().state().waiting(), (0, 0));
    });
}

/// Closing with a value in transit (`chan/mod.rs`, "Closing with values in transit"): the
/// owner of the receive it was handed sees it without the lock, racing the close. The other
/// receiver, queued, must end (with "closed") and must not get it: no hang, no duplicate.
#[test]
fn loom_a_close_racing_the_owner_of_a_value_in_transit_ends_the_other_receiver() {
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let rx2 = rx.clone();
        let mut first = rx.recv_async();
        assert!(poll_once(&mut first).is_pending());
        let other = thread::spawn(move || block_on(rx2.recv_async()));
        let sender = thread::spawn(move || {
            tx.try_send(7).map_err(TrySendError::into_inner)?;
            drop(tx); // the last sender: close
            Ok::<(), u32>(())
        });
        let got = block_on(first);
        let sent = sender.join().unwrap();
        let other_got = other.join().unwrap();
        match sent {
            // Handed to `first` (queued first) or, if `other` queued before the send... it
            // cannot: `first` is ahead of it. Either way exactly one receiver has it.
            Ok(()) => assert_eq!([got, other_got].iter().filter(|r| **r == Ok(7)).count(), 1),
            Err(v) => panic!("a receiver was queued, yet try_send failed with {v}"),
        }
    });
}

/// The same with the first receive cancelled instead (H6): the value it was handed goes back
/// to the other receiver, which the close must not have told "closed" meanwhile.
#[test]
fn loom_a_value_given_back_across_the_close_reaches_the_other_receiver() {
    loom::model(|| {
        let (tx, rx) = bounded::<u32>(0);
        let rx2 = rx.clone();
        let mut first = rx.recv_async();
        assert!(poll_once(&mut first).is_pending());
        let other = thread::spawn(move || block_on(rx2.recv_async()));
        let sender = thread::spawn(move || {
            let sent = tx.try_send(7).is_ok();
            drop(tx); // the last sender: close
            sent
        });
        drop(first); // cancelled, racing the hand-off and the close
        let sent = sender.join().unwrap();
        let other_got = other.join().unwrap();
        if sent {
            // Handed to `first` and given back, or handed to `other` directly.
            assert_eq!(other_got, Ok(7));
        } else {
            assert!(other_got.is_err());
        }
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    });
}

/// The next item of `rx`'s `Stream`, waited for with loom's `block_on`.
fn next_item(rx: &mut super::Receiver<u32>) -> Option<u32> {
    block_on(std::future::poll_fn(|cx| {
        futures_core::Stream::poll_next(Pin::new(&mut *rx), cx)
    }))
}

#[test]
fn loom_a_stream_meets_a_rendezvous_send_and_then_the_close() {
    loom::model(|| {
        let (tx, mut rx) = bounded::<u32>(0);
        let sender = thread::spawn(move || block_on(tx.send_async(1))); // then closes
        let first = next_item(&mut rx);
        let second = next_item(&mut rx);
        sender.join().unwrap().unwrap();
        assert_eq!((first, second), (Some(1), None));
        assert_eq!(rx.chan.lock().state().waiting(), (0, 0));
    });
}

#[test]
fn loom_an_abandoned_stream_poll_keeps_no_value_from_a_live_stream() {
    loom::model(|| {
        let (tx, mut rx) = bounded::<u32>(0);
        let mut live = rx.clone();
        let mut next =
            std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut rx), cx));
        assert!(poll_once(&mut next).is_pending()); // abandoned: never polled again
        let consumer = thread::spawn(move || (next_item(&mut live), next_item(&mut live)));
        block_on(tx.send_async(1)).unwrap();
        drop(tx);
        assert_eq!(consumer.join().unwrap(), (Some(1), None));
    });
}
