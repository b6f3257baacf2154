//! The network examples, served on real sockets on 127.0.0.1 and checked from the outside:
//! `curl` gets the right bytes from `http_hello` and `hyper_hello`; pipelined requests come back
//! in order; garbage, a truncated request and a 1 MiB header get a 4xx or a clean close while the
//! server goes on serving; `fetch` runs 1,000 client coroutines at once against `http_hello`;
//! the echo servers return every byte; `chat` relays a line.
//!
//! The servers are the examples' own code, included as modules (`examples/servers/*.rs`,
//! `examples/fetch.rs`, `examples/chat.rs`), each started on its own runtime on a background
//! thread that lives until the test process exits. The clients are plain `std` sockets (or
//! `curl`) with read timeouts, so that every test is bounded in time. `curl` must be installed
//! (`.ci/run` installs it).

#[allow(dead_code)] // its `main`
#[path = "../examples/chat.rs"]
mod chat;
#[path = "../examples/servers/echo.rs"]
mod echo;
#[path = "../examples/servers/echo_async.rs"]
mod echo_async;
#[allow(dead_code)] // its `main`
#[path = "../examples/fetch.rs"]
mod fetch;
#[path = "../examples/servers/http_hello.rs"]
mod http_hello;
#[path = "../examples/servers/hyper_hello.rs"]
mod hyper_hello;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

/// How long a client waits for any one read before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// Which server a test runs against.
#[derive(Clone, Copy, Debug)]
enum Server {
    HttpHello,
    HyperHello,
}

/// A new runtime with `workers` workers and a listener on 127.0.0.1 with its address.
fn runtime_and_listener(workers: usize) -> (corio::Runtime, corio::net::TcpListener, SocketAddr) {
    let listener = corio::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local_addr");
    let rt = corio::Runtime::builder()
        .workers(workers)
        .hog_report(false)
        .build()
        .expect("runtime");
    (rt, listener, addr)
}

/// Binds a listener and serves it with `server` on a new 2-worker runtime on a background
/// thread; returns the address.
fn start(server: Server) -> SocketAddr {
    let (rt, listener, addr) = runtime_and_listener(2);
    std::thread::spawn(move || match server {
        Server::HttpHello => rt.run(move || http_hello::serve(listener)),
        Server::HyperHello => {
            let _ = rt.block_on(rt.spawn(hyper_hello::serve(listener)));
        }
    });
    addr
}

/// A client socket with the test's read and write timeouts.
fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.set_write_timeout(Some(PATIENCE)).unwrap();
    s
}

/// `curl -si URL`: its stdout (head and body), failing the test if curl is missing or fails.
fn curl(url: &str) -> String {
    let out = Command::new("curl")
        .args(["-s", "-i", "--max-time", "30", url])
        .output()
        .unwrap_or_else(|e| panic!("running curl failed ({e}): install curl (.ci/run does)"));
    assert!(out.status.success(), "curl {url} failed: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8 response")
}

/// The value of header `name` in a response head, case-insensitively.
fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    let head = response.split("\r\n\r\n").next()?;
    head.lines().skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Checks that curl gets exactly `Hello, World!` with the promised headers.
fn curl_gets_hello(server: Server) {
    let addr = start(server);
    let response = curl(&format!("http://{addr}/plaintext"));
    assert!(
        response.starts_with("HTTP/1.1 200 OK\r\n"),
        "{server:?}: {response:?}"
    );
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b);
    assert_eq!(body, Some("Hello, World!"), "{server:?}: {response:?}");
    assert_eq!(
        header(&response, "Content-Length"),
        Some("13"),
        "{response:?}"
    );
    let date = header(&response, "Date").expect("a Date header");
    assert!(date.ends_with(" GMT") && date.len() == 29, "Date: {date:?}");
    assert!(header(&response, "Server").is_some(), "{response:?}");
    // Another path is a 404, and the server goes on.
    let missing = curl(&format!("http://{addr}/nope"));
    assert!(
        missing.starts_with("HTTP/1.1 404"),
        "{server:?}: {missing:?}"
    );
}

