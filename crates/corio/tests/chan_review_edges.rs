//! Review of `corio::chan` and `select!` at the edges (2026-12-07, channels and select).
//!
//! The finding (on `724f6da`; fixed since, docs/soundness.md, "The reviews of 2026-12-07,
//! night"): the `select!` support items (`corio::chan::__private`) are public, and the safe
//! method `Arm::complete` read a queued entry's value slot without the channel lock (a data
//! race from safe code; a value owned twice). The two tests that showed it, each failing every
//! run, no longer compile (the section below says why); the one that replaces them checks the
//! path left, a forgotten select's arms reused.
//!
//! Passing checks not covered elsewhere: a deterministic single-threaded model check of every
//! face against every other (`random_interleavings_...`), streams with abandoned polls beside
//! every other face across a close (`every_face_...`), aborted self-meeting selects checked by
//! drop logs (`aborts::*`), huge timeouts that really wait, zero timeouts against a waiting
//! partner, and drop order / a panicking drop when the last receiver goes.
//!
//! Every test is bounded by the `within` watchdog; nothing asserts a duration.

#[macro_use]
mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use corio::chan::{self, RecvError, RecvTimeoutError, SendTimeoutError, TryRecvError};
use support::{EVENTUALLY, within};

const MS: Duration = Duration::from_millis(1);

fn poll_once<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

/// Waits (on a plain thread) until `cond` holds.
fn until(what: &str, cond: impl FnMut() -> bool) {
    support::wait_until(what, cond)
}

// ---------------------------------------------------------------------------------------------
// Timeouts at zero and huge
// ---------------------------------------------------------------------------------------------

/// A zero timeout is a try: it completes with a partner that already waits (crossbeam's
/// `send_timeout(_, 0)`/`recv_timeout(0)` and Go's select with a ready case), for the blocking
/// faces on a thread and in a coroutine, the async faces, and `after(0)` in a select.
#[test]
fn zero_timeouts_complete_with_a_partner_that_already_waits() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        let (tx, rx) = chan::bounded::<u32>(0);
        // A thread waits to send; recv_timeout(0) on this thread takes it.
        let sender = {
            let tx = tx.clone();
            std::thread::spawn(move || tx.send(1))
        };
        // No way to see that it queued from outside: try until the value comes (a zero
        // timeout must never *lose* it meanwhile).
        let got = loop {
            match rx.recv_timeout(Duration::ZERO) {
                Ok(v) => break v,
                Err(RecvTimeoutError::Timeout) => std::thread::sleep(MS),
                Err(e) => panic!("{e:?}"),
            }
        };
        assert_eq!(got, 1);
        assert_eq!(sender.join().unwrap(), Ok(()));
        // A coroutine waits to receive; send_timeout(0) from a coroutine hands to it.
        let receiver = {
            let rx = rx.clone();
            rt.go(move || rx.recv())
        };
        let tx2 = tx.clone();
        rt.run(move || {
            let mut v = 2;
            loop {
                match tx2.send_timeout(v, Duration::ZERO) {
                    Ok(()) => break,
                    Err(SendTimeoutError::Timeout(back)) => {
                        v = back;
                        corio::time::sleep(MS);
                    }
                    Err(e) => panic!("{e:?}"),
                }
            }
        });
        assert_eq!(rt.block_on(receiver).unwrap(), Ok(2));
        // after(0) in a select with a waiting partner: the channel arm, once it waits.
        let sender = {
            let tx = tx.clone();
            rt.go(move || tx.send(3))
        };
        let got = rt.run({
            let rx = rx.clone();
            move || loop {
                let got = corio::select! {
                    recv(rx) -> v => Some(v),
                    after(Duration::ZERO) => None,
                };
                if let Some(v) = got {
                    break v;
                }
                corio::time::sleep(MS);
            }
        });
        assert_eq!(got, Ok(3));
        assert_eq!(rt.block_on(sender).unwrap(), Ok(()));
        // Nothing left anywhere.
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    });
}

