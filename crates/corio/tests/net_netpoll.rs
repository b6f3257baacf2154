//! Who polls the netpoller, and how often (`runtime/driver.rs`, "Netpoller"; `runtime/worker.rs`,
//! "The deferred poll").
//!
//! A worker that runs out of work and will park without spinning (the only worker of a
//! `workers(1)` runtime) does not poll the netpoller without blocking first: it takes the driver
//! when it parks and polls there, blocking, so a non-blocking poll just before would be an empty
//! `epoll_wait` per park. These tests check that a server's worker makes about one poll per park,
//! and that the poll it skips is not missed: a coroutine whose socket becomes ready is woken
//! while other coroutines, or tasks sent from outside, keep the worker from parking.
//!
//! While its sockets are busy, that worker first watches them for a moment without blocking
//! (`runtime/worker.rs`, "The only worker spins while its sockets are busy"): a client that
//! answers quickly finds it awake, and it parks about once per lull instead of once per
//! request. Those polls are counted apart (`Metrics::io_spin_polls`); once its sockets go
//! quiet, or when only timers wake it, it parks without them.

#[macro_use]
mod support;

use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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

/// How a [`ping_pong_client`] waits.
#[derive(Clone, Copy)]
enum Pace {
    /// A blocking read for each answer, and this pause before each request.
    Pause(Duration),
    /// A nonblocking read in a loop that yields the CPU (so that, sharing a CPU with the
    /// server's worker, it lets the worker run): it answers in microseconds, as a load
    /// generator does.
    Busy,
}

/// A plain-thread client: `rounds` one-byte round trips with the server at `addr`, each waiting
/// for the answer before the next (a keep-alive client, one request in flight), at `pace`.
fn ping_pong_client(addr: std::net::SocketAddr, rounds: usize, pace: Pace) {
    ping_pong_client_noting(addr, rounds, pace, |_| {});
}

/// [`ping_pong_client`], calling `asking(i)` just before it sends its `i`th request.
fn ping_pong_client_noting(
    addr: std::net::SocketAddr,
    rounds: usize,
    pace: Pace,
    mut asking: impl FnMut(usize),
) {
    let mut peer = std::net::TcpStream::connect(addr).unwrap();
    peer.set_nodelay(true).unwrap();
    peer.set_nonblocking(matches!(pace, Pace::Busy)).unwrap();
    for i in 0..rounds {
        if let Pace::Pause(pause) = pace
            && !pause.is_zero()
        {
            std::thread::sleep(pause);
        }
        asking(i);
        peer.write_all(&[i as u8]).unwrap();
        let mut answer = [0u8; 1];
        loop {
            match peer.read(&mut answer) {
                Ok(1) => break,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
                other => panic!("round {i}: {other:?}"),
            }
        }
        assert_eq!(answer[0], (i as u8).wrapping_add(1));
    }
}

/// Runs `client` against [`ping_pong_server`] on a one-worker runtime; the runtime's metrics
/// before and after the client's round trips.
fn single_worker_ping_pong(
    client: impl FnOnce(std::net::SocketAddr),
) -> (corio::Metrics, corio::Metrics) {
    let rt = support::rt(1);
    let (listener, addr) = listener();
    let server = rt.go(move || ping_pong_server(listener));
    // Let the worker settle (park in the driver, waiting for the connection).
    std::thread::sleep(Duration::from_millis(50));
    let before = rt.metrics();
    client(addr);
    server.join().unwrap();
    (before, rt.metrics())
}

/// Starts `n` coroutines that yield in a loop, counting their turns in `turns`, until `stop`.
fn keep_busy(
    rt: &corio::Runtime,
    n: usize,
    stop: &Arc<AtomicBool>,
    turns: &Arc<AtomicUsize>,
) -> Vec<corio::JoinHandle<()>> {
    (0..n)
        .map(|_| {
            let (stop, turns) = (stop.clone(), turns.clone());
            rt.go(move || {
                while !stop.load(Ordering::Relaxed) {
                    turns.fetch_add(1, Ordering::Relaxed);
                    corio::yield_now();
                }
            })
        })
        .collect()
}

/// Serves one connection of [`ping_pong_client`] in a coroutine: answers each byte with the
/// byte plus one until the client closes.
fn ping_pong_server(listener: TcpListener) {
    let (stream, _) = listener.accept().unwrap();
    serve_ping_pong(stream);
}

/// [`ping_pong_server`]'s answers, on an accepted connection.
fn serve_ping_pong(stream: corio::net::TcpStream) {
    serve_ping_pong_noting(stream, |_| {});
}

