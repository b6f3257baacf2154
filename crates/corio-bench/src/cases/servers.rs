//! The Rust servers of the network cases, run as `__child <case> serve <impl>`.
//!
//! Every server listens on 127.0.0.1 (a port the kernel picks), reports `@addr host:port` once
//! it listens, and serves until it is killed. Each runs its runtime on one thread, as the
//! issue asks ("one server on 1 worker"); the parent pins the process to the server CPU.
//!
//! | server | `http` | `echo` (and `c10k`) |
//! |---|---|---|
//! | corio, stackful | `examples/http_hello` | `examples/echo` |
//! | corio, tasks | `examples/hyper_hello` | `examples/echo_async` |
//! | tokio `current_thread` | hyper 1.x + hyper-util's `TokioIo` and `TokioTimer` | a task per connection |
//! | may, 1 worker | `may_minihttp` | a coroutine per connection |
//!
//! The HTTP servers all answer `GET /plaintext` with `Hello, World!` and the headers
//! Content-Length, Content-Type, Date and Server (hyper and may_minihttp add Date themselves).

use std::convert::Infallible;
use std::io::{self, Read, Write};
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use super::fresh::may_go;

// The corio servers are the examples' own code, so that what is measured is what a reader
// sees in `crates/corio/examples/`.
#[path = "../../../corio/examples/servers/echo.rs"]
mod corio_echo;
#[path = "../../../corio/examples/servers/echo_async.rs"]
mod corio_echo_async;
#[path = "../../../corio/examples/servers/http_hello.rs"]
mod http_hello;
#[path = "../../../corio/examples/servers/hyper_hello.rs"]
mod hyper_hello;
use crate::child;
use crate::server::raise_nofile;

/// The HTTP server `imp`; never returns unless it fails.
pub fn http(imp: &str) -> Result<(), String> {
    raise_nofile();
    match imp {
        "corio" => corio_stackful(http_hello::serve),
        "corio-hyper" => corio_tasks(hyper_hello::serve),
        "hyper-tokio" => tokio_current_thread(hyper_tokio()),
        "may_minihttp" => may_minihttp(),
        _ => Err(format!("unknown http server `{imp}`")),
    }
}

/// The echo server `imp`; never returns unless it fails.
pub fn echo(imp: &str) -> Result<(), String> {
    raise_nofile();
    match imp {
        "corio" => corio_stackful(corio_echo::serve),
        "corio-async" => corio_tasks(corio_echo_async::serve),
        "tokio" => tokio_current_thread(tokio_echo()),
        "may" => may_echo(),
        _ => Err(format!("unknown echo server `{imp}`")),
    }
}

/// corio with one worker, as every server here runs, on the server's main thread
/// (`Builder::run_here`: one thread runs the tasks, and sysmon keeps off its descriptor table).
/// Two environment switches, in the server's environment, for A/Bs with `scripts/pair.sh`
/// (`CORIO_BENCH_IO_SPIN=0:corio-hyper`); the cases never set them:
/// - `CORIO_BENCH_IO_SPIN=0` turns off the only worker's spin (`Builder::io_spin(false)`);
/// - `CORIO_BENCH_BUILD=1` runs the server on a worker thread of a `build`-made runtime
///   instead, with the main thread waiting in `run`/`block_on`.
fn corio_builder() -> corio::RuntimeBuilder {
    let mut builder = corio::Runtime::builder();
    builder.workers(1).hog_report(false);
    if std::env::var_os("CORIO_BENCH_IO_SPIN").is_some_and(|v| v == "0") {
        builder.io_spin(false);
    }
    builder
}

/// Runs `main` as the main coroutine of a one-worker corio runtime (see `corio_builder`).
fn corio_main<F>(main: F) -> Result<(), String>
where
    F: FnOnce() -> Result<(), String> + Send + 'static,
{
    let mut builder = corio_builder();
    if std::env::var_os("CORIO_BENCH_BUILD").is_some_and(|v| v == "1") {
        builder.build().map_err(|e| e.to_string())?.run(main)
    } else {
        builder.run_here(main).map_err(|e| e.to_string())?
    }
}