/// Durations far beyond any real wait but representable as an `Instant` (decades, centuries)
/// register a timer that never fires, and the operation completes when its partner comes:
/// no overflow panic in the timer arithmetic, no spurious timeout.
#[test]
fn huge_timeouts_wait_for_the_partner() {
    let rt = support::rt(2);
    within(EVENTUALLY, move || {
        for d in [
            Duration::from_secs(100 * 365 * 24 * 3600),
            Duration::from_secs(u64::MAX / 4),
            Duration::from_secs(1 << 40),
            Duration::new(u64::MAX, 999_999_999),
        ] {
            let (tx, rx) = chan::bounded::<u32>(0);
            let rx2 = rx.clone();
            let receiver = rt.go(move || rx2.recv_timeout(d));
            let selecting = {
                let rx = rx.clone();
                rt.go(move || {
                    corio::select! {
                        recv(rx) -> v => v.ok(),
                        after(d) => None,
                    }
                })
            };
            let thread = {
                let rx = rx.clone();
                std::thread::spawn(move || rx.recv_timeout(d))
            };
            let task = {
                let rx = rx.clone();
                rt.spawn(async move { rx.recv_timeout_async(d).await })
            };
            std::thread::sleep(10 * MS);
            for i in 0..4 {
                assert_eq!(tx.send_timeout(i, d), Ok(()), "{d:?}");
            }
            let mut got = vec![
                rt.block_on(receiver).unwrap().unwrap(),
                rt.block_on(selecting).unwrap().unwrap(),
                thread.join().unwrap().unwrap(),
                rt.block_on(task).unwrap().unwrap(),
            ];
            got.sort_unstable();
            assert_eq!(got, [0, 1, 2, 3], "{d:?}");
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Drop order and panicking drops when the channel drops
// ---------------------------------------------------------------------------------------------

struct Logged {
    id: usize,
    log: Arc<Mutex<Vec<usize>>>,
    panics: bool,
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.log.lock().unwrap().push(self.id);
        if self.panics {
            panic!("{} value {} panics in drop", support::EXPECTED, self.id);
        }
    }
}

/// What is buffered when the last receiver goes is dropped then, oldest first (crossbeam drops
/// a channel's values head to tail); a value given back to the front by a cancelled receive
/// is the oldest. A value whose `Drop` panics does not keep the others from being dropped,
/// and the channel is closed for the senders all the same.
#[test]
fn buffered_values_drop_oldest_first_and_a_panicking_drop_spares_the_rest() {
    support::quiet_expected_panics();
    let log = Arc::new(Mutex::new(Vec::new()));
    let make = |id, panics| Logged {
        id,
        log: log.clone(),
        panics,
    };
    let (tx, rx) = chan::bounded::<Logged>(4);
    // A receive handed a value, then dropped: the value goes back to the front.
    let mut recv = Box::pin(rx.recv_async());
    assert!(poll_once(recv.as_mut()).is_pending());
    tx.try_send(make(0, false)).ok().unwrap();
    for i in 1..4 {
        tx.try_send(make(i, i == 1)).ok().unwrap();
    }
    drop(recv);
    assert_eq!(rx.len(), 4, "the given-back value is buffered again");
    assert!(log.lock().unwrap().is_empty());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(rx)));
    assert!(r.is_err(), "the panicking drop propagates");
    assert_eq!(*log.lock().unwrap(), [0, 1, 2, 3]);
    assert!(tx.is_closed());
    let back = tx.try_send(make(9, false)).unwrap_err();
    assert!(back.is_disconnected());
}

// ---------------------------------------------------------------------------------------------
// Stress: every receive face, abandoned stream polls, self-meeting selects, aborts, a close
// ---------------------------------------------------------------------------------------------

rt_common! {
    /// Producers (coroutines with `send`, a task with `send_timeout_async`, a select that
    /// sends or receives on the same channel) and consumers of every kind (a `Stream` polled
    /// under short timeouts, so that many polls are abandoned; `recv_timeout`; aborted
    /// `recv_async` tasks; the selects above), then the channel is closed with `close()` while
    /// all of them run. Every value whose send returned `Ok` is received exactly once, nothing
    /// else is received, and once every consumer has seen the end, nothing is left.
    #[test]
    fn every_face_with_abandoned_streams_aborts_and_a_close_loses_nothing() {
        use futures::StreamExt;
        for cap in [0usize, 1, 3] {
            let rt = rt();
            within(EVENTUALLY * 2, move || {
                const PER: u64 = 3000;
                let (tx, rx) = chan::bounded::<u64>(cap);
                let sent = Arc::new(Mutex::new(Vec::new()));
                let got = Arc::new(Mutex::new(Vec::new()));
                let stop = Arc::new(AtomicBool::new(false));
                let mut producers = Vec::new();
                for p in 0..2u64 {
                    let (tx, sent) = (tx.clone(), sent.clone());
                    producers.push(rt.go(move || {
                        for i in 0..PER {
                            let v = p * PER + i;
                            match tx.send(v) {
                                Ok(()) => sent.lock().unwrap().push(v),
                                Err(_) => break,
                            }
                        }
                    }));
                }
                {
                    let (tx, sent) = (tx.clone(), sent.clone());
                    producers.push(rt.spawn(async move {
                        for i in 0..PER {
                            let v = 2 * PER + i;
                            loop {
                                match tx.send_timeout_async(v, Duration::from_micros(40)).await {
                                    Ok(()) => {
                                        sent.lock().unwrap().push(v);
                                        break;
                                    }
                                    Err(SendTimeoutError::Timeout(_)) => {}
                                    Err(SendTimeoutError::Disconnected(_)) => return,
                                }
                            }
                        }
                    }));
                }
                // A select that sends and receives on the same channel.
                {
                    let (tx, rx, sent, got) = (tx.clone(), rx.clone(), sent.clone(), got.clone());
                    producers.push(rt.go(move || {
                        let mut i = 0;
                        let mut open = true;
                        while i < PER && open {
                            let v = 3 * PER + i;
                            corio::select! {
                                send(tx, v) -> r => match r {
                                    Ok(()) => { sent.lock().unwrap().push(v); i += 1; }
                                    Err(_) => open = false,
                                },
                                recv(rx) -> r => match r {
                                    Ok(w) => got.lock().unwrap().push(w),
                                    Err(_) => open = false,
                                },
                                after(Duration::from_micros(60)) => {},
                            }
                        }
                    }));
                }
                drop(tx);
                let mut consumers = Vec::new();
                // Streams polled under short timeouts: abandoned polls.
                for k in 0..2u64 {
                    let (mut rx, got) = (rx.clone(), got.clone());
                    consumers.push(rt.spawn(async move {
                        loop {
                            let d = Duration::from_micros(15 + 25 * k);
                            match corio::time::timeout_async(d, rx.next()).await {
                                Ok(Some(v)) => got.lock().unwrap().push(v),
                                Ok(None) => break,
                                Err(_) => {}
                            }
                        }
                        // The end is final.
                        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
                    }));
                }
                // recv_timeout in a coroutine.
                {
                    let (rx, got) = (rx.clone(), got.clone());
                    consumers.push(rt.go(move || {
                        loop {
                            match rx.recv_timeout(Duration::from_micros(30)) {
                                Ok(v) => got.lock().unwrap().push(v),
                                Err(RecvTimeoutError::Timeout) => {}
                                Err(RecvTimeoutError::Disconnected) => break,
                            }
                        }
                        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
                    }));
                }
                // A blocking iterator on a plain thread.
                let thread = {
                    let (rx, got) = (rx.clone(), got.clone());
                    std::thread::spawn(move || {
                        for v in rx.iter() {
                            got.lock().unwrap().push(v);
                        }
                        assert_eq!(rx.recv(), Err(RecvError));
                    })
                };
                // Aborted async receivers, until the close.
                let aborter = {
                    let (rx, got, stop) = (rx.clone(), got.clone(), stop.clone());
                    let handle = rt.handle().clone();
                    std::thread::spawn(move || {
                        let mut n = 0u64;
                        while !stop.load(SeqCst) {
                            let (rx, got) = (rx.clone(), got.clone());
                            let t = handle.spawn(async move {
                                while let Ok(v) = rx.recv_async().await {
                                    got.lock().unwrap().push(v);
                                }
                            });
                            std::thread::sleep(Duration::from_micros(100 + (n % 7) * 50));
                            t.abort();
                            n += 1;
                        }
                    })
                };
                // Close midway (or, if every producer has finished and dropped its sender
                // by now, which a release build on an idle machine can do, after the end:
                // `close` then says it was closed already).
                until("half the values sent", || sent.lock().unwrap().len() as u64 >= 2 * PER);
                rx.close();
                for p in producers {
                    rt.block_on(p).unwrap();
                }
                stop.store(true, SeqCst);
                aborter.join().unwrap();
                for c in consumers {
                    rt.block_on(c).unwrap();
                }
                thread.join().unwrap();
                let left: Vec<u64> = rx.try_iter().collect();
                assert!(left.is_empty(), "cap {cap}: left after every consumer ended: {left:?}");
                drop(rt);
                let mut sent = sent.lock().unwrap().clone();
                let mut all = got.lock().unwrap().clone();
                sent.sort_unstable();
                all.sort_unstable();
                if std::env::var_os("EDGES_VERBOSE").is_some() {
                    eprintln!("cap {cap}: {} sent, {} received", sent.len(), all.len());
                }
                assert_eq!(all.len(), sent.len(), "cap {cap}: received vs sent counts");
                assert_eq!(all, sent, "cap {cap}: received != sent");
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The macro's support items are public: safe code reached the select protocol's internals
// ---------------------------------------------------------------------------------------------

// `select!` expands to `corio::chan::__private::{Arm, SendArm, RecvArm, SelectFuture}`, which
// are public (hidden from the docs, but nameable from safe code). On the reviewed code the
// select's protocol methods were safe methods of `Arm`: a select polled until its send arm was
// queued, then forgotten (safe), let `Arm::complete` read the queued entry's value slot without
// the channel's lock, so that an innocent `try_recv` hit an internal assertion, and a
// `complete` racing a receive on another thread duplicated the value (1 to 40 in 100,000
// rounds: a double drop for an owning type), and `Arm::lock` held a channel's lock for ever.
// Those two tests cannot be written any more: the protocol's methods take a token nothing
// outside corio can make (compile-fail doctests on `corio::chan::__private`). What a forgotten
// select still allows, reusing its arms, is refused:

/// A select forgotten while its send arm waited, and the arm given to a second select: the
/// second select refuses it with a panic before it locks anything (on the reviewed code, a
/// reused send arm offered "nothing" to a waiting receiver in release builds), and the channel
/// goes on: the first select's queued send is received.
#[test]
fn a_select_arm_reused_after_its_select_was_forgotten_is_refused_before_any_lock() {
    use corio::chan::__private::{Arm, SelectFuture, SendArm};
    within(EVENTUALLY, || {
        let (tx, rx) = chan::bounded::<u64>(0);
        let mut arm = SendArm::new(&tx, 7);
        {
            let mut arms: [&mut dyn Arm; 1] = [&mut arm];
            let mut fut = SelectFuture::new(&mut arms, None, false);
            assert!(poll_once(Pin::new(&mut fut)).is_pending());
            std::mem::forget(fut);
        }
        let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut arms: [&mut dyn Arm; 1] = [&mut arm];
            let mut fut = SelectFuture::new(&mut arms, None, false);
            let _ = poll_once(Pin::new(&mut fut));
        }));
        let msg = support::payload_text(&*again.expect_err("a reused arm was accepted"));
        assert!(msg.contains("reused"), "{msg}");
        // No lock was left held, and the first select's send is still there to be received.
        assert_eq!(rx.try_recv(), Ok(7));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    });
}

// ---------------------------------------------------------------------------------------------
// A deterministic, single-threaded model check of every face against every other
// ---------------------------------------------------------------------------------------------

/// A value that logs its drop.
struct Val(u64, Arc<Mutex<Vec<u64>>>);

impl Drop for Val {
    fn drop(&mut self) {
        self.1.lock().unwrap().push(self.0);
    }
}

impl std::fmt::Debug for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Val({})", self.0)
    }
}

enum SelOut {
    Sent(u64),
    SendFailed,
    Got(Val),
    RecvFailed,
}

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

enum Op<'a> {
    Send(u64, BoxFut<'a, Result<(), chan::SendError<Val>>>),
    Recv(BoxFut<'a, Result<Val, RecvError>>),
    Sel(BoxFut<'a, SelOut>),
    RecvT(BoxFut<'a, Result<Val, RecvTimeoutError>>),
    SendT(u64, BoxFut<'a, Result<(), SendTimeoutError<Val>>>),
}

/// Random interleavings, on one thread with a no-op waker, of pending sends, receives,
/// selects (with two receive arms and a send arm on the one channel), `Stream` polls that are
/// abandoned or resumed, try-operations, drops of pending futures and a close. Whatever
/// happens: no value is received twice, every value whose send reported `Ok` is received,
/// every value is dropped exactly once, and `RecvError` is final.
#[test]
#[allow(non_snake_case)]
fn random_interleavings_of_every_face_lose_and_duplicate_nothing() {
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (SEEDS, OPS) = (env("EDGES_SEEDS", 4000), env("EDGES_OPS", 100));
    for seed in 0..SEEDS {
        let mut rng = support::Rng::new(seed);
        let cap = rng.below(4) as usize;
        let dropped = Arc::new(Mutex::new(Vec::new()));
        let mut made = 0u64;
        let mut received: Vec<u64> = Vec::new();
        let mut sent_ok: Vec<u64> = Vec::new();
        let mut recv_err_seen = false;
        let (tx, rx) = chan::bounded::<Val>(cap);
        let (btx, brx) = chan::bounded::<Val>(rng.below(2) as usize);
        let mut streams: Vec<chan::Receiver<Val>> = (0..2).map(|_| rx.clone()).collect();
        {
            let (tx, rx, btx, brx) = (&tx, &rx, &btx, &brx);
            let mut ops: Vec<Op<'_>> = Vec::new();
            let mut closed = false;
            for _ in 0..OPS {
                match rng.below(12) {
                    0 => {
                        made += 1;
                        let v = Val(made, dropped.clone());
                        ops.push(Op::Send(made, Box::pin(tx.send_async(v))));
                    }
                    1 => ops.push(Op::Recv(Box::pin(rx.recv_async()))),
                    2 => {
                        made += 1;
                        let v = Val(made, dropped.clone());
                        let id = made;
                        ops.push(Op::Sel(Box::pin(async move {
                            corio::select_async! {
                                recv(rx) -> r => match r { Ok(v) => SelOut::Got(v), Err(_) => SelOut::RecvFailed },
                                send(tx, v) -> r => match r { Ok(()) => SelOut::Sent(id), Err(_) => SelOut::SendFailed },
                                recv(rx) -> r => match r { Ok(v) => SelOut::Got(v), Err(_) => SelOut::RecvFailed },
                            }
                        })));
                    }
                    8 | 9 if rng.chance(50) => {
                        made += 1;
                        let v = Val(made, dropped.clone());
                        let id = made;
                        let to_b = rng.chance(50);
                        ops.push(Op::Sel(Box::pin(async move {
                            if to_b {
                                corio::select_async! {
                                    recv(rx) -> r => match r { Ok(v) => SelOut::Got(v), Err(_) => SelOut::RecvFailed },
                                    send(btx, v) -> r => match r { Ok(()) => SelOut::Sent(id), Err(_) => SelOut::SendFailed },
                                    recv(brx) -> r => match r { Ok(v) => SelOut::Got(v), Err(_) => SelOut::RecvFailed },
                                }
                            } else {
                                corio::select_async! {
                                    recv(brx) -> r => match r { Ok(v) => SelOut::Got(v), Err(_) => SelOut::RecvFailed },
                                    send(tx, v) -> r => match r { Ok(()) => SelOut::Sent(id), Err(_) => SelOut::SendFailed },
                                }
                            }
                        })));
                    }
                    10 if rng.chance(40) => {
                        let d = if rng.chance(50) {
                            Duration::ZERO
                        } else {
                            Duration::from_secs(3600)
                        };
                        if rng.chance(50) {
                            ops.push(Op::RecvT(Box::pin(rx.recv_timeout_async(d))));
                        } else {
                            made += 1;
                            let v = Val(made, dropped.clone());
                            ops.push(Op::SendT(made, Box::pin(tx.send_timeout_async(v, d))));
                        }
                    }
                    11 if streams.len() > 1 && rng.chance(10) => {
                        let i = rng.below(streams.len() as u64) as usize;
                        drop(streams.swap_remove(i));
                    }
                    10 if rng.chance(30) => {
                        if let Ok(v) = brx.try_recv() {
                            received.push(v.0);
                        }
                    }
                    3 => {
                        made += 1;
                        match tx.try_send(Val(made, dropped.clone())) {
                            Ok(()) => sent_ok.push(made),
                            Err(e) => drop(e.into_inner()),
                        }
                    }
                    4 => match rx.try_recv() {
                        Ok(v) => received.push(v.0),
                        Err(TryRecvError::Disconnected) => recv_err_seen = true,
                        Err(TryRecvError::Empty) => {}
                    },
                    5 => {
                        let n = streams.len() as u64;
                        let s = &mut streams[rng.below(n) as usize];
                        let mut cx = Context::from_waker(Waker::noop());
                        match futures_core::Stream::poll_next(Pin::new(s), &mut cx) {
                            Poll::Ready(Some(v)) => received.push(v.0),
                            Poll::Ready(None) => recv_err_seen = true,
                            Poll::Pending => {}
                        }
                    }
                    6 if !ops.is_empty() => {
                        let i = rng.below(ops.len() as u64) as usize;
                        drop(ops.swap_remove(i));
                    }
                    7 if rng.chance(15) && !closed => {
                        closed = true;
                        if rng.chance(50) {
                            tx.close();
                        } else {
                            rx.close();
                        }
                    }
                    _ if !ops.is_empty() => {
                        let i = rng.below(ops.len() as u64) as usize;
                        let ready = match &mut ops[i] {
                            Op::Send(id, f) => match poll_once(f.as_mut()) {
                                Poll::Ready(Ok(())) => {
                                    sent_ok.push(*id);
                                    true
                                }
                                Poll::Ready(Err(e)) => {
                                    drop(e.into_inner());
                                    true
                                }
                                Poll::Pending => false,
                            },
                            Op::Recv(f) => match poll_once(f.as_mut()) {
                                Poll::Ready(Ok(v)) => {
                                    received.push(v.0);
                                    true
                                }
                                Poll::Ready(Err(RecvError)) => {
                                    recv_err_seen = true;
                                    true
                                }
                                Poll::Pending => false,
                            },
                            Op::RecvT(f) => match poll_once(f.as_mut()) {
                                Poll::Ready(Ok(v)) => {
                                    received.push(v.0);
                                    true
                                }
                                Poll::Ready(Err(RecvTimeoutError::Disconnected)) => {
                                    recv_err_seen = true;
                                    true
                                }
                                Poll::Ready(Err(RecvTimeoutError::Timeout)) => true,
                                Poll::Pending => false,
                            },
                            Op::SendT(id, f) => match poll_once(f.as_mut()) {
                                Poll::Ready(Ok(())) => {
                                    sent_ok.push(*id);
                                    true
                                }
                                Poll::Ready(Err(e)) => {
                                    drop(e.into_inner());
                                    true
                                }
                                Poll::Pending => false,
                            },
                            Op::Sel(f) => match poll_once(f.as_mut()) {
                                Poll::Ready(SelOut::Sent(id)) => {
                                    sent_ok.push(id);
                                    true
                                }
                                Poll::Ready(SelOut::Got(v)) => {
                                    received.push(v.0);
                                    true
                                }
                                Poll::Ready(SelOut::RecvFailed) => true,
                                Poll::Ready(SelOut::SendFailed) => true,
                                Poll::Pending => false,
                            },
                        };
                        if ready {
                            drop(ops.swap_remove(i));
                        }
                    }
                    _ => {}
                }
                if recv_err_seen {
                    // Final: nothing can be received after a RecvError/None was reported.
                    assert_eq!(
                        rx.try_recv().map(|v| v.0),
                        Err(TryRecvError::Disconnected),
                        "seed {seed}: a value after the end"
                    );
                }
            }
            // Pending futures dropped (a dropped receive gives back; a dropped send withdraws).
            // Which of the pending sends happened is known only to the values' fates below.
            drop(ops);
        }
        tx.close();
        btx.close();
        while let Ok(v) = brx.try_recv() {
            received.push(v.0);
        }
        assert_eq!(
            brx.try_recv().map(|v| v.0),
            Err(TryRecvError::Disconnected),
            "seed {seed}: b"
        );
        drop((btx, brx));
        loop {
            match rx.try_recv() {
                Ok(v) => received.push(v.0),
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {
                    panic!("seed {seed}: closed, nothing pending, yet Empty")
                }
            }
        }
        drop(streams);
        drop((tx, rx));
        let mut r = received.clone();
        r.sort_unstable();
        let before = r.len();
        r.dedup();
        assert_eq!(
            r.len(),
            before,
            "seed {seed} cap {cap}: a value received twice: {received:?}"
        );
        for id in &sent_ok {
            assert!(
                r.binary_search(id).is_ok(),
                "seed {seed} cap {cap}: {id} sent Ok, never received"
            );
        }
        if std::env::var_os("EDGES_VERBOSE").is_some() && (seed % 500 == 0 || cap == 0 && seed < 60)
        {
            eprintln!(
                "seed {seed} cap {cap}: made {made}, sent ok {}, received {}",
                sent_ok.len(),
                received.len()
            );
        }
        let mut d = dropped.lock().unwrap().clone();
        d.sort_unstable();
        assert_eq!(
            d,
            (1..=made).collect::<Vec<_>>(),
            "seed {seed} cap {cap}: drops"
        );
    }
}

mod aborts {
    use super::*;

    rt_common! {
        /// Coroutines and tasks that wait in selects which both send and receive on one channel
        /// (and receive on a second) are aborted at random while values move, then the channels
        /// are closed and drained. Whatever was handed to an aborted waiter comes back: no value is
        /// received twice, and every value made is dropped exactly once by the end (none leaked in
        /// an abandoned entry, none dropped twice).
        #[test]
        fn aborted_self_meeting_selects_leak_and_duplicate_no_value() {
            for cap in [0usize, 2] {
                let rt = rt();
                within(EVENTUALLY * 2, move || {
                    let dropped = Arc::new(Mutex::new(Vec::new()));
                    let made = Arc::new(AtomicUsize::new(0));
                    let got = Arc::new(Mutex::new(Vec::new()));
                    let (tx, rx) = chan::bounded::<Val>(cap);
                    let (btx, brx) = chan::bounded::<Val>(0);
                    let mk = {
                        let (made, dropped) = (made.clone(), dropped.clone());
                        move || Val(made.fetch_add(1, SeqCst) as u64 + 1, dropped.clone())
                    };
                    let mut handles = Vec::new();
                    for round in 0..1000u32 {
                        let (tx, rx, btx, brx, got, mk) =
                            (tx.clone(), rx.clone(), btx.clone(), brx.clone(), got.clone(), mk.clone());
                        let h = if round % 2 == 0 {
                            rt.go(move || {
                                for _ in 0..20 {
                                    corio::select! {
                                        send(tx, mk()) -> _ => {},
                                        recv(rx) -> v => if let Ok(v) = v { got.lock().unwrap().push(v.0) },
                                        recv(brx) -> v => if let Ok(v) = v { got.lock().unwrap().push(v.0) },
                                        send(btx, mk()) -> _ => {},
                                    }
                                }
                            })
                        } else {
                            rt.spawn(async move {
                                for _ in 0..20 {
                                    corio::select_async! {
                                        recv(rx) -> v => if let Ok(v) = v { got.lock().unwrap().push(v.0) },
                                        send(btx, mk()) -> _ => {},
                                        recv(brx) -> v => if let Ok(v) = v { got.lock().unwrap().push(v.0) },
                                        send(tx, mk()) -> _ => {},
                                    }
                                }
                            })
                        };
                        handles.push(h);
                        if round % 3 == 1 {
                            let victim = handles.len() - 2;
                            handles[victim].abort();
                        }
                        if round % 50 == 49 {
                            std::thread::sleep(MS);
                        }
                    }
                    // The last ones may wait for partners that never come: the close ends them
                    // (a closed channel's arms are ready).
                    std::thread::sleep(20 * MS);
                    tx.close();
                    btx.close();
                    for h in handles {
                        let _ = rt.block_on(h);
                    }
                    drop((tx, btx));
                    for v in rx.try_iter() {
                        got.lock().unwrap().push(v.0);
                    }
                    for v in brx.try_iter() {
                        got.lock().unwrap().push(v.0);
                    }
                    drop((rx, brx));
                    drop(rt);
                    let mut g = got.lock().unwrap().clone();
                    let n = g.len();
                    g.sort_unstable();
                    g.dedup();
                    assert_eq!(g.len(), n, "cap {cap}: a value received twice");
                    let total = made.load(SeqCst) as u64;
                    if std::env::var_os("EDGES_VERBOSE").is_some() {
                        eprintln!("cap {cap}: {total} values made, {n} received");
                    }
                    let mut d = dropped.lock().unwrap().clone();
                    d.sort_unstable();
                    let missing: Vec<u64> = (1..=total).filter(|i| d.binary_search(i).is_err()).collect();
                    let dn = d.len();
                    d.dedup();
                    assert_eq!(d.len(), dn, "cap {cap}: a value dropped twice");
                    assert!(missing.is_empty(), "cap {cap}: {} of {total} values never dropped: {:?}", missing.len(), &missing[..missing.len().min(10)]);
                });
            }
        }
    }
}
