//! Go's channel and select tests (`src/runtime/chan_test.go`), ported. Each test names its
//! original; goroutines are stackful coroutines (`corio::go`), `time.Sleep` is `corio::sleep`,
//! `runtime.Gosched` is `corio::yield_now`, and each body runs on one and on two workers.
//! Sizes are Go's `testing.Short()` ones where Go has them.

#[macro_use]
mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use corio::chan::{self, Receiver, Sender};
use support::{EVENTUALLY, within};

const MS: Duration = Duration::from_millis(1);

rt_common! {
    /// Go: TestChan (every block of it, for capacities 0..20 as in short mode).
    #[test]
    fn go_test_chan() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| for cap in 0..20 { test_chan_with_capacity(cap) }));
    }

    /// Go: TestNonblockRecvRace.
    #[test]
    fn go_test_nonblock_recv_race() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                for _ in 0..1000 {
                    let (tx, rx) = chan::bounded::<i32>(1);
                    tx.send(1).unwrap();
                    let rx2 = rx.clone();
                    let h = corio::go(move || {
                        corio::select! {
                            recv(rx2) -> _ => {},
                            default => panic!("chan is not ready"),
                        }
                    });
                    tx.close();
                    let _ = rx.recv();
                    h.join().unwrap();
                }
            })
        });
    }

    /// Go: TestNonblockSelectRace — a select acts on the channels' state at one instant.
    #[test]
    fn go_test_nonblock_select_race() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| nonblock_select_race(1, |c2| c2.send(1).unwrap())));
    }

    /// Go: TestNonblockSelectRace2 — the same with `close(c2)` for `c2 <- 1`.
    #[test]
    fn go_test_nonblock_select_race2() {
        let rt = rt();
        within(EVENTUALLY, move || rt.run(|| nonblock_select_race(0, |c2| { c2.close(); })));
    }

    /// Go: TestSelfSelect — send and receive on the same channel in one select neither
    /// deadlocks nor receives its own value.
    #[test]
    fn go_test_self_select() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                for cap in [0, 10] {
                    let (tx, rx) = chan::bounded::<usize>(cap);
                    let handles: Vec<_> = (0..2)
                        .map(|p| {
                            let (tx, rx) = (tx.clone(), rx.clone());
                            corio::go(move || {
                                for i in 0..1000 {
                                    let got = if p == 0 || i % 2 == 0 {
                                        corio::select! {
                                            send(tx, p) -> r => { r.unwrap(); None },
                                            recv(rx) -> v => Some(v.unwrap()),
                                        }
                                    } else {
                                        corio::select! {
                                            recv(rx) -> v => Some(v.unwrap()),
                                            send(tx, p) -> r => { r.unwrap(); None },
                                        }
                                    };
                                    if cap == 0 {
                                        assert_ne!(got, Some(p), "self receive");
                                    }
                                }
                            })
                        })
                        .collect();
                    for h in handles {
                        h.join().unwrap();
                    }
                }
            })
        });
    }

    /// Go: TestSelectStress (N = 1e4, Go's short size). A `nil` channel (an arm switched
    /// off) is a channel nobody ever uses: one channel for the sending select's switched-off
    /// arms and another for the receiving select's, each with its other end held and unused.
    /// (With one channel for both, its two ends were the two selects' switched-off arms and
    /// matched each other, something a Go `nil` channel never does: each select counted
    /// operations that moved no value on the real channels, so some plain sender or receiver
    /// was left without a partner and the test hung, 1 in ~3 runs under load.)
    #[test]
    fn go_test_select_stress() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                const N: usize = 10_000;
                let chans: Vec<(Sender<i32>, Receiver<i32>)> =
                    [0, 0, 2, 3].into_iter().map(chan::bounded).collect();
                let (never_tx, _never_tx_peer) = chan::bounded::<i32>(0);
                let (_never_rx_peer, never_rx) = chan::bounded::<i32>(0);
                let mut hs = Vec::new();
                for (tx, rx) in &chans {
                    let (tx, rx) = (tx.clone(), rx.clone());
                    hs.push(corio::go(move || (0..N).for_each(|_| tx.send(0).unwrap())));
                    hs.push(corio::go(move || (0..N).for_each(|_| { rx.recv().unwrap(); })));
                }
                let mut c: Vec<Sender<i32>> = chans.iter().map(|c| c.0.clone()).collect();
                let never = never_tx.clone();
                hs.push(corio::go(move || {
                    let mut n = [0; 4];
                    for _ in 0..4 * N {
                        let k = corio::select! {
                            send(c[3], 0) -> r => { r.unwrap(); 3 },
                            send(c[2], 0) -> r => { r.unwrap(); 2 },
                            send(c[0], 0) -> r => { r.unwrap(); 0 },
                            send(c[1], 0) -> r => { r.unwrap(); 1 },
                        };
                        n[k] += 1;
                        assert!(n[k] <= N, "arm {k} completed after it was switched off");
                        if n[k] == N {
                            c[k] = never.clone();
                        }
                    }
                }));
                let mut c: Vec<Receiver<i32>> = chans.iter().map(|c| c.1.clone()).collect();
                let never = never_rx.clone();
                hs.push(corio::go(move || {
                    let mut n = [0; 4];
                    for _ in 0..4 * N {
                        let k = corio::select! {
                            recv(c[0]) -> v => { v.unwrap(); 0 },
                            recv(c[1]) -> v => { v.unwrap(); 1 },
                            recv(c[2]) -> v => { v.unwrap(); 2 },
                            recv(c[3]) -> v => { v.unwrap(); 3 },
                        };
                        n[k] += 1;
                        assert!(n[k] <= N, "arm {k} completed after it was switched off");
                        if n[k] == N {
                            c[k] = never.clone();
                        }
                    }
                }));
                for h in hs {
                    h.join().unwrap();
                }
            })
        });
    }

    /// Go: TestPseudoRandomSend — a select between two ready sends picks each side often.
    #[test]
    fn go_test_pseudo_random_send() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                const N: usize = 100;
                for cap in [0, N] {
                    let (tx, rx) = chan::bounded::<usize>(cap);
                    let reader = corio::go(move || {
                        (0..N)
                            .map(|_| {
                                corio::yield_now();
                                rx.recv().unwrap()
                            })
                            .collect::<Vec<_>>()
                    });
                    for _ in 0..N {
                        corio::select! {
                            send(tx, 1) -> r => r.unwrap(),
                            send(tx, 0) -> r => r.unwrap(),
                        }
                    }
                    let l = reader.join().unwrap();
                    let n1: usize = l.iter().sum();
                    let n0 = N - n1;
                    assert!(
                        n0 > N / 10 && n1 > N / 10,
                        "want pseudorandom, got {n0} zeros and {n1} ones (chan cap {cap})"
                    );
                }
            })
        });
    }

    /// Go: TestMultiConsumer (niter 27,183: a tenth of Go's, for debug builds).
    #[test]
    fn go_test_multi_consumer() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                const NWORK: usize = 23;
                const NITER: usize = 27_183;
                const PN: [usize; 10] = [2, 3, 7, 11, 13, 17, 19, 23, 27, 31];
                let (q_tx, q) = chan::bounded::<usize>(NWORK * 3);
                let (r_tx, r) = chan::bounded::<usize>(NWORK * 3);
                let workers: Vec<_> = (0..NWORK)
                    .map(|w| {
                        let (q, r_tx) = (q.clone(), r_tx.clone());
                        corio::go(move || {
                            for v in q.iter() {
                                // Mess with the FIFO-ish nature of the range.
                                if PN[w % PN.len()] == v {
                                    corio::yield_now();
                                }
                                r_tx.send(v).unwrap();
                            }
                        })
                    })
                    .collect();
                drop((q, r_tx));
                let feeder = corio::go(move || {
                    let mut expect = 0;
                    for i in 0..NITER {
                        let v = PN[i % PN.len()];
                        expect += v;
                        q_tx.send(v).unwrap();
                    }
                    drop(q_tx); // no more work
                    for w in workers {
                        w.join().unwrap(); // ... the workers drop their result senders
                    }
                    expect
                });
                let (mut n, mut s) = (0, 0);
                for v in r {
                    n += 1;
                    s += v;
                }
                let expect = feeder.join().unwrap();
                assert_eq!((n, s), (NITER, expect));
            })
        });
    }

    /// Go: TestSelectFairness, with Go's bound: among ready arms the choice is uniform, to
    /// within 10 standard deviations over 10,000 trials.
    #[test]
    fn go_test_select_fairness() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                const TRIALS: usize = 10_000;
                let (c1_tx, c1) = chan::bounded::<u8>(TRIALS + 1);
                let (c2_tx, c2) = chan::bounded::<u8>(TRIALS + 1);
                for _ in 0..=TRIALS {
                    c1_tx.send(1).unwrap();
                    c2_tx.send(2).unwrap();
                }
                let (_c3_tx, c3) = chan::bounded::<u8>(0);
                let (_c4_tx, c4) = chan::bounded::<u8>(0);
                let (out_tx, out) = chan::bounded::<u8>(0);
                let (done_tx, done) = chan::bounded::<u8>(0);
                let h = corio::go(move || loop {
                    let b = corio::select! {
                        recv(c3) -> b => b.unwrap(),
                        recv(c4) -> b => b.unwrap(),
                        recv(c1) -> b => b.unwrap(),
                        recv(c2) -> b => b.unwrap(),
                    };
                    corio::select! {
                        send(out_tx, b) -> r => r.unwrap(),
                        recv(done) -> _ => return,
                    }
                });
                let (mut cnt1, mut cnt2) = (0usize, 0usize);
                for _ in 0..TRIALS {
                    match out.recv().unwrap() {
                        1 => cnt1 += 1,
                        2 => cnt2 += 1,
                        b => panic!("unexpected value {b} on channel"),
                    }
                }
                let mean = TRIALS as f64 * 0.5;
                let stddev = (TRIALS as f64 * 0.5 * 0.5).sqrt();
                assert!(
                    (cnt1 as f64 - mean).abs() <= 10.0 * stddev,
                    "unfair select: in {TRIALS} trials, results were {cnt1}, {cnt2}"
                );
                done_tx.close();
                h.join().unwrap();
            })
        });
    }

    /// Go: TestSelectDuplicateChannel — one select queued twice on one channel, then woken
    /// through another, leaves that channel's queue intact for the next receiver.
    #[test]
    fn go_test_select_duplicate_channel() {
        let rt = rt();
        within(EVENTUALLY, move || {
            rt.run(|| {
                let (c_tx, c) = chan::bounded::<i32>(0);
                let (d_tx, d) = chan::bounded::<i32>(0);
                let (e_tx, e) = chan::bounded::<i32>(0);
                let c2 = c.clone();
                let a = corio::go(move || {
                    corio::select! {
                        recv(c2) -> _ => {},
                        recv(c2) -> _ => {},
                        recv(d) -> _ => {},
                    }
                    e_tx.send(9).unwrap();
                });
                corio::sleep(MS); // A queues first on c
                let b = corio::go(move || c.recv().unwrap());
                corio::sleep(MS); // B queues on c before we go on
                d_tx.send(7).unwrap(); // wakes A, which dequeues itself from c
                assert_eq!(e.recv(), Ok(9));
                c_tx.send(8).unwrap(); // wakes B
                assert_eq!(b.join().unwrap(), 8);
                a.join().unwrap();
            })
        });
    }

    /// Go: TestChanSendInterface — non-blocking sends on a full channel choose `default`.
    #[test]
    fn go_test_chan_send_interface() {
        let rt = rt();
        rt.run(|| {
            let (tx, _rx) = chan::bounded::<Box<u8>>(1);
            tx.send(Box::new(1)).unwrap();
            let sent = corio::select! {
                send(tx, Box::new(2)) -> _ => true,
                default => false,
            };
            assert!(!sent);
            let sent = corio::select! {
                send(tx, Box::new(3)) -> _ => true,
                send(tx, Box::new(4)) -> _ => true,
                default => false,
            };
            assert!(!sent);
        });
    }
}