/// Runs a stackful server (`serve(listener)` in the main coroutine) on corio.
fn corio_stackful(serve: fn(corio::net::TcpListener)) -> Result<(), String> {
    corio_main(move || {
        let listener = corio::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        child::emit("addr", listener.local_addr().map_err(|e| e.to_string())?);
        serve(listener);
        Ok(())
    })
}

/// Runs an async server (its accept loop a task on the worker) on corio.
fn corio_tasks<F, Fut>(serve: F) -> Result<(), String>
where
    F: FnOnce(corio::net::TcpListener) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    corio_main(move || {
        let listener = corio::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        child::emit("addr", listener.local_addr().map_err(|e| e.to_string())?);
        corio::spawn(serve(listener))
            .join()
            .map_err(|e| e.to_string())
    })
}

fn tokio_current_thread(
    server: impl std::future::Future<Output = io::Result<()>>,
) -> Result<(), String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?
        .block_on(server)
        .map_err(|e| e.to_string())
}

/// The `GET /plaintext` answer, for both hyper servers.
pub fn hyper_hello_response(path: &str) -> Response<Full<Bytes>> {
    let mut builder = Response::builder()
        .header("Server", "hyper")
        .header("Content-Type", "text/plain");
    if path != "/plaintext" {
        builder = builder.status(StatusCode::NOT_FOUND);
        return builder
            .body(Full::new(Bytes::new()))
            .expect("a valid response");
    }
    builder
        .body(Full::new(Bytes::from_static(b"Hello, World!")))
        .expect("a valid response")
}

async fn hyper_tokio() -> io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    child::emit("addr", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
                Ok::<_, Infallible>(hyper_hello_response(req.uri().path()))
            });
            // A client that goes away mid-request is not the server's failure.
            // The same configuration as corio's hyper_hello: a timer (so hyper times out slow
            // request heads) and half-closed clients answered (no `pipeline_flush`, which
            // drops responses: examples/servers/hyper_hello.rs).
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .half_close(true)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn tokio_echo() -> io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    child::emit("addr", listener.local_addr()?);
    loop {
        let (mut stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if stream.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
}

/// A free port on 127.0.0.1, for servers that bind by address and do not say which port
/// they got (may_minihttp).
fn free_port() -> io::Result<SocketAddr> {
    std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()
}

#[derive(Clone)]
struct MayHello;

impl may_minihttp::HttpService for MayHello {
    fn call(
        &mut self,
        req: may_minihttp::Request,
        rsp: &mut may_minihttp::Response,
    ) -> io::Result<()> {
        // may_minihttp writes the status line, Server and Date itself.
        if req.path() == "/plaintext" {
            rsp.header("Content-Type: text/plain");
            rsp.body("Hello, World!");
        } else {
            rsp.status_code(404, "Not Found");
        }
        Ok(())
    }
}

fn may_minihttp() -> Result<(), String> {
    may::config().set_workers(1).set_worker_pin(false);
    let addr = free_port().map_err(|e| e.to_string())?;
    let server = may_minihttp::HttpServer(MayHello)
        .start(addr)
        .map_err(|e| e.to_string())?;
    child::emit("addr", addr);
    server
        .join()
        .map_err(|_| "the may_minihttp server panicked".to_string())
}

fn may_echo() -> Result<(), String> {
    may::config().set_workers(1).set_worker_pin(false);
    let listener = may::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    child::emit("addr", listener.local_addr().map_err(|e| e.to_string())?);
    may_go(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_nodelay(true);
            may_go(move || {
                let mut buf = [0u8; 4096];
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
            });
        }
    })
    .join()
    .map_err(|_| "the may echo server panicked".to_string())
}
