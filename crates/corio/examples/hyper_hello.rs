//! hyper 1.x — the Rust ecosystem's HTTP stack — served on corio tasks.
//!
//! ```text
//! cargo run --release -p corio --example hyper_hello -- [ADDR] [WORKERS]
//! curl -i http://127.0.0.1:8080/plaintext
//! ```
//!
//! listens on `ADDR` (default `127.0.0.1:8080`) with `WORKERS` worker threads (default: the
//! CPU count) and answers `GET /plaintext` with `Hello, World!`, like `http_hello`, but through
//! hyper's HTTP/1 implementation. corio's executor, timers and sockets are wired into hyper's
//! `rt` traits in `servers/hyper_hello.rs`; no tokio runtime is involved.

#[path = "servers/args.rs"]
mod args;
#[path = "servers/hyper_hello.rs"]
mod server;

fn main() -> std::io::Result<()> {
    let (addr, rt) = args::address_and_runtime("127.0.0.1:8080")?;
    let listener = corio::net::TcpListener::bind(&addr)?;
    println!(
        "hyper_hello: listening on http://{}/plaintext",
        listener.local_addr()?
    );
    // The accept loop is a task too, so that it runs on the workers like every connection.
    rt.block_on(rt.spawn(server::serve(listener)))
        .map_err(|e| std::io::Error::other(e.to_string()))
}
