//! Who polls the netpoller, and how often (`runtime/driver.rs`, "Netpoller"; `runtime/worker.rs`,
//! "The deferred poll").
//!
//! A worker that runs out of work and will park without spinning (the only worker of a
//! `workers(1)` runtime) does not poll the netpoller without blocking first: it takes the driver
//! when it parks and polls there, blocking, so a non-blocking poll just before would be an empty
//! `epoll_wait` per park. These tests check that a server's worker makes about one poll per park,
//! and that the poll it skips is not missed: a coroutine whose socket becomes ready is woken
//! while other coroutines, or tasks sent from outside, keep the worker from parking.

#[macro_use]
mod support;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use corio::net::TcpListener;
use support::{EVENTUALLY, within};

/// Round trips of the ping-pong tests.
const ROUND_TRIPS: usize = 300;

/// A listener on a free port of 127.0.0.1 and its address.
fn listener() -> (TcpListener, std::net::SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// A plain-thread client: `rounds` one-byte round trips with the server at `addr`, each waiting
/// for the answer before the next (a keep-alive client, one request in flight).
fn ping_pong_client(addr: std::net::SocketAddr, rounds: usize) {
    let mut peer = std::net::TcpStream::connect(addr).unwrap();
    peer.set_nodelay(true).unwrap();
    for i in 0..rounds {
        peer.write_all(&[i as u8]).unwrap();
        let mut answer = [0u8; 1];
        peer.read_exact(&mut answer).unwrap();
        assert_eq!(answer[0], (i as u8).wrapping_add(1));
    }
}

/// Serves one connection of [`ping_pong_client`] in a coroutine: answers each byte with the
/// byte plus one until the client closes.
fn ping_pong_server(listener: TcpListener) {
    let (mut stream, _) = listener.accept().unwrap();
    stream.set_nodelay(true).unwrap();
    let mut byte = [0u8; 1];
    while stream.read(&mut byte).unwrap() == 1 {
        stream.write_all(&[byte[0].wrapping_add(1)]).unwrap();
    }
}

#[test]
fn a_single_worker_that_runs_out_of_work_polls_the_netpoller_about_once_per_park() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let (listener, addr) = listener();
        let server = rt.go(move || ping_pong_server(listener));
        // Let the worker settle (park in the driver, waiting for the connection).
        std::thread::sleep(Duration::from_millis(50));
        let before = rt.metrics();
        ping_pong_client(addr, ROUND_TRIPS);
        server.join().unwrap();
        let after = rt.metrics();
        let parks = after.parks - before.parks;
        let polls = after.io_polls - before.io_polls;
        // Each park polls once, blocking, in the driver. A few more polls are allowed: a
        // park that found work before it slept and polled afterwards, sysmon's, the
        // connection's. A non-blocking poll before every park would make `polls >= 2 * parks`.
        assert!(
            polls <= parks + parks / 4 + 16,
            "{polls} netpoller polls for {parks} parks in {ROUND_TRIPS} round trips"
        );
    });
}

rt_common! {
    #[test]
    fn a_reader_is_woken_while_other_coroutines_keep_the_worker_busy() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (listener, addr) = listener();
            let stop = Arc::new(AtomicBool::new(false));
            let spins = Arc::new(AtomicUsize::new(0));
            // Coroutines that keep every worker busy until the reader is done.
            let busy: Vec<_> = (0..2 * WORKERS)
                .map(|_| {
                    let (stop, spins) = (stop.clone(), spins.clone());
                    rt.go(move || {
                        while !stop.load(Ordering::Relaxed) {
                            spins.fetch_add(1, Ordering::Relaxed);
                            corio::yield_now();
                        }
                    })
                })
                .collect();
            let reader = rt.go(move || ping_pong_server(listener));
            support::wait_until("the busy coroutines run", || {
                spins.load(Ordering::Relaxed) > 1_000
            });
            ping_pong_client(addr, 20);
            reader.join().unwrap();
            stop.store(true, Ordering::Relaxed);
            for b in busy {
                b.join().unwrap();
            }
        });
    }

    #[test]
    fn a_reader_is_woken_while_tasks_sent_from_outside_keep_the_worker_from_parking() {
        within(EVENTUALLY, || {
            let rt = rt();
            let (listener, addr) = listener();
            let stop = Arc::new(AtomicBool::new(false));
            let ran = Arc::new(AtomicUsize::new(0));
            let reader = rt.go(move || ping_pong_server(listener));
            // A plain thread that keeps sending short tasks to the runtime: the worker runs
            // out of local work between them and finds the next in the global queue.
            let handle = rt.handle().clone();
            let feeder = {
                let (stop, ran) = (stop.clone(), ran.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let ran = ran.clone();
                        drop(handle.spawn(async move {
                            ran.fetch_add(1, Ordering::Relaxed);
                        }));
                        std::thread::yield_now();
                    }
                })
            };
            support::wait_until("the fed tasks run", || ran.load(Ordering::Relaxed) > 100);
            ping_pong_client(addr, 20);
            reader.join().unwrap();
            stop.store(true, Ordering::Relaxed);
            feeder.join().unwrap();
        });
    }
}
