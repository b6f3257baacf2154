//! A review of the network examples' servers against what they document (their top comments)
//! and what the issue asks of them: `http_hello` (httparse on coroutines), `hyper_hello`
//! (hyper on corio tasks), `chat` and `fetch`. The servers are the examples' own code,
//! included as modules (as `tests/net_examples.rs` does), each on its own runtime on a
//! background thread. Every test runs under a watchdog (`support::within`) and its clients
//! have read/write timeouts; the assertions are about behaviour (bytes, order, closes,
//! memory), not about speed.

#[macro_use]
#[allow(unused_macros)]
mod support;

#[allow(dead_code)] // its `main`
#[path = "../examples/chat.rs"]
mod chat;
#[path = "../examples/servers/http_hello.rs"]
mod http_hello;
#[path = "../examples/servers/hyper_hello.rs"]
mod hyper_hello;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

use support::within;

const WATCHDOG: Duration = Duration::from_secs(60);
/// How long a client waits for any one read before it gives up.
const PATIENCE: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Server {
    HttpHello,
    HyperHello,
}

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

/// Serves `server` on a new 2-worker runtime on a background thread; returns the address.
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

/// Serves the chat example on a new runtime with `workers` workers.
fn start_chat(workers: usize) -> SocketAddr {
    let (rt, listener, addr) = runtime_and_listener(workers);
    std::thread::spawn(move || rt.run(move || chat::serve(listener)));
    addr
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.set_write_timeout(Some(PATIENCE)).unwrap();
    s
}

/// One parsed response.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one response (Content-Length framed; `head` says the request was a HEAD). `Ok(None)`
/// at a clean end of stream before any byte of it.
fn read_response(r: &mut impl BufRead, head: bool) -> std::io::Result<Option<Response>> {
    let mut status = String::new();
    if r.read_line(&mut status)? == 0 {
        return Ok(None);
    }
    let code: u16 = status
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| status.strip_prefix("HTTP/1.0 "))
        .and_then(|s| s.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not a status line: {status:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(ErrorKind::UnexpectedEof, "eof in head"));
        }
        if line == "\r\n" {
            break;
        }
        let (n, v) = line.split_once(':').expect("a header line");
        headers.push((n.trim().to_string(), v.trim().to_string()));
    }
    let mut resp = Response {
        status: code,
        headers,
        body: Vec::new(),
    };
    if !head {
        let len: usize = resp
            .header("content-length")
            .map_or(0, |v| v.parse().expect("numeric content-length"));
        resp.body = vec![0; len];
        r.read_exact(&mut resp.body)?;
    }
    Ok(Some(resp))
}

fn expect_response(r: &mut impl BufRead, what: &str) -> Response {
    match read_response(r, false) {
        Ok(Some(resp)) => resp,
        Ok(None) => panic!("{what}: the server closed instead of answering"),
        Err(e) => panic!("{what}: reading the response failed: {e} ({:?})", e.kind()),
    }
}

/// Whether the server closes `s` (a clean EOF) after whatever it has still to send; returns
/// the bytes read before the close, or `Err` if it does not close within `PATIENCE`.
fn read_until_close(s: &mut impl Read) -> Result<Vec<u8>, (std::io::Error, Vec<u8>)> {
    let mut all = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Ok(all),
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(e) => return Err((e, all)),
        }
    }
}

/// A fresh connection gets `Hello, World!`: the server goes on.
fn still_serves(addr: SocketAddr, server: Server) {
    let mut s = connect(addr);
    s.write_all(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s);
    let resp = expect_response(&mut r, &format!("{server:?}: a fresh connection"));
    assert_eq!(resp.status, 200, "{server:?}");
    assert_eq!(resp.body, b"Hello, World!", "{server:?}");
}

/// Runs the test `name` alone in a child process (this binary again, with `--exact`), where
/// `rss()` sees only its own memory and not that of tests running beside it; `true` in the
/// child, where the caller then runs the test's body.
fn alone_in_a_child(name: &str) -> bool {
    const CHILD: &str = "CORIO_EXAMPLES_REVIEW_CHILD";
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{name} in a child process: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// The process's resident set, in bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn set_rcvbuf(s: &impl AsRawFd, size: libc::c_int) {
    // SAFETY: an int option.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&raw const size).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0);
}

// ---------------------------------------------------------------------------------------------
// HTTP: both servers
// ---------------------------------------------------------------------------------------------