/// [`serve_ping_pong`], calling `answered(i)` once its `i`th answer is written.
fn serve_ping_pong_noting(mut stream: corio::net::TcpStream, mut answered: impl FnMut(usize)) {
    stream.set_nodelay(true).unwrap();
    let mut byte = [0u8; 1];
    let mut i = 0;
    while stream.read(&mut byte).unwrap() == 1 {
        stream.write_all(&[byte[0].wrapping_add(1)]).unwrap();
        answered(i);
        i += 1;
    }
}

#[test]
fn a_single_worker_that_runs_out_of_work_polls_the_netpoller_about_once_per_park() {
    within(EVENTUALLY, || {
        // A client slower than the worker's watch for the next request: each lull ends in a
        // park (the watch's polls are counted apart, below).
        let (before, after) = single_worker_ping_pong(|addr| {
            ping_pong_client(addr, ROUND_TRIPS, Pace::Pause(Duration::from_micros(500)))
        });
        let parks = after.parks - before.parks;
        // The polls of the watch for the next request before a park are counted apart.
        let polls =
            (after.io_polls - before.io_polls) - (after.io_spin_polls - before.io_spin_polls);
        // Each park polls once, blocking, in the driver. A few more polls are allowed: a
        // park that found work before it slept and polled afterwards, sysmon's, the
        // connection's. A non-blocking poll before every park would make `polls >= 2 * parks`.
        assert!(
            polls <= parks + parks / 4 + 16,
            "{polls} netpoller polls for {parks} parks in {ROUND_TRIPS} round trips ({} more \
             while watching for the next request)",
            after.io_spin_polls - before.io_spin_polls
        );
    });
}

/// Round trips of the busy-client tests.
const BUSY_ROUND_TRIPS: u64 = 2_000;

/// A client's answer that came this long after the server's is one the worker's watch (50 µs
/// from when it ran out of work) may have missed.
const SLOW_ANSWER: Duration = Duration::from_micros(20);

