//! An HTTP/1.1 keep-alive server on stackful coroutines, parsing with `httparse`.
//!
//! ```text
//! cargo run --release -p corio --example http_hello -- [ADDR] [WORKERS]
//! curl -i http://127.0.0.1:8080/plaintext
//! ```
//!
//! listens on `ADDR` (default `127.0.0.1:8080`) with `WORKERS` worker threads (default: the
//! CPU count). `GET /plaintext` answers `Hello, World!` with Content-Length, Date and Server;
//! pipelined requests are answered in order; a malformed request gets `400` and its connection
//! is closed while the others go on. Every connection is a coroutine running ordinary
//! blocking-style code (`servers/http_hello.rs`). `fetch` is its client.

#[path = "servers/args.rs"]
mod args;
#[path = "servers/http_hello.rs"]
mod server;

fn main() -> std::io::Result<()> {
    let (addr, rt) = args::address_and_runtime("127.0.0.1:8080")?;
    rt.run(move || {
        let listener = corio::net::TcpListener::bind(&addr)?;
        println!(
            "http_hello: listening on http://{}/plaintext",
            listener.local_addr()?
        );
        server::serve(listener);
        Ok(())
    })
}
