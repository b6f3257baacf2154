//! The `hyper_hello` example's server: hyper 1.x on corio tasks.
//!
//! Shared, as a module, by `examples/hyper_hello.rs`, the example tests and corio-bench's
//! `http` case.
//!
//! hyper does no IO and owns no runtime: it asks for them through the traits of `hyper::rt`.
//! This file wires corio into each of them, in a few lines apiece:
//!
//! | hyper needs | corio gives | here |
//! |---|---|---|
//! | `rt::Executor` (spawn a background future) | `corio::spawn` | [`CorioExecutor`] |
//! | `rt::Timer` (header-read timeouts) | `corio::time::sleep_async` | [`CorioTimer`] |
//! | `rt::Read` + `rt::Write` | `TcpStream::poll_read_uninit`, `TcpStream`'s `futures_io::AsyncWrite` (vectored: `writev`) | [`CorioIo`] |
//!
//! Every connection is a task spawned through the executor; hyper's HTTP/1 state machine
//! drives it; a read with no data returns `Pending` until the netpoller wakes the task.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::rt::{Executor, ReadBufCursor};
use hyper::{Request, Response, StatusCode};

use corio::net::{TcpListener, TcpStream};

/// Accepts connections forever, serving each with hyper's HTTP/1 on its own task.
pub async fn serve(listener: TcpListener) {
    loop {
        let stream = match listener.accept_async().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                eprintln!("hyper_hello: accept: {e}");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        // Not `pipeline_flush(true)` (hyper calls it experimental): with it hyper flushed
        // nothing while unparsed input was buffered, so the response to a `Connection: close`
        // request followed by another request, or a 431, was dropped at the close, and a
        // client that pipelines without reading made the server buffer responses without
        // bound (1.5 GB for 400 MiB of requests). `half_close(true)`: a client that shuts
        // its write side down after its requests still gets their responses (hyper's
        // default closes at the end of input; tests/examples_review_contract.rs).
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(CorioTimer)
            .half_close(true)
            .serve_connection(CorioIo(stream), hyper::service::service_fn(hello));
        CorioExecutor.execute(async move {
            // A client that goes away mid-request is not the server's failure.
            let _ = conn.await;
        });
    }
}

/// The one endpoint: `GET /plaintext` → `Hello, World!`; hyper adds Date and Content-Length.
pub async fn hello(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let builder = Response::builder()
        .header("Server", "corio-hyper")
        .header("Content-Type", "text/plain");
    let response = if req.uri().path() == "/plaintext" {
        builder.body(Full::new(Bytes::from_static(b"Hello, World!")))
    } else {
        builder
            .status(StatusCode::NOT_FOUND)
            .body(Full::new(Bytes::new()))
    };
    Ok(response.expect("a valid response"))
}

/// `hyper::rt::Executor` on corio: every future becomes a detached corio task.
#[derive(Clone, Copy, Debug)]
pub struct CorioExecutor;

impl<F> Executor<F> for CorioExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        drop(corio::spawn(fut));
    }
}

/// `hyper::rt::Timer` on corio's timers.
#[derive(Clone, Copy, Debug)]
pub struct CorioTimer;

impl hyper::rt::Timer for CorioTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(CorioSleep(corio::time::sleep_async(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(CorioSleep(corio::time::sleep_until_async(deadline)))
    }
}

/// A corio sleep, as hyper's `Sleep` (a marker trait over `Future<Output = ()>`).
struct CorioSleep(corio::time::Sleep);

impl Future for CorioSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl hyper::rt::Sleep for CorioSleep {}

/// hyper's `rt::Read`/`rt::Write` over `corio::net::TcpStream` (its `futures_io::AsyncWrite`,
/// with `writev(2)` for vectored writes, and [`TcpStream::poll_read_uninit`] for reads).
#[derive(Debug)]
pub struct CorioIo<T>(pub T);

impl hyper::rt::Read for CorioIo<TcpStream> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        // Reading into the spare capacity as it is: `futures_io::AsyncRead` would need it
        // zeroed first, which cost more than the rest of a request (docs/net-bench.md).
        // SAFETY: `poll_read_uninit` only writes into the slice, never de-initialises it,
        // which is all `ReadBufCursor::as_mut` asks.
        let n = std::task::ready!(self.0.poll_read_uninit(cx, unsafe { buf.as_mut() }))?;
        // SAFETY: the read initialised (filled) the first `n` bytes of the spare capacity.
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(()))
    }
}

impl<T: futures_io::AsyncWrite + Unpin> hyper::rt::Write for CorioIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    // Vectored (`sendmsg` on a corio socket, as tokio's `TcpStream`, which hyper-util's
    // `TokioIo` forwards, uses `writev`): hyper then queues a response's head and body and
    // sends them with one system call instead of copying the body behind the head.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_close(cx)
    }
}