#[test]
fn a_single_worker_whose_client_answers_at_once_waits_for_it_without_parking() {
    within(EVENTUALLY, || {
        // Without the watch, the worker ran dry and parked in the driver after each answer:
        // one park (and one wake-up by the client's write) per round trip. With it, a park
        // only when the client took longer than the watch to send its next request, or the
        // worker lost its CPU while watching: on a loaded machine (other processes busy on
        // both CPUs) that is most round trips, so each is measured, not assumed.
        let rounds = BUSY_ROUND_TRIPS as usize;
        let epoch = std::time::Instant::now();
        let stamps = || Arc::new((0..=rounds).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
        // When the server's `i`th answer was written, and when the client's `i`th request
        // was, in nanoseconds since `epoch`.
        let (answered, asked) = (stamps(), stamps());
        let rt = corio::Runtime::builder()
            .workers(1)
            .thread_name("netpoll-busy")
            .hog_report(false)
            .build()
            .unwrap();
        let (listener, addr) = listener();
        let server = {
            let answered = answered.clone();
            rt.go(move || {
                let (stream, _) = listener.accept().unwrap();
                serve_ping_pong_noting(stream, |i| {
                    answered[i].store(nanos_since(epoch), Ordering::Relaxed);
                });
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        let preempted = worker_involuntary_switches();
        let before = rt.metrics();
        ping_pong_client_noting(addr, rounds, Pace::Busy, |i| {
            asked[i].store(nanos_since(epoch), Ordering::Relaxed);
        });
        let after = rt.metrics();
        let preempted = worker_involuntary_switches() - preempted;
        server.join().unwrap();
        // Requests sent `SLOW_ANSWER` or more after the answer before them.
        let slow = (1..rounds)
            .filter(|&i| {
                let asked = asked[i].load(Ordering::Relaxed);
                let answered = answered[i - 1].load(Ordering::Relaxed);
                asked.saturating_sub(answered) >= SLOW_ANSWER.as_nanos() as u64
            })
            .count() as u64;
        let parks = after.parks - before.parks;
        assert!(
            parks <= slow + preempted + BUSY_ROUND_TRIPS / 10,
            "{parks} parks in {BUSY_ROUND_TRIPS} round trips, of which the client was slow to \
             send {slow} and the worker lost its CPU {preempted} times"
        );
        assert!(after.io_spin_polls > before.io_spin_polls);
    });
}

/// Nanoseconds from `epoch` to now.
fn nanos_since(epoch: std::time::Instant) -> u64 {
    epoch.elapsed().as_nanos() as u64
}

/// How many times the worker of [`a_single_worker_whose_client_answers_at_once_waits_for_it_without_parking`]'s
/// runtime (thread `netpoll-busy-0`) lost its CPU to another thread.
fn worker_involuntary_switches() -> u64 {
    support::threads_named("netpoll-busy")
        .into_iter()
        .find(|t| t.comm == "netpoll-busy-0")
        .expect("the worker thread")
        .involuntary
}

/// Clients of the first-poll tests: enough active sockets for a wait (8 ns times the square
/// of their number; a lone socket's 8 ns rounds to nothing).
const BUSY_CLIENTS: usize = 4;

/// [`BUSY_CLIENTS`] plain-thread clients at once, each [`BUSY_ROUND_TRIPS`] round trips with
/// [`Pace::Busy`], against a coroutine per connection on `rt`; the runtime's metrics before
/// and after.
fn busy_clients_on(rt: &corio::Runtime) -> (corio::Metrics, corio::Metrics) {
    let (listener, addr) = listener();
    let server = rt.go(move || {
        let conns: Vec<_> = (0..BUSY_CLIENTS)
            .map(|_| {
                let (stream, _) = listener.accept().unwrap();
                corio::go(move || serve_ping_pong(stream))
            })
            .collect();
        conns.into_iter().for_each(|c| c.join().unwrap());
    });
    std::thread::sleep(Duration::from_millis(50));
    let before = rt.metrics();
    let clients: Vec<_> = (0..BUSY_CLIENTS)
        .map(|_| {
            std::thread::spawn(move || {
                ping_pong_client(addr, BUSY_ROUND_TRIPS as usize, Pace::Busy)
            })
        })
        .collect();
    clients.into_iter().for_each(|c| c.join().unwrap());
    server.join().unwrap();
    (before, rt.metrics())
}

#[test]
fn a_single_worker_with_time_to_spare_waits_before_its_first_poll() {
    within(EVENTUALLY, || {
        // The worker spends most of its time waiting for clients that answer at once: time
        // to spare, so after the first window (1 ms) its spins wait before their first poll
        // ("The first poll waits").
        let (before, after) = busy_clients_on(&support::rt(1));
        let waits = after.first_poll_waits - before.first_poll_waits;
        assert!(
            waits > 0,
            "no first-poll waits in {BUSY_CLIENTS} x {BUSY_ROUND_TRIPS} round trips ({} spin \
             polls)",
            after.io_spin_polls - before.io_spin_polls
        );
        assert!(after.first_poll_wait_time > before.first_poll_wait_time);
    });
}

#[test]
fn only_the_only_worker_waits_before_its_first_poll() {
    within(EVENTUALLY, || {
        // Two workers spin for each other's work, and neither waits.
        let (before, after) = busy_clients_on(&support::rt(2));
        assert_eq!(after.first_poll_waits, before.first_poll_waits);
        assert_eq!(after.first_poll_wait_time, before.first_poll_wait_time);
        // The only worker with its watch turned off does not spin, so does not wait.
        let rt = corio::Runtime::builder()
            .workers(1)
            .io_spin(false)
            .hog_report(false)
            .build()
            .unwrap();
        let (before, after) = busy_clients_on(&rt);
        assert_eq!(after.io_spin_polls, before.io_spin_polls);
        assert_eq!(after.first_poll_waits, before.first_poll_waits);
    });
}

#[test]
fn a_single_worker_stops_watching_its_sockets_once_they_are_quiet() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let (listener, addr) = listener();
        // The connection stays open and idle after the round trips.
        let server = rt.go(move || ping_pong_server(listener));
        let mut peer = std::net::TcpStream::connect(addr).unwrap();
        for i in 0..100u8 {
            peer.write_all(&[i]).unwrap();
            let mut answer = [0u8; 1];
            peer.read_exact(&mut answer).unwrap();
        }
        // The worker watches for at most a watch's length after the last answer, then parks;
        // from then on it neither polls nor wakes while the socket stays quiet (a loaded
        // machine may delay the park, so look until the counters stand still).
        let mut quiet = rt.metrics();
        support::wait_until("the worker parks for good", || {
            std::thread::sleep(Duration::from_millis(100));
            let now = rt.metrics();
            let still = now.io_polls == quiet.io_polls && now.parks == quiet.parks;
            quiet = now;
            still
        });
        std::thread::sleep(Duration::from_millis(300));
        let after = rt.metrics();
        assert_eq!(
            after.io_polls, quiet.io_polls,
            "polls while the socket was quiet"
        );
        assert_eq!(after.io_spin_polls, quiet.io_spin_polls);
        assert_eq!(after.first_poll_waits, quiet.first_poll_waits);
        assert_eq!(
            after.parks, quiet.parks,
            "wake-ups while the socket was quiet"
        );
        drop(peer);
        server.join().unwrap();
    });
}

#[test]
fn a_single_worker_woken_only_by_timers_does_not_watch_its_sockets() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let (listener, addr) = listener();
        // A registered socket that stays quiet (its coroutine waits to read), beside a
        // coroutine woken by its timer 50 times.
        let server = rt.go(move || ping_pong_server(listener));
        let peer = std::net::TcpStream::connect(addr).unwrap();
        // The accept was socket traffic: let the watch that follows it end.
        std::thread::sleep(Duration::from_millis(100));
        let before = rt.metrics();
        rt.go(|| {
            for _ in 0..50 {
                corio::sleep(Duration::from_millis(1));
            }
        })
        .join()
        .unwrap();
        let after = rt.metrics();
        assert!(
            after.parks - before.parks >= 50,
            "the sleeps parked the worker"
        );
        assert_eq!(
            after.io_spin_polls, before.io_spin_polls,
            "the worker watched quiet sockets after timer wake-ups"
        );
        drop(peer);
        server.join().unwrap();
    });
}