/// A request (and a second one after it) sent one byte per segment, with pauses, is answered.
fn byte_by_byte(server: Server) {
    within(WATCHDOG, move || {
        let addr = start(server);
        let s = connect(addr);
        s.set_nodelay(true).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        for _ in 0..2 {
            for b in b"GET /plaintext HTTP/1.1\r\nHost: x\r\nX-A: b\r\n\r\n" {
                (&s).write_all(&[*b]).unwrap();
                std::thread::sleep(Duration::from_millis(2));
            }
            let resp = expect_response(&mut r, "byte by byte");
            assert_eq!((resp.status, &resp.body[..]), (200, &b"Hello, World!"[..]));
        }
    });
}

#[test]
fn http_hello_answers_a_request_sent_byte_by_byte() {
    byte_by_byte(Server::HttpHello);
}

#[test]
fn hyper_hello_answers_a_request_sent_byte_by_byte() {
    byte_by_byte(Server::HyperHello);
}

/// `depth` requests (alternating found / not found) in one write come back all, in order.
fn pipelined(server: Server, depth: usize) {
    within(WATCHDOG, move || {
        let addr = start(server);
        let mut s = connect(addr);
        let mut batch = Vec::new();
        for i in 0..depth {
            let path = if i % 3 == 0 { "/nope" } else { "/plaintext" };
            batch.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        }
        let writer = {
            let mut s = s.try_clone().unwrap();
            std::thread::spawn(move || s.write_all(&batch).unwrap())
        };
        let mut r = BufReader::new(s.try_clone().unwrap());
        for i in 0..depth {
            let resp = expect_response(&mut r, &format!("{server:?}: pipelined #{i}"));
            let want = if i % 3 == 0 { 404 } else { 200 };
            assert_eq!(resp.status, want, "{server:?}: response #{i}");
        }
        writer.join().unwrap();
        s.write_all(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        assert_eq!(expect_response(&mut r, "after the batch").status, 200);
    });
}

#[test]
fn http_hello_answers_100_pipelined_requests_in_one_write_in_order() {
    pipelined(Server::HttpHello, 100);
}

#[test]
fn hyper_hello_answers_100_pipelined_requests_in_one_write_in_order() {
    pipelined(Server::HyperHello, 100);
}

#[test]
fn http_hello_answers_5000_pipelined_requests_in_order() {
    pipelined(Server::HttpHello, 5000);
}

/// A client sends its requests, then shuts its write side: it still gets every answer, then
/// the server's close.
fn half_close(server: Server) {
    within(WATCHDOG, move || {
        let addr = start(server);
        let mut s = connect(addr);
        let mut batch = Vec::new();
        for _ in 0..3 {
            batch.extend_from_slice(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n");
        }
        s.write_all(&batch).unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let all = read_until_close(&mut s).unwrap_or_else(|(e, got)| {
            panic!("{server:?}: {e}: {:?}", String::from_utf8_lossy(&got))
        });
        let text = String::from_utf8_lossy(&all);
        assert_eq!(
            text.matches("Hello, World!").count(),
            3,
            "{server:?}: after a half-close: {text:?}"
        );
    });
}

#[test]
fn http_hello_answers_every_request_of_a_half_closed_client() {
    half_close(Server::HttpHello);
}

#[test]
fn hyper_hello_answers_every_request_of_a_half_closed_client() {
    half_close(Server::HyperHello);
}

/// One request at a time, with a half-close after a single request (what `curl` with
/// HTTP/1.0-style clients and `nc -N` do).
fn half_close_single(server: Server) {
    within(WATCHDOG, move || {
        let addr = start(server);
        let mut s = connect(addr);
        s.write_all(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let all = read_until_close(&mut s).unwrap_or_else(|(e, got)| {
            panic!("{server:?}: {e}: {:?}", String::from_utf8_lossy(&got))
        });
        let text = String::from_utf8_lossy(&all);
        assert!(text.ends_with("Hello, World!"), "{server:?}: {text:?}");
    });
}

#[test]
fn http_hello_answers_one_request_then_half_close() {
    half_close_single(Server::HttpHello);
}

#[test]
fn hyper_hello_answers_one_request_then_half_close() {
    half_close_single(Server::HyperHello);
}

/// `Connection: close` on the first of two pipelined requests: one answer, marked close, then
/// the server closes (the second request is not answered).
fn connection_close(server: Server, value: &'static str) {
    within(WATCHDOG, move || {
        let addr = start(server);
        let mut s = connect(addr);
        let req = format!(
            "GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: {value}\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n"
        );
        s.write_all(req.as_bytes()).unwrap();
        let all = read_until_close(&mut s).unwrap_or_else(|(e, got)| {
            panic!(
                "{server:?}: `Connection: {value}` but the server did not close ({e}); got {:?}",
                String::from_utf8_lossy(&got)
            )
        });
        let text = String::from_utf8_lossy(&all);
        assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "{server:?}: {text:?}");
        assert!(
            text.to_ascii_lowercase().contains("connection: close"),
            "{server:?}: {text:?}"
        );
    });
}

#[test]
fn http_hello_closes_after_connection_close() {
    connection_close(Server::HttpHello, "close");
}

#[test]
fn hyper_hello_closes_after_connection_close() {
    connection_close(Server::HyperHello, "close");
}

/// `Connection` is a list of tokens (RFC 9110 §7.6.1): `close` among others means close.
#[test]
fn http_hello_closes_after_a_connection_header_listing_close_among_other_tokens() {
    connection_close(Server::HttpHello, "TE, close");
}

#[test]
fn hyper_hello_closes_after_a_connection_header_listing_close_among_other_tokens() {
    connection_close(Server::HyperHello, "TE, close");
}

/// HTTP/1.0 without `Connection: keep-alive`: one answer, then the server closes.
fn http10_closes(server: Server) {
    within(WATCHDOG, move || {
        let addr = start(server);
        let mut s = connect(addr);
        s.write_all(b"GET /plaintext HTTP/1.0\r\n\r\n").unwrap();
        let all = read_until_close(&mut s)
            .unwrap_or_else(|(e, got)| panic!("{server:?}: no close: {e}: {got:?}"));
        let text = String::from_utf8_lossy(&all);
        assert!(
            text.ends_with("\r\n\r\nHello, World!"),
            "{server:?}: {text:?}"
        );
    });
}

#[test]
fn http_hello_closes_an_http10_connection_after_the_response() {
    http10_closes(Server::HttpHello);
}

#[test]
fn hyper_hello_closes_an_http10_connection_after_the_response() {
    http10_closes(Server::HyperHello);
}

/// HTTP/1.0 with `Connection: keep-alive`: a server that keeps the connection open must say
/// so with `Connection: keep-alive` in its response (RFC 9112 §9.3 and appendix C.2.2: an
/// HTTP/1.0 client assumes the server closes unless told otherwise, and reads to the close:
/// `ab -k`, wrk-style 1.0 clients hang). Either the response says keep-alive, or the server
/// closes.
fn http10_keep_alive(server: Server) {
    within(WATCHDOG, move || {
        let addr = start(server);
        let s = connect(addr);
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        (&s).write_all(b"GET /plaintext HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let resp = expect_response(&mut r, "HTTP/1.0 keep-alive");
        assert_eq!(resp.body, b"Hello, World!");
        let says_keep_alive = resp
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("keep-alive"));
        if !says_keep_alive {
            // Then the HTTP/1.0 client waits for the close: does it come?
            let mut rest = Vec::new();
            match r.read_to_end(&mut rest) {
                Ok(_) => {}
                Err(e) => panic!(
                    "{server:?}: the response to an HTTP/1.0 keep-alive request has no \
                     `Connection: keep-alive` ({:?}) yet the server keeps the connection open \
                     ({e}): an HTTP/1.0 client reading to the close hangs",
                    resp.headers
                ),
            }
        }
    });
}

#[test]
fn http_hello_tells_an_http10_keep_alive_client_that_the_connection_stays_open() {
    http10_keep_alive(Server::HttpHello);
}

#[test]
fn hyper_hello_tells_an_http10_keep_alive_client_that_the_connection_stays_open() {
    http10_keep_alive(Server::HyperHello);
}

/// 1,000 connections open at once, each sends a request, then each reads its answer.
fn thousand_connections(server: Server) {
    within(Duration::from_secs(120), move || {
        let addr = start(server);
        let mut conns: Vec<TcpStream> = (0..1000).map(|_| connect(addr)).collect();
        for s in &mut conns {
            s.write_all(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
        }
        for (i, s) in conns.into_iter().enumerate() {
            let mut r = BufReader::new(s);
            let resp = expect_response(&mut r, &format!("{server:?}: connection {i}"));
            assert_eq!(resp.body, b"Hello, World!", "connection {i}");
        }
    });
}

#[test]
fn http_hello_serves_1000_simultaneous_connections() {
    thousand_connections(Server::HttpHello);
}

#[test]
fn hyper_hello_serves_1000_simultaneous_connections() {
    thousand_connections(Server::HyperHello);
}

/// A client pipelines requests as fast as it can and never reads: the server must stop reading
/// when the client does not take its responses (memory stays bounded), and go on serving the
/// others meanwhile.
fn never_reading_pipeliner(server: Server) {
    within(Duration::from_secs(120), move || {
        let addr = start(server);
        still_serves(addr, server);
        let before = rss();
        let s = connect(addr);
        s.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
        set_rcvbuf(&s, 4096);
        let chunk: Vec<u8> = b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n".repeat(1000);
        // A server that stops reading lets through its and our socket buffers (a few MiB).
        let limit = 40usize << 20;
        let mut sent = 0usize;
        while sent < limit {
            match (&s).write_all(&chunk) {
                Ok(()) => sent += chunk.len(),
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                    break;
                }
                Err(e) => panic!("{server:?}: writing requests failed: {e}"),
            }
        }
        let grew = rss().saturating_sub(before);
        // Meanwhile every other client is served.
        still_serves(addr, server);
        assert!(
            sent < limit,
            "{server:?}: the server read {} MiB of requests whose responses nobody reads (the \
             process grew by {} MiB meanwhile)",
            limit >> 20,
            grew >> 20
        );
        assert!(
            grew < 64 << 20,
            "{server:?}: the process grew by {} MiB for one client that does not read ({sent} \
             bytes of requests accepted)",
            grew >> 20
        );
        drop(s);
        still_serves(addr, server);
    });
}

#[test]
fn http_hello_stops_reading_from_a_client_that_never_reads_its_responses() {
    if alone_in_a_child("http_hello_stops_reading_from_a_client_that_never_reads_its_responses") {
        never_reading_pipeliner(Server::HttpHello);
    }
}

#[test]
fn hyper_hello_stops_reading_from_a_client_that_never_reads_its_responses() {
    if alone_in_a_child("hyper_hello_stops_reading_from_a_client_that_never_reads_its_responses") {
        never_reading_pipeliner(Server::HyperHello);
    }
}

/// A connection that sends nothing (and one that sends half a head) does not stop the others.
fn idle_clients_do_not_stall_others(server: Server) {
    within(WATCHDOG, move || {
        let addr = start(server);
        let idle: Vec<TcpStream> = (0..50).map(|_| connect(addr)).collect();
        let mut partial: Vec<TcpStream> = (0..50).map(|_| connect(addr)).collect();
        for s in &mut partial {
            s.write_all(b"GET /plaintext HTTP/1.1\r\nHost:").unwrap();
        }
        for _ in 0..20 {
            still_serves(addr, server);
        }
        drop(idle);
        drop(partial);
        still_serves(addr, server);
    });
}

#[test]
fn http_hello_idle_and_half_sent_connections_do_not_stall_others() {
    idle_clients_do_not_stall_others(Server::HttpHello);
}

#[test]
fn hyper_hello_idle_and_half_sent_connections_do_not_stall_others() {
    idle_clients_do_not_stall_others(Server::HyperHello);
}

/// A request with a Content-Length body whose body is split across segments, pipelined with
/// a second request: the body is skipped (never parsed as a request), the second answered.
fn body_then_pipelined(server: Server) {
    within(WATCHDOG, move || {
        let addr = start(server);
        let s = connect(addr);
        s.set_nodelay(true).unwrap();
        // The body looks like a request: a server that parses it would answer three times.
        let body = b"GET /plaintext HTTP/1.1\r\nHost: smuggled\r\n\r\n";
        let head = format!(
            "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        (&s).write_all(head.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        // hyper (whose service never reads the body) may close after its answer: it may then
        // refuse the rest (a failed write) and not answer the second request.
        let strict = server == Server::HttpHello;
        let w1 = (&s).write_all(&body[..10]);
        std::thread::sleep(Duration::from_millis(50));
        let mut rest = body[10..].to_vec();
        rest.extend_from_slice(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n");
        let w2 = (&s).write_all(&rest);
        if strict {
            w1.unwrap();
            w2.unwrap();
        }
        let mut r = BufReader::new(s.try_clone().unwrap());
        let first = expect_response(&mut r, "the POST");
        assert_eq!(first.status, 404, "{server:?}: POST /upload");
        if !strict {
            match read_response(&mut r, false) {
                Ok(Some(second)) => {
                    assert_eq!(
                        (second.status, &second.body[..]),
                        (200, &b"Hello, World!"[..])
                    )
                }
                Ok(None) => return,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return,
                Err(e) => panic!("{server:?}: after the POST: {e}"),
            }
            return;
        }
        let second = expect_response(&mut r, "the GET after the POST's body");
        assert_eq!(
            (second.status, &second.body[..]),
            (200, &b"Hello, World!"[..])
        );
        // No third answer (the body was not a request).
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut extra = [0u8; 1];
        match r.read(&mut extra) {
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {}
            other => panic!("{server:?}: something after the second answer: {other:?}"),
        }
    });
}

#[test]
fn http_hello_skips_a_split_content_length_body_and_answers_the_next_request() {
    body_then_pipelined(Server::HttpHello);
}

#[test]
fn hyper_hello_skips_a_split_content_length_body_and_answers_the_next_request() {
    body_then_pipelined(Server::HyperHello);
}

/// Sends `request`, reads to the close; returns what came back.
fn send_and_read_to_close(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut s = connect(addr);
    let _ = s.write_all(request);
    read_until_close(&mut s).unwrap_or_else(|(e, got)| {
        panic!(
            "the server neither answered-and-closed nor closed ({e}); got {:?}",
            String::from_utf8_lossy(&got)
        )
    })
}

#[test]
fn http_hello_answers_a_chunked_request_with_400_and_closes() {
    within(WATCHDOG, || {
        let addr = start(Server::HttpHello);
        let got = send_and_read_to_close(
            addr,
            b"POST /plaintext HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n",
        );
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 400 "), "{text:?}");
        assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "{text:?}");
        still_serves(addr, Server::HttpHello);
    });
}

/// A Content-Length so large that `head + body` overflows: the body is larger than the
/// server accepts ("a body larger than a head is not accepted"), so `400` and a close, and
/// the bytes after the head are never parsed as a request. (`head + Content-Length` wraps to
/// `head - 1` here: in a release build the server answers the "body" as a second request.)
#[test]
fn http_hello_answers_a_content_length_that_overflows_with_400() {
    within(WATCHDOG, || {
        let addr = start(Server::HttpHello);
        let mut req =
            b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551615\r\n\r\n"
                .to_vec();
        req.extend_from_slice(b"GET /plaintext HTTP/1.1\r\nHost: smuggled\r\n\r\n");
        let got = send_and_read_to_close(addr, &req);
        let text = String::from_utf8_lossy(&got);
        assert!(
            text.starts_with("HTTP/1.1 400 "),
            "a Content-Length of 2^64-1 got {text:?} instead of a 400 (in a debug build the \
             connection's coroutine panics with `attempt to add with overflow`)"
        );
        assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "{text:?}");
        still_serves(addr, Server::HttpHello);
    });
}

/// Two Content-Length headers that disagree make the message's framing unknowable: RFC 9112
/// §6.3 (item 5) makes it an unrecoverable error, a 400 and a close (the classic
/// request-smuggling vector behind a proxy that picks the other one).
#[test]
fn http_hello_answers_conflicting_content_lengths_with_400() {
    within(WATCHDOG, || {
        let addr = start(Server::HttpHello);
        let inner = "GET /plaintext HTTP/1.1\r\nHost: smuggled\r\n\r\n";
        let req = format!(
            "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{inner}",
            inner.len()
        );
        let got = send_and_read_to_close(addr, req.as_bytes());
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 400 "), "{text:?}");
        still_serves(addr, Server::HttpHello);
    });
}

/// A 60 KB URI fits in the 64 KiB head: answered (404); a 100 KB URI does not: 400 and a
/// close; the server goes on.
#[test]
fn http_hello_long_uris() {
    within(WATCHDOG, || {
        let addr = start(Server::HttpHello);
        let long = format!(
            "GET /{} HTTP/1.1\r\nHost: x\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n",
            "a".repeat(60_000)
        );
        let mut s = connect(addr);
        s.write_all(long.as_bytes()).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        assert_eq!(expect_response(&mut r, "60 KB URI").status, 404);
        assert_eq!(expect_response(&mut r, "after it").status, 200);
        let too_long = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(100_000));
        let got = send_and_read_to_close(addr, too_long.as_bytes());
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 400 "), "{text:?}");
        still_serves(addr, Server::HttpHello);
    });
}

/// More headers than the parser's array: a 4xx and a close (or an answer), and the server goes
/// on.
fn many_headers(server: Server) {
    within(WATCHDOG, move || {
        let addr = start(server);
        let mut req = String::from("GET /plaintext HTTP/1.1\r\nHost: x\r\n");
        for i in 0..200 {
            req.push_str(&format!("X-H{i}: v\r\n"));
        }
        req.push_str("\r\n");
        let mut s = connect(addr);
        s.write_all(req.as_bytes()).unwrap();
        let mut r = BufReader::new(s);
        let resp = expect_response(&mut r, "200 headers");
        assert!(
            resp.status == 200 || (400..500).contains(&resp.status),
            "{server:?}: {resp:?}"
        );
        still_serves(addr, server);
    });
}

#[test]
fn http_hello_answers_a_request_with_200_headers_and_goes_on() {
    many_headers(Server::HttpHello);
}

#[test]
fn hyper_hello_answers_a_request_with_200_headers_and_goes_on() {
    many_headers(Server::HyperHello);
}

/// HEAD: the headers of the GET, Content-Length 13, no body; the connection stays usable.
fn head_request(server: Server) {
    within(WATCHDOG, move || {
        let addr = start(server);
        let mut s = connect(addr);
        s.write_all(
            b"HEAD /plaintext HTTP/1.1\r\nHost: x\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let head = read_response(&mut r, true).unwrap().unwrap();
        assert_eq!(head.status, 200);
        assert_eq!(head.header("content-length"), Some("13"), "{server:?}");
        let get = expect_response(&mut r, "the GET after a HEAD");
        assert_eq!(get.body, b"Hello, World!", "{server:?}");
    });
}

#[test]
fn http_hello_answers_head_without_a_body() {
    head_request(Server::HttpHello);
}

#[test]
fn hyper_hello_answers_head_without_a_body() {
    head_request(Server::HyperHello);
}

// ---------------------------------------------------------------------------------------------
// chat
// ---------------------------------------------------------------------------------------------

/// A chat client: its name, and a thread that collects every line it receives.
struct ChatClient {
    name: String,
    stream: TcpStream,
    lines: std::sync::mpsc::Receiver<String>,
}

impl ChatClient {
    fn join(addr: SocketAddr) -> ChatClient {
        let stream = connect(addr);
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut r = BufReader::new(stream.try_clone().unwrap());
        let mut welcome = String::new();
        r.read_line(&mut welcome).expect("a greeting");
        let name = welcome
            .trim_end()
            .strip_prefix("welcome, you are ")
            .unwrap_or_else(|| panic!("greeting {welcome:?}"))
            .to_string();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match r.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if tx.send(String::from_utf8_lossy(&buf).into_owned()).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        ChatClient {
            name,
            stream,
            lines,
        }
    }

    fn say(&self, line: &str) {
        (&self.stream).write_all(line.as_bytes()).unwrap();
    }

    /// The next line that is not a join/leave notice, waiting at most `PATIENCE`.
    fn next_message(&self) -> Option<String> {
        loop {
            match self.lines.recv_timeout(PATIENCE) {
                Ok(l) if l.starts_with("* ") => continue,
                Ok(l) => return Some(l),
                Err(_) => return None,
            }
        }
    }
}

/// 200 clients: every line each of them says reaches all 199 others.
#[test]
fn chat_relays_every_line_among_200_clients() {
    within(Duration::from_secs(180), || {
        let addr = start_chat(2);
        let clients: Vec<ChatClient> = (0..200).map(|_| ChatClient::join(addr)).collect();
        // Everyone has joined once the first has heard the 199 others join.
        let mut joined = 0;
        while joined < 199 {
            let l = clients[0]
                .lines
                .recv_timeout(PATIENCE)
                .expect("join notices stopped");
            if l.ends_with(" joined\n") {
                joined += 1;
            }
        }
        // The last joiner's push into the room follows its notice at once.
        std::thread::sleep(Duration::from_millis(300));
        for c in &clients {
            c.say(&format!("hi from {}\n", c.name));
        }
        for c in &clients {
            let mut heard = std::collections::BTreeSet::new();
            while heard.len() < 199 {
                let m = c.next_message().unwrap_or_else(|| {
                    panic!("{} heard only {} of 199 lines", c.name, heard.len())
                });
                heard.insert(m);
            }
            assert!(!heard.contains(&format!("{0}: hi from {0}\n", c.name)));
        }
    });
}

/// One client talks steadily while others join and leave (some abruptly, with a reset): a
/// listener that stays hears every line, in order.
#[test]
fn chat_relays_every_line_while_clients_join_and_leave() {
    within(Duration::from_secs(120), || {
        let addr = start_chat(2);
        let talker = ChatClient::join(addr);
        let listener = ChatClient::join(addr);
        let churn = std::thread::spawn(move || {
            for i in 0..100 {
                let c = ChatClient::join(addr);
                if i % 2 == 0 {
                    c.say("passing through\n");
                }
                if i % 3 == 0 {
                    // Abortive close: SO_LINGER 0 makes the close a reset.
                    let l = libc::linger {
                        l_onoff: 1,
                        l_linger: 0,
                    };
                    // SAFETY: a linger struct.
                    unsafe {
                        libc::setsockopt(
                            c.stream.as_raw_fd(),
                            libc::SOL_SOCKET,
                            libc::SO_LINGER,
                            (&raw const l).cast(),
                            size_of::<libc::linger>() as libc::socklen_t,
                        )
                    };
                }
                drop(c);
            }
        });
        for i in 0..500 {
            talker.say(&format!("line {i}\n"));
            if i % 50 == 0 {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        churn.join().unwrap();
        let mut next = 0;
        while next < 500 {
            let m = listener
                .next_message()
                .unwrap_or_else(|| panic!("the listener heard lines 0..{next} of 500"));
            if m.starts_with(&format!("{}: ", talker.name)) {
                assert_eq!(m, format!("{}: line {next}\n", talker.name));
                next += 1;
            }
        }
    });
}

/// A client that never reads (its buffers full) must not stop the others from chatting. The
/// example's comment says a slow reader *slows* the senders; one that never reads should not
/// stop them for good (the issue: "a slow client must not stall the others").
#[test]
fn chat_a_client_that_never_reads_does_not_stall_the_others() {
    within(Duration::from_secs(120), || {
        let addr = start_chat(2);
        let a = ChatClient::join(addr);
        let b = ChatClient::join(addr);
        // The silent one: connects, reads nothing, ever (tiny receive buffer).
        let silent = std::net::TcpStream::connect(addr).unwrap();
        set_rcvbuf(&silent, 4096);
        // Wait until b hears it join, so that it is (about to be) in the room.
        loop {
            let l = b.lines.recv_timeout(PATIENCE).expect("a join notice");
            if l.ends_with(" joined\n") {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
        let total = 20_000;
        let line = "x".repeat(1000);
        let a_name = a.name.clone();
        let writer = {
            let s = a.stream.try_clone().unwrap();
            s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
            std::thread::spawn(move || {
                for i in 0..total {
                    if (&s).write_all(format!("{i} {line}\n").as_bytes()).is_err() {
                        return i;
                    }
                }
                total
            })
        };
        let mut heard = 0;
        while heard < total {
            match b.next_message() {
                Some(m) if m.starts_with(&format!("{a_name}: ")) => heard += 1,
                Some(_) => {}
                None => break,
            }
        }
        assert_eq!(
            heard, total,
            "b heard {heard} of {a_name}'s {total} lines, then nothing for {PATIENCE:?}: \
             the sender's coroutine is stuck writing to a client that never reads"
        );
        drop(silent);
        let _ = writer.join();
    });
}

/// Lines written to one member by several senders at once arrive whole: a line is never cut
/// by another one. (Were two senders' coroutines to `write_all` to the same socket, a partial
/// write would suspend one, and the other's line could land in the middle.)
///
/// Whether a cut would happen depends on where the senders' coroutines run and in what order
/// they wake: wakes go out in the order the writers began waiting, so senders that share a
/// worker mostly take turns whole. So the server has 4 workers, and there are three rounds,
/// each on a new server. With the old design's writes put back in `chat::broadcast`, about 2
/// rounds in 3 cut lines, and the test failed in 27 of 30 runs.
#[test]
fn chat_lines_from_concurrent_senders_are_never_interleaved() {
    within(Duration::from_secs(120), || {
        for _ in 0..3 {
            chat_round_of_concurrent_senders();
        }
    });
}

/// One round of `chat_lines_from_concurrent_senders_are_never_interleaved`, on a new server.
fn chat_round_of_concurrent_senders() {
    {
        let addr = start_chat(4);
        let senders: Vec<ChatClient> = (0..4).map(|_| ChatClient::join(addr)).collect();
        // The receiver reads nothing until the senders have said more than the server's socket
        // to it can hold, so that writes to that socket go through in parts from then on.
        let receiver = std::net::TcpStream::connect(addr).unwrap();
        receiver
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        for s in &senders {
            loop {
                let l = s.lines.recv_timeout(PATIENCE).expect("a join notice");
                if l.ends_with(" joined\n") {
                    break;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(200));
        // As long as a line may be (`chat::MAX_LINE`, the name's prefix included).
        let len = chat::MAX_LINE - 64;
        // Four times what the server's send buffer (at most `tcp_wmem`'s maximum: the receiver
        // does not read, so its window stays near `tcp_rmem`'s default) and the receiver's
        // buffer can hold together.
        let held =
            tcp_mem_setting("tcp_wmem", 2, 4 << 20) + 2 * tcp_mem_setting("tcp_rmem", 1, 128 << 10);
        let per = (4 * held).div_ceil(senders.len() * len);
        let writers: Vec<_> = senders
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let s = c.stream.try_clone().unwrap();
                std::thread::spawn(move || {
                    let fill = (b'a' + k as u8) as char;
                    let mut line = fill.to_string().repeat(len);
                    line.push('\n');
                    for _ in 0..per {
                        (&s).write_all(line.as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        // It then reads more slowly than the senders talk, so that the socket stays full and
        // each time it drains a little, several senders' writes wait to go on.
        struct Slow(std::net::TcpStream);
        impl Read for Slow {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                std::thread::sleep(Duration::from_micros(100));
                let n = buf.len().min(16 << 10);
                self.0.read(&mut buf[..n])
            }
        }
        let mut r = BufReader::with_capacity(16 << 10, Slow(receiver));
        let mut seen = 0;
        let mut bad = Vec::new();
        let mut buf = Vec::new();
        while seen < senders.len() * per {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => panic!("the receiver stopped getting lines after {seen}: {e}"),
            }
            let line = String::from_utf8_lossy(&buf);
            if line.starts_with("* ") || line.starts_with("welcome") {
                continue;
            }
            seen += 1;
            let (_, text) = line.trim_end().split_once(": ").unwrap_or(("", &line));
            let first = text.chars().next().unwrap_or('?');
            if text.len() != len || text.chars().any(|c| c != first) {
                bad.push(format!(
                    "{} bytes: {:?}...{:?}",
                    line.len(),
                    &line[..line.len().min(40)],
                    &line[line.len().saturating_sub(40)..]
                ));
            }
        }
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(
            seen,
            senders.len() * per,
            "the receiver's connection ended early"
        );
        assert!(
            bad.is_empty(),
            "{} of {seen} lines the receiver got were cut by other lines, e.g. {:?}",
            bad.len(),
            &bad[..bad.len().min(3)]
        );
    }
}

/// Field `index` of `/proc/sys/net/ipv4/{name}` (`min default max`, in bytes), or `fallback`.
fn tcp_mem_setting(name: &str, index: usize, fallback: usize) -> usize {
    std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(index)?.parse().ok())
        .unwrap_or(fallback)
}

/// A client that sends an endless line (no newline) must not make the server buffer all of it.
#[test]
fn chat_does_not_buffer_an_endless_line_without_bound() {
    if !alone_in_a_child("chat_does_not_buffer_an_endless_line_without_bound") {
        return;
    }
    within(Duration::from_secs(120), || {
        let addr = start_chat(2);
        let other = ChatClient::join(addr);
        let flooder = connect(addr);
        flooder
            .set_write_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let before = rss();
        let chunk = vec![b'z'; 1 << 20];
        let mut sent = 0usize;
        while sent < 256 << 20 {
            match (&flooder).write(&chunk) {
                Ok(n) => sent += n,
                Err(_) => break,
            }
        }
        std::thread::sleep(Duration::from_millis(500));
        let grew = rss().saturating_sub(before);
        drop(flooder);
        assert!(
            grew < 128 << 20,
            "the server took {} MiB of a line without a newline and grew by {} MiB",
            sent >> 20,
            grew >> 20
        );
        // And the room goes on.
        let third = ChatClient::join(addr);
        third.say("still here\n");
        assert!(other.next_message().is_some());
    });
}

/// A line that is not UTF-8 (`café` in Latin-1, as a non-UTF-8 terminal sends it) is relayed
/// (or dropped), and its sender stays in the room: its next line still reaches the others.
#[test]
fn chat_keeps_a_client_that_sends_a_non_utf8_line() {
    within(WATCHDOG, || {
        let addr = start_chat(2);
        let a = ChatClient::join(addr);
        let b = ChatClient::join(addr);
        let mut a_w = a.stream.try_clone().unwrap();
        a_w.write_all(b"caf\xe9\n").unwrap();
        a_w.write_all(b"plain ascii\n").unwrap();
        let want = format!("{}: plain ascii\n", a.name);
        let mut got = Vec::new();
        loop {
            match b.lines.recv_timeout(PATIENCE) {
                Ok(l) if l == want => break,
                Ok(l) => got.push(l),
                Err(_) => {
                    panic!("b never heard {want:?} after a's non-UTF-8 line; it heard {got:?}")
                }
            }
        }
    });
}
