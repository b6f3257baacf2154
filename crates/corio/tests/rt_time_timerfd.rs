//! The driver's timer (a `timerfd` armed at the nearest deadline while a worker waits in the
//! driver, `runtime/driver.rs`) is set only when it must move: a server whose every request
//! starts and cancels a long timeout (hyper's header-read timer) does not pay a
//! `timerfd_settime` to arm it and another to disarm it each time its worker parks.

#[macro_use]
mod support;

use std::io::{Read, Write};
use std::time::Duration;

use corio::net::TcpListener;
use support::{EVENTUALLY, within};

/// Round trips of the test.
const ROUND_TRIPS: usize = 300;

#[test]
fn a_server_whose_requests_start_and_cancel_a_long_timeout_rarely_sets_the_driver_timer() {
    within(EVENTUALLY, || {
        let rt = support::rt(1);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Each byte is read under a fresh 30 s timeout, dropped when the byte arrives: as
        // hyper's header-read timer on a keep-alive connection.
        let server = rt.spawn(async move {
            let (stream, _) = listener.accept_async().await.unwrap();
            stream.set_nodelay(true).unwrap();
            let mut byte = [0u8; 1];
            loop {
                let read = corio::time::timeout_async(
                    Duration::from_secs(30),
                    stream.read_async(&mut byte),
                );
                if read.await.expect("timed out").unwrap() == 0 {
                    return;
                }
                stream
                    .write_all_async(&[byte[0].wrapping_add(1)])
                    .await
                    .unwrap();
            }
        });
        let mut peer = std::net::TcpStream::connect(addr).unwrap();
        peer.set_nodelay(true).unwrap();
        // Let the worker settle (waiting in the driver for the first byte).
        std::thread::sleep(Duration::from_millis(50));
        let before = rt.metrics();
        for i in 0..ROUND_TRIPS {
            // Slower than the worker's watch for the next request (`spin`, 50 µs), so
            // that it parks between the round trips.
            std::thread::sleep(Duration::from_micros(500));
            peer.write_all(&[i as u8]).unwrap();
            let mut answer = [0u8; 1];
            peer.read_exact(&mut answer).unwrap();
            assert_eq!(answer[0], (i as u8).wrapping_add(1));
        }
        let after = rt.metrics();
        drop(peer);
        rt.block_on(server).unwrap();
        let parks = after.parks - before.parks;
        let sets = after.timer_sets - before.timer_sets;
        // The worker parks about once per round trip, each time with a new 30 s deadline a
        // little later than the last: the timerfd armed for an earlier one wakes the worker at
        // worst once, early, in 15 s, so it need not move. A few sets are allowed (the first
        // arming; a park racing with the round's timeout).
        assert!(
            parks >= 20,
            "only {parks} parks: the test did not exercise them"
        );
        assert!(
            sets <= 10,
            "{sets} timerfd_settime calls for {parks} parks in {ROUND_TRIPS} round trips"
        );
    });
}
