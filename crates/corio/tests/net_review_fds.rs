//! Descriptors a socket holds beyond its own (a binary of its own: it counts the process's
//! descriptors, which another test running at the same time would change).

#[macro_use]
mod support;

use std::io::{ErrorKind, Write};
use std::time::Duration;

/// A plain thread that waits to write into a TCP socket needs nothing but `poll(2)`: the
/// socket's own `shutdown(Write)` wakes it (`POLLOUT`). The eventfd `Source::shutdown`
/// signals is for Unix sockets, whose `poll` does not report it (`io/source.rs`,
/// "A write and the shutdown of its direction"); it was made for every socket, and kept for
/// its life — a second descriptor for each TCP stream a plain thread had connected or filled.
#[test]
fn a_tcp_stream_that_waited_on_a_plain_thread_holds_no_second_descriptor() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let std_client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (_server, _) = listener.accept().unwrap();
    let client = corio::net::TcpStream::from_std(std_client).unwrap();
    client
        .set_write_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let before = support::open_fds();
    // The peer never reads: the writes fill the buffers, then one waits and times out.
    let chunk = [7u8; 64 * 1024];
    let e = loop {
        if let Err(e) = (&client).write(&chunk) {
            break e;
        }
    };
    assert_eq!(e.kind(), ErrorKind::TimedOut);
    assert_eq!(
        support::open_fds(),
        before,
        "the wait left a descriptor open"
    );
}
