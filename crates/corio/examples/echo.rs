//! A TCP echo server: one stackful coroutine per connection, written as blocking-style code.
//!
//! ```text
//! cargo run --release -p corio --example echo -- [ADDR] [WORKERS]
//! ```
//!
//! listens on `ADDR` (default `127.0.0.1:7000`) with `WORKERS` worker threads (default: the
//! CPU count) and writes back whatever each client sends. Try it with `nc 127.0.0.1 7000`.
//! The server itself is `servers/echo.rs`; `echo_async` is the same server on async tasks.

#[path = "servers/args.rs"]
mod args;
#[path = "servers/echo.rs"]
mod server;

fn main() -> std::io::Result<()> {
    let (addr, rt) = args::address_and_runtime("127.0.0.1:7000")?;
    rt.run(move || {
        let listener = corio::net::TcpListener::bind(&addr)?;
        println!("echo: listening on {}", listener.local_addr()?);
        server::serve(listener);
        Ok(())
    })
}