#[test]
fn curl_gets_hello_world_from_http_hello() {
    curl_gets_hello(Server::HttpHello);
}

#[test]
fn curl_gets_hello_world_from_hyper_hello() {
    curl_gets_hello(Server::HyperHello);
}

/// The seconds since the Unix epoch now.
fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn http_hello_formats_dates_as_rfc_9110_imf_fixdate() {
    // RFC 9110 §5.6.7's example, and the epoch.
    assert_eq!(
        &http_hello::format_http_date(784_111_777),
        b"Sun, 06 Nov 1994 08:49:37 GMT"
    );
    assert_eq!(
        &http_hello::format_http_date(0),
        b"Thu, 01 Jan 1970 00:00:00 GMT"
    );
}

#[test]
fn http_hello_date_is_the_current_second_and_follows_the_clock_past_a_second() {
    // The cache must never serve a second that has passed: check it over three seconds.
    let mut seen = std::collections::BTreeSet::new();
    let deadline = std::time::Instant::now() + Duration::from_millis(2_500);
    while std::time::Instant::now() < deadline {
        let before = unix_secs();
        let date = http_hello::http_date();
        let after = unix_secs();
        assert!(
            (before..=after).any(|s| http_hello::format_http_date(s) == date),
            "{:?} is not a second between {before} and {after}",
            String::from_utf8_lossy(&date)
        );
        seen.insert(date);
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(seen.len() >= 2, "the date never moved: {seen:?}");
}

/// Reads one response with a `Content-Length` body from `r`; returns (status line, body).
fn read_response(r: &mut impl BufRead) -> (String, String) {
    let mut status = String::new();
    r.read_line(&mut status).expect("status line");
    let mut length = 0;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).expect("header line");
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((n, v)) = line.split_once(':')
            && n.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().expect("a numeric Content-Length");
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).expect("body");
    (
        status.trim_end().to_string(),
        String::from_utf8(body).unwrap(),
    )
}

fn pipelined_in_order(server: Server) {
    let addr = start(server);
    let mut s = connect(addr);
    let mut batch = String::new();
    for path in ["/plaintext", "/a", "/plaintext", "/b", "/plaintext"] {
        batch.push_str(&format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n"));
    }
    s.write_all(batch.as_bytes()).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let answers: Vec<(String, String)> = (0..5).map(|_| read_response(&mut r)).collect();
    let statuses: Vec<&str> = answers.iter().map(|(st, _)| &st[9..12]).collect();
    assert_eq!(statuses, ["200", "404", "200", "404", "200"], "{server:?}");
    assert_eq!(answers[4].1, "Hello, World!");
    // Keep-alive: the same connection serves the next request too.
    s.write_all(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut r).1, "Hello, World!", "{server:?}");
}

#[test]
fn http_hello_answers_pipelined_requests_in_order_on_one_connection() {
    pipelined_in_order(Server::HttpHello);
}

#[test]
fn hyper_hello_answers_pipelined_requests_in_order_on_one_connection() {
    pipelined_in_order(Server::HyperHello);
}