/// A worker that never runs out of work polls the netpoller itself every so many rounds
/// (`runtime/worker.rs`, "A busy worker polls its sockets"), not only when sysmon finds
/// it has not for 10 ms: a socket that becomes ready while other coroutines keep every
/// worker busy wakes its reader within a bounded number of their turns. Counted in turns,
/// not time: a loaded machine slows the turns, not their number. (Before, the reader
/// waited for sysmon's poll, 10 ms of turns: tens of thousands; and a woken task then
/// queued in the global queue, which a busy worker takes from once per 61 rounds.) One
/// worker: with two, the turns of both are counted, and one thread descheduled by the kernel
/// while the other turns on makes the count say nothing.
#[test]
fn a_socket_ready_while_every_worker_is_busy_wakes_its_reader_within_a_bounded_number_of_turns() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let stop = Arc::new(AtomicBool::new(false));
        let turns = Arc::new(AtomicUsize::new(0));
        let busy = keep_busy(&rt, 2, &stop, &turns);
        support::wait_until("the busy coroutines run", || {
            turns.load(Ordering::Relaxed) > 1_000
        });
        // A coroutine reader and an async-task reader, each woken by a write made from a
        // coroutine of the same runtime; each records the turns its wait took. This thread
        // waits for them by looking, not by joining: a thread that joins may wait in the
        // driver, and the driver's holder takes the events itself.
        let (mut coroutine_end, mut writer_a) = corio::net::UnixStream::pair().unwrap();
        let (task_end, mut writer_b) = corio::net::UnixStream::pair().unwrap();
        let written_at = Arc::new(AtomicUsize::new(usize::MAX));
        let waits: Arc<[AtomicUsize; 2]> = Arc::new([const { AtomicUsize::new(0) }; 2]);
        let woken = Arc::new(AtomicUsize::new(0));
        let record = {
            let (turns, written_at, waits, woken) = (
                turns.clone(),
                written_at.clone(),
                waits.clone(),
                woken.clone(),
            );
            move |which: usize| {
                let wait = turns.load(Ordering::Relaxed) - written_at.load(Ordering::Relaxed);
                waits[which].store(wait, Ordering::Relaxed);
                woken.fetch_add(1, Ordering::Release);
            }
        };
        let coroutine_reader = {
            let record = record.clone();
            rt.go(move || {
                let mut byte = [0u8; 1];
                assert_eq!(coroutine_end.read(&mut byte).unwrap(), 1);
                record(0);
            })
        };
        let task_reader = rt.spawn(async move {
            let mut byte = [0u8; 1];
            assert_eq!(task_end.read_async(&mut byte).await.unwrap(), 1);
            record(1);
        });
        // Both readers wait before the write (many busy turns after they were started).
        let before = turns.load(Ordering::Relaxed);
        support::wait_until("the readers wait", || {
            turns.load(Ordering::Relaxed) > before + 1_000
        });
        let writer = {
            let (turns, written_at) = (turns.clone(), written_at.clone());
            rt.go(move || {
                written_at.store(turns.load(Ordering::Relaxed), Ordering::Relaxed);
                writer_a.write_all(b"a").unwrap();
                writer_b.write_all(b"b").unwrap();
            })
        };
        support::wait_until("both readers woke", || woken.load(Ordering::Acquire) == 2);
        let waits = waits.each_ref().map(|wait| wait.load(Ordering::Relaxed));
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        coroutine_reader.join().unwrap();
        rt.block_on(task_reader).unwrap();
        for b in busy {
            b.join().unwrap();
        }
        assert!(
            waits.iter().all(|&wait| wait < 2_000),
            "the readers (coroutine, task) woke {waits:?} busy turns after their sockets \
             became ready"
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
            let busy = keep_busy(&rt, 2 * WORKERS, &stop, &spins);
            let reader = rt.go(move || ping_pong_server(listener));
            support::wait_until("the busy coroutines run", || {
                spins.load(Ordering::Relaxed) > 1_000
            });
            ping_pong_client(addr, 20, Pace::Pause(Duration::ZERO));
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
            ping_pong_client(addr, 20, Pace::Pause(Duration::ZERO));
            reader.join().unwrap();
            stop.store(true, Ordering::Relaxed);
            feeder.join().unwrap();
        });
    }
}
