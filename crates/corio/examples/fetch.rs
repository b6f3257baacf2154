//! The article's `fetch()`, for real: client coroutines that connect, send a request and read
//! the reply, written as blocking-style code, 1,000 of them at once.
//!
//! ```text
//! cargo run --release -p corio --example http_hello -- 127.0.0.1:8080 &
//! cargo run --release -p corio --example fetch -- 127.0.0.1:8080 [COUNT]
//! ```
//!
//! starts `COUNT` (default 1,000) coroutines, each of which calls [`fetch`]: connect, write
//! `GET /plaintext`, read the whole reply, check it. Each `connect`, `write` and `read` that
//! would block suspends only its coroutine, so a handful of threads carry all of them. Prints
//! how many succeeded and how long they took together.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Instant;

use corio::net::TcpStream;

/// Fetches `/plaintext` from the `http_hello` server at `addr` and returns its body.
pub fn fetch(addr: SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr)?;
    write!(
        stream,
        "GET /plaintext HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply)?;
    let (head, body) = reply
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of the response head"))?;
    if !head.starts_with("HTTP/1.1 200 ") {
        let status = head.lines().next().unwrap_or("");
        return Err(std::io::Error::other(format!("status `{status}`")));
    }
    Ok(body.to_string())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = args
        .next()
        .expect("usage: fetch ADDR [COUNT]")
        .parse()
        .expect("ADDR is host:port, e.g. 127.0.0.1:8080");
    let count: usize = args
        .next()
        .map_or(1000, |c| c.parse().expect("COUNT is a number"));
    let (ok, failed, took) = corio::run(move || {
        let start = Instant::now();
        let handles: Vec<_> = (0..count).map(|_| corio::go(move || fetch(addr))).collect();
        let mut ok = 0;
        let mut failed = Vec::new();
        for h in handles {
            match h.join() {
                Ok(Ok(body)) if body == "Hello, World!" => ok += 1,
                Ok(Ok(body)) => failed.push(format!("unexpected body {body:?}")),
                Ok(Err(e)) => failed.push(e.to_string()),
                Err(e) => failed.push(e.to_string()),
            }
        }
        (ok, failed, start.elapsed())
    });
    println!("fetch: {ok} of {count} replies were `Hello, World!`, in {took:?}");
    if let Some(first) = failed.first() {
        println!("fetch: {} failed; the first: {first}", failed.len());
        std::process::exit(1);
    }
}
