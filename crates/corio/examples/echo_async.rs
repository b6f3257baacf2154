//! A TCP echo server on async tasks: one task per connection.
//!
//! ```text
//! cargo run --release -p corio --example echo_async -- [ADDR] [WORKERS]
//! ```
//!
//! listens on `ADDR` (default `127.0.0.1:7000`) with `WORKERS` worker threads (default: the
//! CPU count). The same server as `echo`, written with `async`/`.await` instead of stackful
//! coroutines; both run on the same scheduler. The server itself is `servers/echo_async.rs`.

#[path = "servers/args.rs"]
mod args;
#[path = "servers/echo_async.rs"]
mod server;

fn main() -> std::io::Result<()> {
    let (addr, rt) = args::address_and_runtime("127.0.0.1:7000")?;
    let listener = corio::net::TcpListener::bind(&addr)?;
    println!("echo_async: listening on {}", listener.local_addr()?);
    // The accept loop is a task too, so that it runs on the workers like every connection.
    rt.block_on(rt.spawn(server::serve(listener)))
        .map_err(|e| std::io::Error::other(e.to_string()))
}
