//! The read/write path allocates nothing: a counting global allocator watches ping-pong
//! round trips between two coroutines (and between two async tasks) over a TCP connection
//! after a warm-up, each round trip a wait on each side (the socket is empty when `read` is
//! called, so every read goes through the netpoller and a wake-up).
//!
//! A binary of its own: the allocator counts the whole process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

use corio::net::{TcpListener, TcpStream};

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; counting has no effect on the memory returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(SeqCst) {
            ALLOCS.fetch_add(1, SeqCst);
        }
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(SeqCst) {
            ALLOCS.fetch_add(1, SeqCst);
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const WARM_UP: usize = 100;
/// One-time allocations the scheduler may make inside the measured window on two workers (a
/// worker's inbox growing the first time it holds that many, a spare thread started): a
/// constant, far below the 4,000 that one allocation per read or write would make.
const ONE_TIME: usize = 16;
const ROUNDS: usize = 2000;

/// Allocations made during `ROUNDS` measured round trips, after `WARM_UP` (both run by `round`).
fn allocations_in(mut round: impl FnMut()) -> usize {
    for _ in 0..WARM_UP {
        round();
    }
    ALLOCS.store(0, SeqCst);
    COUNTING.store(true, SeqCst);
    for _ in 0..ROUNDS {
        round();
    }
    COUNTING.store(false, SeqCst);
    ALLOCS.load(SeqCst)
}

#[test]
fn reads_and_writes_allocate_nothing() {
    // The counter sees allocations at all.
    assert_eq!(
        allocations_in(|| drop(std::hint::black_box(Box::new(1u8)))),
        ROUNDS
    );
    // One test in this binary (the counter is global); each part in turn.
    for workers in [1, 2] {
        let rt = corio::Runtime::builder()
            .workers(workers)
            .hog_report(false)
            .build()
            .unwrap();
        let allocs = rt.run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            corio::go(move || {
                let (s, _) = listener.accept().unwrap();
                let mut buf = [0u8; 64];
                use std::io::{Read, Write};
                while let Ok(n @ 1..) = (&s).read(&mut buf) {
                    (&s).write_all(&buf[..n]).unwrap();
                }
            });
            let client = TcpStream::connect(addr).unwrap();
            let mut buf = [0u8; 64];
            allocations_in(|| {
                use std::io::{Read, Write};
                (&client).write_all(&[42; 64]).unwrap();
                (&client).read_exact(&mut buf).unwrap();
            })
        });
        assert!(
            allocs <= ONE_TIME,
            "stackful, {workers} workers: {allocs} allocations in {ROUNDS} round trips"
        );

        // The same with a read timeout set (a server's usual guard): each wait is a timed one,
        // through `corio::time::timeout`.
        let allocs = rt.run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            corio::go(move || {
                let (s, _) = listener.accept().unwrap();
                let mut buf = [0u8; 64];
                use std::io::{Read, Write};
                while let Ok(n @ 1..) = (&s).read(&mut buf) {
                    (&s).write_all(&buf[..n]).unwrap();
                }
            });
            let client = TcpStream::connect(addr).unwrap();
            client
                .set_read_timeout(Some(std::time::Duration::from_secs(60)))
                .unwrap();
            let mut buf = [0u8; 64];
            allocations_in(|| {
                use std::io::{Read, Write};
                (&client).write_all(&[42; 64]).unwrap();
                (&client).read_exact(&mut buf).unwrap();
            })
        });
        assert!(
            allocs <= ONE_TIME,
            "stackful with a read timeout, {workers} workers: {allocs} allocations in {ROUNDS} round trips"
        );

        // Datagrams to a `SocketAddr`: no lookup, so nothing to allocate either.
        let allocs = rt.run(|| {
            let a = corio::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let b = corio::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let to = b.local_addr().unwrap();
            let mut buf = [0u8; 64];
            allocations_in(|| {
                a.send_to(&[7; 64], to).unwrap();
                b.recv_from(&mut buf).unwrap();
            })
        });
        assert!(
            allocs <= ONE_TIME,
            "stackful UDP, {workers} workers: {allocs} allocations in {ROUNDS} round trips"
        );

        let allocs = rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            corio::spawn(async move {
                let (s, _) = listener.accept_async().await.unwrap();
                let mut buf = [0u8; 64];
                while let Ok(n @ 1..) = s.read_async(&mut buf).await {
                    s.write_all_async(&buf[..n]).await.unwrap();
                }
            });
            let client = TcpStream::connect_async(addr).await.unwrap();
            let mut buf = [0u8; 64];
            for _ in 0..WARM_UP {
                client.write_all_async(&[42; 64]).await.unwrap();
                client.read_exact_async(&mut buf).await.unwrap();
            }
            ALLOCS.store(0, SeqCst);
            COUNTING.store(true, SeqCst);
            for _ in 0..ROUNDS {
                client.write_all_async(&[42; 64]).await.unwrap();
                client.read_exact_async(&mut buf).await.unwrap();
            }
            COUNTING.store(false, SeqCst);
            ALLOCS.load(SeqCst)
        });
        assert!(
            allocs <= ONE_TIME,
            "async, {workers} workers: {allocs} allocations in {ROUNDS} round trips"
        );
    }
}