/// hyper told to queue a response's head and body and write them with one vectored write, on
/// the example's `CorioIo`: every response arrives whole, in order, on one connection.
#[test]
fn hyper_on_corio_io_with_vectored_writes_answers_requests_whole_and_in_order() {
    let (rt, listener, addr) = runtime_and_listener(2);
    std::thread::spawn(move || {
        let _ = rt.block_on(rt.spawn(async move {
            let (stream, _) = listener.accept_async().await.expect("accept");
            let _ = hyper::server::conn::http1::Builder::new()
                .writev(true)
                .serve_connection(
                    hyper_hello::CorioIo(stream),
                    hyper::service::service_fn(hyper_hello::hello),
                )
                .await;
        }));
    });
    let mut s = connect(addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    for path in ["/plaintext", "/a", "/plaintext"] {
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .unwrap();
        let (status, body) = read_response(&mut r);
        if path == "/plaintext" {
            assert_eq!((&status[9..12], body.as_str()), ("200", "Hello, World!"));
        } else {
            assert_eq!((&status[9..12], body.as_str()), ("404", ""));
        }
    }
    // Pipelined too: three answers, in order.
    s.write_all(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let statuses: Vec<String> = (0..3)
        .map(|_| read_response(&mut r).0[9..12].to_string())
        .collect();
    assert_eq!(statuses, ["200", "404", "200"]);
}

/// How the server answered a bad request.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// A `4xx` response, then the connection closed.
    ClientError(u16),
    /// The connection closed without a response (a FIN, not a reset).
    CleanClose,
}

/// Sends `request` (shutting down our write side if `half_close`), then reads until the server
/// closes; fails on a reset or a non-4xx answer.
fn bad_request(addr: SocketAddr, request: &[u8], half_close: bool) -> Verdict {
    let mut s = connect(addr);
    // The server may answer and close before reading all of a large request: a failed write
    // is fine as long as its answer (or a clean close) can still be read.
    let _ = s.write_all(request);
    if half_close {
        let _ = s.shutdown(Shutdown::Write);
    }
    let mut reply = Vec::new();
    match s.read_to_end(&mut reply) {
        Ok(_) => {}
        Err(e) => panic!(
            "reading the answer to a bad request failed: {e} ({:?}) after {:?}",
            e.kind(),
            String::from_utf8_lossy(&reply)
        ),
    }
    if reply.is_empty() {
        return Verdict::CleanClose;
    }
    let text = String::from_utf8_lossy(&reply);
    let code: u16 = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    assert!((400..500).contains(&code), "status {code}: {text:?}");
    Verdict::ClientError(code)
}

/// A keep-alive connection opened before the bad requests still gets answers after them, and
/// so does a new one.
fn bad_requests_do_not_stop_the_server(server: Server) {
    let addr = start(server);
    let mut before = connect(addr);
    let mut before_r = BufReader::new(before.try_clone().unwrap());
    before
        .write_all(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut before_r).1, "Hello, World!");

    let garbage = bad_request(addr, b"\x00\x01 this is not HTTP \xff\r\n\r\n", false);
    let truncated = bad_request(addr, b"GET /plaintext HTTP/1.1\r\nHost: x\r\nX-Cut", true);
    let mut huge = b"GET /plaintext HTTP/1.1\r\nHost: x\r\nX-Huge: ".to_vec();
    huge.resize(huge.len() + (1 << 20), b'a');
    huge.extend_from_slice(b"\r\n\r\n");
    let big_header = bad_request(addr, &huge, false);
    if let Server::HttpHello = server {
        // http_hello's promise: 400 for both, a quiet close for a request that never ends.
        assert_eq!(garbage, Verdict::ClientError(400));
        assert_eq!(big_header, Verdict::ClientError(400));
    }
    assert!(
        matches!(truncated, Verdict::CleanClose | Verdict::ClientError(400)),
        "{server:?}: truncated request: {truncated:?}"
    );

    before
        .write_all(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert_eq!(
        read_response(&mut before_r).1,
        "Hello, World!",
        "{server:?}"
    );
    let response = curl(&format!("http://{addr}/plaintext"));
    assert!(
        response.ends_with("\r\n\r\nHello, World!"),
        "{server:?}: {response:?}"
    );
}

#[test]
fn http_hello_answers_garbage_truncation_and_a_1mib_header_with_400_or_a_close_and_goes_on() {
    bad_requests_do_not_stop_the_server(Server::HttpHello);
}

#[test]
fn hyper_hello_answers_garbage_truncation_and_a_1mib_header_with_4xx_or_a_close_and_goes_on() {
    bad_requests_do_not_stop_the_server(Server::HyperHello);
}

#[test]
fn fetch_runs_1000_client_coroutines_at_once_against_http_hello() {
    let addr = start(Server::HttpHello);
    let client = corio::Runtime::builder()
        .workers(2)
        .hog_report(false)
        .build()
        .unwrap();
    let bodies = client.run(move || {
        let handles: Vec<_> = (0..1000)
            .map(|_| corio::go(move || fetch::fetch(addr)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a fetch coroutine panicked"))
            .collect::<Vec<_>>()
    });
    assert_eq!(bodies.len(), 1000);
    for body in bodies {
        assert_eq!(body.expect("fetch failed"), "Hello, World!");
    }
}

/// 100 client threads each send 20 messages of different lengths and check every echo.
fn echo_returns_every_byte(addr: SocketAddr) {
    let clients: Vec<_> = (0..100u8)
        .map(|c| {
            std::thread::spawn(move || {
                let mut s = connect(addr);
                for m in 0..20usize {
                    let msg: Vec<u8> = (0..1 + m * 97).map(|i| c ^ i as u8).collect();
                    s.write_all(&msg).unwrap();
                    let mut back = vec![0; msg.len()];
                    s.read_exact(&mut back).unwrap();
                    assert_eq!(back, msg, "client {c}, message {m}");
                }
                s.shutdown(Shutdown::Write).unwrap();
                let mut rest = Vec::new();
                s.read_to_end(&mut rest).unwrap();
                assert!(rest.is_empty(), "the server closes after our half-close");
            })
        })
        .collect();
    for c in clients {
        c.join().expect("an echo client failed");
    }
}

/// A fresh runtime (1 worker, as corio-bench runs the servers) and a listener on it.
fn echo_runtime() -> (corio::Runtime, corio::net::TcpListener, SocketAddr) {
    runtime_and_listener(1)
}

#[test]
fn echo_example_returns_every_byte_to_100_clients() {
    let (rt, listener, addr) = echo_runtime();
    std::thread::spawn(move || rt.run(move || echo::serve(listener)));
    echo_returns_every_byte(addr);
}

#[test]
fn echo_async_example_returns_every_byte_to_100_clients() {
    let (rt, listener, addr) = echo_runtime();
    std::thread::spawn(move || {
        let _ = rt.block_on(rt.spawn(echo_async::serve(listener)));
    });
    echo_returns_every_byte(addr);
}

#[test]
fn chat_relays_a_line_to_the_other_clients_and_announces_joins_and_leaves() {
    let (rt, listener, addr) = echo_runtime();
    std::thread::spawn(move || rt.run(move || chat::serve(listener)));
    let line = |r: &mut BufReader<TcpStream>| {
        let mut l = String::new();
        match r.read_line(&mut l) {
            Ok(_) => l,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                panic!("no line from the chat server within {PATIENCE:?}")
            }
            Err(e) => panic!("{e}"),
        }
    };
    let name = |welcome: &str| {
        welcome
            .trim_end()
            .strip_prefix("welcome, you are ")
            .unwrap_or_else(|| panic!("greeting {welcome:?}"))
            .to_string()
    };
    let a = connect(addr);
    let mut ar = BufReader::new(a.try_clone().unwrap());
    let a_name = name(&line(&mut ar));
    let mut b = connect(addr);
    let mut br = BufReader::new(b.try_clone().unwrap());
    let b_name = name(&line(&mut br));
    assert_eq!(line(&mut ar), format!("* {b_name} joined\n"));
    b.write_all(b"hello there\n").unwrap();
    assert_eq!(line(&mut ar), format!("{b_name}: hello there\n"));
    (&a).write_all(b"hi\n").unwrap();
    assert_eq!(line(&mut br), format!("{a_name}: hi\n"));
    drop(br);
    b.shutdown(Shutdown::Both).unwrap();
    drop(b);
    assert_eq!(line(&mut ar), format!("* {b_name} left\n"));
}
