//! The worker waiting in the driver (the *holder*, `runtime/driver.rs`) is interrupted through
//! the driver's eventfd only when it is really asleep in `epoll_wait`.
//!
//! When the holder's `epoll_wait` returns with several ready sockets, it wakes their tasks
//! itself, while it is still counted as parked: the second task it queues is work that others
//! could steal, and "wake a parked worker" picked the holder itself. Writing the eventfd for a
//! worker that is already awake cost a `write`, and its next `epoll_wait` returned at once for
//! the eventfd alone (a `read` and an empty park): 0.04 of each per request for `hyper_hello`
//! under `wrk` (`docs/net-bench.md`, "hyper, second pass").

#[macro_use]
mod support;

use std::io::{Read, Write};
use std::time::Duration;

use corio::net::TcpListener;
use support::{EVENTUALLY, within};

/// Connections of the test; each round wakes the tasks of all but the first at once.
const CONNECTIONS: usize = 4;
/// Rounds of the test.
const ROUNDS: usize = 100;

/// Serves one connection in an async task: answers each byte with the byte plus one until the
/// client closes. The first connection's task keeps the worker's thread for a moment after
/// each byte (`std::thread::sleep`), so that the other connections' bytes arrive meanwhile and
/// one `epoll_wait` returns them together.
async fn answer(stream: corio::net::TcpStream, first: bool) {
    let mut byte = [0u8; 1];
    while stream.read_async(&mut byte).await.unwrap() == 1 {
        if first {
            std::thread::sleep(Duration::from_millis(3));
        }
        stream
            .write_all_async(&[byte[0].wrapping_add(1)])
            .await
            .unwrap();
    }
}

#[test]
fn the_holder_does_not_write_the_eventfd_for_tasks_it_wakes_itself() {
    within(EVENTUALLY, || {
        // Without the single worker's watch of its busy sockets (`Builder::io_spin`): the
        // watch would take the batch with a non-blocking poll before the worker parks, and the
        // holder's `epoll_wait` this test is about would never return it.
        let rt = corio::Runtime::builder()
            .workers(1)
            .hog_report(false)
            .io_spin(false)
            .build()
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = rt.spawn(async move {
            let mut tasks = Vec::new();
            for i in 0..CONNECTIONS {
                let (stream, _) = listener.accept_async().await.unwrap();
                stream.set_nodelay(true).unwrap();
                tasks.push(corio::spawn(answer(stream, i == 0)));
            }
            for task in tasks {
                task.await.unwrap();
            }
        });
        let mut peers: Vec<_> = (0..CONNECTIONS)
            .map(|_| {
                let peer = std::net::TcpStream::connect(addr).unwrap();
                peer.set_nodelay(true).unwrap();
                peer
            })
            .collect();
        // Let the worker settle (every task waiting for its socket, the worker in the driver).
        std::thread::sleep(Duration::from_millis(50));
        let before = rt.metrics();
        for round in 0..ROUNDS {
            let byte = round as u8;
            peers[0].write_all(&[byte]).unwrap();
            // The worker wakes for the first byte and holds its thread for a moment.
            std::thread::sleep(Duration::from_millis(1));
            for peer in &mut peers[1..] {
                peer.write_all(&[byte]).unwrap();
            }
            for peer in &mut peers {
                let mut answer = [0u8; 1];
                peer.read_exact(&mut answer).unwrap();
                assert_eq!(answer[0], byte.wrapping_add(1));
            }
        }
        let after = rt.metrics();
        drop(peers);
        rt.block_on(server).unwrap();
        // Nothing else runs on the runtime: no thread but the worker itself queues work, so the
        // holder never needs interrupting. A few are allowed (sysmon's netpoll, if a round's
        // first task kept the worker from polling for 10 ms on a loaded machine, wakes the
        // tasks from its own thread).
        assert_eq!(
            after.io_spin_polls, 0,
            "the worker watched its sockets although the runtime was built without the watch"
        );
        let wakes = after.driver_wakes - before.driver_wakes;
        assert!(
            wakes <= (ROUNDS / 10) as u64,
            "{wakes} eventfd writes to wake the holder in {ROUNDS} rounds"
        );
    });
}
