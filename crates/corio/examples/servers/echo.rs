//! The `echo` example's server: one stackful coroutine per connection.
//!
//! Shared, as a module, by `examples/echo.rs`, the example tests and corio-bench's `echo` and
//! `c10k` cases, so that what is tested and measured is the code a reader sees.
//!
//! Each coroutine is plain blocking-style code — `read`, then `write_all` what was read — and
//! a read that finds no data suspends only that coroutine: the worker goes on running the
//! others until the netpoller says the socket is readable.

use std::io::{Read, Write};

use corio::net::{TcpListener, TcpStream};

/// Accepts connections forever, each served by its own coroutine. Call it from a coroutine
/// (e.g. inside `Runtime::run`).
pub fn serve(listener: TcpListener) {
    for stream in listener.incoming() {
        match stream {
            // The coroutine is detached: it ends when its client goes away. Spread over the
            // workers by count: a connection lives long and apart from the acceptor, and would
            // otherwise start next to it (`corio::Builder::spread`).
            Ok(stream) => {
                if let Err(e) = corio::Builder::new().spread().spawn(move || echo(stream)) {
                    eprintln!("echo: no coroutine for a connection: {e}");
                }
            }
            // `accept` already backs off on EMFILE; anything else is the client's problem
            // (reset before accept): go on serving the others.
            Err(e) => eprintln!("echo: accept: {e}"),
        }
    }
}

/// Writes back everything `stream` sends until it closes (or fails).
pub fn echo(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if stream.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}