/// The body of Go's TestNonblockSelectRace(2): from the moment the second coroutine exists,
/// c1 or c2 is always ready, so its non-blocking select must never take `default`.
fn nonblock_select_race(c2_cap: usize, make_c2_ready: fn(&Sender<i32>)) {
    let (done_tx, done_rx) = chan::bounded::<bool>(1);
    for _ in 0..1000 {
        let (c1_tx, c1) = chan::bounded::<i32>(1);
        let (c2_tx, c2) = chan::bounded::<i32>(c2_cap);
        c1_tx.send(1).unwrap();
        let (c1b, c2b, done) = (c1.clone(), c2.clone(), done_tx.clone());
        corio::go(move || {
            let ok = corio::select! {
                recv(c1b) -> _ => true,
                recv(c2b) -> _ => true,
                default => false,
            };
            done.send(ok).unwrap();
        });
        make_c2_ready(&c2_tx);
        corio::select! {
            recv(c1) -> _ => {},
            default => {},
        }
        assert!(done_rx.recv().unwrap(), "no chan is ready");
    }
}

/// The body of Go's TestChan for one capacity.
fn test_chan_with_capacity(cap: usize) {
    {
        // A receive from an empty channel waits; a non-blocking one does not.
        let (tx, rx) = chan::bounded::<i32>(cap);
        let received = Arc::new(AtomicBool::new(false));
        for _ in 0..2 {
            let (rx, received) = (rx.clone(), received.clone());
            corio::go(move || {
                let _ = rx.recv();
                received.store(true, SeqCst);
            });
        }
        corio::sleep(MS);
        assert!(
            !received.load(SeqCst),
            "chan[{cap}]: receive from empty chan"
        );
        corio::select! {
            recv(rx) -> _ => panic!("chan[{cap}]: receive from empty chan"),
            default => {},
        }
        tx.send(0).unwrap();
        tx.send(0).unwrap();
    }
    {
        // A send to a full channel waits; a non-blocking one does not.
        let (tx, rx) = chan::bounded::<usize>(cap);
        for i in 0..cap {
            tx.send(i).unwrap();
        }
        let sent = Arc::new(AtomicBool::new(false));
        let (tx2, sent2) = (tx.clone(), sent.clone());
        corio::go(move || {
            tx2.send(0).unwrap();
            sent2.store(true, SeqCst);
        });
        corio::sleep(MS);
        assert!(!sent.load(SeqCst), "chan[{cap}]: send to full chan");
        corio::select! {
            send(tx, 0) -> _ => panic!("chan[{cap}]: send to full chan"),
            default => {},
        }
        rx.recv().unwrap();
    }
    {
        // After close, buffered values come out, then the disconnected error.
        let (tx, rx) = chan::bounded::<usize>(cap);
        for i in 0..cap {
            tx.send(i).unwrap();
        }
        tx.close();
        for i in 0..cap {
            assert_eq!(rx.recv(), Ok(i), "chan[{cap}]");
        }
        assert!(rx.recv().is_err());
        assert!(rx.recv().is_err());
    }
    {
        // Close wakes a waiting receiver.
        let (tx, rx) = chan::bounded::<i32>(cap);
        let (done_tx, done) = chan::bounded::<bool>(0);
        corio::go(move || done_tx.send(rx.recv().is_err()).unwrap());
        corio::sleep(MS);
        tx.close();
        assert!(
            done.recv().unwrap(),
            "chan[{cap}]: received a value from a closed chan"
        );
    }
    {
        // 100 values arrive uncorrupted and in FIFO order (twice, as Go's recv and recv2).
        let (tx, rx) = chan::bounded::<usize>(cap);
        for _ in 0..2 {
            let tx = tx.clone();
            corio::go(move || (0..100).for_each(|i| tx.send(i).unwrap()));
            for i in 0..100 {
                assert_eq!(rx.recv(), Ok(i), "chan[{cap}]");
            }
        }
        // 4 senders of 1000 values, 4 receivers: every value arrives once per sender.
        const P: usize = 4;
        const L: usize = 1000;
        for _ in 0..P {
            let tx = tx.clone();
            corio::go(move || (0..L).for_each(|i| tx.send(i).unwrap()));
        }
        let receivers: Vec<_> = (0..P)
            .map(|_| {
                let rx = rx.clone();
                corio::go(move || {
                    let mut recv = HashMap::new();
                    for _ in 0..L {
                        *recv.entry(rx.recv().unwrap()).or_insert(0) += 1;
                    }
                    recv
                })
            })
            .collect();
        let mut recv: HashMap<usize, usize> = HashMap::new();
        for r in receivers {
            for (k, v) in r.join().unwrap() {
                *recv.entry(k).or_insert(0) += v;
            }
        }
        assert_eq!(recv.len(), L, "chan[{cap}]: received {} values", recv.len());
        assert!(
            recv.values().all(|&v| v == P),
            "chan[{cap}]: a value not received {P} times"
        );
    }
    {
        // len/cap.
        let (tx, rx) = chan::bounded::<usize>(cap);
        assert_eq!((rx.len(), rx.capacity()), (0, Some(cap)));
        for i in 0..cap {
            tx.send(i).unwrap();
        }
        assert_eq!((tx.len(), tx.capacity()), (cap, Some(cap)));
    }
}
