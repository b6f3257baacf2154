//! A TCP echo server: one stackful coroutine per connection, written as blocking-style code.
//!
//! ```text
//! cargo run --release -p corio --example echo -- [ADDR] [WORKERS]
//! ```
//!
//! listens on `ADDR` (default `127.0.0.1:7000`) with `WORKERS` worker threads (default: the
//! CPU count) and writes back whatever each client sends. Try it with `nc 127.0.0.1 7000`.
//! The server itself is `servers/echo.rs`; `echo_async` is the same server on async tasks.

#[path = "servers/echo.rs"]
mod server;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:7000".into());
    let mut builder = corio::Runtime::builder();
    if let Some(w) = args.next() {
        builder.workers(w.parse().expect("WORKERS is a number"));
    }
    let rt = builder.build()?;
    rt.run(move || {
        let listener = corio::net::TcpListener::bind(&addr)?;
        println!("echo: listening on {}", listener.local_addr()?);
        server::serve(listener);
        Ok(())
    })
}
